/* Cold reads from a real raw Iceberg table (lake/cold_table.h): a
 * partition's offsets come back exactly, in order, once, from the current
 * snapshot's files chosen by their column bounds, across commits, through
 * data-file rewrites; a file gone from the store or a range no live file
 * holds is LS_ENOTFOUND (re-plan), and a reload on the newer snapshot
 * serves it. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/compress.h"
#include "lake/cold_table.h"
#include "objstore/objstore.h"
#include "records/records.h"
#include "table/data_files.h"
#include "table/file_rewrite.h"
#include "table/iceberg_raw.h"
#include "unit.h"

#define PARTS 3

static int64_t g_next[PARTS]; /* next offset per partition */

/* "p<p> value <off> " then 8..47 bytes that do not compress, all from (p, off) */
static void value_of(int p, int64_t off, char *v, size_t cap, int64_t *len)
{
    int n = snprintf(v, cap, "p%d value %lld ", p, (long long)off);
    uint32_t x = (uint32_t)(off * 2654435761u) ^ (uint32_t)p;
    for (int k = 0; k < 8 + (int)(off % 40) && (size_t)n < cap; k++) {
        x = x * 1103515245u + 12345u;
        v[n++] = (char)(x >> 16);
    }
    *len = n;
}

static size_t g_rg_bytes; /* row group size of the next commits; 0: default */

/* One commit: `per` records for each partition. */
static ls_status commit_rows(ls_ice_table_t *t, int per)
{
    ls_pq_opts_t o;
    ls_pq_opts_init(&o);
    o.codec = LS_PQ_ZSTD;
    if (g_rg_bytes) o.row_group_bytes = g_rg_bytes;
    size_t nf;
    const ls_pq_field_t *f = ls_raw_parquet_fields(&nf);
    char err[256];
    ls_data_files_t *df = ls_data_files_new(t, f, nf, &o, 64 << 20, err, sizeof err);
    if (!df) return LS_EINVAL;
    ls_status st = LS_OK;
    for (int p = 0; p < PARTS; p++)
        for (int i = 0; i < per && st == LS_OK; i++) {
            char v[128];
            int64_t off = g_next[p]++;
            ls_raw_record_t r = {.partition = p,
                                 .offset = off,
                                 .timestamp_ms = 1700000000000LL + off,
                                 .key = (const uint8_t *)"k",
                                 .key_len = off % 7 == 0 ? -1 : 1};
            value_of(p, off, v, sizeof v, &r.value_len);
            r.value = (const uint8_t *)v;
            st = ls_data_files_add_raw(df, &r);
        }
    const ls_ice_datafile_t *out;
    size_t n = 0;
    if (st == LS_OK) st = ls_data_files_finish(df, &out, &n);
    if (st == LS_OK) st = ls_ice_table_append(t, out, n, NULL, ls_clock_wall_ms(), NULL);
    ls_data_files_free(df);
    return st;
}

typedef struct chk {
    int p;
    int64_t want;
    int bad;
    int64_t base;
} chk_t;

static int chk_rec(void *arg, const ls_record_view_t *v)
{
    chk_t *c = arg;
    int64_t off = c->base + v->offset_delta;
    char e[128];
    int64_t elen;
    value_of(c->p, off, e, sizeof e, &elen);
    if (off != c->want || v->value_len != elen || memcmp(v->value, e, (size_t)elen) ||
        v->timestamp != 1700000000000LL + off || (v->key_len == -1) != (off % 7 == 0))
        c->bad = 1;
    c->want = off + 1;
    return 0;
}

/* Reads partition p's [from, to] as the log reader does (each read at the
 * next offset); 0 when every record came exactly once, in order. With
 * files, as the broker's source does: planned on one live-file list, open
 * files kept in that cache. */
