/* Committed offsets' APIs of the classic groups: OffsetCommit (8),
 * OffsetFetch (9), OffsetDelete (47); the groups of the other protocols
 * (consumer, streams) keep their offsets here too. The Kafka edge only, as
 * h_group.c: the offsets live in group/group.c's state, written through
 * group/group_service.c.
 *
 * OffsetCommit answers after the offsets are durable in the metadata store;
 * the in-memory copy is updated then, so OffsetFetch never returns an offset
 * that could be lost. A connection's commits and fetches are handled one at
 * a time in request order (kafka/api.c marks them serial), so a fetch
 * pipelined behind a commit reads it. A group that may hold pending
 * transactional offsets (KIP-447, group/group_txn.h) is reread from the store
 * before OffsetFetch or OffsetDelete reads its offsets in memory
 * (acquire_current) — a transaction's marker may have been written by
 * another broker — and its pending partitions answer UNSTABLE_OFFSET_COMMIT
 * to RequireStable fetches. A table's read-only group (h_group.c) answers
 * OffsetFetch with the table's recorded offsets.
 *
 * Threads: loop thread only. */
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/diag.h"
#include "group/group_service.h"
#include "kafka/handlers.h"
#include "kafka/msg.h"
#include "kafka/names.h"
#include "kafka/services.h"

static ls_group_service_t *svc(ls_kreq_t *req) { return req->svc->groups; }

int16_t ls_kafka_commit_item(ls_arena_t *a, ls_group_commit_item_t *it, const ls_stream_t *s,
                             char *topic, int32_t partition, int64_t offset, int32_t leader_epoch,
                             ls_kstr_t metadata, int32_t max_metadata, int64_t commit_ms)
{
    if (!s || partition < 0 || partition >= s->partitions)
        return LS_KERR_UNKNOWN_TOPIC_OR_PARTITION;
    if (metadata.len > max_metadata) return LS_KERR_OFFSET_METADATA_TOO_LARGE;
    it->topic = topic;
    it->partition = partition;
    it->o.offset = offset;
    it->o.leader_epoch = leader_epoch;
    it->o.metadata = ls_kgroup_cstr(a, metadata, NULL); /* may hold NULs */
    it->o.metadata_len = it->o.metadata ? metadata.len : 0;
    it->o.commit_ms = commit_ms;
    it->o.stream_no = s->stream_no;
    return LS_KERR_NONE;
}

/* A committed offset's metadata as a wire string ("" when null, as Kafka),
 * copied: the response may be encoded after the offset changed. */
static ls_kstr_t offset_meta(ls_arena_t *a, const ls_group_offset_t *o)
{
    int32_t n = o->metadata ? o->metadata_len : 0;
    char *p = ls_arena_alloc(a, (size_t)n + 1);
    if (n) memcpy(p, o->metadata, (size_t)n);
    ls_kstr_t k = {p, n};
    return k;
}

/* ls_kgroup_acquire() for requests that read committed offsets from memory. A group
 * that may hold pending transactional offsets (KIP-447) is reread first: a
 * transaction's marker, written by any broker, changes its committed offsets
 * behind this broker's back (group/group_txn.h). Only groups that ever had
 * pending offsets pay. cb gets g (NULL: err) and the partitions still
 * pending (valid during the call). */
typedef void (*current_cb)(void *arg, ls_group_t *g, int16_t err, const ls_group_tp_t *pending,
                           int npending);
typedef struct current {
    ls_kreq_t *req;
    const char *gid;
    current_cb cb;
    void *arg;
} current_t;

static void current_reread(void *arg, ls_status st, const ls_group_tp_t *pending, int npending)
{
    current_t *c = arg;
    ls_group_t *g = st == LS_OK ? ls_group_find(ls_group_service_coord(svc(c->req)), c->gid) : NULL;
    c->cb(c->arg, g, st == LS_EFENCED ? LS_KERR_NOT_COORDINATOR : LS_KERR_COORDINATOR_NOT_AVAILABLE,
          pending, npending);
}

