/* Parquet writer. See parquet_writer.h for the contract.
 *
 * State: the schema (flattened, with the root at index 0), one pq_col per
 * leaf holding the open row group (levels one byte per entry, plain values,
 * an incremental dictionary), and the metadata of every closed row group for
 * the footer. Output is appended to the caller's buffer; offsets in the
 * footer are positions in that buffer (which starts with "PAR1").
 *
 * Thrift field ids below are those of parquet.thrift (FileMetaData,
 * SchemaElement, RowGroup, ColumnChunk, ColumnMetaData, PageHeader,
 * DataPageHeader, DictionaryPageHeader, Statistics, LogicalType). */
#include "table/parquet_writer.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/compress.h"
#include "base/hash.h"
#include "table/thrift_compact.h"

/* parquet.thrift enums */
enum { ENC_PLAIN = 0, ENC_RLE = 3, ENC_RLE_DICTIONARY = 8 };
enum { PAGE_DATA = 0, PAGE_DICTIONARY = 2 };
enum {
    CT_UTF8 = 0,
    CT_MAP = 1,
    CT_LIST = 3,
    CT_DECIMAL = 5,
    CT_DATE = 6,
    CT_TIMESTAMP_MICROS = 10
};

typedef struct chunk_meta {
    int64_t num_values, uncompressed, compressed;
    int64_t data_page_offset, dict_page_offset; /* dict: -1 if none */
    int64_t null_count;
    int dict;
    int zprobe; /* zstd: the chunk's last page did not shrink (see write_page) */
    int has_bounds;
    ls_buf_t min, max;
} chunk_meta_t;

typedef struct rg_meta {
    int64_t num_rows, total_bytes, total_compressed, file_offset;
    chunk_meta_t *chunks; /* one per leaf */
} rg_meta_t;

typedef struct pq_col {
    int field;    /* index into w->fields */
    char *path;   /* dotted */
    char **parts; /* path components */
    int nparts;
    int max_def, max_rep;
    int width;         /* FIXED_LEN_BYTE_ARRAY: bytes per value */
    int sbytes;        /* byte values compare as signed big-endian numbers (DECIMAL) */
    ls_buf_t rep, def; /* one byte per level entry */
    size_t nlevels, rows_started;
    ls_buf_t vals; /* PLAIN values (non-null entries) */
    size_t nvals;
    /* dictionary of the open chunk */
    int dict_on;
    ls_buf_t dict;      /* PLAIN distinct values */
    uint32_t *dict_off; /* offset of each entry in dict */
    uint32_t ndict, dict_cap;
    uint32_t *slots; /* open addressing: entry + 1, 0 = empty */
    size_t nslots;
    uint32_t *idx; /* dictionary index per value */
    size_t idx_cap;
    /* chunk statistics of the open row group */
    int has_bounds;
    ls_buf_t min, max;
    int64_t nulls;
    ls_pq_colstats_t file; /* totals over closed row groups */
} pq_col_t;

struct ls_pq_writer {
    ls_pq_field_t *fields; /* [0] is the root */
    size_t nfields;
    int *max_def_of, *max_rep_of;
    pq_col_t *cols;
    size_t ncols;
    ls_pq_opts_t o;
    ls_buf_t *out;
    rg_meta_t *rgs;
    int nrgs, rg_cap;
    int64_t rows, rg_rows;
    size_t buffered;
    char **kv; /* key, value, key, value ... */
    int nkv;
    /* scratch reused page after page (no fresh allocation per page) */
    ls_buf_t comp, hdr, body, probe;
    uint32_t *scratch;
    size_t scratch_cap;
    int finished;
    ls_status st; /* sticky misuse error */
    char err[256];
};

void ls_pq_opts_init(ls_pq_opts_t *o)
{
    memset(o, 0, sizeof *o);
    o->codec = LS_PQ_SNAPPY;
    o->row_group_bytes = (size_t)128 << 20;
    o->page_bytes = (size_t)1 << 20;
    o->dict_max_bytes = (size_t)1 << 20;
    o->stats_max_bytes = 64;
    o->created_by = "lakestream-c";
}

int ls_pq_codec_parse(const char *s)
{
    if (!strcmp(s, "uncompressed") || !strcmp(s, "none")) return LS_PQ_UNCOMPRESSED;
    if (!strcmp(s, "snappy")) return LS_PQ_SNAPPY;
    if (!strcmp(s, "gzip")) return LS_PQ_GZIP;
    if (!strcmp(s, "zstd")) return LS_PQ_ZSTD;
    return -1;
}

static void fail(ls_pq_writer_t *w, const char *fmt, ...)
{
    if (w->st != LS_OK) return;
    w->st = LS_EINVAL;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->err, sizeof w->err, fmt, ap);
    va_end(ap);
}

/* ---- schema ---------------------------------------------------------- */

/* Walks the subtree at fields[i] (pre-order), computing levels and leaves:
 * LS_OK with the index after the subtree in *next_out, or LS_EINVAL (err)
 * when the list is malformed. */
