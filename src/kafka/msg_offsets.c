/* ListOffsets (API key 2), versions 1-9, flexible from v6; and
 * OffsetForLeaderEpoch (API key 23), versions 2-4, flexible from v4.
 * Spec: ListOffsetsRequest/Response.json:
 *  - v1 drops MaxNumOffsets/OldStyleOffsets (single offset + timestamp);
 *  - v2 IsolationLevel and ThrottleTimeMs; v4 CurrentLeaderEpoch/LeaderEpoch;
 *  - v6 flexible; v7 MAX_TIMESTAMP (-3); v8 EARLIEST_LOCAL (-4); v9 LATEST_TIERED (-5).
 * OffsetForLeaderEpochRequest/Response.json:
 *  - v2 CurrentLeaderEpoch and ThrottleTimeMs; v3 ReplicaId (default -2); v4 flexible. */
#include "kafka/msg.h"

#define LFLEX(v) ((v) >= LS_KAFKA_LIST_OFFSETS_FLEX)
#define OFLEX(v) ((v) >= LS_KAFKA_OFFSET_FOR_LEADER_EPOCH_FLEX)

int ls_kafka_ListOffsetsRequest_decode(ls_kr_t *r, int16_t v, ls_arena_t *a,
                                       ls_kafka_ListOffsetsRequest *m)
{
    memset(m, 0, sizeof *m);
    if (!ls_kmsg_version_ok(r, v, LS_KAFKA_LIST_OFFSETS_MIN, LS_KAFKA_LIST_OFFSETS_MAX))
        return -1;
    bool f = LFLEX(v);
    m->ReplicaId = ls_kr_i32(r);
    if (v >= 2)
        m->IsolationLevel = ls_kr_i8(r);
    m->NumTopics = ls_kmsg_arrlen(r, f, 2, false, "Topics");
    m->Topics = ls_kmsg_alloc(a, m->NumTopics, sizeof *m->Topics);
    for (int32_t i = 0; i < m->NumTopics && !r->err; i++) {
        ls_kafka_ListOffsetsRequest_ListOffsetsTopic *t = &m->Topics[i];
        t->Name = ls_kmsg_str(r, f, "Topics.Name");
        t->NumPartitions = ls_kmsg_arrlen(r, f, 12, false, "Topics.Partitions");
        t->Partitions = ls_kmsg_alloc(a, t->NumPartitions, sizeof *t->Partitions);
        for (int32_t j = 0; j < t->NumPartitions && !r->err; j++) {
            ls_kafka_ListOffsetsRequest_ListOffsetsPartition *p = &t->Partitions[j];
            p->PartitionIndex = ls_kr_i32(r);
            p->CurrentLeaderEpoch = v >= 4 ? ls_kr_i32(r) : -1;
            p->Timestamp = ls_kr_i64(r);
            ls_kr_tags(r, f);
        }
        ls_kr_tags(r, f);
    }
    ls_kr_tags(r, f);
    return r->err ? -1 : 0;
}

void ls_kafka_ListOffsetsRequest_encode(ls_kw_t *w, int16_t v,
                                        const ls_kafka_ListOffsetsRequest *m)
{
    bool f = LFLEX(v);
    ls_kw_i32(w, m->ReplicaId);
    if (v >= 2)
        ls_kw_i8(w, m->IsolationLevel);
    ls_kw_arrlen(w, f, m->NumTopics);
    for (int32_t i = 0; i < m->NumTopics; i++) {
        const ls_kafka_ListOffsetsRequest_ListOffsetsTopic *t = &m->Topics[i];
        ls_kmsg_wstr_nn(w, f, t->Name);
        ls_kw_arrlen(w, f, t->NumPartitions);
        for (int32_t j = 0; j < t->NumPartitions; j++) {
            const ls_kafka_ListOffsetsRequest_ListOffsetsPartition *p = &t->Partitions[j];
            ls_kw_i32(w, p->PartitionIndex);
            if (v >= 4)
                ls_kw_i32(w, p->CurrentLeaderEpoch);
            ls_kw_i64(w, p->Timestamp);
            ls_kw_tags(w, f);
        }
        ls_kw_tags(w, f);
    }
    ls_kw_tags(w, f);
}

