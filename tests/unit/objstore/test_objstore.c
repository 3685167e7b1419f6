/* Object-store contract tests: one suite, run against the fs backend (in a
 * fresh mkdtemp directory), the mem backend, the faulty wrapper with no
 * faults (it must be transparent), and — when LS_TEST_S3_URL is set (see
 * tools/s3/radosgw.sh) — the s3 backend under a fresh random prefix. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/diag.h"
#include "objstore/objstore.h"
#include "unit.h"

static ls_objstore_t *os; /* the store under test */
static char fs_dir[256];  /* root of the fs store ("" for mem) */

static ls_status put_str(const char *key, const char *s, int flags)
{
    struct iovec iov = {(void *)s, strlen(s)};
    return ls_objstore_put(os, key, &iov, 1, flags);
}

/* Reads the range into a NUL-terminated static string ("<status>" on error). */
static const char *get_str(const char *key, uint64_t off, uint64_t len)
{
    static char out[4096];
    ls_buf_t b;
    ls_buf_init(&b);
    ls_status st = ls_objstore_get(os, key, off, len, &b);
    if (st != LS_OK)
        snprintf(out, sizeof out, "<%s>", ls_status_str(st));
    else
        snprintf(out, sizeof out, "%.*s", (int)b.len, b.data ? (const char *)b.data : "");
    ls_buf_free(&b);
    return out;
}

TEST(put_get_roundtrip)
{
    CHECK_EQ_INT(put_str("a/b/obj1", "hello world", 0), LS_OK);
    CHECK(strcmp(get_str("a/b/obj1", 0, UINT64_MAX), "hello world") == 0);
    /* overwrite replaces the whole object */
    CHECK_EQ_INT(put_str("a/b/obj1", "bye", 0), LS_OK);
    CHECK(strcmp(get_str("a/b/obj1", 0, UINT64_MAX), "bye") == 0);
    /* empty object */
    CHECK_EQ_INT(ls_objstore_put(os, "empty", NULL, 0, 0), LS_OK);
    CHECK(strcmp(get_str("empty", 0, UINT64_MAX), "") == 0);
}

/* ls_objstore_copy: dst gets src's bytes (replacing what it held), the two
 * stay independent objects, a missing src is LS_ENOTFOUND (fs: a hard
 * link; s3: CopyObject; mem and faulty: get and put). */
TEST(copy_makes_an_independent_object)
{
    CHECK_EQ_INT(put_str("cp/src", "metadata bytes", 0), LS_OK);
    CHECK_EQ_INT(put_str("cp/v1/dst", "old", 0), LS_OK);
    CHECK_EQ_INT(ls_objstore_copy(os, "cp/src", "cp/v1/dst"), LS_OK);
    CHECK(strcmp(get_str("cp/v1/dst", 0, UINT64_MAX), "metadata bytes") == 0);
    CHECK_EQ_INT(ls_objstore_copy(os, "cp/src", "cp/new/dst2"), LS_OK);
    CHECK_EQ_INT(ls_objstore_del(os, "cp/src"), LS_OK);
    CHECK(strcmp(get_str("cp/v1/dst", 0, UINT64_MAX), "metadata bytes") == 0);
    CHECK(strcmp(get_str("cp/new/dst2", 0, UINT64_MAX), "metadata bytes") == 0);
    CHECK_EQ_INT(ls_objstore_copy(os, "cp/src", "cp/v2/dst"), LS_ENOTFOUND);
    ls_objinfo_t info;
    CHECK_EQ_INT(ls_objstore_head(os, "cp/v2/dst", &info), LS_ENOTFOUND);
    CHECK_EQ_INT(ls_objstore_copy(os, "cp/v1/dst", "cp/bad=key"), LS_EINVAL);
}

TEST(get_ranges_clamp)
{
    CHECK_EQ_INT(put_str("r/x", "0123456789", 0), LS_OK);
    CHECK(strcmp(get_str("r/x", 2, 3), "234") == 0);
    CHECK(strcmp(get_str("r/x", 7, 100), "789") == 0); /* clamped at the end */
    CHECK(strcmp(get_str("r/x", 10, 5), "") == 0);     /* at the end: empty */
    CHECK(strcmp(get_str("r/x", 1000, UINT64_MAX), "") == 0);
    CHECK(strcmp(get_str("r/x", 9, UINT64_MAX), "9") == 0);
    /* get replaces what the buffer held */
    ls_buf_t b;
    ls_buf_init(&b);
    ls_buf_append(&b, "junk", 4);
    CHECK_EQ_INT(ls_objstore_get(os, "r/x", 0, 2, &b), LS_OK);
    int ok = b.len == 2 && memcmp(b.data, "01", 2) == 0;
    ls_buf_free(&b);
    CHECK(ok);
}

