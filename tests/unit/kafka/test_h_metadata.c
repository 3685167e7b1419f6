/* Metadata and DescribeCluster handler (kafka/h_metadata.c) error paths,
 * through the handler harness (kafka_fake.h): the exact Kafka error code per
 * topic, and that nothing was created; DescribeCluster's answer per
 * EndpointType. */
#include "kafka/msg.h"
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

/* DescribeCluster at version v asking for endpoint type `type`: its error
 * code (-1000 when the call failed); the response in *out. */
static int describe_cluster(int16_t v, int8_t type, ls_kafka_DescribeClusterResponse *out,
                            ls_arena_t *a)
{
    ls_kafka_DescribeClusterRequest m = {.EndpointType = type};
    if (kf_call(&E, 60, v, &m, out, a) != 0) return -1000;
    return out->ErrorCode;
}
TEST(describe_cluster_brokers)
{ /* the baseline: brokers are what this endpoint serves */
    ls_arena_t *a = ls_arena_new();
    ls_kafka_DescribeClusterResponse r;
    CHECK_EQ_INT(describe_cluster(1, LS_KAFKA_ENDPOINT_BROKER, &r, a), LS_KERR_NONE);
    CHECK_EQ_INT(r.EndpointType, LS_KAFKA_ENDPOINT_BROKER);
    CHECK_EQ_INT(r.NumBrokers, 1);
    ls_arena_free(a);
}
TEST(describe_cluster_controllers_mismatched_endpoint_type)
{ /* used to answer INVALID_REGISTRATION (119); Kafka's broker answers 114 */
    ls_arena_t *a = ls_arena_new();
    ls_kafka_DescribeClusterResponse r;
    CHECK_EQ_INT(describe_cluster(1, LS_KAFKA_ENDPOINT_CONTROLLER, &r, a),
                 LS_KERR_MISMATCHED_ENDPOINT_TYPE);
    CHECK_EQ_INT(r.NumBrokers, 0);
    CHECK_EQ_INT(r.ControllerId, -1);
    CHECK(r.ErrorMessage.len > 0);
    ls_arena_free(a);
}
TEST(describe_cluster_unknown_endpoint_type)
{
    ls_arena_t *a = ls_arena_new();
    ls_kafka_DescribeClusterResponse r;
    CHECK_EQ_INT(describe_cluster(1, 0, &r, a), LS_KERR_UNSUPPORTED_ENDPOINT_TYPE);
    CHECK_EQ_INT(describe_cluster(1, 7, &r, a), LS_KERR_UNSUPPORTED_ENDPOINT_TYPE);
    CHECK_EQ_INT(r.NumBrokers, 0);
    ls_arena_free(a);
}
TEST(describe_cluster_v0)
{ /* v0 has no EndpointType: always brokers */
    ls_arena_t *a = ls_arena_new();
    ls_kafka_DescribeClusterResponse r;
    CHECK_EQ_INT(describe_cluster(0, LS_KAFKA_ENDPOINT_BROKER, &r, a), LS_KERR_NONE);
    CHECK_EQ_INT(r.NumBrokers, 1);
    ls_arena_free(a);
}

int main(void)
{
    if (kf_open(&E) != 0) return 1;
    RUN(known_topic);
    RUN(unknown_topic);
    RUN(unknown_topic_id);
    RUN(invalid_topic_name);
    RUN(topic_authorization_failed);
    RUN(describe_cluster_brokers);
    RUN(describe_cluster_controllers_mismatched_endpoint_type);
    RUN(describe_cluster_unknown_endpoint_type);
    RUN(describe_cluster_v0);
    kf_close(&E);
    UNIT_DONE();
}
