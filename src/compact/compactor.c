/* Compaction: WAL entries -> one compacted object (CO) per log range. A pass
 * (worker thread) takes each unfenced log's oldest run of WAL entries older
 * than the hot window, writes one CO create-only under a deterministic key,
 * appends the range to the log's table when one is enabled (lake/, before the
 * swap), and swaps the index in one metadata txn; the loop then applies the
 * new entry. Invariant: every offset in [log start, high watermark) is
 * covered by an index entry at every instant. The full design (steps,
 * invariants, freshness, leases, deleted topics) is src/compact/README.md. */
#include "compact/compactor.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/crashpoint.h"
#include "base/diag.h"
#include "base/i64map.h"
#include "base/loop_lag.h"
#include "base/metrics.h"
#include "base/thread.h"
#include "base/uuid.h"
#include "compact/keycompact.h"
#include "compact/log_lease.h"
#include "lake/materialize.h"
#include "compact/retention.h"
#include "lake/table_plan.h"
#include "lake/unfold.h"
#include "compact/wal_blocks.h"
#include "log/co_format.h"
#include "log/cold_source.h"
#include "log/log_meta.h"
#include "log/log_trim.h"
#include "log/read_cache.h"
#include "log/wal_format.h"
#include "log/walobj_refs.h"
#include "stream/broker_config.h"

#define SWAP_ATTEMPTS 4
/* Memory a pass may hold of WAL objects it reads whole (wal_blocks.h): at
 * 4 KB to 4 MiB per object, 16 to 16,000 objects of backlog read once each. */
#define WAL_READ_BUDGET ((size_t)64 << 20)

/* The PUT of a table log's CO runs on its own thread (ls-co-put) while the
 * pass turns the same bytes into table rows: the write's copy into the
 * store and its fsync overlap the Parquet encoding, on the other core. The
 * pass joins it before the range may be swapped (every path out of
 * compact_log joins), so the swap order is unchanged: CO durable, table
 * commit, index swap. Rows added while the PUT fails stay in the batch:
 * the table commit records their offsets, and the retry (the range still
 * in WAL entries) writes the CO again and skips them (lake/materialize.c). */
typedef struct co_put {
    ls_objstore_t *os;
    const char *key;
    struct iovec iov;
    ls_status st;
    pthread_t th;
    bool started; /* on a thread, not joined yet */
} co_put_t;

static void *co_put_main(void *arg)
{
    co_put_t *p = arg;
    p->st = ls_objstore_put(p->os, p->key, &p->iov, 1, LS_OBJSTORE_PUT_CREATE_ONLY);
    return NULL;
}

/* Starts the PUT on a thread when overlap is asked for (and a thread
 * starts), else runs it here. */
static void co_put_start(co_put_t *p, bool overlap)
{
    p->started = overlap && ls_thread_start(&p->th, "ls-co-put", co_put_main, p) == 0;
    if (!p->started) co_put_main(p);
}

static ls_status co_put_join(co_put_t *p)
{
    if (p->started) pthread_join(p->th, NULL);
    p->started = false;
    return p->st;
}

typedef struct done_cb {
    void (*fn)(void *);
    void *arg;
    struct done_cb *next;
} done_cb_t;

typedef struct result {
    int64_t log_id;
    ls_idx_entry_t co;
    int64_t changed_from; /* offsets below it kept their records' source (an extension) */
    bool put;             /* an unfold swap (unfold.c): the log's index is reloaded */
    int64_t *aborts_gone; /* aborted records a key compaction deleted (first offsets) */
    size_t naborts_gone;
    struct result *next;
} result_t;

/* An index swap: n WAL entries (their keys and mod revisions) replaced by
 * one CO entry, with the WAL object counts to decrement. */
typedef struct swap {
    int64_t log_id;
    int n;
    ls_kv_t *kvs;      /* key, klen, mod_rev of each replaced entry (keys owned) */
    ls_idx_entry_t co; /* object owned */
    ls_walrefs_t refs;
    uint64_t bytes; /* size of the CO */
    ls_kv_t prev;   /* an in-table entry co extends (prev.key NULL: none) */
    uint32_t prev_len;
    int64_t prev_last;                        /* its last offset */
    int64_t extend_max_bytes, extend_span_ms; /* in-table: bounds of an extension */
} swap_t;

static void swap_free(swap_t *s)
{
    ls_free(s->prev.key);
    for (int i = 0; i < s->n; i++)
        ls_free(s->kvs[i].key);
    ls_free(s->kvs);
    ls_idx_clear(&s->co);
    ls_walrefs_free(&s->refs);
    ls_free(s);
}

typedef struct trim_done {
    int64_t log_id;
    ls_trim_result_t r;
    struct trim_done *next;
} trim_done_t;

/* Metrics (docs/OPERATIONS.md "Metrics"): the compaction passes here, and
 * each table's state as this pass saw it (published whole at the end of
 * every pass, so a table turned off disappears). Lag and last commit come
 * from the table's recorded status (the same on every broker); its size
 * from this broker's last commit of it (absent on a broker that has not
 * committed it since it started). */
static LS_METRIC_HISTOGRAM(m_pass_seconds, "lakestream_compaction_pass_duration_seconds",
                           "Compaction passes (full: every log; tables: table logs only).",
                           ls_metrics_latency_bounds, "kind");
static LS_METRIC_GAUGE(m_backlog, "lakestream_compaction_backlog_seconds",
                       "After the last full pass: how long the oldest WAL entry still due for "
                       "compaction has been due, over every log (0: none waits).",
                       NULL);
static LS_METRIC_COUNTER(m_objects, "lakestream_compaction_objects_written",
                         "Compacted objects written.", NULL);
static LS_METRIC_COUNTER(m_bytes, "lakestream_compaction_bytes_written",
                         "Bytes of compacted objects written.", NULL);
static LS_METRIC_COUNTER(m_rows, "lakestream_table_rows_materialized",
                         "Rows this broker added to tables.", NULL);
static LS_METRIC_COUNTER(m_table_failures, "lakestream_table_commit_failures",
                         "Table commits or backfills that failed (retried).", NULL);
static LS_METRIC_GAUGE(m_lag_s, "lakestream_table_lag_seconds",
                       "How long the oldest stable record the table does not hold yet has waited.",
                       "namespace", "table");
static LS_METRIC_GAUGE(m_lag_rec, "lakestream_table_lag_records",
                       "Stable records of the stream the table does not hold yet (its consumer "
                       "group lag).",
                       "namespace", "table");
static LS_METRIC_GAUGE(m_commit_ts, "lakestream_table_last_commit_timestamp_seconds",
                       "Wall-clock time of the table's last recorded commit.", "namespace",
                       "table");
static LS_METRIC_GAUGE(m_snapshots, "lakestream_table_snapshots", "Snapshots the table keeps.",
                       "namespace", "table");
static LS_METRIC_GAUGE(m_files, "lakestream_table_data_files",
                       "Live data files of the table's current snapshot.", "namespace", "table");
static LS_METRIC_GAUGE(m_tbytes, "lakestream_table_bytes",
                       "Bytes of the live data files of the table's current snapshot.", "namespace",
                       "table");
static LS_METRIC_GAUGE(m_trows, "lakestream_table_rows", "Rows of the table's current snapshot.",
                       "namespace", "table");
static LS_METRIC_GAUGE(m_skipped, "lakestream_table_skipped_records",
                       "Records the table skipped (lakestream.table.error.handling=skip or "
                       "dead-letter), as of its last commit.",
                       "namespace", "table");

typedef struct table_metrics {
    ls_metrics_rows_t lag_s, lag_rec, commit_ts, snapshots, files, bytes, rows, skipped;
} table_metrics_t;

typedef struct table_totals {
    ls_mat_totals_t t;
    int64_t skipped; /* -1: not known */
} table_totals_t;

struct ls_compactor {
    uv_loop_t *loop;
    ls_logstore_t *logs;
    ls_meta_t *meta;
    ls_objstore_t *os;
    ls_compactor_config_t cfg;
    uv_timer_t timer;
    bool running;
    bool stopping;
    done_cb_t *waiters;
    void (*stop_done)(void *);
    void *stop_arg;
    uv_work_t work;
    result_t *results; /* filled by the worker, in swap order (a key compaction
                        * may replace the CO an earlier swap of the pass made) */
    result_t **results_tail;
    ls_compactor_stats_t stats; /* worker writes during a pass, loop reads after */
    /* freshness schedule: written by the worker during a pass, read by the loop after */
    ls_table_marks_t marks;    /* worker only */
    ls_i64map_t cursors;       /* worker only: log_id -> int64_t *, see compact_log */
    ls_i64map_t merge_due;     /* worker only: log_id -> int64_t * COs swapped in since
                                * its last merge check (key_compact) */
    ls_i64map_t table_commits; /* worker only: stream_no -> int64_t * time of its last commit */
    ls_i64map_t orphan_sweeps; /* worker only: stream_no -> int64_t * time of its last sweep */
    ls_i64map_t idle_checks;   /* worker only: stream_no -> int64_t * time of its next
                                * idle maintenance (idle_maintain) */
    ls_i64map_t rewrite_waits; /* worker only: stream_no -> int64_t * commits since its check */
    int64_t cur_lag_ms;        /* worker: lag seen by the last compact_log scan */
    ls_i64map_t lags_next;     /* worker: stream_no -> int64_t * table lag, this pass */
    ls_i64map_t lags;          /* loop: the same, of the last finished pass */
    ls_i64map_t vers_next;     /* worker: stream_no -> char * table (version) begun, this pass */
    ls_i64map_t vers;          /* loop: stream_no -> char * the last one begun */
    /* why tables are held back: values "<why>\0<ns>\x1f<table>\0" */
    ls_i64map_t held_next; /* worker: stream_no -> why this pass ("": it committed) */
    ls_i64map_t held;      /* stream_no -> why it is held, until a commit; written by the
                            * loop under held_mu, read by the loop and (locked) by the
                            * REST catalog's threads */
    pthread_mutex_t held_mu;
    ls_i64map_t skips_next;  /* worker: stream_no -> int64_t * records skipped, at a commit */
    ls_i64map_t skips;       /* loop: the same, as of the last commit seen */
    int64_t next_full_ms;    /* wall clock of the next full pass */
    int64_t next_due_ms;     /* earliest WAL entry of a table log to become due; 0: none */
    int64_t table_period_ms; /* smallest commit interval of an enabled table; 0: none */
    bool pass_full;          /* set by the loop before queueing a pass */
    /* ownership (log_lease.c) and retention */
    ls_lease_owner_t *owner;
    char owner_prefix[64]; /* this broker's part of owner names */
    bool reclaimed;        /* a previous run's claims were freed */
    ls_log_claim_t claim;  /* worker: the claim of the log being worked on */
    uv_timer_t retention_timer;
    bool retention_due;       /* loop: a retention check is owed */
    bool pass_retention;      /* set by the loop before queueing a pass */
    uv_timer_t reclaim_timer; /* ls_compactor_reclaim_after: deleted topics' storage */
    bool reclaim_due;         /* loop: a reclaim of deleted logs is owed */
    bool pass_reclaim;        /* set by the loop before queueing a pass */
    bool pass_compact;        /* idem: compaction enabled, or a kick */
    trim_done_t *trims;       /* filled by the worker */
    /* worker: the table task in progress (table_task); the claim and the
     * batch are taken lazily, when a partition first has work, so an idle
     * table costs no write and no table load */
    const ls_table_plan_stream_t *table_ts;
    ls_log_claim_t table_claim;
    bool table_tried;      /* the claim was asked for in this task */
    bool batch_failed;     /* opening the table failed in this task */
    ls_mat_batch_t *batch; /* the table's one commit of this pass */
    swap_t **pending;      /* index swaps waiting for that commit */
    size_t npending, cappending;
    int64_t pend_log, pend_next; /* the log being worked: scan from pend_next */
    int handles_open;
    /* worker: cold references (unfold.h) by log id, ls_unfold_ref_t *; read
     * at full passes, kept current by this compactor's own changes */
    ls_i64map_t refs;
    bool refs_loaded;
    ls_wal_blocks_t wal_reads; /* worker: the pass's WAL object reads (one GET each) */
    /* worker: metrics (base/metrics.h) of the pass, published at its end */
    int64_t pass_backlog_ms;  /* longest a due WAL entry of a log waited, after its rounds */
    table_metrics_t tm;       /* per-table rows */
    ls_i64map_t table_totals; /* stream_no -> table_totals_t * as of this broker's last
                               * commit of the table */
};

