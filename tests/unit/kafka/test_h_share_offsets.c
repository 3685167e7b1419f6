/* DescribeShareGroupOffsets, AlterShareGroupOffsets and
 * DeleteShareGroupOffsets handlers (kafka/h_share_offsets.c), through the
 * handler harness (kafka_fake.h) with the real group coordinator and share
 * store: an empty share group's start offsets are set, described (with the
 * lag behind the high watermark) and deleted; a group with members is
 * NON_EMPTY_GROUP, none or another type GROUP_ID_NOT_FOUND; unknown topics
 * and partitions, bad offsets, empty ids and the ACLs answer Kafka's codes. */
#include "kafka_fake.h"
#include "unit.h"

static kf_env_t E;

typedef ls_kafka_DescribeShareGroupOffsetsResponse_DescribeShareGroupOffsetsResponseTopic dtopic_t;
typedef ls_kafka_AlterShareGroupOffsetsRequest_AlterShareGroupOffsetsRequestPartition apart_t;

/* ShareGroupHeartbeat v1 of member in gid subscribed to topic (epoch 0:
 * join, -1: leave): the error code, or -1000. */
static int heartbeat(const char *gid, const char *member, int32_t epoch, const char *topic)
{
    ls_kstr_t sub = ls_kstr_c(topic);
    ls_kafka_ShareGroupHeartbeatRequest m = {.GroupId = ls_kstr_c(gid),
                                             .MemberId = ls_kstr_c(member),
                                             .MemberEpoch = epoch,
                                             .RackId = ls_kstr_null(),
                                             .SubscribedTopicNames = epoch == 0 ? &sub : NULL,
                                             .NumSubscribedTopicNames = epoch == 0 ? 1 : -1};
    ls_arena_t *a = ls_arena_new();
    ls_kafka_ShareGroupHeartbeatResponse r;
    int code = kf_call(&E, 76, 1, &m, &r, a) == 0 ? r.ErrorCode : -1000;
    ls_arena_free(a);
    return code;
}

/* A topic of `records` records in each of its `parts` partitions, and the
 * share group gid that one member joined (subscribed to it) and left: an
 * empty share group. 0 or -1. */
static int empty_share_group(const char *gid, const char *topic, int32_t parts, int records)
{
    if (kf_topic(&E, topic, parts) != 0) return -1;
    for (int32_t p = 0; p < parts; p++)
        if (kf_produce(&E, topic, p, records) != 0) return -1;
    if (heartbeat(gid, "m-leaver", 0, topic) != LS_KERR_NONE) return -1;
    return heartbeat(gid, "m-leaver", -1, topic) == LS_KERR_NONE ? 0 : -1;
}

/* AlterShareGroupOffsets v0 of topic's parts p[0..n) for gid: the whole
 * request's code (-1000: no answer); each partition's code in codes[]. */
static int alter(const char *gid, const char *topic, apart_t *p, int n, int *codes)
{
    ls_kafka_AlterShareGroupOffsetsRequest_AlterShareGroupOffsetsRequestTopic t = {
        .TopicName = ls_kstr_c(topic), .Partitions = p, .NumPartitions = n};
    ls_kafka_AlterShareGroupOffsetsRequest m = {
        .GroupId = ls_kstr_c(gid), .Topics = &t, .NumTopics = 1};
    ls_arena_t *a = ls_arena_new();
    ls_kafka_AlterShareGroupOffsetsResponse r;
    int code = -1000;
    if (kf_call(&E, 91, 0, &m, &r, a) == 0) {
        code = r.ErrorCode;
        for (int i = 0; i < n; i++)
            codes[i] = r.NumResponses == 1 && r.Responses[0].NumPartitions == n
                           ? r.Responses[0].Partitions[i].ErrorCode
                           : -1;
    }
    ls_arena_free(a);
    return code;
}

/* DeleteShareGroupOffsets v0 of topic for gid: the whole request's code
 * (-1000: no answer), the topic's in *tcode. */
