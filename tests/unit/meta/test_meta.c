/* Metadata KV contract tests: one suite run against the mem backend and the
 * sqlite backend (a file in a mkdtemp directory), then sqlite-only reopen
 * tests and watch-hub history tests. With LS_TEST_ETCD_URL set (tests/run.sh
 * starts etcd via tools/etcd/etcd.sh) the suite also runs against etcd, under
 * a fresh random key prefix, followed by etcd-only tests. With LS_TEST_PG_URL
 * set (tools/pg/pg.sh) it runs against PostgreSQL too, in a fresh database,
 * followed by PostgreSQL-only tests. */
#include <inttypes.h>
#include <libpq-fe.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/diag.h"
#include "meta/meta_backend.h"
#include "meta/meta_etcd.h"
#include "unit.h"

static ls_meta_t *M; /* the store under test */
static char dir[256];

static ls_status put(const char *k, const char *v) { return ls_meta_put(M, k, v, strlen(v)); }

static int64_t cur_rev(void)
{
    ls_kvlist_t l;
    if (ls_meta_scan(M, "\xff\xff", 2, NULL, 0, 1, 0, &l) != LS_OK) return -1;
    int64_t r = l.revision;
    ls_kvlist_free(&l);
    return r;
}

/* 1 if key holds exactly val. */
static int has(const char *k, const char *v)
{
    ls_kv_t kv;
    if (ls_meta_get(M, k, &kv) != LS_OK) return 0;
    int ok = kv.vlen == strlen(v) && memcmp(kv.val, v, kv.vlen) == 0 && kv.val[kv.vlen] == 0;
    ls_kv_free(&kv);
    return ok;
}

static int absent(const char *k)
{
    ls_kv_t kv;
    ls_status st = ls_meta_get(M, k, &kv);
    if (st == LS_OK) ls_kv_free(&kv);
    return st == LS_ENOTFOUND;
}

/* ---- watch collector: records events, lets a test await a count ---- */

typedef struct rec_ev {
    ls_meta_ev_kind kind;
    char key[64];
    char val[64];
    int64_t mod_rev;
} rec_ev_t;

typedef struct collector {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    rec_ev_t ev[256];
    int n;
    int calls;
    int compacted;
    int cancel_self; /* cancel own watch from inside the callback */
    ls_meta_watch_t *self;
    ls_meta_t *meta;
} collector_t;

static void col_init(collector_t *c)
{
    memset(c, 0, sizeof *c);
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
}

static void col_destroy(collector_t *c)
{
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->mu);
}

static void col_cb(void *arg, const ls_meta_event_t *ev, size_t n)
{
    collector_t *c = arg;
    pthread_mutex_lock(&c->mu);
    c->calls++;
    if (!ev) c->compacted++;
    for (size_t i = 0; i < n && c->n < 256; i++) {
        rec_ev_t *r = &c->ev[c->n++];
        r->kind = ev[i].kind;
        snprintf(r->key, sizeof r->key, "%.*s", (int)ev[i].kv.klen, (const char *)ev[i].kv.key);
        snprintf(r->val, sizeof r->val, "%.*s", (int)ev[i].kv.vlen,
                 ev[i].kv.val ? (const char *)ev[i].kv.val : "");
        r->mod_rev = ev[i].kv.mod_rev;
    }
    pthread_cond_broadcast(&c->cv);
    int cancel = c->cancel_self && c->self;
    pthread_mutex_unlock(&c->mu);
    if (cancel) {
        ls_meta_watch_cancel(c->meta, c->self);
        c->self = NULL;
    }
}

/* Waits until at least n events (or, with n < 0, a compacted signal) arrived. */
static int col_wait(collector_t *c, int n, int timeout_ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += timeout_ms / 1000;
    ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
    if (ts.tv_nsec >= 1000000000) ts.tv_sec++, ts.tv_nsec -= 1000000000;
    pthread_mutex_lock(&c->mu);
    while (n >= 0 ? c->n < n : !c->compacted)
        if (pthread_cond_timedwait(&c->cv, &c->mu, &ts) != 0) break;
    int ok = n >= 0 ? c->n >= n : c->compacted > 0;
    pthread_mutex_unlock(&c->mu);
    return ok;
}

/* ---- the shared suite ---- */

TEST(get_put_basic)
{
    CHECK(absent("g/a"));
    CHECK_EQ_INT(put("g/a", "one"), LS_OK);
    ls_kv_t kv;
    CHECK_EQ_INT(ls_meta_get(M, "g/a", &kv), LS_OK);
    int64_t c1 = kv.create_rev, m1 = kv.mod_rev;
    CHECK(kv.vlen == 3 && memcmp(kv.val, "one", 4) == 0); /* NUL-terminated */
    CHECK(kv.klen == 3 && strcmp((char *)kv.key, "g/a") == 0);
    ls_kv_free(&kv);
    CHECK(c1 > 0 && c1 == m1);
    CHECK_EQ_INT(cur_rev(), m1);
    CHECK_EQ_INT(put("g/a", "two"), LS_OK);
    CHECK_EQ_INT(ls_meta_get(M, "g/a", &kv), LS_OK);
    CHECK_EQ_INT(kv.create_rev, c1);
    CHECK(kv.mod_rev > m1);
    ls_kv_free(&kv);
    CHECK(has("g/a", "two"));
    /* empty value */
    CHECK_EQ_INT(ls_meta_put(M, "g/empty", NULL, 0), LS_OK);
    CHECK(has("g/empty", ""));
    /* binary value with NUL bytes */
    CHECK_EQ_INT(ls_meta_put(M, "g/bin", "a\0b", 3), LS_OK);
    CHECK_EQ_INT(ls_meta_get(M, "g/bin", &kv), LS_OK);
    int ok = kv.vlen == 3 && memcmp(kv.val, "a\0b", 3) == 0;
    ls_kv_free(&kv);
    CHECK(ok);
    /* delete; deleting again is fine and creates no revision */
    CHECK_EQ_INT(ls_meta_del(M, "g/a"), LS_OK);
    CHECK(absent("g/a"));
    int64_t r = cur_rev();
    CHECK_EQ_INT(ls_meta_del(M, "g/a"), LS_OK);
    CHECK_EQ_INT(cur_rev(), r);
    /* empty key is invalid */
    CHECK_EQ_INT(ls_meta_get_bytes(M, "", 0, &kv), LS_EINVAL);
    CHECK_EQ_INT(ls_meta_put(M, "", "x", 1), LS_EINVAL);
}

static int list_is(const ls_kvlist_t *l, const char *const *want, size_t n)
{
    if (l->n != n) return 0;
    for (size_t i = 0; i < n; i++)
        if (l->v[i].klen != strlen(want[i]) || memcmp(l->v[i].key, want[i], l->v[i].klen) != 0)
            return 0;
    return 1;
}

