/* Rewriting small data files.
 *
 * Why: a table committed every second gets one data file per partition
 * tuple per commit (tens of KB each at ordinary rates). Readers pay per
 * file (a GET, a footer, a task), so small files are rewritten into big
 * ones as ordinary Iceberg commits that concurrent readers survive.
 *
 * Which files (ls_file_rewrite_plan): the live data files of the current
 * snapshot, grouped by partition tuple and ordered in each group by data
 * sequence number (commit order), files of target_bytes or more left out.
 * In each group, runs of consecutive small files follow the size-tiered
 * rule of base/size_tier.h: at least min_files and at most 2 x min_files - 1
 * of them, at most target_bytes together, the largest at most a quarter of
 * the run (REWRITE_GROWTH). Every rewrite so grows what it rewrites at
 * least four times (16 times for one commit interval's files of one size,
 * the common case): a row is rewritten about log16(target / first file)
 * times, and a group keeps at most a few runs' worth of files of each size
 * class plus its full-size files. One call takes runs up to about
 * target_bytes of input (one file's worth of reading and writing; the rest
 * waits for the next call, `more`), so a table task stays short.
 *
 * How (ls_file_rewrite): each run's files are read whole (they are small by
 * definition) and their rows copied into one new Parquet file of the
 * table's row shape (ls_pqr_copy_rows: values as stored, columns checked),
 * uploaded create-only; then one ls_ice_table_rewrite commit replaces all
 * runs' files by the new ones. That commit checks that each new file holds
 * exactly its inputs' rows and that every input is still live, so a
 * concurrent commit that changed the same files makes this one a conflict,
 * never a lost or doubled row.
 *
 * Crashes: before the commit, the new files are orphans (removed by the
 * orphan sweep after its grace period) and the table is unchanged; after
 * it, the replaced files stay referenced by older snapshots until those
 * expire, then they are orphans too. No other state. Summary properties
 * (each log's last materialized offset) carry over the replace snapshot
 * unchanged, so materialization never re-adds or skips a row. */
#include "table/file_rewrite.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/crashpoint.h"
#include "base/size_tier.h"
#include "table/parquet_reader.h"

#define REWRITE_GROWTH 4 /* a new file is at least this x its largest input */

typedef struct plan_ctx {
    const ls_ice_mentry_t *live;
    int nspec;
    const size_t *order; /* this group's files, in sequence order */
    int64_t target;
} plan_ctx_t;

typedef struct sort_ctx {
    const ls_ice_mentry_t *live;
    int nspec;
} sort_ctx_t;

