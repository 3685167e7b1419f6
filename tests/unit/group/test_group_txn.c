/* Transactional group offsets (KIP-447; src/group/group_txn.c and the
 * coordinator's side in group_service.c) on the mem and SQLite stores, and
 * on etcd when LS_TEST_ETCD_URL names one (LS_TEST_GROUP_TXN_ONLY=etcd: only
 * there; tests/run.sh does both):
 * pending writes stay invisible, the commit marker makes them the committed
 * offsets, the abort marker drops them, markers repeat as no-ops, settle
 * more entries than one store txn holds, leave a later transaction alone,
 * lose to a later plain commit, never bring back a deleted group, and a
 * marker written by another broker reaches the coordinator's copy in memory
 * through the reread OffsetFetch runs (which also lists the partitions a
 * RequireStable fetch answers UNSTABLE_OFFSET_COMMIT). */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "base/alloc.h"
#include "base/check.h"
#include "group/group.h"
#include "group/group_service.h"
#include "group/group_txn.h"
#include "meta/meta.h"
#include "stream/catalog.h"
#include "unit.h"

static ls_meta_t *M;
static int RACE_ROUNDS = 3000; /* fewer on etcd: each round is four round trips */
static ls_catalog_t *C;
static uv_loop_t *L;

/* ---- the broker's offload, on libuv's pool ---- */

typedef struct work {
    uv_work_t w;
    void (*fn)(void *);
    void (*after)(void *);
    void *arg;
} work_t;

static void work_run(uv_work_t *w)
{
    work_t *x = w->data;
    x->fn(x->arg);
}

static void work_after(uv_work_t *w, int status)
{
    work_t *x = w->data;
    x->after(x->arg);
    ls_free(x);
}

static void offload(void *ctx, void (*fn)(void *), void (*after)(void *), void *arg)
{
    work_t *x = LS_NEW(work_t);
    x->fn = fn;
    x->after = after;
    x->arg = arg;
    x->w.data = x;
    uv_queue_work(L, &x->w, work_run, work_after);
}

static void run_until(const int *done)
{
    while (!*done)
        uv_run(L, UV_RUN_ONCE);
}

static ls_group_service_t *service_with(int32_t node, int64_t retention_ms)
{
    ls_group_config_t cfg;
    ls_group_config_defaults(&cfg);
    if (retention_ms >= 0) cfg.offsets_retention_ms = retention_ms;
    return ls_group_service_open(L, M, C, &cfg, 0, node, offload, NULL);
}

static ls_group_service_t *service(int32_t node) { return service_with(node, -1); }

/* ---- waiting for the service ---- */

typedef struct wait {
    int done;
    ls_status st;
    ls_group_t *g;
    int npending;
    char pending[8][64]; /* "topic/partition" */
} wait_t;

static void got_group(void *arg, ls_group_t *g)
{
    wait_t *w = arg;
    w->g = g;
    w->done = 1;
}

static void written(void *arg, ls_status st)
{
    wait_t *w = arg;
    w->st = st;
    w->done = 1;
}

static void service_close(ls_group_service_t *s)
{
    wait_t w = {0};
    ls_group_service_barrier(s, written, &w); /* writes in flight first */
    run_until(&w.done);
    ls_group_service_stop(s);
    ls_group_service_free(s);
    uv_run(L, UV_RUN_DEFAULT); /* the timers' close callbacks */
}

static void reread(void *arg, ls_status st, const ls_group_tp_t *pending, int npending)
{
    wait_t *w = arg;
    w->st = st;
    w->npending = npending;
    for (int i = 0; i < npending && i < 8; i++)
        snprintf(w->pending[i], sizeof w->pending[i], "%s/%d", pending[i].topic,
                 (int)pending[i].partition);
    w->done = 1;
}

static ls_group_t *acquire(ls_group_service_t *s, const char *gid)
{
    wait_t w = {0};
    ls_group_acquire(ls_group_service_coord(s), gid, got_group, &w);
    run_until(&w.done);
    return w.g;
}

static int64_t topic_sn(const char *topic)
{
    ls_stream_t *st = ls_catalog_lookup(C, LS_DEFAULT_NAMESPACE, topic);
    int64_t n = st ? st->stream_no : -1;
    ls_stream_release(st);
    return n;
}

