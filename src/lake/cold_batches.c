/* Cold reads from a raw table: RecordBatch v2 rebuild and Parquet row scan.
 * Invariants and what is not preserved: cold_batches.h. Record layout
 * (Kafka docs/implementation.html "Record"): length varint | attributes
 * int8 | timestampDelta varlong | offsetDelta varint | keyLength varint
 * (-1 null) | key | valueLength varint | value | headers count varint |
 * per header: keyLength varint | key | valueLength varint (-1 null) | value.
 * Varints are zigzag, minimal length (the encoding every Kafka client
 * writes, so the record bytes match a producer's). */
#include "lake/cold_batches.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/compress.h"
#include "base/crc32c.h"
#include "records/records.h"

/* ----------------------------------------------------------------- records
 *
 * Records are written once, straight where they end up: an uncompressed
 * batch's records go into `out` behind a reserved header (filled and
 * CRC'd in one pass when the batch closes); a compressed batch's records
 * go into the reused scratch `recs`, compressed into `out` behind its
 * header. Each record's length is computed before it is written (varint
 * widths are known), so a value is copied once, from the Parquet page to
 * the batch. */

static inline uint64_t zigzag(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }

static inline size_t uvarint_len(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static inline uint8_t *uvarint_put(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

/* a length-prefixed byte string (-1: null) */
static inline size_t bytes_len(int64_t len)
{
    return len < 0 ? 1 : uvarint_len(zigzag(len)) + (size_t)len;
}

static inline uint8_t *bytes_put(uint8_t *p, const uint8_t *src, int64_t len)
{
    p = uvarint_put(p, zigzag(len < 0 ? -1 : len));
    if (len > 0) {
        memcpy(p, src, (size_t)len);
        p += len;
    }
    return p;
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

/* The open batch's records, uncompressed. */
static size_t open_len(const ls_cold_batcher_t *b)
{
    if (!b->count) return 0;
    return b->codec == LS_CODEC_NONE ? b->out.len - b->open_at - LS_RB_HEADER_SIZE : b->recs.len;
}

size_t ls_cold_batcher_bytes(const ls_cold_batcher_t *b)
{
    if (b->codec == LS_CODEC_NONE) return b->out.len; /* the open batch is in out */
    return b->out.len + (b->count ? LS_RB_HEADER_SIZE + b->recs.len : 0);
}

ls_status ls_cold_batcher_flush(ls_cold_batcher_t *b)
{
    if (b->count == 0) return LS_OK;
    size_t at = b->open_at;
    if (b->codec != LS_CODEC_NONE) {
        at = b->out.len;
        ls_buf_reserve(&b->out, LS_RB_HEADER_SIZE);
        b->out.len += LS_RB_HEADER_SIZE;
        if (ls_compress(b->codec, b->recs.data, b->recs.len, &b->out) != LS_OK) {
            b->out.len = at;
            return LS_EIO;
        }
    }
    uint8_t *h = b->out.data + at;
    size_t body_len = b->out.len - at - LS_RB_HEADER_SIZE;
    memset(h, 0, LS_RB_HEADER_SIZE);
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
    /* one pass over attributes..end (the header's tail and the body are
     * contiguous here) */
    uint32_t crc =
        ls_crc32c(0, h + LS_RB_OFF_ATTRIBUTES, LS_RB_HEADER_SIZE - LS_RB_OFF_ATTRIBUTES + body_len);
    ls_be32_put(h + LS_RB_OFF_CRC, crc);
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
    if (b->count > 0 && (open_len(b) >= b->target_bytes || b->count >= LS_COLD_MAX_BATCH_RECORDS ||
                         r->offset - b->base_offset > INT32_MAX ||
                         (b->log_append_time && r->timestamp_ms != b->base_ts))) {
        ls_status st = ls_cold_batcher_flush(b);
        if (st != LS_OK) return st;
    }
    if (b->count == 0) {
        b->base_offset = r->offset;
        b->base_ts = b->max_ts = r->timestamp_ms;
        if (b->codec == LS_CODEC_NONE) { /* the header's place, filled at flush */
            b->open_at = b->out.len;
            ls_buf_reserve(&b->out, LS_RB_HEADER_SIZE);
            b->out.len += LS_RB_HEADER_SIZE;
        }
    }
    uint64_t ts_delta = zigzag(b->log_append_time ? 0 : r->timestamp_ms - b->base_ts);
    uint64_t off_delta = zigzag(r->offset - b->base_offset);
    size_t body = 1 + uvarint_len(ts_delta) + uvarint_len(off_delta) + bytes_len(r->key_len) +
                  bytes_len(r->value_len) + uvarint_len(zigzag((int64_t)r->nheaders));
    for (size_t i = 0; i < r->nheaders; i++)
        body += bytes_len((int64_t)r->headers[i].key_len) + bytes_len(r->headers[i].value_len);
    ls_buf_t *dst = b->codec == LS_CODEC_NONE ? &b->out : &b->recs;
    ls_buf_reserve(dst, 10 + body);
    uint8_t *p = dst->data + dst->len;
    p = uvarint_put(p, zigzag((int64_t)body));
    *p++ = 0; /* record attributes: unused */
    p = uvarint_put(p, ts_delta);
    p = uvarint_put(p, off_delta);
    p = bytes_put(p, r->key, r->key_len);
    p = bytes_put(p, r->value, r->value_len);
    p = uvarint_put(p, zigzag((int64_t)r->nheaders));
    for (size_t i = 0; i < r->nheaders; i++) {
        const ls_raw_header_t *h = &r->headers[i];
        p = bytes_put(p, (const uint8_t *)h->key, (int64_t)h->key_len);
        p = bytes_put(p, h->value, h->value_len);
    }
    dst->len = (size_t)(p - dst->data);
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

static bool stat_i32(const uint8_t *p, size_t len, int64_t *v)
{
    if (!p || len != 4) return false;
    *v = (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                   (uint32_t)p[3] << 24);
    return true;
}

void ls_cold_rg_bounds(const ls_pqr_t *r, int rg, int ocol, int pcol, ls_cold_rg_bounds_t *b)
{
    memset(b, 0, sizeof *b);
    const ls_pqr_chunk_t *oc = ls_pqr_chunk(r, rg, ocol);
    b->has_off = oc->stats.has_min && oc->stats.has_max &&
                 stat_i64(oc->stats.min, oc->stats.min_len, &b->off_lo) &&
                 stat_i64(oc->stats.max, oc->stats.max_len, &b->off_hi);
    const ls_pqr_chunk_t *pc = ls_pqr_chunk(r, rg, pcol);
    b->has_part = pc->stats.has_min && pc->stats.has_max &&
                  stat_i32(pc->stats.min, pc->stats.min_len, &b->part_lo) &&
                  stat_i32(pc->stats.max, pc->stats.max_len, &b->part_hi);
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

/* The scan cursor: one row group open at a time. Its offset and
 * partition columns are decoded whole when it opens (12 bytes a row); the
 * other columns' iterators (recycle mode: two page buffers each) then
 * skip, page by page where they can (ls_pqr_skip: pages wholly skipped are
 * not even decompressed), over rows before the first wanted one, so a read
 * in the middle of a large row group decodes only what it returns. The
 * cursor survives between reads of a ls_cold_file_t: a read continuing
 * where the last stopped decodes nothing twice. */
typedef struct scan {
    ls_pqr_t *r;
    int cols[NCOLS];
    const ls_pqr_elem_t *el[NCOLS];
    int32_t part; /* the partition the open row group was opened for */
    int rg;       /* the open row group, or the next to look at when none is open */
    bool open;
    int64_t nrows;
    int64_t *off;
    int32_t *pt;
    bool asc; /* the rows of `part` in this row group have ascending offsets */
    ls_pqr_iter_t *it[C_VAL + 1];
    rep_col_t hk, hv;
    bool no_headers; /* the open row group's header columns hold one null per row */
    int64_t pos;     /* rows consumed from the value iterators */
    int64_t i;       /* the next row to look at */
    bool held;       /* `row` (row i - 1) was read but not used: return it again */
    bool above;      /* a row of `part` was passed over for lying above `to` */
    ls_raw_record_t row;
    scan_bufs_t sb;
    uint64_t opened; /* row groups opened */
} scan_t;

static void scan_close_rg(scan_t *s)
{
    for (int k = C_TS; k <= C_VAL; k++) {
        ls_pqr_iter_free(s->it[k]);
        s->it[k] = NULL;
    }
    ls_pqr_iter_free(s->hk.it);
    ls_pqr_iter_free(s->hv.it);
    memset(&s->hk, 0, sizeof s->hk);
    memset(&s->hv, 0, sizeof s->hv);
    s->open = s->held = false;
}

/* Back to the file's first row group (for a read that cannot continue). */
static void scan_rewind(scan_t *s)
{
    scan_close_rg(s);
    s->rg = 0;
    s->above = false;
}

static void scan_free(scan_t *s)
{
    scan_close_rg(s);
    ls_free(s->off);
    ls_free(s->pt);
    ls_free(s->sb.hs);
    ls_free(s->sb.tk);
    ls_free(s->sb.tv);
}

/* Finds the raw columns by field id: LS_EINVAL when the file is not raw. */
static ls_status scan_init(scan_t *s, ls_pqr_t *r, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    s->r = r;
    for (int k = 0; k < NCOLS; k++) {
        s->cols[k] = -1;
        for (size_t c = 0; c < ls_pqr_num_columns(r); c++)
            if (ls_pqr_column(r, (int)c)->field_id == want[k].field_id) s->cols[k] = (int)c;
        if (s->cols[k] < 0) {
            snprintf(err, errlen, "not a raw table data file: no column with field id %d (%s)",
                     want[k].field_id, want[k].name);
            return LS_EINVAL;
        }
        const ls_pqr_elem_t *e = s->el[k] = ls_pqr_column(r, s->cols[k]);
        if (e->type != want[k].type || (k < C_HKEY && e->max_rep != 0) ||
            (k >= C_HKEY && e->max_rep != 1)) {
            snprintf(err, errlen, "raw column %s (field id %d) has type %d, repetition %d",
                     want[k].name, want[k].field_id, e->type, e->max_rep);
            return LS_EINVAL;
        }
    }
    return LS_OK;
}

/* Decodes column k (C_OFF or C_PART: required, no repetition) of row
 * group rg into n values at dst, in bulk. */
static ls_status read_ints(scan_t *s, int rg, int k, void *dst, int64_t n, char *err, size_t errlen)
{
    ls_status st;
    ls_pqr_iter_t *it = ls_pqr_iter_new(s->r, rg, s->cols[k], &st, err, errlen);
    if (!it) return st;
    ls_pqr_iter_recycle(it);
    int64_t got = 0;
    if (!s->el[k]->max_def) {
        got = ls_pqr_read_fixed(it, dst, n);
    } else { /* an optional column (another writer): a null is no row of ours */
        ls_pqr_triple_t t;
        while (got < n && ls_pqr_next(it, &t) == 1) {
            if (t.def < s->el[k]->max_def) {
                snprintf(err, errlen, "row group %d: column %s is null in row %lld", rg,
                         s->el[k]->path, (long long)got);
                ls_pqr_iter_free(it);
                return LS_ECORRUPT;
            }
            if (k == C_OFF)
                ((int64_t *)dst)[got++] = t.v.i64;
            else
                ((int32_t *)dst)[got++] = t.v.i32;
        }
        if (ls_pqr_iter_status(it) != LS_OK) got = -1;
    }
    st = LS_OK;
    if (got < 0) {
        st = ls_pqr_iter_status(it);
        snprintf(err, errlen, "%s", ls_pqr_iter_error(it));
    } else if (got != n) {
        st = LS_ECORRUPT;
        snprintf(err, errlen, "row group %d: column %s has %lld of its %lld values", rg,
                 s->el[k]->path, (long long)got, (long long)n);
    }
    ls_pqr_iter_free(it);
    return st;
}

/* Column col of row group rg has one triple per row, every one null. */
static bool only_nulls(const ls_pqr_t *r, int rg, int col, int64_t nrows)
{
    const ls_pqr_chunk_t *c = ls_pqr_chunk(r, rg, col);
    return c && c->num_values == nrows && c->stats.has_null_count && c->stats.null_count == nrows;
}

static ls_status scan_open_rg(scan_t *s, int rg, int32_t part, char *err, size_t errlen)
{
    int64_t n = ls_pqr_rg_num_rows(s->r, rg);
    s->off = ls_realloc(s->off, (size_t)(n ? n : 1) * sizeof *s->off);
    s->pt = ls_realloc(s->pt, (size_t)(n ? n : 1) * sizeof *s->pt);
    ls_status st = read_ints(s, rg, C_OFF, s->off, n, err, errlen);
    if (st == LS_OK) st = read_ints(s, rg, C_PART, s->pt, n, err, errlen);
    for (int k = C_TS; k <= C_VAL && st == LS_OK; k++)
        if ((s->it[k] = ls_pqr_iter_new(s->r, rg, s->cols[k], &st, err, errlen)))
            ls_pqr_iter_recycle(s->it[k]);
    /* Records without headers (the common case) are one null triple per
     * row in both header columns, which their chunk statistics say: then
     * the columns are not read at all (a triple per row each was 6 % of a
     * catch-up's CPU). */
    s->no_headers =
        only_nulls(s->r, rg, s->cols[C_HKEY], n) && only_nulls(s->r, rg, s->cols[C_HVAL], n);
    if (st == LS_OK && !s->no_headers &&
        (s->hk.it = ls_pqr_iter_new(s->r, rg, s->cols[C_HKEY], &st, err, errlen)))
        ls_pqr_iter_recycle(s->hk.it);
    if (st == LS_OK && !s->no_headers &&
        (s->hv.it = ls_pqr_iter_new(s->r, rg, s->cols[C_HVAL], &st, err, errlen)))
        ls_pqr_iter_recycle(s->hv.it);
    s->opened++;
    s->open = true; /* (closed by the caller on error) */
    s->rg = rg;
    s->part = part;
    s->nrows = n;
    s->pos = s->i = 0;
    s->held = false;
    s->asc = true;
    int64_t prev = INT64_MIN;
    for (int64_t i = 0; i < n && s->asc; i++)
        if (s->pt[i] == part) {
            if (s->off[i] <= prev) s->asc = false;
            prev = s->off[i];
        }
    return st;
}

/* Reads row i (the iterators at row s->pos <= i) into s->row. */
static ls_status scan_read_row(scan_t *s, int64_t i, char *err, size_t errlen)
{
    scan_bufs_t *sb = &s->sb;
    const ls_pqr_elem_t **el = s->el;
    int64_t gap = i - s->pos;
    if (gap > 0) {
        for (int k = C_TS; k <= C_VAL; k++)
            if (ls_pqr_skip(s->it[k], gap) < 0) goto read_error;
        for (int64_t g = 0; g < gap && !s->no_headers; g++) {
            size_t n;
            if (rep_row(&s->hk, KEEP_NONE, &n, sb) < 0 || rep_row(&s->hv, KEEP_NONE, &n, sb) < 0)
                goto read_error;
        }
    }
    ls_pqr_triple_t t[C_VAL + 1];
    for (int k = C_TS; k <= C_VAL; k++)
        if (ls_pqr_next(s->it[k], &t[k]) != 1) goto read_error;
    size_t nk = 0, nv = 0;
    if (!s->no_headers &&
        (rep_row(&s->hk, KEEP_KEYS, &nk, sb) < 0 || rep_row(&s->hv, KEEP_VALUES, &nv, sb) < 0))
        goto read_error;
    s->pos = i + 1;
    int64_t off = s->off[i];
    if (nk != nv) {
        snprintf(err, errlen, "row group %d, offset %lld: %zu header keys, %zu values", s->rg,
                 (long long)off, nk, nv);
        return LS_ECORRUPT;
    }
    size_t nh = 0;
    for (size_t h = 0; h < nk; h++) {
        if (sb->tk[h].def < el[C_HKEY]->max_def) continue; /* null or empty list */
        bool v = sb->tv[h].def == el[C_HVAL]->max_def;
        sb->hs[nh++] =
            (ls_raw_header_t){(const char *)sb->tk[h].bytes, sb->tk[h].len,
                              v ? sb->tv[h].bytes : NULL, v ? (int64_t)sb->tv[h].len : -1};
    }
    bool kp = t[C_KEY].def == el[C_KEY]->max_def;
    bool vp = t[C_VAL].def == el[C_VAL]->max_def;
    int64_t us = t[C_TS].v.i64;
    /* Kafka ms * 1000 (iceberg_raw.h); floor for negative ones */
    int64_t ms = us >= 0 ? us / 1000 : -((-us + 999) / 1000);
    s->row = (ls_raw_record_t){.partition = s->pt[i],
                               .offset = off,
                               .timestamp_ms = ms,
                               .key = kp ? t[C_KEY].bytes : NULL,
                               .key_len = kp ? (int64_t)t[C_KEY].len : -1,
                               .value = vp ? t[C_VAL].bytes : NULL,
                               .value_len = vp ? (int64_t)t[C_VAL].len : -1,
                               .headers = sb->hs,
                               .nheaders = nh};
    return LS_OK;
read_error:
    /* the first iterator with an error names it; else a column ended early */
    snprintf(err, errlen, "row group %d: a column ends before its %lld rows", s->rg,
             (long long)s->nrows);
    for (int k = C_TS; k <= C_VAL + 2; k++) {
        ls_pqr_iter_t *x = k <= C_VAL ? s->it[k] : k == C_VAL + 1 ? s->hk.it : s->hv.it;
        if (x && ls_pqr_iter_status(x) != LS_OK) {
            snprintf(err, errlen, "row group %d, column %s: %s", s->rg,
                     k <= C_VAL       ? el[k]->path
                     : k == C_VAL + 1 ? "headers key"
                                      : "headers value",
                     ls_pqr_iter_error(x));
            return ls_pqr_iter_status(x);
        }
    }
    return LS_ECORRUPT;
}

/* The next row of `part` with offset in [from, to], in file order: LS_OK
 * with *got true and s->row set (views valid until the next call), or *got
 * false at the end; otherwise the status of the failed read (err). Row
 * groups whose offset statistics miss the range are passed unread. */
static ls_status scan_next(scan_t *s, int32_t part, int64_t from, int64_t to, bool *got, char *err,
                           size_t errlen)
{
    *got = false;
    if (s->held) {
        s->held = false;
        if (s->row.partition == part && s->row.offset >= from && s->row.offset <= to) {
            *got = true;
            return LS_OK;
        }
        if (s->row.offset > to) s->above = true;
    }
    for (;;) {
        if (!s->open) {
            if (s->rg >= ls_pqr_num_row_groups(s->r)) return LS_OK;
            ls_cold_rg_bounds_t b;
            ls_cold_rg_bounds(s->r, s->rg, s->cols[C_OFF], s->cols[C_PART], &b);
            if (!ls_cold_rg_admits(&b, part, from, to)) {
                if (b.has_off && b.off_lo > to && ls_cold_rg_admits(&b, part, from, INT64_MAX))
                    s->above = true; /* rows of part may lie above */
                s->rg++;
                continue;
            }
            ls_status st = scan_open_rg(s, s->rg, part, err, errlen);
            if (st != LS_OK) {
                scan_close_rg(s);
                return st;
            }
        }
        while (s->i < s->nrows) {
            int64_t i = s->i++;
            if (s->pt[i] != part) continue;
            int64_t off = s->off[i];
            if (off > to) {
                s->above = true;
                if (s->asc) s->i = s->nrows; /* the rest lie above too */
                continue;
            }
            if (off < from) continue;
            ls_status st = scan_read_row(s, i, err, errlen);
            if (st != LS_OK) {
                scan_close_rg(s);
                return st;
            }
            *got = true;
            return LS_OK;
        }
        scan_close_rg(s);
        s->rg++;
    }
}

ls_status ls_cold_scan_rows(ls_pqr_t *r, int32_t partition, int64_t from, int64_t to,
                            ls_cold_row_cb cb, void *arg, char *err, size_t errlen)
{
    scan_t s;
    ls_status st = scan_init(&s, r, err, errlen);
    bool got = st == LS_OK;
    while (got && (st = scan_next(&s, partition, from, to, &got, err, errlen)) == LS_OK && got)
        if (cb(arg, &s.row)) break;
    scan_free(&s);
    return st;
}

/* ---------------------------------------------------------------- one read */

typedef struct read_ctx {
    ls_cold_batcher_t b;
    size_t max_bytes;
    bool stop_at_gap;
    ls_cold_read_t *out;
    ls_status st;
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

/* Adds one row unless max_bytes is reached: 1 to stop (the row not
 * taken). Past the first record it stops before max_bytes would be
 * exceeded (the open batch counted uncompressed: compression only shrinks
 * it, or grows it by less than the header bound for incompressible
 * bytes). */
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

/* ------------------------------------------------------------ file handle */

struct ls_cold_file {
    ls_pqr_t *r;
    scan_t s;
    /* where the last read stopped: a read of `part` from `resume` goes on
     * from the cursor; every other read rewinds it */
    bool can_resume;
    int32_t part;
    int64_t resume;
    ls_cold_file_stats_t stats;
};

void ls_cold_file_stats(const ls_cold_file_t *f, ls_cold_file_stats_t *out)
{
    *out = f->stats;
    out->row_groups_opened = f->s.opened;
}

ls_cold_file_t *ls_cold_file_open(const uint8_t *data, size_t len, ls_status *st, char *err,
                                  size_t errlen)
{
    ls_pqr_t *r = ls_pqr_open(data, len, st, err, errlen);
    if (!r) return NULL;
    ls_cold_file_t *f = LS_NEW(ls_cold_file_t);
    f->r = r;
    *st = scan_init(&f->s, r, err, errlen);
    if (*st != LS_OK) {
        ls_cold_file_free(f);
        return NULL;
    }
    return f;
}

void ls_cold_file_free(ls_cold_file_t *f)
{
    if (!f) return;
    scan_free(&f->s);
    ls_pqr_free(f->r);
    ls_free(f);
}

const ls_pqr_t *ls_cold_file_reader(const ls_cold_file_t *f) { return f->r; }

ls_status ls_cold_file_read(ls_cold_file_t *f, int32_t partition, int64_t from, int64_t to,
                            int codec, bool log_append_time, size_t batch_bytes, size_t max_bytes,
                            bool stop_at_gap, ls_buf_t *into, ls_cold_read_t *out, char *err,
                            size_t errlen)
{
    memset(out, 0, sizeof *out);
    ls_buf_init(&out->batches);
    ls_buf_t room; /* the capacity the batches go into */
    ls_buf_init(&room);
    if (into) {
        room = *into;
        room.len = 0;
        ls_buf_init(into);
    }
    out->next_offset = from;
    if (errlen) err[0] = 0;
    scan_t *s = &f->s;
    /* Going on from the cursor returns what a scan from the file's start
     * would: every row before it was below `from` (they were returned or
     * passed over by an earlier read of this partition ending at `from`,
     * in ascending order), and none was passed over for lying above. */
    f->stats.reads++;
    if (f->can_resume && partition == f->part && from == f->resume && !s->above)
        f->stats.resumed++;
    else
        scan_rewind(s);
    f->can_resume = false;
    read_ctx_t c = {.max_bytes = max_bytes, .stop_at_gap = stop_at_gap, .out = out, .st = LS_OK};
    ls_cold_batcher_init(&c.b, codec, log_append_time, batch_bytes);
    c.b.out = room;
    if (max_bytes < SIZE_MAX / 2) /* about what the read returns, reserved once */
        ls_buf_reserve(&c.b.out, max_bytes + LS_RB_HEADER_SIZE + 1024 < (64u << 20)
                                     ? max_bytes + LS_RB_HEADER_SIZE + 1024
                                     : (64u << 20));
    ls_status st = LS_OK;
    bool unsorted = false;
    bool got;
    while ((st = scan_next(s, partition, from, to, &got, err, errlen)) == LS_OK && got) {
        if (c.b.prev_offset >= 0 && s->row.offset <= c.b.prev_offset) {
            unsorted = true;
            break;
        }
        if (emit(&c, &s->row)) {
            s->held = true; /* not taken: the next read starts with it */
            break;
        }
    }
    if (st != LS_OK) scan_rewind(s);
    if (st == LS_OK && unsorted) {
        scan_rewind(s);
        room = c.b.out;
        room.len = 0;
        ls_buf_init(&c.b.out);
        ls_cold_batcher_free(&c.b);
        ls_cold_batcher_init(&c.b, codec, log_append_time, batch_bytes);
        c.b.out = room;
        out->next_offset = from;
        out->full = out->gap = false;
        st = read_sorted(f->r, partition, from, to, &c, err, errlen);
    }
    if (st == LS_OK && c.st != LS_OK) {
        st = c.st;
        snprintf(err, errlen, "rebuilding offset %lld of partition %d: %s",
                 (long long)out->next_offset, partition, ls_status_str(st));
    }
    if (st == LS_OK) st = ls_cold_batcher_flush(&c.b);
    if (st == LS_OK) {
        out->records = c.b.records;
        out->batches = c.b.out; /* handed over, not copied */
        ls_buf_init(&c.b.out);
        if (!unsorted) {
            f->can_resume = true;
            f->part = partition;
            f->resume = out->next_offset;
        }
    } else {
        scan_rewind(s);
    }
    ls_cold_batcher_free(&c.b);
    return st;
}

ls_status ls_cold_read_parquet(const uint8_t *data, size_t len, int32_t partition, int64_t from,
                               int64_t to, int codec, bool log_append_time, size_t batch_bytes,
                               size_t max_bytes, bool stop_at_gap, ls_cold_read_t *out, char *err,
                               size_t errlen)
{
    ls_status st;
    ls_cold_file_t *f = ls_cold_file_open(data, len, &st, err, errlen);
    if (!f) {
        memset(out, 0, sizeof *out);
        ls_buf_init(&out->batches);
        out->next_offset = from;
        return st;
    }
    st = ls_cold_file_read(f, partition, from, to, codec, log_append_time, batch_bytes, max_bytes,
                           stop_at_gap, NULL, out, err, errlen);
    ls_cold_file_free(f);
    return st;
}
