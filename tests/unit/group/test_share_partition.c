/* The share-partition state of KIP-932 (group/share_partition.h). */
#include <stdlib.h>
#include "base/alloc.h"
#include "group/share_partition.h"
#include "unit.h"

static ls_sharep_config_t cfg(void)
{
    ls_sharep_config_t c;
    ls_sharep_config_defaults(&c);
    return c;
}

static const uint8_t ACCEPT[] = {LS_SHAREP_ACCEPT}, RELEASE[] = {LS_SHAREP_RELEASE},
                     REJECT[] = {LS_SHAREP_REJECT}, RENEW[] = {LS_SHAREP_RENEW};

static ls_sharep_err ack(ls_sharep_t *sp, const char *m, int64_t first, int64_t last,
                         const uint8_t *type, int64_t now)
{
    return ls_sharep_acknowledge(sp, m, first, last, type, 1, now);
}

static ls_sharep_state state_of(ls_sharep_t *sp, int64_t o, int32_t *count, const char **owner)
{
    ls_sharep_state st = (ls_sharep_state)-1;
    int32_t c;
    const char *w;
    ls_sharep_record(sp, o, &st, count ? count : &c, owner ? owner : &w);
    return st;
}

TEST(acquire_accept_release_reject)
{
    ls_sharep_config_t c = cfg();
    ls_sharep_t *sp = ls_sharep_new(&c, 0);
    const ls_sharep_range_t *r;
    CHECK_EQ_INT(ls_sharep_acquire(sp, "m1", 10, 5, 0, &r), 1);
    CHECK_EQ_INT(r[0].first, 0);
    CHECK_EQ_INT(r[0].last, 4);
    CHECK_EQ_INT(r[0].delivery_count, 1);
    CHECK_EQ_INT(ls_sharep_acquire(sp, "m2", 10, 100, 0, &r), 1);
    CHECK_EQ_INT(r[0].first, 5); /* never the records m1 holds */
    CHECK_EQ_INT(r[0].last, 9);
    CHECK_EQ_INT(ls_sharep_acquire(sp, "m3", 10, 100, 0, &r), 0); /* nothing left */
    CHECK_EQ_INT(ls_sharep_speo(sp), 10);
    CHECK_EQ_INT(ack(sp, "m1", 0, 1, ACCEPT, 1), LS_SPERR_NONE);
    CHECK_EQ_INT(ls_sharep_spso(sp), 2);
    CHECK_EQ_INT(ack(sp, "m1", 2, 2, REJECT, 1), LS_SPERR_NONE);
    CHECK_EQ_INT(ls_sharep_spso(sp), 3);
    CHECK_EQ_INT(ack(sp, "m1", 3, 4, RELEASE, 1), LS_SPERR_NONE);
    CHECK_EQ_INT(ls_sharep_spso(sp), 3);
    CHECK_EQ_INT(state_of(sp, 3, NULL, NULL), LS_SHAREP_AVAILABLE);
    /* released records go to the next fetch, lowest first, counted again */
    CHECK_EQ_INT(ls_sharep_acquire(sp, "m3", 10, 100, 2, &r), 1);
    CHECK_EQ_INT(r[0].first, 3);
    CHECK_EQ_INT(r[0].last, 4);
    CHECK_EQ_INT(r[0].delivery_count, 2);
    /* one type per offset */
    uint8_t types[] = {LS_SHAREP_ACCEPT, LS_SHAREP_REJECT, LS_SHAREP_ACCEPT, LS_SHAREP_GAP,
                       LS_SHAREP_ACCEPT};
    CHECK_EQ_INT(ls_sharep_acknowledge(sp, "m2", 5, 9, types, 5, 3), LS_SPERR_NONE);
    CHECK_EQ_INT(ls_sharep_spso(sp), 3); /* 3 and 4 still held by m3 */
    CHECK_EQ_INT(ack(sp, "m3", 3, 4, ACCEPT, 3), LS_SPERR_NONE);
    CHECK_EQ_INT(ls_sharep_spso(sp), 10);
    CHECK_EQ_INT(ls_sharep_speo(sp), 10);
    ls_sharep_free(sp);
}