static ls_group_commit_item_t item(const char *topic, int32_t partition, int64_t offset)
{
    ls_group_commit_item_t it = {.topic = topic, .partition = partition};
    it.o.offset = offset;
    it.o.leader_epoch = 3;
    it.o.metadata = "m";
    it.o.metadata_len = 1;
    it.o.commit_ms = 1700000000000LL + offset;
    it.o.stream_no = topic_sn(topic);
    return it;
}

/* OffsetCommit as h_group.c does it: durable, then applied in memory. */
static ls_status plain_commit(ls_group_service_t *s, const char *gid, const char *topic,
                              int32_t partition, int64_t offset)
{
    ls_group_commit_item_t it = item(topic, partition, offset);
    acquire(s, gid); /* loading claims the group: its writes carry the fence */
    wait_t w = {0};
    ls_group_service_commit(s, gid, &it, 1, written, &w);
    run_until(&w.done);
    if (w.st == LS_OK) ls_group_offset_put(acquire(s, gid), topic, partition, &it.o);
    return w.st;
}

/* TxnOffsetCommit's store side, as the handler drives it. */
static ls_status txn_commit(ls_group_service_t *s, const char *gid, int64_t pid, int64_t seq,
                            const ls_group_commit_item_t *items, int n)
{
    ls_group_txn_offsets_added(acquire(s, gid));
    wait_t w = {0};
    ls_group_service_txn_commit(s, gid, pid, seq, items, n, written, &w);
    run_until(&w.done);
    return w.st;
}

/* What OffsetFetch does first for a group that may hold pending offsets. */
static wait_t refresh(ls_group_service_t *s, const char *gid)
{
    wait_t w = {0};
    ls_group_service_refresh(s, gid, reread, &w);
    run_until(&w.done);
    return w;
}

static int64_t mem_offset(ls_group_service_t *s, const char *gid, const char *topic, int32_t p)
{
    const ls_group_offset_t *o = ls_group_offset_get(acquire(s, gid), topic, p);
    return o ? o->offset : -1;
}

/* The committed offset in the store, -1 when absent. */
static int64_t stored_offset(const char *gid, const char *topic, int32_t p, int64_t *mod_rev)
{
    char *k = ls_group_key_offset(gid, topic, p);
    ls_kv_t kv;
    ls_status st = ls_meta_get(M, k, &kv);
    ls_free(k);
    if (st != LS_OK) return -1;
    ls_group_offset_t o;
    int64_t v = ls_group_offset_decode(kv.val, kv.vlen, &o) == LS_OK ? o.offset : -2;
    if (v >= 0 && (o.leader_epoch != 3 || !o.metadata || strcmp(o.metadata, "m") != 0)) v = -3;
    if (mod_rev) *mod_rev = kv.mod_rev;
    ls_free(o.metadata);
    ls_kv_free(&kv);
    return v;
}

static size_t npending_keys(const char *gid)
{
    char *pfx = ls_group_key_pending_prefix(gid);
    ls_kvlist_t l;
    size_t n = ls_meta_scan_prefix(M, pfx, 0, &l) == LS_OK ? l.n : (size_t)-1;
    ls_free(pfx);
    if (n != (size_t)-1) ls_kvlist_free(&l);
    return n;
}

static void create_topic(const char *name, int32_t partitions)
{
    char err[256];
    ls_status st = ls_catalog_create(C, LS_DEFAULT_NAMESPACE, name, partitions, NULL, 0, 0, NULL,
                                     err, sizeof err);
    LS_CHECKF(st == LS_OK || st == LS_EEXISTS, "create %s: %s", name, err);
}

/* ---- tests ---- */

