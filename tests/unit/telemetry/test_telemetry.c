/* Client telemetry (KIP-714): the client-metrics subscriptions' checks and
 * matching (on the in-memory metadata store), the OTLP decoder on a
 * MetricsData built field by field from opentelemetry-proto's metrics.proto
 * the way kafka-clients' ClientTelemetryReporter writes it (resource
 * attributes, one scope, sums with delta temporality, gauges, attributes of
 * each value type, a histogram), and the receiver's request rules:
 * throttling, subscription ids, compression, size, payloads, terminating,
 * bounds and the exposition. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/compress.h"
#include "base/metrics.h"
#include "meta/meta.h"
#include "telemetry/otlp.h"
#include "telemetry/receiver.h"
#include "telemetry/subscriptions.h"
#include "unit.h"

/* ---- a small Protobuf writer (the test's side of the wire) ---- */

static void pb_varint(ls_buf_t *b, uint64_t v)
{
    do {
        uint8_t c = v & 0x7f;
        v >>= 7;
        ls_buf_append_u8(b, c | (v ? 0x80 : 0));
    } while (v);
}

static void pb_tag(ls_buf_t *b, uint32_t num, int wt) { pb_varint(b, (uint64_t)num << 3 | wt); }

static void pb_bytes(ls_buf_t *b, uint32_t num, const void *p, size_t n)
{
    pb_tag(b, num, 2);
    pb_varint(b, n);
    ls_buf_append(b, p, n);
}

static void pb_str(ls_buf_t *b, uint32_t num, const char *s) { pb_bytes(b, num, s, strlen(s)); }

static void pb_msg(ls_buf_t *b, uint32_t num, ls_buf_t *m) /* frees m */
{
    pb_bytes(b, num, m->data, m->len);
    ls_buf_free(m);
}

static void pb_fixed64(ls_buf_t *b, uint32_t num, uint64_t v)
{
    pb_tag(b, num, 1);
    for (int i = 0; i < 8; i++)
        ls_buf_append_u8(b, (uint8_t)(v >> (8 * i)));
}

static void pb_double(ls_buf_t *b, uint32_t num, double d)
{
    uint64_t v;
    memcpy(&v, &d, 8);
    pb_fixed64(b, num, v);
}

/* KeyValue {1 key, 2 AnyValue {1 string | 2 bool | 3 int | 4 double}} */
static void kv_str(ls_buf_t *b, uint32_t num, const char *k, const char *v)
{
    ls_buf_t kv, any;
    ls_buf_init(&kv);
    ls_buf_init(&any);
    pb_str(&kv, 1, k);
    pb_str(&any, 1, v);
    pb_msg(&kv, 2, &any);
    pb_msg(b, num, &kv);
}

static void kv_int(ls_buf_t *b, uint32_t num, const char *k, int64_t v)
{
    ls_buf_t kv, any;
    ls_buf_init(&kv);
    ls_buf_init(&any);
    pb_str(&kv, 1, k);
    pb_tag(&any, 3, 0);
    pb_varint(&any, (uint64_t)v);
    pb_msg(&kv, 2, &any);
    pb_msg(b, num, &kv);
}

static void kv_bool(ls_buf_t *b, uint32_t num, const char *k, bool v)
{
    ls_buf_t kv, any;
    ls_buf_init(&kv);
    ls_buf_init(&any);
    pb_str(&kv, 1, k);
    pb_tag(&any, 2, 0);
    pb_varint(&any, v);
    pb_msg(&kv, 2, &any);
    pb_msg(b, num, &kv);
}

/* NumberDataPoint {7 attributes, 2 start, 3 time, 4 as_double | 6 as_int} */
static void point(ls_buf_t *b, uint32_t num, double d, bool as_int, const char *topic)
{
    ls_buf_t p;
    ls_buf_init(&p);
    if (topic) kv_str(&p, 7, "topic", topic);
    pb_fixed64(&p, 2, 1700000000000000000ull);
    pb_fixed64(&p, 3, 1700000001000000000ull);
    if (as_int)
        pb_fixed64(&p, 6, (uint64_t)(int64_t)d);
    else
        pb_double(&p, 4, d);
    pb_msg(b, num, &p);
}

