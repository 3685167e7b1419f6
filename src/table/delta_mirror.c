/* The Delta table of an Iceberg table: one mirror commit (design note in
 * delta_mirror.h; the layout in docs/FORMATS.md).
 *
 * Schema: Iceberg's types map onto Delta's by name (int -> integer,
 * timestamptz -> timestamp, timestamp -> timestamp_ntz, fixed and uuid ->
 * binary, decimal(P, S) -> decimal(P,S), struct/list/map alike; required ->
 * not nullable). Delta has no time type: such a table is refused. The Delta
 * table has no partition columns: Delta keeps a partition column's value in
 * the log only (readers do not expect it in the files, where Iceberg keeps
 * it) and has none of Iceberg's transforms but identity; the files' stats
 * (numRecords, nullCount, min and max of top-level number, date, timestamp
 * and string columns) give readers the file skipping partitions would. */
#include "table/delta_mirror.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "base/alloc.h"
#include "base/buf.h"
#include "base/crashpoint.h"
#include "base/diag.h"
#include "table/delta_log.h"
#include "table/iceberg_manifest.h"

#define MAX_ATTEMPTS 5

static json_t *delta_type(json_t *t, bool *ntz, char *why, size_t whylen);

static json_t *delta_struct(json_t *fields, bool *ntz, char *why, size_t whylen)
{
    json_t *out = json_array(), *f;
    size_t i;
    json_array_foreach(fields, i, f)
    {
        const char *name = json_string_value(json_object_get(f, "name"));
        json_t *ty = delta_type(json_object_get(f, "type"), ntz, why, whylen);
        if (!name || !ty) {
            if (name && why[0] && !strchr(why, ':')) {
                char inner[200];
                snprintf(inner, sizeof inner, "%s", why);
                snprintf(why, whylen, "column %s: %s", name, inner);
            }
            json_decref(ty);
            json_decref(out);
            return NULL;
        }
        json_array_append_new(out,
                              json_pack("{s:s,s:o,s:b,s:{}}", "name", name, "type", ty, "nullable",
                                        !json_is_true(json_object_get(f, "required")), "metadata"));
    }
    return json_pack("{s:s,s:o}", "type", "struct", "fields", out);
}

static json_t *delta_type(json_t *t, bool *ntz, char *why, size_t whylen)
{
    if (json_is_object(t)) {
        const char *kind = json_string_value(json_object_get(t, "type"));
        if (kind && !strcmp(kind, "struct"))
            return delta_struct(json_object_get(t, "fields"), ntz, why, whylen);
        if (kind && !strcmp(kind, "list")) {
            json_t *e = delta_type(json_object_get(t, "element"), ntz, why, whylen);
            return e ? json_pack("{s:s,s:o,s:b}", "type", "array", "elementType", e, "containsNull",
                                 !json_is_true(json_object_get(t, "element-required")))
                     : NULL;
        }
        if (kind && !strcmp(kind, "map")) {
            json_t *k = delta_type(json_object_get(t, "key"), ntz, why, whylen);
            json_t *v = k ? delta_type(json_object_get(t, "value"), ntz, why, whylen) : NULL;
            if (!v) {
                json_decref(k);
                return NULL;
            }
            return json_pack("{s:s,s:o,s:o,s:b}", "type", "map", "keyType", k, "valueType", v,
                             "valueContainsNull",
                             !json_is_true(json_object_get(t, "value-required")));
        }
        snprintf(why, whylen, "type %s has no Delta type", kind ? kind : "?");
        return NULL;
    }
    const char *s = json_string_value(t);
    if (!s) {
        snprintf(why, whylen, "a type that is not Iceberg JSON");
        return NULL;
    }
    static const char *const same[][2] = {
        {"boolean", "boolean"}, {"int", "integer"},   {"long", "long"},
        {"float", "float"},     {"double", "double"}, {"date", "date"},
        {"string", "string"},   {"binary", "binary"}, {"timestamptz", "timestamp"},
        {"uuid", "binary"}};
    for (size_t i = 0; i < sizeof same / sizeof *same; i++)
        if (!strcmp(s, same[i][0])) return json_string(same[i][1]);
    if (!strcmp(s, "timestamp")) {
        *ntz = true;
        return json_string("timestamp_ntz");
    }
    if (!strncmp(s, "fixed[", 6)) return json_string("binary");
    int p, sc;
    if (sscanf(s, "decimal(%d, %d)", &p, &sc) == 2 || sscanf(s, "decimal(%d,%d)", &p, &sc) == 2) {
        char d[32];
        snprintf(d, sizeof d, "decimal(%d,%d)", p, sc);
        return json_string(d);
    }
    snprintf(why, whylen, "Iceberg type %s has no Delta type (the Delta protocol's types)", s);
    return NULL;
}

