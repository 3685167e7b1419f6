/* Cold reads inside compacted objects (log_reader.c, read_cache.h "Blocks"):
 * a read fetches the object's footer and the block of batches it needs, never
 * the whole object; the read cache holds blocks and footers and stays within
 * its byte limit under many random reads, which return exactly the bytes the
 * log held before compaction. A truncated object, a bad footer, a footer that
 * disagrees with its index entry and a block with broken framing are each a
 * precise LS_ECORRUPT for reads of that object only, never a crash. */
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "base/alloc.h"
#include "compact/compactor.h"
#include "log/co_format.h"
#include "log/log_meta.h"
#include "log/logstore.h"
#include "log_fixture.h"
#include "unit.h"

#define LOG 77
#define FLUSHES 30
#define PER_FLUSH 24
#define CACHE_MAX (192 << 10)
#define BLOCK (16 << 10)

static read_got_t read_at(ls_logstore_t *ls, int64_t off, size_t max)
{
    read_got_t r = {0};
    ls_logstore_read(ls, LOG, off, max, on_read_got, &r);
    run_until(&r.done);
    return r;
}

/* A batch framed like a RecordBatch v2 of `records` records and len bytes,
 * its body a pattern unique to (seed, byte). */
static void make_batch(uint8_t *p, size_t len, int records, uint32_t seed)
{
    for (size_t i = 0; i < len; i++)
        p[i] = (uint8_t)((seed * 2654435761u + (uint32_t)i * 40503u) >> 13);
    ls_be64_put(p, 0);
    ls_be32_put(p + 8, (uint32_t)(len - 12));
    ls_be32_put(p + LS_RB_OFF_LAST_OFFSET_DELTA, (uint32_t)(records - 1));
    ls_be64_put(p + LS_RB_OFF_MAX_TIMESTAMP, 1000 + seed);
}

/* The log as committed: its bytes (base offsets as read) and each batch's
 * base offset and position. */
typedef struct {
    ls_buf_t bytes;
    int n;
    int64_t base[FLUSHES * PER_FLUSH + 1];
    size_t pos[FLUSHES * PER_FLUSH + 1];
    int64_t next;
} truth_t;

static ls_objstore_t *os;
static ls_meta_t *meta;
static truth_t truth;

static ls_logstore_t *open_store(int64_t cache_max)
{
    ls_logstore_config_t c = lcfg();
    c.read_cache_max_bytes = cache_max;
    c.read_ahead_bytes = BLOCK;
    char err[256];
    return ls_logstore_open(&loop, meta, os, &c, err, sizeof err);
}

/* Writes FLUSHES flushes of PER_FLUSH batches (200 B .. 4 KiB, 1..5 records),
 * records the truth from the WAL path, then compacts into COs of 6 WAL
 * entries (~144 batches, ~300 KiB: many blocks each). */