/* Metric {1 name, 2 description, 3 unit, 5 gauge | 7 sum | 9 histogram} */
static void metric(ls_buf_t *b, const char *name, int kind, double v, const char *topic)
{
    ls_buf_t m, data;
    ls_buf_init(&m);
    ls_buf_init(&data);
    pb_str(&m, 1, name);
    pb_str(&m, 2, "a test metric");
    if (kind == 9) { /* HistogramDataPoint {4 count}: counted, not kept */
        ls_buf_t hp;
        ls_buf_init(&hp);
        pb_fixed64(&hp, 4, 3);
        pb_msg(&data, 1, &hp);
    } else {
        point(&data, 1, v, kind == 7, topic);
    }
    if (kind == 7) { /* after the points, as a writer may put it */
        pb_tag(&data, 2, 0);
        pb_varint(&data, 1); /* AGGREGATION_TEMPORALITY_DELTA */
        pb_tag(&data, 3, 0);
        pb_varint(&data, 1); /* is_monotonic */
    }
    pb_msg(&m, (uint32_t)kind, &data);
    pb_msg(b, 2, &m);
}

/* MetricsData {1 ResourceMetrics {1 Resource {1 attributes}, 2 ScopeMetrics
 * {1 scope, 2 metrics}}} with the given metrics (kind, name, value). */
typedef struct mdef {
    int kind; /* 5 gauge, 7 sum, 9 histogram */
    const char *name;
    double v;
    const char *topic;
} mdef_t;

static void metrics_data(ls_buf_t *out, const mdef_t *defs, int n)
{
    ls_buf_t rm, res, sm, scope;
    ls_buf_init(&rm);
    ls_buf_init(&res);
    ls_buf_init(&sm);
    ls_buf_init(&scope);
    kv_str(&res, 1, "client_rack", "r1");
    kv_int(&res, 1, "node_count", 3);
    kv_bool(&res, 1, "transactional", false);
    pb_msg(&rm, 1, &res);
    pb_str(&scope, 1, "org.apache.kafka");
    pb_msg(&sm, 1, &scope);
    for (int i = 0; i < n; i++)
        metric(&sm, defs[i].name, defs[i].kind, defs[i].v, defs[i].topic);
    pb_msg(&rm, 2, &sm);
    ls_buf_init(out);
    pb_msg(out, 1, &rm);
}

/* ---- OTLP ---- */

typedef struct seen {
    int n;
    char names[8][96];
    double values[8];
    bool delta[8];
    int nattrs[8];
    char attr0[8][64];
} seen_t;

static void collect(void *arg, const ls_otlp_point_t *pt)
{
    seen_t *s = arg;
    if (s->n == 8) return;
    snprintf(s->names[s->n], sizeof s->names[0], "%.*s", (int)pt->nlen, pt->name);
    s->values[s->n] = pt->value;
    s->delta[s->n] = pt->delta;
    s->nattrs[s->n] = pt->nattrs;
    if (pt->nattrs)
        snprintf(s->attr0[s->n], sizeof s->attr0[0], "%.*s=%.*s", (int)pt->attrs[0].klen,
                 pt->attrs[0].key, (int)pt->attrs[0].vlen, pt->attrs[0].val);
    s->n++;
}

static const mdef_t client_metrics[] = {
    {7, "org.apache.kafka.producer.record.send.total", 12, NULL},
    {5, "org.apache.kafka.producer.buffer.available.bytes", 33554432.5, NULL},
    {7, "org.apache.kafka.producer.topic.record.send.total", 7, "orders"},
    {9, "org.apache.kafka.producer.request.latency", 0, NULL},
};

