/* DescribeClientQuotas and AlterClientQuotas handlers (kafka/h_quotas.c),
 * through the handler harness (kafka_fake.h): an alter stores what a
 * describe then finds (by exact name, default entity or any entity of a
 * type, strict or not); each entry of an alter succeeds or fails alone, an
 * invalid one with INVALID_REQUEST naming the key, type or value; nothing
 * is stored by validateOnly or a refused entry; CLUSTER ALTER_CONFIGS /
 * DESCRIBE_CONFIGS first. */
#include "kafka_fake.h"
#include "unit.h"

static kf_env_t E;

typedef ls_kafka_AlterClientQuotasRequest_EntityData aentity_t;
typedef ls_kafka_AlterClientQuotasRequest_OpData op_t;
typedef ls_kafka_AlterClientQuotasRequest_EntryData aentry_t;
typedef ls_kafka_DescribeClientQuotasRequest_ComponentData comp_t;

static ls_kstr_t kname(const char *s) { return s ? ls_kstr_c(s) : ls_kstr_null(); }

/* AlterClientQuotas v1 of entries e[0..n): 0 with the answer in *r, or -1. */
static int alter(aentry_t *e, int n, bool validate_only, ls_kafka_AlterClientQuotasResponse *r,
                 ls_arena_t *a)
{
    ls_kafka_AlterClientQuotasRequest m = {
        .Entries = e, .NumEntries = n, .ValidateOnly = validate_only};
    return kf_call(&E, 49, 1, &m, r, a);
}

/* One entry's code from an alter of one user entity (name NULL: the
 * default user) setting key to value (or removing it); its message in
 * msg[msglen]. -1000: no answer. */
static int alter_user(const char *name, const char *key, double value, bool remove,
                      bool validate_only, char *msg, size_t msglen)
{
    aentity_t en = {ls_kstr_c("user"), kname(name)};
    op_t op = {ls_kstr_c(key), value, remove};
    aentry_t e = {.Entity = &en, .NumEntity = 1, .Ops = &op, .NumOps = 1};
    ls_arena_t *a = ls_arena_new();
    ls_kafka_AlterClientQuotasResponse r;
    int code = -1000;
    if (alter(&e, 1, validate_only, &r, a) == 0 && r.NumEntries == 1) {
        code = r.Entries[0].ErrorCode;
        if (msg)
            snprintf(msg, msglen, "%.*s",
                     r.Entries[0].ErrorMessage.len > 0 ? r.Entries[0].ErrorMessage.len : 0,
                     r.Entries[0].ErrorMessage.ptr ? r.Entries[0].ErrorMessage.ptr : "");
    }
    ls_arena_free(a);
    return code;
}

/* DescribeClientQuotas v1 of components c[0..n): 0 with the answer in *r,
 * or -1. */
static int describe(comp_t *c, int n, bool strict, ls_kafka_DescribeClientQuotasResponse *r,
                    ls_arena_t *a)
{
    ls_kafka_DescribeClientQuotasRequest m = {
        .Components = c, .NumComponents = n, .Strict = strict};
    return kf_call(&E, 48, 1, &m, r, a);
}

/* The value of key of user name (NULL: the default user) as a strict
 * describe by exact name (or of the default entity) finds it; -1: no
 * entry, -2: no such key, -1000: an error. */
static double user_value(const char *name, const char *key)
{
    comp_t c = {ls_kstr_c("user"), name ? 0 : 1, kname(name)};
    ls_arena_t *a = ls_arena_new();
    ls_kafka_DescribeClientQuotasResponse r;
    double v = -1000;
    if (describe(&c, 1, true, &r, a) == 0 && r.ErrorCode == LS_KERR_NONE) {
        v = r.NumEntries == 0 ? -1 : -2;
        for (int32_t i = 0; r.NumEntries == 1 && i < r.Entries[0].NumValues; i++)
            if (ls_kstr_eq(r.Entries[0].Values[i].Key, key)) v = r.Entries[0].Values[i].Value;
    }
    ls_arena_free(a);
    return v;
}

TEST(alter_then_describe_by_name)
{
    CHECK_EQ_INT(alter_user("q-alice", "producer_byte_rate", 1048576, false, false, NULL, 0),
                 LS_KERR_NONE);
    CHECK(user_value("q-alice", "producer_byte_rate") == 1048576);
    CHECK(user_value("q-alice", "consumer_byte_rate") == -2);
    /* removing the only key removes the entry */
    CHECK_EQ_INT(alter_user("q-alice", "producer_byte_rate", 0, true, false, NULL, 0),
                 LS_KERR_NONE);
    CHECK(user_value("q-alice", "producer_byte_rate") == -1);
}

