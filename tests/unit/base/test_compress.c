/* Codecs: round trips, the wire variants real clients send (xerial snappy,
 * zstd frames without a content size, concatenated gzip members / lz4 and zstd
 * frames), and hostile input: garbage and truncation are LS_ECORRUPT, output
 * past the bound is LS_ELIMIT, and a failed call leaves the output untouched. */
#include <stdint.h>
#include <stdlib.h>

#include <lz4frame.h>
#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>

#include "base/buf.h"
#include "base/compress.h"
#include "unit.h"

static const int codecs[] = {LS_CODEC_GZIP, LS_CODEC_SNAPPY, LS_CODEC_LZ4, LS_CODEC_ZSTD};
#define NCODECS 4

/* Half text, half noise: compresses, but not to nothing. */
static uint8_t *sample(size_t n)
{
    uint8_t *p = malloc(n ? n : 1);
    uint32_t x = 99;
    for (size_t i = 0; i < n; i++) {
        x = x * 1664525u + 1013904223u;
        p[i] = (i / 64) % 2 ? (uint8_t)("lakestream "[i % 11]) : (uint8_t)(x >> 24);
    }
    return p;
}

static int roundtrip(int codec, const uint8_t *in, size_t n)
{
    ls_buf_t c, d;
    ls_buf_init(&c);
    ls_buf_init(&d);
    int ok = ls_compress(codec, in, n, &c) == LS_OK &&
             ls_decompress(codec, c.data, c.len, n, &d) == LS_OK && d.len == n &&
             (n == 0 || memcmp(d.data, in, n) == 0);
    ls_buf_free(&c);
    ls_buf_free(&d);
    return ok;
}

TEST(roundtrip_every_codec)
{
    static const size_t sizes[] = {0, 1, 100, 65535, 65536, 65537, 300000};
    for (int ci = 0; ci < NCODECS; ci++)
        for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
            uint8_t *p = sample(sizes[si]);
            int ok = roundtrip(codecs[ci], p, sizes[si]);
            free(p);
            if (!ok) printf("  codec %s size %zu\n", ls_codec_name(codecs[ci]), sizes[si]);
            CHECK(ok);
        }
    CHECK(roundtrip(LS_CODEC_NONE, (const uint8_t *)"abc", 3));
}

TEST(decompress_appends_to_existing_output)
{
    ls_buf_t c, d;
    ls_buf_init(&c);
    ls_buf_init(&d);
    ls_buf_append(&d, "prefix:", 7);
    CHECK(ls_compress(LS_CODEC_ZSTD, (const uint8_t *)"hello", 5, &c) == LS_OK);
    CHECK(ls_decompress(LS_CODEC_ZSTD, c.data, c.len, 5, &d) == LS_OK);
    CHECK_EQ_INT(d.len, 12);
    CHECK(memcmp(d.data, "prefix:hello", 12) == 0);
    ls_buf_free(&c);
    ls_buf_free(&d);
}

static void be32(ls_buf_t *b, uint32_t v)
{
    uint8_t x[4];
    ls_be32_put(x, v);
    ls_buf_append(b, x, 4);
}

/* The Java client's snappy-java SnappyOutputStream framing, assembled here
 * block by block. */
static void xerial_frame(const uint8_t *in, size_t n, size_t block, ls_buf_t *out)
{
    static const uint8_t magic[8] = {0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0};
    ls_buf_append(out, magic, 8);
    be32(out, 1); /* version */
    be32(out, 1); /* minimum compatible version */
    for (size_t pos = 0; pos < n; pos += block) {
        size_t len = n - pos < block ? n - pos : block;
        size_t cap = snappy_max_compressed_length(len), got = cap;
        char *tmp = malloc(cap);
        snappy_compress((const char *)in + pos, len, tmp, &got);
        be32(out, (uint32_t)got);
        ls_buf_append(out, tmp, got);
        free(tmp);
    }
}

