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
#include "table/iceberg_table.h"
#include "table/file_rewrite.h"
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
        {"{\"type\":\"record\",\"name\":\"R\",\"fields\":[{\"name\":\"u\",\"type\":[\"null\"]}]}",
         "/u: a union of null alone has no column"},
        {"{\"type\":\"record\",\"name\":\"R\",\"fields\":[{\"name\":\"u\",\"type\":[\"int\","
         "{\"type\":\"long\",\"logicalType\":\"timestamp-nanos\"}]}]}",
         "/u/field1: Avro long with logical type timestamp-nanos"},
        {"{\"type\":\"record\",\"name\":\"R\",\"fields\":[{\"name\":\"d\",\"type\":{\"type\":"
         "\"bytes\",\"logicalType\":\"decimal\",\"precision\":40,\"scale\":2}}]}",
         "/d: Avro bytes with logical type decimal Iceberg decimals hold at most 38 digits"},
        {"{\"type\":\"record\",\"name\":\"R\",\"fields\":[{\"name\":\"t\",\"type\":{\"type\":"
         "\"long\",\"logicalType\":\"timestamp-nanos\"}}]}",
         "/t: Avro long with logical type timestamp-nanos nanosecond timestamps need Iceberg "
         "format version 3"},
        {"{\"type\":\"record\",\"name\":\"R\",\"fields\":[{\"name\":\"l\",\"type\":{\"type\":"
         "\"array\",\"items\":{\"type\":\"long\",\"logicalType\":\"local-timestamp-nanos\"}}}]}",
         "/l/items: Avro long with logical type local-timestamp-nanos nanosecond"},
        {"{\"type\":\"record\",\"name\":\"R\",\"fields\":[{\"name\":\"d\",\"type\":{\"type\":"
         "\"fixed\",\"name\":\"D\",\"size\":12,\"logicalType\":\"duration\"}}]}",
         "/d: Avro fixed with logical type duration Iceberg has no type"},
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
        {REC(F("id", "[\"int\",\"string\"]")),
         "/id: a union of several types cannot fill a non-struct column"},
        {REC(F("p", "[\"int\",\"string\"]")),
         "/p: a union of several types cannot fill a struct column"},
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

/* ---- decimal, fixed, uuid, time (the Iceberg spec's Avro appendix) ---- */

static const char
    WIDE[] =
        REC(
            F("d9", "{\"type\":\"bytes\",\"logicalType\":\"decimal\",\"precision\":9,\"scale\":2}") "," F(
                "d18",
                "{\"type\":\"fixed\",\"name\":\"F8\",\"size\":8,\"logicalType\":\"decimal\","
                "\"precision\":18}") "," F("d30",
                                           "{\"type\":\"bytes\",\"logicalType\":\"decimal\","
                                           "\"precision\":30,\"scale\":5}") "," F("fx",
                                                                                  "{\"type\":"
                                                                                  "\"fixed\","
                                                                                  "\"name\":\"F3\","
                                                                                  "\"size\":3}") "," F("u", "{\""
                                                                                                            "typ"
                                                                                                            "e\""
                                                                                                            ":\""
                                                                                                            "str"
                                                                                                            "ing"
                                                                                                            "\","
                                                                                                            "\"l"
                                                                                                            "ogi"
                                                                                                            "cal"
                                                                                                            "Typ"
                                                                                                            "e\""
                                                                                                            ":\""
                                                                                                            "uui"
                                                                                                            "d\""
                                                                                                            "}") "," F("uf", "{\"type\":\"fixed\",\"name\":\"U\",\"size\":16,\"logicalType\":\"uuid\"}") "," F("tm", "{\"type\":\"int\",\"logicalType\":\"time-millis\"}") "," F("tu", "{\"type\":\"long\",\"logicalType\":\"time-micros\"}") "," F("od", "[\"null\",{\"type\":\"bytes\",\"logicalType\":\"decimal\",\"precision\":4,\"scale\":1}]"));

static void zz(ls_buf_t *b, int64_t v)
{
    uint64_t u = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
    while (u >= 0x80) {
        ls_buf_append_u8(b, (uint8_t)(u | 0x80));
        u >>= 7;
    }
    ls_buf_append_u8(b, (uint8_t)u);
}

/* Avro bytes of a decimal: the fewest two's-complement big-endian bytes */
static void dec_bytes(ls_buf_t *b, __int128 v)
{
    uint8_t be[16];
    for (int i = 0; i < 16; i++)
        be[15 - i] = (uint8_t)(v >> (8 * i));
    int k = 0;
    while (k < 15 && ((be[k] == 0 && !(be[k + 1] & 0x80)) || (be[k] == 0xff && be[k + 1] & 0x80)))
        k++;
    zz(b, 16 - k);
    ls_buf_append(b, be + k, (size_t)(16 - k));
}

static __int128 pow10i(int n)
{
    __int128 v = 1;
    while (n-- > 0)
        v *= 10;
    return v;
}

/* A datum of WIDE: d9 and d30 given, the rest fixed values; uuid text u. */
static void wide_datum(ls_buf_t *b, __int128 d9, __int128 d30, const char *u, bool od_null)
{
    b->len = 0;
    dec_bytes(b, d9);
    const uint8_t d18[8] = {0x01, 0xb6, 0x9b, 0x4b,
                            0xa6, 0x30, 0xf3, 0x4e}; /* 123456789012345678 */
    ls_buf_append(b, d18, 8);
    dec_bytes(b, d30);
    ls_buf_append(b, "abc", 3);
    zz(b, (int64_t)strlen(u));
    ls_buf_append(b, u, strlen(u));
    for (int i = 0; i < 16; i++)
        ls_buf_append_u8(b, (uint8_t)(0xf0 + i));
    zz(b, 3723004);         /* 01:02:03.004 */
    zz(b, 3723004005LL);    /* 01:02:03.004005 */
    zz(b, od_null ? 0 : 1); /* od: null or -12.5 */
    if (!od_null) dec_bytes(b, -125);
}

