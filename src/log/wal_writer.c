/* WAL writer: append -> WAL object -> metadata commit -> acknowledgement.
 *
 * State machine of one flush (one WAL object):
 *
 *   OPEN --seal--> PUTTING --PUT returns--> PUT_DONE --first in queue,
 *        no commit running--> COMMITTING --txn returns--> (callbacks, freed)
 *
 * The flushes form a pipeline: the queue holds, in seal order, at most one
 * COMMITTING flush (the oldest) and behind it flushes whose PUTs run or are
 * done. So a WAL object is written while the commit of an older one runs,
 * and the wait of an acknowledgement is max(PUT, commit) per flush ahead of
 * it rather than their sum; what waits is only the commit order.
 *
 * Invariants
 *  I1  Flushes commit strictly in seal order, one commit at a time. PUTs of
 *      several flushes may be in flight together (up to max_inflight_flushes),
 *      but offsets are assigned only at commit, so each log's offsets follow
 *      the order its entries were appended, across flushes.
 *  I2  An entry is acknowledged only after its object is durable (PUT
 *      returned) and the metadata txn that assigned its offset committed.
 *  I3  A log has at most one section per flush, hence one index entry per
 *      log per flush: metadata work grows with flushes x logs, not batches.
 *  I4  buffered_bytes = bytes of the open flush + sealed, uncommitted flushes;
 *      above buffer_max_bytes the network layer is told to stop reading.
 *  I5  Idempotent entries: sequence checks run at append against the
 *      committed producer state plus uncommitted entries of the same log; a
 *      retry of an in-flight batch waits for the original's outcome.
 *  I6  Transactions (log_txn.h): the rules run at append against the
 *      committed head (for a precise answer) and again while building the
 *      head the commit writes, against the head it replaces; a batch they
 *      refuse there fails its section retriably. An abort marker's aborted
 *      record is written in the same txn as its head and index entry, so a
 *      reader that sees the marker's offset can find the range.
 *  I7  Pipelining never reorders outcomes: only the oldest queued flush
 *      commits or is answered, so a flush's entries are answered (OK or
 *      failed) after every entry of every older flush, whichever PUT
 *      returned first. A flush PUT behind a running commit is acknowledged
 *      only once its own commit is done (I2): nothing of durability is
 *      traded for the overlap.
 *  I8  A failure does not leave holes behind it in a log: when a section of
 *      log L fails (its PUT or its commit; a fence excepted), every section
 *      of L sealed before the failure is known (doom_before) is doomed and
 *      fails retriably without being committed, and L's section in the open
 *      flush is dropped and failed. So a log's acknowledged entries keep
 *      their append order: no entry is acknowledged behind an earlier entry
 *      of its log that failed, for any producer, idempotent or not.
 *
 * Seal policy (group commit): seal the open flush when it is non-empty,
 * fewer than max_inflight flushes are sealed and unfinished, at least
 * flush_min_interval_ms passed since the last seal, and either nothing is in
 * flight (an idle broker flushes at once: latency = one PUT + one commit),
 * or the only flush in flight is committing and its commit is due to end
 * within one PUT (pipelining: the object lands as the commit ends, moving
 * averages of both durations tell when), or the flush reached
 * flush_max_bytes, or its age reached flush_linger_ms. Sealing behind a
 * running commit no earlier than that keeps group commit intact when
 * commits are the slow part: a flush sealed too early would only wait for
 * the commit with a smaller batch, and the next one behind it.
 * Sealing from a zero timer, not inside append, lets one loop iteration's
 * worth of requests share an object.
 *
 * Failure: a failed PUT or commit fails the entries of that flush with a
 * retriable status; nothing of it becomes visible (its object, if written,
 * is garbage for GC). If the flush held idempotent entries, every later
 * uncommitted flush and the open one fail too: their sequence numbers build
 * on the failed entries, and committing them would leave a sequence gap.
 * Otherwise the later sections of the failed logs fail (I8). A flush left
 * with no section to commit is failed without a metadata txn. A commit split
 * over several txns (the store's op limit) stops when the first one, which
 * holds the object's reference key, fails: GC deletes objects without one.
 * An ambiguous commit failure marks the touched heads stale; the next commit
 * rereads them from the store before building on them.
 *
 * Threads: everything here runs on the loop thread except put_work and
 * commit_work, which touch only their flush (and the thread-safe stores).
 *
 * ls_wal_check_invariants() checks I1, I3, I4 and I8 (and the queue
 * accounting they rest on) over the whole writer; it runs after every seal
 * and commit when invariant checking is on (base/check.h). I2 and I7 are
 * checked inline: an entry is acknowledged with LS_OK only from
 * commit_after, for the oldest queued flush, whose PUT succeeded and whose
 * section committed.
 *
 * Crash points (docs/RELIABILITY.md): wal.object_written (after a PUT),
 * wal.object_written_behind_commit (on the loop, a PUT returned while an
 * older flush's commit runs), wal.committed (before any acknowledgement). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/check.h"
#include "base/clock.h"
#include "base/crashpoint.h"
#include "base/diag.h"
#include "base/loop_lag.h"
#include "base/metrics.h"
#include "log/logstore_int.h"
#include "log/wal_format.h"
#include "meta/meta_keys.h"

/* Metrics (docs/OPERATIONS.md "Metrics"), counted on the loop at commit. */
static const double batch_bounds[] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096};
static LS_METRIC_COUNTER(m_objects, "lakestream_wal_objects",
                         "WAL objects committed (one PUT and one metadata commit each).", NULL);
static LS_METRIC_COUNTER(m_bytes, "lakestream_wal_bytes", "Bytes of WAL objects committed.", NULL);
static LS_METRIC_COUNTER(m_failures, "lakestream_wal_flush_failures",
                         "WAL flushes that failed (their batches are answered retriably).", NULL);
static LS_METRIC_HISTOGRAM(m_linger, "lakestream_wal_linger_seconds",
                           "Time a WAL object stayed open collecting batches before it was sealed.",
                           ls_metrics_latency_bounds, NULL);
static LS_METRIC_HISTOGRAM(m_flush, "lakestream_wal_flush_duration_seconds",
                           "Time from sealing a WAL object to its commit (PUT, then metadata).",
                           ls_metrics_latency_bounds, NULL);
static LS_METRIC_HISTOGRAM(m_group, "lakestream_wal_group_commit_batches",
                           "Record batches per committed WAL object (group commit size).",
                           batch_bounds, NULL);

#define MAX_PRODUCERS_PER_LOG 1024
#define MAX_MARKERS_PER_SECTION 64 /* 3 + 64 ops per section < etcd's 128 per txn */
#define COMMIT_ATTEMPTS 8

static void schedule_seal(ls_logstore_t *ls);
static void pump_commits(ls_logstore_t *ls);

/* ---------------------------------------------------------------- pressure */

