/* ls_meta: URL dispatch, convenience wrappers over the ops, helpers shared by
 * the backends, and the watch hub.
 *
 * Watch hub design (used by the single-process backends mem and sqlite):
 *  - The backend calls ls_meta_hub_publish() once per revision, in revision
 *    order, while still holding its write lock; publish only appends to the
 *    history ring and signals, so it never blocks on a watcher.
 *  - ring[] holds refcounted batches (one per revision, ascending rev), at
 *    most max_bytes of them (the newest batch is always kept). Evicting a
 *    batch that some watcher has not been given yet marks that watcher
 *    compacted; it then receives cb(arg, NULL, 0) once and nothing more.
 *  - compacted_rev is the newest revision no longer retained: a watch with
 *    after_rev < compacted_rev cannot be served (LS_ERANGE).
 *  - One notifier thread per hub delivers: it picks the ready watcher with the
 *    oldest cursor, takes a ref on the next batch, drops the hub lock, calls
 *    the callback with the batch's events under the watcher's prefix, then
 *    retakes the lock. So callbacks run on the notifier only, never
 *    concurrently, and each watcher sees revisions in ascending order.
 *    Callbacks may call any meta op (the notifier holds no lock meanwhile).
 *  - Cancel from another thread waits until the watcher's callback is not
 *    running, then frees it; cancel from inside the callback marks it orphan
 *    and the notifier frees it when the callback returns.
 * Lock order: backend lock -> hub lock. The hub lock guards everything in
 * ls_meta_hub and ls_meta_watch (including batch refcounts). */
#include "meta/meta_backend.h"
#include "meta/meta_etcd.h"
#include "meta/meta_pg.h"
#include "meta/meta_faulty.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/check.h"
#include "base/clock.h"
#include "base/diag.h"
#include "base/metrics.h"
#include "base/thread.h"

ls_meta_t *ls_meta_open(const char *url, char *err, size_t errlen)
{
    char eb[128];
    if (!err || errlen == 0) err = eb, errlen = sizeof eb;
    err[0] = 0;
    if (!url) {
        snprintf(err, errlen, "metadata URL is missing");
        return NULL;
    }
    if (strcmp(url, "mem://") == 0) return ls_meta_mem_open();
    if (strncmp(url, "faulty+", 7) == 0) return ls_meta_faulty_open(url, err, errlen);
    if (strncmp(url, "sqlite://", 9) == 0) {
        const char *path = url + 9; /* "sqlite:///abs" leaves "/abs" */
        if (!*path) {
            snprintf(err, errlen, "metadata URL '%s' names no file", url);
            return NULL;
        }
        return ls_meta_sqlite_open(path, err, errlen);
    }
    if (strncmp(url, "etcd://", 7) == 0) return ls_meta_etcd_open(url, err, errlen);
    if (strncmp(url, "postgresql://", 13) == 0 || strncmp(url, "postgres://", 11) == 0)
        return ls_meta_pg_open(url, err, errlen);
    snprintf(err, errlen,
             "unsupported metadata URL '%s' (expected sqlite:///abs/path.db, "
             "sqlite://rel/path.db, etcd://host:port[,host:port...]/prefix, "
             "postgresql://user@host:port/database, faulty+<url> or mem://)",
             url);
    return NULL;
}

/* ---- metrics (docs/OPERATIONS.md "Metrics"): every call to the backend,
 * timed, per operation; a missing key or a failed compare is an answer,
 * not an error ---- */

static LS_METRIC_HISTOGRAM(m_op_seconds, "lakestream_metadata_store_operation_duration_seconds",
                           "Metadata-store calls by operation (its _count is the number of "
                           "calls).",
                           ls_metrics_latency_bounds, "operation");
static LS_METRIC_COUNTER(m_op_errors, "lakestream_metadata_store_errors",
                         "Metadata-store calls that failed, by operation.", "operation");

