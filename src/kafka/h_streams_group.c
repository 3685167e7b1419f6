/* The KIP-1071 streams group protocol on the wire: StreamsGroupHeartbeat
 * (key 88) and StreamsGroupDescribe (key 89), v0 (what Kafka Streams 4.2 to
 * 4.4 speak).
 *
 * The membership, topology configuration and task assignment are
 * group/stgroup.c, held by the group object of group/group.c ("streams
 * groups" in group.h), so FindCoordinator, loading, the owner fence, offsets
 * and deletion are the other groups' own. What this file adds: the wire
 * topology and task lists turned into stgroup's and back, topic lookups
 * through the catalog, Kafka's ACL checks, the internal topics (repartition
 * and changelog topics) the group asks for, created here as Kafka's
 * coordinator does (CREATE on the cluster or the topic; a topic that cannot
 * be created is named in the status detail), the endpoints' partitions for
 * Interactive Queries, and the rule that a heartbeat which moved the group
 * is answered once its record is written (ls_group_service_barrier).
 *
 * Sequence of one heartbeat: checks -> acquire the group -> heartbeat ->
 * [barrier: the record written] -> [worker: create internal topics] ->
 * respond. */
#include <stdio.h>
#include <string.h>
#include "base/diag.h"
#include "group/group_configs.h"
#include "kafka/handlers.h"
#include "kafka/msg.h"
#include "kafka/msg_gen.h"
#include "kafka/names.h"
#include "kafka/services.h"
#include "security/acl.h"

static char *cstr(ls_arena_t *a, ls_kstr_t s) { return ls_kgroup_cstr(a, s, NULL); }

static ls_kstr_t kstr(ls_arena_t *a, const char *s)
{
    return s ? ls_kstr_c(ls_kgroup_cstr(a, ls_kstr_c(s), NULL)) : ls_kstr_null();
}

static char *arena_printf(ls_arena_t *a, const char *fmt, const char *arg)
{
    size_t n = strlen(fmt) + strlen(arg) + 1;
    char *s = ls_arena_alloc(a, n);
    snprintf(s, n, fmt, arg);
    return s;
}

/* A topic's partition count for stgroup (-1: none). */
static int32_t topic_partitions(void *arg, const char *topic)
{
    ls_kreq_t *req = arg;
    ls_stream_t *s = ls_catalog_lookup(req->svc->catalog, LS_DEFAULT_NAMESPACE, topic);
    if (!s) return -1;
    int32_t n = s->partitions;
    ls_stream_release(s);
    return n;
}

/* ------------------------------------------------------ wire -> stgroup */

static const char **strv(ls_arena_t *a, const ls_kstr_t *v, int32_t n)
{
    const char **o = ls_arena_alloc(a, (size_t)(n + 1) * sizeof *o);
    for (int32_t i = 0; i < n; i++)
        o[i] = ls_kafka_topic_name(a, v[i]);
    return o;
}

static ls_stgroup_kv_t *kvs(ls_arena_t *a, const ls_kafka_StreamsGroupHeartbeatRequest_KeyValue *v,
                            int32_t n)
{
    ls_stgroup_kv_t *o = ls_arena_alloc(a, (size_t)(n + 1) * sizeof *o);
    for (int32_t i = 0; i < n; i++)
        o[i] = (ls_stgroup_kv_t){cstr(a, v[i].Key), cstr(a, v[i].Value)};
    return o;
}

static ls_stgroup_topic_info_t *
infos(ls_arena_t *a, const ls_kafka_StreamsGroupHeartbeatRequest_TopicInfo *v, int32_t n)
{
    ls_stgroup_topic_info_t *o = ls_arena_alloc(a, (size_t)(n + 1) * sizeof *o);
    for (int32_t i = 0; i < n; i++)
        o[i] = (ls_stgroup_topic_info_t){
            ls_kafka_topic_name(a, v[i].Name), v[i].Partitions, v[i].ReplicationFactor,
            kvs(a, v[i].TopicConfigs, v[i].NumTopicConfigs), v[i].NumTopicConfigs};
    return o;
}

