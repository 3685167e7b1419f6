/* ShareFetch (key 78) and ShareAcknowledge (key 79): records of share groups
 * (KIP-932), handed to one member at a time and acknowledged one by one.
 *
 * Any broker serves any share partition: its state (group/share_partition.h)
 * lives in the metadata store and this broker keeps a copy it writes by
 * compare-and-set (group/share_store.h). Clients send to the partition's
 * leader from Metadata, so one broker normally serves a partition.
 *
 * One request:
 *   SESSION   the share session step (epoch 0 opens with the request's
 *             partitions, a positive epoch adds and forgets, -1 closes after
 *             the acknowledgements)
 *   LOAD      every partition named (fetched or acknowledged) is loaded; a
 *             partition without a stored state starts at the high watermark,
 *             the log start or the first record at most a duration old
 *             (share.auto.offset.reset of the group: latest, the default,
 *             earliest or by_duration:<duration>, looked up by time first)
 *   ACK       acknowledgement batches applied, all or nothing per batch
 *   READ      (ShareFetch, not a renewal, not closing) from each partition's
 *             next offset (ls_sharep_next_offset) whole batches up to the
 *             byte budget, then records acquired for the member below the
 *             end of what was read, up to MaxRecords in all; with nothing
 *             acquired anywhere the request waits for new records on any of
 *             its partitions until MaxWaitMs, then reads again
 *   SYNC      every changed partition stored; only then the answer goes out
 *             (a partition whose write lost to another broker answers
 *             NOT_LEADER_OR_FOLLOWER and none of its records: those
 *             acquisitions never happened)
 * Records go out as the log holds them (whole batches, referenced, not
 * copied); AcquiredRecords tell the client which offsets are its own, and
 * the client acknowledges offsets in them that held no record (a control
 * batch, a compacted gap) as GAP.
 *
 * With the group's share.isolation.level=read_committed the read stops at
 * the last stable offset and acquired records of aborted transactions are
 * archived (REJECT on the member's behalf) before the answer.
 *
 * Not served: the record-limit acquire mode's exact batch boundaries (records
 * are acquired one offset at a time, so both modes respect MaxRecords). */
#include <string.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/diag.h"
#include "group/group_configs.h"
#include "group/share_store.h"
#include "kafka/handlers.h"
#include "kafka/msg.h"
#include "kafka/names.h"
#include "kafka/services.h"

/* The most bytes one partition's read may return in one round. */
#define SF_PART_MAX_BYTES (8 << 20)

typedef struct sf_ctx sf_ctx_t;

/* One acknowledgement batch as the wire gives it. */
typedef struct sf_ack {
    int64_t first, last;
    const int8_t *types;
    int ntypes;
} sf_ack_t;

typedef struct sf_part {
    sf_ctx_t *ctx;
    ls_share_tp_t tp;
    int16_t err, ack_err;
    const char *msg, *ack_msg;
    int64_t log_id; /* -1: a fixed error */
    const sf_ack_t *acks;
    int nacks;
    bool fetch; /* in the session's fetch set */
    bool quiet; /* only there to release the closing member's records: not answered */
    ls_share_part_t *sp;
    bool have_res;
    ls_read_result_t res;
    ls_sharep_range_t *acq; /* arena copy */
    int nacq;
    ls_log_waiter_t *waiter;
} sf_part_t;

struct sf_ctx {
    ls_kreq_t *req;
    bool fetch_api; /* ShareFetch (else ShareAcknowledge) */
    char *gid, *member;
    int32_t epoch;
    uint64_t session_id; /* ShareFetch: the session this request stepped */
    bool committed;      /* the group's share.isolation.level is read_committed */
    /* the broker's share partition settings with the group's own
     * share.record.lock.duration.ms, share.delivery.count.limit and
     * share.partition.max.record.locks */
    ls_sharep_config_t pcfg;
    bool renew;
    int32_t max_wait_ms, max_bytes, max_records;
    int64_t deadline_ms;
    sf_part_t *parts;
    int nparts;
    int pending;
    int acquired; /* records acquired this request */
    bool waiting, timer_used;
    uv_timer_t timer;
};

static void sf_read_round(sf_ctx_t *ctx);

/* The whole v2 record batches of one read slice, in order; a torn tail is
 * left out. */
typedef struct batch_it {
    const ls_read_slice_t *sl;
    size_t at;           /* where the next batch begins */
    size_t start;        /* this batch: its first byte in the slice */
    int64_t base, last;  /* its offsets */
    int64_t producer_id; /* its producer (-1: none) */
    uint16_t attrs;      /* its attributes */
} batch_it_t;

static bool batch_next(batch_it_t *it)
{
    const ls_read_slice_t *sl = it->sl;
    if (sl->len - it->at < 61) return false;
    const uint8_t *b = sl->chunk->data + sl->off + it->at;
    uint32_t blen = ls_be32_get(b + 8);
    if (blen < 49 || blen > sl->len - it->at - 12) return false;
    it->start = it->at;
    it->base = (int64_t)ls_be64_get(b);
    it->last = it->base + (int32_t)ls_be32_get(b + 23);
    it->attrs = ls_be16_get(b + 21);
    it->producer_id = (int64_t)ls_be64_get(b + 43);
    it->at += 12 + (size_t)blen;
    return true;
}

