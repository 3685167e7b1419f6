/* Streams groups (KIP-1071): topology configuration, task assignment and
 * reconciliation (group/stgroup.h). */
#include <stdlib.h>
#include <string.h>
#include "base/alloc.h"
#include "group/stgroup.h"
#include "unit.h"

/* ---- topics that exist: name -> partitions ---- */

typedef struct topics {
    const char *name[16];
    int32_t n[16];
    int count;
} topics_t;

static int32_t lookup(void *arg, const char *topic)
{
    topics_t *t = arg;
    for (int i = 0; i < t->count; i++)
        if (!strcmp(t->name[i], topic)) return t->n[i];
    return -1;
}

static void add_topic(topics_t *t, const char *name, int32_t n)
{
    t->name[t->count] = name;
    t->n[t->count++] = n;
}

/* A word count: sub-topology 0 reads "in" and writes "rep"; 1 reads "rep"
 * and keeps a store logged to "chg". */
static const char *SRC0[] = {"in"};
static const char *SINK0[] = {"rep"};
static const ls_stgroup_kv_t CHG_CFG[] = {{"cleanup.policy", "compact"}};
static const ls_stgroup_topic_info_t REP1[] = {{"rep", 0, 0, NULL, 0}};
static const ls_stgroup_topic_info_t CHG1[] = {{"chg", 0, 0, CHG_CFG, 1}};
static const ls_stgroup_subtopology_t SUBS[] = {
    {.id = "0", .sources = SRC0, .nsources = 1, .sinks = SINK0, .nsinks = 1},
    {.id = "1", .repartitions = REP1, .nrepartitions = 1, .changelogs = CHG1, .nchangelogs = 1},
};
static const ls_stgroup_topology_t TOPO = {1, SUBS, 2};

/* ---- a client that does what Kafka Streams does ---- */

typedef struct client {
    const char *id, *process;
    int32_t epoch;
    ls_stgroup_task_t active[64], standby[64];
    int nactive, nstandby;
    char subs[128][8]; /* the tasks' sub-topology ids (res is valid one call only) */
    ls_stgroup_hb_res_t last;
} client_t;

static topics_t T;
static int32_t STANDBYS = -1;

static void take(client_t *c, const ls_stgroup_task_t *v, int n, ls_stgroup_task_t *out, int *nout,
                 int base)
{
    for (int i = 0; i < n; i++) {
        snprintf(c->subs[base + i], sizeof c->subs[0], "%s", v[i].sub);
        out[i] = (ls_stgroup_task_t){c->subs[base + i], v[i].partition};
    }
    *nout = n;
}

static ls_stgroup_hb_res_t beat_full(ls_stgroup_t *g, client_t *c,
                                     const ls_stgroup_topology_t *topo, int64_t now)
{
    ls_stgroup_hb_req_t req = {
        .member_id = c->id,
        .member_epoch = c->epoch,
        .rebalance_timeout_ms = c->epoch == 0 ? 30000 : -1,
        .topology = c->epoch == 0 ? topo : NULL,
        .has_owned = true,
        .owned = {c->active, c->standby, NULL, c->nactive, c->nstandby, 0},
        .process_id = c->process,
        .ntags = -1,
        .noffsets = -1,
        .nend_offsets = -1,
        .num_standby_replicas = STANDBYS,
        .partitions = lookup,
        .partitions_arg = &T,
        .now_ms = now,
    };
    ls_stgroup_hb_res_t res;
    ls_stgroup_heartbeat(g, &req, &res);
    if (res.err == LS_CGERR_NONE) {
        c->epoch = res.member_epoch;
        if (res.send_tasks) {
            take(c, res.tasks.active, res.tasks.nactive, c->active, &c->nactive, 0);
            take(c, res.tasks.standby, res.tasks.nstandby, c->standby, &c->nstandby, 64);
        }
    }
    c->last = res;
    ls_stgroup_check_invariants(g);
    return res;
}

static ls_stgroup_hb_res_t beat(ls_stgroup_t *g, client_t *c, int64_t now)
{
    return beat_full(g, c, &TOPO, now);
}