TEST(scan_limits_reverse_ranges)
{
    for (int i = 9; i >= 0; i--) {
        char k[16], v[16];
        snprintf(k, sizeof k, "s/k%02d", i);
        snprintf(v, sizeof v, "v%d", i);
        CHECK_EQ_INT(put(k, v), LS_OK);
    }
    CHECK_EQ_INT(put("s0", "outside"), LS_OK);
    ls_kvlist_t l;
    CHECK_EQ_INT(ls_meta_scan(M, "s/k02", 5, "s/k05", 5, 0, 0, &l), LS_OK);
    const char *w1[] = {"s/k02", "s/k03", "s/k04"};
    int ok = list_is(&l, w1, 3) && !l.more && l.revision == cur_rev();
    ok = ok && l.v[0].vlen == 2 && memcmp(l.v[0].val, "v2", 2) == 0;
    ls_kvlist_free(&l);
    CHECK(ok);

    CHECK_EQ_INT(ls_meta_scan(M, "s/k02", 5, "s/k05", 5, 2, 0, &l), LS_OK);
    const char *w2[] = {"s/k02", "s/k03"};
    ok = list_is(&l, w2, 2) && l.more;
    ls_kvlist_free(&l);
    CHECK(ok);

    CHECK_EQ_INT(ls_meta_scan(M, "s/k02", 5, "s/k05", 5, 3, 0, &l), LS_OK);
    ok = l.n == 3 && !l.more; /* exactly the limit: nothing more */
    ls_kvlist_free(&l);
    CHECK(ok);

    CHECK_EQ_INT(ls_meta_scan(M, "s/", 2, "s0", 2, 2, 1, &l), LS_OK);
    const char *w3[] = {"s/k09", "s/k08"};
    ok = list_is(&l, w3, 2) && l.more;
    ls_kvlist_free(&l);
    CHECK(ok);

    /* no upper bound: NULL end, or an empty one */
    CHECK_EQ_INT(ls_meta_scan(M, "s/k08", 5, NULL, 0, 0, 0, &l), LS_OK);
    ok = l.n >= 3 && strcmp((char *)l.v[2].key, "s0") == 0;
    ls_kvlist_free(&l);
    CHECK(ok);
    CHECK_EQ_INT(ls_meta_scan(M, "s/k08", 5, "", 0, 0, 0, &l), LS_OK);
    ok = l.n >= 3 && strcmp((char *)l.v[2].key, "s0") == 0;
    ls_kvlist_free(&l);
    CHECK(ok);

    CHECK_EQ_INT(ls_meta_scan_prefix(M, "s/", 0, &l), LS_OK);
    ok = l.n == 10 && strcmp((char *)l.v[9].key, "s/k09") == 0;
    ls_kvlist_free(&l);
    CHECK(ok);

    /* empty range */
    CHECK_EQ_INT(ls_meta_scan(M, "s/k05", 5, "s/k02", 5, 0, 0, &l), LS_OK);
    ok = l.n == 0 && !l.more;
    ls_kvlist_free(&l);
    CHECK(ok);

    /* bytewise order: 0x00 < 'a' < 0x7f < 0x80 < 0xff, shorter first */
    CHECK_EQ_INT(ls_meta_put(M, "b/\xff", "4", 1), LS_OK);
    CHECK_EQ_INT(ls_meta_put(M, "b/\x80", "3", 1), LS_OK);
    CHECK_EQ_INT(ls_meta_put(M, "b/a", "2", 1), LS_OK);
    CHECK_EQ_INT(ls_meta_put(M, "b/", "0", 1), LS_OK);
    ls_meta_op_t op = {.kind = LS_META_OP_PUT, .key = "b/\0", .klen = 3, .val = "1", .vlen = 1};
    CHECK_EQ_INT(ls_meta_txn(M, NULL, 0, &op, 1, NULL), LS_OK);
    CHECK_EQ_INT(ls_meta_scan_prefix(M, "b/", 0, &l), LS_OK);
    ok = l.n == 5 && l.v[0].klen == 2 && l.v[1].klen == 3 && l.v[1].key[2] == 0 &&
         l.v[2].key[2] == 'a' && l.v[3].key[2] == 0x80 && l.v[4].key[2] == 0xff;
    ls_kvlist_free(&l);
    CHECK(ok);
}

TEST(prefix_end)
{
    uint8_t out[8];
    CHECK_EQ_INT(ls_meta_prefix_end("ab", 2, out), 2);
    CHECK(out[0] == 'a' && out[1] == 'c');
    CHECK_EQ_INT(ls_meta_prefix_end("a\xff\xff", 3, out), 1);
    CHECK(out[0] == 'b');
    CHECK_EQ_INT(ls_meta_prefix_end("\xff", 1, out), 0);
    CHECK_EQ_INT(ls_meta_prefix_end("", 0, out), 0);
}

TEST(floor_ceiling)
{
    CHECK_EQ_INT(put("idx/0010", "a"), LS_OK);
    CHECK_EQ_INT(put("idx/0020", "b"), LS_OK);
    CHECK_EQ_INT(put("idx/0030", "c"), LS_OK);
    CHECK_EQ_INT(put("idw/9999", "below"), LS_OK);
    CHECK_EQ_INT(put("idy/0000", "above"), LS_OK);
    uint8_t hi[8];
    size_t hilen = ls_meta_prefix_end("idx/", 4, hi);
    ls_kv_t kv;
    CHECK_EQ_INT(ls_meta_ceiling(M, "idx/0015", 8, hi, hilen, &kv), LS_OK);
    int ok = strcmp((char *)kv.key, "idx/0020") == 0 && strcmp((char *)kv.val, "b") == 0;
    ls_kv_free(&kv);
    CHECK(ok);
    CHECK_EQ_INT(ls_meta_ceiling(M, "idx/0020", 8, hi, hilen, &kv), LS_OK);
    ok = strcmp((char *)kv.key, "idx/0020") == 0;
    ls_kv_free(&kv);
    CHECK(ok);
    CHECK_EQ_INT(ls_meta_ceiling(M, "idx/0031", 8, hi, hilen, &kv), LS_ENOTFOUND);
    CHECK_EQ_INT(ls_meta_ceiling(M, "idx/0031", 8, NULL, 0, &kv), LS_OK); /* unbounded */
    ok = strcmp((char *)kv.key, "idy/0000") == 0;
    ls_kv_free(&kv);
    CHECK(ok);

    CHECK_EQ_INT(ls_meta_floor(M, "idx/0025", 8, "idx/", 4, &kv), LS_OK);
    ok = strcmp((char *)kv.key, "idx/0020") == 0;
    ls_kv_free(&kv);
    CHECK(ok);
    CHECK_EQ_INT(ls_meta_floor(M, "idx/0020", 8, "idx/", 4, &kv), LS_OK); /* inclusive */
    ok = strcmp((char *)kv.key, "idx/0020") == 0;
    ls_kv_free(&kv);
    CHECK(ok);
    CHECK_EQ_INT(ls_meta_floor(M, "idx/0005", 8, "idx/", 4, &kv), LS_ENOTFOUND);
    CHECK_EQ_INT(ls_meta_floor(M, "idx/9999", 8, "idx/", 4, &kv), LS_OK);
    ok = strcmp((char *)kv.key, "idx/0030") == 0;
    ls_kv_free(&kv);
    CHECK(ok);
}

