/* In-table ranges of a log (log/cold_source.h): index entries of kind
 * LS_IDX_TABLE read through a cold-range source. The source here is a
 * stand-in for the table (the records kept as rows, rebuilt with the real
 * batcher of lake/cold_batches.h); the log side is the real logstore on
 * the in-memory stores: reads across WAL / in-table boundaries return every
 * record exactly once in order, at any start and size; a stale plan is
 * retried; bad or failing sources give precise errors; trims, restarts and
 * offset-for-time work over in-table ranges. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/compress.h"
#include "lake/cold_batches.h"
#include "log/cold_source.h"
#include "log/log_meta.h"
#include "log/log_trim.h"
#include "log_fixture.h"
#include "meta/meta.h"
#include "unit.h"

#define LOG 91
#define N 400 /* records, one batch of 1..3 records per append */

static ls_meta_t *meta;
static ls_objstore_t *os;
static uint8_t g_val[N][64];
static int64_t g_ts[N];

/* The stand-in table: every record as a row. */
static ls_raw_record_t row_of(int64_t off)
{
    return (ls_raw_record_t){.offset = off,
                             .timestamp_ms = g_ts[off],
                             .key_len = -1,
                             .value = g_val[off],
                             .value_len = 1 + off % 63};
}

typedef struct fake {
    int calls;
    int notfound_first;  /* answer LS_ENOTFOUND this many times */
    ls_status fail;      /* answer this (not LS_OK) */
    bool skew;           /* start one record late */
    int64_t asked_below; /* lowest `from` asked */
    size_t cap_seen;     /* the largest capacity `out` came with */
} fake_t;
static fake_t g_fake;

static ls_status fake_read(void *ctx, int64_t log_id, int64_t from, int64_t to, size_t max_bytes,
                           ls_buf_t *out, int64_t *next, char *err, size_t errlen)
{
    fake_t *f = ctx;
    __atomic_add_fetch(&f->calls, 1, __ATOMIC_SEQ_CST);
    if (from < f->asked_below) f->asked_below = from;
    if (out->cap > f->cap_seen) f->cap_seen = out->cap;
    if (log_id != LOG || from > to) return LS_EINVAL;
    if (f->notfound_first > 0) {
        f->notfound_first--;
        snprintf(err, errlen, "data file gone");
        return LS_ENOTFOUND;
    }
    if (f->fail != LS_OK) {
        snprintf(err, errlen, "store down");
        return f->fail;
    }
    ls_cold_batcher_t b;
    ls_cold_batcher_init(&b, LS_CODEC_LZ4, false, 300);
    int64_t o = from + (f->skew ? 1 : 0);
    for (; o <= to && o < N; o++) {
        if (b.records > 0 && ls_cold_batcher_bytes(&b) + 200 > max_bytes) break;
        ls_raw_record_t r = row_of(o);
        if (ls_cold_batcher_add(&b, &r) != LS_OK) abort();
    }
    if (ls_cold_batcher_flush(&b) != LS_OK) abort();
    ls_buf_append(out, b.out.data, b.out.len);
    *next = o;
    ls_cold_batcher_free(&b);
    return LS_OK;
}

static ls_logstore_t *open_store(void)
{
    ls_logstore_config_t c = lcfg();
    char err[256];
    ls_logstore_t *ls = ls_logstore_open(&loop, meta, os, &c, err, sizeof err);
    ls_cold_source_t src = {fake_read, &g_fake};
    if (ls) ls_logstore_set_cold_source(ls, &src);
    return ls;
}

/* Appends the N records (several flushes), real batches of 1..3 records. */
static int build(ls_logstore_t *ls)
{
    for (int i = 0; i < N; i++) {
        for (int k = 0; k < 64; k++)
            g_val[i][k] = (uint8_t)(i * 31 + k);
        g_ts[i] = 1000000 + i * 10;
    }
    int64_t off = 0;
    while (off < N) {
        int n = 1 + (int)(off % 3);
        if (off + n > N) n = (int)(N - off);
        ls_cold_batcher_t b;
        ls_cold_batcher_init(&b, LS_CODEC_NONE, false, 1 << 20);
        for (int k = 0; k < n; k++) {
            ls_raw_record_t r = row_of(off + k);
            r.offset = k; /* the log assigns offsets */
            if (ls_cold_batcher_add(&b, &r) != LS_OK) return 0;
        }
        ls_cold_batcher_flush(&b);
        ack_t a = {0};
        ls_append_t ap = {.log_id = LOG,
                          .data = b.out.data,
                          .len = b.out.len,
                          .offset_count = n,
                          .max_timestamp = g_ts[off + n - 1],
                          .producer = {.producer_id = -1}};
        ls_logstore_append(ls, &ap, on_ack, &a);
        run_until(&a.done);
        ls_cold_batcher_free(&b);
        if (a.st != LS_OK || a.off != off) return 0;
        off += n;
    }
    return 1;
}

