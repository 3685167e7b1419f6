/* libFuzzer harness for typed values that are not Avro (registry/avro_view.h):
 * JSON Schema texts mapped to an Avro view, JSON instances and Protobuf
 * messages transcoded to Avro datums and shredded into a typed table's Parquet writer.
 *
 * Input: byte 0 picks the case (mod 4): 0 an instance of a fixed schema with
 * every mapped kind (the rest of the input); 1 a schema text up to the first
 * '\n', then an instance; 2 a Confluent Protobuf payload (message-index
 * array, wire bytes) of a fixed .proto with every mapped kind; 3 two
 * schemaless JSON values split at the first '\n' (value.format=json): the
 * first's inferred schema, the second merged into it, and the values that
 * fit transcoded by the view of the result. Oracles besides the sanitizers: a
 * transcoded datum is exactly one datum of the view's schema (ls_avro_datum_check) and a typed
 * table made from the view writes it as a row (ls_typed_write); in case 1
 * the instance also goes through ls_jsonschema_validate, which must accept
 * whatever the view transcodes, and in case 2 the payload through
 * ls_proto_check_payload (produce-time validation). Build and run: `make fuzz`. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include <jansson.h>

#include "registry/avro_view.h"
#include "table/iceberg_typed.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char FIXED[] =
    "{\"type\":\"object\",\"required\":[\"id\",\"at\"],\"properties\":{"
    "\"id\":{\"type\":\"integer\"},\"q\":{\"type\":\"integer\",\"maximum\":10},"
    "\"x\":{\"type\":\"number\"},\"s\":{\"type\":[\"string\",\"null\"]},"
    "\"at\":{\"type\":\"string\",\"format\":\"date-time\"},"
    "\"d\":{\"type\":\"string\",\"format\":\"date\"},\"b\":{\"type\":\"boolean\"},"
    "\"e\":{\"enum\":[\"a\",\"b\"]},\"k\":{\"type\":\"integer\",\"enum\":[1,2]},"
    "\"l\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{"
    "\"n\":{\"oneOf\":[{\"type\":\"null\"},{\"type\":\"integer\"}]}}}},"
    "\"m\":{\"additionalProperties\":{\"type\":\"string\"}},\"any\":{},"
    "\"raw\":{\"type\":\"string\",\"contentEncoding\":\"base64\"},"
    "\"u\":{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"integer\"}]}}}";

static const char PROTO[] =
    "syntax = \"proto3\"; package p; import \"google/protobuf/timestamp.proto\";"
    "import \"google/protobuf/wrappers.proto\";"
    "message M { int32 a = 1; int64 b = 2; uint32 c = 3; uint64 d = 4; sint32 e = 5;"
    " sint64 f = 6; fixed32 g = 7; fixed64 h = 8; sfixed32 i = 9; sfixed64 j = 10;"
    " float k = 11; double l = 12; bool m = 13; string n = 14; bytes o = 15; E p = 16;"
    " google.protobuf.Timestamp q = 17; repeated int32 r = 18; repeated string s = 19;"
    " map<string, N> t = 20; map<int64, E> u = 21; N v = 22; optional string w = 23;"
    " oneof x { string x1 = 24; N x2 = 25; } google.protobuf.StringValue y = 26;"
    " repeated N z = 27; repeated double zz = 28;"
    " message N { string a = 1; repeated sint64 b = 2; } }"
    "enum E { E0 = 0; E1 = 1; }";

/* The transcoded datum d of view v: one datum of its schema, written as a
 * row of a table made from it. */
static void write_row(const ls_avro_view_t *v, const ls_buf_t *d)
{
    char err[512];
    if (ls_avro_datum_check(ls_avro_view_root(v), d->data, d->len, err, sizeof err) != 0) abort();
    ls_typed_shape_t *s = ls_typed_shape_new(ls_avro_view_root(v), err, sizeof err);
    ls_typed_reader_t *rd = NULL;
    if (s && ls_typed_reader_new(s, ls_avro_view_root(v), &rd, err, sizeof err) != LS_OK) abort();
    if (rd) {
        size_t nf;
        const ls_pq_field_t *f = ls_typed_parquet_fields(s, &nf);
        ls_buf_t out;
        ls_buf_init(&out);
        ls_pq_writer_t *w = ls_pq_writer_new(f, nf, NULL, &out, err, sizeof err);
        if (!w) abort();
        ls_raw_record_t r = {.key_len = -1, .value_len = -1};
        if (ls_typed_write(rd, w, &r, d->data, d->len, err, sizeof err) != LS_OK) abort();
        if (ls_pq_writer_finish(w) != LS_OK) abort();
        ls_pq_writer_free(w);
        ls_buf_free(&out);
        ls_typed_reader_free(rd);
    }
    ls_typed_shape_free(s);
}

