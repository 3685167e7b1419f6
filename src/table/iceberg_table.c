/* Iceberg v2 table writer in the filesystem layout; see iceberg_table.h.
 *
 * State: the current metadata as a jansson tree (so fields we do not model
 * survive a commit untouched), its version N and location, the decoded
 * default partition spec and the committer (the catalog's commit point, if
 * any). A commit builds the next tree from a deep copy and only replaces the
 * state once the commit point has moved (see iceberg_table.h "Commit").
 *
 * Avro schemas follow spec.md "Manifests" / "Manifest Lists" with the spec's
 * fixed field ids; maps with int keys use Iceberg's array-of-key/value
 * records form (logicalType "map"). Manifest entries are written with
 * status ADDED, their snapshot id, and null sequence numbers (inherited from
 * the manifest list entry, spec "Sequence Number Inheritance"). */
#include "table/iceberg_table_int.h"

/* ---- metadata JSON helpers ---------------------------------------------- */

static json_t *spec_json(const ls_ice_spec_t *s)
{
    json_t *fields = json_array();
    for (int i = 0; i < s->nfields; i++) {
        const ls_ice_part_field_t *f = &s->fields[i];
        char tr[32];
        ls_ice_transform_text(f, tr, sizeof tr);
        json_array_append_new(fields,
                              json_pack("{s:s, s:s, s:i, s:i}", "name", f->name, "transform", tr,
                                        "source-id", f->source_id, "field-id", f->field_id));
    }
    return fields;
}

/* The field with id `id` among fields, searched through struct types only
 * (partition sources cannot be inside lists or maps: spec "Partitioning"). */
static json_t *field_by_id(json_t *fields, json_int_t id)
{
    json_t *sf;
    size_t k;
    json_array_foreach(fields, k, sf)
    {
        if (json_integer_value(json_object_get(sf, "id")) == id) return sf;
        json_t *ty = json_object_get(sf, "type");
        if (json_is_object(ty) && json_is_string(json_object_get(ty, "type")) &&
            !strcmp(json_string_value(json_object_get(ty, "type")), "struct")) {
            json_t *hit = field_by_id(json_object_get(ty, "fields"), id);
            if (hit) return hit;
        }
    }
    return NULL;
}

/* Rebuilds t->spec from the metadata's default spec and current schema. */
static ls_status load_spec(ls_ice_table_t *t)
{
    json_int_t spec_id = json_integer_value(json_object_get(t->meta, "default-spec-id"));
    json_int_t schema_id = json_integer_value(json_object_get(t->meta, "current-schema-id"));
    json_t *schema = NULL, *spec = NULL, *v;
    size_t i;
    json_array_foreach(json_object_get(t->meta, "schemas"), i,
                       v) if (json_integer_value(json_object_get(v, "schema-id")) == schema_id)
        schema = v;
    json_array_foreach(json_object_get(t->meta, "partition-specs"), i,
                       v) if (json_integer_value(json_object_get(v, "spec-id")) == spec_id) spec =
        v;
    if (!schema || !spec) {
        snprintf(t->err, sizeof t->err, "metadata: current schema or default spec missing");
        return LS_ECORRUPT;
    }
    memset(&t->spec, 0, sizeof t->spec);
    t->spec.spec_id = (int)spec_id;
    json_t *pf;
    json_array_foreach(json_object_get(spec, "fields"), i, pf)
    {
        if (i >= LS_ICE_MAX_PART) return LS_ELIMIT;
        ls_ice_part_field_t *f = &t->spec.fields[i];
        f->source_id = (int)json_integer_value(json_object_get(pf, "source-id"));
        f->field_id = (int)json_integer_value(json_object_get(pf, "field-id"));
        snprintf(f->name, sizeof f->name, "%s", json_string_value(json_object_get(pf, "name")));
        int tr =
            ls_ice_transform_parse2(json_string_value(json_object_get(pf, "transform")), &f->param);
        json_t *src = field_by_id(json_object_get(schema, "fields"), f->source_id);
        if (tr < 0 || !src ||
            ls_ice_type_parse(json_string_value(json_object_get(src, "type")), &f->source_type,
                              &f->prec, &f->scale, &f->flen) != 0 ||
            !ls_ice_transform_accepts((ls_ice_transform)tr, f->source_type)) {
            snprintf(t->err, sizeof t->err, "metadata: unsupported partition field %s", f->name);
            return LS_EINVAL;
        }
        f->transform = (ls_ice_transform)tr;
        t->spec.nfields++;
    }
    return LS_OK;
}

char *ls_ice_key_of(const ls_ice_table_t *t, const char *rel)
{
    return ls_asprintf("%s/%s", t->prefix, rel);
}

/* Key of a location under this table, or NULL when it lies elsewhere. */
static char *key_for_location(const ls_ice_table_t *t, const char *loc)
{
    size_t n = strlen(t->location);
    if (strncmp(loc, t->location, n) || loc[n] != '/') return NULL;
    return ls_ice_key_of(t, loc + n + 1);
}

ls_status ls_ice_put_bytes(ls_ice_table_t *t, const char *key, const void *p, size_t n, int flags)
{
    struct iovec iov = {(void *)p, n};
    ls_status st = ls_objstore_put(t->os, key, &iov, 1, flags);
    if (st != LS_OK) snprintf(t->err, sizeof t->err, "put %s: %s", key, ls_status_str(st));
    return st;
}

char *ls_ice_new_uuid(void)
{
    ls_uuid_t u;
    ls_uuid_random(&u);
    char *s = ls_malloc(37);
    ls_uuid_format(&u, s);
    return s;
}

/* Best-effort: a failure leaves a readable table (loaders probe onward). */
static void write_version_hint(ls_ice_table_t *t, int version)
{
    char hint[24];
    int n = snprintf(hint, sizeof hint, "%d", version);
    char *key = ls_ice_key_of(t, "metadata/version-hint.text");
    ls_ice_put_bytes(t, key, hint, (size_t)n, 0);
    ls_free(key);
}

/* Stores `meta` as version `version` and moves the commit point (see the
 * header). On LS_OK *rel_out is the new file's name under the prefix. */