/* Replaces the index entries inside [first, last] (which must start and
 * end on entry bounds) by one in-table entry, as the compaction pass will:
 * one metadata txn, the new entry under the last replaced key; then tells
 * the logstore (ls_logstore_apply_compaction). */
static int mark_in_table(ls_logstore_t *ls, int64_t first, int64_t last)
{
    char prefix[64];
    ls_log_idx_prefix(prefix, sizeof prefix, LOG);
    ls_kvlist_t l;
    if (ls_meta_scan_prefix(meta, prefix, 0, &l) != LS_OK) return 0;
    ls_meta_op_t ops[N + 1];
    size_t nops = 0;
    int64_t bytes = 0, max_ts = -1, lo = -1, hi = -1;
    for (size_t i = 0; i < l.n; i++) {
        ls_idx_entry_t e;
        if (ls_idx_decode(l.v[i].val, l.v[i].vlen, &e) != LS_OK) return 0;
        if (e.first_offset >= first && e.last_offset <= last) {
            if (lo < 0) lo = e.first_offset;
            hi = e.last_offset;
            bytes += e.len;
            if (e.max_timestamp > max_ts) max_ts = e.max_timestamp;
            ops[nops++] =
                (ls_meta_op_t){.kind = LS_META_OP_DEL, .key = l.v[i].key, .klen = l.v[i].klen};
        }
        ls_idx_clear(&e);
    }
    if (lo != first || hi != last) return 0;
    ls_idx_entry_t t = {.kind = LS_IDX_TABLE,
                        .first_offset = first,
                        .last_offset = last,
                        .max_timestamp = max_ts,
                        .len = (uint32_t)bytes,
                        .object = LS_COLD_TABLE_OBJECT};
    char key[96];
    ls_log_idx_key(key, sizeof key, LOG, last);
    ls_buf_t v;
    ls_buf_init(&v);
    ls_idx_encode(&t, &v);
    nops--; /* the last replaced key is overwritten, not deleted */
    ops[nops++] = (ls_meta_op_t){
        .kind = LS_META_OP_PUT, .key = key, .klen = strlen(key), .val = v.data, .vlen = v.len};
    /* the store bounds ops per txn: deletes first (no read runs meanwhile) */
    ls_status st = LS_OK;
    for (size_t i = 0; i + 1 < nops && st == LS_OK; i++) {
        char k[128];
        snprintf(k, sizeof k, "%.*s", (int)ops[i].klen, (const char *)ops[i].key);
        st = ls_meta_del(meta, k);
    }
    if (st == LS_OK) st = ls_meta_put(meta, key, v.data, v.len);
    ls_buf_free(&v);
    ls_kvlist_free(&l);
    if (st != LS_OK) return 0;
    ls_logstore_apply_compaction(ls, LOG, &t);
    return 1;
}

/* An entry bound near x: the first offset of the entry holding x. */
static int64_t entry_start(int64_t x)
{
    char prefix[64];
    ls_log_idx_prefix(prefix, sizeof prefix, LOG);
    ls_kvlist_t l;
    int64_t r = -1;
    if (ls_meta_scan_prefix(meta, prefix, 0, &l) != LS_OK) return -1;
    for (size_t i = 0; i < l.n && r < 0; i++) {
        ls_idx_entry_t e;
        ls_idx_decode(l.v[i].val, l.v[i].vlen, &e);
        if (e.first_offset <= x && x <= e.last_offset) r = e.first_offset;
        ls_idx_clear(&e);
    }
    ls_kvlist_free(&l);
    return r;
}

typedef struct {
    int64_t want; /* next offset expected */
    int bad;
} chk_t;

static int chk_rec(void *arg, const ls_record_view_t *v);
static int64_t g_base;
static int chk_rec(void *arg, const ls_record_view_t *v)
{
    chk_t *c = arg;
    int64_t off = g_base + v->offset_delta;
    if (off < c->want) return 0; /* before the fetch offset, inside its batch */
    ls_raw_record_t e = row_of(off);
    if (off != c->want || v->timestamp != e.timestamp_ms || v->value_len != e.value_len ||
        memcmp(v->value, e.value, (size_t)e.value_len) != 0 || v->key_len != -1)
        c->bad = 1;
    c->want = off + 1;
    return 0;
}

