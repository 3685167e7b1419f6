/* Table catalog: the per-table pointer in ls_meta as the commit point of
 * Iceberg commits (compare-and-set, conflicts, lost answers, tables from
 * before pointers), on the mem backends and the faulty metadata wrapper. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/alloc.h"
#include "meta/meta_faulty.h"
#include "objstore/objstore.h"
#include "table/iceberg_raw.h"
#include "table/table_catalog.h"
#include "unit.h"

#define PREFIX "warehouse/ns/t"
#define LOC "mem://" PREFIX

static ls_status create(ls_meta_t *m, ls_objstore_t *os, ls_ice_table_t **t)
{
    char err[256] = "";
    ls_ice_spec_t spec = {0};
    return ls_tcat_create(m, os, "ns", "t", PREFIX, LOC, ls_raw_iceberg_schema_json(),
                          LS_RAW_LAST_COLUMN_ID, &spec, NULL, t, err, sizeof err);
}

/* A snapshot that only records "lakestream.log.0.last-offset" = off. */
static ls_status mark(ls_ice_table_t *t, int64_t off)
{
    char v[24];
    snprintf(v, sizeof v, "%lld", (long long)off);
    const char *kv[] = {"lakestream.log.0.last-offset", v, NULL};
    return ls_ice_table_append(t, NULL, 0, kv, 1700000000000LL + off, NULL);
}

static int exists(ls_objstore_t *os, const char *key)
{
    ls_objinfo_t info;
    return ls_objstore_head(os, key, &info) == LS_OK;
}

static size_t count_metadata_files(ls_objstore_t *os)
{
    ls_objinfo_t *v;
    size_t n, k = 0;
    if (ls_objstore_list(os, PREFIX "/metadata/", &v, &n) != LS_OK) return 0;
    for (size_t i = 0; i < n; i++)
        k += strstr(v[i].key, ".metadata.json") != NULL;
    ls_objinfo_free(v, n);
    return k;
}

TEST(create_publishes_pointer_and_layout)
{
    ls_meta_t *m = ls_meta_mem_open();
    ls_objstore_t *os = ls_objstore_mem_open();
    ls_ice_table_t *t = NULL, *t2 = NULL;
    CHECK_EQ_INT(create(m, os, &t), LS_OK);
    ls_tcat_pointer_t p;
    char err[256];
    CHECK_EQ_INT(ls_tcat_get(m, "ns", "t", &p, err, sizeof err), LS_OK);
    CHECK_EQ_INT(p.version, 1);
    CHECK(strcmp(p.prefix, PREFIX) == 0);
    CHECK(strcmp(p.metadata_location, ls_ice_table_metadata_location(t)) == 0);
    CHECK(strncmp(p.metadata_key, PREFIX "/metadata/00001-", strlen(PREFIX) + 16) == 0);
    CHECK(exists(os, p.metadata_key));
    CHECK(exists(os, PREFIX "/metadata/v1.metadata.json"));
    CHECK(exists(os, PREFIX "/metadata/version-hint.text"));
    ls_tcat_pointer_clear(&p);
    /* a second create finds the pointer */
    CHECK_EQ_INT(create(m, os, &t2), LS_EEXISTS);
    CHECK(t2 == NULL);
    ls_ice_table_free(t);
    ls_objstore_close(os);
    ls_meta_close(m);
}

