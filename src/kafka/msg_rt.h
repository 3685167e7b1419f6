/* Runtime of the generated Kafka message codecs (kafka/msg_gen.c): the few
 * helpers the generated code calls on top of the codec primitives
 * (kafka/codec.h), and the api descriptor the generator fills for the
 * dispatch table.
 *
 * Not for handlers, except ls_kmsg_alloc (zeroed arena arrays for responses)
 * and the ls_kstr_* constructors. */
#ifndef LS_KAFKA_MSG_RT_H
#define LS_KAFKA_MSG_RT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/chunk.h"
#include "kafka/codec.h"

/* A C string as a wire string view (NULL -> null). */
static inline ls_kstr_t ls_kstr_c(const char *s)
{
    ls_kstr_t k = {s, s ? (int32_t)strlen(s) : -1};
    return k;
}
static inline ls_kstr_t ls_kstr_null(void)
{
    ls_kstr_t k = {NULL, -1};
    return k;
}

/* A zero-copy reference to bytes of a kept chunk (Fetch response records). */
typedef struct ls_kref {
    ls_chunk_t *chunk;
    size_t off, len;
} ls_kref_t;

/* One api as described in src/kafka/messages/<Api>.msg: its versions and
 * type-erased codecs of its request and response structs. */
typedef struct ls_kmsg_api {
    int16_t key;
    const char *name;
    int16_t min_version;
    int16_t max_version;
    int16_t first_flexible; /* INT16_MAX when never flexible */
    size_t request_size;
    int (*decode_request)(ls_kr_t *r, int16_t version, ls_arena_t *a, void *m);
    void (*encode_request)(ls_kw_t *w, int16_t version, const void *m);
    size_t response_size;
    int (*decode_response)(ls_kr_t *r, int16_t version, ls_arena_t *a, void *m);
    void (*encode_response)(ls_kw_t *w, int16_t version, const void *m);
} ls_kmsg_api_t;

/* Zeroed arena array of n elements (NULL when n <= 0). */
void *ls_kmsg_alloc(ls_arena_t *a, int32_t n, size_t elem);

/* ---- used by the generated code only */

/* Fails r with "unsupported version" unless min <= v <= max. */
bool ls_kmsg_version_ok(ls_kr_t *r, int16_t v, int16_t min, int16_t max);
/* Array count; a null array is an error naming `what` unless nullable (then -1). */
int32_t ls_kmsg_arrlen(ls_kr_t *r, bool flex, size_t min_elem, bool nullable, const char *what);
/* Non-nullable string / bytes: null on the wire is an error naming `what`. */
ls_kstr_t ls_kmsg_str(ls_kr_t *r, bool flex, const char *what);
ls_kbytes_t ls_kmsg_bytes(ls_kr_t *r, bool flex, const char *what);
/* Writes a string as is (nullable field) / with null written as "" (non-nullable). */
void ls_kmsg_wstr(ls_kw_t *w, bool flex, ls_kstr_t s);
void ls_kmsg_wstr_nn(ls_kw_t *w, bool flex, ls_kstr_t s);
/* Writes bytes; null is written as empty unless nullable. */
void ls_kmsg_wbytes(ls_kw_t *w, bool flex, ls_kbytes_t b, bool nullable);
/* Writes a records field: refs (zero copy) when nrefs > 0, else the view b. */
void ls_kmsg_wrecords(ls_kw_t *w, bool flex, const ls_kref_t *refs, int nrefs, ls_kbytes_t b,
                      bool nullable);
/* Writes an array count; -1 (null) is written as 0 unless nullable. */
void ls_kmsg_warrlen(ls_kw_t *w, bool flex, int32_t n, bool nullable);
/* Tagged-field sections with known tags (flexible versions only):
 *   uint32_t n = ls_kmsg_tags_begin(r, flex);
 *   for (uint32_t i = 0; i < n && !r->err; i++) {
 *       ls_kr_t sub;
 *       switch (ls_kmsg_tag_next(r, &sub)) { case 0: ... read from &sub ...; }
 *       ls_kmsg_tag_end(r, &sub);
 *   }
 * Unknown tags are skipped (their bytes were consumed by tag_next). */
uint32_t ls_kmsg_tags_begin(ls_kr_t *r, bool flex);
uint32_t ls_kmsg_tag_next(ls_kr_t *r, ls_kr_t *sub);
void ls_kmsg_tag_end(ls_kr_t *r, ls_kr_t *sub);
/* Writes one tagged field whose payload was built in `payload` (copied bytes only). */
void ls_kmsg_wtag(ls_kw_t *w, uint32_t tag, const ls_kw_t *payload);
#endif
