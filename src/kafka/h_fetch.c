/* Fetch (key 1), v4+ (v13+ names topics by id).
 *
 * State machine of one fetch:
 *   READING --all partitions read--> (bytes >= MinBytes, an error, or
 *   MaxWaitMs == 0) --> RESPOND
 *                     otherwise --> WAITING (commit waiters on every log +
 *                     a MaxWaitMs timer) --first commit--> READING again
 *                                                 --timer--> RESPOND
 * Each read is bounded by PartitionMaxBytes, and the response by MaxBytes;
 * only the first partition with records may exceed its limit (its first
 * entry is returned whole: KIP-74 progress guarantee). A later partition
 * whose first entry alone exceeds what it was allowed returns no records in
 * this response (only its offsets), as Kafka does for a batch that does not
 * fit; clients rotate their partitions, so it comes first in a later fetch.
 * (The log reader's unit is an entry: one flush's or block's whole batches,
 * so such a partition may lose its turn where Kafka would return the
 * batches that fit.) A fetch offset inside a batch gets the whole batch;
 * clients skip the records before their offset. Two ways to read a round:
 *   - parallel, when the partitions' PartitionMaxBytes add up to no more
 *     than MaxBytes (librdkafka's and the Java client's defaults: 1 MiB per
 *     partition, 50 MiB per response): every partition's read is issued at
 *     once, so reads that go to the object store overlap instead of queueing
 *     behind each other (a catch-up of 16 partitions waited for 16 store
 *     reads in turn); the budget cannot bind, so nothing is lost by reading
 *     out of order. outstanding counts the reads not finished; the round
 *     ends when it drops to zero.
 *   - serial otherwise: partitions in request order, so the byte budget is
 *     spent in order (next = the partition being read).
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
#include "kafka/kmetrics.h"
#include "kafka/kquota.h"
#include "kafka/msg.h"
#include "kafka/names.h"
#include "kafka/services.h"

typedef struct fetch_ctx fetch_ctx_t;

typedef struct fetch_part {
    fetch_ctx_t *ctx;
    ls_kafka_FetchResponse_PartitionData *pd;
    int64_t log_id; /* -1: partition has a fixed error */
    int64_t offset;
    int32_t max_bytes;
    size_t read_max; /* the limit its last read was given */
    ls_read_result_t res;
    bool have_res;
    ls_log_waiter_t *waiter;
    ls_kmetrics_fetch_topic_t m;
} fetch_part_t;

struct fetch_ctx {
    ls_kreq_t *req;
    ls_kafka_FetchRequest m;
    ls_kafka_FetchResponse resp;
    fetch_part_t *parts;
    int nparts;
    int next;        /* serial: next partition to read */
    bool parallel;   /* this round reads every partition at once */
    int outstanding; /* parallel: reads issued and not finished (+1 while issuing) */
    int64_t budget;  /* remaining response bytes */
    size_t total;
    bool any_error;
    bool waiting;
    bool reading;
    int64_t deadline_ms; /* monotonic: answer by then */
    uv_timer_t timer;
    bool timer_used;
};

static void fetch_read_next(fetch_ctx_t *ctx);
static void fetch_start_round(fetch_ctx_t *ctx);

static void ctx_free_cb(uv_handle_t *h) { ls_free(h->data); }

/* KIP-74 in request order: the first partition with records keeps them
 * whole; a later one that got more than its limit (an entry larger than
 * what it was allowed) is left without records. */
static void drop_oversized(fetch_ctx_t *ctx)
{
    bool any = false;
    for (int i = 0; i < ctx->nparts; i++) {
        fetch_part_t *fp = &ctx->parts[i];
        if (!fp->have_res || fp->res.bytes == 0) continue;
        if (!any) {
            any = true;
            continue;
        }
        if (fp->res.bytes <= fp->read_max) continue;
        ls_read_result_free(&fp->res);
        memset(&fp->res, 0, sizeof fp->res);
        fp->have_res = false;
        fp->pd->NumAbortedTransactions = 0;
        fp->pd->AbortedTransactions = NULL;
    }
}

