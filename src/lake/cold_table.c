/* Cold reads of a raw table log from its table: see cold_table.h. */
#include "lake/cold_table.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "base/alloc.h"
#include "lake/cold_batches.h"
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
 * A data file is held as an image: its bytes as far as reads have needed
 * them, and its footer parsed. On a store of local files (ls_objstore_map)
 * the image is the file mapped whole: the kernel reads the pages the scan
 * touches and nothing is fetched or copied; the file's size counts against
 * the cache's bound (touched pages are page cache, but they count in the
 * broker's resident set while the file is open). Elsewhere (S3) a file of
 * RANGED_MIN_FILE bytes or more is not read whole: its image (anonymous memory of the file's size,
 * pages untouched stay unallocated) receives the footer when opened, then, per read, the column
 * chunks of the row groups the read needs and the image lacks — those ls_cold_rg_admits admits for
 * the read's partition and [from, to], in file order, until about max_bytes of them are in (at
 * least one) — and the read's upper bound is cut to the last such row
 * group's largest offset, so the scan (which opens exactly the row groups
 * ls_cold_rg_admits admits) never touches a byte that was not fetched. A
 * row group without offset statistics stops the cut: everything from it on
 * is fetched. A manifest size that does not match the file, or a footer
 * that does not parse, falls back to the whole file.
 *
 * With a cache (ls_cold_files_t) images and cursors outlive a read:
 *  - an image is shared by every reader of its file (reference-counted);
 *    its row groups are fetched once: a reader marks the ones it fetches
 *    `loading` under the image's mutex, fetches them without it, then marks
 *    them loaded; a reader needing a group another is fetching waits for it.
 *    Bytes of a loaded group never change (data files are immutable), so
 *    reading them needs no lock once the flag was seen under the mutex;
 *  - a cursor (ls_cold_file_t over an image: its own footer parse, the scan
 *    position) serves one partition of one file and one reader at a time:
 *    a read takes it out of the cache and gives it back, so a catching-up
 *    consumer's next block goes on from where the last stopped;
 *  - bounds: images by fetched bytes (max_bytes) and count, cursors by
 *    count, least recently used first; a cursor whose image was evicted is
 *    dropped when it comes back. */
#define RANGED_MIN_FILE (256 * 1024)
#define RANGED_TAIL (64 * 1024) /* first guess at footer + 8 */
#define FILES_MAX_IMAGES 256
#define FILES_MAX_CURSORS 1024

enum { RG_ABSENT, RG_LOADING, RG_LOADED };

typedef struct image {
    atomic_int refs;
    char *path;
    uint8_t *data; /* the partial image, the mapped file or the whole file */
    size_t len;
    bool partial; /* an anonymous image filled row group by row group (ranged GETs) */
    ls_buf_t whole;
    ls_chunk_t *map; /* the file mapped whole (a store of local files) */
    ls_pqr_t *r;     /* the footer (row group selection) */
    int ocol, pcol;
    pthread_mutex_t mu; /* rg[] */
    pthread_cond_t cv;
    uint8_t *rg; /* partial: per row group, RG_* */
    _Atomic uint64_t resident;
    uint64_t used; /* the cache's LRU clock (under the cache's mutex) */
} image_t;

typedef struct cursor {
    image_t *im; /* a reference */
    int32_t partition;
    ls_cold_file_t *f;
    uint64_t used;
} cursor_t;

struct ls_cold_files {
    pthread_mutex_t mu;
    uint64_t max_bytes;
    image_t **im;
    int nim;
    cursor_t **cur;
    int ncur;
    uint64_t clock;
    ls_cold_files_stats_t stats;
};

static void image_release(image_t *im)
{
    if (!im || atomic_fetch_sub(&im->refs, 1) != 1) return;
    ls_pqr_free(im->r);
    if (im->partial && im->data) munmap(im->data, im->len);
    ls_buf_free(&im->whole);
    if (im->map) ls_chunk_release(im->map);
    ls_free(im->rg);
    ls_free(im->path);
    pthread_mutex_destroy(&im->mu);
    pthread_cond_destroy(&im->cv);
    ls_free(im);
}

static void cursor_free(cursor_t *c)
{
    if (!c) return;
    ls_cold_file_free(c->f);
    image_release(c->im);
    ls_free(c);
}

/* Copies bytes [off, off + len) of the file into the image (no lock: the
 * range belongs to the caller, see above). */
