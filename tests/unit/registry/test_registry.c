/* Schema registry: Avro parsing, the compatibility rules per level (a table
 * of cases each), and the registry over the in-memory metadata store
 * (register, duplicates, deletes, references, concurrent registrations). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "meta/meta.h"
#include "registry/avro.h"
#include "registry/registry.h"
#include "unit.h"

static ls_sr_schema_t *avro(const char *text)
{
    ls_sr_input_t in = {.type = LS_SR_AVRO, .text = text};
    ls_sr_schema_t *s = NULL;
    ls_sr_err_t e;
    if (ls_sr_parse_standalone(&in, &s, &e) != LS_SR_OK) {
        printf("# parse failed: %s\n  %s\n", e.message, text);
        return NULL;
    }
    return s;
}

/* ---- parsing ------------------------------------------------------------------- */

TEST(avro_accepts_valid_schemas)
{
    static const char *const ok[] = {
        "\"string\"",
        "{\"type\":\"long\",\"logicalType\":\"timestamp-millis\"}",
        "[\"null\",\"string\"]",
        "{\"type\":\"record\",\"name\":\"a.b.R\",\"fields\":[{\"name\":\"x\",\"type\":\"int\","
        "\"default\":1},{\"name\":\"next\",\"type\":[\"null\",\"R\"],\"default\":null}]}",
        "{\"type\":\"enum\",\"name\":\"E\",\"symbols\":[\"A\",\"B\"],\"default\":\"A\"}",
        "{\"type\":\"fixed\",\"name\":\"F\",\"size\":16,\"logicalType\":\"uuid\"}",
        "{\"type\":\"map\",\"values\":{\"type\":\"array\",\"items\":\"double\"}}",
        "{\"type\":\"bytes\",\"logicalType\":\"decimal\",\"precision\":10,\"scale\":2}",
        /* a namespace inherited by a nested record, referred to by short name */
        "{\"type\":\"record\",\"name\":\"O\",\"namespace\":\"n\",\"fields\":[{\"name\":\"i\","
        "\"type\":{\"type\":\"record\",\"name\":\"I\",\"fields\":[]}},{\"name\":\"j\","
        "\"type\":\"n.I\"},{\"name\":\"k\",\"type\":\"I\"}]}",
        /* a union default matching a later branch (the Java parser accepts it) */
        "{\"type\":\"record\",\"name\":\"R\",\"fields\":[{\"name\":\"u\",\"type\":[\"null\","
        "\"string\"],\"default\":\"x\"}]}",
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        ls_sr_schema_t *s = avro(ok[i]);
        CHECK(s != NULL);
        ls_sr_schema_release(s);
    }
    ls_sr_schema_t *s = avro("{\"type\":\"long\",\"logicalType\":\"timestamp-millis\"}");
    CHECK(!strcmp(ls_avro_root(s->avro)->logical, "timestamp-millis"));
    ls_sr_schema_release(s);
    /* an invalid logical type is ignored, not refused (spec) */
    s = avro("{\"type\":\"string\",\"logicalType\":\"date\"}");
    CHECK(s && ls_avro_root(s->avro)->logical == NULL);
    ls_sr_schema_release(s);
}

TEST(avro_refuses_invalid_schemas_naming_the_problem)
{
    static const struct {
        const char *text, *msg;
    } bad[] = {
        {"\"strin\"", "unknown type 'strin'"},
        {"{\"type\":\"record\",\"fields\":[]}", "needs a \"name\""},
        {"{\"type\":\"record\",\"name\":\"1R\",\"fields\":[]}", "invalid name"},
        {"{\"type\":\"record\",\"name\":\"R\",\"fields\":[{\"name\":\"a\",\"type\":\"int\"},"
         "{\"name\":\"a\",\"type\":\"int\"}]}",
         "field 'a' appears twice"},
        {"{\"type\":\"record\",\"name\":\"R\",\"fields\":[{\"name\":\"a\",\"type\":\"int\","
         "\"default\":\"x\"}]}",
         "/fields/0: the default of field 'a' is not a valid int"},
        {"[\"null\",\"null\"]", "the union holds null twice"},
        {"[\"null\",[\"int\"]]", "immediately contain another union"},
        {"{\"type\":\"enum\",\"name\":\"E\",\"symbols\":[\"A\",\"A\"]}", "appears twice"},
        {"{\"type\":\"enum\",\"name\":\"E\",\"symbols\":[\"A\"],\"default\":\"B\"}",
         "not one of its symbols"},
        {"{\"type\":\"fixed\",\"name\":\"F\"}", "needs a \"size\""},
        {"{\"type\":\"record\",\"name\":\"R\",\"fields\":[{\"name\":\"a\",\"type\":{\"type\":"
         "\"record\",\"name\":\"R\",\"fields\":[]}}]}",
         "'R' is defined twice"},
        {"{\"type\":\"array\"}", "needs \"items\""},
        {"{nope", "not valid JSON"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ls_sr_input_t in = {.type = LS_SR_AVRO, .text = bad[i].text};
        ls_sr_schema_t *s = NULL;
        ls_sr_err_t e;
        CHECK_EQ_INT(ls_sr_parse_standalone(&in, &s, &e), LS_SR_INVALID_SCHEMA);
        if (!strstr(e.message, bad[i].msg)) printf("# case %zu: %s\n", i, e.message);
        CHECK(strstr(e.message, bad[i].msg) != NULL);
    }
}

/* ---- Protobuf ------------------------------------------------------------------------ */

static ls_sr_schema_t *proto(const char *text)
{
    ls_sr_input_t in = {.type = LS_SR_PROTOBUF, .text = text};
    ls_sr_schema_t *s = NULL;
    ls_sr_err_t e;
    if (ls_sr_parse_standalone(&in, &s, &e) != LS_SR_OK) {
        printf("# parse failed: %s\n  %s\n", e.message, text);
        return NULL;
    }
    return s;
}

/* Files in the style of real-world .proto files (Google APIs, Kafka
 * Connect examples, protoc's own unittest protos): every construct of both
 * syntaxes. */
TEST(proto_parses_real_world_files)
{
    static const char *const files[] = {
        /* proto3: package, options, imports of well-known types, nested, enum, map, oneof,
         * reserved, service with streaming and option blocks, comments */
        "// An order service\n"
        "syntax = \"proto3\";\n"
        "package shop.v1;\n"
        "option java_package = \"com.example.shop\";\n"
        "option (my.ext) = { a: 1 b: [2, 3] c { d: \"e\" } };\n"
        "import \"google/protobuf/timestamp.proto\";\n"
        "import public \"google/protobuf/wrappers.proto\";\n"
        "/* a block\n   comment */\n"
        "message Order {\n"
        "  reserved 5, 9 to 11;\n"
        "  reserved \"old_name\";\n"
        "  enum Status { option allow_alias = true; NEW = 0; PAID = 1; DONE = 1 [deprecated = "
        "true]; }\n"
        "  message Line { string sku = 1; int32 qty = 2; double price = 3 [json_name = \"p\"]; }\n"
        "  string id = 1;\n"
        "  repeated Line lines = 2;\n"
        "  map<string, Line> by_sku = 3;\n"
        "  Status status = 4;\n"
        "  google.protobuf.Timestamp created = 6;\n"
        "  .google.protobuf.StringValue note = 7;\n"
        "  optional int64 version = 8;\n"
        "  oneof payment { string card = 12; bytes token = 13; }\n"
        "}\n"
        "service Orders {\n"
        "  rpc Get (Order) returns (Order);\n"
        "  rpc Watch (stream Order) returns (stream Order) { option deadline = 1.5; }\n"
        "}\n",
        /* proto2: required, default values, groups, extensions and extend, nested enum
         * reference by outer scope, negative enum values, hex numbers */
        "syntax = \"proto2\";\n"
        "package legacy;\n"
        "message Outer {\n"
        "  extensions 100 to max;\n"
        "  required int32 a = 1 [default = -5];\n"
        "  optional string b = 2 [default = \"x\\\"y\"];\n"
        "  repeated group Item = 3 { required string name = 4; optional Kind kind = 5; }\n"
        "  enum Kind { K_NEG = -1; K_ZERO = 0; K_HEX = 0x10; }\n"
        "  message Inner { optional Kind k = 1; optional Outer back = 2; }\n"
        "  optional Inner inner = 6;\n"
        "}\n"
        "extend Outer { optional int32 ext_a = 100; }\n",
        /* no syntax statement (proto2), empty message, top-level enum */
        "message Empty {} enum E { A = 0; }",
    };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        ls_sr_schema_t *s = proto(files[i]);
        CHECK(s != NULL);
        ls_sr_schema_release(s);
    }
    /* the identity ignores comments and layout */
    ls_sr_schema_t *a = proto("message M { int32 x = 1; }");
    ls_sr_schema_t *b = proto("// hi\nmessage M {\n  int32 x = 1;  /* x */\n}\n");
    CHECK(a && b && !strcmp(a->canon, b->canon));
    ls_sr_schema_release(a);
    ls_sr_schema_release(b);
}

