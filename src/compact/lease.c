/* Per-log ownership by lease.
 *
 * Keys: /ls/owner/compact/<log_id %016x> = owner name, attached to the
 * owner's lease; /ls/owner/compact/table-<stream_no %016x> likewise for the
 * one table commit of a stream's pass (compactor.c table_task), so brokers
 * take turns on a table instead of racing on its pointer. A task (one log, one pass) claims its log
 * before it writes anything and releases it at the end:
 *
 *   unclaimed --claim: txn{compare mod_rev == 0; PUT key (lease)}--> held
 *   held --every commit carries compare(mod_rev == claim rev)--> held
 *   held --release: txn{compare mod_rev == claim rev; DEL key}--> unclaimed
 *   held --lease expires (owner stalled or dead): store deletes the key--> lost
 *
 * Invariants
 *  L1  At most one owner key per log exists, so at most one task works on a
 *      log across every broker sharing the metadata store.
 *  L2  A task commits only while its key exists with the revision it wrote:
 *      once the lease expired the key is gone (or another owner's key with
 *      a newer revision is there), the compare fails and so does the commit
 *      (the index swap, a trim): a stalled owner cannot overwrite the work
 *      of the owner that took over.
 *  L3  A crashed owner's keys vanish when its lease expires (TTL), so its
 *      logs are blocked for at most one TTL.
 *
 * One lease per owner (not per task) keeps grants out of the per-log path;
 * claims happen only for logs that have work, so an idle pass costs no
 * writes. The owner's own thread renews the lease every ttl/3 while one is
 * held (one keepalive per ttl/3 per broker, idle or not): never the event
 * loop or the worker pool, so neither a slow loop step nor a pool busy with
 * store reads can let a lease expire under a running task (issue 29 §8: a
 * loop frozen for a minute lost the lease and the finished work with it),
 * and a lease granted by one pass stays valid for the next (renewing only
 * while a pass ran let a lease granted 29 s earlier expire under a task that
 * had just claimed a log with it). A lease ends only when the process stops
 * (free revokes it), dies (TTL), or cannot reach the store for a TTL.
 * Threads: any; the lease id is guarded by a mutex; one renewal thread. */
#include "compact/lease.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/diag.h"
#include "base/thread.h"
#include "meta/meta_keys.h"

struct ls_lease_owner {
    ls_meta_t *meta;
    char name[96];
    int64_t ttl_ms;
    pthread_mutex_t mu;
    int64_t lease;       /* 0: none */
    pthread_cond_t cond; /* wakes the renewal thread to stop */
    bool stop;
    bool renewing; /* the renewal thread runs */
    pthread_t thread;
};

static void *renew_thread(void *arg)
{
    ls_lease_owner_t *o = arg;
    int64_t every = o->ttl_ms / 3 > 0 ? o->ttl_ms / 3 : 1;
    pthread_mutex_lock(&o->mu);
    while (!o->stop) {
        ls_cond_wait_until(&o->cond, &o->mu, ls_clock_mono_ms() + every);
        if (o->stop) break;
        pthread_mutex_unlock(&o->mu);
        ls_lease_owner_keepalive(o); /* says so itself when the lease is gone */
        pthread_mutex_lock(&o->mu);
    }
    pthread_mutex_unlock(&o->mu);
    return NULL;
}

ls_lease_owner_t *ls_lease_owner_new(ls_meta_t *meta, const char *name, int64_t ttl_ms)
{
    ls_lease_owner_t *o = LS_NEW(ls_lease_owner_t);
    o->meta = meta;
    snprintf(o->name, sizeof o->name, "%s", name);
    o->ttl_ms = ttl_ms;
    pthread_mutex_init(&o->mu, NULL);
    ls_cond_init_mono(&o->cond);
    int rc = ls_thread_start(&o->thread, "ls-lease", renew_thread, o);
    o->renewing = rc == 0;
    if (rc != 0)
        LS_ERROR("compact",
                 "starting the compaction lease renewal thread: %s; a lease lasts %lld ms from "
                 "its grant, so passes longer than that will not commit",
                 strerror(rc), (long long)ttl_ms);
    return o;
}

int ls_lease_owner_reclaim(ls_lease_owner_t *o, const char *prefix)
{
    ls_kvlist_t l;
    if (ls_meta_scan_prefix(o->meta, LS_KEY_OWNER_COMPACT, 0, &l) != LS_OK) return 0;
    size_t pl = strlen(prefix);
    int64_t *done = LS_NEWN(int64_t, l.n + 1);
    int n = 0;
    for (size_t i = 0; i < l.n; i++) {
        const ls_kv_t *kv = &l.v[i];
        bool mine = kv->vlen > pl && memcmp(kv->val, prefix, pl) == 0 && kv->val[pl] == '/';
        if (!mine || strcmp((const char *)kv->val, o->name) == 0 || !kv->lease) continue;
        bool seen = false;
        for (int k = 0; k < n && !seen; k++)
            seen = done[k] == kv->lease;
        if (seen) continue;
        done[n++] = kv->lease;
        LS_INFO("compact", "freeing the compaction claims of a previous run (%s)",
                (const char *)kv->val);
        ls_meta_lease_revoke(o->meta, kv->lease);
    }
    ls_free(done);
    ls_kvlist_free(&l);
    return n;
}