TEST(snappy_xerial_frame)
{
    size_t n = 100000;
    uint8_t *p = sample(n);
    ls_buf_t x, d;
    ls_buf_init(&x);
    ls_buf_init(&d);
    xerial_frame(p, n, 32768, &x); /* 4 blocks, the last one short */
    CHECK(ls_decompress(LS_CODEC_SNAPPY, x.data, x.len, n, &d) == LS_OK);
    CHECK_EQ_INT(d.len, n);
    CHECK(memcmp(d.data, p, n) == 0);

    /* the bound applies across blocks */
    d.len = 0;
    CHECK(ls_decompress(LS_CODEC_SNAPPY, x.data, x.len, n - 1, &d) == LS_ELIMIT);
    CHECK_EQ_INT(d.len, 0);

    /* a block length pointing past the end, and a cut inside a length */
    for (size_t cut = 17; cut < x.len; cut += 997) {
        d.len = 0;
        CHECK(ls_decompress(LS_CODEC_SNAPPY, x.data, cut, SIZE_MAX, &d) == LS_ECORRUPT);
    }
    ls_buf_t z;
    ls_buf_init(&z);
    xerial_frame(p, 0, 100, &z); /* header only: no data */
    d.len = 0;
    CHECK(ls_decompress(LS_CODEC_SNAPPY, z.data, z.len, 10, &d) == LS_OK);
    CHECK_EQ_INT(d.len, 0);
    be32(&z, 0); /* a zero-length block is not a snappy block */
    CHECK(ls_decompress(LS_CODEC_SNAPPY, z.data, z.len, 10, &d) == LS_ECORRUPT);
    free(p);
    ls_buf_free(&x);
    ls_buf_free(&z);
    ls_buf_free(&d);
}

TEST(zstd_frame_without_content_size)
{
    size_t n = 200000;
    uint8_t *p = sample(n);
    ZSTD_CCtx *cc = ZSTD_createCCtx();
    size_t cap = ZSTD_compressBound(n);
    uint8_t *c = malloc(cap);
    ZSTD_outBuffer ob = {c, cap, 0};
    ZSTD_inBuffer ib = {p, n, 0};
    /* streaming without a pledged size, as zstd-jni's output stream does */
    CHECK(!ZSTD_isError(ZSTD_compressStream2(cc, &ob, &ib, ZSTD_e_continue)));
    CHECK(ZSTD_compressStream2(cc, &ob, &ib, ZSTD_e_end) == 0);
    CHECK(ZSTD_getFrameContentSize(c, ob.pos) == ZSTD_CONTENTSIZE_UNKNOWN);
    ls_buf_t d;
    ls_buf_init(&d);
    CHECK(ls_decompress(LS_CODEC_ZSTD, c, ob.pos, n, &d) == LS_OK);
    CHECK_EQ_INT(d.len, n);
    CHECK(memcmp(d.data, p, n) == 0);
    d.len = 0;
    CHECK(ls_decompress(LS_CODEC_ZSTD, c, ob.pos, n - 1, &d) == LS_ELIMIT);
    ZSTD_freeCCtx(cc);
    free(c);
    free(p);
    ls_buf_free(&d);
}

TEST(lz4_frame_without_content_size_with_checksums)
{
    size_t n = 150000;
    uint8_t *p = sample(n);
    LZ4F_preferences_t prefs;
    memset(&prefs, 0, sizeof prefs);
    prefs.frameInfo.blockChecksumFlag = LZ4F_blockChecksumEnabled;
    prefs.frameInfo.contentChecksumFlag = LZ4F_contentChecksumEnabled;
    prefs.frameInfo.blockSizeID = LZ4F_max64KB;
    size_t cap = LZ4F_compressFrameBound(n, &prefs);
    uint8_t *c = malloc(cap);
    size_t clen = LZ4F_compressFrame(c, cap, p, n, &prefs);
    CHECK(!LZ4F_isError(clen));
    ls_buf_t d;
    ls_buf_init(&d);
    CHECK(ls_decompress(LS_CODEC_LZ4, c, clen, n, &d) == LS_OK);
    CHECK_EQ_INT(d.len, n);
    CHECK(memcmp(d.data, p, n) == 0);
    /* a flipped bit in the middle trips the block checksum */
    c[clen / 2] ^= 0x10;
    d.len = 0;
    CHECK(ls_decompress(LS_CODEC_LZ4, c, clen, n, &d) == LS_ECORRUPT);
    CHECK_EQ_INT(d.len, 0);
    free(c);
    free(p);
    ls_buf_free(&d);
}

TEST(concatenated_members_and_frames)
{
    /* gzip members, lz4 frames and zstd frames may follow each other. */
    static const int multi[] = {LS_CODEC_GZIP, LS_CODEC_LZ4, LS_CODEC_ZSTD};
    for (int i = 0; i < 3; i++) {
        ls_buf_t c, d;
        ls_buf_init(&c);
        ls_buf_init(&d);
        CHECK(ls_compress(multi[i], (const uint8_t *)"first,", 6, &c) == LS_OK);
        CHECK(ls_compress(multi[i], (const uint8_t *)"second", 6, &c) == LS_OK);
        CHECK(ls_decompress(multi[i], c.data, c.len, 100, &d) == LS_OK);
        CHECK_EQ_INT(d.len, 12);
        CHECK(memcmp(d.data, "first,second", 12) == 0);
        /* trailing junk after the last member is not silently dropped */
        ls_buf_append(&c, "\0\0\0", 3);
        d.len = 0;
        CHECK(ls_decompress(multi[i], c.data, c.len, 100, &d) == LS_ECORRUPT);
        ls_buf_free(&c);
        ls_buf_free(&d);
    }
}

