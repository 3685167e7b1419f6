/* Avro object container file writer (Avro specification, "Object Container
 * Files") and binary encoders for the datum types Iceberg manifests use.
 *
 * Our own writer because Iceberg needs what avro-c cannot do: arbitrary
 * file-header metadata (schema, partition-spec, format-version, content ...)
 * and schemas whose extra attributes ("field-id", "element-id", logicalType
 * "map") reach the file verbatim. The schema JSON is stored exactly as given
 * under "avro.schema"; the caller is responsible for it matching the data.
 *
 * File: "Obj" 0x01, header metadata map<bytes> (avro.schema, avro.codec,
 * then the caller's pairs in insertion order), 16-byte random sync marker;
 * then blocks of (long count, long byte size, datums [deflated], sync).
 * Codecs: null and deflate (raw RFC 1951, no zlib header).
 *
 * Use: new → meta... → for each datum: ls_ocf_datum() to get the buffer,
 * encode into it with the ls_ocf_* encoders, ls_ocf_datum_done() →
 * finish (appends the whole file to out) → free. One thread per writer. */
#ifndef LS_AVRO_OCF_H
#define LS_AVRO_OCF_H
#include "base/buf.h"
#include "base/status.h"
#include <stddef.h>
#include <stdint.h>

typedef enum ls_ocf_codec { LS_OCF_CODEC_NULL = 0, LS_OCF_CODEC_DEFLATE = 1 } ls_ocf_codec;

typedef struct ls_ocf ls_ocf_t;

/* block_bytes: uncompressed datum bytes per block (0: 64 KiB). */
ls_ocf_t *ls_ocf_new(const char *schema_json, ls_ocf_codec codec, size_t block_bytes);
void ls_ocf_free(ls_ocf_t *w);
/* Header metadata (copied). Keys starting with "avro." are reserved. */
void ls_ocf_meta(ls_ocf_t *w, const char *key, const void *val, size_t n);
void ls_ocf_meta_str(ls_ocf_t *w, const char *key, const char *val);
/* The buffer the next datum is encoded into (appended to the open block). */
ls_buf_t *ls_ocf_datum(ls_ocf_t *w);
ls_status ls_ocf_datum_done(ls_ocf_t *w);
/* Appends the complete file to out. */
ls_status ls_ocf_finish(ls_ocf_t *w, ls_buf_t *out);
int64_t ls_ocf_count(const ls_ocf_t *w);

/* Binary encoding (Avro specification, "Binary Encoding"). */
void ls_ocf_long(ls_buf_t *b, int64_t v); /* zigzag varint; also int */
void ls_ocf_bool(ls_buf_t *b, int v);
void ls_ocf_bytes(ls_buf_t *b, const void *p, size_t n);
void ls_ocf_string(ls_buf_t *b, const char *s);
/* Union: the branch index, then the branch's value (nothing for null). */
static inline void ls_ocf_union(ls_buf_t *b, int branch) { ls_ocf_long(b, branch); }
/* Arrays and maps: ls_ocf_block(b, n) before n items (skip when n == 0),
 * ls_ocf_end(b) after the last block. Map items are string key + value. */
static inline void ls_ocf_block(ls_buf_t *b, int64_t n)
{
    if (n) ls_ocf_long(b, n);
}
static inline void ls_ocf_end(ls_buf_t *b) { ls_ocf_long(b, 0); }

/* ---- Reading (for manifest lists / manifests written by us or by other
 * engines). The whole file is decoded against its own writer schema into a
 * value tree. Decoding is bounded: every length and count is checked
 * against the bytes that remain; malformed input is LS_ECORRUPT with a
 * message naming the byte offset. Codecs: null, deflate. */
typedef enum ls_av_kind {
    LS_AV_NULL,
    LS_AV_BOOL,
    LS_AV_LONG,
    LS_AV_DOUBLE,
    LS_AV_BYTES,
    LS_AV_ARRAY,
    LS_AV_MAP,
    LS_AV_RECORD,
} ls_av_kind;

/* int/long → LONG (l), float/double → DOUBLE (d), bytes/string/fixed/enum
 * symbol → BYTES (p, n; NUL-terminated copy), union → the chosen branch's
 * value. Records hold their fields in schema order with names in keys[];
 * maps their values with keys[]; arrays items only. */
typedef struct ls_av {
    ls_av_kind kind;
    int64_t l;
    double d;
    uint8_t *p;
    size_t n;
    struct ls_av *items;
    size_t nitems;
    char **keys;
} ls_av_t;

typedef struct ls_ocf_file {
    ls_av_t *records;
    size_t nrecords;
    char **meta;  /* header metadata: key, value, key, value ... (NUL-terminated) */
    size_t nmeta; /* number of pairs */
} ls_ocf_file_t;

ls_status ls_ocf_file_read(const uint8_t *data, size_t len, ls_ocf_file_t *f, char *err,
                           size_t errlen);
void ls_ocf_file_free(ls_ocf_file_t *f);
const char *ls_ocf_file_meta(const ls_ocf_file_t *f, const char *key);
/* Field of a record by name, or NULL. */
const ls_av_t *ls_av_field(const ls_av_t *rec, const char *name);
#endif
