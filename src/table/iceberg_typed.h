/* Typed Kafka tables (issue 14 §2): the columns of a table whose record
 * values are Avro, written in the Confluent wire format (magic byte 0, a
 * 4-byte big-endian schema id, the Avro binary datum).
 *
 * Columns: the Kafka metadata first, under names that cannot clash with a
 * value's fields, then the value record's fields as top-level columns:
 *   1 _kafka_partition  int          required
 *   2 _kafka_offset     long         required
 *   3 _kafka_timestamp  timestamptz  required
 *   4 _kafka_key        binary       optional
 *   6 _kafka_headers    list<7: struct<8 key: string, 9 value: binary>> optional
 *   5 _kafka_value      binary       optional   only when the value is raw
 *                                               (key.format typed, value.format raw)
 *   _kafka_key_typed    the decoded key (key.format=schema-registry): a
 *                       struct of an Avro record key's fields, or the one
 *                       column of a primitive key's type; optional (null for
 *                       a record without a key); its ids follow the value's
 *                       at creation, or are fresh when a later record brings
 *                       the first key (evolution adds the column)
 *   10.. the value's fields, in order: the fields of a struct take
 *        consecutive ids, then each field's nested ids follow (a struct's
 *        fields; a list's element id; a map's key id, then value id), as
 *        Iceberg's own writers number a new schema
 * Ids 1-4 and 6-9 are the raw table's (iceberg_raw.h), so the partition
 * specs over partition/offset/timestamp mean the same in both shapes; 5 (the
 * raw value) only in tables whose value is raw. _kafka_key (the key's bytes)
 * is kept beside the decoded key: it is the key Kafka's compaction and an
 * upsert table without a primary key go by.
 *
 * Type mapping (the Iceberg spec's Avro appendix): boolean, int, long,
 * float, double, bytes -> binary, string (uuid too) -> string, enum ->
 * string (its symbol), record -> struct, array -> list, map -> map<string,
 * ...>, a union of null and one type -> that type, optional; logical date ->
 * date, timestamp-millis/-micros -> timestamptz, local-timestamp-millis/
 * -micros -> timestamp (millis scaled to micros); fixed(L) -> fixed[L];
 * decimal(P,S) on bytes or fixed -> decimal(P,S) (P <= 38; Parquet INT32 for
 * P <= 9, INT64 for P <= 18, else the fewest fixed bytes; a value with more
 * than P digits does not decode: never rounded); uuid on string (its text
 * form, parsed) or fixed(16) -> uuid (a table's older string column keeps
 * taking uuid text); time-millis/-micros -> time (micros); a union of
 * several non-null types -> struct<tag: int required, field0, field1, ...
 * optional> (Iceberg Java's names; tag counts the non-null branches from
 * 0; optional when the union has null). Refused (the shape with the path
 * and the reason, so the table does not start rather than dropping data):
 * timestamp-nanos and
 * local-timestamp-nanos (Iceberg format v3; tables are v2), duration, a
 * value whose top level is not a record, fields named _kafka_*.
 *
 * Schema evolution (issue 14 §4, design note in iceberg_typed.c): a shape is
 * the table's current Iceberg schema; a reader turns datums of one writer
 * schema into rows of a shape, resolving by field name, else by one of the
 * field's aliases (a renamed field fills its old column, which keeps its
 * name; missing optional columns null, int into long, float into double). A writer schema that does
 * not fit asks for ls_typed_evolve: a new shape with added optional columns
 * (fresh ids above last-column-id), int -> long, float -> double, a
 * decimal's precision widened at the same scale, required -> optional,
 * every existing field id kept; what Iceberg cannot express is
 * refused with the path and the reason.
 *
 * Primary keys (upsert tables, ls_typed_shape_new_pk): named top-level
 * fields of a record key, required and primitive (not float/double), are
 * the schema's identifier-field-ids; the key column is then required, and a
 * key version that drops a key field or makes it (or the key) nullable is
 * incompatible. ls_typed_key_identity gives a key datum's identity.
 *
 * Shapes and readers are immutable once built and may be shared between
 * threads; a reader must not outlive its shape. */
