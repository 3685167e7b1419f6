/* DeleteRecords (key 21): "advance the log start to Offset" for each named
 * partition — the same trim retention uses (log/log_trim.h), answered with
 * the log start now in force (LowWatermark), as Kafka does:
 *   Offset -1          the high watermark (delete everything written so far)
 *   Offset < -1        OFFSET_OUT_OF_RANGE
 *   Offset > HW        OFFSET_OUT_OF_RANGE (checked against the stored head)
 *   Offset < start     nothing changes; LowWatermark = the current start
 * The start may fall inside an entry (a Kafka batch): Fetch below it answers
 * OFFSET_OUT_OF_RANGE, ListOffsets EARLIEST returns it, and the batch holding
 * it is served whole (clients skip records below their position).
 * For a stream with a table (or whose materialization policy does not
 * resolve) the trim is soft for WAL entries: the table has not read them
 * yet; compaction materializes them and retention then removes them.
 * TimeoutMs is not needed: a trim completes when its metadata txn does. */
#include <string.h>

#include "kafka/handlers.h"
#include "kafka/msg.h"
#include "kafka/names.h"
#include "log/log_trim.h"
#include "kafka/services.h"
#include "stream/policy.h"

typedef struct dr_ctx dr_ctx_t;

typedef struct dr_part {
    dr_ctx_t *ctx;
    ls_kafka_DeleteRecordsResponse_DeleteRecordsPartitionResult *r;
} dr_part_t;

struct dr_ctx {
    ls_kreq_t *req;
    ls_kafka_DeleteRecordsResponse resp;
    int pending; /* trims in flight + 1 while issuing */
};

static void dr_respond(dr_ctx_t *ctx)
{
    ls_kreq_t *req = ctx->req;
    ls_kw_t w;
    ls_kreq_encode(req, &w, &ctx->resp);
    ls_kreq_respond(req, &w);
}

static void dr_trimmed(void *arg, ls_status st, int64_t log_start)
{
    dr_part_t *dp = arg;
    dp->r->ErrorCode = ls_kafka_error_from_status(st);
    dp->r->LowWatermark = st == LS_OK ? log_start : -1;
    if (--dp->ctx->pending == 0) dr_respond(dp->ctx);
}

/* Soft trim of WAL entries when the stream's table still has to read them. */
static bool keeps_wal(ls_kafka_services_t *b, const ls_stream_t *s)
{
    ls_policy_t pol;
    ls_namespace_t *ns = NULL;
    char err[256];
    ls_status st = ls_policy_for_stream(b->catalog, s, b->table_defaults, b->ntable_defaults, &pol,
                                        &ns, err, sizeof err);
    bool keep = st != LS_OK || pol.enabled;
    ls_namespace_release(ns);
    return keep;
}

void ls_kafka_handle_delete_records(ls_kreq_t *req)
{
    ls_kafka_services_t *b = req->svc;
    ls_arena_t *a = req->arena;
    const ls_kafka_DeleteRecordsRequest *m = req->msg;
    dr_ctx_t *ctx = ls_arena_alloc(a, sizeof *ctx);
    memset(ctx, 0, sizeof *ctx);
    ctx->req = req;
    ctx->resp.NumTopics = m->NumTopics;
    ctx->resp.Topics = ls_kmsg_alloc(a, m->NumTopics, sizeof *ctx->resp.Topics);
    ctx->pending = 1;
    for (int32_t i = 0; i < m->NumTopics; i++) {
        const ls_kafka_DeleteRecordsRequest_DeleteRecordsTopic *qt = &m->Topics[i];
        ls_kafka_DeleteRecordsResponse_DeleteRecordsTopicResult *rt = &ctx->resp.Topics[i];
        rt->Name = qt->Name;
        rt->NumPartitions = qt->NumPartitions;
        rt->Partitions = ls_kmsg_alloc(a, qt->NumPartitions, sizeof *rt->Partitions);
        const char *name = ls_kafka_topic_name(a, qt->Name);
        /* as Kafka: DELETE on the topic */
        bool denied = !ls_kreq_allowed_k(req, LS_ACL_OP_DELETE, LS_ACL_RES_TOPIC, qt->Name);
        ls_stream_t *s =
            name && !denied ? ls_catalog_lookup(b->catalog, LS_DEFAULT_NAMESPACE, name) : NULL;
        bool keep_wal = s && keeps_wal(b, s);
        for (int32_t j = 0; j < qt->NumPartitions; j++) {
            const ls_kafka_DeleteRecordsRequest_DeleteRecordsPartition *qp = &qt->Partitions[j];
            ls_kafka_DeleteRecordsResponse_DeleteRecordsPartitionResult *r = &rt->Partitions[j];
            r->PartitionIndex = qp->PartitionIndex;
            r->LowWatermark = -1;
            if (denied) {
                r->ErrorCode = LS_KERR_TOPIC_AUTHORIZATION_FAILED;
                continue;
            }
            if (!s || qp->PartitionIndex < 0 || qp->PartitionIndex >= s->partitions) {
                r->ErrorCode = LS_KERR_UNKNOWN_TOPIC_OR_PARTITION;
                continue;
            }
            if (qp->Offset < -1) {
                r->ErrorCode = LS_KERR_OFFSET_OUT_OF_RANGE;
                continue;
            }
            dr_part_t *dp = ls_arena_alloc(a, sizeof *dp);
            dp->ctx = ctx;
            dp->r = r;
            ctx->pending++;
            ls_logstore_trim(b->logs, ls_stream_log_id(s, qp->PartitionIndex),
                             qp->Offset == -1 ? LS_TRIM_TO_HIGH_WATERMARK : qp->Offset, keep_wal,
                             dr_trimmed, dp);
        }
        ls_stream_release(s);
    }
    if (--ctx->pending == 0) dr_respond(ctx);
}
