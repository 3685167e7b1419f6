/* The transaction admin handlers (kafka/h_txn_admin.c): DescribeTransactions,
 * ListTransactions, DescribeProducers and WriteTxnMarkers, through the handler harness
 * (kafka_fake.h) over the real transaction store: what they answer is what
 * the store holds, and bad input gets the exact Kafka code. */
#include "kafka_fake.h"
#include "unit.h"

static kf_env_t E;

#define KS(s) ((ls_kstr_t){(s), (int32_t)strlen(s)})

static bool kstr_is(ls_kstr_t k, const char *s)
{
    return k.len == (int32_t)strlen(s) && (!k.len || !memcmp(k.ptr, s, (size_t)k.len));
}

/* AddPartitionsToTxn v3 of topic partition 0: begins a transaction. */
static int add_partition(const char *tid, kf_pair_t p, const char *topic)
{
    return kf_add_partition(&E, 3, tid, p, topic);
}

TEST(describe_transactions)
{
    if (kf_topic(&E, "adm-describe", 1)) return;
    kf_pair_t p;
    CHECK_EQ_INT(kf_init_tid(&E, "tx-adm-describe", 60000, &p), LS_KERR_NONE);
    CHECK_EQ_INT(add_partition("tx-adm-describe", p, "adm-describe"), LS_KERR_NONE);
    ls_kstr_t ids[3] = {KS("tx-adm-describe"), KS("tx-adm-unknown"), KS("")};
    ls_kafka_DescribeTransactionsRequest m = {.TransactionalIds = ids, .NumTransactionalIds = 3};
    ls_arena_t *a = ls_arena_new();
    ls_kafka_DescribeTransactionsResponse r;
    CHECK(kf_call(&E, 65, 0, &m, &r, a) == 0);
    CHECK_EQ_INT(r.NumTransactionStates, 3);
    if (r.NumTransactionStates == 3) {
        ls_kafka_DescribeTransactionsResponse_TransactionState *s = r.TransactionStates;
        CHECK_EQ_INT(s[0].ErrorCode, LS_KERR_NONE);
        CHECK(kstr_is(s[0].TransactionState, "Ongoing"));
        CHECK(s[0].ProducerId == p.id && s[0].ProducerEpoch == p.epoch);
        CHECK_EQ_INT(s[0].TransactionTimeoutMs, 60000);
        CHECK(s[0].NumTopics == 1 && kstr_is(s[0].Topics[0].Topic, "adm-describe"));
        CHECK_EQ_INT(s[1].ErrorCode, LS_KERR_TRANSACTIONAL_ID_NOT_FOUND);
        CHECK_EQ_INT(s[2].ErrorCode, LS_KERR_INVALID_REQUEST);
    }
    ls_arena_free(a);
}

TEST(list_transactions_by_state)
{
    if (kf_topic(&E, "adm-list", 1)) return;
    kf_pair_t p, q;
    CHECK_EQ_INT(kf_init_tid(&E, "tx-adm-list-ongoing", 60000, &p), LS_KERR_NONE);
    CHECK_EQ_INT(add_partition("tx-adm-list-ongoing", p, "adm-list"), LS_KERR_NONE);
    CHECK_EQ_INT(kf_init_tid(&E, "tx-adm-list-empty", 60000, &q), LS_KERR_NONE);
    ls_kstr_t states[2] = {KS("Ongoing"), KS("Sideways")};
    ls_kafka_ListTransactionsRequest m = {
        .StateFilters = states, .NumStateFilters = 2, .DurationFilter = -1};
    ls_arena_t *a = ls_arena_new();
    ls_kafka_ListTransactionsResponse r;
    CHECK(kf_call(&E, 66, 1, &m, &r, a) == 0);
    CHECK_EQ_INT(r.ErrorCode, LS_KERR_NONE);
    CHECK(r.NumUnknownStateFilters == 1 && kstr_is(r.UnknownStateFilters[0], "Sideways"));
    bool ongoing = false, empty = false;
    for (int i = 0; i < r.NumTransactionStates; i++) {
        ongoing |= kstr_is(r.TransactionStates[i].TransactionalId, "tx-adm-list-ongoing") &&
                   r.TransactionStates[i].ProducerId == p.id;
        empty |= kstr_is(r.TransactionStates[i].TransactionalId, "tx-adm-list-empty");
    }
    CHECK(ongoing && !empty);
    ls_arena_free(a);
}

