/* Metadata (API key 3), versions 0-12, flexible from v9; and DescribeCluster
 * (API key 60), versions 0-1, always flexible.
 * Spec: MetadataRequest.json / MetadataResponse.json:
 *  - v0: an empty Topics array means all topics; v1+: null means all, empty none;
 *  - v1 Rack, ControllerId, IsInternal; v2 ClusterId; v3 ThrottleTimeMs;
 *  - v4 AllowAutoTopicCreation; v5 OfflineReplicas; v7 LeaderEpoch;
 *  - v8 authorized operations (cluster-level only through v10);
 *  - v9 flexible; v10 TopicId (request and response); v12 topic Name nullable.
 * DescribeClusterRequest/Response.json: v1 adds EndpointType. */
#include "kafka/msg.h"

#define MFLEX(v) ((v) >= LS_KAFKA_METADATA_FLEX)

int ls_kafka_MetadataRequest_decode(ls_kr_t *r, int16_t v, ls_arena_t *a,
                                    ls_kafka_MetadataRequest *m)
{
    memset(m, 0, sizeof *m);
    m->AllowAutoTopicCreation = true;
    if (!ls_kmsg_version_ok(r, v, LS_KAFKA_METADATA_MIN, LS_KAFKA_METADATA_MAX))
        return -1;
    bool f = MFLEX(v);
    m->NumTopics = ls_kmsg_arrlen(r, f, v >= 10 ? 17 : (f ? 1 : 2), v >= 1, "Topics");
    m->Topics = ls_kmsg_alloc(a, m->NumTopics, sizeof *m->Topics);
    for (int32_t i = 0; i < m->NumTopics && !r->err; i++) {
        ls_kafka_MetadataRequest_MetadataRequestTopic *t = &m->Topics[i];
        if (v >= 10) {
            ls_kr_uuid(r, &t->TopicId);
            t->Name = ls_kr_str(r, f);
        } else {
            t->Name = ls_kmsg_str(r, f, "Topics.Name");
        }
        ls_kr_tags(r, f);
    }
    if (v >= 4)
        m->AllowAutoTopicCreation = ls_kr_bool(r);
    if (v >= 8 && v <= 10)
        m->IncludeClusterAuthorizedOperations = ls_kr_bool(r);
    if (v >= 8)
        m->IncludeTopicAuthorizedOperations = ls_kr_bool(r);
    ls_kr_tags(r, f);
    return r->err ? -1 : 0;
}

void ls_kafka_MetadataRequest_encode(ls_kw_t *w, int16_t v, const ls_kafka_MetadataRequest *m)
{
    bool f = MFLEX(v);
    /* v0 cannot say null: "all topics" is the empty array there. */
    ls_kw_arrlen(w, f, v == 0 && m->NumTopics < 0 ? 0 : m->NumTopics);
    for (int32_t i = 0; i < m->NumTopics; i++) {
        const ls_kafka_MetadataRequest_MetadataRequestTopic *t = &m->Topics[i];
        if (v >= 10) {
            ls_kw_uuid(w, &t->TopicId);
            ls_kmsg_wstr(w, f, t->Name);
        } else {
            ls_kmsg_wstr_nn(w, f, t->Name);
        }
        ls_kw_tags(w, f);
    }
    if (v >= 4)
        ls_kw_bool(w, m->AllowAutoTopicCreation);
    if (v >= 8 && v <= 10)
        ls_kw_bool(w, m->IncludeClusterAuthorizedOperations);
    if (v >= 8)
        ls_kw_bool(w, m->IncludeTopicAuthorizedOperations);
    ls_kw_tags(w, f);
}

