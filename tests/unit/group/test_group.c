/* Group coordinator state machine (src/group/group.c), driven by a fake
 * clock: joins, MEMBER_ID_REQUIRED, protocol selection, sync, fencing,
 * session and rebalance timeouts, static membership, offsets, retention,
 * the stored record codec, and lazy loading. */
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/check.h"
#include "group/group.h"
#include "group/group_service.h"
#include "unit.h"

static int64_t fake_now = 1000;
static int64_t fake_wall = 1700000000000LL;
static int persists, deletes;
static ls_group_record_t last_rec;
static int64_t topic_sn = 7; /* stream number of every topic; -1: deleted */

static int64_t h_now(void *a) { return fake_now; }
static int64_t h_wall(void *a) { return fake_wall; }
static int64_t h_sn(void *a, const char *t) { return topic_sn; }
static void h_persist(void *a, const char *gid, const ls_group_record_t *r)
{
    if (!r) {
        deletes++;
        return;
    }
    persists++;
    ls_group_record_free(&last_rec);
    uint8_t *b;
    size_t n;
    b = ls_group_record_encode(r, &n);
    CHECK(ls_group_record_decode(b, n, &last_rec) == LS_OK);
    ls_free(b);
}

static ls_group_coord_t *coord(void)
{
    ls_group_config_t cfg;
    ls_group_config_defaults(&cfg);
    cfg.min_session_timeout_ms = 100;
    ls_group_hooks_t h = {
        .now_ms = h_now, .wall_ms = h_wall, .persist = h_persist, .topic_stream_no = h_sn};
    persists = deletes = 0;
    topic_sn = 7;
    return ls_group_coord_new(&cfg, &h);
}

static void got_group(void *arg, ls_group_t *g) { *(ls_group_t **)arg = g; }

static ls_group_t *group(ls_group_coord_t *c, const char *id)
{
    ls_group_t *g = NULL;
    ls_group_acquire(c, id, got_group, &g);
    return g;
}

/* a join answer captured for inspection */
typedef struct jres {
    int done;
    ls_group_err err;
    int32_t gen;
    char member[128];
    char leader[128];
    char proto[32];
    int nmembers;
} jres_t;

static void on_join(void *arg, const ls_group_join_result_t *r)
{
    jres_t *j = arg;
    j->done++;
    j->err = r->err;
    j->gen = r->generation;
    snprintf(j->member, sizeof j->member, "%s", r->member_id ? r->member_id : "");
    snprintf(j->leader, sizeof j->leader, "%s", r->leader ? r->leader : "");
    snprintf(j->proto, sizeof j->proto, "%s", r->protocol_name ? r->protocol_name : "");
    j->nmembers = r->nmembers;
}

typedef struct sres {
    int done;
    ls_group_err err;
    char assignment[64];
} sres_t;

static void on_sync(void *arg, const ls_group_sync_result_t *r)
{
    sres_t *s = arg;
    s->done++;
    s->err = r->err;
    snprintf(s->assignment, sizeof s->assignment, "%.*s", (int)r->len,
             r->assignment ? (const char *)r->assignment : "");
}

static ls_group_protocol_t PROTOS_RANGE[] = {{"range", (const uint8_t *)"\0\0\0\0\0\0", 6},
                                             {"roundrobin", (const uint8_t *)"rr", 2}};
static ls_group_protocol_t PROTOS_RR[] = {{"roundrobin", (const uint8_t *)"rr", 2}};

static void join(ls_group_t *g, const char *member, const char *instance, jres_t *out,
                 bool require_id, int32_t session)
{
    char mid[128];
    snprintf(mid, sizeof mid, "%s", member); /* member may point into *out */
    memset(out, 0, sizeof *out);
    ls_group_join_req_t r = {
        .member_id = mid,
        .instance_id = instance,
        .client_id = "c",
        .client_host = "/h",
        .session_timeout_ms = session,
        .rebalance_timeout_ms = 500,
        .protocol_type = "consumer",
        .protocols = PROTOS_RANGE,
        .nprotocols = 2,
        .require_known_member_id = require_id,
    };
    ls_group_join(g, &r, on_join, out);
}

static void do_sync(ls_group_t *g, int32_t gen, const char *member, const char *instance,
                    const ls_group_assignment_t *a, int n, sres_t *out)
{
    memset(out, 0, sizeof *out);
    ls_group_sync(g, gen, member, instance, "consumer", NULL, a, n, on_sync, out);
}

TEST(single_member_join_sync)
{
    ls_group_coord_t *c = coord();
    ls_group_t *g = group(c, "g1");
    CHECK(g);
    CHECK_EQ_INT(ls_group_get_state(g), LS_GROUP_DEAD);
    jres_t j;
    join(g, "", NULL, &j, true, 1000);
    CHECK_EQ_INT(j.done, 1);
    CHECK_EQ_INT(j.err, LS_GERR_MEMBER_ID_REQUIRED);
    CHECK(strncmp(j.member, "c-", 2) == 0);
    char id[128];
    strcpy(id, j.member);
    join(g, id, NULL, &j, true, 1000);
    CHECK_EQ_INT(j.done, 1);
    CHECK_EQ_INT(j.err, LS_GERR_NONE);
    CHECK_EQ_INT(j.gen, 1);
    CHECK(strcmp(j.leader, id) == 0);
    CHECK(strcmp(j.proto, "range") == 0);
    CHECK_EQ_INT(j.nmembers, 1);
    CHECK_EQ_INT(ls_group_get_state(g), LS_GROUP_COMPLETING_REBALANCE);
    ls_group_assignment_t a = {id, (const uint8_t *)"A0", 2};
    sres_t s;
    do_sync(g, 1, id, NULL, &a, 1, &s);
    CHECK_EQ_INT(s.done, 1);
    CHECK_EQ_INT(s.err, LS_GERR_NONE);
    CHECK(strcmp(s.assignment, "A0") == 0);
    CHECK_EQ_INT(ls_group_get_state(g), LS_GROUP_STABLE);
    CHECK(persists >= 1);
    CHECK_EQ_INT(last_rec.state, LS_GROUP_STABLE);
    CHECK_EQ_INT(last_rec.nmembers, 1);
    CHECK_EQ_INT(last_rec.members[0].assignment_len, 2);
    CHECK_EQ_INT(ls_group_heartbeat(g, 1, id, NULL), LS_GERR_NONE);
    CHECK_EQ_INT(ls_group_heartbeat(g, 0, id, NULL), LS_GERR_ILLEGAL_GENERATION);
    CHECK_EQ_INT(ls_group_heartbeat(g, 1, "nobody", NULL), LS_GERR_UNKNOWN_MEMBER_ID);
    ls_group_coord_free(c);
}