static int read_live(ls_ice_table_t *t, ls_cold_files_t *files, const ls_ice_mentry_t *live,
                     size_t nlive, int p, int64_t from, int64_t to, size_t max,
                     ls_cold_table_stats_t *tot)
{
    int rc = 0;
    chk_t c = {.p = p, .want = from};
    while (c.want <= to) {
        ls_cold_table_req_t q = {.partition = p,
                                 .from = c.want,
                                 .to = to,
                                 .codec = LS_CODEC_ZSTD,
                                 .batch_bytes = 4096,
                                 .max_bytes = max};
        ls_buf_t out;
        ls_buf_init(&out);
        int64_t next;
        char err[512];
        ls_cold_table_stats_t s;
        ls_status st = files ? ls_cold_table_read_live(t, live, nlive, files, &q, &out, &next, &s,
                                                       err, sizeof err)
                             : ls_cold_table_read(t, &q, &out, &next, &s, err, sizeof err);
        if (st != LS_OK) {
            printf("  read %d at %lld: %s (%s)\n", p, (long long)c.want, ls_status_str(st), err);
            ls_buf_free(&out);
            rc = -1;
            break;
        }
        if (tot) {
            tot->files_planned += s.files_planned;
            tot->files_read += s.files_read;
            tot->files_cached += s.files_cached;
            tot->ranged += s.ranged;
            tot->bytes_read += s.bytes_read;
        }
        int64_t at = c.want;
        for (size_t pos = 0; pos < out.len;) {
            c.base = (int64_t)ls_be64_get(out.data + pos);
            size_t size = 12 + ls_be32_get(out.data + pos + 8);
            if (ls_records_foreach(out.data + pos, size, 1 << 20, chk_rec, &c) != LS_RB_OK)
                c.bad = 1;
            pos += size;
        }
        ls_buf_free(&out);
        if (c.bad || next != c.want || next <= at) {
            rc = -2;
            break;
        }
    }
    if (rc == 0 && c.want != to + 1) rc = -3;
    return rc;
}

static int read_all_cached(ls_ice_table_t *t, ls_cold_files_t *files, int p, int64_t from,
                           int64_t to, size_t max, ls_cold_table_stats_t *tot)
{
    ls_ice_mentry_t *live = NULL;
    size_t nlive = 0;
    if (files && ls_ice_table_live_files(t, &live, &nlive) != LS_OK) return -4;
    int rc = read_live(t, files, live, nlive, p, from, to, max, tot);
    ls_ice_mentries_free(live, nlive);
    return rc;
}

static int read_all(ls_ice_table_t *t, int p, int64_t from, int64_t to, size_t max,
                    ls_cold_table_stats_t *tot)
{
    return read_all_cached(t, NULL, p, from, to, max, tot);
}

static ls_ice_table_t *make_table(ls_objstore_t *os, const char *name, bool partitioned)
{
    ls_ice_spec_t spec = {0};
    if (partitioned)
        ls_ice_spec_add(&spec, LS_RAW_FID_PARTITION, "partition", LS_ICE_INT, LS_ICE_IDENTITY);
    ls_ice_table_t *t = NULL;
    char err[512] = "", prefix[64], loc[96];
    snprintf(prefix, sizeof prefix, "wh/ns/%s", name);
    snprintf(loc, sizeof loc, "mem://wh/ns/%s", name);
    if (ls_ice_table_create(os, prefix, loc, ls_raw_iceberg_schema_json(), LS_RAW_LAST_COLUMN_ID,
                            &spec, NULL, NULL, &t, err, sizeof err) != LS_OK)
        return NULL;
    return t;
}