int ls_kafka_MetadataResponse_decode(ls_kr_t *r, int16_t v, ls_arena_t *a,
                                     ls_kafka_MetadataResponse *m)
{
    memset(m, 0, sizeof *m);
    m->ClusterId = ls_kstr_null();
    m->ControllerId = -1;
    m->ClusterAuthorizedOperations = INT32_MIN;
    if (!ls_kmsg_version_ok(r, v, LS_KAFKA_METADATA_MIN, LS_KAFKA_METADATA_MAX))
        return -1;
    bool f = MFLEX(v);
    if (v >= 3)
        m->ThrottleTimeMs = ls_kr_i32(r);
    m->NumBrokers = ls_kmsg_arrlen(r, f, 4 + 1 + 4, false, "Brokers");
    m->Brokers = ls_kmsg_alloc(a, m->NumBrokers, sizeof *m->Brokers);
    for (int32_t i = 0; i < m->NumBrokers && !r->err; i++) {
        ls_kafka_MetadataResponse_MetadataResponseBroker *b = &m->Brokers[i];
        b->NodeId = ls_kr_i32(r);
        b->Host = ls_kmsg_str(r, f, "Brokers.Host");
        b->Port = ls_kr_i32(r);
        b->Rack = v >= 1 ? ls_kr_str(r, f) : ls_kstr_null();
        ls_kr_tags(r, f);
    }
    if (v >= 2)
        m->ClusterId = ls_kr_str(r, f);
    if (v >= 1)
        m->ControllerId = ls_kr_i32(r);
    m->NumTopics = ls_kmsg_arrlen(r, f, 2 + 1 + 1, false, "Topics");
    m->Topics = ls_kmsg_alloc(a, m->NumTopics, sizeof *m->Topics);
    for (int32_t i = 0; i < m->NumTopics && !r->err; i++) {
        ls_kafka_MetadataResponse_MetadataResponseTopic *t = &m->Topics[i];
        t->TopicAuthorizedOperations = INT32_MIN;
        t->ErrorCode = ls_kr_i16(r);
        t->Name = v >= 12 ? ls_kr_str(r, f) : ls_kmsg_str(r, f, "Topics.Name");
        if (v >= 10)
            ls_kr_uuid(r, &t->TopicId);
        if (v >= 1)
            t->IsInternal = ls_kr_bool(r);
        t->NumPartitions = ls_kmsg_arrlen(r, f, 2 + 4 + 4 + 1 + 1, false, "Topics.Partitions");
        t->Partitions = ls_kmsg_alloc(a, t->NumPartitions, sizeof *t->Partitions);
        for (int32_t j = 0; j < t->NumPartitions && !r->err; j++) {
            ls_kafka_MetadataResponse_MetadataResponsePartition *p = &t->Partitions[j];
            p->ErrorCode = ls_kr_i16(r);
            p->PartitionIndex = ls_kr_i32(r);
            p->LeaderId = ls_kr_i32(r);
            p->LeaderEpoch = v >= 7 ? ls_kr_i32(r) : -1;
            p->ReplicaNodes = ls_kmsg_i32s(r, f, a, false, &p->NumReplicaNodes, "ReplicaNodes");
            p->IsrNodes = ls_kmsg_i32s(r, f, a, false, &p->NumIsrNodes, "IsrNodes");
            if (v >= 5)
                p->OfflineReplicas =
                    ls_kmsg_i32s(r, f, a, false, &p->NumOfflineReplicas, "OfflineReplicas");
            ls_kr_tags(r, f);
        }
        if (v >= 8)
            t->TopicAuthorizedOperations = ls_kr_i32(r);
        ls_kr_tags(r, f);
    }
    if (v >= 8 && v <= 10)
        m->ClusterAuthorizedOperations = ls_kr_i32(r);
    ls_kr_tags(r, f);
    return r->err ? -1 : 0;
}

void ls_kafka_MetadataResponse_encode(ls_kw_t *w, int16_t v, const ls_kafka_MetadataResponse *m)
{
    bool f = MFLEX(v);
    if (v >= 3)
        ls_kw_i32(w, m->ThrottleTimeMs);
    ls_kw_arrlen(w, f, m->NumBrokers);
    for (int32_t i = 0; i < m->NumBrokers; i++) {
        const ls_kafka_MetadataResponse_MetadataResponseBroker *b = &m->Brokers[i];
        ls_kw_i32(w, b->NodeId);
        ls_kmsg_wstr_nn(w, f, b->Host);
        ls_kw_i32(w, b->Port);
        if (v >= 1)
            ls_kmsg_wstr(w, f, b->Rack);
        ls_kw_tags(w, f);
    }
    if (v >= 2)
        ls_kmsg_wstr(w, f, m->ClusterId);
    if (v >= 1)
        ls_kw_i32(w, m->ControllerId);
    ls_kw_arrlen(w, f, m->NumTopics);
    for (int32_t i = 0; i < m->NumTopics; i++) {
        const ls_kafka_MetadataResponse_MetadataResponseTopic *t = &m->Topics[i];
        ls_kw_i16(w, t->ErrorCode);
        if (v >= 12)
            ls_kmsg_wstr(w, f, t->Name);
        else
            ls_kmsg_wstr_nn(w, f, t->Name);
        if (v >= 10)
            ls_kw_uuid(w, &t->TopicId);
        if (v >= 1)
            ls_kw_bool(w, t->IsInternal);
        ls_kw_arrlen(w, f, t->NumPartitions);
        for (int32_t j = 0; j < t->NumPartitions; j++) {
            const ls_kafka_MetadataResponse_MetadataResponsePartition *p = &t->Partitions[j];
            ls_kw_i16(w, p->ErrorCode);
            ls_kw_i32(w, p->PartitionIndex);
            ls_kw_i32(w, p->LeaderId);
            if (v >= 7)
                ls_kw_i32(w, p->LeaderEpoch);
            ls_kmsg_wi32s(w, f, p->ReplicaNodes, p->NumReplicaNodes);
            ls_kmsg_wi32s(w, f, p->IsrNodes, p->NumIsrNodes);
            if (v >= 5)
                ls_kmsg_wi32s(w, f, p->OfflineReplicas, p->NumOfflineReplicas);
            ls_kw_tags(w, f);
        }
        if (v >= 8)
            ls_kw_i32(w, t->TopicAuthorizedOperations);
        ls_kw_tags(w, f);
    }
    if (v >= 8 && v <= 10)
        ls_kw_i32(w, m->ClusterAuthorizedOperations);
    ls_kw_tags(w, f);
}