int ls_kafka_ListOffsetsResponse_decode(ls_kr_t *r, int16_t v, ls_arena_t *a,
                                        ls_kafka_ListOffsetsResponse *m)
{
    memset(m, 0, sizeof *m);
    if (!ls_kmsg_version_ok(r, v, LS_KAFKA_LIST_OFFSETS_MIN, LS_KAFKA_LIST_OFFSETS_MAX))
        return -1;
    bool f = LFLEX(v);
    if (v >= 2)
        m->ThrottleTimeMs = ls_kr_i32(r);
    m->NumTopics = ls_kmsg_arrlen(r, f, 2, false, "Topics");
    m->Topics = ls_kmsg_alloc(a, m->NumTopics, sizeof *m->Topics);
    for (int32_t i = 0; i < m->NumTopics && !r->err; i++) {
        ls_kafka_ListOffsetsResponse_ListOffsetsTopicResponse *t = &m->Topics[i];
        t->Name = ls_kmsg_str(r, f, "Topics.Name");
        t->NumPartitions = ls_kmsg_arrlen(r, f, 4 + 2 + 8 + 8, false, "Topics.Partitions");
        t->Partitions = ls_kmsg_alloc(a, t->NumPartitions, sizeof *t->Partitions);
        for (int32_t j = 0; j < t->NumPartitions && !r->err; j++) {
            ls_kafka_ListOffsetsResponse_ListOffsetsPartitionResponse *p = &t->Partitions[j];
            p->PartitionIndex = ls_kr_i32(r);
            p->ErrorCode = ls_kr_i16(r);
            p->Timestamp = ls_kr_i64(r);
            p->Offset = ls_kr_i64(r);
            p->LeaderEpoch = v >= 4 ? ls_kr_i32(r) : -1;
            ls_kr_tags(r, f);
        }
        ls_kr_tags(r, f);
    }
    ls_kr_tags(r, f);
    return r->err ? -1 : 0;
}

void ls_kafka_ListOffsetsResponse_encode(ls_kw_t *w, int16_t v,
                                         const ls_kafka_ListOffsetsResponse *m)
{
    bool f = LFLEX(v);
    if (v >= 2)
        ls_kw_i32(w, m->ThrottleTimeMs);
    ls_kw_arrlen(w, f, m->NumTopics);
    for (int32_t i = 0; i < m->NumTopics; i++) {
        const ls_kafka_ListOffsetsResponse_ListOffsetsTopicResponse *t = &m->Topics[i];
        ls_kmsg_wstr_nn(w, f, t->Name);
        ls_kw_arrlen(w, f, t->NumPartitions);
        for (int32_t j = 0; j < t->NumPartitions; j++) {
            const ls_kafka_ListOffsetsResponse_ListOffsetsPartitionResponse *p = &t->Partitions[j];
            ls_kw_i32(w, p->PartitionIndex);
            ls_kw_i16(w, p->ErrorCode);
            ls_kw_i64(w, p->Timestamp);
            ls_kw_i64(w, p->Offset);
            if (v >= 4)
                ls_kw_i32(w, p->LeaderEpoch);
            ls_kw_tags(w, f);
        }
        ls_kw_tags(w, f);
    }
    ls_kw_tags(w, f);
}

/* ---------------------------------------------------- OffsetForLeaderEpoch */

int ls_kafka_OffsetForLeaderEpochRequest_decode(ls_kr_t *r, int16_t v, ls_arena_t *a,
                                                ls_kafka_OffsetForLeaderEpochRequest *m)
{
    memset(m, 0, sizeof *m);
    m->ReplicaId = -2;
    if (!ls_kmsg_version_ok(r, v, LS_KAFKA_OFFSET_FOR_LEADER_EPOCH_MIN,
                            LS_KAFKA_OFFSET_FOR_LEADER_EPOCH_MAX))
        return -1;
    bool f = OFLEX(v);
    if (v >= 3)
        m->ReplicaId = ls_kr_i32(r);
    m->NumTopics = ls_kmsg_arrlen(r, f, 2, false, "Topics");
    m->Topics = ls_kmsg_alloc(a, m->NumTopics, sizeof *m->Topics);
    for (int32_t i = 0; i < m->NumTopics && !r->err; i++) {
        ls_kafka_OffsetForLeaderEpochRequest_OffsetForLeaderTopic *t = &m->Topics[i];
        t->Topic = ls_kmsg_str(r, f, "Topics.Topic");
        t->NumPartitions = ls_kmsg_arrlen(r, f, 12, false, "Topics.Partitions");
        t->Partitions = ls_kmsg_alloc(a, t->NumPartitions, sizeof *t->Partitions);
        for (int32_t j = 0; j < t->NumPartitions && !r->err; j++) {
            t->Partitions[j].Partition = ls_kr_i32(r);
            t->Partitions[j].CurrentLeaderEpoch = ls_kr_i32(r);
            t->Partitions[j].LeaderEpoch = ls_kr_i32(r);
            ls_kr_tags(r, f);
        }
        ls_kr_tags(r, f);
    }
    ls_kr_tags(r, f);
    return r->err ? -1 : 0;
}

