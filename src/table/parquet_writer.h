/* Parquet file writer (parquet-format: parquet.thrift, Encodings.md).
 *
 * The caller describes the schema as Parquet does: a pre-order list of
 * fields where a group is followed by its children (nchildren of them). The
 * root is implicit. Every field may carry an Iceberg field id (SchemaElement
 * field_id), which Iceberg readers use to map columns.
 *
 * Values are written per leaf column in Dremel form (one call per level
 * entry, with its repetition level; non-null values carry the column's
 * maximum definition level, nulls/empties a lower one), then ls_pq_end_row.
 * Every leaf column must receive at least one entry (repetition level 0) per
 * row; ls_pq_end_row checks it.
 *
 * What gets written:
 *  - data pages v1: [rep levels][def levels] as 4-byte-length-prefixed
 *    RLE/bit-packed hybrid runs (only when the max level > 0), then values;
 *    a page never splits a record (pages start at repetition level 0);
 *  - per column chunk, RLE_DICTIONARY (a PLAIN dictionary page first) while
 *    the dictionary stays under dict_max_bytes and, from the 1 024th value
 *    on, holds at most three quarters of the chunk's values; else PLAIN for
 *    the chunk;
 *  - whole page bodies compressed with the chosen codec;
 *  - row groups closed when the buffered plain bytes reach row_group_bytes;
 *  - chunk statistics (min_value/max_value in plain form, null_count) with
 *    column_orders = TYPE_ORDER so readers trust byte-array bounds;
 *  - footer (FileMetaData, Thrift compact) + length + "PAR1".
 * Supported physical types: BOOLEAN (PLAIN, bit-packed; never a
 * dictionary), INT32, INT64, FLOAT, DOUBLE (bounds skip NaN; a zero min is
 * written as -0.0 and a zero max as +0.0, per parquet.thrift), BYTE_ARRAY,
 * FIXED_LEN_BYTE_ARRAY (PLAIN: the bytes, no length). DECIMAL columns
 * (LogicalTypes.md) are checked at creation (INT32 for precision <= 9,
 * INT64 <= 18, a fixed length that holds the precision) and their bounds
 * compare as signed numbers, also when stored as fixed bytes (their sort
 * order is SIGNED); other byte columns compare unsigned.
 *
 * A writer is used by one thread. Memory: one row group of plain values plus
 * its dictionaries is buffered per writer. */
#ifndef LS_PARQUET_WRITER_H
#define LS_PARQUET_WRITER_H
#include "base/buf.h"
#include "base/status.h"
#include <stddef.h>
#include <stdint.h>

typedef enum ls_pq_type {
    LS_PQ_GROUP = -1,
    LS_PQ_BOOLEAN = 0,
    LS_PQ_INT32 = 1,
    LS_PQ_INT64 = 2,
    LS_PQ_FLOAT = 4,
    LS_PQ_DOUBLE = 5,
    LS_PQ_BYTE_ARRAY = 6,
    LS_PQ_FIXED_LEN_BYTE_ARRAY = 7, /* type_length bytes per value */
} ls_pq_type;

typedef enum ls_pq_repetition {
    LS_PQ_REQUIRED = 0,
    LS_PQ_OPTIONAL = 1,
    LS_PQ_REPEATED = 2
} ls_pq_repetition;

typedef enum ls_pq_logical {
    LS_PQ_LT_NONE = 0,
    LS_PQ_LT_STRING,           /* BYTE_ARRAY, UTF-8 */
    LS_PQ_LT_LIST,             /* group */
    LS_PQ_LT_MAP,              /* group */
    LS_PQ_LT_DATE,             /* INT32 days */
    LS_PQ_LT_TIMESTAMP_US_UTC, /* INT64 TIMESTAMP(MICROS, isAdjustedToUTC=true): Iceberg timestamptz
                                */
    LS_PQ_LT_TIMESTAMP_US,     /* INT64 TIMESTAMP(MICROS, false): Iceberg timestamp */
    LS_PQ_LT_DECIMAL, /* DECIMAL(precision, scale): the unscaled value as INT32 (precision <= 9),
                       * INT64 (<= 18) or FIXED_LEN_BYTE_ARRAY (two's complement, big-endian) */
    LS_PQ_LT_UUID,    /* FIXED_LEN_BYTE_ARRAY(16), the 16 bytes big-endian */
    LS_PQ_LT_TIME_US, /* INT64 TIME(MICROS, isAdjustedToUTC=false): Iceberg time */
} ls_pq_logical;

typedef enum ls_pq_codec {
    LS_PQ_UNCOMPRESSED = 0,
    LS_PQ_SNAPPY = 1,
    LS_PQ_GZIP = 2,
    LS_PQ_ZSTD = 6,
} ls_pq_codec;

typedef struct ls_pq_field {
    const char *name;
    ls_pq_type type; /* LS_PQ_GROUP for groups */
    ls_pq_repetition repetition;
    ls_pq_logical logical;
    int field_id;         /* Iceberg field id; < 0 for none */
    int nchildren;        /* groups: direct children following in pre-order */
    int type_length;      /* FIXED_LEN_BYTE_ARRAY: bytes per value */
    int precision, scale; /* LS_PQ_LT_DECIMAL */
} ls_pq_field_t;

