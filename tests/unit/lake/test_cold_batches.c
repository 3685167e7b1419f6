/* Cold reads from a raw table (lake/cold_batches.h): RecordBatches v2
 * rebuilt from raw table rows are byte-exact with a producer's batch, keep
 * every record field (null vs empty keys/values, ordered and repeated
 * headers with null values, negative timestamp deltas), pass validation
 * under every codec, follow LogAppendTime, and a Parquet scan returns
 * exactly one partition's offset range across row groups and read limits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/compress.h"
#include "lake/cold_batches.h"
#include "records/records.h"
#include "table/iceberg_raw.h"
#include "unit.h"

/* Produced by kafka-python 3.0.12's DefaultRecordBatchBuilder (magic 2,
 * uncompressed, no producer id, base offset 0): four records, timestamps
 * 1700000000000 +0, +5, -3, +100000 ms; record 1 has a null key, an empty
 * value and headers h=x, h=null, ""=""; record 2 an empty key and a null
 * value; record 3 a 200-byte key and a 300-byte value. */
static const char golden_hex[] =
    "00000000000000000000027100000000020322d7f90000000000030000018bcfe568000000018bcfe6eea0ffffffff"
    "ffffffffffffffffffff0000000414000000046b30047630001e000a02010006026802780268010000480005040001"
    "021074726163"
    "652d69642800ff00ff00ff00ff00ff00ff00ff00ff00ff00fffc0700c09a0c0690036b336b336b336b336b336b336b"
    "33"
    "6b336b336b336b336b336b336b336b336b336b336b336b336b336b336b336b336b336b336b336b336b336b336b336b"
    "33"
    "6b336b336b336b336b336b336b336b336b336b336b336b336b336b336b336b336b336b336b336b336b336b336b336b"
    "33"
    "6b336b336b336b336b336b336b336b336b336b336b336b336b336b336b336b336b336b336b336b336b336b336b336b"
    "33"
    "6b336b336b336b336b336b336b336b336b336b336b336b336b336b336b336b336b336b336b336b336b33d804767676"
    "76"
    "7676767676767676767676767676767676767676767676767676767676767676767676767676767676767676767676"
    "76"
    "7676767676767676767676767676767676767676767676767676767676767676767676767676767676767676767676"
    "76"
    "7676767676767676767676767676767676767676767676767676767676767676767676767676767676767676767676"
    "76"
    "7676767676767676767676767676767676767676767676767676767676767676767676767676767676767676767676"
    "76"
    "7676767676767676767676767676767676767676767676767676767676767676767676767676767676767676767676"
    "76"
    "7676767676767676767676767676767676767676767676767676767676767676767676767676767676767676767676"
    "76"
    "767676767676767600";

static ls_buf_t unhex(const char *s)
{
    ls_buf_t b;
    ls_buf_init(&b);
    for (size_t i = 0; s[i] && s[i + 1]; i += 2) {
        unsigned v;
        sscanf(s + i, "%2x", &v);
        ls_buf_append_u8(&b, (uint8_t)v);
    }
    return b;
}

/* Records of a batch as raw rows (copies, so the batch may go). */
typedef struct rows {
    ls_raw_record_t r[4096];
    ls_raw_header_t h[4096][4];
    uint8_t *bytes[4096];
    int n;
    int64_t base;
} rows_t;

static uint8_t *dup_bytes(const uint8_t *p, int64_t n)
{
    uint8_t *d = ls_malloc(n > 0 ? (size_t)n : 1);
    if (n > 0) memcpy(d, p, (size_t)n);
    return d;
}

static int collect(void *arg, const ls_record_view_t *v)
{
    rows_t *x = arg;
    ls_raw_record_t *r = &x->r[x->n];
    r->partition = 0;
    r->offset = x->base + v->offset_delta;
    r->timestamp_ms = v->timestamp;
    r->key_len = v->key_len;
    r->key = v->key_len >= 0 ? dup_bytes(v->key, v->key_len) : NULL;
    r->value_len = v->value_len;
    r->value = v->value_len >= 0 ? dup_bytes(v->value, v->value_len) : NULL;
    const uint8_t *hp = v->headers, *he = v->headers + v->headers_len;
    r->nheaders = 0;
    for (int32_t i = 0; i < v->header_count && i < 4; i++) {
        ls_record_header_t h;
        if (ls_record_header_next(&hp, he, &h) != 0) return 1;
        x->h[x->n][i] = (ls_raw_header_t){
            (const char *)dup_bytes((const uint8_t *)h.key, h.key_len), (size_t)h.key_len,
            h.value_len >= 0 ? dup_bytes(h.value, h.value_len) : NULL, h.value_len};
        r->nheaders++;
    }
    r->headers = x->h[x->n];
    x->n++;
    return 0;
}

