/* Lakestream log storage (level 1): append, read, offsets, fence.
 * Knows nothing of Kafka beyond the fact that an entry is a self-delimiting
 * batch whose first 8 bytes are a base offset rewritten on read, and whose
 * bytes 57..61 hold the record count (both true of Kafka RecordBatch v2; the
 * caller validates batches before appending them).
 *
 * Design notes live at the top of logstore.c (write path, commit order,
 * invariants); the on-store formats are in docs/FORMATS.md.
 *
 * Threads: every function here is called on the loop thread, and every
 * callback runs on the loop thread. Store and metadata I/O happen on libuv
 * worker threads. A callback may run before the call returns (cache hit). */
#ifndef LS_LOGSTORE_H
#define LS_LOGSTORE_H
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>
#include "base/chunk.h"
#include "base/status.h"
#include "log/log_txn.h"
#include "meta/meta.h"
#include "objstore/objstore.h"

typedef struct ls_logstore ls_logstore_t;

#define LS_READ_AHEAD_DEFAULT (4 << 20)

typedef struct ls_logstore_config {
    int64_t flush_max_bytes;       /* flush when the open WAL buffer reaches this */
    int64_t flush_linger_ms;       /* ... or when its oldest entry is this old */
    int64_t flush_min_interval_ms; /* minimum gap between flush starts (request-cost dial) */
    int max_inflight_flushes;      /* PUTs in flight at once; commits stay in order */
    int64_t buffer_max_bytes;      /* open + in-flight bytes before backpressure */
    int64_t read_cache_max_bytes;
    int64_t read_ahead_bytes; /* block size of cold compacted-object reads (<= 0: 4 MiB) */
    int64_t gc_grace_ms;      /* uncommitted WAL objects older than this are garbage */
    int32_t broker_id;        /* part of WAL object names */
} ls_logstore_config_t;

ls_logstore_t *ls_logstore_open(uv_loop_t *loop, ls_meta_t *meta, ls_objstore_t *os,
                                const ls_logstore_config_t *cfg, char *err, size_t errlen);
/* Flushes everything buffered, waits for in-flight flushes, then calls done. */
void ls_logstore_shutdown(ls_logstore_t *ls, void (*done)(void *arg), void *arg);
void ls_logstore_free(ls_logstore_t *ls);

/* ---- append ---- */

/* Idempotent-producer identity of an append (producer_id -1: none). */
typedef struct ls_producer_ref {
    int64_t producer_id;
    int16_t producer_epoch;
    int32_t base_sequence;
    int32_t last_sequence;
} ls_producer_ref_t;

typedef struct ls_append {
    int64_t log_id;
    const uint8_t *data; /* one validated batch; copied before return */
    size_t len;
    int32_t offset_count; /* offsets this batch consumes (lastOffsetDelta + 1) */
    int64_t max_timestamp;
    ls_producer_ref_t producer;
    int64_t txn_seq;               /* transactional batch: its transaction (txn/txn.h); 0: none */
    const ls_log_marker_t *marker; /* set: data is this transaction marker's control batch
                                      (its producer is not checked: no sequence) */
} ls_append_t;

/* st: LS_OK with base_offset assigned (also for a duplicate of an idempotent
 * batch: the original offset; for a marker the log has already seen: -1,
 * nothing appended); LS_EAGAIN / LS_EIO / LS_ENOSPC: the flush failed,
 * retriable; LS_ENOTFOUND: the log is fenced (stream dropped); LS_ERANGE:
 * producer sequence out of order; LS_EFENCED: producer epoch is stale;
 * LS_EINVAL: the batch's transaction is not open for it here (it ended, or
 * a non-transactional batch of a producer with one open: log_txn.h). */
typedef void (*ls_append_cb)(void *arg, ls_status st, int64_t base_offset, int64_t log_start);

/* Buffers the entry and arranges for cb once it is durable and committed. */
void ls_logstore_append(ls_logstore_t *ls, const ls_append_t *a, ls_append_cb cb, void *arg);
/* True while buffered + in-flight bytes exceed buffer_max_bytes: the caller
 * (network layer) stops reading sockets until the pressure callback says so. */
bool ls_logstore_under_pressure(const ls_logstore_t *ls);
void ls_logstore_on_pressure_change(ls_logstore_t *ls, void (*cb)(void *arg, bool pressure),
                                    void *arg);

/* Optional hook that knows the entry's record format: returns the offset
 * delta of the first record with timestamp >= ts inside one entry (and that
 * record's timestamp in *found_ts), or -1. Without it, offset_for_time
 * answers at entry granularity. */
