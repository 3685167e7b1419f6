/* Log storage: append/commit order, reads across WAL objects, recovery from
 * the stores alone (cache-miss path), idempotent sequences, fence, GC of
 * uncommitted objects (one collector per cluster, never before serving),
 * failed flushes (via a failing object-store twin), and pipelined flushes
 * (via a metadata twin whose commits the test holds and fails). */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>
#include <uv.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/check.h"
#include "log/logstore.h"
#include "log/logstore_int.h"
#include "meta/meta_backend.h"
#include "meta/meta_faulty.h"
#include "objstore/objstore_faulty.h"
#include "unit.h"
#include "uv_hold.h"

static uv_loop_t loop;

/* An object store that delegates to mem but fails PUTs while fail_puts > 0. */
typedef struct {
    ls_objstore_t base;
    ls_objstore_t *inner;
    int fail_puts;
} failing_os_t;

static ls_status f_put(ls_objstore_t *os, const char *k, const struct iovec *iov, int n, int fl)
{
    failing_os_t *f = (failing_os_t *)os;
    if (__atomic_load_n(&f->fail_puts, __ATOMIC_SEQ_CST) > 0) return LS_EIO;
    return ls_objstore_put(f->inner, k, iov, n, fl);
}
static ls_status f_get(ls_objstore_t *os, const char *k, uint64_t o, uint64_t l, ls_buf_t *out)
{
    return ls_objstore_get(((failing_os_t *)os)->inner, k, o, l, out);
}
static ls_status f_head(ls_objstore_t *os, const char *k, ls_objinfo_t *i)
{
    return ls_objstore_head(((failing_os_t *)os)->inner, k, i);
}
static ls_status f_del(ls_objstore_t *os, const char *k)
{
    return ls_objstore_del(((failing_os_t *)os)->inner, k);
}
static ls_status f_list(ls_objstore_t *os, const char *p, ls_objinfo_t **o, size_t *n)
{
    return ls_objstore_list(((failing_os_t *)os)->inner, p, o, n);
}
static void f_close(ls_objstore_t *os) { ls_free(os); }
static const ls_objstore_ops_t failing_ops = {.name = "failing",
                                              .put = f_put,
                                              .get = f_get,
                                              .head = f_head,
                                              .del = f_del,
                                              .list = f_list,
                                              .close = f_close};

/* A RecordBatch-shaped entry: only framing, lastOffsetDelta and maxTimestamp
 * matter to log storage. */
static size_t make_entry(uint8_t *out, int records, int64_t max_ts, uint8_t fill, int payload)
{
    size_t len = 61 + (size_t)payload;
    memset(out, 0, len);
    ls_be64_put(out, 0);
    ls_be32_put(out + 8, (uint32_t)(len - 12));
    out[16] = 2;
    ls_be32_put(out + 23, (uint32_t)(records - 1));
    ls_be64_put(out + 27, (uint64_t)max_ts);
    ls_be64_put(out + 35, (uint64_t)max_ts);
    ls_be32_put(out + 57, (uint32_t)records);
    memset(out + 61, fill, (size_t)payload);
    return len;
}

typedef struct {
    int done;
    ls_status st;
    int64_t offset;
} ack_t;

static void on_ack(void *arg, ls_status st, int64_t base, int64_t start)
{
    ack_t *a = arg;
    a->done++;
    a->st = st;
    a->offset = base;
}

static void run_until(int *flag, int want)
{
    for (int i = 0; i < 100000 && *flag < want; i++)
        uv_run(&loop, UV_RUN_ONCE);
}

typedef struct {
    int done;
    ls_read_result_t res;
} readres_t;

static void on_read(void *arg, ls_read_result_t *res)
{
    readres_t *r = arg;
    r->res = *res;
    r->done = 1;
}

static readres_t read_sync(ls_logstore_t *ls, int64_t log, int64_t off, size_t max)
{
    readres_t r = {0};
    ls_logstore_read(ls, log, off, max, on_read, &r);
    run_until(&r.done, 1);
    return r;
}

static ls_logstore_config_t cfg(void)
{
    ls_logstore_config_t c = {.flush_max_bytes = 1 << 20,
                              .flush_linger_ms = 5,
                              .flush_min_interval_ms = 0,
                              .max_inflight_flushes = 4,
                              .buffer_max_bytes = 64 << 20,
                              .read_cache_max_bytes = 64 << 20,
                              .gc_grace_ms = 3600000,
                              .broker_id = 1};
    return c;
}

static void shutdown_done(void *arg) { *(int *)arg = 1; }

static void close_ls(ls_logstore_t *ls)
{
    int done = 0;
    ls_logstore_shutdown(ls, shutdown_done, &done);
    run_until(&done, 1);
    ls_logstore_free(ls);
}

static ls_append_t app(int64_t log, const uint8_t *b, size_t len, int records, int64_t ts)
{
    ls_append_t a = {.log_id = log,
                     .data = b,
                     .len = len,
                     .offset_count = records,
                     .max_timestamp = ts,
                     .producer = {.producer_id = -1}};
    return a;
}

TEST(append_read_recover)
{
    ls_meta_t *meta = ls_meta_mem_open();
    ls_objstore_t *os = ls_objstore_mem_open();
    ls_logstore_config_t c = cfg();
    char err[256];
    ls_logstore_t *ls = ls_logstore_open(&loop, meta, os, &c, err, sizeof err);
    CHECK(ls);
    uint8_t buf[512];
    ack_t acks[20] = {{0}};
    /* 10 rounds, each waits for commit: at least 10 WAL objects per log */
    for (int round = 0; round < 10; round++) {
        for (int l = 0; l < 2; l++) {
            size_t len = make_entry(buf, 3, 1000 + round, (uint8_t)(round * 2 + l), 20);
            ls_append_t a = app(100 + l, buf, len, 3, 1000 + round);
            ls_logstore_append(ls, &a, on_ack, &acks[round * 2 + l]);
        }
        run_until(&acks[round * 2 + 1].done, 1);
        run_until(&acks[round * 2].done, 1);
    }
    for (int i = 0; i < 20; i++) {
        CHECK_EQ_INT(acks[i].st, LS_OK);
        CHECK_EQ_INT(acks[i].offset, (i / 2) * 3);
    }
    ls_log_info_t info;
    ls_logstore_info(ls, 100, &info);
    CHECK_EQ_INT(info.high_watermark, 30);
    CHECK_EQ_INT(info.log_start, 0);
    /* read from the middle of a batch: gets the whole batch and what follows */
    readres_t r = read_sync(ls, 100, 4, 1 << 20);
    CHECK_EQ_INT(r.res.st, LS_OK);
    CHECK_EQ_INT(r.res.bytes, 9 * 81);
    CHECK_EQ_INT(ls_be64_get(r.res.slices[0].chunk->data + r.res.slices[0].off), 3);
    ls_read_result_free(&r.res);
    /* byte limit: first batch whole, then stop */
    r = read_sync(ls, 101, 0, 10);
    CHECK_EQ_INT(r.res.bytes, 81);
    ls_read_result_free(&r.res);
    r = read_sync(ls, 101, 30, 1000);
    CHECK_EQ_INT(r.res.st, LS_OK);
    CHECK_EQ_INT(r.res.bytes, 0);
    ls_read_result_free(&r.res);
    r = read_sync(ls, 101, 31, 1000);
    CHECK_EQ_INT(r.res.st, LS_ERANGE);
    ls_read_result_free(&r.res);
    close_ls(ls);

    /* reopen on the same stores: everything comes back from metadata + objects */
    ls = ls_logstore_open(&loop, meta, os, &c, err, sizeof err);
    CHECK(ls);
    ls_logstore_info(ls, 101, &info);
    CHECK_EQ_INT(info.high_watermark, 30);
    r = read_sync(ls, 101, 0, 1 << 20);
    CHECK_EQ_INT(r.res.st, LS_OK);
    CHECK_EQ_INT(r.res.bytes, 10 * 81);
    int64_t expect = 0;
    int batches = 0;
    for (int s = 0; s < r.res.nslices; s++)
        for (size_t p = 0; p < r.res.slices[s].len;) {
            const uint8_t *e = r.res.slices[s].chunk->data + r.res.slices[s].off + p;
            CHECK_EQ_INT(ls_be64_get(e), expect);
            CHECK_EQ_INT(e[61], (uint8_t)(batches * 2 + 1));
            expect += 3;
            batches++;
            p += 12 + ls_be32_get(e + 8);
        }
    CHECK_EQ_INT(batches, 10);
    ls_read_result_free(&r.res);
    ls_logstore_stats_t stats;
    ls_logstore_stats(ls, &stats);
    CHECK(stats.store_gets >= 10); /* served by ranged GETs after restart */
    close_ls(ls);
    ls_objstore_close(os);
    ls_meta_close(meta);
}

