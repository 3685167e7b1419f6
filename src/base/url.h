/* URL pieces: percent-decoding and query strings ("a=1&b=x%20y"), the one
 * parser every URL-taking module uses (store URLs' options, the HTTP
 * servers' query parameters). */
#ifndef LS_BASE_URL_H
#define LS_BASE_URL_H
#include <stdbool.h>
#include <stddef.h>

#include "base/buf.h"
#include "base/status.h"

/* Percent-decodes s[0..n) into out (replacing its contents); '+' becomes a
 * space when plus_is_space (query strings), stays '+' otherwise (paths). -1
 * on a malformed escape. One spare 0 byte follows the data (not counted). */
int ls_url_decode(const char *s, size_t n, bool plus_is_space, ls_buf_t *out);
/* The decoded value of the first `name` parameter of a raw query string.
 * 1: found, 0: absent, -1: malformed. */
int ls_url_query_get(const char *query, const char *name, ls_buf_t *out);
/* Calls fn(arg, key, value, raw, rawlen) for each non-empty "k=v" (or "k",
 * value "") of a query string, decoded ('+' as ls_url_decode with
 * plus_is_space), in order; raw is the undecoded item. Stops at the first
 * status other than LS_OK and returns it; LS_EINVAL (with err) on a malformed
 * escape. */
typedef ls_status (*ls_url_param_fn)(void *arg, const char *key, const char *value, const char *raw,
                                     size_t rawlen);
ls_status ls_url_query_foreach(const char *query, bool plus_is_space, ls_url_param_fn fn, void *arg,
                               char *err, size_t errlen);
#endif
