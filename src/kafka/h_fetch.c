/* Fetch (key 1), v4+ (v13+ names topics by id).
 *
 * State machine of one fetch:
 *   READING --all partitions read--> (bytes >= MinBytes, an error, or
 *   MaxWaitMs == 0) --> RESPOND
 *                     otherwise --> WAITING (commit waiters on every log +
 *                     a MaxWaitMs timer) --first commit--> READING again
 *                                                 --timer--> RESPOND
 * Partitions are read in request order so the response byte budget
 * (MaxBytes) is spent in order; each read is also bounded by
 * PartitionMaxBytes; the first batch of the response is returned whole even
 * if larger (KIP-74 progress guarantee). A fetch offset inside a batch gets
 * the whole batch; clients skip the records before their offset.
 *
 * Records are referenced, not copied, from the read cache into the response
 * (ls_kw_ref), with base offsets already rewritten.
 *
 * read_committed (IsolationLevel 1, KIP-98) reads stop at the last stable
 * offset, and the partition carries the aborted transactions overlapping
 * [fetch offset, LSO) from the log's aborted index (a second, possibly
 * asynchronous step after the read); clients drop those records and every
 * control batch. LastStableOffset is filled for both levels.
 *
 * Fetch sessions (KIP-227) are declined: responses carry SessionId 0, so
 * clients keep sending full fetch requests; an incremental request for a
 * session we never created gets FETCH_SESSION_ID_NOT_FOUND. */
#include <string.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/diag.h"
#include "kafka/handlers.h"
#include "kafka/msg.h"
#include "kafka/names.h"
#include "kafka/services.h"

#define LS_KERR_FETCH_SESSION_ID_NOT_FOUND 70

typedef struct fetch_ctx fetch_ctx_t;

typedef struct fetch_part {
    fetch_ctx_t *ctx;
    ls_kafka_FetchResponse_PartitionData *pd;
    int64_t log_id; /* -1: partition has a fixed error */
    int64_t offset;
    int32_t max_bytes;
    ls_read_result_t res;
    bool have_res;
    ls_log_waiter_t *waiter;
} fetch_part_t;

struct fetch_ctx {
    ls_kreq_t *req;
    ls_kafka_FetchRequest m;
    ls_kafka_FetchResponse resp;
    fetch_part_t *parts;
    int nparts;
    int next;       /* next partition to read */
    int64_t budget; /* remaining response bytes */
    size_t total;
    bool any_error;
    bool waiting;
    bool reading;
    int64_t deadline_ms; /* monotonic: answer by then */
    uv_timer_t timer;
    bool timer_used;
};

static void fetch_read_next(fetch_ctx_t *ctx);

static void ctx_free_cb(uv_handle_t *h) { ls_free(h->data); }

static void fetch_respond(fetch_ctx_t *ctx)
{
    ls_kreq_t *req = ctx->req;
    for (int i = 0; i < ctx->nparts; i++) {
        fetch_part_t *fp = &ctx->parts[i];
        if (fp->waiter) {
            ls_logstore_wait_cancel(req->svc->logs, fp->waiter);
            fp->waiter = NULL;
        }
        if (fp->have_res && fp->res.nslices) {
            fp->pd->RecordRefs =
                ls_arena_alloc(req->arena, sizeof(ls_kref_t) * (size_t)fp->res.nslices);
            for (int s = 0; s < fp->res.nslices; s++)
                fp->pd->RecordRefs[s] = (ls_kref_t){fp->res.slices[s].chunk, fp->res.slices[s].off,
                                                    fp->res.slices[s].len};
            fp->pd->NumRecordRefs = fp->res.nslices;
        }
    }
    for (int i = 0; i < ctx->nparts; i++)
        ctx->parts[i].pd->ErrorCode =
            ls_kafka_error_for_version(req->api_key, req->api_version, ctx->parts[i].pd->ErrorCode);
    ls_kw_t w;
    ls_kreq_encode(req, &w, &ctx->resp);
    for (int i = 0; i < ctx->nparts; i++)
        if (ctx->parts[i].have_res) ls_read_result_free(&ctx->parts[i].res);
    ls_free(ctx->parts);
    if (ctx->timer_used) {
        uv_timer_stop(&ctx->timer);
        ctx->timer.data = ctx;
        uv_close((uv_handle_t *)&ctx->timer, ctx_free_cb);
    } else {
        ls_free(ctx);
    }
    ls_kreq_respond(req, &w);
}

static void on_timeout(uv_timer_t *t)
{
    fetch_ctx_t *ctx = t->data;
    if (!ctx->waiting) return;
    ctx->waiting = false;
    fetch_respond(ctx);
}

static void on_wake(void *arg);

