/* Iceberg v2 manifests and manifest lists; see iceberg_manifest.h. */
#include "table/iceberg_manifest.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"

ls_ice_type ls_ice_result_type(const ls_ice_part_field_t *f)
{
    switch (f->transform) {
    case LS_ICE_HOUR:
    case LS_ICE_MONTH:
    case LS_ICE_YEAR:
    case LS_ICE_BUCKET: return LS_ICE_INT;
    case LS_ICE_DAY: return LS_ICE_DATE;
    default: return f->source_type; /* identity, truncate, void */
    }
}

static bool bytes_type(ls_ice_type t)
{
    return t == LS_ICE_STRING || t == LS_ICE_BINARY || t == LS_ICE_FIXED || t == LS_ICE_UUID ||
           t == LS_ICE_DECIMAL;
}

static bool float_type(ls_ice_type t) { return t == LS_ICE_FLOAT || t == LS_ICE_DOUBLE; }

static bool long_type(ls_ice_type t)
{
    return t == LS_ICE_LONG || t == LS_ICE_TIME || t == LS_ICE_TIMESTAMP ||
           t == LS_ICE_TIMESTAMPTZ || t == LS_ICE_DOUBLE; /* a double: its bits */
}

/* The Avro fixed size of a partition value of f (uuid, fixed, decimal), else 0. */
static size_t part_fixed_size(const ls_ice_part_field_t *f, ls_ice_type rt)
{
    if (rt == LS_ICE_UUID) return 16;
    if (rt == LS_ICE_FIXED) return (size_t)f->flen;
    if (rt == LS_ICE_DECIMAL) return (size_t)ls_pq_decimal_length(f->prec);
    return 0;
}

/* A float partition value's IEEE bits (canonical NaN, as Java's
 * floatToIntBits). */
static uint32_t float_bits(int64_t l)
{
    float f = (float)ls_ice_bits_double(l);
    uint32_t u;
    if (f != f) return 0x7fc00000u;
    memcpy(&u, &f, 4);
    return u;
}

/* Single-value serialization (spec Appendix D) of a partition value: a
 * boolean 1 byte (0 or 1); ints, dates and floats 4 bytes, longs, times,
 * timestamps and doubles 8, little-endian (floats as IEEE 754 bits); the
 * other types' bytes as the value holds them. */
static size_t part_bytes(ls_ice_type rt, const ls_ice_pval_t *v, const uint8_t **p, uint8_t out[8])
{
    if (bytes_type(rt)) {
        *p = ls_ice_pval_data(v);
        return v->n;
    }
    if (rt == LS_ICE_BOOLEAN) {
        out[0] = v->l != 0;
        *p = out;
        return 1;
    }
    if (rt == LS_ICE_FLOAT) {
        uint32_t u = float_bits(v->l);
        for (size_t i = 0; i < 4; i++)
            out[i] = (uint8_t)(u >> (8 * i));
        *p = out;
        return 4;
    }
    size_t n = long_type(rt) ? 8 : 4;
    for (size_t i = 0; i < n; i++)
        out[i] = (uint8_t)((uint64_t)v->l >> (8 * i));
    *p = out;
    return n;
}

/* Order of two non-null partition values of result type rt (the spec's
 * orders: numbers and dates by value, strings by code point = UTF-8 bytes
 * unsigned, binary/fixed/uuid bytes unsigned, decimals numerically). */
static int part_cmp(ls_ice_type rt, const ls_ice_pval_t *x, const ls_ice_pval_t *y)
{
    if (float_type(rt)) { /* by value, -0.0 before 0.0 (Java's Double.compare); no NaN here */
        double a = ls_ice_bits_double(x->l), b = ls_ice_bits_double(y->l);
        if (a != b) return a < b ? -1 : 1;
        bool na = signbit(a), nb = signbit(b);
        return na == nb ? 0 : na ? -1 : 1;
    }
    if (!bytes_type(rt)) return x->l < y->l ? -1 : x->l > y->l;
    if (rt == LS_ICE_DECIMAL) {
        bool nx = x->n && (x->b[0] & 0x80), ny = y->n && (y->b[0] & 0x80);
        if (nx != ny) return nx ? -1 : 1;
        /* same sign, fewest bytes: a longer one is farther from zero */
        if (x->n != y->n) return (x->n < y->n) != nx ? -1 : 1;
        return memcmp(x->b, y->b, x->n) < 0 ? -1 : memcmp(x->b, y->b, x->n) > 0;
    } /* (a decimal has at most 16 bytes: inline) */
    size_t n = x->n < y->n ? x->n : y->n;
    int c = n ? memcmp(ls_ice_pval_data(x), ls_ice_pval_data(y), n) : 0;
    if (c) return c < 0 ? -1 : 1;
    return x->n < y->n ? -1 : x->n > y->n;
}