void ls_lease_owner_free(ls_lease_owner_t *o)
{
    if (!o) return;
    if (o->renewing) {
        pthread_mutex_lock(&o->mu);
        o->stop = true;
        pthread_cond_signal(&o->cond);
        pthread_mutex_unlock(&o->mu);
        pthread_join(o->thread, NULL);
    }
    if (o->lease) ls_meta_lease_revoke(o->meta, o->lease);
    pthread_cond_destroy(&o->cond);
    pthread_mutex_destroy(&o->mu);
    ls_free(o);
}

static int64_t current_lease(ls_lease_owner_t *o)
{
    pthread_mutex_lock(&o->mu);
    int64_t l = o->lease;
    pthread_mutex_unlock(&o->mu);
    return l;
}

/* Forgets lease l (if still current) after the store said it is gone. */
static void forget_lease(ls_lease_owner_t *o, int64_t l)
{
    pthread_mutex_lock(&o->mu);
    if (o->lease == l) o->lease = 0;
    pthread_mutex_unlock(&o->mu);
}

static ls_status ensure_lease(ls_lease_owner_t *o, int64_t *out)
{
    pthread_mutex_lock(&o->mu);
    ls_status st = LS_OK;
    if (!o->lease) st = ls_meta_lease_grant(o->meta, o->ttl_ms, &o->lease);
    *out = o->lease;
    pthread_mutex_unlock(&o->mu);
    if (st != LS_OK)
        LS_WARN("compact", "granting the compaction lease (ttl %lld ms) failed: %s",
                (long long)o->ttl_ms, ls_status_str(st));
    return st;
}

ls_status ls_lease_owner_keepalive(ls_lease_owner_t *o)
{
    int64_t l = current_lease(o);
    if (!l) return LS_OK;
    ls_status st = ls_meta_lease_keepalive(o->meta, l);
    if (st == LS_ENOTFOUND) {
        LS_WARN("compact",
                "compaction lease %lld of %s expired: running tasks will not commit; "
                "a new lease is taken for the next claim",
                (long long)l, o->name);
        forget_lease(o, l);
    }
    return st;
}

static ls_status claim_key(ls_lease_owner_t *o, ls_lease_claim_t *c)
{
    size_t klen = strlen(c->key);
    for (int attempt = 0; attempt < 2; attempt++) {
        int64_t lease;
        ls_status st = ensure_lease(o, &lease);
        if (st != LS_OK) return st;
        ls_meta_cmp_t cmp = {.kind = LS_META_CMP_MOD_REV, .key = c->key, .klen = klen, .rev = 0};
        ls_meta_op_t op = {.kind = LS_META_OP_PUT,
                           .key = c->key,
                           .klen = klen,
                           .val = o->name,
                           .vlen = strlen(o->name),
                           .lease = lease};
        int64_t rev = 0;
        st = ls_meta_txn(o->meta, &cmp, 1, &op, 1, &rev);
        if (st == LS_OK) {
            c->held = true;
            c->rev = rev;
            return LS_OK;
        }
        if (st == LS_ENOTFOUND) {
            forget_lease(o, lease); /* expired between passes: take a new one */
            continue;
        }
        if (st != LS_ECONFLICT) return st;
        /* someone holds it; if that is us (a release that failed), adopt it */
        ls_kv_t kv;
        st = ls_meta_get_bytes(o->meta, c->key, klen, &kv);
        if (st == LS_ENOTFOUND) continue; /* released meanwhile: try once more */
        if (st != LS_OK) return st;
        bool ours = kv.lease == lease && kv.vlen == strlen(o->name) &&
                    memcmp(kv.val, o->name, kv.vlen) == 0;
        if (ours) {
            c->held = true;
            c->rev = kv.mod_rev;
        } else {
            LS_DEBUG("compact", "%s is owned by %.*s; skipping it", c->key, (int)kv.vlen,
                     (const char *)kv.val);
        }
        ls_kv_free(&kv);
        return ours ? LS_OK : LS_EEXISTS;
    }
    return LS_EEXISTS;
}

ls_status ls_lease_claim_log(ls_lease_owner_t *o, int64_t log_id, ls_lease_claim_t *c)
{
    memset(c, 0, sizeof *c);
    c->log_id = log_id;
    snprintf(c->key, sizeof c->key, LS_KEY_OWNER_COMPACT "%016llx", (unsigned long long)log_id);
    return claim_key(o, c);
}

ls_status ls_lease_claim_table(ls_lease_owner_t *o, int64_t stream_no, ls_lease_claim_t *c)
{
    memset(c, 0, sizeof *c);
    c->log_id = -1;
    snprintf(c->key, sizeof c->key, LS_KEY_OWNER_COMPACT "table-%016llx",
             (unsigned long long)stream_no);
    return claim_key(o, c);
}

ls_meta_cmp_t ls_lease_claim_cmp(const ls_lease_claim_t *c)
{
    return (ls_meta_cmp_t){
        .kind = LS_META_CMP_MOD_REV, .key = c->key, .klen = strlen(c->key), .rev = c->rev};
}

void ls_lease_release(ls_lease_owner_t *o, ls_lease_claim_t *c)
{
    if (!c->held) return;
    c->held = false;
    ls_meta_cmp_t cmp = ls_lease_claim_cmp(c);
    ls_meta_op_t op = {.kind = LS_META_OP_DEL, .key = c->key, .klen = strlen(c->key)};
    ls_status st = ls_meta_txn(o->meta, &cmp, 1, &op, 1, NULL);
    if (st != LS_OK && st != LS_ECONFLICT)
        LS_WARN("compact", "releasing %s failed: %s (it expires with the lease)", c->key,
                ls_status_str(st));
}
