/* Unfolding in-table ranges (lake/unfold.h): index entries of kind
 * LS_IDX_TABLE turned back into compacted objects from a cold-range source.
 * The source is a stand-in for the table (rows rebuilt with the real batcher
 * of lake/cold_batches.h); the log side is the real logstore on the
 * in-memory stores. Checked: every record reads back exact before and after
 * (and after a restart), the source is not asked any more, the index holds
 * only compacted entries, chunks bound each object, a crash between the
 * object and the swap (and a lost swap answer) neither loses nor duplicates,
 * a failing or lying source changes nothing, and the reference. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/compress.h"
#include "lake/cold_batches.h"
#include "lake/unfold.h"
#include "log/cold_source.h"
#include "log/co_format.h"
#include "log/log_meta.h"
#include "log_fixture.h"
#include "meta/meta.h"
#include "meta/meta_faulty.h"
#include "table/data_files.h"
#include "table/iceberg_raw.h"
#include "table/table_catalog.h"
#include "unit.h"

#define LOG 77
#define N 300

static ls_meta_t *meta;
static ls_objstore_t *os;
static uint8_t g_val[N][80];
static int64_t g_ts[N];

static ls_raw_record_t row_of(int64_t off)
{
    return (ls_raw_record_t){.offset = off,
                             .timestamp_ms = g_ts[off],
                             .key = off % 5 ? g_val[off] + 40 : NULL,
                             .key_len = off % 5 ? 1 + (int32_t)(off % 7) : -1,
                             .value = g_val[off],
                             .value_len = (int32_t)(off % 80)};
}

typedef struct fake {
    int calls;
    ls_status fail; /* answer this (not LS_OK) */
    int notfound;   /* answer LS_ENOTFOUND this many times */
    bool gap;       /* skip a record inside the answer */
    int cut;        /* records per batch (varies the cuts) */
} fake_t;
static fake_t g_fake;

static ls_status fake_read(void *ctx, int64_t log_id, int64_t from, int64_t to, size_t max_bytes,
                           ls_buf_t *out, int64_t *next, char *err, size_t errlen)
{
    fake_t *f = ctx;
    f->calls++;
    if (log_id != LOG || from > to) return LS_EINVAL;
    if (f->notfound > 0) {
        f->notfound--;
        snprintf(err, errlen, "data file gone");
        return LS_ENOTFOUND;
    }
    if (f->fail != LS_OK) {
        snprintf(err, errlen, "store down");
        return f->fail;
    }
    ls_cold_batcher_t b;
    ls_cold_batcher_init(&b, LS_CODEC_ZSTD, false, (size_t)(f->cut ? f->cut : 4) * 60);
    int64_t o = from;
    for (; o <= to && o < N; o++) {
        if (b.records > 0 && ls_cold_batcher_bytes(&b) + 100 > max_bytes) break;
        if (f->gap && o == from + 3) continue;
        ls_raw_record_t r = row_of(o);
        if (ls_cold_batcher_add(&b, &r) != LS_OK) abort();
    }
    if (ls_cold_batcher_flush(&b) != LS_OK) abort();
    ls_buf_append(out, b.out.data, b.out.len);
    *next = o;
    ls_cold_batcher_free(&b);
    return LS_OK;
}

static ls_cold_source_t g_src = {fake_read, &g_fake};

static ls_logstore_t *open_store(void)
{
    ls_logstore_config_t c = lcfg();
    char err[256];
    ls_logstore_t *ls = ls_logstore_open(&loop, meta, os, &c, err, sizeof err);
    if (ls) ls_logstore_set_cold_source(ls, &g_src);
    return ls;
}