/* get_chunk: the same bytes as get, small ranges and mapped ones (fs maps
 * ranges of 256 KiB and more, at offsets that are not page-aligned); writing
 * into a chunk (the read cache rewrites batch offsets) never changes the
 * stored object; the chunk outlives the object's delete. */
TEST(get_chunk_matches_get)
{
    size_t n = 700 * 1024 + 13;
    uint8_t *body = ls_malloc(n);
    for (size_t i = 0; i < n; i++)
        body[i] = (uint8_t)(i * 31 + i / 4096);
    struct iovec iov = {body, n};
    CHECK_EQ_INT(ls_objstore_put(os, "c/big", &iov, 1, 0), LS_OK);
    ls_bufpool_t *pool = ls_bufpool_new(4u << 20);
    const uint64_t ranges[][2] = {{0, 10},      {5, 4000}, {4097, 300 * 1024}, {1, n - 1},
                                  {n - 5, 100}, {n, 10},   {12345, UINT64_MAX}};
    for (size_t r = 0; r < sizeof ranges / sizeof ranges[0]; r++) {
        uint64_t off = ranges[r][0], len = ranges[r][1];
        size_t want = off >= n ? 0 : (n - off < len ? n - off : (size_t)len);
        ls_chunk_t *c = NULL;
        CHECK_EQ_INT(ls_objstore_get_chunk(os, "c/big", off, len, r % 2 ? pool : NULL, &c), LS_OK);
        CHECK(c != NULL);
        CHECK_EQ_INT(c->len, want);
        CHECK(want == 0 || memcmp(c->data, body + off, want) == 0);
        if (want) c->data[0] ^= 0xff; /* a write stays in the chunk */
        ls_chunk_release(c);
    }
    ls_chunk_t *c = NULL;
    CHECK_EQ_INT(ls_objstore_get_chunk(os, "c/big", 4097, 400 * 1024, pool, &c), LS_OK);
    CHECK_EQ_INT(ls_objstore_del(os, "c/big"), LS_OK);
    CHECK(memcmp(c->data, body + 4097, 400 * 1024) == 0);
    ls_chunk_release(c);
    ls_chunk_t *none = NULL;
    CHECK_EQ_INT(ls_objstore_get_chunk(os, "c/missing", 0, 10, pool, &none), LS_ENOTFOUND);
    CHECK(none == NULL);
    CHECK_EQ_INT(ls_objstore_put(os, "c/big", &iov, 1, 0), LS_OK);
    ls_buf_t b;
    ls_buf_init(&b);
    CHECK_EQ_INT(ls_objstore_get(os, "c/big", 0, UINT64_MAX, &b), LS_OK);
    int same = b.len == n && memcmp(b.data, body, n) == 0;
    ls_buf_free(&b);
    CHECK(same);
    CHECK_EQ_INT(ls_objstore_del(os, "c/big"), LS_OK);
    ls_bufpool_release(pool);
    ls_free(body);
}

TEST(missing_is_notfound)
{
    ls_buf_t b;
    ls_buf_init(&b);
    CHECK_EQ_INT(ls_objstore_get(os, "no/such/key", 0, UINT64_MAX, &b), LS_ENOTFOUND);
    ls_buf_free(&b);
    ls_objinfo_t info;
    CHECK_EQ_INT(ls_objstore_head(os, "no/such/key", &info), LS_ENOTFOUND);
    CHECK_EQ_INT(ls_objstore_head(os, "no", &info), LS_ENOTFOUND);
}

TEST(head_reports_size)
{
    int64_t before = (int64_t)time(NULL) * 1000 - 2000;
    CHECK_EQ_INT(put_str("h/obj", "12345", 0), LS_OK);
    ls_objinfo_t info;
    CHECK_EQ_INT(ls_objstore_head(os, "h/obj", &info), LS_OK);
    CHECK_EQ_INT(info.size, 5);
    CHECK(info.key == NULL);
    CHECK(info.mtime_ms >= before);
}

