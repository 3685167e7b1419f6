/* Consumer-group APIs (classic protocol): FindCoordinator (10), JoinGroup (11),
 * Heartbeat (12), LeaveGroup (13), SyncGroup (14), DescribeGroups (15),
 * ListGroups (16), DeleteGroups (42), and what every group handler shares
 * (handlers.h, "h_group.c").
 *
 * This file is the Kafka edge only: decode, name checks against the catalog,
 * mapping of ls_group_err to Kafka error codes, encode. The state machine is
 * group/group.c; storage and timers are group/group_service.c.
 *
 * Coordinator choice: the live broker placement picks for the group id
 * (rendezvous hash over live brokers, ls_ksvc_coordinator); FindCoordinator
 * names it, and the others answer group requests COORDINATOR_NOT_AVAILABLE
 * so clients look again. State lives in the metadata store, so a new
 * coordinator loads it on first use; one that loses a group drops it from
 * memory (ls_group_service_retain).
 *
 * Flow: each group operation first acquires the group (a lazy load from the
 * metadata store on first use, then in memory); JoinGroup and SyncGroup may
 * answer much later (when the rebalance completes). The committed offsets'
 * APIs are h_group_offsets.c.
 *
 * Tables as groups (server/table_groups.h): a group id
 * lakestream.table.<namespace>.<table> is a table's read-only view. Its
 * offsets (OffsetFetch), listing (ListGroups: state Empty, protocol type
 * "consumer", as a group whose consumers all left) and description
 * (DescribeGroups: no members) come from the table's recorded status, read
 * on a worker at each request; every write to such an id (JoinGroup,
 * OffsetCommit, DeleteGroups, OffsetDelete, TxnOffsetCommit) is refused
 * with GROUP_AUTHORIZATION_FAILED, which Kafka's clients and tools report
 * as fatal and naming the group ("Not authorized to access group: ..."),
 * rather than retrying or treating the id as malformed.
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

int16_t ls_kafka_group_error(ls_group_err e)
{
    switch (e) {
    case LS_GERR_NONE: return LS_KERR_NONE;
    case LS_GERR_INVALID_GROUP_ID: return LS_KERR_INVALID_GROUP_ID;
    case LS_GERR_INVALID_SESSION_TIMEOUT: return LS_KERR_INVALID_SESSION_TIMEOUT;
    case LS_GERR_INCONSISTENT_GROUP_PROTOCOL: return LS_KERR_INCONSISTENT_GROUP_PROTOCOL;
    case LS_GERR_UNKNOWN_MEMBER_ID: return LS_KERR_UNKNOWN_MEMBER_ID;
    case LS_GERR_MEMBER_ID_REQUIRED: return LS_KERR_MEMBER_ID_REQUIRED;
    case LS_GERR_ILLEGAL_GENERATION: return LS_KERR_ILLEGAL_GENERATION;
    case LS_GERR_REBALANCE_IN_PROGRESS: return LS_KERR_REBALANCE_IN_PROGRESS;
    case LS_GERR_FENCED_INSTANCE_ID: return LS_KERR_FENCED_INSTANCE_ID;
    case LS_GERR_GROUP_MAX_SIZE_REACHED: return LS_KERR_GROUP_MAX_SIZE_REACHED;
    case LS_GERR_COORDINATOR_NOT_AVAILABLE: return LS_KERR_COORDINATOR_NOT_AVAILABLE;
    case LS_GERR_NON_EMPTY_GROUP: return LS_KERR_NON_EMPTY_GROUP;
    case LS_GERR_GROUP_ID_NOT_FOUND: return LS_KERR_GROUP_ID_NOT_FOUND;
    case LS_GERR_OFFSET_METADATA_TOO_LARGE: return LS_KERR_OFFSET_METADATA_TOO_LARGE;
    case LS_GERR_GROUP_SUBSCRIBED_TO_TOPIC: return LS_KERR_GROUP_SUBSCRIBED_TO_TOPIC;
    case LS_GERR_STALE_MEMBER_EPOCH: return LS_KERR_STALE_MEMBER_EPOCH;
    case LS_GERR_FENCED_MEMBER_EPOCH: return LS_KERR_FENCED_MEMBER_EPOCH;
    }
    return LS_KERR_UNKNOWN_SERVER_ERROR;
}

char *ls_kgroup_cstr(ls_arena_t *a, ls_kstr_t s, bool *ok)
{
    bool valid;
    char *c = ls_kafka_id_name(a, s, &valid);
    if (ok) *ok = valid;
    return c;
}

static ls_kstr_t kstr_or_null(const char *s) { return s ? ls_kstr_c(s) : ls_kstr_null(); }

static ls_group_service_t *svc(ls_kreq_t *req) { return req->svc->groups; }

/* ---- the tables' read-only groups ---- */

typedef struct tgroups_job {
    ls_kreq_t *req;
    ls_kgroup_tables_cb cb;
    void *arg;
    ls_status st;
    ls_table_group_t *v;
    int n;
} tgroups_job_t;

static void tgroups_work(void *arg)
{
    tgroups_job_t *j = arg;
    ls_kafka_services_t *b = j->req->svc;
    j->st = b->table_groups ? b->table_groups(b->root, &j->v, &j->n) : LS_OK;
}

static void tgroups_after(void *arg)
{
    tgroups_job_t *j = arg;
    j->cb(j->arg, j->st, j->v, j->n);
    ls_table_groups_free(j->v, j->n);
    ls_free(j);
}