/* The whole batches of one read slice that hold an offset in [lo, hi], as
 * the slice's (off, len); false with none. */
static bool batches_within(const ls_read_slice_t *sl, int64_t lo, int64_t hi, size_t *off,
                           size_t *len)
{
    size_t start = SIZE_MAX, end = 0;
    for (batch_it_t it = {.sl = sl}; batch_next(&it) && it.base <= hi;)
        if (it.last >= lo) {
            if (start == SIZE_MAX) start = it.start;
            end = it.at;
        }
    if (start == SIZE_MAX) return false;
    *off = sl->off + start;
    *len = end - start;
    return true;
}

static void ctx_free_cb(uv_handle_t *h) { ls_free(h->data); }

static void sf_free(sf_ctx_t *ctx)
{
    for (int i = 0; i < ctx->nparts; i++) {
        sf_part_t *p = &ctx->parts[i];
        if (p->waiter) ls_logstore_wait_cancel(ctx->req->svc->logs, p->waiter);
        if (p->have_res) ls_read_result_free(&p->res);
        if (p->sp) ls_share_part_release(p->sp);
    }
    ls_free(ctx->parts);
    if (ctx->timer_used) {
        uv_timer_stop(&ctx->timer);
        ctx->timer.data = ctx;
        uv_close((uv_handle_t *)&ctx->timer, ctx_free_cb);
    } else {
        ls_free(ctx);
    }
}

static ls_kstr_t opt_kstr(const char *s) { return s ? ls_kstr_c(s) : ls_kstr_null(); }

static int32_t lock_ms(const sf_ctx_t *ctx) { return ctx->pcfg.record_lock_duration_ms; }

/* Parts in the order they were added, grouped by topic id on the wire. */
static void sf_respond(sf_ctx_t *ctx)
{
    ls_kreq_t *req = ctx->req;
    ls_arena_t *a = req->arena;
    if (ctx->fetch_api && ctx->epoch == -1)
        ls_share_session_close(req->svc->shares, ctx->gid, ctx->member);
    ls_kw_t w;
    if (ctx->fetch_api) {
        ls_kafka_ShareFetchResponse r;
        memset(&r, 0, sizeof r);
        r.ErrorMessage = ls_kstr_null();
        r.AcquisitionLockTimeoutMs = lock_ms(ctx);
        r.Responses = ls_kmsg_alloc(a, ctx->nparts, sizeof *r.Responses);
        for (int i = 0; i < ctx->nparts; i++) {
            sf_part_t *p = &ctx->parts[i];
            if (p->quiet) continue;
            ls_kafka_ShareFetchResponse_ShareFetchableTopicResponse *t = NULL;
            for (int32_t k = 0; k < r.NumResponses && !t; k++)
                if (!memcmp(&r.Responses[k].TopicId, &p->tp.topic_id, sizeof p->tp.topic_id))
                    t = &r.Responses[k];
            if (!t) {
                t = &r.Responses[r.NumResponses++];
                t->TopicId = p->tp.topic_id;
                t->Partitions = ls_kmsg_alloc(a, ctx->nparts, sizeof *t->Partitions);
            }
            ls_kafka_ShareFetchResponse_PartitionData *pd = &t->Partitions[t->NumPartitions++];
            pd->PartitionIndex = p->tp.partition;
            pd->ErrorCode = p->err;
            pd->ErrorMessage = opt_kstr(p->msg);
            pd->AcknowledgeErrorCode = p->ack_err;
            pd->AcknowledgeErrorMessage = opt_kstr(p->ack_msg);
            pd->CurrentLeader.LeaderId = -1;
            pd->CurrentLeader.LeaderEpoch = -1;
            if (p->nacq > 0 && p->have_res) {
                /* only the batches holding acquired offsets: what was read
                 * past them (MaxRecords reached) is not the member's */
                pd->RecordRefs = ls_arena_alloc(a, sizeof(ls_kref_t) * (size_t)p->res.nslices);
                int64_t lo = p->acq[0].first, hi = p->acq[p->nacq - 1].last;
                for (int s = 0; s < p->res.nslices; s++) {
                    const ls_read_slice_t *sl = &p->res.slices[s];
                    size_t off, len;
                    if (batches_within(sl, lo, hi, &off, &len))
                        pd->RecordRefs[pd->NumRecordRefs++] = (ls_kref_t){sl->chunk, off, len};
                }
            }
            pd->NumAcquiredRecords = p->nacq;
            pd->AcquiredRecords = ls_kmsg_alloc(a, p->nacq, sizeof *pd->AcquiredRecords);
            for (int k = 0; k < p->nacq; k++) {
                pd->AcquiredRecords[k].FirstOffset = p->acq[k].first;
                pd->AcquiredRecords[k].LastOffset = p->acq[k].last;
                pd->AcquiredRecords[k].DeliveryCount = (int16_t)p->acq[k].delivery_count;
            }
        }
        ls_kreq_encode(req, &w, &r);
    } else {
        ls_kafka_ShareAcknowledgeResponse r;
        memset(&r, 0, sizeof r);
        r.ErrorMessage = ls_kstr_null();
        r.AcquisitionLockTimeoutMs = lock_ms(ctx);
        r.Responses = ls_kmsg_alloc(a, ctx->nparts, sizeof *r.Responses);
        for (int i = 0; i < ctx->nparts; i++) {
            sf_part_t *p = &ctx->parts[i];
            if (p->quiet) continue;
            ls_kafka_ShareAcknowledgeResponse_ShareAcknowledgeTopicResponse *t = NULL;
            for (int32_t k = 0; k < r.NumResponses && !t; k++)
                if (!memcmp(&r.Responses[k].TopicId, &p->tp.topic_id, sizeof p->tp.topic_id))
                    t = &r.Responses[k];
            if (!t) {
                t = &r.Responses[r.NumResponses++];
                t->TopicId = p->tp.topic_id;
                t->Partitions = ls_kmsg_alloc(a, ctx->nparts, sizeof *t->Partitions);
            }
            ls_kafka_ShareAcknowledgeResponse_PartitionData *pd =
                &t->Partitions[t->NumPartitions++];
            pd->PartitionIndex = p->tp.partition;
            pd->ErrorCode = p->err ? p->err : p->ack_err;
            pd->ErrorMessage = opt_kstr(p->err ? p->msg : p->ack_msg);
            pd->CurrentLeader.LeaderId = -1;
            pd->CurrentLeader.LeaderEpoch = -1;
        }
        if (ctx->epoch == -1) ls_share_session_close(req->svc->shares, ctx->gid, ctx->member);
        ls_kreq_encode(req, &w, &r);
    }
    sf_free(ctx);
    ls_kreq_respond(req, &w);
}