TEST(del_idempotent)
{
    CHECK_EQ_INT(put_str("d/1", "x", 0), LS_OK);
    CHECK_EQ_INT(ls_objstore_del(os, "d/1"), LS_OK);
    CHECK(strcmp(get_str("d/1", 0, UINT64_MAX), "<not found>") == 0);
    CHECK_EQ_INT(ls_objstore_del(os, "d/1"), LS_OK);
    CHECK_EQ_INT(ls_objstore_del(os, "never/was"), LS_OK);
    /* the key can be written again */
    CHECK_EQ_INT(put_str("d/1", "y", 0), LS_OK);
    CHECK(strcmp(get_str("d/1", 0, UINT64_MAX), "y") == 0);
}

TEST(create_only)
{
    CHECK_EQ_INT(put_str("c/once", "first", LS_OBJSTORE_PUT_CREATE_ONLY), LS_OK);
    CHECK_EQ_INT(put_str("c/once", "second", LS_OBJSTORE_PUT_CREATE_ONLY), LS_EEXISTS);
    CHECK(strcmp(get_str("c/once", 0, UINT64_MAX), "first") == 0);
    CHECK_EQ_INT(put_str("c/once", "third", 0), LS_OK);
    CHECK(strcmp(get_str("c/once", 0, UINT64_MAX), "third") == 0);
}

TEST(iovec_put)
{
    char big[3000];
    for (size_t i = 0; i < sizeof big; i++)
        big[i] = (char)('a' + i % 26);
    struct iovec iov[200];
    size_t total = 0;
    char expect[4096];
    for (int i = 0; i < 200; i++) {
        size_t len = (size_t)(i % 7) * 3; /* includes zero-length pieces */
        iov[i].iov_base = big + i * 13;
        iov[i].iov_len = len;
        memcpy(expect + total, big + i * 13, len);
        total += len;
    }
    CHECK_EQ_INT(ls_objstore_put(os, "iov/obj", iov, 200, 0), LS_OK);
    ls_buf_t b;
    ls_buf_init(&b);
    CHECK_EQ_INT(ls_objstore_get(os, "iov/obj", 0, UINT64_MAX, &b), LS_OK);
    int ok = b.len == total && memcmp(b.data, expect, total) == 0;
    ls_buf_free(&b);
    CHECK(ok);
}

TEST(list_order_and_prefix)
{
    /* written out of order; '-' and '.' sort before '/' bytewise */
    const char *keys[] = {"l/b", "l/a/2", "l/a-x", "l/a/1", "l/a.y", "l/c/d/e", "lz"};
    for (int i = 0; i < 7; i++)
        CHECK_EQ_INT(put_str(keys[i], keys[i], 0), LS_OK);
    ls_objinfo_t *v;
    size_t n;
    CHECK_EQ_INT(ls_objstore_list(os, "l/", &v, &n), LS_OK);
    const char *want[] = {"l/a-x", "l/a.y", "l/a/1", "l/a/2", "l/b", "l/c/d/e"};
    int ok = n == 6;
    for (size_t i = 0; ok && i < n; i++)
        ok = strcmp(v[i].key, want[i]) == 0 && v[i].size == strlen(want[i]);
    ls_objinfo_free(v, n);
    CHECK(ok);

    /* a prefix that ends inside a component */
    CHECK_EQ_INT(ls_objstore_list(os, "l/a", &v, &n), LS_OK);
    ok = n == 4 && strcmp(v[0].key, "l/a-x") == 0 && strcmp(v[3].key, "l/a/2") == 0;
    ls_objinfo_free(v, n);
    CHECK(ok);

    CHECK_EQ_INT(ls_objstore_list(os, "l/a/", &v, &n), LS_OK);
    ok = n == 2 && strcmp(v[0].key, "l/a/1") == 0 && strcmp(v[1].key, "l/a/2") == 0;
    ls_objinfo_free(v, n);
    CHECK(ok);

    CHECK_EQ_INT(ls_objstore_list(os, "nothing/here/", &v, &n), LS_OK);
    CHECK_EQ_INT(n, 0);
    ls_objinfo_free(v, n);

    /* everything: sorted, and ends with "lz" of this test */
    CHECK_EQ_INT(ls_objstore_list(os, "", &v, &n), LS_OK);
    ok = n >= 7;
    for (size_t i = 1; ok && i < n; i++)
        ok = strcmp(v[i - 1].key, v[i].key) < 0;
    int has_lz = 0;
    for (size_t i = 0; i < n; i++)
        has_lz |= strcmp(v[i].key, "lz") == 0;
    ls_objinfo_free(v, n);
    CHECK(ok);
    CHECK(has_lz);
}

