/* Parquet reader. See parquet_reader.h for the contract.
 *
 * Open: the footer is decoded with the bounded Thrift reader into the
 * schema (flattened pre-order, levels and dotted paths computed by one walk)
 * and one ls_pqr_chunk_t per (row group, leaf). Thrift writers emit fields
 * in id order, so FileMetaData.schema (2) precedes row_groups (4); a footer
 * that does not is refused, which lets every chunk be checked against its
 * leaf as it is decoded.
 *
 * Iterator: a cursor over the chunk's byte range [start, start + compressed
 * size). Each page header is decoded and bounded by that range; the page is
 * decompressed (kept until the iterator is freed, so byte-array views stay
 * valid) and its levels and dictionary indices are decoded lazily by
 * streaming RLE/bit-packed hybrid decoders (hyb_t), so a page of millions
 * of nulls costs a few bytes, not an array per entry.
 *
 * Thrift field ids below are those of parquet.thrift (FileMetaData,
 * SchemaElement, LogicalType, RowGroup, ColumnChunk, ColumnMetaData,
 * Statistics, PageHeader, DataPageHeader, DataPageHeaderV2,
 * DictionaryPageHeader).
 *
 * The row cursor and the copying of rows into a writer are in
 * parquet_rows.c; the handle they share is in parquet_reader_int.h. */
#include "table/parquet_reader_int.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/compress.h"
#include "table/thrift_compact.h"

enum {
    ENC_PLAIN = 0,
    ENC_PLAIN_DICTIONARY = 2,
    ENC_RLE = 3,
    ENC_BIT_PACKED = 4,
    ENC_RLE_DICTIONARY = 8,
};
enum { PAGE_DATA = 0, PAGE_INDEX = 1, PAGE_DICTIONARY = 2, PAGE_DATA_V2 = 3 };
#define MAX_SCHEMA_DEPTH 64
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "PLAIN values are copied as stored");
#define MAX_PAGE_BYTES ((int64_t)1 << 30)

static const char *encoding_name(int e)
{
    static const char *names[] = {
        "PLAIN",          "GROUP_VAR_INT",       "PLAIN_DICTIONARY",        "RLE",
        "BIT_PACKED",     "DELTA_BINARY_PACKED", "DELTA_LENGTH_BYTE_ARRAY", "DELTA_BYTE_ARRAY",
        "RLE_DICTIONARY", "BYTE_STREAM_SPLIT"};
    return e >= 0 && e < (int)(sizeof names / sizeof *names) ? names[e] : "unknown";
}

static const char *codec_name(int c)
{
    static const char *names[] = {"UNCOMPRESSED", "SNAPPY", "GZIP", "LZO",
                                  "BROTLI",       "LZ4",    "ZSTD", "LZ4_RAW"};
    return c >= 0 && c < (int)(sizeof names / sizeof *names) ? names[c] : "unknown";
}

const char *ls_pqr_type_name(int t)
{
    static const char *names[] = {"BOOLEAN", "INT32",  "INT64",      "INT96",
                                  "FLOAT",   "DOUBLE", "BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY"};
    return t >= 0 && t < (int)(sizeof names / sizeof *names) ? names[t] : "unknown";
}

/* ---- open ------------------------------------------------------------- */

typedef struct open_ctx {
    ls_pqr_t *r;
    ls_tcr_t t;
    ls_status st;
    char *err;
    size_t errlen;
} open_ctx_t;

