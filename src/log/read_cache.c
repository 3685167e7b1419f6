#include "log/read_cache.h"

#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/metrics.h"
#include "base/buf.h"
#include "base/i64map.h"
#include "records/records.h"

/* Metrics (docs/OPERATIONS.md "Metrics"): the bytes held, as the bound
 * counts them (every cache of the process), and the reads it served or not
 * (ls_read_cache_count); all three exist from the first cache on, so a hit
 * ratio has both terms before the first miss. */
static LS_METRIC_GAUGE(m_bytes, "lakestream_read_cache_bytes",
                       "Bytes the read cache holds (read.cache.max.bytes bounds it).", NULL);
static LS_METRIC_COUNTER(m_hits, "lakestream_read_cache_hits",
                         "Reads of a log range served from the read cache.", NULL);
static LS_METRIC_COUNTER(m_misses, "lakestream_read_cache_misses",
                         "Reads of a log range that had to read the object store.", NULL);

void ls_read_cache_count(bool hit)
{
    ls_metric_add(ls_metrics_series0(hit ? &m_hits : &m_misses), 1);
}

/* Entry framing: an entry is a RecordBatch v2 (records/records.h has the one
 * definition of the layout). */
#define ENTRY_MIN LS_RB_HEADER_SIZE
#define ENTRY_LEN_AT LS_RB_OFF_LENGTH
#define ENTRY_EPOCH_AT LS_RB_OFF_LEADER_EPOCH
#define ENTRY_LAST_DELTA_AT LS_RB_OFF_LAST_OFFSET_DELTA
#define ENTRY_MAX_TS_AT LS_RB_OFF_MAX_TIMESTAMP

/* Index: per log (i64map log_id -> cache_log_t), a treap of the log's items
 * ordered by (last_offset, seq) -- seq breaks ties, since a footer shares its
 * key with its last block and stale runs may overlap fresh ones -- where each
 * node also holds the smallest first_offset of its subtree (min_first). A
 * lookup of (log, last) and a drop of the items overlapping [first, last]
 * then skip every subtree that ends before `first` (order) or starts after
 * `last` (min_first): O(log n + items found), whatever the cache holds.
 * `visits` counts the nodes examined, the test hook that bounds that work. */
typedef struct cache_log {
    ls_cache_run_t *root;
    size_t n;
} cache_log_t;

struct ls_read_cache {
    size_t max_bytes;
    size_t bytes;
    size_t peak;
    ls_i64map_t logs;   /* log_id -> cache_log_t */
    uint64_t seq;       /* next item's tie-break */
    uint64_t rng;       /* treap priorities (xorshift) */
    uint64_t visits;    /* index nodes examined (ls_read_cache_visits) */
    ls_cache_run_t lru; /* sentinel: lru.lru_next = most recent */
};

ls_read_cache_t *ls_read_cache_new(size_t max_bytes)
{
    ls_metrics_series0(&m_bytes);
    ls_metrics_series0(&m_hits);
    ls_metrics_series0(&m_misses);
    ls_read_cache_t *c = LS_NEW(ls_read_cache_t);
    c->max_bytes = max_bytes;
    ls_i64map_init(&c->logs);
    c->rng = 0x2545F4914F6CDD1Dull;
    c->lru.lru_next = c->lru.lru_prev = &c->lru;
    return c;
}

/* ------------------------------------------------------------------ treap */

static bool key_less(const ls_cache_run_t *a, const ls_cache_run_t *b)
{
    return a->last_offset < b->last_offset || (a->last_offset == b->last_offset && a->seq < b->seq);
}

static void t_fix(ls_cache_run_t *n)
{
    int64_t m = n->first_offset;
    if (n->tl && n->tl->min_first < m) m = n->tl->min_first;
    if (n->tr && n->tr->min_first < m) m = n->tr->min_first;
    n->min_first = m;
}

