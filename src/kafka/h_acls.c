/* Authorization at the Kafka edge: the checks every handler makes
 * (ls_kreq_allowed and friends: the request's principal and peer address
 * against the broker's authorizer, security/authz.h), and the ACL admin
 * APIs DescribeAcls (key 29), CreateAcls (key 30), DeleteAcls (key 31).
 *
 * With authorizer.class.name empty the broker has no authorizer: every check
 * allows (today's behaviour) and the ACL APIs answer SECURITY_DISABLED, as
 * Kafka does. Otherwise, as Kafka's AclApis: DescribeAcls needs DESCRIBE on
 * the CLUSTER, CreateAcls and DeleteAcls ALTER (else
 * CLUSTER_AUTHORIZATION_FAILED for the whole request); a filter with an
 * UNKNOWN element, or a binding Kafka would refuse, is INVALID_REQUEST (for
 * that creation or filter only). Changes block on the metadata store and run
 * offloaded; every broker enforces them once its watch delivers them, this
 * one before it answers. */
#include <stdio.h>
#include <string.h>

#include "kafka/handlers.h"
#include "kafka/msg.h"
#include "kafka/services.h"
#include "security/authz.h"

bool ls_kreq_allowed(ls_kreq_t *req, int8_t op, int8_t rtype, const char *name)
{
    ls_authz_t *z = req->svc->authz;
    return !z || ls_authz_check(z, ls_kafka_api_name(req->api_key), ls_kreq_principal(req),
                                ls_kreq_peer_host(req), op, rtype, name ? name : "", true);
}

bool ls_kreq_allowed_quiet(ls_kreq_t *req, int8_t op, int8_t rtype, const char *name)
{
    ls_authz_t *z = req->svc->authz;
    return !z || ls_authz_check(z, ls_kafka_api_name(req->api_key), ls_kreq_principal(req),
                                ls_kreq_peer_host(req), op, rtype, name ? name : "", false);
}

bool ls_kreq_allowed_k(ls_kreq_t *req, int8_t op, int8_t rtype, ls_kstr_t name)
{
    if (!req->svc->authz) return true;
    bool exact;
    const char *s = name.len >= 0 ? ls_arena_kstr(req->arena, name, &exact) : "";
    return ls_kreq_allowed(req, op, rtype, s);
}

bool ls_kreq_allowed_cluster(ls_kreq_t *req, int8_t op)
{
    return ls_kreq_allowed(req, op, LS_ACL_RES_CLUSTER, LS_ACL_CLUSTER_NAME);
}

bool ls_kreq_allowed_any(ls_kreq_t *req, int8_t op, int8_t rtype)
{
    ls_authz_t *z = req->svc->authz;
    return !z || ls_authz_check_any(z, ls_kreq_principal(req), ls_kreq_peer_host(req), op, rtype);
}

int32_t ls_kreq_authorized_ops(ls_kreq_t *req, int8_t rtype, const char *name, int32_t ops)
{
    if (!req->svc->authz) return ops;
    int32_t out = 0;
    for (int8_t op = LS_ACL_OP_READ; op <= LS_ACL_OP_TWO_PHASE_COMMIT; op++)
        if ((ops & (1 << op)) && ls_kreq_allowed_quiet(req, op, rtype, name)) out |= 1 << op;
    return out;
}

int16_t ls_kreq_config_denied(ls_kreq_t *req, int8_t type, ls_kstr_t name, int8_t op)
{
    if (type == LS_KAFKA_RESOURCE_TOPIC)
        return ls_kreq_allowed_k(req, op, LS_ACL_RES_TOPIC, name)
                   ? LS_KERR_NONE
                   : LS_KERR_TOPIC_AUTHORIZATION_FAILED;
    if (type == LS_KAFKA_RESOURCE_BROKER || type == LS_KAFKA_RESOURCE_BROKER_LOGGER ||
        type == LS_KAFKA_RESOURCE_CLIENT_METRICS)
        return ls_kreq_allowed_cluster(req, op) ? LS_KERR_NONE
                                                : LS_KERR_CLUSTER_AUTHORIZATION_FAILED;
    if (type == LS_KAFKA_RESOURCE_GROUP)
        return ls_kreq_allowed_k(req, op, LS_ACL_RES_GROUP, name)
                   ? LS_KERR_NONE
                   : LS_KERR_GROUP_AUTHORIZATION_FAILED;
    return LS_KERR_NONE;
}

