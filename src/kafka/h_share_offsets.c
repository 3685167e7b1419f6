/* The share-group offsets admin APIs (KIP-932), what kafka-share-groups
 * --describe, --reset-offsets and --delete-offsets send:
 * DescribeShareGroupOffsets (key 90), AlterShareGroupOffsets (91) and
 * DeleteShareGroupOffsets (92).
 *
 * A share group's "offset" in a partition is its share-partition start offset
 * (SPSO, group/share_partition.h), read from and written to the stored
 * partition states (group/share_store.h) directly. Lag (v1) is what the
 * group has not finished: high watermark - SPSO - the records between the
 * SPSO and the SPEO already acknowledged or archived. A partition the group
 * never fetched has no state: StartOffset -1 (as Kafka answers).
 *
 * Alter and Delete need the group to exist as a share group without members
 * (NON_EMPTY_GROUP otherwise, GROUP_ID_NOT_FOUND for another type or none),
 * checked at the group's coordinator, as on Kafka. Afterwards this broker's
 * copies of the group's states are dropped; another broker's copy fails its
 * next compare-and-set and reloads (share_store.h), and with no members
 * nobody fetches meanwhile. ACLs as Kafka's: DESCRIBE on the group and topic
 * for Describe, READ for Alter, DELETE on the group and READ on the topic for
 * Delete. */
#include <stdio.h>
#include <string.h>

#include "group/share_store.h"
#include "kafka/handlers.h"
#include "kafka/msg_gen.h"
#include "kafka/msg.h"
#include "kafka/names.h"
#include "kafka/services.h"

typedef ls_kafka_DescribeShareGroupOffsetsRequest_DescribeShareGroupOffsetsRequestGroup
    dreq_group_t;
typedef ls_kafka_DescribeShareGroupOffsetsResponse_DescribeShareGroupOffsetsResponseGroup dgroup_t;
typedef ls_kafka_DescribeShareGroupOffsetsResponse_DescribeShareGroupOffsetsResponseTopic dtopic_t;
typedef ls_kafka_DescribeShareGroupOffsetsResponse_DescribeShareGroupOffsetsResponsePartition
    dpart_t;

/* -------------------------------------------------- DescribeShareGroupOffsets */

typedef struct desc_ctx {
    ls_kreq_t *req;
    ls_kafka_DescribeShareGroupOffsetsResponse resp;
    int pending;
} desc_ctx_t;

typedef struct desc_one {
    desc_ctx_t *ctx;
    const dreq_group_t *in;
    dgroup_t *out;
    char *gid;
} desc_one_t;

static void desc_finish(desc_ctx_t *ctx)
{
    ls_kreq_t *req = ctx->req;
    ls_kw_t w;
    ls_kreq_encode(req, &w, &ctx->resp);
    ls_kreq_respond(req, &w);
}

static const ls_share_offset_t *find_offset(const ls_share_offset_t *v, int n, const ls_uuid_t *tid,
                                            int32_t partition)
{
    for (int i = 0; i < n; i++)
        if (v[i].partition == partition && !memcmp(&v[i].topic_id, tid, sizeof *tid)) return &v[i];
    return NULL;
}

static void fill_part(ls_kreq_t *req, dpart_t *p, const ls_stream_t *s, int32_t partition,
                      const ls_share_offset_t *o)
{
    p->PartitionIndex = partition;
    p->LeaderEpoch = -1;
    p->ErrorMessage = ls_kstr_null();
    p->StartOffset = o ? o->start_offset : -1;
    p->Lag = -1;
    if (o) {
        ls_log_info_t info;
        ls_logstore_info(req->svc->logs, ls_stream_log_id(s, partition), &info);
        int64_t lag = info.high_watermark - o->start_offset - o->finished;
        p->Lag = lag < 0 ? 0 : lag;
    }
}

/* A topic of the answer, looked up by name (the request's) or by the stored
 * states' ids (a request with null topics). */
static void add_topic(ls_kreq_t *req, dgroup_t *g, ls_stream_t *s, const int32_t *parts, int nparts,
                      const ls_share_offset_t *v, int n)
{
    ls_arena_t *a = req->arena;
    dtopic_t *t = &g->Topics[g->NumTopics++];
    t->TopicName = ls_kstr_c(ls_kgroup_cstr(a, ls_kstr_c(s->name), NULL));
    t->TopicId = s->id;
    int cap = parts ? nparts : n;
    t->Partitions = ls_kmsg_alloc(a, cap, sizeof *t->Partitions);
    if (parts) {
        for (int i = 0; i < nparts; i++) {
            dpart_t *p = &t->Partitions[t->NumPartitions++];
            if (parts[i] < 0 || parts[i] >= s->partitions) {
                p->PartitionIndex = parts[i];
                p->StartOffset = -1;
                p->LeaderEpoch = -1;
                p->Lag = -1;
                p->ErrorCode = LS_KERR_UNKNOWN_TOPIC_OR_PARTITION;
                p->ErrorMessage = ls_kstr_null();
                continue;
            }
            fill_part(req, p, s, parts[i], find_offset(v, n, &s->id, parts[i]));
        }
        return;
    }
    for (int i = 0; i < n; i++)
        if (!memcmp(&v[i].topic_id, &s->id, sizeof s->id) && v[i].partition < s->partitions)
            fill_part(req, &t->Partitions[t->NumPartitions++], s, v[i].partition, &v[i]);
}

