/* DescribeAcls, CreateAcls and DeleteAcls handlers (kafka/h_acls.c),
 * through the handler harness (kafka_fake.h): without an authorizer each
 * answers SECURITY_DISABLED; with one, CLUSTER DESCRIBE / ALTER first
 * (CLUSTER_AUTHORIZATION_FAILED), then each creation or filter succeeds or
 * fails alone (INVALID_REQUEST naming what Kafka refuses); a created binding
 * is described, enforced, and deleted by a matching filter. The client is
 * User:ANONYMOUS: a super user when the test says so. */
#include "kafka_fake.h"
#include "unit.h"

static kf_env_t E;

#define ANON "User:ANONYMOUS"

typedef ls_kafka_CreateAclsRequest_AclCreation creation_t;
typedef ls_kafka_DeleteAclsRequest_DeleteAclsFilter dfilter_t;

static creation_t binding(int8_t rtype, const char *name, const char *principal, int8_t op)
{
    return (creation_t){.ResourceType = rtype,
                        .ResourceName = ls_kstr_c(name),
                        .ResourcePatternType = LS_ACL_PAT_LITERAL,
                        .Principal = ls_kstr_c(principal),
                        .Host = ls_kstr_c("*"),
                        .Operation = op,
                        .PermissionType = LS_ACL_PERM_ALLOW};
}

/* CreateAcls v3 of c[0..n): 0 with the answer in *r, or -1. */
static int create(creation_t *c, int n, ls_kafka_CreateAclsResponse *r, ls_arena_t *a)
{
    ls_kafka_CreateAclsRequest m = {.Creations = c, .NumCreations = n};
    return kf_call(&E, 30, 3, &m, r, a);
}

/* The filter matching what binding() makes of topic name (any principal,
 * host, operation and permission). */
static dfilter_t topic_filter(const char *name)
{
    return (dfilter_t){.ResourceTypeFilter = LS_ACL_RES_TOPIC,
                       .ResourceNameFilter = ls_kstr_c(name),
                       .PatternTypeFilter = LS_ACL_PAT_ANY,
                       .PrincipalFilter = ls_kstr_null(),
                       .HostFilter = ls_kstr_null(),
                       .Operation = LS_ACL_OP_ANY,
                       .PermissionType = LS_ACL_PERM_ANY};
}

/* DescribeAcls v3 with filter f: 0 with the answer in *r, or -1. */
static int describe(const dfilter_t *f, ls_kafka_DescribeAclsResponse *r, ls_arena_t *a)
{
    ls_kafka_DescribeAclsRequest m = {.ResourceTypeFilter = f->ResourceTypeFilter,
                                      .ResourceNameFilter = f->ResourceNameFilter,
                                      .PatternTypeFilter = f->PatternTypeFilter,
                                      .PrincipalFilter = f->PrincipalFilter,
                                      .HostFilter = f->HostFilter,
                                      .Operation = f->Operation,
                                      .PermissionType = f->PermissionType};
    return kf_call(&E, 29, 3, &m, r, a);
}

/* DeleteAcls v3 of f[0..n): 0 with the answer in *r, or -1. */
static int delete_acls(dfilter_t *f, int n, ls_kafka_DeleteAclsResponse *r, ls_arena_t *a)
{
    ls_kafka_DeleteAclsRequest m = {.Filters = f, .NumFilters = n};
    return kf_call(&E, 31, 3, &m, r, a);
}

/* How many bindings a DescribeAcls of topic name finds (-1000: an error). */
static int count_topic_acls(const char *name)
{
    dfilter_t f = topic_filter(name);
    ls_arena_t *a = ls_arena_new();
    ls_kafka_DescribeAclsResponse r;
    int n = -1000;
    if (describe(&f, &r, a) == 0 && r.ErrorCode == LS_KERR_NONE) {
        n = 0;
        for (int32_t i = 0; i < r.NumResources; i++)
            n += r.Resources[i].NumAcls;
    }
    ls_arena_free(a);
    return n;
}

