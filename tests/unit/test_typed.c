/* table/iceberg_typed.c: the shape an Avro schema gives a table (Iceberg
 * JSON, Parquet fields, refusals with the path), and shredding datums —
 * every truncation and many corruptions of a valid datum are refused whole,
 * never a crash and never a partial row. Reading the rows back is
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

static ls_status write_one(const ls_typed_shape_t *s, const uint8_t *d, size_t len, char *err,
                           size_t errlen, ls_buf_t *out)
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
    ls_status st = ls_typed_write(s, w, &r, d, len, err, errlen);
    /* a refused datum left nothing behind: the next row is whole */
    if (st == LS_ECORRUPT) {
        char e2[256];
        if (ls_typed_write(s, w, &r, DATUM, sizeof DATUM, e2, sizeof e2) != LS_OK) {
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
    ls_buf_t out;
    ls_buf_init(&out);
    CHECK_EQ_INT(write_one(s, DATUM, sizeof DATUM, err, sizeof err, &out), LS_OK);
    /* every proper prefix is refused, and so are trailing bytes */
    for (size_t cut = 0; cut < sizeof DATUM; cut++) {
        out.len = 0;
        ls_status st = write_one(s, DATUM, cut, err, sizeof err, &out);
        if (st != LS_ECORRUPT) printf("# cut at %zu: status %d\n", cut, (int)st);
        CHECK_EQ_INT(st, LS_ECORRUPT);
    }
    uint8_t longer[sizeof DATUM + 1];
    memcpy(longer, DATUM, sizeof DATUM);
    longer[sizeof DATUM] = 0;
    out.len = 0;
    CHECK_EQ_INT(write_one(s, longer, sizeof longer, err, sizeof err, &out), LS_ECORRUPT);
    CHECK(strstr(err, "bytes left over") != NULL);
    /* corruptions: either a row or a refusal, never a crash (ASan build) */
    srand(7);
    for (int k = 0; k < 3000; k++) {
        uint8_t d[sizeof DATUM];
        memcpy(d, DATUM, sizeof d);
        d[rand() % sizeof d] ^= (uint8_t)(1 + rand() % 255);
        out.len = 0;
        ls_status st = write_one(s, d, sizeof d, err, sizeof err, &out);
        CHECK(st == LS_OK || st == LS_ECORRUPT);
    }
    ls_buf_free(&out);
    ls_typed_shape_free(s);
    ls_avro_free(a);
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
    RUN(unframe);
    UNIT_DONE();
}
