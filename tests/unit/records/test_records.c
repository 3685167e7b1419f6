/* RecordBatch v2 validation and iteration. Batches are built here byte by byte
 * (our own encoder, independent of records.c), then broken in the ways a buggy
 * or hostile producer would break them; each break must get the outcome class
 * that maps to the right Kafka error code, and a reason naming where. */
#include <stdint.h>
#include <stdlib.h>

#include "base/buf.h"
#include "base/compress.h"
#include "base/crc32c.h"
#include "records/records.h"
#include "unit.h"

#define MAXB ((size_t)1 << 20)

/* ---- encoder ------------------------------------------------------------- */

static void put_uleb(ls_buf_t *b, uint64_t v)
{
    while (v >= 0x80) {
        ls_buf_append_u8(b, (uint8_t)(v | 0x80));
        v >>= 7;
    }
    ls_buf_append_u8(b, (uint8_t)v);
}

static void put_varlong(ls_buf_t *b, int64_t v)
{
    put_uleb(b, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

static void put_varint(ls_buf_t *b, int32_t v) { put_varlong(b, v); }

static void put_bytes(ls_buf_t *b, const char *s, int32_t len)
{
    put_varint(b, len);
    if (len > 0) ls_buf_append(b, s, (size_t)len);
}

static void put_be(ls_buf_t *b, uint64_t v, int n)
{
    for (int i = n - 1; i >= 0; i--)
        ls_buf_append_u8(b, (uint8_t)(v >> (8 * i)));
}

typedef struct hdr {
    const char *key;
    const char *value; /* NULL: null value */
} hdr_t;

/* One record: key/value NULL mean null. */
static void put_record(ls_buf_t *recs, int32_t off_delta, int64_t ts_delta, const char *key,
                       const char *value, int32_t vlen, const hdr_t *h, int nh)
{
    ls_buf_t body;
    ls_buf_init(&body);
    ls_buf_append_u8(&body, 0); /* attributes */
    put_varlong(&body, ts_delta);
    put_varint(&body, off_delta);
    put_bytes(&body, key, key ? (int32_t)strlen(key) : -1);
    put_bytes(&body, value, value ? vlen : -1);
    put_varint(&body, nh);
    for (int i = 0; i < nh; i++) {
        put_bytes(&body, h[i].key, (int32_t)strlen(h[i].key));
        put_bytes(&body, h[i].value, h[i].value ? (int32_t)strlen(h[i].value) : -1);
    }
    put_varint(recs, (int32_t)body.len);
    ls_buf_append(recs, body.data, body.len);
    ls_buf_free(&body);
}

#define BASE_TS 1700000000000LL

/* Wraps a records section into a batch; compresses it with codec (the codec
 * id goes into attributes, so callers may also pass a raw pre-built payload
 * with precompressed = 1). */
static void put_batch(ls_buf_t *out, int codec, int16_t extra_attrs, int32_t count,
                      int32_t last_delta, const ls_buf_t *recs, int precompressed)
{
    size_t start = out->len;
    put_be(out, 1000, 8);     /* baseOffset: the broker rewrites it */
    put_be(out, 0, 4);        /* batchLength, patched below */
    put_be(out, 5, 4);        /* partitionLeaderEpoch */
    ls_buf_append_u8(out, 2); /* magic */
    put_be(out, 0, 4);        /* crc, patched below */
    put_be(out, (uint16_t)(codec | extra_attrs), 2);
    put_be(out, (uint32_t)last_delta, 4);
    put_be(out, (uint64_t)BASE_TS, 8);
    put_be(out, (uint64_t)(BASE_TS + 99), 8);
    put_be(out, (uint64_t)-1, 8); /* producerId */
    put_be(out, 0xffff, 2);       /* producerEpoch */
    put_be(out, 0xffffffff, 4);   /* baseSequence */
    put_be(out, (uint32_t)count, 4);
    if (codec == LS_CODEC_NONE || precompressed)
        ls_buf_append(out, recs->data, recs->len);
    else if (ls_compress(codec, recs->data, recs->len, out) != LS_OK)
        abort();
    uint8_t *b = out->data + start;
    size_t size = out->len - start;
    ls_be32_put(b + LS_RB_OFF_LENGTH, (uint32_t)(size - 12));
    ls_be32_put(b + LS_RB_OFF_CRC, ls_crc32c(0, b + 21, size - 21));
}

/* Re-seals the CRC after a test edits a batch, so the edit itself is what
 * gets judged. */
static void reseal(uint8_t *b)
{
    size_t size = 12 + ls_be32_get(b + LS_RB_OFF_LENGTH);
    ls_be32_put(b + LS_RB_OFF_CRC, ls_crc32c(0, b + 21, size - 21));
}

/* n records with a mix of null/empty keys and values and some headers:
 * record i has key "key-i" (null when i%3==2, empty when i%5==4), value
 * "value-i" (null when i%4==3), and i%3 headers. */
static void std_records(ls_buf_t *recs, int n)
{
    for (int i = 0; i < n; i++) {
        char key[32], val[32];
        snprintf(key, sizeof key, "key-%d", i);
        snprintf(val, sizeof val, "value-%d", i);
        hdr_t h[2] = {{"trace", "abc"}, {"empty", NULL}};
        put_record(recs, i, i * 10,
                   i % 3 == 2   ? NULL
                   : i % 5 == 4 ? ""
                                : key,
                   i % 4 == 3 ? NULL : val, (int32_t)strlen(val), h, i % 3);
    }
}

static void std_batch(ls_buf_t *out, int codec, int n)
{
    ls_buf_t recs;
    ls_buf_init(&recs);
    std_records(&recs, n);
    put_batch(out, codec, 0, n, n - 1, &recs, 0);
    ls_buf_free(&recs);
}

static ls_rb_result validate(const ls_buf_t *b, char *why)
{
    ls_batch_info_t infos[8];
    int n = -1;
    why[0] = 0;
    return ls_records_validate(b->data, b->len, MAXB, infos, 8, &n, why, 256);
}

/* ---- iteration checker ----------------------------------------------------- */

typedef struct seen {
    int n, stop_after;
    int bad;
    int64_t ts[64];
} seen_t;

static int check_rec(void *arg, const ls_record_view_t *r)
{
    seen_t *s = arg;
    int i = s->n++;
    char key[32], val[32];
    snprintf(key, sizeof key, "key-%d", i);
    snprintf(val, sizeof val, "value-%d", i);
    if (r->offset_delta != i) s->bad++;
    if (i < 64) s->ts[i] = r->timestamp;
    if (i % 3 == 2) {
        if (r->key || r->key_len != -1) s->bad++;
    } else if (i % 5 == 4) {
        if (!r->key || r->key_len != 0) s->bad++;
    } else if (r->key_len != (int32_t)strlen(key) || memcmp(r->key, key, strlen(key)) != 0) {
        s->bad++;
    }
    if (i % 4 == 3) {
        if (r->value || r->value_len != -1) s->bad++;
    } else if (r->value_len != (int32_t)strlen(val) || memcmp(r->value, val, strlen(val)) != 0) {
        s->bad++;
    }
    if (r->header_count != i % 3) s->bad++;
    /* headers: "trace"="abc" is 1+5+1+3 bytes, "empty"=null is 1+5+1 */
    size_t hl = (i % 3 >= 1 ? 10 : 0) + (i % 3 >= 2 ? 7 : 0);
    if (r->headers_len != hl || (hl && memcmp(r->headers + 1, "trace", 5) != 0)) s->bad++;
    return s->stop_after && s->n >= s->stop_after;
}

/* ---- tests ---------------------------------------------------------------- */

TEST(uncompressed_batch_validates_and_iterates)
{
    ls_buf_t b;
    ls_buf_init(&b);
    std_batch(&b, LS_CODEC_NONE, 12);
    ls_batch_info_t info;
    int n = 0;
    char why[256] = "";
    CHECK_EQ_INT(ls_records_validate(b.data, b.len, MAXB, &info, 1, &n, why, sizeof why), LS_RB_OK);
    CHECK_EQ_INT(n, 1);
    CHECK_EQ_INT(info.pos, 0);
    CHECK_EQ_INT(info.size, b.len);
    CHECK_EQ_INT(info.base_offset, 1000);
    CHECK_EQ_INT(info.leader_epoch, 5);
    CHECK_EQ_INT(info.magic, 2);
    CHECK_EQ_INT(info.codec, 0);
    CHECK_EQ_INT(info.record_count, 12);
    CHECK_EQ_INT(info.last_offset_delta, 11);
    CHECK_EQ_INT(info.base_timestamp, BASE_TS);
    CHECK_EQ_INT(info.max_timestamp, BASE_TS + 99);
    CHECK_EQ_INT(info.producer_id, -1);
    CHECK_EQ_INT(info.producer_epoch, -1);
    CHECK_EQ_INT(info.base_sequence, -1);
    CHECK(!info.transactional && !info.control && !info.timestamp_log_append);

    seen_t s = {0};
    CHECK_EQ_INT(ls_records_foreach(b.data, b.len, MAXB, check_rec, &s), LS_RB_OK);
    CHECK_EQ_INT(s.n, 12);
    CHECK_EQ_INT(s.bad, 0);
    CHECK_EQ_INT(s.ts[0], BASE_TS);
    CHECK_EQ_INT(s.ts[7], BASE_TS + 70);
    ls_buf_free(&b);
}

TEST(every_codec_validates_and_iterates)
{
    for (int codec = LS_CODEC_GZIP; codec <= LS_CODEC_ZSTD; codec++) {
        ls_buf_t b;
        ls_buf_init(&b);
        std_batch(&b, codec, 40);
        char why[256];
        ls_rb_result r = validate(&b, why);
        if (r != LS_RB_OK) printf("  %s: %s\n", ls_codec_name(codec), why);
        CHECK_EQ_INT(r, LS_RB_OK);
        seen_t s = {0};
        CHECK_EQ_INT(ls_records_foreach(b.data, b.len, MAXB, check_rec, &s), LS_RB_OK);
        CHECK_EQ_INT(s.n, 40);
        CHECK_EQ_INT(s.bad, 0);
        ls_buf_free(&b);
    }
}

TEST(recompress_between_every_pair_of_codecs)
{
    /* the broker's compression.type: records and header fields survive, the
     * codec bits, length and CRC are the new ones */
    for (int from = LS_CODEC_NONE; from <= LS_CODEC_ZSTD; from++) {
        for (int to = LS_CODEC_NONE; to <= LS_CODEC_ZSTD; to++) {
            ls_buf_t b, out;
            ls_buf_init(&b);
            ls_buf_init(&out);
            std_batch(&b, from, 40);
            ls_batch_info_t infos[2];
            int n = 0;
            char why[256] = "";
            CHECK_EQ_INT(ls_records_validate(b.data, b.len, MAXB, infos, 2, &n, why, sizeof why),
                         LS_RB_OK);
            int level = to == LS_CODEC_ZSTD ? 19 : LS_COMPRESS_LEVEL_DEFAULT;
            CHECK_EQ_INT(
                ls_records_recompress(b.data, &infos[0], MAXB, to, level, &out, why, sizeof why),
                LS_RB_OK);
            ls_batch_info_t again[2];
            CHECK_EQ_INT(
                ls_records_validate(out.data, out.len, MAXB, again, 2, &n, why, sizeof why),
                LS_RB_OK);
            CHECK_EQ_INT(again[0].codec, to);
            CHECK_EQ_INT(again[0].record_count, 40);
            CHECK(memcmp(out.data + LS_RB_OFF_LAST_OFFSET_DELTA,
                         b.data + LS_RB_OFF_LAST_OFFSET_DELTA,
                         LS_RB_HEADER_SIZE - LS_RB_OFF_LAST_OFFSET_DELTA) == 0);
            seen_t s = {0};
            CHECK_EQ_INT(ls_records_foreach(out.data, out.len, MAXB, check_rec, &s), LS_RB_OK);
            CHECK_EQ_INT(s.n, 40);
            CHECK_EQ_INT(s.bad, 0);
            ls_buf_free(&b);
            ls_buf_free(&out);
        }
    }
}

TEST(java_style_xerial_snappy_batch)
{
    ls_buf_t recs, x, b;
    ls_buf_init(&recs);
    ls_buf_init(&x);
    ls_buf_init(&b);
    std_records(&recs, 5);
    static const uint8_t magic[16] = {0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0,
                                      0,    0,   0,   1,   0,   0,   0,   1};
    ls_buf_append(&x, magic, sizeof magic);
    ls_buf_t blk;
    ls_buf_init(&blk);
    CHECK(ls_compress(LS_CODEC_SNAPPY, recs.data, recs.len, &blk) == LS_OK);
    put_be(&x, blk.len, 4);
    ls_buf_append(&x, blk.data, blk.len);
    put_batch(&b, LS_CODEC_SNAPPY, 0, 5, 4, &x, 1);
    char why[256];
    CHECK_EQ_INT(validate(&b, why), LS_RB_OK);
    seen_t s = {0};
    CHECK_EQ_INT(ls_records_foreach(b.data, b.len, MAXB, check_rec, &s), LS_RB_OK);
    CHECK_EQ_INT(s.n, 5);
    CHECK_EQ_INT(s.bad, 0);
    ls_buf_free(&recs);
    ls_buf_free(&x);
    ls_buf_free(&blk);
    ls_buf_free(&b);
}

typedef struct small_seen {
    int n, bad;
} small_seen_t;

static int check_small(void *arg, const ls_record_view_t *r)
{
    small_seen_t *s = arg;
    int i = s->n++;
    if (r->offset_delta != i || r->key || r->key_len != -1 || r->value_len != 100 ||
        r->value[0] != (char)('a' + i % 26) || r->header_count != 0 ||
        r->timestamp != BASE_TS + i / 30)
        s->bad++;
    return 0;
}

/* The Java producer's batch at its defaults with 100-byte values (issue 32:
 * the produce path's parse reads one-byte varints inline): 148 records, so
 * offsetDeltas from 64 on take two bytes, as does every value length, beside
 * one-byte attributes, null keys and header counts. Every record comes back
 * whole; a continuation bit set on a one-byte field, or the last byte of a
 * two-byte one cut off, is refused. */
TEST(small_records_mix_one_and_two_byte_varints)
{
    enum { N = 148 };
    ls_buf_t recs, b;
    ls_buf_init(&recs);
    ls_buf_init(&b);
    char val[100];
    for (int i = 0; i < N; i++) {
        memset(val, 'a' + i % 26, sizeof val);
        put_record(&recs, i, i / 30, NULL, val, 100, NULL, 0);
    }
    put_batch(&b, LS_CODEC_NONE, 0, N, N - 1, &recs, 0);
    char why[256];
    CHECK_EQ_INT(validate(&b, why), LS_RB_OK);
    small_seen_t seen = {0};
    CHECK_EQ_INT(ls_records_foreach(b.data, b.len, MAXB, check_small, &seen), LS_RB_OK);
    CHECK_EQ_INT(seen.n, N);
    CHECK_EQ_INT(seen.bad, 0);
    /* record 0: length, attributes, timestampDelta 0, offsetDelta 0 (byte 3),
     * key -1 (byte 4), value length 100 (bytes 5-6: 0xc8 0x01) */
    uint8_t *r0 = b.data + LS_RB_HEADER_SIZE + 1;
    CHECK_EQ_INT(r0[3], 0);
    CHECK_EQ_INT(r0[5], 0xc8);
    r0[3] |= 0x80; /* offsetDelta now runs into the key's byte */
    reseal(b.data);
    CHECK_EQ_INT(validate(&b, why), LS_RB_INVALID);
    r0[3] &= 0x7f;
    r0[6] = 0x81; /* value length's last byte now says "more follows" */
    reseal(b.data);
    CHECK_EQ_INT(validate(&b, why), LS_RB_INVALID);
    r0[6] = 0x01;
    reseal(b.data);
    CHECK_EQ_INT(validate(&b, why), LS_RB_OK);
    ls_buf_free(&recs);
    ls_buf_free(&b);
}

TEST(several_batches_fill_infos)
{
    ls_buf_t b;
    ls_buf_init(&b);
    std_batch(&b, LS_CODEC_NONE, 3);
    size_t second = b.len;
    std_batch(&b, LS_CODEC_ZSTD, 4);
    size_t third = b.len;
    std_batch(&b, LS_CODEC_LZ4, 1);
    ls_batch_info_t infos[3];
    int n = 0;
    char why[256];
    CHECK_EQ_INT(ls_records_validate(b.data, b.len, MAXB, infos, 3, &n, why, sizeof why), LS_RB_OK);
    CHECK_EQ_INT(n, 3);
    CHECK_EQ_INT(infos[1].pos, second);
    CHECK_EQ_INT(infos[2].pos, third);
    CHECK_EQ_INT(infos[1].record_count, 4);
    CHECK_EQ_INT(infos[1].codec, LS_CODEC_ZSTD);
    CHECK_EQ_INT(infos[2].size, b.len - third);
    /* Produce v3+ allows one batch per partition: callers pass max_infos 1 */
    CHECK_EQ_INT(ls_records_validate(b.data, b.len, MAXB, infos, 1, &n, why, sizeof why),
                 LS_RB_INVALID);
    CHECK(strstr(why, "batch 1 at byte") != NULL);
    ls_buf_free(&b);
}

TEST(real_kafka_batch_validates)
{
    /* Captured from a Kafka 3.x broker (see test_crc32c.c). */
    static const uint8_t kb[] = {
        0,    0,    0,    0,    0,    0,    0,    0,    0,    0,    0,    0x4f, 0,
        0,    0,    1,    2,    0xb0, 0x69, 0x45, 0x7c, 0,    0,    0,    0,    0,
        0,    0,    0,    0x01, 0x91, 0xe0, 0x5a, 0xf8, 0x18, 0,    0,    0x01, 0x91,
        0xe0, 0x5a, 0xf8, 0x18, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        0xff, 0xff, 0xff, 0xff, 0xff, 0,    0,    0,    1,    0x3a, 0,    0,    0,
        0x01, 0x2e, 0x01, 0x0c, 0,    0x11, 'm',  'e',  't',  'a',  'd',  'a',  't',
        'a',  '.',  'v',  'e',  'r',  's',  'i',  'o',  'n',  0,    0x14, 0,    0};
    ls_batch_info_t info;
    int n;
    char why[256] = "";
    CHECK_EQ_INT(ls_records_validate(kb, sizeof kb, MAXB, &info, 1, &n, why, sizeof why), LS_RB_OK);
    CHECK_EQ_INT(info.base_timestamp, 1726045943832LL);
}

TEST(base_offset_rewrite_keeps_batch_valid)
{
    /* baseOffset and leader epoch lie outside the CRC: the broker rewrites
     * them on read without resealing. */
    ls_buf_t b;
    ls_buf_init(&b);
    std_batch(&b, LS_CODEC_GZIP, 3);
    ls_be64_put(b.data, 123456789);
    ls_be32_put(b.data + LS_RB_OFF_LEADER_EPOCH, 77);
    char why[256];
    CHECK_EQ_INT(validate(&b, why), LS_RB_OK);
    ls_buf_free(&b);
}

TEST(crc_mismatch_is_corrupt)
{
    ls_buf_t b;
    ls_buf_init(&b);
    std_batch(&b, LS_CODEC_NONE, 2);
    size_t second = b.len;
    std_batch(&b, LS_CODEC_NONE, 2);
    b.data[b.len - 3] ^= 1; /* inside the second batch's last record */
    char why[256];
    CHECK_EQ_INT(validate(&b, why), LS_RB_CORRUPT);
    char expect[64];
    snprintf(expect, sizeof expect, "batch 1 at byte %zu: CRC mismatch", second);
    CHECK(strstr(why, expect) == why);
    CHECK_EQ_INT(ls_records_foreach(b.data + second, b.len - second, MAXB, NULL, NULL),
                 LS_RB_CORRUPT);
    /* the attributes are covered too */
    b.len = second;
    b.data[LS_RB_OFF_ATTRIBUTES + 1] ^= 0x10;
    CHECK_EQ_INT(validate(&b, why), LS_RB_CORRUPT);
    ls_buf_free(&b);
}

TEST(truncation_is_corrupt_at_every_length)
{
    ls_buf_t b;
    ls_buf_init(&b);
    std_batch(&b, LS_CODEC_NONE, 3);
    size_t one = b.len;
    std_batch(&b, LS_CODEC_NONE, 3);
    int bad = 0;
    char why[256];
    for (size_t cut = 1; cut < b.len; cut++) {
        if (cut == one) continue;
        ls_buf_t t = {b.data, cut, cut};
        if (validate(&t, why) != LS_RB_CORRUPT) bad++;
        if (cut < one && ls_records_foreach(b.data, cut, MAXB, NULL, NULL) != LS_RB_CORRUPT) bad++;
    }
    CHECK_EQ_INT(bad, 0);
    ls_buf_t t = {b.data, one + 10, one + 10};
    CHECK_EQ_INT(validate(&t, why), LS_RB_CORRUPT);
    CHECK(strstr(why, "batch 1 at byte") == why);
    ls_buf_free(&b);
}

TEST(bad_magic)
{
    ls_buf_t b;
    ls_buf_init(&b);
    std_batch(&b, LS_CODEC_NONE, 2);
    b.data[LS_RB_OFF_MAGIC] = 1;
    char why[256];
    CHECK_EQ_INT(validate(&b, why), LS_RB_BAD_MAGIC);
    CHECK(strstr(why, "magic 1") != NULL);
    CHECK_EQ_INT(ls_records_foreach(b.data, b.len, MAXB, NULL, NULL), LS_RB_BAD_MAGIC);
    /* a v0 message set (offset, size, crc, magic 0, ...) is shorter than a
     * v2 header but still gets the magic error, not a framing one */
    static const uint8_t v0[26 + 12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 26, 1, 2, 3, 4, 0};
    ls_buf_t t = {(uint8_t *)v0, sizeof v0, sizeof v0};
    CHECK_EQ_INT(validate(&t, why), LS_RB_BAD_MAGIC);
    ls_buf_free(&b);
}

TEST(record_count_must_match_records)
{
    char why[256];
    for (int delta = -1; delta <= 1; delta += 2) {
        ls_buf_t recs, b;
        ls_buf_init(&recs);
        ls_buf_init(&b);
        std_records(&recs, 5);
        /* count and lastOffsetDelta agree with each other, not with the data */
        put_batch(&b, LS_CODEC_NONE, 0, 5 + delta, 4 + delta, &recs, 0);
        CHECK_EQ_INT(validate(&b, why), LS_RB_INVALID);
        CHECK(strstr(why, delta < 0 ? "record count too small" : "only 5 records") != NULL);
        b.len = 0;
        put_batch(&b, LS_CODEC_ZSTD, 0, 5 + delta, 4 + delta, &recs, 0);
        CHECK_EQ_INT(validate(&b, why), LS_RB_INVALID);
        ls_buf_free(&recs);
        ls_buf_free(&b);
    }
}

TEST(last_offset_delta_and_zero_count)
{
    ls_buf_t recs, b;
    ls_buf_init(&recs);
    ls_buf_init(&b);
    std_records(&recs, 3);
    char why[256];
    put_batch(&b, LS_CODEC_NONE, 0, 3, 5, &recs, 0);
    CHECK_EQ_INT(validate(&b, why), LS_RB_INVALID);
    CHECK(strstr(why, "lastOffsetDelta 5") != NULL);
    b.len = 0;
    ls_buf_t none = {0};
    put_batch(&b, LS_CODEC_NONE, 0, 0, -1, &none, 0);
    CHECK_EQ_INT(validate(&b, why), LS_RB_INVALID);
    /* an empty batch is what key compaction may leave behind: readable */
    CHECK_EQ_INT(ls_records_foreach(b.data, b.len, MAXB, NULL, NULL), LS_RB_OK);
    b.len = 0;
    put_batch(&b, LS_CODEC_NONE, 0, -3, -4, &none, 0);
    CHECK_EQ_INT(validate(&b, why), LS_RB_INVALID);
    ls_buf_free(&recs);
    ls_buf_free(&b);
}

TEST(offset_deltas_strict_on_produce_lenient_on_read)
{
    ls_buf_t recs, b;
    ls_buf_init(&recs);
    ls_buf_init(&b);
    /* deltas 0, 2, 5: what compaction leaves of a 6-record batch */
    put_record(&recs, 0, 0, "a", "1", 1, NULL, 0);
    put_record(&recs, 2, 0, "b", "2", 1, NULL, 0);
    put_record(&recs, 5, 0, "c", "3", 1, NULL, 0);
    put_batch(&b, LS_CODEC_NONE, 0, 3, 5, &recs, 0);
    char why[256];
    CHECK_EQ_INT(validate(&b, why), LS_RB_INVALID);
    CHECK_EQ_INT(ls_records_foreach(b.data, b.len, MAXB, NULL, NULL), LS_RB_OK);
    /* same with count-consistent header: record 1's delta is what is wrong */
    b.len = 0;
    put_batch(&b, LS_CODEC_NONE, 0, 3, 2, &recs, 0);
    CHECK_EQ_INT(validate(&b, why), LS_RB_INVALID);
    CHECK(strstr(why, "record 1 at byte") != NULL && strstr(why, "offsetDelta 2, expected 1"));
    /* delta beyond lastOffsetDelta is wrong even for stored data */
    CHECK_EQ_INT(ls_records_foreach(b.data, b.len, MAXB, NULL, NULL), LS_RB_INVALID);
    /* decreasing deltas are never valid */
    recs.len = 0;
    b.len = 0;
    put_record(&recs, 1, 0, "a", "1", 1, NULL, 0);
    put_record(&recs, 0, 0, "b", "2", 1, NULL, 0);
    put_batch(&b, LS_CODEC_NONE, 0, 2, 1, &recs, 0);
    CHECK_EQ_INT(validate(&b, why), LS_RB_INVALID);
    CHECK_EQ_INT(ls_records_foreach(b.data, b.len, MAXB, NULL, NULL), LS_RB_INVALID);
    ls_buf_free(&recs);
    ls_buf_free(&b);
}

/* Builds a one-record batch whose record body is given raw (after the length
 * varint, which is computed unless len_override >= -1000 says otherwise). */
static void raw_record_batch(ls_buf_t *b, const uint8_t *body, size_t n, int64_t len_override)
{
    ls_buf_t recs;
    ls_buf_init(&recs);
    put_varint(&recs, len_override > -1000 ? (int32_t)len_override : (int32_t)n);
    ls_buf_append(&recs, body, n);
    b->len = 0;
    put_batch(b, LS_CODEC_NONE, 0, 1, 0, &recs, 0);
    ls_buf_free(&recs);
}

TEST(bad_varints_are_invalid)
{
    ls_buf_t b;
    ls_buf_init(&b);
    char why[256];
    /* offsetDelta as a 6-byte varint */
    static const uint8_t six[] = {0, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00, 1, 1, 0};
    raw_record_batch(&b, six, sizeof six, -2000);
    CHECK_EQ_INT(validate(&b, why), LS_RB_INVALID);
    CHECK(strstr(why, "offsetDelta: varint") != NULL);
    /* 5 bytes whose last one carries bits beyond 32 */
    static const uint8_t wide[] = {0, 0, 0x80, 0x80, 0x80, 0x80, 0x70, 1, 1, 0};
    raw_record_batch(&b, wide, sizeof wide, -2000);
    CHECK_EQ_INT(validate(&b, why), LS_RB_INVALID);
    CHECK(strstr(why, "does not fit in 32 bits") != NULL);
    /* timestampDelta as an 11-byte varlong */
    static const uint8_t longlong[] = {0,    0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
                                       0x80, 0x80, 0x80, 0x00, 0,    1,    1,    0};
    raw_record_batch(&b, longlong, sizeof longlong, -2000);
    CHECK_EQ_INT(validate(&b, why), LS_RB_INVALID);
    CHECK(strstr(why, "timestampDelta") != NULL);
    /* varint cut by the end of the record */
    static const uint8_t cut[] = {0, 0, 0, 1, 1, 0x80};
    raw_record_batch(&b, cut, sizeof cut, -2000);
    CHECK_EQ_INT(validate(&b, why), LS_RB_INVALID);
    CHECK(strstr(why, "runs past the end") != NULL);
    /* the record length itself: 5 continuation bytes */
    ls_buf_t recs;
    ls_buf_init(&recs);
    static const uint8_t badlen[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    ls_buf_append(&recs, badlen, sizeof badlen);
    b.len = 0;
    put_batch(&b, LS_CODEC_NONE, 0, 1, 0, &recs, 0);
    CHECK_EQ_INT(validate(&b, why), LS_RB_INVALID);
    CHECK(strstr(why, "record 0 at byte 0") != NULL);
    ls_buf_free(&recs);
    ls_buf_free(&b);
}

TEST(record_fields_must_fill_record_length)
{
    ls_buf_t b;
    ls_buf_init(&b);
    char why[256];
    /* attr, ts 0, off 0, key null, value "x", 0 headers = 6 bytes */
    static const uint8_t body[] = {0, 0, 0, 1, 2, 'x', 0};
    raw_record_batch(&b, body, sizeof body, -2000);
    CHECK_EQ_INT(validate(&b, why), LS_RB_OK);
    /* length one short: the header count is cut off */
    raw_record_batch(&b, body, sizeof body, (int64_t)sizeof body - 1);
    CHECK_EQ_INT(validate(&b, why), LS_RB_INVALID);
    /* extra byte inside the record */
    static const uint8_t extra[] = {0, 0, 0, 1, 2, 'x', 0, 0};
    raw_record_batch(&b, extra, sizeof extra, -2000);
    CHECK_EQ_INT(validate(&b, why), LS_RB_INVALID);
    CHECK(strstr(why, "fields use 7 bytes") != NULL);
    /* length past the end of the batch, and negative */
    raw_record_batch(&b, body, sizeof body, 100);
    CHECK_EQ_INT(validate(&b, why), LS_RB_INVALID);
    raw_record_batch(&b, body, sizeof body, -5);
    CHECK_EQ_INT(validate(&b, why), LS_RB_INVALID);
    ls_buf_free(&b);
}

TEST(bad_lengths_and_headers_are_invalid)
{
    ls_buf_t b;
    ls_buf_init(&b);
    char why[256];
    static const uint8_t key_neg2[] = {0, 0, 0, 3, 1, 0};          /* key length -2 */
    static const uint8_t val_long[] = {0, 0, 0, 1, 20, 'a', 0};    /* value length 10 */
    static const uint8_t hdr_neg[] = {0, 0, 0, 1, 1, 1};           /* headers count -1 */
    static const uint8_t hdr_nullkey[] = {0, 0, 0, 1, 1, 2, 1, 1}; /* header key null */
    static const uint8_t hdr_many[] = {0, 0, 0, 1, 1, 0xfe, 0xff, 0xff, 0xff, 0x0f, 0, 0};
    static const uint8_t hdr_ok[] = {0, 0, 0, 1, 1, 2, 2, 'k', 1}; /* k = null */
    const struct {
        const uint8_t *p;
        size_t n;
        ls_rb_result want;
        const char *why;
    } cases[] = {
        {key_neg2, sizeof key_neg2, LS_RB_INVALID, "key: invalid length -2"},
        {val_long, sizeof val_long, LS_RB_INVALID, "value: length 10 exceeds"},
        {hdr_neg, sizeof hdr_neg, LS_RB_INVALID, "negative headers count"},
        {hdr_nullkey, sizeof hdr_nullkey, LS_RB_INVALID, "header key: invalid length -1"},
        {hdr_many, sizeof hdr_many, LS_RB_INVALID, "cannot fit"},
        {hdr_ok, sizeof hdr_ok, LS_RB_OK, ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        raw_record_batch(&b, cases[i].p, cases[i].n, -2000);
        ls_rb_result r = validate(&b, why);
        if (r != cases[i].want || !strstr(why, cases[i].why))
            printf("  case %zu: %d %s\n", i, (int)r, why);
        CHECK_EQ_INT(r, cases[i].want);
        CHECK(strstr(why, cases[i].why) != NULL);
    }
    ls_buf_free(&b);
}

TEST(too_large)
{
    ls_buf_t b;
    ls_buf_init(&b);
    std_batch(&b, LS_CODEC_NONE, 20);
    ls_batch_info_t info;
    int n;
    char why[256];
    CHECK_EQ_INT(ls_records_validate(b.data, b.len, b.len, &info, 1, &n, why, sizeof why),
                 LS_RB_OK);
    CHECK_EQ_INT(ls_records_validate(b.data, b.len, b.len - 1, &info, 1, &n, why, sizeof why),
                 LS_RB_TOO_LARGE);
    /* a batch length claiming 2 GiB is refused before anything is read */
    ls_be32_put(b.data + LS_RB_OFF_LENGTH, 0x7fffffff);
    CHECK_EQ_INT(validate(&b, why), LS_RB_TOO_LARGE);
    ls_buf_free(&b);
}

TEST(decompression_bomb_is_too_large)
{
    /* One record holding 4 MiB of zeros compresses to a few KiB; with a
     * 4 KiB batch limit the cap is 1 MiB (LS_RB_MIN_DECOMPRESS_CAP). */
    size_t vlen = 4u << 20;
    char *zeros = calloc(1, vlen);
    ls_buf_t recs, b;
    ls_buf_init(&recs);
    ls_buf_init(&b);
    put_record(&recs, 0, 0, NULL, zeros, (int32_t)vlen, NULL, 0);
    put_batch(&b, LS_CODEC_ZSTD, 0, 1, 0, &recs, 0);
    CHECK(b.len < 4096);
    ls_batch_info_t info;
    int n;
    char why[256];
    CHECK_EQ_INT(ls_records_validate(b.data, b.len, 4096, &info, 1, &n, why, sizeof why),
                 LS_RB_TOO_LARGE);
    CHECK(strstr(why, "decompress to more than") != NULL);
    CHECK_EQ_INT(ls_records_foreach(b.data, b.len, 1u << 20, NULL, NULL), LS_RB_TOO_LARGE);
    CHECK_EQ_INT(ls_records_foreach(b.data, b.len, 8u << 20, NULL, NULL), LS_RB_OK);
    free(zeros);
    ls_buf_free(&recs);
    ls_buf_free(&b);
}

TEST(unknown_codec_and_undecodable_payload)
{
    ls_buf_t b, junk;
    ls_buf_init(&b);
    ls_buf_init(&junk);
    std_batch(&b, LS_CODEC_NONE, 2);
    b.data[LS_RB_OFF_ATTRIBUTES + 1] |= 5;
    reseal(b.data);
    char why[256];
    CHECK_EQ_INT(validate(&b, why), LS_RB_BAD_CODEC);
    /* a valid CRC over a payload that is not gzip */
    ls_buf_append(&junk, "this is not a gzip stream", 25);
    b.len = 0;
    put_batch(&b, LS_CODEC_GZIP, 0, 1, 0, &junk, 1);
    CHECK_EQ_INT(validate(&b, why), LS_RB_CORRUPT);
    CHECK(strstr(why, "gzip records do not decompress") != NULL);
    ls_buf_free(&b);
    ls_buf_free(&junk);
}

TEST(short_batch_length_and_empty_input)
{
    ls_buf_t b;
    ls_buf_init(&b);
    std_batch(&b, LS_CODEC_NONE, 1);
    ls_be32_put(b.data + LS_RB_OFF_LENGTH, 48);
    char why[256];
    CHECK_EQ_INT(validate(&b, why), LS_RB_CORRUPT);
    CHECK(strstr(why, "smaller than") != NULL);
    ls_be32_put(b.data + LS_RB_OFF_LENGTH, (uint32_t)-1);
    CHECK_EQ_INT(validate(&b, why), LS_RB_CORRUPT);
    ls_buf_t e = {b.data, 0, 0};
    CHECK_EQ_INT(validate(&e, why), LS_RB_INVALID);
    ls_buf_free(&b);
}

TEST(foreach_stops_early_and_log_append_time)
{
    ls_buf_t b;
    ls_buf_init(&b);
    ls_buf_t recs;
    ls_buf_init(&recs);
    std_records(&recs, 10);
    put_batch(&b, LS_CODEC_LZ4, 0x08 /* LogAppendTime */, 10, 9, &recs, 0);
    seen_t s = {.stop_after = 4};
    CHECK_EQ_INT(ls_records_foreach(b.data, b.len, MAXB, check_rec, &s), LS_RB_OK);
    CHECK_EQ_INT(s.n, 4);
    CHECK_EQ_INT(s.bad, 0);
    CHECK_EQ_INT(s.ts[3], BASE_TS + 99); /* maxTimestamp, not base + 30 */
    /* trailing bytes after the batch are not foreach's business */
    ls_buf_append(&b, "garbage", 7);
    s = (seen_t){0};
    CHECK_EQ_INT(ls_records_foreach(b.data, b.len, MAXB, check_rec, &s), LS_RB_OK);
    CHECK_EQ_INT(s.n, 10);
    ls_buf_free(&recs);
    ls_buf_free(&b);
}

TEST(foreach_delivers_nothing_from_a_bad_batch)
{
    ls_buf_t recs, b;
    ls_buf_init(&recs);
    ls_buf_init(&b);
    std_records(&recs, 6);
    static const uint8_t bad[] = {0x02, 0, 0}; /* record of length 1 that needs more */
    ls_buf_append(&recs, bad, sizeof bad);
    put_batch(&b, LS_CODEC_NONE, 0, 7, 6, &recs, 0);
    seen_t s = {0};
    CHECK_EQ_INT(ls_records_foreach(b.data, b.len, MAXB, check_rec, &s), LS_RB_INVALID);
    CHECK_EQ_INT(s.n, 0);
    ls_buf_free(&recs);
    ls_buf_free(&b);
}

/* A transaction marker as Kafka's clients parse it: one valid control batch,
 * transactional, no sequence, key (0, type), value (0, coordinator epoch). */
static int marker_record(void *arg, const ls_record_view_t *rec)
{
    const ls_record_view_t **out = arg;
    static ls_record_view_t copy;
    copy = *rec;
    *out = &copy;
    return 0;
}

TEST(transaction_markers_are_valid_control_batches)
{
    for (int commit = 0; commit <= 1; commit++) {
        uint8_t b[LS_RB_MARKER_SIZE];
        size_t n = ls_records_marker(b, 4242, 7, commit, 3, 1700000000000LL);
        CHECK_EQ_INT(n, LS_RB_MARKER_SIZE);
        ls_batch_info_t bi[1];
        int nb = 0;
        char why[128];
        CHECK_EQ_INT(ls_records_validate(b, n, 1 << 20, bi, 1, &nb, why, sizeof why), LS_RB_OK);
        CHECK_EQ_INT(nb, 1);
        CHECK(bi[0].control && bi[0].transactional);
        CHECK_EQ_INT(bi[0].producer_id, 4242);
        CHECK_EQ_INT(bi[0].producer_epoch, 7);
        CHECK_EQ_INT(bi[0].base_sequence, -1);
        CHECK_EQ_INT(bi[0].record_count, 1);
        CHECK_EQ_INT(bi[0].max_timestamp, 1700000000000LL);
        const ls_record_view_t *rec = NULL;
        CHECK_EQ_INT(ls_records_foreach(b, n, 1 << 20, marker_record, &rec), LS_RB_OK);
        CHECK(rec != NULL);
        CHECK_EQ_INT(rec->key_len, 4);
        CHECK_EQ_INT(ls_be16_get(rec->key), 0);
        CHECK_EQ_INT(ls_be16_get(rec->key + 2), commit);
        CHECK_EQ_INT(rec->value_len, 6);
        CHECK_EQ_INT(ls_be16_get(rec->value), 0);
        CHECK_EQ_INT(ls_be32_get(rec->value + 2), 3);
        CHECK_EQ_INT(rec->header_count, 0);
    }
}

int main(void)
{
    RUN(uncompressed_batch_validates_and_iterates);
    RUN(every_codec_validates_and_iterates);
    RUN(recompress_between_every_pair_of_codecs);
    RUN(java_style_xerial_snappy_batch);
    RUN(small_records_mix_one_and_two_byte_varints);
    RUN(several_batches_fill_infos);
    RUN(real_kafka_batch_validates);
    RUN(base_offset_rewrite_keeps_batch_valid);
    RUN(crc_mismatch_is_corrupt);
    RUN(truncation_is_corrupt_at_every_length);
    RUN(bad_magic);
    RUN(record_count_must_match_records);
    RUN(last_offset_delta_and_zero_count);
    RUN(offset_deltas_strict_on_produce_lenient_on_read);
    RUN(bad_varints_are_invalid);
    RUN(record_fields_must_fill_record_length);
    RUN(bad_lengths_and_headers_are_invalid);
    RUN(too_large);
    RUN(decompression_bomb_is_too_large);
    RUN(unknown_codec_and_undecodable_payload);
    RUN(short_batch_length_and_empty_input);
    RUN(foreach_stops_early_and_log_append_time);
    RUN(foreach_delivers_nothing_from_a_bad_batch);
    RUN(transaction_markers_are_valid_control_batches);
    UNIT_DONE();
}
