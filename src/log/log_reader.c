/* Read path: offset index, cached reads, offset-for-time, commit waiters.
 *
 * A read of offset x is a ceiling lookup in the log's index (first entry
 * whose last offset >= x), then bytes from the read cache or a ranged GET of
 * the entry's object. The index of a log is loaded from metadata on first use
 * and kept current by this broker's commits; a load that overlaps a commit is
 * redone so no committed entry is missed.
 *
 * What a miss reads:
 *  - a WAL entry (one log's section of a WAL object, at most a flush): the
 *    entry's bytes, cached as one run;
 *  - a compacted entry (CO/KCO, up to compaction.max.bytes): never the whole
 *    object. First its footer (the entry table, GET of the LS_CO_FOOTER_SIZE
 *    bytes at index pos + len, validated against the index entry, cached),
 *    then only the block holding x (read_cache.h: whole batches, about
 *    read.ahead.bytes; the rest of the block is the read-ahead a sequential
 *    consumer's next fetches use), cached as one run. A footer or block that
 *    does not match its index entry is LS_ECORRUPT, logged with the object
 *    and byte position; the fetch answers an error for that partition.
 *
 *  - an entry in the table (LS_IDX_TABLE, cold_source.h): the cold-range
 *    source, on a worker, from the wanted offset to the entry's end, about
 *    read.ahead.bytes (or what the op still wants, if more); its batches
 *    are checked (framing, magic, offsets ascending inside the asked
 *    range, starting at the asked offset, then as any run) and cached as
 *    one run (object "table"), remembered in a few per-log slots since runs
 *    are keyed by their last offset: a consumer's following fetches are
 *    served from the cache, as from a CO block. A stale plan (LS_ENOTFOUND)
 *    is retried like a replaced object. Cached blocks stay right when the
 *    table rewrites files (the records do not change); trims and
 *    compaction swaps drop them like any run.
 *
 * A read op walks entries until it has max_bytes (the first entry is always
 * returned whole: progress guarantee) or reaches the high watermark. Misses
 * suspend the op on a worker GET and resume it on the loop; the bytes a GET
 * brought are served to the op before anything else is looked up, so a cache
 * smaller than a block (or 0) still makes progress.
 * Loop thread only, except get_work / load_work (stores only). */
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/diag.h"
#include "base/loop_lag.h"
#include "log/co_format.h"
#include "log/logstore_int.h"
#include "records/records.h"

#define LS_RB_HDR LS_RB_HEADER_SIZE
/* The most a read from a table takes up front for its batches (what the
 * rebuild itself reserves at most, lake/cold_batches.c). */
#define COLD_BUF_MAX ((size_t)64 << 20)

enum { OP_READ, OP_TIME };
enum { GET_ENTRY, GET_FOOTER, GET_BLOCK, GET_TABLE }; /* what a GET in flight reads */

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
    int64_t cold_next;     /* GET_TABLE: one past the last record the source returned */
    bool get_real_offsets; /* a key-compacted object (LS_IDX_KCO) */
    int get_kind;
    /* GET_FOOTER: the index entry the footer must match */
    int64_t ent_first, ent_last;
    uint32_t ent_entries;
    uint64_t ent_pos, ent_end;
    ls_buf_t got;          /* GET_FOOTER, GET_TABLE */
    ls_chunk_t *got_chunk; /* GET_BLOCK, GET_ENTRY (ls_objstore_get_chunk) */
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
    int64_t rev; /* the watch event's revision; 0: this broker's own change */
    bool del;
    ls_idx_entry_t e; /* del: only last_offset */
};

/* ------------------------------------------------------------------- index */