TEST(decimal_fixed_uuid_time)
{
    ls_avro_schema_t *a = parse(WIDE);
    CHECK(a != NULL);
    char err[512] = "";
    ls_typed_shape_t *s = ls_typed_shape_new(ls_avro_root(a), err, sizeof err);
    CHECK(s != NULL);
    if (!s) {
        printf("# %s\n", err);
        ls_avro_free(a);
        return;
    }
    CHECK(has(s, "\"name\":\"d9\",\"required\":true,\"type\":\"decimal(9, 2)\""));
    CHECK(has(s, "\"name\":\"d18\",\"required\":true,\"type\":\"decimal(18, 0)\""));
    CHECK(has(s, "\"name\":\"d30\",\"required\":true,\"type\":\"decimal(30, 5)\""));
    CHECK(has(s, "\"name\":\"fx\",\"required\":true,\"type\":\"fixed[3]\""));
    CHECK(has(s, "\"name\":\"u\",\"required\":true,\"type\":\"uuid\""));
    CHECK(has(s, "\"name\":\"uf\",\"required\":true,\"type\":\"uuid\""));
    CHECK(has(s, "\"name\":\"tm\",\"required\":true,\"type\":\"time\""));
    CHECK(has(s, "\"name\":\"od\",\"required\":false,\"type\":\"decimal(4, 1)\""));
    /* the metadata's JSON parses back to the same shape */
    ls_typed_shape_t *back = ls_typed_shape_parse(ls_typed_iceberg_schema_json(s),
                                                  ls_typed_last_column_id(s), err, sizeof err);
    CHECK(back != NULL);
    if (back) CHECK(!strcmp(ls_typed_iceberg_schema_json(back), ls_typed_iceberg_schema_json(s)));
    ls_typed_shape_free(back);
    /* Parquet: decimals by precision (INT32, INT64, fixed of the fewest bytes) */
    size_t nf;
    const ls_pq_field_t *f = ls_typed_parquet_fields(s, &nf);
    int seen = 0;
    for (size_t i = 0; i < nf; i++) {
        if (!strcmp(f[i].name, "d9")) {
            seen++;
            CHECK(f[i].type == LS_PQ_INT32 && f[i].logical == LS_PQ_LT_DECIMAL &&
                  f[i].precision == 9 && f[i].scale == 2);
        }
        if (!strcmp(f[i].name, "d18")) {
            seen++;
            CHECK(f[i].type == LS_PQ_INT64);
        }
        if (!strcmp(f[i].name, "d30")) {
            seen++;
            CHECK(f[i].type == LS_PQ_FIXED_LEN_BYTE_ARRAY && f[i].type_length == 13);
        }
        if (!strcmp(f[i].name, "fx")) {
            seen++;
            CHECK(f[i].type == LS_PQ_FIXED_LEN_BYTE_ARRAY && f[i].type_length == 3);
        }
        if (!strcmp(f[i].name, "u")) {
            seen++;
            CHECK(f[i].type_length == 16 && f[i].logical == LS_PQ_LT_UUID);
        }
        if (!strcmp(f[i].name, "tm")) {
            seen++;
            CHECK(f[i].type == LS_PQ_INT64 && f[i].logical == LS_PQ_LT_TIME_US);
        }
    }
    CHECK_EQ_INT(seen, 6);

    ls_typed_reader_t *rd = NULL;
    CHECK_EQ_INT(ls_typed_reader_new(s, ls_avro_root(a), &rd, err, sizeof err), LS_OK);
    ls_buf_t out, d;
    ls_buf_init(&out);
    ls_buf_init(&d);
    ls_pq_writer_t *w = ls_pq_writer_new(f, nf, NULL, &out, err, sizeof err);
    CHECK(w != NULL);
    ls_raw_record_t r = {.key_len = -1, .value_len = -1};
    const char *U = "123e4567-E89B-12d3-a456-426614174000";
    __int128 big = pow10i(30) - 1; /* 30 nines */
    wide_datum(&d, -12345, big, U, true);
    CHECK_EQ_INT(ls_typed_write(rd, w, &r, d.data, d.len, err, sizeof err), LS_OK);
    r.offset = 1;
    wide_datum(&d, 999999999, -big, U, false);
    CHECK_EQ_INT(ls_typed_write(rd, w, &r, d.data, d.len, err, sizeof err), LS_OK);
    /* beyond the precision, a malformed uuid: refused whole, never rounded */
    wide_datum(&d, 1000000000, 0, U, true);
    CHECK_EQ_INT(ls_typed_write(rd, w, &r, d.data, d.len, err, sizeof err), LS_ECORRUPT);
    CHECK(strstr(err, "more digits than its precision") != NULL);
    wide_datum(&d, 0, pow10i(30), U, true);
    CHECK_EQ_INT(ls_typed_write(rd, w, &r, d.data, d.len, err, sizeof err), LS_ECORRUPT);
    wide_datum(&d, 0, 0, "123e4567-e89b-12d3-a456-42661417400g", true);
    CHECK_EQ_INT(ls_typed_write(rd, w, &r, d.data, d.len, err, sizeof err), LS_ECORRUPT);
    CHECK(strstr(err, "uuid") != NULL);
    wide_datum(&d, 0, 0, "123e4567e89b12d3a456426614174000", true);
    CHECK_EQ_INT(ls_typed_write(rd, w, &r, d.data, d.len, err, sizeof err), LS_ECORRUPT);
    /* a time of day outside [0, 24 h) (tm, then tu): refused */
    wide_datum(&d, 0, 0, U, true);
    const size_t tm_at = d.len - 10; /* tm: 4 bytes, tu: 5 bytes, od: 1 */
    ls_buf_t t2;
    ls_buf_init(&t2);
    for (int k = 0; k < 2; k++) {
        t2.len = 0;
        ls_buf_append(&t2, d.data, tm_at);
        zz(&t2, k == 0 ? 86400000 : 3723004);
        zz(&t2, k == 0 ? 0 : -1);
        zz(&t2, 0);
        CHECK_EQ_INT(ls_typed_write(rd, w, &r, t2.data, t2.len, err, sizeof err), LS_ECORRUPT);
        CHECK(strstr(err, "a time of day outside") != NULL);
    }
    ls_buf_free(&t2);
    /* every truncation refused; corruptions make a row or a refusal, never a
     * crash or a half-written row (the file stays whole: ASan build) */
    wide_datum(&d, -12345, big, U, false);
    for (size_t cut = 0; cut < d.len; cut++)
        CHECK_EQ_INT(ls_typed_write(rd, w, &r, d.data, cut, err, sizeof err), LS_ECORRUPT);
    CHECK_EQ_INT(ls_pq_writer_finish(w), LS_OK);
    /* Iceberg bounds of decimals: the unscaled value, big-endian, fewest bytes */
    ls_ice_datafile_t df = {0};
    ls_ice_datafile_metrics(&df, w);
    int bounds = 0;
    for (size_t i = 0; i < df.nmetrics; i++) {
        const ls_ice_colmetric_t *m = &df.metrics[i];
        if (m->field_id == 10) { /* d9: -12345 .. 999999999 */
            bounds++;
            CHECK(m->has_lower && m->lower_len == 2 && m->lower[0] == 0xcf && m->lower[1] == 0xc7);
            CHECK(m->has_upper && m->upper_len == 4 && m->upper[0] == 0x3b);
        }
        if (m->field_id == 12) { /* d30: -(10^30-1) .. 10^30-1, 13 bytes each */
            bounds++;
            CHECK(m->lower_len == 13 && m->lower[0] == 0xf3 && m->upper_len == 13 &&
                  m->upper[0] == 0x0c);
        }
        if (m->field_id == 14) { /* u: 16 bytes */
            bounds++;
            CHECK(m->lower_len == 16 && m->lower[0] == 0x12 && m->lower[15] == 0x00);
        }
    }
    CHECK_EQ_INT(bounds, 3);
    ls_ice_datafile_clear(&df);
    ls_pq_writer_free(w);
    /* the values read back (the project's Parquet reader) */
    char txt[512];
    column_text(&out, "d9", txt, sizeof txt);
    CHECK(!strcmp(txt, "-12345,999999999"));
    column_text(&out, "d18", txt, sizeof txt);
    CHECK(!strcmp(txt, "123456789012345678,123456789012345678"));
    column_text(&out, "tm", txt, sizeof txt);
    CHECK(!strcmp(txt, "3723004000,3723004000"));
    column_text(&out, "tu", txt, sizeof txt);
    CHECK(!strcmp(txt, "3723004005,3723004005"));
    column_text(&out, "fx", txt, sizeof txt);
    CHECK(!strcmp(txt, "abc,abc"));
    column_text(&out, "od", txt, sizeof txt);
    CHECK(!strcmp(txt, "null,-125"));
    ls_status st;
    ls_pqr_t *pr = ls_pqr_open(out.data, out.len, &st, err, sizeof err);
    CHECK(pr != NULL);
    int col = pr ? ls_pqr_column_index(pr, "d30") : -1;
    CHECK(col >= 0);
    if (col >= 0) {
        const ls_pqr_elem_t *e = ls_pqr_column(pr, col);
        CHECK(e->type == LS_PQR_FIXED_LEN_BYTE_ARRAY && e->type_length == 13);
        CHECK_EQ_INT(e->logical_id, 5); /* DECIMAL */
        ls_pqr_flat_t fl;
        CHECK_EQ_INT(ls_pqr_read_flat(pr, 0, col, &fl, err, sizeof err), LS_OK);
        CHECK(fl.n == 2 && fl.v[0].len == 13 && fl.v[1].len == 13);
        __int128 v0 = 0, v1 = 0;
        for (int i = 0; i < 13; i++) { /* sign-extended big-endian */
            v0 = (__int128)((unsigned __int128)v0 << 8 | fl.v[0].bytes[i]);
            v1 = (__int128)((unsigned __int128)v1 << 8 | fl.v[1].bytes[i]);
        }
        v1 -= (__int128)1 << 104; /* negative: 13 bytes of two's complement */
        CHECK(v0 == big && v1 == -big);
        ls_pqr_flat_free(&fl);
    }
    col = pr ? ls_pqr_column_index(pr, "u") : -1;
    if (col >= 0) {
        CHECK_EQ_INT(ls_pqr_column(pr, col)->logical_id, 14); /* UUID */
        ls_pqr_flat_t fl;
        CHECK_EQ_INT(ls_pqr_read_flat(pr, 0, col, &fl, err, sizeof err), LS_OK);
        CHECK(fl.n == 2 && fl.v[0].len == 16 && fl.v[0].bytes[0] == 0x12 &&
              fl.v[0].bytes[4] == 0xe8 && fl.v[0].bytes[15] == 0x00);
        ls_pqr_flat_free(&fl);
    }
    ls_pqr_free(pr);
    /* corruptions: a row or a refusal, never a crash or a half-written row */
    out.len = 0;
    w = ls_pq_writer_new(f, nf, NULL, &out, err, sizeof err);
    wide_datum(&d, -12345, big, U, false);
    srand(11);
    int rows_ok = 0;
    for (int k = 0; k < 3000; k++) {
        uint8_t c[128];
        memcpy(c, d.data, d.len);
        c[rand() % d.len] ^= (uint8_t)(1 + rand() % 255);
        ls_status st = ls_typed_write(rd, w, &r, c, d.len, err, sizeof err);
        CHECK(st == LS_OK || st == LS_ECORRUPT);
        rows_ok += st == LS_OK;
    }
    CHECK_EQ_INT((int)ls_pq_num_rows(w), rows_ok);
    CHECK_EQ_INT(ls_pq_writer_finish(w), LS_OK);
    ls_pq_writer_free(w);
    ls_buf_free(&d);
    ls_buf_free(&out);
    ls_typed_reader_free(rd);
    ls_typed_shape_free(s);
    ls_avro_free(a);
}

