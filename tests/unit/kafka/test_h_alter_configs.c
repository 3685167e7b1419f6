/* AlterConfigs and IncrementalAlterConfigs handlers
 * (kafka/h_alter_configs.c), through the handler harness (kafka_fake.h):
 * topic overrides are set, deleted and replaced whole as Kafka defines;
 * the dynamic broker configs (default broker resource) and a group's
 * configs are stored; every refusal carries Kafka's code
 * (INVALID_CONFIG, INVALID_REQUEST, UNKNOWN_TOPIC_OR_PARTITION,
 * INVALID_TOPIC_EXCEPTION, the resource's AUTHORIZATION_FAILED) with a
 * message naming the config, and leaves the stored set as it was;
 * validateOnly stores nothing. */
#include "group/group_configs.h"
#include "kafka/msg.h"
#include "kafka_fake.h"
#include "unit.h"

static kf_env_t E;

typedef ls_kafka_IncrementalAlterConfigsRequest_AlterableConfig iconf_t;
typedef ls_kafka_AlterConfigsRequest_AlterableConfig aconf_t;

static iconf_t set(const char *key, const char *value)
{
    return (iconf_t){ls_kstr_c(key), LS_KAFKA_CONFIG_OP_SET,
                     value ? ls_kstr_c(value) : ls_kstr_null()};
}

static iconf_t del(const char *key)
{
    return (iconf_t){ls_kstr_c(key), LS_KAFKA_CONFIG_OP_DELETE, ls_kstr_null()};
}

/* One resource's answer: its code, and its message in msg. */
typedef struct {
    int code; /* -1000: no answer */
    char msg[512];
} answer_t;

static answer_t answer_of(int rc, const ls_kafka_AlterConfigsResponse *r, int8_t type,
                          const char *name)
{
    answer_t out = {-1000, ""};
    if (rc != 0 || r->NumResponses != 1 || r->Responses[0].ResourceType != type ||
        !ls_kstr_eq(r->Responses[0].ResourceName, name))
        return out;
    out.code = r->Responses[0].ErrorCode;
    ls_kstr_t m = r->Responses[0].ErrorMessage;
    snprintf(out.msg, sizeof out.msg, "%.*s", m.len > 0 ? (int)m.len : 0, m.ptr ? m.ptr : "");
    return out;
}

/* IncrementalAlterConfigs v1 of one resource. */
static answer_t incremental(int8_t type, const char *name, iconf_t *c, int n, bool validate_only)
{
    ls_kafka_IncrementalAlterConfigsRequest_AlterConfigsResource res = {
        .ResourceType = type, .ResourceName = ls_kstr_c(name), .Configs = c, .NumConfigs = n};
    ls_kafka_IncrementalAlterConfigsRequest m = {
        .Resources = &res, .NumResources = 1, .ValidateOnly = validate_only};
    ls_arena_t *a = ls_arena_new();
    ls_kafka_IncrementalAlterConfigsResponse r;
    int rc = kf_call(&E, 44, 1, &m, &r, a);
    answer_t out = answer_of(rc, &r, type, name);
    ls_arena_free(a);
    return out;
}

/* AlterConfigs v2 of one resource (the whole new set). */
static answer_t legacy(int8_t type, const char *name, aconf_t *c, int n)
{
    ls_kafka_AlterConfigsRequest_AlterConfigsResource res = {
        .ResourceType = type, .ResourceName = ls_kstr_c(name), .Configs = c, .NumConfigs = n};
    ls_kafka_AlterConfigsRequest m = {.Resources = &res, .NumResources = 1};
    ls_arena_t *a = ls_arena_new();
    ls_kafka_AlterConfigsResponse r;
    int rc = kf_call(&E, 33, 2, &m, &r, a);
    answer_t out = answer_of(rc, &r, type, name);
    ls_arena_free(a);
    return out;
}

/* Whether topic's stored overrides hold key with value (value NULL: key
 * is not among them). */
static bool override_is(const char *topic, const char *key, const char *value)
{
    ls_stream_t *s = ls_catalog_lookup(E.catalog, LS_DEFAULT_NAMESPACE, topic);
    if (!s) return false;
    const char *got = NULL;
    for (int i = 0; i < s->nconfig; i++)
        if (strcmp(s->config[i].key, key) == 0) got = s->config[i].value;
    bool same = value ? got && strcmp(got, value) == 0 : got == NULL;
    ls_stream_release(s);
    return same;
}

