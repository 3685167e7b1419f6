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
 * one, never both or neither. */
#include "table/file_rewrite.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

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

/* A new file of the rows of the files at paths[0..n) (read into raw; each
 * file's rows flagged in drops[k], when given, left out), in partition part,
 * uploaded into *df; *wrote: rows written (0: no file). */
static ls_status copy_files(ls_ice_table_t *t, const char *const *paths, size_t n,
                            uint8_t *const *drops, const ls_ice_pval_t *part,
                            const ls_file_rewrite_opts_t *o, ls_ice_datafile_t *df,
                            ls_buf_t *const *raws, char *err, size_t errlen)
{
    ls_buf_t out;
    ls_buf_init(&out);
    ls_pq_writer_t *w = ls_pq_writer_new(o->fields, o->nfields, o->pq, &out, err, errlen);
    ls_status st = w ? LS_OK : LS_EINVAL;
    for (size_t k = 0; k < n && st == LS_OK; k++) {
        char why[256] = "";
        ls_pqr_t *rd = ls_pqr_open(raws[k]->data, raws[k]->len, &st, why, sizeof why);
        if (rd) st = ls_pqr_copy_rows_except(rd, w, drops ? drops[k] : NULL, why, sizeof why);
        ls_pqr_free(rd);
        if (st != LS_OK) snprintf(err, errlen, "copying the rows of %s: %s", paths[k], why);
    }
    if (st == LS_OK && (st = ls_pq_writer_finish(w)) != LS_OK)
        snprintf(err, errlen, "finishing a rewritten file: %s", ls_pq_error(w));
    memset(df, 0, sizeof *df);
    if (st == LS_OK && ls_pq_num_rows(w) > 0) {
        ls_ice_datafile_metrics(df, w);
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

/* The current snapshot's live data files; a failure's reason in err. */
static ls_status live_files(ls_ice_table_t *t, ls_ice_mentry_t **live, size_t *n, char *err,
                            size_t errlen)
{
    ls_status st = ls_ice_table_live_files(t, live, n);
    if (st != LS_OK) snprintf(err, errlen, "listing live files: %s", ls_ice_table_error(t));
    return st;
}

/* Copies run r's files row for row into one new file *df (uploaded). */
static ls_status write_run(ls_ice_table_t *t, const ls_ice_mentry_t *live, const ls_file_run_t *r,
                           const ls_file_rewrite_opts_t *o, ls_ice_datafile_t *df,
                           ls_file_rewrite_stats_t *stats, char *err, size_t errlen)
{
    const char **paths = LS_NEWN(const char *, r->n);
    ls_buf_t *bufs = LS_NEWN(ls_buf_t, r->n);
    ls_buf_t **raws = LS_NEWN(ls_buf_t *, r->n);
    ls_status st = LS_OK;
    for (size_t k = 0; k < r->n; k++) {
        paths[k] = live[r->idx[k]].df.path;
        ls_buf_init(&bufs[k]);
        raws[k] = &bufs[k];
        if (st != LS_OK) continue;
        st = ls_ice_table_get_file(t, paths[k], &bufs[k]);
        if (st != LS_OK) snprintf(err, errlen, "reading %s: %s", paths[k], ls_ice_table_error(t));
        stats->bytes_read += bufs[k].len;
    }
    memset(df, 0, sizeof *df);
    if (st == LS_OK)
        st = copy_files(t, paths, r->n, NULL, live[r->idx[0]].df.partition, o, df, raws, err,
                        errlen);
    for (size_t k = 0; k < r->n; k++)
        ls_buf_free(&bufs[k]);
    ls_free(paths);
    ls_free(bufs);
    ls_free(raws);
    return st;
}

ls_status ls_file_rewrite(ls_ice_table_t *t, const ls_file_rewrite_opts_t *o, int64_t now_ms,
                          ls_file_rewrite_stats_t *stats, char *err, size_t errlen)
{
    stats->more = false;
    if (o->min_files < REWRITE_GROWTH || ls_ice_table_current_snapshot(t) < 0) return LS_OK;
    ls_ice_mentry_t *live = NULL;
    size_t n = 0;
    ls_status st = live_files(t, &live, &n, err, errlen);
    if (st != LS_OK) return st;
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
 * row, ls_malloc'd) and their count; -1 with err when the file cannot be
 * read or lacks a key column. The key is the one column's bytes (ident
 * false: a BYTE_ARRAY column, null keys never dropped), or the identity of
 * the columns' values (ident true). */
static int64_t rows_to_drop(const uint8_t *data, size_t len, const char *path,
                            const char *const *columns, size_t ncols, bool ident,
                            ls_file_drop_fn drop, void *arg, uint8_t **flags, char *err,
                            size_t errlen)
{
    ls_status st;
    char why[256] = "";
    *flags = NULL;
    ls_pqr_t *r = ls_pqr_open(data, len, &st, why, sizeof why);
    int cols[16];
    for (size_t k = 0; k < ncols && r; k++)
        if ((cols[k] = ls_pqr_column_index(r, columns[k])) < 0 || k >= 16) {
            snprintf(err, errlen, "%s: no key column %s", path, columns[k]);
            ls_pqr_free(r);
            return -1;
        }
    if (!r) {
        snprintf(err, errlen, "%s: %s", path, why);
        return -1;
    }
    int64_t nrows = ls_pqr_num_rows(r), row = 0, hits = 0;
    *flags = ls_calloc(nrows ? (size_t)nrows : 1, 1);
    ls_pqr_flat_t fl[16];
    ls_buf_t id;
    ls_buf_init(&id);
    for (int g = 0; g < ls_pqr_num_row_groups(r) && hits >= 0; g++) {
        size_t got = 0;
        for (; got < ncols; got++)
            if (ls_pqr_read_flat(r, g, cols[got], &fl[got], why, sizeof why) != LS_OK) {
                snprintf(err, errlen, "%s: reading %s: %s", path, columns[got], why);
                hits = -1;
                break;
            }
        for (size_t k = 1; k < got && hits >= 0; k++)
            if (fl[k].n != fl[0].n) {
                snprintf(err, errlen, "%s: row group %d: key columns %s and %s disagree on rows",
                         path, g, columns[0], columns[k]);
                hits = -1;
            }
        for (int64_t i = 0; hits >= 0 && i < fl[0].n && row < nrows; i++, row++) {
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
    if (hits < 0) {
        ls_free(*flags);
        *flags = NULL;
    }
    return hits;
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

static ls_status drop_rows(ls_ice_table_t *t, const ls_file_rewrite_opts_t *o,
                           const char *const *columns, size_t ncols, bool ident,
                           ls_file_drop_fn drop, void *arg, ls_file_cow_t *out, char *err,
                           size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (ls_ice_table_current_snapshot(t) < 0) return LS_OK;
    ls_ice_mentry_t *live = NULL;
    size_t n = 0;
    ls_status st = live_files(t, &live, &n, err, errlen);
    if (st != LS_OK) return st;
    out->removed = LS_NEWN(char *, n ? n : 1);
    out->added = LS_NEWN(ls_ice_datafile_t, n ? n : 1);
    ls_buf_t raw;
    ls_buf_init(&raw);
    for (size_t i = 0; i < n && st == LS_OK; i++) {
        const char *path = live[i].df.path;
        key_image_t im;
        bool whole = !key_image_load(t, path, live[i].df.file_size, columns, ncols, &im);
        if (whole && (st = ls_ice_table_get_file(t, path, &raw)) != LS_OK) {
            snprintf(err, errlen, "reading %s: %s", path, ls_ice_table_error(t));
            break;
        }
        out->bytes_read += whole ? raw.len : im.bytes_read;
        uint8_t *flags;
        int64_t hits = rows_to_drop(whole ? raw.data : im.data, whole ? raw.len : im.len, path,
                                    columns, ncols, ident, drop, arg, &flags, err, errlen);
        key_image_free(&im);
        if (hits < 0) st = LS_ECORRUPT;
        if (hits > 0 && !whole && (st = ls_ice_table_get_file(t, path, &raw)) != LS_OK)
            snprintf(err, errlen, "reading %s: %s", path, ls_ice_table_error(t));
        else if (hits > 0 && !whole)
            out->bytes_read += raw.len;
        if (hits > 0 && st == LS_OK) {
            ls_buf_t *raws[1] = {&raw};
            ls_ice_datafile_t *df = &out->added[out->nadded];
            st = copy_files(t, &path, 1, &flags, live[i].df.partition, o, df, raws, err, errlen);
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
    ls_buf_free(&raw);
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
