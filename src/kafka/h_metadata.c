/* Metadata (key 3) and DescribeCluster (key 60).
 *
 * Lakestream is leaderless: any broker accepts any request. Metadata lists
 * every live broker (cluster/membership.h) and names a "leader" per
 * partition by rendezvous hash over them (cluster/placement.h), preferring
 * brokers of the client's zone ("ls_az=<zone>" in client.id) when brokers
 * set broker.rack: reads of a partition then tend to hit one broker's cache.
 * Leader epoch 0, replicas = isr = [leader]. ControllerId is the lowest live
 * id (clients only use it to route admin requests, which any broker serves).
 *
 * Topics are streams of the default namespace. Requested topics that do not
 * exist are auto-created when the request allows it (v4+ flag, implied true
 * before) and auto.create.topics.enable is set, with num.partitions
 * partitions. Creation is a blocking catalog call, so it runs through
 * ls_ksvc_offload(); the answer then describes the new topic right away
 * (Kafka answers LEADER_NOT_AVAILABLE first; a committed catalog entry makes
 * that unnecessary here). Names that can never be topics get
 * INVALID_TOPIC_EXCEPTION and are never created.
 *
 * Threads: everything runs on the loop thread except the create job, which
 * only reads the arena strings prepared for it and writes its status array. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/diag.h"
#include "kafka/handlers.h"
#include "kafka/msg.h"
#include "kafka/services.h"

/* AclOperation codes (KIP-430 bit fields): all of them without an
 * authorizer, else those the principal is allowed (ls_kreq_authorized_ops). */
#define ACL_OP_BIT(op) (1 << (op))
#define TOPIC_AUTHORIZED_OPS                                                                       \
    (ACL_OP_BIT(3) | ACL_OP_BIT(4) | ACL_OP_BIT(5) | ACL_OP_BIT(6) | ACL_OP_BIT(7) |               \
     ACL_OP_BIT(8) | ACL_OP_BIT(10) | ACL_OP_BIT(11))
#define CLUSTER_AUTHORIZED_OPS                                                                     \
    (ACL_OP_BIT(5) | ACL_OP_BIT(7) | ACL_OP_BIT(8) | ACL_OP_BIT(9) | ACL_OP_BIT(10) |              \
     ACL_OP_BIT(11) | ACL_OP_BIT(12))

/* ------------------------------------------------------------ Metadata */

typedef struct md_topic {
    ls_stream_t *s; /* kept; NULL when err says why */
    char *name;     /* arena copy of the requested name ("" when asked by id) */
    int16_t err;    /* answer when s stays NULL */
    bool create;    /* auto-create on the worker */
    ls_status create_st;
} md_topic_t;

typedef struct md_ctx {
    ls_kreq_t *req;
    ls_kafka_MetadataRequest m;
    ls_kafka_MetadataResponse resp;
    bool listing;      /* "all topics": answer from `all` */
    ls_stream_t **all; /* from ls_catalog_list (may be NULL when empty) */
    int nall;
    md_topic_t *topics; /* one per requested topic */
    int ntopics;
    int32_t partitions;   /* for auto-create */
    ls_member_t *members; /* live brokers (arena copy) */
    int nmembers;
    char zone[64]; /* the client's zone hint ("" none) */
} md_ctx_t;

/* Placement key of a partition: topic id, then the partition number. */
static int32_t partition_leader(const md_ctx_t *ctx, const ls_stream_t *s, int32_t partition)
{
    uint8_t key[20];
    memcpy(key, s->id.b, 16);
    for (int i = 0; i < 4; i++)
        key[16 + i] = (uint8_t)((uint32_t)partition >> (24 - 8 * i));
    return ls_place_id(ctx->members, ctx->nmembers, key, sizeof key, ctx->zone);
}