void ls_kgroup_tables_read(ls_kreq_t *req, ls_kgroup_tables_cb cb, void *arg)
{
    tgroups_job_t *j = LS_NEW(tgroups_job_t);
    j->req = req;
    j->cb = cb;
    j->arg = arg;
    ls_ksvc_offload(req->svc, tgroups_work, tgroups_after, j);
}

const ls_table_group_t *ls_kgroup_table_find(const ls_table_group_t *v, int n, const char *gid)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(v[i].group_id, gid)) return &v[i];
    return NULL;
}

bool ls_kgroup_table_refused(ls_kreq_t *req, const char *gid)
{
    if (!ls_table_group_id(gid)) return false;
    LS_INFO("kafka", "%s to group %s refused: the lakestream.table.* groups are read-only",
            ls_kafka_api_name(req->api_key), gid);
    return true;
}

void ls_kgroup_acquire(ls_kreq_t *req, const char *gid, ls_group_ready_cb cb, void *arg)
{
    ls_member_t owner;
    if (ls_ksvc_coordinator(req->svc, gid, strlen(gid), &owner) != req->svc->node_id) {
        cb(arg, NULL);
        return;
    }
    ls_group_acquire(ls_group_service_coord(svc(req)), gid, cb, arg);
}

/* ls_kgroup_describe_each's state: the ids still to answer, one per id. */
typedef struct kdesc {
    ls_kgroup_desc_fn one;
    void (*done)(void *arg);
    void *arg;
    int pending;
} kdesc_t;

typedef struct kdesc_one {
    kdesc_t *all;
    int32_t i;
    char *gid;
} kdesc_one_t;

static void kdesc_answer(kdesc_one_t *d, ls_group_t *g, int16_t err, const char *fmt)
{
    d->all->one(d->all->arg, d->i, d->gid, g, err, fmt);
    if (--d->all->pending == 0) d->all->done(d->all->arg);
}

static void kdesc_ready(void *arg, ls_group_t *g)
{
    kdesc_one_t *d = arg;
    if (!g)
        kdesc_answer(d, NULL, LS_KERR_COORDINATOR_NOT_AVAILABLE, NULL);
    else if (ls_group_get_state(g) == LS_GROUP_DEAD)
        kdesc_answer(d, NULL, LS_KERR_GROUP_ID_NOT_FOUND, "Group %s not found.");
    else
        kdesc_answer(d, g, LS_KERR_NONE, NULL);
}

void ls_kgroup_describe_each(ls_kreq_t *req, const ls_kstr_t *ids, int32_t n, ls_kgroup_desc_fn one,
                             void (*done)(void *arg), void *arg)
{
    kdesc_t *all = ls_arena_alloc(req->arena, sizeof *all);
    *all = (kdesc_t){one, done, arg, 1};
    for (int32_t i = 0; i < n; i++) {
        kdesc_one_t *d = ls_arena_alloc(req->arena, sizeof *d);
        bool ok;
        *d = (kdesc_one_t){all, i, ls_kgroup_cstr(req->arena, ids[i], &ok)};
        all->pending++;
        /* as Kafka: DESCRIBE on each group */
        if (!ls_kreq_allowed_k(req, LS_ACL_OP_DESCRIBE, LS_ACL_RES_GROUP, ids[i]))
            kdesc_answer(d, NULL, LS_KERR_GROUP_AUTHORIZATION_FAILED, NULL);
        else if (!ok || !d->gid || !*d->gid)
            kdesc_answer(d, NULL, LS_KERR_INVALID_GROUP_ID, NULL);
        else if (ls_table_group_id(d->gid))
            kdesc_answer(
                d, NULL, LS_KERR_GROUP_ID_NOT_FOUND,
                "Group %s is a table's read-only group (lakestream.table.*), not of this type.");
        else if (!svc(req))
            kdesc_answer(d, NULL, LS_KERR_COORDINATOR_NOT_AVAILABLE, NULL);
        else
            ls_kgroup_acquire(req, d->gid, kdesc_ready, d);
    }
    if (--all->pending == 0) done(arg);
}

/* ---------------------------------------------------------- FindCoordinator */

/* As Kafka: DESCRIBE on the group (key type 0) or the transactional id
 * (key type 1) whose coordinator is asked for. */
static int16_t coordinator_denied(ls_kreq_t *req, int8_t key_type, ls_kstr_t key)
{
    if (key_type == 1)
        return ls_kreq_allowed_k(req, LS_ACL_OP_DESCRIBE, LS_ACL_RES_TRANSACTIONAL_ID, key)
                   ? LS_KERR_NONE
                   : LS_KERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
    return ls_kreq_allowed_k(req, LS_ACL_OP_DESCRIBE, LS_ACL_RES_GROUP, key)
               ? LS_KERR_NONE
               : LS_KERR_GROUP_AUTHORIZATION_FAILED;
}

