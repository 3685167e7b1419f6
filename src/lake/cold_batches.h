/* Cold reads from a raw table: Kafka RecordBatches v2 rebuilt from the rows
 * of a raw table's Parquet data files (docs/ARCHITECTURE.md "The third copy
 * of a table log").
 *
 * Two pieces, usable apart:
 *  - a batcher: records in ascending offset order in, RecordBatch v2 bytes
 *    out, batches cut at about a target size, compressed with a topic's
 *    compression.type, timestamp type per message.timestamp.type;
 *  - a Parquet scan: the rows of one partition with offset in [from, to] of
 *    a raw data file (iceberg_raw.h schema, columns found by field id), row
 *    groups whose offset statistics lie outside the range skipped unread.
 * ls_cold_read_parquet() joins them: what a fetch of a cold range needs.
 *
 * Invariants (the contract the log's cold-range reader relies on):
 *  - exact records: each record keeps its offset (baseOffset + offsetDelta),
 *    its key and value bytes (null stays null, empty stays empty), its
 *    headers in order with repeated keys and null values, and its timestamp
 *    (CreateTime: baseTimestamp + delta; LogAppendTime: the batch's
 *    maxTimestamp, so a batch never mixes two append times). Record bytes
 *    of an uncompressed batch are byte-exact with those of a producer's
 *    batch holding the same records with the same base offset/timestamp
 *    (attributes 0, minimal varints: the only encoding Kafka writes);
 *  - not preserved, and why clients do not care: the producer's batch
 *    boundaries and codec (consumers iterate records), producer id, epoch
 *    and base sequence (-1: idempotence state lives in the log head, not in
 *    cold batches), partition leader epoch (0: one epoch here);
 *  - every batch passes ls_records_foreach, the check of stored batches
 *    (CRC-32C over attributes..end, lastOffsetDelta = last record's delta;
 *    offsets may have gaps, as in key-compacted batches); a gap-free one
 *    (a raw append log without transactions has no gaps) also passes the
 *    produce-time ls_records_validate;
 *  - the first batch of a read is returned whole even past max_bytes
 *    (Kafka's progress guarantee); a record never spans two batches;
 *  - only whole Parquet files held in memory are read (parquet_reader.h);
 *    a row of another partition, or outside [from, to], is never emitted;
 *  - cost: per row group, the offset and partition columns are decoded
 *    whole (12 bytes a row); the other columns skip page by page to the
 *    first wanted row and decode only rows returned (plus the rest of the
 *    page they start in); each Parquet page is decompressed once, straight
 *    into one of two reused buffers, and each value is copied once, from
 *    the page into the batch being built; a row group whose rows of the
 *    partition ascend is left once past `to`. With a ls_cold_file_t kept
 *    between reads, a read continuing where the last stopped pays no
 *    footer parse and decodes nothing twice. bench/cold/cold_read_bench.c
 *    measures it.
 * Thread: any; no shared state. */
#ifndef LS_COLD_BATCHES_H
#define LS_COLD_BATCHES_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "base/buf.h"
#include "base/status.h"
#include "table/iceberg_raw.h"
#include "table/parquet_reader.h"

/* Kafka's RecordBatch record count and offset delta are int32: a batch
 * holds at most this many records. */
#define LS_COLD_MAX_BATCH_RECORDS 1000000

typedef struct ls_cold_batcher {
    int codec;            /* LS_CODEC_* (base/compress.h) */
    bool log_append_time; /* message.timestamp.type=LogAppendTime */
    size_t target_bytes;  /* cut a batch when its records reach about this */
    ls_buf_t out;         /* finished batches, concatenated (after a flush;
                             uncompressed, the open batch is written there too) */
    int nbatches;
    int64_t records;
    /* the open batch */
    size_t open_at; /* LS_CODEC_NONE: where its header is reserved in out */
    ls_buf_t recs;  /* compressed codecs: its records, uncompressed */
    int32_t count;
    int64_t base_offset, last_offset;
    int64_t base_ts, max_ts;
    int64_t prev_offset; /* last offset added to any batch, -1: none */
} ls_cold_batcher_t;

void ls_cold_batcher_init(ls_cold_batcher_t *b, int codec, bool log_append_time,
                          size_t target_bytes);
void ls_cold_batcher_free(ls_cold_batcher_t *b);
/* Adds one record (offsets strictly ascending; LS_EINVAL otherwise, or for
 * a null header key). r->partition is not used. */
ls_status ls_cold_batcher_add(ls_cold_batcher_t *b, const ls_raw_record_t *r);
/* Closes the open batch (if any) into out. LS_EIO when compression fails. */
ls_status ls_cold_batcher_flush(ls_cold_batcher_t *b);
/* Bytes of finished batches plus the open batch's records. */
size_t ls_cold_batcher_bytes(const ls_cold_batcher_t *b);

