/* Metadata handler (kafka/h_metadata.c) error paths, through the handler
 * harness (kafka_fake.h): the exact Kafka error code per topic, and that
 * nothing was created. */
#include "kafka_fake.h"
#include "security/authz.h"
#include "unit.h"

static kf_env_t E;

/* Metadata v12 of one topic, by name (id NULL) or by id (name NULL),
 * without auto-creation; the topic's error code, or -1000. */
static int metadata(const char *name, const ls_uuid_t *id, bool autocreate)
{
    ls_kafka_MetadataRequest_MetadataRequestTopic t = {.Name = {NULL, -1}};
    if (name) t.Name = (ls_kstr_t){name, (int32_t)strlen(name)};
    if (id) t.TopicId = *id;
    ls_kafka_MetadataRequest m = {
        .Topics = &t, .NumTopics = 1, .AllowAutoTopicCreation = autocreate};
    ls_arena_t *a = ls_arena_new();
    ls_kafka_MetadataResponse r;
    int code = -1000;
    if (kf_call(&E, 3, 12, &m, &r, a) == 0 && r.NumTopics == 1) code = r.Topics[0].ErrorCode;
    ls_arena_free(a);
    return code;
}

TEST(known_topic)
{ /* the baseline the error tests compare with */
    CHECK(kf_topic(&E, "m-good", 2) == 0);
    CHECK_EQ_INT(metadata("m-good", NULL, false), LS_KERR_NONE);
}

TEST(unknown_topic)
{
    CHECK_EQ_INT(metadata("m-nosuch", NULL, false), LS_KERR_UNKNOWN_TOPIC_OR_PARTITION);
    CHECK_EQ_INT(kf_hwm(&E, "m-nosuch", 0), -1); /* not created */
}

TEST(unknown_topic_id)
{
    ls_uuid_t id;
    memset(&id, 0x3c, sizeof id);
    CHECK_EQ_INT(metadata(NULL, &id, false), LS_KERR_UNKNOWN_TOPIC_ID);
}

TEST(invalid_topic_name)
{
    E.cfg.auto_create_topics_enable = true;
    CHECK_EQ_INT(metadata("bad/name", NULL, true), LS_KERR_INVALID_TOPIC_EXCEPTION);
    CHECK_EQ_INT(kf_hwm(&E, "bad/name", 0), -1);
}

TEST(topic_authorization_failed)
{
    CHECK(kf_topic(&E, "m-denied", 1) == 0);
    char err[256];
    ls_authz_t *az = ls_authz_open(E.meta, NULL, false, err, sizeof err);
    CHECK(az != NULL);
    E.svc.authz = az;
    int code = metadata("m-denied", NULL, false);
    E.svc.authz = NULL;
    ls_authz_close(az);
    CHECK_EQ_INT(code, LS_KERR_TOPIC_AUTHORIZATION_FAILED);
}

int main(void)
{
    if (kf_open(&E) != 0) return 1;
    RUN(known_topic);
    RUN(unknown_topic);
    RUN(unknown_topic_id);
    RUN(invalid_topic_name);
    RUN(topic_authorization_failed);
    kf_close(&E);
    UNIT_DONE();
}