TEST(reads_partition_ranges_across_commits)
{
    for (int partitioned = 0; partitioned < 2; partitioned++) {
        memset(g_next, 0, sizeof g_next);
        ls_objstore_t *os = ls_objstore_mem_open();
        ls_ice_table_t *t = make_table(os, partitioned ? "part" : "flat", partitioned);
        CHECK(t);
        for (int i = 0; i < 30; i++)
            CHECK(commit_rows(t, 17 + i % 5) == LS_OK);
        ls_cold_table_stats_t tot = {0};
        for (int p = 0; p < PARTS; p++) {
            CHECK_EQ_INT(read_all(t, p, 0, g_next[p] - 1, 1 << 20, &tot), 0);
            CHECK_EQ_INT(read_all(t, p, 100, 400, 2000, NULL), 0);
            CHECK_EQ_INT(read_all(t, p, g_next[p] - 1, g_next[p] - 1, 1, NULL), 0);
        }
        /* bounds pick the files: a read of one commit's range reads about
         * one file, not all 30 (x3 when unpartitioned) */
        ls_cold_table_stats_t s;
        ls_cold_table_req_t q = {.partition = 1,
                                 .from = 250,
                                 .to = 260,
                                 .codec = LS_CODEC_NONE,
                                 .batch_bytes = 4096,
                                 .max_bytes = 1 << 20};
        ls_buf_t out;
        ls_buf_init(&out);
        int64_t next;
        char err[512];
        CHECK(ls_cold_table_read(t, &q, &out, &next, &s, err, sizeof err) == LS_OK);
        CHECK(s.files_read == 1 && s.files_planned <= (partitioned ? 2 : 3));
        /* past the end: no live file holds it */
        q.from = g_next[1];
        q.to = g_next[1] + 5;
        CHECK(ls_cold_table_read(t, &q, &out, &next, &s, err, sizeof err) == LS_ENOTFOUND);
        CHECK(strstr(err, "no live data file") != NULL);
        ls_buf_free(&out);
        ls_ice_table_free(t);
        ls_objstore_close(os);
    }
}

static const char *key_of(const char *path) { return strncmp(path, "mem://", 6) ? path : path + 6; }

TEST(rewrite_and_removed_files_replan)
{
    memset(g_next, 0, sizeof g_next);
    ls_objstore_t *os = ls_objstore_mem_open();
    ls_ice_table_t *t = make_table(os, "rw", true);
    CHECK(t);
    for (int i = 0; i < 24; i++)
        CHECK(commit_rows(t, 11) == LS_OK);
    /* a reader's table object loaded before the rewrite */
    ls_ice_table_t *old = NULL;
    char err[512];
    CHECK(ls_ice_table_load(os, "wh/ns/rw", NULL, &old, err, sizeof err) == LS_OK);
    ls_ice_mentry_t *before;
    size_t nbefore;
    CHECK(ls_ice_table_live_files(old, &before, &nbefore) == LS_OK);
    size_t nf;
    const ls_pq_field_t *f = ls_raw_parquet_fields(&nf);
    ls_pq_opts_t pq;
    ls_pq_opts_init(&pq);
    ls_file_rewrite_opts_t o = {
        .fields = f, .nfields = nf, .pq = &pq, .target_bytes = 1 << 20, .min_files = 4};
    ls_file_rewrite_stats_t rs = {0};
    for (int k = 0; k < 6; k++)
        CHECK(ls_file_rewrite(t, &o, ls_clock_wall_ms(), &rs, err, sizeof err) == LS_OK);
    CHECK(rs.files_removed > 0);
    /* the new snapshot serves every row */
    for (int p = 0; p < PARTS; p++)
        CHECK_EQ_INT(read_all(t, p, 0, g_next[p] - 1, 3000, NULL), 0);
    /* the old snapshot still works while its files exist (readers of an
     * older snapshot survive a rewrite) */
    CHECK_EQ_INT(read_all(old, 2, 0, g_next[2] - 1, 1 << 20, NULL), 0);
    /* the files the rewrite replaced removed (expiry + orphan sweep): a
     * read planned on the old snapshot meets LS_ENOTFOUND (never wrong
     * rows), then a reload on the newer snapshot serves it */
    ls_ice_mentry_t *now;
    size_t nnow;
    CHECK(ls_ice_table_live_files(t, &now, &nnow) == LS_OK);
    size_t removed = 0;
    for (size_t i = 0; i < nbefore; i++) {
        bool live = false;
        for (size_t k = 0; k < nnow && !live; k++)
            live = !strcmp(now[k].df.path, before[i].df.path);
        if (!live) {
            ls_objstore_del(os, key_of(before[i].df.path));
            removed++;
        }
    }
    ls_ice_mentries_free(now, nnow);
    ls_ice_mentries_free(before, nbefore);
    CHECK(removed > 0);
    int notfound = 0;
    ls_buf_t out;
    ls_buf_init(&out);
    for (int p = 0; p < PARTS; p++) {
        ls_cold_table_req_t q = {.partition = p,
                                 .from = 0,
                                 .to = 50,
                                 .codec = LS_CODEC_NONE,
                                 .batch_bytes = 4096,
                                 .max_bytes = 1 << 20};
        int64_t next;
        out.len = 0;
        ls_status st = ls_cold_table_read(old, &q, &out, &next, NULL, err, sizeof err);
        CHECK(st == LS_OK || st == LS_ENOTFOUND);
        if (st == LS_ENOTFOUND) {
            notfound++;
            CHECK(out.len == 0);
        }
    }
    CHECK(notfound > 0);
    ls_ice_table_free(old);
    old = NULL;
    CHECK(ls_ice_table_load(os, "wh/ns/rw", NULL, &old, err, sizeof err) == LS_OK);
    for (int p = 0; p < PARTS; p++)
        CHECK_EQ_INT(read_all(old, p, 0, g_next[p] - 1, 1 << 16, NULL), 0);
    ls_buf_free(&out);
    ls_ice_table_free(old);
    ls_ice_table_free(t);
    ls_objstore_close(os);
}

