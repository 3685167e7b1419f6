/* The KIP-1071 handlers (kafka/h_streams_group.c): StreamsGroupHeartbeat and
 * StreamsGroupDescribe through the handler harness (kafka_fake.h) over the
 * real group service and catalog in memory: the internal topics a join asks
 * for are created with their configs, tasks come once they exist, commits
 * check the member's epoch, and the refusals answer Kafka's codes. One group
 * id per test: the service is shared by the binary. */
#include "group/stgroup.h"
#include "kafka/msg.h"
#include "kafka_fake.h"
#include "unit.h"

static kf_env_t E;

#define KS(s) ((ls_kstr_t){(s), (int32_t)strlen(s)})
#define KNULL ((ls_kstr_t){NULL, -1})

typedef ls_kafka_StreamsGroupHeartbeatRequest hb_req_t;
typedef ls_kafka_StreamsGroupHeartbeatResponse hb_res_t;

/* A word count's topology: sub-topology 0 reads src and writes rep; 1 reads
 * rep into a store logged to chg (cleanup.policy=compact). */
typedef struct topo {
    ls_kstr_t src, rep, chg;
    ls_kafka_StreamsGroupHeartbeatRequest_KeyValue cfg;
    ls_kafka_StreamsGroupHeartbeatRequest_TopicInfo rep_info, chg_info;
    ls_kafka_StreamsGroupHeartbeatRequest_Subtopology subs[2];
} topo_t;

static void word_count(topo_t *t, const char *src, const char *rep, const char *chg)
{
    memset(t, 0, sizeof *t);
    t->src = KS(src);
    t->rep = KS(rep);
    t->chg = KS(chg);
    t->cfg = (ls_kafka_StreamsGroupHeartbeatRequest_KeyValue){KS("cleanup.policy"), KS("compact")};
    t->rep_info = (ls_kafka_StreamsGroupHeartbeatRequest_TopicInfo){.Name = t->rep};
    t->chg_info = (ls_kafka_StreamsGroupHeartbeatRequest_TopicInfo){
        .Name = t->chg, .TopicConfigs = &t->cfg, .NumTopicConfigs = 1};
    t->subs[0] =
        (ls_kafka_StreamsGroupHeartbeatRequest_Subtopology){.SubtopologyId = KS("0"),
                                                            .SourceTopics = &t->src,
                                                            .NumSourceTopics = 1,
                                                            .RepartitionSinkTopics = &t->rep,
                                                            .NumRepartitionSinkTopics = 1};
    t->subs[1] =
        (ls_kafka_StreamsGroupHeartbeatRequest_Subtopology){.SubtopologyId = KS("1"),
                                                            .StateChangelogTopics = &t->chg_info,
                                                            .NumStateChangelogTopics = 1,
                                                            .RepartitionSourceTopics = &t->rep_info,
                                                            .NumRepartitionSourceTopics = 1};
}

static hb_req_t request(const char *group, const char *member, int32_t epoch, topo_t *t)
{
    hb_req_t m = {.GroupId = KS(group),
                  .MemberId = KS(member),
                  .MemberEpoch = epoch,
                  .InstanceId = KNULL,
                  .RackId = KNULL,
                  .RebalanceTimeoutMs = epoch == 0 ? 30000 : -1,
                  .NumActiveTasks = -1,
                  .NumStandbyTasks = -1,
                  .NumWarmupTasks = -1,
                  .ProcessId = KS("proc-1"),
                  .NumClientTags = -1,
                  .NumTaskOffsets = -1,
                  .NumTaskEndOffsets = -1};
    if (t) {
        m.HasTopology = true;
        m.Topology.Subtopologies = t->subs;
        m.Topology.NumSubtopologies = 2;
    }
    return m;
}

typedef struct out {
    int code;
    char msg[256];
    int32_t epoch;
    int status[4];
    int nstatus;
    int active; /* tasks, -1: not sent */
} out_t;

static out_t beat(hb_req_t *m)
{
    ls_arena_t *a = ls_arena_new();
    hb_res_t r;
    out_t o = {.code = -1000, .active = -1};
    if (kf_call(&E, LS_KAFKA_API_STREAMS_GROUP_HEARTBEAT, 0, m, &r, a) == 0) {
        o.code = r.ErrorCode;
        snprintf(o.msg, sizeof o.msg, "%.*s", r.ErrorMessage.len > 0 ? (int)r.ErrorMessage.len : 0,
                 r.ErrorMessage.ptr ? r.ErrorMessage.ptr : "");
        o.epoch = r.MemberEpoch;
        for (int32_t i = 0; i < r.NumStatus && o.nstatus < 4; i++)
            o.status[o.nstatus++] = r.Status[i].StatusCode;
        if (r.NumActiveTasks >= 0) {
            o.active = 0;
            for (int32_t i = 0; i < r.NumActiveTasks; i++)
                o.active += r.ActiveTasks[i].NumPartitions;
        }
    }
    ls_arena_free(a);
    return o;
}