TEST(txn_atomic)
{
    CHECK_EQ_INT(put("t/a", "1"), LS_OK);
    int64_t r0 = cur_rev();
    ls_meta_cmp_t bad = {.kind = LS_META_CMP_MOD_REV, .key = "t/a", .klen = 3, .rev = r0 + 100};
    ls_meta_op_t ops[] = {
        {.kind = LS_META_OP_PUT, .key = "t/b", .klen = 3, .val = "2", .vlen = 1},
        {.kind = LS_META_OP_DEL, .key = "t/a", .klen = 3},
    };
    int64_t rev = -1;
    CHECK_EQ_INT(ls_meta_txn(M, &bad, 1, ops, 2, &rev), LS_ECONFLICT);
    CHECK(absent("t/b"));
    CHECK(has("t/a", "1"));
    CHECK_EQ_INT(cur_rev(), r0);

    /* value compares */
    ls_meta_cmp_t vno = {.kind = LS_META_CMP_VALUE, .key = "t/a", .klen = 3, .val = "9", .vlen = 1};
    CHECK_EQ_INT(ls_meta_txn(M, &vno, 1, ops, 2, NULL), LS_ECONFLICT);
    ls_meta_cmp_t vmissing = {
        .kind = LS_META_CMP_VALUE, .key = "t/zz", .klen = 4, .val = "", .vlen = 0};
    CHECK_EQ_INT(ls_meta_txn(M, &vmissing, 1, ops, 2, NULL), LS_ECONFLICT);
    /* several compares: all must hold */
    ls_meta_cmp_t two[] = {
        {.kind = LS_META_CMP_VALUE, .key = "t/a", .klen = 3, .val = "1", .vlen = 1},
        {.kind = LS_META_CMP_MOD_REV, .key = "t/new", .klen = 5, .rev = 1},
    };
    CHECK_EQ_INT(ls_meta_txn(M, two, 2, ops, 2, NULL), LS_ECONFLICT);
    two[1].rev = 0; /* absent key */
    CHECK_EQ_INT(ls_meta_txn(M, two, 2, ops, 2, &rev), LS_OK);
    CHECK_EQ_INT(rev, r0 + 1);
    CHECK(has("t/b", "2"));
    CHECK(absent("t/a"));
    /* both changes carry the one revision */
    ls_kv_t kv;
    CHECK_EQ_INT(ls_meta_get(M, "t/b", &kv), LS_OK);
    CHECK_EQ_INT(kv.mod_rev, rev);
    ls_kv_free(&kv);
}

TEST(revisions_monotonic)
{
    int64_t last = cur_rev();
    for (int i = 0; i < 20; i++) {
        char k[16];
        snprintf(k, sizeof k, "rv/%d", i % 3);
        ls_meta_op_t op = {
            .kind = LS_META_OP_PUT, .key = k, .klen = strlen(k), .val = "x", .vlen = 1};
        int64_t rev;
        CHECK_EQ_INT(ls_meta_txn(M, NULL, 0, &op, 1, &rev), LS_OK);
        CHECK_EQ_INT(rev, last + 1);
        last = rev;
    }
    /* a txn that changes nothing reports the current revision without a new one */
    ls_meta_op_t del = {.kind = LS_META_OP_DEL, .key = "rv/none", .klen = 7};
    int64_t rev;
    CHECK_EQ_INT(ls_meta_txn(M, NULL, 0, &del, 1, &rev), LS_OK);
    CHECK_EQ_INT(rev, last);
    CHECK_EQ_INT(ls_meta_txn(M, NULL, 0, NULL, 0, &rev), LS_OK);
    CHECK_EQ_INT(rev, last);
}

TEST(mod_rev_cas)
{
    CHECK_EQ_INT(put("cas/k", "v1"), LS_OK);
    ls_kv_t kv;
    CHECK_EQ_INT(ls_meta_get(M, "cas/k", &kv), LS_OK);
    int64_t seen = kv.mod_rev;
    ls_kv_free(&kv);
    ls_meta_cmp_t cmp = {.kind = LS_META_CMP_MOD_REV, .key = "cas/k", .klen = 5, .rev = seen};
    ls_meta_op_t op = {.kind = LS_META_OP_PUT, .key = "cas/k", .klen = 5, .val = "v2", .vlen = 2};
    CHECK_EQ_INT(ls_meta_txn(M, &cmp, 1, &op, 1, NULL), LS_OK);
    /* a second writer holding the same stale revision loses */
    op.val = "v3";
    CHECK_EQ_INT(ls_meta_txn(M, &cmp, 1, &op, 1, NULL), LS_ECONFLICT);
    CHECK(has("cas/k", "v2"));
    /* create-if-absent */
    cmp.rev = 0;
    CHECK_EQ_INT(ls_meta_txn(M, &cmp, 1, &op, 1, NULL), LS_ECONFLICT);
}

TEST(del_range)
{
    CHECK_EQ_INT(put("dr/a", "1"), LS_OK);
    CHECK_EQ_INT(put("dr/b", "2"), LS_OK);
    CHECK_EQ_INT(put("dr/c", "3"), LS_OK);
    CHECK_EQ_INT(put("ds/a", "4"), LS_OK);
    uint8_t end[8];
    size_t elen = ls_meta_prefix_end("dr/", 3, end);
    ls_meta_op_t op = {
        .kind = LS_META_OP_DEL_RANGE, .key = "dr/b", .klen = 4, .end = end, .elen = elen};
    int64_t r0 = cur_rev(), rev;
    CHECK_EQ_INT(ls_meta_txn(M, NULL, 0, &op, 1, &rev), LS_OK);
    CHECK_EQ_INT(rev, r0 + 1);
    CHECK(has("dr/a", "1"));
    CHECK(absent("dr/b"));
    CHECK(absent("dr/c"));
    CHECK(has("ds/a", "4"));
    op.key = "dr/";
    op.klen = 3;
    CHECK_EQ_INT(ls_meta_txn(M, NULL, 0, &op, 1, NULL), LS_OK);
    CHECK(absent("dr/a"));
    CHECK(has("ds/a", "4"));
    /* an empty range deletes nothing and makes no revision */
    CHECK_EQ_INT(ls_meta_txn(M, NULL, 0, &op, 1, &rev), LS_OK);
    CHECK_EQ_INT(rev, r0 + 2);
}

TEST(txn_rules)
{
    /* at most max_txn_ops compares + ops */
    CHECK_EQ_INT(ls_meta_max_txn_ops(M), 128);
    static char keys[130][16];
    static ls_meta_op_t ops[130];
    static ls_meta_cmp_t cmps[130];
    for (int i = 0; i < 130; i++) {
        snprintf(keys[i], sizeof keys[i], "mx/%03d", i);
        ops[i] = (ls_meta_op_t){
            .kind = LS_META_OP_PUT, .key = keys[i], .klen = 6, .val = "v", .vlen = 1};
        cmps[i] = (ls_meta_cmp_t){.kind = LS_META_CMP_MOD_REV, .key = keys[i], .klen = 6};
    }
    CHECK_EQ_INT(ls_meta_txn(M, NULL, 0, ops, 129, NULL), LS_EINVAL);
    CHECK(absent("mx/000"));
    CHECK_EQ_INT(ls_meta_txn(M, cmps, 64, ops, 65, NULL), LS_EINVAL);
    CHECK(absent("mx/000"));
    CHECK_EQ_INT(ls_meta_txn(M, cmps, 64, ops, 64, NULL), LS_OK);
    CHECK_EQ_INT(ls_meta_txn(M, NULL, 0, ops, 128, NULL), LS_OK);
    ls_kvlist_t l;
    CHECK_EQ_INT(ls_meta_scan_prefix(M, "mx/", 0, &l), LS_OK);
    int n = (int)l.n;
    ls_kvlist_free(&l);
    CHECK_EQ_INT(n, 128);
    /* one key written twice in a txn */
    ls_meta_op_t dup[2] = {ops[0], ops[0]};
    CHECK_EQ_INT(ls_meta_txn(M, NULL, 0, dup, 2, NULL), LS_EINVAL);
    uint8_t end[8];
    size_t elen = ls_meta_prefix_end("mx/", 3, end);
    dup[1] = (ls_meta_op_t){
        .kind = LS_META_OP_DEL_RANGE, .key = "mx/", .klen = 3, .end = end, .elen = elen};
    CHECK_EQ_INT(ls_meta_txn(M, NULL, 0, dup, 2, NULL), LS_EINVAL);
    CHECK(has("mx/000", "v"));
}

