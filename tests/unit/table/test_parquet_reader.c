/* Parquet reader: round trips through our writer (every type, null
 * patterns, nested lists and maps, dictionary and plain, every codec,
 * several row groups and pages), the flat-column convenience, the Thrift
 * decoder, hand-built files for what our writer never emits (data page v2,
 * refused encodings and codecs), and corrupt or truncated files, which must
 * fail with a message and never read out of bounds (run under ASan too).
 *
 * With LS_PQR_DUMP=<dir>, the binary instead dumps every <dir>/ *.parquet
 * as <file>.jsonl (schema, row groups, chunk statistics, every triple) for
 * tests/integration/test_parquet_reader.py, which writes the files with
 * pyarrow and compares value by value. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/alloc.h"
#include "table/parquet_reader.h"
#include "table/parquet_writer.h"
#include "table/thrift_compact.h"
#include "unit.h"

/* ---- a file with every shape ------------------------------------------ */

static const ls_pq_field_t g_fields[] = {
    {"b", LS_PQ_BOOLEAN, LS_PQ_OPTIONAL, LS_PQ_LT_NONE, 1, 0, 0, 0, 0},
    {"i32", LS_PQ_INT32, LS_PQ_OPTIONAL, LS_PQ_LT_DATE, 2, 0, 0, 0, 0},
    {"i64", LS_PQ_INT64, LS_PQ_REQUIRED, LS_PQ_LT_TIMESTAMP_US_UTC, 3, 0, 0, 0, 0},
    {"f", LS_PQ_FLOAT, LS_PQ_OPTIONAL, LS_PQ_LT_NONE, 4, 0, 0, 0, 0},
    {"d", LS_PQ_DOUBLE, LS_PQ_OPTIONAL, LS_PQ_LT_NONE, 5, 0, 0, 0, 0},
    {"s", LS_PQ_BYTE_ARRAY, LS_PQ_OPTIONAL, LS_PQ_LT_STRING, 6, 0, 0, 0, 0},
    {"bin", LS_PQ_BYTE_ARRAY, LS_PQ_REQUIRED, LS_PQ_LT_NONE, 7, 0, 0, 0, 0},
    {"l", LS_PQ_GROUP, LS_PQ_OPTIONAL, LS_PQ_LT_LIST, 8, 1, 0, 0, 0},
    {"list", LS_PQ_GROUP, LS_PQ_REPEATED, LS_PQ_LT_NONE, -1, 1, 0, 0, 0},
    {"element", LS_PQ_INT64, LS_PQ_OPTIONAL, LS_PQ_LT_NONE, 9, 0, 0, 0, 0},
    {"m", LS_PQ_GROUP, LS_PQ_OPTIONAL, LS_PQ_LT_MAP, 10, 1, 0, 0, 0},
    {"key_value", LS_PQ_GROUP, LS_PQ_REPEATED, LS_PQ_LT_NONE, -1, 2, 0, 0, 0},
    {"key", LS_PQ_BYTE_ARRAY, LS_PQ_REQUIRED, LS_PQ_LT_STRING, 11, 0, 0, 0, 0},
    {"value", LS_PQ_INT32, LS_PQ_OPTIONAL, LS_PQ_LT_NONE, 12, 0, 0, 0, 0},
};
#define NCOLS 10

typedef struct exp_t {
    int rep, def;
    int64_t i; /* ints, booleans */
    double d;  /* float, double */
    uint8_t s[24];
    uint32_t slen;
} exp_t;

typedef struct expected {
    exp_t *e[NCOLS];
    size_t n[NCOLS], cap[NCOLS];
} expected_t;

static exp_t *add(expected_t *x, int col, int rep, int def)
{
    if (x->n[col] == x->cap[col]) {
        x->cap[col] = x->cap[col] ? x->cap[col] * 2 : 256;
        x->e[col] = ls_realloc(x->e[col], x->cap[col] * sizeof(exp_t));
    }
    exp_t *e = &x->e[col][x->n[col]++];
    memset(e, 0, sizeof *e);
    e->rep = rep;
    e->def = def;
    return e;
}

static void put_null(ls_pq_writer_t *w, expected_t *x, int col, int rep, int def)
{
    ls_pq_put_null(w, col, rep, def);
    add(x, col, rep, def);
}
static void put_i(ls_pq_writer_t *w, expected_t *x, int col, int type, int rep, int def, int64_t v)
{
    if (type == LS_PQ_BOOLEAN) ls_pq_put_bool(w, col, rep, (int)v);
    if (type == LS_PQ_INT32) ls_pq_put_i32(w, col, rep, (int32_t)v);
    if (type == LS_PQ_INT64) ls_pq_put_i64(w, col, rep, v);
    add(x, col, rep, def)->i = v;
}
static void put_d(ls_pq_writer_t *w, expected_t *x, int col, int type, int def, double v)
{
    if (type == LS_PQ_FLOAT) ls_pq_put_float(w, col, 0, (float)v);
    if (type == LS_PQ_DOUBLE) ls_pq_put_double(w, col, 0, v);
    add(x, col, 0, def)->d = type == LS_PQ_FLOAT ? (double)(float)v : v;
}
static void put_s(ls_pq_writer_t *w, expected_t *x, int col, int rep, int def, const void *p,
                  size_t n)
{
    ls_pq_put_bytes(w, col, rep, p, n);
    exp_t *e = add(x, col, rep, def);
    memcpy(e->s, p, n);
    e->slen = (uint32_t)n;
}

static void write_row(ls_pq_writer_t *w, expected_t *x, int i)
{
    char s[24];
    if (i % 7 == 0)
        put_null(w, x, 0, 0, 0);
    else
        put_i(w, x, 0, LS_PQ_BOOLEAN, 0, 1, i % 3 == 0);
    if (i % 5 == 0)
        put_null(w, x, 1, 0, 0);
    else
        put_i(w, x, 1, LS_PQ_INT32, 0, 1, (int64_t)i * 31 - 1000);
    put_i(w, x, 2, LS_PQ_INT64, 0, 0, (int64_t)i * 1000003 - ((int64_t)1 << 40));
    if (i % 11 == 3)
        put_null(w, x, 3, 0, 0);
    else
        put_d(w, x, 3, LS_PQ_FLOAT, 1, i == 17 ? NAN : i == 18 ? -0.0 : i * 0.5);
    if (i % 13 == 1)
        put_null(w, x, 4, 0, 0);
    else
        put_d(w, x, 4, LS_PQ_DOUBLE, 1, i == 19 ? INFINITY : i * 1.25e10);
    if (i % 4 == 1)
        put_null(w, x, 5, 0, 0);
    else {
        int n = i % 9 == 0 ? 0 : snprintf(s, sizeof s, "s%d", i % 50);
        put_s(w, x, 5, 0, 1, s, (size_t)n);
    }
    uint8_t b[20];
    for (int k = 0; k < i % 20; k++)
        b[k] = (uint8_t)((i + k) * 7);
    put_s(w, x, 6, 0, 0, b, (size_t)(i % 20));
    /* l: list<optional int64> */
    if (i % 6 == 0)
        put_null(w, x, 7, 0, 0);
    else if (i % 6 == 1)
        put_null(w, x, 7, 0, 1);
    else
        for (int j = 0; j < i % 4 + 1; j++) {
            if ((i + j) % 5 == 0)
                put_null(w, x, 7, j ? 1 : 0, 2);
            else
                put_i(w, x, 7, LS_PQ_INT64, j ? 1 : 0, 3, (int64_t)i * 10 + j);
        }
    /* m: map<string, optional int32> */
    if (i % 5 == 0) {
        put_null(w, x, 8, 0, 0);
        put_null(w, x, 9, 0, 0);
    } else if (i % 5 == 1) {
        put_null(w, x, 8, 0, 1);
        put_null(w, x, 9, 0, 1);
    } else
        for (int j = 0; j < i % 3 + 1; j++) {
            int n = snprintf(s, sizeof s, "k%d", j);
            put_s(w, x, 8, j ? 1 : 0, 2, s, (size_t)n);
            if (j == 1)
                put_null(w, x, 9, 1, 2);
            else
                put_i(w, x, 9, LS_PQ_INT32, j ? 1 : 0, 3, i + j);
        }
}

static void expected_free(expected_t *x)
{
    for (int c = 0; c < NCOLS; c++)
        ls_free(x->e[c]);
}

