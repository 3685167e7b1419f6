/* The Delta Lake log (table/delta_log.h) and its mirror of an Iceberg table
 * (table/delta_mirror.h), on the mem store: the JSON actions a commit is
 * made of, replay, put-if-absent commits, the txn that makes a repeated
 * mirror a no-op, removes for files Iceberg dropped, and the schema map. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/clock.h"
#include "objstore/objstore.h"
#include "table/delta_checkpoint.h"
#include "table/delta_log.h"
#include "table/delta_mirror.h"
#include "table/iceberg_manifest.h"
#include "table/iceberg_raw.h"
#include "table/iceberg_table.h"
#include "unit.h"

/* The actions of a commit's bytes, one JSON object per line. */
static json_t *lines_of(const char *bytes, size_t len)
{
    json_t *a = json_array();
    const char *p = bytes, *end = bytes + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl) nl = end;
        json_array_append_new(a, json_loadb(p, (size_t)(nl - p), 0, NULL));
        p = nl + 1;
    }
    return a;
}

TEST(commit_encoding)
{
    ls_delta_commit_t *c = ls_delta_commit_new(1700000000000, "WRITE");
    ls_delta_commit_protocol(c, 1, 2, NULL);
    const char *conf[] = {"delta.deletedFileRetentionDuration", "interval 5 milliseconds", NULL};
    ls_delta_commit_metadata(c, "id-1", "{\"type\":\"struct\",\"fields\":[]}", conf, 7);
    ls_delta_commit_add(c, "data/a%3Db.parquet", 100, 9, "{\"numRecords\":3}");
    ls_delta_commit_remove(c, "data/old.parquet", 50);
    ls_delta_commit_txn(c, "app", 42);
    CHECK_EQ_INT(ls_delta_commit_files(c), 2);
    size_t len;
    char *bytes = ls_delta_commit_encode(c, &len);
    CHECK_EQ_INT(strlen(bytes), len);
    CHECK(bytes[len - 1] == '\n');
    json_t *a = lines_of(bytes, len);
    CHECK_EQ_INT(json_array_size(a), 6);
    json_t *info = json_object_get(json_array_get(a, 0), "commitInfo");
    CHECK(info);
    CHECK_EQ_INT(json_integer_value(json_object_get(info, "timestamp")), 1700000000000);
    CHECK(json_is_false(json_object_get(info, "isBlindAppend"))); /* it removes a file */
    json_t *proto = json_object_get(json_array_get(a, 1), "protocol");
    CHECK_EQ_INT(json_integer_value(json_object_get(proto, "minReaderVersion")), 1);
    CHECK_EQ_INT(json_integer_value(json_object_get(proto, "minWriterVersion")), 2);
    CHECK(!json_object_get(proto, "readerFeatures"));
    json_t *md = json_object_get(json_array_get(a, 2), "metaData");
    CHECK(!strcmp(json_string_value(json_object_get(md, "id")), "id-1"));
    CHECK(!strcmp(json_string_value(json_object_get(json_object_get(md, "format"), "provider")),
                  "parquet"));
    CHECK_EQ_INT(json_array_size(json_object_get(md, "partitionColumns")), 0);
    CHECK(!strcmp(json_string_value(json_object_get(json_object_get(md, "configuration"),
                                                    "delta.deletedFileRetentionDuration")),
                  "interval 5 milliseconds"));
    json_t *add = json_object_get(json_array_get(a, 3), "add");
    CHECK(!strcmp(json_string_value(json_object_get(add, "path")), "data/a%3Db.parquet"));
    CHECK_EQ_INT(json_integer_value(json_object_get(add, "size")), 100);
    CHECK_EQ_INT(json_integer_value(json_object_get(add, "modificationTime")), 9);
    CHECK(json_is_true(json_object_get(add, "dataChange")));
    CHECK(json_is_object(json_object_get(add, "partitionValues")));
    CHECK(!strcmp(json_string_value(json_object_get(add, "stats")), "{\"numRecords\":3}"));
    json_t *rm = json_object_get(json_array_get(a, 4), "remove");
    CHECK(!strcmp(json_string_value(json_object_get(rm, "path")), "data/old.parquet"));
    CHECK_EQ_INT(json_integer_value(json_object_get(rm, "deletionTimestamp")), 1700000000000);
    CHECK_EQ_INT(json_integer_value(json_object_get(rm, "size")), 50);
    json_t *txn = json_object_get(json_array_get(a, 5), "txn");
    CHECK(!strcmp(json_string_value(json_object_get(txn, "appId")), "app"));
    CHECK_EQ_INT(json_integer_value(json_object_get(txn, "version")), 42);
    json_decref(a);
    ls_free(bytes);
    ls_delta_commit_free(c);
    char *p = ls_delta_path_encode("data/k=a b%/x.parquet");
    CHECK(!strcmp(p, "data/k=a%20b%25/x.parquet"));
    ls_free(p);
}

