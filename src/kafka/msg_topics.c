/* Topic administration messages.
 * CreateTopics (key 19), v2-7, flexible from v5 (CreateTopicsRequest/Response.json):
 *  - v5 returns NumPartitions, ReplicationFactor, Configs and the tagged
 *    TopicConfigErrorCode (tag 0) per topic (KIP-525); v7 returns TopicId.
 * DeleteTopics (key 20), v1-6, flexible from v4 (DeleteTopicsRequest/Response.json):
 *  - v5 adds ErrorMessage; v6 replaces TopicNames by Topics {Name?, TopicId}.
 * CreatePartitions (key 37), v0-3, flexible from v2
 *  (CreatePartitionsRequest/Response.json): v1 and v3 change only semantics. */
#include "kafka/msg.h"

#define CFLEX(v) ((v) >= LS_KAFKA_CREATE_TOPICS_FLEX)
#define DFLEX(v) ((v) >= LS_KAFKA_DELETE_TOPICS_FLEX)
#define PFLEX(v) ((v) >= LS_KAFKA_CREATE_PARTITIONS_FLEX)

/* ------------------------------------------------------------ CreateTopics */

int ls_kafka_CreateTopicsRequest_decode(ls_kr_t *r, int16_t v, ls_arena_t *a,
                                        ls_kafka_CreateTopicsRequest *m)
{
    memset(m, 0, sizeof *m);
    if (!ls_kmsg_version_ok(r, v, LS_KAFKA_CREATE_TOPICS_MIN, LS_KAFKA_CREATE_TOPICS_MAX))
        return -1;
    bool f = CFLEX(v);
    m->NumTopics = ls_kmsg_arrlen(r, f, 1 + 4 + 2 + 1 + 1, false, "Topics");
    m->Topics = ls_kmsg_alloc(a, m->NumTopics, sizeof *m->Topics);
    for (int32_t i = 0; i < m->NumTopics && !r->err; i++) {
        ls_kafka_CreateTopicsRequest_CreatableTopic *t = &m->Topics[i];
        t->Name = ls_kmsg_str(r, f, "Topics.Name");
        t->NumPartitions = ls_kr_i32(r);
        t->ReplicationFactor = ls_kr_i16(r);
        t->NumAssignments = ls_kmsg_arrlen(r, f, 4 + 1, false, "Assignments");
        t->Assignments = ls_kmsg_alloc(a, t->NumAssignments, sizeof *t->Assignments);
        for (int32_t j = 0; j < t->NumAssignments && !r->err; j++) {
            t->Assignments[j].PartitionIndex = ls_kr_i32(r);
            t->Assignments[j].BrokerIds =
                ls_kmsg_i32s(r, f, a, false, &t->Assignments[j].NumBrokerIds, "BrokerIds");
            ls_kr_tags(r, f);
        }
        t->NumConfigs = ls_kmsg_arrlen(r, f, 2, false, "Configs");
        t->Configs = ls_kmsg_alloc(a, t->NumConfigs, sizeof *t->Configs);
        for (int32_t j = 0; j < t->NumConfigs && !r->err; j++) {
            t->Configs[j].Name = ls_kmsg_str(r, f, "Configs.Name");
            t->Configs[j].Value = ls_kr_str(r, f);
            ls_kr_tags(r, f);
        }
        ls_kr_tags(r, f);
    }
    m->TimeoutMs = ls_kr_i32(r);
    m->ValidateOnly = ls_kr_bool(r);
    ls_kr_tags(r, f);
    return r->err ? -1 : 0;
}

void ls_kafka_CreateTopicsRequest_encode(ls_kw_t *w, int16_t v,
                                         const ls_kafka_CreateTopicsRequest *m)
{
    bool f = CFLEX(v);
    ls_kw_arrlen(w, f, m->NumTopics);
    for (int32_t i = 0; i < m->NumTopics; i++) {
        const ls_kafka_CreateTopicsRequest_CreatableTopic *t = &m->Topics[i];
        ls_kmsg_wstr_nn(w, f, t->Name);
        ls_kw_i32(w, t->NumPartitions);
        ls_kw_i16(w, t->ReplicationFactor);
        ls_kw_arrlen(w, f, t->NumAssignments);
        for (int32_t j = 0; j < t->NumAssignments; j++) {
            ls_kw_i32(w, t->Assignments[j].PartitionIndex);
            ls_kmsg_wi32s(w, f, t->Assignments[j].BrokerIds, t->Assignments[j].NumBrokerIds);
            ls_kw_tags(w, f);
        }
        ls_kw_arrlen(w, f, t->NumConfigs);
        for (int32_t j = 0; j < t->NumConfigs; j++) {
            ls_kmsg_wstr_nn(w, f, t->Configs[j].Name);
            ls_kmsg_wstr(w, f, t->Configs[j].Value);
            ls_kw_tags(w, f);
        }
        ls_kw_tags(w, f);
    }
    ls_kw_i32(w, m->TimeoutMs);
    ls_kw_bool(w, m->ValidateOnly);
    ls_kw_tags(w, f);
}

