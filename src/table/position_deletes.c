/* Position delete files: writing them and reading them back into an index.
 *
 * Why position deletes (merge-on-read upsert tables): a copy-on-write
 * upsert commit rewrites every data file holding an updated key, so its
 * bytes written grow with the table, not with the updates. A position
 * delete names the old row by (file_path, pos) instead: a commit writes its
 * new rows and one small delete file per partition it touched. Equality
 * deletes would spare even the key scan, but PyIceberg does not read them
 * and every reader would have to join each data file against them; the
 * scan that finds positions is the copy-on-write scan (key columns only),
 * so readers get plain position deletes, which PyIceberg, Spark, Trino,
 * DuckDB and the Java library all apply.
 *
 * Invariants:
 *  - a delete file holds rows of data files of its own partition only
 *    (readers match them by partition), sorted by file_path then pos;
 *  - a row is never deleted twice: the writer marks rows against the index
 *    of the live delete files first (ls_posdel_mark), so repeated updates of
 *    a key do not grow deletes of rows already gone;
 *  - no file_path bounds are written: the metrics keep string bounds to 16
 *    bytes, and a reader that found lower == upper would take the prefix for
 *    the one file the deletes apply to; without bounds every reader applies
 *    the file to every data file of its partition, which is always right;
 *  - a delete file leaves the table only in a rewrite that removes every
 *    data file it names (ls_posdel_covered), with those files' rows written
 *    without the deleted ones (table/file_rewrite.c).
 *
 * Format version 3: the index also holds deletion vectors
 * (deletion_vector.h), each a "delete file" with one target whose blob is
 * read by a ranged GET; a vector holds every deleted row of its data file,
 * so a position delete file whose data files all have vectors is covered. */
#include "table/position_deletes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "table/deletion_vector.h"
#include "table/parquet_reader.h"

static const ls_pq_field_t posdel_fields[] = {
    {"file_path", LS_PQ_BYTE_ARRAY, LS_PQ_REQUIRED, LS_PQ_LT_STRING, LS_POSDEL_FID_FILE_PATH, 0, 0,
     0, 0},
    {"pos", LS_PQ_INT64, LS_PQ_REQUIRED, LS_PQ_LT_NONE, LS_POSDEL_FID_POS, 0, 0, 0, 0},
};

const ls_pq_field_t *ls_posdel_fields(size_t *n)
{
    *n = sizeof posdel_fields / sizeof posdel_fields[0];
    return posdel_fields;
}

/* One delete file of the index: its path and the distinct data file paths
 * it names (owned; rows point at them). */
typedef struct del_file {
    char *path;
    char **targets;
    size_t ntargets;
    bool dv; /* a deletion vector: one target, all its deleted rows */
} del_file_t;

/* A row of the index: which delete file holds it too. */
typedef struct idx_row {
    const char *path;
    int64_t pos;
    size_t file;
} idx_row_t;

struct ls_posdel {
    del_file_t *files;
    size_t nfiles;
    idx_row_t *rows; /* every file's rows, sorted by path then pos */
    size_t nrows, cap;
};

static int path_pos_cmp(const char *p1, int64_t x1, const char *p2, int64_t x2)
{
    int d = p1 == p2 ? 0 : strcmp(p1, p2);
    if (d) return d;
    return x1 < x2 ? -1 : x1 > x2;
}

static int row_cmp(const void *a, const void *b)
{
    const ls_posdel_row_t *x = a, *y = b;
    return path_pos_cmp(x->path, x->pos, y->path, y->pos);
}

static int idx_row_cmp(const void *a, const void *b)
{
    const idx_row_t *x = a, *y = b;
    return path_pos_cmp(x->path, x->pos, y->path, y->pos);
}

