/* Base64 (RFC 4648); the contract is in base64.h. */
#include "base/base64.h"

#include <string.h>

#include "base/alloc.h"

static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *ls_base64_encode(const void *data, size_t n)
{
    const uint8_t *p = data;
    char *out = ls_malloc(4 * ((n + 2) / 3) + 1), *o = out;
    size_t i = 0;
    for (; i + 2 < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
        *o++ = B64[v >> 18], *o++ = B64[(v >> 12) & 63], *o++ = B64[(v >> 6) & 63],
        *o++ = B64[v & 63];
    }
    if (i < n) {
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0);
        *o++ = B64[v >> 18], *o++ = B64[(v >> 12) & 63];
        *o++ = i + 1 < n ? B64[(v >> 6) & 63] : '=';
        *o++ = '=';
    }
    *o = 0;
    return out;
}

static int b64_val(int c)
{
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+' || c == '-') return 62;
    if (c == '/' || c == '_') return 63;
    return -1;
}

int ls_base64_decode(const char *s, uint8_t **out, size_t *outlen)
{
    size_t n = strlen(s);
    uint8_t *buf = ls_malloc(n / 4 * 3 + 4), *o = buf;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '=') break;
        int v = b64_val((unsigned char)s[i]);
        if (v < 0) {
            ls_free(buf);
            return -1;
        }
        acc = acc << 6 | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            *o++ = (uint8_t)(acc >> bits);
        }
    }
    *o = 0;
    *out = buf;
    *outlen = (size_t)(o - buf);
    return 0;
}