typedef struct counter_job {
    const char *key;
    int n;
    ls_status st;
} counter_job_t;

static void *counter_thread(void *arg)
{
    counter_job_t *j = arg;
    for (int i = 0; i < j->n && j->st == LS_OK; i++)
        j->st = ls_meta_counter_add(M, j->key, 1, NULL);
    return NULL;
}

TEST(counter_add)
{
    int64_t v;
    CHECK_EQ_INT(ls_meta_counter_add(M, "ctr/a", 1, &v), LS_OK);
    CHECK_EQ_INT(v, 1);
    CHECK_EQ_INT(ls_meta_counter_add(M, "ctr/a", 5, &v), LS_OK);
    CHECK_EQ_INT(v, 6);
    CHECK_EQ_INT(ls_meta_counter_add(M, "ctr/a", -2, &v), LS_OK);
    CHECK_EQ_INT(v, 4);
    CHECK(has("ctr/a", "4"));
    /* concurrent increments are never lost */
    counter_job_t jobs[4];
    pthread_t th[4];
    for (int i = 0; i < 4; i++) {
        jobs[i] = (counter_job_t){"ctr/b", 50, LS_OK};
        pthread_create(&th[i], NULL, counter_thread, &jobs[i]);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        CHECK_EQ_INT(jobs[i].st, LS_OK);
    }
    CHECK(has("ctr/b", "200"));
    CHECK_EQ_INT(put("ctr/bad", "12x"), LS_OK);
    ls_diag_set_level(LS_DIAG_ERROR + 1); /* the ERROR line is expected */
    ls_status st = ls_meta_counter_add(M, "ctr/bad", 1, &v);
    ls_diag_set_level(LS_DIAG_ERROR);
    CHECK_EQ_INT(st, LS_ECORRUPT);
}

TEST(leases)
{
    collector_t col;
    col_init(&col);
    ls_meta_watch_t *w = NULL;
    CHECK_EQ_INT(ls_meta_watch(M, "ls/", 3, 0, col_cb, &col, &w), LS_OK);

    int64_t lease;
    CHECK_EQ_INT(ls_meta_lease_grant(M, 0, &lease), LS_EINVAL);
    CHECK_EQ_INT(ls_meta_lease_grant(M, 200, &lease), LS_OK);
    ls_meta_op_t op = {
        .kind = LS_META_OP_PUT, .key = "ls/eph", .klen = 6, .val = "me", .vlen = 2, .lease = lease};
    CHECK_EQ_INT(ls_meta_txn(M, NULL, 0, &op, 1, NULL), LS_OK);
    CHECK_EQ_INT(put("ls/keep", "durable"), LS_OK);
    ls_kv_t kv;
    CHECK_EQ_INT(ls_meta_get(M, "ls/eph", &kv), LS_OK);
    CHECK_EQ_INT(kv.lease, lease);
    ls_kv_free(&kv);
    /* expiry deletes the key: await its DEL event */
    CHECK(col_wait(&col, 3, 5000));
    CHECK(col.ev[2].kind == LS_META_EV_DEL && strcmp(col.ev[2].key, "ls/eph") == 0);
    CHECK(absent("ls/eph"));
    CHECK(has("ls/keep", "durable"));
    CHECK_EQ_INT(ls_meta_lease_keepalive(M, lease), LS_ENOTFOUND);
    /* a PUT naming a dead lease fails whole */
    ls_meta_op_t two[2] = {
        {.kind = LS_META_OP_PUT, .key = "ls/x", .klen = 4, .val = "x", .vlen = 1},
        op,
    };
    CHECK_EQ_INT(ls_meta_txn(M, NULL, 0, two, 2, NULL), LS_ENOTFOUND);
    CHECK(absent("ls/x"));

    /* keepalive extends: 8 x 100 ms is well past the 400 ms TTL */
    CHECK_EQ_INT(ls_meta_lease_grant(M, 400, &lease), LS_OK);
    op.lease = lease;
    CHECK_EQ_INT(ls_meta_txn(M, NULL, 0, &op, 1, NULL), LS_OK);
    for (int i = 0; i < 8; i++) {
        usleep(100 * 1000);
        CHECK_EQ_INT(ls_meta_lease_keepalive(M, lease), LS_OK);
    }
    CHECK(has("ls/eph", "me"));
    /* revoke deletes at once */
    CHECK_EQ_INT(ls_meta_lease_revoke(M, lease), LS_OK);
    CHECK(absent("ls/eph"));
    CHECK_EQ_INT(ls_meta_lease_revoke(M, lease), LS_ENOTFOUND);
    CHECK_EQ_INT(ls_meta_lease_keepalive(M, lease), LS_ENOTFOUND);
    ls_meta_watch_cancel(M, w);
    col_destroy(&col);
}

TEST(watch_events)
{
    collector_t col;
    col_init(&col);
    int64_t r0 = cur_rev();
    ls_meta_watch_t *w = NULL;
    CHECK_EQ_INT(ls_meta_watch(M, "w/", 2, r0, col_cb, &col, &w), LS_OK);
    CHECK_EQ_INT(put("w/a", "1"), LS_OK);
    CHECK_EQ_INT(put("x/other", "no"), LS_OK);
    ls_meta_op_t ops[] = {
        {.kind = LS_META_OP_PUT, .key = "w/c", .klen = 3, .val = "3", .vlen = 1},
        {.kind = LS_META_OP_PUT, .key = "x/also", .klen = 6, .val = "no", .vlen = 2},
        {.kind = LS_META_OP_PUT, .key = "w/b", .klen = 3, .val = "2", .vlen = 1},
    };
    CHECK_EQ_INT(ls_meta_txn(M, NULL, 0, ops, 3, NULL), LS_OK);
    CHECK_EQ_INT(ls_meta_del(M, "w/a"), LS_OK);
    uint8_t end[8];
    size_t elen = ls_meta_prefix_end("w/", 2, end);
    ls_meta_op_t dr = {
        .kind = LS_META_OP_DEL_RANGE, .key = "w/", .klen = 2, .end = end, .elen = elen};
    CHECK_EQ_INT(ls_meta_txn(M, NULL, 0, &dr, 1, NULL), LS_OK);
    CHECK(col_wait(&col, 6, 5000));
    ls_meta_watch_cancel(M, w);
    CHECK_EQ_INT(col.n, 6);
    struct {
        ls_meta_ev_kind kind;
        const char *key;
        int64_t rev;
    } want[] = {
        {LS_META_EV_PUT, "w/a", r0 + 1}, {LS_META_EV_PUT, "w/c", r0 + 3},
        {LS_META_EV_PUT, "w/b", r0 + 3}, {LS_META_EV_DEL, "w/a", r0 + 4},
        {LS_META_EV_DEL, "w/b", r0 + 5}, {LS_META_EV_DEL, "w/c", r0 + 5},
    };
    for (int i = 0; i < 6; i++) {
        CHECK_EQ_INT(col.ev[i].kind, want[i].kind);
        CHECK(strcmp(col.ev[i].key, want[i].key) == 0);
        CHECK_EQ_INT(col.ev[i].mod_rev, want[i].rev);
    }
    CHECK(strcmp(col.ev[0].val, "1") == 0);
    CHECK_EQ_INT(col.calls, 4); /* one call per revision touching the prefix */

    /* a watch may start in the past: it replays retained history in order */
    collector_t late;
    col_init(&late);
    CHECK_EQ_INT(ls_meta_watch(M, "w/", 2, r0 + 3, col_cb, &late, &w), LS_OK);
    CHECK(col_wait(&late, 3, 5000));
    ls_meta_watch_cancel(M, w);
    CHECK_EQ_INT(late.n, 3);
    CHECK(late.ev[0].mod_rev == r0 + 4 && strcmp(late.ev[2].key, "w/c") == 0);
    col_destroy(&late);
    col_destroy(&col);
}