static ls_status walk(ls_pq_writer_t *w, size_t i, int def, int rep, const char *prefix,
                      size_t *next_out, char *err, size_t errlen)
{
    if (i >= w->nfields) {
        snprintf(err, errlen, "schema: group children run past the field list");
        return LS_EINVAL;
    }
    ls_pq_field_t *f = &w->fields[i];
    if (i > 0) {
        if (f->repetition == LS_PQ_OPTIONAL) def++;
        if (f->repetition == LS_PQ_REPEATED) def++, rep++;
    }
    w->max_def_of[i] = def;
    w->max_rep_of[i] = rep;
    char *path = i == 0 ? ls_strdup("")
                        : (prefix[0] ? ls_asprintf("%s.%s", prefix, f->name) : ls_strdup(f->name));
    size_t next = i + 1;
    if (f->type == LS_PQ_GROUP) {
        if (f->nchildren <= 0) {
            snprintf(err, errlen, "schema: group %s has no children", f->name);
            ls_free(path);
            return LS_EINVAL;
        }
        ls_status st = LS_OK;
        for (int c = 0; c < f->nchildren && st == LS_OK; c++)
            st = walk(w, next, def, rep, path, &next, err, errlen);
        ls_free(path);
        *next_out = next;
        return st;
    }
    if (f->type != LS_PQ_BOOLEAN && f->type != LS_PQ_INT32 && f->type != LS_PQ_INT64 &&
        f->type != LS_PQ_FLOAT && f->type != LS_PQ_DOUBLE && f->type != LS_PQ_BYTE_ARRAY &&
        f->type != LS_PQ_FIXED_LEN_BYTE_ARRAY) {
        snprintf(err, errlen, "schema: column %s has an unsupported type", path);
        ls_free(path);
        return LS_EINVAL;
    }
    const char *bad = NULL;
    if (f->type == LS_PQ_FIXED_LEN_BYTE_ARRAY && f->type_length <= 0)
        bad = "a FIXED_LEN_BYTE_ARRAY needs a type_length > 0";
    else if (f->logical == LS_PQ_LT_UUID &&
             (f->type != LS_PQ_FIXED_LEN_BYTE_ARRAY || f->type_length != 16))
        bad = "UUID is a FIXED_LEN_BYTE_ARRAY(16)";
    else if (f->logical == LS_PQ_LT_TIME_US && f->type != LS_PQ_INT64)
        bad = "TIME(MICROS) is an INT64";
    else if (f->logical == LS_PQ_LT_DECIMAL &&
             (f->precision < 1 || f->scale < 0 || f->scale > f->precision ||
              f->precision > ls_pq_decimal_digits(f->type, f->type_length)))
        bad = "DECIMAL precision and scale do not fit the physical type";
    if (bad) {
        snprintf(err, errlen, "schema: column %s: %s", path, bad);
        ls_free(path);
        return LS_EINVAL;
    }
    w->cols = ls_realloc(w->cols, (w->ncols + 1) * sizeof *w->cols);
    pq_col_t *c = &w->cols[w->ncols++];
    memset(c, 0, sizeof *c);
    c->field = (int)i;
    c->path = path;
    c->max_def = def;
    c->max_rep = rep;
    c->width = f->type == LS_PQ_FIXED_LEN_BYTE_ARRAY ? f->type_length : 0;
    c->sbytes = f->logical == LS_PQ_LT_DECIMAL && f->type == LS_PQ_FIXED_LEN_BYTE_ARRAY;
    /* components */
    for (const char *p = path;; p++) {
        const char *dot = strchr(p, '.');
        size_t n = dot ? (size_t)(dot - p) : strlen(p);
        c->parts = ls_realloc(c->parts, (size_t)(c->nparts + 1) * sizeof *c->parts);
        c->parts[c->nparts++] = ls_strndup(p, n);
        if (!dot) break;
        p = dot;
    }
    c->file.path = c->path;
    c->file.field_id = f->field_id;
    c->file.type = f->type;
    c->file.logical = f->logical;
    c->file.max_def = def;
    c->file.max_rep = rep;
    *next_out = next;
    return LS_OK;
}

static int dict_allowed(const ls_pq_writer_t *w, const pq_col_t *c)
{
    return w->o.dict_max_bytes > 0 && w->fields[c->field].type != LS_PQ_BOOLEAN;
}

ls_pq_writer_t *ls_pq_writer_new(const ls_pq_field_t *fields, size_t nfields,
                                 const ls_pq_opts_t *opts, ls_buf_t *out, char *err, size_t errlen)
{
    ls_pq_writer_t *w = LS_NEW(ls_pq_writer_t);
    if (opts)
        w->o = *opts;
    else
        ls_pq_opts_init(&w->o);
    if (!w->o.page_bytes) w->o.page_bytes = (size_t)1 << 20;
    if (!w->o.row_group_bytes) w->o.row_group_bytes = (size_t)128 << 20;
    if (!w->o.created_by) w->o.created_by = "lakestream-c";
    w->nfields = nfields + 1;
    w->fields = LS_NEWN(ls_pq_field_t, w->nfields);
    w->fields[0].name = "schema";
    w->fields[0].type = LS_PQ_GROUP;
    w->fields[0].field_id = -1;
    memcpy(w->fields + 1, fields, nfields * sizeof *fields);
    w->max_def_of = LS_NEWN(int, w->nfields);
    w->max_rep_of = LS_NEWN(int, w->nfields);
    /* root children: count top-level fields by skipping subtrees */
    int top = 0;
    for (size_t i = 1; i < w->nfields; top++) {
        size_t pending = 1;
        while (pending && i < w->nfields) {
            pending--;
            if (w->fields[i].type == LS_PQ_GROUP && w->fields[i].nchildren > 0)
                pending += (size_t)w->fields[i].nchildren;
            i++;
        }
    }
    w->fields[0].nchildren = top;
    size_t end = 0;
    if (nfields == 0 || walk(w, 0, 0, 0, "", &end, err, errlen) != LS_OK || end != w->nfields) {
        if (nfields == 0)
            snprintf(err, errlen, "schema: no fields");
        else if (!err[0])
            snprintf(err, errlen, "schema: malformed field list");
        ls_pq_writer_free(w);
        return NULL;
    }
    for (size_t i = 0; i < w->ncols; i++)
        w->cols[i].dict_on = dict_allowed(w, &w->cols[i]);
    if (opts && opts->codec != LS_PQ_UNCOMPRESSED && opts->codec != LS_PQ_SNAPPY &&
        opts->codec != LS_PQ_GZIP && opts->codec != LS_PQ_ZSTD) {
        snprintf(err, errlen, "unsupported codec %d", (int)opts->codec);
        ls_pq_writer_free(w);
        return NULL;
    }
    w->out = out;
    ls_buf_append(out, "PAR1", 4);
    return w;
}

static void col_reset_chunk(ls_pq_writer_t *w, pq_col_t *c)
{
    c->rep.len = c->def.len = c->vals.len = c->dict.len = 0;
    c->nlevels = c->rows_started = c->nvals = 0;
    c->ndict = 0;
    if (c->slots) memset(c->slots, 0, c->nslots * sizeof *c->slots);
    c->dict_on = dict_allowed(w, c);
    c->has_bounds = 0;
    c->min.len = c->max.len = 0;
    c->nulls = 0;
}

void ls_pq_writer_free(ls_pq_writer_t *w)
{
    if (!w) return;
    for (size_t i = 0; i < w->ncols; i++) {
        pq_col_t *c = &w->cols[i];
        ls_free(c->path);
        for (int k = 0; k < c->nparts; k++)
            ls_free(c->parts[k]);
        ls_free(c->parts);
        ls_buf_free(&c->rep);
        ls_buf_free(&c->def);
        ls_buf_free(&c->vals);
        ls_buf_free(&c->dict);
        ls_free(c->dict_off);
        ls_free(c->slots);
        ls_free(c->idx);
        ls_buf_free(&c->min);
        ls_buf_free(&c->max);
        ls_buf_free(&c->file.min);
        ls_buf_free(&c->file.max);
    }
    ls_free(w->cols);
    for (int r = 0; r < w->nrgs; r++) {
        for (size_t i = 0; i < w->ncols; i++) {
            ls_buf_free(&w->rgs[r].chunks[i].min);
            ls_buf_free(&w->rgs[r].chunks[i].max);
        }
        ls_free(w->rgs[r].chunks);
    }
    ls_free(w->rgs);
    for (int i = 0; i < w->nkv; i++)
        ls_free(w->kv[i]);
    ls_free(w->kv);
    ls_buf_free(&w->comp);
    ls_buf_free(&w->hdr);
    ls_buf_free(&w->body);
    ls_buf_free(&w->probe);
    ls_free(w->scratch);
    ls_free(w->fields);
    ls_free(w->max_def_of);
    ls_free(w->max_rep_of);
    ls_free(w);
}