typedef struct load_job {
    ls_logstore_t *ls;
    int64_t log_id;
    ls_idx_entry_t *idx;
    int nidx;
    int64_t rev; /* the store revision the scan observed */
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
    j->rev = l.revision;
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

static void load_after(uv_work_t *w, int status);

/* load_after, named for the loop-lag report (base/loop_lag.h) */
static void load_after_marked(uv_work_t *w, int status)
{
    ls_loop_work_begin("index load completion");
    load_after(w, status);
    ls_loop_work_end();
}

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
        lg->idx_rev = j->rev;
        /* changes other brokers made while we scanned (those the scan
         * already saw are skipped: applied again they would undo later ones) */
        ls_idx_replay_t *list = lg->replay;
        lg->replay = NULL;
        for (ls_idx_replay_t *r = list; r; r = r->next) {
            if (r->rev > 0 && j->rev > 0 && r->rev <= j->rev) continue;
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
    uv_queue_work(ls->loop, &j->work, load_work, load_after_marked);
}

static int idx_ceiling(const ls_logstate_t *lg, int64_t offset);

static void replay_push(ls_logstore_t *ls, ls_logstate_t *lg, const ls_idx_entry_t *e, bool del)
{
    ls_idx_replay_t *r = LS_NEW(ls_idx_replay_t), **pp = &lg->replay;
    r->rev = ls->watch_ev_rev;
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
        replay_push(ls, lg, e, false); /* applied once the load lands */
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
        replay_push(ls, lg, &e, true);
        return;
    }
    if (lg->idx_state != 2) return;
    int i = idx_ceiling(lg, last_offset);
    if (i >= lg->nidx || lg->idx[i].last_offset != last_offset) return;
    ls_read_cache_drop_range(ls->cache, lg->log_id, lg->idx[i].first_offset, last_offset);
    ls_idx_clear(&lg->idx[i]);
    memmove(&lg->idx[i], &lg->idx[i + 1], (size_t)(lg->nidx - i - 1) * sizeof *lg->idx);
    ls->stats.index_moves += (uint64_t)(lg->nidx - i - 1);
    lg->nidx--;
}

void ls_reader_index_del_many(ls_logstore_t *ls, ls_logstate_t *lg, const int64_t *lasts, int n)
{
    if (lg->idx_state != 2) {
        for (int k = 0; k < n; k++)
            ls_reader_index_del(ls, lg, lasts[k]);
        return;
    }
    /* cleared entries (object NULL; objects are never NULL otherwise) keep
     * their keys, so the searches stay valid; one sweep removes them all */
    int lo = lg->nidx;
    for (int k = 0; k < n; k++) {
        int i = idx_ceiling(lg, lasts[k]);
        if (i >= lg->nidx || lg->idx[i].last_offset != lasts[k] || !lg->idx[i].object) continue;
        ls_read_cache_drop_range(ls->cache, lg->log_id, lg->idx[i].first_offset, lasts[k]);
        ls_idx_clear(&lg->idx[i]);
        if (i < lo) lo = i;
    }
    int w = lo;
    for (int i = lo; i < lg->nidx; i++)
        if (lg->idx[i].object) lg->idx[w++] = lg->idx[i];
    ls->stats.index_moves += (uint64_t)(lg->nidx - lo);
    lg->nidx = w;
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
    ls_chunk_release(op->got_chunk);
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
    size_t n = 0;
    if (op->get_kind == GET_FOOTER) {
        op->get_st =
            ls_objstore_get(op->ls->os, op->get_object, op->get_pos, op->get_len, &op->got);
        n = op->got.len;
    } else {
        op->get_st = ls_objstore_get_chunk(op->ls->os, op->get_object, op->get_pos, op->get_len,
                                           op->ls->bufpool, &op->got_chunk);
        if (op->got_chunk) n = op->got_chunk->len;
    }
    if (op->get_st == LS_OK && n != op->get_len) {
        op->get_st = LS_ECORRUPT;
        snprintf(op->get_err, sizeof op->get_err,
                 "the store returned %zu bytes: object shorter than its index entry", n);
    } else if (op->get_st != LS_OK)
        snprintf(op->get_err, sizeof op->get_err, "%s", ls_objstore_error(op->ls->os));
}

static bool take_from_run(ls_read_op_t *op, const ls_cache_run_t *run);

/* What a compacted object's footer must match: its index entry. */
typedef struct co_ent {
    int64_t first, last;
    uint32_t entries;
    uint64_t pos, end; /* where the entries start and end (the footer's position) */
} co_ent_t;

static co_ent_t co_ent_of(const ls_idx_entry_t *e)
{
    return (co_ent_t){e->first_offset, e->last_offset, e->entries, e->pos, e->pos + e->len};
}

/* Checks the footer bytes f[0, len) of `object` (read at ent->end) against
 * its index entry and caches it; false with why. */