static ls_status write_metadata(ls_ice_table_t *t, json_t *meta, int version, char **rel_out)
{
    char vrel[64];
    snprintf(vrel, sizeof vrel, "metadata/v%d.metadata.json", version);
    char *text = json_dumps(meta, JSON_COMPACT | JSON_REAL_PRECISION(17));
    size_t len = strlen(text);
    ls_status st;
    char *rel;
    if (!t->committer.commit) {
        rel = ls_strdup(vrel);
        char *key = ls_ice_key_of(t, rel);
        st = ls_ice_put_bytes(t, key, text, len, LS_OBJSTORE_PUT_CREATE_ONLY);
        ls_free(key);
        if (st == LS_EEXISTS && version > 1) {
            snprintf(t->err, sizeof t->err, "%s exists: concurrent commit", vrel);
            st = LS_ECONFLICT;
        }
    } else {
        char *u = ls_ice_new_uuid();
        rel = ls_asprintf("metadata/%05d-%s.metadata.json", version, u);
        ls_free(u);
        char *key = ls_ice_key_of(t, rel);
        st = ls_ice_put_bytes(t, key, text, len, LS_OBJSTORE_PUT_CREATE_ONLY);
        if (st == LS_OK) {
            ls_crashpoint("table.metadata_written");
            char *loc = ls_asprintf("%s/%s", t->location, rel);
            t->err[0] = 0;
            st = t->committer.commit(t->committer.arg, version, loc, key, t->err, sizeof t->err);
            ls_free(loc);
            if (st == LS_ECONFLICT)
                ls_objstore_del(t->os, key); /* never current: nobody reads it */
            else if (st != LS_OK && !t->err[0])
                snprintf(t->err, sizeof t->err, "commit of %s: %s", key, ls_status_str(st));
        }
        if (st == LS_OK) {
            ls_crashpoint("table.pointer_swapped");
            /* publish for path readers; only committed metadata gets a v<N>
             * name: the same file without writing it again where the store
             * copies (a hard link on a local store, CopyObject on S3), else
             * the bytes again */
            char *vkey = ls_ice_key_of(t, vrel);
            ls_status ps = ls_objstore_copies(t->os) ? ls_objstore_copy(t->os, key, vkey)
                                                     : ls_ice_put_bytes(t, vkey, text, len, 0);
            ls_free(vkey);
            if (ps != LS_OK) version = 0; /* no hint pointing at a missing file */
        }
        ls_free(key);
    }
    free(text);
    if (st != LS_OK) {
        ls_free(rel);
        return st;
    }
    if (version > 0) write_version_hint(t, version);
    *rel_out = rel;
    return LS_OK;
}

static void set_meta_location(ls_ice_table_t *t, const char *rel)
{
    ls_free(t->meta_location);
    t->meta_location = ls_asprintf("%s/%s", t->location, rel);
}

static ls_ice_table_t *table_new(ls_objstore_t *os, const char *prefix,
                                 const ls_ice_committer_t *committer)
{
    ls_ice_table_t *t = LS_NEW(ls_ice_table_t);
    t->os = os;
    t->prefix = ls_strdup(prefix);
    if (committer) t->committer = *committer;
    return t;
}

ls_status ls_ice_table_create(ls_objstore_t *os, const char *prefix, const char *location,
                              const char *schema_json, int last_column_id,
                              const ls_ice_spec_t *spec, const char *const *props,
                              const ls_ice_committer_t *committer, ls_ice_table_t **out, char *err,
                              size_t errlen)
{
    *out = NULL;
    json_error_t je;
    json_t *schema = json_loads(schema_json, 0, &je);
    if (!schema || !json_is_object(schema)) {
        snprintf(err, errlen, "schema is not a JSON object: %s", je.text);
        json_decref(schema);
        if (committer && committer->release) committer->release(committer->arg);
        return LS_EINVAL;
    }
    if (!json_object_get(schema, "schema-id"))
        json_object_set_new(schema, "schema-id", json_integer(0));
    ls_ice_table_t *t = table_new(os, prefix, committer);
    t->location = ls_strdup(location);
    ls_uuid_t u;
    ls_uuid_random(&u);
    char uuid[37];
    ls_uuid_format(&u, uuid);
    json_t *properties = json_object();
    int fv = 2;
    for (size_t i = 0; props && props[i] && props[i + 1]; i += 2)
        if (!strcmp(props[i], LS_ICE_FORMAT_VERSION_PROP)) /* not a stored property */
            fv = atoi(props[i + 1]);
        else
            json_object_set_new(properties, props[i], json_string(props[i + 1]));
    if (fv != 2 && fv != 3) {
        snprintf(err, errlen, "format-version %d: this writer writes 2 or 3", fv);
        json_decref(properties);
        json_decref(schema);
        ls_ice_table_free(t); /* releases the committer */
        return LS_EINVAL;
    }
    int last_pid = 999;
    for (int i = 0; i < spec->nfields; i++)
        if (spec->fields[i].field_id > last_pid) last_pid = spec->fields[i].field_id;
    t->meta = json_pack(
        "{s:i, s:s, s:s, s:i, s:I, s:i, s:i, s:[o], s:i, s:[{s:i, s:o}], s:i, s:i, s:[{s:i, s:[]}],"
        " s:o, s:[], s:[], s:[], s:{}}",
        "format-version", fv, "table-uuid", uuid, "location", location, "last-sequence-number", 0,
        "last-updated-ms", (json_int_t)ls_clock_wall_ms(), "last-column-id", last_column_id,
        "current-schema-id", (int)json_integer_value(json_object_get(schema, "schema-id")),
        "schemas", schema, "default-spec-id", spec->spec_id, "partition-specs", "spec-id",
        spec->spec_id, "fields", spec_json(spec), "last-partition-id", last_pid,
        "default-sort-order-id", 0, "sort-orders", "order-id", 0, "fields", "properties",
        properties, "snapshots", "snapshot-log", "metadata-log", "refs");
    if (!t->meta) {
        snprintf(err, errlen, "cannot build table metadata");
        ls_ice_table_free(t);
        return LS_EINVAL;
    }
    if (fv >= 3) json_object_set_new(t->meta, "next-row-id", json_integer(0));
    t->version = 1;
    char *rel = NULL;
    ls_status st = load_spec(t);
    if (st == LS_OK) st = write_metadata(t, t->meta, 1, &rel);
    if (st == LS_ECONFLICT) st = LS_EEXISTS; /* the catalog has the table already */
    if (st != LS_OK) {
        snprintf(err, errlen, "%s", t->err);
        ls_ice_table_free(t);
        return st;
    }
    set_meta_location(t, rel);
    ls_free(rel);
    *out = t;
    return LS_OK;
}

static ls_status get_text(ls_objstore_t *os, const char *key, ls_buf_t *b)
{
    b->len = 0;
    ls_status st = ls_objstore_get(os, key, 0, UINT64_MAX, b);
    if (st == LS_OK) ls_buf_append_u8(b, 0);
    return st;
}