static void current_ready(void *arg, ls_group_t *g)
{
    current_t *c = arg;
    if (g && ls_group_txn_pending(g)) {
        ls_group_service_refresh(svc(c->req), c->gid, current_reread, c);
        return;
    }
    c->cb(c->arg, g, LS_KERR_COORDINATOR_NOT_AVAILABLE, NULL, 0);
}

static void acquire_current(ls_kreq_t *req, const char *gid, current_cb cb, void *arg)
{
    current_t *c = ls_arena_alloc(req->arena, sizeof *c);
    *c = (current_t){req, gid, cb, arg};
    ls_kgroup_acquire(req, gid, current_ready, c);
}

/* ------------------------------------------------------------- OffsetCommit */

typedef struct commit_ctx {
    ls_kreq_t *req;
    ls_kafka_OffsetCommitRequest m;
    char *gid;
    ls_kafka_OffsetCommitResponse resp;
    ls_group_commit_item_t *items;
    int16_t **codes; /* per item: where its error code goes */
    int nitems;
} commit_ctx_t;

static void commit_respond(commit_ctx_t *ctx)
{
    ls_kreq_t *req = ctx->req;
    LS_KRESPOND(OffsetCommitResponse, ctx->resp);
}

/* Fills every partition's code with err (used before any partition check). */
static void commit_fill(commit_ctx_t *ctx, int16_t err)
{
    ls_arena_t *a = ctx->req->arena;
    ls_kafka_OffsetCommitResponse *r = &ctx->resp;
    r->NumTopics = ctx->m.NumTopics;
    r->Topics = ls_kmsg_alloc(a, ctx->m.NumTopics, sizeof *r->Topics);
    for (int32_t i = 0; i < ctx->m.NumTopics; i++) {
        const ls_kafka_OffsetCommitRequest_Topic *qt = &ctx->m.Topics[i];
        r->Topics[i].Name = qt->Name;
        r->Topics[i].NumPartitions = qt->NumPartitions;
        r->Topics[i].Partitions =
            ls_kmsg_alloc(a, qt->NumPartitions, sizeof *r->Topics[i].Partitions);
        for (int32_t j = 0; j < qt->NumPartitions; j++) {
            r->Topics[i].Partitions[j].PartitionIndex = qt->Partitions[j].PartitionIndex;
            r->Topics[i].Partitions[j].ErrorCode = err;
        }
    }
}

static void commit_apply(void *arg, ls_group_t *g)
{
    commit_ctx_t *ctx = arg;
    for (int i = 0; i < ctx->nitems; i++) {
        if (g)
            ls_group_offset_put(g, ctx->items[i].topic, ctx->items[i].partition, &ctx->items[i].o);
        else
            *ctx->codes[i] = LS_KERR_COORDINATOR_NOT_AVAILABLE;
    }
    commit_respond(ctx);
}

int16_t ls_kafka_group_write_error(ls_status st)
{
    /* retriable; fenced: another broker owns the group now */
    return st == LS_EFENCED ? LS_KERR_NOT_COORDINATOR : LS_KERR_COORDINATOR_NOT_AVAILABLE;
}

static void commit_written(void *arg, ls_status st)
{
    commit_ctx_t *ctx = arg;
    if (st != LS_OK) {
        int16_t code = ls_kafka_group_write_error(st);
        for (int i = 0; i < ctx->nitems; i++)
            *ctx->codes[i] = code;
        commit_respond(ctx);
        return;
    }
    /* durable: now visible to OffsetFetch (the group may have been evicted
     * and reloaded meanwhile; acquire finds it either way) */
    ls_group_acquire(ls_group_service_coord(svc(ctx->req)), ctx->gid, commit_apply, ctx);
}

