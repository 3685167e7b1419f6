/* Read cache: runs of a log's entries, with base offsets already rewritten to
 * their committed offsets, so consumers are served by reference (zero copies)
 * and the bytes never change after insertion; plus the footers (entry tables)
 * of compacted objects.
 *
 * Filled three ways: write-through at commit (the flush's own section bytes:
 * tailing consumers never touch the store; a run = one index entry), on a
 * miss of a WAL entry (ranged GET of the entry; a run = one index entry), and
 * on a miss inside a compacted object (a run = one *block* of it).
 *
 * Blocks. A compacted object (CO/KCO, often MiBs) is not read whole: its
 * footer is read once (ranged GET of its last 12n+40 bytes, cached as a
 * footer item), then the footer's entry table is cut greedily into blocks of
 * whole batches of about `block_bytes` (read.ahead.bytes): a block closes at
 * the first batch starting block_bytes or more after the block's start. The
 * cut depends only on the footer and block_bytes, so a block is a fixed,
 * non-overlapping sub-range [first, last] of the entry and is keyed like an
 * entry run, by (log_id, last): a lookup computes the block holding an
 * offset from the footer and asks for its key. Block g covers offsets from
 * its first batch's base (the entry's first offset for g = 0) to the next
 * block's first base - 1 (the entry's last offset for the last block), so the
 * gaps key compaction leaves belong to the block before them. The last
 * block's key equals the entry's: a run is valid for a lookup only when its
 * first offset and object match too (callers check; a stale one is removed).
 *
 * Keys: runs by (log_id, last offset); a footer by (log_id, last offset of
 * its index entry) and its object name. The index is per log, ordered by
 * last offset (read_cache.c), so a lookup and a drop of a log's range cost
 * O(log n + items dropped) on the loop whatever else the cache holds (a
 * compaction drops one range per index entry it replaces). Eviction: one
 * LRU over runs and footers, by cost = the bytes each holds (a pooled
 * buffer holding one run: its whole capacity) including its
 * per-batch tables, so ls_read_cache_bytes() (<= max_bytes, except that the
 * item just inserted is never evicted) bounds the memory the cache owns.
 * Evicted runs stay alive while a response still references their chunk; a
 * chunk holds exactly one run's bytes (a GET fills one block), so a chunk
 * never outlives its accounting by more than those in-flight responses.
 * Loop thread only. */
#ifndef LS_READ_CACHE_H
#define LS_READ_CACHE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "base/chunk.h"
#include "base/status.h"

typedef struct ls_cache_run {
    int64_t log_id;
    int64_t first_offset;
    int64_t last_offset;
    ls_chunk_t *chunk; /* kept */
    size_t off;        /* run bytes are chunk->data[off, off+len) */
    size_t len;
    int nbatches;
    int64_t *batch_base;   /* base offset of each entry */
    uint32_t *batch_pos;   /* position of each entry relative to off */
    int64_t *batch_max_ts; /* max timestamp of each entry */
    char *object;          /* the object the bytes came from: a run is valid only for an
                            * index entry naming it (a key-compacted rewrite keeps the
                            * range but not the bytes) */
    /* footer items (is_footer): chunk NULL, len 0; nbatches entries with
     * batch_base = base offsets, batch_pos = positions from the object start;
     * first/last_offset = the index entry's range */
    bool is_footer;
    uint64_t body_end; /* where the entries end (the footer's position) */
    int ngroups;
    int *group_first; /* first batch of each block */
    /* internal */
    size_t cost;
    uint64_t seq; /* index order among items of one key */
    uint32_t prio;
    int64_t min_first; /* smallest first_offset in this index subtree */
    struct ls_cache_run *tl, *tr, *lru_prev, *lru_next;
} ls_cache_run_t;

typedef struct ls_read_cache ls_read_cache_t;

ls_read_cache_t *ls_read_cache_new(size_t max_bytes);
void ls_read_cache_free(ls_read_cache_t *c);
/* Rewrites base offsets of the entries in chunk[off, off+len) starting at
 * first_offset, checks they consume exactly last-first+1 offsets, and inserts
 * the run (replacing any run with the same key). With real_offsets (a
 * key-compacted object, LS_IDX_KCO) the entries keep their base offsets and
 * may leave gaps (ls_entries_rebase). `what` names the source for corruption
 * reports. Returns the run (owned by the cache) or NULL with why. */
