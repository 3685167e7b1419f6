/* Key compaction of cleanup.policy=compact logs: the latest record of each
 * key survives, superseded records and expired tombstones go, offsets stay.
 * Runs inside the compaction pass, per log, under the log's claim. Design
 * note at the top of keycompact.c. */
#ifndef LS_KEYCOMPACT_H
#define LS_KEYCOMPACT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "log/log_meta.h"
#include "meta/meta.h"
#include "objstore/objstore.h"
#include "stream/catalog.h"

/* A stream's key compaction settings (Kafka's topic configs, Kafka's defaults). */
typedef struct ls_kc_policy {
    bool compact;                /* cleanup.policy holds "compact" */
    int64_t min_lag_ms;          /* min.compaction.lag.ms (0) */
    int64_t max_lag_ms;          /* max.compaction.lag.ms (INT64_MAX: none) */
    int64_t delete_retention_ms; /* delete.retention.ms (86400000) */
    double dirty_ratio;          /* min.cleanable.dirty.ratio (0.5) */
    /* not compacted logs: merge runs of small compacted objects (design note,
     * "Merging small objects"); set by the caller, not by the stream */
    bool merge;
    int64_t merge_span_ms; /* a merged object spans at most this (max timestamps) */
} ls_kc_policy_t;

/* The policy of s (NULL: not compacted). Values were validated when set
 * (kafka/h_configs.c); an unparsable stored one falls back to Kafka's default. */
void ls_kc_policy_resolve(const ls_stream_t *s, ls_kc_policy_t *out);

#define LS_KC_SLOT_BYTES 24 /* key map memory per distinct key (128-bit hash + offset) */

typedef struct ls_kc_limits {
    size_t map_bytes;    /* key map bound per call (>= 16 slots) */
    int64_t group_bytes; /* input bytes rewritten into one object */
    int max_swaps;       /* index swaps per call; 0: no bound */
    int64_t grace_ms;    /* replaced objects are deleted this long after their swap */
    bool check_markers;  /* a log with nothing due looks for replaced objects to delete (one
                            scan); the caller spaces these looks out */
} ls_kc_limits_t;

typedef struct ls_kc_stats {
    uint64_t cleans; /* calls that rewrote something */
    uint64_t swaps, conflicts, failures;
    uint64_t records_read, records_kept, superseded_dropped, tombstones_dropped, keyless_dropped;
    uint64_t aborted_dropped; /* records of aborted transactions */
    uint64_t markers_dropped; /* transaction markers past their horizon, their data gone */
    uint64_t bytes_read, bytes_written;
    uint64_t objects_deleted; /* replaced or orphaned objects removed */
    uint64_t map_full;        /* calls whose key map filled before the dirty end */
    uint64_t merges;          /* runs of small compacted objects merged into one */
    uint64_t entries_merged;  /* index entries those merges replaced */
} ls_kc_stats_t;

/* Called once work is found: claims the log and fills *fence with the
 * compare every swap carries; any status but LS_OK skips the log. */
typedef ls_status (*ls_kc_claim_fn)(void *arg, int64_t log_id, ls_meta_cmp_t *fence);
/* Called after each index swap with the new entry (for the loop's index)
 * and the first offsets of the aborted-transaction records the swap deleted
 * with their markers (for the loop's aborted index; n may be 0). */
typedef void (*ls_kc_swapped_fn)(void *arg, int64_t log_id, const ls_idx_entry_t *e,
                                 const int64_t *aborts_gone, size_t n);

/* One call per log and pass: deletes replaced objects whose grace is over,
 * then, when p->compact and the log is due (dirty ratio or max lag), cleans
 * it under the claim; when !p->compact and p->merge, merges runs of small
 * compacted objects (at most lim->group_bytes of input each). Blocking
 * (stores). LS_OK also when nothing was due. */
ls_status ls_kc_log(ls_meta_t *meta, ls_objstore_t *os, int64_t log_id, const ls_kc_policy_t *p,
                    const ls_kc_limits_t *lim, int64_t now_ms, ls_kc_claim_fn claim,
                    ls_kc_swapped_fn swapped, void *arg, ls_kc_stats_t *st);
#endif
