/* Read path: offset index, cached reads, offset-for-time, commit waiters.
 *
 * A read of offset x is a ceiling lookup in the log's index (first entry
 * whose last offset >= x), then the entry's bytes from the read cache or a
 * ranged GET of its object. The index of a log is loaded from metadata on
 * first use and kept current by this broker's commits; a load that overlaps
 * a commit is redone so no committed entry is missed.
 *
 * A read op walks entries until it has max_bytes (the first entry is always
 * returned whole: progress guarantee) or reaches the high watermark. Misses
 * suspend the op on a worker GET and resume it on the loop.
 * Loop thread only, except get_work / load_work (stores only). */
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/diag.h"
#include "log/logstore_int.h"

enum { OP_READ, OP_TIME };

struct ls_read_op {
    ls_logstore_t *ls;
    int64_t log_id;
    int mode;
    int64_t next; /* next offset wanted */
    size_t max_bytes;
    int64_t ts;     /* OP_TIME target */
    bool committed; /* read_committed: stop at the last stable offset */
    ls_read_cb rcb;
    ls_offset_cb ocb;
    void *arg;
    ls_read_result_t res;
    int capslices;
    /* GET in flight */
    char *get_object;
    uint64_t get_pos;
    uint32_t get_len;
    int64_t get_first, get_last;
    bool get_real_offsets; /* a key-compacted object (LS_IDX_KCO) */
    ls_buf_t got;
    ls_status get_st;
    char get_err[200]; /* the store's detail of a failed GET (worker thread) */
    int retries;
    uv_work_t work;
    ls_read_op_t *next_waiting;
};

static void op_step(ls_read_op_t *op);

/* A change to a log's stored index that arrived while the index was being
 * loaded: applied after the load (see ls_reader_index_put). */
struct ls_idx_replay {
    struct ls_idx_replay *next;
    bool del;
    ls_idx_entry_t e; /* del: only last_offset */
};

/* ------------------------------------------------------------------- index */

typedef struct load_job {
    ls_logstore_t *ls;
    int64_t log_id;
    ls_idx_entry_t *idx;
    int nidx;
    ls_status st;
    uv_work_t work;
} load_job_t;

static void load_work(uv_work_t *w)
{
    load_job_t *j = w->data;
    char prefix[64];
    ls_log_idx_prefix(prefix, sizeof prefix, j->log_id);
    ls_kvlist_t l;
    j->st = ls_meta_scan_prefix(j->ls->meta, prefix, 0, &l);
    if (j->st != LS_OK) return;
    j->idx = LS_NEWN(ls_idx_entry_t, l.n ? l.n : 1);
    for (size_t i = 0; i < l.n; i++) {
        if (ls_idx_decode(l.v[i].val, l.v[i].vlen, &j->idx[j->nidx]) != LS_OK) {
            LS_ERROR("log", "corrupt index entry at key %.*s (%zu bytes); skipping it",
                     (int)l.v[i].klen, (const char *)l.v[i].key, l.v[i].vlen);
            continue;
        }
        j->nidx++;
    }
    ls_kvlist_free(&l);
}

static void idx_clear(ls_logstate_t *lg)
{
    for (int i = 0; i < lg->nidx; i++)
        ls_idx_clear(&lg->idx[i]);
    ls_free(lg->idx);
    lg->idx = NULL;
    lg->nidx = lg->capidx = 0;
}

static void start_load(ls_logstore_t *ls, ls_logstate_t *lg);

