/* Transactions on one log (log/log_txn.h) and the head's version 2 form:
 * which batches and markers a commit accepts, what they change, the last
 * stable offset, and the aborted-transactions index (range lookups checked
 * against a brute-force scan). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "log/log_meta.h"
#include "log/log_txn.h"
#include "unit.h"

/* A head with producer 7 (epoch 2) and producer 8 (epoch 0), next offset 100. */
static void head2(ls_head_t *h)
{
    memset(h, 0, sizeof *h);
    h->next_offset = 100;
    h->max_timestamp = h->max_timestamp_offset = -1;
    h->producers = LS_NEWN(ls_pstate_t, 2);
    h->nproducers = 2;
    h->producers[0].producer_id = 7;
    h->producers[0].epoch = 2;
    h->producers[0].nbatches = 1;
    h->producers[0].batches[0] = (ls_pbatch_t){0, 4, 90};
    h->producers[1].producer_id = 8;
}

static int round_trips(const ls_head_t *h, int version)
{
    ls_buf_t b;
    ls_buf_init(&b);
    ls_head_encode(h, &b);
    int ok = b.len > 0 && b.data[0] == version;
    ls_head_t d;
    ok = ok && ls_head_decode(b.data, b.len, &d) == LS_OK;
    if (ok) {
        ls_buf_t b2;
        ls_buf_init(&b2);
        ls_head_encode(&d, &b2);
        ok = b2.len == b.len && memcmp(b.data, b2.data, b.len) == 0;
        ls_buf_free(&b2);
        ls_head_clear(&d);
    }
    for (size_t len = 0; ok && len < b.len; len++)
        ok = ls_head_decode(b.data, len, &d) == LS_ECORRUPT;
    ls_buf_free(&b);
    return ok;
}

TEST(head_without_transactions_keeps_version_1)
{
    ls_head_t h;
    head2(&h);
    CHECK(round_trips(&h, 1));
    ls_head_clear(&h);
}

TEST(head_with_transactions_is_version_2_and_checked)
{
    ls_head_t h;
    head2(&h);
    h.producers[0].txn_seq = 3;
    h.producers[0].txn_first_offset = 95;
    h.producers[0].ended_seq = 2;
    h.producers[1].ended_seq = 9;
    h.max_aborted_span = 40;
    CHECK(round_trips(&h, 2));
    ls_buf_t b;
    ls_head_t d;
    /* broken invariants do not load */
    h.producers[0].txn_first_offset = 100; /* past the head */
    ls_buf_init(&b);
    ls_head_encode(&h, &b);
    CHECK_EQ_INT(ls_head_decode(b.data, b.len, &d), LS_ECORRUPT);
    ls_buf_free(&b);
    h.producers[0].txn_first_offset = 95;
    h.producers[0].ended_seq = 3; /* open transaction not after the ended one */
    ls_buf_init(&b);
    ls_head_encode(&h, &b);
    CHECK_EQ_INT(ls_head_decode(b.data, b.len, &d), LS_ECORRUPT);
    ls_buf_free(&b);
    ls_head_clear(&h);
    /* version 2 without transaction state is not canonical */
    head2(&h);
    h.max_aborted_span = 1;
    ls_buf_init(&b);
    ls_head_encode(&h, &b);
    CHECK_EQ_INT(b.data[0], 2);
    memset(b.data + b.len - 8, 0, 8); /* span 0: nothing left that needs version 2 */
    CHECK_EQ_INT(ls_head_decode(b.data, b.len, &d), LS_ECORRUPT);
    ls_buf_free(&b);
    ls_head_clear(&h);
}

TEST(head_with_producer_timestamps_is_version_3_and_canonical)
{
    ls_head_t h;
    head2(&h);
    h.producers[0].last_timestamp = 1700000000123LL; /* DescribeProducers' LastTimestamp */
    CHECK(round_trips(&h, 3));
    ls_buf_t b;
    ls_buf_init(&b);
    ls_head_encode(&h, &b);
    ls_head_t d;
    CHECK_EQ_INT(ls_head_decode(b.data, b.len, &d), LS_OK);
    CHECK_EQ_INT(d.producers[0].last_timestamp, 1700000000123LL);
    CHECK_EQ_INT(d.producers[1].last_timestamp, 0);
    ls_head_clear(&d);
    ls_buf_free(&b);
    /* with transaction state too */
    h.producers[0].txn_seq = 3;
    h.producers[0].txn_first_offset = 95;
    h.producers[0].ended_seq = 2;
    CHECK(round_trips(&h, 3));
    /* version 3 without a timestamp is not canonical */
    h.producers[0].txn_seq = h.producers[0].txn_first_offset = h.producers[0].ended_seq = 0;
    ls_buf_init(&b);
    ls_head_encode(&h, &b);
    CHECK_EQ_INT(b.data[0], 3);
    /* producer 0's timestamp: after its batch and its three transaction fields */
    size_t at = 1 + 1 + 5 * 8 + 2 + 8 + 2 + 1 + 16 + 24;
    CHECK_EQ_INT((int64_t)ls_be64_get(b.data + at), 1700000000123LL);
    memset(b.data + at, 0, 8);
    CHECK_EQ_INT(ls_head_decode(b.data, b.len, &d), LS_ECORRUPT);
    ls_buf_free(&b);
    ls_head_clear(&h);
}

