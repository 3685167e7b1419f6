/* The client-telemetry handlers (kafka/h_telemetry.c, KIP-714):
 * GetTelemetrySubscriptions and PushTelemetry through the handler harness
 * (kafka_fake.h) over a real receiver and subscription store in memory.
 * Each refusal answers Kafka's code for it: a get or push inside the push
 * interval is throttled, a reserved instance id or a push after the
 * terminating one is an invalid request, then unknown subscription ids,
 * unknown codecs, payloads past the limit and bytes that are not OTLP. One
 * client instance per test: the receiver is shared by the binary. */
#include "kafka/msg.h"
#include "kafka_fake.h"
#include "unit.h"

static kf_env_t E;

typedef struct {
    int16_t code;
    ls_uuid_t id;
    int32_t sub;
    int32_t interval_ms;
    int32_t max_bytes;
    bool delta;
    int ncodecs;
    int8_t codecs[8];
    int nmetrics;
    char metric0[128];
} sub_t;

/* GetTelemetrySubscriptions v0 for instance id (zero: a new instance). */
static sub_t get_sub(const ls_uuid_t *id)
{
    sub_t s;
    memset(&s, 0, sizeof s);
    s.code = -1000;
    ls_kafka_GetTelemetrySubscriptionsRequest m = {.ClientInstanceId = *id};
    ls_arena_t *a = ls_arena_new();
    ls_kafka_GetTelemetrySubscriptionsResponse r;
    if (kf_call(&E, 71, 0, &m, &r, a) == 0) {
        s.code = r.ErrorCode;
        s.id = r.ClientInstanceId;
        s.sub = r.SubscriptionId;
        s.interval_ms = r.PushIntervalMs;
        s.max_bytes = r.TelemetryMaxBytes;
        s.delta = r.DeltaTemporality;
        s.ncodecs = r.NumAcceptedCompressionTypes;
        for (int i = 0; i < r.NumAcceptedCompressionTypes && i < 8; i++)
            s.codecs[i] = r.AcceptedCompressionTypes[i];
        s.nmetrics = r.NumRequestedMetrics;
        if (r.NumRequestedMetrics > 0)
            snprintf(s.metric0, sizeof s.metric0, "%.*s", (int)r.RequestedMetrics[0].len,
                     r.RequestedMetrics[0].ptr);
    }
    ls_arena_free(a);
    return s;
}

/* A new client instance: its subscription (code checked by the caller). */
static sub_t new_instance(void)
{
    ls_uuid_t zero;
    memset(&zero, 0, sizeof zero);
    return get_sub(&zero);
}

/* PushTelemetry v0: the code answered. */
static int push(const ls_uuid_t *id, int32_t sub, bool terminating, int8_t codec,
                const uint8_t *metrics, int32_t len)
{
    ls_kafka_PushTelemetryRequest m = {.ClientInstanceId = *id,
                                       .SubscriptionId = sub,
                                       .Terminating = terminating,
                                       .CompressionType = codec,
                                       .Metrics = {metrics, len}};
    ls_arena_t *a = ls_arena_new();
    ls_kafka_PushTelemetryResponse r;
    int code = kf_call(&E, 72, 0, &m, &r, a) == 0 ? r.ErrorCode : -1000;
    ls_arena_free(a);
    return code;
}

TEST(a_new_instance_gets_kafkas_terms)
{
    sub_t s = new_instance();
    CHECK_EQ_INT(s.code, LS_KERR_NONE);
    CHECK(!ls_uuid_is_zero(&s.id));
    CHECK_EQ_INT(s.max_bytes, 1024 * 1024);
    CHECK(s.delta);
    CHECK_EQ_INT(s.interval_ms, 300000); /* no subscription matches: the default */
    CHECK_EQ_INT(s.nmetrics, 0);
    const int8_t want[] = {4, 3, 1, 2}; /* zstd, lz4, gzip, snappy */
    CHECK_EQ_INT(s.ncodecs, 4);
    CHECK(memcmp(s.codecs, want, sizeof want) == 0);
    sub_t again = get_sub(&s.id); /* the same instance, inside its push interval */
    CHECK_EQ_INT(again.code, LS_KERR_THROTTLING_QUOTA_EXCEEDED);
}

