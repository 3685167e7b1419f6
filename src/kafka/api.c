/* Kafka API dispatch table, error mapping and the ApiVersions handler.
 *
 * The table is the single source of the supported version ranges: conn.c
 * checks key and version against it before any handler runs, and
 * ApiVersions is generated from it. Its rows are generated too, from the
 * message descriptions (src/kafka/messages/<Api>.msg: `handler`, `serial`,
 * `row`; kafka/api_gen.h): the ranges and first flexible versions are those
 * of the descriptions (LS_KAFKA_<API>_{MIN,MAX,FLEX}, shared with the codecs
 * so the two cannot drift apart), and a new api is its description plus its
 * handler file.
 *
 * One deliberate difference between what is served and what is advertised:
 * Produce is advertised from v0 although only v3+ is served. librdkafka up to
 * 2.11.0 decides whether gzip/snappy/lz4 may be used by asking whether the
 * broker supports Produce somewhere in [0, 0], and silently sends
 * uncompressed batches otherwise (KAFKA-18659; Apache Kafka 4.0 advertises
 * Produce 0-12 for the same reason while rejecting v0-2). Clients that can
 * produce RecordBatch v2 never pick v0-2, and conn.c refuses them. */
#include <pthread.h>
#include <string.h>

#include "kafka/api.h"
#include "kafka/api_gen.h"
#include "kafka/msg.h"

#include "base/check.h"
#include "base/status.h"

/* One served api: its generated description ls_kmsg_<api> and handler;
 * serial: handled one at a time per connection (api.h, conn.c). The rows,
 * and so ApiVersions' order, come from the descriptions' `handler` and `row`
 * lines (kafka/api_gen.h, generated). */
#define API_ROW(api, pfx, fn, serial_)                                                             \
    {.key = LS_KAFKA_API_##pfx,                                                                    \
     .name = #api,                                                                                 \
     .min_version = LS_KAFKA_##pfx##_MIN,                                                          \
     .max_version = LS_KAFKA_##pfx##_MAX,                                                          \
     .first_flexible = LS_KAFKA_##pfx##_FLEX,                                                      \
     .msg = &ls_kmsg_##api,                                                                        \
     .handler = fn,                                                                                \
     .serial = serial_},

const ls_kafka_api_t ls_kafka_apis[] = {LS_KAFKA_API_ROWS(API_ROW)};
const int ls_kafka_napis = (int)(sizeof ls_kafka_apis / sizeof ls_kafka_apis[0]);

/* ls_kafka_apis by key, built once: the lookup is on every request's path
 * (dispatch, its latency metric, each ACL check names the API). */
#define API_KEYS 128
static const ls_kafka_api_t *apis_by_key[API_KEYS];
static pthread_once_t apis_indexed = PTHREAD_ONCE_INIT;

static void index_apis(void)
{
    for (int i = 0; i < ls_kafka_napis; i++) {
        LS_CHECKF(ls_kafka_apis[i].key >= 0 && ls_kafka_apis[i].key < API_KEYS,
                  "api key %d past the index (API_KEYS %d)", ls_kafka_apis[i].key, API_KEYS);
        apis_by_key[ls_kafka_apis[i].key] = &ls_kafka_apis[i];
    }
}

const ls_kafka_api_t *ls_kafka_api_find(int16_t key)
{
    pthread_once(&apis_indexed, index_apis);
    return key >= 0 && key < API_KEYS ? apis_by_key[key] : NULL;
}

/* Names of API keys not served (the served ones are in ls_kafka_apis), so
 * diagnostics about requests we refuse still say what the client wanted. */
static const char *const api_names[] = {
    [4] = "LeaderAndIsr",           [5] = "StopReplica",
    [6] = "UpdateMetadata",         [7] = "ControlledShutdown",
    [38] = "CreateDelegationToken", [39] = "RenewDelegationToken",
    [40] = "ExpireDelegationToken", [41] = "DescribeDelegationToken",
    [55] = "DescribeQuorum",        [64] = "UnregisterBroker",
};