static ls_status write_rows(ls_buf_t *out, expected_t *x, int from, int to, ls_pq_codec codec,
                            int dict, int small)
{
    ls_pq_opts_t o;
    ls_pq_opts_init(&o);
    o.codec = codec;
    if (!dict) o.dict_max_bytes = 0;
    if (small) o.page_bytes = 64, o.row_group_bytes = 4096;
    char err[128] = "";
    ls_pq_writer_t *w =
        ls_pq_writer_new(g_fields, sizeof g_fields / sizeof *g_fields, &o, out, err, sizeof err);
    if (!w) return LS_EINVAL;
    ls_status st = LS_OK;
    for (int i = from; i < to && st == LS_OK; i++) {
        write_row(w, x, i);
        st = ls_pq_end_row(w);
    }
    if (st == LS_OK) st = ls_pq_writer_finish(w);
    ls_pq_writer_free(w);
    return st;
}

static ls_status write_file(ls_buf_t *out, expected_t *x, int rows, ls_pq_codec codec, int dict,
                            int small)
{
    return write_rows(out, x, 0, rows, codec, dict, small);
}

static int same_value(int type, const exp_t *e, const ls_pqr_triple_t *t)
{
    switch (type) {
    case LS_PQ_BOOLEAN: return t->v.boolean == (int)e->i;
    case LS_PQ_INT32: return t->v.i32 == (int32_t)e->i;
    case LS_PQ_INT64: return t->v.i64 == e->i;
    case LS_PQ_FLOAT: {
        float f = (float)e->d;
        return !memcmp(&t->v.f32, &f, 4) || (isnan(f) && isnan(t->v.f32));
    }
    case LS_PQ_DOUBLE: return !memcmp(&t->v.f64, &e->d, 8);
    default: return t->len == e->slen && (!e->slen || !memcmp(t->bytes, e->s, e->slen));
    }
}

/* Reads every chunk and compares the triples with what was written. */
static int check_file(const ls_buf_t *f, const expected_t *x, int rows)
{
    ls_status st;
    char err[256];
    ls_pqr_t *r = ls_pqr_open(f->data, f->len, &st, err, sizeof err);
    if (!r) {
        printf("open: %s\n", err);
        return 0;
    }
    int ok = ls_pqr_num_rows(r) == rows && ls_pqr_num_columns(r) == NCOLS;
    for (int c = 0; c < NCOLS && ok; c++) {
        const ls_pqr_elem_t *e = ls_pqr_column(r, c);
        size_t k = 0;
        for (int g = 0; g < ls_pqr_num_row_groups(r) && ok; g++) {
            ls_pqr_iter_t *it = ls_pqr_iter_new(r, g, c, &st, err, sizeof err);
            if (!it) {
                printf("iter: %s\n", err);
                ok = 0;
                break;
            }
            ls_pqr_triple_t t;
            int rc;
            while ((rc = ls_pqr_next(it, &t)) == 1 && ok) {
                const exp_t *want = k < x->n[c] ? &x->e[c][k] : NULL;
                ok = want && want->rep == t.rep && want->def == t.def &&
                     (t.def < e->max_def || same_value(e->type, want, &t));
                if (!ok)
                    printf("column %s entry %zu differs (rep %d def %d)\n", e->path, k, t.rep,
                           t.def);
                k++;
            }
            if (rc < 0) {
                printf("next: %s\n", ls_pqr_iter_error(it));
                ok = 0;
            }
            ls_pqr_iter_free(it);
        }
        if (ok && k != x->n[c]) {
            printf("column %s: %zu entries, wrote %zu\n", e->path, k, x->n[c]);
            ok = 0;
        }
    }
    ls_pqr_free(r);
    return ok;
}

TEST(round_trip_every_codec_dict_and_plain)
{
    const ls_pq_codec codecs[] = {LS_PQ_UNCOMPRESSED, LS_PQ_SNAPPY, LS_PQ_GZIP, LS_PQ_ZSTD};
    for (int ci = 0; ci < 4; ci++)
        for (int dict = 0; dict < 2; dict++)
            for (int small = 0; small < 2; small++) {
                expected_t x;
                memset(&x, 0, sizeof x);
                ls_buf_t out;
                ls_buf_init(&out);
                CHECK_EQ_INT(write_file(&out, &x, 1500, codecs[ci], dict, small), LS_OK);
                int ok = check_file(&out, &x, 1500);
                if (!ok) printf("codec %d dict %d small %d\n", codecs[ci], dict, small);
                ls_buf_free(&out);
                expected_free(&x);
                CHECK(ok);
            }
}

TEST(schema_row_groups_and_stats)
{
    expected_t x;
    memset(&x, 0, sizeof x);
    ls_buf_t out;
    ls_buf_init(&out);
    CHECK_EQ_INT(write_file(&out, &x, 1500, LS_PQ_ZSTD, 1, 1), LS_OK);
    ls_status st;
    char err[256];
    ls_pqr_t *r = ls_pqr_open(out.data, out.len, &st, err, sizeof err);
    CHECK(r);
    CHECK(ls_pqr_num_row_groups(r) > 1);
    int64_t rows = 0;
    for (int g = 0; g < ls_pqr_num_row_groups(r); g++)
        rows += ls_pqr_rg_num_rows(r, g);
    CHECK_EQ_INT(rows, 1500);
    CHECK(!strcmp(ls_pqr_created_by(r), "lakestream-c"));
    CHECK_EQ_INT(ls_pqr_num_elems(r), 15); /* root + 14 */
    const ls_pqr_elem_t *root = ls_pqr_elem(r, 0);
    CHECK(root->type == LS_PQ_GROUP && root->nchildren == 9 && !strcmp(root->name, "schema"));
    const ls_pqr_elem_t *m = ls_pqr_elem(r, 11);
    CHECK(!strcmp(m->path, "m") && m->logical == LS_PQ_LT_MAP && m->field_id == 10 &&
          m->nchildren == 1 && m->column == -1);
    const ls_pqr_elem_t *v = ls_pqr_column(r, 9);
    CHECK(!strcmp(v->path, "m.key_value.value") && v->max_def == 3 && v->max_rep == 1 &&
          v->field_id == 12 && v->type == LS_PQ_INT32);
    CHECK_EQ_INT(ls_pqr_column_index(r, "l.list.element"), 7);
    const ls_pqr_elem_t *ts = ls_pqr_column(r, 2);
    CHECK(ts->logical == LS_PQ_LT_TIMESTAMP_US_UTC && ts->time_unit == 2 && ts->utc &&
          ts->repetition == LS_PQ_REQUIRED);
    CHECK(ls_pqr_column(r, 1)->logical == LS_PQ_LT_DATE);
    CHECK(ls_pqr_column(r, 5)->logical == LS_PQ_LT_STRING);
    /* chunk statistics: null counts add up to the nulls written; the first
     * row group's i64 bounds are its first and last values */
    int64_t nulls = 0;
    for (int g = 0; g < ls_pqr_num_row_groups(r); g++) {
        const ls_pqr_chunk_t *c = ls_pqr_chunk(r, g, 5);
        CHECK(c->stats.has_null_count && c->codec == LS_PQ_ZSTD);
        nulls += c->stats.null_count;
    }
    int64_t want = 0;
    for (size_t k = 0; k < x.n[5]; k++)
        want += x.e[5][k].def == 0;
    CHECK_EQ_INT(nulls, want);
    const ls_pqr_chunk_t *c = ls_pqr_chunk(r, 0, 2);
    CHECK(c->stats.has_min && c->stats.has_max && c->stats.min_len == 8);
    int64_t lo, hi;
    memcpy(&lo, c->stats.min, 8);
    memcpy(&hi, c->stats.max, 8);
    CHECK_EQ_INT(lo, x.e[2][0].i);
    CHECK_EQ_INT(hi, x.e[2][ls_pqr_rg_num_rows(r, 0) - 1].i);
    CHECK(ls_pqr_chunk(r, ls_pqr_num_row_groups(r), 0) == NULL);
    ls_pqr_free(r);
    ls_buf_free(&out);
    expected_free(&x);
}