static void desc_listed(void *arg, ls_status st, const ls_share_offset_t *v, int n)
{
    desc_one_t *d = arg;
    ls_kreq_t *req = d->ctx->req;
    ls_arena_t *a = req->arena;
    dgroup_t *g = d->out;
    if (st != LS_OK) {
        g->ErrorCode = LS_KERR_COORDINATOR_NOT_AVAILABLE;
        g->ErrorMessage = ls_kstr_c("The group's share states could not be read.");
    } else if (d->in->NumTopics >= 0) {
        g->Topics = ls_kmsg_alloc(a, d->in->NumTopics, sizeof *g->Topics);
        for (int32_t i = 0; i < d->in->NumTopics; i++) {
            const char *name = ls_kafka_topic_name(a, d->in->Topics[i].TopicName);
            ls_stream_t *s =
                name && ls_kreq_allowed_quiet(req, LS_ACL_OP_DESCRIBE, LS_ACL_RES_TOPIC, name)
                    ? ls_catalog_lookup(req->svc->catalog, LS_DEFAULT_NAMESPACE, name)
                    : NULL;
            if (!s) {
                /* unknown or not described to this principal: each partition says so */
                dtopic_t *t = &g->Topics[g->NumTopics++];
                t->TopicName = d->in->Topics[i].TopicName;
                t->NumPartitions = d->in->Topics[i].NumPartitions;
                t->Partitions = ls_kmsg_alloc(a, t->NumPartitions, sizeof *t->Partitions);
                for (int32_t k = 0; k < t->NumPartitions; k++) {
                    t->Partitions[k].PartitionIndex = d->in->Topics[i].Partitions[k];
                    t->Partitions[k].StartOffset = -1;
                    t->Partitions[k].LeaderEpoch = -1;
                    t->Partitions[k].Lag = -1;
                    t->Partitions[k].ErrorCode = LS_KERR_UNKNOWN_TOPIC_OR_PARTITION;
                    t->Partitions[k].ErrorMessage = ls_kstr_null();
                }
                continue;
            }
            add_topic(req, g, s, d->in->Topics[i].Partitions, d->in->Topics[i].NumPartitions, v, n);
            ls_stream_release(s);
        }
    } else {
        /* every topic the group has states of */
        g->Topics = ls_kmsg_alloc(a, n, sizeof *g->Topics);
        for (int i = 0; i < n; i++) {
            bool done = false;
            for (int k = 0; k < i && !done; k++)
                done = !memcmp(&v[k].topic_id, &v[i].topic_id, sizeof v[i].topic_id);
            if (done) continue;
            ls_stream_t *s = ls_catalog_lookup_id(req->svc->catalog, &v[i].topic_id);
            if (!s) continue; /* a deleted topic */
            if (ls_kreq_allowed_quiet(req, LS_ACL_OP_DESCRIBE, LS_ACL_RES_TOPIC, s->name))
                add_topic(req, g, s, NULL, 0, v, n);
            ls_stream_release(s);
        }
    }
    if (--d->ctx->pending == 0) desc_finish(d->ctx);
}

void ls_kafka_handle_describe_share_group_offsets(ls_kreq_t *req)
{
    const ls_kafka_DescribeShareGroupOffsetsRequest *m = req->msg;
    ls_arena_t *a = req->arena;
    desc_ctx_t *ctx = ls_arena_alloc(a, sizeof *ctx);
    memset(ctx, 0, sizeof *ctx);
    ctx->req = req;
    ctx->resp.NumGroups = m->NumGroups;
    ctx->resp.Groups = ls_kmsg_alloc(a, m->NumGroups, sizeof *ctx->resp.Groups);
    ctx->pending = 1;
    for (int32_t i = 0; i < m->NumGroups; i++) {
        desc_one_t *d = ls_arena_alloc(a, sizeof *d);
        d->ctx = ctx;
        d->in = &m->Groups[i];
        d->out = &ctx->resp.Groups[i];
        d->out->GroupId = m->Groups[i].GroupId;
        d->out->ErrorMessage = ls_kstr_null();
        bool ok;
        d->gid = ls_kgroup_cstr(a, m->Groups[i].GroupId, &ok);
        if (!ls_kreq_allowed_k(req, LS_ACL_OP_DESCRIBE, LS_ACL_RES_GROUP, m->Groups[i].GroupId)) {
            d->out->ErrorCode = LS_KERR_GROUP_AUTHORIZATION_FAILED;
        } else if (!ok || !d->gid || !*d->gid) {
            d->out->ErrorCode = LS_KERR_INVALID_GROUP_ID;
        } else if (!req->svc->shares) {
            d->out->ErrorCode = LS_KERR_COORDINATOR_NOT_AVAILABLE;
        } else {
            ctx->pending++;
            ls_share_store_list(req->svc->shares, d->gid, desc_listed, d);
        }
    }
    if (--ctx->pending == 0) desc_finish(ctx);
}

