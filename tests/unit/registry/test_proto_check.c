/* Protobuf payloads against their schema (registry/protobuf.h,
 * ls_proto_check_payload): the message index names a message, fields come
 * in their types' wire types, lengths stay in bounds, proto3 strings are
 * UTF-8, embedded messages, maps and groups are checked the same way. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "registry/protobuf.h"
#include "unit.h"

static const char SCHEMA[] = "syntax = \"proto3\";\n"
                             "message M {\n"
                             "  int64 a = 1;\n"
                             "  string s = 2;\n"
                             "  N n = 3;\n"
                             "  repeated int32 r = 4;\n"
                             "  double d = 5;\n"
                             "  map<string, int32> m = 6;\n"
                             "  message N { fixed32 f = 1; string t = 2; }\n"
                             "}\n"
                             "message Other { bytes b = 1; }\n";

typedef struct pcase {
    int64_t idx[2];
    size_t nidx;
    const char *wire;
    size_t len;
    const char *why; /* NULL: valid */
} pcase_t;

#define W(s) s, sizeof s - 1

static const pcase_t CASES[] = {
    {{0}, 0, W("\x08\x96\x01\x12\x02hi"), NULL}, /* a=150 s="hi" */
    {{1}, 1, W("\x0a\x03\xff\x00\x01"), NULL},   /* Other: bytes need not be UTF-8 */
    /* M.N is M's second nested type: the map entry of m (declared first) is [0, 0] */
    {{0, 1}, 2, W("\x0d\x01\x02\x03\x04\x12\x01x"), NULL}, /* M.N: f fixed32, t */
    {{0}, 0, W("\x1a\x05\x0d\x01\x02\x03\x04"), NULL},     /* n embedded */
    {{0}, 0, W("\x22\x03\x01\x02\x03\x20\x04"), NULL},     /* r packed, then unpacked */
    {{0}, 0, W("\x32\x05\x0a\x01k\x10\x07"), NULL},        /* map entry k -> 7 */
    {{0}, 0, W("\x98\x06\x01\x52\x00"), NULL},             /* unknown fields 99, 10 pass */
    {{2}, 1, W(""), "message index 2 at level 0 names no message"},
    {{0, 5}, 2, W(""), "message index 5 at level 1"},
    {{0}, 0, W("\x0a\x01x"), "field a (1) of M has wire type 2, not its type's 0"},
    {{0}, 0, W("\x10\x01"), "field s (2) of M has wire type 0"},
    {{0}, 0, W("\x29\x01\x02\x03\x04"), "runs past the end"},
    {{0}, 0, W("\x12\x02\xc3\x28"), "string field s (2) of M is not UTF-8"},
    {{0}, 0, W("\x1a\x02\x08\x01"), "field f (1) of M.N has wire type 0"},
    {{0}, 0, W("\x1a\x02\x12\x05"), "runs past the end"},
    {{0}, 0, W("\x22\x02\x01\x82"), "packed field r (4) of M is cut"},
    {{0}, 0, W("\x32\x03\x10\x01\x01"), "bad Protobuf tag"},
};

TEST(payloads_against_the_descriptor)
{
    char err[256];
    ls_proto_t *p = ls_proto_parse(NULL, NULL, 0, SCHEMA, err, sizeof err);
    if (!p) printf("# %s\n", err);
    CHECK(p != NULL);
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        const pcase_t *c = &CASES[i];
        char why[256] = "";
        ls_status rc = ls_proto_check_payload(p, c->idx, c->nidx, (const uint8_t *)c->wire, c->len,
                                              why, sizeof why);
        int ok = c->why ? rc == LS_EINVAL && strstr(why, c->why) != NULL : rc == LS_OK;
        if (!ok) printf("# case %zu -> %d %s\n", i, rc, why);
        CHECK(ok);
    }
    ls_proto_free(p);
}

TEST(proto2_strings_and_groups)
{
    char err[256];
    ls_proto_t *p = ls_proto_parse(NULL, NULL, 0,
                                   "syntax = \"proto2\";\n"
                                   "message G { optional string s = 1;\n"
                                   "  optional group Grp = 2 { optional int32 x = 3; } }\n",
                                   err, sizeof err);
    if (!p) printf("# %s\n", err);
    CHECK(p != NULL);
    char why[256] = "";
    /* proto2 does not require UTF-8 */
    CHECK_EQ_INT(
        ls_proto_check_payload(p, NULL, 0, (const uint8_t *)"\x0a\x01\xff", 3, why, sizeof why), 0);
    /* group Grp (field 2): start 0x13, x=1 (0x18 0x01), end 0x14 */
    CHECK_EQ_INT(
        ls_proto_check_payload(p, NULL, 0, (const uint8_t *)"\x13\x18\x01\x14", 4, why, sizeof why),
        0);
    CHECK_EQ_INT(
        ls_proto_check_payload(p, NULL, 0, (const uint8_t *)"\x13\x1a\x00\x14", 4, why, sizeof why),
        LS_EINVAL);
    CHECK(strstr(why, "field x (3)") != NULL);
    CHECK_EQ_INT(
        ls_proto_check_payload(p, NULL, 0, (const uint8_t *)"\x13\x18\x01", 3, why, sizeof why),
        LS_EINVAL);
    CHECK(strstr(why, "not closed") != NULL);
    ls_proto_free(p);
}

int main(void)
{
    RUN(payloads_against_the_descriptor);
    RUN(proto2_strings_and_groups);
    UNIT_DONE();
}