void ls_kafka_handle_find_coordinator(ls_kreq_t *req)
{
    ls_kafka_FindCoordinatorRequest m;
    LS_KREQUEST(FindCoordinatorRequest, m);
    ls_kafka_services_t *b = req->svc;
    int16_t v = req->api_version;
    int16_t err = LS_KERR_NONE;
    const char *msg = NULL;
    if (m.KeyType == 2 && v >= 6) {
        err = LS_KERR_COORDINATOR_NOT_AVAILABLE; /* share groups (KIP-932) are not served */
        msg = "share groups are not supported";
    } else if (m.KeyType == 1) {
        if (!b->txns) err = LS_KERR_COORDINATOR_NOT_AVAILABLE;
    } else if (m.KeyType != 0) {
        err = LS_KERR_INVALID_REQUEST;
        msg = "unknown coordinator key type";
    } else if (!b->groups) {
        err = LS_KERR_COORDINATOR_NOT_AVAILABLE;
    }
    ls_kafka_FindCoordinatorResponse r;
    memset(&r, 0, sizeof r);
    if (v <= 3) {
        ls_member_t *c = ls_arena_alloc(req->arena, sizeof *c);
        int16_t e = err ? err : coordinator_denied(req, m.KeyType, m.Key);
        if (!e) ls_ksvc_coordinator(b, m.Key.ptr, (size_t)(m.Key.len > 0 ? m.Key.len : 0), c);
        r.ErrorCode = e;
        r.ErrorMessage = kstr_or_null(msg);
        const char *host = "";
        int32_t port = -1;
        if (!e) ls_member_endpoint(c, ls_kreq_listener_name(req), &host, &port);
        r.NodeId = e ? -1 : c->id;
        r.Host = ls_kstr_c(host);
        r.Port = port;
    } else {
        r.NumCoordinators = m.NumCoordinatorKeys;
        r.Coordinators = ls_kmsg_alloc(req->arena, m.NumCoordinatorKeys, sizeof *r.Coordinators);
        for (int32_t i = 0; i < m.NumCoordinatorKeys; i++) {
            ls_kafka_FindCoordinatorResponse_Coordinator *c = &r.Coordinators[i];
            c->Key = m.CoordinatorKeys[i];
            ls_member_t *owner = ls_arena_alloc(req->arena, sizeof *owner);
            int16_t e = err ? err : coordinator_denied(req, m.KeyType, c->Key);
            if (!e)
                ls_ksvc_coordinator(b, c->Key.ptr, (size_t)(c->Key.len > 0 ? c->Key.len : 0),
                                    owner);
            c->ErrorCode = e;
            c->ErrorMessage = kstr_or_null(msg);
            const char *host = "";
            int32_t port = -1;
            if (!e) ls_member_endpoint(owner, ls_kreq_listener_name(req), &host, &port);
            c->NodeId = e ? -1 : owner->id;
            c->Host = ls_kstr_c(host);
            c->Port = port;
        }
    }
    LS_KRESPOND(FindCoordinatorResponse, r);
}

/* ---------------------------------------------------------------- JoinGroup */

typedef struct join_ctx {
    ls_kreq_t *req;
    ls_group_join_req_t jr;
    char *gid;
} join_ctx_t;

static void join_respond_err(ls_kreq_t *req, int16_t err, ls_kstr_t member_id)
{
    ls_kafka_JoinGroupResponse r;
    memset(&r, 0, sizeof r);
    r.ErrorCode = err;
    r.GenerationId = -1;
    r.ProtocolType = ls_kstr_null();
    r.ProtocolName = ls_kstr_null();
    r.Leader = ls_kstr_c("");
    r.MemberId = member_id;
    LS_KRESPOND(JoinGroupResponse, r);
}

static void join_done(void *arg, const ls_group_join_result_t *res)
{
    join_ctx_t *ctx = arg;
    ls_kreq_t *req = ctx->req;
    ls_kafka_JoinGroupResponse r;
    memset(&r, 0, sizeof r);
    r.ErrorCode = ls_kafka_group_error(res->err);
    r.GenerationId = res->generation;
    r.ProtocolType = kstr_or_null(res->protocol_type);
    r.ProtocolName = kstr_or_null(res->protocol_name);
    r.Leader = ls_kstr_c(res->leader ? res->leader : "");
    r.MemberId = ls_kstr_c(res->member_id ? res->member_id : "");
    r.NumMembers = res->nmembers;
    r.Members = ls_kmsg_alloc(req->arena, res->nmembers, sizeof *r.Members);
    for (int i = 0; i < res->nmembers; i++) {
        r.Members[i].MemberId = ls_kstr_c(res->members[i].member_id);
        r.Members[i].GroupInstanceId = kstr_or_null(res->members[i].instance_id);
        r.Members[i].Metadata.ptr = res->members[i].metadata;
        r.Members[i].Metadata.len = (int32_t)res->members[i].len;
    }
    LS_KRESPOND(JoinGroupResponse, r); /* encoded now: the result's strings die with the callback */
}

static void join_ready(void *arg, ls_group_t *g)
{
    join_ctx_t *ctx = arg;
    if (!g) {
        join_respond_err(ctx->req, LS_KERR_COORDINATOR_NOT_AVAILABLE, ls_kstr_c(ctx->jr.member_id));
        return;
    }
    ls_group_join(g, &ctx->jr, join_done, ctx);
}

char *ls_kgroup_client_host(ls_kreq_t *req)
{
    const char *peer = ls_kreq_peer(req);
    const char *colon = strrchr(peer, ':');
    size_t n = colon ? (size_t)(colon - peer) : strlen(peer);
    char *h = ls_arena_alloc(req->arena, n + 2);
    h[0] = '/';
    memcpy(h + 1, peer, n);
    return h;
}

