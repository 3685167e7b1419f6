/* Kafka RecordBatch v2 (protocol guide "Record Batch"; docs/implementation.html).
 *
 *   baseOffset int64 | batchLength int32 | partitionLeaderEpoch int32 | magic int8 |
 *   crc uint32 (CRC-32C of attributes..end) | attributes int16 | lastOffsetDelta int32 |
 *   baseTimestamp int64 | maxTimestamp int64 | producerId int64 | producerEpoch int16 |
 *   baseSequence int32 | records count int32 | records...
 *
 * batchLength counts the bytes after the batchLength field itself, so a batch
 * occupies 12 + batchLength bytes. Records may be compressed (attributes bits 0-2).
 * Validation decompresses and parses every record so a bad batch is refused at
 * produce time, never found later by a consumer. */
#ifndef LS_RECORDS_H
#define LS_RECORDS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

#define LS_RB_HEADER_SIZE 61 /* bytes up to and including the record count */
#define LS_RB_OFF_BASE_OFFSET 0
#define LS_RB_OFF_LENGTH 8
#define LS_RB_OFF_LEADER_EPOCH 12
#define LS_RB_OFF_MAGIC 16
#define LS_RB_OFF_CRC 17
#define LS_RB_OFF_ATTRIBUTES 21
#define LS_RB_OFF_LAST_OFFSET_DELTA 23
#define LS_RB_OFF_BASE_TIMESTAMP 27
#define LS_RB_OFF_MAX_TIMESTAMP 35
#define LS_RB_OFF_PRODUCER_ID 43
#define LS_RB_OFF_PRODUCER_EPOCH 51
#define LS_RB_OFF_BASE_SEQUENCE 53
#define LS_RB_OFF_RECORD_COUNT 57

/* Decompression bounds used by ls_records_validate: the records of one batch
 * may decompress to LS_RB_MAX_EXPANSION x max_batch_bytes, never less than
 * LS_RB_MIN_DECOMPRESS_CAP nor more than LS_RB_MAX_DECOMPRESSED. Beyond that
 * the batch is LS_RB_TOO_LARGE. */
#define LS_RB_MAX_EXPANSION 64
#define LS_RB_MIN_DECOMPRESS_CAP ((size_t)1 << 20)
#define LS_RB_MAX_DECOMPRESSED ((size_t)256 << 20)

typedef struct ls_batch_info {
    size_t pos;  /* byte position of this batch in the validated blob */
    size_t size; /* 12 + batchLength */
    int64_t base_offset;
    int32_t leader_epoch;
    int8_t magic;
    int16_t attributes;
    int codec;                 /* attributes & 7 */
    bool timestamp_log_append; /* attributes bit 3 */
    bool transactional;        /* bit 4 */
    bool control;              /* bit 5 */
    int32_t last_offset_delta;
    int64_t base_timestamp;
    int64_t max_timestamp;
    int64_t producer_id;
    int16_t producer_epoch;
    int32_t base_sequence;
    int32_t record_count;
    int32_t first_null_key;               /* ls_records_validate: index of the first record
                                             without a key, -1 if every record has one */
    int64_t min_record_ts, max_record_ts; /* ls_records_validate: the records'
                               own timestamps (baseTimestamp + delta) */
} ls_batch_info_t;

/* Outcome classes, mapped to Kafka error codes at the handler. */
typedef enum {
    LS_RB_OK = 0,
    LS_RB_CORRUPT,   /* CRC mismatch, truncated batch, bad lengths: CORRUPT_MESSAGE (2) */
    LS_RB_INVALID,   /* well-formed but semantically wrong (counts, deltas, varints): INVALID_RECORD
                        (87) */
    LS_RB_BAD_MAGIC, /* magic != 2: UNSUPPORTED_FOR_MESSAGE_FORMAT (43) */
    LS_RB_TOO_LARGE, /* a batch exceeds max_batch_bytes: MESSAGE_TOO_LARGE (10) */
    LS_RB_BAD_CODEC, /* unknown codec id (5..7): CORRUPT_MESSAGE (2) */
} ls_rb_result;

