/* Parquet file reader (parquet-format: parquet.thrift, Encodings.md).
 *
 * Reads whole files held in memory (objects are written and fetched whole):
 * ls_pqr_open() parses and checks the footer, then callers walk the schema,
 * the row groups with their column-chunk statistics, and per (row group,
 * leaf column) a chunk iterator of Dremel triples (repetition level,
 * definition level, value) from which they reassemble rows; a value is
 * present when def == the column's max_def. ls_pqr_read_flat() is the
 * convenience for columns without repetition; a row cursor (ls_pqr_rows_*)
 * walks several columns of a row group in step, one row at a time, and
 * ls_pqr_copy_rows() appends a whole file's rows to a writer (rewriting
 * small files into large ones), projected by Iceberg field id onto the
 * writer's schema, which may be an evolution of the file's.
 *
 * What is read (everything else is refused with LS_EINVAL and a message
 * naming it, never misread):
 *  - physical types BOOLEAN, INT32, INT64, FLOAT, DOUBLE, BYTE_ARRAY, and
 *    INT96 / FIXED_LEN_BYTE_ARRAY as byte views of their 12 / type_length
 *    stored bytes (the caller interprets them: legacy timestamps, decimals,
 *    UUIDs);
 *  - data pages v1 (levels: RLE/bit-packed hybrid with a 4-byte length) and
 *    v2 (levels unprefixed, lengths in the header, values optionally
 *    compressed); dictionary pages (PLAIN / PLAIN_DICTIONARY); index pages
 *    are skipped;
 *  - value encodings PLAIN, PLAIN_DICTIONARY / RLE_DICTIONARY, and RLE for
 *    BOOLEAN; refused: BIT_PACKED levels, DELTA_BINARY_PACKED,
 *    DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY, BYTE_STREAM_SPLIT;
 *  - codecs UNCOMPRESSED, SNAPPY, GZIP, ZSTD (src/base/compress.h);
 *    refused: LZO, BROTLI, LZ4 (Hadoop framing), LZ4_RAW;
 *  - page CRCs, when present, are checked (CRC-32 of the page as stored);
 *  - refused: encrypted files ("PARE" or an encryption algorithm in the
 *    footer), column chunks in other files (file_path).
 *
 * Invariants and ownership:
 *  - the reader keeps views into the caller's buffer, which must stay
 *    unchanged and alive until ls_pqr_free(); names, paths and statistics
 *    are views or copies owned by the reader;
 *  - ls_pqr_open() validates the whole footer: schema tree (levels, one
 *    column per leaf), every row group with one chunk per leaf whose type
 *    and path match the schema and whose byte range lies inside the file.
 *    Pages are validated as they are decoded;
 *  - corrupt or truncated input gives LS_ECORRUPT with a message naming the
 *    column, row group and byte offset; it never reads outside the buffer;
 *  - memory: an iterator holds its chunk's decoded pages (decompressed
 *    bytes, levels, dictionary), about the chunk's uncompressed size, until
 *    it is freed; byte-array values are views valid until then (in recycle
 *    mode, ls_pqr_iter_recycle: two data pages at a time, views valid for
 *    the current and the previous page);
 *  - a reader and its iterators are used by one thread at a time; several
 *    iterators (one per column) may be open at once to assemble rows.
 * State of an iterator: pages are decoded one at a time as the triples of
 * the previous one are consumed; after the chunk's num_values triples it
 * answers 0 (end), after an error -1 with the status kept (sticky). */
#ifndef LS_PARQUET_READER_H
#define LS_PARQUET_READER_H
#include "base/status.h"
#include "table/parquet_writer.h"
#include <stddef.h>
#include <stdint.h>

/* parquet.thrift Type values outside what the writer produces. */
enum { LS_PQR_INT96 = 3, LS_PQR_FIXED_LEN_BYTE_ARRAY = 7 };

typedef struct ls_pqr_elem {
    const char *name;
    const char *path; /* dotted from below the root, "" for the root */
    int type;         /* ls_pq_type, LS_PQ_GROUP for groups, or LS_PQR_* */
    int type_length;  /* FIXED_LEN_BYTE_ARRAY only */
    ls_pq_repetition repetition;
    /* ls_pq_logical when it is one of those (from LogicalType, else from
     * the legacy ConvertedType); otherwise LS_PQ_LT_NONE and logical_id
     * tells which LogicalType union member it was (0: none) */
    ls_pq_logical logical;
    int logical_id;
    int time_unit;      /* TIME/TIMESTAMP: 1 millis, 2 micros, 3 nanos; else 0 */
    int utc;            /* TIME/TIMESTAMP isAdjustedToUTC */
    int converted_type; /* -1 when absent */
    int field_id;       /* -1 when absent */
    int nchildren;
    int max_def, max_rep;
    int column; /* leaf column index, -1 for groups */
} ls_pqr_elem_t;

