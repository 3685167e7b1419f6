/* Share group membership and the simple assignor (group/sgroup.h). */
#include <stdlib.h>
#include "base/alloc.h"
#include "group/sgroup.h"
#include "unit.h"

static ls_sgroup_config_t cfg(void)
{
    ls_sgroup_config_t c;
    ls_sgroup_config_defaults(&c);
    return c;
}

static ls_cgroup_topic_t META[] = {{"a", 4}, {"b", 2}, {"c", 6}};
static const char *A[] = {"a"}, *B[] = {"b"}, *AB[] = {"a", "b"}, *C[] = {"c"};

static ls_sgroup_hb_res_t beat(ls_sgroup_t *g, const char *id, int32_t epoch,
                               const char *const *topics, int ntopics, int64_t now)
{
    ls_sgroup_hb_req_t req = {.member_id = id,
                              .member_epoch = epoch,
                              .topics = topics,
                              .ntopics = topics ? ntopics : -1,
                              .now_ms = now};
    ls_sgroup_hb_res_t res;
    ls_sgroup_heartbeat(g, &req, META, 3, &res);
    return res;
}

/* The epoch the group last answered member id with. */
static int32_t epoch_of(ls_sgroup_t *g, const char *id)
{
    for (int i = 0; i < ls_sgroup_member_count(g); i++) {
        ls_sgroup_member_info_t mi;
        ls_sgroup_member(g, i, &mi);
        if (!strcmp(mi.member_id, id)) return mi.member_epoch;
    }
    return -100;
}

/* How many members hold topic/partition, and the fewest and most
 * partitions a member holds. */
static int holders(ls_sgroup_t *g, const char *topic, int32_t p)
{
    int n = 0;
    for (int i = 0; i < ls_sgroup_member_count(g); i++) {
        ls_sgroup_member_info_t mi;
        ls_sgroup_member(g, i, &mi);
        for (int k = 0; k < mi.nassigned; k++)
            n += mi.assigned[k].partition == p && !strcmp(mi.assigned[k].topic, topic);
    }
    return n;
}

static void spread_of(ls_sgroup_t *g, int *lo, int *hi)
{
    *lo = 1 << 30;
    *hi = 0;
    for (int i = 0; i < ls_sgroup_member_count(g); i++) {
        ls_sgroup_member_info_t mi;
        ls_sgroup_member(g, i, &mi);
        if (mi.nassigned < *lo) *lo = mi.nassigned;
        if (mi.nassigned > *hi) *hi = mi.nassigned;
    }
}

TEST(join_takes_the_target_at_once)
{
    ls_sgroup_config_t c = cfg();
    ls_sgroup_t *g = ls_sgroup_new("g", &c, 0, NULL, NULL);
    ls_sgroup_hb_res_t r1 = beat(g, "m1", 0, A, 1, 0);
    CHECK_EQ_INT(r1.err, LS_SGERR_NONE);
    CHECK_EQ_INT(r1.member_epoch, 1);
    CHECK_EQ_INT(r1.nassigned, 4);
    CHECK_EQ_INT(r1.heartbeat_interval_ms, 5000);
    ls_sgroup_hb_res_t r2 = beat(g, "m2", 0, A, 1, 0);
    CHECK_EQ_INT(r2.member_epoch, 2);
    CHECK_EQ_INT(r2.nassigned, 2); /* no waiting for m1 to revoke */
    r1 = beat(g, "m1", 1, NULL, -1, 1);
    CHECK_EQ_INT(r1.err, LS_SGERR_NONE);
    CHECK_EQ_INT(r1.member_epoch, 2);
    CHECK_EQ_INT(r1.nassigned, 2);
    for (int p = 0; p < 4; p++)
        CHECK_EQ_INT(holders(g, "a", p), 1);
    CHECK(!strcmp(ls_sgroup_state_name(g), "Stable"));
    ls_sgroup_free(g);
}

