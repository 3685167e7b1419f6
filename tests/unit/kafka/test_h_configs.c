/* DescribeConfigs and ListConfigResources handlers (kafka/h_configs.c),
 * through the handler harness (kafka_fake.h): a topic config's value and
 * source follow its layers (the topic's override, the cluster's dynamic
 * broker config, Kafka's default) with those layers as synonyms; the
 * default broker resource lists only the dynamic configs set, one broker's
 * every setting with store URLs sensitive; a group's configs; the keys
 * asked for only; Kafka's refusals (UNKNOWN_TOPIC_OR_PARTITION,
 * INVALID_TOPIC_EXCEPTION, INVALID_REQUEST naming the resource, the
 * resource's AUTHORIZATION_FAILED). ListConfigResources names the live
 * broker, its logger, the topics and the groups with configs. */
#include "group/group_configs.h"
#include "kafka/msg.h"
#include "kafka_fake.h"
#include "unit.h"

static kf_env_t E;

typedef ls_kafka_DescribeConfigsResponse_DescribeConfigsResult result_t;
typedef ls_kafka_DescribeConfigsResponse_DescribeConfigsResourceResult entry_t;

/* DescribeConfigs v4 of one resource (keys[0..nkeys), nkeys -1: every
 * key), synonyms and documentation included: 0 with the result in *out,
 * or -1. */
static int describe(int8_t type, const char *name, const char *const *keys, int nkeys,
                    result_t *out, ls_arena_t *a)
{
    ls_kstr_t *k = nkeys > 0 ? ls_arena_alloc(a, (size_t)nkeys * sizeof *k) : NULL;
    for (int i = 0; i < nkeys; i++)
        k[i] = ls_kstr_c(keys[i]);
    ls_kafka_DescribeConfigsRequest_DescribeConfigsResource res = {.ResourceType = type,
                                                                   .ResourceName = ls_kstr_c(name),
                                                                   .ConfigurationKeys = k,
                                                                   .NumConfigurationKeys = nkeys};
    ls_kafka_DescribeConfigsRequest m = {.Resources = &res,
                                         .NumResources = 1,
                                         .IncludeSynonyms = true,
                                         .IncludeDocumentation = true};
    ls_kafka_DescribeConfigsResponse r;
    if (kf_call(&E, 32, 4, &m, &r, a) != 0 || r.NumResults != 1 ||
        r.Results[0].ResourceType != type || !ls_kstr_eq(r.Results[0].ResourceName, name))
        return -1;
    *out = r.Results[0];
    return 0;
}

static const entry_t *entry(const result_t *r, const char *key)
{
    for (int32_t i = 0; i < r->NumConfigs; i++)
        if (ls_kstr_eq(r->Configs[i].Name, key)) return &r->Configs[i];
    return NULL;
}

/* ---- the stores' state the tests describe */

typedef struct {
    const ls_prop_t *v;
    int n;
} props_t;

static ls_status props_replace(const ls_prop_t *cur, int ncur, void *arg, const ls_prop_t **out,
                               int *nout, char *err, size_t errlen)
{
    (void)cur, (void)ncur, (void)err, (void)errlen;
    const props_t *p = arg;
    *out = p->v;
    *nout = p->n;
    return LS_OK;
}

/* Replaces the cluster's dynamic broker configs with v[0..n). */
static int set_broker_configs(const ls_prop_t *v, int n)
{
    props_t p = {v, n};
    char err[256];
    return ls_catalog_update_broker_config(E.catalog, props_replace, &p, err, sizeof err) == LS_OK
               ? 0
               : -1;
}

/* Creates topic with one override key=value. */
static int topic_with(const char *topic, const char *key, const char *value)
{
    ls_prop_t p = {(char *)key, (char *)value};
    char err[256];
    return ls_catalog_create(E.catalog, LS_DEFAULT_NAMESPACE, topic, 1, &p, 1, 0, NULL, err,
                             sizeof err) == LS_OK
               ? 0
               : -1;
}