TEST(no_authorizer_is_security_disabled)
{
    creation_t c = binding(LS_ACL_RES_TOPIC, "acl-off", "User:alice", LS_ACL_OP_READ);
    dfilter_t f = topic_filter("acl-off");
    ls_arena_t *a = ls_arena_new();
    ls_kafka_CreateAclsResponse cr;
    CHECK(create(&c, 1, &cr, a) == 0);
    CHECK_EQ_INT(cr.NumResults, 1);
    CHECK_EQ_INT(cr.Results[0].ErrorCode, LS_KERR_SECURITY_DISABLED);
    ls_kafka_DescribeAclsResponse dr;
    CHECK(describe(&f, &dr, a) == 0);
    CHECK_EQ_INT(dr.ErrorCode, LS_KERR_SECURITY_DISABLED);
    CHECK(kf_kstr_has(dr.ErrorMessage, "No Authorizer"));
    ls_kafka_DeleteAclsResponse xr;
    CHECK(delete_acls(&f, 1, &xr, a) == 0);
    CHECK_EQ_INT(xr.NumFilterResults, 1);
    CHECK_EQ_INT(xr.FilterResults[0].ErrorCode, LS_KERR_SECURITY_DISABLED);
    ls_arena_free(a);
}

TEST(create_describe_delete)
{
    CHECK(kf_authz_on(&E, ANON) == 0);
    creation_t c[2] = {binding(LS_ACL_RES_TOPIC, "acl-t", "User:alice", LS_ACL_OP_READ),
                       binding(LS_ACL_RES_TOPIC, "acl-t", "User:bob", LS_ACL_OP_WRITE)};
    ls_arena_t *a = ls_arena_new();
    ls_kafka_CreateAclsResponse cr;
    CHECK(create(c, 2, &cr, a) == 0);
    CHECK_EQ_INT(cr.NumResults, 2);
    CHECK_EQ_INT(cr.Results[0].ErrorCode, LS_KERR_NONE);
    CHECK_EQ_INT(cr.Results[1].ErrorCode, LS_KERR_NONE);

    /* grouped under one resource pattern */
    dfilter_t f = topic_filter("acl-t");
    ls_kafka_DescribeAclsResponse dr;
    CHECK(describe(&f, &dr, a) == 0);
    CHECK_EQ_INT(dr.ErrorCode, LS_KERR_NONE);
    CHECK_EQ_INT(dr.NumResources, 1);
    const ls_kafka_DescribeAclsResponse_DescribeAclsResource *res = &dr.Resources[0];
    CHECK_EQ_INT(res->ResourceType, LS_ACL_RES_TOPIC);
    CHECK_EQ_INT(res->PatternType, LS_ACL_PAT_LITERAL);
    CHECK(ls_kstr_eq(res->ResourceName, "acl-t"));
    CHECK_EQ_INT(res->NumAcls, 2);
    int alice = ls_kstr_eq(res->Acls[0].Principal, "User:alice") ? 0 : 1;
    CHECK(ls_kstr_eq(res->Acls[alice].Principal, "User:alice"));
    CHECK(ls_kstr_eq(res->Acls[alice].Host, "*"));
    CHECK_EQ_INT(res->Acls[alice].Operation, LS_ACL_OP_READ);
    CHECK_EQ_INT(res->Acls[alice].PermissionType, LS_ACL_PERM_ALLOW);
    CHECK_EQ_INT(res->Acls[1 - alice].Operation, LS_ACL_OP_WRITE);

    /* delete bob's only */
    dfilter_t bob = f;
    bob.PrincipalFilter = ls_kstr_c("User:bob");
    ls_kafka_DeleteAclsResponse xr;
    CHECK(delete_acls(&bob, 1, &xr, a) == 0);
    CHECK_EQ_INT(xr.NumFilterResults, 1);
    CHECK_EQ_INT(xr.FilterResults[0].ErrorCode, LS_KERR_NONE);
    CHECK_EQ_INT(xr.FilterResults[0].NumMatchingAcls, 1);
    const ls_kafka_DeleteAclsResponse_DeleteAclsMatchingAcl *d =
        &xr.FilterResults[0].MatchingAcls[0];
    CHECK(ls_kstr_eq(d->Principal, "User:bob"));
    CHECK(ls_kstr_eq(d->ResourceName, "acl-t"));
    CHECK_EQ_INT(d->Operation, LS_ACL_OP_WRITE);
    ls_arena_free(a);
    int left = count_topic_acls("acl-t");
    kf_authz_off(&E);
    CHECK_EQ_INT(left, 1);
}