static int build_log(void)
{
    meta = ls_meta_mem_open();
    os = ls_objstore_mem_open();
    ls_logstore_t *ls = open_store(64 << 20);
    if (!ls) return 0;
    srand(13);
    static uint8_t buf[4200]; /* batches up to 4099 bytes */
    for (int f = 0; f < FLUSHES; f++) {
        ack_t a[PER_FLUSH] = {{0}};
        for (int i = 0; i < PER_FLUSH; i++) {
            size_t len = 200 + (size_t)(rand() % 3900);
            int records = 1 + rand() % 5;
            make_batch(buf, len, records, (uint32_t)(f * PER_FLUSH + i));
            ls_append_t ap = {.log_id = LOG,
                              .data = buf,
                              .len = len,
                              .offset_count = records,
                              .max_timestamp = 1000 + f,
                              .producer = {.producer_id = -1}};
            ls_logstore_append(ls, &ap, on_ack, &a[i]);
        }
        for (int i = 0; i < PER_FLUSH; i++) {
            run_until(&a[i].done);
            if (a[i].st != LS_OK) return 0;
        }
    }
    read_got_t all = read_at(ls, 0, 1 << 30);
    if (all.st != LS_OK) return 0;
    truth.bytes = all.bytes;
    for (size_t q = 0; q < truth.bytes.len;) {
        const uint8_t *e = truth.bytes.data + q;
        truth.base[truth.n] = (int64_t)ls_be64_get(e);
        truth.pos[truth.n++] = q;
        truth.next = truth.base[truth.n - 1] + ls_be32_get(e + LS_RB_OFF_LAST_OFFSET_DELTA) + 1;
        q += 12 + ls_be32_get(e + 8);
    }
    truth.pos[truth.n] = truth.bytes.len;
    if (truth.n != FLUSHES * PER_FLUSH) return 0;
    ls_compactor_config_t cc = {.enabled = false,
                                .interval_ms = 1000,
                                .min_age_ms = 0,
                                .max_entries = 6,
                                .max_bytes = 8 << 20};
    ls_compactor_t *comp = ls_compactor_start(&loop, ls, meta, os, &cc);
    int done = 0;
    ls_compactor_kick(comp, flag_cb, &done);
    run_until(&done);
    ls_compactor_stats_t st;
    ls_compactor_stats(comp, &st);
    int stopped = 0;
    ls_compactor_stop(comp, flag_cb, &stopped);
    run_until(&stopped);
    ls_compactor_free(comp);
    close_store(ls);
    return st.objects_written == FLUSHES / 6 && count_objects(os, "co/") == FLUSHES / 6;
}

static void free_log(void)
{
    ls_buf_free(&truth.bytes);
    memset(&truth, 0, sizeof truth);
    ls_objstore_close(os);
    ls_meta_close(meta);
}

/* Index of the batch holding offset. */
static int batch_of(int64_t off)
{
    int i = 0;
    while (i + 1 < truth.n && truth.base[i + 1] <= off)
        i++;
    return i;
}

/* A read at off with max bytes must return whole batches from the one holding
 * off, exactly as committed, at least one, and no more than max unless one. */
static int read_is_exact(const read_got_t *r, int64_t off, size_t max)
{
    if (r->st != LS_OK || r->bytes.len == 0) return 0;
    int b = batch_of(off);
    size_t from = truth.pos[b];
    if (r->bytes.len > truth.bytes.len - from) return 0;
    if (memcmp(r->bytes.data, truth.bytes.data + from, r->bytes.len) != 0) return 0;
    int e = b;
    while (e < truth.n && truth.pos[e] < from + r->bytes.len)
        e++;
    if (truth.pos[e] != from + r->bytes.len) return 0; /* ends on a batch boundary */
    return e - b == 1 || r->bytes.len <= max;
}

