/* Classic group requests for the handler unit tests of kafka/h_group.c and
 * kafka/h_group_offsets.c (kafka_fake.h): each sends one request on the
 * harness's connection and returns the code the client sees. */
#ifndef LS_TEST_GROUP_CALLS_H
#define LS_TEST_GROUP_CALLS_H
#include "kafka/msg.h"
#include "kafka_fake.h"

#define KS(s) ((ls_kstr_t){(s), (int32_t)strlen(s)})
#define KNULL ((ls_kstr_t){NULL, -1})

/* JoinGroup v5 of one "range" protocol with metadata meta; the code, the
 * member id and generation answered (copied to member, cap 128) and whether
 * it leads. */
static inline int kg_join_meta(kf_env_t *e, const char *group, const char *member_id,
                               int32_t session_ms, ls_kbytes_t meta, char *member,
                               int32_t *generation, bool *leader)
{
    ls_kafka_JoinGroupRequest_Protocol p = {.Name = KS("range"), .Metadata = meta};
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
    if (kf_call(e, 11, 5, &m, &r, a) == 0) {
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

/* kg_join_meta with metadata that is no consumer subscription ("m"). */
static inline int kg_join(kf_env_t *e, const char *group, const char *member_id, int32_t session_ms,
                          char *member, int32_t *generation, bool *leader)
{
    return kg_join_meta(e, group, member_id, session_ms, (ls_kbytes_t){(uint8_t *)"m", 1}, member,
                        generation, leader);
}

/* A member of group joined to the end (MEMBER_ID_REQUIRED, then the join
 * with the id given), subscribed to topic (ConsumerProtocolSubscription v0)
 * or, topic NULL, with metadata "m": its id in member, its generation; the
 * join's code. */
static inline int kg_join_subscribed(kf_env_t *e, const char *group, const char *topic,
                                     char *member, int32_t *generation)
{
    uint8_t sub[256] = {0, 0, 0, 0, 0, 1}; /* version 0, one topic */
    size_t tl = topic ? strlen(topic) : 0;
    ls_kbytes_t meta = {(uint8_t *)"m", 1};
    if (topic && tl < 200) {
        sub[6] = (uint8_t)(tl >> 8), sub[7] = (uint8_t)tl;
        memcpy(sub + 8, topic, tl);
        memset(sub + 8 + tl, 0xff, 4); /* no user data */
        meta = (ls_kbytes_t){sub, (int32_t)(12 + tl)};
    }
    int code = kg_join_meta(e, group, "", 10000, meta, member, NULL, NULL);
    if (code != LS_KERR_MEMBER_ID_REQUIRED) return code;
    bool leader = false;
    code = kg_join_meta(e, group, member, 10000, meta, member, generation, &leader);
    return code == LS_KERR_NONE && !leader ? -2000 : code;
}

static inline int kg_join_fully(kf_env_t *e, const char *group, char *member, int32_t *generation)
{
    return kg_join_subscribed(e, group, NULL, member, generation);
}

/* SyncGroup v3; a leader (assign) hands itself assignment "a1". The code;
 * *got: the assignment received matched "a1". */
static inline int kg_sync_group(kf_env_t *e, const char *group, const char *member,
                                int32_t generation, bool assign, bool *got)
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
    if (kf_call(e, 14, 3, &m, &r, a) == 0) {
        code = r.ErrorCode;
        if (got)
            *got = r.Assignment.len == 2 && r.Assignment.ptr && !memcmp(r.Assignment.ptr, "a1", 2);
    }
    ls_arena_free(a);
    return code;
}

static inline int kg_heartbeat(kf_env_t *e, const char *group, const char *member,
                               int32_t generation)
{
    ls_kafka_HeartbeatRequest m = {.GroupId = KS(group),
                                   .GenerationId = generation,
                                   .MemberId = KS(member),
                                   .GroupInstanceId = KNULL};
    ls_arena_t *a = ls_arena_new();
    ls_kafka_HeartbeatResponse r;
    int code = -1000;
    if (kf_call(e, 12, 3, &m, &r, a) == 0) code = r.ErrorCode;
    ls_arena_free(a);
    return code;
}

/* OffsetCommit v7 of topic partition 0; the partition's code. */
static inline int kg_commit(kf_env_t *e, const char *group, const char *member, int32_t generation,
                            const char *topic, int64_t offset, const char *metadata)
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
    if (kf_call(e, 8, 7, &m, &r, a) == 0 && r.NumTopics == 1 && r.Topics[0].NumPartitions == 1)
        code = r.Topics[0].Partitions[0].ErrorCode;
    ls_arena_free(a);
    return code;
}

/* OffsetFetch v7 of topic partition 0: the committed offset (-1: none), or
 * -1000 - the error code. */
static inline int64_t kg_fetch(kf_env_t *e, const char *group, const char *topic)
{
    int32_t part = 0;
    ls_kafka_OffsetFetchRequest_Topic t = {
        .Name = KS(topic), .PartitionIndexes = &part, .NumPartitionIndexes = 1};
    ls_kafka_OffsetFetchRequest m = {.GroupId = KS(group), .Topics = &t, .NumTopics = 1};
    ls_arena_t *a = ls_arena_new();
    ls_kafka_OffsetFetchResponse r;
    int64_t out = -1000 - 1000;
    if (kf_call(e, 9, 7, &m, &r, a) == 0) {
        if (r.ErrorCode)
            out = -1000 - r.ErrorCode;
        else if (r.NumTopics == 1 && r.Topics[0].NumPartitions == 1)
            out = r.Topics[0].Partitions[0].ErrorCode ? -1000 - r.Topics[0].Partitions[0].ErrorCode
                                                      : r.Topics[0].Partitions[0].CommittedOffset;
    }
    ls_arena_free(a);
    return out;
}
#endif