TEST(invalid_keys)
{
    const char *bad[] = {"", "/abs", "a//b", "a/", "a/../b", "./a", "a/.", "sp ace", "q?"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_EQ_INT(put_str(bad[i], "x", 0), LS_EINVAL);
    ls_objinfo_t *v;
    size_t n;
    CHECK_EQ_INT(ls_objstore_list(os, "../", &v, &n), LS_EINVAL);
    CHECK_EQ_INT(ls_objstore_list(os, "a//", &v, &n), LS_EINVAL);
}

static int count_files(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)))
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) n++;
    closedir(d);
    return n;
}

TEST(no_temp_files_visible)
{
    for (int i = 0; i < 20; i++) {
        char key[32];
        snprintf(key, sizeof key, "t/obj%02d", i);
        CHECK_EQ_INT(put_str(key, "payload", i % 2 ? LS_OBJSTORE_PUT_CREATE_ONLY : 0), LS_OK);
    }
    CHECK_EQ_INT(put_str("t/obj01", "again", LS_OBJSTORE_PUT_CREATE_ONLY), LS_EEXISTS);
    ls_objinfo_t *v;
    size_t n;
    CHECK_EQ_INT(ls_objstore_list(os, "", &v, &n), LS_OK);
    int ok = 1;
    for (size_t i = 0; i < n; i++)
        if (strstr(v[i].key, ".part") || strncmp(v[i].key, "tmp", 3) == 0) ok = 0;
    ls_objinfo_free(v, n);
    CHECK(ok);
    if (fs_dir[0]) {
        char tmp[300];
        snprintf(tmp, sizeof tmp, "%s/tmp", fs_dir);
        CHECK_EQ_INT(count_files(tmp), 0); /* every temp file was renamed or removed */
        CHECK_EQ_INT(put_str("tmp/x", "reserved", 0), LS_EINVAL);
        CHECK_EQ_INT(ls_objstore_list(os, "tmp/", &v, &n), LS_OK);
        CHECK_EQ_INT(n, 0);
        ls_objinfo_free(v, n);
    }
}

typedef struct churn_job {
    int id;
    ls_status st;
} churn_job_t;

/* Puts and deletes objects sharing one fresh directory from several threads:
 * every put creates or finds the directory while others delete beside it. */
static void *churn(void *arg)
{
    churn_job_t *j = arg;
    char key[64], val[32];
    for (int i = 0; i < 200 && j->st == LS_OK; i++) {
        snprintf(key, sizeof key, "churn/shared/t%d-%d", j->id, i);
        snprintf(val, sizeof val, "v%d", i);
        struct iovec iov = {val, strlen(val)};
        j->st = ls_objstore_put(os, key, &iov, 1, i % 2 ? LS_OBJSTORE_PUT_CREATE_ONLY : 0);
        if (j->st == LS_OK) j->st = ls_objstore_del(os, key);
    }
    return NULL;
}

TEST(concurrent_put_del)
{
    churn_job_t jobs[4];
    pthread_t th[4];
    for (int i = 0; i < 4; i++) {
        jobs[i] = (churn_job_t){i, LS_OK};
        pthread_create(&th[i], NULL, churn, &jobs[i]);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < 4; i++)
        CHECK_EQ_INT(jobs[i].st, LS_OK);
    ls_objinfo_t *v;
    size_t n;
    CHECK_EQ_INT(ls_objstore_list(os, "churn/", &v, &n), LS_OK);
    ls_objinfo_free(v, n);
    CHECK_EQ_INT(n, 0);
}

static void run_suite(void)
{
    RUN(put_get_roundtrip);
    RUN(copy_makes_an_independent_object);
    RUN(get_ranges_clamp);
    RUN(get_chunk_matches_get);
    RUN(missing_is_notfound);
    RUN(head_reports_size);
    RUN(del_idempotent);
    RUN(create_only);
    RUN(iovec_put);
    RUN(list_order_and_prefix);
    RUN(invalid_keys);
    RUN(no_temp_files_visible);
    RUN(concurrent_put_del);
}

/* fs only: a temp file left by a dead writer disappears at open; the
 * store reopens with its objects; fsync off still works; key/dir collisions
 * are refused. */