/* The target of f equal to p[0..n), added when new. */
static const char *target_of(del_file_t *f, const uint8_t *p, size_t n)
{
    for (size_t i = f->ntargets; i-- > 0;)
        if (strlen(f->targets[i]) == n && !memcmp(f->targets[i], p, n)) return f->targets[i];
    f->targets = ls_realloc(f->targets, (f->ntargets + 1) * sizeof *f->targets);
    char *s = ls_malloc(n + 1);
    if (n) memcpy(s, p, n);
    s[n] = 0;
    return f->targets[f->ntargets++] = s;
}

/* The rows of the delete file in data[0..len) into d, naming f's targets
 * (f is d->files[fi]). */
static ls_status read_rows(ls_posdel_t *d, size_t fi, const uint8_t *data, size_t len, char *err,
                           size_t errlen)
{
    del_file_t *f = &d->files[fi];
    ls_status st;
    char why[256] = "";
    ls_pqr_t *r = ls_pqr_open(data, len, &st, why, sizeof why);
    int cp = r ? ls_pqr_column_index(r, "file_path") : -1;
    int cq = r ? ls_pqr_column_index(r, "pos") : -1;
    if (!r || cp < 0 || cq < 0) {
        snprintf(err, errlen, "position delete file %s: %s", f->path,
                 r ? "no file_path or pos column" : why);
        ls_pqr_free(r);
        return LS_ECORRUPT;
    }
    st = LS_OK;
    for (int g = 0; g < ls_pqr_num_row_groups(r) && st == LS_OK; g++) {
        ls_pqr_flat_t fp, fq;
        if (ls_pqr_read_flat(r, g, cp, &fp, why, sizeof why) != LS_OK) {
            st = LS_ECORRUPT;
            break;
        }
        if (ls_pqr_read_flat(r, g, cq, &fq, why, sizeof why) != LS_OK) {
            ls_pqr_flat_free(&fp);
            st = LS_ECORRUPT;
            break;
        }
        if (fp.n != fq.n) {
            snprintf(why, sizeof why, "row group %d: columns disagree on rows", g);
            st = LS_ECORRUPT;
        }
        for (int64_t i = 0; st == LS_OK && i < fp.n; i++) {
            if (fp.v[i].def < fp.max_def || fq.v[i].def < fq.max_def || fq.v[i].v.i64 < 0) {
                snprintf(why, sizeof why, "row %lld: a null or negative position", (long long)i);
                st = LS_ECORRUPT;
                break;
            }
            if (d->nrows == d->cap) {
                d->cap = d->cap ? d->cap * 2 : 256;
                d->rows = ls_realloc(d->rows, d->cap * sizeof *d->rows);
            }
            d->rows[d->nrows++] =
                (idx_row_t){target_of(f, fp.v[i].bytes, fp.v[i].len), fq.v[i].v.i64, fi};
        }
        ls_pqr_flat_free(&fp);
        ls_pqr_flat_free(&fq);
    }
    if (st != LS_OK) snprintf(err, errlen, "position delete file %s: %s", f->path, why);
    ls_pqr_free(r);
    return st;
}

/* The positions of the deletion vector blob in data[0..len) into d,
 * naming its referenced data file (f is d->files[fi]). */
static ls_status read_dv(ls_posdel_t *d, size_t fi, const char *data_path, const uint8_t *data,
                         size_t len, char *err, size_t errlen)
{
    del_file_t *f = &d->files[fi];
    int64_t *pos;
    size_t n;
    char why[256];
    if (ls_dv_decode(data, len, &pos, &n, why, sizeof why) != LS_OK) {
        snprintf(err, errlen, "deletion vector %s: %s", f->path, why);
        return LS_ECORRUPT;
    }
    const char *target = target_of(f, (const uint8_t *)data_path, strlen(data_path));
    for (size_t i = 0; i < n; i++) {
        if (d->nrows == d->cap) {
            d->cap = d->cap ? d->cap * 2 : 256;
            d->rows = ls_realloc(d->rows, d->cap * sizeof *d->rows);
        }
        d->rows[d->nrows++] = (idx_row_t){target, pos[i], fi};
    }
    ls_free(pos);
    return LS_OK;
}

