/* The committed offsets' handlers (kafka/h_group_offsets.c): OffsetCommit,
 * OffsetFetch and OffsetDelete through the handler harness (kafka_fake.h)
 * over a real group service in memory. Each error path answers the exact
 * Kafka code and changes nothing (a refused commit or delete leaves the
 * committed offset as it was). One group id per test: the service is shared
 * by the binary. */
#include "group_calls.h"
#include "kafka/msg.h"
#include "kafka_fake.h"
#include "unit.h"

static kf_env_t E;

/* OffsetDelete v0 of topic's partition: the top-level code, and the
 * partition's in *pcode (-1000 when the answer has none). */
static int offset_delete(const char *group, const char *topic, int32_t partition, int *pcode)
{
    ls_kafka_OffsetDeleteRequest_Topic t = {
        .Name = KS(topic), .Partitions = &partition, .NumPartitions = 1};
    ls_kafka_OffsetDeleteRequest m = {.GroupId = KS(group), .Topics = &t, .NumTopics = 1};
    ls_arena_t *a = ls_arena_new();
    ls_kafka_OffsetDeleteResponse r;
    int code = -1000;
    *pcode = -1000;
    if (kf_call(&E, 47, 0, &m, &r, a) == 0) {
        code = r.ErrorCode;
        if (r.NumTopics == 1 && r.Topics[0].NumPartitions == 1)
            *pcode = r.Topics[0].Partitions[0].ErrorCode;
    }
    ls_arena_free(a);
    return code;
}

TEST(commit_errors_leave_the_offset)
{
    if (kf_topic(&E, "grp-commit", 1)) return;
    char member[128];
    int32_t gen;
    CHECK_EQ_INT(kg_join_fully(&E, "g-commit", member, &gen), LS_KERR_NONE);
    CHECK_EQ_INT(kg_sync_group(&E, "g-commit", member, gen, true, NULL), LS_KERR_NONE);
    CHECK_EQ_INT(kg_commit(&E, "g-commit", member, gen, "grp-commit", 5, ""), LS_KERR_NONE);
    CHECK_EQ_INT(kg_fetch(&E, "g-commit", "grp-commit"), 5);
    CHECK_EQ_INT(kg_commit(&E, "g-commit", member, gen + 1, "grp-commit", 9, ""),
                 LS_KERR_ILLEGAL_GENERATION);
    CHECK_EQ_INT(kg_commit(&E, "g-commit", "nobody-5", gen, "grp-commit", 9, ""),
                 LS_KERR_UNKNOWN_MEMBER_ID);
    char big[5000];
    memset(big, 'm', sizeof big - 1);
    big[sizeof big - 1] = 0; /* past offset.metadata.max.bytes (4096) */
    CHECK_EQ_INT(kg_commit(&E, "g-commit", member, gen, "grp-commit", 9, big),
                 LS_KERR_OFFSET_METADATA_TOO_LARGE);
    CHECK_EQ_INT(kg_commit(&E, "g-commit", member, gen, "grp-no-such-topic", 9, ""),
                 LS_KERR_UNKNOWN_TOPIC_OR_PARTITION);
    CHECK_EQ_INT(kg_fetch(&E, "g-commit", "grp-commit"), 5);
}

TEST(standalone_commit_and_fetch)
{ /* a group no member joins (generation -1, no member id): an admin's or a
     standalone consumer's offsets */
    if (kf_topic(&E, "grp-standalone", 1)) return;
    CHECK_EQ_INT(kg_fetch(&E, "g-standalone", "grp-standalone"), -1);
    CHECK_EQ_INT(kg_commit(&E, "g-standalone", "", -1, "grp-standalone", 42, "meta"), LS_KERR_NONE);
    CHECK_EQ_INT(kg_fetch(&E, "g-standalone", "grp-standalone"), 42);
}

TEST(offset_delete_of_an_empty_group)
{
    if (kf_topic(&E, "grp-delete", 2)) return;
    CHECK_EQ_INT(kg_commit(&E, "g-delete", "", -1, "grp-delete", 7, ""), LS_KERR_NONE);
    int pcode;
    CHECK_EQ_INT(offset_delete("g-delete", "grp-delete", 0, &pcode), LS_KERR_NONE);
    CHECK_EQ_INT(pcode, LS_KERR_NONE);
    CHECK_EQ_INT(kg_fetch(&E, "g-delete", "grp-delete"), -1);
    /* a partition past the topic's, and a topic that does not exist */
    CHECK_EQ_INT(offset_delete("g-delete", "grp-delete", 5, &pcode), LS_KERR_NONE);
    CHECK_EQ_INT(pcode, LS_KERR_UNKNOWN_TOPIC_OR_PARTITION);
    CHECK_EQ_INT(offset_delete("g-delete", "grp-no-such-topic", 0, &pcode), LS_KERR_NONE);
    CHECK_EQ_INT(pcode, LS_KERR_UNKNOWN_TOPIC_OR_PARTITION);
}

TEST(offset_delete_refusals)
{
    int pcode;
    CHECK_EQ_INT(offset_delete("g-never-committed", "grp-delete", 0, &pcode),
                 LS_KERR_GROUP_ID_NOT_FOUND);
    CHECK_EQ_INT(offset_delete("", "grp-delete", 0, &pcode), LS_KERR_INVALID_GROUP_ID);
    /* a live member subscribed to the topic: its offsets stay */
    if (kf_topic(&E, "grp-delete-live", 1)) return;
    char member[128];
    int32_t gen;
    CHECK_EQ_INT(kg_join_subscribed(&E, "g-delete-live", "grp-delete-live", member, &gen),
                 LS_KERR_NONE);
    CHECK_EQ_INT(kg_sync_group(&E, "g-delete-live", member, gen, true, NULL), LS_KERR_NONE);
    CHECK_EQ_INT(kg_commit(&E, "g-delete-live", member, gen, "grp-delete-live", 3, ""),
                 LS_KERR_NONE);
    CHECK_EQ_INT(offset_delete("g-delete-live", "grp-delete-live", 0, &pcode), LS_KERR_NONE);
    CHECK_EQ_INT(pcode, LS_KERR_GROUP_SUBSCRIBED_TO_TOPIC);
    CHECK_EQ_INT(kg_fetch(&E, "g-delete-live", "grp-delete-live"), 3);
    /* a topic no member subscribes to: its offsets may go */
    if (kf_topic(&E, "grp-delete-connect", 1)) return;
    CHECK_EQ_INT(kg_commit(&E, "g-delete-live", member, gen, "grp-delete-connect", 4, ""),
                 LS_KERR_NONE);
    CHECK_EQ_INT(offset_delete("g-delete-live", "grp-delete-connect", 0, &pcode), LS_KERR_NONE);
    CHECK_EQ_INT(pcode, LS_KERR_NONE);
    CHECK_EQ_INT(kg_fetch(&E, "g-delete-live", "grp-delete-connect"), -1);
}

int main(void)
{
    if (kf_open(&E) != 0) return 1;
    RUN(commit_errors_leave_the_offset);
    RUN(standalone_commit_and_fetch);
    RUN(offset_delete_of_an_empty_group);
    RUN(offset_delete_refusals);
    kf_close(&E);
    UNIT_DONE();
}