TEST(otlp_decodes_a_client_payload)
{
    ls_buf_t b;
    metrics_data(&b, client_metrics, 4);
    seen_t s = {0};
    ls_otlp_stats_t st;
    char why[256];
    CHECK_EQ_INT(ls_otlp_decode(b.data, b.len, collect, &s, &st, why, sizeof why), 0);
    CHECK_EQ_INT(s.n, 3);
    CHECK_EQ_INT(st.points, 3);
    CHECK_EQ_INT(st.other, 1);
    CHECK(!strcmp(s.names[0], "org.apache.kafka.producer.record.send.total"));
    CHECK(s.values[0] == 12 && s.delta[0]);
    CHECK(s.values[1] == 33554432.5 && !s.delta[1]);
    CHECK_EQ_INT(s.nattrs[2], 1);
    CHECK(!strcmp(s.attr0[2], "topic=orders"));
    ls_buf_free(&b);
}

TEST(otlp_refuses_malformed_payloads)
{
    ls_buf_t b;
    metrics_data(&b, client_metrics, 2);
    seen_t s = {0};
    ls_otlp_stats_t st;
    char why[256];
    /* cut short: every prefix but the whole is malformed or shorter */
    CHECK_EQ_INT(ls_otlp_decode(b.data, b.len - 3, collect, &s, &st, why, sizeof why), LS_ECORRUPT);
    CHECK(why[0] != 0);
    const char garbage[] = "not a protobuf at all";
    CHECK_EQ_INT(ls_otlp_decode((const uint8_t *)garbage, sizeof garbage - 1, collect, &s, &st, why,
                                sizeof why),
                 LS_ECORRUPT);
    /* a known field in the wrong wire type: resource_metrics as a varint */
    const uint8_t wrong[] = {0x08, 0x01};
    CHECK_EQ_INT(ls_otlp_decode(wrong, sizeof wrong, collect, &s, &st, why, sizeof why),
                 LS_ECORRUPT);
    /* a metric name that is not UTF-8 */
    ls_buf_t m, sm, rm, md;
    ls_buf_init(&m);
    ls_buf_init(&sm);
    ls_buf_init(&rm);
    ls_buf_init(&md);
    pb_bytes(&m, 1, "\xff\xfe", 2);
    pb_msg(&sm, 2, &m);
    pb_msg(&rm, 2, &sm);
    pb_msg(&md, 1, &rm);
    CHECK_EQ_INT(ls_otlp_decode(md.data, md.len, collect, &s, &st, why, sizeof why), LS_ECORRUPT);
    /* empty: nothing to hand over, and fine */
    s.n = 0;
    CHECK_EQ_INT(ls_otlp_decode(NULL, 0, collect, &s, &st, why, sizeof why), 0);
    CHECK_EQ_INT(s.n, 0);
    ls_buf_free(&md);
    ls_buf_free(&b);
}

/* ---- subscriptions ---- */

static ls_meta_t *M;
static ls_telemetry_subs_t *S;

static void open_subs(void)
{
    char err[256];
    M = ls_meta_open("mem://", err, sizeof err);
    S = ls_telemetry_subs_open(M, err, sizeof err);
}

static void close_subs(void)
{
    ls_telemetry_subs_close(S);
    ls_meta_close(M);
}

static ls_status set_sub(const char *name, const char *metrics, const char *interval,
                         const char *match)
{
    ls_telemetry_subs_op_t ops[3];
    int n = 0;
    if (metrics) ops[n++] = (ls_telemetry_subs_op_t){LS_TELEMETRY_METRICS, metrics, 0};
    if (interval) ops[n++] = (ls_telemetry_subs_op_t){LS_TELEMETRY_INTERVAL, interval, 0};
    if (match) ops[n++] = (ls_telemetry_subs_op_t){LS_TELEMETRY_MATCH, match, 0};
    char err[512];
    return ls_telemetry_subs_alter(S, name, true, ops, n, false, err, sizeof err);
}

