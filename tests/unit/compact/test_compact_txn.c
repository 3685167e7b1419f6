/* Transactions in the compaction pass (docs/ARCHITECTURE.md, "Transactions",
 * "Compaction, retention, tables"): committed and aborted transactional
 * batches, open transactions and markers are appended to a real log, the
 * pass runs, and the table is read back from its Parquet files:
 *   - a table holds exactly the committed records: no aborted record, no
 *     control record, nothing at or past the LSO until the transaction
 *     holding it ends, then exactly once (append, upsert and changelog
 *     tables, and the backfill of a table enabled afterwards);
 *   - a transaction that aborts after a pass already ran leaves nothing;
 *   - a pass killed at its crash points (a forked child over SQLite and a
 *     directory store) is finished by the next one without a duplicate;
 *   - key compaction keeps the latest committed value of every key, drops
 *     aborted records, never touches what lies at or past the LSO, and keeps
 *     a marker while data of its transaction remains (then until its delete
 *     horizon). */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <uv.h>

#include "base/alloc.h"
#include "base/crc32c.h"
#include "compact/compactor.h"
#include "compact/keycompact.h"
#include "lake/table_plan.h"
#include "log/log_meta.h"
#include "log/log_trim.h"
#include "log/logstore.h"
#include "log_fixture.h"
#include "stream/catalog.h"
#include "table/iceberg_manifest.h"
#include "table/iceberg_table.h"
#include "table/parquet_reader.h"
#include "table/table_catalog.h"
#include "unit.h"
#include "meta/meta_keys.h"

#define NS "default"
#define TS0 1700000000000LL
#define ATTR_TXN 0x10
#define ATTR_CONTROL 0x20

/* ---- RecordBatch v2 encoder ----------------------------------------------------- */

typedef struct rec {
    const char *key;   /* NULL: no key */
    const char *value; /* NULL: tombstone */
} rec_t;

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
static void put_bytes(ls_buf_t *b, const void *p, size_t len)
{
    if (!p) {
        put_vl(b, -1);
        return;
    }
    put_vl(b, (int64_t)len);
    ls_buf_append(b, p, len);
}

/* One uncompressed batch of records (key/value byte strings of klen/vlen,
 * or NULL), attributes attrs, producer fields pid/seq. */
static void put_batch(ls_buf_t *out, int16_t attrs, int64_t pid, int32_t seq, int n,
                      const void *const *keys, const size_t *klen, const void *const *vals,
                      const size_t *vlen)
{
    ls_buf_t recs;
    ls_buf_init(&recs);
    for (int i = 0; i < n; i++) {
        ls_buf_t body;
        ls_buf_init(&body);
        ls_buf_append_u8(&body, 0);
        put_vl(&body, 0); /* timestamp delta */
        put_vl(&body, i); /* offset delta */
        put_bytes(&body, keys[i], klen[i]);
        put_bytes(&body, vals[i], vlen[i]);
        put_vl(&body, 0); /* no headers */
        put_vl(&recs, (int64_t)body.len);
        ls_buf_append(&recs, body.data, body.len);
        ls_buf_free(&body);
    }
    size_t start = out->len;
    put_be(out, 0, 8); /* base offset: assigned by the log */
    put_be(out, 0, 4); /* length, below */
    put_be(out, 0, 4); /* leader epoch */
    ls_buf_append_u8(out, 2);
    put_be(out, 0, 4); /* crc, below */
    put_be(out, (uint16_t)attrs, 2);
    put_be(out, (uint32_t)(n - 1), 4);
    put_be(out, (uint64_t)TS0, 8);
    put_be(out, (uint64_t)TS0, 8);
    put_be(out, (uint64_t)pid, 8);
    put_be(out, pid < 0 ? 0xffff : 0, 2);
    put_be(out, (uint32_t)seq, 4);
    put_be(out, (uint32_t)n, 4);
    ls_buf_append(out, recs.data, recs.len);
    uint8_t *b = out->data + start;
    size_t size = out->len - start;
    ls_be32_put(b + LS_RB_OFF_LENGTH, (uint32_t)(size - 12));
    ls_be32_put(b + LS_RB_OFF_CRC, ls_crc32c(0, b + 21, size - 21));
    ls_buf_free(&recs);
}

/* ---- the world: a stream with a table, its log, its store ----------------------- */

#define MAX_PIDS 16

typedef struct world {
    ls_meta_t *meta;
    ls_objstore_t *os;
    ls_logstore_t *ls;
    ls_catalog_t *cat;
    ls_stream_t *s;
    int64_t log;
    char table[64];
    int32_t seq[MAX_PIDS]; /* next sequence per producer id */
    char dir[64];          /* persistent stores (crash tests): their directory */
    ls_kc_stats_t kc;
    int64_t kc_now;
} world_t;

static int open_stores(world_t *w)
{
    char err[256];
    if (w->dir[0]) {
        char path[128];
        snprintf(path, sizeof path, "%s/meta.db", w->dir);
        w->meta = ls_meta_sqlite_open(path, err, sizeof err);
        snprintf(path, sizeof path, "%s/objects", w->dir);
        w->os = ls_objstore_fs_open(path, 0, err, sizeof err);
    } else {
        w->meta = ls_meta_mem_open();
        w->os = ls_objstore_mem_open();
    }
    if (!w->meta || !w->os) return -1;
    ls_logstore_config_t c = lcfg();
    w->ls = ls_logstore_open(&loop, w->meta, w->os, &c, err, sizeof err);
    w->cat = ls_catalog_open(w->meta, err, sizeof err);
    if (!w->ls || !w->cat) return -1;
    ls_stream_release(w->s);
    w->s = ls_catalog_lookup(w->cat, NS, w->table);
    if (w->s) w->log = ls_stream_log_id(w->s, 0);
    return 0;
}

static void close_stores(world_t *w)
{
    int shut = 0;
    ls_logstore_shutdown(w->ls, flag_cb, &shut);
    run_until(&shut);
    ls_logstore_free(w->ls);
    ls_stream_release(w->s);
    w->s = NULL;
    ls_catalog_close(w->cat);
    ls_objstore_close(w->os);
    ls_meta_close(w->meta);
}

