/* Fault-injecting ls_objstore wrapper, for tests and benchmarks.
 *
 * URL: "faulty+<inner URL>[?param=value&...]" — e.g.
 *   faulty+file:///tmp/objs?put_error_rate=0.1&latency_p50_ms=30&latency_p99_ms=200
 *   faulty+s3://bucket/pfx?endpoint=http://127.0.0.1:7480&error_rate=0.05
 * Parameters this wrapper does not know are handed to the inner URL.
 *
 * Parameters (all optional; rates are probabilities 0..1):
 *   error_rate=R           every call fails before reaching the store
 *   put_error_rate, get_error_rate, head_error_rate, del_error_rate,
 *   list_error_rate=R      per-operation override of error_rate
 *   lost_ack_rate=R        put/del reach the store, then report failure
 *                          (the answer was lost: the write did happen)
 *   error=eagain|eio       status of injected failures (default eagain)
 *   fail_nth=N             the N-th call counted (1-based) fails
 *   fail_every=N           every N-th call counted fails
 *   ops=put,get,...        operations faults apply to and calls are counted
 *                          for (default: all of put,get,head,del,list)
 *   latency_p50_ms=X, latency_p99_ms=Y
 *                          added delay, lognormal with that median and 99th
 *                          percentile (p99 omitted: fixed X)
 *   stall_rate=R, stall_ms=N  sometimes sleep N ms first (a hung request)
 *   down=true|false        every call fails (the store is unreachable)
 *   seed=N                 RNG seed (default: time and pid)
 * Thread-safe: settings are read under a mutex at the start of each call. */
#ifndef LS_OBJSTORE_FAULTY_H
#define LS_OBJSTORE_FAULTY_H
#include <stdint.h>

#include "objstore/objstore.h"

typedef struct ls_objstore_faulty_stats {
    uint64_t calls;          /* calls counted (ops filter) */
    uint64_t injected;       /* failures returned without reaching the store */
    uint64_t lost_acks;      /* performed, then reported failed */
    uint64_t stalls;
} ls_objstore_faulty_stats_t;

/* Changes parameters at run time ("error_rate=0&down=false"); the names are
 * those of the URL. Returns 0, or -1 with a message. */
int ls_objstore_faulty_set(ls_objstore_t *os, const char *params, char *err, int errlen);
void ls_objstore_faulty_stats(ls_objstore_t *os, ls_objstore_faulty_stats_t *out);
/* 1 if os is a faulty wrapper. */
int ls_objstore_is_faulty(const ls_objstore_t *os);
#endif
