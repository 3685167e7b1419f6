/* GetTelemetrySubscriptions (key 71) and PushTelemetry (key 72): KIP-714
 * client telemetry, served by the receiver (telemetry/receiver.h, whose
 * design note has the instance state machine and the throttling rules).
 *
 * As Kafka, neither authorizes anything beyond the connection's
 * authentication: a client always may ask for its subscription and push
 * its own metrics. The client is matched on what it says it is: the
 * request header's client id, ApiVersions' software name and version, and
 * its address and port. Answers carry Kafka's values: compression types
 * zstd, lz4, gzip, snappy (none is always accepted), telemetry max bytes
 * 1 MiB, delta temporality. Both run on the loop thread (a push's payload
 * is bounded: 1 MiB compressed, 32 MiB decoded). */
#include <string.h>

#include "base/clock.h"
#include "base/diag.h"
#include "kafka/handlers.h"
#include "kafka/msg.h"
#include "kafka/services.h"
#include "telemetry/receiver.h"

static int16_t error_of(ls_telemetry_outcome o)
{
    switch (o) {
    case LS_TELEMETRY_OK: return LS_KERR_NONE;
    case LS_TELEMETRY_THROTTLED: return LS_KERR_THROTTLING_QUOTA_EXCEEDED;
    case LS_TELEMETRY_BAD_REQUEST: return LS_KERR_INVALID_REQUEST;
    case LS_TELEMETRY_UNKNOWN_SUB: return LS_KERR_UNKNOWN_SUBSCRIPTION_ID;
    case LS_TELEMETRY_BAD_COMPRESSION: return LS_KERR_UNSUPPORTED_COMPRESSION_TYPE;
    case LS_TELEMETRY_TOO_LARGE: return LS_KERR_TELEMETRY_TOO_LARGE;
    case LS_TELEMETRY_BAD_PAYLOAD: return LS_KERR_INVALID_RECORD;
    }
    return LS_KERR_UNKNOWN_SERVER_ERROR;
}

/* What the request says of its client (the instance id is the receiver's). */
static ls_telemetry_client_t client_of(ls_kreq_t *req)
{
    ls_telemetry_client_t c;
    memset(&c, 0, sizeof c);
    bool exact;
    c.attr[LS_TELEMETRY_P_CLIENT_ID] =
        req->client_id.len >= 0 ? ls_arena_kstr(req->arena, req->client_id, &exact) : NULL;
    c.attr[LS_TELEMETRY_P_SOFTWARE_NAME] = ls_kreq_client_software_name(req);
    c.attr[LS_TELEMETRY_P_SOFTWARE_VERSION] = ls_kreq_client_software_version(req);
    c.attr[LS_TELEMETRY_P_SOURCE_ADDRESS] = ls_kreq_peer_host(req);
    c.attr[LS_TELEMETRY_P_SOURCE_PORT] = ls_kreq_peer_port(req);
    return c;
}

void ls_kafka_handle_get_telemetry_subscriptions(ls_kreq_t *req)
{
    const ls_kafka_GetTelemetrySubscriptionsRequest *m = req->msg;
    ls_arena_t *a = req->arena;
    ls_kafka_GetTelemetrySubscriptionsResponse r;
    memset(&r, 0, sizeof r);
    ls_telemetry_client_t c = client_of(req);
    ls_telemetry_sub_t sub;
    char why[256];
    ls_telemetry_outcome o = ls_telemetry_get(req->svc->telemetry, &c, &m->ClientInstanceId,
                                              ls_clock_mono_ms(), &sub, why, sizeof why);
    r.ErrorCode = error_of(o);
    if (o != LS_TELEMETRY_OK) LS_DEBUG("kafka", "GetTelemetrySubscriptions: %s", why);
    if (o == LS_TELEMETRY_OK) {
        r.ClientInstanceId = sub.instance_id;
        r.SubscriptionId = sub.subscription_id;
        r.PushIntervalMs = sub.interval_ms;
        r.TelemetryMaxBytes = LS_TELEMETRY_MAX_BYTES;
        r.DeltaTemporality = true;
        r.NumAcceptedCompressionTypes = (int32_t)sizeof ls_telemetry_codecs;
        r.AcceptedCompressionTypes = ls_arena_alloc(a, sizeof ls_telemetry_codecs);
        memcpy(r.AcceptedCompressionTypes, ls_telemetry_codecs, sizeof ls_telemetry_codecs);
        r.NumRequestedMetrics = sub.nmetrics;
        r.RequestedMetrics = ls_kmsg_alloc(a, sub.nmetrics, sizeof *r.RequestedMetrics);
        for (int i = 0; i < sub.nmetrics; i++)
            r.RequestedMetrics[i] = ls_kstr_c(ls_arena_printf(a, "%s", sub.metrics[i]));
        ls_telemetry_sub_free(&sub);
    }
    ls_kw_t w;
    ls_kreq_encode(req, &w, &r);
    ls_kreq_respond(req, &w);
}

void ls_kafka_handle_push_telemetry(ls_kreq_t *req)
{
    const ls_kafka_PushTelemetryRequest *m = req->msg;
    ls_kafka_PushTelemetryResponse r;
    memset(&r, 0, sizeof r);
    ls_telemetry_client_t c = client_of(req);
    ls_telemetry_push_t p = {.instance_id = m->ClientInstanceId,
                             .subscription_id = m->SubscriptionId,
                             .terminating = m->Terminating,
                             .compression = m->CompressionType,
                             .metrics = m->Metrics.ptr,
                             .len = m->Metrics.len > 0 ? (size_t)m->Metrics.len : 0};
    char why[512];
    ls_telemetry_outcome o =
        ls_telemetry_push(req->svc->telemetry, &c, &p, ls_clock_mono_ms(), why, sizeof why);
    r.ErrorCode = error_of(o);
    if (o != LS_TELEMETRY_OK) LS_DEBUG("kafka", "PushTelemetry: %s", why);
    ls_kw_t w;
    ls_kreq_encode(req, &w, &r);
    ls_kreq_respond(req, &w);
}