/* Column-chunk statistics: min_value/max_value (plain-encoded, as the
 * writer documents) only; the deprecated signed min/max are not used. */
typedef struct ls_pqr_stats {
    int has_null_count, has_min, has_max;
    int64_t null_count;
    const uint8_t *min, *max; /* views into the file buffer */
    size_t min_len, max_len;
} ls_pqr_stats_t;

typedef struct ls_pqr_chunk {
    int codec; /* ls_pq_codec value as stored */
    int64_t num_values, compressed_bytes, uncompressed_bytes;
    int64_t start; /* first page (dictionary page if any) */
    int64_t data_page_offset;
    ls_pqr_stats_t stats;
} ls_pqr_chunk_t;

typedef struct ls_pqr ls_pqr_t;
typedef struct ls_pqr_iter ls_pqr_iter_t;

/* Opens data[0..len). On failure returns NULL with *st (LS_ECORRUPT for a
 * malformed file, LS_EINVAL for a valid file using something refused) and
 * a message in err. */
ls_pqr_t *ls_pqr_open(const uint8_t *data, size_t len, ls_status *st, char *err, size_t errlen);
void ls_pqr_free(ls_pqr_t *r);

int64_t ls_pqr_num_rows(const ls_pqr_t *r);
const char *ls_pqr_created_by(const ls_pqr_t *r); /* "" when absent */
/* Footer key/value metadata; value NULL when absent. */
size_t ls_pqr_num_kv(const ls_pqr_t *r);
void ls_pqr_kv(const ls_pqr_t *r, size_t i, const char **key, const char **value);

/* Schema in pre-order; element 0 is the root. */
size_t ls_pqr_num_elems(const ls_pqr_t *r);
const ls_pqr_elem_t *ls_pqr_elem(const ls_pqr_t *r, size_t i);
/* Leaf columns in file order. */
size_t ls_pqr_num_columns(const ls_pqr_t *r);
const ls_pqr_elem_t *ls_pqr_column(const ls_pqr_t *r, int col);
int ls_pqr_column_index(const ls_pqr_t *r, const char *path); /* -1 if none */

int ls_pqr_num_row_groups(const ls_pqr_t *r);
int64_t ls_pqr_rg_num_rows(const ls_pqr_t *r, int rg);
const ls_pqr_chunk_t *ls_pqr_chunk(const ls_pqr_t *r, int rg, int col);

typedef struct ls_pqr_triple {
    int rep, def;
    union {
        int32_t i32;
        int64_t i64;
        float f32;
        double f64;
        int boolean;
    } v;
    const uint8_t *bytes; /* BYTE_ARRAY, INT96, FIXED_LEN_BYTE_ARRAY */
    uint32_t len;
} ls_pqr_triple_t;

/* Iterator over the triples of one column chunk. NULL with *st and err on
 * a refused codec. */
ls_pqr_iter_t *ls_pqr_iter_new(ls_pqr_t *r, int rg, int col, ls_status *st, char *err,
                               size_t errlen);
/* Recycle mode, for readers that use each row's values before moving on
 * (cold_batches.c): data pages decompress into two buffers used in turn,
 * so a byte-array view stays valid only until the iterator has decoded two
 * more data pages (one page of lookahead is always safe), instead of until
 * ls_pqr_iter_free. Saves an allocation (and its page faults) per page.
 * Dictionary pages are kept as always. Call before the first ls_pqr_next. */
void ls_pqr_iter_recycle(ls_pqr_iter_t *it);
/* 1: *t holds the next triple; 0: end of the chunk; -1: error (see
 * ls_pqr_iter_status / ls_pqr_iter_error). */
int ls_pqr_next(ls_pqr_iter_t *it, ls_pqr_triple_t *t);
/* Bulk read of a required, non-repeated INT32/INT64/FLOAT/DOUBLE column:
 * the next values (up to n) as stored, little-endian, 4 or 8 bytes each,
 * into dst; plain pages are copied, dictionary runs filled, with no
 * per-value triple. Returns how many (fewer than n at the chunk's end),
 * -1 on error (LS_EINVAL for another kind of column). Mixes with
 * ls_pqr_next / ls_pqr_skip on the same iterator. */