TEST(concurrent_commit_loses_compare_and_set)
{
    ls_meta_t *m = ls_meta_mem_open();
    ls_objstore_t *os = ls_objstore_mem_open();
    ls_ice_table_t *t = NULL, *a = NULL, *b = NULL;
    char err[256];
    CHECK_EQ_INT(create(m, os, &t), LS_OK);
    ls_ice_table_free(t);
    CHECK_EQ_INT(ls_tcat_open(m, os, "ns", "t", PREFIX, &a, err, sizeof err), LS_OK);
    CHECK_EQ_INT(ls_tcat_open(m, os, "ns", "t", PREFIX, &b, err, sizeof err), LS_OK);
    CHECK_EQ_INT(mark(a, 10), LS_OK);
    CHECK_EQ_INT(ls_ice_table_version(a), 2);
    size_t files = count_metadata_files(os);
    CHECK_EQ_INT(mark(b, 20), LS_ECONFLICT);
    CHECK(strstr(ls_ice_table_error(b), "concurrent commit") != NULL);
    /* the loser's metadata file is deleted; no v-name was written for it */
    CHECK_EQ_INT(count_metadata_files(os), files);
    CHECK(!exists(os, PREFIX "/metadata/v3.metadata.json"));
    ls_ice_table_free(b);
    /* the winner can go on; a reload sees its last commit */
    CHECK_EQ_INT(mark(a, 30), LS_OK);
    CHECK_EQ_INT(ls_tcat_open(m, os, "ns", "t", PREFIX, &b, err, sizeof err), LS_OK);
    CHECK_EQ_INT(ls_ice_table_version(b), 3);
    CHECK(strcmp(ls_ice_table_summary(b, "lakestream.log.0.last-offset"), "30") == 0);
    CHECK(strcmp(ls_ice_table_metadata_location(b), ls_ice_table_metadata_location(a)) == 0);
    CHECK(exists(os, PREFIX "/metadata/v3.metadata.json"));
    ls_ice_table_free(a);
    ls_ice_table_free(b);
    ls_objstore_close(os);
    ls_meta_close(m);
}

/* The pointer decides, not the files: a metadata file that was written but
 * never became current (crash before the swap) is invisible to loaders. */
TEST(uncommitted_metadata_is_never_loaded)
{
    ls_meta_t *m = ls_meta_mem_open();
    ls_objstore_t *os = ls_objstore_mem_open();
    ls_ice_table_t *t = NULL;
    char err[256];
    CHECK_EQ_INT(create(m, os, &t), LS_OK);
    CHECK_EQ_INT(mark(t, 5), LS_OK);
    ls_ice_table_free(t);
    /* a stray later version in the layout (as a crashed layout writer leaves) */
    const char junk[] = "{\"format-version\":2,\"location\":\"" LOC "\"}";
    struct iovec iov = {(void *)junk, sizeof junk - 1};
    CHECK_EQ_INT(ls_objstore_put(os, PREFIX "/metadata/v3.metadata.json", &iov, 1, 0), LS_OK);
    CHECK_EQ_INT(ls_tcat_open(m, os, "ns", "t", PREFIX, &t, err, sizeof err), LS_OK);
    CHECK_EQ_INT(ls_ice_table_version(t), 2);
    CHECK(strcmp(ls_ice_table_summary(t, "lakestream.log.0.last-offset"), "5") == 0);
    ls_ice_table_free(t);
    ls_objstore_close(os);
    ls_meta_close(m);
}

/* A commit that landed but whose v<N> copy was never written (the process
 * died between the pointer swap and the copy: crash point
 * table.pointer_swapped) is published by the next writer's open: the
 * committed file's bytes as v<N>, the hint raised (never lowered). */