TEST(group_commit_shares_objects)
{
    ls_meta_t *meta = ls_meta_mem_open();
    ls_objstore_t *os = ls_objstore_mem_open();
    ls_logstore_config_t c = cfg();
    char err[256];
    ls_logstore_t *ls = ls_logstore_open(&loop, meta, os, &c, err, sizeof err);
    uint8_t buf[128];
    ack_t acks[200] = {{0}};
    for (int i = 0; i < 200; i++) {
        size_t len = make_entry(buf, 1, i, (uint8_t)i, 4);
        ls_append_t a = app(7 + (i % 5), buf, len, 1, i);
        ls_logstore_append(ls, &a, on_ack, &acks[i]);
    }
    for (int i = 0; i < 200; i++)
        run_until(&acks[i].done, 1);
    for (int i = 0; i < 200; i++) {
        CHECK_EQ_INT(acks[i].st, LS_OK);
        CHECK_EQ_INT(acks[i].offset, i / 5);
    }
    ls_logstore_stats_t st;
    ls_logstore_stats(ls, &st);
    CHECK(st.flushes < 200); /* appended in one loop iteration: they shared objects */
    close_ls(ls);
    ls_objstore_close(os);
    ls_meta_close(meta);
}

static jmp_buf inv_jmp;
static char inv_msg[512];
static void inv_hook(const char *m)
{
    snprintf(inv_msg, sizeof inv_msg, "%s", m);
    longjmp(inv_jmp, 1);
}

/* The WAL checker runs after every seal and commit in these tests; here it
 * must also notice a broken I4 (byte accounting) and I3 (a log's open
 * section pointing outside the open flush). */
TEST(wal_invariant_checker_catches_broken_state)
{
    ls_meta_t *meta = ls_meta_mem_open();
    ls_objstore_t *os = ls_objstore_mem_open();
    ls_logstore_config_t c = cfg();
    char err[256];
    ls_logstore_t *ls = ls_logstore_open(&loop, meta, os, &c, err, sizeof err);
    uint8_t buf[128];
    ack_t acks[3] = {{0}};
    for (int i = 0; i < 3; i++) {
        size_t len = make_entry(buf, 1, i, (uint8_t)i, 4);
        ls_append_t a = app(3 + i, buf, len, 1, i);
        ls_logstore_append(ls, &a, on_ack, &acks[i]);
    }
    ls_wal_check_invariants(ls); /* consistent: does not fire */
    ls_panic_hook_fn old = ls_panic_set_hook(inv_hook);
    volatile int fired = 0;
    inv_msg[0] = 0;
    ls->buffered_bytes += 1;
    if (!setjmp(inv_jmp))
        ls_wal_check_invariants(ls);
    else
        fired = 1;
    ls->buffered_bytes -= 1;
    ls_panic_set_hook(old);
    CHECK(fired);
    CHECK(strstr(inv_msg, "WAL I4") != NULL);

    ls_logstate_t *lg = ls_logstate_get(ls, 3, false);
    CHECK(lg && lg->open_section);
    ls_section_t *keep = lg->open_section;
    ls_section_t stray = {.log = ls_logstate_get(ls, 4, false)};
    lg->open_section = &stray;
    fired = 0;
    old = ls_panic_set_hook(inv_hook);
    if (!setjmp(inv_jmp))
        ls_wal_check_invariants(ls);
    else
        fired = 1;
    ls_panic_set_hook(old);
    lg->open_section = keep;
    CHECK(fired);
    CHECK(strstr(inv_msg, "WAL I3") != NULL);
    for (int i = 0; i < 3; i++)
        run_until(&acks[i].done, 1);
    close_ls(ls);
    ls_objstore_close(os);
    ls_meta_close(meta);
}

TEST(idempotent_sequences)
{
    ls_meta_t *meta = ls_meta_mem_open();
    ls_objstore_t *os = ls_objstore_mem_open();
    ls_logstore_config_t c = cfg();
    char err[256];
    ls_logstore_t *ls = ls_logstore_open(&loop, meta, os, &c, err, sizeof err);
    uint8_t buf[128];
    size_t len = make_entry(buf, 2, 5, 1, 4);
    ls_append_t a = app(1, buf, len, 2, 5);
    a.producer = (ls_producer_ref_t){
        .producer_id = 42, .producer_epoch = 0, .base_sequence = 0, .last_sequence = 1};
    ack_t first = {0}, dup_pending = {0}, dup_committed = {0}, gap = {0}, next = {0}, stale = {0};
    ls_logstore_append(ls, &a, on_ack, &first);
    ls_logstore_append(ls, &a, on_ack, &dup_pending); /* retry while in flight */
    run_until(&dup_pending.done, 1);
    CHECK_EQ_INT(first.st, LS_OK);
    CHECK_EQ_INT(dup_pending.st, LS_OK);
    CHECK_EQ_INT(dup_pending.offset, first.offset);
    ls_logstore_append(ls, &a, on_ack, &dup_committed);
    CHECK_EQ_INT(dup_committed.done, 1);
    CHECK_EQ_INT(dup_committed.offset, first.offset);
    a.producer.base_sequence = 5;
    a.producer.last_sequence = 6;
    ls_logstore_append(ls, &a, on_ack, &gap);
    CHECK_EQ_INT(gap.st, LS_ERANGE);
    a.producer.base_sequence = 2;
    a.producer.last_sequence = 3;
    ls_logstore_append(ls, &a, on_ack, &next);
    run_until(&next.done, 1);
    CHECK_EQ_INT(next.st, LS_OK);
    CHECK_EQ_INT(next.offset, 2);
    ls_log_info_t info;
    ls_logstore_info(ls, 1, &info);
    CHECK_EQ_INT(info.high_watermark, 4); /* duplicates were not appended */
    close_ls(ls);
    /* producer state survives a restart */
    ls = ls_logstore_open(&loop, meta, os, &c, err, sizeof err);
    ack_t again = {0};
    ls_logstore_append(ls, &a, on_ack, &again);
    CHECK_EQ_INT(again.done, 1);
    CHECK_EQ_INT(again.offset, 2);
    /* bump the epoch, then an append with the old epoch is stale */
    a.producer.producer_epoch = 1;
    a.producer.base_sequence = 0;
    a.producer.last_sequence = 1;
    ack_t bumped = {0};
    ls_logstore_append(ls, &a, on_ack, &bumped);
    run_until(&bumped.done, 1);
    CHECK_EQ_INT(bumped.st, LS_OK);
    a.producer.producer_epoch = 0;
    a.producer.base_sequence = 4;
    a.producer.last_sequence = 5;
    ls_logstore_append(ls, &a, on_ack, &stale);
    CHECK_EQ_INT(stale.st, LS_EFENCED);
    close_ls(ls);
    ls_objstore_close(os);
    ls_meta_close(meta);
}

static void on_status(void *arg, ls_status st)
{
    ack_t *a = arg;
    a->done = 1;
    a->st = st;
}

TEST(fence_rejects_appends)
{
    ls_meta_t *meta = ls_meta_mem_open();
    ls_objstore_t *os = ls_objstore_mem_open();
    ls_logstore_config_t c = cfg();
    char err[256];
    ls_logstore_t *ls = ls_logstore_open(&loop, meta, os, &c, err, sizeof err);
    uint8_t buf[128];
    size_t len = make_entry(buf, 1, 1, 1, 4);
    ls_append_t a = app(9, buf, len, 1, 1);
    ack_t a1 = {0}, f = {0}, a2 = {0};
    ls_logstore_append(ls, &a, on_ack, &a1);
    run_until(&a1.done, 1);
    ls_logstore_fence(ls, 9, on_status, &f);
    run_until(&f.done, 1);
    CHECK_EQ_INT(f.st, LS_OK);
    ls_logstore_append(ls, &a, on_ack, &a2);
    CHECK_EQ_INT(a2.st, LS_ENOTFOUND);
    close_ls(ls);
    ls = ls_logstore_open(&loop, meta, os, &c, err, sizeof err);
    ls_log_info_t info;
    ls_logstore_info(ls, 9, &info);
    CHECK(info.fenced);
    close_ls(ls);
    ls_objstore_close(os);
    ls_meta_close(meta);
}

TEST(failed_put_fails_batches_and_recovers)
{
    ls_meta_t *meta = ls_meta_mem_open();
    failing_os_t *fos = ls_calloc(1, sizeof *fos);
    fos->base.ops = &failing_ops;
    fos->inner = ls_objstore_mem_open();
    ls_logstore_config_t c = cfg();
    c.gc_grace_ms = 0;
    char err[256];
    ls_logstore_t *ls = ls_logstore_open(&loop, meta, &fos->base, &c, err, sizeof err);
    uint8_t buf[128];
    size_t len = make_entry(buf, 1, 1, 1, 4);
    ls_append_t a = app(3, buf, len, 1, 1);
    ack_t ok1 = {0}, bad = {0}, ok2 = {0};
    ls_logstore_append(ls, &a, on_ack, &ok1);
    run_until(&ok1.done, 1);
    fos->fail_puts = 1;
    ls_logstore_append(ls, &a, on_ack, &bad);
    run_until(&bad.done, 1);
    CHECK(bad.st == LS_EAGAIN || bad.st == LS_EIO);
    fos->fail_puts = 0;
    ls_logstore_append(ls, &a, on_ack, &ok2);
    run_until(&ok2.done, 1);
    CHECK_EQ_INT(ok2.st, LS_OK);
    CHECK_EQ_INT(ok2.offset, 1); /* the failed batch consumed no offset */
    readres_t r = read_sync(ls, 3, 0, 1 << 20);
    CHECK_EQ_INT(r.res.bytes, 2 * len);
    ls_read_result_free(&r.res);
    close_ls(ls);
    ls_objstore_close(fos->inner);
    ls_objstore_close(&fos->base);
    ls_meta_close(meta);
}