static void update_pressure(ls_logstore_t *ls)
{
    bool p = ls->buffered_bytes > ls->cfg.buffer_max_bytes;
    if (p != ls->pressure) {
        ls->pressure = p;
        if (ls->pressure_cb) ls->pressure_cb(ls->pressure_arg, p);
    }
}

bool ls_logstore_under_pressure(const ls_logstore_t *ls) { return ls->pressure; }

void ls_logstore_on_pressure_change(ls_logstore_t *ls, void (*cb)(void *arg, bool pressure),
                                    void *arg)
{
    ls->pressure_cb = cb;
    ls->pressure_arg = arg;
}

/* ------------------------------------------------------------- idempotence */

typedef enum {
    IDEM_OK,
    IDEM_DUP_COMMITTED,
    IDEM_DUP_PENDING,
    IDEM_OUT_OF_ORDER,
    IDEM_FENCED
} idem_t;

static ls_pstate_t *pstate_find(ls_head_t *h, int64_t pid)
{
    for (int i = 0; i < h->nproducers; i++)
        if (h->producers[i].producer_id == pid) return &h->producers[i];
    return NULL;
}

static idem_t idem_check(ls_logstate_t *lg, const ls_producer_ref_t *pr, int64_t *dup_offset,
                         ls_pending_t **dup_pending)
{
    ls_pending_t *latest = NULL;
    for (ls_pending_t *p = lg->idem_head; p; p = p->pnext) {
        if (p->producer.producer_id != pr->producer_id) continue;
        if (p->producer.producer_epoch == pr->producer_epoch &&
            p->producer.base_sequence == pr->base_sequence &&
            p->producer.last_sequence == pr->last_sequence) {
            *dup_pending = p;
            return IDEM_DUP_PENDING;
        }
        latest = p;
    }
    ls_pstate_t *ps = pstate_find(&lg->head, pr->producer_id);
    if (ps && ps->epoch == pr->producer_epoch)
        for (int i = 0; i < ps->nbatches; i++)
            if (ps->batches[i].first_seq == pr->base_sequence &&
                ps->batches[i].last_seq == pr->last_sequence) {
                *dup_offset = ps->batches[i].base_offset;
                return IDEM_DUP_COMMITTED;
            }
    int16_t cur_epoch;
    int32_t last_seq = -1;
    bool have_seq;
    if (latest) {
        cur_epoch = latest->producer.producer_epoch;
        last_seq = latest->producer.last_sequence;
        have_seq = true;
    } else if (ps) {
        cur_epoch = ps->epoch;
        have_seq = ps->nbatches > 0;
        if (have_seq) last_seq = ps->batches[ps->nbatches - 1].last_seq;
    } else {
        return pr->base_sequence == 0 ? IDEM_OK : IDEM_OUT_OF_ORDER;
    }
    if (pr->producer_epoch < cur_epoch) return IDEM_FENCED;
    if (pr->producer_epoch > cur_epoch || !have_seq)
        return pr->base_sequence == 0 ? IDEM_OK : IDEM_OUT_OF_ORDER;
    int32_t expected = last_seq == INT32_MAX ? 0 : last_seq + 1;
    return pr->base_sequence == expected ? IDEM_OK : IDEM_OUT_OF_ORDER;
}

static void idem_unlink(ls_logstate_t *lg, ls_pending_t *p)
{
    ls_pending_t **pp = &lg->idem_head, *prev = NULL;
    while (*pp && *pp != p) {
        prev = *pp;
        pp = &(*pp)->pnext;
    }
    if (!*pp) return;
    *pp = p->pnext;
    if (lg->idem_tail == p) lg->idem_tail = prev;
    p->pnext = NULL;
}

/* Records a committed idempotent batch in a head's producer state. */
static void pstate_push(ls_head_t *h, const ls_producer_ref_t *pr, int64_t base_offset,
                        int64_t max_timestamp)
{
    ls_pstate_t *ps = pstate_find(h, pr->producer_id);
    if (!ps) {
        if (h->nproducers >= MAX_PRODUCERS_PER_LOG) {
            /* forget the least recently written producer (kept first) that
             * has no transaction state; only when all have, the oldest */
            int victim = 0;
            for (int i = 0; i < h->nproducers; i++)
                if (!h->producers[i].txn_seq && !h->producers[i].ended_seq) {
                    victim = i;
                    break;
                }
            memmove(&h->producers[victim], &h->producers[victim + 1],
                    (size_t)(h->nproducers - victim - 1) * sizeof(ls_pstate_t));
            h->nproducers--;
        }
        h->producers = ls_realloc(h->producers, (size_t)(h->nproducers + 1) * sizeof(ls_pstate_t));
        ps = &h->producers[h->nproducers++];
        memset(ps, 0, sizeof *ps);
        ps->producer_id = pr->producer_id;
        ps->epoch = pr->producer_epoch;
    } else {
        /* move to the end: most recently written last */
        ls_pstate_t tmp = *ps;
        int i = (int)(ps - h->producers);
        memmove(&h->producers[i], &h->producers[i + 1],
                (size_t)(h->nproducers - i - 1) * sizeof(ls_pstate_t));
        h->producers[h->nproducers - 1] = tmp;
        ps = &h->producers[h->nproducers - 1];
    }
    if (ps->epoch != pr->producer_epoch) {
        ps->epoch = pr->producer_epoch;
        ps->nbatches = 0;
    }
    if (ps->nbatches == LS_PRODUCER_BATCHES) {
        memmove(&ps->batches[0], &ps->batches[1], (LS_PRODUCER_BATCHES - 1) * sizeof(ls_pbatch_t));
        ps->nbatches--;
    }
    ps->batches[ps->nbatches].first_seq = pr->base_sequence;
    ps->batches[ps->nbatches].last_seq = pr->last_sequence;
    ps->batches[ps->nbatches].base_offset = base_offset;
    ps->nbatches++;
    ps->last_timestamp = max_timestamp;
}

static void head_copy(ls_head_t *dst, const ls_head_t *src)
{
    *dst = *src;
    dst->producers = src->nproducers
                         ? ls_memdup(src->producers, (size_t)src->nproducers * sizeof(ls_pstate_t))
                         : NULL;
}

/* ------------------------------------------------------------------ append */

static ls_flush_t *flush_new(ls_logstore_t *ls)
{
    ls_flush_t *f = LS_NEW(ls_flush_t);
    f->ls = ls;
    f->state = FLUSH_OPEN;
    f->opened_ms = ls_clock_mono_ms();
    f->opened_us = ls_clock_mono_us();
    ls_buf_init(&f->footer);
    return f;
}

