/* ListOffsets (key 2) and OffsetForLeaderEpoch (key 23).
 *
 * ListOffsets answers per partition from the log heads kept in memory
 * (ls_logstore_info) for the special timestamps, and from the offset index
 * for real ones (ls_logstore_offset_for_time, possibly store I/O; completes
 * on the loop thread, maybe before the call returns):
 *   -2 EARLIEST           log start offset
 *   -1 LATEST             high watermark (read_committed: the last stable
 *                         offset; a timestamp lookup's answer at or past it
 *                         is -1/-1 for read_committed, as Kafka's "last
 *                         fetchable offset")
 *   -3 MAX_TIMESTAMP      v7+: offset and timestamp of the record with the
 *                         largest timestamp (-1/-1 for an empty log)
 *   -4 EARLIEST_LOCAL     v8+: everything is "local" to a diskless log: = -2
 *   -5 LATEST_TIERED      v9+: nothing is tiered in Kafka's sense: -1/-1, the
 *                         answer Kafka gives for topics without remote storage
 *   t >= 0                first offset whose timestamp >= t, or -1/-1 when
 *                         no record is that recent (consumer offsetsForTimes
 *                         then reports null)
 * Leader epochs: every partition has exactly one epoch, 0. A request
 * carrying CurrentLeaderEpoch > 0 knows an epoch this broker does not:
 * UNKNOWN_LEADER_EPOCH (retriable, as Fetch does).
 *
 * OffsetForLeaderEpoch (KIP-101/320, used by librdkafka and the Java
 * consumer to validate positions after Metadata v7+ reported epochs): with a
 * single epoch 0, the end offset of any requested epoch >= 0 is the high
 * watermark, reported under epoch 0 — so a client that saw a higher epoch in
 * record batches never truncates. A requested epoch < 0 is undefined: -1/-1. */
#include <string.h>

#include "kafka/handlers.h"
#include "kafka/msg.h"
#include "kafka/services.h"

static char *cname(ls_arena_t *a, ls_kstr_t s, bool *exact)
{
    size_t n = s.len > 0 ? (size_t)s.len : 0;
    char *p = ls_arena_alloc(a, n + 1);
    if (n) memcpy(p, s.ptr, n);
    *exact = strlen(p) == n;
    return p;
}

/* ------------------------------------------------------------- ListOffsets */

typedef struct lo_ctx lo_ctx_t;

typedef struct lo_part {
    lo_ctx_t *ctx;
    ls_kafka_ListOffsetsResponse_ListOffsetsPartitionResponse *r;
    int64_t log_id;
} lo_part_t;

struct lo_ctx {
    ls_kreq_t *req;
    ls_kafka_ListOffsetsResponse resp;
    int pending; /* lookups in flight + 1 while issuing */
};

static void lo_respond(lo_ctx_t *ctx)
{
    ls_kreq_t *req = ctx->req;
    ls_kw_t w;
    ls_kreq_encode(req, &w, &ctx->resp);
    ls_kreq_respond(req, &w);
}

static void lo_time_done(void *arg, ls_status st, int64_t offset, int64_t timestamp)
{
    lo_part_t *lp = arg;
    lo_ctx_t *ctx = lp->ctx;
    ls_kafka_ListOffsetsResponse_ListOffsetsPartitionResponse *r = lp->r;
    if (st != LS_OK) {
        r->ErrorCode = ls_kafka_error_from_status(st);
    } else {
        ls_log_info_t info;
        ls_logstore_info(ctx->req->svc->logs, lp->log_id, &info);
        const ls_kafka_ListOffsetsRequest *m = ctx->req->msg;
        int64_t fetchable = m->IsolationLevel == 1 ? info.last_stable_offset : info.high_watermark;
        if (offset < 0 || offset >= fetchable) {
            r->Offset = -1; /* no record at or after the timestamp */
            r->Timestamp = -1;
        } else {
            r->Offset = offset;
            r->Timestamp = timestamp;
        }
    }
    if (--ctx->pending == 0) lo_respond(ctx);
}

