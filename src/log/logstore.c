/* Log storage: lifecycle, heads, fence and WAL garbage collection.
 *
 * Design (see also wal_writer.c for the write path, log_reader.c for reads):
 *  - A log's committed state is its head (/ls/head/<id>): next offset, log
 *    start, size, max timestamp, idempotent-producer state and the
 *    transaction state of its producers (log_txn.h: the LSO is computed from
 *    it; aborted ranges are records of their own, log_aborted.c). Heads are loaded
 *    at open and kept in memory; commits update them by compare-and-set on
 *    the head key's mod_rev, so a second writer (another broker) is detected.
 *  - Offsets live only in metadata: WAL objects hold entries as produced, and
 *    each commit writes one index entry per log per object.
 *  - The log start is not in the head but in /ls/start/<id>, written only by
 *    trims (log_trim.c), so trims and appends never contend for a key.
 *  - GC: a WAL object is live iff /ls/walobj/<key> exists (written in the
 *    first txn of its commit). Objects under wal/ without that key and older
 *    than gc_grace_ms were never committed (crash between PUT and commit, or
 *    failed commit) or are fully compacted, and are deleted; they were never
 *    visible, or no index entry names them any more.
 *  - One collector per cluster: a round (every min(gc_grace_ms, 60 s)) lists
 *    the whole wal/ prefix and deletes what it finds, so brokers sharing the
 *    stores take turns instead of each listing and deleting the same objects.
 *    The turn is the key LS_KEY_WALGC_TURN, attached to the collecting
 *    broker's lease (TTL gc_turn_ttl: three rounds, at least 10 s):
 *
 *      no turn --round: txn{compare mod_rev == 0; PUT key (our lease)}--> ours
 *      ours --each round: keepalive the lease, collect--> ours
 *      ours --our lease expires (broker dead or stalled), or we stop--> no turn
 *      a previous run of our broker id's --round: revoke its lease--> no turn
 *      another's --round: skip (stats.gc_rounds_skipped)--> another's
 *
 *    Deleting an unreferenced object twice is harmless, so the turn is only
 *    about cost (one LIST and one DELETE per object per round, not one per
 *    broker): no commit is fenced by it. A long round renews the lease as
 *    it goes. A round reads the references with one metadata scan (after
 *    the listing) and deletes in batches (S3 DeleteObjects: 1000 keys per
 *    request, where one DELETE per object cost 251,873 requests in the
 *    issue-29 run).
 *  - Start-up never waits for GC: the first round runs on a worker one
 *    interval after open, like every other, so a large backlog of
 *    unreferenced objects (a cluster restarted after falling behind) delays
 *    nothing a client sees.
 * Threads: loop thread, except gc_work which runs on a worker and reads only
 * the stores plus a snapshot of in-flight object keys (and gc_lease, which
 * only that worker touches: one round at a time, gc_running). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/diag.h"
#include "base/uuid.h"
#include "log/logstore_int.h"
#include "log/wal_format.h"
#include "meta/meta_keys.h"

#define GC_INTERVAL_MS 60000
#define GC_TURN_TTL_MIN_MS 10000
#define GC_DELETE_BATCH 1000 /* keys per batched delete (S3 DeleteObjects' limit) */

static void logstate_init_head(ls_logstate_t *lg)
{
    memset(&lg->head, 0, sizeof lg->head);
    lg->head.max_timestamp = -1;
    lg->head.max_timestamp_offset = -1;
}

ls_logstate_t *ls_logstate_get(ls_logstore_t *ls, int64_t log_id, bool create)
{
    ls_logstate_t *lg = ls_i64map_get(&ls->logs, log_id);
    if (lg || !create) return lg;
    lg = LS_NEW(ls_logstate_t);
    lg->log_id = log_id;
    logstate_init_head(lg);
    lg->waiters.next = lg->waiters.prev = &lg->waiters;
    ls_i64map_put(&ls->logs, log_id, lg);
    return lg;
}

