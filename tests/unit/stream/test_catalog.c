/* Stream catalog tests: one suite run on the mem metadata backend and on
 * sqlite (a file in a mkdtemp directory, reopened to check persistence). */
#include <jansson.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/check.h"
#include "base/diag.h"
#include "meta/meta.h"
#include "stream/catalog.h"
#include "unit.h"

static ls_meta_t *M;
static ls_catalog_t *C;

static int64_t store_rev(void)
{
    ls_kvlist_t l;
    if (ls_meta_scan(M, "\xff", 1, NULL, 0, 1, 0, &l) != LS_OK) return -1;
    int64_t r = l.revision;
    ls_kvlist_free(&l);
    return r;
}

static json_t *load_json(const char *key)
{
    ls_kv_t kv;
    if (ls_meta_get(M, key, &kv) != LS_OK) return NULL;
    json_t *o = json_loadb((const char *)kv.val, kv.vlen, 0, NULL);
    ls_kv_free(&kv);
    return o;
}

static ls_status create(const char *ns, const char *name, int32_t parts, ls_stream_t **out)
{
    char err[256];
    return ls_catalog_create(C, ns, name, parts, NULL, 0, 0, out, err, sizeof err);
}

TEST(create_and_lookup)
{
    ls_prop_t cfg[] = {{"retention.ms", "1000"}, {"cleanup.policy", "delete"}};
    char err[256];
    ls_stream_t *s = NULL;
    CHECK_EQ_INT(ls_catalog_create(C, NULL, "orders", 3, cfg, 2, 0, &s, err, sizeof err), LS_OK);
    CHECK(s != NULL);
    int ok = strcmp(s->ns, LS_DEFAULT_NAMESPACE) == 0 && strcmp(s->name, "orders") == 0 &&
             s->partitions == 3 && s->stream_no >= 1 && !ls_uuid_is_zero(&s->id) &&
             s->mod_rev > 0 && s->created_ms > 0;
    ok = ok && s->nconfig == 2 && strcmp(s->config[0].key, "cleanup.policy") == 0; /* sorted */
    ok = ok && strcmp(ls_stream_config_get(s, "retention.ms"), "1000") == 0 &&
         ls_stream_config_get(s, "nope") == NULL;
    ok = ok && ls_stream_log_id(s, 2) == (s->stream_no << LS_LOG_PARTITION_BITS | 2);
    ls_stream_t *byname = ls_catalog_lookup(C, LS_DEFAULT_NAMESPACE, "orders");
    ls_stream_t *byid = ls_catalog_lookup_id(C, &s->id);
    ok = ok && byname && byid && memcmp(byname->id.b, s->id.b, 16) == 0 &&
         byid->stream_no == s->stream_no;
    ls_stream_release(byname);
    ls_stream_release(byid);
    ls_stream_t copy = *s;
    ls_stream_release(s);
    CHECK(ok);
    CHECK(ls_catalog_lookup(C, LS_DEFAULT_NAMESPACE, "missing") == NULL);
    CHECK(ls_catalog_lookup(C, "other", "orders") == NULL);

    /* what the store holds: the documented keyspace */
    json_t *ns = load_json("/ls/ns/default");
    CHECK(ns != NULL);
    ok = json_is_integer(json_object_get(ns, "created_ms")) &&
         json_is_object(json_object_get(ns, "properties"));
    json_decref(ns);
    CHECK(ok);
    json_t *st = load_json("/ls/stream/default/orders");
    CHECK(st != NULL);
    char ids[37];
    ls_uuid_format(&copy.id, ids);
    ok = strcmp(json_string_value(json_object_get(st, "id")), ids) == 0 &&
         json_integer_value(json_object_get(st, "stream_no")) == copy.stream_no &&
         json_integer_value(json_object_get(st, "partitions")) == 3 &&
         strcmp(json_string_value(json_object_get(json_object_get(st, "config"), "retention.ms")),
                "1000") == 0;
    json_decref(st);
    CHECK(ok);
    ls_kv_t kv;
    CHECK_EQ_INT(ls_meta_get(M, "/ls/counter/stream_no", &kv), LS_OK);
    ok = atoll((char *)kv.val) == copy.stream_no;
    ls_kv_free(&kv);
    CHECK(ok);
}

