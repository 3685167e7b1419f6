/* The consumer-group handlers (kafka/h_group.c, classic protocol):
 * JoinGroup, SyncGroup, Heartbeat, OffsetCommit and OffsetFetch, through
 * the handler harness (kafka_fake.h) over a real group service in memory.
 * Each error path answers the exact Kafka code and changes nothing (a
 * refused commit leaves the committed offset as it was). One group id per
 * test: the service is shared by the binary. */
#include "kafka/msg.h"
#include "kafka_fake.h"
#include "unit.h"

static kf_env_t E;

#define KS(s) ((ls_kstr_t){(s), (int32_t)strlen(s)})
#define KNULL ((ls_kstr_t){NULL, -1})

/* JoinGroup v5 of one "range" protocol; the code, the member id and
 * generation answered (copied to member, cap 128) and whether it leads. */
static int join(const char *group, const char *member_id, int32_t session_ms, char *member,
                int32_t *generation, bool *leader)
{
    ls_kafka_JoinGroupRequest_Protocol p = {.Name = KS("range"), .Metadata = {(uint8_t *)"m", 1}};
    ls_kafka_JoinGroupRequest m = {.GroupId = KS(group),
                                   .SessionTimeoutMs = session_ms,
                                   .RebalanceTimeoutMs = 10000,
                                   .MemberId = KS(member_id),
                                   .GroupInstanceId = KNULL,
                                   .ProtocolType = KS("consumer"),
                                   .Protocols = &p,
                                   .NumProtocols = 1};
    ls_arena_t *a = ls_arena_new();
    ls_kafka_JoinGroupResponse r;
    int code = -1000;
    if (kf_call(&E, 11, 5, &m, &r, a) == 0) {
        code = r.ErrorCode;
        if (member)
            snprintf(member, 128, "%.*s", r.MemberId.len > 0 ? (int)r.MemberId.len : 0,
                     r.MemberId.ptr ? r.MemberId.ptr : "");
        if (generation) *generation = r.GenerationId;
        if (leader)
            *leader = r.Leader.len == r.MemberId.len && r.Leader.len > 0 &&
                      !memcmp(r.Leader.ptr, r.MemberId.ptr, (size_t)r.Leader.len);
    }
    ls_arena_free(a);
    return code;
}

/* A member of group joined to the end (MEMBER_ID_REQUIRED, then the join
 * with the id given): its id in member, its generation; the join's code. */
static int join_fully(const char *group, char *member, int32_t *generation)
{
    int code = join(group, "", 10000, member, NULL, NULL);
    if (code != LS_KERR_MEMBER_ID_REQUIRED) return code;
    bool leader = false;
    code = join(group, member, 10000, member, generation, &leader);
    return code == LS_KERR_NONE && !leader ? -2000 : code;
}

/* SyncGroup v3; a leader (assign) hands itself assignment "a1". The code;
 * *got: the assignment received matched "a1". */
static int sync_group(const char *group, const char *member, int32_t generation, bool assign,
                      bool *got)
{
    ls_kafka_SyncGroupRequest_Assignment as = {.MemberId = KS(member),
                                               .Assignment = {(uint8_t *)"a1", 2}};
    ls_kafka_SyncGroupRequest m = {.GroupId = KS(group),
                                   .GenerationId = generation,
                                   .MemberId = KS(member),
                                   .GroupInstanceId = KNULL,
                                   .ProtocolType = KNULL,
                                   .ProtocolName = KNULL,
                                   .Assignments = assign ? &as : NULL,
                                   .NumAssignments = assign ? 1 : 0};
    ls_arena_t *a = ls_arena_new();
    ls_kafka_SyncGroupResponse r;
    int code = -1000;
    if (kf_call(&E, 14, 3, &m, &r, a) == 0) {
        code = r.ErrorCode;
        if (got)
            *got = r.Assignment.len == 2 && r.Assignment.ptr && !memcmp(r.Assignment.ptr, "a1", 2);
    }
    ls_arena_free(a);
    return code;
}

