/* ElectLeaders, ListPartitionReassignments and AlterPartitionReassignments
 * handlers (kafka/h_reassign.c), through the handler harness
 * (kafka_fake.h): a leaderless broker needs no election
 * (ELECTION_NOT_NEEDED, UNKNOWN_TOPIC_OR_PARTITION for what does not exist),
 * has no reassignment under way and refuses one per partition
 * (INVALID_REPLICA_ASSIGNMENT); CLUSTER ALTER / DESCRIBE first. */
#include "kafka_fake.h"
#include "unit.h"

static kf_env_t E;

typedef ls_kafka_ElectLeadersRequest_TopicPartitions etopic_t;

/* ElectLeaders v2 of t[0..n) (n -1: every partition): 0 with the answer in
 * *r, or -1. */
static int elect(etopic_t *t, int32_t n, ls_kafka_ElectLeadersResponse *r, ls_arena_t *a)
{
    ls_kafka_ElectLeadersRequest m = {
        .ElectionType = 0, .TopicPartitions = t, .NumTopicPartitions = n, .TimeoutMs = 60000};
    return kf_call(&E, 43, 2, &m, r, a);
}

TEST(election_not_needed_for_existing_partitions)
{
    CHECK(kf_topic(&E, "el-two", 2) == 0);
    int32_t parts[3] = {1, 2, -1};
    etopic_t t[2] = {{.Topic = ls_kstr_c("el-two"), .Partitions = parts, .NumPartitions = 3},
                     {.Topic = ls_kstr_c("el-nosuch"), .Partitions = parts, .NumPartitions = 1}};
    ls_arena_t *a = ls_arena_new();
    ls_kafka_ElectLeadersResponse r;
    CHECK(elect(t, 2, &r, a) == 0);
    CHECK_EQ_INT(r.ErrorCode, LS_KERR_NONE);
    CHECK_EQ_INT(r.NumReplicaElectionResults, 2);
    const ls_kafka_ElectLeadersResponse_ReplicaElectionResult *e = &r.ReplicaElectionResults[0];
    CHECK(ls_kstr_eq(e->Topic, "el-two"));
    CHECK_EQ_INT(e->NumPartitionResult, 3);
    CHECK_EQ_INT(e->PartitionResult[0].PartitionId, 1);
    CHECK_EQ_INT(e->PartitionResult[0].ErrorCode, LS_KERR_ELECTION_NOT_NEEDED);
    CHECK(kf_kstr_has(e->PartitionResult[0].ErrorMessage, "leaderless"));
    CHECK_EQ_INT(e->PartitionResult[1].PartitionId, 2);
    CHECK_EQ_INT(e->PartitionResult[1].ErrorCode, LS_KERR_UNKNOWN_TOPIC_OR_PARTITION);
    CHECK_EQ_INT(e->PartitionResult[2].ErrorCode, LS_KERR_UNKNOWN_TOPIC_OR_PARTITION);
    e = &r.ReplicaElectionResults[1];
    CHECK(ls_kstr_eq(e->Topic, "el-nosuch"));
    CHECK_EQ_INT(e->NumPartitionResult, 1);
    CHECK_EQ_INT(e->PartitionResult[0].ErrorCode, LS_KERR_UNKNOWN_TOPIC_OR_PARTITION);
    ls_arena_free(a);
}

TEST(election_of_every_partition_answers_none)
{
    ls_arena_t *a = ls_arena_new();
    ls_kafka_ElectLeadersResponse r;
    CHECK(elect(NULL, -1, &r, a) == 0);
    CHECK_EQ_INT(r.ErrorCode, LS_KERR_NONE);
    CHECK_EQ_INT(r.NumReplicaElectionResults, 0);
    ls_arena_free(a);
}

TEST(election_cluster_authorization_failed)
{
    CHECK(kf_topic(&E, "el-denied", 1) == 0);
    int32_t part = 0;
    etopic_t t = {.Topic = ls_kstr_c("el-denied"), .Partitions = &part, .NumPartitions = 1};
    CHECK(kf_authz_on(&E, NULL) == 0);
    ls_arena_t *a = ls_arena_new();
    ls_kafka_ElectLeadersResponse r;
    int rc = elect(&t, 1, &r, a);
    kf_authz_off(&E);
    CHECK(rc == 0);
    CHECK_EQ_INT(r.ErrorCode, LS_KERR_CLUSTER_AUTHORIZATION_FAILED);
    CHECK_EQ_INT(r.NumReplicaElectionResults, 1);
    CHECK_EQ_INT(r.ReplicaElectionResults[0].PartitionResult[0].ErrorCode,
                 LS_KERR_CLUSTER_AUTHORIZATION_FAILED);
    ls_arena_free(a);
}