static void md_fill_topic(md_ctx_t *ctx, ls_kafka_MetadataResponse_MetadataResponseTopic *t,
                          const ls_stream_t *s)
{
    ls_arena_t *a = ctx->req->arena;
    t->ErrorCode = LS_KERR_NONE;
    t->Name = ls_kstr_c(s->name);
    t->TopicId = s->id;
    t->IsInternal = false;
    t->TopicAuthorizedOperations =
        ctx->m.IncludeTopicAuthorizedOperations
            ? ls_kreq_authorized_ops(ctx->req, LS_ACL_RES_TOPIC, s->name, TOPIC_AUTHORIZED_OPS)
            : INT32_MIN;
    t->NumPartitions = s->partitions;
    t->Partitions = ls_kmsg_alloc(a, s->partitions, sizeof *t->Partitions);
    /* replicas: the leader, then the next live brokers (by id, wrapping), as
     * many as the factor the topic was created with; any of them serves any
     * request, the object store holds the data (LS_KAFKA_RF_KEY) */
    const char *rfv = ls_stream_config_get(s, LS_KAFKA_RF_KEY);
    int rf = rfv ? atoi(rfv) : 1;
    if (rf > ctx->nmembers) rf = ctx->nmembers;
    if (rf < 1) rf = 1;
    for (int32_t i = 0; i < s->partitions; i++) {
        ls_kafka_MetadataResponse_MetadataResponsePartition *p = &t->Partitions[i];
        int32_t *replicas = ls_kmsg_alloc(a, rf, sizeof *replicas);
        replicas[0] = partition_leader(ctx, s, i);
        int at = 0;
        for (int k = 0; k < ctx->nmembers; k++)
            if (ctx->members[k].id == replicas[0]) at = k;
        for (int k = 1; k < rf; k++)
            replicas[k] = ctx->members[(at + k) % ctx->nmembers].id;
        p->ErrorCode = LS_KERR_NONE;
        p->PartitionIndex = i;
        p->LeaderId = replicas[0];
        p->LeaderEpoch = 0;
        p->ReplicaNodes = replicas;
        p->NumReplicaNodes = rf;
        p->IsrNodes = replicas;
        p->NumIsrNodes = rf;
        p->OfflineReplicas = NULL;
        p->NumOfflineReplicas = 0;
    }
}

static void md_respond(md_ctx_t *ctx)
{
    ls_kreq_t *req = ctx->req;
    ls_kafka_services_t *b = req->svc;
    ls_arena_t *a = req->arena;
    ls_kafka_MetadataResponse *r = &ctx->resp;
    ls_member_t *live;
    ctx->nmembers = ls_ksvc_members(b, &live);
    ctx->members = ls_arena_alloc(a, (size_t)ctx->nmembers * sizeof *live);
    memcpy(ctx->members, live, (size_t)ctx->nmembers * sizeof *live);
    ls_free(live);
    ls_client_zone(req->client_id.ptr, req->client_id.len > 0 ? (size_t)req->client_id.len : 0,
                   ctx->zone, sizeof ctx->zone);

    r->ThrottleTimeMs = 0;
    r->NumBrokers = ctx->nmembers;
    r->Brokers = ls_arena_alloc(a, (size_t)ctx->nmembers * sizeof *r->Brokers);
    for (int i = 0; i < ctx->nmembers; i++) {
        const ls_member_t *m = &ctx->members[i];
        const char *host;
        ls_member_endpoint(m, ls_kreq_listener_name(req), &host, &r->Brokers[i].Port);
        r->Brokers[i].NodeId = m->id;
        r->Brokers[i].Host = ls_kstr_c(host);
        r->Brokers[i].Rack = *m->rack ? ls_kstr_c(m->rack) : ls_kstr_null();
    }
    r->ClusterId = ls_kstr_c(b->cluster_id);
    /* admin requests go to any broker; name the lowest id so every broker agrees */
    r->ControllerId = ctx->members[0].id;
    r->ClusterAuthorizedOperations =
        ctx->m.IncludeClusterAuthorizedOperations
            ? ls_kreq_authorized_ops(req, LS_ACL_RES_CLUSTER, LS_ACL_CLUSTER_NAME,
                                     CLUSTER_AUTHORIZED_OPS)
            : INT32_MIN;

    if (ctx->listing) {
        r->NumTopics = ctx->nall;
        r->Topics = ls_kmsg_alloc(a, ctx->nall, sizeof *r->Topics);
        for (int i = 0; i < ctx->nall; i++)
            md_fill_topic(ctx, &r->Topics[i], ctx->all[i]);
    } else {
        r->NumTopics = ctx->ntopics;
        r->Topics = ls_kmsg_alloc(a, ctx->ntopics, sizeof *r->Topics);
        for (int i = 0; i < ctx->ntopics; i++) {
            md_topic_t *mt = &ctx->topics[i];
            const ls_kafka_MetadataRequest_MetadataRequestTopic *q = &ctx->m.Topics[i];
            ls_kafka_MetadataResponse_MetadataResponseTopic *t = &r->Topics[i];
            if (mt->create) {
                /* Created, or another creator won the race: either way it
                 * exists now. A create refused by max.partitions answers
                 * UNKNOWN_TOPIC_OR_PARTITION, as with auto-creation off: the
                 * topic will not exist, and producers (librdkafka after
                 * topic.metadata.propagation.max.ms) fail their records with
                 * it. LEADER_NOT_AVAILABLE kept them retrying until their
                 * delivery timeout (5 minutes) with the reason only in the
                 * broker log (issue 29); POLICY_VIOLATION, though closer,
                 * is ignored in Metadata by librdkafka and the Java client.
                 * Other failures are retriable for the client. */
                if (mt->create_st == LS_OK || mt->create_st == LS_EEXISTS)
                    mt->s = ls_catalog_lookup(b->catalog, LS_DEFAULT_NAMESPACE, mt->name);
                if (!mt->s)
                    mt->err = mt->create_st == LS_EINVAL   ? LS_KERR_INVALID_TOPIC_EXCEPTION
                              : mt->create_st == LS_ELIMIT ? LS_KERR_UNKNOWN_TOPIC_OR_PARTITION
                                                           : LS_KERR_LEADER_NOT_AVAILABLE;
            }
            if (mt->s) {
                md_fill_topic(ctx, t, mt->s);
                continue;
            }
            t->ErrorCode = mt->err;
            t->Name = q->Name; /* echo what was asked (null when by id) */
            t->TopicId = q->TopicId;
            t->TopicAuthorizedOperations = INT32_MIN;
        }
    }

    ls_kw_t w;
    ls_kreq_encode(req, &w, r);
    /* Encoded: the stream snapshots (whose names the response pointed at) may go. */
    if (ctx->all) ls_stream_list_release(ctx->all, ctx->nall);
    for (int i = 0; i < ctx->ntopics; i++)
        ls_stream_release(ctx->topics[i].s);
    ls_kreq_respond(req, &w);
}