static ls_status timed(const char *op, ls_status st, int64_t start)
{
    ls_metric_observe(ls_metrics_series1(&m_op_seconds, op),
                      (double)(ls_clock_mono_us() - start) / 1e6);
    if (st != LS_OK && st != LS_ENOTFOUND && st != LS_ECONFLICT)
        ls_metric_add(ls_metrics_series1(&m_op_errors, op), 1);
    return st;
}

static ls_status timed_get(ls_meta_t *m, const void *key, size_t klen, ls_kv_t *out)
{
    int64_t t = ls_clock_mono_us();
    return timed("get", m->ops->get(m, key, klen, out), t);
}

static ls_status timed_scan(ls_meta_t *m, const void *start, size_t slen, const void *end,
                            size_t elen, size_t limit, int reverse, ls_kvlist_t *out)
{
    int64_t t = ls_clock_mono_us();
    return timed("scan", m->ops->scan(m, start, slen, end, elen, limit, reverse, out), t);
}

static ls_status timed_txn(ls_meta_t *m, const ls_meta_cmp_t *cmps, size_t ncmp,
                           const ls_meta_op_t *ops, size_t nops, int64_t *rev_out)
{
    int64_t t = ls_clock_mono_us();
    return timed("txn", m->ops->txn(m, cmps, ncmp, ops, nops, rev_out), t);
}

static ls_status timed_lease_grant(ls_meta_t *m, int64_t ttl_ms, int64_t *lease_out)
{
    int64_t t = ls_clock_mono_us();
    return timed("lease_grant", m->ops->lease_grant(m, ttl_ms, lease_out), t);
}

static ls_status timed_lease_keepalive(ls_meta_t *m, int64_t lease)
{
    int64_t t = ls_clock_mono_us();
    return timed("lease_keepalive", m->ops->lease_keepalive(m, lease), t);
}

static ls_status timed_lease_revoke(ls_meta_t *m, int64_t lease)
{
    int64_t t = ls_clock_mono_us();
    return timed("lease_revoke", m->ops->lease_revoke(m, lease), t);
}

/* ---- the interface: each call handed to the backend ---- */

const char *ls_meta_backend_name(const ls_meta_t *m) { return m->ops->name; }
int ls_meta_max_txn_ops(const ls_meta_t *m) { return m->ops->max_txn_ops; }

ls_status ls_meta_get_bytes(ls_meta_t *m, const void *key, size_t klen, ls_kv_t *out)
{
    return timed_get(m, key, klen, out);
}

ls_status ls_meta_scan(ls_meta_t *m, const void *start, size_t slen, const void *end, size_t elen,
                       size_t limit, int reverse, ls_kvlist_t *out)
{
    return timed_scan(m, start, slen, end, elen, limit, reverse, out);
}

ls_status ls_meta_txn(ls_meta_t *m, const ls_meta_cmp_t *cmps, size_t ncmp, const ls_meta_op_t *ops,
                      size_t nops, int64_t *rev_out)
{
    return timed_txn(m, cmps, ncmp, ops, nops, rev_out);
}

ls_status ls_meta_lease_grant(ls_meta_t *m, int64_t ttl_ms, int64_t *lease_out)
{
    return timed_lease_grant(m, ttl_ms, lease_out);
}

ls_status ls_meta_lease_keepalive(ls_meta_t *m, int64_t lease)
{
    return timed_lease_keepalive(m, lease);
}

ls_status ls_meta_lease_revoke(ls_meta_t *m, int64_t lease) { return timed_lease_revoke(m, lease); }

ls_status ls_meta_watch(ls_meta_t *m, const void *prefix, size_t plen, int64_t after_rev,
                        ls_meta_watch_cb cb, void *arg, ls_meta_watch_t **out)
{
    return m->ops->watch(m, prefix, plen, after_rev, cb, arg, out);
}

void ls_meta_watch_cancel(ls_meta_t *m, ls_meta_watch_t *w) { m->ops->watch_cancel(m, w); }

void ls_meta_close(ls_meta_t *m)
{
    if (m) m->ops->close(m);
}

/* ---- convenience wrappers ---- */