TEST(wrong_member_and_bad_requests_change_nothing)
{
    ls_sharep_config_t c = cfg();
    ls_sharep_t *sp = ls_sharep_new(&c, 100);
    const ls_sharep_range_t *r;
    ls_sharep_acquire(sp, "m1", 110, 5, 0, &r); /* 100-104 */
    ls_sharep_acquire(sp, "m2", 110, 5, 0, &r); /* 105-109 */
    uint64_t v = ls_sharep_version(sp);
    uint8_t two[] = {1, 1};
    CHECK_EQ_INT(ack(sp, "m2", 100, 100, ACCEPT, 1), LS_SPERR_INVALID_RECORD_STATE);
    /* all or nothing: m1's own 103-104 stay acquired when 105 is m2's */
    CHECK_EQ_INT(ack(sp, "m1", 103, 105, ACCEPT, 1), LS_SPERR_INVALID_RECORD_STATE);
    CHECK_EQ_INT(state_of(sp, 103, NULL, NULL), LS_SHAREP_ACQUIRED);
    CHECK_EQ_INT(ack(sp, "nobody", 100, 100, ACCEPT, 1), LS_SPERR_INVALID_RECORD_STATE);
    CHECK_EQ_INT(ack(sp, "m1", 100, 110, ACCEPT, 1), LS_SPERR_INVALID_REQUEST); /* past SPEO */
    CHECK_EQ_INT(ack(sp, "m1", 99, 100, ACCEPT, 1), LS_SPERR_INVALID_RECORD_STATE);
    CHECK_EQ_INT(ack(sp, "m1", 101, 100, ACCEPT, 1), LS_SPERR_INVALID_REQUEST);
    CHECK_EQ_INT(ls_sharep_acknowledge(sp, "m1", 0, INT64_MAX, two, 2, 1),
                 LS_SPERR_INVALID_REQUEST);
    uint8_t bad[] = {9};
    CHECK_EQ_INT(ack(sp, "m1", 100, 100, bad, 1), LS_SPERR_INVALID_REQUEST);
    CHECK_EQ_INT(ls_sharep_acknowledge(sp, "m1", 100, 102, two, 2, 1), LS_SPERR_INVALID_REQUEST);
    CHECK_EQ_INT(ls_sharep_version(sp), v);
    CHECK_EQ_INT(ack(sp, "m1", 100, 100, ACCEPT, 1), LS_SPERR_NONE);
    CHECK_EQ_INT(ack(sp, "m1", 100, 100, ACCEPT, 1), LS_SPERR_INVALID_RECORD_STATE); /* twice */
    CHECK_EQ_INT(ack(sp, "m1", 101, 101, RELEASE, 1), LS_SPERR_NONE);
    CHECK_EQ_INT(ack(sp, "m1", 101, 101, ACCEPT, 1), LS_SPERR_INVALID_RECORD_STATE);
    ls_sharep_free(sp);
}

TEST(lock_expiry_and_renew)
{
    ls_sharep_config_t c = cfg();
    ls_sharep_t *sp = ls_sharep_new(&c, 0);
    const ls_sharep_range_t *r;
    ls_sharep_acquire(sp, "m1", 4, 2, 1000, &r); /* 0-1, locked until 31000 */
    ls_sharep_acquire(sp, "m1", 4, 2, 2000, &r); /* 2-3, until 32000 */
    CHECK_EQ_INT(ls_sharep_tick(sp, 30999), 31000);
    CHECK_EQ_INT(ack(sp, "m1", 2, 3, RENEW, 20000), LS_SPERR_NONE); /* now until 50000 */
    CHECK_EQ_INT(ls_sharep_tick(sp, 31000), 50000);
    CHECK_EQ_INT(state_of(sp, 0, NULL, NULL), LS_SHAREP_AVAILABLE);
    /* the lock ran out: the acknowledgement comes too late */
    CHECK_EQ_INT(ack(sp, "m1", 0, 0, ACCEPT, 31001), LS_SPERR_INVALID_RECORD_STATE);
    CHECK_EQ_INT(ls_sharep_acquire(sp, "m2", 4, 10, 31002, &r), 1);
    CHECK_EQ_INT(r[0].first, 0);
    CHECK_EQ_INT(r[0].last, 1);
    CHECK_EQ_INT(r[0].delivery_count, 2);
    /* renewed records survived their first deadline */
    CHECK_EQ_INT(ack(sp, "m1", 2, 3, ACCEPT, 40000), LS_SPERR_NONE);
    /* an expiry noticed by a call, with no tick in between */
    CHECK_EQ_INT(ack(sp, "m2", 0, 1, ACCEPT, 31002 + 30000), LS_SPERR_INVALID_RECORD_STATE);
    CHECK_EQ_INT(ls_sharep_spso(sp), 0);
    ls_sharep_free(sp);
}