static bool footer_accept(ls_logstore_t *ls, int64_t want_log, const char *object,
                          const uint8_t *fb, size_t flen, const co_ent_t *ent, char *why,
                          size_t whylen)
{
    int64_t log_id, first, last;
    ls_co_entry_t *v;
    uint32_t n;
    if (ls_co_footer_parse(fb, flen, ent->end, &log_id, &first, &last, &v, &n, why, whylen) !=
        LS_OK)
        return false;
    bool ok = false;
    if (log_id != want_log || first != ent->first || last != ent->last || n != ent->entries) {
        snprintf(why, whylen,
                 "footer at byte %llu says log %016llx [%lld, %lld] with %u entries, the index "
                 "entry log %016llx [%lld, %lld] with %u",
                 (unsigned long long)ent->end, (unsigned long long)log_id, (long long)first,
                 (long long)last, n, (unsigned long long)want_log, (long long)ent->first,
                 (long long)ent->last, ent->entries);
    } else if (n == 0 || v[0].pos != ent->pos || v[0].base_offset < first ||
               v[n - 1].base_offset > last) {
        snprintf(why, whylen,
                 "footer at byte %llu: entries do not start at byte %llu inside [%lld, %lld]",
                 (unsigned long long)ent->end, (unsigned long long)ent->pos, (long long)first,
                 (long long)last);
    } else {
        int64_t *base = LS_NEWN(int64_t, n);
        uint32_t *pos = LS_NEWN(uint32_t, n);
        for (uint32_t i = 0; i < n; i++) {
            base[i] = v[i].base_offset;
            pos[i] = v[i].pos;
        }
        ls_read_cache_footer_insert(ls->cache, want_log, first, last, object, base, pos, n,
                                    ent->end, (size_t)ls->cfg.read_ahead_bytes);
        ls_free(base);
        ls_free(pos);
        ok = true;
    }
    ls_free(v);
    return ok;
}

/* ---------------------------------------------------------------- read-ahead
 *
 * A read served from block g of a compacted object (past its middle) starts a
 * GET of the block after it — g + 1, or the first block of the next index
 * entry when that is a compacted object too (its footer first, then the
 * block) — so a sequential consumer finds it cached instead of waiting for
 * the store at every block. At most PREFETCH_MAX in flight per store, one per
 * block; only when the cache holds 4 blocks or more (so read-ahead does not
 * evict what is being read). A read that misses a block (or footer) being
 * prefetched parks on it and resumes when it lands. A prefetch that fails is
 * dropped silently: the read that wants the bytes GETs them itself and reports
 * what it finds. Shutdown waits for the GETs in flight. */

#define PREFETCH_MAX 8

struct ls_prefetch {
    ls_logstore_t *ls;
    ls_prefetch_t *next;
    int64_t log_id;
    char *object;
    bool footer; /* reading the footer (then the entry's first block) */
    bool real_offsets;
    co_ent_t ent;
    uint64_t pos;
    uint32_t len;
    int64_t first, last;   /* the block (the entry's range while reading the footer) */
    ls_buf_t got;          /* the footer */
    ls_chunk_t *got_chunk; /* a block */
    ls_status st;
    ls_read_op_t *waiting;
    uv_work_t work;
};

static ls_prefetch_t *prefetch_find(ls_logstore_t *ls, int64_t log_id, int64_t last,
                                    const char *object, bool footer)
{
    for (ls_prefetch_t *p = ls->prefetches; p; p = p->next)
        if (p->log_id == log_id && p->last == last && p->footer == footer &&
            !strcmp(p->object, object))
            return p;
    return NULL;
}

static void prefetch_work(uv_work_t *w)
{
    ls_prefetch_t *p = w->data;
    if (p->footer) {
        p->st = ls_objstore_get(p->ls->os, p->object, p->pos, p->len, &p->got);
        if (p->st == LS_OK && p->got.len != p->len) p->st = LS_ECORRUPT;
    } else {
        p->st = ls_objstore_get_chunk(p->ls->os, p->object, p->pos, p->len, p->ls->bufpool,
                                      &p->got_chunk);
        if (p->st == LS_OK && p->got_chunk->len != p->len) p->st = LS_ECORRUPT;
    }
}

static void prefetch_after(uv_work_t *w, int status);

static void prefetch_queue(ls_prefetch_t *p)
{
    ls_buf_init(&p->got);
    p->work.data = p;
    uv_queue_work(p->ls->loop, &p->work, prefetch_work, prefetch_after);
}

