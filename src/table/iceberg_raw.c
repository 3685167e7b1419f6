/* Raw Kafka table: schema and record shredding (see iceberg_raw.h).
 *
 * Parquet layout (Iceberg's list mapping: 3-level LIST with "list" and
 * "element"), with definition/repetition levels per leaf:
 *   partition                      INT32 required            d0 r0
 *   offset                         INT64 required            d0 r0
 *   timestamp                      INT64 TIMESTAMP(us, UTC)   d0 r0
 *   key                            BYTE_ARRAY optional       d1 r0
 *   value                          BYTE_ARRAY optional       d1 r0
 *   headers (LIST) optional
 *     list repeated
 *       element required group
 *         key   BYTE_ARRAY STRING required                   d2 r1
 *         value BYTE_ARRAY optional                          d3 r1
 * headers null -> def 0; empty list -> def 1; an element -> def 2 (+1 if
 * its value is non-null). */
#include "table/iceberg_raw.h"

static const ls_pq_field_t raw_fields[] = {
    {"partition", LS_PQ_INT32, LS_PQ_REQUIRED, LS_PQ_LT_NONE, LS_RAW_FID_PARTITION, 0, 0, 0, 0},
    {"offset", LS_PQ_INT64, LS_PQ_REQUIRED, LS_PQ_LT_NONE, LS_RAW_FID_OFFSET, 0, 0, 0, 0},
    {"timestamp", LS_PQ_INT64, LS_PQ_REQUIRED, LS_PQ_LT_TIMESTAMP_US_UTC, LS_RAW_FID_TIMESTAMP, 0,
     0, 0, 0},
    {"key", LS_PQ_BYTE_ARRAY, LS_PQ_OPTIONAL, LS_PQ_LT_NONE, LS_RAW_FID_KEY, 0, 0, 0, 0},
    {"value", LS_PQ_BYTE_ARRAY, LS_PQ_OPTIONAL, LS_PQ_LT_NONE, LS_RAW_FID_VALUE, 0, 0, 0, 0},
    {"headers", LS_PQ_GROUP, LS_PQ_OPTIONAL, LS_PQ_LT_LIST, LS_RAW_FID_HEADERS, 1, 0, 0, 0},
    {"list", LS_PQ_GROUP, LS_PQ_REPEATED, LS_PQ_LT_NONE, -1, 1, 0, 0, 0},
    {"element", LS_PQ_GROUP, LS_PQ_REQUIRED, LS_PQ_LT_NONE, LS_RAW_FID_HEADER_ELEMENT, 2, 0, 0, 0},
    {"key", LS_PQ_BYTE_ARRAY, LS_PQ_REQUIRED, LS_PQ_LT_STRING, LS_RAW_FID_HEADER_KEY, 0, 0, 0, 0},
    {"value", LS_PQ_BYTE_ARRAY, LS_PQ_OPTIONAL, LS_PQ_LT_NONE, LS_RAW_FID_HEADER_VALUE, 0, 0, 0, 0},
};

enum { C_PARTITION, C_OFFSET, C_TIMESTAMP, C_KEY, C_VALUE, C_HKEY, C_HVALUE };

const ls_pq_field_t *ls_raw_parquet_fields(size_t *n)
{
    *n = sizeof raw_fields / sizeof raw_fields[0];
    return raw_fields;
}

const char *ls_raw_iceberg_schema_json(void)
{
    return "{\"type\":\"struct\",\"schema-id\":0,\"fields\":["
           "{\"id\":1,\"name\":\"partition\",\"required\":true,\"type\":\"int\"},"
           "{\"id\":2,\"name\":\"offset\",\"required\":true,\"type\":\"long\"},"
           "{\"id\":3,\"name\":\"timestamp\",\"required\":true,\"type\":\"timestamptz\"},"
           "{\"id\":4,\"name\":\"key\",\"required\":false,\"type\":\"binary\"},"
           "{\"id\":5,\"name\":\"value\",\"required\":false,\"type\":\"binary\"},"
           "{\"id\":6,\"name\":\"headers\",\"required\":false,\"type\":{\"type\":\"list\","
           "\"element-id\":7,\"element-required\":true,\"element\":{\"type\":\"struct\",\"fields\":"
           "["
           "{\"id\":8,\"name\":\"key\",\"required\":true,\"type\":\"string\"},"
           "{\"id\":9,\"name\":\"value\",\"required\":false,\"type\":\"binary\"}]}}}]}";
}

ls_pq_writer_t *ls_raw_writer_new(const ls_pq_opts_t *opts, ls_buf_t *out, char *err, size_t errlen)
{
    size_t n;
    const ls_pq_field_t *f = ls_raw_parquet_fields(&n);
    return ls_pq_writer_new(f, n, opts, out, err, errlen);
}

ls_status ls_raw_write(ls_pq_writer_t *w, const ls_raw_record_t *r)
{
    ls_pq_put_i32(w, C_PARTITION, 0, r->partition);
    ls_pq_put_i64(w, C_OFFSET, 0, r->offset);
    ls_pq_put_i64(w, C_TIMESTAMP, 0, r->timestamp_ms * 1000);
    if (r->key_len < 0)
        ls_pq_put_null(w, C_KEY, 0, 0);
    else
        ls_pq_put_bytes(w, C_KEY, 0, r->key, (size_t)r->key_len);
    if (r->value_len < 0)
        ls_pq_put_null(w, C_VALUE, 0, 0);
    else
        ls_pq_put_bytes(w, C_VALUE, 0, r->value, (size_t)r->value_len);
    ls_raw_put_headers(w, C_HKEY, C_HVALUE, r->headers, r->nheaders);
    return ls_pq_end_row(w);
}

void ls_raw_put_headers(ls_pq_writer_t *w, int key_col, int value_col, const ls_raw_header_t *h,
                        size_t n)
{
    if (n == 0) { /* an empty list: def 1 */
        ls_pq_put_null(w, key_col, 0, 1);
        ls_pq_put_null(w, value_col, 0, 1);
    }
    for (size_t i = 0; i < n; i++) {
        int rep = i == 0 ? 0 : 1;
        ls_pq_put_bytes(w, key_col, rep, h[i].key, h[i].key_len);
        if (h[i].value_len < 0)
            ls_pq_put_null(w, value_col, rep, 2);
        else
            ls_pq_put_bytes(w, value_col, rep, h[i].value, (size_t)h[i].value_len);
    }
}
