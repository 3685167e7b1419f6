/* group/share_store.c: share-partition states kept in the metadata store
 * (loads, compare-and-set writes, conflicts between two brokers, group
 * commit of syncs, the offsets admin calls) and share sessions. Two stores
 * over one in-memory metadata store stand for two brokers; store calls are
 * queued and run by drain(), as the broker's worker pool would run them. */
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "group/share_store.h"
#include "meta/meta.h"
#include "unit.h"
#include "meta/meta_keys.h"

typedef struct job {
    struct job *next;
    void (*fn)(void *);
    void (*after)(void *);
    void *arg;
} job_t;
static job_t *jobs_head, **jobs_tail = &jobs_head;

static void offload(void *ctx, void (*fn)(void *), void (*after)(void *), void *arg)
{
    (void)ctx;
    job_t *j = ls_calloc(1, sizeof *j);
    j->fn = fn, j->after = after, j->arg = arg;
    *jobs_tail = j;
    jobs_tail = &j->next;
}

/* Runs queued store calls (and the calls their callbacks queue). */
static int drain(void)
{
    int n = 0;
    while (jobs_head) {
        job_t *j = jobs_head;
        jobs_head = j->next;
        if (!jobs_head) jobs_tail = &jobs_head;
        j->fn(j->arg);
        j->after(j->arg);
        ls_free(j);
        n++;
    }
    return n;
}

static ls_sharep_config_t config(void)
{
    ls_sharep_config_t c;
    ls_sharep_config_defaults(&c);
    return c;
}

static ls_share_store_t *store(ls_meta_t *m, int max_sessions)
{
    ls_sharep_config_t c = config();
    return ls_share_store_new(m, &c, max_sessions, offload, NULL);
}

static const ls_uuid_t TOPIC = {{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}};

typedef struct got {
    int calls;
    ls_status st;
    ls_share_part_t *p;
} got_t;
static void on_get(void *arg, ls_status st, ls_share_part_t *p)
{
    got_t *g = arg;
    g->calls++, g->st = st, g->p = p;
}
static ls_share_part_t *get(ls_share_store_t *s, const char *gid, int32_t partition, int64_t init)
{
    got_t g = {0};
    ls_share_store_get(s, gid, &TOPIC, partition, init, NULL, on_get, &g);
    drain();
    return g.calls == 1 && g.st == LS_OK ? g.p : NULL;
}

typedef struct synced {
    int calls;
    ls_status st;
} synced_t;
static void on_sync(void *arg, ls_status st)
{
    synced_t *s = arg;
    s->calls++, s->st = st;
}
static ls_status sync_part(ls_share_part_t *p)
{
    synced_t s = {0};
    ls_share_part_sync(p, on_sync, &s);
    drain();
    return s.calls == 1 ? s.st : LS_EIO;
}

static int acquire(ls_share_part_t *p, const char *member, int64_t log_end, int max)
{
    const ls_sharep_range_t *r;
    int n = ls_sharep_acquire(ls_share_part_state(p), member, log_end, max, ls_clock_mono_ms(), &r);
    int total = 0;
    for (int i = 0; i < n; i++)
        total += (int)(r[i].last - r[i].first + 1);
    return total;
}

/* A state stored by one broker is what another loads: SPSO/SPEO, finished
 * records, and acquired records as AVAILABLE with their delivery counts. */
TEST(state_survives_the_broker)
{
    ls_meta_t *m = ls_meta_mem_open();
    ls_share_store_t *a = store(m, 10);
    ls_share_part_t *p = get(a, "g", 0, 5);
    CHECK(p);
    CHECK_EQ_INT(ls_sharep_spso(ls_share_part_state(p)), 5);
    CHECK_EQ_INT(acquire(p, "m1", 15, 10), 10);
    static const uint8_t ACCEPT[] = {LS_SHAREP_ACCEPT};
    CHECK_EQ_INT(
        ls_sharep_acknowledge(ls_share_part_state(p), "m1", 5, 7, ACCEPT, 1, ls_clock_mono_ms()),
        LS_SPERR_NONE);
    CHECK_EQ_INT(sync_part(p), LS_OK);
    ls_share_part_release(p);

    ls_share_store_t *b = store(m, 10);
    ls_share_part_t *q = get(b, "g", 0, 0); /* init offset unused: a state exists */
    CHECK(q);
    ls_sharep_t *sp = ls_share_part_state(q);
    CHECK_EQ_INT(ls_sharep_spso(sp), 8);
    CHECK_EQ_INT(ls_sharep_speo(sp), 15);
    ls_sharep_state state;
    int32_t count;
    const char *owner;
    CHECK(ls_sharep_record(sp, 9, &state, &count, &owner));
    CHECK_EQ_INT(state, LS_SHAREP_AVAILABLE);
    CHECK_EQ_INT(count, 1);
    CHECK_EQ_INT(acquire(q, "m2", 15, 100), 7); /* handed out again, elsewhere */
    ls_share_part_release(q);
    ls_share_store_free(b);
    ls_share_store_free(a);
    ls_meta_close(m);
}