TEST(second_member_rebalance_and_fencing)
{
    ls_group_coord_t *c = coord();
    ls_group_t *g = group(c, "g2");
    jres_t j1, j2;
    join(g, "", NULL, &j1, false, 1000); /* v0-3 join: no MEMBER_ID_REQUIRED */
    CHECK_EQ_INT(j1.err, LS_GERR_NONE);
    char a[128], b[128];
    strcpy(a, j1.member);
    sres_t s1, s2;
    do_sync(g, 1, a, NULL, NULL, 0, &s1);
    CHECK_EQ_INT(ls_group_get_state(g), LS_GROUP_STABLE);
    /* b joins: rebalance; a learns through its heartbeat */
    join(g, "", NULL, &j2, false, 1000);
    CHECK_EQ_INT(j2.done, 0);
    CHECK_EQ_INT(ls_group_get_state(g), LS_GROUP_PREPARING_REBALANCE);
    CHECK_EQ_INT(ls_group_heartbeat(g, 1, a, NULL), LS_GERR_REBALANCE_IN_PROGRESS);
    /* a commit from the current generation is still accepted while preparing */
    CHECK_EQ_INT(ls_group_commit_check(g, 1, a, NULL), LS_GERR_NONE);
    do_sync(g, 1, a, NULL, NULL, 0, &s1);
    CHECK_EQ_INT(s1.err, LS_GERR_REBALANCE_IN_PROGRESS);
    join(g, a, NULL, &j1, false, 1000);
    CHECK_EQ_INT(j1.done, 1);
    CHECK_EQ_INT(j2.done, 1);
    CHECK_EQ_INT(j1.gen, 2);
    CHECK_EQ_INT(j2.gen, 2);
    strcpy(b, j2.member);
    CHECK(strcmp(j1.leader, a) == 0);
    CHECK_EQ_INT(j1.nmembers, 2); /* leader sees everyone */
    CHECK_EQ_INT(j2.nmembers, 0);
    /* follower syncs first and waits for the leader */
    do_sync(g, 2, b, NULL, NULL, 0, &s2);
    CHECK_EQ_INT(s2.done, 0);
    CHECK_EQ_INT(ls_group_commit_check(g, 2, b, NULL), LS_GERR_REBALANCE_IN_PROGRESS);
    do_sync(g, 1, a, NULL, NULL, 0, &s1);
    CHECK_EQ_INT(s1.err, LS_GERR_ILLEGAL_GENERATION);
    ls_group_assignment_t as[] = {{a, (const uint8_t *)"PA", 2}, {b, (const uint8_t *)"PB", 2}};
    do_sync(g, 2, a, NULL, as, 2, &s1);
    CHECK_EQ_INT(s1.err, LS_GERR_NONE);
    CHECK_EQ_INT(s2.done, 1);
    CHECK(strcmp(s1.assignment, "PA") == 0);
    CHECK(strcmp(s2.assignment, "PB") == 0);
    /* stale generation commits are fenced */
    CHECK_EQ_INT(ls_group_commit_check(g, 1, a, NULL), LS_GERR_ILLEGAL_GENERATION);
    CHECK_EQ_INT(ls_group_commit_check(g, 2, "x", NULL), LS_GERR_UNKNOWN_MEMBER_ID);
    CHECK_EQ_INT(ls_group_commit_check(g, -1, "", NULL), LS_GERR_UNKNOWN_MEMBER_ID);
    CHECK_EQ_INT(ls_group_commit_check(g, 2, b, NULL), LS_GERR_NONE);
    /* b leaves: rebalance; a alone in generation 3 */
    CHECK_EQ_INT(ls_group_leave(g, b, NULL), LS_GERR_NONE);
    CHECK_EQ_INT(ls_group_get_state(g), LS_GROUP_PREPARING_REBALANCE);
    join(g, a, NULL, &j1, false, 1000);
    CHECK_EQ_INT(j1.gen, 3);
    CHECK_EQ_INT(ls_group_leave(g, a, NULL), LS_GERR_NONE);
    CHECK_EQ_INT(ls_group_get_state(g), LS_GROUP_EMPTY);
    CHECK_EQ_INT(ls_group_generation(g), 4);
    CHECK_EQ_INT(last_rec.state, LS_GROUP_EMPTY);
    ls_group_coord_free(c);
}

