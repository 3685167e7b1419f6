/* DeleteRecords handler (kafka/h_delete_records.c) error paths, through the
 * handler harness (kafka_fake.h): the exact Kafka error code per partition,
 * and that the log start did not move. */
#include "kafka_fake.h"
#include "security/authz.h"
#include "unit.h"

static kf_env_t E;

/* DeleteRecords v2 of topic/partition before offset; the partition's error
 * code (its low watermark in *low), or -1000. */
static int delete_records(const char *topic, int32_t partition, int64_t offset, int64_t *low)
{
    ls_kafka_DeleteRecordsRequest_DeleteRecordsPartition p = {.PartitionIndex = partition,
                                                              .Offset = offset};
    ls_kafka_DeleteRecordsRequest_DeleteRecordsTopic t = {
        .Name = {topic, (int32_t)strlen(topic)}, .Partitions = &p, .NumPartitions = 1};
    ls_kafka_DeleteRecordsRequest m = {.Topics = &t, .NumTopics = 1, .TimeoutMs = 30000};
    ls_arena_t *a = ls_arena_new();
    ls_kafka_DeleteRecordsResponse r;
    int code = -1000;
    if (kf_call(&E, 21, 2, &m, &r, a) == 0 && r.NumTopics == 1 && r.Topics[0].NumPartitions == 1) {
        code = r.Topics[0].Partitions[0].ErrorCode;
        if (low) *low = r.Topics[0].Partitions[0].LowWatermark;
    }
    ls_arena_free(a);
    return code;
}

static int64_t log_start(const char *topic, int32_t partition)
{
    ls_stream_t *s = ls_catalog_lookup(E.catalog, LS_DEFAULT_NAMESPACE, topic);
    if (!s) return -1;
    ls_log_info_t li;
    ls_logstore_info(E.logs, ls_stream_log_id(s, partition), &li);
    ls_stream_release(s);
    return li.log_start;
}

TEST(deletes_below_an_offset)
{ /* the baseline the error tests compare with */
    CHECK(kf_topic(&E, "dr-good", 1) == 0);
    CHECK(kf_produce(&E, "dr-good", 0, 3) == 0);
    int64_t low = -7;
    CHECK_EQ_INT(delete_records("dr-good", 0, 2, &low), LS_KERR_NONE);
    CHECK_EQ_INT(low, 2);
    CHECK_EQ_INT(log_start("dr-good", 0), 2);
}

TEST(offset_out_of_range)
{
    CHECK(kf_topic(&E, "dr-range", 1) == 0);
    CHECK(kf_produce(&E, "dr-range", 0, 2) == 0);
    CHECK_EQ_INT(delete_records("dr-range", 0, 10, NULL), LS_KERR_OFFSET_OUT_OF_RANGE);
    CHECK_EQ_INT(log_start("dr-range", 0), 0);
    CHECK_EQ_INT(kf_hwm(&E, "dr-range", 0), 2);
}

TEST(unknown_topic)
{
    CHECK_EQ_INT(delete_records("dr-nosuch", 0, 0, NULL), LS_KERR_UNKNOWN_TOPIC_OR_PARTITION);
}

TEST(unknown_partition)
{
    CHECK(kf_topic(&E, "dr-onepart", 1) == 0);
    CHECK_EQ_INT(delete_records("dr-onepart", 7, 0, NULL), LS_KERR_UNKNOWN_TOPIC_OR_PARTITION);
}

TEST(topic_authorization_failed)
{
    CHECK(kf_topic(&E, "dr-denied", 1) == 0);
    CHECK(kf_produce(&E, "dr-denied", 0, 2) == 0);
    char err[256];
    ls_authz_t *az = ls_authz_open(E.meta, NULL, false, err, sizeof err);
    CHECK(az != NULL);
    E.svc.authz = az;
    int code = delete_records("dr-denied", 0, 1, NULL);
    E.svc.authz = NULL;
    ls_authz_close(az);
    CHECK_EQ_INT(code, LS_KERR_TOPIC_AUTHORIZATION_FAILED);
    CHECK_EQ_INT(log_start("dr-denied", 0), 0);
}

int main(void)
{
    if (kf_open(&E) != 0) return 1;
    RUN(deletes_below_an_offset);
    RUN(offset_out_of_range);
    RUN(unknown_topic);
    RUN(unknown_partition);
    RUN(topic_authorization_failed);
    kf_close(&E);
    UNIT_DONE();
}