static ls_status load_heads(ls_logstore_t *ls, int64_t *rev, char *err, size_t errlen)
{
    uint8_t end[64];
    size_t elen = ls_meta_prefix_end(LS_KEY_HEAD, strlen(LS_KEY_HEAD), end);
    ls_kvlist_t l;
    ls_status st = ls_meta_scan(ls->meta, LS_KEY_HEAD, strlen(LS_KEY_HEAD), end, elen, 0, 0, &l);
    if (st != LS_OK) {
        snprintf(err, errlen, "reading log heads from metadata: %s", ls_status_str(st));
        return st;
    }
    for (size_t i = 0; i < l.n; i++) {
        int64_t id = ls_log_id_from_head_key((const char *)l.v[i].key, l.v[i].klen);
        ls_head_t h;
        if (id < 0 || ls_head_decode(l.v[i].val, l.v[i].vlen, &h) != LS_OK) {
            snprintf(err, errlen, "corrupt log head at key %.*s (%zu bytes)", (int)l.v[i].klen,
                     (const char *)l.v[i].key, l.v[i].vlen);
            ls_kvlist_free(&l);
            return LS_ECORRUPT;
        }
        ls_logstate_t *lg = ls_logstate_get(ls, id, true);
        ls_head_clear(&lg->head);
        lg->head = h;
        lg->head_rev = l.v[i].mod_rev;
    }
    *rev = l.revision;
    ls_kvlist_free(&l);
    /* log starts advanced by trims (log_trim.c) */
    if ((st = ls_meta_scan_prefix(ls->meta, LS_KEY_START, 0, &l)) != LS_OK) {
        snprintf(err, errlen, "reading log starts from metadata: %s", ls_status_str(st));
        return st;
    }
    for (size_t i = 0; i < l.n; i++) {
        int64_t id = ls_log_id_from_start_key((const char *)l.v[i].key, l.v[i].klen);
        ls_start_t s;
        if (id < 0 || ls_start_decode(l.v[i].val, l.v[i].vlen, &s) != LS_OK) {
            snprintf(err, errlen, "corrupt log start record at key %.*s (%zu bytes)",
                     (int)l.v[i].klen, (const char *)l.v[i].key, l.v[i].vlen);
            ls_kvlist_free(&l);
            return LS_ECORRUPT;
        }
        ls_logstate_t *lg = ls_logstate_get(ls, id, true);
        lg->log_start = s.log_start;
        lg->trimmed_bytes = s.trimmed_bytes;
    }
    ls_kvlist_free(&l);
    return LS_OK;
}

/* ---------------------------------------------------------------------- GC */

typedef struct gc_job {
    ls_logstore_t *ls;
    char **inflight_keys;
    int ninflight;
    int64_t started_ms; /* wall clock when inflight_keys was taken */
    int deleted;
    ls_status st;
    uv_work_t work;
} gc_job_t;

/* skip: the keys of flushes in flight when the pass began. A pass on a worker
 * also skips objects sealed at or after sealed_before_ms (less 5 s of clock
 * slop): they may have been sealed after the skip list was taken and be
 * committing right now, and an object must never be deleted between its PUT
 * and its commit (with wal.gc.grace.ms=0 nothing else protects it). */
/* The lease of the GC turn (design note): renewed while it lives, else the
 * turn taken anew with a fresh lease. LS_OK: this broker collects this
 * round; LS_EEXISTS: another broker's turn; else a store error. Worker. */
