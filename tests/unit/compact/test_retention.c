/* Log trim, retention and per-log ownership:
 *  - a trim removes WAL and CO index entries below the new start, counts
 *    down WAL object references (GC then deletes the objects), deletes the
 *    COs, and readers learn the start (reads below it are out of range);
 *  - trims and appends race without conflicts or lost appends;
 *  - DeleteRecords-style soft trims keep unmaterialized WAL entries;
 *  - the compactor's retention (retention.ms, retention.bytes) trims whole
 *    entries;
 *  - two compactors on one metadata store never compact one range twice, and
 *    one whose lease expired cannot commit. */
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "compact/compactor.h"
#include "compact/lease.h"
#include "log/log_meta.h"
#include "log/log_trim.h"
#include "log/logstore.h"
#include "objstore/objstore_faulty.h"
#include "log_fixture.h"
#include "unit.h"
#include "meta/meta_keys.h"

typedef struct {
    int done;
    ls_status st;
    int64_t first_base;
    size_t len;
} rd_t;
static void on_read(void *arg, ls_read_result_t *res)
{
    rd_t *r = arg;
    r->st = res->st;
    r->first_base =
        res->nslices ? (int64_t)ls_be64_get(res->slices[0].chunk->data + res->slices[0].off) : -1;
    r->len = res->bytes;
    ls_read_result_free(res);
    r->done = 1;
}
static rd_t read_at(ls_logstore_t *ls, int64_t log, int64_t off)
{
    rd_t r = {0};
    ls_logstore_read(ls, log, off, 1 << 24, on_read, &r);
    run_until(&r.done);
    return r;
}
typedef struct {
    int done;
    ls_status st;
    int64_t start;
} trim_t;
static void on_trim(void *arg, ls_status st, int64_t start)
{
    trim_t *t = arg;
    t->done = 1;
    t->st = st;
    t->start = start;
}
static trim_t trim(ls_logstore_t *ls, int64_t log, int64_t off, bool keep_wal)
{
    trim_t t = {0};
    ls_logstore_trim(ls, log, off, keep_wal, on_trim, &t);
    run_until(&t.done);
    return t;
}

static size_t count_keys(ls_meta_t *meta, const char *prefix)
{
    ls_kvlist_t l;
    if (ls_meta_scan_prefix(meta, prefix, 0, &l) != LS_OK) return (size_t)-1;
    size_t n = l.n;
    ls_kvlist_free(&l);
    return n;
}

/* rounds flushes, each with one 2-record entry for every log in logs[]. */
static int append_rounds(ls_logstore_t *ls, const int64_t *logs, int nlogs, int rounds, int64_t ts)
{
    uint8_t buf[128];
    for (int round = 0; round < rounds; round++) {
        ack_t a[4] = {{0}};
        for (int l = 0; l < nlogs; l++) {
            size_t len = make_entry(buf, 2, (uint8_t)round, ts);
            ls_append_t ap = {.log_id = logs[l],
                              .data = buf,
                              .len = len,
                              .offset_count = 2,
                              .max_timestamp = ts,
                              .producer = {.producer_id = -1}};
            ls_logstore_append(ls, &ap, on_ack, &a[l]);
        }
        for (int l = 0; l < nlogs; l++) {
            run_until(&a[l].done);
            if (a[l].st != LS_OK) return -1;
        }
    }
    return 0;
}

static void compact_once(ls_logstore_t *ls, ls_meta_t *meta, ls_objstore_t *os,
                         const ls_compactor_config_t *cc, ls_compactor_stats_t *st)
{
    ls_compactor_t *comp = ls_compactor_start(&loop, ls, meta, os, cc);
    int done = 0;
    ls_compactor_kick(comp, flag_cb, &done);
    run_until(&done);
    if (st) ls_compactor_stats(comp, st);
    int stopped = 0;
    ls_compactor_stop(comp, flag_cb, &stopped);
    run_until(&stopped);
    ls_compactor_free(comp);
}

