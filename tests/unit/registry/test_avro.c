/* Avro object-container writer: encodings checked by hand against the Avro
 * specification, and (when LS_TABLE_OUT is set) files for fastavro in
 * tests/integration/test_tables.py. Datum i follows avro_datum() below. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "table/ocf.h"
#include "unit.h"

TEST(binary_encoding)
{
    ls_buf_t b;
    ls_buf_init(&b);
    ls_ocf_long(&b, 0);
    ls_ocf_long(&b, -1);
    ls_ocf_long(&b, 1);
    ls_ocf_long(&b, -64);
    ls_ocf_long(&b, 64);
    ls_ocf_long(&b, INT64_MIN);
    ls_ocf_string(&b, "foo");
    ls_ocf_bool(&b, 1);
    const uint8_t want[] = {0x00, 0x01, 0x02, 0x7f, 0x80, 0x01, 0xff, 0xff, 0xff, 0xff, 0xff,
                            0xff, 0xff, 0xff, 0xff, 0x01, 0x06, 'f',  'o',  'o',  0x01};
    CHECK_EQ_INT(b.len, sizeof want);
    CHECK(memcmp(b.data, want, sizeof want) == 0);
    ls_buf_free(&b);
}

TEST(container_layout)
{
    ls_ocf_t *w = ls_ocf_new("\"long\"", LS_OCF_CODEC_NULL, 0);
    ls_ocf_meta_str(w, "k", "v");
    ls_ocf_long(ls_ocf_datum(w), 2);
    CHECK_EQ_INT(ls_ocf_datum_done(w), LS_OK);
    ls_ocf_long(ls_ocf_datum(w), 3);
    CHECK_EQ_INT(ls_ocf_datum_done(w), LS_OK);
    ls_buf_t out;
    ls_buf_init(&out);
    CHECK_EQ_INT(ls_ocf_finish(w, &out), LS_OK);
    /* magic, map of 3 entries (zigzag 6) */
    CHECK(memcmp(out.data, "Obj\x01\x06", 5) == 0);
    const uint8_t hdr_tail[] = {0x02, 'k', 0x02, 'v', 0x00}; /* caller pair, end of map */
    size_t at = 5 + 1 + 11 + 1 + 6 + 1 + 10 + 1 + 4; /* avro.schema "long", avro.codec null */
    CHECK(memcmp(out.data + at, hdr_tail, sizeof hdr_tail) == 0);
    const uint8_t *sync = out.data + at + sizeof hdr_tail;
    /* one block: count 2, size 2, datums 04 06, sync */
    const uint8_t blk[] = {0x04, 0x04, 0x04, 0x06};
    CHECK(memcmp(sync + 16, blk, sizeof blk) == 0);
    CHECK(memcmp(sync + 16 + sizeof blk, sync, 16) == 0);
    CHECK_EQ_INT(out.len, (size_t)(sync - out.data) + 16 + sizeof blk + 16);
    ls_buf_free(&out);
    ls_ocf_free(w);
}

/* Exercises every encoder; "field-id" and the Iceberg map-as-array form
 * must reach readers untouched. */
static const char *SCHEMA =
    "{\"type\":\"record\",\"name\":\"t\",\"fields\":["
    "{\"name\":\"id\",\"type\":\"long\",\"field-id\":1},"
    "{\"name\":\"small\",\"type\":\"int\",\"field-id\":2},"
    "{\"name\":\"name\",\"type\":\"string\",\"field-id\":3},"
    "{\"name\":\"blob\",\"type\":\"bytes\",\"field-id\":4},"
    "{\"name\":\"flag\",\"type\":\"boolean\",\"field-id\":5},"
    "{\"name\":\"maybe\",\"type\":[\"null\",\"long\"],\"default\":null,\"field-id\":6},"
    "{\"name\":\"tags\",\"type\":{\"type\":\"array\",\"items\":\"string\",\"element-id\":8},"
    "\"field-id\":7},"
    "{\"name\":\"props\",\"type\":{\"type\":\"map\",\"values\":\"bytes\"},\"field-id\":9},"
    "{\"name\":\"sizes\",\"type\":[\"null\",{\"type\":\"array\",\"logicalType\":\"map\",\"items\":"
    "{\"type\":\"record\",\"name\":\"k10_v11\",\"fields\":[{\"name\":\"key\",\"type\":\"int\","
    "\"field-id\":10},"
    "{\"name\":\"value\",\"type\":\"long\",\"field-id\":11}]}}],\"default\":null,\"field-id\":12}"
    "]}";

