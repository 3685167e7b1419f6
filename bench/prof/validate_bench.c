/* CPU per record of produce-path batch validation (issue 32).
 *
 * Builds one RecordBatch as the Java producer sends it at its defaults with
 * 100-byte values (batch.size 16 KiB, null keys, no headers, timestamps a
 * few ms apart, uncompressed) and runs ls_records_validate over it; prints
 * CPU ns per record (process CPU time, so a loaded machine slows it less than
 * wall time). Built against a build's library, so two builds compare:
 *   bench/prof/validate_bench.sh [BUILD_DIR] [ITERATIONS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/buf.h"
#include "base/crc32c.h"
#include "records/records.h"

static size_t put_varint(uint8_t *p, int64_t v)
{
    uint64_t u = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
    size_t n = 0;
    while (u >= 0x80) {
        p[n++] = (uint8_t)(u | 0x80);
        u >>= 7;
    }
    p[n++] = (uint8_t)u;
    return n;
}

static size_t make_batch(uint8_t *out, size_t cap, int value_len, int *count)
{
    size_t pos = LS_RB_HEADER_SIZE;
    int n = 0;
    uint8_t rec[512];
    for (;; n++) {
        size_t r = 0;
        rec[r++] = 0;                     /* attributes */
        r += put_varint(rec + r, n / 30); /* timestampDelta: a few ms over the batch */
        r += put_varint(rec + r, n);      /* offsetDelta */
        r += put_varint(rec + r, -1);     /* null key */
        r += put_varint(rec + r, value_len);
        memset(rec + r, 'x', (size_t)value_len);
        r += (size_t)value_len;
        r += put_varint(rec + r, 0); /* headers */
        uint8_t len[5];
        size_t ln = put_varint(len, (int64_t)r);
        if (pos + ln + r > cap) break;
        memcpy(out + pos, len, ln);
        memcpy(out + pos + ln, rec, r);
        pos += ln + r;
    }
    memset(out, 0, LS_RB_HEADER_SIZE);
    ls_be32_put(out + LS_RB_OFF_LENGTH, (uint32_t)(pos - 12));
    out[LS_RB_OFF_MAGIC] = 2;
    ls_be32_put(out + LS_RB_OFF_LAST_OFFSET_DELTA, (uint32_t)(n - 1));
    ls_be64_put(out + LS_RB_OFF_BASE_TIMESTAMP, 1700000000000ULL);
    ls_be64_put(out + LS_RB_OFF_MAX_TIMESTAMP, 1700000000000ULL + (uint64_t)(n / 30));
    ls_be64_put(out + LS_RB_OFF_PRODUCER_ID, 1);
    ls_be32_put(out + LS_RB_OFF_RECORD_COUNT, (uint32_t)n);
    ls_be32_put(out + LS_RB_OFF_CRC,
                ls_crc32c(0, out + LS_RB_OFF_ATTRIBUTES, pos - LS_RB_OFF_ATTRIBUTES));
    *count = n;
    return pos;
}

int main(int argc, char **argv)
{
    int iters = argc > 1 ? atoi(argv[1]) : 20000;
    static uint8_t batch[16384];
    int count;
    size_t len = make_batch(batch, sizeof batch, 100, &count);
    ls_batch_info_t bi;
    int n;
    char why[256];
    struct timespec t0, t1;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
    for (int i = 0; i < iters; i++)
        if (ls_records_validate(batch, len, 1 << 20, &bi, 1, &n, why, sizeof why) != LS_RB_OK) {
            fprintf(stderr, "invalid: %s\n", why);
            return 1;
        }
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
    double ns = (double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec);
    printf("%d records of 100 B per %zu-byte batch: %.1f ns per record validated\n", count, len,
           ns / ((double)iters * count));
    return 0;
}