/* A large file of many row groups is read through ranged GETs: the
 * footer and the row groups a read needs, not the file. */
TEST(large_files_read_by_ranges)
{
    memset(g_next, 0, sizeof g_next);
    ls_objstore_t *os = ls_objstore_mem_open();
    ls_ice_table_t *t = make_table(os, "big", false);
    CHECK(t);
    g_rg_bytes = 64 << 10;
    CHECK(commit_rows(t, 12000) == LS_OK); /* one file of many row groups */
    g_rg_bytes = 0;
    ls_ice_mentry_t *live;
    size_t n;
    CHECK(ls_ice_table_live_files(t, &live, &n) == LS_OK);
    CHECK_EQ_INT(n, 1);
    int64_t size = live[0].df.file_size;
    ls_ice_mentries_free(live, n);
    CHECK(size > 512 * 1024);
    ls_cold_table_stats_t tot = {0};
    for (int p = 0; p < PARTS; p++)
        CHECK_EQ_INT(read_all(t, p, 0, g_next[p] - 1, 64 << 10, &tot), 0);
    CHECK(tot.ranged > 0);
    CHECK_EQ_INT(read_all(t, 1, 3999, 5000, 1, NULL), 0);
    /* one small read in the middle: a fraction of the file */
    ls_cold_table_req_t q = {.partition = 2,
                             .from = 4000,
                             .to = 7999,
                             .codec = LS_CODEC_NONE,
                             .batch_bytes = 4096,
                             .max_bytes = 16 << 10};
    ls_buf_t out;
    ls_buf_init(&out);
    int64_t next;
    char err[512];
    ls_cold_table_stats_t s;
    CHECK(ls_cold_table_read(t, &q, &out, &next, &s, err, sizeof err) == LS_OK);
    CHECK(s.ranged == 1 && s.files_read == 1);
    CHECK(next > 4000);
    CHECK(s.bytes_read < (uint64_t)size / 4);
    ls_buf_free(&out);
    ls_ice_table_free(t);
    ls_objstore_close(os);
}

typedef struct par {
    ls_ice_table_t *t; /* shared, as the broker's plans share theirs */
    ls_cold_files_t *files;
    const ls_ice_mentry_t *live;
    size_t nlive;
    int p, rc;
} par_t;

static void *par_read(void *arg)
{
    par_t *a = arg;
    for (int k = 0; k < 3 && a->rc == 0; k++)
        a->rc =
            read_live(a->t, a->files, a->live, a->nlive, a->p, 0, g_next[a->p] - 1, 32 << 10, NULL);
    return NULL;
}

/* local: the store maps files (fs), so nothing is fetched; else (mem,
 * as S3) ranged images. */