TEST(more_members_than_partitions_share_them)
{
    ls_sgroup_config_t c = cfg();
    ls_sgroup_t *g = ls_sgroup_new("g", &c, 0, NULL, NULL);
    const char *ids[] = {"m1", "m2", "m3", "m4", "m5"};
    for (int i = 0; i < 5; i++)
        CHECK_EQ_INT(beat(g, ids[i], 0, B, 1, 0).err, LS_SGERR_NONE);
    /* 5 members, 2 partitions: each partition to ceil(5/2) = 3 members */
    CHECK_EQ_INT(holders(g, "b", 0), 3);
    CHECK_EQ_INT(holders(g, "b", 1), 3);
    int lo, hi;
    spread_of(g, &lo, &hi);
    CHECK_EQ_INT(lo, 1); /* nobody idle */
    CHECK_EQ_INT(hi, 2);
    ls_sgroup_free(g);
}

TEST(fewer_members_balanced_and_sticky)
{
    ls_sgroup_config_t c = cfg();
    ls_sgroup_t *g = ls_sgroup_new("g", &c, 0, NULL, NULL);
    beat(g, "m1", 0, C, 1, 0);
    beat(g, "m2", 0, C, 1, 0);
    beat(g, "m3", 0, C, 1, 0);
    int lo, hi;
    spread_of(g, &lo, &hi);
    CHECK_EQ_INT(lo, 2);
    CHECK_EQ_INT(hi, 2);
    ls_sgroup_member_info_t before[3];
    ls_cgroup_tp_t kept[3][6];
    for (int i = 0; i < 3; i++) {
        ls_sgroup_member(g, i, &before[i]);
        memcpy(kept[i], before[i].assigned, (size_t)before[i].nassigned * sizeof kept[i][0]);
    }
    beat(g, "m4", 0, C, 1, 1);
    spread_of(g, &lo, &hi);
    CHECK_EQ_INT(lo, 1);
    CHECK_EQ_INT(hi, 2);
    /* 6 over 4 members is 2, 2, 1, 1: one partition moves, no more */
    int moved = 0;
    for (int i = 0; i < 3; i++) {
        ls_sgroup_member_info_t now;
        ls_sgroup_member(g, i, &now);
        for (int k = 0; k < 2; k++) {
            bool still = false;
            for (int j = 0; j < now.nassigned; j++)
                still |= now.assigned[j].partition == kept[i][k].partition;
            moved += !still;
        }
    }
    CHECK_EQ_INT(moved, 1);
    for (int p = 0; p < 6; p++)
        CHECK_EQ_INT(holders(g, "c", p), 1);
    ls_sgroup_free(g);
}

TEST(subscriptions_decide_eligibility)
{
    ls_sgroup_config_t c = cfg();
    ls_sgroup_t *g = ls_sgroup_new("g", &c, 0, NULL, NULL);
    beat(g, "m1", 0, A, 1, 0);
    beat(g, "m2", 0, B, 1, 0);
    beat(g, "m3", 0, AB, 2, 0);
    for (int i = 0; i < 3; i++) {
        ls_sgroup_member_info_t mi;
        ls_sgroup_member(g, i, &mi);
        for (int k = 0; k < mi.nassigned; k++) {
            bool sub = false;
            for (int t = 0; t < mi.ntopics; t++)
                sub |= !strcmp(mi.topics[t], mi.assigned[k].topic);
            CHECK(sub);
        }
    }
    for (int p = 0; p < 4; p++)
        CHECK(holders(g, "a", p) >= 1);
    for (int p = 0; p < 2; p++)
        CHECK(holders(g, "b", p) >= 1);
    CHECK_EQ_INT(holders(g, "c", 0), 0);
    /* m1 switches to c: a goes to m3 alone, c to m1 */
    ls_sgroup_hb_res_t r = beat(g, "m1", epoch_of(g, "m1"), C, 1, 1);
    CHECK_EQ_INT(r.err, LS_SGERR_NONE);
    CHECK_EQ_INT(r.nassigned, 6);
    ls_sgroup_free(g);
}

