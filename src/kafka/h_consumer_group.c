/* The KIP-848 consumer group protocol on the wire: ConsumerGroupHeartbeat
 * (key 68) and ConsumerGroupDescribe (key 69).
 *
 * The membership logic is group/cgroup.c, held by the group object of
 * group/group.c ("groups of the KIP-848 consumer protocol" in group.h), so
 * FindCoordinator, loading, the owner fence, offsets, retention and deletion
 * are the classic groups' own. What this file adds: the wire's topic ids
 * turned into names and back through the catalog, the topics the assignor
 * sees (every topic the principal may DESCRIBE), the ACL checks Kafka makes,
 * and the rule that a heartbeat which moved the group epoch is answered only
 * once the group record holding that epoch is written (ls_group_service_barrier),
 * so a coordinator that takes over never hands out an epoch already given. */
#include <stdio.h>
#include <string.h>
#include "base/uuid.h"
#include "group/group_configs.h"
#include "kafka/handlers.h"
#include "kafka/msg_gen.h"
#include "kafka/msg.h"
#include "kafka/names.h"
#include "kafka/services.h"

int16_t ls_kafka_cgroup_error(ls_cgroup_err e)
{
    switch (e) {
    case LS_CGERR_NONE: return LS_KERR_NONE;
    case LS_CGERR_INVALID_REQUEST: return LS_KERR_INVALID_REQUEST;
    case LS_CGERR_UNKNOWN_MEMBER_ID: return LS_KERR_UNKNOWN_MEMBER_ID;
    case LS_CGERR_FENCED_MEMBER_EPOCH: return LS_KERR_FENCED_MEMBER_EPOCH;
    case LS_CGERR_UNRELEASED_INSTANCE_ID: return LS_KERR_UNRELEASED_INSTANCE_ID;
    case LS_CGERR_GROUP_MAX_SIZE_REACHED: return LS_KERR_GROUP_MAX_SIZE_REACHED;
    case LS_CGERR_UNSUPPORTED_ASSIGNOR: return LS_KERR_UNSUPPORTED_ASSIGNOR;
    case LS_CGERR_INVALID_REGULAR_EXPRESSION: return LS_KERR_INVALID_REGULAR_EXPRESSION;
    case LS_CGERR_STALE_MEMBER_EPOCH: return LS_KERR_STALE_MEMBER_EPOCH;
    case LS_CGERR_STREAMS_INVALID_TOPOLOGY: return LS_KERR_STREAMS_INVALID_TOPOLOGY;
    }
    return LS_KERR_UNKNOWN_SERVER_ERROR;
}

static char *arena_printf(ls_arena_t *a, const char *fmt, const char *arg)
{
    size_t n = strlen(fmt) + strlen(arg) + 1;
    char *s = ls_arena_alloc(a, n);
    snprintf(s, n, fmt, arg);
    return s;
}

/* ------------------------------------------------------ ConsumerGroupHeartbeat */

typedef struct hb_ctx {
    ls_kreq_t *req;
    ls_kafka_ConsumerGroupHeartbeatRequest m;
    char *gid;
    char *member_id;
    ls_kafka_ConsumerGroupHeartbeatResponse resp;
} hb_ctx_t;

static void hb_send(hb_ctx_t *ctx)
{
    ls_kreq_t *req = ctx->req;
    LS_KRESPOND(ConsumerGroupHeartbeatResponse, ctx->resp);
}

static void hb_fail(hb_ctx_t *ctx, int16_t err, const char *msg)
{
    memset(&ctx->resp, 0, sizeof ctx->resp);
    ctx->resp.ErrorCode = err;
    ctx->resp.ErrorMessage = msg ? ls_kstr_c(msg) : ls_kstr_null();
    ctx->resp.MemberId = ls_kstr_null();
    hb_send(ctx);
}

/* Every topic of the default namespace the principal may DESCRIBE, with its
 * partition count: a regex's candidates. */
static ls_cgroup_topic_t *all_topics(ls_kreq_t *req, int *n)
{
    int nall;
    ls_stream_t **all = ls_catalog_list(req->svc->catalog, LS_DEFAULT_NAMESPACE, &nall);
    ls_cgroup_topic_t *v = ls_arena_alloc(req->arena, (size_t)(nall + 1) * sizeof *v);
    int k = 0;
    for (int i = 0; i < nall; i++) {
        if (!ls_kreq_allowed_quiet(req, LS_ACL_OP_DESCRIBE, LS_ACL_RES_TOPIC, all[i]->name))
            continue;
        size_t len = strlen(all[i]->name) + 1;
        char *name = ls_arena_alloc(req->arena, len);
        memcpy(name, all[i]->name, len);
        v[k++] = (ls_cgroup_topic_t){name, all[i]->partitions};
    }
    ls_stream_list_release(all, nall);
    *n = k;
    return v;
}

/* The topics the members subscribe to by name (and the request's names):
 * each looked up once, so a heartbeat costs what the group subscribes to,
 * not the size of the catalog. */