TEST(create_existing)
{
    char err[256] = "";
    CHECK_EQ_INT(create(NULL, "dup", 1, NULL), LS_OK);
    CHECK_EQ_INT(ls_catalog_create(C, NULL, "dup", 1, NULL, 0, 0, NULL, err, sizeof err),
                 LS_EEXISTS);
    CHECK(strstr(err, "dup") != NULL);
    /* same name in another namespace is a different stream */
    CHECK_EQ_INT(create("analytics", "dup", 2, NULL), LS_OK);
    json_t *ns = load_json("/ls/ns/analytics");
    CHECK(ns != NULL);
    json_decref(ns);
}

TEST(invalid_requests)
{
    char err[256];
    char long_name[251];
    memset(long_name, 'x', 250);
    long_name[250] = 0;
    const char *bad[] = {"", ".", "..", "a/b", "with space", "tab\t", "ünï", long_name};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(!ls_stream_name_valid(bad[i]));
        CHECK_EQ_INT(ls_catalog_create(C, NULL, bad[i], 1, NULL, 0, 0, NULL, err, sizeof err),
                     LS_EINVAL);
    }
    CHECK_EQ_INT(ls_catalog_create(C, NULL, NULL, 1, NULL, 0, 0, NULL, err, sizeof err), LS_EINVAL);
    long_name[249] = 0; /* 249 is the longest allowed */
    CHECK(ls_stream_name_valid(long_name));
    CHECK_EQ_INT(create(NULL, long_name, 1, NULL), LS_OK);
    CHECK(ls_stream_name_valid("a.b_c-D9"));
    CHECK(ls_stream_name_valid("..."));
    CHECK_EQ_INT(create(NULL, "parts", 0, NULL), LS_EINVAL);
    CHECK_EQ_INT(create(NULL, "parts", -1, NULL), LS_EINVAL);
    CHECK_EQ_INT(create(NULL, "parts", LS_MAX_PARTITIONS + 1, NULL), LS_EINVAL);
    CHECK_EQ_INT(create("bad/ns", "parts", 1, NULL), LS_EINVAL);
    ls_prop_t twice[] = {{"a", "1"}, {"a", "2"}};
    CHECK_EQ_INT(ls_catalog_create(C, NULL, "parts", 1, twice, 2, 0, NULL, err, sizeof err),
                 LS_EINVAL);
    ls_prop_t nullval[] = {{"a", NULL}};
    CHECK_EQ_INT(ls_catalog_create(C, NULL, "parts", 1, nullval, 1, 0, NULL, err, sizeof err),
                 LS_EINVAL);
    ls_prop_t badutf8[] = {{"a", "\xff\xfe"}};
    CHECK_EQ_INT(ls_catalog_create(C, NULL, "parts", 1, badutf8, 1, 0, NULL, err, sizeof err),
                 LS_EINVAL);
    CHECK(ls_catalog_lookup(C, NULL, "parts") == NULL);
}

