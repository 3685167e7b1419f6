/* Iceberg v2 tables: transforms, metadata JSON required fields (spec.md
 * "Table Metadata Fields"), manifests / manifest lists read back with our
 * Avro reader, commit conflicts, summary carry-forward — on the mem store.
 * With LS_TABLE_OUT set, also writes two raw Kafka tables in the filesystem
 * layout (LS_TABLE_OUT/store/warehouse/ns/{raw_unpart,raw_day}) for
 * PyIceberg / DuckDB / fastavro in tests/integration/test_tables.py. */
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "objstore/objstore.h"
#include "objstore/objstore_faulty.h"
#include "table/ocf.h"
#include "table/iceberg_manifest.h"
#include "table/data_files.h"
#include "table/iceberg_raw.h"
#include "table/iceberg_table.h"
#include "table/parquet_reader.h"
#include "unit.h"

TEST(transforms_and_paths)
{
    int64_t ts = 1700000000000000LL; /* 2023-11-14T22:13:20Z */
    CHECK_EQ_INT(ls_ice_transform_apply(LS_ICE_DAY, LS_ICE_TIMESTAMPTZ, ts), 19675);
    CHECK_EQ_INT(ls_ice_transform_apply(LS_ICE_HOUR, LS_ICE_TIMESTAMPTZ, ts), 472222);
    CHECK_EQ_INT(ls_ice_transform_apply(LS_ICE_DAY, LS_ICE_TIMESTAMPTZ, -1), -1);
    CHECK_EQ_INT(ls_ice_transform_apply(LS_ICE_HOUR, LS_ICE_TIMESTAMP, -1), -1);
    CHECK_EQ_INT(ls_ice_transform_apply(LS_ICE_IDENTITY, LS_ICE_INT, 7), 7);
    ls_ice_spec_t s = {0};
    CHECK_EQ_INT(ls_ice_spec_add(&s, 3, "timestamp", LS_ICE_TIMESTAMPTZ, LS_ICE_HOUR), LS_OK);
    CHECK_EQ_INT(ls_ice_spec_add(&s, 3, "timestamp", LS_ICE_TIMESTAMPTZ, LS_ICE_DAY), LS_OK);
    CHECK_EQ_INT(ls_ice_spec_add(&s, 1, "partition", LS_ICE_INT, LS_ICE_IDENTITY), LS_OK);
    CHECK_EQ_INT(ls_ice_spec_add(&s, 4, "key", LS_ICE_BINARY, LS_ICE_DAY), LS_EINVAL);
    CHECK_EQ_INT(ls_ice_spec_add(&s, 1, "partition", LS_ICE_INT, LS_ICE_DAY), LS_EINVAL);
    CHECK(strcmp(s.fields[1].name, "timestamp_day") == 0 && s.fields[2].field_id == 1002);
    ls_ice_pval_t v[3];
    ls_ice_pval_long(&v[0], 472222);
    ls_ice_pval_long(&v[1], 19675);
    ls_ice_pval_long(&v[2], 2);
    ls_buf_t b;
    ls_buf_init(&b);
    ls_ice_partition_path(&s, v, &b);
    ls_buf_append_u8(&b, 0);
    CHECK(strcmp((char *)b.data,
                 "timestamp_hour-2023-11-14-22/timestamp_day-2023-11-14/partition-2") == 0);
    ls_buf_free(&b);
    CHECK_EQ_INT(ls_ice_transform_parse("days"), LS_ICE_DAY);
    CHECK_EQ_INT(ls_ice_transform_parse("bucket[4]"), -1);
}

/* The Iceberg spec's Appendix B hash examples, and its truncate examples. */
TEST(transform_spec_examples)
{
    CHECK_EQ_INT((int32_t)ls_ice_murmur3("iceberg", 7), 1210000089);
    static const uint8_t bin[] = {0, 1, 2, 3};
    CHECK_EQ_INT((int32_t)ls_ice_murmur3(bin, 4), -188683207);
    static const uint8_t dec[] = {0x05, 0x8c}; /* 14.20: unscaled 1420, big-endian */
    CHECK_EQ_INT((int32_t)ls_ice_murmur3(dec, 2), -500754589);
    static const uint8_t uuid[] = {0xf7, 0x9c, 0x3e, 0x09, 0x67, 0x7c, 0x4b, 0xbd,
                                   0xa4, 0x79, 0x3f, 0x34, 0x9c, 0xb7, 0x85, 0xe7};
    CHECK_EQ_INT((int32_t)ls_ice_murmur3(uuid, 16), 1488055340);
    /* int and long 34 hash alike (ints as longs); date 2017-11-16 = day 17486;
     * time 22:31:08 in micros; timestamp 2017-11-16T22:31:08 in micros */
    uint8_t b8[8];
    int64_t longs[] = {34, 17486, 81068000000LL, 1510871468000000LL};
    int32_t want[] = {2017239379, -653330422, -662762989, -2047944441};
    for (int i = 0; i < 4; i++) {
        for (int k = 0; k < 8; k++)
            b8[k] = (uint8_t)((uint64_t)longs[i] >> (8 * k));
        CHECK_EQ_INT((int32_t)ls_ice_murmur3(b8, 8), want[i]);
        CHECK_EQ_INT(ls_ice_bucket_long(longs[i], 16), (want[i] & 0x7fffffff) % 16);
    }
    CHECK_EQ_INT(ls_ice_bucket_bytes("iceberg", 7, 16), (1210000089 & 0x7fffffff) % 16);
    /* every tail length of the hash (0..3 trailing bytes) against the
     * reference values of Murmur3 x86_32 seed 0 */
    CHECK_EQ_INT(ls_ice_murmur3("", 0), 0);
    CHECK_EQ_INT(ls_ice_murmur3("a", 1), 0x3c2569b2u);
    CHECK_EQ_INT(ls_ice_murmur3("ab", 2), 0x9bbfd75fu);
    CHECK_EQ_INT(ls_ice_murmur3("abc", 3), 0xb3dd93fau);

    ls_ice_spec_t s = {0};
    CHECK_EQ_INT(ls_ice_spec_add_param(&s, 1, "partition", LS_ICE_INT, LS_ICE_TRUNCATE, 10), LS_OK);
    CHECK_EQ_INT(ls_ice_spec_add_param(&s, 2, "offset", LS_ICE_LONG, LS_ICE_BUCKET, 16), LS_OK);
    CHECK_EQ_INT(ls_ice_spec_add_param(&s, 3, "timestamp", LS_ICE_TIMESTAMPTZ, LS_ICE_MONTH, 0),
                 LS_OK);
    CHECK_EQ_INT(ls_ice_spec_add_param(&s, 3, "timestamp", LS_ICE_TIMESTAMPTZ, LS_ICE_YEAR, 0),
                 LS_OK);
    CHECK(!strcmp(s.fields[0].name, "partition_trunc") &&
          !strcmp(s.fields[1].name, "offset_bucket"));
    /* truncate examples: W=10, 1 -> 0, -1 -> -10 */
    CHECK_EQ_INT(ls_ice_field_apply(&s.fields[0], 1), 0);
    CHECK_EQ_INT(ls_ice_field_apply(&s.fields[0], -1), -10);
    CHECK_EQ_INT(ls_ice_field_apply(&s.fields[0], 19), 10);
    CHECK_EQ_INT(ls_ice_field_apply(&s.fields[1], 34), (2017239379 & 0x7fffffff) % 16);
    int64_t ts = 1700000000000000LL; /* 2023-11-14T22:13:20Z */
    CHECK_EQ_INT(ls_ice_field_apply(&s.fields[2], ts), (2023 - 1970) * 12 + 10);
    CHECK_EQ_INT(ls_ice_field_apply(&s.fields[3], ts), 53);
    CHECK_EQ_INT(ls_ice_field_apply(&s.fields[2], -1), -1);                      /* 1969-12 */
    CHECK_EQ_INT(ls_ice_field_apply(&s.fields[3], -1), -1);                      /* 1969 */
    CHECK_EQ_INT(ls_ice_transform_apply(LS_ICE_MONTH, LS_ICE_DATE, 17486), 574); /* 2017-11 */
    ls_ice_pval_t v[4];
    const int64_t vl[] = {10, 3, 646, 53};
    for (int i = 0; i < 4; i++)
        ls_ice_pval_long(&v[i], vl[i]);
    ls_buf_t b;
    ls_buf_init(&b);
    ls_ice_partition_path(&s, v, &b);
    ls_buf_append_u8(&b, 0);
    CHECK(strcmp((char *)b.data, "partition_trunc-10/offset_bucket-3/timestamp_month-2023-11/"
                                 "timestamp_year-2023") == 0);
    ls_buf_free(&b);
    /* types the spec does not allow, and bad parameters */
    CHECK_EQ_INT(ls_ice_spec_add_param(&s, 3, "timestamp", LS_ICE_TIMESTAMPTZ, LS_ICE_TRUNCATE, 4),
                 LS_EINVAL);
    CHECK_EQ_INT(ls_ice_spec_add_param(&s, 1, "partition", LS_ICE_INT, LS_ICE_YEAR, 0), LS_EINVAL);
    CHECK_EQ_INT(ls_ice_spec_add_param(&s, 1, "partition", LS_ICE_INT, LS_ICE_BUCKET, 0),
                 LS_EINVAL);
    int param;
    CHECK_EQ_INT(ls_ice_transform_parse2("bucket[16]", &param), LS_ICE_BUCKET);
    CHECK_EQ_INT(param, 16);
    CHECK_EQ_INT(ls_ice_transform_parse2("truncate[4]", &param), LS_ICE_TRUNCATE);
    CHECK_EQ_INT(param, 4);
    CHECK_EQ_INT(ls_ice_transform_parse2("bucket[0]", &param), -1);
    CHECK_EQ_INT(ls_ice_transform_parse2("bucket[4", &param), -1);
    CHECK_EQ_INT(ls_ice_transform_parse2("months", &param), LS_ICE_MONTH);
}

static json_t *get_json(ls_objstore_t *os, const char *key)
{
    ls_buf_t b;
    ls_buf_init(&b);
    if (ls_objstore_get(os, key, 0, UINT64_MAX, &b) != LS_OK) return NULL;
    json_t *j = json_loadb((char *)b.data, b.len, 0, NULL);
    ls_buf_free(&b);
    return j;
}

static ls_status get_avro(ls_objstore_t *os, const char *key, ls_ocf_file_t *f)
{
    ls_buf_t b;
    ls_buf_init(&b);
    ls_status st = ls_objstore_get(os, key, 0, UINT64_MAX, &b);
    char err[200];
    if (st == LS_OK) st = ls_ocf_file_read(b.data, b.len, f, err, sizeof err);
    ls_buf_free(&b);
    return st;
}

/* ts step: one minute per offset, so 5000 rows span several days. */
static void ice_row(int64_t i, ls_raw_record_t *r, ls_raw_header_t *h, char *kb, char *vb,
                    char hv[4][32])
{
    memset(r, 0, sizeof *r);
    r->partition = (int32_t)(i % 3);
    r->offset = i;
    r->timestamp_ms = 1700000000000LL + i * 60000;
    if (i % 5 == 0)
        r->key_len = -1;
    else
        r->key_len = snprintf(kb, 32, "k%d", (int)(i % 7)), r->key = (uint8_t *)kb;
    if (i % 11 == 0)
        r->value_len = -1;
    else
        r->value_len = snprintf(vb, 64, "value-%lld", (long long)i), r->value = (uint8_t *)vb;
    r->nheaders = (size_t)(i % 4);
    static const char *names[] = {"h0", "h1", "h2"};
    for (size_t j = 0; j < r->nheaders; j++) {
        h[j].key = names[j];
        h[j].key_len = 2;
        if (j == 1)
            h[j].value = NULL, h[j].value_len = -1;
        else {
            h[j].value_len = snprintf(hv[j], 32, "v%lld-%d", (long long)i, (int)j);
            h[j].value = (uint8_t *)hv[j];
        }
    }
    r->headers = h;
}

/* Writes rows [from, to) as data files and commits them as one snapshot.
 * Summary: lakestream.last-offset.p<k> for each partition in `parts`. */
static ls_status commit_rows(ls_ice_table_t *t, int64_t from, int64_t to, int parts, size_t target,
                             ls_pq_codec codec)
{
    ls_pq_opts_t o;
    ls_pq_opts_init(&o);
    o.codec = codec;
    o.row_group_bytes = 16 << 10;
    char err[256];
    size_t nf;
    const ls_pq_field_t *rawf = ls_raw_parquet_fields(&nf);
    ls_data_files_t *rf = ls_data_files_new(t, rawf, nf, &o, target, err, sizeof err);
    if (!rf) return LS_EINVAL;
    int64_t last[3] = {-1, -1, -1};
    ls_status st = LS_OK;
    for (int64_t i = from; i < to && st == LS_OK; i++) {
        ls_raw_record_t r;
        ls_raw_header_t h[4];
        char kb[32], vb[64], hv[4][32];
        ice_row(i, &r, h, kb, vb, hv);
        st = ls_data_files_add_raw(rf, &r);
        last[i % 3] = i;
    }
    const ls_ice_datafile_t *files;
    size_t n = 0;
    if (st == LS_OK) st = ls_data_files_finish(rf, &files, &n);
    char vals[3][24];
    const char *kv[8] = {0};
    int k = 0;
    for (int p = 0; p < parts; p++) {
        static const char *keys[] = {"lakestream.last-offset.p0", "lakestream.last-offset.p1",
                                     "lakestream.last-offset.p2"};
        snprintf(vals[p], sizeof vals[p], "%lld", (long long)last[p]);
        kv[k++] = keys[p];
        kv[k++] = vals[p];
    }
    /* snapshot times: now plus `to` ms, so they advance past the table's
     * creation time (appends never go back in time) */
    if (st == LS_OK) st = ls_ice_table_append(t, files, n, kv, ls_clock_wall_ms() + to, NULL);
    ls_data_files_free(rf);
    return st;
}

