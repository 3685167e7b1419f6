/* Fault-injecting ls_objstore wrapper, for tests and benchmarks.
 *
 * URL: "faulty+<inner URL>[?param=value&...]" — e.g.
 *   faulty+file:///tmp/objs?put_error_rate=0.1&latency_p50_ms=30&latency_p99_ms=200
 *   faulty+s3://bucket/pfx?endpoint=http://127.0.0.1:7480&error_rate=0.05
 * Parameters this wrapper does not know are handed to the inner URL.
 *
 * Parameters: the fault vocabulary of base/fault.h, with the operations
 * put, get, head, del, list (put and del can lose their acknowledgement);
 * injected failures are LS_EAGAIN unless error=eio.
 * Thread-safe: settings are read under a mutex at the start of each call. */
#ifndef LS_OBJSTORE_FAULTY_H
#define LS_OBJSTORE_FAULTY_H
#include <stdint.h>

#include "base/fault.h"
#include "objstore/objstore.h"

/* Changes parameters at run time ("error_rate=0&down=false"); the names are
 * those of the URL. LS_OK, or LS_EINVAL with a message. */
ls_status ls_objstore_faulty_set(ls_objstore_t *os, const char *params, char *err, size_t errlen);
void ls_objstore_faulty_stats(ls_objstore_t *os, ls_fault_stats_t *out);
/* 1 if os is a faulty wrapper. */
int ls_objstore_is_faulty(const ls_objstore_t *os);
#endif