static int heartbeat(const char *group, const char *member, int32_t generation)
{
    ls_kafka_HeartbeatRequest m = {.GroupId = KS(group),
                                   .GenerationId = generation,
                                   .MemberId = KS(member),
                                   .GroupInstanceId = KNULL};
    ls_arena_t *a = ls_arena_new();
    ls_kafka_HeartbeatResponse r;
    int code = -1000;
    if (kf_call(&E, 12, 3, &m, &r, a) == 0) code = r.ErrorCode;
    ls_arena_free(a);
    return code;
}

/* OffsetCommit v7 of topic partition 0; the partition's code. */
static int commit(const char *group, const char *member, int32_t generation, const char *topic,
                  int64_t offset, const char *metadata)
{
    ls_kafka_OffsetCommitRequest_Partition p = {.PartitionIndex = 0,
                                                .CommittedOffset = offset,
                                                .CommittedLeaderEpoch = -1,
                                                .CommitTimestamp = -1,
                                                .CommittedMetadata = KS(metadata)};
    ls_kafka_OffsetCommitRequest_Topic t = {
        .Name = KS(topic), .Partitions = &p, .NumPartitions = 1};
    ls_kafka_OffsetCommitRequest m = {.GroupId = KS(group),
                                      .GenerationIdOrMemberEpoch = generation,
                                      .MemberId = KS(member),
                                      .GroupInstanceId = KNULL,
                                      .RetentionTimeMs = -1,
                                      .Topics = &t,
                                      .NumTopics = 1};
    ls_arena_t *a = ls_arena_new();
    ls_kafka_OffsetCommitResponse r;
    int code = -1000;
    if (kf_call(&E, 8, 7, &m, &r, a) == 0 && r.NumTopics == 1 && r.Topics[0].NumPartitions == 1)
        code = r.Topics[0].Partitions[0].ErrorCode;
    ls_arena_free(a);
    return code;
}

/* OffsetFetch v7 of topic partition 0: the committed offset (-1: none), or
 * -1000 - the error code. */
static int64_t fetch(const char *group, const char *topic)
{
    int32_t part = 0;
    ls_kafka_OffsetFetchRequest_Topic t = {
        .Name = KS(topic), .PartitionIndexes = &part, .NumPartitionIndexes = 1};
    ls_kafka_OffsetFetchRequest m = {.GroupId = KS(group), .Topics = &t, .NumTopics = 1};
    ls_arena_t *a = ls_arena_new();
    ls_kafka_OffsetFetchResponse r;
    int64_t out = -1000 - 1000;
    if (kf_call(&E, 9, 7, &m, &r, a) == 0) {
        if (r.ErrorCode)
            out = -1000 - r.ErrorCode;
        else if (r.NumTopics == 1 && r.Topics[0].NumPartitions == 1)
            out = r.Topics[0].Partitions[0].ErrorCode ? -1000 - r.Topics[0].Partitions[0].ErrorCode
                                                      : r.Topics[0].Partitions[0].CommittedOffset;
    }
    ls_arena_free(a);
    return out;
}

TEST(join_without_a_member_id_is_told_its_id)
{
    char member[128] = "";
    CHECK_EQ_INT(join("g-member-required", "", 10000, member, NULL, NULL),
                 LS_KERR_MEMBER_ID_REQUIRED);
    CHECK(member[0] != 0);
    int32_t gen = -7;
    bool leader = false;
    CHECK_EQ_INT(join("g-member-required", member, 10000, member, &gen, &leader), LS_KERR_NONE);
    CHECK(gen >= 1 && leader);
}

TEST(join_session_timeout_out_of_range)
{
    int32_t below = E.cfg.group_min_session_timeout_ms - 1;
    CHECK_EQ_INT(join("g-session", "", below, NULL, NULL, NULL), LS_KERR_INVALID_SESSION_TIMEOUT);
    int32_t above = E.cfg.group_max_session_timeout_ms + 1;
    CHECK_EQ_INT(join("g-session", "", above, NULL, NULL, NULL), LS_KERR_INVALID_SESSION_TIMEOUT);
}

TEST(join_unknown_member)
{
    char member[128];
    int32_t gen;
    CHECK_EQ_INT(join_fully("g-join-unknown", member, &gen), LS_KERR_NONE);
    CHECK_EQ_INT(join("g-join-unknown", "nobody-1", 10000, NULL, NULL, NULL),
                 LS_KERR_UNKNOWN_MEMBER_ID);
}

