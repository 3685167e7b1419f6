/* The authorizer: Kafka's decision rules as a table of cases (including the
 * edge cases Kafka's documentation and StandardAuthorizer's tests name),
 * filters, binding validation, and the store: a change made through one
 * authorizer is enforced by another sharing the metadata store. */
#include <stdlib.h>
#include <unistd.h>

#include "base/clock.h"
#include "meta/meta.h"
#include "security/acl.h"
#include "security/authz.h"
#include "unit.h"

#define A(rt, pat, nm, pr, ho, o, pe)                                                              \
    {                                                                                              \
        LS_ACL_RES_##rt, LS_ACL_PAT_##pat, LS_ACL_OP_##o, LS_ACL_PERM_##pe, (char *)(nm),          \
            (char *)(pr), (char *)(ho)                                                             \
    }

/* One request against a set of bindings and what Kafka answers. */
typedef struct acl_case {
    const char *why;
    ls_acl_t acls[4];
    int nacls;
    const char *super_users;
    bool allow_if_none;
    const char *principal, *host;
    int8_t op, rtype;
    const char *name;
    bool allowed;
} acl_case_t;

#define ALICE "User:alice"
#define H1 "10.0.0.1"

static const acl_case_t cases[] = {
    {"no bindings: denied by default",
     {{0}},
     0,
     NULL,
     false,
     ALICE,
     H1,
     LS_ACL_OP_READ,
     LS_ACL_RES_TOPIC,
     "t",
     false},
    {"no bindings, allow.everyone.if.no.acl.found",
     {{0}},
     0,
     NULL,
     true,
     ALICE,
     H1,
     LS_ACL_OP_READ,
     LS_ACL_RES_TOPIC,
     "t",
     true},
    {"super user, no bindings",
     {{0}},
     0,
     "User:admin; User:alice",
     false,
     ALICE,
     H1,
     LS_ACL_OP_ALTER,
     LS_ACL_RES_CLUSTER,
     "kafka-cluster",
     true},
    {"super user beats a DENY",
     {A(TOPIC, LITERAL, "t", ALICE, "*", ALL, DENY)},
     1,
     "User:alice",
     false,
     ALICE,
     H1,
     LS_ACL_OP_READ,
     LS_ACL_RES_TOPIC,
     "t",
     true},
    {"super.users names are whole principals",
     {{0}},
     0,
     "User:alice2;User:ali",
     false,
     ALICE,
     H1,
     LS_ACL_OP_READ,
     LS_ACL_RES_TOPIC,
     "t",
     false},
    {"literal ALLOW READ",
     {A(TOPIC, LITERAL, "t", ALICE, "*", READ, ALLOW)},
     1,
     NULL,
     false,
     ALICE,
     H1,
     LS_ACL_OP_READ,
     LS_ACL_RES_TOPIC,
     "t",
     true},
    {"literal ALLOW on another topic",
     {A(TOPIC, LITERAL, "u", ALICE, "*", READ, ALLOW)},
     1,
     NULL,
     false,
     ALICE,
     H1,
     LS_ACL_OP_READ,
     LS_ACL_RES_TOPIC,
     "t",
     false},
    {"READ does not grant WRITE",
     {A(TOPIC, LITERAL, "t", ALICE, "*", READ, ALLOW)},
     1,
     NULL,
     false,
     ALICE,
     H1,
     LS_ACL_OP_WRITE,
     LS_ACL_RES_TOPIC,
     "t",
     false},
    {"another principal's ALLOW",
     {A(TOPIC, LITERAL, "t", "User:bob", "*", READ, ALLOW)},
     1,
     NULL,
     false,
     ALICE,
     H1,
     LS_ACL_OP_READ,
     LS_ACL_RES_TOPIC,
     "t",
     false},
    {"same name, another resource type",
     {A(GROUP, LITERAL, "t", ALICE, "*", READ, ALLOW)},
     1,
     NULL,
     false,
     ALICE,
     H1,
     LS_ACL_OP_READ,
     LS_ACL_RES_TOPIC,
     "t",
     false},
    {"User:* matches every user",
     {A(TOPIC, LITERAL, "t", "User:*", "*", READ, ALLOW)},
     1,
     NULL,
     false,
     ALICE,
     H1,
     LS_ACL_OP_READ,
     LS_ACL_RES_TOPIC,
     "t",
     true},
    {"wildcard resource name",
     {A(TOPIC, LITERAL, "*", ALICE, "*", WRITE, ALLOW)},
     1,
     NULL,
     false,
     ALICE,
     H1,
     LS_ACL_OP_WRITE,
     LS_ACL_RES_TOPIC,
     "anything",
     true},
    {"\"*\" is only a wildcard as LITERAL",
     {A(TOPIC, PREFIXED, "*", ALICE, "*", WRITE, ALLOW)},
     1,
     NULL,
     false,
     ALICE,
     H1,
     LS_ACL_OP_WRITE,
     LS_ACL_RES_TOPIC,
     "anything",
     false},
    {"PREFIXED matches names it prefixes",
     {A(TOPIC, PREFIXED, "fin-", ALICE, "*", READ, ALLOW)},
     1,
     NULL,
     false,
     ALICE,
     H1,
     LS_ACL_OP_READ,
     LS_ACL_RES_TOPIC,
     "fin-ledger",
     true},
    {"PREFIXED matches the prefix itself",
     {A(TOPIC, PREFIXED, "fin-", ALICE, "*", READ, ALLOW)},
     1,
     NULL,
     false,
     ALICE,
     H1,
     LS_ACL_OP_READ,
     LS_ACL_RES_TOPIC,
     "fin-",
     true},
    {"PREFIXED does not match other names",
     {A(TOPIC, PREFIXED, "fin-", ALICE, "*", READ, ALLOW)},
     1,
     NULL,
     false,
     ALICE,
     H1,
     LS_ACL_OP_READ,
     LS_ACL_RES_TOPIC,
     "fi",
     false},
    {"LITERAL is not a prefix",
     {A(TOPIC, LITERAL, "fin", ALICE, "*", READ, ALLOW)},
     1,
     NULL,
     false,
     ALICE,
     H1,
     LS_ACL_OP_READ,
     LS_ACL_RES_TOPIC,
     "finance",
     false},
    {"host filter: same host",
     {A(TOPIC, LITERAL, "t", ALICE, H1, READ, ALLOW)},
     1,
     NULL,
     false,
     ALICE,
     H1,
     LS_ACL_OP_READ,
     LS_ACL_RES_TOPIC,
     "t",
     true},
    {"host filter: other host",
     {A(TOPIC, LITERAL, "t", ALICE, "10.0.0.2", READ, ALLOW)},
     1,
     NULL,
     false,
     ALICE,
     H1,
     LS_ACL_OP_READ,
     LS_ACL_RES_TOPIC,
     "t",
     false},
    {"DENY beats ALLOW",
     {A(TOPIC, LITERAL, "t", ALICE, "*", READ, ALLOW),
      A(TOPIC, LITERAL, "t", ALICE, "*", READ, DENY)},
     2,
     NULL,
     false,
     ALICE,
     H1,
     LS_ACL_OP_READ,
     LS_ACL_RES_TOPIC,
     "t",
     false},
    {"wildcard DENY beats literal ALLOW",
     {A(TOPIC, LITERAL, "t", ALICE, "*", READ, ALLOW),
      A(TOPIC, LITERAL, "*", "User:*", "*", READ, DENY)},
     2,
     NULL,
     false,
     ALICE,
     H1,
     LS_ACL_OP_READ,
     LS_ACL_RES_TOPIC,
     "t",
     false},
    {"PREFIXED DENY beats literal ALLOW",
     {A(TOPIC, LITERAL, "fin-x", ALICE, "*", ALL, ALLOW),
      A(TOPIC, PREFIXED, "fin", ALICE, "*", WRITE, DENY)},
     2,
     NULL,
     false,
     ALICE,
     H1,
     LS_ACL_OP_WRITE,
     LS_ACL_RES_TOPIC,
     "fin-x",
     false},
    {"DENY from one host only",
     {A(TOPIC, LITERAL, "t", ALICE, "*", READ, ALLOW),
      A(TOPIC, LITERAL, "t", ALICE, "10.0.0.9", READ, DENY)},
     2,
     NULL,
     false,
     ALICE,
     H1,
     LS_ACL_OP_READ,
     LS_ACL_RES_TOPIC,
     "t",
     true},
    {"DENY of WRITE leaves READ",
     {A(TOPIC, LITERAL, "t", ALICE, "*", ALL, ALLOW),
      A(TOPIC, LITERAL, "t", ALICE, "*", WRITE, DENY)},
     2,
     NULL,
     false,
     ALICE,
     H1,
     LS_ACL_OP_READ,
     LS_ACL_RES_TOPIC,
     "t",
     true},
    {"ALL grants any operation",
     {A(CLUSTER, LITERAL, "kafka-cluster", ALICE, "*", ALL, ALLOW)},
     1,
     NULL,
     false,
     ALICE,
     H1,
     LS_ACL_OP_IDEMPOTENT_WRITE,
     LS_ACL_RES_CLUSTER,
     "kafka-cluster",
     true},
    {"DENY ALL denies DESCRIBE",
     {A(TOPIC, LITERAL, "t", ALICE, "*", READ, ALLOW),
      A(TOPIC, LITERAL, "t", ALICE, "*", ALL, DENY)},
     2,
     NULL,
     false,
     ALICE,
     H1,
     LS_ACL_OP_DESCRIBE,
     LS_ACL_RES_TOPIC,
     "t",
     false},
    {"READ implies DESCRIBE",
     {A(TOPIC, LITERAL, "t", ALICE, "*", READ, ALLOW)},
     1,
     NULL,
     false,
     ALICE,
     H1,
     LS_ACL_OP_DESCRIBE,
     LS_ACL_RES_TOPIC,
     "t",
     true},
    {"WRITE implies DESCRIBE",
     {A(TOPIC, LITERAL, "t", ALICE, "*", WRITE, ALLOW)},
     1,
     NULL,
     false,
     ALICE,
     H1,
     LS_ACL_OP_DESCRIBE,
     LS_ACL_RES_TOPIC,
     "t",
     true},
    {"DELETE implies DESCRIBE",
     {A(TOPIC, LITERAL, "t", ALICE, "*", DELETE, ALLOW)},
     1,
     NULL,
     false,
     ALICE,
     H1,
     LS_ACL_OP_DESCRIBE,
     LS_ACL_RES_TOPIC,
     "t",
     true},
    {"ALTER implies DESCRIBE",
     {A(TOPIC, LITERAL, "t", ALICE, "*", ALTER, ALLOW)},
     1,
     NULL,
     false,
     ALICE,
     H1,
     LS_ACL_OP_DESCRIBE,
     LS_ACL_RES_TOPIC,
     "t",
     true},
    {"CREATE does not imply DESCRIBE",
     {A(TOPIC, LITERAL, "t", ALICE, "*", CREATE, ALLOW)},
     1,
     NULL,
     false,
     ALICE,
     H1,
     LS_ACL_OP_DESCRIBE,
     LS_ACL_RES_TOPIC,
     "t",
     false},
    {"ALTER_CONFIGS implies DESCRIBE_CONFIGS",
     {A(TOPIC, LITERAL, "t", ALICE, "*", ALTER_CONFIGS, ALLOW)},
     1,
     NULL,
     false,
     ALICE,
     H1,
     LS_ACL_OP_DESCRIBE_CONFIGS,
     LS_ACL_RES_TOPIC,
     "t",
     true},
    {"DESCRIBE does not imply READ",
     {A(TOPIC, LITERAL, "t", ALICE, "*", DESCRIBE, ALLOW)},
     1,
     NULL,
     false,
     ALICE,
     H1,
     LS_ACL_OP_READ,
     LS_ACL_RES_TOPIC,
     "t",
     false},
    {"a DENY of READ does not deny DESCRIBE",
     {A(TOPIC, LITERAL, "t", ALICE, "*", WRITE, ALLOW),
      A(TOPIC, LITERAL, "t", ALICE, "*", READ, DENY)},
     2,
     NULL,
     false,
     ALICE,
     H1,
     LS_ACL_OP_DESCRIBE,
     LS_ACL_RES_TOPIC,
     "t",
     true},
    {"allow-if-none: a DENY still denies",
     {A(TOPIC, LITERAL, "t", ALICE, "*", READ, DENY)},
     1,
     NULL,
     true,
     ALICE,
     H1,
     LS_ACL_OP_READ,
     LS_ACL_RES_TOPIC,
     "t",
     false},
    {"allow-if-none: another principal's binding does not apply",
     {A(TOPIC, LITERAL, "t", "User:bob", "*", READ, ALLOW)},
     1,
     NULL,
     true,
     ALICE,
     H1,
     LS_ACL_OP_READ,
     LS_ACL_RES_TOPIC,
     "t",
     true},
};