/* ------------------------------------------------------------ filters */

static char *opt_str(ls_arena_t *a, ls_kstr_t s)
{
    bool exact;
    return s.len < 0 ? NULL : ls_arena_kstr(a, s, &exact);
}

/* A wire binding or filter as an ls_acl_t (strings in the arena). */
static ls_acl_t wire_acl(ls_arena_t *a, int8_t rtype, ls_kstr_t name, int8_t pattern,
                         ls_kstr_t principal, ls_kstr_t host, int8_t op, int8_t perm)
{
    ls_acl_t b = {rtype,           pattern, op, perm, opt_str(a, name), opt_str(a, principal),
                  opt_str(a, host)};
    return b;
}

/* The error of a request the broker cannot serve as asked: no authorizer
 * (SECURITY_DISABLED), or a principal without op on the cluster; 0 else. */
static int16_t acl_api_refusal(ls_kreq_t *req, int8_t op, const char **msg)
{
    if (!req->svc->authz) {
        *msg = "No Authorizer is configured.";
        return LS_KERR_SECURITY_DISABLED;
    }
    if (!ls_kreq_allowed_cluster(req, op)) {
        *msg = "Cluster authorization failed.";
        return LS_KERR_CLUSTER_AUTHORIZATION_FAILED;
    }
    return LS_KERR_NONE;
}

/* ------------------------------------------------------- DescribeAcls */

void ls_kafka_handle_describe_acls(ls_kreq_t *req)
{
    ls_arena_t *a = req->arena;
    const ls_kafka_DescribeAclsRequest *m = req->msg;
    ls_kafka_DescribeAclsResponse r;
    memset(&r, 0, sizeof r);
    r.ErrorMessage = ls_kstr_null();
    const char *msg = NULL;
    char why[160];
    ls_acl_t f = wire_acl(a, m->ResourceTypeFilter, m->ResourceNameFilter, m->PatternTypeFilter,
                          m->PrincipalFilter, m->HostFilter, m->Operation, m->PermissionType);
    r.ErrorCode = acl_api_refusal(req, LS_ACL_OP_DESCRIBE, &msg);
    if (r.ErrorCode == LS_KERR_NONE && ls_acl_check_filter(&f, why, sizeof why) != 0) {
        r.ErrorCode = LS_KERR_INVALID_REQUEST;
        msg = ls_arena_printf(a, "%s", why);
    }
    if (r.ErrorCode != LS_KERR_NONE) {
        r.ErrorMessage = ls_kstr_c(msg);
    } else {
        ls_acl_t *v;
        size_t n = ls_authz_list(req->svc->authz, &f, &v);
        /* grouped by resource pattern, as Kafka answers */
        r.Resources = ls_kmsg_alloc(a, (int32_t)n, sizeof *r.Resources);
        for (size_t i = 0; i < n; i++) {
            ls_kafka_DescribeAclsResponse_DescribeAclsResource *res = NULL;
            for (int32_t k = 0; k < r.NumResources && !res; k++) {
                ls_kafka_DescribeAclsResponse_DescribeAclsResource *x = &r.Resources[k];
                if (x->ResourceType == v[i].rtype && x->PatternType == v[i].pattern &&
                    ls_kstr_eq(x->ResourceName, v[i].name))
                    res = x;
            }
            if (!res) {
                res = &r.Resources[r.NumResources++];
                res->ResourceType = v[i].rtype;
                res->PatternType = v[i].pattern;
                res->ResourceName = ls_kstr_c(ls_arena_printf(a, "%s", v[i].name));
                res->Acls = ls_kmsg_alloc(a, (int32_t)n, sizeof *res->Acls);
            }
            ls_kafka_DescribeAclsResponse_AclDescription *d = &res->Acls[res->NumAcls++];
            d->Principal = ls_kstr_c(ls_arena_printf(a, "%s", v[i].principal));
            d->Host = ls_kstr_c(ls_arena_printf(a, "%s", v[i].host));
            d->Operation = v[i].op;
            d->PermissionType = v[i].perm;
        }
        ls_authz_free_list(v, n);
    }
    ls_kw_t w;
    ls_kreq_encode(req, &w, &r);
    ls_kreq_respond(req, &w);
}