/* Transforms of value fields (issue 14): the spec's Appendix B hash vectors
 * through the whole path (source value -> bucket), the "Truncate Transform
 * Details" examples, null and void, and the type table. */
/* Spec field f of the source type and transform (field_id 0 when refused). */
static ls_ice_part_field_t field_of(const char *type, ls_ice_transform t, int param)
{
    ls_ice_spec_t s = {0};
    char why[200];
    if (ls_ice_spec_add_typed(&s, 20, "f", type, t, param, why, sizeof why) != LS_OK)
        memset(&s.fields[0], 0, sizeof s.fields[0]);
    return s.fields[0];
}

/* bucket[INT32_MAX] of v: the spec's hash & Integer.MAX_VALUE; -1 if refused. */
static int32_t hash_of(const char *type, const ls_ice_sval_t *v)
{
    ls_ice_part_field_t f = field_of(type, LS_ICE_BUCKET, INT32_MAX);
    ls_ice_pval_t pv;
    if (!f.field_id || ls_ice_field_apply_sval(&f, v, &pv) != LS_OK) return -1;
    return (int32_t)pv.l;
}

TEST(value_field_transforms)
{
    ls_ice_sval_t v = {0};
    v.l = 34;
    CHECK_EQ_INT(hash_of("int", &v), 2017239379 & 0x7fffffff);
    CHECK_EQ_INT(hash_of("long", &v), 2017239379 & 0x7fffffff);
    v.l = 17486; /* 2017-11-16 */
    CHECK_EQ_INT(hash_of("date", &v), -653330422 & 0x7fffffff);
    v.l = 81068000000LL; /* 22:31:08 */
    CHECK_EQ_INT(hash_of("time", &v), -662762989 & 0x7fffffff);
    v.l = 1510871468000000LL; /* 2017-11-16T22:31:08 */
    CHECK_EQ_INT(hash_of("timestamp", &v), -2047944441 & 0x7fffffff);
    CHECK_EQ_INT(hash_of("timestamptz", &v), -2047944441 & 0x7fffffff);
    memset(&v, 0, sizeof v);
    v.d = 1420; /* 14.20 */
    CHECK_EQ_INT(hash_of("decimal(9, 2)", &v), -500754589 & 0x7fffffff);
    v.p = (const uint8_t *)"iceberg", v.n = 7;
    CHECK_EQ_INT(hash_of("string", &v), 1210000089 & 0x7fffffff);
    static const uint8_t bin[] = {0, 1, 2, 3};
    v.p = bin, v.n = 4;
    CHECK_EQ_INT(hash_of("binary", &v), -188683207 & 0x7fffffff);
    CHECK_EQ_INT(hash_of("fixed[4]", &v), -188683207 & 0x7fffffff);
    static const uint8_t uuid[16] = {0xf7, 0x9c, 0x3e, 0x09, 0x67, 0x7c, 0x4b, 0xbd,
                                     0xa4, 0x79, 0x3f, 0x34, 0x9c, 0xb7, 0x85, 0xe7};
    memcpy(v.u, uuid, 16);
    v.p = NULL, v.n = 0;
    CHECK_EQ_INT(hash_of("uuid", &v), 1488055340);

    /* truncate (spec "Truncate Transform Details") */
    ls_ice_pval_t pv;
    ls_ice_part_field_t f = field_of("decimal(9, 2)", LS_ICE_TRUNCATE, 50);
    memset(&v, 0, sizeof v);
    v.d = 1065; /* 10.65 -> 10.50 */
    CHECK_EQ_INT(ls_ice_field_apply_sval(&f, &v, &pv), LS_OK);
    CHECK(pv.n == 2 && pv.b[0] == 0x04 && pv.b[1] == 0x1a); /* 1050 */
    v.d = -1;                                               /* -0.01 -> -0.50: the spec's floor */
    CHECK_EQ_INT(ls_ice_field_apply_sval(&f, &v, &pv), LS_OK);
    CHECK(pv.n == 1 && pv.b[0] == (uint8_t)-50);
    f = field_of("string", LS_ICE_TRUNCATE, 3);
    v.p = (const uint8_t *)"iceberg", v.n = 7;
    CHECK_EQ_INT(ls_ice_field_apply_sval(&f, &v, &pv), LS_OK);
    CHECK(pv.n == 3 && !memcmp(pv.b, "ice", 3) && !pv.null);
    v.p = (const uint8_t *)"\xc3\x9c"
                           "n\xc3\xaf"
                           "code",
    v.n = 9; /* code points, not bytes */
    CHECK_EQ_INT(ls_ice_field_apply_sval(&f, &v, &pv), LS_OK);
    CHECK(pv.n == 5 && !memcmp(pv.b,
                               "\xc3\x9c"
                               "n\xc3\xaf",
                               5));
    f = field_of("binary", LS_ICE_TRUNCATE, 3);
    static const uint8_t five[] = {1, 2, 3, 4, 5};
    v.p = five, v.n = 5;
    CHECK_EQ_INT(ls_ice_field_apply_sval(&f, &v, &pv), LS_OK);
    CHECK(pv.n == 3 && !memcmp(pv.b, five, 3));
    f = field_of("int", LS_ICE_TRUNCATE, 10);
    memset(&v, 0, sizeof v);
    v.l = -1;
    CHECK_EQ_INT(ls_ice_field_apply_sval(&f, &v, &pv), LS_OK);
    CHECK_EQ_INT(pv.l, -10);

    /* identity of a string; null; void; too long to hold */
    f = field_of("string", LS_ICE_IDENTITY, 0);
    v.p = (const uint8_t *)"DE", v.n = 2;
    CHECK_EQ_INT(ls_ice_field_apply_sval(&f, &v, &pv), LS_OK);
    CHECK(pv.n == 2 && !memcmp(pv.b, "DE", 2) && pv.b[2] == 0);
    v.null = true;
    CHECK_EQ_INT(ls_ice_field_apply_sval(&f, &v, &pv), LS_OK);
    CHECK(pv.null && pv.n == 0);
    v.null = false;
    uint8_t big[LS_ICE_PVAL_INLINE + 1]; /* longer than inline: borrowed, then copied */
    memset(big, 'x', sizeof big);
    v.p = big, v.n = sizeof big;
    CHECK_EQ_INT(ls_ice_field_apply_sval(&f, &v, &pv), LS_OK);
    CHECK(pv.n == sizeof big && pv.ext == big && ls_ice_pval_data(&pv) == big);
    ls_ice_pval_t kept;
    ls_ice_pval_copy(&kept, &pv);
    CHECK(kept.ext != big && !ls_ice_pvals_cmp(&kept, &pv, 1));
    big[sizeof big - 1] = 'y'; /* the source changes, the copy does not */
    CHECK(ls_ice_pvals_cmp(&kept, &pv, 1) < 0);
    ls_ice_pval_clear(&kept);
    f = field_of("binary", LS_ICE_TRUNCATE, 200);
    CHECK_EQ_INT(ls_ice_field_apply_sval(&f, &v, &pv), LS_OK);
    CHECK(pv.n == sizeof big); /* shorter than W: whole */
    f = field_of("string", LS_ICE_VOID, 0);
    CHECK_EQ_INT(ls_ice_field_apply_sval(&f, &v, &pv), LS_OK);
    CHECK(pv.null);
    CHECK(strcmp(f.name, "f_null") == 0);

    /* the type table: what each transform takes */
    ls_ice_spec_t s = {0};
    char why[200];
    CHECK_EQ_INT(ls_ice_spec_add_typed(&s, 1, "sku", "string", LS_ICE_HOUR, 0, why, sizeof why),
                 LS_EINVAL);
    CHECK(strstr(why, "hour does not apply to sku (type string"));
    CHECK_EQ_INT(
        ls_ice_spec_add_typed(&s, 1, "t", "timestamp", LS_ICE_TRUNCATE, 2, why, sizeof why),
        LS_EINVAL);
    CHECK_EQ_INT(ls_ice_spec_add_typed(&s, 1, "u", "uuid", LS_ICE_TRUNCATE, 2, why, sizeof why),
                 LS_EINVAL);
    CHECK_EQ_INT(ls_ice_spec_add_typed(&s, 1, "d", "date", LS_ICE_HOUR, 0, why, sizeof why),
                 LS_EINVAL);
    /* boolean, float, double: identity and void only (the spec's table) */
    static const char *const floaty[] = {"boolean", "float", "double"};
    for (int i = 0; i < 3; i++) {
        ls_ice_spec_t one = {0};
        CHECK_EQ_INT(
            ls_ice_spec_add_typed(&one, 1, "x", floaty[i], LS_ICE_IDENTITY, 0, why, sizeof why),
            LS_OK);
        CHECK_EQ_INT(
            ls_ice_spec_add_typed(&one, 1, "x", floaty[i], LS_ICE_VOID, 0, why, sizeof why), LS_OK);
        static const ls_ice_transform no[] = {LS_ICE_BUCKET, LS_ICE_TRUNCATE, LS_ICE_DAY,
                                              LS_ICE_HOUR};
        for (size_t k = 0; k < sizeof no / sizeof no[0]; k++) {
            CHECK_EQ_INT(ls_ice_spec_add_typed(&one, 1, "x", floaty[i], no[k], 4, why, sizeof why),
                         LS_EINVAL);
            char want[80];
            snprintf(want, sizeof want, "%s does not apply to x (type %s",
                     ls_ice_transform_name(no[k]), floaty[i]);
            CHECK(strstr(why, want));
        }
    }
    CHECK_EQ_INT(ls_ice_spec_add_typed(&s, 1, "d", "date", LS_ICE_MONTH, 0, why, sizeof why),
                 LS_OK);
    CHECK_EQ_INT(
        ls_ice_spec_add_typed(&s, 2, "m", "decimal(38, 10)", LS_ICE_BUCKET, 4, why, sizeof why),
        LS_OK);
    CHECK(s.fields[1].prec == 38 && s.fields[1].scale == 10);
    CHECK_EQ_INT(ls_ice_transform_parse("void"), LS_ICE_VOID);

    /* decimal bytes: fewest, two's complement */
    uint8_t d[16];
    CHECK_EQ_INT(ls_ice_decimal_bytes(0, d), 1);
    CHECK_EQ_INT(ls_ice_decimal_bytes(127, d), 1);
    CHECK_EQ_INT(ls_ice_decimal_bytes(128, d), 2);
    CHECK_EQ_INT(ls_ice_decimal_bytes(-128, d), 1);
    CHECK_EQ_INT(ls_ice_decimal_bytes(-129, d), 2);
    CHECK(d[0] == 0xff && d[1] == 0x7f);
}

/* The manifest m decodes back to the n entries e with their first nparts
 * partition values. */
static void check_decodes_back(const ls_buf_t *m, const ls_ice_spec_t *s, const ls_ice_mentry_t *e,
                               size_t n, size_t nparts)
{
    ls_ice_mentry_t *back;
    size_t nb;
    char err[256];
    CHECK_EQ_INT(ls_ice_manifest_decode(m->data, m->len, s, &back, &nb, err, sizeof err), LS_OK);
    CHECK_EQ_INT(nb, n);
    for (size_t i = 0; i < nb && i < n; i++)
        CHECK(
            !memcmp(back[i].df.partition, e[i].df.partition, nparts * sizeof e[i].df.partition[0]));
    ls_ice_mentries_free(back, nb);
}

/* A manifest list naming one manifest of the n entries e, in l (caller
 * frees), read into af. */
static void read_mlist(const ls_ice_spec_t *s, ls_ice_mentry_t *e, size_t n, ls_buf_t *l,
                       ls_ocf_file_t *af)
{
    ls_ocf_t *w = ls_ice_mlist_new(2, 7, NULL, 1, 0);
    ls_ice_mfile_t mf = {0};
    mf.path = "file:///t/metadata/m.avro";
    ls_ice_mlist_add(w, 2, &mf, s, e, n);
    ls_buf_init(l);
    CHECK_EQ_INT(ls_ocf_finish(w, l), LS_OK);
    ls_ocf_free(w);
    char err[256];
    CHECK_EQ_INT(ls_ocf_file_read(l->data, l->len, af, err, sizeof err), LS_OK);
}

/* Partition values of string, decimal, uuid and null in a manifest and its
 * manifest-list summary: the Avro types of spec Appendix A, the values read
 * back, bounds in the single-value serialization, contains_null. */
