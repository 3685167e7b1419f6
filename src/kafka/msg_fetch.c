/* Fetch (API key 1), versions 4-17; flexible from v12.
 * Spec: FetchRequest.json / FetchResponse.json.
 *  - v4 IsolationLevel, LastStableOffset, AbortedTransactions; v5 LogStartOffset;
 *  - v7 fetch sessions (SessionId/SessionEpoch, ForgottenTopicsData, top ErrorCode);
 *  - v9 CurrentLeaderEpoch; v11 RackId and PreferredReadReplica;
 *  - v12 flexible: tagged ClusterId (request tag 0), LastFetchedEpoch, and the
 *    partition tags DivergingEpoch (0), CurrentLeader (1), SnapshotId (2);
 *  - v13 topic IDs replace topic names (KIP-516);
 *  - v15 ReplicaId moves into the tagged ReplicaState (tag 1, KIP-903);
 *  - v16 tagged NodeEndpoints in the response (tag 0, KIP-951);
 *  - v17 tagged ReplicaDirectoryId per request partition (tag 0, KIP-853).
 * Tagged fields go at the end of the struct that owns them, in tag order.
 * Response Records can be written from zero-copy chunk references. */
#include "kafka/msg.h"

#define FLEX(v) ((v) >= LS_KAFKA_FETCH_FLEX)

static bool uuid_zero(const ls_uuid_t *u)
{
    for (int i = 0; i < 16; i++)
        if (u->b[i])
            return false;
    return true;
}