void ls_kafka_handle_join_group(ls_kreq_t *req)
{
    ls_kafka_JoinGroupRequest m;
    LS_KREQUEST(JoinGroupRequest, m);
    ls_arena_t *a = req->arena;
    join_ctx_t *ctx = ls_arena_alloc(a, sizeof *ctx);
    ctx->req = req;
    bool ok1, ok2, ok3, ok4;
    ctx->gid = ls_kgroup_cstr(a, m.GroupId, &ok1);
    ls_group_join_req_t *jr = &ctx->jr;
    jr->member_id = ls_kgroup_cstr(a, m.MemberId, &ok2);
    jr->instance_id = ls_kgroup_cstr(a, m.GroupInstanceId, &ok3);
    jr->protocol_type = ls_kgroup_cstr(a, m.ProtocolType, &ok4);
    if (!ls_kreq_allowed_k(req, LS_ACL_OP_READ, LS_ACL_RES_GROUP, m.GroupId)) {
        join_respond_err(req, LS_KERR_GROUP_AUTHORIZATION_FAILED, m.MemberId);
        return;
    }
    if (!ok1 || !*ctx->gid) {
        join_respond_err(req, LS_KERR_INVALID_GROUP_ID, m.MemberId);
        return;
    }
    if (ls_kgroup_table_refused(req, ctx->gid)) {
        join_respond_err(req, LS_KERR_GROUP_AUTHORIZATION_FAILED, m.MemberId);
        return;
    }
    if (!ok2 || !ok3 || !ok4) {
        join_respond_err(req, LS_KERR_INVALID_REQUEST, m.MemberId);
        return;
    }
    if (!svc(req)) {
        join_respond_err(req, LS_KERR_COORDINATOR_NOT_AVAILABLE, m.MemberId);
        return;
    }
    jr->client_id =
        ls_kgroup_cstr(a, req->client_id.len >= 0 ? req->client_id : ls_kstr_c(""), NULL);
    jr->client_host = ls_kgroup_client_host(req);
    jr->session_timeout_ms = m.SessionTimeoutMs;
    jr->rebalance_timeout_ms = m.RebalanceTimeoutMs;
    jr->require_known_member_id = req->api_version >= 4;
    ls_group_protocol_t *p = ls_kmsg_alloc(a, m.NumProtocols, sizeof *p);
    for (int32_t i = 0; i < m.NumProtocols; i++) {
        p[i].name = ls_kgroup_cstr(a, m.Protocols[i].Name, NULL);
        p[i].metadata = m.Protocols[i].Metadata.ptr;
        p[i].len = (size_t)m.Protocols[i].Metadata.len;
    }
    jr->protocols = p;
    jr->nprotocols = m.NumProtocols;
    ls_kgroup_acquire(req, ctx->gid, join_ready, ctx);
}

/* ---------------------------------------------------------------- SyncGroup */

typedef struct sync_ctx {
    ls_kreq_t *req;
    ls_kafka_SyncGroupRequest m;
    char *member_id, *instance_id, *ptype, *pname;
    ls_group_assignment_t *asg;
} sync_ctx_t;

static void sync_respond(ls_kreq_t *req, int16_t err, const char *pt, const char *pn,
                         const uint8_t *a, size_t len)
{
    ls_kafka_SyncGroupResponse r;
    memset(&r, 0, sizeof r);
    r.ErrorCode = err;
    r.ProtocolType = kstr_or_null(pt);
    r.ProtocolName = kstr_or_null(pn);
    r.Assignment.ptr = a ? a : (const uint8_t *)"";
    r.Assignment.len = a ? (int32_t)len : 0;
    LS_KRESPOND(SyncGroupResponse, r);
}

static void sync_done(void *arg, const ls_group_sync_result_t *res)
{
    sync_ctx_t *ctx = arg;
    sync_respond(ctx->req, ls_kafka_group_error(res->err), res->protocol_type, res->protocol_name,
                 res->assignment, res->len);
}

static void sync_ready(void *arg, ls_group_t *g)
{
    sync_ctx_t *ctx = arg;
    if (!g) {
        sync_respond(ctx->req, LS_KERR_COORDINATOR_NOT_AVAILABLE, NULL, NULL, NULL, 0);
        return;
    }
    ls_group_sync(g, ctx->m.GenerationId, ctx->member_id, ctx->instance_id, ctx->ptype, ctx->pname,
                  ctx->asg, ctx->m.NumAssignments, sync_done, ctx);
}

void ls_kafka_handle_sync_group(ls_kreq_t *req)
{
    ls_arena_t *a = req->arena;
    sync_ctx_t *ctx = ls_arena_alloc(a, sizeof *ctx);
    ctx->req = req;
    LS_KREQUEST(SyncGroupRequest, ctx->m);
    bool ok;
    char *gid = ls_kgroup_cstr(a, ctx->m.GroupId, &ok);
    if (!ls_kreq_allowed_k(req, LS_ACL_OP_READ, LS_ACL_RES_GROUP, ctx->m.GroupId)) {
        sync_respond(req, LS_KERR_GROUP_AUTHORIZATION_FAILED, NULL, NULL, NULL, 0);
        return;
    }
    if (!ok || !*gid) {
        sync_respond(req, LS_KERR_INVALID_GROUP_ID, NULL, NULL, NULL, 0);
        return;
    }
    if (!svc(req)) {
        sync_respond(req, LS_KERR_COORDINATOR_NOT_AVAILABLE, NULL, NULL, NULL, 0);
        return;
    }
    ctx->member_id = ls_kgroup_cstr(a, ctx->m.MemberId, NULL);
    ctx->instance_id = ls_kgroup_cstr(a, ctx->m.GroupInstanceId, NULL);
    ctx->ptype = ls_kgroup_cstr(a, ctx->m.ProtocolType, NULL);
    ctx->pname = ls_kgroup_cstr(a, ctx->m.ProtocolName, NULL);
    ctx->asg = ls_kmsg_alloc(a, ctx->m.NumAssignments, sizeof *ctx->asg);
    for (int32_t i = 0; i < ctx->m.NumAssignments; i++) {
        ctx->asg[i].member_id = ls_kgroup_cstr(a, ctx->m.Assignments[i].MemberId, NULL);
        ctx->asg[i].assignment = ctx->m.Assignments[i].Assignment.ptr;
        ctx->asg[i].len = (size_t)ctx->m.Assignments[i].Assignment.len;
    }
    ls_kgroup_acquire(req, gid, sync_ready, ctx);
}