size_t ls_pq_ncolumns(const ls_pq_writer_t *w) { return w->ncols; }

const ls_pq_field_t *ls_pq_writer_fields(const ls_pq_writer_t *w, size_t *n)
{
    *n = w->nfields;
    return w->fields;
}

int ls_pq_column_index(const ls_pq_writer_t *w, const char *path)
{
    for (size_t i = 0; i < w->ncols; i++)
        if (!strcmp(w->cols[i].path, path)) return (int)i;
    return -1;
}

void ls_pq_add_kv(ls_pq_writer_t *w, const char *key, const char *value)
{
    w->kv = ls_realloc(w->kv, (size_t)(w->nkv + 2) * sizeof *w->kv);
    w->kv[w->nkv++] = ls_strdup(key);
    w->kv[w->nkv++] = ls_strdup(value);
}

/* ---- values ---------------------------------------------------------- */

static pq_col_t *level(ls_pq_writer_t *w, int col, int rep, int def, int type)
{
    if (w->st != LS_OK || w->finished) {
        if (w->finished) fail(w, "put after finish");
        return NULL;
    }
    if (col < 0 || (size_t)col >= w->ncols) {
        fail(w, "column %d out of range", col);
        return NULL;
    }
    pq_col_t *c = &w->cols[col];
    if (type >= 0 && w->fields[c->field].type != type) {
        fail(w, "column %s: value of the wrong type", c->path);
        return NULL;
    }
    if (rep < 0 || rep > c->max_rep || def < 0 || def > c->max_def) {
        fail(w, "column %s: level out of range (rep %d def %d)", c->path, rep, def);
        return NULL;
    }
    if (rep > 0 && c->rows_started != (size_t)w->rg_rows + 1) {
        fail(w, "column %s: repeated entry before the row's first", c->path);
        return NULL;
    }
    if (rep == 0) {
        if (c->rows_started != (size_t)w->rg_rows) {
            fail(w, "column %s: second first-entry in one row", c->path);
            return NULL;
        }
        c->rows_started++;
    }
    if (c->max_rep) ls_buf_append_u8(&c->rep, (uint8_t)rep);
    if (c->max_def) ls_buf_append_u8(&c->def, (uint8_t)def);
    c->nlevels++;
    w->buffered += 2;
    return c;
}

static size_t plain_len_at(const pq_col_t *c, int type, const uint8_t *p)
{
    if (type == LS_PQ_FIXED_LEN_BYTE_ARRAY) return (size_t)c->width;
    if (type == LS_PQ_BOOLEAN) return 1; /* one byte per value until the page bit-packs it */
    if (type == LS_PQ_INT32 || type == LS_PQ_FLOAT) return 4;
    if (type == LS_PQ_INT64 || type == LS_PQ_DOUBLE) return 8;
    return 4 + (size_t)(p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24);
}

/* Compares two plain values in the column's sort order (signed ints,
 * unsigned lexicographic bytes; sbytes: bytes as signed big-endian
 * numbers of one width, a DECIMAL's). */
static int cmp_plain(int type, int sbytes, const uint8_t *a, size_t an, const uint8_t *b, size_t bn)
{
    if (sbytes && an && bn && (a[0] ^ b[0]) & 0x80) return a[0] & 0x80 ? -1 : 1;
    if (type == LS_PQ_INT32) {
        int32_t x, y;
        memcpy(&x, a, 4), memcpy(&y, b, 4);
        return x < y ? -1 : x > y;
    }
    if (type == LS_PQ_INT64) {
        int64_t x, y;
        memcpy(&x, a, 8), memcpy(&y, b, 8);
        return x < y ? -1 : x > y;
    }
    if (type == LS_PQ_FLOAT) {
        float x, y;
        memcpy(&x, a, 4), memcpy(&y, b, 4);
        return x < y ? -1 : x > y;
    }
    if (type == LS_PQ_DOUBLE) {
        double x, y;
        memcpy(&x, a, 8), memcpy(&y, b, 8);
        return x < y ? -1 : x > y;
    }
    size_t n = an < bn ? an : bn;
    int r = n ? memcmp(a, b, n) : 0;
    if (r) return r;
    return an < bn ? -1 : an > bn;
}

static void set_buf(ls_buf_t *b, const uint8_t *p, size_t n)
{
    b->len = 0;
    ls_buf_append(b, p, n);
}

static int is_nan(int type, const uint8_t *v)
{
    if (type == LS_PQ_FLOAT) {
        float x;
        memcpy(&x, v, 4);
        return x != x;
    }
    if (type == LS_PQ_DOUBLE) {
        double x;
        memcpy(&x, v, 8);
        return x != x;
    }
    return 0;
}

static void update_bounds(pq_col_t *c, int type, const uint8_t *v, size_t n)
{
    if (is_nan(type, v)) return; /* NaN is never a bound */
    if (!c->has_bounds) {
        set_buf(&c->min, v, n);
        set_buf(&c->max, v, n);
        c->has_bounds = 1;
        return;
    }
    if (cmp_plain(type, c->sbytes, v, n, c->min.data, c->min.len) < 0) set_buf(&c->min, v, n);
    if (cmp_plain(type, c->sbytes, v, n, c->max.data, c->max.len) > 0) set_buf(&c->max, v, n);
}

static void dict_grow(pq_col_t *c)
{
    size_t n = c->nslots ? c->nslots * 2 : 1024;
    uint32_t *s = LS_NEWN(uint32_t, n);
    for (size_t i = 0; i < c->nslots; i++) {
        uint32_t e = c->slots[i];
        if (!e) continue;
        const uint8_t *p = c->dict.data + c->dict_off[e - 1];
        size_t len = (e < c->ndict ? c->dict_off[e] : c->dict.len) - c->dict_off[e - 1];
        size_t j = (size_t)ls_hash_fast(p, len) & (n - 1);
        while (s[j])
            j = (j + 1) & (n - 1);
        s[j] = e;
    }
    ls_free(c->slots);
    c->slots = s;
    c->nslots = n;
}

enum { DICT_PROBE = 1024 };

/* Adds one plain-encoded value; `raw`/`rawn` is the value without the
 * BYTE_ARRAY length prefix (for bounds). */
