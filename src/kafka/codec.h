/* Kafka wire codec primitives (protocol guide: "Protocol Primitive Types").
 *
 * Reader: a bounded cursor with a sticky error. Every read checks what
 * remains; after the first failure every read returns zero/empty and the
 * caller checks r->err once at the end. Counts and lengths from the wire are
 * bounded by the bytes that remain before any allocation uses them.
 *
 * Flexible versions (KIP-482) live here, not in handlers: the *_f variants take
 * a `flex` flag and read compact (unsigned varint length+1) or classic forms.
 *
 * Writer: appends to a growable buffer. Large immutable byte runs (record
 * batches served from the read cache) can be referenced instead of copied:
 * ls_kw_ref() closes the current copied segment and records an iovec pointing
 * at a kept ls_chunk, so Fetch responses go to the socket with zero copies. */
#ifndef LS_KAFKA_CODEC_H
#define LS_KAFKA_CODEC_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>
#include "base/buf.h"
#include "base/chunk.h"
#include "base/uuid.h"

/* A view into the receive buffer; ptr == NULL && len == -1 means null. */
typedef struct ls_kstr {
    const char *ptr;
    int32_t len;
} ls_kstr_t;

typedef struct ls_kbytes {
    const uint8_t *ptr;
    int32_t len; /* -1 = null */
} ls_kbytes_t;

typedef struct ls_kr {
    const uint8_t *start;
    const uint8_t *p;
    const uint8_t *end;
    int err;          /* sticky: set by the first failed read */
    const char *what; /* what was being read when err was set */
} ls_kr_t;

void ls_kr_init(ls_kr_t *r, const uint8_t *p, size_t len);
static inline size_t ls_kr_remaining(const ls_kr_t *r) { return (size_t)(r->end - r->p); }
static inline size_t ls_kr_pos(const ls_kr_t *r) { return (size_t)(r->p - r->start); }
void ls_kr_fail(ls_kr_t *r, const char *what);

int8_t ls_kr_i8(ls_kr_t *r);
bool ls_kr_bool(ls_kr_t *r);
int16_t ls_kr_i16(ls_kr_t *r);
int32_t ls_kr_i32(ls_kr_t *r);
int64_t ls_kr_i64(ls_kr_t *r);
uint32_t ls_kr_u32(ls_kr_t *r);
double ls_kr_f64(ls_kr_t *r);
uint32_t ls_kr_uvarint(ls_kr_t *r);
int32_t ls_kr_varint(ls_kr_t *r);  /* zigzag */
int64_t ls_kr_varlong(ls_kr_t *r); /* zigzag */
void ls_kr_uuid(ls_kr_t *r, ls_uuid_t *u);
/* Strings/bytes: classic (int16/int32 length, -1 null) or compact (uvarint length+1, 0 null). */
ls_kstr_t ls_kr_str(ls_kr_t *r, bool flex);
ls_kbytes_t ls_kr_bytes(ls_kr_t *r, bool flex);
/* Array count: classic int32 (-1 null) or compact uvarint-1. Fails if the
 * count exceeds remaining bytes / min_elem_size (absurd counts). */
int32_t ls_kr_arrlen(ls_kr_t *r, bool flex, size_t min_elem_size);
/* Skips a tagged-field section (flexible versions only; no-op otherwise). */
void ls_kr_tags(ls_kr_t *r, bool flex);
void ls_kr_skip(ls_kr_t *r, size_t n);

bool ls_kstr_eq(ls_kstr_t s, const char *c);
/* Heap copy of a wire string (NULL for null). */
char *ls_kstr_dup(ls_kstr_t s);

typedef struct ls_kw {
    ls_buf_t buf; /* copied bytes */
    /* Referenced segments: each marks a point in buf where a chunk's bytes go. */
    struct ls_kw_ref {
        size_t at;         /* buf offset the reference follows */
        ls_chunk_t *chunk; /* kept */
        size_t off, len;
    } * refs;
    int nrefs, caprefs;
    size_t total; /* buf.len + referenced bytes */
} ls_kw_t;

void ls_kw_init(ls_kw_t *w);
void ls_kw_free(ls_kw_t *w); /* releases kept chunks */
void ls_kw_i8(ls_kw_t *w, int8_t v);
void ls_kw_bool(ls_kw_t *w, bool v);
void ls_kw_i16(ls_kw_t *w, int16_t v);
void ls_kw_i32(ls_kw_t *w, int32_t v);
void ls_kw_i64(ls_kw_t *w, int64_t v);
void ls_kw_u32(ls_kw_t *w, uint32_t v);
void ls_kw_f64(ls_kw_t *w, double v);
void ls_kw_uvarint(ls_kw_t *w, uint32_t v);
void ls_kw_varint(ls_kw_t *w, int32_t v);
void ls_kw_varlong(ls_kw_t *w, int64_t v);
void ls_kw_uuid(ls_kw_t *w, const ls_uuid_t *u);
void ls_kw_raw(ls_kw_t *w, const void *p, size_t n);
void ls_kw_str(ls_kw_t *w, bool flex, const char *s);                /* NULL -> null */
void ls_kw_strn(ls_kw_t *w, bool flex, const char *s, int32_t len);  /* len -1 -> null */
void ls_kw_bytes(ls_kw_t *w, bool flex, const void *p, int32_t len); /* len -1 -> null */
void ls_kw_arrlen(ls_kw_t *w, bool flex, int32_t n);                 /* n -1 -> null */
void ls_kw_tags(ls_kw_t *w, bool flex);                              /* empty tag section */
/* Appends a reference to chunk bytes [off, off+len) without copying them. */
void ls_kw_ref(ls_kw_t *w, ls_chunk_t *chunk, size_t off, size_t len);
/* Reserve n bytes now, fill later (e.g. a length prefix); returns buf offset. */
size_t ls_kw_reserve(ls_kw_t *w, size_t n);
/* Writes an int32 at a reserved buf offset. */
void ls_kw_patch_i32(ls_kw_t *w, size_t at, int32_t v);
/* Builds the iovec list covering buf and refs in order; returns count.
 * *iov is ls_malloc'd; the iovecs point into w, so keep w alive until sent. */
int ls_kw_iovecs(ls_kw_t *w, struct iovec **iov);

/* Per-request arena: decoded arrays live here and die with the request. */
typedef struct ls_arena ls_arena_t;
ls_arena_t *ls_arena_new(void);
void *ls_arena_alloc(ls_arena_t *a, size_t n); /* zeroed, 8-byte aligned */
void ls_arena_free(ls_arena_t *a);
/* Arena copy of a wire string as a C string ("" for a null string). *exact
 * (may be NULL) is false when it holds a NUL byte, so the C string is
 * shorter (such a string can never be a name). */
char *ls_arena_kstr(ls_arena_t *a, ls_kstr_t s, bool *exact);
/* printf into the arena. */
char *ls_arena_printf(ls_arena_t *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#endif