typedef struct named {
    ls_kreq_t *req;
    ls_cgroup_topic_t *v;
    int n, cap;
} named_t;

static void named_add(void *arg, const char *name)
{
    named_t *t = arg;
    for (int i = 0; i < t->n; i++)
        if (!strcmp(t->v[i].name, name)) return;
    if (!ls_kreq_allowed_quiet(t->req, LS_ACL_OP_DESCRIBE, LS_ACL_RES_TOPIC, name)) return;
    ls_stream_t *s = ls_catalog_lookup(t->req->svc->catalog, LS_DEFAULT_NAMESPACE, name);
    if (!s) return;
    if (t->n == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 16;
        ls_cgroup_topic_t *nv = ls_arena_alloc(t->req->arena, (size_t)t->cap * sizeof *nv);
        if (t->n) memcpy(nv, t->v, (size_t)t->n * sizeof *nv);
        t->v = nv;
    }
    size_t len = strlen(s->name) + 1; /* copied: the snapshot goes now */
    char *copy = ls_arena_alloc(t->req->arena, len);
    memcpy(copy, s->name, len);
    t->v[t->n++] = (ls_cgroup_topic_t){copy, s->partitions};
    ls_stream_release(s);
}

/* What ls_cgroup_heartbeat needs to see (cgroup.h). */
static ls_cgroup_topic_t *heartbeat_topics(ls_kreq_t *req, const ls_group_t *g,
                                           const ls_cgroup_hb_req_t *hr, int *n)
{
    const ls_cgroup_t *cg = ls_group_consumer(g);
    if ((hr->regex && *hr->regex) || (cg && ls_cgroup_has_regex(cg))) return all_topics(req, n);
    named_t t = {.req = req};
    for (int i = 0; hr->topics && i < hr->ntopics; i++)
        if (hr->topics[i]) named_add(&t, hr->topics[i]);
    if (cg) ls_cgroup_each_topic_name(cg, named_add, &t);
    *n = t.n;
    return t.v;
}

/* The owned partitions of the request by name; topic ids no topic has (a
 * deleted topic) are left out: the member owns nothing there any more. */
static ls_cgroup_tp_t *owned_partitions(ls_kreq_t *req,
                                        const ls_kafka_ConsumerGroupHeartbeatRequest *m, int *n)
{
    int total = 0;
    for (int32_t i = 0; i < m->NumTopicPartitions; i++)
        total += m->TopicPartitions[i].NumPartitions;
    ls_cgroup_tp_t *v = ls_arena_alloc(req->arena, (size_t)(total + 1) * sizeof *v);
    int k = 0;
    for (int32_t i = 0; i < m->NumTopicPartitions; i++) {
        const ls_kafka_ConsumerGroupHeartbeatRequest_TopicPartitions *t = &m->TopicPartitions[i];
        ls_stream_t *s = ls_catalog_lookup_id(req->svc->catalog, &t->TopicId);
        if (!s) continue;
        size_t len = strlen(s->name) + 1;
        char *name = ls_arena_alloc(req->arena, len);
        memcpy(name, s->name, len);
        ls_stream_release(s);
        for (int32_t j = 0; j < t->NumPartitions; j++)
            v[k++] = (ls_cgroup_tp_t){name, t->Partitions[j]};
    }
    *n = k;
    return v;
}

/* The member's partitions as (topic id, partitions), copied into the arena
 * (res lives only until the group's next call). Partitions of a topic that
 * is gone meanwhile are left out. */
static void fill_assignment(ls_kreq_t *req, const ls_cgroup_tp_t *tp, int n,
                            ls_kafka_ConsumerGroupHeartbeatResponse_Assignment *out)
{
    out->TopicPartitions = ls_kmsg_alloc(req->arena, n, sizeof *out->TopicPartitions);
    out->NumTopicPartitions = 0;
    for (int i = 0; i < n; i++) {
        ls_kafka_ConsumerGroupHeartbeatResponse_TopicPartitions *t = NULL;
        ls_stream_t *s = ls_catalog_lookup(req->svc->catalog, LS_DEFAULT_NAMESPACE, tp[i].topic);
        if (!s) continue;
        for (int32_t k = 0; k < out->NumTopicPartitions && !t; k++)
            if (!memcmp(&out->TopicPartitions[k].TopicId, &s->id, sizeof s->id))
                t = &out->TopicPartitions[k];
        if (!t) {
            t = &out->TopicPartitions[out->NumTopicPartitions++];
            t->TopicId = s->id;
            t->Partitions = ls_kmsg_alloc(req->arena, n, sizeof *t->Partitions);
        }
        t->Partitions[t->NumPartitions++] = tp[i].partition;
        ls_stream_release(s);
    }
}

