/* The KIP-848 consumer group state machine and its assignors (group/cgroup.h). */
#include <stdlib.h>
#include "base/alloc.h"
#include "group/cgroup.h"
#include "unit.h"

static ls_cgroup_config_t cfg(void)
{
    ls_cgroup_config_t c;
    ls_cgroup_config_defaults(&c);
    return c;
}

static ls_cgroup_topic_t META[] = {{"a", 4}, {"b", 2}, {"other", 3}};
static int NMETA = 2; /* "other" is visible only to tests that widen it */

/* What a well-behaved client owns: its last assignment. */
typedef struct client {
    const char *id;
    int32_t epoch;
    ls_cgroup_tp_t owned[32];
    int nowned;
} client_t;

static ls_cgroup_hb_res_t beat(ls_cgroup_t *g, client_t *c, const char *const *topics, int ntopics,
                               int64_t now)
{
    ls_cgroup_hb_req_t req = {.member_id = c->id,
                              .member_epoch = c->epoch,
                              .rebalance_timeout_ms = c->epoch == 0 ? 30000 : -1,
                              .topics = topics,
                              .ntopics = ntopics,
                              .owned = c->owned,
                              .nowned = c->nowned,
                              .now_ms = now};
    ls_cgroup_hb_res_t res;
    ls_cgroup_heartbeat(g, &req, META, NMETA, &res);
    if (res.err == LS_CGERR_NONE) {
        c->epoch = res.member_epoch;
        c->nowned = res.nassigned;
        /* the result is valid until the next call: keep the table's names */
        for (int i = 0; i < res.nassigned; i++)
            for (int t = 0; t < 3; t++)
                if (!strcmp(META[t].name, res.assigned[i].topic))
                    c->owned[i] = (ls_cgroup_tp_t){META[t].name, res.assigned[i].partition};
    }
    return res;
}

/* No partition is held by two members at once (assigned or revoking). */
static int overlaps(ls_cgroup_t *g)
{
    int n = 0;
    for (int i = 0; i < ls_cgroup_member_count(g); i++)
        for (int j = i + 1; j < ls_cgroup_member_count(g); j++) {
            ls_cgroup_member_info_t a, b;
            ls_cgroup_member(g, i, &a);
            ls_cgroup_member(g, j, &b);
            for (int x = 0; x < a.nassigned; x++)
                for (int y = 0; y < b.nassigned; y++)
                    n += a.assigned[x].partition == b.assigned[y].partition &&
                         !strcmp(a.assigned[x].topic, b.assigned[y].topic);
        }
    return n;
}

static const char *AB[] = {"a", "b"};

TEST(two_share_then_third_joins_incrementally)
{
    ls_cgroup_config_t c = cfg();
    ls_cgroup_t *g = ls_cgroup_new("g", &c, 0);
    client_t m1 = {.id = "m1", .epoch = 0}, m2 = {.id = "m2", .epoch = 0},
             m3 = {.id = "m3", .epoch = 0};
    CHECK_EQ_INT(beat(g, &m1, AB, 2, 0).err, LS_CGERR_NONE);
    CHECK_EQ_INT(m1.nowned, 6); /* alone: everything */
    CHECK_EQ_INT(beat(g, &m2, AB, 2, 0).err, LS_CGERR_NONE);
    CHECK_EQ_INT(m2.nowned, 0); /* m1 has not revoked yet */
    int32_t e1 = m1.epoch;
    beat(g, &m1, NULL, -1, 1); /* told to revoke: keeps 3, epoch unchanged */
    CHECK_EQ_INT(m1.nowned, 3);
    CHECK_EQ_INT(m1.epoch, e1);
    CHECK_EQ_INT(overlaps(g), 0);
    beat(g, &m1, NULL, -1, 2); /* acknowledged by its owned list: epoch moves */
    CHECK(m1.epoch > e1);
    beat(g, &m2, NULL, -1, 2);
    CHECK_EQ_INT(m2.nowned, 3);
    CHECK_EQ_INT(m2.epoch, m1.epoch);
    /* a third joins: each keeps 2, no partition moves before it is released */
    beat(g, &m3, AB, 2, 3);
    CHECK_EQ_INT(m3.nowned, 0);
    for (int round = 0; round < 3; round++) {
        beat(g, &m1, NULL, -1, 4 + round);
        beat(g, &m2, NULL, -1, 4 + round);
        beat(g, &m3, NULL, -1, 4 + round);
        CHECK_EQ_INT(overlaps(g), 0);
    }
    CHECK_EQ_INT(m1.nowned, 2);
    CHECK_EQ_INT(m2.nowned, 2);
    CHECK_EQ_INT(m3.nowned, 2);
    CHECK_EQ_INT(m1.epoch, ls_cgroup_epoch(g));
    ls_cgroup_free(g);
}

