/* Parquet writer: Thrift compact bytes and page layouts checked by hand
 * against parquet.thrift / Encodings.md, writer misuse, and (when
 * LS_TABLE_OUT names a directory) files for the independent readers in
 * tests/integration/test_tables.py (pyarrow, duckdb). The rows of those
 * files follow raw_row() below; the Python side regenerates them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "table/iceberg_raw.h"
#include "table/parquet_reader.h"
#include "table/parquet_writer.h"
#include "table/thrift_compact.h"
#include "unit.h"

static int has_bytes(const ls_buf_t *b, const uint8_t *pat, size_t n)
{
    for (size_t i = 0; i + n <= b->len; i++)
        if (!memcmp(b->data + i, pat, n)) return 1;
    return 0;
}

TEST(thrift_compact_bytes)
{
    ls_buf_t b;
    ls_buf_init(&b);
    ls_tc_t t;
    ls_tc_init(&t, &b);
    ls_tc_i32(&t, 1, -1);                   /* 0x15, zigzag(-1)=1 */
    ls_tc_i64(&t, 3, 300);                  /* delta 2: 0x26, zigzag 600 = 0xd8 0x04 */
    ls_tc_bool(&t, 4, 1);                   /* 0x11 */
    ls_tc_string(&t, 40, "ab");             /* long form: 0x08, zigzag(40)=80=0x50, len 2 */
    ls_tc_struct_begin(&t, 41);             /* delta 1: 0x1c */
    ls_tc_i32(&t, 1, 5);                    /* fresh id space: 0x15 0x0a */
    ls_tc_struct_end(&t);                   /* 0x00 */
    ls_tc_list_begin(&t, 42, LS_TC_I32, 2); /* 0x19, 0x25 */
    ls_tc_elem_i32(&t, 0);
    ls_tc_elem_i32(&t, 3);
    ls_tc_list_begin(&t, 43, LS_TC_BINARY, 20); /* 0x19, 0xf8, 20 */
    ls_tc_end(&t);
    const uint8_t want[] = {0x15, 0x01, 0x26, 0xd8, 0x04, 0x11, 0x08, 0x50, 0x02, 'a', 'b', 0x1c,
                            0x15, 0x0a, 0x00, 0x19, 0x25, 0x00, 0x06, 0x19, 0xf8, 20,  0x00};
    CHECK_EQ_INT(b.len, sizeof want);
    CHECK(memcmp(b.data, want, sizeof want) == 0);
    ls_buf_free(&b);
}

/* One required INT32 column, PLAIN, uncompressed: the first page is the
 * header + three little-endian values, right after "PAR1". */
TEST(plain_page_layout)
{
    ls_pq_field_t f[] = {{"x", LS_PQ_INT32, LS_PQ_REQUIRED, LS_PQ_LT_NONE, 1, 0, 0, 0, 0}};
    ls_pq_opts_t o;
    ls_pq_opts_init(&o);
    o.codec = LS_PQ_UNCOMPRESSED;
    o.dict_max_bytes = 0;
    ls_buf_t out;
    ls_buf_init(&out);
    char err[128] = "";
    ls_pq_writer_t *w = ls_pq_writer_new(f, 1, &o, &out, err, sizeof err);
    CHECK(w);
    for (int i = 1; i <= 3; i++) {
        ls_pq_put_i32(w, 0, 0, i);
        CHECK_EQ_INT(ls_pq_end_row(w), LS_OK);
    }
    CHECK_EQ_INT(ls_pq_writer_finish(w), LS_OK);
    const uint8_t want[] = {
        'P',  'A',  'R',  '1',  0x15, 0x00, 0x15, 0x18, 0x15, 0x18, /* DATA_PAGE, 12, 12 */
        0x2c, 0x15, 0x06, 0x15, 0x00, 0x15, 0x06, 0x15, 0x06, 0x00, 0x00, 1,
        0,    0,    0,    2,    0,    0,    0,    3,    0,    0,    0};
    CHECK(out.len > sizeof want + 8);
    CHECK(memcmp(out.data, want, sizeof want) == 0);
    CHECK(memcmp(out.data + out.len - 4, "PAR1", 4) == 0);
    const ls_pq_colstats_t *s = ls_pq_column_stats(w, 0);
    CHECK_EQ_INT(s->num_values, 3);
    CHECK_EQ_INT(s->null_count, 0);
    CHECK(s->has_bounds && s->min.len == 4 && s->min.data[0] == 1 && s->max.data[0] == 3);
    CHECK_EQ_INT(s->field_id, 1);
    ls_pq_writer_free(w);
    ls_buf_free(&out);
}