TEST(pending_offsets_are_invisible_until_the_commit_marker)
{
    ls_group_service_t *s = service(1);
    CHECK_EQ_INT(plain_commit(s, "g1", "t", 0, 5), LS_OK);
    ls_group_commit_item_t it[2] = {item("t", 0, 10), item("t", 1, 11)};
    CHECK_EQ_INT(txn_commit(s, "g1", 42, 1, it, 2), LS_OK);
    CHECK_EQ_INT(npending_keys("g1"), 2);
    CHECK(ls_group_txn_pending(acquire(s, "g1")));
    /* OffsetFetch: the committed offsets only; the reread lists the pending ones */
    wait_t w = refresh(s, "g1");
    CHECK_EQ_INT(w.st, LS_OK);
    CHECK_EQ_INT(w.npending, 2);
    CHECK(strcmp(w.pending[0], "t/0") == 0 && strcmp(w.pending[1], "t/1") == 0);
    CHECK_EQ_INT(mem_offset(s, "g1", "t", 0), 5);
    CHECK_EQ_INT(mem_offset(s, "g1", "t", 1), -1);
    CHECK(ls_group_txn_pending(acquire(s, "g1")));

    CHECK_EQ_INT(ls_group_txn_marker(M, "g1", 42, 1, true), LS_OK);
    CHECK_EQ_INT(npending_keys("g1"), 0);
    CHECK_EQ_INT(stored_offset("g1", "t", 0, NULL), 10);
    CHECK_EQ_INT(stored_offset("g1", "t", 1, NULL), 11);
    w = refresh(s, "g1");
    CHECK_EQ_INT(w.st, LS_OK);
    CHECK_EQ_INT(w.npending, 0);
    CHECK_EQ_INT(mem_offset(s, "g1", "t", 0), 10);
    CHECK_EQ_INT(mem_offset(s, "g1", "t", 1), 11);
    CHECK(!ls_group_txn_pending(acquire(s, "g1"))); /* OffsetFetch reads memory again */
    service_close(s);
}

TEST(abort_marker_drops_pending_offsets_and_repeats_are_no_ops)
{
    ls_group_service_t *s = service(1);
    CHECK_EQ_INT(plain_commit(s, "g2", "t", 0, 5), LS_OK);
    ls_group_commit_item_t it = item("t", 0, 10);
    CHECK_EQ_INT(txn_commit(s, "g2", 7, 1, &it, 1), LS_OK);
    CHECK_EQ_INT(ls_group_txn_marker(M, "g2", 7, 1, false), LS_OK);
    CHECK_EQ_INT(npending_keys("g2"), 0);
    int64_t rev;
    CHECK_EQ_INT(stored_offset("g2", "t", 0, &rev), 5);
    /* again, and the commit marker of the same transaction: nothing left */
    CHECK_EQ_INT(ls_group_txn_marker(M, "g2", 7, 1, false), LS_OK);
    CHECK_EQ_INT(ls_group_txn_marker(M, "g2", 7, 1, true), LS_OK);
    int64_t rev2;
    CHECK_EQ_INT(stored_offset("g2", "t", 0, &rev2), 5);
    CHECK_EQ_INT(rev2, rev);
    /* a group that never had pending offsets, and one that does not exist */
    CHECK_EQ_INT(ls_group_txn_marker(M, "g2", 8, 1, true), LS_OK);
    CHECK_EQ_INT(ls_group_txn_marker(M, "nobody", 8, 1, true), LS_OK);
    CHECK_EQ_INT(mem_offset(s, "g2", "t", 0), 5);
    service_close(s);
}

TEST(commit_marker_settles_more_entries_than_one_store_txn_holds)
{
    enum { N = 300 };
    create_topic("wide", N);
    ls_group_service_t *s = service(1);
    ls_group_commit_item_t *it = LS_NEWN(ls_group_commit_item_t, N);
    for (int i = 0; i < N; i++)
        it[i] = item("wide", i, 1000 + i);
    CHECK_EQ_INT(txn_commit(s, "g3", 9, 4, it, N), LS_OK);
    ls_free(it);
    CHECK_EQ_INT(npending_keys("g3"), N);
    CHECK_EQ_INT(ls_group_txn_marker(M, "g3", 9, 4, true), LS_OK);
    CHECK_EQ_INT(npending_keys("g3"), 0);
    for (int i = 0; i < N; i++)
        CHECK_EQ_INT(stored_offset("g3", "wide", i, NULL), 1000 + i);
    wait_t w = refresh(s, "g3");
    CHECK_EQ_INT(w.npending, 0);
    CHECK_EQ_INT(mem_offset(s, "g3", "wide", N - 1), 1000 + N - 1);
    service_close(s);
}