/* A stream `name` of one partition with configs kv (NULL-terminated pairs). */
static int world_open(world_t *w, const char *name, bool persistent, const char *const *kv)
{
    memset(w, 0, sizeof *w);
    snprintf(w->table, sizeof w->table, "%s", name);
    w->kc_now = TS0;
    if (persistent) {
        snprintf(w->dir, sizeof w->dir, "/tmp/ls-compact-txn-XXXXXX");
        if (!mkdtemp(w->dir)) return -1;
    }
    if (open_stores(w) != 0) return -1;
    ls_prop_t props[16];
    int n = 0;
    for (; kv && kv[2 * n]; n++)
        props[n] = (ls_prop_t){(char *)kv[2 * n], (char *)kv[2 * n + 1]};
    char err[256];
    if (ls_catalog_create(w->cat, NS, name, 1, props, n, 0, &w->s, err, sizeof err) != LS_OK) {
        printf("creating the stream: %s\n", err);
        return -1;
    }
    w->log = ls_stream_log_id(w->s, 0);
    return 0;
}

static void world_close(world_t *w)
{
    close_stores(w);
    if (w->dir[0]) {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf %s", w->dir);
        if (system(cmd) != 0) printf("could not remove %s\n", w->dir);
    }
}

/* Appends one batch; its base offset, or -1. */
static int64_t append(world_t *w, const ls_buf_t *b, int count, ls_producer_ref_t pr,
                      int64_t txn_seq, const ls_log_marker_t *m)
{
    ls_append_t a = {.log_id = w->log,
                     .data = b->data,
                     .len = b->len,
                     .offset_count = count,
                     .max_timestamp = TS0,
                     .producer = pr,
                     .txn_seq = txn_seq,
                     .marker = m};
    ack_t r = {0};
    ls_logstore_append(w->ls, &a, on_ack, &r);
    run_until(&r.done);
    return r.st == LS_OK ? r.off : -1;
}

/* Records of n key/value strings (value NULL: tombstone), as one batch:
 * non-transactional (pid -1) or of transaction txn_seq of producer pid. */
static int64_t produce(world_t *w, int64_t pid, int64_t txn_seq, int n, const rec_t *r)
{
    const void *keys[8], *vals[8];
    size_t kl[8], vl[8];
    for (int i = 0; i < n; i++) {
        keys[i] = r[i].key;
        kl[i] = r[i].key ? strlen(r[i].key) : 0;
        vals[i] = r[i].value;
        vl[i] = r[i].value ? strlen(r[i].value) : 0;
    }
    int32_t seq = pid >= 0 ? w->seq[pid] : -1;
    ls_buf_t b;
    ls_buf_init(&b);
    put_batch(&b, pid >= 0 && txn_seq ? ATTR_TXN : 0, pid, seq, n, keys, kl, vals, vl);
    ls_producer_ref_t pr = {.producer_id = -1};
    if (pid >= 0)
        pr = (ls_producer_ref_t){.producer_id = pid,
                                 .producer_epoch = 0,
                                 .base_sequence = seq,
                                 .last_sequence = seq + n - 1};
    int64_t off = append(w, &b, n, pr, txn_seq, NULL);
    if (off >= 0 && pid >= 0) w->seq[pid] += n;
    ls_buf_free(&b);
    return off;
}

static int64_t plain(world_t *w, const char *key, const char *value)
{
    rec_t r = {key, value};
    return produce(w, -1, 0, 1, &r);
}

/* The marker of transaction txn_seq of pid: a control batch (Kafka's
 * layout: key version 0 + type, value version 0 + coordinator epoch). */
static int64_t marker(world_t *w, int64_t pid, int64_t txn_seq, bool commit)
{
    uint8_t key[4] = {0, 0, 0, commit ? 1 : 0}, val[6] = {0};
    const void *keys[1] = {key}, *vals[1] = {val};
    size_t kl[1] = {4}, vl[1] = {6};
    ls_buf_t b;
    ls_buf_init(&b);
    put_batch(&b, ATTR_TXN | ATTR_CONTROL, pid, -1, 1, keys, kl, vals, vl);
    ls_log_marker_t m = {.producer_id = pid, .epoch = 0, .txn_seq = txn_seq, .commit = commit};
    ls_producer_ref_t pr = {
        .producer_id = pid, .producer_epoch = 0, .base_sequence = -1, .last_sequence = -1};
    int64_t off = append(w, &b, 1, pr, 0, &m);
    ls_buf_free(&b);
    return off;
}

static int64_t lso(world_t *w)
{
    ls_log_info_t info;
    ls_logstore_info(w->ls, w->log, &info);
    return info.last_stable_offset;
}

/* One full pass of a fresh compactor, then the loop applies its swaps.
 * in_table: table.cold.reads=table (ranges left only in the table). */
static ls_compactor_stats_t pass_with(world_t *w, bool in_table)
{
    ls_compactor_config_t cc = {.enabled = false,
                                .interval_ms = 1000,
                                .min_age_ms = 3600000, /* tables have no hot window */
                                .max_entries = 3,
                                .max_bytes = 1 << 20,
                                .catalog = w->cat,
                                .warehouse_uri = "file:///warehouse",
                                .replaced_grace_ms = 0,
                                .cold_reads_table = in_table};
    ls_compactor_t *comp = ls_compactor_start(&loop, w->ls, w->meta, w->os, &cc);
    int done = 0;
    ls_compactor_kick(comp, flag_cb, &done);
    run_until(&done);
    ls_compactor_stats_t st;
    ls_compactor_stats(comp, &st);
    int stopped = 0;
    ls_compactor_stop(comp, flag_cb, &stopped);
    run_until(&stopped);
    ls_compactor_free(comp);
    return st;
}

/* The record of the last table commit (table_plan.h status) forgotten, so
 * a table's commit interval never holds the next pass back. */
static void forget_commits(world_t *w)
{
    ls_kvlist_t recorded;
    if (ls_meta_scan_prefix(w->meta, LS_KEY_TABLESTAT, 0, &recorded) == LS_OK) {
        for (size_t i = 0; i < recorded.n; i++)
            ls_meta_del(w->meta, (const char *)recorded.v[i].key);
        ls_kvlist_free(&recorded);
    }
}

static ls_compactor_stats_t pass(world_t *w)
{
    forget_commits(w);
    return pass_with(w, false);
}

/* ---- reading the table back ----------------------------------------------------- */

typedef struct row {
    int64_t offset;
    char kv[64]; /* "key=value" */
} row_t;

