/* Metadata records of log storage (docs/FORMATS.md "Metadata keyspace"):
 *
 *   /ls/head/<log_id %016x>               log head: next offset, start, size, producers
 *   /ls/log/<log_id %016x>/idx/<last %020d>  index entry, keyed by its LAST offset so a
 *                                         read of offset x is a ceiling lookup (first key >= x)
 *   /ls/walobj/<object key>               a committed WAL object (GC keeps referenced ones)
 *   /ls/start/<log_id %016x>              log start: first readable offset and bytes trimmed
 *                                         (absent: 0 / 0). Separate from the head so a trim
 *                                         never contends with appends (log_trim.h)
 *
 * Values are versioned little binary records (big-endian), decoded with
 * bounds checks: a corrupt value is LS_ECORRUPT naming the key, never a crash. */
#ifndef LS_LOG_META_H
#define LS_LOG_META_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "base/buf.h"
#include "base/status.h"

#define LS_PRODUCER_BATCHES 5 /* per producer, as Kafka: dedupe the last 5 batches */

typedef struct ls_pbatch {
    int32_t first_seq;
    int32_t last_seq;
    int64_t base_offset;
} ls_pbatch_t;

typedef struct ls_pstate {
    int64_t producer_id;
    int16_t epoch;
    int nbatches; /* oldest first */
    ls_pbatch_t batches[LS_PRODUCER_BATCHES];
    /* Transactions (log_txn.h): the transaction open on this log (0: none)
     * and its first offset (0 when none), and the highest transaction whose
     * marker this log has seen (0: none). Zeroed = no transaction state. */
    int64_t txn_seq;
    int64_t txn_first_offset;
    int64_t ended_seq;
    /* The max timestamp of its last batch, as Kafka's producer state keeps
     * it (DescribeProducers' LastTimestamp); 0: not known (a head written
     * before version 3). */
    int64_t last_timestamp;
} ls_pstate_t;

typedef struct ls_head {
    int64_t next_offset;
    int64_t log_start;  /* reserved, written as 0: the log start is in /ls/start/ */
    int64_t size_bytes; /* bytes ever appended (retained: minus trimmed_bytes) */
    int64_t max_timestamp;
    int64_t max_timestamp_offset;
    bool fenced;
    ls_pstate_t *producers;
    int nproducers;
    int64_t max_aborted_span; /* largest marker - first offset of an aborted transaction */
} ls_head_t;

/* WAL: a range of a WAL object, offsets assigned at commit (rebased on read).
 * CO: a compacted object holding every offset of [first, last] with real base
 * offsets. KCO: a key-compacted object (compact/keycompact.c): real base
 * offsets, batches in offset order inside [first, last], with gaps where key
 * compaction removed records (possibly no batch at all: entries == 0, len 0).
 * TABLE: [first, last] are rows of the log's table (log/cold_source.h): no
 * object (object is LS_COLD_TABLE_OBJECT, entries and pos 0; len: the bytes
 * of the batches the range held, so retention.bytes and the trimmed-bytes
 * count treat it like the CO it replaces); the log reader asks its
 * cold-range source for the records.
 * Only WAL entries are "not yet compacted"; CO, KCO and TABLE are compacted. */
typedef enum { LS_IDX_WAL = 0, LS_IDX_CO = 1, LS_IDX_KCO = 2, LS_IDX_TABLE = 3 } ls_idx_kind;

typedef struct ls_idx_entry {
    ls_idx_kind kind;
    int64_t first_offset;
    int64_t last_offset;
    int64_t max_timestamp;
    uint32_t entries;
    uint64_t pos;
    uint32_t len;
    char *object;              /* ls_malloc'd object key */
    int64_t delete_horizon_ms; /* KCO: earliest delete horizon of the tombstones
                                * it holds (keycompact.c); 0: none */
} ls_idx_entry_t;

/* Log start record: advanced only by trims (retention, DeleteRecords). */
typedef struct ls_start {
    int64_t log_start;     /* first readable offset */
    int64_t trimmed_bytes; /* bytes of index entries removed so far */
    int64_t index_start;   /* no index entry ends below this offset */
    int64_t swept_below;   /* compacted objects ending below this are deleted */
} ls_start_t;

/* Keys: LS_KEY_HEAD, LS_KEY_START, LS_KEY_LOG, LS_KEY_WALOBJ and the WAL GC turn
 * LS_KEY_WALGC_TURN (the broker collecting unreferenced WAL objects,
 * logstore.c), meta/meta_keys.h. */
int ls_log_head_key(char *out, size_t cap, int64_t log_id);
int ls_log_idx_prefix(char *out, size_t cap, int64_t log_id);
int ls_log_idx_key(char *out, size_t cap, int64_t log_id, int64_t last_offset);
int64_t ls_log_id_from_head_key(const char *key, size_t klen); /* -1 if malformed */
/* Log id and last offset of an index entry key; 0, or -1 if malformed. */
int ls_log_idx_key_parse(const char *key, size_t klen, int64_t *log_id, int64_t *last_offset);
int ls_log_start_key(char *out, size_t cap, int64_t log_id);
int64_t ls_log_id_from_start_key(const char *key, size_t klen); /* -1 if malformed */

void ls_head_encode(const ls_head_t *h, ls_buf_t *out);
ls_status ls_head_decode(const uint8_t *p, size_t len, ls_head_t *h); /* h->producers ls_malloc'd */
void ls_head_clear(ls_head_t *h);

void ls_start_encode(const ls_start_t *s, ls_buf_t *out);
ls_status ls_start_decode(const uint8_t *p, size_t len, ls_start_t *s);

void ls_idx_encode(const ls_idx_entry_t *e, ls_buf_t *out);
ls_status ls_idx_decode(const uint8_t *p, size_t len, ls_idx_entry_t *e);
void ls_idx_clear(ls_idx_entry_t *e);
#endif