int ls_kafka_FetchRequest_decode(ls_kr_t *r, int16_t v, ls_arena_t *a, ls_kafka_FetchRequest *m)
{
    memset(m, 0, sizeof *m);
    m->ClusterId = ls_kstr_null();
    m->ReplicaId = -1;
    m->ReplicaState.ReplicaId = -1;
    m->ReplicaState.ReplicaEpoch = -1;
    m->SessionEpoch = -1;
    m->RackId.ptr = "";
    if (!ls_kmsg_version_ok(r, v, LS_KAFKA_FETCH_MIN, LS_KAFKA_FETCH_MAX))
        return -1;
    bool f = FLEX(v);
    if (v <= 14)
        m->ReplicaId = ls_kr_i32(r);
    m->MaxWaitMs = ls_kr_i32(r);
    m->MinBytes = ls_kr_i32(r);
    m->MaxBytes = ls_kr_i32(r);
    m->IsolationLevel = ls_kr_i8(r);
    if (v >= 7) {
        m->SessionId = ls_kr_i32(r);
        m->SessionEpoch = ls_kr_i32(r);
    }
    size_t topic_min = (v >= 13 ? 16 : (f ? 1 : 2)) + 1;
    m->NumTopics = ls_kmsg_arrlen(r, f, topic_min, false, "Topics");
    m->Topics = ls_kmsg_alloc(a, m->NumTopics, sizeof *m->Topics);
    for (int32_t i = 0; i < m->NumTopics && !r->err; i++) {
        ls_kafka_FetchRequest_FetchTopic *t = &m->Topics[i];
        if (v >= 13) {
            t->Topic = ls_kstr_null();
            ls_kr_uuid(r, &t->TopicId);
        } else {
            t->Topic = ls_kmsg_str(r, f, "Topics.Topic");
        }
        t->NumPartitions = ls_kmsg_arrlen(r, f, 4 + 8 + 4, false, "Topics.Partitions");
        t->Partitions = ls_kmsg_alloc(a, t->NumPartitions, sizeof *t->Partitions);
        for (int32_t j = 0; j < t->NumPartitions && !r->err; j++) {
            ls_kafka_FetchRequest_FetchPartition *p = &t->Partitions[j];
            p->Partition = ls_kr_i32(r);
            p->CurrentLeaderEpoch = v >= 9 ? ls_kr_i32(r) : -1;
            p->FetchOffset = ls_kr_i64(r);
            p->LastFetchedEpoch = v >= 12 ? ls_kr_i32(r) : -1;
            p->LogStartOffset = v >= 5 ? ls_kr_i64(r) : -1;
            p->PartitionMaxBytes = ls_kr_i32(r);
            uint32_t nt = ls_kmsg_tags_begin(r, f);
            for (uint32_t k = 0; k < nt && !r->err; k++) {
                ls_kr_t sub;
                uint32_t tag = ls_kmsg_tag_next(r, &sub);
                if (tag == 0 && v >= 17)
                    ls_kr_uuid(&sub, &p->ReplicaDirectoryId);
                ls_kmsg_tag_end(r, &sub);
            }
        }
        ls_kr_tags(r, f);
    }
    if (v >= 7) {
        m->NumForgottenTopicsData = ls_kmsg_arrlen(r, f, topic_min, false, "ForgottenTopicsData");
        m->ForgottenTopicsData =
            ls_kmsg_alloc(a, m->NumForgottenTopicsData, sizeof *m->ForgottenTopicsData);
        for (int32_t i = 0; i < m->NumForgottenTopicsData && !r->err; i++) {
            ls_kafka_FetchRequest_ForgottenTopic *t = &m->ForgottenTopicsData[i];
            if (v >= 13) {
                t->Topic = ls_kstr_null();
                ls_kr_uuid(r, &t->TopicId);
            } else {
                t->Topic = ls_kmsg_str(r, f, "ForgottenTopicsData.Topic");
            }
            t->Partitions =
                ls_kmsg_i32s(r, f, a, false, &t->NumPartitions, "ForgottenTopicsData.Partitions");
            ls_kr_tags(r, f);
        }
    }
    if (v >= 11)
        m->RackId = ls_kmsg_str(r, f, "RackId");
    uint32_t nt = ls_kmsg_tags_begin(r, f);
    for (uint32_t k = 0; k < nt && !r->err; k++) {
        ls_kr_t sub;
        uint32_t tag = ls_kmsg_tag_next(r, &sub);
        if (tag == 0) {
            m->ClusterId = ls_kr_str(&sub, true);
        } else if (tag == 1 && v >= 15) {
            m->HasReplicaState = true;
            m->ReplicaState.ReplicaId = ls_kr_i32(&sub);
            m->ReplicaState.ReplicaEpoch = ls_kr_i64(&sub);
            ls_kr_tags(&sub, true);
        }
        ls_kmsg_tag_end(r, &sub);
    }
    return r->err ? -1 : 0;
}

