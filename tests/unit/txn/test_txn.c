/* Transaction coordinator: every transition of the pure state machine
 * (txn.h), the stored record's codec, and the store driver (txn_store.h)
 * over the mem and sqlite backends — races decided by compare-and-set, a
 * broker taking over a decision another one left half finished, timeouts,
 * expiry, paging. With LS_TEST_ETCD_URL set (tests/run.sh's etcd stage) the
 * store part also runs against etcd, under a fresh key prefix. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/diag.h"
#include "meta/meta.h"
#include "txn/txn.h"
#include "txn/txn_store.h"
#include "unit.h"
#include "meta/meta_keys.h"

static ls_txn_config_t CFG;

static ls_txn_partition_t P(const char *topic, int64_t stream_no, int32_t partition)
{
    return (ls_txn_partition_t){(char *)topic, stream_no, partition};
}

/* Every record a step produces satisfies the invariants and survives its
 * stored form unchanged. */
static int sound(const ls_txn_record_t *r)
{
    if (ls_txn_record_check(r)) {
        printf("# invariant: %s\n", ls_txn_record_check(r));
        return 0;
    }
    size_t len;
    uint8_t *b = ls_txn_record_encode(r, &len);
    ls_txn_record_t d;
    int ok = ls_txn_record_decode(b, len, &d) == LS_OK;
    if (ok) {
        size_t len2;
        uint8_t *b2 = ls_txn_record_encode(&d, &len2);
        ok = len2 == len && memcmp(b, b2, len) == 0;
        ls_free(b2);
        ls_txn_record_free(&d);
    }
    ls_free(b);
    return ok;
}

/* A fresh id: pid 1000, epoch 0, Empty. */
static void fresh(ls_txn_record_t *r, const char *tid)
{
    ls_txn_init_req_t rq = {
        .timeout_ms = 60000, .producer_id = -1, .producer_epoch = -1, .fresh_producer_id = 1000};
    ls_txn_result_t res = ls_txn_init(NULL, tid, &rq, &CFG, 1, r);
    (void)res;
}

/* Replace *cur by next (the caller's write). */
static void adopt(ls_txn_record_t *cur, ls_txn_record_t *next)
{
    ls_txn_record_free(cur);
    *cur = *next;
    memset(next, 0, sizeof *next);
}

/* An Ongoing transaction (txn 1) of pid 1000 epoch 0 over t-0, t-1 and group g. */
static void ongoing(ls_txn_record_t *r)
{
    fresh(r, "app-1");
    ls_txn_partition_t parts[] = {P("t", 7, 0), P("t", 7, 1)};
    const char *groups[] = {"g"};
    ls_txn_record_t next;
    ls_txn_result_t res = ls_txn_add(r, 1000, 0, parts, 2, groups, 1, 10, &next);
    if (res.write) adopt(r, &next);
}

/* ---------------------------------------------------------------- pure steps */

TEST(init_creates_an_id_once_a_producer_id_is_allocated)
{
    ls_txn_init_req_t rq = {
        .timeout_ms = 60000, .producer_id = -1, .producer_epoch = -1, .fresh_producer_id = -1};
    ls_txn_record_t next;
    ls_txn_result_t r = ls_txn_init(NULL, "app-1", &rq, &CFG, 5, &next);
    CHECK_EQ_INT(r.err, LS_TXERR_NEED_PRODUCER_ID);
    CHECK(!r.write);
    rq.fresh_producer_id = 42;
    r = ls_txn_init(NULL, "app-1", &rq, &CFG, 5, &next);
    CHECK_EQ_INT(r.err, LS_TXERR_NONE);
    CHECK(r.write && !r.remove && !r.finish);
    CHECK_EQ_INT(r.producer_id, 42);
    CHECK_EQ_INT(r.producer_epoch, 0);
    CHECK_EQ_INT(next.state, LS_TXN_EMPTY);
    CHECK(strcmp(next.tid, "app-1") == 0);
    CHECK_EQ_INT(next.timeout_ms, 60000);
    CHECK_EQ_INT(next.txn_seq, 0);
    CHECK(sound(&next));
    ls_txn_record_free(&next);
}

TEST(init_refuses_timeouts_outside_the_broker_bound)
{
    ls_txn_init_req_t rq = {
        .timeout_ms = 0, .producer_id = -1, .producer_epoch = -1, .fresh_producer_id = 42};
    ls_txn_record_t next;
    CHECK_EQ_INT(ls_txn_init(NULL, "a", &rq, &CFG, 5, &next).err,
                 LS_TXERR_INVALID_TRANSACTION_TIMEOUT);
    rq.timeout_ms = CFG.max_timeout_ms + 1;
    CHECK_EQ_INT(ls_txn_init(NULL, "a", &rq, &CFG, 5, &next).err,
                 LS_TXERR_INVALID_TRANSACTION_TIMEOUT);
    rq.timeout_ms = CFG.max_timeout_ms;
    ls_txn_result_t r = ls_txn_init(NULL, "a", &rq, &CFG, 5, &next);
    CHECK_EQ_INT(r.err, LS_TXERR_NONE);
    ls_txn_record_free(&next);
}

TEST(init_bumps_the_epoch_and_recognises_its_own_retry)
{
    ls_txn_record_t cur, next;
    fresh(&cur, "app-1");
    /* a new instance (no pair): epoch 1, the old pair remembered */
    ls_txn_init_req_t rq = {
        .timeout_ms = 30000, .producer_id = -1, .producer_epoch = -1, .fresh_producer_id = -1};
    ls_txn_result_t r = ls_txn_init(&cur, "app-1", &rq, &CFG, 7, &next);
    CHECK_EQ_INT(r.err, LS_TXERR_NONE);
    CHECK(r.write);
    CHECK_EQ_INT(r.producer_id, 1000);
    CHECK_EQ_INT(r.producer_epoch, 1);
    CHECK_EQ_INT(next.prev_producer_epoch, 0);
    CHECK_EQ_INT(next.timeout_ms, 30000);
    CHECK(sound(&next));
    adopt(&cur, &next);
    /* KIP-360: the current pair asks for a bump */
    rq.producer_id = 1000, rq.producer_epoch = 1;
    r = ls_txn_init(&cur, "app-1", &rq, &CFG, 8, &next);
    CHECK_EQ_INT(r.err, LS_TXERR_NONE);
    CHECK_EQ_INT(r.producer_epoch, 2);
    adopt(&cur, &next);
    /* its retry (the answer was lost) presents the previous pair: same answer, no write */
    r = ls_txn_init(&cur, "app-1", &rq, &CFG, 9, &next);
    CHECK_EQ_INT(r.err, LS_TXERR_NONE);
    CHECK(!r.write);
    CHECK_EQ_INT(r.producer_id, 1000);
    CHECK_EQ_INT(r.producer_epoch, 2);
    /* any other pair is a zombie */
    rq.producer_epoch = 0;
    CHECK_EQ_INT(ls_txn_init(&cur, "app-1", &rq, &CFG, 9, &next).err, LS_TXERR_PRODUCER_FENCED);
    rq.producer_id = 77, rq.producer_epoch = 2;
    CHECK_EQ_INT(ls_txn_init(&cur, "app-1", &rq, &CFG, 9, &next).err, LS_TXERR_PRODUCER_FENCED);
    /* a pair for an id that does not exist (expired) */
    CHECK_EQ_INT(ls_txn_init(NULL, "app-1", &rq, &CFG, 9, &next).err,
                 LS_TXERR_INVALID_PRODUCER_ID_MAPPING);
    ls_txn_record_free(&cur);
}