static ls_status gc_take_turn(ls_logstore_t *ls)
{
    if (ls->gc_lease) {
        ls_status st = ls_meta_lease_keepalive(ls->meta, ls->gc_lease);
        if (st == LS_OK) return LS_OK; /* the key lives with the lease */
        if (st != LS_ENOTFOUND) return st;
        ls->gc_lease = 0; /* expired: our turn ended; try again like anyone */
    }
    int64_t lease = 0;
    ls_status st = ls_meta_lease_grant(ls->meta, ls->gc_turn_ttl_ms, &lease);
    if (st != LS_OK) return st;
    char owner[32];
    snprintf(owner, sizeof owner, "broker-%d", (int)ls->cfg.broker_id);
    size_t klen = strlen(LS_KEY_WALGC_TURN);
    ls_meta_cmp_t cmp = {.kind = LS_META_CMP_MOD_REV, .key = LS_KEY_WALGC_TURN, .klen = klen};
    ls_meta_op_t op = {.kind = LS_META_OP_PUT,
                       .key = LS_KEY_WALGC_TURN,
                       .klen = klen,
                       .val = owner,
                       .vlen = strlen(owner),
                       .lease = lease};
    for (int attempt = 0; attempt < 2; attempt++) {
        st = ls_meta_txn(ls->meta, &cmp, 1, &op, 1, NULL);
        if (st == LS_OK) {
            ls->gc_lease = lease;
            return LS_OK;
        }
        if (st != LS_ECONFLICT) break;
        /* held under our broker id by a previous run of this broker (a
         * restart; the registration makes ids unique among live brokers):
         * end it rather than wait out its TTL, as compaction's claims do */
        ls_kv_t kv;
        st = ls_meta_get(ls->meta, LS_KEY_WALGC_TURN, &kv);
        if (st == LS_ENOTFOUND) continue; /* expired meanwhile */
        if (st != LS_OK) break;
        bool previous_run = kv.vlen == strlen(owner) && memcmp(kv.val, owner, kv.vlen) == 0;
        int64_t old = kv.lease;
        ls_kv_free(&kv);
        st = LS_ECONFLICT;
        if (!previous_run || !old || attempt > 0) break;
        ls_meta_lease_revoke(ls->meta, old);
    }
    ls_meta_lease_revoke(ls->meta, lease);
    return st == LS_ECONFLICT ? LS_EEXISTS : st;
}

/* turn: take the GC turn first (a round of the timer); false for an
 * explicit collection (ls_logstore_gc_now), which runs whoever holds it. */
static ls_status gc_run(ls_logstore_t *ls, char **skip, int nskip, int64_t sealed_before_ms,
                        bool turn, int *deleted)
{
    *deleted = 0;
    if (turn) {
        ls_status st = gc_take_turn(ls);
        if (st != LS_OK) return st;
    }
    uint64_t freed = 0;
    ls_objinfo_t *objs = NULL;
    size_t n = 0;
    ls_status st = ls_objstore_list(ls->os, "wal/", &objs, &n);
    if (st != LS_OK) return st;
    /* the references, read AFTER the listing (one scan, not a read per
     * object): an object listed but committed later has its key by then,
     * and one committed before is referenced unless fully compacted */
    ls_kvlist_t refs;
    if ((st = ls_meta_scan_prefix(ls->meta, LS_KEY_WALOBJ, 0, &refs)) != LS_OK) {
        ls_objinfo_free(objs, n);
        return st;
    }
    size_t plen = strlen(LS_KEY_WALOBJ), r = 0;
    const char **garbage = LS_NEWN(const char *, n ? n : 1);
    uint64_t *sizes = LS_NEWN(uint64_t, n ? n : 1);
    size_t ngarbage = 0;
    int64_t now = ls_clock_wall_ms();
    for (size_t i = 0; i < n; i++) { /* both sorted: one merge walk */
        while (r < refs.n && strcmp((const char *)refs.v[r].key + plen, objs[i].key) < 0)
            r++;
        if (r < refs.n && strcmp((const char *)refs.v[r].key + plen, objs[i].key) == 0) continue;
        if (now - objs[i].mtime_ms < ls->cfg.gc_grace_ms) continue;
        int64_t sealed = ls_wal_key_time(objs[i].key);
        if (sealed_before_ms != INT64_MAX && (sealed < 0 || sealed >= sealed_before_ms - 5000))
            continue;
        bool busy = false;
        for (int j = 0; j < nskip && !busy; j++)
            busy = strcmp(skip[j], objs[i].key) == 0;
        if (busy) continue;
        sizes[ngarbage] = objs[i].size;
        garbage[ngarbage++] = objs[i].key;
    }
    /* batched deletes (S3: up to 1000 keys per request); a long round keeps
     * its turn between batches (a lost one only costs requests) */
    int64_t renewed = now;
    for (size_t at = 0; at < ngarbage; at += GC_DELETE_BATCH) {
        size_t m = ngarbage - at < GC_DELETE_BATCH ? ngarbage - at : GC_DELETE_BATCH;
        if (turn && ls->gc_lease && ls_clock_wall_ms() - renewed > ls->gc_turn_ttl_ms / 3) {
            renewed = ls_clock_wall_ms();
            if (ls_meta_lease_keepalive(ls->meta, ls->gc_lease) == LS_ENOTFOUND) ls->gc_lease = 0;
        }
        ls_status dst = ls_objstore_del_many(ls->os, garbage + at, m);
        if (dst != LS_OK) {
            LS_WARN_RL("gc", "deleting %zu unreferenced WAL objects (from %s) failed: %s", m,
                       garbage[at], ls_status_str(dst));
            continue;
        }
        *deleted += (int)m;
        for (size_t i = at; i < at + m; i++)
            freed += sizes[i];
    }
    ls_free(garbage);
    ls_free(sizes);
    ls_kvlist_free(&refs);
    ls_objinfo_free(objs, n);
    /* one line per pass: at steady load every flush's object ends here */
    if (*deleted)
        LS_INFO("gc",
                "deleted %d unreferenced WAL objects (%llu bytes): never committed, or "
                "fully compacted",
                *deleted, (unsigned long long)freed);
    return st;
}