int ls_kafka_CreateTopicsResponse_decode(ls_kr_t *r, int16_t v, ls_arena_t *a,
                                         ls_kafka_CreateTopicsResponse *m)
{
    memset(m, 0, sizeof *m);
    if (!ls_kmsg_version_ok(r, v, LS_KAFKA_CREATE_TOPICS_MIN, LS_KAFKA_CREATE_TOPICS_MAX))
        return -1;
    bool f = CFLEX(v);
    m->ThrottleTimeMs = ls_kr_i32(r);
    m->NumTopics = ls_kmsg_arrlen(r, f, 1 + 2 + 1, false, "Topics");
    m->Topics = ls_kmsg_alloc(a, m->NumTopics, sizeof *m->Topics);
    for (int32_t i = 0; i < m->NumTopics && !r->err; i++) {
        ls_kafka_CreateTopicsResponse_CreatableTopicResult *t = &m->Topics[i];
        t->NumPartitions = -1;
        t->ReplicationFactor = -1;
        t->NumConfigs = -1;
        t->Name = ls_kmsg_str(r, f, "Topics.Name");
        if (v >= 7)
            ls_kr_uuid(r, &t->TopicId);
        t->ErrorCode = ls_kr_i16(r);
        t->ErrorMessage = ls_kr_str(r, f);
        if (v >= 5) {
            t->NumPartitions = ls_kr_i32(r);
            t->ReplicationFactor = ls_kr_i16(r);
            t->NumConfigs = ls_kmsg_arrlen(r, f, 1 + 1 + 1 + 1 + 1 + 1, true, "Configs");
            t->Configs = ls_kmsg_alloc(a, t->NumConfigs, sizeof *t->Configs);
            for (int32_t j = 0; j < t->NumConfigs && !r->err; j++) {
                ls_kafka_CreateTopicsResponse_CreatableTopicConfigs *c = &t->Configs[j];
                c->Name = ls_kmsg_str(r, f, "Configs.Name");
                c->Value = ls_kr_str(r, f);
                c->ReadOnly = ls_kr_bool(r);
                c->ConfigSource = ls_kr_i8(r);
                c->IsSensitive = ls_kr_bool(r);
                ls_kr_tags(r, f);
            }
        }
        uint32_t nt = ls_kmsg_tags_begin(r, f);
        for (uint32_t k = 0; k < nt && !r->err; k++) {
            ls_kr_t sub;
            uint32_t tag = ls_kmsg_tag_next(r, &sub);
            if (tag == 0)
                t->TopicConfigErrorCode = ls_kr_i16(&sub);
            ls_kmsg_tag_end(r, &sub);
        }
    }
    ls_kr_tags(r, f);
    return r->err ? -1 : 0;
}

void ls_kafka_CreateTopicsResponse_encode(ls_kw_t *w, int16_t v,
                                          const ls_kafka_CreateTopicsResponse *m)
{
    bool f = CFLEX(v);
    ls_kw_i32(w, m->ThrottleTimeMs);
    ls_kw_arrlen(w, f, m->NumTopics);
    for (int32_t i = 0; i < m->NumTopics; i++) {
        const ls_kafka_CreateTopicsResponse_CreatableTopicResult *t = &m->Topics[i];
        ls_kmsg_wstr_nn(w, f, t->Name);
        if (v >= 7)
            ls_kw_uuid(w, &t->TopicId);
        ls_kw_i16(w, t->ErrorCode);
        ls_kmsg_wstr(w, f, t->ErrorMessage);
        if (v >= 5) {
            ls_kw_i32(w, t->NumPartitions);
            ls_kw_i16(w, t->ReplicationFactor);
            ls_kw_arrlen(w, f, t->NumConfigs);
            for (int32_t j = 0; j < t->NumConfigs; j++) {
                const ls_kafka_CreateTopicsResponse_CreatableTopicConfigs *c = &t->Configs[j];
                ls_kmsg_wstr_nn(w, f, c->Name);
                ls_kmsg_wstr(w, f, c->Value);
                ls_kw_bool(w, c->ReadOnly);
                ls_kw_i8(w, c->ConfigSource);
                ls_kw_bool(w, c->IsSensitive);
                ls_kw_tags(w, f);
            }
        }
        if (f) {
            bool tce = t->TopicConfigErrorCode != 0;
            ls_kw_uvarint(w, tce ? 1 : 0);
            if (tce) {
                ls_kw_t t0;
                ls_kw_init(&t0);
                ls_kw_i16(&t0, t->TopicConfigErrorCode);
                ls_kmsg_wtag(w, 0, &t0);
                ls_kw_free(&t0);
            }
        }
    }
    ls_kw_tags(w, f);
}