static void proto(const uint8_t *p, size_t n)
{
    static ls_proto_t *pr;
    static ls_avro_views_t *vs;
    char err[512];
    if (!pr) {
        pr = ls_proto_parse(NULL, NULL, 0, PROTO, err, sizeof err);
        if (!pr) abort();
        vs = ls_avro_views_proto(pr);
    }
    int64_t idx[8];
    size_t ni, used;
    if (ls_avro_view_proto_indexes(p, n, idx, 8, &ni, &used) != 0) return;
    /* produce-time validation of the payload against the descriptor */
    (void)ls_proto_check_payload(pr, idx, ni, p + used, n - used, err, sizeof err);
    const ls_avro_view_t *v = ls_avro_views_find(vs, idx, ni, err, sizeof err);
    if (!v) return;
    ls_buf_t d;
    ls_buf_init(&d);
    if (ls_avro_view_encode(v, p + used, n - used, &d, err, sizeof err) == 0) write_row(v, &d);
    ls_buf_free(&d);
}

static void one(const char *schema, const uint8_t *inst, size_t n)
{
    char err[512];
    ls_jsonschema_t *js = ls_jsonschema_parse(NULL, NULL, 0, schema, err, sizeof err);
    if (!js) return;
    /* the validator on any schema that loads, mapped to columns or not */
    json_t *doc = json_loadb((const char *)inst, n, JSON_DECODE_ANY, NULL);
    ls_status valid = doc ? ls_jsonschema_validate(js, doc, err, sizeof err) : LS_EINVAL;
    json_decref(doc);
    ls_avro_view_t *v = ls_avro_view_json(js, err, sizeof err);
    if (!v) goto out_schema;
    ls_buf_t d;
    ls_buf_init(&d);
    if (ls_avro_view_encode(v, inst, n, &d, err, sizeof err) == 0) {
        if (valid != LS_OK) abort(); /* a value a table takes is one validation takes */
        write_row(v, &d);
    }
    ls_buf_free(&d);
    ls_avro_view_free(v);
out_schema:
    ls_jsonschema_free(js);
}

static void schemaless(const uint8_t *p, size_t n)
{
    const uint8_t *nl = memchr(p, '\n', n);
    size_t n1 = nl ? (size_t)(nl - p) : n;
    char why[400];
    json_t *s = NULL;
    ls_json_fit rc1 = ls_json_infer(&s, p, n1, why, sizeof why);
    ls_json_fit rc2 =
        nl && s ? ls_json_infer(&s, nl + 1, n - n1 - 1, why, sizeof why) : LS_JSON_NOT_OBJECT;
    bool merged1 = rc1 == LS_JSON_FITS || rc1 == LS_JSON_WIDENED;
    if (s) {
        char *text = json_dumps(s, JSON_COMPACT);
        ls_jsonschema_t *js = ls_jsonschema_parse(NULL, NULL, 0, text, why, sizeof why);
        if (!js) abort(); /* an inferred schema always loads */
        ls_avro_view_t *v = ls_avro_view_json(js, why, sizeof why);
        if (!v) abort(); /* and always maps */
        ls_buf_t d;
        ls_buf_init(&d);
        /* a value whose merge succeeded fits the merged columns */
        if (merged1 && ls_avro_view_encode(v, p, n1, &d, why, sizeof why) != LS_OK &&
            rc2 != LS_JSON_CONFLICT)
            abort();
        if (d.len && merged1 && rc2 != LS_JSON_CONFLICT) write_row(v, &d);
        ls_buf_free(&d);
        ls_avro_view_free(v);
        ls_jsonschema_free(js);
        free(text);
    }
    json_decref(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    if (data[0] % 4 == 3) {
        schemaless(data + 1, size - 1);
        return 0;
    }
    if (data[0] % 4 == 0) {
        one(FIXED, data + 1, size - 1);
        return 0;
    }
    if (data[0] % 4 == 2) {
        proto(data + 1, size - 1);
        return 0;
    }
    const uint8_t *p = data + 1, *end = data + size;
    const uint8_t *nl = memchr(p, '\n', (size_t)(end - p));
    if (!nl) return 0;
    char *schema = ls_strndup((const char *)p, (size_t)(nl - p));
    one(schema, nl + 1, (size_t)(end - nl - 1));
    ls_free(schema);
    return 0;
}
