/* ListOffsets handler (kafka/h_list_offsets.c) error paths, through the
 * handler harness (kafka_fake.h): the exact Kafka error code per partition. */
#include "kafka_fake.h"
#include "security/authz.h"
#include "unit.h"

static kf_env_t E;

/* ListOffsets v7 of topic/partition at timestamp ts (-1 latest, -2
 * earliest); the partition's error code (its offset in *off), or -1000. */
static int list_offsets(const char *topic, int32_t partition, int64_t ts, int64_t *off)
{
    ls_kafka_ListOffsetsRequest_ListOffsetsPartition p = {
        .PartitionIndex = partition, .CurrentLeaderEpoch = -1, .Timestamp = ts};
    ls_kafka_ListOffsetsRequest_ListOffsetsTopic t = {
        .Name = {topic, (int32_t)strlen(topic)}, .Partitions = &p, .NumPartitions = 1};
    ls_kafka_ListOffsetsRequest m = {.ReplicaId = -1, .Topics = &t, .NumTopics = 1};
    ls_arena_t *a = ls_arena_new();
    ls_kafka_ListOffsetsResponse r;
    int code = -1000;
    if (kf_call(&E, 2, 7, &m, &r, a) == 0 && r.NumTopics == 1 && r.Topics[0].NumPartitions == 1) {
        code = r.Topics[0].Partitions[0].ErrorCode;
        if (off) *off = r.Topics[0].Partitions[0].Offset;
    }
    ls_arena_free(a);
    return code;
}

TEST(latest_of_empty_topic)
{ /* the baseline the error tests compare with */
    CHECK(kf_topic(&E, "lo-good", 1) == 0);
    int64_t off = -7;
    CHECK_EQ_INT(list_offsets("lo-good", 0, -1, &off), LS_KERR_NONE);
    CHECK_EQ_INT(off, 0);
}

TEST(unknown_topic)
{
    CHECK_EQ_INT(list_offsets("lo-nosuch", 0, -1, NULL), LS_KERR_UNKNOWN_TOPIC_OR_PARTITION);
}

TEST(unknown_partition)
{
    CHECK(kf_topic(&E, "lo-onepart", 1) == 0);
    CHECK_EQ_INT(list_offsets("lo-onepart", 9, -1, NULL), LS_KERR_UNKNOWN_TOPIC_OR_PARTITION);
}

TEST(topic_authorization_failed)
{
    CHECK(kf_topic(&E, "lo-denied", 1) == 0);
    char err[256];
    ls_authz_t *az = ls_authz_open(E.meta, NULL, false, err, sizeof err);
    CHECK(az != NULL);
    E.svc.authz = az;
    int code = list_offsets("lo-denied", 0, -1, NULL);
    E.svc.authz = NULL;
    ls_authz_close(az);
    CHECK_EQ_INT(code, LS_KERR_TOPIC_AUTHORIZATION_FAILED);
}

int main(void)
{
    if (kf_open(&E) != 0) return 1;
    RUN(latest_of_empty_topic);
    RUN(unknown_topic);
    RUN(unknown_partition);
    RUN(topic_authorization_failed);
    kf_close(&E);
    UNIT_DONE();
}
