/* The transaction coordinator of a broker (design note in txcoord.h). */
#include "server/txcoord.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/diag.h"
#include "base/thread.h"
#include "records/records.h"
#include "stream/catalog.h"

/* The markers of one decision, handed from the ls-txn thread to the loop.
 * Owned by both until the later of "the loop acknowledged every append" and
 * "the thread stopped waiting" (refs). */
typedef struct marker_job {
    struct marker_job *next;
    ls_log_marker_t marker;
    int64_t *log_ids;
    int nlogs;
    int pending; /* appends not yet acknowledged (loop only) */
    ls_status st;
    bool done; /* under the coordinator's mutex */
    int refs;  /* under the coordinator's mutex */
    ls_txcoord_t *c;
} marker_job_t;

typedef struct tid_node {
    struct tid_node *next;
    char *tid;
    int64_t not_before; /* monotonic ms: a retry waits until then (0: at once) */
    int attempts;       /* finishes that failed retriably */
} tid_node_t;

#define RETRY_MS 100  /* after a retriable failure: attempt x this */
#define MAX_RETRIES 8 /* then the sweep takes over */

/* Threads finishing decisions: each waits on the loop for its markers, so
 * several decisions' markers share flushes. The first also sweeps. */
#define FINISHERS 4

struct ls_txcoord {
    ls_txcoord_opts_t o;
    ls_txn_store_t *store;
    pthread_t threads[FINISHERS];
    int nstarted;
    uv_async_t async; /* marker jobs -> loop */
    pthread_mutex_t mu;
    pthread_cond_t cv; /* the thread waits on it: work, a kick, acknowledgements, closing */
    tid_node_t *queue, *queue_tail;
    const char *busy[FINISHERS]; /* the tid each finisher is working on, or NULL */
    marker_job_t *jobs;          /* waiting for the loop */
    bool kicked;
    bool closing;
};

/* ---- loop side ---- */

static void job_unref(marker_job_t *j)
{
    ls_txcoord_t *c = j->c;
    pthread_mutex_lock(&c->mu);
    bool last = --j->refs == 0;
    pthread_mutex_unlock(&c->mu);
    if (!last) return;
    ls_free(j->log_ids);
    ls_free(j);
}

static void job_acked(marker_job_t *j)
{
    ls_txcoord_t *c = j->c;
    pthread_mutex_lock(&c->mu);
    j->done = true;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    job_unref(j);
}

static void on_marker_appended(void *arg, ls_status st, int64_t base_offset, int64_t log_start)
{
    marker_job_t *j = arg;
    /* a log that is gone (topic deleted) keeps no transaction to close */
    if (st != LS_OK && st != LS_ENOTFOUND && st != LS_EFENCED && j->st == LS_OK) j->st = st;
    if (--j->pending == 0) job_acked(j);
}

static void run_job(marker_job_t *j)
{
    uint8_t batch[LS_RB_MARKER_SIZE];
    size_t len = ls_records_marker(batch, j->marker.producer_id, j->marker.epoch, j->marker.commit,
                                   0, ls_clock_wall_ms());
    j->pending = j->nlogs + 1; /* released below, so no acknowledgement ends the job early */
    for (int i = 0; i < j->nlogs; i++) {
        ls_append_t a = {.log_id = j->log_ids[i],
                         .data = batch,
                         .len = len,
                         .offset_count = 1,
                         .max_timestamp = ls_be64_get(batch + LS_RB_OFF_MAX_TIMESTAMP),
                         .producer = {.producer_id = j->marker.producer_id,
                                      .producer_epoch = j->marker.epoch,
                                      .base_sequence = -1,
                                      .last_sequence = -1},
                         .txn_seq = j->marker.txn_seq,
                         .marker = &j->marker};
        ls_logstore_append(j->c->o.logs, &a, on_marker_appended, j); /* copies batch */
    }
    if (--j->pending == 0) job_acked(j);
}

static void on_async(uv_async_t *a)
{
    ls_txcoord_t *c = a->data;
    pthread_mutex_lock(&c->mu);
    marker_job_t *list = c->jobs;
    c->jobs = NULL;
    pthread_mutex_unlock(&c->mu);
    while (list) {
        marker_job_t *j = list;
        list = j->next;
        run_job(j);
    }
}

/* ---- the ls-txn thread ---- */