static int row_cmp(const void *a, const void *b)
{
    const row_t *x = a, *y = b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static void copy_str(char *out, size_t cap, const ls_pqr_triple_t *t, int max_def)
{
    if (t->def < max_def) {
        snprintf(out, cap, "null");
        return;
    }
    snprintf(out, cap, "%.*s", (int)t->len, (const char *)t->bytes);
}

/* The rows of table `name` as "offset:key=value" joined by spaces, in
 * offset order ("" for no table or no rows; "error" when reading fails). */
static void table_rows(world_t *w, const char *name, char *out, size_t cap)
{
    out[0] = 0;
    char prefix[128], err[256];
    snprintf(prefix, sizeof prefix, "warehouse/%s/%s", NS, name);
    ls_ice_table_t *t = NULL;
    ls_status st = ls_tcat_open(w->meta, w->os, NS, name, prefix, &t, err, sizeof err);
    if (st == LS_ENOTFOUND) return;
    ls_ice_mentry_t *live = NULL;
    size_t nlive = 0;
    if (st != LS_OK || ls_ice_table_live_files(t, &live, &nlive) != LS_OK) {
        snprintf(out, cap, "error");
        ls_ice_table_free(t);
        return;
    }
    row_t *rows = NULL;
    size_t n = 0;
    bool bad = false;
    ls_buf_t raw;
    ls_buf_init(&raw);
    for (size_t i = 0; i < nlive && !bad; i++) {
        raw.len = 0;
        ls_pqr_t *r = NULL;
        if (ls_ice_table_get_file(t, live[i].df.path, &raw) == LS_OK)
            r = ls_pqr_open(raw.data, raw.len, &st, err, sizeof err);
        int co = r ? ls_pqr_column_index(r, "offset") : -1,
            ck = r ? ls_pqr_column_index(r, "key") : -1,
            cv = r ? ls_pqr_column_index(r, "value") : -1;
        bad = co < 0 || ck < 0 || cv < 0;
        for (int rg = 0; !bad && rg < ls_pqr_num_row_groups(r); rg++) {
            ls_pqr_flat_t fo, fk, fv;
            bad = ls_pqr_read_flat(r, rg, co, &fo, err, sizeof err) != LS_OK;
            if (bad) break;
            bad = ls_pqr_read_flat(r, rg, ck, &fk, err, sizeof err) != LS_OK;
            if (!bad) {
                bad = ls_pqr_read_flat(r, rg, cv, &fv, err, sizeof err) != LS_OK;
                if (!bad) {
                    rows = ls_realloc(rows, (n + (size_t)fo.n) * sizeof *rows);
                    for (int64_t k = 0; k < fo.n; k++, n++) {
                        char ks[32], vs[32];
                        copy_str(ks, sizeof ks, &fk.v[k], fk.max_def);
                        copy_str(vs, sizeof vs, &fv.v[k], fv.max_def);
                        rows[n].offset = fo.v[k].v.i64;
                        snprintf(rows[n].kv, sizeof rows[n].kv, "%s=%s", ks, vs);
                    }
                    ls_pqr_flat_free(&fv);
                }
                ls_pqr_flat_free(&fk);
            }
            ls_pqr_flat_free(&fo);
        }
        if (!r) bad = true;
        ls_pqr_free(r);
    }
    if (bad) {
        snprintf(out, cap, "error");
    } else {
        if (n) qsort(rows, n, sizeof *rows, row_cmp);
        size_t len = 0;
        for (size_t i = 0; i < n && len < cap; i++)
            len += (size_t)snprintf(out + len, cap - len, "%s%lld:%s", i ? " " : "",
                                    (long long)rows[i].offset, rows[i].kv);
    }
    ls_free(rows);
    ls_buf_free(&raw);
    ls_ice_mentries_free(live, nlive);
    ls_ice_table_free(t);
}

/* Index entries of the log as "W[first,last]" / "C[...]" / "K[...]". */
static void index_shape(world_t *w, char *out, size_t cap)
{
    out[0] = 0;
    char prefix[64];
    ls_log_idx_prefix(prefix, sizeof prefix, w->log);
    ls_kvlist_t l;
    if (ls_meta_scan_prefix(w->meta, prefix, 0, &l) != LS_OK) return;
    size_t len = 0;
    for (size_t i = 0; i < l.n && len < cap; i++) {
        ls_idx_entry_t e;
        if (ls_idx_decode(l.v[i].val, l.v[i].vlen, &e) != LS_OK) break;
        len += (size_t)snprintf(out + len, cap - len, "%s%c[%lld,%lld]", i ? " " : "",
                                e.kind == LS_IDX_WAL     ? 'W'
                                : e.kind == LS_IDX_CO    ? 'C'
                                : e.kind == LS_IDX_TABLE ? 'T'
                                                         : 'K',
                                (long long)e.first_offset, (long long)e.last_offset);
        ls_idx_clear(&e);
    }
    ls_kvlist_free(&l);
}

#define CHECK_ROWS(w, name, want)                                                                  \
    do {                                                                                           \
        char _got[2048];                                                                           \
        table_rows(w, name, _got, sizeof _got);                                                    \
        if (strcmp(_got, want) != 0) printf("  table %s: got \"%s\"\n", name, _got);               \
        CHECK(strcmp(_got, want) == 0);                                                            \
    } while (0)

static const char *const APPEND_TABLE[] = {"lakestream.table.enabled", "true",
                                           "lakestream.table.compression", "none", NULL};

/* ---- tables ---------------------------------------------------------------------- */

/* Committed, aborted and open transactions beside plain records: the table
 * takes exactly the committed records below the LSO; the open transaction
 * holds the rest back until it ends; one that aborts after a pass already
 * held it back leaves nothing. The index is compacted only below the LSO. */
TEST(table_holds_only_committed_records)
{
    world_t w;
    CHECK(world_open(&w, "txn", false, APPEND_TABLE) == 0);
    rec_t r1[] = {{"p1", "x"}, {"p1", "y"}}, r2[] = {{"p2", "bad"}, {"p2", "worse"}},
          r3[] = {{"p3", "later"}};
    CHECK_EQ_INT(plain(&w, "a", "1"), 0);
    CHECK_EQ_INT(produce(&w, 1, 1, 2, r1), 1); /* committed at 7 */
    CHECK_EQ_INT(plain(&w, "b", "2"), 3);
    CHECK_EQ_INT(produce(&w, 2, 1, 2, r2), 4); /* aborted at 6 */
    CHECK_EQ_INT(marker(&w, 2, 1, false), 6);
    CHECK_EQ_INT(marker(&w, 1, 1, true), 7);
    CHECK_EQ_INT(produce(&w, 3, 1, 1, r3), 8); /* open */
    CHECK_EQ_INT(plain(&w, "c", "3"), 9);
    CHECK_EQ_INT(lso(&w), 8);
    ls_compactor_stats_t st = pass(&w);
    CHECK_EQ_INT(st.table_failures, 0);
    CHECK_ROWS(&w, "txn", "0:a=1 1:p1=x 2:p1=y 3:b=2");
    char shape[512];
    index_shape(&w, shape, sizeof shape);
    if (strcmp(shape, "C[0,3] C[4,7] W[8,8] W[9,9]") != 0) printf("  index %s\n", shape);
    CHECK(strcmp(shape, "C[0,3] C[4,7] W[8,8] W[9,9]") == 0);
    /* a second pass while the transaction is open changes nothing */
    pass(&w);
    CHECK_ROWS(&w, "txn", "0:a=1 1:p1=x 2:p1=y 3:b=2");
    /* it commits: its record and the one behind it, once */
    CHECK_EQ_INT(marker(&w, 3, 1, true), 10);
    CHECK_EQ_INT(lso(&w), 11);
    pass(&w);
    CHECK_ROWS(&w, "txn", "0:a=1 1:p1=x 2:p1=y 3:b=2 8:p3=later 9:c=3");
    /* a transaction open across a pass, aborted afterwards */
    rec_t r4[] = {{"p1", "never"}};
    CHECK_EQ_INT(produce(&w, 1, 2, 1, r4), 11);
    CHECK_EQ_INT(plain(&w, "d", "4"), 12);
    pass(&w);
    CHECK_ROWS(&w, "txn", "0:a=1 1:p1=x 2:p1=y 3:b=2 8:p3=later 9:c=3");
    CHECK_EQ_INT(marker(&w, 1, 2, false), 13);
    pass(&w);
    CHECK_ROWS(&w, "txn", "0:a=1 1:p1=x 2:p1=y 3:b=2 8:p3=later 9:c=3 12:d=4");
    index_shape(&w, shape, sizeof shape);
    CHECK(strcmp(shape, "C[0,3] C[4,7] C[8,10] C[11,13]") == 0);
    world_close(&w);
}

/* Upsert and changelog tables: an aborted update never replaces a key's
 * committed value nor shows up as a change; a committed transactional
 * update does, once its marker lands. */
TEST(upsert_and_changelog_tables_skip_aborted)
{
    static const char *const kv[] = {"lakestream.table.enabled",
                                     "true",
                                     "lakestream.table.compression",
                                     "none",
                                     "lakestream.table.write.mode",
                                     "upsert",
                                     "lakestream.table.changelog",
                                     "true",
                                     NULL};
    world_t w;
    CHECK(world_open(&w, "ups", false, kv) == 0);
    rec_t bad[] = {{"k1", "bad"}, {"k2", "bad"}}, good[] = {{"k1", "v2"}, {"k3", "v3"}};
    CHECK_EQ_INT(plain(&w, "k1", "v1"), 0);
    CHECK_EQ_INT(produce(&w, 1, 1, 2, bad), 1);
    CHECK_EQ_INT(marker(&w, 1, 1, false), 3);
    CHECK_EQ_INT(produce(&w, 2, 1, 2, good), 4); /* open over the next pass */
    pass(&w);
    CHECK_ROWS(&w, "ups", "0:k1=v1");
    CHECK_ROWS(&w, "ups__changelog", "0:k1=v1");
    CHECK_EQ_INT(marker(&w, 2, 1, true), 6);
    pass(&w);
    CHECK_ROWS(&w, "ups", "4:k1=v2 5:k3=v3");
    CHECK_ROWS(&w, "ups__changelog", "0:k1=v1 4:k1=v2 5:k3=v3");
    world_close(&w);
}

/* A table enabled after its log was compacted backfills from the compacted
 * objects (which hold everything, markers and aborted data too): only the
 * committed records, and only up to the LSO even inside an object. */
TEST(backfill_stops_at_lso_and_skips_aborted)
{
    world_t w;
    CHECK(world_open(&w, "late", false, NULL) == 0);
    rec_t bad[] = {{"x", "bad"}}, open[] = {{"y", "open"}};
    CHECK_EQ_INT(plain(&w, "a", "1"), 0);
    CHECK_EQ_INT(produce(&w, 1, 1, 1, bad), 1);
    CHECK_EQ_INT(marker(&w, 1, 1, false), 2);
    CHECK_EQ_INT(produce(&w, 2, 1, 1, open), 3);
    CHECK_EQ_INT(plain(&w, "b", "2"), 4);
    /* no table yet: the WAL pass copies everything, past the LSO too */
    ls_compactor_config_t cc = {.enabled = false,
                                .interval_ms = 1000,
                                .min_age_ms = 0,
                                .max_entries = 8,
                                .max_bytes = 1 << 20};
    ls_compactor_t *comp = ls_compactor_start(&loop, w.ls, w.meta, w.os, &cc);
    int done = 0;
    ls_compactor_kick(comp, flag_cb, &done);
    run_until(&done);
    int stopped = 0;
    ls_compactor_stop(comp, flag_cb, &stopped);
    run_until(&stopped);
    ls_compactor_free(comp);
    char shape[256];
    index_shape(&w, shape, sizeof shape);
    CHECK(strcmp(shape, "C[0,4]") == 0);
    /* the table is enabled: backfill up to the LSO (3) */
    ls_prop_t props[] = {{"lakestream.table.enabled", "true"},
                         {"lakestream.table.compression", "none"}};
    CHECK_EQ_INT(ls_catalog_set_config(w.cat, NS, "late", props, 2), LS_OK);
    ls_compactor_stats_t st = pass(&w);
    CHECK_EQ_INT(st.table_failures, 0);
    CHECK_ROWS(&w, "late", "0:a=1");
    CHECK_EQ_INT(plain(&w, "c", "3"), 5); /* a WAL entry behind the held object */
    pass(&w);
    CHECK_ROWS(&w, "late", "0:a=1");
    CHECK_EQ_INT(marker(&w, 2, 1, true), 6);
    pass(&w);
    CHECK_ROWS(&w, "late", "0:a=1 3:y=open 4:b=2 5:c=3");
    world_close(&w);
}

static void on_trimmed(void *arg, ls_status st, int64_t log_start)
{
    ack_t *a = arg;
    a->done = 1;
    a->st = st;
    a->off = log_start;
}

/* A broker killed between a table commit and the record of it (the status
 * every broker reads, table_plan.h) leaves that record one commit behind
 * the table and its in-table index entries. The next pass must still take
 * the new records: the marks that follow the record are checked against
 * the table itself. Before, every partition warned "not backfilling" and
 * skipped its WAL ranges for good (found by tests/soak/cluster_soak.py). */
TEST(a_status_behind_the_table_does_not_stop_it)
{
    world_t w;
    CHECK(world_open(&w, "stale", false, APPEND_TABLE) == 0);
    CHECK_EQ_INT(plain(&w, "a", "1"), 0);
    CHECK_EQ_INT(plain(&w, "b", "2"), 1);
    forget_commits(&w);
    pass_with(&w, true);
    CHECK_ROWS(&w, "stale", "0:a=1 1:b=2");
    char shape[512];
    index_shape(&w, shape, sizeof shape);
    if (strcmp(shape, "T[0,1]") != 0) printf("  index %s\n", shape);
    CHECK(strcmp(shape, "T[0,1]") == 0); /* left only in the table */
    /* the record as a crash before it was written leaves it: no rows yet,
     * and a commit long ago (so the interval does not hold the pass) */
    char key[64], val[256];
    snprintf(key, sizeof key, LS_KEY_TABLESTAT "%016llx", (unsigned long long)w.s->stream_no);
    snprintf(val, sizeof val, "0 1\nwarehouse/%s/%s\n-1", NS, "stale");
    CHECK_EQ_INT(ls_meta_put(w.meta, key, val, strlen(val)), LS_OK);
    CHECK_EQ_INT(plain(&w, "c", "3"), 2);
    ls_compactor_stats_t st = pass_with(&w, true);
    CHECK_EQ_INT(st.table_failures, 0);
    CHECK_ROWS(&w, "stale", "0:a=1 1:b=2 2:c=3");
    world_close(&w);
}

/* DeleteRecords on a table's topic trims softly: the start moves past WAL
 * entries the table has not materialized yet. The aborted record of their
 * transaction must stay until those entries are gone, or the table would
 * take the aborted rows. */
TEST(soft_trim_keeps_aborted_records_for_the_table)
{
    world_t w;
    CHECK(world_open(&w, "soft", false, APPEND_TABLE) == 0);
    rec_t bad[] = {{"x", "bad"}};
    CHECK_EQ_INT(produce(&w, 1, 1, 1, bad), 0);
    CHECK_EQ_INT(marker(&w, 1, 1, false), 1);
    CHECK_EQ_INT(plain(&w, "a", "1"), 2);
    ack_t tr = {0};
    ls_logstore_trim(w.ls, w.log, 3, true, on_trimmed, &tr);
    run_until(&tr.done);
    CHECK_EQ_INT(tr.st, LS_OK);
    CHECK_EQ_INT(tr.off, 3);
    char key[96];
    ls_log_abort_key(key, sizeof key, w.log, 0);
    ls_kv_t kv;
    CHECK_EQ_INT(ls_meta_get(w.meta, key, &kv), LS_OK);
    ls_kv_free(&kv);
    pass(&w);
    CHECK_ROWS(&w, "soft", "2:a=1");
    /* once the table has them, retention removes the entries and the record */
    ls_compactor_config_t cc = {.enabled = false,
                                .interval_ms = 1000,
                                .min_age_ms = 0,
                                .max_entries = 3,
                                .max_bytes = 1 << 20,
                                .catalog = w.cat,
                                .warehouse_uri = "file:///warehouse",
                                .retention = true,
                                .retention_ms = -1,
                                .retention_bytes = -1};
    ls_compactor_t *comp = ls_compactor_start(&loop, w.ls, w.meta, w.os, &cc);
    int done = 0;
    ls_compactor_kick(comp, flag_cb, &done);
    run_until(&done);
    int stopped = 0;
    ls_compactor_stop(comp, flag_cb, &stopped);
    run_until(&stopped);
    ls_compactor_free(comp);
    CHECK_EQ_INT(ls_meta_get(w.meta, key, &kv), LS_ENOTFOUND);
    world_close(&w);
}

/* ---- key compaction ------------------------------------------------------------- */

/* Every entry of the log becomes its own compacted object (the WAL pass of
 * a log without a table, which copies everything, past the LSO too). */
static void wal_pass(world_t *w)
{
    ls_compactor_config_t cc = {.enabled = false,
                                .interval_ms = 1000,
                                .min_age_ms = 0,
                                .max_entries = 1,
                                .max_bytes = 1 << 20};
    ls_compactor_t *comp = ls_compactor_start(&loop, w->ls, w->meta, w->os, &cc);
    int done = 0;
    ls_compactor_kick(comp, flag_cb, &done);
    run_until(&done);
    int stopped = 0;
    ls_compactor_stop(comp, flag_cb, &stopped);
    run_until(&stopped);
    ls_compactor_free(comp);
}

static ls_status claim_ok(void *arg, int64_t log_id, ls_meta_cmp_t *fence)
{
    static const char key[] = "/test/no-claim";
    *fence =
        (ls_meta_cmp_t){.kind = LS_META_CMP_MOD_REV, .key = key, .klen = sizeof key - 1, .rev = 0};
    return LS_OK;
}

/* One key compaction call at w->kc_now (every call due: dirty ratio 0; at
 * most max_swaps swaps, 0: no bound), then the log is reopened so reads see
 * the stored index. */
static void key_compact_cut(world_t *w, int max_swaps)
{
    ls_kc_policy_t p = {
        .compact = true, .max_lag_ms = INT64_MAX, .delete_retention_ms = 60000, .dirty_ratio = 0};
    ls_kc_limits_t lim = {
        .map_bytes = 1 << 16, .group_bytes = 1 << 20, .max_swaps = max_swaps, .grace_ms = 0};
    ls_kc_log(w->meta, w->os, w->log, &p, &lim, w->kc_now, claim_ok, NULL, NULL, &w->kc);
    int shut = 0;
    ls_logstore_shutdown(w->ls, flag_cb, &shut);
    run_until(&shut);
    ls_logstore_free(w->ls);
    ls_logstore_config_t c = lcfg();
    char err[256];
    w->ls = ls_logstore_open(&loop, w->meta, w->os, &c, err, sizeof err);
}

static void key_compact(world_t *w) { key_compact_cut(w, 0); }

/* One record of the log as read back (a marker is one item too). */
typedef struct item {
    int64_t offset, pid;
    bool control, transactional, horizon;
    int type;                /* a marker's: 0 abort, 1 commit */
    char key[24], value[40]; /* value "null": a tombstone */
} item_t;

typedef struct items {
    item_t *v;
    size_t n, cap;
    ls_batch_info_t h; /* of the batch being read */
} items_t;

static int on_item(void *arg, const ls_record_view_t *r)
{
    items_t *l = arg;
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 64;
        l->v = ls_realloc(l->v, l->cap * sizeof *l->v);
    }
    item_t *it = &l->v[l->n++];
    *it = (item_t){.offset = l->h.base_offset + r->offset_delta,
                   .pid = l->h.producer_id,
                   .control = l->h.control,
                   .transactional = l->h.transactional,
                   .horizon = (l->h.attributes & 0x40) != 0,
                   .type = r->key_len == 4 ? r->key[3] : -1}; /* marker key: version, type */
    snprintf(it->key, sizeof it->key, "%.*s", r->key_len > 0 ? (int)r->key_len : 0,
             (const char *)r->key);
    snprintf(it->value, sizeof it->value, "%.*s", r->value ? (int)r->value_len : 4,
             r->value ? (const char *)r->value : "null");
    return 0;
}