ls_status ls_logstore_gc_now(ls_logstore_t *ls, int *deleted)
{
    int d = 0;
    char **skip = NULL;
    int nskip = 0;
    for (ls_flush_t *f = ls->queue_head; f; f = f->next)
        nskip++;
    skip = LS_NEWN(char *, nskip ? nskip : 1);
    nskip = 0;
    for (ls_flush_t *f = ls->queue_head; f; f = f->next)
        skip[nskip++] = f->key;
    ls_status st = gc_run(ls, skip, nskip, INT64_MAX, false, &d); /* on the loop: skip is exact */
    ls_free(skip);
    if (deleted) *deleted = d;
    return st;
}

static void gc_work(uv_work_t *w)
{
    gc_job_t *j = w->data;
    j->st = gc_run(j->ls, j->inflight_keys, j->ninflight, j->started_ms, true, &j->deleted);
}

static void gc_after(uv_work_t *w, int status)
{
    gc_job_t *j = w->data;
    if (j->st == LS_EEXISTS) {
        j->ls->stats.gc_rounds_skipped++; /* another broker's turn */
    } else {
        if (j->st != LS_OK)
            LS_WARN_RL("gc", "WAL garbage collection pass failed: %s", ls_status_str(j->st));
        j->ls->stats.gc_rounds++;
        j->ls->stats.gc_deleted += (uint64_t)j->deleted;
    }
    j->ls->gc_running = false;
    for (int i = 0; i < j->ninflight; i++)
        ls_free(j->inflight_keys[i]);
    ls_free(j->inflight_keys);
    ls_logstore_t *ls = j->ls;
    ls_free(j);
    ls_logstore_check_shutdown(ls);
}

static void gc_timer_cb(uv_timer_t *t)
{
    ls_logstore_t *ls = t->data;
    ls_log_watch_resync_if_lost(ls);
    ls_logstore_gc_start(ls);
}

