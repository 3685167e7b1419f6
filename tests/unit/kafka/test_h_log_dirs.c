/* DescribeLogDirs and AlterReplicaLogDirs handlers (kafka/h_log_dirs.c),
 * through the handler harness (kafka_fake.h): one virtual log dir named by
 * the object store URL without its credentials, the partitions asked for
 * with their retained bytes (unknown ones left out), CLUSTER DESCRIBE /
 * ALTER first; any dir an alter names is LOG_DIR_NOT_FOUND. */
#include "kafka_fake.h"
#include "unit.h"

static kf_env_t E;

typedef ls_kafka_DescribeLogDirsRequest_DescribableLogDirTopic dtopic_t;

/* DescribeLogDirs v4 of topics t[0..n) (n -1: every topic): 0 with the
 * answer in *r, or -1. */
static int describe(dtopic_t *t, int32_t n, ls_kafka_DescribeLogDirsResponse *r, ls_arena_t *a)
{
    ls_kafka_DescribeLogDirsRequest m = {.Topics = t, .NumTopics = n};
    return kf_call(&E, 35, 4, &m, r, a);
}

static const ls_kafka_DescribeLogDirsResponse_DescribeLogDirsTopic *
find_topic(const ls_kafka_DescribeLogDirsResponse *r, const char *name)
{
    for (int32_t i = 0; r->NumResults == 1 && i < r->Results[0].NumTopics; i++)
        if (ls_kstr_eq(r->Results[0].Topics[i].Name, name)) return &r->Results[0].Topics[i];
    return NULL;
}

TEST(one_virtual_dir_without_credentials)
{
    char *saved = E.cfg.object_store_url;
    E.cfg.object_store_url = "s3://AKID:secret@bucket/prefix";
    ls_arena_t *a = ls_arena_new();
    ls_kafka_DescribeLogDirsResponse r;
    int rc = describe(NULL, 0, &r, a);
    E.cfg.object_store_url = saved;
    CHECK(rc == 0);
    CHECK_EQ_INT(r.ErrorCode, LS_KERR_NONE);
    CHECK_EQ_INT(r.NumResults, 1);
    CHECK_EQ_INT(r.Results[0].ErrorCode, LS_KERR_NONE);
    CHECK(ls_kstr_eq(r.Results[0].LogDir, "s3://bucket/prefix"));
    CHECK(!kf_kstr_has(r.Results[0].LogDir, "secret"));
    CHECK_EQ_INT(r.Results[0].TotalBytes, -1);
    CHECK_EQ_INT(r.Results[0].UsableBytes, -1);
    CHECK_EQ_INT(r.Results[0].NumTopics, 0);
    ls_arena_free(a);
}

TEST(partitions_asked_for_with_their_bytes)
{
    CHECK(kf_topic(&E, "ld-two", 2) == 0);
    CHECK_EQ_INT(kf_produce(&E, "ld-two", 1, 2), LS_KERR_NONE);
    int32_t parts[3] = {0, 1, 9}; /* 9: no such partition, left out */
    dtopic_t t[2] = {{.Topic = ls_kstr_c("ld-two"), .Partitions = parts, .NumPartitions = 3},
                     {.Topic = ls_kstr_c("ld-nosuch"), .Partitions = parts, .NumPartitions = 1}};
    ls_arena_t *a = ls_arena_new();
    ls_kafka_DescribeLogDirsResponse r;
    CHECK(describe(t, 2, &r, a) == 0);
    CHECK_EQ_INT(r.ErrorCode, LS_KERR_NONE);
    CHECK_EQ_INT(r.NumResults, 1);
    CHECK_EQ_INT(r.Results[0].NumTopics, 1); /* the unknown topic is left out */
    const ls_kafka_DescribeLogDirsResponse_DescribeLogDirsTopic *d = find_topic(&r, "ld-two");
    CHECK(d != NULL);
    CHECK_EQ_INT(d->NumPartitions, 2);
    CHECK_EQ_INT(d->Partitions[0].PartitionIndex, 0);
    CHECK_EQ_INT(d->Partitions[0].PartitionSize, 0);
    CHECK_EQ_INT(d->Partitions[1].PartitionIndex, 1);
    CHECK(d->Partitions[1].PartitionSize > 0);
    CHECK_EQ_INT(d->Partitions[1].OffsetLag, 0);
    CHECK(!d->Partitions[1].IsFutureKey);
    ls_arena_free(a);
}