/* A whole-request error (session, group id): no partition is touched. */
static void sf_fail(ls_kreq_t *req, bool fetch_api, int16_t err, const char *msg)
{
    ls_kw_t w;
    if (fetch_api) {
        ls_kafka_ShareFetchResponse r;
        memset(&r, 0, sizeof r);
        r.ErrorCode = err;
        r.ErrorMessage = opt_kstr(msg);
        ls_kreq_encode(req, &w, &r);
    } else {
        ls_kafka_ShareAcknowledgeResponse r;
        memset(&r, 0, sizeof r);
        r.ErrorCode = err;
        r.ErrorMessage = opt_kstr(msg);
        ls_kreq_encode(req, &w, &r);
    }
    ls_kreq_respond(req, &w);
}

/* ---------------------------------------------------------------- SYNC */

static void sf_synced(void *arg, ls_status st)
{
    sf_part_t *p = arg;
    sf_ctx_t *ctx = p->ctx;
    if (st != LS_OK) {
        /* what this request changed is not stored: not one of it happened */
        int16_t e =
            st == LS_ECONFLICT ? LS_KERR_NOT_LEADER_OR_FOLLOWER : LS_KERR_KAFKA_STORAGE_ERROR;
        p->err = e;
        p->msg = st == LS_ECONFLICT ? "Another broker took this share partition over; fetch again."
                                    : "The share partition's state could not be stored.";
        if (p->nacks) {
            p->ack_err = e;
            p->ack_msg = p->msg;
        }
        p->nacq = 0;
    }
    if (--ctx->pending == 0) sf_respond(ctx);
}

static void sf_sync_all(sf_ctx_t *ctx)
{
    ctx->pending = 1;
    for (int i = 0; i < ctx->nparts; i++) {
        sf_part_t *p = &ctx->parts[i];
        if (!p->sp) continue;
        ctx->pending++;
        ls_share_part_sync(p->sp, sf_synced, p);
    }
    if (--ctx->pending == 0) sf_respond(ctx);
}

/* ---------------------------------------------------------------- READ */

/* One past the last offset of the whole batches in res. */
static int64_t read_end(const ls_read_result_t *res)
{
    int64_t end = -1;
    for (int s = 0; s < res->nslices; s++)
        for (batch_it_t it = {.sl = &res->slices[s]}; batch_next(&it);)
            if (it.last + 1 > end) end = it.last + 1;
    return end;
}

static void sf_round_done(sf_ctx_t *ctx);

/* Records are acquired only for a session still open as this request found
 * it and a connection that can still take the answer: a member that closed
 * its session (or left, or whose client went away) while this request
 * waited would otherwise hold locks nobody acknowledges until they run
 * out. */
static bool sf_session_current(sf_ctx_t *ctx)
{
    return !ls_kreq_conn_closed(ctx->req) &&
           ls_share_session_id(ctx->req->svc->shares, ctx->gid, ctx->member) == ctx->session_id;
}

/* One partition's read finished (its acquisitions settled). */
static void sf_read_done(sf_part_t *p)
{
    sf_ctx_t *ctx = p->ctx;
    if (p->nacq == 0) {
        ls_read_result_free(&p->res);
        p->have_res = false;
    }
    if (--ctx->pending == 0) sf_round_done(ctx);
}

/* Settles offsets [first, last] the member acquired this round as type
 * (REJECT: an aborted transaction's records, archived; RELEASE: handed
 * back) and takes them out of what the answer tells the member. */