TEST(watch_cancel_inside_callback)
{
    collector_t col;
    col_init(&col);
    col.cancel_self = 1;
    col.meta = M;
    ls_meta_watch_t *w = NULL;
    pthread_mutex_lock(&col.mu);
    CHECK_EQ_INT(ls_meta_watch(M, "wc/", 3, 0, col_cb, &col, &w), LS_OK);
    col.self = w;
    pthread_mutex_unlock(&col.mu);
    CHECK_EQ_INT(put("wc/1", "a"), LS_OK);
    CHECK(col_wait(&col, 1, 5000));
    CHECK_EQ_INT(put("wc/2", "b"), LS_OK);
    /* a later watch on the same prefix proves the notifier moved past wc/2 */
    collector_t after;
    col_init(&after);
    CHECK_EQ_INT(ls_meta_watch(M, "wc/", 3, cur_rev() - 1, col_cb, &after, &w), LS_OK);
    CHECK(col_wait(&after, 1, 5000));
    ls_meta_watch_cancel(M, w);
    pthread_mutex_lock(&col.mu);
    int calls = col.calls;
    pthread_mutex_unlock(&col.mu);
    CHECK_EQ_INT(calls, 1);
    col_destroy(&after);
    col_destroy(&col);
}

static void run_suite(void)
{
    RUN(get_put_basic);
    RUN(scan_limits_reverse_ranges);
    RUN(prefix_end);
    RUN(floor_ceiling);
    RUN(txn_atomic);
    RUN(revisions_monotonic);
    RUN(mod_rev_cas);
    RUN(del_range);
    RUN(txn_rules);
    RUN(counter_add);
    RUN(leases);
    RUN(watch_events);
    RUN(watch_cancel_inside_callback);
}

/* ---- sqlite only ---- */

TEST(sqlite_reopen_persists)
{
    char path[300], err[256];
    snprintf(path, sizeof path, "%s/sub/dir/persist.db", dir);
    ls_meta_t *m = ls_meta_sqlite_open(path, err, sizeof err);
    CHECK(m != NULL);
    ls_meta_t *saved = M;
    M = m;
    int ok = put("p/a", "alpha") == LS_OK && put("p/b", "beta") == LS_OK &&
             ls_meta_counter_add(m, "p/ctr", 41, NULL) == LS_OK && ls_meta_del(m, "p/b") == LS_OK;
    int64_t rev = cur_rev();
    ls_kv_t kv;
    ok = ok && ls_meta_get(m, "p/a", &kv) == LS_OK;
    int64_t arev = ok ? kv.mod_rev : 0;
    if (ok) ls_kv_free(&kv);
    int64_t lease = 0;
    ok = ok && ls_meta_lease_grant(m, 60000, &lease) == LS_OK;
    ls_meta_close(m);
    M = saved;
    CHECK(ok);

    char url[320];
    snprintf(url, sizeof url, "sqlite://%s", path); /* absolute path: sqlite:///... */
    m = ls_meta_open(url, err, sizeof err);
    CHECK(m != NULL);
    M = m;
    int64_t v = 0;
    ok = has("p/a", "alpha") && absent("p/b") && cur_rev() == rev;
    ok = ok && ls_meta_get(m, "p/a", &kv) == LS_OK;
    if (ok) {
        ok = kv.mod_rev == arev && kv.create_rev == arev;
        ls_kv_free(&kv);
    }
    ok = ok && ls_meta_counter_add(m, "p/ctr", 1, &v) == LS_OK && v == 42;
    ok = ok && cur_rev() == rev + 1;
    /* the lease outlived the restart */
    ok = ok && ls_meta_lease_keepalive(m, lease) == LS_OK;
    /* history did not: watching from before the restart is refused */
    ls_meta_watch_t *w = NULL;
    collector_t col;
    col_init(&col);
    ls_status wst = ls_meta_watch(m, "p/", 2, rev - 1, col_cb, &col, &w);
    ls_status wst2 = ls_meta_watch(m, "p/", 2, 0, col_cb, &col, &w);
    int got = 0;
    if (wst2 == LS_OK) {
        put("p/c", "gamma");
        got = col_wait(&col, 1, 5000);
        ls_meta_watch_cancel(m, w);
    }
    ls_meta_close(m);
    M = saved;
    col_destroy(&col);
    CHECK(ok);
    CHECK_EQ_INT(wst, LS_ERANGE);
    CHECK_EQ_INT(wst2, LS_OK);
    CHECK(got);
}

TEST(open_urls)
{
    char err[256];
    ls_meta_t *m = ls_meta_open("mem://", err, sizeof err);
    CHECK(m != NULL && strcmp(ls_meta_backend_name(m), "mem") == 0);
    ls_meta_close(m);
    CHECK(ls_meta_open("etcd3://x", err, sizeof err) == NULL);
    CHECK(strstr(err, "etcd3://x") != NULL);
    char path[300];
    snprintf(path, sizeof path, "%s/not-a-db", dir);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    fputs("this is not an sqlite database, just some text long enough to be a header\n", f);
    fclose(f);
    CHECK(ls_meta_sqlite_open(path, err, sizeof err) == NULL);
}

/* ---- watch hub history ---- */

typedef struct gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int open, entered;
    collector_t *col;
} gate_t;

static void gated_cb(void *arg, const ls_meta_event_t *ev, size_t n)
{
    gate_t *g = arg;
    pthread_mutex_lock(&g->mu);
    g->entered = 1;
    pthread_cond_broadcast(&g->cv);
    while (!g->open)
        pthread_cond_wait(&g->cv, &g->mu);
    pthread_mutex_unlock(&g->mu);
    col_cb(g->col, ev, n);
}

static ls_meta_event_t *one_put(const char *key, int64_t rev)
{
    ls_meta_event_t *ev = LS_NEWN(ls_meta_event_t, 1);
    ev->kind = LS_META_EV_PUT;
    ls_kv_set(&ev->kv, key, strlen(key), "0123456789", 10);
    ev->kv.create_rev = ev->kv.mod_rev = rev;
    return ev;
}