TEST(invalid_creation_is_refused_alone_naming_why)
{
    CHECK(kf_authz_on(&E, ANON) == 0);
    creation_t c[4] = {binding(LS_ACL_RES_TOPIC, "acl-bad", "alice", LS_ACL_OP_READ),
                       binding(LS_ACL_RES_CLUSTER, "not-the-cluster", "User:a", LS_ACL_OP_ALTER),
                       binding(LS_ACL_RES_TOPIC, "acl-bad", "User:a", LS_ACL_OP_ANY),
                       binding(LS_ACL_RES_TOPIC, "acl-bad", "User:carol", LS_ACL_OP_READ)};
    c[3].Host = ls_kstr_c("10.0.0.1");
    ls_arena_t *a = ls_arena_new();
    ls_kafka_CreateAclsResponse cr;
    int rc = create(c, 4, &cr, a);
    int stored = count_topic_acls("acl-bad");
    kf_authz_off(&E);
    CHECK(rc == 0);
    CHECK_EQ_INT(cr.NumResults, 4);
    CHECK_EQ_INT(cr.Results[0].ErrorCode, LS_KERR_INVALID_REQUEST);
    CHECK(kf_kstr_has(cr.Results[0].ErrorMessage, "principal"));
    CHECK_EQ_INT(cr.Results[1].ErrorCode, LS_KERR_INVALID_REQUEST);
    CHECK(kf_kstr_has(cr.Results[1].ErrorMessage, "CLUSTER"));
    CHECK_EQ_INT(cr.Results[2].ErrorCode, LS_KERR_INVALID_REQUEST);
    CHECK(kf_kstr_has(cr.Results[2].ErrorMessage, "operation"));
    CHECK_EQ_INT(cr.Results[3].ErrorCode, LS_KERR_NONE);
    CHECK_EQ_INT(stored, 1);
    ls_arena_free(a);
}

TEST(invalid_filter_is_refused)
{
    CHECK(kf_authz_on(&E, ANON) == 0);
    dfilter_t f = topic_filter("acl-filter");
    f.Operation = LS_ACL_OP_UNKNOWN;
    dfilter_t ok = topic_filter("acl-filter");
    dfilter_t both[2] = {f, ok};
    ls_arena_t *a = ls_arena_new();
    ls_kafka_DescribeAclsResponse dr;
    int rc1 = describe(&f, &dr, a);
    ls_kafka_DeleteAclsResponse xr;
    int rc2 = delete_acls(both, 2, &xr, a);
    kf_authz_off(&E);
    CHECK(rc1 == 0);
    CHECK_EQ_INT(dr.ErrorCode, LS_KERR_INVALID_REQUEST);
    CHECK(kf_kstr_has(dr.ErrorMessage, "operation"));
    CHECK(rc2 == 0);
    CHECK_EQ_INT(xr.NumFilterResults, 2);
    CHECK_EQ_INT(xr.FilterResults[0].ErrorCode, LS_KERR_INVALID_REQUEST);
    CHECK_EQ_INT(xr.FilterResults[1].ErrorCode, LS_KERR_NONE);
    CHECK_EQ_INT(xr.FilterResults[1].NumMatchingAcls, 0);
    ls_arena_free(a);
}

