/* The Delta Lake table of an Iceberg table (lakestream.table.format=delta):
 * the same data files, named by a Delta log at the table's location
 * (<location>/_delta_log, table/delta_log.h), so Delta readers (delta-rs,
 * Spark, DuckDB's delta extension) read what Iceberg readers read.
 *
 * The Iceberg table stays the record of what the table holds (the pass's
 * offsets, cold reads, upserts and maintenance read it); the Delta log
 * follows it. ls_delta_mirror makes the Delta table's live files those of
 * the Iceberg table's current snapshot in one Delta commit: adds for the
 * files Iceberg has and Delta lacks, removes for the others, a metaData
 * when the schema (or the file grace) changed, and the txn action
 * (appId LS_DELTA_APP_ID, version = the Iceberg table's
 * last-sequence-number) that says which Iceberg commit it mirrors.
 *
 * Invariants:
 *  - idempotent: a log whose txn version is the table's sequence number
 *    is left as it is, and a commit only adds what the log does not hold
 *    live, so a retried or repeated mirror never adds a file twice;
 *  - a crash before the Delta commit leaves the log one mirror behind; the
 *    next mirror (the next commit, rewrite or idle check of the table)
 *    catches up in one commit;
 *  - two brokers mirroring at once: the create-only put lets one win per
 *    version; the other reloads and finds nothing left to do.
 *
 * Threads: whoever owns the table handle (the compactor's worker). */
#ifndef LS_DELTA_MIRROR_H
#define LS_DELTA_MIRROR_H
#include "base/status.h"
#include "table/iceberg_table.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LS_DELTA_APP_ID "lakestream.iceberg"

/* The table's settings, also written into metaData.configuration. */
typedef struct ls_delta_opts {
    /* lakestream.table.file.delete.delay.ms: delta.deletedFileRetentionDuration,
     * and how long a checkpoint keeps a remove (tombstone) */
    int64_t file_grace_ms;
    /* lakestream.table.snapshot.retention.ms: delta.logRetentionDuration, how
     * old a log file below a checkpoint gets before it is deleted; 0: never */
    int64_t log_retention_ms;
    /* lakestream.table.delta.checkpoint.interval: delta.checkpointInterval,
     * a checkpoint at every version that is a multiple of it */
    int64_t checkpoint_interval;
} ls_delta_opts_t;

/* Mirrors t's current snapshot into its Delta log (created by the first
 * call); a commit whose version is a multiple of the checkpoint interval is
 * followed by a checkpoint and the clean-up of the log files it makes
 * unneeded (a failure there is logged and left to the next checkpoint).
 * *files: adds and removes committed (0: the log was up to date).
 * LS_EINVAL (err) for a schema Delta cannot express (a column of Iceberg
 * type time); LS_ECONFLICT after several lost races; the store's status
 * otherwise. */
ls_status ls_delta_mirror(ls_ice_table_t *t, const ls_delta_opts_t *o, int64_t now_ms,
                          size_t *files, char *err, size_t errlen);

/* The Delta schema (schemaString) of an Iceberg schema's JSON text, and
 * whether it needs the timestampNtz feature. NULL with why for a type
 * Delta has not (time). ls_free the result. */
char *ls_delta_schema_of_iceberg(const char *iceberg_schema, bool *ntz, char *why, size_t whylen);
#endif