void ls_kafka_OffsetForLeaderEpochRequest_encode(ls_kw_t *w, int16_t v,
                                                 const ls_kafka_OffsetForLeaderEpochRequest *m)
{
    bool f = OFLEX(v);
    if (v >= 3)
        ls_kw_i32(w, m->ReplicaId);
    ls_kw_arrlen(w, f, m->NumTopics);
    for (int32_t i = 0; i < m->NumTopics; i++) {
        const ls_kafka_OffsetForLeaderEpochRequest_OffsetForLeaderTopic *t = &m->Topics[i];
        ls_kmsg_wstr_nn(w, f, t->Topic);
        ls_kw_arrlen(w, f, t->NumPartitions);
        for (int32_t j = 0; j < t->NumPartitions; j++) {
            ls_kw_i32(w, t->Partitions[j].Partition);
            ls_kw_i32(w, t->Partitions[j].CurrentLeaderEpoch);
            ls_kw_i32(w, t->Partitions[j].LeaderEpoch);
            ls_kw_tags(w, f);
        }
        ls_kw_tags(w, f);
    }
    ls_kw_tags(w, f);
}

int ls_kafka_OffsetForLeaderEpochResponse_decode(ls_kr_t *r, int16_t v, ls_arena_t *a,
                                                 ls_kafka_OffsetForLeaderEpochResponse *m)
{
    memset(m, 0, sizeof *m);
    if (!ls_kmsg_version_ok(r, v, LS_KAFKA_OFFSET_FOR_LEADER_EPOCH_MIN,
                            LS_KAFKA_OFFSET_FOR_LEADER_EPOCH_MAX))
        return -1;
    bool f = OFLEX(v);
    m->ThrottleTimeMs = ls_kr_i32(r);
    m->NumTopics = ls_kmsg_arrlen(r, f, 2, false, "Topics");
    m->Topics = ls_kmsg_alloc(a, m->NumTopics, sizeof *m->Topics);
    for (int32_t i = 0; i < m->NumTopics && !r->err; i++) {
        ls_kafka_OffsetForLeaderEpochResponse_OffsetForLeaderTopicResult *t = &m->Topics[i];
        t->Topic = ls_kmsg_str(r, f, "Topics.Topic");
        t->NumPartitions = ls_kmsg_arrlen(r, f, 2 + 4 + 4 + 8, false, "Topics.Partitions");
        t->Partitions = ls_kmsg_alloc(a, t->NumPartitions, sizeof *t->Partitions);
        for (int32_t j = 0; j < t->NumPartitions && !r->err; j++) {
            ls_kafka_OffsetForLeaderEpochResponse_EpochEndOffset *p = &t->Partitions[j];
            p->ErrorCode = ls_kr_i16(r);
            p->Partition = ls_kr_i32(r);
            p->LeaderEpoch = ls_kr_i32(r);
            p->EndOffset = ls_kr_i64(r);
            ls_kr_tags(r, f);
        }
        ls_kr_tags(r, f);
    }
    ls_kr_tags(r, f);
    return r->err ? -1 : 0;
}

void ls_kafka_OffsetForLeaderEpochResponse_encode(ls_kw_t *w, int16_t v,
                                                  const ls_kafka_OffsetForLeaderEpochResponse *m)
{
    bool f = OFLEX(v);
    ls_kw_i32(w, m->ThrottleTimeMs);
    ls_kw_arrlen(w, f, m->NumTopics);
    for (int32_t i = 0; i < m->NumTopics; i++) {
        const ls_kafka_OffsetForLeaderEpochResponse_OffsetForLeaderTopicResult *t = &m->Topics[i];
        ls_kmsg_wstr_nn(w, f, t->Topic);
        ls_kw_arrlen(w, f, t->NumPartitions);
        for (int32_t j = 0; j < t->NumPartitions; j++) {
            const ls_kafka_OffsetForLeaderEpochResponse_EpochEndOffset *p = &t->Partitions[j];
            ls_kw_i16(w, p->ErrorCode);
            ls_kw_i32(w, p->Partition);
            ls_kw_i32(w, p->LeaderEpoch);
            ls_kw_i64(w, p->EndOffset);
            ls_kw_tags(w, f);
        }
        ls_kw_tags(w, f);
    }
    ls_kw_tags(w, f);
}
