/* A transactional producer's consumer offsets: AddOffsetsToTxn (kafka/
 * h_txn.c) and TxnOffsetCommit (kafka/h_txn_offsets.c), through the handler
 * harness (kafka_fake.h) over the real transaction store and group
 * service. Each error path answers the exact Kafka code for its version,
 * and an offset committed in a transaction is not visible to OffsetFetch
 * before the transaction commits. */
#include "kafka/msg.h"
#include "kafka_fake.h"
#include "unit.h"

static kf_env_t E;

#define KS(s) ((ls_kstr_t){(s), (int32_t)strlen(s)})

static int add_offsets(int16_t version, const char *tid, kf_pair_t p, const char *group)
{
    ls_kafka_AddOffsetsToTxnRequest m = {.TransactionalId = KS(tid),
                                         .ProducerId = p.id,
                                         .ProducerEpoch = p.epoch,
                                         .GroupId = KS(group)};
    ls_arena_t *a = ls_arena_new();
    ls_kafka_AddOffsetsToTxnResponse r;
    int code = -1000;
    if (kf_call(&E, 25, version, &m, &r, a) == 0) code = r.ErrorCode;
    ls_arena_free(a);
    return code;
}

/* TxnOffsetCommit (v3 or v4: no member, generation -1) of topic partition
 * 0 at offset; the partition's code. */
static int txn_commit(int16_t version, const char *tid, kf_pair_t p, const char *group,
                      const char *topic, int64_t offset)
{
    ls_kafka_TxnOffsetCommitRequest_Partition part = {.PartitionIndex = 0,
                                                      .CommittedOffset = offset,
                                                      .CommittedLeaderEpoch = -1,
                                                      .CommittedMetadata = KS("")};
    ls_kafka_TxnOffsetCommitRequest_Topic t = {
        .Name = KS(topic), .Partitions = &part, .NumPartitions = 1};
    ls_kafka_TxnOffsetCommitRequest m = {.TransactionalId = KS(tid),
                                         .GroupId = KS(group),
                                         .ProducerId = p.id,
                                         .ProducerEpoch = p.epoch,
                                         .GenerationId = -1,
                                         .MemberId = KS(""),
                                         .GroupInstanceId = {NULL, -1},
                                         .Topics = &t,
                                         .NumTopics = 1};
    ls_arena_t *a = ls_arena_new();
    ls_kafka_TxnOffsetCommitResponse r;
    int code = -1000;
    if (kf_call(&E, 28, version, &m, &r, a) == 0 && r.NumTopics == 1 &&
        r.Topics[0].NumPartitions == 1)
        code = r.Topics[0].Partitions[0].ErrorCode;
    ls_arena_free(a);
    return code;
}

/* OffsetFetch v7 (RequireStable off) of topic partition 0: the committed
 * offset, -1 when none, -1000 when not answered. */
static int64_t fetch(const char *group, const char *topic)
{
    int32_t part = 0;
    ls_kafka_OffsetFetchRequest_Topic t = {
        .Name = KS(topic), .PartitionIndexes = &part, .NumPartitionIndexes = 1};
    ls_kafka_OffsetFetchRequest m = {.GroupId = KS(group), .Topics = &t, .NumTopics = 1};
    ls_arena_t *a = ls_arena_new();
    ls_kafka_OffsetFetchResponse r;
    int64_t out = -1000;
    if (kf_call(&E, 9, 7, &m, &r, a) == 0 && !r.ErrorCode && r.NumTopics == 1 &&
        r.Topics[0].NumPartitions == 1 && !r.Topics[0].Partitions[0].ErrorCode)
        out = r.Topics[0].Partitions[0].CommittedOffset;
    ls_arena_free(a);
    return out;
}

TEST(add_offsets_errors)
{
    CHECK_EQ_INT(add_offsets(3, "tx-ao-none", (kf_pair_t){777, 0}, "g-ao"),
                 LS_KERR_INVALID_PRODUCER_ID_MAPPING);
    kf_pair_t old, cur;
    CHECK_EQ_INT(kf_init_tid(&E, "tx-ao", 60000, &old), LS_KERR_NONE);
    CHECK_EQ_INT(kf_init_tid(&E, "tx-ao", 60000, &cur), LS_KERR_NONE);
    CHECK_EQ_INT(add_offsets(3, "tx-ao", old, "g-ao"), LS_KERR_PRODUCER_FENCED);
    CHECK_EQ_INT(add_offsets(1, "tx-ao", old, "g-ao"), LS_KERR_INVALID_PRODUCER_EPOCH);
    CHECK_EQ_INT(add_offsets(3, "tx-ao", cur, ""), LS_KERR_INVALID_GROUP_ID);
    CHECK_EQ_INT(add_offsets(3, "tx-ao", cur, "g-ao"), LS_KERR_NONE);
}

TEST(txn_commit_errors)
{
    if (kf_topic(&E, "toc-errors", 1)) return;
    CHECK_EQ_INT(txn_commit(3, "tx-toc-none", (kf_pair_t){778, 0}, "g-toc", "toc-errors", 1),
                 LS_KERR_INVALID_PRODUCER_ID_MAPPING);
    kf_pair_t old, cur;
    CHECK_EQ_INT(kf_init_tid(&E, "tx-toc", 60000, &old), LS_KERR_NONE);
    CHECK_EQ_INT(kf_init_tid(&E, "tx-toc", 60000, &cur), LS_KERR_NONE);
    /* no version of TxnOffsetCommit knows PRODUCER_FENCED */
    CHECK_EQ_INT(txn_commit(3, "tx-toc", old, "g-toc", "toc-errors", 1),
                 LS_KERR_INVALID_PRODUCER_EPOCH);
    /* the group is not in the transaction (no AddOffsetsToTxn) */
    CHECK_EQ_INT(txn_commit(3, "tx-toc", cur, "g-toc", "toc-errors", 1), LS_KERR_INVALID_TXN_STATE);
    CHECK_EQ_INT(txn_commit(4, "tx-toc", cur, "g-toc", "toc-errors", 1),
                 LS_KERR_TRANSACTION_ABORTABLE);
    CHECK_EQ_INT(fetch("g-toc", "toc-errors"), -1);
}

TEST(txn_commit_is_pending_until_the_transaction_commits)
{
    if (kf_topic(&E, "toc-pending", 1)) return;
    kf_pair_t p;
    CHECK_EQ_INT(kf_init_tid(&E, "tx-pending", 60000, &p), LS_KERR_NONE);
    CHECK_EQ_INT(add_offsets(3, "tx-pending", p, "g-pending"), LS_KERR_NONE);
    CHECK_EQ_INT(txn_commit(3, "tx-pending", p, "g-pending", "toc-no-such-topic", 5),
                 LS_KERR_UNKNOWN_TOPIC_OR_PARTITION);
    CHECK_EQ_INT(txn_commit(3, "tx-pending", p, "g-pending", "toc-pending", 5), LS_KERR_NONE);
    /* pending: the harness writes no markers, so it stays invisible */
    CHECK_EQ_INT(fetch("g-pending", "toc-pending"), -1);
}

int main(void)
{
    if (kf_open(&E) != 0) return 1;
    RUN(add_offsets_errors);
    RUN(txn_commit_errors);
    RUN(txn_commit_is_pending_until_the_transaction_commits);
    kf_close(&E);
    UNIT_DONE();
}
