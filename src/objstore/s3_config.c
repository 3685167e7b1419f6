/* s3:// URL resolution: what the URL's options, the broker's s3.* settings
 * (ls_objstore_opts_t) and the AWS_* environment give, in that precedence,
 * checked and with defaults filled in (see objstore_s3.c's header for the
 * option list). Credentials never come from the URL (the broker logs it). */
#include "objstore/s3_config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/alloc.h"
#include "base/url.h"

typedef struct s3_params {
    char *endpoint, *region, *path_style, *create_only, *ca_file;
    int tls_verify, unsigned_payload;
    int64_t request_timeout_ms, connect_timeout_ms, max_connections, max_retries, backoff_ms,
        backoff_max_ms, mp_threshold, part_size, list_page, test_fail_part;
} s3_params_t;

static void params_free(s3_params_t *p)
{
    ls_free(p->endpoint);
    ls_free(p->region);
    ls_free(p->path_style);
    ls_free(p->create_only);
    ls_free(p->ca_file);
}

static int parse_tri(const char *v, int *out)
{
    if (!v || strcasecmp(v, "auto") == 0)
        *out = LS_S3_TRI_AUTO;
    else if (strcasecmp(v, "true") == 0 || strcmp(v, "1") == 0 || strcasecmp(v, "yes") == 0 ||
             strcasecmp(v, "on") == 0)
        *out = LS_S3_TRI_ON;
    else if (strcasecmp(v, "false") == 0 || strcmp(v, "0") == 0 || strcasecmp(v, "no") == 0 ||
             strcasecmp(v, "off") == 0)
        *out = LS_S3_TRI_OFF;
    else
        return -1;
    return 0;
}

static int parse_num(const char *v, int64_t *out)
{
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno || end == v) return -1;
    int64_t mul = 1;
    if (*end == 'k' || *end == 'K')
        mul = 1 << 10, end++;
    else if (*end == 'm' || *end == 'M')
        mul = 1 << 20, end++;
    else if (*end == 'g' || *end == 'G')
        mul = 1 << 30, end++;
    if (*end == 'i' || *end == 'I') end++;
    if (*end == 'b' || *end == 'B') end++;
    if (*end || x < 0) return -1;
    *out = (int64_t)x * mul;
    return 0;
}

/* Applies one URL query option. */
static ls_status apply_query_opt(s3_params_t *p, const char *k, const char *v, char *err,
                                 size_t errlen)
{
    struct {
        const char *name;
        int64_t *field;
    } nums[] = {
        {"request_timeout_ms", &p->request_timeout_ms},
        {"connect_timeout_ms", &p->connect_timeout_ms},
        {"max_connections", &p->max_connections},
        {"max_retries", &p->max_retries},
        {"retry_backoff_ms", &p->backoff_ms},
        {"retry_backoff_max_ms", &p->backoff_max_ms},
        {"multipart_threshold", &p->mp_threshold},
        {"part_size", &p->part_size},
        {"list_page_size", &p->list_page},
        {"test_fail_part", &p->test_fail_part},
    };
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++)
        if (strcmp(k, nums[i].name) == 0) {
            if (parse_num(v, nums[i].field) != 0) {
                snprintf(err, errlen, "s3 URL option %s: '%s' is not a number", k, v);
                return LS_EINVAL;
            }
            return LS_OK;
        }
    char **strs[] = {&p->endpoint, &p->region, &p->path_style, &p->create_only, &p->ca_file};
    const char *snames[] = {"endpoint", "region", "path_style", "create_only", "ca_file"};
    for (size_t i = 0; i < 5; i++)
        if (strcmp(k, snames[i]) == 0) {
            ls_free(*strs[i]);
            *strs[i] = ls_strdup(v);
            return LS_OK;
        }
    if (strcmp(k, "tls_verify") == 0 || strcmp(k, "unsigned_payload") == 0) {
        int t;
        if (parse_tri(v, &t) != 0 || t == LS_S3_TRI_AUTO) {
            snprintf(err, errlen, "s3 URL option %s: '%s' is not true/false", k, v);
            return LS_EINVAL;
        }
        *(strcmp(k, "tls_verify") == 0 ? &p->tls_verify : &p->unsigned_payload) = t;
        return LS_OK;
    }
    if (strstr(k, "key") || strstr(k, "secret") || strstr(k, "token")) {
        snprintf(err, errlen,
                 "s3 URL option '%s': credentials do not belong in the URL (it is logged); use "
                 "s3.access.key / s3.secret.key or AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY",
                 k);
        return LS_EINVAL;
    }
    snprintf(err, errlen, "s3 URL: unknown option '%s'", k);
    return LS_EINVAL;
}

typedef struct query_arg {
    s3_params_t *p;
    char *err;
    size_t errlen;
} query_arg_t;