int64_t ls_pqr_read_fixed(ls_pqr_iter_t *it, void *dst, int64_t n);
/* Skips the next n triples (for a column without repetition, n rows):
 * data pages wholly inside the skip are passed over without being
 * decompressed or decoded (their CRCs unchecked, as they are not read).
 * 0 when done or the chunk ended, -1 on error. */
int ls_pqr_skip(ls_pqr_iter_t *it, int64_t n);
ls_status ls_pqr_iter_status(const ls_pqr_iter_t *it);
const char *ls_pqr_iter_error(const ls_pqr_iter_t *it);
void ls_pqr_iter_free(ls_pqr_iter_t *it);

/* A whole column of one row group without repetition (max_rep 0): one
 * entry per row, null when def < max_def. Byte-array views stay valid
 * until ls_pqr_flat_free. */
typedef struct ls_pqr_flat {
    int64_t n;
    ls_pqr_triple_t *v; /* v[i].def == max_def when row i has a value */
    int max_def;
    ls_pqr_iter_t *it; /* owns the bytes */
} ls_pqr_flat_t;
ls_status ls_pqr_read_flat(ls_pqr_t *r, int rg, int col, ls_pqr_flat_t *out, char *err,
                           size_t errlen);
void ls_pqr_flat_free(ls_pqr_flat_t *f);

/* Row cursor over some columns of one row group (cols[0..ncols), or every
 * column when cols is NULL). Each step gathers, per column, the triples of
 * one row (a rep-0 triple and the rep > 0 triples after it). Columns that
 * disagree on the number of rows, or a row count other than the row
 * group's, are LS_ECORRUPT. The triple arrays change with every step;
 * byte-array views in them stay valid until ls_pqr_rows_free. */
typedef struct ls_pqr_rows ls_pqr_rows_t;
ls_pqr_rows_t *ls_pqr_rows_new(ls_pqr_t *r, int rg, const int *cols, size_t ncols, ls_status *st,
                               char *err, size_t errlen);
/* 1: a row is current; 0: no more rows; -1: error (ls_pqr_rows_error). */
int ls_pqr_rows_next(ls_pqr_rows_t *rs);
/* The current row's triples of the k-th cursor column; returns the count. */
size_t ls_pqr_rows_col(const ls_pqr_rows_t *rs, size_t k, const ls_pqr_triple_t **t);
ls_status ls_pqr_rows_status(const ls_pqr_rows_t *rs);
const char *ls_pqr_rows_error(const ls_pqr_rows_t *rs);
void ls_pqr_rows_free(ls_pqr_rows_t *rs);

/* Appends every row of r to w (put + end_row per row, as if written
 * directly; row groups of w close by its own policy). Each writer leaf takes
 * the file leaf of its field id on the same path of ids (groups without an
 * id match by name), INT32 widened to INT64 and FLOAT to DOUBLE, levels
 * re-counted for fields made optional; a writer leaf the file lacks (an
 * added column) is null where its deepest ancestor in the file is present.
 * LS_EINVAL, naming the column, for a file leaf the writer lacks, a field
 * id on another path or a type not widened; read errors are returned as
 * they are, writer errors as ls_pq_end_row reports them. */
ls_status ls_pqr_copy_rows(ls_pqr_t *r, ls_pq_writer_t *w, char *err, size_t errlen);
/* Values a copy fills in where the file has none (the column missing or
 * the row's value null), for top-level optional INT64 writer columns: the
 * one with field id pos_field_id gets pos_base + the row's position in the
 * file, the one with const_field_id const_value (Iceberg's row lineage:
 * _row_id and _last_updated_sequence_number). A field id < 0: none. */
typedef struct ls_pqr_fill {
    int pos_field_id;
    int64_t pos_base;
    int const_field_id;
    int64_t const_value;
} ls_pqr_fill_t;

/* The same, leaving out every row i (counted from 0 over the whole file)
 * with drop[i] != 0; drop holds ls_pqr_num_rows(r) flags (NULL: keep all);
 * fill (NULL: none) says what the file lacks. */
ls_status ls_pqr_copy_rows_except(ls_pqr_t *r, ls_pq_writer_t *w, const uint8_t *drop,
                                  const ls_pqr_fill_t *fill, char *err, size_t errlen);
#endif