/* The whole log as a read_uncommitted reader sees it; LS_OK or the read's
 * error. */
static ls_status read_log(world_t *w, items_t *l)
{
    memset(l, 0, sizeof *l);
    read_got_t r = {0};
    ls_logstore_read(w->ls, w->log, 0, 1 << 26, on_read_got, &r);
    run_until(&r.done);
    for (size_t q = 0; r.st == LS_OK && q + LS_RB_HEADER_SIZE <= r.bytes.len; q += l->h.size) {
        ls_batch_header_parse(r.bytes.data + q, &l->h);
        if (ls_records_foreach(r.bytes.data + q, l->h.size, 1 << 24, on_item, l) != LS_RB_OK)
            r.st = LS_ECORRUPT;
    }
    ls_buf_free(&r.bytes);
    return r.st;
}

/* The log as "offset:key=value" for records and "offset:COMMIT" /
 * "offset:ABORT" for markers, "+h" after those whose batch carries a delete
 * horizon. */
static void log_dump(world_t *w, char *out, size_t cap)
{
    items_t l;
    ls_status st = read_log(w, &l);
    size_t len = 0;
    out[0] = 0;
    if (st != LS_OK) snprintf(out, cap, "read failed: %s", ls_status_str(st));
    for (size_t i = 0; st == LS_OK && i < l.n && len < cap; i++) {
        const item_t *it = &l.v[i];
        if (it->control)
            len += (size_t)snprintf(out + len, cap - len, "%s%lld:%s", i ? " " : "",
                                    (long long)it->offset, it->type == 1 ? "COMMIT" : "ABORT");
        else
            len += (size_t)snprintf(out + len, cap - len, "%s%lld:%s=%s", i ? " " : "",
                                    (long long)it->offset, it->key, it->value);
        if (it->horizon && len < cap) len += (size_t)snprintf(out + len, cap - len, "+h");
    }
    ls_free(l.v);
}

