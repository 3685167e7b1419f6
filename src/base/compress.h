/* Decompression of Kafka record-batch payloads (and compression, for tests and
 * for writing compacted objects). Codec ids are Kafka's attribute bits 0-2. */
#ifndef LS_COMPRESS_H
#define LS_COMPRESS_H
#include <stddef.h>
#include <stdint.h>
#include "base/buf.h"
#include "base/status.h"

enum {
    LS_CODEC_NONE = 0,
    LS_CODEC_GZIP = 1,
    LS_CODEC_SNAPPY = 2,
    LS_CODEC_LZ4 = 3,
    LS_CODEC_ZSTD = 4
};

/* Appends the decompressed bytes of in[0..len) to out. Fails with LS_ECORRUPT
 * on malformed input and LS_ELIMIT when the output would exceed max_out.
 * Snappy accepts both raw blocks and the xerial framing the Java client sends.
 * LZ4 is the LZ4 frame format. */
ls_status ls_decompress(int codec, const uint8_t *in, size_t len, size_t max_out, ls_buf_t *out);
/* Decompresses in[0..len) into out[0..out_len) in one pass, for callers that
 * know the exact decompressed size (Parquet pages): LS_OK only when the input
 * yields exactly out_len bytes, LS_ECORRUPT otherwise, LS_EINVAL for an
 * unknown codec. zstd and raw snappy write straight into out. */
ls_status ls_decompress_exact(int codec, const uint8_t *in, size_t len, uint8_t *out,
                              size_t out_len);
/* Appends compressed bytes (snappy: raw block; lz4: frame). */
ls_status ls_compress(int codec, const uint8_t *in, size_t len, ls_buf_t *out);
/* ls_compress at a level: gzip 1..9, lz4 1..17 (3 and up: high compression),
 * zstd -131072..22 (Kafka's compression.<codec>.level ranges); snappy has
 * none. LS_COMPRESS_LEVEL_DEFAULT: the codec's own default (gzip 6, lz4 fast,
 * zstd 3). */
#define LS_COMPRESS_LEVEL_DEFAULT INT32_MIN
ls_status ls_compress_level(int codec, int level, const uint8_t *in, size_t len, ls_buf_t *out);
/* Appends in[0..len) as one zstd frame of raw (stored) blocks: what zstd
 * writes for incompressible input, without the cost of trying. */
void ls_zstd_raw_frame(const uint8_t *in, size_t len, ls_buf_t *out);
/* The bytes ls_zstd_raw_frame appends for len bytes of input. */
size_t ls_zstd_raw_frame_size(size_t len);
const char *ls_codec_name(int codec);
#endif