TEST(subscription_values_are_checked_as_kafka_does)
{
    char err[512];
    CHECK_EQ_INT(ls_telemetry_subs_check("interval.ms", "100", err, sizeof err), 0);
    CHECK_EQ_INT(ls_telemetry_subs_check("interval.ms", " 3600000 ", err, sizeof err), 0);
    CHECK_EQ_INT(ls_telemetry_subs_check("interval.ms", "99", err, sizeof err), LS_EINVAL);
    CHECK(strstr(err, "interval.ms") && strstr(err, "99"));
    CHECK_EQ_INT(ls_telemetry_subs_check("interval.ms", "3600001", err, sizeof err), LS_EINVAL);
    CHECK_EQ_INT(ls_telemetry_subs_check("interval.ms", "ten", err, sizeof err), LS_EINVAL);
    CHECK_EQ_INT(
        ls_telemetry_subs_check("metrics", "org.apache.kafka.producer., *", err, sizeof err), 0);
    CHECK_EQ_INT(ls_telemetry_subs_check("match",
                                         "client_software_name=apache-kafka-java, "
                                         "client_id=.*-prod",
                                         err, sizeof err),
                 0);
    CHECK_EQ_INT(ls_telemetry_subs_check("match", "client_name=x", err, sizeof err), LS_EINVAL);
    CHECK(strstr(err, "match") && strstr(err, "client_name=x"));
    CHECK_EQ_INT(ls_telemetry_subs_check("match", "client_id=a=b", err, sizeof err), LS_EINVAL);
    CHECK_EQ_INT(ls_telemetry_subs_check("match", "client_id=", err, sizeof err), LS_EINVAL);
    CHECK_EQ_INT(ls_telemetry_subs_check("match", "client_id=[unclosed", err, sizeof err),
                 LS_EINVAL);
    CHECK_EQ_INT(ls_telemetry_subs_check("colour", "blue", err, sizeof err), LS_EINVAL);
    CHECK(strstr(err, "colour"));
    CHECK_EQ_INT(ls_telemetry_subs_check("colour", NULL, err, sizeof err), LS_EINVAL);
}