ls_status ls_posdel_load(ls_ice_table_t *t, const ls_ice_mentry_t *live, size_t n,
                         ls_posdel_t **out, uint64_t *bytes_read, char *err, size_t errlen)
{
    ls_posdel_t *d = LS_NEW(ls_posdel_t);
    ls_status st = LS_OK;
    ls_buf_t raw;
    ls_buf_init(&raw);
    for (size_t i = 0; i < n && st == LS_OK; i++) {
        const ls_ice_datafile_t *df = &live[i].df;
        if (df->content != LS_ICE_CONTENT_POSITION_DELETES) continue;
        bool dv = df->content_size > 0;
        d->files = ls_realloc(d->files, (d->nfiles + 1) * sizeof *d->files);
        del_file_t *f = &d->files[d->nfiles++];
        *f = (del_file_t){.path = ls_strdup(df->path), .dv = dv};
        st = dv ? ls_ice_table_get_range(t, f->path, (uint64_t)df->content_offset,
                                         (uint64_t)df->content_size, &raw)
                : ls_ice_table_get_file(t, f->path, &raw);
        if (st != LS_OK) {
            snprintf(err, errlen, "reading %s: %s", f->path, ls_ice_table_error(t));
            break;
        }
        *bytes_read += raw.len;
        st =
            dv ? read_dv(d, d->nfiles - 1, df->referenced_data_file, raw.data, raw.len, err, errlen)
               : read_rows(d, d->nfiles - 1, raw.data, raw.len, err, errlen);
    }
    ls_buf_free(&raw);
    if (st != LS_OK) {
        ls_posdel_free(d);
        return st;
    }
    if (d->nrows) qsort(d->rows, d->nrows, sizeof *d->rows, idx_row_cmp);
    *out = d;
    return LS_OK;
}

void ls_posdel_free(ls_posdel_t *d)
{
    if (!d) return;
    for (size_t i = 0; i < d->nfiles; i++) {
        for (size_t k = 0; k < d->files[i].ntargets; k++)
            ls_free(d->files[i].targets[k]);
        ls_free(d->files[i].targets);
        ls_free(d->files[i].path);
    }
    ls_free(d->files);
    ls_free(d->rows);
    ls_free(d);
}

/* The first row of path: [*from, *to) are its rows. */
static void rows_of(const ls_posdel_t *d, const char *path, size_t *from, size_t *to)
{
    size_t lo = 0, hi = d->nrows;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(d->rows[mid].path, path) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *from = lo;
    while (hi < d->nrows && !strcmp(d->rows[hi].path, path))
        hi++;
    *to = hi;
}

int64_t ls_posdel_mark(const ls_posdel_t *d, const char *path, uint8_t *flags, int64_t nrows)
{
    size_t from, to;
    if (!d) return 0;
    rows_of(d, path, &from, &to);
    int64_t set = 0;
    for (size_t i = from; i < to; i++) {
        int64_t pos = d->rows[i].pos;
        if (pos < nrows && !flags[pos]) {
            flags[pos] = 1;
            set++;
        }
    }
    return set;
}

int64_t ls_posdel_count(const ls_posdel_t *d, const char *path)
{
    size_t from, to;
    if (!d) return 0;
    rows_of(d, path, &from, &to);
    int64_t n = 0;
    for (size_t i = from; i < to; i++)
        n += i == from || d->rows[i].pos != d->rows[i - 1].pos;
    return n;
}

/* The index of the delete file at path, or -1. */
static ssize_t file_index(const ls_posdel_t *d, const char *path)
{
    for (size_t i = 0; d && i < d->nfiles; i++)
        if (!strcmp(d->files[i].path, path)) return (ssize_t)i;
    return -1;
}