static void start_wait(fetch_ctx_t *ctx, int64_t wait_ms)
{
    ls_kreq_t *req = ctx->req;
    ctx->waiting = true;
    for (int i = 0; i < ctx->nparts; i++) {
        fetch_part_t *fp = &ctx->parts[i];
        if (fp->log_id < 0) continue;
        fp->waiter = ls_logstore_wait(req->svc->logs, fp->log_id, on_wake, fp);
    }
    if (!ctx->timer_used) {
        uv_timer_init(req->svc->loop, &ctx->timer);
        ctx->timer_used = true;
    }
    ctx->timer.data = ctx;
    uv_timer_start(&ctx->timer, on_timeout, (uint64_t)wait_ms, 0);
}

static void on_wake(void *arg)
{
    fetch_part_t *woken = arg;
    fetch_ctx_t *ctx = woken->ctx;
    woken->waiter = NULL; /* fired waiters are freed by log storage */
    if (!ctx->waiting) return;
    ctx->waiting = false;
    uv_timer_stop(&ctx->timer);
    for (int i = 0; i < ctx->nparts; i++) {
        fetch_part_t *fp = &ctx->parts[i];
        if (fp->waiter) {
            ls_logstore_wait_cancel(ctx->req->svc->logs, fp->waiter);
            fp->waiter = NULL;
        }
        if (fp->have_res) {
            ls_read_result_free(&fp->res);
            fp->have_res = false;
        }
    }
    /* read everything again: offsets did not move, new data is at the tail */
    ctx->next = 0;
    ctx->total = 0;
    ctx->budget = ctx->m.MaxBytes > 0 ? ctx->m.MaxBytes : INT32_MAX;
    fetch_read_next(ctx);
}

static void fetch_done_reading(fetch_ctx_t *ctx)
{
    int64_t now = ls_clock_mono_ms();
    if (ctx->any_error || (int64_t)ctx->total >= ctx->m.MinBytes || now >= ctx->deadline_ms ||
        ls_kreq_conn_closed(ctx->req) || *ctx->req->svc->stopping) {
        fetch_respond(ctx);
        return;
    }
    start_wait(ctx, ctx->deadline_ms - now);
}

/* The current partition is complete: account for it and go on. */
static void part_done(fetch_ctx_t *ctx)
{
    fetch_part_t *fp = &ctx->parts[ctx->next];
    ctx->total += fp->res.bytes;
    ctx->budget -= (int64_t)fp->res.bytes;
    ctx->next++;
    if (!ctx->reading) fetch_read_next(ctx);
}

/* read_committed: the aborted transactions overlapping what was read (up to
 * the LSO), so the client drops their records (KIP-98). */
static void on_aborted(void *arg, ls_status st, const ls_aborted_t *v, int n)
{
    fetch_ctx_t *ctx = arg;
    fetch_part_t *fp = &ctx->parts[ctx->next];
    ls_kafka_FetchResponse_PartitionData *pd = fp->pd;
    if (st != LS_OK) {
        /* records without their aborted list would show aborted data */
        ls_read_result_free(&fp->res);
        memset(&fp->res, 0, sizeof fp->res);
        pd->ErrorCode = LS_KERR_KAFKA_STORAGE_ERROR;
        ctx->any_error = true;
    } else if (n > 0) {
        pd->AbortedTransactions =
            ls_arena_alloc(ctx->req->arena, sizeof(*pd->AbortedTransactions) * (size_t)n);
        for (int i = 0; i < n; i++) {
            pd->AbortedTransactions[i].ProducerId = v[i].producer_id;
            pd->AbortedTransactions[i].FirstOffset = v[i].first_offset;
        }
        pd->NumAbortedTransactions = n;
    }
    part_done(ctx);
}

static void on_read(void *arg, ls_read_result_t *res)
{
    fetch_ctx_t *ctx = arg;
    fetch_part_t *fp = &ctx->parts[ctx->next];
    fp->res = *res;
    fp->have_res = true;
    ls_kafka_FetchResponse_PartitionData *pd = fp->pd;
    pd->HighWatermark = res->high_watermark;
    pd->LastStableOffset = res->last_stable_offset;
    pd->LogStartOffset = res->log_start;
    if (res->st == LS_ERANGE) {
        pd->ErrorCode = LS_KERR_OFFSET_OUT_OF_RANGE;
        ctx->any_error = true;
    } else if (res->st != LS_OK) {
        pd->ErrorCode = LS_KERR_KAFKA_STORAGE_ERROR;
        ctx->any_error = true;
    } else if (ctx->m.IsolationLevel == 1 && res->bytes > 0) {
        ls_logstore_aborted(ctx->req->svc->logs, fp->log_id, fp->offset,
                            res->last_stable_offset - 1, on_aborted, ctx);
        return;
    }
    part_done(ctx);
}

