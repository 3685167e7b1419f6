/* Read cache index (read_cache.c): lookups and range drops cost
 * O(log n + items dropped), whatever the cache holds, because they run on
 * the event loop once per index entry a compaction replaces (issue 29 §8: a
 * walk of the whole LRU per dropped entry froze the loop for seconds).
 * Work is counted through ls_read_cache_visits, never timed. */
#include <string.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "log/read_cache.h"
#include "records/records.h"
#include "unit.h"

#define LOGS 8
#define PER_LOG 4000 /* one-record runs per log: 32,000 items in all */

/* A chunk of one minimal one-record batch. */
static ls_chunk_t *one_record(void)
{
    ls_chunk_t *ch = ls_chunk_new(LS_RB_HEADER_SIZE);
    memset(ch->data, 0, LS_RB_HEADER_SIZE);
    ls_be32_put(ch->data + LS_RB_OFF_LENGTH, LS_RB_HEADER_SIZE - 12);
    ls_be32_put(ch->data + LS_RB_OFF_LAST_OFFSET_DELTA, 0);
    return ch;
}

static bool fill(ls_read_cache_t *c)
{
    char why[200];
    for (int64_t o = 0; o < PER_LOG; o++)
        for (int64_t log = 1; log <= LOGS; log++) {
            ls_chunk_t *ch = one_record();
            bool ok = ls_read_cache_insert(c, log, o, o, false, ch, 0, ch->len, "wal/x", why,
                                           sizeof why) != NULL;
            ls_chunk_release(ch);
            if (!ok) return false;
        }
    return true;
}

static int count_runs(ls_read_cache_t *c, int64_t log, int64_t from, int64_t to)
{
    int n = 0;
    for (int64_t o = from; o <= to; o++)
        n += ls_read_cache_peek(c, log, o) != NULL;
    return n;
}

/* A compaction of a full cache drops one entry at a time (one range per
 * replaced index entry): each drop examines a few dozen nodes, not the
 * 32,000 items cached (the old LRU walk examined all of them each time). */
TEST(drop_range_work_is_bounded)
{
    ls_read_cache_t *c = ls_read_cache_new((size_t)1 << 30);
    CHECK(fill(c));
    CHECK_EQ_INT(count_runs(c, 3, 0, PER_LOG - 1), PER_LOG);
    uint64_t before = ls_read_cache_visits(c);
    for (int64_t o = 1000; o < 2000; o++)
        ls_read_cache_drop_range(c, 3, o, o);
    uint64_t per_drop = (ls_read_cache_visits(c) - before) / 1000;
    CHECK(per_drop < 200); /* about 2 log2(4000) + 1 */
    /* exactly the dropped range is gone, in that log only */
    CHECK_EQ_INT(count_runs(c, 3, 1000, 1999), 0);
    CHECK_EQ_INT(count_runs(c, 3, 0, 999), 1000);
    CHECK_EQ_INT(count_runs(c, 3, 2000, PER_LOG - 1), PER_LOG - 2000);
    CHECK_EQ_INT(count_runs(c, 4, 1000, 1999), 1000);
    /* one wide drop: proportional to what it drops */
    before = ls_read_cache_visits(c);
    ls_read_cache_drop_range(c, 5, 0, 499);
    CHECK(ls_read_cache_visits(c) - before < 500 + 200);
    CHECK_EQ_INT(count_runs(c, 5, 0, 499), 0);
    CHECK_EQ_INT(count_runs(c, 5, 500, 500), 1);
    /* a range with nothing cached, and a log with nothing cached */
    before = ls_read_cache_visits(c);
    ls_read_cache_drop_range(c, 3, 1200, 1800);
    ls_read_cache_drop_range(c, 99, 0, INT64_MAX);
    CHECK(ls_read_cache_visits(c) - before < 200);
    /* lookups too */
    before = ls_read_cache_visits(c);
    for (int64_t o = 0; o < 1000; o++)
        CHECK(ls_read_cache_get(c, 6, o) != NULL);
    CHECK((ls_read_cache_visits(c) - before) / 1000 < 100);
    ls_read_cache_free(c);
}

/* Runs that overlap a dropped range from outside it (a stale run, a block
 * or footer spanning it) go too; runs around it stay. */
TEST(drop_range_finds_spanning_items)
{
    ls_read_cache_t *c = ls_read_cache_new((size_t)1 << 30);
    CHECK(fill(c));
    /* a footer spanning [100, 3000] shares its key with the run at 3000 */
    int64_t base[2] = {100, 2000};
    uint32_t pos[2] = {0, 1000};
    CHECK(ls_read_cache_footer_insert(c, 2, 100, 3000, "co/y", base, pos, 2, 2000, 1 << 20));
    CHECK(ls_read_cache_footer_get(c, 2, 3000, "co/y") != NULL);
    CHECK(ls_read_cache_get(c, 2, 3000) != NULL);
    CHECK(ls_read_cache_footer_get(c, 2, 3000, "co/z") == NULL);
    ls_read_cache_drop_range(c, 2, 2500, 2500);
    CHECK(ls_read_cache_footer_get(c, 2, 3000, "co/y") == NULL);
    CHECK(ls_read_cache_get(c, 2, 3000) != NULL);
    CHECK(ls_read_cache_get(c, 2, 2500) == NULL);
    CHECK(ls_read_cache_get(c, 2, 2499) != NULL);
    CHECK(ls_read_cache_get(c, 2, 2501) != NULL);
    /* dropping a whole log leaves the others whole */
    ls_read_cache_drop_log(c, 2);
    CHECK_EQ_INT(count_runs(c, 2, 0, PER_LOG - 1), 0);
    CHECK_EQ_INT(count_runs(c, 1, 0, PER_LOG - 1), PER_LOG);
    CHECK_EQ_INT(count_runs(c, 8, 0, PER_LOG - 1), PER_LOG);
    ls_read_cache_free(c);
}

/* Eviction keeps the index consistent: a small cache holds the most recent
 * runs only, and every one of them is found. */
TEST(eviction_keeps_the_index)
{
    ls_chunk_t *probe = one_record();
    char why[200];
    ls_read_cache_t *c = ls_read_cache_new(1);
    ls_cache_run_t *r =
        ls_read_cache_insert(c, 1, 0, 0, false, probe, 0, probe->len, "wal/x", why, sizeof why);
    CHECK(r);
    size_t cost = ls_read_cache_bytes(c);
    ls_chunk_release(probe);
    ls_read_cache_free(c);
    c = ls_read_cache_new(cost * 500);
    CHECK(fill(c));
    CHECK(ls_read_cache_bytes(c) <= cost * 500);
    int held = 0;
    for (int64_t log = 1; log <= LOGS; log++)
        held += count_runs(c, log, 0, PER_LOG - 1);
    CHECK_EQ_INT(held, 500);
    /* the newest offsets of every log are there */
    for (int64_t log = 1; log <= LOGS; log++)
        CHECK(ls_read_cache_peek(c, log, PER_LOG - 1) != NULL);
    ls_read_cache_drop_range(c, 4, 0, INT64_MAX);
    CHECK_EQ_INT(count_runs(c, 4, 0, PER_LOG - 1), 0);
    ls_read_cache_free(c);
}

int main(void)
{
    RUN(drop_range_work_is_bounded);
    RUN(drop_range_finds_spanning_items);
    RUN(eviction_keeps_the_index);
    UNIT_DONE();
}