/* Queues an index swap for the loop (pass_after applies them in order). */
static result_t *push_result(ls_compactor_t *c, int64_t log_id, const ls_idx_entry_t *e)
{
    result_t *res = LS_NEW(result_t);
    res->log_id = log_id;
    res->changed_from = e->first_offset;
    res->co = *e;
    res->co.object = ls_strdup(e->object);
    if (!c->results_tail) c->results_tail = &c->results;
    *c->results_tail = res;
    c->results_tail = &res->next;
    return res;
}

/* First offset of the selection written at or after since_ms (start.position
 * = latest: older records are not the table's); last + 1 when none is. */
static int64_t first_since(const ls_idx_entry_t *sel, int n, int64_t since_ms)
{
    for (int i = 0; i < n; i++)
        if (ls_wal_key_time(sel[i].object) >= since_ms) return sel[i].first_offset;
    return sel[n - 1].last_offset + 1;
}

/* Claims log_id for the current task; 1 if the task may go on. */
static int claim_log(ls_compactor_t *c, int64_t log_id)
{
    ls_status st = ls_log_claim(c->owner, log_id, &c->claim);
    if (st == LS_EEXISTS) {
        c->stats.logs_owned_elsewhere++;
    } else if (st != LS_OK) {
        LS_WARN_RL("compact", "log %016llx: claiming it failed: %s (will retry)",
                   (unsigned long long)log_id, ls_status_str(st));
        c->stats.failures++;
    }
    return st == LS_OK;
}

/* The scan cursor of a log: an offset at or below its first WAL (not yet
 * compacted) index entry; 0 when this compactor has not looked at the log.
 * Only compacted entries lie below it, so a scan starts there instead of at
 * the head of the index (which after a day at a 1 s commit interval holds
 * tens of thousands of compacted entries). It never passes a WAL entry:
 * index entries below a compacted one are never added again (appends take
 * offsets above the high watermark), and a cursor left behind by another
 * broker's work (it compacted further under its claim) only costs a longer
 * scan. Kept in memory: after a restart the first scan walks the compacted
 * entries once, a page at a time. */
static int64_t cursor_get(ls_compactor_t *c, int64_t log_id)
{
    int64_t *v = ls_i64map_get(&c->cursors, log_id);
    return v ? *v : 0;
}

static void cursor_set(ls_compactor_t *c, int64_t log_id, int64_t offset)
{
    int64_t *v = ls_i64map_get(&c->cursors, log_id);
    if (!v) {
        v = LS_NEW(int64_t);
        ls_i64map_put(&c->cursors, log_id, v);
    }
    if (offset > *v) *v = offset;
}

/* Scans the index of log_id from its cursor for the first page that holds
 * an entry not yet compacted, advancing the cursor over compacted entries on
 * the way. On LS_OK, l holds that page (its leading entries may still be
 * compacted ones); an index with only compacted entries gives an empty or
 * all-compacted last page. */
static ls_status scan_uncompacted(ls_compactor_t *c, int64_t log_id, size_t page, ls_kvlist_t *l)
{
    char prefix[64], from[96];
    ls_log_idx_prefix(prefix, sizeof prefix, log_id);
    for (;;) {
        int64_t start = cursor_get(c, log_id);
        if (c->pend_log == log_id && c->pend_next > start)
            start = c->pend_next; /* past ranges waiting for the table commit */
        ls_log_idx_key(from, sizeof from, log_id, start);
        ls_status st = ls_meta_scan_from(c->meta, prefix, from, page, l);
        if (st != LS_OK) return st;
        size_t i = 0;
        for (; i < l->n; i++) {
            ls_idx_entry_t e;
            if (ls_idx_decode(l->v[i].val, l->v[i].vlen, &e) != LS_OK)
                return LS_OK; /* compact_log reports it at this entry */
            bool compacted = e.kind != LS_IDX_WAL;
            int64_t next = e.last_offset + 1;
            ls_idx_clear(&e);
            if (!compacted) return LS_OK;
            cursor_set(c, log_id, next);
        }
        if (!l->more) return LS_OK;
        ls_kvlist_free(l); /* a full page of compacted entries: next page */
        c->stats.index_pages_skipped++;
    }
}

/* The retention policy of ts's logs (ts NULL: the broker defaults), with the
 * broker defaults as the cluster's dynamic broker configs set them now. */
static void retention_policy(ls_compactor_t *c, const ls_table_plan_stream_t *ts,
                             ls_retention_policy_t *p)
{
    int64_t def_ms = c->cfg.catalog ? ls_bcfg_effective(c->cfg.catalog, LS_BCFG_LOG_RETENTION_MS,
                                                        c->cfg.retention_ms, NULL)
                                    : c->cfg.retention_ms;
    int64_t def_bytes = c->cfg.catalog
                            ? ls_bcfg_effective(c->cfg.catalog, LS_BCFG_LOG_RETENTION_BYTES,
                                                c->cfg.retention_bytes, NULL)
                            : c->cfg.retention_bytes;
    ls_retention_policy_resolve(ts ? ts->stream : NULL, def_ms, def_bytes, ts && ts->table, p);
}

/* In-table entries of one log are not merged like COs (keycompact.c): no
 * byte needs rewriting, so a new in-table range extends the log's in-table
 * entry just before it instead of adding one per pass (at a 1 s commit
 * interval, 600,000 entries a partition-week otherwise). The swap deletes
 * that entry (compare its revision) and puts one covering both. Bounds, so
 * retention (which trims whole entries) stays as precise as with COs: an
 * entry's record bytes stay within a tenth of retention.bytes and
 * LS_TABLE_ENTRY_MAX_BYTES, and its records' timestamps within a tenth of
 * retention.ms: the entry's pos keeps the max timestamp of its oldest range
 * (docs/FORMATS.md, kind 3), and a range whose newest record is further
 * from it starts a new entry. */
#define LS_TABLE_ENTRY_MAX_BYTES ((int64_t)1 << 30)
static void extend_bounds(ls_compactor_t *c, const ls_table_plan_stream_t *ts, swap_t *sw)
{
    ls_retention_policy_t rp;
    retention_policy(c, ts, &rp);
    sw->extend_max_bytes = LS_TABLE_ENTRY_MAX_BYTES;
    if (rp.retention_bytes > 0 && rp.retention_bytes / 10 < sw->extend_max_bytes)
        sw->extend_max_bytes = rp.retention_bytes / 10;
    sw->extend_span_ms = rp.retention_ms > 0 ? rp.retention_ms / 10 : INT64_MAX;
}

/* Called by swap_index right before its txn, when the ranges swapped
 * before this one (earlier in the same pass too) are in the index. */
static void extend_in_table(ls_compactor_t *c, swap_t *sw)
{
    if (sw->co.first_offset <= 0 || sw->prev.key) return;
    char key[96];
    int klen = ls_log_idx_key(key, sizeof key, sw->log_id, sw->co.first_offset - 1);
    ls_kv_t kv = {0};
    if (klen <= 0 || ls_meta_get(c->meta, key, &kv) != LS_OK) return; /* none, or later */
    ls_idx_entry_t e;
    if (ls_idx_decode(kv.val, kv.vlen, &e) == LS_OK) {
        /* pos of a kind-3 entry: the max timestamp of its oldest range (0:
         * unknown, e.g. written before pos was kept: never extended) */
        int64_t base = (int64_t)e.pos;
        if (e.kind == LS_IDX_TABLE && e.last_offset + 1 == sw->co.first_offset && base > 0 &&
            (int64_t)e.len + sw->co.len <= sw->extend_max_bytes &&
            sw->co.max_timestamp - base <= sw->extend_span_ms) {
            sw->co.pos = e.pos;
            sw->co.first_offset = e.first_offset;
            sw->co.len += e.len;
            if (e.max_timestamp > sw->co.max_timestamp) sw->co.max_timestamp = e.max_timestamp;
            sw->prev.key = ls_malloc((size_t)klen + 1);
            memcpy(sw->prev.key, key, (size_t)klen + 1);
            sw->prev.klen = (size_t)klen;
            sw->prev.mod_rev = kv.mod_rev;
            sw->prev_len = e.len;
            sw->prev_last = e.last_offset;
        }
        ls_idx_clear(&e);
    }
    ls_kv_free(&kv);
}

/* Step 2: swaps the index in one txn, fenced by the claim. 1 if it did. */
static int swap_index(ls_compactor_t *c, swap_t *sw, const ls_log_claim_t *claim)
{
    int n = sw->n, swapped = 0;
    int64_t log_id = sw->log_id;
    ls_walrefs_t *refs = (ls_walrefs_t *)&sw->refs;
    size_t cap = (size_t)n + LS_WALREFS_TXN_SLOTS(refs) + 3;
    ls_meta_cmp_t *cmps = LS_NEWN(ls_meta_cmp_t, cap);
    ls_meta_op_t *ops = LS_NEWN(ls_meta_op_t, cap);
    size_t ncmp = 0, nops = 0;
    /* fenced by the claim: a task whose lease expired cannot swap */
    cmps[ncmp++] = ls_log_claim_cmp(claim);
    for (int i = 0; i < n; i++) {
        const ls_kv_t *kv = &sw->kvs[i];
        cmps[ncmp++] = (ls_meta_cmp_t){
            .kind = LS_META_CMP_MOD_REV, .key = kv->key, .klen = kv->klen, .rev = kv->mod_rev};
        if (i < n - 1)
            ops[nops++] = (ls_meta_op_t){.kind = LS_META_OP_DEL, .key = kv->key, .klen = kv->klen};
    }
    if (sw->co.kind == LS_IDX_TABLE) extend_in_table(c, sw);
    if (sw->prev.key) { /* the in-table entry this one extends goes */
        cmps[ncmp++] = (ls_meta_cmp_t){.kind = LS_META_CMP_MOD_REV,
                                       .key = sw->prev.key,
                                       .klen = sw->prev.klen,
                                       .rev = sw->prev.mod_rev};
        ops[nops++] =
            (ls_meta_op_t){.kind = LS_META_OP_DEL, .key = sw->prev.key, .klen = sw->prev.klen};
    }
    ls_buf_t coval;
    ls_buf_init(&coval);
    ls_idx_encode(&sw->co, &coval);
    const ls_kv_t *lastkv = &sw->kvs[n - 1];
    ops[nops++] = (ls_meta_op_t){.kind = LS_META_OP_PUT,
                                 .key = lastkv->key,
                                 .klen = lastkv->klen,
                                 .val = coval.data,
                                 .vlen = coval.len};
    int released = 0;
    ls_status rs = LS_OK, st = LS_OK;
    size_t ncmp0 = ncmp, nops0 = nops;
    /* WAL objects hold several logs: a conflict on a count alone (another
     * log's swap or trim touching the same object) is retried at once
     * with fresh counts; a changed index entry or a lost claim fails
     * every attempt */
    for (int attempt = 0; attempt < SWAP_ATTEMPTS; attempt++) {
        ncmp = ncmp0;
        nops = nops0;
        rs = ls_walrefs_prepare(refs, c->meta, cmps, &ncmp, ops, &nops, &released);
        if (rs != LS_OK) break;
        st = ls_meta_txn(c->meta, cmps, ncmp, ops, nops, NULL);
        if (st != LS_ECONFLICT) break;
    }
    if (rs != LS_OK) {
        LS_WARN_RL("compact", "log %016llx: reading WAL object counts failed: %s (will retry)",
                   (unsigned long long)log_id, ls_status_str(rs));
        c->stats.failures++;
    } else if (st == LS_OK) {
        ls_crashpoint("compact.index_swapped");
        result_t *res = push_result(c, log_id, &sw->co);
        if (sw->prev.key) /* the extended entry's rows are where they were */
            res->changed_from = sw->prev_last + 1;
        if (sw->co.kind == LS_IDX_TABLE) {
            c->stats.ranges_in_table++;
            c->stats.bytes_in_table += sw->co.len - sw->prev_len;
            c->stats.table_entries_extended += sw->prev.key != NULL;
        } else {
            c->stats.objects_written++;
            c->stats.bytes_written += sw->bytes;
        }
        c->stats.entries_replaced += (uint64_t)n;
        c->stats.wal_objects_released += (uint64_t)released;
        cursor_set(c, log_id, sw->co.last_offset + 1);
        int64_t *due = ls_i64map_get(&c->merge_due, log_id);
        if (!due) {
            due = LS_NEW(int64_t);
            ls_i64map_put(&c->merge_due, log_id, due);
        }
        (*due)++;
        swapped = 1;
        LS_DEBUG("compact", "log %016llx: [%lld, %lld] -> %s (%d WAL entries)",
                 (unsigned long long)log_id, (long long)sw->co.first_offset,
                 (long long)sw->co.last_offset, sw->co.object, n);
    } else if (st == LS_ECONFLICT) {
        c->stats.conflicts++;
    } else {
        LS_WARN_RL("compact", "log %016llx: index swap failed: %s (will retry)",
                   (unsigned long long)log_id, ls_status_str(st));
        c->stats.failures++;
    }
    ls_buf_free(&coval);
    ls_free(cmps);
    ls_free(ops);
    return swapped;
}

