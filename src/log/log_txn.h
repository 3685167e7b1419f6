/* Transactions on one log, pure logic over the log head (docs/ARCHITECTURE.md,
 * "Transactions", "The log side"): which transactional batches and markers a
 * commit accepts, what they change in the head, the last stable offset, and
 * the aborted-transactions index of a log. No I/O (but for
 * ls_log_aborted_read, a blocking store read for workers); the WAL commit
 * (wal_writer.c) applies these rules inside its head compare-and-set, so
 * every rule holds against the head the commit actually replaces.
 *
 * A transaction is named on a log by (producer id, txn_seq), txn_seq being
 * the coordinator's number of the transaction (txn/txn.h), >= 1.
 *
 * Invariants of a head's producer entry (checked by ls_head_decode):
 *  - txn_seq > 0 means a transaction is open on the log, starting at
 *    txn_first_offset (< next_offset), and txn_seq > ended_seq;
 *  - ended_seq only grows: once the marker of transaction k has been seen (or
 *    its decision reached the log without data), no batch of a transaction
 *    <= k is accepted (KIP-890's late batch);
 *  - the last stable offset is the smallest txn_first_offset of the open
 *    transactions, or next_offset when none is open.
 * Threads: none of its own. */
#ifndef LS_LOG_TXN_H
#define LS_LOG_TXN_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/status.h"
#include "log/log_meta.h"
#include "meta/meta.h"

typedef enum ls_txb_verdict {
    LS_TXB_OK = 0,
    LS_TXB_FENCED,           /* the producer's epoch is older than the log's */
    LS_TXB_ENDED,            /* its transaction already ended on this log */
    LS_TXB_OPEN_TRANSACTION, /* a non-transactional batch while the producer has one open */
    LS_TXB_BEHIND, /* a later transaction than the one open on this head: the head is behind
                    * (the marker ending that one was written through another broker and
                    * is not in this view yet); retriable, never a client error */
} ls_txb_verdict;

/* May a batch of producer (pid, epoch) commit? txn_seq: its transaction
 * (0: not transactional). */
ls_txb_verdict ls_log_txn_check_batch(const ls_head_t *h, int64_t pid, int16_t epoch,
                                      int64_t txn_seq);
/* A transactional batch committed at base_offset: opens its transaction on
 * the log if not open. The producer's entry must exist (the idempotence
 * bookkeeping created it). */
void ls_log_txn_apply_batch(ls_head_t *h, int64_t pid, int64_t txn_seq, int64_t base_offset);

typedef struct ls_log_marker {
    int64_t producer_id;
    int16_t epoch; /* the decision's marker epoch (txn/txn.h) */
    int64_t txn_seq;
    bool commit;
} ls_log_marker_t;

/* Every marker is a control batch, as in Kafka, also on a log the
 * transaction wrote nothing to (it then only closes the transaction there).
 * A marker already seen (another broker finishing the same decision) is not
 * appended; if two brokers race past this check, the second batch lands but
 * changes nothing (ls_log_txn_marker_apply with the head it commits onto
 * plans NOOP), and readers skip control batches anyway. */
typedef enum ls_marker_action {
    LS_MARK_NOOP,  /* already seen: nothing changes (idempotent) */
    LS_MARK_APPLY, /* closes the transaction on this log */
} ls_marker_action;
ls_marker_action ls_log_txn_marker_plan(const ls_head_t *h, const ls_log_marker_t *m);

/* An aborted transaction of a log: data in [first_offset, marker_offset). */
typedef struct ls_aborted {
    int64_t producer_id;
    int64_t first_offset;
    int64_t marker_offset;
} ls_aborted_t;

/* Applies a marker committed at marker_offset with the plan made against
 * the head it commits onto: on NOOP nothing; else raises the producer's
 * epoch to the marker's (older epochs fenced; its sequences restart),
 * closes the transaction if it is open here and records ended_seq. Returns
 * true and fills *out when the transaction had data here and aborted: that
 * range goes into the aborted index in the same metadata txn. */
bool ls_log_txn_marker_apply(ls_head_t *h, const ls_log_marker_t *m, ls_marker_action act,
                             int64_t marker_offset, ls_aborted_t *out);

int64_t ls_log_txn_lso(const ls_head_t *h);

/* ---- aborted-transactions index ----
 * Stored as /ls/log/<log_id %016x>/abort/<first_offset %020d> (FORMATS.md);
 * in memory a list sorted by first offset. A read of [a, b] needs the
 * entries with first <= b and marker >= a: those with first in
 * [a - max_aborted_span, b], filtered, found by binary search. */
int ls_log_abort_key(char *out, size_t cap, int64_t log_id, int64_t first_offset);
/* Log id of an aborted-record key: 0, or -1 if key is not one. Records are
 * deleted by trims (below the log start) and by key compaction (with the
 * abort marker they belong to, keycompact.c). */
int ls_log_abort_key_parse(const char *key, size_t klen, int64_t *log_id);
void ls_aborted_encode(const ls_aborted_t *a, ls_buf_t *out);
ls_status ls_aborted_decode(const uint8_t *p, size_t len, ls_aborted_t *out);

typedef struct ls_aborted_list {
    ls_aborted_t *v;
    int n, cap;
} ls_aborted_list_t;
/* Inserts, or replaces the entry with the same first offset (applying a
 * stored change twice converges). */
void ls_aborted_list_put(ls_aborted_list_t *l, const ls_aborted_t *a);
/* Drops the entries wholly below log_start (their data is trimmed). */
void ls_aborted_list_trim(ls_aborted_list_t *l, int64_t log_start);
/* Entries overlapping [a, b], in first-offset order, appended to out
 * (ls_aborted_list_t used as a growable array). Returns how many. */
int ls_aborted_list_range(const ls_aborted_list_t *l, int64_t a, int64_t b,
                          int64_t max_aborted_span, ls_aborted_list_t *out);
void ls_aborted_list_free(ls_aborted_list_t *l);
/* The aborted transaction of producer pid whose marker is at
 * marker_offset, or NULL (a commit marker has none). */
const ls_aborted_t *ls_aborted_list_of_marker(const ls_aborted_list_t *l, int64_t pid,
                                              int64_t marker_offset);
/* Removes the entry with that first offset, if there is one. */
void ls_aborted_list_remove(ls_aborted_list_t *l, int64_t first_offset);
/* The first offset an aborted-record key names: 0, or -1 if key is not one. */
int ls_log_abort_key_first(const char *key, size_t klen, int64_t *first_offset);
/* Whether a transactional batch of producer pid at offset lies in one of
 * l's aborted transactions (first_offset <= offset < marker_offset): its
 * records were aborted. Only batches of transactions that ended may be
 * asked about (below the log's LSO). */
bool ls_aborted_list_find(const ls_aborted_list_t *l, int64_t pid, int64_t offset);

/* Blocking (worker threads; log_aborted.c): appends to out the stored
 * aborted transactions of log_id overlapping [from, to], max_aborted_span
 * being the log head's. For workers, which may not use the loop's copy (the
 * compaction pass). Read the head first and ask only about offsets below
 * its LSO: the record of every transaction that ended there was committed
 * with the head. LS_ECORRUPT when a record in range does not decode (the
 * caller must not treat its data as committed). */
ls_status ls_log_aborted_read(ls_meta_t *meta, int64_t log_id, int64_t from, int64_t to,
                              int64_t max_aborted_span, ls_aborted_list_t *out);

#endif
