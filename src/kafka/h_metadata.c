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

/* Replication factor shown for a topic: the factor it was created with
 * (LS_KAFKA_RF_KEY), at most the live brokers; any of them serves any
 * request, the object store holds the data. */
static int topic_rf(const md_ctx_t *ctx, const ls_stream_t *s)
{
    const char *rfv = ls_stream_config_get(s, LS_KAFKA_RF_KEY);
    int rf = rfv ? atoi(rfv) : 1;
    if (rf > ctx->nmembers) rf = ctx->nmembers;
    return rf < 1 ? 1 : rf;
}

/* Replicas of a partition (arena array of rf ids): the leader, then the next
 * live brokers (by id, wrapping). */
static int32_t *partition_replicas(const md_ctx_t *ctx, const ls_stream_t *s, int32_t partition,
                                   int rf)
{
    int32_t *replicas = ls_kmsg_alloc(ctx->req->arena, rf, sizeof *replicas);
    replicas[0] = partition_leader(ctx, s, partition);
    int at = 0;
    for (int k = 0; k < ctx->nmembers; k++)
        if (ctx->members[k].id == replicas[0]) at = k;
    for (int k = 1; k < rf; k++)
        replicas[k] = ctx->members[(at + k) % ctx->nmembers].id;
    return replicas;
}

