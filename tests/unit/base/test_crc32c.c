/* CRC-32C: published check values, a batch captured from a real Kafka broker,
 * and agreement between the hardware and table engines on every length and
 * alignment the 8-byte loops care about. */
#include <stdint.h>
#include <stdlib.h>

#include "base/crc32c.h"
#include "unit.h"

TEST(check_value_123456789)
{
    /* The CRC catalogue's check value for CRC-32C (iSCSI). */
    CHECK_EQ_INT(ls_crc32c(0, "123456789", 9), 0xE3069283u);
    CHECK_EQ_INT(ls_crc32c_sw(0, "123456789", 9), 0xE3069283u);
}

TEST(rfc3720_vectors)
{
    /* RFC 3720 appendix B.4. */
    uint8_t buf[32];
    memset(buf, 0, sizeof buf);
    CHECK_EQ_INT(ls_crc32c(0, buf, 32), 0x8A9136AAu);
    memset(buf, 0xff, sizeof buf);
    CHECK_EQ_INT(ls_crc32c(0, buf, 32), 0x62A8AB43u);
    for (int i = 0; i < 32; i++)
        buf[i] = (uint8_t)i;
    CHECK_EQ_INT(ls_crc32c(0, buf, 32), 0x46DD794Eu);
    for (int i = 0; i < 32; i++)
        buf[i] = (uint8_t)(31 - i);
    CHECK_EQ_INT(ls_crc32c(0, buf, 32), 0x113FDB5Cu);
}

TEST(empty_is_identity)
{
    CHECK_EQ_INT(ls_crc32c(0, "", 0), 0);
    CHECK_EQ_INT(ls_crc32c(0x12345678u, "", 0), 0x12345678u);
}

/* A one-record batch from a Kafka 3.x broker's __cluster_metadata log
 * (a FeatureLevelRecord for metadata.version): its stored CRC must be what we
 * compute over attributes..end. */
static const uint8_t kafka_batch[] = {
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* baseOffset */
    0x00, 0x00, 0x00, 0x4f,                         /* batchLength 79 */
    0x00, 0x00, 0x00, 0x01,                         /* partitionLeaderEpoch */
    0x02,                                           /* magic */
    0xb0, 0x69, 0x45, 0x7c,                         /* crc */
    0x00, 0x00,                                     /* attributes */
    0x00, 0x00, 0x00, 0x00,                         /* lastOffsetDelta */
    0x00, 0x00, 0x01, 0x91, 0xe0, 0x5a, 0xf8, 0x18, /* baseTimestamp */
    0x00, 0x00, 0x01, 0x91, 0xe0, 0x5a, 0xf8, 0x18, /* maxTimestamp */
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, /* producerId */
    0xff, 0xff,                                     /* producerEpoch */
    0xff, 0xff, 0xff, 0xff,                         /* baseSequence */
    0x00, 0x00, 0x00, 0x01,                         /* records count */
    0x3a, 0x00, 0x00, 0x00, 0x01, 0x2e,             /* len 29, attr, ts, off, key null, value 23 */
    0x01, 0x0c, 0x00, 0x11, 'm',  'e',  't',  'a',  'd',  'a',  't',  'a',
    '.',  'v',  'e',  'r',  's',  'i',  'o',  'n',  0x00, 0x14, 0x00, /* value */
    0x00,                                                             /* headers count */
};

TEST(real_kafka_batch)
{
    CHECK_EQ_INT(sizeof kafka_batch, 12 + 79);
    CHECK_EQ_INT(ls_crc32c(0, kafka_batch + 21, sizeof kafka_batch - 21), 0xb069457cu);
    CHECK_EQ_INT(ls_crc32c_sw(0, kafka_batch + 21, sizeof kafka_batch - 21), 0xb069457cu);
}

TEST(incremental_equals_one_shot)
{
    const char *s = "The quick brown fox jumps over the lazy dog, twice over the lazy dog";
    size_t n = strlen(s);
    uint32_t whole = ls_crc32c(0, s, n);
    for (size_t cut = 0; cut <= n; cut++)
        CHECK_EQ_INT(ls_crc32c(ls_crc32c(0, s, cut), s + cut, n - cut), whole);
}

TEST(engines_agree_on_all_alignments)
{
    uint8_t *buf = malloc(4096 + 16);
    CHECK(buf);
    uint32_t x = 12345;
    for (int i = 0; i < 4096 + 16; i++) {
        x = x * 1103515245u + 12345u;
        buf[i] = (uint8_t)(x >> 16);
    }
    int bad = 0;
    for (size_t off = 0; off < 16; off++)
        for (size_t len = 0; len < 300; len++)
            if (ls_crc32c(7, buf + off, len) != ls_crc32c_sw(7, buf + off, len)) bad++;
    if (ls_crc32c(0, buf, 4096) != ls_crc32c_sw(0, buf, 4096)) bad++;
    free(buf);
    CHECK_EQ_INT(bad, 0);
}

/* Inputs long enough for the three-stream blocks (3 KiB each): every length
 * around one, two and several block multiples, at every alignment, and a
 * long input split at odd points, agree with the table engine. */
TEST(engines_agree_on_three_stream_blocks)
{
    enum { N = 40000 };
    uint8_t *buf = malloc(N + 16);
    CHECK(buf);
    uint32_t x = 777;
    for (int i = 0; i < N + 16; i++) {
        x = x * 1103515245u + 12345u;
        buf[i] = (uint8_t)(x >> 16);
    }
    int bad = 0;
    static const size_t around[] = {3072, 6144, 9216, 30720};
    for (size_t a = 0; a < sizeof around / sizeof *around; a++)
        for (size_t off = 0; off < 16; off += 3)
            for (size_t len = around[a] - 20; len < around[a] + 20; len++)
                if (ls_crc32c(0xdeadbeef, buf + off, len) !=
                    ls_crc32c_sw(0xdeadbeef, buf + off, len))
                    bad++;
    uint32_t whole = ls_crc32c_sw(0, buf, N);
    if (ls_crc32c(0, buf, N) != whole) bad++;
    uint32_t parts = ls_crc32c(0, buf, 5000);
    parts = ls_crc32c(parts, buf + 5000, 3071);
    parts = ls_crc32c(parts, buf + 8071, N - 8071);
    if (parts != whole) bad++;
    free(buf);
    CHECK_EQ_INT(bad, 0);
}

int main(void)
{
    RUN(check_value_123456789);
    RUN(rfc3720_vectors);
    RUN(empty_is_identity);
    RUN(real_kafka_batch);
    RUN(incremental_equals_one_shot);
    RUN(engines_agree_on_all_alignments);
    RUN(engines_agree_on_three_stream_blocks);
    UNIT_DONE();
}
