/* ls_meta mem backend: the etcd-like KV in memory, for unit tests and
 * single-process experiments. Semantics match meta_sqlite.c exactly.
 *
 * State (all guarded by mu):
 *  - e[0..n): entries sorted by key (ls_meta_key_cmp), unique keys, each
 *    owning its key and value bytes;
 *  - rev: the store revision; every txn that changes something bumps it by
 *    exactly one and publishes that revision's events to the hub while mu is
 *    still held, so the hub sees revisions in order;
 *  - leases[0..nleases): id, ttl, deadline on the monotonic clock. Lease ids
 *    count up from 1 and are never reused.
 *
 * Threads: callers on any thread; one expirer thread revokes leases whose
 * deadline passed (each revocation is one revision of DEL events), waking at
 * the earliest deadline (or after at most 1 s, or when a lease is granted);
 * the hub's notifier thread runs watch callbacks. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/alloc.h"
#include "base/check.h"
#include "base/clock.h"
#include "base/diag.h"
#include "base/thread.h"
#include "meta/meta_backend.h"

#define MEM_EXPIRER_MAX_SLEEP_MS 1000

typedef struct mem_entry {
    uint8_t *key;
    size_t klen;
    uint8_t *val;
    size_t vlen;
    int64_t create_rev, mod_rev, lease;
} mem_entry_t;

typedef struct mem_lease {
    int64_t id, ttl_ms, deadline_ms;
} mem_lease_t;

typedef struct mem_meta {
    ls_meta_t base;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* wakes the expirer (CLOCK_MONOTONIC) */
    pthread_t expirer;
    int stop;
    mem_entry_t *e;
    size_t n, cap;
    mem_lease_t *leases;
    size_t nleases, lcap;
    int64_t rev;
    int64_t last_lease;
    ls_meta_hub_t *hub;
} mem_meta_t;

typedef struct mem_events {
    ls_meta_event_t *v;
    size_t n, cap;
} mem_events_t;

