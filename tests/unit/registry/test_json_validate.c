/* JSON Schema validation of documents (registry/json_schema.h,
 * ls_jsonschema_validate): a table of cases per keyword, each a schema, a
 * document, and the verdict (with a piece of the reason for a refusal). The
 * verdicts agree with the Python jsonschema package (Draft 7 validator);
 * tests/integration/test_schema_validation.py cross-checks a sample of them
 * through the broker against it. */
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "registry/json_schema.h"
#include "unit.h"

typedef struct vcase {
    const char *schema, *doc;
    int valid;
    const char *why; /* a piece of the reason (invalid cases) */
} vcase_t;

static const vcase_t CASES[] = {
    /* type */
    {"{\"type\":\"integer\"}", "1", 1, NULL},
    {"{\"type\":\"integer\"}", "1.0", 1, NULL},
    {"{\"type\":\"integer\"}", "1.5", 0, "/: a number where the schema has an integer"},
    {"{\"type\":\"number\"}", "\"1\"", 0, "a string where the schema has a number"},
    {"{\"type\":[\"string\",\"null\"]}", "null", 1, NULL},
    {"{\"type\":[\"string\",\"null\"]}", "3", 0, "none of the 2 schemas"},
    {"{\"type\":\"boolean\"}", "false", 1, NULL},
    {"{\"type\":\"null\"}", "0", 0, "an integer where the schema has null"},
    /* properties, required, additionalProperties, patternProperties */
    {"{\"properties\":{\"a\":{\"type\":\"string\"}},\"required\":[\"a\"]}", "{\"a\":\"x\"}", 1,
     NULL},
    {"{\"properties\":{\"a\":{\"type\":\"string\"}},\"required\":[\"a\"]}", "{}", 0,
     "/a: the property is required"},
    {"{\"properties\":{\"a\":{\"type\":\"string\"}}}", "{\"a\":1}", 0, "/a: an integer where"},
    {"{\"properties\":{\"a/b~\":{\"type\":\"string\"}}}", "{\"a/b~\":1}", 0, "/a~1b~0: "},
    {"{\"properties\":{\"a\":{}},\"additionalProperties\":false}", "{\"a\":1,\"b\":2}", 0,
     "\"b\" is not allowed"},
    {"{\"additionalProperties\":{\"type\":\"integer\"}}", "{\"b\":\"x\"}", 0, "/b: a string"},
    {"{\"patternProperties\":{\"^x_\":{\"type\":\"integer\"}},\"additionalProperties\":false}",
     "{\"x_1\":1}", 1, NULL},
    {"{\"patternProperties\":{\"^x_\":{\"type\":\"integer\"}},\"additionalProperties\":false}",
     "{\"x_1\":\"s\"}", 0, "/x_1: a string"},
    {"{\"minProperties\":2}", "{\"a\":1}", 0, "fewer than minProperties 2"},
    {"{\"maxProperties\":1}", "{\"a\":1,\"b\":2}", 0, "more than maxProperties 1"},
    {"{\"minProperties\":2}", "\"not an object\"", 1, NULL}, /* no "type": others pass */
    /* items */
    {"{\"items\":{\"type\":\"integer\"}}", "[1,2,\"x\"]", 0, "/2: a string"},
    {"{\"items\":[{\"type\":\"integer\"},{\"type\":\"string\"}]}", "[1,\"a\",true]", 1, NULL},
    {"{\"items\":[{\"type\":\"integer\"}],\"additionalItems\":false}", "[1,2]", 0,
     "additionalItems is false"},
    {"{\"items\":[{\"type\":\"integer\"}],\"additionalItems\":{\"type\":\"string\"}}", "[1,2]", 0,
     "/1: an integer"},
    {"{\"minItems\":2}", "[1]", 0, "fewer than minItems 2"},
    {"{\"maxItems\":1}", "[1,2]", 0, "more than maxItems 1"},
    {"{\"uniqueItems\":true}", "[1,2,1.0]", 0, "items 0 and 2 are equal"},
    {"{\"uniqueItems\":true}", "[{\"a\":1,\"b\":2},{\"b\":2,\"a\":1}]", 0, "are equal"},
    {"{\"uniqueItems\":true}", "[[1],[1,1],\"1\"]", 1, NULL},
    /* enum, const */
    {"{\"enum\":[\"a\",1,null]}", "1.0", 1, NULL},
    {"{\"enum\":[\"a\",1,null]}", "\"b\"", 0, "not one of the schema's enum members"},
    {"{\"const\":{\"k\":[1,2]}}", "{\"k\":[1,2]}", 1, NULL},
    {"{\"const\":{\"k\":[1,2]}}", "{\"k\":[2,1]}", 0, "not the schema's const"},
    /* numbers */
    {"{\"type\":\"number\",\"minimum\":1.5}", "1.5", 1, NULL},
    {"{\"type\":\"number\",\"minimum\":1.5}", "1.4", 0, "less than minimum 1.5"},
    {"{\"type\":\"number\",\"maximum\":10}", "11", 0, "greater than maximum 10"},
    {"{\"type\":\"number\",\"exclusiveMinimum\":0}", "0", 0, "exclusiveMinimum 0"},
    {"{\"type\":\"number\",\"exclusiveMaximum\":5}", "4.999", 1, NULL},
    {"{\"type\":\"number\",\"maximum\":5,\"exclusiveMaximum\":true}", "5", 0, "exclusiveMaximum"},
    {"{\"type\":\"number\",\"minimum\":5,\"exclusiveMinimum\":false}", "5", 1, NULL},
    {"{\"type\":\"integer\",\"multipleOf\":3}", "9", 1, NULL},
    {"{\"type\":\"integer\",\"multipleOf\":3}", "10", 0, "not a multiple of 3"},
    {"{\"type\":\"number\",\"multipleOf\":0.5}", "2.5", 1, NULL},
    {"{\"type\":\"number\",\"multipleOf\":0.5}", "2.25", 0, "multipleOf"},
    /* strings: lengths in code points; pattern is a search */
    {"{\"type\":\"string\",\"minLength\":2}", "\"\xc3\xa9\"", 0, "1 characters, shorter"},
    {"{\"type\":\"string\",\"maxLength\":2}", "\"\xc3\xa9\xc3\xa9\"", 1, NULL},
    {"{\"type\":\"string\",\"maxLength\":2}", "\"abc\"", 0, "longer than maxLength 2"},
    {"{\"type\":\"string\",\"pattern\":\"[0-9]{3}\"}", "\"ab123\"", 1, NULL},
    {"{\"type\":\"string\",\"pattern\":\"^[0-9]{3}$\"}", "\"ab123\"", 0, "does not match"},
    {"{\"maxLength\":1}", "12345", 1, NULL}, /* no "type": only strings are measured */
    /* ECMA-262 syntax translated to POSIX, or else not enforced */
    {"{\"type\":\"string\",\"pattern\":\"^\\\\d+$\"}", "\"123\"", 1, NULL},
    {"{\"type\":\"string\",\"pattern\":\"^\\\\d+$\"}", "\"12a\"", 0, "does not match"},
    {"{\"type\":\"string\",\"pattern\":\"^[\\\\w.]+@\\\\S+?$\"}", "\"a.b@c\"", 1, NULL},
    {"{\"type\":\"string\",\"pattern\":\"^[\\\\w.]+@\\\\S+?$\"}", "\"a b@c\"", 0, "does not match"},
    {"{\"type\":\"string\",\"pattern\":\"^a\\\\.b$\"}", "\"axb\"", 0, "does not match"},
    /* ECMA-262 syntax (PCRE2, ecma_regex.h): lookarounds, \b, \u escapes, '$'
     * only at the very end, backreferences, whole code points */
    {"{\"type\":\"string\",\"pattern\":\"^(?=x)\"}", "\"y\"", 0, "does not match"},
    {"{\"type\":\"string\",\"pattern\":\"^(?=x)\"}", "\"xy\"", 1, NULL},
    {"{\"type\":\"string\",\"pattern\":\"^(?!tmp_)\"}", "\"tmp_a\"", 0, "does not match"},
    {"{\"type\":\"string\",\"pattern\":\"(?<=\\\\$)\\\\d+\"}", "\"cost $12\"", 1, NULL},
    {"{\"type\":\"string\",\"pattern\":\"\\\\bcat\\\\b\"}", "\"concat\"", 0, "does not match"},
    {"{\"type\":\"string\",\"pattern\":\"\\\\bcat\\\\b\"}", "\"a cat!\"", 1, NULL},
    {"{\"type\":\"string\",\"pattern\":\"^\\\\u00e9$\"}", "\"\u00e9\"", 1, NULL},
    {"{\"type\":\"string\",\"pattern\":\"^.$\"}", "\"\u00e9\"", 1, NULL},
    {"{\"type\":\"string\",\"pattern\":\"^ab$\"}", "\"ab\\n\"", 0, "does not match"},
    {"{\"type\":\"string\",\"pattern\":\"^(a)\\\\1$\"}", "\"aa\"", 1, NULL},
    {"{\"type\":\"string\",\"pattern\":\"^a.c$\"}", "\"a\\nc\"", 0, "does not match"},
    /* a catastrophically backtracking pattern ends at the match limit */
    {"{\"type\":\"string\",\"pattern\":\"^(a+)+$\"}",
     "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!\"", 0, "match limit"},
    {"{\"patternProperties\":{\"^(?!_)\":{\"type\":\"integer\"}}}", "{\"a\":1,\"_b\":\"x\"}", 1,
     NULL},
    {"{\"patternProperties\":{\"^(?!_)\":{\"type\":\"integer\"}}}", "{\"a\":\"x\"}", 0,
     "/a: a string"},
    /* "format" is an annotation (json_schema.h): no draft's formats are
     * asserted, as confluent-kafka's JSONSerializer (jsonschema without a
     * format checker) and 2019-09+ by default; the other keywords still are */
    {"{\"type\":\"string\",\"format\":\"email\"}", "\"not an address\"", 1, NULL},
    {"{\"type\":\"string\",\"format\":\"date-time\"}", "\"yesterday at noon\"", 1, NULL},
    {"{\"type\":\"string\",\"format\":\"date\"}", "\"2024-13-45\"", 1, NULL},
    {"{\"type\":\"string\",\"format\":\"time\"}", "\"25:61\"", 1, NULL},
    {"{\"type\":\"string\",\"format\":\"ipv4\"}", "\"999.1.1.1\"", 1, NULL},
    {"{\"type\":\"string\",\"format\":\"ipv6\"}", "\"::g\"", 1, NULL},
    {"{\"type\":\"string\",\"format\":\"hostname\"}", "\"-no-.-\"", 1, NULL},
    {"{\"type\":\"string\",\"format\":\"uuid\"}", "\"not-a-uuid\"", 1, NULL},
    {"{\"type\":\"string\",\"format\":\"uri\"}", "\"no scheme here\"", 1, NULL},
    {"{\"type\":\"string\",\"format\":\"regex\"}", "\"(\"", 1, NULL},
    {"{\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"string\","
     "\"format\":\"email\"}",
     "\"x\"", 1, NULL},
    {"{\"format\":\"a-format-nobody-defines\"}", "\"x\"", 1, NULL},
    {"{\"type\":\"string\",\"format\":\"email\"}", "5", 0, "an integer where the schema has"},
    {"{\"type\":\"string\",\"format\":\"email\",\"maxLength\":3}", "\"a@bc\"", 0,
     "longer than maxLength 3"},
    {"{\"properties\":{\"format\":{\"type\":\"string\"}}}", "{\"format\":1}", 0,
     "/format: an integer"},
    /* combinations */
    {"{\"allOf\":[{\"type\":\"integer\"},{\"minimum\":3}]}", "2", 0, "less than minimum 3"},
    {"{\"anyOf\":[{\"type\":\"integer\"},{\"type\":\"string\"}]}", "\"x\"", 1, NULL},
    {"{\"anyOf\":[{\"type\":\"integer\"},{\"type\":\"string\"}]}", "true", 0,
     "none of the 2 schemas of anyOf"},
    {"{\"oneOf\":[{\"type\":\"integer\"},{\"minimum\":0}]}", "-1", 1, NULL},
    {"{\"oneOf\":[{\"type\":\"integer\"},{\"minimum\":0}]}", "1", 0, "schemas 0 and 1 of oneOf"},
    {"{\"not\":{\"type\":\"string\"}}", "\"x\"", 0, "matches the schema under \"not\""},
    {"{\"not\":{\"type\":\"string\"}}", "1", 1, NULL},
    {"false", "1", 0, "allows no value"},
    {"true", "{\"any\":[1]}", 1, NULL},
    /* $ref, recursive */
    {"{\"definitions\":{\"n\":{\"type\":\"object\",\"properties\":{\"next\":{\"$ref\":\"#/"
     "definitions/n\"},\"v\":{\"type\":\"integer\"}}}},\"$ref\":\"#/definitions/n\"}",
     "{\"v\":1,\"next\":{\"v\":2,\"next\":{\"v\":\"x\"}}}", 0, "/next/next/v: a string"},
    {"{\"definitions\":{\"n\":{\"type\":\"object\",\"properties\":{\"next\":{\"$ref\":\"#/"
     "definitions/n\"},\"v\":{\"type\":\"integer\"}}}},\"$ref\":\"#/definitions/n\"}",
     "{\"v\":1,\"next\":{\"v\":2}}", 1, NULL},
};

