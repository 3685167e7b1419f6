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
    c->bytes -= r->len;
    run_free(r);
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
        if (real_offsets)
            cur = (int64_t)ls_be64_get(e);
        else
            ls_be64_put(e, (uint64_t)cur);  /* outside the CRC: safe to rewrite */
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
    ls_cache_run_t *old = ls_read_cache_get(c, log_id, last_offset);
    if (old) remove_run(c, old);
    size_t b = bucket_of(c, log_id, last_offset);
    r->hnext = c->table[b];
    c->table[b] = r;
    lru_push_front(c, r);
    c->bytes += len;
    /* Evict least recently used runs, never the one just inserted. */
    while (c->bytes > c->max_bytes && c->lru.lru_prev != r)
        remove_run(c, c->lru.lru_prev);
    return r;
}

void ls_read_cache_remove(ls_read_cache_t *c, ls_cache_run_t *r) { remove_run(c, r); }

ls_cache_run_t *ls_read_cache_get(ls_read_cache_t *c, int64_t log_id, int64_t last_offset)
{
    for (ls_cache_run_t *r = c->table[bucket_of(c, log_id, last_offset)]; r; r = r->hnext)
        if (r->log_id == log_id && r->last_offset == last_offset) {
            lru_unlink(r);
            lru_push_front(c, r);
            return r;
        }
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