static ls_stgroup_topology_t *topology(ls_arena_t *a,
                                       const ls_kafka_StreamsGroupHeartbeatRequest_Topology *t)
{
    ls_stgroup_topology_t *o = ls_arena_alloc(a, sizeof *o);
    ls_stgroup_subtopology_t *subs =
        ls_arena_alloc(a, (size_t)(t->NumSubtopologies + 1) * sizeof *subs);
    for (int32_t i = 0; i < t->NumSubtopologies; i++) {
        const ls_kafka_StreamsGroupHeartbeatRequest_Subtopology *s = &t->Subtopologies[i];
        ls_stgroup_copart_t *cp =
            ls_arena_alloc(a, (size_t)(s->NumCopartitionGroups + 1) * sizeof *cp);
        for (int32_t j = 0; j < s->NumCopartitionGroups; j++) {
            const ls_kafka_StreamsGroupHeartbeatRequest_CopartitionGroup *g =
                &s->CopartitionGroups[j];
            cp[j] =
                (ls_stgroup_copart_t){g->SourceTopics, g->NumSourceTopics,
                                      g->RepartitionSourceTopics, g->NumRepartitionSourceTopics};
        }
        subs[i] = (ls_stgroup_subtopology_t){
            .id = cstr(a, s->SubtopologyId),
            .sources = strv(a, s->SourceTopics, s->NumSourceTopics),
            .nsources = s->NumSourceTopics,
            .sinks = strv(a, s->RepartitionSinkTopics, s->NumRepartitionSinkTopics),
            .nsinks = s->NumRepartitionSinkTopics,
            .repartitions = infos(a, s->RepartitionSourceTopics, s->NumRepartitionSourceTopics),
            .nrepartitions = s->NumRepartitionSourceTopics,
            .changelogs = infos(a, s->StateChangelogTopics, s->NumStateChangelogTopics),
            .nchangelogs = s->NumStateChangelogTopics,
            .coparts = cp,
            .ncoparts = s->NumCopartitionGroups,
        };
    }
    *o = (ls_stgroup_topology_t){t->Epoch, subs, t->NumSubtopologies};
    return o;
}

static ls_stgroup_task_t *
tasks(ls_arena_t *a, const ls_kafka_StreamsGroupHeartbeatRequest_TaskIds *v, int32_t n, int *count)
{
    int total = 0;
    for (int32_t i = 0; i < n; i++)
        total += v[i].NumPartitions;
    ls_stgroup_task_t *o = ls_arena_alloc(a, (size_t)(total + 1) * sizeof *o);
    int k = 0;
    for (int32_t i = 0; i < n; i++) {
        const char *sub = cstr(a, v[i].SubtopologyId);
        for (int32_t j = 0; j < v[i].NumPartitions; j++)
            o[k++] = (ls_stgroup_task_t){sub ? sub : "", v[i].Partitions[j]};
    }
    *count = k;
    return o;
}

static ls_stgroup_task_offset_t *
offsets(ls_arena_t *a, const ls_kafka_StreamsGroupHeartbeatRequest_TaskOffset *v, int32_t n)
{
    ls_stgroup_task_offset_t *o = ls_arena_alloc(a, (size_t)(n + 1) * sizeof *o);
    for (int32_t i = 0; i < n; i++) {
        const char *sub = cstr(a, v[i].SubtopologyId);
        o[i] = (ls_stgroup_task_offset_t){sub ? sub : "", v[i].Partition, v[i].Offset};
    }
    return o;
}

/* ------------------------------------------------------ stgroup -> wire */

static bool kstr_is(ls_kstr_t k, const char *s)
{
    size_t n = strlen(s);
    return k.len >= 0 && (size_t)k.len == n && !memcmp(k.ptr, s, n);
}

/* Tasks grouped by sub-topology, sorted as they come (stgroup keeps them
 * in assignment order). T: a TaskIds struct of the response or describe. */
#define FILL_TASKS(T, out, nout, v, n)                                                             \
    do {                                                                                           \
        (out) = ls_kmsg_alloc(a, (n), sizeof(T));                                                  \
        (nout) = 0;                                                                                \
        for (int i_ = 0; i_ < (n); i_++) {                                                         \
            T *t_ = NULL;                                                                          \
            for (int32_t k_ = 0; k_ < (nout) && !t_; k_++)                                         \
                if (kstr_is((out)[k_].SubtopologyId, (v)[i_].sub)) t_ = &(out)[k_];                \
            if (!t_) {                                                                             \
                t_ = &(out)[(nout)++];                                                             \
                t_->SubtopologyId = kstr(a, (v)[i_].sub);                                          \
                t_->Partitions = ls_kmsg_alloc(a, (n), sizeof(int32_t));                           \
            }                                                                                      \
            t_->Partitions[t_->NumPartitions++] = (v)[i_].partition;                               \
        }                                                                                          \
    } while (0)

/* The topics a sub-topology reads, for an endpoint's partitions. */
static void sub_topics(const ls_stgroup_topology_t *t, const char *sub, const char ***names, int *n,
                       ls_arena_t *a)
{
    *n = 0;
    *names = NULL;
    for (int i = 0; t && i < t->nsubs; i++) {
        if (strcmp(t->subs[i].id, sub)) continue;
        const ls_stgroup_subtopology_t *s = &t->subs[i];
        *names = ls_arena_alloc(a, (size_t)(s->nsources + s->nrepartitions + 1) * sizeof **names);
        for (int j = 0; j < s->nsources; j++)
            (*names)[(*n)++] = s->sources[j];
        for (int j = 0; j < s->nrepartitions; j++)
            (*names)[(*n)++] = s->repartitions[j].name;
    }
}

typedef ls_kafka_StreamsGroupHeartbeatResponse_TopicPartition ep_tp_t;

/* Each task's partition of every topic its sub-topology reads (when the
 * topic has that partition), grouped by topic. */
