/* Iceberg REST commit bodies: see rest_commit.h. The update and requirement
 * shapes follow the REST catalog's OpenAPI document (TableUpdate,
 * TableRequirement) of apache/iceberg open-api/rest-catalog-open-api.yaml. */
#include "table/rest_commit.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/alloc.h"
#include "table/iceberg_table.h"
#include <string.h>

static int64_t int_or(const json_t *o, const char *key, int64_t def)
{
    const json_t *v = json_object_get(o, key);
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : def;
}

int64_t ls_rest_main_snapshot(const json_t *metadata)
{
    const json_t *main = json_object_get(json_object_get(metadata, "refs"), "main");
    if (main) return int_or(main, "snapshot-id", -1);
    int64_t id = int_or(metadata, "current-snapshot-id", -1);
    return id < 0 ? -1 : id;
}

static const json_t *by_id(const json_t *arr, const char *key, int64_t id)
{
    size_t i;
    const json_t *v;
    json_array_foreach(arr, i, v)
    {
        if (int_or(v, key, -2) == id) return v;
    }
    return NULL;
}

static json_t *update(const char *action) { return json_pack("{s:s}", "action", action); }

/* add-<what> for each of our objects (schemas, specs) whose id theirs lacks,
 * then set-<current> when the current ids differ. */
static void add_missing(json_t *updates, const json_t *ours, const json_t *theirs, const char *list,
                        const char *id_key, const char *add_action, const char *obj_key,
                        const char *cur_key, const char *set_action, const char *set_key)
{
    const json_t *mine = json_object_get(ours, list), *have = json_object_get(theirs, list);
    size_t i;
    const json_t *v;
    json_array_foreach(mine, i, v)
    {
        int64_t id = int_or(v, id_key, -1);
        if (by_id(have, id_key, id)) continue;
        json_t *u = update(add_action);
        json_object_set_new(u, obj_key, json_deep_copy(v));
        if (strcmp(add_action, "add-schema") == 0)
            json_object_set_new(u, "last-column-id",
                                json_integer(int_or(ours, "last-column-id", 0)));
        json_array_append_new(updates, u);
    }
    int64_t cur = int_or(ours, cur_key, -1);
    if (cur >= 0 && cur != int_or(theirs, cur_key, -1)) {
        json_t *u = update(set_action);
        json_object_set_new(u, set_key, json_integer(cur));
        json_array_append_new(updates, u);
    }
}

/* Snapshots of the catalog's main lineage (from its main back through the
 * catalog's parent links) that our metadata no longer has: ours, expired
 * since (main's lineage in the catalog holds nothing but ours, we never add
 * another writer's). Those another ref than main names stay. */
static json_t *expired_by_us(const json_t *ours, const json_t *theirs, int64_t base_main)
{
    const json_t *snaps = json_object_get(ours, "snapshots");
    const json_t *theirs_snaps = json_object_get(theirs, "snapshots");
    json_t *refs = json_object_get(theirs, "refs");
    json_t *ids = json_array();
    size_t guard = json_array_size(theirs_snaps);
    for (int64_t id = base_main; id >= 0 && guard-- > 0;) {
        const json_t *s = by_id(theirs_snaps, "snapshot-id", id);
        if (!s) break;
        bool named = false;
        const char *name;
        json_t *ref;
        json_object_foreach(refs, name, ref)
        {
            if (strcmp(name, "main") != 0 && int_or(ref, "snapshot-id", -2) == id) named = true;
        }
        if (!by_id(snaps, "snapshot-id", id) && !named)
            json_array_append_new(ids, json_integer(id));
        id = int_or(s, "parent-snapshot-id", -1);
    }
    return ids;
}

static json_t *requirements(const char *uuid, int64_t base_main)
{
    json_t *reqs = json_array();
    json_array_append_new(reqs, json_pack("{s:s, s:s}", "type", "assert-table-uuid", "uuid", uuid));
    json_array_append_new(reqs, json_pack("{s:s, s:s, s:o}", "type", "assert-ref-snapshot-id",
                                          "ref", "main", "snapshot-id",
                                          base_main < 0 ? json_null() : json_integer(base_main)));
    return reqs;
}