TEST(replay_and_put_if_absent)
{
    ls_objstore_t *os = ls_objstore_mem_open();
    char err[256] = "";
    ls_delta_log_t *l0 = NULL, *l1 = NULL, *l2 = NULL;
    CHECK_EQ_INT(ls_delta_log_load(os, "wh/t", &l0, err, sizeof err), LS_OK);
    CHECK_EQ_INT(ls_delta_log_version(l0), -1);
    CHECK_EQ_INT(ls_delta_log_txn(l0, "app"), -1);
    ls_delta_commit_t *c = ls_delta_commit_new(1, "WRITE");
    ls_delta_commit_protocol(c, 1, 2, NULL);
    ls_delta_commit_metadata(c, "id", "{}", NULL, 1);
    ls_delta_commit_add(c, "data/a.parquet", 10, 1, NULL);
    ls_delta_commit_add(c, "data/b.parquet", 20, 1, NULL);
    ls_delta_commit_txn(c, "app", 3);
    CHECK_EQ_INT(ls_delta_commit_put(os, "wh/t", l0, c, err, sizeof err), LS_OK);
    /* the same version again (a writer that loaded before): refused, not overwritten */
    ls_delta_commit_t *c2 = ls_delta_commit_new(2, "WRITE");
    ls_delta_commit_add(c2, "data/z.parquet", 1, 1, NULL);
    CHECK_EQ_INT(ls_delta_commit_put(os, "wh/t", l0, c2, err, sizeof err), LS_ECONFLICT);
    CHECK(strstr(err, "00000000000000000000.json") != NULL);
    CHECK_EQ_INT(ls_delta_log_load(os, "wh/t", &l1, err, sizeof err), LS_OK);
    CHECK_EQ_INT(ls_delta_log_version(l1), 0);
    CHECK_EQ_INT(ls_delta_log_txn(l1, "app"), 3);
    CHECK(ls_delta_log_live(l1, "data/a.parquet") && ls_delta_log_live(l1, "data/b.parquet"));
    CHECK(!ls_delta_log_live(l1, "data/z.parquet"));
    CHECK_EQ_INT(ls_delta_log_live_size(l1, "data/b.parquet"), 20);
    CHECK(!strcmp(ls_delta_log_table_id(l1), "id"));
    CHECK_EQ_INT(ls_delta_log_reader_version(l1), 1);
    /* version 1 removes a and moves the txn on */
    ls_delta_commit_t *c3 = ls_delta_commit_new(3, "WRITE");
    ls_delta_commit_remove(c3, "data/a.parquet", 10);
    ls_delta_commit_txn(c3, "app", 5);
    CHECK_EQ_INT(ls_delta_commit_put(os, "wh/t", l1, c3, err, sizeof err), LS_OK);
    CHECK_EQ_INT(ls_delta_log_load(os, "wh/t", &l2, err, sizeof err), LS_OK);
    CHECK_EQ_INT(ls_delta_log_version(l2), 1);
    CHECK_EQ_INT(ls_delta_log_txn(l2, "app"), 5);
    size_t n;
    const char **paths = ls_delta_log_live_paths(l2, &n);
    CHECK_EQ_INT(n, 1);
    CHECK(!strcmp(paths[0], "data/b.parquet"));
    /* a commit that is not JSON actions is refused with its name */
    struct iovec iov = {(void *)"{\"add\":\n", 8};
    CHECK_EQ_INT(ls_objstore_put(os, "wh/t/_delta_log/00000000000000000002.json", &iov, 1, 0),
                 LS_OK);
    ls_delta_log_t *bad = NULL;
    CHECK_EQ_INT(ls_delta_log_load(os, "wh/t", &bad, err, sizeof err), LS_ECORRUPT);
    CHECK(strstr(err, "00000000000000000002.json line 1") != NULL);
    ls_delta_commit_free(c);
    ls_delta_commit_free(c2);
    ls_delta_commit_free(c3);
    ls_delta_log_free(l0);
    ls_delta_log_free(l1);
    ls_delta_log_free(l2);
    ls_objstore_close(os);
}