static void commit_ready(void *arg, ls_group_t *g)
{
    commit_ctx_t *ctx = arg;
    ls_kreq_t *req = ctx->req;
    ls_arena_t *a = req->arena;
    ls_kafka_services_t *b = req->svc;
    if (!g) {
        commit_fill(ctx, LS_KERR_COORDINATOR_NOT_AVAILABLE);
        commit_respond(ctx);
        return;
    }
    ls_group_err ge = ls_group_commit_check(g, ctx->m.GenerationIdOrMemberEpoch,
                                            ls_kgroup_cstr(a, ctx->m.MemberId, NULL),
                                            ls_kgroup_cstr(a, ctx->m.GroupInstanceId, NULL));
    commit_fill(ctx, ls_kafka_group_error(ge));
    if (ge != LS_GERR_NONE) {
        commit_respond(ctx);
        return;
    }
    int total = 0;
    for (int32_t i = 0; i < ctx->m.NumTopics; i++)
        total += ctx->m.Topics[i].NumPartitions;
    ctx->items = ls_kmsg_alloc(a, total, sizeof *ctx->items);
    ctx->codes = ls_kmsg_alloc(a, total, sizeof *ctx->codes);
    int32_t maxmeta =
        ls_group_coord_config(ls_group_service_coord(svc(req)))->offset_metadata_max_bytes;
    int64_t now = ls_clock_wall_ms();
    for (int32_t i = 0; i < ctx->m.NumTopics; i++) {
        const ls_kafka_OffsetCommitRequest_Topic *qt = &ctx->m.Topics[i];
        char *topic = ls_kafka_topic_name(a, qt->Name);
        bool denied = !ls_kreq_allowed_k(req, LS_ACL_OP_READ, LS_ACL_RES_TOPIC, qt->Name);
        ls_stream_t *s =
            topic && !denied ? ls_catalog_lookup(b->catalog, LS_DEFAULT_NAMESPACE, topic) : NULL;
        for (int32_t j = 0; j < qt->NumPartitions; j++) {
            const ls_kafka_OffsetCommitRequest_Partition *qp = &qt->Partitions[j];
            int16_t *code = &ctx->resp.Topics[i].Partitions[j].ErrorCode;
            if (denied) {
                *code = LS_KERR_TOPIC_AUTHORIZATION_FAILED;
                continue;
            }
            *code = ls_kafka_commit_item(a, &ctx->items[ctx->nitems], s, topic, qp->PartitionIndex,
                                         qp->CommittedOffset, qp->CommittedLeaderEpoch,
                                         qp->CommittedMetadata, maxmeta,
                                         qp->CommitTimestamp >= 0 ? qp->CommitTimestamp : now);
            if (*code == LS_KERR_NONE) ctx->codes[ctx->nitems++] = code;
        }
        ls_stream_release(s);
    }
    if (ctx->nitems == 0) {
        commit_respond(ctx);
        return;
    }
    ls_group_service_commit(svc(req), ctx->gid, ctx->items, ctx->nitems, commit_written, ctx);
}

void ls_kafka_handle_offset_commit(ls_kreq_t *req)
{
    commit_ctx_t *ctx = ls_arena_alloc(req->arena, sizeof *ctx);
    ctx->req = req;
    LS_KREQUEST(OffsetCommitRequest, ctx->m);
    ctx->resp.ThrottleTimeMs = 0;
    bool ok;
    ctx->gid = ls_kgroup_cstr(req->arena, ctx->m.GroupId, &ok);
    /* as Kafka: READ on the group, then READ on each topic (commit_ready) */
    if (!ls_kreq_allowed_k(req, LS_ACL_OP_READ, LS_ACL_RES_GROUP, ctx->m.GroupId)) {
        commit_fill(ctx, LS_KERR_GROUP_AUTHORIZATION_FAILED);
        commit_respond(ctx);
        return;
    }
    if (!ok || ls_kgroup_table_refused(req, ctx->gid)) {
        commit_fill(ctx, ok ? LS_KERR_GROUP_AUTHORIZATION_FAILED : LS_KERR_INVALID_GROUP_ID);
        commit_respond(ctx);
        return;
    }
    if (!svc(req)) {
        commit_fill(ctx, LS_KERR_COORDINATOR_NOT_AVAILABLE);
        commit_respond(ctx);
        return;
    }
    ls_kgroup_acquire(req, ctx->gid, commit_ready, ctx);
}

