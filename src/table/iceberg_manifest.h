/* Iceberg v2 and v3 manifests and manifest lists: the Avro encodings of spec.md
 * "Manifests" and "Manifest Lists", used by iceberg_table.c.
 *
 * A manifest holds entries (status, snapshot id, sequence numbers, data
 * file); a manifest list holds one manifest_file record per manifest of a
 * snapshot. Both are written with the spec's fixed field ids; maps with int
 * keys use Iceberg's array-of-key/value records form (logicalType "map").
 *
 * A manifest holds data files or position delete files, never both (its
 * entries' df.content; the header's "content" and the list record's
 * content say which).
 *
 * Decoding reads manifests of this writer back (for merging): every field we
 * write is read; an entry with a field we do not model (key_metadata,
 * split_offsets, sort order, equality ids or equality deletes, a bound
 * longer than we keep) is refused with LS_EINVAL, so a merge never drops
 * information. */
#ifndef LS_ICEBERG_MANIFEST_H
#define LS_ICEBERG_MANIFEST_H
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/status.h"
#include "table/ocf.h"
#include "table/iceberg_table.h"

/* Manifest entry status (spec "Manifests"). */
#define LS_ICE_EXISTING 0
#define LS_ICE_ADDED 1
#define LS_ICE_DELETED 2

typedef struct ls_ice_mentry {
    int status;
    int64_t snapshot_id; /* -1: null (inherited from the manifest list entry) */
    int64_t seq;         /* data sequence number; -1: null (inherited) */
    int64_t file_seq;    /* -1: null (inherited) */
    ls_ice_datafile_t df;
} ls_ice_mentry_t;

/* Result type of a partition field (spec "Partition Transforms"). */
ls_ice_type ls_ice_result_type(const ls_ice_part_field_t *f);
/* Order of two partition values of field f (nulls first; the spec's order
 * of the result type otherwise). */
int ls_ice_pval_cmp(const ls_ice_part_field_t *f, const ls_ice_pval_t *x, const ls_ice_pval_t *y);

/* A manifest file (OCF, deflate) of n entries in spec s, whose header names
 * the table schema (JSON text, schema_id) and the spec (JSON text), in the
 * layout of format version fv (2 or 3: v3 adds first_row_id and the
 * deletion vector fields referenced_data_file, content_offset and
 * content_size_in_bytes; a deletion vector's file_format is PUFFIN). */
ls_status ls_ice_manifest_encode(const ls_ice_spec_t *s, int fv, const char *schema_json,
                                 int schema_id, const char *spec_json, const ls_ice_mentry_t *e,
                                 size_t n, ls_buf_t *out);
/* Decodes a manifest written in spec s. On LS_OK *out holds *n entries
 * (free with ls_ice_mentries_free); null snapshot ids and sequence numbers
 * are returned as -1. */
ls_status ls_ice_manifest_decode(const uint8_t *p, size_t len, const ls_ice_spec_t *s,
                                 ls_ice_mentry_t **out, size_t *n, char *err, size_t errlen);
void ls_ice_mentries_free(ls_ice_mentry_t *e, size_t n);

/* A manifest list record to encode: partition summaries are computed from
 * the entries' partition values. */
typedef struct ls_ice_mfile {
    const char *path;
    int64_t length;
    int spec_id;
    int content; /* LS_ICE_CONTENT_*: what the manifest's entries hold */
    int64_t seq, min_seq, added_snapshot_id;
    int64_t added_files, existing_files, added_rows, existing_rows;
    int64_t deleted_files, deleted_rows;
    bool has_first_row_id; /* v3 data manifests: the first row id assigned to it */
    int64_t first_row_id;
} ls_ice_mfile_t;

/* The manifest list writer (OCF, deflate) of format version fv with its
 * header metadata (v3: the snapshot's first row id too). */
ls_ocf_t *ls_ice_mlist_new(int fv, int64_t snap_id, const int64_t *parent_id, int64_t seq,
                           int64_t first_row_id);
/* Appends a record for a manifest of entries e[0..n) in spec s (the same
 * fv as the writer's). */
void ls_ice_mlist_add(ls_ocf_t *w, int fv, const ls_ice_mfile_t *m, const ls_ice_spec_t *s,
                      const ls_ice_mentry_t *e, size_t n);
/* Appends a record read from another manifest list (any writer, v1 to v3),
 * re-encoded in this layout. v1 lists have no sequence numbers: 0. v3: its
 * first_row_id is first_row_id (-1: null; the caller keeps the record's
 * own, spec "First Row ID Assignment"). */
void ls_ice_mlist_copy(ls_ocf_t *w, int fv, const ls_av_t *r, int64_t first_row_id);

/* Reads a long field of a decoded record (alt: a v1 name), else dflt. */
int64_t ls_ice_av_long(const ls_av_t *rec, const char *name, const char *alt, int64_t dflt);
/* A string/bytes field as a NUL-terminated string, or NULL. */
const char *ls_ice_av_str(const ls_av_t *rec, const char *name);
#endif