/* Dictionary page [5, 6]; data page indices 0,1,0*8 with bit width 1 as one
 * bit-packed run of 2 groups: 01 (width) 05 (2 groups << 1 | 1) 02 00. */
TEST(dictionary_page_layout)
{
    ls_pq_field_t f[] = {{"x", LS_PQ_INT32, LS_PQ_REQUIRED, LS_PQ_LT_NONE, 1, 0, 0, 0, 0}};
    ls_pq_opts_t o;
    ls_pq_opts_init(&o);
    o.codec = LS_PQ_UNCOMPRESSED;
    ls_buf_t out;
    ls_buf_init(&out);
    char err[128] = "";
    ls_pq_writer_t *w = ls_pq_writer_new(f, 1, &o, &out, err, sizeof err);
    int vals[] = {5, 6, 5, 5, 5, 5, 5, 5, 5, 5};
    for (int i = 0; i < 10; i++) {
        ls_pq_put_i32(w, 0, 0, vals[i]);
        CHECK_EQ_INT(ls_pq_end_row(w), LS_OK);
    }
    CHECK_EQ_INT(ls_pq_writer_finish(w), LS_OK);
    /* dictionary page: DICTIONARY_PAGE(2), 8, 8, DictionaryPageHeader{2, PLAIN} */
    const uint8_t dict[] = {0x15, 0x04, 0x15, 0x10, 0x15, 0x10, 0x4c, 0x15, 0x04, 0x15, 0x00,
                            0x00, 0x00, 5,    0,    0,    0,    6,    0,    0,    0};
    CHECK(memcmp(out.data + 4, dict, sizeof dict) == 0);
    /* data page: 4 body bytes, 10 values, RLE_DICTIONARY(8) */
    const uint8_t data[] = {0x15, 0x00, 0x15, 0x08, 0x15, 0x08, 0x2c, 0x15, 0x14, 0x15, 0x10,
                            0x15, 0x06, 0x15, 0x06, 0x00, 0x00, 0x01, 0x05, 0x02, 0x00};
    CHECK(memcmp(out.data + 4 + sizeof dict, data, sizeof data) == 0);
    ls_pq_writer_free(w);
    ls_buf_free(&out);
}

/* Definition levels of an optional column: nine 1s then a 0 -> RLE run of 9
 * (0x12 = 9 << 1, value 0x01), then [0] bit-packed as one padded group
 * (0x03 = 1 << 1 | 1, 0x00): 4-byte length 4. */
TEST(definition_levels_hybrid)
{
    ls_pq_field_t f[] = {{"k", LS_PQ_BYTE_ARRAY, LS_PQ_OPTIONAL, LS_PQ_LT_STRING, 4, 0, 0, 0, 0}};
    ls_pq_opts_t o;
    ls_pq_opts_init(&o);
    o.codec = LS_PQ_UNCOMPRESSED;
    o.dict_max_bytes = 0;
    ls_buf_t out;
    ls_buf_init(&out);
    char err[128] = "";
    ls_pq_writer_t *w = ls_pq_writer_new(f, 1, &o, &out, err, sizeof err);
    for (int i = 0; i < 10; i++) {
        if (i == 9)
            ls_pq_put_null(w, 0, 0, 0);
        else
            ls_pq_put_bytes(w, 0, 0, "a", 1);
        CHECK_EQ_INT(ls_pq_end_row(w), LS_OK);
    }
    CHECK_EQ_INT(ls_pq_writer_finish(w), LS_OK);
    const uint8_t lv[] = {0x04, 0, 0, 0, 0x12, 0x01, 0x03, 0x00, 1, 0, 0, 0, 'a'};
    CHECK(has_bytes(&out, lv, sizeof lv));
    const ls_pq_colstats_t *s = ls_pq_column_stats(w, 0);
    CHECK_EQ_INT(s->num_values, 10);
    CHECK_EQ_INT(s->null_count, 1);
    ls_pq_writer_free(w);
    ls_buf_free(&out);
}