/* ---------------------------------------------------------------- Heartbeat */

typedef struct hb_ctx {
    ls_kreq_t *req;
    ls_kafka_HeartbeatRequest m;
} hb_ctx_t;

static void hb_respond(ls_kreq_t *req, int16_t err)
{
    ls_kafka_HeartbeatResponse r = {0, err};
    LS_KRESPOND(HeartbeatResponse, r);
}

static void hb_ready(void *arg, ls_group_t *g)
{
    hb_ctx_t *ctx = arg;
    ls_kreq_t *req = ctx->req;
    if (!g) {
        hb_respond(req, LS_KERR_COORDINATOR_NOT_AVAILABLE);
        return;
    }
    ls_group_err e = ls_group_heartbeat(g, ctx->m.GenerationId,
                                        ls_kgroup_cstr(req->arena, ctx->m.MemberId, NULL),
                                        ls_kgroup_cstr(req->arena, ctx->m.GroupInstanceId, NULL));
    hb_respond(req, ls_kafka_group_error(e));
}

void ls_kafka_handle_heartbeat(ls_kreq_t *req)
{
    hb_ctx_t *ctx = ls_arena_alloc(req->arena, sizeof *ctx);
    ctx->req = req;
    LS_KREQUEST(HeartbeatRequest, ctx->m);
    bool ok;
    char *gid = ls_kgroup_cstr(req->arena, ctx->m.GroupId, &ok);
    if (!ls_kreq_allowed_k(req, LS_ACL_OP_READ, LS_ACL_RES_GROUP, ctx->m.GroupId)) {
        hb_respond(req, LS_KERR_GROUP_AUTHORIZATION_FAILED);
        return;
    }
    if (!ok || !*gid) {
        hb_respond(req, LS_KERR_INVALID_GROUP_ID);
        return;
    }
    if (!svc(req)) {
        hb_respond(req, LS_KERR_COORDINATOR_NOT_AVAILABLE);
        return;
    }
    ls_kgroup_acquire(req, gid, hb_ready, ctx);
}

/* --------------------------------------------------------------- LeaveGroup */

typedef struct leave_ctx {
    ls_kreq_t *req;
    ls_kafka_LeaveGroupRequest m;
} leave_ctx_t;

static void leave_respond_top(ls_kreq_t *req, const ls_kafka_LeaveGroupRequest *m, int16_t err)
{
    ls_kafka_LeaveGroupResponse r;
    memset(&r, 0, sizeof r);
    r.ErrorCode = err;
    LS_KRESPOND(LeaveGroupResponse, r);
    (void)m;
}

static void leave_ready(void *arg, ls_group_t *g)
{
    leave_ctx_t *ctx = arg;
    ls_kreq_t *req = ctx->req;
    ls_arena_t *a = req->arena;
    if (!g) {
        leave_respond_top(req, &ctx->m, LS_KERR_COORDINATOR_NOT_AVAILABLE);
        return;
    }
    ls_kafka_LeaveGroupResponse r;
    memset(&r, 0, sizeof r);
    if (req->api_version <= 2) {
        r.ErrorCode =
            ls_kafka_group_error(ls_group_leave(g, ls_kgroup_cstr(a, ctx->m.MemberId, NULL), NULL));
    } else {
        r.NumMembers = ctx->m.NumMembers;
        r.Members = ls_kmsg_alloc(a, ctx->m.NumMembers, sizeof *r.Members);
        for (int32_t i = 0; i < ctx->m.NumMembers; i++) {
            const ls_kafka_LeaveGroupRequest_MemberIdentity *mi = &ctx->m.Members[i];
            r.Members[i].MemberId = mi->MemberId;
            r.Members[i].GroupInstanceId = mi->GroupInstanceId;
            r.Members[i].ErrorCode =
                ls_kafka_group_error(ls_group_leave(g, ls_kgroup_cstr(a, mi->MemberId, NULL),
                                                    ls_kgroup_cstr(a, mi->GroupInstanceId, NULL)));
        }
    }
    LS_KRESPOND(LeaveGroupResponse, r);
}

void ls_kafka_handle_leave_group(ls_kreq_t *req)
{
    leave_ctx_t *ctx = ls_arena_alloc(req->arena, sizeof *ctx);
    ctx->req = req;
    LS_KREQUEST(LeaveGroupRequest, ctx->m);
    bool ok;
    char *gid = ls_kgroup_cstr(req->arena, ctx->m.GroupId, &ok);
    if (!ls_kreq_allowed_k(req, LS_ACL_OP_READ, LS_ACL_RES_GROUP, ctx->m.GroupId)) {
        leave_respond_top(req, &ctx->m, LS_KERR_GROUP_AUTHORIZATION_FAILED);
        return;
    }
    if (!ok || !*gid) {
        leave_respond_top(req, &ctx->m, LS_KERR_INVALID_GROUP_ID);
        return;
    }
    if (!svc(req)) {
        leave_respond_top(req, &ctx->m, LS_KERR_COORDINATOR_NOT_AVAILABLE);
        return;
    }
    ls_kgroup_acquire(req, gid, leave_ready, ctx);
}