static void sf_unacquire(sf_part_t *p, int64_t first, int64_t last, uint8_t type)
{
    sf_ctx_t *ctx = p->ctx;
    ls_sharep_acknowledge(ls_share_part_state(p->sp), ctx->member, first, last, &type, 1,
                          ls_clock_mono_ms());
    ls_sharep_range_t *out = ls_arena_alloc(ctx->req->arena, (size_t)(p->nacq + 1) * sizeof *out);
    int n = 0;
    for (int k = 0; k < p->nacq; k++) {
        ls_sharep_range_t r = p->acq[k];
        if (r.last < first || r.first > last) {
            out[n++] = r;
            continue;
        }
        if (r.first < first) out[n++] = (ls_sharep_range_t){r.first, first - 1, r.delivery_count};
        if (r.last > last) out[n++] = (ls_sharep_range_t){last + 1, r.last, r.delivery_count};
        int64_t lo = r.first > first ? r.first : first, hi = r.last < last ? r.last : last;
        ctx->acquired -= (int)(hi - lo + 1);
    }
    p->acq = out;
    p->nacq = n;
}

/* read_committed: the acquired records of aborted transactions are
 * archived, never handed out (as Kafka's broker does); a transactional
 * data batch is aborted when an aborted transaction of its producer began
 * at or before it and was ended by a marker after it. */
static void sf_on_aborted(void *arg, ls_status st, const ls_aborted_t *v, int nv)
{
    sf_part_t *p = arg;
    if (st != LS_OK) {
        /* the aborted list is not known (a trim passed, the store failed):
         * nothing is handed out from this read */
        while (p->nacq > 0) /* range by range: an acknowledgement covers only
                             * offsets the member holds, all or nothing */
            sf_unacquire(p, p->acq[0].first, p->acq[0].last, LS_SHAREP_RELEASE);
        if (st != LS_ERANGE) {
            p->err = LS_KERR_KAFKA_STORAGE_ERROR;
            p->msg = "The partition's aborted transactions could not be read.";
        }
        sf_read_done(p);
        return;
    }
    for (int s = 0; s < p->res.nslices && nv > 0 && p->nacq > 0; s++) {
        for (batch_it_t it = {.sl = &p->res.slices[s]}; p->nacq > 0 && batch_next(&it);) {
            if (!(it.attrs & 0x10) || (it.attrs & 0x20)) continue; /* not transactional data */
            bool aborted = false;
            for (int k = 0; k < nv && !aborted; k++)
                aborted = v[k].producer_id == it.producer_id && v[k].first_offset <= it.base &&
                          it.base < v[k].marker_offset;
            /* each acquired part of the batch (acknowledgements are all or
             * nothing over offsets the member holds) */
            for (int k = 0; aborted && k < p->nacq;) {
                ls_sharep_range_t r = p->acq[k];
                if (r.last < it.base || r.first > it.last) {
                    k++;
                    continue;
                }
                sf_unacquire(p, r.first > it.base ? r.first : it.base,
                             r.last < it.last ? r.last : it.last, LS_SHAREP_REJECT);
                k = 0; /* the ranges changed */
            }
        }
    }
    sf_read_done(p);
}

static void sf_on_read(void *arg, ls_read_result_t *res)
{
    sf_part_t *p = arg;
    sf_ctx_t *ctx = p->ctx;
    p->res = *res;
    p->have_res = true;
    if (res->st == LS_OK && res->nslices > 0 && ctx->acquired < ctx->max_records &&
        sf_session_current(ctx)) {
        int64_t end = read_end(res);
        if (end > res->high_watermark) end = res->high_watermark;
        if (ctx->committed && end > res->last_stable_offset) end = res->last_stable_offset;
        const ls_sharep_range_t *rg;
        int n = ls_sharep_acquire(ls_share_part_state(p->sp), ctx->member, end,
                                  ctx->max_records - ctx->acquired, ls_clock_mono_ms(), &rg);
        if (n > 0) {
            p->acq = ls_arena_alloc(ctx->req->arena, (size_t)n * sizeof *p->acq);
            memcpy(p->acq, rg, (size_t)n * sizeof *p->acq);
            p->nacq = n;
            for (int k = 0; k < n; k++)
                ctx->acquired += (int)(rg[k].last - rg[k].first + 1);
            if (ctx->committed) { /* the read goes on in sf_on_aborted */
                ls_logstore_aborted(ctx->req->svc->logs, p->log_id, p->acq[0].first,
                                    p->acq[n - 1].last, sf_on_aborted, p);
                return;
            }
        }
    } else if (res->st != LS_OK && res->st != LS_ERANGE) {
        p->err = LS_KERR_KAFKA_STORAGE_ERROR;
        p->msg = "The partition's records could not be read.";
    }
    sf_read_done(p);
}

static void sf_timeout(uv_timer_t *t)
{
    sf_ctx_t *ctx = t->data;
    if (!ctx->waiting) return;
    ctx->waiting = false;
    for (int i = 0; i < ctx->nparts; i++)
        if (ctx->parts[i].waiter) {
            ls_logstore_wait_cancel(ctx->req->svc->logs, ctx->parts[i].waiter);
            ctx->parts[i].waiter = NULL;
        }
    sf_sync_all(ctx);
}