/* --------------------------------------------------------- CreateAcls */

/* One change offloaded to a worker: the valid creations (or filters), the
 * request entry each came from, and the response the handler began (the
 * entries the checks refused are already answered). */
typedef struct acl_job {
    ls_kreq_t *req;
    ls_acl_t *acls;
    int32_t *index;
    size_t n;
    ls_acl_t **matched; /* DeleteAcls: per filter */
    size_t *nmatched;
    ls_status st;
    ls_kafka_CreateAclsResponse create;
    ls_kafka_DeleteAclsResponse del;
    char principal[256], host[64];
} acl_job_t;

static acl_job_t *acl_job_new(ls_kreq_t *req, int32_t n)
{
    size_t cap = n > 0 ? (size_t)n : 0;
    acl_job_t *j = ls_arena_alloc(req->arena, sizeof *j);
    j->req = req;
    j->acls = ls_arena_alloc(req->arena, (cap + 1) * sizeof *j->acls);
    j->index = ls_arena_alloc(req->arena, (cap + 1) * sizeof *j->index);
    j->matched = ls_arena_alloc(req->arena, (cap + 1) * sizeof *j->matched);
    j->nmatched = ls_arena_alloc(req->arena, (cap + 1) * sizeof *j->nmatched);
    snprintf(j->principal, sizeof j->principal, "%s", ls_kreq_principal(req));
    snprintf(j->host, sizeof j->host, "%s", ls_kreq_peer_host(req));
    return j;
}

static const char *store_message(ls_status st)
{
    return st == LS_ELIMIT ? "The cluster holds the most ACL bindings it may"
                           : "The ACLs could not be changed in the metadata store; retry";
}

static void create_work(void *arg)
{
    acl_job_t *j = arg;
    j->st = ls_authz_create(j->req->svc->authz, j->acls, j->n, j->principal, j->host);
}

static void create_done(void *arg)
{
    acl_job_t *j = arg;
    for (size_t k = 0; k < j->n && j->st != LS_OK; k++) {
        ls_kafka_CreateAclsResponse_AclCreationResult *res = &j->create.Results[j->index[k]];
        res->ErrorCode = ls_kafka_error_from_status(j->st);
        res->ErrorMessage = ls_kstr_c(store_message(j->st));
    }
    ls_kw_t w;
    ls_kreq_encode(j->req, &w, &j->create);
    ls_kreq_respond(j->req, &w);
}

void ls_kafka_handle_create_acls(ls_kreq_t *req)
{
    ls_arena_t *a = req->arena;
    const ls_kafka_CreateAclsRequest *m = req->msg;
    acl_job_t *j = acl_job_new(req, m->NumCreations);
    ls_kafka_CreateAclsResponse *r = &j->create;
    r->NumResults = m->NumCreations;
    r->Results = ls_kmsg_alloc(a, m->NumCreations, sizeof *r->Results);
    const char *msg = NULL;
    int16_t err = acl_api_refusal(req, LS_ACL_OP_ALTER, &msg);
    for (int32_t i = 0; i < m->NumCreations; i++) {
        const ls_kafka_CreateAclsRequest_AclCreation *c = &m->Creations[i];
        ls_kafka_CreateAclsResponse_AclCreationResult *res = &r->Results[i];
        res->ErrorCode = err;
        res->ErrorMessage = ls_kstr_c(msg);
        if (err != LS_KERR_NONE) continue;
        ls_acl_t b = wire_acl(a, c->ResourceType, c->ResourceName, c->ResourcePatternType,
                              c->Principal, c->Host, c->Operation, c->PermissionType);
        char why[200];
        if (ls_acl_check_binding(&b, why, sizeof why) != 0) {
            res->ErrorCode = LS_KERR_INVALID_REQUEST;
            res->ErrorMessage = ls_kstr_c(ls_arena_printf(a, "%s", why));
            continue;
        }
        j->index[j->n] = i;
        j->acls[j->n++] = b;
    }
    if (j->n == 0) {
        create_done(j);
        return;
    }
    ls_ksvc_offload(req->svc, create_work, create_done, j);
}

