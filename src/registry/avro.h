/* Avro schemas for the schema registry: parsing with full validation, and
 * the schema-resolution check that decides compatibility (Avro 1.11
 * specification, "Schema Declaration" and "Schema Resolution").
 *
 * Why not Debian's libavro (avro-c 1.11): its schema objects keep neither
 * field defaults, aliases nor logical types, and its resolver does not
 * require a default for a reader field the writer lacks, so it cannot
 * decide compatibility by the specification; the model below keeps all of
 * them (the table materializer reads logical types from it later).
 *
 * Model: a parsed schema owns every node it allocated (an arena); named
 * types may refer to themselves (recursive records), so the node graph can
 * have cycles and is freed through the arena, never by walking it. A
 * parsed schema is immutable and may be shared between threads.
 *
 * Rules applied at parse time (a schema breaking one is refused with a
 * message naming the path, e.g. "/fields/2/type: unknown type 'strin'"):
 *  - names match [A-Za-z_][A-Za-z0-9_]*, namespaces are dotted names; full
 *    names follow the spec (a dotted name is full; otherwise the explicit
 *    namespace, else the enclosing one); a full name is defined once;
 *  - records have unique field names; enums unique symbols and a default
 *    among them; fixed a size >= 0;
 *  - unions hold no union directly, and no two branches of one type (two
 *    named branches differ by full name);
 *  - defaults are valid for their type (a union's default may match any
 *    branch, as the Java implementation that the Confluent registry runs
 *    accepts);
 *  - logical types are kept as attributes; an invalid one is ignored and
 *    the underlying type used, as the specification says.
 *
 * References: a schema may use named types defined by other schemas (the
 * registry's schema references); their texts are parsed first into the same
 * arena, in the order given, so their names are defined. */
#ifndef LS_REGISTRY_AVRO_H
#define LS_REGISTRY_AVRO_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/status.h"

typedef enum ls_avro_kind {
    LS_AVRO_NULL,
    LS_AVRO_BOOLEAN,
    LS_AVRO_INT,
    LS_AVRO_LONG,
    LS_AVRO_FLOAT,
    LS_AVRO_DOUBLE,
    LS_AVRO_BYTES,
    LS_AVRO_STRING,
    LS_AVRO_RECORD,
    LS_AVRO_ENUM,
    LS_AVRO_ARRAY,
    LS_AVRO_MAP,
    LS_AVRO_UNION,
    LS_AVRO_FIXED,
} ls_avro_kind;

typedef struct ls_avro_node ls_avro_node_t;

typedef struct ls_avro_field {
    char *name;
    ls_avro_node_t *type;
    int has_default;
    char **aliases;
    size_t naliases;
} ls_avro_field_t;

struct ls_avro_node {
    ls_avro_kind kind;
    char *name;     /* named types: unqualified name */
    char *fullname; /* named types: full name */
    char **aliases; /* named types: full names */
    size_t naliases;
    char *logical;           /* logicalType when valid for the type, else NULL */
    int precision;           /* decimal */
    int scale;               /* decimal */
    ls_avro_field_t *fields; /* record */
    size_t nfields;
    char **symbols; /* enum */
    size_t nsymbols;
    char *enum_default;        /* enum: NULL if none */
    int64_t size;              /* fixed */
    ls_avro_node_t *items;     /* array items, map values */
    ls_avro_node_t **branches; /* union */
    size_t nbranches;
};

typedef struct ls_avro_schema ls_avro_schema_t;

/* Parses text (len bytes) after deps[0..ndeps) (texts of referenced
 * schemas, dependencies first). NULL with a message in err on any
 * violation. */
ls_avro_schema_t *ls_avro_parse(const char *const *deps, size_t ndeps, const char *text, size_t len,
                                char *err, size_t errlen);
void ls_avro_free(ls_avro_schema_t *s);
const ls_avro_node_t *ls_avro_root(const ls_avro_schema_t *s);

/* Schema resolution: 1 when data written with `writer` can be read with
 * `reader`; 0 with the first reason (path and rule) appended to why. */
int ls_avro_can_read(const ls_avro_schema_t *reader, const ls_avro_schema_t *writer, ls_buf_t *why);

const char *ls_avro_kind_name(ls_avro_kind k);

/* Reading the Avro binary encoding (specification, "Binary Encoding"): a
 * cursor over p[0..end); a failed read leaves a static reason in why. */
typedef struct ls_avro_rd {
    const uint8_t *p, *end;
    const char *why;
} ls_avro_rd_t;
bool ls_avro_rd_long(ls_avro_rd_t *r, int64_t *out);                  /* zig-zag varint */
bool ls_avro_rd_bytes(ls_avro_rd_t *r, const uint8_t **p, size_t *n); /* length + bytes */
bool ls_avro_rd_fixed(ls_avro_rd_t *r, void *out, size_t n);          /* out may be NULL */
/* An array or map block header: *count items follow (0: the end); a
 * negative count's byte size is read and dropped. items_take_bytes: the
 * items are at least a byte each, so a count past the bytes left is
 * refused (nothing loops on a forged count). */
bool ls_avro_rd_block(ls_avro_rd_t *r, bool items_take_bytes, int64_t *count);
/* 0 when p[0..len) is exactly one datum of schema n (every union branch,
 * enum index, int range, UTF-8 string and length checked, nothing left
 * over); -1 with the reason and byte position in why. Nesting deeper than
 * 256 levels is refused. */
ls_status ls_avro_datum_check(const ls_avro_node_t *n, const uint8_t *p, size_t len, char *why,
                              size_t whylen);
#endif