/* ------------------------------------------------------------ DeleteTopics */

int ls_kafka_DeleteTopicsRequest_decode(ls_kr_t *r, int16_t v, ls_arena_t *a,
                                        ls_kafka_DeleteTopicsRequest *m)
{
    memset(m, 0, sizeof *m);
    if (!ls_kmsg_version_ok(r, v, LS_KAFKA_DELETE_TOPICS_MIN, LS_KAFKA_DELETE_TOPICS_MAX))
        return -1;
    bool f = DFLEX(v);
    if (v >= 6) {
        m->NumTopics = ls_kmsg_arrlen(r, f, 1 + 16 + 1, false, "Topics");
        m->Topics = ls_kmsg_alloc(a, m->NumTopics, sizeof *m->Topics);
        for (int32_t i = 0; i < m->NumTopics && !r->err; i++) {
            m->Topics[i].Name = ls_kr_str(r, f);
            ls_kr_uuid(r, &m->Topics[i].TopicId);
            ls_kr_tags(r, f);
        }
    } else {
        m->TopicNames = ls_kmsg_strs(r, f, a, false, &m->NumTopicNames, "TopicNames");
    }
    m->TimeoutMs = ls_kr_i32(r);
    ls_kr_tags(r, f);
    return r->err ? -1 : 0;
}

void ls_kafka_DeleteTopicsRequest_encode(ls_kw_t *w, int16_t v,
                                         const ls_kafka_DeleteTopicsRequest *m)
{
    bool f = DFLEX(v);
    if (v >= 6) {
        ls_kw_arrlen(w, f, m->NumTopics);
        for (int32_t i = 0; i < m->NumTopics; i++) {
            ls_kmsg_wstr(w, f, m->Topics[i].Name);
            ls_kw_uuid(w, &m->Topics[i].TopicId);
            ls_kw_tags(w, f);
        }
    } else {
        ls_kmsg_wstrs(w, f, m->TopicNames, m->NumTopicNames);
    }
    ls_kw_i32(w, m->TimeoutMs);
    ls_kw_tags(w, f);
}

int ls_kafka_DeleteTopicsResponse_decode(ls_kr_t *r, int16_t v, ls_arena_t *a,
                                         ls_kafka_DeleteTopicsResponse *m)
{
    memset(m, 0, sizeof *m);
    if (!ls_kmsg_version_ok(r, v, LS_KAFKA_DELETE_TOPICS_MIN, LS_KAFKA_DELETE_TOPICS_MAX))
        return -1;
    bool f = DFLEX(v);
    m->ThrottleTimeMs = ls_kr_i32(r);
    m->NumResponses = ls_kmsg_arrlen(r, f, 1 + 2, false, "Responses");
    m->Responses = ls_kmsg_alloc(a, m->NumResponses, sizeof *m->Responses);
    for (int32_t i = 0; i < m->NumResponses && !r->err; i++) {
        ls_kafka_DeleteTopicsResponse_DeletableTopicResult *t = &m->Responses[i];
        t->Name = v >= 6 ? ls_kr_str(r, f) : ls_kmsg_str(r, f, "Responses.Name");
        if (v >= 6)
            ls_kr_uuid(r, &t->TopicId);
        t->ErrorCode = ls_kr_i16(r);
        t->ErrorMessage = v >= 5 ? ls_kr_str(r, f) : ls_kstr_null();
        ls_kr_tags(r, f);
    }
    ls_kr_tags(r, f);
    return r->err ? -1 : 0;
}

void ls_kafka_DeleteTopicsResponse_encode(ls_kw_t *w, int16_t v,
                                          const ls_kafka_DeleteTopicsResponse *m)
{
    bool f = DFLEX(v);
    ls_kw_i32(w, m->ThrottleTimeMs);
    ls_kw_arrlen(w, f, m->NumResponses);
    for (int32_t i = 0; i < m->NumResponses; i++) {
        const ls_kafka_DeleteTopicsResponse_DeletableTopicResult *t = &m->Responses[i];
        if (v >= 6) {
            ls_kmsg_wstr(w, f, t->Name);
            ls_kw_uuid(w, &t->TopicId);
        } else {
            ls_kmsg_wstr_nn(w, f, t->Name);
        }
        ls_kw_i16(w, t->ErrorCode);
        if (v >= 5)
            ls_kmsg_wstr(w, f, t->ErrorMessage);
        ls_kw_tags(w, f);
    }
    ls_kw_tags(w, f);
}