static void add_value(ls_pq_writer_t *w, pq_col_t *c, const uint8_t *plain, size_t n,
                      const uint8_t *raw, size_t rawn)
{
    int type = w->fields[c->field].type;
    ls_buf_append(&c->vals, plain, n);
    w->buffered += n;
    update_bounds(c, type, raw, rawn);
    if (c->dict_on) {
        if ((c->ndict + 1) * 2 > c->nslots) dict_grow(c);
        size_t j = (size_t)ls_hash_fast(plain, n) & (c->nslots - 1);
        uint32_t e;
        for (;;) {
            e = c->slots[j];
            if (!e) break;
            size_t off = c->dict_off[e - 1];
            size_t len = (e < c->ndict ? c->dict_off[e] : c->dict.len) - off;
            if (len == n && !memcmp(c->dict.data + off, plain, n)) break;
            j = (j + 1) & (c->nslots - 1);
        }
        if (!e) {
            if (c->dict.len + n > w->o.dict_max_bytes || c->ndict == UINT32_MAX - 1) {
                c->dict_on = 0; /* this chunk falls back to PLAIN */
            } else {
                if (c->ndict == c->dict_cap) {
                    c->dict_cap = c->dict_cap ? c->dict_cap * 2 : 256;
                    c->dict_off = ls_realloc(c->dict_off, c->dict_cap * sizeof *c->dict_off);
                }
                c->dict_off[c->ndict] = (uint32_t)c->dict.len;
                ls_buf_append(&c->dict, plain, n);
                e = ++c->ndict;
                c->slots[j] = e;
                /* A dictionary pays only where values repeat: once DICT_PROBE
                 * values are in and most were new (offsets, timestamps, ids),
                 * the chunk goes PLAIN — no per-value hashing, and no
                 * dictionary as big as the values plus indexes on top. */
                if (c->nvals + 1 >= DICT_PROBE && (uint64_t)c->ndict * 4 > (c->nvals + 1) * 3)
                    c->dict_on = 0;
            }
        }
        if (c->dict_on) {
            if (c->nvals == c->idx_cap) {
                c->idx_cap = c->idx_cap ? c->idx_cap * 2 : 1024;
                c->idx = ls_realloc(c->idx, c->idx_cap * sizeof *c->idx);
            }
            c->idx[c->nvals] = e - 1;
        }
    }
    c->nvals++;
}

void ls_pq_put_i32(ls_pq_writer_t *w, int col, int rep, int32_t v)
{
    pq_col_t *c = level(w, col, rep, col >= 0 && (size_t)col < w->ncols ? w->cols[col].max_def : 0,
                        LS_PQ_INT32);
    if (!c) return;
    uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16),
                    (uint8_t)((uint32_t)v >> 24)};
    add_value(w, c, b, 4, b, 4);
}

void ls_pq_put_i64(ls_pq_writer_t *w, int col, int rep, int64_t v)
{
    pq_col_t *c = level(w, col, rep, col >= 0 && (size_t)col < w->ncols ? w->cols[col].max_def : 0,
                        LS_PQ_INT64);
    if (!c) return;
    uint8_t b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)((uint64_t)v >> (8 * i));
    add_value(w, c, b, 8, b, 8);
}

void ls_pq_put_bytes(ls_pq_writer_t *w, int col, int rep, const void *p, size_t n)
{
    if (n > INT32_MAX) {
        fail(w, "value of %zu bytes is too large", n);
        return;
    }
    int fixed = col >= 0 && (size_t)col < w->ncols && w->cols[col].width;
    if (fixed && n != (size_t)w->cols[col].width) {
        fail(w, "column %s: a value of %zu bytes, the column's are %d", w->cols[col].path, n,
             w->cols[col].width);
        return;
    }
    pq_col_t *c = level(w, col, rep, col >= 0 && (size_t)col < w->ncols ? w->cols[col].max_def : 0,
                        fixed ? LS_PQ_FIXED_LEN_BYTE_ARRAY : LS_PQ_BYTE_ARRAY);
    if (!c) return;
    if (fixed) { /* PLAIN: the bytes alone */
        add_value(w, c, p, n, p, n);
        return;
    }
    if (!c->dict_on) { /* no dictionary probe: straight into the plain values */
        uint8_t len[4] = {(uint8_t)n, (uint8_t)(n >> 8), (uint8_t)(n >> 16), (uint8_t)(n >> 24)};
        ls_buf_reserve(&c->vals, n + 4);
        ls_buf_append(&c->vals, len, 4);
        if (n) ls_buf_append(&c->vals, p, n);
        w->buffered += n + 4;
        update_bounds(c, LS_PQ_BYTE_ARRAY, p, n);
        c->nvals++;
        return;
    }
    /* plain = u32le length + bytes; build it in place at the end of vals is
     * not possible for the dictionary probe, so use a scratch copy */
    uint8_t small[256];
    uint8_t *plain = n + 4 <= sizeof small ? small : ls_malloc(n + 4);
    plain[0] = (uint8_t)n, plain[1] = (uint8_t)(n >> 8), plain[2] = (uint8_t)(n >> 16),
    plain[3] = (uint8_t)(n >> 24);
    if (n) memcpy(plain + 4, p, n);
    add_value(w, c, plain, n + 4, plain + 4, n);
    if (plain != small) ls_free(plain);
}

int ls_pq_decimal_digits(ls_pq_type type, int type_length)
{
    if (type == LS_PQ_INT32) return 9;
    if (type == LS_PQ_INT64) return 18;
    if (type != LS_PQ_FIXED_LEN_BYTE_ARRAY || type_length <= 0) return 0;
    if (type_length >= 16) return 38; /* what 128 bits hold (and Iceberg's maximum) */
    /* the digits of 2^(8 * type_length - 1) - 1, less one */
    unsigned __int128 max = ((unsigned __int128)1 << (8 * type_length - 1)) - 1;
    int d = 0;
    while (max >= 10)
        max /= 10, d++;
    return d;
}

int ls_pq_decimal_length(int precision)
{
    for (int n = 1; n < 16; n++)
        if (ls_pq_decimal_digits(LS_PQ_FIXED_LEN_BYTE_ARRAY, n) >= precision) return n;
    return 16;
}

void ls_pq_put_decimal(ls_pq_writer_t *w, int col, int rep, __int128 v)
{
    if (col < 0 || (size_t)col >= w->ncols) {
        fail(w, "column %d out of range", col);
        return;
    }
    const pq_col_t *c = &w->cols[col];
    ls_pq_type type = w->fields[c->field].type;
    if (type == LS_PQ_INT32) {
        ls_pq_put_i32(w, col, rep, (int32_t)v);
    } else if (type == LS_PQ_INT64) {
        ls_pq_put_i64(w, col, rep, (int64_t)v);
    } else if (type == LS_PQ_FIXED_LEN_BYTE_ARRAY && c->width <= 16) {
        uint8_t b[16];
        for (int i = 0; i < c->width; i++) /* big-endian, sign-extended to the width */
            b[c->width - 1 - i] = (uint8_t)(v >> (8 * i));
        ls_pq_put_bytes(w, col, rep, b, (size_t)c->width);
    } else {
        fail(w, "column %s: not a DECIMAL of at most 16 bytes", c->path);
    }
}