TEST(flat_columns)
{
    expected_t x;
    memset(&x, 0, sizeof x);
    ls_buf_t out;
    ls_buf_init(&out);
    CHECK_EQ_INT(write_file(&out, &x, 300, LS_PQ_SNAPPY, 1, 0), LS_OK);
    ls_status st;
    char err[256];
    ls_pqr_t *r = ls_pqr_open(out.data, out.len, &st, err, sizeof err);
    CHECK(r);
    ls_pqr_flat_t f;
    CHECK_EQ_INT(ls_pqr_read_flat(r, 0, 5, &f, err, sizeof err), LS_OK);
    CHECK_EQ_INT(f.n, 300);
    for (int i = 0; i < 300; i++) {
        CHECK_EQ_INT(f.v[i].def == f.max_def, i % 4 != 1);
        if (f.v[i].def == f.max_def) CHECK(same_value(LS_PQ_BYTE_ARRAY, &x.e[5][i], &f.v[i]));
    }
    ls_pqr_flat_free(&f);
    CHECK_EQ_INT(ls_pqr_read_flat(r, 0, 2, &f, err, sizeof err), LS_OK);
    CHECK_EQ_INT(f.v[299].v.i64, x.e[2][299].i);
    ls_pqr_flat_free(&f);
    CHECK_EQ_INT(ls_pqr_read_flat(r, 0, 7, &f, err, sizeof err), LS_EINVAL);
    CHECK(strstr(err, "l.list.element is repeated"));
    ls_pqr_free(r);
    ls_buf_free(&out);
    expected_free(&x);
}

TEST(row_cursor)
{
    expected_t x;
    memset(&x, 0, sizeof x);
    ls_buf_t out;
    ls_buf_init(&out);
    CHECK_EQ_INT(write_file(&out, &x, 1500, LS_PQ_GZIP, 1, 1), LS_OK);
    ls_status st;
    char err[256];
    ls_pqr_t *r = ls_pqr_open(out.data, out.len, &st, err, sizeof err);
    CHECK(r);
    const int cols[] = {7, 2, 8, 9};
    size_t at[4] = {0, 0, 0, 0};
    int row = 0;
    for (int g = 0; g < ls_pqr_num_row_groups(r); g++) {
        ls_pqr_rows_t *rs = ls_pqr_rows_new(r, g, cols, 4, &st, err, sizeof err);
        CHECK(rs);
        int rc;
        while ((rc = ls_pqr_rows_next(rs)) == 1) {
            const ls_pqr_triple_t *t;
            /* the list column holds i % 4 + 1 entries for rows i % 6 >= 2, else one */
            size_t n = ls_pqr_rows_col(rs, 0, &t);
            CHECK_EQ_INT(n, row % 6 < 2 ? 1 : row % 4 + 1);
            CHECK_EQ_INT(ls_pqr_rows_col(rs, 1, &t), 1);
            CHECK_EQ_INT(t[0].v.i64, x.e[2][row].i);
            /* map keys and values step together */
            CHECK_EQ_INT(ls_pqr_rows_col(rs, 2, &t), ls_pqr_rows_col(rs, 3, &t));
            for (size_t k = 0; k < 4; k++) {
                n = ls_pqr_rows_col(rs, k, &t);
                for (size_t i = 0; i < n; i++, at[k]++) {
                    const exp_t *e = &x.e[cols[k]][at[k]];
                    CHECK(t[i].rep == e->rep && t[i].def == e->def);
                    CHECK(i == 0 ? t[i].rep == 0 : t[i].rep > 0);
                }
            }
            row++;
        }
        CHECK_EQ_INT(rc, 0);
        ls_pqr_rows_free(rs);
    }
    CHECK_EQ_INT(row, 1500);
    CHECK_EQ_INT(at[0], x.n[7]);
    CHECK_EQ_INT(at[3], x.n[9]);
    ls_pqr_free(r);
    ls_buf_free(&out);
    expected_free(&x);
}

/* Small files copied row by row into one writer give the very file the
 * writer makes from the same rows directly: nothing is lost or altered. */
TEST(copy_rows_rewrites_small_files_exactly)
{
    const ls_pq_codec codecs[] = {LS_PQ_ZSTD, LS_PQ_UNCOMPRESSED};
    for (int ci = 0; ci < 2; ci++) {
        expected_t x, y;
        memset(&x, 0, sizeof x);
        memset(&y, 0, sizeof y);
        ls_buf_t whole, parts[3], merged;
        ls_buf_init(&whole);
        ls_buf_init(&merged);
        CHECK_EQ_INT(write_rows(&whole, &x, 0, 2000, codecs[ci], ci == 0, 1), LS_OK);
        const int cut[] = {0, 7, 1300, 2000};
        for (int k = 0; k < 3; k++) {
            ls_buf_init(&parts[k]);
            CHECK_EQ_INT(write_rows(&parts[k], &y, cut[k], cut[k + 1], LS_PQ_SNAPPY, k != 1, 0),
                         LS_OK);
        }
        ls_pq_opts_t o;
        ls_pq_opts_init(&o);
        o.codec = codecs[ci];
        if (ci != 0) o.dict_max_bytes = 0;
        o.page_bytes = 64, o.row_group_bytes = 4096;
        char err[256] = "";
        ls_pq_writer_t *w = ls_pq_writer_new(g_fields, sizeof g_fields / sizeof *g_fields, &o,
                                             &merged, err, sizeof err);
        CHECK(w);
        for (int k = 0; k < 3; k++) {
            ls_status st;
            ls_pqr_t *r = ls_pqr_open(parts[k].data, parts[k].len, &st, err, sizeof err);
            CHECK(r);
            CHECK_EQ_INT(ls_pqr_copy_rows(r, w, err, sizeof err), LS_OK);
            ls_pqr_free(r);
            ls_buf_free(&parts[k]);
        }
        CHECK_EQ_INT(ls_pq_writer_finish(w), LS_OK);
        ls_pq_writer_free(w);
        CHECK_EQ_INT(merged.len, whole.len);
        CHECK(memcmp(merged.data, whole.data, whole.len) == 0);
        ls_buf_free(&whole);
        ls_buf_free(&merged);
        expected_free(&x);
        expected_free(&y);
    }
    /* a writer with a column narrower than the file's is refused, naming it */
    expected_t x;
    memset(&x, 0, sizeof x);
    ls_buf_t f, o2;
    ls_buf_init(&f);
    ls_buf_init(&o2);
    CHECK_EQ_INT(write_file(&f, &x, 10, LS_PQ_SNAPPY, 1, 0), LS_OK);
    ls_pq_field_t other[sizeof g_fields / sizeof *g_fields];
    memcpy(other, g_fields, sizeof other);
    other[2].type = LS_PQ_INT32;
    char err[256] = "";
    ls_pq_writer_t *w =
        ls_pq_writer_new(other, sizeof other / sizeof *other, NULL, &o2, err, sizeof err);
    ls_status st;
    ls_pqr_t *r = ls_pqr_open(f.data, f.len, &st, err, sizeof err);
    CHECK(w && r);
    CHECK_EQ_INT(ls_pqr_copy_rows(r, w, err, sizeof err), LS_EINVAL);
    if (!strstr(err, "column i64 is INT64 in the file, INT32 in the writer")) printf("# %s\n", err);
    CHECK(strstr(err, "column i64 is INT64 in the file, INT32 in the writer"));
    ls_pqr_free(r);
    ls_pq_writer_free(w);
    ls_buf_free(&f);
    ls_buf_free(&o2);
    expected_free(&x);
}

/* Copying a file written under an older Iceberg schema into a writer of the
 * evolved one (what rewriting an evolved table's files does): values by
 * field id, int -> long and float -> double widened, a field made optional
 * re-leveled, and added columns null at the level their deepest existing
 * ancestor stops — also a field added inside a list's elements. */