static void load_after(uv_work_t *w, int status)
{
    load_job_t *j = w->data;
    ls_logstate_t *lg = ls_logstate_get(j->ls, j->log_id, true);
    ls_read_op_t *waiting = NULL;
    if (lg->idx_state == 3) {
        /* a commit landed while we scanned: scan again */
        for (int i = 0; i < j->nidx; i++)
            ls_idx_clear(&j->idx[i]);
        ls_free(j->idx);
        lg->idx_state = 0;
        start_load(j->ls, lg);
        ls_free(j);
        return;
    }
    if (j->st == LS_OK && status == 0) {
        idx_clear(lg);
        lg->idx = j->idx;
        lg->nidx = lg->capidx = j->nidx;
        lg->idx_state = 2;
        /* changes other brokers made while we scanned */
        ls_idx_replay_t *list = lg->replay;
        lg->replay = NULL;
        for (ls_idx_replay_t *r = list; r; r = r->next) {
            if (r->del)
                ls_reader_index_del(j->ls, lg, r->e.last_offset);
            else
                ls_reader_index_put(j->ls, lg, &r->e);
        }
        lg->replay = list;
        ls_reader_replay_clear(lg);
    } else {
        LS_WARN_RL("log", "loading index of log %016llx failed: %s", (unsigned long long)j->log_id,
                   ls_status_str(j->st));
        lg->idx_state = 0;
        ls_reader_replay_clear(lg);
    }
    waiting = lg->idx_waiting;
    lg->idx_waiting = NULL;
    ls_status st = j->st;
    ls_free(j);
    while (waiting) {
        ls_read_op_t *op = waiting;
        waiting = op->next_waiting;
        if (st != LS_OK) {
            op->res.st = st == LS_ENOTFOUND ? LS_EIO : st;
            op->next = INT64_MAX; /* finish */
        }
        op_step(op);
    }
}

static void start_load(ls_logstore_t *ls, ls_logstate_t *lg)
{
    load_job_t *j = LS_NEW(load_job_t);
    j->ls = ls;
    j->log_id = lg->log_id;
    j->work.data = j;
    lg->idx_state = 1;
    uv_queue_work(ls->loop, &j->work, load_work, load_after);
}

static int idx_ceiling(const ls_logstate_t *lg, int64_t offset);

static void replay_push(ls_logstate_t *lg, const ls_idx_entry_t *e, bool del)
{
    ls_idx_replay_t *r = LS_NEW(ls_idx_replay_t), **pp = &lg->replay;
    r->del = del;
    r->e = *e;
    r->e.object = e->object ? ls_strdup(e->object) : NULL;
    while (*pp)
        pp = &(*pp)->next;
    *pp = r;
}

void ls_reader_replay_clear(ls_logstate_t *lg)
{
    for (ls_idx_replay_t *r = lg->replay, *n; r; r = n) {
        n = r->next;
        ls_free(r->e.object);
        ls_free(r);
    }
    lg->replay = NULL;
}

/* The in-memory index is the key-value view of /ls/log/<id>/idx/ (entries
 * keyed by last offset), so applying the store's changes in revision order
 * converges on the stored index whatever was applied before. */
void ls_reader_index_put(ls_logstore_t *ls, ls_logstate_t *lg, const ls_idx_entry_t *e)
{
    if (lg->idx_state == 1 || lg->idx_state == 3) {
        replay_push(lg, e, false); /* applied once the load lands */
        return;
    }
    if (lg->idx_state != 2) return;
    int i = idx_ceiling(lg, e->last_offset);
    if (i < lg->nidx && lg->idx[i].last_offset == e->last_offset) {
        ls_idx_entry_t *old = &lg->idx[i];
        if (old->first_offset == e->first_offset && old->pos == e->pos &&
            !strcmp(old->object, e->object))
            return; /* this broker's own commit, seen twice */
        ls_read_cache_drop_range(ls->cache, lg->log_id, old->first_offset, old->last_offset);
        ls_idx_clear(old);
    } else {
        if (lg->nidx == lg->capidx) {
            lg->capidx = lg->capidx ? lg->capidx * 2 : 16;
            lg->idx = ls_realloc(lg->idx, (size_t)lg->capidx * sizeof *lg->idx);
        }
        memmove(&lg->idx[i + 1], &lg->idx[i], (size_t)(lg->nidx - i) * sizeof *lg->idx);
        lg->nidx++;
    }
    lg->idx[i] = *e;
    lg->idx[i].object = ls_strdup(e->object);
}

void ls_reader_index_del(ls_logstore_t *ls, ls_logstate_t *lg, int64_t last_offset)
{
    if (lg->idx_state == 1 || lg->idx_state == 3) {
        ls_idx_entry_t e = {.last_offset = last_offset};
        replay_push(lg, &e, true);
        return;
    }
    if (lg->idx_state != 2) return;
    int i = idx_ceiling(lg, last_offset);
    if (i >= lg->nidx || lg->idx[i].last_offset != last_offset) return;
    ls_read_cache_drop_range(ls->cache, lg->log_id, lg->idx[i].first_offset, last_offset);
    ls_idx_clear(&lg->idx[i]);
    memmove(&lg->idx[i], &lg->idx[i + 1], (size_t)(lg->nidx - i - 1) * sizeof *lg->idx);
    lg->nidx--;
}

