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
#include "table/iceberg_table.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/crashpoint.h"
#include "base/uuid.h"
#include "table/avro_ocf.h"

struct ls_ice_table {
    ls_objstore_t *os;
    char *prefix;
    char *location;
    json_t *meta;
    int version;
    char *meta_location;
    ls_ice_committer_t committer; /* commit NULL: the filesystem layout commits */
    ls_ice_spec_t spec;
    char err[256];
};

/* ---- partition specs and transforms ----------------------------------- */

static const char *transform_name(ls_ice_transform t)
{
    return t == LS_ICE_HOUR ? "hour" : t == LS_ICE_DAY ? "day" : "identity";
}

int ls_ice_transform_parse(const char *s)
{
    if (!strcmp(s, "identity")) return LS_ICE_IDENTITY;
    if (!strcmp(s, "hour") || !strcmp(s, "hours")) return LS_ICE_HOUR;
    if (!strcmp(s, "day") || !strcmp(s, "days")) return LS_ICE_DAY;
    return -1;
}

/* Result type of a partition field (spec "Partition Transforms"). */
static ls_ice_type result_type(const ls_ice_part_field_t *f)
{
    if (f->transform == LS_ICE_HOUR) return LS_ICE_INT;
    if (f->transform == LS_ICE_DAY) return LS_ICE_DATE;
    return f->source_type;
}

ls_status ls_ice_spec_add(ls_ice_spec_t *s, int source_id, const char *source_name,
                          ls_ice_type source_type, ls_ice_transform t)
{
    if (s->nfields >= LS_ICE_MAX_PART) return LS_ELIMIT;
    int ok = 0;
    switch (t) {
    case LS_ICE_IDENTITY:
        ok = source_type == LS_ICE_INT || source_type == LS_ICE_LONG || source_type == LS_ICE_DATE;
        break;
    case LS_ICE_HOUR:
        ok = source_type == LS_ICE_TIMESTAMP || source_type == LS_ICE_TIMESTAMPTZ;
        break;
    case LS_ICE_DAY:
        ok = source_type == LS_ICE_TIMESTAMP || source_type == LS_ICE_TIMESTAMPTZ ||
             source_type == LS_ICE_DATE;
        break;
    }
    if (!ok) return LS_EINVAL;
    ls_ice_part_field_t *f = &s->fields[s->nfields];
    memset(f, 0, sizeof *f);
    f->source_id = source_id;
    f->source_type = source_type;
    f->field_id = 1000 + s->nfields;
    f->transform = t;
    if (t == LS_ICE_IDENTITY)
        snprintf(f->name, sizeof f->name, "%s", source_name);
    else
        snprintf(f->name, sizeof f->name, "%s_%s", source_name, transform_name(t));
    s->nfields++;
    return LS_OK;
}

static int64_t floor_div(int64_t a, int64_t b)
{
    return a / b - (a % b != 0 && (a < 0) != (b < 0));
}

int64_t ls_ice_transform_apply(ls_ice_transform t, ls_ice_type source_type, int64_t v)
{
    if (t == LS_ICE_HOUR) return floor_div(v, 3600LL * 1000000);
    if (t == LS_ICE_DAY) return source_type == LS_ICE_DATE ? v : floor_div(v, 86400LL * 1000000);
    return v;
}

/* Days since 1970-01-01 -> civil date (H. Hinnant's days_from_civil inverse). */
static void civil(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = (int64_t)yoe + era * 400 + (*m <= 2);
}

/* Object keys allow [A-Za-z0-9._-] only, so the path uses name-value. */
void ls_ice_partition_path(const ls_ice_spec_t *s, const int64_t *values, ls_buf_t *out)
{
    for (int i = 0; i < s->nfields; i++) {
        const ls_ice_part_field_t *f = &s->fields[i];
        ls_ice_type rt = result_type(f);
        if (i) ls_buf_append_u8(out, '/');
        int64_t y;
        unsigned m, d;
        if (f->transform == LS_ICE_HOUR) {
            civil(floor_div(values[i], 24), &y, &m, &d);
            ls_buf_printf(out, "%s-%04lld-%02u-%02u-%02lld", f->name, (long long)y, m, d,
                          (long long)(values[i] - floor_div(values[i], 24) * 24));
        } else if (rt == LS_ICE_DATE) {
            civil(values[i], &y, &m, &d);
            ls_buf_printf(out, "%s-%04lld-%02u-%02u", f->name, (long long)y, m, d);
        } else {
            ls_buf_printf(out, "%s-%lld", f->name, (long long)values[i]);
        }
    }
}

/* Single-value serialization (spec Appendix D) of a partition value. */
static size_t part_bytes(ls_ice_type rt, int64_t v, uint8_t out[8])
{
    size_t n = rt == LS_ICE_LONG ? 8 : 4;
    for (size_t i = 0; i < n; i++)
        out[i] = (uint8_t)((uint64_t)v >> (8 * i));
    return n;
}

/* ---- data file metrics -------------------------------------------------- */

