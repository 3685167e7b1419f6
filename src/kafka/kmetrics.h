/* The Kafka protocol's metrics (base/metrics.h): connections, requests and
 * their latency per API (from the frame's dispatch to its response being
 * queued for the writer), and produce/fetch traffic per topic. Counted on
 * the loop thread with atomic adds (no lock); names in docs/OPERATIONS.md
 * "Metrics". */
#ifndef LS_KMETRICS_H
#define LS_KMETRICS_H
#include <stddef.h>
#include <stdint.h>

void ls_kmetrics_connection(int delta);
/* A request of api_key finished (answered, or no answer owed) start_us
 * (ls_clock_mono_us) after its dispatch. */
void ls_kmetrics_request_done(int16_t api_key, int64_t start_us);
/* A topic's produce series, looked up once per partition of a request. */
struct ls_metric;
typedef struct ls_kmetrics_topic {
    struct ls_metric *records, *bytes, *batches;
} ls_kmetrics_topic_t;
ls_kmetrics_topic_t ls_kmetrics_topic(const char *topic);
/* A batch appended (acknowledged by the log). */
void ls_kmetrics_produced(const ls_kmetrics_topic_t *t, uint64_t records, uint64_t bytes);
/* A topic's fetch series, looked up once per partition of a request. */
typedef struct ls_kmetrics_fetch_topic {
    struct ls_metric *records, *bytes;
} ls_kmetrics_fetch_topic_t;
ls_kmetrics_fetch_topic_t ls_kmetrics_fetch_topic(const char *topic);
/* Record batches returned by a fetch from offset on: the bytes sent, and
 * the records at or past offset they hold (a client skips those before). */
void ls_kmetrics_fetched(const ls_kmetrics_fetch_topic_t *t, int64_t offset, const uint8_t *p,
                         size_t len);
#endif