TEST(default_entity_is_a_null_name)
{
    CHECK_EQ_INT(alter_user(NULL, "request_percentage", 12.5, false, false, NULL, 0), LS_KERR_NONE);
    CHECK(user_value(NULL, "request_percentage") == 12.5);
    comp_t c = {ls_kstr_c("user"), 1, ls_kstr_null()};
    ls_arena_t *a = ls_arena_new();
    ls_kafka_DescribeClientQuotasResponse r;
    CHECK(describe(&c, 1, false, &r, a) == 0);
    CHECK_EQ_INT(r.NumEntries, 1);
    CHECK_EQ_INT(r.Entries[0].NumEntity, 1);
    CHECK(ls_kstr_eq(r.Entries[0].Entity[0].EntityType, "user"));
    CHECK_EQ_INT(r.Entries[0].Entity[0].EntityName.len, -1);
    ls_arena_free(a);
    CHECK_EQ_INT(alter_user(NULL, "request_percentage", 0, true, false, NULL, 0), LS_KERR_NONE);
}

TEST(match_any_and_strict)
{
    /* user q-bob with client-id q-app, and user q-carol alone */
    aentity_t both[2] = {{ls_kstr_c("user"), ls_kstr_c("q-bob")},
                         {ls_kstr_c("client-id"), ls_kstr_c("q-app")}};
    aentity_t carol = {ls_kstr_c("user"), ls_kstr_c("q-carol")};
    op_t op = {ls_kstr_c("consumer_byte_rate"), 2048, false};
    aentry_t e[2] = {{.Entity = both, .NumEntity = 2, .Ops = &op, .NumOps = 1},
                     {.Entity = &carol, .NumEntity = 1, .Ops = &op, .NumOps = 1}};
    ls_arena_t *a = ls_arena_new();
    ls_kafka_AlterClientQuotasResponse ar;
    CHECK(alter(e, 2, false, &ar, a) == 0);
    CHECK_EQ_INT(ar.NumEntries, 2);
    CHECK_EQ_INT(ar.Entries[0].ErrorCode, LS_KERR_NONE);
    CHECK_EQ_INT(ar.Entries[0].NumEntity, 2);
    CHECK_EQ_INT(ar.Entries[1].ErrorCode, LS_KERR_NONE);

    /* any client-id: only the entry that has one */
    comp_t any = {ls_kstr_c("client-id"), 2, ls_kstr_null()};
    ls_kafka_DescribeClientQuotasResponse r;
    CHECK(describe(&any, 1, false, &r, a) == 0);
    CHECK_EQ_INT(r.ErrorCode, LS_KERR_NONE);
    CHECK_EQ_INT(r.NumEntries, 1);
    CHECK_EQ_INT(r.Entries[0].NumEntity, 2);
    CHECK(ls_kstr_eq(r.Entries[0].Entity[1].EntityName, "q-app"));
    CHECK_EQ_INT(r.Entries[0].NumValues, 1);
    CHECK(ls_kstr_eq(r.Entries[0].Values[0].Key, "consumer_byte_rate"));
    CHECK(r.Entries[0].Values[0].Value == 2048);

    /* user q-bob strictly: the entry also has a client-id, so none */
    CHECK(user_value("q-bob", "consumer_byte_rate") == -1);
    comp_t bob = {ls_kstr_c("user"), 0, ls_kstr_c("q-bob")};
    CHECK(describe(&bob, 1, false, &r, a) == 0);
    CHECK_EQ_INT(r.NumEntries, 1);
    CHECK(user_value("q-carol", "consumer_byte_rate") == 2048);
    ls_arena_free(a);
}

TEST(validate_only_stores_nothing)
{
    CHECK_EQ_INT(alter_user("q-dave", "producer_byte_rate", 4096, false, true, NULL, 0),
                 LS_KERR_NONE);
    CHECK(user_value("q-dave", "producer_byte_rate") == -1);
}

TEST(unknown_key_is_invalid_naming_it)
{
    char msg[256];
    CHECK_EQ_INT(alter_user("q-eve", "no_such_rate", 10, false, false, msg, sizeof msg),
                 LS_KERR_INVALID_REQUEST);
    CHECK(strstr(msg, "no_such_rate") != NULL);
    CHECK(user_value("q-eve", "no_such_rate") == -1);
}