TEST(decision_table)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const acl_case_t *c = &cases[i];
        bool got = ls_acl_decide(c->acls, (size_t)c->nacls, c->super_users, c->allow_if_none,
                                 c->principal, c->host, c->op, c->rtype, c->name, NULL);
        if (got != c->allowed) printf("  case %zu: %s\n", i, c->why);
        CHECK(got == c->allowed);
    }
}

TEST(decide_by_resource_type)
{
    /* Kafka's authorizeByResourceType (idempotent InitProducerId: WRITE on
     * some topic) */
    ls_acl_t allow = A(TOPIC, LITERAL, "t", ALICE, "*", WRITE, ALLOW);
    ls_acl_t allow_pre = A(TOPIC, PREFIXED, "fin", ALICE, "*", WRITE, ALLOW);
    ls_acl_t deny_lit = A(TOPIC, LITERAL, "t", ALICE, "*", WRITE, DENY);
    ls_acl_t deny_pre = A(TOPIC, PREFIXED, "f", ALICE, "*", WRITE, DENY);
    ls_acl_t deny_all = A(TOPIC, LITERAL, "*", "User:*", "*", ALL, DENY);
    ls_acl_t read = A(TOPIC, LITERAL, "t", ALICE, "*", READ, ALLOW);
    ls_acl_t s1[] = {allow};
    CHECK(ls_acl_decide_any(s1, 1, NULL, false, ALICE, H1, LS_ACL_OP_WRITE, LS_ACL_RES_TOPIC));
    CHECK(
        !ls_acl_decide_any(s1, 1, NULL, false, "User:bob", H1, LS_ACL_OP_WRITE, LS_ACL_RES_TOPIC));
    ls_acl_t s2[] = {allow, deny_lit};
    CHECK(!ls_acl_decide_any(s2, 2, NULL, false, ALICE, H1, LS_ACL_OP_WRITE, LS_ACL_RES_TOPIC));
    ls_acl_t s3[] = {allow_pre, deny_pre};
    CHECK(!ls_acl_decide_any(s3, 2, NULL, false, ALICE, H1, LS_ACL_OP_WRITE, LS_ACL_RES_TOPIC));
    ls_acl_t s4[] = {allow_pre, allow, deny_pre};
    CHECK(ls_acl_decide_any(s4, 3, NULL, false, ALICE, H1, LS_ACL_OP_WRITE, LS_ACL_RES_TOPIC));
    ls_acl_t s5[] = {allow, deny_all};
    CHECK(!ls_acl_decide_any(s5, 2, NULL, false, ALICE, H1, LS_ACL_OP_WRITE, LS_ACL_RES_TOPIC));
    CHECK(ls_acl_decide_any(s5, 2, "User:alice", false, ALICE, H1, LS_ACL_OP_WRITE,
                            LS_ACL_RES_TOPIC));
    ls_acl_t s6[] = {read}; /* exact operation: READ does not count for WRITE */
    CHECK(!ls_acl_decide_any(s6, 1, NULL, false, ALICE, H1, LS_ACL_OP_WRITE, LS_ACL_RES_TOPIC));
    CHECK(ls_acl_decide_any(NULL, 0, NULL, true, ALICE, H1, LS_ACL_OP_WRITE, LS_ACL_RES_TOPIC));
}