TEST(proto_refuses_invalid_files_naming_the_problem)
{
    static const struct {
        const char *text, *msg;
    } bad[] = {
        {"message M { Nope x = 1; }", "unknown type 'Nope'"},
        {"message M { int32 x = 1; int32 y = 1; }", "repeats the number"},
        {"message M { int32 x = 1; string x = 2; }", "repeats the name"},
        {"message M { int32 x = 19001; }", "19000-19999"},
        {"message M { int32 x = 0; }", "has the number 0"},
        {"edition = \"2023\"; message M {}", "editions are not supported"},
        {"syntax = \"proto4\";", "syntax must be"},
        {"import \"other.proto\"; message M {}", "neither a schema reference"},
        {"message M { int32 x = 1;", "is not closed"},
        {"message M { map<double, string> m = 1; }", "cannot be a map key type"},
        {"CgV0LnByb3RvEgF0", "serialized (base64) FileDescriptorProto"},
        {"message M { int32 x = 1 }", "expected ';'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ls_sr_input_t in = {.type = LS_SR_PROTOBUF, .text = bad[i].text};
        ls_sr_schema_t *s = NULL;
        ls_sr_err_t e;
        CHECK_EQ_INT(ls_sr_parse_standalone(&in, &s, &e), LS_SR_INVALID_SCHEMA);
        if (!strstr(e.message, bad[i].msg)) printf("# case %zu: %s\n", i, e.message);
        CHECK(strstr(e.message, bad[i].msg) != NULL);
    }
}

/* .proto text -> serialized descriptor -> .proto text -> descriptor: the
 * same bytes (what format=serialized serves and Python's serializer sends). */
TEST(proto_descriptor_round_trip)
{
    static const char *const texts[] = {
        "syntax = \"proto3\"; package shop.v1; import \"google/protobuf/timestamp.proto\";"
        "message Order { enum Status { NEW = 0; PAID = 1; NEG = -2; }"
        "  message Line { string sku = 1; int32 qty = 2; }"
        "  string id = 1; repeated Line lines = 2; map<string, Line> by_sku = 3;"
        "  Status status = 4; google.protobuf.Timestamp created = 5; optional int64 v = 6;"
        "  oneof pay { string card = 7; bytes token = 8; } map<int32, Status> codes = 9; }"
        "enum Top { T0 = 0; }",
        "syntax = \"proto2\"; message A { required int32 x = 1; optional string y = 2;"
        " repeated double z = 3; optional B b = 4; message B { optional int32 c = 1; } }",
    };
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        char err[400];
        ls_proto_t *p1 = ls_proto_parse(NULL, NULL, 0, texts[i], err, sizeof err);
        CHECK(p1 != NULL);
        char *d1 = ls_proto_descriptor(p1);
        CHECK(ls_proto_is_serialized(d1));
        char *t2 = ls_proto_text_from_descriptor(d1, err, sizeof err);
        if (!t2) printf("# %s\n", err);
        CHECK(t2 != NULL);
        ls_proto_t *p2 = ls_proto_parse(NULL, NULL, 0, t2, err, sizeof err);
        if (!p2) printf("# %s\n%s\n", err, t2);
        CHECK(p2 != NULL);
        char *d2 = ls_proto_descriptor(p2);
        if (strcmp(d1, d2)) printf("# %s\n", t2);
        CHECK(!strcmp(d1, d2));
        CHECK(ls_proto_can_read(p1, p2, NULL) && ls_proto_can_read(p2, p1, NULL));
        ls_free(d1);
        ls_free(d2);
        ls_free(t2);
        ls_proto_free(p1);
        ls_proto_free(p2);
    }
}

/* regression (fuzz_registry): a map entry without a name or a value type
 * crashed the descriptor reader; it is rendered as a plain message. */
TEST(proto_descriptor_with_broken_map_entry)
{
    char err[400];
    char *t = ls_proto_text_from_descriptor(
        "IikKAU0SEQoEdGFncxgBIAMoCzIDLk0uGhESCwoDa2V5GAEgASgJOgI4AWIGcHJvdG8z", err, sizeof err);
    CHECK(t != NULL);
    CHECK(strstr(t, "message M") != NULL);
    ls_free(t);
    CHECK(ls_proto_text_from_descriptor("not base64!", err, sizeof err) == NULL);
}

/* Confluent's Protobuf rules, old -> new (can the new schema read the old data). */
TEST(proto_rules_table)
{
    static const struct {
        const char *old, *new;
        bool backward;
        const char *why;
    } rows[] = {
        {"message M { int32 a = 1; }", "message M { int32 a = 1; string b = 2; }", true, NULL},
        {"message M { int32 a = 1; string b = 2; }", "message M { int32 a = 1; }", true, NULL},
        {"message M { int32 a = 1; }", "message M { int32 renamed = 1; }", true, NULL},
        {"message M { int32 a = 1; }", "message M { int64 a = 1; }", true, NULL},
        {"message M { int32 a = 1; }", "message M { bool a = 1; }", true, NULL},
        {"message M { int32 a = 1; }", "message M { sint32 a = 1; }", false,
         "FIELD_SCALAR_KIND_CHANGED"},
        {"message M { string a = 1; }", "message M { bytes a = 1; }", true, NULL},
        {"message M { fixed32 a = 1; }", "message M { sfixed32 a = 1; }", true, NULL},
        {"message M { float a = 1; }", "message M { double a = 1; }", false,
         "FIELD_SCALAR_KIND_CHANGED"},
        {"message M { int32 a = 1; }", "message M { N a = 1; } message N {}", false,
         "FIELD_KIND_CHANGED"},
        {"enum E { X = 0; } message M { E a = 1; }", "message M { int32 a = 1; }", true, NULL},
        {"message M { map<string, int32> a = 1; }", "message M { map<string, int64> a = 1; }", true,
         NULL},
        {"message M { map<string, int32> a = 1; }", "message M { map<string, string> a = 1; }",
         false, "FIELD_SCALAR_KIND_CHANGED"},
        {"message M { N a = 1; } message N { int32 x = 1; }",
         "message M { O a = 1; } message O { int32 x = 1; } message N { int32 x = 1; }", false,
         "FIELD_NAMED_TYPE_CHANGED"},
        {"message M { N a = 1; } message N { int32 x = 1; }",
         "message M { N a = 1; } message N { string x = 1; }", false, "FIELD_SCALAR_KIND_CHANGED"},
        {"message M {} message N {}", "message M {}", false, "MESSAGE_REMOVED"},
        {"message M {}", "message M {} message N {}", true, NULL},
        {"package a; message M {}", "package b; message M {}", false, "PACKAGE_CHANGED"},
        {"syntax = \"proto2\"; message M { optional int32 a = 1; }",
         "syntax = \"proto2\"; message M { optional int32 a = 1; required int32 b = 2; }", false,
         "REQUIRED_FIELD_ADDED"},
        {"syntax = \"proto2\"; message M { required int32 a = 1; }",
         "syntax = \"proto2\"; message M { }", false, "REQUIRED_FIELD_REMOVED"},
        {"message M { int32 a = 1; int32 b = 2; }",
         "message M { oneof o { int32 a = 1; int32 b = 2; } }", false,
         "MULTIPLE_FIELDS_MOVED_TO_ONEOF"},
        {"message M { int32 a = 1; }", "message M { oneof o { int32 a = 1; } }", true, NULL},
        {"message M { int32 a = 1; oneof o { int32 b = 2; } }",
         "message M { oneof o { int32 a = 1; int32 b = 2; } }", false,
         "FIELD_MOVED_TO_EXISTING_ONEOF"},
        {"message M { oneof o { int32 a = 1; int32 b = 2; } }",
         "message M { oneof o { int32 a = 1; } }", false, "ONEOF_FIELD_REMOVED"},
        {"message M { oneof o { int32 a = 1; } }",
         "message M { oneof o { int32 a = 1; int32 b = 2; } }", true, NULL},
        {"enum E { X = 0; Y = 1; } message M { E e = 1; }",
         "enum E { X = 0; } message M { E e = 1; }", true, NULL},
        /* recursive types compare without looping */
        {"message L { int32 v = 1; L next = 2; }", "message L { int64 v = 1; L next = 2; }", true,
         NULL},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        ls_sr_schema_t *o = proto(rows[i].old), *n = proto(rows[i].new);
        CHECK(o && n);
        ls_buf_t why;
        ls_buf_init(&why);
        ls_sr_schema_t *prev[1] = {o};
        bool ok = ls_sr_compatible(LS_SR_COMPAT_BACKWARD, n, prev, 1, &why);
        ls_buf_append_u8(&why, 0);
        if (ok != rows[i].backward || (!ok && !strstr((char *)why.data, rows[i].why)))
            printf("# row %zu: got %d: %s\n", i, ok, (char *)why.data);
        CHECK(ok == rows[i].backward);
        if (!ok) CHECK(strstr((char *)why.data, rows[i].why) != NULL);
        ls_buf_free(&why);
        ls_sr_schema_release(o);
        ls_sr_schema_release(n);
    }
}

