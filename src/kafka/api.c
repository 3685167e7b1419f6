/* Kafka API dispatch table, error mapping and the ApiVersions handler.
 *
 * The table is the single source of the supported version ranges: conn.c
 * checks key and version against it before any handler runs, and
 * ApiVersions is generated from it. The ranges and first flexible versions
 * are those of the message JSON specs (LS_KAFKA_<API>_{MIN,MAX,FLEX} in msg.h,
 * shared with the codecs so the two cannot drift apart).
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
#include "kafka/handlers.h"
#include "kafka/msg.h"

#include "base/check.h"
#include "base/status.h"

/* One served api: its generated description ls_kmsg_<name> and handler;
 * SERIAL: handled one at a time per connection (api.h, conn.c). */
#define API_ROW(name, pfx, fn, serial)                                                             \
    {                                                                                              \
        LS_KAFKA_API_##pfx, #name, LS_KAFKA_##pfx##_MIN, LS_KAFKA_##pfx##_MAX,                     \
            LS_KAFKA_##pfx##_FLEX, &ls_kmsg_##name, fn, serial                                     \
    }
#define API(name, pfx, fn) API_ROW(name, pfx, fn, false)
#define SERIAL(name, pfx, fn) API_ROW(name, pfx, fn, true)

const ls_kafka_api_t ls_kafka_apis[] = {
    API(Produce, PRODUCE, ls_kafka_handle_produce),
    API(Fetch, FETCH, ls_kafka_handle_fetch),
    API(ListOffsets, LIST_OFFSETS, ls_kafka_handle_list_offsets),
    API(Metadata, METADATA, ls_kafka_handle_metadata),
    SERIAL(OffsetCommit, OFFSET_COMMIT, ls_kafka_handle_offset_commit),
    SERIAL(OffsetFetch, OFFSET_FETCH, ls_kafka_handle_offset_fetch),
    API(FindCoordinator, FIND_COORDINATOR, ls_kafka_handle_find_coordinator),
    API(JoinGroup, JOIN_GROUP, ls_kafka_handle_join_group),
    API(Heartbeat, HEARTBEAT, ls_kafka_handle_heartbeat),
    SERIAL(LeaveGroup, LEAVE_GROUP, ls_kafka_handle_leave_group),
    API(SyncGroup, SYNC_GROUP, ls_kafka_handle_sync_group),
    API(DescribeGroups, DESCRIBE_GROUPS, ls_kafka_handle_describe_groups),
    API(ListGroups, LIST_GROUPS, ls_kafka_handle_list_groups),
    API(ApiVersions, API_VERSIONS, ls_kafka_handle_api_versions),
    API(CreateTopics, CREATE_TOPICS, ls_kafka_handle_create_topics),
    API(DeleteTopics, DELETE_TOPICS, ls_kafka_handle_delete_topics),
    API(DeleteRecords, DELETE_RECORDS, ls_kafka_handle_delete_records),
    SERIAL(InitProducerId, INIT_PRODUCER_ID, ls_kafka_handle_init_producer_id),
    SERIAL(AddPartitionsToTxn, ADD_PARTITIONS_TO_TXN, ls_kafka_handle_add_partitions_to_txn),
    SERIAL(AddOffsetsToTxn, ADD_OFFSETS_TO_TXN, ls_kafka_handle_add_offsets_to_txn),
    SERIAL(EndTxn, END_TXN, ls_kafka_handle_end_txn),
    SERIAL(TxnOffsetCommit, TXN_OFFSET_COMMIT, ls_kafka_handle_txn_offset_commit),
    API(DescribeAcls, DESCRIBE_ACLS, ls_kafka_handle_describe_acls),
    API(CreateAcls, CREATE_ACLS, ls_kafka_handle_create_acls),
    API(DeleteAcls, DELETE_ACLS, ls_kafka_handle_delete_acls),
    API(OffsetForLeaderEpoch, OFFSET_FOR_LEADER_EPOCH, ls_kafka_handle_offset_for_leader_epoch),
    API(DescribeConfigs, DESCRIBE_CONFIGS, ls_kafka_handle_describe_configs),
    API(AlterConfigs, ALTER_CONFIGS, ls_kafka_handle_alter_configs),
    API(CreatePartitions, CREATE_PARTITIONS, ls_kafka_handle_create_partitions),
    API(DeleteGroups, DELETE_GROUPS, ls_kafka_handle_delete_groups),
    API(IncrementalAlterConfigs, INCREMENTAL_ALTER_CONFIGS,
        ls_kafka_handle_incremental_alter_configs),
    SERIAL(OffsetDelete, OFFSET_DELETE, ls_kafka_handle_offset_delete),
    API(DescribeCluster, DESCRIBE_CLUSTER, ls_kafka_handle_describe_cluster),
    API(WriteTxnMarkers, WRITE_TXN_MARKERS, ls_kafka_handle_write_txn_markers),
    API(DescribeProducers, DESCRIBE_PRODUCERS, ls_kafka_handle_describe_producers),
    API(DescribeTransactions, DESCRIBE_TRANSACTIONS, ls_kafka_handle_describe_transactions),
    API(ListTransactions, LIST_TRANSACTIONS, ls_kafka_handle_list_transactions),
    API(SaslHandshake, SASL_HANDSHAKE, ls_kafka_handle_sasl_handshake),
    API(SaslAuthenticate, SASL_AUTHENTICATE, ls_kafka_handle_sasl_authenticate),
    API(DescribeUserScramCredentials, DESCRIBE_USER_SCRAM_CREDENTIALS,
        ls_kafka_handle_describe_user_scram_credentials),
    API(AlterUserScramCredentials, ALTER_USER_SCRAM_CREDENTIALS,
        ls_kafka_handle_alter_user_scram_credentials),
    API(DescribeClientQuotas, DESCRIBE_CLIENT_QUOTAS, ls_kafka_handle_describe_client_quotas),
    API(AlterClientQuotas, ALTER_CLIENT_QUOTAS, ls_kafka_handle_alter_client_quotas),
    /* issue 34: admin APIs of Kafka 4's tools */
    API(DescribeTopicPartitions, DESCRIBE_TOPIC_PARTITIONS,
        ls_kafka_handle_describe_topic_partitions),
    API(DescribeLogDirs, DESCRIBE_LOG_DIRS, ls_kafka_handle_describe_log_dirs),
    API(AlterReplicaLogDirs, ALTER_REPLICA_LOG_DIRS, ls_kafka_handle_alter_replica_log_dirs),
    API(ElectLeaders, ELECT_LEADERS, ls_kafka_handle_elect_leaders),
    API(AlterPartitionReassignments, ALTER_PARTITION_REASSIGNMENTS,
        ls_kafka_handle_alter_partition_reassignments),
    API(ListPartitionReassignments, LIST_PARTITION_REASSIGNMENTS,
        ls_kafka_handle_list_partition_reassignments),
    API(UpdateFeatures, UPDATE_FEATURES, ls_kafka_handle_update_features),
    API(ListConfigResources, LIST_CONFIG_RESOURCES, ls_kafka_handle_list_config_resources),
    /* KIP-714 client telemetry (h_telemetry.c) */
    API(GetTelemetrySubscriptions, GET_TELEMETRY_SUBSCRIPTIONS,
        ls_kafka_handle_get_telemetry_subscriptions),
    API(PushTelemetry, PUSH_TELEMETRY, ls_kafka_handle_push_telemetry),
    /* KIP-848 consumer groups (h_consumer_group.c) */
    API(ConsumerGroupHeartbeat, CONSUMER_GROUP_HEARTBEAT, ls_kafka_handle_consumer_group_heartbeat),
    API(ConsumerGroupDescribe, CONSUMER_GROUP_DESCRIBE, ls_kafka_handle_consumer_group_describe),
    /* KIP-932 share groups (h_consumer_group.c, h_share_fetch.c) */
    API(ShareGroupHeartbeat, SHARE_GROUP_HEARTBEAT, ls_kafka_handle_share_group_heartbeat),
    API(ShareGroupDescribe, SHARE_GROUP_DESCRIBE, ls_kafka_handle_share_group_describe),
    API(ShareFetch, SHARE_FETCH, ls_kafka_handle_share_fetch),
    API(ShareAcknowledge, SHARE_ACKNOWLEDGE, ls_kafka_handle_share_acknowledge),
    API(DescribeShareGroupOffsets, DESCRIBE_SHARE_GROUP_OFFSETS,
        ls_kafka_handle_describe_share_group_offsets),
    API(AlterShareGroupOffsets, ALTER_SHARE_GROUP_OFFSETS,
        ls_kafka_handle_alter_share_group_offsets),
    API(DeleteShareGroupOffsets, DELETE_SHARE_GROUP_OFFSETS,
        ls_kafka_handle_delete_share_group_offsets),
    API(StreamsGroupHeartbeat, STREAMS_GROUP_HEARTBEAT, ls_kafka_handle_streams_group_heartbeat),
    API(StreamsGroupDescribe, STREAMS_GROUP_DESCRIBE, ls_kafka_handle_streams_group_describe),
};
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