static ep_tp_t *task_partitions(ls_kreq_t *req, const ls_stgroup_topology_t *t,
                                const ls_stgroup_task_t *v, int n, int32_t *nout)
{
    ls_arena_t *a = req->arena;
    int cap = 0;
    ep_tp_t *out = NULL;
    *nout = 0;
    for (int i = 0; i < n; i++) {
        const char **names;
        int nn;
        sub_topics(t, v[i].sub, &names, &nn, a);
        for (int j = 0; j < nn; j++) {
            if (topic_partitions(req, names[j]) <= v[i].partition) continue;
            ep_tp_t *tp = NULL;
            for (int32_t k = 0; k < *nout && !tp; k++)
                if (kstr_is(out[k].Topic, names[j])) tp = &out[k];
            if (!tp) {
                if (*nout == cap) {
                    cap = cap ? cap * 2 : 8;
                    ep_tp_t *nv = ls_kmsg_alloc(a, cap, sizeof *nv);
                    if (*nout) memcpy(nv, out, (size_t)*nout * sizeof *nv);
                    out = nv;
                }
                tp = &out[(*nout)++];
                tp->Topic = kstr(a, names[j]);
                tp->Partitions = ls_kmsg_alloc(a, n, sizeof(int32_t));
            }
            tp->Partitions[tp->NumPartitions++] = v[i].partition;
        }
    }
    return out;
}

/* PartitionsByUserEndpoint: every member with an endpoint. */
static void fill_endpoints(ls_kreq_t *req, const ls_stgroup_t *st,
                           ls_kafka_StreamsGroupHeartbeatResponse *r)
{
    ls_arena_t *a = req->arena;
    int n = ls_stgroup_member_count(st);
    r->PartitionsByUserEndpoint = ls_kmsg_alloc(a, n, sizeof *r->PartitionsByUserEndpoint);
    r->NumPartitionsByUserEndpoint = 0;
    const ls_stgroup_topology_t *t = ls_stgroup_topology(st);
    for (int i = 0; i < n; i++) {
        ls_stgroup_member_info_t mi;
        ls_stgroup_member(st, i, &mi);
        if (!mi.endpoint_host) continue;
        ls_kafka_StreamsGroupHeartbeatResponse_EndpointToPartitions *e =
            &r->PartitionsByUserEndpoint[r->NumPartitionsByUserEndpoint++];
        e->UserEndpoint.Host = kstr(a, mi.endpoint_host);
        e->UserEndpoint.Port = mi.endpoint_port;
        e->ActivePartitions = task_partitions(req, t, mi.assigned.active, mi.assigned.nactive,
                                              &e->NumActivePartitions);
        e->StandbyPartitions = task_partitions(req, t, mi.assigned.standby, mi.assigned.nstandby,
                                               &e->NumStandbyPartitions);
    }
}

/* ------------------------------------------------------ StreamsGroupHeartbeat */

typedef struct hb_ctx {
    ls_kreq_t *req;
    ls_kafka_StreamsGroupHeartbeatRequest m;
    char *gid;
    ls_kafka_StreamsGroupHeartbeatResponse resp;
    ls_stgroup_create_t *create; /* internal topics to create (arena copies) */
    int ncreate;
    char **create_err; /* per topic: why it was not created (NULL: created) */
} hb_ctx_t;

static void hb_send(hb_ctx_t *ctx)
{
    ls_kreq_t *req = ctx->req;
    LS_KRESPOND(StreamsGroupHeartbeatResponse, ctx->resp);
}

static void hb_fail(hb_ctx_t *ctx, int16_t err, const char *msg)
{
    memset(&ctx->resp, 0, sizeof ctx->resp);
    ctx->resp.ErrorCode = err;
    ctx->resp.ErrorMessage = msg ? ls_kstr_c(msg) : ls_kstr_null();
    ctx->resp.MemberId = ctx->m.MemberId;
    ctx->resp.NumStatus = ctx->resp.NumActiveTasks = ctx->resp.NumStandbyTasks = -1;
    ctx->resp.NumWarmupTasks = ctx->resp.NumPartitionsByUserEndpoint = -1;
    hb_send(ctx);
}

static void create_work(void *arg)
{
    hb_ctx_t *ctx = arg;
    ls_kafka_services_t *b = ctx->req->svc;
    for (int i = 0; i < ctx->ncreate; i++) {
        if (ctx->create_err[i]) continue; /* not authorized */
        const ls_stgroup_create_t *c = &ctx->create[i];
        ls_prop_t *props =
            ls_arena_alloc(ctx->req->arena, (size_t)(c->nconfigs + 1) * sizeof *props);
        for (int k = 0; k < c->nconfigs; k++)
            props[k] = (ls_prop_t){(char *)c->configs[k].key, (char *)c->configs[k].value};
        char err[256];
        ls_status st = ls_catalog_create(b->catalog, LS_DEFAULT_NAMESPACE, c->name, c->partitions,
                                         props, c->nconfigs, 0, NULL, err, sizeof err);
        if (st == LS_OK) {
            LS_INFO("kafka", "streams group '%s': created internal topic '%s' (%d partitions)",
                    ctx->gid, c->name, (int)c->partitions);
        } else if (st != LS_EEXISTS) {
            LS_WARN("kafka", "streams group '%s': creating internal topic '%s' failed: %s",
                    ctx->gid, c->name, err);
            size_t len = strlen(err) + 1;
            ctx->create_err[i] = ls_arena_alloc(ctx->req->arena, len);
            memcpy(ctx->create_err[i], err, len);
        }
    }
}