TEST(init_takes_a_new_producer_id_when_the_epoch_is_exhausted)
{
    ls_txn_record_t cur, next;
    fresh(&cur, "app-1");
    cur.producer_epoch = LS_TXN_MAX_EPOCH - 1;
    ls_txn_init_req_t rq = {
        .timeout_ms = 1000, .producer_id = -1, .producer_epoch = -1, .fresh_producer_id = -1};
    ls_txn_result_t r = ls_txn_init(&cur, "app-1", &rq, &CFG, 7, &next);
    CHECK_EQ_INT(r.err, LS_TXERR_NEED_PRODUCER_ID);
    CHECK(!r.write);
    rq.fresh_producer_id = 2000;
    r = ls_txn_init(&cur, "app-1", &rq, &CFG, 7, &next);
    CHECK_EQ_INT(r.err, LS_TXERR_NONE);
    CHECK_EQ_INT(r.producer_id, 2000);
    CHECK_EQ_INT(r.producer_epoch, 0);
    CHECK_EQ_INT(next.prev_producer_id, 1000);
    CHECK_EQ_INT(next.prev_producer_epoch, LS_TXN_MAX_EPOCH - 1);
    CHECK(sound(&next));
    ls_txn_record_free(&next);
    ls_txn_record_free(&cur);
}

TEST(init_during_a_transaction_aborts_it_and_fences_the_old_producer)
{
    ls_txn_record_t cur, next;
    ongoing(&cur);
    ls_txn_init_req_t rq = {
        .timeout_ms = 60000, .producer_id = -1, .producer_epoch = -1, .fresh_producer_id = -1};
    ls_txn_result_t r = ls_txn_init(&cur, "app-1", &rq, &CFG, 20, &next);
    CHECK_EQ_INT(r.err, LS_TXERR_CONCURRENT_TRANSACTIONS);
    CHECK(r.write && r.finish);
    CHECK_EQ_INT(next.state, LS_TXN_PREPARE_ABORT);
    CHECK_EQ_INT(next.producer_epoch, 1);
    CHECK_EQ_INT(next.marker_producer_id, 1000);
    CHECK_EQ_INT(next.marker_epoch, 1);      /* markers fence epoch 0 on every log */
    CHECK_EQ_INT(next.prev_producer_id, -1); /* the fenced pair cannot come back */
    CHECK_EQ_INT(next.npartitions, 2);
    CHECK(sound(&next));
    adopt(&cur, &next);
    /* the old producer is fenced everywhere */
    ls_txn_partition_t p = P("t", 7, 2);
    CHECK_EQ_INT(ls_txn_add(&cur, 1000, 0, &p, 1, NULL, 0, 21, &next).err,
                 LS_TXERR_PRODUCER_FENCED);
    CHECK_EQ_INT(ls_txn_end(&cur, 1000, 0, true, false, -1, 21, &next).err,
                 LS_TXERR_PRODUCER_FENCED);
    int64_t seq;
    CHECK_EQ_INT(ls_txn_check_produce(&cur, 1000, 0, 7, 0, &seq), LS_TXERR_PRODUCER_FENCED);
    /* the new instance retries while the abort is being finished */
    r = ls_txn_init(&cur, "app-1", &rq, &CFG, 22, &next);
    CHECK_EQ_INT(r.err, LS_TXERR_CONCURRENT_TRANSACTIONS);
    CHECK(!r.write);
    /* once finished, it gets the next epoch */
    r = ls_txn_complete(&cur, 1, 23, &next);
    CHECK(r.write);
    adopt(&cur, &next);
    CHECK_EQ_INT(cur.state, LS_TXN_COMPLETE_ABORT);
    r = ls_txn_init(&cur, "app-1", &rq, &CFG, 24, &next);
    CHECK_EQ_INT(r.err, LS_TXERR_NONE);
    CHECK_EQ_INT(r.producer_epoch, 2);
    CHECK_EQ_INT(next.state, LS_TXN_EMPTY);
    CHECK(sound(&next));
    ls_txn_record_free(&next);
    ls_txn_record_free(&cur);
}

TEST(init_by_the_current_producer_during_a_transaction_lets_its_retry_resume)
{
    ls_txn_record_t cur, next;
    ongoing(&cur);
    ls_txn_init_req_t rq = {
        .timeout_ms = 60000, .producer_id = 1000, .producer_epoch = 0, .fresh_producer_id = -1};
    ls_txn_result_t r = ls_txn_init(&cur, "app-1", &rq, &CFG, 20, &next);
    CHECK_EQ_INT(r.err, LS_TXERR_CONCURRENT_TRANSACTIONS);
    adopt(&cur, &next);
    CHECK_EQ_INT(cur.prev_producer_epoch, 0);
    ls_txn_complete(&cur, 1, 21, &next);
    adopt(&cur, &next);
    r = ls_txn_init(&cur, "app-1", &rq, &CFG, 22, &next);
    CHECK_EQ_INT(r.err, LS_TXERR_NONE);
    CHECK(!r.write);
    CHECK_EQ_INT(r.producer_epoch, 1);
    ls_txn_record_free(&cur);
}

TEST(add_begins_grows_and_restarts_transactions)
{
    ls_txn_record_t cur, next;
    fresh(&cur, "app-1");
    ls_txn_partition_t a[] = {P("t", 7, 0), P("t", 7, 0), P("u", 9, 3)};
    ls_txn_result_t r = ls_txn_add(&cur, 1000, 0, a, 3, NULL, 0, 50, &next);
    CHECK_EQ_INT(r.err, LS_TXERR_NONE);
    CHECK(r.write);
    CHECK_EQ_INT(next.state, LS_TXN_ONGOING);
    CHECK_EQ_INT(next.txn_seq, 1);
    CHECK_EQ_INT(next.txn_start_ms, 50);
    CHECK_EQ_INT(next.npartitions, 2); /* duplicates in one request count once */
    CHECK(sound(&next));
    adopt(&cur, &next);
    /* the same partitions again: nothing to write */
    r = ls_txn_add(&cur, 1000, 0, a, 1, NULL, 0, 60, &next);
    CHECK_EQ_INT(r.err, LS_TXERR_NONE);
    CHECK(!r.write);
    /* a group and one more partition join the same transaction */
    const char *g[] = {"grp"};
    ls_txn_partition_t b = P("t", 7, 1);
    r = ls_txn_add(&cur, 1000, 0, &b, 1, g, 1, 70, &next);
    CHECK(r.write);
    CHECK_EQ_INT(next.txn_seq, 1);
    CHECK_EQ_INT(next.txn_start_ms, 50); /* the timeout runs from the first add */
    CHECK_EQ_INT(next.npartitions, 3);
    CHECK_EQ_INT(next.ngroups, 1);
    CHECK(ls_txn_has_group(&next, "grp"));
    CHECK(sound(&next));
    adopt(&cur, &next);
    /* commit, complete; the next add starts transaction 2 with only its own participants */
    ls_txn_end(&cur, 1000, 0, true, false, -1, 80, &next);
    adopt(&cur, &next);
    ls_txn_complete(&cur, 1, 81, &next);
    adopt(&cur, &next);
    CHECK_EQ_INT(cur.npartitions, 0);
    r = ls_txn_add(&cur, 1000, 0, &b, 1, NULL, 0, 90, &next);
    CHECK(r.write);
    CHECK_EQ_INT(next.state, LS_TXN_ONGOING);
    CHECK_EQ_INT(next.txn_seq, 2);
    CHECK_EQ_INT(next.txn_start_ms, 90);
    CHECK_EQ_INT(next.npartitions, 1);
    CHECK_EQ_INT(next.ngroups, 0);
    CHECK_EQ_INT(next.marker_producer_id, -1);
    CHECK(sound(&next));
    ls_txn_record_free(&next);
    ls_txn_record_free(&cur);
}