static void ofail(open_ctx_t *o, ls_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void ofail(open_ctx_t *o, ls_status st, const char *fmt, ...)
{
    if (o->st != LS_OK) return;
    o->st = st;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(o->err, o->errlen, fmt, ap);
    va_end(ap);
    ls_tcr_fail(&o->t, "stopped");
}

static char *own(ls_pqr_t *r, char *s)
{
    r->owned = ls_realloc(r->owned, (r->nowned + 1) * sizeof *r->owned);
    r->owned[r->nowned++] = s;
    return s;
}

static char *tcr_string(ls_tcr_t *t)
{
    const uint8_t *p;
    size_t n;
    ls_tcr_binary(t, &p, &n);
    return ls_strndup((const char *)p, n);
}

/* LogicalType union (the field header was just read). */
static void read_logical(open_ctx_t *o, ls_pqr_elem_t *e)
{
    ls_tcr_t *t = &o->t;
    ls_tcr_struct_begin(t);
    int16_t id;
    int ty;
    while ((ty = ls_tcr_field(t, &id)) != 0) {
        if (ty != LS_TC_STRUCT) {
            ls_tcr_skip(t, ty);
            continue;
        }
        e->logical_id = id;
        if (id != 7 && id != 8) { /* TIME, TIMESTAMP carry a unit */
            ls_tcr_skip(t, ty);
            continue;
        }
        ls_tcr_struct_begin(t);
        int16_t fid;
        int ft;
        while ((ft = ls_tcr_field(t, &fid)) != 0) {
            if (fid == 1 && (ft == LS_TC_BOOL_TRUE || ft == LS_TC_BOOL_FALSE)) {
                e->utc = ft == LS_TC_BOOL_TRUE;
            } else if (fid == 2 && ft == LS_TC_STRUCT) {
                ls_tcr_struct_begin(t);
                int16_t uid;
                int ut;
                while ((ut = ls_tcr_field(t, &uid)) != 0) {
                    if (ut == LS_TC_STRUCT && uid >= 1 && uid <= 3) e->time_unit = uid;
                    ls_tcr_skip(t, ut);
                }
            } else {
                ls_tcr_skip(t, ft);
            }
        }
    }
}

static void map_logical(ls_pqr_elem_t *e)
{
    switch (e->logical_id) {
    case 1: e->logical = LS_PQ_LT_STRING; return;
    case 2: e->logical = LS_PQ_LT_MAP; return;
    case 3: e->logical = LS_PQ_LT_LIST; return;
    case 6: e->logical = LS_PQ_LT_DATE; return;
    case 8:
        if (e->time_unit == 2)
            e->logical = e->utc ? LS_PQ_LT_TIMESTAMP_US_UTC : LS_PQ_LT_TIMESTAMP_US;
        return;
    case 0: break;
    default: return;
    }
    /* legacy ConvertedType: UTF8 0, MAP 1, MAP_KEY_VALUE 2, LIST 3, DATE 6,
     * TIMESTAMP_MICROS 10 (UTC-adjusted by definition) */
    switch (e->converted_type) {
    case 0: e->logical = LS_PQ_LT_STRING; break;
    case 1: e->logical = LS_PQ_LT_MAP; break;
    case 3: e->logical = LS_PQ_LT_LIST; break;
    case 6: e->logical = LS_PQ_LT_DATE; break;
    case 10:
        e->logical = LS_PQ_LT_TIMESTAMP_US_UTC;
        e->time_unit = 2;
        e->utc = 1;
        break;
    default: break;
    }
}

static void read_schema_elem(open_ctx_t *o, ls_pqr_elem_t *e)
{
    ls_tcr_t *t = &o->t;
    memset(e, 0, sizeof *e);
    e->type = LS_PQ_GROUP;
    e->repetition = (ls_pq_repetition)-1;
    e->converted_type = -1;
    e->field_id = -1;
    e->nchildren = -1;
    e->column = -1;
    e->name = "";
    ls_tcr_struct_begin(t);
    int16_t id;
    int ty;
    while ((ty = ls_tcr_field(t, &id)) != 0) {
        if (id == 1 && ty == LS_TC_I32)
            e->type = ls_tcr_i32(t);
        else if (id == 2 && ty == LS_TC_I32)
            e->type_length = ls_tcr_i32(t);
        else if (id == 3 && ty == LS_TC_I32)
            e->repetition = (ls_pq_repetition)ls_tcr_i32(t);
        else if (id == 4 && ty == LS_TC_BINARY)
            e->name = own(o->r, tcr_string(t));
        else if (id == 5 && ty == LS_TC_I32)
            e->nchildren = ls_tcr_i32(t);
        else if (id == 6 && ty == LS_TC_I32)
            e->converted_type = ls_tcr_i32(t);
        else if (id == 9 && ty == LS_TC_I32)
            e->field_id = ls_tcr_i32(t);
        else if (id == 10 && ty == LS_TC_STRUCT)
            read_logical(o, e);
        else
            ls_tcr_skip(t, ty);
    }
    map_logical(e);
}

/* Pre-order walk from elems[*i]: levels, paths, leaves. */
static void walk(open_ctx_t *o, size_t *i, int def, int rep, const char *prefix, int depth)
{
    ls_pqr_t *r = o->r;
    if (o->st != LS_OK) return;
    if (*i >= r->nelems) {
        ofail(o, LS_ECORRUPT, "parquet schema: group children run past the %zu elements",
              r->nelems);
        return;
    }
    if (depth > MAX_SCHEMA_DEPTH) {
        ofail(o, LS_ECORRUPT, "parquet schema: nested deeper than %d", MAX_SCHEMA_DEPTH);
        return;
    }
    size_t at = (*i)++;
    ls_pqr_elem_t *e = &r->elems[at];
    if (at > 0) {
        if (e->repetition == LS_PQ_OPTIONAL)
            def++;
        else if (e->repetition == LS_PQ_REPEATED)
            def++, rep++;
        else if (e->repetition != LS_PQ_REQUIRED) {
            ofail(o, LS_ECORRUPT, "parquet schema: element %s has no valid repetition_type",
                  e->name);
            return;
        }
    }
    e->max_def = def;
    e->max_rep = rep;
    e->path = at == 0
                  ? ""
                  : own(r, prefix[0] ? ls_asprintf("%s.%s", prefix, e->name) : ls_strdup(e->name));
    if (e->nchildren > 0 || at == 0) {
        if (e->nchildren <= 0) {
            ofail(o, LS_ECORRUPT, "parquet schema: root has no children");
            return;
        }
        e->type = LS_PQ_GROUP;
        for (int c = 0; c < e->nchildren && o->st == LS_OK; c++)
            walk(o, i, def, rep, e->path, depth + 1);
        return;
    }
    if (e->type < LS_PQ_BOOLEAN || e->type > LS_PQR_FIXED_LEN_BYTE_ARRAY) {
        ofail(o, LS_ECORRUPT, "parquet schema: element %s is neither a group nor a leaf type",
              e->path);
        return;
    }
    if (e->type == LS_PQR_FIXED_LEN_BYTE_ARRAY && e->type_length <= 0) {
        ofail(o, LS_ECORRUPT, "parquet schema: FIXED_LEN_BYTE_ARRAY %s has type_length %d", e->path,
              e->type_length);
        return;
    }
    e->nchildren = 0;
    e->column = (int)r->ncols;
    r->cols = ls_realloc(r->cols, (r->ncols + 1) * sizeof *r->cols);
    r->cols[r->ncols++] = (int)at;
}

static void read_schema(open_ctx_t *o)
{
    ls_pqr_t *r = o->r;
    int elem;
    uint32_t n = ls_tcr_list(&o->t, &elem);
    if (ls_tcr_failed(&o->t)) return;
    if (elem != LS_TC_STRUCT || n == 0 || r->nelems) {
        ofail(o, LS_ECORRUPT, "parquet footer: malformed schema list");
        return;
    }
    r->elems = LS_NEWN(ls_pqr_elem_t, n);
    for (uint32_t k = 0; k < n && !ls_tcr_failed(&o->t); k++) {
        read_schema_elem(o, &r->elems[k]);
        r->nelems = k + 1;
    }
    if (ls_tcr_failed(&o->t)) return;
    size_t i = 0;
    walk(o, &i, 0, 0, "", 0);
    if (o->st == LS_OK && i != r->nelems)
        ofail(o, LS_ECORRUPT, "parquet schema: %zu elements after the root's subtree",
              r->nelems - i);
}

static void read_stats(open_ctx_t *o, ls_pqr_stats_t *s)
{
    ls_tcr_t *t = &o->t;
    ls_tcr_struct_begin(t);
    int16_t id;
    int ty;
    while ((ty = ls_tcr_field(t, &id)) != 0) {
        if (id == 3 && ty == LS_TC_I64) {
            s->null_count = ls_tcr_i64(t);
            s->has_null_count = 1;
        } else if (id == 5 && ty == LS_TC_BINARY) {
            ls_tcr_binary(t, &s->max, &s->max_len);
            s->has_max = 1;
        } else if (id == 6 && ty == LS_TC_BINARY) {
            ls_tcr_binary(t, &s->min, &s->min_len);
            s->has_min = 1;
        } else {
            ls_tcr_skip(t, ty);
        }
    }
}

/* ColumnMetaData of chunk `col` of row group `rg`. */
static void read_column_meta(open_ctx_t *o, int rg, int col, ls_pqr_chunk_t *c)
{
    ls_pqr_t *r = o->r;
    ls_tcr_t *t = &o->t;
    const ls_pqr_elem_t *leaf = &r->elems[r->cols[col]];
    int type = -1, has_codec = 0, has_path = 0, has_nv = 0, has_size = 0, has_data = 0;
    int64_t dict_off = 0;
    ls_buf_t path;
    ls_buf_init(&path);
    ls_tcr_struct_begin(t);
    int16_t id;
    int ty;
    while ((ty = ls_tcr_field(t, &id)) != 0) {
        if (id == 1 && ty == LS_TC_I32) {
            type = ls_tcr_i32(t);
        } else if (id == 3 && ty == LS_TC_LIST) {
            int elem;
            uint32_t n = ls_tcr_list(t, &elem);
            if (elem != LS_TC_BINARY) n = 0, ls_tcr_fail(t, "path_in_schema is not a string list");
            for (uint32_t k = 0; k < n && !ls_tcr_failed(t); k++) {
                const uint8_t *p;
                size_t len;
                ls_tcr_binary(t, &p, &len);
                if (k) ls_buf_append_u8(&path, '.');
                ls_buf_append(&path, p, len);
            }
            has_path = 1;
        } else if (id == 4 && ty == LS_TC_I32) {
            c->codec = ls_tcr_i32(t);
            has_codec = 1;
        } else if (id == 5 && ty == LS_TC_I64) {
            c->num_values = ls_tcr_i64(t);
            has_nv = 1;
        } else if (id == 6 && ty == LS_TC_I64) {
            c->uncompressed_bytes = ls_tcr_i64(t);
        } else if (id == 7 && ty == LS_TC_I64) {
            c->compressed_bytes = ls_tcr_i64(t);
            has_size = 1;
        } else if (id == 9 && ty == LS_TC_I64) {
            c->data_page_offset = ls_tcr_i64(t);
            has_data = 1;
        } else if (id == 11 && ty == LS_TC_I64) {
            dict_off = ls_tcr_i64(t);
        } else if (id == 12 && ty == LS_TC_STRUCT) {
            read_stats(o, &c->stats);
        } else {
            ls_tcr_skip(t, ty);
        }
    }
    if (ls_tcr_failed(t)) goto out;
    if (!has_codec || !has_path || !has_nv || !has_size || !has_data || type < 0) {
        ofail(o, LS_ECORRUPT, "parquet footer: row group %d column %s: required metadata missing",
              rg, leaf->path);
        goto out;
    }
    if (type != leaf->type || path.len != strlen(leaf->path) ||
        memcmp(path.data, leaf->path, path.len) != 0) {
        ofail(
            o, LS_ECORRUPT,
            "parquet footer: row group %d chunk %d (%.*s, %s) does not match schema column %s (%s)",
            rg, col, (int)path.len, path.len ? (const char *)path.data : "", ls_pqr_type_name(type),
            leaf->path, ls_pqr_type_name(leaf->type));
        goto out;
    }
    c->start = c->data_page_offset;
    if (dict_off > 0 && dict_off < c->data_page_offset) c->start = dict_off;
    if (c->num_values < 0 || c->compressed_bytes <= 0 || c->start < 4 ||
        c->start > (int64_t)r->footer_at ||
        c->compressed_bytes > (int64_t)r->footer_at - c->start ||
        c->data_page_offset >= c->start + c->compressed_bytes) {
        ofail(o, LS_ECORRUPT,
              "parquet footer: row group %d column %s: byte range %lld+%lld or %lld values "
              "outside the file",
              rg, leaf->path, (long long)c->start, (long long)c->compressed_bytes,
              (long long)c->num_values);
    }
out:
    ls_buf_free(&path);
}

static void read_row_group(open_ctx_t *o, int rg)
{
    ls_pqr_t *r = o->r;
    ls_tcr_t *t = &o->t;
    int nchunks = -1, has_rows = 0;
    ls_tcr_struct_begin(t);
    int16_t id;
    int ty;
    while ((ty = ls_tcr_field(t, &id)) != 0) {
        if (id == 1 && ty == LS_TC_LIST) {
            int elem;
            uint32_t n = ls_tcr_list(t, &elem);
            if (ls_tcr_failed(t)) return;
            if (elem != LS_TC_STRUCT || n != r->ncols || nchunks >= 0) {
                ofail(o, LS_ECORRUPT, "parquet footer: row group %d has %u column chunks, not %zu",
                      rg, n, r->ncols);
                return;
            }
            for (uint32_t k = 0; k < n && !ls_tcr_failed(t); k++) {
                ls_pqr_chunk_t *c = &r->chunks[(size_t)rg * r->ncols + k];
                int has_meta = 0;
                ls_tcr_struct_begin(t); /* ColumnChunk */
                int16_t cid;
                int ct;
                while ((ct = ls_tcr_field(t, &cid)) != 0) {
                    if (cid == 1 && ct == LS_TC_BINARY) {
                        ofail(o, LS_EINVAL,
                              "parquet: column chunks stored in other files (file_path) are not "
                              "supported");
                    } else if ((cid == 8 || cid == 9) && ct == LS_TC_STRUCT) {
                        ofail(o, LS_EINVAL, "parquet: encrypted columns are not supported");
                    } else if (cid == 3 && ct == LS_TC_STRUCT && !has_meta) {
                        read_column_meta(o, rg, (int)k, c);
                        has_meta = 1;
                    } else {
                        ls_tcr_skip(t, ct);
                    }
                }
                if (!has_meta && !ls_tcr_failed(t))
                    ofail(o, LS_ECORRUPT, "parquet footer: row group %d column %u has no metadata",
                          rg, k);
            }
            nchunks = (int)n;
        } else if (id == 3 && ty == LS_TC_I64) {
            r->rg_rows[rg] = ls_tcr_i64(t);
            has_rows = 1;
        } else {
            ls_tcr_skip(t, ty);
        }
    }
    if (ls_tcr_failed(t)) return;
    if (nchunks < 0 || !has_rows || r->rg_rows[rg] < 0)
        ofail(o, LS_ECORRUPT, "parquet footer: row group %d lacks its columns or row count", rg);
}

static void read_row_groups(open_ctx_t *o)
{
    ls_pqr_t *r = o->r;
    int elem;
    if (!r->nelems) {
        ofail(o, LS_ECORRUPT, "parquet footer: row groups before the schema");
        return;
    }
    uint32_t n = ls_tcr_list(&o->t, &elem);
    if (ls_tcr_failed(&o->t)) return;
    if ((n && elem != LS_TC_STRUCT) || r->rg_rows || n > INT32_MAX) {
        ofail(o, LS_ECORRUPT, "parquet footer: malformed row group list");
        return;
    }
    r->rg_rows = LS_NEWN(int64_t, n ? n : 1);
    r->chunks = LS_NEWN(ls_pqr_chunk_t, (size_t)(n ? n : 1) * r->ncols);
    for (uint32_t k = 0; k < n && !ls_tcr_failed(&o->t); k++) {
        read_row_group(o, (int)k);
        r->nrgs = (int)k + 1;
    }
}

static void read_kv(open_ctx_t *o)
{
    ls_pqr_t *r = o->r;
    ls_tcr_t *t = &o->t;
    int elem;
    uint32_t n = ls_tcr_list(t, &elem);
    if (n && elem != LS_TC_STRUCT) ls_tcr_fail(t, "key_value_metadata is not a struct list");
    for (uint32_t k = 0; k < n && !ls_tcr_failed(t); k++) {
        char *key = NULL, *val = NULL;
        ls_tcr_struct_begin(t);
        int16_t id;
        int ty;
        while ((ty = ls_tcr_field(t, &id)) != 0) {
            if (id == 1 && ty == LS_TC_BINARY && !key)
                key = tcr_string(t);
            else if (id == 2 && ty == LS_TC_BINARY && !val)
                val = tcr_string(t);
            else
                ls_tcr_skip(t, ty);
        }
        if (!key) key = ls_strdup("");
        r->kv = ls_realloc(r->kv, (r->nkv + 1) * 2 * sizeof *r->kv);
        r->kv[2 * r->nkv] = key;
        r->kv[2 * r->nkv + 1] = val;
        r->nkv++;
    }
}

ls_pqr_t *ls_pqr_open(const uint8_t *data, size_t len, ls_status *st, char *err, size_t errlen)
{
    open_ctx_t o = {.st = LS_OK, .err = err, .errlen = errlen};
    if (errlen) err[0] = 0;
    ls_tcr_init(&o.t, data, 0);
    ls_pqr_t *r = LS_NEW(ls_pqr_t);
    o.r = r;
    r->data = data;
    r->len = len;
    if (len < 12 || memcmp(data, "PAR1", 4) != 0) {
        ofail(&o, LS_ECORRUPT, "parquet: %zu bytes, no leading PAR1 magic", len);
        goto done;
    }
    if (!memcmp(data + len - 4, "PARE", 4)) {
        ofail(&o, LS_EINVAL, "parquet: encrypted footers (PARE) are not supported");
        goto done;
    }
    if (memcmp(data + len - 4, "PAR1", 4) != 0) {
        ofail(&o, LS_ECORRUPT, "parquet: no trailing PAR1 magic (truncated file?)");
        goto done;
    }
    const uint8_t *lp = data + len - 8;
    uint32_t flen =
        (uint32_t)lp[0] | (uint32_t)lp[1] << 8 | (uint32_t)lp[2] << 16 | (uint32_t)lp[3] << 24;
    if (flen > len - 12) {
        ofail(&o, LS_ECORRUPT, "parquet: footer length %u exceeds the %zu-byte file", flen, len);
        goto done;
    }
    r->footer_at = len - 8 - flen;
    ls_tcr_init(&o.t, data + r->footer_at, flen);
    int16_t id;
    int ty, has_rows = 0;
    while ((ty = ls_tcr_field(&o.t, &id)) != 0) {
        if (id == 2 && ty == LS_TC_LIST) {
            read_schema(&o);
        } else if (id == 3 && ty == LS_TC_I64) {
            r->num_rows = ls_tcr_i64(&o.t);
            has_rows = 1;
        } else if (id == 4 && ty == LS_TC_LIST) {
            read_row_groups(&o);
        } else if (id == 5 && ty == LS_TC_LIST) {
            read_kv(&o);
        } else if (id == 6 && ty == LS_TC_BINARY && !r->created_by) {
            r->created_by = tcr_string(&o.t);
        } else if (id == 8 && ty == LS_TC_STRUCT) {
            ofail(&o, LS_EINVAL, "parquet: encrypted files are not supported");
        } else {
            ls_tcr_skip(&o.t, ty);
        }
    }
    if (o.st != LS_OK) goto done;
    if (ls_tcr_failed(&o.t)) {
        ofail(&o, LS_ECORRUPT, "parquet footer (at byte %zu): %s", r->footer_at, o.t.err);
        goto done;
    }
    if (!r->nelems || !has_rows || !r->rg_rows) {
        ofail(&o, LS_ECORRUPT, "parquet footer: schema, num_rows or row_groups missing");
        goto done;
    }
    int64_t sum = 0;
    for (int g = 0; g < r->nrgs && o.st == LS_OK; g++) {
        if (r->rg_rows[g] > INT64_MAX - sum) {
            ofail(&o, LS_ECORRUPT, "parquet footer: row counts overflow");
            break;
        }
        sum += r->rg_rows[g];
        /* without repetition, a column has exactly one entry per row */
        for (size_t c = 0; c < r->ncols && o.st == LS_OK; c++) {
            const ls_pqr_chunk_t *k = &r->chunks[(size_t)g * r->ncols + c];
            const ls_pqr_elem_t *e = &r->elems[r->cols[c]];
            if (!e->max_rep && k->num_values != r->rg_rows[g])
                ofail(&o, LS_ECORRUPT,
                      "parquet footer: row group %d column %s has %lld values for %lld rows", g,
                      e->path, (long long)k->num_values, (long long)r->rg_rows[g]);
        }
    }
    if (o.st == LS_OK && sum != r->num_rows)
        ofail(&o, LS_ECORRUPT, "parquet footer: num_rows %lld but row groups hold %lld",
              (long long)r->num_rows, (long long)sum);
done:
    if (o.st != LS_OK) {
        *st = o.st;
        ls_pqr_free(r);
        return NULL;
    }
    *st = LS_OK;
    return r;
}

void ls_pqr_free(ls_pqr_t *r)
{
    if (!r) return;
    for (size_t i = 0; i < r->nowned; i++)
        ls_free(r->owned[i]);
    ls_free(r->owned);
    for (size_t i = 0; i < 2 * r->nkv; i++)
        ls_free(r->kv[i]);
    ls_free(r->kv);
    ls_free(r->created_by);
    ls_free(r->elems);
    ls_free(r->cols);
    ls_free(r->rg_rows);
    ls_free(r->chunks);
    ls_free(r);
}

int64_t ls_pqr_num_rows(const ls_pqr_t *r) { return r->num_rows; }
const char *ls_pqr_created_by(const ls_pqr_t *r) { return r->created_by ? r->created_by : ""; }
size_t ls_pqr_num_kv(const ls_pqr_t *r) { return r->nkv; }
void ls_pqr_kv(const ls_pqr_t *r, size_t i, const char **key, const char **value)
{
    *key = r->kv[2 * i];
    *value = r->kv[2 * i + 1];
}
size_t ls_pqr_num_elems(const ls_pqr_t *r) { return r->nelems; }
const ls_pqr_elem_t *ls_pqr_elem(const ls_pqr_t *r, size_t i)
{
    return i < r->nelems ? &r->elems[i] : NULL;
}
size_t ls_pqr_num_columns(const ls_pqr_t *r) { return r->ncols; }
const ls_pqr_elem_t *ls_pqr_column(const ls_pqr_t *r, int col)
{
    return col >= 0 && (size_t)col < r->ncols ? &r->elems[r->cols[col]] : NULL;
}
int ls_pqr_column_index(const ls_pqr_t *r, const char *path)
{
    for (size_t i = 0; i < r->ncols; i++)
        if (!strcmp(r->elems[r->cols[i]].path, path)) return (int)i;
    return -1;
}
int ls_pqr_num_row_groups(const ls_pqr_t *r) { return r->nrgs; }
int64_t ls_pqr_rg_num_rows(const ls_pqr_t *r, int rg)
{
    return rg >= 0 && rg < r->nrgs ? r->rg_rows[rg] : -1;
}
const ls_pqr_chunk_t *ls_pqr_chunk(const ls_pqr_t *r, int rg, int col)
{
    if (rg < 0 || rg >= r->nrgs || col < 0 || (size_t)col >= r->ncols) return NULL;
    return &r->chunks[(size_t)rg * r->ncols + (size_t)col];
}

/* ---- RLE / bit-packed hybrid, streaming (Encodings.md) ------------------ */

typedef struct hyb {
    const uint8_t *p, *end; /* runs not yet started */
    int bw;
    uint32_t max;      /* largest valid value */
    uint64_t rle_left; /* values left in the current RLE run */
    uint32_t rle_val;
    const uint8_t *bp; /* current bit-packed run */
    uint64_t bp_left, bp_i;
} hyb_t;

static void hyb_init(hyb_t *h, const uint8_t *p, size_t n, int bw, uint32_t max)
{
    memset(h, 0, sizeof *h);
    h->p = p;
    h->end = p + n;
    h->bw = bw;
    h->max = max;
}

/* Starts the next run; -1 when the data ends or is malformed. */
static int hyb_run(hyb_t *h)
{
    uint64_t hdr = 0;
    for (int shift = 0;; shift += 7) {
        if (h->p >= h->end || shift > 56) return -1;
        uint8_t b = *h->p++;
        hdr |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) break;
    }
    if (hdr & 1) { /* bit-packed: (hdr >> 1) groups of 8 values */
        uint64_t groups = hdr >> 1;
        size_t avail = (size_t)(h->end - h->p);
        if (!groups) return -1;
        h->bp = h->p;
        h->bp_i = 0;
        if (h->bw == 0) {
            h->bp_left = (groups > ((uint64_t)1 << 56) ? (uint64_t)1 << 56 : groups) * 8;
            return 0;
        }
        /* a short last run (truncated padding) still yields its whole values */
        uint64_t bytes = groups > avail ? avail : groups * (uint64_t)h->bw;
        if (bytes > avail) bytes = avail;
        h->bp_left = bytes * 8 / (uint64_t)h->bw;
        if (h->bp_left > groups * 8) h->bp_left = groups * 8;
        h->p += bytes;
        return h->bp_left ? 0 : -1;
    }
    uint64_t run = hdr >> 1;
    int vbytes = (h->bw + 7) / 8;
    if (!run || (size_t)(h->end - h->p) < (size_t)vbytes) return -1;
    uint32_t v = 0;
    for (int b = 0; b < vbytes; b++)
        v |= (uint32_t)h->p[b] << (8 * b);
    h->p += vbytes;
    h->rle_val = v;
    h->rle_left = run;
    return 0;
}

