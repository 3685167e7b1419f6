/* The aborted-transactions index of a log, in memory (log_txn.h has the
 * stored records and the range lookup).
 *
 * State of one log's list:
 *   0 unloaded ──lookup──▶ 1 loading ──scan done──▶ 2 loaded
 *   1 ──drop──▶ 3 (the scan's result is discarded; parked lookups restart it)
 *   2 ──drop (resync, corrupt index)──▶ 0
 * In states 1 and 2 commits of this broker and watched records of other
 * brokers are added as they come (and records key compaction deleted with
 * their markers are removed: from a loaded list at once, while loading by
 * discarding the scan) (adding is idempotent: keyed by first
 * offset), so records committed while the scan ran are not missed; the scan's
 * records are merged in when it ends, then everything below the log start is
 * dropped. A log whose head never recorded an aborted transaction
 * (max_aborted_span 0) answers at once without loading anything.
 * Loop thread, except the scan (a worker, stores only), which
 * ls_log_aborted_read also runs for the compaction pass's workers (they may
 * not touch the loop's copy). */
#include <stdint.h>
#include <string.h>

#include "base/alloc.h"
#include "base/diag.h"
#include "log/logstore_int.h"

#define SCAN_PAGE 1000

typedef struct ls_aborted_wait {
    struct ls_aborted_wait *next;
    int64_t from, to;
    ls_aborted_cb cb;
    void *arg;
} ls_aborted_wait_t;

typedef struct aload_job {
    ls_logstore_t *ls;
    int64_t log_id;
    ls_aborted_list_t got;
    ls_status st;
    uv_work_t work;
} aload_job_t;

/* The stored records of log_id whose first offset lies in [first_from,
 * first_to], in first-offset order, put into out. A corrupt record is
 * logged and left out; *corrupt counts them. Blocking (stores only). */
static ls_status scan_aborted(ls_meta_t *meta, int64_t log_id, int64_t first_from, int64_t first_to,
                              ls_aborted_list_t *out, int *corrupt)
{
    char from[96], to[96];
    ls_log_abort_key(from, sizeof from, log_id, first_from);
    size_t flen = strlen(from);
    size_t tlen = (size_t)ls_log_abort_key(to, sizeof to, log_id, first_to);
    to[tlen++] = 0; /* the end is exclusive: just past first_to's key */
    *corrupt = 0;
    for (;;) {
        ls_kvlist_t l;
        ls_status st = ls_meta_scan(meta, from, flen, to, tlen, SCAN_PAGE, 0, &l);
        if (st != LS_OK) return st;
        for (size_t i = 0; i < l.n; i++) {
            ls_aborted_t a;
            if (ls_aborted_decode(l.v[i].val, l.v[i].vlen, &a) != LS_OK) {
                LS_ERROR("log", "corrupt aborted-transaction record at %.*s (%zu bytes)",
                         (int)l.v[i].klen, (const char *)l.v[i].key, l.v[i].vlen);
                (*corrupt)++;
                continue;
            }
            ls_aborted_list_put(out, &a);
        }
        bool more = l.more && l.n;
        if (more) { /* continue after the last key (fixed width: append a byte) */
            flen = l.v[l.n - 1].klen + 1;
            memcpy(from, l.v[l.n - 1].key, flen - 1);
            from[flen - 1] = 0;
        }
        ls_kvlist_free(&l);
        if (!more) return LS_OK;
    }
}

static void aload_work(uv_work_t *w)
{
    aload_job_t *j = w->data;
    int corrupt;
    j->st = scan_aborted(j->ls->meta, j->log_id, 0, INT64_MAX, &j->got, &corrupt);
    if (corrupt)
        LS_ERROR("log",
                 "log %016llx: %d corrupt aborted-transaction records; read_committed "
                 "readers of this log will not be told of them",
                 (unsigned long long)j->log_id, corrupt);
}

ls_status ls_log_aborted_read(ls_meta_t *meta, int64_t log_id, int64_t from, int64_t to,
                              int64_t max_aborted_span, ls_aborted_list_t *out)
{
    if (max_aborted_span == 0 || from > to) return LS_OK;
    ls_aborted_list_t all = {0};
    int corrupt;
    int64_t lo = from - max_aborted_span;
    ls_status st = scan_aborted(meta, log_id, lo < 0 ? 0 : lo, to, &all, &corrupt);
    if (st == LS_OK && corrupt) st = LS_ECORRUPT; /* a record left out could let aborted rows in */
    if (st == LS_OK) ls_aborted_list_range(&all, from, to, max_aborted_span, out);
    ls_aborted_list_free(&all);
    return st;
}

static void start_aload(ls_logstore_t *ls, ls_logstate_t *lg);