TEST(a_marker_settles_only_its_own_transaction_and_older_leftovers)
{
    ls_group_service_t *s = service(1);
    ls_group_commit_item_t a = item("t", 0, 20), b = item("t", 1, 21);
    CHECK_EQ_INT(txn_commit(s, "g4", 5, 2, &a, 1), LS_OK); /* left from transaction 2 */
    CHECK_EQ_INT(txn_commit(s, "g4", 5, 3, &b, 1), LS_OK); /* transaction 3 */
    /* a stale repeat of transaction 1's marker touches neither */
    CHECK_EQ_INT(ls_group_txn_marker(M, "g4", 5, 1, true), LS_OK);
    CHECK_EQ_INT(npending_keys("g4"), 2);
    /* another producer's marker neither */
    CHECK_EQ_INT(ls_group_txn_marker(M, "g4", 6, 3, true), LS_OK);
    CHECK_EQ_INT(npending_keys("g4"), 2);
    /* transaction 3 commits: its offset is committed, 2's leftover dropped */
    CHECK_EQ_INT(ls_group_txn_marker(M, "g4", 5, 3, true), LS_OK);
    CHECK_EQ_INT(npending_keys("g4"), 0);
    CHECK_EQ_INT(stored_offset("g4", "t", 0, NULL), -1);
    CHECK_EQ_INT(stored_offset("g4", "t", 1, NULL), 21);
    service_close(s);
}

TEST(a_plain_commit_after_the_txn_offset_commit_wins)
{
    ls_group_service_t *s = service(1);
    ls_group_commit_item_t it[2] = {item("t", 0, 10), item("t", 1, 11)};
    CHECK_EQ_INT(plain_commit(s, "g5", "t", 1, 3), LS_OK); /* before: replaced */
    CHECK_EQ_INT(txn_commit(s, "g5", 11, 1, it, 2), LS_OK);
    CHECK_EQ_INT(plain_commit(s, "g5", "t", 0, 30), LS_OK); /* after: kept (Kafka's order) */
    CHECK_EQ_INT(ls_group_txn_marker(M, "g5", 11, 1, true), LS_OK);
    CHECK_EQ_INT(stored_offset("g5", "t", 0, NULL), 30);
    CHECK_EQ_INT(stored_offset("g5", "t", 1, NULL), 11);
    refresh(s, "g5");
    CHECK_EQ_INT(mem_offset(s, "g5", "t", 0), 30);
    CHECK_EQ_INT(mem_offset(s, "g5", "t", 1), 11);
    service_close(s);
}

TEST(a_deleted_group_is_not_brought_back_by_its_marker)
{
    ls_group_service_t *s = service(1);
    ls_group_commit_item_t it = item("t", 0, 10);
    CHECK_EQ_INT(txn_commit(s, "g6", 12, 1, &it, 1), LS_OK);
    ls_group_t *g = acquire(s, "g6");
    CHECK_EQ_INT(ls_group_get_state(g), LS_GROUP_EMPTY); /* created by TxnOffsetCommit */
    CHECK_EQ_INT(ls_group_delete(g), LS_GERR_NONE);      /* DeleteGroups */
    wait_t w = {0};
    ls_group_service_barrier(s, written, &w);
    run_until(&w.done);
    CHECK_EQ_INT(npending_keys("g6"), 0);
    CHECK_EQ_INT(ls_group_txn_marker(M, "g6", 12, 1, true), LS_OK);
    CHECK_EQ_INT(stored_offset("g6", "t", 0, NULL), -1);
    ls_group_loaded_t l;
    CHECK_EQ_INT(ls_group_store_load(M, "g6", &l), LS_OK);
    CHECK(!l.exists);
    ls_group_loaded_free(&l);
    service_close(s);
}

/* A reread in flight when the group is deleted (memory first, the store
 * after it) and created again must not install what it read before. */
TEST(a_reread_racing_a_group_deletion_does_not_bring_offsets_back)
{
    ls_group_service_t *s = service(1);
    CHECK_EQ_INT(plain_commit(s, "g11", "t", 0, 5), LS_OK);
    ls_group_commit_item_t it = item("t", 1, 6);
    CHECK_EQ_INT(txn_commit(s, "g11", 16, 1, &it, 1), LS_OK);
    wait_t w = {0};
    ls_group_service_refresh(s, "g11", reread, &w); /* queued, not run yet */
    ls_group_t *g = acquire(s, "g11");
    CHECK_EQ_INT(ls_group_delete(g), LS_GERR_NONE);
    ls_group_txn_offsets_added(g); /* a TxnOffsetCommit brings it back, Empty */
    run_until(&w.done);
    CHECK_EQ_INT(w.st, LS_OK);
    CHECK_EQ_INT(w.npending, 0);
    CHECK_EQ_INT(mem_offset(s, "g11", "t", 0), -1);
    CHECK_EQ_INT(stored_offset("g11", "t", 0, NULL), -1);
    service_close(s);
}

