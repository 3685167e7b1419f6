/* CreateTopics (key 19), DeleteTopics (key 20), CreatePartitions (key 37).
 *
 * Each request is validated on the loop thread (names, counts, configs,
 * duplicates), then the catalog mutations — blocking metadata-store calls —
 * run in one ls_ksvc_offload() job, and the answer is built back on the
 * loop thread. Per-topic errors carry Kafka's codes and a message.
 *
 * Replication: durability comes from the object store, so any replication
 * factor >= 1 or -1 (default) is accepted (tools ask for 3 or -1); the
 * response reports the factor asked for (1 for -1), and replica assignments
 * only fix the partition count — broker ids mean nothing to a leaderless,
 * diskless log.
 *
 * DeleteTopics drops the stream (a permanent tombstone: stream numbers and
 * so log ids are never reused), then fences every partition log so a broker
 * still holding the old stream cannot append; the answer waits for every
 * fence to complete or fail (a failed fence is logged: the topic is gone
 * from the catalog either way). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/diag.h"
#include "kafka/handlers.h"
#include "kafka/names.h"
#include "kafka/msg.h"
#include "kafka/services.h"

/* Marks names that occur more than once (dup[i] = true), in O(n log n). */
typedef struct name_ix {
    const char *name;
    int32_t i;
} name_ix_t;

static int name_ix_cmp(const void *x, const void *y)
{
    return strcmp(((const name_ix_t *)x)->name, ((const name_ix_t *)y)->name);
}

static void mark_duplicates(ls_arena_t *a, char **names, int32_t n, bool *dup)
{
    if (n < 2) return;
    name_ix_t *v = ls_arena_alloc(a, (size_t)n * sizeof *v);
    for (int32_t i = 0; i < n; i++)
        v[i] = (name_ix_t){names[i], i};
    qsort(v, (size_t)n, sizeof *v, name_ix_cmp);
    for (int32_t i = 1; i < n; i++)
        if (strcmp(v[i - 1].name, v[i].name) == 0) dup[v[i - 1].i] = dup[v[i].i] = true;
}

/* ------------------------------------------------------------ CreateTopics */

/* ------------------------------------------------ the request's timeoutMs */

/* CreateTopics, DeleteTopics and CreatePartitions run store jobs that may
 * outlast the request's timeoutMs (a locked or unreachable metadata store, a
 * saturated worker pool). At the deadline `expire` answers what is not done
 * yet with REQUEST_TIMED_OUT (Kafka's answer: the operation may still
 * complete) through ls_kreq_respond_keep; when the job finishes,
 * deadline_stop tells its completion that the answer is out, so it only
 * releases what it holds and the request (ls_kreq_release). */
typedef struct admin_deadline {
    uv_timer_t *timer;
    bool answered;
    void (*expire)(void *ctx);
    void *ctx;
} admin_deadline_t;

static void deadline_fired(uv_timer_t *tm)
{
    admin_deadline_t *d = tm->data;
    d->answered = true;
    d->expire(d->ctx);
}

static void deadline_closed(uv_handle_t *h) { ls_free(h); }

static void deadline_start(ls_kafka_services_t *b, admin_deadline_t *d, int32_t timeout_ms,
                           void (*expire)(void *ctx), void *ctx)
{
    d->expire = expire;
    d->ctx = ctx;
    if (timeout_ms <= 0) return;
    d->timer = LS_NEW(uv_timer_t);
    uv_timer_init(b->loop, d->timer);
    d->timer->data = d;
    uv_timer_start(d->timer, deadline_fired, (uint64_t)timeout_ms, 0);
}

/* Stops the timer; true when the deadline has answered the request. */
static bool deadline_stop(admin_deadline_t *d)
{
    if (d->timer) {
        uv_close((uv_handle_t *)d->timer, deadline_closed);
        d->timer = NULL;
    }
    return d->answered;
}

static ls_kstr_t timed_out_message(ls_kreq_t *req, const char *what, int32_t timeout_ms)
{
    LS_WARN_RL("kafka",
               "%s answered REQUEST_TIMED_OUT after %d ms: the metadata store is slow "
               "or locked",
               ls_kafka_api_name(req->api_key), (int)timeout_ms);
    return ls_kstr_c(ls_arena_printf(req->arena,
                                     "The metadata store did not answer within the "
                                     "request's timeout (%d ms); the %s may still complete",
                                     (int)timeout_ms, what));
}

