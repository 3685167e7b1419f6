/* Kafka wire codec primitives (protocol guide "Protocol Primitive Types";
 * KIP-482 for the compact/tagged forms of flexible versions).
 *
 * Reader invariants:
 *  - r->p never passes r->end; every read checks ls_kr_remaining() first;
 *  - the first failure sets r->err (sticky) and r->what, and parks r->p at
 *    r->end so nothing further is consumed; every later read returns 0/empty;
 *  - lengths and counts are validated against the bytes that remain before a
 *    caller can use them to size an allocation or a loop.
 *
 * Writer invariants:
 *  - w->buf holds every copied byte in order; w->refs[i].at is the buf offset
 *    at which referenced chunk bytes are spliced in (refs are sorted by `at`);
 *  - w->total == w->buf.len + sum(refs[i].len) at all times;
 *  - every ref holds its own chunk reference, dropped by ls_kw_free().
 *
 * Arena: a list of blocks with a bump pointer; allocations are zeroed and
 * 8-byte aligned; large allocations get a block of their own. Freed as a whole. */
#include "kafka/codec.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"

/* ------------------------------------------------------------------ reader */

void ls_kr_init(ls_kr_t *r, const uint8_t *p, size_t len)
{
    static const uint8_t empty[1];
    if (!p) {
        /* An empty buffer may come as NULL (an empty ls_buf_t); keep the
         * pointer arithmetic defined. */
        p = empty;
        len = 0;
    }
    r->start = p;
    r->p = p;
    r->end = p + len;
    r->err = 0;
    r->what = NULL;
}

void ls_kr_fail(ls_kr_t *r, const char *what)
{
    if (!r->err) {
        r->err = 1;
        r->what = what;
    }
    r->p = r->end;
}

/* True (and fails the reader) unless n more bytes are available. */
static inline bool kr_need(ls_kr_t *r, size_t n, const char *what)
{
    if (r->err) return false;
    if (ls_kr_remaining(r) < n) {
        ls_kr_fail(r, what);
        return false;
    }
    return true;
}

int8_t ls_kr_i8(ls_kr_t *r)
{
    if (!kr_need(r, 1, "int8")) return 0;
    return (int8_t)*r->p++;
}

bool ls_kr_bool(ls_kr_t *r)
{
    /* The spec reads any non-zero byte as true. */
    return ls_kr_i8(r) != 0;
}

int16_t ls_kr_i16(ls_kr_t *r)
{
    if (!kr_need(r, 2, "int16")) return 0;
    int16_t v = (int16_t)ls_be16_get(r->p);
    r->p += 2;
    return v;
}

int32_t ls_kr_i32(ls_kr_t *r)
{
    if (!kr_need(r, 4, "int32")) return 0;
    int32_t v = (int32_t)ls_be32_get(r->p);
    r->p += 4;
    return v;
}

uint32_t ls_kr_u32(ls_kr_t *r)
{
    if (!kr_need(r, 4, "uint32")) return 0;
    uint32_t v = ls_be32_get(r->p);
    r->p += 4;
    return v;
}

int64_t ls_kr_i64(ls_kr_t *r)
{
    if (!kr_need(r, 8, "int64")) return 0;
    int64_t v = (int64_t)ls_be64_get(r->p);
    r->p += 8;
    return v;
}

double ls_kr_f64(ls_kr_t *r)
{
    if (!kr_need(r, 8, "float64")) return 0;
    uint64_t bits = ls_be64_get(r->p);
    r->p += 8;
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

/* Unsigned LEB128 of at most 5 bytes for 32 bits; the fifth byte may carry
 * only 4 significant bits (anything more overflows uint32: rejected, as the
 * Java client's ByteUtils.readUnsignedVarint does). */
uint32_t ls_kr_uvarint(ls_kr_t *r)
{
    if (r->err) return 0;
    uint32_t v = 0;
    for (int i = 0; i < 5; i++) {
        if (r->p >= r->end) {
            ls_kr_fail(r, "varint (truncated)");
            return 0;
        }
        uint8_t b = *r->p++;
        if (i == 4 && (b & 0xf0)) {
            ls_kr_fail(r, "varint (overflows 32 bits)");
            return 0;
        }
        v |= (uint32_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) return v;
    }
    return v; /* unreachable: the fifth byte has no continuation bit */
}

int32_t ls_kr_varint(ls_kr_t *r)
{
    uint32_t u = ls_kr_uvarint(r);
    return (int32_t)((u >> 1) ^ (~(u & 1) + 1));
}

int64_t ls_kr_varlong(ls_kr_t *r)
{
    if (r->err) return 0;
    uint64_t v = 0;
    for (int i = 0; i < 10; i++) {
        if (r->p >= r->end) {
            ls_kr_fail(r, "varlong (truncated)");
            return 0;
        }
        uint8_t b = *r->p++;
        if (i == 9 && (b & 0xfe)) {
            ls_kr_fail(r, "varlong (overflows 64 bits)");
            return 0;
        }
        v |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) return (int64_t)((v >> 1) ^ (~(v & 1) + 1));
    }
    return 0; /* unreachable */
}