static void fetch_read_next(fetch_ctx_t *ctx)
{
    ls_kafka_services_t *b = ctx->req->svc;
    ctx->reading = true;
    while (ctx->next < ctx->nparts) {
        fetch_part_t *fp = &ctx->parts[ctx->next];
        if (fp->log_id < 0) {
            ctx->next++;
            continue;
        }
        int64_t budget = ctx->budget;
        if (budget <= 0 && ctx->total > 0) {
            /* response full: report offsets only */
            ls_log_info_t info;
            ls_logstore_info(b->logs, fp->log_id, &info);
            fp->pd->HighWatermark = info.high_watermark;
            fp->pd->LastStableOffset = info.last_stable_offset;
            fp->pd->LogStartOffset = info.log_start;
            ctx->next++;
            continue;
        }
        size_t max = (size_t)(fp->max_bytes < budget ? fp->max_bytes : budget);
        if (max == 0) max = 1;
        int before = ctx->next;
        if (ctx->m.IsolationLevel == 1)
            ls_logstore_read_committed(b->logs, fp->log_id, fp->offset, max, on_read, ctx);
        else
            ls_logstore_read(b->logs, fp->log_id, fp->offset, max, on_read, ctx);
        if (ctx->next == before) {
            /* the read went to the store; on_read resumes us */
            ctx->reading = false;
            return;
        }
    }
    ctx->reading = false;
    fetch_done_reading(ctx);
}

void ls_kafka_handle_fetch(ls_kreq_t *req)
{
    fetch_ctx_t *ctx = LS_NEW(fetch_ctx_t);
    ctx->req = req;
    ctx->m = *(const ls_kafka_FetchRequest *)req->msg;
    ls_kafka_services_t *b = req->svc;
    ls_kafka_FetchRequest *m = &ctx->m;
    ls_kafka_FetchResponse *r = &ctx->resp;
    if (m->SessionId != 0 || m->SessionEpoch > 0) {
        r->ErrorCode = LS_KERR_FETCH_SESSION_ID_NOT_FOUND;
        ls_kw_t w;
        ls_kreq_encode(req, &w, r);
        ls_free(ctx);
        ls_kreq_respond(req, &w);
        return;
    }
    int total = 0;
    for (int t = 0; t < m->NumTopics; t++)
        total += m->Topics[t].NumPartitions;
    ctx->parts = LS_NEWN(fetch_part_t, total ? total : 1);
    r->NumResponses = m->NumTopics;
    r->Responses = ls_arena_alloc(req->arena, sizeof(*r->Responses) *
                                                  (size_t)(m->NumTopics ? m->NumTopics : 1));
    bool by_id = req->api_version >= 13;
    for (int t = 0; t < m->NumTopics; t++) {
        const ls_kafka_FetchRequest_FetchTopic *ft = &m->Topics[t];
        ls_kafka_FetchResponse_FetchableTopicResponse *tr = &r->Responses[t];
        tr->Topic = ft->Topic;
        tr->TopicId = ft->TopicId;
        tr->NumPartitions = ft->NumPartitions;
        tr->Partitions =
            ls_arena_alloc(req->arena, sizeof(*tr->Partitions) *
                                           (size_t)(ft->NumPartitions ? ft->NumPartitions : 1));
        ls_stream_t *s = NULL;
        if (by_id) {
            s = ls_catalog_lookup_id(b->catalog, &ft->TopicId);
        } else {
            const char *name = ls_kafka_topic_name(req->arena, ft->Topic);
            s = name ? ls_catalog_lookup(b->catalog, LS_DEFAULT_NAMESPACE, name) : NULL;
        }
        for (int p = 0; p < ft->NumPartitions; p++) {
            const ls_kafka_FetchRequest_FetchPartition *fpq = &ft->Partitions[p];
            ls_kafka_FetchResponse_PartitionData *pd = &tr->Partitions[p];
            fetch_part_t *fp = &ctx->parts[ctx->nparts++];
            fp->pd = pd;
            fp->ctx = ctx;
            fp->log_id = -1;
            pd->PartitionIndex = fpq->Partition;
            pd->HighWatermark = -1;
            pd->LastStableOffset = -1;
            pd->LogStartOffset = -1;
            pd->NumAbortedTransactions = by_id || req->api_version >= 4 ? 0 : -1;
            pd->PreferredReadReplica = -1;
            pd->Records.ptr = NULL;
            pd->Records.len = 0;
            if (!s || fpq->Partition < 0 || fpq->Partition >= s->partitions) {
                pd->ErrorCode =
                    by_id && !s ? LS_KERR_UNKNOWN_TOPIC_ID : LS_KERR_UNKNOWN_TOPIC_OR_PARTITION;
                ctx->any_error = true;
                continue;
            }
            if (fpq->CurrentLeaderEpoch > 0) {
                pd->ErrorCode = LS_KERR_UNKNOWN_LEADER_EPOCH; /* our only epoch is 0 */
                ctx->any_error = true;
                continue;
            }
            fp->log_id = ls_stream_log_id(s, fpq->Partition);
            fp->offset = fpq->FetchOffset;
            fp->max_bytes = fpq->PartitionMaxBytes > 0 ? fpq->PartitionMaxBytes : 1;
        }
        if (s) ls_stream_release(s);
    }
    ctx->budget = m->MaxBytes > 0 ? m->MaxBytes : INT32_MAX;
    ctx->deadline_ms = ls_clock_mono_ms() + (m->MaxWaitMs > 0 ? m->MaxWaitMs : 0);
    fetch_read_next(ctx);
}