void ls_logstore_append(ls_logstore_t *ls, const ls_append_t *a, ls_append_cb cb, void *arg)
{
    if (ls->shutting_down) {
        cb(arg, LS_ESHUTDOWN, -1, -1);
        return;
    }
    ls_logstate_t *lg = ls_logstate_get(ls, a->log_id, true);
    if (lg->head.fenced) {
        cb(arg, LS_ENOTFOUND, -1, -1);
        return;
    }
    if (a->producer.producer_id >= 0 && !a->marker) { /* control batches carry no sequence */
        int64_t dup_offset = -1;
        ls_pending_t *dup = NULL;
        switch (idem_check(lg, &a->producer, &dup_offset, &dup)) {
        case IDEM_OK: break;
        case IDEM_DUP_COMMITTED: cb(arg, LS_OK, dup_offset, lg->log_start); return;
        case IDEM_DUP_PENDING: {
            ls_dup_waiter_t *w = LS_NEW(ls_dup_waiter_t);
            w->cb = cb;
            w->arg = arg;
            w->next = dup->dups;
            dup->dups = w;
            return;
        }
        case IDEM_OUT_OF_ORDER:
            /* a producer sees this as fatal (transactional) or resets its
             * sequences: the operator gets a line naming the batch */
            LS_WARN_RL("log",
                       "log %lld: batch of producer %lld epoch %d with sequences %d..%d refused "
                       "as out of order (a gap after the producer's last appended batch)",
                       (long long)a->log_id, (long long)a->producer.producer_id,
                       a->producer.producer_epoch, a->producer.base_sequence,
                       a->producer.last_sequence);
            cb(arg, LS_ERANGE, -1, -1);
            return;
        case IDEM_FENCED: cb(arg, LS_EFENCED, -1, -1); return;
        }
    }
    /* Transactions (log_txn.h), checked here against the committed head for
     * a precise answer, and again at commit against the head it replaces. */
    if (a->marker) {
        if (ls_log_txn_marker_plan(&lg->head, a->marker) == LS_MARK_NOOP) {
            cb(arg, LS_OK, -1, lg->log_start);
            return;
        }
        if (lg->open_section && lg->open_section->nmarkers >= MAX_MARKERS_PER_SECTION) {
            /* each marker may add an aborted record to the section's commit
             * txn, which must stay within the store's op limit: next flush */
            cb(arg, LS_EAGAIN, -1, -1);
            return;
        }
    } else if (a->producer.producer_id >= 0) {
        switch (ls_log_txn_check_batch(&lg->head, a->producer.producer_id,
                                       a->producer.producer_epoch, a->txn_seq)) {
        case LS_TXB_OK: break;
        case LS_TXB_FENCED: cb(arg, LS_EFENCED, -1, -1); return;
        case LS_TXB_ENDED:
        case LS_TXB_OPEN_TRANSACTION: cb(arg, LS_EINVAL, -1, -1); return;
        case LS_TXB_BEHIND: cb(arg, LS_EAGAIN, -1, -1); return; /* the producer retries */
        }
    } else if (a->txn_seq) {
        cb(arg, LS_EINVAL, -1, -1); /* a transaction needs a producer id */
        return;
    }
    if (!ls->open) ls->open = flush_new(ls);
    ls_flush_t *f = ls->open;
    ls_section_t *sec = lg->open_section;
    if (!sec) {
        sec = LS_NEW(ls_section_t);
        sec->log = lg;
        sec->max_timestamp = -1;
        ls_buf_init(&sec->buf);
        if (f->last_section)
            f->last_section->next = sec;
        else
            f->sections = sec;
        f->last_section = sec;
        f->nsections++;
        lg->open_section = sec;
    }
    ls_pending_t *p = LS_NEW(ls_pending_t);
    p->section = sec;
    p->cb = cb;
    p->arg = arg;
    p->rel_offset = sec->offsets;
    p->offset_count = a->offset_count;
    p->max_timestamp = a->max_timestamp;
    p->producer = a->producer;
    p->txn_seq = a->txn_seq;
    if (a->marker) {
        p->is_marker = true;
        p->marker = *a->marker;
        p->producer.producer_id = -1; /* not in the idempotence bookkeeping */
        sec->nmarkers++;
    }
    if (sec->last)
        sec->last->next = p;
    else
        sec->first = p;
    sec->last = p;
    if (p->producer.producer_id >= 0) {
        if (lg->idem_tail)
            lg->idem_tail->pnext = p;
        else
            lg->idem_head = p;
        lg->idem_tail = p;
    }
    ls_buf_append(&sec->buf, a->data, a->len);
    if (a->max_timestamp > sec->max_timestamp) {
        sec->max_timestamp = a->max_timestamp;
        sec->max_timestamp_rel = sec->offsets + a->offset_count - 1;
    }
    sec->offsets += a->offset_count;
    sec->entries++;
    f->bytes += a->len;
    ls->buffered_bytes += (int64_t)a->len;
    update_pressure(ls);
    schedule_seal(ls);
}

/* -------------------------------------------------------------- callbacks */

static void finish_pending(ls_pending_t *p, ls_status st, int64_t base, int64_t log_start)
{
    p->cb(p->arg, st, base, log_start);
    for (ls_dup_waiter_t *w = p->dups, *next; w; w = next) {
        next = w->next;
        w->cb(w->arg, st, base, log_start);
        ls_free(w);
    }
}

static void section_free(ls_section_t *sec)
{
    for (ls_pending_t *p = sec->first, *next; p; p = next) {
        next = p->next;
        ls_free(p);
    }
    ls_buf_free(&sec->buf);
    ls_chunk_release(sec->chunk);
    ls_head_clear(&sec->head_before);
    ls_head_clear(&sec->head_after);
    ls_free(sec->aborted);
    ls_free(sec);
}

static void flush_free(ls_flush_t *f)
{
    for (ls_section_t *s = f->sections, *next; s; s = next) {
        next = s->next;
        section_free(s);
    }
    ls_buf_free(&f->footer);
    ls_free(f->put_err);
    ls_free(f);
}

static bool flush_has_idempotent(const ls_flush_t *f)
{
    for (ls_section_t *s = f->sections; s; s = s->next)
        for (ls_pending_t *p = s->first; p; p = p->next)
            if (p->producer.producer_id >= 0) return true;
    return false;
}

/* Fails every entry of sections in f whose status is not OK (all, if st given). */
static void fail_sections(ls_flush_t *f, ls_status st)
{
    for (ls_section_t *s = f->sections; s; s = s->next) {
        ls_status sst = st != LS_OK ? st : s->st;
        if (sst == LS_OK) continue;
        if (s->log->open_section == s) s->log->open_section = NULL;
        for (ls_pending_t *p = s->first; p; p = p->next) {
            if (p->producer.producer_id >= 0) idem_unlink(s->log, p);
            finish_pending(p, sst, -1, -1);
        }
    }
}

/* An earlier failure invalidates idempotent sequences built on it. */
static void doom_later(ls_logstore_t *ls, ls_flush_t *failed)
{
    for (ls_flush_t *q = failed->next; q; q = q->next)
        q->doomed = true;
    if (ls->open) {
        ls_flush_t *o = ls->open;
        ls->open = NULL;
        fail_sections(o, LS_EAGAIN);
        ls->buffered_bytes -= (int64_t)o->bytes;
        flush_free(o);
    }
}