typedef struct ct_topic {
    char *name;
    int32_t partitions;
    int16_t replication; /* reported back */
    ls_prop_t *config;   /* arena, room for one more; values non-null */
    int nconfig;
    char since[24]; /* lakestream.table.enabled.since value when set */
    bool go;        /* passed validation: create on the worker */
    ls_status st;
    char err[256];
    ls_stream_t *created; /* kept (not for validate_only) */
} ct_topic_t;

typedef struct ct_ctx {
    ls_kreq_t *req;
    ls_kafka_CreateTopicsRequest m;
    ls_kafka_CreateTopicsResponse resp;
    ct_topic_t *t;
    admin_deadline_t deadline;
} ct_ctx_t;

static void ct_work(void *arg)
{
    ct_ctx_t *ctx = arg;
    ls_kafka_services_t *b = ctx->req->svc;
    for (int32_t i = 0; i < ctx->m.NumTopics; i++) {
        ct_topic_t *t = &ctx->t[i];
        if (!t->go) continue;
        t->st = ls_catalog_create(b->catalog, LS_DEFAULT_NAMESPACE, t->name, t->partitions,
                                  t->config, t->nconfig, ctx->m.ValidateOnly,
                                  ctx->m.ValidateOnly ? NULL : &t->created, t->err, sizeof t->err);
    }
}

static void ct_expire(void *arg)
{
    ct_ctx_t *ctx = arg;
    ls_kreq_t *req = ctx->req;
    ls_kstr_t msg = timed_out_message(req, "topic creation", ctx->m.TimeoutMs);
    for (int32_t i = 0; i < ctx->m.NumTopics; i++)
        if (ctx->t[i].go) {
            ctx->resp.Topics[i].ErrorCode = LS_KERR_REQUEST_TIMED_OUT;
            ctx->resp.Topics[i].ErrorMessage = msg;
        }
    ls_kw_t w;
    ls_kreq_encode(req, &w, &ctx->resp);
    ls_kreq_respond_keep(req, &w);
}

static void ct_done(void *arg)
{
    ct_ctx_t *ctx = arg;
    ls_kreq_t *req = ctx->req;
    ls_kafka_services_t *b = req->svc;
    ls_arena_t *a = req->arena;
    int16_t v = req->api_version;
    bool answered = deadline_stop(&ctx->deadline);
    for (int32_t i = 0; i < ctx->m.NumTopics; i++)
        if (ctx->t[i].created && ctx->t[i].since[0]) {
            b->tables_changed(b->root); /* a new table: its freshness schedule starts now */
            break;
        }
    if (answered) { /* the deadline answered: only finish the request */
        for (int32_t i = 0; i < ctx->m.NumTopics; i++)
            ls_stream_release(ctx->t[i].created);
        ls_kreq_release(req);
        return;
    }
    for (int32_t i = 0; i < ctx->m.NumTopics; i++) {
        ct_topic_t *t = &ctx->t[i];
        ls_kafka_CreateTopicsResponse_CreatableTopicResult *r = &ctx->resp.Topics[i];
        if (!t->go) continue; /* answered during validation */
        if (t->st == LS_OK) {
            r->ErrorCode = LS_KERR_NONE;
            r->ErrorMessage = ls_kstr_null();
            r->NumPartitions = t->partitions;
            r->ReplicationFactor = t->replication;
            if (t->created) r->TopicId = t->created->id;
            if (v >= 5) {
                /* Configuration of the topic as created (KIP-525). */
                ls_kafka_DescribeConfigsResponse_DescribeConfigsResourceResult *d;
                int32_t n = ls_kafka_topic_configs(a, b, LS_DEFAULT_NAMESPACE, t->config,
                                                   t->nconfig, NULL, -1, false, false, &d);
                r->NumConfigs = n;
                r->Configs = ls_kmsg_alloc(a, n, sizeof *r->Configs);
                for (int32_t k = 0; k < n; k++) {
                    r->Configs[k].Name = d[k].Name;
                    r->Configs[k].Value = d[k].Value;
                    r->Configs[k].ReadOnly = d[k].ReadOnly;
                    r->Configs[k].ConfigSource = d[k].ConfigSource;
                    r->Configs[k].IsSensitive = d[k].IsSensitive;
                }
            }
            continue;
        }
        switch (t->st) {
        case LS_EEXISTS:
            r->ErrorCode = LS_KERR_TOPIC_ALREADY_EXISTS;
            r->ErrorMessage = ls_kstr_c(ls_arena_printf(a, "Topic '%s' already exists.", t->name));
            break;
        case LS_EINVAL:
            r->ErrorCode = LS_KERR_INVALID_REQUEST;
            r->ErrorMessage = ls_kstr_c(ls_arena_printf(a, "%s", t->err));
            break;
        case LS_ELIMIT: /* max.partitions of the cluster */
            r->ErrorCode = LS_KERR_POLICY_VIOLATION;
            r->ErrorMessage = ls_kstr_c(ls_arena_printf(a, "%s", t->err));
            break;
        default:
            r->ErrorCode = ls_kafka_error_from_status(t->st);
            r->ErrorMessage =
                ls_kstr_c(ls_arena_printf(a, "%s", t->err[0] ? t->err : ls_status_str(t->st)));
            LS_WARN("kafka", "CreateTopics '%s': %s", t->name, t->err);
            break;
        }
    }
    ls_kw_t w;
    ls_kreq_encode(req, &w, &ctx->resp);
    for (int32_t i = 0; i < ctx->m.NumTopics; i++)
        ls_stream_release(ctx->t[i].created);
    ls_kreq_respond(req, &w);
}