TEST(unpublished_commit_is_published_on_open)
{
    ls_meta_t *m = ls_meta_mem_open();
    ls_objstore_t *os = ls_objstore_mem_open();
    ls_ice_table_t *t = NULL;
    char err[256];
    CHECK_EQ_INT(create(m, os, &t), LS_OK);
    CHECK_EQ_INT(mark(t, 5), LS_OK);
    CHECK_EQ_INT(mark(t, 9), LS_OK);
    ls_ice_table_free(t);
    const char *v3 = PREFIX "/metadata/v3.metadata.json",
               *hint = PREFIX "/metadata/version-hint.text";
    CHECK_EQ_INT(ls_objstore_del(os, v3), LS_OK);
    struct iovec two = {(void *)"2", 1};
    CHECK_EQ_INT(ls_objstore_put(os, hint, &two, 1, 0), LS_OK);
    CHECK_EQ_INT(ls_tcat_open(m, os, "ns", "t", PREFIX, &t, err, sizeof err), LS_OK);
    CHECK_EQ_INT(ls_ice_table_version(t), 3);
    CHECK_EQ_INT(ls_ice_table_publish(t), LS_OK);
    ls_tcat_pointer_t p;
    CHECK_EQ_INT(ls_tcat_get(m, "ns", "t", &p, err, sizeof err), LS_OK);
    ls_buf_t a, b;
    ls_buf_init(&a);
    ls_buf_init(&b);
    CHECK_EQ_INT(ls_objstore_get(os, p.metadata_key, 0, UINT64_MAX, &a), LS_OK);
    CHECK_EQ_INT(ls_objstore_get(os, v3, 0, UINT64_MAX, &b), LS_OK);
    CHECK(a.len > 0 && a.len == b.len && memcmp(a.data, b.data, a.len) == 0);
    b.len = 0;
    CHECK_EQ_INT(ls_objstore_get(os, hint, 0, UINT64_MAX, &b), LS_OK);
    CHECK(b.len == 1 && b.data[0] == '3');
    /* published already: nothing written; a hint ahead stays ahead */
    struct iovec seven = {(void *)"7", 1};
    CHECK_EQ_INT(ls_objstore_put(os, hint, &seven, 1, 0), LS_OK);
    CHECK_EQ_INT(ls_ice_table_publish(t), LS_OK);
    b.len = 0;
    CHECK_EQ_INT(ls_objstore_get(os, hint, 0, UINT64_MAX, &b), LS_OK);
    CHECK(b.len == 1 && b.data[0] == '7');
    CHECK_EQ_INT(ls_objstore_del(os, v3), LS_OK);
    CHECK_EQ_INT(ls_ice_table_publish(t), LS_OK);
    CHECK(exists(os, v3));
    b.len = 0;
    CHECK_EQ_INT(ls_objstore_get(os, hint, 0, UINT64_MAX, &b), LS_OK);
    CHECK(b.len == 1 && b.data[0] == '7');
    ls_buf_free(&a);
    ls_buf_free(&b);
    ls_tcat_pointer_clear(&p);
    ls_ice_table_free(t);
    ls_objstore_close(os);
    ls_meta_close(m);
}

/* A swap applied whose answer was lost is recognized by reading the
 * pointer back; one that never reached the store is reported as failed and
 * a retry from a fresh load lands exactly once. */
TEST(lost_answer_and_failed_swap)
{
    char err[256] = "";
    ls_meta_t *m = ls_meta_faulty_open("faulty+mem://", err, sizeof err);
    CHECK(m);
    ls_objstore_t *os = ls_objstore_mem_open();
    ls_ice_table_t *t = NULL;
    CHECK_EQ_INT(create(m, os, &t), LS_OK);
    CHECK_EQ_INT(ls_meta_faulty_set(m, "lost_ack_rate=1", err, sizeof err), 0);
    CHECK_EQ_INT(mark(t, 7), LS_OK);
    CHECK_EQ_INT(ls_ice_table_version(t), 2);
    ls_fault_stats_t fs;
    ls_meta_faulty_stats(m, &fs);
    CHECK(fs.lost_acks >= 1);
    CHECK(exists(os, PREFIX "/metadata/v2.metadata.json"));
    /* and the next commit from the same object still compares correctly */
    CHECK_EQ_INT(ls_meta_faulty_set(m, "lost_ack_rate=0&txn_error_rate=1", err, sizeof err), 0);
    CHECK_EQ_INT(mark(t, 9), LS_EIO);
    CHECK(strstr(ls_ice_table_error(t), "not applied") != NULL);
    ls_ice_table_free(t);
    CHECK_EQ_INT(ls_meta_faulty_set(m, "txn_error_rate=0", err, sizeof err), 0);
    CHECK_EQ_INT(ls_tcat_open(m, os, "ns", "t", PREFIX, &t, err, sizeof err), LS_OK);
    CHECK_EQ_INT(ls_ice_table_version(t), 2);
    CHECK(strcmp(ls_ice_table_summary(t, "lakestream.log.0.last-offset"), "7") == 0);
    CHECK(!exists(os, PREFIX "/metadata/v3.metadata.json"));
    CHECK_EQ_INT(mark(t, 9), LS_OK);
    CHECK_EQ_INT(ls_ice_table_version(t), 3);
    ls_ice_table_free(t);
    ls_objstore_close(os);
    ls_meta_close(m);
}

