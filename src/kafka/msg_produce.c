/* Produce (API key 0), versions 3-11; flexible from v9.
 * Spec: ProduceRequest.json / ProduceResponse.json.
 *  - v3 adds TransactionalId (nullable) and requires RecordBatch v2;
 *  - v8 adds RecordErrors and ErrorMessage to the response (KIP-467);
 *  - v9 is the first flexible version;
 *  - v10 adds the tagged CurrentLeader (partition, tag 0) and NodeEndpoints
 *    (top level, tag 0) to the response (KIP-951);
 *  - v11 only allows the TRANSACTION_ABORTABLE error (KIP-890).
 * Records stay a raw view: the handler validates the batches. */
#include "kafka/msg.h"

#define FLEX(v) ((v) >= LS_KAFKA_PRODUCE_FLEX)

int ls_kafka_ProduceRequest_decode(ls_kr_t *r, int16_t v, ls_arena_t *a, ls_kafka_ProduceRequest *m)
{
    memset(m, 0, sizeof *m);
    if (!ls_kmsg_version_ok(r, v, LS_KAFKA_PRODUCE_MIN, LS_KAFKA_PRODUCE_MAX))
        return -1;
    bool f = FLEX(v);
    m->TransactionalId = ls_kr_str(r, f);
    m->Acks = ls_kr_i16(r);
    m->TimeoutMs = ls_kr_i32(r);
    m->NumTopicData = ls_kmsg_arrlen(r, f, 2, false, "TopicData");
    m->TopicData = ls_kmsg_alloc(a, m->NumTopicData, sizeof *m->TopicData);
    for (int32_t i = 0; i < m->NumTopicData && !r->err; i++) {
        ls_kafka_ProduceRequest_TopicProduceData *t = &m->TopicData[i];
        t->Name = ls_kmsg_str(r, f, "TopicData.Name");
        t->NumPartitionData = ls_kmsg_arrlen(r, f, 5, false, "PartitionData");
        t->PartitionData = ls_kmsg_alloc(a, t->NumPartitionData, sizeof *t->PartitionData);
        for (int32_t j = 0; j < t->NumPartitionData && !r->err; j++) {
            t->PartitionData[j].Index = ls_kr_i32(r);
            t->PartitionData[j].Records = ls_kr_bytes(r, f);
            ls_kr_tags(r, f);
        }
        ls_kr_tags(r, f);
    }
    ls_kr_tags(r, f);
    return r->err ? -1 : 0;
}

void ls_kafka_ProduceRequest_encode(ls_kw_t *w, int16_t v, const ls_kafka_ProduceRequest *m)
{
    bool f = FLEX(v);
    ls_kmsg_wstr(w, f, m->TransactionalId);
    ls_kw_i16(w, m->Acks);
    ls_kw_i32(w, m->TimeoutMs);
    ls_kw_arrlen(w, f, m->NumTopicData);
    for (int32_t i = 0; i < m->NumTopicData; i++) {
        const ls_kafka_ProduceRequest_TopicProduceData *t = &m->TopicData[i];
        ls_kmsg_wstr_nn(w, f, t->Name);
        ls_kw_arrlen(w, f, t->NumPartitionData);
        for (int32_t j = 0; j < t->NumPartitionData; j++) {
            ls_kw_i32(w, t->PartitionData[j].Index);
            ls_kw_bytes(w, f, t->PartitionData[j].Records.ptr, t->PartitionData[j].Records.len);
            ls_kw_tags(w, f);
        }
        ls_kw_tags(w, f);
    }
    ls_kw_tags(w, f);
}

static void decode_partition_response(ls_kr_t *r, int16_t v, ls_arena_t *a,
                                      ls_kafka_ProduceResponse_PartitionProduceResponse *p)
{
    bool f = FLEX(v);
    p->Index = ls_kr_i32(r);
    p->ErrorCode = ls_kr_i16(r);
    p->BaseOffset = ls_kr_i64(r);
    p->LogAppendTimeMs = ls_kr_i64(r);     /* v2+: always present from v3 */
    p->LogStartOffset = v >= 5 ? ls_kr_i64(r) : -1;
    p->ErrorMessage = ls_kstr_null();
    p->CurrentLeader.LeaderId = -1;
    p->CurrentLeader.LeaderEpoch = -1;
    if (v >= 8) {
        p->NumRecordErrors = ls_kmsg_arrlen(r, f, 4 + 1, false, "RecordErrors");
        p->RecordErrors = ls_kmsg_alloc(a, p->NumRecordErrors, sizeof *p->RecordErrors);
        for (int32_t k = 0; k < p->NumRecordErrors && !r->err; k++) {
            p->RecordErrors[k].BatchIndex = ls_kr_i32(r);
            p->RecordErrors[k].BatchIndexErrorMessage = ls_kr_str(r, f);
            ls_kr_tags(r, f);
        }
        p->ErrorMessage = ls_kr_str(r, f);
    }
    uint32_t nt = ls_kmsg_tags_begin(r, f);
    for (uint32_t i = 0; i < nt && !r->err; i++) {
        ls_kr_t sub;
        uint32_t tag = ls_kmsg_tag_next(r, &sub);
        if (tag == 0 && v >= 10) {
            p->HasCurrentLeader = true;
            p->CurrentLeader.LeaderId = ls_kr_i32(&sub);
            p->CurrentLeader.LeaderEpoch = ls_kr_i32(&sub);
            ls_kr_tags(&sub, true);
        }
        ls_kmsg_tag_end(r, &sub);
    }
}

