/* Cold reads of a raw table log from its table: see cold_table.h. */
#include "compact/cold_table.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "base/alloc.h"
#include "compact/cold_batches.h"
#include "table/iceberg_manifest.h"
#include "table/iceberg_raw.h"

static int64_t le_int(const uint8_t *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = n; i-- > 0;)
        v = v << 8 | p[i];
    if (n == 4) return (int64_t)(int32_t)(uint32_t)v;
    return (int64_t)v;
}

/* Does the column bound of field fid admit v? (no bound: yes) */
static bool admits(const ls_ice_datafile_t *df, int fid, size_t width, int64_t v)
{
    for (size_t i = 0; i < df->nmetrics; i++) {
        const ls_ice_colmetric_t *m = &df->metrics[i];
        if (m->field_id != fid) continue;
        if (m->has_lower && m->lower_len == width && v < le_int(m->lower, width)) return false;
        if (m->has_upper && m->upper_len == width && v > le_int(m->upper, width)) return false;
        return true;
    }
    return true;
}

static int64_t lower_offset(const ls_ice_datafile_t *df)
{
    for (size_t i = 0; i < df->nmetrics; i++)
        if (df->metrics[i].field_id == LS_RAW_FID_OFFSET && df->metrics[i].has_lower &&
            df->metrics[i].lower_len == 8)
            return le_int(df->metrics[i].lower, 8);
    return INT64_MIN;
}

/* ------------------------------------------------------------ ranged reads
 *
 * A file of RANGED_MIN_FILE bytes or more is not read whole: an image of
 * the file's size (anonymous memory, pages untouched stay unallocated)
 * receives its footer, then the column chunks of the row groups the read
 * needs — those whose `offset` statistics admit [from, to], in file order,
 * until about max_bytes of them are in (at least one) — and the read's upper
 * bound is cut to the last fetched row group's largest offset, so the scan
 * (which skips row groups by the same statistics) never touches a byte that
 * was not fetched. A row group without statistics stops the cut: everything
 * from it on is fetched. A manifest size that does not match the file, or a
 * footer that does not parse, falls back to the whole file. */
#define RANGED_MIN_FILE (256 * 1024)
#define RANGED_TAIL (64 * 1024) /* first guess at footer + 8 */

typedef struct image {
    uint8_t *data;
    size_t len;
    uint64_t bytes_read;
} image_t;

static void image_free(image_t *im)
{
    if (im->data) munmap(im->data, im->len);
    memset(im, 0, sizeof *im);
}

static ls_status image_put(ls_ice_table_t *t, const char *path, image_t *im, uint64_t off,
                           uint64_t len, ls_buf_t *tmp)
{
    if (off > im->len || len > im->len - off) return LS_ECORRUPT;
    ls_status st = ls_ice_table_get_range(t, path, off, len, tmp);
    if (st != LS_OK) return st;
    if (tmp->len != len) return LS_ECORRUPT;
    memcpy(im->data + off, tmp->data, (size_t)len);
    im->bytes_read += len;
    return LS_OK;
}

/* LS_OK with the image and *to cut; LS_EINVAL: read the file whole; other:
 * the store's status (LS_ENOTFOUND: the file is gone). */