TEST(uniform_is_sticky)
{
    ls_cgroup_config_t c = cfg();
    ls_cgroup_t *g = ls_cgroup_new("g", &c, 0);
    client_t m1 = {.id = "m1", .epoch = 0}, m2 = {.id = "m2", .epoch = 0},
             m3 = {.id = "m3", .epoch = 0};
    beat(g, &m1, AB, 2, 0);
    beat(g, &m2, AB, 2, 0);
    for (int r = 0; r < 2; r++)
        beat(g, &m1, NULL, -1, 1), beat(g, &m2, NULL, -1, 1);
    client_t before = m1;
    beat(g, &m3, AB, 2, 2);
    for (int r = 0; r < 3; r++)
        beat(g, &m1, NULL, -1, 3), beat(g, &m2, NULL, -1, 3), beat(g, &m3, NULL, -1, 3);
    /* m1 kept two of what it had (it only gave one away) */
    int kept = 0;
    for (int i = 0; i < m1.nowned; i++)
        for (int j = 0; j < before.nowned; j++)
            kept += m1.owned[i].partition == before.owned[j].partition &&
                    !strcmp(m1.owned[i].topic, before.owned[j].topic);
    CHECK_EQ_INT(kept, 2);
    ls_cgroup_free(g);
}

TEST(range_assignor_chosen_by_client)
{
    ls_cgroup_config_t c = cfg();
    ls_cgroup_t *g = ls_cgroup_new("g", &c, 0);
    const char *a[] = {"a"};
    ls_cgroup_hb_req_t req = {.member_id = "m1",
                              .rebalance_timeout_ms = 1000,
                              .topics = a,
                              .ntopics = 1,
                              .assignor = "range"};
    ls_cgroup_hb_res_t res;
    ls_cgroup_heartbeat(g, &req, META, NMETA, &res);
    req.member_id = "m2";
    ls_cgroup_heartbeat(g, &req, META, NMETA, &res);
    ls_cgroup_member_info_t i1, i2;
    ls_cgroup_member(g, 0, &i1);
    ls_cgroup_member(g, 1, &i2);
    CHECK_EQ_INT(i1.ntarget, 2);
    CHECK_EQ_INT(i2.ntarget, 2);
    /* contiguous: m1 0-1, m2 2-3 */
    CHECK_EQ_INT(i1.target[0].partition + i1.target[1].partition, 1);
    CHECK_EQ_INT(i2.target[0].partition + i2.target[1].partition, 5);
    req.assignor = "sticky";
    req.member_id = "m3";
    ls_cgroup_heartbeat(g, &req, META, NMETA, &res);
    CHECK_EQ_INT(res.err, LS_CGERR_UNSUPPORTED_ASSIGNOR);
    CHECK_EQ_INT(ls_cgroup_member_count(g), 2);
    ls_cgroup_free(g);
}