TEST(copy_rows_projects_by_field_id)
{
    static const ls_pq_field_t old_f[] = {
        {"a", LS_PQ_INT32, LS_PQ_REQUIRED, LS_PQ_LT_NONE, 1, 0, 0, 0, 0},
        {"s", LS_PQ_GROUP, LS_PQ_OPTIONAL, LS_PQ_LT_NONE, 2, 1, 0, 0, 0},
        {"x", LS_PQ_FLOAT, LS_PQ_REQUIRED, LS_PQ_LT_NONE, 3, 0, 0, 0, 0},
        {"l", LS_PQ_GROUP, LS_PQ_OPTIONAL, LS_PQ_LT_LIST, 4, 1, 0, 0, 0},
        {"list", LS_PQ_GROUP, LS_PQ_REPEATED, LS_PQ_LT_NONE, -1, 1, 0, 0, 0},
        {"element", LS_PQ_GROUP, LS_PQ_REQUIRED, LS_PQ_LT_NONE, 5, 1, 0, 0, 0},
        {"p", LS_PQ_INT32, LS_PQ_REQUIRED, LS_PQ_LT_NONE, 6, 0, 0, 0, 0},
        {"n", LS_PQ_BYTE_ARRAY, LS_PQ_REQUIRED, LS_PQ_LT_STRING, 7, 0, 0, 0, 0},
    };
    static const ls_pq_field_t new_f[] = {
        {"a", LS_PQ_INT64, LS_PQ_REQUIRED, LS_PQ_LT_NONE, 1, 0, 0, 0, 0},
        {"s", LS_PQ_GROUP, LS_PQ_OPTIONAL, LS_PQ_LT_NONE, 2, 2, 0, 0, 0},
        {"x", LS_PQ_DOUBLE, LS_PQ_REQUIRED, LS_PQ_LT_NONE, 3, 0, 0, 0, 0},
        {"y", LS_PQ_INT64, LS_PQ_OPTIONAL, LS_PQ_LT_NONE, 8, 0, 0, 0, 0},
        {"l", LS_PQ_GROUP, LS_PQ_OPTIONAL, LS_PQ_LT_LIST, 4, 1, 0, 0, 0},
        {"list", LS_PQ_GROUP, LS_PQ_REPEATED, LS_PQ_LT_NONE, -1, 1, 0, 0, 0},
        {"element", LS_PQ_GROUP, LS_PQ_REQUIRED, LS_PQ_LT_NONE, 5, 2, 0, 0, 0},
        {"p", LS_PQ_INT32, LS_PQ_REQUIRED, LS_PQ_LT_NONE, 6, 0, 0, 0, 0},
        {"q", LS_PQ_BYTE_ARRAY, LS_PQ_OPTIONAL, LS_PQ_LT_STRING, 9, 0, 0, 0, 0},
        {"n", LS_PQ_BYTE_ARRAY, LS_PQ_OPTIONAL, LS_PQ_LT_STRING, 7, 0, 0, 0, 0},
        {"z", LS_PQ_INT32, LS_PQ_OPTIONAL, LS_PQ_LT_NONE, 10, 0, 0, 0, 0},
    };
    char err[256] = "";
    ls_buf_t f, o;
    ls_buf_init(&f);
    ls_buf_init(&o);
    ls_pq_writer_t *w = ls_pq_writer_new(old_f, 8, NULL, &f, err, sizeof err);
    CHECK(w != NULL);
    /* {a=1, s={1.5}, l=[{1},{2}], n="x"}, {a=2, s=null, l=null, n="yy"}, {a=3, s={2.5}, l=[],
     * n="z"} */
    ls_pq_put_i32(w, 0, 0, 1), ls_pq_put_float(w, 1, 0, 1.5f), ls_pq_put_i32(w, 2, 0, 1);
    ls_pq_put_i32(w, 2, 1, 2), ls_pq_put_bytes(w, 3, 0, "x", 1);
    CHECK_EQ_INT(ls_pq_end_row(w), LS_OK);
    ls_pq_put_i32(w, 0, 0, 2), ls_pq_put_null(w, 1, 0, 0), ls_pq_put_null(w, 2, 0, 0);
    ls_pq_put_bytes(w, 3, 0, "yy", 2);
    CHECK_EQ_INT(ls_pq_end_row(w), LS_OK);
    ls_pq_put_i32(w, 0, 0, 3), ls_pq_put_float(w, 1, 0, 2.5f), ls_pq_put_null(w, 2, 0, 1);
    ls_pq_put_bytes(w, 3, 0, "z", 1);
    CHECK_EQ_INT(ls_pq_end_row(w), LS_OK);
    CHECK_EQ_INT(ls_pq_writer_finish(w), LS_OK);
    ls_pq_writer_free(w);

    ls_status st;
    ls_pqr_t *r = ls_pqr_open(f.data, f.len, &st, err, sizeof err);
    w = ls_pq_writer_new(new_f, 11, NULL, &o, err, sizeof err);
    CHECK(r && w);
    st = ls_pqr_copy_rows(r, w, err, sizeof err);
    if (st != LS_OK) printf("# %s\n", err);
    CHECK_EQ_INT(st, LS_OK);
    CHECK_EQ_INT(ls_pq_writer_finish(w), LS_OK);
    ls_pq_writer_free(w);
    ls_pqr_free(r);

    /* every column of the copy as "rep/def[=value]" entries */
    static const char *const want[] = {
        "0/0=1 0/0=2 0/0=3",   /* a, widened */
        "0/1=1.5 0/0 0/1=2.5", /* s.x, widened */
        "0/1 0/0 0/1",         /* s.y: null where s is there, else s's null */
        "0/2=1 1/2=2 0/0 0/1", /* l.p */
        "0/2 1/2 0/0 0/1",     /* l.q: null in each element */
        "0/1=x 0/1=yy 0/1=z",  /* n, made optional */
        "0/0 0/0 0/0",         /* z, added */
    };
    r = ls_pqr_open(o.data, o.len, &st, err, sizeof err);
    CHECK(r != NULL);
    for (int c = 0; r && c < 7; c++) {
        ls_pqr_iter_t *it = ls_pqr_iter_new(r, 0, c, &st, err, sizeof err);
        const ls_pqr_elem_t *e = ls_pqr_column(r, c);
        char got[256] = "";
        size_t n = 0;
        ls_pqr_triple_t t;
        while (it && ls_pqr_next(it, &t) == 1) {
            n += (size_t)snprintf(got + n, sizeof got - n, "%s%d/%d", n ? " " : "", t.rep, t.def);
            if (t.def < e->max_def) continue;
            if (e->type == LS_PQ_INT64)
                n += (size_t)snprintf(got + n, sizeof got - n, "=%lld", (long long)t.v.i64);
            else if (e->type == LS_PQ_INT32)
                n += (size_t)snprintf(got + n, sizeof got - n, "=%d", (int)t.v.i32);
            else if (e->type == LS_PQ_DOUBLE)
                n += (size_t)snprintf(got + n, sizeof got - n, "=%g", t.v.f64);
            else
                n += (size_t)snprintf(got + n, sizeof got - n, "=%.*s", (int)t.len, t.bytes);
        }
        ls_pqr_iter_free(it);
        if (strcmp(got, want[c]) != 0) printf("# column %d: got '%s' want '%s'\n", c, got, want[c]);
        CHECK(strcmp(got, want[c]) == 0);
    }
    ls_pqr_free(r);
    /* a file column the writer lacks is refused, never dropped */
    r = ls_pqr_open(o.data, o.len, &st, err, sizeof err);
    ls_buf_t o3;
    ls_buf_init(&o3);
    w = ls_pq_writer_new(new_f, 10, NULL, &o3, err, sizeof err); /* without z */
    CHECK_EQ_INT(ls_pqr_copy_rows(r, w, err, sizeof err), LS_EINVAL);
    CHECK(strstr(err, "the writer has no column z") != NULL);
    ls_pq_writer_free(w);
    ls_pqr_free(r);
    ls_buf_free(&o3);
    ls_buf_free(&f);
    ls_buf_free(&o);
}

/* Skipping n triples then reading on gives the entries from n on, for
 * skips that end inside a page, on a page boundary, or past the chunk. */
/* Skips land on the right triple: whole pages passed unread, and inside a
 * page (columns without repetition) levels and values passed run by run;
 * every leaf (booleans, nulls, plain and dictionary byte arrays, lists),
 * every page codec, with and without dictionaries. */