const char *ls_kafka_api_name(int16_t key)
{
    const ls_kafka_api_t *api = ls_kafka_api_find(key); /* a served one names itself */
    if (api) return api->name;
    if (key >= 0 && (size_t)key < sizeof api_names / sizeof api_names[0] && api_names[key])
        return api_names[key];
    return "Unknown";
}

/* Internal status -> Kafka error code. Retriable conditions map to errors the
 * clients retry (and, for KAFKA_STORAGE_ERROR, refresh metadata first):
 *  - LS_EAGAIN (store unreachable, timed out): REQUEST_TIMED_OUT (7) — "may or
 *    may not have happened, try again"; idempotent producers retry safely;
 *  - LS_ECONFLICT (lost a compare-and-set race): REQUEST_TIMED_OUT as well;
 *  - LS_EIO, LS_ENOSPC, LS_ESHUTDOWN: KAFKA_STORAGE_ERROR (56), retriable with
 *    a metadata refresh, which moves clients to another broker when this one
 *    is stopping. Produce v3 and Fetch v4-5 predate error 56: answer those
 *    with ls_kafka_error_for_version() (msg.h), which downgrades it to
 *    NOT_LEADER_OR_FOLLOWER exactly as Kafka does;
 *  - LS_EFENCED (log fenced by a delete): UNKNOWN_TOPIC_OR_PARTITION (3).
 *    Producer-epoch fencing on append is the Produce handler's business. */
int16_t ls_kafka_error_from_status(int st)
{
    switch ((ls_status)st) {
    case LS_OK: return LS_KERR_NONE;
    case LS_EAGAIN: return LS_KERR_REQUEST_TIMED_OUT;
    case LS_ECONFLICT: return LS_KERR_REQUEST_TIMED_OUT;
    case LS_EIO: return LS_KERR_KAFKA_STORAGE_ERROR;
    case LS_ENOSPC: return LS_KERR_KAFKA_STORAGE_ERROR;
    case LS_ESHUTDOWN: return LS_KERR_KAFKA_STORAGE_ERROR;
    case LS_ENOTFOUND: return LS_KERR_UNKNOWN_TOPIC_OR_PARTITION;
    case LS_EFENCED: return LS_KERR_UNKNOWN_TOPIC_OR_PARTITION;
    case LS_EEXISTS: return LS_KERR_TOPIC_ALREADY_EXISTS;
    case LS_ERANGE: return LS_KERR_OFFSET_OUT_OF_RANGE;
    case LS_ECORRUPT: return LS_KERR_CORRUPT_MESSAGE;
    case LS_EINVAL: return LS_KERR_INVALID_REQUEST;
    case LS_ELIMIT: return LS_KERR_POLICY_VIOLATION;
    }
    return LS_KERR_UNKNOWN_SERVER_ERROR;
}

int16_t ls_kafka_error_for_version(int16_t api_key, int16_t version, int16_t err)
{
    if (err == LS_KERR_KAFKA_STORAGE_ERROR && ((api_key == LS_KAFKA_API_PRODUCE && version < 4) ||
                                               (api_key == LS_KAFKA_API_FETCH && version < 6)))
        return LS_KERR_NOT_LEADER_OR_FOLLOWER;
    if (err == LS_KERR_UNKNOWN_TOPIC_ID && api_key == LS_KAFKA_API_FETCH && version < 13)
        return LS_KERR_UNKNOWN_TOPIC_OR_PARTITION;
    return err;
}