TEST(decimal_widening_and_uuid_strings)
{
    ls_avro_schema_t *a = parse(REC(
        F("d",
          "{\"type\":\"bytes\",\"logicalType\":\"decimal\","
          "\"precision\":9,\"scale\":2}") "," F("s",
                                                "\"string\"") "," F("f",
                                                                    "{\"type\":\"fixed\",\"name\":"
                                                                    "\"F\",\"size\":4}")));
    char err[512] = "";
    ls_typed_shape_t *s = ls_typed_shape_new(ls_avro_root(a), err, sizeof err), *x, *w2, *w3;
    ls_avro_free(a);
    CHECK(s != NULL);
#define F4 "{\"type\":\"fixed\",\"name\":\"F\",\"size\":4}"
#define ALL(d, s_, f_) REC(F("d", d) "," F("s", s_) "," F("f", f_))
#define DEC(p, sc)                                                                                 \
    "{\"type\":\"bytes\",\"logicalType\":\"decimal\",\"precision\":" #p ",\"scale\":" #sc "}"
    /* a narrower precision fits; a wider one evolves the column, id kept */
    CHECK_EQ_INT(fit(s, ALL(DEC(5, 2), "\"string\"", F4), &x, err, sizeof err), LS_OK);
    CHECK_EQ_INT(fit(s, ALL(DEC(12, 2), "\"string\"", F4), &w2, err, sizeof err), LS_ECONFLICT);
    CHECK(w2 != NULL && has(w2, "{\"id\":10,\"name\":\"d\",\"required\":true,"
                                "\"type\":\"decimal(12, 2)\"}"));
    CHECK_EQ_INT(fit(w2, ALL(DEC(25, 2), "\"string\"", F4), &w3, err, sizeof err), LS_ECONFLICT);
    CHECK(w3 != NULL && has(w3, "\"type\":\"decimal(25, 2)\""));
    /* a scale change, another fixed size, a decimal where the column is not: refused */
    CHECK_EQ_INT(fit(s, ALL(DEC(9, 3), "\"string\"", F4), &x, err, sizeof err), LS_EINVAL);
    CHECK(strstr(err, "/d: Iceberg cannot change a decimal's scale") != NULL);
    CHECK_EQ_INT(fit(s, ALL(DEC(12, 3), "\"string\"", F4), &x, err, sizeof err), LS_EINVAL);
    CHECK_EQ_INT(fit(s,
                     ALL(DEC(9, 2), "\"string\"", "{\"type\":\"fixed\",\"name\":\"F\",\"size\":5}"),
                     &x, err, sizeof err),
                 LS_EINVAL);
    CHECK(strstr(err, "/f: Iceberg cannot change the fixed[4] column to fixed[5]") != NULL);
    CHECK_EQ_INT(fit(s, ALL("\"long\"", "\"string\"", F4), &x, err, sizeof err), LS_EINVAL);
    CHECK(strstr(err, "cannot promote the decimal(9, 2) column to long") != NULL);
    /* a string column (a table made before uuid columns) keeps taking uuid text */
    CHECK_EQ_INT(fit(s, ALL(DEC(9, 2), "{\"type\":\"string\",\"logicalType\":\"uuid\"}", F4), &x,
                     err, sizeof err),
                 LS_OK);
    /* a new uuid field becomes a uuid column */
    CHECK_EQ_INT(fit(s,
                     REC(F("d", DEC(9, 2)) "," F("s", "\"string\"") "," F("f", F4) "," F(
                         "n", "{\"type\":\"string\",\"logicalType\":\"uuid\"}")),
                     &x, err, sizeof err),
                 LS_ECONFLICT);
    CHECK(x != NULL && has(x, "\"name\":\"n\",\"required\":false,\"type\":\"uuid\""));
    ls_typed_shape_free(x);
#undef DEC
#undef ALL
#undef F4
    ls_typed_shape_free(s);
    ls_typed_shape_free(w2);
    ls_typed_shape_free(w3);
}