static size_t utf8_cut(const uint8_t *p, size_t n, size_t max)
{
    if (n <= max) return n;
    size_t k = max;
    while (k > 0 && (p[k] & 0xC0) == 0x80)
        k--; /* do not split a code point */
    return k;
}

void ls_ice_datafile_metrics(ls_ice_datafile_t *df, const ls_pq_writer_t *w)
{
    size_t nc = ls_pq_ncolumns(w);
    df->record_count = ls_pq_num_rows(w);
    df->metrics = ls_realloc(df->metrics, (nc ? nc : 1) * sizeof *df->metrics);
    df->nmetrics = 0;
    for (size_t i = 0; i < nc; i++) {
        const ls_pq_colstats_t *s = ls_pq_column_stats(w, (int)i);
        if (s->field_id < 0) continue;
        ls_ice_colmetric_t *m = &df->metrics[df->nmetrics++];
        memset(m, 0, sizeof *m);
        m->field_id = s->field_id;
        m->column_size = s->compressed_bytes;
        m->value_count = s->num_values;
        m->null_count = s->null_count;
        if (!s->has_bounds || s->max_rep > 0) continue;
        if (s->type != LS_PQ_BYTE_ARRAY) {
            /* INT32 / INT64 plain values are already little-endian */
            memcpy(m->lower, s->min.data, s->min.len);
            memcpy(m->upper, s->max.data, s->max.len);
            m->lower_len = s->min.len;
            m->upper_len = s->max.len;
            m->has_lower = m->has_upper = 1;
            continue;
        }
        int str = s->logical == LS_PQ_LT_STRING;
        /* lower bound: any prefix is <= the value */
        m->lower_len = str ? utf8_cut(s->min.data, s->min.len, LS_ICE_BOUND_MAX)
                           : (s->min.len < LS_ICE_BOUND_MAX ? s->min.len : LS_ICE_BOUND_MAX);
        if (m->lower_len)   /* an empty minimum (b"") has no bytes to copy */
            memcpy(m->lower, s->min.data, m->lower_len);
        m->has_lower = 1;
        /* upper bound: exact when short; binary: truncated prefix with its
         * last non-0xff byte incremented; long strings: left out */
        if (s->max.len <= LS_ICE_BOUND_MAX) {
            if (s->max.len)
                memcpy(m->upper, s->max.data, s->max.len);
            m->upper_len = s->max.len;
            m->has_upper = 1;
        } else if (!str) {
            size_t k = LS_ICE_BOUND_MAX;
            memcpy(m->upper, s->max.data, k);
            while (k > 0 && m->upper[k - 1] == 0xff)
                k--;
            if (k > 0) {
                m->upper[k - 1]++;
                m->upper_len = k;
                m->has_upper = 1;
            }
        }
    }
}

void ls_ice_datafile_clear(ls_ice_datafile_t *df)
{
    ls_free(df->path);
    ls_free(df->metrics);
    memset(df, 0, sizeof *df);
}

/* ---- Avro schemas -------------------------------------------------------- */

static void part_avro_type(const ls_ice_part_field_t *f, ls_buf_t *b)
{
    ls_ice_type rt = result_type(f);
    if (rt == LS_ICE_DATE)
        ls_buf_printf(b, "{\"type\":\"int\",\"logicalType\":\"date\"}");
    else
        ls_buf_printf(b, "\"%s\"", rt == LS_ICE_LONG ? "long" : "int");
}

static void map_field(ls_buf_t *b, const char *name, int fid, int kid, int vid, const char *vtype)
{
    ls_buf_printf(b,
                  "{\"name\":\"%s\",\"type\":[\"null\",{\"type\":\"array\",\"logicalType\":\"map\","
                  "\"items\":{\"type\":\"record\",\"name\":\"k%d_v%d\",\"fields\":["
                  "{\"name\":\"key\",\"type\":\"int\",\"field-id\":%d},"
                  "{\"name\":\"value\",\"type\":\"%s\",\"field-id\":%d}]}}],"
                  "\"default\":null,\"field-id\":%d},",
                  name, kid, vid, kid, vtype, vid, fid);
}