/* ApiVersions (key 18). An unsupported request version is answered in the
 * v0 layout with UNSUPPORTED_VERSION and the full list of ranges so the
 * client retries with a version it can use (KIP-511); conn.c passes such
 * requests through with flex == false and writes a v0 response header for
 * every ApiVersions version.
 *
 * Features (v3+ tagged fields): those of ls_kafka_features (h_features.c)
 * with a supported level above 0, and those finalized. Today that is one,
 * `transaction.version`, supported 0..2
 * and finalized at 2 (LS_KAFKA_TRANSACTION_VERSION), so clients that know
 * KIP-890 part 2 (kafka-clients 4.x) run transaction version 2: EndTxn v5,
 * Produce v12 and TxnOffsetCommit v5 without AddPartitionsToTxn /
 * AddOffsetsToTxn (docs/ARCHITECTURE.md, "Transaction version 2"). Clients
 * that do not look at features (librdkafka) keep version 1 with the same
 * broker: the version is the client's choice per request, the broker serves
 * both. The level never changes, so the finalized epoch is a constant. As
 * Kafka does (KAFKA-17492), a supported range starting at 0 is left out of
 * v0-3 responses, whose older readers refuse it; the finalized level is
 * sent from v3. */
void ls_kafka_handle_api_versions(ls_kreq_t *req)
{
    const ls_kafka_api_t *self = ls_kafka_api_find(LS_KAFKA_API_API_VERSIONS);
    int16_t v = req->api_version;
    ls_kafka_ApiVersionsResponse resp;
    memset(&resp, 0, sizeof resp);
    resp.FinalizedFeaturesEpoch = -1;
    int16_t encode_version = v;
    /* A supported version's request was decoded by conn.c (ClientSoftware*
     * are kept for client telemetry matching); an unsupported one is not
     * decoded at all. */
    if (v < self->min_version || v > self->max_version) {
        resp.ErrorCode = LS_KERR_UNSUPPORTED_VERSION;
        encode_version = 0;
    } else if (v >= 3 && req->msg) {
        const ls_kafka_ApiVersionsRequest *m = req->msg;
        ls_kreq_set_client_software(req, m->ClientSoftwareName, m->ClientSoftwareVersion);
    }
    resp.NumApiKeys = ls_kafka_napis;
    resp.ApiKeys = ls_arena_alloc(req->arena, (size_t)ls_kafka_napis * sizeof *resp.ApiKeys);
    for (int i = 0; i < ls_kafka_napis; i++) {
        resp.ApiKeys[i].ApiKey = ls_kafka_apis[i].key;
        resp.ApiKeys[i].MinVersion = ls_kafka_apis[i].min_version;
        resp.ApiKeys[i].MaxVersion = ls_kafka_apis[i].max_version;
        if (ls_kafka_apis[i].key == LS_KAFKA_API_PRODUCE)
            resp.ApiKeys[i].MinVersion = 0; /* KAFKA-18659, see the top of this file */
    }
    resp.SupportedFeatures =
        ls_arena_alloc(req->arena, (size_t)ls_kafka_nfeatures * sizeof *resp.SupportedFeatures);
    resp.FinalizedFeatures =
        ls_arena_alloc(req->arena, (size_t)ls_kafka_nfeatures * sizeof *resp.FinalizedFeatures);
    for (int i = 0; i < ls_kafka_nfeatures; i++) {
        const ls_kafka_feature_t *f = &ls_kafka_features[i];
        /* a range from 0 only from v4 (KAFKA-17492, above) */
        if (f->max > 0 && (encode_version >= 4 || (encode_version == 3 && f->min > 0)))
            resp.SupportedFeatures[resp.NumSupportedFeatures++] =
                (ls_kafka_ApiVersionsResponse_SupportedFeatureKey){
                    .Name = ls_kstr_c(f->name), .MinVersion = f->min, .MaxVersion = f->max};
        if (f->level > 0 && encode_version >= 3)
            resp.FinalizedFeatures[resp.NumFinalizedFeatures++] =
                (ls_kafka_ApiVersionsResponse_FinalizedFeatureKey){.Name = ls_kstr_c(f->name),
                                                                   .MaxVersionLevel = f->level,
                                                                   .MinVersionLevel = f->level};
    }
    if (encode_version >= 3) resp.FinalizedFeaturesEpoch = LS_KAFKA_FEATURES_EPOCH;
    ls_kw_t w;
    ls_kreq_begin(req, &w);
    ls_kafka_ApiVersionsResponse_encode(&w, encode_version, &resp);
    ls_kreq_respond(req, &w);
}