TEST(validate_only_writes_nothing)
{
    char err[256];
    int64_t r0 = store_rev();
    ls_stream_t *s = (ls_stream_t *)1;
    CHECK_EQ_INT(ls_catalog_create(C, "fresh-ns", "vo", 4, NULL, 0, 1, &s, err, sizeof err), LS_OK);
    CHECK(s == NULL);
    CHECK_EQ_INT(store_rev(), r0);
    CHECK(ls_catalog_lookup(C, "fresh-ns", "vo") == NULL);
    CHECK(load_json("/ls/ns/fresh-ns") == NULL);
    /* validation still reports what a real create would */
    CHECK_EQ_INT(ls_catalog_create(C, NULL, "dup", 1, NULL, 0, 1, NULL, err, sizeof err),
                 LS_EEXISTS);
    CHECK_EQ_INT(ls_catalog_create(C, NULL, "..", 1, NULL, 0, 1, NULL, err, sizeof err), LS_EINVAL);
    CHECK_EQ_INT(ls_catalog_add_partitions(C, NULL, "dup", 9, 1, err, sizeof err), LS_OK);
    CHECK_EQ_INT(store_rev(), r0);
    ls_stream_t *d = ls_catalog_lookup(C, NULL, "dup");
    CHECK(d != NULL);
    int parts = d->partitions;
    ls_stream_release(d);
    CHECK_EQ_INT(parts, 1);
}

TEST(list_sorted)
{
    CHECK_EQ_INT(create(NULL, "zeta", 1, NULL), LS_OK);
    CHECK_EQ_INT(create(NULL, "alpha", 1, NULL), LS_OK);
    CHECK_EQ_INT(create("analytics", "beta", 1, NULL), LS_OK);
    int n;
    ls_stream_t **v = ls_catalog_list(C, NULL, &n);
    int ok = n >= 5;
    for (int i = 1; ok && i < n; i++) {
        int d = strcmp(v[i - 1]->ns, v[i]->ns);
        ok = d < 0 || (d == 0 && strcmp(v[i - 1]->name, v[i]->name) < 0);
    }
    ok = ok && strcmp(v[0]->ns, "analytics") == 0 && strcmp(v[0]->name, "beta") == 0;
    ls_stream_list_release(v, n);
    CHECK(ok);
    v = ls_catalog_list(C, "analytics", &n);
    ok = n == 2 && strcmp(v[0]->name, "beta") == 0 && strcmp(v[1]->name, "dup") == 0;
    ls_stream_list_release(v, n);
    CHECK(ok);
    v = ls_catalog_list(C, "nobody", &n);
    CHECK_EQ_INT(n, 0);
    ls_stream_list_release(v, n);
}

TEST(drop_tombstone_recreate)
{
    ls_stream_t *before = NULL, *dropped = NULL;
    CHECK_EQ_INT(create(NULL, "victim", 2, &before), LS_OK);
    CHECK_EQ_INT(ls_catalog_drop(C, NULL, "victim", &dropped), LS_OK);
    int ok = dropped && memcmp(dropped->id.b, before->id.b, 16) == 0 &&
             dropped->stream_no == before->stream_no;
    ls_stream_release(dropped);
    ok = ok && ls_catalog_lookup(C, NULL, "victim") == NULL &&
         ls_catalog_lookup_id(C, &before->id) == NULL;
    /* the old snapshot stays readable for whoever holds it */
    ok = ok && strcmp(before->name, "victim") == 0 && before->partitions == 2;
    char ids[37], tkey[64];
    ls_uuid_format(&before->id, ids);
    snprintf(tkey, sizeof tkey, "/ls/tomb/%s", ids);
    json_t *t = load_json(tkey);
    ok = ok && t && strcmp(json_string_value(json_object_get(t, "ns")), "default") == 0 &&
         strcmp(json_string_value(json_object_get(t, "name")), "victim") == 0 &&
         json_integer_value(json_object_get(t, "stream_no")) == before->stream_no &&
         json_integer_value(json_object_get(t, "partitions")) == 2 &&
         json_integer_value(json_object_get(t, "dropped_ms")) > 0;
    json_decref(t);
    ok = ok && load_json("/ls/stream/default/victim") == NULL;
    ok = ok && ls_catalog_drop(C, NULL, "victim", NULL) == LS_ENOTFOUND;

    /* re-created: a new identity and new logs, never the old ones */
    ls_stream_t *again = NULL;
    ok = ok && create(NULL, "victim", 2, &again) == LS_OK && again;
    ok = ok && again->stream_no > before->stream_no && memcmp(again->id.b, before->id.b, 16) != 0 &&
         ls_stream_log_id(again, 0) != ls_stream_log_id(before, 0);
    /* the tombstone survives the re-create */
    t = load_json(tkey);
    ok = ok && t != NULL;
    json_decref(t);
    ls_stream_release(again);
    ls_stream_release(before);
    CHECK(ok);
}