char *ls_delta_schema_of_iceberg(const char *iceberg_schema, bool *ntz, char *why, size_t whylen)
{
    *ntz = false;
    why[0] = 0;
    json_t *s = json_loads(iceberg_schema, 0, NULL);
    json_t *d = s ? delta_struct(json_object_get(s, "fields"), ntz, why, whylen) : NULL;
    if (!s) snprintf(why, whylen, "the table's schema is not JSON");
    json_decref(s);
    if (!d) return NULL;
    char *text = json_dumps(d, JSON_COMPACT);
    json_decref(d);
    char *out = ls_strdup(text);
    free(text);
    return out;
}

/* ---- file stats ---------------------------------------------------------- */

/* The top-level primitive columns of an Iceberg schema: field id -> {name, type}. */
static json_t *top_columns(const char *iceberg_schema)
{
    json_t *s = json_loads(iceberg_schema, 0, NULL), *cols = json_object(), *f;
    size_t i;
    json_array_foreach(json_object_get(s, "fields"), i, f)
    {
        json_t *ty = json_object_get(f, "type");
        if (!json_is_string(ty)) continue;
        char id[24];
        snprintf(id, sizeof id, "%lld", (long long)json_integer_value(json_object_get(f, "id")));
        json_object_set_new(cols, id,
                            json_pack("{s:O,s:O}", "name", json_object_get(f, "name"), "type", ty));
    }
    json_decref(s);
    return cols;
}

static int64_t le_int(const uint8_t *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return n == 4 ? (int64_t)(int32_t)(uint32_t)v : (int64_t)v;
}

/* Milliseconds of a microsecond timestamp, rounded down (a minimum) or up
 * (a maximum), so the millisecond stat Delta keeps still bounds the values. */
static int64_t micros_to_ms(int64_t us, bool up)
{
    int64_t ms = us / 1000, rem = us % 1000;
    if (rem < 0) ms--, rem += 1000;
    return up && rem ? ms + 1 : ms;
}

/* A date (days) or timestamp (ms) as Delta's stats text: "2026-12-07",
 * "2026-12-07T10:00:00.123Z" (timestamp), without the Z (timestamp_ntz). */
static json_t *time_text(int64_t v, const char *ty)
{
    bool date = !strcmp(ty, "date");
    time_t secs = (time_t)(date ? v * 86400 : (v - ((v % 1000) + 1000) % 1000) / 1000);
    struct tm tm;
    char out[48];
    if (!gmtime_r(&secs, &tm)) return NULL;
    size_t n = strftime(out, sizeof out, date ? "%Y-%m-%d" : "%Y-%m-%dT%H:%M:%S", &tm);
    if (!n) return NULL;
    if (!date)
        snprintf(out + n, sizeof out - n, ".%03d%s", (int)(((v % 1000) + 1000) % 1000),
                 !strcmp(ty, "timestamptz") ? "Z" : "");
    return json_string(out);
}

/* A column's Iceberg bound b[0..n) (its single-value serialization) as a
 * Delta stats value, or NULL where Delta would get a wrong bound: ints and
 * longs; dates and timestamps (milliseconds, rounded outward); finite
 * floats and doubles; strings (a lower bound is a prefix, which Delta's
 * cut-off strings allow; an upper bound is whole when Iceberg keeps it).
 * Decimals, binary, booleans and times are left out. */