TEST(skip)
{
    const ls_pq_codec codecs[] = {LS_PQ_UNCOMPRESSED, LS_PQ_SNAPPY, LS_PQ_ZSTD};
    for (int pc = 0; pc < 6; pc++) {
        expected_t x;
        memset(&x, 0, sizeof x);
        ls_buf_t out;
        ls_buf_init(&out);
        CHECK_EQ_INT(write_file(&out, &x, 1500, codecs[pc / 2], pc % 2, pc < 4 ? 1 : 0), LS_OK);
        ls_status st;
        char err[256];
        ls_pqr_t *r = ls_pqr_open(out.data, out.len, &st, err, sizeof err);
        CHECK(r);
        const int cols[] = {2, 5, 6, 7, 0, 1, 3, 4, 8, 9};
        const int64_t skips[] = {0, 1, 7, 8, 9, 63, 64, 65, 200, 333, 100000};
        for (int ci = 0; ci < 10; ci++) {
            int c = cols[ci];
            const ls_pqr_elem_t *e = ls_pqr_column(r, c);
            int64_t nv = ls_pqr_chunk(r, 0, c)->num_values;
            for (size_t si = 0; si < sizeof skips / sizeof *skips; si++) {
                ls_pqr_iter_t *it = ls_pqr_iter_new(r, 0, c, &st, err, sizeof err);
                CHECK(it);
                CHECK_EQ_INT(ls_pqr_skip(it, skips[si]), 0);
                int64_t k = skips[si] < nv ? skips[si] : nv;
                ls_pqr_triple_t t;
                int rc;
                while ((rc = ls_pqr_next(it, &t)) == 1) {
                    const exp_t *want = &x.e[c][k];
                    CHECK(want->rep == t.rep && want->def == t.def);
                    CHECK(t.def < e->max_def || same_value(e->type, want, &t));
                    k++;
                }
                CHECK_EQ_INT(rc, 0);
                CHECK_EQ_INT(k, nv);
                ls_pqr_iter_free(it);
            }
        }
        ls_pqr_free(r);
        ls_buf_free(&out);
        expected_free(&x);
    }
}

/* Recycle mode (two page buffers in turn): every triple still right, and
 * a byte-array view of the previous triple still intact after the next
 * triple was decoded (one page of lookahead is safe), across small pages,
 * every codec, with and without dictionaries. Bulk reads of a required
 * fixed-width column return its values as ls_pqr_next does. */
TEST(recycle_mode_and_bulk_reads)
{
    const ls_pq_codec codecs[] = {LS_PQ_UNCOMPRESSED, LS_PQ_SNAPPY, LS_PQ_GZIP, LS_PQ_ZSTD};
    for (int ci = 0; ci < 4; ci++)
        for (int dict = 0; dict < 2; dict++) {
            expected_t x;
            memset(&x, 0, sizeof x);
            ls_buf_t out;
            ls_buf_init(&out);
            CHECK_EQ_INT(write_file(&out, &x, 1500, codecs[ci], dict, 1), LS_OK);
            ls_status st;
            char err[256];
            ls_pqr_t *r = ls_pqr_open(out.data, out.len, &st, err, sizeof err);
            CHECK(r);
            for (size_t c = 0; c < ls_pqr_num_columns(r); c++) {
                const ls_pqr_elem_t *e = ls_pqr_column(r, (int)c);
                ls_pqr_iter_t *it = ls_pqr_iter_new(r, 0, (int)c, &st, err, sizeof err);
                CHECK(it);
                ls_pqr_iter_recycle(it);
                ls_pqr_triple_t t, prev = {0};
                int64_t k = 0;
                int rc;
                while ((rc = ls_pqr_next(it, &t)) == 1) {
                    const exp_t *want = &x.e[c][k];
                    CHECK(want->rep == t.rep && want->def == t.def);
                    CHECK(t.def < e->max_def || same_value(e->type, want, &t));
                    if (k > 0 && prev.def == e->max_def)
                        CHECK(same_value(e->type, &x.e[c][k - 1], &prev));
                    prev = t;
                    k++;
                }
                CHECK_EQ_INT(rc, 0);
                CHECK_EQ_INT(k, ls_pqr_chunk(r, 0, (int)c)->num_values);
                ls_pqr_iter_free(it);
            }
            /* bulk reads of the required INT64 column (2), in pieces of
             * several sizes mixed with next and skip; refused for an
             * optional one (1) */
            ls_pqr_iter_t *it = ls_pqr_iter_new(r, 0, 2, &st, err, sizeof err);
            CHECK(it);
            int64_t v[700], k = 0, piece = 1, nv = ls_pqr_chunk(r, 0, 2)->num_values;
            CHECK(nv > 16);
            while (k < nv) {
                int64_t got = ls_pqr_read_fixed(it, v, piece);
                CHECK(got == (nv - k < piece ? nv - k : piece));
                for (int64_t i = 0; i < got; i++)
                    CHECK(v[i] == x.e[2][k + i].i);
                k += got;
                ls_pqr_triple_t t;
                if (k < nv && piece % 3 == 0) {
                    CHECK_EQ_INT(ls_pqr_next(it, &t), 1);
                    CHECK(t.v.i64 == x.e[2][k].i);
                    k++;
                } else if (k + 5 < nv && piece % 3 == 1) {
                    CHECK_EQ_INT(ls_pqr_skip(it, 5), 0);
                    k += 5;
                }
                piece = piece * 3 + 1 > 700 ? 7 : piece * 3 + 1;
            }
            CHECK_EQ_INT(ls_pqr_read_fixed(it, v, 10), 0);
            ls_pqr_iter_free(it);
            it = ls_pqr_iter_new(r, 0, 1, &st, err, sizeof err);
            CHECK_EQ_INT(ls_pqr_read_fixed(it, v, 10), -1);
            CHECK_EQ_INT(ls_pqr_iter_status(it), LS_EINVAL);
            ls_pqr_iter_free(it);
            ls_pqr_free(r);
            ls_buf_free(&out);
            expected_free(&x);
        }
}

TEST(thrift_decoder)
{
    ls_buf_t b;
    ls_buf_init(&b);
    ls_tc_t t;
    ls_tc_init(&t, &b);
    ls_tc_i32(&t, 1, -7);
    ls_tc_i64(&t, 40, (int64_t)1 << 50); /* long-form field header */
    ls_tc_bool(&t, 41, 0);
    ls_tc_struct_begin(&t, 42);
    ls_tc_string(&t, 1, "hi");
    ls_tc_struct_end(&t);
    ls_tc_list_begin(&t, 43, LS_TC_I32, 20);
    for (int i = 0; i < 20; i++)
        ls_tc_elem_i32(&t, i - 10);
    ls_tc_i32(&t, 44, 9);
    ls_tc_end(&t);
    ls_tcr_t r;
    ls_tcr_init(&r, b.data, b.len);
    int16_t id;
    CHECK_EQ_INT(ls_tcr_field(&r, &id), LS_TC_I32);
    CHECK_EQ_INT(id, 1);
    CHECK_EQ_INT(ls_tcr_i32(&r), -7);
    CHECK_EQ_INT(ls_tcr_field(&r, &id), LS_TC_I64);
    CHECK_EQ_INT(id, 40);
    CHECK_EQ_INT(ls_tcr_i64(&r), (int64_t)1 << 50);
    CHECK_EQ_INT(ls_tcr_field(&r, &id), LS_TC_BOOL_FALSE);
    CHECK_EQ_INT(ls_tcr_field(&r, &id), LS_TC_STRUCT);
    ls_tcr_skip(&r, LS_TC_STRUCT);
    CHECK_EQ_INT(ls_tcr_field(&r, &id), LS_TC_LIST);
    int elem;
    CHECK_EQ_INT(ls_tcr_list(&r, &elem), 20);
    CHECK_EQ_INT(elem, LS_TC_I32);
    for (int i = 0; i < 20; i++)
        CHECK_EQ_INT(ls_tcr_i32(&r), i - 10);
    CHECK_EQ_INT(ls_tcr_field(&r, &id), LS_TC_I32);
    CHECK_EQ_INT(id, 44); /* delta from 43 after the list */
    CHECK_EQ_INT(ls_tcr_i32(&r), 9);
    CHECK_EQ_INT(ls_tcr_field(&r, &id), 0);
    CHECK(!ls_tcr_failed(&r));
    /* every truncation fails cleanly, with the offset in the message */
    for (size_t n = 0; n + 1 < b.len; n++) {
        ls_tcr_init(&r, b.data, n);
        int ty;
        while ((ty = ls_tcr_field(&r, &id)) != 0)
            ls_tcr_skip(&r, ty);
        CHECK(ls_tcr_failed(&r));
        CHECK(strstr(r.err, "at byte"));
    }
    /* a list claiming more elements than bytes left */
    const uint8_t huge[] = {0x19, 0xf5, 0xff, 0xff, 0xff, 0xff, 0x0f};
    ls_tcr_init(&r, huge, sizeof huge);
    CHECK_EQ_INT(ls_tcr_field(&r, &id), LS_TC_LIST);
    CHECK_EQ_INT(ls_tcr_list(&r, &elem), 0);
    CHECK(ls_tcr_failed(&r) && strstr(r.err, "container larger"));
    /* structs nested past the bound */
    uint8_t deep[64];
    memset(deep, 0x1c, sizeof deep);
    ls_tcr_init(&r, deep, sizeof deep);
    CHECK_EQ_INT(ls_tcr_field(&r, &id), LS_TC_STRUCT);
    ls_tcr_skip(&r, LS_TC_STRUCT);
    CHECK(ls_tcr_failed(&r) && strstr(r.err, "nested too deep"));
    ls_buf_free(&b);
}

