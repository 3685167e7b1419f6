/* registry/avro_view.c: JSON Schema -> the Avro view typed tables are made
 * from (the Iceberg columns it gives, through table/iceberg_typed.h), JSON
 * instances transcoded to Avro datums (exact bytes, and every datum checked
 * against the view's schema), values that do not fit refused with the path,
 * schemas that do not map refused with the path, and evolution between two
 * JSON schema versions. Reading rows back: tests/integration/
 * test_typed_json.py (PyIceberg, DuckDB). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "registry/avro_view.h"
#include "table/iceberg_typed.h"
#include "unit.h"

static ls_jsonschema_t *load(const char *text)
{
    char err[256];
    ls_jsonschema_t *s = ls_jsonschema_parse(NULL, NULL, 0, text, err, sizeof err);
    if (!s) printf("# json schema: %s\n", err);
    return s;
}

static const char ORDER[] =
    "{\"title\":\"shop.Order\",\"type\":\"object\",\"required\":[\"id\",\"at\",\"lines\"],"
    "\"properties\":{"
    "\"id\":{\"type\":\"integer\"},"
    "\"qty\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":1000},"
    "\"price\":{\"type\":\"number\"},"
    "\"note\":{\"type\":[\"string\",\"null\"]},"
    "\"at\":{\"type\":\"string\",\"format\":\"date-time\"},"
    "\"day\":{\"type\":\"string\",\"format\":\"date\"},"
    "\"ok\":{\"type\":\"boolean\"},"
    "\"kind\":{\"type\":\"string\",\"enum\":[\"a\",\"b\"]},"
    "\"lines\":{\"type\":\"array\",\"items\":{\"$ref\":\"#/definitions/line\"}},"
    "\"attrs\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"integer\"}},"
    "\"extra\":{},"
    "\"blob\":{\"type\":\"string\",\"contentEncoding\":\"base64\"}},"
    "\"definitions\":{\"line\":{\"type\":\"object\",\"required\":[\"sku\"],\"properties\":{"
    "\"sku\":{\"type\":\"string\"},\"n\":{\"anyOf\":[{\"type\":\"null\"},{\"type\":"
    "\"integer\"}]}}}}}";

TEST(columns_of_a_json_schema)
{
    ls_jsonschema_t *js = load(ORDER);
    CHECK(js != NULL);
    char err[256] = "";
    ls_avro_view_t *v = ls_avro_view_json(js, err, sizeof err);
    if (!v) printf("# %s\n", err);
    CHECK(v != NULL);
    CHECK(!strcmp(ls_avro_view_root(v)->fullname, "shop.Order")); /* record-name strategies */
    ls_typed_shape_t *s = ls_typed_shape_new(ls_avro_view_root(v), err, sizeof err);
    if (!s) printf("# %s\n", err);
    CHECK(s != NULL);
    const char *j = ls_typed_iceberg_schema_json(s);
    CHECK(strstr(j, "{\"id\":10,\"name\":\"id\",\"required\":true,\"type\":\"long\"}") != NULL);
    CHECK(strstr(j, "\"name\":\"qty\",\"required\":false,\"type\":\"int\"") != NULL);
    CHECK(strstr(j, "\"name\":\"price\",\"required\":false,\"type\":\"double\"") != NULL);
    CHECK(strstr(j, "\"name\":\"note\",\"required\":false,\"type\":\"string\"") != NULL);
    CHECK(strstr(j, "\"name\":\"at\",\"required\":true,\"type\":\"timestamptz\"") != NULL);
    CHECK(strstr(j, "\"name\":\"day\",\"required\":false,\"type\":\"date\"") != NULL);
    CHECK(strstr(j, "\"name\":\"ok\",\"required\":false,\"type\":\"boolean\"") != NULL);
    CHECK(strstr(j, "\"name\":\"kind\",\"required\":false,\"type\":\"string\"") != NULL);
    CHECK(strstr(j, "\"name\":\"extra\",\"required\":false,\"type\":\"string\"") != NULL);
    CHECK(strstr(j, "\"name\":\"blob\",\"required\":false,\"type\":\"binary\"") != NULL);
    CHECK(strstr(j, "\"type\":\"map\",\"key-id\":") != NULL);
    CHECK(strstr(j, "\"name\":\"sku\",\"required\":true,\"type\":\"string\"") != NULL);
    CHECK(strstr(j, "\"name\":\"n\",\"required\":false,\"type\":\"long\"") != NULL);
    ls_typed_shape_free(s);
    ls_avro_view_free(v);
    ls_jsonschema_free(js);
}