static void prefetch_after(uv_work_t *w, int status)
{
    ls_prefetch_t *p = w->data;
    ls_logstore_t *ls = p->ls;
    ls->stats.store_gets++;
    if (status == UV_ECANCELED) p->st = LS_ESHUTDOWN;
    if (p->st == LS_OK) ls->stats.store_get_bytes += p->footer ? p->got.len : p->got_chunk->len;
    char why[320];
    if (p->footer) {
        ls->stats.footer_gets++;
        ls_cache_run_t *f = NULL;
        if (p->st == LS_OK && footer_accept(ls, p->log_id, p->object, p->got.data, p->got.len,
                                            &p->ent, why, sizeof why))
            f = ls_read_cache_footer_get(ls->cache, p->log_id, p->ent.last, p->object);
        ls_buf_free(&p->got);
        if (f && !ls->shutting_down) {
            /* on to the entry's first block; reads parked on the footer go on */
            ls_co_block_t b;
            ls_co_footer_block(f, p->ent.first, &b);
            ls_read_op_t *waiting = p->waiting;
            p->waiting = NULL;
            p->footer = false;
            p->pos = b.pos;
            p->len = b.len;
            p->first = b.first;
            p->last = b.last;
            if (ls_read_cache_get(ls->cache, p->log_id, b.last) ||
                prefetch_find(ls, p->log_id, b.last, p->object, false)) {
                p->waiting = waiting; /* nothing more to read: finish below */
            } else {
                prefetch_queue(p);
                while (waiting) {
                    ls_read_op_t *op = waiting;
                    waiting = op->next_waiting;
                    op_step(op);
                }
                return;
            }
        }
    } else if (p->st == LS_OK) {
        ls_chunk_t *c = p->got_chunk;
        p->got_chunk = NULL;
        ls_read_cache_insert(ls->cache, p->log_id, p->first, p->last, p->real_offsets, c, 0, c->len,
                             p->object, why, sizeof why);
        ls_chunk_release(c);
    }
    ls_prefetch_t **pp = &ls->prefetches;
    while (*pp != p)
        pp = &(*pp)->next;
    *pp = p->next;
    ls->nprefetches--;
    ls_read_op_t *waiting = p->waiting;
    ls_buf_free(&p->got);
    ls_chunk_release(p->got_chunk);
    ls_free(p->object);
    ls_free(p);
    while (waiting) {
        ls_read_op_t *op = waiting;
        waiting = op->next_waiting;
        op_step(op);
    }
    if (ls->shutting_down) ls_logstore_check_shutdown(ls);
}

static void prefetch_start(ls_logstore_t *ls, int64_t log_id, const ls_idx_entry_t *e, bool footer,
                           const ls_co_block_t *b)
{
    ls_prefetch_t *p = LS_NEW(ls_prefetch_t);
    p->ls = ls;
    p->log_id = log_id;
    p->object = ls_strdup(e->object);
    p->footer = footer;
    p->real_offsets = e->kind == LS_IDX_KCO;
    p->ent = co_ent_of(e);
    if (footer) {
        p->pos = p->ent.end;
        p->len = (uint32_t)LS_CO_FOOTER_SIZE(e->entries);
        p->first = e->first_offset;
        p->last = e->last_offset;
    } else {
        p->pos = b->pos;
        p->len = b->len;
        p->first = b->first;
        p->last = b->last;
    }
    p->next = ls->prefetches;
    ls->prefetches = p;
    ls->nprefetches++;
    prefetch_queue(p);
}

/* After a read used block blk of index entry i of lg: read the next block
 * ahead (see above). */
static void maybe_prefetch(ls_logstore_t *ls, ls_logstate_t *lg, int i, const ls_co_block_t *blk)
{
    if (ls->shutting_down || ls->nprefetches >= PREFETCH_MAX ||
        ls_read_cache_max_bytes(ls->cache) < 4 * (size_t)ls->cfg.read_ahead_bytes)
        return;
    const ls_idx_entry_t *e = &lg->idx[i];
    ls_co_block_t nb;
    if (blk->last < e->last_offset) {
        ls_cache_run_t *f =
            ls_read_cache_footer_get(ls->cache, lg->log_id, e->last_offset, e->object);
        if (!f) return;
        ls_co_footer_block(f, blk->last + 1, &nb);
    } else {
        if (i + 1 >= lg->nidx) return;
        e = &lg->idx[i + 1];
        if (e->kind == LS_IDX_WAL || e->kind == LS_IDX_TABLE || e->entries == 0) return;
        ls_cache_run_t *f =
            ls_read_cache_footer_get(ls->cache, lg->log_id, e->last_offset, e->object);
        if (!f) {
            if (!prefetch_find(ls, lg->log_id, e->last_offset, e->object, true))
                prefetch_start(ls, lg->log_id, e, true, NULL);
            return;
        }
        ls_co_footer_block(f, e->first_offset, &nb);
    }
    ls_cache_run_t *r = ls_read_cache_peek(ls->cache, lg->log_id, nb.last);
    if (r && r->first_offset == nb.first && !strcmp(r->object, e->object)) return;
    if (prefetch_find(ls, lg->log_id, nb.last, e->object, false)) return;
    prefetch_start(ls, lg->log_id, e, false, &nb);
}