/* The claim on the commit of ts's table, taken the first time one of its
 * partitions has work in this task (ls_table_claim). False when another
 * broker holds it (the table is skipped until its interval comes round
 * again) or the store failed. */
static bool table_claimed(ls_compactor_t *c, const ls_table_plan_stream_t *ts)
{
    if (c->table_claim.held) return true;
    if (c->table_tried) return false;
    c->table_tried = true;
    ls_status st = ls_table_claim(c->owner, ts->stream->stream_no, &c->table_claim);
    if (st == LS_EEXISTS) {
        c->stats.logs_owned_elsewhere++; /* another broker commits it this time */
        int64_t again = ls_clock_wall_ms() + ts->policy.commit_interval_ms;
        if (!c->next_due_ms || again < c->next_due_ms) c->next_due_ms = again;
    } else if (st != LS_OK) {
        LS_WARN_RL("compact", "table %s.%s: claiming its commit failed: %s (will retry)",
                   ts->stream->ns, ts->target.name, ls_status_str(st));
        c->stats.failures++;
    }
    return c->table_claim.held;
}

/* Whether a range of log_id may be left only in ts's table (an index entry
 * of kind 3, docs/ARCHITECTURE.md "The third copy of a table log"): the
 * table holds the records byte for byte and nothing rewrites its rows
 * (ls_unfold_source_valid, the predicate unfolding uses the other way), it
 * has no changelog side table, and the log's
 * cold reference (written by unfold_stream before the table task) names
 * this table, so readers find the rows and a later policy change unfolds
 * them. */
static bool table_holds_records(ls_compactor_t *c, const ls_table_plan_stream_t *ts, int64_t log_id)
{
    if (!ts || !ts->table || ts->policy.changelog) return false;
    if (!ls_unfold_source_valid(ts->stream, &ts->policy, NULL, 0)) return false;
    const ls_unfold_ref_t *r = ls_i64map_get(&c->refs, log_id);
    return r && !strcmp(r->prefix, ts->target.prefix) && !strcmp(r->ns, ts->stream->ns) &&
           !strcmp(r->table, ts->target.name);
}

/* Whether a range's batches (CO body obj, batch positions ents) hold no
 * transactional or control batch: aborted data and markers are not rows,
 * and read_uncommitted readers must see them, so such a range keeps a CO. */
static bool range_plain(const uint8_t *obj, const ls_co_entry_t *ents, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *b = obj + ents[i].pos;
        uint16_t attrs = (uint16_t)(b[21] << 8 | b[22]); /* RecordBatch v2 attributes */
        if (attrs & 0x30) return false;                  /* bit 4 transactional, 5 control */
    }
    return true;
}

/* Why a stream's table is held back this pass (the first reason of the
 * pass is kept: it names the range that stops the table), or, with why
 * NULL, that it committed: the status clears unless a range failed earlier
 * in the same pass (the table is then still held at that range). Published
 * by pass_after for DescribeConfigs (lakestream.table.held.reason). */
static void table_held(ls_compactor_t *c, const ls_table_plan_stream_t *ts, const char *why)
{
    char *old = ls_i64map_get(&c->held_next, ts->stream->stream_no);
    if (old && (old[0] || !why)) return;
    ls_free(old);
    if (!why) why = "";
    const char *table = ts->table ? ts->target.name : "";
    size_t wl = strlen(why) + 1, nl = strlen(ts->stream->ns), tl = strlen(table) + 1;
    char *v = ls_malloc(wl + nl + 1 + tl);
    memcpy(v, why, wl);
    memcpy(v + wl, ts->stream->ns, nl);
    v[wl + nl] = 0x1f;
    memcpy(v + wl + nl + 1, table, tl);
    ls_i64map_put(&c->held_next, ts->stream->stream_no, v);
}

/* Compacts the oldest eligible run of one log (ts: its stream's table plan,
 * NULL when unknown). Returns 1 if the log may have more work now: it
 * swapped, or it just claimed the log (the next call looks again under the
 * claim, since the first look may predate another owner's work). */