/* Consumes [from, N) in fetches of max bytes like a Kafka consumer (each
 * fetch at the next offset wanted); 1 when every record came once, in
 * order, exact. */
static int consume(ls_logstore_t *ls, int64_t from, size_t max)
{
    chk_t c = {from, 0};
    for (int guard = 0; c.want < N && guard < 10 * N; guard++) {
        read_got_t r = {0};
        ls_logstore_read(ls, LOG, c.want, max, on_read_got, &r);
        run_until(&r.done);
        if (r.st != LS_OK || r.bytes.len == 0) {
            printf("  read at %lld: %s, %zu bytes\n", (long long)c.want, ls_status_str(r.st),
                   r.bytes.len);
            ls_buf_free(&r.bytes);
            return 0;
        }
        for (size_t p = 0; p < r.bytes.len;) {
            g_base = (int64_t)ls_be64_get(r.bytes.data + p);
            size_t size = 12 + ls_be32_get(r.bytes.data + p + 8);
            if (ls_records_foreach(r.bytes.data + p, size, 1 << 20, chk_rec, &c) != LS_RB_OK)
                c.bad = 1;
            p += size;
        }
        ls_buf_free(&r.bytes);
        if (c.bad) {
            printf("  wrong record near %lld\n", (long long)c.want);
            return 0;
        }
    }
    return c.want == N;
}

static read_got_t read_once(ls_logstore_t *ls, int64_t off, size_t max)
{
    read_got_t r = {0};
    ls_logstore_read(ls, LOG, off, max, on_read_got, &r);
    run_until(&r.done);
    return r;
}

static int64_t g_lo, g_hi; /* the in-table range */

static ls_logstore_t *setup(void)
{
    meta = ls_meta_mem_open();
    os = ls_objstore_mem_open();
    memset(&g_fake, 0, sizeof g_fake);
    g_fake.asked_below = INT64_MAX;
    ls_logstore_t *ls = open_store();
    if (!ls || !build(ls)) {
        printf("  build failed\n");
        return NULL;
    }
    g_lo = entry_start(37);
    g_hi = entry_start(301) - 1;
    if (g_lo <= 0 || g_hi <= g_lo || !mark_in_table(ls, g_lo, g_hi)) {
        printf("  marking [%lld, %lld] failed\n", (long long)g_lo, (long long)g_hi);
        return NULL;
    }
    return ls;
}

static void teardown(ls_logstore_t *ls)
{
    (void)count_objects;
    close_store(ls);
    ls_objstore_close(os);
    ls_meta_close(meta);
}

TEST(reads_across_wal_and_table_ranges)
{
    ls_logstore_t *ls = setup();
    CHECK(ls);
    size_t sizes[] = {1, 700, 5000, 1 << 20};
    for (size_t s = 0; s < 4; s++) {
        CHECK(consume(ls, 0, sizes[s]));
        CHECK(consume(ls, g_lo + 5, sizes[s])); /* mid-range start */
        CHECK(consume(ls, g_hi, sizes[s]));     /* its last record */
    }
    ls_logstore_stats_t st;
    ls_logstore_stats(ls, &st);
    CHECK(st.cold_reads > 0);
    CHECK(g_fake.asked_below >= g_lo);
    /* a fetch of max 1 byte in the range: the one batch holding the offset
     * (from the cached block: it may start before it, as Kafka's do) */
    read_got_t r = read_once(ls, g_lo + 3, 1);
    CHECK(r.st == LS_OK && r.bytes.len > 0);
    int64_t base = (int64_t)ls_be64_get(r.bytes.data);
    CHECK(base <= g_lo + 3 &&
          base + (int32_t)ls_be32_get(r.bytes.data + LS_RB_OFF_LAST_OFFSET_DELTA) >= g_lo + 3);
    CHECK_EQ_INT(12 + ls_be32_get(r.bytes.data + 8), r.bytes.len);
    ls_buf_free(&r.bytes);
    teardown(ls);
}

TEST(restart_loads_in_table_entries)
{
    ls_logstore_t *ls = setup();
    CHECK(ls);
    close_store(ls);
    ls = open_store();
    CHECK(ls);
    CHECK(consume(ls, 0, 4096));
    teardown(ls);
}

