/* Cold reads from a raw table: RecordBatch v2 rebuild and Parquet row scan.
 * Invariants and what is not preserved: cold_batches.h. Record layout
 * (Kafka docs/implementation.html "Record"): length varint | attributes
 * int8 | timestampDelta varlong | offsetDelta varint | keyLength varint
 * (-1 null) | key | valueLength varint | value | headers count varint |
 * per header: keyLength varint | key | valueLength varint (-1 null) | value.
 * Varints are zigzag, minimal length (the encoding every Kafka client
 * writes, so the record bytes match a producer's). */
#include "compact/cold_batches.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/compress.h"
#include "base/crc32c.h"
#include "records/records.h"

/* ----------------------------------------------------------------- records */

static size_t uvarint_put(uint8_t *p, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        p[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (uint8_t)v;
    return n;
}

static size_t varlong_put(uint8_t *p, int64_t v)
{
    return uvarint_put(p, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

static void buf_varlong(ls_buf_t *b, int64_t v)
{
    uint8_t tmp[10];
    ls_buf_append(b, tmp, varlong_put(tmp, v));
}

static void buf_bytes(ls_buf_t *b, const uint8_t *p, int64_t len)
{
    buf_varlong(b, len < 0 ? -1 : len);
    if (len > 0) ls_buf_append(b, p, (size_t)len);
}

void ls_cold_batcher_init(ls_cold_batcher_t *b, int codec, bool log_append_time,
                          size_t target_bytes)
{
    memset(b, 0, sizeof *b);
    b->codec = codec;
    b->log_append_time = log_append_time;
    b->target_bytes = target_bytes ? target_bytes : 1;
    ls_buf_init(&b->out);
    ls_buf_init(&b->recs);
    b->prev_offset = -1;
}

void ls_cold_batcher_free(ls_cold_batcher_t *b)
{
    ls_buf_free(&b->out);
    ls_buf_free(&b->recs);
}

size_t ls_cold_batcher_bytes(const ls_cold_batcher_t *b)
{
    return b->out.len + (b->count ? LS_RB_HEADER_SIZE + b->recs.len : 0);
}

ls_status ls_cold_batcher_flush(ls_cold_batcher_t *b)
{
    if (b->count == 0) return LS_OK;
    ls_buf_t z;
    ls_buf_init(&z);
    const uint8_t *body = b->recs.data;
    size_t body_len = b->recs.len;
    if (b->codec != LS_CODEC_NONE) {
        ls_status st = ls_compress(b->codec, b->recs.data, b->recs.len, &z);
        if (st != LS_OK) {
            ls_buf_free(&z);
            return LS_EIO;
        }
        body = z.data;
        body_len = z.len;
    }
    uint8_t h[LS_RB_HEADER_SIZE];
    memset(h, 0, sizeof h);
    ls_be64_put(h + LS_RB_OFF_BASE_OFFSET, (uint64_t)b->base_offset);
    ls_be32_put(h + LS_RB_OFF_LENGTH, (uint32_t)(LS_RB_HEADER_SIZE - 12 + body_len));
    ls_be32_put(h + LS_RB_OFF_LEADER_EPOCH, 0);
    h[LS_RB_OFF_MAGIC] = 2;
    uint16_t attrs = (uint16_t)(b->codec & 7) | (b->log_append_time ? 0x8 : 0);
    ls_be16_put(h + LS_RB_OFF_ATTRIBUTES, attrs);
    ls_be32_put(h + LS_RB_OFF_LAST_OFFSET_DELTA, (uint32_t)(b->last_offset - b->base_offset));
    ls_be64_put(h + LS_RB_OFF_BASE_TIMESTAMP, (uint64_t)b->base_ts);
    ls_be64_put(h + LS_RB_OFF_MAX_TIMESTAMP, (uint64_t)b->max_ts);
    ls_be64_put(h + LS_RB_OFF_PRODUCER_ID, (uint64_t)-1);
    ls_be16_put(h + LS_RB_OFF_PRODUCER_EPOCH, (uint16_t)-1);
    ls_be32_put(h + LS_RB_OFF_BASE_SEQUENCE, (uint32_t)-1);
    ls_be32_put(h + LS_RB_OFF_RECORD_COUNT, (uint32_t)b->count);
    uint32_t crc = ls_crc32c(0, h + LS_RB_OFF_ATTRIBUTES, LS_RB_HEADER_SIZE - LS_RB_OFF_ATTRIBUTES);
    crc = ls_crc32c(crc, body, body_len);
    ls_be32_put(h + LS_RB_OFF_CRC, crc);
    ls_buf_append(&b->out, h, sizeof h);
    ls_buf_append(&b->out, body, body_len);
    ls_buf_free(&z);
    b->nbatches++;
    b->count = 0;
    b->recs.len = 0;
    return LS_OK;
}

ls_status ls_cold_batcher_add(ls_cold_batcher_t *b, const ls_raw_record_t *r)
{
    if (r->offset < 0 || r->offset <= b->prev_offset) return LS_EINVAL;
    for (size_t i = 0; i < r->nheaders; i++)
        if (!r->headers[i].key) return LS_EINVAL;
    /* Cut before this record when the open batch is full, when its offset
     * delta would leave int32, or (LogAppendTime) when its append time
     * differs: such a batch has one timestamp for all its records. */
    if (b->count > 0 && (b->recs.len >= b->target_bytes || b->count >= LS_COLD_MAX_BATCH_RECORDS ||
                         r->offset - b->base_offset > INT32_MAX ||
                         (b->log_append_time && r->timestamp_ms != b->base_ts))) {
        ls_status st = ls_cold_batcher_flush(b);
        if (st != LS_OK) return st;
    }
    if (b->count == 0) {
        b->base_offset = r->offset;
        b->base_ts = b->max_ts = r->timestamp_ms;
    }
    /* The body first, then its length in front of it. */
    ls_buf_t body;
    ls_buf_init(&body);
    ls_buf_append_u8(&body, 0); /* record attributes: unused */
    buf_varlong(&body, b->log_append_time ? 0 : r->timestamp_ms - b->base_ts);
    buf_varlong(&body, r->offset - b->base_offset);
    buf_bytes(&body, r->key, r->key_len);
    buf_bytes(&body, r->value, r->value_len);
    buf_varlong(&body, (int64_t)r->nheaders);
    for (size_t i = 0; i < r->nheaders; i++) {
        const ls_raw_header_t *h = &r->headers[i];
        buf_bytes(&body, (const uint8_t *)h->key, (int64_t)h->key_len);
        buf_bytes(&body, h->value, h->value_len);
    }
    buf_varlong(&b->recs, (int64_t)body.len);
    ls_buf_append(&b->recs, body.data, body.len);
    ls_buf_free(&body);
    if (r->timestamp_ms > b->max_ts) b->max_ts = r->timestamp_ms;
    b->last_offset = b->prev_offset = r->offset;
    b->count++;
    b->records++;
    return LS_OK;
}

/* ------------------------------------------------------------ Parquet scan */

enum { C_PART, C_OFF, C_TS, C_KEY, C_VAL, C_HKEY, C_HVAL, NCOLS };

static const struct {
    int field_id;
    int type;
    const char *name;
} want[NCOLS] = {
    {LS_RAW_FID_PARTITION, LS_PQ_INT32, "partition"},
    {LS_RAW_FID_OFFSET, LS_PQ_INT64, "offset"},
    {LS_RAW_FID_TIMESTAMP, LS_PQ_INT64, "timestamp"},
    {LS_RAW_FID_KEY, LS_PQ_BYTE_ARRAY, "key"},
    {LS_RAW_FID_VALUE, LS_PQ_BYTE_ARRAY, "value"},
    {LS_RAW_FID_HEADER_KEY, LS_PQ_BYTE_ARRAY, "headers.element.key"},
    {LS_RAW_FID_HEADER_VALUE, LS_PQ_BYTE_ARRAY, "headers.element.value"},
};

/* A row group's int64 column statistic (plain: 8 bytes little-endian). */
static bool stat_i64(const uint8_t *p, size_t len, int64_t *v)
{
    if (!p || len != 8) return false;
    uint64_t u = 0;
    for (int i = 7; i >= 0; i--)
        u = u << 8 | p[i];
    *v = (int64_t)u;
    return true;
}

/* Scratch kept across row groups: the current row's headers and their
 * key / value triples. */
typedef struct scan_bufs {
    ls_raw_header_t *hs;
    ls_pqr_triple_t *tk, *tv;
    size_t cap;
} scan_bufs_t;

/* A repeated column read row by row: the triple that starts the next row
 * (rep 0) is held back when the previous row's end is found. */
typedef struct rep_col {
    ls_pqr_iter_t *it;
    ls_pqr_triple_t pending;
    bool has_pending;
} rep_col_t;

enum { KEEP_NONE, KEEP_KEYS, KEEP_VALUES };
/* Reads the next row's triples of c (*n of them), kept in sb->tk or sb->tv
 * (keep; the arrays grow together); -1 on a read error or a chunk that
 * ends early. */
static int rep_row(rep_col_t *c, int keep, size_t *n, scan_bufs_t *sb)
{
    *n = 0;
    ls_pqr_triple_t t;
    if (c->has_pending) {
        t = c->pending;
        c->has_pending = false;
    } else if (ls_pqr_next(c->it, &t) != 1) {
        return -1;
    }
    for (;;) {
        if (keep != KEEP_NONE) {
            if (*n == sb->cap) {
                sb->cap = sb->cap ? 2 * sb->cap : 16;
                sb->hs = ls_realloc(sb->hs, sb->cap * sizeof *sb->hs);
                sb->tk = ls_realloc(sb->tk, sb->cap * sizeof *sb->tk);
                sb->tv = ls_realloc(sb->tv, sb->cap * sizeof *sb->tv);
            }
            (keep == KEEP_KEYS ? sb->tk : sb->tv)[*n] = t;
        }
        (*n)++;
        int rc = ls_pqr_next(c->it, &t);
        if (rc == 0) return 0;
        if (rc < 0) return -1;
        if (t.rep == 0) {
            c->pending = t;
            c->has_pending = true;
            return 0;
        }
    }
}

/* One row group. The offset and partition columns are read first (12 bytes
 * a row); the other columns then skip, page by page where they can
 * (ls_pqr_skip: pages wholly skipped are not even decompressed), over the
 * rows before the first wanted one, so a read in the middle of a large row
 * group decodes only what it returns. */
static ls_status scan_rg(ls_pqr_t *r, int rg, const int *cols, const ls_pqr_elem_t **el,
                         int32_t partition, int64_t from, int64_t to, ls_cold_row_cb cb, void *arg,
                         bool *stop, scan_bufs_t *sb, char *err, size_t errlen)
{
    ls_pqr_flat_t fo = {0}, fp = {0};
    ls_pqr_iter_t *it[C_VAL + 1] = {0};
    rep_col_t hk = {0}, hv = {0};
    ls_status st = ls_pqr_read_flat(r, rg, cols[C_OFF], &fo, err, errlen);
    if (st == LS_OK) st = ls_pqr_read_flat(r, rg, cols[C_PART], &fp, err, errlen);
    if (st != LS_OK) goto out;
    int64_t nrows = fo.n;
    if (fp.n != nrows) {
        snprintf(err, errlen, "row group %d: %lld offsets, %lld partitions", rg, (long long)nrows,
                 (long long)fp.n);
        st = LS_ECORRUPT;
        goto out;
    }
    for (int k = C_TS; k <= C_VAL && st == LS_OK; k++)
        if (!(it[k] = ls_pqr_iter_new(r, rg, cols[k], &st, err, errlen))) goto out;
    if (!(hk.it = ls_pqr_iter_new(r, rg, cols[C_HKEY], &st, err, errlen))) goto out;
    if (!(hv.it = ls_pqr_iter_new(r, rg, cols[C_HVAL], &st, err, errlen))) goto out;
    int64_t pos = 0; /* rows consumed from the value iterators */
    for (int64_t i = 0; i < nrows && !*stop; i++) {
        int64_t off = fo.v[i].v.i64;
        if (fp.v[i].v.i32 != partition || off < from || off > to) continue;
        /* bring every iterator to row i */
        int64_t gap = i - pos;
        if (gap > 0) {
            for (int k = C_TS; k <= C_VAL; k++)
                if (ls_pqr_skip(it[k], gap) < 0) goto read_error;
            for (int64_t g = 0; g < gap; g++) {
                size_t n;
                if (rep_row(&hk, KEEP_NONE, &n, sb) < 0 || rep_row(&hv, KEEP_NONE, &n, sb) < 0)
                    goto read_error;
            }
        }
        ls_pqr_triple_t t[C_VAL + 1];
        for (int k = C_TS; k <= C_VAL; k++)
            if (ls_pqr_next(it[k], &t[k]) != 1) goto read_error;
        size_t nk, nv;
        if (rep_row(&hk, KEEP_KEYS, &nk, sb) < 0 || rep_row(&hv, KEEP_VALUES, &nv, sb) < 0)
            goto read_error;
        const ls_pqr_triple_t *vv = sb->tv;
        pos = i + 1;
        if (nk != nv) {
            snprintf(err, errlen, "row group %d, offset %lld: %zu header keys, %zu values", rg,
                     (long long)off, nk, nv);
            st = LS_ECORRUPT;
            goto out;
        }
        size_t nh = 0;
        for (size_t h = 0; h < nk; h++) {
            if (sb->tk[h].def < el[C_HKEY]->max_def) continue; /* null or empty list */
            bool v = vv[h].def == el[C_HVAL]->max_def;
            sb->hs[nh++] = (ls_raw_header_t){(const char *)sb->tk[h].bytes, sb->tk[h].len,
                                             v ? vv[h].bytes : NULL, v ? (int64_t)vv[h].len : -1};
        }
        bool kp = t[C_KEY].def == el[C_KEY]->max_def;
        bool vp = t[C_VAL].def == el[C_VAL]->max_def;
        int64_t us = t[C_TS].v.i64;
        /* Kafka ms * 1000 (iceberg_raw.h); floor for negative ones */
        int64_t ms = us >= 0 ? us / 1000 : -((-us + 999) / 1000);
        ls_raw_record_t row = {.partition = partition,
                               .offset = off,
                               .timestamp_ms = ms,
                               .key = kp ? t[C_KEY].bytes : NULL,
                               .key_len = kp ? (int64_t)t[C_KEY].len : -1,
                               .value = vp ? t[C_VAL].bytes : NULL,
                               .value_len = vp ? (int64_t)t[C_VAL].len : -1,
                               .headers = sb->hs,
                               .nheaders = nh};
        if (cb(arg, &row)) *stop = true;
    }
    goto out;
read_error:
    /* the first iterator with an error names it; else a column ended early */
    st = LS_ECORRUPT;
    snprintf(err, errlen, "row group %d: a column ends before its %lld rows", rg, (long long)nrows);
    for (int k = C_TS; k <= C_VAL + 2; k++) {
        ls_pqr_iter_t *x = k <= C_VAL ? it[k] : k == C_VAL + 1 ? hk.it : hv.it;
        if (x && ls_pqr_iter_status(x) != LS_OK) {
            st = ls_pqr_iter_status(x);
            snprintf(err, errlen, "row group %d, column %s: %s", rg,
                     k <= C_VAL       ? el[k]->path
                     : k == C_VAL + 1 ? "headers key"
                                      : "headers value",
                     ls_pqr_iter_error(x));
            break;
        }
    }
out:
    for (int k = C_TS; k <= C_VAL; k++)
        if (it[k]) ls_pqr_iter_free(it[k]);
    if (hk.it) ls_pqr_iter_free(hk.it);
    if (hv.it) ls_pqr_iter_free(hv.it);
    ls_pqr_flat_free(&fo);
    ls_pqr_flat_free(&fp);
    return st;
}

ls_status ls_cold_scan_rows(ls_pqr_t *r, int32_t partition, int64_t from, int64_t to,
                            ls_cold_row_cb cb, void *arg, char *err, size_t errlen)
{
    int cols[NCOLS];
    const ls_pqr_elem_t *el[NCOLS];
    for (int k = 0; k < NCOLS; k++) {
        cols[k] = -1;
        for (size_t c = 0; c < ls_pqr_num_columns(r); c++)
            if (ls_pqr_column(r, (int)c)->field_id == want[k].field_id) cols[k] = (int)c;
        if (cols[k] < 0) {
            snprintf(err, errlen, "not a raw table data file: no column with field id %d (%s)",
                     want[k].field_id, want[k].name);
            return LS_EINVAL;
        }
        el[k] = ls_pqr_column(r, cols[k]);
        if (el[k]->type != want[k].type || (k < C_HKEY && el[k]->max_rep != 0) ||
            (k >= C_HKEY && el[k]->max_rep != 1)) {
            snprintf(err, errlen, "raw column %s (field id %d) has type %d, repetition %d",
                     want[k].name, want[k].field_id, el[k]->type, el[k]->max_rep);
            return LS_EINVAL;
        }
    }
    ls_status st = LS_OK;
    bool stop = false;
    scan_bufs_t sb = {0};
    for (int rg = 0; rg < ls_pqr_num_row_groups(r) && !stop && st == LS_OK; rg++) {
        /* Skip row groups whose offsets miss the range. */
        const ls_pqr_chunk_t *oc = ls_pqr_chunk(r, rg, cols[C_OFF]);
        int64_t lo, hi;
        if (oc->stats.has_min && oc->stats.has_max &&
            stat_i64(oc->stats.min, oc->stats.min_len, &lo) &&
            stat_i64(oc->stats.max, oc->stats.max_len, &hi) && (hi < from || lo > to))
            continue;
        st = scan_rg(r, rg, cols, el, partition, from, to, cb, arg, &stop, &sb, err, errlen);
    }
    ls_free(sb.hs);
    ls_free(sb.tk);
    ls_free(sb.tv);
    return st;
}

/* ---------------------------------------------------------------- one read */

typedef struct read_ctx {
    ls_cold_batcher_t b;
    size_t max_bytes;
    bool stop_at_gap;
    ls_cold_read_t *out;
    ls_status st;
    bool unsorted; /* a row came below the previous one: redo sorted */
    /* the sorted pass: copies of every row in range */
    ls_raw_record_t *rows;
    size_t nrows, caprows;
    ls_buf_t arena; /* their bytes; pointers fixed up after the scan */
} read_ctx_t;

/* A record's size in a batch, at most (the varints at their widest). */
static size_t record_bound(const ls_raw_record_t *r)
{
    size_t n = 5 + 1 + 10 + 5 + 5 + 5 + 5;
    if (r->key_len > 0) n += (size_t)r->key_len;
    if (r->value_len > 0) n += (size_t)r->value_len;
    for (size_t i = 0; i < r->nheaders; i++)
        n += 10 + r->headers[i].key_len +
             (r->headers[i].value_len > 0 ? (size_t)r->headers[i].value_len : 0);
    return n;
}

/* Adds one row unless max_bytes is reached: 1 to stop. Past the first
 * record it stops before max_bytes would be exceeded (the open batch
 * counted uncompressed: compression only shrinks it, or grows it by less
 * than the header bound for incompressible bytes). */
static int emit(read_ctx_t *c, const ls_raw_record_t *row)
{
    if (c->stop_at_gap && c->b.prev_offset >= 0 && row->offset != c->b.prev_offset + 1) {
        c->out->gap = true;
        return 1;
    }
    if (c->b.records > 0 &&
        ls_cold_batcher_bytes(&c->b) + LS_RB_HEADER_SIZE + record_bound(row) > c->max_bytes) {
        c->out->full = true;
        return 1;
    }
    c->st = ls_cold_batcher_add(&c->b, row);
    if (c->st != LS_OK) return 1;
    c->out->next_offset = row->offset + 1;
    return 0;
}

static int on_row(void *arg, const ls_raw_record_t *row)
{
    read_ctx_t *c = arg;
    if (c->b.prev_offset >= 0 && row->offset <= c->b.prev_offset) {
        c->unsorted = true;
        return 1;
    }
    return emit(c, row);
}

/* The sorted pass keeps each row's bytes in the arena as positions
 * (pointers are fixed once the arena stops moving): key, value, then per
 * header a ls_raw_header_t with positions, then the header bytes. */
#define POS(p) ((const uint8_t *)(uintptr_t)(p))
static size_t arena_put(ls_buf_t *a, const void *p, size_t n)
{
    size_t at = a->len;
    if (n) ls_buf_append(a, p, n);
    return at;
}

static int on_row_copy(void *arg, const ls_raw_record_t *row)
{
    read_ctx_t *c = arg;
    if (c->nrows == c->caprows) {
        c->caprows = c->caprows ? 2 * c->caprows : 256;
        c->rows = ls_realloc(c->rows, c->caprows * sizeof *c->rows);
    }
    ls_raw_record_t cp = *row;
    cp.key = POS(arena_put(&c->arena, row->key, row->key_len > 0 ? (size_t)row->key_len : 0));
    cp.value =
        POS(arena_put(&c->arena, row->value, row->value_len > 0 ? (size_t)row->value_len : 0));
    ls_raw_header_t *hs = LS_NEWN(ls_raw_header_t, row->nheaders ? row->nheaders : 1);
    for (size_t i = 0; i < row->nheaders; i++) {
        hs[i] = row->headers[i];
        hs[i].key = (const char *)POS(arena_put(&c->arena, row->headers[i].key, hs[i].key_len));
        hs[i].value =
            POS(arena_put(&c->arena, row->headers[i].value,
                          row->headers[i].value_len > 0 ? (size_t)row->headers[i].value_len : 0));
    }
    cp.headers = hs;
    c->rows[c->nrows++] = cp;
    return 0;
}

static int row_cmp(const void *a, const void *b)
{
    int64_t x = ((const ls_raw_record_t *)a)->offset, y = ((const ls_raw_record_t *)b)->offset;
    return x < y ? -1 : x > y;
}

/* Rows of a file whose offsets do not ascend (not what the materializer
 * and the file rewrite write today, but a valid table): copied, sorted,
 * then batched. A repeated offset is refused (LS_ECORRUPT): two rows for
 * one record would serve it twice. */
static ls_status read_sorted(ls_pqr_t *r, int32_t partition, int64_t from, int64_t to,
                             read_ctx_t *c, char *err, size_t errlen)
{
    ls_buf_init(&c->arena);
    ls_status st = ls_cold_scan_rows(r, partition, from, to, on_row_copy, c, err, errlen);
    if (st == LS_OK) {
        qsort(c->rows, c->nrows, sizeof *c->rows, row_cmp);
        for (size_t i = 0; i < c->nrows && st == LS_OK; i++) {
            ls_raw_record_t *x = &c->rows[i];
            if (i > 0 && x->offset == c->rows[i - 1].offset) {
                snprintf(err, errlen, "partition %d, offset %lld: two rows", partition,
                         (long long)x->offset);
                st = LS_ECORRUPT;
                break;
            }
            x->key = x->key_len >= 0 ? c->arena.data + (uintptr_t)x->key : NULL;
            x->value = x->value_len >= 0 ? c->arena.data + (uintptr_t)x->value : NULL;
            ls_raw_header_t *hs = (ls_raw_header_t *)x->headers;
            for (size_t h = 0; h < x->nheaders; h++) {
                hs[h].key = (const char *)(c->arena.data + (uintptr_t)hs[h].key);
                hs[h].value = hs[h].value_len >= 0 ? c->arena.data + (uintptr_t)hs[h].value : NULL;
            }
            if (emit(c, x)) break;
        }
    }
    for (size_t i = 0; i < c->nrows; i++)
        ls_free((void *)c->rows[i].headers);
    ls_free(c->rows);
    ls_buf_free(&c->arena);
    return st;
}

ls_status ls_cold_read_parquet(const uint8_t *data, size_t len, int32_t partition, int64_t from,
                               int64_t to, int codec, bool log_append_time, size_t batch_bytes,
                               size_t max_bytes, bool stop_at_gap, ls_cold_read_t *out, char *err,
                               size_t errlen)
{
    memset(out, 0, sizeof *out);
    ls_buf_init(&out->batches);
    out->next_offset = from;
    ls_status st;
    ls_pqr_t *r = ls_pqr_open(data, len, &st, err, errlen);
    if (!r) return st;
    read_ctx_t c = {.max_bytes = max_bytes, .stop_at_gap = stop_at_gap, .out = out, .st = LS_OK};
    ls_cold_batcher_init(&c.b, codec, log_append_time, batch_bytes);
    st = ls_cold_scan_rows(r, partition, from, to, on_row, &c, err, errlen);
    if (st == LS_OK && c.unsorted) {
        ls_cold_batcher_free(&c.b);
        ls_cold_batcher_init(&c.b, codec, log_append_time, batch_bytes);
        out->next_offset = from;
        out->full = out->gap = false;
        st = read_sorted(r, partition, from, to, &c, err, errlen);
    }
    if (st == LS_OK && c.st != LS_OK) {
        st = c.st;
        snprintf(err, errlen, "rebuilding offset %lld of partition %d: %s",
                 (long long)out->next_offset, partition, ls_status_str(st));
    }
    if (st == LS_OK) st = ls_cold_batcher_flush(&c.b);
    if (st == LS_OK) {
        out->records = c.b.records;
        ls_buf_append(&out->batches, c.b.out.data, c.b.out.len);
    }
    ls_cold_batcher_free(&c.b);
    ls_pqr_free(r);
    return st;
}