TEST(delivery_count_limit_archives)
{
    ls_sharep_config_t c = cfg();
    c.delivery_count_limit = 3;
    ls_sharep_t *sp = ls_sharep_new(&c, 0);
    const ls_sharep_range_t *r;
    int64_t now = 0;
    for (int d = 1; d <= 3; d++) {
        CHECK_EQ_INT(ls_sharep_acquire(sp, "m1", 2, 10, now, &r), 1);
        CHECK_EQ_INT(r[0].delivery_count, d);
        if (d < 3) {
            CHECK_EQ_INT(ack(sp, "m1", 0, 0, RELEASE, now), LS_SPERR_NONE);
            now += 40000; /* offset 1 expires */
        }
    }
    /* third delivery: released or expired, it is archived, never redelivered */
    CHECK_EQ_INT(ack(sp, "m1", 0, 0, RELEASE, now), LS_SPERR_NONE);
    CHECK_EQ_INT(ls_sharep_spso(sp), 1); /* archived: the SPSO moved over it */
    CHECK_EQ_INT(state_of(sp, 1, NULL, NULL), LS_SHAREP_ACQUIRED);
    ls_sharep_tick(sp, now + 30000);
    CHECK_EQ_INT(ls_sharep_spso(sp), 2);
    CHECK_EQ_INT(ls_sharep_acquire(sp, "m1", 2, 10, now + 30000, &r), 0);
    ls_sharep_free(sp);
}

TEST(member_leave_releases_its_records_only)
{
    ls_sharep_config_t c = cfg();
    ls_sharep_t *sp = ls_sharep_new(&c, 0);
    const ls_sharep_range_t *r;
    ls_sharep_acquire(sp, "m1", 10, 5, 0, &r);
    ls_sharep_acquire(sp, "m2", 10, 5, 0, &r);
    ls_sharep_release_member(sp, "m1", 1);
    const char *owner;
    CHECK_EQ_INT(state_of(sp, 0, NULL, NULL), LS_SHAREP_AVAILABLE);
    CHECK_EQ_INT(state_of(sp, 5, NULL, &owner), LS_SHAREP_ACQUIRED);
    CHECK(!strcmp(owner, "m2"));
    CHECK_EQ_INT(ls_sharep_acquire(sp, "m3", 10, 100, 2, &r), 1);
    CHECK_EQ_INT(r[0].first, 0);
    CHECK_EQ_INT(r[0].last, 4);
    ls_sharep_free(sp);
}

TEST(max_record_locks_bounds_the_window)
{
    ls_sharep_config_t c = cfg();
    c.max_record_locks = 100;
    ls_sharep_t *sp = ls_sharep_new(&c, 0);
    const ls_sharep_range_t *r;
    CHECK_EQ_INT(ls_sharep_acquire(sp, "m1", 1000, 500, 0, &r), 1);
    CHECK_EQ_INT(r[0].last, 99);
    CHECK_EQ_INT(ls_sharep_acquire(sp, "m2", 1000, 500, 0, &r), 0);
    CHECK_EQ_INT(ack(sp, "m1", 0, 49, ACCEPT, 1), LS_SPERR_NONE);
    CHECK_EQ_INT(ls_sharep_acquire(sp, "m2", 1000, 500, 1, &r), 1);
    CHECK_EQ_INT(r[0].first, 100);
    CHECK_EQ_INT(r[0].last, 149);
    CHECK(ls_sharep_config_check(&c) == NULL);
    c.max_record_locks = 10001;
    CHECK(strstr(ls_sharep_config_check(&c), "group.share.partition.max.record.locks"));
    c = cfg();
    c.delivery_count_limit = 1;
    CHECK(strstr(ls_sharep_config_check(&c), "group.share.delivery.count.limit"));
    ls_sharep_free(sp);
}