void ls_kafka_handle_create_topics(ls_kreq_t *req)
{
    ls_kafka_services_t *b = req->svc;
    ls_arena_t *a = req->arena;
    ct_ctx_t *ctx = ls_arena_alloc(a, sizeof *ctx);
    ctx->req = req;
    ctx->m = *(const ls_kafka_CreateTopicsRequest *)req->msg;
    int32_t n = ctx->m.NumTopics;
    ctx->t = ls_kmsg_alloc(a, n, sizeof *ctx->t);
    ctx->resp.NumTopics = n;
    ctx->resp.Topics = ls_kmsg_alloc(a, n, sizeof *ctx->resp.Topics);
    char **names = ls_kmsg_alloc(a, n, sizeof *names);
    bool *dup = ls_kmsg_alloc(a, n, sizeof *dup);
    bool *exact = ls_kmsg_alloc(a, n, sizeof *exact);
    for (int32_t i = 0; i < n; i++)
        names[i] = ctx->t[i].name = ls_arena_kstr(a, ctx->m.Topics[i].Name, &exact[i]);
    mark_duplicates(a, names, n, dup);

    /* as Kafka: CREATE on the cluster, or else on each topic */
    bool cluster_create =
        ls_kreq_allowed_quiet(req, LS_ACL_OP_CREATE, LS_ACL_RES_CLUSTER, LS_ACL_CLUSTER_NAME);
    bool any = false;
    for (int32_t i = 0; i < n; i++) {
        const ls_kafka_CreateTopicsRequest_CreatableTopic *q = &ctx->m.Topics[i];
        ct_topic_t *t = &ctx->t[i];
        ls_kafka_CreateTopicsResponse_CreatableTopicResult *r = &ctx->resp.Topics[i];
        r->Name = q->Name;
        r->NumPartitions = -1;
        r->ReplicationFactor = -1;
        r->NumConfigs = -1;
        r->ErrorMessage = ls_kstr_null();
        const char *why = NULL;
        int16_t err = LS_KERR_NONE;
        char other[256]; /* a colliding topic's name */
        if (dup[i]) {
            err = LS_KERR_INVALID_REQUEST;
            why = ls_arena_printf(
                a, "Create topics request contains multiple entries for topic '%s'.", t->name);
        } else if (!cluster_create &&
                   !ls_kreq_allowed(req, LS_ACL_OP_CREATE, LS_ACL_RES_TOPIC, t->name)) {
            err = LS_KERR_TOPIC_AUTHORIZATION_FAILED;
            why = "Authorization failed.";
        } else if (!exact[i] || !ls_stream_name_valid(t->name)) {
            err = LS_KERR_INVALID_TOPIC_EXCEPTION;
            /* printable: a name with a NUL would show cut at the NUL */
            why = ls_arena_printf(a,
                                  "Topic name %s is illegal: use 1 to 249 characters of "
                                  "[a-zA-Z0-9._-], not '.' or '..'.",
                                  ls_kafka_printable(a, q->Name));
        } else if (ls_catalog_collision(b->catalog, LS_DEFAULT_NAMESPACE, t->name, other,
                                        sizeof other)) {
            err = LS_KERR_INVALID_TOPIC_EXCEPTION;
            why = ls_arena_printf(a, "Topic '%s' collides with existing topic: %s", t->name, other);
        } else if (q->NumAssignments > 0 &&
                   (q->NumPartitions != -1 || q->ReplicationFactor != -1)) {
            err = LS_KERR_INVALID_REQUEST;
            why = ls_arena_printf(a,
                                  "Both numPartitions or replicationFactor and replicasAssignments "
                                  "were set. Both cannot be used at the same time.");
        } else if (q->NumAssignments <= 0 && (q->NumPartitions == 0 || q->NumPartitions < -1)) {
            err = LS_KERR_INVALID_PARTITIONS;
            why = ls_arena_printf(
                a, "Number of partitions must be larger than 0, or -1 to use the default.");
        } else if (q->NumAssignments <= 0 &&
                   (q->ReplicationFactor == 0 || q->ReplicationFactor < -1)) {
            err = LS_KERR_INVALID_REPLICATION_FACTOR;
            why = ls_arena_printf(
                a, "Replication factor must be larger than 0, or -1 to use the default.");
        }
        /* Partition count: assignments, the request, or num.partitions. */
        if (!err) {
            if (q->NumAssignments > 0) {
                t->partitions = q->NumAssignments;
                /* assignments must name partitions 0..n-1 exactly once */
                bool *seen = ls_arena_alloc(a, (size_t)q->NumAssignments);
                for (int32_t k = 0; k < q->NumAssignments && !err; k++) {
                    int32_t pi = q->Assignments[k].PartitionIndex;
                    if (pi < 0 || pi >= q->NumAssignments || seen[pi] ||
                        q->Assignments[k].NumBrokerIds <= 0) {
                        err = LS_KERR_INVALID_REPLICA_ASSIGNMENT;
                        why =
                            ls_arena_printf(a,
                                            "Partitions should be 0..%d, each listed once with at "
                                            "least one broker.",
                                            (int)q->NumAssignments - 1);
                    } else {
                        seen[pi] = true;
                    }
                }
                t->replication = q->NumAssignments > 0 && q->Assignments[0].NumBrokerIds > 0
                                     ? (int16_t)q->Assignments[0].NumBrokerIds
                                     : 1;
            } else {
                t->partitions = q->NumPartitions == -1 ? b->cfg->num_partitions : q->NumPartitions;
                t->replication = q->ReplicationFactor == -1 ? 1 : q->ReplicationFactor;
            }
            if (!err && (t->partitions < 1 || t->partitions > b->cfg->max_partitions_per_topic)) {
                err = LS_KERR_INVALID_PARTITIONS;
                why = ls_arena_printf(a,
                                      "Number of partitions must be between 1 and %d "
                                      "(max.partitions.per.topic).",
                                      (int)b->cfg->max_partitions_per_topic);
            }
        }
        /* Configs: null values mean "use the default" and are dropped. */
        if (!err)
            t->config = ls_arena_alloc(a, (size_t)(q->NumConfigs > 0 ? q->NumConfigs + 2 : 2) *
                                              sizeof *t->config);
        if (!err && q->NumConfigs > 0) {
            for (int32_t k = 0; k < q->NumConfigs && !err; k++) {
                const ls_kafka_CreateTopicsRequest_CreatableTopicConfig *c = &q->Configs[k];
                if (c->Value.len < 0) continue;
                bool ek, ev;
                char *key = ls_arena_kstr(a, c->Name, &ek), *val = ls_arena_kstr(a, c->Value, &ev);
                char cerr[512];
                if (!ek || !ev) {
                    err = LS_KERR_INVALID_CONFIG;
                    why = ls_arena_printf(a, "Config '%s' contains a NUL byte.", key);
                } else if (ls_kafka_topic_config_check(key, val, cerr, sizeof cerr) != LS_OK) {
                    err = LS_KERR_INVALID_CONFIG;
                    why = ls_arena_printf(a, "%s", cerr);
                } else {
                    for (int j = 0; j < t->nconfig; j++)
                        if (strcmp(t->config[j].key, key) == 0) {
                            err = LS_KERR_INVALID_REQUEST;
                            why = ls_arena_printf(a, "Config '%s' is given twice.", key);
                        }
                    t->config[t->nconfig].key = key;
                    t->config[t->nconfig].value = val;
                    t->nconfig++;
                }
            }
        }
        if (!err && t->replication > 1) { /* kept and reported back (LS_KAFKA_RF_KEY) */
            t->config[t->nconfig].key = (char *)LS_KAFKA_RF_KEY;
            t->config[t->nconfig].value = ls_arena_printf(a, "%d", (int)t->replication);
            t->nconfig++;
        }
        /* the table policy the configs resolve to (and enabled.since) */
        char perr[512];
        if (!err && ls_kafka_topic_policy_apply(b, LS_DEFAULT_NAMESPACE, t->name, NULL, 0,
                                                t->config, &t->nconfig, t->since, sizeof t->since,
                                                perr, sizeof perr) != LS_OK) {
            err = LS_KERR_INVALID_CONFIG;
            why = ls_arena_printf(a, "%s", perr);
        }
        if (err) {
            r->ErrorCode = err;
            r->ErrorMessage = ls_kstr_c(why);
            continue;
        }
        t->go = true;
        any = true;
    }
    if (!any) {
        ct_done(ctx);
        return;
    }
    deadline_start(b, &ctx->deadline, ctx->m.TimeoutMs, ct_expire, ctx);
    ls_ksvc_offload(b, ct_work, ct_done, ctx);
}