static void fake_file(ls_ice_datafile_t *df, const char *path, int64_t rows)
{
    memset(df, 0, sizeof *df);
    df->path = ls_strdup(path);
    df->record_count = rows;
    df->file_size = 1000 + rows;
    df->metrics = LS_NEWN(ls_ice_colmetric_t, 2);
    df->nmetrics = 2;
    ls_ice_colmetric_t *m = &df->metrics[0];
    m->field_id = 2; /* offset: long */
    m->value_count = rows;
    m->has_lower = m->has_upper = 1;
    m->lower_len = m->upper_len = 8;
    m->lower[0] = 1;               /* 1 */
    m->upper[0] = (uint8_t)(rows); /* rows */
    /* timestamp (timestamptz, micros): bounds with sub-millisecond parts */
    m = &df->metrics[1];
    m->field_id = 3;
    m->value_count = rows;
    m->has_lower = m->has_upper = 1;
    m->lower_len = m->upper_len = 8;
    const int64_t lo = 1700000000000123LL, hi = 1700000000999001LL;
    for (int i = 0; i < 8; i++) {
        m->lower[i] = (uint8_t)((uint64_t)lo >> (8 * i));
        m->upper[i] = (uint8_t)((uint64_t)hi >> (8 * i));
    }
}

/* The actions of version v of the table at wh/t. */
static json_t *commit_actions(ls_objstore_t *os, int v)
{
    char key[96];
    snprintf(key, sizeof key, "wh/t/_delta_log/%020d.json", v);
    ls_buf_t b;
    ls_buf_init(&b);
    json_t *a = ls_objstore_get(os, key, 0, UINT64_MAX, &b) == LS_OK
                    ? lines_of((const char *)b.data, b.len)
                    : NULL;
    ls_buf_free(&b);
    return a;
}

static const ls_delta_opts_t opts = {.file_grace_ms = 300000, .checkpoint_interval = 10};