void ls_pq_put_bool(ls_pq_writer_t *w, int col, int rep, int v)
{
    pq_col_t *c = level(w, col, rep, col >= 0 && (size_t)col < w->ncols ? w->cols[col].max_def : 0,
                        LS_PQ_BOOLEAN);
    if (!c) return;
    uint8_t b = v ? 1 : 0;
    add_value(w, c, &b, 1, &b, 1);
}

void ls_pq_put_float(ls_pq_writer_t *w, int col, int rep, float v)
{
    pq_col_t *c = level(w, col, rep, col >= 0 && (size_t)col < w->ncols ? w->cols[col].max_def : 0,
                        LS_PQ_FLOAT);
    if (!c) return;
    uint32_t u;
    memcpy(&u, &v, 4);
    uint8_t b[4] = {(uint8_t)u, (uint8_t)(u >> 8), (uint8_t)(u >> 16), (uint8_t)(u >> 24)};
    add_value(w, c, b, 4, b, 4);
}

void ls_pq_put_double(ls_pq_writer_t *w, int col, int rep, double v)
{
    pq_col_t *c = level(w, col, rep, col >= 0 && (size_t)col < w->ncols ? w->cols[col].max_def : 0,
                        LS_PQ_DOUBLE);
    if (!c) return;
    uint64_t u;
    memcpy(&u, &v, 8);
    uint8_t b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)(u >> (8 * i));
    add_value(w, c, b, 8, b, 8);
}

void ls_pq_put_null(ls_pq_writer_t *w, int col, int rep, int def)
{
    if (col >= 0 && (size_t)col < w->ncols && def >= w->cols[col].max_def) {
        fail(w, "column %s: null needs def < %d", w->cols[col].path, w->cols[col].max_def);
        return;
    }
    pq_col_t *c = level(w, col, rep, def, -1);
    if (c) c->nulls++;
}

/* ---- encodings ------------------------------------------------------- */

static int bit_width(uint32_t max)
{
    int b = 0;
    while (max)
        b++, max >>= 1;
    return b;
}

/* RLE / bit-packing hybrid (Encodings.md). Runs of >= 8 equal values become
 * RLE runs; the rest is bit-packed in groups of 8 (LSB first). A bit-packed
 * run is only ever padded at the very end of the data. */
static void hybrid_flush_lit(ls_buf_t *out, const uint32_t *v, size_t n, int bw)
{
    if (!n) return;
    size_t groups = (n + 7) / 8;
    ls_tc_varint(out, (uint64_t)groups << 1 | 1);
    size_t nbytes = groups * (size_t)bw;
    ls_buf_reserve(out, nbytes);
    uint8_t *p = out->data + out->len;
    memset(p, 0, nbytes);
    for (size_t i = 0; i < n; i++) {
        uint64_t bit = (uint64_t)i * (uint64_t)bw;
        for (int k = 0; k < bw; k++, bit++)
            if (v[i] >> k & 1) p[bit / 8] |= (uint8_t)(1u << (bit % 8));
    }
    out->len += nbytes;
}

static void hybrid_encode(ls_buf_t *out, const uint32_t *v, size_t n, int bw)
{
    size_t i = 0, lit = 0; /* literals are v[lit..i) */
    int vbytes = (bw + 7) / 8;
    while (i < n) {
        size_t run = 1;
        while (i + run < n && v[i + run] == v[i])
            run++;
        if (run >= 8) {
            size_t pad = (8 - (i - lit) % 8) % 8;
            if (run - pad >= 8) {
                hybrid_flush_lit(out, v + lit, i + pad - lit, bw);
                size_t rl = run - pad;
                ls_tc_varint(out, (uint64_t)rl << 1);
                for (int b = 0; b < vbytes; b++)
                    ls_buf_append_u8(out, (uint8_t)(v[i] >> (8 * b)));
                i += run;
                lit = i;
                continue;
            }
        }
        i += run;
    }
    hybrid_flush_lit(out, v + lit, n - lit, bw);
}