void ls_kr_uuid(ls_kr_t *r, ls_uuid_t *u)
{
    if (!kr_need(r, 16, "uuid")) {
        memset(u, 0, sizeof *u);
        return;
    }
    memcpy(u->b, r->p, 16);
    r->p += 16;
}

static const ls_kstr_t kstr_null = {NULL, -1};
static const ls_kbytes_t kbytes_null = {NULL, -1};

ls_kstr_t ls_kr_str(ls_kr_t *r, bool flex)
{
    int64_t len;
    if (flex) {
        uint32_t n = ls_kr_uvarint(r);
        if (r->err) return kstr_null;
        if (n == 0) return kstr_null;
        len = (int64_t)n - 1;
    } else {
        len = ls_kr_i16(r);
        if (r->err) return kstr_null;
        if (len == -1) return kstr_null;
    }
    /* Strings are at most INT16_MAX bytes in either form (the Java client
     * refuses longer compact strings too). */
    if (len < 0 || len > INT16_MAX) {
        ls_kr_fail(r, "string length");
        return kstr_null;
    }
    if (!kr_need(r, (size_t)len, "string (truncated)")) return kstr_null;
    ls_kstr_t s = {(const char *)r->p, (int32_t)len};
    r->p += len;
    return s;
}

ls_kbytes_t ls_kr_bytes(ls_kr_t *r, bool flex)
{
    int64_t len;
    if (flex) {
        uint32_t n = ls_kr_uvarint(r);
        if (r->err || n == 0) return kbytes_null;
        len = (int64_t)n - 1;
    } else {
        len = ls_kr_i32(r);
        if (r->err || len == -1) return kbytes_null;
    }
    if (len < 0 || len > INT32_MAX) {
        ls_kr_fail(r, "bytes length");
        return kbytes_null;
    }
    if (!kr_need(r, (size_t)len, "bytes (truncated)")) return kbytes_null;
    ls_kbytes_t b = {r->p, (int32_t)len};
    r->p += len;
    return b;
}

int32_t ls_kr_arrlen(ls_kr_t *r, bool flex, size_t min_elem_size)
{
    int64_t n;
    if (flex) {
        uint32_t u = ls_kr_uvarint(r);
        if (r->err) return 0;
        if (u == 0) return -1;
        n = (int64_t)u - 1;
    } else {
        n = ls_kr_i32(r);
        if (r->err) return 0;
        if (n == -1) return -1;
    }
    if (n < 0) {
        ls_kr_fail(r, "array count");
        return 0;
    }
    /* Every element occupies at least min_elem_size bytes on the wire, so a
     * count larger than remaining/min_elem_size cannot be honest. */
    size_t min = min_elem_size ? min_elem_size : 1;
    if ((uint64_t)n > ls_kr_remaining(r) / min) {
        ls_kr_fail(r, "array count exceeds remaining bytes");
        return 0;
    }
    return (int32_t)n;
}

void ls_kr_tags(ls_kr_t *r, bool flex)
{
    if (!flex || r->err) return;
    uint32_t n = ls_kr_uvarint(r);
    /* Each tagged field takes at least two bytes (tag, size). */
    if (!r->err && n > ls_kr_remaining(r) / 2) {
        ls_kr_fail(r, "tagged field count");
        return;
    }
    for (uint32_t i = 0; i < n && !r->err; i++) {
        (void)ls_kr_uvarint(r); /* tag */
        uint32_t size = ls_kr_uvarint(r);
        ls_kr_skip(r, size);
    }
}

void ls_kr_skip(ls_kr_t *r, size_t n)
{
    if (!kr_need(r, n, "skip (truncated)")) return;
    r->p += n;
}

bool ls_kstr_eq(ls_kstr_t s, const char *c)
{
    if (!c || s.len < 0) return !c && s.len < 0;
    size_t n = strlen(c);
    return (size_t)s.len == n && memcmp(s.ptr, c, n) == 0;
}

char *ls_kstr_dup(ls_kstr_t s)
{
    if (s.len < 0) return NULL;
    return ls_strndup(s.ptr ? s.ptr : "", (size_t)s.len);
}

