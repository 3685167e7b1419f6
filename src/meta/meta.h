/* ls_meta: the metadata key-value interface (functions over a backend: meta_backend.h).
 *
 * Modeled on etcd v3 so that an etcd backend fits without changing callers:
 *  - keys and values are byte strings; keys sort bytewise;
 *  - a store-wide revision counter increases with every successful write txn;
 *    each key carries create_rev and mod_rev (the revision that last wrote it);
 *    "version" in compare-and-set means mod_rev (0 = key must not exist);
 *  - txn: all compares are checked, then all ops applied atomically, or none
 *    (LS_ECONFLICT). A txn holds at most max_txn_ops compares + ops (etcd: 128);
 *    callers that need more split their work so each unit stays atomic;
 *  - leases: keys may be attached to a lease; when the lease expires or is
 *    revoked those keys are deleted (ephemeral keys);
 *  - watch: a callback receives every change to keys under a prefix after a
 *    given revision, from a backend thread; callers hop to their own thread.
 *
 * Details every backend shares (the etcd backend maps them onto etcd's):
 *  - an empty store is at revision 0; a txn that changes nothing (failed
 *    compare, no ops, only deletes of absent keys) creates no revision and
 *    reports the current one; all changes of one txn share one revision;
 *  - keys are non-empty (a DEL_RANGE start may be empty: from the first key);
 *    a range end that is NULL or has length 0 means "no upper bound", which is
 *    what ls_meta_prefix_end returns for a prefix without one;
 *  - a txn may not write one key twice (two PUTs, or a PUT inside a deleted
 *    key/range): LS_EINVAL, as etcd; more than max_txn_ops compares + ops is
 *    LS_EINVAL too; a PUT naming an unknown or expired lease fails the whole
 *    txn with LS_ENOTFOUND;
 *  - ls_kv_t key and val are NUL-terminated (the extra byte is not counted)
 *    so text values can be parsed in place;
 *  - watch after_rev 0 means "from now"; an after_rev older than the history
 *    the backend retains is LS_ERANGE (rescan, then watch again). A watcher
 *    that falls further behind than that history is told once with
 *    cb(arg, NULL, 0) and gets nothing more: rescan, cancel, watch again.
 *    Events passed to a callback are valid only during the call. After
 *    watch_cancel returns the callback is not running and never runs again;
 *    a callback may cancel its own watch.
 * All calls are blocking and thread-safe; the broker calls them from worker
 * threads, never from the network loop (watch callbacks excepted).
 *
 * Per-backend notes (where a backend departs from the above):
 *  - etcd (meta_etcd.c): revisions are the etcd cluster's, shared by every
 *    prefix, so a new store starts at etcd's current revision (>= 1, not 0)
 *    and other writers to the same etcd advance it too (consecutive txns of
 *    one writer are +1 apart only when nobody else writes). Lease TTLs are
 *    whole seconds, rounded up and raised to etcd's minimum (1.5 x election
 *    timeout: 2 s by default); expiry is noticed within ~0.5 s after that.
 *    Watch history is etcd's (until compaction); the compacted check is a
 *    probe before the stream opens, so a compaction racing it, or one that
 *    overtakes a reconnecting watch, is reported as cb(arg, NULL, 0). A write
 *    whose answer was lost is LS_EIO (maybe applied); LS_EAGAIN means no
 *    endpoint took it. Reverse scans (floor) are sorted by etcd before the
 *    limit applies: they cost O(keys in range).
 *  - postgresql (meta_pg.c): revisions are the database's (shared by every
 *    broker on it). Lease expiry uses the server's clock and is noticed
 *    within ~0.2 s by any broker's backend. Watch history is the newest
 *    100 000 revisions (older after_rev: LS_ERANGE); events reach watchers
 *    within ~0.2 s (NOTIFY, or the next poll). A statement without an answer
 *    in 5 s drops the connection: LS_EAGAIN, or LS_EIO for a COMMIT (maybe
 *    applied). */
#ifndef LS_META_H
#define LS_META_H
#include <stddef.h>
#include <stdint.h>
#include "base/status.h"

typedef struct ls_meta ls_meta_t;

typedef struct ls_kv {
    uint8_t *key;
    size_t klen;
    uint8_t *val;
    size_t vlen;
    int64_t create_rev;
    int64_t mod_rev;
    int64_t lease; /* 0 = none */
} ls_kv_t;

typedef struct ls_kvlist {
    ls_kv_t *v;
    size_t n;
    int more;         /* scan stopped at limit */
    int64_t revision; /* store revision the read observed */
} ls_kvlist_t;

typedef enum {
    LS_META_CMP_MOD_REV, /* key's mod_rev == rev (rev 0: key absent) */
    LS_META_CMP_VALUE,   /* key's value == val */
} ls_meta_cmp_kind;

typedef struct ls_meta_cmp {
    ls_meta_cmp_kind kind;
    const void *key;
    size_t klen;
    int64_t rev;
    const void *val;
    size_t vlen;
} ls_meta_cmp_t;

typedef enum { LS_META_OP_PUT, LS_META_OP_DEL, LS_META_OP_DEL_RANGE } ls_meta_op_kind;

