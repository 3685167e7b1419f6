/* Cold reads of a raw table log from its table: see cold_table.h. */
#include "compact/cold_table.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    ls_cold_table_stats_t dummy;
    if (!stats) stats = &dummy;
    memset(stats, 0, sizeof *stats);
    *next = q->from;
    if (q->from > q->to) return LS_EINVAL;
    ls_ice_mentry_t *live = NULL;
    size_t n = 0;
    ls_status st = ls_ice_table_live_files(t, &live, &n);
    if (st != LS_OK) {
        snprintf(err, errlen, "listing the table's live files: %s", ls_ice_table_error(t));
        return st;
    }
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
        st = ls_ice_table_get_file(t, c[i].df->path, &file);
        if (st != LS_OK) {
            snprintf(err, errlen, "data file %s: %s (%s)", c[i].df->path, ls_status_str(st),
                     ls_ice_table_error(t));
            break; /* LS_ENOTFOUND: removed since the snapshot was loaded */
        }
        stats->files_read++;
        stats->bytes_read += file.len;
        ls_cold_read_t rd;
        char why[256] = "";
        st = ls_cold_read_parquet(file.data, file.len, q->partition, q->from, q->to, q->codec,
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
    ls_ice_mentries_free(live, n);
    return st;
}
