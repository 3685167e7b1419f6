/* The KIP-848 handlers (kafka/h_consumer_group.c): ConsumerGroupHeartbeat
 * and ConsumerGroupDescribe through the handler harness (kafka_fake.h) over
 * the real group service in memory: assignments by topic id, the exact
 * Kafka codes of the refusals, OffsetCommit v9's member-epoch check, and
 * the rule that a classic group with members is not taken over. One group
 * id per test: the service is shared by the binary. */
#include "kafka/msg.h"
#include "kafka_fake.h"
#include "unit.h"

static kf_env_t E;

#define KS(s) ((ls_kstr_t){(s), (int32_t)strlen(s)})
#define KNULL ((ls_kstr_t){NULL, -1})

typedef struct hb {
    int code;
    int32_t epoch;
    int npartitions; /* assigned, over every topic */
    bool id_matches; /* every assigned topic id is the topic's */
} hb_t;

/* ConsumerGroupHeartbeat v1 of member in group; topic: the subscription to
 * send (NULL: unchanged). */
static hb_t heartbeat(const char *group, const char *member, int32_t epoch, const char *topic)
{
    ls_kstr_t sub = KS(topic ? topic : "");
    ls_kafka_ConsumerGroupHeartbeatRequest m = {.GroupId = KS(group),
                                                .MemberId = KS(member),
                                                .MemberEpoch = epoch,
                                                .InstanceId = KNULL,
                                                .RackId = KNULL,
                                                .RebalanceTimeoutMs = 30000,
                                                .SubscribedTopicNames = topic ? &sub : NULL,
                                                .NumSubscribedTopicNames = topic ? 1 : -1,
                                                .SubscribedTopicRegex = KNULL,
                                                .ServerAssignor = KNULL,
                                                .TopicPartitions = NULL,
                                                .NumTopicPartitions = topic ? 0 : -1};
    ls_arena_t *a = ls_arena_new();
    ls_kafka_ConsumerGroupHeartbeatResponse r;
    hb_t out = {.code = -1000, .id_matches = true};
    if (kf_call(&E, 68, 1, &m, &r, a) == 0) {
        out.code = r.ErrorCode;
        out.epoch = r.MemberEpoch;
        for (int32_t i = 0; r.HasAssignment && i < r.Assignment.NumTopicPartitions; i++) {
            ls_kafka_ConsumerGroupHeartbeatResponse_TopicPartitions *t =
                &r.Assignment.TopicPartitions[i];
            out.npartitions += t->NumPartitions;
            ls_stream_t *s = ls_catalog_lookup(E.catalog, LS_DEFAULT_NAMESPACE, topic ? topic : "");
            if (topic && (!s || memcmp(&s->id, &t->TopicId, sizeof s->id))) out.id_matches = false;
            ls_stream_release(s);
        }
    }
    ls_arena_free(a);
    return out;
}

/* OffsetCommit v9 of topic partition 0 by member at epoch; the code. */
static int commit(const char *group, const char *member, int32_t epoch, const char *topic)
{
    ls_kafka_OffsetCommitRequest_Partition p = {.PartitionIndex = 0,
                                                .CommittedOffset = 0,
                                                .CommittedLeaderEpoch = -1,
                                                .CommitTimestamp = -1,
                                                .CommittedMetadata = KNULL};
    ls_kafka_OffsetCommitRequest_Topic t = {
        .Name = KS(topic), .Partitions = &p, .NumPartitions = 1};
    ls_kafka_OffsetCommitRequest m = {.GroupId = KS(group),
                                      .GenerationIdOrMemberEpoch = epoch,
                                      .MemberId = KS(member),
                                      .GroupInstanceId = KNULL,
                                      .RetentionTimeMs = -1,
                                      .Topics = &t,
                                      .NumTopics = 1};
    ls_arena_t *a = ls_arena_new();
    ls_kafka_OffsetCommitResponse r;
    int code = -1000;
    if (kf_call(&E, 8, 9, &m, &r, a) == 0 && r.NumTopics == 1 && r.Topics[0].NumPartitions == 1)
        code = r.Topics[0].Partitions[0].ErrorCode;
    ls_arena_free(a);
    return code;
}