/* Two brokers hold one version of a state; the second to write loses
 * (LS_ECONFLICT), drops its copy, and its next get loads the winner's. */
TEST(second_writer_conflicts_and_reloads)
{
    ls_meta_t *m = ls_meta_mem_open();
    ls_share_store_t *a = store(m, 10), *b = store(m, 10);
    ls_share_part_t *pa = get(a, "g", 3, 0);
    CHECK(pa);
    CHECK_EQ_INT(sync_part(pa), LS_OK); /* nothing changed: at once */
    ls_share_part_t *pb = get(b, "g", 3, 0);
    CHECK(pb);
    CHECK_EQ_INT(acquire(pb, "mb", 4, 10), 4);
    CHECK_EQ_INT(sync_part(pb), LS_OK);
    CHECK_EQ_INT(acquire(pa, "ma", 4, 10), 4); /* from the stale version */
    CHECK_EQ_INT(sync_part(pa), LS_ECONFLICT);
    CHECK_EQ_INT(sync_part(pa), LS_ECONFLICT); /* a dropped entry stays refused */
    ls_share_part_release(pa);
    ls_share_part_t *again = get(a, "g", 3, 0);
    CHECK(again && again != pa);
    CHECK_EQ_INT(ls_sharep_speo(ls_share_part_state(again)), 4);
    /* A lock does not outlive the broker's copy: b's acquisitions load as
     * AVAILABLE, delivered once already, and a takes the partition over. */
    int32_t count = 0;
    ls_sharep_state state;
    const char *owner;
    CHECK(ls_sharep_record(ls_share_part_state(again), 0, &state, &count, &owner));
    CHECK_EQ_INT(state, LS_SHAREP_AVAILABLE);
    CHECK_EQ_INT(count, 1);
    CHECK_EQ_INT(acquire(again, "ma", 4, 10), 4);
    CHECK_EQ_INT(sync_part(again), LS_OK);
    /* ...and b, still holding the older version, loses its next write, so
     * its member's acknowledgements are refused rather than applied twice. */
    static const uint8_t ACCEPT[] = {LS_SHAREP_ACCEPT};
    CHECK_EQ_INT(
        ls_sharep_acknowledge(ls_share_part_state(pb), "mb", 0, 3, ACCEPT, 1, ls_clock_mono_ms()),
        LS_SPERR_NONE);
    CHECK_EQ_INT(sync_part(pb), LS_ECONFLICT);
    ls_share_part_release(again);
    ls_share_part_release(pb);
    ls_share_store_free(a);
    ls_share_store_free(b);
    ls_meta_close(m);
}

/* Syncs asked for while a write runs are served by the next write, which
 * carries every change made by then; each caller hears once. */
TEST(syncs_during_a_write_are_grouped)
{
    ls_meta_t *m = ls_meta_mem_open();
    ls_share_store_t *a = store(m, 10);
    ls_share_part_t *p = get(a, "g", 0, 0);
    CHECK(p);
    synced_t s1 = {0}, s2 = {0}, s3 = {0};
    acquire(p, "m", 2, 1);
    ls_share_part_sync(p, on_sync, &s1);
    acquire(p, "m", 2, 1);
    ls_share_part_sync(p, on_sync, &s2);
    ls_share_part_sync(p, on_sync, &s3);
    int calls = drain();
    CHECK_EQ_INT(s1.calls, 1);
    CHECK_EQ_INT(s2.calls, 1);
    CHECK_EQ_INT(s3.calls, 1);
    CHECK(s1.st == LS_OK && s2.st == LS_OK && s3.st == LS_OK);
    CHECK_EQ_INT(calls, 2); /* one write for s1, one for s2 and s3 */
    ls_share_part_release(p);
    ls_share_store_t *b = store(m, 10);
    ls_share_part_t *q = get(b, "g", 0, 0);
    CHECK(q);
    CHECK_EQ_INT(ls_sharep_speo(ls_share_part_state(q)), 2);
    ls_share_part_release(q);
    ls_share_store_free(b);
    ls_share_store_free(a);
    ls_meta_close(m);
}