/* Markers racing the coordinator's rereads (ls_group_store_load): a read
 * that no longer sees a pending offset written before it began must see
 * what the marker committed (pending keys are read before committed ones). */
typedef struct racer {
    const char *gid;
    int rounds;
    volatile int written; /* the last offset made pending (seq = offset) */
    volatile int done;
    ls_status st;
} racer_t;

static void marker_racer(void *arg)
{
    racer_t *r = arg;
    for (int i = 1; i <= r->rounds && r->st == LS_OK; i++) {
        ls_group_commit_item_t it = item("t", 0, i);
        size_t n;
        uint8_t *v = ls_group_pending_encode(i, &it.o, &n);
        char *k = ls_group_key_pending(r->gid, 77, "t", 0);
        r->st = ls_meta_put(M, k, v, n);
        ls_free(k);
        ls_free(v);
        __atomic_store_n(&r->written, i, __ATOMIC_SEQ_CST);
        if (r->st == LS_OK) r->st = ls_group_txn_marker(M, r->gid, 77, i, true);
    }
    __atomic_store_n(&r->done, 1, __ATOMIC_SEQ_CST);
}

TEST(a_reread_never_misses_a_marker_running_under_it)
{
    racer_t r = {.gid = "g12", .rounds = RACE_ROUNDS, .st = LS_OK};
    uv_thread_t th;
    CHECK_EQ_INT(uv_thread_create(&th, marker_racer, &r), 0);
    int bad = 0, loads = 0;
    while (!__atomic_load_n(&r.done, __ATOMIC_SEQ_CST)) {
        int before = __atomic_load_n(&r.written, __ATOMIC_SEQ_CST);
        ls_group_loaded_t l;
        if (ls_group_store_load(M, "g12", &l) != LS_OK) break;
        loads++;
        int64_t got = l.noffsets ? l.offsets[0].o.offset : 0;
        if (l.ntxn_pending == 0 && got < before) bad++;
        ls_group_loaded_free(&l);
    }
    uv_thread_join(&th);
    CHECK_EQ_INT(r.st, LS_OK);
    CHECK(loads > 0);
    CHECK_EQ_INT(bad, 0);
}

static bool group_stored(const char *gid)
{
    char *k = ls_group_key_meta(gid);
    ls_kv_t kv;
    ls_status st = ls_meta_get(M, k, &kv);
    ls_free(k);
    if (st == LS_OK) ls_kv_free(&kv);
    return st == LS_OK;
}

/* Retention (offsets.retention.minutes, here 0: everything is due) keeps a
 * group with pending offsets, and deletes it, pending keys included, once
 * none are left. */
TEST(retention_keeps_a_group_while_offsets_are_pending)
{
    ls_group_service_t *s = service_with(1, 0);
    ls_group_commit_item_t it = item("t", 0, 10);
    CHECK_EQ_INT(txn_commit(s, "g10", 15, 1, &it, 1), LS_OK);
    CHECK(group_stored("g10"));
    ls_group_service_cleanup(s);
    uv_run(L, UV_RUN_DEFAULT); /* the pass: listing, reread, expiry */
    CHECK(group_stored("g10"));
    CHECK_EQ_INT(npending_keys("g10"), 1);
    CHECK_EQ_INT(ls_group_txn_marker(M, "g10", 15, 1, false), LS_OK);
    ls_group_service_cleanup(s);
    uv_run(L, UV_RUN_DEFAULT);
    CHECK(!group_stored("g10"));
    CHECK_EQ_INT(ls_group_get_state(acquire(s, "g10")), LS_GROUP_DEAD);
    service_close(s);
}

/* The coordinator holds the group (and its offsets) in memory; the
 * transaction is completed by another broker, which writes the group marker
 * from its own thread. The coordinator's next OffsetFetch must see it. */
typedef struct marker_job {
    ls_group_service_t *broker;
    const char *gid;
    int64_t pid, seq;
    ls_status st;
} marker_job_t;

static void marker_thread(void *arg)
{
    marker_job_t *j = arg;
    j->st = ls_group_service_txn_marker(j->broker, j->gid, j->pid, j->seq, true);
}