/* ConsumerGroupDescribe v1 of group: the code; members and epoch out. */
static int describe(const char *group, int *members, int32_t *epoch)
{
    ls_kstr_t id = KS(group);
    ls_kafka_ConsumerGroupDescribeRequest m = {.GroupIds = &id, .NumGroupIds = 1};
    ls_arena_t *a = ls_arena_new();
    ls_kafka_ConsumerGroupDescribeResponse r;
    int code = -1000;
    if (kf_call(&E, 69, 1, &m, &r, a) == 0 && r.NumGroups == 1) {
        code = r.Groups[0].ErrorCode;
        if (members) *members = r.Groups[0].NumMembers;
        if (epoch) *epoch = r.Groups[0].GroupEpoch;
    }
    ls_arena_free(a);
    return code;
}

TEST(join_assigns_by_topic_id_and_commits_check_the_epoch)
{
    CHECK(kf_topic(&E, "hcg-t1", 4) == 0);
    hb_t h = heartbeat("hcg-g1", "m-1", 0, "hcg-t1");
    CHECK_EQ_INT(h.code, LS_KERR_NONE);
    CHECK(h.epoch > 0 && h.npartitions == 4 && h.id_matches);
    CHECK_EQ_INT(commit("hcg-g1", "m-1", h.epoch, "hcg-t1"), LS_KERR_NONE);
    CHECK_EQ_INT(commit("hcg-g1", "m-1", h.epoch - 1, "hcg-t1"), LS_KERR_STALE_MEMBER_EPOCH);
    CHECK_EQ_INT(commit("hcg-g1", "m-1", h.epoch + 1, "hcg-t1"), LS_KERR_FENCED_MEMBER_EPOCH);
    CHECK_EQ_INT(commit("hcg-g1", "nobody", h.epoch, "hcg-t1"), LS_KERR_UNKNOWN_MEMBER_ID);
    int members = 0;
    int32_t epoch = 0;
    CHECK_EQ_INT(describe("hcg-g1", &members, &epoch), LS_KERR_NONE);
    CHECK(members == 1 && epoch == h.epoch);
    /* leaving: the epoch answered is the request's */
    hb_t left = heartbeat("hcg-g1", "m-1", -1, NULL);
    CHECK(left.code == LS_KERR_NONE && left.epoch == -1);
    CHECK_EQ_INT(describe("hcg-g1", &members, NULL), LS_KERR_NONE);
    CHECK_EQ_INT(members, 0);
}

TEST(refusals_answer_kafkas_codes)
{
    CHECK(kf_topic(&E, "hcg-t2", 1) == 0);
    /* v1: the client names itself */
    CHECK_EQ_INT(heartbeat("hcg-g2", "", 0, "hcg-t2").code, LS_KERR_INVALID_REQUEST);
    CHECK_EQ_INT(heartbeat("", "m", 0, "hcg-t2").code, LS_KERR_INVALID_GROUP_ID);
    /* an unknown member, a member with a wrong epoch */
    CHECK_EQ_INT(heartbeat("hcg-g2", "ghost", 3, NULL).code, LS_KERR_UNKNOWN_MEMBER_ID);
    hb_t h = heartbeat("hcg-g2", "m-2", 0, "hcg-t2");
    CHECK_EQ_INT(h.code, LS_KERR_NONE);
    CHECK_EQ_INT(heartbeat("hcg-g2", "m-2", h.epoch + 5, NULL).code, LS_KERR_FENCED_MEMBER_EPOCH);
    /* the tables' groups are read-only */
    CHECK_EQ_INT(heartbeat("lakestream.table.default.x", "m", 0, "hcg-t2").code,
                 LS_KERR_GROUP_AUTHORIZATION_FAILED);
    /* a group that does not exist, or is a table's */
    CHECK_EQ_INT(describe("hcg-none", NULL, NULL), LS_KERR_GROUP_ID_NOT_FOUND);
    CHECK_EQ_INT(describe("lakestream.table.default.x", NULL, NULL), LS_KERR_GROUP_ID_NOT_FOUND);
}