/* -------------------------------------------------------------- OffsetFetch */

typedef struct fetch_group {
    struct fetch_ctx *ctx;
    char *gid;
    ls_kafka_OffsetFetchRequest_Topic *topics; /* NULL with ntopics -1: all */
    int32_t ntopics;
    const char *member_id; /* v9+: a consumer group's member asking (NULL none) */
    int32_t member_epoch;
    ls_kafka_OffsetFetchResponse_Group *out;
} fetch_group_t;

typedef struct fetch_ctx {
    ls_kreq_t *req;
    ls_kafka_OffsetFetchRequest m;
    ls_kafka_OffsetFetchResponse resp;
    fetch_group_t *groups;
    int ngroups;
    int pending;
} fetch_ctx_t;

static void fetch_finish(fetch_ctx_t *ctx)
{
    ls_kreq_t *req = ctx->req;
    if (req->api_version <= 7 && ctx->ngroups == 1) {
        ls_kafka_OffsetFetchResponse_Group *g = ctx->groups[0].out;
        ctx->resp.Topics = g->Topics;
        ctx->resp.NumTopics = g->NumTopics;
        ctx->resp.ErrorCode = g->ErrorCode;
        if (req->api_version < 2 && g->ErrorCode) {
            /* v0-1 have no top-level error: put it on every partition */
            for (int32_t i = 0; i < g->NumTopics; i++)
                for (int32_t j = 0; j < g->Topics[i].NumPartitions; j++)
                    g->Topics[i].Partitions[j].ErrorCode = g->ErrorCode;
        }
    }
    LS_KRESPOND(OffsetFetchResponse, ctx->resp);
}

/* RequireStable (v7+, KIP-447): a partition with pending transactional
 * offsets answers UNSTABLE_OFFSET_COMMIT (partition level only, as Kafka)
 * until its transaction's marker settles them; the client retries. */
typedef struct unstable {
    const ls_group_tp_t *v;
    int n;
} unstable_t;

static bool is_unstable(const unstable_t *u, const char *topic, int32_t partition)
{
    for (int i = 0; u && i < u->n; i++)
        if (u->v[i].partition == partition && strcmp(u->v[i].topic, topic) == 0) return true;
    return false;
}

static void fetch_fill_requested(fetch_group_t *fg, ls_group_t *g, int16_t err, const unstable_t *u)
{
    ls_arena_t *a = fg->ctx->req->arena;
    ls_kafka_OffsetFetchResponse_Group *out = fg->out;
    out->NumTopics = fg->ntopics;
    out->Topics = ls_kmsg_alloc(a, fg->ntopics, sizeof *out->Topics);
    for (int32_t i = 0; i < fg->ntopics; i++) {
        const ls_kafka_OffsetFetchRequest_Topic *qt = &fg->topics[i];
        ls_kafka_OffsetFetchResponse_Topic *t = &out->Topics[i];
        t->Name = qt->Name;
        t->NumPartitions = qt->NumPartitionIndexes;
        t->Partitions = ls_kmsg_alloc(a, qt->NumPartitionIndexes, sizeof *t->Partitions);
        bool ok;
        char *topic = ls_kgroup_cstr(a, qt->Name, &ok);
        /* as Kafka: DESCRIBE on each topic asked for */
        bool denied =
            g && !ls_kreq_allowed(fg->ctx->req, LS_ACL_OP_DESCRIBE, LS_ACL_RES_TOPIC, topic);
        for (int32_t j = 0; j < qt->NumPartitionIndexes; j++) {
            ls_kafka_OffsetFetchResponse_Partition *p = &t->Partitions[j];
            p->PartitionIndex = qt->PartitionIndexes[j];
            p->CommittedOffset = -1;
            p->CommittedLeaderEpoch = -1;
            p->Metadata = ls_kstr_c("");
            p->ErrorCode = denied ? LS_KERR_TOPIC_AUTHORIZATION_FAILED : err;
            if (denied) continue;
            if (ok && is_unstable(u, topic, p->PartitionIndex)) {
                p->ErrorCode = LS_KERR_UNSTABLE_OFFSET_COMMIT;
                continue;
            }
            const ls_group_offset_t *o =
                g && ok ? ls_group_offset_get(g, topic, qt->PartitionIndexes[j]) : NULL;
            if (o) {
                p->CommittedOffset = o->offset;
                p->CommittedLeaderEpoch = o->leader_epoch;
                p->Metadata = offset_meta(a, o);
            }
        }
    }
}

