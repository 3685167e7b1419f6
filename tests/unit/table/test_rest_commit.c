/* Iceberg REST commit bodies (table/rest_commit.h): what the catalog sync
 * sends an external catalog, from our metadata and the catalog's copy. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "table/iceberg_table.h"
#include "table/rest_commit.h"
#include "unit.h"

/* Our table: schemas 0 and 1 (1 current), spec 0, snapshots 10 <- 11 <- 12. */
static json_t *ours(void)
{
    json_error_t e;
    json_t *j = json_loads(
        "{\"format-version\":2,\"table-uuid\":\"u-1\",\"location\":\"file:///w/t\","
        "\"last-column-id\":5,\"current-schema-id\":1,"
        "\"schemas\":[{\"type\":\"struct\",\"schema-id\":0,\"fields\":[]},"
        "{\"type\":\"struct\",\"schema-id\":1,\"fields\":[{\"id\":5,\"name\":\"v\","
        "\"required\":false,\"type\":\"string\"}]}],"
        "\"default-spec-id\":0,\"partition-specs\":[{\"spec-id\":0,\"fields\":[]}],"
        "\"current-snapshot-id\":12,"
        "\"refs\":{\"main\":{\"snapshot-id\":12,\"type\":\"branch\"}},"
        "\"snapshots\":["
        "{\"snapshot-id\":10,\"sequence-number\":1,\"manifest-list\":\"m10\",\"schema-id\":0},"
        "{\"snapshot-id\":11,\"parent-snapshot-id\":10,\"sequence-number\":2,"
        "\"manifest-list\":\"m11\",\"schema-id\":0,\"summary\":{\"operation\":\"append\"}},"
        "{\"snapshot-id\":12,\"parent-snapshot-id\":11,\"sequence-number\":3,"
        "\"manifest-list\":\"m12\",\"schema-id\":1}]}",
        0, &e);
    return j;
}

/* The catalog's copy as of our snapshot `main` with schema 0 only. */
static json_t *theirs(int64_t main)
{
    json_t *t = ours();
    json_object_set_new(t, "current-schema-id", json_integer(0));
    json_array_remove(json_object_get(t, "schemas"), 1);
    json_t *snaps = json_object_get(t, "snapshots");
    while (json_array_size(snaps) &&
           json_integer_value(json_object_get(json_array_get(snaps, json_array_size(snaps) - 1),
                                              "snapshot-id")) > main)
        json_array_remove(snaps, json_array_size(snaps) - 1);
    json_object_set_new(t, "current-snapshot-id", json_integer(main));
    json_object_set_new(json_object_get(json_object_get(t, "refs"), "main"), "snapshot-id",
                        json_integer(main));
    return t;
}

static const char *action(const json_t *body, size_t i)
{
    return json_string_value(
        json_object_get(json_array_get(json_object_get(body, "updates"), i), "action"));
}