/* Avro aliases: a renamed field listing its old name keeps its column
 * (same id, the column's name kept); older versions still fit. */
TEST(renamed_fields_follow_their_aliases)
{
    ls_avro_schema_t *a = parse(V1);
    char err[512] = "";
    ls_typed_shape_t *s = ls_typed_shape_new(ls_avro_root(a), err, sizeof err), *x = NULL;
    ls_avro_free(a);
    /* name -> title, p.x -> p.width (nested), both with the old name as an alias */
    const char *renamed =
        REC(F("id", "\"int\"") ",{\"name\":\"title\",\"type\":\"string\",\"aliases\":[\"name\"]},"
                               "{\"name\":\"p\",\"type\":{\"type\":\"record\",\"name\":\"P\","
                               "\"fields\":[{\"name\":\"width\",\"type\":\"float\",\"aliases\":["
                               "\"w\",\"x\"]}]}}");
    CHECK_EQ_INT(fit(s, renamed, &x, err, sizeof err), LS_OK);
    CHECK(x == NULL);
    /* its datums land in the old columns */
    ls_avro_schema_t *ra = parse(renamed);
    ls_typed_reader_t *rd = NULL;
    CHECK_EQ_INT(ls_typed_reader_new(s, ls_avro_root(ra), &rd, err, sizeof err), LS_OK);
    size_t nf;
    const ls_pq_field_t *f = ls_typed_parquet_fields(s, &nf);
    ls_buf_t out;
    ls_buf_init(&out);
    ls_pq_writer_t *w = ls_pq_writer_new(f, nf, NULL, &out, err, sizeof err);
    ls_raw_record_t r = {.key_len = -1, .value_len = -1};
    const uint8_t d[] = {0x0e, 0x04, 'h', 'i', 0, 0, 0xc0, 0x3f}; /* 7, "hi", 1.5f */
    CHECK_EQ_INT(ls_typed_write(rd, w, &r, d, sizeof d, err, sizeof err), LS_OK);
    CHECK_EQ_INT(ls_pq_writer_finish(w), LS_OK);
    ls_pq_writer_free(w);
    char txt[128];
    column_text(&out, "name", txt, sizeof txt);
    CHECK(!strcmp(txt, "hi"));
    column_text(&out, "title", txt, sizeof txt);
    CHECK(strstr(txt, "no column") != NULL);
    ls_buf_free(&out);
    ls_typed_reader_free(rd);
    ls_avro_free(ra);
    /* a field named as the column takes it first: the alias then makes a new column */
    CHECK_EQ_INT(fit(s,
                     REC(F("id", "\"int\"") "," F(
                         "name", "\"string\"") ","
                                               "{\"name\":\"title\",\"type\":\"string\","
                                               "\"aliases\":[\"name\"]}," F(
                                                   "p", "{\"type\":\"record\",\"name\":\"P\","
                                                        "\"fields\":[" F("x", "\"float\"") "]}")),
                     &x, err, sizeof err),
                 LS_ECONFLICT);
    CHECK(x != NULL && has(x, "{\"id\":14,\"name\":\"title\",\"required\":false"));
    ls_typed_shape_free(x);
    /* a rename without an alias is a new column, the old one made optional */
    CHECK_EQ_INT(
        fit(s,
            REC(F("id", "\"int\"") "," F("title", "\"string\"") "," F(
                "p", "{\"type\":\"record\",\"name\":\"P\",\"fields\":[" F("x", "\"float\"") "]}")),
            &x, err, sizeof err),
        LS_ECONFLICT);
    CHECK(x != NULL && has(x, "{\"id\":11,\"name\":\"name\",\"required\":false") &&
          has(x, "\"name\":\"title\""));
    ls_typed_shape_free(x);
    /* the older version still fits */
    CHECK_EQ_INT(fit(s, V1, &x, err, sizeof err), LS_OK);
    ls_typed_shape_free(s);
}

