/* DeleteRecords (API key 21), versions 0-2, flexible from v2.
 * Spec: DeleteRecordsRequest/Response.json: v1 is v0 (the response may be
 * sent before throttling); v2 is the first flexible version. Request:
 * Topics[Name, Partitions[PartitionIndex, Offset]], TimeoutMs. Response:
 * ThrottleTimeMs, Topics[Name, Partitions[PartitionIndex, LowWatermark,
 * ErrorCode]]. */
#include "kafka/msg.h"

#define FLEX(v) ((v) >= LS_KAFKA_DELETE_RECORDS_FLEX)

int ls_kafka_DeleteRecordsRequest_decode(ls_kr_t *r, int16_t v, ls_arena_t *a,
                                         ls_kafka_DeleteRecordsRequest *m)
{
    memset(m, 0, sizeof *m);
    if (!ls_kmsg_version_ok(r, v, LS_KAFKA_DELETE_RECORDS_MIN, LS_KAFKA_DELETE_RECORDS_MAX))
        return -1;
    bool f = FLEX(v);
    m->NumTopics = ls_kmsg_arrlen(r, f, 2, false, "Topics");
    m->Topics = ls_kmsg_alloc(a, m->NumTopics, sizeof *m->Topics);
    for (int32_t i = 0; i < m->NumTopics && !r->err; i++) {
        ls_kafka_DeleteRecordsRequest_DeleteRecordsTopic *t = &m->Topics[i];
        t->Name = ls_kmsg_str(r, f, "Topics.Name");
        t->NumPartitions = ls_kmsg_arrlen(r, f, 12, false, "Topics.Partitions");
        t->Partitions = ls_kmsg_alloc(a, t->NumPartitions, sizeof *t->Partitions);
        for (int32_t j = 0; j < t->NumPartitions && !r->err; j++) {
            t->Partitions[j].PartitionIndex = ls_kr_i32(r);
            t->Partitions[j].Offset = ls_kr_i64(r);
            ls_kr_tags(r, f);
        }
        ls_kr_tags(r, f);
    }
    m->TimeoutMs = ls_kr_i32(r);
    ls_kr_tags(r, f);
    return r->err ? -1 : 0;
}

void ls_kafka_DeleteRecordsRequest_encode(ls_kw_t *w, int16_t v,
                                          const ls_kafka_DeleteRecordsRequest *m)
{
    bool f = FLEX(v);
    ls_kw_arrlen(w, f, m->NumTopics);
    for (int32_t i = 0; i < m->NumTopics; i++) {
        const ls_kafka_DeleteRecordsRequest_DeleteRecordsTopic *t = &m->Topics[i];
        ls_kmsg_wstr_nn(w, f, t->Name);
        ls_kw_arrlen(w, f, t->NumPartitions);
        for (int32_t j = 0; j < t->NumPartitions; j++) {
            ls_kw_i32(w, t->Partitions[j].PartitionIndex);
            ls_kw_i64(w, t->Partitions[j].Offset);
            ls_kw_tags(w, f);
        }
        ls_kw_tags(w, f);
    }
    ls_kw_i32(w, m->TimeoutMs);
    ls_kw_tags(w, f);
}

int ls_kafka_DeleteRecordsResponse_decode(ls_kr_t *r, int16_t v, ls_arena_t *a,
                                          ls_kafka_DeleteRecordsResponse *m)
{
    memset(m, 0, sizeof *m);
    if (!ls_kmsg_version_ok(r, v, LS_KAFKA_DELETE_RECORDS_MIN, LS_KAFKA_DELETE_RECORDS_MAX))
        return -1;
    bool f = FLEX(v);
    m->ThrottleTimeMs = ls_kr_i32(r);
    m->NumTopics = ls_kmsg_arrlen(r, f, 2, false, "Topics");
    m->Topics = ls_kmsg_alloc(a, m->NumTopics, sizeof *m->Topics);
    for (int32_t i = 0; i < m->NumTopics && !r->err; i++) {
        ls_kafka_DeleteRecordsResponse_DeleteRecordsTopicResult *t = &m->Topics[i];
        t->Name = ls_kmsg_str(r, f, "Topics.Name");
        t->NumPartitions = ls_kmsg_arrlen(r, f, 14, false, "Topics.Partitions");
        t->Partitions = ls_kmsg_alloc(a, t->NumPartitions, sizeof *t->Partitions);
        for (int32_t j = 0; j < t->NumPartitions && !r->err; j++) {
            t->Partitions[j].PartitionIndex = ls_kr_i32(r);
            t->Partitions[j].LowWatermark = ls_kr_i64(r);
            t->Partitions[j].ErrorCode = ls_kr_i16(r);
            ls_kr_tags(r, f);
        }
        ls_kr_tags(r, f);
    }
    ls_kr_tags(r, f);
    return r->err ? -1 : 0;
}

void ls_kafka_DeleteRecordsResponse_encode(ls_kw_t *w, int16_t v,
                                           const ls_kafka_DeleteRecordsResponse *m)
{
    bool f = FLEX(v);
    ls_kw_i32(w, m->ThrottleTimeMs);
    ls_kw_arrlen(w, f, m->NumTopics);
    for (int32_t i = 0; i < m->NumTopics; i++) {
        const ls_kafka_DeleteRecordsResponse_DeleteRecordsTopicResult *t = &m->Topics[i];
        ls_kmsg_wstr_nn(w, f, t->Name);
        ls_kw_arrlen(w, f, t->NumPartitions);
        for (int32_t j = 0; j < t->NumPartitions; j++) {
            ls_kw_i32(w, t->Partitions[j].PartitionIndex);
            ls_kw_i64(w, t->Partitions[j].LowWatermark);
            ls_kw_i16(w, t->Partitions[j].ErrorCode);
            ls_kw_tags(w, f);
        }
        ls_kw_tags(w, f);
    }
    ls_kw_tags(w, f);
}