/* I8: the sections of the logs whose sections of f failed (a fence aside;
 * whole: every section, e.g. a failed PUT) fail in every flush sealed
 * since, and the open flush's sections of those logs are dropped and
 * failed now, after f's own entries were answered (I7). Not for sections
 * that were doomed themselves: entries appended after the failure was
 * answered have nothing failed ahead of them. */
static void doom_failed_logs(ls_logstore_t *ls, ls_flush_t *f, ls_status whole)
{
    bool any = false;
    for (ls_section_t *s = f->sections; s; s = s->next) {
        ls_status st = whole != LS_OK ? whole : s->st;
        if (st == LS_OK || st == LS_ENOTFOUND || s->doomed) continue;
        s->log->doom_before = ls->seals;
        s->log->doom_mark = true;
        any = true;
    }
    if (!any) return;
    for (ls_flush_t *q = f->next; q; q = q->next)
        for (ls_section_t *s = q->sections; s; s = s->next)
            if (q->seq < s->log->doom_before) s->doomed = true;
    ls_section_t *dropped = NULL;
    ls_flush_t *o = ls->open;
    if (o) {
        ls_section_t **pp = &o->sections, *prev = NULL;
        while (*pp) {
            ls_section_t *s = *pp;
            if (!s->log->doom_mark) {
                prev = s;
                pp = &s->next;
                continue;
            }
            *pp = s->next;
            if (o->last_section == s) o->last_section = prev;
            o->nsections--;
            o->bytes -= s->buf.len;
            ls->buffered_bytes -= (int64_t)s->buf.len;
            s->log->open_section = NULL;
            s->next = dropped;
            dropped = s;
        }
        if (!o->nsections) {
            ls->open = NULL;
            flush_free(o);
        }
        update_pressure(ls);
    }
    for (ls_section_t *s = f->sections; s; s = s->next)
        s->log->doom_mark = false;
    for (ls_section_t *s = dropped, *next; s; s = next) {
        next = s->next;
        for (ls_pending_t *p = s->first; p; p = p->next) {
            if (p->producer.producer_id >= 0) idem_unlink(s->log, p);
            finish_pending(p, LS_EAGAIN, -1, -1);
        }
        section_free(s);
    }
}

/* Every section of f is doomed (I8): nothing to commit. */
static bool flush_all_doomed(const ls_flush_t *f)
{
    for (const ls_section_t *s = f->sections; s; s = s->next)
        if (!s->doomed) return false;
    return true;
}

/* Moving average of a duration (a quarter of each new sample). */
static void estimate(int64_t *est, int64_t sample_us)
{
    if (sample_us < 0) sample_us = 0;
    *est = *est ? *est + (sample_us - *est) / 4 : sample_us;
}

/* -------------------------------------------------------------------- seal */

static void put_work(ls_work_t *w)
{
    ls_flush_t *f = w->data;
    ls_logstore_t *ls = f->ls;
    struct iovec *iov = LS_NEWN(struct iovec, f->nsections + 2);
    int n = 0;
    iov[n].iov_base = f->header;
    iov[n++].iov_len = sizeof f->header;
    for (ls_section_t *s = f->sections; s; s = s->next) {
        iov[n].iov_base = s->chunk->data;
        iov[n++].iov_len = s->chunk->len;
    }
    iov[n].iov_base = f->footer.data;
    iov[n++].iov_len = f->footer.len;
    ls_free(f->put_err);
    f->put_err = NULL;
    f->put_st = ls_objstore_put(ls->os, f->key, iov, n, LS_OBJSTORE_PUT_CREATE_ONLY);
    ls_free(iov);
    if (f->put_st == LS_OK)
        ls_crashpoint("wal.object_written");
    else /* the store's message is this thread's: keep it for the loop's log line */
        f->put_err = ls_strdup(ls_objstore_errbuf());
}

static void put_after(ls_work_t *w)
{
    ls_flush_t *f = w->data;
    if (f->put_st != LS_OK)
        LS_WARN_RL("wal", "PUT of WAL object %s (%zu bytes, %u logs) failed: %s%s%s", f->key,
                   f->bytes, f->nsections, ls_status_str(f->put_st), f->put_err ? ": " : "",
                   f->put_err ? f->put_err : "");
    if (f->put_st == LS_OK) {
        estimate(&f->ls->put_est_us, ls_clock_mono_us() - f->sealed_us);
        /* pipelined: this object is durable, an older flush's offsets are
         * not yet; neither may be acknowledged (I2, I7) */
        if (f->ls->committing) ls_crashpoint("wal.object_written_behind_commit");
    }
    f->state = FLUSH_PUT_DONE;
    pump_commits(f->ls);
}

static void seal(ls_logstore_t *ls)
{
    ls_flush_t *f = ls->open;
    ls->open = NULL;
    f->state = FLUSH_PUTTING;
    f->sealed_us = ls_clock_mono_us();
    f->seq = ls->seals++;
    snprintf(f->key, sizeof f->key, "wal/%013lld-%d-%08x-%06u.wal", (long long)ls_clock_wall_ms(),
             ls->cfg.broker_id, ls->boot_nonce, ls->flush_seq++);
    memcpy(f->header, LS_WAL_MAGIC, 8);
    ls_wal_section_t *secs = LS_NEWN(ls_wal_section_t, f->nsections);
    uint64_t pos = LS_WAL_HEADER_SIZE;
    uint32_t i = 0;
    for (ls_section_t *s = f->sections; s; s = s->next, i++) {
        size_t len;
        uint8_t *data = ls_buf_steal(&s->buf, &len);
        s->chunk = ls_chunk_adopt(data, len);
        s->obj_pos = pos;
        s->log->open_section = NULL;
        secs[i] = (ls_wal_section_t){.log_id = s->log->log_id,
                                     .pos = pos,
                                     .len = (uint32_t)len,
                                     .entries = s->entries,
                                     .offsets = s->offsets,
                                     .max_timestamp = s->max_timestamp};
        pos += len;
    }
    ls_wal_footer_encode(secs, f->nsections, &f->footer);
    ls_free(secs);
    if (ls->queue_tail)
        ls->queue_tail->next = f;
    else
        ls->queue_head = f;
    ls->queue_tail = f;
    ls->inflight++;
    ls->last_seal_ms = ls_clock_mono_ms();
    f->work.data = f;
    ls_workpool_submit(ls->wal_pool, &f->work, put_work, put_after);
    if (ls_check_invariants_enabled()) ls_wal_check_invariants(ls);
}