TEST(value_partitions_in_manifests)
{
    ls_ice_spec_t s = {0};
    char why[200];
    CHECK_EQ_INT(
        ls_ice_spec_add_typed(&s, 10, "country", "string", LS_ICE_IDENTITY, 0, why, sizeof why),
        LS_OK);
    CHECK_EQ_INT(ls_ice_spec_add_typed(&s, 11, "price", "decimal(9, 2)", LS_ICE_IDENTITY, 0, why,
                                       sizeof why),
                 LS_OK);
    CHECK_EQ_INT(ls_ice_spec_add_typed(&s, 12, "id", "uuid", LS_ICE_IDENTITY, 0, why, sizeof why),
                 LS_OK);
    CHECK_EQ_INT(
        ls_ice_spec_add_typed(&s, 13, "ts", "timestamptz", LS_ICE_IDENTITY, 0, why, sizeof why),
        LS_OK);
    static const char *countries[] = {"FR", "DE", NULL};
    static const int64_t prices[] = {-300, 12345, 5};
    ls_ice_mentry_t e[3];
    memset(e, 0, sizeof e);
    for (int i = 0; i < 3; i++) {
        ls_ice_sval_t v = {0};
        e[i].status = 1;
        e[i].snapshot_id = 7;
        e[i].seq = e[i].file_seq = -1;
        e[i].df.path = ls_asprintf("file:///t/data/%d.parquet", i);
        e[i].df.record_count = 1;
        e[i].df.file_size = 100;
        v.null = !countries[i];
        v.p = (const uint8_t *)countries[i], v.n = countries[i] ? 2 : 0;
        CHECK_EQ_INT(ls_ice_field_apply_sval(&s.fields[0], &v, &e[i].df.partition[0]), LS_OK);
        memset(&v, 0, sizeof v);
        v.d = prices[i];
        CHECK_EQ_INT(ls_ice_field_apply_sval(&s.fields[1], &v, &e[i].df.partition[1]), LS_OK);
        memset(v.u, i + 1, 16);
        CHECK_EQ_INT(ls_ice_field_apply_sval(&s.fields[2], &v, &e[i].df.partition[2]), LS_OK);
        v.l = 1000 * i - 1000;
        CHECK_EQ_INT(ls_ice_field_apply_sval(&s.fields[3], &v, &e[i].df.partition[3]), LS_OK);
    }
    ls_buf_t m;
    ls_buf_init(&m);
    CHECK_EQ_INT(ls_ice_manifest_encode(&s, 2, "{}", 0, "[]", e, 3, &m), LS_OK);
    ls_ocf_file_t af;
    char err[256];
    CHECK_EQ_INT(ls_ocf_file_read(m.data, m.len, &af, err, sizeof err), LS_OK);
    const char *schema = ls_ocf_file_meta(&af, "avro.schema");
    CHECK(schema && strstr(schema, "\"name\":\"country\",\"type\":[\"null\",\"string\"]"));
    CHECK(strstr(schema, "\"size\":4,\"logicalType\":\"decimal\",\"precision\":9,\"scale\":2"));
    CHECK(strstr(schema, "\"size\":16,\"logicalType\":\"uuid\""));
    CHECK(strstr(schema, "\"logicalType\":\"timestamp-micros\",\"adjust-to-utc\":true"));
    const ls_av_t *p0 = ls_av_field(ls_av_field(&af.records[0], "data_file"), "partition");
    CHECK(p0 && p0->items[1].kind == LS_AV_BYTES && p0->items[1].n == 4); /* fixed[4] */
    CHECK(p0->items[1].p[0] == 0xff && p0->items[1].p[2] == 0xfe && p0->items[1].p[3] == 0xd4);
    ls_ocf_file_free(&af);
    check_decodes_back(&m, &s, e, 3, 4);
    ls_buf_t l;
    read_mlist(&s, e, 3, &l, &af);
    const ls_av_t *parts = ls_av_field(&af.records[0], "partitions");
    CHECK(parts && parts->nitems == 4);
    const ls_av_t *c = &parts->items[0], *pr = &parts->items[1], *ts = &parts->items[3];
    CHECK_EQ_INT(ls_ice_av_long(c, "contains_null", NULL, 0), 1);
    CHECK(ls_av_field(c, "lower_bound")->n == 2 &&
          !memcmp(ls_av_field(c, "lower_bound")->p, "DE", 2));
    CHECK(!memcmp(ls_av_field(c, "upper_bound")->p, "FR", 2));
    CHECK_EQ_INT(ls_ice_av_long(pr, "contains_null", NULL, 0), 0);
    const ls_av_t *lo = ls_av_field(pr, "lower_bound"), *hi = ls_av_field(pr, "upper_bound");
    CHECK(lo->n == 2 && lo->p[0] == 0xfe && lo->p[1] == 0xd4); /* -300, fewest bytes */
    CHECK(hi->n == 2 && hi->p[0] == 0x30 && hi->p[1] == 0x39); /* 12345 */
    lo = ls_av_field(ts, "lower_bound");
    CHECK(lo->n == 8 && lo->p[0] == 0x18 && lo->p[1] == 0xfc && lo->p[7] == 0xff); /* -1000 LE */
    ls_ocf_file_free(&af);
    ls_buf_free(&l);
    ls_buf_free(&m);
    for (int i = 0; i < 3; i++)
        ls_ice_datafile_clear(&e[i].df);
}

/* Identity partitions of boolean, float and double sources: Avro boolean,
 * float, double in the manifest, read back; the summary's bounds in the
 * single-value serialization (1 byte; 4 and 8 bytes IEEE little-endian),
 * NaN in no bound but in contains_nan, -0.0 below 0.0; the path. */
TEST(float_and_boolean_partitions)
{
    ls_ice_spec_t s = {0};
    char why[200];
    CHECK_EQ_INT(
        ls_ice_spec_add_typed(&s, 10, "ok", "boolean", LS_ICE_IDENTITY, 0, why, sizeof why), LS_OK);
    CHECK_EQ_INT(ls_ice_spec_add_typed(&s, 11, "f", "float", LS_ICE_IDENTITY, 0, why, sizeof why),
                 LS_OK);
    CHECK_EQ_INT(ls_ice_spec_add_typed(&s, 12, "d", "double", LS_ICE_IDENTITY, 0, why, sizeof why),
                 LS_OK);
    static const double fs[] = {1.5, -0.0, 0.0, NAN};
    static const double ds[] = {-2.25, 1e300, NAN, 0.0};
    ls_ice_mentry_t e[4];
    memset(e, 0, sizeof e);
    for (int i = 0; i < 4; i++) {
        ls_ice_sval_t v = {0};
        e[i].status = 1;
        e[i].snapshot_id = 7;
        e[i].seq = e[i].file_seq = -1;
        e[i].df.path = ls_asprintf("file:///t/data/%d.parquet", i);
        e[i].df.record_count = 1;
        e[i].df.file_size = 100;
        v.l = i & 1;
        v.null = i == 3;
        CHECK_EQ_INT(ls_ice_field_apply_sval(&s.fields[0], &v, &e[i].df.partition[0]), LS_OK);
        v.null = false;
        v.f = fs[i];
        CHECK_EQ_INT(ls_ice_field_apply_sval(&s.fields[1], &v, &e[i].df.partition[1]), LS_OK);
        v.f = ds[i];
        CHECK_EQ_INT(ls_ice_field_apply_sval(&s.fields[2], &v, &e[i].df.partition[2]), LS_OK);
    }
    /* -0.0 and 0.0 are two partitions (Java's Float.equals) */
    CHECK(memcmp(&e[1].df.partition[1], &e[2].df.partition[1], sizeof e[1].df.partition[1]));
    ls_buf_t path;
    ls_buf_init(&path);
    ls_ice_partition_path(&s, e[1].df.partition, &path);
    ls_buf_append_u8(&path, 0);
    CHECK(!strcmp((const char *)path.data, "ok-true/f--0/d-1e_300"));
    ls_buf_free(&path);

    ls_buf_t m;
    ls_buf_init(&m);
    CHECK_EQ_INT(ls_ice_manifest_encode(&s, 2, "{}", 0, "[]", e, 4, &m), LS_OK);
    ls_ocf_file_t af;
    char err[256];
    CHECK_EQ_INT(ls_ocf_file_read(m.data, m.len, &af, err, sizeof err), LS_OK);
    const char *schema = ls_ocf_file_meta(&af, "avro.schema");
    CHECK(schema && strstr(schema, "\"name\":\"ok\",\"type\":[\"null\",\"boolean\"]"));
    CHECK(strstr(schema, "\"name\":\"f\",\"type\":[\"null\",\"float\"]"));
    CHECK(strstr(schema, "\"name\":\"d\",\"type\":[\"null\",\"double\"]"));
    const ls_av_t *p0 = ls_av_field(ls_av_field(&af.records[0], "data_file"), "partition");
    CHECK(p0 && p0->items[0].kind == LS_AV_BOOL && p0->items[0].l == 0);
    CHECK(p0->items[1].kind == LS_AV_DOUBLE && p0->items[1].d == 1.5);
    CHECK(p0->items[2].kind == LS_AV_DOUBLE && p0->items[2].d == -2.25);
    ls_ocf_file_free(&af);
    check_decodes_back(&m, &s, e, 4, 3);
    ls_buf_t l;
    read_mlist(&s, e, 4, &l, &af);
    const ls_av_t *parts = ls_av_field(&af.records[0], "partitions");
    CHECK(parts && parts->nitems == 3);
    const ls_av_t *b = &parts->items[0], *f = &parts->items[1], *d = &parts->items[2];
    CHECK_EQ_INT(ls_ice_av_long(b, "contains_null", NULL, 0), 1);
    CHECK(ls_av_field(b, "contains_nan")->kind == LS_AV_NULL); /* not a float */
    CHECK(ls_av_field(b, "lower_bound")->n == 1 && ls_av_field(b, "lower_bound")->p[0] == 0);
    CHECK(ls_av_field(b, "upper_bound")->n == 1 && ls_av_field(b, "upper_bound")->p[0] == 1);
    CHECK_EQ_INT(ls_ice_av_long(f, "contains_nan", NULL, 0), 1);
    const ls_av_t *lo = ls_av_field(f, "lower_bound"), *hi = ls_av_field(f, "upper_bound");
    static const uint8_t negzero[4] = {0, 0, 0, 0x80}, onehalf[4] = {0, 0, 0xc0, 0x3f};
    CHECK(lo->n == 4 && !memcmp(lo->p, negzero, 4)); /* -0.0 below 0.0 */
    CHECK(hi->n == 4 && !memcmp(hi->p, onehalf, 4));
    CHECK_EQ_INT(ls_ice_av_long(d, "contains_nan", NULL, 0), 1);
    lo = ls_av_field(d, "lower_bound"), hi = ls_av_field(d, "upper_bound");
    double x;
    CHECK(lo->n == 8 && (memcpy(&x, lo->p, 8), x == -2.25));
    CHECK(hi->n == 8 && (memcpy(&x, hi->p, 8), x == 1e300));
    ls_ocf_file_free(&af);
    ls_buf_free(&l);
    ls_buf_free(&m);
    for (int i = 0; i < 4; i++)
        ls_ice_datafile_clear(&e[i].df);
}

/* String and binary partition values longer than the inline bytes (a
 * 300-byte identity, a truncate(200) of a binary): whole in the manifest,
 * read back whole (owned by the entries), whole in the summary's bounds,
 * and data_files routes rows by them: equal long values share a file,
 * values differing only past byte 128 do not. */