TEST(a_classic_group_with_members_is_not_taken_over)
{
    CHECK(kf_topic(&E, "hcg-t3", 1) == 0);
    /* a classic member (JoinGroup v5 twice: MEMBER_ID_REQUIRED, then in) */
    ls_kafka_JoinGroupRequest_Protocol p = {.Name = KS("range"), .Metadata = {(uint8_t *)"m", 1}};
    char member[128] = "";
    for (int i = 0; i < 2; i++) {
        ls_kafka_JoinGroupRequest m = {.GroupId = KS("hcg-g3"),
                                       .SessionTimeoutMs = 10000,
                                       .RebalanceTimeoutMs = 10000,
                                       .MemberId = KS(member),
                                       .GroupInstanceId = KNULL,
                                       .ProtocolType = KS("consumer"),
                                       .Protocols = &p,
                                       .NumProtocols = 1};
        ls_arena_t *a = ls_arena_new();
        ls_kafka_JoinGroupResponse r;
        CHECK(kf_call(&E, 11, 5, &m, &r, a) == 0);
        snprintf(member, sizeof member, "%.*s", r.MemberId.len > 0 ? (int)r.MemberId.len : 0,
                 r.MemberId.ptr ? r.MemberId.ptr : "");
        ls_arena_free(a);
    }
    CHECK(member[0]);
    CHECK_EQ_INT(heartbeat("hcg-g3", "m-3", 0, "hcg-t3").code, LS_KERR_GROUP_ID_NOT_FOUND);
    CHECK_EQ_INT(describe("hcg-g3", NULL, NULL), LS_KERR_GROUP_ID_NOT_FOUND);
}

/* IncrementalAlterConfigs v1 of group: SET key=value (value NULL: DELETE);
 * the resource's code, the message in msg. */
static int alter_group(const char *group, const char *key, const char *value, char *msg)
{
    ls_kafka_IncrementalAlterConfigsRequest_AlterableConfig c = {
        .Name = KS(key), .ConfigOperation = value ? 0 : 1, .Value = value ? KS(value) : KNULL};
    ls_kafka_IncrementalAlterConfigsRequest_AlterConfigsResource r = {
        .ResourceType = 32, .ResourceName = KS(group), .Configs = &c, .NumConfigs = 1};
    ls_kafka_IncrementalAlterConfigsRequest m = {.Resources = &r, .NumResources = 1};
    ls_arena_t *a = ls_arena_new();
    ls_kafka_IncrementalAlterConfigsResponse resp;
    int code = -1000;
    if (kf_call(&E, 44, 1, &m, &resp, a) == 0 && resp.NumResponses == 1) {
        code = resp.Responses[0].ErrorCode;
        if (msg)
            snprintf(msg, 256, "%.*s",
                     resp.Responses[0].ErrorMessage.len > 0
                         ? (int)resp.Responses[0].ErrorMessage.len
                         : 0,
                     resp.Responses[0].ErrorMessage.ptr ? resp.Responses[0].ErrorMessage.ptr : "");
    }
    ls_arena_free(a);
    return code;
}

/* DescribeConfigs v4 of group's key: the value (-1: absent), its source. */
static int32_t describe_group_config(const char *group, const char *key, int8_t *source)
{
    ls_kstr_t k = KS(key);
    ls_kafka_DescribeConfigsRequest_DescribeConfigsResource r = {.ResourceType = 32,
                                                                 .ResourceName = KS(group),
                                                                 .ConfigurationKeys = &k,
                                                                 .NumConfigurationKeys = 1};
    ls_kafka_DescribeConfigsRequest m = {.Resources = &r, .NumResources = 1};
    ls_arena_t *a = ls_arena_new();
    ls_kafka_DescribeConfigsResponse resp;
    int32_t v = -1;
    if (kf_call(&E, 32, 4, &m, &resp, a) == 0 && resp.NumResults == 1 &&
        resp.Results[0].ErrorCode == 0 && resp.Results[0].NumConfigs == 1) {
        v = (int32_t)strtol(resp.Results[0].Configs[0].Value.ptr, NULL, 10);
        *source = resp.Results[0].Configs[0].ConfigSource;
    }
    ls_arena_free(a);
    return v;
}

