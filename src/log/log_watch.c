/* Cross-broker visibility: other brokers' commits reach this broker's log
 * state through a metadata watch.
 *
 * A commit (on any broker) writes, in one txn, a log's head and one index
 * entry; compaction and retention replace or delete index entries. This
 * module watches everything under "/ls/" from the revision at which the heads
 * were loaded and applies, on the loop and in revision order:
 *   head PUT          -> the log's head, when newer than ours (mod_rev);
 *                        state is created for logs this broker never saw
 *   index PUT / DEL   -> ls_reader_index_put / _del (the key-value view of
 *                        the stored index; buffered while a load runs);
 *                        consecutive DELs of one loaded index (a swap's
 *                        txn) -> ls_reader_index_del_many, one pass
 *   log start PUT     -> ls_trim_learn (start and trimmed bytes only grow)
 * then wakes the long-polls of every log whose head moved.
 *
 * Invariants
 *  W1  One watch over both prefixes keeps a txn's head and index changes in
 *      one ordered stream: a fetch woken by a head never misses that head's
 *      index entry (a per-prefix watch could deliver the head first).
 *  W2  A head is never replaced by an older one: this broker's own commits
 *      come back through the watch too, and a commit completing on the loop
 *      after the watch delivered a newer foreign head keeps the newer one
 *      (wal_writer.c compares revisions).
 *  W3  A watch that falls behind the store's history (callback with no
 *      events) triggers a resync: heads and log starts reread, every loaded
 *      index dropped (reloaded on the next read), watch restarted from the
 *      reread's revision. Until then the broker serves what it knows.
 *  W4  An index event at or below the revision a loaded index's scan
 *      observed (lg->idx_rev; a load's replays likewise) is not applied: the
 *      index already holds that key's state or a newer one, and a late old
 *      event would undo it until the next event of the key (seen after this
 *      broker's own unfold swaps, which reload the index, lake/unfold.c).
 *  W5  One loop step applies at most WATCH_STEP_EVENTS events, cut only
 *      between revisions (a txn's events, at most LS_META_MAX_TXN_OPS, go
 *      together, so W1 holds), and signals itself for the rest: a burst
 *      (another broker's compaction of thousands of entries, a resumed
 *      watch) is spread over loop iterations instead of holding the loop
 *      (issue 29 §8), and requests are served between them.
 * Threads: the callback runs on the store's watch thread and only copies
 * the relevant events into a queue (mutex) and signals an async handle;
 * the rest runs on the loop, except the resync's store calls (a worker). */
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/diag.h"
#include "base/loop_lag.h"
#include "log/logstore_int.h"
#include "meta/meta_keys.h"

#define WATCH_STEP_EVENTS 512

struct ls_watch_ev {
    struct ls_watch_ev *next;
    ls_meta_ev_kind kind;
    int64_t mod_rev;
    size_t klen, vlen;
    uint8_t *val;
    char key[];
};

static bool has_prefix(const uint8_t *k, size_t klen, const char *p)
{
    size_t n = strlen(p);
    return klen >= n && memcmp(k, p, n) == 0;
}

static void on_events(void *arg, const ls_meta_event_t *ev, size_t n)
{
    ls_logstore_t *ls = arg;
    ls_watch_ev_t *head = NULL, **tail = &head;
    for (size_t i = 0; i < n; i++) {
        const ls_kv_t *kv = &ev[i].kv;
        if (!has_prefix(kv->key, kv->klen, LS_KEY_HEAD) &&
            !has_prefix(kv->key, kv->klen, LS_KEY_LOG) &&
            !has_prefix(kv->key, kv->klen, LS_KEY_START))
            continue;
        ls_watch_ev_t *e = ls_malloc(sizeof *e + kv->klen + 1 + kv->vlen);
        e->next = NULL;
        e->kind = ev[i].kind;
        e->mod_rev = kv->mod_rev;
        e->klen = kv->klen;
        memcpy(e->key, kv->key, kv->klen);
        e->key[kv->klen] = 0;
        e->val = (uint8_t *)e->key + kv->klen + 1;
        e->vlen = ev[i].kind == LS_META_EV_PUT ? kv->vlen : 0;
        if (e->vlen) memcpy(e->val, kv->val, e->vlen);
        *tail = e;
        tail = &e->next;
    }
    pthread_mutex_lock(&ls->watch_mu);
    if (!ev) ls->watch_lost = true;
    if (head) {
        *ls->watch_tail = head;
        ls->watch_tail = tail;
    }
    if ((head || !ev) && ls->watch_async_ready) uv_async_send(&ls->watch_async);
    pthread_mutex_unlock(&ls->watch_mu);
}