TEST(long_partition_values)
{
    ls_ice_spec_t s = {0};
    char why[200];
    CHECK_EQ_INT(
        ls_ice_spec_add_typed(&s, 10, "url", "string", LS_ICE_IDENTITY, 0, why, sizeof why), LS_OK);
    CHECK_EQ_INT(
        ls_ice_spec_add_typed(&s, 11, "blob", "binary", LS_ICE_TRUNCATE, 200, why, sizeof why),
        LS_OK);
    char urls[3][301];
    uint8_t blob[260];
    for (int i = 0; i < 3; i++) {
        memset(urls[i], 'a', 300);
        urls[i][300] = 0;
    }
    urls[1][299] = 'b'; /* differs from urls[0] at its last byte only */
    urls[2][0] = 'z';
    for (size_t i = 0; i < sizeof blob; i++)
        blob[i] = (uint8_t)i;
    ls_ice_mentry_t e[3];
    memset(e, 0, sizeof e);
    for (int i = 0; i < 3; i++) {
        ls_ice_sval_t v = {0};
        ls_ice_pval_t pv;
        e[i].status = 1;
        e[i].snapshot_id = 7;
        e[i].seq = e[i].file_seq = -1;
        e[i].df.path = ls_asprintf("file:///t/data/%d.parquet", i);
        e[i].df.record_count = 1;
        e[i].df.file_size = 100;
        v.p = (const uint8_t *)urls[i], v.n = 300;
        CHECK_EQ_INT(ls_ice_field_apply_sval(&s.fields[0], &v, &pv), LS_OK);
        ls_ice_pval_copy(&e[i].df.partition[0], &pv); /* the file owns it */
        v.p = blob, v.n = sizeof blob;
        CHECK_EQ_INT(ls_ice_field_apply_sval(&s.fields[1], &v, &pv), LS_OK);
        CHECK_EQ_INT(pv.n, 200);
        ls_ice_pval_copy(&e[i].df.partition[1], &pv);
    }
    CHECK(ls_ice_pvals_cmp(e[0].df.partition, e[1].df.partition, 2) < 0);
    ls_buf_t m;
    ls_buf_init(&m);
    CHECK_EQ_INT(ls_ice_manifest_encode(&s, 2, "{}", 0, "[]", e, 3, &m), LS_OK);
    ls_ocf_file_t af;
    char err[256];
    CHECK_EQ_INT(ls_ocf_file_read(m.data, m.len, &af, err, sizeof err), LS_OK);
    const ls_av_t *p1 = ls_av_field(ls_av_field(&af.records[1], "data_file"), "partition");
    CHECK(p1 && p1->items[0].n == 300 && !memcmp(p1->items[0].p, urls[1], 300));
    CHECK(p1->items[1].n == 200 && !memcmp(p1->items[1].p, blob, 200));
    ls_ocf_file_free(&af);
    ls_ice_mentry_t *back;
    size_t nb;
    CHECK_EQ_INT(ls_ice_manifest_decode(m.data, m.len, &s, &back, &nb, err, sizeof err), LS_OK);
    CHECK_EQ_INT(nb, 3);
    for (size_t i = 0; i < nb; i++) {
        CHECK(!ls_ice_pvals_cmp(back[i].df.partition, e[i].df.partition, 2));
        CHECK(back[i].df.partition[0].ext != e[i].df.partition[0].ext);
    }
    ls_ice_mentries_free(back, nb);

    ls_ocf_t *w = ls_ice_mlist_new(2, 7, NULL, 1, 0);
    ls_ice_mfile_t mf = {0};
    mf.path = "file:///t/metadata/m.avro";
    ls_ice_mlist_add(w, 2, &mf, &s, e, 3);
    ls_buf_t l;
    ls_buf_init(&l);
    CHECK_EQ_INT(ls_ocf_finish(w, &l), LS_OK);
    ls_ocf_free(w);
    CHECK_EQ_INT(ls_ocf_file_read(l.data, l.len, &af, err, sizeof err), LS_OK);
    const ls_av_t *u = &ls_av_field(&af.records[0], "partitions")->items[0];
    const ls_av_t *lo = ls_av_field(u, "lower_bound"), *hi = ls_av_field(u, "upper_bound");
    CHECK(lo->n == 300 && !memcmp(lo->p, urls[0], 300));
    CHECK(hi->n == 300 && !memcmp(hi->p, urls[2], 300));
    ls_ocf_file_free(&af);
    ls_buf_free(&l);
    ls_buf_free(&m);
    for (int i = 0; i < 3; i++)
        ls_ice_datafile_clear(&e[i].df);

    /* routing rows by long values (data_files.c) */
    ls_objstore_t *os = ls_objstore_mem_open();
    ls_ice_spec_t one = {0};
    CHECK_EQ_INT(ls_ice_spec_add_typed(&one, LS_RAW_FID_KEY, "_kafka_key", "binary",
                                       LS_ICE_IDENTITY, 0, why, sizeof why),
                 LS_OK);
    ls_ice_table_t *t = NULL;
    CHECK_EQ_INT(ls_ice_table_create(os, "w/long", "mem://w/long", ls_raw_iceberg_schema_json(),
                                     LS_RAW_LAST_COLUMN_ID, &one, NULL, NULL, &t, err, sizeof err),
                 LS_OK);
    size_t nrf;
    const ls_pq_field_t *rawf = ls_raw_parquet_fields(&nrf);
    ls_data_files_t *df = ls_data_files_new(t, rawf, nrf, NULL, 0, err, sizeof err);
    CHECK(ls_data_files_needs_values(df));
    for (int i = 0; i < 6; i++) {
        char key[301];
        memcpy(key, urls[i % 3], sizeof key); /* a fresh copy per row: keys are copied */
        ls_raw_record_t r = {.partition = 0,
                             .offset = i,
                             .timestamp_ms = 1,
                             .key = (const uint8_t *)key,
                             .key_len = 300};
        ls_ice_sval_t sv = {0};
        sv.p = r.key, sv.n = 300;
        ls_pq_writer_t *pw = ls_data_files_writer_sv(df, &r, &sv);
        CHECK(pw != NULL);
        memset(key, 0, sizeof key);
        r.key = (const uint8_t *)urls[i % 3];
        CHECK_EQ_INT(ls_data_files_row_done(df, ls_raw_write(pw, &r)), LS_OK);
    }
    const ls_ice_datafile_t *files;
    size_t nfiles;
    CHECK_EQ_INT(ls_data_files_finish(df, &files, &nfiles), LS_OK);
    CHECK_EQ_INT(nfiles, 3);
    for (size_t i = 0; i < nfiles; i++) {
        CHECK_EQ_INT(files[i].record_count, 2);
        CHECK_EQ_INT(files[i].partition[0].n, 300);
    }
    CHECK_EQ_INT(ls_ice_table_append(t, files, nfiles, NULL, 1000, NULL), LS_OK);
    ls_data_files_free(df);
    ls_ice_mentry_t *live;
    size_t nl;
    CHECK_EQ_INT(ls_ice_table_live_files(t, &live, &nl), LS_OK);
    CHECK_EQ_INT(nl, 3);
    int seen = 0;
    for (size_t i = 0; i < nl; i++)
        for (int k = 0; k < 3; k++)
            if (live[i].df.partition[0].n == 300 &&
                !memcmp(ls_ice_pval_data(&live[i].df.partition[0]), urls[k], 300))
                seen |= 1 << k;
    CHECK_EQ_INT(seen, 7);
    ls_ice_mentries_free(live, nl);
    ls_ice_table_free(t);
    ls_objstore_close(os);
}

TEST(table_lifecycle_mem)
{
    ls_objstore_t *os = ls_objstore_mem_open();
    ls_ice_spec_t spec = {0};
    CHECK_EQ_INT(ls_ice_spec_add(&spec, 3, "timestamp", LS_ICE_TIMESTAMPTZ, LS_ICE_DAY), LS_OK);
    const char *props[] = {"write.format.default", "parquet", NULL};
    ls_ice_table_t *t = NULL;
    char err[256] = "";
    CHECK_EQ_INT(ls_ice_table_create(os, "wh/ns/t", "mem://wh/ns/t", ls_raw_iceberg_schema_json(),
                                     LS_RAW_LAST_COLUMN_ID, &spec, props, NULL, &t, err,
                                     sizeof err),
                 LS_OK);
    CHECK_EQ_INT(ls_ice_table_version(t), 1);
    CHECK_EQ_INT(ls_ice_table_current_snapshot(t), -1);
    ls_ice_table_t *t2 = NULL;
    CHECK_EQ_INT(ls_ice_table_create(os, "wh/ns/t", "mem://wh/ns/t", ls_raw_iceberg_schema_json(),
                                     LS_RAW_LAST_COLUMN_ID, &spec, NULL, NULL, &t2, err,
                                     sizeof err),
                 LS_EEXISTS);
    /* required v2 fields */
    json_t *m = get_json(os, "wh/ns/t/metadata/v1.metadata.json");
    CHECK(m);
    static const char *req[] = {
        "format-version",       "table-uuid",      "location",          "last-sequence-number",
        "last-updated-ms",      "last-column-id",  "schemas",           "current-schema-id",
        "partition-specs",      "default-spec-id", "last-partition-id", "sort-orders",
        "default-sort-order-id"};
    for (size_t i = 0; i < sizeof req / sizeof req[0]; i++)
        CHECK(json_object_get(m, req[i]));
    CHECK_EQ_INT(json_integer_value(json_object_get(m, "last-partition-id")), 1000);
    json_decref(m);

    CHECK_EQ_INT(commit_rows(t, 0, 3000, 3, 1 << 30, LS_PQ_SNAPPY), LS_OK);
    CHECK_EQ_INT(ls_ice_table_version(t), 2);
    CHECK(strcmp(ls_ice_table_summary(t, "total-records"), "3000") == 0);
    CHECK(strcmp(ls_ice_table_summary(t, "lakestream.last-offset.p2"), "2999") == 0);
    /* a second handle at the same version loses the race */
    CHECK_EQ_INT(ls_ice_table_load(os, "wh/ns/t", NULL, &t2, err, sizeof err), LS_OK);
    CHECK_EQ_INT(commit_rows(t, 3000, 4000, 1, 1 << 30, LS_PQ_SNAPPY), LS_OK);
    CHECK_EQ_INT(commit_rows(t2, 3000, 4000, 1, 1 << 30, LS_PQ_SNAPPY), LS_ECONFLICT);
    ls_ice_table_free(t2);
    /* reload: newest version, carried summary keys */
    CHECK_EQ_INT(ls_ice_table_load(os, "wh/ns/t", NULL, &t2, err, sizeof err), LS_OK);
    CHECK_EQ_INT(ls_ice_table_version(t2), 3);
    CHECK_EQ_INT(ls_ice_table_current_snapshot(t2), ls_ice_table_current_snapshot(t));
    CHECK(strcmp(ls_ice_table_summary(t2, "lakestream.last-offset.p0"), "3999") == 0);
    CHECK(strcmp(ls_ice_table_summary(t2, "lakestream.last-offset.p2"), "2999") == 0);
    CHECK(strcmp(ls_ice_table_summary(t2, "total-records"), "4000") == 0);
    CHECK(strcmp(ls_ice_table_summary(t2, "added-records"), "1000") == 0);

    m = get_json(os, "wh/ns/t/metadata/v3.metadata.json");
    CHECK(m);
    CHECK_EQ_INT(json_integer_value(json_object_get(m, "last-sequence-number")), 2);
    CHECK_EQ_INT(json_array_size(json_object_get(m, "snapshots")), 2);
    CHECK_EQ_INT(json_array_size(json_object_get(m, "snapshot-log")), 2);
    CHECK_EQ_INT(json_array_size(json_object_get(m, "metadata-log")), 2);
    json_t *snap = json_array_get(json_object_get(m, "snapshots"), 1);
    CHECK_EQ_INT(json_integer_value(json_object_get(snap, "sequence-number")), 2);
    CHECK(json_integer_value(json_object_get(snap, "parent-snapshot-id")) ==
          json_integer_value(
              json_object_get(json_array_get(json_object_get(m, "snapshots"), 0), "snapshot-id")));
    CHECK(json_integer_value(json_object_get(json_object_get(json_object_get(m, "refs"), "main"),
                                             "snapshot-id")) == ls_ice_table_current_snapshot(t));
    /* manifest list: the new manifest first, then the parent's */
    const char *list = json_string_value(json_object_get(snap, "manifest-list"));
    CHECK(strncmp(list, "mem://wh/ns/t/metadata/snap-", 28) == 0);
    char key[512];
    snprintf(key, sizeof key, "wh/ns/t/%s", list + strlen("mem://wh/ns/t/"));
    ls_ocf_file_t f;
    CHECK_EQ_INT(get_avro(os, key, &f), LS_OK);
    CHECK_EQ_INT(f.nrecords, 2);
    CHECK_EQ_INT(ls_av_field(&f.records[0], "sequence_number")->l, 2);
    CHECK_EQ_INT(ls_av_field(&f.records[1], "sequence_number")->l, 1);
    CHECK_EQ_INT(ls_av_field(&f.records[0], "added_rows_count")->l, 1000);
    CHECK_EQ_INT(ls_av_field(&f.records[1], "added_rows_count")->l, 3000);
    CHECK_EQ_INT(ls_av_field(&f.records[1], "partitions")->nitems, 1);
    const char *manifest = (const char *)ls_av_field(&f.records[0], "manifest_path")->p;
    snprintf(key, sizeof key, "wh/ns/t/%s", manifest + strlen("mem://wh/ns/t/"));
    ls_ocf_file_free(&f);
    CHECK_EQ_INT(get_avro(os, key, &f), LS_OK);
    CHECK(strcmp(ls_ocf_file_meta(&f, "format-version"), "2") == 0);
    CHECK(strcmp(ls_ocf_file_meta(&f, "content"), "data") == 0);
    CHECK(strcmp(ls_ocf_file_meta(&f, "partition-spec-id"), "0") == 0);
    CHECK(strstr(ls_ocf_file_meta(&f, "partition-spec"), "\"transform\":\"day\"") != NULL);
    CHECK(strstr(ls_ocf_file_meta(&f, "schema"), "timestamptz") != NULL);
    CHECK(f.nrecords >= 1);
    const ls_av_t *df = ls_av_field(&f.records[0], "data_file");
    CHECK(strcmp((char *)ls_av_field(df, "file_format")->p, "PARQUET") == 0);
    CHECK_EQ_INT(ls_av_field(&f.records[0], "status")->l, 1);
    CHECK(ls_av_field(&f.records[0], "sequence_number")->kind == LS_AV_NULL);
    ls_ocf_file_free(&f);
    json_decref(m);

    /* an append of no files: a snapshot that only moves summary offsets and
     * lists the parent's manifests */
    const char *kv[] = {"lakestream.last-offset.p1", "4100", NULL};
    int64_t sid = 0;
    CHECK_EQ_INT(ls_ice_table_append(t, NULL, 0, kv, ls_clock_wall_ms() + 9999, &sid), LS_OK);
    CHECK_EQ_INT(ls_ice_table_version(t), 4);
    CHECK(strcmp(ls_ice_table_summary(t, "lakestream.last-offset.p1"), "4100") == 0);
    CHECK(strcmp(ls_ice_table_summary(t, "lakestream.last-offset.p0"), "3999") == 0);
    CHECK(strcmp(ls_ice_table_summary(t, "total-records"), "4000") == 0);
    CHECK(strcmp(ls_ice_table_summary(t, "added-data-files"), "0") == 0);
    m = get_json(os, "wh/ns/t/metadata/v4.metadata.json");
    snap = json_array_get(json_object_get(m, "snapshots"), 2);
    CHECK(json_integer_value(json_object_get(snap, "snapshot-id")) == sid);
    list = json_string_value(json_object_get(snap, "manifest-list"));
    snprintf(key, sizeof key, "wh/ns/t/%s", list + strlen("mem://wh/ns/t/"));
    CHECK_EQ_INT(get_avro(os, key, &f), LS_OK);
    CHECK_EQ_INT(f.nrecords, 2);
    CHECK_EQ_INT(ls_av_field(&f.records[0], "sequence_number")->l, 2);
    ls_ocf_file_free(&f);
    json_decref(m);
    ls_ice_table_free(t2);
    ls_ice_table_free(t);
    ls_objstore_close(os);
}

/* Schema evolution: the new schema lands with the next commit (appended to
 * schemas, current, last-column-id raised), not before; ids never go back. */