static void fetch_fill_all(fetch_group_t *fg, ls_group_t *g, const unstable_t *u)
{
    ls_arena_t *a = fg->ctx->req->arena;
    ls_kafka_OffsetFetchResponse_Group *out = fg->out;
    /* two passes: count per topic, then fill */
    int64_t it = 0;
    const char *topic;
    int32_t part;
    const ls_group_offset_t *o;
    int n = 0;
    while (ls_group_offset_next(g, &it, &topic, &part, &o))
        n++;
    out->Topics = ls_kmsg_alloc(a, n, sizeof *out->Topics);
    out->NumTopics = 0;
    it = 0;
    while (ls_group_offset_next(g, &it, &topic, &part, &o)) {
        /* all offsets: those of topics the principal may not DESCRIBE are
         * left out, as Kafka does */
        if (!ls_kreq_allowed_quiet(fg->ctx->req, LS_ACL_OP_DESCRIBE, LS_ACL_RES_TOPIC, topic))
            continue;
        ls_kafka_OffsetFetchResponse_Topic *t = NULL;
        for (int32_t i = 0; i < out->NumTopics; i++)
            if ((size_t)out->Topics[i].Name.len == strlen(topic) &&
                memcmp(out->Topics[i].Name.ptr, topic, strlen(topic)) == 0)
                t = &out->Topics[i];
        if (!t) {
            t = &out->Topics[out->NumTopics++];
            t->Name = ls_kstr_c(ls_kgroup_cstr(a, ls_kstr_c(topic), NULL));
            t->Partitions = ls_kmsg_alloc(a, n, sizeof *t->Partitions);
        }
        ls_kafka_OffsetFetchResponse_Partition *p = &t->Partitions[t->NumPartitions++];
        p->PartitionIndex = part;
        if (is_unstable(u, topic, part)) {
            p->CommittedOffset = -1;
            p->CommittedLeaderEpoch = -1;
            p->Metadata = ls_kstr_c("");
            p->ErrorCode = LS_KERR_UNSTABLE_OFFSET_COMMIT;
            continue;
        }
        p->CommittedOffset = o->offset;
        p->CommittedLeaderEpoch = o->leader_epoch;
        p->Metadata = offset_meta(a, o);
    }
}

static void fetch_ready(void *arg, ls_group_t *g, int16_t err, const ls_group_tp_t *pending,
                        int npending);

static void fetch_verified(void *arg, bool owned)
{
    fetch_group_t *fg = arg;
    if (owned)
        acquire_current(fg->ctx->req, fg->gid, fetch_ready, fg);
    else /* the client looks the coordinator up again */
        fetch_ready(fg, NULL, LS_KERR_COORDINATOR_NOT_AVAILABLE, NULL, 0);
}

/* Answers one group from g (NULL: err), u: the partitions to answer unstable. */
static void fetch_answer(fetch_group_t *fg, ls_group_t *g, int16_t err, const unstable_t *u)
{
    fetch_ctx_t *ctx = fg->ctx;
    fg->out->GroupId = ls_kstr_c(fg->gid);
    if (g && ls_group_consumer(g)) {
        /* v9: a member of a consumer group fetches with its current epoch */
        ls_group_err ge = ls_group_fetch_check(g, fg->member_id, fg->member_epoch);
        if (ge != LS_GERR_NONE) {
            err = ls_kafka_group_error(ge);
            g = NULL;
        }
    }
    if (!g) {
        fg->out->ErrorCode = err;
        if (fg->ntopics >= 0) fetch_fill_requested(fg, NULL, LS_KERR_NONE, NULL);
    } else if (fg->ntopics < 0) {
        fetch_fill_all(fg, g, u);
    } else {
        fetch_fill_requested(fg, g, LS_KERR_NONE, u);
    }
    if (--ctx->pending == 0) fetch_finish(ctx);
}

