/* Cold-read rebuild throughput (issue 13): how fast RecordBatches v2 are
 * rebuilt from a raw table data file (lake/cold_batches.c), against
 * the bytes a compacted object would serve as they are.
 *
 *   make build/bench/cold_read_bench
 *   build/bench/cold_read_bench [MiB] [fetch KiB] [codec: none|lz4|zstd|all] [rounds]
 *
 * Writes one raw Parquet file (zstd, the materializer's default options) of
 * MiB of 1 KiB values for one partition, then reads the partition back for
 * each output codec:
 *  - "one call": the whole partition in one ls_cold_read_parquet;
 *  - "fetches, reopened": one ls_cold_read_parquet per fetch of `fetch KiB`
 *    at the next offset (each parses the footer and finds its row again);
 *  - "fetches, kept open": the same reads through one ls_cold_file_t kept
 *    between them (what a cold source with a footer cache does; with
 *    fetch = 4096 this is the log reader's 4 MiB read-ahead block);
 *  - "codec alone": the output codec compressing the same record bytes in
 *    batches of the same size, nothing else (the floor the codec sets).
 * Prints MiB of record values per second of one core
 * (CLOCK_PROCESS_CPUTIME), the best of `rounds` (default 3). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/buf.h"
#include "base/compress.h"
#include "lake/cold_batches.h"
#include "table/iceberg_raw.h"

#define BATCH_BYTES ((size_t)256 << 10) /* what the log reader asks for */

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static double best(double a, double b) { return a < 0 || b < a ? b : a; }

int main(int argc, char **argv)
{
    int mib = argc > 1 ? atoi(argv[1]) : 64;
    size_t fetch = (size_t)(argc > 2 ? atoi(argv[2]) : 1024) << 10;
    const char *only = argc > 3 ? argv[3] : "all";
    int rounds = argc > 4 ? atoi(argv[4]) : 3;
    int64_t n = (int64_t)mib << 10; /* 1 KiB values */
    ls_pq_opts_t o;
    ls_pq_opts_init(&o);
    o.codec = LS_PQ_ZSTD;
    ls_buf_t file;
    ls_buf_init(&file);
    char err[256];
    ls_pq_writer_t *w = ls_raw_writer_new(&o, &file, err, sizeof err);
    uint8_t v[1024];
    uint32_t x = 12345;
    double t0 = cpu_s();
    for (int64_t i = 0; i < n; i++) {
        /* text-like values: words from a small vocabulary (compressible
         * about 3x, like JSON events) */
        for (size_t k = 0; k < sizeof v; k++) {
            x = x * 1103515245u + 12345u;
            v[k] = (uint8_t)("abcdefghij klmnop {}\":,0123456789"[(x >> 16) % 34]);
        }
        char key[32];
        int kl = snprintf(key, sizeof key, "user-%lld", (long long)(i % 1000));
        ls_raw_record_t r = {.partition = 0,
                             .offset = i,
                             .timestamp_ms = 1700000000000LL + i / 100,
                             .key = (const uint8_t *)key,
                             .key_len = kl,
                             .value = v,
                             .value_len = sizeof v};
        if (ls_raw_write(w, &r) != LS_OK) return 1;
    }
    if (ls_pq_writer_finish(w) != LS_OK) return 1;
    ls_pq_writer_free(w);
    double mib_values = (double)n * sizeof v / (1 << 20);
    printf("file: %d MiB of values, %.1f MiB as Parquet (zstd), written in %.2f CPU s; "
           "fetches of %zu KiB, batches of %zu KiB, best of %d\n",
           mib, (double)file.len / (1 << 20), cpu_s() - t0, fetch >> 10, BATCH_BYTES >> 10, rounds);
    int codecs[] = {LS_CODEC_NONE, LS_CODEC_LZ4, LS_CODEC_ZSTD};
    const char *names[] = {"none", "lz4", "zstd"};
    for (int c = 0; c < 3; c++) {
        if (strcmp(only, "all") && strcmp(only, names[c])) continue;
        double one = -1, reopen = -1, kept = -1, codec_only = -1;
        size_t out = 0;
        int calls = 0;
        for (int round = 0; round < rounds; round++) {
            ls_cold_read_t rd;
            t0 = cpu_s();
            if (ls_cold_read_parquet(file.data, file.len, 0, 0, n - 1, codecs[c], false,
                                     BATCH_BYTES, SIZE_MAX, true, &rd, err, sizeof err) != LS_OK ||
                rd.records != n)
                return 2;
            one = best(one, cpu_s() - t0);
            out = rd.batches.len;
            /* the codec alone over the same records (uncompressed batches
             * of the same size), for the floor it sets */
            if (codecs[c] != LS_CODEC_NONE) {
                ls_cold_read_t raw;
                if (ls_cold_read_parquet(file.data, file.len, 0, 0, n - 1, LS_CODEC_NONE, false,
                                         BATCH_BYTES, SIZE_MAX, true, &raw, err,
                                         sizeof err) != LS_OK)
                    return 2;
                ls_buf_t z;
                ls_buf_init(&z);
                t0 = cpu_s();
                for (size_t at = 0; at < raw.batches.len;) {
                    size_t blen = 12 + ls_be32_get(raw.batches.data + at + 8);
                    z.len = 0;
                    if (ls_compress(codecs[c], raw.batches.data + at + 61, blen - 61, &z) != LS_OK)
                        return 2;
                    at += blen;
                }
                codec_only = best(codec_only, cpu_s() - t0);
                ls_buf_free(&z);
                ls_buf_free(&raw.batches);
            }
            ls_buf_free(&rd.batches);
            /* fetches, each call at the next offset, as the log reader asks */
            for (int kept_open = 0; kept_open < 2; kept_open++) {
                ls_status st;
                t0 = cpu_s();
                ls_cold_file_t *f =
                    kept_open ? ls_cold_file_open(file.data, file.len, &st, err, sizeof err) : NULL;
                if (kept_open && !f) return 3;
                int64_t at = 0;
                calls = 0;
                while (at < n) {
                    st = kept_open
                             ? ls_cold_file_read(f, 0, at, n - 1, codecs[c], false, BATCH_BYTES,
                                                 fetch, true, NULL, &rd, err, sizeof err)
                             : ls_cold_read_parquet(file.data, file.len, 0, at, n - 1, codecs[c],
                                                    false, BATCH_BYTES, fetch, true, &rd, err,
                                                    sizeof err);
                    if (st != LS_OK || rd.next_offset <= at) return 3;
                    at = rd.next_offset;
                    calls++;
                    ls_buf_free(&rd.batches);
                }
                ls_cold_file_free(f);
                double t = cpu_s() - t0;
                if (kept_open)
                    kept = best(kept, t);
                else
                    reopen = best(reopen, t);
            }
        }
        printf("codec %-4s: one call %4.0f MiB/s (%.1f MiB of batches); %d fetches: reopened "
               "%4.0f MiB/s, kept open %4.0f MiB/s",
               names[c], mib_values / one, (double)out / (1 << 20), calls, mib_values / reopen,
               mib_values / kept);
        if (codec_only > 0) printf("; codec alone %4.0f MiB/s", mib_values / codec_only);
        printf("\n");
    }
    ls_buf_free(&file);
    return 0;
}