/* The MISSING_INTERNAL_TOPICS detail, with what could not be created. */
static void create_done(void *arg)
{
    hb_ctx_t *ctx = arg;
    ls_arena_t *a = ctx->req->arena;
    for (int32_t s = 0; s < ctx->resp.NumStatus; s++) {
        ls_kafka_StreamsGroupHeartbeatResponse_Status *st = &ctx->resp.Status[s];
        if (st->StatusCode != LS_STGROUP_MISSING_INTERNAL_TOPICS) continue;
        ls_buf_t b;
        ls_buf_init(&b);
        ls_buf_append(&b, st->StatusDetail.ptr, (size_t)st->StatusDetail.len);
        for (int i = 0; i < ctx->ncreate; i++) {
            if (!ctx->create_err[i]) continue;
            char line[512];
            snprintf(line, sizeof line, "; %s could not be created: %s", ctx->create[i].name,
                     ctx->create_err[i]);
            ls_buf_append(&b, line, strlen(line));
        }
        char *d = ls_arena_alloc(a, b.len + 1);
        memcpy(d, b.data, b.len);
        d[b.len] = 0;
        st->StatusDetail = ls_kstr_c(d);
        ls_buf_free(&b);
    }
    hb_send(ctx);
}

/* Creates what the group asked for, then answers. */
static void hb_finish(hb_ctx_t *ctx)
{
    if (!ctx->ncreate) {
        hb_send(ctx);
        return;
    }
    ls_kreq_t *req = ctx->req;
    /* as Kafka: CREATE on the cluster, else on each topic */
    bool cluster = ls_kreq_allowed_cluster(req, LS_ACL_OP_CREATE);
    for (int i = 0; i < ctx->ncreate; i++)
        if (!cluster &&
            !ls_kreq_allowed(req, LS_ACL_OP_CREATE, LS_ACL_RES_TOPIC, ctx->create[i].name))
            ctx->create_err[i] = "not authorized to CREATE it";
    ls_ksvc_offload(req->svc, create_work, create_done, ctx);
}

static void hb_written(void *arg, ls_status st)
{
    hb_ctx_t *ctx = arg;
    if (st != LS_OK) {
        hb_fail(ctx, ls_kafka_group_write_error(st), "The group could not be stored.");
        return;
    }
    hb_finish(ctx);
}

/* Copies what res points into the group (valid until its next call). */
static void keep_create(hb_ctx_t *ctx, const ls_stgroup_hb_res_t *res)
{
    ls_arena_t *a = ctx->req->arena;
    ctx->ncreate = res->ncreate;
    ctx->create = ls_arena_alloc(a, (size_t)(res->ncreate + 1) * sizeof *ctx->create);
    ctx->create_err = ls_arena_alloc(a, (size_t)(res->ncreate + 1) * sizeof *ctx->create_err);
    for (int i = 0; i < res->ncreate; i++) {
        const ls_stgroup_create_t *c = &res->create[i];
        ls_stgroup_kv_t *kv = ls_arena_alloc(a, (size_t)(c->nconfigs + 1) * sizeof *kv);
        for (int k = 0; k < c->nconfigs; k++)
            kv[k] = (ls_stgroup_kv_t){cstr(a, ls_kstr_c(c->configs[k].key)),
                                      cstr(a, ls_kstr_c(c->configs[k].value))};
        ctx->create[i] = (ls_stgroup_create_t){cstr(a, ls_kstr_c(c->name)), c->partitions,
                                               c->replication_factor, kv, c->nconfigs};
        ctx->create_err[i] = NULL;
    }
}