/* Reads and checks the metadata file rel (under the prefix) as `version`. */
static ls_status load_metadata(ls_ice_table_t *t, const char *rel, int version, ls_buf_t *b)
{
    char *key = ls_ice_key_of(t, rel);
    ls_status st = get_text(t->os, key, b);
    ls_free(key);
    if (st != LS_OK) return st;
    json_error_t je;
    t->meta = json_loads((char *)b->data, 0, &je);
    json_int_t fv = t->meta ? json_integer_value(json_object_get(t->meta, "format-version")) : 0;
    if (!t->meta || (fv != 2 && fv != 3) ||
        !json_string_value(json_object_get(t->meta, "location"))) {
        snprintf(t->err, sizeof t->err, "%s/%s: not Iceberg v2 or v3 metadata (%s)", t->prefix, rel,
                 t->meta ? "format-version/location" : je.text);
        return LS_ECORRUPT;
    }
    t->location = ls_strdup(json_string_value(json_object_get(t->meta, "location")));
    t->version = version;
    set_meta_location(t, rel);
    return load_spec(t);
}

static ls_status load_done(ls_ice_table_t *t, ls_status st, ls_buf_t *b, ls_ice_table_t **out,
                           char *err, size_t errlen)
{
    ls_buf_free(b);
    if (st == LS_OK) {
        *out = t;
        return LS_OK;
    }
    if (!t->err[0]) snprintf(t->err, sizeof t->err, "load %s: %s", t->prefix, ls_status_str(st));
    snprintf(err, errlen, "%s", t->err);
    ls_ice_table_free(t);
    return st;
}

ls_status ls_ice_table_load(ls_objstore_t *os, const char *prefix,
                            const ls_ice_committer_t *committer, ls_ice_table_t **out, char *err,
                            size_t errlen)
{
    *out = NULL;
    ls_ice_table_t *t = table_new(os, prefix, committer);
    ls_buf_t b;
    ls_buf_init(&b);
    char *key = ls_ice_key_of(t, "metadata/version-hint.text");
    ls_status st = get_text(os, key, &b);
    ls_free(key);
    int version = st == LS_OK ? atoi((char *)b.data) : 0;
    if (st != LS_OK && st != LS_ENOTFOUND) return load_done(t, st, &b, out, err, errlen);
    if (version < 1) version = 1;
    /* the hint may lag behind a commit: probe forward */
    char rel[64];
    for (;;) {
        snprintf(rel, sizeof rel, "metadata/v%d.metadata.json", version + 1);
        key = ls_ice_key_of(t, rel);
        ls_objinfo_t info;
        st = ls_objstore_head(os, key, &info);
        ls_free(key);
        if (st == LS_ENOTFOUND) break;
        if (st != LS_OK) return load_done(t, st, &b, out, err, errlen);
        version++;
    }
    snprintf(rel, sizeof rel, "metadata/v%d.metadata.json", version);
    return load_done(t, load_metadata(t, rel, version, &b), &b, out, err, errlen);
}

ls_status ls_ice_table_load_file(ls_objstore_t *os, const char *prefix, const char *key,
                                 int version, const ls_ice_committer_t *committer,
                                 ls_ice_table_t **out, char *err, size_t errlen)
{
    *out = NULL;
    ls_ice_table_t *t = table_new(os, prefix, committer);
    ls_buf_t b;
    ls_buf_init(&b);
    size_t n = strlen(prefix);
    if (strncmp(key, prefix, n) || key[n] != '/') {
        snprintf(t->err, sizeof t->err, "metadata file %s is outside the table prefix %s", key,
                 prefix);
        return load_done(t, LS_EINVAL, &b, out, err, errlen);
    }
    return load_done(t, load_metadata(t, key + n + 1, version, &b), &b, out, err, errlen);
}

ls_status ls_ice_table_publish(ls_ice_table_t *t)
{
    if (!t->committer.commit || t->version < 1 || !t->meta_location) return LS_OK;
    char vrel[64];
    snprintf(vrel, sizeof vrel, "metadata/v%d.metadata.json", t->version);
    char *vkey = ls_ice_key_of(t, vrel);
    ls_objinfo_t info;
    ls_status st = ls_objstore_head(t->os, vkey, &info);
    if (st != LS_ENOTFOUND) {
        if (st != LS_OK) snprintf(t->err, sizeof t->err, "head %s: %s", vkey, ls_status_str(st));
        ls_free(vkey);
        return st;
    }
    ls_buf_t b;
    ls_buf_init(&b);
    char *key = key_for_location(t, t->meta_location);
    st = key ? ls_objstore_copy(t->os, key, vkey) : LS_EINVAL;
    if (st != LS_OK) snprintf(t->err, sizeof t->err, "publishing %s: %s", vkey, ls_status_str(st));
    ls_free(key);
    ls_free(vkey);
    if (st == LS_OK) {
        char *hkey = ls_ice_key_of(t, "metadata/version-hint.text");
        ls_status hs = get_text(t->os, hkey, &b);
        ls_free(hkey);
        if (hs == LS_ENOTFOUND || (hs == LS_OK && atoi((char *)b.data) < t->version))
            write_version_hint(t, t->version);
    }
    ls_buf_free(&b);
    return st;
}

void ls_ice_table_free(ls_ice_table_t *t)
{
    if (!t) return;
    if (t->committer.release) t->committer.release(t->committer.arg);
    json_decref(t->meta);
    ls_free(t->prefix);
    ls_free(t->location);
    ls_free(t->meta_location);
    ls_free(t);
}

const ls_ice_spec_t *ls_ice_table_spec(const ls_ice_table_t *t) { return &t->spec; }

int ls_ice_table_version(const ls_ice_table_t *t) { return t->version; }

const char *ls_ice_table_metadata_location(const ls_ice_table_t *t) { return t->meta_location; }

const char *ls_ice_table_error(const ls_ice_table_t *t) { return t->err; }

const char *ls_ice_table_location(const ls_ice_table_t *t) { return t->location; }

const char *ls_ice_table_prefix(const ls_ice_table_t *t) { return t->prefix; }

const char *ls_ice_table_uuid(const ls_ice_table_t *t)
{
    return json_string_value(json_object_get(t->meta, "table-uuid"));
}

int64_t ls_ice_table_last_sequence(const ls_ice_table_t *t)
{
    return (int64_t)json_integer_value(json_object_get(t->meta, "last-sequence-number"));
}

int64_t ls_ice_table_current_snapshot(const ls_ice_table_t *t)
{
    json_t *v = json_object_get(t->meta, "current-snapshot-id");
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : -1;
}