TEST(non_positive_or_fractional_value_is_invalid)
{
    char msg[256];
    CHECK_EQ_INT(alter_user("q-eve", "producer_byte_rate", 0, false, false, msg, sizeof msg),
                 LS_KERR_INVALID_REQUEST);
    CHECK(strstr(msg, "producer_byte_rate") && strstr(msg, "positive"));
    CHECK_EQ_INT(alter_user("q-eve", "consumer_byte_rate", 10.5, false, false, msg, sizeof msg),
                 LS_KERR_INVALID_REQUEST);
    CHECK(strstr(msg, "consumer_byte_rate") && strstr(msg, "whole"));
    CHECK(user_value("q-eve", "consumer_byte_rate") == -1);
}

TEST(bad_entities_are_invalid)
{
    aentity_t ip = {ls_kstr_c("ip"), ls_kstr_c("10.0.0.1")};
    aentity_t twice[2] = {{ls_kstr_c("user"), ls_kstr_c("a")}, {ls_kstr_c("user"), ls_kstr_c("b")}};
    aentity_t odd = {ls_kstr_c("tenant"), ls_kstr_c("t")};
    aentity_t good = {ls_kstr_c("user"), ls_kstr_c("q-frank")};
    op_t op = {ls_kstr_c("producer_byte_rate"), 1000, false};
    op_t dup[2] = {op, op};
    aentry_t e[5] = {{.Entity = &ip, .NumEntity = 1, .Ops = &op, .NumOps = 1},
                     {.Entity = twice, .NumEntity = 2, .Ops = &op, .NumOps = 1},
                     {.Entity = &odd, .NumEntity = 1, .Ops = &op, .NumOps = 1},
                     {.Entity = NULL, .NumEntity = 0, .Ops = &op, .NumOps = 1},
                     {.Entity = &good, .NumEntity = 1, .Ops = dup, .NumOps = 2}};
    ls_arena_t *a = ls_arena_new();
    ls_kafka_AlterClientQuotasResponse r;
    CHECK(alter(e, 5, false, &r, a) == 0);
    CHECK_EQ_INT(r.NumEntries, 5);
    for (int i = 0; i < 5; i++)
        CHECK_EQ_INT(r.Entries[i].ErrorCode, LS_KERR_INVALID_REQUEST);
    CHECK(kf_kstr_has(r.Entries[0].ErrorMessage, "'ip'"));
    CHECK(kf_kstr_has(r.Entries[1].ErrorMessage, "'user' given twice"));
    CHECK(kf_kstr_has(r.Entries[2].ErrorMessage, "'tenant'"));
    CHECK(kf_kstr_has(r.Entries[3].ErrorMessage, "no type"));
    CHECK(kf_kstr_has(r.Entries[4].ErrorMessage, "'producer_byte_rate' given twice"));
    ls_arena_free(a);
    CHECK(user_value("q-frank", "producer_byte_rate") == -1);
}

TEST(one_invalid_entry_does_not_stop_the_others)
{
    aentity_t ok = {ls_kstr_c("user"), ls_kstr_c("q-gina")};
    aentity_t bad = {ls_kstr_c("user"), ls_kstr_c("q-hal")};
    op_t good_op = {ls_kstr_c("producer_byte_rate"), 3000, false};
    op_t bad_op = {ls_kstr_c("producer_byte_rate"), -3, false};
    aentry_t e[2] = {{.Entity = &ok, .NumEntity = 1, .Ops = &good_op, .NumOps = 1},
                     {.Entity = &bad, .NumEntity = 1, .Ops = &bad_op, .NumOps = 1}};
    ls_arena_t *a = ls_arena_new();
    ls_kafka_AlterClientQuotasResponse r;
    CHECK(alter(e, 2, false, &r, a) == 0);
    CHECK_EQ_INT(r.Entries[0].ErrorCode, LS_KERR_NONE);
    CHECK_EQ_INT(r.Entries[1].ErrorCode, LS_KERR_INVALID_REQUEST);
    ls_arena_free(a);
    CHECK(user_value("q-gina", "producer_byte_rate") == 3000);
    CHECK(user_value("q-hal", "producer_byte_rate") == -1);
}

