/* GET /metrics on the broker's HTTP listener, and the metrics computed at
 * scrape time (base/metrics.h has the registry; docs/OPERATIONS.md
 * "Metrics" lists every name).
 *
 * At each scrape, on the HTTP server's thread (never the loop), collectors
 * read what is not counted where it happens: the process (resident and
 * virtual memory, open descriptors), the event loop's lag
 * (base/loop_lag.h), and the lag of every consumer group per topic, from
 * the metadata store: its committed offsets (group/group_service.h) against
 * each partition's log end (its head), so every broker reports the same.
 * The tables appear there as the read-only groups
 * lakestream.table.<namespace>.<table> (lake/table_plan.h statuses), as
 * they do to Kafka clients. Labels are group and topic, never partition, so
 * the series stay bounded by groups x topics they consume.
 *
 * Threads: start/stop on the loop thread before serving / after the HTTP
 * server stopped; the handler and collectors on HTTP threads. */
#ifndef LS_BROKER_METRICS_H
#define LS_BROKER_METRICS_H
#include "http/http_server.h"
#include "meta/meta.h"
#include "stream/catalog.h"

typedef struct ls_broker_metrics ls_broker_metrics_t;
ls_broker_metrics_t *ls_broker_metrics_start(ls_meta_t *meta, ls_catalog_t *catalog);
void ls_broker_metrics_stop(ls_broker_metrics_t *m);
/* The /metrics mount's handler (arg: the ls_broker_metrics_t). */
void ls_broker_metrics_handle(void *arg, const ls_http_request_t *req, ls_http_response_t *resp);
#endif