/* Booleans are bit-packed LSB first: 1,0,1,1,0,0,0,0,1 -> 0x0d 0x01; no
 * dictionary page even with dictionaries enabled. */
TEST(boolean_page_layout)
{
    ls_pq_field_t f[] = {{"b", LS_PQ_BOOLEAN, LS_PQ_REQUIRED, LS_PQ_LT_NONE, 1, 0, 0, 0, 0}};
    ls_pq_opts_t o;
    ls_pq_opts_init(&o);
    o.codec = LS_PQ_UNCOMPRESSED;
    ls_buf_t out;
    ls_buf_init(&out);
    char err[128] = "";
    ls_pq_writer_t *w = ls_pq_writer_new(f, 1, &o, &out, err, sizeof err);
    int v[] = {1, 0, 1, 1, 0, 0, 0, 0, 1};
    for (int i = 0; i < 9; i++) {
        ls_pq_put_bool(w, 0, 0, v[i]);
        CHECK_EQ_INT(ls_pq_end_row(w), LS_OK);
    }
    CHECK_EQ_INT(ls_pq_writer_finish(w), LS_OK);
    /* DATA_PAGE, sizes 2, 2, DataPageHeader{9, PLAIN, RLE, RLE}, body 0d 01 */
    const uint8_t want[] = {'P',  'A',  'R',  '1',  0x15, 0x00, 0x15, 0x04, 0x15, 0x04, 0x2c, 0x15,
                            0x12, 0x15, 0x00, 0x15, 0x06, 0x15, 0x06, 0x00, 0x00, 0x0d, 0x01};
    CHECK(memcmp(out.data, want, sizeof want) == 0);
    const ls_pq_colstats_t *s = ls_pq_column_stats(w, 0);
    CHECK(s->has_bounds && s->min.data[0] == 0 && s->max.data[0] == 1);
    ls_pq_writer_free(w);
    ls_buf_free(&out);
}

/* FIXED_LEN_BYTE_ARRAY: PLAIN values are the bytes alone; a DECIMAL's
 * bounds compare as signed numbers (sort order SIGNED), a UUID's unsigned;
 * a value of another length and a DECIMAL that its physical type cannot
 * hold are refused. */