/* Our table properties into updates: a set-properties of those the
 * catalog's copy lacks or holds otherwise (write.metadata.path: where the
 * catalog writes its metadata files, metadata_path), and a
 * remove-properties of our keys (lakestream.*) it still holds that we
 * dropped; other keys there are another writer's and stay. The files
 * awaiting deletion are our bookkeeping, never mirrored. */
static void property_updates(const json_t *ours, const json_t *theirs, const char *metadata_path,
                             json_t *updates)
{
    const json_t *mine = json_object_get(ours, "properties");
    const json_t *have = json_object_get(theirs, "properties");
    json_t *set = json_object(), *gone = json_array();
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)mine, k, v)
    {
        const char *theirs_v = json_string_value(json_object_get(have, k));
        if (json_is_string(v) && strcmp(k, LS_ICE_PENDING_DELETES_KEY) != 0 &&
            (!theirs_v || strcmp(theirs_v, json_string_value(v)) != 0))
            json_object_set(set, k, v);
    }
    const char *path = json_string_value(json_object_get(have, "write.metadata.path"));
    if (metadata_path && (!path || strcmp(path, metadata_path) != 0))
        json_object_set_new(set, "write.metadata.path", json_string(metadata_path));
    json_object_foreach((json_t *)have, k, v)
    {
        if (!strncmp(k, LS_ICE_CARRY_PREFIX, strlen(LS_ICE_CARRY_PREFIX)) &&
            !json_object_get(mine, k))
            json_array_append_new(gone, json_string(k));
    }
    if (json_object_size(set))
        json_array_append_new(updates,
                              json_pack("{s:s, s:O}", "action", "set-properties", "updates", set));
    if (json_array_size(gone))
        json_array_append_new(
            updates, json_pack("{s:s, s:O}", "action", "remove-properties", "removals", gone));
    json_decref(set);
    json_decref(gone);
}

