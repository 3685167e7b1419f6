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
 * table's row shape (ls_pqr_copy_rows: values as stored, projected by field
 * id onto the current schema when the table's schema evolved since),
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
 * unchanged, so materialization never re-adds or skips a row.
 *
 * Copy-on-write deletes (ls_file_drop_rows, upsert tables): the same copy,
 * file by file, leaving out the rows whose key the caller drops; a file of
 * 256 KiB or more is scanned through ranged reads of its footer and key
 * columns only (key_image_load) and read whole only when a row goes; the caller
 * commits removed and new files with its new rows as one overwrite snapshot
 * (ls_ice_table_overwrite), so a reader sees a key's old row or its new
 * one, never both or neither.
 *
 * Merge-on-read deletes (o->merge_on_read): the same scan, but the rows
 * found become one position delete file per partition (position_deletes.h)
 * committed in that snapshot instead of copies; rows live deletes already
 * took are not found again. Every copy (a rewrite, a copy-on-write) leaves
 * out the rows live deletes took: a copied row has a new path, out of every
 * delete's reach. So the maintenance rewrite also compacts deletes: beside
 * the small-file runs, a data file is rewritten on its own once deletes
 * took DELETE_RATIO_PCT % of its rows (Iceberg's delete-ratio-threshold),
 * every delete file naming only files no longer live leaves, and a
 * partition holding min_files delete files or more gets them merged into
 * one (Iceberg's rewrite-position-delete-files: readers open one file, and
 * rows naming removed files drop out), all in the same replace snapshot.
 * Merging rather than rewriting data files keeps a table updated a little
 * at a time from being copied whole every few commits.
 *
 * Format version 3: deletes are deletion vectors, one per data file
 * (write_dv: the file's rows found, plus those live deletes took, replace
 * its old vector in the same snapshot), so nothing is merged; a position
 * delete file an upgraded table still holds leaves once every file it
 * names is gone or has a vector (ls_posdel_covered). Every copy keeps row
 * lineage: the writer gets the _row_id and _last_updated_sequence_number
 * columns (copy_writer), filled from each source file's first row id and
 * data sequence number where the file stores none. */
#include "table/file_rewrite.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/crashpoint.h"
#include "base/size_tier.h"
#include "table/deletion_vector.h"
#include "table/parquet_reader.h"
#include "table/position_deletes.h"

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
    /* any total order groups a partition's files */
    int d = ls_ice_pvals_cmp(x->df.partition, y->df.partition, c->nspec);
    if (d) return d;
    if (x->seq != y->seq) return x->seq < y->seq ? -1 : 1;
    return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

static bool same_partition(const ls_ice_mentry_t *x, const ls_ice_mentry_t *y, int nspec)
{
    return !ls_ice_pvals_cmp(x->df.partition, y->df.partition, nspec);
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

/* Format version 3: the row lineage columns every copy writes after the
 * table's own (spec "Row Lineage": a row moved to another file keeps its
 * _row_id and _last_updated_sequence_number). */
static const ls_pq_field_t lineage_fields[] = {
    {"_row_id", LS_PQ_INT64, LS_PQ_OPTIONAL, LS_PQ_LT_NONE, LS_ICE_FID_ROW_ID, 0, 0, 0, 0},
    {"_last_updated_sequence_number", LS_PQ_INT64, LS_PQ_OPTIONAL, LS_PQ_LT_NONE,
     LS_ICE_FID_LAST_UPDATED_SEQ, 0, 0, 0, 0},
};

/* The writer of a copy into out: the table's row shape, plus the lineage
 * columns in a v3 table. */
static ls_pq_writer_t *copy_writer(ls_ice_table_t *t, const ls_file_rewrite_opts_t *o,
                                   ls_buf_t *out, char *err, size_t errlen)
{
    if (ls_ice_table_format_version(t) < 3)
        return ls_pq_writer_new(o->fields, o->nfields, o->pq, out, err, errlen);
    size_t nl = sizeof lineage_fields / sizeof lineage_fields[0];
    ls_pq_field_t *f = LS_NEWN(ls_pq_field_t, o->nfields + nl);
    memcpy(f, o->fields, o->nfields * sizeof *f);
    memcpy(f + o->nfields, lineage_fields, sizeof lineage_fields);
    ls_pq_writer_t *w = ls_pq_writer_new(f, o->nfields + nl, o->pq, out, err, errlen);
    ls_free(f);
    return w;
}

/* A new file of the rows of the live data files src[0..n) (read into raw;
 * each file's rows flagged in drops[k], when given, left out, and so are
 * the rows pd deletes), in partition part, uploaded into *df (no file when
 * no row stays); *deleted adds the rows left out for pd alone. In a v3
 * table each row keeps its lineage: the stored values, else its file's
 * first row id plus its position and its file's data sequence number (a
 * file without a first row id predates the upgrade: its rows have none). */
static ls_status copy_files(ls_ice_table_t *t, const ls_ice_mentry_t *const *src, size_t n,
                            uint8_t *const *drops, const ls_posdel_t *pd, const ls_ice_pval_t *part,
                            const ls_file_rewrite_opts_t *o, ls_ice_datafile_t *df,
                            ls_buf_t *const *raws, int64_t *deleted, char *err, size_t errlen)
{
    ls_buf_t out;
    ls_buf_init(&out);
    ls_pq_writer_t *w = copy_writer(t, o, &out, err, errlen);
    ls_status st = w ? LS_OK : LS_EINVAL;
    for (size_t k = 0; k < n && st == LS_OK; k++) {
        char why[256] = "";
        const char *path = src[k]->df.path;
        ls_pqr_t *rd = ls_pqr_open(raws[k]->data, raws[k]->len, &st, why, sizeof why);
        uint8_t *flags = drops ? drops[k] : NULL, *own = NULL;
        if (rd && pd) { /* the rows deletes took stay out too */
            int64_t rows = ls_pqr_num_rows(rd);
            own = ls_calloc(rows > 0 ? (size_t)rows : 1, 1);
            if (flags && rows > 0) memcpy(own, flags, (size_t)rows);
            int64_t set = ls_posdel_mark(pd, path, own, rows);
            if (deleted) *deleted += set;
            flags = own;
        }
        ls_pqr_fill_t fill = {LS_ICE_FID_ROW_ID, src[k]->df.first_row_id,
                              LS_ICE_FID_LAST_UPDATED_SEQ, src[k]->seq};
        if (rd)
            st = ls_pqr_copy_rows_except(rd, w, flags, src[k]->df.has_first_row_id ? &fill : NULL,
                                         why, sizeof why);
        ls_free(own);
        ls_pqr_free(rd);
        if (st != LS_OK) snprintf(err, errlen, "copying the rows of %s: %s", path, why);
    }
    if (st == LS_OK && (st = ls_pq_writer_finish(w)) != LS_OK)
        snprintf(err, errlen, "finishing a rewritten file: %s", ls_pq_error(w));
    memset(df, 0, sizeof *df);
    if (st == LS_OK && ls_pq_num_rows(w) > 0) {
        ls_ice_datafile_metrics(df, w);
        size_t keep = 0; /* metrics of the table's columns only, not of the lineage */
        for (size_t i = 0; i < df->nmetrics; i++)
            if (df->metrics[i].field_id < LS_ICE_FID_LAST_UPDATED_SEQ)
                df->metrics[keep++] = df->metrics[i];
        df->nmetrics = keep;
        for (int i = 0; i < LS_ICE_MAX_PART; i++) /* df owns its values */
            ls_ice_pval_copy(&df->partition[i], &part[i]);
        st = ls_ice_table_put_data(t, &out, "parquet", df);
        if (st != LS_OK)
            snprintf(err, errlen, "writing a rewritten file: %s", ls_ice_table_error(t));
    }
    if (w) ls_pq_writer_free(w);
    ls_buf_free(&out);
    return st;
}

/* The current snapshot's live files: data files in data[0..*ndata) (the
 * first entries of *live, which owns them) and the index of the live
 * position deletes (*pd: NULL when there are none); a failure's reason in
 * err. */
static ls_status live_files(ls_ice_table_t *t, ls_ice_mentry_t **live, size_t *n, size_t *ndata,
                            ls_posdel_t **pd, uint64_t *bytes_read, char *err, size_t errlen)
{
    *pd = NULL;
    ls_status st = ls_ice_table_live_entries(t, live, n);
    if (st != LS_OK) {
        snprintf(err, errlen, "listing live files: %s", ls_ice_table_error(t));
        return st;
    }
    *ndata = 0; /* data manifests come first */
    while (*ndata < *n && (*live)[*ndata].df.content == LS_ICE_CONTENT_DATA)
        (*ndata)++;
    if (*ndata < *n && (st = ls_posdel_load(t, *live, *n, pd, bytes_read, err, errlen)) != LS_OK) {
        ls_ice_mentries_free(*live, *n);
        *live = NULL;
        *n = 0;
    }
    return st;
}

/* Copies run r's files row for row, less the rows pd deletes, into one new
 * file *df (uploaded; none when no row stays); *deleted adds those rows. */
static ls_status write_run(ls_ice_table_t *t, const ls_ice_mentry_t *live, const ls_file_run_t *r,
                           const ls_posdel_t *pd, const ls_file_rewrite_opts_t *o,
                           ls_ice_datafile_t *df, int64_t *deleted, ls_file_rewrite_stats_t *stats,
                           char *err, size_t errlen)
{
    const ls_ice_mentry_t **src = LS_NEWN(const ls_ice_mentry_t *, r->n);
    ls_buf_t *bufs = LS_NEWN(ls_buf_t, r->n);
    ls_buf_t **raws = LS_NEWN(ls_buf_t *, r->n);
    ls_status st = LS_OK;
    for (size_t k = 0; k < r->n; k++) {
        src[k] = &live[r->idx[k]];
        ls_buf_init(&bufs[k]);
        raws[k] = &bufs[k];
        if (st != LS_OK) continue;
        st = ls_ice_table_get_file(t, src[k]->df.path, &bufs[k]);
        if (st != LS_OK)
            snprintf(err, errlen, "reading %s: %s", src[k]->df.path, ls_ice_table_error(t));
        stats->bytes_read += bufs[k].len;
    }
    memset(df, 0, sizeof *df);
    if (st == LS_OK)
        st = copy_files(t, src, r->n, NULL, pd, live[r->idx[0]].df.partition, o, df, raws, deleted,
                        err, errlen);
    for (size_t k = 0; k < r->n; k++)
        ls_buf_free(&bufs[k]);
    ls_free(src);
    ls_free(bufs);
    ls_free(raws);
    return st;
}

/* Delete compaction: adds to runs[0..*nruns) a run of its own for each data
 * file of live[0..ndata) outside every run whose rows deletes took at
 * least DELETE_RATIO_PCT % of (any of them on a table no longer
 * merge-on-read: it sheds its deletes for good), within the planner's byte
 * budget (*more when some wait). */
#define DELETE_RATIO_PCT 30 /* Iceberg's delete-ratio-threshold */
static size_t plan_delete_runs(const ls_ice_mentry_t *live, size_t ndata, const ls_posdel_t *pd,
                               const ls_file_rewrite_opts_t *o, ls_file_run_t **runs, size_t nruns,
                               bool *more)
{
    bool *taken = LS_NEWN(bool, ndata ? ndata : 1);
    uint64_t budget = 0;
    for (size_t i = 0; i < nruns; i++) {
        budget += (*runs)[i].bytes;
        for (size_t k = 0; k < (*runs)[i].n; k++)
            taken[(*runs)[i].idx[k]] = true;
    }
    for (size_t i = 0; i < ndata && !*more; i++) {
        int64_t gone = taken[i] ? 0 : ls_posdel_count(pd, live[i].df.path);
        if (gone <= 0 ||
            (o->merge_on_read && gone * 100 < live[i].df.record_count * DELETE_RATIO_PCT))
            continue;
        uint64_t bytes = (uint64_t)live[i].df.file_size;
        if (nruns && budget + bytes > (uint64_t)o->target_bytes) {
            *more = true;
            break;
        }
        *runs = ls_realloc(*runs, (nruns + 1) * sizeof **runs);
        ls_file_run_t *r = &(*runs)[nruns++];
        r->n = 1;
        r->idx = LS_NEWN(size_t, 1);
        r->idx[0] = i;
        r->bytes = bytes;
        budget += bytes;
    }
    ls_free(taken);
    return nruns;
}

/* gone() of ls_posdel_covered: a data path not among the sorted paths of
 * the data files that stay live. */
typedef struct kept_paths {
    const char **p;
    size_t n;
} kept_paths_t;

static int path_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static bool not_kept(void *arg, const char *path)
{
    const kept_paths_t *k = arg;
    return !bsearch(&path, k->p, k->n, sizeof *k->p, path_cmp);
}

static bool not_kept_inv(void *arg, const char *path) { return !not_kept(arg, path); }

/* Merges, per partition, the live delete files among live[ndata..n) that
 * are not in skip[0..nskip) (leaving anyway) when the partition holds at
 * least o->min_files of them: their rows naming kept data files become one
 * new delete file (added[*nadded]), and they join removed[*nr]. The merged
 * file's higher sequence number reaches every data file theirs did (it
 * names rows by path), so readers see the same rows. */
static ls_status merge_deletes(ls_ice_table_t *t, const ls_ice_mentry_t *live, size_t ndata,
                               size_t n, const ls_posdel_t *pd, int nspec,
                               const ls_file_rewrite_opts_t *o, kept_paths_t *kept,
                               const char *const *skip, size_t nskip, const char **removed,
                               size_t *nr, ls_ice_datafile_t *added, size_t *nadded, char *err,
                               size_t errlen)
{
    bool *done = LS_NEWN(bool, n);
    for (size_t i = ndata; i < n; i++)
        for (size_t k = 0; k < nskip && !done[i]; k++)
            done[i] = skip[k] == live[i].df.path;
    const char **group = LS_NEWN(const char *, n);
    ls_status st = LS_OK;
    for (size_t i = ndata; i < n && st == LS_OK; i++) {
        if (done[i]) continue;
        size_t ng = 0;
        for (size_t k = i; k < n; k++)
            if (!done[k] && !ls_ice_pvals_cmp(live[k].df.partition, live[i].df.partition, nspec)) {
                group[ng++] = live[k].df.path;
                done[k] = true;
            }
        if (ng < (size_t)o->min_files) continue;
        ls_posdel_row_t *rows;
        size_t nrows = ls_posdel_rows_of(pd, group, ng, not_kept_inv, kept, &rows);
        if (nrows)
            st = ls_posdel_write(t, rows, nrows, live[i].df.partition, o->pq, &added[*nadded], err,
                                 errlen);
        ls_free(rows);
        if (st != LS_OK) break;
        if (nrows) (*nadded)++;
        for (size_t k = 0; k < ng; k++)
            removed[(*nr)++] = group[k];
    }
    ls_free(group);
    ls_free(done);
    return st;
}

ls_status ls_file_rewrite(ls_ice_table_t *t, const ls_file_rewrite_opts_t *o, int64_t now_ms,
                          ls_file_rewrite_stats_t *stats, char *err, size_t errlen)
{
    stats->more = false;
    if (o->min_files < REWRITE_GROWTH || ls_ice_table_current_snapshot(t) < 0) return LS_OK;
    ls_ice_mentry_t *live = NULL;
    size_t n = 0, ndata = 0;
    ls_posdel_t *pd = NULL;
    ls_status st = live_files(t, &live, &n, &ndata, &pd, &stats->bytes_read, err, errlen);
    if (st != LS_OK) return st;
    int nspec = ls_ice_table_spec(t)->nfields;
    ls_file_run_t *runs;
    size_t nruns = ls_file_rewrite_plan(live, ndata, nspec, o, &runs, &stats->more);
    if (pd) nruns = plan_delete_runs(live, ndata, pd, o, &runs, nruns, &stats->more);
    /* added: a file per run, and at most one merged delete file per delete file */
    ls_ice_datafile_t *added = LS_NEWN(ls_ice_datafile_t, nruns + (n - ndata) + 1);
    size_t nremoved = n - ndata;
    for (size_t i = 0; i < nruns; i++)
        nremoved += runs[i].n;
    const char **removed = LS_NEWN(const char *, nremoved ? nremoved : 1);
    bool *gone = LS_NEWN(bool, ndata ? ndata : 1);
    size_t nadded = 0, nr = 0;
    uint64_t rows = 0, written = 0;
    int64_t deleted = 0;
    for (size_t i = 0; i < nruns && st == LS_OK; i++) {
        st = write_run(t, live, &runs[i], pd, o, &added[nadded], &deleted, stats, err, errlen);
        if (st != LS_OK) break;
        if (added[nadded].path) { /* a file whose rows deletes all took leaves none */
            rows += (uint64_t)added[nadded].record_count;
            written += (uint64_t)added[nadded].file_size;
            nadded++;
        }
        for (size_t k = 0; k < runs[i].n; k++) {
            removed[nr++] = live[runs[i].idx[k]].df.path;
            gone[runs[i].idx[k]] = true;
        }
    }
    /* the delete files naming only removed files go with them; a partition
     * holding min_files delete files or more gets them merged into one */
    size_t ndel_removed = 0, ndel_added = 0;
    if (st == LS_OK && pd) {
        kept_paths_t kept = {LS_NEWN(const char *, ndata ? ndata : 1), 0};
        for (size_t i = 0; i < ndata; i++)
            if (!gone[i]) kept.p[kept.n++] = live[i].df.path;
        qsort(kept.p, kept.n, sizeof *kept.p, path_cmp);
        /* from here on removed and added take delete files only */
        size_t from = nr, data_added = nadded;
        for (size_t i = ndata; i < n; i++)
            if (ls_posdel_covered(pd, live[i].df.path, not_kept, &kept))
                removed[nr++] = live[i].df.path;
        if (ls_ice_table_format_version(t) < 3) /* v3 adds no position delete files */
            st = merge_deletes(t, live, ndata, n, pd, nspec, o, &kept, removed + from, nr - from,
                               removed, &nr, added, &nadded, err, errlen);
        ndel_removed = nr - from;
        ndel_added = nadded - data_added;
        ls_free(kept.p);
    }
    if (st == LS_OK && nr) {
        ls_crashpoint("table.rewrite_written");
        st = ls_ice_table_rewrite(t, removed, nr, added, nadded, deleted, now_ms, NULL);
        if (st != LS_OK) {
            snprintf(err, errlen, "committing the rewrite: %s", ls_ice_table_error(t));
        } else {
            stats->commits++;
            stats->files_removed += nr - ndel_removed;
            stats->delete_files_removed += ndel_removed;
            stats->delete_files_added += ndel_added;
            stats->rows_deleted += (uint64_t)deleted;
            stats->files_added += nadded - ndel_added;
            stats->bytes_written += written;
            stats->rows += rows;
        }
    }
    for (size_t i = 0; i < nadded; i++)
        ls_ice_datafile_clear(&added[i]);
    ls_free(added);
    ls_free(removed);
    ls_free(gone);
    ls_file_runs_free(runs, nruns);
    ls_posdel_free(pd);
    ls_ice_mentries_free(live, n);
    return st;
}

void ls_file_ident_long(ls_buf_t *b, int64_t v)
{
    ls_buf_append_u8(b, 'i');
    for (int i = 0; i < 8; i++)
        ls_buf_append_u8(b, (uint8_t)((uint64_t)v >> (8 * i)));
}

void ls_file_ident_bool(ls_buf_t *b, bool v)
{
    ls_buf_append_u8(b, 'b');
    ls_buf_append_u8(b, v ? 1 : 0);
}

void ls_file_ident_bytes(ls_buf_t *b, const uint8_t *p, size_t n)
{
    ls_buf_append_u8(b, 's');
    for (int i = 0; i < 4; i++)
        ls_buf_append_u8(b, (uint8_t)((uint32_t)n >> (8 * i)));
    if (n) ls_buf_append(b, p, n);
}

void ls_file_ident_null(ls_buf_t *b) { ls_buf_append_u8(b, 'n'); }

/* The identity of a stored value t of a column of physical type type. */
static void ident_of(ls_buf_t *b, int type, const ls_pqr_triple_t *t, int max_def)
{
    if (t->def < max_def)
        ls_file_ident_null(b);
    else if (type == LS_PQ_INT32)
        ls_file_ident_long(b, t->v.i32);
    else if (type == LS_PQ_INT64)
        ls_file_ident_long(b, t->v.i64);
    else if (type == LS_PQ_BOOLEAN)
        ls_file_ident_bool(b, t->v.boolean != 0);
    else
        ls_file_ident_bytes(b, t->bytes, t->len);
}

/* The rows of the file in raw whose key drop() accepts: flags (one per
 * row, ls_malloc'd; *nrows_out of them) and their count in *hits; otherwise
 * (*hits 0, no flags) the reader's status, or LS_ECORRUPT, with err when the
 * file cannot be read or lacks a key column. The key is the one column's
 * bytes (ident false: a BYTE_ARRAY column, null keys never dropped), or the
 * identity of the columns' values (ident true). */
static ls_status rows_to_drop(const uint8_t *data, size_t len, const char *path,
                              const char *const *columns, size_t ncols, bool ident,
                              ls_file_drop_fn drop, void *arg, uint8_t **flags, int64_t *nrows_out,
                              int64_t *hits_out, char *err, size_t errlen)
{
    ls_status st;
    char why[256] = "";
    *flags = NULL;
    *hits_out = 0;
    ls_pqr_t *r = ls_pqr_open(data, len, &st, why, sizeof why);
    int cols[16];
    for (size_t k = 0; k < ncols && r; k++)
        if ((cols[k] = ls_pqr_column_index(r, columns[k])) < 0 || k >= 16) {
            snprintf(err, errlen, "%s: no key column %s", path, columns[k]);
            ls_pqr_free(r);
            return LS_ECORRUPT;
        }
    if (!r) {
        snprintf(err, errlen, "%s: %s", path, why);
        return st;
    }
    int64_t nrows = ls_pqr_num_rows(r), row = 0, hits = 0;
    *flags = ls_calloc(nrows ? (size_t)nrows : 1, 1);
    *nrows_out = nrows;
    ls_pqr_flat_t fl[16];
    ls_buf_t id;
    ls_buf_init(&id);
    st = LS_OK;
    for (int g = 0; g < ls_pqr_num_row_groups(r) && st == LS_OK; g++) {
        size_t got = 0;
        for (; got < ncols; got++) {
            st = ls_pqr_read_flat(r, g, cols[got], &fl[got], why, sizeof why);
            if (st != LS_OK) {
                snprintf(err, errlen, "%s: reading %s: %s", path, columns[got], why);
                break;
            }
        }
        for (size_t k = 1; k < got && st == LS_OK; k++)
            if (fl[k].n != fl[0].n) {
                snprintf(err, errlen, "%s: row group %d: key columns %s and %s disagree on rows",
                         path, g, columns[0], columns[k]);
                st = LS_ECORRUPT;
            }
        for (int64_t i = 0; st == LS_OK && i < fl[0].n && row < nrows; i++, row++) {
            bool match;
            if (!ident) {
                match =
                    fl[0].v[i].def == fl[0].max_def && drop(arg, fl[0].v[i].bytes, fl[0].v[i].len);
            } else {
                id.len = 0;
                for (size_t k = 0; k < ncols; k++)
                    ident_of(&id, ls_pqr_column(r, cols[k])->type, &fl[k].v[i], fl[k].max_def);
                match = drop(arg, id.data, id.len);
            }
            if (match) {
                (*flags)[row] = 1;
                hits++;
            }
        }
        for (size_t k = 0; k < got; k++)
            ls_pqr_flat_free(&fl[k]);
    }
    ls_buf_free(&id);
    ls_pqr_free(r);
    if (st != LS_OK) {
        ls_free(*flags);
        *flags = NULL;
        return st;
    }
    *hits_out = hits;
    return LS_OK;
}

/* A live data file as far as its key columns go (copy-on-write scans read
 * only those): an anonymous mapping of the file's size, so pages never
 * written are zero and never resident, holding the footer (ranged read of
 * the tail) and the key columns' chunks (a ranged read each). The reader
 * opens it like the whole file: it checks the footer, and decodes only the
 * pages of the columns asked for. The leading magic is not fetched (the
 * trailing one is checked). Any failure leaves the caller to read the
 * whole file, so a wrong size in a manifest costs a read, not a commit. */
typedef struct key_image {
    uint8_t *data;
    size_t len;
    uint64_t bytes_read;
} key_image_t;

#define KEY_IMAGE_MIN_FILE (256 * 1024) /* smaller files are read whole */
#define KEY_IMAGE_TAIL (8 * 1024)       /* first guess at footer + 8 */

static void key_image_free(key_image_t *im)
{
    if (im->data) munmap(im->data, im->len);
    memset(im, 0, sizeof *im);
}

static bool key_image_put(ls_ice_table_t *t, const char *path, key_image_t *im, uint64_t off,
                          uint64_t len, ls_buf_t *tmp)
{
    if (off > im->len || len > im->len - off) return false;
    if (ls_ice_table_get_range(t, path, off, len, tmp) != LS_OK || tmp->len != len) return false;
    memcpy(im->data + off, tmp->data, (size_t)len);
    im->bytes_read += len;
    return true;
}

static bool key_image_load(ls_ice_table_t *t, const char *path, int64_t size,
                           const char *const *columns, size_t ncols, key_image_t *im)
{
    memset(im, 0, sizeof *im);
    if (size < KEY_IMAGE_MIN_FILE) return false;
    void *m = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return false;
    im->data = m;
    im->len = (size_t)size;
    ls_buf_t tmp;
    ls_buf_init(&tmp);
    uint64_t tail = im->len < KEY_IMAGE_TAIL ? im->len : KEY_IMAGE_TAIL;
    bool ok = key_image_put(t, path, im, im->len - tail, tail, &tmp) &&
              !memcmp(im->data + im->len - 4, "PAR1", 4);
    if (ok) {
        const uint8_t *f = im->data + im->len - 8;
        uint64_t flen =
            (uint64_t)f[0] | (uint64_t)f[1] << 8 | (uint64_t)f[2] << 16 | (uint64_t)f[3] << 24;
        ok = flen + 12 <= im->len &&
             (flen + 8 <= tail || key_image_put(t, path, im, im->len - 8 - flen, flen, &tmp));
    }
    ls_pqr_t *r = NULL;
    if (ok) {
        memcpy(im->data, "PAR1", 4);
        ls_status st;
        char why[256];
        ok = (r = ls_pqr_open(im->data, im->len, &st, why, sizeof why)) != NULL;
    }
    for (size_t k = 0; ok && k < ncols; k++) {
        int col = ls_pqr_column_index(r, columns[k]);
        ok = col >= 0;
        for (int g = 0; ok && g < ls_pqr_num_row_groups(r); g++) {
            const ls_pqr_chunk_t *c = ls_pqr_chunk(r, g, col);
            ok =
                c->start >= 0 && c->compressed_bytes >= 0 &&
                key_image_put(t, path, im, (uint64_t)c->start, (uint64_t)c->compressed_bytes, &tmp);
        }
    }
    ls_pqr_free(r);
    ls_buf_free(&tmp);
    if (!ok) key_image_free(im);
    return ok;
}

/* Merge-on-read: the rows of one partition to delete. */
typedef struct del_group {
    const ls_ice_pval_t *part; /* a live entry's values */
    ls_posdel_row_t *rows;
    size_t n, cap;
} del_group_t;

static void group_add(del_group_t **gs, size_t *ng, int nspec, const ls_ice_mentry_t *e,
                      const uint8_t *flags, int64_t nrows)
{
    del_group_t *g = NULL;
    for (size_t i = 0; i < *ng && !g; i++)
        if (!ls_ice_pvals_cmp((*gs)[i].part, e->df.partition, nspec)) g = &(*gs)[i];
    if (!g) {
        *gs = ls_realloc(*gs, (*ng + 1) * sizeof **gs);
        g = &(*gs)[(*ng)++];
        *g = (del_group_t){.part = e->df.partition};
    }
    for (int64_t r = 0; r < nrows; r++) {
        if (!flags[r]) continue;
        if (g->n == g->cap) {
            g->cap = g->cap ? g->cap * 2 : 64;
            g->rows = ls_realloc(g->rows, g->cap * sizeof *g->rows);
        }
        g->rows[g->n++] = (ls_posdel_row_t){e->df.path, r};
    }
}

/* Format version 3: data file e's deletion vector, of its rows flagged in
 * flags[0..nrows) and those the live deletes took (its old vector, older
 * position delete files), into out->added; its old vector into
 * out->removed (spec: at most one vector per data file). */
static ls_status write_dv(ls_ice_table_t *t, const ls_ice_mentry_t *e, const uint8_t *flags,
                          int64_t nrows, const ls_posdel_t *pd, ls_file_cow_t *out, char *err,
                          size_t errlen)
{
    uint8_t *all = ls_malloc(nrows > 0 ? (size_t)nrows : 1);
    if (nrows > 0) memcpy(all, flags, (size_t)nrows);
    ls_posdel_mark(pd, e->df.path, all, nrows);
    int64_t *pos = LS_NEWN(int64_t, nrows > 0 ? (size_t)nrows : 1);
    size_t n = 0;
    for (int64_t r = 0; r < nrows; r++)
        if (all[r]) pos[n++] = r;
    ls_ice_datafile_t *df = &out->added[out->nadded];
    ls_status st = ls_dv_write(t, e->df.path, pos, n, e->df.partition, df, err, errlen);
    if (st == LS_OK) {
        out->nadded++;
        out->bytes_written += (uint64_t)df->file_size;
        const char *old = ls_posdel_dv_of(pd, e->df.path);
        if (old) out->removed[out->nremoved++] = ls_strdup(old);
    }
    ls_free(pos);
    ls_free(all);
    return st;
}

static ls_status drop_rows(ls_ice_table_t *t, const ls_file_rewrite_opts_t *o,
                           const char *const *columns, size_t ncols, bool ident,
                           ls_file_drop_fn drop, void *arg, ls_file_cow_t *out, char *err,
                           size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (ls_ice_table_current_snapshot(t) < 0) return LS_OK;
    ls_ice_mentry_t *live = NULL;
    size_t n = 0, ndata = 0;
    ls_posdel_t *pd = NULL;
    ls_status st = live_files(t, &live, &n, &ndata, &pd, &out->bytes_read, err, errlen);
    if (st != LS_OK) return st;
    int nspec = ls_ice_table_spec(t)->nfields;
    out->removed = LS_NEWN(char *, ndata ? ndata : 1);
    out->added = LS_NEWN(ls_ice_datafile_t, ndata ? ndata : 1);
    del_group_t *groups = NULL;
    size_t ngroups = 0;
    ls_buf_t raw;
    ls_buf_init(&raw);
    for (size_t i = 0; i < ndata && st == LS_OK; i++) {
        const char *path = live[i].df.path;
        key_image_t im;
        bool whole = !key_image_load(t, path, live[i].df.file_size, columns, ncols, &im);
        if (whole && (st = ls_ice_table_get_file(t, path, &raw)) != LS_OK) {
            snprintf(err, errlen, "reading %s: %s", path, ls_ice_table_error(t));
            break;
        }
        out->bytes_read += whole ? raw.len : im.bytes_read;
        uint8_t *flags;
        int64_t nrows = 0;
        int64_t hits = 0;
        st = rows_to_drop(whole ? raw.data : im.data, whole ? raw.len : im.len, path, columns,
                          ncols, ident, drop, arg, &flags, &nrows, &hits, err, errlen);
        key_image_free(&im);
        if (hits > 0 && pd) { /* rows deletes already took are not hits */
            uint8_t *gone = ls_calloc(nrows ? (size_t)nrows : 1, 1);
            ls_posdel_mark(pd, path, gone, nrows);
            for (int64_t r = 0; r < nrows; r++)
                if (flags[r] && gone[r]) flags[r] = 0, hits--;
            ls_free(gone);
        }
        if (hits > 0 && st == LS_OK && o->merge_on_read) {
            if (ls_ice_table_format_version(t) >= 3)
                st = write_dv(t, &live[i], flags, nrows, pd, out, err, errlen);
            else
                group_add(&groups, &ngroups, nspec, &live[i], flags, nrows);
            out->rows_dropped += hits;
        } else if (hits > 0 && st == LS_OK) {
            if (!whole && (st = ls_ice_table_get_file(t, path, &raw)) != LS_OK)
                snprintf(err, errlen, "reading %s: %s", path, ls_ice_table_error(t));
            else if (!whole)
                out->bytes_read += raw.len;
        }
        if (hits > 0 && st == LS_OK && !o->merge_on_read) {
            ls_buf_t *raws[1] = {&raw};
            const ls_ice_mentry_t *src[1] = {&live[i]};
            ls_ice_datafile_t *df = &out->added[out->nadded];
            st = copy_files(t, src, 1, &flags, pd, live[i].df.partition, o, df, raws, NULL, err,
                            errlen);
            if (st == LS_OK) {
                if (df->path) {
                    out->nadded++;
                    out->bytes_written += (uint64_t)df->file_size;
                }
                out->removed[out->nremoved++] = ls_strdup(path);
                out->rows_dropped += hits;
            }
        }
        ls_free(flags);
    }
    /* merge-on-read: one position delete file per partition touched */
    for (size_t g = 0; g < ngroups; g++) {
        if (st == LS_OK) {
            ls_ice_datafile_t *df = &out->added[out->nadded];
            st = ls_posdel_write(t, groups[g].rows, groups[g].n, groups[g].part, o->pq, df, err,
                                 errlen);
            if (st == LS_OK) {
                out->nadded++;
                out->bytes_written += (uint64_t)df->file_size;
            }
        }
        ls_free(groups[g].rows);
    }
    ls_free(groups);
    ls_buf_free(&raw);
    ls_posdel_free(pd);
    ls_ice_mentries_free(live, n);
    if (st != LS_OK) ls_file_cow_clear(out);
    return st;
}

ls_status ls_file_drop_rows(ls_ice_table_t *t, const ls_file_rewrite_opts_t *o,
                            const char *key_column, ls_file_drop_fn drop, void *arg,
                            ls_file_cow_t *out, char *err, size_t errlen)
{
    return drop_rows(t, o, &key_column, 1, false, drop, arg, out, err, errlen);
}

ls_status ls_file_drop_rows_ident(ls_ice_table_t *t, const ls_file_rewrite_opts_t *o,
                                  const char *const *columns, size_t n, ls_file_drop_fn drop,
                                  void *arg, ls_file_cow_t *out, char *err, size_t errlen)
{
    if (n == 0 || n > 16) {
        snprintf(err, errlen, "a primary key of %zu columns", n);
        return LS_EINVAL;
    }
    return drop_rows(t, o, columns, n, true, drop, arg, out, err, errlen);
}

void ls_file_cow_clear(ls_file_cow_t *c)
{
    for (size_t i = 0; i < c->nremoved; i++)
        ls_free(c->removed[i]);
    for (size_t i = 0; i < c->nadded; i++)
        ls_ice_datafile_clear(&c->added[i]);
    ls_free(c->removed);
    ls_free(c->added);
    memset(c, 0, sizeof *c);
}
