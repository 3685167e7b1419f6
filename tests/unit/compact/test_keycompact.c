/* Key compaction (compact/keycompact.c) against a model.
 *
 * Random keys, updates and tombstones are produced as real RecordBatches
 * (several codecs, our own encoder), compacted into COs by the compactor,
 * then key-compacted with random settings: small key maps (multi-pass),
 * small groups, and passes cut short after a few swaps (the state a crash
 * between two swaps leaves). After every call the checker reads the whole
 * log back through the reader and requires:
 *   - every record read is the model's record at that offset (offsets and
 *     contents unchanged, every batch CRC valid);
 *   - per key, the latest record present is the model's latest, or the key's
 *     latest is a tombstone and nothing of the key is present (the latest
 *     value is never lost, a deleted key never comes back);
 *   - a read at any offset starts at the first record present at or after it;
 * and after a full pass with a large map: exactly the latest value of each
 * live key, plus tombstones not yet past delete.retention.ms. */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <uv.h>

#include "base/alloc.h"
#include "base/compress.h"
#include "base/crc32c.h"
#include "compact/compactor.h"
#include "compact/keycompact.h"
#include "log/log_meta.h"
#include "log/logstore.h"
#include "log/logstore_int.h"
#include "log_fixture.h"
#include "unit.h"

#define LOG 77
#define BASE_TS 1700000000000LL

/* ---- our own batch encoder -------------------------------------------------- */