/* --------------------------------------------------------------- ListGroups */

typedef struct list_ctx {
    ls_kreq_t *req;
    ls_kafka_ListGroupsRequest m;
    ls_table_group_t *tables; /* the tables' groups, listed after the others */
    int ntables;
    ls_status tables_st;
} list_ctx_t;

static bool filter_has(const ls_kstr_t *f, int32_t n, const char *s)
{
    if (n <= 0) return true;
    for (int32_t i = 0; i < n; i++)
        if ((size_t)f[i].len == strlen(s) && strncasecmp(f[i].ptr, s, strlen(s)) == 0) return true;
    return false;
}

static void list_done(void *arg, ls_status st, ls_group_listing_t *v, int n)
{
    list_ctx_t *ctx = arg;
    ls_kreq_t *req = ctx->req;
    ls_arena_t *a = req->arena;
    ls_kafka_ListGroupsResponse r;
    memset(&r, 0, sizeof r);
    if (st != LS_OK || ctx->tables_st != LS_OK) {
        r.ErrorCode = LS_KERR_COORDINATOR_NOT_AVAILABLE;
    } else {
        r.Groups = ls_kmsg_alloc(a, n + ctx->ntables, sizeof *r.Groups);
        /* as Kafka: every group with DESCRIBE on the cluster, else the
         * groups the principal may DESCRIBE */
        bool all =
            ls_kreq_allowed_quiet(req, LS_ACL_OP_DESCRIBE, LS_ACL_RES_CLUSTER, LS_ACL_CLUSTER_NAME);
        for (int i = 0; i < n; i++) {
            const char *state = v[i].state_name;
            if (!filter_has(ctx->m.StatesFilter, ctx->m.NumStatesFilter, state) ||
                !filter_has(ctx->m.TypesFilter, ctx->m.NumTypesFilter, v[i].group_type) ||
                (!all &&
                 !ls_kreq_allowed_quiet(req, LS_ACL_OP_DESCRIBE, LS_ACL_RES_GROUP, v[i].group_id)))
                continue;
            ls_kafka_ListGroupsResponse_Group *g = &r.Groups[r.NumGroups++];
            g->GroupId = ls_kstr_c(ls_kgroup_cstr(a, ls_kstr_c(v[i].group_id), NULL));
            g->ProtocolType = ls_kstr_c(
                ls_kgroup_cstr(a, ls_kstr_c(v[i].protocol_type ? v[i].protocol_type : ""), NULL));
            g->GroupState = ls_kstr_c(state);
            g->GroupType = ls_kstr_c(v[i].group_type);
        }
        for (int i = 0; i < ctx->ntables; i++) {
            if (!filter_has(ctx->m.StatesFilter, ctx->m.NumStatesFilter, "Empty") ||
                !filter_has(ctx->m.TypesFilter, ctx->m.NumTypesFilter, "classic") ||
                (!all && !ls_kreq_allowed_quiet(req, LS_ACL_OP_DESCRIBE, LS_ACL_RES_GROUP,
                                                ctx->tables[i].group_id)))
                continue;
            ls_kafka_ListGroupsResponse_Group *g = &r.Groups[r.NumGroups++];
            g->GroupId = ls_kstr_c(ls_kgroup_cstr(a, ls_kstr_c(ctx->tables[i].group_id), NULL));
            g->ProtocolType = ls_kstr_c("consumer");
            g->GroupState = ls_kstr_c("Empty");
            g->GroupType = ls_kstr_c("classic");
        }
    }
    ls_table_groups_free(ctx->tables, ctx->ntables);
    LS_KRESPOND(ListGroupsResponse, r);
}

/* The tables' groups are read first (kept until the answer), then the
 * others listed. */
static void list_tables_read(void *arg, ls_status st, const ls_table_group_t *v, int n)
{
    list_ctx_t *ctx = arg;
    ctx->tables_st = st;
    ctx->ntables = n;
    ctx->tables = LS_NEWN(ls_table_group_t, (size_t)n + 1);
    for (int i = 0; i < n; i++) {
        ctx->tables[i].group_id = ls_strdup(v[i].group_id);
        ctx->tables[i].topic = ls_strdup(v[i].topic);
    }
    if (!svc(ctx->req)) {
        list_done(ctx, LS_EAGAIN, NULL, 0);
        return;
    }
    ls_group_service_list(svc(ctx->req), list_done, ctx);
}

void ls_kafka_handle_list_groups(ls_kreq_t *req)
{
    list_ctx_t *ctx = ls_arena_alloc(req->arena, sizeof *ctx);
    ctx->req = req;
    LS_KREQUEST(ListGroupsRequest, ctx->m);
    ls_kgroup_tables_read(req, list_tables_read, ctx);
}

/* ----------------------------------------------------------- DescribeGroups */

typedef struct desc_ctx {
    ls_kreq_t *req;
    ls_kafka_DescribeGroupsRequest m;
    ls_kafka_DescribeGroupsResponse resp;
    int pending;
} desc_ctx_t;

typedef struct desc_one {
    desc_ctx_t *ctx;
    ls_kafka_DescribeGroupsResponse_Group *out;
    char *gid;
} desc_one_t;

static void desc_finish(desc_ctx_t *ctx)
{
    ls_kreq_t *req = ctx->req;
    LS_KRESPOND(DescribeGroupsResponse, ctx->resp);
}