static bool should_seal(ls_logstore_t *ls, int64_t now, int64_t *due)
{
    ls_flush_t *f = ls->open;
    if (!f || !f->nsections || ls->inflight >= ls->cfg.max_inflight_flushes) return false;
    int64_t when = now;
    if (ls->inflight > 0 && (int64_t)f->bytes < ls->cfg.flush_max_bytes && !ls->shutting_down) {
        when = f->opened_ms + ls->cfg.flush_linger_ms;
        if (ls->inflight == 1 && ls->committing) {
            /* pipelined: PUT this flush while the oldest commits, timed so
             * the object lands as that commit ends (at once when a PUT
             * takes longer than a commit) */
            int64_t lead_ms = (ls->commit_est_us - ls->put_est_us) / 1000;
            int64_t behind = ls->commit_started_us / 1000 + (lead_ms > 0 ? lead_ms : 0);
            if (behind < when) when = behind;
        }
    }
    if (ls->cfg.flush_min_interval_ms > 0 &&
        ls->last_seal_ms + ls->cfg.flush_min_interval_ms > when)
        when = ls->last_seal_ms + ls->cfg.flush_min_interval_ms;
    *due = when;
    return true;
}

static void seal_timer_cb(uv_timer_t *t)
{
    ls_logstore_t *ls = t->data;
    ls->seal_timer_armed = false;
    int64_t now = ls_clock_mono_ms(), due;
    if (should_seal(ls, now, &due) && due <= now) seal(ls);
    schedule_seal(ls);
}

static void schedule_seal(ls_logstore_t *ls)
{
    int64_t now = ls_clock_mono_ms(), due;
    if (!should_seal(ls, now, &due)) return;
    if (ls->open->bytes >= (size_t)ls->cfg.flush_max_bytes && due <= now) {
        seal(ls); /* full: no reason to wait for the next loop iteration */
        return;
    }
    if (ls->seal_timer_armed && ls->seal_timer_due <= due) return;
    ls->seal_timer_armed = true;
    ls->seal_timer_due = due;
    uv_timer_start(&ls->seal_timer, seal_timer_cb, (uint64_t)(due > now ? due - now : 0), 0);
}

void ls_wal_seal_now(ls_logstore_t *ls)
{
    if (ls->open && ls->open->nsections) seal(ls);
}

bool ls_wal_idle(const ls_logstore_t *ls) { return !ls->open && !ls->queue_head; }

/* ------------------------------------------------------------------ commit */

/* The head after the section, built on head_before; also the aborted
 * ranges its markers close. LS_EAGAIN when a transactional rule refuses a
 * batch against this head (its transaction ended meanwhile, e.g. through
 * another broker): the section fails retriably and the retry gets the
 * precise answer from the append-time check. */
static ls_status build_head_after(ls_section_t *s)
{
    ls_head_clear(&s->head_after);
    head_copy(&s->head_after, &s->head_before);
    ls_free(s->aborted);
    s->aborted = s->nmarkers ? LS_NEWN(ls_aborted_t, s->nmarkers) : NULL;
    s->naborted = 0;
    ls_head_t *h = &s->head_after;
    s->base_offset = s->head_before.next_offset;
    h->next_offset += s->offsets;
    h->size_bytes += (int64_t)s->chunk->len;
    if (s->max_timestamp > h->max_timestamp || h->max_timestamp_offset < 0) {
        h->max_timestamp = s->max_timestamp;
        h->max_timestamp_offset = s->base_offset + s->max_timestamp_rel;
    }
    for (ls_pending_t *p = s->first; p; p = p->next) {
        int64_t offset = s->base_offset + p->rel_offset;
        if (p->is_marker) {
            ls_marker_action act = ls_log_txn_marker_plan(h, &p->marker);
            if (ls_log_txn_marker_apply(h, &p->marker, act, offset, &s->aborted[s->naborted]))
                s->naborted++;
            continue;
        }
        if (p->producer.producer_id < 0) continue;
        if (ls_log_txn_check_batch(h, p->producer.producer_id, p->producer.producer_epoch,
                                   p->txn_seq) != LS_TXB_OK)
            return LS_EAGAIN;
        pstate_push(h, &p->producer, offset, p->max_timestamp);
        ls_log_txn_apply_batch(h, p->producer.producer_id, p->txn_seq, offset);
    }
    return LS_OK;
}

/* Sequences were checked at append against the head as this broker knew
 * it. After a reload, a producer of the section whose state changed has
 * appended through another broker meanwhile (it retried there): committing
 * could duplicate or reorder its batches. */
static bool producers_unchanged(const ls_section_t *s, ls_head_t *old)
{
    ls_head_t *now = (ls_head_t *)&s->head_before;
    for (ls_pending_t *p = s->first; p; p = p->next) {
        if (p->producer.producer_id < 0) continue;
        const ls_pstate_t *a = pstate_find(old, p->producer.producer_id);
        const ls_pstate_t *b = pstate_find(now, p->producer.producer_id);
        if (!a != !b) return false;
        if (a && (a->epoch != b->epoch || a->nbatches != b->nbatches ||
                  memcmp(a->batches, b->batches, (size_t)a->nbatches * sizeof *a->batches) != 0))
            return false;
    }
    return true;
}

/* Rereads a head on the worker thread (after a conflict or ambiguity). */
static ls_status reload_head(ls_meta_t *meta, ls_section_t *s)
{
    char key[64];
    ls_log_head_key(key, sizeof key, s->log->log_id);
    ls_kv_t kv;
    ls_status st = ls_meta_get(meta, key, &kv);
    ls_head_clear(&s->head_before);
    if (st == LS_ENOTFOUND) {
        memset(&s->head_before, 0, sizeof s->head_before);
        s->head_before.max_timestamp = -1;
        s->head_before.max_timestamp_offset = -1;
        s->head_rev_before = 0;
        return LS_OK;
    }
    if (st != LS_OK) return st;
    st = ls_head_decode(kv.val, kv.vlen, &s->head_before);
    if (st != LS_OK) LS_ERROR("wal", "corrupt log head %s (%zu bytes)", key, kv.vlen);
    s->head_rev_before = kv.mod_rev;
    ls_kv_free(&kv);
    return st;
}

/* A txn that failed with an I/O error may still have been applied (the
 * answer, not the write, was lost). The txn is atomic, so reading back its
 * last PUT tells: if the key holds exactly our value, the whole txn applied.
 * Resolving this here keeps idempotent producers exactly-once: otherwise the
 * producer's retry would be appended a second time. */
static ls_status verify_applied(ls_meta_t *meta, const ls_meta_op_t *last_put, int64_t *rev)
{
    ls_kv_t kv;
    ls_status st = ls_meta_get_bytes(meta, last_put->key, last_put->klen, &kv);
    if (st == LS_ENOTFOUND) return LS_EAGAIN; /* definitely not applied */
    if (st != LS_OK) return LS_EIO;           /* still ambiguous */
    bool same = kv.vlen == last_put->vlen && memcmp(kv.val, last_put->val, kv.vlen) == 0;
    *rev = kv.mod_rev;
    ls_kv_free(&kv);
    if (same)
        LS_WARN("wal",
                "metadata commit reported failure but was applied (revision %lld); "
                "treating it as committed",
                (long long)*rev);
    return same ? LS_OK : LS_EAGAIN;
}