TEST(filters)
{
    ls_acl_t lit = A(TOPIC, LITERAL, "fin-x", ALICE, "*", READ, ALLOW);
    ls_acl_t pre = A(TOPIC, PREFIXED, "fin-", ALICE, "*", READ, ALLOW);
    ls_acl_t wild = A(TOPIC, LITERAL, "*", ALICE, "*", READ, ALLOW);
    ls_acl_t grp = A(GROUP, LITERAL, "fin-x", ALICE, "*", READ, ALLOW);
    ls_acl_t any = {LS_ACL_RES_ANY, LS_ACL_PAT_ANY, LS_ACL_OP_ANY, LS_ACL_PERM_ANY,
                    NULL,           NULL,           NULL};
    CHECK(ls_acl_filter_matches(&any, &lit) && ls_acl_filter_matches(&any, &grp));
    ls_acl_t f = any;
    f.rtype = LS_ACL_RES_TOPIC;
    f.pattern = LS_ACL_PAT_MATCH;
    f.name = "fin-x"; /* MATCH: what applies to topic fin-x */
    CHECK(ls_acl_filter_matches(&f, &lit) && ls_acl_filter_matches(&f, &pre) &&
          ls_acl_filter_matches(&f, &wild) && !ls_acl_filter_matches(&f, &grp));
    f.pattern = LS_ACL_PAT_LITERAL; /* exact pattern */
    CHECK(ls_acl_filter_matches(&f, &lit) && !ls_acl_filter_matches(&f, &pre) &&
          !ls_acl_filter_matches(&f, &wild));
    f.pattern = LS_ACL_PAT_ANY; /* any pattern type, exact name */
    CHECK(ls_acl_filter_matches(&f, &lit) && !ls_acl_filter_matches(&f, &pre));
    f.name = NULL;
    f.principal = "User:bob";
    CHECK(!ls_acl_filter_matches(&f, &lit));
    f.principal = NULL;
    f.op = LS_ACL_OP_WRITE;
    CHECK(!ls_acl_filter_matches(&f, &lit));
    char err[200];
    CHECK(ls_acl_check_filter(&any, err, sizeof err) == 0);
    f = any;
    f.pattern = LS_ACL_PAT_UNKNOWN;
    CHECK(ls_acl_check_filter(&f, err, sizeof err) != 0);
    f = any;
    f.op = 77;
    CHECK(ls_acl_check_filter(&f, err, sizeof err) != 0);
}