TEST(session_timeout_expires_member)
{
    ls_group_coord_t *c = coord();
    ls_group_t *g = group(c, "g3");
    jres_t j1, j2;
    join(g, "", NULL, &j1, false, 300);
    sres_t s;
    do_sync(g, 1, j1.member, NULL, NULL, 0, &s);
    join(g, "", NULL, &j2, false, 300);
    char a[128];
    strcpy(a, j1.member);
    join(g, a, NULL, &j1, false, 300);
    CHECK_EQ_INT(j2.gen, 2);
    do_sync(g, 2, a, NULL, NULL, 0, &s);
    sres_t s2;
    do_sync(g, 2, j2.member, NULL, NULL, 0, &s2);
    CHECK_EQ_INT(ls_group_get_state(g), LS_GROUP_STABLE);
    /* only a heartbeats; b's session lapses */
    for (int i = 0; i < 3; i++) {
        fake_now += 100;
        CHECK_EQ_INT(ls_group_heartbeat(g, 2, a, NULL), LS_GERR_NONE);
        ls_group_coord_tick(c);
    }
    CHECK_EQ_INT(ls_group_get_state(g), LS_GROUP_PREPARING_REBALANCE);
    CHECK_EQ_INT(ls_group_member_count(g), 1);
    join(g, a, NULL, &j1, false, 300);
    CHECK_EQ_INT(j1.err, LS_GERR_NONE);
    CHECK_EQ_INT(j1.gen, 3);
    ls_group_coord_free(c);
}

TEST(rebalance_timeout_drops_members_that_do_not_rejoin)
{
    ls_group_coord_t *c = coord();
    ls_group_t *g = group(c, "g4");
    jres_t j1, j2, j3;
    join(g, "", NULL, &j1, false, 10000);
    sres_t s;
    do_sync(g, 1, j1.member, NULL, NULL, 0, &s);
    join(g, "", NULL, &j2, false, 10000); /* a never rejoins */
    CHECK_EQ_INT(j2.done, 0);
    fake_now += 499;
    ls_group_coord_tick(c);
    CHECK_EQ_INT(j2.done, 0);
    fake_now += 2; /* rebalance timeout 500 ms */
    int64_t next = ls_group_coord_tick(c);
    CHECK_EQ_INT(j2.done, 1);
    CHECK_EQ_INT(j2.err, LS_GERR_NONE);
    CHECK_EQ_INT(j2.gen, 2);
    CHECK(strcmp(j2.leader, j2.member) == 0); /* the leader left: new one elected */
    CHECK_EQ_INT(ls_group_member_count(g), 1);
    CHECK(next > fake_now);
    join(g, j1.member, NULL, &j3, false, 10000);
    CHECK_EQ_INT(j3.err, LS_GERR_UNKNOWN_MEMBER_ID);
    ls_group_coord_free(c);
}

TEST(pending_member_expires)
{
    ls_group_coord_t *c = coord();
    ls_group_t *g = group(c, "g5");
    jres_t j;
    join(g, "", NULL, &j, true, 200);
    CHECK_EQ_INT(j.err, LS_GERR_MEMBER_ID_REQUIRED);
    fake_now += 201;
    ls_group_coord_tick(c);
    join(g, j.member, NULL, &j, true, 200);
    CHECK_EQ_INT(j.err, LS_GERR_UNKNOWN_MEMBER_ID);
    ls_group_coord_free(c);
}

TEST(static_member_rejoins_without_rebalance)
{
    ls_group_coord_t *c = coord();
    ls_group_t *g = group(c, "g6");
    jres_t ja, jb;
    join(g, "", "inst-a", &ja, true, 1000); /* static: no MEMBER_ID_REQUIRED */
    CHECK_EQ_INT(ja.err, LS_GERR_NONE);
    CHECK(strncmp(ja.member, "inst-a-", 7) == 0);
    sres_t s;
    do_sync(g, 1, ja.member, "inst-a", NULL, 0, &s);
    join(g, "", "inst-b", &jb, true, 1000);
    join(g, ja.member, "inst-a", &ja, true, 1000);
    CHECK_EQ_INT(jb.gen, 2);
    ls_group_assignment_t as[] = {{ja.member, (const uint8_t *)"PA", 2},
                                  {jb.member, (const uint8_t *)"PB", 2}};
    sres_t sb;
    do_sync(g, 2, jb.member, "inst-b", NULL, 0, &sb);
    do_sync(g, 2, ja.member, "inst-a", as, 2, &s);
    CHECK_EQ_INT(ls_group_get_state(g), LS_GROUP_STABLE);
    char old_b[128];
    strcpy(old_b, jb.member);
    /* b restarts (no LeaveGroup) and rejoins with an empty member id */
    join(g, "", "inst-b", &jb, true, 1000);
    CHECK_EQ_INT(jb.err, LS_GERR_NONE);
    CHECK_EQ_INT(jb.gen, 2); /* same generation: no rebalance */
    CHECK(strcmp(jb.member, old_b) != 0);
    CHECK(strcmp(jb.leader, ja.member) == 0);
    CHECK_EQ_INT(ls_group_get_state(g), LS_GROUP_STABLE);
    do_sync(g, 2, jb.member, "inst-b", NULL, 0, &sb);
    CHECK_EQ_INT(sb.err, LS_GERR_NONE);
    CHECK(strcmp(sb.assignment, "PB") == 0); /* partitions back */
    /* the old incarnation is fenced */
    CHECK_EQ_INT(ls_group_heartbeat(g, 2, old_b, "inst-b"), LS_GERR_FENCED_INSTANCE_ID);
    CHECK_EQ_INT(ls_group_commit_check(g, 2, old_b, "inst-b"), LS_GERR_FENCED_INSTANCE_ID);
    CHECK_EQ_INT(ls_group_heartbeat(g, 2, jb.member, "inst-b"), LS_GERR_NONE);
    CHECK_EQ_INT(ls_group_heartbeat(g, 2, ja.member, "inst-a"), LS_GERR_NONE);
    /* a static member's session expiry does trigger a rebalance */
    fake_now += 1001;
    CHECK_EQ_INT(ls_group_heartbeat(g, 2, ja.member, "inst-a"), LS_GERR_NONE);
    ls_group_coord_tick(c);
    CHECK_EQ_INT(ls_group_get_state(g), LS_GROUP_PREPARING_REBALANCE);
    ls_group_coord_free(c);
}

