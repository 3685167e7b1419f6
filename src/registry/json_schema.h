/* JSON Schema documents for the schema registry: loading into a model of
 * typed schemas, and the compatibility rules the Confluent Schema Registry
 * documents for JSON Schema (its "JSON Schema compatibility rules": a diff
 * of the previous schema against the new one, each difference compatible or
 * not, with open, partially open and closed content models).
 *
 * Model (as the registry's reference implementation loads schemas): true
 * and {} accept anything (EMPTY), false nothing (FALSE); a schema object
 * becomes one typed schema (object, array, string, number/integer,
 * boolean, null — from "type", or from the keywords of one type when
 * "type" is absent), an enum, a const, a not, a combination (allOf, anyOf,
 * oneOf; "type": [a, b] is anyOf of the typed schemas), or, when several of
 * these appear in one object, a synthetic allOf of them. "$ref" (draft 4-7:
 * its siblings are ignored) points into the same document ("#/...") or at
 * a referenced schema by its reference name ("name" or "name#/pointer").
 *
 * Rules decided (BACKWARD = can the new schema read data valid under the
 * old): a property added to an open content model is incompatible unless
 * its schema accepts anything; added to a closed or partially open model it
 * is compatible when optional (or required with a default) and covered by
 * the partial model; a property removed from a closed model is
 * incompatible; types may only widen (integer -> number, a branch added to
 * anyOf/oneOf); limits may only loosen (maxLength up, minimum down, ...,
 * removed); enums may only grow; additionalProperties/Items may be added,
 * not removed or narrowed; a required property may only be dropped or added
 * with a default. Not decided, so refused at parse time rather than
 * ignored: "dependencies"/"dependentRequired"/"dependentSchemas",
 * "unevaluatedProperties"/"unevaluatedItems", "contains", "if"/"then"/"else",
 * "propertyNames". patternProperties are matched with POSIX extended
 * regular expressions (ECMA-262's common subset); a pattern POSIX cannot
 * compile is refused.
 *
 * A loaded schema is immutable and may be shared between threads. */
#ifndef LS_REGISTRY_JSON_SCHEMA_H
#define LS_REGISTRY_JSON_SCHEMA_H
#include <stddef.h>

#include <jansson.h>

#include "base/buf.h"
#include "base/status.h"

typedef struct ls_jsonschema ls_jsonschema_t;

/* Loads text after its references (names[i] is the reference name under
 * which texts[i] is reachable by "$ref"). NULL with a message in err. */
ls_jsonschema_t *ls_jsonschema_parse(const char *const *names, const char *const *texts,
                                     size_t ndeps, const char *text, char *err, size_t errlen);
void ls_jsonschema_free(ls_jsonschema_t *s);

/* 1 when every document valid under writer is read by reader (the rules
 * above); 0 with the incompatible differences appended to why. */
int ls_jsonschema_can_read(const ls_jsonschema_t *reader, const ls_jsonschema_t *writer,
                           ls_buf_t *why);

/* Validation of one JSON document against a loaded schema (json_validate.c):
 * 0 when doc is valid, else -1 with "<JSON pointer>: <reason>" in why.
 * Enforced: type, properties, required, additionalProperties,
 * patternProperties, min/maxProperties, items (list and tuple forms),
 * additionalItems/prefixItems, min/maxItems, uniqueItems, enum, const,
 * minimum/maximum and the exclusive forms (draft 4 booleans and draft 6+
 * numbers), multipleOf, minLength/maxLength (in Unicode code points),
 * pattern (an unanchored search of the ECMA-262 pattern, ecma_regex.h),
 * allOf/anyOf/oneOf/not and $ref (in the document and into referenced
 * schemas). Keywords that only name a type ("minLength" without "type")
 * constrain values of that type and let others pass. Numbers compare by
 * value (1 equals 1.0 for enum, const and uniqueItems).
 *
 * "format" is an annotation, never an assertion, in every draft (a
 * non-string "format" makes the schema invalid at load): JSON Schema
 * 2019-09 and 2020-12 make format annotation-only unless a meta-schema
 * requires the format-assertion vocabulary, drafts 4-7 let a validator
 * choose, and the clients that write these records disagree - Python's
 * JSONSerializer (confluent-kafka) never asserts it, Java's asserts the
 * draft's formats for drafts 4-7 (everit) but not for 2019-09/2020-12
 * (json-sKema's default), kafkajs's ajv refuses the schema unless the
 * producer brings its own formats. Asserting here would refuse records a
 * standard producer validated; docs/ARCHITECTURE.md has the decision. A
 * typed table still checks the formats it maps to a column type
 * (date-time, date, uuid: avro_view.h). "contentEncoding", "title",
 * "description", "default", "examples" and the like are annotations too. */
ls_status ls_jsonschema_validate(const ls_jsonschema_t *s, json_t *doc, char *why, size_t whylen);
#endif
