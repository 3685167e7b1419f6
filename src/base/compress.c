/* Codecs for Kafka record-batch payloads: gzip (zlib), snappy (raw blocks and
 * the xerial framing of the Java client), lz4 (frame format) and zstd.
 *
 * Input is hostile: it comes straight off a producer's socket. Invariants:
 *  - Output is bounded. Every decoder is given at most (max_out - produced + 1)
 *    bytes of room at a time; one byte beyond max_out proves the payload is too
 *    big (LS_ELIMIT) without ever holding more than max_out + 1 bytes, so a
 *    small "zip bomb" costs at most max_out of memory.
 *  - Truncated or malformed payloads are LS_ECORRUPT, including trailing bytes
 *    that do not form another complete member/frame. An empty payload is
 *    corrupt for every real codec: a valid stream always has a header.
 *  - On failure out->len is restored, so callers see either the whole result
 *    appended or nothing.
 * No state is kept between calls; each call owns its codec context. */
#include "base/compress.h"

#include <limits.h>
#include <pthread.h>
#include <string.h>

#include <lz4frame.h>
#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>

#include "base/alloc.h"

/* Growth step for streaming decoders: large enough that a typical 1 MiB batch
 * needs few calls, small enough not to over-reserve for tiny ones. */
#define DECOMP_STEP (64 * 1024)

static const uint8_t xerial_magic[8] = {0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0};
#define XERIAL_HEADER_LEN 16 /* magic + int32 version + int32 min-compatible version */

const char *ls_codec_name(int codec)
{
    switch (codec) {
    case LS_CODEC_NONE: return "none";
    case LS_CODEC_GZIP: return "gzip";
    case LS_CODEC_SNAPPY: return "snappy";
    case LS_CODEC_LZ4: return "lz4";
    case LS_CODEC_ZSTD: return "zstd";
    default: return "unknown";
    }
}

/* Room to offer a streaming decoder: up to DECOMP_STEP, but never more than
 * one byte past the limit (the byte that detects overflow). */
static size_t out_room(size_t produced, size_t max_out)
{
    size_t left = max_out - produced; /* produced <= max_out is an invariant */
    if (left >= DECOMP_STEP) return DECOMP_STEP;
    return left + 1;
}

/* ---- gzip --------------------------------------------------------------- */

static ls_status gunzip(const uint8_t *in, size_t len, size_t max_out, ls_buf_t *out)
{
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) return LS_EIO;
    ls_status st = LS_ECORRUPT;
    size_t start = out->len;
    const uint8_t *p = in, *end = in + len;

    /* zlib counts in uInt; feed input in pieces so huge buffers work too. */
    for (;;) {
        if (zs.avail_in == 0) {
            size_t chunk = (size_t)(end - p);
            if (chunk > UINT_MAX) chunk = UINT_MAX;
            zs.next_in = (Bytef *)p;
            zs.avail_in = (uInt)chunk;
            p += chunk;
        }
        size_t room = out_room(out->len - start, max_out);
        ls_buf_reserve(out, room);
        zs.next_out = out->data + out->len;
        zs.avail_out = (uInt)room;
        int rc = inflate(&zs, Z_NO_FLUSH);
        out->len += room - zs.avail_out;
        if (out->len - start > max_out) {
            st = LS_ELIMIT;
            goto inflate_end;
        }
        if (rc == Z_STREAM_END) {
            if (zs.avail_in == 0 && p == end) {
                st = LS_OK;
                goto inflate_end;
            }
            /* Another gzip member follows (RFC 1952 §2.2 allows concatenation,
             * and gzip(1) and Java's GZIPInputStream read them). */
            if (inflateReset(&zs) != Z_OK) goto inflate_end;
            continue;
        }
        if (rc == Z_BUF_ERROR) {
            /* No progress possible: input exhausted mid-stream (truncated). */
            if (zs.avail_in == 0 && p == end) goto inflate_end;
            continue;
        }
        if (rc != Z_OK) goto inflate_end; /* Z_DATA_ERROR, Z_NEED_DICT, Z_STREAM_ERROR */
        if (zs.avail_in == 0 && p == end && zs.avail_out != 0)
            goto inflate_end; /* consumed everything, stream not finished */
    }
inflate_end:
    inflateEnd(&zs);
    return st;
}