TEST(protocol_selection_and_inconsistent_protocol)
{
    ls_group_coord_t *c = coord();
    ls_group_t *g = group(c, "g7");
    jres_t j1, j2;
    join(g, "", NULL, &j1, false, 1000);
    sres_t s;
    do_sync(g, 1, j1.member, NULL, NULL, 0, &s);
    memset(&j2, 0, sizeof j2);
    ls_group_join_req_t r = {.member_id = "",
                             .client_id = "c",
                             .session_timeout_ms = 1000,
                             .rebalance_timeout_ms = 500,
                             .protocol_type = "consumer",
                             .protocols = PROTOS_RR,
                             .nprotocols = 1};
    ls_group_join(g, &r, on_join, &j2);
    join(g, j1.member, NULL, &j1, false, 1000);
    CHECK(strcmp(j1.proto, "roundrobin") == 0); /* the only common one */
    jres_t j3;
    ls_group_protocol_t other[] = {{"sticky", (const uint8_t *)"", 0}};
    ls_group_join_req_t r3 = r;
    r3.protocols = other;
    ls_group_join(g, &r3, on_join, &j3);
    CHECK_EQ_INT(j3.err, LS_GERR_INCONSISTENT_GROUP_PROTOCOL);
    r3.protocols = PROTOS_RR;
    r3.protocol_type = "connect";
    ls_group_join(g, &r3, on_join, &j3);
    CHECK_EQ_INT(j3.err, LS_GERR_INCONSISTENT_GROUP_PROTOCOL);
    r3.protocol_type = "consumer";
    r3.session_timeout_ms = 10;
    ls_group_join(g, &r3, on_join, &j3);
    CHECK_EQ_INT(j3.err, LS_GERR_INVALID_SESSION_TIMEOUT);
    ls_group_coord_free(c);
}

TEST(offsets_put_get_delete_and_retention)
{
    ls_group_coord_t *c = coord();
    ls_group_t *g = group(c, "g8");
    /* a consumer outside group management commits into a group that does not exist */
    CHECK_EQ_INT(ls_group_commit_check(g, -1, "", NULL), LS_GERR_NONE);
    CHECK_EQ_INT(ls_group_commit_check(g, 3, "m", NULL), LS_GERR_ILLEGAL_GENERATION);
    ls_group_offset_t o = {42, 0, "meta", fake_wall, 7, 4};
    ls_group_offset_put(g, "t", 0, &o);
    CHECK_EQ_INT(ls_group_get_state(g), LS_GROUP_EMPTY);
    const ls_group_offset_t *got = ls_group_offset_get(g, "t", 0);
    CHECK(got && got->offset == 42 && strcmp(got->metadata, "meta") == 0);
    CHECK(ls_group_offset_get(g, "t", 1) == NULL);
    o.offset = 43;
    ls_group_offset_put(g, "t", 1, &o);
    int64_t it = 0;
    const char *tn;
    int32_t p;
    int n = 0;
    while (ls_group_offset_next(g, &it, &tn, &p, &got))
        n++;
    CHECK_EQ_INT(n, 2);
    /* the topic is deleted and re-created: old offsets are hidden and expire */
    topic_sn = 8;
    CHECK(ls_group_offset_get(g, "t", 0) == NULL);
    CHECK_EQ_INT(ls_group_expire(g, NULL, NULL), 2);
    topic_sn = 8;
    o.stream_no = 8;
    ls_group_offset_put(g, "t", 0, &o);
    fake_wall += 7LL * 24 * 3600 * 1000 - 1;
    CHECK_EQ_INT(ls_group_expire(g, NULL, NULL), 0);
    fake_wall += 2;
    CHECK_EQ_INT(ls_group_expire(g, NULL, NULL), 1);
    CHECK_EQ_INT(ls_group_get_state(g), LS_GROUP_DEAD); /* empty and expired */
    CHECK(deletes >= 1);
    ls_group_coord_free(c);
}

TEST(delete_group_rules)
{
    ls_group_coord_t *c = coord();
    ls_group_t *g = group(c, "g9");
    CHECK_EQ_INT(ls_group_delete(g), LS_GERR_GROUP_ID_NOT_FOUND);
    jres_t j;
    join(g, "", NULL, &j, false, 1000);
    CHECK_EQ_INT(ls_group_delete(g), LS_GERR_NON_EMPTY_GROUP);
    /* subscribed topic (consumer protocol metadata lists "t") */
    ls_group_protocol_t sub[] = {{"range", (const uint8_t *)"\0\0\0\0\0\1\0\1t", 9}};
    jres_t j2;
    ls_group_join_req_t r = {.member_id = j.member,
                             .client_id = "c",
                             .session_timeout_ms = 1000,
                             .rebalance_timeout_ms = 500,
                             .protocol_type = "consumer",
                             .protocols = sub,
                             .nprotocols = 1};
    ls_group_join(g, &r, on_join, &j2);
    CHECK_EQ_INT(j2.err, LS_GERR_NONE);
    CHECK_EQ_INT(ls_group_offset_delete_check(g, "t"), LS_GERR_GROUP_SUBSCRIBED_TO_TOPIC);
    CHECK_EQ_INT(ls_group_offset_delete_check(g, "u"), LS_GERR_NONE);
    CHECK_EQ_INT(ls_group_leave(g, j.member, NULL), LS_GERR_NONE);
    CHECK_EQ_INT(ls_group_get_state(g), LS_GROUP_EMPTY);
    CHECK_EQ_INT(ls_group_delete(g), LS_GERR_NONE);
    CHECK_EQ_INT(ls_group_get_state(g), LS_GROUP_DEAD);
    ls_group_coord_free(c);
}