size_t ls_posdel_rows_of(const ls_posdel_t *d, const char *const *del_paths, size_t n,
                         bool (*keep)(void *arg, const char *data_path), void *arg,
                         ls_posdel_row_t **out)
{
    bool *chosen = LS_NEWN(bool, d && d->nfiles ? d->nfiles : 1);
    for (size_t i = 0; i < n; i++) {
        ssize_t k = file_index(d, del_paths[i]);
        if (k >= 0) chosen[k] = true;
    }
    size_t m = 0;
    *out = NULL;
    for (size_t i = 0; d && i < d->nrows; i++) {
        const idx_row_t *r = &d->rows[i];
        if (!chosen[r->file] || !keep(arg, r->path)) continue;
        if (m && !path_pos_cmp((*out)[m - 1].path, (*out)[m - 1].pos, r->path, r->pos))
            continue; /* named by two of them: once */
        if ((m & (m - 1)) == 0) *out = ls_realloc(*out, (m ? 2 * m : 1) * sizeof **out);
        (*out)[m++] = (ls_posdel_row_t){r->path, r->pos};
    }
    ls_free(chosen);
    return m;
}

const char *ls_posdel_dv_of(const ls_posdel_t *d, const char *data_path)
{
    for (size_t i = 0; d && i < d->nfiles; i++)
        if (d->files[i].dv && d->files[i].ntargets == 1 &&
            !strcmp(d->files[i].targets[0], data_path))
            return d->files[i].path;
    return NULL;
}

bool ls_posdel_covered(const ls_posdel_t *d, const char *del_path,
                       bool (*gone)(void *arg, const char *data_path), void *arg)
{
    ssize_t i = file_index(d, del_path);
    if (i < 0) return false;
    const del_file_t *f = &d->files[i];
    for (size_t k = 0; k < f->ntargets; k++)
        if (!gone(arg, f->targets[k]) && (f->dv || !ls_posdel_dv_of(d, f->targets[k])))
            return false;
    return true;
}

ls_status ls_posdel_write(ls_ice_table_t *t, ls_posdel_row_t *rows, size_t n,
                          const ls_ice_pval_t *part, const ls_pq_opts_t *pq, ls_ice_datafile_t *df,
                          char *err, size_t errlen)
{
    qsort(rows, n, sizeof *rows, row_cmp);
    size_t nf;
    const ls_pq_field_t *f = ls_posdel_fields(&nf);
    ls_buf_t out;
    ls_buf_init(&out);
    memset(df, 0, sizeof *df);
    ls_pq_writer_t *w = ls_pq_writer_new(f, nf, pq, &out, err, errlen);
    ls_status st = w ? LS_OK : LS_EINVAL;
    for (size_t i = 0; i < n && st == LS_OK; i++) {
        ls_pq_put_bytes(w, 0, 0, rows[i].path, strlen(rows[i].path));
        ls_pq_put_i64(w, 1, 0, rows[i].pos);
        st = ls_pq_end_row(w);
    }
    if (st == LS_OK) st = ls_pq_writer_finish(w);
    if (st != LS_OK && w)
        snprintf(err, errlen, "writing a position delete file: %s", ls_pq_error(w));
    if (st == LS_OK) {
        ls_ice_datafile_metrics(df, w);
        /* no file_path bounds (design note above) */
        for (size_t i = 0; i < df->nmetrics; i++)
            if (df->metrics[i].field_id == LS_POSDEL_FID_FILE_PATH)
                df->metrics[i].has_lower = df->metrics[i].has_upper = 0;
        df->content = LS_ICE_CONTENT_POSITION_DELETES;
        for (int i = 0; i < LS_ICE_MAX_PART; i++) /* df owns its values */
            ls_ice_pval_copy(&df->partition[i], &part[i]);
        st = ls_ice_table_put_data(t, &out, "deletes.parquet", df);
        if (st != LS_OK)
            snprintf(err, errlen, "uploading a position delete file: %s", ls_ice_table_error(t));
    }
    if (w) ls_pq_writer_free(w);
    ls_buf_free(&out);
    return st;
}