static ls_status apply_query_param(void *arg, const char *k, const char *v, const char *raw,
                                   size_t rawlen)
{
    query_arg_t *a = arg;
    return apply_query_opt(a->p, k, v, a->err, a->errlen);
}

static const char *env_first(const char *a, const char *b)
{
    const char *v = a ? getenv(a) : NULL;
    if (v && *v) return v;
    v = b ? getenv(b) : NULL;
    return v && *v ? v : NULL;
}

static int bucket_ok(const char *b)
{
    size_t n = strlen(b);
    if (n < 1 || n > 255) return 0;
    for (const char *p = b; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '.' || *p == '-' || *p == '_'))
            return 0;
    return 1;
}

ls_status ls_s3_config_resolve(const char *url, const ls_objstore_opts_t *o, ls_s3_config_t *c,
                               char *err, size_t errlen)
{
    char dummy[8];
    if (!err || errlen == 0) err = dummy, errlen = sizeof dummy;
    err[0] = 0;
    ls_objstore_opts_t defaults;
    if (!o) {
        ls_objstore_opts_init(&defaults);
        o = &defaults;
    }
    if (!url || strncmp(url, "s3://", 5) != 0) {
        snprintf(err, errlen, "not an s3:// URL");
        return LS_EINVAL;
    }
    /* config-level settings first, URL options over them */
    s3_params_t p = {
        .endpoint = o->s3_endpoint ? ls_strdup(o->s3_endpoint) : NULL,
        .region = o->s3_region ? ls_strdup(o->s3_region) : NULL,
        .path_style = o->s3_path_style ? ls_strdup(o->s3_path_style) : NULL,
        .create_only = o->s3_create_only ? ls_strdup(o->s3_create_only) : NULL,
        .ca_file = o->s3_ca_file ? ls_strdup(o->s3_ca_file) : NULL,
        .tls_verify = o->s3_tls_verify,
        .unsigned_payload = o->s3_unsigned_payload,
        .request_timeout_ms = o->s3_request_timeout_ms,
        .connect_timeout_ms = o->s3_connect_timeout_ms,
        .max_connections = o->s3_max_connections,
        .max_retries = o->s3_max_retries,
        .backoff_ms = o->s3_retry_backoff_ms,
        .backoff_max_ms = o->s3_retry_backoff_max_ms,
        .mp_threshold = o->s3_multipart_threshold,
        .part_size = o->s3_multipart_part_size,
        .list_page = -1,
    };
    const char *rest = url + 5;
    const char *qm = strchr(rest, '?');
    size_t loc_len = qm ? (size_t)(qm - rest) : strlen(rest);
    char *loc = ls_strndup(rest, loc_len);
    memset(c, 0, sizeof *c);
    if (qm) {
        query_arg_t qa = {&p, err, errlen};
        if (ls_url_query_foreach(qm + 1, false, apply_query_param, &qa, err, errlen) != 0)
            goto fail;
    }
    char *slash = strchr(loc, '/');
    char *pfx = NULL;
    if (slash) {
        *slash = 0;
        pfx = slash + 1;
        size_t pl = strlen(pfx);
        while (pl && pfx[pl - 1] == '/')
            pfx[--pl] = 0;
        if (pl && !ls_objstore_key_valid(pfx)) {
            snprintf(err, errlen, "s3 URL '%s': prefix '%s' is not a valid key path", url, pfx);
            goto fail;
        }
    }
    if (!bucket_ok(loc)) {
        snprintf(err, errlen, "s3 URL '%s': '%s' is not a bucket name", url, loc);
        goto fail;
    }

    c->bucket = ls_strdup(loc);
    c->prefix = pfx && *pfx ? ls_asprintf("%s/", pfx) : ls_strdup("");

    const char *region = p.region ? p.region : env_first("AWS_REGION", "AWS_DEFAULT_REGION");
    c->region = ls_strdup(region ? region : "us-east-1");
    const char *ak = o->s3_access_key ? o->s3_access_key : env_first("AWS_ACCESS_KEY_ID", NULL);
    const char *sk = o->s3_secret_key ? o->s3_secret_key : env_first("AWS_SECRET_ACCESS_KEY", NULL);
    const char *tok =
        o->s3_session_token ? o->s3_session_token : env_first("AWS_SESSION_TOKEN", NULL);
    if (!ak || !sk) {
        snprintf(err, errlen,
                 "s3: no credentials (set s3.access.key and s3.secret.key, or "
                 "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)");
        goto fail;
    }
    c->access_key = ls_strdup(ak);
    c->secret_key = ls_strdup(sk);
    c->session_token = tok ? ls_strdup(tok) : NULL;
    c->ca_file = p.ca_file ? ls_strdup(p.ca_file) : NULL;

    /* endpoint -> scheme, host[:port] */
    const char *ep = p.endpoint ? p.endpoint : env_first("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL");
    int custom = ep != NULL;
    char *epbuf = ep ? ls_strdup(ep) : ls_asprintf("https://s3.%s.amazonaws.com", c->region);
    const char *scheme = "https";
    char *hostport = epbuf;
    char *sep = strstr(epbuf, "://");
    if (sep) {
        *sep = 0;
        scheme = epbuf;
        hostport = sep + 3;
        if (strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0) {
            snprintf(err, errlen, "s3 endpoint '%s': scheme must be http or https", ep);
            ls_free(epbuf);
            goto fail;
        }
    }
    size_t hl = strlen(hostport);
    while (hl && hostport[hl - 1] == '/')
        hostport[--hl] = 0;
    if (!hl || strchr(hostport, '/') || strchr(hostport, '@')) {
        snprintf(err, errlen, "s3 endpoint '%s': expected http(s)://host[:port] without a path",
                 ep ? ep : "");
        ls_free(epbuf);
        goto fail;
    }
    int ps;
    if (parse_tri(p.path_style, &ps) != 0) {
        snprintf(err, errlen, "s3.path.style: '%s' is not auto, true or false", p.path_style);
        ls_free(epbuf);
        goto fail;
    }
    /* auto: virtual-hosted on AWS (unless the bucket has dots, which break
     * the TLS wildcard), path style on custom endpoints (MinIO, Ceph) */
    c->path_style = ps == LS_S3_TRI_AUTO ? (custom || strchr(c->bucket, '.') != NULL) : ps;
    c->scheme_host = c->path_style ? ls_asprintf("%s://%s", scheme, hostport)
                                   : ls_asprintf("%s://%s.%s", scheme, c->bucket, hostport);
    c->host_hdr = c->path_style ? ls_strdup(hostport) : ls_asprintf("%s.%s", c->bucket, hostport);
    c->path_base = c->path_style ? ls_asprintf("/%s", c->bucket) : ls_strdup("");
    ls_free(epbuf);

    if (parse_tri(p.create_only, &c->create_only_mode) != 0) {
        snprintf(err, errlen, "s3.create.only: '%s' is not auto, true or false", p.create_only);
        goto fail;
    }
    c->tls_verify = p.tls_verify != 0; /* unset (-1) means on */
    c->unsigned_payload = p.unsigned_payload > 0;
    c->request_timeout_ms = p.request_timeout_ms > 0 ? (long)p.request_timeout_ms : 30000;
    c->connect_timeout_ms = p.connect_timeout_ms > 0 ? (long)p.connect_timeout_ms : 5000;
    c->max_conns =
        p.max_connections > 0 ? (int)(p.max_connections < 1024 ? p.max_connections : 1024) : 32;
    c->max_retries = p.max_retries >= 0 ? (int)(p.max_retries < 100 ? p.max_retries : 100) : 5;
    c->backoff_ms = p.backoff_ms > 0 ? (long)p.backoff_ms : 50;
    c->backoff_max_ms = p.backoff_max_ms > 0 ? (long)p.backoff_max_ms : 2000;
    c->mp_threshold = p.mp_threshold > 0 ? (uint64_t)p.mp_threshold : (uint64_t)32 << 20;
    c->part_size = p.part_size > 0 ? (uint64_t)p.part_size : (uint64_t)8 << 20;
    c->list_page = p.list_page > 0 ? (int)(p.list_page < 1000 ? p.list_page : 1000) : 1000;
    c->test_fail_part =
        p.test_fail_part > 0 && p.test_fail_part < LS_S3_MAX_PARTS ? (int)p.test_fail_part : 0;
    if (c->part_size < ((uint64_t)5 << 20) || c->part_size > ((uint64_t)5 << 30)) {
        snprintf(err, errlen, "s3 multipart part size must be 5MiB..5GiB");
        goto fail;
    }
    if (c->mp_threshold < c->part_size) c->mp_threshold = c->part_size;
    if (c->mp_threshold > ((uint64_t)5 << 30))
        c->mp_threshold = (uint64_t)5 << 30; /* S3's single-PUT limit */
    ls_free(loc);
    params_free(&p);
    return LS_OK;

fail:
    ls_s3_config_free(c);
    ls_free(loc);
    params_free(&p);
    return LS_EINVAL;
}

void ls_s3_config_free(ls_s3_config_t *c)
{
    ls_free(c->bucket);
    ls_free(c->prefix);
    ls_free(c->scheme_host);
    ls_free(c->host_hdr);
    ls_free(c->path_base);
    ls_free(c->region);
    ls_free(c->access_key);
    if (c->secret_key) {
        memset(c->secret_key, 0, strlen(c->secret_key));
        ls_free(c->secret_key);
    }
    if (c->session_token) {
        memset(c->session_token, 0, strlen(c->session_token));
        ls_free(c->session_token);
    }
    ls_free(c->ca_file);
    memset(c, 0, sizeof *c);
}