static ls_status image_fetch(const ls_ice_table_t *t, image_t *im, uint64_t off, uint64_t len,
                             ls_buf_t *tmp, uint64_t *fetched, char *err, size_t errlen)
{
    if (off > im->len || len > im->len - off) {
        snprintf(err, errlen, "range %llu+%llu past the file's %zu bytes", (unsigned long long)off,
                 (unsigned long long)len, im->len);
        return LS_ECORRUPT;
    }
    ls_status st = ls_ice_table_read_range(t, im->path, off, len, tmp, err, errlen);
    if (st != LS_OK) return st;
    if (tmp->len != len) {
        snprintf(err, errlen, "ranged GET of %llu bytes returned %zu", (unsigned long long)len,
                 tmp->len);
        return LS_ECORRUPT;
    }
    memcpy(im->data + off, tmp->data, (size_t)len);
    atomic_fetch_add(&im->resident, len);
    *fetched += len;
    return LS_OK;
}

static int column_of(const ls_pqr_t *r, int fid)
{
    for (size_t c = 0; c < ls_pqr_num_columns(r); c++)
        if (ls_pqr_column(r, (int)c)->field_id == fid) return (int)c;
    return -1;
}

/* The ranged image of df with its footer in: LS_OK; LS_EINVAL: read the
 * file whole instead; other: the store's status (LS_ENOTFOUND: the file is
 * gone) with err. */