TEST(mirror_follows_iceberg_once)
{
    ls_objstore_t *os = ls_objstore_mem_open();
    ls_ice_spec_t spec = {0};
    ls_ice_table_t *t = NULL;
    char err[512] = "";
    CHECK_EQ_INT(ls_ice_table_create(os, "wh/t", "mem://wh/t", ls_raw_iceberg_schema_json(),
                                     LS_RAW_LAST_COLUMN_ID, &spec, NULL, NULL, &t, err, sizeof err),
                 LS_OK);
    ls_ice_datafile_t f[2];
    fake_file(&f[0], "mem://wh/t/data/a.parquet", 5);
    fake_file(&f[1], "mem://wh/t/data/b.parquet", 7);
    CHECK_EQ_INT(ls_ice_table_append(t, f, 2, NULL, 1000, NULL), LS_OK);
    size_t files;
    CHECK_EQ_INT(ls_delta_mirror(t, &opts, 2000, &files, err, sizeof err), LS_OK);
    CHECK_EQ_INT(files, 2);
    json_t *a = commit_actions(os, 0);
    CHECK(a);
    CHECK_EQ_INT(json_array_size(a), 6); /* commitInfo protocol metaData add add txn */
    json_t *md = json_object_get(json_array_get(a, 2), "metaData");
    CHECK(!strcmp(json_string_value(json_object_get(md, "id")), ls_ice_table_uuid(t)));
    json_t *schema = json_loads(json_string_value(json_object_get(md, "schemaString")), 0, NULL);
    json_t *ts = json_array_get(json_object_get(schema, "fields"), 2);
    CHECK(!strcmp(json_string_value(json_object_get(ts, "name")), "timestamp"));
    CHECK(!strcmp(json_string_value(json_object_get(ts, "type")), "timestamp"));
    CHECK(json_is_false(json_object_get(ts, "nullable")));
    json_decref(schema);
    json_t *add = json_object_get(json_array_get(a, 3), "add");
    json_t *stats = json_loads(json_string_value(json_object_get(add, "stats")), 0, NULL);
    CHECK_EQ_INT(json_integer_value(json_object_get(stats, "numRecords")), 5);
    CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(stats, "minValues"), "offset")),
                 1);
    CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(stats, "maxValues"), "offset")),
                 5);
    /* milliseconds, rounded outward: still bounds of the microsecond values */
    CHECK(!strcmp(
        json_string_value(json_object_get(json_object_get(stats, "minValues"), "timestamp")),
        "2023-11-14T22:13:20.000Z"));
    CHECK(!strcmp(
        json_string_value(json_object_get(json_object_get(stats, "maxValues"), "timestamp")),
        "2023-11-14T22:13:21.000Z"));
    json_decref(stats);
    json_t *txn = json_object_get(json_array_get(a, 5), "txn");
    CHECK(!strcmp(json_string_value(json_object_get(txn, "appId")), LS_DELTA_APP_ID));
    CHECK_EQ_INT(json_integer_value(json_object_get(txn, "version")),
                 ls_ice_table_last_sequence(t));
    json_decref(a);
    /* again (a retried pass): the txn says it is there, nothing is written */
    CHECK_EQ_INT(ls_delta_mirror(t, &opts, 3000, &files, err, sizeof err), LS_OK);
    CHECK_EQ_INT(files, 0);
    CHECK(commit_actions(os, 1) == NULL);
    /* Iceberg drops a (an overwrite): Delta removes it, adds c */
    ls_ice_datafile_t g;
    fake_file(&g, "mem://wh/t/data/c.parquet", 3);
    const char *removed[] = {"mem://wh/t/data/a.parquet"};
    CHECK_EQ_INT(ls_ice_table_overwrite(t, removed, 1, &g, 1, NULL, 4000, NULL), LS_OK);
    CHECK_EQ_INT(ls_delta_mirror(t, &opts, 5000, &files, err, sizeof err), LS_OK);
    CHECK_EQ_INT(files, 2);
    ls_delta_log_t *l = NULL;
    CHECK_EQ_INT(ls_delta_log_load(os, "wh/t", &l, err, sizeof err), LS_OK);
    CHECK_EQ_INT(ls_delta_log_version(l), 1);
    CHECK(!ls_delta_log_live(l, "data/a.parquet"));
    CHECK(ls_delta_log_live(l, "data/b.parquet") && ls_delta_log_live(l, "data/c.parquet"));
    ls_delta_log_free(l);
    a = commit_actions(os, 1);
    CHECK_EQ_INT(json_array_size(a), 4); /* commitInfo add remove txn: no new metaData */
    json_decref(a);
    ls_ice_datafile_clear(&f[0]);
    ls_ice_datafile_clear(&f[1]);
    ls_ice_datafile_clear(&g);
    ls_ice_table_free(t);
    ls_objstore_close(os);
}