TEST(add_partitions_only_grows)
{
    char err[256];
    ls_stream_t *old = NULL;
    CHECK_EQ_INT(create(NULL, "grow", 3, &old), LS_OK);
    CHECK_EQ_INT(ls_catalog_add_partitions(C, NULL, "grow", 5, 0, err, sizeof err), LS_OK);
    ls_stream_t *s = ls_catalog_lookup(C, NULL, "grow");
    int ok = s && s->partitions == 5 && s->mod_rev > old->mod_rev &&
             s->stream_no == old->stream_no && memcmp(s->id.b, old->id.b, 16) == 0 &&
             old->partitions == 3;
    ls_stream_release(s);
    ls_stream_release(old);
    CHECK(ok);
    err[0] = 0;
    CHECK_EQ_INT(ls_catalog_add_partitions(C, NULL, "grow", 5, 0, err, sizeof err), LS_EINVAL);
    CHECK(strstr(err, "5") != NULL);
    CHECK_EQ_INT(ls_catalog_add_partitions(C, NULL, "grow", 4, 0, err, sizeof err), LS_EINVAL);
    CHECK_EQ_INT(ls_catalog_add_partitions(C, NULL, "grow", 0, 0, err, sizeof err), LS_EINVAL);
    CHECK_EQ_INT(ls_catalog_add_partitions(C, NULL, "absent", 9, 0, err, sizeof err), LS_ENOTFOUND);
    json_t *st = load_json("/ls/stream/default/grow");
    ok = st && json_integer_value(json_object_get(st, "partitions")) == 5;
    json_decref(st);
    CHECK(ok);
}

TEST(set_config_replaces)
{
    ls_prop_t a[] = {{"retention.ms", "1"}, {"segment.bytes", "2"}};
    char err[256];
    CHECK_EQ_INT(ls_catalog_create(C, NULL, "cfg", 1, a, 2, 0, NULL, err, sizeof err), LS_OK);
    ls_prop_t b[] = {{"max.message.bytes", "3"}};
    CHECK_EQ_INT(ls_catalog_set_config(C, NULL, "cfg", b, 1), LS_OK);
    ls_stream_t *s = ls_catalog_lookup(C, NULL, "cfg");
    int ok = s && s->nconfig == 1 &&
             strcmp(ls_stream_config_get(s, "max.message.bytes"), "3") == 0 &&
             ls_stream_config_get(s, "retention.ms") == NULL && s->partitions == 1;
    ls_stream_release(s);
    CHECK(ok);
    CHECK_EQ_INT(ls_catalog_set_config(C, NULL, "cfg", NULL, 0), LS_OK);
    s = ls_catalog_lookup(C, NULL, "cfg");
    ok = s && s->nconfig == 0;
    ls_stream_release(s);
    CHECK(ok);
    CHECK_EQ_INT(ls_catalog_set_config(C, NULL, "absent", b, 1), LS_ENOTFOUND);
}

typedef struct race_job {
    ls_status st;
    int64_t stream_no;
} race_job_t;

static void *race_create(void *arg)
{
    race_job_t *j = arg;
    ls_stream_t *s = NULL;
    j->st = create(NULL, "contended", 1, &s);
    j->stream_no = s ? s->stream_no : 0;
    ls_stream_release(s);
    return NULL;
}