static json_t *current_snapshot(const ls_ice_table_t *t)
{
    int64_t id = ls_ice_table_current_snapshot(t);
    json_t *s;
    size_t i;
    if (id < 0) return NULL;
    json_array_foreach(json_object_get(t->meta, "snapshots"), i,
                       s) if (json_integer_value(json_object_get(s, "snapshot-id")) == id) return s;
    return NULL;
}

size_t ls_ice_table_snapshot_count(const ls_ice_table_t *t)
{
    return json_array_size(json_object_get(t->meta, "snapshots"));
}

const char *ls_ice_table_summary(const ls_ice_table_t *t, const char *key)
{
    if (!strncmp(key, LS_ICE_CARRY_PREFIX, strlen(LS_ICE_CARRY_PREFIX))) {
        const char *v =
            json_string_value(json_object_get(json_object_get(t->meta, "properties"), key));
        if (v) return v;
    }
    return json_string_value(json_object_get(json_object_get(current_snapshot(t), "summary"), key));
}

ls_status ls_ice_table_put_data(ls_ice_table_t *t, const ls_buf_t *bytes, const char *ext,
                                ls_ice_datafile_t *df)
{
    char *old = df->path;
    df->path = NULL;
    char *key = ls_ice_table_data_key(t, ext, df);
    ls_status st = ls_ice_put_bytes(t, key, bytes->data, bytes->len, LS_OBJSTORE_PUT_CREATE_ONLY);
    if (st == LS_OK) {
        ls_free(old);
        df->file_size = (int64_t)bytes->len;
    } else {
        ls_free(df->path);
        df->path = old;
    }
    ls_free(key);
    return st;
}

ls_objstore_t *ls_ice_table_objstore(const ls_ice_table_t *t) { return t->os; }

char *ls_ice_table_data_key(ls_ice_table_t *t, const char *ext, ls_ice_datafile_t *df)
{
    ls_buf_t rel;
    ls_buf_init(&rel);
    ls_buf_printf(&rel, "data/");
    if (t->spec.nfields) {
        ls_ice_partition_path(&t->spec, df->partition, &rel);
        ls_buf_append_u8(&rel, '/');
    }
    char *u = ls_ice_new_uuid();
    ls_buf_printf(&rel, "%s.%s", u, ext);
    ls_buf_append_u8(&rel, 0);
    ls_free(u);
    char *key = ls_ice_key_of(t, (char *)rel.data);
    ls_free(df->path);
    df->path = ls_asprintf("%s/%s", t->location, (char *)rel.data);
    ls_buf_free(&rel);
    return key;
}

/* ---- table files, properties, schema, manifests ------------------------- */

/* GETs a file of this table by location (declared in the header). */
ls_status ls_ice_table_read_range(const ls_ice_table_t *t, const char *loc, uint64_t off,
                                  uint64_t len, ls_buf_t *out, char *err, size_t errlen)
{
    char *key = key_for_location(t, loc);
    if (!key) {
        snprintf(err, errlen, "%s is outside the table location", loc);
        return LS_EINVAL;
    }
    out->len = 0;
    ls_status st = ls_objstore_get(t->os, key, off, len, out);
    if (st != LS_OK) snprintf(err, errlen, "get %s: %s", key, ls_status_str(st));
    ls_free(key);
    return st;
}

ls_status ls_ice_table_map_file(const ls_ice_table_t *t, const char *loc, ls_chunk_t **out,
                                char *err, size_t errlen)
{
    *out = NULL;
    char *key = key_for_location(t, loc);
    if (!key) {
        snprintf(err, errlen, "%s is outside the table location", loc);
        return LS_EINVAL;
    }
    ls_status st = ls_objstore_map(t->os, key, out);
    if (st != LS_OK && st != LS_EINVAL) snprintf(err, errlen, "map %s: %s", key, ls_status_str(st));
    ls_free(key);
    return st;
}

ls_status ls_ice_table_get_range(ls_ice_table_t *t, const char *loc, uint64_t off, uint64_t len,
                                 ls_buf_t *out)
{
    return ls_ice_table_read_range(t, loc, off, len, out, t->err, sizeof t->err);
}

ls_status ls_ice_table_get_file(ls_ice_table_t *t, const char *loc, ls_buf_t *out)
{
    return ls_ice_table_get_range(t, loc, 0, UINT64_MAX, out);
}

/* Best-effort delete of a file of this table (maintenance after a commit:
 * a file left behind is an orphan, never a broken table). */
void ls_ice_delete_location(ls_ice_table_t *t, const char *loc)
{
    char *key = key_for_location(t, loc);
    if (key && ls_objstore_del(t->os, key) == LS_OK) t->maint.files_deleted++;
    ls_free(key);
}

static const char *prop_str(const ls_ice_table_t *t, const char *key)
{
    return json_string_value(json_object_get(json_object_get(t->meta, "properties"), key));
}

int64_t ls_ice_prop_long(const ls_ice_table_t *t, const char *key, int64_t dflt)
{
    const char *v = prop_str(t, key);
    char *end;
    long long x = v ? strtoll(v, &end, 10) : 0;
    return v && *v && !*end && x >= 0 ? (int64_t)x : dflt;
}

bool ls_ice_prop_bool(const ls_ice_table_t *t, const char *key, bool dflt)
{
    const char *v = prop_str(t, key);
    return v ? !strcasecmp(v, "true") : dflt;
}

static json_t *current_schema(const ls_ice_table_t *t)
{
    json_t *v, *found = NULL;
    size_t i;
    json_int_t sid = json_integer_value(json_object_get(t->meta, "current-schema-id"));
    json_array_foreach(json_object_get(t->meta, "schemas"), i,
                       v) if (json_integer_value(json_object_get(v, "schema-id")) == sid) found = v;
    return found;
}