typedef int64_t (*ls_entry_time_fn)(const uint8_t *entry, size_t len, int64_t ts,
                                    int64_t *found_ts);
void ls_logstore_set_entry_time_fn(ls_logstore_t *ls, ls_entry_time_fn fn);

/* ---- offsets ---- */
typedef struct ls_log_info {
    int64_t log_start;      /* first readable offset */
    int64_t high_watermark; /* next offset to be assigned */
    int64_t max_timestamp;  /* -1 if empty */
    int64_t max_timestamp_offset;
    int64_t size_bytes;         /* bytes of the retained entries */
    int64_t last_stable_offset; /* first offset of the oldest open transaction, else the high
                                   watermark */
    bool fenced;
} ls_log_info_t;
/* Non-blocking: heads are kept in memory. Unknown logs read as empty. */
void ls_logstore_info(ls_logstore_t *ls, int64_t log_id, ls_log_info_t *out);

/* The producers a log's head keeps (idempotence and transaction state), as
 * Kafka's DescribeProducers shows them. */
typedef struct ls_log_producer {
    int64_t producer_id;
    int16_t epoch;
    int32_t last_sequence;    /* of its last batch the head remembers; -1: none */
    int64_t last_timestamp;   /* the max timestamp of its last batch; -1: not known */
    int64_t txn_seq;          /* its transaction open on this log (log_txn.h); 0: none */
    int64_t txn_first_offset; /* that transaction's first offset; -1: none */
} ls_log_producer_t;
/* Non-blocking copy from the head in memory: the number of producers, with
 * *out an array to ls_free() (NULL when none). Unknown logs have none. */
int ls_logstore_producers(ls_logstore_t *ls, int64_t log_id, ls_log_producer_t **out);

/* First offset whose record timestamp >= ts (high watermark if none). */
typedef void (*ls_offset_cb)(void *arg, ls_status st, int64_t offset, int64_t timestamp);
void ls_logstore_offset_for_time(ls_logstore_t *ls, int64_t log_id, int64_t ts, ls_offset_cb cb,
                                 void *arg);

/* ---- read ---- */
typedef struct ls_read_slice {
    ls_chunk_t *chunk; /* kept by the result; bytes already carry real base offsets */
    size_t off;
    size_t len;
} ls_read_slice_t;

typedef struct ls_read_result {
    ls_status st; /* LS_OK, LS_ERANGE (offset out of range), LS_EIO, LS_ECORRUPT */
    int64_t log_start;
    int64_t high_watermark;
    int64_t last_stable_offset;
    ls_read_slice_t *slices;
    int nslices;
    size_t bytes;
} ls_read_result_t;

/* Reads whole entries starting with the one containing `offset`, up to
 * max_bytes; the first entry is returned whole even if larger (progress).
 * Reading at the high watermark returns LS_OK with no slices. */
typedef void (*ls_read_cb)(void *arg, ls_read_result_t *res);
void ls_logstore_read(ls_logstore_t *ls, int64_t log_id, int64_t offset, size_t max_bytes,
                      ls_read_cb cb, void *arg);
/* The same, for a read_committed reader: stops at the last stable offset
 * (no entry at or past it is returned; reading at it returns no slices). */
void ls_logstore_read_committed(ls_logstore_t *ls, int64_t log_id, int64_t offset, size_t max_bytes,
                                ls_read_cb cb, void *arg);

/* Aborted transactions whose range overlaps [from, to] (a read_committed
 * fetch returns them beside the records), from the log's aborted index: in
 * memory, loaded on first use, kept current by commits, the watch and
 * trims. A log that never aborted a transaction answers at once. st: LS_OK;
 * LS_ERANGE when from is below the log start (a trim passed records the
 * caller has read and dropped the index records of what was aborted there:
 * the caller answers OFFSET_OUT_OF_RANGE rather than records without their
 * aborted list); or the store's error of the load. cb may run before the call returns; v
 * is valid during the call only. */
typedef void (*ls_aborted_cb)(void *arg, ls_status st, const ls_aborted_t *v, int n);
void ls_logstore_aborted(ls_logstore_t *ls, int64_t log_id, int64_t from, int64_t to,
                         ls_aborted_cb cb, void *arg);
/* Key compaction deleted these aborted records of log_id (first offsets)
 * with their markers: the loop's copy forgets them, in the same loop turn as
 * the swap's index entry is applied. */
void ls_logstore_aborted_forget(ls_logstore_t *ls, int64_t log_id, const int64_t *firsts, size_t n);
void ls_read_result_free(ls_read_result_t *res); /* releases chunks; not the struct itself */

