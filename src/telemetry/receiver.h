/* The client-metrics receiver (KIP-714): the client instances that ask
 * for their subscription (GetTelemetrySubscriptions) and push their
 * metrics (PushTelemetry), and the latest value of each pushed metric,
 * exposed on the broker's metrics endpoint.
 *
 * Instance state machine (per client instance id, in this broker's memory,
 * as Kafka's ClientMetricsInstance):
 *   (none) --get or push--> ACTIVE: evaluated against the subscriptions
 *     (telemetry/subscriptions.h): metrics, push interval, subscription id
 *   ACTIVE --subscriptions changed, next get or push--> ACTIVE, evaluated
 *     again with fresh timestamps (the new subscription is had at once)
 *   ACTIVE --push with terminating--> TERMINATED: series dropped; any later
 *     push is INVALID_REQUEST
 *   any --no request for max(60 s, 3 push intervals)--> (none): dropped.
 * A get is throttled when it comes less than a push interval after the
 * instance's last get or push (unless the last push failed with an unknown
 * subscription id or compression type, which a client corrects by asking
 * again); a push is throttled when it comes less than a push interval after
 * the last accepted push, unless a get came in between (clients add jitter)
 * or it is terminating. The subscription id is a CRC-32C of the matched
 * metric prefixes and interval, XORed with the hash of the instance id, so
 * every broker computes the same one for the same subscriptions.
 *
 * Bounds (docs/OPERATIONS.md "Client metrics"): at most
 * LS_TELEMETRY_MAX_CLIENTS instances (the one seen longest ago is dropped
 * for a new one), LS_TELEMETRY_MAX_CLIENT_SERIES series per instance and
 * LS_TELEMETRY_MAX_SERIES and LS_TELEMETRY_MAX_SERIES_BYTES (names, labels
 * and values held) in all (further new series are dropped and counted);
 * pushed payloads up to LS_TELEMETRY_MAX_BYTES compressed,
 * LS_TELEMETRY_MAX_DECODED decompressed.
 *
 * Only what the subscription asks for is kept: a point of a metric outside
 * the instance's prefixes is ignored, and an evaluation drops the series no
 * longer asked for (so a changed subscription shows at once).
 *
 * Values: a gauge and a cumulative sum keep the latest value pushed; a
 * delta sum (what clients send, as DeltaTemporality is true) adds each
 * delta, so a series counts what this broker received since it first saw
 * it (summed over brokers: the client's total).
 *
 * Threads: requests on the Kafka loop thread, the exposition on the HTTP
 * server's; one mutex over everything. */
#ifndef LS_TELEMETRY_RECEIVER_H
#define LS_TELEMETRY_RECEIVER_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/uuid.h"
#include "telemetry/subscriptions.h"

#define LS_TELEMETRY_MAX_BYTES (1024 * 1024)
#define LS_TELEMETRY_MAX_DECODED (32 * 1024 * 1024)
#define LS_TELEMETRY_MAX_CLIENTS 4096
#define LS_TELEMETRY_MAX_CLIENT_SERIES 1000
#define LS_TELEMETRY_MAX_SERIES 100000
#define LS_TELEMETRY_MAX_SERIES_BYTES (64 * 1024 * 1024)
#define LS_TELEMETRY_EXPIRY_MIN_MS 60000

typedef struct ls_telemetry ls_telemetry_t;

/* subs: the subscriptions (kept, not owned). Joins the metrics endpoint
 * (base/metrics.h exposer) until closed. */
ls_telemetry_t *ls_telemetry_open(ls_telemetry_subs_t *subs);
void ls_telemetry_close(ls_telemetry_t *t);

/* Outcomes; the Kafka layer answers each with Kafka's error. */
typedef enum {
    LS_TELEMETRY_OK,
    LS_TELEMETRY_THROTTLED,       /* THROTTLING_QUOTA_EXCEEDED */
    LS_TELEMETRY_BAD_REQUEST,     /* INVALID_REQUEST: a reserved instance id, after terminating */
    LS_TELEMETRY_UNKNOWN_SUB,     /* UNKNOWN_SUBSCRIPTION_ID */
    LS_TELEMETRY_BAD_COMPRESSION, /* UNSUPPORTED_COMPRESSION_TYPE */
    LS_TELEMETRY_TOO_LARGE,       /* TELEMETRY_TOO_LARGE */
    LS_TELEMETRY_BAD_PAYLOAD      /* INVALID_RECORD */
} ls_telemetry_outcome;

/* The subscription of an instance (GetTelemetrySubscriptions' answer). */
typedef struct ls_telemetry_sub {
    ls_uuid_t instance_id;
    int32_t subscription_id;
    int32_t interval_ms;
    char **metrics; /* ls_telemetry_sub_free */
    int nmetrics;
} ls_telemetry_sub_t;
void ls_telemetry_sub_free(ls_telemetry_sub_t *s);

/* GetTelemetrySubscriptions of client c (attr[LS_TELEMETRY_P_INSTANCE_ID]
 * is filled here): id zero asks for a new instance id. out is filled on
 * LS_TELEMETRY_OK. */
ls_telemetry_outcome ls_telemetry_get(ls_telemetry_t *t, ls_telemetry_client_t *c,
                                      const ls_uuid_t *id, int64_t now_ms, ls_telemetry_sub_t *out,
                                      char *why, size_t whylen);

/* One PushTelemetry of client c. */
typedef struct ls_telemetry_push {
    ls_uuid_t instance_id;
    int32_t subscription_id;
    bool terminating;
    int8_t compression; /* Kafka's codec ids: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd */
    const uint8_t *metrics;
    size_t len;
} ls_telemetry_push_t;
ls_telemetry_outcome ls_telemetry_push(ls_telemetry_t *t, ls_telemetry_client_t *c,
                                       const ls_telemetry_push_t *p, int64_t now_ms, char *why,
                                       size_t whylen);

/* The compression types pushes may use besides none, in Kafka's order of
 * preference (zstd, lz4, gzip, snappy). */
extern const int8_t ls_telemetry_codecs[4];

/* Writes the lakestream_client_metric family (every series of every live
 * instance) to out; drops the instances expired by now_ms first. */
void ls_telemetry_render(ls_telemetry_t *t, ls_buf_t *out, bool openmetrics, int64_t now_ms);
#endif