static int64_t walobj_count(ls_meta_t *meta, const char *object)
{
    char key[200];
    snprintf(key, sizeof key, LS_KEY_WALOBJ "%s", object);
    ls_kv_t kv;
    if (ls_meta_get(meta, key, &kv) != LS_OK) return 0;
    long long n = -1;
    sscanf((const char *)kv.val, "n=%lld", &n);
    ls_kv_free(&kv);
    return n;
}

/* The object of the index entry with the given last offset. */
static char *entry_object(ls_meta_t *meta, int64_t log, int64_t last)
{
    char key[96];
    ls_log_idx_key(key, sizeof key, log, last);
    ls_kv_t kv;
    if (ls_meta_get(meta, key, &kv) != LS_OK) return NULL;
    ls_idx_entry_t e;
    char *obj = ls_idx_decode(kv.val, kv.vlen, &e) == LS_OK ? e.object : NULL;
    ls_kv_free(&kv);
    return obj;
}

TEST(trim_removes_wal_and_co_entries_and_releases_references)
{
    ls_meta_t *meta = ls_meta_mem_open();
    ls_objstore_t *os = ls_objstore_mem_open();
    ls_logstore_config_t c = lcfg();
    char err[256];
    ls_logstore_t *ls = ls_logstore_open(&loop, meta, os, &c, err, sizeof err);
    int64_t logs[2] = {40, 41};
    CHECK_EQ_INT(append_rounds(ls, logs, 2, 12, 1000), 0);
    ls_compactor_config_t cc = {
        .interval_ms = 1000, .min_age_ms = 0, .max_entries = 5, .max_bytes = 1 << 20};
    compact_once(ls, meta, os, &cc, NULL);
    CHECK_EQ_INT(count_objects(os, "co/"), 6);            /* [0,9] [10,19] [20,23] per log */
    CHECK_EQ_INT(append_rounds(ls, logs, 2, 3, 1000), 0); /* WAL [24,25] [26,27] [28,29] */
    char *wal2425 = entry_object(meta, 40, 25);
    CHECK(wal2425 != NULL);
    CHECK_EQ_INT(walobj_count(meta, wal2425), 2); /* both logs reference it */
    ls_log_info_t info;
    ls_logstore_info(ls, 40, &info);
    int64_t size_before = info.size_bytes;
    CHECK_EQ_INT(size_before, 15 * 77);

    /* cut inside the entry [26,27]: it stays whole, everything below goes */
    trim_t t = trim(ls, 40, 27, false);
    CHECK_EQ_INT(t.st, LS_OK);
    CHECK_EQ_INT(t.start, 27);
    ls_logstore_info(ls, 40, &info);
    CHECK_EQ_INT(info.log_start, 27);
    CHECK_EQ_INT(info.high_watermark, 30);
    CHECK_EQ_INT(info.size_bytes, 2 * 77);
    CHECK_EQ_INT(read_at(ls, 40, 26).st, LS_ERANGE);
    CHECK_EQ_INT(read_at(ls, 40, 0).st, LS_ERANGE);
    rd_t r = read_at(ls, 40, 27);
    CHECK_EQ_INT(r.st, LS_OK);
    CHECK_EQ_INT(r.first_base, 26); /* the batch holding the start, whole */
    CHECK_EQ_INT(r.len, 2 * 77);
    CHECK_EQ_INT(count_keys(meta, "/ls/log/0000000000000028/idx/"), 2);
    CHECK_EQ_INT(count_objects(os, "co/0000000000000028/"), 0);
    CHECK_EQ_INT(count_objects(os, "co/0000000000000029/"), 3);
    CHECK_EQ_INT(walobj_count(meta, wal2425), 1); /* log 41 still references it */
    /* below the start: nothing changes; beyond the high watermark: out of range */
    t = trim(ls, 40, 5, false);
    CHECK_EQ_INT(t.st, LS_OK);
    CHECK_EQ_INT(t.start, 27);
    CHECK_EQ_INT(trim(ls, 40, 31, false).st, LS_ERANGE);

    /* log 41 to its high watermark: the shared WAL object is released */
    t = trim(ls, 41, LS_TRIM_TO_HIGH_WATERMARK, false);
    CHECK_EQ_INT(t.st, LS_OK);
    CHECK_EQ_INT(t.start, 30);
    CHECK_EQ_INT(walobj_count(meta, wal2425), 0);
    CHECK_EQ_INT(count_objects(os, "co/"), 0);
    CHECK_EQ_INT(read_at(ls, 41, 30).st, LS_OK); /* at the high watermark: empty */
    int deleted = 0;
    CHECK_EQ_INT(ls_logstore_gc_now(ls, &deleted), LS_OK);
    /* the 12 flushes compaction released, and the [24,25] one; the last two
     * still hold log 40's entries */
    CHECK_EQ_INT(deleted, 13);
    CHECK_EQ_INT(count_objects(os, "wal/"), 2);
    /* appends go on after the trim, and a restarted store knows the starts */
    CHECK_EQ_INT(append_rounds(ls, logs, 1, 1, 1000), 0);
    close_store(ls);
    ls = ls_logstore_open(&loop, meta, os, &c, err, sizeof err);
    ls_logstore_info(ls, 40, &info);
    CHECK_EQ_INT(info.log_start, 27);
    CHECK_EQ_INT(info.high_watermark, 32);
    ls_logstore_info(ls, 41, &info);
    CHECK_EQ_INT(info.log_start, 30);
    CHECK_EQ_INT(info.size_bytes, 0);
    CHECK_EQ_INT(read_at(ls, 40, 26).st, LS_ERANGE);
    r = read_at(ls, 40, 28);
    CHECK_EQ_INT(r.st, LS_OK);
    CHECK_EQ_INT(r.first_base, 28);
    CHECK_EQ_INT(r.len, 2 * 77);
    close_store(ls);
    ls_free(wal2425);
    ls_objstore_close(os);
    ls_meta_close(meta);
}