TEST(log_start_moves_spso)
{
    ls_sharep_config_t c = cfg();
    ls_sharep_t *sp = ls_sharep_new(&c, 0);
    const ls_sharep_range_t *r;
    ls_sharep_acquire(sp, "m1", 10, 10, 0, &r);
    ls_sharep_log_start(sp, 4);
    CHECK_EQ_INT(ls_sharep_spso(sp), 4);
    CHECK_EQ_INT(ack(sp, "m1", 3, 3, ACCEPT, 1), LS_SPERR_INVALID_RECORD_STATE);
    CHECK_EQ_INT(ack(sp, "m1", 4, 9, ACCEPT, 1), LS_SPERR_NONE);
    ls_sharep_log_start(sp, 50); /* past the SPEO */
    CHECK_EQ_INT(ls_sharep_spso(sp), 50);
    CHECK_EQ_INT(ls_sharep_acquire(sp, "m1", 52, 10, 2, &r), 1);
    CHECK_EQ_INT(r[0].first, 50);
    ls_sharep_free(sp);
}

/* Random members fetch, acknowledge (every type), leave and let locks run
 * out, for a thousand cycles, then one member drains the partition. A shadow
 * model checks that no record is ever held by two members, that the SPSO
 * never goes back, that no record is delivered more often than the limit,
 * and at the end that every offset was finished exactly once: accepted or
 * rejected once, or archived after its last allowed delivery. */
#define NM 4
#define LOG 3000
TEST(randomized_every_offset_finished_exactly_once)
{
    ls_sharep_config_t c = cfg();
    c.max_record_locks = 100;
    c.delivery_count_limit = 3;
    c.record_lock_duration_ms = 1000;
    ls_sharep_t *sp = ls_sharep_new(&c, 0);
    static int holder[LOG], deliveries[LOG], finished[LOG];
    static int64_t lock_until[LOG];
    for (int o = 0; o < LOG; o++)
        holder[o] = -1;
    const char *names[NM] = {"m0", "m1", "m2", "m3"};
    srand(932);
    int64_t now = 0, spso = 0, log_end = 0;
    for (int cycle = 0; cycle < 1000 || spso < log_end; cycle++) {
        bool drain = cycle >= 1000;
        now += rand() % 300;
        if (!drain && log_end < LOG) log_end += rand() % 6;
        if (log_end > LOG) log_end = LOG;
        for (int o = 0; o < LOG; o++) /* the shadow's locks run out */
            if (holder[o] >= 0 && lock_until[o] <= now) holder[o] = -1;
        int m = drain ? 0 : rand() % NM;
        int action = drain ? 0 : rand() % 10;
        if (action < 4) { /* fetch */
            const ls_sharep_range_t *r;
            int n = ls_sharep_acquire(sp, names[m], log_end, 1 + rand() % 20, now, &r);
            for (int i = 0; i < n; i++)
                for (int64_t o = r[i].first; o <= r[i].last; o++) {
                    CHECK_EQ_INT(holder[o], -1); /* never two members */
                    CHECK_EQ_INT(finished[o], 0);
                    holder[o] = m;
                    lock_until[o] = now + c.record_lock_duration_ms;
                    deliveries[o]++;
                    CHECK_EQ_INT(r[i].delivery_count, deliveries[o]);
                    CHECK(deliveries[o] <= c.delivery_count_limit);
                }
        }
        if (action < 8) { /* acknowledge some held records, one type per run */
            for (int64_t o = spso; o < ls_sharep_speo(sp); o++) {
                if (holder[o] != m || (!drain && rand() % 3 == 0)) continue;
                uint8_t t = drain ? LS_SHAREP_ACCEPT : (uint8_t)(rand() % 5);
                CHECK_EQ_INT(ack(sp, names[m], o, o, &t, now), LS_SPERR_NONE);
                if (t == LS_SHAREP_ACCEPT || t == LS_SHAREP_REJECT || t == LS_SHAREP_GAP) {
                    finished[o]++;
                    holder[o] = -1;
                } else if (t == LS_SHAREP_RELEASE) {
                    holder[o] = -1;
                } else {
                    lock_until[o] = now + c.record_lock_duration_ms;
                }
            }
            /* someone else's record is refused */
            for (int64_t o = spso; o < ls_sharep_speo(sp); o++)
                if (holder[o] >= 0 && holder[o] != m) {
                    CHECK_EQ_INT(ack(sp, names[m], o, o, ACCEPT, now),
                                 LS_SPERR_INVALID_RECORD_STATE);
                    break;
                }
        } else if (action == 8) { /* leaves */
            ls_sharep_release_member(sp, names[m], now);
            for (int o = 0; o < LOG; o++)
                if (holder[o] == m) holder[o] = -1;
        } else {
            ls_sharep_tick(sp, now);
        }
        CHECK(ls_sharep_spso(sp) >= spso);
        spso = ls_sharep_spso(sp);
        CHECK(ls_sharep_speo(sp) - spso <= c.max_record_locks);
        if (drain) now += c.record_lock_duration_ms; /* what others held comes back */
        CHECK(cycle < 100000);
    }
    CHECK_EQ_INT(spso, log_end);
    CHECK(log_end > 1000);
    int archived_by_limit = 0;
    for (int o = 0; o < log_end; o++) {
        CHECK(finished[o] <= 1);
        if (!finished[o]) {
            CHECK_EQ_INT(deliveries[o], c.delivery_count_limit);
            archived_by_limit++;
        }
    }
    CHECK(archived_by_limit > 0); /* the run exercised the limit */
    ls_sharep_free(sp);
}