static void fill_response(hb_ctx_t *ctx, const ls_group_t *g, const ls_stgroup_hb_res_t *res)
{
    ls_kreq_t *req = ctx->req;
    ls_arena_t *a = req->arena;
    ls_kafka_StreamsGroupHeartbeatResponse *r = &ctx->resp;
    memset(r, 0, sizeof *r);
    r->ErrorMessage = ls_kstr_null();
    r->MemberId = ctx->m.MemberId;
    r->MemberEpoch = res->member_epoch;
    r->HeartbeatIntervalMs = res->heartbeat_interval_ms;
    r->NumStatus = r->NumActiveTasks = r->NumStandbyTasks = r->NumWarmupTasks = -1;
    r->NumPartitionsByUserEndpoint = -1;
    if (res->nstatus) {
        r->NumStatus = res->nstatus;
        r->Status = ls_kmsg_alloc(a, res->nstatus, sizeof *r->Status);
        for (int i = 0; i < res->nstatus; i++)
            r->Status[i] = (ls_kafka_StreamsGroupHeartbeatResponse_Status){
                res->status[i].code, kstr(a, res->status[i].detail)};
    }
    if (res->send_tasks) {
        typedef ls_kafka_StreamsGroupHeartbeatResponse_TaskIds T;
        FILL_TASKS(T, r->ActiveTasks, r->NumActiveTasks, res->tasks.active, res->tasks.nactive);
        FILL_TASKS(T, r->StandbyTasks, r->NumStandbyTasks, res->tasks.standby, res->tasks.nstandby);
        FILL_TASKS(T, r->WarmupTasks, r->NumWarmupTasks, res->tasks.warmup, res->tasks.nwarmup);
    }
    r->EndpointInformationEpoch = res->endpoint_epoch;
    if (res->send_endpoints) fill_endpoints(req, ls_group_streams(g), r);
    keep_create(ctx, res);
}

static void hb_ready(void *arg, ls_group_t *g)
{
    hb_ctx_t *ctx = arg;
    ls_kreq_t *req = ctx->req;
    ls_arena_t *a = req->arena;
    const ls_kafka_StreamsGroupHeartbeatRequest *m = &ctx->m;
    if (!g) {
        hb_fail(ctx, LS_KERR_COORDINATOR_NOT_AVAILABLE, NULL);
        return;
    }
    ls_stgroup_hb_req_t hr = {
        .member_id = cstr(a, m->MemberId),
        .member_epoch = m->MemberEpoch,
        .endpoint_epoch = m->EndpointInformationEpoch,
        .instance_id = cstr(a, m->InstanceId),
        .rack_id = cstr(a, m->RackId),
        .rebalance_timeout_ms = m->RebalanceTimeoutMs,
        .topology = m->HasTopology ? topology(a, &m->Topology) : NULL,
        .has_owned = m->NumActiveTasks >= 0 || m->NumStandbyTasks >= 0 || m->NumWarmupTasks >= 0,
        .process_id = cstr(a, m->ProcessId),
        .has_endpoint = m->HasUserEndpoint,
        .endpoint_host = m->HasUserEndpoint ? cstr(a, m->UserEndpoint.Host) : NULL,
        .endpoint_port = m->UserEndpoint.Port,
        .tags = m->NumClientTags >= 0 ? kvs(a, m->ClientTags, m->NumClientTags) : NULL,
        .ntags = m->NumClientTags,
        .offsets = m->NumTaskOffsets >= 0 ? offsets(a, m->TaskOffsets, m->NumTaskOffsets) : NULL,
        .noffsets = m->NumTaskOffsets,
        .end_offsets =
            m->NumTaskEndOffsets >= 0 ? offsets(a, m->TaskEndOffsets, m->NumTaskEndOffsets) : NULL,
        .nend_offsets = m->NumTaskEndOffsets,
        .shutdown_application = m->ShutdownApplication,
        .client_id = cstr(a, req->client_id.len >= 0 ? req->client_id : ls_kstr_c("")),
        .client_host = ls_kgroup_client_host(req),
        .session_timeout_ms = req->svc->cfg->group_streams_session_timeout_ms,
        .heartbeat_interval_ms = req->svc->cfg->group_streams_heartbeat_interval_ms,
        .num_standby_replicas = req->svc->cfg->group_streams_num_standby_replicas,
        .partitions = topic_partitions,
        .partitions_arg = req,
    };
    if (hr.has_owned) {
        /* Kafka: if one task type is non-null, all must be */
        if (m->NumActiveTasks < 0 || m->NumStandbyTasks < 0 || m->NumWarmupTasks < 0) {
            hb_fail(ctx, LS_KERR_INVALID_REQUEST,
                    "If one task-type is non-null, all must be non-null.");
            return;
        }
        hr.owned.active = tasks(a, m->ActiveTasks, m->NumActiveTasks, &hr.owned.nactive);
        hr.owned.standby = tasks(a, m->StandbyTasks, m->NumStandbyTasks, &hr.owned.nstandby);
        hr.owned.warmup = tasks(a, m->WarmupTasks, m->NumWarmupTasks, &hr.owned.nwarmup);
    }
    if (req->svc->group_configs) { /* the group's own (kafka-configs --entity-type groups) */
        ls_group_configs_get(req->svc->group_configs, ctx->gid, LS_GROUP_CONFIG_STREAMS_SESSION,
                             &hr.session_timeout_ms);
        ls_group_configs_get(req->svc->group_configs, ctx->gid, LS_GROUP_CONFIG_STREAMS_HEARTBEAT,
                             &hr.heartbeat_interval_ms);
        ls_group_configs_get(req->svc->group_configs, ctx->gid, LS_GROUP_CONFIG_STREAMS_STANDBYS,
                             &hr.num_standby_replicas);
    }
    ls_stgroup_hb_res_t res;
    bool stored;
    ls_group_err ge = ls_group_streams_heartbeat(g, &hr, &res, &stored);
    if (ge == LS_GERR_GROUP_ID_NOT_FOUND) {
        hb_fail(ctx, LS_KERR_GROUP_ID_NOT_FOUND,
                arena_printf(a, "Group %s is not a streams group.", ctx->gid));
        return;
    }
    if (ge != LS_GERR_NONE) {
        hb_fail(ctx, ls_kafka_group_error(ge), NULL);
        return;
    }
    if (res.err != LS_CGERR_NONE) {
        hb_fail(ctx, ls_kafka_cgroup_error(res.err),
                res.message ? cstr(a, ls_kstr_c(res.message)) : NULL);
        return;
    }
    fill_response(ctx, g, &res);
    if (stored) {
        ls_group_service_barrier(req->svc->groups, hb_written, ctx);
        return;
    }
    hb_finish(ctx);
}