/* The N records as producer batches of 1..4 records, one flush each. */
static int build(ls_logstore_t *ls)
{
    for (int i = 0; i < N; i++) {
        for (int k = 0; k < 80; k++)
            g_val[i][k] = (uint8_t)(i * 7 + k * 13);
        g_ts[i] = 5000000 + i * 3;
    }
    for (int64_t off = 0; off < N;) {
        int n = 1 + (int)(off % 4);
        if (off + n > N) n = (int)(N - off);
        ls_cold_batcher_t b;
        ls_cold_batcher_init(&b, LS_CODEC_NONE, false, 1 << 20);
        for (int k = 0; k < n; k++) {
            ls_raw_record_t r = row_of(off + k);
            r.offset = k;
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

/* Index entries of the log, decoded (caller frees with free_entries). */
static int entries(ls_idx_entry_t **out)
{
    char prefix[64];
    ls_log_idx_prefix(prefix, sizeof prefix, LOG);
    ls_kvlist_t l;
    if (ls_meta_scan_prefix(meta, prefix, 0, &l) != LS_OK) return -1;
    *out = LS_NEWN(ls_idx_entry_t, l.n + 1);
    int n = 0;
    for (size_t i = 0; i < l.n; i++)
        if (ls_idx_decode(l.v[i].val, l.v[i].vlen, &(*out)[n]) == LS_OK) n++;
    ls_kvlist_free(&l);
    return n;
}

static void free_entries(ls_idx_entry_t *v, int n)
{
    for (int i = 0; i < n; i++)
        ls_idx_clear(&v[i]);
    ls_free(v);
}

/* Replaces the entries inside [first, last] (on entry bounds) by one
 * in-table entry under the last one's key, as the compaction pass does. */
static int mark_in_table(ls_logstore_t *ls, int64_t first, int64_t last)
{
    ls_idx_entry_t *v;
    int n = entries(&v);
    int64_t bytes = 0, max_ts = -1, lo = -1, hi = -1;
    ls_status st = LS_OK;
    for (int i = 0; i < n && st == LS_OK; i++) {
        if (v[i].first_offset < first || v[i].last_offset > last) continue;
        if (lo < 0) lo = v[i].first_offset;
        hi = v[i].last_offset;
        bytes += v[i].len;
        if (v[i].max_timestamp > max_ts) max_ts = v[i].max_timestamp;
        char key[96];
        ls_log_idx_key(key, sizeof key, LOG, v[i].last_offset);
        if (v[i].last_offset != last) st = ls_meta_del(meta, key);
    }
    free_entries(v, n);
    if (st != LS_OK || lo != first || hi != last) return 0;
    ls_idx_entry_t t = {.kind = LS_IDX_TABLE,
                        .first_offset = first,
                        .last_offset = last,
                        .max_timestamp = max_ts,
                        .len = (uint32_t)bytes,
                        .object = LS_COLD_TABLE_OBJECT};
    char key[96];
    ls_log_idx_key(key, sizeof key, LOG, last);
    ls_buf_t b;
    ls_buf_init(&b);
    ls_idx_encode(&t, &b);
    st = ls_meta_put(meta, key, b.data, b.len);
    ls_buf_free(&b);
    if (st != LS_OK) return 0;
    ls_logstore_apply_compaction(ls, LOG, &t);
    return 1;
}

/* First offset of the entry holding x. */
static int64_t entry_start(int64_t x)
{
    ls_idx_entry_t *v;
    int n = entries(&v);
    int64_t r = -1;
    for (int i = 0; i < n; i++)
        if (v[i].first_offset <= x && x <= v[i].last_offset) r = v[i].first_offset;
    free_entries(v, n);
    return r;
}

typedef struct {
    int64_t want, base;
    int bad;
} chk_t;

static int chk_rec(void *arg, const ls_record_view_t *v)
{
    chk_t *c = arg;
    int64_t off = c->base + v->offset_delta;
    if (off < c->want) return 0;
    ls_raw_record_t e = row_of(off);
    if (off != c->want || v->timestamp != e.timestamp_ms || v->value_len != e.value_len ||
        memcmp(v->value, e.value, (size_t)e.value_len) != 0 || v->key_len != e.key_len ||
        (e.key_len > 0 && memcmp(v->key, e.key, (size_t)e.key_len) != 0))
        c->bad = 1;
    c->want = off + 1;
    return 0;
}

/* Every record of [from, N) read once, in order, exact. */
static int consume(ls_logstore_t *ls, int64_t from, size_t max)
{
    chk_t c = {.want = from};
    for (int guard = 0; c.want < N && guard < 10 * N; guard++) {
        read_got_t r = {0};
        ls_logstore_read(ls, LOG, c.want, max, on_read_got, &r);
        run_until(&r.done);
        if (r.st != LS_OK || r.bytes.len == 0) {
            printf("  read at %lld: %s\n", (long long)c.want, ls_status_str(r.st));
            ls_buf_free(&r.bytes);
            return 0;
        }
        for (size_t p = 0; p < r.bytes.len;) {
            c.base = (int64_t)ls_be64_get(r.bytes.data + p);
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

/* The index covers [0, N) with contiguous entries, none in the table, and
 * every compacted entry's object holds exactly its range (footer checked). */
static int index_all_objects(void)
{
    ls_idx_entry_t *v;
    int n = entries(&v), ok = n > 0;
    int64_t next = 0;
    for (int i = 0; i < n && ok; i++) {
        if (v[i].first_offset != next || v[i].kind == LS_IDX_TABLE) ok = 0;
        next = v[i].last_offset + 1;
        if (ok && v[i].kind == LS_IDX_CO) {
            ls_buf_t b;
            ls_buf_init(&b);
            int64_t id, f, l;
            ls_co_entry_t *ce = NULL;
            uint32_t ne = 0;
            char why[256];
            ok = ls_objstore_get(os, v[i].object, 0, UINT64_MAX, &b) == LS_OK &&
                 ls_co_footer_decode(b.data, b.len, &id, &f, &l, &ce, &ne, why, sizeof why) ==
                     LS_OK &&
                 id == LOG && f == v[i].first_offset && l == v[i].last_offset &&
                 ne == v[i].entries && v[i].pos + v[i].len + LS_CO_FOOTER_SIZE(ne) == b.len;
            ls_free(ce);
            ls_buf_free(&b);
        }
    }
    free_entries(v, n);
    return ok && next == N;
}

static void apply_put(void *arg, int64_t log_id, const ls_idx_entry_t *e)
{
    (void)e; /* as the compactor does: the log's index is loaded again */
    ls_logstore_reload_index(arg, log_id);
}

static int64_t g_lo, g_hi;

static ls_logstore_t *setup(const char *meta_url)
{
    char err[256];
    meta = meta_url ? ls_meta_faulty_open(meta_url, err, sizeof err) : ls_meta_mem_open();
    os = ls_objstore_mem_open();
    memset(&g_fake, 0, sizeof g_fake);
    ls_logstore_t *ls = open_store();
    if (!ls || !build(ls)) return NULL;
    g_lo = entry_start(20);
    g_hi = entry_start(250) - 1;
    if (g_lo <= 0 || g_hi <= g_lo || !mark_in_table(ls, g_lo, g_hi)) return NULL;
    return ls;
}

static void teardown(ls_logstore_t *ls)
{
    close_store(ls);
    ls_objstore_close(os);
    ls_meta_close(meta);
}

static ls_status unfold(ls_logstore_t *ls, size_t chunk, int max_chunks, ls_unfold_stats_t *st,
                        int64_t *left)
{
    ls_unfold_limits_t lim = {.chunk_bytes = chunk, .max_chunks = max_chunks};
    return ls_unfold_log(meta, os, LOG, &g_src, &lim, NULL, apply_put, ls, st, left);
}

TEST(in_table_range_becomes_objects)
{
    ls_logstore_t *ls = setup(NULL);
    CHECK(ls);
    CHECK(consume(ls, 0, 3000)); /* before: the range from the source */
    CHECK(g_fake.calls > 0);
    int64_t pn = 0, precs = 0;
    CHECK(ls_unfold_pending(meta, LOG, &pn, &precs) == LS_OK);
    CHECK_EQ_INT(pn, 1);
    CHECK_EQ_INT(precs, g_hi - g_lo + 1);
    ls_unfold_stats_t st = {0};
    int64_t left = -1;
    CHECK(unfold(ls, 1500, 0, &st, &left) == LS_OK);
    CHECK_EQ_INT(left, 0);
    CHECK_EQ_INT(st.ranges_unfolded, 1);
    CHECK(st.objects_written > 3); /* chunked: about 1500 bytes each */
    CHECK_EQ_INT(st.records, g_hi - g_lo + 1);
    CHECK(index_all_objects());
    CHECK(ls_unfold_pending(meta, LOG, &pn, &precs) == LS_OK && pn == 0);
    /* after: the objects, in memory and after a restart; never the source */
    g_fake.calls = 0;
    g_fake.fail = LS_EIO;
    size_t sizes[] = {1, 900, 1 << 20};
    for (int i = 0; i < 3; i++) {
        CHECK(consume(ls, 0, sizes[i]));
        CHECK(consume(ls, g_lo + 7, sizes[i]));
        CHECK(consume(ls, g_hi, sizes[i]));
    }
    close_store(ls);
    ls = open_store();
    CHECK(ls);
    CHECK(consume(ls, 0, 2000));
    CHECK_EQ_INT(g_fake.calls, 0);
    /* nothing left: a second call writes nothing */
    ls_unfold_stats_t st2 = {0};
    CHECK(unfold(ls, 1500, 0, &st2, &left) == LS_OK && left == 0 && st2.objects_written == 0);
    teardown(ls);
}

/* The work of one call is bounded; the next call goes on where it stopped,
 * and reads in between are exact (half objects, half in the table). */
TEST(bounded_calls_continue)
{
    ls_logstore_t *ls = setup(NULL);
    CHECK(ls);
    ls_unfold_stats_t st = {0};
    int64_t left = 0;
    CHECK(unfold(ls, 1000, 2, &st, &left) == LS_OK);
    CHECK_EQ_INT(st.objects_written, 2);
    CHECK_EQ_INT(left, 1);
    CHECK(consume(ls, 0, 700));
    CHECK(consume(ls, g_lo + 30, 5000));
    for (int i = 0; i < 100 && left; i++)
        CHECK(unfold(ls, 1000, 2, &st, &left) == LS_OK);
    CHECK_EQ_INT(left, 0);
    CHECK(index_all_objects());
    g_fake.fail = LS_EIO;
    CHECK(consume(ls, 0, 700));
    teardown(ls);
}

/* Objects in the store under the log's prefix. */
static size_t objects(void)
{
    char prefix[64];
    ls_co_prefix(prefix, sizeof prefix, LOG);
    return count_objects(os, prefix);
}

/* A crash between writing an object and its swap (the swap never happens:
 * the store refuses every txn), then the retry: the index was never changed
 * meanwhile, the retry reuses the object it finds (same bytes, same key),
 * nothing is duplicated or lost. */
TEST(crash_between_object_and_swap)
{
    ls_logstore_t *ls = setup("faulty+mem://");
    CHECK(ls);
    char err[128];
    CHECK(ls_meta_faulty_set(meta, "txn_error_rate=1", err, sizeof err) == 0);
    ls_unfold_stats_t st = {0};
    int64_t left = 0;
    unfold(ls, 2000, 1, &st, &left);
    CHECK_EQ_INT(st.failures, 1);
    CHECK_EQ_INT(left, 1);
    CHECK_EQ_INT(objects(), 1); /* written, not swapped */
    CHECK(consume(ls, 0, 3000));
    CHECK(ls_meta_faulty_set(meta, "txn_error_rate=0", err, sizeof err) == 0);
    for (int i = 0; i < 100 && left; i++)
        CHECK(unfold(ls, 2000, 1, &st, &left) == LS_OK);
    CHECK_EQ_INT(left, 0);
    CHECK(index_all_objects());
    /* the retry's first object is the crashed call's: no orphan */
    ls_idx_entry_t *v;
    int n = entries(&v);
    size_t named = 0;
    for (int i = 0; i < n; i++)
        if (v[i].kind == LS_IDX_CO) named++;
    free_entries(v, n);
    CHECK_EQ_INT(objects(), named);
    g_fake.fail = LS_EIO;
    CHECK(consume(ls, 0, 3000));
    teardown(ls);
}

/* A crash whose retry cuts differently (the table's files were rewritten
 * in between: other batches, same records): the retry writes its own object
 * and the crashed one is named by no entry. */
TEST(crash_then_other_cut)
{
    ls_logstore_t *ls = setup("faulty+mem://");
    CHECK(ls);
    char err[128];
    CHECK(ls_meta_faulty_set(meta, "txn_error_rate=1", err, sizeof err) == 0);
    ls_unfold_stats_t st = {0};
    int64_t left = 0;
    unfold(ls, 100000, 1, &st, &left);
    CHECK_EQ_INT(objects(), 1);
    CHECK(ls_meta_faulty_set(meta, "txn_error_rate=0", err, sizeof err) == 0);
    g_fake.cut = 2; /* smaller batches: same range, other bytes */
    CHECK(unfold(ls, 100000, 0, &st, &left) == LS_OK);
    CHECK_EQ_INT(left, 0);
    CHECK(index_all_objects());
    CHECK_EQ_INT(objects(), 2);
    g_fake.fail = LS_EIO;
    CHECK(consume(ls, 0, 3000));
    teardown(ls);
}

/* The swap applied but its answer lost: read back, it counts as done (the
 * broker's in-memory index follows, no restart needed); with every answer
 * lost the calls still finish, nothing doubled or missing. */
TEST(lost_swap_answer)
{
    ls_logstore_t *ls = setup("faulty+mem://");
    CHECK(ls);
    char err[128];
    CHECK(ls_meta_faulty_set(meta, "lost_ack_rate=1", err, sizeof err) == 0);
    ls_unfold_stats_t st = {0};
    int64_t left = 0;
    for (int i = 0; i < 3; i++) /* every swap's answer lost */
        CHECK(unfold(ls, 1500, 2, &st, &left) == LS_OK && left == 1);
    CHECK_EQ_INT(st.objects_written, 6);
    CHECK(consume(ls, 0, 3000)); /* half objects, half table, from memory */
    CHECK(ls_meta_faulty_set(meta, "lost_ack_rate=0", err, sizeof err) == 0);
    for (int i = 0; i < 100; i++) {
        CHECK(unfold(ls, 1500, 3, &st, &left) == LS_OK);
        if (!left) break;
    }
    CHECK_EQ_INT(left, 0);
    CHECK_EQ_INT(st.failures, 0);
    CHECK(index_all_objects());
    g_fake.fail = LS_EIO; /* from this broker's index as it is, then after a restart */
    CHECK(consume(ls, 0, 3000));
    close_store(ls);
    ls = open_store();
    CHECK(ls);
    CHECK(consume(ls, 0, 3000));
    teardown(ls);
}

/* A failing, stale or lying source changes nothing; a stale plan is
 * retried. */
TEST(bad_source_changes_nothing)
{
    ls_logstore_t *ls = setup(NULL);
    CHECK(ls);
    ls_unfold_stats_t st = {0};
    int64_t left = 0;
    g_fake.fail = LS_EIO;
    CHECK(unfold(ls, 1500, 0, &st, &left) == LS_OK);
    CHECK_EQ_INT(left, 1);
    CHECK_EQ_INT(st.failures, 1);
    g_fake.fail = LS_OK;
    g_fake.gap = true; /* a record missing: refused before anything is written */
    CHECK(unfold(ls, 1500, 0, &st, &left) == LS_OK);
    CHECK_EQ_INT(left, 1);
    CHECK_EQ_INT(objects(), 0);
    CHECK_EQ_INT(st.objects_written, 0);
    g_fake.gap = false;
    CHECK(consume(ls, 0, 3000));
    g_fake.notfound = 2; /* stale twice: re-planned */
    CHECK(unfold(ls, 1500, 0, &st, &left) == LS_OK);
    CHECK_EQ_INT(left, 0);
    CHECK(index_all_objects());
    teardown(ls);
}

/* The reference: written once, kept while it names the same table, a
 * different table is a conflict naming the one held, released when the
 * log's last in-table entry is unfolded. */
TEST(reference)
{
    ls_logstore_t *ls = setup(NULL);
    CHECK(ls);
    char held[600] = "";
    CHECK(ls_unfold_ref_ensure(meta, LOG, "ns1", "t1", "warehouse/ns1/t1", held, sizeof held) ==
          LS_OK);
    CHECK(ls_unfold_ref_ensure(meta, LOG, "ns1", "t1", "warehouse/ns1/t1", held, sizeof held) ==
          LS_OK);
    CHECK(ls_unfold_ref_ensure(meta, LOG, "ns1", "t2", "warehouse/ns1/t2", held, sizeof held) ==
          LS_ECONFLICT);
    CHECK(!strcmp(held, "ns1.t1"));
    ls_unfold_ref_t *refs;
    size_t n;
    CHECK(ls_unfold_refs_list(meta, &refs, &n) == LS_OK);
    CHECK(n == 1 && refs[0].log_id == LOG && !strcmp(refs[0].table, "t1") &&
          !strcmp(refs[0].prefix, "warehouse/ns1/t1"));
    ls_free(refs);
    ls_unfold_stats_t st = {0};
    int64_t left = 0;
    CHECK(unfold(ls, 1 << 20, 0, &st, &left) == LS_OK && left == 0);
    CHECK_EQ_INT(st.refs_released, 1);
    CHECK(ls_unfold_refs_list(meta, &refs, &n) == LS_OK);
    CHECK_EQ_INT(n, 0);
    ls_free(refs);
    teardown(ls);
}

/* Rows of [0, N) in a real raw Iceberg table in the catalog, in `commits`
 * commits (several data files). */
static int make_table(const char *name, int commits)
{
    ls_ice_table_t *t = NULL;
    char err[512] = "", prefix[64], loc[96];
    snprintf(prefix, sizeof prefix, "warehouse/ns1/%s", name);
    snprintf(loc, sizeof loc, "mem://warehouse/ns1/%s", name);
    ls_ice_spec_t spec = {0};
    if (ls_tcat_create(meta, os, "ns1", name, prefix, loc, ls_raw_iceberg_schema_json(),
                       LS_RAW_LAST_COLUMN_ID, &spec, NULL, &t, err, sizeof err) != LS_OK) {
        printf("  create: %s\n", err);
        return 0;
    }
    ls_status st = LS_OK;
    for (int c = 0; c < commits && st == LS_OK; c++) {
        ls_pq_opts_t o;
        ls_pq_opts_init(&o);
        size_t nf;
        const ls_pq_field_t *f = ls_raw_parquet_fields(&nf);
        ls_data_files_t *df = ls_data_files_new(t, f, nf, &o, 64 << 20, err, sizeof err);
        if (!df) break;
        for (int64_t off = (int64_t)c * N / commits; off < (int64_t)(c + 1) * N / commits; off++) {
            ls_raw_record_t r = row_of(off);
            r.partition = (int32_t)(LOG & (LS_MAX_PARTITIONS - 1));
            if ((st = ls_data_files_add_raw(df, &r)) != LS_OK) break;
        }
        const ls_ice_datafile_t *out;
        size_t n = 0;
        if (st == LS_OK) st = ls_data_files_finish(df, &out, &n);
        if (st == LS_OK) st = ls_ice_table_append(t, out, n, NULL, ls_clock_wall_ms(), NULL);
        ls_data_files_free(df);
    }
    ls_ice_table_free(t);
    return st == LS_OK;
}

/* The table-backed source: the range read from a real table found through
 * the log's reference (not through any policy), then never again; a
 * reference naming a table that does not exist is a precise error that
 * changes nothing. */
TEST(from_a_real_table)
{
    ls_logstore_t *ls = setup(NULL);
    CHECK(ls);
    CHECK(make_table("t1", 4));
    ls_unfold_ref_t ref = {.log_id = LOG};
    snprintf(ref.ns, sizeof ref.ns, "ns1");
    snprintf(ref.table, sizeof ref.table, "gone");
    snprintf(ref.prefix, sizeof ref.prefix, "warehouse/ns1/gone");
    ls_cold_source_t *src = ls_unfold_table_source_new(meta, os, &ref, false);
    ls_unfold_limits_t lim = {.chunk_bytes = 1200};
    ls_unfold_stats_t st = {0};
    int64_t left = 0;
    CHECK(ls_unfold_log(meta, os, LOG, src, &lim, NULL, apply_put, ls, &st, &left) == LS_OK);
    CHECK(left == 1 && st.failures == 1 && objects() == 0);
    ls_unfold_table_source_free(src);
    snprintf(ref.table, sizeof ref.table, "t1");
    snprintf(ref.prefix, sizeof ref.prefix, "warehouse/ns1/t1");
    src = ls_unfold_table_source_new(meta, os, &ref, false);
    CHECK(ls_unfold_log(meta, os, LOG, src, &lim, NULL, apply_put, ls, &st, &left) == LS_OK);
    ls_unfold_table_source_free(src);
    CHECK_EQ_INT(left, 0);
    CHECK(st.objects_written > 2);
    CHECK_EQ_INT(st.records, g_hi - g_lo + 1);
    CHECK(index_all_objects());
    g_fake.fail = LS_EIO;
    g_fake.calls = 0;
    close_store(ls);
    ls = open_store();
    CHECK(ls);
    CHECK(consume(ls, 0, 1500));
    CHECK(consume(ls, g_lo + 11, 1 << 20));
    CHECK_EQ_INT(g_fake.calls, 0);
    teardown(ls);
}

int main(void)
{
    uv_loop_init(&loop);
    RUN(in_table_range_becomes_objects);
    RUN(bounded_calls_continue);
    RUN(crash_between_object_and_swap);
    RUN(crash_then_other_cut);
    RUN(lost_swap_answer);
    RUN(bad_source_changes_nothing);
    RUN(reference);
    RUN(from_a_real_table);
    uv_loop_close(&loop);
    UNIT_DONE();
}