ls_cache_run_t *ls_read_cache_insert(ls_read_cache_t *c, int64_t log_id, int64_t first_offset,
                                     int64_t last_offset, bool real_offsets, ls_chunk_t *chunk,
                                     size_t off, size_t len, const char *what, char *why,
                                     size_t whylen);
/* Checks the framing of the entries in p[0,len) (they must consume exactly
 * last-first+1 offsets), then rewrites each base offset from first_offset and
 * the leader epoch to 0. With real_offsets the base offsets are kept instead
 * and checked: strictly ascending, each entry [base, base + lastOffsetDelta]
 * inside [first, last] and after the previous one (gaps allowed, no entry
 * at all allowed). Optional outputs (ls_malloc'd): each entry's position,
 * base offset, max timestamp; the entry count in *count. LS_OK, or
 * LS_ECORRUPT with why (naming `what` and the byte position base_pos +
 * offending offset). */
ls_status ls_entries_rebase(uint8_t *p, size_t len, int64_t first_offset, int64_t last_offset,
                            bool real_offsets, const char *what, size_t base_pos, uint32_t **pos,
                            int64_t **base, int64_t **max_ts, int *count, char *why, size_t whylen);
void ls_read_cache_remove(ls_read_cache_t *c, ls_cache_run_t *r);
ls_cache_run_t *ls_read_cache_get(ls_read_cache_t *c, int64_t log_id, int64_t last_offset);
/* Like get, without counting as a use (LRU order unchanged). */
ls_cache_run_t *ls_read_cache_peek(ls_read_cache_t *c, int64_t log_id, int64_t last_offset);
/* Index of the first entry whose last offset >= offset (the one holding
 * it, or the next one after a gap key compaction left); nbatches when none. */
int ls_cache_run_find(const ls_cache_run_t *r, int64_t offset);
/* Drops the runs of a log that overlap [first, last] (replaced by compaction). */
void ls_read_cache_drop_range(ls_read_cache_t *c, int64_t log_id, int64_t first, int64_t last);
/* Drops every run of a log (fenced / deleted). */
void ls_read_cache_drop_log(ls_read_cache_t *c, int64_t log_id);
/* Bytes the cache accounts for (runs' bytes and tables, footers). */
size_t ls_read_cache_bytes(const ls_read_cache_t *c);
size_t ls_read_cache_max_bytes(const ls_read_cache_t *c);
size_t ls_read_cache_peak_bytes(const ls_read_cache_t *c); /* highest bytes after an insert */
/* Index nodes examined by lookups, inserts' replacement checks and drops so
 * far: the work those do, which tests bound (it must not grow with what
 * the cache holds for other logs or other ranges). */
uint64_t ls_read_cache_visits(const ls_read_cache_t *c);

/* ---- compacted-object footers and blocks ---- */

/* One block of a compacted object: offsets [first, last], object bytes
 * [pos, pos + len), `batches` whole batches. */
typedef struct ls_co_block {
    int64_t first, last;
    uint64_t pos;
    uint32_t len;
    int batches;
} ls_co_block_t;

/* Caches the footer of the compacted object `object`, the index entry
 * [first, last] of log_id, entries e[0, n) (validated by the caller), entries
 * ending at body_end, cut into blocks of about block_bytes. Returns the item
 * (owned by the cache, valid until the next insert). */
ls_cache_run_t *ls_read_cache_footer_insert(ls_read_cache_t *c, int64_t log_id, int64_t first,
                                            int64_t last, const char *object, const int64_t *base,
                                            const uint32_t *pos, uint32_t n, uint64_t body_end,
                                            size_t block_bytes);
ls_cache_run_t *ls_read_cache_footer_get(ls_read_cache_t *c, int64_t log_id, int64_t last,
                                         const char *object);
/* The block of footer f holding offset (first..last of the entry; an offset in
 * a key-compaction gap gives the block before the gap). f has >= 1 batch. */
void ls_co_footer_block(const ls_cache_run_t *f, int64_t offset, ls_co_block_t *b);
/* Counts a read of a log range served from a cache (hit) or not
 * (lakestream_read_cache_hits/misses_total); any thread. */
void ls_read_cache_count(bool hit);
#endif
