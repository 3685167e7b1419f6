#include "base/url.h"

#include <stdio.h>
#include <string.h>

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

int ls_url_decode(const char *s, size_t n, bool plus_is_space, ls_buf_t *out)
{
    out->len = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '%') {
            int hi = n - i >= 3 ? hexval(s[i + 1]) : -1;
            int lo = n - i >= 3 ? hexval(s[i + 2]) : -1;
            if (hi < 0 || lo < 0) return -1;
            ls_buf_append_u8(out, (uint8_t)(hi << 4 | lo));
            i += 2;
        } else {
            ls_buf_append_u8(out, (uint8_t)(plus_is_space && c == '+' ? ' ' : c));
        }
    }
    ls_buf_append_u8(out, 0);
    out->len--;
    return 0;
}

int ls_url_query_get(const char *query, const char *name, ls_buf_t *out)
{
    size_t nl = strlen(name);
    const char *p = query;
    while (p && *p) {
        const char *end = strchr(p, '&');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        size_t kl = eq ? (size_t)(eq - p) : len;
        if (kl == nl && !memcmp(p, name, nl)) {
            if (!eq) return ls_url_decode("", 0, true, out) == 0 ? 1 : -1;
            return ls_url_decode(eq + 1, len - kl - 1, true, out) == 0 ? 1 : -1;
        }
        p = end ? end + 1 : NULL;
    }
    return 0;
}

ls_status ls_url_query_foreach(const char *query, bool plus_is_space, ls_url_param_fn fn, void *arg,
                               char *err, size_t errlen)
{
    ls_buf_t k, v;
    ls_buf_init(&k);
    ls_buf_init(&v);
    ls_status rc = LS_OK;
    for (const char *p = query; p && *p && rc == LS_OK;) {
        const char *end = strchr(p, '&');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len) {
            const char *eq = memchr(p, '=', len);
            size_t kl = eq ? (size_t)(eq - p) : len;
            if (ls_url_decode(p, kl, plus_is_space, &k) != 0 ||
                ls_url_decode(eq ? eq + 1 : "", eq ? len - kl - 1 : 0, plus_is_space, &v) != 0) {
                if (err && errlen > 0)
                    snprintf(err, errlen, "malformed percent escape in '%.*s'", (int)len, p);
                rc = LS_EINVAL;
                break;
            }
            rc = fn(arg, (const char *)k.data, (const char *)v.data, p, len);
        }
        p = end ? end + 1 : NULL;
    }
    ls_buf_free(&k);
    ls_buf_free(&v);
    return rc;
}