ls_status ls_meta_get(ls_meta_t *m, const char *key, ls_kv_t *out)
{
    return timed_get(m, key, strlen(key), out);
}

static ls_status meta_first(ls_meta_t *m, const void *start, size_t slen, const void *end,
                            size_t elen, int reverse, ls_kv_t *out)
{
    ls_kvlist_t l;
    ls_status st = timed_scan(m, start, slen, end, elen, 1, reverse, &l);
    if (st != LS_OK) return st;
    if (l.n == 0) {
        ls_kvlist_free(&l);
        return LS_ENOTFOUND;
    }
    *out = l.v[0];
    ls_free(l.v);
    return LS_OK;
}

ls_status ls_meta_floor(ls_meta_t *m, const void *key, size_t klen, const void *lo, size_t lolen,
                        ls_kv_t *out)
{
    /* [lo, key] == [lo, key "\0"): the least key greater than key is key+"\0" */
    uint8_t stackbuf[256];
    uint8_t *end = klen + 1 <= sizeof stackbuf ? stackbuf : ls_malloc(klen + 1);
    memcpy(end, key, klen);
    end[klen] = 0;
    ls_status st = meta_first(m, lo ? lo : "", lo ? lolen : 0, end, klen + 1, 1, out);
    if (end != stackbuf) ls_free(end);
    return st;
}

ls_status ls_meta_ceiling(ls_meta_t *m, const void *key, size_t klen, const void *hi, size_t hilen,
                          ls_kv_t *out)
{
    return meta_first(m, key, klen, hi, hi ? hilen : 0, 0, out);
}

ls_status ls_meta_scan_prefix(ls_meta_t *m, const char *prefix, size_t limit, ls_kvlist_t *out)
{
    return ls_meta_scan_from(m, prefix, prefix, limit, out);
}

ls_status ls_meta_scan_from(ls_meta_t *m, const char *prefix, const char *from, size_t limit,
                            ls_kvlist_t *out)
{
    size_t plen = strlen(prefix);
    uint8_t stackbuf[256];
    uint8_t *end = plen <= sizeof stackbuf ? stackbuf : ls_malloc(plen);
    size_t elen = ls_meta_prefix_end(prefix, plen, end);
    ls_status st = timed_scan(m, from, strlen(from), elen ? end : NULL, elen, limit, 0, out);
    if (end != stackbuf) ls_free(end);
    return st;
}

ls_status ls_meta_put(ls_meta_t *m, const char *key, const void *val, size_t vlen)
{
    ls_meta_op_t op = {
        .kind = LS_META_OP_PUT, .key = key, .klen = strlen(key), .val = val, .vlen = vlen};
    return timed_txn(m, NULL, 0, &op, 1, NULL);
}

ls_status ls_meta_del(ls_meta_t *m, const char *key)
{
    ls_meta_op_t op = {.kind = LS_META_OP_DEL, .key = key, .klen = strlen(key)};
    return timed_txn(m, NULL, 0, &op, 1, NULL);
}

#define META_COUNTER_RETRIES 1000