static void rows_free(rows_t *x)
{
    for (int i = 0; i < x->n; i++) {
        ls_free((void *)x->r[i].key);
        ls_free((void *)x->r[i].value);
        for (size_t h = 0; h < x->r[i].nheaders; h++) {
            ls_free((void *)x->h[i][h].key);
            ls_free((void *)x->h[i][h].value);
        }
    }
    x->n = 0;
}

/* Decodes every batch of p[0..len) into x: framing, then each batch
 * through ls_records_foreach (CRC, record parse; the check stored batches
 * get, which allows offset gaps), gap-free ones also through
 * ls_records_validate (the produce-time check). */
static int decode_all(const uint8_t *p, size_t len, rows_t *x, int *nbatches)
{
    int n = 0;
    size_t pos = 0;
    while (pos < len) {
        if (len - pos < LS_RB_HEADER_SIZE) return -1;
        ls_batch_info_t info;
        ls_batch_header_parse(p + pos, &info);
        size_t size = 12 + (size_t)ls_be32_get(p + pos + LS_RB_OFF_LENGTH);
        if (size > len - pos || info.magic != 2) return -1;
        if (info.last_offset_delta + 1 == info.record_count) {
            char why[256];
            int ni;
            ls_batch_info_t vi;
            if (ls_records_validate(p + pos, size, 64 << 20, &vi, 1, &ni, why, sizeof why) !=
                LS_RB_OK) {
                printf("  invalid: %s\n", why);
                return -1;
            }
        }
        x->base = info.base_offset;
        if (ls_records_foreach(p + pos, size, 64 << 20, collect, x) != LS_RB_OK) return -1;
        pos += size;
        n++;
    }
    if (nbatches) *nbatches = n;
    return 0;
}

static int same_bytes(const uint8_t *a, int64_t an, const uint8_t *b, int64_t bn)
{
    if (an != bn) return 0;
    if (an < 0) return 1; /* both null (the decoded side checked NULL apart) */
    return an == 0 || memcmp(a, b, (size_t)an) == 0;
}

static int same_record(const ls_raw_record_t *a, const ls_raw_record_t *b)
{
    if (a->offset != b->offset || a->timestamp_ms != b->timestamp_ms ||
        !same_bytes(a->key, a->key_len, b->key, b->key_len) ||
        !same_bytes(a->value, a->value_len, b->value, b->value_len) || a->nheaders != b->nheaders)
        return 0;
    for (size_t i = 0; i < a->nheaders; i++)
        if (!same_bytes((const uint8_t *)a->headers[i].key, (int64_t)a->headers[i].key_len,
                        (const uint8_t *)b->headers[i].key, (int64_t)b->headers[i].key_len) ||
            !same_bytes(a->headers[i].value, a->headers[i].value_len, b->headers[i].value,
                        b->headers[i].value_len))
            return 0;
    return 1;
}

static rows_t g_a, g_b;

/* Rows straight into the batcher: the producer's batch, byte for byte
 * (base offset 0 and 100: the CRC does not cover it). */
TEST(batcher_matches_produced_batch)
{
    for (int64_t base = 0; base <= 100; base += 100) {
        ls_buf_t gold = unhex(golden_hex);
        ls_be64_put(gold.data, (uint64_t)base);
        g_a.n = 0;
        g_a.base = base;
        CHECK(ls_records_foreach(gold.data, gold.len, 1 << 20, collect, &g_a) == LS_RB_OK);
        CHECK_EQ_INT(g_a.n, 4);
        CHECK(g_a.r[1].key == NULL && g_a.r[1].value_len == 0 && g_a.r[1].nheaders == 3);
        CHECK(g_a.r[1].headers[1].value == NULL && g_a.r[2].value == NULL);
        ls_cold_batcher_t b;
        ls_cold_batcher_init(&b, LS_CODEC_NONE, false, 1 << 20);
        for (int i = 0; i < g_a.n; i++)
            CHECK(ls_cold_batcher_add(&b, &g_a.r[i]) == LS_OK);
        CHECK(ls_cold_batcher_flush(&b) == LS_OK);
        CHECK_EQ_INT(b.nbatches, 1);
        CHECK_EQ_INT(b.out.len, gold.len);
        CHECK(memcmp(b.out.data, gold.data, gold.len) == 0);
        ls_cold_batcher_free(&b);
        rows_free(&g_a);
        ls_buf_free(&gold);
    }
}

/* The materializer's path: batch -> raw Parquet row -> cold read -> the
 * same batch, byte for byte. */