TEST(trim_racing_appends_loses_nothing)
{
    ls_meta_t *meta = ls_meta_mem_open();
    ls_objstore_t *os = ls_objstore_mem_open();
    ls_logstore_config_t c = lcfg();
    char err[256];
    ls_logstore_t *ls = ls_logstore_open(&loop, meta, os, &c, err, sizeof err);
    uint8_t buf[128];
    int64_t next = 0;
    for (int i = 0; i < 30; i++) {
        /* an append in flight while a trim to the high watermark runs */
        ack_t a = {0};
        size_t len = make_entry(buf, 1, (uint8_t)i, 1000);
        ls_append_t ap = {.log_id = 9,
                          .data = buf,
                          .len = len,
                          .offset_count = 1,
                          .max_timestamp = 1000,
                          .producer = {.producer_id = -1}};
        ls_logstore_append(ls, &ap, on_ack, &a);
        trim_t t = {0};
        ls_logstore_trim(ls, 9, LS_TRIM_TO_HIGH_WATERMARK, false, on_trim, &t);
        run_until(&a.done);
        run_until(&t.done);
        CHECK_EQ_INT(a.st, LS_OK);
        CHECK_EQ_INT(a.off, next); /* offsets stay dense: no append lost or redone */
        next++;
        CHECK_EQ_INT(t.st, LS_OK);
        CHECK(t.start == next - 1 || t.start == next);
    }
    ls_log_info_t info;
    ls_logstore_info(ls, 9, &info);
    CHECK_EQ_INT(info.high_watermark, 30);
    /* whatever the last trim saw, the rest is readable from the start */
    rd_t r = read_at(ls, 9, info.log_start);
    CHECK_EQ_INT(r.st, LS_OK);
    CHECK_EQ_INT(r.len, (size_t)(30 - info.log_start) * 77);
    close_store(ls);
    ls_objstore_close(os);
    ls_meta_close(meta);
}