TEST(batches_of_fenced_ended_or_mixed_producers_are_refused)
{
    ls_head_t h;
    head2(&h);
    CHECK_EQ_INT(ls_log_txn_check_batch(&h, 99, 0, 1), LS_TXB_OK); /* unknown producer */
    CHECK_EQ_INT(ls_log_txn_check_batch(&h, 7, 1, 1), LS_TXB_FENCED);
    CHECK_EQ_INT(ls_log_txn_check_batch(&h, 7, 2, 1), LS_TXB_OK);
    ls_log_txn_apply_batch(&h, 7, 1, 100);
    CHECK_EQ_INT(h.producers[0].txn_seq, 1);
    CHECK_EQ_INT(h.producers[0].txn_first_offset, 100);
    h.next_offset = 110;
    ls_log_txn_apply_batch(&h, 7, 1, 105); /* a later batch keeps the first offset */
    CHECK_EQ_INT(h.producers[0].txn_first_offset, 100);
    CHECK_EQ_INT(ls_log_txn_check_batch(&h, 7, 2, 0), LS_TXB_OPEN_TRANSACTION);
    /* a later transaction: this head has not seen the marker of the open one
     * (written through another broker): retriable, not INVALID_TXN_STATE
     * (found by chaos.py --txn on three brokers with no faults) */
    CHECK_EQ_INT(ls_log_txn_check_batch(&h, 7, 2, 2), LS_TXB_BEHIND);
    /* the marker of transaction 1 lands: its late batches are refused */
    ls_log_marker_t m = {.producer_id = 7, .epoch = 2, .txn_seq = 1, .commit = true};
    ls_aborted_t ab;
    CHECK(!ls_log_txn_marker_apply(&h, &m, ls_log_txn_marker_plan(&h, &m), 110, &ab));
    CHECK_EQ_INT(ls_log_txn_check_batch(&h, 7, 2, 1), LS_TXB_ENDED);
    CHECK_EQ_INT(ls_log_txn_check_batch(&h, 7, 2, 2), LS_TXB_OK);
    CHECK_EQ_INT(ls_log_txn_check_batch(&h, 7, 2, 0), LS_TXB_OK);
    ls_head_clear(&h);
}

TEST(markers_are_planned_once_and_abort_ranges_are_recorded)
{
    ls_head_t h;
    head2(&h);
    ls_log_txn_apply_batch(&h, 7, 4, 60);
    ls_log_txn_apply_batch(&h, 8, 1, 70);
    CHECK_EQ_INT(ls_log_txn_lso(&h), 60);
    /* abort of producer 7's transaction 4: a control batch, an aborted range */
    ls_log_marker_t m = {.producer_id = 7, .epoch = 2, .txn_seq = 4, .commit = false};
    ls_marker_action act = ls_log_txn_marker_plan(&h, &m);
    CHECK_EQ_INT(act, LS_MARK_APPLY);
    ls_aborted_t ab = {0};
    CHECK(ls_log_txn_marker_apply(&h, &m, act, 100, &ab));
    CHECK_EQ_INT(ab.producer_id, 7);
    CHECK_EQ_INT(ab.first_offset, 60);
    CHECK_EQ_INT(ab.marker_offset, 100);
    CHECK_EQ_INT(h.max_aborted_span, 40);
    CHECK_EQ_INT(ls_log_txn_lso(&h), 70); /* producer 8 still holds it */
    /* the same marker again (another broker finishing the decision): nothing */
    CHECK_EQ_INT(ls_log_txn_marker_plan(&h, &m), LS_MARK_NOOP);
    /* commit of producer 8: no aborted range; the LSO reaches the head */
    h.next_offset = 101;
    ls_log_marker_t c = {.producer_id = 8, .epoch = 0, .txn_seq = 1, .commit = true};
    act = ls_log_txn_marker_plan(&h, &c);
    CHECK_EQ_INT(act, LS_MARK_APPLY);
    CHECK(!ls_log_txn_marker_apply(&h, &c, act, 101, &ab));
    h.next_offset = 102;
    CHECK_EQ_INT(ls_log_txn_lso(&h), 102);
    /* a marker of a transaction that wrote nothing here only closes it (no
     * aborted range), and a fencing epoch restarts the producer's sequences */
    ls_log_marker_t f = {.producer_id = 7, .epoch = 3, .txn_seq = 5, .commit = false};
    act = ls_log_txn_marker_plan(&h, &f);
    CHECK_EQ_INT(act, LS_MARK_APPLY);
    CHECK(!ls_log_txn_marker_apply(&h, &f, act, 102, &ab));
    CHECK_EQ_INT(h.producers[0].epoch, 3);
    CHECK_EQ_INT(h.producers[0].nbatches, 0);
    CHECK_EQ_INT(h.producers[0].ended_seq, 5);
    CHECK_EQ_INT(ls_log_txn_check_batch(&h, 7, 2, 6), LS_TXB_FENCED);
    CHECK_EQ_INT(ls_log_txn_check_batch(&h, 7, 3, 5), LS_TXB_ENDED);
    /* a producer the log never saw gets an entry holding its ended transaction */
    ls_log_marker_t u = {.producer_id = 50, .epoch = 1, .txn_seq = 2, .commit = true};
    act = ls_log_txn_marker_plan(&h, &u);
    CHECK_EQ_INT(act, LS_MARK_APPLY);
    CHECK(!ls_log_txn_marker_apply(&h, &u, act, 103, &ab));
    CHECK_EQ_INT(ls_log_txn_check_batch(&h, 50, 1, 2), LS_TXB_ENDED);
    CHECK_EQ_INT(ls_log_txn_check_batch(&h, 50, 0, 3), LS_TXB_FENCED);
    ls_buf_t b;
    ls_buf_init(&b);
    ls_head_encode(&h, &b);
    ls_head_t d;
    CHECK_EQ_INT(ls_head_decode(b.data, b.len, &d), LS_OK);
    CHECK_EQ_INT(d.nproducers, 3);
    CHECK_EQ_INT(d.producers[2].ended_seq, 2);
    ls_head_clear(&d);
    ls_buf_free(&b);
    ls_head_clear(&h);
}