int ls_ice_pval_cmp(const ls_ice_part_field_t *f, const ls_ice_pval_t *x, const ls_ice_pval_t *y)
{
    if (x->null || y->null) return x->null == y->null ? 0 : x->null ? -1 : 1;
    return part_cmp(ls_ice_result_type(f), x, y);
}

/* ---- Avro schemas -------------------------------------------------------- */

/* Iceberg's Avro mapping (spec Appendix A) of a partition field's result. */
static void part_avro_type(const ls_ice_part_field_t *f, ls_buf_t *b)
{
    ls_ice_type rt = ls_ice_result_type(f);
    switch (rt) {
    case LS_ICE_DATE: ls_buf_printf(b, "{\"type\":\"int\",\"logicalType\":\"date\"}"); return;
    case LS_ICE_TIME:
        ls_buf_printf(b, "{\"type\":\"long\",\"logicalType\":\"time-micros\"}");
        return;
    case LS_ICE_TIMESTAMP:
    case LS_ICE_TIMESTAMPTZ:
        ls_buf_printf(b,
                      "{\"type\":\"long\",\"logicalType\":\"timestamp-micros\","
                      "\"adjust-to-utc\":%s}",
                      rt == LS_ICE_TIMESTAMPTZ ? "true" : "false");
        return;
    case LS_ICE_STRING: ls_buf_printf(b, "\"string\""); return;
    case LS_ICE_BINARY: ls_buf_printf(b, "\"bytes\""); return;
    case LS_ICE_BOOLEAN: ls_buf_printf(b, "\"boolean\""); return;
    case LS_ICE_FLOAT: ls_buf_printf(b, "\"float\""); return;
    case LS_ICE_DOUBLE: ls_buf_printf(b, "\"double\""); return;
    case LS_ICE_UUID:
        ls_buf_printf(b,
                      "{\"type\":\"fixed\",\"name\":\"uuid_fixed_%d\",\"size\":16,"
                      "\"logicalType\":\"uuid\"}",
                      f->field_id);
        return;
    case LS_ICE_FIXED:
        ls_buf_printf(b, "{\"type\":\"fixed\",\"name\":\"fixed_%d\",\"size\":%d}", f->field_id,
                      f->flen);
        return;
    case LS_ICE_DECIMAL:
        ls_buf_printf(b,
                      "{\"type\":\"fixed\",\"name\":\"decimal_%d\",\"size\":%d,"
                      "\"logicalType\":\"decimal\",\"precision\":%d,\"scale\":%d}",
                      f->field_id, ls_pq_decimal_length(f->prec), f->prec, f->scale);
        return;
    default: ls_buf_printf(b, "\"%s\"", rt == LS_ICE_LONG ? "long" : "int");
    }
}

static void map_field(ls_buf_t *b, const char *name, int fid, int kid, int vid, const char *vtype)
{
    ls_buf_printf(b,
                  "{\"name\":\"%s\",\"type\":[\"null\",{\"type\":\"array\",\"logicalType\":\"map\","
                  "\"items\":{\"type\":\"record\",\"name\":\"k%d_v%d\",\"fields\":["
                  "{\"name\":\"key\",\"type\":\"int\",\"field-id\":%d},"
                  "{\"name\":\"value\",\"type\":\"%s\",\"field-id\":%d}]}}],"
                  "\"default\":null,\"field-id\":%d},",
                  name, kid, vid, kid, vtype, vid, fid);
}