/* A table written before pointers existed (layout only) is opened from the
 * layout; its next commit creates the pointer, after which only the
 * pointer counts. */
TEST(layout_table_is_adopted_on_next_commit)
{
    ls_meta_t *m = ls_meta_mem_open();
    ls_objstore_t *os = ls_objstore_mem_open();
    ls_ice_table_t *t = NULL;
    char err[256];
    ls_ice_spec_t spec = {0};
    CHECK_EQ_INT(ls_ice_table_create(os, PREFIX, LOC, ls_raw_iceberg_schema_json(),
                                     LS_RAW_LAST_COLUMN_ID, &spec, NULL, NULL, &t, err, sizeof err),
                 LS_OK);
    CHECK_EQ_INT(mark(t, 3), LS_OK); /* layout v2 */
    ls_ice_table_free(t);
    ls_tcat_pointer_t p;
    CHECK_EQ_INT(ls_tcat_get(m, "ns", "t", &p, err, sizeof err), LS_ENOTFOUND);
    CHECK_EQ_INT(ls_tcat_open(m, os, "ns", "t", PREFIX, &t, err, sizeof err), LS_OK);
    CHECK_EQ_INT(ls_ice_table_version(t), 2);
    CHECK(strcmp(ls_ice_table_summary(t, "lakestream.log.0.last-offset"), "3") == 0);
    CHECK_EQ_INT(mark(t, 4), LS_OK);
    ls_ice_table_free(t);
    CHECK_EQ_INT(ls_tcat_get(m, "ns", "t", &p, err, sizeof err), LS_OK);
    CHECK_EQ_INT(p.version, 3);
    ls_tcat_pointer_clear(&p);
    CHECK(exists(os, PREFIX "/metadata/v3.metadata.json"));
    CHECK_EQ_INT(ls_tcat_open(m, os, "ns", "t", PREFIX, &t, err, sizeof err), LS_OK);
    CHECK(strcmp(ls_ice_table_summary(t, "lakestream.log.0.last-offset"), "4") == 0);
    ls_ice_table_free(t);
    /* neither pointer nor layout: not found */
    CHECK_EQ_INT(ls_tcat_open(m, os, "ns", "none", "warehouse/ns/none", &t, err, sizeof err),
                 LS_ENOTFOUND);
    ls_objstore_close(os);
    ls_meta_close(m);
}

TEST(pointer_decode_and_list)
{
    ls_meta_t *m = ls_meta_mem_open();
    char err[256];
    const char good[] = "{\"version\":2,\"metadata-location\":\"file:///x/m.json\","
                        "\"metadata-key\":\"x/m.json\",\"prefix\":\"x\",\"updated-ms\":5}";
    CHECK_EQ_INT(ls_meta_put(m, "/ls/table/b/t2", good, sizeof good - 1), LS_OK);
    CHECK_EQ_INT(ls_meta_put(m, "/ls/table/a/t1", good, sizeof good - 1), LS_OK);
    CHECK_EQ_INT(ls_meta_put(m, "/ls/table/a/t0", good, sizeof good - 1), LS_OK);
    CHECK_EQ_INT(ls_meta_put(m, "/ls/table/a/bad", "{\"version\":0}", 13), LS_OK);
    CHECK_EQ_INT(ls_meta_put(m, "/ls/table/nokey", good, sizeof good - 1), LS_OK);
    ls_tcat_pointer_t *v;
    size_t n;
    CHECK_EQ_INT(ls_tcat_list(m, NULL, &v, &n), LS_OK);
    CHECK_EQ_INT(n, 3); /* the two malformed entries are skipped */
    CHECK(!strcmp(v[0].ns, "a") && !strcmp(v[0].name, "t0") && v[0].version == 2);
    CHECK(!strcmp(v[2].ns, "b") && !strcmp(v[2].name, "t2"));
    CHECK(v[1].updated_ms == 5 && !strcmp(v[1].metadata_key, "x/m.json"));
    ls_tcat_list_free(v, n);
    CHECK_EQ_INT(ls_tcat_list(m, "a", &v, &n), LS_OK);
    CHECK_EQ_INT(n, 2);
    ls_tcat_list_free(v, n);
    ls_tcat_pointer_t p;
    CHECK_EQ_INT(ls_tcat_get(m, "a", "bad", &p, err, sizeof err), LS_ECORRUPT);
    CHECK(strstr(err, "/ls/table/a/bad") != NULL);
    CHECK_EQ_INT(ls_tcat_get(m, "a/b", "t", &p, err, sizeof err), LS_ENOTFOUND);
    CHECK(ls_tcat_name_ok("a.b-c_d", 7));
    CHECK(!ls_tcat_name_ok("a/b", 3));
    CHECK(!ls_tcat_name_ok("a\x1f"
                           "b",
                           3));
    CHECK(!ls_tcat_name_ok("", 0));
    ls_meta_close(m);
}