#ifndef LS_ICEBERG_TYPED_H
#define LS_ICEBERG_TYPED_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "registry/avro.h"
#include "table/iceberg_raw.h"
#include "table/iceberg_table.h"
#include "table/parquet_writer.h"

#define LS_TYPED_FIRST_VALUE_ID 10
#define LS_TYPED_KEY_COLUMN "_kafka_key_typed"
#define LS_TYPED_MAX_PK 16

typedef struct ls_typed_shape ls_typed_shape_t;

typedef struct ls_typed_reader ls_typed_reader_t;

/* The shape of a new table for values of the Avro schema root (a record).
 * NULL with err naming the path and the reason when the schema uses what is
 * not mapped yet. */
ls_typed_shape_t *ls_typed_shape_new(const ls_avro_node_t *root, char *err, size_t errlen);
/* The same with a key column: value NULL makes the value a raw column
 * (_kafka_value), key NULL makes no key column (yet: ls_typed_evolve_key
 * adds it). */
ls_typed_shape_t *ls_typed_shape_new_kv(const ls_avro_node_t *value, const ls_avro_node_t *key,
                                        char *err, size_t errlen);
/* The same with a primary key: the fields pk[0..npk) of a record key
 * (top-level, required, primitive but not float/double) are the schema's
 * identifier-field-ids, and the key column is required. They stay so: a key
 * version that would make one optional, or lacks one, is incompatible. */
ls_typed_shape_t *ls_typed_shape_new_pk(const ls_avro_node_t *value, const ls_avro_node_t *key,
                                        const char *const *pk, size_t npk, char *err,
                                        size_t errlen);
/* The primary key's fields (from the schema's identifier-field-ids), in order. */
size_t ls_typed_pk_count(const ls_typed_shape_t *s);
const char *ls_typed_pk_name(const ls_typed_shape_t *s, size_t i);
/* The shape of an existing typed table: its current Iceberg schema JSON and
 * last-column-id (ls_ice_table_schema). NULL with err when the schema holds
 * what typed tables do not write. */
ls_typed_shape_t *ls_typed_shape_parse(const char *schema_json, int last_column_id, char *err,
                                       size_t errlen);
void ls_typed_shape_free(ls_typed_shape_t *s);
bool ls_typed_has_key(const ls_typed_shape_t *s);      /* a _kafka_key_typed column */
bool ls_typed_key_required(const ls_typed_shape_t *s); /* ... that every row must fill */
bool ls_typed_raw_value(const ls_typed_shape_t *s);    /* the value is a raw column */
/* Iceberg schema JSON ("struct", schema-id 0: the table assigns the id) and
 * the last column id. */
const char *ls_typed_iceberg_schema_json(const ls_typed_shape_t *s);
int ls_typed_last_column_id(const ls_typed_shape_t *s);
/* The Parquet fields (pre-order, parquet_writer.h). */
const ls_pq_field_t *ls_typed_parquet_fields(const ls_typed_shape_t *s, size_t *n);

/* Splits a Confluent-framed value: 0 with *schema_id and the datum, or -1
 * (not framed: null, shorter than 5 bytes, magic byte not 0). */
int ls_typed_unframe(const uint8_t *value, int64_t len, int32_t *schema_id, const uint8_t **datum,
                     size_t *datum_len);
/* How datums of the Avro schema writer become rows of shape s: LS_OK with
 * *out; LS_ECONFLICT when s must evolve first (ls_typed_evolve); LS_EINVAL
 * when the writer's schema is incompatible with the table's (err names the
 * path and the reason). */