static void sf_wake(void *arg)
{
    sf_part_t *woken = arg;
    sf_ctx_t *ctx = woken->ctx;
    woken->waiter = NULL; /* fired waiters are freed by the log store */
    if (!ctx->waiting) return;
    ctx->waiting = false;
    uv_timer_stop(&ctx->timer);
    for (int i = 0; i < ctx->nparts; i++)
        if (ctx->parts[i].waiter) {
            ls_logstore_wait_cancel(ctx->req->svc->logs, ctx->parts[i].waiter);
            ctx->parts[i].waiter = NULL;
        }
    sf_read_round(ctx);
}

static void sf_round_done(sf_ctx_t *ctx)
{
    int64_t now = ls_clock_mono_ms();
    if (ctx->acquired > 0 || now >= ctx->deadline_ms || !sf_session_current(ctx) ||
        *ctx->req->svc->stopping) {
        sf_sync_all(ctx);
        return;
    }
    ls_kreq_t *req = ctx->req;
    ctx->waiting = true;
    for (int i = 0; i < ctx->nparts; i++) {
        sf_part_t *p = &ctx->parts[i];
        if (p->fetch && p->sp && !p->err)
            p->waiter = ls_logstore_wait(req->svc->logs, p->log_id, sf_wake, p);
    }
    if (!ctx->timer_used) {
        uv_timer_init(req->svc->loop, &ctx->timer);
        ctx->timer_used = true;
    }
    ctx->timer.data = ctx;
    /* locks of other members may run out meanwhile: look again at least
     * once a second */
    int64_t wait = ctx->deadline_ms - now;
    uv_timer_start(&ctx->timer, sf_timeout, (uint64_t)(wait < 1000 ? wait : 1000), 0);
}

static void sf_read_round(sf_ctx_t *ctx)
{
    ls_kafka_services_t *svc = ctx->req->svc;
    int live = 0;
    for (int i = 0; i < ctx->nparts; i++)
        if (ctx->parts[i].fetch && ctx->parts[i].sp && !ctx->parts[i].err) live++;
    size_t per = live ? (size_t)ctx->max_bytes / (size_t)live : 0;
    if (per > SF_PART_MAX_BYTES) per = SF_PART_MAX_BYTES;
    if (per < 1) per = 1;
    ctx->pending = 1;
    int64_t now = ls_clock_mono_ms();
    for (int i = 0; i < ctx->nparts; i++) {
        sf_part_t *p = &ctx->parts[i];
        if (!p->fetch || !p->sp || p->err) continue;
        ls_sharep_t *sp = ls_share_part_state(p->sp);
        ls_log_info_t info;
        ls_logstore_info(svc->logs, p->log_id, &info);
        ls_sharep_log_start(sp, info.log_start);
        int64_t from = ls_sharep_next_offset(sp, now);
        int64_t bound = ctx->committed ? info.last_stable_offset : info.high_watermark;
        if (from < 0 || from >= bound) continue;
        ctx->pending++;
        if (ctx->committed)
            ls_logstore_read_committed(svc->logs, p->log_id, from, per, sf_on_read, p);
        else
            ls_logstore_read(svc->logs, p->log_id, from, per, sf_on_read, p);
    }
    if (--ctx->pending == 0) sf_round_done(ctx);
}

/* ---------------------------------------------------------------- ACK */

static void sf_apply_acks(sf_ctx_t *ctx)
{
    int64_t now = ls_clock_mono_ms();
    for (int i = 0; i < ctx->nparts; i++) {
        sf_part_t *p = &ctx->parts[i];
        if (!p->sp || !p->nacks) continue;
        for (int k = 0; k < p->nacks; k++) {
            const sf_ack_t *b = &p->acks[k];
            if (ctx->renew) {
                for (int t = 0; t < b->ntypes; t++)
                    if (b->types[t] != LS_SHAREP_RENEW && b->types[t] != LS_SHAREP_GAP) {
                        p->ack_err = LS_KERR_INVALID_REQUEST;
                        p->ack_msg = "IsRenewAck requires RENEW acknowledgements only.";
                    }
                if (p->ack_err) break;
            }
            ls_sharep_err e =
                ls_sharep_acknowledge(ls_share_part_state(p->sp), ctx->member, b->first, b->last,
                                      (const uint8_t *)b->types, b->ntypes, now);
            if (e == LS_SPERR_INVALID_RECORD_STATE) {
                p->ack_err = LS_KERR_INVALID_RECORD_STATE;
                p->ack_msg = "A record acknowledged is not acquired by this member (its lock may "
                             "have run out).";
            } else if (e != LS_SPERR_NONE) {
                p->ack_err = LS_KERR_INVALID_REQUEST;
                p->ack_msg =
                    "An acknowledgement batch is malformed or past the records handed out.";
            }
        }
    }
}

/* ---------------------------------------------------------------- LOAD */