static json_t *stat_value(const char *ty, const uint8_t *b, size_t n, bool upper)
{
    if (!strcmp(ty, "int") && n == 4) return json_integer(le_int(b, 4));
    if (!strcmp(ty, "long") && n == 8) return json_integer(le_int(b, 8));
    if (!strcmp(ty, "date") && n == 4) return time_text(le_int(b, 4), ty);
    if ((!strcmp(ty, "timestamp") || !strcmp(ty, "timestamptz")) && n == 8)
        return time_text(micros_to_ms(le_int(b, 8), upper), ty);
    if ((!strcmp(ty, "float") && n == 4) || (!strcmp(ty, "double") && n == 8)) {
        uint64_t bits = (uint64_t)le_int(b, n);
        double d;
        if (n == 4) {
            uint32_t u = (uint32_t)bits;
            float f;
            memcpy(&f, &u, 4);
            d = f;
        } else {
            memcpy(&d, &bits, 8);
        }
        return isfinite(d) ? json_real(d) : NULL;
    }
    if (!strcmp(ty, "string")) return json_stringn((const char *)b, n); /* NULL when not UTF-8 */
    return NULL;
}

/* Delta's stats JSON of a data file: numRecords, and per top-level column
 * its nullCount and, where stat_value has one, minValues/maxValues from the
 * Iceberg bounds. ls_free it. */
static char *file_stats(const ls_ice_datafile_t *df, json_t *cols)
{
    json_t *mins = json_object(), *maxs = json_object(), *nulls = json_object();
    for (size_t i = 0; i < df->nmetrics; i++) {
        const ls_ice_colmetric_t *m = &df->metrics[i];
        char id[24];
        snprintf(id, sizeof id, "%d", m->field_id);
        json_t *c = json_object_get(cols, id);
        if (!c) continue;
        const char *name = json_string_value(json_object_get(c, "name"));
        const char *ty = json_string_value(json_object_get(c, "type"));
        json_object_set_new(nulls, name, json_integer(m->null_count));
        json_t *lo = m->has_lower ? stat_value(ty, m->lower, m->lower_len, false) : NULL;
        json_t *hi = m->has_upper ? stat_value(ty, m->upper, m->upper_len, true) : NULL;
        if (lo) json_object_set_new(mins, name, lo);
        if (hi) json_object_set_new(maxs, name, hi);
    }
    json_t *st = json_pack("{s:I,s:o,s:o,s:o}", "numRecords", (json_int_t)df->record_count,
                           "minValues", mins, "maxValues", maxs, "nullCount", nulls);
    char *text = json_dumps(st, JSON_COMPACT);
    json_decref(st);
    char *out = ls_strdup(text);
    free(text);
    return out;
}

/* ---- one mirror commit --------------------------------------------------- */

typedef struct mirror {
    ls_ice_table_t *t;
    ls_delta_log_t *log;
    ls_delta_commit_t *c;
    const char *schema; /* Delta schemaString */
    bool ntz;           /* needs timestampNtz */
    const ls_delta_opts_t *o;
    const char *conf[7];  /* metaData.configuration */
    json_t *cols;         /* top_columns */
    json_t *iceberg_live; /* encoded relative path -> true */
} mirror_t;

/* protocol and metaData, when the log has none or another one. */
static void commit_table(mirror_t *m, int64_t now_ms)
{
    int64_t v = ls_delta_log_version(m->log);
    static const char *const ntz_features[] = {"timestampNtz", NULL};
    int reader = ls_delta_log_reader_version(m->log); /* 0: no protocol yet */
    if (reader == 0 || (m->ntz && reader < 3)) {
        if (m->ntz)
            ls_delta_commit_protocol(m->c, 3, 7, ntz_features);
        else
            ls_delta_commit_protocol(m->c, 1, 2, NULL);
    }
    json_t *want = json_object();
    for (size_t i = 0; m->conf[i]; i += 2)
        json_object_set_new(want, m->conf[i], json_string(m->conf[i + 1]));
    char *wtext = json_dumps(want, JSON_COMPACT | JSON_SORT_KEYS);
    char *has = ls_delta_log_configuration(m->log);
    const char *schema = ls_delta_log_schema(m->log);
    if (v < 0 || !schema || strcmp(schema, m->schema) || !has || strcmp(has, wtext)) {
        const char *id = ls_delta_log_table_id(m->log);
        ls_delta_commit_metadata(m->c, id ? id : ls_ice_table_uuid(m->t), m->schema, m->conf,
                                 now_ms);
    }
    free(wtext);
    ls_free(has);
    json_decref(want);
}

