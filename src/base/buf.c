#include "base/buf.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"

void ls_buf_init(ls_buf_t *b) { b->data = NULL, b->len = 0, b->cap = 0; }

void ls_buf_free(ls_buf_t *b)
{
    ls_free(b->data);
    ls_buf_init(b);
}

void ls_buf_reserve(ls_buf_t *b, size_t extra)
{
    if (b->cap - b->len >= extra) return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap - b->len < extra)
        cap *= 2;
    b->data = ls_realloc(b->data, cap);
    b->cap = cap;
}

void ls_buf_append(ls_buf_t *b, const void *p, size_t n)
{
    if (!n) return;
    ls_buf_reserve(b, n);
    memcpy(b->data + b->len, p, n);
    b->len += n;
}

void ls_buf_append_u8(ls_buf_t *b, uint8_t v)
{
    ls_buf_reserve(b, 1);
    b->data[b->len++] = v;
}

void ls_buf_printf(ls_buf_t *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    ls_buf_reserve(b, (size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf((char *)b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

uint8_t *ls_buf_steal(ls_buf_t *b, size_t *len)
{
    uint8_t *p = b->data;
    if (len) *len = b->len;
    ls_buf_init(b);
    return p;
}

static bool keypart_plain(unsigned char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           ch == '.' || ch == '_' || ch == '-';
}

void ls_buf_append_keypart(ls_buf_t *b, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (keypart_plain(*p)) {
            ls_buf_append_u8(b, *p);
        } else {
            char e[3] = {'%', hex[*p >> 4], hex[*p & 15]};
            ls_buf_append(b, e, 3);
        }
    }
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

char *ls_keypart_decode(const char *enc, size_t n)
{
    char *out = ls_malloc(n + 1);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (enc[i] != '%') {
            out[k++] = enc[i];
            continue;
        }
        int hi = i + 2 < n ? hexval(enc[i + 1]) : -1;
        int lo = i + 2 < n ? hexval(enc[i + 2]) : -1;
        if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
            ls_free(out);
            return NULL;
        }
        out[k++] = (char)(hi << 4 | lo);
        i += 2;
    }
    out[k] = 0;
    return out;
}