TEST(hub_laggard_is_told)
{
    ls_meta_hub_t *h = ls_meta_hub_new(0, 1024);
    collector_t col, fresh;
    col_init(&col);
    col_init(&fresh);
    gate_t g = {.col = &col};
    pthread_mutex_init(&g.mu, NULL);
    pthread_cond_init(&g.cv, NULL);
    ls_meta_watch_t *w = NULL, *w2 = NULL;
    CHECK_EQ_INT(ls_meta_hub_watch(h, "", 0, 0, gated_cb, &g, &w), LS_OK);
    ls_meta_hub_publish(h, 1, one_put("k/1", 1), 1);
    pthread_mutex_lock(&g.mu);
    while (!g.entered)
        pthread_cond_wait(&g.cv, &g.mu);
    pthread_mutex_unlock(&g.mu);
    /* the callback is stuck on revision 1; push far more than 1 KiB of history */
    for (int r = 2; r <= 40; r++)
        ls_meta_hub_publish(h, r, one_put("k/x", r), 1);
    CHECK_EQ_INT(ls_meta_hub_watch(h, "", 0, 1, col_cb, &fresh, &w2), LS_ERANGE);
    CHECK_EQ_INT(ls_meta_hub_watch(h, "", 0, 39, col_cb, &fresh, &w2), LS_OK);
    pthread_mutex_lock(&g.mu);
    g.open = 1;
    pthread_cond_broadcast(&g.cv);
    pthread_mutex_unlock(&g.mu);
    CHECK(col_wait(&col, -1, 5000));
    CHECK(col_wait(&fresh, 1, 5000));
    ls_meta_hub_cancel(h, w);
    ls_meta_hub_cancel(h, w2);
    ls_meta_hub_free(h);
    CHECK_EQ_INT(col.n, 1); /* revision 1, then only the compacted signal */
    CHECK_EQ_INT(col.compacted, 1);
    CHECK_EQ_INT(fresh.ev[0].mod_rev, 40);
    pthread_cond_destroy(&g.cv);
    pthread_mutex_destroy(&g.mu);
    col_destroy(&col);
    col_destroy(&fresh);
}

/* ---- etcd only (LS_TEST_ETCD_URL) ---- */

static char etcd_url[512]; /* LS_TEST_ETCD_URL plus this run's random prefix */
static char etcd_ep[256];  /* its first endpoint */

TEST(etcd_prefix_isolation)
{
    /* two stores under sibling prefixes of one etcd do not see each other */
    char url2[600], err[256];
    snprintf(url2, sizeof url2, "%s-other", etcd_url);
    ls_meta_t *o = ls_meta_open(url2, err, sizeof err);
    CHECK(o != NULL);
    CHECK_EQ_INT(ls_meta_put(o, "iso/k", "theirs", 6), LS_OK);
    CHECK_EQ_INT(put("iso/k", "ours"), LS_OK);
    ls_kvlist_t l;
    CHECK_EQ_INT(ls_meta_scan_prefix(M, "", 0, &l), LS_OK);
    int n = 0;
    for (size_t i = 0; i < l.n; i++)
        n += strcmp((char *)l.v[i].key, "iso/k") == 0;
    int ok = n == 1;
    ls_kvlist_free(&l);
    CHECK(ok);
    CHECK(has("iso/k", "ours"));
    /* a range delete without bounds stays inside the prefix */
    ls_meta_op_t all = {.kind = LS_META_OP_DEL_RANGE};
    CHECK_EQ_INT(ls_meta_txn(o, NULL, 0, &all, 1, NULL), LS_OK);
    CHECK(has("iso/k", "ours"));
    ls_kv_t kv;
    CHECK_EQ_INT(ls_meta_get(o, "iso/k", &kv), LS_ENOTFOUND);
    ls_meta_close(o);
}

TEST(etcd_compacted_watch_is_erange)
{
    CHECK_EQ_INT(put("cp/a", "1"), LS_OK);
    int64_t r1 = cur_rev();
    CHECK_EQ_INT(put("cp/a", "2"), LS_OK);
    CHECK_EQ_INT(put("cp/a", "3"), LS_OK);
    int64_t r3 = cur_rev();
    CHECK_EQ_INT(ls_meta_etcd_compact(M, r3), LS_OK);
    collector_t col;
    col_init(&col);
    ls_meta_watch_t *w = NULL;
    CHECK_EQ_INT(ls_meta_watch(M, "cp/", 3, r1, col_cb, &col, &w), LS_ERANGE);
    /* the newest retained revision is still watchable */
    CHECK_EQ_INT(ls_meta_watch(M, "cp/", 3, r3 - 1, col_cb, &col, &w), LS_OK);
    CHECK(col_wait(&col, 1, 5000));
    ls_meta_watch_cancel(M, w);
    CHECK(strcmp(col.ev[0].val, "3") == 0 && col.ev[0].mod_rev == r3);
    col_destroy(&col);
}

TEST(etcd_failover_and_unreachable)
{
    /* a dead endpoint first: calls fail over to the live one */
    char url[700], err[256];
    const char *path = strchr(etcd_url + 7, '/');
    snprintf(url, sizeof url, "etcd://127.0.0.1:1,%s%s", etcd_ep, path);
    ls_meta_t *m = ls_meta_open(url, err, sizeof err);
    CHECK(m != NULL);
    CHECK_EQ_INT(ls_meta_put(m, "fo/k", "v", 1), LS_OK);
    ls_kv_t kv;
    CHECK_EQ_INT(ls_meta_get(m, "fo/k", &kv), LS_OK);
    ls_kv_free(&kv);
    collector_t col;
    col_init(&col);
    ls_meta_watch_t *w = NULL;
    CHECK_EQ_INT(ls_meta_watch(m, "fo/", 3, 0, col_cb, &col, &w), LS_OK);
    CHECK_EQ_INT(ls_meta_put(m, "fo/k", "w", 1), LS_OK);
    CHECK(col_wait(&col, 1, 5000));
    ls_meta_watch_cancel(m, w);
    col_destroy(&col);
    ls_meta_close(m);
    /* nothing listening: LS_EAGAIN, and the message names the endpoint */
    m = ls_meta_open("etcd://127.0.0.1:1/x", err, sizeof err);
    CHECK(m != NULL);
    CHECK_EQ_INT(ls_meta_get(m, "k", &kv), LS_EAGAIN);
    CHECK(strstr(ls_meta_error(m), "127.0.0.1:1") != NULL);
    CHECK_EQ_INT(ls_meta_put(m, "k", "v", 1), LS_EAGAIN);
    ls_meta_close(m);
    /* malformed URLs */
    CHECK(ls_meta_open("etcd:///x", err, sizeof err) == NULL);
    CHECK(ls_meta_open("etcd://hostonly/x", err, sizeof err) == NULL);
    CHECK(strstr(err, "hostonly") != NULL);
    CHECK(ls_meta_open("etcd://h:1,,h:2/x", err, sizeof err) == NULL);
}

/* The watch survives an etcd restart: it resumes after the last revision it
 * delivered (nothing lost, nothing twice) and unary calls reconnect. Needs
 * LS_TEST_ETCD_DIR (from tools/etcd/etcd.sh) and the script under the cwd. */
TEST(etcd_watch_resumes_after_restart)
{
    const char *d = getenv("LS_TEST_ETCD_DIR");
    if (!d || access("tools/etcd/etcd.sh", X_OK) != 0) {
        printf("# etcd_watch_resumes_after_restart: skipped (no LS_TEST_ETCD_DIR or script)\n");
        return;
    }
    collector_t col;
    col_init(&col);
    ls_meta_watch_t *w = NULL;
    CHECK_EQ_INT(ls_meta_watch(M, "rs/", 3, 0, col_cb, &col, &w), LS_OK);
    CHECK_EQ_INT(put("rs/1", "a"), LS_OK);
    CHECK(col_wait(&col, 1, 5000));
    char cmd[400];
    snprintf(cmd, sizeof cmd, "tools/etcd/etcd.sh restart '%s' >/dev/null", d);
    CHECK_EQ_INT(system(cmd), 0);
    CHECK_EQ_INT(put("rs/2", "b"), LS_OK);
    CHECK_EQ_INT(put("rs/3", "c"), LS_OK);
    int got = col_wait(&col, 3, 10000);
    usleep(200 * 1000); /* a duplicate would arrive right behind */
    ls_meta_watch_cancel(M, w);
    CHECK(got);
    CHECK_EQ_INT(col.n, 3);
    CHECK(strcmp(col.ev[1].key, "rs/2") == 0 && strcmp(col.ev[2].key, "rs/3") == 0);
    CHECK(col.ev[0].mod_rev < col.ev[1].mod_rev && col.ev[1].mod_rev < col.ev[2].mod_rev);
    col_destroy(&col);
}