/* ---- hand-built files: what our writer never emits ---------------------- */

/* One required INT32 column "x", one row group, a single data page whose
 * body is `body` (already in the page's final form), header per `page_type`
 * (0 v1, 3 v2) with `encoding`, and chunk codec `codec`. */
static void build_file_rows(ls_buf_t *out, int page_type, int encoding, int codec, int32_t nvals,
                            int64_t rows, const uint8_t *body, size_t blen, int32_t usize)
{
    ls_buf_append(out, "PAR1", 4);
    ls_buf_t hdr;
    ls_buf_init(&hdr);
    ls_tc_t t;
    ls_tc_init(&t, &hdr);
    ls_tc_i32(&t, 1, page_type);
    ls_tc_i32(&t, 2, usize);
    ls_tc_i32(&t, 3, (int32_t)blen);
    if (page_type == 0) {
        ls_tc_struct_begin(&t, 5);
        ls_tc_i32(&t, 1, nvals);
        ls_tc_i32(&t, 2, encoding);
        ls_tc_i32(&t, 3, 3);
        ls_tc_i32(&t, 4, 3);
    } else {
        ls_tc_struct_begin(&t, 8);
        ls_tc_i32(&t, 1, nvals);
        ls_tc_i32(&t, 2, 0);
        ls_tc_i32(&t, 3, nvals);
        ls_tc_i32(&t, 4, encoding);
        ls_tc_i32(&t, 5, 0);
        ls_tc_i32(&t, 6, 0);
        ls_tc_bool(&t, 7, 0);
    }
    ls_tc_struct_end(&t);
    ls_tc_end(&t);
    int64_t at = (int64_t)out->len;
    ls_buf_append(out, hdr.data, hdr.len);
    ls_buf_append(out, body, blen);
    int64_t csize = (int64_t)(hdr.len + blen);
    ls_buf_t meta;
    ls_buf_init(&meta);
    ls_tc_init(&t, &meta);
    ls_tc_i32(&t, 1, 2);
    ls_tc_list_begin(&t, 2, LS_TC_STRUCT, 2);
    ls_tc_elem_struct_begin(&t);
    ls_tc_string(&t, 4, "schema");
    ls_tc_i32(&t, 5, 1);
    ls_tc_struct_end(&t);
    ls_tc_elem_struct_begin(&t);
    ls_tc_i32(&t, 1, LS_PQ_INT32);
    ls_tc_i32(&t, 3, LS_PQ_REQUIRED);
    ls_tc_string(&t, 4, "x");
    ls_tc_struct_end(&t);
    ls_tc_i64(&t, 3, rows);
    ls_tc_list_begin(&t, 4, LS_TC_STRUCT, 1);
    ls_tc_elem_struct_begin(&t);
    ls_tc_list_begin(&t, 1, LS_TC_STRUCT, 1);
    ls_tc_elem_struct_begin(&t);
    ls_tc_i64(&t, 2, at);
    ls_tc_struct_begin(&t, 3);
    ls_tc_i32(&t, 1, LS_PQ_INT32);
    ls_tc_list_begin(&t, 2, LS_TC_I32, 1);
    ls_tc_elem_i32(&t, encoding);
    ls_tc_list_begin(&t, 3, LS_TC_BINARY, 1);
    ls_tc_elem_binary(&t, "x", 1);
    ls_tc_i32(&t, 4, codec);
    ls_tc_i64(&t, 5, nvals);
    ls_tc_i64(&t, 6, csize);
    ls_tc_i64(&t, 7, csize);
    ls_tc_i64(&t, 9, at);
    ls_tc_struct_end(&t);
    ls_tc_struct_end(&t);
    ls_tc_i64(&t, 2, csize);
    ls_tc_i64(&t, 3, rows);
    ls_tc_struct_end(&t);
    ls_tc_end(&t);
    ls_buf_append(out, meta.data, meta.len);
    uint8_t l[4] = {(uint8_t)meta.len, (uint8_t)(meta.len >> 8), (uint8_t)(meta.len >> 16),
                    (uint8_t)(meta.len >> 24)};
    ls_buf_append(out, l, 4);
    ls_buf_append(out, "PAR1", 4);
    ls_buf_free(&hdr);
    ls_buf_free(&meta);
}

static void build_file(ls_buf_t *out, int page_type, int encoding, int codec, int32_t nvals,
                       const uint8_t *body, size_t blen, int32_t usize)
{
    build_file_rows(out, page_type, encoding, codec, nvals, nvals, body, blen, usize);
}

/* Reads column 0 of row group 0; returns the status, values in v. */
static ls_status read_x(const ls_buf_t *f, int32_t *v, int max, int *n, char *err, size_t errlen)
{
    ls_status st;
    *n = 0;
    ls_pqr_t *r = ls_pqr_open(f->data, f->len, &st, err, errlen);
    if (!r) return st;
    ls_pqr_iter_t *it = ls_pqr_iter_new(r, 0, 0, &st, err, errlen);
    if (it) {
        ls_pqr_triple_t t;
        int rc;
        while ((rc = ls_pqr_next(it, &t)) == 1)
            if (*n < max) v[(*n)++] = t.v.i32;
        st = ls_pqr_iter_status(it);
        if (rc < 0) snprintf(err, errlen, "%s", ls_pqr_iter_error(it));
        ls_pqr_iter_free(it);
    }
    ls_pqr_free(r);
    return st;
}

TEST(data_page_v2_and_refusals)
{
    const uint8_t plain[] = {1, 0, 0, 0, 0xfe, 0xff, 0xff, 0xff, 3, 0, 0, 0};
    ls_buf_t f;
    ls_buf_init(&f);
    int32_t v[8];
    int n;
    char err[256] = "";
    build_file(&f, 3, 0, LS_PQ_UNCOMPRESSED, 3, plain, sizeof plain, sizeof plain);
    CHECK_EQ_INT(read_x(&f, v, 8, &n, err, sizeof err), LS_OK);
    CHECK(n == 3 && v[0] == 1 && v[1] == -2 && v[2] == 3);
    /* v1 page, PLAIN: the same values */
    f.len = 0;
    build_file(&f, 0, 0, LS_PQ_UNCOMPRESSED, 3, plain, sizeof plain, sizeof plain);
    CHECK_EQ_INT(read_x(&f, v, 8, &n, err, sizeof err), LS_OK);
    CHECK(n == 3 && v[1] == -2);
    /* refused encodings name themselves */
    const int encs[] = {5, 6, 7, 9};
    const char *names[] = {"DELTA_BINARY_PACKED", "DELTA_LENGTH_BYTE_ARRAY", "DELTA_BYTE_ARRAY",
                           "BYTE_STREAM_SPLIT"};
    for (int i = 0; i < 4; i++) {
        f.len = 0;
        build_file(&f, i % 2 ? 3 : 0, encs[i], LS_PQ_UNCOMPRESSED, 3, plain, sizeof plain,
                   sizeof plain);
        CHECK_EQ_INT(read_x(&f, v, 8, &n, err, sizeof err), LS_EINVAL);
        CHECK(strstr(err, names[i]) && strstr(err, "not supported"));
    }
    /* refused codecs name themselves, before any page is read */
    const int codecs[] = {3, 4, 5, 7};
    const char *cnames[] = {"LZO", "BROTLI", "LZ4", "LZ4_RAW"};
    for (int i = 0; i < 4; i++) {
        f.len = 0;
        build_file(&f, 0, 0, codecs[i], 3, plain, sizeof plain, sizeof plain);
        CHECK_EQ_INT(read_x(&f, v, 8, &n, err, sizeof err), LS_EINVAL);
        CHECK(strstr(err, cnames[i]) && strstr(err, "codec"));
    }
    /* a page whose values run short is corrupt, not zero-filled */
    f.len = 0;
    build_file(&f, 0, 0, LS_PQ_UNCOMPRESSED, 4, plain, sizeof plain, sizeof plain);
    CHECK_EQ_INT(read_x(&f, v, 8, &n, err, sizeof err), LS_ECORRUPT);
    CHECK(strstr(err, "column x") && strstr(err, "values run short"));
    /* a required column whose value count is not the row count */
    f.len = 0;
    build_file_rows(&f, 0, 0, LS_PQ_UNCOMPRESSED, 3, 2, plain, sizeof plain, sizeof plain);
    CHECK_EQ_INT(read_x(&f, v, 8, &n, err, sizeof err), LS_ECORRUPT);
    CHECK(strstr(err, "column x has 3 values for 2 rows"));
    /* an absurd row count */
    f.len = 0;
    build_file_rows(&f, 0, 0, LS_PQ_UNCOMPRESSED, 3, INT64_MAX, plain, sizeof plain, sizeof plain);
    CHECK_EQ_INT(read_x(&f, v, 8, &n, err, sizeof err), LS_ECORRUPT);
    /* an encrypted footer is refused by name */
    f.data[f.len - 1] = 'E';
    CHECK_EQ_INT(read_x(&f, v, 8, &n, err, sizeof err), LS_EINVAL);
    CHECK(strstr(err, "encrypted"));
    ls_buf_free(&f);
}