TEST(reserved_instance_ids_are_invalid)
{
    ls_uuid_t id;
    memset(&id, 0, sizeof id);
    CHECK_EQ_INT(push(&id, 0, false, 0, NULL, 0), LS_KERR_INVALID_REQUEST);
    id.b[15] = 1;
    CHECK_EQ_INT(push(&id, 0, false, 0, NULL, 0), LS_KERR_INVALID_REQUEST);
}

TEST(push_refusals_in_kafkas_order)
{
    sub_t s = new_instance();
    CHECK_EQ_INT(s.code, LS_KERR_NONE);
    CHECK_EQ_INT(push(&s.id, s.sub + 1, false, 0, NULL, 0), LS_KERR_UNKNOWN_SUBSCRIPTION_ID);
    /* a client corrects an unknown id or codec by asking again: not throttled */
    CHECK_EQ_INT(get_sub(&s.id).code, LS_KERR_NONE);
    CHECK_EQ_INT(push(&s.id, s.sub, false, 9, NULL, 0), LS_KERR_UNSUPPORTED_COMPRESSION_TYPE);
    CHECK_EQ_INT(get_sub(&s.id).code, LS_KERR_NONE);
    size_t big = 1024 * 1024 + 1;
    uint8_t *payload = calloc(1, big);
    CHECK_EQ_INT(push(&s.id, s.sub, false, 0, payload, (int32_t)big), LS_KERR_TELEMETRY_TOO_LARGE);
    free(payload);
    /* that push took the interval: the next, with no get between, waits */
    CHECK_EQ_INT(push(&s.id, s.sub, false, 0, NULL, 0), LS_KERR_THROTTLING_QUOTA_EXCEEDED);
}

TEST(bytes_that_are_not_otlp_are_an_invalid_record)
{
    sub_t s = new_instance();
    CHECK_EQ_INT(s.code, LS_KERR_NONE);
    const uint8_t junk[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x02};
    CHECK_EQ_INT(push(&s.id, s.sub, false, 0, junk, (int32_t)sizeof junk), LS_KERR_INVALID_RECORD);
}

TEST(nothing_after_the_terminating_push)
{
    sub_t s = new_instance();
    CHECK_EQ_INT(s.code, LS_KERR_NONE);
    CHECK_EQ_INT(push(&s.id, s.sub, true, 0, NULL, 0), LS_KERR_NONE);
    CHECK_EQ_INT(push(&s.id, s.sub, false, 0, NULL, 0), LS_KERR_INVALID_REQUEST);
}

TEST(a_subscription_names_metrics_and_interval)
{ /* last: the subscription applies to every instance after it */
    ls_telemetry_subs_op_t ops[] = {{.key = "metrics", .value = "org.apache.kafka.producer."},
                                    {.key = "interval.ms", .value = "1000"}};
    char err[256] = "";
    CHECK(ls_telemetry_subs_alter(E.client_metrics, "producers", true, ops, 2, false, err,
                                  sizeof err) == LS_OK);
    sub_t s = new_instance();
    CHECK_EQ_INT(s.code, LS_KERR_NONE);
    CHECK_EQ_INT(s.interval_ms, 1000);
    CHECK_EQ_INT(s.nmetrics, 1);
    CHECK(strcmp(s.metric0, "org.apache.kafka.producer.") == 0);
    CHECK_EQ_INT(push(&s.id, s.sub, false, 0, NULL, 0), LS_KERR_NONE);
}

int main(void)
{
    if (kf_open(&E) != 0) return 1;
    RUN(a_new_instance_gets_kafkas_terms);
    RUN(reserved_instance_ids_are_invalid);
    RUN(push_refusals_in_kafkas_order);
    RUN(bytes_that_are_not_otlp_are_an_invalid_record);
    RUN(nothing_after_the_terminating_push);
    RUN(a_subscription_names_metrics_and_interval);
    kf_close(&E);
    UNIT_DONE();
}