/* Calls cb for each row of `partition` with offset in [from, to] of the raw
 * data file r, in file order (the materializer writes offsets ascending);
 * cb returns non-zero to stop. The row's byte views are valid during the
 * call only. LS_EINVAL when the file lacks a raw column (by field id) or
 * has it with another type; read errors as the reader reports them; err
 * names the column and row group. */
typedef int (*ls_cold_row_cb)(void *arg, const ls_raw_record_t *row);
ls_status ls_cold_scan_rows(ls_pqr_t *r, int32_t partition, int64_t from, int64_t to,
                            ls_cold_row_cb cb, void *arg, char *err, size_t errlen);

/* A row group's bounds from its column statistics (ocol, pcol: the raw
 * offset and partition columns of r), and whether it may hold a row of
 * `partition` with offset in [from, to] (no statistics: it may). The scans
 * here open exactly the row groups ls_cold_rg_admits admits, so a reader
 * of a ranged image fetches those (cold_table.c) and nothing else. */
typedef struct ls_cold_rg_bounds {
    bool has_off, has_part;
    int64_t off_lo, off_hi, part_lo, part_hi;
} ls_cold_rg_bounds_t;
void ls_cold_rg_bounds(const ls_pqr_t *r, int rg, int ocol, int pcol, ls_cold_rg_bounds_t *b);
static inline bool ls_cold_rg_admits(const ls_cold_rg_bounds_t *b, int32_t partition, int64_t from,
                                     int64_t to)
{
    if (b->has_off && (b->off_hi < from || b->off_lo > to)) return false;
    if (b->has_part && (b->part_hi < partition || b->part_lo > partition)) return false;
    return true;
}

/* What one cold read of a data file produced. */
typedef struct ls_cold_read {
    ls_buf_t batches;    /* RecordBatches v2, concatenated */
    int64_t next_offset; /* one past the last record returned; from when none */
    int64_t records;
    bool full; /* stopped at max_bytes (rows past next_offset remain) */
    bool gap;  /* stop_at_gap: stopped before a row that does not follow */
} ls_cold_read_t;

/* Rebuilds the records of `partition` in [from, to] of the raw data file
 * data[0..len) as batches of about batch_bytes, stopping once max_bytes are
 * returned (the first batch always whole), and with stop_at_gap before the
 * first row whose offset does not follow the previous one (a range in the
 * table has no gaps: the missing rows are in another file, so a reader
 * must not skip them). out->batches is initialized here and owned by the
 * caller (ls_buf_free) on every return. */
ls_status ls_cold_read_parquet(const uint8_t *data, size_t len, int32_t partition, int64_t from,
                               int64_t to, int codec, bool log_append_time, size_t batch_bytes,
                               size_t max_bytes, bool stop_at_gap, ls_cold_read_t *out, char *err,
                               size_t errlen);

/* A raw data file kept open between reads (the cold source's cache of
 * footers and cursors): its footer parsed once, and a row cursor (the open
 * row group's decoded offset/partition columns, the other columns'
 * iterators and current pages) left where the last read stopped.
 *
 * Lifetime: data[0..len) must stay alive and unchanged until
 * ls_cold_file_free, except that bytes of row groups no read has touched
 * may be filled in later (a ranged image: cold_table.c fetches row groups
 * as reads need them; a read never touches a row group whose offset
 * statistics miss its [from, to]). One thread at a time.
 *
 * ls_cold_file_read() returns exactly what ls_cold_read_parquet() returns
 * for the same arguments. A read of the partition the last read was for,
 * whose `from` is that read's next_offset, goes on from the cursor (no
 * footer parse, no decode of what came before); any other read rewinds to
 * the first row group (cost as a fresh open minus the footer). A read that
 * fails rewinds too.
 *
 * into: NULL, or an empty buffer whose capacity the batches are written
 * into (the log reader's pooled read buffer: no fresh pages to fault in);
 * its storage becomes out->batches (freed when the read fails) and it is
 * left empty. */
typedef struct ls_cold_file ls_cold_file_t;
/* NULL with *st and err as ls_cold_read_parquet reports a bad or non-raw
 * file. */
ls_cold_file_t *ls_cold_file_open(const uint8_t *data, size_t len, ls_status *st, char *err,
                                  size_t errlen);
ls_status ls_cold_file_read(ls_cold_file_t *f, int32_t partition, int64_t from, int64_t to,
                            int codec, bool log_append_time, size_t batch_bytes, size_t max_bytes,
                            bool stop_at_gap, ls_buf_t *into, ls_cold_read_t *out, char *err,
                            size_t errlen);
typedef struct ls_cold_file_stats {
    uint64_t reads;             /* ls_cold_file_read calls */
    uint64_t resumed;           /* of them, gone on from the cursor */
    uint64_t row_groups_opened; /* offset/partition columns decoded */
} ls_cold_file_stats_t;
void ls_cold_file_stats(const ls_cold_file_t *f, ls_cold_file_stats_t *out);
/* The parsed footer (row groups, statistics), owned by f. */
const ls_pqr_t *ls_cold_file_reader(const ls_cold_file_t *f);
void ls_cold_file_free(ls_cold_file_t *f);
#endif