TEST(stale_plan_retried_errors_precise)
{
    ls_logstore_t *ls = setup();
    CHECK(ls);
    /* (before any read of the range: a rebuilt block is cached after) */
    /* a plan that stays stale: corrupt (logged), never a wrong answer */
    g_fake.notfound_first = 100;
    read_got_t r = read_once(ls, g_lo, 4096);
    CHECK(r.st == LS_ECORRUPT && r.bytes.len == 0);
    ls_buf_free(&r.bytes);
    g_fake.notfound_first = 0;
    /* a failing store: the storage error the fetch maps to a retry */
    g_fake.fail = LS_EIO;
    r = read_once(ls, g_lo + 1, 4096);
    CHECK(r.st == LS_EIO && r.bytes.len == 0);
    ls_buf_free(&r.bytes);
    /* WAL records before the range come back, the range's error stops it */
    r = read_once(ls, g_lo - 1, 1 << 20);
    CHECK(r.st == LS_OK && r.bytes.len > 0);
    CHECK_EQ_INT((int64_t)ls_be64_get(r.bytes.data), g_lo - 1);
    ls_buf_free(&r.bytes);
    g_fake.fail = LS_OK;
    /* batches not starting at the asked offset: refused as corrupt */
    g_fake.skew = true;
    r = read_once(ls, g_lo + 2, 4096);
    CHECK(r.st == LS_ECORRUPT && r.bytes.len == 0);
    ls_buf_free(&r.bytes);
    g_fake.skew = false;
    /* no source wired */
    ls_logstore_set_cold_source(ls, NULL);
    r = read_once(ls, g_lo + 2, 4096);
    CHECK(r.st == LS_EIO);
    ls_buf_free(&r.bytes);
    ls_cold_source_t src = {fake_read, &g_fake};
    ls_logstore_set_cold_source(ls, &src);
    /* a plan stale twice: retried, then served */
    g_fake.notfound_first = 2;
    CHECK(consume(ls, g_lo, 1 << 20));
    CHECK_EQ_INT(g_fake.notfound_first, 0);
    teardown(ls);
}

/* A consumer catching up in small fetches: the source rebuilds read-ahead
 * blocks, the fetches after the first of a block come from the cache. */
TEST(rebuilt_blocks_cached_for_following_fetches)
{
    ls_logstore_t *ls = setup();
    CHECK(ls);
    g_fake.calls = 0;
    ls_logstore_stats_t a, b;
    ls_logstore_stats(ls, &a);
    CHECK(consume(ls, g_lo, 300));
    ls_logstore_stats(ls, &b);
    CHECK(b.cache_hits - a.cache_hits > 20);
    CHECK(g_fake.calls <= 2); /* the whole range fits one read-ahead block */
    /* the cached block answers a second reader too */
    g_fake.calls = 0;
    CHECK(consume(ls, g_lo + 7, 1000));
    CHECK_EQ_INT(g_fake.calls, 0);
    teardown(ls);
}

/* A fetch that allows far more than a read-ahead block (a client may ask
 * for 2 GiB a partition) is served without reserving that much: the buffer
 * the source writes into comes with at most 64 MiB (what the rebuild
 * itself reserves at most), and grows only with what the source returns. */
TEST(huge_fetch_reserves_bounded_buffer)
{
    ls_logstore_t *ls = setup();
    CHECK(ls);
    g_fake.calls = 0;
    g_fake.cap_seen = 0;
    CHECK(consume(ls, g_lo, INT32_MAX));
    CHECK(g_fake.calls > 0);
    CHECK(g_fake.cap_seen > 0);
    CHECK(g_fake.cap_seen <= ((size_t)64 << 20) + 4096);
    teardown(ls);
}

typedef struct {
    int done;
    ls_status st;
    int64_t start;
} trim_t;
static void on_trim(void *arg, ls_status st, int64_t start)
{
    trim_t *t = arg;
    t->st = st;
    t->start = start;
    t->done = 1;
}

TEST(delete_records_inside_table_range)
{
    ls_logstore_t *ls = setup();
    CHECK(ls);
    int64_t cut = g_lo + 20;
    trim_t t = {0};
    ls_logstore_trim(ls, LOG, cut, false, on_trim, &t);
    run_until(&t.done);
    CHECK(t.st == LS_OK);
    CHECK_EQ_INT(t.start, cut);
    read_got_t r = read_once(ls, cut - 1, 4096);
    CHECK(r.st == LS_ERANGE);
    ls_buf_free(&r.bytes);
    g_fake.asked_below = INT64_MAX;
    CHECK(consume(ls, cut, 3000));
    CHECK(g_fake.asked_below >= cut); /* rows below the log start never asked for */
    /* past the range: its entry goes with the next trim */
    t = (trim_t){0};
    ls_logstore_trim(ls, LOG, g_hi + 2, false, on_trim, &t);
    run_until(&t.done);
    CHECK(t.st == LS_OK);
    CHECK(entry_start(g_hi) == -1);
    g_fake.calls = 0;
    CHECK(consume(ls, g_hi + 2, 3000));
    CHECK_EQ_INT(g_fake.calls, 0);
    teardown(ls);
}