static void fetch_respond(fetch_ctx_t *ctx)
{
    ls_kreq_t *req = ctx->req;
    drop_oversized(ctx);
    /* consumer_byte_rate: a fetch over it is answered with no records and
     * not counted, as Kafka's (kafka/kquota.h) */
    double bytes = 0;
    for (int i = 0; i < ctx->nparts; i++)
        for (int s = 0; ctx->parts[i].have_res && s < ctx->parts[i].res.nslices; s++)
            bytes += (double)ctx->parts[i].res.slices[s].len;
    bool throttled = ls_kreq_quota_record(req, LS_QUOTA_CONSUMER_BYTE_RATE, bytes) > 0;
    if (throttled) ls_kreq_quota_unrecord(req, LS_QUOTA_CONSUMER_BYTE_RATE, bytes);
    ctx->resp.ThrottleTimeMs = req->throttle_ms;
    for (int i = 0; i < ctx->nparts; i++) {
        fetch_part_t *fp = &ctx->parts[i];
        if (fp->waiter) {
            ls_logstore_wait_cancel(req->svc->logs, fp->waiter);
            fp->waiter = NULL;
        }
        if (fp->have_res && fp->res.nslices && !throttled) {
            fp->pd->RecordRefs =
                ls_arena_alloc(req->arena, sizeof(ls_kref_t) * (size_t)fp->res.nslices);
            for (int s = 0; s < fp->res.nslices; s++) {
                const ls_read_slice_t *sl = &fp->res.slices[s];
                fp->pd->RecordRefs[s] = (ls_kref_t){sl->chunk, sl->off, sl->len};
                ls_kmetrics_fetched(&fp->m, fp->offset, sl->chunk->data + sl->off, sl->len);
            }
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
    fetch_start_round(ctx);
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

/* A partition's read is complete: account for it and go on. */
static void part_done(fetch_part_t *fp)
{
    fetch_ctx_t *ctx = fp->ctx;
    ctx->total += fp->res.bytes;
    ctx->budget -= (int64_t)fp->res.bytes;
    if (ctx->parallel) {
        if (--ctx->outstanding == 0) fetch_done_reading(ctx);
        return;
    }
    ctx->next++;
    if (!ctx->reading) fetch_read_next(ctx);
}

/* read_committed: the aborted transactions overlapping what was read (up to
 * the LSO), so the client drops their records (KIP-98). */
static void on_aborted(void *arg, ls_status st, const ls_aborted_t *v, int n)
{
    fetch_part_t *fp = arg;
    fetch_ctx_t *ctx = fp->ctx;
    ls_kafka_FetchResponse_PartitionData *pd = fp->pd;
    if (st != LS_OK) {
        /* records without their aborted list would show aborted data: none
         * are returned; a trim that passed them while they were read is
         * OFFSET_OUT_OF_RANGE (the client resets as after any trim) */
        ls_read_result_free(&fp->res);
        memset(&fp->res, 0, sizeof fp->res);
        pd->ErrorCode = st == LS_ERANGE ? LS_KERR_OFFSET_OUT_OF_RANGE : LS_KERR_KAFKA_STORAGE_ERROR;
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
    part_done(fp);
}

static void on_read(void *arg, ls_read_result_t *res)
{
    fetch_part_t *fp = arg;
    fetch_ctx_t *ctx = fp->ctx;
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
                            res->last_stable_offset - 1, on_aborted, fp);
        return;
    }
    part_done(fp);
}

static void part_read(fetch_part_t *fp, size_t max)
{
    ls_kafka_services_t *b = fp->ctx->req->svc;
    fp->read_max = max;
    if (fp->ctx->m.IsolationLevel == 1)
        ls_logstore_read_committed(b->logs, fp->log_id, fp->offset, max, on_read, fp);
    else
        ls_logstore_read(b->logs, fp->log_id, fp->offset, max, on_read, fp);
}

/* Whether this round reads every partition at once: their limits add up to
 * no more than the response's, so the order of reading cannot matter. */
static bool fits_budget(const fetch_ctx_t *ctx)
{
    int64_t sum = 0, live = 0;
    for (int i = 0; i < ctx->nparts; i++) {
        if (ctx->parts[i].log_id < 0) continue;
        sum += ctx->parts[i].max_bytes;
        live++;
    }
    return live > 1 && sum <= ctx->budget;
}

static void fetch_read_all(fetch_ctx_t *ctx)
{
    ctx->outstanding = 1; /* held while issuing: a read may finish inline */
    for (int i = 0; i < ctx->nparts; i++) {
        fetch_part_t *fp = &ctx->parts[i];
        if (fp->log_id < 0) continue;
        ctx->outstanding++;
        part_read(fp, (size_t)fp->max_bytes);
    }
    if (--ctx->outstanding == 0) fetch_done_reading(ctx);
}

/* Starts a round of reads (a new fetch, or a wake-up after new data). */
static void fetch_start_round(fetch_ctx_t *ctx)
{
    ctx->next = 0;
    ctx->total = 0;
    ctx->budget = ctx->m.MaxBytes > 0 ? ctx->m.MaxBytes : INT32_MAX;
    ctx->parallel = fits_budget(ctx);
    if (ctx->parallel)
        fetch_read_all(ctx);
    else
        fetch_read_next(ctx);
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
        part_read(fp, max);
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
        const char *name = NULL;
        if (by_id) {
            s = ls_catalog_lookup_id(b->catalog, &ft->TopicId);
            name = s ? s->name : NULL;
        } else {
            name = ls_kafka_topic_name(req->arena, ft->Topic);
            s = name ? ls_catalog_lookup(b->catalog, LS_DEFAULT_NAMESPACE, name) : NULL;
        }
        /* as Kafka: READ on the topic, checked before whether it exists */
        bool denied = name && !ls_kreq_allowed(req, LS_ACL_OP_READ, LS_ACL_RES_TOPIC, name);
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
            if (denied) {
                pd->ErrorCode = LS_KERR_TOPIC_AUTHORIZATION_FAILED;
                ctx->any_error = true;
                continue;
            }
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
            fp->m = ls_kmetrics_fetch_topic(s->name);
            fp->max_bytes = fpq->PartitionMaxBytes > 0 ? fpq->PartitionMaxBytes : 1;
        }
        if (s) ls_stream_release(s);
    }
    /* a fetch under consumer_byte_rate asks for no more than its window
     * allows, else it would be throttled (and answered empty) forever */
    double quota_max = ls_kreq_quota_window_max(req, LS_QUOTA_CONSUMER_BYTE_RATE);
    if (quota_max >= 0 && (m->MaxBytes <= 0 || (double)m->MaxBytes > quota_max))
        m->MaxBytes = quota_max < 1 ? 1 : (int32_t)quota_max;
    ctx->deadline_ms = ls_clock_mono_ms() + (m->MaxWaitMs > 0 ? m->MaxWaitMs : 0);
    fetch_start_round(ctx);
}