static int encode(const ls_avro_view_t *v, const char *json, ls_buf_t *out, char *why, size_t n)
{
    ls_buf_init(out);
    int rc =
        ls_avro_view_encode(v, (const uint8_t *)json, strlen(json), out, why, n) == LS_OK ? 0 : -1;
    if (rc == 0) {
        char e[256];
        /* whatever the transcoder writes is exactly one datum of the view's schema */
        if (ls_avro_datum_check(ls_avro_view_root(v), out->data, out->len, e, sizeof e) != 0) {
            printf("# datum check: %s\n", e);
            return -2;
        }
    }
    return rc;
}

TEST(instances_become_datums)
{
    ls_jsonschema_t *js = load(ORDER);
    char why[256];
    ls_avro_view_t *v = ls_avro_view_json(js, why, sizeof why);
    CHECK(v != NULL);
    ls_buf_t b;
    CHECK_EQ_INT(encode(v,
                        "{\"id\":-3,\"at\":\"1970-01-01T00:00:01.5+01:00\",\"lines\":[],"
                        "\"ignored\":[1,2]}",
                        &b, why, sizeof why),
                 0);
    /* id -3, then qty, price and note null (branch 0) */
    CHECK(b.data[0] == 0x05 && b.data[1] == 0 && b.data[2] == 0 && b.data[3] == 0);
    /* at = 1 s + 0.5 s - 1 h = -3598.5 s = -3598500000 us, zig-zag 7196999999 */
    uint64_t z = 0;
    size_t i = 4;
    for (int sh = 0; i < b.len; sh += 7) {
        z |= (uint64_t)(b.data[i] & 0x7f) << sh;
        if (!(b.data[i++] & 0x80)) break;
    }
    CHECK(z == 7196999999ULL);
    ls_buf_free(&b);
    CHECK_EQ_INT(
        encode(v,
               "{\"id\":1,\"qty\":7,\"price\":2,\"note\":\"x\",\"at\":\"2024-02-29T23:59:"
               "59Z\",\"day\":\"2024-02-29\",\"ok\":true,\"kind\":\"b\",\"lines\":[{\"sku\":"
               "\"s\",\"n\":null},{\"sku\":\"t\",\"n\":3}],\"attrs\":{\"a\":1},\"extra\":{"
               "\"x\":[1,null]},\"blob\":\"AAEC\"}",
               &b, why, sizeof why),
        0);
    CHECK(memmem(b.data, b.len, "{\"x\":[1,null]}", 14) != NULL); /* the JSON text */
    CHECK(memmem(b.data, b.len, "\x06\x00\x01\x02", 4) != NULL);  /* the bytes of AAEC */
    ls_buf_free(&b);
    /* what does not fit is refused with the path */
    struct {
        const char *json, *why;
    } bad[] = {
        {"{\"at\":\"2024-01-01T00:00:00Z\",\"lines\":[]}", "/id: the property is required"},
        {"{\"id\":null,\"at\":\"2024-01-01T00:00:00Z\",\"lines\":[]}", "/id: null where"},
        {"{\"id\":1.5,\"at\":\"2024-01-01T00:00:00Z\",\"lines\":[]}", "/id: a number where"},
        {"{\"id\":\"1\",\"at\":\"2024-01-01T00:00:00Z\",\"lines\":[]}", "/id: a string where"},
        {"{\"id\":1,\"qty\":3000000000,\"at\":\"2024-01-01T00:00:00Z\",\"lines\":[]}",
         "/qty: 3000000000 is greater than maximum 1000"}, /* the schema's own limit */
        {"{\"id\":1,\"at\":\"2024-01-01\",\"lines\":[]}", "/at: a string that is not a date-time"},
        {"{\"id\":1,\"at\":\"2023-02-29T00:00:00Z\",\"lines\":[]}", "/at:"},
        {"{\"id\":1,\"day\":\"2023-13-01\",\"at\":\"2024-01-01T00:00:00Z\",\"lines\":[]}",
         "/day: a string that is not a date"},
        {"{\"id\":1,\"kind\":\"c\",\"at\":\"2024-01-01T00:00:00Z\",\"lines\":[]}",
         "/kind: the value is not one of"},
        {"{\"id\":1,\"at\":\"2024-01-01T00:00:00Z\",\"lines\":[{\"n\":1}]}",
         "/lines/0/sku: the property is required"},
        {"{\"id\":1,\"at\":\"2024-01-01T00:00:00Z\",\"lines\":{}}", "/lines: an object where"},
        {"{\"id\":1,\"at\":\"2024-01-01T00:00:00Z\",\"lines\":[],\"attrs\":{\"k\":\"v\"}}",
         "/attrs/k: a string where"},
        {"{\"id\":1,\"at\":\"2024-01-01T00:00:00Z\",\"lines\":[],\"blob\":\"!!\"}",
         "/blob: a string that is not base64"},
        {"[1]", "/: an array where"},
        {"{\"id\":1", "not one JSON text"},
        {"{\"id\":1,\"id\":2}", "not one JSON text"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        why[0] = 0;
        int rc = encode(v, bad[k].json, &b, why, sizeof why);
        ls_buf_free(&b);
        if (rc != -1 || !strstr(why, bad[k].why)) printf("# %s -> %d %s\n", bad[k].json, rc, why);
        CHECK(rc == -1 && strstr(why, bad[k].why));
    }
    ls_avro_view_free(v);
    ls_jsonschema_free(js);
}

TEST(unmapped_schemas_name_the_path)
{
    struct {
        const char *schema, *why;
    } bad[] = {
        {"{\"type\":\"object\",\"properties\":{\"t\":{\"type\":\"array\",\"prefixItems\":[{}]}}}",
         "#/properties/t: tuples"},
        {"{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"null\"}}}",
         "#/properties/n: a schema accepting only null"},
        {"{\"type\":\"object\",\"properties\":{\"a\":{\"allOf\":[{\"type\":\"string\"},{\"type\":"
         "\"integer\"}]}}}",
         "#/properties/a: allOf of several"},
        {"{\"$ref\":\"#/definitions/"
         "n\",\"definitions\":{\"n\":{\"type\":\"object\",\"properties\":{"
         "\"next\":{\"$ref\":\"#/definitions/n\"}}}}}",
         "#/properties/next: a recursive schema"},
        {"{\"type\":\"object\",\"properties\":{\"e\":{\"enum\":[\"a\",1]}}}",
         "#/properties/e: an enum"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        ls_jsonschema_t *js = load(bad[k].schema);
        CHECK(js != NULL);
        char why[256] = "";
        ls_avro_view_t *v = ls_avro_view_json(js, why, sizeof why);
        if (v || !strstr(why, bad[k].why)) printf("# %s -> %s\n", bad[k].schema, why);
        CHECK(v == NULL && strstr(why, bad[k].why));
        ls_jsonschema_free(js);
    }
    /* a top level that is no object with properties maps, but makes no value columns */
    const char *tops[] = {"{\"type\":\"string\"}", "{\"type\":\"object\"}"};
    for (size_t k = 0; k < 2; k++) {
        ls_jsonschema_t *js = load(tops[k]);
        char why[256] = "";
        ls_avro_view_t *v = ls_avro_view_json(js, why, sizeof why);
        CHECK(v != NULL && ls_avro_view_root(v)->kind == LS_AVRO_STRING);
        CHECK(ls_typed_shape_new(ls_avro_view_root(v), why, sizeof why) == NULL);
        CHECK(strstr(why, "must be a record") != NULL);
        ls_avro_view_free(v);
        ls_jsonschema_free(js);
    }
    /* several non-null types: the value's JSON text */
    ls_jsonschema_t *js = load("{\"type\":\"object\",\"properties\":{\"u\":{\"type\":[\"string\","
                               "\"integer\",\"null\"]}}}");
    char why[256];
    ls_avro_view_t *v = ls_avro_view_json(js, why, sizeof why);
    CHECK(v != NULL);
    ls_buf_t b;
    CHECK_EQ_INT(encode(v, "{\"u\":12}", &b, why, sizeof why), 0);
    CHECK(b.len == 4 && b.data[0] == 2 && b.data[1] == 4 && !memcmp(b.data + 2, "12", 2));
    ls_buf_free(&b);
    ls_avro_view_free(v);
    ls_jsonschema_free(js);
}

TEST(evolution_between_json_versions)
{
    const char *v1 = "{\"type\":\"object\",\"required\":[\"id\"],\"properties\":{\"id\":{\"type\":"
                     "\"integer\",\"minimum\":0,\"maximum\":100},\"x\":{\"type\":\"number\"}}}";
    const char *v2 = "{\"type\":\"object\",\"required\":[\"id\"],\"properties\":{\"id\":{\"type\":"
                     "\"integer\"},\"x\":{\"type\":\"number\"},\"tag\":{\"type\":\"string\"}}}";
    const char *v3 = "{\"type\":\"object\",\"properties\":{\"id\":{\"type\":\"string\"}}}";
    ls_jsonschema_t *j1 = load(v1), *j2 = load(v2), *j3 = load(v3);
    char err[256];
    ls_avro_view_t *a1 = ls_avro_view_json(j1, err, sizeof err);
    ls_avro_view_t *a2 = ls_avro_view_json(j2, err, sizeof err);
    ls_avro_view_t *a3 = ls_avro_view_json(j3, err, sizeof err);
    CHECK(a1 && a2 && a3);
    ls_typed_shape_t *s1 = ls_typed_shape_new(ls_avro_view_root(a1), err, sizeof err);
    CHECK(s1 != NULL);
    CHECK(strstr(ls_typed_iceberg_schema_json(s1), "\"name\":\"id\",\"required\":true,\"type\":"
                                                   "\"int\"") != NULL);
    ls_typed_reader_t *rd = NULL;
    CHECK_EQ_INT(ls_typed_reader_new(s1, ls_avro_view_root(a2), &rd, err, sizeof err),
                 LS_ECONFLICT);
    ls_typed_shape_t *s2 = NULL;
    CHECK_EQ_INT(ls_typed_evolve(s1, ls_avro_view_root(a2), &s2, err, sizeof err), LS_OK);
    const char *j = ls_typed_iceberg_schema_json(s2);
    CHECK(strstr(j, "{\"id\":10,\"name\":\"id\",\"required\":true,\"type\":\"long\"}") != NULL);
    CHECK(strstr(j, "\"name\":\"tag\",\"required\":false,\"type\":\"string\"") != NULL);
    /* the older version fits the evolved table as it is */
    CHECK_EQ_INT(ls_typed_reader_new(s2, ls_avro_view_root(a1), &rd, err, sizeof err), LS_OK);
    ls_typed_reader_free(rd);
    /* a string where the table has a long is refused with the path */
    ls_typed_shape_t *s3 = NULL;
    CHECK_EQ_INT(ls_typed_evolve(s2, ls_avro_view_root(a3), &s3, err, sizeof err), LS_EINVAL);
    CHECK(strstr(err, "/id") != NULL);
    ls_typed_shape_free(s1);
    ls_typed_shape_free(s2);
    ls_avro_view_free(a1);
    ls_avro_view_free(a2);
    ls_avro_view_free(a3);
    ls_jsonschema_free(j1);
    ls_jsonschema_free(j2);
    ls_jsonschema_free(j3);
}

static const char PROTO[] =
    "syntax = \"proto3\"; package shop;\n"
    "import \"google/protobuf/timestamp.proto\";\n"
    "import \"google/protobuf/wrappers.proto\";\n"
    "message Order {\n"
    "  int64 id = 1; string customer = 2; double amount = 3; int32 qty = 4; bool paid = 5;\n"
    "  Status status = 6; google.protobuf.Timestamp created = 7; repeated string tags = 8;\n"
    "  map<string, int64> attrs = 9; Address address = 10; repeated Line lines = 11;\n"
    "  optional string note = 12; uint64 big = 13; sint32 delta = 14;\n"
    "  oneof pay { string card = 15; string iban = 16; }\n"
    "  google.protobuf.Int32Value maybe = 17; map<int32, string> codes = 18;\n"
    "  repeated int32 nums = 19;\n"
    "  message Line { string sku = 1; int32 n = 2; }\n"
    "}\n"
    "message Address { string street = 1; optional int32 zip = 2; }\n"
    "enum Status { NEW = 0; PAID = 1; }\n"
    "message Node { string name = 1; repeated Node kids = 2; }\n";

static void pb_varint(ls_buf_t *b, uint64_t v)
{
    while (v >= 0x80) {
        ls_buf_append_u8(b, (uint8_t)(v | 0x80));
        v >>= 7;
    }
    ls_buf_append_u8(b, (uint8_t)v);
}

static void pb_tag(ls_buf_t *b, int num, int wt)
{
    pb_varint(b, (uint64_t)num << 3 | (uint64_t)wt);
}

static void pb_str(ls_buf_t *b, int num, const char *s)
{
    pb_tag(b, num, 2);
    pb_varint(b, strlen(s));
    ls_buf_append(b, s, strlen(s));
}

static void pb_sub(ls_buf_t *b, int num, const ls_buf_t *sub)
{
    pb_tag(b, num, 2);
    pb_varint(b, sub->len);
    ls_buf_append(b, sub->data, sub->len);
}

static int pb_encode_check(const ls_avro_view_t *v, const ls_buf_t *in, ls_buf_t *out, char *why,
                           size_t n)
{
    ls_buf_init(out);
    int rc = ls_avro_view_encode(v, in->data, in->len, out, why, n) == LS_OK ? 0 : -1;
    if (rc == 0) {
        char e[256];
        if (ls_avro_datum_check(ls_avro_view_root(v), out->data, out->len, e, sizeof e) != 0) {
            printf("# datum check: %s\n", e);
            return -2;
        }
    }
    return rc;
}

TEST(protobuf_messages_become_columns)
{
    char err[256] = "";
    ls_proto_t *p = ls_proto_parse(NULL, NULL, 0, PROTO, err, sizeof err);
    if (!p) printf("# %s\n", err);
    CHECK(p != NULL);
    ls_avro_views_t *vs = ls_avro_views_proto(p);
    /* nested messages count map entries (AttrsEntry, CodesEntry, Line), as protoc does */
    int64_t idx0[] = {0}, idx_line[] = {0, 2}, idx_node[] = {2}, idx_bad[] = {7};
    const ls_avro_view_t *v = ls_avro_views_find(vs, idx0, 1, err, sizeof err);
    if (!v) printf("# %s\n", err);
    CHECK(v != NULL);
    CHECK(ls_avro_views_find(vs, NULL, 0, err, sizeof err) == v); /* [] is [0] */
    const ls_avro_view_t *line = ls_avro_views_find(vs, idx_line, 2, err, sizeof err);
    CHECK(line && !strcmp(ls_avro_view_root(line)->fullname, "shop.Order.Line"));
    CHECK(ls_avro_views_find(vs, idx_node, 1, err, sizeof err) == NULL);
    CHECK(strstr(err, "recursive") != NULL);
    CHECK(ls_avro_views_find(vs, idx_bad, 1, err, sizeof err) == NULL);
    CHECK(strstr(err, "names no message") != NULL);
    CHECK(!strcmp(ls_avro_view_root(v)->fullname, "shop.Order"));
    ls_typed_shape_t *s = ls_typed_shape_new(ls_avro_view_root(v), err, sizeof err);
    if (!s) printf("# %s\n", err);
    CHECK(s != NULL);
    const char *j = ls_typed_iceberg_schema_json(s);
    CHECK(strstr(j, "{\"id\":10,\"name\":\"id\",\"required\":true,\"type\":\"long\"}") != NULL);
    CHECK(strstr(j, "\"name\":\"qty\",\"required\":true,\"type\":\"int\"") != NULL);
    CHECK(strstr(j, "\"name\":\"status\",\"required\":true,\"type\":\"string\"") != NULL);
    CHECK(strstr(j, "\"name\":\"created\",\"required\":false,\"type\":\"timestamptz\"") != NULL);
    CHECK(strstr(j, "\"name\":\"note\",\"required\":false,\"type\":\"string\"") != NULL);
    CHECK(strstr(j, "\"name\":\"big\",\"required\":true,\"type\":\"long\"") != NULL);
    CHECK(strstr(j, "\"name\":\"card\",\"required\":false,\"type\":\"string\"") != NULL);
    CHECK(strstr(j, "\"name\":\"maybe\",\"required\":false,\"type\":\"int\"") != NULL);
    CHECK(strstr(j, "\"name\":\"zip\",\"required\":false,\"type\":\"int\"") != NULL);
    CHECK(strstr(j, "\"type\":\"map\",\"key-id\":") != NULL);
    ls_typed_shape_free(s);

    /* a message with every kind, fields out of order, repeated ones split */
    ls_buf_t m, sub, out;
    ls_buf_init(&m);
    pb_tag(&m, 4, 0), pb_varint(&m, (uint64_t)(int64_t)-5); /* qty -5: 10-byte varint */
    pb_tag(&m, 1, 0), pb_varint(&m, 42);
    pb_str(&m, 2, "c1");
    pb_tag(&m, 3, 1), ls_buf_append(&m, "\0\0\0\0\0\0\xf8\x3f", 8); /* 1.5 */
    pb_tag(&m, 6, 0), pb_varint(&m, 1);
    ls_buf_init(&sub);
    pb_tag(&sub, 1, 0), pb_varint(&sub, 1700000000), pb_tag(&sub, 2, 0), pb_varint(&sub, 5000);
    pb_sub(&m, 7, &sub);
    ls_buf_free(&sub);
    pb_str(&m, 8, "a"), pb_str(&m, 8, "b");
    ls_buf_init(&sub);
    pb_str(&sub, 1, "k"), pb_tag(&sub, 2, 0), pb_varint(&sub, 1);
    pb_sub(&m, 9, &sub), pb_sub(&m, 9, &sub); /* the same key twice: one entry */
    ls_buf_free(&sub);
    pb_str(&m, 15, "card"), pb_str(&m, 16, "iban"); /* the oneof: iban set last */
    ls_buf_init(&sub);
    pb_tag(&sub, 1, 0), pb_varint(&sub, 7);
    pb_sub(&m, 17, &sub);
    ls_buf_free(&sub);
    ls_buf_init(&sub);
    pb_tag(&sub, 1, 0), pb_varint(&sub, 3), pb_str(&sub, 2, "three");
    pb_sub(&m, 18, &sub);
    ls_buf_free(&sub);
    ls_buf_init(&sub); /* packed, then one unpacked */
    pb_varint(&sub, 1), pb_varint(&sub, 300);
    pb_sub(&m, 19, &sub);
    ls_buf_free(&sub);
    pb_tag(&m, 19, 0), pb_varint(&m, 2);
    pb_tag(&m, 99, 0), pb_varint(&m, 1); /* an unknown field: skipped */
    CHECK_EQ_INT(pb_encode_check(v, &m, &out, err, sizeof err), 0);
    CHECK(memmem(out.data, out.len, "\x08iban", 5) != NULL);
    CHECK(memmem(out.data, out.len,
                 "\x08"
                 "card",
                 5) == NULL);
    CHECK(memmem(out.data, out.len,
                 "\x08"
                 "PAID",
                 5) != NULL);
    ls_buf_free(&out);
    /* an empty message: proto3 defaults, nulls, empty lists */
    ls_buf_t empty;
    ls_buf_init(&empty);
    CHECK_EQ_INT(pb_encode_check(v, &empty, &out, err, sizeof err), 0);
    CHECK(memmem(out.data, out.len,
                 "\x06"
                 "NEW",
                 4) != NULL); /* the enum's default */
    ls_buf_free(&out);
    /* what does not fit */
    ls_buf_t bad;
    ls_buf_init(&bad);
    pb_tag(&bad, 13, 0), pb_varint(&bad, (uint64_t)1 << 63);
    CHECK_EQ_INT(pb_encode_check(v, &bad, &out, err, sizeof err), -1);
    CHECK(strstr(err, "/big:") && strstr(err, "out of the long column"));
    ls_buf_free(&out);
    bad.len = 0;
    pb_str(&bad, 1, "x"); /* a string where id is a varint */
    CHECK_EQ_INT(pb_encode_check(v, &bad, &out, err, sizeof err), -1);
    CHECK(strstr(err, "/id: wire type 2") != NULL);
    ls_buf_free(&out);
    bad.len = 0;
    pb_tag(&bad, 2, 2), pb_varint(&bad, 50); /* runs past the end */
    CHECK_EQ_INT(pb_encode_check(v, &bad, &out, err, sizeof err), -1);
    ls_buf_free(&out);
    bad.len = 0;
    pb_str(&bad, 2, "\xff\xfe");
    CHECK_EQ_INT(pb_encode_check(v, &bad, &out, err, sizeof err), -1);
    CHECK(strstr(err, "UTF-8") != NULL);
    ls_buf_free(&out);
    ls_buf_free(&bad);
    ls_buf_free(&empty);
    ls_buf_free(&m);
    /* the index array */
    int64_t idx[8];
    size_t n, used;
    const uint8_t zero[] = {0}, two[] = {4, 0, 2}, neg[] = {2, 1};
    CHECK(ls_avro_view_proto_indexes(zero, 1, idx, 8, &n, &used) == 0 && n == 0 && used == 1);
    CHECK(ls_avro_view_proto_indexes(two, 3, idx, 8, &n, &used) == 0 && n == 2 && idx[1] == 1);
    CHECK(ls_avro_view_proto_indexes(neg, 2, idx, 8, &n, &used) == -1);
    ls_avro_views_free(vs);
    ls_proto_free(p);
}

TEST(protobuf_proto2_required_and_groups)
{
    char err[256] = "";
    ls_proto_t *p = ls_proto_parse(NULL, NULL, 0,
                                   "syntax = \"proto2\"; message R { required int32 a = 1; "
                                   "optional string b = 2; } message G { optional group X = 1 { "
                                   "optional int32 y = 2; } }",
                                   err, sizeof err);
    if (!p) printf("# %s\n", err);
    CHECK(p != NULL);
    ls_avro_views_t *vs = ls_avro_views_proto(p);
    int64_t r0[] = {0}, g0[] = {1};
    const ls_avro_view_t *v = ls_avro_views_find(vs, r0, 1, err, sizeof err);
    CHECK(v != NULL);
    ls_buf_t in, out;
    ls_buf_init(&in);
    pb_str(&in, 2, "b");
    CHECK_EQ_INT(pb_encode_check(v, &in, &out, err, sizeof err), -1);
    CHECK(strstr(err, "/a: the required field is missing") != NULL);
    ls_buf_free(&out);
    ls_buf_free(&in);
    CHECK(ls_avro_views_find(vs, g0, 1, err, sizeof err) == NULL);
    CHECK(strstr(err, "groups") != NULL);
    ls_avro_views_free(vs);
    ls_proto_free(p);
}

static ls_json_fit infer(json_t **s, const char *text)
{
    char why[256] = "";
    ls_json_fit rc = ls_json_infer(s, (const uint8_t *)text, strlen(text), why, sizeof why);
    if (rc == LS_JSON_CONFLICT || rc == LS_JSON_NOT_OBJECT)
        printf("# infer %s: %d %s\n", text, (int)rc, why);
    return rc;
}

TEST(schemaless_json_inference)
{
    json_t *s = NULL;
    CHECK_EQ_INT(infer(&s, "{\"a\":1,\"b\":null,\"c\":[],\"d\":{\"x\":\"s\"},\"e\":1.5}"),
                 LS_JSON_WIDENED);
    char *t = json_dumps(s, JSON_COMPACT);
    CHECK(!strcmp(t, "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"},"
                     "\"d\":{\"type\":\"object\",\"properties\":{\"x\":{\"type\":"
                     "\"string\"}}},\"e\":{\"type\":\"number\"},\"_raw\":{\"type\":"
                     "\"string\"}}}"));
    free(t);
    CHECK_EQ_INT(infer(&s, "{\"a\":2,\"e\":3}"), LS_JSON_FITS); /* an integer into a number */
    CHECK_EQ_INT(infer(&s, "{\"c\":[true],\"d\":{\"y\":[1]}}"), LS_JSON_WIDENED); /* new columns */
    json_t *copy = json_deep_copy(s);
    CHECK_EQ_INT(infer(&copy, "{\"a\":1.5}"), LS_JSON_CONFLICT); /* long cannot become double */
    json_decref(copy);
    copy = json_deep_copy(s);
    CHECK_EQ_INT(infer(&copy, "{\"d\":{\"x\":1}}"), LS_JSON_CONFLICT);
    json_decref(copy);
    copy = json_deep_copy(s);
    CHECK_EQ_INT(infer(&copy, "{\"_raw\":\"x\"}"), LS_JSON_CONFLICT);
    json_decref(copy);
    char why[128];
    CHECK_EQ_INT(ls_json_infer(&s, (const uint8_t *)"[1]", 3, why, sizeof why), LS_JSON_NOT_OBJECT);
    CHECK_EQ_INT(ls_json_infer(&s, (const uint8_t *)"{", 1, why, sizeof why), LS_JSON_NOT_OBJECT);
    /* the view of the inferred schema, and the same schema back from the table's columns */
    t = json_dumps(s, JSON_COMPACT);
    ls_jsonschema_t *js = load(t);
    free(t);
    CHECK(js != NULL);
    ls_avro_view_t *v = ls_avro_view_json(js, why, sizeof why);
    CHECK(v != NULL);
    ls_typed_shape_t *sh = ls_typed_shape_new(ls_avro_view_root(v), why, sizeof why);
    CHECK(sh != NULL);
    json_t *back = ls_json_infer_from_iceberg(ls_typed_iceberg_schema_json(sh));
    CHECK(back != NULL);
    CHECK(json_equal(back, s));
    json_decref(back);
    ls_typed_shape_free(sh);
    ls_avro_view_free(v);
    ls_jsonschema_free(js);
    json_decref(s);
}

/* format: uuid -> a uuid column; the text form is checked when transcoding */
TEST(json_uuid_format)
{
    ls_jsonschema_t *js = load("{\"type\":\"object\",\"required\":[\"u\"],\"properties\":{"
                               "\"u\":{\"type\":\"string\",\"format\":\"uuid\"}}}");
    char err[256] = "";
    ls_avro_view_t *v = js ? ls_avro_view_json(js, err, sizeof err) : NULL;
    CHECK(v != NULL);
    if (!v) {
        ls_jsonschema_free(js);
        return;
    }
    ls_typed_shape_t *s = ls_typed_shape_new(ls_avro_view_root(v), err, sizeof err);
    CHECK(s && strstr(ls_typed_iceberg_schema_json(s),
                      "\"name\":\"u\",\"required\":true,\"type\":\"uuid\"") != NULL);
    ls_typed_reader_t *rd = NULL;
    CHECK(s && ls_typed_reader_new(s, ls_avro_view_root(v), &rd, err, sizeof err) == LS_OK);
    ls_buf_t b;
    ls_buf_init(&b);
    const char *good = "{\"u\":\"123E4567-e89b-12d3-a456-426614174000\"}";
    CHECK_EQ_INT(ls_avro_view_encode(v, (const uint8_t *)good, strlen(good), &b, err, sizeof err),
                 0);
    /* the datum becomes a row (the table parses the text into 16 bytes) */
    size_t nf;
    const ls_pq_field_t *f = s ? ls_typed_parquet_fields(s, &nf) : NULL;
    ls_buf_t out;
    ls_buf_init(&out);
    ls_pq_writer_t *w = f ? ls_pq_writer_new(f, nf, NULL, &out, err, sizeof err) : NULL;
    ls_raw_record_t r = {.key_len = -1, .value_len = -1};
    if (w && rd) CHECK_EQ_INT(ls_typed_write(rd, w, &r, b.data, b.len, err, sizeof err), LS_OK);
    ls_pq_writer_free(w);
    ls_buf_free(&out);
    const char *bad[] = {"{\"u\":\"123e4567e89b12d3a456426614174000\"}",
                         "{\"u\":\"123e4567-e89b-12d3-a456-42661417400z\"}", "{\"u\":5}"};
    for (size_t i = 0; i < 3; i++) {
        b.len = 0;
        err[0] = 0;
        CHECK_EQ_INT(
            ls_avro_view_encode(v, (const uint8_t *)bad[i], strlen(bad[i]), &b, err, sizeof err),
            LS_EINVAL);
        /* a non-string fails the schema's "type" (validation) before its format */
        CHECK(!strncmp(err, "/u: ", 4) &&
              strstr(err, i < 2 ? "where the schema has a uuid" : "where the schema has a string"));
    }
    ls_buf_free(&b);
    ls_typed_reader_free(rd);
    ls_typed_shape_free(s);
    ls_avro_view_free(v);
    ls_jsonschema_free(js);
}

int main(void)
{
    RUN(columns_of_a_json_schema);
    RUN(instances_become_datums);
    RUN(unmapped_schemas_name_the_path);
    RUN(evolution_between_json_versions);
    RUN(protobuf_messages_become_columns);
    RUN(protobuf_proto2_required_and_groups);
    RUN(schemaless_json_inference);
    RUN(json_uuid_format);
    UNIT_DONE();
}