ls_status ls_meta_counter_add(ls_meta_t *m, const char *key, int64_t delta, int64_t *out)
{
    size_t klen = strlen(key);
    for (int attempt = 0; attempt < META_COUNTER_RETRIES; attempt++) {
        ls_kv_t kv;
        int64_t cur = 0, mod_rev = 0;
        ls_status st = timed_get(m, key, klen, &kv);
        if (st == LS_OK) {
            char *end;
            errno = 0;
            long long v = strtoll((const char *)kv.val, &end, 10);
            int bad = kv.vlen == 0 || errno != 0 || end != (const char *)kv.val + kv.vlen;
            mod_rev = kv.mod_rev;
            ls_kv_free(&kv);
            if (bad) {
                snprintf(ls_meta_errbuf(), LS_META_ERRMSG_CAP,
                         "counter %s holds a non-decimal value", key);
                LS_ERROR("meta", "%s", ls_meta_errbuf());
                return LS_ECORRUPT;
            }
            cur = v;
        } else if (st != LS_ENOTFOUND) {
            return st;
        }
        if ((delta > 0 && cur > INT64_MAX - delta) || (delta < 0 && cur < INT64_MIN - delta)) {
            snprintf(ls_meta_errbuf(), LS_META_ERRMSG_CAP, "counter %s would overflow", key);
            return LS_ERANGE;
        }
        int64_t next = cur + delta;
        char val[24];
        int vlen = snprintf(val, sizeof val, "%" PRId64, next);
        ls_meta_cmp_t cmp = {.kind = LS_META_CMP_MOD_REV, .key = key, .klen = klen, .rev = mod_rev};
        ls_meta_op_t op = {
            .kind = LS_META_OP_PUT, .key = key, .klen = klen, .val = val, .vlen = (size_t)vlen};
        st = timed_txn(m, &cmp, 1, &op, 1, NULL);
        if (st == LS_OK) {
            if (out) *out = next;
            return LS_OK;
        }
        if (st != LS_ECONFLICT) return st;
    }
    snprintf(ls_meta_errbuf(), LS_META_ERRMSG_CAP, "counter %s: too much contention", key);
    return LS_ECONFLICT;
}

size_t ls_meta_prefix_end(const void *prefix, size_t plen, uint8_t *out)
{
    const uint8_t *p = prefix;
    size_t n = plen;
    while (n > 0 && p[n - 1] == 0xff)
        n--; /* 0xff cannot be incremented: drop it and carry */
    if (n == 0) return 0;
    memcpy(out, p, n);
    out[n - 1]++;
    return n;
}

void ls_kv_free(ls_kv_t *kv)
{
    if (!kv) return;
    ls_free(kv->key);
    ls_free(kv->val);
    kv->key = kv->val = NULL;
    kv->klen = kv->vlen = 0;
}

void ls_kvlist_free(ls_kvlist_t *l)
{
    if (!l) return;
    for (size_t i = 0; i < l->n; i++)
        ls_kv_free(&l->v[i]);
    ls_free(l->v);
    l->v = NULL;
    l->n = 0;
}

/* ---- backend helpers ---- */

void ls_kv_set(ls_kv_t *kv, const void *key, size_t klen, const void *val, size_t vlen)
{
    memset(kv, 0, sizeof *kv);
    kv->key = ls_malloc(klen + 1);
    if (klen) memcpy(kv->key, key, klen);
    kv->key[klen] = 0;
    kv->klen = klen;
    kv->val = ls_malloc(vlen + 1);
    if (vlen) memcpy(kv->val, val, vlen);
    kv->val[vlen] = 0;
    kv->vlen = vlen;
}

int ls_meta_key_cmp(const void *a, size_t alen, const void *b, size_t blen)
{
    int c = memcmp(a, b, alen < blen ? alen : blen);
    if (c) return c;
    return alen < blen ? -1 : alen > blen;
}

/* 1 if key lies in [start, end) (end NULL/empty: unbounded). */
static int meta_in_range(const void *key, size_t klen, const void *start, size_t slen,
                         const void *end, size_t elen)
{
    if (ls_meta_key_cmp(key, klen, start, slen) < 0) return 0;
    return !end || !elen || ls_meta_key_cmp(key, klen, end, elen) < 0;
}

static ls_status meta_invalid(ls_meta_t *m, const char *why, size_t idx)
{
    snprintf(ls_meta_errbuf(), LS_META_ERRMSG_CAP, "invalid txn: %s (item %zu)", why, idx);
    return LS_EINVAL;
}