static ls_cache_run_t *t_insert(ls_cache_run_t *root, ls_cache_run_t *r)
{
    if (!root) {
        r->tl = r->tr = NULL;
        r->min_first = r->first_offset;
        return r;
    }
    if (key_less(r, root)) {
        root->tl = t_insert(root->tl, r);
        if (root->tl->prio > root->prio) { /* rotate right */
            ls_cache_run_t *l = root->tl;
            root->tl = l->tr;
            l->tr = root;
            t_fix(root);
            root = l;
        }
    } else {
        root->tr = t_insert(root->tr, r);
        if (root->tr->prio > root->prio) { /* rotate left */
            ls_cache_run_t *rr = root->tr;
            root->tr = rr->tl;
            rr->tl = root;
            t_fix(root);
            root = rr;
        }
    }
    t_fix(root);
    return root;
}

static ls_cache_run_t *t_merge(ls_cache_run_t *a, ls_cache_run_t *b)
{
    if (!a) return b;
    if (!b) return a;
    if (a->prio > b->prio) {
        a->tr = t_merge(a->tr, b);
        t_fix(a);
        return a;
    }
    b->tl = t_merge(a, b->tl);
    t_fix(b);
    return b;
}

static ls_cache_run_t *t_remove(ls_cache_run_t *root, ls_cache_run_t *r)
{
    if (root == r) return t_merge(r->tl, r->tr);
    if (key_less(r, root))
        root->tl = t_remove(root->tl, r);
    else
        root->tr = t_remove(root->tr, r);
    t_fix(root);
    return root;
}

/* The item of key `last` that is a run (footer false) or the footer of
 * `object`, in the subtree n. */
static ls_cache_run_t *t_find(ls_read_cache_t *c, ls_cache_run_t *n, int64_t last, bool footer,
                              const char *object)
{
    while (n) {
        c->visits++;
        if (n->last_offset < last) {
            n = n->tr;
        } else if (n->last_offset > last) {
            n = n->tl;
        } else {
            if (n->is_footer == footer && (!footer || !strcmp(n->object, object))) return n;
            ls_cache_run_t *f = t_find(c, n->tl, last, footer, object); /* equal keys both sides */
            if (f) return f;
            n = n->tr;
        }
    }
    return NULL;
}

typedef struct run_vec {
    ls_cache_run_t **v;
    size_t n, cap;
} run_vec_t;

/* Appends the items of subtree n that overlap [first, last]. */
static void t_overlapping(ls_read_cache_t *c, ls_cache_run_t *n, int64_t first, int64_t last,
                          run_vec_t *out)
{
    while (n) {
        c->visits++;
        if (n->min_first > last) return; /* everything here starts after the range */
        if (n->last_offset < first) {    /* n and its left subtree end before it */
            n = n->tr;
            continue;
        }
        t_overlapping(c, n->tl, first, last, out);
        if (n->first_offset <= last) {
            if (out->n == out->cap) {
                out->cap = out->cap ? out->cap * 2 : 16;
                out->v = ls_realloc(out->v, out->cap * sizeof *out->v);
            }
            out->v[out->n++] = n;
        }
        n = n->tr;
    }
}

static uint32_t next_prio(ls_read_cache_t *c)
{
    c->rng ^= c->rng << 13;
    c->rng ^= c->rng >> 7;
    c->rng ^= c->rng << 17;
    return (uint32_t)(c->rng >> 32);
}

/* ------------------------------------------------------------------- items */

static void lru_unlink(ls_cache_run_t *r)
{
    r->lru_prev->lru_next = r->lru_next;
    r->lru_next->lru_prev = r->lru_prev;
}

static void lru_push_front(ls_read_cache_t *c, ls_cache_run_t *r)
{
    r->lru_next = c->lru.lru_next;
    r->lru_prev = &c->lru;
    c->lru.lru_next->lru_prev = r;
    c->lru.lru_next = r;
}

static void run_free(ls_cache_run_t *r)
{
    ls_free(r->group_first);
    ls_chunk_release(r->chunk);
    ls_free(r->batch_base);
    ls_free(r->batch_pos);
    ls_free(r->batch_max_ts);
    ls_free(r->object);
    ls_free(r);
}

static void remove_run(ls_read_cache_t *c, ls_cache_run_t *r)
{
    cache_log_t *lg = ls_i64map_get(&c->logs, r->log_id);
    lg->root = t_remove(lg->root, r);
    if (--lg->n == 0) ls_free(ls_i64map_del(&c->logs, r->log_id));
    lru_unlink(r);
    c->bytes -= r->cost;
    ls_metric_gauge_add(ls_metrics_series0(&m_bytes), -(double)r->cost);
    run_free(r);
}