TEST(schema_evolves_with_the_next_commit)
{
    ls_objstore_t *os = ls_objstore_mem_open();
    ls_ice_spec_t spec = {0};
    CHECK_EQ_INT(ls_ice_spec_add(&spec, 3, "timestamp", LS_ICE_TIMESTAMPTZ, LS_ICE_DAY), LS_OK);
    ls_ice_table_t *t = NULL, *t2 = NULL;
    char err[256] = "";
    CHECK_EQ_INT(ls_ice_table_create(os, "wh/ns/e", "mem://wh/ns/e", ls_raw_iceberg_schema_json(),
                                     LS_RAW_LAST_COLUMN_ID, &spec, NULL, NULL, &t, err, sizeof err),
                 LS_OK);
    /* the raw schema plus an optional column 10 */
    json_t *sj = json_loads(ls_raw_iceberg_schema_json(), 0, NULL);
    json_array_append_new(json_object_get(sj, "fields"),
                          json_pack("{s:i, s:s, s:b, s:s}", "id", 10, "name", "extra", "required",
                                    0, "type", "long"));
    char *text = json_dumps(sj, JSON_COMPACT);
    int sid = -1, last = 0;
    CHECK_EQ_INT(ls_ice_table_set_schema(t, text, 9 - 1, &sid), LS_EINVAL); /* ids go back */
    CHECK_EQ_INT(ls_ice_table_set_schema(t, text, 10, &sid), LS_OK);
    CHECK_EQ_INT(sid, 1);
    char *cur = ls_ice_table_schema(t, &last);
    CHECK(cur && strstr(cur, "\"extra\"") && last == 10);
    ls_free(cur);
    /* nothing committed yet: a loader sees schema 0 */
    CHECK_EQ_INT(ls_ice_table_load(os, "wh/ns/e", NULL, &t2, err, sizeof err), LS_OK);
    cur = ls_ice_table_schema(t2, &last);
    CHECK(cur && !strstr(cur, "\"extra\"") && last == LS_RAW_LAST_COLUMN_ID);
    ls_free(cur);
    ls_ice_table_free(t2);
    CHECK_EQ_INT(commit_rows(t, 0, 10, 1, 1 << 30, LS_PQ_SNAPPY), LS_OK);
    json_t *m = get_json(os, "wh/ns/e/metadata/v2.metadata.json");
    CHECK(m);
    CHECK_EQ_INT(json_array_size(json_object_get(m, "schemas")), 2);
    CHECK_EQ_INT(json_integer_value(json_object_get(m, "current-schema-id")), 1);
    CHECK_EQ_INT(json_integer_value(json_object_get(m, "last-column-id")), 10);
    json_t *snaps = json_object_get(m, "snapshots");
    CHECK_EQ_INT(json_integer_value(json_object_get(
                     json_array_get(snaps, json_array_size(snaps) - 1), "schema-id")),
                 1);
    json_decref(m);
    json_decref(sj);
    free(text);
    ls_ice_table_free(t);
    ls_objstore_close(os);
}

TEST(bounds_truncation)
{
    ls_pq_field_t fl[] = {{"b", LS_PQ_BYTE_ARRAY, LS_PQ_OPTIONAL, LS_PQ_LT_NONE, 1, 0, 0, 0, 0},
                          {"s", LS_PQ_BYTE_ARRAY, LS_PQ_REQUIRED, LS_PQ_LT_STRING, 2, 0, 0, 0, 0}};
    ls_buf_t out;
    ls_buf_init(&out);
    char err[100];
    ls_pq_writer_t *w = ls_pq_writer_new(fl, 2, NULL, &out, err, sizeof err);
    uint8_t big[20];
    memset(big, 0xff, sizeof big);
    big[3] = 0x41;
    ls_pq_put_bytes(w, 0, 0, big, sizeof big); /* ff ff ff 41 ff... */
    ls_pq_put_bytes(w, 1, 0,
                    "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9", 18);
    CHECK_EQ_INT(ls_pq_end_row(w), LS_OK);
    ls_pq_put_bytes(w, 0, 0, "a", 1);
    ls_pq_put_bytes(w, 1, 0, "z", 1);
    CHECK_EQ_INT(ls_pq_end_row(w), LS_OK);
    ls_pq_put_null(w, 0, 0, 0);
    ls_pq_put_bytes(
        w, 1, 0, "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9z", 19);
    CHECK_EQ_INT(ls_pq_end_row(w), LS_OK);
    CHECK_EQ_INT(ls_pq_writer_finish(w), LS_OK);
    ls_ice_datafile_t df = {0};
    ls_ice_datafile_metrics(&df, w);
    CHECK_EQ_INT(df.nmetrics, 2);
    CHECK_EQ_INT(df.record_count, 3);
    CHECK_EQ_INT(df.metrics[0].null_count, 1);
    CHECK_EQ_INT(df.metrics[0].value_count, 3);
    /* binary: upper = first 4 bytes with 0x41 -> 0x42 (trailing 0xff dropped) */
    CHECK(df.metrics[0].has_upper && df.metrics[0].upper_len == 4 &&
          df.metrics[0].upper[3] == 0x42);
    CHECK(df.metrics[0].lower_len == 1 && df.metrics[0].lower[0] == 'a');
    /* string: "z" < "éé..." (UTF-8 bytes compare unsigned); an upper bound
     * longer than 16 bytes is left out rather than truncated */
    CHECK(df.metrics[1].lower_len == 1 && df.metrics[1].lower[0] == 'z');
    CHECK(!df.metrics[1].has_upper);
    ls_ice_datafile_clear(&df);
    ls_pq_writer_free(w);
    ls_buf_free(&out);
}

/* A store failure at each put of an append (data file, manifest, manifest
 * list, metadata, version hint): the append either fails and leaves the
 * table as it was (a retry then lands every row once), or — when only the
 * advisory version hint failed — succeeds and a fresh load still finds the
 * new version by probing. */
TEST(append_fails_cleanly_at_each_put)
{
    for (int nth = 1; nth <= 5; nth++) {
        char err[256] = "";
        ls_objstore_t *os = ls_objstore_open("faulty+mem://?ops=put&error=eio", 0, err, sizeof err);
        CHECK(os);
        ls_ice_table_t *t = NULL;
        ls_ice_spec_t spec = {0};
        CHECK_EQ_INT(ls_ice_table_create(os, "w/t", "mem://w/t", ls_raw_iceberg_schema_json(),
                                         LS_RAW_LAST_COLUMN_ID, &spec, NULL, NULL, &t, err,
                                         sizeof err),
                     LS_OK);
        CHECK_EQ_INT(commit_rows(t, 0, 100, 3, 0, LS_PQ_SNAPPY), LS_OK);
        ls_fault_stats_t fs;
        ls_objstore_faulty_stats(os, &fs);
        char params[64];
        snprintf(params, sizeof params, "fail_nth=%llu", (unsigned long long)(fs.calls + nth));
        CHECK_EQ_INT(ls_objstore_faulty_set(os, params, err, sizeof err), 0);
        ls_status st = commit_rows(t, 100, 200, 3, 0, LS_PQ_SNAPPY);
        if (nth < 5) {
            CHECK_EQ_INT(st, LS_EIO);
            CHECK_EQ_INT(ls_ice_table_version(t), 2);
            CHECK(strcmp(ls_ice_table_summary(t, "total-records"), "100") == 0);
            CHECK_EQ_INT(commit_rows(t, 100, 200, 3, 0, LS_PQ_SNAPPY), LS_OK); /* retry */
        } else {
            CHECK_EQ_INT(st, LS_OK); /* only the hint failed */
        }
        ls_ice_table_free(t);
        CHECK_EQ_INT(ls_ice_table_load(os, "w/t", NULL, &t, err, sizeof err), LS_OK);
        CHECK_EQ_INT(ls_ice_table_version(t), 3);
        CHECK(strcmp(ls_ice_table_summary(t, "total-records"), "200") == 0);
        CHECK(strcmp(ls_ice_table_summary(t, "lakestream.last-offset.p1"), "199") == 0);
        ls_ice_table_free(t);
        ls_objstore_close(os);
    }
}

/* A merging append that fails at each of its PUTs (data file, manifest,
 * merged manifest, list, metadata) leaves the table as it was; the retry
 * merges and every row stays planned. (A crash there is the same: the
 * commit point was never reached.) */
TEST(merge_fails_cleanly_at_each_put)
{
    for (int nth = 1; nth <= 6; nth++) {
        char err[256] = "";
        ls_objstore_t *os = ls_objstore_open("faulty+mem://?ops=put&error=eio", 0, err, sizeof err);
        CHECK(os);
        ls_ice_table_t *t = NULL;
        ls_ice_spec_t spec = {0};
        const char *props[] = {"commit.manifest.min-count-to-merge", "3", NULL};
        CHECK_EQ_INT(ls_ice_table_create(os, "w/m", "mem://w/m", ls_raw_iceberg_schema_json(),
                                         LS_RAW_LAST_COLUMN_ID, &spec, props, NULL, &t, err,
                                         sizeof err),
                     LS_OK);
        CHECK_EQ_INT(commit_rows(t, 0, 100, 3, 0, LS_PQ_SNAPPY), LS_OK);
        CHECK_EQ_INT(commit_rows(t, 100, 200, 3, 0, LS_PQ_SNAPPY), LS_OK);
        ls_fault_stats_t fs;
        ls_objstore_faulty_stats(os, &fs);
        char params[64];
        snprintf(params, sizeof params, "fail_nth=%llu", (unsigned long long)(fs.calls + nth));
        CHECK_EQ_INT(ls_objstore_faulty_set(os, params, err, sizeof err), 0);
        ls_status st = commit_rows(t, 200, 300, 3, 0, LS_PQ_SNAPPY);
        if (nth < 6) {
            CHECK_EQ_INT(st, LS_EIO);
            CHECK_EQ_INT(ls_ice_table_version(t), 3);
            CHECK(strcmp(ls_ice_table_summary(t, "total-records"), "200") == 0);
            CHECK_EQ_INT(commit_rows(t, 200, 300, 3, 0, LS_PQ_SNAPPY), LS_OK); /* retry */
        } else {
            CHECK_EQ_INT(st, LS_OK); /* only the hint failed */
        }
        CHECK(strcmp(ls_ice_table_summary(t, "manifests-replaced"), "2") == 0);
        ls_ice_table_free(t);
        CHECK_EQ_INT(ls_ice_table_load(os, "w/m", NULL, &t, err, sizeof err), LS_OK);
        CHECK(strcmp(ls_ice_table_summary(t, "total-records"), "300") == 0);
        /* the current list: the new manifest and the merged one, 300 rows */
        json_t *meta = get_json(os, "w/m/metadata/v4.metadata.json");
        CHECK(meta);
        json_t *snaps = json_object_get(meta, "snapshots");
        const char *list = json_string_value(
            json_object_get(json_array_get(snaps, json_array_size(snaps) - 1), "manifest-list"));
        ls_ocf_file_t lf;
        CHECK_EQ_INT(get_avro(os, list + strlen("mem://"), &lf), LS_OK);
        CHECK_EQ_INT(lf.nrecords, 2);
        int64_t rows = 0;
        for (size_t i = 0; i < lf.nrecords; i++)
            rows += ls_av_field(&lf.records[i], "added_rows_count")->l +
                    ls_av_field(&lf.records[i], "existing_rows_count")->l;
        CHECK_EQ_INT(rows, 300);
        ls_ocf_file_free(&lf);
        json_decref(meta);
        ls_ice_table_free(t);
        ls_objstore_close(os);
    }
}

/* Maintenance over thousands of appends (one file each, one second apart):
 * manifests merge, snapshots expire, old metadata files go, and the current
 * snapshot still plans every file ever appended with its own data sequence
 * number and record count. */
static int count_keys(ls_objstore_t *os, const char *prefix)
{
    ls_objinfo_t *v = NULL;
    size_t n = 0;
    if (ls_objstore_list(os, prefix, &v, &n) != LS_OK) return -1;
    ls_objinfo_free(v, n);
    return (int)n;
}