/* lazy load: requests queue until the embedder reports the load */
static int loads;
static void h_load(void *a, const char *gid) { loads++; }

TEST(lazy_load_restores_stable_group)
{
    ls_group_config_t cfg;
    ls_group_config_defaults(&cfg);
    cfg.min_session_timeout_ms = 100;
    ls_group_hooks_t h = {.now_ms = h_now,
                          .wall_ms = h_wall,
                          .persist = h_persist,
                          .load = h_load,
                          .topic_stream_no = h_sn};
    topic_sn = 7;
    ls_group_coord_t *c = ls_group_coord_new(&cfg, &h);
    ls_group_t *g1 = NULL, *g2 = NULL;
    ls_group_acquire(c, "lg", got_group, &g1);
    ls_group_acquire(c, "lg", got_group, &g2);
    CHECK_EQ_INT(loads, 1);
    CHECK(!g1 && !g2);
    /* what a previous broker stored: Stable, one member, one offset */
    ls_group_loaded_t l;
    memset(&l, 0, sizeof l);
    l.exists = true;
    l.rec.state = LS_GROUP_STABLE;
    l.rec.generation = 5;
    l.rec.protocol_type = ls_strdup("consumer");
    l.rec.protocol_name = ls_strdup("range");
    l.rec.leader = ls_strdup("m1");
    l.rec.nmembers = 1;
    l.rec.members = LS_NEWN(ls_group_record_member_t, 1);
    l.rec.members[0] = (ls_group_record_member_t){ls_strdup("m1"),
                                                  NULL,
                                                  ls_strdup("c"),
                                                  ls_strdup("/h"),
                                                  1000,
                                                  1000,
                                                  ls_memdup("md", 2),
                                                  2,
                                                  ls_memdup("as", 2),
                                                  2};
    l.noffsets = 1;
    l.offsets = LS_NEWN(ls_group_loaded_offset_t, 1);
    l.offsets[0].topic = ls_strdup("t");
    l.offsets[0].partition = 3;
    l.offsets[0].o = (ls_group_offset_t){99, 2, NULL, fake_wall, 7, 0};
    ls_group_coord_load_done(c, "lg", LS_OK, &l);
    CHECK(g1 && g1 == g2);
    CHECK_EQ_INT(ls_group_get_state(g1), LS_GROUP_STABLE);
    CHECK_EQ_INT(ls_group_generation(g1), 5);
    CHECK_EQ_INT(ls_group_heartbeat(g1, 5, "m1", NULL), LS_GERR_NONE);
    sres_t s;
    do_sync(g1, 5, "m1", NULL, NULL, 0, &s);
    CHECK(strcmp(s.assignment, "as") == 0);
    const ls_group_offset_t *o = ls_group_offset_get(g1, "t", 3);
    CHECK(o && o->offset == 99 && o->leader_epoch == 2 && o->metadata == NULL);
    ls_group_coord_free(c);
}

TEST(record_codecs_reject_garbage)
{
    ls_group_offset_t o = {7, 3, "m", 123, 9, 1}, d;
    size_t n;
    uint8_t *b = ls_group_offset_encode(&o, &n);
    CHECK(ls_group_offset_decode(b, n, &d) == LS_OK);
    CHECK(d.offset == 7 && d.leader_epoch == 3 && strcmp(d.metadata, "m") == 0 && d.stream_no == 9);
    ls_free(d.metadata);
    for (size_t cut = 0; cut < n; cut++)
        CHECK(ls_group_offset_decode(b, cut, &d) == LS_ECORRUPT);
    ls_free(b);
    ls_group_record_t r;
    CHECK(ls_group_record_decode((const uint8_t *)"\1\1\0\0", 4, &r) == LS_ECORRUPT);
    CHECK(ls_group_record_decode((const uint8_t *)"\2", 1, &r) == LS_ECORRUPT);
}

TEST(keys_escape_group_ids)
{
    char *k = ls_group_key_offset("a/b%c d", "t", 5);
    CHECK(strcmp(k, "/ls/group/offsets/a%2Fb%25c%20d/t/0000000005") == 0);
    ls_free(k);
    char *m = ls_group_key_meta("grp.1_x-y");
    CHECK(strcmp(m, "/ls/group/meta/grp.1_x-y") == 0);
    ls_free(m);
    char *d = ls_keypart_decode("a%2Fb%25c%20d", 13);
    CHECK(d && strcmp(d, "a/b%c d") == 0);
    ls_free(d);
    CHECK(ls_keypart_decode("bad%2", 5) == NULL);
    CHECK(ls_keypart_decode("bad%zz", 6) == NULL);
    CHECK(ls_keypart_decode("nul%00", 6) == NULL);
    d = ls_keypart_decode("lower%2fcase", 12);
    CHECK(d && strcmp(d, "lower/case") == 0);
    ls_free(d);
}

/* ---- groups of the KIP-848 consumer protocol (group.h) ---- */

static const ls_cgroup_topic_t CG_TOPICS[] = {{"t", 4}};