int ls_rest_commit_plan(const json_t *ours, const json_t *theirs, const char *metadata_path,
                        ls_rest_plan_t *out)
{
    memset(out, 0, sizeof *out);
    const char *uuid = json_string_value(json_object_get(ours, "table-uuid"));
    const json_t *snaps = json_object_get(ours, "snapshots");
    if (!uuid || (snaps && !json_is_array(snaps))) {
        snprintf(out->why, sizeof out->why, "our metadata has no table-uuid or snapshots");
        return -1;
    }
    const char *their_uuid = json_string_value(json_object_get(theirs, "table-uuid"));
    out->our_main = ls_rest_main_snapshot(ours);
    out->base_main = ls_rest_main_snapshot(theirs);
    if (!their_uuid || strcmp(their_uuid, uuid) != 0) {
        out->kind = LS_REST_DIVERGED;
        snprintf(out->why, sizeof out->why,
                 "the catalog's table has table-uuid %s, ours is %s (another table under the "
                 "name)",
                 their_uuid ? their_uuid : "(none)", uuid);
        return 0;
    }
    if (out->base_main == out->our_main) {
        /* no new snapshot: properties that changed, snapshots we expired */
        json_t *updates = json_array();
        property_updates(ours, theirs, metadata_path, updates);
        json_t *gone = expired_by_us(ours, theirs, out->base_main);
        out->removed_snapshots = (int)json_array_size(gone);
        if (out->removed_snapshots)
            json_array_append_new(updates, json_pack("{s:s, s:o}", "action", "remove-snapshots",
                                                     "snapshot-ids", gone));
        else
            json_decref(gone);
        if (!json_array_size(updates)) {
            json_decref(updates);
            out->kind = LS_REST_IN_SYNC;
            return 0;
        }
        out->body = json_pack("{s:o, s:o}", "requirements", requirements(uuid, out->base_main),
                              "updates", updates);
        out->kind = LS_REST_COMMIT;
        return 0;
    }
    /* our history from the current snapshot back to theirs (newest first) */
    const json_t *theirs_snaps = json_object_get(theirs, "snapshots");
    size_t cap = json_array_size(snaps) + 1, n = 0;
    const json_t **chain = ls_calloc(cap, sizeof *chain);
    bool found = out->base_main < 0;
    for (int64_t id = out->our_main; id >= 0 && n < cap;) {
        if (id == out->base_main) {
            found = true;
            break;
        }
        const json_t *s = by_id(snaps, "snapshot-id", id);
        if (!s) break; /* expired from our metadata: older ones are unknown */
        chain[n++] = s;
        id = int_or(s, "parent-snapshot-id", -1);
    }
    /* the catalog's main may be a snapshot of ours we have expired since it
     * had it: our ancestor if the catalog's own copies of our snapshots
     * lead from where our history stops to it */
    size_t guard = json_array_size(theirs_snaps);
    for (int64_t id = n ? int_or(chain[n - 1], "parent-snapshot-id", -1) : -1;
         !found && id >= 0 && guard-- > 0;) {
        if (id == out->base_main) {
            found = true;
            break;
        }
        const json_t *s = by_id(theirs_snaps, "snapshot-id", id);
        if (!s) break;
        id = int_or(s, "parent-snapshot-id", -1);
    }
    if (!found) {
        ls_free(chain);
        out->kind = LS_REST_DIVERGED;
        snprintf(out->why, sizeof out->why,
                 "the catalog's main branch is snapshot %lld, which is not in this table's "
                 "history (another writer committed to it)",
                 (long long)out->base_main);
        return 0;
    }
    json_t *updates = json_array();
    property_updates(ours, theirs, metadata_path, updates);
    json_int_t fv = json_integer_value(json_object_get(ours, "format-version"));
    if (fv > json_integer_value(json_object_get(theirs, "format-version")))
        json_array_append_new(updates, json_pack("{s:s, s:I}", "action", "upgrade-format-version",
                                                 "format-version", fv));
    add_missing(updates, ours, theirs, "schemas", "schema-id", "add-schema", "schema",
                "current-schema-id", "set-current-schema", "schema-id");
    add_missing(updates, ours, theirs, "partition-specs", "spec-id", "add-spec", "spec",
                "default-spec-id", "set-default-spec", "spec-id");
    for (size_t i = n; i-- > 0;) {
        int64_t id = int_or(chain[i], "snapshot-id", -1);
        if (by_id(theirs_snaps, "snapshot-id", id)) continue; /* main was moved back */
        json_t *u = update("add-snapshot");
        json_object_set_new(u, "snapshot", json_deep_copy(chain[i]));
        json_array_append_new(updates, u);
        out->added_snapshots++;
    }
    ls_free(chain);
    json_array_append_new(updates, json_pack("{s:s, s:s, s:s, s:I}", "action", "set-snapshot-ref",
                                             "ref-name", "main", "type", "branch", "snapshot-id",
                                             (json_int_t)out->our_main));
    json_t *gone = expired_by_us(ours, theirs, out->base_main);
    out->removed_snapshots = (int)json_array_size(gone);
    if (out->removed_snapshots) /* after main moved off them */
        json_array_append_new(
            updates, json_pack("{s:s, s:o}", "action", "remove-snapshots", "snapshot-ids", gone));
    else
        json_decref(gone);
    json_t *reqs = requirements(uuid, out->base_main);
    out->body = json_pack("{s:o, s:o}", "requirements", reqs, "updates", updates);
    out->kind = LS_REST_COMMIT;
    return 0;
}

void ls_rest_plan_clear(ls_rest_plan_t *p)
{
    if (p->body) json_decref(p->body);
    memset(p, 0, sizeof *p);
}

json_t *ls_rest_register_body(const char *name, const char *metadata_location)
{
    return json_pack("{s:s, s:s}", "name", name, "metadata-location", metadata_location);
}

json_t *ls_rest_namespace_body(const char *ns)
{
    return json_pack("{s:[s], s:{}}", "namespace", ns, "properties");
}