TEST(parquet_round_trip_is_byte_exact)
{
    ls_buf_t gold = unhex(golden_hex);
    ls_be64_put(gold.data, 41);
    g_a.n = 0;
    g_a.base = 41;
    CHECK(ls_records_foreach(gold.data, gold.len, 1 << 20, collect, &g_a) == LS_RB_OK);
    ls_pq_opts_t o;
    ls_pq_opts_init(&o);
    ls_buf_t file;
    ls_buf_init(&file);
    char err[256];
    ls_pq_writer_t *w = ls_raw_writer_new(&o, &file, err, sizeof err);
    CHECK(w);
    for (int i = 0; i < g_a.n; i++)
        CHECK(ls_raw_write(w, &g_a.r[i]) == LS_OK);
    CHECK(ls_pq_writer_finish(w) == LS_OK);
    ls_pq_writer_free(w);
    ls_cold_read_t rd;
    CHECK(ls_cold_read_parquet(file.data, file.len, 0, 0, 1000, LS_CODEC_NONE, false, 1 << 20,
                               1 << 20, false, &rd, err, sizeof err) == LS_OK);
    CHECK_EQ_INT(rd.records, 4);
    CHECK_EQ_INT(rd.next_offset, 45);
    CHECK(!rd.full);
    CHECK_EQ_INT(rd.batches.len, gold.len);
    CHECK(memcmp(rd.batches.data, gold.data, gold.len) == 0);
    ls_buf_free(&rd.batches);
    /* a sub-range: offsets 42..43 only */
    CHECK(ls_cold_read_parquet(file.data, file.len, 0, 42, 43, LS_CODEC_NONE, false, 1 << 20,
                               1 << 20, false, &rd, err, sizeof err) == LS_OK);
    g_b.n = 0;
    CHECK(decode_all(rd.batches.data, rd.batches.len, &g_b, NULL) == 0);
    CHECK_EQ_INT(g_b.n, 2);
    CHECK(same_record(&g_b.r[0], &g_a.r[1]) && same_record(&g_b.r[1], &g_a.r[2]));
    rows_free(&g_b);
    ls_buf_free(&rd.batches);
    /* another partition: nothing */
    CHECK(ls_cold_read_parquet(file.data, file.len, 1, 0, 1000, LS_CODEC_NONE, false, 1 << 20,
                               1 << 20, false, &rd, err, sizeof err) == LS_OK);
    CHECK_EQ_INT(rd.records, 0);
    CHECK_EQ_INT(rd.batches.len, 0);
    CHECK_EQ_INT(rd.next_offset, 0);
    ls_buf_free(&rd.batches);
    rows_free(&g_a);
    ls_buf_free(&file);
    ls_buf_free(&gold);
}

/* n records of partitions 0 and 1 interleaved, offsets of partition p
 * p*10000 + i, some with gaps; contents vary with i. */
static uint8_t g_payload[4096];
static ls_raw_header_t g_hs[3] = {{"a", 1, (const uint8_t *)"1", 1},
                                  {"a", 1, NULL, -1},
                                  {"content-type", 12, (const uint8_t *)"", 0}};
static int g_headerless_from = 1 << 30; /* records from this i on have no headers */
static ls_raw_record_t synth(int p, int i)
{
    ls_raw_record_t r = {.partition = p,
                         .offset = (int64_t)p * 10000 + i * 2 - (i % 3 == 0),
                         .timestamp_ms = 1700000000000LL + i * 7 - (i % 5) * 40,
                         .key = g_payload + (i % 97),
                         .key_len = i % 11 == 0 ? -1 : i % 13,
                         .value = g_payload + (i % 31),
                         .value_len = i % 17 == 0 ? -1 : (i * 37) % 900,
                         .headers = g_hs,
                         .nheaders = i >= g_headerless_from ? 0 : (size_t)(i % 4)};
    return r;
}

static int g_rows;          /* records per partition in the current file */
static int g_pq_codec = -1; /* the file's page codec, -1: the writer's default */
static void synth_file(ls_buf_t *file, int n, bool reverse)
{
    g_rows = n;
    ls_pq_opts_t o;
    ls_pq_opts_init(&o);
    if (g_pq_codec >= 0) o.codec = (ls_pq_codec)g_pq_codec;
    o.row_group_bytes = 32 << 10;
    o.page_bytes = 8 << 10;
    char err[256];
    ls_buf_init(file);
    ls_pq_writer_t *w = ls_raw_writer_new(&o, file, err, sizeof err);
    for (int k = 0; k < n; k++) {
        int i = reverse ? n - 1 - k : k;
        for (int p = 0; p < 2; p++) {
            ls_raw_record_t r = synth(p, i);
            if (ls_raw_write(w, &r) != LS_OK) abort();
        }
    }
    if (ls_pq_writer_finish(w) != LS_OK) abort();
    ls_pq_writer_free(w);
}

