/* CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of Kafka
 * RecordBatch v2 (docs/implementation.html, "Record Batch") and iSCSI (RFC 3720).
 *
 * Interface follows zlib's crc32(): the caller passes the previous result (0 to
 * start) and the pre/post inversion happens here, so crc(a||b) ==
 * ls_crc32c(ls_crc32c(0, a), b).
 *
 * Two engines, chosen once per process:
 *  - x86-64 with SSE4.2: the crc32 instruction, 8 bytes per step, on three
 *    independent streams at once. The instruction takes 3 cycles but can
 *    start one per cycle, so one chain of dependent steps uses a third of
 *    it. Long inputs go as blocks of 3 x CRC_BLK bytes: the three thirds'
 *    registers (the first from the running value, the others from 0) are
 *    joined by the linearity of the register, reg(c, A || B) =
 *    shift(reg(c, A)) ^ reg(0, B), where shift is the effect of CRC_BLK zero
 *    bytes on a register: a linear map, applied by four 256-entry tables.
 *  - anywhere else: table-driven slicing-by-8 (8 lookups per 8 bytes), byte
 *    order independent because words are assembled from bytes explicitly.
 * The tables and the engine choice are set up under pthread_once, so the first
 * call from any thread is safe and later calls cost one indirect jump. */
#include "base/crc32c.h"

#include <pthread.h>
#include <stdbool.h>

#define CRC32C_POLY 0x82F63B78u

static uint32_t crc_table[8][256];
enum { CRC_BLK = 1024 };                 /* bytes of one stream in a 3-stream block */
static uint32_t crc_shift_table[4][256]; /* [k][b]: shift(b << 8k) */
static bool crc_use_hw;
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_tables_build(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? (c >> 1) ^ CRC32C_POLY : c >> 1;
        crc_table[0][i] = c;
    }
    /* crc_table[k][i] is the CRC of byte i followed by k zero bytes, which lets
     * one step fold eight input bytes at once. */
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = crc_table[0][i];
        for (int k = 1; k < 8; k++) {
            c = (c >> 8) ^ crc_table[0][c & 0xff];
            crc_table[k][i] = c;
        }
    }
}

static uint32_t crc_sw(uint32_t crc, const uint8_t *p, size_t len);

/* The register after CRC_BLK zero bytes, from each register with one bit
 * set (the map is linear: any register's image is the XOR of its bits'). */
static void crc_shift_build(void)
{
    static const uint8_t zeros[CRC_BLK];
    uint32_t bit[32];
    for (int i = 0; i < 32; i++)
        bit[i] = crc_sw(1u << i, zeros, CRC_BLK);
    for (int k = 0; k < 4; k++)
        for (uint32_t b = 0; b < 256; b++) {
            uint32_t v = 0;
            for (int j = 0; j < 8; j++)
                if (b >> j & 1) v ^= bit[8 * k + j];
            crc_shift_table[k][b] = v;
        }
}

static inline uint32_t crc_shift(uint32_t x)
{
    return crc_shift_table[0][x & 0xff] ^ crc_shift_table[1][(x >> 8) & 0xff] ^
           crc_shift_table[2][(x >> 16) & 0xff] ^ crc_shift_table[3][x >> 24];
}

static uint32_t crc_sw(uint32_t crc, const uint8_t *p, size_t len)
{
    while (len && ((uintptr_t)p & 7)) {
        crc = (crc >> 8) ^ crc_table[0][(crc ^ *p++) & 0xff];
        len--;
    }
    while (len >= 8) {
        uint32_t lo =
            (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
        uint32_t hi =
            (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;
        lo ^= crc;
        crc = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^
              crc_table[5][(lo >> 16) & 0xff] ^ crc_table[4][lo >> 24] ^ crc_table[3][hi & 0xff] ^
              crc_table[2][(hi >> 8) & 0xff] ^ crc_table[1][(hi >> 16) & 0xff] ^
              crc_table[0][hi >> 24];
        p += 8;
        len -= 8;
    }
    while (len--)
        crc = (crc >> 8) ^ crc_table[0][(crc ^ *p++) & 0xff];
    return crc;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define LS_CRC_HAVE_HW 1
#include <string.h>

/* The crc32 instruction implements exactly the reflected Castagnoli CRC without
 * the inversions, so it slots into the same pre/post-inverted state as crc_sw. */
__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t crc, const uint8_t *p, size_t len)
{
    while (len && ((uintptr_t)p & 7)) {
        crc = __builtin_ia32_crc32qi(crc, *p++);
        len--;
    }
    uint64_t c64 = crc;
    while (len >= 3 * CRC_BLK) {
        uint64_t a = c64, b = 0, c = 0;
        for (size_t i = 0; i < CRC_BLK; i += 8) {
            uint64_t wa, wb, wc;
            memcpy(&wa, p + i, 8);
            memcpy(&wb, p + CRC_BLK + i, 8);
            memcpy(&wc, p + 2 * CRC_BLK + i, 8);
            a = __builtin_ia32_crc32di(a, wa);
            b = __builtin_ia32_crc32di(b, wb);
            c = __builtin_ia32_crc32di(c, wc);
        }
        c64 = crc_shift(crc_shift((uint32_t)a) ^ (uint32_t)b) ^ (uint32_t)c;
        p += 3 * CRC_BLK;
        len -= 3 * CRC_BLK;
    }
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, p, 8); /* x86 is little-endian, as the instruction expects */
        c64 = __builtin_ia32_crc32di(c64, w);
        p += 8;
        len -= 8;
    }
    crc = (uint32_t)c64;
    while (len--)
        crc = __builtin_ia32_crc32qi(crc, *p++);
    return crc;
}
#else
#define LS_CRC_HAVE_HW 0
#endif

static void crc_init(void)
{
    crc_tables_build();
    crc_shift_build();
#if LS_CRC_HAVE_HW
    __builtin_cpu_init();
    crc_use_hw = __builtin_cpu_supports("sse4.2");
#endif
}

uint32_t ls_crc32c(uint32_t crc, const void *data, size_t len)
{
    pthread_once(&crc_once, crc_init);
    const uint8_t *p = data;
    crc = ~crc;
#if LS_CRC_HAVE_HW
    if (crc_use_hw) return ~crc_hw(crc, p, len);
#endif
    return ~crc_sw(crc, p, len);
}

/* Test hook: the portable engine, so unit tests can check it against the
 * hardware one on machines that have both. */
uint32_t ls_crc32c_sw(uint32_t crc, const void *data, size_t len)
{
    pthread_once(&crc_once, crc_init);
    return ~crc_sw(~crc, data, len);
}