static int compact_log(ls_compactor_t *c, int64_t log_id, const ls_table_plan_stream_t *ts)
{
    bool table = ts && ts->table;
    if (table && c->table_ts != ts)
        return 0; /* a table log compacts only into its table's commit (table_task) */
    /* a table log has no hot window: its table task runs once per commit
     * interval and takes everything committed by then (table_task) */
    int64_t hot = table ? 0 : c->cfg.min_age_ms;
    if (!table && ts) {
        /* a compacted topic's max.compaction.lag.ms bounds how long a record
         * may wait for key compaction, so also how long it stays in the WAL */
        ls_kc_policy_t kp;
        ls_kc_policy_resolve(ts->stream, &kp);
        if (kp.compact && kp.max_lag_ms < hot) hot = kp.max_lag_ms;
    }
    /* a table log is compacted (and materialized) only below its last
     * stable offset, so every transaction with data in a range has ended
     * and its aborted records are known (read after the head) */
    int64_t lso = INT64_MAX, span = 0;
    if (table) {
        ls_status st = ls_log_stable_read(c->meta, log_id, &lso, &span);
        if (st != LS_OK) {
            LS_WARN_RL("compact", "log %016llx: reading its head failed: %s (will retry)",
                       (unsigned long long)log_id, ls_status_str(st));
            c->stats.failures++;
            return 0;
        }
    }
    ls_kvlist_t l;
    if (scan_uncompacted(c, log_id, (size_t)c->cfg.max_entries + 64, &l) != LS_OK) return 0;
    int64_t now = ls_clock_wall_ms();
    c->cur_lag_ms = 0; /* how long the oldest WAL entry has been due */
    for (size_t i = 0; i < l.n; i++) {
        ls_idx_entry_t e;
        if (ls_idx_decode(l.v[i].val, l.v[i].vlen, &e) != LS_OK) break;
        bool wal = e.kind == LS_IDX_WAL;
        int64_t t = wal ? ls_wal_key_time(e.object) : -1;
        ls_idx_clear(&e);
        if (wal) {
            if (t >= 0 && now - t > hot) c->cur_lag_ms = now - t - hot;
            break;
        }
    }
    ls_idx_entry_t *sel = LS_NEWN(ls_idx_entry_t, (size_t)c->cfg.max_entries);
    size_t *sel_kv = LS_NEWN(size_t, (size_t)c->cfg.max_entries);
    int n = 0;
    int64_t bytes = 0;
    for (size_t i = 0; i < l.n && n < c->cfg.max_entries; i++) {
        ls_idx_entry_t e;
        if (ls_idx_decode(l.v[i].val, l.v[i].vlen, &e) != LS_OK) break;
        if (e.kind != LS_IDX_WAL && n == 0) {
            ls_idx_clear(&e);
            continue; /* already compacted: look past it */
        }
        int64_t t = ls_wal_key_time(e.object);
        bool old_enough = t >= 0 && now - t >= hot;
        bool contiguous = n == 0 || sel[n - 1].last_offset + 1 == e.first_offset;
        if (e.kind != LS_IDX_WAL || !old_enough || !contiguous || e.last_offset >= lso ||
            (n > 0 && bytes + e.len > c->cfg.max_bytes)) {
            if (table && e.kind == LS_IDX_WAL && !old_enough && t >= 0 &&
                (!c->next_due_ms || t + hot < c->next_due_ms))
                c->next_due_ms = t + hot; /* come back exactly when it is due */
            ls_idx_clear(&e);
            break;
        }
        bytes += e.len;
        sel_kv[n] = i;
        sel[n++] = e;
    }
    int swapped = 0;
    ls_buf_t obj;
    ls_buf_init(&obj);
    ls_co_entry_t *ents = NULL;
    uint32_t nents = 0, capents = 0;
    ls_walrefs_t refs = {0};
    ls_aborted_list_t aborted = {0};
    co_put_t put = {0};
    if (n == 0) goto out;
    if (table && !table_claimed(c, ts)) goto out;
    if (!c->claim.held) {
        swapped = claim_log(c, log_id);
        goto out;
    }
    /* 1. read and rebase */
    ls_buf_append(&obj, LS_CO_MAGIC, 8);
    int64_t max_ts = -1;
    for (int i = 0; i < n; i++) {
        ls_buf_t part;
        ls_buf_init(&part);
        ls_status st =
            ls_wal_blocks_read(&c->wal_reads, sel[i].object, sel[i].pos, sel[i].len, &part);
        if (st != LS_OK || part.len != sel[i].len) {
            LS_WARN_RL("compact", "log %016llx: reading %s [%llu,+%u) failed: %s",
                       (unsigned long long)log_id, sel[i].object, (unsigned long long)sel[i].pos,
                       sel[i].len, st != LS_OK ? ls_status_str(st) : "short read");
            ls_buf_free(&part);
            c->stats.failures++;
            goto out;
        }
        char why[256];
        uint32_t *pos = NULL;
        int64_t *base = NULL;
        int k =
            ls_entries_rebase(part.data, part.len, sel[i].first_offset, sel[i].last_offset, false,
                              sel[i].object, sel[i].pos, &pos, &base, NULL, why, sizeof why);
        if (k < 0) {
            LS_ERROR("compact", "log %016llx: %s; leaving the range uncompacted",
                     (unsigned long long)log_id, why);
            ls_buf_free(&part);
            c->stats.failures++;
            goto out;
        }
        for (int j = 0; j < k; j++) {
            if (nents == capents) {
                capents = capents ? capents * 2 : 64;
                ents = ls_realloc(ents, capents * sizeof *ents);
            }
            ents[nents].base_offset = base[j];
            ents[nents++].pos = (uint32_t)(obj.len + pos[j]);
        }
        ls_free(pos);
        ls_free(base);
        ls_buf_append(&obj, part.data, part.len);
        ls_buf_free(&part);
        if (sel[i].max_timestamp > max_ts) max_ts = sel[i].max_timestamp;
        ls_walrefs_add(&refs, sel[i].object);
    }
    int64_t first = sel[0].first_offset, last = sel[n - 1].last_offset;
    size_t body_len = obj.len - LS_CO_HEADER_SIZE;
    ls_co_footer_encode(&obj, log_id, first, last, ents, nents);
    char co_key[128];
    ls_co_key(co_key, sizeof co_key, log_id, first, last);
    /* table.cold.reads=table: a range the table will hold whole, as the
     * records themselves, gets no CO; after its table commit its WAL
     * entries are swapped for one kind-3 entry (table_task) */
    bool in_table =
        table && c->cfg.cold_reads_table && table_holds_records(c, ts, log_id) &&
        (!ts->policy.start_latest || first_since(sel, n, ts->policy.enabled_since_ms) <= first) &&
        range_plain(obj.data, ents, nents);
    put = (co_put_t){.os = c->os, .key = co_key, .iov = {obj.data, obj.len}};
    if (!in_table) co_put_start(&put, table && !c->batch_failed);
    ls_status st = LS_OK;
    if (!table) {
        st = co_put_join(&put);
        if (st != LS_OK && st != LS_EEXISTS) {
            LS_WARN_RL("compact", "log %016llx: writing %s failed: %s", (unsigned long long)log_id,
                       co_key, ls_status_str(st));
            c->stats.failures++;
            goto out;
        }
        ls_crashpoint("compact.co_written");
    }
    /* the swap to make: the CO entry under the key of the last replaced one */
    swap_t *sw = LS_NEW(swap_t);
    sw->log_id = log_id;
    sw->n = n;
    sw->kvs = LS_NEWN(ls_kv_t, (size_t)n);
    for (int i = 0; i < n; i++) {
        const ls_kv_t *kv = &l.v[sel_kv[i]];
        sw->kvs[i].key = ls_malloc(kv->klen + 1);
        memcpy(sw->kvs[i].key, kv->key, kv->klen + 1);
        sw->kvs[i].klen = kv->klen;
        sw->kvs[i].mod_rev = kv->mod_rev;
    }
    sw->co = (ls_idx_entry_t){.kind = LS_IDX_CO,
                              .first_offset = first,
                              .last_offset = last,
                              .max_timestamp = max_ts,
                              .entries = nents,
                              .pos = LS_CO_HEADER_SIZE,
                              .len = (uint32_t)body_len,
                              .object = ls_strdup(co_key)};
    if (in_table) { /* docs/FORMATS.md, index entry kind 3 */
        ls_free(sw->co.object);
        sw->co.kind = LS_IDX_TABLE;
        sw->co.entries = 0;
        sw->co.pos = max_ts > 0 ? (uint64_t)max_ts : 0; /* the base of extensions */
        sw->co.object = ls_strdup(LS_COLD_TABLE_OBJECT);
        extend_bounds(c, ts, sw);
    }
    sw->refs = refs;
    memset(&refs, 0, sizeof refs);
    sw->bytes = in_table ? 0 : obj.len;
    if (!table) {
        swapped = swap_index(c, sw, &c->claim);
        swap_free(sw);
        goto out;
    }
    /* 1b. the table: same bytes, second output, into the table's one commit
     * of this pass; the swap waits for that commit (table_task) */
    if (!c->batch && !c->batch_failed) {
        char berr[512] = "";
        st = ls_mat_begin(c->meta, c->os, c->cfg.warehouse_uri, &ts->target, &c->batch, berr,
                          sizeof berr);
        if (st != LS_OK) {
            LS_WARN_RL("compact", "table %s.%s: opening it failed: %s (%s); will retry",
                       ts->stream->ns, ts->target.name, ls_status_str(st), berr);
            char why[700];
            snprintf(why, sizeof why, "opening the table failed: %s (%s)", ls_status_str(st), berr);
            table_held(c, ts, why);
            c->stats.table_failures++;
            c->batch_failed = true;
        } else { /* the version it writes (evolution=new-table), for DescribeConfigs */
            /* one allocation: "<name>\0<reason>\0" (reason "" for a base table) */
            const char *name = ls_mat_table_name(c->batch), *why = ls_mat_version_reason(c->batch);
            size_t nl = strlen(name) + 1, wl = why ? strlen(why) + 1 : 1;
            char *v = ls_malloc(nl + wl);
            memcpy(v, name, nl);
            memcpy(v + nl, why ? why : "", wl);
            ls_free(ls_i64map_get(&c->vers_next, ts->stream->stream_no));
            ls_i64map_put(&c->vers_next, ts->stream->stream_no, v);
        }
    }
    if (!c->batch) {
        swap_free(sw);
        goto out;
    }
    {
        char terr[512] = "";
        uint64_t rows = 0;
        st = ls_log_aborted_read(c->meta, log_id, first, last, span, &aborted);
        if (st != LS_OK) {
            LS_WARN_RL("compact",
                       "log %016llx: reading the aborted transactions of [%lld, %lld] failed: "
                       "%s; its table waits",
                       (unsigned long long)log_id, (long long)first, (long long)last,
                       ls_status_str(st));
            char why[200];
            snprintf(why, sizeof why,
                     "partition %d, offsets [%lld, %lld]: reading their aborted transactions "
                     "failed: %s",
                     (int)(log_id & (LS_MAX_PARTITIONS - 1)), (long long)first, (long long)last,
                     ls_status_str(st));
            table_held(c, ts, why);
            c->stats.table_failures++;
            swap_free(sw);
            goto out;
        }
        ls_mat_range_t r = {.partition = (int32_t)(log_id & (LS_MAX_PARTITIONS - 1)),
                            .log_id = log_id,
                            .obj = obj.data,
                            .entries = ents,
                            .n = nents,
                            .body_end = LS_CO_HEADER_SIZE + body_len,
                            .from_offset = ts->policy.start_latest
                                               ? first_since(sel, n, ts->policy.enabled_since_ms)
                                               : 0,
                            .last_offset = last,
                            .aborted = &aborted};
        st = ls_mat_add(c->batch, &r, &rows, terr, sizeof terr);
        if (st != LS_OK) {
            LS_WARN_RL("compact",
                       "log %016llx (%s-%d): materializing [%lld, %lld] into table %s.%s "
                       "failed: %s (%s); will retry",
                       (unsigned long long)log_id, ts->stream->name, (int)r.partition,
                       (long long)first, (long long)last, ts->stream->ns, ts->target.name,
                       ls_status_str(st), terr);
            char why[700];
            snprintf(why, sizeof why, "partition %d, offsets [%lld, %lld]: %s (%s)",
                     (int)r.partition, (long long)first, (long long)last, ls_status_str(st), terr);
            table_held(c, ts, why);
            c->stats.table_failures++;
            swap_free(sw);
            goto out;
        }
        if (ls_mat_stopped(c->batch, log_id)) {
            /* evolution=new-table: the table holds this range only up to
             * the record where its next version takes over (or not at all):
             * the range stays in the WAL and a later pass writes the rest
             * into that version (lake/README.md, table versions) */
            swap_free(sw);
            goto out;
        }
        if (!in_table) {
            st = co_put_join(&put);
            if (st != LS_OK && st != LS_EEXISTS) {
                LS_WARN_RL("compact", "log %016llx: writing %s failed: %s",
                           (unsigned long long)log_id, co_key, ls_status_str(st));
                c->stats.failures++;
                swap_free(sw);
                goto out;
            }
            ls_crashpoint("compact.co_written");
        }
        if (c->npending == c->cappending) {
            c->cappending = c->cappending ? c->cappending * 2 : 16;
            c->pending = ls_realloc(c->pending, c->cappending * sizeof *c->pending);
        }
        c->pending[c->npending++] = sw;
        c->pend_log = log_id;
        c->pend_next = last + 1;
        swapped = 1;
    }
out:
    co_put_join(&put); /* before obj (its bytes) is freed */
    for (int i = 0; i < n; i++)
        ls_idx_clear(&sel[i]);
    ls_free(sel);
    ls_free(sel_kv);
    ls_free(ents);
    ls_walrefs_free(&refs);
    ls_aborted_list_free(&aborted);
    ls_buf_free(&obj);
    ls_kvlist_free(&l);
    return swapped;
}

/* The backfill a table log owes (start.position=earliest) before its WAL
 * ranges may follow: 0 when none is left (ls_table_backfill). */
static int backfill_log(ls_compactor_t *c, int64_t id, const ls_table_plan_stream_t *ts)
{
    if (ts->policy.start_latest) return 0;
    int r = 0;
    uint64_t rows = 0;
    for (int rounds = 0; rounds < 64; rounds++) {
        r = ls_table_backfill(&c->marks, c->meta, c->os, c->cfg.warehouse_uri, ts, id, &rows);
        if (r > 0) c->stats.rows_materialized += rows;
        if (r != 1) break;
    }
    if (r < 0) c->stats.table_failures++;
    return r;
}

/* One log: whole runs while they qualify (a backlog drains in one pass). */
static void compact_rounds(ls_compactor_t *c, int64_t id, const ls_table_plan_stream_t *ts)
{
    c->cur_lag_ms = 0;
    /* each round is whole (its swap commits or changes nothing), so a stop
     * asked for meanwhile ends the backlog here, not 64 rounds later */
    for (int rounds = 0;
         rounds < 64 && !__atomic_load_n(&c->stopping, __ATOMIC_RELAXED) && compact_log(c, id, ts);
         rounds++)
        ;
    if (c->cur_lag_ms > c->pass_backlog_ms) c->pass_backlog_ms = c->cur_lag_ms;
    bool table = ts && ts->table;
    int64_t period = c->cfg.interval_ms > 0 ? c->cfg.interval_ms : 1000;
    if (!table && c->cur_lag_ms > (3 * period > 60000 ? 3 * period : 60000))
        LS_WARN_RL("compact",
                   "compaction of log %016llx is falling behind: its oldest WAL entry "
                   "has been due for %lld ms; WAL objects are not being collected",
                   (unsigned long long)id, (long long)c->cur_lag_ms);
}

/* Streams whose table was turned off are held by nothing. */
static void tables_turned_off(ls_compactor_t *c, const ls_table_plan_t *plan)
{
    for (int i = 0; i < plan->n; i++)
        if (!plan->v[i].table)
            table_held(c, &plan->v[i], plan->v[i].blocked ? plan->v[i].blocked_why : NULL);
}

/* This pass's metrics rows of ts's table. */
static void table_metrics_add(ls_compactor_t *c, const ls_table_plan_stream_t *ts,
                              const ls_table_status_t *status, int64_t lag_ms, int64_t records)
{
    table_metrics_t *m = &c->tm;
    const char *labels[2] = {ts->stream->ns, ts->target.name};
    ls_metrics_rows_add(&m->lag_s, labels, 2, (double)lag_ms / 1000);
    ls_metrics_rows_add(&m->lag_rec, labels, 2, (double)records);
    ls_metrics_rows_add(&m->commit_ts, labels, 2, (double)status->commit_ms / 1000);
    const table_totals_t *tt = ls_i64map_get(&c->table_totals, ts->stream->stream_no);
    if (!tt) return;
    ls_metrics_rows_add(&m->snapshots, labels, 2, (double)tt->t.snapshots);
    ls_metrics_rows_add(&m->files, labels, 2, (double)tt->t.data_files);
    ls_metrics_rows_add(&m->bytes, labels, 2, (double)tt->t.bytes);
    ls_metrics_rows_add(&m->rows, labels, 2, (double)tt->t.rows);
    if (tt->skipped >= 0) ls_metrics_rows_add(&m->skipped, labels, 2, (double)tt->skipped);
}

/* At the end of a pass (worker): this pass's table rows replace the last. */
static void table_metrics_publish(ls_compactor_t *c)
{
    table_metrics_t *m = &c->tm;
    ls_metrics_publish(&m_lag_s, &m->lag_s);
    ls_metrics_publish(&m_lag_rec, &m->lag_rec);
    ls_metrics_publish(&m_commit_ts, &m->commit_ts);
    ls_metrics_publish(&m_snapshots, &m->snapshots);
    ls_metrics_publish(&m_files, &m->files);
    ls_metrics_publish(&m_tbytes, &m->bytes);
    ls_metrics_publish(&m_trows, &m->rows);
    ls_metrics_publish(&m_skipped, &m->skipped);
}

/* The table lag of ts (table_plan.h: from its recorded commit, the same on
 * every broker) for the loop (DescribeConfigs lakestream.table.lag.ms);
 * none before its first recorded commit. Beyond a few commit intervals it
 * is reported (rate-limited) by the broker that commits the table, or by
 * every broker once no commit has been recorded for that long (the
 * committer is gone or stuck). */