static void md_create_work(void *arg)
{
    md_ctx_t *ctx = arg;
    ls_kafka_services_t *b = ctx->req->svc;
    for (int i = 0; i < ctx->ntopics; i++) {
        md_topic_t *mt = &ctx->topics[i];
        if (!mt->create) continue;
        char err[256];
        mt->create_st = ls_catalog_create(b->catalog, LS_DEFAULT_NAMESPACE, mt->name,
                                          ctx->partitions, NULL, 0, 0, NULL, err, sizeof err);
        if (mt->create_st != LS_OK && mt->create_st != LS_EEXISTS)
            LS_WARN("kafka", "Metadata: auto-creating topic '%s' failed: %s", mt->name, err);
    }
}

static void md_create_done(void *arg) { md_respond(arg); }

void ls_kafka_handle_metadata(ls_kreq_t *req)
{
    ls_kafka_services_t *b = req->svc;
    ls_arena_t *a = req->arena;
    int16_t v = req->api_version;
    md_ctx_t *ctx = ls_arena_alloc(a, sizeof *ctx);
    ctx->req = req;
    ctx->m = *(const ls_kafka_MetadataRequest *)req->msg;
    /* v0: an empty list means all topics; v1+: null means all, empty none. */
    if (ctx->m.NumTopics < 0 || (v == 0 && ctx->m.NumTopics == 0)) {
        ctx->listing = true;
        ctx->all = ls_catalog_list(b->catalog, LS_DEFAULT_NAMESPACE, &ctx->nall);
        if (!ctx->all) ctx->nall = 0;
        /* as Kafka: topics the principal may not DESCRIBE are left out of a
         * listing (not audited: nothing was asked by name) */
        int kept = 0;
        for (int i = 0; i < ctx->nall; i++) {
            if (ls_kreq_allowed_quiet(req, LS_ACL_OP_DESCRIBE, LS_ACL_RES_TOPIC, ctx->all[i]->name))
                ctx->all[kept++] = ctx->all[i];
            else
                ls_stream_release(ctx->all[i]);
        }
        ctx->nall = kept;
        md_respond(ctx);
        return;
    }

    bool may_create = ctx->m.AllowAutoTopicCreation && b->cfg->auto_create_topics_enable;
    ctx->partitions = b->cfg->num_partitions > 0 ? b->cfg->num_partitions : 1;
    ctx->ntopics = ctx->m.NumTopics;
    ctx->topics = ls_kmsg_alloc(a, ctx->ntopics, sizeof *ctx->topics);
    bool any_create = false;
    for (int i = 0; i < ctx->ntopics; i++) {
        const ls_kafka_MetadataRequest_MetadataRequestTopic *q = &ctx->m.Topics[i];
        md_topic_t *mt = &ctx->topics[i];
        if (q->Name.len < 0) {
            /* v10+: by topic id (served from v12, KIP-516). */
            mt->name = "";
            if (!ls_uuid_is_zero(&q->TopicId))
                mt->s = ls_catalog_lookup_id(b->catalog, &q->TopicId);
            mt->err = LS_KERR_UNKNOWN_TOPIC_ID;
            if (mt->s && !ls_kreq_allowed(req, LS_ACL_OP_DESCRIBE, LS_ACL_RES_TOPIC, mt->s->name)) {
                ls_stream_release(mt->s);
                mt->s = NULL;
                mt->err = LS_KERR_TOPIC_AUTHORIZATION_FAILED;
            }
            continue;
        }
        bool exact;
        mt->name = ls_arena_kstr(a, q->Name, &exact);
        /* A name with an embedded NUL can never be a topic. */
        bool valid = exact && ls_stream_name_valid(mt->name);
        if (!valid) {
            mt->err = LS_KERR_INVALID_TOPIC_EXCEPTION;
            continue;
        }
        /* as Kafka: DESCRIBE on a named topic; auto-creating it needs CREATE
         * on the cluster or on the topic */
        if (!ls_kreq_allowed(req, LS_ACL_OP_DESCRIBE, LS_ACL_RES_TOPIC, mt->name)) {
            mt->err = LS_KERR_TOPIC_AUTHORIZATION_FAILED;
            continue;
        }
        mt->s = ls_catalog_lookup(b->catalog, LS_DEFAULT_NAMESPACE, mt->name);
        mt->err = LS_KERR_UNKNOWN_TOPIC_OR_PARTITION;
        if (!mt->s && may_create &&
            !ls_kreq_allowed_quiet(req, LS_ACL_OP_CREATE, LS_ACL_RES_CLUSTER,
                                   LS_ACL_CLUSTER_NAME) &&
            !ls_kreq_allowed(req, LS_ACL_OP_CREATE, LS_ACL_RES_TOPIC, mt->name)) {
            mt->err = LS_KERR_TOPIC_AUTHORIZATION_FAILED;
            continue;
        }
        if (!mt->s && may_create) {
            mt->create = true;
            any_create = true;
        }
    }
    if (any_create) {
        ls_ksvc_offload(b, md_create_work, md_create_done, ctx);
        return;
    }
    md_respond(ctx);
}