static void hb_written(void *arg, ls_status st)
{
    hb_ctx_t *ctx = arg;
    if (st != LS_OK) {
        /* the epoch is not durable: the client retries (and finds the
         * coordinator again when another broker fenced this one) */
        hb_fail(ctx, ls_kafka_group_write_error(st), "The group could not be stored.");
        return;
    }
    hb_send(ctx);
}

static void hb_ready(void *arg, ls_group_t *g)
{
    hb_ctx_t *ctx = arg;
    ls_kreq_t *req = ctx->req;
    ls_arena_t *a = req->arena;
    const ls_kafka_ConsumerGroupHeartbeatRequest *m = &ctx->m;
    if (!g) {
        hb_fail(ctx, LS_KERR_COORDINATOR_NOT_AVAILABLE, NULL);
        return;
    }
    ls_cgroup_hb_req_t hr = {
        .member_id = ctx->member_id,
        .member_epoch = m->MemberEpoch,
        .instance_id = ls_kgroup_cstr(a, m->InstanceId, NULL),
        .rebalance_timeout_ms = m->RebalanceTimeoutMs,
        .ntopics = m->NumSubscribedTopicNames,
        .regex = ls_kgroup_cstr(a, m->SubscribedTopicRegex, NULL),
        .assignor = ls_kgroup_cstr(a, m->ServerAssignor, NULL),
        .nowned = -1,
        .rack_id = ls_kgroup_cstr(a, m->RackId, NULL),
        .client_id =
            ls_kgroup_cstr(a, req->client_id.len >= 0 ? req->client_id : ls_kstr_c(""), NULL),
        .client_host = ls_kgroup_client_host(req),
        .session_timeout_ms = req->svc->cfg->group_consumer_session_timeout_ms,
        .heartbeat_interval_ms = req->svc->cfg->group_consumer_heartbeat_interval_ms,
    };
    if (req->svc->group_configs) { /* the group's own (kafka-configs --entity-type groups) */
        ls_group_configs_get(req->svc->group_configs, ctx->gid, LS_GROUP_CONFIG_SESSION,
                             &hr.session_timeout_ms);
        ls_group_configs_get(req->svc->group_configs, ctx->gid, LS_GROUP_CONFIG_HEARTBEAT,
                             &hr.heartbeat_interval_ms);
    }
    if (m->NumSubscribedTopicNames >= 0) {
        const char **names =
            ls_arena_alloc(a, (size_t)(m->NumSubscribedTopicNames + 1) * sizeof *names);
        for (int32_t i = 0; i < m->NumSubscribedTopicNames; i++)
            names[i] = ls_kafka_topic_name(a, m->SubscribedTopicNames[i]);
        hr.topics = names;
    }
    if (m->NumTopicPartitions >= 0) {
        int n;
        hr.owned = owned_partitions(req, m, &n);
        hr.nowned = n;
    }
    int ntopics;
    ls_cgroup_topic_t *topics = heartbeat_topics(req, g, &hr, &ntopics);
    ls_cgroup_hb_res_t res;
    bool stored;
    ls_group_err ge = ls_group_consumer_heartbeat(g, &hr, topics, ntopics, &res, &stored);
    if (ge == LS_GERR_GROUP_ID_NOT_FOUND) {
        hb_fail(ctx, LS_KERR_GROUP_ID_NOT_FOUND,
                arena_printf(a,
                             "Group %s is not a consumer group: it is a classic group with "
                             "members (group.consumer.migration.policy=disabled).",
                             ctx->gid));
        return;
    }
    if (ge != LS_GERR_NONE) {
        hb_fail(ctx, ls_kafka_group_error(ge), NULL);
        return;
    }
    if (res.err != LS_CGERR_NONE) {
        hb_fail(ctx, ls_kafka_cgroup_error(res.err), res.message);
        return;
    }
    ls_kafka_ConsumerGroupHeartbeatResponse *r = &ctx->resp;
    memset(r, 0, sizeof *r);
    r->ErrorMessage = ls_kstr_null();
    r->MemberId = ls_kstr_c(ctx->member_id);
    r->MemberEpoch = res.member_epoch;
    if (m->MemberEpoch >= 0) {
        r->HeartbeatIntervalMs = res.heartbeat_interval_ms;
        r->HasAssignment = true;
        fill_assignment(req, res.assigned, res.nassigned, &r->Assignment);
    }
    if (stored) {
        ls_group_service_barrier(req->svc->groups, hb_written, ctx);
        return;
    }
    hb_send(ctx);
}