TEST(describe_producers_of_an_unknown_topic)
{
    int32_t part = 0;
    ls_kafka_DescribeProducersRequest_TopicRequest t = {
        .Name = KS("adm-no-such-topic"), .PartitionIndexes = &part, .NumPartitionIndexes = 1};
    ls_kafka_DescribeProducersRequest m = {.Topics = &t, .NumTopics = 1};
    ls_arena_t *a = ls_arena_new();
    ls_kafka_DescribeProducersResponse r;
    CHECK(kf_call(&E, 61, 0, &m, &r, a) == 0);
    CHECK(r.NumTopics == 1 && r.Topics[0].NumPartitions == 1);
    if (r.NumTopics == 1 && r.Topics[0].NumPartitions == 1)
        CHECK_EQ_INT(r.Topics[0].Partitions[0].ErrorCode, LS_KERR_UNKNOWN_TOPIC_OR_PARTITION);
    ls_arena_free(a);
}

/* WriteTxnMarkers v1 of one marker for topic partition 0: the partition's
 * code. */
static int write_marker(const char *topic, int64_t producer_id, bool commit)
{
    int32_t part = 0;
    ls_kafka_WriteTxnMarkersRequest_WritableTxnMarkerTopic t = {
        .Name = KS(topic), .PartitionIndexes = &part, .NumPartitionIndexes = 1};
    ls_kafka_WriteTxnMarkersRequest_WritableTxnMarker mk = {.ProducerId = producer_id,
                                                            .ProducerEpoch = 0,
                                                            .TransactionResult = commit,
                                                            .Topics = &t,
                                                            .NumTopics = 1,
                                                            .CoordinatorEpoch = 0};
    ls_kafka_WriteTxnMarkersRequest m = {.Markers = &mk, .NumMarkers = 1};
    ls_arena_t *a = ls_arena_new();
    ls_kafka_WriteTxnMarkersResponse r;
    int code = -1000;
    if (kf_call(&E, 27, 1, &m, &r, a) == 0 && r.NumMarkers == 1 && r.Markers[0].NumTopics == 1 &&
        r.Markers[0].Topics[0].NumPartitions == 1)
        code = r.Markers[0].Topics[0].Partitions[0].ErrorCode;
    ls_arena_free(a);
    return code;
}

/* WriteTxnMarkers only aborts a transaction open on a log: a commit
 * marker, an unknown partition and a producer with nothing open are
 * refused, and nothing is appended. */
TEST(write_txn_markers_refusals)
{
    if (kf_topic(&E, "adm-markers", 1)) return;
    int64_t before = kf_hwm(&E, "adm-markers", 0);
    CHECK_EQ_INT(write_marker("adm-markers", 4242, true), LS_KERR_INVALID_REQUEST);
    CHECK_EQ_INT(write_marker("adm-no-such-topic", 4242, false),
                 LS_KERR_UNKNOWN_TOPIC_OR_PARTITION);
    CHECK_EQ_INT(write_marker("adm-markers", 4242, false), LS_KERR_INVALID_TXN_STATE);
    CHECK(kf_hwm(&E, "adm-markers", 0) == before);
}

int main(void)
{
    if (kf_open(&E) != 0) return 1;
    RUN(describe_transactions);
    RUN(list_transactions_by_state);
    RUN(describe_producers_of_an_unknown_topic);
    RUN(write_txn_markers_refusals);
    kf_close(&E);
    UNIT_DONE();
}