TEST(maintenance_thousands_of_appends)
{
    enum { APPENDS = 3000, AGE_S = 20, MERGE_AT = 16, KEEP_META = 4 };
    ls_objstore_t *os = ls_objstore_mem_open();
    ls_ice_spec_t spec = {0};
    CHECK_EQ_INT(
        ls_ice_spec_add(&spec, LS_RAW_FID_PARTITION, "partition", LS_ICE_INT, LS_ICE_IDENTITY),
        LS_OK);
    const char *props[] = {"commit.manifest.min-count-to-merge",
                           "16",
                           "write.metadata.previous-versions-max",
                           "4",
                           "write.metadata.delete-after-commit.enabled",
                           "true",
                           NULL};
    ls_ice_table_t *t = NULL;
    char err[256] = "";
    CHECK_EQ_INT(ls_ice_table_create(os, "wh/ns/m", "mem://wh/ns/m", ls_raw_iceberg_schema_json(),
                                     LS_RAW_LAST_COLUMN_ID, &spec, props, NULL, &t, err,
                                     sizeof err),
                 LS_OK);
    int64_t t0 = ls_clock_wall_ms(), rows = 0;
    int max_meta_objs = 0;
    for (int i = 0; i < APPENDS; i++) {
        if (i == APPENDS / 2) { /* a fresh handle carries on */
            ls_ice_table_free(t);
            CHECK_EQ_INT(ls_ice_table_load(os, "wh/ns/m", NULL, &t, err, sizeof err), LS_OK);
        }
        ls_ice_table_set_snapshot_retention(t, AGE_S * 1000, 1);
        ls_ice_colmetric_t m = {.field_id = LS_RAW_FID_PARTITION,
                                .column_size = 10,
                                .value_count = i % 7 + 1,
                                .has_lower = 1,
                                .has_upper = 1,
                                .lower_len = 4,
                                .upper_len = 4};
        m.lower[0] = m.upper[0] = (uint8_t)(i % 4);
        char path[64];
        snprintf(path, sizeof path, "mem://wh/ns/m/data/f%05d.parquet", i);
        ls_ice_datafile_t df = {.path = path,
                                .record_count = i % 7 + 1,
                                .file_size = 100,
                                .metrics = &m,
                                .nmetrics = 1};
        ls_ice_pval_long(&df.partition[0], i % 4);
        char off[32];
        snprintf(off, sizeof off, "%d", i);
        const char *kv[] = {"lakestream.log.0.last-offset", off, NULL};
        CHECK_EQ_INT(ls_ice_table_append(t, &df, 1, kv, t0 + i * 1000LL, NULL), LS_OK);
        rows += i % 7 + 1;
        int objs = count_keys(os, "wh/ns/m/metadata/");
        if (objs > max_meta_objs) max_meta_objs = objs;
    }
    CHECK(strcmp(ls_ice_table_summary(t, "lakestream.log.0.last-offset"), "2999") == 0);
    char want[32];
    snprintf(want, sizeof want, "%lld", (long long)rows);
    CHECK(strcmp(ls_ice_table_summary(t, "total-records"), want) == 0);
    /* bounded: snapshots within the age, a short metadata log, few files */
    json_t *meta = get_json(os, "wh/ns/m/metadata/v3001.metadata.json");
    CHECK(meta);
    size_t nsnap = json_array_size(json_object_get(meta, "snapshots"));
    CHECK(nsnap >= AGE_S && nsnap <= AGE_S + 2);
    CHECK_EQ_INT(json_array_size(json_object_get(meta, "snapshot-log")), nsnap);
    CHECK_EQ_INT(json_array_size(json_object_get(meta, "metadata-log")), KEEP_META);
    /* each retained snapshot: a list (+ a manifest); merged manifests; the
     * last KEEP_META + 1 metadata files; one version hint */
    CHECK(max_meta_objs < 3 * (AGE_S + 2) + MERGE_AT + KEEP_META + 8);
    CHECK(!get_json(os, "wh/ns/m/metadata/v2990.metadata.json"));
    json_t *kept = get_json(os, "wh/ns/m/metadata/v2997.metadata.json");
    CHECK(kept != NULL);
    json_decref(kept);
    /* the current snapshot plans every file once, with its own sequence number */
    json_t *cur = json_array_get(json_object_get(meta, "snapshots"), nsnap - 1);
    const char *list = json_string_value(json_object_get(cur, "manifest-list"));
    ls_ocf_file_t lf;
    CHECK_EQ_INT(get_avro(os, list + strlen("mem://"), &lf), LS_OK);
    CHECK(lf.nrecords <= MERGE_AT);
    unsigned char *seen = calloc(APPENDS, 1);
    int64_t planned_rows = 0;
    int nfiles = 0;
    for (size_t i = 0; i < lf.nrecords; i++) {
        const char *mp = (const char *)ls_av_field(&lf.records[i], "manifest_path")->p;
        int64_t mseq = ls_av_field(&lf.records[i], "sequence_number")->l;
        ls_buf_t b;
        ls_buf_init(&b);
        CHECK_EQ_INT(ls_objstore_get(os, mp + strlen("mem://"), 0, UINT64_MAX, &b), LS_OK);
        ls_ice_mentry_t *e;
        size_t ne;
        CHECK_EQ_INT(ls_ice_manifest_decode(b.data, b.len, &spec, &e, &ne, err, sizeof err), LS_OK);
        for (size_t k = 0; k < ne; k++) {
            int f = atoi(strrchr(e[k].df.path, 'f') + 1);
            CHECK(f >= 0 && f < APPENDS && !seen[f]);
            seen[f] = 1;
            nfiles++;
            int64_t seq = e[k].seq >= 0 ? e[k].seq : mseq;
            CHECK_EQ_INT(seq, f + 1);
            CHECK_EQ_INT(e[k].df.record_count, f % 7 + 1);
            CHECK_EQ_INT(e[k].df.partition[0].l, f % 4);
            CHECK(e[k].df.nmetrics == 1 && e[k].df.metrics[0].value_count == f % 7 + 1);
            planned_rows += e[k].df.record_count;
        }
        ls_ice_mentries_free(e, ne);
        ls_buf_free(&b);
    }
    CHECK_EQ_INT(nfiles, APPENDS);
    CHECK_EQ_INT(planned_rows, rows);
    ls_ice_maint_stats_t ms;
    ls_ice_table_maint_stats(t, &ms);
    CHECK(ms.snapshots_expired > 0 && ms.manifests_replaced > 0 && ms.files_deleted > 0);
    free(seen);
    ls_ocf_file_free(&lf);
    json_decref(meta);
    ls_ice_table_free(t);
    ls_objstore_close(os);
}

/* Orphans go, everything the table references stays: a table with merged
 * manifests and expired snapshots, plus files no commit references. */
TEST(orphan_files_removed)
{
    ls_objstore_t *os = ls_objstore_mem_open();
    ls_ice_spec_t spec = {0};
    const char *props[] = {"commit.manifest.min-count-to-merge",
                           "3",
                           "write.metadata.previous-versions-max",
                           "2",
                           "write.metadata.delete-after-commit.enabled",
                           "true",
                           NULL};
    ls_ice_table_t *t = NULL;
    char err[256] = "";
    CHECK_EQ_INT(ls_ice_table_create(os, "wh/ns/o", "mem://wh/ns/o", ls_raw_iceberg_schema_json(),
                                     LS_RAW_LAST_COLUMN_ID, &spec, props, NULL, &t, err,
                                     sizeof err),
                 LS_OK);
    ls_ice_table_set_snapshot_retention(t, 150, 1);
    for (int64_t i = 0; i < 12; i++)
        CHECK_EQ_INT(commit_rows(t, i * 50, (i + 1) * 50, 1, 0, LS_PQ_SNAPPY), LS_OK);
    static const char *orphans[] = {"wh/ns/o/data/orphan.parquet", "wh/ns/o/metadata/x-m0.avro",
                                    "wh/ns/o/metadata/00099-x.metadata.json"};
    for (int i = 0; i < 3; i++) {
        struct iovec iov = {(void *)"junk", 4};
        CHECK_EQ_INT(ls_objstore_put(os, orphans[i], &iov, 1, 0), LS_OK);
    }
    /* an external catalog's own metadata (compact/catalog_sync.c) is not ours to sweep */
    struct iovec theirs = {(void *)"{}", 2};
    CHECK_EQ_INT(ls_objstore_put(os, "wh/ns/o/" LS_ICE_CATALOGS_DIR "/ext/00001-u.metadata.json",
                                 &theirs, 1, 0),
                 LS_OK);
    int before = count_keys(os, "wh/ns/o/");
    uint64_t n = 0;
    /* nothing is old enough yet */
    CHECK_EQ_INT(ls_ice_table_remove_orphans(t, 0, NULL, &n), LS_OK);
    CHECK_EQ_INT(n, 0);
    CHECK_EQ_INT(ls_ice_table_remove_orphans(t, INT64_MAX, NULL, &n), LS_OK);
    CHECK_EQ_INT(n, 3);
    CHECK_EQ_INT(count_keys(os, "wh/ns/o/"), before - 3);
    CHECK_EQ_INT(ls_ice_table_remove_orphans(t, INT64_MAX, NULL, &n), LS_OK);
    CHECK_EQ_INT(n, 0);
    ls_objinfo_t info;
    CHECK_EQ_INT(
        ls_objstore_head(os, "wh/ns/o/" LS_ICE_CATALOGS_DIR "/ext/00001-u.metadata.json", &info),
        LS_OK);
    /* the table still plans every row, from files that exist */
    ls_ice_table_t *t2 = NULL;
    CHECK_EQ_INT(ls_ice_table_load(os, "wh/ns/o", NULL, &t2, err, sizeof err), LS_OK);
    json_t *meta = get_json(os, "wh/ns/o/metadata/v13.metadata.json");
    CHECK(meta);
    json_t *snaps = json_object_get(meta, "snapshots");
    const char *list = json_string_value(
        json_object_get(json_array_get(snaps, json_array_size(snaps) - 1), "manifest-list"));
    ls_ocf_file_t lf;
    CHECK_EQ_INT(get_avro(os, list + strlen("mem://"), &lf), LS_OK);
    int64_t rows = 0;
    for (size_t i = 0; i < lf.nrecords; i++) {
        ls_ocf_file_t mf;
        const char *mp = (const char *)ls_av_field(&lf.records[i], "manifest_path")->p;
        CHECK_EQ_INT(get_avro(os, mp + strlen("mem://"), &mf), LS_OK);
        for (size_t k = 0; k < mf.nrecords; k++) {
            const ls_av_t *d = ls_av_field(&mf.records[k], "data_file");
            ls_objinfo_t info;
            CHECK_EQ_INT(
                ls_objstore_head(
                    os, (const char *)ls_av_field(d, "file_path")->p + strlen("mem://"), &info),
                LS_OK);
            rows += ls_av_field(d, "record_count")->l;
        }
        ls_ocf_file_free(&mf);
    }
    CHECK_EQ_INT(rows, 600);
    ls_ocf_file_free(&lf);
    json_decref(meta);
    ls_ice_table_free(t2);
    ls_ice_table_free(t);
    ls_objstore_close(os);
}

/* snapshot retention keeps at least min_keep snapshots whatever their age */
TEST(snapshot_retention_min_keep)
{
    ls_objstore_t *os = ls_objstore_mem_open();
    ls_ice_spec_t spec = {0};
    ls_ice_table_t *t = NULL;
    char err[256] = "";
    CHECK_EQ_INT(ls_ice_table_create(os, "wh/ns/k", "mem://wh/ns/k", ls_raw_iceberg_schema_json(),
                                     LS_RAW_LAST_COLUMN_ID, &spec, NULL, NULL, &t, err, sizeof err),
                 LS_OK);
    ls_ice_table_set_snapshot_retention(t, 1, 5);
    for (int64_t i = 0; i < 20; i++)
        CHECK_EQ_INT(commit_rows(t, i * 10, (i + 1) * 10, 1, 0, LS_PQ_SNAPPY), LS_OK);
    json_t *meta = get_json(os, "wh/ns/k/metadata/v21.metadata.json");
    CHECK(meta);
    CHECK_EQ_INT(json_array_size(json_object_get(meta, "snapshots")), 5);
    json_decref(meta);
    /* a committer whose clock is behind: the timestamps do not go back */
    const char *kv[] = {"lakestream.log.0.last-offset", "300", NULL};
    CHECK_EQ_INT(ls_ice_table_append(t, NULL, 0, kv, 1000, NULL), LS_OK);
    meta = get_json(os, "wh/ns/k/metadata/v22.metadata.json");
    CHECK(meta);
    json_t *snaps = json_object_get(meta, "snapshots"),
           *mlog = json_object_get(meta, "metadata-log");
    size_t ns = json_array_size(snaps), nm = json_array_size(mlog);
    int64_t last_snap =
        json_integer_value(json_object_get(json_array_get(snaps, ns - 1), "timestamp-ms"));
    CHECK(last_snap >=
          json_integer_value(json_object_get(json_array_get(snaps, ns - 2), "timestamp-ms")));
    CHECK(json_integer_value(json_object_get(meta, "last-updated-ms")) >=
          json_integer_value(json_object_get(json_array_get(mlog, nm - 1), "timestamp-ms")));
    json_decref(meta);
    ls_ice_table_free(t);
    ls_objstore_close(os);
}

/* Copies the live files of one identity partition (value part) row for
 * row into one new file *df and the paths it replaces into removed[]
 * (views into live[]); the table is at prefix, its location loc. */
static ls_status copy_partition(ls_ice_table_t *t, ls_objstore_t *os, const char *prefix,
                                const char *loc, const ls_ice_mentry_t *live, size_t n, int part,
                                const char **removed, size_t *nr, ls_ice_datafile_t *df)
{
    size_t nf;
    const ls_pq_field_t *rawf = ls_raw_parquet_fields(&nf);
    ls_pq_opts_t o;
    ls_pq_opts_init(&o);
    o.codec = LS_PQ_ZSTD;
    ls_buf_t out;
    ls_buf_init(&out);
    char err[256];
    ls_pq_writer_t *w = ls_pq_writer_new(rawf, nf, &o, &out, err, sizeof err);
    ls_status st = w ? LS_OK : LS_EINVAL;
    *nr = 0;
    for (size_t k = 0; k < n && st == LS_OK; k++) {
        if (live[k].df.partition[0].l != part) continue;
        removed[(*nr)++] = live[k].df.path;
        ls_buf_t raw;
        ls_buf_init(&raw);
        char key[PATH_MAX + 256];
        snprintf(key, sizeof key, "%s/%s", prefix, live[k].df.path + strlen(loc) + 1);
        st = ls_objstore_get(os, key, 0, UINT64_MAX, &raw);
        ls_pqr_t *r = st == LS_OK ? ls_pqr_open(raw.data, raw.len, &st, err, sizeof err) : NULL;
        if (r) st = ls_pqr_copy_rows(r, w, err, sizeof err);
        ls_pqr_free(r);
        ls_buf_free(&raw);
    }
    if (st == LS_OK) st = ls_pq_writer_finish(w);
    memset(df, 0, sizeof *df);
    if (st == LS_OK) {
        ls_ice_datafile_metrics(df, w);
        ls_ice_pval_long(&df->partition[0], part);
        st = ls_ice_table_put_data(t, &out, "parquet", df);
    }
    if (w) ls_pq_writer_free(w);
    ls_buf_free(&out);
    return st;
}

static bool summary_is(const ls_ice_table_t *t, const char *key, const char *want)
{
    const char *v = ls_ice_table_summary(t, key);
    return v && !strcmp(v, want);
}

/* A table at mem://<prefix> partitioned by Kafka partition (identity),
 * with `commits` appends of 30 rows over 3 partitions; NULL on failure. */
