/* The backend side of ls_meta (meta.h): the table of functions each backend
 * (meta_mem.c, meta_sqlite.c, meta_etcd.c, meta_faulty.c) fills, and helpers
 * they share. Only src/meta includes this; everything else calls meta.h's
 * functions, so the interface can gain checks, counters or tracing in one
 * place (as ls_objstore's). */
#ifndef LS_META_BACKEND_H
#define LS_META_BACKEND_H
#include "meta/meta.h"

typedef struct ls_meta_ops {
    const char *name;
    int max_txn_ops;
    /* One per call of meta.h's interface, with its meaning. */
    ls_status (*get)(ls_meta_t *m, const void *key, size_t klen, ls_kv_t *out);
    ls_status (*scan)(ls_meta_t *m, const void *start, size_t slen, const void *end, size_t elen,
                      size_t limit, int reverse, ls_kvlist_t *out);
    ls_status (*txn)(ls_meta_t *m, const ls_meta_cmp_t *cmps, size_t ncmp, const ls_meta_op_t *ops,
                     size_t nops, int64_t *rev_out);
    ls_status (*lease_grant)(ls_meta_t *m, int64_t ttl_ms, int64_t *lease_out);
    ls_status (*lease_keepalive)(ls_meta_t *m, int64_t lease);
    ls_status (*lease_revoke)(ls_meta_t *m, int64_t lease);
    ls_status (*watch)(ls_meta_t *m, const void *prefix, size_t plen, int64_t after_rev,
                       ls_meta_watch_cb cb, void *arg, ls_meta_watch_t **out);
    void (*watch_cancel)(ls_meta_t *m, ls_meta_watch_t *w);
    void (*close)(ls_meta_t *m);
} ls_meta_ops_t;

struct ls_meta {
    const ls_meta_ops_t *ops;
};

/* Error detail is per thread: a backend writes the detail of a failed call
 * into this buffer of the calling thread (ls_meta_error reads it). */
#define LS_META_ERRMSG_CAP 256
char *ls_meta_errbuf(void);

/* Fills kv with NUL-terminated copies of key and val; revisions zeroed. */
void ls_kv_set(ls_kv_t *kv, const void *key, size_t klen, const void *val, size_t vlen);
/* Bytewise key order (memcmp, then shorter first), as etcd and SQLite BLOBs. */
int ls_meta_key_cmp(const void *a, size_t alen, const void *b, size_t blen);
/* Checks the shared txn rules above; LS_EINVAL with m->errmsg set. */
ls_status ls_meta_txn_validate(ls_meta_t *m, const ls_meta_cmp_t *cmps, size_t ncmp,
                               const ls_meta_op_t *ops, size_t nops);

/* Watch hub: in-process fan-out for single-process backends (mem, sqlite).
 * The backend publishes each revision's events in revision order (under its
 * write lock); a notifier thread owned by the hub delivers them to watchers.
 * The hub retains up to history_bytes of recent events for late watchers and
 * laggards. */
#define LS_META_HUB_HISTORY_BYTES (8u << 20)
typedef struct ls_meta_hub ls_meta_hub_t;
ls_meta_hub_t *ls_meta_hub_new(int64_t rev, size_t history_bytes);
/* Takes ownership of ev[0..n) (and the array, ls_malloc'd). */
void ls_meta_hub_publish(ls_meta_hub_t *h, int64_t rev, ls_meta_event_t *ev, size_t n);
ls_status ls_meta_hub_watch(ls_meta_hub_t *h, const void *prefix, size_t plen, int64_t after_rev,
                            ls_meta_watch_cb cb, void *arg, ls_meta_watch_t **out);
void ls_meta_hub_cancel(ls_meta_hub_t *h, ls_meta_watch_t *w);
/* Stops the notifier; watchers still registered are freed (cancel them first). */
void ls_meta_hub_free(ls_meta_hub_t *h);
#endif