TEST(aborted_records_and_keys)
{
    ls_aborted_t a = {.producer_id = 5, .first_offset = 10, .marker_offset = 20}, d;
    ls_buf_t b;
    ls_buf_init(&b);
    ls_aborted_encode(&a, &b);
    CHECK_EQ_INT(ls_aborted_decode(b.data, b.len, &d), LS_OK);
    CHECK(d.producer_id == 5 && d.first_offset == 10 && d.marker_offset == 20);
    for (size_t len = 0; len < b.len; len++)
        CHECK_EQ_INT(ls_aborted_decode(b.data, len, &d), LS_ECORRUPT);
    ls_buf_free(&b);
    a.marker_offset = 10; /* a marker never precedes its data */
    ls_buf_init(&b);
    ls_aborted_encode(&a, &b);
    CHECK_EQ_INT(ls_aborted_decode(b.data, b.len, &d), LS_ECORRUPT);
    ls_buf_free(&b);
    char k1[96], k2[96];
    ls_log_abort_key(k1, sizeof k1, 3, 9);
    ls_log_abort_key(k2, sizeof k2, 3, 10);
    CHECK(strcmp(k1, k2) < 0);
    CHECK(strncmp(k1, "/ls/log/0000000000000003/abort/", 31) == 0);
}

TEST(aborted_range_lookup_matches_a_full_scan)
{
    srand(16);
    for (int round = 0; round < 50; round++) {
        ls_aborted_list_t l = {0};
        int64_t span = 0, off = 0;
        int n = rand() % 60;
        for (int i = 0; i < n; i++) {
            off += 1 + rand() % 20;
            ls_aborted_t a = {
                .producer_id = i, .first_offset = off, .marker_offset = off + 1 + rand() % 200};
            if (a.marker_offset - a.first_offset > span) span = a.marker_offset - a.first_offset;
            ls_aborted_list_put(&l, &a);
            ls_aborted_list_put(&l, &a); /* applying twice converges */
        }
        CHECK_EQ_INT(l.n, n);
        for (int q = 0; q < 40; q++) {
            int64_t x = rand() % (off + 250), y = x + rand() % 100;
            ls_aborted_list_t got = {0};
            int k = ls_aborted_list_range(&l, x, y, span, &got);
            int want = 0, j = 0, same = 1;
            for (int i = 0; i < l.n; i++)
                if (l.v[i].first_offset <= y && l.v[i].marker_offset >= x) {
                    want++;
                    same &= j < got.n && got.v[j++].first_offset == l.v[i].first_offset;
                }
            ls_aborted_list_free(&got);
            CHECK_EQ_INT(k, want);
            CHECK(same);
        }
        /* trimming drops exactly the ranges wholly below the start */
        int64_t start = off / 2;
        int keep = 0;
        for (int i = 0; i < l.n; i++)
            keep += l.v[i].marker_offset >= start;
        ls_aborted_list_trim(&l, start);
        CHECK_EQ_INT(l.n, keep);
        ls_aborted_list_free(&l);
    }
}

int main(void)
{
    RUN(head_without_transactions_keeps_version_1);
    RUN(head_with_transactions_is_version_2_and_checked);
    RUN(head_with_producer_timestamps_is_version_3_and_canonical);
    RUN(batches_of_fenced_ended_or_mixed_producers_are_refused);
    RUN(markers_are_planned_once_and_abort_ranges_are_recorded);
    RUN(aborted_records_and_keys);
    RUN(aborted_range_lookup_matches_a_full_scan);
    UNIT_DONE();
}