TEST(fixed_and_decimal_columns)
{
    ls_pq_field_t f[] = {
        {"d", LS_PQ_FIXED_LEN_BYTE_ARRAY, LS_PQ_REQUIRED, LS_PQ_LT_DECIMAL, 1, 0, 2, 4, 1},
        {"u", LS_PQ_FIXED_LEN_BYTE_ARRAY, LS_PQ_OPTIONAL, LS_PQ_LT_UUID, 2, 0, 16, 0, 0},
        {"i", LS_PQ_INT32, LS_PQ_REQUIRED, LS_PQ_LT_DECIMAL, 3, 0, 0, 9, 2},
        {"t", LS_PQ_INT64, LS_PQ_REQUIRED, LS_PQ_LT_TIME_US, 4, 0, 0, 0, 0}};
    ls_pq_opts_t o;
    ls_pq_opts_init(&o);
    o.codec = LS_PQ_UNCOMPRESSED;
    o.dict_max_bytes = 0;
    ls_buf_t out;
    ls_buf_init(&out);
    char err[160] = "";
    ls_pq_writer_t *w = ls_pq_writer_new(f, 4, &o, &out, err, sizeof err);
    CHECK(w != NULL);
    const int vals[] = {1, -2, 3, -1};
    for (int i = 0; i < 4; i++) {
        ls_pq_put_decimal(w, 0, 0, vals[i]);
        uint8_t u[16];
        memset(u, i == 1 ? 0xf0 : 0x10 + i, sizeof u);
        if (i == 3)
            ls_pq_put_null(w, 1, 0, 0);
        else
            ls_pq_put_bytes(w, 1, 0, u, 16);
        ls_pq_put_decimal(w, 2, 0, -vals[i] * 100000);
        ls_pq_put_i64(w, 3, 0, 1000000);
        CHECK_EQ_INT(ls_pq_end_row(w), LS_OK);
    }
    CHECK_EQ_INT(ls_pq_writer_finish(w), LS_OK);
    const ls_pq_colstats_t *s = ls_pq_column_stats(w, 0);
    /* -2 .. 3 as 2 big-endian bytes (unsigned order would say 0x0001 .. 0xfffe) */
    CHECK(s->has_bounds && s->min.len == 2 && s->min.data[0] == 0xff && s->min.data[1] == 0xfe);
    CHECK(s->max.len == 2 && s->max.data[0] == 0x00 && s->max.data[1] == 0x03);
    s = ls_pq_column_stats(w, 1);
    CHECK(s->min.data[0] == 0x10 && s->max.data[0] == 0xf0 && s->null_count == 1);
    s = ls_pq_column_stats(w, 2);
    int32_t lo, hi;
    memcpy(&lo, s->min.data, 4), memcpy(&hi, s->max.data, 4);
    CHECK(lo == -300000 && hi == 200000);
    ls_pq_writer_free(w);
    /* the footer says what a reader needs: type_length, DECIMAL(4, 1), UUID, TIME */
    ls_status st;
    ls_pqr_t *r = ls_pqr_open(out.data, out.len, &st, err, sizeof err);
    CHECK(r != NULL);
    if (r) {
        const ls_pqr_elem_t *e = ls_pqr_column(r, 0);
        CHECK(e->type == LS_PQR_FIXED_LEN_BYTE_ARRAY && e->type_length == 2);
        CHECK(e->logical_id == 5 && e->converted_type == 5);
        e = ls_pqr_column(r, 1);
        CHECK(e->type_length == 16 && e->logical_id == 14);
        e = ls_pqr_column(r, 3);
        CHECK(e->logical_id == 7 && e->time_unit == 2 && !e->utc);
        const ls_pqr_stats_t *st0 = &ls_pqr_chunk(r, 0, 0)->stats; /* the footer's, signed */
        CHECK(st0->has_min && st0->min_len == 2 && st0->min[0] == 0xff && st0->min[1] == 0xfe);
        CHECK(st0->has_max && st0->max_len == 2 && st0->max[0] == 0x00 && st0->max[1] == 0x03);
        ls_pqr_flat_t fl;
        CHECK_EQ_INT(ls_pqr_read_flat(r, 0, 0, &fl, err, sizeof err), LS_OK);
        CHECK(fl.n == 4 && fl.v[1].len == 2 && fl.v[1].bytes[0] == 0xff &&
              fl.v[1].bytes[1] == 0xfe);
        ls_pqr_flat_free(&fl);
        ls_pqr_free(r);
    }
    /* misuse: another length; a precision the physical type cannot hold */
    out.len = 0;
    w = ls_pq_writer_new(f, 4, &o, &out, err, sizeof err);
    ls_pq_put_bytes(w, 0, 0, "abc", 3);
    CHECK_EQ_INT(ls_pq_end_row(w), LS_EINVAL);
    CHECK(strstr(ls_pq_error(w), "3 bytes, the column's are 2") != NULL);
    ls_pq_writer_free(w);
    ls_pq_field_t bad[] = {
        {"d", LS_PQ_FIXED_LEN_BYTE_ARRAY, LS_PQ_REQUIRED, LS_PQ_LT_DECIMAL, 1, 0, 2, 5, 0}};
    CHECK(ls_pq_writer_new(bad, 1, &o, &out, err, sizeof err) == NULL);
    CHECK(strstr(err, "DECIMAL precision") != NULL);
    bad[0] = (ls_pq_field_t){"d", LS_PQ_INT32, LS_PQ_REQUIRED, LS_PQ_LT_DECIMAL, 1, 0, 0, 10, 0};
    CHECK(ls_pq_writer_new(bad, 1, &o, &out, err, sizeof err) == NULL);
    CHECK_EQ_INT(ls_pq_decimal_length(9), 4);
    CHECK_EQ_INT(ls_pq_decimal_length(18), 8);
    CHECK_EQ_INT(ls_pq_decimal_length(19), 9);
    CHECK_EQ_INT(ls_pq_decimal_length(38), 16);
    /* fixed values longer than stats_max_bytes: no footer bounds (as byte arrays) */
    ls_pq_field_t big[] = {
        {"f", LS_PQ_FIXED_LEN_BYTE_ARRAY, LS_PQ_REQUIRED, LS_PQ_LT_NONE, 1, 0, 100, 0, 0}};
    out.len = 0;
    w = ls_pq_writer_new(big, 1, &o, &out, err, sizeof err);
    uint8_t v100[100] = {1};
    ls_pq_put_bytes(w, 0, 0, v100, 100);
    CHECK_EQ_INT(ls_pq_end_row(w), LS_OK);
    CHECK_EQ_INT(ls_pq_writer_finish(w), LS_OK);
    ls_pq_writer_free(w);
    r = ls_pqr_open(out.data, out.len, &st, err, sizeof err);
    CHECK(r != NULL);
    if (r) CHECK(!ls_pqr_chunk(r, 0, 0)->stats.has_min && !ls_pqr_chunk(r, 0, 0)->stats.has_max);
    ls_pqr_free(r);
    ls_buf_free(&out);
}