TEST(fs_reopen_cleans_temp)
{
    char path[300];
    snprintf(path, sizeof path, "%s/tmp/999999999-1.part", fs_dir); /* no such pid */
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    fputs("partial", f);
    fclose(f);
    char err[256];
    ls_objstore_t *again = ls_objstore_fs_open(fs_dir, 0, err, sizeof err);
    CHECK(again != NULL);
    CHECK(access(path, F_OK) != 0);
    ls_buf_t b;
    ls_buf_init(&b);
    ls_status st = ls_objstore_get(again, "c/once", 0, UINT64_MAX, &b);
    int ok = st == LS_OK && b.len == 5 && memcmp(b.data, "third", 5) == 0;
    ls_buf_free(&b);
    struct iovec iov = {"nosync", 6};
    ls_status st2 = ls_objstore_put(again, "nosync/obj", &iov, 1, 0);
    ls_objstore_close(again);
    CHECK(ok);
    CHECK_EQ_INT(st2, LS_OK);
    CHECK_EQ_INT(put_str("coll/a", "file", 0), LS_OK);
    CHECK_EQ_INT(put_str("coll/a/b", "under a file", 0), LS_EINVAL);
    CHECK_EQ_INT(put_str("coll", "over a dir", 0), LS_EINVAL);
}

TEST(open_urls)
{
    char err[256];
    ls_objstore_t *m = ls_objstore_open("mem://", 1, err, sizeof err);
    CHECK(m != NULL && strcmp(m->ops->name, "mem") == 0);
    ls_objstore_close(m);
    char url[300];
    snprintf(url, sizeof url, "file://%s", fs_dir); /* fs_dir is absolute: file:///... */
    ls_objstore_t *f = ls_objstore_open(url, 1, err, sizeof err);
    CHECK(f != NULL && strcmp(f->ops->name, "fs") == 0);
    ls_objstore_close(f);
    CHECK(ls_objstore_open("s4://bucket", 1, err, sizeof err) == NULL);
    CHECK(strstr(err, "s4://bucket") != NULL);
}

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    return remove(p);
}

int main(void)
{
    ls_diag_set_level(LS_DIAG_ERROR);
    char tmpl[] = "/tmp/ls_objstore_XXXXXX";
    if (!mkdtemp(tmpl)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(fs_dir, sizeof fs_dir, "%s/store", tmpl);
    char err[256];
    printf("# backend fs (%s)\n", fs_dir);
    os = ls_objstore_fs_open(fs_dir, 1, err, sizeof err);
    if (!os) {
        printf("FAIL open fs: %s\n", err);
        return 1;
    }
    run_suite();
    RUN(fs_reopen_cleans_temp);
    RUN(open_urls);
    ls_objstore_close(os);
    nftw(tmpl, rm_entry, 16, FTW_DEPTH | FTW_PHYS);

    printf("# backend mem\n");
    fs_dir[0] = 0;
    os = ls_objstore_mem_open();
    run_suite();
    ls_objstore_close(os);

    printf("# backend faulty+mem (no faults configured)\n");
    os = ls_objstore_open("faulty+mem://", 1, err, sizeof err);
    if (!os) {
        printf("FAIL open faulty+mem://: %s\n", err);
        return 1;
    }
    run_suite();
    ls_objstore_close(os);

    const char *s3 = getenv("LS_TEST_S3_URL");
    if (s3 && *s3) {
        /* s3://bucket[/p][?q] -> s3://bucket[/p]/suite-<random>[?q] */
        const char *q = strchr(s3, '?');
        size_t head = q ? (size_t)(q - s3) : strlen(s3);
        char url[1024];
        snprintf(url, sizeof url, "%.*s%ssuite-%ld-%ld%s", (int)head, s3,
                 s3[head - 1] == '/' ? "" : "/", (long)getpid(), (long)time(NULL), q ? q : "");
        printf("# backend s3 (%s)\n", url);
        os = ls_objstore_open(url, 1, err, sizeof err);
        if (!os) {
            printf("FAIL open %s: %s\n", url, err);
            return 1;
        }
        run_suite();
        ls_objinfo_t *v;
        size_t n;
        if (ls_objstore_list(os, "", &v, &n) == LS_OK) {
            const char **keys = ls_calloc(n ? n : 1, sizeof *keys);
            for (size_t i = 0; i < n; i++)
                keys[i] = v[i].key;
            ls_objstore_del_many(os, keys, n);
            ls_free(keys);
            ls_objinfo_free(v, n);
        }
        ls_objstore_close(os);
    } else {
        printf("# backend s3 skipped: LS_TEST_S3_URL is not set\n");
    }
    UNIT_DONE();
}