TEST(cold_read_fetches_footer_and_block_not_object)
{
    CHECK(build_log());
    ls_logstore_t *ls = open_store(CACHE_MAX);
    /* the third object's first batch (mid-batch): a block starts there */
    int64_t off = truth.base[2 * 6 * PER_FLUSH] + 1;
    read_got_t r = read_at(ls, off, 1);
    CHECK(read_is_exact(&r, off, 1));
    ls_buf_free(&r.bytes);
    ls_logstore_stats_t s;
    ls_logstore_stats(ls, &s);
    CHECK_EQ_INT(s.footer_gets, 1);
    CHECK_EQ_INT(s.store_gets, 2); /* the footer, then one block */
    /* a block: whole batches of about BLOCK bytes (plus at most one batch),
     * far less than the ~300 KiB object */
    ls_objinfo_t *v;
    size_t n;
    CHECK_EQ_INT(ls_objstore_list(os, "co/", &v, &n), LS_OK);
    uint64_t smallest = UINT64_MAX;
    for (size_t i = 0; i < n; i++)
        if (v[i].size < smallest) smallest = v[i].size;
    ls_objinfo_free(v, n);
    CHECK(s.store_get_bytes < BLOCK + 4096 + LS_CO_FOOTER_SIZE(PER_FLUSH * 6));
    CHECK(smallest > 8 * s.store_get_bytes);
    /* the rest of the block is read-ahead: the next batches (a block holds at
     * least BLOCK / 4 KiB of them) come from the cache */
    int b = batch_of(off);
    read_got_t r2 = read_at(ls, truth.base[b + 1], 1);
    CHECK(read_is_exact(&r2, truth.base[b + 1], 1));
    ls_buf_free(&r2.bytes);
    ls_logstore_stats(ls, &s);
    CHECK_EQ_INT(s.store_gets, 2);
    /* a sequential catch-up from the start reads every byte once (blocks do
     * not overlap, read-ahead never reads a block twice) plus each footer
     * once */
    close_store(ls);
    ls = open_store(64 << 20);
    size_t got = 0;
    for (int64_t o = 0; o < truth.next;) {
        read_got_t q = read_at(ls, o, 64 << 10);
        CHECK(read_is_exact(&q, o, 64 << 10));
        got += q.bytes.len;
        size_t end = truth.pos[batch_of(o)] + q.bytes.len;
        int e = batch_of(o);
        while (e < truth.n && truth.pos[e] < end)
            e++;
        o = e < truth.n ? truth.base[e] : truth.next;
        ls_buf_free(&q.bytes);
    }
    CHECK_EQ_INT(got, truth.bytes.len);
    ls_logstore_stats(ls, &s);
    CHECK_EQ_INT(s.footer_gets, FLUSHES / 6);
    /* read-ahead: most blocks were fetched before a read asked for them */
    CHECK(s.cache_misses * 2 < s.store_gets);
    CHECK_EQ_INT(s.store_get_bytes,
                 truth.bytes.len + FLUSHES / 6 * LS_CO_FOOTER_SIZE(PER_FLUSH * 6));
    close_store(ls);
    free_log();
}

TEST(random_ranged_reads_stay_bounded_and_exact)
{
    CHECK(build_log());
    ls_logstore_t *ls = open_store(CACHE_MAX);
    srand(7);
    size_t peak = 0;
    for (int i = 0; i < 3000; i++) {
        int64_t off = rand() % truth.next;
        size_t max = 1 + (size_t)(rand() % (48 << 10));
        read_got_t r = read_at(ls, off, max);
        CHECK(read_is_exact(&r, off, max));
        ls_buf_free(&r.bytes);
        ls_logstore_stats_t s;
        ls_logstore_stats(ls, &s);
        CHECK((size_t)s.cache_bytes <= CACHE_MAX);
        if ((size_t)s.cache_bytes > peak) peak = (size_t)s.cache_bytes;
    }
    ls_logstore_stats_t s;
    ls_logstore_stats(ls, &s);
    CHECK(s.cache_hits > 0 && s.cache_misses > 0);
    CHECK(peak > CACHE_MAX / 2); /* the limit was exercised, not idle */
    /* evicted blocks' buffers came back for later reads (a third or more of
     * them here, where block sizes vary widely; those reads were exact above,
     * so no stale bytes of a recycled buffer showed) */
    CHECK(s.read_buffers_reused * 2 > s.read_buffers_allocated);
    close_store(ls);
    /* no cache at all: every read still makes progress and is exact */
    ls = open_store(0);
    for (int i = 0; i < 200; i++) {
        int64_t off = rand() % truth.next;
        read_got_t r = read_at(ls, off, 32 << 10);
        CHECK(read_is_exact(&r, off, 32 << 10));
        ls_buf_free(&r.bytes);
    }
    close_store(ls);
    free_log();
}

/* The CO keys in order and each one's first offset. */
static int co_objects(char keys[][128], int64_t *first, int max)
{
    ls_objinfo_t *v;
    size_t n;
    if (ls_objstore_list(os, "co/", &v, &n) != LS_OK) return 0;
    int k = 0;
    for (size_t i = 0; i < n && k < max; i++, k++) {
        snprintf(keys[k], 128, "%s", v[i].key);
        int64_t id, last;
        ls_co_key_parse(v[i].key, &id, &first[k], &last);
    }
    ls_objinfo_free(v, n);
    return k;
}