/* ---- compatibility, a table per level ------------------------------------------------ */

#define REC(fields) "{\"type\":\"record\",\"name\":\"R\",\"fields\":[" fields "]}"
#define F(n, t) "{\"name\":\"" n "\",\"type\":" t "}"
#define FD(n, t, d) "{\"name\":\"" n "\",\"type\":" t ",\"default\":" d "}"

static const char *const V_A = REC(F("a", "\"int\""));
static const char *const V_AB_DEF = REC(F("a", "\"int\"") "," FD("b", "\"string\"", "\"x\""));
static const char *const V_AB = REC(F("a", "\"int\"") "," F("b", "\"string\""));
static const char *const V_A_LONG = REC(F("a", "\"long\""));
static const char *const V_EMPTY = REC("");
static const char *const V_A_STR = REC(F("a", "\"string\""));
static const char *const V_A_DEF = REC(FD("a", "\"int\"", "0"));

typedef struct compat_case {
    ls_sr_compat level;
    const char *prev[3];
    const char *cand;
    bool ok;
    const char *why; /* expected in the reasons when !ok */
} compat_case_t;

static const compat_case_t CASES[] = {
    /* NONE: anything goes */
    {LS_SR_COMPAT_NONE, {V_A}, V_A_STR, true, NULL},
    /* BACKWARD: the new schema reads the latest version's data */
    {LS_SR_COMPAT_BACKWARD, {V_A}, V_AB_DEF, true, NULL}, /* added with default */
    {LS_SR_COMPAT_BACKWARD, {V_A}, V_AB, false, "READER_FIELD_MISSING_DEFAULT_VALUE"},
    {LS_SR_COMPAT_BACKWARD, {V_AB}, V_A, true, NULL},     /* removed field */
    {LS_SR_COMPAT_BACKWARD, {V_A}, V_A_LONG, true, NULL}, /* int -> long promotion */
    {LS_SR_COMPAT_BACKWARD, {V_A_LONG}, V_A, false, "TYPE_MISMATCH"},
    {LS_SR_COMPAT_BACKWARD, {V_A}, V_A_STR, false, "TYPE_MISMATCH"},
    /* only the latest counts: v1 -> v2 removed b, v3 re-adds it without default */
    {LS_SR_COMPAT_BACKWARD, {V_AB, V_A}, V_AB, false, "READER_FIELD_MISSING_DEFAULT_VALUE"},
    {LS_SR_COMPAT_BACKWARD, {V_A_STR, V_EMPTY}, V_A_DEF, true, NULL},
    /* BACKWARD_TRANSITIVE: every version */
    {LS_SR_COMPAT_BACKWARD_TRANSITIVE, {V_A_STR, V_EMPTY}, V_A_DEF, false, "TYPE_MISMATCH"},
    {LS_SR_COMPAT_BACKWARD_TRANSITIVE, {V_A, V_AB_DEF}, V_A_LONG, true, NULL},
    /* FORWARD: the latest version reads the new schema's data */
    {LS_SR_COMPAT_FORWARD, {V_A}, V_AB, true, NULL}, /* added field: ignored by old */
    {LS_SR_COMPAT_FORWARD, {V_AB}, V_A, false, "READER_FIELD_MISSING_DEFAULT_VALUE"},
    {LS_SR_COMPAT_FORWARD, {V_AB_DEF}, V_A, true, NULL}, /* removed a field with default */
    {LS_SR_COMPAT_FORWARD, {V_A}, V_A_LONG, false, "TYPE_MISMATCH"},
    {LS_SR_COMPAT_FORWARD, {V_A_LONG}, V_A, true, NULL},
    /* FORWARD_TRANSITIVE */
    {LS_SR_COMPAT_FORWARD_TRANSITIVE,
     {V_AB, V_AB_DEF},
     V_A,
     false,
     "READER_FIELD_MISSING_DEFAULT_VALUE"},
    {LS_SR_COMPAT_FORWARD, {V_AB, V_AB_DEF}, V_A, true, NULL},
    /* FULL: both ways with the latest */
    {LS_SR_COMPAT_FULL, {V_A}, V_AB_DEF, true, NULL},
    {LS_SR_COMPAT_FULL, {V_A}, V_AB, false, "the new schema cannot read"},
    {LS_SR_COMPAT_FULL, {V_A}, V_A_LONG, false, "cannot read data written with the new schema"},
    /* FULL_TRANSITIVE */
    {LS_SR_COMPAT_FULL_TRANSITIVE, {V_A_STR, V_EMPTY}, V_A_DEF, false, "TYPE_MISMATCH"},
    {LS_SR_COMPAT_FULL, {V_A_STR, V_EMPTY}, V_A_DEF, true, NULL},
    {LS_SR_COMPAT_FULL, {V_EMPTY}, V_A, false, "READER_FIELD_MISSING_DEFAULT_VALUE"},
    {LS_SR_COMPAT_FULL_TRANSITIVE, {V_A, V_AB_DEF}, REC(F("a", "\"int\"")), true, NULL},
};

TEST(compatibility_levels_table)
{
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        const compat_case_t *c = &CASES[i];
        ls_sr_schema_t *prev[3] = {0};
        size_t n = 0;
        for (; n < 3 && c->prev[n]; n++)
            CHECK((prev[n] = avro(c->prev[n])) != NULL);
        ls_sr_schema_t *cand = avro(c->cand);
        CHECK(cand != NULL);
        ls_buf_t why;
        ls_buf_init(&why);
        bool ok = ls_sr_compatible(c->level, cand, prev, n, &why);
        ls_buf_append_u8(&why, 0);
        if (ok != c->ok || (!ok && !strstr((char *)why.data, c->why)))
            printf("# case %zu (%s): got %d: %s\n", i, ls_sr_compat_name(c->level), ok,
                   (char *)why.data);
        CHECK(ok == c->ok);
        if (!ok) CHECK(strstr((char *)why.data, c->why) != NULL);
        ls_buf_free(&why);
        ls_sr_schema_release(cand);
        for (size_t k = 0; k < n; k++)
            ls_sr_schema_release(prev[k]);
    }
}

/* The rules of Avro schema resolution, reader vs writer (spec "Schema
 * Resolution"): each row is (reader, writer, can read). */