static inline int hyb_next(hyb_t *h, uint32_t *out)
{
    if (!h->rle_left && !h->bp_left && hyb_run(h) < 0) return -1;
    uint32_t v;
    if (h->rle_left) {
        h->rle_left--;
        v = h->rle_val;
    } else {
        uint64_t bit = h->bp_i * (uint64_t)h->bw;
        const uint8_t *q = h->bp + bit / 8;
        int sh = (int)(bit % 8);
        int need = (sh + h->bw + 7) / 8; /* bytes covering the value, <= 5 */
        uint64_t acc = 0;
        for (int k = 0; k < need; k++)
            acc |= (uint64_t)q[k] << (8 * k);
        v = h->bw ? (uint32_t)((acc >> sh) & ((1ull << h->bw) - 1)) : 0;
        h->bp_i++;
        h->bp_left--;
    }
    if (v > h->max) return -1;
    *out = v;
    return 0;
}

/* ---- chunk iterator --------------------------------------------------- */

struct ls_pqr_iter {
    ls_pqr_t *r;
    int rg, col, type, max_def, max_rep;
    int width;    /* fixed-size values: bytes each; 0 for BOOLEAN, BYTE_ARRAY */
    int as_bytes; /* INT96, FIXED_LEN_BYTE_ARRAY: values are byte views */
    const char *path;
    int codec;                /* ls_compress codec id */
    const uint8_t *pos, *end; /* next page header, chunk end */
    int64_t left;             /* triples not yet emitted in the chunk */
    int64_t page_left;        /* triples left in the current page */
    int seen_data, started;
    /* dictionary */
    int has_dict;
    uint32_t ndict;
    const uint8_t *dict_fixed; /* fixed-width values */
    const uint8_t **dict_ptr;  /* byte arrays */
    uint32_t *dict_len;
    /* current page */
    hyb_t rep, def;
    int enc; /* ENC_PLAIN, ENC_RLE (booleans), ENC_RLE_DICTIONARY */
    const uint8_t *vp, *vend;
    uint64_t bit; /* PLAIN booleans: next bit */
    hyb_t vals;   /* dictionary indices or RLE booleans */
    uint8_t **bufs;
    size_t nbufs;
    /* ls_pqr_iter_recycle: data pages decompress into two buffers in turn */
    int recycle, ring_at;
    uint8_t *ring[2];
    size_t ring_cap[2];
    ls_status st;
    char err[256];
};

