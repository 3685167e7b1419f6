/* The table side of one compaction pass: every live stream's resolved
 * materialization policy (stream/policy.h) and table target, the freshness
 * schedule it implies, and the backfill of a newly enabled table from the
 * log start. Design note in table_plan.c. */
#ifndef LS_TABLE_PLAN_H
#define LS_TABLE_PLAN_H
#include <stdbool.h>
#include <stdint.h>

#include "base/i64map.h"
#include "lake/materialize.h"
#include "meta/meta.h"
#include "objstore/objstore.h"
#include "stream/catalog.h"
#include "stream/policy.h"

typedef struct ls_table_plan_stream {
    ls_stream_t *stream; /* kept */
    ls_namespace_t *ns;  /* kept, may be NULL: the policy's namespace layer */
    ls_policy_t policy;
    ls_table_target_t target;
    bool table;            /* enabled and resolved: materialize this stream's logs */
    bool blocked;          /* the policy does not resolve: do not compact its logs */
    char blocked_why[600]; /* blocked: why, for the table's status */
} ls_table_plan_stream_t;

typedef struct ls_table_plan {
    ls_table_plan_stream_t *v;
    int n;
    int64_t min_interval_ms; /* smallest commit interval of an enabled table; 0: none */
} ls_table_plan_t;

/* Refreshes the catalog's namespaces, resolves every live stream's policy
 * against the cluster layer, and records lakestream.table.enabled.since where
 * a table was enabled by a namespace or cluster default (or removes it where
 * such a default disabled it). registry (may be NULL: typed tables then
 * fail with a reason) serves value schemas to typed tables. Worker thread
 * (blocking). */
void ls_table_plan_build(ls_table_plan_t *p, ls_catalog_t *cat, const ls_prop_t *cluster,
                         int ncluster, struct ls_registry *registry);
void ls_table_plan_clear(ls_table_plan_t *p);
/* The plan entry of log_id's stream, or NULL. */
const ls_table_plan_stream_t *ls_table_plan_find(const ls_table_plan_t *p, int64_t log_id);

/* Per-log memory of the last offset a table holds, across passes: a hint
 * that saves loading the table to learn there is nothing to backfill (the
 * table's own summary stays authoritative). Worker thread only. */
typedef struct ls_table_marks {
    ls_i64map_t map;
} ls_table_marks_t;
void ls_table_marks_init(ls_table_marks_t *m);
void ls_table_marks_free(ls_table_marks_t *m);
void ls_table_marks_set(ls_table_marks_t *m, int64_t log_id, const ls_table_target_t *tt,
                        int64_t done);

/* Backfill for start.position=earliest: materializes the first compacted
 * object of log_id that lies above what the table holds (a table enabled
 * after its log was compacted), up to the log's last stable offset. 1: one
 * object materialized (call again), 0: nothing left (WAL ranges may be
 * materialized now), 2: an open transaction holds the backfill inside an
 * object (call again in a later pass), -1: failed (logged). On 2 and -1
 * leave the log's WAL alone this pass so no range overtakes the backfill. */
int ls_table_backfill(ls_table_marks_t *m, ls_meta_t *meta, ls_objstore_t *os,
                      const char *warehouse_uri, const ls_table_plan_stream_t *ts, int64_t log_id,
                      uint64_t *rows);

/* The committed state of a stream's table as every broker sees it (design
 * note, "Status"): /ls/tablestat/<stream_no> = "<commit_ms> <n>\n<table
 * prefix>\n<covered of partition 0> ... <covered of partition n-1>". */
typedef struct ls_table_status {
    int64_t commit_ms; /* wall clock of the commit that wrote it */
    int32_t n;         /* partitions recorded */
    int64_t *covered;  /* per partition: the table accounts for the log up to this offset
                        * (its rows, or ranges it never takes: start.position=latest); -1: none */
} ls_table_status_t;
/* LS_ENOTFOUND: no commit recorded for ts's table (of this name) yet. */
ls_status ls_table_status_read(ls_meta_t *meta, const ls_table_plan_stream_t *ts,
                               ls_table_status_t *out);
/* The same by the stream's number and the table's object-store prefix (its
 * catalog pointer's "prefix"), for readers without a plan (the REST API). */
ls_status ls_table_status_get(ls_meta_t *meta, int64_t stream_no, const char *table_prefix,
                              ls_table_status_t *out);
/* Written after a table commit, under fence (the table claim's compare). */
ls_status ls_table_status_write(ls_meta_t *meta, const ls_table_plan_stream_t *ts,
                                const ls_table_status_t *s, const ls_meta_cmp_t *fence);
void ls_table_status_clear(ls_table_status_t *s);
/* Every recorded table status, whoever committed it, with the table it
 * names (from its prefix "warehouse/<ns>/<table>"): what a reader without
 * the table plan (the consumer-group view of tables, metrics) sees. A
 * status may outlive its table's policy (turned off: the last one stays). */
typedef struct ls_table_status_entry {
    int64_t stream_no;
    char ns[256], table[256];
    ls_table_status_t status;
} ls_table_status_entry_t;
ls_status ls_table_status_list(ls_meta_t *meta, ls_table_status_entry_t **out, size_t *n);
void ls_table_status_list_free(ls_table_status_entry_t *v, size_t n);
/* The table lag: how long the oldest record of ts's logs the table does
 * not account for (s) and that is stable (below the last stable offset)
 * has waited, in ms at now_ms; 0 when the table holds every such record.
 * records (may be NULL): how many stable offsets of its logs it does not
 * account for (the lag as a consumer group's). */
ls_status ls_table_status_lag(ls_meta_t *meta, const ls_table_plan_stream_t *ts,
                              const ls_table_status_t *s, int64_t now_ms, int64_t *lag_ms,
                              int64_t *records);
#endif