static bool has_status(const ls_stgroup_hb_res_t *r, int code)
{
    for (int i = 0; i < r->nstatus; i++)
        if (r->status[i].code == code) return true;
    return false;
}

static ls_stgroup_t *new_group(void)
{
    ls_stgroup_config_t c;
    ls_stgroup_config_defaults(&c);
    return ls_stgroup_new("app", &c, 0);
}

static void world(void)
{
    memset(&T, 0, sizeof T);
    add_topic(&T, "in", 4);
    STANDBYS = -1;
}

/* Heartbeats every client n times (a round each). */
static void rounds(ls_stgroup_t *g, client_t **cs, int nc, int n, int64_t now)
{
    for (int r = 0; r < n; r++)
        for (int i = 0; i < nc; i++)
            beat(g, cs[i], now + r);
}

TEST(internal_topics_created_then_tasks)
{
    world();
    ls_stgroup_t *g = new_group();
    client_t a = {.id = "a", .process = "p1"};
    ls_stgroup_hb_res_t r = beat(g, &a, 0);
    CHECK_EQ_INT(r.err, LS_CGERR_NONE);
    CHECK(has_status(&r, LS_STGROUP_MISSING_INTERNAL_TOPICS));
    CHECK_EQ_INT(r.ncreate, 2);
    CHECK_EQ_INT(r.create[0].partitions, 4); /* rep: from "in" */
    CHECK(!strcmp(r.create[1].name, "chg"));
    CHECK_EQ_INT(r.create[1].partitions, 4); /* chg: the sub-topology's tasks */
    CHECK_EQ_INT(r.create[1].nconfigs, 1);
    CHECK_EQ_INT(a.nactive, 0);
    CHECK(!strcmp(ls_stgroup_state_name(g), "NotReady"));
    add_topic(&T, "rep", 4);
    add_topic(&T, "chg", 4);
    r = beat(g, &a, 1);
    CHECK_EQ_INT(r.nstatus, 0);
    CHECK_EQ_INT(a.nactive, 8);
    CHECK(!strcmp(ls_stgroup_state_name(g), "Stable"));
    ls_stgroup_free(g);
}

TEST(missing_source_and_wrongly_partitioned_topics)
{
    world();
    T.count = 0; /* no "in" */
    ls_stgroup_t *g = new_group();
    client_t a = {.id = "a"};
    ls_stgroup_hb_res_t r = beat(g, &a, 0);
    CHECK(has_status(&r, LS_STGROUP_MISSING_SOURCE_TOPICS));
    CHECK(strstr(r.status[0].detail, "in") != NULL);
    CHECK_EQ_INT(r.ncreate, 0);
    add_topic(&T, "in", 4);
    add_topic(&T, "rep", 4);
    add_topic(&T, "chg", 3); /* an existing changelog with another count */
    r = beat(g, &a, 1);
    CHECK(has_status(&r, LS_STGROUP_INCORRECTLY_PARTITIONED_TOPICS));
    CHECK(strstr(r.status[0].detail, "chg") != NULL);
    CHECK_EQ_INT(a.nactive, 0);
    ls_stgroup_free(g);
}

TEST(copartitioned_sources_must_agree)
{
    world();
    add_topic(&T, "other", 2);
    static const char *src[] = {"in", "other"};
    static const int16_t idx[] = {0, 1};
    static const ls_stgroup_copart_t cp[] = {{idx, 2, NULL, 0}};
    static const ls_stgroup_subtopology_t subs[] = {
        {.id = "0", .sources = src, .nsources = 2, .coparts = cp, .ncoparts = 1}};
    static const ls_stgroup_topology_t topo = {0, subs, 1};
    ls_stgroup_t *g = new_group();
    client_t a = {.id = "a"};
    ls_stgroup_hb_res_t r = beat_full(g, &a, &topo, 0);
    CHECK(has_status(&r, LS_STGROUP_INCORRECTLY_PARTITIONED_TOPICS));
    ls_stgroup_free(g);
}

/* No active task held by two members (assigned or revoking) at any time:
 * ls_stgroup_check_invariants after every heartbeat. */