/* Indexes and accounts a new item, then evicts least recently used items,
 * never the one just inserted. */
static void link_item(ls_read_cache_t *c, ls_cache_run_t *r)
{
    cache_log_t *lg = ls_i64map_get(&c->logs, r->log_id);
    if (!lg) {
        lg = LS_NEW(cache_log_t);
        ls_i64map_put(&c->logs, r->log_id, lg);
    }
    r->seq = c->seq++;
    r->prio = next_prio(c);
    lg->root = t_insert(lg->root, r);
    lg->n++;
    lru_push_front(c, r);
    c->bytes += r->cost;
    ls_metric_gauge_add(ls_metrics_series0(&m_bytes), (double)r->cost);
    while (c->bytes > c->max_bytes && c->lru.lru_prev != r)
        remove_run(c, c->lru.lru_prev);
    if (c->bytes > c->peak) c->peak = c->bytes;
}

static ls_cache_run_t *find_item(ls_read_cache_t *c, int64_t log_id, int64_t last, bool footer,
                                 const char *object)
{
    cache_log_t *lg = ls_i64map_get(&c->logs, log_id);
    return lg ? t_find(c, lg->root, last, footer, object) : NULL;
}

void ls_read_cache_free(ls_read_cache_t *c)
{
    if (!c) return;
    while (c->lru.lru_next != &c->lru)
        remove_run(c, c->lru.lru_next);
    ls_i64map_free(&c->logs);
    ls_free(c);
}

ls_status ls_entries_rebase(uint8_t *p, size_t len, int64_t first_offset, int64_t last_offset,
                            bool real_offsets, const char *what, size_t base_pos,
                            uint32_t **pos_out, int64_t **base_out, int64_t **max_ts_out,
                            int *count, char *why, size_t whylen)
{
    /* First pass: count entries and check framing before touching bytes. */
    int n = 0;
    int64_t offsets = 0, next = first_offset;
    for (size_t q = 0; q < len;) {
        const uint8_t *e = p + q;
        if (len - q < ENTRY_MIN) {
            snprintf(why, whylen, "%s: truncated entry at byte %zu", what, base_pos + q);
            return LS_ECORRUPT;
        }
        uint32_t elen = ls_be32_get(e + ENTRY_LEN_AT);
        int32_t delta = (int32_t)ls_be32_get(e + ENTRY_LAST_DELTA_AT);
        if (elen < ENTRY_MIN - 12 || elen > len - q - 12 || delta < 0) {
            snprintf(why, whylen, "%s: bad entry framing at byte %zu", what, base_pos + q);
            return LS_ECORRUPT;
        }
        if (real_offsets) {
            int64_t b = (int64_t)ls_be64_get(e);
            if (b < next || b > last_offset || delta > last_offset - b) {
                snprintf(why, whylen,
                         "%s: entry at byte %zu has offsets [%lld, +%d], outside [%lld, %lld] or "
                         "not after the previous entry",
                         what, base_pos + q, (long long)b, delta, (long long)next,
                         (long long)last_offset);
                return LS_ECORRUPT;
            }
            next = b + delta + 1;
        }
        offsets += (int64_t)delta + 1;
        q += 12 + (size_t)elen;
        n++;
    }
    if (!real_offsets && offsets != last_offset - first_offset + 1) {
        snprintf(why, whylen, "%s: entries at byte %zu hold %lld offsets, index says [%lld, %lld]",
                 what, base_pos, (long long)offsets, (long long)first_offset,
                 (long long)last_offset);
        return LS_ECORRUPT;
    }
    uint32_t *pos = pos_out ? LS_NEWN(uint32_t, n ? n : 1) : NULL;
    int64_t *base = base_out ? LS_NEWN(int64_t, n ? n : 1) : NULL;
    int64_t *max_ts = max_ts_out ? LS_NEWN(int64_t, n ? n : 1) : NULL;
    int64_t cur = first_offset;
    size_t q = 0;
    for (int i = 0; i < n; i++) {
        uint8_t *e = p + q;
        /* Rewritten only where they differ: the bytes may be a copy-on-write
         * mapping of the object's file (objstore get_chunk), where a write
         * copies the page. */
        if (real_offsets)
            cur = (int64_t)ls_be64_get(e);
        else if ((int64_t)ls_be64_get(e) != cur)
            ls_be64_put(e, (uint64_t)cur); /* outside the CRC: safe to rewrite */
        if (ls_be32_get(e + ENTRY_EPOCH_AT) != 0)
            ls_be32_put(e + ENTRY_EPOCH_AT, 0); /* our single leader epoch */
        if (pos) pos[i] = (uint32_t)q;
        if (base) base[i] = cur;
        if (max_ts) max_ts[i] = (int64_t)ls_be64_get(e + ENTRY_MAX_TS_AT);
        cur += (int64_t)(int32_t)ls_be32_get(e + ENTRY_LAST_DELTA_AT) + 1;
        q += 12 + (size_t)ls_be32_get(e + ENTRY_LEN_AT);
    }
    if (pos_out) *pos_out = pos;
    if (base_out) *base_out = base;
    if (max_ts_out) *max_ts_out = max_ts;
    *count = n;
    return LS_OK;
}

