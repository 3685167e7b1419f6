/* Cold-read rebuild throughput (issue 13): how fast RecordBatches v2 are
 * rebuilt from a raw table data file (compact/cold_batches.c), against
 * the bytes a compacted object would serve as they are.
 *
 *   make build/bench/cold_read_bench && build/bench/cold_read_bench [MiB] [fetch KiB]
 *
 * Writes one raw Parquet file (zstd, the materializer's default options) of
 * MiB of 1 KiB values for one partition, then reads the partition back
 * (a) in one call, (b) as a catching-up consumer does: one call per fetch
 * of `fetch KiB`, each at the next offset, for the codecs none, lz4, zstd.
 * Prints MiB of record values per second of one core (CLOCK_PROCESS_CPUTIME). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/buf.h"
#include "base/compress.h"
#include "compact/cold_batches.h"
#include "table/iceberg_raw.h"

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    int mib = argc > 1 ? atoi(argv[1]) : 64;
    size_t fetch = (size_t)(argc > 2 ? atoi(argv[2]) : 1024) << 10;
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
    printf("file: %d MiB of values, %.1f MiB as Parquet (zstd), written in %.2f CPU s\n", mib,
           (double)file.len / (1 << 20), cpu_s() - t0);
    int codecs[] = {LS_CODEC_NONE, LS_CODEC_LZ4, LS_CODEC_ZSTD};
    const char *names[] = {"none", "lz4", "zstd"};
    for (int c = 0; c < 3; c++) {
        ls_cold_read_t rd;
        t0 = cpu_s();
        if (ls_cold_read_parquet(file.data, file.len, 0, 0, n - 1, codecs[c], false, 1 << 20,
                                 SIZE_MAX, true, &rd, err, sizeof err) != LS_OK ||
            rd.records != n)
            return 2;
        double one = cpu_s() - t0;
        size_t out = rd.batches.len;
        ls_buf_free(&rd.batches);
        /* fetches: each call at the next offset, as the log reader asks */
        t0 = cpu_s();
        int64_t at = 0;
        int calls = 0;
        while (at < n) {
            if (ls_cold_read_parquet(file.data, file.len, 0, at, n - 1, codecs[c], false, 256 << 10,
                                     fetch, true, &rd, err, sizeof err) != LS_OK ||
                rd.next_offset <= at)
                return 3;
            at = rd.next_offset;
            calls++;
            ls_buf_free(&rd.batches);
        }
        double per = cpu_s() - t0;
        printf("codec %-4s: one call %.0f MiB/s (%.1f MiB of batches); %d fetches of %zu KiB: "
               "%.0f MiB/s\n",
               names[c], mib_values / one, (double)out / (1 << 20), calls, fetch >> 10,
               mib_values / per);
    }
    ls_buf_free(&file);
    return 0;
}