/* ------------------------------------ AlterShareGroupOffsets, DeleteShareGroupOffsets */

typedef struct change_ctx {
    ls_kreq_t *req;
    bool alter; /* else delete */
    char *gid;
    int16_t err; /* the whole request's */
    const char *msg;
    ls_kafka_AlterShareGroupOffsetsResponse aresp;
    ls_kafka_DeleteShareGroupOffsetsResponse dresp;
    ls_share_offset_t *resets;
    int nresets;
    int pending;
} change_ctx_t;

static void change_finish(change_ctx_t *ctx)
{
    ls_kreq_t *req = ctx->req;
    ls_kw_t w;
    if (ctx->alter) {
        ctx->aresp.ErrorCode = ctx->err;
        ctx->aresp.ErrorMessage = ctx->msg ? ls_kstr_c(ctx->msg) : ls_kstr_null();
        if (ctx->err) ctx->aresp.NumResponses = 0;
        ls_kreq_encode(req, &w, &ctx->aresp);
    } else {
        ctx->dresp.ErrorCode = ctx->err;
        ctx->dresp.ErrorMessage = ctx->msg ? ls_kstr_c(ctx->msg) : ls_kstr_null();
        if (ctx->err) ctx->dresp.NumResponses = 0;
        ls_kreq_encode(req, &w, &ctx->dresp);
    }
    ls_kreq_respond(req, &w);
}

static void change_done(void *arg, ls_status st)
{
    change_ctx_t *ctx = arg;
    if (st != LS_OK && !ctx->err) {
        ctx->err = LS_KERR_COORDINATOR_NOT_AVAILABLE;
        ctx->msg = "The group's share states could not be written.";
    }
    if (--ctx->pending == 0) change_finish(ctx);
}

/* Resolves the request's topics into the answer (and, for Alter, the
 * partitions to reset); per-topic errors stay in the answer. */
