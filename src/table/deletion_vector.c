/* Deletion vectors: the blob codec, the Puffin file around it, the upload.
 *
 * Why (format version 3, merge-on-read upsert tables): Iceberg v3 replaces
 * position delete files by one deletion vector per data file. A reader
 * loads one small bitmap per data file instead of joining the file against
 * every delete file of its partition, and the writer keeps at most one
 * vector per data file: a commit that deletes more rows of a file writes
 * that file's vector again (old positions and new) and removes the old one
 * in the same snapshot (file_rewrite.c), so deletes never pile up per file.
 *
 * One Puffin file per vector: a vector's entry is removed by the snapshot
 * that replaces it, and snapshot expiry deletes the files entries DELETED
 * by expired snapshots name (iceberg_maintain.c), which is only right when
 * no other live entry names the same file. Iceberg's Java writer shares one
 * Puffin file among the vectors of a task; this writer pays one PUT per
 * data file a commit deletes from instead (docs/FORMATS.md).
 *
 * Encoding: 32-bit Roaring containers as arrays (at most 4 096 values, 2
 * bytes each) or bitmaps (8 KiB), whichever the Roaring format assigns by
 * cardinality; no run containers are written (the no-run cookie), every
 * kind is read. */
#include "table/deletion_vector.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <zlib.h>

#include "base/alloc.h"

#define DV_MAGIC 0x6439D3D1u /* bytes D1 D3 39 64 read little-endian */
#define ROARING_NO_RUN 12346u
#define ROARING_RUN 12347u
#define ARRAY_MAX 4096               /* the Roaring format's array/bitmap boundary */
#define POSITION_FIELD_ID 2147483645 /* _pos, what Java names in the blob's fields */

static void put_le(ls_buf_t *b, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        ls_buf_append_u8(b, (uint8_t)(v >> (8 * i)));
}

static void put_be32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (24 - 8 * i));
}