TEST(matching_takes_every_subscription_a_client_matches)
{
    open_subs();
    ls_telemetry_client_t java = {
        {"id-1", "app-prod", "apache-kafka-java", "4.4.0", "127.0.0.1", "50000"}};
    ls_telemetry_client_t rdkafka = {{"id-2", "rd", "librdkafka", "2.6.0", "127.0.0.1", "50001"}};
    ls_telemetry_match_t m;
    ls_telemetry_subs_match(S, &java, &m);
    CHECK_EQ_INT(m.nmetrics, 0); /* none: the default interval, no metrics */
    CHECK_EQ_INT(m.interval_ms, LS_TELEMETRY_INTERVAL_DEFAULT);
    int64_t v0 = m.version;
    ls_telemetry_match_free(&m);
    CHECK_EQ_INT(set_sub("java", "org.apache.kafka.producer., org.apache.kafka.consumer.", "1000",
                         "client_software_name=apache-kafka-java,client_id=.*-prod"),
                 LS_OK);
    CHECK_EQ_INT(set_sub("all", "org.apache.kafka.producer.", "5000", NULL), LS_OK);
    ls_telemetry_subs_match(S, &java, &m);
    CHECK(m.version != v0);
    CHECK_EQ_INT(m.interval_ms, 1000);
    CHECK_EQ_INT(m.nmetrics, 2); /* sorted, the duplicate once */
    CHECK(!strcmp(m.metrics[0], "org.apache.kafka.consumer."));
    CHECK(!strcmp(m.metrics[1], "org.apache.kafka.producer."));
    ls_telemetry_match_free(&m);
    /* the whole value must match, and every pattern */
    ls_telemetry_subs_match(S, &rdkafka, &m);
    CHECK_EQ_INT(m.interval_ms, 5000);
    CHECK_EQ_INT(m.nmetrics, 1);
    ls_telemetry_match_free(&m);
    ls_telemetry_client_t unnamed = java;
    unnamed.attr[LS_TELEMETRY_P_SOFTWARE_NAME] = NULL; /* no ApiVersions v3: no match */
    ls_telemetry_subs_match(S, &unnamed, &m);
    CHECK_EQ_INT(m.interval_ms, 5000);
    ls_telemetry_match_free(&m);
    /* "*" alone when any asks for every metric */
    CHECK_EQ_INT(set_sub("everything", "*", NULL, "client_source_port=5000[0-9]"), LS_OK);
    ls_telemetry_subs_match(S, &java, &m);
    CHECK_EQ_INT(m.nmetrics, 1);
    CHECK(!strcmp(m.metrics[0], "*"));
    ls_telemetry_match_free(&m);
    int n;
    char **names = ls_telemetry_subs_names(S, &n);
    CHECK_EQ_INT(n, 3);
    CHECK(!strcmp(names[0], "all") && !strcmp(names[2], "java"));
    for (int i = 0; i < n; i++)
        ls_free(names[i]);
    ls_free(names);
    /* every key deleted: the subscription is gone */
    ls_telemetry_subs_op_t del[] = {{LS_TELEMETRY_METRICS, NULL, 0}, {LS_TELEMETRY_MATCH, NULL, 0}};
    char err[256];
    CHECK_EQ_INT(ls_telemetry_subs_alter(S, "everything", false, del, 2, false, err, sizeof err),
                 LS_OK);
    CHECK(ls_telemetry_subs_get(S, "everything", LS_TELEMETRY_METRICS) == NULL);
    char *iv = ls_telemetry_subs_get(S, "java", LS_TELEMETRY_INTERVAL);
    CHECK(iv && !strcmp(iv, "1000"));
    ls_free(iv);
    /* APPEND adds the items missing, SUBTRACT removes those listed (Kafka's
     * list operations); neither is taken by interval.ms */
    ls_telemetry_subs_op_t app[] = {
        {LS_TELEMETRY_METRICS, "org.apache.kafka.consumer.,org.apache.kafka.admin.",
         LS_TELEMETRY_LIST_APPEND},
        {LS_TELEMETRY_MATCH, "client_id=.*-prod", LS_TELEMETRY_LIST_SUBTRACT}};
    CHECK_EQ_INT(ls_telemetry_subs_alter(S, "java", false, app, 2, false, err, sizeof err), LS_OK);
    char *m2 = ls_telemetry_subs_get(S, "java", LS_TELEMETRY_METRICS);
    CHECK(m2 && !strcmp(m2, "org.apache.kafka.producer.,org.apache.kafka.consumer.,"
                            "org.apache.kafka.admin."));
    ls_free(m2);
    char *match = ls_telemetry_subs_get(S, "java", LS_TELEMETRY_MATCH);
    CHECK(match && !strcmp(match, "client_software_name=apache-kafka-java"));
    ls_free(match);
    ls_telemetry_subs_op_t app_iv = {LS_TELEMETRY_INTERVAL, "100", LS_TELEMETRY_LIST_APPEND};
    CHECK_EQ_INT(ls_telemetry_subs_alter(S, "java", false, &app_iv, 1, false, err, sizeof err),
                 LS_EINVAL);
    CHECK(strstr(err, "interval.ms"));
    /* a bad value is refused and nothing changes */
    int64_t before = ls_telemetry_subs_version(S);
    CHECK_EQ_INT(set_sub("java", NULL, "50", NULL), LS_EINVAL);
    CHECK_EQ_INT(ls_telemetry_subs_version(S), before);
    close_subs();
}

/* ---- receiver ---- */

#define T0 1000000000 /* ms: a monotonic clock well past zero */

static ls_telemetry_client_t java_client(void)
{
    return (ls_telemetry_client_t){
        {NULL, "app-prod", "apache-kafka-java", "4.4.0", "127.0.0.1", "50000"}};
}

static ls_telemetry_outcome push(ls_telemetry_t *t, const ls_telemetry_sub_t *sub, int64_t now,
                                 int8_t codec, const uint8_t *p, size_t n, bool terminating)
{
    ls_telemetry_client_t c = java_client();
    ls_telemetry_push_t req = {sub->instance_id, sub->subscription_id, terminating, codec, p, n};
    char why[512];
    return ls_telemetry_push(t, &c, &req, now, why, sizeof why);
}

static ls_telemetry_outcome get(ls_telemetry_t *t, const ls_uuid_t *id, int64_t now,
                                ls_telemetry_sub_t *out)
{
    ls_telemetry_client_t c = java_client();
    char why[512];
    return ls_telemetry_get(t, &c, id, now, out, why, sizeof why);
}

static char *scrape(ls_telemetry_t *t, int64_t now)
{
    ls_buf_t b;
    ls_buf_init(&b);
    ls_telemetry_render(t, &b, false, now);
    ls_buf_append_u8(&b, 0);
    return (char *)b.data;
}