/* Set: read_range reads through this file handle, kept between fetches. */
static ls_cold_file_t *g_kept;

/* Reads partition 1's [from, to] in fetches of max_bytes until done,
 * checking every record in order against synth(). */
static int read_range(const ls_buf_t *file, int codec, int64_t from, int64_t to, size_t max_bytes,
                      int *fetches)
{
    int i = 0;
    while (10000 + i * 2 - (i % 3 == 0) < from)
        i++;
    int64_t at = from;
    *fetches = 0;
    for (;;) {
        ls_cold_read_t rd;
        char err[256];
        ls_status st = g_kept
                           ? ls_cold_file_read(g_kept, 1, at, to, codec, false, 16 << 10, max_bytes,
                                               false, NULL, &rd, err, sizeof err)
                           : ls_cold_read_parquet(file->data, file->len, 1, at, to, codec, false,
                                                  16 << 10, max_bytes, false, &rd, err, sizeof err);
        if (st != LS_OK) {
            printf("  read: %s\n", err);
            return -1;
        }
        (*fetches)++;
        if (rd.batches.len > max_bytes && rd.records > 1) return -2;
        g_b.n = 0;
        int nb = 0;
        if (decode_all(rd.batches.data, rd.batches.len, &g_b, &nb) != 0) return -3;
        for (int k = 0; k < g_b.n; k++, i++) {
            ls_raw_record_t e = synth(1, i);
            if (!same_record(&g_b.r[k], &e)) {
                printf(
                    "  record %d (offset %lld) differs: got offset %lld ts %lld/%lld key %lld/%lld "
                    "value %lld/%lld headers %zu/%zu\n",
                    i, (long long)e.offset, (long long)g_b.r[k].offset,
                    (long long)g_b.r[k].timestamp_ms, (long long)e.timestamp_ms,
                    (long long)g_b.r[k].key_len, (long long)e.key_len,
                    (long long)g_b.r[k].value_len, (long long)e.value_len, g_b.r[k].nheaders,
                    e.nheaders);
                return -4;
            }
        }
        rows_free(&g_b);
        int64_t records = rd.records;
        bool full = rd.full;
        at = rd.next_offset;
        ls_buf_free(&rd.batches);
        if (!full) break;
        if (records == 0) return -5;
    }
    ls_raw_record_t next = synth(1, i);
    return i == g_rows || next.offset > to ? 0 : -6;
}

TEST(scan_partition_range_every_codec)
{
    for (size_t i = 0; i < sizeof g_payload; i++)
        g_payload[i] = (uint8_t)(i * 7 + (i >> 5));
    ls_buf_t file;
    synth_file(&file, 3000, false);
    char err[256];
    ls_status st;
    ls_pqr_t *r = ls_pqr_open(file.data, file.len, &st, err, sizeof err);
    CHECK(r);
    CHECK(ls_pqr_num_row_groups(r) > 4); /* the range spans several */
    ls_pqr_free(r);
    int codecs[] = {LS_CODEC_NONE, LS_CODEC_GZIP, LS_CODEC_SNAPPY, LS_CODEC_LZ4, LS_CODEC_ZSTD};
    for (size_t c = 0; c < sizeof codecs / sizeof codecs[0]; c++) {
        int fetches;
        CHECK_EQ_INT(read_range(&file, codecs[c], 10500, 14000, 64 << 10, &fetches), 0);
        CHECK(fetches > (codecs[c] == LS_CODEC_NONE ? 8 : 1));
    }
    int fetches;
    /* one fetch for everything; a max_bytes below one record still
     * returns that record (progress) */
    CHECK_EQ_INT(read_range(&file, LS_CODEC_ZSTD, 10000, 20000, 64 << 20, &fetches), 0);
    CHECK_EQ_INT(fetches, 1);
    CHECK_EQ_INT(read_range(&file, LS_CODEC_NONE, 10999, 11100, 1, &fetches), 0);
    CHECK(fetches > 40);
    /* stop_at_gap: offsets 10002, 10004: one record, then the gap */
    ls_cold_read_t rd;
    CHECK(ls_cold_read_parquet(file.data, file.len, 1, 10002, 20000, LS_CODEC_NONE, false, 1 << 20,
                               1 << 20, true, &rd, err, sizeof err) == LS_OK);
    CHECK_EQ_INT(rd.records, 1);
    CHECK(rd.gap && !rd.full);
    CHECK_EQ_INT(rd.next_offset, 10003);
    ls_buf_free(&rd.batches);
    ls_buf_free(&file);
}