/* ListPartitionReassignments v0 of every topic: the error code, or -1000
 * (-2000: an answer listing reassignments). */
static int list_reassignments(void)
{
    ls_kafka_ListPartitionReassignmentsRequest m = {.TimeoutMs = 60000, .NumTopics = -1};
    ls_arena_t *a = ls_arena_new();
    ls_kafka_ListPartitionReassignmentsResponse r;
    int code = -1000;
    if (kf_call(&E, 46, 0, &m, &r, a) == 0) code = r.NumTopics == 0 ? r.ErrorCode : -2000;
    ls_arena_free(a);
    return code;
}

TEST(no_reassignment_is_ongoing)
{
    CHECK(kf_topic(&E, "ra-list", 1) == 0);
    CHECK_EQ_INT(list_reassignments(), LS_KERR_NONE);
}

TEST(list_cluster_authorization_failed)
{
    CHECK(kf_authz_on(&E, NULL) == 0);
    int code = list_reassignments();
    kf_authz_off(&E);
    CHECK_EQ_INT(code, LS_KERR_CLUSTER_AUTHORIZATION_FAILED);
}

/* AlterPartitionReassignments v1 of topic partition 0 to replicas {1, 2}:
 * 0 with the answer in *r, or -1. */
static int alter(const char *topic, ls_kafka_AlterPartitionReassignmentsResponse *r, ls_arena_t *a)
{
    int32_t replicas[2] = {1, 2};
    ls_kafka_AlterPartitionReassignmentsRequest_ReassignablePartition p = {
        .PartitionIndex = 0, .Replicas = replicas, .NumReplicas = 2};
    ls_kafka_AlterPartitionReassignmentsRequest_ReassignableTopic t = {
        .Name = ls_kstr_c(topic), .Partitions = &p, .NumPartitions = 1};
    ls_kafka_AlterPartitionReassignmentsRequest m = {
        .TimeoutMs = 60000, .AllowReplicationFactorChange = false, .Topics = &t, .NumTopics = 1};
    return kf_call(&E, 45, 1, &m, r, a);
}

TEST(reassignment_is_refused_per_partition)
{
    CHECK(kf_topic(&E, "ra-alter", 1) == 0);
    ls_arena_t *a = ls_arena_new();
    ls_kafka_AlterPartitionReassignmentsResponse r;
    CHECK(alter("ra-alter", &r, a) == 0);
    CHECK_EQ_INT(r.ErrorCode, LS_KERR_NONE);
    CHECK(!r.AllowReplicationFactorChange); /* echoed */
    CHECK_EQ_INT(r.NumResponses, 1);
    CHECK(ls_kstr_eq(r.Responses[0].Name, "ra-alter"));
    CHECK_EQ_INT(r.Responses[0].NumPartitions, 1);
    CHECK_EQ_INT(r.Responses[0].Partitions[0].PartitionIndex, 0);
    CHECK_EQ_INT(r.Responses[0].Partitions[0].ErrorCode, LS_KERR_INVALID_REPLICA_ASSIGNMENT);
    CHECK(kf_kstr_has(r.Responses[0].Partitions[0].ErrorMessage, "nothing to reassign"));
    ls_arena_free(a);
}

TEST(reassignment_cluster_authorization_failed)
{
    CHECK(kf_authz_on(&E, NULL) == 0);
    ls_arena_t *a = ls_arena_new();
    ls_kafka_AlterPartitionReassignmentsResponse r;
    int rc = alter("ra-alter", &r, a);
    kf_authz_off(&E);
    CHECK(rc == 0);
    CHECK_EQ_INT(r.ErrorCode, LS_KERR_CLUSTER_AUTHORIZATION_FAILED);
    CHECK_EQ_INT(r.NumResponses, 0);
    ls_arena_free(a);
}

int main(void)
{
    if (kf_open(&E) != 0) return 1;
    RUN(election_not_needed_for_existing_partitions);
    RUN(election_of_every_partition_answers_none);
    RUN(election_cluster_authorization_failed);
    RUN(no_reassignment_is_ongoing);
    RUN(list_cluster_authorization_failed);
    RUN(reassignment_is_refused_per_partition);
    RUN(reassignment_cluster_authorization_failed);
    kf_close(&E);
    UNIT_DONE();
}