TEST(garbage_is_corrupt)
{
    uint8_t junk[512];
    uint32_t x = 7;
    for (size_t i = 0; i < sizeof junk; i++) {
        x = x * 1103515245u + 12345u;
        junk[i] = (uint8_t)(x >> 16);
    }
    for (int ci = 0; ci < NCODECS; ci++) {
        ls_buf_t d;
        ls_buf_init(&d);
        ls_buf_append(&d, "keep", 4);
        ls_status st = ls_decompress(codecs[ci], junk, sizeof junk, 1 << 20, &d);
        if (st != LS_ECORRUPT)
            printf("  codec %s gave %s\n", ls_codec_name(codecs[ci]), ls_status_str(st));
        CHECK(st == LS_ECORRUPT);
        CHECK_EQ_INT(d.len, 4);                                                /* output restored */
        CHECK(ls_decompress(codecs[ci], junk, 0, 1 << 20, &d) == LS_ECORRUPT); /* empty */
        ls_buf_free(&d);
    }
}

TEST(truncated_is_corrupt)
{
    size_t n = 100000;
    uint8_t *p = sample(n);
    for (int ci = 0; ci < NCODECS; ci++) {
        ls_buf_t c, d;
        ls_buf_init(&c);
        ls_buf_init(&d);
        CHECK(ls_compress(codecs[ci], p, n, &c) == LS_OK);
        int bad = 0;
        for (size_t cut = 1; cut < c.len; cut = cut * 3 / 2 + 1) {
            d.len = 0;
            if (ls_decompress(codecs[ci], c.data, cut, n, &d) != LS_ECORRUPT) {
                printf("  codec %s cut %zu of %zu accepted\n", ls_codec_name(codecs[ci]), cut,
                       c.len);
                bad++;
            }
        }
        d.len = 0;
        if (ls_decompress(codecs[ci], c.data, c.len - 1, n, &d) != LS_ECORRUPT) bad++;
        ls_buf_free(&c);
        ls_buf_free(&d);
        CHECK_EQ_INT(bad, 0);
    }
    free(p);
}

TEST(bound_is_exact)
{
    size_t n = 70000;
    uint8_t *p = sample(n);
    for (int ci = 0; ci < NCODECS; ci++) {
        ls_buf_t c, d;
        ls_buf_init(&c);
        ls_buf_init(&d);
        CHECK(ls_compress(codecs[ci], p, n, &c) == LS_OK);
        CHECK(ls_decompress(codecs[ci], c.data, c.len, n, &d) == LS_OK);
        d.len = 0;
        CHECK(ls_decompress(codecs[ci], c.data, c.len, n - 1, &d) == LS_ELIMIT);
        CHECK_EQ_INT(d.len, 0);
        CHECK(ls_decompress(codecs[ci], c.data, c.len, 0, &d) == LS_ELIMIT);
        ls_buf_free(&c);
        ls_buf_free(&d);
    }
    CHECK(ls_decompress(LS_CODEC_NONE, p, 10, 9, &(ls_buf_t){0}) == LS_ELIMIT);
    free(p);
}

TEST(decompression_bomb_stops_at_bound)
{
    /* 32 MiB of zeros shrink to a few KiB; with a 1 MiB bound the decoder
     * must stop, not inflate it all. */
    size_t n = 32u << 20;
    uint8_t *z = calloc(1, n);
    for (int ci = 0; ci < NCODECS; ci++) {
        ls_buf_t c, d;
        ls_buf_init(&c);
        ls_buf_init(&d);
        CHECK(ls_compress(codecs[ci], z, n, &c) == LS_OK);
        CHECK(c.len < n / 16);
        CHECK(ls_decompress(codecs[ci], c.data, c.len, 1u << 20, &d) == LS_ELIMIT);
        CHECK(d.cap <= (2u << 20)); /* never held much more than the bound */
        ls_buf_free(&c);
        ls_buf_free(&d);
    }
    free(z);
}

/* Regression (found by tools/fuzz/fuzz_records): a snappy block that
 * decodes to zero bytes, appended to a buffer that has never allocated,
 * formed a pointer from NULL. */
TEST(snappy_empty_block_into_unallocated_buffer)
{
    static const uint8_t empty_block[] = {0x00}; /* uncompressed length 0 */
    ls_buf_t d;
    ls_buf_init(&d);
    CHECK(ls_decompress(LS_CODEC_SNAPPY, empty_block, 1, 100, &d) == LS_OK);
    CHECK_EQ_INT(d.len, 0);
    ls_buf_free(&d);
}

/* ls_zstd_raw_frame: libzstd reads it back for every content-size field
 * width and block count (sizes at the edges of each). */