static void fetch_ready(void *arg, ls_group_t *g, int16_t err, const ls_group_tp_t *pending,
                        int npending)
{
    fetch_group_t *fg = arg;
    unstable_t u = {pending, fg->ctx->m.RequireStable ? npending : 0};
    fetch_answer(fg, g, err, &u);
}

static void fetch_table_partition(ls_kafka_OffsetFetchResponse_Partition *p, int32_t index,
                                  int64_t offset)
{
    p->PartitionIndex = index;
    p->CommittedOffset = offset;
    p->CommittedLeaderEpoch = -1;
    p->Metadata = ls_kstr_c("");
    p->ErrorCode = LS_KERR_NONE;
}

/* A table's group (file comment): its offsets, as a group's committed ones. */
static void fetch_table_group(void *arg, ls_status st, const ls_table_group_t *v, int n)
{
    fetch_group_t *fg = arg;
    const ls_table_group_t *tg = st == LS_OK ? ls_kgroup_table_find(v, n, fg->gid) : NULL;
    if (!tg) { /* not a table (yet): an unknown group has no offsets */
        fetch_answer(fg, NULL, st == LS_OK ? LS_KERR_NONE : LS_KERR_COORDINATOR_NOT_AVAILABLE,
                     NULL);
        return;
    }
    ls_arena_t *a = fg->ctx->req->arena;
    ls_kafka_OffsetFetchResponse_Group *out = fg->out;
    out->GroupId = ls_kstr_c(fg->gid);
    size_t tlen = strlen(tg->topic);
    char *topic = ls_kgroup_cstr(a, ls_kstr_c(tg->topic), NULL);
    if (fg->ntopics >= 0) {
        fetch_fill_requested(fg, NULL, LS_KERR_NONE, NULL);
        for (int32_t i = 0; i < out->NumTopics; i++) {
            ls_kafka_OffsetFetchResponse_Topic *t = &out->Topics[i];
            if ((size_t)t->Name.len != tlen || memcmp(t->Name.ptr, topic, tlen)) continue;
            for (int32_t j = 0; j < t->NumPartitions; j++) {
                int32_t p = t->Partitions[j].PartitionIndex;
                fetch_table_partition(&t->Partitions[j], p,
                                      p >= 0 && p < tg->partitions ? tg->offsets[p] : -1);
            }
        }
    } else {
        int32_t np = 0;
        for (int32_t p = 0; p < tg->partitions; p++)
            np += tg->offsets[p] >= 0;
        out->NumTopics = np ? 1 : 0;
        out->Topics = ls_kmsg_alloc(a, 1, sizeof *out->Topics);
        ls_kafka_OffsetFetchResponse_Topic *t = &out->Topics[0];
        t->Name = ls_kstr_c(topic);
        t->Partitions = ls_kmsg_alloc(a, np, sizeof *t->Partitions);
        for (int32_t p = 0; p < tg->partitions; p++)
            if (tg->offsets[p] >= 0)
                fetch_table_partition(&t->Partitions[t->NumPartitions++], p, tg->offsets[p]);
    }
    if (--fg->ctx->pending == 0) fetch_finish(fg->ctx);
}