TEST(topic_override_default_and_their_synonyms)
{
    CHECK(topic_with("dc-topic", "retention.ms", "1000") == 0);
    ls_arena_t *a = ls_arena_new();
    result_t r;
    CHECK(describe(LS_KAFKA_RESOURCE_TOPIC, "dc-topic", NULL, -1, &r, a) == 0);
    CHECK_EQ_INT(r.ErrorCode, LS_KERR_NONE);
    const entry_t *e = entry(&r, "retention.ms");
    CHECK(e != NULL);
    CHECK(ls_kstr_eq(e->Value, "1000"));
    CHECK_EQ_INT(e->ConfigSource, LS_KAFKA_CONFIG_SOURCE_TOPIC_CONFIG);
    CHECK_EQ_INT(e->ConfigType, LS_KAFKA_CONFIG_TYPE_LONG);
    CHECK(!e->ReadOnly);
    CHECK(e->Documentation.len > 0);
    /* the override, then Kafka's default under the broker setting's name */
    CHECK_EQ_INT(e->NumSynonyms, 2);
    CHECK_EQ_INT(e->Synonyms[0].Source, LS_KAFKA_CONFIG_SOURCE_TOPIC_CONFIG);
    CHECK(ls_kstr_eq(e->Synonyms[1].Name, "log.retention.ms"));
    CHECK(ls_kstr_eq(e->Synonyms[1].Value, "604800000"));
    CHECK_EQ_INT(e->Synonyms[1].Source, LS_KAFKA_CONFIG_SOURCE_DEFAULT_CONFIG);
    e = entry(&r, "cleanup.policy");
    CHECK(e != NULL);
    CHECK(ls_kstr_eq(e->Value, "delete"));
    CHECK_EQ_INT(e->ConfigSource, LS_KAFKA_CONFIG_SOURCE_DEFAULT_CONFIG);
    CHECK(entry(&r, "min.insync.replicas") != NULL);
    CHECK(entry(&r, "lakestream.table.enabled") != NULL); /* the table policy too */
    ls_arena_free(a);
}

TEST(only_the_keys_asked_for)
{
    CHECK(topic_with("dc-keys", "cleanup.policy", "compact") == 0);
    const char *keys[2] = {"cleanup.policy", "no.such.key"};
    ls_arena_t *a = ls_arena_new();
    result_t r;
    CHECK(describe(LS_KAFKA_RESOURCE_TOPIC, "dc-keys", keys, 2, &r, a) == 0);
    CHECK_EQ_INT(r.ErrorCode, LS_KERR_NONE);
    CHECK_EQ_INT(r.NumConfigs, 1);
    CHECK(ls_kstr_eq(r.Configs[0].Name, "cleanup.policy"));
    CHECK(ls_kstr_eq(r.Configs[0].Value, "compact"));
    ls_arena_free(a);
}

TEST(dynamic_broker_config_supplies_a_topic_default)
{
    CHECK(kf_topic(&E, "dc-dynamic", 1) == 0);
    ls_prop_t dyn = {"log.retention.ms", "86400000"};
    CHECK(set_broker_configs(&dyn, 1) == 0);
    const char *key = "retention.ms";
    ls_arena_t *a = ls_arena_new();
    result_t t, b;
    int rc1 = describe(LS_KAFKA_RESOURCE_TOPIC, "dc-dynamic", &key, 1, &t, a);
    int rc2 = describe(LS_KAFKA_RESOURCE_BROKER, "", NULL, -1, &b, a);
    CHECK(set_broker_configs(NULL, 0) == 0);
    CHECK(rc1 == 0 && rc2 == 0);
    CHECK_EQ_INT(t.NumConfigs, 1);
    CHECK(ls_kstr_eq(t.Configs[0].Value, "86400000"));
    CHECK_EQ_INT(t.Configs[0].ConfigSource, LS_KAFKA_CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG);
    CHECK_EQ_INT(t.Configs[0].NumSynonyms, 2);
    CHECK(ls_kstr_eq(t.Configs[0].Synonyms[0].Name, "log.retention.ms"));
    CHECK_EQ_INT(t.Configs[0].Synonyms[1].Source, LS_KAFKA_CONFIG_SOURCE_DEFAULT_CONFIG);
    /* the default broker resource: only the dynamic configs set */
    CHECK_EQ_INT(b.ErrorCode, LS_KERR_NONE);
    CHECK_EQ_INT(b.NumConfigs, 1);
    CHECK(ls_kstr_eq(b.Configs[0].Name, "log.retention.ms"));
    CHECK(ls_kstr_eq(b.Configs[0].Value, "86400000"));
    ls_arena_free(a);
}

TEST(one_broker_lists_its_settings_with_urls_sensitive)
{
    ls_arena_t *a = ls_arena_new();
    result_t r;
    CHECK(describe(LS_KAFKA_RESOURCE_BROKER, "1", NULL, -1, &r, a) == 0);
    CHECK_EQ_INT(r.ErrorCode, LS_KERR_NONE);
    const entry_t *e = entry(&r, "object.store.url");
    CHECK(e != NULL);
    CHECK(e->IsSensitive);
    CHECK_EQ_INT(e->Value.len, -1);
    CHECK(e->ReadOnly);
    e = entry(&r, "broker.id");
    CHECK(e != NULL);
    CHECK(ls_kstr_eq(e->Value, "1"));
    e = entry(&r, "message.max.bytes"); /* a dynamic one: writable */
    CHECK(e != NULL);
    CHECK(!e->ReadOnly);
    CHECK_EQ_INT(e->ConfigSource, LS_KAFKA_CONFIG_SOURCE_DEFAULT_CONFIG);
    ls_arena_free(a);
}