static void sf_loaded_all(sf_ctx_t *ctx)
{
    sf_apply_acks(ctx);
    if (ctx->epoch == -1) {
        /* the session closes: what the member still holds goes back (as
         * Kafka's broker does; the client acknowledged what it meant to) */
        int64_t now = ls_clock_mono_ms();
        for (int i = 0; i < ctx->nparts; i++)
            if (ctx->parts[i].sp)
                ls_sharep_release_member(ls_share_part_state(ctx->parts[i].sp), ctx->member, now);
    }
    if (ctx->fetch_api && ctx->epoch != -1 && !ctx->renew) {
        sf_read_round(ctx);
        return;
    }
    sf_sync_all(ctx);
}

static void sf_got(void *arg, ls_status st, ls_share_part_t *sp)
{
    sf_part_t *p = arg;
    sf_ctx_t *ctx = p->ctx;
    if (st != LS_OK) {
        p->err = LS_KERR_KAFKA_STORAGE_ERROR;
        p->msg = st == LS_ECORRUPT ? "The share partition's stored state is corrupt."
                                   : "The share partition's state could not be loaded.";
        if (p->nacks) {
            p->ack_err = p->err;
            p->ack_msg = p->msg;
        }
    } else {
        p->sp = sp;
    }
    if (--ctx->pending == 0) sf_loaded_all(ctx);
}

/* share.auto.offset.reset of the group: latest (Kafka's default) or
 * earliest; -1 for by_duration (its duration in *by_ms). */
static int64_t init_offset(sf_ctx_t *ctx, int64_t log_id, int64_t *by_ms)
{
    ls_log_info_t info;
    ls_logstore_info(ctx->req->svc->logs, log_id, &info);
    int32_t earliest = 0;
    char text[128];
    *by_ms = -1;
    if (ctx->req->svc->group_configs &&
        !ls_group_configs_get(ctx->req->svc->group_configs, ctx->gid, LS_GROUP_CONFIG_SHARE_RESET,
                              &earliest) &&
        ls_group_configs_get_text(ctx->req->svc->group_configs, ctx->gid,
                                  LS_GROUP_CONFIG_SHARE_RESET, text, sizeof text) &&
        (*by_ms = ls_group_config_duration_ms(text)) >= 0)
        return -1;
    return earliest ? info.log_start : info.high_watermark;
}

/* by_duration: the first offset whose record is at most that old (the high
 * watermark when none is) starts a partition that has no state yet. */
static void sf_by_time(void *arg, ls_status st, int64_t offset, int64_t timestamp)
{
    sf_part_t *p = arg;
    sf_ctx_t *ctx = p->ctx;
    if (st != LS_OK) {
        sf_got(p, st, NULL);
        return;
    }
    ls_share_store_get(ctx->req->svc->shares, ctx->gid, &p->tp.topic_id, p->tp.partition, offset,
                       &ctx->pcfg, sf_got, p);
    (void)timestamp;
}

/* ---------------------------------------------------------------- requests */

static sf_part_t *part_add(sf_ctx_t *ctx, const ls_uuid_t *tid, int32_t partition, int *cap)
{
    for (int i = 0; i < ctx->nparts; i++)
        if (ctx->parts[i].tp.partition == partition &&
            !memcmp(&ctx->parts[i].tp.topic_id, tid, sizeof *tid))
            return &ctx->parts[i];
    if (ctx->nparts == *cap) {
        *cap = *cap ? 2 * *cap : 8;
        ctx->parts = ls_realloc(ctx->parts, (size_t)*cap * sizeof *ctx->parts);
    }
    sf_part_t *p = &ctx->parts[ctx->nparts++];
    memset(p, 0, sizeof *p);
    p->ctx = ctx;
    p->tp.topic_id = *tid;
    p->tp.partition = partition;
    p->log_id = -1;
    return p;
}

/* Resolves every partition and starts loading the valid ones. */
static void sf_start(sf_ctx_t *ctx)
{
    ls_kreq_t *req = ctx->req;
    ctx->pending = 1;
    for (int i = 0; i < ctx->nparts; i++) {
        sf_part_t *p = &ctx->parts[i];
        ls_stream_t *s = ls_catalog_lookup_id(req->svc->catalog, &p->tp.topic_id);
        if (!s) {
            p->err = LS_KERR_UNKNOWN_TOPIC_ID;
        } else if (!ls_kreq_allowed(req, LS_ACL_OP_READ, LS_ACL_RES_TOPIC, s->name)) {
            p->err = LS_KERR_TOPIC_AUTHORIZATION_FAILED;
        } else if (p->tp.partition < 0 || p->tp.partition >= s->partitions) {
            p->err = LS_KERR_UNKNOWN_TOPIC_OR_PARTITION;
        } else {
            p->log_id = ls_stream_log_id(s, p->tp.partition);
        }
        if (s) ls_stream_release(s);
        if (p->err) {
            if (p->nacks) p->ack_err = p->err;
            continue;
        }
        ctx->pending++;
        int64_t by_ms, init = init_offset(ctx, p->log_id, &by_ms);
        if (init < 0)
            ls_logstore_offset_for_time(req->svc->logs, p->log_id, ls_clock_wall_ms() - by_ms,
                                        sf_by_time, p);
        else
            ls_share_store_get(req->svc->shares, ctx->gid, &p->tp.topic_id, p->tp.partition, init,
                               &ctx->pcfg, sf_got, p);
    }
    if (--ctx->pending == 0) sf_loaded_all(ctx);
}