void ls_kafka_handle_consumer_group_heartbeat(ls_kreq_t *req)
{
    ls_arena_t *a = req->arena;
    hb_ctx_t *ctx = ls_arena_alloc(a, sizeof *ctx);
    memset(ctx, 0, sizeof *ctx);
    ctx->req = req;
    LS_KREQUEST(ConsumerGroupHeartbeatRequest, ctx->m);
    const ls_kafka_ConsumerGroupHeartbeatRequest *m = &ctx->m;
    bool ok1, ok2, ok3 = true, ok4 = true, ok5 = true;
    ctx->gid = ls_kgroup_cstr(a, m->GroupId, &ok1);
    ctx->member_id = ls_kgroup_cstr(a, m->MemberId, &ok2);
    ls_kgroup_cstr(a, m->InstanceId, &ok3);
    ls_kgroup_cstr(a, m->SubscribedTopicRegex, &ok4);
    ls_kgroup_cstr(a, m->ServerAssignor, &ok5);
    /* as Kafka: READ on the group, DESCRIBE on each subscribed topic */
    if (!ls_kreq_allowed_k(req, LS_ACL_OP_READ, LS_ACL_RES_GROUP, m->GroupId)) {
        hb_fail(ctx, LS_KERR_GROUP_AUTHORIZATION_FAILED, NULL);
        return;
    }
    if (!ok1 || !ctx->gid || !*ctx->gid) {
        hb_fail(ctx, LS_KERR_INVALID_GROUP_ID, "GroupId can't be empty.");
        return;
    }
    if (ls_kgroup_table_refused(req, ctx->gid)) {
        hb_fail(ctx, LS_KERR_GROUP_AUTHORIZATION_FAILED,
                "The lakestream.table.* groups are read-only.");
        return;
    }
    if (!ok2 || !ok3 || !ok4 || !ok5) {
        hb_fail(ctx, LS_KERR_INVALID_REQUEST, "A string field holds a control character.");
        return;
    }
    for (int32_t i = 0; i < m->NumSubscribedTopicNames; i++)
        if (!ls_kreq_allowed_k(req, LS_ACL_OP_DESCRIBE, LS_ACL_RES_TOPIC,
                               m->SubscribedTopicNames[i])) {
            hb_fail(ctx, LS_KERR_TOPIC_AUTHORIZATION_FAILED,
                    "Not authorized to describe a subscribed topic.");
            return;
        }
    if (!ctx->member_id || !*ctx->member_id) {
        /* v0: the coordinator names a joining member; v1+: the client does */
        if (req->api_version >= 1 || m->MemberEpoch != LS_CGROUP_EPOCH_JOIN) {
            hb_fail(ctx, LS_KERR_INVALID_REQUEST, "MemberId can't be empty.");
            return;
        }
        ls_uuid_t u;
        ls_uuid_random(&u);
        ctx->member_id = ls_arena_alloc(a, 37);
        ls_uuid_format(&u, ctx->member_id);
    }
    if (!req->svc->groups) {
        hb_fail(ctx, LS_KERR_COORDINATOR_NOT_AVAILABLE, NULL);
        return;
    }
    ls_kgroup_acquire(req, ctx->gid, hb_ready, ctx);
}

/* ------------------------------------------------------- ConsumerGroupDescribe */

typedef struct desc_ctx {
    ls_kreq_t *req;
    ls_kafka_ConsumerGroupDescribeRequest m;
    ls_kafka_ConsumerGroupDescribeResponse resp;
} desc_ctx_t;

static void desc_finish(void *arg)
{
    desc_ctx_t *ctx = arg;
    ls_kreq_t *req = ctx->req;
    LS_KRESPOND(ConsumerGroupDescribeResponse, ctx->resp);
}

static void desc_error(ls_arena_t *a, ls_kafka_ConsumerGroupDescribeResponse_DescribedGroup *o,
                       const char *gid, int16_t err, const char *fmt)
{
    o->ErrorCode = err;
    o->ErrorMessage = fmt ? ls_kstr_c(arena_printf(a, fmt, gid ? gid : "")) : ls_kstr_null();
    o->GroupState = ls_kstr_c(err == LS_KERR_GROUP_ID_NOT_FOUND ? "Dead" : "");
    o->AssignorName = ls_kstr_c("");
    o->AuthorizedOperations = INT32_MIN;
}

/* Partitions grouped by topic, with the topic's id and name. */
static void desc_assignment(ls_kreq_t *req, const ls_cgroup_tp_t *tp, int n,
                            ls_kafka_ConsumerGroupDescribeResponse_Assignment *out)
{
    out->TopicPartitions = ls_kmsg_alloc(req->arena, n, sizeof *out->TopicPartitions);
    for (int i = 0; i < n; i++) {
        ls_kafka_ConsumerGroupDescribeResponse_TopicPartitions *t = NULL;
        for (int32_t k = 0; k < out->NumTopicPartitions && !t; k++)
            if (out->TopicPartitions[k].TopicName.len == (int32_t)strlen(tp[i].topic) &&
                !memcmp(out->TopicPartitions[k].TopicName.ptr, tp[i].topic, strlen(tp[i].topic)))
                t = &out->TopicPartitions[k];
        if (!t) {
            ls_stream_t *s =
                ls_catalog_lookup(req->svc->catalog, LS_DEFAULT_NAMESPACE, tp[i].topic);
            if (!s) continue;
            t = &out->TopicPartitions[out->NumTopicPartitions++];
            t->TopicId = s->id;
            ls_stream_release(s);
            t->TopicName = ls_kstr_c(ls_kgroup_cstr(req->arena, ls_kstr_c(tp[i].topic), NULL));
            t->Partitions = ls_kmsg_alloc(req->arena, n, sizeof *t->Partitions);
        }
        t->Partitions[t->NumPartitions++] = tp[i].partition;
    }
}