TEST(add_refusals_change_nothing)
{
    ls_txn_record_t cur, next;
    ongoing(&cur);
    ls_txn_partition_t p = P("t", 7, 5);
    CHECK_EQ_INT(ls_txn_add(NULL, 1000, 0, &p, 1, NULL, 0, 1, &next).err,
                 LS_TXERR_INVALID_PRODUCER_ID_MAPPING);
    CHECK_EQ_INT(ls_txn_add(&cur, 1001, 0, &p, 1, NULL, 0, 1, &next).err,
                 LS_TXERR_INVALID_PRODUCER_ID_MAPPING);
    CHECK_EQ_INT(ls_txn_add(&cur, 1000, 1, &p, 1, NULL, 0, 1, &next).err, LS_TXERR_PRODUCER_FENCED);
    /* too many participants: the request is refused whole */
    int n = LS_TXN_MAX_PARTICIPANTS;
    ls_txn_partition_t *many = LS_NEWN(ls_txn_partition_t, n);
    for (int i = 0; i < n; i++)
        many[i] = P("big", 11, i);
    ls_txn_result_t r = ls_txn_add(&cur, 1000, 0, many, n, NULL, 0, 1, &next);
    CHECK_EQ_INT(r.err, LS_TXERR_TOO_MANY_PARTICIPANTS);
    CHECK(!r.write);
    /* exactly the limit fits */
    r = ls_txn_add(&cur, 1000, 0, many, n - 3, NULL, 0, 1, &next);
    ls_free(many);
    CHECK_EQ_INT(r.err, LS_TXERR_NONE);
    CHECK_EQ_INT(next.npartitions + next.ngroups, LS_TXN_MAX_PARTICIPANTS);
    CHECK(sound(&next));
    ls_txn_record_free(&next);
    /* decided: retriable until finished */
    ls_txn_end(&cur, 1000, 0, false, false, -1, 2, &next);
    adopt(&cur, &next);
    CHECK_EQ_INT(ls_txn_add(&cur, 1000, 0, &p, 1, NULL, 0, 3, &next).err,
                 LS_TXERR_CONCURRENT_TRANSACTIONS);
    ls_txn_record_free(&cur);
}

TEST(end_decides_once_and_answers_retries_like_kafka)
{
    ls_txn_record_t cur, next;
    ongoing(&cur);
    ls_txn_result_t r = ls_txn_end(&cur, 1000, 0, true, false, -1, 30, &next);
    CHECK_EQ_INT(r.err, LS_TXERR_NONE);
    CHECK(r.write && r.finish);
    CHECK_EQ_INT(next.state, LS_TXN_PREPARE_COMMIT);
    CHECK_EQ_INT(next.marker_producer_id, 1000);
    CHECK_EQ_INT(next.marker_epoch, 0);
    CHECK_EQ_INT(next.producer_epoch, 0); /* TV1: the pair does not move */
    CHECK(sound(&next));
    adopt(&cur, &next);
    /* decided: the same outcome waits, the other is refused; neither writes */
    r = ls_txn_end(&cur, 1000, 0, true, false, -1, 31, &next);
    CHECK_EQ_INT(r.err, LS_TXERR_CONCURRENT_TRANSACTIONS);
    CHECK(!r.write && r.finish);
    r = ls_txn_end(&cur, 1000, 0, false, false, -1, 31, &next);
    CHECK_EQ_INT(r.err, LS_TXERR_INVALID_TXN_STATE);
    CHECK(!r.write);
    /* completion clears the participants and keeps the outcome */
    r = ls_txn_complete(&cur, 1, 32, &next);
    CHECK(r.write && !r.finish);
    CHECK_EQ_INT(next.state, LS_TXN_COMPLETE_COMMIT);
    CHECK_EQ_INT(next.npartitions, 0);
    CHECK_EQ_INT(next.ngroups, 0);
    CHECK(sound(&next));
    adopt(&cur, &next);
    /* a retried commit succeeds, an abort of it is refused */
    r = ls_txn_end(&cur, 1000, 0, true, false, -1, 33, &next);
    CHECK_EQ_INT(r.err, LS_TXERR_NONE);
    CHECK(!r.write);
    CHECK_EQ_INT(ls_txn_end(&cur, 1000, 0, false, false, -1, 33, &next).err,
                 LS_TXERR_INVALID_TXN_STATE);
    /* wrong pairs */
    CHECK_EQ_INT(ls_txn_end(&cur, 1000, 3, true, false, -1, 33, &next).err,
                 LS_TXERR_PRODUCER_FENCED);
    CHECK_EQ_INT(ls_txn_end(&cur, 5, 0, true, false, -1, 33, &next).err,
                 LS_TXERR_INVALID_PRODUCER_ID_MAPPING);
    CHECK_EQ_INT(ls_txn_end(NULL, 1000, 0, true, false, -1, 33, &next).err,
                 LS_TXERR_INVALID_PRODUCER_ID_MAPPING);
    ls_txn_record_free(&cur);
    /* nothing to end */
    fresh(&cur, "app-2");
    CHECK_EQ_INT(ls_txn_end(&cur, 1000, 0, false, false, -1, 1, &next).err,
                 LS_TXERR_INVALID_TXN_STATE);
    ls_txn_record_free(&cur);
}