static char *manifest_schema(const ls_ice_spec_t *s, int fv)
{
    ls_buf_t b;
    ls_buf_init(&b);
    ls_buf_printf(
        &b,
        "{\"type\":\"record\",\"name\":\"manifest_entry\",\"fields\":["
        "{\"name\":\"status\",\"type\":\"int\",\"field-id\":0},"
        "{\"name\":\"snapshot_id\",\"type\":[\"null\",\"long\"],\"default\":null,\"field-id\":1},"
        "{\"name\":\"sequence_number\",\"type\":[\"null\",\"long\"],\"default\":null,\"field-id\":"
        "3},"
        "{\"name\":\"file_sequence_number\",\"type\":[\"null\",\"long\"],\"default\":null,\"field-"
        "id\":4},"
        "{\"name\":\"data_file\",\"type\":{\"type\":\"record\",\"name\":\"r2\",\"fields\":["
        "{\"name\":\"content\",\"type\":\"int\",\"field-id\":134},"
        "{\"name\":\"file_path\",\"type\":\"string\",\"field-id\":100},"
        "{\"name\":\"file_format\",\"type\":\"string\",\"field-id\":101},"
        "{\"name\":\"partition\",\"type\":{\"type\":\"record\",\"name\":\"r102\",\"fields\":[");
    for (int i = 0; i < s->nfields; i++) {
        ls_buf_printf(&b, "%s{\"name\":\"%s\",\"type\":[\"null\",", i ? "," : "",
                      s->fields[i].name);
        part_avro_type(&s->fields[i], &b);
        ls_buf_printf(&b, "],\"default\":null,\"field-id\":%d}", s->fields[i].field_id);
    }
    ls_buf_printf(&b, "]},\"field-id\":102},"
                      "{\"name\":\"record_count\",\"type\":\"long\",\"field-id\":103},"
                      "{\"name\":\"file_size_in_bytes\",\"type\":\"long\",\"field-id\":104},");
    map_field(&b, "column_sizes", 108, 117, 118, "long");
    map_field(&b, "value_counts", 109, 119, 120, "long");
    map_field(&b, "null_value_counts", 110, 121, 122, "long");
    map_field(&b, "lower_bounds", 125, 126, 127, "bytes");
    map_field(&b, "upper_bounds", 128, 129, 130, "bytes");
    ls_buf_printf(
        &b,
        "{\"name\":\"key_metadata\",\"type\":[\"null\",\"bytes\"],\"default\":null,\"field-id\":"
        "131},"
        "{\"name\":\"split_offsets\",\"type\":[\"null\",{\"type\":\"array\",\"items\":\"long\","
        "\"element-id\":133}],\"default\":null,\"field-id\":132},"
        "{\"name\":\"sort_order_id\",\"type\":[\"null\",\"int\"],\"default\":null,\"field-id\":"
        "140}");
    if (fv >= 3) /* row lineage and deletion vectors (spec "Manifests", v3) */
        ls_buf_printf(
            &b,
            ",{\"name\":\"first_row_id\",\"type\":[\"null\",\"long\"],\"default\":null,"
            "\"field-id\":142},"
            "{\"name\":\"referenced_data_file\",\"type\":[\"null\",\"string\"],\"default\":null,"
            "\"field-id\":143},"
            "{\"name\":\"content_offset\",\"type\":[\"null\",\"long\"],\"default\":null,"
            "\"field-id\":144},"
            "{\"name\":\"content_size_in_bytes\",\"type\":[\"null\",\"long\"],\"default\":null,"
            "\"field-id\":145}");
    ls_buf_printf(&b, "]},\"field-id\":2}]}");
    ls_buf_append_u8(&b, 0);
    return (char *)ls_buf_steal(&b, NULL);
}

static const char MANIFEST_LIST_FIELDS[] =
    "{\"type\":\"record\",\"name\":\"manifest_file\",\"fields\":["
    "{\"name\":\"manifest_path\",\"type\":\"string\",\"field-id\":500},"
    "{\"name\":\"manifest_length\",\"type\":\"long\",\"field-id\":501},"
    "{\"name\":\"partition_spec_id\",\"type\":\"int\",\"field-id\":502},"
    "{\"name\":\"content\",\"type\":\"int\",\"field-id\":517},"
    "{\"name\":\"sequence_number\",\"type\":\"long\",\"field-id\":515},"
    "{\"name\":\"min_sequence_number\",\"type\":\"long\",\"field-id\":516},"
    "{\"name\":\"added_snapshot_id\",\"type\":\"long\",\"field-id\":503},"
    "{\"name\":\"added_files_count\",\"type\":\"int\",\"field-id\":504},"
    "{\"name\":\"existing_files_count\",\"type\":\"int\",\"field-id\":505},"
    "{\"name\":\"deleted_files_count\",\"type\":\"int\",\"field-id\":506},"
    "{\"name\":\"added_rows_count\",\"type\":\"long\",\"field-id\":512},"
    "{\"name\":\"existing_rows_count\",\"type\":\"long\",\"field-id\":513},"
    "{\"name\":\"deleted_rows_count\",\"type\":\"long\",\"field-id\":514},"
    "{\"name\":\"partitions\",\"type\":[\"null\",{\"type\":\"array\",\"items\":{\"type\":"
    "\"record\","
    "\"name\":\"r508\",\"fields\":["
    "{\"name\":\"contains_null\",\"type\":\"boolean\",\"field-id\":509},"
    "{\"name\":\"contains_nan\",\"type\":[\"null\",\"boolean\"],\"default\":null,\"field-id\":518},"
    "{\"name\":\"lower_bound\",\"type\":[\"null\",\"bytes\"],\"default\":null,\"field-id\":510},"
    "{\"name\":\"upper_bound\",\"type\":[\"null\",\"bytes\"],\"default\":null,\"field-id\":511}]},"
    "\"element-id\":508}],\"default\":null,\"field-id\":507},"
    "{\"name\":\"key_metadata\",\"type\":[\"null\",\"bytes\"],\"default\":null,\"field-id\":519}";