typedef struct {
    int done;
    ls_status st;
    int64_t off, ts;
} ot_t;
static void on_off(void *arg, ls_status st, int64_t off, int64_t ts)
{
    ot_t *o = arg;
    o->st = st;
    o->off = off;
    o->ts = ts;
    o->done = 1;
}

/* Per-record offset inside a batch, as the Kafka layer's hook does. */
static int64_t g_tt;
static int64_t g_tt_found;
static int64_t g_tt_delta;
static int time_rec(void *arg, const ls_record_view_t *v)
{
    if (v->timestamp >= g_tt) {
        g_tt_delta = v->offset_delta;
        g_tt_found = v->timestamp;
        return 1;
    }
    return 0;
}
static int64_t entry_time(const uint8_t *entry, size_t len, int64_t ts, int64_t *found_ts)
{
    g_tt = ts;
    g_tt_delta = -1;
    ls_records_foreach(entry, len, 1 << 20, time_rec, NULL);
    if (g_tt_delta >= 0) *found_ts = g_tt_found;
    return g_tt_delta;
}

TEST(offset_for_time_in_table_range)
{
    ls_logstore_t *ls = setup();
    CHECK(ls);
    ls_logstore_set_entry_time_fn(ls, entry_time);
    int64_t targets[] = {g_lo, g_lo + 1, (g_lo + g_hi) / 2, g_hi, g_hi + 1, 10};
    for (size_t i = 0; i < 6; i++) {
        ot_t o = {0};
        ls_logstore_offset_for_time(ls, LOG, g_ts[targets[i]] - 3, on_off, &o);
        run_until(&o.done);
        CHECK(o.st == LS_OK);
        CHECK_EQ_INT(o.off, targets[i]);
        CHECK_EQ_INT(o.ts, g_ts[targets[i]]);
    }
    teardown(ls);
}

TEST(index_entry_format)
{
    ls_idx_entry_t t = {.kind = LS_IDX_TABLE,
                        .first_offset = 5,
                        .last_offset = 9,
                        .max_timestamp = 77,
                        .len = 1234,
                        .object = LS_COLD_TABLE_OBJECT};
    ls_buf_t b;
    ls_buf_init(&b);
    ls_idx_encode(&t, &b);
    ls_idx_entry_t d;
    CHECK(ls_idx_decode(b.data, b.len, &d) == LS_OK);
    CHECK(d.kind == LS_IDX_TABLE && d.first_offset == 5 && d.last_offset == 9 && d.len == 1234 &&
          d.entries == 0 && d.pos == 0 && !strcmp(d.object, LS_COLD_TABLE_OBJECT));
    ls_idx_clear(&d);
    /* pos (the max timestamp of the entry's oldest range) round-trips */
    t.pos = 1700000000000ULL;
    b.len = 0;
    ls_idx_encode(&t, &b);
    CHECK(ls_idx_decode(b.data, b.len, &d) == LS_OK && d.pos == 1700000000000ULL);
    ls_idx_clear(&d);
    /* an in-table entry with an entry count is corrupt */
    t.entries = 3;
    b.len = 0;
    ls_idx_encode(&t, &b);
    CHECK(ls_idx_decode(b.data, b.len, &d) == LS_ECORRUPT);
    /* kinds past the known ones too */
    t.entries = 0;
    t.kind = (ls_idx_kind)4;
    b.len = 0;
    ls_idx_encode(&t, &b);
    CHECK(ls_idx_decode(b.data, b.len, &d) == LS_ECORRUPT);
    ls_buf_free(&b);
}

int main(void)
{
    uv_loop_init(&loop);
    RUN(index_entry_format);
    RUN(reads_across_wal_and_table_ranges);
    RUN(restart_loads_in_table_entries);
    RUN(stale_plan_retried_errors_precise);
    RUN(rebuilt_blocks_cached_for_following_fetches);
    RUN(huge_fetch_reserves_bounded_buffer);
    RUN(delete_records_inside_table_range);
    RUN(offset_for_time_in_table_range);
    uv_loop_close(&loop);
    UNIT_DONE();
}