TEST(avro_resolution_rules_table)
{
    static const struct {
        const char *reader, *writer;
        bool ok;
    } rows[] = {
        {"\"long\"", "\"int\"", true},
        {"\"float\"", "\"long\"", true},
        {"\"double\"", "\"float\"", true},
        {"\"int\"", "\"long\"", false},
        {"\"bytes\"", "\"string\"", true},
        {"\"string\"", "\"bytes\"", true},
        {"\"boolean\"", "\"int\"", false},
        /* unions */
        {"[\"null\",\"string\"]", "\"string\"", true},
        {"[\"null\",\"long\"]", "\"int\"", true},
        {"\"string\"", "[\"null\",\"string\"]", false},
        {"[\"null\",\"string\",\"int\"]", "[\"null\",\"string\"]", true},
        {"[\"null\",\"string\"]", "[\"null\",\"string\",\"int\"]", false},
        {"\"long\"", "[\"int\",\"long\"]", true},
        /* enums: a writer symbol the reader lacks, unless the reader has a default */
        {"{\"type\":\"enum\",\"name\":\"E\",\"symbols\":[\"A\",\"B\",\"C\"]}",
         "{\"type\":\"enum\",\"name\":\"E\",\"symbols\":[\"A\",\"B\"]}", true},
        {"{\"type\":\"enum\",\"name\":\"E\",\"symbols\":[\"A\"]}",
         "{\"type\":\"enum\",\"name\":\"E\",\"symbols\":[\"A\",\"B\"]}", false},
        {"{\"type\":\"enum\",\"name\":\"E\",\"symbols\":[\"A\"],\"default\":\"A\"}",
         "{\"type\":\"enum\",\"name\":\"E\",\"symbols\":[\"A\",\"B\"]}", true},
        {"{\"type\":\"enum\",\"name\":\"X\",\"symbols\":[\"A\"]}",
         "{\"type\":\"enum\",\"name\":\"E\",\"symbols\":[\"A\"]}", false},
        /* fixed: name and size */
        {"{\"type\":\"fixed\",\"name\":\"F\",\"size\":4}",
         "{\"type\":\"fixed\",\"name\":\"F\",\"size\":4}", true},
        {"{\"type\":\"fixed\",\"name\":\"F\",\"size\":8}",
         "{\"type\":\"fixed\",\"name\":\"F\",\"size\":4}", false},
        /* records: unqualified names; reader aliases; field aliases */
        {"{\"type\":\"record\",\"name\":\"x.R\",\"fields\":[]}",
         "{\"type\":\"record\",\"name\":\"y.R\",\"fields\":[]}", true},
        {"{\"type\":\"record\",\"name\":\"S\",\"aliases\":[\"R\"],\"fields\":[]}",
         "{\"type\":\"record\",\"name\":\"R\",\"fields\":[]}", true},
        {"{\"type\":\"record\",\"name\":\"S\",\"fields\":[]}",
         "{\"type\":\"record\",\"name\":\"R\",\"fields\":[]}", false},
        {"{\"type\":\"record\",\"name\":\"R\",\"fields\":[{\"name\":\"b\",\"aliases\":[\"a\"],"
         "\"type\":\"int\"}]}",
         "{\"type\":\"record\",\"name\":\"R\",\"fields\":[{\"name\":\"a\",\"type\":\"int\"}]}",
         true},
        /* arrays and maps resolve their items/values */
        {"{\"type\":\"array\",\"items\":\"long\"}", "{\"type\":\"array\",\"items\":\"int\"}", true},
        {"{\"type\":\"map\",\"values\":\"int\"}", "{\"type\":\"map\",\"values\":\"long\"}", false},
        {"{\"type\":\"array\",\"items\":\"int\"}", "{\"type\":\"map\",\"values\":\"int\"}", false},
        /* recursive records compare without looping */
        {"{\"type\":\"record\",\"name\":\"L\",\"fields\":[{\"name\":\"v\",\"type\":\"long\"},"
         "{\"name\":\"next\",\"type\":[\"null\",\"L\"]}]}",
         "{\"type\":\"record\",\"name\":\"L\",\"fields\":[{\"name\":\"v\",\"type\":\"int\"},"
         "{\"name\":\"next\",\"type\":[\"null\",\"L\"]}]}",
         true},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        ls_sr_schema_t *r = avro(rows[i].reader), *w = avro(rows[i].writer);
        CHECK(r && w);
        ls_buf_t why;
        ls_buf_init(&why);
        bool ok = ls_avro_can_read(r->avro, w->avro, &why);
        if (ok != rows[i].ok)
            printf("# row %zu: got %d (%.*s)\n", i, ok, (int)why.len, (char *)why.data);
        CHECK(ok == rows[i].ok);
        if (!ok) CHECK(why.len > 0);
        ls_buf_free(&why);
        ls_sr_schema_release(r);
        ls_sr_schema_release(w);
    }
}

/* ---- JSON Schema ------------------------------------------------------------------- */

static ls_sr_schema_t *jschema(const char *text)
{
    ls_sr_input_t in = {.type = LS_SR_JSON, .text = text};
    ls_sr_schema_t *s = NULL;
    ls_sr_err_t e;
    if (ls_sr_parse_standalone(&in, &s, &e) != LS_SR_OK) {
        printf("# parse failed: %s\n  %s\n", e.message, text);
        return NULL;
    }
    return s;
}

#define OPEN_A "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}"
#define CLOSED_A                                                                                   \
    "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}},"                           \
    "\"additionalProperties\":false}"

/* Confluent's JSON Schema rules, old -> new: (old, new, can the new schema
 * read what the old one allowed, the difference named when not). */
TEST(json_schema_rules_table)
{
    static const struct {
        const char *old, *new;
        bool backward;
        const char *why;
    } rows[] = {
        /* open content model: a new property may clash with data already written */
        {OPEN_A,
         "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{"
         "\"type\":\"string\"}}}",
         false, "PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"},
        {OPEN_A, "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{}}}",
         true, NULL},
        {OPEN_A, "{\"type\":\"object\",\"properties\":{}}", true, NULL},
        /* closed content model */
        {CLOSED_A,
         "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{"
         "\"type\":\"integer\"}},\"additionalProperties\":false}",
         true, NULL},
        {CLOSED_A,
         "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{"
         "\"type\":\"integer\"}},\"required\":[\"b\"],\"additionalProperties\":false}",
         false, "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL"},
        {CLOSED_A,
         "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{"
         "\"type\":\"integer\",\"default\":0}},\"required\":[\"b\"],"
         "\"additionalProperties\":false}",
         true, NULL},
        {CLOSED_A, "{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}", false,
         "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL"},
        {CLOSED_A, OPEN_A, true, NULL}, /* additionalProperties added */
        {OPEN_A, CLOSED_A, false, "ADDITIONAL_PROPERTIES_REMOVED"},
        /* partially open: the added property must fit additionalProperties */
        {"{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"}}",
         "{\"type\":\"object\",\"properties\":{\"b\":{\"type\":\"string\"}},"
         "\"additionalProperties\":{\"type\":\"string\"}}",
         true, NULL},
        {"{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"}}",
         "{\"type\":\"object\",\"properties\":{\"b\":{\"type\":\"integer\"}},"
         "\"additionalProperties\":{\"type\":\"string\"}}",
         false, "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"},
        {"{\"type\":\"object\",\"patternProperties\":{\"^s_\":{\"type\":\"string\"}},"
         "\"additionalProperties\":false}",
         "{\"type\":\"object\",\"properties\":{\"s_x\":{\"type\":\"number\"}},"
         "\"patternProperties\":{\"^s_\":{\"type\":\"string\"}},\"additionalProperties\":false}",
         false, "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"},
        /* required */
        {"{\"type\":\"object\",\"properties\":{\"a\":{}},\"required\":[\"a\"]}",
         "{\"type\":\"object\",\"properties\":{\"a\":{}}}", true, NULL},
        {"{\"type\":\"object\",\"properties\":{\"a\":{}}}",
         "{\"type\":\"object\",\"properties\":{\"a\":{}},\"required\":[\"a\"]}", false,
         "REQUIRED_ATTRIBUTE_ADDED"},
        /* types */
        {"{\"type\":\"string\"}", "{\"type\":\"integer\"}", false, "TYPE_CHANGED"},
        {"{\"type\":\"integer\"}", "{\"type\":\"number\"}", true, NULL},
        {"{\"type\":\"number\"}", "{\"type\":\"integer\"}", false, "TYPE_NARROWED"},
        {"{\"type\":\"string\"}", "{\"type\":[\"string\",\"null\"]}", true, NULL},
        {"{\"type\":[\"string\",\"null\"]}", "{\"type\":\"string\"}", false, "TYPE_CHANGED"},
        {"true", "false", false, "TYPE_CHANGED"},
        {"false", "{\"type\":\"string\"}", true, NULL},
        {"{\"type\":\"string\"}", "{}", true, NULL},
        /* limits */
        {"{\"type\":\"string\",\"maxLength\":10}", "{\"type\":\"string\",\"maxLength\":20}", true,
         NULL},
        {"{\"type\":\"string\",\"maxLength\":20}", "{\"type\":\"string\",\"maxLength\":10}", false,
         "MAX_LENGTH_DECREASED"},
        {"{\"type\":\"string\"}", "{\"type\":\"string\",\"minLength\":1}", false,
         "MIN_LENGTH_ADDED"},
        {"{\"type\":\"string\",\"pattern\":\"^a\"}", "{\"type\":\"string\"}", true, NULL},
        {"{\"type\":\"number\",\"minimum\":0}", "{\"type\":\"number\",\"minimum\":-5}", true, NULL},
        {"{\"type\":\"number\",\"maximum\":5}", "{\"type\":\"number\",\"maximum\":4}", false,
         "MAXIMUM_DECREASED"},
        {"{\"type\":\"integer\",\"multipleOf\":4}", "{\"type\":\"integer\",\"multipleOf\":2}", true,
         NULL},
        {"{\"type\":\"integer\",\"multipleOf\":2}", "{\"type\":\"integer\",\"multipleOf\":4}",
         false, "MULTIPLE_OF_EXPANDED"},
        {"{\"type\":\"array\",\"items\":{\"type\":\"string\"}}",
         "{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"maxItems\":3}", false,
         "MAX_ITEMS_ADDED"},
        {"{\"type\":\"array\",\"items\":{\"type\":\"string\"}}",
         "{\"type\":\"array\",\"items\":{\"type\":\"integer\"}}", false, "TYPE_CHANGED"},
        /* enums */
        {"{\"enum\":[\"a\",\"b\"]}", "{\"enum\":[\"a\",\"b\",\"c\"]}", true, NULL},
        {"{\"enum\":[\"a\",\"b\",\"c\"]}", "{\"enum\":[\"a\",\"b\"]}", false,
         "ENUM_ARRAY_NARROWED"},
        /* combinations */
        {"{\"oneOf\":[{\"type\":\"string\"},{\"type\":\"integer\"}]}",
         "{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"integer\"}]}", true, NULL},
        {"{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"integer\"}]}",
         "{\"oneOf\":[{\"type\":\"string\"},{\"type\":\"integer\"}]}", false,
         "COMBINED_TYPE_CHANGED"},
        {"{\"oneOf\":[{\"type\":\"string\"},{\"type\":\"integer\"}]}",
         "{\"oneOf\":[{\"type\":\"string\"},{\"type\":\"integer\"},{\"type\":\"null\"}]}", true,
         NULL},
        {"{\"oneOf\":[{\"type\":\"string\"},{\"type\":\"integer\"}]}",
         "{\"oneOf\":[{\"type\":\"string\"}]}", false, "SUM_TYPE_NARROWED"},
        /* references, recursion */
        {"{\"definitions\":{\"A\":{\"type\":\"string\"}},\"$ref\":\"#/definitions/A\"}",
         "{\"type\":\"integer\"}", false, "TYPE_CHANGED"},
        {"{\"type\":\"object\",\"properties\":{\"next\":{\"$ref\":\"#\"}}}",
         "{\"type\":\"object\",\"properties\":{\"next\":{\"$ref\":\"#\"}}}", true, NULL},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        ls_sr_schema_t *o = jschema(rows[i].old), *n = jschema(rows[i].new);
        CHECK(o && n);
        ls_buf_t why;
        ls_buf_init(&why);
        ls_sr_schema_t *prev[1] = {o};
        bool ok = ls_sr_compatible(LS_SR_COMPAT_BACKWARD, n, prev, 1, &why);
        ls_buf_append_u8(&why, 0);
        if (ok != rows[i].backward || (!ok && !strstr((char *)why.data, rows[i].why)))
            printf("# row %zu: got %d: %s\n", i, ok, (char *)why.data);
        CHECK(ok == rows[i].backward);
        if (!ok) CHECK(strstr((char *)why.data, rows[i].why) != NULL);
        ls_buf_free(&why);
        ls_sr_schema_release(o);
        ls_sr_schema_release(n);
    }
}