TEST(behind_commits_what_it_lacks)
{
    json_t *o = ours(), *t = theirs(10);
    ls_rest_plan_t p;
    CHECK_EQ_INT(ls_rest_commit_plan(o, t, NULL, &p), 0);
    CHECK_EQ_INT(p.kind, LS_REST_COMMIT);
    CHECK_EQ_INT(p.added_snapshots, 2);
    CHECK(p.base_main == 10 && p.our_main == 12);
    /* schema 1 first, made current, then snapshots oldest first, then main */
    json_t *u = json_object_get(p.body, "updates");
    CHECK_EQ_INT((int)json_array_size(u), 5);
    CHECK(!strcmp(action(p.body, 0), "add-schema"));
    CHECK_EQ_INT((int)json_integer_value(
                     json_object_get(json_object_get(json_array_get(u, 0), "schema"), "schema-id")),
                 1);
    CHECK_EQ_INT((int)json_integer_value(json_object_get(json_array_get(u, 0), "last-column-id")),
                 5);
    CHECK(!strcmp(action(p.body, 1), "set-current-schema"));
    CHECK_EQ_INT((int)json_integer_value(json_object_get(json_array_get(u, 1), "schema-id")), 1);
    CHECK(!strcmp(action(p.body, 2), "add-snapshot"));
    const json_t *s11 = json_object_get(json_array_get(u, 2), "snapshot");
    CHECK_EQ_INT((int)json_integer_value(json_object_get(s11, "snapshot-id")), 11);
    /* copied as it is: manifest list, summary, parent */
    CHECK(!strcmp(json_string_value(json_object_get(s11, "manifest-list")), "m11"));
    CHECK_EQ_INT((int)json_integer_value(json_object_get(s11, "parent-snapshot-id")), 10);
    CHECK(json_object_get(json_object_get(s11, "summary"), "operation"));
    CHECK(!strcmp(action(p.body, 3), "add-snapshot"));
    CHECK(!strcmp(action(p.body, 4), "set-snapshot-ref"));
    const json_t *ref = json_array_get(u, 4);
    CHECK(!strcmp(json_string_value(json_object_get(ref, "ref-name")), "main"));
    CHECK(!strcmp(json_string_value(json_object_get(ref, "type")), "branch"));
    CHECK_EQ_INT((int)json_integer_value(json_object_get(ref, "snapshot-id")), 12);
    /* requirements: the same table, and main where the catalog had it */
    json_t *r = json_object_get(p.body, "requirements");
    CHECK_EQ_INT((int)json_array_size(r), 2);
    CHECK(!strcmp(json_string_value(json_object_get(json_array_get(r, 0), "type")),
                  "assert-table-uuid"));
    CHECK(!strcmp(json_string_value(json_object_get(json_array_get(r, 0), "uuid")), "u-1"));
    CHECK(!strcmp(json_string_value(json_object_get(json_array_get(r, 1), "type")),
                  "assert-ref-snapshot-id"));
    CHECK(!strcmp(json_string_value(json_object_get(json_array_get(r, 1), "ref")), "main"));
    CHECK_EQ_INT((int)json_integer_value(json_object_get(json_array_get(r, 1), "snapshot-id")), 10);
    ls_rest_plan_clear(&p);
    json_decref(o);
    json_decref(t);
}

/* Our table upgraded to format version 3 since the catalog's copy: the
 * upgrade goes first, then what it lacks. */
TEST(upgrade_goes_first)
{
    json_t *o = ours(), *t = theirs(10);
    json_object_set_new(o, "format-version", json_integer(3));
    ls_rest_plan_t p;
    CHECK_EQ_INT(ls_rest_commit_plan(o, t, NULL, &p), 0);
    CHECK_EQ_INT(p.kind, LS_REST_COMMIT);
    CHECK(!strcmp(action(p.body, 0), "upgrade-format-version"));
    CHECK_EQ_INT((int)json_integer_value(json_object_get(
                     json_array_get(json_object_get(p.body, "updates"), 0), "format-version")),
                 3);
    CHECK(!strcmp(action(p.body, 1), "add-schema"));
    ls_rest_plan_clear(&p);
    json_decref(o);
    json_decref(t);
}

TEST(in_sync_sends_nothing)
{
    json_t *o = ours(), *t = ours();
    ls_rest_plan_t p;
    CHECK_EQ_INT(ls_rest_commit_plan(o, t, NULL, &p), 0);
    CHECK_EQ_INT(p.kind, LS_REST_IN_SYNC);
    CHECK(!p.body);
    json_decref(o);
    json_decref(t);
}

/* A catalog copy without snapshots: everything, main asserted absent (null). */
TEST(empty_catalog_copy_gets_every_snapshot)
{
    json_t *o = ours(), *t = theirs(-1);
    json_object_del(json_object_get(t, "refs"), "main");
    ls_rest_plan_t p;
    CHECK_EQ_INT(ls_rest_commit_plan(o, t, NULL, &p), 0);
    CHECK_EQ_INT(p.kind, LS_REST_COMMIT);
    CHECK_EQ_INT(p.added_snapshots, 3);
    json_t *r = json_array_get(json_object_get(p.body, "requirements"), 1);
    CHECK(json_is_null(json_object_get(r, "snapshot-id")));
    ls_rest_plan_clear(&p);
    json_decref(o);
    json_decref(t);
}

