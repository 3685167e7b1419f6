#include "log/read_cache.h"

#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "records/records.h"

/* Entry framing: an entry is a RecordBatch v2 (records/records.h has the one
 * definition of the layout). */
#define ENTRY_MIN LS_RB_HEADER_SIZE
#define ENTRY_LEN_AT LS_RB_OFF_LENGTH
#define ENTRY_EPOCH_AT LS_RB_OFF_LEADER_EPOCH
#define ENTRY_LAST_DELTA_AT LS_RB_OFF_LAST_OFFSET_DELTA
#define ENTRY_MAX_TS_AT LS_RB_OFF_MAX_TIMESTAMP

struct ls_read_cache {
    size_t max_bytes;
    size_t bytes;
    size_t peak;
    ls_cache_run_t **table;
    size_t nbuckets;
    ls_cache_run_t lru; /* sentinel: lru.lru_next = most recent */
};

static size_t bucket_of(const ls_read_cache_t *c, int64_t log_id, int64_t last)
{
    uint64_t h =
        ((uint64_t)log_id * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)last * 0xC2B2AE3D27D4EB4Full);
    return (size_t)(h >> 20) % c->nbuckets;
}

ls_read_cache_t *ls_read_cache_new(size_t max_bytes)
{
    ls_read_cache_t *c = LS_NEW(ls_read_cache_t);
    c->max_bytes = max_bytes;
    c->nbuckets = 4096;
    c->table = LS_NEWN(ls_cache_run_t *, c->nbuckets);
    c->lru.lru_next = c->lru.lru_prev = &c->lru;
    return c;
}

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
    ls_cache_run_t **pp = &c->table[bucket_of(c, r->log_id, r->last_offset)];
    while (*pp != r)
        pp = &(*pp)->hnext;
    *pp = r->hnext;
    lru_unlink(r);
    c->bytes -= r->cost;
    run_free(r);
}

/* Hashes and accounts a new item, then evicts least recently used items,
 * never the one just inserted. */
static void link_item(ls_read_cache_t *c, ls_cache_run_t *r)
{
    size_t b = bucket_of(c, r->log_id, r->last_offset);
    r->hnext = c->table[b];
    c->table[b] = r;
    lru_push_front(c, r);
    c->bytes += r->cost;
    while (c->bytes > c->max_bytes && c->lru.lru_prev != r)
        remove_run(c, c->lru.lru_prev);
    if (c->bytes > c->peak) c->peak = c->bytes;
}

void ls_read_cache_free(ls_read_cache_t *c)
{
    if (!c) return;
    while (c->lru.lru_next != &c->lru)
        remove_run(c, c->lru.lru_next);
    ls_free(c->table);
    ls_free(c);
}

int ls_entries_rebase(uint8_t *p, size_t len, int64_t first_offset, int64_t last_offset,
                      bool real_offsets, const char *what, size_t base_pos, uint32_t **pos_out,
                      int64_t **base_out, int64_t **max_ts_out, char *why, int whylen)
{
    /* First pass: count entries and check framing before touching bytes. */
    int n = 0;
    int64_t offsets = 0, next = first_offset;
    for (size_t q = 0; q < len;) {
        const uint8_t *e = p + q;
        if (len - q < ENTRY_MIN) {
            snprintf(why, (size_t)whylen, "%s: truncated entry at byte %zu", what, base_pos + q);
            return -1;
        }
        uint32_t elen = ls_be32_get(e + ENTRY_LEN_AT);
        int32_t delta = (int32_t)ls_be32_get(e + ENTRY_LAST_DELTA_AT);
        if (elen < ENTRY_MIN - 12 || elen > len - q - 12 || delta < 0) {
            snprintf(why, (size_t)whylen, "%s: bad entry framing at byte %zu", what, base_pos + q);
            return -1;
        }
        if (real_offsets) {
            int64_t b = (int64_t)ls_be64_get(e);
            if (b < next || b > last_offset || delta > last_offset - b) {
                snprintf(why, (size_t)whylen,
                         "%s: entry at byte %zu has offsets [%lld, +%d], outside [%lld, %lld] or "
                         "not after the previous entry",
                         what, base_pos + q, (long long)b, delta, (long long)next,
                         (long long)last_offset);
                return -1;
            }
            next = b + delta + 1;
        }
        offsets += (int64_t)delta + 1;
        q += 12 + (size_t)elen;
        n++;
    }
    if (!real_offsets && offsets != last_offset - first_offset + 1) {
        snprintf(why, (size_t)whylen,
                 "%s: entries at byte %zu hold %lld offsets, index says [%lld, %lld]", what,
                 base_pos, (long long)offsets, (long long)first_offset, (long long)last_offset);
        return -1;
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
    return n;
}

ls_cache_run_t *ls_read_cache_insert(ls_read_cache_t *c, int64_t log_id, int64_t first_offset,
                                     int64_t last_offset, bool real_offsets, ls_chunk_t *chunk,
                                     size_t off, size_t len, const char *what, char *why,
                                     int whylen)
{
    uint32_t *pos;
    int64_t *base, *max_ts;
    int n = ls_entries_rebase(chunk->data + off, len, first_offset, last_offset, real_offsets, what,
                              off, &pos, &base, &max_ts, why, whylen);
    if (n < 0) return NULL;
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
    for (ls_cache_run_t *r = c->table[bucket_of(c, log_id, last)]; r; r = r->hnext)
        if (r->is_footer && r->log_id == log_id && r->last_offset == last &&
            !strcmp(r->object, object)) {
            lru_unlink(r);
            lru_push_front(c, r);
            return r;
        }
    return NULL;
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
    for (ls_cache_run_t *r = c->table[bucket_of(c, log_id, last_offset)]; r; r = r->hnext)
        if (!r->is_footer && r->log_id == log_id && r->last_offset == last_offset) {
            lru_unlink(r);
            lru_push_front(c, r);
            return r;
        }
    return NULL;
}

ls_cache_run_t *ls_read_cache_peek(ls_read_cache_t *c, int64_t log_id, int64_t last_offset)
{
    for (ls_cache_run_t *r = c->table[bucket_of(c, log_id, last_offset)]; r; r = r->hnext)
        if (!r->is_footer && r->log_id == log_id && r->last_offset == last_offset) return r;
    return NULL;
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
    for (ls_cache_run_t *r = c->lru.lru_next, *next; r != &c->lru; r = next) {
        next = r->lru_next;
        if (r->log_id == log_id && r->last_offset >= first && r->first_offset <= last)
            remove_run(c, r);
    }
}

void ls_read_cache_drop_log(ls_read_cache_t *c, int64_t log_id)
{
    ls_read_cache_drop_range(c, log_id, INT64_MIN, INT64_MAX);
}

size_t ls_read_cache_bytes(const ls_read_cache_t *c) { return c->bytes; }

size_t ls_read_cache_max_bytes(const ls_read_cache_t *c) { return c->max_bytes; }

size_t ls_read_cache_peak_bytes(const ls_read_cache_t *c) { return c->peak; }