TEST(keyword_table)
{
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        const vcase_t *c = &CASES[i];
        char err[256];
        ls_jsonschema_t *s = ls_jsonschema_parse(NULL, NULL, 0, c->schema, err, sizeof err);
        if (!s) printf("# case %zu: schema %s: %s\n", i, c->schema, err);
        CHECK(s != NULL);
        json_error_t je;
        json_t *d = json_loads(c->doc, JSON_DECODE_ANY, &je);
        CHECK(d != NULL);
        char why[512] = "";
        ls_status rc = ls_jsonschema_validate(s, d, why, sizeof why);
        bool ok = c->valid ? rc == LS_OK : rc == LS_EINVAL && strstr(why, c->why) != NULL;
        if (!ok) printf("# case %zu: %s against %s -> %d %s\n", i, c->doc, c->schema, rc, why);
        json_decref(d);
        ls_jsonschema_free(s);
        CHECK(ok);
    }
}

/* "$ref" into a referenced schema (another subject), by its reference name */
TEST(references_to_other_subjects)
{
    const char *names[] = {"address.json"};
    const char *texts[] = {"{\"type\":\"object\",\"properties\":{\"zip\":{\"type\":\"string\","
                           "\"pattern\":\"^[0-9]{5}$\"}},\"required\":[\"zip\"]}"};
    char err[256];
    ls_jsonschema_t *s = ls_jsonschema_parse(
        names, texts, 1,
        "{\"type\":\"object\",\"properties\":{\"home\":{\"$ref\":\"address.json\"}}}", err,
        sizeof err);
    CHECK(s != NULL);
    json_t *good = json_loads("{\"home\":{\"zip\":\"12345\"}}", 0, NULL);
    json_t *bad = json_loads("{\"home\":{\"zip\":\"1234\"}}", 0, NULL);
    char why[512] = "";
    CHECK_EQ_INT(ls_jsonschema_validate(s, good, why, sizeof why), 0);
    CHECK_EQ_INT(ls_jsonschema_validate(s, bad, why, sizeof why), LS_EINVAL);
    CHECK(strstr(why, "/home/zip: the string does not match") != NULL);
    json_decref(good);
    json_decref(bad);
    ls_jsonschema_free(s);
}

