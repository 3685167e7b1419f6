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
    RUN(unframe);
    UNIT_DONE();
}