TEST(sync_and_heartbeat_errors)
{
    char member[128];
    int32_t gen;
    bool got = false;
    CHECK_EQ_INT(join_fully("g-sync", member, &gen), LS_KERR_NONE);
    CHECK_EQ_INT(sync_group("g-sync", member, gen + 1, true, NULL), LS_KERR_ILLEGAL_GENERATION);
    CHECK_EQ_INT(sync_group("g-sync", "nobody-2", gen, true, NULL), LS_KERR_UNKNOWN_MEMBER_ID);
    CHECK_EQ_INT(sync_group("g-sync", member, gen, true, &got), LS_KERR_NONE);
    CHECK(got);
    CHECK_EQ_INT(heartbeat("g-sync", member, gen), LS_KERR_NONE);
    CHECK_EQ_INT(heartbeat("g-sync", member, gen - 1), LS_KERR_ILLEGAL_GENERATION);
    CHECK_EQ_INT(heartbeat("g-sync", "nobody-3", gen), LS_KERR_UNKNOWN_MEMBER_ID);
}

TEST(heartbeat_of_an_unknown_group)
{ /* as Kafka: the member is unknown, so the client rejoins */
    CHECK_EQ_INT(heartbeat("g-never-joined", "nobody-4", 1), LS_KERR_UNKNOWN_MEMBER_ID);
}

TEST(commit_errors_leave_the_offset)
{
    if (kf_topic(&E, "grp-commit", 1)) return;
    char member[128];
    int32_t gen;
    CHECK_EQ_INT(join_fully("g-commit", member, &gen), LS_KERR_NONE);
    CHECK_EQ_INT(sync_group("g-commit", member, gen, true, NULL), LS_KERR_NONE);
    CHECK_EQ_INT(commit("g-commit", member, gen, "grp-commit", 5, ""), LS_KERR_NONE);
    CHECK_EQ_INT(fetch("g-commit", "grp-commit"), 5);
    CHECK_EQ_INT(commit("g-commit", member, gen + 1, "grp-commit", 9, ""),
                 LS_KERR_ILLEGAL_GENERATION);
    CHECK_EQ_INT(commit("g-commit", "nobody-5", gen, "grp-commit", 9, ""),
                 LS_KERR_UNKNOWN_MEMBER_ID);
    char big[5000];
    memset(big, 'm', sizeof big - 1);
    big[sizeof big - 1] = 0; /* past offset.metadata.max.bytes (4096) */
    CHECK_EQ_INT(commit("g-commit", member, gen, "grp-commit", 9, big),
                 LS_KERR_OFFSET_METADATA_TOO_LARGE);
    CHECK_EQ_INT(commit("g-commit", member, gen, "grp-no-such-topic", 9, ""),
                 LS_KERR_UNKNOWN_TOPIC_OR_PARTITION);
    CHECK_EQ_INT(fetch("g-commit", "grp-commit"), 5);
}

TEST(standalone_commit_and_fetch)
{ /* a group no member joins (generation -1, no member id): an admin's or a
     standalone consumer's offsets */
    if (kf_topic(&E, "grp-standalone", 1)) return;
    CHECK_EQ_INT(fetch("g-standalone", "grp-standalone"), -1);
    CHECK_EQ_INT(commit("g-standalone", "", -1, "grp-standalone", 42, "meta"), LS_KERR_NONE);
    CHECK_EQ_INT(fetch("g-standalone", "grp-standalone"), 42);
}

TEST(empty_group_id_is_invalid)
{
    CHECK_EQ_INT(join("", "", 10000, NULL, NULL, NULL), LS_KERR_INVALID_GROUP_ID);
    CHECK_EQ_INT(heartbeat("", "m", 1), LS_KERR_INVALID_GROUP_ID);
}

int main(void)
{
    if (kf_open(&E) != 0) return 1;
    RUN(join_without_a_member_id_is_told_its_id);
    RUN(join_session_timeout_out_of_range);
    RUN(join_unknown_member);
    RUN(sync_and_heartbeat_errors);
    RUN(heartbeat_of_an_unknown_group);
    RUN(commit_errors_leave_the_offset);
    RUN(standalone_commit_and_fetch);
    RUN(empty_group_id_is_invalid);
    kf_close(&E);
    UNIT_DONE();
}
