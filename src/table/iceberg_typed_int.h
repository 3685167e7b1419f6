/* Private to table/iceberg_typed*.c: the shape (a table's Iceberg schema as
 * a tree of columns with their Parquet facts) and the schema reader, shared
 * by iceberg_typed.c (columns, layout, resolution and evolution) and
 * iceberg_typed_write.c (shredding datums into rows, partition source
 * values). See src/table/README.md. */
#ifndef LS_ICEBERG_TYPED_INT_H
#define LS_ICEBERG_TYPED_INT_H
#include "table/iceberg_typed.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "table/file_rewrite.h"

/* Iceberg types of columns; the primitive ones in one table. */
typedef enum {
    C_BOOLEAN,
    C_INT,
    C_LONG,
    C_FLOAT,
    C_DOUBLE,
    C_DATE,
    C_TIMESTAMP,
    C_TIMESTAMPTZ,
    C_STRING,
    C_BINARY,
    C_TIME,    /* micros since midnight */
    C_UUID,    /* 16 bytes */
    C_DECIMAL, /* decimal(prec, scale): the unscaled value */
    C_FIXED,   /* fixed[len] */
    C_NPRIM,
    C_STRUCT = C_NPRIM,
    C_LIST,
    C_MAP,
} ctype;

/* Iceberg's widest decimal (spec, "Primitive Types") */
#define MAX_DECIMAL_DIGITS 38

typedef struct col {
    ctype type;
    int id;
    char *name; /* struct fields: the field's; list/map members: element, key, value */
    bool required;
    int prec, scale;   /* C_DECIMAL */
    int len;           /* C_FIXED: bytes */
    struct col **kids; /* struct: fields; list: [element]; map: [key, value] */
    size_t nkids;
    int def, rep, lo, hi; /* Parquet facts (file comment), set by layout() */
    int leaf;             /* primitive: its leaf column */
    int pk;               /* a primary key field: its 1-based place; -1: the key column of
                           * a primary key (both must stay required); 0: neither */
} col_t;

struct ls_typed_shape {
    col_t *root;    /* the value record: a struct whose fields are top-level columns */
    col_t *key;     /* the decoded key (LS_TYPED_KEY_COLUMN); NULL: none (yet) */
    bool raw_value; /* the value as bytes in _kafka_value (a raw value, a typed key) */
    int last_id;    /* last-column-id */
    const col_t *pk[LS_TYPED_MAX_PK]; /* the primary key's fields, in order */
    size_t npk;
    ls_pq_field_t *fields;
    size_t nfields, capfields;
    int ncols; /* leaf columns, the metadata's included */
    char *schema_json;
    char *meta_names[LS_RAW_LAST_COLUMN_ID + 1]; /* _kafka_<raw name> */
};

/* How the writer's Avro value of a primitive is read. */
typedef enum {
    D_BOOLEAN,
    D_INT,
    D_LONG,
    D_MILLIS, /* long millis -> micros */
    D_FLOAT,
    D_DOUBLE,
    D_BYTES,
    D_ENUM,
    D_TIME_MILLIS, /* int millis -> long micros; within a day */
    D_TIME_MICROS, /* long micros; within a day */
    D_DECIMAL,     /* bytes or fixed: a two's-complement big-endian unscaled value */
    D_FIXED,       /* fixed: its size in bytes */
    D_UUID_TEXT,   /* string: the 36-character text form -> 16 bytes */
} dkind;

/* A writer schema node and the column it fills (file comment). */
typedef struct rnode {
    const ls_avro_node_t *avro; /* the non-null type; a union of several: the union */
    int null_branch;            /* in a union with null: its index, else -1 */
    int *member;                /* a union of several: per branch, its member (field<k>: k;
                                 * -1 for null); kids[branch] reads it */
    dkind dec;                  /* primitives */
    const col_t *col;
    struct rnode **kids; /* record: per writer field; array: [items]; map: [values] */
    size_t nkids;
    const col_t **absent; /* record: the struct's columns the writer lacks */
    size_t nabsent;
} rnode_t;

struct ls_typed_reader {
    const ls_typed_shape_t *shape;
    rnode_t *root;
    bool key; /* reads keys into shape->key, else values into shape->root */
};

/* The metadata columns are the raw table's without its value, the top-level
 * ones renamed _kafka_<name>; their leaf columns, in order: */
enum { M_PARTITION, M_OFFSET, M_TIMESTAMP, M_KEY, M_HKEY, M_HVALUE, M_NCOLS };
/* a raw value's leaf, after them (raw_value shapes only) */
#define M_VALUE M_NCOLS
#define META_PREFIX "_kafka_"
#define KEY_PATH "(key)"

/* The Parquet physical type of primitive column c (*len: a fixed length). */
ls_pq_type ls_typed_col_pq(const col_t *c, int *len);
/* The Iceberg type of c as the schema JSON spells it, into buf. */
const char *ls_typed_type_str(const col_t *c, char *buf, size_t n);
#endif