/* ------------------------------------------------------------ DeleteTopics */

typedef struct dt_topic {
    char *name; /* NULL: answered during validation */
    ls_status st;
    ls_stream_t *dropped; /* kept */
} dt_topic_t;

typedef struct dt_ctx {
    ls_kreq_t *req;
    ls_kafka_DeleteTopicsResponse resp;
    dt_topic_t *t;
    int32_t n;
    int inflight;                  /* fences issued, not finished */
    int32_t next_topic, next_part; /* the next partition to fence */
    bool dropped;                  /* the store job is done: results are final */
    int32_t timeout_ms;
    admin_deadline_t deadline;
} dt_ctx_t;

static void dt_work(void *arg)
{
    dt_ctx_t *ctx = arg;
    ls_kafka_services_t *b = ctx->req->svc;
    for (int32_t i = 0; i < ctx->n; i++) {
        dt_topic_t *t = &ctx->t[i];
        if (t->name)
            t->st = ls_catalog_drop(b->catalog, LS_DEFAULT_NAMESPACE, t->name, &t->dropped);
    }
}

/* Every dropped topic's logs are fenced: their storage goes after the
 * earliest of their file.delete.delay.ms, as Kafka deletes a deleted
 * topic's files (not at the next retention check, minutes later). */
static void dt_schedule_reclaim(dt_ctx_t *ctx)
{
    ls_kafka_services_t *b = ctx->req->svc;
    int64_t delay = -1;
    for (int32_t i = 0; i < ctx->n; i++) {
        const ls_stream_t *s = ctx->t[i].dropped;
        if (!s || ctx->t[i].st != LS_OK) continue;
        const char *v = ls_kafka_topic_config_value(s, "file.delete.delay.ms");
        int64_t d = v ? strtoll(v, NULL, 10) : 0; /* checked at create/alter: >= 0 */
        if (delay < 0 || d < delay) delay = d;
    }
    if (delay >= 0 && b->topics_deleted) b->topics_deleted(b->root, delay);
}