TEST(another_broker_id_is_invalid)
{
    ls_arena_t *a = ls_arena_new();
    result_t r;
    CHECK(describe(LS_KAFKA_RESOURCE_BROKER, "7", NULL, -1, &r, a) == 0);
    CHECK_EQ_INT(r.ErrorCode, LS_KERR_INVALID_REQUEST);
    CHECK(kf_kstr_has(r.ErrorMessage, "received 7"));
    CHECK_EQ_INT(r.NumConfigs, 0);
    ls_arena_free(a);
}

TEST(group_configs_and_their_source)
{
    ls_group_config_op_t op = {LS_GROUP_CONFIG_SHARE_ISOLATION, "read_committed"};
    char err[256];
    CHECK(ls_group_configs_alter(E.group_configs, "dc-group", false, &op, 1, &KF_GROUP_DEFAULTS,
                                 false, err, sizeof err) == LS_OK);
    ls_arena_t *a = ls_arena_new();
    result_t r;
    CHECK(describe(LS_KAFKA_RESOURCE_GROUP, "dc-group", NULL, -1, &r, a) == 0);
    CHECK_EQ_INT(r.ErrorCode, LS_KERR_NONE);
    const entry_t *e = entry(&r, LS_GROUP_CONFIG_SHARE_ISOLATION);
    CHECK(e != NULL);
    CHECK(ls_kstr_eq(e->Value, "read_committed"));
    CHECK_EQ_INT(e->ConfigSource, LS_KAFKA_CONFIG_SOURCE_GROUP_CONFIG);
    e = entry(&r, LS_GROUP_CONFIG_SHARE_RESET);
    CHECK(e != NULL);
    CHECK(ls_kstr_eq(e->Value, "latest"));
    CHECK_EQ_INT(e->ConfigSource, LS_KAFKA_CONFIG_SOURCE_DEFAULT_CONFIG);
    CHECK(describe(LS_KAFKA_RESOURCE_GROUP, "", NULL, -1, &r, a) == 0);
    CHECK_EQ_INT(r.ErrorCode, LS_KERR_INVALID_REQUEST);
    ls_arena_free(a);
}

TEST(unknown_illegal_or_unsupported_resources)
{
    ls_arena_t *a = ls_arena_new();
    result_t r;
    CHECK(describe(LS_KAFKA_RESOURCE_TOPIC, "dc-nosuch", NULL, -1, &r, a) == 0);
    CHECK_EQ_INT(r.ErrorCode, LS_KERR_UNKNOWN_TOPIC_OR_PARTITION);
    CHECK(kf_kstr_has(r.ErrorMessage, "dc-nosuch"));
    CHECK(describe(LS_KAFKA_RESOURCE_TOPIC, "bad/name", NULL, -1, &r, a) == 0);
    CHECK_EQ_INT(r.ErrorCode, LS_KERR_INVALID_TOPIC_EXCEPTION);
    CHECK(describe(99, "m", NULL, -1, &r, a) == 0);
    CHECK_EQ_INT(r.ErrorCode, LS_KERR_INVALID_REQUEST);
    CHECK(kf_kstr_has(r.ErrorMessage, "resource type 99"));
    CHECK(describe(LS_KAFKA_RESOURCE_BROKER_LOGGER, "1", NULL, -1, &r, a) == 0);
    CHECK_EQ_INT(r.ErrorCode, LS_KERR_NONE);
    CHECK_EQ_INT(r.NumConfigs, 0);
    ls_arena_free(a);
}

TEST(describe_authorization_failed)
{
    CHECK(kf_topic(&E, "dc-denied", 1) == 0);
    CHECK(kf_authz_on(&E, NULL) == 0);
    ls_arena_t *a = ls_arena_new();
    result_t t, b, g;
    int rc1 = describe(LS_KAFKA_RESOURCE_TOPIC, "dc-denied", NULL, -1, &t, a);
    int rc2 = describe(LS_KAFKA_RESOURCE_BROKER, "1", NULL, -1, &b, a);
    int rc3 = describe(LS_KAFKA_RESOURCE_GROUP, "dc-group", NULL, -1, &g, a);
    kf_authz_off(&E);
    CHECK(rc1 == 0 && rc2 == 0 && rc3 == 0);
    CHECK_EQ_INT(t.ErrorCode, LS_KERR_TOPIC_AUTHORIZATION_FAILED);
    CHECK_EQ_INT(t.NumConfigs, 0);
    CHECK_EQ_INT(b.ErrorCode, LS_KERR_CLUSTER_AUTHORIZATION_FAILED);
    CHECK_EQ_INT(g.ErrorCode, LS_KERR_GROUP_AUTHORIZATION_FAILED);
    ls_arena_free(a);
}