TEST(end_with_transaction_version_2_bumps_the_epoch_per_transaction)
{
    ls_txn_record_t cur, next;
    ongoing(&cur);
    ls_txn_result_t r = ls_txn_end(&cur, 1000, 0, false, true, -1, 30, &next);
    CHECK_EQ_INT(r.err, LS_TXERR_NONE);
    CHECK(r.write && r.finish);
    CHECK_EQ_INT(next.state, LS_TXN_PREPARE_ABORT);
    CHECK_EQ_INT(next.marker_producer_id, 1000);
    CHECK_EQ_INT(next.marker_epoch, 1); /* the markers fence epoch 0 */
    CHECK_EQ_INT(r.producer_id, 1000);
    CHECK_EQ_INT(r.producer_epoch, 1); /* the client's next pair */
    CHECK(sound(&next));
    adopt(&cur, &next);
    /* a retry holds the previous pair: waits while decided, succeeds once complete */
    r = ls_txn_end(&cur, 1000, 0, false, true, -1, 31, &next);
    CHECK_EQ_INT(r.err, LS_TXERR_CONCURRENT_TRANSACTIONS);
    CHECK(!r.write);
    /* the new pair ending its next transaction meanwhile waits too, either outcome */
    CHECK_EQ_INT(ls_txn_end(&cur, 1000, 1, true, true, -1, 31, &next).err,
                 LS_TXERR_CONCURRENT_TRANSACTIONS);
    CHECK_EQ_INT(ls_txn_end(&cur, 1000, 1, false, true, -1, 31, &next).err,
                 LS_TXERR_CONCURRENT_TRANSACTIONS);
    ls_txn_complete(&cur, 1, 32, &next);
    adopt(&cur, &next);
    r = ls_txn_end(&cur, 1000, 0, false, true, -1, 33, &next);
    CHECK_EQ_INT(r.err, LS_TXERR_NONE);
    CHECK(!r.write);
    CHECK_EQ_INT(r.producer_epoch, 1);
    /* a retry with the opposite outcome is refused (Kafka: an invalid transition) */
    CHECK_EQ_INT(ls_txn_end(&cur, 1000, 0, true, true, -1, 33, &next).err,
                 LS_TXERR_INVALID_TXN_STATE);
    /* the current pair has begun nothing: a commit has nothing to commit */
    CHECK_EQ_INT(ls_txn_end(&cur, 1000, 1, true, true, -1, 33, &next).err,
                 LS_TXERR_INVALID_TXN_STATE);
    /* ... an abort is the empty one: decided and completed at once, epoch + 1 */
    r = ls_txn_end(&cur, 1000, 1, false, true, -1, 34, &next);
    CHECK_EQ_INT(r.err, LS_TXERR_NONE);
    CHECK(r.write && !r.finish);
    CHECK_EQ_INT(next.state, LS_TXN_COMPLETE_ABORT);
    CHECK_EQ_INT(next.txn_seq, 2);
    CHECK_EQ_INT(next.npartitions + next.ngroups, 0);
    CHECK_EQ_INT(r.producer_epoch, 2);
    CHECK(sound(&next));
    adopt(&cur, &next);
    /* whose retry is answered with the same pair */
    r = ls_txn_end(&cur, 1000, 1, false, true, -1, 35, &next);
    CHECK_EQ_INT(r.err, LS_TXERR_NONE);
    CHECK(!r.write);
    CHECK_EQ_INT(r.producer_epoch, 2);
    /* zombies of epochs 0 and 1: their records and requests are fenced */
    ls_txn_partition_t late = P("t", 7, 0);
    CHECK_EQ_INT(ls_txn_add(&cur, 1000, 1, &late, 1, NULL, 0, 36, &next).err,
                 LS_TXERR_PRODUCER_FENCED);
    CHECK_EQ_INT(ls_txn_add(&cur, 1000, 0, &late, 1, NULL, 0, 36, &next).err,
                 LS_TXERR_PRODUCER_FENCED);
    int64_t seq;
    CHECK_EQ_INT(ls_txn_check_produce(&cur, 1000, 1, 7, 0, &seq), LS_TXERR_PRODUCER_FENCED);
    ls_txn_record_free(&cur);

    /* an abort from Empty (nothing arrived before the client gave up) */
    fresh(&cur, "app-3");
    r = ls_txn_end(&cur, 1000, 0, false, true, -1, 5, &next);
    CHECK_EQ_INT(r.err, LS_TXERR_NONE);
    CHECK_EQ_INT(next.state, LS_TXN_COMPLETE_ABORT);
    CHECK_EQ_INT(r.producer_epoch, 1);
    CHECK(sound(&next));
    ls_txn_record_free(&next);
    /* ... but not a commit, and not under transaction version 1 */
    CHECK_EQ_INT(ls_txn_end(&cur, 1000, 0, true, true, -1, 5, &next).err,
                 LS_TXERR_INVALID_TXN_STATE);
    CHECK_EQ_INT(ls_txn_end(&cur, 1000, 0, false, false, -1, 5, &next).err,
                 LS_TXERR_INVALID_TXN_STATE);
    ls_txn_record_free(&cur);

    /* exhausted epoch: the markers take the last epoch, the client a new id */
    ongoing(&cur);
    cur.producer_epoch = LS_TXN_MAX_EPOCH - 1;
    r = ls_txn_end(&cur, 1000, LS_TXN_MAX_EPOCH - 1, true, true, -1, 40, &next);
    CHECK_EQ_INT(r.err, LS_TXERR_NEED_PRODUCER_ID);
    r = ls_txn_end(&cur, 1000, LS_TXN_MAX_EPOCH - 1, true, true, 3000, 40, &next);
    CHECK_EQ_INT(r.err, LS_TXERR_NONE);
    CHECK_EQ_INT(next.marker_producer_id, 1000);
    CHECK_EQ_INT(next.marker_epoch, LS_TXN_MAX_EPOCH);
    CHECK_EQ_INT(r.producer_id, 3000);
    CHECK_EQ_INT(r.producer_epoch, 0);
    CHECK(sound(&next));
    ls_txn_record_free(&next);
    ls_txn_record_free(&cur);
}

/* Transaction version 2 over many transactions: each begins with an add by
 * the current pair (what Produce v12 does), ends with a bump, completes; the
 * epoch grows by one per transaction and rolls to a new producer id when
 * exhausted, markers always fencing the pair that wrote the data. */
TEST(transaction_version_2_cycles_roll_the_producer_id_over)
{
    ls_txn_record_t cur, next;
    fresh(&cur, "app-cycles");
    cur.producer_epoch = LS_TXN_MAX_EPOCH - 5;
    int64_t pid = 1000, next_fresh = 5000;
    int16_t epoch = LS_TXN_MAX_EPOCH - 5;
    int rolled = 0;
    for (int i = 0; i < 12; i++) {
        ls_txn_partition_t p = P("t", 7, i % 3);
        ls_txn_result_t r = ls_txn_add(&cur, pid, epoch, &p, 1, NULL, 0, 100 + i, &next);
        CHECK_EQ_INT(r.err, LS_TXERR_NONE);
        CHECK_EQ_INT(next.state, LS_TXN_ONGOING);
        CHECK_EQ_INT(next.txn_seq, i + 1);
        adopt(&cur, &next);
        bool commit = i % 4 != 3;
        r = ls_txn_end(&cur, pid, epoch, commit, true, -1, 200 + i, &next);
        if (r.err == LS_TXERR_NEED_PRODUCER_ID)
            r = ls_txn_end(&cur, pid, epoch, commit, true, next_fresh++, 200 + i, &next);
        CHECK_EQ_INT(r.err, LS_TXERR_NONE);
        CHECK(sound(&next));
        CHECK_EQ_INT(next.marker_producer_id, pid);
        CHECK_EQ_INT(next.marker_epoch, epoch + 1);
        if (r.producer_id != pid) {
            rolled++;
            CHECK_EQ_INT(epoch, LS_TXN_MAX_EPOCH - 1);
            CHECK_EQ_INT(r.producer_epoch, 0);
        } else {
            CHECK_EQ_INT(r.producer_epoch, epoch + 1);
        }
        adopt(&cur, &next);
        CHECK(ls_txn_complete(&cur, i + 1, 300 + i, &next).write);
        adopt(&cur, &next);
        /* the retry of the end (old pair) after the roll is still recognised */
        r = ls_txn_end(&cur, pid, epoch, commit, true, -1, 301 + i, &next);
        CHECK_EQ_INT(r.err, LS_TXERR_NONE);
        CHECK(!r.write);
        pid = r.producer_id;
        epoch = r.producer_epoch;
    }
    CHECK_EQ_INT(rolled, 1);
    CHECK_EQ_INT(pid, 5000);
    CHECK_EQ_INT(epoch, 12 - 5); /* four bumps to the last client epoch, a roll, seven more */
    ls_txn_record_free(&cur);
}

TEST(complete_leaves_other_decisions_alone)
{
    ls_txn_record_t cur, next;
    ongoing(&cur);
    CHECK(!ls_txn_complete(&cur, 1, 5, &next).write); /* not decided */
    CHECK(!ls_txn_complete(NULL, 1, 5, &next).write);
    ls_txn_end(&cur, 1000, 0, true, false, -1, 6, &next);
    adopt(&cur, &next);
    CHECK(!ls_txn_complete(&cur, 2, 7, &next).write); /* another transaction's */
    CHECK(ls_txn_complete(&cur, 1, 7, &next).write);
    ls_txn_record_free(&next);
    ls_txn_record_free(&cur);
}

TEST(expire_aborts_timed_out_transactions_and_removes_idle_ids)
{
    ls_txn_record_t cur, next;
    ongoing(&cur); /* began at 10, timeout 60000 */
    ls_txn_result_t r = ls_txn_expire(&cur, &CFG, 10 + 59999, &next);
    CHECK(!r.write && !r.finish);
    r = ls_txn_expire(&cur, &CFG, 10 + 60000, &next);
    CHECK_EQ_INT(r.err, LS_TXERR_NONE);
    CHECK(r.write && r.finish && !r.remove);
    CHECK_EQ_INT(next.state, LS_TXN_PREPARE_ABORT);
    CHECK_EQ_INT(next.producer_epoch, 1); /* the producer is fenced */
    CHECK_EQ_INT(next.marker_epoch, 1);
    CHECK(sound(&next));
    adopt(&cur, &next);
    /* a decided record asks to be finished, without a write */
    r = ls_txn_expire(&cur, &CFG, 70000, &next);
    CHECK(!r.write && r.finish);
    ls_txn_complete(&cur, 1, 70001, &next);
    adopt(&cur, &next);
    /* idle: removed after transactional.id.expiration.ms */
    r = ls_txn_expire(&cur, &CFG, 70001 + CFG.id_expiration_ms - 1, &next);
    CHECK(!r.write);
    r = ls_txn_expire(&cur, &CFG, 70001 + CFG.id_expiration_ms, &next);
    CHECK(r.write && r.remove && !r.finish);
    CHECK(!ls_txn_expire(NULL, &CFG, 1, &next).write);
    ls_txn_record_free(&cur);
}