static ls_cgroup_hb_res_t cg_beat(ls_group_t *g, const char *member, int32_t epoch,
                                  ls_group_err *ge, bool *stored)
{
    static const char *const subs[] = {"t"};
    ls_cgroup_hb_req_t r = {.member_id = member,
                            .member_epoch = epoch,
                            .rebalance_timeout_ms = 500,
                            .topics = epoch == 0 ? subs : NULL,
                            .ntopics = epoch == 0 ? 1 : -1,
                            .nowned = -1};
    ls_cgroup_hb_res_t res;
    memset(&res, 0, sizeof res);
    *ge = ls_group_consumer_heartbeat(g, &r, CG_TOPICS, 1, &res, stored);
    return res;
}

TEST(consumer_group_type_rules)
{
    ls_group_coord_t *c = coord();
    ls_group_t *g = group(c, "cg");
    ls_group_err ge;
    bool stored;
    /* a new group becomes a consumer group; the epoch is stored */
    ls_cgroup_hb_res_t r = cg_beat(g, "m1", 0, &ge, &stored);
    CHECK_EQ_INT(ge, LS_GERR_NONE);
    CHECK_EQ_INT(r.err, LS_CGERR_NONE);
    CHECK(stored && persists == 1 && last_rec.type == LS_GROUP_TYPE_CONSUMER &&
          last_rec.nmembers == 0);
    CHECK_EQ_INT(last_rec.generation, r.member_epoch);
    CHECK(strcmp(ls_group_type(g), "consumer") == 0);
    CHECK(strcmp(ls_group_state_label(g), "Stable") == 0);
    CHECK_EQ_INT(r.nassigned, 4);
    int32_t e1 = r.member_epoch;
    /* a heartbeat that changes nothing stores nothing */
    r = cg_beat(g, "m1", e1, &ge, &stored);
    CHECK(!stored && persists == 1);
    /* commits: the member's epoch; older: STALE, newer: FENCED; none: UNKNOWN */
    CHECK_EQ_INT(ls_group_commit_check(g, e1, "m1", NULL), LS_GERR_NONE);
    CHECK_EQ_INT(ls_group_commit_check(g, e1 - 1, "m1", NULL), LS_GERR_STALE_MEMBER_EPOCH);
    CHECK_EQ_INT(ls_group_commit_check(g, e1 + 1, "m1", NULL), LS_GERR_FENCED_MEMBER_EPOCH);
    CHECK_EQ_INT(ls_group_commit_check(g, -1, "", NULL), LS_GERR_UNKNOWN_MEMBER_ID);
    CHECK_EQ_INT(ls_group_txn_commit_check(g, -1, "", NULL), LS_GERR_NONE);
    CHECK_EQ_INT(ls_group_txn_commit_check(g, e1 - 1, "m1", NULL), LS_GERR_ILLEGAL_GENERATION);
    CHECK_EQ_INT(ls_group_fetch_check(g, "m1", e1 - 1), LS_GERR_STALE_MEMBER_EPOCH);
    CHECK_EQ_INT(ls_group_fetch_check(g, NULL, -1), LS_GERR_NONE);
    CHECK_EQ_INT(ls_group_offset_delete_check(g, "t"), LS_GERR_GROUP_SUBSCRIBED_TO_TOPIC);
    CHECK_EQ_INT(ls_group_offset_delete_check(g, "u"), LS_GERR_NONE);
    /* members: no JoinGroup, no DeleteGroups */
    jres_t j;
    join(g, "", NULL, &j, false, 1000);
    CHECK(j.done == 1 && j.err == LS_GERR_INCONSISTENT_GROUP_PROTOCOL);
    CHECK_EQ_INT(ls_group_delete(g), LS_GERR_NON_EMPTY_GROUP);
    /* the session expires: empty, epoch moved and stored */
    int before = persists;
    fake_now += 46000;
    ls_group_coord_tick(c);
    CHECK(persists == before + 1 && last_rec.generation > e1);
    CHECK(strcmp(ls_group_state_label(g), "Empty") == 0);
    CHECK_EQ_INT(ls_group_commit_check(g, -1, "", NULL), LS_GERR_NONE);
    /* empty: a classic member takes it over, with generations above the epochs */
    int32_t epoch = last_rec.generation;
    join(g, "", NULL, &j, false, 1000);
    CHECK(j.done == 1 && j.err == LS_GERR_NONE && j.gen > epoch);
    CHECK(strcmp(ls_group_type(g), "classic") == 0);
    /* a classic group with members refuses the consumer protocol */
    r = cg_beat(g, "m2", 0, &ge, &stored);
    CHECK_EQ_INT(ge, LS_GERR_GROUP_ID_NOT_FOUND);
    CHECK(strcmp(ls_group_type(g), "classic") == 0);
    ls_group_coord_free(c);
}

TEST(consumer_group_member_past_its_revocation_deadline_is_fenced_first)
{
    ls_group_coord_t *c = coord();
    ls_group_t *g = group(c, "cgr");
    ls_group_err ge;
    bool stored;
    ls_cgroup_hb_res_t r = cg_beat(g, "m1", 0, &ge, &stored);
    int32_t e1 = r.member_epoch;
    CHECK_EQ_INT(r.nassigned, 4);
    r = cg_beat(g, "m2", 0, &ge, &stored); /* m1 must give up two partitions */
    r = cg_beat(g, "m1", e1, &ge, &stored);
    CHECK(r.err == LS_CGERR_NONE && r.nassigned == 2);
    /* m1 never acknowledges; past its 500 ms rebalance timeout (inside its
     * session) its next heartbeat finds it already removed */
    fake_now += 1000;
    r = cg_beat(g, "m1", e1, &ge, &stored);
    CHECK_EQ_INT(r.err, LS_CGERR_UNKNOWN_MEMBER_ID);
    CHECK_EQ_INT(ls_cgroup_member_count(ls_group_consumer(g)), 1);
    ls_group_coord_free(c);
}

