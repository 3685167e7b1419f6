/* UTF-8 validation; see utf8.h. */
#include "base/utf8.h"

size_t ls_utf8_seq_len(const uint8_t *p, size_t n)
{
    if (n == 0) return 0;
    uint8_t c = p[0];
    if (c < 0x80) return 1;
    size_t len;
    uint8_t lo = 0x80, hi = 0xbf; /* allowed range of the second byte */
    if (c >= 0xc2 && c <= 0xdf)
        len = 2;
    else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        if (c == 0xe0) lo = 0xa0; /* overlong */
        if (c == 0xed) hi = 0x9f; /* surrogates */
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        if (c == 0xf0) lo = 0x90; /* overlong */
        if (c == 0xf4) hi = 0x8f; /* above U+10FFFF */
    } else
        return 0;
    if (n < len || p[1] < lo || p[1] > hi) return 0;
    for (size_t i = 2; i < len; i++)
        if ((p[i] & 0xc0) != 0x80) return 0;
    return len;
}

int ls_utf8_valid(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n;) {
        size_t k = ls_utf8_seq_len(p + i, n - i);
        if (!k) return 0;
        i += k;
    }
    return 1;
}
