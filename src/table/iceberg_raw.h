/* The raw Kafka table (value.format=raw, stream/policy.h): one row per record with
 * columns partition, offset, timestamp, key, value, headers.
 *
 * Iceberg schema (schema-id 0; field ids are fixed forever, readers map
 * Parquet columns by them):
 *   1 partition  int          required
 *   2 offset     long         required
 *   3 timestamp  timestamptz  required   (Kafka ms * 1000)
 *   4 key        binary       optional   (null key -> null)
 *   5 value      binary       optional   (null value / tombstone -> null)
 *   6 headers    list<7: struct<8 key: string required, 9 value: binary optional>> optional
 * Headers are a list of structs rather than a map: Kafka headers are ordered
 * and may repeat a key. A record without headers has an empty list. */
#ifndef LS_ICEBERG_RAW_H
#define LS_ICEBERG_RAW_H
#include "base/status.h"
#include "table/iceberg_table.h"
#include "table/parquet_writer.h"
#include <stddef.h>
#include <stdint.h>

typedef struct ls_raw_header {
    const char *key;
    size_t key_len;
    const uint8_t *value;
    int64_t value_len; /* -1: null */
} ls_raw_header_t;

typedef struct ls_raw_record {
    int32_t partition;
    int64_t offset;
    int64_t timestamp_ms;
    const uint8_t *key;
    int64_t key_len; /* -1: null */
    const uint8_t *value;
    int64_t value_len; /* -1: null */
    const ls_raw_header_t *headers;
    size_t nheaders;
} ls_raw_record_t;

enum {
    LS_RAW_FID_PARTITION = 1,
    LS_RAW_FID_OFFSET = 2,
    LS_RAW_FID_TIMESTAMP = 3,
    LS_RAW_FID_KEY = 4,
    LS_RAW_FID_VALUE = 5,
    LS_RAW_FID_HEADERS = 6,
    LS_RAW_FID_HEADER_ELEMENT = 7,
    LS_RAW_FID_HEADER_KEY = 8,
    LS_RAW_FID_HEADER_VALUE = 9,
    LS_RAW_LAST_COLUMN_ID = 9,
};

/* Row groups of raw tables' data files close at this many buffered bytes
 * (not Parquet's usual 128 MiB): a Kafka reader of one partition's cold
 * range fetches the row groups whose partition and offset statistics admit
 * it (lake/cold_table.c), and a file holds every partition's rows of a
 * pass one partition after the other, so small row groups keep what such a
 * read fetches close to what it returns. */
#define LS_RAW_ROW_GROUP_BYTES ((size_t)8 << 20)

/* Parquet schema of the raw table (pre-order, see parquet_writer.h). */
const ls_pq_field_t *ls_raw_parquet_fields(size_t *n);
/* Iceberg schema JSON object (a "struct" with "schema-id": 0). Static string. */
const char *ls_raw_iceberg_schema_json(void);
/* Opens a Parquet writer over the raw schema. */
ls_pq_writer_t *ls_raw_writer_new(const ls_pq_opts_t *opts, ls_buf_t *out, char *err,
                                  size_t errlen);
/* Shreds one record into the writer and ends the row. */
ls_status ls_raw_write(ls_pq_writer_t *w, const ls_raw_record_t *r);
/* Puts Kafka headers into the two leaf columns of a headers list shaped as
 * the raw table's (a top-level optional list of {key, value} structs). */
void ls_raw_put_headers(ls_pq_writer_t *w, int key_col, int value_col, const ls_raw_header_t *h,
                        size_t n);

#endif