TEST(binding_validation)
{
    char err[200];
    ls_acl_t ok = A(TOPIC, PREFIXED, "t", ALICE, "*", READ, ALLOW);
    CHECK(ls_acl_check_binding(&ok, err, sizeof err) == 0);
    ls_acl_t b = ok;
    b.pattern = LS_ACL_PAT_MATCH;
    CHECK(ls_acl_check_binding(&b, err, sizeof err) != 0 && strstr(err, "patternType"));
    b = ok;
    b.op = LS_ACL_OP_ANY;
    CHECK(ls_acl_check_binding(&b, err, sizeof err) != 0 && strstr(err, "operation"));
    b = ok;
    b.perm = LS_ACL_PERM_ANY;
    CHECK(ls_acl_check_binding(&b, err, sizeof err) != 0);
    b = ok;
    b.rtype = LS_ACL_RES_ANY;
    CHECK(ls_acl_check_binding(&b, err, sizeof err) != 0);
    b = ok;
    b.name = "";
    CHECK(ls_acl_check_binding(&b, err, sizeof err) != 0);
    b = ok;
    b.principal = "alice";
    CHECK(ls_acl_check_binding(&b, err, sizeof err) != 0 && strstr(err, "colon"));
    b = ok;
    b.rtype = LS_ACL_RES_CLUSTER;
    CHECK(ls_acl_check_binding(&b, err, sizeof err) != 0 && strstr(err, "kafka-cluster"));
    b.name = "kafka-cluster";
    CHECK(ls_acl_check_binding(&b, err, sizeof err) == 0);
    CHECK(ls_acl_op_find("describe_configs") == LS_ACL_OP_DESCRIBE_CONFIGS);
    CHECK(strcmp(ls_acl_rtype_name(LS_ACL_RES_TRANSACTIONAL_ID), "TRANSACTIONAL_ID") == 0);
}

