/* The little XML S3 answers in (ListObjectsV2, DeleteObjects, multipart,
 * errors): a bounded scanner for <tag>text</tag>, entity decoding, and
 * S3's ISO 8601 times. Not a general XML parser: S3's responses are flat
 * enough that finding tags in order is all the client needs. */
#include "objstore/s3_xml.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

int ls_s3_xml_next(const char *buf, size_t len, size_t *pos, const char *tag, size_t *vs,
                   size_t *vlen)
{
    char open[80], close[80];
    size_t tl = strlen(tag);
    if (tl + 4 > sizeof open) return 0;
    snprintf(open, sizeof open, "<%s", tag);
    snprintf(close, sizeof close, "</%s>", tag);
    size_t p = *pos;
    while (p < len) {
        const char *o = memmem(buf + p, len - p, open, tl + 1);
        if (!o) return 0;
        size_t after = (size_t)(o - buf) + tl + 1;
        if (after >= len) return 0;
        if (buf[after] != '>' && buf[after] != ' ') {
            p = after; /* a longer tag name with this prefix */
            continue;
        }
        const char *gt = memchr(buf + after, '>', len - after);
        if (!gt) return 0;
        size_t cs = (size_t)(gt - buf) + 1;
        if (gt[-1] == '/') { /* <tag/>: empty */
            *vs = cs;
            *vlen = 0;
            *pos = cs;
            return 1;
        }
        const char *c = memmem(buf + cs, len - cs, close, tl + 3);
        if (!c) return 0;
        *vs = cs;
        *vlen = (size_t)(c - buf) - cs;
        *pos = (size_t)(c - buf) + tl + 3;
        return 1;
    }
    return 0;
}

int ls_s3_xml_text(const char *p, size_t n, char *out, size_t cap)
{
    static const struct {
        const char *e;
        char c;
    } ents[] = {{"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&apos;", '\''}};
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        if (o + 1 >= cap) return -1;
        if (p[i] != '&') {
            out[o++] = p[i++];
            continue;
        }
        int done = 0;
        for (size_t k = 0; k < sizeof ents / sizeof ents[0] && !done; k++) {
            size_t el = strlen(ents[k].e);
            if (n - i >= el && memcmp(p + i, ents[k].e, el) == 0) {
                out[o++] = ents[k].c;
                i += el;
                done = 1;
            }
        }
        if (!done && n - i >= 4 && p[i + 1] == '#') {
            size_t j = i + 2;
            int hex = j < n && (p[j] == 'x' || p[j] == 'X');
            j += (size_t)hex;
            unsigned v = 0;
            size_t digits = 0;
            while (j < n && p[j] != ';' && digits < 6) {
                int d = p[j] >= '0' && p[j] <= '9'          ? p[j] - '0'
                        : hex && p[j] >= 'a' && p[j] <= 'f' ? p[j] - 'a' + 10
                        : hex && p[j] >= 'A' && p[j] <= 'F' ? p[j] - 'A' + 10
                                                            : -1;
                if (d < 0) return -1;
                v = v * (hex ? 16u : 10u) + (unsigned)d;
                j++;
                digits++;
            }
            if (j >= n || p[j] != ';' || !digits || v == 0 || v > 127) return -1;
            out[o++] = (char)v;
            i = j + 1;
            done = 1;
        }
        if (!done) return -1;
    }
    out[o] = 0;
    return 0;
}

void ls_s3_xml_first(const char *buf, size_t len, const char *tag, char *out, size_t cap)
{
    size_t pos = 0, vs, vl;
    out[0] = 0;
    if (ls_s3_xml_next(buf, len, &pos, tag, &vs, &vl) &&
        ls_s3_xml_text(buf + vs, vl, out, cap) != 0)
        out[0] = 0;
}

int64_t ls_s3_iso8601_ms(const char *s)
{
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    int ms = 0;
    if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
               &tm.tm_min, &tm.tm_sec) != 6)
        return 0;
    const char *dot = strchr(s, '.');
    if (dot) {
        int mul = 100;
        for (const char *p = dot + 1; *p >= '0' && *p <= '9' && mul; p++, mul /= 10)
            ms += (*p - '0') * mul;
    }
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    return (int64_t)timegm(&tm) * 1000 + ms;
}