/* As Kafka: DESCRIBE on every topic the topology reads or writes. */
static bool topology_allowed(ls_kreq_t *req, const ls_kafka_StreamsGroupHeartbeatRequest *m)
{
    if (!m->HasTopology) return true;
    for (int32_t i = 0; i < m->Topology.NumSubtopologies; i++) {
        const ls_kafka_StreamsGroupHeartbeatRequest_Subtopology *s = &m->Topology.Subtopologies[i];
        for (int32_t j = 0; j < s->NumSourceTopics; j++)
            if (!ls_kreq_allowed_k(req, LS_ACL_OP_DESCRIBE, LS_ACL_RES_TOPIC, s->SourceTopics[j]))
                return false;
        for (int32_t j = 0; j < s->NumRepartitionSinkTopics; j++)
            if (!ls_kreq_allowed_k(req, LS_ACL_OP_DESCRIBE, LS_ACL_RES_TOPIC,
                                   s->RepartitionSinkTopics[j]))
                return false;
        for (int32_t j = 0; j < s->NumRepartitionSourceTopics; j++)
            if (!ls_kreq_allowed_k(req, LS_ACL_OP_DESCRIBE, LS_ACL_RES_TOPIC,
                                   s->RepartitionSourceTopics[j].Name))
                return false;
        for (int32_t j = 0; j < s->NumStateChangelogTopics; j++)
            if (!ls_kreq_allowed_k(req, LS_ACL_OP_DESCRIBE, LS_ACL_RES_TOPIC,
                                   s->StateChangelogTopics[j].Name))
                return false;
    }
    return true;
}

/* Every string of the request is a clean C string (no NUL or control
 * character): ids and topic names go into the store and the logs. */
static bool strings_clean(ls_arena_t *a, const ls_kafka_StreamsGroupHeartbeatRequest *m)
{
    bool ok = true, one;
    const ls_kstr_t plain[] = {m->MemberId, m->InstanceId, m->RackId, m->ProcessId};
    for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++) {
        ls_kgroup_cstr(a, plain[i], &one);
        ok &= one;
    }
    for (int32_t i = 0; m->HasTopology && i < m->Topology.NumSubtopologies; i++) {
        ls_kgroup_cstr(a, m->Topology.Subtopologies[i].SubtopologyId, &one);
        ok &= one;
    }
    return ok;
}

void ls_kafka_handle_streams_group_heartbeat(ls_kreq_t *req)
{
    ls_arena_t *a = req->arena;
    hb_ctx_t *ctx = ls_arena_alloc(a, sizeof *ctx);
    memset(ctx, 0, sizeof *ctx);
    ctx->req = req;
    ctx->m = *(const ls_kafka_StreamsGroupHeartbeatRequest *)req->msg;
    const ls_kafka_StreamsGroupHeartbeatRequest *m = &ctx->m;
    bool ok;
    ctx->gid = ls_kgroup_cstr(a, m->GroupId, &ok);
    /* as Kafka: READ on the group, DESCRIBE on the topology's topics */
    if (!ls_kreq_allowed_k(req, LS_ACL_OP_READ, LS_ACL_RES_GROUP, m->GroupId)) {
        hb_fail(ctx, LS_KERR_GROUP_AUTHORIZATION_FAILED, NULL);
        return;
    }
    if (!ok || !ctx->gid || !*ctx->gid) {
        hb_fail(ctx, LS_KERR_INVALID_REQUEST, "GroupId can't be empty.");
        return;
    }
    if (ls_kgroup_table_refused(req, ctx->gid)) {
        hb_fail(ctx, LS_KERR_GROUP_AUTHORIZATION_FAILED,
                "The lakestream.table.* groups are read-only.");
        return;
    }
    if (!strings_clean(a, m)) {
        hb_fail(ctx, LS_KERR_INVALID_REQUEST, "A string field holds a control character.");
        return;
    }
    for (int32_t i = 0; m->HasTopology && i < m->Topology.NumSubtopologies; i++)
        if (m->Topology.Subtopologies[i].NumSourceTopicRegex > 0) {
            hb_fail(ctx, LS_KERR_INVALID_REQUEST,
                    "Regular expressions for source topics are not supported yet.");
            return;
        }
    if (!topology_allowed(req, m)) {
        hb_fail(ctx, LS_KERR_TOPIC_AUTHORIZATION_FAILED,
                "Not authorized to describe a topic of the topology.");
        return;
    }
    if (!req->svc->groups) {
        hb_fail(ctx, LS_KERR_COORDINATOR_NOT_AVAILABLE, NULL);
        return;
    }
    ls_kgroup_acquire(req, ctx->gid, hb_ready, ctx);
}