static void avro_datum(ls_buf_t *b, int64_t i)
{
    char s[64];
    ls_ocf_long(b, i * 1000003);
    ls_ocf_long(b, (int32_t)(i % 1000) - 500);
    snprintf(s, sizeof s, "name-%lld", (long long)i);
    ls_ocf_string(b, s);
    uint8_t blob[3] = {(uint8_t)i, 0, 0xff};
    ls_ocf_bytes(b, blob, (size_t)(i % 4));
    ls_ocf_bool(b, i % 2 == 0);
    if (i % 3 == 0)
        ls_ocf_union(b, 0);
    else
        ls_ocf_union(b, 1), ls_ocf_long(b, -i);
    ls_ocf_block(b, i % 3);
    for (int j = 0; j < i % 3; j++) {
        snprintf(s, sizeof s, "t%d", j);
        ls_ocf_string(b, s);
    }
    ls_ocf_end(b);
    ls_ocf_block(b, 1);
    ls_ocf_string(b, "p");
    snprintf(s, sizeof s, "%lld", (long long)i);
    ls_ocf_string(b, s);
    ls_ocf_end(b);
    if (i % 5 == 0) {
        ls_ocf_union(b, 0);
    } else {
        ls_ocf_union(b, 1);
        ls_ocf_block(b, 2);
        ls_ocf_long(b, 1), ls_ocf_long(b, i);
        ls_ocf_long(b, 2), ls_ocf_long(b, 2 * i);
        ls_ocf_end(b);
    }
}

static int write_file(const char *dir, const char *name, ls_ocf_codec codec, int64_t n)
{
    ls_ocf_t *w = ls_ocf_new(SCHEMA, codec, 4096);
    ls_ocf_meta_str(w, "format-version", "2");
    ls_ocf_meta_str(w, "content", "data");
    ls_ocf_meta(w, "utf8-meta", "\xc3\xa9t\xc3\xa9", 5); /* "été" as bytes */
    for (int64_t i = 0; i < n; i++) {
        avro_datum(ls_ocf_datum(w), i);
        if (ls_ocf_datum_done(w) != LS_OK) return -1;
    }
    ls_buf_t out;
    ls_buf_init(&out);
    int rc = ls_ocf_finish(w, &out) == LS_OK ? 0 : -1;
    ls_ocf_free(w);
    if (rc == 0 && dir) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, name);
        FILE *fp = fopen(path, "wb");
        if (!fp || fwrite(out.data, 1, out.len, fp) != out.len) rc = -1;
        if (fp) fclose(fp);
    }
    ls_buf_free(&out);
    return rc;
}

TEST(files_for_readers)
{
    const char *dir = getenv("LS_TABLE_OUT");
    CHECK_EQ_INT(write_file(dir, "test_null.avro", LS_OCF_CODEC_NULL, 3000), 0);
    CHECK_EQ_INT(write_file(dir, "test_deflate.avro", LS_OCF_CODEC_DEFLATE, 3000), 0);
    CHECK_EQ_INT(write_file(dir, "test_empty.avro", LS_OCF_CODEC_DEFLATE, 0), 0);
}

/* Our reader decodes our writer's files; every truncation and a flipped
 * sync byte are rejected without crashing. */