TEST(soft_trim_keeps_wal_entries_until_compacted)
{
    ls_meta_t *meta = ls_meta_mem_open();
    ls_objstore_t *os = ls_objstore_mem_open();
    ls_logstore_config_t c = lcfg();
    char err[256];
    ls_logstore_t *ls = ls_logstore_open(&loop, meta, os, &c, err, sizeof err);
    int64_t logs[1] = {5};
    CHECK_EQ_INT(append_rounds(ls, logs, 1, 4, ls_clock_wall_ms()), 0);
    trim_t t = trim(ls, 5, 6, true);
    CHECK_EQ_INT(t.st, LS_OK);
    CHECK_EQ_INT(t.start, 6);
    CHECK_EQ_INT(read_at(ls, 5, 5).st, LS_ERANGE);
    CHECK_EQ_INT(count_keys(meta, "/ls/log/0000000000000005/idx/"), 4); /* kept */
    /* compaction reads them (a table would materialize them) ... */
    ls_compactor_config_t cc = {.interval_ms = 1000,
                                .min_age_ms = 0,
                                .max_entries = 2,
                                .max_bytes = 1 << 20,
                                .retention = true,
                                .retention_ms = -1,
                                .retention_bytes = -1};
    ls_compactor_stats_t st;
    compact_once(ls, meta, os, &cc, &st);
    CHECK_EQ_INT(st.objects_written, 2); /* [0,3] and [4,7] */
    /* ... and the same pass's retention drops the CO wholly below the start */
    CHECK_EQ_INT(st.entries_trimmed, 1);
    CHECK_EQ_INT(count_keys(meta, "/ls/log/0000000000000005/idx/"), 1);
    CHECK_EQ_INT(count_objects(os, "co/"), 1);
    rd_t r = read_at(ls, 5, 6);
    CHECK_EQ_INT(r.st, LS_OK);
    CHECK_EQ_INT(r.first_base, 6);
    close_store(ls);
    ls_objstore_close(os);
    ls_meta_close(meta);
}

TEST(retention_by_time_and_bytes_trims_whole_entries)
{
    ls_meta_t *meta = ls_meta_mem_open();
    ls_objstore_t *os = ls_objstore_mem_open();
    ls_logstore_config_t c = lcfg();
    char err[256];
    ls_logstore_t *ls = ls_logstore_open(&loop, meta, os, &c, err, sizeof err);
    int64_t now = ls_clock_wall_ms();
    int64_t logs[2] = {70, 71};
    /* 4 old entries (an hour ago), then 4 recent ones */
    CHECK_EQ_INT(append_rounds(ls, logs, 2, 4, now - 3600 * 1000), 0);
    CHECK_EQ_INT(append_rounds(ls, logs, 2, 4, now), 0);
    /* retention.ms = 10 min: the old half goes, WAL entries included */
    ls_compactor_config_t cc = {.interval_ms = 1000,
                                .min_age_ms = 3600000,
                                .max_entries = 5,
                                .max_bytes = 1 << 20,
                                .retention = true,
                                .retention_ms = 600000,
                                .retention_bytes = -1};
    ls_compactor_stats_t st;
    compact_once(ls, meta, os, &cc, &st);
    CHECK_EQ_INT(st.objects_written, 0); /* hot window: nothing compacted */
    CHECK_EQ_INT(st.entries_trimmed, 8);
    ls_log_info_t info;
    ls_logstore_info(ls, 70, &info);
    CHECK_EQ_INT(info.log_start, 8);
    CHECK_EQ_INT(info.size_bytes, 4 * 77);
    CHECK_EQ_INT(read_at(ls, 70, 7).st, LS_ERANGE);
    CHECK_EQ_INT(read_at(ls, 70, 8).first_base, 8);
    int deleted = 0;
    CHECK_EQ_INT(ls_logstore_gc_now(ls, &deleted), LS_OK);
    CHECK_EQ_INT(deleted, 4); /* the old flushes: both logs released them */
    /* retention.bytes = 2.5 entries: as Kafka, an entry goes only while what
     * stays is still >= the limit (308 -> 231 bytes, then 154 < 192 stops) */
    cc.retention_ms = -1;
    cc.retention_bytes = 77 * 5 / 2;
    compact_once(ls, meta, os, &cc, &st);
    ls_logstore_info(ls, 71, &info);
    CHECK_EQ_INT(info.log_start, 10);
    CHECK_EQ_INT(info.size_bytes, 3 * 77);
    close_store(ls);
    ls_objstore_close(os);
    ls_meta_close(meta);
}