/* A group that does not exist, or (as Kafka) is not a classic group: a
 * consumer group is described by ConsumerGroupDescribe. */
static void desc_dead(desc_one_t *d, const char *why)
{
    ls_kreq_t *req = d->ctx->req;
    ls_kafka_DescribeGroupsResponse_Group *o = d->out;
    o->GroupState = ls_kstr_c("Dead");
    if (req->api_version >= 6) {
        o->ErrorCode = LS_KERR_GROUP_ID_NOT_FOUND;
        char *msg = ls_arena_alloc(req->arena, strlen(d->gid) + 48);
        sprintf(msg, "Group %s %s.", d->gid, why);
        o->ErrorMessage = ls_kstr_c(msg);
    }
}

/* A table's group (file comment): Empty, no members. */
static void desc_table_group(void *arg, ls_status st, const ls_table_group_t *v, int n)
{
    desc_one_t *d = arg;
    ls_kafka_DescribeGroupsResponse_Group *o = d->out;
    o->ErrorMessage = ls_kstr_null();
    o->ProtocolType = ls_kstr_c("");
    o->ProtocolData = ls_kstr_c("");
    o->GroupState = ls_kstr_c("");
    o->AuthorizedOperations =
        d->ctx->m.IncludeAuthorizedOperations ? LS_KGROUP_AUTHORIZED_OPS : INT32_MIN;
    if (st != LS_OK) {
        o->ErrorCode = LS_KERR_COORDINATOR_NOT_AVAILABLE;
    } else if (!ls_kgroup_table_find(v, n, d->gid)) {
        desc_dead(d, "not found");
    } else {
        o->GroupState = ls_kstr_c("Empty");
        o->ProtocolType = ls_kstr_c("consumer");
    }
    if (--d->ctx->pending == 0) desc_finish(d->ctx);
}

static void desc_ready(void *arg, ls_group_t *g)
{
    desc_one_t *d = arg;
    desc_ctx_t *ctx = d->ctx;
    ls_kreq_t *req = ctx->req;
    ls_arena_t *a = req->arena;
    ls_kafka_DescribeGroupsResponse_Group *o = d->out;
    o->ErrorMessage = ls_kstr_null();
    o->ProtocolType = ls_kstr_c("");
    o->ProtocolData = ls_kstr_c("");
    o->AuthorizedOperations =
        ctx->m.IncludeAuthorizedOperations
            ? ls_kreq_authorized_ops(req, LS_ACL_RES_GROUP, d->gid, LS_KGROUP_AUTHORIZED_OPS)
            : INT32_MIN;
    if (!g) {
        o->ErrorCode = LS_KERR_COORDINATOR_NOT_AVAILABLE;
        o->GroupState = ls_kstr_c("");
    } else if (ls_group_get_state(g) == LS_GROUP_DEAD) {
        desc_dead(d, "not found");
    } else if (strcmp(ls_group_type(g), "classic") != 0) {
        desc_dead(d, "is not a classic group"); /* consumer, share or streams */
    } else {
        ls_group_state st = ls_group_get_state(g);
        o->GroupState = ls_kstr_c(ls_group_state_name(st));
        const char *pt = ls_group_protocol_type(g);
        o->ProtocolType = ls_kstr_c(ls_kgroup_cstr(a, ls_kstr_c(pt ? pt : ""), NULL));
        bool stable = st == LS_GROUP_STABLE;
        const char *pn = ls_group_protocol_name(g);
        if (stable && pn) o->ProtocolData = ls_kstr_c(ls_kgroup_cstr(a, ls_kstr_c(pn), NULL));
        ls_group_record_t rec;
        ls_group_snapshot(g, &rec);
        o->NumMembers = rec.nmembers;
        o->Members = ls_kmsg_alloc(a, rec.nmembers, sizeof *o->Members);
        for (int i = 0; i < rec.nmembers; i++) {
            ls_group_record_member_t *x = &rec.members[i];
            ls_kafka_DescribeGroupsResponse_Member *mb = &o->Members[i];
            mb->MemberId = ls_kstr_c(ls_kgroup_cstr(a, ls_kstr_c(x->member_id), NULL));
            mb->GroupInstanceId =
                x->instance_id ? ls_kstr_c(ls_kgroup_cstr(a, ls_kstr_c(x->instance_id), NULL))
                               : ls_kstr_null();
            mb->ClientId = ls_kstr_c(ls_kgroup_cstr(a, ls_kstr_c(x->client_id), NULL));
            mb->ClientHost = ls_kstr_c(ls_kgroup_cstr(a, ls_kstr_c(x->client_host), NULL));
            mb->MemberMetadata.ptr = (const uint8_t *)"";
            mb->MemberAssignment.ptr = (const uint8_t *)"";
            if (stable) {
                uint8_t *md = ls_arena_alloc(a, x->metadata_len + 1);
                memcpy(md, x->metadata, x->metadata_len);
                uint8_t *as = ls_arena_alloc(a, x->assignment_len + 1);
                memcpy(as, x->assignment, x->assignment_len);
                mb->MemberMetadata.ptr = md;
                mb->MemberMetadata.len = (int32_t)x->metadata_len;
                mb->MemberAssignment.ptr = as;
                mb->MemberAssignment.len = (int32_t)x->assignment_len;
            }
        }
        ls_group_record_free(&rec);
    }
    if (--ctx->pending == 0) desc_finish(ctx);
}