TEST(two_processes_share_without_overlap)
{
    world();
    add_topic(&T, "rep", 4);
    add_topic(&T, "chg", 4);
    ls_stgroup_t *g = new_group();
    client_t a = {.id = "a", .process = "p1"}, b = {.id = "b", .process = "p2"};
    beat(g, &a, 0);
    CHECK_EQ_INT(a.nactive, 8);
    beat(g, &b, 1);
    CHECK_EQ_INT(b.nactive, 0); /* a has not revoked yet */
    client_t *cs[] = {&a, &b};
    rounds(g, cs, 2, 4, 2);
    CHECK_EQ_INT(a.nactive, 4);
    CHECK_EQ_INT(b.nactive, 4);
    /* each member got tasks of both sub-topologies */
    int subs0 = 0;
    for (int i = 0; i < a.nactive; i++)
        subs0 += !strcmp(a.active[i].sub, "0");
    CHECK_EQ_INT(subs0, 2);
    CHECK_EQ_INT(a.epoch, ls_stgroup_epoch(g));
    CHECK(!strcmp(ls_stgroup_state_name(g), "Stable"));
    /* b leaves: a takes everything back */
    b.epoch = -1;
    CHECK_EQ_INT(beat(g, &b, 10).err, LS_CGERR_NONE);
    rounds(g, cs, 1, 2, 11);
    CHECK_EQ_INT(a.nactive, 8);
    ls_stgroup_free(g);
}

TEST(standbys_go_to_other_processes)
{
    world();
    add_topic(&T, "rep", 4);
    add_topic(&T, "chg", 4);
    STANDBYS = 1;
    ls_stgroup_t *g = new_group();
    client_t a = {.id = "a", .process = "p1"}, a2 = {.id = "a2", .process = "p1"};
    client_t *one[] = {&a, &a2};
    rounds(g, one, 2, 4, 0);
    CHECK_EQ_INT(a.nstandby + a2.nstandby, 0); /* one process: nowhere to put them */
    client_t b = {.id = "b", .process = "p2"};
    client_t *cs[] = {&a, &a2, &b};
    rounds(g, cs, 3, 6, 10);
    CHECK_EQ_INT(a.nactive + a2.nactive + b.nactive, 8);
    CHECK_EQ_INT(a.nstandby + a2.nstandby + b.nstandby, 8);
    /* a standby never sits in the process of its active task */
    for (int i = 0; i < b.nstandby; i++)
        for (int j = 0; j < b.nactive; j++)
            CHECK(!(b.standby[i].partition == b.active[j].partition &&
                    !strcmp(b.standby[i].sub, b.active[j].sub)));
    for (int i = 0; i < a.nstandby; i++) {
        for (int j = 0; j < a2.nactive; j++)
            CHECK(!(a.standby[i].partition == a2.active[j].partition &&
                    !strcmp(a.standby[i].sub, a2.active[j].sub)));
    }
    ls_stgroup_free(g);
}

TEST(fencing_unknown_members_and_session_expiry)
{
    world();
    add_topic(&T, "rep", 4);
    add_topic(&T, "chg", 4);
    ls_stgroup_t *g = new_group();
    client_t a = {.id = "a"}, b = {.id = "b"};
    client_t *cs[] = {&a, &b};
    rounds(g, cs, 2, 4, 0);
    client_t stale = a;
    stale.epoch = a.epoch + 5;
    CHECK_EQ_INT(beat(g, &stale, 5).err, LS_CGERR_FENCED_MEMBER_EPOCH);
    client_t ghost = {.id = "ghost", .epoch = 3};
    CHECK_EQ_INT(beat(g, &ghost, 5).err, LS_CGERR_UNKNOWN_MEMBER_ID);
    CHECK_EQ_INT(ls_stgroup_commit_check(g, "a", a.epoch), LS_CGERR_NONE);
    CHECK_EQ_INT(ls_stgroup_commit_check(g, "a", a.epoch - 1), LS_CGERR_STALE_MEMBER_EPOCH);
    CHECK_EQ_INT(ls_stgroup_commit_check(g, "zz", 1), LS_CGERR_UNKNOWN_MEMBER_ID);
    /* b stops heartbeating: gone after the session timeout, a gets all */
    int64_t t = 10;
    for (; t < 50000; t += 5000)
        beat(g, &a, t);
    CHECK(ls_stgroup_tick(g, t) != 0);
    CHECK_EQ_INT(ls_stgroup_member_count(g), 1);
    beat(g, &a, t + 1);
    beat(g, &a, t + 2);
    CHECK_EQ_INT(a.nactive, 8);
    ls_stgroup_free(g);
}