/* OffsetCommit v9 of topic partition 0 by member at epoch; the code. */
static int commit(const char *group, const char *member, int32_t epoch, const char *topic)
{
    ls_kafka_OffsetCommitRequest_Partition p = {
        .CommittedLeaderEpoch = -1, .CommitTimestamp = -1, .CommittedMetadata = KNULL};
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

/* StreamsGroupDescribe v0: the code; members, sub-topologies, active tasks
 * of the first member out. */
static int describe(const char *group, int *members, int *subs, int *active)
{
    ls_kstr_t id = KS(group);
    ls_kafka_StreamsGroupDescribeRequest m = {.GroupIds = &id, .NumGroupIds = 1};
    ls_arena_t *a = ls_arena_new();
    ls_kafka_StreamsGroupDescribeResponse r;
    int code = -1000;
    if (kf_call(&E, LS_KAFKA_API_STREAMS_GROUP_DESCRIBE, 0, &m, &r, a) == 0 && r.NumGroups == 1) {
        ls_kafka_StreamsGroupDescribeResponse_DescribedGroup *g = &r.Groups[0];
        code = g->ErrorCode;
        if (members) *members = g->NumMembers;
        if (subs) *subs = g->HasTopology ? g->Topology.NumSubtopologies : -1;
        if (active) {
            *active = 0;
            for (int32_t i = 0; g->NumMembers > 0 && i < g->Members[0].Assignment.NumActiveTasks;
                 i++)
                *active += g->Members[0].Assignment.ActiveTasks[i].NumPartitions;
        }
    }
    ls_arena_free(a);
    return code;
}

static int32_t partitions_of(const char *topic)
{
    ls_stream_t *s = ls_catalog_lookup(E.catalog, LS_DEFAULT_NAMESPACE, topic);
    int32_t n = s ? s->partitions : -1;
    ls_stream_release(s);
    return n;
}

TEST(join_creates_internal_topics_then_runs_tasks)
{
    CHECK(kf_topic(&E, "hsg-in", 3) == 0);
    topo_t t;
    word_count(&t, "hsg-in", "hsg-app-rep", "hsg-app-chg");
    hb_req_t m = request("hsg-app", "m-1", 0, &t);
    out_t o = beat(&m);
    CHECK_EQ_INT(o.code, LS_KERR_NONE);
    CHECK(o.epoch > 0);
    CHECK_EQ_INT(o.nstatus, 1);
    CHECK_EQ_INT(o.status[0], LS_STGROUP_MISSING_INTERNAL_TOPICS);
    CHECK_EQ_INT(o.active, 0);
    /* created by the heartbeat, with the counts the topology asks for */
    CHECK_EQ_INT(partitions_of("hsg-app-rep"), 3);
    CHECK_EQ_INT(partitions_of("hsg-app-chg"), 3);
    hb_req_t next = request("hsg-app", "m-1", o.epoch, NULL);
    out_t o2 = beat(&next);
    CHECK_EQ_INT(o2.code, LS_KERR_NONE);
    CHECK_EQ_INT(o2.nstatus, 0);
    CHECK_EQ_INT(o2.active, 6);
    int members = 0, subs = 0, active = 0;
    CHECK_EQ_INT(describe("hsg-app", &members, &subs, &active), LS_KERR_NONE);
    CHECK(members == 1 && subs == 2 && active == 6);
    /* commits under the member's epoch, as consumer groups' */
    CHECK_EQ_INT(commit("hsg-app", "m-1", o2.epoch, "hsg-in"), LS_KERR_NONE);
    CHECK_EQ_INT(commit("hsg-app", "m-1", o2.epoch - 1, "hsg-in"), LS_KERR_STALE_MEMBER_EPOCH);
    CHECK_EQ_INT(commit("hsg-app", "m-9", o2.epoch, "hsg-in"), LS_KERR_UNKNOWN_MEMBER_ID);
    /* leaving answers epoch -1; the group stays, empty */
    hb_req_t leave = request("hsg-app", "m-1", -1, NULL);
    out_t l = beat(&leave);
    CHECK(l.code == LS_KERR_NONE && l.epoch == -1);
    CHECK_EQ_INT(describe("hsg-app", &members, NULL, NULL), LS_KERR_NONE);
    CHECK_EQ_INT(members, 0);
}

TEST(refusals_answer_kafkas_codes)
{
    CHECK(kf_topic(&E, "hsg-in2", 1) == 0);
    topo_t t;
    word_count(&t, "hsg-in2", "hsg-r2", "hsg-c2");
    hb_req_t m = request("hsg-g2", "m", 0, NULL); /* joining without a topology */
    out_t o = beat(&m);
    CHECK_EQ_INT(o.code, LS_KERR_INVALID_REQUEST);
    CHECK(strstr(o.msg, "Topology") != NULL);
    m = request("", "m", 0, &t);
    CHECK_EQ_INT(beat(&m).code, LS_KERR_INVALID_REQUEST);
    m = request("hsg-g2", "ghost", 4, NULL);
    CHECK_EQ_INT(beat(&m).code, LS_KERR_UNKNOWN_MEMBER_ID);
    /* a changelog with a partition count is an invalid topology */
    t.chg_info.Partitions = 2;
    m = request("hsg-g2", "m", 0, &t);
    o = beat(&m);
    CHECK_EQ_INT(o.code, LS_KERR_STREAMS_INVALID_TOPOLOGY);
    CHECK(strstr(o.msg, "hsg-c2") != NULL);
    t.chg_info.Partitions = 0;
    /* regular expressions as sources: not supported (as on Kafka) */
    ls_kstr_t re = KS("hsg-.*");
    t.subs[0].SourceTopicRegex = &re;
    t.subs[0].NumSourceTopicRegex = 1;
    m = request("hsg-g2", "m", 0, &t);
    CHECK_EQ_INT(beat(&m).code, LS_KERR_INVALID_REQUEST);
    t.subs[0].NumSourceTopicRegex = 0;
    /* static membership is refused, naming the field */
    m = request("hsg-g2", "m", 0, &t);
    m.InstanceId = KS("i-1");
    o = beat(&m);
    CHECK_EQ_INT(o.code, LS_KERR_INVALID_REQUEST);
    CHECK(strstr(o.msg, "InstanceId") != NULL);
    /* one task type null while another is not */
    m = request("hsg-g2", "m", 0, &t);
    m.NumActiveTasks = 0;
    CHECK_EQ_INT(beat(&m).code, LS_KERR_INVALID_REQUEST);
    /* the tables' groups are read-only */
    m = request("lakestream.table.default.x", "m", 0, &t);
    CHECK_EQ_INT(beat(&m).code, LS_KERR_GROUP_AUTHORIZATION_FAILED);
    CHECK_EQ_INT(describe("hsg-none", NULL, NULL, NULL), LS_KERR_GROUP_ID_NOT_FOUND);
}

TEST(a_consumer_group_is_not_a_streams_group)
{
    CHECK(kf_topic(&E, "hsg-in3", 1) == 0);
    ls_kstr_t sub = KS("hsg-in3");
    ls_kafka_ConsumerGroupHeartbeatRequest c = {.GroupId = KS("hsg-g3"),
                                                .MemberId = KS("c-1"),
                                                .InstanceId = KNULL,
                                                .RackId = KNULL,
                                                .RebalanceTimeoutMs = 30000,
                                                .SubscribedTopicNames = &sub,
                                                .NumSubscribedTopicNames = 1,
                                                .SubscribedTopicRegex = KNULL,
                                                .ServerAssignor = KNULL,
                                                .NumTopicPartitions = 0};
    ls_arena_t *a = ls_arena_new();
    ls_kafka_ConsumerGroupHeartbeatResponse cr;
    CHECK(kf_call(&E, 68, 1, &c, &cr, a) == 0 && cr.ErrorCode == LS_KERR_NONE);
    ls_arena_free(a);
    topo_t t;
    word_count(&t, "hsg-in3", "hsg-r3", "hsg-c3");
    hb_req_t m = request("hsg-g3", "s-1", 0, &t);
    out_t o = beat(&m);
    CHECK_EQ_INT(o.code, LS_KERR_GROUP_ID_NOT_FOUND);
    CHECK(strstr(o.msg, "not a streams group") != NULL);
    CHECK_EQ_INT(describe("hsg-g3", NULL, NULL, NULL), LS_KERR_GROUP_ID_NOT_FOUND);
}

TEST(reading_the_group_needs_its_acl)
{
    topo_t t;
    word_count(&t, "hsg-in", "hsg-r4", "hsg-c4");
    CHECK(kf_authz_on(&E, NULL) == 0);
    hb_req_t m = request("hsg-g4", "m", 0, &t);
    CHECK_EQ_INT(beat(&m).code, LS_KERR_GROUP_AUTHORIZATION_FAILED);
    CHECK_EQ_INT(describe("hsg-g4", NULL, NULL, NULL), LS_KERR_GROUP_AUTHORIZATION_FAILED);
    kf_authz_off(&E);
}

int main(void)
{
    if (kf_open(&E) != 0) return 1;
    RUN(join_creates_internal_topics_then_runs_tasks);
    RUN(refusals_answer_kafkas_codes);
    RUN(a_consumer_group_is_not_a_streams_group);
    RUN(reading_the_group_needs_its_acl);
    kf_close(&E);
    UNIT_DONE();
}