/* ------------------------------------------------------- DescribeCluster */

int ls_kafka_DescribeClusterRequest_decode(ls_kr_t *r, int16_t v, ls_arena_t *a,
                                           ls_kafka_DescribeClusterRequest *m)
{
    (void)a;
    memset(m, 0, sizeof *m);
    m->EndpointType = 1;
    if (!ls_kmsg_version_ok(r, v, LS_KAFKA_DESCRIBE_CLUSTER_MIN, LS_KAFKA_DESCRIBE_CLUSTER_MAX))
        return -1;
    m->IncludeClusterAuthorizedOperations = ls_kr_bool(r);
    if (v >= 1)
        m->EndpointType = ls_kr_i8(r);
    ls_kr_tags(r, true);
    return r->err ? -1 : 0;
}

void ls_kafka_DescribeClusterRequest_encode(ls_kw_t *w, int16_t v,
                                            const ls_kafka_DescribeClusterRequest *m)
{
    ls_kw_bool(w, m->IncludeClusterAuthorizedOperations);
    if (v >= 1)
        ls_kw_i8(w, m->EndpointType);
    ls_kw_tags(w, true);
}

int ls_kafka_DescribeClusterResponse_decode(ls_kr_t *r, int16_t v, ls_arena_t *a,
                                            ls_kafka_DescribeClusterResponse *m)
{
    memset(m, 0, sizeof *m);
    m->EndpointType = 1;
    if (!ls_kmsg_version_ok(r, v, LS_KAFKA_DESCRIBE_CLUSTER_MIN, LS_KAFKA_DESCRIBE_CLUSTER_MAX))
        return -1;
    m->ThrottleTimeMs = ls_kr_i32(r);
    m->ErrorCode = ls_kr_i16(r);
    m->ErrorMessage = ls_kr_str(r, true);
    if (v >= 1)
        m->EndpointType = ls_kr_i8(r);
    m->ClusterId = ls_kmsg_str(r, true, "ClusterId");
    m->ControllerId = ls_kr_i32(r);
    m->NumBrokers = ls_kmsg_arrlen(r, true, 4 + 1 + 4 + 1 + 1, false, "Brokers");
    m->Brokers = ls_kmsg_alloc(a, m->NumBrokers, sizeof *m->Brokers);
    for (int32_t i = 0; i < m->NumBrokers && !r->err; i++) {
        ls_kafka_DescribeClusterResponse_DescribeClusterBroker *b = &m->Brokers[i];
        b->BrokerId = ls_kr_i32(r);
        b->Host = ls_kmsg_str(r, true, "Brokers.Host");
        b->Port = ls_kr_i32(r);
        b->Rack = ls_kr_str(r, true);
        ls_kr_tags(r, true);
    }
    m->ClusterAuthorizedOperations = ls_kr_i32(r);
    ls_kr_tags(r, true);
    return r->err ? -1 : 0;
}

void ls_kafka_DescribeClusterResponse_encode(ls_kw_t *w, int16_t v,
                                             const ls_kafka_DescribeClusterResponse *m)
{
    ls_kw_i32(w, m->ThrottleTimeMs);
    ls_kw_i16(w, m->ErrorCode);
    ls_kmsg_wstr(w, true, m->ErrorMessage);
    if (v >= 1)
        ls_kw_i8(w, m->EndpointType);
    ls_kmsg_wstr_nn(w, true, m->ClusterId);
    ls_kw_i32(w, m->ControllerId);
    ls_kw_arrlen(w, true, m->NumBrokers);
    for (int32_t i = 0; i < m->NumBrokers; i++) {
        const ls_kafka_DescribeClusterResponse_DescribeClusterBroker *b = &m->Brokers[i];
        ls_kw_i32(w, b->BrokerId);
        ls_kmsg_wstr_nn(w, true, b->Host);
        ls_kw_i32(w, b->Port);
        ls_kmsg_wstr(w, true, b->Rack);
        ls_kw_tags(w, true);
    }
    ls_kw_i32(w, m->ClusterAuthorizedOperations);
    ls_kw_tags(w, true);
}