static ls_kstr_t arena_kstr(ls_arena_t *a, const char *s)
{
    return s ? ls_kstr_c(ls_kgroup_cstr(a, ls_kstr_c(s), NULL)) : ls_kstr_null();
}

/* One group of the answer (kafka/handlers.h, ls_kgroup_describe_each). */
static void desc_one(void *arg, int32_t gi, const char *gid, ls_group_t *g, int16_t err,
                     const char *fmt)
{
    desc_ctx_t *ctx = arg;
    ls_kreq_t *req = ctx->req;
    ls_arena_t *a = req->arena;
    ls_kafka_ConsumerGroupDescribeResponse_DescribedGroup *o = &ctx->resp.Groups[gi];
    o->GroupId = ctx->m.GroupIds[gi];
    const ls_cgroup_t *cg = g ? ls_group_consumer(g) : NULL;
    if (!err && !cg) {
        err = LS_KERR_GROUP_ID_NOT_FOUND;
        fmt = "Group %s is not a consumer group.";
    }
    if (err) {
        desc_error(a, o, gid, err, fmt);
    } else {
        o->ErrorMessage = ls_kstr_null();
        o->GroupState = ls_kstr_c(ls_group_state_label(g));
        o->GroupEpoch = ls_cgroup_epoch(cg);
        o->AssignmentEpoch = ls_cgroup_target_epoch(cg);
        o->AssignorName = ls_kstr_c(ls_cgroup_assignor_name(ls_cgroup_assignor_in_use(cg)));
        o->AuthorizedOperations =
            ctx->m.IncludeAuthorizedOperations
                ? ls_kreq_authorized_ops(req, LS_ACL_RES_GROUP, gid, LS_KGROUP_AUTHORIZED_OPS)
                : INT32_MIN;
        int n = ls_cgroup_member_count(cg);
        o->NumMembers = n;
        o->Members = ls_kmsg_alloc(a, n, sizeof *o->Members);
        for (int i = 0; i < n; i++) {
            ls_cgroup_member_info_t mi;
            ls_cgroup_member(cg, i, &mi);
            ls_kafka_ConsumerGroupDescribeResponse_Member *mb = &o->Members[i];
            mb->MemberId = arena_kstr(a, mi.member_id);
            mb->InstanceId = arena_kstr(a, mi.instance_id);
            mb->RackId = arena_kstr(a, mi.rack_id);
            mb->MemberEpoch = mi.member_epoch;
            mb->ClientId = arena_kstr(a, mi.client_id);
            mb->ClientHost = arena_kstr(a, mi.client_host);
            mb->NumSubscribedTopicNames = mi.ntopics;
            mb->SubscribedTopicNames = ls_kmsg_alloc(a, mi.ntopics, sizeof(ls_kstr_t));
            for (int k = 0; k < mi.ntopics; k++)
                mb->SubscribedTopicNames[k] = arena_kstr(a, mi.topics[k]);
            mb->SubscribedTopicRegex = arena_kstr(a, mi.regex);
            desc_assignment(req, mi.assigned, mi.nassigned, &mb->Assignment);
            desc_assignment(req, mi.target, mi.ntarget, &mb->TargetAssignment);
            mb->MemberType = 1; /* consumer protocol (v1) */
        }
    }
}

void ls_kafka_handle_consumer_group_describe(ls_kreq_t *req)
{
    ls_arena_t *a = req->arena;
    desc_ctx_t *ctx = ls_arena_alloc(a, sizeof *ctx);
    memset(ctx, 0, sizeof *ctx);
    ctx->req = req;
    LS_KREQUEST(ConsumerGroupDescribeRequest, ctx->m);
    ctx->resp.NumGroups = ctx->m.NumGroupIds;
    ctx->resp.Groups = ls_kmsg_alloc(a, ctx->m.NumGroupIds, sizeof *ctx->resp.Groups);
    ls_kgroup_describe_each(req, ctx->m.GroupIds, ctx->m.NumGroupIds, desc_one, desc_finish, ctx);
}

/* ============================================================================
 * Share groups (KIP-932): ShareGroupHeartbeat (key 76) and ShareGroupDescribe
 * (key 77). The membership logic is group/sgroup.c inside the same group
 * object ("share groups" in group.h); the topic lookups, the assignment
 * encoding and the answer-after-the-write rule are the consumer protocol's
 * above. The records themselves are shared out by ShareFetch
 * (h_share_fetch.c). */

