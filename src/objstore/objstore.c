/* ls_objstore: URL dispatch and helpers shared by every backend.
 *
 * URLs: "file:///abs/dir" (absolute), "file://rel/dir" (relative to the
 * working directory), "mem://" (in-memory, unit tests), "s3://bucket/prefix"
 * (objstore_s3.c), "faulty+<url>?..." (objstore_faulty.c). Stateless. */
#include "objstore/objstore.h"

#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/config.h"
#include "base/metrics.h"

void ls_objstore_opts_init(ls_objstore_opts_t *o)
{
    memset(o, 0, sizeof *o);
    o->fsync_enabled = 1;
    o->s3_tls_verify = -1;
    o->s3_unsigned_payload = -1;
    o->s3_request_timeout_ms = o->s3_connect_timeout_ms = o->s3_max_connections = -1;
    o->s3_max_retries = o->s3_retry_backoff_ms = o->s3_retry_backoff_max_ms = -1;
    o->s3_multipart_threshold = o->s3_multipart_part_size = -1;
}

void ls_objstore_opts_from_config(ls_objstore_opts_t *o, const ls_config_t *cfg)
{
    ls_objstore_opts_init(o);
    o->fsync_enabled = cfg->object_store_fsync;
    o->s3_endpoint = cfg->s3_endpoint;
    o->s3_region = cfg->s3_region;
    o->s3_access_key = cfg->s3_access_key;
    o->s3_secret_key = cfg->s3_secret_key;
    o->s3_session_token = cfg->s3_session_token;
    o->s3_path_style = cfg->s3_path_style;
    o->s3_create_only = cfg->s3_create_only;
    o->s3_ca_file = cfg->s3_ca_file;
    o->s3_tls_verify = cfg->s3_tls_verify;
    o->s3_unsigned_payload = cfg->s3_unsigned_payload;
    o->s3_request_timeout_ms = cfg->s3_request_timeout_ms;
    o->s3_connect_timeout_ms = cfg->s3_connect_timeout_ms;
    o->s3_max_connections = cfg->s3_max_connections;
    o->s3_max_retries = cfg->s3_max_retries;
    o->s3_retry_backoff_ms = cfg->s3_retry_backoff_ms;
    o->s3_retry_backoff_max_ms = cfg->s3_retry_backoff_max_ms;
    o->s3_multipart_threshold = cfg->s3_multipart_threshold;
    o->s3_multipart_part_size = cfg->s3_multipart_part_size;
}

ls_objstore_t *ls_objstore_open(const char *url, int fsync_enabled, char *err, size_t errlen)
{
    ls_objstore_opts_t o;
    ls_objstore_opts_init(&o);
    o.fsync_enabled = fsync_enabled;
    return ls_objstore_open_opts(url, &o, err, errlen);
}

ls_objstore_t *ls_objstore_open_opts(const char *url, const ls_objstore_opts_t *o, char *err,
                                     size_t errlen)
{
    int fsync_enabled = o->fsync_enabled;
    if (!err || errlen == 0)
        err = NULL, errlen = 0;
    else
        err[0] = 0;
    if (!url) {
        if (err) snprintf(err, errlen, "object store URL is missing");
        return NULL;
    }
    if (strcmp(url, "mem://") == 0) return ls_objstore_mem_open();
    if (strncmp(url, "s3://", 5) == 0) return ls_objstore_s3_open(url, o, err, errlen);
    if (strncmp(url, "faulty+", 7) == 0) return ls_objstore_faulty_open(url, o, err, errlen);
    if (strncmp(url, "file://", 7) == 0) {
        const char *path = url + 7; /* "file:///abs" leaves "/abs" */
        if (!*path) {
            if (err) snprintf(err, errlen, "object store URL '%s' names no directory", url);
            return NULL;
        }
        return ls_objstore_fs_open(path, fsync_enabled, err, errlen);
    }
    if (err)
        snprintf(err, errlen,
                 "unsupported object store URL '%s' (expected file:///abs/dir, file://rel/dir, "
                 "s3://bucket/prefix, faulty+<url> or mem://)",
                 url);
    return NULL;
}

static const char *const op_names[LS_OBJSTORE_NOPS] = {"put",         "get",  "head", "delete",
                                                       "delete_many", "list", "map",  "copy"};
static LS_METRIC_HISTOGRAM(m_op_seconds, "lakestream_object_store_operation_duration_seconds",
                           "Object-store calls by operation (its _count is the number of calls; "
                           "an S3 call's retries are inside it).",
                           ls_metrics_latency_bounds, "operation");
static LS_METRIC_COUNTER(m_op_errors, "lakestream_object_store_errors",
                         "Object-store calls that failed, by operation.", "operation");

int64_t ls_objstore_op_begin(void) { return ls_clock_mono_us(); }

