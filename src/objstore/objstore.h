/* ls_objstore: the object-store interface (a table of function pointers).
 *
 * Backends: fs (local directory, embedded default), mem (unit tests), s3
 * (any S3-compatible store) and faulty (a fault-injecting wrapper). All calls
 * are blocking and thread-safe: the broker calls them from worker threads,
 * never from the network loop.
 *
 * Semantics every backend provides:
 *  - put is atomic: a reader sees the whole object or nothing, never a prefix.
 *    When it returns LS_OK the object is durable (fs: file fsynced, renamed,
 *    directory fsynced, unless fsync is disabled by configuration).
 *  - LS_OBJSTORE_PUT_CREATE_ONLY fails with LS_EEXISTS if the key exists.
 *  - get with len = UINT64_MAX reads to the end; a range past the end is
 *    clamped; a missing key is LS_ENOTFOUND. get replaces the contents of
 *    *out (an initialized ls_buf_t; its capacity is reused).
 *  - list returns keys under a prefix in lexicographic order.
 *  - del of a missing key is LS_OK (idempotent).
 * Keys written are '/'-separated relative paths of [A-Za-z0-9._/-]; keys
 * read, listed and deleted may also be other writers' (ls_objstore_key_readable). */
#ifndef LS_OBJSTORE_H
#define LS_OBJSTORE_H
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>
#include "base/buf.h"
#include "base/chunk.h"
#include "base/status.h"

enum { LS_OBJSTORE_PUT_CREATE_ONLY = 1 };

typedef struct ls_objstore ls_objstore_t;

typedef struct ls_objinfo {
    char *key;
    uint64_t size;
    int64_t mtime_ms; /* wall-clock ms of last write */
} ls_objinfo_t;

typedef struct ls_objstore_ops {
    const char *name;
    ls_status (*put)(ls_objstore_t *os, const char *key, const struct iovec *iov, int iovcnt,
                     int flags);
    ls_status (*get)(ls_objstore_t *os, const char *key, uint64_t off, uint64_t len, ls_buf_t *out);
    /* Fills info->size and info->mtime_ms; info->key is set to NULL. */
    ls_status (*head)(ls_objstore_t *os, const char *key, ls_objinfo_t *info);
    ls_status (*del)(ls_objstore_t *os, const char *key);
    /* Fills *out with an ls_malloc'd array of *n entries (free with ls_objinfo_free). */
    ls_status (*list)(ls_objstore_t *os, const char *prefix, ls_objinfo_t **out, size_t *n);
    void (*close)(ls_objstore_t *os);
    /* Optional (NULL: ls_objstore_del_many loops over del). Deletes n keys,
     * missing ones included, in as few requests as the store allows. */
    ls_status (*del_many)(ls_objstore_t *os, const char *const *keys, size_t n);
    /* Optional (NULL: ls_objstore_get_chunk reads through get). Like get,
     * but the bytes come as a chunk that may be a private (copy-on-write)
     * mapping of the object's file (fs): a reader that keeps them (the read
     * cache) then holds page-cache pages rather than a private copy, and
     * nothing is copied to get them. A range past the end is clamped. */
    ls_status (*get_chunk)(ls_objstore_t *os, const char *key, uint64_t off, uint64_t len,
                           ls_chunk_t **out);
    /* Optional (NULL: not offered). The whole object as a read-only private
     * mapping of its file whose pages the kernel reads when first touched
     * (fs): for a reader that touches a small part of a large object it
     * keeps open. Objects are never rewritten in place, so the bytes stay
     * those of the object (a deleted object's file lives on while mapped). */
    ls_status (*map)(ls_objstore_t *os, const char *key, ls_chunk_t **out);
    /* Optional (NULL: ls_objstore_copy reads and puts). Makes dst hold the
     * bytes of src, as put without flags would, without them passing
     * through the caller: a hard link (fs), a server-side CopyObject (s3). */
    ls_status (*copy)(ls_objstore_t *os, const char *src, const char *dst);
} ls_objstore_ops_t;

struct ls_objstore {
    const ls_objstore_ops_t *ops;
};

/* Error detail is per thread, as for ls_meta (meta.h): the calling thread's
 * buffer holds the detail of its last failed call; backends also log it. */