/* v2 ends the record there; v3 adds the manifest's first row id */
static const char MANIFEST_LIST_V2_END[] = "]}";
static const char MANIFEST_LIST_V3_END[] =
    ",{\"name\":\"first_row_id\",\"type\":[\"null\",\"long\"],\"default\":null,"
    "\"field-id\":520}]}";

/* ---- manifests ----------------------------------------------------------- */

static void enc_int_long_map(ls_buf_t *b, const ls_ice_datafile_t *df, int which)
{
    ls_ocf_union(b, 1);
    ls_ocf_block(b, (int64_t)df->nmetrics);
    for (size_t i = 0; i < df->nmetrics; i++) {
        const ls_ice_colmetric_t *m = &df->metrics[i];
        ls_ocf_long(b, m->field_id);
        ls_ocf_long(b, which == 0 ? m->column_size : which == 1 ? m->value_count : m->null_count);
    }
    ls_ocf_end(b);
}

static void enc_bounds(ls_buf_t *b, const ls_ice_datafile_t *df, int upper)
{
    size_t n = 0;
    for (size_t i = 0; i < df->nmetrics; i++)
        n += upper ? df->metrics[i].has_upper : df->metrics[i].has_lower;
    ls_ocf_union(b, 1);
    ls_ocf_block(b, (int64_t)n);
    for (size_t i = 0; i < df->nmetrics; i++) {
        const ls_ice_colmetric_t *m = &df->metrics[i];
        if (!(upper ? m->has_upper : m->has_lower)) continue;
        ls_ocf_long(b, m->field_id);
        if (upper)
            ls_ocf_bytes(b, m->upper, m->upper_len);
        else
            ls_ocf_bytes(b, m->lower, m->lower_len);
    }
    ls_ocf_end(b);
}

static void enc_opt_long(ls_buf_t *b, int64_t v)
{
    if (v < 0) {
        ls_ocf_union(b, 0);
    } else {
        ls_ocf_union(b, 1);
        ls_ocf_long(b, v);
    }
}

/* A partition value as the manifest's partition struct field: null, or
 * the value in its Avro type (fixed: a decimal sign-extended to its size). */
static void enc_part(ls_buf_t *b, const ls_ice_part_field_t *f, const ls_ice_pval_t *v)
{
    if (v->null) {
        ls_ocf_union(b, 0);
        return;
    }
    ls_ocf_union(b, 1);
    ls_ice_type rt = ls_ice_result_type(f);
    size_t fs = part_fixed_size(f, rt);
    uint8_t x[8];
    const uint8_t *q;
    if (rt == LS_ICE_BOOLEAN) {
        ls_ocf_bool(b, v->l != 0);
    } else if (float_type(rt)) { /* Avro float/double: IEEE bits, little-endian */
        size_t len = part_bytes(rt, v, &q, x);
        ls_buf_append(b, q, len);
    } else if (!bytes_type(rt)) {
        ls_ocf_long(b, v->l);
    } else if (!fs) {
        ls_ocf_bytes(b, ls_ice_pval_data(v), v->n); /* string and bytes: length, bytes */
    } else {
        uint8_t pad = rt == LS_ICE_DECIMAL && v->n && (v->b[0] & 0x80) ? 0xff : 0x00;
        for (size_t i = v->n; i < fs; i++)
            ls_buf_append_u8(b, pad);
        ls_buf_append(b, ls_ice_pval_data(v), v->n < fs ? v->n : fs);
    }
}