ls_cache_run_t *ls_read_cache_insert(ls_read_cache_t *c, int64_t log_id, int64_t first_offset,
                                     int64_t last_offset, bool real_offsets, ls_chunk_t *chunk,
                                     size_t off, size_t len, const char *what, char *why,
                                     size_t whylen)
{
    uint32_t *pos;
    int64_t *base, *max_ts;
    int n;
    if (ls_entries_rebase(chunk->data + off, len, first_offset, last_offset, real_offsets, what,
                          off, &pos, &base, &max_ts, &n, why, whylen) != LS_OK)
        return NULL;
    ls_cache_run_t *r = LS_NEW(ls_cache_run_t);
    r->log_id = log_id;
    r->first_offset = first_offset;
    r->last_offset = last_offset;
    r->chunk = ls_chunk_keep(chunk);
    r->off = off;
    r->len = len;
    r->nbatches = n;
    r->batch_base = base;
    r->batch_pos = pos;
    r->batch_max_ts = max_ts;
    r->object = ls_strdup(what);
    /* a pooled chunk holding just this run costs its capacity */
    size_t held = chunk->pool && off == 0 && len == chunk->len ? chunk->cap : len;
    r->cost = held + (size_t)n * (sizeof *pos + sizeof *base + sizeof *max_ts) + sizeof *r +
              strlen(what) + 1;
    ls_cache_run_t *old = ls_read_cache_get(c, log_id, last_offset);
    if (old) remove_run(c, old);
    link_item(c, r);
    return r;
}

ls_cache_run_t *ls_read_cache_footer_insert(ls_read_cache_t *c, int64_t log_id, int64_t first,
                                            int64_t last, const char *object, const int64_t *base,
                                            const uint32_t *pos, uint32_t n, uint64_t body_end,
                                            size_t block_bytes)
{
    ls_cache_run_t *old = ls_read_cache_footer_get(c, log_id, last, object);
    if (old) remove_run(c, old);
    ls_cache_run_t *r = LS_NEW(ls_cache_run_t);
    r->is_footer = true;
    r->log_id = log_id;
    r->first_offset = first;
    r->last_offset = last;
    r->nbatches = (int)n;
    r->batch_base = LS_NEWN(int64_t, n ? n : 1);
    r->batch_pos = LS_NEWN(uint32_t, n ? n : 1);
    r->group_first = LS_NEWN(int, n ? n : 1);
    r->body_end = body_end;
    if (block_bytes == 0) block_bytes = 1;
    for (uint32_t i = 0; i < n; i++) {
        r->batch_base[i] = base[i];
        r->batch_pos[i] = pos[i];
        /* a block closes at the first batch block_bytes or more past its start */
        if (i == 0 || pos[i] - r->batch_pos[r->group_first[r->ngroups - 1]] >= block_bytes)
            r->group_first[r->ngroups++] = (int)i;
    }
    r->object = ls_strdup(object);
    r->cost = (size_t)n * (sizeof *base + sizeof *pos) + (size_t)r->ngroups * sizeof(int) +
              sizeof *r + strlen(object) + 1;
    link_item(c, r);
    return r;
}