static ls_status log_markers(void *arg, const ls_txn_record_t *rec)
{
    ls_txcoord_t *c = arg;
    marker_job_t *j = LS_NEW(marker_job_t);
    j->c = c;
    j->marker = (ls_log_marker_t){.producer_id = rec->marker_producer_id,
                                  .epoch = rec->marker_epoch,
                                  .txn_seq = rec->txn_seq,
                                  .commit = rec->state == LS_TXN_PREPARE_COMMIT};
    j->log_ids = ls_calloc((size_t)rec->npartitions, sizeof *j->log_ids);
    for (int i = 0; i < rec->npartitions; i++)
        j->log_ids[i] =
            rec->partitions[i].stream_no << LS_LOG_PARTITION_BITS | rec->partitions[i].partition;
    j->nlogs = rec->npartitions;
    j->refs = 2; /* this thread and the loop */
    pthread_mutex_lock(&c->mu);
    if (c->closing) {
        pthread_mutex_unlock(&c->mu);
        ls_free(j->log_ids);
        ls_free(j);
        return LS_ESHUTDOWN;
    }
    j->next = c->jobs;
    c->jobs = j;
    pthread_mutex_unlock(&c->mu);
    uv_async_send(&c->async);
    pthread_mutex_lock(&c->mu);
    while (!j->done && !c->closing)
        pthread_cond_wait(&c->cv, &c->mu);
    ls_status st = j->done ? j->st : LS_ESHUTDOWN;
    pthread_mutex_unlock(&c->mu);
    job_unref(j);
    return st;
}

static ls_status group_marker(void *arg, const ls_txn_record_t *rec, const char *group)
{
    ls_txcoord_t *c = arg;
    return c->o.group_marker(c->o.arg, group, rec->marker_producer_id, rec->txn_seq,
                             rec->state == LS_TXN_PREPARE_COMMIT);
}

static ls_status new_pid(void *arg, int64_t *id)
{
    ls_txcoord_t *c = arg;
    return c->o.new_producer_id(c->o.arg, id);
}

static bool mine(void *arg, const char *tid)
{
    ls_txcoord_t *c = arg;
    pthread_mutex_lock(&c->mu);
    bool closing = c->closing; /* a stopping broker cuts its sweep short */
    pthread_mutex_unlock(&c->mu);
    return !closing && c->o.mine(c->o.arg, tid);
}

static void sweep(ls_txcoord_t *c)
{
    ls_txn_sweep_stats_t st;
    ls_status rc = ls_txn_sweep(c->store, mine, c, &st);
    if (rc != LS_OK) {
        LS_WARN_RL("txn",
                   "transaction sweep: reading the transactional ids failed (%s); next "
                   "sweep in %lld ms",
                   ls_status_str(rc), (long long)c->o.sweep_interval_ms);
        return;
    }
    if (st.aborted || st.finished || st.expired || st.failed)
        LS_INFO("txn",
                "transaction sweep: %d ids of this broker, %d timed out and aborted, %d "
                "decisions finished, %d expired ids forgotten, %d left for the next sweep",
                st.visited, st.aborted, st.finished, st.expired, st.failed);
}

typedef struct finisher {
    ls_txcoord_t *c;
    int index;
} finisher_t;

/* With the mutex held: appends n to the queue. */
static void append(ls_txcoord_t *c, tid_node_t *n)
{
    if (c->queue_tail)
        c->queue_tail->next = n;
    else
        c->queue = n;
    c->queue_tail = n;
}

/* With the mutex held: is tid queued? */
static bool requeued(const ls_txcoord_t *c, const char *tid)
{
    for (const tid_node_t *n = c->queue; n; n = n->next)
        if (strcmp(n->tid, tid) == 0) return true;
    return false;
}

/* With the mutex held: unlinks and returns the first due queued tid no other
 * finisher is working on (one decision's markers are written by one thread
 * at a time, so a log gets each marker once), or NULL. */
static tid_node_t *take_queued(ls_txcoord_t *c, int64_t now, int64_t *wake)
{
    tid_node_t *prev = NULL;
    for (tid_node_t *n = c->queue; n; prev = n, n = n->next) {
        if (n->not_before > now) {
            if (n->not_before < *wake) *wake = n->not_before;
            continue;
        }
        bool busy = false;
        for (int i = 0; i < FINISHERS && !busy; i++)
            busy = c->busy[i] && strcmp(c->busy[i], n->tid) == 0;
        if (busy) continue;
        if (prev)
            prev->next = n->next;
        else
            c->queue = n->next;
        if (c->queue_tail == n) c->queue_tail = prev;
        return n;
    }
    return NULL;
}