TEST(cluster_authorization_failed)
{
    CHECK(kf_authz_on(&E, NULL) == 0);
    creation_t c = binding(LS_ACL_RES_TOPIC, "acl-denied", "User:mallory", LS_ACL_OP_ALL);
    dfilter_t f = topic_filter("acl-denied");
    ls_arena_t *a = ls_arena_new();
    ls_kafka_CreateAclsResponse cr;
    int rc1 = create(&c, 1, &cr, a);
    ls_kafka_DescribeAclsResponse dr;
    int rc2 = describe(&f, &dr, a);
    ls_kafka_DeleteAclsResponse xr;
    int rc3 = delete_acls(&f, 1, &xr, a);
    kf_authz_off(&E);
    CHECK(rc1 == 0 && rc2 == 0 && rc3 == 0);
    CHECK_EQ_INT(cr.Results[0].ErrorCode, LS_KERR_CLUSTER_AUTHORIZATION_FAILED);
    CHECK_EQ_INT(dr.ErrorCode, LS_KERR_CLUSTER_AUTHORIZATION_FAILED);
    CHECK_EQ_INT(dr.NumResources, 0);
    CHECK_EQ_INT(xr.FilterResults[0].ErrorCode, LS_KERR_CLUSTER_AUTHORIZATION_FAILED);
    ls_arena_free(a);
    CHECK(kf_authz_on(&E, ANON) == 0);
    int stored = count_topic_acls("acl-denied");
    kf_authz_off(&E);
    CHECK_EQ_INT(stored, 0);
}

TEST(created_binding_is_enforced)
{
    /* a super user lets User:ANONYMOUS describe the cluster ... */
    CHECK(kf_authz_on(&E, ANON) == 0);
    creation_t c = binding(LS_ACL_RES_CLUSTER, LS_ACL_CLUSTER_NAME, ANON, LS_ACL_OP_DESCRIBE);
    ls_arena_t *a = ls_arena_new();
    ls_kafka_CreateAclsResponse cr;
    int rc = create(&c, 1, &cr, a);
    kf_authz_off(&E);
    CHECK(rc == 0);
    CHECK_EQ_INT(cr.Results[0].ErrorCode, LS_KERR_NONE);

    /* ... which, no longer super, it then may (DescribeAcls) but not alter */
    CHECK(kf_authz_on(&E, NULL) == 0);
    int described = count_topic_acls("acl-none");
    creation_t more = binding(LS_ACL_RES_TOPIC, "acl-more", ANON, LS_ACL_OP_ALL);
    rc = create(&more, 1, &cr, a);
    kf_authz_off(&E);
    CHECK_EQ_INT(described, 0);
    CHECK(rc == 0);
    CHECK_EQ_INT(cr.Results[0].ErrorCode, LS_KERR_CLUSTER_AUTHORIZATION_FAILED);

    /* the binding goes: the other tests' denials stay denials */
    dfilter_t f = {.ResourceTypeFilter = LS_ACL_RES_CLUSTER,
                   .ResourceNameFilter = ls_kstr_null(),
                   .PatternTypeFilter = LS_ACL_PAT_ANY,
                   .PrincipalFilter = ls_kstr_c(ANON),
                   .HostFilter = ls_kstr_null(),
                   .Operation = LS_ACL_OP_ANY,
                   .PermissionType = LS_ACL_PERM_ANY};
    CHECK(kf_authz_on(&E, ANON) == 0);
    ls_kafka_DeleteAclsResponse xr;
    rc = delete_acls(&f, 1, &xr, a);
    kf_authz_off(&E);
    CHECK(rc == 0);
    CHECK_EQ_INT(xr.FilterResults[0].ErrorCode, LS_KERR_NONE);
    CHECK_EQ_INT(xr.FilterResults[0].NumMatchingAcls, 1);
    ls_arena_free(a);
}

int main(void)
{
    if (kf_open(&E) != 0) return 1;
    RUN(no_authorizer_is_security_disabled);
    RUN(create_describe_delete);
    RUN(invalid_creation_is_refused_alone_naming_why);
    RUN(invalid_filter_is_refused);
    RUN(cluster_authorization_failed);
    RUN(created_binding_is_enforced);
    kf_close(&E);
    UNIT_DONE();
}