ls_status ls_meta_txn_validate(ls_meta_t *m, const ls_meta_cmp_t *cmps, size_t ncmp,
                               const ls_meta_op_t *ops, size_t nops)
{
    if (ncmp + nops > (size_t)m->ops->max_txn_ops) {
        snprintf(ls_meta_errbuf(), LS_META_ERRMSG_CAP,
                 "txn has %zu compares + ops, more than the limit %d", ncmp + nops,
                 m->ops->max_txn_ops);
        return LS_EINVAL;
    }
    if ((ncmp && !cmps) || (nops && !ops)) return meta_invalid(m, "missing array", 0);
    for (size_t i = 0; i < ncmp; i++) {
        if (!cmps[i].key || !cmps[i].klen) return meta_invalid(m, "empty compare key", i);
        if (cmps[i].kind != LS_META_CMP_MOD_REV && cmps[i].kind != LS_META_CMP_VALUE)
            return meta_invalid(m, "unknown compare kind", i);
        if (cmps[i].kind == LS_META_CMP_MOD_REV && cmps[i].rev < 0)
            return meta_invalid(m, "negative revision", i);
        if (cmps[i].kind == LS_META_CMP_VALUE && cmps[i].vlen && !cmps[i].val)
            return meta_invalid(m, "missing compare value", i);
    }
    for (size_t i = 0; i < nops; i++) {
        const ls_meta_op_t *op = &ops[i];
        switch (op->kind) {
        case LS_META_OP_PUT:
            if (op->vlen && !op->val) return meta_invalid(m, "missing value", i);
            if (op->lease < 0) return meta_invalid(m, "negative lease", i);
            /* fallthrough */
        case LS_META_OP_DEL:
            if (!op->key || !op->klen) return meta_invalid(m, "empty key", i);
            break;
        case LS_META_OP_DEL_RANGE:
            if (op->klen && !op->key) return meta_invalid(m, "missing range start", i);
            if (op->elen && !op->end) return meta_invalid(m, "missing range end", i);
            break;
        default: return meta_invalid(m, "unknown op kind", i);
        }
    }
    /* a key written twice in one txn is ambiguous: refuse like etcd does */
    for (size_t i = 0; i < nops; i++) {
        if (ops[i].kind != LS_META_OP_PUT) continue;
        for (size_t j = 0; j < nops; j++) {
            if (j == i) continue;
            const ls_meta_op_t *o = &ops[j];
            int clash;
            if (o->kind == LS_META_OP_DEL_RANGE)
                clash = meta_in_range(ops[i].key, ops[i].klen, o->key ? o->key : "", o->klen,
                                      o->end, o->elen);
            else
                clash = ls_meta_key_cmp(ops[i].key, ops[i].klen, o->key, o->klen) == 0;
            if (clash) return meta_invalid(m, "key written twice", i);
        }
    }
    return LS_OK;
}

/* ---- watch hub ---- */

typedef struct hub_batch {
    int refs; /* guarded by the hub lock; the ring holds one */
    int64_t rev;
    size_t bytes;
    ls_meta_event_t *ev;
    size_t n;
} hub_batch_t;

struct ls_meta_watch {
    uint8_t *prefix;
    size_t plen;
    int64_t cursor; /* newest revision handed over (or skipped) */
    ls_meta_watch_cb cb;
    void *arg;
    int busy; /* its callback is running on the notifier */
    int cancelled;
    int orphan;    /* cancelled from its own callback: notifier frees */
    int compacted; /* missed evicted events */
    int told;      /* compacted signal delivered */
    struct ls_meta_watch *next;
};

struct ls_meta_hub {
    pthread_mutex_t mu;
    pthread_cond_t wake; /* notifier: batch, watcher or stop */
    pthread_cond_t idle; /* cancellers: a callback returned */
    pthread_t thread;
    int stop;
    int64_t head_rev;
    int64_t compacted_rev;
    hub_batch_t **ring; /* circular: ring[(start + i) % cap], oldest first */
    size_t cap, start, n;
    size_t bytes, max_bytes;
    ls_meta_watch_t *watchers;
};

static void hub_batch_release(hub_batch_t *b)
{
    if (--b->refs > 0) return;
    for (size_t i = 0; i < b->n; i++)
        ls_kv_free(&b->ev[i].kv);
    ls_free(b->ev);
    ls_free(b);
}

static hub_batch_t *hub_at(ls_meta_hub_t *h, size_t i) { return h->ring[(h->start + i) % h->cap]; }