TEST(gc_deletes_only_uncommitted_objects)
{
    ls_meta_t *meta = ls_meta_mem_open();
    ls_objstore_t *os = ls_objstore_mem_open();
    ls_logstore_config_t c = cfg();
    c.gc_grace_ms = 0;
    char err[256];
    ls_logstore_t *ls = ls_logstore_open(&loop, meta, os, &c, err, sizeof err);
    uint8_t buf[128];
    size_t len = make_entry(buf, 1, 1, 1, 4);
    ls_append_t a = app(5, buf, len, 1, 1);
    ack_t ok = {0};
    ls_logstore_append(ls, &a, on_ack, &ok);
    run_until(&ok.done, 1);
    struct iovec iov = {(void *)"garbage", 7};
    CHECK_EQ_INT(ls_objstore_put(os, "wal/0000000000001-9-deadbeef-000001.wal", &iov, 1, 0), LS_OK);
    int deleted = -1;
    CHECK_EQ_INT(ls_logstore_gc_now(ls, &deleted), LS_OK);
    CHECK_EQ_INT(deleted, 1);
    ls_objinfo_t *objs;
    size_t n;
    CHECK_EQ_INT(ls_objstore_list(os, "wal/", &objs, &n), LS_OK);
    CHECK_EQ_INT(n, 1); /* the committed object remains */
    ls_objinfo_free(objs, n);
    close_ls(ls);
    ls_objstore_close(os);
    ls_meta_close(meta);
}

/* n unreferenced WAL objects under dir (a file store's root), made an hour
 * old so that any grace period has passed: what a cluster restarted after
 * falling behind finds (issue 29 §10). */
static void make_garbage(const char *dir, ls_objstore_t *os, int first, int n)
{
    struct iovec iov = {(void *)"garbage", 7};
    struct timeval old[2];
    gettimeofday(&old[0], NULL);
    old[0].tv_sec -= 3600;
    old[1] = old[0];
    for (int i = first; i < first + n; i++) {
        char key[96], path[512];
        snprintf(key, sizeof key, "wal/0000000000001-9-deadbeef-%06d.wal", i);
        CHECK_EQ_INT(ls_objstore_put(os, key, &iov, 1, 0), LS_OK);
        snprintf(path, sizeof path, "%s/%s", dir, key);
        CHECK_EQ_INT(utimes(path, old), 0);
    }
}

/* Objects under wal/ of the file store at dir, through a handle of its own
 * (the brokers' counting handles must not count the test's listing); -1:
 * the listing failed. */
static long wal_objects(const char *dir)
{
    char err[256];
    ls_objstore_t *os = ls_objstore_fs_open(dir, 0, err, sizeof err);
    ls_objinfo_t *objs;
    size_t n = 0;
    ls_status st = os ? ls_objstore_list(os, "wal/", &objs, &n) : LS_EIO;
    if (st == LS_OK) ls_objinfo_free(objs, n);
    if (os) ls_objstore_close(os);
    return st == LS_OK ? (long)n : -1;
}

/* LIST and DELETE calls a faulty wrapper counted (ops=list,del). */
static uint64_t store_calls(ls_objstore_t *os)
{
    ls_fault_stats_t fs;
    ls_objstore_faulty_stats(os, &fs);
    return fs.calls;
}

/* One GC round of ls, as its timer starts it; waits for it to end. */
static void gc_round(ls_logstore_t *ls)
{
    ls_logstore_stats_t st;
    ls_logstore_stats(ls, &st);
    uint64_t before = st.gc_rounds + st.gc_rounds_skipped;
    ls_logstore_gc_start(ls);
    for (int i = 0; i < 100000; i++) {
        ls_logstore_stats(ls, &st);
        if (st.gc_rounds + st.gc_rounds_skipped > before) return;
        uv_run(&loop, UV_RUN_ONCE);
    }
    CHECK(!"the GC round did not end");
}

/* A file store over dir counting its LIST and DELETE calls (NULL: failed). */
static ls_objstore_t *counting_store(const char *dir)
{
    char url[600], err[256];
    snprintf(url, sizeof url, "faulty+file://%s?ops=list,del", dir);
    return ls_objstore_open(url, 0, err, sizeof err);
}

/* Two brokers over one metadata store and one object store (each with its
 * own handle, as two processes): a round is run by the broker holding the
 * GC turn, the other lists nothing and deletes nothing; when the holder
 * stops, the other takes over. A round deletes in batches. Before: every
 * broker listed wal/ and deleted the same objects each round, one DELETE
 * each (34,185 DELETEs for 11,395 objects). */