/* ------------------------------------------------------ StreamsGroupDescribe */

typedef struct desc_ctx {
    ls_kreq_t *req;
    ls_kafka_StreamsGroupDescribeRequest m;
    ls_kafka_StreamsGroupDescribeResponse resp;
} desc_ctx_t;

static void desc_finish(void *arg)
{
    desc_ctx_t *ctx = arg;
    ls_kreq_t *req = ctx->req;
    LS_KRESPOND(StreamsGroupDescribeResponse, ctx->resp);
}

typedef ls_kafka_StreamsGroupDescribeResponse_TopicInfo d_info_t;

static d_info_t *desc_infos(ls_arena_t *a, const ls_stgroup_topic_info_t *v, int n)
{
    d_info_t *o = ls_kmsg_alloc(a, n, sizeof *o);
    for (int i = 0; i < n; i++) {
        o[i].Name = kstr(a, v[i].name);
        o[i].Partitions = v[i].partitions;
        o[i].ReplicationFactor = v[i].replication_factor;
        o[i].NumTopicConfigs = v[i].nconfigs;
        o[i].TopicConfigs = ls_kmsg_alloc(a, v[i].nconfigs, sizeof *o[i].TopicConfigs);
        for (int k = 0; k < v[i].nconfigs; k++)
            o[i].TopicConfigs[k] = (ls_kafka_StreamsGroupDescribeResponse_KeyValue){
                kstr(a, v[i].configs[k].key), kstr(a, v[i].configs[k].value)};
    }
    return o;
}

static ls_kstr_t *desc_strv(ls_arena_t *a, const char *const *v, int n)
{
    ls_kstr_t *o = ls_kmsg_alloc(a, n, sizeof *o);
    for (int i = 0; i < n; i++)
        o[i] = kstr(a, v[i]);
    return o;
}

static void desc_topology(ls_arena_t *a, const ls_stgroup_topology_t *t,
                          ls_kafka_StreamsGroupDescribeResponse_Topology *o)
{
    o->NumSubtopologies = -1;
    if (!t) return;
    o->Epoch = t->epoch;
    o->NumSubtopologies = t->nsubs;
    o->Subtopologies = ls_kmsg_alloc(a, t->nsubs, sizeof *o->Subtopologies);
    for (int i = 0; i < t->nsubs; i++) {
        const ls_stgroup_subtopology_t *s = &t->subs[i];
        ls_kafka_StreamsGroupDescribeResponse_Subtopology *x = &o->Subtopologies[i];
        x->SubtopologyId = kstr(a, s->id);
        x->SourceTopics = desc_strv(a, s->sources, s->nsources);
        x->NumSourceTopics = s->nsources;
        x->RepartitionSinkTopics = desc_strv(a, s->sinks, s->nsinks);
        x->NumRepartitionSinkTopics = s->nsinks;
        x->StateChangelogTopics = desc_infos(a, s->changelogs, s->nchangelogs);
        x->NumStateChangelogTopics = s->nchangelogs;
        x->RepartitionSourceTopics = desc_infos(a, s->repartitions, s->nrepartitions);
        x->NumRepartitionSourceTopics = s->nrepartitions;
    }
}

static void desc_assignment(ls_arena_t *a, const ls_stgroup_tasks_t *t,
                            ls_kafka_StreamsGroupDescribeResponse_Assignment *o)
{
    typedef ls_kafka_StreamsGroupDescribeResponse_TaskIds T;
    FILL_TASKS(T, o->ActiveTasks, o->NumActiveTasks, t->active, t->nactive);
    FILL_TASKS(T, o->StandbyTasks, o->NumStandbyTasks, t->standby, t->nstandby);
    FILL_TASKS(T, o->WarmupTasks, o->NumWarmupTasks, t->warmup, t->nwarmup);
}

static ls_kafka_StreamsGroupDescribeResponse_TaskOffset *
desc_offsets(ls_arena_t *a, const ls_stgroup_task_offset_t *v, int n)
{
    ls_kafka_StreamsGroupDescribeResponse_TaskOffset *o = ls_kmsg_alloc(a, n, sizeof *o);
    for (int i = 0; i < n; i++)
        o[i] = (ls_kafka_StreamsGroupDescribeResponse_TaskOffset){kstr(a, v[i].sub), v[i].partition,
                                                                  v[i].offset};
    return o;
}

