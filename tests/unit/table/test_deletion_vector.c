/* Deletion vectors (table/deletion_vector.h): the blob round-trips every
 * container kind and 64-bit positions, a blob with a run container made by
 * hand (as other writers may send) decodes, damaged blobs are refused with
 * the reason, and the Puffin file around one blob has the layout and
 * footer the Puffin spec gives. Independent readers (Iceberg's Java
 * library, Spark) read what this writes in tests/integration. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "table/deletion_vector.h"
#include "unit.h"

/* Encodes pos[0..n), decodes it back: the same positions. */
static int round_trip(const int64_t *pos, size_t n)
{
    ls_buf_t b;
    ls_buf_init(&b);
    ls_dv_encode(pos, n, &b);
    int64_t *got;
    size_t m;
    char err[256];
    int ok = ls_dv_decode(b.data, b.len, &got, &m, err, sizeof err) == LS_OK && m == n &&
             (n == 0 || !memcmp(got, pos, n * sizeof *pos));
    ls_free(got);
    ls_buf_free(&b);
    return ok;
}

TEST(round_trips_every_container_kind)
{
    int64_t one[] = {0};
    CHECK(round_trip(one, 1));
    CHECK(round_trip(NULL, 0));
    int64_t few[] = {1, 2, 3, 65535, 65536, 70000, 1 << 20};
    CHECK(round_trip(few, sizeof few / sizeof few[0]));
    /* 5 000 values under one high half: a bitmap container (> 4 096) */
    int64_t *dense = LS_NEWN(int64_t, 5000);
    for (int i = 0; i < 5000; i++)
        dense[i] = 3 * i;
    CHECK(round_trip(dense, 5000));
    /* a full container, then positions past 2^32 (other 64-bit keys) */
    int64_t *wide = LS_NEWN(int64_t, 65536 + 4);
    for (int i = 0; i < 65536; i++)
        wide[i] = i;
    wide[65536] = (1LL << 32) + 5;
    wide[65537] = (1LL << 32) + 70000;
    wide[65538] = (3LL << 32);
    wide[65539] = ((int64_t)INT32_MAX << 32) | 0xffffffffLL;
    CHECK(round_trip(wide, 65540));
    ls_free(dense);
    ls_free(wide);
}

/* The blob framing around a 32-bit Roaring serialization r[0..rn). */
static void frame(const uint8_t *r, size_t rn, ls_buf_t *b)
{
    uint8_t hdr[8] = {0, 0, 0, 0, 0xD1, 0xD3, 0x39, 0x64};
    uint32_t len = (uint32_t)(4 + 8 + 4 + rn);
    hdr[0] = (uint8_t)(len >> 24), hdr[1] = (uint8_t)(len >> 16), hdr[2] = (uint8_t)(len >> 8),
    hdr[3] = (uint8_t)len;
    ls_buf_append(b, hdr, 8);
    uint8_t count[8] = {1}, key[4] = {0};
    ls_buf_append(b, count, 8);
    ls_buf_append(b, key, 4);
    ls_buf_append(b, r, rn);
    uint32_t crc = (uint32_t)crc32(0, b->data + 4, (uInt)(b->len - 4));
    uint8_t c[4] = {(uint8_t)(crc >> 24), (uint8_t)(crc >> 16), (uint8_t)(crc >> 8), (uint8_t)crc};
    ls_buf_append(b, c, 4);
}

TEST(reads_run_containers)
{
    /* cookie 12347 with one container, its run flag set, key 0 holding
     * 10 values, one run [5, 5 + 9] */
    const uint8_t r[] = {0x3B, 0x30, 0x00, 0x00, 0x01, 0x00, 0x00, 0x09,
                         0x00, 0x01, 0x00, 0x05, 0x00, 0x09, 0x00};
    ls_buf_t b;
    ls_buf_init(&b);
    frame(r, sizeof r, &b);
    int64_t *pos;
    size_t n;
    char err[256] = "";
    CHECK_EQ_INT(ls_dv_decode(b.data, b.len, &pos, &n, err, sizeof err), LS_OK);
    CHECK_EQ_INT(n, 10);
    for (size_t i = 0; i < n; i++)
        CHECK_EQ_INT(pos[i], 5 + (int64_t)i);
    ls_free(pos);
    ls_buf_free(&b);
}

