/* WAL object footer and log metadata records: round trips and corruption. */
#include <string.h>

#include "base/alloc.h"
#include "log/log_meta.h"
#include "log/read_cache.h"
#include "log/wal_format.h"
#include "unit.h"

static void build_object(ls_buf_t *obj, ls_wal_section_t *secs, uint32_t n)
{
    ls_buf_init(obj);
    ls_buf_append(obj, LS_WAL_MAGIC, 8);
    for (uint32_t i = 0; i < n; i++) {
        secs[i].pos = obj->len;
        for (uint32_t j = 0; j < secs[i].len; j++)
            ls_buf_append_u8(obj, (uint8_t)(i + j));
    }
    ls_wal_footer_encode(secs, n, obj);
}

TEST(wal_footer_round_trip)
{
    ls_wal_section_t secs[3] = {
        {.log_id = 1, .len = 100, .entries = 2, .offsets = 7, .max_timestamp = 123},
        {.log_id = (int64_t)1 << 40, .len = 1, .entries = 1, .offsets = 1, .max_timestamp = -1},
        {.log_id = 5, .len = 0, .entries = 0, .offsets = 0, .max_timestamp = 9},
    };
    ls_buf_t obj;
    build_object(&obj, secs, 3);
    ls_wal_section_t *out;
    uint32_t n;
    char why[200];
    CHECK_EQ_INT(ls_wal_footer_decode(obj.data, obj.len, &out, &n, why, sizeof why), LS_OK);
    CHECK_EQ_INT(n, 3);
    for (int i = 0; i < 3; i++) {
        CHECK_EQ_INT(out[i].log_id, secs[i].log_id);
        CHECK_EQ_INT(out[i].pos, secs[i].pos);
        CHECK_EQ_INT(out[i].len, secs[i].len);
        CHECK_EQ_INT(out[i].entries, secs[i].entries);
        CHECK_EQ_INT(out[i].offsets, secs[i].offsets);
        CHECK_EQ_INT(out[i].max_timestamp, secs[i].max_timestamp);
    }
    ls_free(out);
    ls_buf_free(&obj);
}

TEST(wal_footer_rejects_corruption)
{
    ls_wal_section_t secs[2] = {{.log_id = 1, .len = 10}, {.log_id = 2, .len = 20}};
    ls_buf_t obj;
    build_object(&obj, secs, 2);
    ls_wal_section_t *out;
    uint32_t n;
    char why[200];
    /* every single-byte flip in the footer is caught */
    size_t footer = obj.len - LS_WAL_TRAILER_SIZE - 2 * LS_WAL_SECTION_SIZE;
    for (size_t i = footer; i < obj.len; i++) {
        obj.data[i] ^= 0x40;
        CHECK_EQ_INT(ls_wal_footer_decode(obj.data, obj.len, &out, &n, why, sizeof why),
                     LS_ECORRUPT);
        CHECK(strstr(why, "byte") != NULL);
        obj.data[i] ^= 0x40;
    }
    /* truncations never read out of bounds */
    for (size_t len = 0; len < obj.len; len++)
        CHECK_EQ_INT(ls_wal_footer_decode(obj.data, len, &out, &n, why, sizeof why), LS_ECORRUPT);
    ls_buf_free(&obj);
}

TEST(head_round_trip_and_truncation)
{
    ls_pstate_t ps[2] = {
        {.producer_id = 77, .epoch = 3, .nbatches = 2, .batches = {{0, 4, 100}, {5, 9, 105}}},
        {.producer_id = 78, .epoch = 0, .nbatches = 0}};
    ls_head_t h = {.next_offset = 1000,
                   .log_start = 10,
                   .size_bytes = 4096,
                   .max_timestamp = 55,
                   .max_timestamp_offset = 999,
                   .fenced = true,
                   .producers = ps,
                   .nproducers = 2};
    ls_buf_t b;
    ls_buf_init(&b);
    ls_head_encode(&h, &b);
    ls_head_t d;
    CHECK_EQ_INT(ls_head_decode(b.data, b.len, &d), LS_OK);
    CHECK_EQ_INT(d.next_offset, 1000);
    CHECK_EQ_INT(d.log_start, 10);
    CHECK_EQ_INT(d.size_bytes, 4096);
    CHECK(d.fenced);
    CHECK_EQ_INT(d.nproducers, 2);
    CHECK_EQ_INT(d.producers[0].batches[1].base_offset, 105);
    CHECK_EQ_INT(d.producers[0].batches[1].last_seq, 9);
    CHECK_EQ_INT(d.producers[1].producer_id, 78);
    ls_head_clear(&d);
    for (size_t len = 0; len < b.len; len++) {
        CHECK_EQ_INT(ls_head_decode(b.data, len, &d), LS_ECORRUPT);
    }
    ls_buf_free(&b);
}