TEST(receiver_follows_kafkas_request_rules)
{
    open_subs();
    CHECK_EQ_INT(set_sub("p", "org.apache.kafka.producer.", "1000", NULL), LS_OK);
    ls_telemetry_t *t = ls_telemetry_open(S);
    ls_uuid_t zero = {{0}};
    ls_telemetry_sub_t sub, again;
    CHECK_EQ_INT(get(t, &zero, T0, &sub), LS_TELEMETRY_OK);
    CHECK(!ls_uuid_is_zero(&sub.instance_id));
    CHECK_EQ_INT(sub.interval_ms, 1000);
    CHECK_EQ_INT(sub.nmetrics, 1);
    /* a second get within the interval is throttled */
    CHECK_EQ_INT(get(t, &sub.instance_id, T0 + 10, &again), LS_TELEMETRY_THROTTLED);
    ls_buf_t md;
    metrics_data(&md, client_metrics, 4);
    /* the push right after a get is taken (clients add jitter), the next not */
    CHECK_EQ_INT(push(t, &sub, T0 + 20, LS_CODEC_NONE, md.data, md.len, false), LS_TELEMETRY_OK);
    CHECK_EQ_INT(push(t, &sub, T0 + 30, LS_CODEC_NONE, md.data, md.len, false),
                 LS_TELEMETRY_THROTTLED);
    char *text = scrape(t, T0 + 40);
    char idstr[23];
    ls_uuid_format_kafka(&sub.instance_id, idstr);
    char want[256];
    snprintf(want, sizeof want,
             "lakestream_client_metric{client_instance_id=\"%s\",client_id=\"app-prod\","
             "name=\"org.apache.kafka.producer.record.send.total\"} 12\n",
             idstr);
    CHECK(strstr(text, want));
    CHECK(strstr(text,
                 "name=\"org.apache.kafka.producer.topic.record.send.total\",topic=\"orders\"} 7"));
    CHECK(!strstr(text, "request.latency")); /* histograms are not kept */
    ls_free(text);
    /* a push an interval later adds the delta sum, keeps the gauge's latest */
    ls_buf_t zmd;
    ls_buf_init(&zmd);
    CHECK_EQ_INT(ls_compress(LS_CODEC_ZSTD, md.data, md.len, &zmd), LS_OK);
    CHECK_EQ_INT(push(t, &sub, T0 + 1100, LS_CODEC_ZSTD, zmd.data, zmd.len, false),
                 LS_TELEMETRY_OK);
    text = scrape(t, T0 + 1100);
    CHECK(strstr(text, "name=\"org.apache.kafka.producer.record.send.total\"} 24\n"));
    CHECK(strstr(text, "name=\"org.apache.kafka.producer.buffer.available.bytes\"} 33554432.5\n"));
    ls_free(text);
    /* a wrong subscription id, then an unknown codec, then too large, then
     * garbage: each an interval apart */
    ls_telemetry_sub_t bad = sub;
    bad.subscription_id ^= 1;
    CHECK_EQ_INT(push(t, &bad, T0 + 2200, LS_CODEC_NONE, md.data, md.len, false),
                 LS_TELEMETRY_UNKNOWN_SUB);
    CHECK_EQ_INT(get(t, &sub.instance_id, T0 + 2210, &again), LS_TELEMETRY_OK); /* at once */
    CHECK_EQ_INT(again.subscription_id, sub.subscription_id);
    ls_telemetry_sub_free(&again);
    CHECK_EQ_INT(push(t, &sub, T0 + 3300, 9, md.data, md.len, false), LS_TELEMETRY_BAD_COMPRESSION);
    uint8_t *big = ls_calloc(1, LS_TELEMETRY_MAX_BYTES + 1);
    CHECK_EQ_INT(push(t, &sub, T0 + 4400, LS_CODEC_NONE, big, LS_TELEMETRY_MAX_BYTES + 1, false),
                 LS_TELEMETRY_TOO_LARGE);
    ls_free(big);
    const uint8_t junk[] = "not a protobuf at all";
    CHECK_EQ_INT(push(t, &sub, T0 + 5500, LS_CODEC_NONE, junk, sizeof junk - 1, false),
                 LS_TELEMETRY_BAD_PAYLOAD);
    CHECK_EQ_INT(push(t, &sub, T0 + 6600, LS_CODEC_GZIP, junk, sizeof junk - 1, false),
                 LS_TELEMETRY_BAD_PAYLOAD);
    /* a terminating push is taken at once and drops the series; nothing after */
    CHECK_EQ_INT(push(t, &sub, T0 + 6610, LS_CODEC_NONE, md.data, md.len, true), LS_TELEMETRY_OK);
    text = scrape(t, T0 + 6620);
    CHECK(!strstr(text, idstr));
    ls_free(text);
    CHECK_EQ_INT(push(t, &sub, T0 + 9000, LS_CODEC_NONE, md.data, md.len, false),
                 LS_TELEMETRY_BAD_REQUEST);
    ls_uuid_t one = {{[15] = 1}};
    ls_telemetry_sub_t reserved = sub;
    reserved.instance_id = one;
    CHECK_EQ_INT(push(t, &reserved, T0 + 9000, LS_CODEC_NONE, md.data, md.len, false),
                 LS_TELEMETRY_BAD_REQUEST);
    ls_telemetry_sub_free(&sub);
    ls_buf_free(&md);
    ls_buf_free(&zmd);
    ls_telemetry_close(t);
    close_subs();
}