/* The live brokers and the client's zone hint, which placement needs. */
static void md_load_members(md_ctx_t *ctx)
{
    ls_kreq_t *req = ctx->req;
    ls_member_t *live;
    ctx->nmembers = ls_ksvc_members(req->svc, &live);
    ctx->members = ls_arena_alloc(req->arena, (size_t)ctx->nmembers * sizeof *live);
    memcpy(ctx->members, live, (size_t)ctx->nmembers * sizeof *live);
    ls_free(live);
    ls_client_zone(req->client_id.ptr, req->client_id.len > 0 ? (size_t)req->client_id.len : 0,
                   ctx->zone, sizeof ctx->zone);
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
    int rf = topic_rf(ctx, s);
    for (int32_t i = 0; i < s->partitions; i++) {
        ls_kafka_MetadataResponse_MetadataResponsePartition *p = &t->Partitions[i];
        int32_t *replicas = partition_replicas(ctx, s, i, rf);
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
    md_load_members(ctx);

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
        if (q->Name.len < 0 || (q->Name.len == 0 && !ls_uuid_is_zero(&q->TopicId))) {
            /* v10+: by topic id (served from v12, KIP-516). The Java client
             * leaves the name at its default "" rather than null when it asks
             * by id (a KIP-848 regex subscription's assigned topics). */
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
    r.ClusterAuthorizedOperations = INT32_MIN;
    r.EndpointType = LS_KAFKA_ENDPOINT_BROKER;
    if (m->EndpointType != LS_KAFKA_ENDPOINT_BROKER) {
        /* As Kafka's broker (AuthHelper.computeDescribeClusterResponse): a
         * type it does not know is UNSUPPORTED_ENDPOINT_TYPE, controllers
         * (KIP-919) are MISMATCHED_ENDPOINT_TYPE, since this endpoint serves
         * brokers only (a broker has no separate controller listener); v0
         * cannot name either and answers INVALID_REQUEST. The rest of the
         * response keeps its defaults. */
        bool known = m->EndpointType == LS_KAFKA_ENDPOINT_CONTROLLER;
        r.ErrorCode = req->api_version == 0 ? LS_KERR_INVALID_REQUEST
                      : known               ? LS_KERR_MISMATCHED_ENDPOINT_TYPE
                                            : LS_KERR_UNSUPPORTED_ENDPOINT_TYPE;
        r.ErrorMessage =
            known ? ls_kstr_c("The request was sent to an endpoint of type BROKER, but we wanted "
                              "an endpoint of type CONTROLLER")
                  : ls_kstr_c(ls_arena_printf(a, "Unsupported endpoint type %d", m->EndpointType));
        r.ClusterId = ls_kstr_c("");
        r.ControllerId = -1;
        ls_kw_t w;
        ls_kreq_encode(req, &w, &r);
        ls_kreq_respond(req, &w);
        return;
    }
    r.ClusterId = ls_kstr_c(b->cluster_id);
    if (m->IncludeClusterAuthorizedOperations)
        r.ClusterAuthorizedOperations = ls_kreq_authorized_ops(
            req, LS_ACL_RES_CLUSTER, LS_ACL_CLUSTER_NAME, CLUSTER_AUTHORIZED_OPS);
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
    ls_kw_t w;
    ls_kreq_encode(req, &w, &r);
    ls_kreq_respond(req, &w);
}

/* ---------------------------------------------- DescribeTopicPartitions */

/* DescribeTopicPartitions (key 75, KIP-966): Metadata's partition answers,
 * paged. Topics (the named ones, else all the principal may DESCRIBE) go in
 * name order from the cursor's topic (its partitions from the cursor's
 * index); at most ResponsePartitionLimit partitions (capped at
 * DTP_MAX_PARTITIONS, at least 1) are answered, and when some are left
 * NextCursor names the first one not sent: inside a topic cut short, or
 * partition 0 of the next topic when the limit ran out at a topic's end.
 * As Kafka: a cursor whose topic is not among the named ones (when topics
 * are named; a listing just goes on from the name), or with a
 * negative index, is INVALID_REQUEST; named topics not allowed DESCRIBE are
 * TOPIC_AUTHORIZATION_FAILED after the others, unnamed ones are left out. */
#define DTP_MAX_PARTITIONS 2000 /* Kafka's max.request.partition.size.limit default */

typedef ls_kafka_DescribeTopicPartitionsResponse_DescribeTopicPartitionsResponseTopic dtp_topic_t;

static int dtp_name_cmp(const void *x, const void *y)
{
    return strcmp(*(char *const *)x, *(char *const *)y);
}

void ls_kafka_handle_describe_topic_partitions(ls_kreq_t *req)
{
    ls_kafka_services_t *b = req->svc;
    ls_arena_t *a = req->arena;
    const ls_kafka_DescribeTopicPartitionsRequest *m = req->msg;
    ls_kafka_DescribeTopicPartitionsResponse r;
    memset(&r, 0, sizeof r);
    md_ctx_t *ctx = ls_arena_alloc(a, sizeof *ctx);
    memset(ctx, 0, sizeof *ctx);
    ctx->req = req;
    md_load_members(ctx);

    const char *cursor = "";
    int32_t cursor_part = 0;
    if (m->HasCursor) {
        bool exact;
        cursor = ls_arena_kstr(a, m->Cursor.TopicName, &exact);
        cursor_part = m->Cursor.PartitionIndex;
    }
    /* names to answer, sorted; unnamed listing takes the catalog's */
    int n = 0;
    char **names;
    bool listing = m->NumTopics == 0;
    if (listing) {
        int nall = 0;
        ls_stream_t **all = ls_catalog_list(b->catalog, LS_DEFAULT_NAMESPACE, &nall);
        names = ls_kmsg_alloc(a, nall, sizeof *names);
        for (int i = 0; i < nall; i++)
            names[n++] = ls_arena_printf(a, "%s", all[i]->name);
        if (all) ls_stream_list_release(all, nall);
    } else {
        names = ls_kmsg_alloc(a, m->NumTopics, sizeof *names);
        for (int i = 0; i < m->NumTopics; i++) {
            bool exact;
            char *nm = ls_arena_kstr(a, m->Topics[i].Name, &exact);
            bool dup = false;
            for (int k = 0; k < n; k++)
                dup = dup || strcmp(names[k], nm) == 0;
            if (!dup) names[n++] = nm;
        }
    }
    qsort(names, (size_t)n, sizeof *names, dtp_name_cmp);
    int first = 0;
    while (first < n && strcmp(names[first], cursor) < 0)
        first++;
    bool cursor_ok =
        !m->HasCursor ||
        (cursor_part >= 0 && (listing || (first < n && strcmp(names[first], cursor) == 0)));
    r.Topics = ls_kmsg_alloc(a, n > 0 ? n : 1, sizeof *r.Topics);
    if (!cursor_ok) {
        for (int i = 0; i < n; i++) {
            dtp_topic_t *t = &r.Topics[r.NumTopics++];
            t->ErrorCode = LS_KERR_INVALID_REQUEST;
            t->Name = ls_kstr_c(names[i]);
            t->TopicAuthorizedOperations = INT32_MIN;
        }
        goto out;
    }

    /* authorization first, so refused topics neither use the limit nor
     * (listing) show at all */
    char **denied = ls_kmsg_alloc(a, n, sizeof *denied);
    int ndenied = 0, kept = first;
    for (int i = first; i < n; i++) {
        if (listing ? ls_kreq_allowed_quiet(req, LS_ACL_OP_DESCRIBE, LS_ACL_RES_TOPIC, names[i])
                    : ls_kreq_allowed(req, LS_ACL_OP_DESCRIBE, LS_ACL_RES_TOPIC, names[i]))
            names[kept++] = names[i];
        else if (!listing)
            denied[ndenied++] = names[i];
    }
    n = kept;

    int32_t remaining = m->ResponsePartitionLimit;
    if (remaining > DTP_MAX_PARTITIONS) remaining = DTP_MAX_PARTITIONS;
    if (remaining < 1) remaining = 1;
    for (int i = first; i < n; i++) {
        if (remaining == 0) {
            r.HasNextCursor = true;
            r.NextCursor.TopicName = ls_kstr_c(names[i]);
            r.NextCursor.PartitionIndex = 0;
            break;
        }
        dtp_topic_t *t = &r.Topics[r.NumTopics++];
        t->Name = ls_kstr_c(names[i]);
        t->TopicAuthorizedOperations = INT32_MIN;
        ls_stream_t *s = ls_catalog_lookup(b->catalog, LS_DEFAULT_NAMESPACE, names[i]);
        if (!s) {
            t->ErrorCode = ls_stream_name_valid(names[i]) ? LS_KERR_UNKNOWN_TOPIC_OR_PARTITION
                                                          : LS_KERR_INVALID_TOPIC_EXCEPTION;
            continue;
        }
        t->TopicId = s->id;
        t->TopicAuthorizedOperations =
            ls_kreq_authorized_ops(req, LS_ACL_RES_TOPIC, s->name, TOPIC_AUTHORIZED_OPS);
        int32_t from = strcmp(names[i], cursor) == 0 ? cursor_part : 0;
        int32_t upto = s->partitions;
        if (from > upto) from = upto;
        if (upto - from > remaining) upto = from + remaining;
        int rf = topic_rf(ctx, s);
        t->NumPartitions = upto - from;
        t->Partitions = ls_kmsg_alloc(a, t->NumPartitions, sizeof *t->Partitions);
        for (int32_t p = from; p < upto; p++) {
            ls_kafka_DescribeTopicPartitionsResponse_DescribeTopicPartitionsResponsePartition *o =
                &t->Partitions[p - from];
            int32_t *replicas = partition_replicas(ctx, s, p, rf);
            o->PartitionIndex = p;
            o->LeaderId = replicas[0];
            o->LeaderEpoch = 0;
            o->ReplicaNodes = o->IsrNodes = replicas;
            o->NumReplicaNodes = o->NumIsrNodes = rf;
            /* no ELR (KIP-966) without leaders; empty, not null, as Kafka
             * sends: Kafka 4.3's TopicCommand fails on null */
            o->EligibleLeaderReplicas = o->LastKnownElr = replicas;
            o->NumEligibleLeaderReplicas = o->NumLastKnownElr = 0;
        }
        bool cut = upto < s->partitions;
        ls_stream_release(s);
        if (cut) {
            r.HasNextCursor = true;
            r.NextCursor.TopicName = t->Name;
            r.NextCursor.PartitionIndex = upto;
            break;
        }
        remaining -= t->NumPartitions;
    }
    for (int i = 0; i < ndenied; i++) {
        dtp_topic_t *t = &r.Topics[r.NumTopics++];
        t->ErrorCode = LS_KERR_TOPIC_AUTHORIZATION_FAILED;
        t->Name = ls_kstr_c(denied[i]);
        t->TopicAuthorizedOperations = INT32_MIN;
    }
out:;
    ls_kw_t w;
    ls_kreq_encode(req, &w, &r);
    ls_kreq_respond(req, &w);
}