static int16_t sgroup_error(ls_sgroup_err e)
{
    switch (e) {
    case LS_SGERR_NONE: return LS_KERR_NONE;
    case LS_SGERR_INVALID_REQUEST: return LS_KERR_INVALID_REQUEST;
    case LS_SGERR_UNKNOWN_MEMBER_ID: return LS_KERR_UNKNOWN_MEMBER_ID;
    case LS_SGERR_FENCED_MEMBER_EPOCH: return LS_KERR_FENCED_MEMBER_EPOCH;
    case LS_SGERR_GROUP_MAX_SIZE_REACHED: return LS_KERR_GROUP_MAX_SIZE_REACHED;
    }
    return LS_KERR_UNKNOWN_SERVER_ERROR;
}

typedef struct shb_ctx {
    ls_kreq_t *req;
    ls_kafka_ShareGroupHeartbeatRequest m;
    char *gid;
    char *member_id;
    ls_kafka_ShareGroupHeartbeatResponse resp;
} shb_ctx_t;

static void shb_send(shb_ctx_t *ctx)
{
    ls_kreq_t *req = ctx->req;
    LS_KRESPOND(ShareGroupHeartbeatResponse, ctx->resp);
}

static void shb_fail(shb_ctx_t *ctx, int16_t err, const char *msg)
{
    memset(&ctx->resp, 0, sizeof ctx->resp);
    ctx->resp.ErrorCode = err;
    ctx->resp.ErrorMessage = msg ? ls_kstr_c(msg) : ls_kstr_null();
    ctx->resp.MemberId = ls_kstr_null();
    shb_send(ctx);
}

static void shb_written(void *arg, ls_status st)
{
    shb_ctx_t *ctx = arg;
    if (st != LS_OK) {
        shb_fail(ctx, ls_kafka_group_write_error(st), "The group could not be stored.");
        return;
    }
    shb_send(ctx);
}

/* The topics the share group's members and this request subscribe to. */
static ls_cgroup_topic_t *share_topics(ls_kreq_t *req, const ls_group_t *g,
                                       const ls_sgroup_hb_req_t *hr, int *n)
{
    named_t t = {.req = req};
    for (int i = 0; hr->topics && i < hr->ntopics; i++)
        if (hr->topics[i]) named_add(&t, hr->topics[i]);
    const ls_sgroup_t *sg = ls_group_share(g);
    for (int i = 0; sg && i < ls_sgroup_member_count(sg); i++) {
        ls_sgroup_member_info_t mi;
        ls_sgroup_member(sg, i, &mi);
        for (int k = 0; k < mi.ntopics; k++)
            named_add(&t, mi.topics[k]);
    }
    *n = t.n;
    return t.v;
}

static void shb_ready(void *arg, ls_group_t *g)
{
    shb_ctx_t *ctx = arg;
    ls_kreq_t *req = ctx->req;
    ls_arena_t *a = req->arena;
    const ls_kafka_ShareGroupHeartbeatRequest *m = &ctx->m;
    if (!g) {
        shb_fail(ctx, LS_KERR_COORDINATOR_NOT_AVAILABLE, NULL);
        return;
    }
    ls_sgroup_hb_req_t hr = {
        .member_id = ctx->member_id,
        .member_epoch = m->MemberEpoch,
        .rack_id = ls_kgroup_cstr(a, m->RackId, NULL),
        .ntopics = m->NumSubscribedTopicNames,
        .client_id =
            ls_kgroup_cstr(a, req->client_id.len >= 0 ? req->client_id : ls_kstr_c(""), NULL),
        .client_host = ls_kgroup_client_host(req),
        .session_timeout_ms = req->svc->cfg->group_share_session_timeout_ms,
        .heartbeat_interval_ms = req->svc->cfg->group_share_heartbeat_interval_ms,
    };
    if (req->svc->group_configs) { /* the group's own (kafka-configs --entity-type groups) */
        ls_group_configs_get(req->svc->group_configs, ctx->gid, LS_GROUP_CONFIG_SHARE_SESSION,
                             &hr.session_timeout_ms);
        ls_group_configs_get(req->svc->group_configs, ctx->gid, LS_GROUP_CONFIG_SHARE_HEARTBEAT,
                             &hr.heartbeat_interval_ms);
    }
    if (m->NumSubscribedTopicNames >= 0) {
        const char **names =
            ls_arena_alloc(a, (size_t)(m->NumSubscribedTopicNames + 1) * sizeof *names);
        for (int32_t i = 0; i < m->NumSubscribedTopicNames; i++)
            names[i] = ls_kafka_topic_name(a, m->SubscribedTopicNames[i]);
        hr.topics = names;
    }
    int ntopics;
    ls_cgroup_topic_t *topics = share_topics(req, g, &hr, &ntopics);
    ls_sgroup_hb_res_t res;
    bool stored;
    ls_group_err ge = ls_group_share_heartbeat(g, &hr, topics, ntopics, &res, &stored);
    if (ge == LS_GERR_GROUP_ID_NOT_FOUND) {
        shb_fail(ctx, LS_KERR_GROUP_ID_NOT_FOUND,
                 arena_printf(a, "Group %s is not a share group.", ctx->gid));
        return;
    }
    if (ge != LS_GERR_NONE) {
        shb_fail(ctx, ls_kafka_group_error(ge), NULL);
        return;
    }
    if (res.err != LS_SGERR_NONE) {
        shb_fail(ctx, sgroup_error(res.err), res.message);
        return;
    }
    ls_kafka_ShareGroupHeartbeatResponse *r = &ctx->resp;
    memset(r, 0, sizeof *r);
    r->ErrorMessage = ls_kstr_null();
    r->MemberId = ls_kstr_c(ctx->member_id);
    r->MemberEpoch = res.member_epoch;
    if (m->MemberEpoch >= 0) {
        r->HeartbeatIntervalMs = res.heartbeat_interval_ms;
        r->HasAssignment = true;
        /* the same wire shape as the consumer protocol's assignment */
        ls_kafka_ConsumerGroupHeartbeatResponse_Assignment as;
        memset(&as, 0, sizeof as);
        fill_assignment(req, res.assigned, res.nassigned, &as);
        r->Assignment.NumTopicPartitions = as.NumTopicPartitions;
        r->Assignment.TopicPartitions =
            ls_kmsg_alloc(a, as.NumTopicPartitions, sizeof *r->Assignment.TopicPartitions);
        for (int32_t i = 0; i < as.NumTopicPartitions; i++) {
            r->Assignment.TopicPartitions[i].TopicId = as.TopicPartitions[i].TopicId;
            r->Assignment.TopicPartitions[i].Partitions = as.TopicPartitions[i].Partitions;
            r->Assignment.TopicPartitions[i].NumPartitions = as.TopicPartitions[i].NumPartitions;
        }
    }
    if (stored) {
        ls_group_service_barrier(req->svc->groups, shb_written, ctx);
        return;
    }
    shb_send(ctx);
}