static void change_resolve(change_ctx_t *ctx)
{
    ls_kreq_t *req = ctx->req;
    ls_arena_t *a = req->arena;
    if (ctx->alter) {
        const ls_kafka_AlterShareGroupOffsetsRequest *m = req->msg;
        int total = 0;
        for (int32_t i = 0; i < m->NumTopics; i++)
            total += m->Topics[i].NumPartitions;
        ctx->resets = ls_arena_alloc(a, (size_t)(total + 1) * sizeof *ctx->resets);
        ctx->aresp.NumResponses = m->NumTopics;
        ctx->aresp.Responses = ls_kmsg_alloc(a, m->NumTopics, sizeof *ctx->aresp.Responses);
        for (int32_t i = 0; i < m->NumTopics; i++) {
            const char *name = ls_kafka_topic_name(a, m->Topics[i].TopicName);
            ls_kafka_AlterShareGroupOffsetsResponse_AlterShareGroupOffsetsResponseTopic *t =
                &ctx->aresp.Responses[i];
            t->TopicName = m->Topics[i].TopicName;
            t->NumPartitions = m->Topics[i].NumPartitions;
            t->Partitions = ls_kmsg_alloc(a, t->NumPartitions, sizeof *t->Partitions);
            bool allowed = name && ls_kreq_allowed(req, LS_ACL_OP_READ, LS_ACL_RES_TOPIC, name);
            ls_stream_t *s =
                allowed ? ls_catalog_lookup(req->svc->catalog, LS_DEFAULT_NAMESPACE, name) : NULL;
            if (s) t->TopicId = s->id;
            for (int32_t k = 0; k < t->NumPartitions; k++) {
                const ls_kafka_AlterShareGroupOffsetsRequest_AlterShareGroupOffsetsRequestPartition
                    *rp = &m->Topics[i].Partitions[k];
                t->Partitions[k].PartitionIndex = rp->PartitionIndex;
                t->Partitions[k].ErrorMessage = ls_kstr_null();
                if (!allowed)
                    t->Partitions[k].ErrorCode = LS_KERR_TOPIC_AUTHORIZATION_FAILED;
                else if (!s || rp->PartitionIndex < 0 || rp->PartitionIndex >= s->partitions)
                    t->Partitions[k].ErrorCode = LS_KERR_UNKNOWN_TOPIC_OR_PARTITION;
                else if (rp->StartOffset < 0) {
                    t->Partitions[k].ErrorCode = LS_KERR_INVALID_REQUEST;
                    t->Partitions[k].ErrorMessage = ls_kstr_c("StartOffset must be >= 0.");
                } else
                    ctx->resets[ctx->nresets++] =
                        (ls_share_offset_t){s->id, rp->PartitionIndex, rp->StartOffset, 0};
            }
            if (s) ls_stream_release(s);
        }
        if (ctx->nresets) {
            ctx->pending++;
            ls_share_store_reset(req->svc->shares, ctx->gid, ctx->resets, ctx->nresets, change_done,
                                 ctx);
        }
        return;
    }
    const ls_kafka_DeleteShareGroupOffsetsRequest *m = req->msg;
    ctx->dresp.NumResponses = m->NumTopics;
    ctx->dresp.Responses = ls_kmsg_alloc(a, m->NumTopics, sizeof *ctx->dresp.Responses);
    for (int32_t i = 0; i < m->NumTopics; i++) {
        const char *name = ls_kafka_topic_name(a, m->Topics[i].TopicName);
        ls_kafka_DeleteShareGroupOffsetsResponse_DeleteShareGroupOffsetsResponseTopic *t =
            &ctx->dresp.Responses[i];
        t->TopicName = m->Topics[i].TopicName;
        t->ErrorMessage = ls_kstr_null();
        if (!name || !ls_kreq_allowed(req, LS_ACL_OP_READ, LS_ACL_RES_TOPIC, name)) {
            t->ErrorCode = LS_KERR_TOPIC_AUTHORIZATION_FAILED;
            continue;
        }
        ls_stream_t *s = ls_catalog_lookup(req->svc->catalog, LS_DEFAULT_NAMESPACE, name);
        if (!s) {
            t->ErrorCode = LS_KERR_UNKNOWN_TOPIC_OR_PARTITION;
            continue;
        }
        t->TopicId = s->id;
        ctx->pending++;
        ls_share_store_delete_topic(req->svc->shares, ctx->gid, &s->id, change_done, ctx);
        ls_stream_release(s);
    }
}

static void change_ready(void *arg, ls_group_t *g)
{
    change_ctx_t *ctx = arg;
    const ls_sgroup_t *sg = g ? ls_group_share(g) : NULL;
    ctx->pending = 1;
    if (!g) {
        ctx->err = LS_KERR_COORDINATOR_NOT_AVAILABLE;
    } else if (ls_group_get_state(g) == LS_GROUP_DEAD || !sg) {
        ctx->err = LS_KERR_GROUP_ID_NOT_FOUND;
        ctx->msg = "The group is not a share group.";
    } else if (ls_sgroup_member_count(sg) > 0) {
        ctx->err = LS_KERR_NON_EMPTY_GROUP;
        ctx->msg = "The share group has members: its offsets change only while it is empty.";
    } else {
        change_resolve(ctx);
    }
    if (--ctx->pending == 0) change_finish(ctx);
}

static void change_start(ls_kreq_t *req, bool alter, ls_kstr_t group)
{
    ls_arena_t *a = req->arena;
    change_ctx_t *ctx = ls_arena_alloc(a, sizeof *ctx);
    memset(ctx, 0, sizeof *ctx);
    ctx->req = req;
    ctx->alter = alter;
    bool ok;
    ctx->gid = ls_kgroup_cstr(a, group, &ok);
    if (!ls_kreq_allowed_k(req, alter ? LS_ACL_OP_READ : LS_ACL_OP_DELETE, LS_ACL_RES_GROUP, group))
        ctx->err = LS_KERR_GROUP_AUTHORIZATION_FAILED;
    else if (!ok || !ctx->gid || !*ctx->gid)
        ctx->err = LS_KERR_INVALID_GROUP_ID;
    else if (!req->svc->groups || !req->svc->shares)
        ctx->err = LS_KERR_COORDINATOR_NOT_AVAILABLE;
    if (ctx->err) {
        change_finish(ctx);
        return;
    }
    ls_kgroup_acquire(req, ctx->gid, change_ready, ctx);
}

void ls_kafka_handle_alter_share_group_offsets(ls_kreq_t *req)
{
    const ls_kafka_AlterShareGroupOffsetsRequest *m = req->msg;
    change_start(req, true, m->GroupId);
}

void ls_kafka_handle_delete_share_group_offsets(ls_kreq_t *req)
{
    const ls_kafka_DeleteShareGroupOffsetsRequest *m = req->msg;
    change_start(req, false, m->GroupId);
}