static void dt_respond(dt_ctx_t *ctx)
{
    ls_kreq_t *req = ctx->req;
    dt_schedule_reclaim(ctx);
    bool answered = deadline_stop(&ctx->deadline);
    for (int32_t i = 0; i < ctx->n; i++)
        ls_stream_release(ctx->t[i].dropped);
    if (answered) {
        ls_kreq_release(req);
        return;
    }
    ls_kw_t w;
    ls_kreq_encode(req, &w, &ctx->resp);
    ls_kreq_respond(req, &w);
}

/* The deadline: topics the store has dropped are answered as deleted (their
 * partitions are still being fenced: a producer may see a few more writes
 * refused rather than accepted); the others REQUEST_TIMED_OUT. */
static void dt_expire(void *arg)
{
    dt_ctx_t *ctx = arg;
    ls_kreq_t *req = ctx->req;
    if (!ctx->dropped) {
        ls_kstr_t msg = timed_out_message(req, "topic deletion", ctx->timeout_ms);
        for (int32_t i = 0; i < ctx->n; i++)
            if (ctx->t[i].name) {
                ctx->resp.Responses[i].ErrorCode = LS_KERR_REQUEST_TIMED_OUT;
                ctx->resp.Responses[i].ErrorMessage = msg;
            }
    }
    ls_kw_t w;
    ls_kreq_encode(req, &w, &ctx->resp);
    ls_kreq_respond_keep(req, &w);
}

/* Partitions of dropped topics are fenced at most DT_FENCES_IN_FLIGHT at a
 * time (issue 17): a 10,000-partition topic used to queue 10,000 jobs on the
 * worker pool at once and hold up every produce, commit and admin call behind
 * them; now the pool keeps serving them while the deletion proceeds. */