void ls_logstore_gc_start(ls_logstore_t *ls)
{
    if (ls->gc_running || ls->shutting_down) return;
    gc_job_t *j = LS_NEW(gc_job_t);
    j->ls = ls;
    int n = 0;
    for (ls_flush_t *f = ls->queue_head; f; f = f->next)
        n++;
    j->inflight_keys = LS_NEWN(char *, n ? n : 1);
    j->started_ms = ls_clock_wall_ms();
    for (ls_flush_t *f = ls->queue_head; f; f = f->next)
        j->inflight_keys[j->ninflight++] = ls_strdup(f->key);
    ls->gc_running = true;
    j->work.data = j;
    uv_queue_work(ls->loop, &j->work, gc_work, gc_after);
}

/* --------------------------------------------------------------- lifecycle */

ls_logstore_t *ls_logstore_open(uv_loop_t *loop, ls_meta_t *meta, ls_objstore_t *os,
                                const ls_logstore_config_t *cfg, char *err, size_t errlen)
{
    ls_logstore_t *ls = LS_NEW(ls_logstore_t);
    ls->loop = loop;
    ls->meta = meta;
    ls->os = os;
    ls->cfg = *cfg;
    if (ls->cfg.max_inflight_flushes < 1) ls->cfg.max_inflight_flushes = 1;
    if (ls->cfg.read_ahead_bytes <= 0) ls->cfg.read_ahead_bytes = LS_READ_AHEAD_DEFAULT;
    ls_random_bytes(&ls->boot_nonce, sizeof ls->boot_nonce);
    ls_i64map_init(&ls->logs);
    ls->cache = ls_read_cache_new((size_t)cfg->read_cache_max_bytes);
    /* keeps up to a quarter of the cache (at most 64 MiB) of released read
     * buffers for the next reads, outside the cache's own bound */
    size_t pool_max = (size_t)cfg->read_cache_max_bytes / 4;
    ls->bufpool = ls_bufpool_new(pool_max < ((size_t)64 << 20) ? pool_max : (size_t)64 << 20);
    int64_t rev = 0;
    if (ls_wal_init(ls, err, errlen) != LS_OK) {
        ls_logstore_free(ls);
        return NULL;
    }
    if (load_heads(ls, &rev, err, errlen) != LS_OK ||
        ls_log_watch_start(ls, rev, err, errlen) != LS_OK) {
        ls_wal_abandon(ls);
        ls_logstore_free(ls);
        return NULL;
    }
    ls_wal_start(ls);
    uv_timer_init(loop, &ls->gc_timer);
    ls->gc_timer.data = ls;
    ls->handles_open++;
    uint64_t every =
        (uint64_t)(cfg->gc_grace_ms < GC_INTERVAL_MS ? cfg->gc_grace_ms : GC_INTERVAL_MS);
    if (every < 100) every = 100;
    ls->gc_turn_ttl_ms =
        3 * (int64_t)every > GC_TURN_TTL_MIN_MS ? 3 * (int64_t)every : GC_TURN_TTL_MIN_MS;
    /* no collection before serving (design note): the first round is a
     * timer round like the others */
    uv_timer_start(&ls->gc_timer, gc_timer_cb, every, every);
    LS_INFO("log", "log storage open: %zu logs", ls->logs.count);
    return ls;
}

static void handle_closed(uv_handle_t *h)
{
    ls_logstore_t *ls = h->data;
    ls->handles_open--;
    ls_logstore_check_shutdown(ls);
}

static void pool_closed(void *arg)
{
    ls_logstore_t *ls = arg;
    ls->handles_open--;
    ls_logstore_check_shutdown(ls);
}

void ls_logstore_check_shutdown(ls_logstore_t *ls)
{
    if (!ls->shutting_down || !ls_wal_idle(ls) || ls->gc_running) return;
    if (ls->watch_resyncing) return;
    if (ls->nprefetches) return; /* read-ahead GETs in flight call back here */
    if (!uv_is_closing((uv_handle_t *)&ls->seal_timer)) {
        uv_close((uv_handle_t *)&ls->seal_timer, handle_closed);
        uv_close((uv_handle_t *)&ls->gc_timer, handle_closed);
        ls_workpool_close(ls->wal_pool, pool_closed, ls); /* idle: ls_wal_idle */
        ls->wal_pool = NULL;
        ls_log_watch_cancel(ls);
        if (ls->watch_async_ready) uv_close((uv_handle_t *)&ls->watch_async, handle_closed);
        return;
    }
    if (ls->handles_open == 0 && ls->shutdown_done) {
        void (*done)(void *) = ls->shutdown_done;
        ls->shutdown_done = NULL;
        done(ls->shutdown_arg);
    }
}