/* The same for the dynamic broker configs. */
static bool broker_config_is(const char *key, const char *value)
{
    ls_namespace_t *n = ls_catalog_broker_config(E.catalog);
    const char *got = NULL;
    for (int i = 0; i < n->nprops; i++)
        if (strcmp(n->props[i].key, key) == 0) got = n->props[i].value;
    bool same = value ? got && strcmp(got, value) == 0 : got == NULL;
    ls_namespace_release(n);
    return same;
}

TEST(incremental_set_and_delete_a_topic_config)
{
    CHECK(kf_topic(&E, "ac-inc", 1) == 0);
    iconf_t c[2] = {set("retention.ms", "3600000"), set("cleanup.policy", "compact")};
    CHECK_EQ_INT(incremental(LS_KAFKA_RESOURCE_TOPIC, "ac-inc", c, 2, false).code, LS_KERR_NONE);
    CHECK(override_is("ac-inc", "retention.ms", "3600000"));
    CHECK(override_is("ac-inc", "cleanup.policy", "compact"));
    iconf_t d = del("retention.ms");
    CHECK_EQ_INT(incremental(LS_KAFKA_RESOURCE_TOPIC, "ac-inc", &d, 1, false).code, LS_KERR_NONE);
    CHECK(override_is("ac-inc", "retention.ms", NULL));
    CHECK(override_is("ac-inc", "cleanup.policy", "compact"));
}

TEST(legacy_alter_replaces_the_whole_set)
{
    CHECK(kf_topic(&E, "ac-legacy", 1) == 0);
    iconf_t c = set("retention.ms", "7200000");
    CHECK_EQ_INT(incremental(LS_KAFKA_RESOURCE_TOPIC, "ac-legacy", &c, 1, false).code,
                 LS_KERR_NONE);
    /* a key left out returns to its default; a null value is left out */
    aconf_t a[2] = {{ls_kstr_c("max.message.bytes"), ls_kstr_c("2097152")},
                    {ls_kstr_c("segment.ms"), ls_kstr_null()}};
    CHECK_EQ_INT(legacy(LS_KAFKA_RESOURCE_TOPIC, "ac-legacy", a, 2).code, LS_KERR_NONE);
    CHECK(override_is("ac-legacy", "max.message.bytes", "2097152"));
    CHECK(override_is("ac-legacy", "retention.ms", NULL));
    CHECK(override_is("ac-legacy", "segment.ms", NULL));
}

TEST(validate_only_stores_nothing)
{
    CHECK(kf_topic(&E, "ac-validate", 1) == 0);
    iconf_t c = set("retention.ms", "1000");
    CHECK_EQ_INT(incremental(LS_KAFKA_RESOURCE_TOPIC, "ac-validate", &c, 1, true).code,
                 LS_KERR_NONE);
    CHECK(override_is("ac-validate", "retention.ms", NULL));
    iconf_t bad = set("retention.ms", "soon");
    CHECK_EQ_INT(incremental(LS_KAFKA_RESOURCE_TOPIC, "ac-validate", &bad, 1, true).code,
                 LS_KERR_INVALID_CONFIG);
}