ls_status ls_ice_manifest_encode(const ls_ice_spec_t *s, int fv, const char *schema_json,
                                 int schema_id, const char *spec_json, const ls_ice_mentry_t *e,
                                 size_t n, ls_buf_t *out)
{
    char *schema = manifest_schema(s, fv);
    ls_ocf_t *w = ls_ocf_new(schema, LS_OCF_CODEC_DEFLATE, 0);
    ls_free(schema);
    char num[32];
    ls_ocf_meta_str(w, "schema", schema_json);
    snprintf(num, sizeof num, "%d", schema_id);
    ls_ocf_meta_str(w, "schema-id", num);
    ls_ocf_meta_str(w, "partition-spec", spec_json);
    snprintf(num, sizeof num, "%d", s->spec_id);
    ls_ocf_meta_str(w, "partition-spec-id", num);
    ls_ocf_meta_str(w, "format-version", fv >= 3 ? "3" : "2");
    /* a manifest holds one kind of file (spec "Manifests": content) */
    ls_ocf_meta_str(w, "content", n && e[0].df.content ? "deletes" : "data");
    for (size_t k = 0; k < n; k++) {
        const ls_ice_datafile_t *df = &e[k].df;
        ls_buf_t *b = ls_ocf_datum(w);
        ls_ocf_long(b, e[k].status);
        enc_opt_long(b, e[k].snapshot_id);
        enc_opt_long(b, e[k].seq);
        enc_opt_long(b, e[k].file_seq);
        ls_ocf_long(b, df->content);
        ls_ocf_string(b, df->path);
        ls_ocf_string(b, df->content_size > 0 ? "PUFFIN" : "PARQUET");
        for (int p = 0; p < s->nfields; p++)
            enc_part(b, &s->fields[p], &df->partition[p]);
        ls_ocf_long(b, df->record_count);
        ls_ocf_long(b, df->file_size);
        enc_int_long_map(b, df, 0);
        enc_int_long_map(b, df, 1);
        enc_int_long_map(b, df, 2);
        enc_bounds(b, df, 0);
        enc_bounds(b, df, 1);
        ls_ocf_union(b, 0); /* key_metadata */
        ls_ocf_union(b, 0); /* split_offsets */
        ls_ocf_union(b, 0); /* sort_order_id */
        if (fv >= 3) {
            enc_opt_long(b, df->has_first_row_id ? df->first_row_id : -1);
            if (df->referenced_data_file) {
                ls_ocf_union(b, 1);
                ls_ocf_string(b, df->referenced_data_file);
            } else {
                ls_ocf_union(b, 0);
            }
            enc_opt_long(b, df->content_size > 0 ? df->content_offset : -1);
            enc_opt_long(b, df->content_size > 0 ? df->content_size : -1);
        }
        ls_ocf_datum_done(w);
    }
    ls_status st = ls_ocf_finish(w, out);
    ls_ocf_free(w);
    return st;
}

int64_t ls_ice_av_long(const ls_av_t *rec, const char *name, const char *alt, int64_t dflt)
{
    const ls_av_t *v = ls_av_field(rec, name);
    if (!v && alt) v = ls_av_field(rec, alt);
    return v && (v->kind == LS_AV_LONG || v->kind == LS_AV_BOOL) ? v->l : dflt;
}

const char *ls_ice_av_str(const ls_av_t *rec, const char *name)
{
    const ls_av_t *v = ls_av_field(rec, name);
    return v && v->kind == LS_AV_BYTES ? (const char *)v->p : NULL;
}

static ls_ice_colmetric_t *metric_of(ls_ice_datafile_t *df, int field_id, size_t *cap)
{
    for (size_t i = 0; i < df->nmetrics; i++)
        if (df->metrics[i].field_id == field_id) return &df->metrics[i];
    if (df->nmetrics == *cap) {
        *cap = *cap ? *cap * 2 : 8;
        df->metrics = ls_realloc(df->metrics, *cap * sizeof *df->metrics);
    }
    ls_ice_colmetric_t *m = &df->metrics[df->nmetrics++];
    memset(m, 0, sizeof *m);
    m->field_id = field_id;
    return m;
}

/* One key/value map of a data_file into its metrics; 0 or -1 (unmodelled). */
static int dec_map(ls_ice_datafile_t *df, size_t *cap, const ls_av_t *map, int which)
{
    if (!map || map->kind == LS_AV_NULL) return 0;
    if (map->kind != LS_AV_ARRAY) return -1;
    for (size_t i = 0; i < map->nitems; i++) {
        const ls_av_t *kv = &map->items[i];
        const ls_av_t *k = ls_av_field(kv, "key"), *v = ls_av_field(kv, "value");
        if (!k || k->kind != LS_AV_LONG || !v) return -1;
        ls_ice_colmetric_t *m = metric_of(df, (int)k->l, cap);
        if (which < 3) {
            if (v->kind != LS_AV_LONG) return -1;
            if (which == 0)
                m->column_size = v->l;
            else if (which == 1)
                m->value_count = v->l;
            else
                m->null_count = v->l;
        } else {
            if (v->kind != LS_AV_BYTES || v->n > LS_ICE_BOUND_MAX) return -1;
            if (which == 3) {
                if (v->n) memcpy(m->lower, v->p, v->n);
                m->lower_len = v->n;
                m->has_lower = 1;
            } else {
                if (v->n) memcpy(m->upper, v->p, v->n);
                m->upper_len = v->n;
                m->has_upper = 1;
            }
        }
    }
    return 0;
}

