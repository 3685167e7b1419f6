/* Stored binary records (binrec.h). */
#include "base/binrec.h"

#include <string.h>

#include "base/alloc.h"

void ls_bw_u16(ls_buf_t *b, uint16_t v)
{
    uint8_t x[2];
    ls_be16_put(x, v);
    ls_buf_append(b, x, 2);
}

void ls_bw_u32(ls_buf_t *b, uint32_t v)
{
    uint8_t x[4];
    ls_be32_put(x, v);
    ls_buf_append(b, x, 4);
}

void ls_bw_u64(ls_buf_t *b, uint64_t v)
{
    uint8_t x[8];
    ls_be64_put(x, v);
    ls_buf_append(b, x, 8);
}

void ls_bw_str(ls_buf_t *b, const char *s)
{
    if (!s) {
        ls_bw_u16(b, 0xffff);
        return;
    }
    size_t n = strlen(s);
    if (n > 0xfffe) n = 0xfffe;
    ls_bw_u16(b, (uint16_t)n);
    ls_buf_append(b, s, n);
}

void ls_bw_bytes(ls_buf_t *b, const uint8_t *p, size_t n)
{
    ls_bw_u32(b, (uint32_t)n);
    if (n) ls_buf_append(b, p, n);
}

bool ls_br_need(ls_br_t *r, size_t n)
{
    if (r->err || (size_t)(r->end - r->p) < n) {
        r->err = true;
        return false;
    }
    return true;
}

uint8_t ls_br_u8(ls_br_t *r)
{
    if (!ls_br_need(r, 1)) return 0;
    return *r->p++;
}

uint16_t ls_br_u16(ls_br_t *r)
{
    if (!ls_br_need(r, 2)) return 0;
    uint16_t v = ls_be16_get(r->p);
    r->p += 2;
    return v;
}

uint32_t ls_br_u32(ls_br_t *r)
{
    if (!ls_br_need(r, 4)) return 0;
    uint32_t v = ls_be32_get(r->p);
    r->p += 4;
    return v;
}

uint64_t ls_br_u64(ls_br_t *r)
{
    if (!ls_br_need(r, 8)) return 0;
    uint64_t v = ls_be64_get(r->p);
    r->p += 8;
    return v;
}

char *ls_br_str(ls_br_t *r)
{
    uint16_t n = ls_br_u16(r);
    if (r->err || n == 0xffff) return NULL;
    if (!ls_br_need(r, n)) return NULL;
    if (memchr(r->p, 0, n)) { /* ls_bw_str never writes one: not a string we wrote */
        r->err = true;
        return NULL;
    }
    char *s = ls_strndup((const char *)r->p, n);
    r->p += n;
    return s;
}

uint8_t *ls_br_bytes(ls_br_t *r, size_t *len)
{
    uint32_t n = ls_br_u32(r);
    *len = 0;
    if (r->err || !ls_br_need(r, n)) return NULL;
    uint8_t *p = ls_memdup(n ? r->p : (const uint8_t *)"", n ? n : 1);
    r->p += n;
    *len = n;
    return p;
}

int ls_br_count(ls_br_t *r, size_t min_bytes)
{
    uint32_t n = ls_br_u32(r);
    if (r->err || n > (size_t)(r->end - r->p) / min_bytes) {
        r->err = true;
        return 0;
    }
    return (int)n;
}
