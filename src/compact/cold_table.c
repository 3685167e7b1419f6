/* Cold reads of a raw table log from its table: see cold_table.h. */
#include "compact/cold_table.h"

#include <pthread.h>
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

/* ------------------------------------------------------------ open files
 *
 * A data file is opened once per cache entry: the footer parsed and the
 * scan cursor (ls_cold_file_t) kept, so a catching-up consumer's next
 * read-ahead block goes on where the last stopped, with no footer GET or
 * parse and no row group fetched twice.
 *
 * A file of RANGED_MIN_FILE bytes or more is not read whole: an image of
 * the file's size (anonymous memory, pages untouched stay unallocated)
 * receives its footer when opened, then, per read, the column chunks of the
 * row groups the read needs that are not in yet — those whose `offset`
 * statistics admit [from, to], in file order, until about max_bytes of
 * them are in (at least one) — and the read's upper bound is cut to the
 * last such row group's largest offset, so the scan (which skips row groups
 * by the same statistics) never touches a byte that was not fetched. A row
 * group without statistics stops the cut: everything from it on is
 * fetched. A manifest size that does not match the file, or a footer that
 * does not parse, falls back to the whole file. Data files are immutable
 * (Iceberg never rewrites one in place), so bytes once fetched stay true
 * for as long as the entry lives. */
#define RANGED_MIN_FILE (256 * 1024)
#define RANGED_TAIL (64 * 1024) /* first guess at footer + 8 */
#define FILES_MAX_ENTRIES 256

typedef struct cfile {
    char *path;
    uint8_t *data; /* the image (mapped) or the whole file (whole.data) */
    size_t len;
    bool mapped;
    ls_buf_t whole;
    uint8_t *loaded; /* mapped: per row group, its chunks are in */
    int ocol;        /* mapped: the offset column */
    uint64_t resident;
    ls_cold_file_t *f;
    uint64_t used;
} cfile_t;

struct ls_cold_files {
    pthread_mutex_t mu;
    uint64_t max_bytes;
    cfile_t **v;
    int n;
    uint64_t bytes, clock;
    ls_cold_files_stats_t stats;
};

static void cfile_free(cfile_t *cf)
{
    if (!cf) return;
    ls_cold_file_free(cf->f);
    if (cf->mapped && cf->data) munmap(cf->data, cf->len);
    ls_buf_free(&cf->whole);
    ls_free(cf->loaded);
    ls_free(cf->path);
    ls_free(cf);
}

static ls_status image_put(const ls_ice_table_t *t, cfile_t *cf, uint64_t off, uint64_t len,
                           ls_buf_t *tmp, char *err, size_t errlen)
{
    if (off > cf->len || len > cf->len - off) {
        snprintf(err, errlen, "range %llu+%llu past the file's %zu bytes", (unsigned long long)off,
                 (unsigned long long)len, cf->len);
        return LS_ECORRUPT;
    }
    ls_status st = ls_ice_table_read_range(t, cf->path, off, len, tmp, err, errlen);
    if (st != LS_OK) return st;
    if (tmp->len != len) {
        snprintf(err, errlen, "ranged GET of %llu bytes returned %zu", (unsigned long long)len,
                 tmp->len);
        return LS_ECORRUPT;
    }
    memcpy(cf->data + off, tmp->data, (size_t)len);
    cf->resident += len;
    return LS_OK;
}

/* The ranged image of df with its footer in: LS_OK; LS_EINVAL: read the
 * file whole instead; other: the store's status (LS_ENOTFOUND: the file is
 * gone) with err. */