/* ------------------------------------------------------------------ writer */

void ls_kw_init(ls_kw_t *w)
{
    ls_buf_init(&w->buf);
    w->refs = NULL;
    w->nrefs = 0;
    w->caprefs = 0;
    w->total = 0;
}

void ls_kw_free(ls_kw_t *w)
{
    for (int i = 0; i < w->nrefs; i++)
        ls_chunk_release(w->refs[i].chunk);
    ls_free(w->refs);
    ls_buf_free(&w->buf);
    ls_kw_init(w);
}

static inline uint8_t *kw_grow(ls_kw_t *w, size_t n)
{
    ls_buf_reserve(&w->buf, n);
    uint8_t *p = w->buf.data + w->buf.len;
    w->buf.len += n;
    w->total += n;
    return p;
}

void ls_kw_raw(ls_kw_t *w, const void *p, size_t n)
{
    if (!n) return;
    memcpy(kw_grow(w, n), p, n);
}

void ls_kw_i8(ls_kw_t *w, int8_t v) { *kw_grow(w, 1) = (uint8_t)v; }
void ls_kw_bool(ls_kw_t *w, bool v) { *kw_grow(w, 1) = v ? 1 : 0; }
void ls_kw_i16(ls_kw_t *w, int16_t v) { ls_be16_put(kw_grow(w, 2), (uint16_t)v); }
void ls_kw_i32(ls_kw_t *w, int32_t v) { ls_be32_put(kw_grow(w, 4), (uint32_t)v); }
void ls_kw_u32(ls_kw_t *w, uint32_t v) { ls_be32_put(kw_grow(w, 4), v); }
void ls_kw_i64(ls_kw_t *w, int64_t v) { ls_be64_put(kw_grow(w, 8), (uint64_t)v); }

void ls_kw_f64(ls_kw_t *w, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    ls_be64_put(kw_grow(w, 8), bits);
}