void ls_logstore_shutdown(ls_logstore_t *ls, void (*done)(void *arg), void *arg)
{
    ls->shutting_down = true;
    if (ls->stats.store_gets) {
        uint64_t reused, allocated;
        ls_bufpool_counts(ls->bufpool, &reused, &allocated);
        LS_INFO("log",
                "read path: %llu cache hits, %llu store GETs (%llu compacted-object footers) "
                "returning %llu bytes; read cache peak %zu of %zu bytes; read buffers: %llu "
                "reused, %llu allocated",
                (unsigned long long)ls->stats.cache_hits, (unsigned long long)ls->stats.store_gets,
                (unsigned long long)ls->stats.footer_gets,
                (unsigned long long)ls->stats.store_get_bytes, ls_read_cache_peak_bytes(ls->cache),
                ls_read_cache_max_bytes(ls->cache), (unsigned long long)reused,
                (unsigned long long)allocated);
    }
    ls->shutdown_done = done;
    ls->shutdown_arg = arg;
    /* wake every long-poll so it answers now rather than at its deadline */
    size_t it = 0;
    int64_t id;
    void *v;
    while (ls_i64map_next(&ls->logs, &it, &id, &v))
        ls_reader_wake(ls, v);
    ls_wal_seal_now(ls);
    ls_logstore_check_shutdown(ls);
}

void ls_logstore_free(ls_logstore_t *ls)
{
    if (!ls) return;
    /* a broker that stops hands the GC turn on at once, not after its TTL */
    if (ls->gc_lease) ls_meta_lease_revoke(ls->meta, ls->gc_lease);
    ls_log_watch_free(ls);
    size_t it = 0;
    int64_t id;
    void *v;
    while (ls_i64map_next(&ls->logs, &it, &id, &v)) {
        ls_logstate_t *lg = v;
        ls_head_clear(&lg->head);
        for (int i = 0; i < lg->nidx; i++)
            ls_idx_clear(&lg->idx[i]);
        ls_free(lg->idx);
        ls_reader_replay_clear(lg);
        ls_aborted_free(lg);
        ls_free(lg);
    }
    ls_i64map_free(&ls->logs);
    ls_read_cache_free(ls->cache);
    ls_bufpool_release(ls->bufpool);
    ls_free(ls);
}

/* ----------------------------------------------------------------- queries */

void ls_logstore_info(ls_logstore_t *ls, int64_t log_id, ls_log_info_t *out)
{
    ls_logstate_t *lg = ls_logstate_get(ls, log_id, false);
    memset(out, 0, sizeof *out);
    out->max_timestamp = -1;
    out->max_timestamp_offset = -1;
    if (!lg) return;
    out->log_start = lg->log_start;
    out->high_watermark = lg->head.next_offset;
    out->max_timestamp = lg->head.max_timestamp;
    out->max_timestamp_offset = lg->head.max_timestamp_offset;
    out->size_bytes = lg->head.size_bytes - lg->trimmed_bytes;
    out->last_stable_offset = ls_log_txn_lso(&lg->head);
    out->fenced = lg->head.fenced;
}