/* ---- commit notifications (fetch long-poll) ---- */
typedef struct ls_log_waiter ls_log_waiter_t;
/* cb fires once, on the first commit to log_id after registration (or when
 * the log is fenced); the waiter is freed after it fires, so cancel only
 * waiters that have not fired. */
ls_log_waiter_t *ls_logstore_wait(ls_logstore_t *ls, int64_t log_id, void (*cb)(void *arg),
                                  void *arg);
void ls_logstore_wait_cancel(ls_logstore_t *ls, ls_log_waiter_t *w);

/* ---- lifecycle ---- */
/* Fences the log: further appends fail with LS_EFENCED. */
typedef void (*ls_status_cb)(void *arg, ls_status st);
void ls_logstore_fence(ls_logstore_t *ls, int64_t log_id, ls_status_cb cb, void *arg);

/* ---- trim (log_trim.c) ---- */
/* Advances the log start to `offset` (DeleteRecords; LS_TRIM_TO_HIGH_WATERMARK
 * from log/log_trim.h = the high watermark) and removes the index entries
 * wholly below it; keep_wal keeps WAL entries not yet compacted (soft trim,
 * see ls_trim_req_t). An offset below the current start changes nothing.
 * cb gets LS_OK and the log start now in force, LS_ERANGE when offset is
 * beyond the high watermark, or a store error. Appends are never blocked. */
typedef void (*ls_trim_cb)(void *arg, ls_status st, int64_t log_start);
void ls_logstore_trim(ls_logstore_t *ls, int64_t log_id, int64_t offset, bool keep_wal,
                      ls_trim_cb cb, void *arg);
/* A trim committed elsewhere (the compactor's retention): learn the new log
 * start, drop index entries and cached runs below the index start. Loop. */
struct ls_trim_result;
void ls_logstore_apply_trim(ls_logstore_t *ls, int64_t log_id, const struct ls_trim_result *r);

/* Deletes WAL objects no committed index entry references and older than
 * gc_grace_ms, now, on the calling (loop) thread, whichever broker holds the
 * GC turn (tests). The broker collects in timer rounds on a worker, one
 * broker of a cluster at a time (design note in logstore.c), never at open. */
ls_status ls_logstore_gc_now(ls_logstore_t *ls, int *deleted);
/* Starts a GC round on a worker now, as the timer does, unless one runs
 * (stats: gc_rounds or gc_rounds_skipped counts it when it ends). Loop. */
void ls_logstore_gc_start(ls_logstore_t *ls);

/* Compaction replaced the index entries within [co->first_offset,
 * co->last_offset] by `co` (already committed to metadata): update the
 * in-memory index and cache. Loop thread. */
struct ls_idx_entry;
void ls_logstore_apply_compaction(ls_logstore_t *ls, int64_t log_id, const struct ls_idx_entry *co);
/* The same when the records below changed_from kept their source (an
 * in-table entry extended over a new range: the cached runs of its old part
 * still hold those records) and only [changed_from, last] changed. */
void ls_logstore_apply_compaction_from(ls_logstore_t *ls, int64_t log_id,
                                       const struct ls_idx_entry *co, int64_t changed_from);
/* The log's index changed in the store in a way this broker did not apply
 * (lake/unfold.c splits entries): forget the in-memory index and the
 * log's cached runs; the next read loads the index again (a load in flight
 * scans again). Loop thread. */
void ls_logstore_reload_index(ls_logstore_t *ls, int64_t log_id);

/* Test/metrics counters. */
typedef struct ls_logstore_stats {
    uint64_t flushes, flush_failures, committed_entries, committed_bytes;
    uint64_t cache_hits, cache_misses, store_gets;
    uint64_t store_get_bytes; /* bytes those GETs returned */
    uint64_t footer_gets;     /* of them, compacted-object footers */
    uint64_t cold_reads;      /* of them, reads of in-table ranges (cold_source.h) */
    uint64_t read_buffers_reused, read_buffers_allocated; /* GET buffers (base/chunk.h pool) */
    int64_t buffered_bytes, inflight_bytes, cache_bytes;
    uint64_t watch_events;      /* metadata watch events applied (log_watch.c) */
    uint64_t watch_step_max;    /* most of them applied in one loop step */
    uint64_t index_moves;       /* index entries shifted by deletes (the work they cost) */
    uint64_t gc_rounds;         /* WAL GC rounds this broker ran (it held the turn) */
    uint64_t gc_rounds_skipped; /* rounds left to the broker holding the GC turn */
    uint64_t gc_deleted;        /* WAL objects its rounds deleted */
} ls_logstore_stats_t;
void ls_logstore_stats(const ls_logstore_t *ls, ls_logstore_stats_t *out);
#endif
