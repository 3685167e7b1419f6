/* The read buffer pool (base/chunk.h): a buffer given back is handed out
 * again to a take of about its size; a full pool makes room for the buffer
 * given back by freeing the ones kept longest, so buffers no take fits
 * (grown past the block size, an old read.ahead.bytes) age out instead of
 * holding the pool while every new buffer is freed. */
#include <stdint.h>
#include <string.h>

#include "base/alloc.h"
#include "base/chunk.h"
#include "unit.h"

/* take n bytes, fill them, wrap them in a chunk and release it */
static uint8_t *cycle(ls_bufpool_t *p, size_t n)
{
    ls_buf_t b;
    ls_bufpool_take(p, &b, n);
    memset(b.data, 0x5a, n);
    b.len = n;
    uint8_t *data = b.data;
    ls_chunk_release(ls_bufpool_chunk(p, &b));
    return data;
}

TEST(given_back_buffers_are_reused)
{
    ls_bufpool_t *p = ls_bufpool_new(8u << 20);
    uint8_t *first = cycle(p, 1u << 20);
    for (int i = 0; i < 5; i++)
        CHECK(cycle(p, 1u << 20) == first);
    uint64_t reused, allocated;
    ls_bufpool_counts(p, &reused, &allocated);
    CHECK_EQ_INT(reused, 5);
    CHECK_EQ_INT(allocated, 1);
    ls_bufpool_release(p);
}

/* A 3.5 MiB buffer fills a 4 MiB pool; 1 MiB blocks follow. The old buffer
 * goes when the first block comes back, and the blocks are reused from
 * then on (before, every block was freed and the pool reused nothing). */
TEST(a_full_pool_lets_unused_sizes_age_out)
{
    ls_bufpool_t *p = ls_bufpool_new(4u << 20);
    cycle(p, (7u << 20) / 2);
    for (int i = 0; i < 6; i++)
        cycle(p, 1u << 20);
    uint64_t reused, allocated;
    ls_bufpool_counts(p, &reused, &allocated);
    CHECK_EQ_INT(allocated, 2);
    CHECK_EQ_INT(reused, 5);
    /* a buffer larger than the whole pool is not kept, and evicts nothing */
    cycle(p, 5u << 20);
    cycle(p, 1u << 20);
    ls_bufpool_counts(p, &reused, &allocated);
    CHECK_EQ_INT(allocated, 3);
    CHECK_EQ_INT(reused, 6);
    ls_bufpool_release(p);
}

/* Many buffers given back at once: at most max_bytes stay, the newest. */
TEST(the_pool_keeps_the_newest_within_its_bound)
{
    ls_bufpool_t *p = ls_bufpool_new(3u << 20);
    enum { N = 10 };
    ls_chunk_t *c[N];
    uint8_t *data[N];
    for (int i = 0; i < N; i++) {
        ls_buf_t b;
        ls_bufpool_take(p, &b, 1u << 20);
        b.len = 1;
        data[i] = b.data;
        c[i] = ls_bufpool_chunk(p, &b);
    }
    for (int i = 0; i < N; i++)
        ls_chunk_release(c[i]);
    /* the three given back last are the ones kept */
    int kept_newest = 0;
    for (int i = 0; i < 3; i++) {
        ls_buf_t b;
        ls_bufpool_take(p, &b, 1u << 20);
        kept_newest += b.data == data[N - 1] || b.data == data[N - 2] || b.data == data[N - 3];
        ls_buf_free(&b);
    }
    CHECK_EQ_INT(kept_newest, 3);
    uint64_t reused, allocated;
    ls_bufpool_counts(p, &reused, &allocated);
    CHECK_EQ_INT(reused, 3);
    ls_bufpool_release(p);
}

int main(void)
{
    RUN(given_back_buffers_are_reused);
    RUN(a_full_pool_lets_unused_sizes_age_out);
    RUN(the_pool_keeps_the_newest_within_its_bound);
    UNIT_DONE();
}