TEST(a_marker_from_another_broker_reaches_the_coordinators_offset_fetch)
{
    ls_group_service_t *coord = service(1), *other = service(2);
    CHECK_EQ_INT(plain_commit(coord, "g7", "t", 0, 5), LS_OK);
    ls_group_commit_item_t it = item("t", 0, 50);
    CHECK_EQ_INT(txn_commit(coord, "g7", 13, 1, &it, 1), LS_OK);
    /* a RequireStable fetch now: t/0 is unstable, the committed offset is 5 */
    wait_t w = refresh(coord, "g7");
    CHECK_EQ_INT(w.npending, 1);
    CHECK(strcmp(w.pending[0], "t/0") == 0);
    CHECK_EQ_INT(mem_offset(coord, "g7", "t", 0), 5);

    uv_thread_t th;
    marker_job_t j = {other, "g7", 13, 1, LS_EIO};
    CHECK_EQ_INT(uv_thread_create(&th, marker_thread, &j), 0);
    uv_thread_join(&th);
    CHECK_EQ_INT(j.st, LS_OK);
    /* the other broker never loaded the group: it took no ownership */
    CHECK(ls_group_find(ls_group_service_coord(other), "g7") == NULL);

    CHECK(ls_group_txn_pending(acquire(coord, "g7")));
    w = refresh(coord, "g7");
    CHECK_EQ_INT(w.st, LS_OK);
    CHECK_EQ_INT(w.npending, 0); /* RequireStable answers the offset again */
    CHECK_EQ_INT(mem_offset(coord, "g7", "t", 0), 50);
    /* and the coordinator still owns the group: its writes are not fenced */
    CHECK_EQ_INT(plain_commit(coord, "g7", "t", 0, 51), LS_OK);
    service_close(other);
    service_close(coord);
}

TEST(a_reload_finds_pending_offsets)
{
    ls_group_service_t *a = service(1);
    ls_group_commit_item_t it = item("t", 2, 9);
    CHECK_EQ_INT(txn_commit(a, "g8", 14, 1, &it, 1), LS_OK);
    service_close(a);
    /* a new coordinator loads the group: it knows offsets are pending */
    ls_group_service_t *b = service(2);
    CHECK(ls_group_txn_pending(acquire(b, "g8")));
    wait_t w = refresh(b, "g8");
    CHECK_EQ_INT(w.npending, 1);
    /* the old coordinator's fence is gone: it could not write any more */
    CHECK_EQ_INT(ls_group_txn_marker(M, "g8", 14, 1, false), LS_OK);
    w = refresh(b, "g8");
    CHECK_EQ_INT(w.npending, 0);
    CHECK(!ls_group_txn_pending(acquire(b, "g8")));
    service_close(b);
}

TEST(txn_commit_membership_rules)
{
    ls_group_service_t *s = service(1);
    ls_group_t *g = acquire(s, "g9");
    /* Dead: only without a generation (the group is created) */
    CHECK_EQ_INT(ls_group_txn_commit_check(g, 3, "m", NULL), LS_GERR_ILLEGAL_GENERATION);
    CHECK_EQ_INT(ls_group_txn_commit_check(g, -1, "", NULL), LS_GERR_NONE);
    ls_group_txn_offsets_added(g);
    CHECK_EQ_INT(ls_group_get_state(g), LS_GROUP_EMPTY);
    CHECK_EQ_INT(ls_group_txn_commit_check(g, -1, "", NULL), LS_GERR_NONE);
    CHECK_EQ_INT(ls_group_txn_commit_check(g, 1, "nobody", NULL), LS_GERR_UNKNOWN_MEMBER_ID);
    service_close(s);
}