/* ---- corrupt and truncated files --------------------------------------- */

static volatile uint8_t g_sink;

/* Opens and reads everything; returns 1 when the whole file read cleanly,
 * 0 when it failed with a message. */
static int read_all(const uint8_t *p, size_t n)
{
    ls_status st;
    char err[256] = "";
    ls_pqr_t *r = ls_pqr_open(p, n, &st, err, sizeof err);
    if (!r) return st != LS_OK && err[0] ? 0 : -1;
    int clean = 1;
    for (int g = 0; g < ls_pqr_num_row_groups(r); g++)
        for (size_t c = 0; c < ls_pqr_num_columns(r); c++) {
            ls_pqr_iter_t *it = ls_pqr_iter_new(r, g, (int)c, &st, err, sizeof err);
            if (!it) {
                clean = 0;
                continue;
            }
            ls_pqr_triple_t t;
            int rc;
            while ((rc = ls_pqr_next(it, &t)) == 1)
                if (t.bytes && t.len) g_sink ^= t.bytes[t.len - 1]; /* ASan checks the view */
            if (rc < 0) {
                if (!ls_pqr_iter_error(it)[0])
                    clean = -1;
                else
                    clean = 0;
            }
            ls_pqr_iter_free(it);
        }
    /* the row cursor over all columns agrees with the iterators */
    for (int g = 0; g < ls_pqr_num_row_groups(r); g++) {
        ls_pqr_rows_t *rs = ls_pqr_rows_new(r, g, NULL, 0, &st, err, sizeof err);
        if (!rs) continue;
        int rc;
        while ((rc = ls_pqr_rows_next(rs)) == 1)
            ;
        if (rc < 0) clean = ls_pqr_rows_error(rs)[0] ? 0 : -1; /* e.g. a flipped level */
        ls_pqr_rows_free(rs);
    }
    ls_pqr_free(r);
    return clean;
}

TEST(corrupt_and_truncated_files_fail_cleanly)
{
    expected_t x;
    memset(&x, 0, sizeof x);
    ls_buf_t f;
    ls_buf_init(&f);
    CHECK_EQ_INT(write_file(&f, &x, 60, LS_PQ_SNAPPY, 1, 1), LS_OK);
    expected_free(&x);
    CHECK_EQ_INT(read_all(f.data, f.len), 1);
    uint8_t *copy = ls_malloc(f.len + 8);
    /* the file cut at every length (its own buffer, so ASan sees any
     * read past the end) */
    for (size_t n = 0; n < f.len; n++) {
        uint8_t *cut = ls_malloc(n ? n : 1);
        memcpy(cut, f.data, n);
        CHECK_EQ_INT(read_all(cut, n), 0);
        ls_free(cut);
    }
    /* the footer cut at every offset, length and magic fixed up */
    uint32_t flen;
    memcpy(&flen, f.data + f.len - 8, 4);
    size_t fat = f.len - 8 - flen;
    for (size_t k = 0; k < flen; k++) {
        memcpy(copy, f.data, fat + k);
        uint32_t l = (uint32_t)k;
        memcpy(copy + fat + k, &l, 4);
        memcpy(copy + fat + k + 4, "PAR1", 4);
        CHECK(read_all(copy, fat + k + 8) <= 0);
    }
    /* every byte flipped, one at a time; data bytes may decode to other
     * values, but nothing crashes and every failure has a message */
    for (size_t i = 0; i < f.len; i++) {
        memcpy(copy, f.data, f.len);
        copy[i] ^= (uint8_t)(i % 7 == 0 ? 0x80 : 0xff);
        CHECK(read_all(copy, f.len) >= 0);
        copy[i] = (uint8_t)(f.data[i] + 1);
        CHECK(read_all(copy, f.len) >= 0);
    }
    ls_free(copy);
    ls_buf_free(&f);
}

/* ---- speed -------------------------------------------------------------- */

/* One large file (raw-table-like rows, zstd) read whole: prints MB/s of
 * file bytes and rows/s, so callers can plan on it. */
TEST(read_speed)
{
    const ls_pq_field_t fields[] = {
        {"partition", LS_PQ_INT32, LS_PQ_REQUIRED, LS_PQ_LT_NONE, 1, 0, 0, 0, 0},
        {"offset", LS_PQ_INT64, LS_PQ_REQUIRED, LS_PQ_LT_NONE, 2, 0, 0, 0, 0},
        {"timestamp", LS_PQ_INT64, LS_PQ_REQUIRED, LS_PQ_LT_TIMESTAMP_US_UTC, 3, 0, 0, 0, 0},
        {"key", LS_PQ_BYTE_ARRAY, LS_PQ_OPTIONAL, LS_PQ_LT_NONE, 4, 0, 0, 0, 0},
        {"value", LS_PQ_BYTE_ARRAY, LS_PQ_OPTIONAL, LS_PQ_LT_NONE, 5, 0, 0, 0, 0},
    };
    ls_pq_opts_t o;
    ls_pq_opts_init(&o);
    o.codec = LS_PQ_ZSTD;
    ls_buf_t out;
    ls_buf_init(&out);
    char err[256] = "";
    ls_pq_writer_t *w = ls_pq_writer_new(fields, 5, &o, &out, err, sizeof err);
    CHECK(w);
    const int rows = 400000;
    uint8_t val[200];
    uint64_t seed = 1;
    for (int i = 0; i < rows; i++) {
        char key[16];
        int kn = snprintf(key, sizeof key, "key-%d", i % 1000);
        for (size_t k = 0; k < sizeof val; k++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            val[k] = (uint8_t)('a' + (seed >> 60)); /* 16 letters: compressible like text */
        }
        ls_pq_put_i32(w, 0, 0, 3);
        ls_pq_put_i64(w, 1, 0, i);
        ls_pq_put_i64(w, 2, 0, 1700000000000000 + (int64_t)i * 1000);
        ls_pq_put_bytes(w, 3, 0, key, (size_t)kn);
        ls_pq_put_bytes(w, 4, 0, val, sizeof val);
        CHECK_EQ_INT(ls_pq_end_row(w), LS_OK);
    }
    CHECK_EQ_INT(ls_pq_writer_finish(w), LS_OK);
    ls_pq_writer_free(w);
    struct timespec t0, t1, c0, c1; /* wall and CPU time (the machine is shared) */
    clock_gettime(CLOCK_MONOTONIC, &t0);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
    ls_status st;
    ls_pqr_t *r = ls_pqr_open(out.data, out.len, &st, err, sizeof err);
    CHECK(r);
    int64_t n = 0, sum = 0, bytes = 0;
    for (int g = 0; g < ls_pqr_num_row_groups(r); g++)
        for (int c = 0; c < 5; c++) {
            ls_pqr_iter_t *it = ls_pqr_iter_new(r, g, c, &st, err, sizeof err);
            CHECK(it);
            ls_pqr_triple_t t;
            while (ls_pqr_next(it, &t) == 1) {
                n++;
                sum += c == 1 ? t.v.i64 : 0;
                bytes += t.len;
            }
            CHECK_EQ_INT(ls_pqr_iter_status(it), LS_OK);
            ls_pqr_iter_free(it);
        }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
    /* skipping all but the last row of every chunk passes pages over
     * unread: far cheaper than reading them */
    struct timespec k0, k1;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &k0);
    for (int g = 0; g < ls_pqr_num_row_groups(r); g++)
        for (int c = 0; c < 5; c++) {
            ls_pqr_iter_t *it = ls_pqr_iter_new(r, g, c, &st, err, sizeof err);
            CHECK(it);
            CHECK_EQ_INT(ls_pqr_skip(it, ls_pqr_rg_num_rows(r, g) - 1), 0);
            ls_pqr_triple_t t;
            CHECK_EQ_INT(ls_pqr_next(it, &t), 1);
            if (c == 1) CHECK_EQ_INT(t.v.i64, rows - 1);
            ls_pqr_iter_free(it);
        }
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &k1);
    double skip_s = (double)(k1.tv_sec - k0.tv_sec) + (double)(k1.tv_nsec - k0.tv_nsec) / 1e9;
    ls_pqr_free(r);
    double wall = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    double s = (double)(c1.tv_sec - c0.tv_sec) + (double)(c1.tv_nsec - c0.tv_nsec) / 1e9;
    CHECK_EQ_INT(n, (int64_t)rows * 5);
    CHECK_EQ_INT(sum, (int64_t)rows * (rows - 1) / 2);
    printf("read_speed: %.1f MB file, %.1f MB of values, %d rows in %.3f s CPU (%.3f s wall): "
           "%.0f MB/s file, %.0f MB/s values, %.2f M rows/s per CPU second\n",
           out.len / 1e6, (bytes + (double)rows * 20) / 1e6, rows, s, wall, out.len / 1e6 / s,
           (bytes + (double)rows * 20) / 1e6 / s, rows / 1e6 / s);
    printf("read_speed: skipping to the last row of every chunk: %.4f s CPU\n", skip_s);
    CHECK(skip_s * 4 < s);
    ls_buf_free(&out);
}

