/* The raw Kafka table (DESIGN.md §4.4 "raw mode"): one row per record with
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

/* Parquet schema of the raw table (pre-order, see parquet_writer.h). */
const ls_pq_field_t *ls_raw_parquet_fields(size_t *n);
/* Iceberg schema JSON object (a "struct" with "schema-id": 0). Static string. */
const char *ls_raw_iceberg_schema_json(void);
/* Opens a Parquet writer over the raw schema. */
ls_pq_writer_t *ls_raw_writer_new(const ls_pq_opts_t *opts, ls_buf_t *out, char *err,
                                  size_t errlen);
/* Shreds one record into the writer and ends the row. */
ls_status ls_raw_write(ls_pq_writer_t *w, const ls_raw_record_t *r);

/* Routes raw records into Parquet data files of an Iceberg table: one open
 * file per partition tuple of the table's spec (sources may be partition,
 * offset or timestamp), rolled when it reaches target_file_bytes. Rolled and
 * finished files are uploaded with ls_ice_table_put_data; the caller then
 * commits them with ls_ice_table_append. Until that commit they are orphans
 * (a retried task writes new files, never reuses these). */
typedef struct ls_raw_files ls_raw_files_t;

ls_raw_files_t *ls_raw_files_new(ls_ice_table_t *t, const ls_pq_opts_t *opts,
                                 size_t target_file_bytes, char *err, size_t errlen);
ls_status ls_raw_files_add(ls_raw_files_t *f, const ls_raw_record_t *r);
/* Finishes and uploads every open file; *files stays owned by f. */
ls_status ls_raw_files_finish(ls_raw_files_t *f, const ls_ice_datafile_t **files, size_t *n);
const char *ls_raw_files_error(const ls_raw_files_t *f);
void ls_raw_files_free(ls_raw_files_t *f);
#endif
