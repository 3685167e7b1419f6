/* The transaction coordinator's handlers (kafka/h_txn.c): InitProducerId
 * with a transactional id, AddPartitionsToTxn, EndTxn, through the handler
 * harness (kafka_fake.h) over a real transaction store in memory. Their
 * error paths each answer the exact Kafka code, per version where the code
 * changed (PRODUCER_FENCED from InitProducerId v4, AddPartitionsToTxn and
 * EndTxn v2; INVALID_PRODUCER_EPOCH before). */
#include <limits.h>

#include "kafka_fake.h"
#include "unit.h"

static kf_env_t E;

static int init_tid(const char *tid, int32_t timeout_ms, kf_pair_t *p)
{
    return kf_init_tid(&E, tid, timeout_ms, p);
}

static int add_partition(int16_t version, const char *tid, kf_pair_t p, const char *topic)
{
    return kf_add_partition(&E, version, tid, p, topic);
}

static int end_txn(int16_t version, const char *tid, kf_pair_t p, bool commit)
{
    ls_kafka_EndTxnRequest m = {.TransactionalId = {tid, (int32_t)strlen(tid)},
                                .ProducerId = p.id,
                                .ProducerEpoch = p.epoch,
                                .Committed = commit};
    ls_arena_t *a = ls_arena_new();
    ls_kafka_EndTxnResponse r;
    int code = -1000;
    if (kf_call(&E, 26, version, &m, &r, a) == 0) code = r.ErrorCode;
    ls_arena_free(a);
    return code;
}

TEST(init_gives_a_pair_and_a_second_init_bumps_the_epoch)
{
    kf_pair_t p = {-7, -7}, q = {-7, -7};
    CHECK_EQ_INT(init_tid("tx-init", 60000, &p), LS_KERR_NONE);
    CHECK(p.id >= 0);
    CHECK_EQ_INT(p.epoch, 0);
    CHECK_EQ_INT(init_tid("tx-init", 60000, &q), LS_KERR_NONE);
    CHECK(q.id == p.id);
    CHECK_EQ_INT(q.epoch, 1);
}

TEST(init_timeout_past_the_maximum)
{
    kf_pair_t p = {-7, -7};
    CHECK_EQ_INT(init_tid("tx-timeout", INT32_MAX, &p), LS_KERR_INVALID_TRANSACTION_TIMEOUT);
    CHECK(p.id == -1);
}

TEST(add_partitions_unknown_producer_id_mapping)
{
    if (kf_topic(&E, "txn-unknown-pid", 1)) return;
    /* no record for the id at all */
    CHECK_EQ_INT(add_partition(3, "tx-never-inited", (kf_pair_t){12345, 0}, "txn-unknown-pid"),
                 LS_KERR_INVALID_PRODUCER_ID_MAPPING);
    /* a record, another producer id */
    kf_pair_t p;
    CHECK_EQ_INT(init_tid("tx-other-pid", 60000, &p), LS_KERR_NONE);
    CHECK_EQ_INT(
        add_partition(3, "tx-other-pid", (kf_pair_t){p.id + 1, p.epoch}, "txn-unknown-pid"),
        LS_KERR_INVALID_PRODUCER_ID_MAPPING);
}

TEST(add_partitions_stale_epoch_is_fenced)
{
    if (kf_topic(&E, "txn-fenced", 1)) return;
    kf_pair_t old, cur;
    CHECK_EQ_INT(init_tid("tx-fenced", 60000, &old), LS_KERR_NONE);
    CHECK_EQ_INT(init_tid("tx-fenced", 60000, &cur), LS_KERR_NONE); /* a newer instance */
    CHECK_EQ_INT(add_partition(3, "tx-fenced", old, "txn-fenced"), LS_KERR_PRODUCER_FENCED);
    CHECK_EQ_INT(add_partition(1, "tx-fenced", old, "txn-fenced"), LS_KERR_INVALID_PRODUCER_EPOCH);
    CHECK_EQ_INT(add_partition(3, "tx-fenced", cur, "txn-fenced"), LS_KERR_NONE);
}

TEST(end_without_a_transaction_is_invalid_state)
{
    kf_pair_t p;
    CHECK_EQ_INT(init_tid("tx-end-empty", 60000, &p), LS_KERR_NONE);
    CHECK_EQ_INT(end_txn(3, "tx-end-empty", p, true), LS_KERR_INVALID_TXN_STATE);
}

TEST(end_with_a_stale_epoch_is_fenced)
{
    if (kf_topic(&E, "txn-end-fenced", 1)) return;
    kf_pair_t old, cur;
    CHECK_EQ_INT(init_tid("tx-end-fenced", 60000, &old), LS_KERR_NONE);
    CHECK_EQ_INT(init_tid("tx-end-fenced", 60000, &cur), LS_KERR_NONE);
    CHECK_EQ_INT(add_partition(3, "tx-end-fenced", cur, "txn-end-fenced"), LS_KERR_NONE);
    CHECK_EQ_INT(end_txn(3, "tx-end-fenced", old, true), LS_KERR_PRODUCER_FENCED);
    CHECK_EQ_INT(end_txn(1, "tx-end-fenced", old, true), LS_KERR_INVALID_PRODUCER_EPOCH);
    CHECK_EQ_INT(end_txn(3, "tx-end-fenced", (kf_pair_t){cur.id + 1, cur.epoch}, true),
                 LS_KERR_INVALID_PRODUCER_ID_MAPPING);
}

/* The harness writes no markers, so a committed transaction stays decided:
 * the producer's next request waits on CONCURRENT_TRANSACTIONS
 * (retriable), and ending it the other way is an invalid state. */
TEST(decided_transaction_not_yet_finished)
{
    if (kf_topic(&E, "txn-decided", 1)) return;
    kf_pair_t p;
    CHECK_EQ_INT(init_tid("tx-decided", 60000, &p), LS_KERR_NONE);
    CHECK_EQ_INT(add_partition(3, "tx-decided", p, "txn-decided"), LS_KERR_NONE);
    CHECK_EQ_INT(end_txn(3, "tx-decided", p, true), LS_KERR_NONE);
    CHECK_EQ_INT(add_partition(3, "tx-decided", p, "txn-decided"), LS_KERR_CONCURRENT_TRANSACTIONS);
    CHECK_EQ_INT(end_txn(3, "tx-decided", p, false), LS_KERR_INVALID_TXN_STATE);
}

TEST(add_partitions_of_an_unknown_topic)
{
    kf_pair_t p;
    CHECK_EQ_INT(init_tid("tx-no-topic", 60000, &p), LS_KERR_NONE);
    CHECK_EQ_INT(add_partition(3, "tx-no-topic", p, "txn-no-such-topic"),
                 LS_KERR_UNKNOWN_TOPIC_OR_PARTITION);
}

int main(void)
{
    if (kf_open(&E) != 0) return 1;
    RUN(init_gives_a_pair_and_a_second_init_bumps_the_epoch);
    RUN(init_timeout_past_the_maximum);
    RUN(add_partitions_unknown_producer_id_mapping);
    RUN(add_partitions_stale_epoch_is_fenced);
    RUN(end_without_a_transaction_is_invalid_state);
    RUN(end_with_a_stale_epoch_is_fenced);
    RUN(decided_transaction_not_yet_finished);
    RUN(add_partitions_of_an_unknown_topic);
    kf_close(&E);
    UNIT_DONE();
}