static int ifail(ls_pqr_iter_t *it, ls_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int ifail(ls_pqr_iter_t *it, ls_status st, const char *fmt, ...)
{
    if (it->st != LS_OK) return -1;
    it->st = st;
    int n =
        snprintf(it->err, sizeof it->err, "parquet column %s, row group %d: ", it->path, it->rg);
    if (n < 0 || (size_t)n >= sizeof it->err) return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(it->err + n, sizeof it->err - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}

static int fixed_width(int type, int type_length)
{
    switch (type) {
    case LS_PQ_INT32:
    case LS_PQ_FLOAT: return 4;
    case LS_PQ_INT64:
    case LS_PQ_DOUBLE: return 8;
    case LS_PQR_INT96: return 12;
    case LS_PQR_FIXED_LEN_BYTE_ARRAY: return type_length;
    default: return 0;
    }
}

ls_pqr_iter_t *ls_pqr_iter_new(ls_pqr_t *r, int rg, int col, ls_status *st, char *err,
                               size_t errlen)
{
    const ls_pqr_chunk_t *c = ls_pqr_chunk(r, rg, col);
    if (!c) {
        *st = LS_EINVAL;
        snprintf(err, errlen, "parquet: no column chunk %d in row group %d", col, rg);
        return NULL;
    }
    const ls_pqr_elem_t *e = ls_pqr_column(r, col);
    if (ls_pq_codec_to_base(c->codec) < 0) {
        *st = LS_EINVAL;
        snprintf(err, errlen, "parquet column %s, row group %d: codec %s (%d) is not supported",
                 e->path, rg, codec_name(c->codec), c->codec);
        return NULL;
    }
    ls_pqr_iter_t *it = LS_NEW(ls_pqr_iter_t);
    it->r = r;
    it->rg = rg;
    it->col = col;
    it->type = e->type;
    it->width = fixed_width(e->type, e->type_length);
    it->as_bytes = e->type == LS_PQR_INT96 || e->type == LS_PQR_FIXED_LEN_BYTE_ARRAY;
    it->max_def = e->max_def;
    it->max_rep = e->max_rep;
    it->path = e->path;
    it->codec = ls_pq_codec_to_base(c->codec);
    it->pos = r->data + c->start;
    it->end = it->pos + c->compressed_bytes;
    it->left = c->num_values;
    it->st = LS_OK;
    *st = LS_OK;
    return it;
}

void ls_pqr_iter_free(ls_pqr_iter_t *it)
{
    if (!it) return;
    for (size_t i = 0; i < it->nbufs; i++)
        ls_free(it->bufs[i]);
    ls_free(it->bufs);
    ls_free(it->ring[0]);
    ls_free(it->ring[1]);
    ls_free(it->dict_ptr);
    ls_free(it->dict_len);
    ls_free(it);
}

ls_status ls_pqr_iter_status(const ls_pqr_iter_t *it) { return it->st; }
const char *ls_pqr_iter_error(const ls_pqr_iter_t *it) { return it->err; }

void ls_pqr_iter_recycle(ls_pqr_iter_t *it) { it->recycle = 1; }

/* Decompresses in[0..n) to exactly usize bytes; *out is a view of in when
 * uncompressed, else a buffer the iterator keeps (keep: a dictionary page),
 * or in recycle mode the older of the two ring buffers. One pass straight
 * into the buffer (ls_decompress_exact): no growing, no second copy. */
static int inflate_page(ls_pqr_iter_t *it, int codec, const uint8_t *in, size_t n, int64_t usize,
                        const uint8_t **out, size_t at, bool keep)
{
    if (usize < 0 || usize > MAX_PAGE_BYTES)
        return ifail(it, LS_ECORRUPT, "page at byte %zu: uncompressed size %lld out of range", at,
                     (long long)usize);
    if (codec == LS_CODEC_NONE) {
        if ((int64_t)n != usize)
            return ifail(it, LS_ECORRUPT,
                         "page at byte %zu: stored %zu bytes but uncompressed size %lld", at, n,
                         (long long)usize);
        *out = in;
        return 0;
    }
    uint8_t *p;
    if (it->recycle && !keep) {
        int k = it->ring_at ^= 1;
        if (it->ring_cap[k] < (size_t)usize || !it->ring[k]) {
            ls_free(it->ring[k]); /* contents need not survive: no realloc copy */
            it->ring_cap[k] = (size_t)usize;
            it->ring[k] = ls_malloc(usize ? (size_t)usize : 1);
        }
        p = it->ring[k];
    } else {
        p = ls_malloc(usize ? (size_t)usize : 1); /* an empty page: a distinct pointer */
        it->bufs = ls_realloc(it->bufs, (it->nbufs + 1) * sizeof *it->bufs);
        it->bufs[it->nbufs++] = p;
    }
    if (ls_decompress_exact(codec, in, n, p, (size_t)usize) != LS_OK)
        return ifail(it, LS_ECORRUPT,
                     "page at byte %zu: %s data does not decompress to the %lld bytes announced",
                     at, ls_codec_name(codec), (long long)usize);
    *out = p;
    return 0;
}

static int bit_width(uint32_t max)
{
    int b = 0;
    while (max)
        b++, max >>= 1;
    return b;
}

static int load_dict(ls_pqr_iter_t *it, const uint8_t *p, size_t n, int64_t count, int enc,
                     size_t at)
{
    if (it->has_dict || it->seen_data)
        return ifail(it, LS_ECORRUPT, "dictionary page at byte %zu is not the chunk's first page",
                     at);
    if (enc != ENC_PLAIN && enc != ENC_PLAIN_DICTIONARY)
        return ifail(it, LS_EINVAL, "dictionary page encoding %s (%d) is not supported",
                     encoding_name(enc), enc);
    if (it->type == LS_PQ_BOOLEAN)
        return ifail(it, LS_EINVAL, "BOOLEAN dictionary pages are not supported");
    int w = it->width;
    if (count < 0 || (w && (uint64_t)count * (uint64_t)w > n) || (!w && (uint64_t)count > n / 4))
        return ifail(it, LS_ECORRUPT, "dictionary page at byte %zu: %lld values in %zu bytes", at,
                     (long long)count, n);
    it->ndict = (uint32_t)count;
    it->has_dict = 1;
    if (w) {
        it->dict_fixed = p;
        return 0;
    }
    it->dict_ptr = LS_NEWN(const uint8_t *, count ? (size_t)count : 1);
    it->dict_len = LS_NEWN(uint32_t, count ? (size_t)count : 1);
    const uint8_t *q = p, *end = p + n;
    for (int64_t i = 0; i < count; i++) {
        if (end - q < 4)
            return ifail(it, LS_ECORRUPT, "dictionary page at byte %zu: truncated entry %lld", at,
                         (long long)i);
        uint32_t len =
            (uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 | (uint32_t)q[3] << 24;
        q += 4;
        if (len > (size_t)(end - q))
            return ifail(it, LS_ECORRUPT,
                         "dictionary page at byte %zu: entry %lld runs past the page", at,
                         (long long)i);
        it->dict_ptr[i] = q;
        it->dict_len[i] = len;
        q += len;
    }
    return 0;
}

/* v1 levels: u32 LE length + hybrid. */
static int levels_v1(ls_pqr_iter_t *it, hyb_t *h, const uint8_t **p, const uint8_t *end, int max,
                     int enc, const char *which, size_t at)
{
    if (enc != ENC_RLE)
        return ifail(it, LS_EINVAL, "%s level encoding %s (%d) is not supported", which,
                     encoding_name(enc), enc);
    if (end - *p < 4)
        return ifail(it, LS_ECORRUPT, "page at byte %zu: truncated %s levels", at, which);
    const uint8_t *q = *p;
    uint32_t len =
        (uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 | (uint32_t)q[3] << 24;
    q += 4;
    if (len > (size_t)(end - q))
        return ifail(it, LS_ECORRUPT, "page at byte %zu: %s levels run past the page", at, which);
    hyb_init(h, q, len, bit_width((uint32_t)max), (uint32_t)max);
    *p = q + len;
    return 0;
}

/* Values section of a data page. */
static int start_values(ls_pqr_iter_t *it, int enc, const uint8_t *p, const uint8_t *end, size_t at)
{
    it->enc = enc;
    it->vp = p;
    it->vend = end;
    it->bit = 0;
    if (enc == ENC_PLAIN) return 0;
    if (enc == ENC_PLAIN_DICTIONARY || enc == ENC_RLE_DICTIONARY) {
        if (!it->has_dict)
            return ifail(it, LS_ECORRUPT,
                         "page at byte %zu: dictionary-encoded without a dictionary", at);
        if (p >= end) {
            if (!it->page_left || it->max_def) { /* all nulls: no indices needed */
                hyb_init(&it->vals, p, 0, 0, 0);
                it->enc = ENC_RLE_DICTIONARY;
                return 0;
            }
            return ifail(it, LS_ECORRUPT, "page at byte %zu: no index bit width", at);
        }
        int bw = *p++;
        if (bw > 32) return ifail(it, LS_ECORRUPT, "page at byte %zu: index bit width %d", at, bw);
        hyb_init(&it->vals, p, (size_t)(end - p), bw, it->ndict ? it->ndict - 1 : 0);
        it->enc = ENC_RLE_DICTIONARY;
        return 0;
    }
    if (enc == ENC_RLE && it->type == LS_PQ_BOOLEAN) {
        if (end - p < 4)
            return ifail(it, LS_ECORRUPT, "page at byte %zu: truncated RLE values", at);
        uint32_t len =
            (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
        p += 4;
        if (len > (size_t)(end - p))
            return ifail(it, LS_ECORRUPT, "page at byte %zu: RLE values run past the page", at);
        hyb_init(&it->vals, p, len, 1, 1);
        return 0;
    }
    return ifail(it, LS_EINVAL, "value encoding %s (%d) is not supported for %s",
                 encoding_name(enc), enc, ls_pqr_type_name(it->type));
}

typedef struct page_hdr {
    int type;
    int64_t usize, csize;
    int has_crc;
    uint32_t crc;
    int has_sub;
    int64_t num_values;
    int encoding, def_enc, rep_enc;
    int64_t def_len, rep_len;
    int is_compressed;
} page_hdr_t;

static void read_sub(ls_tcr_t *t, page_hdr_t *h)
{
    ls_tcr_struct_begin(t);
    h->has_sub = 1;
    int16_t id;
    int ty;
    while ((ty = ls_tcr_field(t, &id)) != 0) {
        if (ty == LS_TC_I32 && id == 1)
            h->num_values = ls_tcr_i32(t);
        else if (ty == LS_TC_I32 && id == 2 && h->type != PAGE_DATA_V2)
            h->encoding = ls_tcr_i32(t);
        else if (ty == LS_TC_I32 && id == 3 && h->type == PAGE_DATA)
            h->def_enc = ls_tcr_i32(t);
        else if (ty == LS_TC_I32 && id == 4 && h->type == PAGE_DATA)
            h->rep_enc = ls_tcr_i32(t);
        else if (ty == LS_TC_I32 && id == 4 && h->type == PAGE_DATA_V2)
            h->encoding = ls_tcr_i32(t);
        else if (ty == LS_TC_I32 && id == 5 && h->type == PAGE_DATA_V2)
            h->def_len = ls_tcr_i32(t);
        else if (ty == LS_TC_I32 && id == 6 && h->type == PAGE_DATA_V2)
            h->rep_len = ls_tcr_i32(t);
        else if ((ty == LS_TC_BOOL_TRUE || ty == LS_TC_BOOL_FALSE) && id == 7 &&
                 h->type == PAGE_DATA_V2)
            h->is_compressed = ty == LS_TC_BOOL_TRUE;
        else
            ls_tcr_skip(t, ty);
    }
}

/* Decodes the page header at it->pos, bounded by the chunk: *body is the
 * page as stored (h->csize bytes). 0, or -1 on error. */
static int page_header(ls_pqr_iter_t *it, page_hdr_t *h, const uint8_t **body)
{
    size_t at = (size_t)(it->pos - it->r->data);
    if (it->pos >= it->end)
        return ifail(it, LS_ECORRUPT, "chunk ends at byte %zu with %lld values missing", at,
                     (long long)it->left);
    ls_tcr_t t;
    ls_tcr_init(&t, it->pos, (size_t)(it->end - it->pos));
    *h = (page_hdr_t){.type = -1,
                      .usize = -1,
                      .csize = -1,
                      .is_compressed = 1,
                      .encoding = -1,
                      .def_enc = ENC_RLE,
                      .rep_enc = ENC_RLE};
    int16_t id;
    int ty;
    while ((ty = ls_tcr_field(&t, &id)) != 0) {
        if (id == 1 && ty == LS_TC_I32)
            h->type = ls_tcr_i32(&t);
        else if (id == 2 && ty == LS_TC_I32)
            h->usize = ls_tcr_i32(&t);
        else if (id == 3 && ty == LS_TC_I32)
            h->csize = ls_tcr_i32(&t);
        else if (id == 4 && ty == LS_TC_I32)
            h->crc = (uint32_t)ls_tcr_i32(&t), h->has_crc = 1;
        else if (ty == LS_TC_STRUCT &&
                 ((id == 5 && h->type == PAGE_DATA) || (id == 7 && h->type == PAGE_DICTIONARY) ||
                  (id == 8 && h->type == PAGE_DATA_V2)))
            read_sub(&t, h);
        else
            ls_tcr_skip(&t, ty);
    }
    if (ls_tcr_failed(&t)) return ifail(it, LS_ECORRUPT, "page header at byte %zu: %s", at, t.err);
    if (h->usize < 0 || h->csize < 0 || h->csize > it->end - t.p)
        return ifail(it, LS_ECORRUPT, "page at byte %zu: sizes %lld/%lld outside the chunk", at,
                     (long long)h->csize, (long long)h->usize);
    *body = t.p;
    return 0;
}

/* Decodes pages until a data page is ready (0) or an error (-1). */
static int next_page(ls_pqr_iter_t *it)
{
    for (;;) {
        size_t at = (size_t)(it->pos - it->r->data);
        page_hdr_t h;
        const uint8_t *body;
        if (page_header(it, &h, &body) < 0) return -1;
        size_t n = (size_t)h.csize;
        it->pos = body + n;
        if (h.has_crc && (uint32_t)crc32(0, body, (uInt)n) != h.crc)
            return ifail(it, LS_ECORRUPT, "page at byte %zu: CRC mismatch", at);
        if (h.type == PAGE_INDEX) continue;
        if (h.type != PAGE_DATA && h.type != PAGE_DATA_V2 && h.type != PAGE_DICTIONARY)
            return ifail(it, LS_EINVAL, "page at byte %zu: page type %d is not supported", at,
                         h.type);
        if (!h.has_sub)
            return ifail(it, LS_ECORRUPT, "page at byte %zu: no header for page type %d", at,
                         h.type);
        const uint8_t *p;
        if (h.type == PAGE_DICTIONARY) {
            if (inflate_page(it, it->codec, body, n, h.usize, &p, at, true) < 0) return -1;
            if (load_dict(it, p, (size_t)h.usize, h.num_values, h.encoding, at) < 0) return -1;
            continue;
        }
        it->seen_data = 1;
        if (h.encoding < 0)
            return ifail(it, LS_ECORRUPT, "page at byte %zu: no value encoding", at);
        if (h.num_values < 0 || h.num_values > it->left)
            return ifail(it, LS_ECORRUPT, "page at byte %zu: %lld values, %lld left in the chunk",
                         at, (long long)h.num_values, (long long)it->left);
        it->page_left = h.num_values;
        if (h.type == PAGE_DATA) {
            if (inflate_page(it, it->codec, body, n, h.usize, &p, at, false) < 0) return -1;
            const uint8_t *end = p + h.usize;
            if (it->max_rep &&
                levels_v1(it, &it->rep, &p, end, it->max_rep, h.rep_enc, "repetition", at) < 0)
                return -1;
            if (it->max_def &&
                levels_v1(it, &it->def, &p, end, it->max_def, h.def_enc, "definition", at) < 0)
                return -1;
            if (start_values(it, h.encoding, p, end, at) < 0) return -1;
            return 0;
        }
        /* v2: rep levels, def levels (uncompressed, lengths in the header), values */
        if (h.rep_len < 0 || h.def_len < 0 || h.rep_len + h.def_len > h.csize ||
            h.rep_len + h.def_len > h.usize || (h.rep_len && !it->max_rep) ||
            (h.def_len && !it->max_def))
            return ifail(it, LS_ECORRUPT, "page at byte %zu: level lengths %lld/%lld do not fit",
                         at, (long long)h.rep_len, (long long)h.def_len);
        hyb_init(&it->rep, body, (size_t)h.rep_len, bit_width((uint32_t)it->max_rep),
                 (uint32_t)it->max_rep);
        hyb_init(&it->def, body + h.rep_len, (size_t)h.def_len, bit_width((uint32_t)it->max_def),
                 (uint32_t)it->max_def);
        size_t lv = (size_t)(h.rep_len + h.def_len);
        int codec = h.is_compressed ? it->codec : LS_CODEC_NONE;
        if (inflate_page(it, codec, body + lv, n - lv, h.usize - (int64_t)lv, &p, at, false) < 0)
            return -1;
        if (start_values(it, h.encoding, p, p + (h.usize - (int64_t)lv), at) < 0) return -1;
        return 0;
    }
}

static int value_plain(ls_pqr_iter_t *it, ls_pqr_triple_t *t)
{
    if (it->type == LS_PQ_BOOLEAN) {
        uint64_t byte = it->bit / 8;
        if (byte >= (uint64_t)(it->vend - it->vp)) return -1;
        t->v.boolean = it->vp[byte] >> (it->bit % 8) & 1;
        it->bit++;
        return 0;
    }
    if (it->type == LS_PQ_BYTE_ARRAY) {
        if (it->vend - it->vp < 4) return -1;
        const uint8_t *q = it->vp;
        uint32_t len =
            (uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 | (uint32_t)q[3] << 24;
        if (len > (size_t)(it->vend - q - 4)) return -1;
        t->bytes = q + 4;
        t->len = len;
        it->vp = q + 4 + len;
        return 0;
    }
    int w = it->width;
    if (it->vend - it->vp < w) return -1;
    if (it->as_bytes) {
        t->bytes = it->vp;
        t->len = (uint32_t)w;
    } else {
        memcpy(&t->v, it->vp, (size_t)w); /* little-endian host, asserted above */
    }
    it->vp += w;
    return 0;
}

static int value_dict(ls_pqr_iter_t *it, ls_pqr_triple_t *t)
{
    uint32_t k;
    if (!it->ndict || hyb_next(&it->vals, &k) < 0) return -1;
    if (it->type == LS_PQ_BYTE_ARRAY) {
        t->bytes = it->dict_ptr[k];
        t->len = it->dict_len[k];
        return 0;
    }
    int w = it->width;
    const uint8_t *p = it->dict_fixed + (size_t)k * (size_t)w;
    if (it->as_bytes) {
        t->bytes = p;
        t->len = (uint32_t)w;
    } else {
        memcpy(&t->v, p, (size_t)w);
    }
    return 0;
}

int ls_pqr_next(ls_pqr_iter_t *it, ls_pqr_triple_t *t)
{
    if (it->st != LS_OK) return -1;
    if (it->left == 0) return 0;
    while (it->page_left == 0)
        if (next_page(it) < 0) return -1;
    uint32_t rep = 0, def = 0;
    size_t at = (size_t)(it->pos - it->r->data);
    if (it->max_rep && hyb_next(&it->rep, &rep) < 0)
        return ifail(it, LS_ECORRUPT, "page ending at byte %zu: bad repetition levels", at);
    if (it->max_def && hyb_next(&it->def, &def) < 0)
        return ifail(it, LS_ECORRUPT, "page ending at byte %zu: bad definition levels", at);
    if (!it->started && rep != 0)
        return ifail(it, LS_ECORRUPT, "chunk starts at repetition level %u", rep);
    it->started = 1;
    t->rep = (int)rep;
    t->def = (int)def;
    t->bytes = NULL;
    t->len = 0;
    memset(&t->v, 0, sizeof t->v);
    if ((int)def == it->max_def) {
        int rc;
        if (it->enc == ENC_PLAIN)
            rc = value_plain(it, t);
        else if (it->enc == ENC_RLE_DICTIONARY)
            rc = value_dict(it, t);
        else { /* RLE booleans */
            uint32_t b = 0;
            rc = hyb_next(&it->vals, &b);
            t->v.boolean = (int)b;
        }
        if (rc < 0)
            return ifail(it, LS_ECORRUPT,
                         "page ending at byte %zu: values run short or out of range", at);
    }
    it->page_left--;
    it->left--;
    return 1;
}

int64_t ls_pqr_read_fixed(ls_pqr_iter_t *it, void *dst, int64_t n)
{
    if (it->st != LS_OK) return -1;
    int w = it->width;
    if (it->max_rep || it->max_def || (w != 4 && w != 8) || it->as_bytes)
        return ifail(it, LS_EINVAL, "a bulk read needs a required INT32/INT64/FLOAT/DOUBLE column");
    uint8_t *d = dst;
    int64_t got = 0;
    while (got < n && it->left > 0) {
        while (it->page_left == 0)
            if (next_page(it) < 0) return -1;
        int64_t k = n - got < it->page_left ? n - got : it->page_left;
        uint8_t *o = d + (size_t)got * (size_t)w;
        if (it->enc == ENC_PLAIN) {
            if ((uint64_t)(it->vend - it->vp) < (uint64_t)k * (uint64_t)w)
                return ifail(it, LS_ECORRUPT, "page ending at byte %zu: values run short",
                             (size_t)(it->pos - it->r->data));
            memcpy(o, it->vp, (size_t)k * (size_t)w);
            it->vp += (size_t)k * (size_t)w;
        } else if (it->enc == ENC_RLE_DICTIONARY && it->ndict) {
            hyb_t *h = &it->vals;
            for (int64_t i = 0; i < k;) {
                if (h->rle_left) { /* a run: one value, many times */
                    if (h->rle_val > h->max)
                        return ifail(it, LS_ECORRUPT,
                                     "page ending at byte %zu: dictionary index out of range",
                                     (size_t)(it->pos - it->r->data));
                    int64_t m = (uint64_t)(k - i) < h->rle_left ? k - i : (int64_t)h->rle_left;
                    const uint8_t *v = it->dict_fixed + (size_t)h->rle_val * (size_t)w;
                    for (int64_t j = 0; j < m; j++)
                        memcpy(o + (size_t)(i + j) * (size_t)w, v, (size_t)w);
                    h->rle_left -= (uint64_t)m;
                    i += m;
                    continue;
                }
                uint32_t x;
                if (hyb_next(h, &x) < 0)
                    return ifail(it, LS_ECORRUPT,
                                 "page ending at byte %zu: values run short or out of range",
                                 (size_t)(it->pos - it->r->data));
                memcpy(o + (size_t)i * (size_t)w, it->dict_fixed + (size_t)x * (size_t)w,
                       (size_t)w);
                i++;
            }
        } else {
            return ifail(it, LS_ECORRUPT, "page ending at byte %zu: values run short",
                         (size_t)(it->pos - it->r->data));
        }
        it->page_left -= k;
        it->left -= k;
        it->started = 1;
        got += k;
    }
    return got;
}

/* Passes over the next n entries of a hybrid stream without returning
 * them (runs consumed whole; bit-packed values not unpacked). */
static int hyb_skip(hyb_t *h, int64_t n)
{
    while (n > 0) {
        if (!h->rle_left && !h->bp_left && hyb_run(h) < 0) return -1;
        if (h->rle_left) {
            if (h->rle_val > h->max) return -1;
            uint64_t m = (uint64_t)n < h->rle_left ? (uint64_t)n : h->rle_left;
            h->rle_left -= m;
            n -= (int64_t)m;
        } else {
            uint64_t m = (uint64_t)n < h->bp_left ? (uint64_t)n : h->bp_left;
            h->bp_i += m;
            h->bp_left -= m;
            n -= (int64_t)m;
        }
    }
    return 0;
}

/* Skips k <= page_left triples of the current page of a column without
 * repetition without building them: definition levels counted run by run,
 * the present values passed over (plain byte arrays by their lengths,
 * dictionary indices and RLE booleans by runs). */
static int skip_in_page(ls_pqr_iter_t *it, int64_t k)
{
    size_t at = (size_t)(it->pos - it->r->data);
    int64_t present = k;
    if (it->max_def) {
        hyb_t *h = &it->def;
        present = 0;
        for (int64_t i = 0; i < k;) {
            if (!h->rle_left && !h->bp_left && hyb_run(h) < 0) goto bad_levels;
            if (h->rle_left) {
                if (h->rle_val > h->max) goto bad_levels;
                int64_t m = (uint64_t)(k - i) < h->rle_left ? k - i : (int64_t)h->rle_left;
                if ((int)h->rle_val == it->max_def) present += m;
                h->rle_left -= (uint64_t)m;
                i += m;
            } else {
                uint32_t d;
                if (hyb_next(h, &d) < 0) goto bad_levels;
                present += (int)d == it->max_def;
                i++;
            }
        }
    }
    if (present > 0) {
        bool ok = true;
        if (it->enc != ENC_PLAIN) {
            ok = (it->enc != ENC_RLE_DICTIONARY || it->ndict) && hyb_skip(&it->vals, present) == 0;
        } else if (it->type == LS_PQ_BOOLEAN) {
            it->bit += (uint64_t)present; /* checked when a value is read */
        } else if (it->type == LS_PQ_BYTE_ARRAY) {
            for (int64_t i = 0; i < present && ok; i++) {
                const uint8_t *q = it->vp;
                if (it->vend - q < 4) {
                    ok = false;
                    break;
                }
                uint32_t len = (uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 |
                               (uint32_t)q[3] << 24;
                ok = len <= (size_t)(it->vend - q - 4);
                it->vp = q + 4 + (ok ? len : 0);
            }
        } else {
            ok = (uint64_t)(it->vend - it->vp) >= (uint64_t)present * (uint64_t)it->width;
            if (ok) it->vp += (size_t)present * (size_t)it->width;
        }
        if (!ok)
            return ifail(it, LS_ECORRUPT,
                         "page ending at byte %zu: values run short or out of range", at);
    }
    it->page_left -= k;
    it->left -= k;
    it->started = 1;
    return 0;
bad_levels:
    return ifail(it, LS_ECORRUPT, "page ending at byte %zu: bad definition levels", at);
}

int ls_pqr_skip(ls_pqr_iter_t *it, int64_t n)
{
    if (it->st != LS_OK) return -1;
    while (n > 0 && it->left > 0) {
        if (it->page_left == 0) {
            /* a data page wholly inside the skip is passed over unread */
            page_hdr_t h;
            const uint8_t *body;
            if (page_header(it, &h, &body) < 0) return -1;
            if ((h.type == PAGE_DATA || h.type == PAGE_DATA_V2) && h.has_sub && h.num_values >= 0 &&
                h.num_values <= n && h.num_values <= it->left) {
                it->pos = body + h.csize;
                it->left -= h.num_values;
                n -= h.num_values;
                it->seen_data = it->started = 1;
                continue;
            }
            if (!it->max_rep) { /* decode it, then skip inside it */
                if (next_page(it) < 0) return -1;
                continue;
            }
        }
        if (!it->max_rep) {
            int64_t k = n < it->page_left ? n : it->page_left;
            if (skip_in_page(it, k) < 0) return -1;
            n -= k;
            continue;
        }
        ls_pqr_triple_t t;
        int rc = ls_pqr_next(it, &t);
        if (rc <= 0) return rc;
        n--;
    }
    return 0;
}

/* ---- flat columns ------------------------------------------------------ */

ls_status ls_pqr_read_flat(ls_pqr_t *r, int rg, int col, ls_pqr_flat_t *out, char *err,
                           size_t errlen)
{
    memset(out, 0, sizeof *out);
    const ls_pqr_elem_t *e = ls_pqr_column(r, col);
    if (e && e->max_rep) {
        snprintf(err, errlen, "parquet column %s is repeated; read it with an iterator", e->path);
        return LS_EINVAL;
    }
    ls_status st;
    ls_pqr_iter_t *it = ls_pqr_iter_new(r, rg, col, &st, err, errlen);
    if (!it) return st;
    /* one triple per row: ls_pqr_open checked num_values == the row count */
    size_t cap = 0;
    int rc;
    ls_pqr_triple_t t;
    while ((rc = ls_pqr_next(it, &t)) == 1) {
        if ((size_t)out->n == cap) {
            cap = cap ? cap * 2 : 1024;
            out->v = ls_realloc(out->v, cap * sizeof *out->v);
        }
        out->v[out->n++] = t;
    }
    out->max_def = e->max_def;
    out->it = it;
    if (rc < 0) {
        snprintf(err, errlen, "%s", ls_pqr_iter_error(it));
        st = ls_pqr_iter_status(it);
        ls_pqr_flat_free(out);
        return st;
    }
    return LS_OK;
}

void ls_pqr_flat_free(ls_pqr_flat_t *f)
{
    ls_free(f->v);
    ls_pqr_iter_free(f->it);
    memset(f, 0, sizeof *f);
}