#define LS_OBJSTORE_ERRMSG_CAP 256
char *ls_objstore_errbuf(void);
const char *ls_objstore_error(const ls_objstore_t *os);

/* Opens a backend from a URL: "file:///abs/dir", "file://rel/dir", "mem://",
 * "s3://bucket[/prefix][?opt=v&...]" (objstore_s3.c), or "faulty+<url>?..."
 * (objstore_faulty.c). S3 settings and credentials not in the URL come from
 * the environment (AWS_*); ls_objstore_open_opts takes them from config. */
ls_objstore_t *ls_objstore_open(const char *url, int fsync_enabled, char *err, size_t errlen);

/* Backend settings beyond the URL. NULL strings / negative numbers mean
 * "not set": the backend falls back to the environment, then its default. */
typedef struct ls_objstore_opts {
    int fsync_enabled;
    const char *s3_endpoint;      /* http(s)://host[:port]; default AWS for the region */
    const char *s3_region;        /* default $AWS_REGION, $AWS_DEFAULT_REGION, us-east-1 */
    const char *s3_access_key;    /* default $AWS_ACCESS_KEY_ID */
    const char *s3_secret_key;    /* default $AWS_SECRET_ACCESS_KEY */
    const char *s3_session_token; /* default $AWS_SESSION_TOKEN */
    const char *s3_path_style;    /* auto | true | false */
    const char *s3_create_only;   /* auto | true | false */
    const char *s3_ca_file;       /* CA bundle for TLS verification */
    int s3_tls_verify;            /* 1 (default) or 0 */
    int s3_unsigned_payload;      /* 1: sign UNSIGNED-PAYLOAD instead of hashing bodies */
    int64_t s3_request_timeout_ms;
    int64_t s3_connect_timeout_ms;
    int64_t s3_max_connections;
    int64_t s3_max_retries;
    int64_t s3_retry_backoff_ms;
    int64_t s3_retry_backoff_max_ms;
    int64_t s3_multipart_threshold;
    int64_t s3_multipart_part_size;
} ls_objstore_opts_t;

void ls_objstore_opts_init(ls_objstore_opts_t *o); /* everything "not set", fsync on */
/* Options from the broker configuration (object.store.fsync, s3.*). The
 * strings point into cfg, which must outlive the open call. */
struct ls_config;
void ls_objstore_opts_from_config(ls_objstore_opts_t *o, const struct ls_config *cfg);
ls_objstore_t *ls_objstore_open_opts(const char *url, const ls_objstore_opts_t *o, char *err,
                                     size_t errlen);
ls_objstore_t *ls_objstore_s3_open(const char *url, const ls_objstore_opts_t *o, char *err,
                                   size_t errlen);
ls_objstore_t *ls_objstore_faulty_open(const char *url, const ls_objstore_opts_t *o, char *err,
                                       size_t errlen);
ls_objstore_t *ls_objstore_fs_open(const char *dir, int fsync_enabled, char *err, size_t errlen);
ls_objstore_t *ls_objstore_mem_open(void);

/* Metrics (docs/OPERATIONS.md "Metrics"): every call below is counted per
 * operation with its latency and, when it failed (a missing key or an
 * existing one for a create-only put is an answer, not a failure), as an
 * error; atomic adds, any thread. */
typedef enum {
    LS_OBJSTORE_OP_PUT,
    LS_OBJSTORE_OP_GET,
    LS_OBJSTORE_OP_HEAD,
    LS_OBJSTORE_OP_DELETE,
    LS_OBJSTORE_OP_DELETE_MANY,
    LS_OBJSTORE_OP_LIST,
    LS_OBJSTORE_OP_MAP,
    LS_OBJSTORE_OP_COPY,
    LS_OBJSTORE_NOPS
} ls_objstore_op;
int64_t ls_objstore_op_begin(void);
ls_status ls_objstore_op_end(ls_objstore_op op, ls_status st, int64_t start);