static int64_t opt_long(const ls_av_t *rec, const char *name)
{
    const ls_av_t *v = ls_av_field(rec, name);
    return v && v->kind == LS_AV_LONG ? v->l : -1;
}

static bool absent(const ls_av_t *rec, const char *name)
{
    const ls_av_t *v = ls_av_field(rec, name);
    return !v || v->kind == LS_AV_NULL;
}

/* A partition struct field back into a value (enc_part's inverse; a
 * decimal's fixed bytes reduced to the fewest). -1 when it does not fit. */
static int dec_part(const ls_ice_part_field_t *f, const ls_av_t *a, ls_ice_pval_t *v)
{
    memset(v, 0, sizeof *v);
    ls_ice_type rt = ls_ice_result_type(f);
    if (a->kind == LS_AV_NULL) {
        v->null = 1;
        return 0;
    }
    if (rt == LS_ICE_BOOLEAN) {
        if (a->kind != LS_AV_BOOL) return -1;
        v->l = a->l != 0;
        return 0;
    }
    if (float_type(rt)) { /* a float reads widened: the same value as a double */
        if (a->kind != LS_AV_DOUBLE) return -1;
        v->l = ls_ice_double_bits(a->d);
        return 0;
    }
    if (!bytes_type(rt)) {
        if (a->kind != LS_AV_LONG) return -1;
        v->l = a->l;
        return 0;
    }
    if (a->kind != LS_AV_BYTES || a->n > UINT32_MAX) return -1;
    size_t k = 0;
    if (rt == LS_ICE_DECIMAL)
        while (k + 1 < a->n && ((a->p[k] == 0 && !(a->p[k + 1] & 0x80)) ||
                                (a->p[k] == 0xff && (a->p[k + 1] & 0x80))))
            k++;
    size_t n = a->n - k;
    if (rt == LS_ICE_DECIMAL && n > 16) return -1; /* beyond decimal(38) */
    uint8_t *to = v->b;
    if (n > LS_ICE_PVAL_INLINE) to = v->ext = ls_malloc(n); /* the entry's data file owns it */
    if (n) memcpy(to, a->p + k, n);
    v->n = (uint32_t)n;
    return 0;
}

static int dec_entry(const ls_av_t *r, const ls_ice_spec_t *s, ls_ice_mentry_t *e)
{
    memset(e, 0, sizeof *e);
    const ls_av_t *d = ls_av_field(r, "data_file");
    const ls_av_t *part = d ? ls_av_field(d, "partition") : NULL;
    const char *path = d ? ls_ice_av_str(d, "file_path") : NULL;
    const char *fmt = d ? ls_ice_av_str(d, "file_format") : NULL;
    int64_t content = d ? ls_ice_av_long(d, "content", NULL, 0) : -1;
    const char *ref = d ? ls_ice_av_str(d, "referenced_data_file") : NULL;
    int64_t coff = d ? opt_long(d, "content_offset") : -1;
    int64_t csize = d ? opt_long(d, "content_size_in_bytes") : -1;
    bool dv = fmt && !strcmp(fmt, "PUFFIN"); /* a deletion vector: all three set */
    if (!d || !path || !fmt || (strcmp(fmt, "PARQUET") && !dv) ||
        (dv && (content != LS_ICE_CONTENT_POSITION_DELETES || !ref || coff < 0 || csize <= 0)) ||
        (content != LS_ICE_CONTENT_DATA && content != LS_ICE_CONTENT_POSITION_DELETES) || !part ||
        part->kind != LS_AV_RECORD || part->nitems != (size_t)s->nfields ||
        !absent(d, "key_metadata") || !absent(d, "split_offsets") || !absent(d, "sort_order_id") ||
        !absent(d, "equality_ids"))
        return -1;
    e->status = (int)ls_ice_av_long(r, "status", NULL, -1);
    e->snapshot_id = opt_long(r, "snapshot_id");
    e->seq = opt_long(r, "sequence_number");
    e->file_seq = opt_long(r, "file_sequence_number");
    for (int p = 0; p < s->nfields; p++)
        if (dec_part(&s->fields[p], &part->items[p], &e->df.partition[p])) return -1;
    e->df.content = (int)content;
    e->df.path = ls_strdup(path);
    e->df.record_count = ls_ice_av_long(d, "record_count", NULL, 0);
    e->df.file_size = ls_ice_av_long(d, "file_size_in_bytes", NULL, 0);
    int64_t first = opt_long(d, "first_row_id");
    e->df.has_first_row_id = first >= 0;
    e->df.first_row_id = first >= 0 ? first : 0;
    if (ref) e->df.referenced_data_file = ls_strdup(ref);
    if (dv) e->df.content_offset = coff, e->df.content_size = csize;
    size_t cap = 0;
    static const char *const maps[] = {"column_sizes", "value_counts", "null_value_counts",
                                       "lower_bounds", "upper_bounds"};
    for (int m = 0; m < 5; m++)
        if (dec_map(&e->df, &cap, ls_av_field(d, maps[m]), m)) return -1;
    return e->status < 0 || e->status > 2 ? -1 : 0;
}