int ls_logstore_producers(ls_logstore_t *ls, int64_t log_id, ls_log_producer_t **out)
{
    ls_logstate_t *lg = ls_logstate_get(ls, log_id, false);
    *out = NULL;
    if (!lg || lg->head.nproducers == 0) return 0;
    int n = lg->head.nproducers;
    *out = LS_NEWN(ls_log_producer_t, n);
    for (int i = 0; i < n; i++) {
        const ls_pstate_t *ps = &lg->head.producers[i];
        ls_log_producer_t *p = &(*out)[i];
        p->producer_id = ps->producer_id;
        p->epoch = ps->epoch;
        p->last_sequence = ps->nbatches > 0 ? ps->batches[ps->nbatches - 1].last_seq : -1;
        p->last_timestamp = ps->last_timestamp ? ps->last_timestamp : -1;
        p->txn_seq = ps->txn_seq;
        p->txn_first_offset = ps->txn_seq > 0 ? ps->txn_first_offset : -1;
    }
    return n;
}

void ls_logstore_set_entry_time_fn(ls_logstore_t *ls, ls_entry_time_fn fn) { ls->entry_time = fn; }

void ls_logstore_stats(const ls_logstore_t *ls, ls_logstore_stats_t *out)
{
    *out = ls->stats;
    out->buffered_bytes = ls->buffered_bytes;
    out->cache_bytes = (int64_t)ls_read_cache_bytes(ls->cache);
    ls_bufpool_counts(ls->bufpool, &out->read_buffers_reused, &out->read_buffers_allocated);
}

/* ------------------------------------------------------------------- fence */

typedef struct fence_job {
    ls_logstore_t *ls;
    int64_t log_id;
    ls_status_cb cb;
    void *arg;
    ls_status st;
    int64_t rev;
    uv_work_t work;
} fence_job_t;

static void fence_work(uv_work_t *w)
{
    fence_job_t *j = w->data;
    ls_meta_t *meta = j->ls->meta;
    char key[64];
    ls_log_head_key(key, sizeof key, j->log_id);
    for (int attempt = 0; attempt < 8; attempt++) {
        ls_kv_t kv;
        ls_head_t h;
        int64_t rev = 0;
        ls_status st = ls_meta_get(meta, key, &kv);
        if (st == LS_ENOTFOUND) {
            memset(&h, 0, sizeof h);
            h.max_timestamp = h.max_timestamp_offset = -1;
        } else if (st != LS_OK) {
            j->st = st;
            return;
        } else {
            rev = kv.mod_rev;
            st = ls_head_decode(kv.val, kv.vlen, &h);
            ls_kv_free(&kv);
            if (st != LS_OK) {
                j->st = st;
                return;
            }
        }
        h.fenced = true;
        ls_buf_t b;
        ls_buf_init(&b);
        ls_head_encode(&h, &b);
        ls_head_clear(&h);
        ls_meta_cmp_t cmp = {
            .kind = LS_META_CMP_MOD_REV, .key = key, .klen = strlen(key), .rev = rev};
        ls_meta_op_t op = {
            .kind = LS_META_OP_PUT, .key = key, .klen = strlen(key), .val = b.data, .vlen = b.len};
        j->st = ls_meta_txn(meta, &cmp, 1, &op, 1, &j->rev);
        ls_buf_free(&b);
        if (j->st != LS_ECONFLICT) return;
    }
}

static void fence_after(uv_work_t *w, int status)
{
    fence_job_t *j = w->data;
    if (j->st == LS_OK) {
        ls_logstate_t *lg = ls_logstate_get(j->ls, j->log_id, true);
        lg->head.fenced = true;
        if (j->rev > lg->head_rev) lg->head_rev = j->rev;
        ls_reader_drop_log(j->ls, lg);
        ls_reader_wake(j->ls, lg);
    } else {
        LS_WARN("log", "fencing log %016llx failed: %s", (unsigned long long)j->log_id,
                ls_status_str(j->st));
    }
    j->cb(j->arg, j->st);
    ls_free(j);
}

void ls_logstore_fence(ls_logstore_t *ls, int64_t log_id, ls_status_cb cb, void *arg)
{
    fence_job_t *j = LS_NEW(fence_job_t);
    j->ls = ls;
    j->log_id = log_id;
    j->cb = cb;
    j->arg = arg;
    j->work.data = j;
    uv_queue_work(ls->loop, &j->work, fence_work, fence_after);
}