static void rewrite(const char *key, const ls_buf_t *b)
{
    struct iovec iov = {b->data, b->len};
    ls_objstore_put(os, key, &iov, 1, 0);
}

TEST(corrupt_objects_fail_precisely_without_crash)
{
    CHECK(build_log());
    char keys[8][128];
    int64_t first[8];
    CHECK_EQ_INT(co_objects(keys, first, 8), 5);
    ls_buf_t b;
    ls_buf_init(&b);
    /* object 0 stays intact; 1: truncated (the end of the footer gone) */
    CHECK_EQ_INT(ls_objstore_get(os, keys[1], 0, UINT64_MAX, &b), LS_OK);
    b.len -= 30;
    rewrite(keys[1], &b);
    /* 2: a flipped bit in the footer's entry table (CRC mismatch) */
    CHECK_EQ_INT(ls_objstore_get(os, keys[2], 0, UINT64_MAX, &b), LS_OK);
    b.data[b.len - 60] ^= 0x10;
    rewrite(keys[2], &b);
    /* 3: a valid footer (right CRC) that disagrees with the index entry */
    CHECK_EQ_INT(ls_objstore_get(os, keys[3], 0, UINT64_MAX, &b), LS_OK);
    {
        int64_t id, f, l;
        ls_co_entry_t *e;
        uint32_t n;
        char why[200];
        CHECK_EQ_INT(ls_co_footer_decode(b.data, b.len, &id, &f, &l, &e, &n, why, sizeof why),
                     LS_OK);
        b.len -= LS_CO_FOOTER_SIZE(n);
        ls_co_footer_encode(&b, id, f + 1, l, e, n);
        ls_free(e);
    }
    rewrite(keys[3], &b);
    /* 4: the body's first batch claims more bytes than its block holds */
    CHECK_EQ_INT(ls_objstore_get(os, keys[4], 0, UINT64_MAX, &b), LS_OK);
    ls_be32_put(b.data + LS_CO_HEADER_SIZE + 8, 1u << 30);
    rewrite(keys[4], &b);
    ls_buf_free(&b);

    ls_logstore_t *ls = open_store(CACHE_MAX);
    for (int k = 1; k < 5; k++) {
        read_got_t r = read_at(ls, first[k] + 2, 1 << 20);
        CHECK_EQ_INT(r.st, LS_ECORRUPT);
        CHECK_EQ_INT(r.bytes.len, 0);
        ls_buf_free(&r.bytes);
        /* again: nothing of a corrupt object was cached */
        r = read_at(ls, first[k], 100);
        CHECK_EQ_INT(r.st, LS_ECORRUPT);
        ls_buf_free(&r.bytes);
    }
    /* the intact object reads exactly; a read running from it into a corrupt
     * one returns what it had, the next read there gets the error */
    read_got_t ok = read_at(ls, 1, 1 << 20);
    CHECK(read_is_exact(&ok, 1, 1 << 20));
    ls_buf_free(&ok.bytes);
    int tail = batch_of(first[1] - 1);
    read_got_t partial = read_at(ls, truth.base[tail], 1 << 20);
    CHECK_EQ_INT(partial.st, LS_OK);
    CHECK_EQ_INT(partial.bytes.len, truth.pos[tail + 1] - truth.pos[tail]);
    CHECK(memcmp(partial.bytes.data, truth.bytes.data + truth.pos[tail], partial.bytes.len) == 0);
    ls_buf_free(&partial.bytes);
    ls_logstore_stats_t s;
    ls_logstore_stats(ls, &s);
    CHECK((size_t)s.cache_bytes <= CACHE_MAX);
    close_store(ls);
    free_log();
}

int main(void)
{
    uv_loop_init(&loop);
    RUN(cold_read_fetches_footer_and_block_not_object);
    RUN(random_ranged_reads_stay_bounded_and_exact);
    RUN(corrupt_objects_fail_precisely_without_crash);
    uv_loop_close(&loop);
    UNIT_DONE();
}
