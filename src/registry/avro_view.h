/* The Avro view of a registered JSON Schema or Protobuf message: an Avro
 * schema whose datums carry the same values, and a transcoder from JSON
 * instances (Protobuf wire bytes) to those datums, so the typed-table machinery built on Avro
 * (table/iceberg_typed.h: shape, evolution, shredding) writes JSON values too (issue 14 §2).
 *
 * Mapping (JSON Schema -> Avro -> Iceberg, docs/FORMATS.md "Typed values"):
 *   object with properties       -> record  -> struct (declaration order)
 *   object, no properties, with an additionalProperties schema
 *                                -> map     -> map<string, V>
 *   array with an items schema   -> array   -> list
 *   string                       -> string  -> string
 *     format date-time           -> long timestamp-micros -> timestamptz
 *     format date                -> int date              -> date
 *     format uuid                -> string uuid           -> uuid (checked:
 *                                   8-4-4-4-12 hex digits)
 *     contentEncoding base64     -> bytes                 -> binary
 *   integer                      -> int when minimum/maximum keep it in
 *                                   32 bits, else long
 *   number                       -> double
 *   boolean                      -> boolean
 *   enum / const of strings      -> string; of integers -> long
 *   a schema accepting anything ({}, true, an object without properties
 *   or additionalProperties schema, an array without items, an anyOf/oneOf
 *   of several non-null types)   -> string holding the value's JSON text
 * Nullable: a "type" list or anyOf/oneOf with "null" and one other schema,
 * and every property not "required", is a union with null (optional
 * column). allOf of one typed schema and constraints (enum, const, not) is
 * that schema. A top-level object with properties is named by its "title"
 * (what record-name subject strategies use). Refused with the path and the
 * reason (the record then makes no row and follows error.handling):
 * recursion ($ref cycles: Iceberg has no recursive types),
 * tuples (prefixItems / items arrays), allOf of several typed schemas, a
 * schema that is only "null" or false. Whether the top level may be other
 * than a record is the table's to say (a value's must be one, a key's may
 * be a primitive: table/iceberg_typed.h).
 *
 * Transcoding checks what the columns need, not every JSON Schema
 * constraint: the instance is one JSON value; each mapped value has its
 * type (an integer for int/long, in range; a number for double; a date-time
 * per RFC 3339; a date YYYY-MM-DD; base64 that decodes; a string or integer
 * enum member of the right type); required non-nullable properties are
 * present and not null. Properties the schema does not declare have no
 * column and are not kept (the record itself stays in the topic).
 *
 * A view is immutable once built and may be shared between threads. */
#ifndef LS_REGISTRY_AVRO_VIEW_H
#define LS_REGISTRY_AVRO_VIEW_H
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "base/buf.h"
#include "base/status.h"
#include "registry/avro.h"
#include "registry/json_schema.h"
#include "registry/protobuf.h"

typedef struct ls_avro_view ls_avro_view_t;

/* The view of a JSON Schema; NULL with the path and the reason in err when
 * the schema is not mapped (header comment). s must outlive the view: its
 * values are validated against s (ls_jsonschema_validate) before they are
 * encoded, so a value a table takes is one produce-time validation takes. */
ls_avro_view_t *ls_avro_view_json(const ls_jsonschema_t *s, char *err, size_t errlen);
void ls_avro_view_free(ls_avro_view_t *v);
/* The Avro schema (a record) datums of v follow. */
const ls_avro_node_t *ls_avro_view_root(const ls_avro_view_t *v);
/* Appends to out the Avro binary datum of the payload p[0..len) (for JSON:
 * one JSON text; for Protobuf: the message's wire bytes, after the index
 * array). 0, or -1 with the path and the reason in why (out then
 * holds a partial datum: discard it). */
ls_status ls_avro_view_encode(const ls_avro_view_t *v, const uint8_t *p, size_t len, ls_buf_t *out,
                              char *why, size_t whylen);

/* ---- Protobuf ---- */
/* The view of the message the Confluent message-index path idx[0..n)
 * names in the schema's own file ([i]: its i-th top-level message, then
 * nested messages in declaration order; n == 0 means [0]). Mapping:
 * message -> record (named by its full name) -> struct; repeated ->
 * list; map<string, V> -> map; map with other keys -> list of key/value
 * structs; enum -> string (the value's name; an unknown number as its
 * decimal text); int32, sint32, sfixed32 -> int; int64, sint64, sfixed64,
 * uint32, fixed32 -> long; uint64, fixed64 -> long (values >= 2^63 do not
 * fit: the record fails); float, double, bool, string (UTF-8 checked),
 * bytes as themselves; google.protobuf.Timestamp -> timestamptz (micros);
 * google.protobuf.*Value wrappers -> their value, optional. Presence:
 * message fields, oneof members, proto2 optional and proto3 "optional"
 * fields are optional columns (null when absent; of a oneof only the
 * member set last is non-null); proto3 fields without presence are
 * required and read their default when absent; proto2 required fields are
 * required (absent: the record fails); repeated and map fields are
 * required (empty when absent). Refused: recursive messages, groups,
 * messages without fields, a well-known type as the top level. */
ls_avro_view_t *ls_avro_view_proto(const ls_proto_t *p, const int64_t *idx, size_t n, char *err,
                                   size_t errlen);
/* Reads the message-index array at the start of a Confluent Protobuf
 * payload (zig-zag varints: a count, then the indexes): 0 with idx[0..*n)
 * and the bytes it took in *used; -1 when malformed or longer than cap. */
int ls_avro_view_proto_indexes(const uint8_t *p, size_t len, int64_t *idx, size_t cap, size_t *n,
                               size_t *used);

/* The views of every message of a Protobuf schema (built once, with the
 * schema; immutable). */
typedef struct ls_avro_views ls_avro_views_t;
ls_avro_views_t *ls_avro_views_proto(const ls_proto_t *p);
void ls_avro_views_free(ls_avro_views_t *vs);
/* The view of the message idx[0..n) names; NULL with the reason. */
const ls_avro_view_t *ls_avro_views_find(const ls_avro_views_t *vs, const int64_t *idx, size_t n,
                                         char *why, size_t whylen);

/* ---- schemaless JSON (value.format=json) ---- */
/* Merges the types of the JSON object text p[0..len) into the inferred
 * JSON Schema *schema (NULL: none yet; created as an object schema whose
 * properties are the first value's, then "_raw": string, the fallback
 * column): an integer
 * is "integer" (long), a fraction "number" (double), strings, booleans,
 * objects with their properties, arrays with their items' merged schema;
 * null, {} and [] say nothing yet. Widening: an integer fits a number
 * column. LS_JSON_CONFLICT: a value the columns cannot take (another type;
 * a number where the column is integer: long cannot become double; a
 * property named _raw or _kafka_*) — why says which, *schema may hold a
 * partial merge (callers merge into a copy). */
typedef enum ls_json_fit {
    LS_JSON_FITS,       /* the value fits *schema as it is */
    LS_JSON_WIDENED,    /* *schema changed (or was created) */
    LS_JSON_CONFLICT,   /* the columns cannot take the value (why) */
    LS_JSON_NOT_OBJECT, /* not a JSON object (why) */
} ls_json_fit;
ls_json_fit ls_json_infer(json_t **schema, const uint8_t *p, size_t len, char *why, size_t whylen);
/* The inferred schema of a json table from its Iceberg schema JSON (the
 * value columns; _kafka_* left out). */
json_t *ls_json_infer_from_iceberg(const char *iceberg_schema_json);
#endif