/* Commits sections [first, end) in one txn; retries on compare conflicts.
 * Returns the txn's outcome (LS_OK: applied, or nothing to write). */
static ls_status commit_group(ls_flush_t *f, ls_section_t *first, ls_section_t *end,
                              bool with_walobj)
{
    ls_meta_t *meta = f->ls->meta;
    size_t cap = 1, nmarkers = 0;
    for (ls_section_t *s = first; s != end; s = s->next) {
        cap += 2;
        nmarkers += (size_t)s->nmarkers;
    }
    ls_meta_cmp_t *cmps = LS_NEWN(ls_meta_cmp_t, cap);
    ls_meta_op_t *ops = LS_NEWN(ls_meta_op_t, cap + nmarkers);
    char(*keys)[2][80] = ls_calloc(cap, sizeof *keys);
    ls_buf_t *vals = LS_NEWN(ls_buf_t, cap * 2);
    /* aborted-index records of the markers (log_txn.h), one per aborted range */
    char(*akeys)[96] = ls_calloc(nmarkers ? nmarkers : 1, sizeof *akeys);
    ls_buf_t *avals = LS_NEWN(ls_buf_t, nmarkers ? nmarkers : 1);
    char walobj_key[160];
    snprintf(walobj_key, sizeof walobj_key, LS_KEY_WALOBJ "%s", f->key);
    /* reference count: one per log section; compaction decrements it and
     * deletes the key at zero, after which GC deletes the object */
    char walobj_val[32];
    snprintf(walobj_val, sizeof walobj_val, "n=%u", f->nlive);
    ls_status st = LS_ECONFLICT;
    for (int attempt = 0; attempt < COMMIT_ATTEMPTS && st == LS_ECONFLICT; attempt++) {
        size_t ncmp = 0, nops = 0, i = 0, na = 0;
        st = LS_OK;
        if (with_walobj) {
            ops[nops++] = (ls_meta_op_t){.kind = LS_META_OP_PUT,
                                         .key = walobj_key,
                                         .klen = strlen(walobj_key),
                                         .val = walobj_val,
                                         .vlen = strlen(walobj_val)};
        }
        for (ls_section_t *s = first; s != end; s = s->next, i++) {
            if (s->st != LS_OK) continue;
            if (s->reload_head) {
                ls_head_t old;
                head_copy(&old, &s->head_before);
                ls_status rs = reload_head(meta, s);
                bool same = rs == LS_OK && producers_unchanged(s, &old);
                ls_head_clear(&old);
                if (rs != LS_OK) {
                    st = rs;
                    break;
                }
                s->reload_head = false;
                if (!same) {
                    LS_WARN("wal",
                            "log %016llx: an idempotent producer of this flush appended "
                            "through another broker meanwhile; failing its batches (retriable) "
                            "so the retry is checked against the new state",
                            (unsigned long long)s->log->log_id);
                    s->st = LS_EAGAIN;
                    continue;
                }
            }
            if (s->head_before.fenced) {
                s->st = LS_ENOTFOUND;
                continue;
            }
            if (build_head_after(s) != LS_OK) {
                LS_WARN("wal",
                        "log %016llx: a transactional batch of this flush belongs to a "
                        "transaction that ended meanwhile (its marker committed first); failing "
                        "the flush's batches for this log (retriable) so the retry is checked "
                        "against the new state",
                        (unsigned long long)s->log->log_id);
                s->st = LS_EAGAIN;
                continue;
            }
            for (int k = 0; k < s->naborted; k++, na++) {
                ls_log_abort_key(akeys[na], sizeof akeys[na], s->log->log_id,
                                 s->aborted[k].first_offset);
                ls_buf_free(&avals[na]);
                ls_aborted_encode(&s->aborted[k], &avals[na]);
                ops[nops++] = (ls_meta_op_t){.kind = LS_META_OP_PUT,
                                             .key = akeys[na],
                                             .klen = strlen(akeys[na]),
                                             .val = avals[na].data,
                                             .vlen = avals[na].len};
            }
            ls_buf_free(&vals[2 * i]);
            ls_buf_free(&vals[2 * i + 1]);
            ls_head_encode(&s->head_after, &vals[2 * i]);
            LS_CHECKF(f->put_st == LS_OK && f->state == FLUSH_COMMITTING,
                      "WAL I2: acknowledging entries of %s (PUT %s, state %d)", f->key,
                      ls_status_str(f->put_st), (int)f->state);
            ls_idx_entry_t e = {.kind = LS_IDX_WAL,
                                .first_offset = s->base_offset,
                                .last_offset = s->base_offset + s->offsets - 1,
                                .max_timestamp = s->max_timestamp,
                                .entries = s->entries,
                                .pos = s->obj_pos,
                                .len = (uint32_t)s->chunk->len,
                                .object = f->key};
            ls_idx_encode(&e, &vals[2 * i + 1]);
            ls_log_head_key(keys[i][0], sizeof keys[i][0], s->log->log_id);
            ls_log_idx_key(keys[i][1], sizeof keys[i][1], s->log->log_id, e.last_offset);
            cmps[ncmp++] = (ls_meta_cmp_t){.kind = LS_META_CMP_MOD_REV,
                                           .key = keys[i][0],
                                           .klen = strlen(keys[i][0]),
                                           .rev = s->head_rev_before};
            ops[nops++] = (ls_meta_op_t){.kind = LS_META_OP_PUT,
                                         .key = keys[i][0],
                                         .klen = strlen(keys[i][0]),
                                         .val = vals[2 * i].data,
                                         .vlen = vals[2 * i].len};
            ops[nops++] = (ls_meta_op_t){.kind = LS_META_OP_PUT,
                                         .key = keys[i][1],
                                         .klen = strlen(keys[i][1]),
                                         .val = vals[2 * i + 1].data,
                                         .vlen = vals[2 * i + 1].len};
        }
        if (st != LS_OK) break;
        if (ncmp == 0 && !with_walobj) break;
        int64_t rev = 0;
        st = ls_meta_txn(meta, cmps, ncmp, ops, nops, &rev);
        if (st != LS_OK && st != LS_ECONFLICT && nops > 0)
            st = verify_applied(meta, &ops[nops - 1], &rev);
        if (st == LS_OK) {
            for (ls_section_t *s = first; s != end; s = s->next)
                s->commit_rev = rev;
        } else if (st == LS_ECONFLICT)
            for (ls_section_t *s = first; s != end; s = s->next)
                s->reload_head = true;
    }
    if (st != LS_OK)
        for (ls_section_t *s = first; s != end; s = s->next)
            if (s->st == LS_OK) {
                s->st = st == LS_ECONFLICT ? LS_EAGAIN : st;
                s->reload_head = true; /* outcome ambiguous: reread before next use */
            }
    for (size_t i = 0; i < cap * 2; i++)
        ls_buf_free(&vals[i]);
    for (size_t i = 0; i < nmarkers; i++)
        ls_buf_free(&avals[i]);
    ls_free(avals);
    ls_free(akeys);
    ls_free(vals);
    ls_free(keys);
    ls_free(cmps);
    ls_free(ops);
    return st;
}