TEST(produce_and_offsets_need_the_participant_in_the_open_transaction)
{
    ls_txn_record_t cur, next;
    ongoing(&cur);
    int64_t seq = -1;
    CHECK_EQ_INT(ls_txn_check_produce(&cur, 1000, 0, 7, 1, &seq), LS_TXERR_NONE);
    CHECK_EQ_INT(seq, 1);
    CHECK_EQ_INT(ls_txn_check_produce(&cur, 1000, 0, 7, 2, &seq), LS_TXERR_INVALID_TXN_STATE);
    CHECK_EQ_INT(ls_txn_check_produce(&cur, 1000, 0, 8, 1, &seq), /* re-created topic */
                 LS_TXERR_INVALID_TXN_STATE);
    CHECK_EQ_INT(ls_txn_check_produce(&cur, 1000, 1, 7, 1, &seq), LS_TXERR_PRODUCER_FENCED);
    CHECK_EQ_INT(ls_txn_check_produce(&cur, 9, 0, 7, 1, &seq),
                 LS_TXERR_INVALID_PRODUCER_ID_MAPPING);
    CHECK_EQ_INT(ls_txn_check_produce(NULL, 9, 0, 7, 1, &seq),
                 LS_TXERR_INVALID_PRODUCER_ID_MAPPING);
    CHECK_EQ_INT(ls_txn_check_offsets(&cur, 1000, 0, "g", &seq), LS_TXERR_NONE);
    CHECK_EQ_INT(ls_txn_check_offsets(&cur, 1000, 0, "h", &seq), LS_TXERR_INVALID_TXN_STATE);
    /* once decided, nothing more joins the transaction (the late-batch case) */
    ls_txn_end(&cur, 1000, 0, true, false, -1, 20, &next);
    adopt(&cur, &next);
    CHECK_EQ_INT(ls_txn_check_produce(&cur, 1000, 0, 7, 1, &seq), LS_TXERR_INVALID_TXN_STATE);
    CHECK_EQ_INT(ls_txn_check_offsets(&cur, 1000, 0, "g", &seq), LS_TXERR_INVALID_TXN_STATE);
    ls_txn_record_free(&cur);
}

TEST(record_decoder_refuses_damage)
{
    ls_txn_record_t cur;
    ongoing(&cur);
    size_t len;
    uint8_t *b = ls_txn_record_encode(&cur, &len);
    ls_txn_record_t d;
    CHECK_EQ_INT(ls_txn_record_decode(b, len, &d), LS_OK);
    CHECK(strcmp(d.tid, "app-1") == 0);
    CHECK_EQ_INT(d.npartitions, 2);
    CHECK(strcmp(d.partitions[1].topic, "t") == 0);
    CHECK_EQ_INT(d.partitions[1].partition, 1);
    CHECK(strcmp(d.groups[0], "g") == 0);
    ls_txn_record_free(&d);
    for (size_t n = 0; n < len; n++) /* every truncation */
        CHECK_EQ_INT(ls_txn_record_decode(b, n, &d), LS_ECORRUPT);
    uint8_t *longer = ls_malloc(len + 1);
    memcpy(longer, b, len);
    longer[len] = 0;
    CHECK_EQ_INT(ls_txn_record_decode(longer, len + 1, &d), LS_ECORRUPT); /* trailing */
    ls_free(longer);
    b[4] = 0; /* a NUL inside the transactional id: never written, so not ours */
    CHECK_EQ_INT(ls_txn_record_decode(b, len, &d), LS_ECORRUPT);
    b[4] = 'p';
    CHECK_EQ_INT(ls_txn_record_decode(b, len, &d), LS_OK);
    ls_txn_record_free(&d);
    b[0] = 2; /* unknown version */
    CHECK_EQ_INT(ls_txn_record_decode(b, len, &d), LS_ECORRUPT);
    ls_free(b);
    /* a record breaking an invariant (participants while Empty) does not load */
    cur.state = LS_TXN_EMPTY;
    CHECK(ls_txn_record_check(&cur) != NULL);
    b = ls_txn_record_encode(&cur, &len);
    CHECK_EQ_INT(ls_txn_record_decode(b, len, &d), LS_ECORRUPT);
    ls_free(b);
    ls_txn_record_free(&cur);
}

/* ---------------------------------------------------------------- store driver */

static ls_meta_t *M;
static int64_t NOW = 1000;
static int64_t fake_now(void) { return NOW; }

/* Participants as the log side will be: a marker of (producer id, txn_seq)
 * lands once per log; a repeat is a no-op. */
#define MAXW 64
typedef struct fake_logs {
    struct {
        int64_t stream_no;
        int32_t partition;
        int64_t pid;
        int64_t seq;
        bool commit;
        int16_t epoch;
    } w[MAXW];
    int nw;
    int calls;
    int fail_from; /* calls numbered >= fail_from fail with LS_EIO (0: never) */
    int groups_settled;
} fake_logs_t;

static ls_status fake_log_marker(fake_logs_t *f, const ls_txn_record_t *rec,
                                 const ls_txn_partition_t *p)
{
    f->calls++;
    if (f->fail_from && f->calls >= f->fail_from) return LS_EIO;
    for (int i = 0; i < f->nw; i++)
        if (f->w[i].stream_no == p->stream_no && f->w[i].partition == p->partition &&
            f->w[i].pid == rec->marker_producer_id && f->w[i].seq == rec->txn_seq)
            return LS_OK;
    if (f->nw == MAXW) return LS_ELIMIT;
    f->w[f->nw].stream_no = p->stream_no;
    f->w[f->nw].partition = p->partition;
    f->w[f->nw].pid = rec->marker_producer_id;
    f->w[f->nw].seq = rec->txn_seq;
    f->w[f->nw].commit = rec->state == LS_TXN_PREPARE_COMMIT;
    f->w[f->nw].epoch = rec->marker_epoch;
    f->nw++;
    return LS_OK;
}

static ls_status fake_log_markers(void *arg, const ls_txn_record_t *rec)
{
    ls_status st = LS_OK;
    for (int i = 0; i < rec->npartitions; i++) { /* each is tried, as the broker's are */
        ls_status one = fake_log_marker(arg, rec, &rec->partitions[i]);
        if (one != LS_OK) st = one;
    }
    return st;
}

static ls_status fake_group_marker(void *arg, const ls_txn_record_t *rec, const char *group)
{
    fake_logs_t *f = arg;
    f->calls++;
    if (f->fail_from && f->calls >= f->fail_from) return LS_EIO;
    f->groups_settled++;
    return LS_OK;
}

static int64_t next_pid = 5000;
static ls_status fake_new_pid(void *arg, int64_t *id)
{
    *id = next_pid++;
    return LS_OK;
}

static ls_txn_store_t *store(fake_logs_t *f)
{
    ls_txn_store_opts_t o = {.meta = M,
                             .markers = {fake_log_markers, fake_group_marker, f},
                             .new_producer_id = fake_new_pid,
                             .now_ms = fake_now};
    ls_txn_config_defaults(&o.cfg);
    return ls_txn_store_new(&o);
}