#define DT_FENCES_IN_FLIGHT 2

typedef struct dt_fence {
    dt_ctx_t *ctx;
    int64_t log_id;
} dt_fence_t;

static void dt_fence_next(dt_ctx_t *ctx);

static void dt_fence_done(void *arg, ls_status st)
{
    dt_fence_t *f = arg;
    dt_ctx_t *ctx = f->ctx;
    if (st != LS_OK)
        LS_WARN("kafka", "DeleteTopics: fencing log %lld failed: %s", (long long)f->log_id,
                ls_status_str(st));
    ls_free(f);
    ctx->inflight--;
    dt_fence_next(ctx);
}

/* Issues fences up to the limit; answers once every one has finished. */
static void dt_fence_next(dt_ctx_t *ctx)
{
    ls_kafka_services_t *b = ctx->req->svc;
    while (ctx->inflight < DT_FENCES_IN_FLIGHT && ctx->next_topic < ctx->n) {
        const ls_stream_t *s = ctx->t[ctx->next_topic].dropped;
        if (!s || ctx->t[ctx->next_topic].st != LS_OK || ctx->next_part >= s->partitions) {
            ctx->next_topic++;
            ctx->next_part = 0;
            continue;
        }
        dt_fence_t *f = LS_NEW(dt_fence_t);
        f->ctx = ctx;
        f->log_id = ls_stream_log_id(s, ctx->next_part++);
        ctx->inflight++; /* before the call: its callback may run at once */
        ls_logstore_fence(b->logs, f->log_id, dt_fence_done, f);
    }
    if (ctx->inflight == 0 && ctx->next_topic >= ctx->n) dt_respond(ctx);
}

static void dt_done(void *arg)
{
    dt_ctx_t *ctx = arg;
    ls_kreq_t *req = ctx->req;
    ls_arena_t *a = req->arena;
    ctx->dropped = true; /* (also after the deadline answered: the drops still get fenced) */
    for (int32_t i = 0; i < ctx->n; i++) {
        dt_topic_t *t = &ctx->t[i];
        ls_kafka_DeleteTopicsResponse_DeletableTopicResult *r = &ctx->resp.Responses[i];
        if (!t->name) continue;
        if (t->st == LS_OK) {
            r->ErrorCode = LS_KERR_NONE;
            if (t->dropped) r->TopicId = t->dropped->id;
        } else if (t->st == LS_ENOTFOUND) {
            r->ErrorCode = LS_KERR_UNKNOWN_TOPIC_OR_PARTITION;
            r->ErrorMessage = ls_kstr_c(ls_arena_printf(a, "Topic '%s' does not exist.", t->name));
        } else {
            r->ErrorCode = ls_kafka_error_from_status(t->st);
            r->ErrorMessage =
                ls_kstr_c(ls_arena_printf(a, "Deleting '%s': %s", t->name, ls_status_str(t->st)));
        }
    }
    dt_fence_next(ctx);
}

