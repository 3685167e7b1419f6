/* Schemaless JSON values (value.format=json): the JSON schema inferred from
 * the values a table has seen (ls_json_infer, widened value by value) and
 * rebuilt from the table's Iceberg schema at each pass
 * (ls_json_infer_from_iceberg). The Avro view of the inferred schema is
 * made by avro_view.c like that of any registered JSON schema. */
#include "registry/avro_view.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "registry/avro_view_int.h"
#include "registry/json_schema_int.h"

/* ---- schemaless JSON: inferred schemas -------------------------------------------- */

#define INFER_MAX_DEPTH 32

static const char *infer_type(json_t *v) { return ls_json_kind(v, false); }

/* Merges value v into the schema at *slot (NULL: none yet). */
static ls_json_fit infer_merge(json_t **slot, json_t *v, int depth, char *why, size_t whylen)
{
    const char *vt = infer_type(v);
    if (!vt) return LS_JSON_FITS; /* null: no information */
    if (depth > INFER_MAX_DEPTH) {
        snprintf(why, whylen, "nested deeper than %d levels", INFER_MAX_DEPTH);
        return LS_JSON_CONFLICT;
    }
    bool changed = false;
    ls_json_fit rc;
    if (!*slot) {
        json_t *s = json_pack("{ss}", "type", vt);
        if (!strcmp(vt, "object")) json_object_set_new(s, "properties", json_object());
        json_t *tmp = s;
        rc = LS_JSON_FITS;
        if (!strcmp(vt, "object") || !strcmp(vt, "array"))
            rc = infer_merge(&tmp, v, depth, why, whylen);
        if (rc == LS_JSON_CONFLICT) {
            json_decref(s);
            return LS_JSON_CONFLICT;
        }
        /* an object without properties or an array of nothing has no column yet */
        if ((!strcmp(vt, "object") && !json_object_size(json_object_get(s, "properties"))) ||
            (!strcmp(vt, "array") && !json_object_get(s, "items"))) {
            json_decref(s);
            return LS_JSON_FITS;
        }
        *slot = s;
        return LS_JSON_WIDENED;
    }
    const char *ct = json_string_value(json_object_get(*slot, "type"));
    if (!ct) ct = "";
    if (!strcmp(ct, "number") && !strcmp(vt, "integer")) return LS_JSON_FITS;
    if (strcmp(ct, vt)) {
        snprintf(why, whylen, "%s where the column has %s", vt, ct);
        return LS_JSON_CONFLICT;
    }
    if (!strcmp(vt, "object")) {
        json_t *props = json_object_get(*slot, "properties");
        const char *k;
        json_t *x;
        json_object_foreach(v, k, x)
        {
            if (!strncmp(k, "_kafka_", 7) || (depth == 0 && !strcmp(k, "_raw"))) {
                snprintf(why, whylen, "the property name '%s' is the table's own", k);
                return LS_JSON_CONFLICT;
            }
            json_t *cur = json_object_get(props, k);
            json_t *next = cur;
            if ((rc = infer_merge(&next, x, depth + 1, why, whylen)) == LS_JSON_CONFLICT)
                return LS_JSON_CONFLICT;
            if (rc == LS_JSON_WIDENED && !cur) json_object_set_new(props, k, next);
            changed |= rc == LS_JSON_WIDENED;
        }
        return changed ? LS_JSON_WIDENED : LS_JSON_FITS;
    }
    if (!strcmp(vt, "array")) {
        for (size_t i = 0; i < json_array_size(v); i++) {
            json_t *cur = json_object_get(*slot, "items");
            json_t *next = cur;
            if ((rc = infer_merge(&next, json_array_get(v, i), depth + 1, why, whylen)) ==
                LS_JSON_CONFLICT)
                return LS_JSON_CONFLICT;
            if (rc == LS_JSON_WIDENED && !cur) json_object_set_new(*slot, "items", next);
            changed |= rc == LS_JSON_WIDENED;
        }
        return changed ? LS_JSON_WIDENED : LS_JSON_FITS;
    }
    return LS_JSON_FITS;
}

static json_t *infer_root(void)
{
    json_t *s = json_pack("{ss}", "type", "object");
    json_object_set_new(s, "properties", json_object());
    return s;
}

/* The fallback column, after the first value's columns. */
static void add_raw(json_t *s)
{
    json_object_set_new(json_object_get(s, "properties"), "_raw",
                        json_pack("{ss}", "type", "string"));
}

ls_json_fit ls_json_infer(json_t **schema, const uint8_t *p, size_t len, char *why, size_t whylen)
{
    json_error_t je;
    json_t *v = json_loadb((const char *)p, len, JSON_REJECT_DUPLICATES, &je);
    if (!v) {
        snprintf(why, whylen, "not a JSON object: %s (at byte %d)", je.text, je.position);
        return LS_JSON_NOT_OBJECT;
    }
    if (!json_is_object(v)) {
        json_decref(v);
        snprintf(why, whylen, "not a JSON object");
        return LS_JSON_NOT_OBJECT;
    }
    bool created = !*schema;
    if (created) *schema = infer_root();
    ls_json_fit rc = infer_merge(schema, v, 0, why, whylen);
    if (created) add_raw(*schema);
    json_decref(v);
    if (rc == LS_JSON_CONFLICT) return LS_JSON_CONFLICT;
    return rc == LS_JSON_WIDENED || created ? LS_JSON_WIDENED : LS_JSON_FITS;
}

static json_t *from_iceberg(json_t *t)
{
    if (json_is_string(t)) {
        const char *n = json_string_value(t);
        const char *js = !strcmp(n, "long") || !strcmp(n, "int")       ? "integer"
                         : !strcmp(n, "double") || !strcmp(n, "float") ? "number"
                         : !strcmp(n, "boolean")                       ? "boolean"
                                                                       : "string";
        return json_pack("{ss}", "type", js);
    }
    const char *k = json_string_value(json_object_get(t, "type"));
    if (k && !strcmp(k, "list")) {
        json_t *s = json_pack("{ss}", "type", "array");
        json_object_set_new(s, "items", from_iceberg(json_object_get(t, "element")));
        return s;
    }
    json_t *s = json_pack("{ss}", "type", "object"), *props = json_object();
    json_t *fields = json_object_get(t, "fields");
    for (size_t i = 0; i < json_array_size(fields); i++) {
        json_t *f = json_array_get(fields, i);
        json_object_set_new(props, json_string_value(json_object_get(f, "name")),
                            from_iceberg(json_object_get(f, "type")));
    }
    json_object_set_new(s, "properties", props);
    return s;
}

json_t *ls_json_infer_from_iceberg(const char *iceberg_schema_json)
{
    json_t *t = json_loads(iceberg_schema_json, 0, NULL);
    if (!t) return NULL;
    json_t *s = infer_root(), *props = json_object_get(s, "properties");
    json_t *fields = json_object_get(t, "fields");
    for (size_t i = 0; i < json_array_size(fields); i++) {
        json_t *f = json_array_get(fields, i);
        const char *n = json_string_value(json_object_get(f, "name"));
        if (!n || !strncmp(n, "_kafka_", 7) || !strcmp(n, "_raw")) continue;
        json_object_set_new(props, n, from_iceberg(json_object_get(f, "type")));
    }
    add_raw(s);
    json_decref(t);
    return s;
}