TEST(concurrent_create_one_wins)
{
    race_job_t jobs[6];
    pthread_t th[6];
    for (int i = 0; i < 6; i++)
        pthread_create(&th[i], NULL, race_create, &jobs[i]);
    int ok = 0, exists = 0;
    for (int i = 0; i < 6; i++) {
        pthread_join(th[i], NULL);
        ok += jobs[i].st == LS_OK;
        exists += jobs[i].st == LS_EEXISTS;
    }
    CHECK_EQ_INT(ok, 1);
    CHECK_EQ_INT(exists, 5);
}

/* Another catalog over the same store reaches the same state. */
static int same_state(ls_catalog_t *a, ls_catalog_t *b)
{
    int na, nb;
    ls_stream_t **va = ls_catalog_list(a, NULL, &na), **vb = ls_catalog_list(b, NULL, &nb);
    int ok = na == nb;
    for (int i = 0; ok && i < na; i++) {
        ok = strcmp(va[i]->ns, vb[i]->ns) == 0 && strcmp(va[i]->name, vb[i]->name) == 0 &&
             memcmp(va[i]->id.b, vb[i]->id.b, 16) == 0 && va[i]->stream_no == vb[i]->stream_no &&
             va[i]->partitions == vb[i]->partitions && va[i]->nconfig == vb[i]->nconfig &&
             va[i]->mod_rev == vb[i]->mod_rev && va[i]->created_ms == vb[i]->created_ms;
        for (int k = 0; ok && k < va[i]->nconfig; k++)
            ok = strcmp(va[i]->config[k].key, vb[i]->config[k].key) == 0 &&
                 strcmp(va[i]->config[k].value, vb[i]->config[k].value) == 0;
    }
    ls_stream_list_release(va, na);
    ls_stream_list_release(vb, nb);
    return ok;
}

TEST(reload_sees_same_state)
{
    char err[256];
    ls_catalog_t *other = ls_catalog_open(M, err, sizeof err);
    CHECK(other != NULL);
    int ok = same_state(C, other);
    /* a change made through one catalog reaches the other through its watch
     * (as another broker's would), and a reload agrees */
    ok = ok && ls_catalog_create(other, NULL, "from-other", 7, NULL, 0, 0, NULL, err, sizeof err) ==
                   LS_OK;
    ok = ok && ls_catalog_drop(other, NULL, "zeta", NULL) == LS_OK;
    ls_stream_t *s = NULL, *gone = NULL;
    for (int i = 0; i < 500; i++) {
        ls_stream_release(s);
        ls_stream_release(gone);
        s = ls_catalog_lookup(C, NULL, "from-other");
        gone = ls_catalog_lookup(C, NULL, "zeta");
        if (s && !gone) break;
        usleep(10000);
    }
    ok = ok && s && s->partitions == 7 && !gone;
    ls_stream_release(s);
    ls_stream_release(gone);
    ok = ok && same_state(C, other);
    ok = ok && ls_catalog_reload(C) == LS_OK;
    ok = ok && same_state(C, other);
    ls_catalog_close(other);
    CHECK(ok);
}

TEST(reload_pages_through_many)
{
    /* more streams than one reload scan page */
    char name[32];
    for (int i = 0; i < 600; i++) {
        snprintf(name, sizeof name, "bulk-%04d", i);
        CHECK_EQ_INT(create("bulk", name, 1, NULL), LS_OK);
    }
    CHECK_EQ_INT(ls_catalog_reload(C), LS_OK);
    int n;
    ls_stream_t **v = ls_catalog_list(C, "bulk", &n);
    int ok = n == 600 && strcmp(v[599]->name, "bulk-0599") == 0;
    ls_stream_list_release(v, n);
    CHECK(ok);
}