ls_status ls_ice_manifest_decode(const uint8_t *p, size_t len, const ls_ice_spec_t *s,
                                 ls_ice_mentry_t **out, size_t *n, char *err, size_t errlen)
{
    *out = NULL;
    *n = 0;
    ls_ocf_file_t f;
    ls_status st = ls_ocf_file_read(p, len, &f, err, errlen);
    if (st != LS_OK) return st;
    ls_ice_mentry_t *e = f.nrecords ? LS_NEWN(ls_ice_mentry_t, f.nrecords) : NULL;
    size_t k = 0;
    for (; k < f.nrecords; k++) {
        if (dec_entry(&f.records[k], s, &e[k])) {
            snprintf(err, errlen, "manifest entry %zu has fields this writer does not keep", k);
            ls_ice_datafile_clear(&e[k].df);
            ls_ice_mentries_free(e, k);
            ls_ocf_file_free(&f);
            return LS_EINVAL;
        }
    }
    ls_ocf_file_free(&f);
    *out = e;
    *n = k;
    return LS_OK;
}

void ls_ice_mentries_free(ls_ice_mentry_t *e, size_t n)
{
    for (size_t i = 0; i < n; i++)
        ls_ice_datafile_clear(&e[i].df);
    ls_free(e);
}

/* ---- manifest lists ------------------------------------------------------ */

ls_ocf_t *ls_ice_mlist_new(int fv, int64_t snap_id, const int64_t *parent_id, int64_t seq,
                           int64_t first_row_id)
{
    char *schema = ls_asprintf("%s%s", MANIFEST_LIST_FIELDS,
                               fv >= 3 ? MANIFEST_LIST_V3_END : MANIFEST_LIST_V2_END);
    ls_ocf_t *w = ls_ocf_new(schema, LS_OCF_CODEC_DEFLATE, 0);
    ls_free(schema);
    char num[32];
    snprintf(num, sizeof num, "%lld", (long long)snap_id);
    ls_ocf_meta_str(w, "snapshot-id", num);
    if (parent_id) {
        snprintf(num, sizeof num, "%lld", (long long)*parent_id);
        ls_ocf_meta_str(w, "parent-snapshot-id", num);
    }
    snprintf(num, sizeof num, "%lld", (long long)seq);
    ls_ocf_meta_str(w, "sequence-number", num);
    if (fv >= 3) {
        snprintf(num, sizeof num, "%lld", (long long)first_row_id);
        ls_ocf_meta_str(w, "first-row-id", num);
    }
    ls_ocf_meta_str(w, "format-version", fv >= 3 ? "3" : "2");
    return w;
}