TEST(co_sweep_owed_after_a_failed_listing_is_paid_by_retention)
{
    ls_meta_t *meta = ls_meta_mem_open();
    char err[256];
    ls_objstore_t *os = ls_objstore_open("faulty+mem://", 0, err, sizeof err);
    CHECK(os != NULL);
    ls_logstore_config_t c = lcfg();
    ls_logstore_t *ls = ls_logstore_open(&loop, meta, os, &c, err, sizeof err);
    int64_t logs[1] = {3};
    CHECK_EQ_INT(append_rounds(ls, logs, 1, 10, 1000), 0);
    ls_compactor_config_t cc = {.interval_ms = 1000,
                                .min_age_ms = 0,
                                .max_entries = 5,
                                .max_bytes = 1 << 20,
                                .retention = true,
                                .retention_ms = -1,
                                .retention_bytes = -1};
    compact_once(ls, meta, os, &cc, NULL);
    CHECK_EQ_INT(count_objects(os, "co/"), 2); /* [0,9] [10,19] */
    /* the trim commits, its sweep cannot list (as if the broker died there) */
    CHECK_EQ_INT(ls_objstore_faulty_set(os, "list_error_rate=1", err, sizeof err), 0);
    CHECK_EQ_INT(trim(ls, 3, 10, false).st, LS_OK);
    CHECK_EQ_INT(ls_objstore_faulty_set(os, "list_error_rate=0", err, sizeof err), 0);
    CHECK_EQ_INT(count_objects(os, "co/"), 2);
    ls_start_t start;
    int64_t rev;
    CHECK_EQ_INT(ls_log_start_read(meta, 3, &start, &rev), LS_OK);
    CHECK_EQ_INT(start.index_start, 10);
    CHECK_EQ_INT(start.swept_below, 0); /* the debt is durable */
    /* the next retention check pays it, with no limits configured at all */
    ls_compactor_stats_t st;
    compact_once(ls, meta, os, &cc, &st);
    CHECK_EQ_INT(st.cos_deleted, 1);
    CHECK_EQ_INT(count_objects(os, "co/"), 1);
    CHECK_EQ_INT(ls_log_start_read(meta, 3, &start, &rev), LS_OK);
    CHECK_EQ_INT(start.swept_below, 10);
    CHECK_EQ_INT(read_at(ls, 3, 10).first_base, 10);
    close_store(ls);
    ls_objstore_close(os);
    ls_meta_close(meta);
}

TEST(start_record_round_trips_and_rejects_damage)
{
    ls_start_t s = {.log_start = 27, .trimmed_bytes = 1155, .index_start = 26, .swept_below = 20};
    ls_buf_t b;
    ls_buf_init(&b);
    ls_start_encode(&s, &b);
    CHECK_EQ_INT(b.len, 33);
    ls_start_t d;
    CHECK_EQ_INT(ls_start_decode(b.data, b.len, &d), LS_OK);
    CHECK(d.log_start == 27 && d.trimmed_bytes == 1155 && d.index_start == 26 &&
          d.swept_below == 20);
    CHECK_EQ_INT(ls_start_decode(b.data, b.len - 1, &d), LS_ECORRUPT); /* truncated */
    b.data[0] = 2;
    CHECK_EQ_INT(ls_start_decode(b.data, b.len, &d), LS_ECORRUPT); /* unknown version */
    ls_buf_free(&b);
    s.swept_below = 30; /* swept beyond the index start: impossible */
    ls_buf_init(&b);
    ls_start_encode(&s, &b);
    CHECK_EQ_INT(ls_start_decode(b.data, b.len, &d), LS_ECORRUPT);
    ls_buf_free(&b);
}

typedef struct {
    ls_compactor_t *c;
    int done;
} kicked_t;