TEST(gc_one_collector_per_round)
{
    char dir[] = "/tmp/ls-gc-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    ls_meta_t *meta = ls_meta_mem_open();
    ls_objstore_t *os1 = counting_store(dir), *os2 = counting_store(dir);
    CHECK(os1 && os2);
    ls_logstore_config_t c1 = cfg(), c2 = cfg();
    c1.gc_grace_ms = c2.gc_grace_ms = 60000; /* rounds only when the test starts them */
    c2.broker_id = 2;
    char err[256];
    ls_logstore_t *ls1 = ls_logstore_open(&loop, meta, os1, &c1, err, sizeof err);
    ls_logstore_t *ls2 = ls_logstore_open(&loop, meta, os2, &c2, err, sizeof err);
    CHECK(ls1 && ls2);
    make_garbage(dir, os1, 0, 50);

    gc_round(ls1);
    gc_round(ls2);
    CHECK_EQ_INT(wal_objects(dir), 0);
    CHECK_EQ_INT(store_calls(os1), 2); /* one LIST, one batched DELETE of the 50 */
    CHECK_EQ_INT(store_calls(os2), 0); /* not its turn: nothing listed */

    make_garbage(dir, os1, 50, 20);
    gc_round(ls2); /* the turn stays with the broker holding it */
    gc_round(ls1);
    CHECK_EQ_INT(wal_objects(dir), 0);
    CHECK_EQ_INT(store_calls(os1), 2 + 2);
    CHECK_EQ_INT(store_calls(os2), 0);
    ls_logstore_stats_t st1, st2;
    ls_logstore_stats(ls1, &st1);
    ls_logstore_stats(ls2, &st2);
    CHECK_EQ_INT(st1.gc_rounds, 2);
    CHECK_EQ_INT(st1.gc_deleted, 70);
    CHECK_EQ_INT(st2.gc_rounds, 0);
    CHECK_EQ_INT(st2.gc_rounds_skipped, 2);

    /* the holder stops: the other broker collects from its next round */
    close_ls(ls1);
    make_garbage(dir, os2, 70, 5);
    gc_round(ls2);
    CHECK_EQ_INT(wal_objects(dir), 0);
    CHECK_EQ_INT(store_calls(os2), 2);
    ls_logstore_stats(ls2, &st2);
    CHECK_EQ_INT(st2.gc_rounds, 1);
    close_ls(ls2);
    ls_objstore_close(os1);
    ls_objstore_close(os2);
    ls_meta_close(meta);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

/* Opening log storage over a large backlog of unreferenced WAL objects
 * lists nothing: the broker serves (an append is acknowledged) while they
 * are still there, and a later round collects them. Before: open listed
 * and deleted them all first (the first answer 71 s after a restart). */
TEST(open_serves_before_gc)
{
    char dir[] = "/tmp/ls-gc-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    ls_meta_t *meta = ls_meta_mem_open();
    ls_objstore_t *os = counting_store(dir);
    CHECK(os != NULL);
    make_garbage(dir, os, 0, 2000);
    ls_logstore_config_t c = cfg();
    c.gc_grace_ms = 60000;
    char err[256];
    ls_logstore_t *ls = ls_logstore_open(&loop, meta, os, &c, err, sizeof err);
    CHECK(ls != NULL);
    CHECK_EQ_INT(store_calls(os), 0); /* open listed nothing */
    uint8_t buf[128];
    size_t len = make_entry(buf, 1, 1, 1, 4);
    ls_append_t a = app(5, buf, len, 1, 1);
    ack_t ok = {0};
    ls_logstore_append(ls, &a, on_ack, &ok);
    run_until(&ok.done, 1);
    CHECK_EQ_INT(ok.st, LS_OK);
    CHECK_EQ_INT(wal_objects(dir), 2000 + 1); /* served with the backlog in place */

    gc_round(ls);
    CHECK_EQ_INT(wal_objects(dir), 1); /* the committed object remains */
    ls_logstore_stats_t st;
    ls_logstore_stats(ls, &st);
    CHECK_EQ_INT(st.gc_deleted, 2000);
    close_ls(ls);
    ls_objstore_close(os);
    ls_meta_close(meta);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

typedef struct {
    int done;
    int64_t off;
} tres_t;
static void on_time(void *arg, ls_status st, int64_t off, int64_t ts)
{
    tres_t *t = arg;
    t->done = 1;
    t->off = off;
}

TEST(offset_for_time_entry_granularity)
{
    ls_meta_t *meta = ls_meta_mem_open();
    ls_objstore_t *os = ls_objstore_mem_open();
    ls_logstore_config_t c = cfg();
    char err[256];
    ls_logstore_t *ls = ls_logstore_open(&loop, meta, os, &c, err, sizeof err);
    uint8_t buf[128];
    for (int i = 0; i < 5; i++) {
        ack_t ok = {0};
        size_t len = make_entry(buf, 2, 100 * (i + 1), 1, 4);
        ls_append_t a = app(6, buf, len, 2, 100 * (i + 1));
        ls_logstore_append(ls, &a, on_ack, &ok);
        run_until(&ok.done, 1);
    }
    tres_t t = {0};
    ls_logstore_offset_for_time(ls, 6, 250, on_time, &t);
    run_until(&t.done, 1);
    CHECK_EQ_INT(t.off, 4); /* third entry (max ts 300) starts at offset 4 */
    t.done = 0;
    ls_logstore_offset_for_time(ls, 6, 9999, on_time, &t);
    run_until(&t.done, 1);
    CHECK_EQ_INT(t.off, 10); /* none: the high watermark */
    close_ls(ls);
    ls_objstore_close(os);
    ls_meta_close(meta);
}

/* A commit whose acknowledgement is lost was applied: it must be reported as
 * committed (so an idempotent retry is a duplicate, not a second copy), and a
 * commit that really failed must consume no offsets. */
TEST(ambiguous_commits_resolved)
{
    char err[256];
    ls_meta_t *meta = ls_meta_open("faulty+mem://?seed=7", err, sizeof err);
    CHECK(meta);
    ls_objstore_t *os = ls_objstore_mem_open();
    ls_logstore_config_t c = cfg();
    ls_logstore_t *ls = ls_logstore_open(&loop, meta, os, &c, err, sizeof err);
    uint8_t buf[128];
    size_t len = make_entry(buf, 1, 1, 1, 4);
    ls_append_t a = app(11, buf, len, 1, 1);
    a.producer = (ls_producer_ref_t){
        .producer_id = 5, .producer_epoch = 0, .base_sequence = 0, .last_sequence = 0};
    CHECK_EQ_INT(ls_meta_faulty_set(meta, "lost_ack_rate=1", err, sizeof err), 0);
    ack_t lost = {0};
    ls_logstore_append(ls, &a, on_ack, &lost);
    run_until(&lost.done, 1);
    CHECK_EQ_INT(lost.st, LS_OK); /* resolved by reading the commit back */
    CHECK_EQ_INT(lost.offset, 0);
    CHECK_EQ_INT(ls_meta_faulty_set(meta, "lost_ack_rate=0&txn_error_rate=1", err, sizeof err), 0);
    a.producer.base_sequence = a.producer.last_sequence = 1;
    ack_t failed = {0};
    ls_logstore_append(ls, &a, on_ack, &failed);
    run_until(&failed.done, 1);
    CHECK(ls_status_retriable(failed.st));
    CHECK_EQ_INT(ls_meta_faulty_set(meta, "txn_error_rate=0", err, sizeof err), 0);
    ack_t retried = {0};
    ls_logstore_append(ls, &a, on_ack, &retried); /* the producer's retry */
    run_until(&retried.done, 1);
    CHECK_EQ_INT(retried.st, LS_OK);
    CHECK_EQ_INT(retried.offset, 1);
    ls_log_info_t info;
    ls_logstore_info(ls, 11, &info);
    CHECK_EQ_INT(info.high_watermark, 2);
    ls_fault_stats_t fs;
    ls_meta_faulty_stats(meta, &fs);
    CHECK(fs.lost_acks >= 1 && fs.injected >= 1);
    close_ls(ls);
    ls_objstore_close(os);
    ls_meta_close(meta);
}

static void on_trim_ack(void *arg, ls_status st, int64_t start)
{
    ack_t *a = arg;
    a->done++;
    a->st = st;
    a->offset = start;
}

/* Transactions (log_txn.h) through the WAL commit: batches open a
 * transaction, the LSO stays at its first offset until the marker commits,
 * an abort marker writes the aborted range in the same txn, markers are
 * idempotent, late and mixed batches are refused, a fencing marker epoch
 * fences, and a marker committed before a batch of its own transaction in
 * the same flush fails the flush retriably; trims drop an aborted record
 * only with the last data of its transaction. Survives a restart. */
TEST(transactions_markers_lso_and_aborted_index)
{
    ls_meta_t *meta = ls_meta_mem_open();
    ls_objstore_t *os = ls_objstore_mem_open();
    ls_logstore_config_t c = cfg();
    char err[256];
    ls_logstore_t *ls = ls_logstore_open(&loop, meta, os, &c, err, sizeof err);
    uint8_t buf[128];
    size_t len = make_entry(buf, 2, 5, 1, 4);
    ls_append_t a = app(5, buf, len, 2, 5);
    a.producer = (ls_producer_ref_t){
        .producer_id = 7, .producer_epoch = 0, .base_sequence = 0, .last_sequence = 1};
    a.txn_seq = 1;
    ack_t t1 = {0};
    ls_logstore_append(ls, &a, on_ack, &t1);
    run_until(&t1.done, 1);
    CHECK_EQ_INT(t1.st, LS_OK);
    CHECK_EQ_INT(t1.offset, 0);
    ls_append_t other = app(5, buf, len, 2, 5); /* an idempotent, non-transactional producer */
    other.producer = (ls_producer_ref_t){
        .producer_id = 8, .producer_epoch = 0, .base_sequence = 0, .last_sequence = 1};
    ack_t o1 = {0};
    ls_logstore_append(ls, &other, on_ack, &o1);
    run_until(&o1.done, 1);
    CHECK_EQ_INT(o1.offset, 2);
    ls_log_info_t info;
    ls_logstore_info(ls, 5, &info);
    CHECK_EQ_INT(info.high_watermark, 4);
    CHECK_EQ_INT(info.last_stable_offset, 0); /* held by producer 7's open transaction */
    /* what DescribeProducers shows: 7 with its open transaction, 8 without */
    ls_log_producer_t *ps;
    int np = ls_logstore_producers(ls, 5, &ps);
    CHECK_EQ_INT(np, 2);
    for (int i = 0; i < np; i++) {
        CHECK_EQ_INT(ps[i].last_sequence, 1);
        CHECK_EQ_INT(ps[i].txn_seq, ps[i].producer_id == 7 ? 1 : 0);
        CHECK_EQ_INT(ps[i].txn_first_offset, ps[i].producer_id == 7 ? 0 : -1);
    }
    ls_free(ps);
    CHECK_EQ_INT(ls_logstore_producers(ls, 999, &ps), 0); /* unknown log */
    CHECK(ps == NULL);
    /* producer 7 may not write outside its transaction while it is open */
    ls_append_t mixed = a;
    mixed.txn_seq = 0;
    mixed.producer.base_sequence = 2, mixed.producer.last_sequence = 3;
    ack_t m0 = {0};
    ls_logstore_append(ls, &mixed, on_ack, &m0);
    CHECK_EQ_INT(m0.st, LS_EINVAL);
    /* the abort marker: a one-record control batch */
    uint8_t mk[128];
    size_t mlen = make_entry(mk, 1, 5, 9, 4);
    ls_log_marker_t abort1 = {.producer_id = 7, .epoch = 0, .txn_seq = 1, .commit = false};
    ls_append_t ma = app(5, mk, mlen, 1, 5);
    ma.marker = &abort1;
    ack_t mark = {0}, again = {0};
    ls_logstore_append(ls, &ma, on_ack, &mark);
    run_until(&mark.done, 1);
    CHECK_EQ_INT(mark.st, LS_OK);
    CHECK_EQ_INT(mark.offset, 4);
    ls_logstore_info(ls, 5, &info);
    CHECK_EQ_INT(info.high_watermark, 5);
    CHECK_EQ_INT(info.last_stable_offset, 5);
    np = ls_logstore_producers(ls, 5, &ps);
    for (int i = 0; i < np; i++)
        if (ps[i].producer_id == 7) CHECK(ps[i].txn_seq == 0 && ps[i].txn_first_offset == -1);
    ls_free(ps);
    char key[96];
    ls_log_abort_key(key, sizeof key, 5, 0);
    ls_kv_t kv;
    CHECK_EQ_INT(ls_meta_get(meta, key, &kv), LS_OK);
    ls_aborted_t ab;
    CHECK_EQ_INT(ls_aborted_decode(kv.val, kv.vlen, &ab), LS_OK);
    ls_kv_free(&kv);
    CHECK(ab.producer_id == 7 && ab.first_offset == 0 && ab.marker_offset == 4);
    /* the same marker again (another broker finishing the decision): nothing appended */
    ls_logstore_append(ls, &ma, on_ack, &again);
    CHECK_EQ_INT(again.done, 1);
    CHECK_EQ_INT(again.st, LS_OK);
    CHECK_EQ_INT(again.offset, -1);
    /* a late batch of the ended transaction is refused */
    ls_append_t late = a;
    late.producer.base_sequence = 2, late.producer.last_sequence = 3;
    ack_t l1 = {0};
    ls_logstore_append(ls, &late, on_ack, &l1);
    CHECK_EQ_INT(l1.st, LS_EINVAL);
    /* transaction 2 commits with a fencing epoch (transaction version 2) */
    ls_append_t t2 = late;
    t2.txn_seq = 2;
    ack_t t2a = {0}, c2 = {0}, fenced = {0};
    ls_logstore_append(ls, &t2, on_ack, &t2a);
    run_until(&t2a.done, 1);
    CHECK_EQ_INT(t2a.st, LS_OK);
    ls_log_marker_t commit2 = {.producer_id = 7, .epoch = 1, .txn_seq = 2, .commit = true};
    ma.marker = &commit2;
    ls_logstore_append(ls, &ma, on_ack, &c2);
    run_until(&c2.done, 1);
    CHECK_EQ_INT(c2.st, LS_OK);
    ls_log_abort_key(key, sizeof key, 5, t2a.offset);
    CHECK_EQ_INT(ls_meta_get(meta, key, &kv), LS_ENOTFOUND); /* commits index nothing */
    ls_append_t t3 = t2;
    t3.txn_seq = 3;
    t3.producer.base_sequence = 4, t3.producer.last_sequence = 5;
    ls_logstore_append(ls, &t3, on_ack, &fenced);
    CHECK_EQ_INT(fenced.st, LS_EFENCED);
    /* the marker of transaction 3 lands in the same flush before a batch of it */
    t3.producer.producer_epoch = 1;
    t3.producer.base_sequence = 0, t3.producer.last_sequence = 1;
    ls_log_marker_t abort3 = {.producer_id = 7, .epoch = 1, .txn_seq = 3, .commit = false};
    ma.marker = &abort3;
    ack_t m3 = {0}, b3 = {0}, m3b = {0}, b3b = {0};
    ls_logstore_append(ls, &ma, on_ack, &m3);
    ls_logstore_append(ls, &t3, on_ack, &b3);
    run_until(&b3.done, 1);
    CHECK_EQ_INT(m3.st, LS_EAGAIN);
    CHECK_EQ_INT(b3.st, LS_EAGAIN);
    ls_logstore_append(ls, &ma, on_ack, &m3b); /* the coordinator retries its marker */
    run_until(&m3b.done, 1);
    CHECK_EQ_INT(m3b.st, LS_OK);
    ls_logstore_append(ls, &t3, on_ack, &b3b); /* the producer's retry learns why */
    CHECK_EQ_INT(b3b.st, LS_EINVAL);
    ls_logstore_info(ls, 5, &info);
    int64_t hw = info.high_watermark;
    CHECK_EQ_INT(info.last_stable_offset, hw);
    /* trims keep an aborted record while data of its transaction stays */
    ack_t tr = {0};
    ls_logstore_trim(ls, 5, 3, false, on_trim_ack, &tr);
    run_until(&tr.done, 1);
    CHECK_EQ_INT(tr.st, LS_OK);
    ls_log_abort_key(key, sizeof key, 5, 0);
    CHECK_EQ_INT(ls_meta_get(meta, key, &kv), LS_OK);
    ls_kv_free(&kv);
    ack_t tr2 = {0};
    ls_logstore_trim(ls, 5, 5, false, on_trim_ack, &tr2);
    run_until(&tr2.done, 1);
    CHECK_EQ_INT(tr2.st, LS_OK);
    CHECK_EQ_INT(ls_meta_get(meta, key, &kv), LS_ENOTFOUND);
    close_ls(ls);
    /* the transaction state survives a restart */
    ls = ls_logstore_open(&loop, meta, os, &c, err, sizeof err);
    ack_t l2 = {0};
    ls_logstore_append(ls, &late, on_ack, &l2);
    CHECK(l2.st == LS_EINVAL || l2.st == LS_EFENCED);
    ls_logstore_info(ls, 5, &info);
    CHECK_EQ_INT(info.high_watermark, hw);
    CHECK_EQ_INT(info.last_stable_offset, hw);
    close_ls(ls);
    ls_objstore_close(os);
    ls_meta_close(meta);
}

typedef struct {
    int done;
    ls_status st;
    int n;
    ls_aborted_t v[8];
} aborted_res_t;

static void on_aborted(void *arg, ls_status st, const ls_aborted_t *v, int n)
{
    aborted_res_t *r = arg;
    r->done++;
    r->st = st;
    r->n = n;
    for (int i = 0; i < n && i < 8; i++)
        r->v[i] = v[i];
}

static aborted_res_t aborted_sync(ls_logstore_t *ls, int64_t log, int64_t from, int64_t to)
{
    aborted_res_t r = {0};
    ls_logstore_aborted(ls, log, from, to, on_aborted, &r);
    run_until(&r.done, 1);
    return r;
}

/* One transactional batch (2 records) of producer pid, or its marker. */
static ack_t txn_append(ls_logstore_t *ls, int64_t pid, int64_t seq, const ls_log_marker_t *m)
{
    static uint8_t buf[128];
    size_t len = make_entry(buf, m ? 1 : 2, 5, 1, 4);
    ls_append_t a = app(6, buf, len, m ? 1 : 2, 5);
    if (m) {
        a.marker = m; /* the control batch's header names the producer; no sequence */
        a.producer = (ls_producer_ref_t){.producer_id = m->producer_id,
                                         .producer_epoch = m->epoch,
                                         .base_sequence = -1,
                                         .last_sequence = -1};
    } else {
        a.producer = (ls_producer_ref_t){
            .producer_id = pid, .producer_epoch = 0, .base_sequence = 0, .last_sequence = 1};
        a.txn_seq = seq;
    }
    ack_t r = {0};
    ls_logstore_append(ls, &a, on_ack, &r);
    run_until(&r.done, 1);
    return r;
}

/* read_committed readers stop at the LSO and learn the aborted ranges of
 * what they read, from this broker's commits, from the store after a
 * restart, and from another broker's commits through the watch. */
TEST(read_committed_stops_at_lso_and_finds_aborted)
{
    ls_meta_t *meta = ls_meta_mem_open();
    ls_objstore_t *os = ls_objstore_mem_open();
    ls_logstore_config_t c = cfg();
    char err[256];
    ls_logstore_t *ls = ls_logstore_open(&loop, meta, os, &c, err, sizeof err);
    CHECK_EQ_INT(txn_append(ls, 7, 1, NULL).offset, 0);
    CHECK_EQ_INT(txn_append(ls, 9, 1, NULL).offset, 2);
    readres_t r = read_sync(ls, 6, 0, 1 << 20);
    CHECK_EQ_INT(r.res.nslices > 0, 1); /* read_uncommitted sees everything */
    ls_read_result_free(&r.res);
    readres_t rc = {0};
    ls_logstore_read_committed(ls, 6, 0, 1 << 20, on_read, &rc);
    run_until(&rc.done, 1);
    CHECK_EQ_INT(rc.res.st, LS_OK);
    CHECK_EQ_INT(rc.res.bytes, 0);
    CHECK_EQ_INT(rc.res.last_stable_offset, 0);
    CHECK_EQ_INT(rc.res.high_watermark, 4);
    ls_read_result_free(&rc.res);
    /* no transaction ever aborted here: answered at once */
    aborted_res_t ar = {0};
    ls_logstore_aborted(ls, 6, 0, 100, on_aborted, &ar);
    CHECK_EQ_INT(ar.done, 1);
    CHECK_EQ_INT(ar.n, 0);
    /* producer 7 aborts (marker at 4): the LSO moves to producer 9's batch */
    ls_log_marker_t ab7 = {.producer_id = 7, .epoch = 0, .txn_seq = 1, .commit = false};
    CHECK_EQ_INT(txn_append(ls, 0, 0, &ab7).offset, 4);
    rc = (readres_t){0};
    ls_logstore_read_committed(ls, 6, 0, 1 << 20, on_read, &rc);
    run_until(&rc.done, 1);
    CHECK_EQ_INT(rc.res.last_stable_offset, 2);
    CHECK_EQ_INT(rc.res.nslices >= 1, 1);
    int64_t first_batch = (int64_t)rc.res.bytes;
    ls_read_result_free(&rc.res);
    CHECK(first_batch > 0 && first_batch < 3 * 80); /* one batch only: 0-1 */
    ar = aborted_sync(ls, 6, 0, 1);
    CHECK_EQ_INT(ar.st, LS_OK);
    CHECK_EQ_INT(ar.n, 1);
    CHECK(ar.v[0].producer_id == 7 && ar.v[0].first_offset == 0 && ar.v[0].marker_offset == 4);
    CHECK_EQ_INT(aborted_sync(ls, 6, 4, 9).n, 1); /* the marker is in range */
    CHECK_EQ_INT(aborted_sync(ls, 6, 5, 9).n, 0);
    ls_log_marker_t c9 = {.producer_id = 9, .epoch = 0, .txn_seq = 1, .commit = true};
    CHECK_EQ_INT(txn_append(ls, 0, 0, &c9).offset, 5);
    ls_log_info_t info;
    ls_logstore_info(ls, 6, &info);
    CHECK_EQ_INT(info.last_stable_offset, 6);
    /* a second broker loads the index from the store */
    ls_logstore_t *ls2 = ls_logstore_open(&loop, meta, os, &c, err, sizeof err);
    ar = aborted_sync(ls2, 6, 0, 10);
    CHECK_EQ_INT(ar.n, 1);
    /* ... and learns the first broker's next abort through the watch */
    CHECK_EQ_INT(txn_append(ls, 11, 1, NULL).offset, 6);
    ls_log_marker_t ab11 = {.producer_id = 11, .epoch = 0, .txn_seq = 1, .commit = false};
    CHECK_EQ_INT(txn_append(ls, 0, 0, &ab11).offset, 8);
    for (int i = 0; i < 100000; i++) {
        ls_logstore_info(ls2, 6, &info);
        if (info.high_watermark == 9) break;
        uv_run(&loop, UV_RUN_ONCE);
    }
    CHECK_EQ_INT(info.last_stable_offset, 9);
    ar = aborted_sync(ls2, 6, 0, 10);
    CHECK_EQ_INT(ar.n, 2);
    CHECK(ar.v[1].producer_id == 11 && ar.v[1].first_offset == 6 && ar.v[1].marker_offset == 8);
    /* A trim past producer 7's marker (4) drops its index record. A reader
     * that took records 0-1 before the trim and asks for their aborted list
     * after it gets LS_ERANGE, never a list without producer 7 (the soak
     * saw aborted records under read_committed that way); from the new
     * start the list is whole. */
    ack_t tr = {0};
    ls_logstore_trim(ls, 6, 5, false, on_trim_ack, &tr);
    run_until(&tr.done, 1);
    CHECK_EQ_INT(tr.st, LS_OK);
    ar = aborted_sync(ls, 6, 0, 10);
    CHECK_EQ_INT(ar.st, LS_ERANGE);
    CHECK_EQ_INT(ar.n, 0);
    ar = aborted_sync(ls, 6, 5, 10);
    CHECK_EQ_INT(ar.st, LS_OK);
    CHECK_EQ_INT(ar.n, 1);
    CHECK(ar.v[0].producer_id == 11);
    close_ls(ls2);
    close_ls(ls);
    ls_objstore_close(os);
    ls_meta_close(meta);
}

/* A burst of another broker's index changes (here 40 txns of 100 entries,
 * queued while the loop was not running) is applied over several loop steps
 * of at most 512 events plus one txn's (log_watch.c W5), never in one step
 * that grows with the burst (issue 29 §8); every change still lands, and a
 * txn's deletions cost one pass over the index. */
TEST(watch_bursts_are_applied_in_bounded_steps)
{
    ls_meta_t *meta = ls_meta_mem_open();
    ls_objstore_t *os = ls_objstore_mem_open();
    ls_logstore_config_t c = cfg();
    char err[256];
    ls_logstore_t *ls = ls_logstore_open(&loop, meta, os, &c, err, sizeof err);
    uint8_t buf[512];
    size_t len = make_entry(buf, 1, 1000, 1, 20);
    ls_append_t a = app(6, buf, len, 1, 1000);
    ack_t ack = {0};
    ls_logstore_append(ls, &a, on_ack, &ack);
    run_until(&ack.done, 1);
    CHECK_EQ_INT(ack.st, LS_OK);
    ls_logstore_t *ls2 = ls_logstore_open(&loop, meta, os, &c, err, sizeof err);
    readres_t r = read_sync(ls2, 6, 0, 1 << 20); /* loads log 6's index there */
    CHECK_EQ_INT(r.res.st, LS_OK);
    ls_read_result_free(&r.res);
    ls_logstore_stats_t before;
    ls_logstore_stats(ls2, &before);
    for (int t = 0; t < 40; t++) {
        ls_meta_op_t ops[100];
        char keys[100][64];
        ls_buf_t vals[100];
        for (int i = 0; i < 100; i++) {
            int64_t off = 1000 + t * 100 + i;
            ls_idx_entry_t e = {.kind = LS_IDX_WAL,
                                .first_offset = off,
                                .last_offset = off,
                                .max_timestamp = 1,
                                .entries = 1,
                                .len = 10,
                                .object = "wal/elsewhere"};
            ls_log_idx_key(keys[i], sizeof keys[i], 6, off);
            ls_buf_init(&vals[i]);
            ls_idx_encode(&e, &vals[i]);
            ops[i] = (ls_meta_op_t){.kind = LS_META_OP_PUT,
                                    .key = keys[i],
                                    .klen = strlen(keys[i]),
                                    .val = vals[i].data,
                                    .vlen = vals[i].len};
        }
        CHECK_EQ_INT(ls_meta_txn(meta, NULL, 0, ops, 100, NULL), LS_OK);
        for (int i = 0; i < 100; i++)
            ls_buf_free(&vals[i]);
    }
    usleep(300 * 1000); /* let the watch queue the burst before the loop runs */
    ls_logstore_stats_t st = before;
    for (int i = 0; i < 100000 && st.watch_events < before.watch_events + 4000; i++) {
        uv_run(&loop, UV_RUN_ONCE);
        ls_logstore_stats(ls2, &st);
    }
    CHECK(st.watch_events >= before.watch_events + 4000);
    CHECK(st.watch_step_max <= 512 + LS_META_MAX_TXN_OPS);
    CHECK_EQ_INT(ls_logstate_get(ls2, 6, false)->nidx, 4001);
    /* a compaction-like burst of deletions, oldest first (each txn deletes
     * 100 consecutive keys): one pass over the index per txn, not one move
     * of its tail per key (that moved ~8 million entries here) */
    for (int t = 0; t < 40; t++) {
        ls_meta_op_t ops[100];
        char keys[100][64];
        for (int i = 0; i < 100; i++) {
            ls_log_idx_key(keys[i], sizeof keys[i], 6, 1000 + t * 100 + i);
            ops[i] =
                (ls_meta_op_t){.kind = LS_META_OP_DEL, .key = keys[i], .klen = strlen(keys[i])};
        }
        CHECK_EQ_INT(ls_meta_txn(meta, NULL, 0, ops, 100, NULL), LS_OK);
    }
    usleep(300 * 1000);
    before = st;
    for (int i = 0; i < 100000 && st.watch_events < before.watch_events + 4000; i++) {
        uv_run(&loop, UV_RUN_ONCE);
        ls_logstore_stats(ls2, &st);
    }
    CHECK(st.watch_events >= before.watch_events + 4000);
    CHECK_EQ_INT(ls_logstate_get(ls2, 6, false)->nidx, 1);
    CHECK(st.index_moves - before.index_moves <= 40 * 4001);
    close_ls(ls2);
    close_ls(ls);
    ls_objstore_close(os);
    ls_meta_close(meta);
}

/* ------------------------------------------------------- pipelined flushes */

/* A metadata store that delegates to mem but holds every txn while hold is
 * set (so a test can write more WAL objects behind a running commit) and
 * fails the next fail_txns txns with LS_EIO before they reach the store. */
typedef struct {
    ls_meta_t base;
    ls_meta_ops_t ops;
    ls_meta_t *inner;
    int hold, held, fail_txns, txns;
} gated_meta_t;

static ls_status g_get(ls_meta_t *m, const void *k, size_t kl, ls_kv_t *out)
{
    ls_meta_t *in = ((gated_meta_t *)m)->inner;
    return in->ops->get(in, k, kl, out);
}
static ls_status g_scan(ls_meta_t *m, const void *s, size_t sl, const void *e, size_t el,
                        size_t limit, int reverse, ls_kvlist_t *out)
{
    ls_meta_t *in = ((gated_meta_t *)m)->inner;
    return in->ops->scan(in, s, sl, e, el, limit, reverse, out);
}
static ls_status g_txn(ls_meta_t *m, const ls_meta_cmp_t *c, size_t nc, const ls_meta_op_t *o,
                       size_t no, int64_t *rev)
{
    gated_meta_t *g = (gated_meta_t *)m;
    __atomic_add_fetch(&g->held, 1, __ATOMIC_SEQ_CST);
    while (__atomic_load_n(&g->hold, __ATOMIC_SEQ_CST))
        usleep(1000);
    __atomic_sub_fetch(&g->held, 1, __ATOMIC_SEQ_CST);
    __atomic_add_fetch(&g->txns, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&g->fail_txns, __ATOMIC_SEQ_CST) > 0) {
        __atomic_sub_fetch(&g->fail_txns, 1, __ATOMIC_SEQ_CST);
        return LS_EIO;
    }
    return g->inner->ops->txn(g->inner, c, nc, o, no, rev);
}
static ls_status g_lease_grant(ls_meta_t *m, int64_t ttl, int64_t *out)
{
    ls_meta_t *in = ((gated_meta_t *)m)->inner;
    return in->ops->lease_grant(in, ttl, out);
}
static ls_status g_lease_keepalive(ls_meta_t *m, int64_t lease)
{
    ls_meta_t *in = ((gated_meta_t *)m)->inner;
    return in->ops->lease_keepalive(in, lease);
}
static ls_status g_lease_revoke(ls_meta_t *m, int64_t lease)
{
    ls_meta_t *in = ((gated_meta_t *)m)->inner;
    return in->ops->lease_revoke(in, lease);
}
static ls_status g_watch(ls_meta_t *m, const void *p, size_t pl, int64_t after, ls_meta_watch_cb cb,
                         void *arg, ls_meta_watch_t **out)
{
    ls_meta_t *in = ((gated_meta_t *)m)->inner;
    return in->ops->watch(in, p, pl, after, cb, arg, out);
}
static void g_watch_cancel(ls_meta_t *m, ls_meta_watch_t *w)
{
    ls_meta_t *in = ((gated_meta_t *)m)->inner;
    in->ops->watch_cancel(in, w);
}
static void g_close(ls_meta_t *m)
{
    ls_meta_close(((gated_meta_t *)m)->inner);
    ls_free(m);
}

static gated_meta_t *gated_meta_open(void)
{
    gated_meta_t *g = ls_calloc(1, sizeof *g);
    g->inner = ls_meta_mem_open();
    g->ops = (ls_meta_ops_t){.name = "gated",
                             .max_txn_ops = g->inner->ops->max_txn_ops,
                             .get = g_get,
                             .scan = g_scan,
                             .txn = g_txn,
                             .lease_grant = g_lease_grant,
                             .lease_keepalive = g_lease_keepalive,
                             .lease_revoke = g_lease_revoke,
                             .watch = g_watch,
                             .watch_cancel = g_watch_cancel,
                             .close = g_close};
    g->base.ops = &g->ops;
    return g;
}

static void run_until_atomic(int *v, int want)
{
    for (int i = 0; i < 100000 && __atomic_load_n(v, __ATOMIC_SEQ_CST) < want; i++) {
        uv_run(&loop, UV_RUN_NOWAIT);
        usleep(100);
    }
}

static void run_until_objects(ls_objstore_t *os, size_t want)
{
    ls_objinfo_t *v;
    size_t n = 0;
    for (int i = 0; i < 100000; i++) {
        CHECK_EQ_INT(ls_objstore_list(os, "wal/", &v, &n), LS_OK);
        ls_objinfo_free(v, n);
        if (n >= want) break;
        uv_run(&loop, UV_RUN_NOWAIT);
        usleep(100);
    }
    CHECK_EQ_INT(n, want);
}

/* An acknowledgement that records when it came, among all of them. */
typedef struct {
    int done, order;
    ls_status st;
    int64_t offset;
} ord_ack_t;

static int ack_seq;

static void on_ord_ack(void *arg, ls_status st, int64_t base, int64_t start)
{
    ord_ack_t *a = arg;
    a->done++;
    a->order = ++ack_seq;
    a->st = st;
    a->offset = base;
}

static void append_ord(ls_logstore_t *ls, int64_t log, uint8_t fill, ord_ack_t *a)
{
    uint8_t buf[128];
    size_t len = make_entry(buf, 1, 1, fill, 4);
    ls_append_t ap = app(log, buf, len, 1, 1);
    ls_logstore_append(ls, &ap, on_ord_ack, a);
}

/* While the oldest flush's commit is held, the next flush is sealed and its
 * WAL object written at once (the linger is a minute: only pipelining seals
 * it), and a full one behind it too; nothing is acknowledged until the held
 * commit ends, then everything in seal order, offsets in append order. */
TEST(pipelined_flushes_commit_in_order)
{
    gated_meta_t *g = gated_meta_open();
    ls_objstore_t *os = ls_objstore_mem_open();
    ls_logstore_config_t c = cfg();
    c.flush_linger_ms = 60000;
    c.flush_max_bytes = 100; /* two 65-byte entries fill a flush */
    char err[256];
    ls_logstore_t *ls = ls_logstore_open(&loop, &g->base, os, &c, err, sizeof err);
    CHECK(ls);
    ack_seq = 0;
    ord_ack_t a1 = {0}, a2 = {0}, b3 = {0}, a3 = {0};
    g->hold = 1;
    append_ord(ls, 1, 1, &a1);
    run_until_atomic(&g->held, 1); /* flush 1 PUT, its commit running */
    append_ord(ls, 1, 2, &a2);
    run_until_objects(os, 2); /* flush 2 written behind the running commit */
    append_ord(ls, 2, 3, &b3);
    append_ord(ls, 1, 3, &a3);
    run_until_objects(os, 3); /* flush 3, full, behind both */
    for (int i = 0; i < 20; i++)
        uv_run(&loop, UV_RUN_NOWAIT);
    CHECK(!a1.done && !a2.done && !b3.done && !a3.done);          /* I2: offsets not yet durable */
    CHECK_EQ_INT(__atomic_load_n(&g->held, __ATOMIC_SEQ_CST), 1); /* one commit at a time */
    ls_wal_check_invariants(ls);
    __atomic_store_n(&g->hold, 0, __ATOMIC_SEQ_CST);
    run_until(&a3.done, 1);
    CHECK(a1.done == 1 && a2.done == 1 && b3.done == 1 && a3.done == 1);
    CHECK(a1.st == LS_OK && a2.st == LS_OK && b3.st == LS_OK && a3.st == LS_OK);
    CHECK_EQ_INT(a1.offset, 0);
    CHECK_EQ_INT(a2.offset, 1);
    CHECK_EQ_INT(a3.offset, 2);
    CHECK_EQ_INT(b3.offset, 0);
    CHECK(a1.order < a2.order && a2.order < b3.order && b3.order < a3.order); /* seal order */
    CHECK_EQ_INT(g->txns, 3);
    readres_t r = read_sync(ls, 1, 0, 1 << 20);
    CHECK_EQ_INT(r.res.st, LS_OK);
    CHECK_EQ_INT(r.res.bytes, 3 * 65);
    ls_read_result_free(&r.res);
    close_ls(ls);
    ls_objstore_close(os);
    ls_meta_close(&g->base);
}

/* The commit of the oldest flush fails while two later flushes are written
 * and one is open: every later entry of the failed log fails too (never
 * acknowledged ahead of the failed one), the flush left with nothing to
 * commit costs no metadata txn, another log's entry of the pipeline commits,
 * and the retries get the offsets the failed entries did not consume. */
TEST(failed_commit_mid_pipeline_fails_later_entries)
{
    gated_meta_t *g = gated_meta_open();
    ls_objstore_t *os = ls_objstore_mem_open();
    ls_logstore_config_t c = cfg();
    c.max_inflight_flushes = 3; /* the fourth flush stays open */
    char err[256];
    ls_logstore_t *ls = ls_logstore_open(&loop, &g->base, os, &c, err, sizeof err);
    CHECK(ls);
    ack_seq = 0;
    ord_ack_t a1 = {0}, a2 = {0}, b2 = {0}, a3 = {0}, a4 = {0};
    g->hold = 1;
    append_ord(ls, 1, 1, &a1);
    run_until_atomic(&g->held, 1);
    append_ord(ls, 1, 2, &a2);
    append_ord(ls, 2, 2, &b2);
    run_until_objects(os, 2);
    append_ord(ls, 1, 3, &a3);
    run_until_objects(os, 3);
    append_ord(ls, 1, 4, &a4); /* open: three flushes in flight */
    for (int i = 0; i < 50; i++) {
        uv_run(&loop, UV_RUN_NOWAIT);
        usleep(200);
    }
    CHECK(!a4.done);
    ls_wal_check_invariants(ls);
    __atomic_store_n(&g->fail_txns, 1, __ATOMIC_SEQ_CST);
    __atomic_store_n(&g->hold, 0, __ATOMIC_SEQ_CST);
    run_until(&a3.done, 1);
    run_until(&b2.done, 1);
    CHECK(a1.done == 1 && a2.done == 1 && a3.done == 1 && a4.done == 1 && b2.done == 1);
    CHECK(ls_status_retriable(a1.st));
    CHECK(ls_status_retriable(a2.st));
    CHECK(ls_status_retriable(a3.st));
    CHECK(ls_status_retriable(a4.st));
    CHECK_EQ_INT(b2.st, LS_OK); /* log 2 had nothing failed ahead of it */
    CHECK_EQ_INT(b2.offset, 0);
    CHECK(a1.order < a2.order && a1.order < a3.order && a1.order < a4.order);
    CHECK(a1.order < b2.order && a2.order < a3.order);
    /* flush 1 (failed) and flush 2 (log 2 only) reached the store; flush 3
     * held only doomed entries: no txn, its object is garbage for GC */
    CHECK_EQ_INT(g->txns, 2);
    ls_log_info_t info;
    ls_logstore_info(ls, 1, &info);
    CHECK_EQ_INT(info.high_watermark, 0); /* nothing of log 1 half-visible */
    ord_ack_t r1 = {0}, r2 = {0};
    append_ord(ls, 1, 1, &r1); /* the producer's retries, in order */
    append_ord(ls, 1, 2, &r2);
    run_until(&r2.done, 1);
    CHECK(r1.st == LS_OK && r2.st == LS_OK);
    CHECK_EQ_INT(r1.offset, 0);
    CHECK_EQ_INT(r2.offset, 1);
    ls_wal_check_invariants(ls);
    close_ls(ls);
    ls_objstore_close(os);
    ls_meta_close(&g->base);
}

/* The same with a failed PUT in the middle: a flush sealed behind it (while
 * the oldest commit is held) holds a later entry of the same log; it is
 * written, but fails without being committed, and the retries get the
 * offsets in append order. */
TEST(failed_put_mid_pipeline_fails_later_entries)
{
    gated_meta_t *g = gated_meta_open();
    failing_os_t *fos = ls_calloc(1, sizeof *fos);
    fos->base.ops = &failing_ops;
    fos->inner = ls_objstore_mem_open();
    ls_logstore_config_t c = cfg();
    char err[256];
    ls_logstore_t *ls = ls_logstore_open(&loop, &g->base, &fos->base, &c, err, sizeof err);
    CHECK(ls);
    ack_seq = 0;
    ord_ack_t a1 = {0}, a2 = {0}, a3 = {0};
    g->hold = 1;
    append_ord(ls, 1, 1, &a1);
    run_until_atomic(&g->held, 1);
    __atomic_store_n(&fos->fail_puts, 1, __ATOMIC_SEQ_CST);
    append_ord(ls, 1, 2, &a2); /* flush 2: its PUT fails */
    for (int i = 0; i < 10000; i++) {
        const ls_flush_t *f2 = ls->queue_head->next;
        if (f2 && f2->state == FLUSH_PUT_DONE) break;
        uv_run(&loop, UV_RUN_NOWAIT);
        usleep(200);
    }
    CHECK(ls->queue_head->next && ls->queue_head->next->put_st != LS_OK);
    __atomic_store_n(&fos->fail_puts, 0, __ATOMIC_SEQ_CST);
    append_ord(ls, 1, 3, &a3); /* flush 3, sealed before flush 2's failure is answered */
    run_until_objects(fos->inner, 2);
    CHECK(!a1.done && !a2.done && !a3.done);
    __atomic_store_n(&g->hold, 0, __ATOMIC_SEQ_CST);
    run_until(&a3.done, 1);
    CHECK_EQ_INT(a1.st, LS_OK);
    CHECK_EQ_INT(a1.offset, 0);
    CHECK(ls_status_retriable(a2.st));
    CHECK(ls_status_retriable(a3.st)); /* never acknowledged behind the failed a2 */
    CHECK(a1.order < a2.order && a2.order < a3.order);
    CHECK_EQ_INT(g->txns, 1); /* flush 3 reached no commit */
    ord_ack_t r2 = {0}, r3 = {0};
    append_ord(ls, 1, 2, &r2);
    append_ord(ls, 1, 3, &r3);
    run_until(&r3.done, 1);
    CHECK(r2.st == LS_OK && r3.st == LS_OK);
    CHECK_EQ_INT(r2.offset, 1);
    CHECK_EQ_INT(r3.offset, 2);
    close_ls(ls);
    ls_objstore_close(fos->inner);
    ls_objstore_close(&fos->base);
    ls_meta_close(&g->base);
}

/* A flush split over several txns (the store's op limit) whose first txn,
 * the one holding the WAL object's reference key, fails: the later txns
 * must not commit, or their index entries would name an object GC deletes
 * (it keeps only objects with a reference key). */
TEST(split_commit_stops_when_the_reference_txn_fails)
{
    gated_meta_t *g = gated_meta_open();
    g->ops.max_txn_ops = 4; /* the reference key + one log (3 ops) per txn */
    ls_objstore_t *os = ls_objstore_mem_open();
    ls_logstore_config_t c = cfg();
    char err[256];
    ls_logstore_t *ls = ls_logstore_open(&loop, &g->base, os, &c, err, sizeof err);
    CHECK(ls);
    ord_ack_t a1 = {0}, a2 = {0};
    g->fail_txns = 1;
    append_ord(ls, 1, 1, &a1);
    append_ord(ls, 2, 2, &a2); /* same flush, second txn */
    run_until(&a1.done, 1);
    run_until(&a2.done, 1);
    CHECK(ls_status_retriable(a1.st));
    CHECK(ls_status_retriable(a2.st));
    CHECK_EQ_INT(g->txns, 1);
    ord_ack_t r1 = {0}, r2 = {0};
    append_ord(ls, 1, 1, &r1);
    append_ord(ls, 2, 2, &r2);
    run_until(&r1.done, 1);
    run_until(&r2.done, 1);
    CHECK(r1.st == LS_OK && r2.st == LS_OK);
    CHECK_EQ_INT(r1.offset, 0);
    CHECK_EQ_INT(r2.offset, 0);
    CHECK_EQ_INT(g->txns, 3);
    close_ls(ls);
    ls_objstore_close(os);
    ls_meta_close(&g->base);
}

static void tick(uv_timer_t *t) {}

/* run_until bounded by wall time (a loop that could block forever fails
 * instead of hanging the test): false when want was not reached. */
static bool run_until_within(int *flag, int want, int64_t ms)
{
    uv_timer_t t;
    uv_timer_init(&loop, &t);
    uv_timer_start(&t, tick, 10, 10);
    uint64_t end = uv_now(&loop) + (uint64_t)ms;
    while (*flag < want && uv_now(&loop) < end)
        uv_run(&loop, UV_RUN_ONCE);
    uv_close((uv_handle_t *)&t, NULL);
    uv_run(&loop, UV_RUN_NOWAIT);
    return *flag >= want;
}

/* The WAL's PUTs and commits run on its own threads: appends are
 * acknowledged while every thread of libuv's shared pool is taken (by reads,
 * a compaction pass, ...) and jobs queue behind them. */
TEST(wal_commits_while_libuv_pool_is_busy)
{
    ls_meta_t *meta = ls_meta_mem_open();
    ls_objstore_t *os = ls_objstore_mem_open();
    ls_logstore_config_t c = cfg();
    char err[256];
    ls_logstore_t *ls = ls_logstore_open(&loop, meta, os, &c, err, sizeof err);
    CHECK(ls);
    static uv_work_t holds[64];
    uv_hold_pool(&loop, holds, 64);
    uint8_t buf[256];
    ack_t acks[20] = {{0}};
    for (int round = 0; round < 10; round++) {
        for (int l = 0; l < 2; l++) {
            size_t len = make_entry(buf, 2, 1000 + round, (uint8_t)round, 30);
            ls_append_t a = app(300 + l, buf, len, 2, 1000 + round);
            ls_logstore_append(ls, &a, on_ack, &acks[round * 2 + l]);
        }
        if (!run_until_within(&acks[round * 2 + 1].done, 1, 5000) ||
            !run_until_within(&acks[round * 2].done, 1, 5000))
            break;
    }
    int ok = 1;
    for (int i = 0; i < 20; i++)
        ok &= acks[i].done == 1 && acks[i].st == LS_OK && acks[i].offset == (i / 2) * 2;
    uv_hold_release();
    CHECK(ok);
    close_ls(ls);
    ls_objstore_close(os);
    ls_meta_close(meta);
}

int main(void)
{
    uv_loop_init(&loop);
    ls_check_invariants_enable(true);
    RUN(append_read_recover);
    RUN(wal_commits_while_libuv_pool_is_busy);
    RUN(group_commit_shares_objects);
    RUN(idempotent_sequences);
    RUN(fence_rejects_appends);
    RUN(failed_put_fails_batches_and_recovers);
    RUN(gc_deletes_only_uncommitted_objects);
    RUN(gc_one_collector_per_round);
    RUN(open_serves_before_gc);
    RUN(offset_for_time_entry_granularity);
    RUN(ambiguous_commits_resolved);
    RUN(wal_invariant_checker_catches_broken_state);
    RUN(transactions_markers_lso_and_aborted_index);
    RUN(read_committed_stops_at_lso_and_finds_aborted);
    RUN(watch_bursts_are_applied_in_bounded_steps);
    RUN(pipelined_flushes_commit_in_order);
    RUN(failed_commit_mid_pipeline_fails_later_entries);
    RUN(failed_put_mid_pipeline_fails_later_entries);
    RUN(split_commit_stops_when_the_reference_txn_fails);
    uv_loop_close(&loop);
    UNIT_DONE();
}