static void table_lag(ls_compactor_t *c, const ls_table_plan_stream_t *ts,
                      const ls_table_status_t *status)
{
    int64_t now = ls_clock_wall_ms(), lag, records;
    ls_status st = ls_table_status_lag(c->meta, ts, status, now, &lag, &records);
    if (st != LS_OK) {
        LS_WARN_RL("compact", "table %s.%s: measuring its lag failed: %s (will retry)",
                   ts->stream->ns, ts->target.name, ls_status_str(st));
        return;
    }
    int64_t *v = ls_i64map_get(&c->lags_next, ts->stream->stream_no);
    if (!v) {
        v = LS_NEW(int64_t);
        ls_i64map_put(&c->lags_next, ts->stream->stream_no, v);
    }
    *v = lag;
    table_metrics_add(c, ts, status, lag, records);
    int64_t interval = ts->policy.commit_interval_ms;
    int64_t limit = 3 * interval > 10000 ? 3 * interval : 10000;
    int64_t *mine = ls_i64map_get(&c->table_commits, ts->stream->stream_no);
    bool committer = mine && now - *mine < limit;
    if (lag > limit && (committer || now - status->commit_ms > limit))
        LS_WARN_RL("compact",
                   "table %s.%s is falling behind: its oldest record not yet in the "
                   "table was written %lld ms ago (commit interval %lld ms, last commit "
                   "%lld ms ago)",
                   ts->stream->ns, ts->target.name, (long long)lag, (long long)interval,
                   (long long)(now - status->commit_ms));
}

/* After c->batch committed: the status every broker reads (table_plan.h),
 * under the table claim. A failure only leaves the lag reading high. */
static void table_status_record(ls_compactor_t *c, const ls_table_plan_stream_t *ts,
                                ls_table_status_t *status)
{
    int32_t np = ts->stream->partitions;
    int64_t *covered = LS_NEWN(int64_t, (size_t)np);
    for (int32_t p = 0; p < np; p++) {
        covered[p] = p < status->n ? status->covered[p] : -1;
        int64_t done = ls_mat_done(c->batch, ls_stream_log_id(ts->stream, p));
        if (done > covered[p]) covered[p] = done;
    }
    for (size_t i = 0; i < c->npending; i++) {
        int32_t p = (int32_t)(c->pending[i]->log_id & (LS_MAX_PARTITIONS - 1));
        if (p < np && c->pending[i]->co.last_offset > covered[p])
            covered[p] = c->pending[i]->co.last_offset;
    }
    ls_table_status_clear(status);
    *status = (ls_table_status_t){.commit_ms = ls_clock_wall_ms(), .n = np, .covered = covered};
    ls_meta_cmp_t fence = ls_log_claim_cmp(&c->table_claim);
    ls_status st = ls_table_status_write(c->meta, ts, status, &fence);
    if (st != LS_OK)
        LS_WARN_RL("compact", "table %s.%s: recording its commit for the lag failed: %s",
                   ts->stream->ns, ts->target.name, ls_status_str(st));
}

static void free_i64_values(ls_i64map_t *m)
{
    int64_t k;
    void *v;
    for (size_t it = 0; ls_i64map_next(m, &it, &k, &v);)
        ls_free(v);
    ls_i64map_free(m);
}

const char *ls_compactor_table_version(const ls_compactor_t *c, int64_t stream_no,
                                       const char **reason)
{
    const char *v = ls_i64map_get(&c->vers, stream_no);
    if (reason) *reason = v && v[strlen(v) + 1] ? v + strlen(v) + 1 : NULL;
    return v;
}

const char *ls_compactor_table_held(const ls_compactor_t *c, int64_t stream_no)
{
    return ls_i64map_get(&c->held, stream_no);
}

bool ls_compactor_table_skipped(const ls_compactor_t *c, int64_t stream_no, int64_t *records)
{
    const int64_t *v = ls_i64map_get(&c->skips, stream_no);
    if (v) *records = *v;
    return v != NULL;
}

char *ls_compactor_table_held_copy(ls_compactor_t *c, const char *ns, const char *table)
{
    char *out = NULL;
    size_t nl = strlen(ns);
    int64_t k;
    void *v;
    pthread_mutex_lock(&c->held_mu);
    for (size_t it = 0; !out && ls_i64map_next(&c->held, &it, &k, &v);) {
        const char *why = v, *name = why + strlen(why) + 1;
        if (!strncmp(name, ns, nl) && name[nl] == 0x1f && !strcmp(name + nl + 1, table))
            out = ls_strdup(why);
    }
    pthread_mutex_unlock(&c->held_mu);
    return out;
}

bool ls_compactor_table_lag(const ls_compactor_t *c, int64_t stream_no, int64_t *lag_ms)
{
    const int64_t *v = ls_i64map_get(&c->lags, stream_no);
    if (v) *lag_ms = *v;
    return v != NULL;
}

/* Runs one trim under the task's claim and queues its result for the loop
 * (partial progress counts too: the loop takes the max). */
static trim_done_t *run_trim(ls_compactor_t *c, const ls_trim_req_t *req, ls_status *st)
{
    trim_done_t *t = LS_NEW(trim_done_t);
    t->log_id = req->log_id;
    *st = ls_log_trim(c->meta, c->os, req, &t->r);
    c->stats.entries_trimmed += (uint64_t)t->r.entries_removed;
    c->stats.wal_objects_released += (uint64_t)t->r.wal_released;
    c->stats.cos_deleted += (uint64_t)t->r.cos_deleted;
    t->next = c->trims;
    c->trims = t;
    return t;
}

/* Retention of one log: trims to what retention.ms / retention.bytes allow. */
static void retain_log(ls_compactor_t *c, int64_t id, const ls_table_plan_stream_t *ts)
{
    ls_retention_policy_t p;
    retention_policy(c, ts, &p);
    int64_t target;
    bool work;
    ls_status st = ls_retention_target(c->meta, id, &p, ls_clock_wall_ms(), &target, &work);
    if (st == LS_OK && work && !c->claim.held) {
        if (!claim_log(c, id)) return;
        /* look again under the claim */
        st = ls_retention_target(c->meta, id, &p, ls_clock_wall_ms(), &target, &work);
    }
    if (st != LS_OK || !work) {
        if (st != LS_OK) {
            LS_WARN("retention", "log %016llx: reading its index failed: %s (will retry)",
                    (unsigned long long)id, ls_status_str(st));
            c->stats.failures++;
        }
        return;
    }
    ls_meta_cmp_t fence = ls_log_claim_cmp(&c->claim);
    ls_trim_req_t req = {
        .log_id = id, .new_start = target, .keep_wal = p.keep_wal, .fence = &fence};
    trim_done_t *t = run_trim(c, &req, &st);
    if (st == LS_OK) {
        LS_INFO("retention",
                "log %016llx: log start now %lld (retention.ms %lld, retention.bytes "
                "%lld; %d index entries, %d compacted objects removed)",
                (unsigned long long)id, (long long)t->r.log_start, (long long)p.retention_ms,
                (long long)p.retention_bytes, t->r.entries_removed, t->r.cos_deleted);
    } else if (st == LS_ECONFLICT) {
        c->stats.conflicts++;
    } else {
        LS_WARN("retention", "log %016llx: trimming to %lld failed: %s (will retry)",
                (unsigned long long)id, (long long)target, ls_status_str(st));
        c->stats.failures++;
    }
}

static ls_status kc_claim(void *arg, int64_t log_id, ls_meta_cmp_t *fence)
{
    ls_compactor_t *c = arg;
    if (!c->claim.held && !claim_log(c, log_id)) return LS_EEXISTS;
    *fence = ls_log_claim_cmp(&c->claim);
    return LS_OK;
}

static void kc_swapped(void *arg, int64_t log_id, const ls_idx_entry_t *e,
                       const int64_t *aborts_gone, size_t n)
{
    result_t *res = push_result(arg, log_id, e);
    if (n) {
        res->aborts_gone = ls_memdup(aborts_gone, n * sizeof *aborts_gone);
        res->naborts_gone = n;
    }
}

/* Key compaction of a cleanup.policy=compact log (keycompact.c), after its
 * WAL entries became compacted objects, under the task's claim (taken by
 * ls_kc_log only when the log is due). Any other log whose WAL entries became
 * compacted objects since its last check is checked for runs of small
 * objects to merge (keycompact.c, "Merging small objects"), each merged
 * object spanning at most a tenth of the log's retention (time and bytes).
 * After a restart a log is checked again at its next compaction. */
static void key_compact(ls_compactor_t *c, int64_t id, const ls_table_plan_stream_t *ts)
{
    ls_kc_policy_t p;
    ls_kc_policy_resolve(ts ? ts->stream : NULL, &p);
    ls_kc_limits_t lim = {.map_bytes =
                              c->cfg.keymap_max_bytes ? c->cfg.keymap_max_bytes : (size_t)16 << 20,
                          .group_bytes = c->cfg.max_bytes,
                          .grace_ms = c->cfg.replaced_grace_ms};
    int64_t *due = ls_i64map_del(&c->merge_due, id);
    if (due && ts && !p.compact) {
        ls_retention_policy_t rp;
        retention_policy(c, ts, &rp);
        p.merge = true;
        p.merge_span_ms = rp.retention_ms > 0 ? rp.retention_ms / 10 : INT64_MAX;
        if (rp.retention_bytes > 0 && rp.retention_bytes / 10 < lim.group_bytes)
            lim.group_bytes = rp.retention_bytes / 10;
    }
    ls_free(due);
    ls_kc_stats_t was = c->stats.keycompact;
    int64_t t0 = ls_clock_mono_us();
    ls_status st = ls_kc_log(c->meta, c->os, id, &p, &lim, ls_clock_wall_ms(), kc_claim, kc_swapped,
                             c, &c->stats.keycompact);
    const ls_kc_stats_t *now = &c->stats.keycompact;
    if (now->cleans > was.cleans) /* what a clean did and how fast (operators, make bench) */
        LS_INFO("compact",
                "log %016llx: key compaction read %llu records (%llu bytes), kept %llu, dropped "
                "%llu superseded, %llu aborted, %llu tombstones and %llu transaction markers, "
                "wrote %llu bytes in %.3f s",
                (unsigned long long)id, (unsigned long long)(now->records_read - was.records_read),
                (unsigned long long)(now->bytes_read - was.bytes_read),
                (unsigned long long)(now->records_kept - was.records_kept),
                (unsigned long long)(now->superseded_dropped - was.superseded_dropped),
                (unsigned long long)(now->aborted_dropped - was.aborted_dropped),
                (unsigned long long)(now->tombstones_dropped - was.tombstones_dropped),
                (unsigned long long)(now->markers_dropped - was.markers_dropped),
                (unsigned long long)(now->bytes_written - was.bytes_written),
                (double)(ls_clock_mono_us() - t0) / 1e6);
    if (st != LS_OK)
        LS_WARN_RL("compact", "log %016llx: key compaction failed: %s (will retry)",
                   (unsigned long long)id, ls_status_str(st));
}

/* Storage of a deleted topic (issue 17 §5): its logs are fenced, so nothing
 * appends to them; trimming each to its high watermark removes every index
 * entry, deletes its compacted objects and counts its WAL objects down (GC
 * deletes them at zero), through the same crash-safe trim as retention, under
 * the same claim. What stays is the head and the start record (a few bytes
 * each): the fence itself, so the log id is never used again. Runs with the
 * retention checks, and file.delete.delay.ms after a deletion on this broker
 * (ls_compactor_reclaim_after). */