typedef struct ls_pq_opts {
    ls_pq_codec codec;
    size_t row_group_bytes; /* default 128 MiB */
    size_t page_bytes;      /* default 1 MiB */
    size_t dict_max_bytes;  /* default 1 MiB; 0 = never use dictionaries */
    size_t stats_max_bytes; /* byte-array (also fixed) min/max longer than this are omitted;
                             * default 64 */
    const char *created_by; /* default "lakestream-c" */
} ls_pq_opts_t;

void ls_pq_opts_init(ls_pq_opts_t *o);
/* Parses "uncompressed|none|snappy|gzip|zstd"; -1 if unknown. */
int ls_pq_codec_parse(const char *s);
/* The base/compress.h codec (LS_CODEC_*) of a Parquet codec; -1 for one
 * this build does not handle. */
int ls_pq_codec_to_base(int pq);

typedef struct ls_pq_writer ls_pq_writer_t;

/* Per leaf column totals over the whole file (valid after finish). The
 * bounds are plain-encoded values (numbers little-endian, BOOLEAN one byte
 * 0/1, BYTE_ARRAY raw bytes), over the non-null, non-NaN values;
 * has_bounds is 0 if there were none. */
typedef struct ls_pq_colstats {
    const char *path; /* dotted path, e.g. "headers.list.element.key" */
    int field_id;
    ls_pq_type type;
    ls_pq_logical logical;
    int max_def, max_rep;
    int64_t compressed_bytes; /* pages incl. headers, all row groups */
    int64_t num_values;       /* level entries incl. nulls */
    int64_t null_count;       /* entries with def < max_def */
    int has_bounds;
    ls_buf_t min, max;
} ls_pq_colstats_t;

/* Writes "PAR1" to out at once; the file grows in out as row groups close.
 * Fails (NULL, message in err) on an invalid schema. */
ls_pq_writer_t *ls_pq_writer_new(const ls_pq_field_t *fields, size_t nfields,
                                 const ls_pq_opts_t *opts, ls_buf_t *out, char *err, size_t errlen);
void ls_pq_writer_free(ls_pq_writer_t *w);

size_t ls_pq_ncolumns(const ls_pq_writer_t *w);
/* The schema the writer writes, in pre-order from its root ("schema", [0]). */
const ls_pq_field_t *ls_pq_writer_fields(const ls_pq_writer_t *w, size_t *n);
/* Leaf column index by dotted path; -1 if none. */
int ls_pq_column_index(const ls_pq_writer_t *w, const char *path);

void ls_pq_put_i32(ls_pq_writer_t *w, int col, int rep, int32_t v);
void ls_pq_put_i64(ls_pq_writer_t *w, int col, int rep, int64_t v);
/* BYTE_ARRAY, or FIXED_LEN_BYTE_ARRAY when n is its type_length. */
void ls_pq_put_bytes(ls_pq_writer_t *w, int col, int rep, const void *p, size_t n);
/* The most decimal digits a DECIMAL of that physical type holds (0: none);
 * the fewest FIXED_LEN_BYTE_ARRAY bytes that hold precision digits. */
int ls_pq_decimal_digits(ls_pq_type type, int type_length);
int ls_pq_decimal_length(int precision);
/* A DECIMAL column's unscaled value v, in the column's physical type (the
 * caller checked that v has at most the column's precision digits). */
void ls_pq_put_decimal(ls_pq_writer_t *w, int col, int rep, __int128 v);
void ls_pq_put_bool(ls_pq_writer_t *w, int col, int rep, int v);
void ls_pq_put_float(ls_pq_writer_t *w, int col, int rep, float v);
void ls_pq_put_double(ls_pq_writer_t *w, int col, int rep, double v);
void ls_pq_put_null(ls_pq_writer_t *w, int col, int rep, int def);

/* Ends the row; closes a row group when it reached its target. Misuse of
 * the put calls (bad column, levels out of range, type mismatch, a column
 * left out of the row) is reported here as LS_EINVAL with a message. */
ls_status ls_pq_end_row(ls_pq_writer_t *w);
/* Key/value pair for the footer's key_value_metadata (copied). */
void ls_pq_add_kv(ls_pq_writer_t *w, const char *key, const char *value);
/* Flushes the last row group and writes the footer. The writer then only
 * answers the stats calls below. */
ls_status ls_pq_writer_finish(ls_pq_writer_t *w);

int64_t ls_pq_num_rows(const ls_pq_writer_t *w);
int ls_pq_num_row_groups(const ls_pq_writer_t *w);
/* Plain bytes buffered in the open row group (a size estimate for callers
 * that roll files by size). */
size_t ls_pq_buffered_bytes(const ls_pq_writer_t *w);
const ls_pq_colstats_t *ls_pq_column_stats(const ls_pq_writer_t *w, int col);
const char *ls_pq_error(const ls_pq_writer_t *w);
#endif