static int by_partition_then_seq(const void *a, const void *b, void *arg)
{
    const sort_ctx_t *c = arg;
    const ls_ice_mentry_t *x = &c->live[*(const size_t *)a], *y = &c->live[*(const size_t *)b];
    for (int i = 0; i < c->nspec; i++)
        if (x->df.partition[i] != y->df.partition[i])
            return x->df.partition[i] < y->df.partition[i] ? -1 : 1;
    if (x->seq != y->seq) return x->seq < y->seq ? -1 : 1;
    return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

static bool same_partition(const ls_ice_mentry_t *x, const ls_ice_mentry_t *y, int nspec)
{
    return !memcmp(x->df.partition, y->df.partition, (size_t)nspec * sizeof x->df.partition[0]);
}

static bool small_file(void *arg, size_t first, size_t next, uint64_t *bytes)
{
    const plan_ctx_t *c = arg;
    const ls_ice_mentry_t *e = &c->live[c->order[next]];
    (void)first;
    *bytes = (uint64_t)e->df.file_size;
    return e->df.file_size < c->target;
}

void ls_file_runs_free(ls_file_run_t *runs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        ls_free(runs[i].idx);
    ls_free(runs);
}

size_t ls_file_rewrite_plan(const ls_ice_mentry_t *live, size_t n, int nspec_fields,
                            const ls_file_rewrite_opts_t *o, ls_file_run_t **runs, bool *more)
{
    *runs = NULL;
    *more = false;
    if (o->min_files < REWRITE_GROWTH || n < (size_t)o->min_files) return 0;
    size_t *order = LS_NEWN(size_t, n);
    for (size_t i = 0; i < n; i++)
        order[i] = i;
    sort_ctx_t sc = {live, nspec_fields};
    qsort_r(order, n, sizeof *order, by_partition_then_seq, &sc);
    ls_tier_rule_t rule = {.min_items = (size_t)o->min_files,
                           .max_items = 2 * (size_t)o->min_files - 1,
                           .max_bytes = (uint64_t)o->target_bytes,
                           .growth = REWRITE_GROWTH};
    size_t nruns = 0, cap = 0;
    uint64_t budget = 0;
    for (size_t g = 0; g < n;) {
        size_t ge = g + 1;
        while (ge < n && same_partition(&live[order[g]], &live[order[ge]], nspec_fields))
            ge++;
        plan_ctx_t c = {live, nspec_fields, order + g, o->target_bytes};
        size_t s, e;
        for (size_t from = 0; ls_tier_next_run(ge - g, from, &rule, small_file, &c, &s, &e);
             from = e + 1) {
            uint64_t bytes = 0;
            for (size_t k = s; k <= e; k++)
                bytes += (uint64_t)live[order[g + k]].df.file_size;
            if (nruns && budget + bytes > (uint64_t)o->target_bytes) {
                *more = true;
                break;
            }
            if (nruns == cap) {
                cap = cap ? cap * 2 : 8;
                *runs = ls_realloc(*runs, cap * sizeof **runs);
            }
            ls_file_run_t *r = &(*runs)[nruns++];
            r->n = e - s + 1;
            r->idx = LS_NEWN(size_t, r->n);
            memcpy(r->idx, order + g + s, r->n * sizeof *r->idx);
            r->bytes = bytes;
            budget += bytes;
        }
        if (*more) break;
        g = ge;
    }
    ls_free(order);
    return nruns;
}

/* Copies run r's files row for row into one new file *df (uploaded). */
static ls_status write_run(ls_ice_table_t *t, const ls_ice_mentry_t *live, const ls_file_run_t *r,
                           const ls_file_rewrite_opts_t *o, ls_ice_datafile_t *df,
                           ls_file_rewrite_stats_t *stats, char *err, size_t errlen)
{
    ls_buf_t out, raw;
    ls_buf_init(&out);
    ls_buf_init(&raw);
    ls_pq_writer_t *w = ls_pq_writer_new(o->fields, o->nfields, o->pq, &out, err, errlen);
    ls_status st = w ? LS_OK : LS_EINVAL;
    for (size_t k = 0; k < r->n && st == LS_OK; k++) {
        const char *path = live[r->idx[k]].df.path;
        st = ls_ice_table_get_file(t, path, &raw);
        if (st != LS_OK) {
            snprintf(err, errlen, "reading %s: %s", path, ls_ice_table_error(t));
            break;
        }
        char why[256] = "";
        ls_pqr_t *rd = ls_pqr_open(raw.data, raw.len, &st, why, sizeof why);
        if (rd) st = ls_pqr_copy_rows(rd, w, why, sizeof why);
        ls_pqr_free(rd);
        if (st != LS_OK) snprintf(err, errlen, "copying the rows of %s: %s", path, why);
        stats->bytes_read += raw.len;
    }
    if (st == LS_OK && (st = ls_pq_writer_finish(w)) != LS_OK)
        snprintf(err, errlen, "finishing a rewritten file: %s", ls_pq_error(w));
    memset(df, 0, sizeof *df);
    if (st == LS_OK) {
        ls_ice_datafile_metrics(df, w);
        memcpy(df->partition, live[r->idx[0]].df.partition, sizeof df->partition);
        st = ls_ice_table_put_data(t, &out, "parquet", df);
        if (st != LS_OK)
            snprintf(err, errlen, "writing a rewritten file: %s", ls_ice_table_error(t));
    }
    if (w) ls_pq_writer_free(w);
    ls_buf_free(&out);
    ls_buf_free(&raw);
    return st;
}

ls_status ls_file_rewrite(ls_ice_table_t *t, const ls_file_rewrite_opts_t *o, int64_t now_ms,
                          ls_file_rewrite_stats_t *stats, char *err, size_t errlen)
{
    stats->more = false;
    if (o->min_files < REWRITE_GROWTH || ls_ice_table_current_snapshot(t) < 0) return LS_OK;
    ls_ice_mentry_t *live = NULL;
    size_t n = 0;
    ls_status st = ls_ice_table_live_files(t, &live, &n);
    if (st != LS_OK) {
        snprintf(err, errlen, "listing live files: %s", ls_ice_table_error(t));
        return st;
    }
    ls_file_run_t *runs;
    size_t nruns =
        ls_file_rewrite_plan(live, n, ls_ice_table_spec(t)->nfields, o, &runs, &stats->more);
    ls_ice_datafile_t *added = LS_NEWN(ls_ice_datafile_t, nruns ? nruns : 1);
    size_t nremoved = 0;
    for (size_t i = 0; i < nruns; i++)
        nremoved += runs[i].n;
    const char **removed = LS_NEWN(const char *, nremoved ? nremoved : 1);
    size_t nadded = 0, nr = 0;
    uint64_t rows = 0, written = 0;
    for (size_t i = 0; i < nruns && st == LS_OK; i++) {
        st = write_run(t, live, &runs[i], o, &added[nadded], stats, err, errlen);
        if (st != LS_OK) break;
        rows += (uint64_t)added[nadded].record_count;
        written += (uint64_t)added[nadded].file_size;
        nadded++;
        for (size_t k = 0; k < runs[i].n; k++)
            removed[nr++] = live[runs[i].idx[k]].df.path;
    }
    if (st == LS_OK && nadded) {
        ls_crashpoint("table.rewrite_written");
        st = ls_ice_table_rewrite(t, removed, nr, added, nadded, now_ms, NULL);
        if (st != LS_OK) {
            snprintf(err, errlen, "committing the rewrite: %s", ls_ice_table_error(t));
        } else {
            stats->commits++;
            stats->files_removed += nr;
            stats->files_added += nadded;
            stats->bytes_written += written;
            stats->rows += rows;
        }
    }
    for (size_t i = 0; i < nadded; i++)
        ls_ice_datafile_clear(&added[i]);
    ls_free(added);
    ls_free(removed);
    ls_file_runs_free(runs, nruns);
    ls_ice_mentries_free(live, n);
    return st;
}