static void desc_member(ls_arena_t *a, const ls_stgroup_member_info_t *mi,
                        ls_kafka_StreamsGroupDescribeResponse_Member *mb)
{
    mb->MemberId = kstr(a, mi->member_id);
    mb->MemberEpoch = mi->member_epoch;
    mb->InstanceId = ls_kstr_null();
    mb->RackId = kstr(a, mi->rack_id);
    mb->ClientId = kstr(a, mi->client_id);
    mb->ClientHost = kstr(a, mi->client_host);
    mb->TopologyEpoch = mi->topology_epoch;
    mb->ProcessId = kstr(a, mi->process_id);
    mb->HasUserEndpoint = mi->endpoint_host != NULL;
    mb->UserEndpoint.Host = kstr(a, mi->endpoint_host ? mi->endpoint_host : "");
    mb->UserEndpoint.Port = mi->endpoint_port;
    mb->NumClientTags = mi->ntags;
    mb->ClientTags = ls_kmsg_alloc(a, mi->ntags, sizeof *mb->ClientTags);
    for (int k = 0; k < mi->ntags; k++)
        mb->ClientTags[k] = (ls_kafka_StreamsGroupDescribeResponse_KeyValue){
            kstr(a, mi->tags[k].key), kstr(a, mi->tags[k].value)};
    mb->TaskOffsets = desc_offsets(a, mi->offsets, mi->noffsets);
    mb->NumTaskOffsets = mi->noffsets;
    mb->TaskEndOffsets = desc_offsets(a, mi->end_offsets, mi->nend_offsets);
    mb->NumTaskEndOffsets = mi->nend_offsets;
    desc_assignment(a, &mi->assigned, &mb->Assignment);
    desc_assignment(a, &mi->target, &mb->TargetAssignment);
    mb->IsClassic = false;
}

/* One group of the answer (kafka/handlers.h, ls_kgroup_describe_each). */
static void desc_one(void *arg, int32_t i, const char *gid, ls_group_t *g, int16_t err,
                     const char *fmt)
{
    desc_ctx_t *ctx = arg;
    ls_kreq_t *req = ctx->req;
    ls_arena_t *a = req->arena;
    ls_kafka_StreamsGroupDescribeResponse_DescribedGroup *o = &ctx->resp.Groups[i];
    o->GroupId = ctx->m.GroupIds[i];
    const ls_stgroup_t *st = g ? ls_group_streams(g) : NULL;
    if (!err && !st) {
        err = LS_KERR_GROUP_ID_NOT_FOUND;
        fmt = "Group %s is not a streams group.";
    }
    if (err) {
        o->ErrorCode = err;
        o->ErrorMessage = fmt ? ls_kstr_c(arena_printf(a, fmt, gid ? gid : "")) : ls_kstr_null();
        o->GroupState = ls_kstr_c(err == LS_KERR_GROUP_ID_NOT_FOUND ? "Dead" : "");
        o->AuthorizedOperations = INT32_MIN;
    } else {
        o->ErrorMessage = ls_kstr_null();
        o->GroupState = ls_kstr_c(ls_group_state_label(g));
        o->GroupEpoch = ls_stgroup_epoch(st);
        o->AssignmentEpoch = ls_stgroup_target_epoch(st);
        o->HasTopology = ls_stgroup_topology(st) != NULL;
        desc_topology(a, ls_stgroup_topology(st), &o->Topology);
        o->AuthorizedOperations =
            ctx->m.IncludeAuthorizedOperations
                ? ls_kreq_authorized_ops(req, LS_ACL_RES_GROUP, gid, LS_KGROUP_AUTHORIZED_OPS)
                : INT32_MIN;
        int n = ls_stgroup_member_count(st);
        o->NumMembers = n;
        o->Members = ls_kmsg_alloc(a, n, sizeof *o->Members);
        for (int k = 0; k < n; k++) {
            ls_stgroup_member_info_t mi;
            ls_stgroup_member(st, k, &mi);
            desc_member(a, &mi, &o->Members[k]);
        }
    }
}

void ls_kafka_handle_streams_group_describe(ls_kreq_t *req)
{
    ls_arena_t *a = req->arena;
    desc_ctx_t *ctx = ls_arena_alloc(a, sizeof *ctx);
    memset(ctx, 0, sizeof *ctx);
    ctx->req = req;
    ctx->m = *(const ls_kafka_StreamsGroupDescribeRequest *)req->msg;
    ctx->resp.NumGroups = ctx->m.NumGroupIds;
    ctx->resp.Groups = ls_kmsg_alloc(a, ctx->m.NumGroupIds, sizeof *ctx->resp.Groups);
    ls_kgroup_describe_each(req, ctx->m.GroupIds, ctx->m.NumGroupIds, desc_one, desc_finish, ctx);
}