TEST(json_schema_levels)
{
    /* a property added to an open model: FORWARD yes, BACKWARD and FULL no */
    ls_sr_schema_t *o = jschema(OPEN_A);
    ls_sr_schema_t *n = jschema("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},"
                                "\"b\":{\"type\":\"string\"}}}");
    CHECK(o && n);
    ls_sr_schema_t *prev[1] = {o};
    CHECK(!ls_sr_compatible(LS_SR_COMPAT_BACKWARD, n, prev, 1, NULL));
    CHECK(ls_sr_compatible(LS_SR_COMPAT_FORWARD, n, prev, 1, NULL));
    CHECK(!ls_sr_compatible(LS_SR_COMPAT_FULL, n, prev, 1, NULL));
    CHECK(ls_sr_compatible(LS_SR_COMPAT_NONE, n, prev, 1, NULL));
    /* a JSON schema cannot follow an Avro one */
    ls_sr_schema_t *a = avro(V_A);
    ls_sr_schema_t *pa[1] = {a};
    CHECK(!ls_sr_compatible(LS_SR_COMPAT_BACKWARD, n, pa, 1, NULL));
    ls_sr_schema_release(a);
    ls_sr_schema_release(o);
    ls_sr_schema_release(n);
}

TEST(json_schema_refuses_what_it_cannot_decide)
{
    static const struct {
        const char *text, *msg;
    } bad[] = {
        {"{\"type\":\"strin\"}", "unknown type 'strin'"},
        {"{\"type\":\"object\",\"dependencies\":{\"a\":[\"b\"]}}",
         "\"dependencies\" is not supported"},
        {"{\"$ref\":\"#/definitions/nope\"}", "points at nothing"},
        {"{\"$ref\":\"other.json\"}", "names no schema reference"},
        {"5", "a JSON schema is a JSON object or a boolean"},
        {"{\"properties\":[]}", "\"properties\" must be an object"},
        {"{\"type\":\"string\",\"maxLength\":-1}", "non-negative integer"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ls_sr_input_t in = {.type = LS_SR_JSON, .text = bad[i].text};
        ls_sr_schema_t *s = NULL;
        ls_sr_err_t e;
        CHECK_EQ_INT(ls_sr_parse_standalone(&in, &s, &e), LS_SR_INVALID_SCHEMA);
        if (!strstr(e.message, bad[i].msg)) printf("# case %zu: %s\n", i, e.message);
        CHECK(strstr(e.message, bad[i].msg) != NULL);
    }
}

TEST(json_schema_references_by_name)
{
    ls_meta_t *m = ls_meta_mem_open();
    ls_registry_t *r = ls_registry_new(m);
    ls_sr_err_t e;
    int32_t id, v;
    ls_sr_input_t addr = {.type = LS_SR_JSON,
                          .text = "{\"type\":\"object\",\"properties\":{\"city\":{\"type\":"
                                  "\"string\"}},\"additionalProperties\":false}"};
    CHECK_EQ_INT(ls_registry_register(r, "address", &addr, false, &id, &v, &e), LS_SR_OK);
    ls_sr_ref_t ref = {.name = "address.json", .subject = "address", .version = 1};
    ls_sr_input_t user = {.type = LS_SR_JSON,
                          .text = "{\"type\":\"object\",\"properties\":{\"home\":{\"$ref\":"
                                  "\"address.json\"}},\"additionalProperties\":false}",
                          .refs = &ref,
                          .nrefs = 1};
    CHECK_EQ_INT(ls_registry_register(r, "user", &user, false, &id, &v, &e), LS_SR_OK);
    CHECK_EQ_INT(id, 2);
    /* the referenced schema takes part in compatibility: home.city now an integer */
    ls_sr_input_t addr2 = {.type = LS_SR_JSON,
                           .text = "{\"type\":\"object\",\"properties\":{\"city\":{\"type\":"
                                   "\"integer\"}},\"additionalProperties\":false}"};
    CHECK_EQ_INT(ls_registry_set_compat(r, "address", LS_SR_COMPAT_NONE, &e), LS_SR_OK);
    CHECK_EQ_INT(ls_registry_register(r, "address", &addr2, false, &id, &v, &e), LS_SR_OK);
    ls_sr_ref_t ref2 = {.name = "address.json", .subject = "address", .version = 2};
    ls_sr_input_t user2 = user;
    user2.refs = &ref2;
    bool ok;
    ls_buf_t why;
    ls_buf_init(&why);
    CHECK_EQ_INT(ls_registry_test_compat(r, "user", -1, &user2, &ok, &why, &e), LS_SR_OK);
    CHECK(!ok);
    ls_buf_append_u8(&why, 0);
    CHECK(strstr((char *)why.data, "TYPE_CHANGED") != NULL);
    ls_buf_free(&why);
    ls_registry_free(r);
    ls_meta_close(m);
}

TEST(proto_imports_are_references)
{
    ls_meta_t *m = ls_meta_mem_open();
    ls_registry_t *r = ls_registry_new(m);
    ls_sr_err_t e;
    int32_t id, v;
    ls_sr_input_t money = {.type = LS_SR_PROTOBUF,
                           .text = "syntax = \"proto3\"; package fin; message Money { string "
                                   "currency = 1; int64 units = 2; }"};
    CHECK_EQ_INT(ls_registry_register(r, "fin/money.proto", &money, false, &id, &v, &e), LS_SR_OK);
    const char *text = "syntax = \"proto3\"; import \"fin/money.proto\"; message Invoice { "
                       "fin.Money total = 1; }";
    ls_sr_input_t bare = {.type = LS_SR_PROTOBUF, .text = text};
    CHECK_EQ_INT(ls_registry_register(r, "inv", &bare, false, &id, &v, &e), LS_SR_INVALID_SCHEMA);
    CHECK(strstr(e.message, "import \"fin/money.proto\"") != NULL);
    ls_sr_ref_t ref = {.name = "fin/money.proto", .subject = "fin/money.proto", .version = 1};
    ls_sr_input_t inv = {.type = LS_SR_PROTOBUF, .text = text, .refs = &ref, .nrefs = 1};
    CHECK_EQ_INT(ls_registry_register(r, "inv", &inv, false, &id, &v, &e), LS_SR_OK);
    CHECK_EQ_INT(id, 2);
    ls_registry_free(r);
    ls_meta_close(m);
}

/* ---- the registry over a store ------------------------------------------------------- */

static ls_sr_input_t in_avro(const char *text)
{
    return (ls_sr_input_t){.type = LS_SR_AVRO, .text = text};
}

TEST(register_duplicate_and_versions)
{
    ls_meta_t *m = ls_meta_mem_open();
    ls_registry_t *r = ls_registry_new(m);
    ls_sr_err_t e;
    int32_t id, v, id2, v2;
    ls_sr_input_t a = in_avro(V_A);
    CHECK_EQ_INT(ls_registry_register(r, "t-value", &a, false, &id, &v, &e), LS_SR_OK);
    CHECK_EQ_INT(id, 1);
    CHECK_EQ_INT(v, 1);
    /* the same schema, spaced differently: same id and version */
    ls_sr_input_t a2 = in_avro("{ \"type\" : \"record\", \"name\":\"R\", \"fields\" : "
                               "[ {\"type\":\"int\", \"name\":\"a\"} ] }");
    CHECK_EQ_INT(ls_registry_register(r, "t-value", &a2, false, &id2, &v2, &e), LS_SR_OK);
    CHECK_EQ_INT(id2, 1);
    CHECK_EQ_INT(v2, 1);
    /* under another subject: same id, its own version 1 */
    CHECK_EQ_INT(ls_registry_register(r, "other", &a, false, &id2, &v2, &e), LS_SR_OK);
    CHECK_EQ_INT(id2, 1);
    CHECK_EQ_INT(v2, 1);
    /* incompatible under the default BACKWARD */
    ls_sr_input_t ab = in_avro(V_AB);
    CHECK_EQ_INT(ls_registry_register(r, "t-value", &ab, false, &id2, &v2, &e), LS_SR_INCOMPATIBLE);
    CHECK(strstr(e.message, "READER_FIELD_MISSING_DEFAULT_VALUE") != NULL);
    /* allowed once the subject's level is NONE */
    CHECK_EQ_INT(ls_registry_set_compat(r, "t-value", LS_SR_COMPAT_NONE, &e), LS_SR_OK);
    CHECK_EQ_INT(ls_registry_register(r, "t-value", &ab, false, &id2, &v2, &e), LS_SR_OK);
    CHECK_EQ_INT(id2, 2);
    CHECK_EQ_INT(v2, 2);
    /* latest (cached) follows */
    ls_sr_version_t lv;
    ls_sr_schema_t *ls;
    CHECK_EQ_INT(ls_registry_latest(r, "t-value", &lv, &ls, &e), LS_SR_OK);
    CHECK_EQ_INT(lv.version, 2);
    CHECK_EQ_INT(ls->id, 2);
    ls_free(lv.subject);
    ls_sr_schema_release(ls);
    ls_sr_version_t *vs;
    size_t n;
    CHECK_EQ_INT(ls_registry_versions(r, "t-value", false, &vs, &n, &e), LS_SR_OK);
    CHECK_EQ_INT(n, 2);
    ls_sr_versions_free(vs, n);
    ls_registry_free(r);
    ls_meta_close(m);
}

/* Compatibility levels and modes: a subject's own setting wins, the global
 * one is next, then the default; deleting answers the value in force and
 * refuses a subject without its own; a global record holding an unknown
 * name reads as the default; READONLY refuses registration. */
TEST(settings_subject_global_default)
{
    ls_meta_t *m = ls_meta_mem_open();
    ls_registry_t *r = ls_registry_new(m);
    ls_sr_err_t e;
    ls_sr_compat c;
    ls_sr_mode md;
    bool set;
    CHECK_EQ_INT(ls_registry_get_compat(r, "s", &c, &set, &e), LS_SR_OK);
    CHECK(c == LS_SR_COMPAT_DEFAULT && !set);
    CHECK_EQ_INT(ls_registry_delete_compat(r, "s", &c, &e), LS_SR_SUBJECT_COMPAT_NOT_CONFIGURED);
    CHECK(strstr(e.message, "subject-level compatibility") != NULL);
    CHECK_EQ_INT(ls_registry_set_compat(r, NULL, LS_SR_COMPAT_FULL, &e), LS_SR_OK);
    CHECK_EQ_INT(ls_registry_get_compat(r, "s", &c, &set, &e), LS_SR_OK);
    CHECK(c == LS_SR_COMPAT_FULL && !set); /* the global one, not the subject's */
    CHECK_EQ_INT(ls_registry_set_compat(r, "s", LS_SR_COMPAT_NONE, &e), LS_SR_OK);
    CHECK_EQ_INT(ls_registry_get_compat(r, "s", &c, &set, &e), LS_SR_OK);
    CHECK(c == LS_SR_COMPAT_NONE && set);
    CHECK_EQ_INT(ls_registry_delete_compat(r, "s", &c, &e), LS_SR_OK);
    CHECK(c == LS_SR_COMPAT_NONE);
    CHECK_EQ_INT(ls_registry_get_compat(r, "s", &c, &set, &e), LS_SR_OK);
    CHECK(c == LS_SR_COMPAT_FULL && !set);
    CHECK_EQ_INT(ls_registry_delete_compat(r, NULL, &c, &e), LS_SR_OK);
    CHECK(c == LS_SR_COMPAT_FULL);
    const char *odd = "{\"compatibilityLevel\":\"SIDEWAYS\"}";
    CHECK(ls_meta_put(m, "/ls/registry/config", odd, strlen(odd)) == LS_OK);
    CHECK_EQ_INT(ls_registry_get_compat(r, NULL, &c, &set, &e), LS_SR_OK);
    CHECK(c == LS_SR_COMPAT_DEFAULT && set);

    CHECK_EQ_INT(ls_registry_delete_mode(r, "s", &md, &e), LS_SR_SUBJECT_MODE_NOT_CONFIGURED);
    CHECK(strstr(e.message, "subject-level mode") != NULL);
    CHECK_EQ_INT(ls_registry_set_mode(r, "s", LS_SR_MODE_READONLY, &e), LS_SR_OK);
    CHECK_EQ_INT(ls_registry_get_mode(r, "s", &md, &set, &e), LS_SR_OK);
    CHECK(md == LS_SR_MODE_READONLY && set);
    ls_sr_input_t a = in_avro(V_A);
    int32_t id, v;
    CHECK_EQ_INT(ls_registry_register(r, "s", &a, false, &id, &v, &e), LS_SR_NOT_PERMITTED);
    CHECK_EQ_INT(ls_registry_delete_mode(r, "s", &md, &e), LS_SR_OK);
    CHECK(md == LS_SR_MODE_READONLY);
    CHECK_EQ_INT(ls_registry_get_mode(r, "s", &md, &set, &e), LS_SR_OK);
    CHECK(md == LS_SR_MODE_READWRITE && !set);
    CHECK_EQ_INT(ls_registry_register(r, "s", &a, false, &id, &v, &e), LS_SR_OK);
    ls_registry_free(r);
    ls_meta_close(m);
}

TEST(delete_soft_then_permanent)
{
    ls_meta_t *m = ls_meta_mem_open();
    ls_registry_t *r = ls_registry_new(m);
    ls_sr_err_t e;
    int32_t id, v, *vs, dv;
    size_t n;
    ls_sr_input_t a = in_avro(V_A), b = in_avro(V_AB_DEF);
    CHECK_EQ_INT(ls_registry_register(r, "s", &a, false, &id, &v, &e), LS_SR_OK);
    CHECK_EQ_INT(ls_registry_register(r, "s", &b, false, &id, &v, &e), LS_SR_OK);
    CHECK_EQ_INT(v, 2);
    /* permanent needs soft first */
    CHECK_EQ_INT(ls_registry_delete_version(r, "s", 1, true, &dv, &e),
                 LS_SR_VERSION_NOT_SOFT_DELETED);
    CHECK_EQ_INT(ls_registry_delete_version(r, "s", 1, false, &dv, &e), LS_SR_OK);
    CHECK_EQ_INT(ls_registry_delete_version(r, "s", 1, false, &dv, &e), LS_SR_VERSION_SOFT_DELETED);
    ls_sr_version_t gv;
    CHECK_EQ_INT(ls_registry_get_version(r, "s", 1, false, &gv, &e), LS_SR_VERSION_NOT_FOUND);
    CHECK_EQ_INT(ls_registry_get_version(r, "s", 1, true, &gv, &e), LS_SR_OK);
    CHECK(gv.deleted);
    ls_free(gv.subject);
    /* soft-deleted schema ids stay served */
    ls_sr_version_t *uses;
    CHECK_EQ_INT(ls_registry_id_versions(r, 1, true, &uses, &n, &e), LS_SR_OK);
    CHECK_EQ_INT(n, 1);
    ls_sr_versions_free(uses, n);
    CHECK_EQ_INT(ls_registry_delete_subject(r, "s", true, &vs, &n, &e),
                 LS_SR_SUBJECT_NOT_SOFT_DELETED);
    CHECK_EQ_INT(ls_registry_delete_subject(r, "s", false, &vs, &n, &e), LS_SR_OK);
    CHECK_EQ_INT(n, 1);
    CHECK_EQ_INT(vs[0], 2);
    ls_free(vs);
    CHECK_EQ_INT(ls_registry_delete_subject(r, "s", false, &vs, &n, &e),
                 LS_SR_SUBJECT_SOFT_DELETED);
    char **subs;
    CHECK_EQ_INT(ls_registry_subjects(r, NULL, false, &subs, &n, &e), LS_SR_OK);
    CHECK_EQ_INT(n, 0);
    ls_free(subs);
    CHECK_EQ_INT(ls_registry_subjects(r, NULL, true, &subs, &n, &e), LS_SR_OK);
    CHECK_EQ_INT(n, 1);
    ls_free(subs[0]);
    ls_free(subs);
    CHECK_EQ_INT(ls_registry_delete_subject(r, "s", true, &vs, &n, &e), LS_SR_OK);
    CHECK_EQ_INT(n, 2);
    ls_free(vs);
    CHECK_EQ_INT(ls_registry_id_versions(r, 1, true, &uses, &n, &e), LS_SR_OK);
    CHECK_EQ_INT(n, 0);
    ls_free(uses);
    /* ids are not reused; the same schema comes back under its old id, at version 1 */
    ls_sr_input_t c = in_avro(V_A_STR);
    CHECK_EQ_INT(ls_registry_register(r, "s", &c, false, &id, &v, &e), LS_SR_OK);
    CHECK_EQ_INT(id, 3);
    CHECK_EQ_INT(v, 1);
    CHECK_EQ_INT(ls_registry_set_compat(r, "s", LS_SR_COMPAT_NONE, &e), LS_SR_OK);
    CHECK_EQ_INT(ls_registry_register(r, "s", &a, false, &id, &v, &e), LS_SR_OK);
    CHECK_EQ_INT(id, 1);
    CHECK_EQ_INT(v, 2);
    ls_registry_free(r);
    ls_meta_close(m);
}

TEST(references_resolve_and_protect)
{
    ls_meta_t *m = ls_meta_mem_open();
    ls_registry_t *r = ls_registry_new(m);
    ls_sr_err_t e;
    int32_t id, v, dv;
    ls_sr_input_t addr = in_avro("{\"type\":\"record\",\"name\":\"Address\",\"namespace\":\"x\","
                                 "\"fields\":[{\"name\":\"city\",\"type\":\"string\"}]}");
    CHECK_EQ_INT(ls_registry_register(r, "address", &addr, false, &id, &v, &e), LS_SR_OK);
    ls_sr_ref_t ref = {.name = "x.Address", .subject = "address", .version = -1};
    ls_sr_input_t user = {.type = LS_SR_AVRO,
                          .text = "{\"type\":\"record\",\"name\":\"User\",\"fields\":[{\"name\":"
                                  "\"home\",\"type\":\"x.Address\"}]}",
                          .refs = &ref,
                          .nrefs = 1};
    /* without the reference the type is unknown */
    ls_sr_input_t bare = {.type = LS_SR_AVRO, .text = user.text};
    CHECK_EQ_INT(ls_registry_register(r, "user", &bare, false, &id, &v, &e), LS_SR_INVALID_SCHEMA);
    CHECK(strstr(e.message, "unknown type 'x.Address'") != NULL);
    int32_t uid;
    CHECK_EQ_INT(ls_registry_register(r, "user", &user, false, &uid, &v, &e), LS_SR_OK);
    CHECK_EQ_INT(uid, 2);
    ls_sr_schema_t *s;
    CHECK_EQ_INT(ls_registry_schema(r, uid, &s, &e), LS_SR_OK);
    CHECK_EQ_INT(s->nrefs, 1);
    CHECK_EQ_INT(s->refs[0].version, 1); /* -1 resolved when registered */
    ls_sr_schema_release(s);
    int32_t *ids;
    size_t n;
    CHECK_EQ_INT(ls_registry_referenced_by(r, "address", 1, &ids, &n, &e), LS_SR_OK);
    CHECK_EQ_INT(n, 1);
    CHECK_EQ_INT(ids[0], uid);
    ls_free(ids);
    CHECK_EQ_INT(ls_registry_delete_version(r, "address", 1, false, &dv, &e),
                 LS_SR_REFERENCE_EXISTS);
    /* a reference to nothing */
    ls_sr_ref_t missing = {.name = "y.Z", .subject = "nope", .version = 1};
    ls_sr_input_t bad = {.type = LS_SR_AVRO, .text = "\"string\"", .refs = &missing, .nrefs = 1};
    CHECK_EQ_INT(ls_registry_register(r, "z", &bad, false, &id, &v, &e), LS_SR_INVALID_SCHEMA);
    CHECK(strstr(e.message, "Subject 'nope' not found") != NULL);
    ls_registry_free(r);
    ls_meta_close(m);
}

/* More versions than one metadata txn can delete (etcd and the in-memory
 * store take 128 compares + ops): deletion splits into txns. */
TEST(delete_subject_with_many_versions)
{
    ls_meta_t *m = ls_meta_mem_open();
    ls_registry_t *r = ls_registry_new(m);
    ls_sr_err_t e;
    int32_t id, v, *vs;
    size_t n;
    CHECK_EQ_INT(ls_registry_set_compat(r, NULL, LS_SR_COMPAT_NONE, &e), LS_SR_OK);
    for (int i = 0; i < 150; i++) {
        char text[64];
        snprintf(text, sizeof text, "{\"type\":\"fixed\",\"name\":\"F\",\"size\":%d}", i);
        ls_sr_input_t in = in_avro(text);
        CHECK_EQ_INT(ls_registry_register(r, "many", &in, false, &id, &v, &e), LS_SR_OK);
    }
    CHECK_EQ_INT(v, 150);
    CHECK_EQ_INT(ls_registry_delete_subject(r, "many", false, &vs, &n, &e), LS_SR_OK);
    CHECK_EQ_INT(n, 150);
    ls_free(vs);
    CHECK_EQ_INT(ls_registry_delete_subject(r, "many", true, &vs, &n, &e), LS_SR_OK);
    CHECK_EQ_INT(n, 150);
    ls_free(vs);
    char **subs;
    CHECK_EQ_INT(ls_registry_subjects(r, NULL, true, &subs, &n, &e), LS_SR_OK);
    CHECK_EQ_INT(n, 0);
    ls_free(subs);
    ls_registry_free(r);
    ls_meta_close(m);
}

/* The latest version of a subject is cached; another broker's registration
 * (another registry over the same store) is seen through the store's watch. */
TEST(latest_follows_other_brokers)
{
    ls_meta_t *m = ls_meta_mem_open();
    ls_registry_t *a = ls_registry_new(m), *b = ls_registry_new(m);
    ls_sr_err_t e;
    int32_t id, v;
    ls_sr_input_t v1 = in_avro(V_A), v2 = in_avro(V_AB_DEF);
    CHECK_EQ_INT(ls_registry_register(a, "s", &v1, false, &id, &v, &e), LS_SR_OK);
    ls_sr_version_t lv;
    ls_sr_schema_t *ls;
    CHECK_EQ_INT(ls_registry_latest(a, "s", &lv, &ls, &e), LS_SR_OK); /* now cached */
    CHECK_EQ_INT(lv.version, 1);
    ls_free(lv.subject);
    ls_sr_schema_release(ls);
    CHECK_EQ_INT(ls_registry_register(b, "s", &v2, false, &id, &v, &e), LS_SR_OK);
    int seen = 0;
    for (int i = 0; i < 2000 && !seen; i++) {
        CHECK_EQ_INT(ls_registry_latest(a, "s", &lv, &ls, &e), LS_SR_OK);
        seen = lv.version == 2 && ls->id == id;
        ls_free(lv.subject);
        ls_sr_schema_release(ls);
        if (!seen) usleep(1000);
    }
    CHECK(seen);
    ls_registry_free(a);
    ls_registry_free(b);
    ls_meta_close(m);
}

typedef struct racer {
    ls_registry_t *r;
    int k;
    int32_t ids[20];
} racer_t;

static void *race(void *arg)
{
    racer_t *x = arg;
    for (int i = 0; i < 20; i++) {
        char text[128], subject[32];
        /* half the schemas are shared between racers, half their own */
        snprintf(text, sizeof text, "{\"type\":\"fixed\",\"name\":\"F%d_%d\",\"size\":1}",
                 i % 2 ? x->k : 99, i);
        snprintf(subject, sizeof subject, "s%d", i % 3);
        ls_sr_input_t in = {.type = LS_SR_AVRO, .text = text};
        int32_t v;
        ls_sr_err_t e;
        if (ls_registry_register(x->r, subject, &in, false, &x->ids[i], &v, &e) != LS_SR_OK) {
            printf("# register: %s\n", e.message);
            x->ids[i] = -1;
        }
    }
    return NULL;
}

TEST(concurrent_registrations_never_share_ids)
{
    ls_meta_t *m = ls_meta_mem_open();
    ls_registry_t *regs[4];
    racer_t x[4];
    pthread_t t[4];
    for (int i = 0; i < 4; i++) {
        regs[i] = ls_registry_new(m); /* four "brokers" over one store */
        ls_sr_err_t e;
        if (i == 0) CHECK_EQ_INT(ls_registry_set_compat(regs[0], NULL, LS_SR_COMPAT_NONE, &e), 0);
        x[i] = (racer_t){.r = regs[i], .k = i};
        pthread_create(&t[i], NULL, race, &x[i]);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    /* shared schemas: one id whoever registered them; own schemas: distinct ids */
    for (int i = 0; i < 20; i++)
        for (int a = 0; a < 4; a++) {
            CHECK(x[a].ids[i] > 0);
            for (int b = 0; b < 4; b++)
                for (int j = 0; j < 20; j++) {
                    bool same_schema = (i == j) && (i % 2 == 0 || a == b);
                    if (a == b && i == j) continue;
                    if (same_schema)
                        CHECK_EQ_INT(x[a].ids[i], x[b].ids[j]);
                    else
                        CHECK(x[a].ids[i] != x[b].ids[j]);
                }
        }
    for (int i = 0; i < 4; i++)
        ls_registry_free(regs[i]);
    ls_meta_close(m);
}

/* Datums checked against their schema (produce-time validation): a
 * recursive record, maps and arrays in both block forms, unions, enums,
 * fixed; every byte accounted for. */
TEST(avro_datums_checked)
{
    static const char *schema =
        "{\"type\":\"record\",\"name\":\"N\",\"fields\":["
        "{\"name\":\"v\",\"type\":\"int\"},"
        "{\"name\":\"tags\",\"type\":{\"type\":\"map\",\"values\":\"string\"}},"
        "{\"name\":\"xs\",\"type\":{\"type\":\"array\",\"items\":\"long\"}},"
        "{\"name\":\"e\",\"type\":{\"type\":\"enum\",\"name\":\"E\",\"symbols\":[\"A\",\"B\"]}},"
        "{\"name\":\"f\",\"type\":{\"type\":\"fixed\",\"name\":\"F\",\"size\":2}},"
        "{\"name\":\"next\",\"type\":[\"null\",\"N\"]}]}";
    char err[256];
    ls_avro_schema_t *s = ls_avro_parse(NULL, 0, schema, strlen(schema), err, sizeof err);
    CHECK(s);
    const ls_avro_node_t *root = ls_avro_root(s);
    /* v=1, tags={"a":"b"}, xs=[5,6] as a sized block, e=B, f=2 bytes, next=
     * {v=-1, tags={}, xs=[], e=A, f, next=null} */
    static const uint8_t ok[] = {0x02, 0x02, 0x02, 'a',  0x02, 'b', 0x00, 0x03,
                                 0x04, 0x0a, 0x0c, 0x00, 0x02, 'x', 'y',  0x02,
                                 0x01, 0x00, 0x00, 0x00, 'z',  'w', 0x00};
    CHECK_EQ_INT(ls_avro_datum_check(root, ok, sizeof ok, err, sizeof err), 0);
    /* every strict prefix is truncated; one more byte is left over */
    for (size_t n = 0; n < sizeof ok; n++)
        CHECK_EQ_INT(ls_avro_datum_check(root, ok, n, err, sizeof err), LS_EINVAL);
    uint8_t more[sizeof ok + 1];
    memcpy(more, ok, sizeof ok);
    more[sizeof ok] = 0;
    CHECK_EQ_INT(ls_avro_datum_check(root, more, sizeof more, err, sizeof err), LS_EINVAL);
    CHECK(strstr(err, "left over"));
    uint8_t bad[sizeof ok];
    memcpy(bad, ok, sizeof ok);
    bad[12] = 0x04; /* enum index 2 of 2 */
    CHECK_EQ_INT(ls_avro_datum_check(root, bad, sizeof bad, err, sizeof err), LS_EINVAL);
    CHECK(strstr(err, "enum index"));
    memcpy(bad, ok, sizeof ok);
    bad[15] = 0x04; /* union branch 2 of 2 */
    CHECK_EQ_INT(ls_avro_datum_check(root, bad, sizeof bad, err, sizeof err), LS_EINVAL);
    CHECK(strstr(err, "union branch"));
    /* a chain nested past 256 levels is refused, not followed off the stack */
    ls_buf_t deep;
    ls_buf_init(&deep);
    for (int i = 0; i < 300; i++) {
        static const uint8_t node[] = {0x00, 0x00, 0x00, 0x00, 'q', 'q', 0x02};
        ls_buf_append(&deep, node, sizeof node);
    }
    CHECK_EQ_INT(ls_avro_datum_check(root, deep.data, deep.len, err, sizeof err), LS_EINVAL);
    CHECK(strstr(err, "deeper"));
    ls_buf_free(&deep);
    /* an array of nulls may hold more items than bytes; a block count of
     * INT64_MIN (which cannot be negated) is refused (found by fuzz_registry) */
    static const char *nulls = "{\"type\":\"array\",\"items\":\"null\"}";
    ls_avro_schema_t *ns = ls_avro_parse(NULL, 0, nulls, strlen(nulls), err, sizeof err);
    static const uint8_t five[] = {0x0a, 0x00};
    CHECK_EQ_INT(ls_avro_datum_check(ls_avro_root(ns), five, 2, err, sizeof err), 0);
    static const uint8_t minblock[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                       0xff, 0xff, 0xff, 0x01, 0x00, 0x00};
    CHECK_EQ_INT(ls_avro_datum_check(ls_avro_root(ns), minblock, sizeof minblock, err, sizeof err),
                 LS_EINVAL);
    CHECK(strstr(err, "out of range"));
    ls_avro_free(ns);
    /* strings must be UTF-8 */
    static const char *str = "\"string\"";
    ls_avro_schema_t *ss = ls_avro_parse(NULL, 0, str, strlen(str), err, sizeof err);
    static const uint8_t latin1[] = {0x02, 0xe9};
    CHECK_EQ_INT(ls_avro_datum_check(ls_avro_root(ss), latin1, 2, err, sizeof err), LS_EINVAL);
    ls_avro_free(ss);
    ls_avro_free(s);
}

int main(void)
{
    RUN(avro_datums_checked);
    RUN(avro_accepts_valid_schemas);
    RUN(avro_refuses_invalid_schemas_naming_the_problem);
    RUN(proto_parses_real_world_files);
    RUN(proto_refuses_invalid_files_naming_the_problem);
    RUN(proto_descriptor_round_trip);
    RUN(proto_descriptor_with_broken_map_entry);
    RUN(proto_rules_table);
    RUN(compatibility_levels_table);
    RUN(avro_resolution_rules_table);
    RUN(register_duplicate_and_versions);
    RUN(delete_soft_then_permanent);
    RUN(references_resolve_and_protect);
    RUN(json_schema_rules_table);
    RUN(json_schema_levels);
    RUN(json_schema_refuses_what_it_cannot_decide);
    RUN(json_schema_references_by_name);
    RUN(proto_imports_are_references);
    RUN(delete_subject_with_many_versions);
    RUN(settings_subject_global_default);
    RUN(latest_follows_other_brokers);
    RUN(concurrent_registrations_never_share_ids);
    UNIT_DONE();
}
