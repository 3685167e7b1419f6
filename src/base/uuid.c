/* UUIDs (RFC 9562) and process randomness.
 *
 * Randomness comes from the kernel CSPRNG via getrandom(2): cluster ids,
 * object names and producer ids must not collide across brokers that start in
 * the same millisecond, which rules out seeding a PRNG from the clock. If the
 * kernel cannot supply entropy we abort rather than hand out predictable ids. */
#include "base/uuid.h"

#include "base/check.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

/* Fallback for kernels without getrandom (ENOSYS), e.g. old containers. */
static int random_from_urandom(uint8_t *p, size_t n)
{
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    while (n) {
        ssize_t r = read(fd, p, n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            close(fd);
            return -1;
        }
        p += r;
        n -= (size_t)r;
    }
    close(fd);
    return 0;
}

void ls_random_bytes(void *buf, unsigned n)
{
    uint8_t *p = buf;
    size_t left = n;
    while (left) {
        ssize_t r = getrandom(p, left, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0 && errno == ENOSYS) {
            if (random_from_urandom(p, left) == 0) return;
        }
        if (r <= 0) LS_PANIC("no kernel randomness (%s)", strerror(errno));
        p += r;
        left -= (size_t)r;
    }
}

void ls_uuid_format_kafka(const ls_uuid_t *u, char out[23])
{
    static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    size_t n = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (int i = 0; i < 16; i++) {
        acc = acc << 8 | u->b[i];
        bits += 8;
        while (bits >= 6) {
            out[n++] = tbl[(acc >> (bits - 6)) & 63];
            bits -= 6;
        }
    }
    out[n++] = tbl[(acc << (6 - bits)) & 63]; /* 128 = 21 * 6 + 2 bits */
    out[n] = 0;
}

void ls_uuid_random(ls_uuid_t *u)
{
    ls_random_bytes(u->b, sizeof u->b);
    u->b[6] = (uint8_t)((u->b[6] & 0x0f) | 0x40); /* version 4 */
    u->b[8] = (uint8_t)((u->b[8] & 0x3f) | 0x80); /* variant 10xx (RFC 9562 §4.1) */
}

void ls_uuid_format(const ls_uuid_t *u, char out[37])
{
    static const char hex[] = "0123456789abcdef";
    char *o = out;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10) *o++ = '-';
        *o++ = hex[u->b[i] >> 4];
        *o++ = hex[u->b[i] & 15];
    }
    *o = 0;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Accepts exactly the canonical 8-4-4-4-12 form, either case; no braces, no
 * "urn:uuid:" prefix, nothing after the 36th character. */
int ls_uuid_parse(const char *s, ls_uuid_t *u)
{
    ls_uuid_t tmp;
    int bi = 0;
    for (int i = 0; i < 36; i++) {
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (s[i] != '-') return -1;
            continue;
        }
        int hi = hexval(s[i]);
        if (hi < 0) return -1;
        int lo = hexval(s[++i]);
        if (lo < 0) return -1;
        tmp.b[bi++] = (uint8_t)(hi << 4 | lo);
    }
    if (s[36] != 0) return -1;
    *u = tmp;
    return 0;
}

int ls_uuid_is_zero(const ls_uuid_t *u)
{
    for (int i = 0; i < 16; i++)
        if (u->b[i]) return 0;
    return 1;
}