#define CHECK_LOG(w, want)                                                                         \
    do {                                                                                           \
        char _got[2048];                                                                           \
        log_dump(w, _got, sizeof _got);                                                            \
        if (strcmp(_got, want) != 0) printf("  log: got \"%s\"\n", _got);                          \
        CHECK(strcmp(_got, want) == 0);                                                            \
    } while (0)

/* Kafka's cleaner rules with transactions: aborted records go (and never
 * supersede a committed value), committed transactional records are
 * compacted like any other, nothing at or past the LSO is touched, and a
 * marker stays while data of its transaction does, then until its delete
 * horizon. */
TEST(key_compaction_with_transactions)
{
    world_t w;
    static const char *const kv[] = {"cleanup.policy", "compact", NULL};
    CHECK(world_open(&w, "kc", false, kv) == 0);
    rec_t t1[] = {{"k1", "t1"}, {"k3", "t1"}}, t2[] = {{"k2", "bad"}, {"k4", "bad"}},
          t3[] = {{"k1", "open"}};
    CHECK_EQ_INT(plain(&w, "k1", "v1"), 0);
    CHECK_EQ_INT(plain(&w, "k2", "v1"), 1);
    CHECK_EQ_INT(produce(&w, 1, 1, 2, t1), 2);
    CHECK_EQ_INT(marker(&w, 1, 1, true), 4);
    CHECK_EQ_INT(produce(&w, 2, 1, 2, t2), 5);
    CHECK_EQ_INT(marker(&w, 2, 1, false), 7);
    CHECK_EQ_INT(plain(&w, "k3", "v2"), 8);
    CHECK_EQ_INT(produce(&w, 3, 1, 1, t3), 9); /* open: the LSO */
    CHECK_EQ_INT(plain(&w, "k4", "v4"), 10);
    wal_pass(&w);
    key_compact(&w);
    CHECK_LOG(&w, "1:k2=v1 2:k1=t1 4:COMMIT 7:ABORT+h 8:k3=v2 9:k1=open 10:k4=v4");
    char shape[256];
    index_shape(&w, shape, sizeof shape);
    CHECK(strcmp(shape, "K[0,8] C[9,9] C[10,10]") == 0); /* cleaned up to the LSO */
    CHECK_EQ_INT(w.kc.aborted_dropped, 2);
    /* the open transaction commits: its record supersedes the committed k1
     * before it, whose transaction keeps no data, so its marker gets a
     * horizon; the new marker stays with its data */
    CHECK_EQ_INT(marker(&w, 3, 1, true), 11);
    wal_pass(&w);
    key_compact(&w);
    CHECK_LOG(&w, "1:k2=v1 4:COMMIT+h 7:ABORT+h 8:k3=v2 9:k1=open 10:k4=v4 11:COMMIT");
    CHECK_EQ_INT(w.kc.markers_dropped, 0);
    /* past delete.retention.ms the empty transactions' markers go */
    w.kc_now += 60001;
    key_compact(&w);
    CHECK_LOG(&w, "1:k2=v1 8:k3=v2 9:k1=open 10:k4=v4 11:COMMIT");
    CHECK_EQ_INT(w.kc.markers_dropped, 2);
    world_close(&w);
}