/* First retained batch with rev > after, or NULL. Caller holds mu. */
static hub_batch_t *hub_find_after(ls_meta_hub_t *h, int64_t after)
{
    size_t lo = 0, hi = h->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (hub_at(h, mid)->rev <= after)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < h->n ? hub_at(h, lo) : NULL;
}

static int hub_ready(const ls_meta_hub_t *h, const ls_meta_watch_t *w)
{
    if (w->cancelled || w->busy) return 0;
    if (w->compacted) return !w->told;
    return w->cursor < h->head_rev;
}

/* Serve order: compacted signals first, then the watcher furthest behind. */
static int hub_before(const ls_meta_watch_t *x, const ls_meta_watch_t *w)
{
    if (x->compacted != w->compacted) return x->compacted;
    return x->cursor < w->cursor;
}

static void hub_unlink(ls_meta_hub_t *h, ls_meta_watch_t *w)
{
    for (ls_meta_watch_t **pp = &h->watchers; *pp; pp = &(*pp)->next)
        if (*pp == w) {
            *pp = w->next;
            break;
        }
    ls_free(w->prefix);
    ls_free(w);
}

static int hub_match(const ls_meta_watch_t *w, const ls_meta_event_t *e)
{
    return e->kv.klen >= w->plen && memcmp(e->kv.key, w->prefix, w->plen) == 0;
}