TEST(describe_bad_filters_are_invalid)
{
    comp_t ip = {ls_kstr_c("ip"), 2, ls_kstr_null()};
    comp_t twice[2] = {{ls_kstr_c("user"), 2, ls_kstr_null()},
                       {ls_kstr_c("user"), 1, ls_kstr_null()}};
    comp_t bad_type = {ls_kstr_c("user"), 5, ls_kstr_null()};
    comp_t named_any = {ls_kstr_c("user"), 2, ls_kstr_c("x")};
    struct {
        comp_t *c;
        int n;
        const char *says;
    } cases[] = {{&ip, 1, "'ip'"},
                 {twice, 2, "appears twice"},
                 {&bad_type, 1, "match type 5"},
                 {&named_any, 1, "names one"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ls_arena_t *a = ls_arena_new();
        ls_kafka_DescribeClientQuotasResponse r;
        int rc = describe(cases[i].c, cases[i].n, false, &r, a);
        int code = rc == 0 ? r.ErrorCode : -1000;
        bool says = rc == 0 && kf_kstr_has(r.ErrorMessage, cases[i].says);
        ls_arena_free(a);
        CHECK_EQ_INT(code, LS_KERR_INVALID_REQUEST);
        CHECK(says);
    }
}

TEST(cluster_authorization_failed)
{
    CHECK(kf_authz_on(&E, NULL) == 0);
    int alter_code = alter_user("q-ivy", "producer_byte_rate", 100, false, false, NULL, 0);
    comp_t any = {ls_kstr_c("user"), 2, ls_kstr_null()};
    ls_arena_t *a = ls_arena_new();
    ls_kafka_DescribeClientQuotasResponse r;
    int rc = describe(&any, 1, false, &r, a);
    kf_authz_off(&E);
    CHECK_EQ_INT(alter_code, LS_KERR_CLUSTER_AUTHORIZATION_FAILED);
    CHECK(rc == 0);
    CHECK_EQ_INT(r.ErrorCode, LS_KERR_CLUSTER_AUTHORIZATION_FAILED);
    CHECK(r.NumEntries <= 0);
    ls_arena_free(a);
    CHECK(user_value("q-ivy", "producer_byte_rate") == -1);
}

TEST(describe_authorization_comes_before_validation)
{
    /* as Kafka: a principal without CLUSTER DESCRIBE_CONFIGS learns nothing
     * about its filter */
    comp_t ip = {ls_kstr_c("ip"), 2, ls_kstr_null()};
    CHECK(kf_authz_on(&E, NULL) == 0);
    ls_arena_t *a = ls_arena_new();
    ls_kafka_DescribeClientQuotasResponse r;
    int rc = describe(&ip, 1, false, &r, a);
    kf_authz_off(&E);
    CHECK(rc == 0);
    CHECK_EQ_INT(r.ErrorCode, LS_KERR_CLUSTER_AUTHORIZATION_FAILED);
    ls_arena_free(a);
}

TEST(altered_quota_is_enforced)
{ /* what AlterClientQuotas stores, Produce meets: the answer carries a
   * throttle time (the connection is then muted that long: this test runs
   * last) */
    aentity_t en = {ls_kstr_c("client-id"), ls_kstr_c("unit")}; /* the harness's client id */
    op_t op = {ls_kstr_c("producer_byte_rate"), 1000, false};
    aentry_t e = {.Entity = &en, .NumEntity = 1, .Ops = &op, .NumOps = 1};
    ls_arena_t *a = ls_arena_new();
    ls_kafka_AlterClientQuotasResponse ar;
    CHECK(alter(&e, 1, false, &ar, a) == 0);
    CHECK_EQ_INT(ar.Entries[0].ErrorCode, LS_KERR_NONE);
    CHECK(kf_topic(&E, "q-throttled", 1) == 0);
    ls_buf_t b;
    kf_batch(&b, -1, -1, -1, 50000);
    kf_produce_t p;
    kf_produce_req(&p, "q-throttled", 0, &b);
    ls_kafka_ProduceResponse r;
    int rc = kf_call(&E, 0, 9, &p.m, &r, a);
    ls_buf_free(&b);
    CHECK(rc == 0);
    CHECK_EQ_INT(r.Responses[0].PartitionResponses[0].ErrorCode, LS_KERR_NONE);
    CHECK(r.ThrottleTimeMs > 0);
    ls_arena_free(a);
}

int main(void)
{
    if (kf_open(&E) != 0) return 1;
    RUN(alter_then_describe_by_name);
    RUN(default_entity_is_a_null_name);
    RUN(match_any_and_strict);
    RUN(validate_only_stores_nothing);
    RUN(unknown_key_is_invalid_naming_it);
    RUN(non_positive_or_fractional_value_is_invalid);
    RUN(bad_entities_are_invalid);
    RUN(one_invalid_entry_does_not_stop_the_others);
    RUN(describe_bad_filters_are_invalid);
    RUN(cluster_authorization_failed);
    RUN(describe_authorization_comes_before_validation);
    RUN(altered_quota_is_enforced);
    kf_close(&E);
    UNIT_DONE();
}