static void get_after(uv_work_t *w, int status);

/* get_after, named for the loop-lag report (base/loop_lag.h) */
static void get_after_marked(uv_work_t *w, int status)
{
    ls_loop_work_begin("store read completion");
    get_after(w, status);
    ls_loop_work_end();
}

static void get_after(uv_work_t *w, int status)
{
    ls_read_op_t *op = w->data;
    ls_logstore_t *ls = op->ls;
    ls->stats.store_gets++;
    if (op->get_kind == GET_FOOTER) ls->stats.footer_gets++;
    if (status == UV_ECANCELED) op->get_st = LS_ESHUTDOWN;
    if (op->get_st == LS_ENOTFOUND && op->retries++ < 3) {
        /* the object was compacted away after we looked the entry up: the
         * index now names its replacement */
        op_step(op);
        return;
    }
    const char *part = op->get_kind == GET_FOOTER  ? "footer"
                       : op->get_kind == GET_BLOCK ? "block"
                                                   : "entry";
    if (op->get_st != LS_OK) {
        /* A store that is unreachable or failing (transient: the fetch
         * answers KAFKA_STORAGE_ERROR for this partition and the client
         * retries) is a rate-limited warning; data that does not match its
         * index is an error. */
        if (op->get_st == LS_ECORRUPT || op->get_st == LS_ENOTFOUND)
            LS_ERROR("log", "reading %u bytes at %llu (%s) of %s for log %016llx: %s (%s)",
                     op->get_len, (unsigned long long)op->get_pos, part, op->get_object,
                     (unsigned long long)op->log_id, ls_status_str(op->get_st),
                     op->get_st == LS_ECORRUPT ? op->get_err : "object missing");
        else if (op->get_st != LS_ESHUTDOWN)
            LS_WARN_RL("log",
                       "reading %u bytes at %llu (%s) of %s for log %016llx failed: %s (%s); "
                       "the fetch answers KAFKA_STORAGE_ERROR and the client retries",
                       op->get_len, (unsigned long long)op->get_pos, part, op->get_object,
                       (unsigned long long)op->log_id, ls_status_str(op->get_st), op->get_err);
        if (op->res.nslices == 0)
            op->res.st = op->get_st == LS_ENOTFOUND ? LS_ECORRUPT : op->get_st;
        op->next = INT64_MAX;
        op_step(op);
        return;
    }
    ls->stats.store_get_bytes += op->get_kind == GET_FOOTER ? op->got.len : op->got_chunk->len;
    char why[320];
    if (op->get_kind == GET_FOOTER) {
        co_ent_t ent = {op->ent_first, op->ent_last, op->ent_entries, op->ent_pos, op->ent_end};
        if (!footer_accept(ls, op->log_id, op->get_object, op->got.data, op->got.len, &ent, why,
                           sizeof why)) {
            LS_ERROR("log", "compacted object %s of log %016llx is corrupt: %s", op->get_object,
                     (unsigned long long)op->log_id, why);
            if (op->res.nslices == 0) op->res.st = LS_ECORRUPT;
            op->next = INT64_MAX;
        }
        ls_buf_free(&op->got);
        op_step(op);
        return;
    }
    ls_chunk_t *c = op->got_chunk;
    size_t len = c->len;
    op->got_chunk = NULL;
    ls_cache_run_t *run =
        ls_read_cache_insert(ls->cache, op->log_id, op->get_first, op->get_last,
                             op->get_real_offsets, c, 0, len, op->get_object, why, sizeof why);
    ls_chunk_release(c);
    if (!run) {
        LS_ERROR("log",
                 "log %016llx: %s (byte positions relative to the %s read at byte %llu of %s)",
                 (unsigned long long)op->log_id, why, part, (unsigned long long)op->get_pos,
                 op->get_object);
        if (op->res.nslices == 0) op->res.st = LS_ECORRUPT;
        op->next = INT64_MAX;
        op_step(op);
        return;
    }
    /* Serve what was just read before any other lookup: with a cache smaller
     * than what one read needs (footer + block), looking it up again could
     * find it evicted. Same checks op_step makes before serving a run. */
    ls_logstate_t *lg = ls_logstate_get(ls, op->log_id, false);
    if (lg && op->get_kind == GET_BLOCK && lg->idx_state == 2) {
        /* read the next block ahead while this one is served */
        int i = idx_ceiling(lg, op->get_last);
        if (i < lg->nidx && !strcmp(lg->idx[i].object, op->get_object)) {
            ls_co_block_t blk = {.first = op->get_first, .last = op->get_last};
            maybe_prefetch(ls, lg, i, &blk);
        }
    }
    if (lg && op->res.st == LS_OK && op->next >= run->first_offset &&
        op->next <= run->last_offset && op->next < lg->head.next_offset &&
        !(op->mode == OP_READ && op->res.nslices == 0 && op->next < lg->log_start) &&
        !(op->committed && op->next >= ls_log_txn_lso(&lg->head))) {
        if (!take_from_run(op, run)) {
            op_finish(op);
            return;
        }
    }
    op_step(op);
}