void ls_kafka_FetchRequest_encode(ls_kw_t *w, int16_t v, const ls_kafka_FetchRequest *m)
{
    bool f = FLEX(v);
    if (v <= 14)
        ls_kw_i32(w, m->ReplicaId);
    ls_kw_i32(w, m->MaxWaitMs);
    ls_kw_i32(w, m->MinBytes);
    ls_kw_i32(w, m->MaxBytes);
    ls_kw_i8(w, m->IsolationLevel);
    if (v >= 7) {
        ls_kw_i32(w, m->SessionId);
        ls_kw_i32(w, m->SessionEpoch);
    }
    ls_kw_arrlen(w, f, m->NumTopics);
    for (int32_t i = 0; i < m->NumTopics; i++) {
        const ls_kafka_FetchRequest_FetchTopic *t = &m->Topics[i];
        if (v >= 13)
            ls_kw_uuid(w, &t->TopicId);
        else
            ls_kmsg_wstr_nn(w, f, t->Topic);
        ls_kw_arrlen(w, f, t->NumPartitions);
        for (int32_t j = 0; j < t->NumPartitions; j++) {
            const ls_kafka_FetchRequest_FetchPartition *p = &t->Partitions[j];
            ls_kw_i32(w, p->Partition);
            if (v >= 9)
                ls_kw_i32(w, p->CurrentLeaderEpoch);
            ls_kw_i64(w, p->FetchOffset);
            if (v >= 12)
                ls_kw_i32(w, p->LastFetchedEpoch);
            if (v >= 5)
                ls_kw_i64(w, p->LogStartOffset);
            ls_kw_i32(w, p->PartitionMaxBytes);
            if (f) {
                bool dir = v >= 17 && !uuid_zero(&p->ReplicaDirectoryId);
                ls_kw_uvarint(w, dir ? 1 : 0);
                if (dir) {
                    ls_kw_t t0;
                    ls_kw_init(&t0);
                    ls_kw_uuid(&t0, &p->ReplicaDirectoryId);
                    ls_kmsg_wtag(w, 0, &t0);
                    ls_kw_free(&t0);
                }
            }
        }
        ls_kw_tags(w, f);
    }
    if (v >= 7) {
        ls_kw_arrlen(w, f, m->NumForgottenTopicsData);
        for (int32_t i = 0; i < m->NumForgottenTopicsData; i++) {
            const ls_kafka_FetchRequest_ForgottenTopic *t = &m->ForgottenTopicsData[i];
            if (v >= 13)
                ls_kw_uuid(w, &t->TopicId);
            else
                ls_kmsg_wstr_nn(w, f, t->Topic);
            ls_kmsg_wi32s(w, f, t->Partitions, t->NumPartitions);
            ls_kw_tags(w, f);
        }
    }
    if (v >= 11)
        ls_kmsg_wstr_nn(w, f, m->RackId);
    if (f) {
        bool cid = m->ClusterId.len >= 0;
        bool rs = v >= 15 && m->HasReplicaState;
        ls_kw_uvarint(w, (uint32_t)cid + (uint32_t)rs);
        ls_kw_t t;
        if (cid) {
            ls_kw_init(&t);
            ls_kmsg_wstr(&t, true, m->ClusterId);
            ls_kmsg_wtag(w, 0, &t);
            ls_kw_free(&t);
        }
        if (rs) {
            ls_kw_init(&t);
            ls_kw_i32(&t, m->ReplicaState.ReplicaId);
            ls_kw_i64(&t, m->ReplicaState.ReplicaEpoch);
            ls_kw_tags(&t, true);
            ls_kmsg_wtag(w, 1, &t);
            ls_kw_free(&t);
        }
    }
}

static void decode_partition_data(ls_kr_t *r, int16_t v, ls_arena_t *a,
                                  ls_kafka_FetchResponse_PartitionData *p)
{
    bool f = FLEX(v);
    p->DivergingEpoch.Epoch = -1;
    p->DivergingEpoch.EndOffset = -1;
    p->CurrentLeader.LeaderId = -1;
    p->CurrentLeader.LeaderEpoch = -1;
    p->SnapshotId.EndOffset = -1;
    p->SnapshotId.Epoch = -1;
    p->PartitionIndex = ls_kr_i32(r);
    p->ErrorCode = ls_kr_i16(r);
    p->HighWatermark = ls_kr_i64(r);
    p->LastStableOffset = ls_kr_i64(r);
    p->LogStartOffset = v >= 5 ? ls_kr_i64(r) : -1;
    p->NumAbortedTransactions = ls_kmsg_arrlen(r, f, 16, true, "AbortedTransactions");
    p->AbortedTransactions =
        ls_kmsg_alloc(a, p->NumAbortedTransactions, sizeof *p->AbortedTransactions);
    for (int32_t k = 0; k < p->NumAbortedTransactions && !r->err; k++) {
        p->AbortedTransactions[k].ProducerId = ls_kr_i64(r);
        p->AbortedTransactions[k].FirstOffset = ls_kr_i64(r);
        ls_kr_tags(r, f);
    }
    p->PreferredReadReplica = v >= 11 ? ls_kr_i32(r) : -1;
    p->Records = ls_kr_bytes(r, f);
    uint32_t nt = ls_kmsg_tags_begin(r, f);
    for (uint32_t k = 0; k < nt && !r->err; k++) {
        ls_kr_t sub;
        uint32_t tag = ls_kmsg_tag_next(r, &sub);
        switch (tag) {
        case 0:
            p->HasDivergingEpoch = true;
            p->DivergingEpoch.Epoch = ls_kr_i32(&sub);
            p->DivergingEpoch.EndOffset = ls_kr_i64(&sub);
            ls_kr_tags(&sub, true);
            break;
        case 1:
            p->HasCurrentLeader = true;
            p->CurrentLeader.LeaderId = ls_kr_i32(&sub);
            p->CurrentLeader.LeaderEpoch = ls_kr_i32(&sub);
            ls_kr_tags(&sub, true);
            break;
        case 2:
            p->HasSnapshotId = true;
            p->SnapshotId.EndOffset = ls_kr_i64(&sub);
            p->SnapshotId.Epoch = ls_kr_i32(&sub);
            ls_kr_tags(&sub, true);
            break;
        default:
            break;
        }
        ls_kmsg_tag_end(r, &sub);
    }
}