static void put_uleb(ls_buf_t *b, uint64_t v)
{
    while (v >= 0x80) {
        ls_buf_append_u8(b, (uint8_t)(v | 0x80));
        v >>= 7;
    }
    ls_buf_append_u8(b, (uint8_t)v);
}
static void put_vl(ls_buf_t *b, int64_t v)
{
    put_uleb(b, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}
static void put_be(ls_buf_t *b, uint64_t v, int n)
{
    for (int i = n - 1; i >= 0; i--)
        ls_buf_append_u8(b, (uint8_t)(v >> (8 * i)));
}

typedef struct mrec {
    int key;   /* -1: no key */
    int value; /* -1: tombstone */
    int64_t ts;
} mrec_t;

static void key_str(char *out, int k) { sprintf(out, "key-%05d", k); }
static void val_str(char *out, int v) { sprintf(out, "value-%08d-padding", v); }

static void put_batch(ls_buf_t *out, int codec, const mrec_t *r, int n, int64_t pid, int32_t seq)
{
    ls_buf_t recs;
    ls_buf_init(&recs);
    for (int i = 0; i < n; i++) {
        ls_buf_t body;
        ls_buf_init(&body);
        char k[32], v[48];
        ls_buf_append_u8(&body, 0);
        put_vl(&body, r[i].ts - r[0].ts);
        put_vl(&body, i);
        if (r[i].key < 0) {
            put_vl(&body, -1);
        } else {
            key_str(k, r[i].key);
            put_vl(&body, (int64_t)strlen(k));
            ls_buf_append(&body, k, strlen(k));
        }
        if (r[i].value < 0) {
            put_vl(&body, -1);
        } else {
            val_str(v, r[i].value);
            put_vl(&body, (int64_t)strlen(v));
            ls_buf_append(&body, v, strlen(v));
        }
        put_vl(&body, 1); /* one header */
        put_vl(&body, 1);
        ls_buf_append(&body, "h", 1);
        put_vl(&body, 2);
        ls_buf_append(&body, "hv", 2);
        put_vl(&recs, (int64_t)body.len);
        ls_buf_append(&recs, body.data, body.len);
        ls_buf_free(&body);
    }
    size_t start = out->len;
    int64_t max_ts = r[0].ts;
    for (int i = 0; i < n; i++)
        if (r[i].ts > max_ts) max_ts = r[i].ts;
    put_be(out, 0, 8);
    put_be(out, 0, 4);
    put_be(out, 0, 4);
    ls_buf_append_u8(out, 2);
    put_be(out, 0, 4);
    put_be(out, (uint16_t)codec, 2);
    put_be(out, (uint32_t)(n - 1), 4);
    put_be(out, (uint64_t)r[0].ts, 8);
    put_be(out, (uint64_t)max_ts, 8);
    put_be(out, (uint64_t)pid, 8);
    put_be(out, pid < 0 ? 0xffff : 3, 2);
    put_be(out, pid < 0 ? 0xffffffffu : (uint32_t)seq, 4);
    put_be(out, (uint32_t)n, 4);
    if (codec == LS_CODEC_NONE)
        ls_buf_append(out, recs.data, recs.len);
    else if (ls_compress(codec, recs.data, recs.len, out) != LS_OK)
        abort();
    uint8_t *b = out->data + start;
    size_t size = out->len - start;
    ls_be32_put(b + LS_RB_OFF_LENGTH, (uint32_t)(size - 12));
    ls_be32_put(b + LS_RB_OFF_CRC, ls_crc32c(0, b + 21, size - 21));
    ls_buf_free(&recs);
}

/* ---- the world: a log, its compactor, and the model ---------------------------- */

typedef struct world {
    ls_meta_t *meta;
    ls_objstore_t *os;
    ls_logstore_t *ls;
    ls_compactor_t *comp;
    mrec_t *model; /* by offset */
    int64_t n, cap;
    int nkeys;
    int64_t now; /* the clock key compaction is given */
    ls_kc_stats_t st;
    int vseq;
    int64_t last_base; /* first offset of the log's last batch */
} world_t;

static void world_open(world_t *w, int nkeys)
{
    memset(w, 0, sizeof *w);
    w->meta = ls_meta_mem_open();
    w->os = ls_objstore_mem_open();
    ls_logstore_config_t c = lcfg();
    char err[256];
    w->ls = ls_logstore_open(&loop, w->meta, w->os, &c, err, sizeof err);
    ls_compactor_config_t cc = {.enabled = false,
                                .interval_ms = 1000,
                                .min_age_ms = 0,
                                .max_entries = 3,
                                .max_bytes = 1 << 20};
    w->comp = ls_compactor_start(&loop, w->ls, w->meta, w->os, &cc);
    w->nkeys = nkeys;
    w->now = BASE_TS;
}

static void world_close(world_t *w)
{
    int stopped = 0;
    ls_compactor_stop(w->comp, flag_cb, &stopped);
    run_until(&stopped);
    ls_compactor_free(w->comp);
    int shut = 0;
    ls_logstore_shutdown(w->ls, flag_cb, &shut);
    run_until(&shut);
    ls_logstore_free(w->ls);
    ls_objstore_close(w->os);
    ls_meta_close(w->meta);
    ls_free(w->model);
}

/* One batch of n random records (tombstone_pct of them tombstones). */
static int produce(world_t *w, int n, int tombstone_pct, int codec)
{
    mrec_t r[64] = {{0}};
    for (int i = 0; i < n; i++) {
        r[i].key = rand() % w->nkeys;
        r[i].value = rand() % 100 < tombstone_pct ? -1 : w->vseq++;
        r[i].ts = w->now;
    }
    ls_buf_t b;
    ls_buf_init(&b);
    put_batch(&b, codec, r, n, -1, 0);
    ack_t a = {0};
    ls_append_t ap = {.log_id = LOG,
                      .data = b.data,
                      .len = b.len,
                      .offset_count = n,
                      .max_timestamp = w->now,
                      .producer = {.producer_id = -1}};
    ls_logstore_append(w->ls, &ap, on_ack, &a);
    run_until(&a.done);
    ls_buf_free(&b);
    if (a.st != LS_OK || a.off != w->n) return -1;
    if (w->n + n > w->cap) {
        w->cap = (w->n + n) * 2;
        w->model = ls_realloc(w->model, (size_t)w->cap * sizeof *w->model);
    }
    memcpy(w->model + w->n, r, (size_t)n * sizeof *r);
    w->last_base = w->n;
    w->n += n;
    return 0;
}

static int settle(world_t *w);

static void wal_to_co(world_t *w)
{
    int done = 0;
    ls_compactor_kick(w->comp, flag_cb, &done);
    run_until(&done);
    if (settle(w) != 0) abort();
}

static ls_status claim_ok(void *arg, int64_t log_id, ls_meta_cmp_t *fence)
{
    static const char key[] = "/test/no-claim";
    *fence =
        (ls_meta_cmp_t){.kind = LS_META_CMP_MOD_REV, .key = key, .klen = sizeof key - 1, .rev = 0};
    return LS_OK;
}

static void on_swapped(void *arg, int64_t log_id, const ls_idx_entry_t *e,
                       const int64_t *aborts_gone, size_t n)
{
    world_t *w = arg;
    ls_logstore_apply_compaction(w->ls, log_id, e);
    ls_logstore_aborted_forget(w->ls, log_id, aborts_gone, n);
}

/* Waits until the reader's in-memory index is the stored one: the watch
 * delivers each swap too (as to every broker), and objects a swap replaced
 * may go at the next call (grace 0 here; wal.gc.grace.ms in the broker). */
static int settle(world_t *w)
{
    for (int spin = 0; spin < 20000; spin++) {
        uv_run(&loop, UV_RUN_NOWAIT);
        ls_logstate_t *lg = ls_logstate_get(w->ls, LOG, false);
        if (!lg || lg->idx_state != 2) return 0; /* loaded from the store on the next read */
        ls_kvlist_t l;
        if (ls_meta_scan_prefix(w->meta, "/ls/log/", 0, &l) != LS_OK) return -1;
        bool same = (int)l.n == lg->nidx;
        for (size_t i = 0; same && i < l.n; i++) {
            ls_idx_entry_t e;
            same = ls_idx_decode(l.v[i].val, l.v[i].vlen, &e) == LS_OK &&
                   e.first_offset == lg->idx[i].first_offset &&
                   e.last_offset == lg->idx[i].last_offset && !strcmp(e.object, lg->idx[i].object);
            ls_idx_clear(&e);
        }
        ls_kvlist_free(&l);
        if (same) return 0;
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
    }
    return -1;
}

static void key_compact(world_t *w, const ls_kc_policy_t *p, size_t map_bytes, int64_t group,
                        int max_swaps)
{
    /* every call looks for replaced objects (the compactor spaces the looks
     * out; compactor.c marker_look_due) */
    ls_kc_limits_t lim = {.map_bytes = map_bytes,
                          .group_bytes = group,
                          .max_swaps = max_swaps,
                          .grace_ms = 0,
                          .check_markers = true};
    ls_kc_log(w->meta, w->os, LOG, p, &lim, w->now, claim_ok, on_swapped, w, &w->st);
    if (settle(w) != 0) abort();
}

/* ---- reading the log back ------------------------------------------------------ */

typedef struct got {
    int64_t off;
    int key, value;
    int64_t ts;
    bool horizon;
    int64_t horizon_ms;
} got_t;

typedef struct reader {
    got_t *v;
    size_t n, cap;
    int64_t base;
    bool horizon;
    int64_t horizon_ms;
    int bad;
} reader_t;

static int parse_num(const uint8_t *p, int32_t len, const char *prefix)
{
    size_t pl = strlen(prefix);
    if (len < (int32_t)pl || memcmp(p, prefix, pl) != 0) return -2;
    return atoi((const char *)p + pl); /* stops at '-' */
}

static int on_rec(void *arg, const ls_record_view_t *r)
{
    reader_t *rd = arg;
    if (rd->n == rd->cap) {
        rd->cap = rd->cap ? rd->cap * 2 : 256;
        rd->v = ls_realloc(rd->v, rd->cap * sizeof *rd->v);
    }
    got_t *g = &rd->v[rd->n++];
    g->off = rd->base + r->offset_delta;
    g->key = r->key_len < 0 ? -1 : parse_num(r->key, r->key_len, "key-");
    g->value = r->value ? parse_num(r->value, r->value_len, "value-") : -1;
    g->ts = r->timestamp;
    g->horizon = rd->horizon;
    g->horizon_ms = rd->horizon_ms;
    if (r->header_count != 1 || r->headers_len != 5) rd->bad++;
    return 0;
}

/* Records of the read starting at offset, max_bytes per response. */
static int read_from(world_t *w, int64_t offset, size_t max_bytes, reader_t *rd)
{
    memset(rd, 0, sizeof *rd);
    read_got_t r = {0};
    ls_logstore_read(w->ls, LOG, offset, max_bytes, on_read_got, &r);
    run_until(&r.done);
    if (r.st != LS_OK) return -1;
    for (size_t q = 0; q < r.bytes.len;) {
        const uint8_t *b = r.bytes.data + q;
        size_t sz = 12 + ls_be32_get(b + LS_RB_OFF_LENGTH);
        ls_batch_info_t h;
        ls_batch_header_parse(b, &h);
        rd->base = (int64_t)ls_be64_get(b);
        rd->horizon = (h.attributes & 0x40) != 0;
        rd->horizon_ms = h.base_timestamp;
        if (ls_records_foreach(b, sz, 64 << 20, on_rec, rd) != LS_RB_OK) rd->bad++;
        q += sz;
    }
    ls_buf_free(&r.bytes);
    return 0;
}

/* The whole log, following reads to the high watermark. */
static int read_log(world_t *w, reader_t *all)
{
    memset(all, 0, sizeof *all);
    int64_t next = 0;
    while (next < w->n) {
        reader_t rd;
        if (read_from(w, next, 1 << 20, &rd) != 0) return -1;
        if (rd.n == 0 && rd.bad == 0) {
            ls_free(rd.v);
            break; /* nothing left at or after next */
        }

        for (size_t i = 0; i < rd.n; i++) {
            if (rd.v[i].off < next) continue; /* a batch served whole */
            if (all->n == all->cap) {
                all->cap = all->cap ? all->cap * 2 : 256;
                all->v = ls_realloc(all->v, all->cap * sizeof *all->v);
            }
            all->v[all->n++] = rd.v[i];
        }
        all->bad += rd.bad;
        int64_t last = rd.n ? rd.v[rd.n - 1].off : next;
        ls_free(rd.v);
        if (last + 1 <= next) return -1; /* no progress */
        next = last + 1;
    }
    return 0;
}

/* The checker (header comment). Returns 0 or the failing rule's number. */
static int check_log(world_t *w, bool exact, int64_t delete_retention_ms)
{
    reader_t all;
    if (read_log(w, &all) != 0) return 1;
    int rc = 0;
    int64_t *latest_model = LS_NEWN(int64_t, (size_t)w->nkeys);
    int64_t *latest_log = LS_NEWN(int64_t, (size_t)w->nkeys);
    int *count_log = LS_NEWN(int, (size_t)w->nkeys);
    for (int k = 0; k < w->nkeys; k++)
        latest_model[k] = latest_log[k] = -1;
    for (int64_t o = 0; o < w->n; o++)
        if (w->model[o].key >= 0) latest_model[w->model[o].key] = o;
    if (all.bad) rc = 2;
    /* the log's last batch is kept whole when all of it would go */
    int64_t last_base = w->last_base;
    int64_t prev = -1;
    for (size_t i = 0; i < all.n && !rc; i++) {
        const got_t *g = &all.v[i];
        if (g->off <= prev || g->off >= w->n)
            rc = 3;
        else if (g->key != w->model[g->off].key || g->value != w->model[g->off].value ||
                 g->ts != w->model[g->off].ts)
            rc = 4;
        else if (g->key < 0)
            rc = 5; /* keyless records go */
        prev = g->off;
        if (!rc) {
            latest_log[g->key] = g->off;
            if (g->off < last_base) count_log[g->key]++;
        }
    }
    for (int k = 0; k < w->nkeys && !rc; k++) {
        int64_t m = latest_model[k], l = latest_log[k];
        if (m < 0) continue;
        bool tomb = w->model[m].value < 0;
        if (l != m && !(tomb && l < 0)) {
            rc = 6; /* lost the latest value, or resurrected a deleted key */
            printf("key %d: model latest %lld (%s), log latest %lld; log has %zu records, "
                   "model %lld\n",
                   k, (long long)m, tomb ? "tombstone" : "value", (long long)l, all.n,
                   (long long)w->n);
        } else if (exact && l >= 0 && (m < last_base ? count_log[k] != 1 : count_log[k] > 1))
            rc = 7;
    }
    if (exact && !rc)
        for (size_t i = 0; i < all.n && !rc; i++)
            if (all.v[i].value < 0 && all.v[i].off < last_base &&
                (!all.v[i].horizon || all.v[i].horizon_ms <= w->now ||
                 all.v[i].horizon_ms > w->now + delete_retention_ms))
                rc = 8; /* a tombstone past its horizon, or without one */
    /* reads at random offsets start at the first record present there */
    for (int t = 0; t < 8 && !rc && w->n > 0; t++) {
        int64_t x = rand() % w->n;
        size_t j = 0;
        while (j < all.n && all.v[j].off < x)
            j++;
        reader_t rd;
        if (read_from(w, x, 1, &rd) != 0) {
            rc = 9;
            break;
        }
        size_t f = 0;
        while (f < rd.n && rd.v[f].off < x)
            f++;
        /* an entry left empty yields nothing: the client's next fetch moves on */
        if (f < rd.n && (j >= all.n || rd.v[f].off != all.v[j].off)) {
            printf("read at %lld: got %lld, want %lld (n=%zu)\n", (long long)x,
                   (long long)rd.v[f].off, j < all.n ? (long long)all.v[j].off : -1LL, rd.n);
            rc = 10;
        }
        ls_free(rd.v);
    }
    ls_free(all.v);
    ls_free(latest_model);
    ls_free(latest_log);
    ls_free(count_log);
    return rc;
}

static const int codecs[] = {LS_CODEC_NONE, LS_CODEC_GZIP, LS_CODEC_SNAPPY, LS_CODEC_LZ4,
                             LS_CODEC_ZSTD};

/* ---- tests --------------------------------------------------------------------- */

TEST(latest_value_per_key_and_tombstones_expire)
{
    srand(1);
    world_t w;
    world_open(&w, 400);
    ls_kc_policy_t p = {
        .compact = true, .max_lag_ms = INT64_MAX, .delete_retention_ms = 1000, .dirty_ratio = 0.0};
    for (int round = 0; round < 30; round++) {
        for (int b = 0; b < 4; b++)
            CHECK_EQ_INT(produce(&w, 1 + rand() % 20, 20, codecs[(round + b) % 5]), 0);
        wal_to_co(&w);
        w.now += 100;
        key_compact(&w, &p, 1 << 20, 1 << 20, 0);
        CHECK_EQ_INT(check_log(&w, true, p.delete_retention_ms), 0);
    }
    CHECK(w.st.superseded_dropped > 0);
    CHECK(w.st.tombstones_dropped > 0); /* 30 rounds x 100 ms > delete.retention.ms */
    /* past every horizon, with no new write (nothing dirty), the next call
     * still removes the tombstones: the index entries carry their horizon */
    uint64_t swaps = w.st.swaps, dropped = w.st.tombstones_dropped;
    w.now += p.delete_retention_ms + 1;
    key_compact(&w, &p, 1 << 20, 1 << 20, 0);
    CHECK(w.st.swaps > swaps);
    CHECK(w.st.tombstones_dropped > dropped);
    CHECK_EQ_INT(check_log(&w, true, p.delete_retention_ms), 0);
    /* and then nothing is due any more */
    swaps = w.st.swaps;
    w.now += p.delete_retention_ms + 1;
    key_compact(&w, &p, 1 << 20, 1 << 20, 0);
    CHECK_EQ_INT(w.st.swaps, swaps);
    /* offsets never move: the high watermark and the last offset are the model's */
    reader_t all;
    CHECK_EQ_INT(read_log(&w, &all), 0);
    CHECK(all.n > 0 && all.n < (size_t)w.n);
    ls_free(all.v);
    world_close(&w);
}

TEST(dirty_ratio_and_lags_decide_when)
{
    srand(2);
    world_t w;
    world_open(&w, 10);
    for (int b = 0; b < 6; b++)
        CHECK_EQ_INT(produce(&w, 10, 0, LS_CODEC_NONE), 0);
    wal_to_co(&w);
    /* min.compaction.lag.ms: records younger than it are not compacted */
    ls_kc_policy_t p = {.compact = true,
                        .min_lag_ms = 500,
                        .max_lag_ms = INT64_MAX,
                        .delete_retention_ms = 1000,
                        .dirty_ratio = 0.5};
    key_compact(&w, &p, 1 << 20, 1 << 20, 0);
    CHECK_EQ_INT(w.st.swaps, 0);
    w.now += 500;
    key_compact(&w, &p, 1 << 20, 1 << 20, 0);
    CHECK(w.st.swaps > 0);
    CHECK_EQ_INT(check_log(&w, true, 1000), 0);
    /* little new data: below the dirty ratio, nothing happens ... */
    uint64_t swaps = w.st.swaps;
    CHECK_EQ_INT(produce(&w, 1, 0, LS_CODEC_NONE), 0);
    wal_to_co(&w);
    w.now += 1000;
    key_compact(&w, &p, 1 << 20, 1 << 20, 0);
    CHECK_EQ_INT(w.st.swaps, swaps);
    /* ... until max.compaction.lag.ms says it has waited long enough */
    p.max_lag_ms = 2000;
    key_compact(&w, &p, 1 << 20, 1 << 20, 0);
    CHECK_EQ_INT(w.st.swaps, swaps);
    w.now += 1000;
    key_compact(&w, &p, 1 << 20, 1 << 20, 0);
    CHECK(w.st.swaps > swaps);
    CHECK_EQ_INT(check_log(&w, true, 1000), 0);
    /* cleanup.policy without compact: never */
    swaps = w.st.swaps;
    for (int b = 0; b < 6; b++)
        CHECK_EQ_INT(produce(&w, 10, 0, LS_CODEC_NONE), 0);
    wal_to_co(&w);
    p.compact = false;
    p.dirty_ratio = 0;
    key_compact(&w, &p, 1 << 20, 1 << 20, 0);
    CHECK_EQ_INT(w.st.swaps, swaps);
    /* ... but what earlier compactions replaced is still deleted (grace 0):
     * every marker and every object no index entry names */
    ls_kvlist_t l;
    CHECK_EQ_INT(ls_meta_scan_prefix(w.meta, "/ls/kcgc/", 0, &l), LS_OK);
    CHECK_EQ_INT(l.n, 0);
    ls_kvlist_free(&l);
    CHECK_EQ_INT(ls_meta_scan_prefix(w.meta, "/ls/log/", 0, &l), LS_OK);
    size_t cos = 0;
    for (size_t i = 0; i < l.n; i++) {
        ls_idx_entry_t e;
        CHECK_EQ_INT(ls_idx_decode(l.v[i].val, l.v[i].vlen, &e), LS_OK);
        cos += e.kind != LS_IDX_WAL;
        ls_idx_clear(&e);
    }
    ls_kvlist_free(&l);
    CHECK_EQ_INT(count_objects(w.os, "co/"), cos);
    world_close(&w);
}

/* Thousands of calls with random settings: small maps (multi-pass), small
 * groups, calls stopped after a few swaps (a crash between swaps). */
TEST(soak_random_passes_match_the_model)
{
    srand(3);
    world_t w;
    world_open(&w, 200);
    ls_kc_policy_t p = {.compact = true, .max_lag_ms = INT64_MAX, .delete_retention_ms = 300};
    int calls = 0;
    for (int round = 0; round < 400; round++) {
        int batches = 1 + rand() % 3;
        for (int b = 0; b < batches; b++)
            CHECK_EQ_INT(produce(&w, 1 + rand() % 30, rand() % 30, codecs[rand() % 5]), 0);
        if (rand() % 2) wal_to_co(&w);
        for (int k = 0; k < 5; k++) {
            w.now += rand() % 60;
            p.dirty_ratio = (rand() % 4) * 0.25;
            size_t map = rand() % 3 == 0 ? (size_t)(16 * LS_KC_SLOT_BYTES) : (size_t)1 << 16;
            int64_t group = rand() % 2 ? 2000 : 1 << 20;
            key_compact(&w, &p, map, group, rand() % 3 == 0 ? 1 + rand() % 3 : 0);
            calls++;
            int rc = check_log(&w, false, 0);
            if (rc) printf("round %d call %d: rule %d broken\n", round, k, rc);
            CHECK_EQ_INT(rc, 0);
        }
    }
    /* then a full pass with room for every key is exact */
    CHECK_EQ_INT(produce(&w, 1, 0, LS_CODEC_NONE), 0);
    wal_to_co(&w);
    p.dirty_ratio = 0;
    w.now += 1;
    key_compact(&w, &p, 1 << 20, 1 << 20, 0);
    CHECK_EQ_INT(check_log(&w, false, 0), 0);
    CHECK(w.st.map_full > 0);
    CHECK(w.st.swaps > 100);
    printf("  %d calls, %llu swaps, %llu records read, %llu dropped (superseded %llu, "
           "tombstones %llu)\n",
           calls, (unsigned long long)w.st.swaps, (unsigned long long)w.st.records_read,
           (unsigned long long)(w.st.superseded_dropped + w.st.tombstones_dropped),
           (unsigned long long)w.st.superseded_dropped,
           (unsigned long long)w.st.tombstones_dropped);
    /* replaced objects are deleted (grace 0): only what the index names stays */
    ls_kvlist_t l;
    CHECK_EQ_INT(ls_meta_scan_prefix(w.meta, "/ls/log/", 0, &l), LS_OK);
    size_t entries = l.n;
    ls_kvlist_free(&l);
    key_compact(&w, &p, 1 << 20, 1 << 20, 0); /* collects the last call's markers */
    CHECK_EQ_INT(ls_meta_scan_prefix(w.meta, "/ls/log/", 0, &l), LS_OK);
    entries = l.n;
    ls_kvlist_free(&l);
    CHECK_EQ_INT(count_objects(w.os, "co/"), entries);
    world_close(&w);
}

/* ---- merging small objects (logs that are not key-compacted) ---------------- */

/* Index entries of the log now, and the bytes they name. */
static size_t index_entries_bytes(world_t *w, uint64_t *bytes)
{
    ls_kvlist_t l;
    if (ls_meta_scan_prefix(w->meta, "/ls/log/", 0, &l) != LS_OK) abort();
    size_t n = l.n;
    *bytes = 0;
    for (size_t i = 0; i < l.n; i++) {
        ls_idx_entry_t e;
        if (ls_idx_decode(l.v[i].val, l.v[i].vlen, &e) != LS_OK) abort();
        *bytes += e.len;
        ls_idx_clear(&e);
    }
    ls_kvlist_free(&l);
    return n;
}

static size_t index_entries(world_t *w)
{
    uint64_t bytes;
    return index_entries_bytes(w, &bytes);
}

/* Every record of the model, in offset order, unchanged (nothing may go). */
static int check_whole_log(world_t *w)
{
    reader_t all;
    if (read_log(w, &all) != 0) return 1;
    int rc = all.bad ? 2 : (int64_t)all.n != w->n ? 3 : 0;
    for (size_t i = 0; i < all.n && !rc; i++) {
        const got_t *g = &all.v[i];
        if (g->off != (int64_t)i || g->key != w->model[i].key || g->value != w->model[i].value ||
            g->ts != w->model[i].ts)
            rc = 4;
    }
    ls_free(all.v);
    return rc;
}

/* A table log at a 1 s commit interval adds one small compacted object per
 * second; 2,000 of them must not become 2,000 index entries. Each pass: a
 * batch, its WAL entry compacted, then a merge check. The log reads back
 * whole after every pass, and the index stays within the tier bound. */
TEST(thousands_of_small_objects_merge_into_a_bounded_index)
{
    srand(5);
    world_t w;
    world_open(&w, 1000);
    ls_kc_policy_t p = {.compact = false, .merge = true, .merge_span_ms = INT64_MAX};
    size_t max_entries = 0;
    for (int pass = 0; pass < 2000; pass++) {
        /* sizes as a live log has them: mostly alike, now and then a single
         * record (a pass that found one small flush) */
        int records = rand() % 9 == 0 ? 1 : 20 + rand() % 40;
        CHECK_EQ_INT(produce(&w, records, 0, codecs[rand() % 5]), 0);
        wal_to_co(&w);
        key_compact(&w, &p, 0, 1 << 20, 0);
        w.now += 1000;
        size_t n = index_entries(&w);
        if (n > max_entries) max_entries = n;
        if (pass % 97 == 0 || pass == 1999) {
            int rc = check_whole_log(&w);
            if (rc) printf("pass %d: rule %d broken\n", pass, rc);
            CHECK_EQ_INT(rc, 0);
        }
    }
    uint64_t log_bytes;
    size_t entries = index_entries_bytes(&w, &log_bytes);
    printf("  2000 passes: %zu index entries at the end (max %zu), %llu merges of %llu "
           "entries, %llu bytes rewritten for %llu bytes of log (%.2fx)\n",
           entries, max_entries, (unsigned long long)w.st.merges,
           (unsigned long long)w.st.entries_merged, (unsigned long long)w.st.bytes_written,
           (unsigned long long)log_bytes, (double)w.st.bytes_written / (double)log_bytes);
    /* fewer than 16 per tier, a handful of tiers (50 B .. 1 MiB) */
    CHECK(max_entries <= 5 * 16);
    CHECK(entries < 60);
    CHECK(w.st.merges > 100);
    /* write amplification is logarithmic: each byte rewritten a few times */
    CHECK(w.st.bytes_written < 4 * log_bytes);
    key_compact(&w, &p, 0, 1 << 20, 0); /* collects the last merge's replaced objects */
    CHECK_EQ_INT(count_objects(w.os, "co/"), index_entries(&w));
    CHECK_EQ_INT(check_whole_log(&w), 0);
    world_close(&w);
}

TEST(merges_respect_the_span_and_the_minimum_run)
{
    srand(6);
    world_t w;
    world_open(&w, 100);
    ls_kc_policy_t p = {.compact = false, .merge = true, .merge_span_ms = 5000};
    /* 1 s apart with a 5 s span: runs of at most 6, never the 16 a merge needs */
    for (int pass = 0; pass < 40; pass++) {
        CHECK_EQ_INT(produce(&w, 5, 0, LS_CODEC_NONE), 0);
        wal_to_co(&w);
        key_compact(&w, &p, 0, 1 << 20, 0);
        w.now += 1000;
    }
    CHECK_EQ_INT(w.st.merges, 0);
    CHECK_EQ_INT(index_entries(&w), 40);
    /* a wider span: the first 31 of the same tier merge, then the rest (9) wait */
    p.merge_span_ms = INT64_MAX;
    key_compact(&w, &p, 0, 1 << 20, 0);
    CHECK_EQ_INT(w.st.merges, 1);
    CHECK_EQ_INT(w.st.entries_merged, 31);
    CHECK_EQ_INT(index_entries(&w), 10);
    CHECK_EQ_INT(check_whole_log(&w), 0);
    /* merging is never done to a key-compacted log, whatever the caller asks */
    p.compact = true;
    p.max_lag_ms = INT64_MAX;
    p.dirty_ratio = 2; /* never due */
    for (int pass = 0; pass < 20; pass++) {
        CHECK_EQ_INT(produce(&w, 5, 0, LS_CODEC_NONE), 0);
        wal_to_co(&w);
        key_compact(&w, &p, 1 << 16, 1 << 20, 0);
    }
    CHECK_EQ_INT(w.st.merges, 1);
    CHECK_EQ_INT(index_entries(&w), 30);
    world_close(&w);
}

/* Regression: a swap applied to an index that holds none of the entries it
 * replaces (the watch already applied them, or the results came in another
 * order) left the in-memory index with a capacity above its allocation; the
 * next commit wrote past it (ASan: heap-buffer-overflow in index_put). */
TEST(applying_a_swap_that_replaces_nothing_keeps_the_index_sound)
{
    world_t w;
    world_open(&w, 5);
    CHECK_EQ_INT(produce(&w, 3, 0, LS_CODEC_NONE), 0);
    reader_t all;
    CHECK_EQ_INT(read_log(&w, &all), 0); /* loads the index */
    ls_free(all.v);
    ls_idx_entry_t e = {.kind = LS_IDX_KCO,
                        .first_offset = 100,
                        .last_offset = 101,
                        .max_timestamp = -1,
                        .entries = 0,
                        .pos = 8,
                        .len = 0,
                        .object = "co/none"};
    ls_logstore_apply_compaction(w.ls, LOG, &e);
    for (int i = 0; i < 20; i++)
        CHECK_EQ_INT(produce(&w, 1, 0, LS_CODEC_NONE), 0);
    ls_logstate_t *lg = ls_logstate_get(w.ls, LOG, false);
    CHECK(lg->nidx <= lg->capidx);
    world_close(&w);
}

/* Issue 29: a log ending in tombstones past their horizon kept no batch at
 * its end, so a consumer there fetched nothing below the high watermark and
 * never reached the end. The last batch stays until the log grows past it. */
TEST(the_last_batch_of_a_log_never_goes)
{
    srand(5);
    world_t w;
    world_open(&w, 4);
    ls_kc_policy_t p = {
        .compact = true, .max_lag_ms = INT64_MAX, .delete_retention_ms = 100, .dirty_ratio = 0};
    CHECK_EQ_INT(produce(&w, 20, 0, LS_CODEC_NONE), 0);
    CHECK_EQ_INT(produce(&w, 20, 100, LS_CODEC_NONE), 0); /* tombstones of every key */
    wal_to_co(&w);
    for (int i = 0; i < 4; i++) { /* horizons set, then passed */
        w.now += 1000;
        key_compact(&w, &p, 1 << 20, 1 << 20, 0);
    }
    reader_t rd;
    CHECK_EQ_INT(read_from(&w, w.n - 1, 1, &rd), 0);
    CHECK(rd.n > 0 && rd.v[rd.n - 1].off == w.n - 1);
    ls_free(rd.v);
    /* once the log grows past it, it goes like any other */
    CHECK_EQ_INT(produce(&w, 1, 0, LS_CODEC_NONE), 0);
    wal_to_co(&w);
    for (int i = 0; i < 4; i++) {
        w.now += 1000;
        key_compact(&w, &p, 1 << 20, 1 << 20, 0);
    }
    CHECK_EQ_INT(check_log(&w, true, p.delete_retention_ms), 0);
    reader_t all;
    CHECK_EQ_INT(read_log(&w, &all), 0);
    CHECK_EQ_INT((int)all.n, 1);
    ls_free(all.v);
    world_close(&w);
}

/* Records per second of one pass over a log with many updates. */
TEST(throughput)
{
    srand(4);
    world_t w;
    world_open(&w, 10000);
    for (int b = 0; b < 4000; b++)
        CHECK_EQ_INT(produce(&w, 50, 5, b % 2 ? LS_CODEC_LZ4 : LS_CODEC_NONE), 0);
    for (int i = 0; i < 80; i++)
        wal_to_co(&w);
    ls_kc_policy_t p = {
        .compact = true, .max_lag_ms = INT64_MAX, .delete_retention_ms = 1000, .dirty_ratio = 0};
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    key_compact(&w, &p, 16 << 20, 8 << 20, 0);
    clock_gettime(CLOCK_MONOTONIC, &b);
    double s = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
    CHECK_EQ_INT(w.st.records_read, w.n);
    printf("  key compaction: %lld records (%llu kept) in %.3f s: %.0f records/s\n", (long long)w.n,
           (unsigned long long)w.st.records_kept, s, (double)w.n / s);
    CHECK_EQ_INT(check_log(&w, true, 1000), 0);
    world_close(&w);
}

int main(void)
{
    uv_loop_init(&loop);
    RUN(latest_value_per_key_and_tombstones_expire);
    RUN(dirty_ratio_and_lags_decide_when);
    RUN(soak_random_passes_match_the_model);
    RUN(thousands_of_small_objects_merge_into_a_bounded_index);
    RUN(merges_respect_the_span_and_the_minimum_run);
    RUN(applying_a_swap_that_replaces_nothing_keeps_the_index_sound);
    RUN(the_last_batch_of_a_log_never_goes);
    RUN(throughput);
    UNIT_DONE();
}