static void *coord_main(void *arg)
{
    finisher_t *f = arg;
    ls_txcoord_t *c = f->c;
    int self = f->index;
    bool sweeps = self == 0;
    ls_free(f);
    int64_t next_sweep = sweeps ? ls_clock_mono_ms() + c->o.sweep_interval_ms : INT64_MAX;
    pthread_mutex_lock(&c->mu);
    while (!c->closing) {
        int64_t wake = next_sweep;
        tid_node_t *n = take_queued(c, ls_clock_mono_ms(), &wake);
        if (n) {
            c->busy[self] = n->tid;
            pthread_mutex_unlock(&c->mu);
            ls_status st = ls_txn_finish(c->store, n->tid);
            /* a lost head compare, a flush that failed: again shortly, so
             * the client's next transaction does not wait for the sweep */
            bool retry = st != LS_OK && st != LS_ESHUTDOWN && ls_status_retriable(st) &&
                         n->attempts < MAX_RETRIES;
            if (st != LS_OK && st != LS_ESHUTDOWN && !retry)
                LS_WARN_RL("txn",
                           "finishing transaction '%s' failed (%s); the sweep retries it within "
                           "%lld ms",
                           n->tid, ls_status_str(st), (long long)c->o.sweep_interval_ms);
            pthread_mutex_lock(&c->mu);
            c->busy[self] = NULL;
            pthread_cond_broadcast(&c->cv); /* the same tid may be queued again */
            if (retry && !requeued(c, n->tid)) {
                n->attempts++;
                n->not_before = ls_clock_mono_ms() + RETRY_MS * n->attempts;
                n->next = NULL;
                append(c, n);
            } else {
                ls_free(n->tid);
                ls_free(n);
            }
            continue;
        }
        if (sweeps && (c->kicked || ls_clock_mono_ms() >= next_sweep)) {
            c->kicked = false;
            pthread_mutex_unlock(&c->mu);
            sweep(c);
            next_sweep = ls_clock_mono_ms() + c->o.sweep_interval_ms;
            pthread_mutex_lock(&c->mu);
            continue;
        }
        ls_cond_wait_until(&c->cv, &c->mu, wake);
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

/* ---- public ---- */

ls_txcoord_t *ls_txcoord_start(const ls_txcoord_opts_t *o, char *err, size_t errlen)
{
    ls_txcoord_t *c = LS_NEW(ls_txcoord_t);
    c->o = *o;
    ls_txn_store_opts_t so = {.meta = o->meta,
                              .cfg = o->cfg,
                              .markers = {log_markers, group_marker, c},
                              .new_producer_id = new_pid,
                              .pid_arg = c};
    c->store = ls_txn_store_new(&so);
    pthread_mutex_init(&c->mu, NULL);
    ls_cond_init_mono(&c->cv);
    uv_async_init(o->loop, &c->async, on_async);
    c->async.data = c;
    for (int i = 0; i < FINISHERS; i++) {
        finisher_t *f = LS_NEW(finisher_t);
        f->c = c;
        f->index = i;
        int rc =
            ls_thread_start(&c->threads[i], i == 0 ? "ls-txn" : "ls-txn-finish", coord_main, f);
        if (rc != 0) {
            ls_free(f);
            snprintf(err, errlen, "starting the transaction coordinator threads: %s", strerror(rc));
            ls_txcoord_free(c);
            return NULL;
        }
        c->nstarted++;
    }
    return c;
}

ls_txn_store_t *ls_txcoord_store(ls_txcoord_t *c) { return c->store; }

void ls_txcoord_finish(ls_txcoord_t *c, const char *tid)
{
    pthread_mutex_lock(&c->mu);
    if (!c->closing && !requeued(c, tid)) {
        tid_node_t *n = LS_NEW(tid_node_t);
        n->tid = ls_strdup(tid);
        append(c, n);
        pthread_cond_broadcast(&c->cv);
    }
    pthread_mutex_unlock(&c->mu);
}

void ls_txcoord_kick(ls_txcoord_t *c)
{
    pthread_mutex_lock(&c->mu);
    c->kicked = true;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

void ls_txcoord_stop(ls_txcoord_t *c)
{
    if (!c) return;
    pthread_mutex_lock(&c->mu);
    c->closing = true;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    for (int i = 0; i < c->nstarted; i++)
        pthread_join(c->threads[i], NULL);
    c->nstarted = 0;
}

static void on_async_closed(uv_handle_t *h)
{
    ls_txcoord_t *c = h->data;
    /* jobs the loop never picked up were abandoned by the stopped thread */
    while (c->jobs) {
        marker_job_t *j = c->jobs;
        c->jobs = j->next;
        job_unref(j);
    }
    while (c->queue) {
        tid_node_t *n = c->queue;
        c->queue = n->next;
        ls_free(n->tid);
        ls_free(n);
    }
    ls_txn_store_free(c->store);
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    ls_free(c);
}

void ls_txcoord_free(ls_txcoord_t *c)
{
    if (!c) return;
    ls_txcoord_stop(c);
    if (uv_is_closing((uv_handle_t *)&c->async))
        on_async_closed((uv_handle_t *)&c->async); /* already closed by a walk of the loop */
    else
        uv_close((uv_handle_t *)&c->async, on_async_closed);
}