int ls_kafka_FetchResponse_decode(ls_kr_t *r, int16_t v, ls_arena_t *a, ls_kafka_FetchResponse *m)
{
    memset(m, 0, sizeof *m);
    if (!ls_kmsg_version_ok(r, v, LS_KAFKA_FETCH_MIN, LS_KAFKA_FETCH_MAX))
        return -1;
    bool f = FLEX(v);
    m->ThrottleTimeMs = ls_kr_i32(r);
    if (v >= 7) {
        m->ErrorCode = ls_kr_i16(r);
        m->SessionId = ls_kr_i32(r);
    }
    size_t topic_min = (v >= 13 ? 16 : (f ? 1 : 2)) + 1;
    m->NumResponses = ls_kmsg_arrlen(r, f, topic_min, false, "Responses");
    m->Responses = ls_kmsg_alloc(a, m->NumResponses, sizeof *m->Responses);
    for (int32_t i = 0; i < m->NumResponses && !r->err; i++) {
        ls_kafka_FetchResponse_FetchableTopicResponse *t = &m->Responses[i];
        if (v >= 13) {
            t->Topic = ls_kstr_null();
            ls_kr_uuid(r, &t->TopicId);
        } else {
            t->Topic = ls_kmsg_str(r, f, "Responses.Topic");
        }
        t->NumPartitions = ls_kmsg_arrlen(r, f, 4 + 2 + 8 + 8 + 1, false, "Responses.Partitions");
        t->Partitions = ls_kmsg_alloc(a, t->NumPartitions, sizeof *t->Partitions);
        for (int32_t j = 0; j < t->NumPartitions && !r->err; j++)
            decode_partition_data(r, v, a, &t->Partitions[j]);
        ls_kr_tags(r, f);
    }
    uint32_t nt = ls_kmsg_tags_begin(r, f);
    for (uint32_t k = 0; k < nt && !r->err; k++) {
        ls_kr_t sub;
        uint32_t tag = ls_kmsg_tag_next(r, &sub);
        if (tag == 0 && v >= 16)
            m->NodeEndpoints = ls_kmsg_node_endpoints(&sub, a, &m->NumNodeEndpoints);
        ls_kmsg_tag_end(r, &sub);
    }
    return r->err ? -1 : 0;
}