/* Through a ls_cold_file_t kept between reads (the cold source's cache):
 * catching up in fetches returns every record in order, and every read
 * returns the very bytes a fresh ls_cold_read_parquet returns for the same
 * arguments — reads that go on from the cursor across page boundaries
 * (8 KiB pages), row groups (32 KiB) and dictionary pages, and reads that
 * must rewind it: another partition, backwards, after a read whose `to`
 * cut it short, after a gap, after max_bytes below one record; under every
 * page codec the writer has. */
static int same_read(ls_cold_file_t *f, const ls_buf_t *file, int32_t part, int64_t from,
                     int64_t to, int codec, size_t max_bytes, bool gap, int64_t *next)
{
    ls_cold_read_t a, b;
    char ea[256], eb[256];
    ls_status sa = ls_cold_file_read(f, part, from, to, codec, false, 4 << 10, max_bytes, gap, NULL,
                                     &a, ea, sizeof ea);
    ls_status sb = ls_cold_read_parquet(file->data, file->len, part, from, to, codec, false,
                                        4 << 10, max_bytes, gap, &b, eb, sizeof eb);
    int ok = sa == LS_OK && sb == LS_OK && a.records == b.records &&
             a.next_offset == b.next_offset && a.full == b.full && a.gap == b.gap &&
             a.batches.len == b.batches.len &&
             (!a.batches.len || !memcmp(a.batches.data, b.batches.data, a.batches.len));
    if (!ok)
        printf("  read p%d [%lld, %lld] max %zu: kept %d %lld records next %lld, fresh %d %lld "
               "next %lld (%s)\n",
               part, (long long)from, (long long)to, max_bytes, sa, (long long)a.records,
               (long long)a.next_offset, sb, (long long)b.records, (long long)b.next_offset, ea);
    *next = a.next_offset;
    ls_buf_free(&a.batches);
    ls_buf_free(&b.batches);
    return ok;
}

TEST(kept_file_matches_fresh_reads)
{
    for (size_t i = 0; i < sizeof g_payload; i++)
        g_payload[i] = (uint8_t)(i * 7 + (i >> 5));
    int pq_codecs[] = {LS_PQ_UNCOMPRESSED, LS_PQ_SNAPPY, LS_PQ_GZIP, LS_PQ_ZSTD};
    for (size_t pc = 0; pc < sizeof pq_codecs / sizeof *pq_codecs; pc++) {
        g_pq_codec = pq_codecs[pc];
        ls_buf_t file;
        synth_file(&file, 3000, false);
        char err[256];
        ls_status st;
        ls_cold_file_t *f = ls_cold_file_open(file.data, file.len, &st, err, sizeof err);
        CHECK(f);
        CHECK(ls_pqr_num_row_groups(ls_cold_file_reader(f)) > 4);
        /* catching up, content checked against synth() */
        g_kept = f;
        int fetches;
        CHECK_EQ_INT(read_range(&file, LS_CODEC_NONE, 10000, 20000, 24 << 10, &fetches), 0);
        CHECK(fetches > 20);
        CHECK_EQ_INT(read_range(&file, LS_CODEC_ZSTD, 10500, 14000, 64 << 10, &fetches), 0);
        CHECK_EQ_INT(read_range(&file, LS_CODEC_LZ4, 10999, 11100, 1, &fetches), 0);
        CHECK(fetches > 40);
        g_kept = NULL;
        /* read for read against fresh reads; going on from the cursor
         * opens each row group once */
        ls_cold_file_stats_t s0, s1;
        int64_t at = 10000, next;
        CHECK(same_read(f, &file, 1, at, 20000, LS_CODEC_NONE, 3 << 10, false, &at));
        ls_cold_file_stats(f, &s0);
        for (int k = 0; k < 40 && at < 20000; k++, at = next)
            CHECK(same_read(f, &file, 1, at, 20000, LS_CODEC_NONE, (size_t)(3 + k % 5) << 10, false,
                            &next));
        ls_cold_file_stats(f, &s1);
        CHECK_EQ_INT(s1.resumed - s0.resumed, 40);
        CHECK(s1.row_groups_opened - s0.row_groups_opened < 20);
        CHECK(same_read(f, &file, 0, 700, 5000, LS_CODEC_SNAPPY, 16 << 10, false, &next));
        CHECK(same_read(f, &file, 1, 10050, 20000, LS_CODEC_NONE, 16 << 10, false, &next));
        /* a read cut by `to`, then one going on with a larger `to`: the
         * cursor passed rows above the first `to`, so it rewinds */
        CHECK(same_read(f, &file, 1, 11000, 11100, LS_CODEC_NONE, 1 << 20, false, &next));
        ls_cold_file_stats(f, &s0);
        CHECK(same_read(f, &file, 1, next, 20000, LS_CODEC_NONE, 16 << 10, false, &next));
        ls_cold_file_stats(f, &s1);
        CHECK_EQ_INT(s1.resumed, s0.resumed);
        /* with stop_at_gap: 10002, then the gap before 10004 */
        CHECK(same_read(f, &file, 1, 10002, 20000, LS_CODEC_NONE, 1 << 20, true, &next));
        CHECK_EQ_INT(next, 10003);
        for (int k = 0; k < 5; k++)
            CHECK(same_read(f, &file, 1, next, 20000, LS_CODEC_NONE, 1 << 20, true, &next));
        /* one record a read, across a row group's end */
        at = 10000 + 2 * 395;
        for (int k = 0; k < 30; k++, at = next)
            CHECK(same_read(f, &file, 1, at, 20000, LS_CODEC_NONE, 1, false, &next));
        /* past the end, and before the start */
        CHECK(same_read(f, &file, 1, 16000, 20000, LS_CODEC_NONE, 1 << 20, false, &next));
        CHECK(same_read(f, &file, 1, next, 20000, LS_CODEC_NONE, 1 << 20, false, &next));
        CHECK(same_read(f, &file, 1, 0, 9000, LS_CODEC_NONE, 1 << 20, false, &next));
        ls_cold_file_free(f);
        ls_buf_free(&file);
    }
    g_pq_codec = -1;
    /* a descending file through a handle: served sorted, every read */
    ls_buf_t file;
    synth_file(&file, 800, true);
    char err[256];
    ls_status st;
    ls_cold_file_t *f = ls_cold_file_open(file.data, file.len, &st, err, sizeof err);
    CHECK(f);
    int64_t at = 10100, next;
    for (int k = 0; k < 10; k++, at = next)
        CHECK(same_read(f, &file, 1, at, 11000, LS_CODEC_NONE, 8 << 10, false, &next));
    ls_cold_file_free(f);
    /* not raw: refused at open */
    CHECK(!ls_cold_file_open(file.data, 20, &st, err, sizeof err));
    CHECK_EQ_INT(st, LS_ECORRUPT);
    ls_buf_free(&file);
}