static void start_get(ls_read_op_t *op, int kind, const ls_idx_entry_t *e, uint64_t pos,
                      uint32_t len, int64_t first, int64_t last)
{
    op->ls->stats.cache_misses++;
    ls_read_cache_count(false);
    ls_free(op->get_object);
    op->get_object = ls_strdup(e->object);
    op->get_kind = kind;
    op->get_pos = pos;
    op->get_len = len;
    op->get_first = first;
    op->get_last = last;
    op->get_real_offsets = e->kind == LS_IDX_KCO;
    op->ent_first = e->first_offset;
    op->ent_last = e->last_offset;
    op->ent_entries = e->entries;
    op->ent_pos = e->pos;
    op->ent_end = e->pos + e->len;
    ls_buf_init(&op->got);
    ls_chunk_release(op->got_chunk);
    op->got_chunk = NULL;
    op->work.data = op;
    uv_queue_work(op->ls->loop, &op->work, get_work, get_after_marked);
}

/* ------------------------------------------------------- in-table ranges */

void ls_logstore_set_cold_source(ls_logstore_t *ls, const ls_cold_source_t *src)
{
    if (src)
        ls->cold = *src;
    else
        memset(&ls->cold, 0, sizeof ls->cold);
}

static void cold_work(uv_work_t *w)
{
    ls_read_op_t *op = w->data;
    ls_logstore_t *ls = op->ls;
    op->cold_next = op->get_first;
    if (!ls->cold.read) {
        op->get_st = LS_EIO;
        snprintf(op->get_err, sizeof op->get_err,
                 "the range is in the log's table and this broker has no cold-range source");
        return;
    }
    op->get_st = ls->cold.read(ls->cold.ctx, op->log_id, op->get_first, op->get_last, op->get_len,
                               &op->got, &op->cold_next, op->get_err, sizeof op->get_err);
    if (op->get_st != LS_OK) return;
    /* What the source returned must be batches of [from, to] that start at
     * from and end at *next - 1, in offset order. */
    const uint8_t *p = op->got.data;
    size_t pos = 0, len = op->got.len;
    int64_t expect = op->get_first;
    while (pos < len) {
        if (len - pos < LS_RB_HDR || p[pos + 16] != 2) goto bad;
        uint32_t blen = ls_be32_get(p + pos + 8);
        if (blen < LS_RB_HDR - 12 || blen > len - pos - 12) goto bad;
        int64_t base = (int64_t)ls_be64_get(p + pos);
        int64_t end = base + (int32_t)ls_be32_get(p + pos + 23) + 1;
        if ((pos == 0 && base != op->get_first) || base < expect || end <= base ||
            end - 1 > op->get_last)
            goto bad;
        expect = end;
        pos += 12 + (size_t)blen;
    }
    if (expect != op->cold_next || op->cold_next == op->get_first) {
        if (op->cold_next == op->get_first && len == 0)
            snprintf(op->get_err, sizeof op->get_err, "the table holds no row at offset %lld",
                     (long long)op->get_first);
        else
            snprintf(op->get_err, sizeof op->get_err,
                     "the batches end at %lld, the source says %lld", (long long)expect,
                     (long long)op->cold_next);
        op->get_st = LS_ECORRUPT;
    }
    return;
bad:
    op->get_st = LS_ECORRUPT;
    snprintf(op->get_err, sizeof op->get_err,
             "bad batch at byte %zu of %zu rebuilt for [%lld, %lld]", pos, len,
             (long long)op->get_first, (long long)op->get_last);
}