ls_cache_run_t *ls_read_cache_footer_get(ls_read_cache_t *c, int64_t log_id, int64_t last,
                                         const char *object)
{
    ls_cache_run_t *r = find_item(c, log_id, last, true, object);
    if (r) {
        lru_unlink(r);
        lru_push_front(c, r);
    }
    return r;
}

void ls_co_footer_block(const ls_cache_run_t *f, int64_t offset, ls_co_block_t *b)
{
    int lo = 0, hi = f->nbatches - 1;
    while (lo < hi) { /* last batch whose base <= offset (0 if none) */
        int mid = (lo + hi + 1) / 2;
        if (f->batch_base[mid] <= offset)
            lo = mid;
        else
            hi = mid - 1;
    }
    int g = 0, gh = f->ngroups - 1;
    while (g < gh) { /* last block starting at or before that batch */
        int mid = (g + gh + 1) / 2;
        if (f->group_first[mid] <= lo)
            g = mid;
        else
            gh = mid - 1;
    }
    int fb = f->group_first[g];
    int nb = g + 1 < f->ngroups ? f->group_first[g + 1] : f->nbatches;
    b->first = g == 0 ? f->first_offset : f->batch_base[fb];
    b->last = nb < f->nbatches ? f->batch_base[nb] - 1 : f->last_offset;
    b->pos = f->batch_pos[fb];
    b->len = (uint32_t)((nb < f->nbatches ? f->batch_pos[nb] : f->body_end) - b->pos);
    b->batches = nb - fb;
}

void ls_read_cache_remove(ls_read_cache_t *c, ls_cache_run_t *r) { remove_run(c, r); }

ls_cache_run_t *ls_read_cache_get(ls_read_cache_t *c, int64_t log_id, int64_t last_offset)
{
    ls_cache_run_t *r = find_item(c, log_id, last_offset, false, NULL);
    if (r) {
        lru_unlink(r);
        lru_push_front(c, r);
    }
    return r;
}

ls_cache_run_t *ls_read_cache_peek(ls_read_cache_t *c, int64_t log_id, int64_t last_offset)
{
    return find_item(c, log_id, last_offset, false, NULL);
}

int ls_cache_run_find(const ls_cache_run_t *r, int64_t offset)
{
    if (r->nbatches == 0) return 0;
    int lo = 0, hi = r->nbatches - 1;
    while (lo < hi) { /* last batch whose base <= offset */
        int mid = (lo + hi + 1) / 2;
        if (r->batch_base[mid] <= offset)
            lo = mid;
        else
            hi = mid - 1;
    }
    /* in a gap after that batch (key compaction): the next one */
    const uint8_t *e = r->chunk->data + r->off + r->batch_pos[lo];
    if (r->batch_base[lo] + (int32_t)ls_be32_get(e + ENTRY_LAST_DELTA_AT) < offset) lo++;
    return lo;
}

void ls_read_cache_drop_range(ls_read_cache_t *c, int64_t log_id, int64_t first, int64_t last)
{
    cache_log_t *lg = ls_i64map_get(&c->logs, log_id);
    if (!lg) return;
    run_vec_t v = {0};
    t_overlapping(c, lg->root, first, last, &v);
    for (size_t i = 0; i < v.n; i++) /* the last removal may free lg */
        remove_run(c, v.v[i]);
    ls_free(v.v);
}

void ls_read_cache_drop_log(ls_read_cache_t *c, int64_t log_id)
{
    ls_read_cache_drop_range(c, log_id, INT64_MIN, INT64_MAX);
}

uint64_t ls_read_cache_visits(const ls_read_cache_t *c) { return c->visits; }

size_t ls_read_cache_bytes(const ls_read_cache_t *c) { return c->bytes; }

size_t ls_read_cache_max_bytes(const ls_read_cache_t *c) { return c->max_bytes; }

size_t ls_read_cache_peak_bytes(const ls_read_cache_t *c) { return c->peak; }
