/* Fault-injecting ls_meta wrapper, for reliability tests.
 *
 * URL: "faulty+<inner URL>[?param=value&...]", e.g.
 *   faulty+sqlite:///tmp/m.db?txn_error_rate=0.1&latency_ms=5
 * Parameters (optional; rates are probabilities 0..1):
 *   error_rate=R        any call fails (LS_EIO) before reaching the store
 *   txn_error_rate=R    txn calls fail before reaching the store
 *   lost_ack_rate=R     a txn is applied, then reported as failed (LS_EIO):
 *                       the answer, not the write, was lost
 *   fail_nth=N          the N-th txn (1-based) fails before reaching the store
 *   latency_ms=N        every call sleeps N ms first
 *   down=true|false     every call fails (store unreachable)
 *   seed=N              RNG seed
 * Leases and watches pass through untouched. Thread-safe. */
#ifndef LS_META_FAULTY_H
#define LS_META_FAULTY_H
#include <stdint.h>

#include "meta/meta.h"

ls_meta_t *ls_meta_faulty_open(const char *url, char *err, int errlen);
/* Changes parameters at run time ("txn_error_rate=0&down=false"). */
int ls_meta_faulty_set(ls_meta_t *m, const char *params, char *err, int errlen);
typedef struct ls_meta_faulty_stats {
    uint64_t txns, injected, lost_acks;
} ls_meta_faulty_stats_t;
void ls_meta_faulty_stats(ls_meta_t *m, ls_meta_faulty_stats_t *out);
#endif