TEST(misuse_is_reported)
{
    size_t n;
    const ls_pq_field_t *f = ls_raw_parquet_fields(&n);
    ls_buf_t out;
    ls_buf_init(&out);
    char err[128] = "";
    ls_pq_writer_t *w = ls_pq_writer_new(f, n, NULL, &out, err, sizeof err);
    CHECK(w);
    CHECK_EQ_INT(ls_pq_ncolumns(w), 7);
    CHECK_EQ_INT(ls_pq_column_index(w, "headers.list.element.value"), 6);
    ls_pq_put_i32(w, 0, 0, 1); /* other columns left out */
    CHECK_EQ_INT(ls_pq_end_row(w), LS_EINVAL);
    CHECK(strstr(ls_pq_error(w), "offset") != NULL);
    ls_pq_writer_free(w);
    w = ls_pq_writer_new(f, n, NULL, &out, err, sizeof err);
    ls_pq_put_i64(w, 0, 0, 1); /* wrong type */
    CHECK_EQ_INT(ls_pq_end_row(w), LS_EINVAL);
    ls_pq_writer_free(w);
    /* bad schema: group whose children run past the list */
    ls_pq_field_t bad[] = {{"g", LS_PQ_GROUP, LS_PQ_OPTIONAL, LS_PQ_LT_NONE, 1, 2, 0, 0, 0},
                           {"a", LS_PQ_INT32, LS_PQ_REQUIRED, LS_PQ_LT_NONE, 2, 0, 0, 0, 0}};
    err[0] = 0;
    CHECK(ls_pq_writer_new(bad, 2, NULL, &out, err, sizeof err) == NULL);
    CHECK(err[0] != 0);
    ls_buf_free(&out);
}

/* ---- files for the independent readers ---- */

/* Row i of the generated raw table (mirrored in test_tables.py). */
static void raw_row(int64_t i, ls_raw_record_t *r, ls_raw_header_t *h, char *kbuf, char *vbuf,
                    char hv[4][32])
{
    memset(r, 0, sizeof *r);
    r->partition = (int32_t)(i % 3);
    r->offset = i;
    r->timestamp_ms = 1700000000000LL + i * 1000;
    if (i % 5 == 0)
        r->key_len = -1;
    else
        r->key_len = snprintf(kbuf, 32, "k%d", (int)(i % 7)), r->key = (uint8_t *)kbuf;
    if (i % 11 == 0)
        r->value_len = -1;
    else
        r->value_len = snprintf(vbuf, 64, "value-%lld", (long long)i), r->value = (uint8_t *)vbuf;
    r->nheaders = (size_t)(i % 4);
    for (size_t j = 0; j < r->nheaders; j++) {
        static const char *names[] = {"h0", "h1", "h2"};
        h[j].key = names[j];
        h[j].key_len = 2;
        if (j == 1) {
            h[j].value = NULL;
            h[j].value_len = -1;
        } else {
            h[j].value_len = snprintf(hv[j], 32, "v%lld-%d", (long long)i, (int)j);
            h[j].value = (uint8_t *)hv[j];
        }
    }
    r->headers = h;
}