static ls_status image_load(ls_ice_table_t *t, const ls_ice_datafile_t *df, int64_t from,
                            int64_t *to, size_t max_bytes, image_t *im)
{
    memset(im, 0, sizeof *im);
    if (df->file_size < RANGED_MIN_FILE) return LS_EINVAL;
    void *m = mmap(NULL, (size_t)df->file_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
    if (m == MAP_FAILED) return LS_EINVAL;
    im->data = m;
    im->len = (size_t)df->file_size;
    ls_buf_t tmp;
    ls_buf_init(&tmp);
    uint64_t tail = im->len < RANGED_TAIL ? im->len : RANGED_TAIL;
    ls_status st = image_put(t, df->path, im, im->len - tail, tail, &tmp);
    if (st == LS_OK && memcmp(im->data + im->len - 4, "PAR1", 4)) st = LS_EINVAL;
    if (st == LS_OK) {
        const uint8_t *f = im->data + im->len - 8;
        uint64_t flen =
            (uint64_t)f[0] | (uint64_t)f[1] << 8 | (uint64_t)f[2] << 16 | (uint64_t)f[3] << 24;
        if (flen + 12 > im->len)
            st = LS_EINVAL;
        else if (flen + 8 > tail)
            st = image_put(t, df->path, im, im->len - 8 - flen, flen, &tmp);
    }
    ls_pqr_t *r = NULL;
    if (st == LS_OK) {
        memcpy(im->data, "PAR1", 4);
        ls_status ost;
        char why[256];
        if (!(r = ls_pqr_open(im->data, im->len, &ost, why, sizeof why))) st = LS_EINVAL;
    }
    int ocol = -1;
    for (size_t c = 0; r && c < ls_pqr_num_columns(r); c++)
        if (ls_pqr_column(r, (int)c)->field_id == LS_RAW_FID_OFFSET) ocol = (int)c;
    if (st == LS_OK && ocol < 0) st = LS_EINVAL;
    uint64_t got = 0;
    bool cut = false;
    for (int g = 0; st == LS_OK && g < ls_pqr_num_row_groups(r); g++) {
        const ls_pqr_chunk_t *oc = ls_pqr_chunk(r, g, ocol);
        int64_t lo = 0, hi = 0;
        bool stats = oc->stats.has_min && oc->stats.has_max && oc->stats.min_len == 8 &&
                     oc->stats.max_len == 8;
        if (stats) {
            lo = le_int(oc->stats.min, 8);
            hi = le_int(oc->stats.max, 8);
            if (hi < from || lo > *to) continue; /* the scan skips it too */
        }
        if (cut) {
            if (stats && lo > *to) continue;
        }
        /* a row group's chunks: one ranged GET over all of them */
        uint64_t start = UINT64_MAX, end = 0;
        for (size_t c = 0; c < ls_pqr_num_columns(r); c++) {
            const ls_pqr_chunk_t *ch = ls_pqr_chunk(r, g, (int)c);
            if (ch->start < 0 || ch->compressed_bytes < 0) {
                st = LS_EINVAL;
                break;
            }
            if ((uint64_t)ch->start < start) start = (uint64_t)ch->start;
            if ((uint64_t)(ch->start + ch->compressed_bytes) > end)
                end = (uint64_t)(ch->start + ch->compressed_bytes);
        }
        if (st != LS_OK || end <= start) break;
        st = image_put(t, df->path, im, start, end - start, &tmp);
        got += end - start;
        if (st == LS_OK && stats && got >= max_bytes && !cut) {
            /* enough for this read: later row groups only if they hold
             * offsets at or below this one's largest (the scan's bound) */
            if (hi < *to) *to = hi;
            cut = true;
        }
    }
    ls_pqr_free(r);
    ls_buf_free(&tmp);
    if (st != LS_OK) image_free(im);
    return st;
}

typedef struct cand {
    const ls_ice_datafile_t *df;
    int64_t lo;
} cand_t;

static int cand_cmp(const void *a, const void *b)
{
    int64_t x = ((const cand_t *)a)->lo, y = ((const cand_t *)b)->lo;
    return x < y ? -1 : x > y;
}

ls_status ls_cold_table_read(ls_ice_table_t *t, const ls_cold_table_req_t *q, ls_buf_t *out,
                             int64_t *next, ls_cold_table_stats_t *stats, char *err, size_t errlen)
{
    *next = q->from;
    if (stats) memset(stats, 0, sizeof *stats);
    if (q->from > q->to) return LS_EINVAL;
    ls_ice_mentry_t *live = NULL;
    size_t n = 0;
    ls_status st = ls_ice_table_live_files(t, &live, &n);
    if (st != LS_OK) {
        snprintf(err, errlen, "listing the table's live files: %s", ls_ice_table_error(t));
        return st;
    }
    st = ls_cold_table_read_live(t, live, n, q, out, next, stats, err, errlen);
    ls_ice_mentries_free(live, n);
    return st;
}

ls_status ls_cold_table_read_live(ls_ice_table_t *t, const ls_ice_mentry_t *live, size_t n,
                                  const ls_cold_table_req_t *q, ls_buf_t *out, int64_t *next,
                                  ls_cold_table_stats_t *stats, char *err, size_t errlen)
{
    ls_cold_table_stats_t dummy;
    if (!stats) stats = &dummy;
    memset(stats, 0, sizeof *stats);
    *next = q->from;
    if (q->from > q->to) return LS_EINVAL;
    ls_status st = LS_OK;
    cand_t *c = LS_NEWN(cand_t, n ? n : 1);
    size_t nc = 0;
    for (size_t i = 0; i < n; i++) {
        const ls_ice_datafile_t *df = &live[i].df;
        if (admits(df, LS_RAW_FID_PARTITION, 4, q->partition) &&
            admits(df, LS_RAW_FID_OFFSET, 8, q->from))
            c[nc++] = (cand_t){df, lower_offset(df)};
    }
    qsort(c, nc, sizeof *c, cand_cmp);
    stats->files_planned = (int)nc;
    ls_buf_t file;
    ls_buf_init(&file);
    bool found = false;
    for (size_t i = 0; i < nc && !found && st == LS_OK; i++) {
        /* ranged when the file is large enough, else (or when the image
         * cannot be made) whole */
        image_t im;
        int64_t to = q->to;
        st = image_load(t, c[i].df, q->from, &to, q->max_bytes, &im);
        const uint8_t *data;
        size_t dlen;
        if (st == LS_OK) {
            data = im.data;
            dlen = im.len;
            stats->bytes_read += im.bytes_read;
            stats->ranged++;
        } else if (st == LS_EINVAL) {
            to = q->to;
            st = ls_ice_table_get_file(t, c[i].df->path, &file);
            data = file.data;
            dlen = file.len;
            stats->bytes_read += file.len;
        }
        if (st != LS_OK) {
            snprintf(err, errlen, "data file %s: %s (%s)", c[i].df->path, ls_status_str(st),
                     ls_ice_table_error(t));
            break; /* LS_ENOTFOUND: removed since the snapshot was loaded */
        }
        stats->files_read++;
        ls_cold_read_t rd;
        char why[256] = "";
        st = ls_cold_read_parquet(data, dlen, q->partition, q->from, to, q->codec,
                                  q->log_append_time, q->batch_bytes, q->max_bytes, true, &rd, why,
                                  sizeof why);
        if (st != LS_OK) {
            snprintf(err, errlen, "data file %s: %s", c[i].df->path, why);
            if (st == LS_EINVAL) st = LS_ECORRUPT; /* a table file that is not raw */
        } else if (rd.records > 0 && (int64_t)ls_be64_get(rd.batches.data) == q->from) {
            ls_buf_append(out, rd.batches.data, rd.batches.len);
            *next = rd.next_offset;
            found = true;
        }
        ls_buf_free(&rd.batches);
        image_free(&im);
    }
    if (st == LS_OK && !found) {
        snprintf(err, errlen,
                 "no live data file of the current snapshot holds partition %d offset "
                 "%lld (%zu planned)",
                 q->partition, (long long)q->from, nc);
        st = LS_ENOTFOUND;
    }
    ls_buf_free(&file);
    ls_free(c);
    return st;
}