static void commit_work(ls_work_t *w)
{
    ls_flush_t *f = w->data;
    /* Split so each txn stays within the backend's op limit; a log's compare,
     * head and index entry always share one txn (per-log atomicity). */
    int budget = ls_meta_max_txn_ops(f->ls->meta) - 1; /* the WAL object's key */
    ls_section_t *first = f->sections;
    bool with_walobj = f->nlive > 0; /* nothing to commit: the object is garbage */
    while (first) {
        /* a section costs its head compare, head and index entry, plus one
         * aborted-index record per marker at most; at least one per txn */
        ls_section_t *end = first->next;
        int used = 3 + first->nmarkers;
        while (end && used + 3 + end->nmarkers <= budget) {
            used += 3 + end->nmarkers;
            end = end->next;
        }
        ls_status st = commit_group(f, first, end, with_walobj);
        if (with_walobj && st != LS_OK) {
            /* the object's reference key is in this txn: without it GC
             * deletes the object, so no later txn may index into it */
            for (ls_section_t *s = end; s; s = s->next)
                if (s->st == LS_OK) s->st = LS_EAGAIN;
            break;
        }
        with_walobj = false;
        first = end;
    }
    ls_crashpoint("wal.committed"); /* before any producer is acknowledged */
}

static void commit_after(ls_work_t *w);

/* commit_after, named for the loop-lag report (base/loop_lag.h) */
static void commit_after_marked(ls_work_t *w)
{
    ls_loop_work_begin("WAL commit completion");
    commit_after(w);
    ls_loop_work_end();
}

static void flush_metrics(const ls_flush_t *f, uint64_t batches)
{
    ls_metric_add(ls_metrics_series0(&m_objects), 1);
    ls_metric_add(ls_metrics_series0(&m_bytes), f->bytes);
    ls_metric_observe(ls_metrics_series0(&m_linger), (double)(f->sealed_us - f->opened_us) / 1e6);
    ls_metric_observe(ls_metrics_series0(&m_flush),
                      (double)(ls_clock_mono_us() - f->sealed_us) / 1e6);
    ls_metric_observe(ls_metrics_series0(&m_group), (double)batches);
}

static void commit_after(ls_work_t *w)
{
    ls_flush_t *f = w->data;
    ls_logstore_t *ls = f->ls;
    bool any_failed = false;
    LS_CHECKF(f == ls->queue_head && ls->committing,
              "WAL I7: flush %s is answered while an older flush is queued", f->key);
    estimate(&ls->commit_est_us, ls_clock_mono_us() - ls->commit_started_us);
    for (ls_section_t *s = f->sections; s; s = s->next) {
        ls_logstate_t *lg = s->log;
        if (s->st != LS_OK) {
            any_failed = true;
            if (s->doomed) continue; /* never sent: its head is as it was */
            if (s->st == LS_ENOTFOUND) {
                lg->head.fenced = true;
            } else {
                lg->head_stale = true;
            }
            continue;
        }
        bool rebased_elsewhere =
            s->head_before.next_offset != lg->head.next_offset && s->commit_rev > lg->head_rev;
        if (s->commit_rev >= lg->head_rev) {
            /* unless the metadata watch already delivered a newer head
             * (another broker committed after us): keep the newest */
            bool fenced_meanwhile = lg->head.fenced; /* a fence may finish before us */
            ls_head_clear(&lg->head);
            lg->head = s->head_after;
            lg->head.fenced |= fenced_meanwhile;
            memset(&s->head_after, 0, sizeof s->head_after);
            lg->head_rev = s->commit_rev;
            lg->head_stale = false;
        }
        if (rebased_elsewhere && lg->idx_state == 2) {
            /* another writer appended meanwhile: our in-memory index misses its
             * entries, so reload it lazily on the next read */
            ls_reader_drop_log(ls, lg);
        }
        ls_idx_entry_t e = {.kind = LS_IDX_WAL,
                            .first_offset = s->base_offset,
                            .last_offset = s->base_offset + s->offsets - 1,
                            .max_timestamp = s->max_timestamp,
                            .entries = s->entries,
                            .pos = s->obj_pos,
                            .len = (uint32_t)s->chunk->len,
                            .object = f->key};
        ls_reader_on_commit(ls, lg, &e, s->chunk, 0);
        ls_aborted_add(lg, s->aborted, s->naborted);
        for (ls_pending_t *p = s->first; p; p = p->next) {
            if (p->producer.producer_id >= 0) idem_unlink(lg, p);
            finish_pending(p, LS_OK, s->base_offset + p->rel_offset, lg->log_start);
        }
        ls->stats.committed_entries += s->entries;
        ls->stats.committed_bytes += s->chunk->len;
        ls_reader_wake(ls, lg);
    }
    if (any_failed) {
        LS_WARN_RL("wal", "commit of WAL object %s partly failed; failing its uncommitted entries",
                   f->key);
        ls->stats.flush_failures++;
        ls_metric_add(ls_metrics_series0(&m_failures), 1);
        fail_sections(f, LS_OK); /* older entries are answered first (I7) */
        if (flush_has_idempotent(f)) doom_later(ls, f);
        doom_failed_logs(ls, f, LS_OK);
    }
    ls->stats.flushes++;
    uint64_t batches = 0; /* committed ones */
    for (ls_section_t *s = f->sections; s; s = s->next)
        if (s->st == LS_OK) batches += s->entries;
    if (batches) flush_metrics(f, batches);
    ls->queue_head = f->next;
    if (!ls->queue_head) ls->queue_tail = NULL;
    ls->committing = false;
    ls->inflight--;
    ls->buffered_bytes -= (int64_t)f->bytes;
    update_pressure(ls);
    flush_free(f);
    pump_commits(ls);
    schedule_seal(ls);
    if (ls_check_invariants_enabled()) ls_wal_check_invariants(ls);
    ls_logstore_check_shutdown(ls);
}

static void start_commit(ls_logstore_t *ls, ls_flush_t *f)
{
    ls->committing = true;
    ls->commit_started_us = ls_clock_mono_us();
    f->state = FLUSH_COMMITTING;
    f->nlive = 0;
    for (ls_section_t *s = f->sections; s; s = s->next) {
        ls_logstate_t *lg = s->log;
        s->st = s->doomed ? LS_EAGAIN : lg->head.fenced ? LS_ENOTFOUND : LS_OK;
        if (s->st == LS_OK) f->nlive++;
        head_copy(&s->head_before, &lg->head);
        s->head_rev_before = lg->head_rev;
        s->reload_head = lg->head_stale;
    }
    f->work.data = f;
    ls_workpool_submit(ls->wal_pool, &f->work, commit_work, commit_after_marked);
}

