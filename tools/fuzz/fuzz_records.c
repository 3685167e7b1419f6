/* libFuzzer harness for the produce-path decoder: ls_records_validate and
 * ls_records_foreach (and through them CRC-32C and every decompressor).
 *
 * Each input is tried twice: as given, and with every batch's CRC recomputed.
 * Random mutations almost never keep a CRC-32C valid, so without the second
 * pass the fuzzer would stop at the checksum and never reach record parsing
 * or the codecs behind it.
 *
 * Build and run (clang; `apt-get install -y clang` if missing):
 *   clang -g -O1 -std=c11 -D_GNU_SOURCE -Isrc \
 *       -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
 *       -o build/fuzz_records tools/fuzz/fuzz_records.c src/kafka/records.c \
 *       src/base/crc32c.c src/base/compress.c src/base/buf.c src/base/alloc.c \
 *       src/base/status.c -lz -lzstd -llz4 -lsnappy
 *   mkdir -p build/fuzz-corpus && build/fuzz_records -max_total_time=60 \
 *       -max_len=65536 -rss_limit_mb=2048 build/fuzz-corpus
 * A crash leaves crash-<sha1> in the current directory; replay it with
 *   build/fuzz_records crash-<sha1>
 * and turn it into a regression test in tests/unit/records/test_records.c. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/crc32c.h"
#include "records/records.h"

#define FUZZ_MAX_BATCH ((size_t)1 << 20)
#define FUZZ_MAX_DECOMPRESSED ((size_t)4 << 20)

/* Reads every byte the view points at, so ASan sees any view that escapes
 * the batch or its decompressed copy. */
static int touch(void *arg, const ls_record_view_t *r)
{
    unsigned *sum = arg;
    for (int32_t i = 0; i < r->key_len; i++)
        *sum += r->key[i];
    for (int32_t i = 0; i < r->value_len; i++)
        *sum += r->value[i];
    for (size_t i = 0; i < r->headers_len; i++)
        *sum += r->headers[i];
    *sum += (unsigned)r->timestamp + (unsigned)r->offset_delta;
    return 0;
}

static void exercise(const uint8_t *p, size_t n)
{
    ls_batch_info_t infos[16];
    int ninfos = 0;
    char why[256];
    ls_records_validate(p, n, FUZZ_MAX_BATCH, infos, 16, &ninfos, why, sizeof why);
    if (ninfos < 0 || ninfos > 16) abort();
    for (int i = 0; i < ninfos; i++)
        if (infos[i].pos + infos[i].size > n)
            abort(); /* a validated batch must lie inside the input */
    unsigned sum = 0;
    ls_records_foreach(p, n, FUZZ_MAX_DECOMPRESSED, touch, &sum);
}

/* Writes the right CRC into every batch whose framing can be followed. */
static void seal_crcs(uint8_t *p, size_t n)
{
    size_t pos = 0;
    while (n - pos >= LS_RB_HEADER_SIZE) {
        int32_t blen = (int32_t)ls_be32_get(p + pos + LS_RB_OFF_LENGTH);
        if (blen < LS_RB_HEADER_SIZE - 12 || (size_t)blen > n - pos - 12) return;
        size_t size = 12 + (size_t)blen;
        uint32_t crc = ls_crc32c(0, p + pos + LS_RB_OFF_ATTRIBUTES, size - LS_RB_OFF_ATTRIBUTES);
        ls_be32_put(p + pos + LS_RB_OFF_CRC, crc);
        pos += size;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    exercise(data, size);
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy) return 0;
    memcpy(copy, data, size);
    seal_crcs(copy, size);
    exercise(copy, size);
    free(copy);
    return 0;
}