static void cold_after(uv_work_t *w, int status)
{
    ls_read_op_t *op = w->data;
    ls_logstore_t *ls = op->ls;
    ls->stats.store_gets++;
    ls->stats.cold_reads++;
    if (status == UV_ECANCELED) op->get_st = LS_ESHUTDOWN;
    if (op->get_st == LS_ENOTFOUND && op->retries++ < 3) {
        /* a data file replaced after the source planned the read: re-plan */
        ls_buf_free(&op->got);
        op_step(op);
        return;
    }
    if (op->get_st != LS_OK) {
        if (op->get_st == LS_ECORRUPT || op->get_st == LS_ENOTFOUND)
            LS_ERROR("log", "log %016llx: reading [%lld, %lld] from its table: %s (%s)",
                     (unsigned long long)op->log_id, (long long)op->get_first,
                     (long long)op->get_last, ls_status_str(op->get_st), op->get_err);
        else if (op->get_st != LS_ESHUTDOWN)
            LS_WARN_RL("log",
                       "log %016llx: reading [%lld, %lld] from its table failed: %s (%s); the "
                       "fetch answers KAFKA_STORAGE_ERROR and the client retries",
                       (unsigned long long)op->log_id, (long long)op->get_first,
                       (long long)op->get_last, ls_status_str(op->get_st), op->get_err);
        ls_buf_free(&op->got);
        if (op->res.nslices == 0)
            op->res.st = op->get_st == LS_ENOTFOUND ? LS_ECORRUPT : op->get_st;
        op->next = INT64_MAX;
        op_step(op);
        return;
    }
    ls->stats.store_get_bytes += op->got.len;
    size_t len = op->got.len;
    ls_chunk_t *c;
    if (len >= op->got.cap / 2) {
        c = ls_bufpool_chunk(ls->bufpool, &op->got); /* the cache counts its capacity */
    } else { /* a short block (a range's end): copied, the buffer goes back */
        c = ls_chunk_new(len);
        memcpy(c->data, op->got.data, len);
        ls_chunk_release(ls_bufpool_chunk(ls->bufpool, &op->got));
    }
    ls_logstate_t *lg = ls_logstate_get(ls, op->log_id, false);
    char why[320];
    ls_cache_run_t *run =
        ls_read_cache_insert(ls->cache, op->log_id, op->get_first, op->cold_next - 1, true, c, 0,
                             len, LS_COLD_TABLE_OBJECT, why, sizeof why);
    ls_chunk_release(c);
    if (!run) {
        LS_ERROR("log", "log %016llx: batches rebuilt from the table for [%lld, %lld]: %s",
                 (unsigned long long)op->log_id, (long long)op->get_first,
                 (long long)op->cold_next - 1, why);
        if (op->res.nslices == 0) op->res.st = LS_ECORRUPT;
        op->next = INT64_MAX;
        op_step(op);
        return;
    }
    if (lg) { /* remember the block for the following fetches */
        int k = lg->cold_slot++ % LS_COLD_BLOCK_SLOTS;
        lg->cold_blocks[k].first = op->get_first;
        lg->cold_blocks[k].last = op->cold_next - 1;
    }
    /* Same checks op_step makes before serving (a trim may have passed the
     * offset while the source read): when they fail, op_step decides. */
    if (!lg || op->res.st != LS_OK || op->next != op->get_first ||
        op->next >= lg->head.next_offset ||
        (op->mode == OP_READ && op->res.nslices == 0 && op->next < lg->log_start) ||
        (op->committed && op->next >= ls_log_txn_lso(&lg->head))) {
        op_step(op);
        return;
    }
    if (take_from_run(op, run))
        op_step(op);
    else
        op_finish(op);
}

/* A block rebuilt from the table that holds offset x of entry e and is
 * still in the read cache, or NULL. */
static ls_cache_run_t *cold_cached(ls_logstore_t *ls, ls_logstate_t *lg, const ls_idx_entry_t *e,
                                   int64_t x)
{
    for (int k = 0; k < LS_COLD_BLOCK_SLOTS; k++) {
        int64_t first = lg->cold_blocks[k].first, last = lg->cold_blocks[k].last;
        if (last < first || x < first || x > last || first < e->first_offset ||
            last > e->last_offset)
            continue;
        ls_cache_run_t *run = ls_read_cache_get(ls->cache, lg->log_id, last);
        if (run && run->first_offset == first && !strcmp(run->object, LS_COLD_TABLE_OBJECT))
            return run;
    }
    return NULL;
}