static int write_raw_file(const char *dir, const char *name, const ls_pq_opts_t *o, int64_t rows)
{
    ls_buf_t out;
    ls_buf_init(&out);
    char err[128];
    ls_pq_writer_t *w = ls_raw_writer_new(o, &out, err, sizeof err);
    if (!w) return -1;
    for (int64_t i = 0; i < rows; i++) {
        ls_raw_record_t r;
        ls_raw_header_t h[4];
        char kb[32], vb[64], hv[4][32];
        raw_row(i, &r, h, kb, vb, hv);
        if (ls_raw_write(w, &r) != LS_OK) return -2;
    }
    int rc = ls_pq_writer_finish(w) == LS_OK ? 0 : -3;
    int rgs = ls_pq_num_row_groups(w);
    ls_pq_writer_free(w);
    if (dir) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, name);
        FILE *fp = fopen(path, "wb");
        if (!fp || fwrite(out.data, 1, out.len, fp) != out.len) rc = -4;
        if (fp) fclose(fp);
    }
    ls_buf_free(&out);
    return rc ? rc : rgs;
}

TEST(raw_files_for_readers)
{
    const char *dir = getenv("LS_TABLE_OUT");
    struct {
        const char *name;
        ls_pq_codec codec;
        size_t dict;
        size_t rg;
    } cases[] = {
        {"raw_uncompressed.parquet", LS_PQ_UNCOMPRESSED, 1 << 20, 64 << 10},
        {"raw_snappy.parquet", LS_PQ_SNAPPY, 1 << 20, 64 << 10},
        {"raw_gzip.parquet", LS_PQ_GZIP, 1 << 20, 64 << 10},
        {"raw_zstd.parquet", LS_PQ_ZSTD, 1 << 20, 64 << 10},
        {"raw_plain.parquet", LS_PQ_SNAPPY, 0, 64 << 10},         /* no dictionaries */
        {"raw_dict_fallback.parquet", LS_PQ_ZSTD, 2048, 1 << 30}, /* dictionary overflows */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ls_pq_opts_t o;
        ls_pq_opts_init(&o);
        o.codec = cases[i].codec;
        o.dict_max_bytes = cases[i].dict;
        o.row_group_bytes = cases[i].rg;
        o.page_bytes = 4096;
        int rgs = write_raw_file(dir, cases[i].name, &o, 5000);
        CHECK(rgs >= 1);
        if (cases[i].rg == (64 << 10)) CHECK(rgs > 1);
    }
}

/* Value i of raw_incompressible.parquet: 1 KiB; rows with (i / 600) even
 * xorshift32 bytes seeded by i+1 (incompressible), the rest one repeated
 * text (mirrored in test_tables.py). */
static void mixed_value(int64_t i, uint8_t *v)
{
    if ((i / 600) % 2 == 0) {
        uint32_t x = (uint32_t)i + 1;
        for (int k = 0; k < 1024; k++)
            x ^= x << 13, x ^= x >> 17, x ^= x << 5, v[k] = (uint8_t)x;
    } else {
        for (int k = 0; k < 1024; k++)
            v[k] = (uint8_t) "lakestream table page "[k % 22];
    }
}

/* zstd pages of values that do not shrink are raw-block frames (the probe
 * in parquet_writer.c), compressible stretches of the same chunk are
 * compressed again: the file is about as big as the random half, far
 * smaller than all values, and every reader reads it (test_tables.py). */