TEST(fencing_and_unknown_member)
{
    ls_cgroup_config_t c = cfg();
    ls_cgroup_t *g = ls_cgroup_new("g", &c, 0);
    client_t m1 = {.id = "m1", .epoch = 0};
    beat(g, &m1, AB, 2, 0);
    client_t wrong = m1;
    wrong.epoch = m1.epoch + 5;
    CHECK_EQ_INT(beat(g, &wrong, NULL, -1, 1).err, LS_CGERR_FENCED_MEMBER_EPOCH);
    client_t ghost = {.id = "nobody", .epoch = 3};
    CHECK_EQ_INT(beat(g, &ghost, NULL, -1, 1).err, LS_CGERR_UNKNOWN_MEMBER_ID);
    CHECK_EQ_INT(ls_cgroup_commit_check(g, "m1", m1.epoch - 1), LS_CGERR_STALE_MEMBER_EPOCH);
    CHECK_EQ_INT(ls_cgroup_commit_check(g, "m1", m1.epoch), LS_CGERR_NONE);
    CHECK_EQ_INT(ls_cgroup_commit_check(g, "nobody", 1), LS_CGERR_UNKNOWN_MEMBER_ID);
    ls_cgroup_free(g);
}

TEST(leave_and_session_expiry_move_partitions)
{
    ls_cgroup_config_t c = cfg();
    ls_cgroup_t *g = ls_cgroup_new("g", &c, 0);
    client_t m1 = {.id = "m1", .epoch = 0}, m2 = {.id = "m2", .epoch = 0},
             m3 = {.id = "m3", .epoch = 0};
    beat(g, &m1, AB, 2, 0);
    beat(g, &m2, AB, 2, 0);
    beat(g, &m3, AB, 2, 0);
    for (int r = 0; r < 3; r++)
        beat(g, &m1, NULL, -1, 1), beat(g, &m2, NULL, -1, 1), beat(g, &m3, NULL, -1, 1);
    CHECK_EQ_INT(m1.nowned + m2.nowned + m3.nowned, 6);
    client_t leaving = m3;
    leaving.epoch = LS_CGROUP_EPOCH_LEAVE;
    ls_cgroup_hb_res_t res = beat(g, &leaving, NULL, -1, 2);
    CHECK_EQ_INT(res.err, LS_CGERR_NONE);
    CHECK_EQ_INT(ls_cgroup_member_count(g), 2);
    beat(g, &m1, NULL, -1, 3);
    beat(g, &m2, NULL, -1, 3);
    CHECK_EQ_INT(m1.nowned + m2.nowned, 6);
    /* m2 stops heartbeating: after the session timeout m1 gets everything */
    CHECK(ls_cgroup_tick(g, 3 + 45000 - 1) == 3 + 45000);
    CHECK_EQ_INT(ls_cgroup_member_count(g), 2);
    m1.epoch = beat(g, &m1, NULL, -1, 40000).member_epoch;
    ls_cgroup_tick(g, 3 + 45000);
    CHECK_EQ_INT(ls_cgroup_member_count(g), 1);
    beat(g, &m1, NULL, -1, 45010);
    CHECK_EQ_INT(m1.nowned, 6);
    ls_cgroup_free(g);
}

TEST(static_member_comes_back)
{
    ls_cgroup_config_t c = cfg();
    ls_cgroup_t *g = ls_cgroup_new("g", &c, 0);
    ls_cgroup_hb_req_t req = {.member_id = "m1",
                              .instance_id = "i1",
                              .rebalance_timeout_ms = 1000,
                              .topics = AB,
                              .ntopics = 2};
    ls_cgroup_hb_res_t res;
    ls_cgroup_heartbeat(g, &req, META, NMETA, &res);
    CHECK_EQ_INT(res.nassigned, 6);
    int32_t epoch = ls_cgroup_epoch(g);
    req.member_id = "m1b"; /* same instance while m1 is active */
    ls_cgroup_heartbeat(g, &req, META, NMETA, &res);
    CHECK_EQ_INT(res.err, LS_CGERR_UNRELEASED_INSTANCE_ID);
    ls_cgroup_hb_req_t leave = {
        .member_id = "m1", .instance_id = "i1", .member_epoch = LS_CGROUP_EPOCH_STATIC_LEAVE};
    ls_cgroup_heartbeat(g, &leave, META, NMETA, &res);
    CHECK_EQ_INT(res.err, LS_CGERR_NONE);
    ls_cgroup_heartbeat(g, &req, META, NMETA, &res); /* back as m1b: same partitions */
    CHECK_EQ_INT(res.err, LS_CGERR_NONE);
    CHECK_EQ_INT(res.nassigned, 6);
    CHECK_EQ_INT(ls_cgroup_epoch(g), epoch); /* no rebalance */
    ls_cgroup_free(g);
}