/* Applies a stored head if it is newer than ours; true if it moved. */
static bool apply_head(ls_logstore_t *ls, int64_t log_id, const uint8_t *val, size_t vlen,
                       int64_t mod_rev)
{
    ls_logstate_t *lg = ls_logstate_get(ls, log_id, true);
    if (mod_rev <= lg->head_rev) return false;
    ls_head_t h;
    if (ls_head_decode(val, vlen, &h) != LS_OK) {
        LS_ERROR("log", "corrupt head of log %016llx at revision %lld (%zu bytes); ignoring it",
                 (unsigned long long)log_id, (long long)mod_rev, vlen);
        return false;
    }
    ls_head_clear(&lg->head);
    lg->head = h;
    lg->head_rev = mod_rev;
    lg->head_stale = false;
    return true;
}

static void apply_event(ls_logstore_t *ls, const ls_watch_ev_t *e, ls_logstate_t **woken,
                        int *nwoken, int cap)
{
    int64_t id, last;
    if (has_prefix((const uint8_t *)e->key, e->klen, LS_KEY_HEAD)) {
        id = ls_log_id_from_head_key(e->key, e->klen);
        if (id < 0 || e->kind != LS_META_EV_PUT) return;
        if (apply_head(ls, id, e->val, e->vlen, e->mod_rev) && *nwoken < cap)
            woken[(*nwoken)++] = ls_logstate_get(ls, id, false);
        return;
    }
    if (has_prefix((const uint8_t *)e->key, e->klen, LS_KEY_START)) {
        /* a trim (retention, DeleteRecords) on any broker: log_trim.c */
        ls_start_t st;
        id = ls_log_id_from_start_key(e->key, e->klen);
        if (id >= 0 && e->kind == LS_META_EV_PUT && ls_start_decode(e->val, e->vlen, &st) == LS_OK)
            ls_trim_learn(ls, id, st.log_start, st.trimmed_bytes, st.index_start);
        return;
    }
    if (ls_log_abort_key_parse(e->key, e->klen, &id) == 0) {
        /* another broker's abort marker; deletions below the log start come
         * with trims, which the start record's event applies, and key
         * compaction's (with the marker) are applied here */
        ls_aborted_t a;
        int64_t first;
        ls_logstate_t *alg = ls_logstate_get(ls, id, false);
        if (alg && e->kind == LS_META_EV_PUT && ls_aborted_decode(e->val, e->vlen, &a) == LS_OK)
            ls_aborted_add(alg, &a, 1);
        else if (alg && e->kind == LS_META_EV_DEL &&
                 ls_log_abort_key_first(e->key, e->klen, &first) == 0)
            ls_aborted_forget(alg, first);
        return;
    }
    if (ls_log_idx_key_parse(e->key, e->klen, &id, &last) != 0) return;
    ls_logstate_t *lg = ls_logstate_get(ls, id, false);
    if (!lg) return;
    /* a loaded index already reflects every change up to the revision its
     * scan observed: an older event arriving late would undo a newer state
     * (e.g. one this broker applied itself and then reloaded) */
    if (lg->idx_state == 2 && lg->idx_rev > 0 && e->mod_rev <= lg->idx_rev) return;
    ls->watch_ev_rev = e->mod_rev; /* for the replay of a load in flight */
    if (e->kind == LS_META_EV_DEL) {
        ls_reader_index_del(ls, lg, last);
        ls->watch_ev_rev = 0;
        return;
    }
    ls_idx_entry_t ie;
    if (ls_idx_decode(e->val, e->vlen, &ie) != LS_OK) {
        LS_ERROR("log",
                 "corrupt index entry at %s (%zu bytes); dropping the index of log "
                 "%016llx so it is reloaded",
                 e->key, e->vlen, (unsigned long long)id);
        ls_reader_drop_log(ls, lg);
        return;
    }
    ls_reader_index_put(ls, lg, &ie);
    ls->watch_ev_rev = 0;
    ls_idx_clear(&ie);
}

/* The deletion of a loaded index's key, as apply_event would apply it: its
 * log and last offset. */
