/* Read cache: index-entry-sized runs of a log's entries, with base offsets
 * already rewritten to their committed offsets, so consumers are served by
 * reference (zero copies) and the bytes never change after insertion.
 *
 * Filled two ways: write-through at commit (the flush's own section bytes:
 * tailing consumers never touch the store) and on a miss (ranged GET).
 * Bounded by bytes with LRU eviction; evicted runs stay alive while a
 * response still references their chunk. Loop thread only. */
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
    /* internal */
    struct ls_cache_run *hnext, *lru_prev, *lru_next;
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
                                     int whylen);
/* Checks the framing of the entries in p[0,len) (they must consume exactly
 * last-first+1 offsets), then rewrites each base offset from first_offset and
 * the leader epoch to 0. With real_offsets the base offsets are kept instead
 * and checked: strictly ascending, each entry [base, base + lastOffsetDelta]
 * inside [first, last] and after the previous one (gaps allowed, no entry
 * at all allowed). Optional outputs (ls_malloc'd): each entry's position,
 * base offset, max timestamp. Returns the entry count, or -1 with why (naming
 * `what` and the byte position base_pos + offending offset). */
int ls_entries_rebase(uint8_t *p, size_t len, int64_t first_offset, int64_t last_offset,
                      bool real_offsets, const char *what, size_t base_pos, uint32_t **pos,
                      int64_t **base, int64_t **max_ts, char *why, int whylen);
void ls_read_cache_remove(ls_read_cache_t *c, ls_cache_run_t *r);
ls_cache_run_t *ls_read_cache_get(ls_read_cache_t *c, int64_t log_id, int64_t last_offset);
/* Index of the first entry whose last offset >= offset (the one holding
 * it, or the next one after a gap key compaction left); nbatches when none. */
int ls_cache_run_find(const ls_cache_run_t *r, int64_t offset);
/* Drops the runs of a log that overlap [first, last] (replaced by compaction). */
void ls_read_cache_drop_range(ls_read_cache_t *c, int64_t log_id, int64_t first, int64_t last);
/* Drops every run of a log (fenced / deleted). */
void ls_read_cache_drop_log(ls_read_cache_t *c, int64_t log_id);
size_t ls_read_cache_bytes(const ls_read_cache_t *c);
#endif