TEST(mirror_loses_a_race_and_retries)
{
    /* another writer took version 0 with the same files (a broker that
     * mirrored at the same time): the mirror reloads and adds nothing twice */
    ls_objstore_t *os = ls_objstore_mem_open();
    ls_ice_spec_t spec = {0};
    ls_ice_table_t *t = NULL;
    char err[512] = "";
    CHECK_EQ_INT(ls_ice_table_create(os, "wh/t", "mem://wh/t", ls_raw_iceberg_schema_json(),
                                     LS_RAW_LAST_COLUMN_ID, &spec, NULL, NULL, &t, err, sizeof err),
                 LS_OK);
    ls_ice_datafile_t f;
    fake_file(&f, "mem://wh/t/data/a.parquet", 5);
    CHECK_EQ_INT(ls_ice_table_append(t, &f, 1, NULL, 1000, NULL), LS_OK);
    ls_delta_log_t *empty = NULL;
    CHECK_EQ_INT(ls_delta_log_load(os, "wh/t", &empty, err, sizeof err), LS_OK);
    ls_delta_commit_t *c = ls_delta_commit_new(1, "WRITE");
    ls_delta_commit_add(c, "data/a.parquet", f.file_size, 1, NULL);
    CHECK_EQ_INT(ls_delta_commit_put(os, "wh/t", empty, c, err, sizeof err), LS_OK);
    size_t files;
    CHECK_EQ_INT(ls_delta_mirror(t, &opts, 2000, &files, err, sizeof err), LS_OK);
    CHECK_EQ_INT(files, 0); /* only the table's protocol and metaData were missing */
    json_t *a = commit_actions(os, 1);
    CHECK(a);
    for (size_t i = 0; i < json_array_size(a); i++)
        CHECK(!json_object_get(json_array_get(a, i), "add"));
    json_decref(a);
    ls_delta_commit_free(c);
    ls_delta_log_free(empty);
    ls_ice_datafile_clear(&f);
    ls_ice_table_free(t);
    ls_objstore_close(os);
}

TEST(schema_map)
{
    bool ntz;
    char why[300];
    const char *ice =
        "{\"type\":\"struct\",\"schema-id\":0,\"fields\":["
        "{\"id\":1,\"name\":\"a\",\"required\":true,\"type\":\"int\"},"
        "{\"id\":2,\"name\":\"d\",\"required\":false,\"type\":\"decimal(9, 2)\"},"
        "{\"id\":3,\"name\":\"t\",\"required\":false,\"type\":\"timestamp\"},"
        "{\"id\":4,\"name\":\"l\",\"required\":false,\"type\":{\"type\":\"list\","
        "\"element-id\":6,\"element\":\"string\",\"element-required\":true}},"
        "{\"id\":5,\"name\":\"m\",\"required\":false,\"type\":{\"type\":\"map\",\"key-id\":7,"
        "\"key\":\"string\",\"value-id\":8,\"value\":\"long\",\"value-required\":false}}]}";
    char *d = ls_delta_schema_of_iceberg(ice, &ntz, why, sizeof why);
    CHECK(d);
    CHECK(ntz);
    CHECK(strstr(d, "{\"name\":\"a\",\"type\":\"integer\",\"nullable\":false,\"metadata\":{}}"));
    CHECK(strstr(d, "\"type\":\"decimal(9,2)\""));
    CHECK(strstr(d, "\"type\":\"timestamp_ntz\""));
    CHECK(strstr(d, "{\"type\":\"array\",\"elementType\":\"string\",\"containsNull\":false}"));
    CHECK(strstr(d, "\"keyType\":\"string\",\"valueType\":\"long\",\"valueContainsNull\":true"));
    ls_free(d);
    const char *bad = "{\"type\":\"struct\",\"fields\":[{\"id\":1,\"name\":\"at\","
                      "\"required\":true,\"type\":\"time\"}]}";
    CHECK(ls_delta_schema_of_iceberg(bad, &ntz, why, sizeof why) == NULL);
    CHECK(strstr(why, "column at") && strstr(why, "time"));
}