static ls_logstate_t *loaded_idx_del(ls_logstore_t *ls, const ls_watch_ev_t *e, int64_t *last)
{
    int64_t id;
    if (e->kind != LS_META_EV_DEL || ls_log_idx_key_parse(e->key, e->klen, &id, last) != 0)
        return NULL;
    ls_logstate_t *lg = ls_logstate_get(ls, id, false);
    return lg && lg->idx_state == 2 ? lg : NULL;
}

/* Applies e and the deletions of the same loaded index right after it (a
 * compaction swap's txn) in one pass over that index; returns the next event
 * to apply, or e itself when e is no such deletion. Frees what it applied. */
static ls_watch_ev_t *apply_idx_dels(ls_logstore_t *ls, ls_watch_ev_t *e)
{
    int64_t last;
    ls_logstate_t *lg = loaded_idx_del(ls, e, &last), *next_lg;
    if (!lg) return e;
    int64_t *lasts = NULL;
    int n = 0, cap = 0;
    do {
        if (!(lg->idx_rev > 0 && e->mod_rev <= lg->idx_rev)) { /* W4 */
            if (n == cap) {
                cap = cap ? 2 * cap : 32;
                lasts = ls_realloc(lasts, (size_t)cap * sizeof *lasts);
            }
            lasts[n++] = last;
        }
        ls_watch_ev_t *next = e->next;
        ls_free(e);
        e = next;
        next_lg = e ? loaded_idx_del(ls, e, &last) : NULL;
    } while (e && next_lg == lg);
    ls_reader_index_del_many(ls, lg, lasts, n);
    ls_free(lasts);
    return e;
}

/* ------------------------------------------------------------------ resync */

typedef struct resync_job {
    ls_logstore_t *ls;
    ls_kvlist_t heads, starts; /* starts read after heads: both apply idempotently */
    ls_status st;
    uv_work_t work;
} resync_job_t;

static void resync_work(uv_work_t *w)
{
    resync_job_t *j = w->data;
    ls_logstore_t *ls = j->ls;
    if (ls->watch) {
        ls_meta_watch_cancel(ls->meta, ls->watch);
        ls->watch = NULL;
    }
    j->st = ls_meta_scan_prefix(ls->meta, LS_KEY_HEAD, 0, &j->heads);
    if (j->st == LS_OK) j->st = ls_meta_scan_prefix(ls->meta, LS_KEY_START, 0, &j->starts);
    if (j->st == LS_OK)
        j->st = ls_meta_watch(ls->meta, LS_KEY_ROOT, strlen(LS_KEY_ROOT), j->heads.revision,
                              on_events, ls, &ls->watch);
}

static void resync_after(uv_work_t *w, int status)
{
    resync_job_t *j = w->data;
    ls_logstore_t *ls = j->ls;
    ls->watch_resyncing = false;
    if (j->st == LS_OK && status == 0) {
        for (size_t i = 0; i < j->heads.n; i++) {
            const ls_kv_t *kv = &j->heads.v[i];
            int64_t id = ls_log_id_from_head_key((const char *)kv->key, kv->klen);
            if (id >= 0 && apply_head(ls, id, kv->val, kv->vlen, kv->mod_rev))
                ls_reader_wake(ls, ls_logstate_get(ls, id, false));
        }
        for (size_t i = 0; i < j->starts.n; i++) {
            const ls_kv_t *kv = &j->starts.v[i];
            int64_t id = ls_log_id_from_start_key((const char *)kv->key, kv->klen);
            ls_start_t st;
            if (id >= 0 && ls_start_decode(kv->val, kv->vlen, &st) == LS_OK)
                ls_trim_learn(ls, id, st.log_start, st.trimmed_bytes, st.index_start);
        }
        size_t it = 0;
        int64_t id;
        void *v;
        while (ls_i64map_next(&ls->logs, &it, &id, &v))
            ls_reader_drop_log(ls, v);
        LS_INFO("log", "metadata watch resynchronized at revision %lld",
                (long long)j->heads.revision);
    } else {
        LS_ERROR("log",
                 "resynchronizing the metadata watch failed: %s; retrying at the next "
                 "GC tick (other brokers' commits stay invisible here until then)",
                 ls_status_str(j->st));
        pthread_mutex_lock(&ls->watch_mu);
        ls->watch_lost = true;
        pthread_mutex_unlock(&ls->watch_mu);
    }
    ls_kvlist_free(&j->heads); /* zeroed if never read */
    ls_kvlist_free(&j->starts);
    ls_free(j);
    ls_logstore_check_shutdown(ls);
}