/* HeartbeatIntervalMs answered to member's heartbeat. */
static int32_t interval_given(const char *group, const char *member, int32_t epoch)
{
    ls_kafka_ConsumerGroupHeartbeatRequest m = {.GroupId = KS(group),
                                                .MemberId = KS(member),
                                                .MemberEpoch = epoch,
                                                .InstanceId = KNULL,
                                                .RackId = KNULL,
                                                .RebalanceTimeoutMs = -1,
                                                .NumSubscribedTopicNames = -1,
                                                .SubscribedTopicRegex = KNULL,
                                                .ServerAssignor = KNULL,
                                                .NumTopicPartitions = -1};
    ls_arena_t *a = ls_arena_new();
    ls_kafka_ConsumerGroupHeartbeatResponse r;
    int32_t v = -1;
    if (kf_call(&E, 68, 1, &m, &r, a) == 0 && r.ErrorCode == 0) v = r.HeartbeatIntervalMs;
    ls_arena_free(a);
    return v;
}

/* HeartbeatIntervalMs answered to a ShareGroupHeartbeat joining member
 * to group (subscribed to topic); -1 on an error. */
static int32_t share_interval_given(const char *group, const char *member, const char *topic)
{
    ls_kstr_t sub = KS(topic);
    ls_kafka_ShareGroupHeartbeatRequest m = {.GroupId = KS(group),
                                             .MemberId = KS(member),
                                             .MemberEpoch = 0,
                                             .RackId = ls_kstr_null(),
                                             .SubscribedTopicNames = &sub,
                                             .NumSubscribedTopicNames = 1};
    ls_arena_t *a = ls_arena_new();
    ls_kafka_ShareGroupHeartbeatResponse r;
    int32_t v = kf_call(&E, 76, 1, &m, &r, a) == 0 && r.ErrorCode == 0 ? r.HeartbeatIntervalMs : -1;
    ls_arena_free(a);
    return v;
}

TEST(share_group_configs_are_applied)
{
    CHECK(kf_topic(&E, "hcg-st", 1) == 0);
    CHECK_EQ_INT(share_interval_given("hcg-sg", "s-1", "hcg-st"),
                 E.cfg.group_share_heartbeat_interval_ms);
    char msg[256];
    CHECK_EQ_INT(alter_group("hcg-sg", "share.heartbeat.interval.ms", "7000", msg), LS_KERR_NONE);
    int8_t src = -1;
    CHECK_EQ_INT(describe_group_config("hcg-sg", "share.heartbeat.interval.ms", &src), 7000);
    CHECK_EQ_INT(src, 8); /* GROUP_CONFIG */
    CHECK_EQ_INT(share_interval_given("hcg-sg", "s-2", "hcg-st"), 7000);
    /* the session must stay above the heartbeat, the group's or the broker's */
    CHECK_EQ_INT(alter_group("hcg-sg", "share.heartbeat.interval.ms", "15000", msg), LS_KERR_NONE);
    E.cfg.group_share_min_session_timeout_ms = 10000;
    CHECK_EQ_INT(alter_group("hcg-sg", "share.session.timeout.ms", "12000", msg),
                 LS_KERR_INVALID_CONFIG);
    CHECK(strstr(msg, "share.heartbeat.interval.ms (15000) must be less than "
                      "share.session.timeout.ms (12000)") != NULL);
    E.cfg.group_share_min_session_timeout_ms = 45000;
    CHECK_EQ_INT(describe_group_config("hcg-sg", "share.record.lock.duration.ms", &src),
                 E.cfg.group_share_record_lock_duration_ms);
    CHECK_EQ_INT(src, 5); /* DEFAULT_CONFIG */
}