TEST(consumer_group_refused_join_leaves_the_group_as_it_was)
{
    ls_group_coord_t *c = coord();
    ls_group_t *g = group(c, "cg2");
    ls_group_err ge;
    bool stored;
    /* a leave of an unknown member on a Dead group: refused, still Dead */
    ls_cgroup_hb_res_t r = cg_beat(g, "m1", -1, &ge, &stored);
    CHECK_EQ_INT(ge, LS_GERR_NONE);
    CHECK_EQ_INT(r.err, LS_CGERR_UNKNOWN_MEMBER_ID);
    CHECK(!stored && persists == 0);
    CHECK_EQ_INT(ls_group_get_state(g), LS_GROUP_DEAD);
    CHECK(strcmp(ls_group_type(g), "classic") == 0);
    ls_group_coord_free(c);
}

TEST(consumer_group_loads_above_its_stored_epoch)
{
    ls_group_config_t cfg;
    ls_group_config_defaults(&cfg);
    ls_group_hooks_t h = {.now_ms = h_now,
                          .wall_ms = h_wall,
                          .persist = h_persist,
                          .load = h_load,
                          .topic_stream_no = h_sn};
    ls_group_coord_t *c = ls_group_coord_new(&cfg, &h);
    ls_group_t *g = NULL;
    ls_group_acquire(c, "cgl", got_group, &g);
    ls_group_loaded_t l;
    memset(&l, 0, sizeof l);
    l.exists = true;
    l.rec.type = LS_GROUP_TYPE_CONSUMER;
    l.rec.generation = 41;
    l.rec.protocol_type = ls_strdup("consumer");
    l.rec.members = LS_NEWN(ls_group_record_member_t, 1);
    /* the stored form round-trips */
    size_t n;
    uint8_t *b = ls_group_record_encode(&l.rec, &n);
    ls_group_record_t back;
    CHECK(ls_group_record_decode(b, n, &back) == LS_OK && back.type == LS_GROUP_TYPE_CONSUMER &&
          back.generation == 41);
    ls_group_record_free(&back);
    b[n - 1] = 7; /* an unknown group type */
    CHECK(ls_group_record_decode(b, n, &back) == LS_ECORRUPT);
    ls_free(b);
    ls_group_coord_load_done(c, "cgl", LS_OK, &l);
    CHECK(g && strcmp(ls_group_type(g), "consumer") == 0);
    ls_group_err ge;
    bool stored;
    /* the old member is unknown here; a join gets an epoch above 41 */
    ls_cgroup_hb_res_t r = cg_beat(g, "m1", 7, &ge, &stored);
    CHECK_EQ_INT(r.err, LS_CGERR_UNKNOWN_MEMBER_ID);
    r = cg_beat(g, "m1", 0, &ge, &stored);
    CHECK(r.err == LS_CGERR_NONE && r.member_epoch > 41 && stored);
    int32_t epoch = r.member_epoch;
    /* what was stored, loaded by another coordinator: the member goes on
     * with its epoch and partitions, nothing rebalances */
    ls_group_loaded_t l2;
    memset(&l2, 0, sizeof l2);
    l2.exists = true;
    ls_group_snapshot(g, &l2.rec);
    CHECK(l2.rec.type == LS_GROUP_TYPE_CONSUMER && l2.rec.type_state_len > 0);
    ls_group_coord_t *c2 = ls_group_coord_new(&cfg, &h);
    ls_group_t *g2 = NULL;
    ls_group_acquire(c2, "cgl", got_group, &g2);
    ls_group_coord_load_done(c2, "cgl", LS_OK, &l2);
    CHECK(g2 && ls_cgroup_member_count(ls_group_consumer(g2)) == 1);
    r = cg_beat(g2, "m1", epoch, &ge, &stored);
    CHECK(r.err == LS_CGERR_NONE && r.member_epoch == epoch && r.nassigned == 4 && !stored);
    CHECK_EQ_INT(ls_group_commit_check(g2, epoch, "m1", NULL), LS_GERR_NONE);
    /* a state that does not decode: the epoch is still the floor */
    ls_group_loaded_t l3;
    memset(&l3, 0, sizeof l3);
    l3.exists = true;
    ls_group_snapshot(g, &l3.rec);
    l3.rec.type_state[0] = 99;
    ls_group_t *g3 = NULL;
    ls_group_acquire(c2, "cgl3", got_group, &g3);
    ls_group_coord_load_done(c2, "cgl3", LS_OK, &l3);
    CHECK(g3 && ls_cgroup_member_count(ls_group_consumer(g3)) == 0);
    r = cg_beat(g3, "m1", 0, &ge, &stored);
    CHECK(r.err == LS_CGERR_NONE && r.member_epoch > epoch);
    ls_group_coord_free(c2);
    ls_group_coord_free(c);
}

/* ---- a thousand random steps of a consumer group, with fail-overs ---- */

typedef struct sim_member {
    char id[16];
    bool joined;
    int32_t epoch;
    ls_cgroup_tp_t owned[4];
    int nowned;
} sim_member_t;

/* Server side: no partition in two members' assigned or pending sets. */
static void check_disjoint(const ls_group_t *g, int nparts)
{
    const ls_cgroup_t *cg = ls_group_consumer(g);
    if (!cg) return;
    int holder[16];
    for (int p = 0; p < nparts; p++)
        holder[p] = -1;
    for (int i = 0; i < ls_cgroup_member_count(cg); i++) {
        ls_cgroup_member_info_t mi;
        ls_cgroup_member(cg, i, &mi);
        for (int k = 0; k < mi.nassigned; k++) {
            CHECK(holder[mi.assigned[k].partition] == -1);
            holder[mi.assigned[k].partition] = i;
        }
    }
}