static char *manifest_schema(const ls_ice_spec_t *s)
{
    ls_buf_t b;
    ls_buf_init(&b);
    ls_buf_printf(
        &b,
        "{\"type\":\"record\",\"name\":\"manifest_entry\",\"fields\":["
        "{\"name\":\"status\",\"type\":\"int\",\"field-id\":0},"
        "{\"name\":\"snapshot_id\",\"type\":[\"null\",\"long\"],\"default\":null,\"field-id\":1},"
        "{\"name\":\"sequence_number\",\"type\":[\"null\",\"long\"],\"default\":null,\"field-id\":"
        "3},"
        "{\"name\":\"file_sequence_number\",\"type\":[\"null\",\"long\"],\"default\":null,\"field-"
        "id\":4},"
        "{\"name\":\"data_file\",\"type\":{\"type\":\"record\",\"name\":\"r2\",\"fields\":["
        "{\"name\":\"content\",\"type\":\"int\",\"field-id\":134},"
        "{\"name\":\"file_path\",\"type\":\"string\",\"field-id\":100},"
        "{\"name\":\"file_format\",\"type\":\"string\",\"field-id\":101},"
        "{\"name\":\"partition\",\"type\":{\"type\":\"record\",\"name\":\"r102\",\"fields\":[");
    for (int i = 0; i < s->nfields; i++) {
        ls_buf_printf(&b, "%s{\"name\":\"%s\",\"type\":[\"null\",", i ? "," : "",
                      s->fields[i].name);
        part_avro_type(&s->fields[i], &b);
        ls_buf_printf(&b, "],\"default\":null,\"field-id\":%d}", s->fields[i].field_id);
    }
    ls_buf_printf(&b, "]},\"field-id\":102},"
                      "{\"name\":\"record_count\",\"type\":\"long\",\"field-id\":103},"
                      "{\"name\":\"file_size_in_bytes\",\"type\":\"long\",\"field-id\":104},");
    map_field(&b, "column_sizes", 108, 117, 118, "long");
    map_field(&b, "value_counts", 109, 119, 120, "long");
    map_field(&b, "null_value_counts", 110, 121, 122, "long");
    map_field(&b, "lower_bounds", 125, 126, 127, "bytes");
    map_field(&b, "upper_bounds", 128, 129, 130, "bytes");
    ls_buf_printf(
        &b,
        "{\"name\":\"key_metadata\",\"type\":[\"null\",\"bytes\"],\"default\":null,\"field-id\":"
        "131},"
        "{\"name\":\"split_offsets\",\"type\":[\"null\",{\"type\":\"array\",\"items\":\"long\","
        "\"element-id\":133}],\"default\":null,\"field-id\":132},"
        "{\"name\":\"sort_order_id\",\"type\":[\"null\",\"int\"],\"default\":null,\"field-id\":140}"
        "]},\"field-id\":2}]}");
    ls_buf_append_u8(&b, 0);
    return (char *)ls_buf_steal(&b, NULL);
}

static const char MANIFEST_LIST_SCHEMA[] =
    "{\"type\":\"record\",\"name\":\"manifest_file\",\"fields\":["
    "{\"name\":\"manifest_path\",\"type\":\"string\",\"field-id\":500},"
    "{\"name\":\"manifest_length\",\"type\":\"long\",\"field-id\":501},"
    "{\"name\":\"partition_spec_id\",\"type\":\"int\",\"field-id\":502},"
    "{\"name\":\"content\",\"type\":\"int\",\"field-id\":517},"
    "{\"name\":\"sequence_number\",\"type\":\"long\",\"field-id\":515},"
    "{\"name\":\"min_sequence_number\",\"type\":\"long\",\"field-id\":516},"
    "{\"name\":\"added_snapshot_id\",\"type\":\"long\",\"field-id\":503},"
    "{\"name\":\"added_files_count\",\"type\":\"int\",\"field-id\":504},"
    "{\"name\":\"existing_files_count\",\"type\":\"int\",\"field-id\":505},"
    "{\"name\":\"deleted_files_count\",\"type\":\"int\",\"field-id\":506},"
    "{\"name\":\"added_rows_count\",\"type\":\"long\",\"field-id\":512},"
    "{\"name\":\"existing_rows_count\",\"type\":\"long\",\"field-id\":513},"
    "{\"name\":\"deleted_rows_count\",\"type\":\"long\",\"field-id\":514},"
    "{\"name\":\"partitions\",\"type\":[\"null\",{\"type\":\"array\",\"items\":{\"type\":"
    "\"record\","
    "\"name\":\"r508\",\"fields\":["
    "{\"name\":\"contains_null\",\"type\":\"boolean\",\"field-id\":509},"
    "{\"name\":\"contains_nan\",\"type\":[\"null\",\"boolean\"],\"default\":null,\"field-id\":518},"
    "{\"name\":\"lower_bound\",\"type\":[\"null\",\"bytes\"],\"default\":null,\"field-id\":510},"
    "{\"name\":\"upper_bound\",\"type\":[\"null\",\"bytes\"],\"default\":null,\"field-id\":511}]},"
    "\"element-id\":508}],\"default\":null,\"field-id\":507},"
    "{\"name\":\"key_metadata\",\"type\":[\"null\",\"bytes\"],\"default\":null,\"field-id\":519}]}";

/* ---- metadata JSON helpers ---------------------------------------------- */

static json_t *spec_json(const ls_ice_spec_t *s)
{
    json_t *fields = json_array();
    for (int i = 0; i < s->nfields; i++) {
        const ls_ice_part_field_t *f = &s->fields[i];
        json_array_append_new(fields,
                              json_pack("{s:s, s:s, s:i, s:i}", "name", f->name, "transform",
                                        transform_name(f->transform), "source-id", f->source_id,
                                        "field-id", f->field_id));
    }
    return fields;
}