/* ------------------------------------------------------- DescribeCluster */

void ls_kafka_handle_describe_cluster(ls_kreq_t *req)
{
    ls_kafka_services_t *b = req->svc;
    ls_arena_t *a = req->arena;
    const ls_kafka_DescribeClusterRequest *m = req->msg;
    ls_kafka_DescribeClusterResponse r;
    memset(&r, 0, sizeof r);
    r.ErrorMessage = ls_kstr_null();
    r.EndpointType = m->EndpointType;
    r.ClusterId = ls_kstr_c(b->cluster_id);
    r.ControllerId = b->node_id;
    r.ClusterAuthorizedOperations =
        m->IncludeClusterAuthorizedOperations
            ? ls_kreq_authorized_ops(req, LS_ACL_RES_CLUSTER, LS_ACL_CLUSTER_NAME,
                                     CLUSTER_AUTHORIZED_OPS)
            : INT32_MIN;
    if (m->EndpointType == 1) {
        ls_member_t *live;
        int n = ls_ksvc_members(b, &live);
        r.NumBrokers = n;
        r.Brokers = ls_arena_alloc(a, (size_t)n * sizeof *r.Brokers);
        for (int i = 0; i < n; i++) {
            const char *host;
            ls_member_endpoint(&live[i], ls_kreq_listener_name(req), &host, &r.Brokers[i].Port);
            r.Brokers[i].BrokerId = live[i].id;
            r.Brokers[i].Host = ls_kstr_c(ls_arena_printf(a, "%s", host));
            r.Brokers[i].Rack =
                *live[i].rack ? ls_kstr_c(ls_arena_printf(a, "%s", live[i].rack)) : ls_kstr_null();
        }
        r.ControllerId = n > 0 ? live[0].id : b->node_id;
        ls_free(live);
    } else {
        /* v1 EndpointType 2 asks for controllers: this broker has no
         * separate controller listener (KIP-919 UNSUPPORTED_ENDPOINT_TYPE). */
        r.ErrorCode = 119;
        r.ErrorMessage = ls_kstr_c("The endpoint type is not supported: brokers only");
        r.ControllerId = -1;
    }
    ls_kw_t w;
    ls_kreq_encode(req, &w, &r);
    ls_kreq_respond(req, &w);
}