static ls_status open_ranged(const ls_ice_table_t *t, const ls_ice_datafile_t *df, image_t *im,
                             uint64_t *fetched, char *err, size_t errlen)
{
    if (df->file_size < RANGED_MIN_FILE) return LS_EINVAL;
    void *m = mmap(NULL, (size_t)df->file_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
    if (m == MAP_FAILED) return LS_EINVAL;
    im->data = m;
    im->len = (size_t)df->file_size;
    im->partial = true;
    ls_buf_t tmp;
    ls_buf_init(&tmp);
    uint64_t tail = im->len < RANGED_TAIL ? im->len : RANGED_TAIL;
    ls_status st = image_fetch(t, im, im->len - tail, tail, &tmp, fetched, err, errlen);
    if (st == LS_ECORRUPT) st = LS_EINVAL; /* a short tail: the size is not the file's */
    if (st == LS_OK && memcmp(im->data + im->len - 4, "PAR1", 4)) st = LS_EINVAL;
    if (st == LS_OK) {
        const uint8_t *f = im->data + im->len - 8;
        uint64_t flen =
            (uint64_t)f[0] | (uint64_t)f[1] << 8 | (uint64_t)f[2] << 16 | (uint64_t)f[3] << 24;
        if (flen + 12 > im->len)
            st = LS_EINVAL;
        else if (flen + 8 > tail)
            st = image_fetch(t, im, im->len - 8 - flen, flen, &tmp, fetched, err, errlen);
    }
    ls_buf_free(&tmp);
    if (st == LS_OK) {
        memcpy(im->data, "PAR1", 4);
        ls_status ost;
        char why[256];
        if (!(im->r = ls_pqr_open(im->data, im->len, &ost, why, sizeof why))) st = LS_EINVAL;
    }
    if (st == LS_OK) {
        im->ocol = column_of(im->r, LS_RAW_FID_OFFSET);
        im->pcol = column_of(im->r, LS_RAW_FID_PARTITION);
        if (im->ocol < 0 || im->pcol < 0) st = LS_EINVAL;
        int nrg = ls_pqr_num_row_groups(im->r);
        im->rg = ls_calloc((size_t)(nrg ? nrg : 1), 1);
    }
    if (st != LS_OK) { /* back to an empty image */
        ls_pqr_free(im->r);
        im->r = NULL;
        munmap(im->data, im->len);
        im->data = NULL;
        im->len = 0;
        im->partial = false;
        atomic_store(&im->resident, 0);
    }
    return st;
}

/* Opens df's image: ranged when large enough, else (or when the image
 * cannot be made) whole. NULL with *st and err on failure. */
static image_t *image_open(const ls_ice_table_t *t, const ls_ice_datafile_t *df, ls_status *st,
                           bool *ranged, uint64_t *fetched, char *err, size_t errlen)
{
    image_t *im = LS_NEW(image_t);
    atomic_init(&im->refs, 1);
    im->path = ls_strdup(df->path);
    ls_buf_init(&im->whole);
    pthread_mutex_init(&im->mu, NULL);
    pthread_cond_init(&im->cv, NULL);
    *ranged = false;
    /* a local file: mapped, its pages read as the scan touches them (no
     * fetch, no copy) */
    *st = ls_ice_table_map_file(t, df->path, &im->map, err, errlen);
    if (*st == LS_OK) {
        im->data = im->map->data;
        im->len = im->map->len;
        /* counted whole against the bound: pages a scan touched stay in the
         * process's resident set until the file is closed */
        atomic_store(&im->resident, im->len);
        return im;
    }
    if (*st != LS_EINVAL) {
        image_release(im);
        return NULL;
    }
    *st = open_ranged(t, df, im, fetched, err, errlen);
    if (*st == LS_OK) {
        *ranged = true;
        return im;
    }
    if (*st == LS_EINVAL) {
        *st = ls_ice_table_read_range(t, df->path, 0, UINT64_MAX, &im->whole, err, errlen);
        if (*st == LS_OK) {
            im->data = im->whole.data;
            im->len = im->whole.len;
            atomic_store(&im->resident, im->whole.len);
            *fetched += im->whole.len;
        }
    }
    if (*st != LS_OK) {
        image_release(im);
        return NULL;
    }
    return im;
}

/* Makes sure the row groups a read of partition's [from, *to] needs are in
 * a partial image and cuts *to (above). A mapped or whole file needs
 * nothing. */
static ls_status image_need(const ls_ice_table_t *t, image_t *im, int32_t partition, int64_t from,
                            int64_t *to, size_t max_bytes, uint64_t *fetched, char *err,
                            size_t errlen)
{
    if (!im->partial) return LS_OK;
    int nrg = ls_pqr_num_row_groups(im->r);
    int *mine = LS_NEWN(int, (size_t)(nrg ? nrg : 1)), nmine = 0;
    uint64_t *start = LS_NEWN(uint64_t, (size_t)(nrg ? nrg : 1) * 2), *end = start + nrg;
    ls_status st = LS_OK;
    uint64_t got = 0;
    bool cut = false;
    pthread_mutex_lock(&im->mu);
    for (int g = 0; g < nrg; g++) {
        ls_cold_rg_bounds_t b;
        ls_cold_rg_bounds(im->r, g, im->ocol, im->pcol, &b);
        if (!ls_cold_rg_admits(&b, partition, from, *to)) continue; /* the scan skips it too */
        /* a row group's chunks: one ranged GET over all of them */
        uint64_t lo = UINT64_MAX, hi = 0;
        for (size_t c = 0; c < ls_pqr_num_columns(im->r); c++) {
            const ls_pqr_chunk_t *ch = ls_pqr_chunk(im->r, g, (int)c);
            if (ch->start < 0 || ch->compressed_bytes < 0) {
                snprintf(err, errlen, "row group %d: column chunk %zu has no position", g, c);
                st = LS_ECORRUPT;
                break;
            }
            if ((uint64_t)ch->start < lo) lo = (uint64_t)ch->start;
            if ((uint64_t)(ch->start + ch->compressed_bytes) > hi)
                hi = (uint64_t)(ch->start + ch->compressed_bytes);
        }
        if (st == LS_OK && hi <= lo) {
            snprintf(err, errlen, "row group %d: its column chunks span no bytes", g);
            st = LS_ECORRUPT;
        }
        if (st != LS_OK) break;
        start[g] = lo;
        end[g] = hi;
        if (im->rg[g] == RG_ABSENT) {
            im->rg[g] = RG_LOADING;
            mine[nmine++] = g;
        }
        got += hi - lo;
        if (b.has_off && got >= max_bytes && !cut) {
            /* enough for this read: later row groups only if they hold
             * offsets at or below this one's largest (the scan's bound) */
            if (b.off_hi < *to) *to = b.off_hi;
            cut = true;
        }
    }
    pthread_mutex_unlock(&im->mu);
    ls_buf_t tmp;
    ls_buf_init(&tmp);
    int done = 0;
    for (; done < nmine && st == LS_OK; done++)
        st = image_fetch(t, im, start[mine[done]], end[mine[done]] - start[mine[done]], &tmp,
                         fetched, err, errlen);
    ls_buf_free(&tmp);
    pthread_mutex_lock(&im->mu);
    for (int i = 0; i < nmine; i++) /* fetched, or back to absent for a retry */
        im->rg[mine[i]] = (st == LS_OK || i < done - 1) ? RG_LOADED : RG_ABSENT;
    if (nmine) pthread_cond_broadcast(&im->cv);
    /* wait for the groups other readers are fetching (the same selection) */
    for (int g = 0; st == LS_OK && g < nrg; g++) {
        if (end[g] <= start[g]) continue;
        while (im->rg[g] == RG_LOADING)
            pthread_cond_wait(&im->cv, &im->mu);
        if (im->rg[g] != RG_LOADED) {
            snprintf(err, errlen, "row group %d: another reader's fetch failed", g);
            st = LS_EAGAIN;
        }
    }
    pthread_mutex_unlock(&im->mu);
    ls_free(mine);
    ls_free(start);
    return st;
}

ls_cold_files_t *ls_cold_files_new(uint64_t max_bytes)
{
    ls_cold_files_t *c = LS_NEW(ls_cold_files_t);
    pthread_mutex_init(&c->mu, NULL);
    c->max_bytes = max_bytes;
    c->im = LS_NEWN(image_t *, FILES_MAX_IMAGES + 1);
    c->cur = LS_NEWN(cursor_t *, FILES_MAX_CURSORS + 1);
    return c;
}

void ls_cold_files_free(ls_cold_files_t *c)
{
    if (!c) return;
    for (int i = 0; i < c->ncur; i++)
        cursor_free(c->cur[i]);
    for (int i = 0; i < c->nim; i++)
        image_release(c->im[i]);
    pthread_mutex_destroy(&c->mu);
    ls_free(c->im);
    ls_free(c->cur);
    ls_free(c);
}

static uint64_t images_bytes_locked(const ls_cold_files_t *c)
{
    uint64_t n = 0;
    for (int i = 0; i < c->nim; i++)
        n += atomic_load(&c->im[i]->resident);
    return n;
}

void ls_cold_files_stats(ls_cold_files_t *c, ls_cold_files_stats_t *out)
{
    pthread_mutex_lock(&c->mu);
    *out = c->stats;
    out->files = c->nim;
    out->cursors = c->ncur;
    out->bytes = images_bytes_locked(c);
    pthread_mutex_unlock(&c->mu);
}

static bool image_cached_locked(const ls_cold_files_t *c, const image_t *im)
{
    for (int i = 0; i < c->nim; i++)
        if (c->im[i] == im) return true;
    return false;
}

/* Drops least recently used images (and the cursors on them) and cursors
 * down to the bounds; what is dropped goes to gone[] to be freed outside the
 * lock. */
static void files_trim_locked(ls_cold_files_t *c, void **gone, int *ngone, bool *gone_is_image)
{
    while (c->nim > 0 && (c->nim > FILES_MAX_IMAGES || images_bytes_locked(c) > c->max_bytes)) {
        int lru = 0;
        for (int i = 1; i < c->nim; i++)
            if (c->im[i]->used < c->im[lru]->used) lru = i;
        image_t *x = c->im[lru];
        c->im[lru] = c->im[--c->nim];
        c->stats.evictions++;
        for (int i = 0; i < c->ncur;)
            if (c->cur[i]->im == x) {
                gone_is_image[*ngone] = false;
                gone[(*ngone)++] = c->cur[i];
                c->cur[i] = c->cur[--c->ncur];
            } else {
                i++;
            }
        gone_is_image[*ngone] = true;
        gone[(*ngone)++] = x;
    }
    while (c->ncur > FILES_MAX_CURSORS) {
        int lru = 0;
        for (int i = 1; i < c->ncur; i++)
            if (c->cur[i]->used < c->cur[lru]->used) lru = i;
        gone_is_image[*ngone] = false;
        gone[(*ngone)++] = c->cur[lru];
        c->cur[lru] = c->cur[--c->ncur];
    }
}

static void free_gone(void **gone, int ngone, const bool *gone_is_image)
{
    for (int i = 0; i < ngone; i++)
        if (gone_is_image[i])
            image_release(gone[i]);
        else
            cursor_free(gone[i]);
}

/* The cursor of (path, partition): taken out of the cache, or made on the
 * cached image, or on an image opened now (and cached). NULL with *st. */
static cursor_t *cursor_get(ls_cold_files_t *c, const ls_ice_table_t *t,
                            const ls_ice_datafile_t *df, int32_t partition, ls_status *st,
                            ls_cold_table_stats_t *stats, char *err, size_t errlen)
{
    image_t *im = NULL;
    if (c) {
        pthread_mutex_lock(&c->mu);
        for (int i = 0; i < c->ncur; i++)
            if (c->cur[i]->partition == partition && !strcmp(c->cur[i]->im->path, df->path)) {
                cursor_t *cur = c->cur[i];
                c->cur[i] = c->cur[--c->ncur];
                cur->im->used = ++c->clock;
                c->stats.hits++;
                pthread_mutex_unlock(&c->mu);
                stats->files_cached++;
                return cur;
            }
        for (int i = 0; i < c->nim && !im; i++)
            if (!strcmp(c->im[i]->path, df->path)) {
                im = c->im[i];
                atomic_fetch_add(&im->refs, 1);
                im->used = ++c->clock;
            }
        if (im)
            c->stats.image_hits++;
        else
            c->stats.misses++;
        pthread_mutex_unlock(&c->mu);
    }
    if (im) {
        stats->files_cached++;
    } else {
        bool ranged;
        if (!(im = image_open(t, df, st, &ranged, &stats->bytes_read, err, errlen))) return NULL;
        stats->ranged += ranged;
        if (c) { /* shared from now on (a concurrent open of the same file: the first stays) */
            void *gone[FILES_MAX_IMAGES + FILES_MAX_CURSORS + 2];
            bool gone_img[FILES_MAX_IMAGES + FILES_MAX_CURSORS + 2];
            int ngone = 0;
            pthread_mutex_lock(&c->mu);
            image_t *other = NULL;
            for (int i = 0; i < c->nim && !other; i++)
                if (!strcmp(c->im[i]->path, df->path)) other = c->im[i];
            if (other) {
                atomic_fetch_add(&other->refs, 1);
                gone_img[ngone] = true;
                gone[ngone++] = im;
                im = other;
            } else {
                atomic_fetch_add(&im->refs, 1); /* the cache's */
                c->im[c->nim++] = im;
            }
            im->used = ++c->clock;
            files_trim_locked(c, gone, &ngone, gone_img);
            pthread_mutex_unlock(&c->mu);
            free_gone(gone, ngone, gone_img);
        }
    }
    cursor_t *cur = LS_NEW(cursor_t);
    cur->im = im;
    cur->partition = partition;
    char why[256] = "";
    if (!(cur->f = ls_cold_file_open(im->data, im->len, st, why, sizeof why))) {
        snprintf(err, errlen, "%s", why);
        if (*st == LS_EINVAL) *st = LS_ECORRUPT; /* a table file that is not raw */
        cursor_free(cur);
        return NULL;
    }
    return cur;
}

/* Gives cur back to the cache (or frees it: no cache, its image evicted,
 * or the read failed). */
static void cursor_put(ls_cold_files_t *c, cursor_t *cur, bool ok)
{
    if (!c || !ok) {
        cursor_free(cur);
        return;
    }
    void *gone[FILES_MAX_IMAGES + FILES_MAX_CURSORS + 2];
    bool gone_img[FILES_MAX_IMAGES + FILES_MAX_CURSORS + 2];
    int ngone = 0;
    pthread_mutex_lock(&c->mu);
    bool dup = false;
    for (int i = 0; i < c->ncur && !dup; i++)
        dup = c->cur[i]->partition == cur->partition && c->cur[i]->im == cur->im;
    if (dup || !image_cached_locked(c, cur->im)) {
        gone_img[ngone] = false;
        gone[ngone++] = cur;
    } else {
        cur->used = ++c->clock;
        c->cur[c->ncur++] = cur;
    }
    files_trim_locked(c, gone, &ngone, gone_img);
    pthread_mutex_unlock(&c->mu);
    free_gone(gone, ngone, gone_img);
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
        cursor_t *cur = cursor_get(files, t, c[i].df, q->partition, &st, stats, why, sizeof why);
        int64_t to = q->to;
        if (cur)
            st = image_need(t, cur->im, q->partition, q->from, &to, q->max_bytes,
                            &stats->bytes_read, why, sizeof why);
        if (st != LS_OK) {
            snprintf(err, errlen, "data file %s: %s (%s)", c[i].df->path, ls_status_str(st), why);
            cursor_free(cur);
            break; /* LS_ENOTFOUND: removed since the snapshot was loaded */
        }
        stats->files_read++;
        ls_cold_read_t rd;
        /* an empty out's capacity is what the batches are written into
         * (the log reader's pooled buffer), and is handed back as out */
        bool direct = out->len == 0;
        st = ls_cold_file_read(cur->f, q->partition, q->from, to, q->codec, q->log_append_time,
                               q->batch_bytes, q->max_bytes, true, direct ? out : NULL, &rd, why,
                               sizeof why);
        if (st != LS_OK) {
            snprintf(err, errlen, "data file %s: %s", c[i].df->path, why);
            if (st == LS_EINVAL) st = LS_ECORRUPT; /* a table file that is not raw */
        } else if (rd.records > 0 && (int64_t)ls_be64_get(rd.batches.data) == q->from) {
            if (direct) {
                *out = rd.batches;
                ls_buf_init(&rd.batches);
            } else {
                ls_buf_append(out, rd.batches.data, rd.batches.len);
            }
            *next = rd.next_offset;
            found = true;
        }
        cursor_put(files, cur, st == LS_OK);
        if (direct && !found && rd.batches.data) { /* the capacity, for the next file */
            *out = rd.batches;
            out->len = 0;
        } else {
            ls_buf_free(&rd.batches);
        }
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
