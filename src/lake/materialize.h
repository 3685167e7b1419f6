/* Materialization: the table half of the compaction pass. Given a log range
 * that compaction has just read (entries with real offsets), appends its
 * records as rows of the stream's Iceberg table when the stream's policy
 * enables one. Design note in materialize.c. */
#ifndef LS_MATERIALIZE_H
#define LS_MATERIALIZE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "log/co_format.h"
#include "log/log_txn.h"
#include "meta/meta.h"
#include "objstore/objstore.h"
#include "stream/catalog.h"
#include "stream/policy.h"
#include "table/file_rewrite.h"

/* Where and how one stream's table is written (its policy resolved, see
 * stream/policy.h): built once per compaction pass and stream. */
struct ls_registry;

typedef struct ls_table_target {
    const ls_stream_t *stream;
    const ls_policy_t *policy;
    struct ls_registry *registry; /* value schemas (value.format=schema-registry) */
    char name[256];               /* table name: the policy's template expanded */
    char prefix[600];             /* object-store prefix "warehouse/<ns>/<name>" */
    /* evolution=new-table (materialize.c "Table versions"): name is the
     * policy's (base) unless the materializer resolved a later version
     * <base>__vN; side tables are always named after base */
    char base[256];
    int version;    /* 1: the base table; N >= 2: <base>__vN */
    char prev[256]; /* the version before (""): offsets it lacks are the previous one's */
} ls_table_target_t;

/* Whether the policy's partition spec applies to a typed table of the
 * Iceberg schema typed_schema (ls_typed_iceberg_schema_json; NULL: a raw
 * table): LS_OK, or LS_EINVAL with why naming the field, the transform and
 * the reason (the Iceberg spec's "Partition Transforms" table, sources in
 * structs only). What a table is created with (materialize.c). */
ls_status ls_mat_partition_check(const ls_policy_t *p, const char *typed_schema, int last_column_id,
                                 char *why, size_t whylen);

/* Whether the stream's table, when it exists (its current version), has
 * the partition spec tt's policy gives for it: LS_OK (or no table yet),
 * LS_EINVAL with err naming lakestream.table.partition and both specs (a
 * table keeps its spec: partition spec evolution is not built), or the
 * store's status. Blocking (reads the table's metadata). */
ls_status ls_mat_spec_check(ls_meta_t *meta, ls_objstore_t *os, const ls_table_target_t *tt,
                            char *err, size_t errlen);

/* LS_EINVAL (message naming the key) when the name template does not give a
 * valid table name for this stream. */
ls_status ls_table_target_init(ls_table_target_t *t, const ls_stream_t *s, const ls_policy_t *p,
                               struct ls_registry *registry, char *err, size_t errlen);

/* The table's recorded last materialized offset of log_id: -1 when the table
 * or its record of the log does not exist. */
ls_status ls_materialize_last_offset(ls_meta_t *meta, ls_objstore_t *os,
                                     const ls_table_target_t *tt, int64_t log_id, int64_t *out,
                                     char *err, size_t errlen);

/* A range of one log to materialize: the entries compaction read (base
 * offsets real; entry i spans [entries[i].pos, entries[i + 1].pos) of obj,
 * the last ending at body_end). Rows are made of the records at offsets in
 * [from_offset, last_offset] (from_offset: start.position=latest) above
 * what the table holds, except control batches and the batches of aborted
 * transactions. last_offset must lie below the log's last stable offset,
 * so every transactional batch in range belongs to a transaction that
 * ended, and `aborted` holds the log's aborted transactions overlapping the
 * range (ls_log_aborted_read; NULL: none). */
typedef struct ls_mat_range {
    int32_t partition;
    int64_t log_id;
    const uint8_t *obj;
    const ls_co_entry_t *entries;
    uint32_t n;
    size_t body_end;
    int64_t from_offset, last_offset;
    const ls_aborted_list_t *aborted;
} ls_mat_range_t;

/* A batch: one table commit covering ranges of several logs (a table's
 * partitions), so a pass makes one snapshot per table whatever its partition
 * count and backlog. begin opens the table (creating it when missing), add
 * writes a range's rows into data files, commit appends them as one snapshot
 * recording every added log's last offset. Exactly-once as for a single
 * range: the caller swaps the index of a range only after commit. */
typedef struct ls_mat_batch ls_mat_batch_t;
ls_status ls_mat_begin(ls_meta_t *meta, ls_objstore_t *os, const char *warehouse_uri,
                       const ls_table_target_t *tt, ls_mat_batch_t **out, char *err, size_t errlen);