void ls_kafka_handle_offset_fetch(ls_kreq_t *req)
{
    ls_arena_t *a = req->arena;
    fetch_ctx_t *ctx = ls_arena_alloc(a, sizeof *ctx);
    ctx->req = req;
    LS_KREQUEST(OffsetFetchRequest, ctx->m);
    int16_t v = req->api_version;
    if (v <= 7) {
        ctx->ngroups = 1;
        ctx->groups = ls_arena_alloc(a, sizeof *ctx->groups);
        ctx->groups[0].gid = ls_kgroup_cstr(a, ctx->m.GroupId, NULL);
        ctx->groups[0].topics = ctx->m.Topics;
        ctx->groups[0].ntopics = ctx->m.NumTopics;
        ctx->groups[0].member_epoch = -1;
    } else {
        ctx->ngroups = ctx->m.NumGroups;
        ctx->groups = ls_kmsg_alloc(a, ctx->m.NumGroups, sizeof *ctx->groups);
        for (int32_t i = 0; i < ctx->m.NumGroups; i++) {
            ctx->groups[i].gid = ls_kgroup_cstr(a, ctx->m.Groups[i].GroupId, NULL);
            ctx->groups[i].topics = ctx->m.Groups[i].Topics;
            ctx->groups[i].ntopics = ctx->m.Groups[i].NumTopics;
            ctx->groups[i].member_id = ls_kgroup_cstr(a, ctx->m.Groups[i].MemberId, NULL);
            ctx->groups[i].member_epoch = ctx->m.Groups[i].MemberEpoch;
        }
    }
    ctx->resp.NumGroups = v >= 8 ? ctx->ngroups : 0;
    ctx->resp.Groups = ls_kmsg_alloc(a, ctx->ngroups, sizeof *ctx->resp.Groups);
    ctx->pending = 1;
    for (int i = 0; i < ctx->ngroups; i++) {
        fetch_group_t *fg = &ctx->groups[i];
        fg->ctx = ctx;
        fg->out = &ctx->resp.Groups[i];
        ctx->pending++;
        /* as Kafka: DESCRIBE on the group */
        if (!ls_kreq_allowed(req, LS_ACL_OP_DESCRIBE, LS_ACL_RES_GROUP, fg->gid)) {
            fetch_ready(fg, NULL, LS_KERR_GROUP_AUTHORIZATION_FAILED, NULL, 0);
            continue;
        }
        if (ls_table_group_id(fg->gid)) {
            ls_kgroup_tables_read(req, fetch_table_group, fg);
            continue;
        }
        if (!svc(req)) {
            fetch_ready(fg, NULL, LS_KERR_COORDINATOR_NOT_AVAILABLE, NULL, 0);
            continue;
        }
        /* a copy in memory is served only after proving this broker still
         * owns the group (a paused broker may have lost it meanwhile) */
        ls_group_service_verify(svc(req), fg->gid, fetch_verified, fg);
    }
    if (--ctx->pending == 0) fetch_finish(ctx);
}

/* ------------------------------------------------------------- OffsetDelete */

typedef struct odel_ctx {
    ls_kreq_t *req;
    ls_kafka_OffsetDeleteRequest m;
    ls_kafka_OffsetDeleteResponse resp;
    char *gid;
} odel_ctx_t;

static void odel_respond(odel_ctx_t *ctx)
{
    ls_kreq_t *req = ctx->req;
    LS_KRESPOND(OffsetDeleteResponse, ctx->resp);
}

static void odel_written(void *arg, ls_status st)
{
    odel_ctx_t *ctx = arg;
    if (st != LS_OK) ctx->resp.ErrorCode = LS_KERR_COORDINATOR_NOT_AVAILABLE;
    odel_respond(ctx);
}