typedef struct ls_meta_op {
    ls_meta_op_kind kind;
    const void *key;
    size_t klen;
    const void *val; /* PUT */
    size_t vlen;
    const void *end; /* DEL_RANGE: [key, end) */
    size_t elen;
    int64_t lease; /* PUT: attach to lease (0 = none) */
} ls_meta_op_t;

typedef enum { LS_META_EV_PUT, LS_META_EV_DEL } ls_meta_ev_kind;
typedef struct ls_meta_event {
    ls_meta_ev_kind kind;
    ls_kv_t kv; /* for DEL: key and mod_rev of the deletion */
} ls_meta_event_t;
/* Called from a backend thread with events in revision order. */
typedef void (*ls_meta_watch_cb)(void *arg, const ls_meta_event_t *ev, size_t n);
typedef struct ls_meta_watch ls_meta_watch_t;

#define LS_META_MAX_TXN_OPS 128 /* etcd's default --max-txn-ops */

/* Error detail is per thread (issue 12 §4): a backend writes the detail of a
 * failed call into the calling thread's buffer, and the caller reads it on
 * the same thread right after the call, so a thread never reports another
 * thread's error. */
const char *ls_meta_error(const ls_meta_t *m); /* the detail of this thread's last failed call */

/* "sqlite:///abs/path.db", "sqlite://rel/path.db", "mem://",
 * "etcd://host:port[,host:port...]/prefix" (meta_etcd.h),
 * "postgresql://user@host:port/db" (meta_pg.h) */
ls_meta_t *ls_meta_open(const char *url, char *err, size_t errlen);
ls_meta_t *ls_meta_sqlite_open(const char *path, char *err, size_t errlen);
ls_meta_t *ls_meta_mem_open(void);

/* The interface (meta.c hands each call to the backend; the backend's table
 * is private to src/meta, meta_backend.h). */
const char *ls_meta_backend_name(const ls_meta_t *m);
int ls_meta_max_txn_ops(const ls_meta_t *m); /* compares + ops one txn may hold */
ls_status ls_meta_get_bytes(ls_meta_t *m, const void *key, size_t klen, ls_kv_t *out);
/* Keys in [start, end) in ascending order (descending if reverse), at most
 * limit (0 = no limit). end NULL = no upper bound. */
ls_status ls_meta_scan(ls_meta_t *m, const void *start, size_t slen, const void *end, size_t elen,
                       size_t limit, int reverse, ls_kvlist_t *out);
/* On success *rev_out (may be NULL) is the revision the txn created. */
ls_status ls_meta_txn(ls_meta_t *m, const ls_meta_cmp_t *cmps, size_t ncmp, const ls_meta_op_t *ops,
                      size_t nops, int64_t *rev_out);
ls_status ls_meta_lease_grant(ls_meta_t *m, int64_t ttl_ms, int64_t *lease_out);
ls_status ls_meta_lease_keepalive(ls_meta_t *m, int64_t lease);
ls_status ls_meta_lease_revoke(ls_meta_t *m, int64_t lease);
ls_status ls_meta_watch(ls_meta_t *m, const void *prefix, size_t plen, int64_t after_rev,
                        ls_meta_watch_cb cb, void *arg, ls_meta_watch_t **out);
void ls_meta_watch_cancel(ls_meta_t *m, ls_meta_watch_t *w);

/* Convenience wrappers (meta.c, on top of the calls above). */
ls_status ls_meta_get(ls_meta_t *m, const char *key, ls_kv_t *out);
/* Floor: greatest key <= key within [lo, key]. Ceiling: least key >= key within [key, hi). */
ls_status ls_meta_floor(ls_meta_t *m, const void *key, size_t klen, const void *lo, size_t lolen,
                        ls_kv_t *out);
ls_status ls_meta_ceiling(ls_meta_t *m, const void *key, size_t klen, const void *hi, size_t hilen,
                          ls_kv_t *out);
ls_status ls_meta_scan_prefix(ls_meta_t *m, const char *prefix, size_t limit, ls_kvlist_t *out);
/* Keys of prefix that are >= from (from starts with prefix), ascending. */
ls_status ls_meta_scan_from(ls_meta_t *m, const char *prefix, const char *from, size_t limit,
                            ls_kvlist_t *out);
ls_status ls_meta_put(ls_meta_t *m, const char *key, const void *val, size_t vlen);
ls_status ls_meta_del(ls_meta_t *m, const char *key); /* absent key: LS_OK */
/* Atomically add delta to a decimal counter key and return the new value
 * (an absent key counts as 0; a non-decimal value is LS_ECORRUPT). */
ls_status ls_meta_counter_add(ls_meta_t *m, const char *key, int64_t delta, int64_t *out);
/* Returns the end of the prefix range: prefix with the last byte incremented
 * (trailing 0xff bytes dropped first). out needs plen bytes. Returns 0 when
 * the prefix has no upper bound (empty or all 0xff): scan with no end. */
size_t ls_meta_prefix_end(const void *prefix, size_t plen, uint8_t *out);

void ls_kv_free(ls_kv_t *kv);
void ls_kvlist_free(ls_kvlist_t *l);
void ls_meta_close(ls_meta_t *m); /* NULL: no-op */

#endif
