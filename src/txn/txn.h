/* Transaction coordinator, pure logic: the state machine of one transactional
 * id (Kafka's TransactionMetadata, KIP-98 / KIP-360 / KIP-890) over its
 * stored record. No sockets, no store I/O, no clock of its own: every step
 * takes the current record (NULL = the id does not exist) and the time, and
 * fills the next record plus what the caller must do (txn_store.c does it:
 * compare-and-set the record, allocate a producer id, write markers).
 *
 * State machine (docs/ARCHITECTURE.md, "Transactions"):
 *
 *   (absent) ──init──▶ Empty
 *   Empty / CompleteCommit / CompleteAbort ──add──▶ Ongoing (txn_seq + 1)
 *   Ongoing ──add──▶ Ongoing (participants grow)
 *   Ongoing ──end(commit)──▶ PrepareCommit     Ongoing ──end(abort)──▶ PrepareAbort
 *   Ongoing ──init (a new instance) / timeout──▶ PrepareAbort, epoch + 1 (fences)
 *   PrepareCommit ──complete──▶ CompleteCommit  PrepareAbort ──complete──▶ CompleteAbort
 *   Empty / CompleteX ──init──▶ Empty, epoch + 1 (new producer id when exhausted)
 *   Empty / CompleteX ──idle for transactional.id.expiration.ms──▶ (absent)
 *
 * Transaction version 2 (KIP-890 part 2; EndTxn v5, `bump`): every end also
 * moves the client's pair on (epoch + 1, or a new producer id at epoch 0
 * when exhausted) and the markers carry epoch + 1, so whatever the old pair
 * still has in flight is fenced; the old pair is kept as "previous" so a
 * retried end is answered again (NONE once complete, CONCURRENT_TRANSACTIONS
 * while decided, INVALID_TXN_STATE for the other outcome). An abort by the
 * current pair of Empty / CompleteX (the client sent records that may not
 * have arrived) goes straight to CompleteAbort with the bump, nothing to
 * mark; a commit there is INVALID_TXN_STATE. The `add` of TV2 comes from
 * Produce v12 and TxnOffsetCommit v5 instead of the client's
 * AddPartitionsToTxn / AddOffsetsToTxn: the same step.
 *
 * Invariants of a record (ls_txn_record_check):
 *  - participants are non-empty only in Ongoing and Prepare*, and hold no
 *    duplicates; at most LS_TXN_MAX_PARTICIPANTS of them;
 *  - the marker pair (marker_producer_id, marker_epoch) is set exactly in
 *    Prepare* and Complete*: it is what the markers of txn_seq carry;
 *  - producer_epoch <= LS_TXN_MAX_EPOCH; an epoch handed to a client (init, or
 *    the EndTxn v5 bump) is at most LS_TXN_MAX_EPOCH - 1, so a fencing bump
 *    always fits; when a client-visible bump would pass that, a new producer
 *    id with epoch 0 is taken instead;
 *  - txn_seq only grows; a transaction is decided (Prepare*) at most once per
 *    txn_seq, and its outcome never changes afterwards.
 *
 * Threads: none of its own; any thread (the store driver runs on workers). */
#ifndef LS_TXN_H
#define LS_TXN_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

#define LS_TXN_MAX_EPOCH 32767       /* Kafka's Short.MAX_VALUE */
#define LS_TXN_MAX_PARTICIPANTS 4096 /* partitions + groups of one transaction */

typedef enum ls_txn_state {
    LS_TXN_EMPTY,
    LS_TXN_ONGOING,
    LS_TXN_PREPARE_COMMIT,
    LS_TXN_PREPARE_ABORT,
    LS_TXN_COMPLETE_COMMIT,
    LS_TXN_COMPLETE_ABORT,
} ls_txn_state;
const char *ls_txn_state_name(ls_txn_state s); /* Kafka's spelling: "Ongoing", ... */

/* Outcomes; mapped to Kafka error codes at the protocol edge. */
typedef enum ls_txn_err {
    LS_TXERR_NONE = 0,
    LS_TXERR_INVALID_TRANSACTION_TIMEOUT,
    LS_TXERR_CONCURRENT_TRANSACTIONS, /* retriable: a decision is being completed */
    LS_TXERR_PRODUCER_FENCED,         /* INVALID_PRODUCER_EPOCH for old versions */
    LS_TXERR_INVALID_PRODUCER_ID_MAPPING,
    LS_TXERR_INVALID_TXN_STATE,
    LS_TXERR_TOO_MANY_PARTICIPANTS,
    LS_TXERR_NEED_PRODUCER_ID, /* internal: allocate one, run the step again */
} ls_txn_err;
const char *ls_txn_err_name(ls_txn_err e);

typedef struct ls_txn_config {
    int32_t max_timeout_ms;   /* transaction.max.timeout.ms (Kafka: 900000) */
    int64_t id_expiration_ms; /* transactional.id.expiration.ms (Kafka: 604800000) */
} ls_txn_config_t;
void ls_txn_config_defaults(ls_txn_config_t *cfg);

/* A partition participant. stream_no names the topic's incarnation, so a
 * topic deleted and re-created under the same name is another participant. */
typedef struct ls_txn_partition {
    char *topic;
    int64_t stream_no;
    int32_t partition;
} ls_txn_partition_t;