void ls_kafka_handle_share_group_heartbeat(ls_kreq_t *req)
{
    ls_arena_t *a = req->arena;
    shb_ctx_t *ctx = ls_arena_alloc(a, sizeof *ctx);
    memset(ctx, 0, sizeof *ctx);
    ctx->req = req;
    LS_KREQUEST(ShareGroupHeartbeatRequest, ctx->m);
    const ls_kafka_ShareGroupHeartbeatRequest *m = &ctx->m;
    bool ok1, ok2, ok3 = true;
    ctx->gid = ls_kgroup_cstr(a, m->GroupId, &ok1);
    ctx->member_id = ls_kgroup_cstr(a, m->MemberId, &ok2);
    ls_kgroup_cstr(a, m->RackId, &ok3);
    /* as Kafka: READ on the group, DESCRIBE on each subscribed topic */
    if (!ls_kreq_allowed_k(req, LS_ACL_OP_READ, LS_ACL_RES_GROUP, m->GroupId)) {
        shb_fail(ctx, LS_KERR_GROUP_AUTHORIZATION_FAILED, NULL);
        return;
    }
    if (!ok1 || !ctx->gid || !*ctx->gid) {
        shb_fail(ctx, LS_KERR_INVALID_GROUP_ID, "GroupId can't be empty.");
        return;
    }
    if (ls_table_group_id(ctx->gid)) {
        shb_fail(ctx, LS_KERR_GROUP_ID_NOT_FOUND, "The lakestream.table.* groups are read-only.");
        return;
    }
    if (!ok2 || !ok3) {
        shb_fail(ctx, LS_KERR_INVALID_REQUEST, "A string field holds a control character.");
        return;
    }
    if (!ctx->member_id || !*ctx->member_id) {
        shb_fail(ctx, LS_KERR_INVALID_REQUEST, "MemberId can't be empty.");
        return;
    }
    for (int32_t i = 0; i < m->NumSubscribedTopicNames; i++)
        if (!ls_kreq_allowed_k(req, LS_ACL_OP_DESCRIBE, LS_ACL_RES_TOPIC,
                               m->SubscribedTopicNames[i])) {
            shb_fail(ctx, LS_KERR_TOPIC_AUTHORIZATION_FAILED,
                     "Not authorized to describe a subscribed topic.");
            return;
        }
    if (!req->svc->groups || !req->svc->shares) {
        shb_fail(ctx, LS_KERR_COORDINATOR_NOT_AVAILABLE, NULL);
        return;
    }
    ls_kgroup_acquire(req, ctx->gid, shb_ready, ctx);
}

/* ---------------------------------------------------------- ShareGroupDescribe */

typedef struct sdesc_ctx {
    ls_kreq_t *req;
    ls_kafka_ShareGroupDescribeRequest m;
    ls_kafka_ShareGroupDescribeResponse resp;
} sdesc_ctx_t;

static void sdesc_finish(void *arg)
{
    sdesc_ctx_t *ctx = arg;
    ls_kreq_t *req = ctx->req;
    LS_KRESPOND(ShareGroupDescribeResponse, ctx->resp);
}