TEST(incompressible_zstd_pages)
{
    ls_pq_opts_t o;
    ls_pq_opts_init(&o);
    o.codec = LS_PQ_ZSTD;
    o.dict_max_bytes = 0;
    o.page_bytes = 64 << 10;
    ls_buf_t out;
    ls_buf_init(&out);
    char err[128];
    ls_pq_writer_t *w = ls_raw_writer_new(&o, &out, err, sizeof err);
    CHECK(w != NULL);
    uint8_t v[1024];
    for (int64_t i = 0; i < 3000; i++) {
        mixed_value(i, v);
        ls_raw_record_t r = {.partition = 0,
                             .offset = i,
                             .timestamp_ms = 1700000000000LL + i,
                             .key_len = -1,
                             .value = v,
                             .value_len = 1024};
        CHECK(ls_raw_write(w, &r) == LS_OK);
    }
    CHECK(ls_pq_writer_finish(w) == LS_OK);
    ls_pq_writer_free(w);
    CHECK(out.len > 1800 * 1024);           /* the random rows, stored */
    CHECK(out.len < 1800 * 1024 * 21 / 20); /* the text rows, compressed */
    const char *dir = getenv("LS_TABLE_OUT");
    if (dir) {
        char path[512];
        snprintf(path, sizeof path, "%s/raw_incompressible.parquet", dir);
        FILE *fp = fopen(path, "wb");
        CHECK(fp && fwrite(out.data, 1, out.len, fp) == out.len);
        if (fp) fclose(fp);
    }
    ls_buf_free(&out);
}

/* Typed columns (bool/float/double + a required int) for the readers:
 * row i: b = null if i%7==0 else i%3==0; f = i*0.5 (NaN at 500, -0.0 at 0);
 * d = null if i%4==0 else -i/3.0; n = i. */
static int write_typed(const char *dir)
{
    ls_pq_field_t f[] = {{"b", LS_PQ_BOOLEAN, LS_PQ_OPTIONAL, LS_PQ_LT_NONE, 1, 0, 0, 0, 0},
                         {"f", LS_PQ_FLOAT, LS_PQ_REQUIRED, LS_PQ_LT_NONE, 2, 0, 0, 0, 0},
                         {"d", LS_PQ_DOUBLE, LS_PQ_OPTIONAL, LS_PQ_LT_NONE, 3, 0, 0, 0, 0},
                         {"n", LS_PQ_INT32, LS_PQ_REQUIRED, LS_PQ_LT_DATE, 4, 0, 0, 0, 0}};
    ls_pq_opts_t o;
    ls_pq_opts_init(&o);
    o.row_group_bytes = 4096;
    o.page_bytes = 512;
    ls_buf_t out;
    ls_buf_init(&out);
    char err[128];
    ls_pq_writer_t *w = ls_pq_writer_new(f, 4, &o, &out, err, sizeof err);
    if (!w) return -1;
    for (int i = 0; i < 1000; i++) {
        if (i % 7 == 0)
            ls_pq_put_null(w, 0, 0, 0);
        else
            ls_pq_put_bool(w, 0, 0, i % 3 == 0);
        ls_pq_put_float(w, 1, 0, i == 500 ? __builtin_nanf("") : i == 0 ? -0.0f : (float)i * 0.5f);
        if (i % 4 == 0)
            ls_pq_put_null(w, 2, 0, 0);
        else
            ls_pq_put_double(w, 2, 0, -i / 3.0);
        ls_pq_put_i32(w, 3, 0, i);
        if (ls_pq_end_row(w) != LS_OK) return -2;
    }
    int rc = ls_pq_writer_finish(w) == LS_OK ? 0 : -3;
    const ls_pq_colstats_t *s = ls_pq_column_stats(w, 1);
    float mx;
    memcpy(&mx, s->max.data, 4);
    if (mx != 999 * 0.5f) rc = -4; /* NaN is not the max */
    ls_pq_writer_free(w);
    if (dir && rc == 0) {
        char path[512];
        snprintf(path, sizeof path, "%s/typed.parquet", dir);
        FILE *fp = fopen(path, "wb");
        if (!fp || fwrite(out.data, 1, out.len, fp) != out.len) rc = -5;
        if (fp) fclose(fp);
    }
    ls_buf_free(&out);
    return rc;
}

TEST(typed_file_for_readers) { CHECK_EQ_INT(write_typed(getenv("LS_TABLE_OUT")), 0); }

int main(void)
{
    RUN(thrift_compact_bytes);
    RUN(plain_page_layout);
    RUN(dictionary_page_layout);
    RUN(definition_levels_hybrid);
    RUN(boolean_page_layout);
    RUN(fixed_and_decimal_columns);
    RUN(misuse_is_reported);
    RUN(raw_files_for_readers);
    RUN(typed_file_for_readers);
    RUN(incompressible_zstd_pages);
    UNIT_DONE();
}
