/* Transaction coordinator, store I/O: runs the pure steps of txn.h over the
 * records in the metadata store, and finishes decided transactions.
 *
 * Design note (docs/ARCHITECTURE.md, "Transactions"):
 *  - one record per transactional id, /ls/txn/state/<tid escaped>. Every
 *    transition reads it with its mod_rev, runs a pure step and writes the
 *    result with a compare on that mod_rev (create-only for a new id,
 *    compare-and-delete on expiry). The record's revision is the fence: a
 *    broker never writes from a stale copy, whether it was paused, cut off or
 *    just raced another; a lost compare rereads and reruns the step (at most
 *    LS_TXN_CAS_TRIES times, then CONCURRENT_TRANSACTIONS, retriable). Nothing
 *    is cached here: callers may cache records as hints only.
 *  - finishing a decision (Prepare*) writes every participant's marker through
 *    the embedder's callbacks, then completes the record. Markers are
 *    idempotent per (producer id, txn_seq), so finishing is repeated safely
 *    from the start by any broker, any number of times: that is how a broker
 *    takes over a decision another one left half finished (the sweep, or any
 *    request that meets the decided record). A failed marker leaves the record
 *    decided; the next finish retries all of it.
 *  - only get, scan and txn with mod_rev compares: the same on SQLite, etcd and
 *    the in-memory store.
 * Threads: every call blocks on the store; call from worker threads, never
 * from the loop. The store object is immutable after creation (thread-safe). */
#ifndef LS_TXN_STORE_H
#define LS_TXN_STORE_H
#include <stdbool.h>
#include <stdint.h>

#include "base/status.h"
#include "meta/meta.h"
#include "meta/meta_keys.h" /* LS_KEY_TXN_STATE: the records' prefix */
#include "txn/txn.h"

#define LS_TXN_CAS_TRIES 8

/* Markers of a decided record (rec: its state says commit or abort, its
 * txn_seq and marker pair name the transaction). Blocking; must be
 * idempotent: a participant that already has this marker does nothing and
 * answers LS_OK. log_markers writes the marker of every partition of rec
 * (all at once, so one decision costs one flush, not one per partition)
 * and fails if any of them failed. */
typedef struct ls_txn_markers {
    ls_status (*log_markers)(void *arg, const ls_txn_record_t *rec);
    ls_status (*group_marker)(void *arg, const ls_txn_record_t *rec, const char *group);
    void *arg;
} ls_txn_markers_t;

typedef struct ls_txn_store_opts {
    ls_meta_t *meta;
    ls_txn_config_t cfg;
    ls_txn_markers_t markers;
    /* A new producer id, unique across brokers (the idempotent producers' counter). */
    ls_status (*new_producer_id)(void *arg, int64_t *id);
    void *pid_arg;
    int64_t (*now_ms)(void); /* wall clock; NULL = ls_clock_wall_ms (tests pass a fake) */
} ls_txn_store_opts_t;

typedef struct ls_txn_store ls_txn_store_t;
ls_txn_store_t *ls_txn_store_new(const ls_txn_store_opts_t *o);
void ls_txn_store_free(ls_txn_store_t *s); /* NULL: no-op */

char *ls_txn_key(const char *tid); /* ls_free */

/* The record of tid and its mod_rev; LS_ENOTFOUND when absent. */
ls_status ls_txn_load(ls_txn_store_t *s, const char *tid, ls_txn_record_t *out, int64_t *rev);

/* One step over the stored record (cur NULL: absent). fresh_producer_id is
 * an allocated id once the step asked for one (LS_TXERR_NEED_PRODUCER_ID). */
typedef ls_txn_result_t (*ls_txn_step_fn)(void *arg, const ls_txn_record_t *cur,
                                          int64_t fresh_producer_id, int64_t now_ms,
                                          ls_txn_record_t *next);

/* Runs step until its write wins. LS_OK with *res (res->err is the
 * protocol outcome; LS_TXERR_CONCURRENT_TRANSACTIONS after LS_TXN_CAS_TRIES
 * lost compares); a store failure is its status (callers answer
 * COORDINATOR_NOT_AVAILABLE). It never finishes a decision: when
 * res->finish is set the caller answers, then calls ls_txn_finish. */
ls_status ls_txn_run(ls_txn_store_t *s, const char *tid, ls_txn_step_fn step, void *arg,
                     ls_txn_result_t *res);

/* The steps of txn.h as runs. */
ls_status ls_txn_run_init(ls_txn_store_t *s, const char *tid, int32_t timeout_ms,
                          int64_t producer_id, int16_t producer_epoch, ls_txn_result_t *res);
ls_status ls_txn_run_add(ls_txn_store_t *s, const char *tid, int64_t producer_id, int16_t epoch,
                         const ls_txn_partition_t *parts, int nparts, const char *const *groups,
                         int ngroups, ls_txn_result_t *res);
ls_status ls_txn_run_end(ls_txn_store_t *s, const char *tid, int64_t producer_id, int16_t epoch,
                         bool commit, bool bump, ls_txn_result_t *res);

/* Finishes tid's decision if it has one: every marker, then Complete*.
 * LS_OK also when there is nothing to finish (absent, not decided, or
 * finished by another broker meanwhile). */
ls_status ls_txn_finish(ls_txn_store_t *s, const char *tid);

/* Visits every stored record in key order, a page at a time (so memory
 * stays bounded however many ids exist): visit(arg, rec) with rec borrowed
 * for the call. A record that does not decode is skipped and counted in
 * *corrupt (may be NULL). A store failure ends the scan and is returned;
 * the records of earlier pages have been visited. visit may write the
 * store (the sweep does): pages are read before they are visited. */
typedef void (*ls_txn_visit_fn)(void *arg, const ls_txn_record_t *rec);
ls_status ls_txn_list(ls_txn_store_t *s, ls_txn_visit_fn visit, void *arg, int *corrupt);

typedef struct ls_txn_sweep_stats {
    int visited;  /* records of ids this broker coordinates */
    int aborted;  /* timed-out transactions decided abort */
    int finished; /* decisions finished */
    int expired;  /* idle ids removed */
    int failed;   /* records left for the next sweep (store or marker failure, corrupt) */
} ls_txn_sweep_stats_t;

/* ls_txn_list with, for the ids mine(arg, tid) accepts (the rendezvous
 * choice), ls_txn_expire run and decisions finished. */
ls_status ls_txn_sweep(ls_txn_store_t *s, bool (*mine)(void *arg, const char *tid), void *arg,
                       ls_txn_sweep_stats_t *st);

#endif