TEST(pending_codec_and_keys)
{
    ls_group_offset_t o = {.offset = 77, .leader_epoch = -1, .commit_ms = 5, .stream_no = 2};
    size_t n;
    uint8_t *v = ls_group_pending_encode(123, &o, &n);
    int64_t seq;
    const uint8_t *rec;
    size_t rlen;
    CHECK_EQ_INT(ls_group_pending_decode(v, n, &seq, &rec, &rlen), LS_OK);
    CHECK_EQ_INT(seq, 123);
    ls_group_offset_t back;
    CHECK_EQ_INT(ls_group_offset_decode(rec, rlen, &back), LS_OK);
    CHECK_EQ_INT(back.offset, 77);
    CHECK(back.metadata == NULL);
    CHECK_EQ_INT(ls_group_pending_decode(v, 5, &seq, &rec, &rlen), LS_ECORRUPT);
    v[0] = 9;
    CHECK_EQ_INT(ls_group_pending_decode(v, n, &seq, &rec, &rlen), LS_ECORRUPT);
    ls_free(v);
    char *k = ls_group_key_pending("a/b", 42, "t.x", 3);
    CHECK(strcmp(k, "/ls/group/pending/a%2Fb/42/t.x/0000000003") == 0);
    char *p = ls_group_key_pending_prefix("a/b");
    CHECK(strncmp(k, p, strlen(p)) == 0);
    int64_t pid;
    char *topic;
    int32_t part;
    CHECK(ls_group_pending_key_parse(k + strlen(p), &pid, &topic, &part));
    CHECK(pid == 42 && part == 3 && strcmp(topic, "t.x") == 0);
    ls_free(topic);
    CHECK(!ls_group_pending_key_parse("x/t/1", &pid, &topic, &part));
    CHECK(!ls_group_pending_key_parse("1/t", &pid, &topic, &part));
    CHECK(!ls_group_pending_key_parse("1/t/99999999999", &pid, &topic, &part));
    ls_free(k);
    ls_free(p);
}

static void run_suite(void)
{
    char err[256];
    C = ls_catalog_open(M, err, sizeof err);
    LS_CHECKF(C != NULL, "catalog: %s", err);
    create_topic("t", 4);
    RUN(pending_offsets_are_invisible_until_the_commit_marker);
    RUN(abort_marker_drops_pending_offsets_and_repeats_are_no_ops);
    RUN(commit_marker_settles_more_entries_than_one_store_txn_holds);
    RUN(a_marker_settles_only_its_own_transaction_and_older_leftovers);
    RUN(a_plain_commit_after_the_txn_offset_commit_wins);
    RUN(a_deleted_group_is_not_brought_back_by_its_marker);
    RUN(a_marker_from_another_broker_reaches_the_coordinators_offset_fetch);
    RUN(a_reload_finds_pending_offsets);
    RUN(retention_keeps_a_group_while_offsets_are_pending);
    RUN(a_reread_racing_a_group_deletion_does_not_bring_offsets_back);
    RUN(a_reread_never_misses_a_marker_running_under_it);
    RUN(txn_commit_membership_rules);
    ls_catalog_close(C);
}

int main(void)
{
    ls_check_invariants_enable(true);
    L = uv_default_loop();
    const char *etcd = getenv("LS_TEST_ETCD_URL");
    const char *only = getenv("LS_TEST_GROUP_TXN_ONLY");
    if (!only || strcmp(only, "etcd") != 0) {
        RUN(pending_codec_and_keys);

        printf("# backend mem\n");
        M = ls_meta_mem_open();
        run_suite();
        ls_meta_close(M);

        char tmpl[] = "/tmp/ls_group_txn_XXXXXX", path[300], err[256];
        if (!mkdtemp(tmpl)) {
            perror("mkdtemp");
            return 1;
        }
        snprintf(path, sizeof path, "%s/meta.db", tmpl);
        printf("# backend sqlite (%s)\n", path);
        M = ls_meta_sqlite_open(path, err, sizeof err);
        if (!M) {
            printf("FAIL open sqlite: %s\n", err);
            return 1;
        }
        run_suite();
        ls_meta_close(M);
        char cmd[400];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpl);
        if (system(cmd) != 0) printf("# could not remove %s\n", tmpl);
    }
    if (etcd && *etcd) {
        /* a fresh prefix per run: earlier runs' groups and topics stay out */
        char url[512], err[256];
        unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid() << 16;
        snprintf(url, sizeof url, "%s%sgtxn-%08x", etcd,
                 strchr(etcd + 7, '/') ? (etcd[strlen(etcd) - 1] == '/' ? "" : "-") : "/",
                 (unsigned)rand_r(&seed));
        printf("# backend etcd (%s)\n", url);
        M = ls_meta_open(url, err, sizeof err);
        if (!M) {
            printf("FAIL open etcd: %s\n", err);
            return 1;
        }
        RACE_ROUNDS = 300;
        run_suite();
        ls_meta_close(M);
    }
    UNIT_DONE();
}