/* Runs the shared suite and the etcd-only tests when LS_TEST_ETCD_URL is set. */
static int run_etcd(void)
{
    const char *base = getenv("LS_TEST_ETCD_URL");
    if (!base || !*base) {
        printf("# backend etcd: skipped (LS_TEST_ETCD_URL not set)\n");
        return 0;
    }
    unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid() << 16;
    snprintf(etcd_url, sizeof etcd_url, "%s%srun-%08x", base,
             strchr(base + 7, '/') ? (base[strlen(base) - 1] == '/' ? "" : "-") : "/",
             (unsigned)rand_r(&seed));
    const char *h = strncmp(base, "etcd://", 7) == 0 ? base + 7 : base;
    size_t hl = strcspn(h, ",/");
    snprintf(etcd_ep, sizeof etcd_ep, "%.*s", (int)hl, h);
    char err[256];
    printf("# backend etcd (%s)\n", etcd_url);
    M = ls_meta_open(etcd_url, err, sizeof err);
    if (!M) {
        printf("FAIL open etcd: %s\n", err);
        return 1;
    }
    run_suite();
    RUN(etcd_prefix_isolation);
    RUN(etcd_compacted_watch_is_erange);
    RUN(etcd_failover_and_unreachable);
    RUN(etcd_watch_resumes_after_restart);
    ls_meta_close(M);
    M = NULL;
    return 0;
}

/* ---- PostgreSQL only (LS_TEST_PG_URL, from tools/pg/pg.sh) ---- */

static char pg_url[512]; /* this run's own database on the LS_TEST_PG_URL server */

/* Runs one SQL statement on the run's database, outside the backend (to
 * fake what another writer or an operator would do). 1 when it succeeded. */
static int pg_sql(const char *url, const char *sql)
{
    char conninfo[600];
    snprintf(conninfo, sizeof conninfo, "%s", url);
    PGconn *c = PQconnectdb(conninfo);
    int ok = PQstatus(c) == CONNECTION_OK;
    if (ok) {
        PGresult *r = PQexec(c, sql);
        ok = PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK;
        if (!ok) printf("# pg_sql %s: %s", sql, PQresultErrorMessage(r));
        PQclear(r);
    }
    PQfinish(c);
    return ok;
}

/* Two stores on one database are one cluster: a write through one is read
 * and watched through the other, and a lease of a store that went away
 * without revoking (a killed broker) is reaped by the other. */
TEST(pg_two_stores_one_database)
{
    char err[256];
    ls_meta_t *a = ls_meta_open(pg_url, err, sizeof err);
    CHECK(a != NULL);
    collector_t col;
    col_init(&col);
    ls_meta_watch_t *w = NULL;
    CHECK_EQ_INT(ls_meta_watch(M, "two/", 4, 0, col_cb, &col, &w), LS_OK);
    int64_t lease = 0;
    CHECK_EQ_INT(ls_meta_lease_grant(a, 300, &lease), LS_OK);
    ls_meta_op_t op = {
        .kind = LS_META_OP_PUT, .key = "two/eph", .klen = 7, .val = "a", .vlen = 1, .lease = lease};
    CHECK_EQ_INT(ls_meta_txn(a, NULL, 0, &op, 1, NULL), LS_OK);
    CHECK(has("two/eph", "a"));
    /* compare-and-set across stores: a stale mod_rev loses */
    ls_kv_t kv;
    CHECK_EQ_INT(ls_meta_get(M, "two/eph", &kv), LS_OK);
    int64_t mr = kv.mod_rev;
    ls_kv_free(&kv);
    ls_meta_cmp_t cmp = {.kind = LS_META_CMP_MOD_REV, .key = "two/k", .klen = 5, .rev = 0};
    ls_meta_op_t put1 = {.kind = LS_META_OP_PUT, .key = "two/k", .klen = 5, .val = "1", .vlen = 1};
    CHECK_EQ_INT(ls_meta_txn(a, &cmp, 1, &put1, 1, NULL), LS_OK);
    CHECK_EQ_INT(ls_meta_txn(M, &cmp, 1, &put1, 1, NULL), LS_ECONFLICT);
    ls_meta_close(a); /* gone without revoking: the lease must still expire */
    CHECK(col_wait(&col, 3, 10000));
    CHECK(col.ev[0].kind == LS_META_EV_PUT && strcmp(col.ev[0].key, "two/eph") == 0);
    CHECK(col.ev[0].mod_rev == mr);
    CHECK(col.ev[2].kind == LS_META_EV_DEL && strcmp(col.ev[2].key, "two/eph") == 0);
    CHECK(absent("two/eph"));
    CHECK(has("two/k", "1"));
    ls_meta_watch_cancel(M, w);
    col_destroy(&col);
}

/* A watch from before the pruned history is LS_ERANGE, as etcd's compaction. */
TEST(pg_compacted_watch_is_erange)
{
    CHECK_EQ_INT(put("cw/a", "1"), LS_OK);
    int64_t r1 = cur_rev();
    CHECK_EQ_INT(put("cw/a", "2"), LS_OK);
    char sql[200];
    snprintf(sql, sizeof sql,
             "UPDATE ls_meta SET ival = %lld WHERE name = 'compacted';"
             "DELETE FROM ls_events WHERE rev <= %lld",
             (long long)r1, (long long)r1);
    CHECK(pg_sql(pg_url, sql));
    collector_t col;
    col_init(&col);
    ls_meta_watch_t *w = NULL;
    CHECK_EQ_INT(ls_meta_watch(M, "cw/", 3, r1 - 1, col_cb, &col, &w), LS_ERANGE);
    CHECK(strstr(ls_meta_error(M), "compacted") != NULL);
    CHECK_EQ_INT(ls_meta_watch(M, "cw/", 3, r1, col_cb, &col, &w), LS_OK);
    CHECK(col_wait(&col, 1, 5000));
    CHECK(strcmp(col.ev[0].val, "2") == 0);
    ls_meta_watch_cancel(M, w);
    col_destroy(&col);
}

TEST(pg_url_refusals)
{
    char err[256], url[600];
    const char *host = strstr(pg_url, "@") + 1;
    snprintf(url, sizeof url, "postgresql://u:secret@%s", host);
    CHECK(ls_meta_open(url, err, sizeof err) == NULL);
    CHECK(strstr(err, "password-file") != NULL && strstr(err, "secret") == NULL);
    snprintf(url, sizeof url, "%s?password=secret", pg_url);
    CHECK(ls_meta_open(url, err, sizeof err) == NULL);
    CHECK(strstr(err, "password-file") != NULL && strstr(err, "secret") == NULL);
    snprintf(url, sizeof url, "%s?sslmode=disable&target_session_attrs=any", pg_url);
    CHECK(ls_meta_open(url, err, sizeof err) == NULL);
    CHECK(strstr(err, "target_session_attrs") != NULL);
    snprintf(url, sizeof url, "%s?password-file=/nonexistent/pw", pg_url);
    CHECK(ls_meta_open(url, err, sizeof err) == NULL);
    CHECK(strstr(err, "/nonexistent/pw") != NULL);
    CHECK(ls_meta_open("postgresql://u@hostonly/db", err, sizeof err) == NULL);
    CHECK(strstr(err, "host:port") != NULL);
    CHECK(ls_meta_open("postgres://u@127.0.0.1:1/db", err, sizeof err) == NULL);
    CHECK(strstr(err, "127.0.0.1:1") != NULL);
    /* accepted options are applied: application_name shows in the server's view */
    snprintf(url, sizeof url, "%s?application_name=ls-probe&connect_timeout=3&sslmode=disable",
             pg_url);
    ls_meta_t *m = ls_meta_open(url, err, sizeof err);
    CHECK(m != NULL);
    CHECK(pg_sql(pg_url, "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE "
                         "application_name = 'ls-probe') THEN RAISE 'not seen'; END IF; END $$"));
    ls_meta_close(m);
}