int ls_kafka_ProduceResponse_decode(ls_kr_t *r, int16_t v, ls_arena_t *a,
                                    ls_kafka_ProduceResponse *m)
{
    memset(m, 0, sizeof *m);
    if (!ls_kmsg_version_ok(r, v, LS_KAFKA_PRODUCE_MIN, LS_KAFKA_PRODUCE_MAX))
        return -1;
    bool f = FLEX(v);
    m->NumResponses = ls_kmsg_arrlen(r, f, 2, false, "Responses");
    m->Responses = ls_kmsg_alloc(a, m->NumResponses, sizeof *m->Responses);
    for (int32_t i = 0; i < m->NumResponses && !r->err; i++) {
        ls_kafka_ProduceResponse_TopicProduceResponse *t = &m->Responses[i];
        t->Name = ls_kmsg_str(r, f, "Responses.Name");
        t->NumPartitionResponses = ls_kmsg_arrlen(r, f, 4 + 2 + 8 + 8, false, "PartitionResponses");
        t->PartitionResponses =
            ls_kmsg_alloc(a, t->NumPartitionResponses, sizeof *t->PartitionResponses);
        for (int32_t j = 0; j < t->NumPartitionResponses && !r->err; j++)
            decode_partition_response(r, v, a, &t->PartitionResponses[j]);
        ls_kr_tags(r, f);
    }
    m->ThrottleTimeMs = ls_kr_i32(r);
    uint32_t nt = ls_kmsg_tags_begin(r, f);
    for (uint32_t i = 0; i < nt && !r->err; i++) {
        ls_kr_t sub;
        uint32_t tag = ls_kmsg_tag_next(r, &sub);
        if (tag == 0 && v >= 10)
            m->NodeEndpoints = ls_kmsg_node_endpoints(&sub, a, &m->NumNodeEndpoints);
        ls_kmsg_tag_end(r, &sub);
    }
    return r->err ? -1 : 0;
}

void ls_kafka_ProduceResponse_encode(ls_kw_t *w, int16_t v, const ls_kafka_ProduceResponse *m)
{
    bool f = FLEX(v);
    ls_kw_arrlen(w, f, m->NumResponses);
    for (int32_t i = 0; i < m->NumResponses; i++) {
        const ls_kafka_ProduceResponse_TopicProduceResponse *t = &m->Responses[i];
        ls_kmsg_wstr_nn(w, f, t->Name);
        ls_kw_arrlen(w, f, t->NumPartitionResponses);
        for (int32_t j = 0; j < t->NumPartitionResponses; j++) {
            const ls_kafka_ProduceResponse_PartitionProduceResponse *p = &t->PartitionResponses[j];
            ls_kw_i32(w, p->Index);
            ls_kw_i16(w, p->ErrorCode);
            ls_kw_i64(w, p->BaseOffset);
            ls_kw_i64(w, p->LogAppendTimeMs);
            if (v >= 5)
                ls_kw_i64(w, p->LogStartOffset);
            if (v >= 8) {
                ls_kw_arrlen(w, f, p->NumRecordErrors);
                for (int32_t k = 0; k < p->NumRecordErrors; k++) {
                    ls_kw_i32(w, p->RecordErrors[k].BatchIndex);
                    ls_kmsg_wstr(w, f, p->RecordErrors[k].BatchIndexErrorMessage);
                    ls_kw_tags(w, f);
                }
                ls_kmsg_wstr(w, f, p->ErrorMessage);
            }
            if (f) {
                bool leader = v >= 10 && p->HasCurrentLeader;
                ls_kw_uvarint(w, leader ? 1 : 0);
                if (leader) {
                    ls_kw_t t0;
                    ls_kw_init(&t0);
                    ls_kw_i32(&t0, p->CurrentLeader.LeaderId);
                    ls_kw_i32(&t0, p->CurrentLeader.LeaderEpoch);
                    ls_kw_tags(&t0, true);
                    ls_kmsg_wtag(w, 0, &t0);
                    ls_kw_free(&t0);
                }
            }
        }
        ls_kw_tags(w, f);
    }
    ls_kw_i32(w, m->ThrottleTimeMs);
    if (f) {
        bool nodes = v >= 10 && m->NumNodeEndpoints > 0;
        ls_kw_uvarint(w, nodes ? 1 : 0);
        if (nodes) {
            ls_kw_t t0;
            ls_kw_init(&t0);
            ls_kmsg_wnode_endpoints(&t0, m->NodeEndpoints, m->NumNodeEndpoints);
            ls_kmsg_wtag(w, 0, &t0);
            ls_kw_free(&t0);
        }
    }
}