/* One heartbeat of a simulated client: it reports what it owns and adopts
 * what it is given; fenced or unknown, it starts over. */
static void sim_beat(ls_group_t *g, sim_member_t *m, bool leave)
{
    static const char *const subs[] = {"t"};
    ls_cgroup_hb_req_t r = {.member_id = m->id,
                            .member_epoch = leave       ? -1
                                            : m->joined ? m->epoch
                                                        : 0,
                            .rebalance_timeout_ms = 5000,
                            .topics = m->joined ? NULL : subs,
                            .ntopics = m->joined ? -1 : 1,
                            .owned = m->owned,
                            .nowned = m->nowned};
    ls_cgroup_hb_res_t res;
    bool stored;
    ls_group_err ge = ls_group_consumer_heartbeat(g, &r, CG_TOPICS, 1, &res, &stored);
    CHECK_EQ_INT(ge, LS_GERR_NONE);
    if (leave || res.err != LS_CGERR_NONE) {
        m->joined = false;
        m->nowned = 0;
        return;
    }
    m->joined = true;
    m->epoch = res.member_epoch;
    CHECK(res.nassigned <= 4);
    m->nowned = res.nassigned;
    for (int k = 0; k < res.nassigned; k++)
        m->owned[k] = (ls_cgroup_tp_t){"t", res.assigned[k].partition};
}

TEST(consumer_group_thousand_random_steps_with_failovers)
{
    ls_group_config_t cfg;
    ls_group_config_defaults(&cfg);
    cfg.consumer.session_timeout_ms = 3000;
    ls_group_hooks_t h = {.now_ms = h_now,
                          .wall_ms = h_wall,
                          .persist = h_persist,
                          .load = h_load,
                          .topic_stream_no = h_sn};
    ls_group_coord_t *c = ls_group_coord_new(&cfg, &h);
    ls_group_t *g = NULL;
    ls_group_acquire(c, "rnd", got_group, &g);
    ls_group_loaded_t l0 = {0};
    ls_group_coord_load_done(c, "rnd", LS_OK, &l0);
    CHECK(g != NULL);
    sim_member_t ms[6];
    memset(ms, 0, sizeof ms);
    for (int i = 0; i < 6; i++)
        snprintf(ms[i].id, sizeof ms[i].id, "m%d", i);
    /* a member first: a group that does not exist (Dead) is evicted by the
     * next tick, and the handlers acquire it again for each request */
    sim_beat(g, &ms[0], false);
    CHECK(ms[0].joined);
    unsigned seed = 20261206;
    int32_t top_epoch = 0;
    int failovers = 0;
    for (int step = 0; step < 1000; step++) {
        int who = (int)(rand_r(&seed) % 6);
        int dice = (int)(rand_r(&seed) % 100);
        if (dice < 3) {
            /* the coordinator moves: what is stored is what the next one loads */
            ls_group_loaded_t l = {.exists = true};
            ls_group_snapshot(g, &l.rec);
            ls_group_coord_t *c2 = ls_group_coord_new(&cfg, &h);
            ls_group_t *g2 = NULL;
            ls_group_acquire(c2, "rnd", got_group, &g2);
            ls_group_coord_load_done(c2, "rnd", LS_OK, &l);
            CHECK(g2 &&
                  ls_cgroup_epoch(ls_group_consumer(g2)) == ls_cgroup_epoch(ls_group_consumer(g)));
            ls_group_coord_free(c);
            c = c2;
            g = g2;
            failovers++;
        } else if (dice < 8) {
            fake_now += 2000; /* sessions of members that stay quiet run out */
            ls_group_coord_tick(c);
        } else {
            sim_beat(g, &ms[who], ms[who].joined && dice < 12);
            fake_now += 50;
        }
        check_disjoint(g, 4);
        if (ls_group_consumer(g)) {
            int32_t e = ls_cgroup_epoch(ls_group_consumer(g));
            CHECK(e >= top_epoch);
            top_epoch = e;
        }
    }
    /* quiet: every member heartbeats until the group is Stable, and every
     * partition is held by exactly one member */
    for (int round = 0; round < 20; round++)
        for (int i = 0; i < 6; i++) {
            sim_beat(g, &ms[i], false);
            fake_now += 10;
        }
    CHECK(strcmp(ls_group_state_label(g), "Stable") == 0);
    int held = 0;
    for (int i = 0; i < 6; i++)
        held += ms[i].nowned;
    CHECK_EQ_INT(held, 4);
    check_disjoint(g, 4);
    CHECK(failovers > 10);
    ls_group_coord_free(c);
}

int main(void)
{
    ls_check_invariants_enable(true); /* every tick checks group.h's invariants */
    RUN(single_member_join_sync);
    RUN(second_member_rebalance_and_fencing);
    RUN(session_timeout_expires_member);
    RUN(rebalance_timeout_drops_members_that_do_not_rejoin);
    RUN(pending_member_expires);
    RUN(static_member_rejoins_without_rebalance);
    RUN(protocol_selection_and_inconsistent_protocol);
    RUN(offsets_put_get_delete_and_retention);
    RUN(delete_group_rules);
    RUN(lazy_load_restores_stable_group);
    RUN(record_codecs_reject_garbage);
    RUN(keys_escape_group_ids);
    RUN(consumer_group_type_rules);
    RUN(consumer_group_member_past_its_revocation_deadline_is_fenced_first);
    RUN(consumer_group_refused_join_leaves_the_group_as_it_was);
    RUN(consumer_group_loads_above_its_stored_epoch);
    RUN(consumer_group_thousand_random_steps_with_failovers);
    ls_group_record_free(&last_rec);
    UNIT_DONE();
}