static int type_of(const char *s, ls_ice_type *t)
{
    static const struct {
        const char *n;
        ls_ice_type t;
    } map[] = {
        {"int", LS_ICE_INT},
        {"long", LS_ICE_LONG},
        {"date", LS_ICE_DATE},
        {"timestamp", LS_ICE_TIMESTAMP},
        {"timestamptz", LS_ICE_TIMESTAMPTZ},
        {"string", LS_ICE_STRING},
        {"binary", LS_ICE_BINARY},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (s && !strcmp(s, map[i].n)) return *t = map[i].t, 0;
    return -1;
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
        int tr = ls_ice_transform_parse(json_string_value(json_object_get(pf, "transform")));
        json_t *sf, *src = NULL;
        size_t k;
        json_array_foreach(json_object_get(schema, "fields"), k,
                           sf) if (json_integer_value(json_object_get(sf, "id")) == f->source_id)
            src = sf;
        if (tr < 0 || !src ||
            type_of(json_string_value(json_object_get(src, "type")), &f->source_type)) {
            snprintf(t->err, sizeof t->err, "metadata: unsupported partition field %s", f->name);
            return LS_EINVAL;
        }
        f->transform = (ls_ice_transform)tr;
        t->spec.nfields++;
    }
    return LS_OK;
}

static char *key_of(const ls_ice_table_t *t, const char *rel)
{
    return ls_asprintf("%s/%s", t->prefix, rel);
}

static ls_status put_bytes(ls_ice_table_t *t, const char *key, const void *p, size_t n, int flags)
{
    struct iovec iov = {(void *)p, n};
    ls_status st = ls_objstore_put(t->os, key, &iov, 1, flags);
    if (st != LS_OK) snprintf(t->err, sizeof t->err, "put %s: %s", key, ls_status_str(st));
    return st;
}

static char *new_uuid(void)
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
    char *key = key_of(t, "metadata/version-hint.text");
    put_bytes(t, key, hint, (size_t)n, 0);
    ls_free(key);
}

/* Stores `meta` as version `version` and moves the commit point (see the
 * header). On LS_OK *rel_out is the new file's name under the prefix. */