/* Issue 29 item 6: a commit wrote its metadata twice (the catalog's
 * <N>-<uuid> file, then the same bytes again as v<N> for path readers).
 * On a local store the v<N> name is now a second name of the one file
 * written (a hard link), published before the hint names it, and it stays
 * when the uuid name is deleted. */
TEST(metadata_is_written_once)
{
    char root[] = "/tmp/ls_tcat_onceXXXXXX";
    CHECK(mkdtemp(root));
    char err[256] = "";
    ls_objstore_t *os = ls_objstore_fs_open(root, 0, err, sizeof err);
    CHECK(os);
    ls_meta_t *m = ls_meta_mem_open();
    ls_ice_spec_t spec = {0};
    ls_ice_table_t *t = NULL;
    char loc[300];
    snprintf(loc, sizeof loc, "file://%s/%s", root, PREFIX);
    CHECK_EQ_INT(ls_tcat_create(m, os, "ns", "t", PREFIX, loc, ls_raw_iceberg_schema_json(),
                                LS_RAW_LAST_COLUMN_ID, &spec, NULL, &t, err, sizeof err),
                 LS_OK);
    for (int i = 1; i <= 3; i++)
        CHECK_EQ_INT(mark(t, i), LS_OK);
    for (int v = 1; v <= 4; v++) {
        char key[128], path[512], vpath[512];
        snprintf(key, sizeof key, "%05d-", v);
        ls_objinfo_t *objs;
        size_t n;
        CHECK_EQ_INT(ls_objstore_list(os, PREFIX "/metadata/", &objs, &n), LS_OK);
        const char *uuid_key = NULL;
        for (size_t k = 0; k < n; k++)
            if (strstr(objs[k].key, key)) uuid_key = objs[k].key;
        CHECK(uuid_key);
        snprintf(path, sizeof path, "%s/%s", root, uuid_key);
        snprintf(vpath, sizeof vpath, "%s/" PREFIX "/metadata/v%d.metadata.json", root, v);
        struct stat a, b;
        CHECK_EQ_INT(stat(path, &a), 0);
        CHECK_EQ_INT(stat(vpath, &b), 0);
        CHECK(a.st_ino == b.st_ino && a.st_dev == b.st_dev); /* one file, two names */
        if (v == 1) { /* deleting the catalog's name keeps the path readers' */
            CHECK_EQ_INT(ls_objstore_del(os, uuid_key), LS_OK);
            CHECK_EQ_INT(stat(vpath, &b), 0);
            CHECK(b.st_size == a.st_size && b.st_nlink == 1);
        }
        ls_objinfo_free(objs, n);
    }
    ls_ice_table_free(t);
    ls_meta_close(m);
    ls_objstore_close(os);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    CHECK_EQ_INT(system(cmd), 0);
}

int main(void)
{
    RUN(create_publishes_pointer_and_layout);
    RUN(concurrent_commit_loses_compare_and_set);
    RUN(uncommitted_metadata_is_never_loaded);
    RUN(unpublished_commit_is_published_on_open);
    RUN(lost_answer_and_failed_swap);
    RUN(layout_table_is_adopted_on_next_commit);
    RUN(pointer_decode_and_list);
    RUN(metadata_is_written_once);
    UNIT_DONE();
}
