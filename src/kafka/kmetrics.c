/* Families of kmetrics.h. Per-topic series are looked up per partition
 * batch (not per record); see base/metrics.h for the lock-free lookup. */
#include "kafka/kmetrics.h"

#include "base/buf.h"
#include "base/clock.h"
#include "base/metrics.h"
#include "kafka/api.h"
#include "records/records.h"

static LS_METRIC_GAUGE(connections, "lakestream_kafka_connections",
                       "Open Kafka client connections of this broker.", NULL);
static LS_METRIC_COUNTER(conns_opened, "lakestream_kafka_connections_opened",
                         "Kafka client connections accepted.", NULL);
static LS_METRIC_HISTOGRAM(req_seconds, "lakestream_kafka_request_duration_seconds",
                           "Kafka requests by API: time from dispatch to the response queued "
                           "(its _count is the number of requests).",
                           ls_metrics_latency_bounds, "api");
static LS_METRIC_COUNTER(produced_records, "lakestream_produce_records",
                         "Records appended by Produce requests, per topic.", "topic");
static LS_METRIC_COUNTER(produced_bytes, "lakestream_produce_bytes",
                         "Bytes of record batches appended by Produce requests, per topic.",
                         "topic");
static LS_METRIC_COUNTER(produced_batches, "lakestream_produce_batches",
                         "Record batches appended by Produce requests, per topic.", "topic");
static LS_METRIC_COUNTER(fetched_records, "lakestream_fetch_records",
                         "Records returned by Fetch requests, per topic.", "topic");
static LS_METRIC_COUNTER(fetched_bytes, "lakestream_fetch_bytes",
                         "Bytes of record batches returned by Fetch requests, per topic.", "topic");

void ls_kmetrics_connection(int delta)
{
    ls_metric_gauge_add(ls_metrics_series0(&connections), delta);
    if (delta > 0) ls_metric_add(ls_metrics_series0(&conns_opened), (uint64_t)delta);
}

void ls_kmetrics_request_done(int16_t api_key, int64_t start_us)
{
    ls_metric_observe(ls_metrics_series1(&req_seconds, ls_kafka_api_name(api_key)),
                      (double)(ls_clock_mono_us() - start_us) / 1e6);
}

ls_kmetrics_topic_t ls_kmetrics_topic(const char *topic)
{
    return (ls_kmetrics_topic_t){.records = ls_metrics_series1(&produced_records, topic),
                                 .bytes = ls_metrics_series1(&produced_bytes, topic),
                                 .batches = ls_metrics_series1(&produced_batches, topic)};
}

void ls_kmetrics_produced(const ls_kmetrics_topic_t *t, uint64_t records, uint64_t bytes)
{
    ls_metric_add(t->records, records);
    ls_metric_add(t->bytes, bytes);
    ls_metric_add(t->batches, 1);
}

ls_kmetrics_fetch_topic_t ls_kmetrics_fetch_topic(const char *topic)
{
    return (ls_kmetrics_fetch_topic_t){.records = ls_metrics_series1(&fetched_records, topic),
                                       .bytes = ls_metrics_series1(&fetched_bytes, topic)};
}

void ls_kmetrics_fetched(const ls_kmetrics_fetch_topic_t *t, int64_t offset, const uint8_t *p,
                         size_t len)
{
    /* the log holds whole RecordBatch v2 batches (records/records.h) */
    uint64_t records = 0;
    for (size_t pos = 0; pos + LS_RB_HEADER_SIZE <= len;) {
        const uint8_t *b = p + pos;
        int64_t base = (int64_t)ls_be64_get(b + LS_RB_OFF_BASE_OFFSET);
        int64_t last = base + (int32_t)ls_be32_get(b + LS_RB_OFF_LAST_OFFSET_DELTA);
        int64_t count = (int32_t)ls_be32_get(b + LS_RB_OFF_RECORD_COUNT);
        if (base >= offset)
            records += (uint64_t)count;
        else if (last >= offset)
            records += (uint64_t)(last - offset + 1 < count ? last - offset + 1 : count);
        pos += LS_RB_OFF_LEADER_EPOCH + ls_be32_get(b + LS_RB_OFF_LENGTH);
    }
    ls_metric_add(t->records, records);
    ls_metric_add(t->bytes, len);
}