/* A decimal widened past 9 and 18 digits: files of the narrower forms
 * (INT32, INT64) copied into the widened shape (small-file rewrite,
 * copy-on-write) hold the same values in its form (fixed bytes). */
TEST(widened_decimals_copy_into_the_new_form)
{
#define DCOL(p)                                                                                    \
    REC(F("d", "{\"type\":\"bytes\",\"logicalType\":\"decimal\",\"precision\":" #p ",\"scale\":"   \
               "2}"))
    const char *texts[] = {DCOL(9), DCOL(18), DCOL(25)};
#undef DCOL
    ls_avro_schema_t *a[3];
    ls_typed_shape_t *s[3];
    char err[512] = "";
    for (int i = 0; i < 3; i++)
        a[i] = parse(texts[i]);
    s[0] = ls_typed_shape_new(ls_avro_root(a[0]), err, sizeof err);
    CHECK(s[0] && ls_typed_evolve(s[0], ls_avro_root(a[1]), &s[1], err, sizeof err) == LS_OK);
    CHECK(s[1] && ls_typed_evolve(s[1], ls_avro_root(a[2]), &s[2], err, sizeof err) == LS_OK);
    if (!s[0] || !s[1] || !s[2]) return;
    const __int128 vals[] = {-99999999, 123456789, 99999999999999999, -5};
    ls_buf_t files[2], d, out;
    ls_buf_init(&d);
    ls_buf_init(&out);
    size_t nf;
    ls_raw_record_t r = {.key_len = -1, .value_len = -1};
    for (int i = 0; i < 2; i++) { /* a file in each narrower form */
        ls_buf_init(&files[i]);
        const ls_pq_field_t *f = ls_typed_parquet_fields(s[i], &nf);
        ls_pq_writer_t *w = ls_pq_writer_new(f, nf, NULL, &files[i], err, sizeof err);
        ls_typed_reader_t *rd = NULL;
        CHECK_EQ_INT(ls_typed_reader_new(s[i], ls_avro_root(a[i]), &rd, err, sizeof err), LS_OK);
        for (int k = 0; k < 4; k++) {
            if (i == 0 && k == 2) continue; /* 17 digits: not a decimal(9, 2) */
            d.len = 0;
            dec_bytes(&d, vals[k]);
            CHECK_EQ_INT(ls_typed_write(rd, w, &r, d.data, d.len, err, sizeof err), LS_OK);
        }
        CHECK_EQ_INT(ls_pq_writer_finish(w), LS_OK);
        ls_pq_writer_free(w);
        ls_typed_reader_free(rd);
    }
    /* both copied into one file of the widest shape */
    const ls_pq_field_t *f = ls_typed_parquet_fields(s[2], &nf);
    ls_pq_writer_t *w = ls_pq_writer_new(f, nf, NULL, &out, err, sizeof err);
    for (int i = 0; i < 2; i++) {
        ls_status st;
        ls_pqr_t *pr = ls_pqr_open(files[i].data, files[i].len, &st, err, sizeof err);
        CHECK(pr != NULL);
        if (pr) CHECK_EQ_INT(ls_pqr_copy_rows(pr, w, err, sizeof err), LS_OK);
        if (pr && *err) printf("# copy: %s\n", err);
        ls_pqr_free(pr);
    }
    CHECK_EQ_INT(ls_pq_writer_finish(w), LS_OK);
    ls_pq_writer_free(w);
    ls_status st;
    ls_pqr_t *pr = ls_pqr_open(out.data, out.len, &st, err, sizeof err);
    int col = pr ? ls_pqr_column_index(pr, "d") : -1;
    CHECK(col >= 0);
    if (col >= 0) {
        const ls_pqr_elem_t *e = ls_pqr_column(pr, col);
        CHECK(e->type == LS_PQR_FIXED_LEN_BYTE_ARRAY && e->type_length == 11);
        ls_pqr_flat_t fl;
        CHECK_EQ_INT(ls_pqr_read_flat(pr, 0, col, &fl, err, sizeof err), LS_OK);
        const __int128 want[] = {vals[0], vals[1], vals[3], vals[0], vals[1], vals[2], vals[3]};
        CHECK(fl.n == 7);
        for (int64_t i = 0; i < fl.n && i < 7; i++) {
            __int128 v = (fl.v[i].bytes[0] & 0x80) ? -1 : 0;
            for (size_t b = 0; b < fl.v[i].len; b++)
                v = (__int128)((unsigned __int128)v << 8 | fl.v[i].bytes[b]);
            CHECK(v == want[i]);
        }
        ls_pqr_flat_free(&fl);
    }
    ls_pqr_free(pr);
    for (int i = 0; i < 2; i++)
        ls_buf_free(&files[i]);
    ls_buf_free(&d);
    ls_buf_free(&out);
    for (int i = 0; i < 3; i++) {
        ls_typed_shape_free(s[i]);
        ls_avro_free(a[i]);
    }
}

