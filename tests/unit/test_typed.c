/* table/iceberg_typed.c: the shape an Avro schema gives a table (Iceberg
 * JSON, Parquet fields, refusals with the path), shredding datums — every
 * truncation and many corruptions of a valid datum are refused whole, never
 * a crash and never a partial row — and schema evolution: which writer
 * schemas fit, which evolve the table (ids kept, new ones fresh) and which
 * are refused. Reading the rows back is
 * tests/integration/test_typed_tables.py (PyIceberg, DuckDB). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "registry/avro.h"
#include "table/iceberg_typed.h"
#include "table/parquet_reader.h"
#include "unit.h"

static ls_avro_schema_t *parse(const char *text)
{
    char err[256];
    ls_avro_schema_t *s = ls_avro_parse(NULL, 0, text, strlen(text), err, sizeof err);
    if (!s) printf("# avro: %s\n", err);
    return s;
}

static const char ORDER[] =
    "{\"type\":\"record\",\"name\":\"O\",\"fields\":["
    "{\"name\":\"id\",\"type\":\"long\"},"
    "{\"name\":\"note\",\"type\":[\"null\",\"string\"]},"
    "{\"name\":\"tags\",\"type\":{\"type\":\"array\",\"items\":\"string\"}},"
    "{\"name\":\"m\",\"type\":{\"type\":\"map\",\"values\":[\"null\",\"int\"]}},"
    "{\"name\":\"e\",\"type\":{\"type\":\"enum\",\"name\":\"E\",\"symbols\":[\"A\",\"B\"]}},"
    "{\"name\":\"s\",\"type\":{\"type\":\"record\",\"name\":\"S\",\"fields\":["
    "{\"name\":\"x\",\"type\":\"double\"},{\"name\":\"ok\",\"type\":\"boolean\"}]}}]}";

/* A datum of ORDER: id=-3, note="hi", tags=["a","bc"], m={"k":7}, e=B, s={1.5,true} */
static const uint8_t DATUM[] = {
    0x05,                                          /* id -3 */
    0x02, 0x04, 'h', 'i',                          /* note: branch 1, "hi" */
    0x04, 0x02, 'a', 0x04, 'b',  'c',  0x00,       /* tags: block of 2, end */
    0x02, 0x02, 'k', 0x02, 0x0e, 0x00,             /* m: block of 1: "k" -> branch 1, 7; end */
    0x02,                                          /* e: index 1 */
    0,    0,    0,   0,    0,    0,    0xf8, 0x3f, /* s.x 1.5 */
    0x01,                                          /* s.ok */
};

TEST(shape_of_a_record)
{
    ls_avro_schema_t *a = parse(ORDER);
    CHECK(a != NULL);
    char err[256] = "";
    ls_typed_shape_t *s = ls_typed_shape_new(ls_avro_root(a), err, sizeof err);
    CHECK(s != NULL);
    const char *j = ls_typed_iceberg_schema_json(s);
    CHECK(strstr(j, "{\"id\":10,\"name\":\"id\",\"required\":true,\"type\":\"long\"}") != NULL);
    CHECK(strstr(j, "\"name\":\"note\",\"required\":false,\"type\":\"string\"") != NULL);
    CHECK(strstr(j, "\"type\":\"map\",\"key-id\":") != NULL);
    CHECK(strstr(j, "\"value-required\":false") != NULL);
    CHECK(strstr(j, "\"element-required\":true") != NULL);
    size_t n;
    const ls_pq_field_t *f = ls_typed_parquet_fields(s, &n);
    CHECK(n > 10 && !strcmp(f[0].name, "_kafka_partition"));
    ls_typed_shape_free(s);
    ls_avro_free(a);
}

