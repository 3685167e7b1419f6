/* Cold reads of a raw table log from its table (docs/ARCHITECTURE.md "The
 * third copy of a table log"): the planning half of the table-backed
 * cold-range source (log/cold_source.h).
 *
 * ls_cold_table_read() serves one read of a Kafka partition's offsets
 * [from, to] from the table object's current snapshot: among the live data
 * files, those whose column bounds (Iceberg lower/upper bounds of the raw
 * `partition` and `offset` columns) admit the partition and `from` are read,
 * lowest offset bound first, until one holds the row at `from`; its rows
 * from there (up to `to`, or where the file's rows of the partition stop)
 * are rebuilt as batches (cold_batches.h).
 *
 * Invariants:
 *  - the snapshot is the only record of where rows are: nothing here is
 *    kept between calls, so a data-file rewrite never leaves a stale
 *    pointer behind; a file the plan named but the store no longer has
 *    (expired, orphan-swept) or a `from` no live file holds answers
 *    LS_ENOTFOUND: the caller reloads the table and asks again (the log
 *    reader retries; a range that stays missing becomes LS_ECORRUPT there);
 *  - a read never returns a row of another partition, a row outside
 *    [from, to], or a row twice; the first row returned is `from` (a range
 *    in the table has no gaps), so *next - from records come back;
 *  - files without bounds for the two columns are candidates (bounds are
 *    optional in Iceberg), never skipped on a guess.
 * Ranged reads: a file of 256 KiB or more is read as its footer plus the
 * row groups the read needs (cold_table.c "open files"); smaller ones
 * whole. With a file cache (ls_cold_files_t, the broker's source keeps one)
 * an opened file stays open between reads: its footer parsed, the row
 * groups fetched so far, and the scan cursor, so a catching-up consumer's
 * next read-ahead block fetches only the row groups it has not fetched yet
 * and decodes nothing twice. Data files are immutable, so an entry never
 * goes stale; which files a read uses is still the plan's (the snapshot's)
 * decision, never the cache's. */
#ifndef LS_COLD_TABLE_H
#define LS_COLD_TABLE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "base/buf.h"
#include "base/status.h"
#include "table/iceberg_table.h"

typedef struct ls_cold_table_req {
    int32_t partition;
    int64_t from, to;
    int codec;            /* the topic's compression.type as LS_CODEC_* */
    bool log_append_time; /* message.timestamp.type=LogAppendTime */
    size_t batch_bytes;   /* about this per batch */
    size_t max_bytes;     /* stop at about this (the first batch whole) */
} ls_cold_table_req_t;

typedef struct ls_cold_table_stats {
    int files_planned; /* live files whose bounds admitted the read */
    int files_read;
    int files_cached;    /* of them, taken open from the file cache */
    int ranged;          /* of them, read through ranged GETs (footer, row groups) */
    uint64_t bytes_read; /* bytes GET returned */
} ls_cold_table_stats_t;

/* Appends the batches to out and sets *next (one past the last record).
 * stats may be NULL. */
ls_status ls_cold_table_read(ls_ice_table_t *t, const ls_cold_table_req_t *q, ls_buf_t *out,
                             int64_t *next, ls_cold_table_stats_t *stats, char *err, size_t errlen);

/* Open data files kept between reads (cold_table.c "open files"): each
 * file's bytes fetched so far, shared by its readers, and a cursor per
 * partition read; bounded by max_bytes of file bytes (fetched; a mapped file whole) and 256 files
 * (least recently used closed first) and 1024 cursors. Thread-safe. */
typedef struct ls_cold_files ls_cold_files_t;
typedef struct ls_cold_files_stats {
    uint64_t hits;       /* file reads that found their cursor open */
    uint64_t image_hits; /* ... that found the file open (a new cursor on it) */
    uint64_t misses;     /* ... that opened the file */
    uint64_t evictions;  /* files closed for the bounds */
    uint64_t bytes;      /* bytes of open files now (fetched; mapped: whole) */
    int files, cursors;  /* open now */
} ls_cold_files_stats_t;
ls_cold_files_t *ls_cold_files_new(uint64_t max_bytes);
void ls_cold_files_stats(ls_cold_files_t *c, ls_cold_files_stats_t *out);
void ls_cold_files_free(ls_cold_files_t *c);

/* The same read planned on a list of t's live files the caller keeps
 * (ls_ice_table_live_files of one snapshot, read-only here, so several
 * threads may share it and t): what a cache of plans calls (cold_tables.h).
 * files: NULL, or the cache to take open files from and give them back to.
 * A file the list names but the store lost answers LS_ENOTFOUND as above. */
struct ls_ice_mentry;
ls_status ls_cold_table_read_live(const ls_ice_table_t *t, const struct ls_ice_mentry *live,
                                  size_t n, ls_cold_files_t *files, const ls_cold_table_req_t *q,
                                  ls_buf_t *out, int64_t *next, ls_cold_table_stats_t *stats,
                                  char *err, size_t errlen);
#endif