/* The model of the random test: what was written at each offset. */
typedef struct mtxn {
    int64_t pid, seq;
    int outcome; /* 0 open, 1 committed, 2 aborted */
    int64_t marker_offset;
} mtxn_t;

typedef struct mrec {
    int txn; /* index into the transactions; -1: not transactional */
    bool marker;
    int key;   /* records */
    int value; /* -1: tombstone */
} mrec_t;

typedef struct model {
    mrec_t v[2048];
    int64_t n;
    mtxn_t txns[512];
    int ntxns;
    int open[MAX_PIDS]; /* producer -> its open transaction, -1: none */
    int64_t next_seq[MAX_PIDS];
} model_t;

static bool committed(const model_t *m, const mrec_t *r)
{
    return r->txn < 0 || m->txns[r->txn].outcome == 1;
}

static int m_write(world_t *w, model_t *m, int pid, int n)
{
    rec_t r[4];
    char ks[4][16], vs[4][16];
    int txn = pid > 0 ? m->open[pid] : -1;
    for (int i = 0; i < n; i++) {
        int key = rand() % 12, value = rand() % 6 == 0 ? -1 : (int)(m->n + i);
        snprintf(ks[i], sizeof ks[i], "k%02d", key);
        snprintf(vs[i], sizeof vs[i], "v%d", value);
        r[i] = (rec_t){ks[i], value < 0 ? NULL : vs[i]};
        m->v[m->n + i] = (mrec_t){.txn = txn, .key = key, .value = value};
    }
    int64_t off = produce(w, pid > 0 ? pid : -1, txn >= 0 ? m->txns[txn].seq : 0, n, r);
    if (off != m->n) return -1;
    m->n += n;
    return 0;
}