static ls_status gzip_compress(const uint8_t *in, size_t len, int level, ls_buf_t *out)
{
    if (len > UINT_MAX) return LS_EINVAL;
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (deflateInit2(&zs, level == LS_COMPRESS_LEVEL_DEFAULT ? Z_DEFAULT_COMPRESSION : level,
                     Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return LS_EIO;
    /* deflateBound() does not count the gzip wrapper; add room for it. */
    size_t bound = deflateBound(&zs, (uLong)len) + 32;
    ls_buf_reserve(out, bound);
    zs.next_in = (Bytef *)in;
    zs.avail_in = (uInt)len;
    zs.next_out = out->data + out->len;
    zs.avail_out = (uInt)bound;
    int rc = deflate(&zs, Z_FINISH);
    ls_status st = LS_EIO;
    if (rc == Z_STREAM_END) {
        out->len += bound - zs.avail_out;
        st = LS_OK;
    }
    deflateEnd(&zs);
    return st;
}

/* ---- snappy ------------------------------------------------------------- */

static ls_status snappy_block(const uint8_t *in, size_t len, size_t max_out, size_t start,
                              ls_buf_t *out)
{
    size_t ulen;
    /* Validation walks the block without writing, so garbage is refused as
     * corrupt before its length prefix (a 5-byte block may claim 4 GiB) is
     * trusted for an allocation. */
    if (snappy_validate_compressed_buffer((const char *)in, len) != SNAPPY_OK ||
        snappy_uncompressed_length((const char *)in, len, &ulen) != SNAPPY_OK)
        return LS_ECORRUPT;
    if (ulen > max_out - (out->len - start)) return LS_ELIMIT;
    if (ulen == 0) return LS_OK; /* validated above; out->data may still be NULL */
    ls_buf_reserve(out, ulen);
    size_t got = ulen;
    if (snappy_uncompress((const char *)in, len, (char *)out->data + out->len, &got) != SNAPPY_OK ||
        got != ulen)
        return LS_ECORRUPT;
    out->len += got;
    return LS_OK;
}

/* xerial snappy-java framing (SnappyOutputStream): a 16-byte header, then
 * repeated [int32 BE compressed length][raw snappy block]. */
static ls_status snappy_xerial(const uint8_t *in, size_t len, size_t max_out, size_t start,
                               ls_buf_t *out)
{
    size_t pos = XERIAL_HEADER_LEN;
    while (pos < len) {
        if (len - pos < 4) return LS_ECORRUPT;
        uint32_t blen = ls_be32_get(in + pos);
        pos += 4;
        if (blen == 0 || blen > len - pos) return LS_ECORRUPT;
        ls_status st = snappy_block(in + pos, blen, max_out, start, out);
        if (st != LS_OK) return st;
        pos += blen;
    }
    return LS_OK;
}

static ls_status unsnappy(const uint8_t *in, size_t len, size_t max_out, ls_buf_t *out)
{
    size_t start = out->len;
    if (len >= XERIAL_HEADER_LEN && memcmp(in, xerial_magic, sizeof xerial_magic) == 0)
        return snappy_xerial(in, len, max_out, start, out);
    return snappy_block(in, len, max_out, start, out);
}

static ls_status snappy_compress_raw(const uint8_t *in, size_t len, ls_buf_t *out)
{
    size_t bound = snappy_max_compressed_length(len);
    ls_buf_reserve(out, bound);
    size_t got = bound;
    if (snappy_compress((const char *)in, len, (char *)out->data + out->len, &got) != SNAPPY_OK)
        return LS_EIO;
    out->len += got;
    return LS_OK;
}

/* ---- lz4 ---------------------------------------------------------------- */

static ls_status unlz4(const uint8_t *in, size_t len, size_t max_out, ls_buf_t *out)
{
    LZ4F_dctx *dctx;
    if (LZ4F_isError(LZ4F_createDecompressionContext(&dctx, LZ4F_VERSION))) return LS_EIO;
    ls_status st = LS_ECORRUPT;
    size_t start = out->len;
    size_t pos = 0;
    size_t hint = 1; /* non-zero: a frame is still expected */
    while (pos < len) {
        size_t room = out_room(out->len - start, max_out);
        ls_buf_reserve(out, room);
        size_t src = len - pos, dst = room;
        hint = LZ4F_decompress(dctx, out->data + out->len, &dst, in + pos, &src, NULL);
        if (LZ4F_isError(hint)) goto free_dctx;
        pos += src;
        out->len += dst;
        if (out->len - start > max_out) {
            st = LS_ELIMIT;
            goto free_dctx;
        }
        /* hint == 0 ends a frame; the context is ready for a following one. */
        if (src == 0 && dst == 0 && hint != 0)
            goto free_dctx; /* no progress: cannot happen with room > 0, but never spin */
    }
    /* Input ended: done only if the last frame was complete and fully flushed. */
    while (hint != 0) {
        size_t room = out_room(out->len - start, max_out);
        ls_buf_reserve(out, room);
        size_t src = 0, dst = room;
        hint = LZ4F_decompress(dctx, out->data + out->len, &dst, in + len, &src, NULL);
        if (LZ4F_isError(hint) || dst == 0) break;
        out->len += dst;
        if (out->len - start > max_out) {
            st = LS_ELIMIT;
            goto free_dctx;
        }
    }
    if (hint == 0) st = LS_OK;
free_dctx:
    LZ4F_freeDecompressionContext(dctx);
    return st;
}

static ls_status lz4_compress(const uint8_t *in, size_t len, int level, ls_buf_t *out)
{
    LZ4F_preferences_t prefs;
    memset(&prefs, 0, sizeof prefs);
    prefs.frameInfo.contentSize = len;
    if (level != LS_COMPRESS_LEVEL_DEFAULT) prefs.compressionLevel = level;
    size_t bound = LZ4F_compressFrameBound(len, &prefs);
    ls_buf_reserve(out, bound);
    size_t got = LZ4F_compressFrame(out->data + out->len, bound, in, len, &prefs);
    if (LZ4F_isError(got)) return LS_EIO;
    out->len += got;
    return LS_OK;
}

/* ---- zstd ---------------------------------------------------------------
 * Contexts are costly to create (megabytes of tables, faulted in fresh every
 * time), so finished ones wait in a small pool for the next call on any
 * thread; the pool is bounded, extra contexts are freed. */

#define ZPOOL_MAX 8
typedef struct zpool {
    void *v[ZPOOL_MAX];
    int n;
} zpool_t;
static pthread_mutex_t zpool_mu = PTHREAD_MUTEX_INITIALIZER;
static zpool_t zpool_c, zpool_d; /* ZSTD_CCtx, ZSTD_DStream */

static void *zpool_take(zpool_t *p)
{
    pthread_mutex_lock(&zpool_mu);
    void *x = p->n ? p->v[--p->n] : NULL;
    pthread_mutex_unlock(&zpool_mu);
    return x;
}

/* Keeps x; returns what to free (x when the pool is full, else NULL). */
static void *zpool_give(zpool_t *p, void *x)
{
    pthread_mutex_lock(&zpool_mu);
    if (p->n < ZPOOL_MAX) {
        p->v[p->n++] = x;
        x = NULL;
    }
    pthread_mutex_unlock(&zpool_mu);
    return x;
}

static ZSTD_CCtx *cctx_get(void)
{
    ZSTD_CCtx *c = zpool_take(&zpool_c);
    return c ? c : ZSTD_createCCtx();
}

static void cctx_put(ZSTD_CCtx *c) { ZSTD_freeCCtx(zpool_give(&zpool_c, c)); }

static ZSTD_DStream *dstream_get(void)
{
    ZSTD_DStream *d = zpool_take(&zpool_d);
    if (d && ZSTD_isError(ZSTD_DCtx_reset(d, ZSTD_reset_session_only))) {
        ZSTD_freeDStream(d);
        d = NULL;
    }
    return d ? d : ZSTD_createDStream();
}

static void dstream_put(ZSTD_DStream *d) { ZSTD_freeDStream(zpool_give(&zpool_d, d)); }

static ls_status unzstd(const uint8_t *in, size_t len, size_t max_out, ls_buf_t *out)
{
    /* Fast refusal when the frame header states its size (librdkafka does). */
    unsigned long long csize = ZSTD_getFrameContentSize(in, len);
    if (csize == ZSTD_CONTENTSIZE_ERROR) return LS_ECORRUPT;
    if (csize != ZSTD_CONTENTSIZE_UNKNOWN && csize > max_out) return LS_ELIMIT;

    ZSTD_DStream *ds = dstream_get();
    if (!ds) return LS_EIO;
    /* The window limit stays at zstd's default (2^27): Java producers stream
     * without a pledged size, so their frames declare the level's full window
     * even for tiny batches, and refusing those would refuse valid input. */
    ls_status st = LS_ECORRUPT;
    size_t start = out->len;
    ZSTD_inBuffer ib = {in, len, 0};
    size_t last = 1; /* non-zero: a frame is still open (or none was seen) */
    do {
        size_t room = out_room(out->len - start, max_out);
        ls_buf_reserve(out, room);
        ZSTD_outBuffer ob = {out->data + out->len, room, 0};
        size_t before = ib.pos;
        last = ZSTD_decompressStream(ds, &ob, &ib);
        if (ZSTD_isError(last)) goto free_ds;
        out->len += ob.pos;
        if (out->len - start > max_out) {
            st = LS_ELIMIT;
            goto free_ds;
        }
        /* Output not full and no input consumed: the decoder wants bytes we
         * do not have — a truncated frame. */
        if (ob.pos < room && ib.pos == before && ib.pos == ib.size && last != 0) goto free_ds;
    } while (ib.pos < ib.size || last != 0);
    st = LS_OK;
free_ds:
    dstream_put(ds);
    return st;
}

#define ZSTD_RAW_BLOCK ((size_t)128 << 10)

static ls_status zstd_compress(const uint8_t *in, size_t len, int level, ls_buf_t *out)
{
    size_t bound = ZSTD_compressBound(len);
    ls_buf_reserve(out, bound);
    ZSTD_CCtx *c = cctx_get();
    if (!c) return LS_EIO;
    size_t got = ZSTD_compressCCtx(c, out->data + out->len, bound, in, len,
                                   level == LS_COMPRESS_LEVEL_DEFAULT ? 3 : level);
    cctx_put(c);
    if (ZSTD_isError(got)) return LS_EIO;
    out->len += got;
    return LS_OK;
}

/* A zstd frame of raw blocks (RFC 8878 §3.1.1): the frame zstd itself
 * writes for input it cannot shrink, made without its match search. Single
 * segment, so the content size is in the header (its smallest encoding) and
 * the window is the content; blocks of at most 128 KiB (Block_Maximum_Size);
 * no checksum. */
static int raw_fcs_bytes(size_t len)
{
    return len < 256 ? 1 : len < 65536 + 256 ? 2 : len <= UINT32_MAX ? 4 : 8;
}

size_t ls_zstd_raw_frame_size(size_t len)
{
    size_t nblocks = len ? (len + ZSTD_RAW_BLOCK - 1) / ZSTD_RAW_BLOCK : 1;
    return 4 + 1 + (size_t)raw_fcs_bytes(len) + nblocks * 3 + len;
}

void ls_zstd_raw_frame(const uint8_t *in, size_t len, ls_buf_t *out)
{
    size_t nblocks = len ? (len + ZSTD_RAW_BLOCK - 1) / ZSTD_RAW_BLOCK : 1;
    ls_buf_reserve(out, 4 + 1 + 8 + nblocks * 3 + len);
    uint8_t *p = out->data + out->len;
    p[0] = 0x28, p[1] = 0xb5, p[2] = 0x2f, p[3] = 0xfd; /* magic 0xFD2FB528 */
    p += 4;
    uint64_t fcs = len;
    int fcs_bytes = raw_fcs_bytes(len);
    int flag = fcs_bytes == 1 ? 0 : fcs_bytes == 2 ? 1 : fcs_bytes == 4 ? 2 : 3;
    if (fcs_bytes == 2) fcs -= 256;
    *p++ = (uint8_t)(flag << 6 | 1 << 5); /* FCS flag, Single_Segment */
    for (int i = 0; i < fcs_bytes; i++)
        *p++ = (uint8_t)(fcs >> (8 * i));
    size_t at = 0;
    do {
        size_t n = len - at < ZSTD_RAW_BLOCK ? len - at : ZSTD_RAW_BLOCK;
        uint32_t last = at + n == len;
        uint32_t h = (uint32_t)n << 3 | 0 << 1 | last; /* Block_Type 0: Raw */
        p[0] = (uint8_t)h, p[1] = (uint8_t)(h >> 8), p[2] = (uint8_t)(h >> 16);
        p += 3;
        if (n) memcpy(p, in + at, n);
        p += n;
        at += n;
    } while (at < len);
    out->len = (size_t)(p - out->data);
}

/* ---- dispatch ----------------------------------------------------------- */

ls_status ls_decompress(int codec, const uint8_t *in, size_t len, size_t max_out, ls_buf_t *out)
{
    size_t start = out->len;
    ls_status st;
    switch (codec) {
    case LS_CODEC_NONE:
        if (len > max_out) return LS_ELIMIT;
        ls_buf_append(out, in, len);
        return LS_OK;
    case LS_CODEC_GZIP: st = len ? gunzip(in, len, max_out, out) : LS_ECORRUPT; break;
    case LS_CODEC_SNAPPY: st = len ? unsnappy(in, len, max_out, out) : LS_ECORRUPT; break;
    case LS_CODEC_LZ4: st = len ? unlz4(in, len, max_out, out) : LS_ECORRUPT; break;
    case LS_CODEC_ZSTD: st = len ? unzstd(in, len, max_out, out) : LS_ECORRUPT; break;
    default: return LS_EINVAL;
    }
    if (st != LS_OK) out->len = start;
    return st;
}

ls_status ls_decompress_exact(int codec, const uint8_t *in, size_t len, uint8_t *out,
                              size_t out_len)
{
    switch (codec) {
    case LS_CODEC_NONE:
        if (len != out_len) return LS_ECORRUPT;
        if (len) memcpy(out, in, len);
        return LS_OK;
    case LS_CODEC_ZSTD: {
        /* one pass straight into out: no window buffer, no growing output */
        if (!len) return LS_ECORRUPT;
        ZSTD_DStream *ds = dstream_get();
        if (!ds) return LS_EIO;
        size_t got = ZSTD_decompressDCtx(ds, out, out_len, in, len);
        dstream_put(ds);
        return !ZSTD_isError(got) && got == out_len ? LS_OK : LS_ECORRUPT;
    }
    case LS_CODEC_SNAPPY:
        if (len && !(len >= XERIAL_HEADER_LEN && !memcmp(in, xerial_magic, sizeof xerial_magic))) {
            size_t ulen, got = out_len;
            if (snappy_uncompressed_length((const char *)in, len, &ulen) != SNAPPY_OK ||
                ulen != out_len)
                return LS_ECORRUPT;
            if (!ulen) return LS_OK;
            return snappy_uncompress((const char *)in, len, (char *)out, &got) == SNAPPY_OK &&
                           got == out_len
                       ? LS_OK
                       : LS_ECORRUPT;
        }
        break;
    default: break;
    }
    /* the others through the streaming decoders, then copied */
    ls_buf_t b;
    ls_buf_init(&b);
    ls_status st = ls_decompress(codec, in, len, out_len, &b);
    if (st == LS_OK && b.len != out_len) st = LS_ECORRUPT;
    if (st == LS_ELIMIT) st = LS_ECORRUPT;
    if (st == LS_OK && out_len) memcpy(out, b.data, out_len);
    ls_buf_free(&b);
    return st;
}

ls_status ls_compress(int codec, const uint8_t *in, size_t len, ls_buf_t *out)
{
    return ls_compress_level(codec, LS_COMPRESS_LEVEL_DEFAULT, in, len, out);
}

ls_status ls_compress_level(int codec, int level, const uint8_t *in, size_t len, ls_buf_t *out)
{
    size_t start = out->len;
    ls_status st;
    switch (codec) {
    case LS_CODEC_NONE: ls_buf_append(out, in, len); return LS_OK;
    case LS_CODEC_GZIP: st = gzip_compress(in, len, level, out); break;
    case LS_CODEC_SNAPPY: st = snappy_compress_raw(in, len, out); break;
    case LS_CODEC_LZ4: st = lz4_compress(in, len, level, out); break;
    case LS_CODEC_ZSTD: st = zstd_compress(in, len, level, out); break;
    default: return LS_EINVAL;
    }
    if (st != LS_OK) out->len = start;
    return st;
}