TEST(new_partitions_bump_the_epoch)
{
    ls_cgroup_config_t c = cfg();
    ls_cgroup_t *g = ls_cgroup_new("g", &c, 7);
    client_t m1 = {.id = "m1", .epoch = 0};
    beat(g, &m1, AB, 2, 0);
    CHECK(m1.epoch > 7); /* above the floor a previous coordinator handed out */
    int32_t e = ls_cgroup_epoch(g);
    META[1].partitions = 3;
    beat(g, &m1, NULL, -1, 1);
    META[1].partitions = 2;
    CHECK(ls_cgroup_epoch(g) > e);
    CHECK_EQ_INT(m1.nowned, 7);
    ls_cgroup_free(g);
}

TEST(regex_subscription)
{
    ls_cgroup_config_t c = cfg();
    ls_cgroup_t *g = ls_cgroup_new("g", &c, 0);
    ls_cgroup_hb_req_t req = {.member_id = "m1", .rebalance_timeout_ms = 1000, .regex = "a|oth.*"};
    ls_cgroup_hb_res_t res;
    ls_cgroup_heartbeat(g, &req, META, 3, &res);
    CHECK_EQ_INT(res.err, LS_CGERR_NONE);
    CHECK_EQ_INT(res.nassigned, 7); /* a (4) + other (3); not b, and "oth" must match whole */
    req.member_id = "m2";
    req.regex = "a(";
    ls_cgroup_heartbeat(g, &req, META, 3, &res);
    CHECK_EQ_INT(res.err, LS_CGERR_INVALID_REGULAR_EXPRESSION);
    ls_cgroup_free(g);
}

TEST(invalid_requests_name_the_field)
{
    ls_cgroup_config_t c = cfg();
    c.max_size = 1;
    ls_cgroup_t *g = ls_cgroup_new("g", &c, 0);
    ls_cgroup_hb_req_t req = {.member_id = "m1", .rebalance_timeout_ms = 1000};
    ls_cgroup_hb_res_t res;
    ls_cgroup_heartbeat(g, &req, META, NMETA, &res);
    CHECK_EQ_INT(res.err, LS_CGERR_INVALID_REQUEST);
    CHECK(strstr(res.message, "SubscribedTopicNames"));
    req.member_id = "";
    ls_cgroup_heartbeat(g, &req, META, NMETA, &res);
    CHECK(strstr(res.message, "MemberId"));
    req.member_id = "m1";
    req.member_epoch = -3;
    ls_cgroup_heartbeat(g, &req, META, NMETA, &res);
    CHECK(strstr(res.message, "MemberEpoch"));
    req.member_epoch = 0;
    req.topics = AB;
    req.ntopics = 2;
    ls_cgroup_heartbeat(g, &req, META, NMETA, &res);
    CHECK_EQ_INT(res.err, LS_CGERR_NONE);
    req.member_id = "m2";
    ls_cgroup_heartbeat(g, &req, META, NMETA, &res);
    CHECK_EQ_INT(res.err, LS_CGERR_GROUP_MAX_SIZE_REACHED);
    ls_cgroup_free(g);
}