TEST(refusals_name_the_path)
{
    const struct {
        const char *schema, *want;
    } cases[] = {
        {"\"long\"", "must be a record"},
        {"{\"type\":\"record\",\"name\":\"R\",\"fields\":[{\"name\":\"_kafka_x\",\"type\":\"int\"}]"
         "}",
         "/_kafka_x: field names starting with _kafka_"},
        {"{\"type\":\"record\",\"name\":\"R\",\"fields\":[{\"name\":\"u\",\"type\":[\"int\","
         "\"string\"]}]}",
         "/u: a union other than"},
        {"{\"type\":\"record\",\"name\":\"R\",\"fields\":[{\"name\":\"d\",\"type\":{\"type\":"
         "\"bytes\",\"logicalType\":\"decimal\",\"precision\":9,\"scale\":2}}]}",
         "/d: Avro bytes with logical type decimal is not mapped"},
        {"{\"type\":\"record\",\"name\":\"R\",\"fields\":[{\"name\":\"l\",\"type\":{\"type\":"
         "\"array\",\"items\":{\"type\":\"fixed\",\"name\":\"F\",\"size\":4}}}]}",
         "/l/items: Avro fixed is not mapped"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ls_avro_schema_t *a = parse(cases[i].schema);
        CHECK(a != NULL);
        if (!a) continue;
        char err[256] = "";
        ls_typed_shape_t *s = ls_typed_shape_new(ls_avro_root(a), err, sizeof err);
        CHECK(s == NULL);
        if (!strstr(err, cases[i].want)) printf("# case %zu: got '%s'\n", i, err);
        CHECK(strstr(err, cases[i].want) != NULL);
        ls_typed_shape_free(s);
        ls_avro_free(a);
    }
}

static ls_status write_one(const ls_typed_shape_t *s, const ls_typed_reader_t *rd, const uint8_t *d,
                           size_t len, char *err, size_t errlen, ls_buf_t *out)
{
    size_t n;
    const ls_pq_field_t *f = ls_typed_parquet_fields(s, &n);
    char werr[256];
    ls_pq_writer_t *w = ls_pq_writer_new(f, n, NULL, out, werr, sizeof werr);
    if (!w) {
        snprintf(err, errlen, "%s", werr);
        return LS_EINVAL;
    }
    ls_raw_record_t r = {
        .partition = 1, .offset = 2, .timestamp_ms = 3, .key_len = -1, .value_len = -1};
    ls_status st = ls_typed_write(rd, w, &r, d, len, err, errlen);
    /* a refused datum left nothing behind: the next row is whole */
    if (st == LS_ECORRUPT) {
        char e2[256];
        if (ls_typed_write(rd, w, &r, DATUM, sizeof DATUM, e2, sizeof e2) != LS_OK) {
            printf("# the row after a refused one: %s\n", e2);
            st = LS_EINVAL;
        }
    }
    if (ls_pq_writer_finish(w) != LS_OK) {
        printf("# finish: %s\n", ls_pq_error(w));
        st = LS_EINVAL;
    }
    ls_pq_writer_free(w);
    return st;
}

TEST(datums_whole_or_refused)
{
    ls_avro_schema_t *a = parse(ORDER);
    char err[256];
    ls_typed_shape_t *s = ls_typed_shape_new(ls_avro_root(a), err, sizeof err);
    CHECK(s != NULL);
    ls_typed_reader_t *rd = NULL;
    CHECK_EQ_INT(ls_typed_reader_new(s, ls_avro_root(a), &rd, err, sizeof err), LS_OK);
    ls_buf_t out;
    ls_buf_init(&out);
    CHECK_EQ_INT(write_one(s, rd, DATUM, sizeof DATUM, err, sizeof err, &out), LS_OK);
    /* every proper prefix is refused, and so are trailing bytes */
    for (size_t cut = 0; cut < sizeof DATUM; cut++) {
        out.len = 0;
        ls_status st = write_one(s, rd, DATUM, cut, err, sizeof err, &out);
        if (st != LS_ECORRUPT) printf("# cut at %zu: status %d\n", cut, (int)st);
        CHECK_EQ_INT(st, LS_ECORRUPT);
    }
    uint8_t longer[sizeof DATUM + 1];
    memcpy(longer, DATUM, sizeof DATUM);
    longer[sizeof DATUM] = 0;
    out.len = 0;
    CHECK_EQ_INT(write_one(s, rd, longer, sizeof longer, err, sizeof err, &out), LS_ECORRUPT);
    CHECK(strstr(err, "bytes left over") != NULL);
    /* corruptions: either a row or a refusal, never a crash (ASan build) */
    srand(7);
    for (int k = 0; k < 3000; k++) {
        uint8_t d[sizeof DATUM];
        memcpy(d, DATUM, sizeof d);
        d[rand() % sizeof d] ^= (uint8_t)(1 + rand() % 255);
        out.len = 0;
        ls_status st = write_one(s, rd, d, sizeof d, err, sizeof err, &out);
        CHECK(st == LS_OK || st == LS_ECORRUPT);
    }
    ls_buf_free(&out);
    ls_typed_reader_free(rd);
    ls_typed_shape_free(s);
    ls_avro_free(a);
}

#define REC(fields) "{\"type\":\"record\",\"name\":\"R\",\"fields\":[" fields "]}"
#define F(name, type) "{\"name\":\"" name "\",\"type\":" type "}"
static const char V1[] = REC(F("id", "\"int\"") "," F("name", "\"string\"") "," F(
    "p", "{\"type\":\"record\",\"name\":\"P\",\"fields\":[" F("x", "\"float\"") "]}"));
/* v2: an optional field, and a field inside the nested record */
static const char V2[] = REC(F("id", "\"int\"") "," F("name", "\"string\"") "," F(
    "p", "{\"type\":\"record\",\"name\":\"P\",\"fields\":[" F("x", "\"float\"") "," F(
             "y", "\"long\"") "]}") "," F("note", "[\"null\",\"string\"]"));
/* v3: id widened to long, p.x to double; name left out */
static const char V3[] = REC(F("id", "\"long\"") "," F(
    "p", "{\"type\":\"record\",\"name\":\"P\",\"fields\":[" F("x", "\"double\"") "," F(
             "y", "\"long\"") "]}") "," F("note", "[\"null\",\"string\"]"));

/* The writer schema text into shape s: the reader status, and the evolved
 * shape when the table must evolve (NULL otherwise). */
static ls_status fit(const ls_typed_shape_t *s, const char *text, ls_typed_shape_t **evolved,
                     char *err, size_t errlen)
{
    *evolved = NULL;
    ls_avro_schema_t *a = parse(text);
    ls_typed_reader_t *rd = NULL;
    ls_status st = ls_typed_reader_new(s, ls_avro_root(a), &rd, err, errlen);
    ls_typed_reader_free(rd);
    if (st == LS_ECONFLICT && ls_typed_evolve(s, ls_avro_root(a), evolved, err, errlen) == LS_OK) {
        /* the evolved shape takes the writer as it is */
        if (ls_typed_reader_new(*evolved, ls_avro_root(a), &rd, err, errlen) != LS_OK) {
            printf("# the evolved shape does not take the writer: %s\n", err);
            st = LS_EINVAL;
        }
        ls_typed_reader_free(rd);
    }
    ls_avro_free(a);
    return st;
}

static bool has(const ls_typed_shape_t *s, const char *part)
{
    if (strstr(ls_typed_iceberg_schema_json(s), part)) return true;
    printf("# missing %s in %s\n", part, ls_typed_iceberg_schema_json(s));
    return false;
}

TEST(evolution_keeps_ids_and_adds_fresh_ones)
{
    ls_avro_schema_t *a = parse(V1);
    char err[512] = "";
    ls_typed_shape_t *s1 = ls_typed_shape_new(ls_avro_root(a), err, sizeof err), *s2, *s3, *x;
    ls_avro_free(a);
    /* id 10, name 11, p 12, p.x 13 */
    CHECK_EQ_INT(ls_typed_last_column_id(s1), 13);
    CHECK_EQ_INT(fit(s1, V1, &x, err, sizeof err), LS_OK);
    CHECK_EQ_INT(fit(s1, V2, &s2, err, sizeof err), LS_ECONFLICT);
    CHECK(s2 != NULL);
    /* p.y and note are new: fresh ids 14, 15, optional */
    CHECK_EQ_INT(ls_typed_last_column_id(s2), 15);
    CHECK(has(s2, "{\"id\":10,\"name\":\"id\",\"required\":true,\"type\":\"int\"}"));
    CHECK(has(s2, "{\"id\":13,\"name\":\"x\",\"required\":true,\"type\":\"float\"},"
                  "{\"id\":14,\"name\":\"y\",\"required\":false,\"type\":\"long\"}"));
    CHECK(has(s2, "{\"id\":15,\"name\":\"note\",\"required\":false,\"type\":\"string\"}"));
    /* the metadata's JSON parses back to the same shape */
    ls_typed_shape_t *back =
        ls_typed_shape_parse(ls_typed_iceberg_schema_json(s2), 15, err, sizeof err);
    CHECK(back != NULL);
    if (back) CHECK(!strcmp(ls_typed_iceberg_schema_json(back), ls_typed_iceberg_schema_json(s2)));
    ls_typed_shape_free(back);
    /* v1 still fits v2's table: the new columns read as null */
    CHECK_EQ_INT(fit(s2, V1, &x, err, sizeof err), LS_OK);
    /* v3: id and p.x widen, name (absent) becomes optional; ids kept */
    CHECK_EQ_INT(fit(s2, V3, &s3, err, sizeof err), LS_ECONFLICT);
    CHECK(s3 != NULL);
    CHECK_EQ_INT(ls_typed_last_column_id(s3), 15);
    CHECK(has(s3, "{\"id\":10,\"name\":\"id\",\"required\":true,\"type\":\"long\"}"));
    CHECK(has(s3, "{\"id\":11,\"name\":\"name\",\"required\":false,\"type\":\"string\"}"));
    CHECK(has(s3, "{\"id\":13,\"name\":\"x\",\"required\":true,\"type\":\"double\"}"));
    /* older versions fit the newest table as they are (int into long) */
    CHECK_EQ_INT(fit(s3, V1, &x, err, sizeof err), LS_OK);
    CHECK_EQ_INT(fit(s3, V2, &x, err, sizeof err), LS_OK);
    CHECK_EQ_INT(fit(s3, V3, &x, err, sizeof err), LS_OK);
    ls_typed_shape_free(s1);
    ls_typed_shape_free(s2);
    ls_typed_shape_free(s3);
}

TEST(incompatible_changes_name_the_path)
{
    ls_avro_schema_t *a = parse(V1);
    char err[512] = "";
    ls_typed_shape_t *s = ls_typed_shape_new(ls_avro_root(a), err, sizeof err), *x;
    ls_avro_free(a);
    const struct {
        const char *schema, *want;
    } cases[] = {
        {REC(F("id", "\"string\"")), "/id: Iceberg cannot promote the int column to string"},
        {REC(F("id", "\"double\"")), "/id: Iceberg cannot promote the int column to double"},
        {REC(F("name", "\"int\"")), "/name: Iceberg cannot promote the string column to int"},
        {REC(F("p", "\"long\"")), "/p: the struct column cannot take Avro long"},
        {REC(F("id", "{\"type\":\"array\",\"items\":\"int\"}")),
         "/id: the int column cannot take Avro array"},
        {REC(F("id", "\"int\"") "," F("d", "{\"type\":\"int\",\"logicalType\":\"date\"}") "," F(
             "u", "[\"int\",\"string\"]")),
         "/u: a union other than"},
        {REC(F("id", "{\"type\":\"int\",\"logicalType\":\"date\"}")),
         "/id: Iceberg cannot promote the int column to date"},
        {REC(F("_kafka_x", "\"int\"")), "/_kafka_x: field names starting with _kafka_"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        err[0] = 0;
        ls_status st = fit(s, cases[i].schema, &x, err, sizeof err);
        if (st == LS_ECONFLICT) { /* the change needs an evolution, which is refused */
            CHECK(x == NULL);
            ls_typed_shape_free(x);
        } else {
            CHECK_EQ_INT(st, LS_EINVAL);
        }
        if (!strstr(err, cases[i].want)) printf("# case %zu: got '%s'\n", i, err);
        CHECK(strstr(err, cases[i].want) != NULL);
    }
    ls_typed_shape_free(s);
}

/* The values of leaf column path of a Parquet file as text, one per row
 * ("null" for a null), comma separated, into out. */
static void column_text(const ls_buf_t *file, const char *path, char *out, size_t cap)
{
    ls_status st;
    char err[256];
    out[0] = 0;
    ls_pqr_t *r = ls_pqr_open(file->data, file->len, &st, err, sizeof err);
    int col = r ? ls_pqr_column_index(r, path) : -1;
    if (col < 0) {
        snprintf(out, cap, "no column %.60s (%.150s)", path, r ? "" : err);
        ls_pqr_free(r);
        return;
    }
    const ls_pqr_elem_t *e = ls_pqr_column(r, col);
    size_t n = 0;
    for (int g = 0; g < ls_pqr_num_row_groups(r); g++) {
        ls_pqr_flat_t fl;
        if (ls_pqr_read_flat(r, g, col, &fl, err, sizeof err) != LS_OK) break;
        for (int64_t i = 0; i < fl.n && n < cap; i++) {
            const ls_pqr_triple_t *t = &fl.v[i];
            const char *sep = n ? "," : "";
            if (t->def < fl.max_def)
                n += (size_t)snprintf(out + n, cap - n, "%snull", sep);
            else if (e->type == LS_PQ_INT64)
                n += (size_t)snprintf(out + n, cap - n, "%s%lld", sep, (long long)t->v.i64);
            else if (e->type == LS_PQ_INT32)
                n += (size_t)snprintf(out + n, cap - n, "%s%d", sep, (int)t->v.i32);
            else
                n += (size_t)snprintf(out + n, cap - n, "%s%.*s", sep, (int)t->len, t->bytes);
        }
        ls_pqr_flat_free(&fl);
    }
    ls_pqr_free(r);
}

static const char KEY[] = "{\"type\":\"record\",\"name\":\"K\",\"fields\":["
                          "{\"name\":\"id\",\"type\":\"long\"},"
                          "{\"name\":\"region\",\"type\":\"string\"}]}";
static const char KEY2[] = "{\"type\":\"record\",\"name\":\"K\",\"fields\":["
                           "{\"name\":\"id\",\"type\":\"long\"},"
                           "{\"name\":\"region\",\"type\":\"string\"},"
                           "{\"name\":\"shard\",\"type\":[\"null\",\"int\"],\"default\":null}]}";

TEST(typed_keys)
{
    ls_avro_schema_t *v = parse(ORDER), *k = parse(KEY), *k2 = parse(KEY2),
                     *ks = parse("\"string\"");
    char err[512] = "";
    ls_typed_shape_t *s = ls_typed_shape_new_kv(ls_avro_root(v), ls_avro_root(k), err, sizeof err);
    CHECK(s != NULL);
    if (!s) printf("# %s\n", err);
    /* the value's ids first (10..25), then the key struct and its fields */
    int last = ls_typed_last_column_id(s);
    CHECK(ls_typed_has_key(s) && !ls_typed_key_required(s) && !ls_typed_raw_value(s));
    char want[256];
    snprintf(want, sizeof want,
             "{\"id\":%d,\"name\":\"_kafka_key_typed\",\"required\":false,\"type\":{\"type\":"
             "\"struct\",\"fields\":[{\"id\":%d,\"name\":\"id\",\"required\":true,\"type\":"
             "\"long\"},{\"id\":%d,\"name\":\"region\"",
             last - 2, last - 1, last);
    CHECK(has(s, want));
    CHECK(strstr(ls_typed_iceberg_schema_json(s), "\"_kafka_value\"") == NULL);
    ls_typed_shape_t *back =
        ls_typed_shape_parse(ls_typed_iceberg_schema_json(s), last, err, sizeof err);
    CHECK(back && !strcmp(ls_typed_iceberg_schema_json(back), ls_typed_iceberg_schema_json(s)));
    ls_typed_shape_free(back);
    /* key readers: the same schema fits, a new optional field evolves the key column */
    ls_typed_reader_t *vr = NULL, *kr = NULL, *x = NULL;
    CHECK_EQ_INT(ls_typed_reader_new(s, ls_avro_root(v), &vr, err, sizeof err), LS_OK);
    CHECK_EQ_INT(ls_typed_key_reader_new(s, ls_avro_root(k), &kr, err, sizeof err), LS_OK);
    CHECK_EQ_INT(ls_typed_key_reader_new(s, ls_avro_root(k2), &x, err, sizeof err), LS_ECONFLICT);
    ls_typed_shape_t *s2 = NULL;
    CHECK_EQ_INT(ls_typed_evolve_key(s, ls_avro_root(k2), &s2, err, sizeof err), LS_OK);
    snprintf(want, sizeof want,
             "{\"id\":%d,\"name\":\"shard\",\"required\":false,\"type\":\"int\"}", last + 1);
    if (s2) CHECK(has(s2, want) && ls_typed_last_column_id(s2) == last + 1);
    ls_typed_shape_free(s2);
    /* a string where the key column is a struct cannot evolve */
    CHECK_EQ_INT(ls_typed_key_reader_new(s, ls_avro_root(ks), &x, err, sizeof err), LS_EINVAL);
    CHECK(strstr(err, "(key): the struct column cannot take Avro string") != NULL);
    /* rows: a key {5, "eu"}, then none */
    static const uint8_t KD[] = {0x0a, 0x04, 'e', 'u'};
    ls_buf_t out;
    ls_buf_init(&out);
    size_t nf;
    const ls_pq_field_t *f = ls_typed_parquet_fields(s, &nf);
    ls_pq_writer_t *w = ls_pq_writer_new(f, nf, NULL, &out, err, sizeof err);
    ls_raw_record_t r = {
        .partition = 1, .offset = 2, .timestamp_ms = 3, .key_len = -1, .value_len = -1};
    ls_typed_datum_t vd = {vr, DATUM, sizeof DATUM}, kd = {kr, KD, sizeof KD}, bad = {kr, KD, 3};
    CHECK_EQ_INT(ls_typed_write_kv(s, &vd, &kd, w, &r, err, sizeof err), LS_OK);
    CHECK_EQ_INT(ls_typed_write_kv(s, &vd, &bad, w, &r, err, sizeof err), LS_ECORRUPT);
    CHECK(strstr(err, "Avro key datum does not match its schema") != NULL);
    CHECK_EQ_INT(ls_typed_write_kv(s, &vd, NULL, w, &r, err, sizeof err), LS_OK);
    CHECK_EQ_INT(ls_pq_writer_finish(w), LS_OK);
    ls_pq_writer_free(w);
    char got[256];
    column_text(&out, "_kafka_key_typed.id", got, sizeof got);
    CHECK(!strcmp(got, "5,null"));
    column_text(&out, "_kafka_key_typed.region", got, sizeof got);
    CHECK(!strcmp(got, "eu,null"));
    column_text(&out, "id", got, sizeof got);
    CHECK(!strcmp(got, "-3,-3"));
    ls_buf_free(&out);
    ls_typed_reader_free(vr);
    ls_typed_reader_free(kr);
    ls_typed_shape_free(s);
    /* a primitive key and a raw value: _kafka_value and a string key column */
    s = ls_typed_shape_new_kv(NULL, ls_avro_root(ks), err, sizeof err);
    CHECK(s && ls_typed_raw_value(s));
    CHECK(has(s, "{\"id\":5,\"name\":\"_kafka_value\",\"required\":false,\"type\":\"binary\"}"));
    CHECK(
        has(s, "{\"id\":10,\"name\":\"_kafka_key_typed\",\"required\":false,\"type\":\"string\"}"));
    back = ls_typed_shape_parse(ls_typed_iceberg_schema_json(s), 10, err, sizeof err);
    CHECK(back && ls_typed_raw_value(back) && ls_typed_has_key(back));
    ls_typed_shape_free(back);
    CHECK_EQ_INT(ls_typed_key_reader_new(s, ls_avro_root(ks), &kr, err, sizeof err), LS_OK);
    ls_buf_init(&out);
    f = ls_typed_parquet_fields(s, &nf);
    w = ls_pq_writer_new(f, nf, NULL, &out, err, sizeof err);
    static const uint8_t SK[] = {0x06, 'a', 'b', 'c'};
    kd = (ls_typed_datum_t){kr, SK, sizeof SK};
    r.value = (const uint8_t *)"hello";
    r.value_len = 5;
    CHECK_EQ_INT(ls_typed_write_kv(s, NULL, &kd, w, &r, err, sizeof err), LS_OK);
    r.value_len = -1;
    CHECK_EQ_INT(ls_typed_write_kv(s, NULL, NULL, w, &r, err, sizeof err), LS_OK);
    CHECK_EQ_INT(ls_pq_writer_finish(w), LS_OK);
    ls_pq_writer_free(w);
    column_text(&out, "_kafka_key_typed", got, sizeof got);
    CHECK(!strcmp(got, "abc,null"));
    column_text(&out, "_kafka_value", got, sizeof got);
    CHECK(!strcmp(got, "hello,null"));
    ls_buf_free(&out);
    ls_typed_reader_free(kr);
    ls_typed_shape_free(s);
    /* a table without a key column yet gets one by evolution (optional, fresh ids) */
    s = ls_typed_shape_new(ls_avro_root(v), err, sizeof err);
    last = ls_typed_last_column_id(s);
    CHECK_EQ_INT(ls_typed_key_reader_new(s, ls_avro_root(k), &x, err, sizeof err), LS_ECONFLICT);
    CHECK_EQ_INT(ls_typed_evolve_key(s, ls_avro_root(k), &s2, err, sizeof err), LS_OK);
    snprintf(want, sizeof want, "{\"id\":%d,\"name\":\"_kafka_key_typed\",\"required\":false",
             last + 1);
    if (s2) CHECK(has(s2, want) && ls_typed_last_column_id(s2) == last + 3);
    ls_typed_shape_free(s2);
    ls_typed_shape_free(s);
    ls_avro_free(v);
    ls_avro_free(k);
    ls_avro_free(k2);
    ls_avro_free(ks);
}

TEST(primary_keys)
{
    ls_avro_schema_t *v = parse(ORDER), *k = parse(KEY), *k2 = parse(KEY2);
    char err[512] = "";
    const char *pk[] = {"region", "id"};
    ls_typed_shape_t *s =
        ls_typed_shape_new_pk(ls_avro_root(v), ls_avro_root(k), pk, 2, err, sizeof err);
    CHECK(s != NULL);
    if (!s) printf("# %s\n", err);
    int last = ls_typed_last_column_id(s); /* key struct last-2, id last-1, region last */
    char want[160];
    snprintf(want, sizeof want, "\"identifier-field-ids\":[%d,%d]}", last, last - 1);
    CHECK(has(s, want));
    snprintf(want, sizeof want, "{\"id\":%d,\"name\":\"_kafka_key_typed\",\"required\":true",
             last - 2);
    CHECK(has(s, want) && ls_typed_key_required(s));
    CHECK(ls_typed_pk_count(s) == 2 && !strcmp(ls_typed_pk_name(s, 0), "region"));
    /* the metadata's schema parses back with its primary key */
    ls_typed_shape_t *back =
        ls_typed_shape_parse(ls_typed_iceberg_schema_json(s), last, err, sizeof err);
    CHECK(back && ls_typed_pk_count(back) == 2 && !strcmp(ls_typed_pk_name(back, 1), "id"));
    CHECK(back && !strcmp(ls_typed_iceberg_schema_json(back), ls_typed_iceberg_schema_json(s)));
    /* a key version adding an optional field evolves the table and keeps the key */
    ls_typed_shape_t *s2 = NULL;
    CHECK_EQ_INT(ls_typed_evolve_key(s, ls_avro_root(k2), &s2, err, sizeof err), LS_OK);
    if (s2) CHECK(has(s2, want) && ls_typed_pk_count(s2) == 2);
    /* identities: the same fields written by v1 and v2 of the key are one identity */
    ls_typed_reader_t *r1 = NULL, *r2 = NULL;
    CHECK_EQ_INT(ls_typed_key_reader_new(s2, ls_avro_root(k), &r1, err, sizeof err), LS_OK);
    CHECK_EQ_INT(ls_typed_key_reader_new(s2, ls_avro_root(k2), &r2, err, sizeof err), LS_OK);
    static const uint8_t D1[] = {0x0a, 0x04, 'e', 'u'};             /* {5, "eu"} */
    static const uint8_t D2[] = {0x0a, 0x04, 'e', 'u', 0x02, 0x0e}; /* {5, "eu", 7} */
    static const uint8_t D3[] = {0x0c, 0x04, 'e', 'u'};             /* {6, "eu"} */
    ls_buf_t a, b, c;
    ls_buf_init(&a);
    ls_buf_init(&b);
    ls_buf_init(&c);
    CHECK_EQ_INT(ls_typed_key_identity(r1, D1, sizeof D1, &a, err, sizeof err), LS_OK);
    CHECK_EQ_INT(ls_typed_key_identity(r2, D2, sizeof D2, &b, err, sizeof err), LS_OK);
    CHECK_EQ_INT(ls_typed_key_identity(r1, D3, sizeof D3, &c, err, sizeof err), LS_OK);
    CHECK(a.len == b.len && !memcmp(a.data, b.data, a.len));
    CHECK(a.len != c.len || memcmp(a.data, c.data, a.len) != 0);
    /* region first: 's' len "eu", then 'i' 5 */
    CHECK(a.len == 1 + 4 + 2 + 1 + 8 && a.data[0] == 's' && a.data[7] == 'i' && a.data[8] == 5);
    CHECK_EQ_INT(ls_typed_key_identity(r1, D1, 3, &c, err, sizeof err), LS_ECORRUPT);
    ls_buf_free(&a);
    ls_buf_free(&b);
    ls_buf_free(&c);
    ls_typed_reader_free(r1);
    ls_typed_reader_free(r2);
    /* key versions that would break the primary key are incompatible */
    static const char *const bad[][2] = {
        {"{\"type\":\"record\",\"name\":\"K\",\"fields\":[{\"name\":\"id\",\"type\":[\"null\","
         "\"long\"]},{\"name\":\"region\",\"type\":\"string\"}]}",
         "(key)/id: a primary key field cannot become optional"},
        {"{\"type\":\"record\",\"name\":\"K\",\"fields\":[{\"name\":\"region\",\"type\":"
         "\"string\"}]}",
         "(key)/id: the writer lacks this primary key field"},
        {"[\"null\",{\"type\":\"record\",\"name\":\"K\",\"fields\":[{\"name\":\"id\",\"type\":"
         "\"long\"},{\"name\":\"region\",\"type\":\"string\"}]}]",
         "(key): the key column of a primary key cannot become optional"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ls_avro_schema_t *x = parse(bad[i][0]);
        ls_typed_shape_t *xs = NULL;
        ls_typed_reader_t *xr = NULL;
        err[0] = 0;
        ls_status st = ls_typed_key_reader_new(s, ls_avro_root(x), &xr, err, sizeof err);
        if (st == LS_ECONFLICT) st = ls_typed_evolve_key(s, ls_avro_root(x), &xs, err, sizeof err);
        CHECK_EQ_INT(st, LS_EINVAL);
        if (!strstr(err, bad[i][1])) printf("# case %zu: %s\n", i, err);
        CHECK(strstr(err, bad[i][1]) != NULL);
        ls_typed_shape_free(xs);
        ls_avro_free(x);
    }
    /* refusals at creation name the field */
    static const char *const f1[] = {"nope"};
    ls_typed_shape_t *x =
        ls_typed_shape_new_pk(ls_avro_root(v), ls_avro_root(k), f1, 1, err, sizeof err);
    CHECK(!x && strstr(err, "(key)/nope: no such field in the key schema"));
    ls_avro_schema_t *fk =
        parse("{\"type\":\"record\",\"name\":\"F\",\"fields\":[{\"name\":\"x\","
              "\"type\":\"double\"},{\"name\":\"n\",\"type\":[\"null\",\"int\"]}]}");
    static const char *const f2[] = {"x"}, *const f3[] = {"n"};
    x = ls_typed_shape_new_pk(ls_avro_root(v), ls_avro_root(fk), f2, 1, err, sizeof err);
    CHECK(!x && strstr(err, "cannot be float or double"));
    x = ls_typed_shape_new_pk(ls_avro_root(v), ls_avro_root(fk), f3, 1, err, sizeof err);
    CHECK(!x && strstr(err, "must be required"));
    ls_avro_schema_t *sk = parse("\"string\"");
    x = ls_typed_shape_new_pk(ls_avro_root(v), ls_avro_root(sk), f2, 1, err, sizeof err);
    CHECK(!x && strstr(err, "this key is not a record"));
    ls_avro_free(sk);
    ls_avro_free(fk);
    ls_typed_shape_free(back);
    ls_typed_shape_free(s2);
    ls_typed_shape_free(s);
    ls_avro_free(v);
    ls_avro_free(k);
    ls_avro_free(k2);
}

TEST(unframe)
{
    const uint8_t ok[] = {0, 0, 0, 1, 2, 9, 9};
    int32_t id;
    const uint8_t *d;
    size_t n;
    CHECK_EQ_INT(ls_typed_unframe(ok, sizeof ok, &id, &d, &n), 0);
    CHECK(id == 258 && n == 2 && d == ok + 5);
    CHECK_EQ_INT(ls_typed_unframe(ok, 4, &id, &d, &n), -1);
    CHECK_EQ_INT(ls_typed_unframe(NULL, -1, &id, &d, &n), -1);
    const uint8_t magic1[] = {1, 0, 0, 0, 1};
    CHECK_EQ_INT(ls_typed_unframe(magic1, sizeof magic1, &id, &d, &n), -1);
}

int main(void)
{
    RUN(shape_of_a_record);
    RUN(refusals_name_the_path);
    RUN(datums_whole_or_refused);
    RUN(evolution_keeps_ids_and_adds_fresh_ones);
    RUN(incompatible_changes_name_the_path);
    RUN(typed_keys);
    RUN(primary_keys);
    RUN(unframe);
    UNIT_DONE();
}