static void odel_ready(void *arg, ls_group_t *g, int16_t err, const ls_group_tp_t *pending,
                       int npending)
{
    odel_ctx_t *ctx = arg;
    ls_kreq_t *req = ctx->req;
    ls_arena_t *a = req->arena;
    ls_kafka_OffsetDeleteResponse *r = &ctx->resp;
    if (!g || ls_group_get_state(g) == LS_GROUP_DEAD) {
        r->ErrorCode = g ? LS_KERR_GROUP_ID_NOT_FOUND : err;
        odel_respond(ctx);
        return;
    }
    int total = 0;
    for (int32_t i = 0; i < ctx->m.NumTopics; i++)
        total += ctx->m.Topics[i].NumPartitions;
    ls_group_commit_item_t *items = ls_kmsg_alloc(a, total, sizeof *items);
    int n = 0;
    r->NumTopics = ctx->m.NumTopics;
    r->Topics = ls_kmsg_alloc(a, ctx->m.NumTopics, sizeof *r->Topics);
    for (int32_t i = 0; i < ctx->m.NumTopics; i++) {
        const ls_kafka_OffsetDeleteRequest_Topic *qt = &ctx->m.Topics[i];
        ls_kafka_OffsetDeleteResponse_Topic *t = &r->Topics[i];
        t->Name = qt->Name;
        t->NumPartitions = qt->NumPartitions;
        t->Partitions = ls_kmsg_alloc(a, qt->NumPartitions, sizeof *t->Partitions);
        char *topic = ls_kafka_topic_name(a, qt->Name);
        if (!ls_kreq_allowed_k(req, LS_ACL_OP_READ, LS_ACL_RES_TOPIC, qt->Name)) {
            for (int32_t j = 0; j < qt->NumPartitions; j++) {
                t->Partitions[j].PartitionIndex = qt->Partitions[j];
                t->Partitions[j].ErrorCode = LS_KERR_TOPIC_AUTHORIZATION_FAILED;
            }
            continue;
        }
        ls_stream_t *s =
            topic ? ls_catalog_lookup(req->svc->catalog, LS_DEFAULT_NAMESPACE, topic) : NULL;
        ls_group_err te = ls_group_offset_delete_check(g, topic ? topic : "");
        if (te == LS_GERR_NON_EMPTY_GROUP) {
            ls_stream_release(s);
            r->ErrorCode = LS_KERR_NON_EMPTY_GROUP;
            r->NumTopics = 0;
            odel_respond(ctx);
            return;
        }
        for (int32_t j = 0; j < qt->NumPartitions; j++) {
            int32_t p = qt->Partitions[j];
            t->Partitions[j].PartitionIndex = p;
            if (!s || p < 0 || p >= s->partitions) {
                t->Partitions[j].ErrorCode = LS_KERR_UNKNOWN_TOPIC_OR_PARTITION;
                continue;
            }
            t->Partitions[j].ErrorCode = ls_kafka_group_error(te);
            if (te != LS_GERR_NONE) continue;
            if (ls_group_offset_get(g, topic, p)) {
                ls_group_offset_del(g, topic, p);
                items[n].topic = topic;
                items[n].partition = p;
                n++;
            }
        }
        ls_stream_release(s);
    }
    if (n == 0) {
        odel_respond(ctx);
        return;
    }
    ls_group_service_delete_offsets(svc(req), ctx->gid, items, n, odel_written, ctx);
}

void ls_kafka_handle_offset_delete(ls_kreq_t *req)
{
    odel_ctx_t *ctx = ls_arena_alloc(req->arena, sizeof *ctx);
    ctx->req = req;
    LS_KREQUEST(OffsetDeleteRequest, ctx->m);
    bool ok;
    ctx->gid = ls_kgroup_cstr(req->arena, ctx->m.GroupId, &ok);
    /* as Kafka: DELETE on the group, READ on each topic (odel_ready); a
     * table's group is read-only */
    if (!ls_kreq_allowed(req, LS_ACL_OP_DELETE, LS_ACL_RES_GROUP, ctx->gid) ||
        (ok && ls_kgroup_table_refused(req, ctx->gid))) {
        ctx->resp.ErrorCode = LS_KERR_GROUP_AUTHORIZATION_FAILED;
        odel_respond(ctx);
        return;
    }
    /* as Kafka 4: commits and fetches take the empty group id (kept for
     * old clients), a delete does not */
    if (ok && !ctx->gid[0]) ok = false;
    if (!ok || !svc(req)) {
        ctx->resp.ErrorCode = ok ? LS_KERR_COORDINATOR_NOT_AVAILABLE : LS_KERR_INVALID_GROUP_ID;
        odel_respond(ctx);
        return;
    }
    acquire_current(req, ctx->gid, odel_ready, ctx); /* deletes what memory holds */
}