/* Records: zero-copy references when given, else the Records view. */
static void encode_records(ls_kw_t *w, bool f, const ls_kafka_FetchResponse_PartitionData *p)
{
    if (p->NumRecordRefs <= 0) {
        ls_kw_bytes(w, f, p->Records.ptr, p->Records.len);
        return;
    }
    size_t total = 0;
    for (int i = 0; i < p->NumRecordRefs; i++)
        total += p->RecordRefs[i].len;
    if (total > INT32_MAX - 1)
        total = INT32_MAX - 1; /* cannot happen with bounded fetch sizes; keep the prefix sane */
    if (f)
        ls_kw_uvarint(w, (uint32_t)total + 1);
    else
        ls_kw_i32(w, (int32_t)total);
    for (int i = 0; i < p->NumRecordRefs; i++)
        ls_kw_ref(w, p->RecordRefs[i].chunk, p->RecordRefs[i].off, p->RecordRefs[i].len);
}

void ls_kafka_FetchResponse_encode(ls_kw_t *w, int16_t v, const ls_kafka_FetchResponse *m)
{
    bool f = FLEX(v);
    ls_kw_i32(w, m->ThrottleTimeMs);
    if (v >= 7) {
        ls_kw_i16(w, m->ErrorCode);
        ls_kw_i32(w, m->SessionId);
    }
    ls_kw_arrlen(w, f, m->NumResponses);
    for (int32_t i = 0; i < m->NumResponses; i++) {
        const ls_kafka_FetchResponse_FetchableTopicResponse *t = &m->Responses[i];
        if (v >= 13)
            ls_kw_uuid(w, &t->TopicId);
        else
            ls_kmsg_wstr_nn(w, f, t->Topic);
        ls_kw_arrlen(w, f, t->NumPartitions);
        for (int32_t j = 0; j < t->NumPartitions; j++) {
            const ls_kafka_FetchResponse_PartitionData *p = &t->Partitions[j];
            ls_kw_i32(w, p->PartitionIndex);
            ls_kw_i16(w, p->ErrorCode);
            ls_kw_i64(w, p->HighWatermark);
            ls_kw_i64(w, p->LastStableOffset);
            if (v >= 5)
                ls_kw_i64(w, p->LogStartOffset);
            ls_kw_arrlen(w, f, p->NumAbortedTransactions);
            for (int32_t k = 0; k < p->NumAbortedTransactions; k++) {
                ls_kw_i64(w, p->AbortedTransactions[k].ProducerId);
                ls_kw_i64(w, p->AbortedTransactions[k].FirstOffset);
                ls_kw_tags(w, f);
            }
            if (v >= 11)
                ls_kw_i32(w, p->PreferredReadReplica);
            encode_records(w, f, p);
            if (f) {
                uint32_t n = (uint32_t)p->HasDivergingEpoch + (uint32_t)p->HasCurrentLeader +
                             (uint32_t)p->HasSnapshotId;
                ls_kw_uvarint(w, n);
                ls_kw_t t0;
                if (p->HasDivergingEpoch) {
                    ls_kw_init(&t0);
                    ls_kw_i32(&t0, p->DivergingEpoch.Epoch);
                    ls_kw_i64(&t0, p->DivergingEpoch.EndOffset);
                    ls_kw_tags(&t0, true);
                    ls_kmsg_wtag(w, 0, &t0);
                    ls_kw_free(&t0);
                }
                if (p->HasCurrentLeader) {
                    ls_kw_init(&t0);
                    ls_kw_i32(&t0, p->CurrentLeader.LeaderId);
                    ls_kw_i32(&t0, p->CurrentLeader.LeaderEpoch);
                    ls_kw_tags(&t0, true);
                    ls_kmsg_wtag(w, 1, &t0);
                    ls_kw_free(&t0);
                }
                if (p->HasSnapshotId) {
                    ls_kw_init(&t0);
                    ls_kw_i64(&t0, p->SnapshotId.EndOffset);
                    ls_kw_i32(&t0, p->SnapshotId.Epoch);
                    ls_kw_tags(&t0, true);
                    ls_kmsg_wtag(w, 2, &t0);
                    ls_kw_free(&t0);
                }
            }
        }
        ls_kw_tags(w, f);
    }
    if (f) {
        bool nodes = v >= 16 && m->NumNodeEndpoints > 0;
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
