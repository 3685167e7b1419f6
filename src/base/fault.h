/* Fault injection core: one vocabulary and one decision procedure for every
 * fault-injecting store wrapper (objstore/objstore_faulty.c,
 * meta/meta_faulty.c), so a test writes the same parameters for both.
 *
 * A wrapper names its operations (e.g. put, get, head, del, list; or get,
 * scan, txn) and which of them are writes whose acknowledgement can be lost.
 * Parameters ("k=v&k=v"; rates are probabilities 0..1):
 *   error_rate=R           every counted call fails before reaching the store
 *   <op>_error_rate=R      per-operation override of error_rate
 *   lost_ack_rate=R        a write reaches the store, then reports failure
 *                          (the answer was lost: the write did happen)
 *   error=eagain|eio       status of injected failures (default: the
 *                          wrapper's, see ls_fault_init)
 *   fail_nth=N             the N-th counted call (1-based) fails
 *   fail_every=N           every N-th counted call fails
 *   ops=a,b,...            operations faults apply to and calls are counted
 *                          for (default: all)
 *   latency_p50_ms=X, latency_p99_ms=Y
 *                          added delay before each counted call, lognormal
 *                          with that median and 99th percentile (no p99:
 *                          fixed X)
 *   stall_rate=R, stall_ms=N  sometimes sleep N ms first (a hung request)
 *   down=true|false        every counted call fails (store unreachable)
 *   seed=N                 RNG seed (default: time and pid)
 *
 * State machine: none beyond the settings (replaced whole by
 * ls_fault_configure, under the mutex) and monotonic counters. Thread-safe:
 * ls_fault_before snapshots the settings under the mutex and sleeps outside
 * it. */
#ifndef LS_BASE_FAULT_H
#define LS_BASE_FAULT_H
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/status.h"

#define LS_FAULT_MAX_OPS 8

typedef struct ls_fault_settings {
    double error_rate[LS_FAULT_MAX_OPS];
    double lost_ack_rate;
    ls_status error;
    uint64_t fail_nth, fail_every;
    unsigned ops; /* bit per operation: counted and faulted */
    double p50_ms, p99_ms;
    double stall_rate;
    int64_t stall_ms;
    bool down;
} ls_fault_settings_t;

typedef struct ls_fault_stats {
    uint64_t calls;     /* counted calls */
    uint64_t injected;  /* failures returned without reaching the store */
    uint64_t lost_acks; /* performed, then reported failed */
    uint64_t stalls;
} ls_fault_stats_t;

typedef struct ls_fault {
    pthread_mutex_t mu;
    const char *what; /* names the wrapper in messages */
    const char *const *op_names;
    int nops;
    unsigned write_ops; /* operations whose acknowledgement can be lost */
    ls_fault_settings_t set;
    uint64_t rng;
    ls_fault_stats_t stats;
} ls_fault_t;

/* No faults, every operation counted; injected failures are `error`. */
void ls_fault_init(ls_fault_t *f, const char *what, const char *const *op_names, int nops,
                   unsigned write_ops, ls_status error);
void ls_fault_destroy(ls_fault_t *f);
/* Applies "k=v&..." on top of the current settings, all or nothing. Keys
 * this vocabulary does not know go to rest ("k=v&...", for an inner URL)
 * when rest is not NULL, else they are an error. LS_OK, or LS_EINVAL with
 * err. */
ls_status ls_fault_configure(ls_fault_t *f, const char *params, ls_buf_t *rest, char *err,
                             size_t errlen);

typedef struct ls_fault_verdict {
    bool fail;       /* fail now, without calling the store */
    bool lose_ack;   /* call the store, then report failure */
    ls_status error; /* the status to report */
} ls_fault_verdict_t;
/* Before a call of operation op: counts it, sleeps the injected latency and
 * stall, decides. A failing verdict has written "injected fault: ..." into
 * errbuf (cap bytes) when errbuf is not NULL. */
ls_fault_verdict_t ls_fault_before(ls_fault_t *f, int op, char *errbuf, size_t cap);
void ls_fault_get_stats(ls_fault_t *f, ls_fault_stats_t *out);
#endif