TEST(two_compactors_never_compact_one_range_twice)
{
    ls_meta_t *meta = ls_meta_mem_open();
    char err[256];
    /* slow GETs keep both passes running at once */
    ls_objstore_t *os =
        ls_objstore_open("faulty+mem://?ops=get&latency_p50_ms=20", 0, err, sizeof err);
    CHECK(os != NULL);
    ls_logstore_config_t c = lcfg();
    ls_logstore_t *ls = ls_logstore_open(&loop, meta, os, &c, err, sizeof err);
    int64_t logs[2] = {40, 41};
    CHECK_EQ_INT(append_rounds(ls, logs, 2, 10, 1000), 0);
    ls_compactor_config_t cc = {.interval_ms = 100000,
                                .min_age_ms = 0,
                                .max_entries = 5,
                                .max_bytes = 1 << 20,
                                .owner_name = "a"};
    kicked_t k[2];
    for (int i = 0; i < 2; i++) {
        cc.owner_name = i ? "b" : "a";
        k[i].c = ls_compactor_start(&loop, ls, meta, os, &cc);
        k[i].done = 0;
    }
    ls_compactor_kick(k[0].c, flag_cb, &k[0].done);
    ls_compactor_kick(k[1].c, flag_cb, &k[1].done);
    run_until(&k[0].done);
    run_until(&k[1].done);
    ls_compactor_stats_t s[2];
    for (int i = 0; i < 2; i++)
        ls_compactor_stats(k[i].c, &s[i]);
    /* each range compacted exactly once, by one of them */
    CHECK_EQ_INT(s[0].objects_written + s[1].objects_written, 4);
    CHECK_EQ_INT(s[0].entries_replaced + s[1].entries_replaced, 20);
    CHECK_EQ_INT(s[0].conflicts + s[1].conflicts, 0);
    CHECK(s[0].logs_owned_elsewhere + s[1].logs_owned_elsewhere >= 1); /* they did contend */
    CHECK_EQ_INT(count_objects(os, "co/"), 4);
    CHECK_EQ_INT(count_keys(meta, LS_KEY_WALOBJ), 0);
    CHECK_EQ_INT(count_keys(meta, LS_KEY_OWNER_COMPACT), 0); /* released at the end */
    for (int i = 0; i < 2; i++) {
        int stopped = 0;
        ls_compactor_stop(k[i].c, flag_cb, &stopped);
        run_until(&stopped);
        ls_compactor_free(k[i].c);
    }
    close_store(ls);
    ls_objstore_close(os);
    ls_meta_close(meta);
}

TEST(compactor_whose_lease_expired_cannot_commit)
{
    ls_meta_t *meta = ls_meta_mem_open();
    char err[256];
    ls_objstore_t *os =
        ls_objstore_open("faulty+mem://?ops=get&latency_p50_ms=40", 0, err, sizeof err);
    CHECK(os != NULL);
    ls_logstore_config_t c = lcfg();
    ls_logstore_t *ls = ls_logstore_open(&loop, meta, os, &c, err, sizeof err);
    int64_t logs[1] = {40};
    CHECK_EQ_INT(append_rounds(ls, logs, 1, 12, 1000), 0);
    ls_compactor_config_t cc = {.interval_ms = 100000,
                                .min_age_ms = 0,
                                .max_entries = 31,
                                .max_bytes = 1 << 20,
                                .owner_name = "stalled"};
    ls_compactor_t *a = ls_compactor_start(&loop, ls, meta, os, &cc);
    int a_done = 0;
    ls_compactor_kick(a, flag_cb, &a_done);
    /* wait until A owns the log (it is now reading, slowly) */
    ls_kvlist_t l = {0};
    for (int i = 0; i < 5000; i++) {
        uv_run(&loop, UV_RUN_NOWAIT);
        CHECK_EQ_INT(ls_meta_scan_prefix(meta, LS_KEY_OWNER_COMPACT, 0, &l), LS_OK);
        if (l.n) break;
        ls_kvlist_free(&l);
        usleep(1000);
    }
    CHECK_EQ_INT(l.n, 1);
    /* A's lease expires (as if A stalled past its TTL): its owner key goes */
    CHECK_EQ_INT(ls_meta_lease_revoke(meta, l.v[0].lease), LS_OK);
    ls_kvlist_free(&l);
    CHECK_EQ_INT(count_keys(meta, LS_KEY_OWNER_COMPACT), 0);
    /* B takes the log over and compacts it while A is still reading */
    cc.owner_name = "successor";
    ls_compactor_t *b = ls_compactor_start(&loop, ls, meta, os, &cc);
    int b_done = 0;
    ls_compactor_kick(b, flag_cb, &b_done);
    run_until(&b_done);
    run_until(&a_done);
    ls_compactor_stats_t sa, sb;
    ls_compactor_stats(a, &sa);
    ls_compactor_stats(b, &sb);
    CHECK_EQ_INT(sb.objects_written, 1);
    CHECK_EQ_INT(sa.objects_written, 0); /* its swap was fenced */
    CHECK_EQ_INT(sa.conflicts, 1);
    CHECK_EQ_INT(count_keys(meta, "/ls/log/0000000000000028/idx/"), 1);
    rd_t r = read_at(ls, 40, 0);
    CHECK_EQ_INT(r.st, LS_OK);
    CHECK_EQ_INT(r.len, 12 * 77);
    ls_compactor_t *both[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        int stopped = 0;
        ls_compactor_stop(both[i], flag_cb, &stopped);
        run_until(&stopped);
        ls_compactor_free(both[i]);
    }
    close_store(ls);
    ls_objstore_close(os);
    ls_meta_close(meta);
}