void ls_reader_on_commit(ls_logstore_t *ls, ls_logstate_t *lg, const ls_idx_entry_t *e,
                         ls_chunk_t *chunk, size_t off)
{
    if (lg->idx_state == 2)
        ls_reader_index_put(ls, lg, e);
    else if (lg->idx_state == 1)
        lg->idx_state = 3; /* loading and dirty */
    char why[256];
    if (!ls_read_cache_insert(ls->cache, lg->log_id, e->first_offset, e->last_offset, false, chunk,
                              off, chunk->len - off, e->object, why, sizeof why))
        LS_ERROR("log", "caching committed entries of log %016llx: %s",
                 (unsigned long long)lg->log_id, why);
}

void ls_reader_drop_log(ls_logstore_t *ls, ls_logstate_t *lg)
{
    ls_aborted_drop(lg);
    if (lg->idx_state == 2) idx_clear(lg);
    if (lg->idx_state == 1)
        lg->idx_state = 3;
    else if (lg->idx_state == 2)
        lg->idx_state = 0;
    if (lg->idx_state == 0) ls_reader_replay_clear(lg);
    ls_read_cache_drop_log(ls->cache, lg->log_id);
}

/* First index entry whose last offset >= offset, or nidx. */
static int idx_ceiling(const ls_logstate_t *lg, int64_t offset)
{
    int lo = 0, hi = lg->nidx;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (lg->idx[mid].last_offset < offset)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* ----------------------------------------------------------------- waiters */

ls_log_waiter_t *ls_logstore_wait(ls_logstore_t *ls, int64_t log_id, void (*cb)(void *arg),
                                  void *arg)
{
    ls_logstate_t *lg = ls_logstate_get(ls, log_id, true);
    ls_log_waiter_t *w = LS_NEW(ls_log_waiter_t);
    w->log_id = log_id;
    w->cb = cb;
    w->arg = arg;
    w->next = lg->waiters.next;
    w->prev = &lg->waiters;
    lg->waiters.next->prev = w;
    lg->waiters.next = w;
    return w;
}

void ls_logstore_wait_cancel(ls_logstore_t *ls, ls_log_waiter_t *w)
{
    w->prev->next = w->next;
    w->next->prev = w->prev;
    ls_free(w);
}

void ls_reader_wake(ls_logstore_t *ls, ls_logstate_t *lg)
{
    /* detach first: callbacks may register new waiters on this log */
    ls_log_waiter_t *first = lg->waiters.next;
    if (first == &lg->waiters) return;
    lg->waiters.prev->next = NULL;
    lg->waiters.next = lg->waiters.prev = &lg->waiters;
    for (ls_log_waiter_t *w = first, *next; w; w = next) {
        next = w->next;
        void (*cb)(void *) = w->cb;
        void *arg = w->arg;
        ls_free(w);
        cb(arg);
    }
}

/* ------------------------------------------------------------------- reads */

static void op_finish(ls_read_op_t *op)
{
    ls_logstate_t *lg = ls_logstate_get(op->ls, op->log_id, false);
    if (lg) {
        op->res.log_start = lg->log_start;
        op->res.high_watermark = lg->head.next_offset;
        op->res.last_stable_offset = ls_log_txn_lso(&lg->head);
    }
    if (op->mode == OP_READ) {
        op->rcb(op->arg, &op->res);
    } else {
        ls_read_result_free(&op->res);
        op->ocb(op->arg, op->res.st, op->res.st == LS_OK ? op->next : -1, op->ts);
    }
    ls_free(op->get_object);
    ls_buf_free(&op->got);
    ls_free(op);
}

static void add_slice(ls_read_op_t *op, ls_chunk_t *chunk, size_t off, size_t len)
{
    ls_read_result_t *r = &op->res;
    if (r->nslices && r->slices[r->nslices - 1].chunk == chunk &&
        r->slices[r->nslices - 1].off + r->slices[r->nslices - 1].len == off) {
        r->slices[r->nslices - 1].len += len;
    } else {
        if (r->nslices == op->capslices) {
            op->capslices = op->capslices ? op->capslices * 2 : 4;
            r->slices = ls_realloc(r->slices, (size_t)op->capslices * sizeof *r->slices);
        }
        r->slices[r->nslices++] = (ls_read_slice_t){ls_chunk_keep(chunk), off, len};
    }
    r->bytes += len;
}

static void get_work(uv_work_t *w)
{
    ls_read_op_t *op = w->data;
    op->get_st = ls_objstore_get(op->ls->os, op->get_object, op->get_pos, op->get_len, &op->got);
    if (op->get_st == LS_OK && op->got.len != op->get_len)
        op->get_st = LS_ECORRUPT;
    else if (op->get_st != LS_OK)
        snprintf(op->get_err, sizeof op->get_err, "%s", ls_objstore_error(op->ls->os));
}

static void get_after(uv_work_t *w, int status)
{
    ls_read_op_t *op = w->data;
    ls_logstore_t *ls = op->ls;
    ls->stats.store_gets++;
    if (status == UV_ECANCELED) op->get_st = LS_ESHUTDOWN;
    if (op->get_st == LS_ENOTFOUND && op->retries++ < 3) {
        /* the object was compacted away after we looked the entry up: the
         * index now names its replacement */
        op_step(op);
        return;
    }
    if (op->get_st != LS_OK) {
        /* A store that is unreachable or failing (transient: the fetch
         * answers KAFKA_STORAGE_ERROR for this partition and the client
         * retries) is a rate-limited warning; data that does not match its
         * index is an error. */
        if (op->get_st == LS_ECORRUPT || op->get_st == LS_ENOTFOUND)
            LS_ERROR("log", "reading %u bytes at %llu of %s for log %016llx: %s%s", op->get_len,
                     (unsigned long long)op->get_pos, op->get_object,
                     (unsigned long long)op->log_id, ls_status_str(op->get_st),
                     op->get_st == LS_ECORRUPT ? " (object shorter than its index entry)" : "");
        else if (op->get_st != LS_ESHUTDOWN)
            LS_WARN_RL("log",
                       "reading %u bytes at %llu of %s for log %016llx failed: %s (%s); "
                       "the fetch answers KAFKA_STORAGE_ERROR and the client retries",
                       op->get_len, (unsigned long long)op->get_pos, op->get_object,
                       (unsigned long long)op->log_id, ls_status_str(op->get_st), op->get_err);
        if (op->res.nslices == 0)
            op->res.st = op->get_st == LS_ENOTFOUND ? LS_ECORRUPT : op->get_st;
        op->next = INT64_MAX;
        op_step(op);
        return;
    }
    size_t len;
    uint8_t *data = ls_buf_steal(&op->got, &len);
    ls_chunk_t *c = ls_chunk_adopt(data, len);
    char why[256];
    ls_cache_run_t *run =
        ls_read_cache_insert(ls->cache, op->log_id, op->get_first, op->get_last,
                             op->get_real_offsets, c, 0, len, op->get_object, why, sizeof why);
    ls_chunk_release(c);
    if (!run) {
        LS_ERROR("log", "log %016llx: %s", (unsigned long long)op->log_id, why);
        if (op->res.nslices == 0) op->res.st = LS_ECORRUPT;
        op->next = INT64_MAX;
    }
    op_step(op);
}

static void start_get(ls_read_op_t *op, const ls_idx_entry_t *e)
{
    op->ls->stats.cache_misses++;
    ls_free(op->get_object);
    op->get_object = ls_strdup(e->object);
    op->get_pos = e->pos;
    op->get_len = e->len;
    op->get_first = e->first_offset;
    op->get_last = e->last_offset;
    op->get_real_offsets = e->kind == LS_IDX_KCO;
    ls_buf_init(&op->got);
    op->work.data = op;
    uv_queue_work(op->ls->loop, &op->work, get_work, get_after);
}

/* Serves what the run holds for op; returns false when op is complete. */
static bool take_from_run(ls_read_op_t *op, const ls_cache_run_t *run)
{
    if (op->mode == OP_TIME) {
        for (int b = 0; b < run->nbatches; b++) {
            if (run->batch_max_ts[b] < op->ts) continue;
            size_t end = b + 1 < run->nbatches ? run->batch_pos[b + 1] : run->len;
            int64_t found_ts = run->batch_max_ts[b];
            int64_t delta =
                op->ls->entry_time
                    ? op->ls->entry_time(run->chunk->data + run->off + run->batch_pos[b],
                                         end - run->batch_pos[b], op->ts, &found_ts)
                    : 0;
            op->next = run->batch_base[b] + (delta > 0 ? delta : 0);
            op->ts = found_ts;
            return false;
        }
        op->next = run->last_offset + 1;
        return true;
    }
    int b = ls_cache_run_find(run, op->next);
    if (b >= run->nbatches)
        op->next = run->last_offset + 1; /* key compaction left nothing at or after it */
    int64_t lso = INT64_MAX;
    if (op->committed) {
        ls_logstate_t *lg = ls_logstate_get(op->ls, op->log_id, false);
        lso = lg ? ls_log_txn_lso(&lg->head) : 0;
    }
    for (; b < run->nbatches; b++) {
        if (run->batch_base[b] >= lso)
            return false; /* the LSO is a batch boundary: nothing past it */
        size_t pos = run->batch_pos[b];
        size_t end = b + 1 < run->nbatches ? run->batch_pos[b + 1] : run->len;
        if (op->res.nslices && op->res.bytes + (end - pos) > op->max_bytes) return false;
        add_slice(op, run->chunk, run->off + pos, end - pos);
        op->next = b + 1 < run->nbatches ? run->batch_base[b + 1] : run->last_offset + 1;
        if (op->res.bytes >= op->max_bytes) return false;
    }
    return true;
}

static void op_step(ls_read_op_t *op)
{
    ls_logstore_t *ls = op->ls;
    for (;;) {
        ls_logstate_t *lg = ls_logstate_get(ls, op->log_id, false);
        if (!lg || op->next >= lg->head.next_offset || op->res.st != LS_OK ||
            (op->committed && op->next >= ls_log_txn_lso(&lg->head))) {
            if (op->mode == OP_TIME && op->res.st == LS_OK) {
                op->next = lg ? lg->head.next_offset : 0;
                op->ts = -1;
            }
            op_finish(op);
            return;
        }
        if (op->mode == OP_READ && op->res.nslices == 0 && op->next < lg->log_start) {
            /* a trim passed the offset while the read waited for the store */
            op->res.st = LS_ERANGE;
            continue;
        }
        if (lg->idx_state != 2) {
            op->next_waiting = lg->idx_waiting;
            lg->idx_waiting = op;
            if (lg->idx_state == 0) start_load(ls, lg);
            return;
        }
        int i;
        if (op->mode == OP_TIME) {
            for (i = idx_ceiling(lg, op->next); i < lg->nidx; i++)
                if (lg->idx[i].max_timestamp >= op->ts) break;
            if (i < lg->nidx && lg->idx[i].first_offset > op->next)
                op->next = lg->idx[i].first_offset;
        } else {
            i = idx_ceiling(lg, op->next);
        }
        if (i >= lg->nidx) {
            if (op->mode == OP_READ) {
                LS_ERROR("log",
                         "log %016llx: no index entry covers offset %lld (high watermark %lld)",
                         (unsigned long long)op->log_id, (long long)op->next,
                         (long long)lg->head.next_offset);
                if (op->res.nslices == 0) op->res.st = LS_ECORRUPT;
            }
            op->next = INT64_MAX;
            continue;
        }
        const ls_idx_entry_t *e = &lg->idx[i];
        if (e->first_offset > op->next) {
            /* a gap below the entry (trimmed range): continue at the entry */
            op->next = e->first_offset;
        }
        if (e->kind == LS_IDX_KCO && e->entries == 0) {
            /* key compaction removed every record of the range */
            op->next = e->last_offset + 1;
            continue;
        }
        ls_cache_run_t *run = ls_read_cache_get(ls->cache, op->log_id, e->last_offset);
        if (run && (run->first_offset != e->first_offset || strcmp(run->object, e->object))) {
            /* cached for an entry that compaction has since replaced (a GET
             * that completed after the swap caches the old object's bytes) */
            ls_read_cache_remove(ls->cache, run);
            run = NULL;
        }
        if (!run) {
            start_get(op, e);
            return;
        }
        ls->stats.cache_hits++;
        if (!take_from_run(op, run)) {
            op_finish(op);
            return;
        }
    }
}

static ls_read_op_t *op_new(ls_logstore_t *ls, int64_t log_id, int mode)
{
    ls_read_op_t *op = LS_NEW(ls_read_op_t);
    op->ls = ls;
    op->log_id = log_id;
    op->mode = mode;
    ls_buf_init(&op->got);
    return op;
}

static void read_start(ls_logstore_t *ls, int64_t log_id, int64_t offset, size_t max_bytes,
                       bool committed, ls_read_cb cb, void *arg)
{
    ls_read_op_t *op = op_new(ls, log_id, OP_READ);
    op->committed = committed;
    op->next = offset;
    op->max_bytes = max_bytes;
    op->rcb = cb;
    op->arg = arg;
    ls_logstate_t *lg = ls_logstate_get(ls, log_id, false);
    int64_t start = lg ? lg->log_start : 0, hwm = lg ? lg->head.next_offset : 0;
    if (offset < start || offset > hwm) op->res.st = LS_ERANGE;
    op_step(op);
}

void ls_logstore_read(ls_logstore_t *ls, int64_t log_id, int64_t offset, size_t max_bytes,
                      ls_read_cb cb, void *arg)
{
    read_start(ls, log_id, offset, max_bytes, false, cb, arg);
}

void ls_logstore_read_committed(ls_logstore_t *ls, int64_t log_id, int64_t offset, size_t max_bytes,
                                ls_read_cb cb, void *arg)
{
    read_start(ls, log_id, offset, max_bytes, true, cb, arg);
}

void ls_logstore_offset_for_time(ls_logstore_t *ls, int64_t log_id, int64_t ts, ls_offset_cb cb,
                                 void *arg)
{
    ls_read_op_t *op = op_new(ls, log_id, OP_TIME);
    ls_logstate_t *lg = ls_logstate_get(ls, log_id, false);
    op->next = lg ? lg->log_start : 0;
    op->ts = ts;
    op->ocb = cb;
    op->arg = arg;
    op_step(op);
}

void ls_read_result_free(ls_read_result_t *res)
{
    for (int i = 0; i < res->nslices; i++)
        ls_chunk_release(res->slices[i].chunk);
    ls_free(res->slices);
    res->slices = NULL;
    res->nslices = 0;
    res->bytes = 0;
}

void ls_logstore_apply_compaction(ls_logstore_t *ls, int64_t log_id, const ls_idx_entry_t *co)
{
    ls_logstate_t *lg = ls_logstate_get(ls, log_id, false);
    if (!lg) return;
    if (lg->idx_state == 2) {
        int w = 0;
        bool placed = false;
        int cap = lg->nidx + 1;
        ls_idx_entry_t *v = LS_NEWN(ls_idx_entry_t, (size_t)cap);
        for (int i = 0; i < lg->nidx; i++) {
            ls_idx_entry_t *e = &lg->idx[i];
            if (e->first_offset >= co->first_offset && e->last_offset <= co->last_offset) {
                ls_idx_clear(e);
                continue;
            }
            if (!placed && e->first_offset > co->last_offset) {
                v[w] = *co;
                v[w++].object = ls_strdup(co->object);
                placed = true;
            }
            v[w++] = *e;
        }
        if (!placed) {
            v[w] = *co;
            v[w++].object = ls_strdup(co->object);
        }
        ls_free(lg->idx);
        lg->idx = v;
        lg->nidx = w;
        lg->capidx = cap; /* what was allocated: w may be cap (nothing replaced) */
    } else if (lg->idx_state == 1) {
        lg->idx_state = 3;
    }
    /* runs of the replaced entries no longer match an index entry; the tail
     * (write-through runs tailing consumers read) stays cached */
    ls_read_cache_drop_range(ls->cache, log_id, co->first_offset, co->last_offset);
}