static uint64_t get_le(const uint8_t *p, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static uint32_t get_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The 32-bit Roaring bitmap of the low halves lo[0..n) (sorted). */
static void roaring32_encode(const uint32_t *lo, size_t n, ls_buf_t *b)
{
    size_t nc = 0; /* containers: one per distinct high 16 bits */
    for (size_t i = 0; i < n; i++)
        nc += i == 0 || (lo[i] >> 16) != (lo[i - 1] >> 16);
    put_le(b, ROARING_NO_RUN, 4);
    put_le(b, nc, 4);
    size_t *start = LS_NEWN(size_t, nc + 1);
    for (size_t i = 0, c = 0; i < n; i++)
        if (i == 0 || (lo[i] >> 16) != (lo[i - 1] >> 16)) start[c++] = i;
    start[nc] = n;
    for (size_t c = 0; c < nc; c++) {
        put_le(b, lo[start[c]] >> 16, 2);
        put_le(b, start[c + 1] - start[c] - 1, 2);
    }
    uint64_t off = 8 + 8 * (uint64_t)nc; /* offsets count from the cookie */
    for (size_t c = 0; c < nc; c++) {
        put_le(b, off, 4);
        size_t card = start[c + 1] - start[c];
        off += card > ARRAY_MAX ? 8192 : 2 * card;
    }
    for (size_t c = 0; c < nc; c++) {
        size_t card = start[c + 1] - start[c];
        if (card <= ARRAY_MAX) {
            for (size_t i = start[c]; i < start[c + 1]; i++)
                put_le(b, lo[i] & 0xffff, 2);
            continue;
        }
        uint64_t words[1024] = {0};
        for (size_t i = start[c]; i < start[c + 1]; i++)
            words[(lo[i] & 0xffff) >> 6] |= 1ull << (lo[i] & 63);
        for (int w = 0; w < 1024; w++)
            put_le(b, words[w], 8);
    }
    ls_free(start);
}

void ls_dv_encode(const int64_t *pos, size_t n, ls_buf_t *out)
{
    size_t at = out->len;
    put_le(out, 0, 4); /* the length, set below */
    put_le(out, DV_MAGIC, 4);
    size_t nkeys = 0;
    for (size_t i = 0; i < n; i++)
        nkeys += i == 0 || (pos[i] >> 32) != (pos[i - 1] >> 32);
    put_le(out, nkeys, 8);
    uint32_t *lo = LS_NEWN(uint32_t, n ? n : 1);
    for (size_t i = 0; i < n;) {
        size_t e = i;
        while (e < n && (pos[e] >> 32) == (pos[i] >> 32)) {
            lo[e - i] = (uint32_t)pos[e];
            e++;
        }
        put_le(out, (uint64_t)pos[i] >> 32, 4);
        roaring32_encode(lo, e - i, out);
        i = e;
    }
    ls_free(lo);
    size_t body = out->len - at - 4;
    put_be32(out->data + at, (uint32_t)body);
    uint8_t crc[4];
    put_be32(crc, (uint32_t)crc32(0, out->data + at + 4, (uInt)body));
    ls_buf_append(out, crc, 4);
}

/* ---- decoding ------------------------------------------------------------ */

typedef struct dec {
    const uint8_t *p;
    size_t len, at;
    int64_t *pos;
    size_t n, cap;
    char *err;
    size_t errlen;
} dec_t;

static int dec_fail(dec_t *d, const char *why)
{
    snprintf(d->err, d->errlen, "deletion vector: %s", why);
    return -1;
}

static int need(dec_t *d, size_t n)
{
    return d->len - d->at >= n ? 0 : dec_fail(d, "truncated bitmap");
}

static int add_pos(dec_t *d, uint64_t v)
{
    if (d->n && (int64_t)v <= d->pos[d->n - 1]) return dec_fail(d, "positions out of order");
    if (d->n == d->cap) {
        d->cap = d->cap ? 2 * d->cap : 64;
        d->pos = ls_realloc(d->pos, d->cap * sizeof *d->pos);
    }
    d->pos[d->n++] = (int64_t)v;
    return 0;
}

/* One 32-bit Roaring bitmap whose values get the high half key. */
static int roaring32_decode(dec_t *d, uint64_t key)
{
    if (need(d, 4)) return -1;
    uint32_t cookie = (uint32_t)get_le(d->p + d->at, 4);
    size_t nc;
    const uint8_t *runs = NULL;
    bool offsets;
    d->at += 4;
    if (cookie == ROARING_NO_RUN) {
        if (need(d, 4)) return -1;
        nc = get_le(d->p + d->at, 4);
        d->at += 4;
        offsets = true;
    } else if ((cookie & 0xffff) == ROARING_RUN) {
        nc = (cookie >> 16) + 1;
        if (need(d, (nc + 7) / 8)) return -1;
        runs = d->p + d->at;
        d->at += (nc + 7) / 8;
        offsets = nc >= 4; /* the format's NO_OFFSET_THRESHOLD */
    } else {
        return dec_fail(d, "not a Roaring bitmap (cookie)");
    }
    if (nc > 65536 || need(d, 4 * nc + (offsets ? 4 * nc : 0))) return -1;
    const uint8_t *hdr = d->p + d->at;
    d->at += 4 * nc + (offsets ? 4 * nc : 0);
    for (size_t c = 0; c < nc; c++) {
        uint64_t high = get_le(hdr + 4 * c, 2), card = get_le(hdr + 4 * c + 2, 2) + 1;
        uint64_t base = key << 32 | high << 16;
        if (runs && (runs[c / 8] >> (c % 8)) & 1) {
            if (need(d, 2)) return -1;
            size_t nr = get_le(d->p + d->at, 2);
            d->at += 2;
            if (need(d, 4 * nr)) return -1;
            for (size_t r = 0; r < nr; r++) {
                uint64_t s = get_le(d->p + d->at + 4 * r, 2),
                         l = get_le(d->p + d->at + 4 * r + 2, 2);
                if (s + l > 0xffff) return dec_fail(d, "a run past its container");
                for (uint64_t v = s; v <= s + l; v++)
                    if (add_pos(d, base | v)) return -1;
            }
            d->at += 4 * nr;
        } else if (card <= ARRAY_MAX) {
            if (need(d, 2 * card)) return -1;
            for (size_t i = 0; i < card; i++)
                if (add_pos(d, base | get_le(d->p + d->at + 2 * i, 2))) return -1;
            d->at += 2 * card;
        } else {
            if (need(d, 8192)) return -1;
            for (uint64_t w = 0; w < 1024; w++) {
                uint64_t bits = get_le(d->p + d->at + 8 * w, 8);
                for (int k = 0; bits && k < 64; k++, bits >>= 1)
                    if ((bits & 1) && add_pos(d, base | (w << 6) | (uint64_t)k)) return -1;
            }
            d->at += 8192;
        }
    }
    return 0;
}

ls_status ls_dv_decode(const uint8_t *p, size_t len, int64_t **pos, size_t *n, char *err,
                       size_t errlen)
{
    *pos = NULL;
    *n = 0;
    dec_t d = {.p = p, .len = len, .err = err, .errlen = errlen};
    int bad = 0;
    if (len < 20 || get_be32(p) != len - 8) {
        bad = dec_fail(&d, "its length field disagrees with the blob");
    } else if ((uint32_t)get_le(p + 4, 4) != DV_MAGIC) {
        bad = dec_fail(&d, "no D1 D3 39 64 magic");
    } else if (get_be32(p + len - 4) != (uint32_t)crc32(0, p + 4, (uInt)(len - 8))) {
        bad = dec_fail(&d, "checksum mismatch");
    } else {
        d.len = len - 4;
        d.at = 16;
        uint64_t nkeys = get_le(p + 8, 8);
        for (uint64_t k = 0; k < nkeys && !bad; k++) {
            if ((bad = need(&d, 4))) break;
            uint64_t key = get_le(p + d.at, 4);
            d.at += 4;
            if (key > INT32_MAX) bad = dec_fail(&d, "a position past 2^63");
            if (!bad) bad = roaring32_decode(&d, key);
        }
        if (!bad && d.at != d.len) bad = dec_fail(&d, "bytes after the bitmap");
    }
    if (bad) {
        ls_free(d.pos);
        return LS_ECORRUPT;
    }
    *pos = d.pos;
    *n = d.n;
    return LS_OK;
}

/* ---- the Puffin file ----------------------------------------------------- */

static const uint8_t PUFFIN_MAGIC[4] = {0x50, 0x46, 0x41, 0x31}; /* "PFA1" */

void ls_dv_puffin(const char *data_path, const int64_t *pos, size_t n, ls_buf_t *out,
                  int64_t *blob_offset, int64_t *blob_length)
{
    ls_buf_append(out, PUFFIN_MAGIC, 4);
    *blob_offset = (int64_t)out->len;
    ls_dv_encode(pos, n, out);
    *blob_length = (int64_t)out->len - *blob_offset;
    char card[32];
    snprintf(card, sizeof card, "%zu", n);
    json_t *footer =
        json_pack("{s:[{s:s, s:[i], s:i, s:i, s:I, s:I, s:{s:s, s:s}}], s:{s:s}}", "blobs", "type",
                  "deletion-vector-v1", "fields", POSITION_FIELD_ID, "snapshot-id", -1,
                  "sequence-number", -1, "offset", (json_int_t)*blob_offset, "length",
                  (json_int_t)*blob_length, "properties", "referenced-data-file", data_path,
                  "cardinality", card, "properties", "created-by", "lakestream-c");
    char *text = json_dumps(footer, JSON_COMPACT);
    json_decref(footer);
    size_t tl = strlen(text);
    ls_buf_append(out, PUFFIN_MAGIC, 4);
    ls_buf_append(out, text, tl);
    put_le(out, tl, 4);
    put_le(out, 0, 4); /* flags: the footer is not compressed */
    ls_buf_append(out, PUFFIN_MAGIC, 4);
    free(text);
}

ls_status ls_dv_write(ls_ice_table_t *t, const char *data_path, const int64_t *pos, size_t n,
                      const ls_ice_pval_t *part, ls_ice_datafile_t *df, char *err, size_t errlen)
{
    ls_buf_t out;
    ls_buf_init(&out);
    memset(df, 0, sizeof *df);
    ls_dv_puffin(data_path, pos, n, &out, &df->content_offset, &df->content_size);
    df->content = LS_ICE_CONTENT_POSITION_DELETES;
    df->record_count = (int64_t)n;
    df->referenced_data_file = ls_strdup(data_path);
    for (int i = 0; i < LS_ICE_MAX_PART; i++) /* df owns its values */
        ls_ice_pval_copy(&df->partition[i], &part[i]);
    ls_status st = ls_ice_table_put_data(t, &out, "puffin", df);
    if (st != LS_OK)
        snprintf(err, errlen, "uploading a deletion vector: %s", ls_ice_table_error(t));
    ls_buf_free(&out);
    return st;
}