TEST(zstd_raw_frame_roundtrip)
{
    static const size_t sizes[] = {0,      1,      255,    256,    65791,  65792,
                                   131072, 131073, 262144, 300001, 1 << 20};
    uint8_t *in = malloc(1 << 20);
    uint32_t x = 2463534242u;
    for (size_t i = 0; i < (1 << 20); i++)
        x ^= x << 13, x ^= x >> 17, x ^= x << 5, in[i] = (uint8_t)x;
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t n = sizes[k];
        ls_buf_t c, d;
        ls_buf_init(&c);
        ls_buf_init(&d);
        ls_buf_append(&c, "xy", 2); /* appends after what is there */
        ls_zstd_raw_frame(in, n, &c);
        size_t blocks = n ? (n + (128 << 10) - 1) / (128 << 10) : 1;
        CHECK(c.len - 2 <= n + 4 + 1 + 4 + 3 * blocks);
        CHECK_EQ_INT(c.len - 2, ls_zstd_raw_frame_size(n));
        CHECK(ls_decompress(LS_CODEC_ZSTD, c.data + 2, c.len - 2, n, &d) == LS_OK);
        CHECK_EQ_INT(d.len, n);
        CHECK(n == 0 || memcmp(d.data, in, n) == 0);
        ls_buf_free(&c);
        ls_buf_free(&d);
    }
    free(in);
}

/* One-pass decompression into a caller's buffer of the exact size (what
 * the Parquet reader uses for pages): right bytes for every codec and
 * size; a size one off either way, garbage or an unknown codec refused. */
TEST(decompress_exact)
{
    static const size_t sizes[] = {1, 100, 65536, 300000};
    for (int ci = 0; ci < NCODECS; ci++)
        for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
            size_t n = sizes[si];
            uint8_t *p = sample(n), *d = malloc(n + 1);
            ls_buf_t c;
            ls_buf_init(&c);
            CHECK(ls_compress(codecs[ci], p, n, &c) == LS_OK);
            CHECK(ls_decompress_exact(codecs[ci], c.data, c.len, d, n) == LS_OK);
            CHECK(memcmp(d, p, n) == 0);
            CHECK(ls_decompress_exact(codecs[ci], c.data, c.len, d, n - 1) == LS_ECORRUPT);
            CHECK(ls_decompress_exact(codecs[ci], c.data, c.len, d, n + 1) == LS_ECORRUPT);
            CHECK(ls_decompress_exact(codecs[ci], c.data, c.len / 2, d, n) != LS_OK);
            ls_buf_free(&c);
            free(p);
            free(d);
        }
    uint8_t d[8];
    CHECK(ls_decompress_exact(LS_CODEC_NONE, (const uint8_t *)"abc", 3, d, 3) == LS_OK);
    CHECK(memcmp(d, "abc", 3) == 0);
    CHECK(ls_decompress_exact(LS_CODEC_NONE, (const uint8_t *)"abc", 3, d, 4) == LS_ECORRUPT);
    CHECK(ls_decompress_exact(LS_CODEC_ZSTD, (const uint8_t *)"garbage!", 8, d, 8) == LS_ECORRUPT);
    CHECK(ls_decompress_exact(LS_CODEC_SNAPPY, (const uint8_t *)"\x05garbage", 8, d, 5) ==
          LS_ECORRUPT);
    CHECK(ls_decompress_exact(6, (const uint8_t *)"x", 1, d, 1) == LS_EINVAL);
}

TEST(unknown_codec)
{
    ls_buf_t d;
    ls_buf_init(&d);
    CHECK(ls_decompress(5, (const uint8_t *)"x", 1, 10, &d) == LS_EINVAL);
    CHECK(ls_compress(7, (const uint8_t *)"x", 1, &d) == LS_EINVAL);
    CHECK(strcmp(ls_codec_name(LS_CODEC_SNAPPY), "snappy") == 0);
    CHECK(strcmp(ls_codec_name(6), "unknown") == 0);
    ls_buf_free(&d);
}

int main(void)
{
    RUN(roundtrip_every_codec);
    RUN(decompress_appends_to_existing_output);
    RUN(snappy_xerial_frame);
    RUN(zstd_frame_without_content_size);
    RUN(lz4_frame_without_content_size_with_checksums);
    RUN(concatenated_members_and_frames);
    RUN(garbage_is_corrupt);
    RUN(truncated_is_corrupt);
    RUN(bound_is_exact);
    RUN(decompression_bomb_stops_at_bound);
    RUN(snappy_empty_block_into_unallocated_buffer);
    RUN(zstd_raw_frame_roundtrip);
    RUN(decompress_exact);
    RUN(unknown_codec);
    UNIT_DONE();
}