/* Another writer's snapshot at main, or another table under the name:
 * nothing to send, the reason says why (we never overwrite it). */
TEST(diverged_is_never_overwritten)
{
    json_t *o = ours(), *t = theirs(11);
    json_array_append_new(json_object_get(t, "snapshots"),
                          json_pack("{s:I, s:I, s:I, s:s}", "snapshot-id", (json_int_t)99,
                                    "parent-snapshot-id", (json_int_t)11, "sequence-number",
                                    (json_int_t)3, "manifest-list", "theirs"));
    json_object_set_new(json_object_get(json_object_get(t, "refs"), "main"), "snapshot-id",
                        json_integer(99));
    ls_rest_plan_t p;
    CHECK_EQ_INT(ls_rest_commit_plan(o, t, NULL, &p), 0);
    CHECK_EQ_INT(p.kind, LS_REST_DIVERGED);
    CHECK(!p.body);
    CHECK(strstr(p.why, "snapshot 99") && strstr(p.why, "another writer"));
    json_decref(t);
    t = ours();
    json_object_set_new(t, "table-uuid", json_string("u-2"));
    CHECK_EQ_INT(ls_rest_commit_plan(o, t, NULL, &p), 0);
    CHECK_EQ_INT(p.kind, LS_REST_DIVERGED);
    CHECK(strstr(p.why, "table-uuid u-2") && strstr(p.why, "ours is u-1"));
    json_decref(o);
    json_decref(t);
}

/* main moved back to an older snapshot of ours: nothing is added twice. */
TEST(main_moved_back_only_moves_the_ref)
{
    json_t *o = ours(), *t = ours();
    json_object_set_new(json_object_get(json_object_get(t, "refs"), "main"), "snapshot-id",
                        json_integer(11));
    ls_rest_plan_t p;
    CHECK_EQ_INT(ls_rest_commit_plan(o, t, NULL, &p), 0);
    CHECK_EQ_INT(p.kind, LS_REST_COMMIT);
    CHECK_EQ_INT(p.added_snapshots, 0);
    CHECK_EQ_INT((int)json_array_size(json_object_get(p.body, "updates")), 1);
    CHECK(!strcmp(action(p.body, 0), "set-snapshot-ref"));
    ls_rest_plan_clear(&p);
    json_decref(o);
    json_decref(t);
}

/* The catalog's own metadata files go to the folder we name, set once. */
TEST(metadata_path_set_when_it_differs)
{
    json_t *o = ours(), *t = theirs(11);
    ls_rest_plan_t p;
    CHECK_EQ_INT(ls_rest_commit_plan(o, t, "file:///w/t/metadata/catalogs/c1", &p), 0);
    CHECK(!strcmp(action(p.body, 0), "set-properties"));
    const json_t *u = json_array_get(json_object_get(p.body, "updates"), 0);
    CHECK(!strcmp(
        json_string_value(json_object_get(json_object_get(u, "updates"), "write.metadata.path")),
        "file:///w/t/metadata/catalogs/c1"));
    ls_rest_plan_clear(&p);
    json_object_set_new(
        t, "properties",
        json_pack("{s:s}", "write.metadata.path", "file:///w/t/metadata/catalogs/c1"));
    CHECK_EQ_INT(ls_rest_commit_plan(o, t, "file:///w/t/metadata/catalogs/c1", &p), 0);
    CHECK(strcmp(action(p.body, 0), "set-properties") != 0);
    ls_rest_plan_clear(&p);
    json_decref(o);
    json_decref(t);
}