/* adds and removes: the Delta live files made the Iceberg ones. */
static ls_status commit_files(mirror_t *m, int64_t now_ms, char *err, size_t errlen)
{
    ls_ice_mentry_t *e = NULL;
    size_t n = 0;
    ls_status st = ls_ice_table_live_files(m->t, &e, &n);
    if (st != LS_OK) {
        snprintf(err, errlen, "reading the Iceberg table's live files: %s",
                 ls_ice_table_error(m->t));
        return st;
    }
    const char *loc = ls_ice_table_location(m->t);
    size_t loclen = strlen(loc);
    for (size_t i = 0; i < n && st == LS_OK; i++) {
        const ls_ice_datafile_t *df = &e[i].df;
        if (strncmp(df->path, loc, loclen) != 0 || df->path[loclen] != '/') {
            snprintf(err, errlen, "data file %s is not under the table's location %s", df->path,
                     loc);
            st = LS_EINVAL;
            break;
        }
        char *rel = ls_delta_path_encode(df->path + loclen + 1);
        json_object_set_new(m->iceberg_live, rel, json_true());
        if (!ls_delta_log_live(m->log, rel)) {
            char *stats = file_stats(df, m->cols);
            ls_delta_commit_add(m->c, rel, df->file_size, now_ms, stats);
            ls_free(stats);
        }
        ls_free(rel);
    }
    ls_ice_mentries_free(e, n);
    size_t np;
    const char **paths = ls_delta_log_live_paths(m->log, &np);
    for (size_t i = 0; i < np && st == LS_OK; i++)
        if (!json_object_get(m->iceberg_live, paths[i]))
            ls_delta_commit_remove(m->c, paths[i], ls_delta_log_live_size(m->log, paths[i]));
    return st;
}

/* The checkpoint of the version just committed, then the clean-up below
 * it; a failure only leaves the log without them until the next one. */
static void checkpoint(ls_objstore_t *os, const char *prefix, const ls_delta_opts_t *o,
                       int64_t now_ms)
{
    char err[600] = "";
    ls_delta_log_t *l = NULL;
    size_t deleted = 0;
    ls_status st = ls_delta_log_load(os, prefix, &l, err, sizeof err);
    if (st == LS_OK)
        st = ls_delta_log_checkpoint(os, prefix, l, now_ms - o->file_grace_ms, err, sizeof err);
    if (st == LS_OK) ls_crashpoint("table.delta.checkpointed");
    if (st == LS_OK && o->log_retention_ms > 0)
        st = ls_delta_log_cleanup(os, prefix, ls_delta_log_version(l), now_ms - o->log_retention_ms,
                                  &deleted, err, sizeof err);
    if (st != LS_OK)
        LS_WARN("table", "Delta log %s: checkpoint of version %lld: %s; the next one retries",
                prefix, (long long)(l ? ls_delta_log_version(l) : -1), err);
    else if (deleted)
        LS_INFO("table", "Delta log %s: checkpoint at version %lld, %zu older log files deleted",
                prefix, (long long)ls_delta_log_version(l), deleted);
    ls_delta_log_free(l);
}

/* One attempt: LS_OK with *files (0: nothing to commit), LS_ECONFLICT when
 * another writer took the version. */