/* This broker coordinates the ids that start with arg (each test its own,
 * so records other tests left in the store stay out of its sweeps). */
static bool mine_prefix(void *arg, const char *tid) { return strncmp(tid, arg, strlen(arg)) == 0; }
static bool none_mine(void *arg, const char *tid) { return false; }

static char tidbuf[64];
static int tidno;
/* A transactional id not used before in this store ('/' and ' ' are escaped). */
static const char *new_tid(const char *prefix)
{
    snprintf(tidbuf, sizeof tidbuf, "%s/%d t", prefix, ++tidno);
    return tidbuf;
}

static ls_txn_state stored_state(ls_txn_store_t *s, const char *tid)
{
    ls_txn_record_t r;
    int64_t rev;
    if (ls_txn_load(s, tid, &r, &rev) != LS_OK) return (ls_txn_state)-1;
    ls_txn_state st = r.state;
    ls_txn_record_free(&r);
    return st;
}

TEST(store_runs_a_transaction_from_init_to_commit)
{
    fake_logs_t f = {0};
    ls_txn_store_t *s = store(&f);
    char tid[64];
    snprintf(tid, sizeof tid, "%s", new_tid("flow"));
    ls_txn_result_t r;
    int64_t before = next_pid;
    CHECK_EQ_INT(ls_txn_run_init(s, tid, 60000, -1, -1, &r), LS_OK);
    CHECK_EQ_INT(r.err, LS_TXERR_NONE);
    CHECK_EQ_INT(r.producer_id, before); /* allocated through the embedder */
    CHECK_EQ_INT(r.producer_epoch, 0);
    int64_t pid = r.producer_id;
    char *key = ls_txn_key(tid);
    CHECK(strncmp(key, LS_KEY_TXN_STATE, strlen(LS_KEY_TXN_STATE)) == 0);
    CHECK(strchr(key + strlen(LS_KEY_TXN_STATE), '/') == NULL);
    ls_free(key);
    ls_txn_partition_t parts[] = {P("t", 3, 0), P("t", 3, 1), P("u", 4, 0)};
    const char *groups[] = {"g"};
    CHECK_EQ_INT(ls_txn_run_add(s, tid, pid, 0, parts, 3, groups, 1, &r), LS_OK);
    CHECK_EQ_INT(r.err, LS_TXERR_NONE);
    CHECK_EQ_INT(stored_state(s, tid), LS_TXN_ONGOING);
    CHECK_EQ_INT(ls_txn_run_end(s, tid, pid, 0, true, false, &r), LS_OK);
    CHECK_EQ_INT(r.err, LS_TXERR_NONE);
    CHECK(r.finish);
    CHECK_EQ_INT(stored_state(s, tid), LS_TXN_PREPARE_COMMIT);
    CHECK_EQ_INT(ls_txn_finish(s, tid), LS_OK);
    CHECK_EQ_INT(stored_state(s, tid), LS_TXN_COMPLETE_COMMIT);
    CHECK_EQ_INT(f.nw, 3);
    CHECK_EQ_INT(f.groups_settled, 1);
    for (int i = 0; i < f.nw; i++)
        CHECK(f.w[i].commit && f.w[i].pid == pid && f.w[i].seq == 1 && f.w[i].epoch == 0);
    /* finishing again is harmless */
    CHECK_EQ_INT(ls_txn_finish(s, tid), LS_OK);
    CHECK_EQ_INT(f.nw, 3);
    /* the retried EndTxn succeeds */
    CHECK_EQ_INT(ls_txn_run_end(s, tid, pid, 0, true, false, &r), LS_OK);
    CHECK_EQ_INT(r.err, LS_TXERR_NONE);
    ls_txn_store_free(s);
}

/* A step that moves the stored epoch to the last one a client may hold. */
static ls_txn_result_t exhaust_epoch(void *arg, const ls_txn_record_t *cur, int64_t fresh,
                                     int64_t now_ms, ls_txn_record_t *next)
{
    ls_txn_record_copy(next, cur);
    next->producer_epoch = LS_TXN_MAX_EPOCH - 1;
    return (ls_txn_result_t){.write = true, .producer_id = -1, .producer_epoch = -1};
}

/* Transaction version 2 through the store: each end bumps the stored pair,
 * the markers carry the epoch that fences the old one, a lost answer's retry
 * is answered from the record, and the exhausted epoch takes a new producer
 * id from the embedder. */
TEST(store_transaction_version_2_bumps_and_rolls_the_pair)
{
    fake_logs_t f = {0};
    ls_txn_store_t *s = store(&f);
    char tid[64];
    snprintf(tid, sizeof tid, "%s", new_tid("tv2"));
    ls_txn_result_t r;
    CHECK_EQ_INT(ls_txn_run_init(s, tid, 60000, -1, -1, &r), LS_OK);
    int64_t pid = r.producer_id;
    int16_t epoch = 0;
    ls_txn_partition_t part = P("t", 3, 0);
    for (int i = 1; i <= 3; i++) {
        CHECK_EQ_INT(ls_txn_run_add(s, tid, pid, epoch, &part, 1, NULL, 0, &r), LS_OK);
        CHECK_EQ_INT(r.err, LS_TXERR_NONE);
        CHECK_EQ_INT(ls_txn_run_end(s, tid, pid, epoch, true, true, &r), LS_OK);
        CHECK_EQ_INT(r.err, LS_TXERR_NONE);
        CHECK(r.finish && r.producer_id == pid && r.producer_epoch == epoch + 1);
        CHECK_EQ_INT(ls_txn_finish(s, tid), LS_OK);
        CHECK_EQ_INT(f.nw, i);
        CHECK(f.w[i - 1].pid == pid && f.w[i - 1].seq == i && f.w[i - 1].epoch == epoch + 1);
        /* the retry of the end, its answer lost */
        CHECK_EQ_INT(ls_txn_run_end(s, tid, pid, epoch, true, true, &r), LS_OK);
        CHECK(r.err == LS_TXERR_NONE && r.producer_epoch == epoch + 1);
        epoch++;
    }
    /* a zombie of the previous epoch cannot open a transaction */
    CHECK_EQ_INT(ls_txn_run_add(s, tid, pid, epoch - 1, &part, 1, NULL, 0, &r), LS_OK);
    CHECK_EQ_INT(r.err, LS_TXERR_PRODUCER_FENCED);
    CHECK_EQ_INT(stored_state(s, tid), LS_TXN_COMPLETE_COMMIT);
    /* exhausted: the end takes a new producer id */
    CHECK_EQ_INT(ls_txn_run(s, tid, exhaust_epoch, NULL, &r), LS_OK);
    epoch = LS_TXN_MAX_EPOCH - 1;
    CHECK_EQ_INT(ls_txn_run_add(s, tid, pid, epoch, &part, 1, NULL, 0, &r), LS_OK);
    int64_t fresh = next_pid;
    CHECK_EQ_INT(ls_txn_run_end(s, tid, pid, epoch, false, true, &r), LS_OK);
    CHECK_EQ_INT(r.err, LS_TXERR_NONE);
    CHECK(r.producer_id == fresh && r.producer_epoch == 0);
    CHECK_EQ_INT(ls_txn_finish(s, tid), LS_OK);
    CHECK(f.w[f.nw - 1].pid == pid && !f.w[f.nw - 1].commit &&
          f.w[f.nw - 1].epoch == LS_TXN_MAX_EPOCH);
    CHECK_EQ_INT(ls_txn_run_end(s, tid, pid, epoch, false, true, &r), LS_OK);
    CHECK(r.err == LS_TXERR_NONE && r.producer_id == fresh && r.producer_epoch == 0);
    /* and the new pair carries on */
    CHECK_EQ_INT(ls_txn_run_add(s, tid, fresh, 0, &part, 1, NULL, 0, &r), LS_OK);
    CHECK_EQ_INT(r.err, LS_TXERR_NONE);
    CHECK_EQ_INT(stored_state(s, tid), LS_TXN_ONGOING);
    ls_txn_store_free(s);
}