/* Waits (bounded) until the authorizer decides as expected. */
static bool await_decision(ls_authz_t *a, int8_t op, const char *topic, bool want)
{
    for (int i = 0; i < 500; i++) {
        if (ls_authz_check(a, "Test", ALICE, H1, op, LS_ACL_RES_TOPIC, topic, false) == want)
            return true;
        usleep(10000);
    }
    return false;
}

TEST(store_shared_by_brokers)
{
    ls_meta_t *m = ls_meta_mem_open();
    char err[256];
    ls_authz_t *b1 = ls_authz_open(m, "User:admin", false, err, sizeof err);
    ls_authz_t *b2 = ls_authz_open(m, "User:admin", false, err, sizeof err);
    CHECK(b1 && b2);
    CHECK(!ls_authz_check(b2, "Test", ALICE, H1, LS_ACL_OP_READ, LS_ACL_RES_TOPIC, "t", true));
    ls_acl_t add[] = {A(TOPIC, LITERAL, "t", ALICE, "*", READ, ALLOW),
                      A(TOPIC, PREFIXED, "p-", ALICE, "*", WRITE, ALLOW)};
    CHECK(ls_authz_create(b1, add, 2, "User:admin", "127.0.0.1") == LS_OK);
    /* the broker that made the change enforces it at once, the other once
     * its watch delivers it */
    CHECK(ls_authz_check(b1, "Test", ALICE, H1, LS_ACL_OP_READ, LS_ACL_RES_TOPIC, "t", true));
    CHECK(await_decision(b2, LS_ACL_OP_READ, "t", true));
    CHECK(await_decision(b2, LS_ACL_OP_WRITE, "p-1", true));
    /* creating the same binding again adds nothing */
    CHECK(ls_authz_create(b2, add, 1, "User:admin", "127.0.0.1") == LS_OK);
    ls_acl_t any = {LS_ACL_RES_ANY, LS_ACL_PAT_ANY, LS_ACL_OP_ANY, LS_ACL_PERM_ANY,
                    NULL,           NULL,           NULL};
    ls_acl_t *l;
    size_t n = ls_authz_list(b2, &any, &l);
    ls_authz_free_list(l, n);
    CHECK_EQ_INT(n, 2);
    /* delete through the second broker; the first stops allowing */
    ls_acl_t f = any;
    f.pattern = LS_ACL_PAT_LITERAL;
    ls_acl_t *matched[1];
    size_t nmatched[1];
    CHECK(ls_authz_delete(b2, &f, 1, matched, nmatched, "User:admin", "127.0.0.1") == LS_OK);
    CHECK_EQ_INT(nmatched[0], 1);
    CHECK(strcmp(matched[0][0].name, "t") == 0);
    ls_authz_free_list(matched[0], nmatched[0]);
    CHECK(await_decision(b1, LS_ACL_OP_READ, "t", false));
    CHECK(ls_authz_check(b1, "Test", ALICE, H1, LS_ACL_OP_WRITE, LS_ACL_RES_TOPIC, "p-2", true));
    /* a broker opened later loads what is stored */
    ls_authz_t *b3 = ls_authz_open(m, NULL, false, err, sizeof err);
    CHECK(b3 &&
          ls_authz_check(b3, "Test", ALICE, H1, LS_ACL_OP_WRITE, LS_ACL_RES_TOPIC, "p-3", true));
    ls_authz_close(b3);
    ls_authz_close(b1);
    ls_authz_close(b2);
    ls_meta_close(m);
}

int main(void)
{
    RUN(decision_table);
    RUN(decide_by_resource_type);
    RUN(filters);
    RUN(binding_validation);
    RUN(store_shared_by_brokers);
    UNIT_DONE();
}