static int delete_offsets(const char *gid, const char *topic, int *tcode)
{
    ls_kafka_DeleteShareGroupOffsetsRequest_DeleteShareGroupOffsetsRequestTopic t = {
        .TopicName = ls_kstr_c(topic)};
    ls_kafka_DeleteShareGroupOffsetsRequest m = {
        .GroupId = ls_kstr_c(gid), .Topics = &t, .NumTopics = 1};
    ls_arena_t *a = ls_arena_new();
    ls_kafka_DeleteShareGroupOffsetsResponse r;
    int code = -1000;
    *tcode = -1;
    if (kf_call(&E, 92, 0, &m, &r, a) == 0) {
        code = r.ErrorCode;
        if (r.NumResponses == 1) *tcode = r.Responses[0].ErrorCode;
    }
    ls_arena_free(a);
    return code;
}

/* DescribeShareGroupOffsets v1 of gid (topic NULL: every topic with a
 * state; else its parts[0..n)): the group's code (-1000: no answer), its
 * first topic in *t (zeroed when none). */
static int describe(const char *gid, const char *topic, int32_t *parts, int n, dtopic_t *t,
                    ls_arena_t *a)
{
    ls_kafka_DescribeShareGroupOffsetsRequest_DescribeShareGroupOffsetsRequestTopic rt = {
        .TopicName = ls_kstr_c(topic ? topic : ""), .Partitions = parts, .NumPartitions = n};
    ls_kafka_DescribeShareGroupOffsetsRequest_DescribeShareGroupOffsetsRequestGroup g = {
        .GroupId = ls_kstr_c(gid), .Topics = topic ? &rt : NULL, .NumTopics = topic ? 1 : -1};
    ls_kafka_DescribeShareGroupOffsetsRequest m = {.Groups = &g, .NumGroups = 1};
    ls_kafka_DescribeShareGroupOffsetsResponse r;
    memset(t, 0, sizeof *t);
    if (kf_call(&E, 90, 1, &m, &r, a) != 0 || r.NumGroups != 1 ||
        !ls_kstr_eq(r.Groups[0].GroupId, gid))
        return -1000;
    if (r.Groups[0].NumTopics > 0) *t = r.Groups[0].Topics[0];
    return r.Groups[0].ErrorCode;
}

TEST(alter_describe_delete)
{
    CHECK(empty_share_group("so-g", "so-t", 2, 3) == 0);
    apart_t p[2] = {{0, 1}, {1, 3}};
    int codes[2] = {-1, -1};
    CHECK_EQ_INT(alter("so-g", "so-t", p, 2, codes), LS_KERR_NONE);
    CHECK_EQ_INT(codes[0], LS_KERR_NONE);
    CHECK_EQ_INT(codes[1], LS_KERR_NONE);

    ls_arena_t *a = ls_arena_new();
    dtopic_t t;
    int32_t parts[2] = {0, 1};
    CHECK_EQ_INT(describe("so-g", "so-t", parts, 2, &t, a), LS_KERR_NONE);
    CHECK(ls_kstr_eq(t.TopicName, "so-t"));
    CHECK_EQ_INT(t.NumPartitions, 2);
    CHECK_EQ_INT(t.Partitions[0].PartitionIndex, 0);
    CHECK_EQ_INT(t.Partitions[0].ErrorCode, LS_KERR_NONE);
    CHECK_EQ_INT(t.Partitions[0].StartOffset, 1);
    CHECK_EQ_INT(t.Partitions[0].Lag, 2); /* high watermark 3 */
    CHECK_EQ_INT(t.Partitions[1].StartOffset, 3);
    CHECK_EQ_INT(t.Partitions[1].Lag, 0);
    /* null topics: every topic the group has states of */
    CHECK_EQ_INT(describe("so-g", NULL, NULL, 0, &t, a), LS_KERR_NONE);
    CHECK(ls_kstr_eq(t.TopicName, "so-t"));
    CHECK_EQ_INT(t.NumPartitions, 2);

    int tcode;
    CHECK_EQ_INT(delete_offsets("so-g", "so-t", &tcode), LS_KERR_NONE);
    CHECK_EQ_INT(tcode, LS_KERR_NONE);
    CHECK_EQ_INT(describe("so-g", "so-t", parts, 2, &t, a), LS_KERR_NONE);
    CHECK_EQ_INT(t.NumPartitions, 2);
    CHECK_EQ_INT(t.Partitions[0].StartOffset, -1);
    CHECK_EQ_INT(t.Partitions[0].Lag, -1);
    ls_arena_free(a);
}

