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
    {"partition", LS_PQ_INT32, LS_PQ_REQUIRED, LS_PQ_LT_NONE, LS_RAW_FID_PARTITION, 0},
    {"offset", LS_PQ_INT64, LS_PQ_REQUIRED, LS_PQ_LT_NONE, LS_RAW_FID_OFFSET, 0},
    {"timestamp", LS_PQ_INT64, LS_PQ_REQUIRED, LS_PQ_LT_TIMESTAMP_US_UTC, LS_RAW_FID_TIMESTAMP, 0},
    {"key", LS_PQ_BYTE_ARRAY, LS_PQ_OPTIONAL, LS_PQ_LT_NONE, LS_RAW_FID_KEY, 0},
    {"value", LS_PQ_BYTE_ARRAY, LS_PQ_OPTIONAL, LS_PQ_LT_NONE, LS_RAW_FID_VALUE, 0},
    {"headers", LS_PQ_GROUP, LS_PQ_OPTIONAL, LS_PQ_LT_LIST, LS_RAW_FID_HEADERS, 1},
    {"list", LS_PQ_GROUP, LS_PQ_REPEATED, LS_PQ_LT_NONE, -1, 1},
    {"element", LS_PQ_GROUP, LS_PQ_REQUIRED, LS_PQ_LT_NONE, LS_RAW_FID_HEADER_ELEMENT, 2},
    {"key", LS_PQ_BYTE_ARRAY, LS_PQ_REQUIRED, LS_PQ_LT_STRING, LS_RAW_FID_HEADER_KEY, 0},
    {"value", LS_PQ_BYTE_ARRAY, LS_PQ_OPTIONAL, LS_PQ_LT_NONE, LS_RAW_FID_HEADER_VALUE, 0},
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
    if (r->nheaders == 0) {
        ls_pq_put_null(w, C_HKEY, 0, 1);
        ls_pq_put_null(w, C_HVALUE, 0, 1);
    }
    for (size_t i = 0; i < r->nheaders; i++) {
        const ls_raw_header_t *h = &r->headers[i];
        int rep = i == 0 ? 0 : 1;
        ls_pq_put_bytes(w, C_HKEY, rep, h->key, h->key_len);
        if (h->value_len < 0)
            ls_pq_put_null(w, C_HVALUE, rep, 2);
        else
            ls_pq_put_bytes(w, C_HVALUE, rep, h->value, (size_t)h->value_len);
    }
    return ls_pq_end_row(w);
}

/* ---- partitioned data files ---------------------------------------------- */
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"

typedef struct raw_bucket {
    int64_t key[LS_ICE_MAX_PART];
    ls_pq_writer_t *w;
    ls_buf_t out;
} raw_bucket_t;

struct ls_raw_files {
    ls_ice_table_t *t;
    ls_pq_opts_t opts;
    size_t target;
    const ls_ice_spec_t *spec;
    raw_bucket_t **b; /* pointers: writers point at their bucket's buffer */
    size_t nb;
    ls_ice_datafile_t *files;
    size_t nfiles;
    char err[256];
};

ls_raw_files_t *ls_raw_files_new(ls_ice_table_t *t, const ls_pq_opts_t *opts,
                                 size_t target_file_bytes, char *err, size_t errlen)
{
    const ls_ice_spec_t *spec = ls_ice_table_spec(t);
    for (int i = 0; i < spec->nfields; i++) {
        int s = spec->fields[i].source_id;
        if (s != LS_RAW_FID_PARTITION && s != LS_RAW_FID_OFFSET && s != LS_RAW_FID_TIMESTAMP) {
            snprintf(err, errlen, "partition field %s: source %d is not a raw-table column",
                     spec->fields[i].name, s);
            return NULL;
        }
    }
    ls_raw_files_t *f = LS_NEW(ls_raw_files_t);
    f->t = t;
    f->spec = spec;
    if (opts)
        f->opts = *opts;
    else
        ls_pq_opts_init(&f->opts);
    f->target = target_file_bytes ? target_file_bytes : (size_t)128 << 20;
    return f;
}