static int16_t session_error(ls_share_session_err e)
{
    switch (e) {
    case LS_SSERR_NONE: return LS_KERR_NONE;
    case LS_SSERR_NOT_FOUND: return LS_KERR_SHARE_SESSION_NOT_FOUND;
    case LS_SSERR_INVALID_EPOCH: return LS_KERR_INVALID_SHARE_SESSION_EPOCH;
    case LS_SSERR_LIMIT_REACHED: return LS_KERR_SHARE_SESSION_LIMIT_REACHED;
    }
    return LS_KERR_UNKNOWN_SERVER_ERROR;
}

/* The checks both APIs make before a session step; 0 or the error sent. */
static int16_t sf_check(ls_kreq_t *req, bool fetch_api, ls_kstr_t group, ls_kstr_t member,
                        char **gid, char **mid)
{
    bool ok1, ok2;
    *gid = ls_kgroup_cstr(req->arena, group, &ok1);
    *mid = ls_kgroup_cstr(req->arena, member, &ok2);
    int16_t err = 0;
    const char *msg = NULL;
    if (!ls_kreq_allowed_k(req, LS_ACL_OP_READ, LS_ACL_RES_GROUP, group)) {
        err = LS_KERR_GROUP_AUTHORIZATION_FAILED;
    } else if (!ok1 || !*gid || !**gid) {
        err = LS_KERR_INVALID_GROUP_ID;
        msg = "GroupId can't be empty.";
    } else if (!ok2 || !*mid || !**mid) {
        err = LS_KERR_INVALID_REQUEST;
        msg = "MemberId can't be empty.";
    } else if (!req->svc->shares) {
        err = LS_KERR_COORDINATOR_NOT_AVAILABLE;
    }
    if (err) sf_fail(req, fetch_api, err, msg);
    return err;
}

static sf_ctx_t *ctx_new(ls_kreq_t *req, bool fetch_api, char *gid, char *mid, int32_t epoch)
{
    sf_ctx_t *ctx = LS_NEW(sf_ctx_t);
    ctx->req = req;
    ctx->fetch_api = fetch_api;
    ctx->gid = gid;
    ctx->member = mid;
    ctx->epoch = epoch;
    ctx->pcfg = *ls_share_store_config(req->svc->shares);
    if (req->svc->group_configs) {
        ls_group_configs_get(req->svc->group_configs, gid, LS_GROUP_CONFIG_SHARE_LOCK,
                             &ctx->pcfg.record_lock_duration_ms);
        ls_group_configs_get(req->svc->group_configs, gid, LS_GROUP_CONFIG_SHARE_DELIVERY,
                             &ctx->pcfg.delivery_count_limit);
        ls_group_configs_get(req->svc->group_configs, gid, LS_GROUP_CONFIG_SHARE_LOCKS,
                             &ctx->pcfg.max_record_locks);
    }
    return ctx;
}