TEST(invalid_values_name_the_config)
{
    CHECK(kf_topic(&E, "ac-bad", 1) == 0);
    struct {
        iconf_t c;
        const char *says;
    } cases[] = {
        {set("retention.ms", "soon"), "Invalid value soon for configuration retention.ms"},
        {set("cleanup.policy", "shred"), "cleanup.policy"},
        {set("min.insync.replicas", "0"), "min.insync.replicas: Value must be at least 1"},
        {set("no.such.config", "1"), "Unknown topic config name: no.such.config"},
        {set("retention.ms", NULL), "'retention.ms' has a null value"},
        {set(LS_KAFKA_RF_KEY, "3"), LS_KAFKA_RF_KEY},
        {del(LS_KAFKA_RF_KEY), "maintained by the broker"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        answer_t r = incremental(LS_KAFKA_RESOURCE_TOPIC, "ac-bad", &cases[i].c, 1, false);
        if (r.code != LS_KERR_INVALID_CONFIG || !strstr(r.msg, cases[i].says))
            printf("# case %zu: %d %s\n", i, r.code, r.msg);
        CHECK_EQ_INT(r.code, LS_KERR_INVALID_CONFIG);
        CHECK(strstr(r.msg, cases[i].says) != NULL);
    }
    CHECK(override_is("ac-bad", "retention.ms", NULL));
    CHECK(override_is("ac-bad", "cleanup.policy", NULL));
}

TEST(a_refused_config_refuses_the_whole_resource)
{
    CHECK(kf_topic(&E, "ac-whole", 1) == 0);
    iconf_t c[2] = {set("retention.ms", "5000"), set("retention.bytes", "lots")};
    answer_t r = incremental(LS_KAFKA_RESOURCE_TOPIC, "ac-whole", c, 2, false);
    CHECK_EQ_INT(r.code, LS_KERR_INVALID_CONFIG);
    CHECK(strstr(r.msg, "retention.bytes") != NULL);
    CHECK(override_is("ac-whole", "retention.ms", NULL));
}

TEST(bad_operations_are_invalid_requests)
{
    CHECK(kf_topic(&E, "ac-ops", 1) == 0);
    iconf_t twice[2] = {set("retention.ms", "5000"), set("retention.ms", "6000")};
    answer_t r = incremental(LS_KAFKA_RESOURCE_TOPIC, "ac-ops", twice, 2, false);
    CHECK_EQ_INT(r.code, LS_KERR_INVALID_REQUEST);
    CHECK(strstr(r.msg, "'retention.ms' is given twice") != NULL);
    iconf_t append = {ls_kstr_c("cleanup.policy"), LS_KAFKA_CONFIG_OP_APPEND, ls_kstr_c("compact")};
    r = incremental(LS_KAFKA_RESOURCE_TOPIC, "ac-ops", &append, 1, false);
    CHECK_EQ_INT(r.code, LS_KERR_INVALID_REQUEST);
    CHECK(strstr(r.msg, "APPEND and SUBTRACT") != NULL);
    iconf_t odd = {ls_kstr_c("retention.ms"), 9, ls_kstr_c("1")};
    r = incremental(LS_KAFKA_RESOURCE_TOPIC, "ac-ops", &odd, 1, false);
    CHECK_EQ_INT(r.code, LS_KERR_INVALID_REQUEST);
    CHECK(strstr(r.msg, "unknown operation 9") != NULL);
    CHECK(override_is("ac-ops", "retention.ms", NULL));
    CHECK(override_is("ac-ops", "cleanup.policy", NULL));
}

TEST(unknown_or_illegal_topic)
{
    iconf_t c = set("retention.ms", "5000");
    answer_t r = incremental(LS_KAFKA_RESOURCE_TOPIC, "ac-nosuch", &c, 1, false);
    CHECK_EQ_INT(r.code, LS_KERR_UNKNOWN_TOPIC_OR_PARTITION);
    CHECK(strstr(r.msg, "ac-nosuch") != NULL);
    r = incremental(LS_KAFKA_RESOURCE_TOPIC, "bad/name", &c, 1, false);
    CHECK_EQ_INT(r.code, LS_KERR_INVALID_TOPIC_EXCEPTION);
    CHECK(kf_hwm(&E, "ac-nosuch", 0) == -1); /* not created on the way */
}

TEST(unsupported_resource_type)
{
    iconf_t c = set("interval.ms", "5000");
    answer_t r = incremental(99, "metrics", &c, 1, false);
    CHECK_EQ_INT(r.code, LS_KERR_INVALID_REQUEST);
    CHECK(strstr(r.msg, "Unsupported resource type 99") != NULL);
}

TEST(dynamic_broker_config)
{
    iconf_t c = set("log.retention.ms", "86400000");
    CHECK_EQ_INT(incremental(LS_KAFKA_RESOURCE_BROKER, "", &c, 1, false).code, LS_KERR_NONE);
    CHECK(broker_config_is("log.retention.ms", "86400000"));
    iconf_t d = del("log.retention.ms");
    CHECK_EQ_INT(incremental(LS_KAFKA_RESOURCE_BROKER, "", &d, 1, false).code, LS_KERR_NONE);
    CHECK(broker_config_is("log.retention.ms", NULL));
}

TEST(broker_config_refusals)
{
    /* one broker's resource: there is no per-broker layer */
    iconf_t c = set("log.retention.ms", "1000");
    answer_t r = incremental(LS_KAFKA_RESOURCE_BROKER, "1", &c, 1, false);
    CHECK_EQ_INT(r.code, LS_KERR_INVALID_REQUEST);
    CHECK(strstr(r.msg, "default broker resource") != NULL);
    /* a static setting and an unknown one, each named */
    iconf_t stat = set("data.dir", "/tmp/x");
    r = incremental(LS_KAFKA_RESOURCE_BROKER, "", &stat, 1, false);
    CHECK_EQ_INT(r.code, LS_KERR_INVALID_CONFIG);
    CHECK(strstr(r.msg, "data.dir cannot be changed dynamically") != NULL);
    iconf_t unknown = set("no.such.broker.config", "1");
    r = incremental(LS_KAFKA_RESOURCE_BROKER, "", &unknown, 1, false);
    CHECK_EQ_INT(r.code, LS_KERR_INVALID_CONFIG);
    CHECK(strstr(r.msg, "no.such.broker.config") != NULL);
    iconf_t range = set("message.max.bytes", "-5");
    r = incremental(LS_KAFKA_RESOURCE_BROKER, "", &range, 1, false);
    CHECK_EQ_INT(r.code, LS_KERR_INVALID_CONFIG);
    CHECK(strstr(r.msg, "message.max.bytes") != NULL);
    CHECK(broker_config_is("log.retention.ms", NULL));
    CHECK(broker_config_is("message.max.bytes", NULL));
}

TEST(group_config)
{
    iconf_t c = set(LS_GROUP_CONFIG_SHARE_RESET, "earliest");
    CHECK_EQ_INT(incremental(LS_KAFKA_RESOURCE_GROUP, "ac-group", &c, 1, false).code, LS_KERR_NONE);
    int32_t v = -1;
    CHECK(ls_group_configs_get(E.group_configs, "ac-group", LS_GROUP_CONFIG_SHARE_RESET, &v));
    CHECK_EQ_INT(v, 1);
    iconf_t bad = set(LS_GROUP_CONFIG_SHARE_RESET, "sometimes");
    answer_t r = incremental(LS_KAFKA_RESOURCE_GROUP, "ac-group", &bad, 1, false);
    CHECK_EQ_INT(r.code, LS_KERR_INVALID_CONFIG);
    CHECK(strstr(r.msg, LS_GROUP_CONFIG_SHARE_RESET) != NULL);
    iconf_t unknown = set("consumer.no.such", "1");
    r = incremental(LS_KAFKA_RESOURCE_GROUP, "ac-group", &unknown, 1, false);
    CHECK_EQ_INT(r.code, LS_KERR_INVALID_CONFIG);
    CHECK(strstr(r.msg, "consumer.no.such") != NULL);
    r = incremental(LS_KAFKA_RESOURCE_GROUP, "", &c, 1, false);
    CHECK_EQ_INT(r.code, LS_KERR_INVALID_REQUEST);
    CHECK(ls_group_configs_get(E.group_configs, "ac-group", LS_GROUP_CONFIG_SHARE_RESET, &v));
    CHECK_EQ_INT(v, 1);
}

TEST(authorization_failed_per_resource_type)
{
    CHECK(kf_topic(&E, "ac-denied", 1) == 0);
    CHECK(kf_authz_on(&E, NULL) == 0);
    iconf_t t = set("retention.ms", "1000");
    answer_t topic = incremental(LS_KAFKA_RESOURCE_TOPIC, "ac-denied", &t, 1, false);
    iconf_t b = set("log.retention.ms", "1000");
    answer_t broker = incremental(LS_KAFKA_RESOURCE_BROKER, "", &b, 1, false);
    iconf_t g = set(LS_GROUP_CONFIG_SHARE_RESET, "earliest");
    answer_t group = incremental(LS_KAFKA_RESOURCE_GROUP, "ac-denied-group", &g, 1, false);
    aconf_t a = {ls_kstr_c("retention.ms"), ls_kstr_c("1000")};
    answer_t old = legacy(LS_KAFKA_RESOURCE_TOPIC, "ac-denied", &a, 1);
    kf_authz_off(&E);
    CHECK_EQ_INT(topic.code, LS_KERR_TOPIC_AUTHORIZATION_FAILED);
    CHECK_EQ_INT(broker.code, LS_KERR_CLUSTER_AUTHORIZATION_FAILED);
    CHECK_EQ_INT(group.code, LS_KERR_GROUP_AUTHORIZATION_FAILED);
    CHECK_EQ_INT(old.code, LS_KERR_TOPIC_AUTHORIZATION_FAILED);
    CHECK(override_is("ac-denied", "retention.ms", NULL));
    CHECK(broker_config_is("log.retention.ms", NULL));
    int32_t v;
    CHECK(
        !ls_group_configs_get(E.group_configs, "ac-denied-group", LS_GROUP_CONFIG_SHARE_RESET, &v));
}

int main(void)
{
    if (kf_open(&E) != 0) return 1;
    RUN(incremental_set_and_delete_a_topic_config);
    RUN(legacy_alter_replaces_the_whole_set);
    RUN(validate_only_stores_nothing);
    RUN(invalid_values_name_the_config);
    RUN(a_refused_config_refuses_the_whole_resource);
    RUN(bad_operations_are_invalid_requests);
    RUN(unknown_or_illegal_topic);
    RUN(unsupported_resource_type);
    RUN(dynamic_broker_config);
    RUN(broker_config_refusals);
    RUN(group_config);
    RUN(authorization_failed_per_resource_type);
    kf_close(&E);
    UNIT_DONE();
}