void ls_kafka_handle_delete_topics(ls_kreq_t *req)
{
    ls_kafka_services_t *b = req->svc;
    ls_arena_t *a = req->arena;
    int16_t v = req->api_version;
    const ls_kafka_DeleteTopicsRequest *m = req->msg;
    dt_ctx_t *ctx = ls_arena_alloc(a, sizeof *ctx);
    ctx->req = req;
    ctx->n = v >= 6 ? m->NumTopics : m->NumTopicNames;
    ctx->t = ls_kmsg_alloc(a, ctx->n, sizeof *ctx->t);
    ctx->resp.NumResponses = ctx->n;
    ctx->resp.Responses = ls_kmsg_alloc(a, ctx->n, sizeof *ctx->resp.Responses);
    bool any = false;
    for (int32_t i = 0; i < ctx->n; i++) {
        ls_kafka_DeleteTopicsResponse_DeletableTopicResult *r = &ctx->resp.Responses[i];
        r->ErrorMessage = ls_kstr_null();
        ls_kstr_t name = v >= 6 ? m->Topics[i].Name : m->TopicNames[i];
        if (v >= 6 && name.len < 0) {
            /* v6: by topic id (KIP-516). */
            r->TopicId = m->Topics[i].TopicId;
            ls_stream_t *s = ls_catalog_lookup_id(b->catalog, &m->Topics[i].TopicId);
            if (!s) {
                r->Name = ls_kstr_null();
                r->ErrorCode = LS_KERR_UNKNOWN_TOPIC_ID;
                r->ErrorMessage = ls_kstr_c("Topic id does not exist.");
                continue;
            }
            ctx->t[i].name = ls_arena_kstr(a, ls_kstr_c(s->name), NULL);
            ls_stream_release(s);
            r->Name = ls_kstr_c(ctx->t[i].name);
        } else {
            bool exact;
            r->Name = name;
            char *cname = ls_arena_kstr(a, name, &exact);
            if (!exact || !ls_stream_name_valid(cname)) {
                r->ErrorCode = LS_KERR_UNKNOWN_TOPIC_OR_PARTITION;
                r->ErrorMessage = ls_kstr_c(
                    ls_arena_printf(a, "Topic %s does not exist.", ls_kafka_printable(a, name)));
                continue;
            }
            ctx->t[i].name = cname;
        }
        /* as Kafka: DELETE on the topic */
        if (!ls_kreq_allowed(req, LS_ACL_OP_DELETE, LS_ACL_RES_TOPIC, ctx->t[i].name)) {
            ctx->t[i].name = NULL;
            r->ErrorCode = LS_KERR_TOPIC_AUTHORIZATION_FAILED;
            r->ErrorMessage = ls_kstr_c("Authorization failed.");
            continue;
        }
        any = true;
    }
    if (!any) {
        dt_respond(ctx);
        return;
    }
    ctx->timeout_ms = m->TimeoutMs;
    deadline_start(b, &ctx->deadline, m->TimeoutMs, dt_expire, ctx);
    ls_ksvc_offload(b, dt_work, dt_done, ctx);
}

/* -------------------------------------------------------- CreatePartitions */

typedef struct cp_topic {
    char *name; /* NULL: answered during validation */
    int32_t count;
    ls_status st;
    char err[256];
} cp_topic_t;

typedef struct cp_ctx {
    ls_kreq_t *req;
    ls_kafka_CreatePartitionsResponse resp;
    cp_topic_t *t;
    int32_t n;
    bool validate_only;
    int32_t timeout_ms;
    admin_deadline_t deadline;
} cp_ctx_t;

static void cp_work(void *arg)
{
    cp_ctx_t *ctx = arg;
    ls_kafka_services_t *b = ctx->req->svc;
    for (int32_t i = 0; i < ctx->n; i++) {
        cp_topic_t *t = &ctx->t[i];
        if (t->name)
            t->st = ls_catalog_add_partitions(b->catalog, LS_DEFAULT_NAMESPACE, t->name, t->count,
                                              ctx->validate_only, t->err, sizeof t->err);
    }
}

static void cp_expire(void *arg)
{
    cp_ctx_t *ctx = arg;
    ls_kreq_t *req = ctx->req;
    ls_kstr_t msg = timed_out_message(req, "partition creation", ctx->timeout_ms);
    for (int32_t i = 0; i < ctx->n; i++)
        if (ctx->t[i].name) {
            ctx->resp.Results[i].ErrorCode = LS_KERR_REQUEST_TIMED_OUT;
            ctx->resp.Results[i].ErrorMessage = msg;
        }
    ls_kw_t w;
    ls_kreq_encode(req, &w, &ctx->resp);
    ls_kreq_respond_keep(req, &w);
}

static void cp_done(void *arg)
{
    cp_ctx_t *ctx = arg;
    ls_kreq_t *req = ctx->req;
    ls_arena_t *a = req->arena;
    if (deadline_stop(&ctx->deadline)) {
        ls_kreq_release(req);
        return;
    }
    for (int32_t i = 0; i < ctx->n; i++) {
        cp_topic_t *t = &ctx->t[i];
        ls_kafka_CreatePartitionsResponse_CreatePartitionsTopicResult *r = &ctx->resp.Results[i];
        if (!t->name) continue;
        switch (t->st) {
        case LS_OK: r->ErrorCode = LS_KERR_NONE; break;
        case LS_ENOTFOUND:
            r->ErrorCode = LS_KERR_UNKNOWN_TOPIC_OR_PARTITION;
            r->ErrorMessage =
                ls_kstr_c(ls_arena_printf(a, "The topic '%s' does not exist.", t->name));
            break;
        case LS_EINVAL:
            /* only growing is allowed (catalog.h), and counts are bounded */
            r->ErrorCode = LS_KERR_INVALID_PARTITIONS;
            r->ErrorMessage = ls_kstr_c(ls_arena_printf(a, "%s", t->err));
            break;
        case LS_ELIMIT: /* max.partitions of the cluster */
            r->ErrorCode = LS_KERR_POLICY_VIOLATION;
            r->ErrorMessage = ls_kstr_c(ls_arena_printf(a, "%s", t->err));
            break;
        default:
            r->ErrorCode = ls_kafka_error_from_status(t->st);
            r->ErrorMessage =
                ls_kstr_c(ls_arena_printf(a, "%s", t->err[0] ? t->err : ls_status_str(t->st)));
            break;
        }
    }
    ls_kw_t w;
    ls_kreq_encode(req, &w, &ctx->resp);
    ls_kreq_respond(req, &w);
}