static void start_cold(ls_read_op_t *op, const ls_idx_entry_t *e)
{
    ls_logstore_t *ls = op->ls;
    ls->stats.cache_misses++;
    ls_read_cache_count(false);
    ls_free(op->get_object);
    op->get_object = ls_strdup(e->object);
    op->get_kind = GET_TABLE;
    op->get_first = op->next;
    op->get_last = e->last_offset;
    /* a read-ahead block (cached for the fetches that follow), or more
     * when the fetch wants more */
    size_t want = (size_t)ls->cfg.read_ahead_bytes;
    if (op->mode == OP_READ && op->max_bytes > op->res.bytes &&
        op->max_bytes - op->res.bytes > want)
        want = op->max_bytes - op->res.bytes;
    op->get_len = want > UINT32_MAX ? UINT32_MAX : (uint32_t)(want ? want : 1);
    /* the batches are written into a pooled buffer (no fresh pages to
     * fault in: a third of a catch-up's CPU when every block was new
     * memory), with room for the block's last batch header; at most
     * COLD_BUF_MAX up front (a fetch may ask for 2 GiB a partition: a read
     * returning more grows the buffer as its batches come) */
    size_t room = (size_t)op->get_len + LS_RB_HDR + 1024;
    ls_bufpool_take(ls->bufpool, &op->got, room < COLD_BUF_MAX ? room : COLD_BUF_MAX);
    op->work.data = op;
    uv_queue_work(ls->loop, &op->work, cold_work, cold_after);
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
        if (e->kind == LS_IDX_TABLE) {
            ls_cache_run_t *run = cold_cached(ls, lg, e, op->next);
            if (!run) {
                start_cold(op, e);
                return;
            }
            ls->stats.cache_hits++;
            ls_read_cache_count(true);
            if (!take_from_run(op, run)) {
                op_finish(op);
                return;
            }
            continue;
        }
        if (e->kind == LS_IDX_KCO && e->entries == 0) {
            /* key compaction removed every record of the range */
            op->next = e->last_offset + 1;
            continue;
        }
        /* the run to serve from: the entry's (WAL), or the block of the
         * compacted object holding op->next (read_cache.h) */
        int64_t rfirst = e->first_offset, rlast = e->last_offset;
        ls_co_block_t blk = {0};
        if (e->kind != LS_IDX_WAL) {
            ls_cache_run_t *f =
                ls_read_cache_footer_get(ls->cache, op->log_id, e->last_offset, e->object);
            if (!f) {
                ls_prefetch_t *p = prefetch_find(ls, op->log_id, e->last_offset, e->object, true);
                if (p) { /* being read ahead: wait for it */
                    op->next_waiting = p->waiting;
                    p->waiting = op;
                    return;
                }
                uint32_t flen = (uint32_t)LS_CO_FOOTER_SIZE(e->entries);
                start_get(op, GET_FOOTER, e, e->pos + e->len, flen, e->first_offset,
                          e->last_offset);
                return;
            }
            ls_co_footer_block(f, op->next, &blk);
            rfirst = blk.first;
            rlast = blk.last;
        }
        ls_cache_run_t *run = ls_read_cache_get(ls->cache, op->log_id, rlast);
        if (run && (run->first_offset != rfirst || strcmp(run->object, e->object))) {
            /* cached for an entry that compaction has since replaced (a GET
             * that completed after the swap caches the old object's bytes),
             * or the entry run a compacted object's last block replaces */
            ls_read_cache_remove(ls->cache, run);
            run = NULL;
        }
        if (!run) {
            if (e->kind == LS_IDX_WAL) {
                start_get(op, GET_ENTRY, e, e->pos, e->len, e->first_offset, e->last_offset);
                return;
            }
            ls_prefetch_t *p = prefetch_find(ls, op->log_id, blk.last, e->object, false);
            if (p) { /* being read ahead: wait for it */
                op->next_waiting = p->waiting;
                p->waiting = op;
                return;
            }
            start_get(op, GET_BLOCK, e, blk.pos, blk.len, blk.first, blk.last);
            return;
        }
        ls->stats.cache_hits++;
        ls_read_cache_count(true);
        bool more = take_from_run(op, run);
        if (e->kind != LS_IDX_WAL && op->next > blk.first + (blk.last - blk.first) / 2)
            maybe_prefetch(ls, lg, i, &blk);
        if (!more) {
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
    ls_logstore_apply_compaction_from(ls, log_id, co, co->first_offset);
}

void ls_logstore_apply_compaction_from(ls_logstore_t *ls, int64_t log_id, const ls_idx_entry_t *co,
                                       int64_t changed_from)
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
    ls_read_cache_drop_range(ls->cache, log_id, changed_from, co->last_offset);
}

void ls_logstore_reload_index(ls_logstore_t *ls, int64_t log_id)
{
    ls_logstate_t *lg = ls_logstate_get(ls, log_id, false);
    if (!lg) return;
    /* loaded: dropped, the next read loads it; loading: scanned again */
    ls_reader_drop_log(ls, lg);
}