static void answer(ls_logstate_t *lg, ls_aborted_wait_t *w, ls_status st)
{
    /* Records read from below the log start: a trim passed them after the
     * read took them, and took with it the index records of transactions
     * aborted there (marker below the start), so the list would be short
     * and a read_committed reader would see aborted records. The records
     * are gone: the fetch answers as it would have a moment later. */
    if (st == LS_OK && w->from < lg->log_start) st = LS_ERANGE;
    if (st != LS_OK) {
        w->cb(w->arg, st, NULL, 0);
        return;
    }
    ls_aborted_list_t out = {0};
    int n = ls_aborted_list_range(&lg->aborted, w->from, w->to, lg->head.max_aborted_span, &out);
    w->cb(w->arg, LS_OK, out.v, n);
    ls_aborted_list_free(&out);
}

static void aload_after(uv_work_t *w, int status)
{
    aload_job_t *j = w->data;
    ls_logstate_t *lg = ls_logstate_get(j->ls, j->log_id, true);
    ls_status st = status == 0 ? j->st : LS_ESHUTDOWN;
    if (lg->aborted_state == 3) { /* dropped while we scanned: scan again */
        ls_aborted_list_free(&j->got);
        ls_aborted_list_free(&lg->aborted);
        lg->aborted_state = 0;
        if (lg->aborted_waiting) start_aload(j->ls, lg);
        ls_free(j);
        return;
    }
    if (st == LS_OK) {
        for (int i = 0; i < j->got.n; i++)
            ls_aborted_list_put(&lg->aborted, &j->got.v[i]);
        ls_aborted_list_trim(&lg->aborted, lg->log_start);
        lg->aborted_state = 2;
    } else {
        LS_WARN_RL("log", "loading the aborted transactions of log %016llx failed: %s",
                   (unsigned long long)j->log_id, ls_status_str(st));
        ls_aborted_list_free(&lg->aborted);
        lg->aborted_state = 0;
    }
    ls_aborted_list_free(&j->got);
    ls_free(j);
    ls_aborted_wait_t *waiting = lg->aborted_waiting;
    lg->aborted_waiting = NULL;
    while (waiting) {
        ls_aborted_wait_t *wt = waiting;
        waiting = wt->next;
        answer(lg, wt, st);
        ls_free(wt);
    }
}

static void start_aload(ls_logstore_t *ls, ls_logstate_t *lg)
{
    aload_job_t *j = LS_NEW(aload_job_t);
    j->ls = ls;
    j->log_id = lg->log_id;
    j->work.data = j;
    lg->aborted_state = 1;
    uv_queue_work(ls->loop, &j->work, aload_work, aload_after);
}

void ls_logstore_aborted(ls_logstore_t *ls, int64_t log_id, int64_t from, int64_t to,
                         ls_aborted_cb cb, void *arg)
{
    ls_logstate_t *lg = ls_logstate_get(ls, log_id, false);
    if (!lg || lg->head.max_aborted_span == 0 || from > to) {
        cb(arg, LS_OK, NULL, 0);
        return;
    }
    ls_aborted_wait_t w = {.from = from, .to = to, .cb = cb, .arg = arg};
    if (lg->aborted_state == 2) {
        answer(lg, &w, LS_OK);
        return;
    }
    ls_aborted_wait_t *pw = ls_memdup(&w, sizeof w);
    pw->next = lg->aborted_waiting;
    lg->aborted_waiting = pw;
    if (lg->aborted_state == 0) start_aload(ls, lg);
}

void ls_aborted_add(ls_logstate_t *lg, const ls_aborted_t *v, int n)
{
    if (lg->aborted_state != 1 && lg->aborted_state != 2)
        return; /* not loaded: the scan will find them */
    for (int i = 0; i < n; i++)
        if (v[i].marker_offset >= lg->log_start) ls_aborted_list_put(&lg->aborted, &v[i]);
}

void ls_aborted_forget(ls_logstate_t *lg, int64_t first_offset)
{
    if (lg->aborted_state == 2)
        ls_aborted_list_remove(&lg->aborted, first_offset);
    else if (lg->aborted_state == 1)
        lg->aborted_state = 3; /* the scan may have read it: discard, rescan */
}

void ls_logstore_aborted_forget(ls_logstore_t *ls, int64_t log_id, const int64_t *firsts, size_t n)
{
    ls_logstate_t *lg = ls_logstate_get(ls, log_id, false);
    for (size_t i = 0; lg && i < n; i++)
        ls_aborted_forget(lg, firsts[i]);
}

void ls_aborted_learn_start(ls_logstate_t *lg)
{
    if (lg->aborted_state == 2) ls_aborted_list_trim(&lg->aborted, lg->log_start);
}

void ls_aborted_drop(ls_logstate_t *lg)
{
    if (lg->aborted_state == 2) {
        ls_aborted_list_free(&lg->aborted);
        lg->aborted_state = 0;
    } else if (lg->aborted_state == 1) {
        lg->aborted_state = 3;
    }
}

void ls_aborted_free(ls_logstate_t *lg)
{
    ls_aborted_list_free(&lg->aborted);
    while (lg->aborted_waiting) {
        ls_aborted_wait_t *w = lg->aborted_waiting;
        lg->aborted_waiting = w->next;
        w->cb(w->arg, LS_ESHUTDOWN, NULL, 0);
        ls_free(w);
    }
}