ls_status ls_typed_reader_new(const ls_typed_shape_t *s, const ls_avro_node_t *writer,
                              ls_typed_reader_t **out, char *err, size_t errlen);
/* The same for keys of the Avro schema writer into the key column
 * (LS_ECONFLICT also when the shape has none yet). */
ls_status ls_typed_key_reader_new(const ls_typed_shape_t *s, const ls_avro_node_t *writer,
                                  ls_typed_reader_t **out, char *err, size_t errlen);
void ls_typed_reader_free(ls_typed_reader_t *r);
/* The shape s evolved to take the writer's schema (file comment): LS_OK with
 * *out (its last column id raised by the columns added), LS_EINVAL with
 * the path and the reason when Iceberg cannot express the change. */
ls_status ls_typed_evolve(const ls_typed_shape_t *s, const ls_avro_node_t *writer,
                          ls_typed_shape_t **out, char *err, size_t errlen);
/* The same for a key schema: the key column evolves by the same rules, or
 * is added (optional, fresh ids) when the shape has none. */
ls_status ls_typed_evolve_key(const ls_typed_shape_t *s, const ls_avro_node_t *writer,
                              ls_typed_shape_t **out, char *err, size_t errlen);

/* Writes one row: the metadata of r (its value is ignored) and the Avro
 * datum decoded by the reader's writer schema into its shape's columns. A
 * datum that does not decode (bad varint, out-of-range union or enum index,
 * bytes left over, truncated) is LS_ECORRUPT with err saying where; nothing
 * of the row is written then. */
ls_status ls_typed_write(const ls_typed_reader_t *rd, ls_pq_writer_t *w, const ls_raw_record_t *r,
                         const uint8_t *datum, size_t len, char *err, size_t errlen);
/* One row of shape s: the value datum by its reader (NULL: the shape's
 * value is raw, taken from r), the key datum by its key reader (NULL: the
 * key column is null; LS_ECORRUPT when it is required). Both are decoded
 * before anything is written. */
typedef struct ls_typed_datum {
    const ls_typed_reader_t *rd;
    const uint8_t *datum;
    size_t len;
} ls_typed_datum_t;
ls_status ls_typed_write_kv(const ls_typed_shape_t *s, const ls_typed_datum_t *value,
                            const ls_typed_datum_t *key, ls_pq_writer_t *w,
                            const ls_raw_record_t *r, char *err, size_t errlen);
/* The upsert identity of a key datum, decoded by its key reader: the values
 * of the shape's primary key fields, encoded as file_rewrite.h's identities
 * (what ls_file_drop_rows_ident computes from the stored columns), into out.
 * LS_ECORRUPT with err when the datum does not decode. */
/* Partition sources (issue 14): the column at path — a value field by its
 * column name, a nested one by a dotted path through structs
 * ("customer.country"), a key field as LS_TYPED_KEY_COLUMN[.path] — as its
 * field id and Iceberg type ("string", "decimal(9, 2)", ...). LS_EINVAL
 * with why when there is none, it is not primitive, or it is inside a list
 * or map (the spec allows neither as a partition source). */
ls_status ls_typed_column_find(const ls_typed_shape_t *s, const char *path, int *id, char *type,
                               size_t typelen, char *why, size_t whylen);
/* The values of the columns ids[0..n) in a row's value and key datums
 * (either NULL), decoded by their readers: LS_OK with out[i] (null when the
 * column is null or the datum lacks it; bytes borrowed from the datums and
 * the readers' schemas, for as long as they live), LS_ECORRUPT with err
 * when a datum does not decode. */
ls_status ls_typed_values(const ls_typed_datum_t *value, const ls_typed_datum_t *key,
                          const int *ids, int n, ls_ice_sval_t *out, char *err, size_t errlen);
ls_status ls_typed_key_identity(const ls_typed_reader_t *krd, const uint8_t *datum, size_t len,
                                ls_buf_t *out, char *err, size_t errlen);
#endif