TEST(invalid_requests_name_the_field)
{
    world();
    ls_stgroup_t *g = new_group();
    client_t a = {.id = "a"};
    CHECK_EQ_INT(beat_full(g, &a, NULL, 0).err, LS_CGERR_INVALID_REQUEST);
    CHECK(strstr(a.last.message, "Topology") != NULL);
    static const ls_stgroup_topic_info_t bad_chg[] = {{"chg", 3, 0, NULL, 0}};
    static const ls_stgroup_subtopology_t bad_sub[] = {
        {.id = "0", .sources = SRC0, .nsources = 1, .changelogs = bad_chg, .nchangelogs = 1}};
    static const ls_stgroup_topology_t bad = {0, bad_sub, 1};
    CHECK_EQ_INT(beat_full(g, &a, &bad, 0).err, LS_CGERR_STREAMS_INVALID_TOPOLOGY);
    CHECK(strstr(a.last.message, "chg") != NULL);
    client_t empty = {.id = ""};
    CHECK_EQ_INT(beat(g, &empty, 0).err, LS_CGERR_INVALID_REQUEST);
    CHECK_EQ_INT(ls_stgroup_member_count(g), 0);
    /* a changed topology while another member runs the old one */
    CHECK_EQ_INT(beat(g, &a, 1).err, LS_CGERR_NONE);
    static const ls_stgroup_subtopology_t other_sub[] = {
        {.id = "0", .sources = SRC0, .nsources = 1}};
    static const ls_stgroup_topology_t other = {1, other_sub, 1};
    client_t b = {.id = "b"};
    CHECK_EQ_INT(beat_full(g, &b, &other, 2).err, LS_CGERR_INVALID_REQUEST);
    CHECK_EQ_INT(ls_stgroup_member_count(g), 1);
    /* a member of an older topology epoch is told it is stale */
    static const ls_stgroup_topology_t older = {0, SUBS, 2};
    client_t c = {.id = "c"};
    CHECK_EQ_INT(beat_full(g, &c, &older, 3).err, LS_CGERR_NONE);
    CHECK(has_status(&c.last, LS_STGROUP_STALE_TOPOLOGY));
    ls_stgroup_free(g);
}

TEST(a_lone_member_may_bring_a_new_topology)
{
    world();
    ls_stgroup_t *g = new_group();
    client_t a = {.id = "a"};
    beat(g, &a, 0);
    a.epoch = -1;
    beat(g, &a, 1); /* left: the group is empty */
    static const ls_stgroup_subtopology_t only[] = {{.id = "x", .sources = SRC0, .nsources = 1}};
    static const ls_stgroup_topology_t topo = {2, only, 1};
    client_t b = {.id = "b"};
    CHECK_EQ_INT(beat_full(g, &b, &topo, 2).err, LS_CGERR_NONE);
    CHECK_EQ_INT(ls_stgroup_topology(g)->epoch, 2);
    CHECK_EQ_INT(b.nactive, 4);
    CHECK(!strcmp(b.active[0].sub, "x"));
    ls_stgroup_free(g);
}