static size_t mem_lower_bound(const mem_meta_t *mm, const void *key, size_t klen)
{
    size_t lo = 0, hi = mm->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ls_meta_key_cmp(mm->e[mid].key, mm->e[mid].klen, key, klen) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static mem_entry_t *mem_find(mem_meta_t *mm, const void *key, size_t klen)
{
    size_t i = mem_lower_bound(mm, key, klen);
    if (i < mm->n && ls_meta_key_cmp(mm->e[i].key, mm->e[i].klen, key, klen) == 0) return &mm->e[i];
    return NULL;
}

static void mem_to_kv(const mem_entry_t *e, ls_kv_t *kv)
{
    ls_kv_set(kv, e->key, e->klen, e->val, e->vlen);
    kv->create_rev = e->create_rev;
    kv->mod_rev = e->mod_rev;
    kv->lease = e->lease;
}

static ls_meta_event_t *mem_event(mem_events_t *evs, ls_meta_ev_kind kind)
{
    if (evs->n == evs->cap) {
        evs->cap = evs->cap ? evs->cap * 2 : 8;
        evs->v = ls_realloc(evs->v, evs->cap * sizeof *evs->v);
    }
    ls_meta_event_t *ev = &evs->v[evs->n++];
    memset(ev, 0, sizeof *ev);
    ev->kind = kind;
    return ev;
}

/* Removes e[i], recording a DEL event at revision rev. */
static void mem_remove(mem_meta_t *mm, size_t i, int64_t rev, mem_events_t *evs)
{
    ls_meta_event_t *ev = mem_event(evs, LS_META_EV_DEL);
    ls_kv_set(&ev->kv, mm->e[i].key, mm->e[i].klen, NULL, 0);
    ev->kv.mod_rev = rev;
    ls_free(mm->e[i].key);
    ls_free(mm->e[i].val);
    memmove(&mm->e[i], &mm->e[i + 1], (mm->n - i - 1) * sizeof *mm->e);
    mm->n--;
}

/* Makes evs revision rev+1 of the store, or discards them if empty. Caller holds mu. */
static void mem_commit_events(mem_meta_t *mm, mem_events_t *evs)
{
    if (!evs->n) {
        ls_free(evs->v);
        return;
    }
    mm->rev++;
    ls_meta_hub_publish(mm->hub, mm->rev, evs->v, evs->n);
}

static ls_status mem_get(ls_meta_t *m, const void *key, size_t klen, ls_kv_t *out)
{
    mem_meta_t *mm = (mem_meta_t *)m;
    if (!key || !klen) return LS_EINVAL;
    pthread_mutex_lock(&mm->mu);
    mem_entry_t *e = mem_find(mm, key, klen);
    if (e) mem_to_kv(e, out);
    pthread_mutex_unlock(&mm->mu);
    return e ? LS_OK : LS_ENOTFOUND;
}

static ls_status mem_scan(ls_meta_t *m, const void *start, size_t slen, const void *end,
                          size_t elen, size_t limit, int reverse, ls_kvlist_t *out)
{
    mem_meta_t *mm = (mem_meta_t *)m;
    memset(out, 0, sizeof *out);
    if (!start) start = "", slen = 0;
    pthread_mutex_lock(&mm->mu);
    size_t lo = mem_lower_bound(mm, start, slen);
    size_t hi = end && elen ? mem_lower_bound(mm, end, elen) : mm->n;
    size_t avail = hi > lo ? hi - lo : 0;
    size_t take = limit && limit < avail ? limit : avail;
    out->v = take ? LS_NEWN(ls_kv_t, take) : NULL;
    for (size_t k = 0; k < take; k++)
        mem_to_kv(&mm->e[reverse ? hi - 1 - k : lo + k], &out->v[k]);
    out->n = take;
    out->more = take < avail;
    out->revision = mm->rev;
    pthread_mutex_unlock(&mm->mu);
    return LS_OK;
}

static mem_lease_t *mem_lease_find(mem_meta_t *mm, int64_t id)
{
    for (size_t i = 0; i < mm->nleases; i++)
        if (mm->leases[i].id == id) return &mm->leases[i];
    return NULL;
}

static int mem_cmp_holds(mem_meta_t *mm, const ls_meta_cmp_t *c)
{
    mem_entry_t *e = mem_find(mm, c->key, c->klen);
    if (c->kind == LS_META_CMP_MOD_REV) return e ? e->mod_rev == c->rev : c->rev == 0;
    return e && ls_meta_key_cmp(e->val, e->vlen, c->val ? c->val : "", c->vlen) == 0;
}

static void mem_apply_put(mem_meta_t *mm, const ls_meta_op_t *op, int64_t rev, mem_events_t *evs)
{
    size_t i = mem_lower_bound(mm, op->key, op->klen);
    mem_entry_t *e;
    if (i < mm->n && ls_meta_key_cmp(mm->e[i].key, mm->e[i].klen, op->key, op->klen) == 0) {
        e = &mm->e[i];
        ls_free(e->val);
    } else {
        if (mm->n == mm->cap) {
            mm->cap = mm->cap ? mm->cap * 2 : 64;
            mm->e = ls_realloc(mm->e, mm->cap * sizeof *mm->e);
        }
        memmove(&mm->e[i + 1], &mm->e[i], (mm->n - i) * sizeof *mm->e);
        mm->n++;
        e = &mm->e[i];
        e->key = ls_memdup(op->key, op->klen);
        e->klen = op->klen;
        e->create_rev = rev;
    }
    e->val = ls_memdup(op->val ? op->val : "", op->vlen);
    e->vlen = op->vlen;
    e->mod_rev = rev;
    e->lease = op->lease;
    mem_to_kv(e, &mem_event(evs, LS_META_EV_PUT)->kv);
}

static ls_status mem_txn(ls_meta_t *m, const ls_meta_cmp_t *cmps, size_t ncmp,
                         const ls_meta_op_t *ops, size_t nops, int64_t *rev_out)
{
    mem_meta_t *mm = (mem_meta_t *)m;
    ls_status st = ls_meta_txn_validate(m, cmps, ncmp, ops, nops);
    if (st != LS_OK) return st;
    pthread_mutex_lock(&mm->mu);
    for (size_t i = 0; i < ncmp; i++)
        if (!mem_cmp_holds(mm, &cmps[i])) {
            st = LS_ECONFLICT;
            goto unlock;
        }
    int64_t now = ls_clock_mono_ms();
    for (size_t i = 0; i < nops; i++) {
        if (ops[i].kind != LS_META_OP_PUT || !ops[i].lease) continue;
        mem_lease_t *l = mem_lease_find(mm, ops[i].lease);
        if (!l || l->deadline_ms <= now) {
            snprintf(ls_meta_errbuf(), LS_META_ERRMSG_CAP, "lease %lld not found",
                     (long long)ops[i].lease);
            st = LS_ENOTFOUND;
            goto unlock;
        }
    }
    mem_events_t evs = {0};
    int64_t rev = mm->rev + 1;
    for (size_t i = 0; i < nops; i++) {
        const ls_meta_op_t *op = &ops[i];
        if (op->kind == LS_META_OP_PUT) {
            mem_apply_put(mm, op, rev, &evs);
        } else if (op->kind == LS_META_OP_DEL) {
            size_t j = mem_lower_bound(mm, op->key, op->klen);
            if (j < mm->n && ls_meta_key_cmp(mm->e[j].key, mm->e[j].klen, op->key, op->klen) == 0)
                mem_remove(mm, j, rev, &evs);
        } else {
            size_t lo = mem_lower_bound(mm, op->key ? op->key : "", op->klen);
            size_t hi = op->end && op->elen ? mem_lower_bound(mm, op->end, op->elen) : mm->n;
            for (size_t j = lo; j < hi; hi--)
                mem_remove(mm, j, rev, &evs);
        }
    }
    mem_commit_events(mm, &evs);
unlock:
    if (st == LS_OK && rev_out) *rev_out = mm->rev;
    pthread_mutex_unlock(&mm->mu);
    return st;
}

static ls_status mem_lease_grant(ls_meta_t *m, int64_t ttl_ms, int64_t *lease_out)
{
    mem_meta_t *mm = (mem_meta_t *)m;
    if (ttl_ms <= 0) return LS_EINVAL;
    pthread_mutex_lock(&mm->mu);
    if (mm->nleases == mm->lcap) {
        mm->lcap = mm->lcap ? mm->lcap * 2 : 16;
        mm->leases = ls_realloc(mm->leases, mm->lcap * sizeof *mm->leases);
    }
    mem_lease_t *l = &mm->leases[mm->nleases++];
    l->id = ++mm->last_lease;
    l->ttl_ms = ttl_ms;
    l->deadline_ms = ls_clock_mono_ms() + ttl_ms;
    *lease_out = l->id;
    pthread_cond_signal(&mm->cv);
    pthread_mutex_unlock(&mm->mu);
    return LS_OK;
}

static ls_status mem_lease_keepalive(ls_meta_t *m, int64_t lease)
{
    mem_meta_t *mm = (mem_meta_t *)m;
    pthread_mutex_lock(&mm->mu);
    int64_t now = ls_clock_mono_ms();
    mem_lease_t *l = mem_lease_find(mm, lease);
    ls_status st = LS_ENOTFOUND;
    if (l && l->deadline_ms > now) {
        l->deadline_ms = now + l->ttl_ms;
        st = LS_OK;
    }
    pthread_mutex_unlock(&mm->mu);
    return st;
}

/* Drops the lease and deletes its keys in one revision. Caller holds mu. */
static ls_status mem_revoke_locked(mem_meta_t *mm, int64_t lease)
{
    mem_lease_t *l = mem_lease_find(mm, lease);
    if (!l) return LS_ENOTFOUND;
    *l = mm->leases[--mm->nleases];
    mem_events_t evs = {0};
    int64_t rev = mm->rev + 1;
    for (size_t i = 0; i < mm->n;) {
        if (mm->e[i].lease == lease)
            mem_remove(mm, i, rev, &evs);
        else
            i++;
    }
    mem_commit_events(mm, &evs);
    return LS_OK;
}

static ls_status mem_lease_revoke(ls_meta_t *m, int64_t lease)
{
    mem_meta_t *mm = (mem_meta_t *)m;
    pthread_mutex_lock(&mm->mu);
    ls_status st = mem_revoke_locked(mm, lease);
    pthread_mutex_unlock(&mm->mu);
    return st;
}

static void *mem_expirer(void *arg)
{
    mem_meta_t *mm = arg;
    pthread_mutex_lock(&mm->mu);
    while (!mm->stop) {
        int64_t now = ls_clock_mono_ms();
        int64_t next = now + MEM_EXPIRER_MAX_SLEEP_MS;
        for (size_t i = 0; i < mm->nleases;) {
            if (mm->leases[i].deadline_ms <= now) {
                mem_revoke_locked(mm, mm->leases[i].id); /* moves the last lease to i */
                continue;
            }
            if (mm->leases[i].deadline_ms < next) next = mm->leases[i].deadline_ms;
            i++;
        }
        ls_cond_wait_until(&mm->cv, &mm->mu, next);
    }
    pthread_mutex_unlock(&mm->mu);
    return NULL;
}

static ls_status mem_watch(ls_meta_t *m, const void *prefix, size_t plen, int64_t after_rev,
                           ls_meta_watch_cb cb, void *arg, ls_meta_watch_t **out)
{
    return ls_meta_hub_watch(((mem_meta_t *)m)->hub, prefix, plen, after_rev, cb, arg, out);
}

static void mem_watch_cancel(ls_meta_t *m, ls_meta_watch_t *w)
{
    ls_meta_hub_cancel(((mem_meta_t *)m)->hub, w);
}

static void mem_close(ls_meta_t *m)
{
    mem_meta_t *mm = (mem_meta_t *)m;
    pthread_mutex_lock(&mm->mu);
    mm->stop = 1;
    pthread_cond_signal(&mm->cv);
    pthread_mutex_unlock(&mm->mu);
    pthread_join(mm->expirer, NULL);
    ls_meta_hub_free(mm->hub);
    for (size_t i = 0; i < mm->n; i++) {
        ls_free(mm->e[i].key);
        ls_free(mm->e[i].val);
    }
    ls_free(mm->e);
    ls_free(mm->leases);
    pthread_cond_destroy(&mm->cv);
    pthread_mutex_destroy(&mm->mu);
    ls_free(mm);
}

static const ls_meta_ops_t mem_ops = {
    .name = "mem",
    .max_txn_ops = LS_META_MAX_TXN_OPS,
    .get = mem_get,
    .scan = mem_scan,
    .txn = mem_txn,
    .lease_grant = mem_lease_grant,
    .lease_keepalive = mem_lease_keepalive,
    .lease_revoke = mem_lease_revoke,
    .watch = mem_watch,
    .watch_cancel = mem_watch_cancel,
    .close = mem_close,
};

ls_meta_t *ls_meta_mem_open(void)
{
    mem_meta_t *mm = LS_NEW(mem_meta_t);
    mm->base.ops = &mem_ops;
    pthread_mutex_init(&mm->mu, NULL);
    ls_cond_init_mono(&mm->cv);
    mm->hub = ls_meta_hub_new(0, LS_META_HUB_HISTORY_BYTES);
    if (ls_thread_start(&mm->expirer, "ls-mem-expirer", mem_expirer, mm) != 0)
        LS_PANIC("mem: cannot start the lease expirer thread");
    return &mm->base;
}