static void open_files_kept(bool local)
{
    memset(g_next, 0, sizeof g_next);
    char dir[] = "/tmp/test_cold_table.XXXXXX", err[256];
    ls_objstore_t *os = NULL;
    if (local) {
        CHECK(mkdtemp(dir) != NULL);
        os = ls_objstore_fs_open(dir, 0, err, sizeof err);
    } else {
        os = ls_objstore_mem_open();
    }
    CHECK(os);
    ls_ice_table_t *t = make_table(os, "keep", false);
    CHECK(t);
    g_rg_bytes = 64 << 10;
    CHECK(commit_rows(t, 12000) == LS_OK);
    CHECK(commit_rows(t, 500) == LS_OK); /* a small file, read whole */
    g_rg_bytes = 0;
    ls_ice_mentry_t *live;
    size_t n;
    CHECK(ls_ice_table_live_files(t, &live, &n) == LS_OK);
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += (uint64_t)live[i].df.file_size;
    ls_ice_mentries_free(live, n);
    ls_cold_files_t *files = ls_cold_files_new(64 << 20);
    ls_cold_table_stats_t plain = {0}, kept = {0};
    for (int p = 0; p < PARTS; p++) {
        CHECK_EQ_INT(read_all(t, p, 0, g_next[p] - 1, 32 << 10, &plain), 0);
        CHECK_EQ_INT(read_all_cached(t, files, p, 0, g_next[p] - 1, 32 << 10, &kept), 0);
    }
    CHECK_EQ_INT(kept.files_read, plain.files_read);
    CHECK(kept.files_cached >= kept.files_read - 2 * PARTS);
    ls_cold_files_stats_t fs;
    ls_cold_files_stats(files, &fs);
    CHECK(fs.files == 2);
    CHECK(fs.hits + fs.image_hits == (uint64_t)kept.files_cached);
    if (local) { /* mapped: nothing fetched; the files count whole */
        CHECK(kept.bytes_read == 0 && plain.bytes_read == 0 && kept.ranged == 0);
        CHECK(fs.bytes == total);
    } else {
        /* each byte at most once (footer guess and row groups), against a
         * footer GET per block */
        CHECK(kept.bytes_read <= total + (64 << 10));
        CHECK(plain.bytes_read > 2 * kept.bytes_read);
        CHECK(fs.bytes > 0 && fs.bytes <= total + (64 << 10));
    }
    /* reading from the middle again (a rewind) through the open file */
    CHECK_EQ_INT(read_all_cached(t, files, 1, 3999, 5000, 1, NULL), 0);
    /* three threads at once, different partitions and the same one */
    CHECK(ls_ice_table_live_files(t, &live, &n) == LS_OK);
    par_t a[3] = {{t, files, live, n, 0, 0}, {t, files, live, n, 2, 0}, {t, files, live, n, 2, 0}};
    pthread_t th[3];
    for (int i = 0; i < 3; i++)
        pthread_create(&th[i], NULL, par_read, &a[i]);
    for (int i = 0; i < 3; i++) {
        pthread_join(th[i], NULL);
        CHECK_EQ_INT(a[i].rc, 0);
    }
    ls_ice_mentries_free(live, n);
    ls_cold_files_free(files);
    { /* a bound below a file's bytes: nothing kept, still exact */
        files = ls_cold_files_new(16 << 10);
        ls_cold_table_stats_t tiny = {0};
        CHECK_EQ_INT(read_all_cached(t, files, 0, 0, g_next[0] - 1, 32 << 10, &tiny), 0);
        ls_cold_files_stats(files, &fs);
        CHECK(tiny.files_cached == 0 && fs.files == 0 && fs.bytes == 0);
        ls_cold_files_free(files);
    }
    ls_ice_table_free(t);
    ls_objstore_close(os);
    if (local) {
        char cmd[64];
        snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
        CHECK(system(cmd) == 0);
    }
}

/* With a file cache a catching-up reader opens a file once and goes on
 * from where it stopped: same records as without, each byte fetched once
 * (ranged images) or nothing fetched at all (mapped local files); readers
 * on three threads share the cache. */
TEST(open_files_kept_between_reads)
{
    open_files_kept(false);
    open_files_kept(true);
}

int main(void)
{
    RUN(reads_partition_ranges_across_commits);
    RUN(rewrite_and_removed_files_replan);
    RUN(large_files_read_by_ranges);
    RUN(open_files_kept_between_reads);
    UNIT_DONE();
}