TEST(index_entry_round_trip_and_keys)
{
    ls_idx_entry_t e = {.kind = LS_IDX_WAL,
                        .first_offset = 5,
                        .last_offset = 9,
                        .max_timestamp = 77,
                        .entries = 2,
                        .pos = 8,
                        .len = 300,
                        .object = "wal/0001-1-abc-000001.wal"};
    ls_buf_t b;
    ls_buf_init(&b);
    ls_idx_encode(&e, &b);
    ls_idx_entry_t d;
    CHECK_EQ_INT(ls_idx_decode(b.data, b.len, &d), LS_OK);
    CHECK_EQ_INT(d.first_offset, 5);
    CHECK_EQ_INT(d.last_offset, 9);
    CHECK_EQ_INT(d.len, 300);
    CHECK(strcmp(d.object, e.object) == 0);
    ls_idx_clear(&d);
    for (size_t len = 0; len < b.len; len++)
        CHECK_EQ_INT(ls_idx_decode(b.data, len, &d), LS_ECORRUPT);
    ls_buf_free(&b);
    /* keys sort by last offset, so a ceiling lookup finds the covering entry */
    char k1[80], k2[80], k3[80];
    /* a key-compacted entry with a delete horizon: version 2, round trip;
     * a horizon on another kind, or a zero one, is not canonical */
    ls_idx_entry_t k = {.kind = LS_IDX_KCO,
                        .first_offset = 0,
                        .last_offset = 99,
                        .max_timestamp = -1,
                        .entries = 0,
                        .pos = 8,
                        .len = 0,
                        .object = "co/x",
                        .delete_horizon_ms = 1700000000000LL};
    ls_buf_init(&b);
    ls_idx_encode(&k, &b);
    CHECK_EQ_INT(b.data[0], 2);
    CHECK_EQ_INT(ls_idx_decode(b.data, b.len, &d), LS_OK);
    CHECK_EQ_INT(d.delete_horizon_ms, 1700000000000LL);
    CHECK_EQ_INT(d.kind, LS_IDX_KCO);
    ls_idx_clear(&d);
    b.data[1] = LS_IDX_CO;
    CHECK_EQ_INT(ls_idx_decode(b.data, b.len, &d), LS_ECORRUPT);
    ls_buf_free(&b);
    k.delete_horizon_ms = 0;
    ls_buf_init(&b);
    ls_idx_encode(&k, &b);
    CHECK_EQ_INT(b.data[0], 1);
    ls_buf_free(&b);
    ls_log_idx_key(k1, sizeof k1, 3, 9);
    ls_log_idx_key(k2, sizeof k2, 3, 10);
    ls_log_idx_key(k3, sizeof k3, 3, 100000000000LL);
    CHECK(strcmp(k1, k2) < 0 && strcmp(k2, k3) < 0);
    char hk[64];
    ls_log_head_key(hk, sizeof hk, 0x123456789aLL);
    CHECK_EQ_INT(ls_log_id_from_head_key(hk, strlen(hk)), 0x123456789aLL);
    CHECK_EQ_INT(ls_log_id_from_head_key("/ls/head/xyz", 12), -1);
}

/* Found by fuzz_log_formats: decoders must reject what they cannot re-encode. */
TEST(regress_noncanonical_records_rejected)
{
    ls_head_t h = {.next_offset = 1, .max_timestamp = -1, .max_timestamp_offset = -1};
    ls_buf_t b;
    ls_buf_init(&b);
    ls_head_encode(&h, &b);
    b.data[1] = 0xff; /* unknown flag bits */
    ls_head_t d;
    CHECK_EQ_INT(ls_head_decode(b.data, b.len, &d), LS_ECORRUPT);
    ls_buf_free(&b);
    ls_idx_entry_t e = {.kind = LS_IDX_WAL, .first_offset = 1, .last_offset = 1, .object = "ab"};
    ls_buf_init(&b);
    ls_idx_encode(&e, &b);
    b.data[b.len - 1] = 0; /* NUL inside the object key */
    ls_idx_entry_t de;
    CHECK_EQ_INT(ls_idx_decode(b.data, b.len, &de), LS_ECORRUPT);
    ls_buf_free(&b);
}

static size_t entry(uint8_t *p, int records, uint8_t fill)
{
    memset(p, fill, 70);
    ls_be32_put(p + 8, 70 - 12);
    ls_be32_put(p + 23, (uint32_t)(records - 1));
    ls_be64_put(p + 35, 1000 + fill);
    return 70;
}

TEST(read_cache_rebases_and_bounds)
{
    /* 600 bytes: one run (its bytes plus its tables, ~450) fits, two do not */
    ls_read_cache_t *c = ls_read_cache_new(600);
    ls_chunk_t *ch = ls_chunk_new(210);
    entry(ch->data, 2, 1);
    entry(ch->data + 70, 1, 2);
    entry(ch->data + 140, 3, 3);
    char why[200];
    ls_cache_run_t *r =
        ls_read_cache_insert(c, 9, 50, 55, false, ch, 0, 210, "obj", why, sizeof why);
    CHECK(r);
    CHECK_EQ_INT(ls_be64_get(ch->data), 50);
    CHECK_EQ_INT(ls_be64_get(ch->data + 70), 52);
    CHECK_EQ_INT(ls_be64_get(ch->data + 140), 53);
    CHECK_EQ_INT(ls_cache_run_find(r, 52), 1);
    CHECK_EQ_INT(ls_cache_run_find(r, 54), 2);
    /* wrong offset count is corruption, named with the source */
    CHECK(!ls_read_cache_insert(c, 9, 50, 60, false, ch, 0, 210, "objX", why, sizeof why));
    CHECK(strstr(why, "objX") != NULL);
    /* a second run evicts the first */
    ls_chunk_t *ch2 = ls_chunk_new(140);
    entry(ch2->data, 1, 4);
    entry(ch2->data + 70, 1, 5);
    CHECK(ls_read_cache_insert(c, 9, 56, 57, false, ch2, 0, 140, "obj2", why, sizeof why));
    CHECK(ls_read_cache_get(c, 9, 55) == NULL);
    CHECK(ls_read_cache_get(c, 9, 57) != NULL);
    CHECK(ls_read_cache_bytes(c) <= 600);
    ls_chunk_release(ch);
    ls_chunk_release(ch2);
    ls_read_cache_free(c);
}

int main(void)
{
    RUN(wal_footer_round_trip);
    RUN(wal_footer_rejects_corruption);
    RUN(head_round_trip_and_truncation);
    RUN(index_entry_round_trip_and_keys);
    RUN(regress_noncanonical_records_rejected);
    RUN(read_cache_rebases_and_bounds);
    UNIT_DONE();
}
