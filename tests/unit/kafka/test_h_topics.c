/* CreateTopics / DeleteTopics handlers (kafka/h_topics.c) error paths,
 * through the handler harness (kafka_fake.h): the exact Kafka error code
 * per topic, and that the catalog did not change. */
#include "kafka_fake.h"
#include "security/authz.h"
#include "unit.h"

static kf_env_t E;

/* CreateTopics v7 of one topic (one config name=value when cname); its
 * error code, or -1000. */
static int create(const char *name, int32_t partitions, int16_t rf, const char *cname,
                  const char *cvalue)
{
    ls_kafka_CreateTopicsRequest_CreatableTopicConfig c = {0};
    ls_kafka_CreateTopicsRequest_CreatableTopic t = {.Name = {name, (int32_t)strlen(name)},
                                                     .NumPartitions = partitions,
                                                     .ReplicationFactor = rf};
    if (cname) {
        c.Name = (ls_kstr_t){cname, (int32_t)strlen(cname)};
        c.Value = (ls_kstr_t){cvalue, (int32_t)strlen(cvalue)};
        t.Configs = &c;
        t.NumConfigs = 1;
    }
    ls_kafka_CreateTopicsRequest m = {.Topics = &t, .NumTopics = 1, .TimeoutMs = 30000};
    ls_arena_t *a = ls_arena_new();
    ls_kafka_CreateTopicsResponse r;
    int code = -1000;
    if (kf_call(&E, 19, 7, &m, &r, a) == 0 && r.NumTopics == 1) code = r.Topics[0].ErrorCode;
    ls_arena_free(a);
    return code;
}

/* DeleteTopics v6 of one topic by name (id NULL) or id; its error code. */
static int delete_topic(const char *name, const ls_uuid_t *id)
{
    ls_kafka_DeleteTopicsRequest_DeleteTopicState t = {.Name = {NULL, -1}};
    if (name) t.Name = (ls_kstr_t){name, (int32_t)strlen(name)};
    if (id) t.TopicId = *id;
    ls_kafka_DeleteTopicsRequest m = {.Topics = &t, .NumTopics = 1, .TimeoutMs = 30000};
    ls_arena_t *a = ls_arena_new();
    ls_kafka_DeleteTopicsResponse r;
    int code = -1000;
    if (kf_call(&E, 20, 6, &m, &r, a) == 0 && r.NumResponses == 1) code = r.Responses[0].ErrorCode;
    ls_arena_free(a);
    return code;
}

static int32_t partitions_of(const char *topic)
{
    ls_stream_t *s = ls_catalog_lookup(E.catalog, LS_DEFAULT_NAMESPACE, topic);
    if (!s) return -1;
    int32_t n = s->partitions;
    ls_stream_release(s);
    return n;
}

TEST(creates_and_deletes)
{ /* the baseline the error tests compare with */
    CHECK_EQ_INT(create("t-good", 3, -1, NULL, NULL), LS_KERR_NONE);
    CHECK_EQ_INT(partitions_of("t-good"), 3);
    CHECK_EQ_INT(delete_topic("t-good", NULL), LS_KERR_NONE);
    CHECK_EQ_INT(partitions_of("t-good"), -1);
}

TEST(topic_already_exists)
{
    CHECK(kf_topic(&E, "t-exists", 2) == 0);
    CHECK_EQ_INT(create("t-exists", 5, -1, NULL, NULL), LS_KERR_TOPIC_ALREADY_EXISTS);
    CHECK_EQ_INT(partitions_of("t-exists"), 2);
}

TEST(invalid_partitions)
{
    CHECK_EQ_INT(create("t-zero", 0, -1, NULL, NULL), LS_KERR_INVALID_PARTITIONS);
    CHECK_EQ_INT(partitions_of("t-zero"), -1);
}

TEST(invalid_topic_name)
{
    CHECK_EQ_INT(create("bad/name", 1, -1, NULL, NULL), LS_KERR_INVALID_TOPIC_EXCEPTION);
    CHECK_EQ_INT(partitions_of("bad/name"), -1);
}

TEST(invalid_config)
{
    CHECK_EQ_INT(create("t-badcfg", 1, -1, "retention.ms", "soon"), LS_KERR_INVALID_CONFIG);
    CHECK_EQ_INT(partitions_of("t-badcfg"), -1);
}

TEST(delete_unknown_topic)
{
    CHECK_EQ_INT(delete_topic("t-nosuch", NULL), LS_KERR_UNKNOWN_TOPIC_OR_PARTITION);
}

TEST(delete_unknown_topic_id)
{
    ls_uuid_t id;
    memset(&id, 0x77, sizeof id);
    CHECK_EQ_INT(delete_topic(NULL, &id), LS_KERR_UNKNOWN_TOPIC_ID);
}

TEST(topic_authorization_failed)
{
    CHECK(kf_topic(&E, "t-denied", 1) == 0);
    char err[256];
    ls_authz_t *az = ls_authz_open(E.meta, NULL, false, err, sizeof err);
    CHECK(az != NULL);
    E.svc.authz = az;
    int created = create("t-denied-new", 1, -1, NULL, NULL);
    int deleted = delete_topic("t-denied", NULL);
    E.svc.authz = NULL;
    ls_authz_close(az);
    CHECK_EQ_INT(created, LS_KERR_TOPIC_AUTHORIZATION_FAILED);
    CHECK_EQ_INT(partitions_of("t-denied-new"), -1);
    CHECK_EQ_INT(deleted, LS_KERR_TOPIC_AUTHORIZATION_FAILED);
    CHECK_EQ_INT(partitions_of("t-denied"), 1);
}

int main(void)
{
    if (kf_open(&E) != 0) return 1;
    RUN(creates_and_deletes);
    RUN(topic_already_exists);
    RUN(invalid_partitions);
    RUN(invalid_topic_name);
    RUN(invalid_config);
    RUN(delete_unknown_topic);
    RUN(delete_unknown_topic_id);
    RUN(topic_authorization_failed);
    kf_close(&E);
    UNIT_DONE();
}