/* Our properties are mirrored: changed and new ones set, our dropped
 * lakestream.* keys removed, another writer's keys and our bookkeeping of
 * files awaiting deletion left alone; with no new snapshot too. */
TEST(properties_mirrored)
{
    json_t *o = ours(), *t = ours();
    json_object_set_new(o, "properties",
                        json_pack("{s:s, s:s, s:s}", "lakestream.log.1.last-offset", "9",
                                  "write.metadata.previous-versions-max", "10",
                                  LS_ICE_PENDING_DELETES_KEY, "[]"));
    json_object_set_new(t, "properties",
                        json_pack("{s:s, s:s, s:s}", "lakestream.log.1.last-offset", "5",
                                  "lakestream.log.2.last-offset", "3", "owner", "spark"));
    ls_rest_plan_t p;
    CHECK_EQ_INT(ls_rest_commit_plan(o, t, NULL, &p), 0);
    CHECK_EQ_INT(p.kind, LS_REST_COMMIT);
    CHECK(!strcmp(action(p.body, 0), "set-properties"));
    const json_t *set =
        json_object_get(json_array_get(json_object_get(p.body, "updates"), 0), "updates");
    CHECK_EQ_INT((int)json_object_size(set), 2);
    CHECK(!strcmp(json_string_value(json_object_get(set, "lakestream.log.1.last-offset")), "9"));
    CHECK(json_object_get(set, "write.metadata.previous-versions-max"));
    CHECK(!strcmp(action(p.body, 1), "remove-properties"));
    const json_t *rm =
        json_object_get(json_array_get(json_object_get(p.body, "updates"), 1), "removals");
    CHECK_EQ_INT((int)json_array_size(rm), 1);
    CHECK(!strcmp(json_string_value(json_array_get(rm, 0)), "lakestream.log.2.last-offset"));
    ls_rest_plan_clear(&p);
    /* the same properties: in sync */
    json_object_set_new(t, "properties", json_deep_copy(json_object_get(o, "properties")));
    json_object_del(json_object_get(t, "properties"), LS_ICE_PENDING_DELETES_KEY);
    CHECK_EQ_INT(ls_rest_commit_plan(o, t, NULL, &p), 0);
    CHECK_EQ_INT(p.kind, LS_REST_IN_SYNC);
    json_decref(o);
    json_decref(t);
}

/* Snapshots we have expired since the catalog got them (10, 11) are still
 * ours: the catalog's main at 11 is where our history stops; at 10 (rolled
 * back there) it is found through the catalog's copies of our parent links.
 * Another writer's snapshot whose parent is ours is not ours. */
TEST(main_expired_by_us_is_still_ours)
{
    json_t *o = ours();
    json_array_remove(json_object_get(o, "snapshots"), 0); /* we expired 10 and 11 */
    json_array_remove(json_object_get(o, "snapshots"), 0);
    ls_rest_plan_t p;
    for (int64_t main = 11; main >= 10; main--) {
        json_t *t = theirs(11);
        json_object_set_new(json_object_get(json_object_get(t, "refs"), "main"), "snapshot-id",
                            json_integer(main));
        CHECK_EQ_INT(ls_rest_commit_plan(o, t, NULL, &p), 0);
        CHECK_EQ_INT(p.kind, LS_REST_COMMIT);
        CHECK_EQ_INT(p.added_snapshots, 1); /* 12 */
        /* and those of main's lineage there (10, 11; 10 when main was
         * rolled back to it) go, after main moved to 12 */
        CHECK_EQ_INT(p.removed_snapshots, (int)(main - 9));
        json_t *u = json_object_get(p.body, "updates");
        const json_t *last = json_array_get(u, json_array_size(u) - 1);
        CHECK(!strcmp(json_string_value(json_object_get(last, "action")), "remove-snapshots"));
        CHECK_EQ_INT((int)json_array_size(json_object_get(last, "snapshot-ids")), (int)(main - 9));
        ls_rest_plan_clear(&p);
        json_decref(t);
    }
    json_t *t = theirs(11);
    json_array_append_new(json_object_get(t, "snapshots"),
                          json_pack("{s:I, s:I}", "snapshot-id", (json_int_t)99,
                                    "parent-snapshot-id", (json_int_t)10));
    json_object_set_new(json_object_get(json_object_get(t, "refs"), "main"), "snapshot-id",
                        json_integer(99));
    CHECK_EQ_INT(ls_rest_commit_plan(o, t, NULL, &p), 0);
    CHECK_EQ_INT(p.kind, LS_REST_DIVERGED);
    json_decref(o);
    json_decref(t);
}