static ls_ice_table_t *partitioned_table_props(ls_objstore_t *os, const char *prefix, int commits,
                                               const char *const *props)
{
    ls_ice_spec_t spec = {0};
    ls_ice_spec_add(&spec, LS_RAW_FID_PARTITION, "partition", LS_ICE_INT, LS_ICE_IDENTITY);
    ls_ice_table_t *t = NULL;
    char err[256] = "", loc[128];
    snprintf(loc, sizeof loc, "mem://%s", prefix);
    if (ls_ice_table_create(os, prefix, loc, ls_raw_iceberg_schema_json(), LS_RAW_LAST_COLUMN_ID,
                            &spec, props, NULL, &t, err, sizeof err) != LS_OK)
        return NULL;
    for (int64_t i = 0; i < commits; i++)
        if (commit_rows(t, i * 30, (i + 1) * 30, 3, 0, LS_PQ_ZSTD) != LS_OK) {
            ls_ice_table_free(t);
            return NULL;
        }
    return t;
}

static ls_ice_table_t *partitioned_table(ls_objstore_t *os, const char *prefix, int commits)
{
    return partitioned_table_props(os, prefix, commits, NULL);
}

/* A replace commit (Iceberg's RewriteFiles): partition 0's twenty small
 * files, copied row for row into one, replace them; every row stays, once;
 * the old snapshot still reads the old files; a second rewrite of the same
 * files is a conflict. */
TEST(rewrite_small_files)
{
    ls_objstore_t *os = ls_objstore_mem_open();
    ls_ice_table_t *t = partitioned_table(os, "wh/ns/r", 20);
    CHECK(t);
    int64_t before = ls_ice_table_current_snapshot(t);
    ls_ice_mentry_t *live;
    size_t n;
    CHECK_EQ_INT(ls_ice_table_live_files(t, &live, &n), LS_OK);
    CHECK_EQ_INT(n, 60);
    /* partition 0's files, copied into one */
    const char *removed[20];
    size_t nr = 0;
    ls_ice_datafile_t df;
    CHECK_EQ_INT(copy_partition(t, os, "wh/ns/r", "mem://wh/ns/r", live, n, 0, removed, &nr, &df),
                 LS_OK);
    CHECK_EQ_INT(nr, 20);
    /* a rewrite that loses a row is refused */
    df.record_count = 199;
    CHECK_EQ_INT(ls_ice_table_rewrite(t, removed, nr, &df, 1, 0, ls_clock_wall_ms() + 1000, NULL),
                 LS_EINVAL);
    df.record_count = 200;
    int64_t snap;
    CHECK_EQ_INT(ls_ice_table_rewrite(t, removed, nr, &df, 1, 0, ls_clock_wall_ms() + 1000, &snap),
                 LS_OK);
    CHECK(summary_is(t, "operation", "replace"));
    CHECK(summary_is(t, "deleted-data-files", "20"));
    CHECK(summary_is(t, "total-data-files", "41"));
    CHECK(summary_is(t, "total-records", "600"));
    /* the live files now: partition 0's one file and the other forty */
    ls_ice_mentry_t *after;
    size_t na;
    CHECK_EQ_INT(ls_ice_table_live_files(t, &after, &na), LS_OK);
    CHECK_EQ_INT(na, 41);
    int64_t total = 0, p0 = 0;
    for (size_t k = 0; k < na; k++) {
        total += after[k].df.record_count;
        if (after[k].df.partition[0].l == 0) {
            p0++;
            CHECK_EQ_INT(after[k].seq, 21); /* the rewrite's sequence number */
        }
    }
    CHECK_EQ_INT(total, 600);
    CHECK_EQ_INT(p0, 1);
    ls_ice_mentries_free(after, na);
    /* the same files again: they are gone, so a conflict */
    CHECK_EQ_INT(ls_ice_table_rewrite(t, removed, nr, &df, 1, 0, ls_clock_wall_ms() + 2000, NULL),
                 LS_ECONFLICT);
    /* appends go on after a rewrite, and still see 61 rows' worth of files */
    CHECK_EQ_INT(commit_rows(t, 600, 630, 3, 0, LS_PQ_ZSTD), LS_OK);
    CHECK_EQ_INT(ls_ice_table_live_files(t, &after, &na), LS_OK);
    CHECK_EQ_INT(na, 44);
    ls_ice_mentries_free(after, na);
    CHECK(before != snap);
    ls_ice_datafile_clear(&df);
    ls_ice_mentries_free(live, n);
    ls_ice_table_free(t);
    ls_objstore_close(os);
}

/* DELETED entries in the manifests of table `prefix`'s current snapshot
 * (read through its version hint), -1 when they cannot be read. */
static int deleted_entries(ls_objstore_t *os, const char *prefix)
{
    char key[256];
    ls_buf_t hint;
    ls_buf_init(&hint);
    snprintf(key, sizeof key, "%s/metadata/version-hint.text", prefix);
    if (ls_objstore_get(os, key, 0, UINT64_MAX, &hint) != LS_OK) return -1;
    snprintf(key, sizeof key, "%s/metadata/v%.*s.metadata.json", prefix, (int)hint.len,
             (const char *)hint.data);
    ls_buf_free(&hint);
    json_t *meta = get_json(os, key);
    if (!meta) return -1;
    json_int_t cur = json_integer_value(json_object_get(meta, "current-snapshot-id"));
    const char *list = NULL;
    size_t i;
    json_t *s;
    json_array_foreach(json_object_get(meta, "snapshots"), i,
                       s) if (json_integer_value(json_object_get(s, "snapshot-id")) == cur) list =
        json_string_value(json_object_get(s, "manifest-list"));
    int deleted = -1;
    ls_ocf_file_t lf;
    if (list && get_avro(os, list + strlen("mem://"), &lf) == LS_OK) {
        deleted = 0;
        for (size_t m = 0; m < lf.nrecords && deleted >= 0; m++) {
            ls_ocf_file_t mf;
            const char *mp = (const char *)ls_av_field(&lf.records[m], "manifest_path")->p;
            if (get_avro(os, mp + strlen("mem://"), &mf) != LS_OK) {
                deleted = -1;
                break;
            }
            for (size_t k = 0; k < mf.nrecords; k++)
                deleted += ls_av_field(&mf.records[k], "status")->l == LS_ICE_DELETED;
            ls_ocf_file_free(&mf);
        }
        ls_ocf_file_free(&lf);
    }
    json_decref(meta);
    return deleted;
}

/* A rewrite's replaced files: kept while a retained snapshot has them live
 * or is the one that deleted them; deleted by the commit that expires the
 * deleting snapshot (no file delay), although the manifest holding their
 * DELETED entries is still carried (no merge yet): the sweep finds nothing
 * left. */
TEST(rewritten_files_go_when_their_deleting_snapshot_expires)
{
    ls_objstore_t *os = ls_objstore_mem_open();
    ls_ice_table_t *t = partitioned_table(os, "wh/ns/x", 10);
    CHECK(t);
    ls_ice_mentry_t *live;
    size_t n;
    CHECK_EQ_INT(ls_ice_table_live_files(t, &live, &n), LS_OK);
    const char *removed[20];
    size_t nr = 0;
    ls_ice_datafile_t df;
    CHECK_EQ_INT(copy_partition(t, os, "wh/ns/x", "mem://wh/ns/x", live, n, 0, removed, &nr, &df),
                 LS_OK);
    CHECK_EQ_INT(nr, 10);
    CHECK_EQ_INT(ls_ice_table_rewrite(t, removed, nr, &df, 1, 0, ls_clock_wall_ms() + 1000, NULL),
                 LS_OK);
    CHECK_EQ_INT(commit_rows(t, 300, 330, 3, 0, LS_PQ_ZSTD), LS_OK);
    int files = count_keys(os, "wh/ns/x/data/");
    uint64_t gone = 0;
    /* every snapshot retained: the replaced files stay */
    CHECK_EQ_INT(ls_ice_table_remove_orphans(t, INT64_MAX, NULL, &gone), LS_OK);
    CHECK_EQ_INT(gone, 0);
    /* everything before the last append expires with the next one (the
     * rewrite among them); the rewrite's manifest, DELETED entries and all,
     * is carried into the new snapshot */
    ls_ice_table_set_snapshot_retention(t, 100, 1);
    CHECK_EQ_INT(commit_rows(t, 5000, 5030, 3, 0, LS_PQ_ZSTD), LS_OK);
    CHECK_EQ_INT(deleted_entries(os, "wh/ns/x"), (int)nr);
    CHECK_EQ_INT(count_keys(os, "wh/ns/x/data/"), files + 3 - (int)nr);
    ls_objinfo_t info;
    for (size_t i = 0; i < nr; i++)
        CHECK_EQ_INT(ls_objstore_head(os, removed[i] + strlen("mem://"), &info), LS_ENOTFOUND);
    CHECK_EQ_INT(ls_ice_table_remove_orphans(t, INT64_MAX, NULL, &gone), LS_OK);
    CHECK_EQ_INT(gone, 0);
    /* what the current snapshot plans all exists, every row */
    ls_ice_mentry_t *after;
    size_t na;
    CHECK_EQ_INT(ls_ice_table_live_files(t, &after, &na), LS_OK);
    int64_t rows = 0;
    for (size_t k = 0; k < na; k++) {
        CHECK_EQ_INT(ls_objstore_head(os, after[k].df.path + strlen("mem://"), &info), LS_OK);
        rows += after[k].df.record_count;
    }
    CHECK_EQ_INT(rows, 360);
    ls_ice_mentries_free(after, na);
    ls_ice_datafile_clear(&df);
    ls_ice_mentries_free(live, n);
    ls_ice_table_free(t);
    ls_objstore_close(os);
}

static int write_warehouse(const char *dir)
{
    char root[PATH_MAX], store[PATH_MAX + 16];
    if (!realpath(dir, root)) return -1;
    snprintf(store, sizeof store, "%s/store", root);
    mkdir(store, 0755);
    char err[256];
    ls_objstore_t *os = ls_objstore_fs_open(store, 0, err, sizeof err);
    if (!os) return -2;
    int rc = 0;
    for (int variant = 0; variant < 6 && rc == 0; variant++) {
        static const char *names[] = {"raw_unpart", "raw_day",    "raw_markers",
                                      "raw_hour",   "raw_merged", "raw_rewritten"};
        const char *name = names[variant];
        ls_ice_spec_t spec = {0};
        if (variant == 3)
            ls_ice_spec_add(&spec, LS_RAW_FID_TIMESTAMP, "timestamp", LS_ICE_TIMESTAMPTZ,
                            LS_ICE_HOUR);
        if (variant == 1) {
            ls_ice_spec_add(&spec, LS_RAW_FID_TIMESTAMP, "timestamp", LS_ICE_TIMESTAMPTZ,
                            LS_ICE_DAY);
            ls_ice_spec_add(&spec, LS_RAW_FID_PARTITION, "partition", LS_ICE_INT, LS_ICE_IDENTITY);
        }
        char prefix[128], loc[PATH_MAX + 200];
        snprintf(prefix, sizeof prefix, "warehouse/ns/%s", name);
        snprintf(loc, sizeof loc, "file://%s/%s", store, prefix);
        ls_ice_table_t *t;
        /* raw_merged: 40 appends with manifests merged every 4 and snapshots
         * expiring after 500 ms (commit_rows stamps snapshots t0 + `to`) */
        const char *merge_props[] = {"commit.manifest.min-count-to-merge",
                                     "4",
                                     "write.metadata.previous-versions-max",
                                     "3",
                                     "write.metadata.delete-after-commit.enabled",
                                     "true",
                                     NULL};
        if (variant >= 4)
            ls_ice_spec_add(&spec, LS_RAW_FID_PARTITION, "partition", LS_ICE_INT, LS_ICE_IDENTITY);
        if (ls_ice_table_create(os, prefix, loc, ls_raw_iceberg_schema_json(),
                                LS_RAW_LAST_COLUMN_ID, &spec, variant == 4 ? merge_props : NULL,
                                NULL, &t, err, sizeof err) != LS_OK) {
            fprintf(stderr, "create: %s\n", err);
            rc = -3;
            break;
        }
        size_t target = variant == 1 ? 24 << 10 : 0;
        ls_pq_codec codec = variant == 1 ? LS_PQ_ZSTD : LS_PQ_SNAPPY;
        if (variant == 5) {
            /* raw_rewritten: 20 appends of 100 rows over 3 partitions, then
             * partition 0's 20 files replaced by one (a "replace" snapshot),
             * then one more append */
            for (int64_t i = 0; i < 20 && rc == 0; i++)
                if (commit_rows(t, i * 100, (i + 1) * 100, 3, 0, LS_PQ_ZSTD) != LS_OK) rc = -7;
            ls_ice_mentry_t *live = NULL;
            size_t n = 0, nr = 0;
            const char *removed[20];
            ls_ice_datafile_t df;
            if (rc == 0 &&
                (ls_ice_table_live_files(t, &live, &n) != LS_OK ||
                 copy_partition(t, os, prefix, loc, live, n, 0, removed, &nr, &df) != LS_OK ||
                 ls_ice_table_rewrite(t, removed, nr, &df, 1, 0, ls_clock_wall_ms() + 2000 * 100,
                                      NULL) != LS_OK ||
                 commit_rows(t, 2000, 2100, 3, 0, LS_PQ_ZSTD) != LS_OK)) {
                fprintf(stderr, "rewrite: %s\n", ls_ice_table_error(t));
                rc = -8;
            }
            if (live) ls_ice_datafile_clear(&df);
            ls_ice_mentries_free(live, n);
        } else if (variant == 4) {
            ls_ice_table_set_snapshot_retention(t, 500, 1);
            for (int64_t i = 0; i < 40 && rc == 0; i++)
                if (commit_rows(t, i * 50, (i + 1) * 50, 3, 0, LS_PQ_ZSTD) != LS_OK) rc = -6;
        } else if (variant == 2) {
            /* 10 rows, then a snapshot without files moving p0 past them */
            const char *kv[] = {"lakestream.last-offset.p0", "20", NULL};
            if (commit_rows(t, 0, 10, 3, 0, LS_PQ_UNCOMPRESSED) != LS_OK ||
                ls_ice_table_append(t, NULL, 0, kv, ls_clock_wall_ms() + 100000, NULL) != LS_OK)
                rc = -5;
        } else if (commit_rows(t, 0, 2000, 3, target, codec) != LS_OK ||
                   commit_rows(t, 2000, 3500, 3, target, codec) != LS_OK ||
                   commit_rows(t, 3500, 5000, 1, target, codec) != LS_OK) {
            fprintf(stderr, "commit: %s\n", ls_ice_table_error(t));
            rc = -4;
        }
        ls_ice_table_free(t);
    }
    ls_objstore_close(os);
    return rc;
}