TEST(stored_form_round_trips)
{
    world();
    add_topic(&T, "rep", 4);
    add_topic(&T, "chg", 4);
    STANDBYS = 1;
    ls_stgroup_t *g = new_group();
    client_t a = {.id = "a", .process = "p1"}, b = {.id = "b", .process = "p2"};
    client_t *cs[] = {&a, &b};
    rounds(g, cs, 2, 5, 0);
    ls_buf_t buf;
    ls_buf_init(&buf);
    ls_stgroup_encode(g, &buf);
    ls_stgroup_config_t cfg;
    ls_stgroup_config_defaults(&cfg);
    ls_stgroup_t *h = ls_stgroup_decode(buf.data, buf.len, "app", &cfg, 100);
    CHECK(h != NULL);
    CHECK_EQ_INT(ls_stgroup_epoch(h), ls_stgroup_epoch(g));
    CHECK_EQ_INT(ls_stgroup_member_count(h), 2);
    ls_stgroup_member_info_t x, y;
    ls_stgroup_member(g, 0, &x);
    ls_stgroup_member(h, 0, &y);
    CHECK(!strcmp(x.member_id, y.member_id));
    CHECK_EQ_INT(x.assigned.nactive, y.assigned.nactive);
    CHECK_EQ_INT(x.assigned.nstandby, y.assigned.nstandby);
    CHECK(!strcmp(y.process_id, x.process_id));
    CHECK_EQ_INT(ls_stgroup_topology(h)->nsubs, 2);
    /* the new coordinator carries on: members heartbeat with their epochs */
    CHECK_EQ_INT(beat(h, &a, 200).err, LS_CGERR_NONE);
    CHECK_EQ_INT(beat(h, &b, 200).err, LS_CGERR_NONE);
    /* any cut of the record is refused */
    for (size_t cut = 0; cut < buf.len; cut += 7)
        CHECK(ls_stgroup_decode(buf.data, cut, "app", &cfg, 0) == NULL);
    ls_buf_free(&buf);
    ls_stgroup_free(g);
    ls_stgroup_free(h);
}

/* Thousands of heartbeats with members joining, leaving and dying at
 * random: the invariants hold after each, and once the churn stops every
 * task is active exactly once. */
TEST(churn_keeps_invariants)
{
    world();
    add_topic(&T, "rep", 4);
    add_topic(&T, "chg", 4);
    STANDBYS = 1;
    ls_stgroup_t *g = new_group();
    enum { N = 6 };
    client_t cs[N];
    static const char *ids[N] = {"m0", "m1", "m2", "m3", "m4", "m5"};
    static const char *procs[N] = {"p0", "p0", "p1", "p1", "p2", "p2"};
    bool in[N] = {0};
    unsigned seed = 7;
    int64_t now = 0;
    for (int step = 0; step < 4000; step++) {
        int i = rand_r(&seed) % N;
        now += rand_r(&seed) % 300;
        if (!in[i]) {
            cs[i] = (client_t){.id = ids[i], .process = procs[i]};
            in[i] = beat(g, &cs[i], now).err == LS_CGERR_NONE;
        } else if (rand_r(&seed) % 50 == 0) { /* leaves */
            cs[i].epoch = -1;
            beat(g, &cs[i], now);
            in[i] = false;
        } else if (beat(g, &cs[i], now).err != LS_CGERR_NONE) {
            in[i] = false; /* fenced or expired: rejoins later */
        }
        ls_stgroup_tick(g, now);
    }
    for (int r = 0; r < 10; r++)
        for (int i = 0; i < N; i++)
            if (in[i] && beat(g, &cs[i], now + r).err != LS_CGERR_NONE) in[i] = false;
    int total = 0;
    for (int i = 0; i < N; i++)
        total += in[i] ? cs[i].nactive : 0;
    CHECK_EQ_INT(total, ls_stgroup_member_count(g) ? 8 : 0);
    ls_stgroup_free(g);
}

int main(void)
{
    RUN(internal_topics_created_then_tasks);
    RUN(missing_source_and_wrongly_partitioned_topics);
    RUN(copartitioned_sources_must_agree);
    RUN(two_processes_share_without_overlap);
    RUN(standbys_go_to_other_processes);
    RUN(fencing_unknown_members_and_session_expiry);
    RUN(invalid_requests_name_the_field);
    RUN(a_lone_member_may_bring_a_new_topology);
    RUN(stored_form_round_trips);
    RUN(churn_keeps_invariants);
    UNIT_DONE();
}