/* ListConfigResources at version of types[0..n): 0 with the answer in *r,
 * or -1. */
static int list_resources(int16_t version, int8_t *types, int n,
                          ls_kafka_ListConfigResourcesResponse *r, ls_arena_t *a)
{
    ls_kafka_ListConfigResourcesRequest m = {.ResourceTypes = types, .NumResourceTypes = n};
    return kf_call(&E, 74, version, &m, r, a);
}

static bool listed(const ls_kafka_ListConfigResourcesResponse *r, int8_t type, const char *name)
{
    for (int32_t i = 0; i < r->NumConfigResources; i++)
        if (r->ConfigResources[i].ResourceType == type &&
            ls_kstr_eq(r->ConfigResources[i].ResourceName, name))
            return true;
    return false;
}

TEST(list_config_resources)
{
    CHECK(kf_topic(&E, "dc-listed", 1) == 0);
    ls_group_config_op_t op = {LS_GROUP_CONFIG_SHARE_RESET, "earliest"};
    char err[256];
    CHECK(ls_group_configs_alter(E.group_configs, "dc-listed-group", false, &op, 1,
                                 &KF_GROUP_DEFAULTS, false, err, sizeof err) == LS_OK);
    ls_arena_t *a = ls_arena_new();
    ls_kafka_ListConfigResourcesResponse r;
    CHECK(list_resources(1, NULL, 0, &r, a) == 0);
    CHECK_EQ_INT(r.ErrorCode, LS_KERR_NONE);
    CHECK(listed(&r, LS_KAFKA_RESOURCE_TOPIC, "dc-listed"));
    CHECK(listed(&r, LS_KAFKA_RESOURCE_BROKER, "1"));
    CHECK(listed(&r, LS_KAFKA_RESOURCE_BROKER_LOGGER, "1"));
    CHECK(listed(&r, LS_KAFKA_RESOURCE_GROUP, "dc-listed-group"));
    /* one type only */
    int8_t topics = LS_KAFKA_RESOURCE_TOPIC;
    CHECK(list_resources(1, &topics, 1, &r, a) == 0);
    CHECK_EQ_INT(r.ErrorCode, LS_KERR_NONE);
    CHECK(listed(&r, LS_KAFKA_RESOURCE_TOPIC, "dc-listed"));
    CHECK(!listed(&r, LS_KAFKA_RESOURCE_BROKER, "1"));
    /* v0 lists client-metrics subscriptions only: there are none */
    CHECK(list_resources(0, NULL, 0, &r, a) == 0);
    CHECK_EQ_INT(r.ErrorCode, LS_KERR_NONE);
    CHECK_EQ_INT(r.NumConfigResources, 0);
    ls_arena_free(a);
}

TEST(list_config_resources_refusals)
{
    int8_t any = 1; /* the ANY of ACL filters: not a config resource type */
    ls_arena_t *a = ls_arena_new();
    ls_kafka_ListConfigResourcesResponse r;
    CHECK(list_resources(1, &any, 1, &r, a) == 0);
    CHECK_EQ_INT(r.ErrorCode, LS_KERR_UNSUPPORTED_VERSION);
    CHECK_EQ_INT(r.NumConfigResources, 0);
    CHECK(kf_authz_on(&E, NULL) == 0);
    int rc = list_resources(1, NULL, 0, &r, a);
    kf_authz_off(&E);
    CHECK(rc == 0);
    CHECK_EQ_INT(r.ErrorCode, LS_KERR_CLUSTER_AUTHORIZATION_FAILED);
    CHECK_EQ_INT(r.NumConfigResources, 0);
    ls_arena_free(a);
}

int main(void)
{
    if (kf_open(&E) != 0) return 1;
    RUN(topic_override_default_and_their_synonyms);
    RUN(only_the_keys_asked_for);
    RUN(dynamic_broker_config_supplies_a_topic_default);
    RUN(one_broker_lists_its_settings_with_urls_sensitive);
    RUN(another_broker_id_is_invalid);
    RUN(group_configs_and_their_source);
    RUN(unknown_illegal_or_unsupported_resources);
    RUN(describe_authorization_failed);
    RUN(list_config_resources);
    RUN(list_config_resources_refusals);
    kf_close(&E);
    UNIT_DONE();
}