TEST(refuses_damaged_blobs)
{
    int64_t pos[] = {4, 8, 15, 16, 23, 42};
    ls_buf_t b;
    ls_buf_init(&b);
    ls_dv_encode(pos, 6, &b);
    int64_t *got = NULL;
    size_t n;
    char err[256] = "";
    b.data[b.len - 6] ^= 1; /* a bit of the bitmap */
    CHECK_EQ_INT(ls_dv_decode(b.data, b.len, &got, &n, err, sizeof err), LS_ECORRUPT);
    CHECK(strstr(err, "checksum"));
    b.data[b.len - 6] ^= 1;
    b.data[5] = 0; /* the magic */
    CHECK_EQ_INT(ls_dv_decode(b.data, b.len, &got, &n, err, sizeof err), LS_ECORRUPT);
    CHECK(strstr(err, "magic"));
    CHECK_EQ_INT(ls_dv_decode(b.data, b.len - 1, &got, &n, err, sizeof err), LS_ECORRUPT);
    CHECK(strstr(err, "length"));
    CHECK(got == NULL);
    ls_buf_free(&b);
}

TEST(puffin_file_layout)
{
    int64_t pos[] = {1, 3, 5};
    ls_buf_t f;
    ls_buf_init(&f);
    int64_t off, len;
    ls_dv_puffin("s3://b/t/data/x.parquet", pos, 3, &f, &off, &len);
    CHECK(!memcmp(f.data, "PFA1", 4));
    CHECK(!memcmp(f.data + f.len - 4, "PFA1", 4));
    CHECK_EQ_INT(off, 4);
    uint32_t plen = (uint32_t)f.data[f.len - 12] | (uint32_t)f.data[f.len - 11] << 8 |
                    (uint32_t)f.data[f.len - 10] << 16 | (uint32_t)f.data[f.len - 9] << 24;
    CHECK_EQ_INT(f.data[f.len - 8], 0); /* flags: not compressed */
    const char *payload = (const char *)f.data + f.len - 12 - plen;
    CHECK(!memcmp(payload - 4, "PFA1", 4));
    CHECK_EQ_INT((int64_t)(payload - 4 - (const char *)f.data), off + len);
    json_error_t je;
    json_t *j = json_loadb(payload, plen, 0, &je);
    CHECK(j != NULL);
    json_t *blob = json_array_get(json_object_get(j, "blobs"), 0);
    CHECK(!strcmp(json_string_value(json_object_get(blob, "type")), "deletion-vector-v1"));
    CHECK_EQ_INT(json_integer_value(json_object_get(blob, "offset")), off);
    CHECK_EQ_INT(json_integer_value(json_object_get(blob, "length")), len);
    CHECK_EQ_INT(json_integer_value(json_object_get(blob, "snapshot-id")), -1);
    CHECK(json_object_get(blob, "compression-codec") == NULL);
    json_t *props = json_object_get(blob, "properties");
    CHECK(!strcmp(json_string_value(json_object_get(props, "referenced-data-file")),
                  "s3://b/t/data/x.parquet"));
    CHECK(!strcmp(json_string_value(json_object_get(props, "cardinality")), "3"));
    json_decref(j);
    int64_t *got;
    size_t n;
    char err[256];
    CHECK_EQ_INT(ls_dv_decode(f.data + off, (size_t)len, &got, &n, err, sizeof err), LS_OK);
    CHECK_EQ_INT(n, 3);
    ls_free(got);
    ls_buf_free(&f);
}

int main(void)
{
    RUN(round_trips_every_container_kind);
    RUN(reads_run_containers);
    RUN(refuses_damaged_blobs);
    RUN(puffin_file_layout);
    UNIT_DONE();
}