void ls_kafka_handle_describe_groups(ls_kreq_t *req)
{
    ls_arena_t *a = req->arena;
    desc_ctx_t *ctx = ls_arena_alloc(a, sizeof *ctx);
    ctx->req = req;
    LS_KREQUEST(DescribeGroupsRequest, ctx->m);
    ctx->resp.NumGroups = ctx->m.NumGroups;
    ctx->resp.Groups = ls_kmsg_alloc(a, ctx->m.NumGroups, sizeof *ctx->resp.Groups);
    ctx->pending = 1;
    for (int32_t i = 0; i < ctx->m.NumGroups; i++) {
        desc_one_t *d = ls_arena_alloc(a, sizeof *d);
        d->ctx = ctx;
        d->out = &ctx->resp.Groups[i];
        d->out->GroupId = ctx->m.Groups[i];
        bool ok;
        d->gid = ls_kgroup_cstr(a, ctx->m.Groups[i], &ok);
        ctx->pending++;
        /* as Kafka: DESCRIBE on each group */
        bool denied = !ls_kreq_allowed(req, LS_ACL_OP_DESCRIBE, LS_ACL_RES_GROUP, d->gid);
        if (denied || !ok || !svc(req)) {
            d->out->ErrorCode = denied ? LS_KERR_GROUP_AUTHORIZATION_FAILED
                                : ok   ? LS_KERR_COORDINATOR_NOT_AVAILABLE
                                       : LS_KERR_INVALID_GROUP_ID;
            d->out->GroupState = ls_kstr_c("");
            d->out->ProtocolType = ls_kstr_c("");
            d->out->ProtocolData = ls_kstr_c("");
            d->out->ErrorMessage = ls_kstr_null();
            d->out->AuthorizedOperations = INT32_MIN;
            ctx->pending--;
            continue;
        }
        if (ls_table_group_id(d->gid)) {
            ls_kgroup_tables_read(req, desc_table_group, d);
            continue;
        }
        ls_kgroup_acquire(req, d->gid, desc_ready, d);
    }
    if (--ctx->pending == 0) desc_finish(ctx);
}

/* ------------------------------------------------------------- DeleteGroups */

typedef struct del_ctx {
    ls_kreq_t *req;
    ls_kafka_DeleteGroupsRequest m;
    ls_kafka_DeleteGroupsResponse resp;
    int pending;
    bool any_deleted;
} del_ctx_t;

typedef struct del_one {
    del_ctx_t *ctx;
    ls_kafka_DeleteGroupsResponse_Result *out;
} del_one_t;

static void del_written(void *arg, ls_status st)
{
    del_ctx_t *ctx = arg;
    ls_kreq_t *req = ctx->req;
    if (st != LS_OK)
        for (int32_t i = 0; i < ctx->resp.NumResults; i++)
            if (ctx->resp.Results[i].ErrorCode == LS_KERR_NONE)
                ctx->resp.Results[i].ErrorCode = LS_KERR_COORDINATOR_NOT_AVAILABLE;
    LS_KRESPOND(DeleteGroupsResponse, ctx->resp);
}

static void del_step(del_ctx_t *ctx)
{
    if (--ctx->pending > 0) return;
    if (ctx->any_deleted) {
        ls_group_service_barrier(svc(ctx->req), del_written, ctx); /* answer once durable */
        return;
    }
    del_written(ctx, LS_OK);
}

static void del_ready(void *arg, ls_group_t *g)
{
    del_one_t *d = arg;
    if (!g) {
        d->out->ErrorCode = LS_KERR_COORDINATOR_NOT_AVAILABLE;
    } else {
        ls_group_err e = ls_group_delete(g);
        d->out->ErrorCode = ls_kafka_group_error(e);
        if (e == LS_GERR_NONE) d->ctx->any_deleted = true;
    }
    del_step(d->ctx);
}

void ls_kafka_handle_delete_groups(ls_kreq_t *req)
{
    ls_arena_t *a = req->arena;
    del_ctx_t *ctx = ls_arena_alloc(a, sizeof *ctx);
    ctx->req = req;
    LS_KREQUEST(DeleteGroupsRequest, ctx->m);
    ctx->resp.NumResults = ctx->m.NumGroupsNames;
    ctx->resp.Results = ls_kmsg_alloc(a, ctx->m.NumGroupsNames, sizeof *ctx->resp.Results);
    ctx->pending = 1;
    for (int32_t i = 0; i < ctx->m.NumGroupsNames; i++) {
        del_one_t *d = ls_arena_alloc(a, sizeof *d);
        d->ctx = ctx;
        d->out = &ctx->resp.Results[i];
        d->out->GroupId = ctx->m.GroupsNames[i];
        bool ok;
        char *gid = ls_kgroup_cstr(a, ctx->m.GroupsNames[i], &ok);
        /* as Kafka: DELETE on each group; a table's group is read-only */
        if (!ls_kreq_allowed(req, LS_ACL_OP_DELETE, LS_ACL_RES_GROUP, gid) ||
            (ok && ls_kgroup_table_refused(req, gid))) {
            d->out->ErrorCode = LS_KERR_GROUP_AUTHORIZATION_FAILED;
            continue;
        }
        if (!ok || !svc(req)) {
            d->out->ErrorCode = ok ? LS_KERR_COORDINATOR_NOT_AVAILABLE : LS_KERR_INVALID_GROUP_ID;
            continue;
        }
        ctx->pending++;
        ls_kgroup_acquire(req, gid, del_ready, d);
    }
    del_step(ctx);
}