static int m_step(world_t *w, model_t *m)
{
    int pid = rand() % 4; /* 0: a plain producer */
    if (pid == 0 || (m->open[pid] < 0 && rand() % 3 == 0)) return m_write(w, m, 0, 1 + rand() % 3);
    if (m->open[pid] < 0) { /* a transaction begins */
        if (m->ntxns == 512) return 0;
        m->txns[m->ntxns] = (mtxn_t){.pid = pid, .seq = ++m->next_seq[pid]};
        m->open[pid] = m->ntxns++;
        return m_write(w, m, pid, 1 + rand() % 3);
    }
    if (rand() % 3) return m_write(w, m, pid, 1 + rand() % 3);
    mtxn_t *t = &m->txns[m->open[pid]];
    t->outcome = rand() % 2 ? 1 : 2;
    t->marker_offset = m->n;
    if (marker(w, pid, t->seq, t->outcome == 1) != m->n) return -1;
    m->v[m->n++] = (mrec_t){.txn = m->open[pid], .marker = true};
    m->open[pid] = -1;
    return 0;
}

/* First offset not yet key-compacted (the first entry that is not a KCO). */
static int64_t clean_end(world_t *w)
{
    char prefix[64];
    ls_log_idx_prefix(prefix, sizeof prefix, w->log);
    ls_kvlist_t l;
    int64_t end = INT64_MAX;
    if (ls_meta_scan_prefix(w->meta, prefix, 0, &l) != LS_OK) return -1;
    for (size_t i = 0; i < l.n && end == INT64_MAX; i++) {
        ls_idx_entry_t e;
        if (ls_idx_decode(l.v[i].val, l.v[i].vlen, &e) != LS_OK) return -1;
        if (e.kind != LS_IDX_KCO) end = e.first_offset;
        ls_idx_clear(&e);
    }
    ls_kvlist_free(&l);
    return end;
}

/* The log against the model; 0 or the number of the broken rule. */
static int m_check(world_t *w, const model_t *m, bool final)
{
    items_t l;
    if (read_log(w, &l) != LS_OK) return 1;
    int rc = 0;
    int64_t stable = lso(w), cleaned = clean_end(w);
    static bool present[2048];
    memset(present, 0, sizeof present);
    bool marker_needed[512] = {false}, marker_seen[512] = {false};
    int64_t latest[12];
    for (int k = 0; k < 12; k++)
        latest[k] = -1;
    for (size_t i = 0; i < l.n && !rc; i++) {
        const item_t *it = &l.v[i];
        if (it->offset < 0 || it->offset >= m->n || present[it->offset]) {
            rc = 2; /* a record that was never written, or twice */
            break;
        }
        present[it->offset] = true;
        const mrec_t *r = &m->v[it->offset];
        char want[40];
        snprintf(want, sizeof want, "v%d", r->value);
        if (r->marker != it->control ||
            (!r->marker && (atoi(it->key + 1) != r->key ||
                            strcmp(it->value, r->value < 0 ? "null" : want) != 0)) ||
            (r->marker && it->type != (m->txns[r->txn].outcome == 1))) {
            rc = 3; /* not what was written there */
            break;
        }
        if (r->marker) {
            marker_seen[r->txn] = true;
            /* kept past its horizon (but the log's last batch never goes) */
            if (final && !marker_needed[r->txn] && it->offset < m->n - 1) rc = 4;
            continue;
        }
        if (r->txn >= 0 && m->txns[r->txn].outcome == 2 && it->offset < cleaned)
            rc = 5; /* an aborted record in the cleaned part */
        if (r->txn >= 0 && m->txns[r->txn].outcome != 0) marker_needed[r->txn] = true;
        if (it->offset < stable && committed(m, r)) latest[r->key] = it->offset;
    }
    for (int t = 0; !rc && t < m->ntxns; t++)
        if (marker_needed[t] && !marker_seen[t] && m->txns[t].marker_offset < m->n)
            rc = 6; /* a marker went while data of its transaction stays */
    for (int64_t o = stable; !rc && o < m->n; o++)
        if (!present[o]) rc = 7; /* something at or past the LSO was compacted */
    /* every aborted-index record still has its marker in the log: one
     * without would make read_committed readers skip the producer's later
     * batches, committed ones included (issue 29 item 2) */
    int64_t lso_now, span;
    ls_aborted_list_t ab = {0};
    if (!rc && (ls_log_stable_read(w->meta, w->log, &lso_now, &span) != LS_OK ||
                ls_log_aborted_read(w->meta, w->log, 0, INT64_MAX - 1, span, &ab) != LS_OK))
        rc = 1;
    for (int i = 0; !rc && i < ab.n; i++)
        if (ab.v[i].marker_offset < m->n && !present[ab.v[i].marker_offset]) rc = 9;
    ls_aborted_list_free(&ab);
    /* per key: the latest committed record below the LSO is there (a
     * tombstone may have gone with everything before it) */
    for (int k = 0; !rc && k < 12; k++) {
        int64_t want = -1;
        for (int64_t o = 0; o < stable && o < m->n; o++)
            if (!m->v[o].marker && m->v[o].key == k && committed(m, &m->v[o])) want = o;
        bool gone_tombstone = want >= 0 && m->v[want].value < 0 && latest[k] == -1;
        if (latest[k] != want && !gone_tombstone) rc = 8;
    }
    if (rc) {
        char dump[8192];
        log_dump(w, dump, sizeof dump);
        printf("  rule %d broken (lso %lld, cleaned below %lld): %s\n", rc, (long long)stable,
               (long long)cleaned, dump);
    }
    ls_free(l.v);
    return rc;
}