static void u32le(ls_buf_t *b, uint32_t v)
{
    uint8_t x[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    ls_buf_append(b, x, 4);
}

/* Levels with a 4-byte little-endian length prefix (data page v1). */
static void encode_levels(ls_buf_t *out, const uint8_t *lv, size_t n, int max, uint32_t *scratch)
{
    for (size_t i = 0; i < n; i++)
        scratch[i] = lv[i];
    size_t at = out->len;
    u32le(out, 0);
    hybrid_encode(out, scratch, n, bit_width((uint32_t)max));
    uint32_t len = (uint32_t)(out->len - at - 4);
    out->data[at] = (uint8_t)len, out->data[at + 1] = (uint8_t)(len >> 8);
    out->data[at + 2] = (uint8_t)(len >> 16), out->data[at + 3] = (uint8_t)(len >> 24);
}

int ls_pq_codec_to_base(int pq)
{
    switch (pq) {
    case LS_PQ_UNCOMPRESSED: return LS_CODEC_NONE;
    case LS_PQ_SNAPPY: return LS_CODEC_SNAPPY;
    case LS_PQ_GZIP: return LS_CODEC_GZIP;
    case LS_PQ_ZSTD: return LS_CODEC_ZSTD;
    default: return -1;
    }
}

/* zstd pages that do not shrink. A page at least PROBE_MIN long, after a
 * page of the same column chunk that zstd shrank by less than 1/32, is
 * first tried on a sample (PROBE_SLICES slices of PROBE_SLICE bytes spread
 * over it): when the sample does not shrink by 1/32 either, the page is
 * stored as a zstd frame of raw blocks (ls_zstd_raw_frame) — the frame zstd
 * writes for such data itself, at the cost of a copy instead of a futile
 * match search (random or already-compressed values: zstd level 3 spends
 * most of a materialization pass there). A sample that shrinks sends the
 * page, and the chunk, back to full compression. What it may miss: repeats
 * farther apart than a slice in a page whose sample looks random (the
 * dictionary catches repeated whole values). Every reader sees an ordinary
 * zstd page; the level stays 3 (zstd's default, Kafka's
 * compression.zstd.level and parquet-mr's default). */
#define PROBE_MIN ((size_t)64 << 10)
#define PROBE_SLICE ((size_t)16 << 10)
#define PROBE_SLICES 3

static int shrinks(size_t in, size_t out) { return out < in - in / 32; }

/* Compresses body into comp, or sets *raw: the page is to be a raw-block
 * frame (written by write_page straight into the file). */
static ls_status compress_page(ls_pq_writer_t *w, chunk_meta_t *cm, const ls_buf_t *body,
                               ls_buf_t *comp, int *raw)
{
    *raw = 0;
    int codec = ls_pq_codec_to_base(w->o.codec);
    comp->len = 0;
    if (codec == LS_CODEC_ZSTD && cm->zprobe && body->len >= PROBE_MIN) {
        ls_buf_t *pr = &w->probe;
        pr->len = 0;
        size_t step = (body->len - PROBE_SLICE) / (PROBE_SLICES - 1);
        for (int i = 0; i < PROBE_SLICES; i++)
            ls_buf_append(pr, body->data + (size_t)i * step, PROBE_SLICE);
        ls_status st = ls_compress(codec, pr->data, pr->len, comp);
        if (st != LS_OK) return st;
        *raw = !shrinks(pr->len, comp->len);
        comp->len = 0;
        if (*raw) return LS_OK;
    }
    ls_status st = ls_compress(codec, body->data, body->len, comp);
    if (st == LS_OK && codec == LS_CODEC_ZSTD) cm->zprobe = !shrinks(body->len, comp->len);
    return st;
}

/* Writes one page (header + compressed body) to w->out. */
static ls_status write_page(ls_pq_writer_t *w, chunk_meta_t *cm, int page_type,
                            const ls_buf_t *body, int32_t num_values, int encoding)
{
    ls_buf_t *comp = &w->comp, *hdr = &w->hdr;
    hdr->len = 0;
    const ls_buf_t *payload = body;
    int raw = 0;
    if (w->o.codec != LS_PQ_UNCOMPRESSED) {
        ls_status st = compress_page(w, cm, body, comp, &raw);
        if (st != LS_OK) {
            snprintf(w->err, sizeof w->err, "page compression failed: %s", ls_status_str(st));
            return st;
        }
        payload = comp;
    }
    ls_tc_t t;
    ls_tc_init(&t, hdr);
    ls_tc_i32(&t, 1, page_type);
    ls_tc_i32(&t, 2, (int32_t)body->len);
    size_t payload_len = raw ? ls_zstd_raw_frame_size(body->len) : payload->len;
    ls_tc_i32(&t, 3, (int32_t)payload_len);
    if (page_type == PAGE_DATA) {
        ls_tc_struct_begin(&t, 5); /* DataPageHeader */
        ls_tc_i32(&t, 1, num_values);
        ls_tc_i32(&t, 2, encoding);
        ls_tc_i32(&t, 3, ENC_RLE);
        ls_tc_i32(&t, 4, ENC_RLE);
        ls_tc_struct_end(&t);
    } else {
        ls_tc_struct_begin(&t, 7); /* DictionaryPageHeader */
        ls_tc_i32(&t, 1, num_values);
        ls_tc_i32(&t, 2, ENC_PLAIN);
        ls_tc_struct_end(&t);
    }
    ls_tc_end(&t);
    ls_buf_reserve(w->out, hdr->len + payload_len);
    ls_buf_append(w->out, hdr->data, hdr->len);
    if (raw)
        ls_zstd_raw_frame(body->data, body->len, w->out);
    else
        ls_buf_append(w->out, payload->data, payload->len);
    cm->uncompressed += (int64_t)(hdr->len + body->len);
    cm->compressed += (int64_t)(hdr->len + payload_len);
    return LS_OK;
}

/* parquet.thrift: a zero min is written as -0.0 and a zero max as +0.0, so
 * readers never prune a chunk holding the other zero. */
static void fix_signed_zero(int type, ls_buf_t *min, ls_buf_t *max)
{
    if (type == LS_PQ_FLOAT) {
        float x;
        memcpy(&x, min->data, 4);
        if (x == 0) x = -0.0f, memcpy(min->data, &x, 4);
        memcpy(&x, max->data, 4);
        if (x == 0) x = 0.0f, memcpy(max->data, &x, 4);
    } else if (type == LS_PQ_DOUBLE) {
        double x;
        memcpy(&x, min->data, 8);
        if (x == 0) x = -0.0, memcpy(min->data, &x, 8);
        memcpy(&x, max->data, 8);
        if (x == 0) x = 0.0, memcpy(max->data, &x, 8);
    }
}

static ls_status flush_column(ls_pq_writer_t *w, pq_col_t *c, chunk_meta_t *cm)
{
    int type = w->fields[c->field].type;
    ls_status st = LS_OK;
    cm->num_values = (int64_t)c->nlevels;
    cm->null_count = c->nulls;
    cm->dict_page_offset = -1;
    cm->zprobe = 0;
    cm->dict = c->dict_on && c->nvals > 0;
    cm->has_bounds = c->has_bounds;
    ls_buf_init(&cm->min);
    ls_buf_init(&cm->max);
    if (c->has_bounds) {
        ls_buf_append(&cm->min, c->min.data, c->min.len);
        ls_buf_append(&cm->max, c->max.data, c->max.len);
        fix_signed_zero(type, &cm->min, &cm->max);
    }
    if (cm->dict) {
        cm->dict_page_offset = (int64_t)w->out->len;
        st = write_page(w, cm, PAGE_DICTIONARY, &c->dict, (int32_t)c->ndict, ENC_PLAIN);
        if (st != LS_OK) return st;
    }
    cm->data_page_offset = (int64_t)w->out->len;
    int bw = cm->dict ? bit_width(c->ndict - 1) : 0;
    if (bw == 0) bw = 1;
    if (w->scratch_cap < c->nlevels + 1) {
        ls_free(w->scratch);
        w->scratch_cap = c->nlevels + 1;
        w->scratch = ls_malloc(w->scratch_cap * sizeof *w->scratch);
    }
    uint32_t *scratch = w->scratch;
    ls_buf_t body = w->body; /* handed back below */
    size_t l = 0, v = 0, voff = 0;
    int32_t page_count = 0;
    do {
        /* one page: levels [l0, l), values [v0, v) */
        size_t l0 = l, v0 = v, voff0 = voff, vbytes = 0;
        while (l < c->nlevels) {
            if (l > l0 && vbytes >= w->o.page_bytes && (!c->max_rep || c->rep.data[l] == 0)) break;
            int isval = !c->max_def || c->def.data[l] == c->max_def;
            if (isval) {
                size_t n = plain_len_at(c, type, c->vals.data + voff);
                voff += n;
                vbytes += cm->dict ? 4 : n;
                v++;
            }
            l++;
        }
        body.len = 0;
        if (c->max_rep) encode_levels(&body, c->rep.data + l0, l - l0, c->max_rep, scratch);
        if (c->max_def) encode_levels(&body, c->def.data + l0, l - l0, c->max_def, scratch);
        if (cm->dict) {
            ls_buf_append_u8(&body, (uint8_t)bw);
            hybrid_encode(&body, c->idx + v0, v - v0, bw);
        } else if (type == LS_PQ_BOOLEAN) {
            /* PLAIN booleans: bit-packed, LSB first */
            size_t nb = (voff - voff0 + 7) / 8;
            ls_buf_reserve(&body, nb);
            memset(body.data + body.len, 0, nb);
            for (size_t k = voff0; k < voff; k++)
                if (c->vals.data[k])
                    body.data[body.len + (k - voff0) / 8] |= (uint8_t)(1u << ((k - voff0) % 8));
            body.len += nb;
        } else if (voff > voff0) { /* a page of only nulls has no values (and vals may be NULL) */
            ls_buf_append(&body, c->vals.data + voff0, voff - voff0);
        }
        st = write_page(w, cm, PAGE_DATA, &body, (int32_t)(l - l0),
                        cm->dict ? ENC_RLE_DICTIONARY : ENC_PLAIN);
        page_count++;
    } while (st == LS_OK && l < c->nlevels);
    w->body = body;
    return st;
}

static void merge_file_stats(ls_pq_writer_t *w, pq_col_t *c, const chunk_meta_t *cm)
{
    int type = w->fields[c->field].type;
    ls_pq_colstats_t *f = &c->file;
    f->compressed_bytes += cm->compressed;
    f->num_values += cm->num_values;
    f->null_count += cm->null_count;
    if (!cm->has_bounds) return;
    if (!f->has_bounds) {
        set_buf(&f->min, cm->min.data, cm->min.len);
        set_buf(&f->max, cm->max.data, cm->max.len);
        f->has_bounds = 1;
        return;
    }
    if (cmp_plain(type, c->sbytes, cm->min.data, cm->min.len, f->min.data, f->min.len) < 0)
        set_buf(&f->min, cm->min.data, cm->min.len);
    if (cmp_plain(type, c->sbytes, cm->max.data, cm->max.len, f->max.data, f->max.len) > 0)
        set_buf(&f->max, cm->max.data, cm->max.len);
}

static ls_status flush_row_group(ls_pq_writer_t *w)
{
    if (w->rg_rows == 0) return LS_OK;
    if (w->nrgs == w->rg_cap) {
        w->rg_cap = w->rg_cap ? w->rg_cap * 2 : 4;
        w->rgs = ls_realloc(w->rgs, (size_t)w->rg_cap * sizeof *w->rgs);
    }
    rg_meta_t *rg = &w->rgs[w->nrgs];
    memset(rg, 0, sizeof *rg);
    rg->chunks = LS_NEWN(chunk_meta_t, w->ncols);
    rg->num_rows = w->rg_rows;
    rg->file_offset = (int64_t)w->out->len;
    w->nrgs++;
    for (size_t i = 0; i < w->ncols; i++) {
        ls_status st = flush_column(w, &w->cols[i], &rg->chunks[i]);
        if (st != LS_OK) return st;
        rg->total_bytes += rg->chunks[i].uncompressed;
        rg->total_compressed += rg->chunks[i].compressed;
        merge_file_stats(w, &w->cols[i], &rg->chunks[i]);
        col_reset_chunk(w, &w->cols[i]);
    }
    w->rg_rows = 0;
    w->buffered = 0;
    return LS_OK;
}

ls_status ls_pq_end_row(ls_pq_writer_t *w)
{
    if (w->st != LS_OK) return w->st;
    for (size_t i = 0; i < w->ncols; i++) {
        if (w->cols[i].rows_started != (size_t)w->rg_rows + 1) {
            fail(w, "column %s: no entry in row %lld", w->cols[i].path, (long long)w->rows);
            return w->st;
        }
    }
    w->rg_rows++;
    w->rows++;
    if (w->buffered >= w->o.row_group_bytes) return flush_row_group(w);
    return LS_OK;
}

/* ---- footer ---------------------------------------------------------- */

static void write_logical(ls_tc_t *t, const ls_pq_field_t *f)
{
    ls_pq_logical lt = f->logical;
    if (lt == LS_PQ_LT_NONE) return;
    ls_tc_struct_begin(t, 10); /* LogicalType union */
    switch (lt) {
    case LS_PQ_LT_DECIMAL:
        ls_tc_struct_begin(t, 5); /* DecimalType */
        ls_tc_i32(t, 1, f->scale);
        ls_tc_i32(t, 2, f->precision);
        break;
    case LS_PQ_LT_STRING: ls_tc_struct_begin(t, 1); break;
    case LS_PQ_LT_MAP: ls_tc_struct_begin(t, 2); break;
    case LS_PQ_LT_LIST: ls_tc_struct_begin(t, 3); break;
    case LS_PQ_LT_DATE: ls_tc_struct_begin(t, 6); break;
    case LS_PQ_LT_UUID: ls_tc_struct_begin(t, 14); break;
    case LS_PQ_LT_TIME_US:
        ls_tc_struct_begin(t, 7); /* TimeType */
        ls_tc_bool(t, 1, 0);      /* isAdjustedToUTC: Iceberg's time is local */
        ls_tc_struct_begin(t, 2); /* TimeUnit union */
        ls_tc_struct_begin(t, 2); /* MICROS */
        ls_tc_struct_end(t);
        ls_tc_struct_end(t);
        break;
    default: /* TIMESTAMP */
        ls_tc_struct_begin(t, 8);
        ls_tc_bool(t, 1, lt == LS_PQ_LT_TIMESTAMP_US_UTC);
        ls_tc_struct_begin(t, 2); /* TimeUnit union */
        ls_tc_struct_begin(t, 2); /* MICROS */
        ls_tc_struct_end(t);
        ls_tc_struct_end(t);
        break;
    }
    ls_tc_struct_end(t);
    ls_tc_struct_end(t);
}

static int converted_of(ls_pq_logical lt)
{
    switch (lt) {
    case LS_PQ_LT_STRING: return CT_UTF8;
    case LS_PQ_LT_MAP: return CT_MAP;
    case LS_PQ_LT_LIST: return CT_LIST;
    case LS_PQ_LT_DATE: return CT_DATE;
    case LS_PQ_LT_DECIMAL: return CT_DECIMAL;
    case LS_PQ_LT_TIMESTAMP_US_UTC: return CT_TIMESTAMP_MICROS;
    default: return -1;
    }
}

static void write_stats(ls_pq_writer_t *w, ls_tc_t *t, const chunk_meta_t *cm, int type)
{
    ls_tc_struct_begin(t, 12);
    ls_tc_i64(t, 3, cm->null_count);
    int bounds = cm->has_bounds;
    if (bounds && (type == LS_PQ_BYTE_ARRAY || type == LS_PQ_FIXED_LEN_BYTE_ARRAY) &&
        (cm->min.len > w->o.stats_max_bytes || cm->max.len > w->o.stats_max_bytes))
        bounds = 0;
    if (bounds) {
        ls_tc_binary(t, 5, cm->max.data, cm->max.len);
        ls_tc_binary(t, 6, cm->min.data, cm->min.len);
    }
    ls_tc_struct_end(t);
}

ls_status ls_pq_writer_finish(ls_pq_writer_t *w)
{
    if (w->finished) return LS_EINVAL;
    if (w->st != LS_OK) return w->st;
    for (size_t i = 0; i < w->ncols; i++)
        if (w->cols[i].rows_started != (size_t)w->rg_rows) {
            fail(w, "column %s: entries after the last end_row", w->cols[i].path);
            return w->st;
        }
    ls_status st = flush_row_group(w);
    if (st != LS_OK) return st;
    w->finished = 1;
    ls_buf_t meta;
    ls_buf_init(&meta);
    ls_tc_t t;
    ls_tc_init(&t, &meta);
    ls_tc_i32(&t, 1, 2); /* version */
    ls_tc_list_begin(&t, 2, LS_TC_STRUCT, (uint32_t)w->nfields);
    for (size_t i = 0; i < w->nfields; i++) {
        const ls_pq_field_t *f = &w->fields[i];
        ls_tc_elem_struct_begin(&t);
        if (f->type != LS_PQ_GROUP) ls_tc_i32(&t, 1, f->type);
        if (f->type == LS_PQ_FIXED_LEN_BYTE_ARRAY) ls_tc_i32(&t, 2, f->type_length);
        if (i > 0) ls_tc_i32(&t, 3, f->repetition);
        ls_tc_string(&t, 4, f->name);
        if (f->type == LS_PQ_GROUP) ls_tc_i32(&t, 5, f->nchildren);
        int ct = converted_of(f->logical);
        if (ct >= 0) ls_tc_i32(&t, 6, ct);
        if (f->logical == LS_PQ_LT_DECIMAL) { /* the legacy form beside the LogicalType */
            ls_tc_i32(&t, 7, f->scale);
            ls_tc_i32(&t, 8, f->precision);
        }
        if (i > 0 && f->field_id >= 0) ls_tc_i32(&t, 9, f->field_id);
        write_logical(&t, f);
        ls_tc_struct_end(&t);
    }
    ls_tc_i64(&t, 3, w->rows);
    ls_tc_list_begin(&t, 4, LS_TC_STRUCT, (uint32_t)w->nrgs);
    for (int r = 0; r < w->nrgs; r++) {
        const rg_meta_t *rg = &w->rgs[r];
        ls_tc_elem_struct_begin(&t);
        ls_tc_list_begin(&t, 1, LS_TC_STRUCT, (uint32_t)w->ncols);
        for (size_t i = 0; i < w->ncols; i++) {
            const pq_col_t *c = &w->cols[i];
            const chunk_meta_t *cm = &rg->chunks[i];
            int type = w->fields[c->field].type;
            ls_tc_elem_struct_begin(&t); /* ColumnChunk */
            ls_tc_i64(&t, 2, cm->dict ? cm->dict_page_offset : cm->data_page_offset);
            ls_tc_struct_begin(&t, 3); /* ColumnMetaData */
            ls_tc_i32(&t, 1, type);
            if (cm->dict) {
                ls_tc_list_begin(&t, 2, LS_TC_I32, 3);
                ls_tc_elem_i32(&t, ENC_PLAIN);
                ls_tc_elem_i32(&t, ENC_RLE);
                ls_tc_elem_i32(&t, ENC_RLE_DICTIONARY);
            } else {
                ls_tc_list_begin(&t, 2, LS_TC_I32, 2);
                ls_tc_elem_i32(&t, ENC_PLAIN);
                ls_tc_elem_i32(&t, ENC_RLE);
            }
            ls_tc_list_begin(&t, 3, LS_TC_BINARY, (uint32_t)c->nparts);
            for (int k = 0; k < c->nparts; k++)
                ls_tc_elem_binary(&t, c->parts[k], strlen(c->parts[k]));
            ls_tc_i32(&t, 4, w->o.codec);
            ls_tc_i64(&t, 5, cm->num_values);
            ls_tc_i64(&t, 6, cm->uncompressed);
            ls_tc_i64(&t, 7, cm->compressed);
            ls_tc_i64(&t, 9, cm->data_page_offset);
            if (cm->dict) ls_tc_i64(&t, 11, cm->dict_page_offset);
            write_stats(w, &t, cm, type);
            ls_tc_struct_end(&t); /* ColumnMetaData */
            ls_tc_struct_end(&t); /* ColumnChunk */
        }
        ls_tc_i64(&t, 2, rg->total_bytes);
        ls_tc_i64(&t, 3, rg->num_rows);
        ls_tc_i64(&t, 5, rg->file_offset);
        ls_tc_i64(&t, 6, rg->total_compressed);
        ls_tc_struct_end(&t);
    }
    if (w->nkv) {
        ls_tc_list_begin(&t, 5, LS_TC_STRUCT, (uint32_t)(w->nkv / 2));
        for (int i = 0; i < w->nkv; i += 2) {
            ls_tc_elem_struct_begin(&t);
            ls_tc_string(&t, 1, w->kv[i]);
            ls_tc_string(&t, 2, w->kv[i + 1]);
            ls_tc_struct_end(&t);
        }
    }
    ls_tc_string(&t, 6, w->o.created_by);
    ls_tc_list_begin(&t, 7, LS_TC_STRUCT, (uint32_t)w->ncols);
    for (size_t i = 0; i < w->ncols; i++) {
        ls_tc_elem_struct_begin(&t); /* ColumnOrder union */
        ls_tc_struct_begin(&t, 1);   /* TYPE_ORDER */
        ls_tc_struct_end(&t);
        ls_tc_struct_end(&t);
    }
    ls_tc_end(&t);
    ls_buf_append(w->out, meta.data, meta.len);
    u32le(w->out, (uint32_t)meta.len);
    ls_buf_append(w->out, "PAR1", 4);
    ls_buf_free(&meta);
    return LS_OK;
}

int64_t ls_pq_num_rows(const ls_pq_writer_t *w) { return w->rows; }
int ls_pq_num_row_groups(const ls_pq_writer_t *w) { return w->nrgs; }
size_t ls_pq_buffered_bytes(const ls_pq_writer_t *w) { return w->buffered; }
const char *ls_pq_error(const ls_pq_writer_t *w) { return w->err; }

const ls_pq_colstats_t *ls_pq_column_stats(const ls_pq_writer_t *w, int col)
{
    if (col < 0 || (size_t)col >= w->ncols) return NULL;
    return &w->cols[col].file;
}