TEST(receiver_follows_subscription_changes_and_expires_instances)
{
    open_subs();
    CHECK_EQ_INT(set_sub("p", "org.apache.kafka.producer.record.", "1000", NULL), LS_OK);
    ls_telemetry_t *t = ls_telemetry_open(S);
    ls_uuid_t zero = {{0}};
    ls_telemetry_sub_t sub, next;
    CHECK_EQ_INT(get(t, &zero, T0, &sub), LS_TELEMETRY_OK);
    ls_buf_t md;
    metrics_data(&md, client_metrics, 4);
    CHECK_EQ_INT(push(t, &sub, T0 + 1, LS_CODEC_NONE, md.data, md.len, false), LS_TELEMETRY_OK);
    char *text = scrape(t, T0 + 2);
    CHECK(strstr(text, "record.send.total"));
    CHECK(!strstr(text, "buffer.available.bytes")); /* not subscribed: not kept */
    ls_free(text);
    /* the subscription changes: the next push is refused with its old id,
     * the get right after answers the new one, and the old series go */
    CHECK_EQ_INT(set_sub("p", "org.apache.kafka.producer.buffer.", "2000", NULL), LS_OK);
    CHECK_EQ_INT(push(t, &sub, T0 + 3, LS_CODEC_NONE, md.data, md.len, false),
                 LS_TELEMETRY_UNKNOWN_SUB);
    CHECK_EQ_INT(get(t, &sub.instance_id, T0 + 4, &next), LS_TELEMETRY_OK);
    CHECK(next.subscription_id != sub.subscription_id);
    CHECK_EQ_INT(next.interval_ms, 2000);
    text = scrape(t, T0 + 5);
    CHECK(!strstr(text, "record.send.total"));
    ls_free(text);
    CHECK_EQ_INT(push(t, &next, T0 + 6, LS_CODEC_NONE, md.data, md.len, false), LS_TELEMETRY_OK);
    text = scrape(t, T0 + 7);
    CHECK(strstr(text, "buffer.available.bytes"));
    ls_free(text);
    /* no request for max(60 s, 3 intervals): gone */
    text = scrape(t, T0 + 7 + LS_TELEMETRY_EXPIRY_MIN_MS + 1);
    CHECK(!strstr(text, "buffer.available.bytes"));
    ls_free(text);
    ls_telemetry_sub_free(&sub);
    ls_telemetry_sub_free(&next);
    ls_buf_free(&md);
    ls_telemetry_close(t);
    close_subs();
}

