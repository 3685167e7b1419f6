/* Growable byte buffer. Owned by one thread at a time. */
#ifndef LS_BUF_H
#define LS_BUF_H
#include <stddef.h>
#include <stdint.h>

typedef struct ls_buf {
    uint8_t *data;
    size_t len;
    size_t cap;
} ls_buf_t;

void ls_buf_init(ls_buf_t *b);
void ls_buf_free(ls_buf_t *b);
void ls_buf_reserve(ls_buf_t *b, size_t extra); /* ensure cap >= len + extra */
void ls_buf_append(ls_buf_t *b, const void *p, size_t n);
void ls_buf_append_u8(ls_buf_t *b, uint8_t v);
void ls_buf_printf(ls_buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Append s as one segment of a metadata-store key: bytes of [A-Za-z0-9._-]
 * as they are, every other byte as %XX (upper-case hex), so the segment
 * never holds '/' and distinct strings stay distinct (docs/FORMATS.md). */
void ls_buf_append_keypart(ls_buf_t *b, const char *s);
/* The string n bytes of such a segment encode (a new C string); NULL if
 * malformed: a '%' not followed by two hex digits, or an encoded NUL. */
char *ls_keypart_decode(const char *enc, size_t n);
/* Detach the storage; the buffer becomes empty. Caller frees with ls_free. */
uint8_t *ls_buf_steal(ls_buf_t *b, size_t *len);

/* Big-endian helpers used by the wire and the on-store formats. */
static inline void ls_be16_put(uint8_t *p, uint16_t v)
{
    p[0] = v >> 8;
    p[1] = (uint8_t)v;
}
static inline void ls_be32_put(uint8_t *p, uint32_t v)
{
    p[0] = v >> 24;
    p[1] = v >> 16;
    p[2] = v >> 8;
    p[3] = (uint8_t)v;
}
static inline void ls_be64_put(uint8_t *p, uint64_t v)
{
    ls_be32_put(p, (uint32_t)(v >> 32));
    ls_be32_put(p + 4, (uint32_t)v);
}
static inline uint16_t ls_be16_get(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static inline uint32_t ls_be32_get(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static inline uint64_t ls_be64_get(const uint8_t *p)
{
    return (uint64_t)ls_be32_get(p) << 32 | ls_be32_get(p + 4);
}

#endif