void ls_kw_uvarint(ls_kw_t *w, uint32_t v)
{
    uint8_t tmp[5];
    size_t n = 0;
    while (v >= 0x80) {
        tmp[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    tmp[n++] = (uint8_t)v;
    ls_kw_raw(w, tmp, n);
}

void ls_kw_varint(ls_kw_t *w, int32_t v)
{
    uint32_t u = ((uint32_t)v << 1) ^ (uint32_t)(v >> 31);
    ls_kw_uvarint(w, u);
}

void ls_kw_varlong(ls_kw_t *w, int64_t v)
{
    uint64_t u = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
    uint8_t tmp[10];
    size_t n = 0;
    while (u >= 0x80) {
        tmp[n++] = (uint8_t)(u | 0x80);
        u >>= 7;
    }
    tmp[n++] = (uint8_t)u;
    ls_kw_raw(w, tmp, n);
}

void ls_kw_uuid(ls_kw_t *w, const ls_uuid_t *u) { ls_kw_raw(w, u->b, 16); }

void ls_kw_strn(ls_kw_t *w, bool flex, const char *s, int32_t len)
{
    if (len < 0 || (!s && len > 0)) {
        if (flex)
            ls_kw_uvarint(w, 0);
        else
            ls_kw_i16(w, -1);
        return;
    }
    if (len > INT16_MAX)
        len = INT16_MAX; /* the wire cannot carry more; callers bound names well below */
    if (flex)
        ls_kw_uvarint(w, (uint32_t)len + 1);
    else
        ls_kw_i16(w, (int16_t)len);
    ls_kw_raw(w, s, (size_t)len);
}

void ls_kw_str(ls_kw_t *w, bool flex, const char *s)
{
    ls_kw_strn(w, flex, s, s ? (int32_t)strlen(s) : -1);
}

void ls_kw_bytes(ls_kw_t *w, bool flex, const void *p, int32_t len)
{
    if (len < 0) {
        if (flex)
            ls_kw_uvarint(w, 0);
        else
            ls_kw_i32(w, -1);
        return;
    }
    if (flex)
        ls_kw_uvarint(w, (uint32_t)len + 1);
    else
        ls_kw_i32(w, len);
    ls_kw_raw(w, p, (size_t)len);
}

void ls_kw_arrlen(ls_kw_t *w, bool flex, int32_t n)
{
    if (flex)
        ls_kw_uvarint(w, n < 0 ? 0 : (uint32_t)n + 1);
    else
        ls_kw_i32(w, n < 0 ? -1 : n);
}

void ls_kw_tags(ls_kw_t *w, bool flex)
{
    if (flex) ls_kw_uvarint(w, 0);
}

void ls_kw_ref(ls_kw_t *w, ls_chunk_t *chunk, size_t off, size_t len)
{
    if (!len) return;
    if (w->nrefs == w->caprefs) {
        w->caprefs = w->caprefs ? w->caprefs * 2 : 8;
        w->refs = ls_realloc(w->refs, (size_t)w->caprefs * sizeof *w->refs);
    }
    struct ls_kw_ref *ref = &w->refs[w->nrefs++];
    ref->at = w->buf.len;
    ref->chunk = ls_chunk_keep(chunk);
    ref->off = off;
    ref->len = len;
    w->total += len;
}

size_t ls_kw_reserve(ls_kw_t *w, size_t n)
{
    size_t at = w->buf.len;
    memset(kw_grow(w, n), 0, n);
    return at;
}

void ls_kw_patch_i32(ls_kw_t *w, size_t at, int32_t v)
{
    if (at + 4 <= w->buf.len) ls_be32_put(w->buf.data + at, (uint32_t)v);
}

int ls_kw_iovecs(ls_kw_t *w, struct iovec **iov)
{
    struct iovec *v = ls_malloc(((size_t)w->nrefs * 2 + 1) * sizeof *v);
    int n = 0;
    size_t pos = 0;
    for (int i = 0; i < w->nrefs; i++) {
        const struct ls_kw_ref *ref = &w->refs[i];
        if (ref->at > pos) {
            v[n].iov_base = w->buf.data + pos;
            v[n].iov_len = ref->at - pos;
            n++;
            pos = ref->at;
        }
        v[n].iov_base = ref->chunk->data + ref->off;
        v[n].iov_len = ref->len;
        n++;
    }
    if (w->buf.len > pos) {
        v[n].iov_base = w->buf.data + pos;
        v[n].iov_len = w->buf.len - pos;
        n++;
    }
    *iov = v;
    return n;
}

/* ------------------------------------------------------------------- arena */

#define ARENA_BLOCK 4096

struct ls_arena_block {
    struct ls_arena_block *next;
    size_t used, cap;
    /* payload follows, 16-byte aligned */
};

struct ls_arena {
    struct ls_arena_block *head; /* current bump block (first in list) */
};

static inline size_t arena_hdr(void) { return (sizeof(struct ls_arena_block) + 15) & ~(size_t)15; }

static struct ls_arena_block *arena_block_new(size_t cap)
{
    struct ls_arena_block *b = ls_malloc(arena_hdr() + cap);
    b->next = NULL;
    b->used = 0;
    b->cap = cap;
    return b;
}

ls_arena_t *ls_arena_new(void)
{
    ls_arena_t *a = LS_NEW(ls_arena_t);
    a->head = arena_block_new(ARENA_BLOCK);
    return a;
}

void *ls_arena_alloc(ls_arena_t *a, size_t n)
{
    n = (n + 7) & ~(size_t)7;
    if (n == 0) n = 8;
    struct ls_arena_block *b = a->head;
    if (b->cap - b->used < n) {
        if (n > ARENA_BLOCK / 4) {
            /* Big allocation: its own block, linked behind the current one so
             * the bump block keeps its free space. */
            struct ls_arena_block *big = arena_block_new(n);
            big->used = n;
            big->next = b->next;
            b->next = big;
            uint8_t *p = (uint8_t *)big + arena_hdr();
            memset(p, 0, n);
            return p;
        }
        b = arena_block_new(ARENA_BLOCK);
        b->next = a->head;
        a->head = b;
    }
    uint8_t *p = (uint8_t *)b + arena_hdr() + b->used;
    b->used += n;
    memset(p, 0, n);
    return p;
}

char *ls_arena_kstr(ls_arena_t *a, ls_kstr_t s, bool *exact)
{
    size_t n = s.len > 0 ? (size_t)s.len : 0;
    char *p = ls_arena_alloc(a, n + 1);
    if (n) memcpy(p, s.ptr, n);
    if (exact) *exact = strlen(p) == n;
    return p;
}

char *ls_arena_printf(ls_arena_t *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *p = ls_arena_alloc(a, (size_t)(n > 0 ? n : 0) + 1);
    va_start(ap, fmt);
    vsnprintf(p, (size_t)(n > 0 ? n : 0) + 1, fmt, ap);
    va_end(ap);
    return p;
}

void ls_arena_free(ls_arena_t *a)
{
    if (!a) return;
    struct ls_arena_block *b = a->head;
    while (b) {
        struct ls_arena_block *next = b->next;
        ls_free(b);
        b = next;
    }
    ls_free(a);
}