static void sdesc_error(ls_arena_t *a, ls_kafka_ShareGroupDescribeResponse_DescribedGroup *o,
                        const char *gid, int16_t err, const char *fmt)
{
    o->ErrorCode = err;
    o->ErrorMessage = fmt ? ls_kstr_c(arena_printf(a, fmt, gid ? gid : "")) : ls_kstr_null();
    o->GroupState = ls_kstr_c(err == LS_KERR_GROUP_ID_NOT_FOUND ? "Dead" : "");
    o->AssignorName = ls_kstr_c("");
    o->AuthorizedOperations = INT32_MIN;
}

/* One group of the answer (kafka/handlers.h, ls_kgroup_describe_each). */
static void sdesc_one(void *arg, int32_t gi, const char *gid, ls_group_t *g, int16_t err,
                      const char *fmt)
{
    sdesc_ctx_t *ctx = arg;
    ls_kreq_t *req = ctx->req;
    ls_arena_t *a = req->arena;
    ls_kafka_ShareGroupDescribeResponse_DescribedGroup *o = &ctx->resp.Groups[gi];
    o->GroupId = ctx->m.GroupIds[gi];
    const ls_sgroup_t *sg = g ? ls_group_share(g) : NULL;
    if (!err && !sg) {
        err = LS_KERR_GROUP_ID_NOT_FOUND;
        fmt = "Group %s is not a share group.";
    }
    if (err) {
        sdesc_error(a, o, gid, err, fmt);
    } else {
        o->ErrorMessage = ls_kstr_null();
        o->GroupState = ls_kstr_c(ls_group_state_label(g));
        o->GroupEpoch = ls_sgroup_epoch(sg);
        o->AssignmentEpoch = ls_sgroup_assignment_epoch(sg);
        o->AssignorName = ls_kstr_c("simple");
        o->AuthorizedOperations =
            ctx->m.IncludeAuthorizedOperations
                ? ls_kreq_authorized_ops(req, LS_ACL_RES_GROUP, gid, LS_KGROUP_AUTHORIZED_OPS)
                : INT32_MIN;
        int n = ls_sgroup_member_count(sg);
        o->NumMembers = n;
        o->Members = ls_kmsg_alloc(a, n, sizeof *o->Members);
        for (int i = 0; i < n; i++) {
            ls_sgroup_member_info_t mi;
            ls_sgroup_member(sg, i, &mi);
            ls_kafka_ShareGroupDescribeResponse_Member *mb = &o->Members[i];
            mb->MemberId = arena_kstr(a, mi.member_id);
            mb->RackId = arena_kstr(a, mi.rack_id);
            mb->MemberEpoch = mi.member_epoch;
            mb->ClientId = arena_kstr(a, mi.client_id);
            mb->ClientHost = arena_kstr(a, mi.client_host);
            mb->NumSubscribedTopicNames = mi.ntopics;
            mb->SubscribedTopicNames = ls_kmsg_alloc(a, mi.ntopics, sizeof(ls_kstr_t));
            for (int k = 0; k < mi.ntopics; k++)
                mb->SubscribedTopicNames[k] = arena_kstr(a, mi.topics[k]);
            ls_kafka_ConsumerGroupDescribeResponse_Assignment as;
            memset(&as, 0, sizeof as);
            desc_assignment(req, mi.assigned, mi.nassigned, &as);
            mb->Assignment.NumTopicPartitions = as.NumTopicPartitions;
            mb->Assignment.TopicPartitions =
                ls_kmsg_alloc(a, as.NumTopicPartitions, sizeof *mb->Assignment.TopicPartitions);
            for (int32_t k = 0; k < as.NumTopicPartitions; k++) {
                mb->Assignment.TopicPartitions[k].TopicId = as.TopicPartitions[k].TopicId;
                mb->Assignment.TopicPartitions[k].TopicName = as.TopicPartitions[k].TopicName;
                mb->Assignment.TopicPartitions[k].Partitions = as.TopicPartitions[k].Partitions;
                mb->Assignment.TopicPartitions[k].NumPartitions =
                    as.TopicPartitions[k].NumPartitions;
            }
        }
    }
}

void ls_kafka_handle_share_group_describe(ls_kreq_t *req)
{
    ls_arena_t *a = req->arena;
    sdesc_ctx_t *ctx = ls_arena_alloc(a, sizeof *ctx);
    memset(ctx, 0, sizeof *ctx);
    ctx->req = req;
    LS_KREQUEST(ShareGroupDescribeRequest, ctx->m);
    ctx->resp.NumGroups = ctx->m.NumGroupIds;
    ctx->resp.Groups = ls_kmsg_alloc(a, ctx->m.NumGroupIds, sizeof *ctx->resp.Groups);
    ls_kgroup_describe_each(req, ctx->m.GroupIds, ctx->m.NumGroupIds, sdesc_one, sdesc_finish, ctx);
}