static void reclaim_log(ls_compactor_t *c, int64_t id, int64_t next_offset)
{
    ls_start_t start;
    int64_t rev;
    ls_status st = ls_log_start_read(c->meta, id, &start, &rev);
    if (st != LS_OK || (start.log_start >= next_offset && start.swept_below >= start.index_start)) {
        /* (a read failure is retried at the next check); objects key compaction
         * replaced before the topic went are deleted once their grace is over */
        key_compact(c, id, NULL);
        ls_log_release(c->owner, &c->claim);
        return;
    }
    if (!claim_log(c, id)) return;
    ls_meta_cmp_t fence = ls_log_claim_cmp(&c->claim);
    ls_trim_req_t req = {.log_id = id,
                         .new_start = next_offset,
                         .keep_wal = false,
                         .fence = &fence,
                         .reclaim = true};
    trim_done_t *t = run_trim(c, &req, &st);
    if (st == LS_OK)
        LS_INFO("retention",
                "deleted log %016llx: storage reclaimed (%d index entries, %d "
                "compacted objects removed)",
                (unsigned long long)id, t->r.entries_removed, t->r.cos_deleted);
    else if (st != LS_ECONFLICT)
        LS_WARN_RL("retention",
                   "deleted log %016llx: reclaiming its storage failed: %s (will "
                   "retry)",
                   (unsigned long long)id, ls_status_str(st));
    key_compact(c, id, NULL); /* not compacted any more: deletes what key compaction replaced */
    ls_log_release(c->owner, &c->claim);
}

/* ------------------------------------------------------------- unfolding
 *
 * In-table ranges (log/cold_source.h) turned back into compacted objects
 * when their table stops being a valid source (unfold.c has the state
 * machine). The pass keeps every log's cold reference (/ls/coldref/) in
 * c->refs: loaded at full passes, then updated by its own writes and
 * releases (another broker's are seen at the next full pass; a log whose
 * table is valid gets its reference written again then). */

static void refs_clear(ls_compactor_t *c)
{
    free_i64_values(&c->refs);
    ls_i64map_init(&c->refs);
}

static void refs_load(ls_compactor_t *c)
{
    ls_unfold_ref_t *v;
    size_t n;
    ls_status st = ls_unfold_refs_list(c->meta, &v, &n);
    if (st != LS_OK) {
        LS_WARN_RL("compact", "reading cold references failed: %s; using the last copy",
                   ls_status_str(st));
        return;
    }
    refs_clear(c);
    for (size_t i = 0; i < n; i++) {
        ls_unfold_ref_t *r = LS_NEW(ls_unfold_ref_t);
        *r = v[i];
        ls_i64map_put(&c->refs, r->log_id, r);
    }
    ls_free(v);
    c->refs_loaded = true;
}

static void unfold_put(void *arg, int64_t log_id, const ls_idx_entry_t *e)
{
    push_result(arg, log_id, e)->put = true;
}

/* Whether ts's table is a valid source for its logs' in-table ranges now;
 * why says why not. */
static bool source_valid(const ls_table_plan_stream_t *ts, char *why, size_t whylen)
{
    return ls_unfold_source_valid(ts->stream, &ts->policy, why, whylen) && ts->table;
}

/* Unfolds log id's in-table ranges when its reference names a table that is
 * no longer their valid source (disabled, renamed, typed, upsert, compacted
 * topic). True while some are left: the log's table must wait. */
static bool unfold_log(ls_compactor_t *c, int64_t id, const ls_table_plan_stream_t *ts)
{
    ls_unfold_ref_t *ref = ls_i64map_get(&c->refs, id);
    if (!ref || !ts || ts->blocked) return false;
    char why[600] = "";
    bool valid = source_valid(ts, why, sizeof why);
    if (valid && !strcmp(ref->ns, ts->stream->ns) && !strcmp(ref->table, ts->target.name))
        return false; /* the table is still their source */
    if (valid)        /* the table name changed */
        snprintf(why, sizeof why, "the topic's table is now %s.%s", ts->stream->ns,
                 ts->target.name);
    if (!c->claim.held && !claim_log(c, id)) return true;
    const char *tst = ls_stream_config_get(ts->stream, "message.timestamp.type");
    ls_cold_source_t *src =
        ls_unfold_table_source_new(c->meta, c->os, ref, tst && !strcmp(tst, "LogAppendTime"));
    ls_meta_cmp_t fence = ls_log_claim_cmp(&c->claim);
    ls_unfold_limits_t lim = {.chunk_bytes = c->cfg.max_bytes > 0 ? (size_t)c->cfg.max_bytes : 0,
                              .max_chunks = 64};
    ls_unfold_stats_t was = c->stats.unfold;
    int64_t left = 0;
    ls_status st = ls_unfold_log(c->meta, c->os, id, src, &lim, &fence, unfold_put, c,
                                 &c->stats.unfold, &left);
    ls_unfold_table_source_free(src);
    const ls_unfold_stats_t *now = &c->stats.unfold;
    if (now->objects_written > was.objects_written)
        LS_INFO("compact",
                "log %016llx: %llu records read from table %s.%s became %llu compacted objects "
                "(%llu bytes): %s; %lld in-table ranges left",
                (unsigned long long)id, (unsigned long long)(now->records - was.records), ref->ns,
                ref->table, (unsigned long long)(now->objects_written - was.objects_written),
                (unsigned long long)(now->bytes_written - was.bytes_written), why, (long long)left);
    if (st != LS_OK)
        LS_WARN_RL("compact",
                   "log %016llx: turning in-table ranges back into compacted objects "
                   "failed: %s (will retry)",
                   (unsigned long long)id, ls_status_str(st));
    if (st == LS_OK && left == 0) {
        ls_free(ls_i64map_del(&c->refs, id));
        return false;
    }
    return true;
}

/* The logs of a table stream, before its table task: those whose in-table
 * ranges must become compacted objects again are unfolded (true while any
 * is left: the table's commits and maintenance wait, so it neither changes
 * nor loses files under a log that still reads them); where the table is a
 * valid source, each log's reference is written before its first in-table
 * range can be. */
static bool unfold_stream(ls_compactor_t *c, const ls_table_plan_stream_t *ts)
{
    bool hold = false, valid = source_valid(ts, NULL, 0);
    int64_t pending = 0;
    for (int32_t p = 0; p < ts->stream->partitions; p++) {
        int64_t id = ls_stream_log_id(ts->stream, p);
        if (unfold_log(c, id, ts)) {
            hold = true;
            int64_t n = 0, recs = 0;
            if (ls_unfold_pending(c->meta, id, &n, &recs) == LS_OK) pending += n;
        } else if (valid && !ls_i64map_get(&c->refs, id)) {
            char held[600] = "";
            ls_status st = ls_unfold_ref_ensure(c->meta, id, ts->stream->ns, ts->target.name,
                                                ts->target.prefix, held, sizeof held);
            if (st == LS_OK) {
                ls_unfold_ref_t *r = LS_NEW(ls_unfold_ref_t);
                r->log_id = id;
                snprintf(r->ns, sizeof r->ns, "%s", ts->stream->ns);
                snprintf(r->table, sizeof r->table, "%s", ts->target.name);
                snprintf(r->prefix, sizeof r->prefix, "%s", ts->target.prefix);
                ls_i64map_put(&c->refs, id, r);
            } else {
                /* unknown reference state: no in-table range may be added */
                hold = true;
                LS_WARN_RL("compact", "log %016llx: recording its table %s.%s failed: %s%s%s",
                           (unsigned long long)id, ts->stream->ns, ts->target.name,
                           ls_status_str(st), *held ? "; it still references " : "", held);
            }
        }
        ls_log_release(c->owner, &c->claim);
    }
    if (hold)
        LS_WARN_RL("compact",
                   "table %s.%s waits: %lld ranges of its topic %s are still read from a table "
                   "that is no longer their source and are being turned back into compacted "
                   "objects; no commit, rewrite or file removal until they are",
                   ts->stream->ns, ts->target.name, (long long)pending, ts->stream->name);
    return hold;
}

/* A deleted topic's log: once its storage is reclaimed (no index entry
 * left), its reference goes too, so its table is free. */
static void unfold_forget(ls_compactor_t *c, int64_t id)
{
    if (!ls_i64map_get(&c->refs, id)) return;
    int64_t n = 0, recs = 0;
    if (ls_unfold_pending(c->meta, id, &n, &recs) != LS_OK || n) return;
    char key[64];
    ls_unfold_ref_key(key, sizeof key, id);
    if (ls_meta_del(c->meta, key) == LS_OK) ls_free(ls_i64map_del(&c->refs, id));
}

/* One log's task: compaction rounds, key compaction, then retention when a
 * check is due; a claim taken on the way (only once work was found) ends
 * with the task. */
static void log_task(ls_compactor_t *c, int64_t id, const ls_table_plan_stream_t *ts)
{
    if (c->pass_compact && !(ts && ts->blocked)) unfold_log(c, id, ts);
    if (c->pass_compact && !(ts && ts->blocked)) compact_rounds(c, id, ts);
    if (c->pass_compact && ts && !ts->blocked) key_compact(c, id, ts);
    if (c->pass_retention && !(ts && ts->blocked)) retain_log(c, id, ts);
    ls_log_release(c->owner, &c->claim);
}

/* Orphan files of a table (ls_ice_table_remove_orphans), at most once per
 * grace period per table and broker. Unfenced: an orphan is referenced by no
 * commit, so two brokers deleting it is harmless; the grace period protects
 * files of commits in flight. */
static void sweep_orphans(ls_compactor_t *c, const ls_table_plan_stream_t *ts)
{
    int64_t now = ls_clock_wall_ms(), grace = c->cfg.orphan_grace_ms;
    if (grace <= 0) return;
    int64_t *last = ls_i64map_get(&c->orphan_sweeps, ts->stream->stream_no);
    if (last && now < *last + grace) return;
    if (!last) {
        last = LS_NEW(int64_t);
        ls_i64map_put(&c->orphan_sweeps, ts->stream->stream_no, last);
    }
    *last = now;
    uint64_t deleted = 0;
    char err[512] = "";
    ls_status st = ls_materialize_remove_orphans(c->meta, c->os, &ts->target, now - grace, &deleted,
                                                 err, sizeof err);
    if (st != LS_OK)
        LS_WARN_RL("table", "table %s.%s: removing orphan files failed: %s (%s); will retry",
                   ts->stream->ns, ts->target.name, ls_status_str(st), err);
    else if (deleted)
        LS_INFO("table",
                "table %s.%s: deleted %llu orphan files (older than %lld ms, "
                "referenced by no snapshot)",
                ts->stream->ns, ts->target.name, (unsigned long long)deleted, (long long)grace);
    c->stats.orphans_deleted += deleted;
}

/* Idle maintenance: a table's commits expire its snapshots and delete the
 * files whose delay is over, but a table that gets no records makes no
 * commits, so without this its expired snapshots and their files would stay
 * until it does. Runs in a pass where the table made no commit, a commit
 * interval after its last commit or check by this broker, then when the
 * check said something becomes due, at most IDLE_CHECK_MAX_MS later (another
 * broker may have committed meanwhile), under the table claim, and wakes the
 * compactor for it: an idle table's expiry and deletions lag their due time
 * by a commit interval at most (IDLE_CHECK_MAX_MS when another broker
 * committed the table last). A busy table commits every interval, which
 * postpones the check each time. */
#define IDLE_CHECK_MAX_MS 60000

static void idle_postpone(ls_compactor_t *c, const ls_table_plan_stream_t *ts, int64_t at)
{
    int64_t *next = ls_i64map_get(&c->idle_checks, ts->stream->stream_no);
    if (!next) {
        next = LS_NEW(int64_t);
        ls_i64map_put(&c->idle_checks, ts->stream->stream_no, next);
    }
    *next = at;
    if (!c->next_due_ms || at < c->next_due_ms) c->next_due_ms = at;
}