/* ---- JSON-lines dump for the pyarrow comparison ------------------------- */

static void hex(FILE *o, const uint8_t *p, size_t n)
{
    fputc('"', o);
    for (size_t i = 0; i < n; i++)
        fprintf(o, "%02x", p[i]);
    fputc('"', o);
}

static void json_str(FILE *o, const char *s)
{
    fputc('"', o);
    for (; *s; s++)
        if (*s == '"' || *s == '\\' || (unsigned char)*s < 0x20)
            fprintf(o, "\\u%04x", (unsigned char)*s);
        else
            fputc(*s, o);
    fputc('"', o);
}

static void dump_value(FILE *o, int type, const ls_pqr_triple_t *t)
{
    switch (type) {
    case LS_PQ_BOOLEAN: fprintf(o, "%d", t->v.boolean); break;
    case LS_PQ_INT32: fprintf(o, "%d", t->v.i32); break;
    case LS_PQ_INT64: fprintf(o, "%lld", (long long)t->v.i64); break;
    case LS_PQ_FLOAT: hex(o, (const uint8_t *)&t->v.f32, 4); break;
    case LS_PQ_DOUBLE: hex(o, (const uint8_t *)&t->v.f64, 8); break;
    default: hex(o, t->bytes, t->len);
    }
}

/* Dumps one file; a refusal or corruption is a line {"error", "status"}. */
static void dump_file(const char *path, FILE *o)
{
    FILE *f = fopen(path, "rb");
    ls_buf_t b;
    ls_buf_init(&b);
    uint8_t tmp[65536];
    size_t n;
    while (f && (n = fread(tmp, 1, sizeof tmp, f)) > 0)
        ls_buf_append(&b, tmp, n);
    if (f) fclose(f);
    ls_status st;
    char err[256];
    ls_pqr_t *r = ls_pqr_open(b.data, b.len, &st, err, sizeof err);
    if (!r) {
        fprintf(o, "{\"error\": ");
        json_str(o, err);
        fprintf(o, ", \"status\": \"%s\"}\n", ls_status_str(st));
        ls_buf_free(&b);
        return;
    }
    fprintf(o, "{\"rows\": %lld, \"schema\": [", (long long)ls_pqr_num_rows(r));
    for (size_t i = 0; i < ls_pqr_num_elems(r); i++) {
        const ls_pqr_elem_t *e = ls_pqr_elem(r, i);
        fprintf(o, "%s{\"name\": ", i ? ", " : "");
        json_str(o, e->name);
        fprintf(o, ", \"path\": ");
        json_str(o, e->path);
        fprintf(o,
                ", \"type\": %d, \"repetition\": %d, \"logical\": %d, \"logical_id\": %d, "
                "\"field_id\": %d, \"nchildren\": %d, \"max_def\": %d, \"max_rep\": %d, "
                "\"column\": %d}",
                e->type, (int)e->repetition, (int)e->logical, e->logical_id, e->field_id,
                e->nchildren, e->max_def, e->max_rep, e->column);
    }
    fprintf(o, "]}\n");
    for (int g = 0; g < ls_pqr_num_row_groups(r); g++)
        for (size_t c = 0; c < ls_pqr_num_columns(r); c++) {
            const ls_pqr_chunk_t *k = ls_pqr_chunk(r, g, (int)c);
            int type = ls_pqr_column(r, (int)c)->type;
            fprintf(o, "{\"rg\": %d, \"rg_rows\": %lld, \"col\": %zu, \"codec\": %d", g,
                    (long long)ls_pqr_rg_num_rows(r, g), c, k->codec);
            if (k->stats.has_null_count)
                fprintf(o, ", \"null_count\": %lld", (long long)k->stats.null_count);
            if (k->stats.has_min) fprintf(o, ", \"min\": "), hex(o, k->stats.min, k->stats.min_len);
            if (k->stats.has_max) fprintf(o, ", \"max\": "), hex(o, k->stats.max, k->stats.max_len);
            ls_pqr_iter_t *it = ls_pqr_iter_new(r, g, (int)c, &st, err, sizeof err);
            if (!it) {
                fprintf(o, ", \"error\": ");
                json_str(o, err);
                fprintf(o, ", \"status\": \"%s\"}\n", ls_status_str(st));
                continue;
            }
            int max_def = ls_pqr_column(r, (int)c)->max_def;
            fprintf(o, ", \"t\": [");
            ls_pqr_triple_t t;
            int rc;
            for (int i = 0; (rc = ls_pqr_next(it, &t)) == 1; i++) {
                fprintf(o, "%s[%d, %d, ", i ? ", " : "", t.rep, t.def);
                if (t.def == max_def)
                    dump_value(o, type, &t);
                else
                    fprintf(o, "null");
                fputc(']', o);
            }
            fputc(']', o);
            if (rc < 0) {
                fprintf(o, ", \"error\": ");
                json_str(o, ls_pqr_iter_error(it));
                fprintf(o, ", \"status\": \"%s\"", ls_status_str(ls_pqr_iter_status(it)));
            }
            fprintf(o, "}\n");
            ls_pqr_iter_free(it);
        }
    ls_pqr_free(r);
    ls_buf_free(&b);
}

static int dump_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) {
        printf("FAIL dump: cannot open %s\n", dir);
        return 1;
    }
    struct dirent *de;
    int n = 0;
    while ((de = readdir(d)) != NULL) {
        size_t len = strlen(de->d_name);
        if (len < 8 || strcmp(de->d_name + len - 8, ".parquet") != 0) continue;
        char in[4096], out[4200];
        snprintf(in, sizeof in, "%s/%s", dir, de->d_name);
        snprintf(out, sizeof out, "%s.jsonl", in);
        FILE *o = fopen(out, "w");
        if (!o) {
            printf("FAIL dump: cannot write %s\n", out);
            closedir(d);
            return 1;
        }
        dump_file(in, o);
        fclose(o);
        n++;
    }
    closedir(d);
    printf("dumped %d files\n", n);
    return 0;
}

int main(void)
{
    const char *dump = getenv("LS_PQR_DUMP");
    if (dump) return dump_dir(dump);
    RUN(thrift_decoder);
    RUN(round_trip_every_codec_dict_and_plain);
    RUN(schema_row_groups_and_stats);
    RUN(flat_columns);
    RUN(row_cursor);
    RUN(skip);
    RUN(recycle_mode_and_bulk_reads);
    RUN(copy_rows_rewrites_small_files_exactly);
    RUN(copy_rows_projects_by_field_id);
    RUN(data_page_v2_and_refusals);
    RUN(corrupt_and_truncated_files_fail_cleanly);
    RUN(read_speed);
    UNIT_DONE();
}