static ls_sharep_t *mixed_state(void)
{
    ls_sharep_config_t c = cfg();
    ls_sharep_t *sp = ls_sharep_new(&c, 1000);
    const ls_sharep_range_t *r;
    ls_sharep_acquire(sp, "m1", 1020, 20, 0, &r);
    ack(sp, "m1", 1003, 1005, ACCEPT, 1);
    ack(sp, "m1", 1006, 1006, REJECT, 1);
    ack(sp, "m1", 1007, 1009, RELEASE, 1);
    ls_sharep_acquire(sp, "m2", 1020, 1, 2, &r); /* 1007 again: count 2 */
    return sp;
}

TEST(encode_decode_round_trip)
{
    ls_sharep_config_t c = cfg();
    ls_sharep_t *sp = mixed_state();
    ls_buf_t b = {0};
    ls_sharep_encode(sp, &b);
    ls_sharep_t *back = NULL;
    CHECK_EQ_INT(ls_sharep_decode(b.data, b.len, &c, &back), LS_OK);
    CHECK_EQ_INT(ls_sharep_spso(back), 1000);
    CHECK_EQ_INT(ls_sharep_speo(back), 1020);
    for (int64_t o = 1000; o < 1020; o++) {
        int32_t c1, c2;
        ls_sharep_state s1 = state_of(sp, o, &c1, NULL), s2 = state_of(back, o, &c2, NULL);
        CHECK_EQ_INT(s2, s1 == LS_SHAREP_ACQUIRED ? LS_SHAREP_AVAILABLE : s1);
        CHECK_EQ_INT(c2, c1);
    }
    /* the same bytes again */
    ls_buf_t b2 = {0};
    ls_sharep_encode(back, &b2);
    CHECK_EQ_INT(b2.len, b.len);
    CHECK(!memcmp(b.data, b2.data, b.len));
    /* the new owner hands out the lost locks first, counted */
    const ls_sharep_range_t *r;
    CHECK(ls_sharep_acquire(back, "m3", 1020, 100, 5, &r) >= 1);
    CHECK_EQ_INT(r[0].first, 1000);
    CHECK_EQ_INT(r[0].delivery_count, 2);
    ls_sharep_free(back);
    /* a lowered limit archives what it forbids */
    c.delivery_count_limit = 2;
    CHECK_EQ_INT(ls_sharep_decode(b.data, b.len, &c, &back), LS_OK);
    CHECK_EQ_INT(state_of(back, 1007, NULL, NULL), LS_SHAREP_ARCHIVED);
    ls_sharep_free(back);
    ls_buf_free(&b);
    ls_buf_free(&b2);
    ls_sharep_free(sp);
}

