/* WAL object reads of a compaction pass (compact/wal_blocks.c): each object
 * read with one GET whatever the number of log ranges asked of it, an object
 * a little past wal.flush.max.bytes (its last append) included; once the
 * pass holds its budget, further ranges are read one GET each and still
 * return the object's exact bytes; nothing outlives the pass. GETs are
 * counted by the module's own stats, on the in-memory store. */
#include <string.h>
#include <sys/uio.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "compact/wal_blocks.h"
#include "objstore/objstore.h"
#include "unit.h"

#define BLOCK 4096 /* wal.flush.max.bytes of these tests */

/* Object key of size bytes, byte i = (i * 7 + seed) & 0xff. */
static void put_object(ls_objstore_t *os, const char *key, size_t size, int seed)
{
    uint8_t *b = ls_malloc(size);
    for (size_t i = 0; i < size; i++)
        b[i] = (uint8_t)((i * 7 + (size_t)seed) & 0xff);
    struct iovec iov = {b, size};
    CHECK(ls_objstore_put(os, key, &iov, 1, 0) == LS_OK);
    ls_free(b);
}

/* Whether [pos, pos + len) of key read through wb is the object's bytes. */
static bool range_ok(ls_wal_blocks_t *wb, const char *key, uint64_t pos, uint32_t len, int seed)
{
    ls_buf_t out;
    ls_buf_init(&out);
    bool ok = ls_wal_blocks_read(wb, key, pos, len, &out) == LS_OK && out.len == len;
    for (size_t i = 0; ok && i < len; i++)
        ok = out.data[i] == (uint8_t)(((pos + i) * 7 + (size_t)seed) & 0xff);
    ls_buf_free(&out);
    return ok;
}

TEST(each_object_one_get_even_past_the_flush_size)
{
    ls_objstore_t *os = ls_objstore_mem_open();
    ls_wal_blocks_t wb;
    ls_wal_blocks_init(&wb, os, BLOCK, 64 * BLOCK);
    /* 8 logs' sections of 600 bytes: 4800 bytes, past the 4096 a flush seals at */
    char key[32];
    for (int o = 0; o < 4; o++) {
        snprintf(key, sizeof key, "wal/%d.wal", o);
        put_object(os, key, 4800, o);
    }
    for (int log = 0; log < 8; log++)
        for (int o = 0; o < 4; o++) {
            snprintf(key, sizeof key, "wal/%d.wal", o);
            CHECK(range_ok(&wb, key, (uint64_t)log * 600, 600, o));
        }
    CHECK_EQ_INT(wb.stats.gets, 4);
    CHECK_EQ_INT(wb.stats.exact_reads, 0);
    CHECK_EQ_INT(wb.stats.hits, 28);
    /* B3: a new pass reads again */
    ls_wal_blocks_clear(&wb);
    CHECK(range_ok(&wb, "wal/0.wal", 600, 600, 0));
    CHECK_EQ_INT(wb.stats.gets, 5);
    ls_wal_blocks_free(&wb);
    ls_objstore_close(os);
}

TEST(past_the_budget_ranges_are_read_one_by_one)
{
    ls_objstore_t *os = ls_objstore_mem_open();
    ls_wal_blocks_t wb;
    /* a block is admitted while what is held plus what it asks for (twice
     * the flush size) fits: two 4000-byte objects here */
    ls_wal_blocks_init(&wb, os, BLOCK, 3 * BLOCK);
    char key[32];
    for (int o = 0; o < 4; o++) {
        snprintf(key, sizeof key, "wal/%d.wal", o);
        put_object(os, key, 4000, o);
    }
    for (int log = 0; log < 2; log++)
        for (int o = 0; o < 4; o++) {
            snprintf(key, sizeof key, "wal/%d.wal", o);
            CHECK(range_ok(&wb, key, (uint64_t)log * 2000, 2000, o));
        }
    /* objects 0 and 1 held (2 GETs, then 2 hits); 2 and 3 one GET per range (4) */
    CHECK(wb.full);
    CHECK(wb.held_bytes <= wb.budget_bytes);
    CHECK_EQ_INT(wb.stats.gets, 6);
    CHECK_EQ_INT(wb.stats.exact_reads, 4);
    CHECK_EQ_INT(wb.stats.hits, 2);
    ls_wal_blocks_free(&wb);
    ls_objstore_close(os);
}

int main(void)
{
    RUN(each_object_one_get_even_past_the_flush_size);
    RUN(past_the_budget_ranges_are_read_one_by_one);
    UNIT_DONE();
}