TEST(claims_are_exclusive_and_fence_commits)
{
    ls_meta_t *meta = ls_meta_mem_open();
    ls_lease_owner_t *a = ls_lease_owner_new(meta, "a", 60000);
    ls_lease_owner_t *b = ls_lease_owner_new(meta, "b", 60000);
    ls_lease_claim_t ca, cb;
    CHECK_EQ_INT(ls_lease_claim_log(a, 7, &ca), LS_OK);
    CHECK_EQ_INT(ls_lease_claim_log(b, 7, &cb), LS_EEXISTS);
    CHECK_EQ_INT(ls_lease_claim_log(b, 8, &cb), LS_OK); /* other logs are free */
    ls_lease_release(b, &cb);
    /* a commit fenced by A's claim applies while the claim holds ... */
    ls_meta_cmp_t fence = ls_lease_claim_cmp(&ca);
    ls_meta_op_t put = {.kind = LS_META_OP_PUT, .key = "/x", .klen = 2, .val = "1", .vlen = 1};
    CHECK_EQ_INT(ls_meta_txn(meta, &fence, 1, &put, 1, NULL), LS_OK);
    /* ... and not once the lease is gone, even after B claimed the log */
    ls_kv_t kv;
    CHECK_EQ_INT(ls_meta_get(meta, ca.key, &kv), LS_OK);
    CHECK_EQ_INT(ls_meta_lease_revoke(meta, kv.lease), LS_OK);
    ls_kv_free(&kv);
    CHECK_EQ_INT(ls_lease_owner_keepalive(a), LS_ENOTFOUND);
    CHECK_EQ_INT(ls_lease_claim_log(b, 7, &cb), LS_OK);
    CHECK_EQ_INT(ls_meta_txn(meta, &fence, 1, &put, 1, NULL), LS_ECONFLICT);
    /* A's release does not remove B's key; A can claim again after B's release */
    ls_lease_release(a, &ca);
    CHECK_EQ_INT(ls_lease_claim_log(a, 7, &ca), LS_EEXISTS);
    ls_lease_release(b, &cb);
    CHECK_EQ_INT(ls_lease_claim_log(a, 7, &ca), LS_OK); /* with a fresh lease */
    ls_lease_release(a, &ca);
    CHECK_EQ_INT(count_keys(meta, LS_KEY_OWNER_COMPACT), 0);
    ls_lease_owner_free(a);
    ls_lease_owner_free(b);
    ls_meta_close(meta);
}