static ls_status write_metadata(ls_ice_table_t *t, json_t *meta, int version, char **rel_out)
{
    char vrel[64];
    snprintf(vrel, sizeof vrel, "metadata/v%d.metadata.json", version);
    char *text = json_dumps(meta, JSON_INDENT(2) | JSON_REAL_PRECISION(17));
    size_t len = strlen(text);
    ls_status st;
    char *rel;
    if (!t->committer.commit) {
        rel = ls_strdup(vrel);
        char *key = key_of(t, rel);
        st = put_bytes(t, key, text, len, LS_OBJSTORE_PUT_CREATE_ONLY);
        ls_free(key);
        if (st == LS_EEXISTS && version > 1) {
            snprintf(t->err, sizeof t->err, "%s exists: concurrent commit", vrel);
            st = LS_ECONFLICT;
        }
    } else {
        char *u = new_uuid();
        rel = ls_asprintf("metadata/%05d-%s.metadata.json", version, u);
        ls_free(u);
        char *key = key_of(t, rel);
        st = put_bytes(t, key, text, len, LS_OBJSTORE_PUT_CREATE_ONLY);
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
        ls_free(key);
        if (st == LS_OK) {
            ls_crashpoint("table.pointer_swapped");
            /* publish for path readers; only committed metadata gets a v<N> name */
            char *vkey = key_of(t, vrel);
            ls_status ps = put_bytes(t, vkey, text, len, 0);
            ls_free(vkey);
            if (ps != LS_OK) version = 0; /* no hint pointing at a missing file */
        }
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
    for (size_t i = 0; props && props[i] && props[i + 1]; i += 2)
        json_object_set_new(properties, props[i], json_string(props[i + 1]));
    int last_pid = 999;
    for (int i = 0; i < spec->nfields; i++)
        if (spec->fields[i].field_id > last_pid) last_pid = spec->fields[i].field_id;
    t->meta = json_pack(
        "{s:i, s:s, s:s, s:i, s:I, s:i, s:i, s:[o], s:i, s:[{s:i, s:o}], s:i, s:i, s:[{s:i, s:[]}],"
        " s:o, s:[], s:[], s:[], s:{}}",
        "format-version", 2, "table-uuid", uuid, "location", location, "last-sequence-number", 0,
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
    char *key = key_of(t, rel);
    ls_status st = get_text(t->os, key, b);
    ls_free(key);
    if (st != LS_OK) return st;
    json_error_t je;
    t->meta = json_loads((char *)b->data, 0, &je);
    if (!t->meta || json_integer_value(json_object_get(t->meta, "format-version")) != 2 ||
        !json_string_value(json_object_get(t->meta, "location"))) {
        snprintf(t->err, sizeof t->err, "%s/%s: not Iceberg v2 metadata (%s)", t->prefix, rel,
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
    char *key = key_of(t, "metadata/version-hint.text");
    ls_status st = get_text(os, key, &b);
    ls_free(key);
    int version = st == LS_OK ? atoi((char *)b.data) : 0;
    if (st != LS_OK && st != LS_ENOTFOUND) return load_done(t, st, &b, out, err, errlen);
    if (version < 1) version = 1;
    /* the hint may lag behind a commit: probe forward */
    char rel[64];
    for (;;) {
        snprintf(rel, sizeof rel, "metadata/v%d.metadata.json", version + 1);
        key = key_of(t, rel);
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

const ls_ice_spec_t *ls_ice_table_spec(const ls_ice_table_t *t)
{
    return &t->spec;
}
int ls_ice_table_version(const ls_ice_table_t *t)
{
    return t->version;
}
const char *ls_ice_table_metadata_location(const ls_ice_table_t *t)
{
    return t->meta_location;
}
const char *ls_ice_table_error(const ls_ice_table_t *t)
{
    return t->err;
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

const char *ls_ice_table_summary(const ls_ice_table_t *t, const char *key)
{
    return json_string_value(json_object_get(json_object_get(current_snapshot(t), "summary"), key));
}

ls_status ls_ice_table_put_data(ls_ice_table_t *t, const ls_buf_t *bytes, const char *ext,
                                ls_ice_datafile_t *df)
{
    ls_buf_t rel;
    ls_buf_init(&rel);
    ls_buf_printf(&rel, "data/");
    if (t->spec.nfields) {
        ls_ice_partition_path(&t->spec, df->partition, &rel);
        ls_buf_append_u8(&rel, '/');
    }
    char *u = new_uuid();
    ls_buf_printf(&rel, "%s.%s", u, ext);
    ls_buf_append_u8(&rel, 0);
    ls_free(u);
    char *key = key_of(t, (char *)rel.data);
    ls_status st = put_bytes(t, key, bytes->data, bytes->len, LS_OBJSTORE_PUT_CREATE_ONLY);
    if (st == LS_OK) {
        ls_free(df->path);
        df->path = ls_asprintf("%s/%s", t->location, (char *)rel.data);
        df->file_size = (int64_t)bytes->len;
    }
    ls_free(key);
    ls_buf_free(&rel);
    return st;
}

/* ---- append --------------------------------------------------------------- */

static void enc_int_long_map(ls_buf_t *b, const ls_ice_datafile_t *df, int which)
{
    ls_avro_union(b, 1);
    ls_avro_block(b, (int64_t)df->nmetrics);
    for (size_t i = 0; i < df->nmetrics; i++) {
        const ls_ice_colmetric_t *m = &df->metrics[i];
        ls_avro_long(b, m->field_id);
        ls_avro_long(b, which == 0 ? m->column_size : which == 1 ? m->value_count : m->null_count);
    }
    ls_avro_end(b);
}

static void enc_bounds(ls_buf_t *b, const ls_ice_datafile_t *df, int upper)
{
    size_t n = 0;
    for (size_t i = 0; i < df->nmetrics; i++)
        n += upper ? df->metrics[i].has_upper : df->metrics[i].has_lower;
    ls_avro_union(b, 1);
    ls_avro_block(b, (int64_t)n);
    for (size_t i = 0; i < df->nmetrics; i++) {
        const ls_ice_colmetric_t *m = &df->metrics[i];
        if (!(upper ? m->has_upper : m->has_lower)) continue;
        ls_avro_long(b, m->field_id);
        if (upper)
            ls_avro_bytes(b, m->upper, m->upper_len);
        else
            ls_avro_bytes(b, m->lower, m->lower_len);
    }
    ls_avro_end(b);
}

static ls_status write_manifest(ls_ice_table_t *t, const ls_ice_datafile_t *files, size_t n,
                                int64_t snap_id, char **path_out, int64_t *len_out)
{
    char *schema = manifest_schema(&t->spec);
    ls_avro_ocf_t *w = ls_avro_ocf_new(schema, LS_AVRO_CODEC_DEFLATE, 0);
    ls_free(schema);
    json_t *cur_schema = NULL, *v;
    size_t i;
    json_int_t sid = json_integer_value(json_object_get(t->meta, "current-schema-id"));
    json_array_foreach(json_object_get(t->meta, "schemas"), i,
                       v) if (json_integer_value(json_object_get(v, "schema-id")) == sid)
        cur_schema = v;
    char *s = json_dumps(cur_schema, JSON_COMPACT);
    ls_avro_ocf_meta_str(w, "schema", s);
    free(s);
    char num[32];
    snprintf(num, sizeof num, "%lld", (long long)sid);
    ls_avro_ocf_meta_str(w, "schema-id", num);
    json_t *sj = spec_json(&t->spec);
    s = json_dumps(sj, JSON_COMPACT);
    json_decref(sj);
    ls_avro_ocf_meta_str(w, "partition-spec", s);
    free(s);
    snprintf(num, sizeof num, "%d", t->spec.spec_id);
    ls_avro_ocf_meta_str(w, "partition-spec-id", num);
    ls_avro_ocf_meta_str(w, "format-version", "2");
    ls_avro_ocf_meta_str(w, "content", "data");
    for (size_t k = 0; k < n; k++) {
        const ls_ice_datafile_t *df = &files[k];
        ls_buf_t *b = ls_avro_ocf_datum(w);
        ls_avro_long(b, 1); /* status ADDED */
        ls_avro_union(b, 1);
        ls_avro_long(b, snap_id); /* snapshot_id */
        ls_avro_union(b, 0);      /* sequence_number: inherited */
        ls_avro_union(b, 0);      /* file_sequence_number: inherited */
        ls_avro_long(b, 0);       /* content DATA */
        ls_avro_string(b, df->path);
        ls_avro_string(b, "PARQUET");
        for (int p = 0; p < t->spec.nfields; p++) {
            ls_avro_union(b, 1);
            ls_avro_long(b, df->partition[p]);
        }
        ls_avro_long(b, df->record_count);
        ls_avro_long(b, df->file_size);
        enc_int_long_map(b, df, 0);
        enc_int_long_map(b, df, 1);
        enc_int_long_map(b, df, 2);
        enc_bounds(b, df, 0);
        enc_bounds(b, df, 1);
        ls_avro_union(b, 0); /* key_metadata */
        ls_avro_union(b, 0); /* split_offsets */
        ls_avro_union(b, 0); /* sort_order_id */
        ls_avro_ocf_datum_done(w);
    }
    ls_buf_t out;
    ls_buf_init(&out);
    ls_status st = ls_avro_ocf_finish(w, &out);
    ls_avro_ocf_free(w);
    char *u = new_uuid();
    char *rel = ls_asprintf("metadata/%s-m0.avro", u);
    ls_free(u);
    char *key = key_of(t, rel);
    if (st == LS_OK) st = put_bytes(t, key, out.data, out.len, LS_OBJSTORE_PUT_CREATE_ONLY);
    if (st == LS_OK) {
        *path_out = ls_asprintf("%s/%s", t->location, rel);
        *len_out = (int64_t)out.len;
    }
    ls_free(key);
    ls_free(rel);
    ls_buf_free(&out);
    return st;
}

static int64_t av_long(const ls_av_t *rec, const char *name, const char *alt, int64_t dflt)
{
    const ls_av_t *v = ls_av_field(rec, name);
    if (!v && alt) v = ls_av_field(rec, alt);
    return v && v->kind == LS_AV_LONG ? v->l : dflt;
}

static void enc_opt_bytes(ls_buf_t *b, const ls_av_t *v)
{
    if (v && v->kind == LS_AV_BYTES) {
        ls_avro_union(b, 1);
        ls_avro_bytes(b, v->p, v->n);
    } else {
        ls_avro_union(b, 0);
    }
}

/* Re-encodes a manifest_file record of a parent manifest list (any writer,
 * v1 or v2) in our v2 layout. v1 lists have no sequence numbers: 0. */
static void copy_manifest_file(ls_buf_t *b, const ls_av_t *r)
{
    const ls_av_t *path = ls_av_field(r, "manifest_path");
    ls_avro_bytes(b, path && path->kind == LS_AV_BYTES ? path->p : (const uint8_t *)"",
                  path && path->kind == LS_AV_BYTES ? path->n : 0);
    ls_avro_long(b, av_long(r, "manifest_length", NULL, 0));
    ls_avro_long(b, av_long(r, "partition_spec_id", NULL, 0));
    ls_avro_long(b, av_long(r, "content", NULL, 0));
    ls_avro_long(b, av_long(r, "sequence_number", NULL, 0));
    ls_avro_long(b, av_long(r, "min_sequence_number", NULL, 0));
    ls_avro_long(b, av_long(r, "added_snapshot_id", NULL, 0));
    ls_avro_long(b, av_long(r, "added_files_count", "added_data_files_count", 0));
    ls_avro_long(b, av_long(r, "existing_files_count", "existing_data_files_count", 0));
    ls_avro_long(b, av_long(r, "deleted_files_count", "deleted_data_files_count", 0));
    ls_avro_long(b, av_long(r, "added_rows_count", NULL, 0));
    ls_avro_long(b, av_long(r, "existing_rows_count", NULL, 0));
    ls_avro_long(b, av_long(r, "deleted_rows_count", NULL, 0));
    const ls_av_t *parts = ls_av_field(r, "partitions");
    if (parts && parts->kind == LS_AV_ARRAY) {
        ls_avro_union(b, 1);
        ls_avro_block(b, (int64_t)parts->nitems);
        for (size_t i = 0; i < parts->nitems; i++) {
            const ls_av_t *p = &parts->items[i];
            ls_avro_bool(b, (int)av_long(p, "contains_null", NULL, 0));
            const ls_av_t *nan = ls_av_field(p, "contains_nan");
            if (nan && nan->kind == LS_AV_BOOL)
                ls_avro_union(b, 1), ls_avro_bool(b, (int)nan->l);
            else
                ls_avro_union(b, 0);
            enc_opt_bytes(b, ls_av_field(p, "lower_bound"));
            enc_opt_bytes(b, ls_av_field(p, "upper_bound"));
        }
        ls_avro_end(b);
    } else {
        ls_avro_union(b, 0);
    }
    enc_opt_bytes(b, ls_av_field(r, "key_metadata"));
}

/* Key of a location under this table, or NULL when it lies elsewhere. */
static char *key_for_location(const ls_ice_table_t *t, const char *loc)
{
    size_t n = strlen(t->location);
    if (strncmp(loc, t->location, n) || loc[n] != '/') return NULL;
    return key_of(t, loc + n + 1);
}

static ls_status write_manifest_list(ls_ice_table_t *t, json_t *parent, int64_t snap_id,
                                     int64_t seq, const char *manifest, int64_t manifest_len,
                                     const ls_ice_datafile_t *files, size_t n, char **path_out)
{
    ls_avro_ocf_t *w = ls_avro_ocf_new(MANIFEST_LIST_SCHEMA, LS_AVRO_CODEC_DEFLATE, 0);
    char num[32];
    snprintf(num, sizeof num, "%lld", (long long)snap_id);
    ls_avro_ocf_meta_str(w, "snapshot-id", num);
    snprintf(num, sizeof num, "%lld",
             parent ? (long long)json_integer_value(json_object_get(parent, "snapshot-id")) : -1LL);
    if (parent) ls_avro_ocf_meta_str(w, "parent-snapshot-id", num);
    snprintf(num, sizeof num, "%lld", (long long)seq);
    ls_avro_ocf_meta_str(w, "sequence-number", num);
    ls_avro_ocf_meta_str(w, "format-version", "2");
    /* the new manifest first (none for an append of no files) */
    if (manifest) {
        ls_buf_t *b = ls_avro_ocf_datum(w);
        int64_t rows = 0;
        for (size_t k = 0; k < n; k++)
            rows += files[k].record_count;
        ls_avro_string(b, manifest);
        ls_avro_long(b, manifest_len);
        ls_avro_long(b, t->spec.spec_id);
        ls_avro_long(b, 0); /* content: data */
        ls_avro_long(b, seq);
        ls_avro_long(b, seq); /* min_sequence_number */
        ls_avro_long(b, snap_id);
        ls_avro_long(b, (int64_t)n);
        ls_avro_long(b, 0);
        ls_avro_long(b, 0);
        ls_avro_long(b, rows);
        ls_avro_long(b, 0);
        ls_avro_long(b, 0);
        ls_avro_union(b, 1);
        ls_avro_block(b, t->spec.nfields);
        for (int p = 0; p < t->spec.nfields; p++) {
            int64_t lo = 0, hi = 0;
            for (size_t k = 0; k < n; k++) {
                int64_t v = files[k].partition[p];
                if (k == 0 || v < lo) lo = v;
                if (k == 0 || v > hi) hi = v;
            }
            ls_avro_bool(b, 0);  /* contains_null: transforms of required values */
            ls_avro_union(b, 0); /* contains_nan: not a float */
            uint8_t x[8];
            ls_ice_type rt = result_type(&t->spec.fields[p]);
            if (n) {
                ls_avro_union(b, 1), ls_avro_bytes(b, x, part_bytes(rt, lo, x));
                ls_avro_union(b, 1), ls_avro_bytes(b, x, part_bytes(rt, hi, x));
            } else {
                ls_avro_union(b, 0), ls_avro_union(b, 0);
            }
        }
        ls_avro_end(b);
        ls_avro_union(b, 0); /* key_metadata */
        ls_avro_ocf_datum_done(w);
    }

    /* then every manifest of the parent snapshot */
    ls_status st = LS_OK;
    const char *plist = parent ? json_string_value(json_object_get(parent, "manifest-list")) : NULL;
    if (plist) {
        char *key = key_for_location(t, plist);
        ls_buf_t raw;
        ls_buf_init(&raw);
        if (!key) {
            snprintf(t->err, sizeof t->err, "manifest list %s is outside the table location",
                     plist);
            st = LS_EINVAL;
        } else {
            st = ls_objstore_get(t->os, key, 0, UINT64_MAX, &raw);
            if (st != LS_OK) snprintf(t->err, sizeof t->err, "get %s: %s", key, ls_status_str(st));
        }
        ls_avro_file_t f;
        if (st == LS_OK) {
            st = ls_avro_file_read(raw.data, raw.len, &f, t->err, sizeof t->err);
            if (st == LS_OK) {
                for (size_t i = 0; i < f.nrecords; i++) {
                    copy_manifest_file(ls_avro_ocf_datum(w), &f.records[i]);
                    ls_avro_ocf_datum_done(w);
                }
                ls_avro_file_free(&f);
            }
        }
        ls_free(key);
        ls_buf_free(&raw);
    }
    ls_buf_t out;
    ls_buf_init(&out);
    if (st == LS_OK) st = ls_avro_ocf_finish(w, &out);
    ls_avro_ocf_free(w);
    if (st == LS_OK) {
        char *u = new_uuid();
        char *rel = ls_asprintf("metadata/snap-%lld-1-%s.avro", (long long)snap_id, u);
        ls_free(u);
        char *key = key_of(t, rel);
        st = put_bytes(t, key, out.data, out.len, LS_OBJSTORE_PUT_CREATE_ONLY);
        if (st == LS_OK) *path_out = ls_asprintf("%s/%s", t->location, rel);
        ls_free(key);
        ls_free(rel);
    }
    ls_buf_free(&out);
    return st;
}

static int64_t summary_long(json_t *summary, const char *key)
{
    const char *s = json_string_value(json_object_get(summary, key));
    return s ? strtoll(s, NULL, 10) : 0;
}

static void summary_set(json_t *summary, const char *key, int64_t v)
{
    char num[32];
    snprintf(num, sizeof num, "%lld", (long long)v);
    json_object_set_new(summary, key, json_string(num));
}

ls_status ls_ice_table_append(ls_ice_table_t *t, const ls_ice_datafile_t *files, size_t n,
                              const char *const *summary_kv, int64_t now_ms, int64_t *snapshot_id)
{
    t->err[0] = 0;
    json_t *parent = current_snapshot(t);
    int64_t seq = (int64_t)json_integer_value(json_object_get(t->meta, "last-sequence-number")) + 1;
    int64_t snap_id;
    do {
        ls_random_bytes(&snap_id, sizeof snap_id);
        snap_id &= INT64_MAX;
    } while (snap_id == 0);
    char *manifest = NULL, *list = NULL;
    int64_t manifest_len = 0;
    /* n == 0 still makes a snapshot: it moves summary properties (e.g. a
     * log's offset past records that produce no rows) */
    ls_status st = n ? write_manifest(t, files, n, snap_id, &manifest, &manifest_len) : LS_OK;
    if (st == LS_OK)
        st = write_manifest_list(t, parent, snap_id, seq, manifest, manifest_len, files, n, &list);
    ls_free(manifest);
    if (st != LS_OK) {
        ls_free(list);
        return st;
    }

    /* summary (spec "Snapshots": operation plus metrics, all strings) */
    json_t *psum = parent ? json_object_get(parent, "summary") : NULL;
    json_t *summary = json_object();
    json_object_set_new(summary, "operation", json_string("append"));
    int64_t recs = 0, bytes = 0;
    for (size_t k = 0; k < n; k++)
        recs += files[k].record_count, bytes += files[k].file_size;
    summary_set(summary, "added-data-files", (int64_t)n);
    summary_set(summary, "added-records", recs);
    summary_set(summary, "added-files-size", bytes);
    summary_set(summary, "total-data-files", summary_long(psum, "total-data-files") + (int64_t)n);
    summary_set(summary, "total-records", summary_long(psum, "total-records") + recs);
    summary_set(summary, "total-files-size", summary_long(psum, "total-files-size") + bytes);
    summary_set(summary, "total-delete-files", 0);
    summary_set(summary, "total-position-deletes", 0);
    summary_set(summary, "total-equality-deletes", 0);
    const char *k;
    json_t *v;
    json_object_foreach(psum, k,
                        v) if (!strncmp(k, LS_ICE_CARRY_PREFIX, strlen(LS_ICE_CARRY_PREFIX)))
        json_object_set(summary, k, v);
    for (size_t i = 0; summary_kv && summary_kv[i] && summary_kv[i + 1]; i += 2)
        json_object_set_new(summary, summary_kv[i], json_string(summary_kv[i + 1]));

    json_t *snap = json_pack("{s:I, s:I, s:I, s:s, s:o, s:I}", "snapshot-id", (json_int_t)snap_id,
                             "sequence-number", (json_int_t)seq, "timestamp-ms", (json_int_t)now_ms,
                             "manifest-list", list, "summary", summary, "schema-id",
                             json_integer_value(json_object_get(t->meta, "current-schema-id")));
    ls_free(list);
    if (parent) json_object_set(snap, "parent-snapshot-id", json_object_get(parent, "snapshot-id"));

    json_t *next = json_deep_copy(t->meta);
    json_array_append_new(json_object_get(next, "snapshots"), snap);
    json_object_set_new(next, "current-snapshot-id", json_integer(snap_id));
    json_object_set_new(next, "last-sequence-number", json_integer(seq));
    json_t *prev_updated = json_object_get(t->meta, "last-updated-ms");
    json_object_set_new(next, "last-updated-ms", json_integer(now_ms));
    json_array_append_new(json_object_get(next, "snapshot-log"),
                          json_pack("{s:I, s:I}", "timestamp-ms", (json_int_t)now_ms, "snapshot-id",
                                    (json_int_t)snap_id));
    json_array_append_new(
        json_object_get(next, "metadata-log"),
        json_pack("{s:O, s:s}", "timestamp-ms", prev_updated, "metadata-file", t->meta_location));
    json_t *refs = json_object_get(next, "refs");
    if (!refs) json_object_set_new(next, "refs", refs = json_object());
    json_object_set_new(
        refs, "main",
        json_pack("{s:I, s:s}", "snapshot-id", (json_int_t)snap_id, "type", "branch"));
    char *rel = NULL;
    st = write_metadata(t, next, t->version + 1, &rel);
    if (st != LS_OK) {
        json_decref(next);
        return st;
    }
    json_decref(t->meta);
    t->meta = next;
    t->version++;
    set_meta_location(t, rel);
    ls_free(rel);
    if (snapshot_id) *snapshot_id = snap_id;
    return LS_OK;
}