/* In sync, after an expiry of ours: only remove-snapshots; a snapshot another
 * ref (a tag) names stays. */
TEST(expired_snapshots_removed_unless_named)
{
    json_t *o = ours(), *t = ours();
    json_array_remove(json_object_get(o, "snapshots"), 0); /* we expired 10 */
    ls_rest_plan_t p;
    CHECK_EQ_INT(ls_rest_commit_plan(o, t, NULL, &p), 0);
    CHECK_EQ_INT(p.kind, LS_REST_COMMIT);
    CHECK_EQ_INT(p.added_snapshots, 0);
    CHECK_EQ_INT(p.removed_snapshots, 1);
    json_t *u = json_object_get(p.body, "updates");
    CHECK_EQ_INT((int)json_array_size(u), 1);
    CHECK(!strcmp(action(p.body, 0), "remove-snapshots"));
    CHECK_EQ_INT((int)json_integer_value(
                     json_array_get(json_object_get(json_array_get(u, 0), "snapshot-ids"), 0)),
                 10);
    CHECK_EQ_INT((int)json_integer_value(json_object_get(
                     json_array_get(json_object_get(p.body, "requirements"), 1), "snapshot-id")),
                 12);
    ls_rest_plan_clear(&p);
    json_object_set_new(json_object_get(t, "refs"), "t1",
                        json_pack("{s:I, s:s}", "snapshot-id", (json_int_t)10, "type", "tag"));
    CHECK_EQ_INT(ls_rest_commit_plan(o, t, NULL, &p), 0);
    CHECK_EQ_INT(p.kind, LS_REST_IN_SYNC);
    json_decref(o);
    json_decref(t);
}

TEST(register_and_namespace_bodies)
{
    json_t *b = ls_rest_register_body("t1", "file:///w/t1/metadata/v3.metadata.json");
    char *s = json_dumps(b, JSON_COMPACT | JSON_SORT_KEYS);
    CHECK(!strcmp(s, "{\"metadata-location\":\"file:///w/t1/metadata/v3.metadata.json\","
                     "\"name\":\"t1\"}"));
    free(s);
    json_decref(b);
    b = ls_rest_namespace_body("default");
    s = json_dumps(b, JSON_COMPACT | JSON_SORT_KEYS);
    CHECK(!strcmp(s, "{\"namespace\":[\"default\"],\"properties\":{}}"));
    free(s);
    json_decref(b);
    /* not table metadata */
    json_t *bad = json_object();
    ls_rest_plan_t p;
    CHECK_EQ_INT(ls_rest_commit_plan(bad, bad, NULL, &p), -1);
    CHECK(strstr(p.why, "table-uuid"));
    json_decref(bad);
}

int main(void)
{
    RUN(behind_commits_what_it_lacks);
    RUN(upgrade_goes_first);
    RUN(in_sync_sends_nothing);
    RUN(empty_catalog_copy_gets_every_snapshot);
    RUN(diverged_is_never_overwritten);
    RUN(main_moved_back_only_moves_the_ref);
    RUN(metadata_path_set_when_it_differs);
    RUN(properties_mirrored);
    RUN(main_expired_by_us_is_still_ours);
    RUN(expired_snapshots_removed_unless_named);
    RUN(register_and_namespace_bodies);
    UNIT_DONE();
}