static void *hub_notifier(void *arg)
{
    ls_meta_hub_t *h = arg;
    pthread_mutex_lock(&h->mu);
    while (!h->stop) {
        ls_meta_watch_t *w = NULL;
        for (ls_meta_watch_t *x = h->watchers; x; x = x->next)
            if (hub_ready(h, x) && (!w || hub_before(x, w))) w = x;
        if (!w) {
            pthread_cond_wait(&h->wake, &h->mu);
            continue;
        }
        hub_batch_t *b = NULL;
        size_t nmatch = 0;
        if (w->compacted) {
            w->told = 1;
        } else {
            b = hub_find_after(h, w->cursor);
            if (!b) {
                w->cursor = h->head_rev;
                continue;
            }
            w->cursor = b->rev;
            for (size_t i = 0; i < b->n; i++)
                nmatch += hub_match(w, &b->ev[i]);
            if (!nmatch) continue;
            b->refs++;
        }
        w->busy = 1;
        pthread_mutex_unlock(&h->mu);

        if (!b) {
            w->cb(w->arg, NULL, 0);
        } else if (nmatch == b->n) {
            w->cb(w->arg, b->ev, b->n);
        } else {
            ls_meta_event_t *sel = ls_malloc(nmatch * sizeof *sel);
            size_t k = 0;
            for (size_t i = 0; i < b->n; i++)
                if (hub_match(w, &b->ev[i])) sel[k++] = b->ev[i];
            w->cb(w->arg, sel, k);
            ls_free(sel);
        }

        pthread_mutex_lock(&h->mu);
        w->busy = 0;
        if (b) hub_batch_release(b);
        if (w->orphan) hub_unlink(h, w);
        pthread_cond_broadcast(&h->idle);
    }
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

ls_meta_hub_t *ls_meta_hub_new(int64_t rev, size_t history_bytes)
{
    ls_meta_hub_t *h = LS_NEW(ls_meta_hub_t);
    pthread_mutex_init(&h->mu, NULL);
    pthread_cond_init(&h->wake, NULL);
    pthread_cond_init(&h->idle, NULL);
    h->head_rev = h->compacted_rev = rev;
    h->max_bytes = history_bytes;
    h->cap = 64;
    h->ring = LS_NEWN(hub_batch_t *, h->cap);
    if (ls_thread_start(&h->thread, "ls-meta-notify", hub_notifier, h) != 0)
        LS_PANIC("cannot start the watch notifier thread");
    return h;
}

void ls_meta_hub_publish(ls_meta_hub_t *h, int64_t rev, ls_meta_event_t *ev, size_t n)
{
    hub_batch_t *b = LS_NEW(hub_batch_t);
    b->refs = 1;
    b->rev = rev;
    b->ev = ev;
    b->n = n;
    b->bytes = sizeof *b + n * sizeof *ev;
    for (size_t i = 0; i < n; i++)
        b->bytes += ev[i].kv.klen + ev[i].kv.vlen;

    pthread_mutex_lock(&h->mu);
    if (h->n == h->cap) {
        hub_batch_t **ring = LS_NEWN(hub_batch_t *, h->cap * 2);
        for (size_t i = 0; i < h->n; i++)
            ring[i] = hub_at(h, i);
        ls_free(h->ring);
        h->ring = ring;
        h->cap *= 2;
        h->start = 0;
    }
    h->ring[(h->start + h->n) % h->cap] = b;
    h->n++;
    h->bytes += b->bytes;
    if (rev > h->head_rev) h->head_rev = rev;
    while (h->bytes > h->max_bytes && h->n > 1) {
        hub_batch_t *old = h->ring[h->start];
        for (ls_meta_watch_t *w = h->watchers; w; w = w->next)
            if (!w->cancelled && !w->compacted && w->cursor < old->rev) w->compacted = 1;
        h->compacted_rev = old->rev;
        h->bytes -= old->bytes;
        h->start = (h->start + 1) % h->cap;
        h->n--;
        hub_batch_release(old);
    }
    pthread_cond_signal(&h->wake);
    pthread_mutex_unlock(&h->mu);
}

ls_status ls_meta_hub_watch(ls_meta_hub_t *h, const void *prefix, size_t plen, int64_t after_rev,
                            ls_meta_watch_cb cb, void *arg, ls_meta_watch_t **out)
{
    if (!cb || after_rev < 0 || (plen && !prefix)) return LS_EINVAL;
    ls_meta_watch_t *w = LS_NEW(ls_meta_watch_t);
    w->prefix = ls_memdup(prefix ? prefix : "", plen);
    w->plen = plen;
    w->cb = cb;
    w->arg = arg;
    pthread_mutex_lock(&h->mu);
    if (after_rev == 0) after_rev = h->head_rev;
    if (after_rev < h->compacted_rev) {
        pthread_mutex_unlock(&h->mu);
        ls_free(w->prefix);
        ls_free(w);
        return LS_ERANGE;
    }
    w->cursor = after_rev;
    w->next = h->watchers;
    h->watchers = w;
    pthread_cond_signal(&h->wake);
    pthread_mutex_unlock(&h->mu);
    *out = w;
    return LS_OK;
}

void ls_meta_hub_cancel(ls_meta_hub_t *h, ls_meta_watch_t *w)
{
    if (!w) return;
    pthread_mutex_lock(&h->mu);
    w->cancelled = 1;
    if (w->busy && pthread_equal(pthread_self(), h->thread)) {
        w->orphan = 1; /* we are inside its callback */
    } else {
        while (w->busy)
            pthread_cond_wait(&h->idle, &h->mu);
        hub_unlink(h, w);
    }
    pthread_mutex_unlock(&h->mu);
}

void ls_meta_hub_free(ls_meta_hub_t *h)
{
    if (!h) return;
    pthread_mutex_lock(&h->mu);
    h->stop = 1;
    pthread_cond_signal(&h->wake);
    pthread_mutex_unlock(&h->mu);
    pthread_join(h->thread, NULL);
    int left = 0;
    while (h->watchers) {
        hub_unlink(h, h->watchers);
        left++;
    }
    if (left) LS_WARN("meta", "closing with %d watch(es) still registered", left);
    for (size_t i = 0; i < h->n; i++)
        hub_batch_release(hub_at(h, i));
    ls_free(h->ring);
    pthread_cond_destroy(&h->idle);
    pthread_cond_destroy(&h->wake);
    pthread_mutex_destroy(&h->mu);
    ls_free(h);
}

static _Thread_local char meta_err[LS_META_ERRMSG_CAP];

char *ls_meta_errbuf(void) { return meta_err; }

const char *ls_meta_error(const ls_meta_t *m)
{
    (void)m;
    return meta_err;
}