/* A step that lets another broker write first, once: the compare of the
 * outer run must lose, and its rerun must see the other broker's result. */
typedef struct race_arg {
    ls_txn_store_t *other;
    const char *tid;
    int64_t pid;
    int calls;
} race_arg_t;

static ls_txn_result_t racing_add(void *arg, const ls_txn_record_t *cur, int64_t fresh,
                                  int64_t now_ms, ls_txn_record_t *next)
{
    race_arg_t *a = arg;
    if (a->calls++ == 0) {
        ls_txn_partition_t p = P("other", 2, 9);
        ls_txn_result_t r;
        ls_txn_run_add(a->other, a->tid, a->pid, 0, &p, 1, NULL, 0, &r);
    }
    ls_txn_partition_t q = P("mine", 1, 1);
    return ls_txn_add(cur, a->pid, 0, &q, 1, NULL, 0, now_ms, next);
}

TEST(store_serializes_two_brokers_on_the_record_revision)
{
    fake_logs_t f = {0};
    ls_txn_store_t *a = store(&f), *b = store(&f);
    char tid[64];
    snprintf(tid, sizeof tid, "%s", new_tid("race"));
    ls_txn_result_t r;
    CHECK_EQ_INT(ls_txn_run_init(a, tid, 60000, -1, -1, &r), LS_OK);
    race_arg_t ra = {b, tid, r.producer_id, 0};
    CHECK_EQ_INT(ls_txn_run(a, tid, racing_add, &ra, &r), LS_OK);
    CHECK_EQ_INT(r.err, LS_TXERR_NONE);
    CHECK_EQ_INT(ra.calls, 2); /* lost once, reran on the fresh record */
    ls_txn_record_t rec;
    int64_t rev;
    CHECK_EQ_INT(ls_txn_load(a, tid, &rec, &rev), LS_OK);
    CHECK_EQ_INT(rec.npartitions, 2); /* both brokers' partitions, neither lost */
    CHECK(ls_txn_has_partition(&rec, 2, 9) && ls_txn_has_partition(&rec, 1, 1));
    CHECK_EQ_INT(rec.txn_seq, 1); /* one transaction, not two */
    ls_txn_record_free(&rec);
    /* a new instance on broker b fences the producer of broker a */
    CHECK_EQ_INT(ls_txn_run_init(b, tid, 60000, -1, -1, &r), LS_OK);
    CHECK_EQ_INT(r.err, LS_TXERR_CONCURRENT_TRANSACTIONS);
    CHECK_EQ_INT(ls_txn_run_end(a, tid, ra.pid, 0, true, false, &r), LS_OK);
    CHECK_EQ_INT(r.err, LS_TXERR_PRODUCER_FENCED);
    ls_txn_store_free(a);
    ls_txn_store_free(b);
}

TEST(store_another_broker_finishes_a_decision_left_half_done)
{
    fake_logs_t f = {0};
    ls_txn_store_t *a = store(&f);
    char tid[64];
    snprintf(tid, sizeof tid, "%s", new_tid("takeover"));
    ls_txn_result_t r;
    ls_txn_run_init(a, tid, 60000, -1, -1, &r);
    int64_t pid = r.producer_id;
    ls_txn_partition_t parts[] = {P("t", 3, 0), P("t", 3, 1), P("t", 3, 2)};
    const char *groups[] = {"g1"};
    ls_txn_run_add(a, tid, pid, 0, parts, 3, groups, 1, &r);
    ls_txn_run_end(a, tid, pid, 0, false, false, &r);
    CHECK(r.finish);
    /* broker a dies after the first marker: its second marker write fails */
    f.fail_from = 2;
    CHECK(ls_txn_finish(a, tid) != LS_OK);
    CHECK_EQ_INT(f.nw, 1);
    CHECK_EQ_INT(stored_state(a, tid), LS_TXN_PREPARE_ABORT); /* still decided */
    ls_txn_store_free(a);
    /* the producer retries meanwhile: told to wait, never told "done" */
    f.fail_from = 0;
    ls_txn_store_t *b = store(&f);
    CHECK_EQ_INT(ls_txn_run_end(b, tid, pid, 0, false, false, &r), LS_OK);
    CHECK_EQ_INT(r.err, LS_TXERR_CONCURRENT_TRANSACTIONS);
    /* broker b's sweep takes over and finishes the same decision */
    ls_txn_sweep_stats_t st;
    CHECK_EQ_INT(ls_txn_sweep(b, mine_prefix, "takeover", &st), LS_OK);
    CHECK_EQ_INT(st.finished, 1);
    CHECK_EQ_INT(stored_state(b, tid), LS_TXN_COMPLETE_ABORT);
    CHECK_EQ_INT(f.nw, 3); /* each log got its marker exactly once */
    for (int i = 0; i < f.nw; i++)
        CHECK(!f.w[i].commit && f.w[i].seq == 1);
    CHECK_EQ_INT(f.groups_settled, 1);
    CHECK_EQ_INT(ls_txn_run_end(b, tid, pid, 0, false, false, &r), LS_OK);
    CHECK_EQ_INT(r.err, LS_TXERR_NONE);
    ls_txn_store_free(b);
}

TEST(store_sweep_aborts_timed_out_and_removes_expired_ids)
{
    fake_logs_t f = {0};
    ls_txn_store_t *s = store(&f);
    char t1[64], t2[64];
    snprintf(t1, sizeof t1, "%s", new_tid("sweep"));
    snprintf(t2, sizeof t2, "%s", new_tid("sweep"));
    ls_txn_result_t r;
    NOW = 1000;
    ls_txn_run_init(s, t1, 5000, -1, -1, &r);
    int64_t pid = r.producer_id;
    ls_txn_partition_t p = P("t", 3, 0);
    ls_txn_run_add(s, t1, pid, 0, &p, 1, NULL, 0, &r);
    ls_txn_run_init(s, t2, 5000, -1, -1, &r);
    /* not this broker's: untouched whatever the time */
    NOW = 1000 + 5000;
    ls_txn_sweep_stats_t st;
    CHECK_EQ_INT(ls_txn_sweep(s, none_mine, NULL, &st), LS_OK);
    CHECK_EQ_INT(st.visited, 0);
    CHECK_EQ_INT(stored_state(s, t1), LS_TXN_ONGOING);
    /* before the timeout nothing happens; at it, the abort is decided and finished */
    NOW = 1000 + 4999;
    CHECK_EQ_INT(ls_txn_sweep(s, mine_prefix, "sweep", &st), LS_OK);
    CHECK_EQ_INT(st.aborted, 0);
    CHECK_EQ_INT(stored_state(s, t1), LS_TXN_ONGOING);
    NOW = 1000 + 5000;
    CHECK_EQ_INT(ls_txn_sweep(s, mine_prefix, "sweep", &st), LS_OK);
    CHECK_EQ_INT(st.aborted, 1);
    CHECK_EQ_INT(st.finished, 1);
    CHECK_EQ_INT(stored_state(s, t1), LS_TXN_COMPLETE_ABORT);
    CHECK_EQ_INT(f.nw, 1);
    CHECK_EQ_INT(f.w[0].epoch, 1); /* the marker fences the timed-out producer */
    CHECK_EQ_INT(ls_txn_run_end(s, t1, pid, 0, true, false, &r), LS_OK);
    CHECK_EQ_INT(r.err, LS_TXERR_PRODUCER_FENCED);
    /* idle ids go after transactional.id.expiration.ms */
    NOW = 6000 + 604800000;
    CHECK_EQ_INT(ls_txn_sweep(s, mine_prefix, "sweep", &st), LS_OK);
    CHECK_EQ_INT(st.expired, 2);
    CHECK_EQ_INT((int)stored_state(s, t1), -1);
    CHECK_EQ_INT((int)stored_state(s, t2), -1);
    ls_txn_store_free(s);
}