TEST(describe_unknown_topic_or_partition)
{
    CHECK(empty_share_group("so-gu", "so-tu", 1, 1) == 0);
    ls_arena_t *a = ls_arena_new();
    dtopic_t t;
    int32_t parts[2] = {0, 4};
    CHECK_EQ_INT(describe("so-gu", "so-nosuch", parts, 1, &t, a), LS_KERR_NONE);
    CHECK_EQ_INT(t.NumPartitions, 1);
    CHECK_EQ_INT(t.Partitions[0].ErrorCode, LS_KERR_UNKNOWN_TOPIC_OR_PARTITION);
    CHECK_EQ_INT(t.Partitions[0].StartOffset, -1);
    CHECK_EQ_INT(describe("so-gu", "so-tu", parts, 2, &t, a), LS_KERR_NONE);
    CHECK_EQ_INT(t.NumPartitions, 2);
    CHECK_EQ_INT(t.Partitions[0].ErrorCode, LS_KERR_NONE);
    CHECK_EQ_INT(t.Partitions[0].StartOffset, -1); /* never fetched: no state */
    CHECK_EQ_INT(t.Partitions[1].ErrorCode, LS_KERR_UNKNOWN_TOPIC_OR_PARTITION);
    ls_arena_free(a);
}

TEST(alter_refuses_bad_partitions_alone)
{
    CHECK(empty_share_group("so-gb", "so-tb", 1, 2) == 0);
    apart_t p[3] = {{0, -5}, {7, 0}, {0, 2}};
    int codes[3] = {-1, -1, -1};
    CHECK_EQ_INT(alter("so-gb", "so-tb", p, 3, codes), LS_KERR_NONE);
    CHECK_EQ_INT(codes[0], LS_KERR_INVALID_REQUEST);
    CHECK_EQ_INT(codes[1], LS_KERR_UNKNOWN_TOPIC_OR_PARTITION);
    CHECK_EQ_INT(codes[2], LS_KERR_NONE);
    apart_t q = {0, 1};
    CHECK_EQ_INT(alter("so-gb", "so-nosuch", &q, 1, codes), LS_KERR_NONE);
    CHECK_EQ_INT(codes[0], LS_KERR_UNKNOWN_TOPIC_OR_PARTITION);
    ls_arena_t *a = ls_arena_new();
    dtopic_t t;
    int32_t part = 0;
    CHECK_EQ_INT(describe("so-gb", "so-tb", &part, 1, &t, a), LS_KERR_NONE);
    CHECK_EQ_INT(t.Partitions[0].StartOffset, 2);
    ls_arena_free(a);
    int tcode;
    CHECK_EQ_INT(delete_offsets("so-gb", "so-nosuch", &tcode), LS_KERR_NONE);
    CHECK_EQ_INT(tcode, LS_KERR_UNKNOWN_TOPIC_OR_PARTITION);
}

TEST(group_with_members_is_not_empty)
{
    CHECK(kf_topic(&E, "so-tm", 1) == 0);
    CHECK_EQ_INT(heartbeat("so-gm", "m-stays", 0, "so-tm"), LS_KERR_NONE);
    apart_t p = {0, 0};
    int code = -1;
    CHECK_EQ_INT(alter("so-gm", "so-tm", &p, 1, &code), LS_KERR_NON_EMPTY_GROUP);
    int tcode;
    CHECK_EQ_INT(delete_offsets("so-gm", "so-tm", &tcode), LS_KERR_NON_EMPTY_GROUP);
    CHECK_EQ_INT(heartbeat("so-gm", "m-stays", -1, "so-tm"), LS_KERR_NONE);
}

TEST(no_share_group_is_not_found)
{
    CHECK(kf_topic(&E, "so-tn", 1) == 0);
    apart_t p = {0, 0};
    int code = -1;
    CHECK_EQ_INT(alter("so-never", "so-tn", &p, 1, &code), LS_KERR_GROUP_ID_NOT_FOUND);
    int tcode;
    CHECK_EQ_INT(delete_offsets("so-never", "so-tn", &tcode), LS_KERR_GROUP_ID_NOT_FOUND);
}

