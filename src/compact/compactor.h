/* Compaction service: rewrites old WAL entries of each log into compacted
 * objects (COs) so WAL objects can be deleted. Design note in compactor.c. */
#ifndef LS_COMPACTOR_H
#define LS_COMPACTOR_H
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "compact/keycompact.h"
#include "lake/unfold.h"
#include "compact/wal_blocks.h"
#include "log/logstore.h"
#include "meta/meta.h"
#include "objstore/objstore.h"
#include "stream/catalog.h"
#include "table/file_rewrite.h"

typedef struct ls_compactor ls_compactor_t;

typedef struct ls_compactor_config {
    bool enabled;
    int64_t interval_ms;      /* pass period */
    int64_t min_age_ms;       /* hot window: younger WAL entries stay */
    int max_entries;          /* WAL index entries per CO (txn-size bound) */
    int64_t max_bytes;        /* CO size target */
    int64_t wal_object_bytes; /* size bound of a WAL object (wal.flush.max.bytes): a pass
                               * reads each whole, once (wal_blocks.h); 0: 4 MiB */
    int64_t wal_read_budget;  /* memory a pass holds of such objects (0: 256 MiB) */
    /* key compaction (keycompact.h) of cleanup.policy=compact logs */
    size_t keymap_max_bytes;         /* key map bound per log and pass (0: 16 MiB) */
    int64_t replaced_grace_ms;       /* objects it replaced are deleted this long after the swap */
    ls_catalog_t *catalog;           /* streams' materialization policies (NULL: no tables) */
    const char *warehouse_uri;       /* URI of the object store root, for table locations */
    const ls_prop_t *table_defaults; /* cluster layer of the table policy (stream/policy.h) */
    int ntable_defaults;
    struct ls_registry *registry; /* schemas of typed tables (NULL: none) */
    /* ownership (lease.h) */
    const char *owner_name; /* names this compactor in owner keys (NULL: "compactor"); read
                             * only by ls_compactor_start */
    int64_t lease_ttl_ms;   /* <= 0: 30000 */
    /* retention (retention.h): the static broker defaults of retention.ms /
     * retention.bytes; the cluster's dynamic broker configs
     * (stream/broker_config.h, through catalog) take precedence */
    bool retention; /* false: never trim (unit tests of compaction alone) */
    int64_t retention_ms;
    int64_t retention_bytes;
    int64_t retention_check_interval_ms; /* <= 0: only on kicks */
    /* tables: unreferenced files older than this are deleted, each table
     * swept at most once per this period (with the retention checks); 0: never */
    int64_t orphan_grace_ms;
    /* table.cold.reads=table: a raw append-mode table log's ranges are left
     * only in its table (an index entry of kind LS_IDX_TABLE), no CO */
    bool cold_reads_table;
} ls_compactor_config_t;

typedef struct ls_compactor_stats {
    uint64_t passes, objects_written, entries_replaced, bytes_written, wal_objects_released,
        conflicts, failures, rows_materialized, table_failures;
    uint64_t logs_owned_elsewhere;         /* claims refused: another owner works on the log */
    uint64_t entries_trimmed, cos_deleted; /* retention */
    uint64_t orphans_deleted;              /* table files no snapshot references */
    uint64_t index_pages_skipped;          /* full pages of compacted entries a scan walked past */
    uint64_t ranges_in_table;              /* ranges swapped for a kind-3 entry (no CO written) */
    uint64_t table_entries_extended;       /* of them, by extending the in-table entry before */
    uint64_t bytes_in_table;               /* their bytes of batches */
    ls_kc_stats_t keycompact;              /* key compaction of compacted topics */
    ls_file_rewrite_stats_t rewrite;       /* small data files of tables rewritten */
    ls_unfold_stats_t unfold;              /* in-table ranges turned back into objects */
    ls_wal_blocks_stats_t wal_reads;       /* GETs of WAL objects by compaction passes */
} ls_compactor_stats_t;

ls_compactor_t *ls_compactor_start(uv_loop_t *loop, ls_logstore_t *logs, ls_meta_t *meta,
                                   ls_objstore_t *os, const ls_compactor_config_t *cfg);
/* Starts a full pass (every log; compaction, and retention when enabled) now
 * unless one is running; done (may be NULL) runs on the loop when that pass
 * (or the running one) finishes. */
void ls_compactor_kick(ls_compactor_t *c, void (*done)(void *arg), void *arg);
/* Topics were deleted (their logs fenced): their storage is reclaimed by a
 * pass delay_ms from now (Kafka's file.delete.delay.ms), rather than at the
 * next retention check. Keeps an earlier pending one. Loop thread. */
void ls_compactor_reclaim_after(ls_compactor_t *c, int64_t delay_ms);
/* Stops the timer and waits for a running pass; then calls done. */
void ls_compactor_stop(ls_compactor_t *c, void (*done)(void *arg), void *arg);
void ls_compactor_free(ls_compactor_t *c);
void ls_compactor_stats(const ls_compactor_t *c, ls_compactor_stats_t *out);
/* Loop thread: the table lag of a stream at the last pass — how long its
 * oldest record not yet in the table has waited (0: up to date), measured
 * from the table's recorded commit (table_plan.h), the same on every broker.
 * False when the stream has no table or no commit was recorded yet. */
bool ls_compactor_table_lag(const ls_compactor_t *c, int64_t stream_no, int64_t *lag_ms);
/* Loop thread: the table (version: evolution=new-table) the stream's last
 * table commit attempt wrote, or NULL when none yet; *reason (reason may be
 * NULL): why that version exists, NULL for a base table. */
const char *ls_compactor_table_version(const ls_compactor_t *c, int64_t stream_no,
                                       const char **reason);
/* Loop thread: why the stream's table is held back — the first range of
 * the last pass that tried it and could not go into the table (a record
 * error.handling=fail refuses, a schema evolution=fail refuses, a spec the
 * table does not have, a store failure), with its partition and offsets —
 * or NULL when its last commit went through (or nothing failed yet). */
const char *ls_compactor_table_held(const ls_compactor_t *c, int64_t stream_no);
/* Loop thread: while the stream's external catalog (lakestream.table.catalog
 * = <name>) lacks the table's latest snapshot, since when and why
 * (compact/catalog_sync.h); NULL when in sync or not mirrored. */
const char *ls_compactor_table_catalog_status(const ls_compactor_t *c, int64_t stream_no);
/* Any thread: the same for table ns.table (the policy's table name), as a
 * copy to ls_free, or NULL (the REST catalog's lakestream.held-reason). */
char *ls_compactor_table_held_copy(ls_compactor_t *c, const char *ns, const char *table);
/* Loop thread: the records lakestream.table.error.handling=skip has left
 * out of the stream's table (its property lakestream.skipped-records) as of
 * this broker's last commit of it; false when none was ever skipped or this
 * broker has not committed it yet. */
bool ls_compactor_table_skipped(const ls_compactor_t *c, int64_t stream_no, int64_t *records);
#endif