TEST(store_sweep_pages_through_many_ids_and_survives_a_corrupt_record)
{
    fake_logs_t f = {0};
    ls_txn_store_t *s = store(&f);
    NOW = 2000000000000LL; /* later than every earlier test's clock */
    int n = 600;
    for (int i = 0; i < n; i++) {
        char tid[32];
        snprintf(tid, sizeof tid, "bulk-%04d", i);
        ls_txn_result_t r;
        CHECK_EQ_INT(ls_txn_run_init(s, tid, 1000, -1, -1, &r), LS_OK);
    }
    char *bad = ls_txn_key("garbled");
    CHECK_EQ_INT(ls_meta_put(M, bad, "xx", 2), LS_OK);
    ls_txn_record_t rec;
    int64_t rev;
    CHECK_EQ_INT(ls_txn_load(s, "garbled", &rec, &rev), LS_ECORRUPT);
    ls_txn_sweep_stats_t st;
    CHECK_EQ_INT(ls_txn_sweep(s, mine_prefix, "bulk-", &st), LS_OK);
    CHECK_EQ_INT(st.visited, n);
    CHECK_EQ_INT(st.failed, 1);
    ls_meta_del(M, bad);
    ls_free(bad);
    ls_txn_store_free(s);
}

/* ls_txn_list: every record once, in key order, across pages, with its
 * stored state; a corrupt record is counted, not visited */
typedef struct list_seen {
    const char *prefix;
    int n;
    char last[64];
    bool ordered;
    int ongoing;
    int64_t ongoing_pid;
    int ongoing_parts;
} list_seen_t;

static void list_visit(void *arg, const ls_txn_record_t *rec)
{
    list_seen_t *x = arg;
    if (strncmp(rec->tid, x->prefix, strlen(x->prefix)) != 0) return;
    if (x->n > 0 && strcmp(x->last, rec->tid) >= 0) x->ordered = false;
    snprintf(x->last, sizeof x->last, "%s", rec->tid);
    x->n++;
    if (rec->state == LS_TXN_ONGOING) {
        x->ongoing++;
        x->ongoing_pid = rec->producer_id;
        x->ongoing_parts = rec->npartitions;
    }
}

TEST(store_list_visits_every_record_once_in_key_order)
{
    fake_logs_t f = {0};
    ls_txn_store_t *s = store(&f);
    char prefix[32];
    snprintf(prefix, sizeof prefix, "%s-", new_tid("list"));
    int n = 300; /* more than one page */
    int64_t pid = -1;
    for (int i = 0; i < n; i++) {
        char tid[64];
        snprintf(tid, sizeof tid, "%s%04d", prefix, i);
        ls_txn_result_t r;
        CHECK_EQ_INT(ls_txn_run_init(s, tid, 60000, -1, -1, &r), LS_OK);
        if (i == 17) {
            pid = r.producer_id;
            ls_txn_partition_t parts[] = {P("t", 3, 0), P("t", 3, 1)};
            CHECK_EQ_INT(ls_txn_run_add(s, tid, pid, 0, parts, 2, NULL, 0, &r), LS_OK);
            CHECK_EQ_INT(r.err, LS_TXERR_NONE);
        }
    }
    char bad_tid[64];
    snprintf(bad_tid, sizeof bad_tid, "%sgarbled", prefix);
    char *bad = ls_txn_key(bad_tid);
    CHECK_EQ_INT(ls_meta_put(M, bad, "xx", 2), LS_OK);
    list_seen_t x = {.prefix = prefix, .ordered = true};
    int corrupt = 0;
    CHECK_EQ_INT(ls_txn_list(s, list_visit, &x, &corrupt), LS_OK);
    CHECK_EQ_INT(x.n, n);
    CHECK(x.ordered);
    CHECK_EQ_INT(corrupt, 1);
    CHECK_EQ_INT(x.ongoing, 1);
    CHECK_EQ_INT(x.ongoing_pid, pid);
    CHECK_EQ_INT(x.ongoing_parts, 2);
    ls_meta_del(M, bad);
    ls_free(bad);
    ls_txn_store_free(s);
}

static void run_store_suite(void)
{
    RUN(store_runs_a_transaction_from_init_to_commit);
    RUN(store_transaction_version_2_bumps_and_rolls_the_pair);
    RUN(store_serializes_two_brokers_on_the_record_revision);
    RUN(store_another_broker_finishes_a_decision_left_half_done);
    RUN(store_sweep_aborts_timed_out_and_removes_expired_ids);
    RUN(store_sweep_pages_through_many_ids_and_survives_a_corrupt_record);
    RUN(store_list_visits_every_record_once_in_key_order);
}

int main(void)
{
    ls_diag_set_level(LS_DIAG_ERROR);
    ls_txn_config_defaults(&CFG);
    const char *etcd = getenv("LS_TEST_ETCD_URL");
    const char *only = getenv("LS_TEST_TXN_ONLY");
    if (!only || strcmp(only, "etcd") != 0) {
        RUN(init_creates_an_id_once_a_producer_id_is_allocated);
        RUN(init_refuses_timeouts_outside_the_broker_bound);
        RUN(init_bumps_the_epoch_and_recognises_its_own_retry);
        RUN(init_takes_a_new_producer_id_when_the_epoch_is_exhausted);
        RUN(init_during_a_transaction_aborts_it_and_fences_the_old_producer);
        RUN(init_by_the_current_producer_during_a_transaction_lets_its_retry_resume);
        RUN(add_begins_grows_and_restarts_transactions);
        RUN(add_refusals_change_nothing);
        RUN(end_decides_once_and_answers_retries_like_kafka);
        RUN(end_with_transaction_version_2_bumps_the_epoch_per_transaction);
        RUN(transaction_version_2_cycles_roll_the_producer_id_over);
        RUN(complete_leaves_other_decisions_alone);
        RUN(expire_aborts_timed_out_transactions_and_removes_idle_ids);
        RUN(produce_and_offsets_need_the_participant_in_the_open_transaction);
        RUN(record_decoder_refuses_damage);

        printf("# backend mem\n");
        M = ls_meta_mem_open();
        run_store_suite();
        ls_meta_close(M);

        char tmpl[] = "/tmp/ls_txn_XXXXXX", path[300], err[256];
        if (!mkdtemp(tmpl)) {
            perror("mkdtemp");
            return 1;
        }
        snprintf(path, sizeof path, "%s/txn.db", tmpl);
        printf("# backend sqlite (%s)\n", path);
        M = ls_meta_sqlite_open(path, err, sizeof err);
        if (!M) {
            printf("FAIL open sqlite: %s\n", err);
            return 1;
        }
        run_store_suite();
        ls_meta_close(M);
        char cmd[400];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpl);
        if (system(cmd) != 0) printf("# could not remove %s\n", tmpl);
    }
    if (etcd && *etcd) {
        /* a fresh prefix per run: earlier runs' records stay out of the sweep */
        char url[512], err[256];
        unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid() << 16;
        snprintf(url, sizeof url, "%s%stxn-%08x", etcd,
                 strchr(etcd + 7, '/') ? (etcd[strlen(etcd) - 1] == '/' ? "" : "-") : "/",
                 (unsigned)rand_r(&seed));
        printf("# backend etcd (%s)\n", url);
        M = ls_meta_open(url, err, sizeof err);
        if (!M) {
            printf("FAIL open etcd: %s\n", err);
            return 1;
        }
        NOW = 1000;
        run_store_suite();
        ls_meta_close(M);
    }
    UNIT_DONE();
}