TEST(corrupt_record_is_skipped)
{
    const char *junk = "{not json";
    CHECK_EQ_INT(ls_meta_put(M, "/ls/stream/default/broken", junk, strlen(junk)), LS_OK);
    ls_diag_set_level(LS_DIAG_ERROR + 1); /* the ERROR line is expected */
    ls_status st = ls_catalog_reload(C);
    ls_diag_set_level(LS_DIAG_ERROR);
    CHECK_EQ_INT(st, LS_OK);
    CHECK(ls_catalog_lookup(C, NULL, "broken") == NULL);
    ls_stream_t *s = ls_catalog_lookup(C, NULL, "grow");
    int ok = s != NULL;
    ls_stream_release(s);
    CHECK(ok);
    CHECK_EQ_INT(ls_meta_del(M, "/ls/stream/default/broken"), LS_OK);
}

static void run_suite(void)
{
    RUN(create_and_lookup);
    RUN(create_existing);
    RUN(invalid_requests);
    RUN(validate_only_writes_nothing);
    RUN(list_sorted);
    RUN(drop_tombstone_recreate);
    RUN(add_partitions_only_grows);
    RUN(set_config_replaces);
    RUN(concurrent_create_one_wins);
    RUN(reload_sees_same_state);
    RUN(reload_pages_through_many);
    RUN(corrupt_record_is_skipped);
}

static char db_path[300];
static ls_catalog_t *C_closed; /* the sqlite suite's catalog; its store is closed */

/* C_closed keeps its in-memory copy after its store closed; a catalog opened
 * on the reopened file must match it exactly. */
TEST(sqlite_reopen_same_state)
{
    char err[256];
    ls_catalog_t *before = C_closed;
    ls_meta_t *m2 = ls_meta_sqlite_open(db_path, err, sizeof err);
    CHECK(m2 != NULL);
    ls_catalog_t *after = ls_catalog_open(m2, err, sizeof err);
    int ok = after != NULL && same_state(before, after);
    /* the counter persisted too: a new stream gets a fresh number */
    ls_stream_t *s = NULL;
    int nbefore;
    ls_stream_t **v = ls_catalog_list(before, NULL, &nbefore);
    int64_t maxno = 0;
    for (int i = 0; i < nbefore; i++)
        if (v[i]->stream_no > maxno) maxno = v[i]->stream_no;
    ls_stream_list_release(v, nbefore);
    ok = ok &&
         ls_catalog_create(after, NULL, "post-reopen", 1, NULL, 0, 0, &s, err, sizeof err) == LS_OK;
    ok = ok && s && s->stream_no > maxno;
    ls_stream_release(s);
    ls_catalog_close(after);
    ls_meta_close(m2);
    CHECK(ok);
}

int main(void)
{
    ls_diag_set_level(LS_DIAG_WARN);
    ls_check_invariants_enable(true); /* reloads and watched changes check the map */
    char err[256];

    printf("# meta backend mem\n");
    M = ls_meta_mem_open();
    C = ls_catalog_open(M, err, sizeof err);
    if (!C) {
        printf("FAIL open catalog: %s\n", err);
        return 1;
    }
    run_suite();
    ls_catalog_close(C);
    ls_meta_close(M);

    char tmpl[] = "/tmp/ls_catalog_XXXXXX";
    if (!mkdtemp(tmpl)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(db_path, sizeof db_path, "%s/meta.db", tmpl);
    printf("# meta backend sqlite (%s)\n", db_path);
    M = ls_meta_sqlite_open(db_path, err, sizeof err);
    C = M ? ls_catalog_open(M, err, sizeof err) : NULL;
    if (!C) {
        printf("FAIL open sqlite catalog: %s\n", err);
        return 1;
    }
    run_suite();
    /* a second handle on the file sees what the first committed; the first
     * catalog (which watches its store) closes before its store */
    C_closed = C;
    RUN(sqlite_reopen_same_state);
    ls_catalog_close(C_closed);
    ls_meta_close(M);
    M = NULL;

    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpl);
    if (system(cmd) != 0) printf("# could not remove %s\n", tmpl);
    UNIT_DONE();
}
