/* Transactional offsets of consumer groups (KIP-447): TxnOffsetCommit stores
 * offsets *pending*; the transaction's group marker later commits them
 * (they become the group's committed offsets) or drops them.
 *
 * Keyspace (docs/FORMATS.md, "Consumer groups"):
 *   /ls/group/pending/<gid>/<producer id>/<topic>/<partition %010d>
 * value: u8 version=1, i64 txn_seq, then the committed-offset record
 * (version 1) that a commit marker installs under /ls/group/offsets/ as is.
 *
 * Design note.
 *  - Writers. The group's coordinator writes pending offsets (TxnOffsetCommit,
 *    group_service.c), under the group's owner fence like every group write.
 *    The marker runs wherever the transaction is completed — any broker,
 *    usually not the group's coordinator — so it holds no fence; instead each
 *    of its txns compares the revision of every pending key it settles (and
 *    of the committed key it replaces). DeleteGroups and retention delete a
 *    group's pending keys with the group, so a marker racing a deletion fails
 *    its compare, rereads, finds nothing: a marker never brings back offsets
 *    of a deleted group (Kafka ignores markers for a Dead group too).
 *  - Which entries a marker of (producer id, txn_seq) settles: those of its
 *    producer id with that txn_seq, by the decision (commit: moved, abort:
 *    deleted); with a lower txn_seq, entries a TxnOffsetCommit wrote after
 *    its own transaction was decided (TxnOffsetCommit rechecks after writing
 *    and settles them itself; this is the backstop): deleted; with a higher
 *    txn_seq: a later transaction of the same producer, left alone — the
 *    marker is a stale repeat from a broker that was paused meanwhile.
 *    Known gap: a TxnOffsetCommit whose recheck cannot read the record (a
 *    store failure) while its transaction is being decided leaves its keys
 *    to the producer's next marker for the group; RequireStable fetches of
 *    those partitions wait until then.
 *  - Kafka's order rule: a pending offset replaces the committed one only if
 *    that one was committed before the TxnOffsetCommit (a plain OffsetCommit
 *    after it wins). Store revisions are that order: the committed key's
 *    mod_rev against the pending key's.
 *  - Idempotent and crash-safe: each txn moves and deletes its entries
 *    together (at most the store's op limit: 4 compares + ops per entry), so
 *    a repeat settles what is left; nothing pending is a no-op.
 *  - The coordinator's copy in memory learns of a marker by rereading the
 *    store (ls_group_service_refresh), which it does for groups that may
 *    hold pending offsets (ls_group_txn_pending).
 * Threads: the marker blocks on the store (worker or transaction threads,
 * never the loop); the rest is pure. */
#ifndef LS_GROUP_TXN_H
#define LS_GROUP_TXN_H
#include <stdbool.h>
#include <stdint.h>

#include "base/status.h"
#include "group/group.h"
#include "meta/meta.h"

/* Keys (heap strings): all of a group's pending offsets; one of them. */
char *ls_group_key_pending_prefix(const char *group_id);
char *ls_group_key_pending(const char *group_id, int64_t producer_id, const char *topic,
                           int32_t partition);
/* The part of a pending key after the group's prefix: "<producer id>/<topic>/<partition>".
 * *topic is a heap copy. False when malformed. */
bool ls_group_pending_key_parse(const char *rest, int64_t *producer_id, char **topic,
                                int32_t *partition);

uint8_t *ls_group_pending_encode(int64_t txn_seq, const ls_group_offset_t *o, size_t *len);
/* *rec / *rlen: the committed-offset record inside p (a view). LS_ECORRUPT on bad input. */
ls_status ls_group_pending_decode(const uint8_t *p, size_t len, int64_t *txn_seq,
                                  const uint8_t **rec, size_t *rlen);

/* The group marker of transaction txn_seq of producer_id (see above): for a
 * decided transaction record, its marker_producer_id and txn_seq, commit
 * when PrepareCommit. Any thread but the loop; any broker, coordinator of
 * the group or not. Blocking; LS_OK also when nothing is pending. A store failure is its status
 * (the transaction's completion retries); LS_ECONFLICT after repeated lost
 * compares (the group changing under it). */
ls_status ls_group_txn_marker(ls_meta_t *meta, const char *group_id, int64_t producer_id,
                              int64_t txn_seq, bool commit);
#endif
