/* Rewriting small data files of a table (table maintenance): runs of small
 * live files of one partition become one file holding exactly their rows,
 * committed as one Iceberg "replace" snapshot (ls_ice_table_rewrite).
 * Design note in file_rewrite.c. */
#ifndef LS_FILE_REWRITE_H
#define LS_FILE_REWRITE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/status.h"
#include "table/iceberg_manifest.h"
#include "table/iceberg_table.h"
#include "table/parquet_writer.h"

typedef struct ls_file_rewrite_opts {
    const ls_pq_field_t *fields; /* the table's row shape (what its files hold) */
    size_t nfields;
    const ls_pq_opts_t *pq; /* codec and sizes of the new files */
    int64_t target_bytes;   /* files at least this big are never inputs */
    int min_files;          /* a run takes at least this many files (>= 4, as a
                             * run grows 4x); 0: never rewrite */
    bool merge_on_read;     /* ls_file_drop_rows writes position deletes */
} ls_file_rewrite_opts_t;

/* One run: live[idx[0..n)] (indices into the live list) become one file. */
typedef struct ls_file_run {
    size_t *idx;
    size_t n;
    uint64_t bytes;
} ls_file_run_t;

/* The runs the rule picks among live[0..n) (ls_ice_table_live_files),
 * partitions in spec order of their values, runs in order of their files'
 * sequence numbers, at most about target_bytes of input in all (always at
 * least one run when there is one); *more: runs were left for later. Free
 * with ls_file_runs_free. */
size_t ls_file_rewrite_plan(const ls_ice_mentry_t *live, size_t n, int nspec_fields,
                            const ls_file_rewrite_opts_t *o, ls_file_run_t **runs, bool *more);
void ls_file_runs_free(ls_file_run_t *runs, size_t n);

typedef struct ls_file_rewrite_stats {
    uint64_t commits;              /* replace snapshots */
    uint64_t files_removed;        /* data files replaced */
    uint64_t delete_files_removed; /* position delete files applied, merged or dropped */
    uint64_t delete_files_added;   /* merged delete files written */
    uint64_t rows_deleted;         /* rows those deletes took, left out of the copies */
    uint64_t files_added;
    uint64_t bytes_read, bytes_written, rows;
    uint64_t failures; /* counted by callers */
    bool more;         /* the last call left runs for a later one */
} ls_file_rewrite_stats_t;

/* Plans t's current snapshot and, when there are runs, writes their files
 * (less the rows live position deletes took; a data file such deletes
 * weigh on is a run of its own, file_rewrite.c) and commits them, with the
 * delete files that name only removed files, as one replace snapshot at
 * now_ms; stats are added to.
 * LS_ECONFLICT: another commit won (t is stale: load it again); another
 * error: nothing committed (files written are orphans), reason in err. */
ls_status ls_file_rewrite(ls_ice_table_t *t, const ls_file_rewrite_opts_t *o, int64_t now_ms,
                          ls_file_rewrite_stats_t *stats, char *err, size_t errlen);

/* Copy-on-write deletes (upsert tables): every live file of t holding a row
 * whose key column (key_column, a top-level optional BYTE_ARRAY column) has
 * a value drop() accepts is read and copied without those rows into one new
 * file of the same partition (none when no row stays). *out holds the paths
 * to remove and the new files, for one ls_ice_table_overwrite commit
 * together with the new rows. Null keys are never dropped. Reads every live
 * file (its key column decides); the files written are orphans until that
 * commit. With o->merge_on_read nothing is copied: *out holds no removed
 * files and, as added files, one position delete file per partition naming
 * those rows (rows live deletes already took excepted). */
typedef bool (*ls_file_drop_fn)(void *arg, const uint8_t *key, size_t len);
typedef struct ls_file_cow {
    char **removed; /* owned copies of the paths */
    size_t nremoved;
    ls_ice_datafile_t *added;
    size_t nadded;
    int64_t rows_dropped;
    uint64_t bytes_read, bytes_written;
} ls_file_cow_t;
ls_status ls_file_drop_rows(ls_ice_table_t *t, const ls_file_rewrite_opts_t *o,
                            const char *key_column, ls_file_drop_fn drop, void *arg,
                            ls_file_cow_t *out, char *err, size_t errlen);
void ls_file_cow_clear(ls_file_cow_t *c);

/* Copy-on-write deletes by a primary key (upsert tables with typed keys):
 * a row's identity is the concatenation, over columns[0..n) (leaf paths
 * without repetition, e.g. "_kafka_key_typed.id"), of each value's identity
 * below; drop() gets it. Otherwise as ls_file_drop_rows. Identities (in
 * memory only, never stored): 'i' + int64 little-endian (INT32 and INT64
 * alike, so a column widened from int to long keeps its rows' identities),
 * 'b' + one byte (BOOLEAN), 's' + uint32 little-endian length + the bytes
 * (BYTE_ARRAY), 'n' for a null. */
ls_status ls_file_drop_rows_ident(ls_ice_table_t *t, const ls_file_rewrite_opts_t *o,
                                  const char *const *columns, size_t n, ls_file_drop_fn drop,
                                  void *arg, ls_file_cow_t *out, char *err, size_t errlen);
void ls_file_ident_long(ls_buf_t *b, int64_t v);
void ls_file_ident_bool(ls_buf_t *b, bool v);
void ls_file_ident_bytes(ls_buf_t *b, const uint8_t *p, size_t n);
void ls_file_ident_null(ls_buf_t *b);
#endif