void ls_kafka_handle_create_partitions(ls_kreq_t *req)
{
    ls_kafka_services_t *b = req->svc;
    ls_arena_t *a = req->arena;
    const ls_kafka_CreatePartitionsRequest *m = req->msg;
    cp_ctx_t *ctx = ls_arena_alloc(a, sizeof *ctx);
    ctx->req = req;
    ctx->n = m->NumTopics;
    ctx->validate_only = m->ValidateOnly;
    ctx->t = ls_kmsg_alloc(a, ctx->n, sizeof *ctx->t);
    ctx->resp.NumResults = ctx->n;
    ctx->resp.Results = ls_kmsg_alloc(a, ctx->n, sizeof *ctx->resp.Results);
    char **names = ls_kmsg_alloc(a, ctx->n, sizeof *names);
    bool *dup = ls_kmsg_alloc(a, ctx->n, sizeof *dup);
    bool *exact = ls_kmsg_alloc(a, ctx->n, sizeof *exact);
    for (int32_t i = 0; i < ctx->n; i++)
        names[i] = ls_arena_kstr(a, m->Topics[i].Name, &exact[i]);
    mark_duplicates(a, names, ctx->n, dup);
    bool any = false;
    for (int32_t i = 0; i < ctx->n; i++) {
        const ls_kafka_CreatePartitionsRequest_CreatePartitionsTopic *q = &m->Topics[i];
        ls_kafka_CreatePartitionsResponse_CreatePartitionsTopicResult *r = &ctx->resp.Results[i];
        r->Name = q->Name;
        r->ErrorMessage = ls_kstr_null();
        if (dup[i]) {
            r->ErrorCode = LS_KERR_INVALID_REQUEST;
            r->ErrorMessage = ls_kstr_c("Duplicate topic in request.");
            continue;
        }
        if (!exact[i] || !ls_stream_name_valid(names[i])) {
            r->ErrorCode = LS_KERR_UNKNOWN_TOPIC_OR_PARTITION;
            r->ErrorMessage = ls_kstr_c(ls_arena_printf(a, "The topic %s does not exist.",
                                                        ls_kafka_printable(a, m->Topics[i].Name)));
            continue;
        }
        /* as Kafka: ALTER on the topic */
        if (!ls_kreq_allowed(req, LS_ACL_OP_ALTER, LS_ACL_RES_TOPIC, names[i])) {
            r->ErrorCode = LS_KERR_TOPIC_AUTHORIZATION_FAILED;
            r->ErrorMessage = ls_kstr_c("Authorization failed.");
            continue;
        }
        /* Kafka's own wording for the usual mistakes, when the (possibly
         * slightly stale) cached count already tells. */
        ls_stream_t *s = ls_catalog_lookup(b->catalog, LS_DEFAULT_NAMESPACE, names[i]);
        if (s && q->Count <= s->partitions) {
            r->ErrorCode = LS_KERR_INVALID_PARTITIONS;
            r->ErrorMessage = ls_kstr_c(
                q->Count == s->partitions
                    ? ls_arena_printf(a, "Topic already has %d partitions.", (int)s->partitions)
                    : ls_arena_printf(a,
                                      "Topic currently has %d partitions, which is higher than the "
                                      "requested %d.",
                                      (int)s->partitions, (int)q->Count));
            ls_stream_release(s);
            continue;
        }
        ls_stream_release(s);
        /* Assignments (broker ids for the new partitions) are accepted and
         * ignored: any broker serves any partition. */
        ctx->t[i].name = names[i];
        ctx->t[i].count = q->Count;
        any = true;
    }
    if (!any) {
        cp_done(ctx);
        return;
    }
    ctx->timeout_ms = m->TimeoutMs;
    deadline_start(b, &ctx->deadline, m->TimeoutMs, cp_expire, ctx);
    ls_ksvc_offload(b, cp_work, cp_done, ctx);
}
