/* WAL object reads of one compaction pass: each WAL object read with ONE
 * GET, its ranges served from memory. Design note in wal_blocks.c. */
#ifndef LS_WAL_BLOCKS_H
#define LS_WAL_BLOCKS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/i64map.h"
#include "base/status.h"
#include "objstore/objstore.h"

typedef struct ls_wal_blocks_stats {
    uint64_t gets;        /* GETs of WAL objects (whole blocks and exact ranges) */
    uint64_t bytes;       /* bytes they returned */
    uint64_t hits;        /* ranges served from a block already read */
    uint64_t exact_reads; /* of the GETs, exact ranges (the budget was full) */
} ls_wal_blocks_stats_t;

typedef struct ls_wal_blocks {
    ls_objstore_t *os;
    size_t block_bytes;  /* a WAL object's first bytes read at once (its whole size) */
    size_t budget_bytes; /* blocks held by one pass at most */
    size_t held_bytes;
    bool full;          /* the budget ran out this pass: misses read exact ranges */
    ls_i64map_t blocks; /* hash of the object key -> block list (collisions chained) */
    ls_wal_blocks_stats_t stats;
} ls_wal_blocks_t;

/* block_bytes: the size bound of a WAL object (wal.flush.max.bytes);
 * budget_bytes: memory one pass may hold (at least two blocks). No I/O. */
void ls_wal_blocks_init(ls_wal_blocks_t *wb, ls_objstore_t *os, size_t block_bytes,
                        size_t budget_bytes);
/* The bytes [pos, pos + len) of WAL object key into *out (replaced), as
 * ls_objstore_get would return them. Blocking (worker thread). */
ls_status ls_wal_blocks_read(ls_wal_blocks_t *wb, const char *key, uint64_t pos, uint32_t len,
                             ls_buf_t *out);
/* Ends a pass: frees every block (the next pass reads objects anew: a WAL
 * object's ranges not compacted by this pass belong to logs not due yet). */
void ls_wal_blocks_clear(ls_wal_blocks_t *wb);
void ls_wal_blocks_free(ls_wal_blocks_t *wb);
#endif