static void idle_maintain(ls_compactor_t *c, const ls_table_plan_stream_t *ts)
{
    int64_t now = ls_clock_wall_ms(), interval = ts->policy.commit_interval_ms;
    int64_t *next = ls_i64map_get(&c->idle_checks, ts->stream->stream_no);
    if (next && now < *next) {
        if (!c->next_due_ms || *next < c->next_due_ms) c->next_due_ms = *next;
        return;
    }
    ls_log_claim_t claim;
    memset(&claim, 0, sizeof claim);
    if (ls_table_claim(c->owner, ts->stream->stream_no, &claim) != LS_OK) {
        idle_postpone(c, ts, now + interval); /* another broker commits it */
        return;
    }
    int64_t due = INT64_MAX;
    char err[512] = "";
    ls_status st = ls_materialize_expire(c->meta, c->os, &ts->target, now, &due, err, sizeof err);
    ls_log_release(c->owner, &claim);
    if (st != LS_OK)
        LS_WARN_RL("table",
                   "table %s.%s: expiring snapshots of the idle table failed: %s (%s); "
                   "will retry",
                   ts->stream->ns, ts->target.name, ls_status_str(st), err);
    int64_t at = now + IDLE_CHECK_MAX_MS;
    if (due < at) at = due;
    if (at < now + interval) at = now + interval;
    idle_postpone(c, ts, at);
}

/* Small data files of the table c->batch just committed (ls_mat_rewrite),
 * under the table claim: checked once every rewrite.min.files commits of
 * this broker (fewer cannot have lined up a new run of that many files) and
 * again at the next commit when a check left runs for later. A failure
 * only delays the rewrite: the files stay as they are. */
static void rewrite_files(ls_compactor_t *c, const ls_table_plan_stream_t *ts)
{
    int64_t min = ts->policy.rewrite_min_files;
    if (min <= 0) return;
    int64_t *waited = ls_i64map_get(&c->rewrite_waits, ts->stream->stream_no);
    if (!waited) {
        waited = LS_NEW(int64_t);
        ls_i64map_put(&c->rewrite_waits, ts->stream->stream_no, waited);
    }
    if (++*waited < min) return;
    ls_file_rewrite_stats_t *rs = &c->stats.rewrite;
    uint64_t removed = rs->files_removed, added = rs->files_added, in = rs->bytes_read,
             out = rs->bytes_written;
    char err[512] = "";
    ls_status st = ls_mat_rewrite(c->batch, rs, err, sizeof err);
    *waited = rs->more ? min - 1 : 0;
    if (st != LS_OK) {
        LS_WARN_RL("table",
                   "table %s.%s: rewriting small data files failed: %s (%s); they stay and "
                   "are tried again after %lld commits",
                   ts->stream->ns, ts->target.name, ls_status_str(st), err, (long long)min);
        rs->failures++;
    } else if (rs->files_removed > removed) {
        LS_INFO("table",
                "table %s.%s: rewrote %llu small data files (%llu bytes) into %llu (%llu bytes)%s",
                ts->stream->ns, ts->target.name, (unsigned long long)(rs->files_removed - removed),
                (unsigned long long)(rs->bytes_read - in),
                (unsigned long long)(rs->files_added - added),
                (unsigned long long)(rs->bytes_written - out),
                rs->more ? "; more next commit" : "");
    }
}

/* The logs of one stream with a table: their due WAL ranges become COs and
 * rows of ONE table commit (ls_mat_batch), and only after that commit are
 * their index swaps made, each under its log's claim; then retention. So a
 * pass makes one snapshot per table whatever the partition count and the
 * backlog (up to 64 rounds per log), and the table never misses a range the
 * log compacted. A failed commit leaves every range in WAL objects for the
 * next pass (its COs are rewritten identically, its data files are orphans).
 * The task runs at most once per commit interval, under a claim on the table
 * (ls_table_claim, taken when a partition first has work, as is the table
 * load): with several brokers one commits a table at a time and the others
 * skip it, instead of all racing on its pointer. */
static void table_task(ls_compactor_t *c, const ls_table_plan_stream_t *ts)
{
    int32_t np = ts->stream->partitions;
    ls_log_claim_t *claims = LS_NEWN(ls_log_claim_t, (size_t)np);
    int64_t now = ls_clock_wall_ms(), interval = ts->policy.commit_interval_ms;
    /* the table as its committer recorded it: this broker's marks follow
     * it, whoever committed (table_plan.c "Status") */
    ls_table_status_t status = {0};
    bool recorded = !ts->blocked && ls_table_status_read(c->meta, ts, &status) == LS_OK;
    for (int32_t p = 0; recorded && p < np && p < status.n; p++)
        ls_table_marks_set(&c->marks, ls_stream_log_id(ts->stream, p), &ts->target,
                           status.covered[p]);
    /* the commit interval runs from the last commit of any broker (else a
     * broker that has not committed lately would commit at once) */
    int64_t *last = ls_i64map_get(&c->table_commits, ts->stream->stream_no);
    int64_t last_ms = last ? *last : -1;
    if (recorded && status.commit_ms > last_ms) last_ms = status.commit_ms;
    bool due = last_ms < 0 || now >= last_ms + interval;
    if (!due && (!c->next_due_ms || last_ms + interval < c->next_due_ms))
        c->next_due_ms = last_ms + interval; /* come back when the interval is up */
    /* in-table ranges first: the table waits while any is left (unfold.c) */
    bool hold = c->pass_compact && !ts->blocked && unfold_stream(c, ts);
    if (c->pass_compact && !ts->blocked && due && !hold) {
        c->table_ts = ts;
        c->table_tried = c->batch_failed = false;
        memset(&c->table_claim, 0, sizeof c->table_claim);
        char err[512] = "";
        ls_status st;
        for (int32_t p = 0; p < np; p++) {
            int64_t id = ls_stream_log_id(ts->stream, p);
            if (backfill_log(c, id, ts) != 0)
                continue; /* the table is behind on this log: its WAL ranges wait */
            c->pend_log = id;
            c->pend_next = 0;
            compact_rounds(c, id, ts);
            claims[p] = c->claim; /* held until its swaps are made */
            memset(&c->claim, 0, sizeof c->claim);
        }
        c->pend_log = -1;
        if (c->batch) {
            uint64_t rows = 0;
            st = ls_mat_commit(c->batch, &rows, err, sizeof err);
            if (c->npending) { /* the interval restarts with every commit attempt */
                if (!last) {
                    last = LS_NEW(int64_t);
                    ls_i64map_put(&c->table_commits, ts->stream->stream_no, last);
                }
                *last = now;
            }
            if (st == LS_OK && c->npending) {
                ls_crashpoint("compact.table_committed");
                table_totals_t *tot = ls_i64map_get(&c->table_totals, ts->stream->stream_no);
                if (!tot) {
                    tot = LS_NEW(table_totals_t);
                    ls_i64map_put(&c->table_totals, ts->stream->stream_no, tot);
                }
                if (!ls_mat_totals(c->batch, &tot->t)) memset(&tot->t, 0, sizeof tot->t);
                tot->skipped = ls_mat_skipped_records(c->batch);
                idle_postpone(c, ts, now + interval); /* the commit maintained it */
                table_held(c, ts, NULL);
                int64_t skipped = ls_mat_skipped_records(c->batch);
                if (skipped >= 0) {
                    int64_t *v = ls_i64map_get(&c->skips_next, ts->stream->stream_no);
                    if (!v) {
                        v = LS_NEW(int64_t);
                        ls_i64map_put(&c->skips_next, ts->stream->stream_no, v);
                    }
                    *v = skipped;
                }
                c->stats.rows_materialized += rows;
                for (size_t i = 0; i < c->npending; i++) {
                    swap_t *sw = c->pending[i];
                    swap_index(c, sw, &claims[sw->log_id & (LS_MAX_PARTITIONS - 1)]);
                    ls_table_marks_set(&c->marks, sw->log_id, &ts->target,
                                       ls_mat_done(c->batch, sw->log_id));
                }
                table_status_record(c, ts, &status);
                recorded = true;
                rewrite_files(c, ts);
            } else if (c->npending) {
                LS_WARN_RL("compact",
                           "table %s.%s: committing %zu ranges failed: %s (%s); they "
                           "stay in the WAL and are retried",
                           ts->stream->ns, ts->target.name, c->npending, ls_status_str(st), err);
                char why[700];
                snprintf(why, sizeof why, "committing %zu ranges failed: %s (%s)", c->npending,
                         ls_status_str(st), err);
                table_held(c, ts, why);
                c->stats.table_failures++;
            }
            ls_mat_free(c->batch);
            c->batch = NULL;
        }
        for (size_t i = 0; i < c->npending; i++)
            swap_free(c->pending[i]);
        c->npending = 0;
        ls_log_release(c->owner, &c->table_claim);
        c->table_ts = NULL;
    }
    if (recorded) table_lag(c, ts, &status);
    ls_table_status_clear(&status);
    if (c->pass_compact && !ts->blocked && !hold) idle_maintain(c, ts);
    if (c->pass_retention && !ts->blocked && !hold) sweep_orphans(c, ts);
    for (int32_t p = 0; p < np; p++) {
        int64_t id = ls_stream_log_id(ts->stream, p);
        c->claim = claims[p];
        if (c->pass_compact && c->pass_full && !ts->blocked) key_compact(c, id, ts);
        if (c->pass_retention && !ts->blocked) retain_log(c, id, ts);
        ls_log_release(c->owner, &c->claim);
    }
    ls_free(claims);
}

/* End of a pass (worker; the stats are the worker's while it runs). */
static void pass_metrics(ls_compactor_t *c, bool full, int64_t start_us)
{
    ls_metric_observe(ls_metrics_series1(&m_pass_seconds, full ? "full" : "tables"),
                      (double)(ls_clock_mono_us() - start_us) / 1e6);
    if (full) ls_metric_set(ls_metrics_series0(&m_backlog), (double)c->pass_backlog_ms / 1000);
    ls_metric_counter_store(ls_metrics_series0(&m_objects), c->stats.objects_written);
    ls_metric_counter_store(ls_metrics_series0(&m_bytes), c->stats.bytes_written);
    ls_metric_counter_store(ls_metrics_series0(&m_rows), c->stats.rows_materialized);
    ls_metric_counter_store(ls_metrics_series0(&m_table_failures), c->stats.table_failures);
    table_metrics_publish(c);
}

static void pass_work(uv_work_t *w)
{
    ls_compactor_t *c = w->data;
    int64_t start_us = ls_clock_mono_us();
    c->pass_backlog_ms = 0;
    if (!c->reclaimed) {
        /* the first pass runs after the broker's registration took over
         * its id, so a claim under this id from another run is a dead one */
        ls_lease_owner_reclaim(c->owner, c->owner_prefix);
        c->reclaimed = true;
    }
    ls_table_plan_t plan;
    memset(&plan, 0, sizeof plan);
    if (c->cfg.catalog)
        ls_table_plan_build(&plan, c->cfg.catalog, c->cfg.table_defaults, c->cfg.ntable_defaults,
                            c->cfg.registry);
    c->table_period_ms = plan.min_interval_ms;
    c->next_due_ms = 0;
    if (c->pass_full || !c->refs_loaded) refs_load(c);
    if (!c->pass_full) {
        /* between full passes: only the logs of streams with a table */
        for (int i = 0; i < plan.n; i++)
            if (plan.v[i].table) table_task(c, &plan.v[i]);
        tables_turned_off(c, &plan);
        ls_table_plan_clear(&plan);
        ls_wal_blocks_clear(&c->wal_reads);
        pass_metrics(c, false, start_us);
        return;
    }
    ls_kvlist_t heads;
    if (ls_meta_scan_prefix(c->meta, LS_HEAD_PREFIX, 0, &heads) != LS_OK) {
        ls_table_plan_clear(&plan);
        return;
    }
    for (size_t i = 0; i < heads.n; i++) {
        int64_t id = ls_log_id_from_head_key((const char *)heads.v[i].key, heads.v[i].klen);
        ls_head_t h;
        if (id < 0 || ls_head_decode(heads.v[i].val, heads.v[i].vlen, &h) != LS_OK) continue;
        bool fenced = h.fenced;
        int64_t next_offset = h.next_offset;
        ls_head_clear(&h);
        if (fenced) {
            if (c->pass_retention || c->pass_reclaim) reclaim_log(c, id, next_offset);
            if (c->pass_retention || c->pass_reclaim) unfold_forget(c, id);
            continue;
        }
        const ls_table_plan_stream_t *ts = ls_table_plan_find(&plan, id);
        if (!(ts && ts->table)) log_task(c, id, ts);
    }
    for (int i = 0; i < plan.n; i++)
        if (plan.v[i].table) table_task(c, &plan.v[i]);
    tables_turned_off(c, &plan);
    ls_table_plan_clear(&plan);
    ls_kvlist_free(&heads);
    ls_wal_blocks_clear(&c->wal_reads);
    pass_metrics(c, true, start_us);
}