TEST(receiver_bounds_the_series_of_a_client)
{
    open_subs();
    CHECK_EQ_INT(set_sub("all", "*", "100", NULL), LS_OK);
    ls_telemetry_t *t = ls_telemetry_open(S);
    ls_uuid_t zero = {{0}};
    ls_telemetry_sub_t sub;
    CHECK_EQ_INT(get(t, &zero, T0, &sub), LS_TELEMETRY_OK);
    int n = LS_TELEMETRY_MAX_CLIENT_SERIES + 5;
    mdef_t *defs = LS_NEWN(mdef_t, n);
    char(*names)[32] = ls_calloc((size_t)n, 32);
    for (int i = 0; i < n; i++) {
        snprintf(names[i], 32, "m.%d", i);
        defs[i] = (mdef_t){5, names[i], i, "t"};
    }
    ls_buf_t md;
    metrics_data(&md, defs, n);
    CHECK_EQ_INT(push(t, &sub, T0 + 1, LS_CODEC_NONE, md.data, md.len, false), LS_TELEMETRY_OK);
    char *text = scrape(t, T0 + 2);
    int lines = 0;
    for (const char *p = text; (p = strstr(p, "\nlakestream_client_metric{")); p++)
        lines++;
    CHECK_EQ_INT(lines, LS_TELEMETRY_MAX_CLIENT_SERIES);
    /* attribute keys become valid label names */
    CHECK(strstr(text, ",topic=\"t\"}"));
    ls_free(text);
    ls_free(defs);
    ls_free(names);
    ls_buf_free(&md);
    ls_telemetry_sub_free(&sub);
    ls_telemetry_close(t);
    close_subs();
}

TEST(receiver_makes_attribute_keys_label_names)
{
    open_subs();
    CHECK_EQ_INT(set_sub("all", "*", "100", NULL), LS_OK);
    ls_telemetry_t *t = ls_telemetry_open(S);
    ls_uuid_t zero = {{0}};
    ls_telemetry_sub_t sub;
    CHECK_EQ_INT(get(t, &zero, T0, &sub), LS_TELEMETRY_OK);
    /* one gauge point whose attributes need renaming */
    ls_buf_t p, g, m, sm, rm, md;
    ls_buf_init(&p);
    ls_buf_init(&g);
    ls_buf_init(&m);
    ls_buf_init(&sm);
    ls_buf_init(&rm);
    ls_buf_init(&md);
    kv_str(&p, 7, "node.id", "1");
    kv_str(&p, 7, "client_id", "other");
    kv_str(&p, 7, "9lives", "y");
    kv_str(&p, 7, "__reserved", "z");
    kv_str(&p, 7, "say", "a \"quoted\"\nline");
    pb_double(&p, 4, 1.5);
    pb_msg(&g, 1, &p);
    pb_str(&m, 1, "org.apache.kafka.g");
    pb_msg(&m, 5, &g);
    pb_msg(&sm, 2, &m);
    pb_msg(&rm, 2, &sm);
    pb_msg(&md, 1, &rm);
    CHECK_EQ_INT(push(t, &sub, T0 + 1, LS_CODEC_NONE, md.data, md.len, false), LS_TELEMETRY_OK);
    char *text = scrape(t, T0 + 2);
    CHECK(strstr(text, "client_id=\"app-prod\",name=\"org.apache.kafka.g\",node_id=\"1\","
                       "attr_client_id=\"other\",attr_9lives=\"y\",attr___reserved=\"z\","
                       "say=\"a \\\"quoted\\\"\\nline\"} 1.5\n"));
    ls_free(text);
    ls_buf_free(&md);
    ls_telemetry_sub_free(&sub);
    ls_telemetry_close(t);
    close_subs();
}

int main(void)
{
    RUN(otlp_decodes_a_client_payload);
    RUN(otlp_refuses_malformed_payloads);
    RUN(subscription_values_are_checked_as_kafka_does);
    RUN(matching_takes_every_subscription_a_client_matches);
    RUN(receiver_follows_kafkas_request_rules);
    RUN(receiver_follows_subscription_changes_and_expires_instances);
    RUN(receiver_bounds_the_series_of_a_client);
    RUN(receiver_makes_attribute_keys_label_names);
    UNIT_DONE();
}
