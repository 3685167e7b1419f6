/* UTF-8 validation (RFC 3629: no overlong forms, no surrogates, at most
 * U+10FFFF), for text that must become JSON strings. */
#ifndef LS_UTF8_H
#define LS_UTF8_H
#include <stddef.h>
#include <stdint.h>

/* Length (1..4) of the valid UTF-8 sequence starting at p[0..n), or 0 when
 * the bytes there are not one (n == 0 included). */
size_t ls_utf8_seq_len(const uint8_t *p, size_t n);
/* 1 when p[0..n) is entirely valid UTF-8. */
int ls_utf8_valid(const uint8_t *p, size_t n);
#endif