/* Row groups whose records have no headers (their header columns, by
 * their statistics, one null per row) skip those columns: records read
 * across mixed and headerless row groups, from the start and from the
 * middle of each, are the produced ones. */
TEST(headerless_row_groups_read_back)
{
    g_headerless_from = 1000;
    ls_buf_t file;
    synth_file(&file, 3000, false);
    char err[256];
    ls_status st;
    ls_pqr_t *r = ls_pqr_open(file.data, file.len, &st, err, sizeof err);
    CHECK(r);
    int headerless = 0, mixed = 0;
    for (int rg = 0; rg < ls_pqr_num_row_groups(r); rg++) {
        int64_t n = ls_pqr_rg_num_rows(r, rg);
        int all_null = 1;
        for (size_t c = 0; c < ls_pqr_num_columns(r); c++) {
            const ls_pqr_elem_t *e = ls_pqr_column(r, (int)c);
            if (e->max_rep != 1) continue; /* the header key and value columns */
            const ls_pqr_chunk_t *ch = ls_pqr_chunk(r, rg, (int)c);
            all_null &=
                ch->num_values == n && ch->stats.has_null_count && ch->stats.null_count == n;
        }
        headerless += all_null;
        mixed += !all_null;
    }
    ls_pqr_free(r);
    CHECK(headerless > 2 && mixed > 2);
    int fetches;
    for (int kept = 0; kept < 2; kept++) {
        g_kept = kept ? ls_cold_file_open(file.data, file.len, &st, err, sizeof err) : NULL;
        CHECK(!kept || g_kept);
        CHECK_EQ_INT(read_range(&file, LS_CODEC_NONE, 10000, 20000, 24 << 10, &fetches), 0);
        CHECK_EQ_INT(read_range(&file, LS_CODEC_NONE, 11990, 13000, 4 << 10, &fetches), 0);
        CHECK_EQ_INT(read_range(&file, LS_CODEC_ZSTD, 14001, 14500, 64 << 10, &fetches), 0);
        ls_cold_file_free(g_kept);
        g_kept = NULL;
    }
    g_headerless_from = 1 << 30;
    ls_buf_free(&file);
}

/* A file whose offsets descend (not what the materializer writes, but a
 * valid table file) is served in offset order. */
TEST(scan_unsorted_file_served_in_order)
{
    ls_buf_t file;
    synth_file(&file, 800, true);
    int fetches;
    CHECK_EQ_INT(read_range(&file, LS_CODEC_NONE, 10100, 11000, 32 << 10, &fetches), 0);
    CHECK(fetches > 1);
    ls_buf_free(&file);
}