static inline ls_status ls_objstore_put(ls_objstore_t *os, const char *key, const struct iovec *iov,
                                        int iovcnt, int flags)
{
    int64_t t = ls_objstore_op_begin();
    return ls_objstore_op_end(LS_OBJSTORE_OP_PUT, os->ops->put(os, key, iov, iovcnt, flags), t);
}
static inline ls_status ls_objstore_get(ls_objstore_t *os, const char *key, uint64_t off,
                                        uint64_t len, ls_buf_t *out)
{
    int64_t t = ls_objstore_op_begin();
    return ls_objstore_op_end(LS_OBJSTORE_OP_GET, os->ops->get(os, key, off, len, out), t);
}
/* A range as a chunk (refcnt 1 in *out on LS_OK): the backend's get_chunk
 * when it has one, else get into a buffer from pool (NULL: a new one). */
ls_status ls_objstore_get_chunk(ls_objstore_t *os, const char *key, uint64_t off, uint64_t len,
                                ls_bufpool_t *pool, ls_chunk_t **out);
/* The whole object mapped (ops->map); LS_EINVAL when the store offers no
 * mapping (read it with get or get_chunk instead). */
static inline ls_status ls_objstore_map(ls_objstore_t *os, const char *key, ls_chunk_t **out)
{
    *out = NULL;
    if (!os->ops->map) return LS_EINVAL;
    int64_t t = ls_objstore_op_begin();
    return ls_objstore_op_end(LS_OBJSTORE_OP_MAP, os->ops->map(os, key, out), t);
}
static inline ls_status ls_objstore_head(ls_objstore_t *os, const char *key, ls_objinfo_t *info)
{
    int64_t t = ls_objstore_op_begin();
    return ls_objstore_op_end(LS_OBJSTORE_OP_HEAD, os->ops->head(os, key, info), t);
}
static inline ls_status ls_objstore_del(ls_objstore_t *os, const char *key)
{
    int64_t t = ls_objstore_op_begin();
    return ls_objstore_op_end(LS_OBJSTORE_OP_DELETE, os->ops->del(os, key), t);
}
static inline ls_status ls_objstore_list(ls_objstore_t *os, const char *prefix, ls_objinfo_t **out,
                                         size_t *n)
{
    int64_t t = ls_objstore_op_begin();
    return ls_objstore_op_end(LS_OBJSTORE_OP_LIST, os->ops->list(os, prefix, out, n), t);
}
static inline void ls_objstore_close(ls_objstore_t *os)
{
    if (os) os->ops->close(os);
}
static inline ls_status ls_objstore_del_many(ls_objstore_t *os, const char *const *keys, size_t n)
{
    if (os->ops->del_many) {
        int64_t t = ls_objstore_op_begin();
        return ls_objstore_op_end(LS_OBJSTORE_OP_DELETE_MANY, os->ops->del_many(os, keys, n), t);
    }
    for (size_t i = 0; i < n; i++) {
        ls_status st = ls_objstore_del(os, keys[i]);
        if (st != LS_OK) return st;
    }
    return LS_OK;
}

void ls_objinfo_free(ls_objinfo_t *v, size_t n);
/* dst (replaced if it exists) gets src's bytes: ops->copy when the store
 * has one (no bytes written), else a get and a put. LS_ENOTFOUND when src
 * is missing. */
ls_status ls_objstore_copy(ls_objstore_t *os, const char *src, const char *dst);
/* Whether the store copies without the bytes passing through (ops->copy). */
static inline int ls_objstore_copies(const ls_objstore_t *os) { return os->ops->copy != NULL; }

/* Longest key any backend accepts (S3's limit). */
#define LS_OBJSTORE_KEY_MAX 1024
/* 1 if key is a valid object key: non-empty '/'-separated components of
 * [A-Za-z0-9._-], none empty, "." or "..", at most LS_OBJSTORE_KEY_MAX bytes.
 * Every backend rejects other keys with LS_EINVAL. */
int ls_objstore_key_valid(const char *key);
/* 1 if key may be read, listed, stat'ed or deleted: a valid key, or one
 * another writer made (an engine writing data/<col>=<value>/... into a
 * table's location): the same components of any bytes but '/' and control
 * characters. Listings return such keys, so a sweep of a prefix sees
 * everything under it; put accepts only valid keys. */
int ls_objstore_key_readable(const char *key);
/* 1 if prefix may be passed to list: "" or the start of a valid key (what
 * precedes its last '/' is a valid key). Backends reject others with LS_EINVAL. */
int ls_objstore_prefix_valid(const char *prefix);
#endif