char *ls_ice_table_schema(const ls_ice_table_t *t, int *last_column_id)
{
    *last_column_id = (int)json_integer_value(json_object_get(t->meta, "last-column-id"));
    json_t *schema = current_schema(t);
    char *text = schema ? json_dumps(schema, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    char *out = text ? ls_strdup(text) : NULL;
    free(text);
    return out;
}

/* Schema evolution (spec, "Schema Evolution"): the new schema is appended
 * to `schemas` under the next schema id and made current; field ids are
 * the caller's (kept for existing columns, fresh above last-column-id for
 * added ones). Only the table object changes: the next commit carries it,
 * so the schema lands with that commit's data or not at all. */
ls_status ls_ice_table_set_schema(ls_ice_table_t *t, const char *schema_json, int last_column_id,
                                  int *schema_id)
{
    json_error_t je;
    json_t *schema = json_loads(schema_json, 0, &je);
    int was = (int)json_integer_value(json_object_get(t->meta, "last-column-id"));
    if (!schema || !json_is_object(schema) || last_column_id < was) {
        snprintf(t->err, sizeof t->err, "new schema: %s",
                 schema ? "last-column-id would go back (ids are never reused)" : je.text);
        json_decref(schema);
        return LS_EINVAL;
    }
    json_t *schemas = json_object_get(t->meta, "schemas"), *v;
    json_int_t id = -1;
    size_t i;
    json_array_foreach(schemas, i, v)
    {
        json_int_t sid = json_integer_value(json_object_get(v, "schema-id"));
        if (sid > id) id = sid;
    }
    id++;
    json_object_set_new(schema, "schema-id", json_integer(id));
    json_array_append_new(schemas, schema);
    json_object_set_new(t->meta, "current-schema-id", json_integer(id));
    json_object_set_new(t->meta, "last-column-id", json_integer(last_column_id));
    *schema_id = (int)id;
    return load_spec(t); /* the spec's sources must still be there */
}

/* Writes a manifest of n entries; its location and length on LS_OK. */
ls_status ls_ice_put_manifest(ls_ice_table_t *t, const ls_ice_mentry_t *e, size_t n,
                              char **path_out, int64_t *len_out)
{
    char *schema = json_dumps(current_schema(t), JSON_COMPACT);
    json_t *sj = spec_json(&t->spec);
    char *spec = json_dumps(sj, JSON_COMPACT);
    json_decref(sj);
    ls_buf_t out;
    ls_buf_init(&out);
    ls_status st = ls_ice_manifest_encode(
        &t->spec, ls_ice_table_format_version(t), schema,
        (int)json_integer_value(json_object_get(t->meta, "current-schema-id")), spec, e, n, &out);
    free(schema);
    free(spec);
    char *u = ls_ice_new_uuid();
    char *rel = ls_asprintf("metadata/%s-m0.avro", u);
    ls_free(u);
    char *key = ls_ice_key_of(t, rel);
    if (st == LS_OK) st = ls_ice_put_bytes(t, key, out.data, out.len, LS_OBJSTORE_PUT_CREATE_ONLY);
    if (st == LS_OK) {
        *path_out = ls_asprintf("%s/%s", t->location, rel);
        *len_out = (int64_t)out.len;
    }
    ls_free(key);
    ls_free(rel);
    ls_buf_free(&out);
    return st;
}

int ls_ice_table_format_version(const ls_ice_table_t *t)
{
    return (int)json_integer_value(json_object_get(t->meta, "format-version"));
}

ls_status ls_ice_table_upgrade(ls_ice_table_t *t, int fv)
{
    int now = ls_ice_table_format_version(t);
    if (fv == now) return LS_OK;
    if (fv != 3 || now != 2) {
        snprintf(t->err, sizeof t->err,
                 "format version %d cannot become %d (Iceberg tables only upgrade, 2 to 3)", now,
                 fv);
        return LS_EINVAL;
    }
    /* spec "Row Lineage for Upgraded Tables": ids start at 0, the snapshots
     * before stay without them */
    json_object_set_new(t->meta, "format-version", json_integer(3));
    json_object_set_new(t->meta, "next-row-id", json_integer(0));
    return LS_OK;
}

/* ---- commits: append, rewrite, overwrite, expire ------------------------- */

static void summary_set(json_t *summary, const char *key, int64_t v)
{
    char num[32];
    snprintf(num, sizeof num, "%lld", (long long)v);
    json_object_set_new(summary, key, json_string(num));
}

static bool carried(const char *key)
{
    return !strncmp(key, LS_ICE_CARRY_PREFIX, strlen(LS_ICE_CARRY_PREFIX));
}

/* Commits next (built from t->meta, which it replaces on LS_OK) as the
 * table's next version at now_ms: the current metadata goes into the
 * metadata log, expiry is planned into it, and its deletions follow once
 * the commit landed. next is consumed. */
static ls_status land(ls_ice_table_t *t, json_t *next, int64_t now_ms)
{
    json_array_append_new(json_object_get(next, "metadata-log"),
                          json_pack("{s:O, s:s}", "timestamp-ms",
                                    json_object_get(t->meta, "last-updated-ms"), "metadata-file",
                                    t->meta_location));
    json_object_set_new(next, "last-updated-ms", json_integer(now_ms));
    expiry_t x;
    ls_ice_expire_plan(t, next, now_ms, &x);
    char *rel = NULL;
    ls_status st = write_metadata(t, next, t->version + 1, &rel);
    if (st != LS_OK) {
        ls_ice_expiry_clear(&x);
        json_decref(next);
        return st;
    }
    json_decref(t->meta);
    t->meta = next;
    t->version++;
    set_meta_location(t, rel);
    ls_free(rel);
    ls_ice_expire_done(t, &x);
    ls_ice_expiry_clear(&x);
    return LS_OK;
}

/* One new snapshot adding files[0..n) and, for a rewrite (rm), removing
 * rm's files: an "append" or a "replace" (spec "Snapshots"). */
static ls_status commit_files(ls_ice_table_t *t, const ls_ice_datafile_t *files, size_t n,
                              removal_t *rm, const char *const *summary_kv, int64_t now_ms,
                              int64_t *snapshot_id)
{
    t->err[0] = 0;
    /* Timestamps never go back: Iceberg's Java reader refuses a table whose
     * snapshot or metadata log goes back more than a minute, which a committer
     * whose clock is behind the previous one's would otherwise write */
    int64_t last_updated = (int64_t)json_integer_value(json_object_get(t->meta, "last-updated-ms"));
    if (now_ms < last_updated) now_ms = last_updated;
    json_t *parent = current_snapshot(t);
    int fv = ls_ice_table_format_version(t);
    int64_t first_row_id = (int64_t)json_integer_value(json_object_get(t->meta, "next-row-id"));
    mlist_build_t mb = {
        .fv = fv,
        .next_row_id = first_row_id,
        .seq = (int64_t)json_integer_value(json_object_get(t->meta, "last-sequence-number")) + 1,
        .rm = rm};
    do {
        ls_random_bytes(&mb.snap_id, sizeof mb.snap_id);
        mb.snap_id &= INT64_MAX;
    } while (mb.snap_id == 0);
    /* the new files' manifests: data, then position deletes (a manifest
     * holds one kind) */
    ls_ice_mentry_t *entries = n ? LS_NEWN(ls_ice_mentry_t, n) : NULL;
    size_t j = 0, ndel = 0;
    int64_t recs = 0, bytes = 0, del_recs = 0;
    for (int deletes = 0; deletes < 2; deletes++)
        for (size_t k = 0; k < n; k++)
            if ((files[k].content != LS_ICE_CONTENT_DATA) == deletes)
                entries[j++] = (ls_ice_mentry_t){.status = LS_ICE_ADDED,
                                                 .snapshot_id = mb.snap_id,
                                                 .seq = -1,
                                                 .file_seq = -1,
                                                 .df = files[k]};
    for (size_t k = 0; k < n; k++) { /* sizes count every file, as Iceberg's summaries do */
        bytes += files[k].file_size;
        if (files[k].content == LS_ICE_CONTENT_DATA) {
            recs += files[k].record_count;
        } else {
            ndel++;
            del_recs += files[k].record_count;
        }
    }
    size_t ndata = n - ndel;
    ls_ice_newman_t nm[2];
    size_t nnm = 0;
    char *paths[2] = {NULL, NULL}, *list = NULL;
    ls_status st = LS_OK;
    const size_t counts[2] = {ndata, ndel};
    for (int kind = 0, from = 0; kind < 2 && st == LS_OK; from += (int)counts[kind], kind++) {
        if (!counts[kind]) continue;
        nm[nnm] = (ls_ice_newman_t){.e = entries + from, .n = counts[kind]};
        st = ls_ice_put_manifest(t, nm[nnm].e, nm[nnm].n, &paths[kind], &nm[nnm].len);
        nm[nnm].path = paths[kind];
        nnm++;
    }
    /* n == 0 still makes a snapshot: it moves carried properties (e.g. a
     * log's offset past records that produce no rows) */
    if (st == LS_OK) st = ls_ice_write_manifest_list(t, parent, &mb, nm, nnm, &list);
    ls_free(entries); /* the data files stay the caller's */
    ls_free(paths[0]);
    ls_free(paths[1]);
    for (size_t i = 0; st == LS_OK && rm && i < rm->n; i++)
        if (!rm->found[i]) {
            snprintf(t->err, sizeof t->err, "%s is not a live file of the table", rm->paths[i]);
            st = LS_ECONFLICT; /* another commit removed it: reload */
        }
    if (st == LS_OK && rm && !rm->overwrite && recs != rm->rows - rm->rows_deleted) {
        snprintf(t->err, sizeof t->err,
                 "a rewrite must keep every row: %lld rows removed (%lld of them deleted), "
                 "%lld added",
                 (long long)rm->rows, (long long)rm->rows_deleted, (long long)recs);
        st = LS_EINVAL;
    }
    if (st != LS_OK) {
        ls_free(list); /* its manifests are orphans now */
        return st;
    }

    /* summary (spec "Snapshots": operation plus metrics, all strings; the
     * names Iceberg's Java library writes) */
    json_t *psum = parent ? json_object_get(parent, "summary") : NULL;
    json_t *summary = json_object();
    json_object_set_new(summary, "operation",
                        json_string(rm && !rm->overwrite ? "replace"
                                    : rm || ndel         ? "overwrite"
                                                         : "append"));
    summary_set(summary, "added-data-files", (int64_t)ndata);
    summary_set(summary, "added-records", recs);
    summary_set(summary, "added-files-size", bytes);
    if (ndel) {
        summary_set(summary, "added-delete-files", (int64_t)ndel);
        summary_set(summary, "added-position-delete-files", (int64_t)ndel);
        summary_set(summary, "added-position-deletes", del_recs);
    }
    int64_t gone_files = 0, gone_rows = 0, gone_bytes = 0, gone_dfiles = 0, gone_drows = 0;
    if (rm) {
        gone_files = (int64_t)rm->n - rm->del_files, gone_rows = rm->rows;
        gone_bytes = rm->bytes + rm->del_bytes;
        gone_dfiles = rm->del_files, gone_drows = rm->del_rows;
        summary_set(summary, "deleted-data-files", gone_files);
        summary_set(summary, "deleted-records", gone_rows);
        summary_set(summary, "removed-files-size", gone_bytes);
        if (gone_dfiles) {
            summary_set(summary, "removed-delete-files", gone_dfiles);
            summary_set(summary, "removed-position-delete-files", gone_dfiles);
            summary_set(summary, "removed-position-deletes", gone_drows);
        }
    }
    summary_set(summary, "total-data-files",
                ls_ice_summary_long(psum, "total-data-files") + (int64_t)ndata - gone_files);
    summary_set(summary, "total-records",
                ls_ice_summary_long(psum, "total-records") + recs - gone_rows);
    summary_set(summary, "total-files-size",
                ls_ice_summary_long(psum, "total-files-size") + bytes - gone_bytes);
    summary_set(summary, "total-delete-files",
                ls_ice_summary_long(psum, "total-delete-files") + (int64_t)ndel - gone_dfiles);
    summary_set(summary, "total-position-deletes",
                ls_ice_summary_long(psum, "total-position-deletes") + del_recs - gone_drows);
    summary_set(summary, "total-equality-deletes", 0);
    if (mb.replaced) {
        summary_set(summary, "manifests-created", mb.created + (int64_t)nnm);
        summary_set(summary, "manifests-replaced", mb.replaced);
    }

    json_t *next = json_deep_copy(t->meta);
    json_t *props = json_object_get(next, "properties");
    if (!props) json_object_set_new(next, "properties", props = json_object());
    /* carried keys live in the table properties, set in the same commit; a
     * table written before kept them in every snapshot summary: move them */
    const char *k;
    json_t *v;
    json_object_foreach(psum, k, v) if (carried(k) && !json_object_get(props, k))
        json_object_set(props, k, v);
    for (size_t i = 0; summary_kv && summary_kv[i] && summary_kv[i + 1]; i += 2) {
        json_object_set_new(summary, summary_kv[i], json_string(summary_kv[i + 1]));
        if (carried(summary_kv[i]))
            json_object_set_new(props, summary_kv[i], json_string(summary_kv[i + 1]));
    }

    json_t *snap = json_pack(
        "{s:I, s:I, s:I, s:s, s:o, s:I}", "snapshot-id", (json_int_t)mb.snap_id, "sequence-number",
        (json_int_t)mb.seq, "timestamp-ms", (json_int_t)now_ms, "manifest-list", list, "summary",
        summary, "schema-id", json_integer_value(json_object_get(t->meta, "current-schema-id")));
    ls_free(list);
    if (parent) json_object_set(snap, "parent-snapshot-id", json_object_get(parent, "snapshot-id"));
    if (fv >= 3) { /* spec "Snapshot Row IDs": the ids this snapshot's list assigned */
        json_object_set_new(snap, "first-row-id", json_integer(first_row_id));
        json_object_set_new(snap, "added-rows", json_integer(mb.next_row_id - first_row_id));
        json_object_set_new(next, "next-row-id", json_integer(mb.next_row_id));
    }

    json_array_append_new(json_object_get(next, "snapshots"), snap);
    json_object_set_new(next, "current-snapshot-id", json_integer(mb.snap_id));
    json_object_set_new(next, "last-sequence-number", json_integer(mb.seq));
    json_array_append_new(json_object_get(next, "snapshot-log"),
                          json_pack("{s:I, s:I}", "timestamp-ms", (json_int_t)now_ms, "snapshot-id",
                                    (json_int_t)mb.snap_id));
    json_t *refs = json_object_get(next, "refs");
    if (!refs) json_object_set_new(next, "refs", refs = json_object());
    json_object_set_new(
        refs, "main",
        json_pack("{s:I, s:s}", "snapshot-id", (json_int_t)mb.snap_id, "type", "branch"));
    if ((st = land(t, next, now_ms)) != LS_OK) return st;
    t->maint.manifests_replaced += (uint64_t)mb.replaced;
    if (snapshot_id) *snapshot_id = mb.snap_id;
    return LS_OK;
}

ls_status ls_ice_table_append(ls_ice_table_t *t, const ls_ice_datafile_t *files, size_t n,
                              const char *const *summary_kv, int64_t now_ms, int64_t *snapshot_id)
{
    return commit_files(t, files, n, NULL, summary_kv, now_ms, snapshot_id);
}

ls_status ls_ice_table_rewrite(ls_ice_table_t *t, const char *const *removed, size_t nremoved,
                               const ls_ice_datafile_t *added, size_t nadded, int64_t rows_deleted,
                               int64_t now_ms, int64_t *snapshot_id)
{
    if (!nremoved || !current_snapshot(t)) {
        snprintf(t->err, sizeof t->err, "a rewrite needs files to remove");
        return LS_EINVAL;
    }
    removal_t rm = {.paths = removed,
                    .n = nremoved,
                    .found = LS_NEWN(bool, nremoved),
                    .rows_deleted = rows_deleted};
    ls_status st = commit_files(t, added, nadded, &rm, NULL, now_ms, snapshot_id);
    ls_free(rm.found);
    return st;
}

ls_status ls_ice_table_overwrite(ls_ice_table_t *t, const char *const *removed, size_t nremoved,
                                 const ls_ice_datafile_t *added, size_t nadded,
                                 const char *const *summary_kv, int64_t now_ms,
                                 int64_t *snapshot_id)
{
    if (!nremoved) return commit_files(t, added, nadded, NULL, summary_kv, now_ms, snapshot_id);
    removal_t rm = {
        .paths = removed, .n = nremoved, .found = LS_NEWN(bool, nremoved), .overwrite = true};
    ls_status st = commit_files(t, added, nadded, &rm, summary_kv, now_ms, snapshot_id);
    ls_free(rm.found);
    return st;
}

ls_status ls_ice_table_expire(ls_ice_table_t *t, int64_t now_ms, bool *committed, int64_t *next_ms)
{
    t->err[0] = 0;
    *committed = false;
    int64_t last_updated = (int64_t)json_integer_value(json_object_get(t->meta, "last-updated-ms"));
    if (now_ms < last_updated) now_ms = last_updated;
    json_t *next = json_deep_copy(t->meta);
    expiry_t x;
    ls_ice_expire_plan(t, next, now_ms, &x);
    ls_status st = LS_OK;
    if (x.expired || x.due_snapshots || x.trimmed) {
        /* a commit of its own, as Iceberg's expireSnapshots: the snapshots
         * leave the metadata and their files become pending */
        json_decref(next);
        st = land(t, json_deep_copy(t->meta), now_ms);
        if (st == LS_OK) *committed = true;
    } else {
        /* only metadata files are due: they are nobody's reference, so they
         * go without a commit (their entries leave the list at the next one;
         * deleting again is harmless); no commit also means no new pending
         * metadata file, so an idle table settles */
        json_decref(next);
        ls_ice_expire_done(t, &x);
    }
    ls_ice_expiry_clear(&x);
    /* when something can next be due: a pending entry's grace, or the
     * oldest snapshot's retention */
    int64_t when = INT64_MAX;
    json_t *pending = ls_ice_pending_of(t->meta), *e;
    size_t i;
    json_array_foreach(pending, i, e)
    {
        int64_t at = (int64_t)json_integer_value(json_object_get(e, "at")) + t->file_grace_ms;
        if (at < when) when = at;
    }
    json_decref(pending);
    json_t *snaps = json_object_get(t->meta, "snapshots");
    if (t->snapshot_retention_ms > 0 && json_array_size(snaps) > 1) {
        int64_t at =
            (int64_t)json_integer_value(json_object_get(json_array_get(snaps, 0), "timestamp-ms")) +
            t->snapshot_retention_ms + 1;
        if (at < when) when = at;
    }
    *next_ms = when;
    return st;
}

/* The current snapshot's live entries; delete manifests refused (LS_EINVAL)
 * unless with_deletes. Data manifests are listed first. */
static ls_status live_entries(ls_ice_table_t *t, bool with_deletes, ls_ice_mentry_t **out,
                              size_t *n)
{
    *out = NULL;
    *n = 0;
    t->err[0] = 0;
    json_t *snap = current_snapshot(t);
    const char *list = snap ? json_string_value(json_object_get(snap, "manifest-list")) : NULL;
    if (!list) return LS_OK;
    ls_buf_t raw;
    ls_buf_init(&raw);
    ls_ocf_file_t f;
    ls_status st = ls_ice_table_get_file(t, list, &raw);
    if (st != LS_OK ||
        (st = ls_ocf_file_read(raw.data, raw.len, &f, t->err, sizeof t->err)) != LS_OK) {
        ls_buf_free(&raw);
        return st;
    }
    size_t cap = 0;
    for (int content = 0; content < 2 && st == LS_OK; content++)
        for (size_t i = 0; i < f.nrecords && st == LS_OK; i++) {
            const ls_av_t *r = &f.records[i];
            int64_t c = ls_ice_av_long(r, "content", NULL, 0);
            if (c != content && (c == LS_ICE_CONTENT_DATA || c == LS_ICE_CONTENT_POSITION_DELETES))
                continue;
            if (c != LS_ICE_CONTENT_DATA && !with_deletes) {
                snprintf(t->err, sizeof t->err, "the table has delete files");
                st = LS_EINVAL;
                break;
            }
            ls_ice_mentry_t *e;
            size_t ne;
            if ((st = ls_ice_read_manifest(t, r, &raw, &e, &ne)) != LS_OK) break;
            ls_ice_take_live(r, e, ne, out, n, &cap);
        }
    ls_ocf_file_free(&f);
    ls_buf_free(&raw);
    if (st != LS_OK) {
        ls_ice_mentries_free(*out, *n);
        *out = NULL;
        *n = 0;
    }
    return st;
}

ls_status ls_ice_table_live_files(ls_ice_table_t *t, ls_ice_mentry_t **out, size_t *n)
{
    return live_entries(t, false, out, n);
}

ls_status ls_ice_table_live_entries(ls_ice_table_t *t, ls_ice_mentry_t **out, size_t *n)
{
    return live_entries(t, true, out, n);
}

/* ---- orphan files -----------------------------------------------------------
 *
 * Files under the table's data/ and metadata/ that no retained snapshot and
 * no metadata-log entry references: data files and manifests of commits that
 * failed or crashed, the leftovers of a crash between a commit and its
 * clean-up, and files engines wrote before the read-only catalog refused
 * their commit. A file is deleted only when it was last written before
 * older_than_ms (the grace period: a commit in flight — ours or another
 * broker's — writes its files first and commits within it). Referenced: the
 * current metadata file and the metadata log (with their v<N> copies and the
 * version hint), every retained snapshot's manifest list, every manifest
 * those lists name and every data file those manifests name live, or name
 * DELETED by a retained snapshot (ls_ice_entry_keeps_file). Any read failure
 * deletes nothing. */
ls_status ls_ice_table_remove_orphans(ls_ice_table_t *t, int64_t older_than_ms,
                                      const char *keep_dir, uint64_t *deleted)
{
    *deleted = 0;
    t->err[0] = 0;
    json_t *refs = json_object(), *manifests = json_object(), *s, *e;
    size_t i;
    char *copy;
    json_object_set_new(refs, t->meta_location, json_true());
    if ((copy = ls_ice_published_copy(t->meta_location)))
        json_object_set_new(refs, copy, json_true());
    ls_free(copy);
    json_array_foreach(json_object_get(t->meta, "metadata-log"), i, e)
    {
        const char *m = json_string_value(json_object_get(e, "metadata-file"));
        if (!m) continue;
        json_object_set_new(refs, m, json_true());
        if ((copy = ls_ice_published_copy(m))) json_object_set_new(refs, copy, json_true());
        ls_free(copy);
    }
    char *hint = ls_asprintf("%s/metadata/version-hint.text", t->location);
    json_object_set_new(refs, hint, json_true());
    ls_free(hint);
    ls_status st = LS_OK;
    json_t *retained = json_object(); /* snapshot ids, as decimal keys */
    /* what is pending deletion is still readable: protected like the rest */
    json_t *pending = ls_ice_pending_of(t->meta),
           *readable = json_copy(json_object_get(t->meta, "snapshots"));
    json_array_foreach(pending, i, e)
    {
        const char *m = json_string_value(json_object_get(e, "metadata-file"));
        if (m) {
            json_object_set_new(refs, m, json_true());
            if ((copy = ls_ice_published_copy(m))) json_object_set_new(refs, copy, json_true());
            ls_free(copy);
        } else {
            json_array_append(readable, e);
        }
    }
    json_decref(pending);
    json_array_foreach(readable, i, s)
    {
        char key[32];
        snprintf(key, sizeof key, "%lld",
                 (long long)json_integer_value(json_object_get(s, "snapshot-id")));
        json_object_set_new(retained, key, json_true());
        const char *l = json_string_value(json_object_get(s, "manifest-list"));
        if (!l) continue;
        json_object_set_new(refs, l, json_true());
        if ((st = ls_ice_list_manifests(t, l, manifests)) != LS_OK) break;
    }
    json_decref(readable);
    const char *k;
    json_t *v;
    ls_buf_t raw;
    ls_buf_init(&raw);
    json_object_foreach(manifests, k, v)
    {
        if (st != LS_OK) break;
        json_object_set_new(refs, k, json_true());
        if ((st = ls_ice_table_get_file(t, k, &raw)) != LS_OK) break;
        ls_ocf_file_t f;
        if ((st = ls_ocf_file_read(raw.data, raw.len, &f, t->err, sizeof t->err)) != LS_OK) break;
        for (size_t r = 0; r < f.nrecords; r++) {
            const ls_av_t *d = ls_av_field(&f.records[r], "data_file");
            const char *p = d ? ls_ice_av_str(d, "file_path") : NULL;
            if (p && ls_ice_entry_keeps_file(&f.records[r], json_integer_value(v), retained))
                json_object_set_new(refs, p, json_true());
        }
        ls_ocf_file_free(&f);
    }
    ls_buf_free(&raw);
    json_decref(retained);
    bool announced = false;
    /* every key under the table's location: engines write where they like
     * (Spark's data/<col>=<value>/...) */
    if (st == LS_OK) {
        char *prefix = ls_asprintf("%s/", t->prefix);
        ls_objinfo_t *objs = NULL;
        size_t n = 0;
        st = ls_objstore_list(t->os, prefix, &objs, &n);
        if (st != LS_OK) snprintf(t->err, sizeof t->err, "list %s: %s", prefix, ls_status_str(st));
        size_t plen = strlen(t->prefix);
        char *theirs = ls_asprintf("%s/" LS_ICE_CATALOGS_DIR "/", t->prefix);
        char *kept = keep_dir ? ls_asprintf("%s/%s/", t->prefix, keep_dir) : NULL;
        for (size_t o = 0; st == LS_OK && o < n; o++) {
            if (objs[o].mtime_ms >= older_than_ms) continue;
            /* external catalogs' metadata files (compact/catalog_sync.h):
             * theirs to keep, not orphans of ours; and the caller's own */
            if (strncmp(objs[o].key, theirs, strlen(theirs)) == 0) continue;
            if (kept && strncmp(objs[o].key, kept, strlen(kept)) == 0) continue;
            char *loc = ls_asprintf("%s%s", t->location, objs[o].key + plen);
            if (!json_object_get(refs, loc)) {
                if (!announced) {
                    ls_crashpoint("table.orphans_found");
                    announced = true;
                }
                if (ls_objstore_del(t->os, objs[o].key) == LS_OK) (*deleted)++;
            }
            ls_free(loc);
        }
        ls_objinfo_free(objs, n);
        ls_free(theirs);
        ls_free(kept);
        ls_free(prefix);
    }
    t->maint.files_deleted += *deleted;
    json_decref(refs);
    json_decref(manifests);
    return st;
}