TEST(errors_fencing_and_limits)
{
    ls_sgroup_config_t c = cfg();
    c.max_size = 2;
    ls_sgroup_t *g = ls_sgroup_new("g", &c, 10, NULL, NULL);
    ls_sgroup_hb_res_t r = beat(g, "m1", 0, A, 1, 0);
    CHECK_EQ_INT(r.member_epoch, 11); /* above the floor */
    CHECK_EQ_INT(beat(g, "m1", 12, NULL, -1, 1).err, LS_SGERR_FENCED_MEMBER_EPOCH);
    CHECK_EQ_INT(beat(g, "m1", 10, NULL, -1, 1).err, LS_SGERR_FENCED_MEMBER_EPOCH);
    ls_sgroup_hb_req_t rack = {.member_id = "m1", .member_epoch = 11, .rack_id = "", .ntopics = -1};
    ls_sgroup_heartbeat(g, &rack, META, 3, &r);
    CHECK_EQ_INT(r.err, LS_SGERR_INVALID_REQUEST);
    CHECK(strstr(r.message, "RackId"));
    CHECK_EQ_INT(beat(g, "ghost", 3, NULL, -1, 1).err, LS_SGERR_UNKNOWN_MEMBER_ID);
    CHECK_EQ_INT(beat(g, "ghost", -1, NULL, -1, 1).err, LS_SGERR_UNKNOWN_MEMBER_ID);
    r = beat(g, "", 0, A, 1, 1);
    CHECK_EQ_INT(r.err, LS_SGERR_INVALID_REQUEST);
    CHECK(strstr(r.message, "MemberId"));
    r = beat(g, "m2", 0, NULL, -1, 1);
    CHECK_EQ_INT(r.err, LS_SGERR_INVALID_REQUEST);
    CHECK(strstr(r.message, "SubscribedTopicNames"));
    CHECK_EQ_INT(beat(g, "m2", -2, NULL, -1, 1).err, LS_SGERR_INVALID_REQUEST);
    CHECK_EQ_INT(beat(g, "m2", 0, A, 1, 1).err, LS_SGERR_NONE);
    CHECK_EQ_INT(beat(g, "m3", 0, A, 1, 1).err, LS_SGERR_GROUP_MAX_SIZE_REACHED);
    CHECK_EQ_INT(beat(g, "m3", 7, NULL, -1, 1).err, LS_SGERR_GROUP_MAX_SIZE_REACHED);
    CHECK_EQ_INT(ls_sgroup_member_count(g), 2);
    /* m1 missed the answer that moved it from 11 to 12: 11 still works */
    CHECK_EQ_INT(beat(g, "m1", 11, NULL, -1, 2).member_epoch, 12);
    CHECK_EQ_INT(beat(g, "m1", 11, NULL, -1, 2).err, LS_SGERR_NONE);
    CHECK_EQ_INT(beat(g, "m1", 12, NULL, -1, 2).err, LS_SGERR_NONE);
    /* two epochs behind (0, 10) is fenced, as in Kafka even for a join */
    CHECK_EQ_INT(beat(g, "m1", 0, A, 1, 2).err, LS_SGERR_FENCED_MEMBER_EPOCH);
    CHECK_EQ_INT(beat(g, "m1", 10, NULL, -1, 2).err, LS_SGERR_FENCED_MEMBER_EPOCH);
    ls_sgroup_free(g);
}

/* For many group shapes: every partition has between 1 and ceil(M/P)
 * members, and member loads differ by at most one, after joins and after
 * each leave (the sticky path). */