void ls_log_watch_resync_if_lost(ls_logstore_t *ls)
{
    pthread_mutex_lock(&ls->watch_mu);
    bool lost = ls->watch_lost;
    ls->watch_lost = false;
    pthread_mutex_unlock(&ls->watch_mu);
    if (!lost || ls->watch_resyncing || ls->shutting_down) return;
    LS_WARN("log", "metadata watch fell behind the store's history; rereading heads and "
                   "log starts");
    resync_job_t *j = LS_NEW(resync_job_t);
    j->ls = ls;
    j->work.data = j;
    ls->watch_resyncing = true;
    uv_queue_work(ls->loop, &j->work, resync_work, resync_after);
}

/* ------------------------------------------------------------------- drain */

static void on_async(uv_async_t *a)
{
    ls_logstore_t *ls = a->data;
    pthread_mutex_lock(&ls->watch_mu);
    ls_watch_ev_t *list = ls->watch_head, **cut = &list;
    uint64_t n = 0;
    int64_t rev = 0;
    while (*cut && (n < WATCH_STEP_EVENTS || (*cut)->mod_rev == rev)) { /* W5 */
        rev = (*cut)->mod_rev;
        cut = &(*cut)->next;
        n++;
    }
    ls->watch_head = *cut;
    *cut = NULL;
    if (!ls->watch_head) ls->watch_tail = &ls->watch_head;
    bool more = ls->watch_head != NULL;
    pthread_mutex_unlock(&ls->watch_mu);
    ls->stats.watch_events += n;
    if (n > ls->stats.watch_step_max) ls->stats.watch_step_max = n;
    ls_logstate_t *woken[64];
    int nwoken = 0;
    ls_loop_work_begin("metadata watch events");
    for (ls_watch_ev_t *e = list, *n; e; e = n) {
        if (nwoken == 64) { /* flush wakes in a long batch */
            for (int i = 0; i < nwoken; i++)
                ls_reader_wake(ls, woken[i]);
            nwoken = 0;
        }
        n = apply_idx_dels(ls, e);
        if (n != e) continue;
        n = e->next;
        apply_event(ls, e, woken, &nwoken, 64);
        ls_free(e);
    }
    for (int i = 0; i < nwoken; i++)
        ls_reader_wake(ls, woken[i]);
    ls_loop_work_end();
    if (more && !uv_is_closing((uv_handle_t *)&ls->watch_async))
        uv_async_send(&ls->watch_async); /* the rest in the next loop iteration */
    ls_log_watch_resync_if_lost(ls);
}

ls_status ls_log_watch_start(ls_logstore_t *ls, int64_t after_rev, char *err, size_t errlen)
{
    pthread_mutex_init(&ls->watch_mu, NULL);
    ls->watch_tail = &ls->watch_head;
    ls->watch_started = true;
    ls_status st = ls_meta_watch(ls->meta, LS_KEY_ROOT, strlen(LS_KEY_ROOT), after_rev, on_events,
                                 ls, &ls->watch);
    if (st != LS_OK) {
        snprintf(err, errlen, "watching log heads in the metadata store: %s: %s", ls_status_str(st),
                 ls_meta_error(ls->meta));
        return st;
    }
    /* the handle exists only once nothing can fail: events queued before
     * it are signalled now */
    uv_async_init(ls->loop, &ls->watch_async, on_async);
    ls->watch_async.data = ls;
    ls->handles_open++;
    pthread_mutex_lock(&ls->watch_mu);
    ls->watch_async_ready = true;
    if (ls->watch_head || ls->watch_lost) uv_async_send(&ls->watch_async);
    pthread_mutex_unlock(&ls->watch_mu);
    return LS_OK;
}

void ls_log_watch_cancel(ls_logstore_t *ls)
{
    if (!ls->watch_started) return;
    if (ls->watch) {
        ls_meta_watch_cancel(ls->meta, ls->watch);
        ls->watch = NULL;
    }
}

void ls_log_watch_free(ls_logstore_t *ls)
{
    if (!ls->watch_started) return;
    ls_log_watch_cancel(ls);
    for (ls_watch_ev_t *e = ls->watch_head, *n; e; e = n) {
        n = e->next;
        ls_free(e);
    }
    pthread_mutex_destroy(&ls->watch_mu);
    ls->watch_started = false;
}