TEST(checkpoint_round_trip)
{
    const char *text =
        "[{\"protocol\":{\"minReaderVersion\":3,\"minWriterVersion\":7,"
        "\"readerFeatures\":[\"timestampNtz\"],\"writerFeatures\":[\"timestampNtz\"]}},"
        "{\"metaData\":{\"id\":\"i\",\"format\":{\"provider\":\"parquet\",\"options\":{}},"
        "\"schemaString\":\"{}\",\"partitionColumns\":[],"
        "\"configuration\":{\"a\":\"1\",\"b\":\"2\"},\"createdTime\":5}},"
        "{\"txn\":{\"appId\":\"app\",\"version\":9,\"lastUpdated\":4}},"
        "{\"add\":{\"path\":\"data/a.parquet\",\"partitionValues\":{},\"size\":10,"
        "\"modificationTime\":3,\"dataChange\":true,\"stats\":\"{\\\"numRecords\\\":2}\"}},"
        "{\"add\":{\"path\":\"data/b.parquet\",\"partitionValues\":{\"k\":\"v\",\"n\":null},"
        "\"size\":11,\"modificationTime\":3,\"dataChange\":false}},"
        "{\"remove\":{\"path\":\"data/c.parquet\",\"deletionTimestamp\":8,"
        "\"dataChange\":true,\"extendedFileMetadata\":true,\"partitionValues\":{},"
        "\"size\":12}}]";
    json_t *in = json_loads(text, 0, NULL);
    CHECK(in);
    ls_buf_t b;
    ls_buf_init(&b);
    char err[256] = "";
    CHECK_EQ_INT(ls_delta_checkpoint_encode(in, &b, err, sizeof err), LS_OK);
    json_t *out = NULL;
    CHECK_EQ_INT(ls_delta_checkpoint_decode(b.data, b.len, &out, err, sizeof err), LS_OK);
    CHECK(json_equal(in, out));
    json_decref(out);
    /* a row with two kinds of action is not a checkpoint row */
    json_t *bad = json_loads("[{\"add\":{\"path\":\"x\"},\"txn\":{\"appId\":\"a\"}}]", 0, NULL);
    ls_buf_t b2;
    ls_buf_init(&b2);
    CHECK_EQ_INT(ls_delta_checkpoint_encode(bad, &b2, err, sizeof err), LS_EINVAL);
    CHECK(strstr(err, "row 0") != NULL);
    json_decref(bad);
    ls_buf_free(&b2);
    ls_buf_free(&b);
    json_decref(in);
}