void ls_kafka_handle_list_offsets(ls_kreq_t *req)
{
    ls_kafka_services_t *b = req->svc;
    ls_arena_t *a = req->arena;
    int16_t v = req->api_version;
    const ls_kafka_ListOffsetsRequest *m = req->msg;
    lo_ctx_t *ctx = ls_arena_alloc(a, sizeof *ctx);
    ctx->req = req;
    ctx->resp.NumTopics = m->NumTopics;
    ctx->resp.Topics = ls_kmsg_alloc(a, m->NumTopics, sizeof *ctx->resp.Topics);
    ctx->pending = 1;
    for (int32_t i = 0; i < m->NumTopics; i++) {
        const ls_kafka_ListOffsetsRequest_ListOffsetsTopic *qt = &m->Topics[i];
        ls_kafka_ListOffsetsResponse_ListOffsetsTopicResponse *rt = &ctx->resp.Topics[i];
        rt->Name = qt->Name;
        rt->NumPartitions = qt->NumPartitions;
        rt->Partitions = ls_kmsg_alloc(a, qt->NumPartitions, sizeof *rt->Partitions);
        bool exact;
        char *name = cname(a, qt->Name, &exact);
        /* as Kafka: DESCRIBE on the topic */
        bool denied = !ls_kreq_allowed(req, LS_ACL_OP_DESCRIBE, LS_ACL_RES_TOPIC, name);
        ls_stream_t *s =
            exact && !denied ? ls_catalog_lookup(b->catalog, LS_DEFAULT_NAMESPACE, name) : NULL;
        for (int32_t j = 0; j < qt->NumPartitions; j++) {
            const ls_kafka_ListOffsetsRequest_ListOffsetsPartition *qp = &qt->Partitions[j];
            ls_kafka_ListOffsetsResponse_ListOffsetsPartitionResponse *r = &rt->Partitions[j];
            r->PartitionIndex = qp->PartitionIndex;
            r->Timestamp = -1;
            r->Offset = -1;
            r->LeaderEpoch = -1;
            if (denied) {
                r->ErrorCode = LS_KERR_TOPIC_AUTHORIZATION_FAILED;
                continue;
            }
            if (!s || qp->PartitionIndex < 0 || qp->PartitionIndex >= s->partitions) {
                r->ErrorCode = LS_KERR_UNKNOWN_TOPIC_OR_PARTITION;
                continue;
            }
            if (qp->CurrentLeaderEpoch > 0) {
                r->ErrorCode = LS_KERR_UNKNOWN_LEADER_EPOCH;
                continue;
            }
            r->LeaderEpoch = 0;
            int64_t log_id = ls_stream_log_id(s, qp->PartitionIndex);
            ls_log_info_t info;
            ls_logstore_info(b->logs, log_id, &info);
            int64_t ts = qp->Timestamp;
            if (ts == LS_KAFKA_EARLIEST_TIMESTAMP ||
                (ts == LS_KAFKA_EARLIEST_LOCAL_TIMESTAMP && v >= 8)) {
                r->Offset = info.log_start;
            } else if (ts == LS_KAFKA_LATEST_TIMESTAMP) {
                r->Offset = m->IsolationLevel == 1 ? info.last_stable_offset : info.high_watermark;
            } else if (ts == LS_KAFKA_MAX_TIMESTAMP && v >= 7) {
                if (info.max_timestamp >= 0 && info.high_watermark > info.log_start) {
                    r->Offset = info.max_timestamp_offset;
                    r->Timestamp = info.max_timestamp;
                }
            } else if (ts == LS_KAFKA_LATEST_TIERED_TIMESTAMP && v >= 9) {
                /* no tiering: -1/-1 */
            } else if (ts < 0) {
                /* a special value the request version does not allow, or none at all */
                r->ErrorCode = ts >= LS_KAFKA_LATEST_TIERED_TIMESTAMP ? LS_KERR_UNSUPPORTED_VERSION
                                                                      : LS_KERR_INVALID_REQUEST;
                r->LeaderEpoch = -1;
            } else {
                lo_part_t *lp = ls_arena_alloc(a, sizeof *lp);
                lp->ctx = ctx;
                lp->r = r;
                lp->log_id = log_id;
                ctx->pending++;
                ls_logstore_offset_for_time(b->logs, log_id, ts, lo_time_done, lp);
            }
        }
        ls_stream_release(s);
    }
    if (--ctx->pending == 0) lo_respond(ctx);
}

/* ---------------------------------------------------- OffsetForLeaderEpoch */

void ls_kafka_handle_offset_for_leader_epoch(ls_kreq_t *req)
{
    ls_kafka_services_t *b = req->svc;
    ls_arena_t *a = req->arena;
    const ls_kafka_OffsetForLeaderEpochRequest *m = req->msg;
    ls_kafka_OffsetForLeaderEpochResponse resp;
    memset(&resp, 0, sizeof resp);
    resp.NumTopics = m->NumTopics;
    resp.Topics = ls_kmsg_alloc(a, m->NumTopics, sizeof *resp.Topics);
    for (int32_t i = 0; i < m->NumTopics; i++) {
        const ls_kafka_OffsetForLeaderEpochRequest_OffsetForLeaderTopic *qt = &m->Topics[i];
        ls_kafka_OffsetForLeaderEpochResponse_OffsetForLeaderTopicResult *rt = &resp.Topics[i];
        rt->Topic = qt->Topic;
        rt->NumPartitions = qt->NumPartitions;
        rt->Partitions = ls_kmsg_alloc(a, qt->NumPartitions, sizeof *rt->Partitions);
        bool exact;
        char *name = cname(a, qt->Topic, &exact);
        bool denied = !ls_kreq_allowed(req, LS_ACL_OP_DESCRIBE, LS_ACL_RES_TOPIC, name);
        ls_stream_t *s =
            exact && !denied ? ls_catalog_lookup(b->catalog, LS_DEFAULT_NAMESPACE, name) : NULL;
        for (int32_t j = 0; j < qt->NumPartitions; j++) {
            const ls_kafka_OffsetForLeaderEpochRequest_OffsetForLeaderPartition *qp =
                &qt->Partitions[j];
            ls_kafka_OffsetForLeaderEpochResponse_EpochEndOffset *r = &rt->Partitions[j];
            r->Partition = qp->Partition;
            r->LeaderEpoch = -1;
            r->EndOffset = -1;
            if (denied) {
                r->ErrorCode = LS_KERR_TOPIC_AUTHORIZATION_FAILED;
                continue;
            }
            if (!s || qp->Partition < 0 || qp->Partition >= s->partitions) {
                r->ErrorCode = LS_KERR_UNKNOWN_TOPIC_OR_PARTITION;
                continue;
            }
            if (qp->CurrentLeaderEpoch > 0) {
                r->ErrorCode = LS_KERR_UNKNOWN_LEADER_EPOCH;
                continue;
            }
            if (qp->LeaderEpoch < 0) continue; /* undefined epoch: -1/-1 */
            ls_log_info_t info;
            ls_logstore_info(b->logs, ls_stream_log_id(s, qp->Partition), &info);
            r->LeaderEpoch = 0;
            r->EndOffset = info.high_watermark;
        }
        ls_stream_release(s);
    }
    ls_kw_t w;
    ls_kreq_encode(req, &w, &resp);
    ls_kreq_respond(req, &w);
}