TEST(decode_rejects_garbage)
{
    ls_sharep_config_t c = cfg();
    ls_sharep_t *sp = mixed_state();
    ls_buf_t b = {0};
    ls_sharep_encode(sp, &b);
    ls_sharep_t *back = (ls_sharep_t *)1;
    for (size_t len = 0; len < b.len; len++) { /* every truncation */
        CHECK_EQ_INT(ls_sharep_decode(b.data, len, &c, &back), LS_ECORRUPT);
        CHECK(back == NULL);
    }
    uint8_t *p = ls_memdup(b.data, b.len);
    p[0] = 2; /* unknown version */
    CHECK_EQ_INT(ls_sharep_decode(p, b.len, &c, &back), LS_ECORRUPT);
    memcpy(p, b.data, b.len);
    p[9] = 0xff; /* in-flight count beyond any limit */
    CHECK_EQ_INT(ls_sharep_decode(p, b.len, &c, &back), LS_ECORRUPT);
    memcpy(p, b.data, b.len);
    p[17 + 4] = LS_SHAREP_ACQUIRED; /* first run's state: a lock is never stored */
    CHECK_EQ_INT(ls_sharep_decode(p, b.len, &c, &back), LS_ECORRUPT);
    p[17 + 4] = LS_SHAREP_ACKNOWLEDGED; /* a finished record at the SPSO */
    CHECK_EQ_INT(ls_sharep_decode(p, b.len, &c, &back), LS_ECORRUPT);
    /* every single-byte flip decodes or is refused, never crashes */
    for (size_t i = 0; i < b.len; i++)
        for (int bit = 0; bit < 8; bit++) {
            memcpy(p, b.data, b.len);
            p[i] ^= (uint8_t)(1 << bit);
            if (ls_sharep_decode(p, b.len, &c, &back) == LS_OK) ls_sharep_free(back);
        }
    srand(48);
    for (int k = 0; k < 2000; k++) {
        uint8_t junk[64];
        size_t n = (size_t)(rand() % 64);
        for (size_t i = 0; i < n; i++)
            junk[i] = (uint8_t)rand();
        junk[0] = 1;
        if (ls_sharep_decode(junk, n, &c, &back) == LS_OK) ls_sharep_free(back);
    }
    ls_free(p);
    ls_buf_free(&b);
    ls_sharep_free(sp);
}

TEST(version_moves_with_what_is_stored)
{
    ls_sharep_config_t c = cfg();
    ls_sharep_t *sp = ls_sharep_new(&c, 0);
    const ls_sharep_range_t *r;
    uint64_t v = ls_sharep_version(sp);
    ls_sharep_acquire(sp, "m1", 10, 5, 0, &r);
    CHECK(ls_sharep_version(sp) > v); /* a delivery counted */
    v = ls_sharep_version(sp);
    CHECK_EQ_INT(ack(sp, "m1", 0, 4, RENEW, 1), LS_SPERR_NONE);
    CHECK_EQ_INT(ls_sharep_version(sp), v); /* locks are not stored */
    CHECK_EQ_INT(ack(sp, "m1", 0, 0, ACCEPT, 1), LS_SPERR_NONE);
    CHECK(ls_sharep_version(sp) > v);
    ls_sharep_free(sp);
}

int main(void)
{
    RUN(acquire_accept_release_reject);
    RUN(wrong_member_and_bad_requests_change_nothing);
    RUN(lock_expiry_and_renew);
    RUN(delivery_count_limit_archives);
    RUN(member_leave_releases_its_records_only);
    RUN(max_record_locks_bounds_the_window);
    RUN(log_start_moves_spso);
    RUN(randomized_every_offset_finished_exactly_once);
    RUN(encode_decode_round_trip);
    RUN(decode_rejects_garbage);
    RUN(version_moves_with_what_is_stored);
    UNIT_DONE();
}