/* Random plain records and transactions of three producers (committed,
 * aborted, left open across compactions; tombstones too), key-compacted
 * every few steps, some calls cut after one swap. After every call: each
 * record is what was written at its offset, nothing at or past the LSO
 * went, no aborted record is left in the cleaned part, every marker whose
 * transaction has data left is there, and every key's latest committed
 * record below the LSO is there (or, a tombstone, gone with its key). At
 * the end every transaction ends and, past the horizons, only markers
 * with data remain. */
TEST(key_compaction_with_random_transactions)
{
    static const char *const kv[] = {"cleanup.policy", "compact", NULL};
    srand(16);
    for (int round = 0; round < 6; round++) {
        world_t w;
        CHECK(world_open(&w, "kcm", false, kv) == 0);
        model_t *m = ls_calloc(1, sizeof *m);
        for (int p = 0; p < MAX_PIDS; p++)
            m->open[p] = -1;
        for (int step = 0; step < 160; step++) {
            CHECK(m_step(&w, m) == 0);
            if (step % 16 == 15) {
                wal_pass(&w);
                w.kc_now += rand() % 3 ? 1000 : 61000;
                key_compact_cut(&w, rand() % 3 == 0 ? 1 : 0);
                CHECK_EQ_INT(m_check(&w, m, false), 0);
            }
        }
        for (int p = 1; p < 4; p++)
            if (m->open[p] >= 0) {
                mtxn_t *t = &m->txns[m->open[p]];
                t->outcome = rand() % 2 ? 1 : 2;
                t->marker_offset = m->n;
                CHECK_EQ_INT(marker(&w, p, t->seq, t->outcome == 1), m->n);
                m->v[m->n++] = (mrec_t){.txn = m->open[p], .marker = true};
            }
        wal_pass(&w);
        key_compact(&w);
        CHECK_EQ_INT(m_check(&w, m, false), 0);
        w.kc_now += 120000;
        key_compact(&w);
        w.kc_now += 120000;
        key_compact(&w);
        CHECK_EQ_INT(m_check(&w, m, true), 0);
        CHECK(w.kc.aborted_dropped > 0 && w.kc.markers_dropped > 0);
        printf("  round %d: %lld records, %llu swaps, %llu aborted and %llu markers dropped\n",
               round, (long long)m->n, (unsigned long long)w.kc.swaps,
               (unsigned long long)w.kc.aborted_dropped, (unsigned long long)w.kc.markers_dropped);
        ls_free(m);
        world_close(&w);
    }
}

/* ---- crashes --------------------------------------------------------------------- */

static const char *self_path;

/* Runs one pass in a child process (this binary again, so its crash points
 * read LS_CRASH_AT afresh) killed at crash point `at`; the stores are
 * files, so what the child wrote stays. 0 when it died there. */
static int pass_killed_at(world_t *w, const char *at)
{
    close_stores(w);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        setenv("LS_CRASH_AT", at, 1);
        execl(self_path, self_path, "--pass", w->dir, w->table, (char *)NULL);
        _exit(2);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (open_stores(w) != 0) return -1;
    return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL ? 0 : -1;
}

/* The child of pass_killed_at: one pass over the stores in dir. */
static int child_pass(const char *dir, const char *table)
{
    world_t w;
    memset(&w, 0, sizeof w);
    snprintf(w.dir, sizeof w.dir, "%s", dir);
    snprintf(w.table, sizeof w.table, "%s", table);
    if (open_stores(&w) != 0) return 2;
    pass(&w);
    return 3; /* not reached when the crash point fired */
}

/* A pass killed before its table commit, and one killed between the table
 * commit and the index swaps, while a transaction is open; the transaction
 * then aborts. The next passes finish the work: every committed record
 * once, nothing of the aborted transaction. */
TEST(crashed_passes_leave_no_duplicate_and_no_aborted_row)
{
    world_t w;
    CHECK(world_open(&w, "crash", true, APPEND_TABLE) == 0);
    rec_t t1[] = {{"t", "committed"}}, t2[] = {{"u", "aborted"}};
    CHECK_EQ_INT(plain(&w, "a", "1"), 0);
    CHECK_EQ_INT(produce(&w, 1, 1, 1, t1), 1);
    CHECK_EQ_INT(marker(&w, 1, 1, true), 2);
    CHECK_EQ_INT(produce(&w, 2, 1, 1, t2), 3); /* open */
    CHECK_EQ_INT(plain(&w, "b", "2"), 4);
    CHECK_EQ_INT(pass_killed_at(&w, "table.data_written"), 0);
    CHECK_ROWS(&w, "crash", "");
    CHECK_EQ_INT(pass_killed_at(&w, "compact.table_committed"), 0);
    CHECK_ROWS(&w, "crash", "0:a=1 1:t=committed");
    char shape[256];
    index_shape(&w, shape, sizeof shape);
    CHECK(strcmp(shape, "W[0,0] W[1,1] W[2,2] W[3,3] W[4,4]") == 0); /* no swap yet */
    CHECK_EQ_INT(marker(&w, 2, 1, false), 5);
    CHECK_EQ_INT(plain(&w, "c", "3"), 6);
    pass(&w);
    CHECK_ROWS(&w, "crash", "0:a=1 1:t=committed 4:b=2 6:c=3");
    index_shape(&w, shape, sizeof shape);
    CHECK(strcmp(shape, "C[0,2] C[3,5] C[6,6]") == 0);
    CHECK_EQ_INT(count_objects(w.os, "co/"), 3); /* the crashed passes' objects were the same */
    world_close(&w);
}

int main(int argc, char **argv)
{
    uv_loop_init(&loop);
    if (argc == 4 && strcmp(argv[1], "--pass") == 0) return child_pass(argv[2], argv[3]);
    self_path = argv[0];
    RUN(table_holds_only_committed_records);
    RUN(upsert_and_changelog_tables_skip_aborted);
    RUN(backfill_stops_at_lso_and_skips_aborted);
    RUN(soft_trim_keeps_aborted_records_for_the_table);
    RUN(a_status_behind_the_table_does_not_stop_it);
    RUN(crashed_passes_leave_no_duplicate_and_no_aborted_row);
    RUN(key_compaction_with_transactions);
    RUN(key_compaction_with_random_transactions);
    uv_loop_close(&loop);
    UNIT_DONE();
}