/* The server goes away mid-run: calls fail cleanly (LS_EAGAIN, naming the
 * server), and after it returns the store works again and a watch resumes
 * without losing an event. Needs LS_TEST_PG_DIR and tools/pg/pg.sh. */
TEST(pg_server_restart)
{
    const char *d = getenv("LS_TEST_PG_DIR");
    if (!d || access("tools/pg/pg.sh", X_OK) != 0) {
        printf("# pg_server_restart: skipped (no LS_TEST_PG_DIR or script)\n");
        return;
    }
    collector_t col;
    col_init(&col);
    ls_meta_watch_t *w = NULL;
    CHECK_EQ_INT(ls_meta_watch(M, "rs/", 3, 0, col_cb, &col, &w), LS_OK);
    CHECK_EQ_INT(put("rs/1", "before"), LS_OK);
    CHECK(col_wait(&col, 1, 5000));
    char cmd[600];
    snprintf(cmd, sizeof cmd, "tools/pg/pg.sh kill '%s' >/dev/null", d);
    CHECK(system(cmd) == 0);
    ls_status st = put("rs/2", "down");
    CHECK(st == LS_EAGAIN || st == LS_EIO);
    CHECK(strncmp(ls_meta_error(M), "postgresql 127.0.0.1:", 21) == 0);
    snprintf(cmd, sizeof cmd, "tools/pg/pg.sh restart '%s' >/dev/null", d);
    CHECK(system(cmd) == 0);
    CHECK_EQ_INT(put("rs/3", "after"), LS_OK);
    CHECK(col_wait(&col, 2, 10000));
    CHECK(strcmp(col.ev[col.n - 1].key, "rs/3") == 0);
    ls_meta_watch_cancel(M, w);
    col_destroy(&col);
}

/* A server that stops answering with its connections open (paused) does not
 * hang calls: they fail with LS_EAGAIN after the request timeout, and work
 * again once it answers. */
TEST(pg_paused_server_times_out)
{
    const char *d = getenv("LS_TEST_PG_DIR");
    if (!d || access("tools/pg/pg.sh", X_OK) != 0) {
        printf("# pg_paused_server_times_out: skipped (no LS_TEST_PG_DIR or script)\n");
        return;
    }
    CHECK_EQ_INT(put("ps/1", "before"), LS_OK);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "tools/pg/pg.sh pause '%s'", d);
    CHECK(system(cmd) == 0);
    ls_status st = put("ps/2", "paused");
    snprintf(cmd, sizeof cmd, "tools/pg/pg.sh resume '%s'", d);
    CHECK(system(cmd) == 0);
    CHECK(st == LS_EAGAIN || st == LS_EIO);
    CHECK(strstr(ls_meta_error(M), "127.0.0.1:") != NULL);
    CHECK_EQ_INT(put("ps/3", "after"), LS_OK);
    CHECK(has("ps/3", "after"));
}

/* Runs the shared suite and the PostgreSQL-only tests on a fresh database of
 * the LS_TEST_PG_URL server. */
static int run_pg(void)
{
    const char *base = getenv("LS_TEST_PG_URL");
    if (!base || !*base) {
        printf("# backend postgresql: skipped (LS_TEST_PG_URL not set)\n");
        return 0;
    }
    unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid() << 16;
    char db[32], sql[80];
    snprintf(db, sizeof db, "run_%08x", (unsigned)rand_r(&seed));
    snprintf(sql, sizeof sql, "CREATE DATABASE %s", db);
    if (!pg_sql(base, sql)) {
        printf("FAIL create database %s on %s\n", db, base);
        return 1;
    }
    const char *slash = strchr(strstr(base, "://") + 3, '/');
    snprintf(pg_url, sizeof pg_url, "%.*s/%s", (int)(slash - base), base, db);
    char err[256];
    printf("# backend postgresql (%s)\n", pg_url);
    M = ls_meta_open(pg_url, err, sizeof err);
    if (!M) {
        printf("FAIL open postgresql: %s\n", err);
        return 1;
    }
    run_suite();
    RUN(pg_two_stores_one_database);
    RUN(pg_compacted_watch_is_erange);
    RUN(pg_url_refusals);
    RUN(pg_server_restart);
    RUN(pg_paused_server_times_out);
    ls_meta_close(M);
    M = NULL;
    return 0;
}

/* Error detail is per thread: a failed call on one thread leaves another
 * thread's detail alone (issue 12 §4: one shared buffer let a thread report
 * another's error). */
static void *fail_in_thread(void *arg)
{
    ls_meta_t *m = arg;
    ls_meta_op_t op = {.kind = LS_META_OP_PUT, .key = "", .klen = 0, .val = "v", .vlen = 1};
    ls_status st = ls_meta_txn(m, NULL, 0, &op, 1, NULL);
    return (void *)(intptr_t)(st != LS_OK && strstr(ls_meta_error(m), "invalid txn") != NULL);
}

TEST(error_detail_is_per_thread)
{
    ls_meta_t *m = ls_meta_mem_open();
    ls_meta_errbuf()[0] = 0;
    pthread_t th;
    void *ok = NULL;
    pthread_create(&th, NULL, fail_in_thread, m);
    pthread_join(th, &ok);
    CHECK(ok != NULL);
    CHECK_EQ_INT((int)strlen(ls_meta_error(m)), 0);
    ls_meta_close(m);
}

int main(void)
{
    ls_diag_set_level(LS_DIAG_ERROR);
    char tmpl[] = "/tmp/ls_meta_XXXXXX";
    if (!mkdtemp(tmpl)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(dir, sizeof dir, "%s", tmpl);

    /* LS_TEST_META_ONLY=etcd or =pg: just that backend's part (tests/run.sh's
     * etcd and postgresql stages, after the unit stage already ran the rest) */
    const char *only = getenv("LS_TEST_META_ONLY");
    if (!only) {
        printf("# backend mem\n");
        M = ls_meta_mem_open();
        run_suite();
        ls_meta_close(M);

        char path[300], err[256];
        snprintf(path, sizeof path, "%s/suite.db", dir);
        printf("# backend sqlite (%s)\n", path);
        M = ls_meta_sqlite_open(path, err, sizeof err);
        if (!M) {
            printf("FAIL open sqlite: %s\n", err);
            return 1;
        }
        run_suite();
        ls_meta_close(M);
        M = NULL;

        RUN(error_detail_is_per_thread);
        RUN(sqlite_reopen_persists);
        RUN(open_urls);
        RUN(hub_laggard_is_told);
    }
    if ((!only || !strcmp(only, "etcd")) && run_etcd() != 0) return 1;
    if ((!only || !strcmp(only, "pg")) && run_pg() != 0) return 1;

    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) printf("# could not remove %s\n", dir);
    UNIT_DONE();
}
