/* Immutable, reference-counted byte chunk shared across threads (read cache
 * entries, WAL object bodies handed to writers). keep/release are atomic;
 * the last release frees. The bytes must not change after publication.
 *
 * Buffer pool. A read that a cache keeps and later drops (the read cache's
 * WAL entries and compacted-object blocks, MiBs each) used to get fresh
 * malloc'd memory every time: large allocations are fresh mmaps, so the
 * kernel zeroed and faulted in every page on the first write, and that was a
 * third of a cold catch-up's broker CPU (perf, 2026-12-04). A pool keeps
 * released buffers for the next read instead: ls_bufpool_take hands out a
 * buffer of capacity >= n (the smallest kept one within n..1.5n when there is one),
 * ls_bufpool_chunk wraps the filled buffer in a chunk whose last release
 * gives it back. At most max_bytes of capacity (and POOL_SLOTS buffers) are
 * kept: a buffer given back to a full pool makes room by freeing the kept
 * ones given back longest ago, so buffers of a size no take asks for any
 * more (a grown one, another read.ahead.bytes) age out instead of holding
 * the pool; one larger than max_bytes is freed. The pool is reference-counted by its
 * owner and by every chunk of it, so chunks may outlive the owner. Thread-
 * safe: takes happen on the loop, releases on any thread. */
#ifndef LS_CHUNK_H
#define LS_CHUNK_H
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

typedef struct ls_bufpool ls_bufpool_t;

typedef struct ls_chunk {
    int refcnt; /* accessed only through __atomic builtins */
    size_t len;
    uint8_t *data;      /* points into the same allocation unless adopted */
    ls_bufpool_t *pool; /* adopted from a pool: data goes back to it */
    size_t cap;         /* with pool: data's capacity */
    void *map;          /* a private file mapping data points into (munmap'd last) */
    size_t maplen;
} ls_chunk_t;

ls_chunk_t *ls_chunk_new(size_t len);                  /* refcnt 1, data uninitialised */
ls_chunk_t *ls_chunk_adopt(uint8_t *data, size_t len); /* takes ownership of ls_malloc'd data */
/* Takes ownership of a mapping (mmap'd, maplen bytes); the chunk's bytes are
 * [data, data + len) inside it, and the last release unmaps it. */
ls_chunk_t *ls_chunk_mapped(void *map, size_t maplen, uint8_t *data, size_t len);
ls_chunk_t *ls_chunk_keep(ls_chunk_t *c);
void ls_chunk_release(ls_chunk_t *c);

ls_bufpool_t *ls_bufpool_new(size_t max_bytes);
void ls_bufpool_release(ls_bufpool_t *p); /* the owner's reference */
/* b (empty, not initialised) gets capacity >= n, pooled memory if it fits. */
void ls_bufpool_take(ls_bufpool_t *p, ls_buf_t *b, size_t n);
/* A chunk of b's bytes (refcnt 1) whose last release returns them to p; b
 * is left empty. */
ls_chunk_t *ls_bufpool_chunk(ls_bufpool_t *p, ls_buf_t *b);
/* Figures for the shutdown log: buffers handed out from the pool (reused)
 * and newly allocated. */
void ls_bufpool_counts(ls_bufpool_t *p, uint64_t *reused, uint64_t *allocated);

#endif