static void pump_commits(ls_logstore_t *ls)
{
    while (!ls->committing && ls->queue_head && ls->queue_head->state == FLUSH_PUT_DONE) {
        ls_flush_t *f = ls->queue_head;
        if (f->put_st == LS_OK && !f->doomed && !flush_all_doomed(f)) {
            start_commit(ls, f);
            schedule_seal(ls); /* the next flush may PUT while this one commits */
            return;
        }
        ls_status st = f->put_st != LS_OK ? f->put_st : LS_EAGAIN;
        if (st != LS_ENOSPC && st != LS_ESHUTDOWN) st = LS_EAGAIN;
        ls->stats.flush_failures++;
        ls_metric_add(ls_metrics_series0(&m_failures), 1);
        fail_sections(f, st); /* older entries are answered first (I7) */
        if (flush_has_idempotent(f)) doom_later(ls, f);
        if (f->put_st != LS_OK) doom_failed_logs(ls, f, st);
        ls->queue_head = f->next;
        if (!ls->queue_head) ls->queue_tail = NULL;
        ls->inflight--;
        ls->buffered_bytes -= (int64_t)f->bytes;
        update_pressure(ls);
        flush_free(f);
    }
    schedule_seal(ls);
    ls_logstore_check_shutdown(ls);
}

ls_status ls_wal_init(ls_logstore_t *ls, char *err, size_t errlen)
{
    /* A flush has one job at a time (its PUT, then its commit), so one
     * thread per flush allowed in flight never queues a WAL job; the cap
     * only matters for an unusually high wal.max.inflight.flushes. */
    int threads = ls->cfg.max_inflight_flushes < LS_WAL_MAX_THREADS ? ls->cfg.max_inflight_flushes
                                                                    : LS_WAL_MAX_THREADS;
    ls_status st = ls_workpool_new(ls->loop, "ls-wal", threads, &ls->wal_pool, err, errlen);
    if (st != LS_OK) return st;
    ls->handles_open++;
    return LS_OK;
}

void ls_wal_start(ls_logstore_t *ls)
{
    uv_timer_init(ls->loop, &ls->seal_timer);
    ls->seal_timer.data = ls;
    ls->handles_open++;
}

void ls_wal_abandon(ls_logstore_t *ls)
{
    /* nothing was submitted; the pool frees itself once its handle closed */
    ls_workpool_close(ls->wal_pool, NULL, NULL);
    ls->wal_pool = NULL;
}

/* ------------------------------------------------------------ invariants */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* I3 for one flush: its sections name distinct logs, and their count is
 * nsections. Returns the flush's section count. */
static uint32_t check_flush_sections(const ls_flush_t *f)
{
    uint32_t n = 0;
    for (const ls_section_t *s = f->sections; s; s = s->next)
        n++;
    LS_CHECKF(n == f->nsections, "WAL: flush %s lists %u sections, counts %u", f->key, n,
              f->nsections);
    if (n < 2) return n;
    int64_t *ids = LS_NEWN(int64_t, n);
    uint32_t i = 0;
    for (const ls_section_t *s = f->sections; s; s = s->next)
        ids[i++] = s->log->log_id;
    qsort(ids, n, sizeof *ids, cmp_i64);
    for (i = 1; i < n; i++)
        LS_CHECKF(ids[i] != ids[i - 1], "WAL I3: flush %s holds two sections of log %lld", f->key,
                  (long long)ids[i]);
    ls_free(ids);
    return n;
}

void ls_wal_check_invariants(const ls_logstore_t *ls)
{
    int64_t bytes = 0;
    if (ls->open) {
        const ls_flush_t *o = ls->open;
        LS_CHECKF(o->state == FLUSH_OPEN, "WAL: the open flush is in state %d", (int)o->state);
        check_flush_sections(o);
        for (const ls_section_t *s = o->sections; s; s = s->next)
            LS_CHECKF(s->log->open_section == s,
                      "WAL I3: log %lld's open section is not its section of the open flush",
                      (long long)s->log->log_id);
        bytes += (int64_t)o->bytes;
    }
    int queued = 0;
    for (const ls_flush_t *f = ls->queue_head; f; f = f->next) {
        LS_CHECKF(f->state != FLUSH_OPEN, "WAL I1: flush %s is queued but open", f->key);
        LS_CHECKF(f->state != FLUSH_COMMITTING || f == ls->queue_head,
                  "WAL I1: flush %s commits ahead of an older flush", f->key);
        LS_CHECKF(f->next || f == ls->queue_tail, "WAL: queue tail is not the last flush");
        check_flush_sections(f);
        bytes += (int64_t)f->bytes;
        queued++;
    }
    bool head_committing = ls->queue_head && ls->queue_head->state == FLUSH_COMMITTING;
    LS_CHECKF(ls->committing == head_committing,
              "WAL I1: committing flag %d, oldest flush committing %d", ls->committing,
              head_committing);
    LS_CHECKF(queued == ls->inflight, "WAL: %d flushes queued, %d counted in flight", queued,
              ls->inflight);
    int64_t prev_seq = -1;
    for (const ls_flush_t *f = ls->queue_head; f; f = f->next) {
        LS_CHECKF(f->seq > prev_seq && f->seq < ls->seals,
                  "WAL I1: flush %s has seal number %lld after %lld (of %lld)", f->key,
                  (long long)f->seq, (long long)prev_seq, (long long)ls->seals);
        prev_seq = f->seq;
        for (const ls_section_t *s = f->sections; s; s = s->next)
            LS_CHECKF(s->doomed || f->doomed || f->seq >= s->log->doom_before,
                      "WAL I8: flush %s was sealed before log %lld failed and may still commit "
                      "its section",
                      f->key, (long long)s->log->log_id);
    }
    LS_CHECKF(ls->inflight <= ls->cfg.max_inflight_flushes + (ls->shutting_down ? 1 : 0),
              "WAL: %d flushes in flight, limit %d", ls->inflight, ls->cfg.max_inflight_flushes);
    LS_CHECKF(bytes == ls->buffered_bytes,
              "WAL I4: buffered_bytes %lld, open + in-flight flushes hold %lld",
              (long long)ls->buffered_bytes, (long long)bytes);
    int64_t id;
    void *v;
    for (size_t it = 0; ls_i64map_next(&ls->logs, &it, &id, &v);) {
        const ls_logstate_t *lg = v;
        LS_CHECKF(!lg->open_section || (ls->open && lg->open_section->log == lg),
                  "WAL I3: log %lld has an open section outside the open flush", (long long)id);
        for (const ls_pending_t *p = lg->idem_head; p; p = p->pnext)
            LS_CHECKF(p->producer.producer_id >= 0 && p->section->log == lg,
                      "WAL I5: log %lld's idempotent list holds a foreign entry", (long long)id);
    }
}