TEST(null_topics_describe_every_partition)
{
    CHECK(kf_topic(&E, "ld-all", 3) == 0);
    ls_arena_t *a = ls_arena_new();
    ls_kafka_DescribeLogDirsResponse r;
    CHECK(describe(NULL, -1, &r, a) == 0);
    CHECK_EQ_INT(r.ErrorCode, LS_KERR_NONE);
    const ls_kafka_DescribeLogDirsResponse_DescribeLogDirsTopic *d = find_topic(&r, "ld-all");
    CHECK(d != NULL);
    CHECK_EQ_INT(d->NumPartitions, 3);
    CHECK_EQ_INT(d->Partitions[2].PartitionIndex, 2);
    ls_arena_free(a);
}

TEST(describe_cluster_authorization_failed)
{
    CHECK(kf_topic(&E, "ld-denied", 1) == 0);
    CHECK(kf_authz_on(&E, NULL) == 0);
    ls_arena_t *a = ls_arena_new();
    ls_kafka_DescribeLogDirsResponse r, old;
    int rc = describe(NULL, -1, &r, a);
    /* v1-2 have no error code: a denied request sees no dir at all */
    ls_kafka_DescribeLogDirsRequest m = {.Topics = NULL, .NumTopics = -1};
    int rc_old = kf_call(&E, 35, 1, &m, &old, a);
    kf_authz_off(&E);
    CHECK(rc == 0);
    CHECK_EQ_INT(r.ErrorCode, LS_KERR_CLUSTER_AUTHORIZATION_FAILED);
    CHECK_EQ_INT(r.NumResults, 0);
    CHECK(rc_old == 0);
    CHECK_EQ_INT(old.NumResults, 0);
    ls_arena_free(a);
}

/* AlterReplicaLogDirs v2 of topic partitions 0 and 1 to path: each
 * partition's code in codes[2]; 0, or -1. */
static int alter(const char *topic, const char *path, int16_t codes[2])
{
    int32_t parts[2] = {0, 1};
    ls_kafka_AlterReplicaLogDirsRequest_AlterReplicaLogDirTopic t = {
        .Name = ls_kstr_c(topic), .Partitions = parts, .NumPartitions = 2};
    ls_kafka_AlterReplicaLogDirsRequest_AlterReplicaLogDir d = {
        .Path = ls_kstr_c(path), .Topics = &t, .NumTopics = 1};
    ls_kafka_AlterReplicaLogDirsRequest m = {.Dirs = &d, .NumDirs = 1};
    ls_arena_t *a = ls_arena_new();
    ls_kafka_AlterReplicaLogDirsResponse r;
    int rc = kf_call(&E, 34, 2, &m, &r, a);
    if (rc == 0 &&
        (r.NumResults != 1 || !ls_kstr_eq(r.Results[0].TopicName, topic) ||
         r.Results[0].NumPartitions != 2 || r.Results[0].Partitions[1].PartitionIndex != 1))
        rc = -1;
    for (int i = 0; rc == 0 && i < 2; i++)
        codes[i] = r.Results[0].Partitions[i].ErrorCode;
    ls_arena_free(a);
    return rc;
}

TEST(alter_replica_log_dirs_finds_no_dir)
{
    CHECK(kf_topic(&E, "ld-move", 2) == 0);
    int16_t codes[2] = {-1, -1};
    CHECK(alter("ld-move", "/var/kafka-logs", codes) == 0);
    CHECK_EQ_INT(codes[0], LS_KERR_LOG_DIR_NOT_FOUND);
    CHECK_EQ_INT(codes[1], LS_KERR_LOG_DIR_NOT_FOUND);
}

TEST(alter_replica_log_dirs_cluster_authorization_failed)
{
    CHECK(kf_authz_on(&E, NULL) == 0);
    int16_t codes[2] = {-1, -1};
    int rc = alter("ld-move", "/var/kafka-logs", codes);
    kf_authz_off(&E);
    CHECK(rc == 0);
    CHECK_EQ_INT(codes[0], LS_KERR_CLUSTER_AUTHORIZATION_FAILED);
    CHECK_EQ_INT(codes[1], LS_KERR_CLUSTER_AUTHORIZATION_FAILED);
}

int main(void)
{
    if (kf_open(&E) != 0) return 1;
    RUN(one_virtual_dir_without_credentials);
    RUN(partitions_asked_for_with_their_bytes);
    RUN(null_topics_describe_every_partition);
    RUN(describe_cluster_authorization_failed);
    RUN(alter_replica_log_dirs_finds_no_dir);
    RUN(alter_replica_log_dirs_cluster_authorization_failed);
    kf_close(&E);
    UNIT_DONE();
}
