/* Fetch handler (kafka/h_fetch.c) error paths, through the handler harness
 * (kafka_fake.h): each asserts the exact Kafka error code a consumer sees
 * and that no records came back. */
#include "kafka_fake.h"
#include "security/authz.h"
#include "unit.h"

static kf_env_t E;

/* Fetches topic (by name below v13, by id from v13) partition at offset;
 * the partition's error code (records bytes in *nrec), or -1000 when no
 * response came back. MaxWaitMs 0: answered at once. */
static int fetch(int16_t v, const char *topic, const ls_uuid_t *id, int32_t partition,
                 int64_t offset, int32_t *nrec, int32_t *throttle)
{
    ls_kafka_FetchRequest_FetchPartition fp = {.Partition = partition,
                                               .CurrentLeaderEpoch = -1,
                                               .FetchOffset = offset,
                                               .LastFetchedEpoch = -1,
                                               .LogStartOffset = -1,
                                               .PartitionMaxBytes = 1 << 20};
    ls_kafka_FetchRequest_FetchTopic ft = {.Partitions = &fp, .NumPartitions = 1};
    if (topic) ft.Topic = (ls_kstr_t){topic, (int32_t)strlen(topic)};
    if (id) ft.TopicId = *id;
    ls_kafka_FetchRequest m = {.ClusterId = {NULL, -1},
                               .ReplicaId = -1,
                               .MaxWaitMs = 0,
                               .MinBytes = 1,
                               .MaxBytes = 1 << 20,
                               .SessionEpoch = -1,
                               .Topics = &ft,
                               .NumTopics = 1};
    ls_arena_t *a = ls_arena_new();
    ls_kafka_FetchResponse r;
    int code = -1000;
    if (kf_call(&E, 1, v, &m, &r, a) == 0 && r.NumResponses == 1 &&
        r.Responses[0].NumPartitions == 1) {
        code = r.Responses[0].Partitions[0].ErrorCode;
        if (nrec) *nrec = r.Responses[0].Partitions[0].Records.len;
        if (throttle) *throttle = r.ThrottleTimeMs;
    }
    ls_arena_free(a);
    return code;
}

TEST(reads_what_was_produced)
{ /* the baseline the error tests compare with */
    CHECK(kf_topic(&E, "f-good", 1) == 0);
    CHECK_EQ_INT(kf_produce(&E, "f-good", 0, 1), LS_KERR_NONE);
    int32_t n = 0;
    CHECK_EQ_INT(fetch(12, "f-good", NULL, 0, 0, &n, NULL), LS_KERR_NONE);
    CHECK(n > 0);
}

TEST(unknown_topic)
{
    int32_t n = -7;
    CHECK_EQ_INT(fetch(12, "f-nosuch", NULL, 0, 0, &n, NULL), LS_KERR_UNKNOWN_TOPIC_OR_PARTITION);
    CHECK(n <= 0);
}

TEST(unknown_partition)
{
    CHECK(kf_topic(&E, "f-onepart", 1) == 0);
    CHECK_EQ_INT(fetch(12, "f-onepart", NULL, 4, 0, NULL, NULL),
                 LS_KERR_UNKNOWN_TOPIC_OR_PARTITION);
}

TEST(unknown_topic_id)
{
    ls_uuid_t id;
    memset(&id, 0x5a, sizeof id);
    int32_t n = -7;
    CHECK_EQ_INT(fetch(13, NULL, &id, 0, 0, &n, NULL), LS_KERR_UNKNOWN_TOPIC_ID);
    CHECK(n <= 0);
}

TEST(offset_out_of_range)
{
    CHECK(kf_topic(&E, "f-range", 1) == 0);
    CHECK_EQ_INT(kf_produce(&E, "f-range", 0, 1), LS_KERR_NONE);
    int32_t n = -7;
    CHECK_EQ_INT(fetch(12, "f-range", NULL, 0, 50, &n, NULL), LS_KERR_OFFSET_OUT_OF_RANGE);
    CHECK(n <= 0);
    CHECK_EQ_INT(fetch(12, "f-range", NULL, 0, -5, &n, NULL), LS_KERR_OFFSET_OUT_OF_RANGE);
    CHECK(n <= 0);
}

TEST(topic_authorization_failed)
{
    CHECK(kf_topic(&E, "f-denied", 1) == 0);
    CHECK_EQ_INT(kf_produce(&E, "f-denied", 0, 1), LS_KERR_NONE);
    char err[256];
    /* no ACL and allow.everyone.if.no.acl.found=false: User:ANONYMOUS is denied */
    ls_authz_t *az = ls_authz_open(E.meta, NULL, false, err, sizeof err);
    CHECK(az != NULL);
    E.svc.authz = az;
    int32_t n = -7;
    int code = fetch(12, "f-denied", NULL, 0, 0, &n, NULL);
    E.svc.authz = NULL;
    ls_authz_close(az);
    CHECK_EQ_INT(code, LS_KERR_TOPIC_AUTHORIZATION_FAILED);
    CHECK(n <= 0);
}

int main(void)
{
    if (kf_open(&E) != 0) return 1;
    RUN(reads_what_was_produced);
    RUN(unknown_topic);
    RUN(unknown_partition);
    RUN(unknown_topic_id);
    RUN(offset_out_of_range);
    RUN(topic_authorization_failed);
    kf_close(&E);
    UNIT_DONE();
}