TEST(read_back_and_corruption)
{
    for (int codec = 0; codec < 2; codec++) {
        ls_ocf_t *w = ls_ocf_new(SCHEMA, (ls_ocf_codec)codec, 512);
        ls_ocf_meta_str(w, "content", "data");
        for (int64_t i = 0; i < 200; i++) {
            avro_datum(ls_ocf_datum(w), i);
            CHECK_EQ_INT(ls_ocf_datum_done(w), LS_OK);
        }
        ls_buf_t out;
        ls_buf_init(&out);
        CHECK_EQ_INT(ls_ocf_finish(w, &out), LS_OK);
        ls_ocf_free(w);
        ls_ocf_file_t f;
        char err[200];
        CHECK_EQ_INT(ls_ocf_file_read(out.data, out.len, &f, err, sizeof err), LS_OK);
        CHECK_EQ_INT(f.nrecords, 200);
        CHECK(strcmp(ls_ocf_file_meta(&f, "content"), "data") == 0);
        const ls_av_t *r = &f.records[7];
        CHECK_EQ_INT(ls_av_field(r, "id")->l, 7 * 1000003);
        CHECK_EQ_INT(ls_av_field(r, "small")->l, 7 - 500);
        CHECK(strcmp((char *)ls_av_field(r, "name")->p, "name-7") == 0);
        CHECK_EQ_INT(ls_av_field(r, "blob")->n, 3);
        CHECK_EQ_INT(ls_av_field(r, "flag")->l, 0);
        CHECK_EQ_INT(ls_av_field(r, "maybe")->l, -7);
        CHECK_EQ_INT(ls_av_field(r, "tags")->nitems, 1);
        const ls_av_t *props = ls_av_field(r, "props");
        CHECK(props->kind == LS_AV_MAP && !strcmp(props->keys[0], "p"));
        const ls_av_t *sizes = ls_av_field(r, "sizes");
        CHECK(sizes->kind == LS_AV_ARRAY && sizes->nitems == 2);
        CHECK_EQ_INT(ls_av_field(&sizes->items[1], "value")->l, 14);
        CHECK(ls_av_field(&f.records[10], "sizes")->kind == LS_AV_NULL);
        ls_ocf_file_free(&f);
        for (size_t cut = 0; cut < out.len; cut += (cut < 400 ? 1 : 37)) {
            ls_status st = ls_ocf_file_read(out.data, cut, &f, err, sizeof err);
            if (st == LS_OK) ls_ocf_file_free(&f); /* a cut between blocks is a valid file */
        }
        out.data[out.len - 1] ^= 1;
        CHECK_EQ_INT(ls_ocf_file_read(out.data, out.len, &f, err, sizeof err), LS_ECORRUPT);
        CHECK(strstr(err, "sync") != NULL);
        ls_buf_free(&out);
    }
}

/* Random byte flips in a valid file: the reader returns (any status)
 * without crashing or leaking (run under ASan by `make asan-test`). */
TEST(reader_survives_mutations)
{
    ls_ocf_t *w = ls_ocf_new(SCHEMA, LS_OCF_CODEC_NULL, 256);
    for (int64_t i = 0; i < 40; i++) {
        avro_datum(ls_ocf_datum(w), i);
        CHECK_EQ_INT(ls_ocf_datum_done(w), LS_OK);
    }
    ls_buf_t out;
    ls_buf_init(&out);
    CHECK_EQ_INT(ls_ocf_finish(w, &out), LS_OK);
    ls_ocf_free(w);
    uint8_t *copy = malloc(out.len);
    unsigned seed = 12345;
    int ok = 0;
    for (int round = 0; round < 3000; round++) {
        memcpy(copy, out.data, out.len);
        int flips = 1 + round % 4;
        for (int k = 0; k < flips; k++) {
            seed = seed * 1103515245u + 12345u;
            size_t at = (seed >> 8) % out.len;
            seed = seed * 1103515245u + 12345u;
            copy[at] ^= (uint8_t)(1u << ((seed >> 16) % 8));
        }
        ls_ocf_file_t f;
        char err[200];
        if (ls_ocf_file_read(copy, out.len, &f, err, sizeof err) == LS_OK) {
            ok++;
            ls_ocf_file_free(&f);
        }
    }
    CHECK(ok < 3000);
    free(copy);
    ls_buf_free(&out);
}

int main(void)
{
    RUN(binary_encoding);
    RUN(container_layout);
    RUN(files_for_readers);
    RUN(read_back_and_corruption);
    RUN(reader_survives_mutations);
    UNIT_DONE();
}