ls_status ls_objstore_op_end(ls_objstore_op op, ls_status st, int64_t start)
{
    ls_metric_observe(ls_metrics_series1(&m_op_seconds, op_names[op]),
                      (double)(ls_clock_mono_us() - start) / 1e6);
    if (st != LS_OK && st != LS_ENOTFOUND && st != LS_EEXISTS)
        ls_metric_add(ls_metrics_series1(&m_op_errors, op_names[op]), 1);
    return st;
}

ls_status ls_objstore_get_chunk(ls_objstore_t *os, const char *key, uint64_t off, uint64_t len,
                                ls_bufpool_t *pool, ls_chunk_t **out)
{
    *out = NULL;
    if (os->ops->get_chunk) {
        int64_t t = ls_objstore_op_begin();
        return ls_objstore_op_end(LS_OBJSTORE_OP_GET, os->ops->get_chunk(os, key, off, len, out),
                                  t);
    }
    ls_buf_t b;
    if (pool && len != UINT64_MAX)
        ls_bufpool_take(pool, &b, (size_t)len);
    else
        ls_buf_init(&b);
    ls_status st = ls_objstore_get(os, key, off, len, &b);
    if (st != LS_OK) {
        ls_buf_free(&b);
        return st;
    }
    if (pool) {
        *out = ls_bufpool_chunk(pool, &b);
    } else {
        size_t n = b.len;
        *out = ls_chunk_adopt(ls_buf_steal(&b, NULL), n);
    }
    return LS_OK;
}

ls_status ls_objstore_copy(ls_objstore_t *os, const char *src, const char *dst)
{
    if (os->ops->copy) {
        int64_t t = ls_objstore_op_begin();
        return ls_objstore_op_end(LS_OBJSTORE_OP_COPY, os->ops->copy(os, src, dst), t);
    }
    ls_buf_t b;
    ls_buf_init(&b);
    ls_status st = ls_objstore_get(os, src, 0, UINT64_MAX, &b);
    if (st == LS_OK) {
        struct iovec iov = {b.data, b.len};
        st = ls_objstore_put(os, dst, &iov, 1, 0);
    }
    ls_buf_free(&b);
    return st;
}

void ls_objinfo_free(ls_objinfo_t *v, size_t n)
{
    if (!v) return;
    for (size_t i = 0; i < n; i++)
        ls_free(v[i].key);
    ls_free(v);
}

static int objstore_key_char(char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           ch == '.' || ch == '_' || ch == '-';
}

/* Any byte of a name but the separator and control characters: what other
 * writers (engines writing into a table's location) may put in a key. */
static int foreign_key_char(char ch)
{
    unsigned char c = (unsigned char)ch;
    return c >= 0x20 && c != 0x7f;
}

/* A relative path of non-empty components of chars allowed by ok, none of
 * them "." or "..", at most LS_OBJSTORE_KEY_MAX bytes. */
static int key_of_chars(const char *key, int (*ok)(char))
{
    if (!key || !*key) return 0;
    size_t len = strlen(key);
    if (len > LS_OBJSTORE_KEY_MAX) return 0;
    const char *comp = key;
    for (const char *p = key;; p++) {
        char ch = *p;
        if (ch == '/' || ch == 0) {
            size_t clen = (size_t)(p - comp);
            if (clen == 0) return 0;
            if ((clen == 1 && comp[0] == '.') || (clen == 2 && comp[0] == '.' && comp[1] == '.'))
                return 0;
            if (ch == 0) return 1;
            comp = p + 1;
            continue;
        }
        if (!ok(ch)) return 0;
    }
}

/* The keys the broker writes: [A-Za-z0-9._-] components map 1:1 onto a file
 * path under the fs root and onto an S3 key without escaping. */
int ls_objstore_key_valid(const char *key) { return key_of_chars(key, objstore_key_char); }

int ls_objstore_key_readable(const char *key) { return key_of_chars(key, foreign_key_char); }

int ls_objstore_prefix_valid(const char *prefix)
{
    if (!prefix) return 0;
    size_t len = strlen(prefix);
    if (len > LS_OBJSTORE_KEY_MAX) return 0;
    const char *slash = strrchr(prefix, '/');
    const char *tail = slash ? slash + 1 : prefix;
    for (const char *p = tail; *p; p++)
        if (!objstore_key_char(*p)) return 0;
    if (!slash) return 1;
    char dir[LS_OBJSTORE_KEY_MAX + 1];
    memcpy(dir, prefix, (size_t)(slash - prefix));
    dir[slash - prefix] = 0;
    return ls_objstore_key_valid(dir);
}

static _Thread_local char objstore_err[LS_OBJSTORE_ERRMSG_CAP];

char *ls_objstore_errbuf(void) { return objstore_err; }

const char *ls_objstore_error(const ls_objstore_t *os)
{
    (void)os;
    return objstore_err;
}