/* Regression: a primary key field stored as fixed bytes (uuid, a wide
 * decimal) had the identity of a long taken from its datum, never equal to
 * the identity of its stored bytes, so upserts by it duplicated rows. */
TEST(fixed_byte_key_fields_have_byte_identities)
{
    ls_avro_schema_t
        *v = parse(REC(F("o", "\"string\""))),
        *k = parse(
            "{\"type\":\"record\",\"name\":\"K\",\"fields\":[{\"name\":\"ref\",\"type\":{\"type\":"
            "\"string\",\"logicalType\":\"uuid\"}},{\"name\":\"amt\",\"type\":{\"type\":\"bytes\","
            "\"logicalType\":\"decimal\",\"precision\":20,\"scale\":2}},{\"name\":\"n\",\"type\":{"
            "\"type\":\"bytes\",\"logicalType\":\"decimal\",\"precision\":9,\"scale\":0}}]}");
    const char *pk[] = {"ref", "amt", "n"};
    char err[512] = "";
    ls_typed_shape_t *s =
        ls_typed_shape_new_pk(ls_avro_root(v), ls_avro_root(k), pk, 3, err, sizeof err);
    CHECK(s != NULL);
    ls_typed_reader_t *kr = NULL;
    CHECK(s && ls_typed_key_reader_new(s, ls_avro_root(k), &kr, err, sizeof err) == LS_OK);
    ls_buf_t d, got, want;
    ls_buf_init(&d);
    ls_buf_init(&got);
    ls_buf_init(&want);
    const char *u = "00000000-0000-0000-0000-0000000000ff";
    zz(&d, 36);
    ls_buf_append(&d, u, 36);
    dec_bytes(&d, -150); /* amt -1.50: 9 fixed bytes */
    dec_bytes(&d, 7);    /* n 7: INT32 */
    if (kr) CHECK_EQ_INT(ls_typed_key_identity(kr, d.data, d.len, &got, err, sizeof err), LS_OK);
    uint8_t uuid[16] = {0}, amt[9];
    uuid[15] = 0xff;
    memset(amt, 0xff, sizeof amt);
    amt[8] = (uint8_t)-150;
    ls_file_ident_bytes(&want, uuid, 16);
    ls_file_ident_bytes(&want, amt, 9);
    ls_file_ident_long(&want, 7);
    CHECK(got.len == want.len && !memcmp(got.data, want.data, want.len));
    ls_buf_free(&d);
    ls_buf_free(&got);
    ls_buf_free(&want);
    ls_typed_reader_free(kr);
    ls_typed_shape_free(s);
    ls_avro_free(v);
    ls_avro_free(k);
}

/* ---- unions of several types: a struct of tag, field0, field1, ... ---- */

static const char UNI[] = REC(F("id", "\"int\"") "," F(
    "u", "[\"null\",\"long\",\"string\",{\"type\":\"record\",\"name\":\"Pt\",\"fields\":[{\"name\":"
         "\"x\",\"type\":\"int\"}]}]") "," F("v", "[\"int\",\"boolean\"]"));

