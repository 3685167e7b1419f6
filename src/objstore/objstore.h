/* ls_objstore: the object-store interface (a table of function pointers).
 *
 * Backends: fs (local directory, embedded default), mem (unit tests), and later
 * s3 and a fault-injecting wrapper. All calls are blocking and thread-safe:
 * the broker calls them from worker threads, never from the network loop.
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
 * Keys are '/'-separated relative paths of [A-Za-z0-9._/-]. */
#ifndef LS_OBJSTORE_H
#define LS_OBJSTORE_H
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>
#include "base/buf.h"
#include "base/status.h"

enum { LS_OBJSTORE_PUT_CREATE_ONLY = 1 };

typedef struct ls_objstore ls_objstore_t;

typedef struct ls_objinfo {
    char *key;
    uint64_t size;
    int64_t mtime_ms;   /* wall-clock ms of last write */
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
} ls_objstore_ops_t;

struct ls_objstore {
    const ls_objstore_ops_t *ops;
    char errmsg[256];    /* last error detail; per-call detail is also logged */
};

/* Opens a backend from a URL: "file:///abs/dir", "file://rel/dir", "mem://". */
ls_objstore_t *ls_objstore_open(const char *url, int fsync_enabled, char *err, int errlen);
ls_objstore_t *ls_objstore_fs_open(const char *dir, int fsync_enabled, char *err, int errlen);
ls_objstore_t *ls_objstore_mem_open(void);

static inline ls_status ls_objstore_put(ls_objstore_t *os, const char *key, const struct iovec *iov,
                                        int iovcnt, int flags)
{ return os->ops->put(os, key, iov, iovcnt, flags); }
static inline ls_status ls_objstore_get(ls_objstore_t *os, const char *key, uint64_t off,
                                        uint64_t len, ls_buf_t *out)
{ return os->ops->get(os, key, off, len, out); }
static inline ls_status ls_objstore_head(ls_objstore_t *os, const char *key, ls_objinfo_t *info)
{ return os->ops->head(os, key, info); }
static inline ls_status ls_objstore_del(ls_objstore_t *os, const char *key)
{ return os->ops->del(os, key); }
static inline ls_status ls_objstore_list(ls_objstore_t *os, const char *prefix, ls_objinfo_t **out,
                                         size_t *n)
{ return os->ops->list(os, prefix, out, n); }
static inline void ls_objstore_close(ls_objstore_t *os) { if (os) os->ops->close(os); }

void ls_objinfo_free(ls_objinfo_t *v, size_t n);

/* Longest key any backend accepts (S3's limit). */
#define LS_OBJSTORE_KEY_MAX 1024
/* 1 if key is a valid object key: non-empty '/'-separated components of
 * [A-Za-z0-9._-], none empty, "." or "..", at most LS_OBJSTORE_KEY_MAX bytes.
 * Every backend rejects other keys with LS_EINVAL. */
int ls_objstore_key_valid(const char *key);
/* 1 if prefix may be passed to list: "" or the start of a valid key (what
 * precedes its last '/' is a valid key). Backends reject others with LS_EINVAL. */
int ls_objstore_prefix_valid(const char *prefix);
#endif