TEST(simple_assignor_invariants)
{
    static const char *ABC[] = {"a", "b", "c"};
    struct {
        const char *const *topics;
        int n, parts;
    } shapes[] = {{A, 1, 4}, {B, 1, 2}, {C, 1, 6}, {ABC, 3, 12}};
    ls_sgroup_config_t c = cfg();
    for (int s = 0; s < 4; s++)
        for (int m = 1; m <= 15; m++) {
            ls_sgroup_t *g = ls_sgroup_new("g", &c, 0, NULL, NULL);
            char ids[15][16];
            for (int i = 0; i < m; i++) {
                snprintf(ids[i], sizeof ids[i], "m%02d", i);
                CHECK_EQ_INT(beat(g, ids[i], 0, shapes[s].topics, shapes[s].n, 0).err,
                             LS_SGERR_NONE);
            }
            for (int left = 0; left < m; left++) {
                int live = m - left, sharing = (live + shapes[s].parts - 1) / shapes[s].parts;
                for (int t = 0; t < shapes[s].n; t++) {
                    const char *topic = shapes[s].topics[t];
                    int np = 0;
                    for (int k = 0; k < 3; k++)
                        if (!strcmp(META[k].name, topic)) np = META[k].partitions;
                    for (int p = 0; p < np; p++) {
                        int h = holders(g, topic, p);
                        CHECK(h >= 1);
                        CHECK(h <= sharing);
                    }
                }
                int lo, hi;
                spread_of(g, &lo, &hi);
                CHECK(hi - lo <= 1);
                CHECK(lo >= 1 || live > shapes[s].parts * sharing);
                CHECK_EQ_INT(beat(g, ids[left], -1, NULL, -1, 1).err, LS_SGERR_NONE);
            }
            ls_sgroup_free(g);
        }
}

typedef struct left {
    char ids[8][8];
    bool expired[8];
    int n;
} left_t;

static void on_leave(void *arg, const char *member_id, bool expired)
{
    left_t *l = arg;
    l->expired[l->n] = expired;
    snprintf(l->ids[l->n++], sizeof l->ids[0], "%s", member_id);
}

TEST(leave_and_session_expiry_are_reported)
{
    ls_sgroup_config_t c = cfg();
    left_t left = {0};
    ls_sgroup_t *g = ls_sgroup_new("g", &c, 0, on_leave, &left);
    beat(g, "m1", 0, A, 1, 0);
    beat(g, "m2", 0, A, 1, 0);
    beat(g, "m3", 0, A, 1, 0);
    int32_t e = ls_sgroup_epoch(g);
    CHECK_EQ_INT(beat(g, "m3", -1, NULL, -1, 10).err, LS_SGERR_NONE);
    CHECK_EQ_INT(left.n, 1);
    CHECK(!strcmp(left.ids[0], "m3"));
    CHECK(!left.expired[0]);
    CHECK(ls_sgroup_epoch(g) > e);
    CHECK_EQ_INT(beat(g, "m1", epoch_of(g, "m1"), NULL, -1, 20000).err, LS_SGERR_NONE);
    /* m2 stops heartbeating: at 45 s its session ends and m1 gets all */
    CHECK_EQ_INT(ls_sgroup_tick(g, 44999), 45000);
    CHECK_EQ_INT(ls_sgroup_member_count(g), 2);
    CHECK_EQ_INT(ls_sgroup_tick(g, 45000), 65000);
    CHECK_EQ_INT(left.n, 2);
    CHECK(!strcmp(left.ids[1], "m2"));
    CHECK(left.expired[1]);
    /* m1 has not been told the new epoch yet; one ahead of it is fenced */
    CHECK(ls_sgroup_assignment_epoch(g) > epoch_of(g, "m1"));
    ls_sgroup_hb_res_t r = beat(g, "m1", ls_sgroup_assignment_epoch(g) + 1, NULL, -1, 45001);
    CHECK_EQ_INT(r.err, LS_SGERR_FENCED_MEMBER_EPOCH);
    r = beat(g, "m1", epoch_of(g, "m1"), NULL, -1, 45001);
    CHECK_EQ_INT(r.err, LS_SGERR_NONE);
    CHECK_EQ_INT(r.nassigned, 4);
    beat(g, "m1", r.member_epoch, NULL, -1, 45002);
    CHECK_EQ_INT(beat(g, "m1", -1, NULL, -1, 45003).err, LS_SGERR_NONE);
    CHECK(!strcmp(ls_sgroup_state_name(g), "Empty"));
    ls_sgroup_free(g);
}