TEST(group_configs_are_described_altered_and_applied)
{
    CHECK(kf_topic(&E, "hcg-t4", 1) == 0);
    hb_t h = heartbeat("hcg-g4", "m-4", 0, "hcg-t4");
    CHECK_EQ_INT(h.code, LS_KERR_NONE);
    int32_t def = E.cfg.group_consumer_heartbeat_interval_ms;
    CHECK_EQ_INT(interval_given("hcg-g4", "m-4", h.epoch), def);
    int8_t src = -1;
    CHECK_EQ_INT(describe_group_config("hcg-g4", "consumer.heartbeat.interval.ms", &src), def);
    CHECK_EQ_INT(src, 5); /* DEFAULT_CONFIG */
    char msg[256];
    CHECK_EQ_INT(alter_group("hcg-g4", "consumer.heartbeat.interval.ms", "6000", msg),
                 LS_KERR_NONE);
    CHECK_EQ_INT(describe_group_config("hcg-g4", "consumer.heartbeat.interval.ms", &src), 6000);
    CHECK_EQ_INT(src, 8);                                         /* GROUP_CONFIG */
    CHECK_EQ_INT(interval_given("hcg-g4", "m-4", h.epoch), 6000); /* applied */
    /* the broker's group.consumer.{min,max}.* bound the group's values, with
     * Kafka's words; nothing is stored */
    CHECK_EQ_INT(alter_group("hcg-g4", "consumer.heartbeat.interval.ms", "1234", msg),
                 LS_KERR_INVALID_CONFIG);
    CHECK(strstr(msg, "consumer.heartbeat.interval.ms must be greater than or equal to "
                      "group.consumer.min.heartbeat.interval.ms (5000)") != NULL);
    CHECK_EQ_INT(alter_group("hcg-g4", "consumer.heartbeat.interval.ms", "15001", msg),
                 LS_KERR_INVALID_CONFIG);
    CHECK(strstr(msg, "less than or equal to group.consumer.max.heartbeat.interval.ms") != NULL);
    CHECK_EQ_INT(alter_group("hcg-g4", "consumer.session.timeout.ms", "60001", msg),
                 LS_KERR_INVALID_CONFIG);
    CHECK(strstr(msg, "group.consumer.max.session.timeout.ms (60000)") != NULL);
    CHECK_EQ_INT(describe_group_config("hcg-g4", "consumer.heartbeat.interval.ms", &src), 6000);
    /* refusals name the key: unknown, one of Kafka's keys not served, below
     * a key's least value or its broker bound, not a positive int, a
     * heartbeat interval not below the session timeout */
    CHECK_EQ_INT(alter_group("hcg-g4", "consumer.nope", "1", msg), LS_KERR_INVALID_CONFIG);
    CHECK(strstr(msg, "consumer.nope") != NULL);
    CHECK_EQ_INT(alter_group("hcg-g4", "share.renew.acknowledge.enable", "false", msg),
                 LS_KERR_INVALID_CONFIG);
    CHECK(strstr(msg, "share.renew.acknowledge.enable") != NULL);
    CHECK_EQ_INT(alter_group("hcg-g4", "share.partition.max.record.locks", "4001", msg),
                 LS_KERR_INVALID_CONFIG);
    CHECK(strstr(msg, "group.share.max.partition.max.record.locks (4000)") != NULL);
    CHECK_EQ_INT(alter_group("hcg-g4", "share.record.lock.duration.ms", "999", msg),
                 LS_KERR_INVALID_CONFIG);
    CHECK(strstr(msg, "Value must be at least 1000") != NULL);
    CHECK_EQ_INT(alter_group("hcg-g4", "share.record.lock.duration.ms", "1000", msg),
                 LS_KERR_INVALID_CONFIG);
    CHECK(strstr(msg, "share.record.lock.duration.ms must be greater than or equal to "
                      "group.share.min.record.lock.duration.ms (15000)") != NULL);
    CHECK_EQ_INT(alter_group("hcg-g4", "share.delivery.count.limit", "11", msg),
                 LS_KERR_INVALID_CONFIG);
    CHECK(strstr(msg, "group.share.max.delivery.count.limit (10)") != NULL);
    CHECK_EQ_INT(alter_group("hcg-g4", "share.heartbeat.interval.ms", "4999", msg),
                 LS_KERR_INVALID_CONFIG);
    CHECK(strstr(msg, "group.share.min.heartbeat.interval.ms") != NULL);
    CHECK_EQ_INT(alter_group("hcg-g4", "share.record.lock.duration.ms", "20000", msg),
                 LS_KERR_NONE);
    CHECK_EQ_INT(alter_group("hcg-g4", "share.delivery.count.limit", "3", msg), LS_KERR_NONE);
    CHECK_EQ_INT(alter_group("hcg-g4", "share.session.timeout.ms", "50000", msg), LS_KERR_NONE);
    CHECK_EQ_INT(describe_group_config("hcg-g4", "share.record.lock.duration.ms", &src), 20000);
    CHECK_EQ_INT(alter_group("hcg-g4", "consumer.session.timeout.ms", "-5", msg),
                 LS_KERR_INVALID_CONFIG);
    CHECK_EQ_INT(alter_group("hcg-g4", "consumer.session.timeout.ms", "1000", msg),
                 LS_KERR_INVALID_CONFIG);
    CHECK(strstr(msg, "group.consumer.min.session.timeout.ms") != NULL);
    int32_t min_session = E.cfg.group_consumer_min_session_timeout_ms;
    E.cfg.group_consumer_min_session_timeout_ms = 1000; /* a session below the heartbeat */
    CHECK_EQ_INT(alter_group("hcg-g4", "consumer.session.timeout.ms", "5000", msg),
                 LS_KERR_INVALID_CONFIG);
    CHECK(strstr(msg, "must be less than") != NULL);
    E.cfg.group_consumer_min_session_timeout_ms = min_session;
    /* the share keys take Kafka's words only */
    CHECK_EQ_INT(alter_group("hcg-g4", "share.isolation.level", "read_committed", msg),
                 LS_KERR_NONE);
    CHECK_EQ_INT(alter_group("hcg-g4", "share.isolation.level", "committed", msg),
                 LS_KERR_INVALID_CONFIG);
    CHECK(strstr(msg, "read_committed or read_uncommitted") != NULL);
    /* KIP-1106's by_duration takes Java's Duration form, never negative */
    CHECK_EQ_INT(alter_group("hcg-g4", "share.auto.offset.reset", "by_duration:P1DT2H30M", msg),
                 LS_KERR_NONE);
    char text[64];
    CHECK(ls_group_configs_get_text(E.group_configs, "hcg-g4", "share.auto.offset.reset", text,
                                    sizeof text));
    CHECK(ls_group_config_duration_ms(text) == 95400000);
    CHECK(ls_group_config_duration_ms("by_duration:PT0.5S") == 500);
    for (int i = 0; i < 5; i++) {
        static const char *bad[] = {"by_duration:-PT1H", "by_duration:PT", "by_duration:1H",
                                    "by_duration:PT1D", "by_duration:P1H"};
        CHECK_EQ_INT(alter_group("hcg-g4", "share.auto.offset.reset", bad[i], msg),
                     LS_KERR_INVALID_CONFIG);
        CHECK(strstr(msg, "by_duration:<ISO-8601 duration") != NULL);
    }
    /* deleted: back to the broker's */
    CHECK_EQ_INT(alter_group("hcg-g4", "consumer.heartbeat.interval.ms", NULL, msg), LS_KERR_NONE);
    CHECK_EQ_INT(interval_given("hcg-g4", "m-4", h.epoch), def);
}

int main(void)
{
    if (kf_open(&E) != 0) return 1;
    RUN(join_assigns_by_topic_id_and_commits_check_the_epoch);
    RUN(refusals_answer_kafkas_codes);
    RUN(a_classic_group_with_members_is_not_taken_over);
    RUN(group_configs_are_described_altered_and_applied);
    RUN(share_group_configs_are_applied);
    kf_close(&E);
    UNIT_DONE();
}