/* Last offset of log_id the table holds, counting ranges added to b. */
int64_t ls_mat_done(ls_mat_batch_t *b, int64_t log_id);
/* evolution=new-table: true once an added range met a record that starts
 * a new table version (the commit records it; a later begin writes into
 * that version). */
bool ls_mat_switched(const ls_mat_batch_t *b);
/* ... and true for a log whose range met such a record (the first, or one
 * of another log after it that b's table cannot take either): b holds that
 * log only below that record and takes no more of it, so that range and
 * every later one of the log must stay in the WAL (not be swapped) even
 * when the commit lands; a later pass writes them into the new version.
 * Other logs' ranges go on into b's table as usual. */
bool ls_mat_stopped(ls_mat_batch_t *b, int64_t log_id);
/* The name of the table (version) b writes. */
const char *ls_mat_table_name(const ls_mat_batch_t *b);
/* Why b's table version exists (the reason the version before it was
 * continued, with offset and schema ids), or NULL for a base table (or a
 * version no record has created yet). */
const char *ls_mat_version_reason(const ls_mat_batch_t *b);
/* After a commit: the table's running count of records error.handling=skip
 * left out (its property lakestream.skipped-records), or -1 when none ever
 * was. */
int64_t ls_mat_skipped_records(const ls_mat_batch_t *b);
/* The table's size after the batch's commit (its current snapshot's
 * summary): snapshots kept, live data files, their bytes and rows; false
 * when the batch has no table. */
typedef struct ls_mat_totals {
    int64_t snapshots, data_files, bytes, rows;
} ls_mat_totals_t;
bool ls_mat_totals(const ls_mat_batch_t *b, ls_mat_totals_t *out);
/* Rows of a range (ls_mat_range_t) into b (nothing is visible before
 * commit); the table then holds r->log_id up to r->last_offset. */
ls_status ls_mat_add(ls_mat_batch_t *b, const ls_mat_range_t *r, uint64_t *rows_out, char *err,
                     size_t errlen);
/* One snapshot of everything added (no commit when nothing was); rows: the
 * rows it made visible. After a failed add nothing is committed (that add
 * may have written part of its rows), so the whole batch is retried. LS_ECONFLICT: another commit
 * won; retry next pass. */
ls_status ls_mat_commit(ls_mat_batch_t *b, uint64_t *rows, char *err, size_t errlen);
/* After a commit: rewrites runs of small data files of b's table as one
 * replace snapshot (table/file_rewrite.h, with the policy's
 * rewrite.min.files, target file size and codec); LS_OK with nothing done
 * when no run qualifies. LS_ECONFLICT: another commit won. */
ls_status ls_mat_rewrite(ls_mat_batch_t *b, ls_file_rewrite_stats_t *stats, char *err,
                         size_t errlen);
void ls_mat_free(ls_mat_batch_t *b);

/* Deletes the table's orphan files written before older_than_ms
 * (ls_ice_table_remove_orphans); LS_OK with 0 when the table does not exist. */
ls_status ls_materialize_remove_orphans(ls_meta_t *meta, ls_objstore_t *os,
                                        const ls_table_target_t *tt, int64_t older_than_ms,
                                        uint64_t *deleted, char *err, size_t errlen);

/* Maintenance of tt's table (the version taking rows) and its side tables
 * when no commit of theirs did it (ls_ice_table_expire: snapshots past
 * retention expire, files past lakestream.table.file.delete.delay.ms are
 * deleted). Under the table claim. *next_ms: when something next becomes
 * due (INT64_MAX: nothing pending); *committed: tt's own table took a
 * commit (an external catalog mirroring it has something new); tables that
 * do not exist are skipped. */
ls_status ls_materialize_expire(ls_meta_t *meta, ls_objstore_t *os, const ls_table_target_t *tt,
                                int64_t now_ms, int64_t *next_ms, bool *committed, char *err,
                                size_t errlen);

/* One range as one snapshot (ls_mat_begin, ls_mat_add, ls_mat_commit),
 * with the policy's partition spec (at table creation), target file size
 * and codec, committed through the table catalog's pointer in meta
 * (table/table_catalog.h). LS_OK also when the table already holds the
 * range. On error the caller must not swap the index (the range stays in
 * WAL objects and the next pass retries; data files written by a failed
 * attempt are orphans). */
ls_status ls_materialize_range(ls_meta_t *meta, ls_objstore_t *os, const char *warehouse_uri,
                               const ls_table_target_t *tt, const ls_mat_range_t *r,
                               uint64_t *rows_out, char *err, size_t errlen);
#endif