/* Finishes a bucket's file, uploads it, records its data file. */
static ls_status close_bucket(ls_raw_files_t *f, raw_bucket_t *b)
{
    if (!b->w) return LS_OK;
    ls_status st = ls_pq_writer_finish(b->w);
    if (st != LS_OK) {
        snprintf(f->err, sizeof f->err, "parquet: %s", ls_pq_error(b->w));
        return st;
    }
    f->files = ls_realloc(f->files, (f->nfiles + 1) * sizeof *f->files);
    ls_ice_datafile_t *df = &f->files[f->nfiles];
    memset(df, 0, sizeof *df);
    memcpy(df->partition, b->key, sizeof df->partition);
    ls_ice_datafile_metrics(df, b->w);
    st = ls_ice_table_put_data(f->t, &b->out, "parquet", df);
    if (st != LS_OK) {
        snprintf(f->err, sizeof f->err, "%s", ls_ice_table_error(f->t));
        ls_ice_datafile_clear(df);
        return st;
    }
    f->nfiles++;
    ls_pq_writer_free(b->w);
    b->w = NULL;
    ls_buf_free(&b->out);
    return LS_OK;
}

ls_status ls_raw_files_add(ls_raw_files_t *f, const ls_raw_record_t *r)
{
    int64_t key[LS_ICE_MAX_PART] = {0};
    for (int i = 0; i < f->spec->nfields; i++) {
        const ls_ice_part_field_t *pf = &f->spec->fields[i];
        int64_t v = pf->source_id == LS_RAW_FID_PARTITION ? r->partition
                    : pf->source_id == LS_RAW_FID_OFFSET  ? r->offset
                                                          : r->timestamp_ms * 1000;
        key[i] = ls_ice_transform_apply(pf->transform, pf->source_type, v);
    }
    raw_bucket_t *b = NULL;
    for (size_t i = 0; i < f->nb && !b; i++)
        if (!memcmp(f->b[i]->key, key, sizeof key)) b = f->b[i];
    if (!b) {
        f->b = ls_realloc(f->b, (f->nb + 1) * sizeof *f->b);
        b = f->b[f->nb++] = LS_NEW(raw_bucket_t);
        memcpy(b->key, key, sizeof key);
    }
    if (!b->w) {
        ls_buf_init(&b->out);
        b->w = ls_raw_writer_new(&f->opts, &b->out, f->err, sizeof f->err);
        if (!b->w) return LS_EINVAL;
    }
    ls_status st = ls_raw_write(b->w, r);
    if (st != LS_OK) {
        snprintf(f->err, sizeof f->err, "parquet: %s", ls_pq_error(b->w));
        return st;
    }
    if (b->out.len + ls_pq_buffered_bytes(b->w) >= f->target) return close_bucket(f, b);
    return LS_OK;
}

ls_status ls_raw_files_finish(ls_raw_files_t *f, const ls_ice_datafile_t **files, size_t *n)
{
    for (size_t i = 0; i < f->nb; i++) {
        ls_status st = close_bucket(f, f->b[i]);
        if (st != LS_OK) return st;
    }
    *files = f->files;
    *n = f->nfiles;
    return LS_OK;
}

const char *ls_raw_files_error(const ls_raw_files_t *f)
{
    return f->err;
}

void ls_raw_files_free(ls_raw_files_t *f)
{
    if (!f) return;
    for (size_t i = 0; i < f->nb; i++) {
        ls_pq_writer_free(f->b[i]->w);
        ls_buf_free(&f->b[i]->out);
        ls_free(f->b[i]);
    }
    ls_free(f->b);
    for (size_t i = 0; i < f->nfiles; i++)
        ls_ice_datafile_clear(&f->files[i]);
    ls_free(f->files);
    ls_free(f);
}