void ls_kafka_handle_share_fetch(ls_kreq_t *req)
{
    const ls_kafka_ShareFetchRequest *m = req->msg;
    char *gid, *mid;
    if (sf_check(req, true, m->GroupId, m->MemberId, &gid, &mid)) return;
    bool any_acks = false;
    for (int32_t t = 0; t < m->NumTopics; t++)
        for (int32_t k = 0; k < m->Topics[t].NumPartitions; k++)
            if (m->Topics[t].Partitions[k].NumAcknowledgementBatches > 0) any_acks = true;
    if (m->ShareSessionEpoch == 0 && any_acks) {
        sf_fail(req, true, LS_KERR_INVALID_REQUEST,
                "Acknowledgements cannot be sent with share session epoch 0.");
        return;
    }
    /* the session step: the request's partitions join, the forgotten leave */
    int nadd = 0, nforget = 0;
    for (int32_t t = 0; t < m->NumTopics; t++)
        nadd += m->Topics[t].NumPartitions;
    for (int32_t t = 0; t < m->NumForgottenTopicsData; t++)
        nforget += m->ForgottenTopicsData[t].NumPartitions;
    ls_share_tp_t *add = ls_arena_alloc(req->arena, (size_t)(nadd + 1) * sizeof *add);
    ls_share_tp_t *forget = ls_arena_alloc(req->arena, (size_t)(nforget + 1) * sizeof *forget);
    nadd = nforget = 0;
    for (int32_t t = 0; t < m->NumTopics; t++)
        for (int32_t k = 0; k < m->Topics[t].NumPartitions; k++)
            add[nadd++] =
                (ls_share_tp_t){m->Topics[t].TopicId, m->Topics[t].Partitions[k].PartitionIndex};
    for (int32_t t = 0; t < m->NumForgottenTopicsData; t++)
        for (int32_t k = 0; k < m->ForgottenTopicsData[t].NumPartitions; k++)
            forget[nforget++] = (ls_share_tp_t){m->ForgottenTopicsData[t].TopicId,
                                                m->ForgottenTopicsData[t].Partitions[k]};
    const ls_share_tp_t *sess;
    int nsess;
    ls_share_session_err se =
        ls_share_session_step(req->svc->shares, gid, mid, m->ShareSessionEpoch, add, nadd, forget,
                              nforget, &sess, &nsess);
    if (se != LS_SSERR_NONE) {
        sf_fail(req, true, session_error(se), NULL);
        return;
    }
    sf_ctx_t *ctx = ctx_new(req, true, gid, mid, m->ShareSessionEpoch);
    if (m->ShareSessionEpoch == 0)
        ls_share_session_bind(req->svc->shares, gid, mid, ls_kreq_conn_id(req));
    ctx->session_id = ls_share_session_id(req->svc->shares, gid, mid);
    int32_t committed = 0;
    if (req->svc->group_configs)
        ls_group_configs_get(req->svc->group_configs, gid, LS_GROUP_CONFIG_SHARE_ISOLATION,
                             &committed);
    ctx->committed = committed;
    ctx->renew = req->api_version >= 2 && m->IsRenewAck;
    ctx->max_wait_ms = m->MaxWaitMs > 0 ? m->MaxWaitMs : 0;
    ctx->max_bytes = m->MaxBytes > 0 ? m->MaxBytes : INT32_MAX;
    ctx->max_records = m->MaxRecords > 0 ? m->MaxRecords : 500;
    ctx->deadline_ms = ls_clock_mono_ms() + ctx->max_wait_ms;
    int cap = 0;
    for (int i = 0; i < nsess; i++) { /* closing (-1): to release what the member holds */
        sf_part_t *p = part_add(ctx, &sess[i].topic_id, sess[i].partition, &cap);
        p->fetch = m->ShareSessionEpoch != -1;
        p->quiet = !p->fetch;
    }
    for (int32_t t = 0; t < m->NumTopics; t++)
        for (int32_t k = 0; k < m->Topics[t].NumPartitions; k++) {
            const ls_kafka_ShareFetchRequest_FetchPartition *fp = &m->Topics[t].Partitions[k];
            if (!fp->NumAcknowledgementBatches) continue;
            sf_part_t *p = part_add(ctx, &m->Topics[t].TopicId, fp->PartitionIndex, &cap);
            sf_ack_t *acks =
                ls_arena_alloc(req->arena, (size_t)fp->NumAcknowledgementBatches * sizeof *acks);
            for (int32_t b = 0; b < fp->NumAcknowledgementBatches; b++) {
                const ls_kafka_ShareFetchRequest_AcknowledgementBatch *ab =
                    &fp->AcknowledgementBatches[b];
                acks[b] = (sf_ack_t){ab->FirstOffset, ab->LastOffset, ab->AcknowledgeTypes,
                                     ab->NumAcknowledgeTypes};
            }
            p->acks = acks;
            p->nacks = fp->NumAcknowledgementBatches;
            p->quiet = false;
        }
    sf_start(ctx);
}

void ls_kafka_handle_share_acknowledge(ls_kreq_t *req)
{
    const ls_kafka_ShareAcknowledgeRequest *m = req->msg;
    char *gid, *mid;
    if (sf_check(req, false, m->GroupId, m->MemberId, &gid, &mid)) return;
    if (m->ShareSessionEpoch == 0) {
        sf_fail(req, false, LS_KERR_INVALID_SHARE_SESSION_EPOCH,
                "ShareAcknowledge needs an open share session (epoch 0 opens one in ShareFetch).");
        return;
    }
    const ls_share_tp_t *sess;
    int nsess;
    ls_share_session_err se = ls_share_session_step(
        req->svc->shares, gid, mid, m->ShareSessionEpoch, NULL, 0, NULL, 0, &sess, &nsess);
    if (se != LS_SSERR_NONE) {
        sf_fail(req, false, session_error(se), NULL);
        return;
    }
    sf_ctx_t *ctx = ctx_new(req, false, gid, mid, m->ShareSessionEpoch);
    ctx->renew = req->api_version >= 2 && m->IsRenewAck;
    int cap = 0;
    if (m->ShareSessionEpoch == -1) /* closing: to release what the member holds */
        for (int i = 0; i < nsess; i++)
            part_add(ctx, &sess[i].topic_id, sess[i].partition, &cap)->quiet = true;
    for (int32_t t = 0; t < m->NumTopics; t++)
        for (int32_t k = 0; k < m->Topics[t].NumPartitions; k++) {
            const ls_kafka_ShareAcknowledgeRequest_AcknowledgePartition *ap =
                &m->Topics[t].Partitions[k];
            sf_part_t *p = part_add(ctx, &m->Topics[t].TopicId, ap->PartitionIndex, &cap);
            sf_ack_t *acks = ls_arena_alloc(
                req->arena, (size_t)(ap->NumAcknowledgementBatches + 1) * sizeof *acks);
            for (int32_t b = 0; b < ap->NumAcknowledgementBatches; b++) {
                const ls_kafka_ShareAcknowledgeRequest_AcknowledgementBatch *ab =
                    &ap->AcknowledgementBatches[b];
                acks[b] = (sf_ack_t){ab->FirstOffset, ab->LastOffset, ab->AcknowledgeTypes,
                                     ab->NumAcknowledgeTypes};
            }
            p->acks = acks;
            p->nacks = ap->NumAcknowledgementBatches;
            p->quiet = false;
        }
    sf_start(ctx);
}