/* The stored state of one transactional id (docs/FORMATS.md, "Transactions"). */
typedef struct ls_txn_record {
    char *tid;
    ls_txn_state state;
    int64_t producer_id; /* the pair the client holds now */
    int16_t producer_epoch;
    int64_t prev_producer_id;    /* the pair before the last client-visible bump */
    int16_t prev_producer_epoch; /* (-1, -1: none); recognises retried bumps */
    int32_t timeout_ms;          /* transaction.timeout.ms of the last init */
    int64_t txn_seq;             /* number of the current / last transaction (0: none yet) */
    int64_t txn_start_ms;        /* wall ms the current transaction began (Ongoing) */
    int64_t update_ms;           /* wall ms of the last transition */
    int64_t marker_producer_id;  /* decided or completed: the markers' pair; else -1 */
    int16_t marker_epoch;
    ls_txn_partition_t *partitions;
    int npartitions;
    char **groups;
    int ngroups;
} ls_txn_record_t;

void ls_txn_record_free(ls_txn_record_t *r);
void ls_txn_record_copy(ls_txn_record_t *dst, const ls_txn_record_t *src);
/* NULL when the invariants above hold, else a static description. */
const char *ls_txn_record_check(const ls_txn_record_t *r);
bool ls_txn_has_partition(const ls_txn_record_t *r, int64_t stream_no, int32_t partition);
bool ls_txn_has_group(const ls_txn_record_t *r, const char *group);
static inline bool ls_txn_state_prepared(ls_txn_state s)
{
    return s == LS_TXN_PREPARE_COMMIT || s == LS_TXN_PREPARE_ABORT;
}

/* Binary encoding, version 1 (docs/FORMATS.md). decode: LS_ECORRUPT on bad
 * input, including a record that breaks the invariants. */
uint8_t *ls_txn_record_encode(const ls_txn_record_t *r, size_t *len);
ls_status ls_txn_record_decode(const uint8_t *p, size_t len, ls_txn_record_t *out);

/* What a step tells its caller. When `write` is set, `next` holds the new
 * record and must replace the current one by compare-and-set (`remove`: be
 * deleted instead); when `finish` is set the record (`next` if written, else
 * the current one) is decided and its markers must be written, then
 * ls_txn_complete run. producer_id/epoch are the answer of InitProducerId and
 * EndTxn v5. */
typedef struct ls_txn_result {
    ls_txn_err err;
    bool write;
    bool remove;
    bool finish;
    int64_t producer_id;
    int16_t producer_epoch;
} ls_txn_result_t;

/* Every step: cur NULL = the id does not exist; next is filled (owned by the
 * caller, ls_txn_record_free) exactly when result.write && !result.remove. */

typedef struct ls_txn_init_req {
    int32_t timeout_ms;  /* transaction.timeout.ms */
    int64_t producer_id; /* v3+ (KIP-360): the caller's pair, -1 / -1 if none */
    int16_t producer_epoch;
    int64_t fresh_producer_id; /* an allocated id the step may use (-1: none yet) */
} ls_txn_init_req_t;
ls_txn_result_t ls_txn_init(const ls_txn_record_t *cur, const char *tid,
                            const ls_txn_init_req_t *rq, const ls_txn_config_t *cfg, int64_t now_ms,
                            ls_txn_record_t *next);

/* AddPartitionsToTxn and AddOffsetsToTxn (groups). */
ls_txn_result_t ls_txn_add(const ls_txn_record_t *cur, int64_t producer_id, int16_t epoch,
                           const ls_txn_partition_t *parts, int nparts, const char *const *groups,
                           int ngroups, int64_t now_ms, ls_txn_record_t *next);

/* EndTxn. bump: the caller speaks transaction version 2 (EndTxn v5+): the
 * decision also bumps the epoch and a retry is recognised by the previous
 * pair. fresh_producer_id as for init (needed when the epoch is exhausted). */
ls_txn_result_t ls_txn_end(const ls_txn_record_t *cur, int64_t producer_id, int16_t epoch,
                           bool commit, bool bump, int64_t fresh_producer_id, int64_t now_ms,
                           ls_txn_record_t *next);

/* Every marker of decision txn_seq is written: Prepare* → Complete*. A record
 * that is no longer that decision (completed by another broker meanwhile)
 * is left alone (no write, no error). */
ls_txn_result_t ls_txn_complete(const ls_txn_record_t *cur, int64_t txn_seq, int64_t now_ms,
                                ls_txn_record_t *next);

/* The coordinator's periodic visit: an Ongoing transaction past its timeout
 * is decided abort with an epoch bump (the producer is fenced); a decided
 * record asks to be finished; an idle record past id_expiration_ms is
 * removed. */
ls_txn_result_t ls_txn_expire(const ls_txn_record_t *cur, const ls_txn_config_t *cfg,
                              int64_t now_ms, ls_txn_record_t *next);

/* Transactional produce to a partition (KIP-890 part 1): NONE with *txn_seq
 * when the pair is current and the partition is in the Ongoing transaction. */
ls_txn_err ls_txn_check_produce(const ls_txn_record_t *cur, int64_t producer_id, int16_t epoch,
                                int64_t stream_no, int32_t partition, int64_t *txn_seq);
/* TxnOffsetCommit: NONE when the pair is current and the group is in the
 * Ongoing transaction. */
ls_txn_err ls_txn_check_offsets(const ls_txn_record_t *cur, int64_t producer_id, int16_t epoch,
                                const char *group, int64_t *txn_seq);

#endif