typedef struct listed {
    int calls, n;
    ls_status st;
    ls_share_offset_t v[8];
} listed_t;
static void on_list(void *arg, ls_status st, const ls_share_offset_t *v, int n)
{
    listed_t *l = arg;
    l->calls++, l->st = st, l->n = n;
    for (int i = 0; i < n && i < 8; i++)
        l->v[i] = v[i];
}
static void on_done(void *arg, ls_status st)
{
    synced_t *s = arg;
    s->calls++, s->st = st;
}

/* DescribeShareGroupOffsets, AlterShareGroupOffsets and
 * DeleteShareGroupOffsets work on the stored states. */
TEST(offsets_list_reset_delete)
{
    ls_meta_t *m = ls_meta_mem_open();
    ls_share_store_t *a = store(m, 10);
    for (int part = 0; part < 2; part++) {
        ls_share_part_t *p = get(a, "g", part, 10 * part);
        CHECK(p);
        CHECK_EQ_INT(acquire(p, "m", 10 * part + 4, 10), 4);
        CHECK_EQ_INT(sync_part(p), LS_OK);
        ls_share_part_release(p);
    }
    listed_t l = {0};
    ls_share_store_list(a, "g", on_list, &l);
    drain();
    CHECK_EQ_INT(l.calls, 1);
    CHECK_EQ_INT(l.st, LS_OK);
    CHECK_EQ_INT(l.n, 2);
    CHECK_EQ_INT(l.v[0].partition + l.v[1].partition, 1);
    CHECK_EQ_INT(l.v[0].start_offset + l.v[1].start_offset, 10);

    ls_share_offset_t to = {TOPIC, 1, 42, 0};
    synced_t done = {0};
    ls_share_store_reset(a, "g", &to, 1, on_done, &done);
    drain();
    CHECK(done.calls == 1 && done.st == LS_OK);
    ls_share_part_t *p = get(a, "g", 1, 0);
    CHECK(p);
    CHECK_EQ_INT(ls_sharep_spso(ls_share_part_state(p)), 42);
    CHECK_EQ_INT(ls_sharep_speo(ls_share_part_state(p)), 42);
    ls_share_part_release(p);

    done = (synced_t){0};
    ls_share_store_delete_topic(a, "g", &TOPIC, on_done, &done);
    drain();
    CHECK(done.calls == 1 && done.st == LS_OK);
    l = (listed_t){0};
    ls_share_store_list(a, "g", on_list, &l);
    drain();
    CHECK_EQ_INT(l.n, 0);
    ls_share_store_free(a);
    ls_meta_close(m);
}

static ls_share_session_err step(ls_share_store_t *s, const char *member, int32_t epoch, int nadd,
                                 int *nparts)
{
    ls_share_tp_t add[2] = {{TOPIC, 0}, {TOPIC, 1}};
    const ls_share_tp_t *parts;
    int n = -1;
    ls_share_session_err e =
        ls_share_session_step(s, "g", member, epoch, add, nadd, NULL, 0, &parts, &n);
    if (nparts) *nparts = n;
    return e;
}

/* Epoch 0 opens, the expected epoch steps, anything else is refused; -1
 * needs a session; the per-broker limit holds; a member that leaves loses
 * its sessions. */
TEST(session_rules)
{
    ls_meta_t *m = ls_meta_mem_open();
    ls_share_store_t *a = store(m, 1);
    int n;
    CHECK_EQ_INT(step(a, "m1", 1, 0, NULL), LS_SSERR_NOT_FOUND);
    CHECK_EQ_INT(step(a, "m1", -1, 0, NULL), LS_SSERR_NOT_FOUND);
    CHECK_EQ_INT(ls_share_session_id(a, "g", "m1"), 0);
    CHECK_EQ_INT(step(a, "m1", 0, 1, &n), LS_SSERR_NONE);
    CHECK_EQ_INT(n, 1);
    uint64_t first = ls_share_session_id(a, "g", "m1");
    CHECK(first != 0);
    CHECK_EQ_INT(step(a, "m1", 2, 0, NULL), LS_SSERR_INVALID_EPOCH);
    CHECK_EQ_INT(step(a, "m1", 1, 2, &n), LS_SSERR_NONE);
    CHECK_EQ_INT(n, 2);                                /* partition 0 is not added twice */
    CHECK(ls_share_session_id(a, "g", "m1") == first); /* same session, next epoch */
    CHECK_EQ_INT(step(a, "m2", 0, 1, NULL), LS_SSERR_LIMIT_REACHED);
    CHECK_EQ_INT(step(a, "m1", 0, 1, &n), LS_SSERR_NONE); /* replaces its own */
    CHECK_EQ_INT(n, 1);
    CHECK(ls_share_session_id(a, "g", "m1") != first); /* a request of the old one sees it */
    CHECK_EQ_INT(ls_share_session_count(a), 1);
    CHECK_EQ_INT(step(a, "m1", -1, 0, NULL), LS_SSERR_NONE);
    ls_share_session_close(a, "g", "m1");
    CHECK_EQ_INT(ls_share_session_count(a), 0);
    CHECK_EQ_INT(ls_share_session_id(a, "g", "m1"), 0);
    CHECK_EQ_INT(step(a, "m2", 0, 1, NULL), LS_SSERR_NONE);
    ls_share_store_member_left(a, "g", "m2");
    CHECK_EQ_INT(ls_share_session_count(a), 0);
    ls_share_store_free(a);
    ls_meta_close(m);
}

