/* The transaction coordinator of a broker: the store-level coordinator
 * (txn/txn_store.h) wired to this broker's log storage, consumer groups and
 * membership (docs/ARCHITECTURE.md, "Transactions").
 *
 * Design note:
 *  - Requests (InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn)
 *    run their compare-and-set steps on the broker's worker threads through
 *    ls_txcoord_store(); they only touch the metadata store.
 *  - Finishing a decision writes markers, and a log marker is an append to
 *    log storage, which lives on the loop thread and whose flushes run on the
 *    same worker pool. A worker blocked on a marker could therefore starve
 *    the flush it waits for, so decisions are finished by threads of our
 *    own: four take tids from a queue (ls_txcoord_finish, from any thread;
 *    a tid already queued is not queued twice, and one being finished is
 *    left queued until its finisher is done, so a log gets each marker once;
 *    the sweep finishing the same tid at that moment would only add a
 *    marker that changes nothing, as markers are idempotent), so the markers of
 *    concurrent decisions share flushes; the first ("ls-txn") also, every
 *    transaction.abort.timed.out.transaction.cleanup.interval.ms or when
 *    kicked (membership changed), sweeps the ids this broker coordinates
 *    (ls_txn_sweep: time-outs, decisions a dead broker left, expiry).
 *  - Log markers of one decision are handed to the loop together (a
 *    uv_async_t), appended as control batches through the WAL commit (all
 *    in the same flush when they fit) and acknowledged together; the thread
 *    waits on a condition variable. A log that no longer exists (topic
 *    deleted) needs no marker. A store or flush failure leaves the decision
 *    in place: the next sweep finishes it (markers are idempotent).
 *  - Group markers (pending transactional offsets become committed or are
 *    dropped) are store transactions made by the group module directly
 *    from this thread.
 *  - A finish that fails retriably (a lost head compare, a failed flush) is
 *    queued again after 100 ms x its attempts, up to 8 times; after that, or
 *    on any other failure, the sweep retries it.
 *  - Stopping: ls_txcoord_stop (a worker, never the loop) marks the
 *    coordinator closing, which wakes threads waiting on the loop (their
 *    markers are abandoned: the loop frees them when their appends end) and
 *    cuts a sweep short, and joins them; requests still running meanwhile
 *    find no new finish queued. The coordinator (and its store, which
 *    requests read) lives until ls_txcoord_free, called once the loop
 *    ran dry and every handle of it was closed (log storage has flushed
 *    every marker by then).
 * Threads: ls_txcoord_finish and ls_txcoord_kick from any thread; start,
 * stop and free as said. */
#ifndef LS_TXN_COORD_H
#define LS_TXN_COORD_H
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "log/logstore.h"
#include "meta/meta.h"
#include "txn/txn_store.h"

typedef struct ls_txcoord ls_txcoord_t;

typedef struct ls_txcoord_opts {
    uv_loop_t *loop;
    ls_meta_t *meta;
    ls_logstore_t *logs;
    ls_txn_config_t cfg;
    int64_t sweep_interval_ms;
    /* Does this broker coordinate tid now? (any thread) */
    bool (*mine)(void *arg, const char *tid);
    /* A new producer id, unique across brokers (blocking). */
    ls_status (*new_producer_id)(void *arg, int64_t *id);
    /* Settles a group's pending transactional offsets (blocking). */
    ls_status (*group_marker)(void *arg, const char *group, int64_t producer_id, int64_t txn_seq,
                              bool commit);
    void *arg;
} ls_txcoord_opts_t;

ls_txcoord_t *ls_txcoord_start(const ls_txcoord_opts_t *o, char *err, size_t errlen);
ls_txn_store_t *ls_txcoord_store(ls_txcoord_t *c);
void ls_txcoord_finish(ls_txcoord_t *c, const char *tid);
void ls_txcoord_kick(ls_txcoord_t *c);
void ls_txcoord_stop(ls_txcoord_t *c);
void ls_txcoord_free(ls_txcoord_t *c); /* NULL: no-op */

#endif