static void arm(ls_compactor_t *c);
static void start_pass(ls_compactor_t *c, bool full);
static void maybe_stopped(ls_compactor_t *c);

static void pass_after(uv_work_t *w, int status)
{
    ls_compactor_t *c = w->data;
    ls_loop_work_begin("compaction results");
    c->running = false;
    c->stats.passes++;
    { /* publish this pass's table lags */
        ls_i64map_t done = c->lags;
        c->lags = c->lags_next;
        c->lags_next = done;
        free_i64_values(&c->lags_next);
        ls_i64map_init(&c->lags_next);
        /* and the table versions begun (a stream not begun keeps its last) */
        int64_t k;
        void *v;
        for (size_t it = 0; ls_i64map_next(&c->vers_next, &it, &k, &v);) {
            ls_free(ls_i64map_get(&c->vers, k));
            ls_i64map_put(&c->vers, k, v);
        }
        ls_i64map_free(&c->vers_next);
        ls_i64map_init(&c->vers_next);
        /* and why tables are held ("": a commit cleared it) */
        pthread_mutex_lock(&c->held_mu);
        for (size_t it = 0; ls_i64map_next(&c->held_next, &it, &k, &v);) {
            ls_free(ls_i64map_get(&c->held, k));
            if (((char *)v)[0]) {
                ls_i64map_put(&c->held, k, v);
            } else {
                ls_i64map_del(&c->held, k);
                ls_free(v);
            }
        }
        pthread_mutex_unlock(&c->held_mu);
        ls_i64map_free(&c->held_next);
        ls_i64map_init(&c->held_next);
        /* and the skipped-record counts committed */
        for (size_t it = 0; ls_i64map_next(&c->skips_next, &it, &k, &v);) {
            ls_free(ls_i64map_get(&c->skips, k));
            ls_i64map_put(&c->skips, k, v);
        }
        ls_i64map_free(&c->skips_next);
        ls_i64map_init(&c->skips_next);
    }
    for (result_t *r = c->results, *next; r; r = next) {
        next = r->next;
        if (r->put)
            ls_logstore_reload_index(c->logs, r->log_id);
        else
            ls_logstore_apply_compaction_from(c->logs, r->log_id, &r->co, r->changed_from);
        ls_logstore_aborted_forget(c->logs, r->log_id, r->aborts_gone, r->naborts_gone);
        ls_free(r->aborts_gone);
        ls_idx_clear(&r->co);
        ls_free(r);
    }
    c->results = NULL;
    c->results_tail = &c->results;
    for (trim_done_t *t = c->trims, *next; t; t = next) {
        next = t->next;
        ls_logstore_apply_trim(c->logs, t->log_id, &t->r);
        ls_free(t);
    }
    c->trims = NULL;
    done_cb_t *ws = c->waiters;
    c->waiters = NULL;
    while (ws) {
        done_cb_t *d = ws;
        ws = d->next;
        d->fn(d->arg);
        ls_free(d);
    }
    ls_loop_work_end();
    if (c->stopping)
        maybe_stopped(c);
    else if (c->retention_due || c->reclaim_due)
        start_pass(c, false); /* a check came due during the pass */
    else if (c->cfg.enabled)
        arm(c);
}

static void start_pass(ls_compactor_t *c, bool full)
{
    if (c->running || c->stopping) return;
    int64_t now = ls_clock_wall_ms();
    c->pass_retention = c->retention_due; /* retention visits every log */
    c->retention_due = false;
    c->pass_reclaim = c->reclaim_due; /* and reclaiming, every deleted one */
    c->reclaim_due = false;
    c->pass_compact = c->cfg.enabled || full;
    c->pass_full = full || c->pass_retention || c->pass_reclaim || now >= c->next_full_ms;
    if (c->pass_full) c->next_full_ms = now + c->cfg.interval_ms;
    c->running = true;
    c->work.data = c;
    uv_queue_work(c->loop, &c->work, pass_work, pass_after);
}

static void on_timer(uv_timer_t *t) { start_pass(t->data, false); }

static void on_retention_timer(uv_timer_t *t)
{
    ls_compactor_t *c = t->data;
    c->retention_due = c->cfg.retention;
    start_pass(c, false);
}

static void on_reclaim_timer(uv_timer_t *t)
{
    ls_compactor_t *c = t->data;
    c->reclaim_due = true;
    start_pass(c, false);
}

void ls_compactor_reclaim_after(ls_compactor_t *c, int64_t delay_ms)
{
    if (c->stopping || !c->cfg.retention) return;
    if (delay_ms < 0) delay_ms = 0;
    /* several deletions: the earliest due one wins (a reclaim pass takes
     * every deleted log, also those whose delay has not passed yet) */
    if (uv_is_active((uv_handle_t *)&c->reclaim_timer) &&
        uv_timer_get_due_in(&c->reclaim_timer) <= (uint64_t)delay_ms)
        return;
    uv_timer_start(&c->reclaim_timer, on_reclaim_timer, (uint64_t)delay_ms, 0);
}

/* One-shot: the next full pass, a table's commit interval from now (so each
 * new WAL entry of a table log is seen before it is due), or the earliest due
 * entry, whichever comes first. */
static void arm(ls_compactor_t *c)
{
    int64_t now = ls_clock_wall_ms(), at = c->next_full_ms;
    if (c->table_period_ms > 0 && now + c->table_period_ms < at) at = now + c->table_period_ms;
    if (c->next_due_ms > 0 && c->next_due_ms < at) at = c->next_due_ms;
    uv_timer_start(&c->timer, on_timer, at > now ? (uint64_t)(at - now) : 0, 0);
}

ls_compactor_t *ls_compactor_start(uv_loop_t *loop, ls_logstore_t *logs, ls_meta_t *meta,
                                   ls_objstore_t *os, const ls_compactor_config_t *cfg)
{
    ls_compactor_t *c = LS_NEW(ls_compactor_t);
    c->loop = loop;
    c->logs = logs;
    c->meta = meta;
    c->os = os;
    c->cfg = *cfg;
    if (c->cfg.max_entries < 1) c->cfg.max_entries = 1;
    if (c->cfg.lease_ttl_ms <= 0) c->cfg.lease_ttl_ms = 30000;
    uint32_t nonce;
    ls_random_bytes(&nonce, sizeof nonce);
    char name[96];
    snprintf(c->owner_prefix, sizeof c->owner_prefix, "%s",
             cfg->owner_name ? cfg->owner_name : "compactor");
    snprintf(name, sizeof name, "%s/%08x", c->owner_prefix, nonce);
    c->owner = ls_lease_owner_new(meta, name, c->cfg.lease_ttl_ms);
    uv_timer_init(loop, &c->timer);
    uv_timer_init(loop, &c->retention_timer);
    uv_timer_init(loop, &c->reclaim_timer);
    c->timer.data = c->retention_timer.data = c->reclaim_timer.data = c;
    c->handles_open = 3;
    ls_table_marks_init(&c->marks);
    ls_i64map_init(&c->cursors);
    ls_i64map_init(&c->merge_due);
    ls_i64map_init(&c->table_commits);
    ls_i64map_init(&c->orphan_sweeps);
    ls_i64map_init(&c->idle_checks);
    ls_i64map_init(&c->rewrite_waits);
    ls_i64map_init(&c->refs);
    /* a pass holds at most wal_read_budget of WAL objects (wal_blocks.c B2) */
    if (c->cfg.wal_read_budget <= 0) c->cfg.wal_read_budget = WAL_READ_BUDGET;
    ls_wal_blocks_init(&c->wal_reads, os, (size_t)c->cfg.wal_object_bytes,
                       (size_t)c->cfg.wal_read_budget);
    c->pend_log = -1;
    ls_i64map_init(&c->lags_next);
    ls_i64map_init(&c->lags);
    ls_i64map_init(&c->table_totals);
    table_metrics_t *tm = &c->tm;
    ls_metrics_rows_t *rows[] = {&tm->lag_s, &tm->lag_rec, &tm->commit_ts, &tm->snapshots,
                                 &tm->files, &tm->bytes,   &tm->rows,      &tm->skipped};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        ls_metrics_rows_init(rows[i]);
    ls_i64map_init(&c->vers_next);
    ls_i64map_init(&c->vers);
    ls_i64map_init(&c->held_next);
    ls_i64map_init(&c->held);
    pthread_mutex_init(&c->held_mu, NULL);
    ls_i64map_init(&c->skips_next);
    ls_i64map_init(&c->skips);
    c->next_full_ms = ls_clock_wall_ms() + c->cfg.interval_ms;
    /* until the first pass has read the table policies, assume the shortest
     * commit interval, so tables are fresh right after a restart too */
    c->table_period_ms = LS_POLICY_MIN_COMMIT_INTERVAL_MS;
    if (cfg->enabled) arm(c);
    if (cfg->retention && cfg->retention_check_interval_ms > 0)
        uv_timer_start(&c->retention_timer, on_retention_timer,
                       (uint64_t)cfg->retention_check_interval_ms,
                       (uint64_t)cfg->retention_check_interval_ms);
    return c;
}

void ls_compactor_kick(ls_compactor_t *c, void (*done)(void *arg), void *arg)
{
    if (done) {
        done_cb_t *d = LS_NEW(done_cb_t);
        d->fn = done;
        d->arg = arg;
        d->next = c->waiters;
        c->waiters = d;
    }
    if (!c->running) c->retention_due = c->cfg.retention;
    start_pass(c, true);
}

/* Stopped once the timers are closed and no pass is running. */
static void maybe_stopped(ls_compactor_t *c)
{
    if (c->handles_open || c->running || !c->stop_done) return;
    void (*done)(void *) = c->stop_done;
    c->stop_done = NULL;
    done(c->stop_arg);
}

static void timer_closed(uv_handle_t *h)
{
    ls_compactor_t *c = h->data;
    c->handles_open--;
    maybe_stopped(c);
}

void ls_compactor_stop(ls_compactor_t *c, void (*done)(void *arg), void *arg)
{
    __atomic_store_n(&c->stopping, true, __ATOMIC_RELAXED); /* a pass's rounds read it */
    c->stop_done = done;
    c->stop_arg = arg;
    uv_close((uv_handle_t *)&c->timer, timer_closed);
    uv_close((uv_handle_t *)&c->retention_timer, timer_closed);
    uv_close((uv_handle_t *)&c->reclaim_timer, timer_closed);
}

void ls_compactor_free(ls_compactor_t *c)
{
    ls_lease_owner_free(c->owner); /* revokes: owner keys left go at once */
    ls_table_marks_free(&c->marks);
    free_i64_values(&c->cursors);
    free_i64_values(&c->merge_due);
    free_i64_values(&c->lags_next);
    free_i64_values(&c->lags);
    free_i64_values(&c->table_totals);
    free_i64_values(&c->vers_next);
    free_i64_values(&c->vers);
    free_i64_values(&c->held_next);
    free_i64_values(&c->held);
    pthread_mutex_destroy(&c->held_mu);
    free_i64_values(&c->skips_next);
    free_i64_values(&c->skips);
    free_i64_values(&c->table_commits);
    free_i64_values(&c->orphan_sweeps);
    free_i64_values(&c->idle_checks);
    free_i64_values(&c->rewrite_waits);
    free_i64_values(&c->refs);
    ls_wal_blocks_free(&c->wal_reads);
    ls_free(c->pending);
    ls_free(c);
}

void ls_compactor_stats(const ls_compactor_t *c, ls_compactor_stats_t *out)
{
    *out = c->stats;
    out->wal_reads = c->wal_reads.stats;
}
