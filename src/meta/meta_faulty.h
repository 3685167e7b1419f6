/* Fault-injecting ls_meta wrapper, for reliability tests.
 *
 * URL: "faulty+<inner URL>[?param=value&...]", e.g.
 *   faulty+sqlite:///tmp/m.db?txn_error_rate=0.1&latency_p50_ms=5
 * Parameters: the fault vocabulary of base/fault.h, with the operations
 * get, scan, txn (a txn can lose its acknowledgement: applied, then
 * reported failed); injected failures are LS_EIO unless error=eagain.
 * Leases and watches pass through untouched. Thread-safe. */
#ifndef LS_META_FAULTY_H
#define LS_META_FAULTY_H
#include <stdint.h>

#include "base/fault.h"
#include "meta/meta.h"

ls_meta_t *ls_meta_faulty_open(const char *url, char *err, size_t errlen);
/* Changes parameters at run time ("txn_error_rate=0&down=false"). */
ls_status ls_meta_faulty_set(ls_meta_t *m, const char *params, char *err, size_t errlen);
void ls_meta_faulty_stats(ls_meta_t *m, ls_fault_stats_t *out);
#endif