/* --------------------------------------------------------- DeleteAcls */

static void delete_work(void *arg)
{
    acl_job_t *j = arg;
    j->st = ls_authz_delete(j->req->svc->authz, j->acls, j->n, j->matched, j->nmatched,
                            j->principal, j->host);
}

static void delete_done(void *arg)
{
    acl_job_t *j = arg;
    ls_arena_t *a = j->req->arena;
    for (size_t k = 0; k < j->n; k++) {
        ls_kafka_DeleteAclsResponse_DeleteAclsFilterResult *fr = &j->del.FilterResults[j->index[k]];
        if (j->st != LS_OK) {
            fr->ErrorCode = ls_kafka_error_from_status(j->st);
            fr->ErrorMessage = ls_kstr_c(store_message(j->st));
            continue;
        }
        fr->NumMatchingAcls = (int32_t)j->nmatched[k];
        fr->MatchingAcls = ls_kmsg_alloc(a, fr->NumMatchingAcls, sizeof *fr->MatchingAcls);
        for (size_t x = 0; x < j->nmatched[k]; x++) {
            const ls_acl_t *b = &j->matched[k][x];
            ls_kafka_DeleteAclsResponse_DeleteAclsMatchingAcl *d = &fr->MatchingAcls[x];
            d->ErrorMessage = ls_kstr_null();
            d->ResourceType = b->rtype;
            d->ResourceName = ls_kstr_c(ls_arena_printf(a, "%s", b->name));
            d->PatternType = b->pattern;
            d->Principal = ls_kstr_c(ls_arena_printf(a, "%s", b->principal));
            d->Host = ls_kstr_c(ls_arena_printf(a, "%s", b->host));
            d->Operation = b->op;
            d->PermissionType = b->perm;
        }
        ls_authz_free_list(j->matched[k], j->nmatched[k]);
    }
    ls_kw_t w;
    ls_kreq_encode(j->req, &w, &j->del);
    ls_kreq_respond(j->req, &w);
}

void ls_kafka_handle_delete_acls(ls_kreq_t *req)
{
    ls_arena_t *a = req->arena;
    const ls_kafka_DeleteAclsRequest *m = req->msg;
    acl_job_t *j = acl_job_new(req, m->NumFilters);
    ls_kafka_DeleteAclsResponse *r = &j->del;
    r->NumFilterResults = m->NumFilters;
    r->FilterResults = ls_kmsg_alloc(a, m->NumFilters, sizeof *r->FilterResults);
    const char *msg = NULL;
    int16_t err = acl_api_refusal(req, LS_ACL_OP_ALTER, &msg);
    for (int32_t i = 0; i < m->NumFilters; i++) {
        const ls_kafka_DeleteAclsRequest_DeleteAclsFilter *q = &m->Filters[i];
        ls_kafka_DeleteAclsResponse_DeleteAclsFilterResult *fr = &r->FilterResults[i];
        fr->ErrorCode = err;
        fr->ErrorMessage = ls_kstr_c(msg);
        if (err != LS_KERR_NONE) continue;
        ls_acl_t f = wire_acl(a, q->ResourceTypeFilter, q->ResourceNameFilter, q->PatternTypeFilter,
                              q->PrincipalFilter, q->HostFilter, q->Operation, q->PermissionType);
        char why[160];
        if (ls_acl_check_filter(&f, why, sizeof why) != 0) {
            fr->ErrorCode = LS_KERR_INVALID_REQUEST;
            fr->ErrorMessage = ls_kstr_c(ls_arena_printf(a, "%s", why));
            continue;
        }
        j->index[j->n] = i;
        j->acls[j->n++] = f;
    }
    if (j->n == 0) {
        delete_done(j);
        return;
    }
    ls_ksvc_offload(req->svc, delete_work, delete_done, j);
}