/* A read given a buffer (the log reader's pooled one) writes its batches
 * into that storage and returns it as out->batches, the buffer left empty;
 * the bytes are those of a read given none, for a file in offset order and
 * one whose offsets descend (the sorted second pass). A read that fails
 * (two rows for one offset) frees the storage (ASan: no leak). */
TEST(read_into_given_buffer)
{
    size_t max = 32 << 10;
    for (int rev = 0; rev < 2; rev++) {
        ls_buf_t file;
        synth_file(&file, 800, rev);
        char err[256];
        ls_status st;
        ls_cold_file_t *f = ls_cold_file_open(file.data, file.len, &st, err, sizeof err);
        CHECK(f);
        ls_buf_t into;
        ls_buf_init(&into);
        ls_buf_reserve(&into, max + LS_RB_HEADER_SIZE + 1024);
        memset(into.data, 0xab, into.cap); /* bytes of an earlier use */
        const uint8_t *room = into.data;
        ls_cold_read_t a, b;
        CHECK(ls_cold_file_read(f, 1, 10100, 11000, LS_CODEC_NONE, false, 4 << 10, max, false,
                                &into, &a, err, sizeof err) == LS_OK);
        CHECK(!into.data && into.len == 0 && into.cap == 0);
        CHECK(a.batches.data == room); /* written in place, not reallocated */
        CHECK(ls_cold_read_parquet(file.data, file.len, 1, 10100, 11000, LS_CODEC_NONE, false,
                                   4 << 10, max, false, &b, err, sizeof err) == LS_OK);
        CHECK(a.records > 10 && a.records == b.records && a.next_offset == b.next_offset &&
              a.full == b.full && a.batches.len == b.batches.len &&
              !memcmp(a.batches.data, b.batches.data, a.batches.len));
        ls_buf_free(&a.batches);
        ls_buf_free(&b.batches);
        ls_cold_file_free(f);
        ls_buf_free(&file);
    }
    ls_pq_opts_t o;
    ls_pq_opts_init(&o);
    char err[256];
    ls_buf_t file;
    ls_buf_init(&file);
    ls_pq_writer_t *w = ls_raw_writer_new(&o, &file, err, sizeof err);
    CHECK(w);
    int64_t offs[] = {5, 4, 4};
    for (int i = 0; i < 3; i++) {
        ls_raw_record_t r = {.partition = 1, .offset = offs[i], .key_len = -1, .value_len = -1};
        CHECK(ls_raw_write(w, &r) == LS_OK);
    }
    CHECK(ls_pq_writer_finish(w) == LS_OK);
    ls_pq_writer_free(w);
    ls_status st;
    ls_cold_file_t *f = ls_cold_file_open(file.data, file.len, &st, err, sizeof err);
    CHECK(f);
    ls_buf_t into;
    ls_buf_init(&into);
    ls_buf_reserve(&into, max);
    ls_cold_read_t a;
    CHECK(ls_cold_file_read(f, 1, 0, 10, LS_CODEC_NONE, false, 4 << 10, max, false, &into, &a, err,
                            sizeof err) == LS_ECORRUPT);
    CHECK(!into.data && into.cap == 0 && !a.batches.data && a.batches.cap == 0);
    ls_cold_file_free(f);
    ls_buf_free(&file);
}

TEST(log_append_time_one_timestamp_per_batch)
{
    ls_cold_batcher_t b;
    ls_cold_batcher_init(&b, LS_CODEC_SNAPPY, true, 1 << 20);
    int64_t ts[] = {1000, 1000, 1000, 2000, 2000, 1500};
    for (int i = 0; i < 6; i++) {
        ls_raw_record_t r = {.offset = 50 + i,
                             .timestamp_ms = ts[i],
                             .key_len = -1,
                             .value = (const uint8_t *)"v",
                             .value_len = 1};
        CHECK(ls_cold_batcher_add(&b, &r) == LS_OK);
    }
    CHECK(ls_cold_batcher_flush(&b) == LS_OK);
    CHECK_EQ_INT(b.nbatches, 3);
    char why[200];
    ls_batch_info_t info[4];
    int n;
    CHECK(ls_records_validate(b.out.data, b.out.len, 1 << 20, info, 4, &n, why, sizeof why) ==
          LS_RB_OK);
    CHECK_EQ_INT(n, 3);
    int64_t want_base[] = {50, 53, 55}, want_ts[] = {1000, 2000, 1500};
    for (int i = 0; i < 3; i++) {
        CHECK(info[i].timestamp_log_append);
        CHECK_EQ_INT(info[i].codec, LS_CODEC_SNAPPY);
        CHECK_EQ_INT(info[i].base_offset, want_base[i]);
        CHECK_EQ_INT(info[i].max_timestamp, want_ts[i]);
        CHECK_EQ_INT(info[i].producer_id, -1);
    }
    g_b.n = 0;
    CHECK(decode_all(b.out.data, b.out.len, &g_b, NULL) == 0);
    CHECK_EQ_INT(g_b.n, 6);
    for (int i = 0; i < 6; i++)
        CHECK_EQ_INT(g_b.r[i].timestamp_ms, ts[i]);
    rows_free(&g_b);
    ls_cold_batcher_free(&b);
}