/* -------------------------------------------------------- CreatePartitions */

int ls_kafka_CreatePartitionsRequest_decode(ls_kr_t *r, int16_t v, ls_arena_t *a,
                                            ls_kafka_CreatePartitionsRequest *m)
{
    memset(m, 0, sizeof *m);
    if (!ls_kmsg_version_ok(r, v, LS_KAFKA_CREATE_PARTITIONS_MIN, LS_KAFKA_CREATE_PARTITIONS_MAX))
        return -1;
    bool f = PFLEX(v);
    m->NumTopics = ls_kmsg_arrlen(r, f, 1 + 4 + 1, false, "Topics");
    m->Topics = ls_kmsg_alloc(a, m->NumTopics, sizeof *m->Topics);
    for (int32_t i = 0; i < m->NumTopics && !r->err; i++) {
        ls_kafka_CreatePartitionsRequest_CreatePartitionsTopic *t = &m->Topics[i];
        t->Name = ls_kmsg_str(r, f, "Topics.Name");
        t->Count = ls_kr_i32(r);
        t->NumAssignments = ls_kmsg_arrlen(r, f, 1, true, "Assignments");
        t->Assignments = ls_kmsg_alloc(a, t->NumAssignments, sizeof *t->Assignments);
        for (int32_t j = 0; j < t->NumAssignments && !r->err; j++) {
            t->Assignments[j].BrokerIds =
                ls_kmsg_i32s(r, f, a, false, &t->Assignments[j].NumBrokerIds, "BrokerIds");
            ls_kr_tags(r, f);
        }
        ls_kr_tags(r, f);
    }
    m->TimeoutMs = ls_kr_i32(r);
    m->ValidateOnly = ls_kr_bool(r);
    ls_kr_tags(r, f);
    return r->err ? -1 : 0;
}

void ls_kafka_CreatePartitionsRequest_encode(ls_kw_t *w, int16_t v,
                                             const ls_kafka_CreatePartitionsRequest *m)
{
    bool f = PFLEX(v);
    ls_kw_arrlen(w, f, m->NumTopics);
    for (int32_t i = 0; i < m->NumTopics; i++) {
        const ls_kafka_CreatePartitionsRequest_CreatePartitionsTopic *t = &m->Topics[i];
        ls_kmsg_wstr_nn(w, f, t->Name);
        ls_kw_i32(w, t->Count);
        ls_kw_arrlen(w, f, t->NumAssignments);
        for (int32_t j = 0; j < t->NumAssignments; j++) {
            ls_kmsg_wi32s(w, f, t->Assignments[j].BrokerIds, t->Assignments[j].NumBrokerIds);
            ls_kw_tags(w, f);
        }
        ls_kw_tags(w, f);
    }
    ls_kw_i32(w, m->TimeoutMs);
    ls_kw_bool(w, m->ValidateOnly);
    ls_kw_tags(w, f);
}

int ls_kafka_CreatePartitionsResponse_decode(ls_kr_t *r, int16_t v, ls_arena_t *a,
                                             ls_kafka_CreatePartitionsResponse *m)
{
    memset(m, 0, sizeof *m);
    if (!ls_kmsg_version_ok(r, v, LS_KAFKA_CREATE_PARTITIONS_MIN, LS_KAFKA_CREATE_PARTITIONS_MAX))
        return -1;
    bool f = PFLEX(v);
    m->ThrottleTimeMs = ls_kr_i32(r);
    m->NumResults = ls_kmsg_arrlen(r, f, 1 + 2 + 1, false, "Results");
    m->Results = ls_kmsg_alloc(a, m->NumResults, sizeof *m->Results);
    for (int32_t i = 0; i < m->NumResults && !r->err; i++) {
        m->Results[i].Name = ls_kmsg_str(r, f, "Results.Name");
        m->Results[i].ErrorCode = ls_kr_i16(r);
        m->Results[i].ErrorMessage = ls_kr_str(r, f);
        ls_kr_tags(r, f);
    }
    ls_kr_tags(r, f);
    return r->err ? -1 : 0;
}

void ls_kafka_CreatePartitionsResponse_encode(ls_kw_t *w, int16_t v,
                                              const ls_kafka_CreatePartitionsResponse *m)
{
    bool f = PFLEX(v);
    ls_kw_i32(w, m->ThrottleTimeMs);
    ls_kw_arrlen(w, f, m->NumResults);
    for (int32_t i = 0; i < m->NumResults; i++) {
        ls_kmsg_wstr_nn(w, f, m->Results[i].Name);
        ls_kw_i16(w, m->Results[i].ErrorCode);
        ls_kmsg_wstr(w, f, m->Results[i].ErrorMessage);
        ls_kw_tags(w, f);
    }
    ls_kw_tags(w, f);
}