TEST(encode_decode_keeps_members_and_epochs)
{
    ls_sgroup_config_t c = cfg();
    ls_sgroup_t *g = ls_sgroup_new("g", &c, 4, NULL, NULL);
    uint64_t v = ls_sgroup_version(g);
    beat(g, "m1", 0, A, 1, 0);
    CHECK(ls_sgroup_version(g) > v);
    beat(g, "m2", 0, AB, 2, 0);
    beat(g, "m1", epoch_of(g, "m1"), NULL, -1, 1);
    v = ls_sgroup_version(g);
    beat(g, "m1", epoch_of(g, "m1"), NULL, -1, 2); /* a session refresh only */
    CHECK_EQ_INT(ls_sgroup_version(g), v);
    ls_buf_t b = {0};
    ls_sgroup_encode(g, &b);
    ls_sgroup_t *back = ls_sgroup_decode(b.data, b.len, "g", &c, NULL, NULL, 1000);
    CHECK(back != NULL);
    CHECK_EQ_INT(ls_sgroup_epoch(back), ls_sgroup_epoch(g));
    CHECK_EQ_INT(ls_sgroup_assignment_epoch(back), ls_sgroup_assignment_epoch(g));
    CHECK_EQ_INT(ls_sgroup_member_count(back), 2);
    for (int i = 0; i < 2; i++) {
        ls_sgroup_member_info_t x, y;
        ls_sgroup_member(g, i, &x);
        ls_sgroup_member(back, i, &y);
        CHECK(!strcmp(x.member_id, y.member_id));
        CHECK_EQ_INT(x.member_epoch, y.member_epoch);
        CHECK_EQ_INT(x.ntopics, y.ntopics);
        CHECK_EQ_INT(x.nassigned, y.nassigned);
        for (int k = 0; k < x.nassigned; k++)
            CHECK_EQ_INT(holders(back, x.assigned[k].topic, x.assigned[k].partition),
                         holders(g, x.assigned[k].topic, x.assigned[k].partition));
    }
    /* the new coordinator goes on: same epochs accepted, fresh sessions */
    CHECK_EQ_INT(beat(back, "m1", epoch_of(g, "m1"), NULL, -1, 1001).err, LS_SGERR_NONE);
    CHECK_EQ_INT(ls_sgroup_tick(back, 1001), 1000 + 45000);
    ls_buf_t b2 = {0};
    ls_sgroup_encode(back, &b2);
    CHECK_EQ_INT(b2.len, b.len); /* same members, same sizes */
    /* garbage: every truncation, a duplicate member, an epoch ahead of the group */
    for (size_t len = 0; len < b.len; len++)
        CHECK(ls_sgroup_decode(b.data, len, "g", &c, NULL, NULL, 0) == NULL);
    uint8_t *p = ls_memdup(b.data, b.len);
    p[0] = 9;
    CHECK(ls_sgroup_decode(p, b.len, "g", &c, NULL, NULL, 0) == NULL);
    memcpy(p, b.data, b.len);
    p[5] = p[6] = p[7] = p[8] = 0xff; /* assignment epoch -1 < member epochs */
    CHECK(ls_sgroup_decode(p, b.len, "g", &c, NULL, NULL, 0) == NULL);
    for (size_t i = 0; i < b.len; i++)
        for (int bit = 0; bit < 8; bit++) {
            memcpy(p, b.data, b.len);
            p[i] ^= (uint8_t)(1 << bit);
            ls_sgroup_free(ls_sgroup_decode(p, b.len, "g", &c, NULL, NULL, 0));
        }
    ls_free(p);
    ls_buf_free(&b);
    ls_buf_free(&b2);
    ls_sgroup_free(back);
    ls_sgroup_free(g);
}

int main(void)
{
    RUN(join_takes_the_target_at_once);
    RUN(more_members_than_partitions_share_them);
    RUN(fewer_members_balanced_and_sticky);
    RUN(subscriptions_decide_eligibility);
    RUN(errors_fencing_and_limits);
    RUN(simple_assignor_invariants);
    RUN(leave_and_session_expiry_are_reported);
    RUN(encode_decode_keeps_members_and_epochs);
    UNIT_DONE();
}