TEST(batches_cut_at_target_with_gaps)
{
    ls_cold_batcher_t b;
    ls_cold_batcher_init(&b, LS_CODEC_NONE, false, 1000);
    for (int i = 0; i < 100; i++) {
        ls_raw_record_t r = {.offset = 7 + i * 3,
                             .timestamp_ms = 5,
                             .key_len = -1,
                             .value = g_payload,
                             .value_len = 95};
        CHECK(ls_cold_batcher_add(&b, &r) == LS_OK);
    }
    CHECK(ls_cold_batcher_flush(&b) == LS_OK);
    size_t pos = 0;
    int n = 0;
    while (pos < b.out.len) {
        ls_batch_info_t info;
        ls_batch_header_parse(b.out.data + pos, &info);
        CHECK_EQ_INT(info.record_count, 10);
        CHECK_EQ_INT(info.base_offset, 7 + n * 30);
        CHECK_EQ_INT(info.last_offset_delta, 27);
        pos += 12 + ls_be32_get(b.out.data + pos + LS_RB_OFF_LENGTH);
        n++;
    }
    CHECK_EQ_INT(n, 10);
    g_b.n = 0;
    CHECK(decode_all(b.out.data, b.out.len, &g_b, NULL) == 0);
    CHECK_EQ_INT(g_b.n, 100);
    CHECK_EQ_INT(g_b.r[99].offset, 7 + 99 * 3);
    rows_free(&g_b);
    /* offsets must ascend; a header needs a key */
    ls_raw_record_t r = {.offset = 7, .key_len = -1, .value_len = -1};
    CHECK(ls_cold_batcher_add(&b, &r) == LS_EINVAL);
    ls_raw_header_t nokey = {NULL, 0, NULL, -1};
    r = (ls_raw_record_t){
        .offset = 1000, .key_len = -1, .value_len = -1, .headers = &nokey, .nheaders = 1};
    CHECK(ls_cold_batcher_add(&b, &r) == LS_EINVAL);
    ls_cold_batcher_free(&b);
}

TEST(not_a_raw_file_refused)
{
    static const ls_pq_field_t f[] = {
        {"schema", LS_PQ_GROUP, LS_PQ_REQUIRED, LS_PQ_LT_NONE, -1, 1, 0, 0, 0},
        {"offset", LS_PQ_INT64, LS_PQ_REQUIRED, LS_PQ_LT_NONE, LS_RAW_FID_OFFSET, 0, 0, 0, 0},
    };
    ls_pq_opts_t o;
    ls_pq_opts_init(&o);
    ls_buf_t file;
    ls_buf_init(&file);
    char err[256];
    ls_pq_writer_t *w = ls_pq_writer_new(f, 2, &o, &file, err, sizeof err);
    CHECK(w);
    ls_pq_put_i64(w, 0, 0, 1);
    CHECK(ls_pq_end_row(w) == LS_OK);
    CHECK(ls_pq_writer_finish(w) == LS_OK);
    ls_pq_writer_free(w);
    ls_cold_read_t rd;
    CHECK(ls_cold_read_parquet(file.data, file.len, 0, 0, 10, LS_CODEC_NONE, false, 1 << 20,
                               1 << 20, false, &rd, err, sizeof err) == LS_EINVAL);
    CHECK(strstr(err, "field id 1") != NULL);
    ls_buf_free(&rd.batches);
    /* a truncated file */
    CHECK(ls_cold_read_parquet(file.data, file.len - 3, 0, 0, 10, LS_CODEC_NONE, false, 1 << 20,
                               1 << 20, false, &rd, err, sizeof err) == LS_ECORRUPT);
    ls_buf_free(&rd.batches);
    ls_buf_free(&file);
}

int main(void)
{
    RUN(batcher_matches_produced_batch);
    RUN(parquet_round_trip_is_byte_exact);
    RUN(scan_partition_range_every_codec);
    RUN(headerless_row_groups_read_back);
    RUN(scan_unsorted_file_served_in_order);
    RUN(read_into_given_buffer);
    RUN(kept_file_matches_fresh_reads);
    RUN(log_append_time_one_timestamp_per_batch);
    RUN(batches_cut_at_target_with_gaps);
    RUN(not_a_raw_file_refused);
    UNIT_DONE();
}