/* A member that leaves gives back what it holds in every partition of the
 * group this broker holds; another member acquires them. */
TEST(member_left_releases_its_records)
{
    ls_meta_t *m = ls_meta_mem_open();
    ls_share_store_t *a = store(m, 10);
    ls_share_part_t *p = get(a, "g", 0, 0);
    CHECK(p);
    CHECK_EQ_INT(acquire(p, "m1", 6, 10), 6);
    CHECK_EQ_INT(acquire(p, "m2", 6, 10), 0);
    ls_share_store_member_left(a, "g", "m1");
    drain();
    CHECK_EQ_INT(acquire(p, "m2", 6, 10), 6);
    ls_share_part_release(p);
    ls_share_store_free(a);
    ls_meta_close(m);
}

/* A connection that closes ends the sessions opened on it and gives back
 * what their members hold; sessions of other connections stay. */
TEST(closed_connection_ends_its_sessions_and_releases)
{
    ls_meta_t *m = ls_meta_mem_open();
    ls_share_store_t *a = store(m, 10);
    CHECK_EQ_INT(step(a, "m1", 0, 1, NULL), LS_SSERR_NONE);
    CHECK_EQ_INT(step(a, "m2", 0, 1, NULL), LS_SSERR_NONE);
    CHECK_EQ_INT(step(a, "m3", 0, 1, NULL), LS_SSERR_NONE);
    ls_share_session_bind(a, "g", "m1", 7);
    ls_share_session_bind(a, "g", "m2", 8);
    ls_share_session_bind(a, "g", "m3", 7);
    ls_share_part_t *p = get(a, "g", 0, 0);
    CHECK(p);
    CHECK_EQ_INT(acquire(p, "m1", 6, 3), 3);
    CHECK_EQ_INT(acquire(p, "m3", 6, 3), 3);
    ls_share_store_conn_closed(a, 0); /* no connection: nothing */
    CHECK_EQ_INT(ls_share_session_count(a), 3);
    ls_share_store_conn_closed(a, 7);
    drain();
    CHECK_EQ_INT(ls_share_session_count(a), 1);
    CHECK(ls_share_session_id(a, "g", "m1") == 0 && ls_share_session_id(a, "g", "m3") == 0);
    CHECK(ls_share_session_id(a, "g", "m2") != 0);
    CHECK_EQ_INT(acquire(p, "m2", 6, 10), 6);
    ls_share_part_release(p);
    ls_share_store_free(a);
    ls_meta_close(m);
}

/* A forgotten group's copies are dropped: the next get loads the store's. */
TEST(forget_group_reloads)
{
    ls_meta_t *m = ls_meta_mem_open();
    ls_share_store_t *a = store(m, 10);
    ls_share_part_t *p = get(a, "g", 0, 7);
    CHECK(p);
    ls_share_part_release(p);
    char *prefix = ls_share_key_group_prefix("g");
    CHECK(strcmp(prefix, LS_KEY_SHARE_STATE "g/") == 0);
    ls_free(prefix);
    ls_share_store_forget_group(a, "g");
    ls_share_part_t *q = get(a, "g", 0, 9); /* nothing stored: the new init */
    CHECK(q);
    CHECK_EQ_INT(ls_sharep_spso(ls_share_part_state(q)), 9);
    ls_share_part_release(q);
    ls_share_store_free(a);
    ls_meta_close(m);
}

int main(void)
{
    RUN(state_survives_the_broker);
    RUN(second_writer_conflicts_and_reloads);
    RUN(syncs_during_a_write_are_grouped);
    RUN(offsets_list_reset_delete);
    RUN(session_rules);
    RUN(member_left_releases_its_records);
    RUN(closed_connection_ends_its_sessions_and_releases);
    RUN(forget_group_reloads);
    UNIT_DONE();
}
