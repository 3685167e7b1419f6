/* Private to compact/compactor*.c: the compactor's state and the functions
 * its files share. compactor.c holds the pass and its compaction steps;
 * compactor_tables.c the table side of a pass (table tasks, unfolding, idle
 * maintenance, table metrics and status). Design: src/compact/README.md. */
#ifndef LS_COMPACTOR_INT_H
#define LS_COMPACTOR_INT_H
#include "compact/catalog_sync.h"
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
#include "compact/lease.h"
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
#define WAL_READ_BUDGET ((size_t)256 << 20)
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
typedef struct trim_done {
    int64_t log_id;
    ls_trim_result_t r;
    struct trim_done *next;
} trim_done_t;
typedef struct table_metrics {
    ls_metrics_rows_t lag_s, lag_rec, commit_ts, snapshots, files, bytes, rows, skipped;
} table_metrics_t;
typedef struct table_totals {
    ls_mat_totals_t t;
    int64_t skipped; /* -1: not known */
} table_totals_t;
struct ls_compactor {
    uv_loop_t *loop;
    ls_catalog_sync_t *csync; /* external catalogs (catalog_sync.h) */
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
    ls_i64map_t marker_looks;  /* worker only: log_id -> int64_t * (ms): the next look for
                                  replaced objects, see ls_compactor_key_compact */
    ls_i64map_t merge_due;     /* worker only: log_id -> int64_t * COs swapped in since
                                * its last merge check (ls_compactor_key_compact) */
    ls_i64map_t table_commits; /* worker only: stream_no -> int64_t * time of its last commit */
    ls_i64map_t orphan_sweeps; /* worker only: stream_no -> int64_t * time of its last sweep */
    ls_i64map_t idle_checks;   /* worker only: stream_no -> int64_t * time of its next
                                * idle maintenance (idle_maintain) */
    ls_i64map_t rewrite_waits; /* worker only: stream_no -> int64_t * commits since its check */
    int64_t cur_lag_ms;        /* worker: lag seen by the last compact_log scan */
    bool cur_no_wal;           /* worker: that scan saw the whole index and no WAL entry */
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
    ls_i64map_t csync_status_next; /* worker: stream_no -> external catalog status ("": in sync) */
    ls_i64map_t csync_status;      /* stream_no -> that status while behind; loop only */
    ls_i64map_t skips_next;        /* worker: stream_no -> int64_t * records skipped, at a commit */
    ls_i64map_t skips;             /* loop: the same, as of the last commit seen */
    int64_t next_full_ms;          /* wall clock of the next full pass */
    int64_t next_due_ms;           /* earliest WAL entry of a table log to become due; 0: none */
    int64_t table_period_ms;       /* smallest commit interval of an enabled table; 0: none */
    bool pass_full;                /* set by the loop before queueing a pass */
    /* ownership (lease.c) and retention */
    ls_lease_owner_t *owner;
    char owner_prefix[64];  /* this broker's part of owner names */
    bool reclaimed;         /* a previous run's claims were freed */
    ls_lease_claim_t claim; /* worker: the claim of the log being worked on */
    uv_timer_t retention_timer;
    bool retention_due;       /* loop: a retention check is owed */
    bool pass_retention;      /* set by the loop before queueing a pass */
    uv_timer_t reclaim_timer; /* ls_compactor_reclaim_after: deleted topics' storage */
    bool reclaim_due;         /* loop: a reclaim of deleted logs is owed */
    bool pass_reclaim;        /* set by the loop before queueing a pass */
    bool pass_compact;        /* idem: compaction enabled, or a kick */
    trim_done_t *trims;       /* filled by the worker */
    /* worker: the table task in progress (ls_compactor_table_task); the claim and the
     * batch are taken lazily, when a partition first has work, so an idle
     * table costs no write and no table load */
    const ls_table_plan_stream_t *table_ts;
    ls_lease_claim_t table_claim;
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
    int64_t pass_backlog_ms;   /* longest a due WAL entry of a log waited, after its rounds */
    uint64_t pass_range_reads; /* wal_reads.stats.exact_reads when the pass began */
    table_metrics_t tm;        /* per-table rows */
    ls_i64map_t table_totals;  /* stream_no -> table_totals_t * as of this broker's last
                                * commit of the table */
};
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

/* compactor.c */
void ls_compactor_swap_free(swap_t *s);
result_t *ls_compactor_push_result(ls_compactor_t *c, int64_t log_id, const ls_idx_entry_t *e);
int ls_compactor_claim_log(ls_compactor_t *c, int64_t log_id);
int ls_compactor_swap_index(ls_compactor_t *c, swap_t *sw, const ls_lease_claim_t *claim);
void ls_compactor_mark_held(ls_compactor_t *c, const ls_table_plan_stream_t *ts, const char *why);
int ls_compactor_backfill_log(ls_compactor_t *c, int64_t id, const ls_table_plan_stream_t *ts);
/* next_offset: the log's head if the caller read it (no scan when every
 * offset below it is compacted), else -1. */
void ls_compactor_compact_rounds(ls_compactor_t *c, int64_t id, const ls_table_plan_stream_t *ts,
                                 int64_t next_offset);
void ls_compactor_retain_log(ls_compactor_t *c, int64_t id, const ls_table_plan_stream_t *ts);
void ls_compactor_key_compact(ls_compactor_t *c, int64_t id, const ls_table_plan_stream_t *ts);

/* compactor_tables.c */
void ls_compactor_tables_turned_off(ls_compactor_t *c, const ls_table_plan_t *plan);
void ls_compactor_table_metrics_publish(ls_compactor_t *c);
void ls_compactor_free_i64_values(ls_i64map_t *m);
void ls_compactor_refs_load(ls_compactor_t *c);
bool ls_compactor_unfold_log(ls_compactor_t *c, int64_t id, const ls_table_plan_stream_t *ts);
bool ls_compactor_unfold_stream(ls_compactor_t *c, const ls_table_plan_stream_t *ts);
void ls_compactor_unfold_forget(ls_compactor_t *c, int64_t id);
void ls_compactor_table_task(ls_compactor_t *c, const ls_table_plan_stream_t *ts);
#endif