TEST(empty_group_id_is_invalid)
{
    apart_t p = {0, 0};
    int code = -1, tcode;
    CHECK_EQ_INT(alter("", "so-t", &p, 1, &code), LS_KERR_INVALID_GROUP_ID);
    CHECK_EQ_INT(delete_offsets("", "so-t", &tcode), LS_KERR_INVALID_GROUP_ID);
    ls_arena_t *a = ls_arena_new();
    dtopic_t t;
    CHECK_EQ_INT(describe("", NULL, NULL, 0, &t, a), LS_KERR_INVALID_GROUP_ID);
    ls_arena_free(a);
}

TEST(authorization_failed)
{
    CHECK(empty_share_group("so-gd", "so-td", 1, 1) == 0);
    ls_arena_t *a = ls_arena_new();
    dtopic_t t;
    apart_t p = {0, 0};
    int codes[1] = {-1}, tcode = -1;
    CHECK(kf_authz_on(&E, NULL) == 0);
    int describe_code = describe("so-gd", NULL, NULL, 0, &t, a);
    int alter_code = alter("so-gd", "so-td", &p, 1, codes);
    int delete_code = delete_offsets("so-gd", "so-td", &tcode);
    /* READ and DELETE on the group only: the topic stays denied */
    ls_acl_t b[2] = {{LS_ACL_RES_GROUP, LS_ACL_PAT_LITERAL, LS_ACL_OP_READ, LS_ACL_PERM_ALLOW,
                      "so-gd", "User:ANONYMOUS", "*"},
                     {LS_ACL_RES_GROUP, LS_ACL_PAT_LITERAL, LS_ACL_OP_DELETE, LS_ACL_PERM_ALLOW,
                      "so-gd", "User:ANONYMOUS", "*"}};
    ls_status st = ls_authz_create(E.svc.authz, b, 2, "User:test", "127.0.0.1");
    int topic_alter = alter("so-gd", "so-td", &p, 1, codes);
    int topic_delete = delete_offsets("so-gd", "so-td", &tcode);
    ls_acl_t *gone[2];
    size_t ngone[2];
    if (ls_authz_delete(E.svc.authz, b, 2, gone, ngone, "User:test", "127.0.0.1") == LS_OK)
        for (int i = 0; i < 2; i++)
            ls_authz_free_list(gone[i], ngone[i]);
    kf_authz_off(&E);
    CHECK_EQ_INT(describe_code, LS_KERR_GROUP_AUTHORIZATION_FAILED);
    CHECK_EQ_INT(alter_code, LS_KERR_GROUP_AUTHORIZATION_FAILED);
    CHECK_EQ_INT(delete_code, LS_KERR_GROUP_AUTHORIZATION_FAILED);
    CHECK(st == LS_OK);
    CHECK_EQ_INT(topic_alter, LS_KERR_NONE);
    CHECK_EQ_INT(codes[0], LS_KERR_TOPIC_AUTHORIZATION_FAILED);
    CHECK_EQ_INT(topic_delete, LS_KERR_NONE);
    CHECK_EQ_INT(tcode, LS_KERR_TOPIC_AUTHORIZATION_FAILED);
    int32_t part = 0;
    CHECK_EQ_INT(describe("so-gd", "so-td", &part, 1, &t, a), LS_KERR_NONE);
    CHECK_EQ_INT(t.Partitions[0].StartOffset, -1); /* nothing was set */
    ls_arena_free(a);
}

int main(void)
{
    if (kf_open(&E) != 0) return 1;
    RUN(alter_describe_delete);
    RUN(describe_unknown_topic_or_partition);
    RUN(alter_refuses_bad_partitions_alone);
    RUN(group_with_members_is_not_empty);
    RUN(no_share_group_is_not_found);
    RUN(empty_group_id_is_invalid);
    RUN(authorization_failed);
    kf_close(&E);
    UNIT_DONE();
}