TEST(warehouse_for_readers)
{
    const char *dir = getenv("LS_TABLE_OUT");
    if (!dir) return;
    CHECK_EQ_INT(write_warehouse(dir), 0);
}

/* The keys (under the mem store) of every file table t's current metadata
 * references: itself, its snapshots' manifest lists, their manifests and
 * those manifests' data files — what a reader that loads t now may read.
 * NULL-terminated, ls_free each and the array. */
static char **loaded_files(ls_ice_table_t *t, ls_objstore_t *os)
{
    size_t skip = strlen("mem://"), n = 0;
    char **out = LS_NEWN(char *, 4096);
    const char *ml = ls_ice_table_metadata_location(t);
    out[n++] = ls_strdup(ml + skip);
    json_t *meta = get_json(os, ml + skip), *s;
    size_t i;
    json_array_foreach(json_object_get(meta, "snapshots"), i, s)
    {
        const char *list = json_string_value(json_object_get(s, "manifest-list"));
        out[n++] = ls_strdup(list + skip);
        ls_ocf_file_t lf;
        if (get_avro(os, list + skip, &lf) != LS_OK) continue;
        for (size_t m = 0; m < lf.nrecords; m++) {
            const char *mp = (const char *)ls_av_field(&lf.records[m], "manifest_path")->p;
            out[n++] = ls_strdup(mp + skip);
            ls_ocf_file_t mf;
            if (get_avro(os, mp + skip, &mf) != LS_OK) continue;
            for (size_t k = 0; k < mf.nrecords && n < 4000; k++) {
                const ls_av_t *d = ls_av_field(&mf.records[k], "data_file");
                out[n++] = ls_strdup((const char *)ls_av_field(d, "file_path")->p + skip);
            }
            ls_ocf_file_free(&mf);
        }
        ls_ocf_file_free(&lf);
    }
    json_decref(meta);
    out[n] = NULL;
    return out;
}

static int missing_files(ls_objstore_t *os, char **keys)
{
    int gone = 0;
    ls_objinfo_t info;
    for (size_t i = 0; keys[i]; i++)
        gone += ls_objstore_head(os, keys[i], &info) == LS_ENOTFOUND;
    return gone;
}

static void free_keys(char **keys)
{
    for (size_t i = 0; keys[i]; i++)
        ls_free(keys[i]);
    ls_free(keys);
}

/* Issue 29 items 3 and 4: what a reader loaded (metadata file, manifest
 * lists, manifests, data files, those a rewrite removed included) stays
 * readable for the file delay after it stops being referenced, however
 * many commits come meanwhile (the old code deleted an expired snapshot's
 * manifest list at once, and a metadata file once previous-versions-max
 * newer ones existed); then the commits delete it all, data files too
 * (before, the hourly orphan sweep did), leaving the sweep nothing. A table
 * nobody appends to gets the same from ls_ice_table_expire. */
TEST(unreferenced_files_stay_for_the_delay_then_go)
{
    enum { DELAY = 5000 };
    ls_objstore_t *os = ls_objstore_mem_open();
    const char *props[] = {"write.metadata.delete-after-commit.enabled",
                           "true",
                           "write.metadata.previous-versions-max",
                           "2",
                           NULL,
                           NULL};
    ls_ice_table_t *t = partitioned_table_props(os, "wh/ns/g", 10, props);
    CHECK(t);
    ls_ice_mentry_t *live;
    size_t n;
    CHECK_EQ_INT(ls_ice_table_live_files(t, &live, &n), LS_OK);
    const char *removed[20];
    size_t nr = 0;
    ls_ice_datafile_t df;
    CHECK_EQ_INT(copy_partition(t, os, "wh/ns/g", "mem://wh/ns/g", live, n, 0, removed, &nr, &df),
                 LS_OK);
    int64_t t0 = ls_clock_wall_ms() + 100000;
    CHECK_EQ_INT(ls_ice_table_rewrite(t, removed, nr, &df, 1, 0, t0, NULL), LS_OK);
    char **loaded = loaded_files(t, os);
    CHECK(loaded[0] && loaded[40]);
    ls_ice_table_set_snapshot_retention(t, 100, 1);
    ls_ice_table_set_file_grace(t, DELAY);
    /* each commit expires everything but itself; the loaded snapshot's
     * metadata leaves the log two commits later */
    for (int i = 1; i <= 5; i++) {
        CHECK_EQ_INT(ls_ice_table_append(t, NULL, 0, NULL, t0 + i * 1000, NULL), LS_OK);
        CHECK_EQ_INT(missing_files(os, loaded), 0);
    }
    /* the loaded snapshots expired at t0 + 1000: due with the first commit
     * from t0 + 6000 on */
    CHECK_EQ_INT(ls_ice_table_append(t, NULL, 0, NULL, t0 + 6000, NULL), LS_OK);
    ls_objinfo_t info;
    for (size_t i = 0; i < nr; i++)
        CHECK_EQ_INT(ls_objstore_head(os, removed[i] + strlen("mem://"), &info), LS_ENOTFOUND);
    CHECK(missing_files(os, loaded) > (int)nr);
    /* the loaded metadata file left the log at t0 + 3000 but was current
     * until t0 + 1000: gone as well */
    CHECK_EQ_INT(ls_objstore_head(os, loaded[0], &info), LS_ENOTFOUND);
    /* idle: nothing appends; the last append's expired snapshot and the
     * metadata files pending go once their delay is over, with no append */
    bool committed;
    int64_t next;
    CHECK_EQ_INT(ls_ice_table_expire(t, t0 + 6500, &committed, &next), LS_OK);
    CHECK(!committed);
    /* the oldest pending: the metadata file superseded at t0 + 2000 */
    CHECK_EQ_INT(next, t0 + 2000 + DELAY);
    CHECK(ls_ice_table_summary(t, "lakestream.pending-deletes") != NULL);
    CHECK_EQ_INT(ls_ice_table_expire(t, t0 + 6000 + DELAY, &committed, &next), LS_OK);
    CHECK(committed);
    uint64_t gone = 0;
    CHECK_EQ_INT(ls_ice_table_remove_orphans(t, INT64_MAX, NULL, &gone), LS_OK);
    CHECK_EQ_INT(gone, 0); /* maintenance left no garbage behind */
    /* every row is still there, in files that exist */
    ls_ice_mentry_t *after;
    size_t na;
    CHECK_EQ_INT(ls_ice_table_live_files(t, &after, &na), LS_OK);
    int64_t rows = 0;
    for (size_t k = 0; k < na; k++) {
        CHECK_EQ_INT(ls_objstore_head(os, after[k].df.path + strlen("mem://"), &info), LS_OK);
        rows += after[k].df.record_count;
    }
    CHECK_EQ_INT(rows, 300);
    ls_ice_mentries_free(after, na);
    free_keys(loaded);
    ls_ice_datafile_clear(&df);
    ls_ice_mentries_free(live, n);
    ls_ice_table_free(t);
    ls_objstore_close(os);
}

/* An idle table's snapshots expire without an append (issue 29 item 7). */
TEST(idle_table_expires_without_appends)
{
    ls_objstore_t *os = ls_objstore_mem_open();
    ls_ice_table_t *t = partitioned_table(os, "wh/ns/i", 5);
    CHECK(t);
    int before = count_keys(os, "wh/ns/i/metadata/");
    bool committed;
    int64_t next;
    /* retention never: nothing to do, no commit */
    CHECK_EQ_INT(ls_ice_table_expire(t, ls_clock_wall_ms() + 100000, &committed, &next), LS_OK);
    CHECK(!committed);
    CHECK_EQ_INT(next, INT64_MAX);
    CHECK_EQ_INT(count_keys(os, "wh/ns/i/metadata/"), before);
    ls_ice_table_set_snapshot_retention(t, 1000, 1);
    int version = ls_ice_table_version(t);
    CHECK_EQ_INT(ls_ice_table_expire(t, ls_clock_wall_ms() + 100000, &committed, &next), LS_OK);
    CHECK(committed);
    CHECK_EQ_INT(ls_ice_table_version(t), version + 1);
    ls_ice_maint_stats_t ms;
    ls_ice_table_maint_stats(t, &ms);
    CHECK_EQ_INT(ms.snapshots_expired, 4);
    /* the four expired manifest lists are gone (no delay) */
    json_t *meta = get_json(os, ls_ice_table_metadata_location(t) + strlen("mem://"));
    CHECK_EQ_INT(json_array_size(json_object_get(meta, "snapshots")), 1);
    json_decref(meta);
    CHECK_EQ_INT(count_keys(os, "wh/ns/i/metadata/"), before + 1 - 4);
    ls_ice_table_free(t);
    ls_objstore_close(os);
}

/* Issue 29 item 5: an engine's refused write left files under
 * data/<col>=<value>/ (and a name with a space) in the table's location on
 * the fs store; the sweep lists every key there and deletes them, while
 * every file the table references stays. The old listing skipped keys
 * outside [A-Za-z0-9._-], so they were never swept. */
TEST(orphans_in_foreign_folders_are_swept)
{
    char tmpl[] = "/tmp/ls_ice_foreignXXXXXX";
    CHECK(mkdtemp(tmpl));
    char err[256];
    ls_objstore_t *os = ls_objstore_fs_open(tmpl, 0, err, sizeof err);
    CHECK(os);
    ls_ice_spec_t spec = {0};
    ls_ice_table_t *t = NULL;
    char loc[300];
    snprintf(loc, sizeof loc, "file://%s/wh/ns/f", tmpl);
    CHECK_EQ_INT(ls_ice_table_create(os, "wh/ns/f", loc, ls_raw_iceberg_schema_json(),
                                     LS_RAW_LAST_COLUMN_ID, &spec, NULL, NULL, &t, err, sizeof err),
                 LS_OK);
    CHECK_EQ_INT(commit_rows(t, 0, 30, 3, 0, LS_PQ_ZSTD), LS_OK);
    int before = count_keys(os, "wh/ns/f/");
    const char *foreign[] = {"wh/ns/f/data/timestamp_day=2026-12-05/00000-0-x.parquet",
                             "wh/ns/f/data/k=a b/00001-1-y.parquet",
                             "wh/ns/f/metadata/snap-1-1-z@.avro"};
    char path[600];
    for (size_t i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", tmpl, foreign[i]);
        for (char *sl = strchr(path + strlen(tmpl) + 1, '/'); sl; sl = strchr(sl + 1, '/')) {
            *sl = 0;
            mkdir(path, 0755);
            *sl = '/';
        }
        FILE *f = fopen(path, "w");
        CHECK(f);
        fputs("PAR1", f);
        fclose(f);
    }
    CHECK_EQ_INT(count_keys(os, "wh/ns/f/"), before + 3);
    uint64_t gone = 0;
    CHECK_EQ_INT(ls_ice_table_remove_orphans(t, INT64_MAX, NULL, &gone), LS_OK);
    CHECK_EQ_INT(gone, 3);
    CHECK_EQ_INT(count_keys(os, "wh/ns/f/"), before);
    ls_ice_mentry_t *live;
    size_t n;
    CHECK_EQ_INT(ls_ice_table_live_files(t, &live, &n), LS_OK);
    ls_buf_t b;
    ls_buf_init(&b);
    for (size_t k = 0; k < n; k++)
        CHECK_EQ_INT(ls_ice_table_get_file(t, live[k].df.path, &b), LS_OK);
    ls_buf_free(&b);
    ls_ice_mentries_free(live, n);
    ls_ice_table_free(t);
    ls_objstore_close(os);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpl);
    CHECK_EQ_INT(system(cmd), 0);
}

int main(void)
{
    RUN(transforms_and_paths);
    RUN(transform_spec_examples);
    RUN(value_field_transforms);
    RUN(value_partitions_in_manifests);
    RUN(float_and_boolean_partitions);
    RUN(long_partition_values);
    RUN(table_lifecycle_mem);
    RUN(schema_evolves_with_the_next_commit);
    RUN(bounds_truncation);
    RUN(append_fails_cleanly_at_each_put);
    RUN(merge_fails_cleanly_at_each_put);
    RUN(maintenance_thousands_of_appends);
    RUN(orphan_files_removed);
    RUN(snapshot_retention_min_keep);
    RUN(rewrite_small_files);
    RUN(rewritten_files_go_when_their_deleting_snapshot_expires);
    RUN(unreferenced_files_stay_for_the_delay_then_go);
    RUN(idle_table_expires_without_appends);
    RUN(orphans_in_foreign_folders_are_swept);
    RUN(warehouse_for_readers);
    UNIT_DONE();
}