static ls_status mirror_once(mirror_t *m, int64_t now_ms, size_t *files, char *err, size_t errlen)
{
    ls_objstore_t *os = ls_ice_table_objstore(m->t);
    const char *prefix = ls_ice_table_prefix(m->t);
    int64_t seq = ls_ice_table_last_sequence(m->t);
    ls_status st = ls_delta_log_load(os, prefix, &m->log, err, errlen);
    if (st != LS_OK) return st;
    /* this sequence number of this Iceberg table is mirrored already (a log
     * of another table at the location, one created again, gets the diff) */
    const char *schema = ls_delta_log_schema(m->log), *id = ls_delta_log_table_id(m->log),
               *uuid = ls_ice_table_uuid(m->t);
    if (ls_delta_log_txn(m->log, LS_DELTA_APP_ID) >= seq && schema && !strcmp(schema, m->schema) &&
        id && uuid && !strcmp(id, uuid))
        return LS_OK;
    m->c = ls_delta_commit_new(now_ms, "WRITE");
    m->iceberg_live = json_object();
    commit_table(m, now_ms);
    bool table_changed = ls_delta_commit_actions(m->c) > 1;
    if ((st = commit_files(m, now_ms, err, errlen)) != LS_OK) return st;
    if (!table_changed && !ls_delta_commit_files(m->c))
        return LS_OK; /* a snapshot that changed no file (offsets only): nothing for Delta */
    ls_delta_commit_txn(m->c, LS_DELTA_APP_ID, seq);
    ls_crashpoint("table.delta.before_commit");
    st = ls_delta_commit_put(os, prefix, m->log, m->c, err, errlen);
    if (st == LS_OK) {
        *files = ls_delta_commit_files(m->c);
        ls_crashpoint("table.delta.committed");
        int64_t v = ls_delta_log_version(m->log) + 1;
        if (v > 0 && v % m->o->checkpoint_interval == 0) checkpoint(os, prefix, m->o, now_ms);
    }
    return st;
}

static void mirror_reset(mirror_t *m)
{
    ls_delta_log_free(m->log);
    ls_delta_commit_free(m->c);
    json_decref(m->iceberg_live);
    m->log = NULL;
    m->c = NULL;
    m->iceberg_live = NULL;
}

ls_status ls_delta_mirror(ls_ice_table_t *t, const ls_delta_opts_t *o, int64_t now_ms,
                          size_t *files, char *err, size_t errlen)
{
    *files = 0;
    int last_column_id;
    char *ice = ls_ice_table_schema(t, &last_column_id);
    char why[300];
    bool ntz;
    char *schema = ice ? ls_delta_schema_of_iceberg(ice, &ntz, why, sizeof why) : NULL;
    if (!schema) {
        snprintf(err, errlen,
                 "lakestream.table.format=delta: the table's schema cannot be a "
                 "Delta schema: %s",
                 ice ? why : "no schema");
        ls_free(ice);
        return LS_EINVAL;
    }
    char files_kept[64], logs_kept[64], interval[24];
    snprintf(files_kept, sizeof files_kept, "interval %lld milliseconds",
             (long long)o->file_grace_ms);
    snprintf(logs_kept, sizeof logs_kept, "interval %lld milliseconds",
             (long long)o->log_retention_ms);
    snprintf(interval, sizeof interval, "%lld", (long long)o->checkpoint_interval);
    mirror_t m = {.t = t,
                  .o = o,
                  .schema = schema,
                  .ntz = ntz,
                  .conf = {"delta.deletedFileRetentionDuration", files_kept,
                           "delta.checkpointInterval", interval,
                           o->log_retention_ms > 0 ? "delta.logRetentionDuration" : NULL, logs_kept,
                           NULL},
                  .cols = top_columns(ice)};
    ls_status st = LS_ECONFLICT;
    for (int i = 0; i < MAX_ATTEMPTS && st == LS_ECONFLICT; i++) {
        st = mirror_once(&m, now_ms, files, err, errlen);
        mirror_reset(&m);
    }
    json_decref(m.cols);
    ls_free(schema);
    ls_free(ice);
    return st;
}