void ls_ice_mlist_add(ls_ocf_t *w, int fv, const ls_ice_mfile_t *m, const ls_ice_spec_t *s,
                      const ls_ice_mentry_t *e, size_t n)
{
    ls_buf_t *b = ls_ocf_datum(w);
    ls_ocf_string(b, m->path);
    ls_ocf_long(b, m->length);
    ls_ocf_long(b, m->spec_id);
    ls_ocf_long(b, m->content);
    ls_ocf_long(b, m->seq);
    ls_ocf_long(b, m->min_seq);
    ls_ocf_long(b, m->added_snapshot_id);
    ls_ocf_long(b, m->added_files);
    ls_ocf_long(b, m->existing_files);
    ls_ocf_long(b, m->deleted_files);
    ls_ocf_long(b, m->added_rows);
    ls_ocf_long(b, m->existing_rows);
    ls_ocf_long(b, m->deleted_rows);
    ls_ocf_union(b, 1);
    ls_ocf_block(b, s->nfields);
    for (int p = 0; p < s->nfields; p++) {
        const ls_ice_part_field_t *f = &s->fields[p];
        ls_ice_type rt = ls_ice_result_type(f);
        const ls_ice_pval_t *lo = NULL, *hi = NULL;
        bool nulls = false, nans = false;
        for (size_t k = 0; k < n; k++) {
            const ls_ice_pval_t *v = &e[k].df.partition[p];
            if (v->null) {
                nulls = true;
                continue;
            }
            if (float_type(rt) && isnan(ls_ice_bits_double(v->l))) {
                nans = true; /* spec: NaN is in no bound, contains_nan says it is there */
                continue;
            }
            if (!lo || part_cmp(rt, v, lo) < 0) lo = v;
            if (!hi || part_cmp(rt, v, hi) > 0) hi = v;
        }
        ls_ocf_bool(b, nulls);
        if (float_type(rt))
            ls_ocf_union(b, 1), ls_ocf_bool(b, nans);
        else
            ls_ocf_union(b, 0); /* contains_nan: not a float */
        uint8_t x[8];
        const uint8_t *q;
        if (lo) { /* bounds: the spec's single-value serialization, whole values */
            size_t len = part_bytes(rt, lo, &q, x);
            ls_ocf_union(b, 1), ls_ocf_bytes(b, q, len);
            len = part_bytes(rt, hi, &q, x);
            ls_ocf_union(b, 1), ls_ocf_bytes(b, q, len);
        } else {
            ls_ocf_union(b, 0), ls_ocf_union(b, 0);
        }
    }
    ls_ocf_end(b);
    ls_ocf_union(b, 0); /* key_metadata */
    if (fv >= 3) enc_opt_long(b, m->has_first_row_id ? m->first_row_id : -1);
    ls_ocf_datum_done(w);
}

static void enc_opt_bytes(ls_buf_t *b, const ls_av_t *v)
{
    if (v && v->kind == LS_AV_BYTES) {
        ls_ocf_union(b, 1);
        ls_ocf_bytes(b, v->p, v->n);
    } else {
        ls_ocf_union(b, 0);
    }
}

void ls_ice_mlist_copy(ls_ocf_t *w, int fv, const ls_av_t *r, int64_t first_row_id)
{
    ls_buf_t *b = ls_ocf_datum(w);
    const ls_av_t *path = ls_av_field(r, "manifest_path");
    ls_ocf_bytes(b, path && path->kind == LS_AV_BYTES ? path->p : (const uint8_t *)"",
                 path && path->kind == LS_AV_BYTES ? path->n : 0);
    ls_ocf_long(b, ls_ice_av_long(r, "manifest_length", NULL, 0));
    ls_ocf_long(b, ls_ice_av_long(r, "partition_spec_id", NULL, 0));
    ls_ocf_long(b, ls_ice_av_long(r, "content", NULL, 0));
    ls_ocf_long(b, ls_ice_av_long(r, "sequence_number", NULL, 0));
    ls_ocf_long(b, ls_ice_av_long(r, "min_sequence_number", NULL, 0));
    ls_ocf_long(b, ls_ice_av_long(r, "added_snapshot_id", NULL, 0));
    ls_ocf_long(b, ls_ice_av_long(r, "added_files_count", "added_data_files_count", 0));
    ls_ocf_long(b, ls_ice_av_long(r, "existing_files_count", "existing_data_files_count", 0));
    ls_ocf_long(b, ls_ice_av_long(r, "deleted_files_count", "deleted_data_files_count", 0));
    ls_ocf_long(b, ls_ice_av_long(r, "added_rows_count", NULL, 0));
    ls_ocf_long(b, ls_ice_av_long(r, "existing_rows_count", NULL, 0));
    ls_ocf_long(b, ls_ice_av_long(r, "deleted_rows_count", NULL, 0));
    const ls_av_t *parts = ls_av_field(r, "partitions");
    if (parts && parts->kind == LS_AV_ARRAY) {
        ls_ocf_union(b, 1);
        ls_ocf_block(b, (int64_t)parts->nitems);
        for (size_t i = 0; i < parts->nitems; i++) {
            const ls_av_t *p = &parts->items[i];
            ls_ocf_bool(b, (int)ls_ice_av_long(p, "contains_null", NULL, 0));
            const ls_av_t *nan = ls_av_field(p, "contains_nan");
            if (nan && nan->kind == LS_AV_BOOL)
                ls_ocf_union(b, 1), ls_ocf_bool(b, (int)nan->l);
            else
                ls_ocf_union(b, 0);
            enc_opt_bytes(b, ls_av_field(p, "lower_bound"));
            enc_opt_bytes(b, ls_av_field(p, "upper_bound"));
        }
        ls_ocf_end(b);
    } else {
        ls_ocf_union(b, 0);
    }
    enc_opt_bytes(b, ls_av_field(r, "key_metadata"));
    if (fv >= 3) enc_opt_long(b, first_row_id);
    ls_ocf_datum_done(w);
}