/* Parses just the fixed header at p (len >= LS_RB_HEADER_SIZE). */
void ls_batch_header_parse(const uint8_t *p, ls_batch_info_t *out);

/* Validates the concatenated batches in p[0..len): framing, magic, CRC, that
 * record count matches the records present (after decompression), that each
 * record's length/varints/key/value/headers parse and offset deltas are
 * 0..count-1 ascending, and lastOffsetDelta == count-1. Fills infos (up to
 * max_infos; more batches than that is LS_RB_INVALID; infos may be NULL).
 * Writes a one-line reason naming the batch index and byte offset into why.
 * Empty input (no batch) and record count 0 are LS_RB_INVALID. The exact rule
 * list is at the top of records.c. Control batches, producer id/sequence and
 * timestamp rules are left to the caller (see ls_batch_info_t). */
ls_rb_result ls_records_validate(const uint8_t *p, size_t len, size_t max_batch_bytes,
                                 ls_batch_info_t *infos, int max_infos, int *ninfos, char *why,
                                 size_t whylen);

/* One decoded record (views into the batch or its decompressed copy). */
typedef struct ls_record_view {
    int64_t offset_delta;
    int64_t timestamp;  /* absolute: baseTimestamp + delta (maxTimestamp in
                           LogAppendTime batches, as Kafka consumers see it) */
    const uint8_t *key; /* NULL when null */
    int32_t key_len;    /* -1 when null */
    const uint8_t *value;
    int32_t value_len;
    int32_t header_count;
    const uint8_t *headers; /* raw header bytes, header_count entries */
    size_t headers_len;
} ls_record_view_t;

/* Appends to out the batch at `batch` (validated: bi from
 * ls_records_validate with the same max_batch_bytes) with its records
 * compressed by codec at level (ls_compress_level): what Kafka's broker does
 * for a topic whose compression.type names a codec other than the batch's.
 * Header fields stay (offsets, timestamps, producer id, sequence); the codec
 * bits, length and CRC are rewritten. */
ls_rb_result ls_records_recompress(const uint8_t *batch, const ls_batch_info_t *bi,
                                   size_t max_batch_bytes, int codec, int level, ls_buf_t *out,
                                   char *reason, size_t rlen);
/* Calls cb for each record of one batch (decompressing if needed, output
 * bounded by max_decompressed). cb returns non-zero to stop early.
 * Returns LS_RB_OK or the failure class. Only the first batch at `batch` is
 * read; len may run past it. The CRC is checked and the whole batch is
 * parsed before cb first runs, so cb never sees part of a bad batch. Meant for
 * stored batches, it also accepts what key compaction leaves: count 0 and
 * offset deltas with gaps (strictly increasing, <= lastOffsetDelta). */
ls_rb_result ls_records_foreach(const uint8_t *batch, size_t len, size_t max_decompressed,
                                int (*cb)(void *arg, const ls_record_view_t *rec), void *arg);
/* One header of a record view's raw header bytes. */
typedef struct ls_record_header {
    const char *key;
    int32_t key_len;
    const uint8_t *value; /* NULL when null */
    int32_t value_len;    /* -1 when null */
} ls_record_header_t;
/* Decodes the header at *pos (advancing it); -1 on malformed bytes. Records
 * that passed ls_records_foreach always decode. */
int ls_record_header_next(const uint8_t **pos, const uint8_t *end, ls_record_header_t *h);

/* A transaction marker (protocol guide, "Control Batches"): a batch with
 * the transactional and control attributes, producer id and epoch of the
 * decision, no sequence (-1), and one record whose key is (version int16 0,
 * type int16: 0 abort, 1 commit) and whose value is (version int16 0,
 * coordinator epoch int32). Writes it at out, returns its size
 * (LS_RB_MARKER_SIZE). Base offset 0: the log assigns the real one. */
#define LS_RB_MARKER_SIZE 78
size_t ls_records_marker(uint8_t out[LS_RB_MARKER_SIZE], int64_t producer_id, int16_t epoch,
                         bool commit, int32_t coordinator_epoch, int64_t timestamp);
#endif
