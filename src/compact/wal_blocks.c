/* WAL object reads of one compaction pass.
 *
 * A WAL object holds one section per log that wrote to it during the flush
 * (wal_format.h); a pass compacts log after log, so reading each log's
 * range with its own GET costs one request per log per object: with small
 * objects on S3 (issue 29 §9: ~4 KB objects, 870k GETs per GB, mostly 2 KB
 * ranges) the requests, not the bytes, set the pace and the bill. Here the
 * first range a pass wants of an object fetches the object with one GET
 * (asking for twice block_bytes, wal.flush.max.bytes: a flush seals once an
 * object holds that much, so it passes it by at most its last append);
 * every later range of it in the pass comes from that block.
 *
 * Invariants
 *  B1  A range is returned exactly as ls_objstore_get returns it (clamped
 *      at the object's end): WAL objects are never rewritten, so a block
 *      read earlier in the pass holds the same bytes.
 *  B2  The blocks held never exceed budget_bytes
 *      (compaction.wal.read.budget.bytes). Once the next block would
 *      not fit, the pass stops adding blocks (full) and reads exact ranges,
 *      as before this module, for the rest of the pass: a backlog larger
 *      than the budget costs at most the old request count, and never
 *      re-reads whole objects log after log.
 *  B3  Nothing outlives the pass (ls_wal_blocks_clear): ranges of logs not
 *      due yet are read again by the pass that compacts them.
 * A range past a block (an object larger than twice block_bytes) is read
 * exactly and not kept. Threads: the compaction worker only. */
#include "compact/wal_blocks.h"

#include <string.h>

#include "base/alloc.h"
#include "base/hash.h"

typedef struct block {
    char *key;
    ls_buf_t data;      /* the object's bytes [0, data.len) */
    bool whole;         /* data ends where the object ends */
    struct block *next; /* same key hash */
} block_t;

void ls_wal_blocks_init(ls_wal_blocks_t *wb, ls_objstore_t *os, size_t block_bytes,
                        size_t budget_bytes)
{
    memset(wb, 0, sizeof *wb);
    wb->os = os;
    wb->block_bytes = block_bytes ? block_bytes : (size_t)4 << 20;
    wb->budget_bytes = budget_bytes > 2 * wb->block_bytes ? budget_bytes : 2 * wb->block_bytes;
    ls_i64map_init(&wb->blocks);
}

static int64_t key_hash(const char *key) { return (int64_t)ls_hash_str(LS_HASH_INIT, key); }

static block_t *find(const ls_wal_blocks_t *wb, const char *key)
{
    for (block_t *b = ls_i64map_get(&wb->blocks, key_hash(key)); b; b = b->next)
        if (strcmp(b->key, key) == 0) return b;
    return NULL;
}

/* The overlap of [pos, pos + len) with the block, into out (B1). */
static void serve(const block_t *b, uint64_t pos, uint32_t len, ls_buf_t *out)
{
    out->len = 0;
    if (pos >= b->data.len) return;
    size_t n = b->data.len - pos < len ? (size_t)(b->data.len - pos) : len;
    ls_buf_append(out, b->data.data + pos, n);
}

static ls_status get_exact(ls_wal_blocks_t *wb, const char *key, uint64_t pos, uint32_t len,
                           ls_buf_t *out)
{
    ls_status st = ls_objstore_get(wb->os, key, pos, len, out);
    wb->stats.gets++;
    wb->stats.exact_reads++;
    if (st == LS_OK) wb->stats.bytes += out->len;
    return st;
}

ls_status ls_wal_blocks_read(ls_wal_blocks_t *wb, const char *key, uint64_t pos, uint32_t len,
                             ls_buf_t *out)
{
    block_t *b = find(wb, key);
    if (b) {
        if (b->whole || pos + len <= b->data.len) {
            wb->stats.hits++;
            serve(b, pos, len, out);
            return LS_OK;
        }
        return get_exact(wb, key, pos, len, out); /* past the block */
    }
    /* a flush seals once the object holds block_bytes, so its last append
     * may carry it past: ask for twice as much (the store returns what the
     * object has), so such an object too is read whole */
    size_t ask = pos + len > 2 * wb->block_bytes ? (size_t)(pos + len) : 2 * wb->block_bytes;
    if (wb->full || wb->held_bytes + ask > wb->budget_bytes) {
        wb->full = true; /* B2 */
        return get_exact(wb, key, pos, len, out);
    }
    b = LS_NEW(block_t);
    ls_buf_init(&b->data);
    ls_status st = ls_objstore_get(wb->os, key, 0, ask, &b->data);
    wb->stats.gets++;
    if (st != LS_OK) {
        ls_buf_free(&b->data);
        ls_free(b);
        out->len = 0;
        return st;
    }
    wb->stats.bytes += b->data.len;
    b->whole = b->data.len < ask;
    b->key = ls_strdup(key);
    int64_t h = key_hash(key);
    b->next = ls_i64map_get(&wb->blocks, h);
    ls_i64map_put(&wb->blocks, h, b);
    wb->held_bytes += b->data.len;
    serve(b, pos, len, out);
    return LS_OK;
}

void ls_wal_blocks_clear(ls_wal_blocks_t *wb)
{
    size_t it = 0;
    int64_t k;
    void *v;
    while (ls_i64map_next(&wb->blocks, &it, &k, &v)) {
        for (block_t *b = v, *next; b; b = next) {
            next = b->next;
            ls_buf_free(&b->data);
            ls_free(b->key);
            ls_free(b);
        }
    }
    ls_i64map_free(&wb->blocks);
    ls_i64map_init(&wb->blocks);
    wb->held_bytes = 0;
    wb->full = false;
}

void ls_wal_blocks_free(ls_wal_blocks_t *wb)
{
    ls_wal_blocks_clear(wb);
    ls_i64map_free(&wb->blocks);
}