TEST(unions_of_several_types)
{
    ls_avro_schema_t *a = parse(UNI);
    char err[512] = "";
    ls_typed_shape_t *s = ls_typed_shape_new(ls_avro_root(a), err, sizeof err), *x, *w2;
    CHECK(s != NULL);
    if (!s) {
        printf("# %s\n", err);
        ls_avro_free(a);
        return;
    }
    /* ids: id 10, u 11, v 12; u's tag 13, field0-2 14-16, Pt.x 17; v's tag 18, 19, 20 */
    CHECK(has(s,
              "{\"id\":11,\"name\":\"u\",\"required\":false,\"type\":{\"type\":\"struct\","
              "\"fields\":[{\"id\":13,\"name\":\"tag\",\"required\":true,\"type\":\"int\"},"
              "{\"id\":14,\"name\":\"field0\",\"required\":false,\"type\":\"long\"},"
              "{\"id\":15,\"name\":\"field1\",\"required\":false,\"type\":\"string\"},"
              "{\"id\":16,\"name\":\"field2\",\"required\":false,\"type\":{\"type\":\"struct\","
              "\"fields\":[{\"id\":17,\"name\":\"x\",\"required\":true,\"type\":\"int\"}]}}]}}"));
    CHECK(has(s, "{\"id\":12,\"name\":\"v\",\"required\":true,\"type\":{\"type\":\"struct\","
                 "\"fields\":[{\"id\":18,\"name\":\"tag\""));
    CHECK_EQ_INT(ls_typed_last_column_id(s), 20);
    ls_typed_reader_t *rd = NULL;
    CHECK_EQ_INT(ls_typed_reader_new(s, ls_avro_root(a), &rd, err, sizeof err), LS_OK);
    size_t nf;
    const ls_pq_field_t *f = ls_typed_parquet_fields(s, &nf);
    ls_buf_t out;
    ls_buf_init(&out);
    ls_pq_writer_t *w = ls_pq_writer_new(f, nf, NULL, &out, err, sizeof err);
    ls_raw_record_t r = {.key_len = -1, .value_len = -1};
    /* u: null, 7 (long), "hi" (string), {x: -1}; v: 5 (int), true (boolean), 5, true */
    const uint8_t rows[][8] = {{0x02, 0x00, 0x00, 0x0a},
                               {0x04, 0x02, 0x0e, 0x02, 0x01},
                               {0x06, 0x04, 0x04, 'h', 'i', 0x00, 0x0a},
                               {0x08, 0x06, 0x01, 0x02, 0x01}};
    const size_t lens[] = {4, 5, 7, 5};
    for (int i = 0; i < 4; i++)
        CHECK_EQ_INT(ls_typed_write(rd, w, &r, rows[i], lens[i], err, sizeof err), LS_OK);
    const uint8_t bad[] = {0x02, 0x08, 0x00, 0x00}; /* u: branch 4 of 4 */
    CHECK_EQ_INT(ls_typed_write(rd, w, &r, bad, sizeof bad, err, sizeof err), LS_ECORRUPT);
    CHECK(strstr(err, "union branch index out of range") != NULL);
    CHECK_EQ_INT(ls_pq_writer_finish(w), LS_OK);
    ls_pq_writer_free(w);
    char txt[256];
    column_text(&out, "u.tag", txt, sizeof txt);
    CHECK(!strcmp(txt, "null,0,1,2"));
    column_text(&out, "u.field0", txt, sizeof txt);
    CHECK(!strcmp(txt, "null,7,null,null"));
    column_text(&out, "u.field1", txt, sizeof txt);
    CHECK(!strcmp(txt, "null,null,hi,null"));
    column_text(&out, "u.field2.x", txt, sizeof txt);
    CHECK(!strcmp(txt, "null,null,null,-1"));
    column_text(&out, "v.tag", txt, sizeof txt);
    CHECK(!strcmp(txt, "0,1,0,1"));
    column_text(&out, "v.field0", txt, sizeof txt);
    CHECK(!strcmp(txt, "5,null,5,null"));
    /* corruptions of each row: a row or a refusal, never a crash (ASan build) */
    out.len = 0;
    w = ls_pq_writer_new(f, nf, NULL, &out, err, sizeof err);
    srand(13);
    for (int k = 0; k < 2000; k++) {
        uint8_t c[8];
        int i = k % 4;
        memcpy(c, rows[i], lens[i]);
        c[rand() % lens[i]] ^= (uint8_t)(1 + rand() % 255);
        ls_status st = ls_typed_write(rd, w, &r, c, lens[i], err, sizeof err);
        CHECK(st == LS_OK || st == LS_ECORRUPT);
    }
    CHECK_EQ_INT(ls_pq_writer_finish(w), LS_OK);
    ls_pq_writer_free(w);
    ls_buf_free(&out);
    ls_typed_reader_free(rd);
    ls_avro_free(a);
    /* evolution: a member widens (int -> long), a branch appended is a new member
     * (fresh id), reordered branches are refused by the members' types */
    CHECK_EQ_INT(fit(s, UNI, &x, err, sizeof err), LS_OK);
    CHECK_EQ_INT(
        fit(s,
            REC(F("id", "\"int\"") "," F(
                "u",
                "[\"null\",\"long\",\"string\",{\"type\":\"record\",\"name\":\"Pt\","
                "\"fields\":[{\"name\":\"x\",\"type\":\"int\"}]}]") "," F("v",
                                                                          "[\"long\",\"boolean\","
                                                                          "\"double\"]")),
            &w2, err, sizeof err),
        LS_ECONFLICT);
    CHECK(w2 != NULL && has(w2, "{\"id\":19,\"name\":\"field0\",\"required\":false,\"type\":"
                                "\"long\"},{\"id\":20,\"name\":\"field1\",\"required\":false,"
                                "\"type\":\"boolean\"},{\"id\":21,\"name\":\"field2\","
                                "\"required\":false,\"type\":\"double\"}"));
    /* the older version still fits the evolved table; the parsed-back shape too */
    CHECK_EQ_INT(fit(w2, UNI, &x, err, sizeof err), LS_OK);
    ls_typed_shape_t *back =
        w2 ? ls_typed_shape_parse(ls_typed_iceberg_schema_json(w2), 21, err, sizeof err) : NULL;
    CHECK(back != NULL);
    if (back) CHECK_EQ_INT(fit(back, UNI, &x, err, sizeof err), LS_OK);
    ls_typed_shape_free(back);
    CHECK_EQ_INT(fit(s,
                     REC(F("id", "\"int\"") "," F("u", "[\"null\",\"string\",\"long\"]") "," F(
                         "v", "[\"int\",\"boolean\"]")),
                     &x, err, sizeof err),
                 LS_EINVAL);
    CHECK(strstr(err, "/u/field0: Iceberg cannot promote the long column to string") != NULL);
    ls_typed_shape_free(w2);
    ls_typed_shape_free(s);
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

/* Partition sources (issue 14): columns by dotted path through structs only,
 * and their values decoded from a datum without writing a row. */
TEST(partition_source_columns_and_values)
{
    ls_avro_schema_t *a = parse(ORDER);
    char err[256] = "", type[48];
    ls_typed_shape_t *s = ls_typed_shape_new(ls_avro_root(a), err, sizeof err);
    CHECK(s != NULL);
    int id_id, note_id, e_id, ok_id, x_id, id;
    CHECK_EQ_INT(ls_typed_column_find(s, "id", &id_id, type, sizeof type, err, sizeof err), LS_OK);
    CHECK(id_id == 10 && !strcmp(type, "long"));
    CHECK_EQ_INT(ls_typed_column_find(s, "note", &note_id, type, sizeof type, err, sizeof err),
                 LS_OK);
    CHECK(!strcmp(type, "string"));
    CHECK_EQ_INT(ls_typed_column_find(s, "e", &e_id, type, sizeof type, err, sizeof err), LS_OK);
    CHECK_EQ_INT(ls_typed_column_find(s, "s.ok", &ok_id, type, sizeof type, err, sizeof err),
                 LS_OK);
    CHECK(!strcmp(type, "boolean"));
    CHECK_EQ_INT(ls_typed_column_find(s, "s.x", &x_id, type, sizeof type, err, sizeof err), LS_OK);
    CHECK(!strcmp(type, "double"));
    CHECK_EQ_INT(ls_typed_column_find(s, "tags", &id, type, sizeof type, err, sizeof err),
                 LS_EINVAL);
    CHECK(strstr(err, "tags is a list, not a primitive column"));
    CHECK_EQ_INT(ls_typed_column_find(s, "tags.element", &id, type, sizeof type, err, sizeof err),
                 LS_EINVAL);
    CHECK(strstr(err, "inside a list"));
    CHECK_EQ_INT(ls_typed_column_find(s, "s", &id, type, sizeof type, err, sizeof err), LS_EINVAL);
    CHECK(strstr(err, "s is a struct"));
    CHECK_EQ_INT(ls_typed_column_find(s, "s.y", &id, type, sizeof type, err, sizeof err),
                 LS_EINVAL);
    CHECK(strstr(err, "s.y: no field y in the table's schema"));
    CHECK_EQ_INT(ls_typed_column_find(s, "id.x", &id, type, sizeof type, err, sizeof err),
                 LS_EINVAL);
    CHECK_EQ_INT(
        ls_typed_column_find(s, LS_TYPED_KEY_COLUMN, &id, type, sizeof type, err, sizeof err),
        LS_EINVAL);
    CHECK(strstr(err, "no typed key column"));

    ls_typed_reader_t *rd = NULL;
    CHECK_EQ_INT(ls_typed_reader_new(s, ls_avro_root(a), &rd, err, sizeof err), LS_OK);
    ls_typed_datum_t d = {rd, DATUM, sizeof DATUM};
    int ids[4] = {id_id, note_id, e_id, ok_id};
    ls_ice_sval_t v[4];
    CHECK_EQ_INT(ls_typed_values(&d, NULL, ids, 4, v, err, sizeof err), LS_OK);
    CHECK(!v[0].null && v[0].l == -3);
    CHECK(!v[1].null && v[1].n == 2 && !memcmp(v[1].p, "hi", 2));
    CHECK(!v[2].null && v[2].n == 1 && v[2].p[0] == 'B');
    CHECK(!v[3].null && v[3].l == 1);
    uint8_t nulled[sizeof DATUM]; /* note: the null branch */
    nulled[0] = DATUM[0];
    nulled[1] = 0x00;
    memcpy(nulled + 2, DATUM + 5, sizeof DATUM - 5);
    d.datum = nulled, d.len = sizeof DATUM - 3;
    CHECK_EQ_INT(ls_typed_values(&d, NULL, ids, 4, v, err, sizeof err), LS_OK);
    CHECK(v[1].null && !v[0].null && v[2].p[0] == 'B');
    d.len = sizeof DATUM - 4; /* truncated */
    CHECK_EQ_INT(ls_typed_values(&d, NULL, ids, 4, v, err, sizeof err), LS_ECORRUPT);
    CHECK(strstr(err, "does not match its schema"));
    ls_typed_reader_free(rd);
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
    RUN(evolution_keeps_ids_and_adds_fresh_ones);
    RUN(incompatible_changes_name_the_path);
    RUN(decimal_fixed_uuid_time);
    RUN(decimal_widening_and_uuid_strings);
    RUN(unions_of_several_types);
    RUN(renamed_fields_follow_their_aliases);
    RUN(fixed_byte_key_fields_have_byte_identities);
    RUN(widened_decimals_copy_into_the_new_form);
    RUN(typed_keys);
    RUN(primary_keys);
    RUN(partition_source_columns_and_values);
    RUN(unframe);
    UNIT_DONE();
}