/* a schema that refers to itself without descending fails, it does not loop */
TEST(self_reference_is_bounded)
{
    char err[256];
    ls_jsonschema_t *s = ls_jsonschema_parse(
        NULL, NULL, 0,
        "{\"definitions\":{\"a\":{\"$ref\":\"#/definitions/a\"}},\"$ref\":\"#/definitions/a\"}",
        err, sizeof err);
    if (!s) return; /* refused at load: as good */
    json_t *d = json_integer(1);
    char why[512] = "";
    ls_status rc = ls_jsonschema_validate(s, d, why, sizeof why);
    CHECK(rc == LS_OK || strstr(why, "recurses deeper") != NULL);
    json_decref(d);
    ls_jsonschema_free(s);
}

/* a pattern that is no regular expression makes the schema invalid, named */
TEST(invalid_patterns_refused_at_load)
{
    const char *schemas[] = {"{\"type\":\"string\",\"pattern\":\"^(ab\"}",
                             "{\"patternProperties\":{\"[a-\":{}}}"};
    for (size_t i = 0; i < 2; i++) {
        char err[256] = "";
        ls_jsonschema_t *s = ls_jsonschema_parse(NULL, NULL, 0, schemas[i], err, sizeof err);
        if (s) printf("# %s was accepted\n", schemas[i]);
        CHECK(s == NULL);
        CHECK(strstr(err, "is not a valid regular expression") != NULL);
    }
}

/* a non-string "format" makes the schema invalid, as the meta-schemas say */
TEST(non_string_format_refused_at_load)
{
    const char *schemas[] = {"{\"type\":\"string\",\"format\":5}",
                             "{\"properties\":{\"a\":{\"format\":[\"email\"]}}}"};
    for (size_t i = 0; i < 2; i++) {
        char err[256] = "";
        ls_jsonschema_t *s = ls_jsonschema_parse(NULL, NULL, 0, schemas[i], err, sizeof err);
        if (s) printf("# %s was accepted\n", schemas[i]);
        CHECK(s == NULL);
        CHECK(strstr(err, "\"format\" must be a string") != NULL);
    }
}

int main(void)
{
    RUN(keyword_table);
    RUN(references_to_other_subjects);
    RUN(self_reference_is_bounded);
    RUN(invalid_patterns_refused_at_load);
    RUN(non_string_format_refused_at_load);
    UNIT_DONE();
}