/* The lease lives as long as its owner, whatever the event loop does: here
 * no loop runs at all for 2.5 TTLs (as during a frozen loop step, issue 29
 * §8), and a claim made under the lease still fences commits (before: the
 * lease was renewed only from a loop timer, so it expired and the task's
 * finished work could not commit). */
TEST(lease_is_renewed_without_the_loop)
{
    ls_meta_t *meta = ls_meta_mem_open();
    ls_lease_owner_t *a = ls_lease_owner_new(meta, "a", 2000);
    ls_lease_claim_t ca;
    CHECK_EQ_INT(ls_lease_claim_log(a, 7, &ca), LS_OK);
    sleep(5);
    ls_meta_cmp_t fence = ls_lease_claim_cmp(&ca);
    ls_meta_op_t put = {.kind = LS_META_OP_PUT, .key = "/x", .klen = 2, .val = "1", .vlen = 1};
    CHECK_EQ_INT(ls_meta_txn(meta, &fence, 1, &put, 1, NULL), LS_OK);
    ls_lease_owner_t *b = ls_lease_owner_new(meta, "b", 2000);
    ls_lease_claim_t cb;
    CHECK_EQ_INT(ls_lease_claim_log(b, 7, &cb), LS_EEXISTS);
    ls_lease_release(a, &ca);
    ls_lease_owner_free(a);
    ls_lease_owner_free(b);
    ls_meta_close(meta);
}

TEST(a_restarted_owner_frees_its_previous_runs_claims)
{
    ls_meta_t *meta = ls_meta_mem_open();
    /* a crashed run of broker-4 left claims under a live lease */
    ls_lease_owner_t *dead = ls_lease_owner_new(meta, "broker-4/0000abcd", 600000);
    ls_lease_owner_t *other = ls_lease_owner_new(meta, "broker-40/00000001", 600000);
    ls_lease_claim_t c1, c2, c3;
    CHECK_EQ_INT(ls_lease_claim_log(dead, 1, &c1), LS_OK);
    CHECK_EQ_INT(ls_lease_claim_log(dead, 2, &c2), LS_OK);
    CHECK_EQ_INT(ls_lease_claim_log(other, 3, &c3), LS_OK);
    ls_lease_owner_t *next = ls_lease_owner_new(meta, "broker-4/0000beef", 600000);
    ls_lease_claim_t n1;
    CHECK_EQ_INT(ls_lease_claim_log(next, 1, &n1), LS_EEXISTS);
    CHECK_EQ_INT(ls_lease_owner_reclaim(next, "broker-4"), 1); /* one lease, two keys */
    CHECK_EQ_INT(ls_lease_claim_log(next, 1, &n1), LS_OK);
    ls_lease_claim_t o3;
    CHECK_EQ_INT(ls_lease_claim_log(next, 3, &o3), LS_EEXISTS); /* broker-40 is someone else */
    CHECK_EQ_INT(ls_lease_owner_reclaim(next, "broker-4"), 0);  /* its own claim stays */
    ls_lease_release(next, &n1);
    ls_lease_release(other, &c3);
    CHECK_EQ_INT(count_keys(meta, LS_KEY_OWNER_COMPACT), 0);
    ls_lease_owner_free(next);
    ls_lease_owner_free(other);
    ls_lease_owner_free(dead);
    ls_meta_close(meta);
}

int main(void)
{
    uv_loop_init(&loop);
    RUN(a_restarted_owner_frees_its_previous_runs_claims);
    RUN(trim_removes_wal_and_co_entries_and_releases_references);
    RUN(trim_racing_appends_loses_nothing);
    RUN(soft_trim_keeps_wal_entries_until_compacted);
    RUN(retention_by_time_and_bytes_trims_whole_entries);
    RUN(co_sweep_owed_after_a_failed_listing_is_paid_by_retention);
    RUN(start_record_round_trips_and_rejects_damage);
    RUN(claims_are_exclusive_and_fence_commits);
    RUN(lease_is_renewed_without_the_loop);
    RUN(two_compactors_never_compact_one_range_twice);
    RUN(compactor_whose_lease_expired_cannot_commit);
    uv_loop_close(&loop);
    UNIT_DONE();
}