static ls_status open_ranged(const ls_ice_table_t *t, const ls_ice_datafile_t *df, cfile_t *cf,
                             uint64_t *fetched, char *err, size_t errlen)
{
    if (df->file_size < RANGED_MIN_FILE) return LS_EINVAL;
    void *m = mmap(NULL, (size_t)df->file_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
    if (m == MAP_FAILED) return LS_EINVAL;
    cf->data = m;
    cf->len = (size_t)df->file_size;
    cf->mapped = true;
    ls_buf_t tmp;
    ls_buf_init(&tmp);
    uint64_t tail = cf->len < RANGED_TAIL ? cf->len : RANGED_TAIL;
    ls_status st = image_put(t, cf, cf->len - tail, tail, &tmp, err, errlen);
    if (st == LS_OK && memcmp(cf->data + cf->len - 4, "PAR1", 4)) st = LS_EINVAL;
    if (st == LS_OK) {
        const uint8_t *f = cf->data + cf->len - 8;
        uint64_t flen =
            (uint64_t)f[0] | (uint64_t)f[1] << 8 | (uint64_t)f[2] << 16 | (uint64_t)f[3] << 24;
        if (flen + 12 > cf->len)
            st = LS_EINVAL;
        else if (flen + 8 > tail)
            st = image_put(t, cf, cf->len - 8 - flen, flen, &tmp, err, errlen);
    }
    ls_buf_free(&tmp);
    *fetched += cf->resident;
    if (st == LS_OK) {
        memcpy(cf->data, "PAR1", 4);
        ls_status ost;
        char why[256];
        if (!(cf->f = ls_cold_file_open(cf->data, cf->len, &ost, why, sizeof why))) st = LS_EINVAL;
    }
    if (st == LS_OK) {
        const ls_pqr_t *r = ls_cold_file_reader(cf->f);
        cf->ocol = -1;
        for (size_t c = 0; c < ls_pqr_num_columns(r); c++)
            if (ls_pqr_column(r, (int)c)->field_id == LS_RAW_FID_OFFSET) cf->ocol = (int)c;
        if (cf->ocol < 0) st = LS_EINVAL;
        int nrg = ls_pqr_num_row_groups(r);
        cf->loaded = ls_calloc((size_t)(nrg ? nrg : 1), 1);
    }
    if (st != LS_OK) { /* back to an empty entry */
        ls_cold_file_free(cf->f);
        cf->f = NULL;
        munmap(cf->data, cf->len);
        cf->data = NULL;
        cf->len = 0;
        cf->mapped = false;
        cf->resident = 0;
    }
    return st;
}

/* Opens df: ranged when large enough, else (or when the image cannot be
 * made) whole. NULL with *st and err on failure. */
static cfile_t *cfile_open(const ls_ice_table_t *t, const ls_ice_datafile_t *df, ls_status *st,
                           uint64_t *fetched, bool *ranged, char *err, size_t errlen)
{
    cfile_t *cf = LS_NEW(cfile_t);
    cf->path = ls_strdup(df->path);
    ls_buf_init(&cf->whole);
    *ranged = false;
    *st = open_ranged(t, df, cf, fetched, err, errlen);
    if (*st == LS_OK) {
        *ranged = true;
        return cf;
    }
    if (*st == LS_EINVAL) {
        *st = ls_ice_table_read_range(t, df->path, 0, UINT64_MAX, &cf->whole, err, errlen);
        if (*st == LS_OK) {
            *fetched += cf->whole.len;
            cf->data = cf->whole.data;
            cf->len = cf->whole.len;
            cf->resident = cf->whole.len;
            char why[256] = "";
            if (!(cf->f = ls_cold_file_open(cf->data, cf->len, st, why, sizeof why))) {
                snprintf(err, errlen, "%s", why);
                if (*st == LS_EINVAL) *st = LS_ECORRUPT; /* a table file that is not raw */
            }
        }
    }
    if (*st != LS_OK) {
        cfile_free(cf);
        return NULL;
    }
    return cf;
}

/* Fetches the row groups a read of [from, *to] needs into a ranged image
 * and cuts *to (above). A whole file needs nothing. */
static ls_status cfile_need(const ls_ice_table_t *t, cfile_t *cf, int64_t from, int64_t *to,
                            size_t max_bytes, uint64_t *fetched, char *err, size_t errlen)
{
    if (!cf->mapped) return LS_OK;
    const ls_pqr_t *r = ls_cold_file_reader(cf->f);
    ls_buf_t tmp;
    ls_buf_init(&tmp);
    ls_status st = LS_OK;
    uint64_t got = 0, before = cf->resident;
    bool cut = false;
    for (int g = 0; st == LS_OK && g < ls_pqr_num_row_groups(r); g++) {
        const ls_pqr_chunk_t *oc = ls_pqr_chunk(r, g, cf->ocol);
        int64_t lo = 0, hi = 0;
        bool stats = oc->stats.has_min && oc->stats.has_max && oc->stats.min_len == 8 &&
                     oc->stats.max_len == 8;
        if (stats) {
            lo = le_int(oc->stats.min, 8);
            hi = le_int(oc->stats.max, 8);
            if (hi < from || lo > *to) continue; /* the scan skips it too */
        }
        /* a row group's chunks: one ranged GET over all of them */
        uint64_t start = UINT64_MAX, end = 0;
        for (size_t c = 0; c < ls_pqr_num_columns(r); c++) {
            const ls_pqr_chunk_t *ch = ls_pqr_chunk(r, g, (int)c);
            if (ch->start < 0 || ch->compressed_bytes < 0) {
                snprintf(err, errlen, "row group %d: column chunk %zu has no position", g, c);
                st = LS_ECORRUPT;
                break;
            }
            if ((uint64_t)ch->start < start) start = (uint64_t)ch->start;
            if ((uint64_t)(ch->start + ch->compressed_bytes) > end)
                end = (uint64_t)(ch->start + ch->compressed_bytes);
        }
        if (st != LS_OK || end <= start) break;
        if (!cf->loaded[g]) {
            st = image_put(t, cf, start, end - start, &tmp, err, errlen);
            if (st != LS_OK) break;
            cf->loaded[g] = 1;
        }
        got += end - start;
        if (stats && got >= max_bytes && !cut) {
            /* enough for this read: later row groups only if they hold
             * offsets at or below this one's largest (the scan's bound) */
            if (hi < *to) *to = hi;
            cut = true;
        }
    }
    ls_buf_free(&tmp);
    *fetched += cf->resident - before;
    return st;
}

ls_cold_files_t *ls_cold_files_new(uint64_t max_bytes)
{
    ls_cold_files_t *c = LS_NEW(ls_cold_files_t);
    pthread_mutex_init(&c->mu, NULL);
    c->max_bytes = max_bytes;
    c->v = LS_NEWN(cfile_t *, FILES_MAX_ENTRIES);
    return c;
}

void ls_cold_files_free(ls_cold_files_t *c)
{
    if (!c) return;
    for (int i = 0; i < c->n; i++)
        cfile_free(c->v[i]);
    pthread_mutex_destroy(&c->mu);
    ls_free(c->v);
    ls_free(c);
}

void ls_cold_files_stats(ls_cold_files_t *c, ls_cold_files_stats_t *out)
{
    pthread_mutex_lock(&c->mu);
    *out = c->stats;
    out->files = c->n;
    out->bytes = c->bytes;
    pthread_mutex_unlock(&c->mu);
}

/* Takes path's entry out of the cache (a reader has it alone: ls_cold_file_t
 * is one thread at a time), or NULL. */
static cfile_t *files_take(ls_cold_files_t *c, const char *path)
{
    if (!c) return NULL;
    cfile_t *cf = NULL;
    pthread_mutex_lock(&c->mu);
    for (int i = 0; i < c->n; i++)
        if (!strcmp(c->v[i]->path, path)) {
            cf = c->v[i];
            c->v[i] = c->v[--c->n];
            c->bytes -= cf->resident;
            break;
        }
    if (cf)
        c->stats.hits++;
    else
        c->stats.misses++;
    pthread_mutex_unlock(&c->mu);
    return cf;
}

/* Gives cf back (or frees it: no cache, a copy already back, too large),
 * then drops least recently used entries down to the bounds. */
static void files_put(ls_cold_files_t *c, cfile_t *cf)
{
    if (!c || cf->resident > c->max_bytes) {
        cfile_free(cf);
        return;
    }
    cfile_t *gone[FILES_MAX_ENTRIES + 1];
    int ngone = 0;
    pthread_mutex_lock(&c->mu);
    for (int i = 0; i < c->n && cf; i++)
        if (!strcmp(c->v[i]->path, cf->path)) { /* another reader's copy came back first */
            gone[ngone++] = cf;
            cf = NULL;
        }
    if (cf) {
        cf->used = ++c->clock;
        c->v[c->n++] = cf;
        c->bytes += cf->resident;
    }
    while (c->n > 0 && (c->bytes > c->max_bytes || c->n >= FILES_MAX_ENTRIES)) {
        int lru = 0;
        for (int i = 1; i < c->n; i++)
            if (c->v[i]->used < c->v[lru]->used) lru = i;
        cfile_t *x = c->v[lru];
        c->v[lru] = c->v[--c->n];
        c->bytes -= x->resident;
        c->stats.evictions++;
        gone[ngone++] = x;
    }
    pthread_mutex_unlock(&c->mu);
    for (int i = 0; i < ngone; i++)
        cfile_free(gone[i]);
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
    st = ls_cold_table_read_live(t, live, n, NULL, q, out, next, stats, err, errlen);
    ls_ice_mentries_free(live, n);
    return st;
}

ls_status ls_cold_table_read_live(const ls_ice_table_t *t, const ls_ice_mentry_t *live, size_t n,
                                  ls_cold_files_t *files, const ls_cold_table_req_t *q,
                                  ls_buf_t *out, int64_t *next, ls_cold_table_stats_t *stats,
                                  char *err, size_t errlen)
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
    bool found = false;
    for (size_t i = 0; i < nc && !found && st == LS_OK; i++) {
        char why[512] = "";
        cfile_t *cf = files_take(files, c[i].df->path);
        if (cf) {
            stats->files_cached++;
        } else {
            bool ranged;
            cf = cfile_open(t, c[i].df, &st, &stats->bytes_read, &ranged, why, sizeof why);
            stats->ranged += ranged;
        }
        int64_t to = q->to;
        if (st == LS_OK)
            st = cfile_need(t, cf, q->from, &to, q->max_bytes, &stats->bytes_read, why, sizeof why);
        if (st != LS_OK) {
            snprintf(err, errlen, "data file %s: %s (%s)", c[i].df->path, ls_status_str(st), why);
            cfile_free(cf);
            break; /* LS_ENOTFOUND: removed since the snapshot was loaded */
        }
        stats->files_read++;
        ls_cold_read_t rd;
        st = ls_cold_file_read(cf->f, q->partition, q->from, to, q->codec, q->log_append_time,
                               q->batch_bytes, q->max_bytes, true, &rd, why, sizeof why);
        if (st != LS_OK) {
            snprintf(err, errlen, "data file %s: %s", c[i].df->path, why);
            if (st == LS_EINVAL) st = LS_ECORRUPT; /* a table file that is not raw */
            cfile_free(cf);
        } else {
            if (rd.records > 0 && (int64_t)ls_be64_get(rd.batches.data) == q->from) {
                ls_buf_append(out, rd.batches.data, rd.batches.len);
                *next = rd.next_offset;
                found = true;
            }
            files_put(files, cf);
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
    ls_free(c);
    return st;
}