TEST(lost_response_previous_epoch_accepted)
{
    ls_cgroup_config_t c = cfg();
    ls_cgroup_t *g = ls_cgroup_new("g", &c, 0);
    client_t m1 = {.id = "m1", .epoch = 0}, m2 = {.id = "m2", .epoch = 0};
    beat(g, &m1, AB, 2, 0);
    client_t stale = m1; /* owns all 6 at its first epoch */
    beat(g, &m2, AB, 2, 0);
    beat(g, &m1, NULL, -1, 1); /* revoking: same epoch */
    beat(g, &m1, NULL, -1, 2); /* acknowledged: epoch moves, keeps 3; this response is lost */
    CHECK(m1.epoch > stale.epoch);
    CHECK_EQ_INT(m1.nowned, 3);
    /* the previous epoch claiming partitions it gave away is fenced */
    client_t claims = stale;
    CHECK_EQ_INT(beat(g, &claims, NULL, -1, 3).err, LS_CGERR_FENCED_MEMBER_EPOCH);
    /* the previous epoch owning only what it still has is accepted */
    stale.nowned = m1.nowned;
    memcpy(stale.owned, m1.owned, sizeof m1.owned);
    CHECK_EQ_INT(beat(g, &stale, NULL, -1, 3).err, LS_CGERR_NONE);
    CHECK_EQ_INT(stale.epoch, m1.epoch);
    ls_cgroup_free(g);
}

TEST(more_members_than_partitions)
{
    ls_cgroup_config_t c = cfg();
    ls_cgroup_t *g = ls_cgroup_new("g", &c, 0);
    const char *b[] = {"b"}; /* 2 partitions, 3 members */
    client_t m[3] = {{.id = "m1"}, {.id = "m2"}, {.id = "m3"}};
    for (int r = 0; r < 4; r++)
        for (int i = 0; i < 3; i++)
            beat(g, &m[i], r ? NULL : b, r ? -1 : 1, r);
    CHECK_EQ_INT(m[0].nowned + m[1].nowned + m[2].nowned, 2);
    CHECK(m[0].nowned <= 1 && m[1].nowned <= 1 && m[2].nowned <= 1);
    CHECK_EQ_INT(overlaps(g), 0);
    ls_cgroup_free(g);
}

TEST(deleted_topic_is_revoked)
{
    ls_cgroup_config_t c = cfg();
    ls_cgroup_t *g = ls_cgroup_new("g", &c, 0);
    client_t m1 = {.id = "m1"};
    beat(g, &m1, AB, 2, 0);
    CHECK_EQ_INT(m1.nowned, 6);
    NMETA = 1; /* "b" is gone */
    beat(g, &m1, NULL, -1, 1);
    beat(g, &m1, NULL, -1, 2);
    NMETA = 2;
    CHECK_EQ_INT(m1.nowned, 4);
    CHECK_EQ_INT(m1.epoch, ls_cgroup_epoch(g));
    ls_cgroup_free(g);
}

TEST(revocation_not_acknowledged_in_rebalance_timeout_fences)
{
    ls_cgroup_config_t c = cfg();
    ls_cgroup_t *g = ls_cgroup_new("g", &c, 0);
    client_t m1 = {.id = "m1"}, m2 = {.id = "m2"};
    beat(g, &m1, AB, 2, 0); /* rebalance timeout 30000 (beat's join) */
    beat(g, &m2, AB, 2, 100);
    beat(g, &m1, NULL, -1, 200); /* told to revoke 3, never acknowledges */
    CHECK_EQ_INT(ls_cgroup_tick(g, 200 + 30000 - 1), 200 + 30000);
    CHECK_EQ_INT(ls_cgroup_member_count(g), 2);
    ls_cgroup_tick(g, 200 + 30000);
    CHECK_EQ_INT(ls_cgroup_member_count(g), 1);
    beat(g, &m2, NULL, -1, 30300);
    CHECK_EQ_INT(m2.nowned, 6);
    ls_cgroup_free(g);
}

int main(void)
{
    RUN(two_share_then_third_joins_incrementally);
    RUN(uniform_is_sticky);
    RUN(range_assignor_chosen_by_client);
    RUN(fencing_and_unknown_member);
    RUN(leave_and_session_expiry_move_partitions);
    RUN(static_member_comes_back);
    RUN(new_partitions_bump_the_epoch);
    RUN(regex_subscription);
    RUN(invalid_requests_name_the_field);
    RUN(lost_response_previous_epoch_accepted);
    RUN(more_members_than_partitions);
    RUN(deleted_topic_is_revoked);
    RUN(revocation_not_acknowledged_in_rebalance_timeout_fences);
    UNIT_DONE();
}