TEST(checkpoints_and_cleanup)
{
    /* interval 2: versions 2 and 4 are checkpointed; the log loads from
     * the newest, and with a retention the files below it go */
    ls_objstore_t *os = ls_objstore_mem_open();
    ls_ice_spec_t spec = {0};
    ls_ice_table_t *t = NULL;
    char err[512] = "";
    CHECK_EQ_INT(ls_ice_table_create(os, "wh/t", "mem://wh/t", ls_raw_iceberg_schema_json(),
                                     LS_RAW_LAST_COLUMN_ID, &spec, NULL, NULL, &t, err, sizeof err),
                 LS_OK);
    ls_delta_opts_t o = {.file_grace_ms = 0, .log_retention_ms = 1, .checkpoint_interval = 2};
    for (int i = 0; i < 5; i++) {
        ls_ice_datafile_t f;
        char path[64];
        snprintf(path, sizeof path, "mem://wh/t/data/f%d.parquet", i);
        fake_file(&f, path, 2 + i);
        CHECK_EQ_INT(ls_ice_table_append(t, &f, 1, NULL, 1000 + i, NULL), LS_OK);
        size_t files;
        /* now far ahead: every file written is older than the retention */
        CHECK_EQ_INT(ls_delta_mirror(t, &o, ls_clock_wall_ms() + 60000, &files, err, sizeof err),
                     LS_OK);
        CHECK_EQ_INT(files, 1);
        ls_ice_datafile_clear(&f);
    }
    ls_buf_t b;
    ls_buf_init(&b);
    CHECK_EQ_INT(ls_objstore_get(os, "wh/t/_delta_log/_last_checkpoint", 0, UINT64_MAX, &b), LS_OK);
    json_t *last = json_loadb((const char *)b.data, b.len, 0, NULL);
    CHECK_EQ_INT(json_integer_value(json_object_get(last, "version")), 4);
    json_decref(last);
    /* below checkpoint 4 nothing is left: commits 0..3 and checkpoint 2 */
    CHECK_EQ_INT(
        ls_objstore_get(os, "wh/t/_delta_log/00000000000000000003.json", 0, UINT64_MAX, &b),
        LS_ENOTFOUND);
    CHECK_EQ_INT(ls_objstore_get(os, "wh/t/_delta_log/00000000000000000002.checkpoint.parquet", 0,
                                 UINT64_MAX, &b),
                 LS_ENOTFOUND);
    CHECK_EQ_INT(
        ls_objstore_get(os, "wh/t/_delta_log/00000000000000000004.json", 0, UINT64_MAX, &b), LS_OK);
    ls_buf_free(&b);
    ls_delta_log_t *l = NULL;
    CHECK_EQ_INT(ls_delta_log_load(os, "wh/t", &l, err, sizeof err), LS_OK);
    CHECK_EQ_INT(ls_delta_log_version(l), 4);
    size_t n;
    ls_delta_log_live_paths(l, &n);
    CHECK_EQ_INT(n, 5);
    CHECK_EQ_INT(ls_delta_log_txn(l, LS_DELTA_APP_ID), ls_ice_table_last_sequence(t));
    CHECK(ls_delta_log_schema(l) != NULL);
    CHECK_EQ_INT(ls_delta_log_reader_version(l), 1);
    ls_delta_log_free(l);
    ls_ice_table_free(t);
    ls_objstore_close(os);
}

TEST(a_log_is_dropped_whole)
{
    ls_objstore_t *os = ls_objstore_mem_open();
    struct iovec iov = {(void *)"{}\n", 3};
    const char *keys[] = {"p/_delta_log/00000000000000000000.json",
                          "p/_delta_log/00000000000000000001.json",
                          "p/_delta_log/00000000000000000001.checkpoint.parquet",
                          "p/_delta_log/_last_checkpoint", "p/data/x.parquet"};
    for (size_t i = 0; i < 5; i++)
        CHECK_EQ_INT(ls_objstore_put(os, keys[i], &iov, 1, 0), LS_OK);
    size_t deleted;
    char err[256];
    /* one file is newer than the cut-off: nothing goes */
    ls_objinfo_t info;
    CHECK_EQ_INT(ls_objstore_head(os, keys[3], &info), LS_OK);
    CHECK_EQ_INT(ls_delta_log_drop(os, "p", info.mtime_ms, &deleted, err, sizeof err), LS_OK);
    CHECK_EQ_INT(deleted, 0);
    CHECK_EQ_INT(ls_delta_log_drop(os, "p", INT64_MAX, &deleted, err, sizeof err), LS_OK);
    CHECK_EQ_INT(deleted, 4);
    ls_objinfo_t *objs;
    size_t n;
    CHECK_EQ_INT(ls_objstore_list(os, "p/", &objs, &n), LS_OK);
    CHECK_EQ_INT(n, 1); /* the data file is not the log's */
    ls_objinfo_free(objs, n);
    ls_objstore_close(os);
}

int main(void)
{
    RUN(commit_encoding);
    RUN(replay_and_put_if_absent);
    RUN(mirror_follows_iceberg_once);
    RUN(mirror_loses_a_race_and_retries);
    RUN(schema_map);
    RUN(checkpoint_round_trip);
    RUN(checkpoints_and_cleanup);
    RUN(a_log_is_dropped_whole);
    UNIT_DONE();
}
