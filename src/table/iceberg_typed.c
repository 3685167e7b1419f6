/* Typed Kafka tables: schema mapping, evolution and Avro shredding (see
 * iceberg_typed.h).
 *
 * A shape is the table's current Iceberg schema as a tree of columns (col_t:
 * field id, name, Iceberg type, required) with the Parquet facts each column
 * needs to shred a datum in one walk:
 *   def  definition level of the column's Parquet field when it is present
 *        (its parent's, +1 when the field is optional or repeated);
 *   rep  the repetition level of values inside the column's innermost list
 *        or map (0 outside any);
 *   [lo, hi) the leaf columns under the column, so a null, empty or absent
 *        subtree writes one null per leaf at the level where it stopped.
 * Parquet layout, Iceberg's: a list is <opt|req> group (LIST) { repeated
 * group list { element } }, a map <opt|req> group (MAP) { repeated group
 * key_value { required key; value } }. A shape is built from the first
 * record's Avro schema (ls_typed_shape_new) or from the table metadata's
 * current schema (ls_typed_shape_parse), and is never changed: evolution
 * makes a new shape from a copy of the columns.
 *
 * Readers and evolution are one walk of the writer's Avro schema against
 * the table's columns, matching record fields by name (Avro schema
 * resolution), else by one of the writer field's aliases (a field renamed
 * in a later version, listing its old name, keeps filling its column). The
 * column keeps its name: renaming it would break every query that names
 * it whenever a producer renames a field, and records of older versions,
 * still carrying the old name, must keep landing in the same column (the
 * walk sees only the current schema, not the names a column had). In "fit" mode nothing may change
 * and the walk yields the reader (a tree of rnode_t: per writer node, the
 * column it fills and how its value converts); in "evolve" mode it changes
 * a copy of the columns the ways Iceberg's schema evolution allows (spec,
 * "Schema Evolution"): a new field becomes an optional column with fresh ids
 * (from last-column-id + 1, numbered as a new table's are); int -> long,
 * float -> double and decimal(P,S) -> decimal(P',S), P' > P, widen the
 * column (a decimal's scale and a fixed's size never change); a nullable writer field or a table
 * column the writer lacks makes the column optional. Anything else (a
 * string where the column is int, a record where it is a list, a type
 * Iceberg cannot promote, an Avro type not mapped) is incompatible, named by
 * path. A writer narrower than the table fits as is: int into long, float
 * into double, a required field into an optional column, and a column the
 * writer lacks (optional by then) reads as null — not the Avro default of
 * some schema version: Iceberg v2 has no column defaults, and null says
 * what is true, that the record did not carry the field.
 *
 * Writing a row is two walks of the datum: the first only decodes (so a
 * corrupt datum writes nothing), the second puts the values; that is in
 * iceberg_typed_write.c, with the partition source values. The shape and
 * reader they share are in iceberg_typed_int.h. */
#include "table/iceberg_typed_int.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "table/file_rewrite.h"

static const struct {
    const char *name;
    ls_pq_type pq;
    ls_pq_logical lt;
} prims[C_NPRIM] = {
    [C_BOOLEAN] = {"boolean", LS_PQ_BOOLEAN, LS_PQ_LT_NONE},
    [C_INT] = {"int", LS_PQ_INT32, LS_PQ_LT_NONE},
    [C_LONG] = {"long", LS_PQ_INT64, LS_PQ_LT_NONE},
    [C_FLOAT] = {"float", LS_PQ_FLOAT, LS_PQ_LT_NONE},
    [C_DOUBLE] = {"double", LS_PQ_DOUBLE, LS_PQ_LT_NONE},
    [C_DATE] = {"date", LS_PQ_INT32, LS_PQ_LT_DATE},
    [C_TIMESTAMP] = {"timestamp", LS_PQ_INT64, LS_PQ_LT_TIMESTAMP_US},
    [C_TIMESTAMPTZ] = {"timestamptz", LS_PQ_INT64, LS_PQ_LT_TIMESTAMP_US_UTC},
    [C_STRING] = {"string", LS_PQ_BYTE_ARRAY, LS_PQ_LT_STRING},
    [C_BINARY] = {"binary", LS_PQ_BYTE_ARRAY, LS_PQ_LT_NONE},
    [C_TIME] = {"time", LS_PQ_INT64, LS_PQ_LT_TIME_US},
    [C_UUID] = {"uuid", LS_PQ_FIXED_LEN_BYTE_ARRAY, LS_PQ_LT_UUID},
    /* parameterized: the Iceberg name and the Parquet type come from col_pq */
    [C_DECIMAL] = {"decimal", LS_PQ_INT64, LS_PQ_LT_DECIMAL},
    [C_FIXED] = {"fixed", LS_PQ_FIXED_LEN_BYTE_ARRAY, LS_PQ_LT_NONE},
};

static bool meta_top_level(int field_id)
{
    return field_id >= LS_RAW_FID_PARTITION && field_id <= LS_RAW_FID_HEADERS;
}

static void put_err(char *err, size_t errlen, const char *path, const char *why)
{
    snprintf(err, errlen, "%s: %s", *path ? path : "/", why);
}

/* ---------------------------------------------------------------- columns */

static col_t *col_new(ctype type, int id, const char *name, bool required)
{
    col_t *c = LS_NEW(col_t);
    c->type = type;
    c->id = id;
    c->name = ls_strdup(name);
    c->required = required;
    return c;
}

static void col_add(col_t *parent, col_t *kid)
{
    parent->kids = ls_realloc(parent->kids, (parent->nkids + 1) * sizeof *parent->kids);
    parent->kids[parent->nkids++] = kid;
}

static void col_free(col_t *c)
{
    if (!c) return;
    for (size_t i = 0; i < c->nkids; i++)
        col_free(c->kids[i]);
    ls_free(c->kids);
    ls_free(c->name);
    ls_free(c);
}

static col_t *col_copy(const col_t *c)
{
    col_t *n = col_new(c->type, c->id, c->name, c->required);
    n->pk = c->pk;
    n->prec = c->prec, n->scale = c->scale, n->len = c->len;
    for (size_t i = 0; i < c->nkids; i++)
        col_add(n, col_copy(c->kids[i]));
    return n;
}

/* A union of several non-null types (Iceberg's Avro appendix: a struct of
 * optional members; named as Iceberg Java's AvroSchemaUtil names them: a
 * required int "tag", the chosen member's number, then "field0",
 * "field1", ... per non-null branch in the union's order). */
#define UNION_TAG "tag"
#define UNION_MEMBER "field"

static size_t non_null_branches(const ls_avro_node_t *t)
{
    size_t n = 0;
    for (size_t i = 0; t->kind == LS_AVRO_UNION && i < t->nbranches; i++)
        n += t->branches[i]->kind != LS_AVRO_NULL;
    return n;
}

/* The non-null type of t; *null_branch is the null's index in a union with
 * null (-1 otherwise); NULL for a union of several non-null types (or of
 * null alone). */
static const ls_avro_node_t *unwrap(const ls_avro_node_t *t, int *null_branch)
{
    *null_branch = -1;
    if (t->kind != LS_AVRO_UNION) return t;
    const ls_avro_node_t *other = NULL;
    int others = 0;
    for (size_t i = 0; i < t->nbranches; i++) {
        if (t->branches[i]->kind == LS_AVRO_NULL)
            *null_branch = (int)i;
        else
            other = t->branches[i], others++;
    }
    return *null_branch >= 0 && others == 1 ? other : NULL;
}

/* The Parquet physical type of primitive column c (*len: a fixed length). */
ls_pq_type ls_typed_col_pq(const col_t *c, int *len)
{
    *len = 0;
    switch (c->type) {
    case C_DECIMAL: /* as Iceberg's writers store them (spec, Parquet appendix) */
        if (c->prec <= 9) return LS_PQ_INT32;
        if (c->prec <= 18) return LS_PQ_INT64;
        *len = ls_pq_decimal_length(c->prec);
        return LS_PQ_FIXED_LEN_BYTE_ARRAY;
    case C_FIXED: *len = c->len; return LS_PQ_FIXED_LEN_BYTE_ARRAY;
    case C_UUID: *len = 16; return LS_PQ_FIXED_LEN_BYTE_ARRAY;
    default: return prims[c->type].pq;
    }
}

/* The Iceberg type of c as the schema JSON spells it, into buf. */
const char *ls_typed_type_str(const col_t *c, char *buf, size_t n)
{
    if (c->type == C_DECIMAL)
        snprintf(buf, n, "decimal(%d, %d)", c->prec, c->scale);
    else if (c->type == C_FIXED)
        snprintf(buf, n, "fixed[%d]", c->len);
    else
        snprintf(buf, n, "%s",
                 c->type == C_STRUCT ? "struct"
                 : c->type == C_LIST ? "list"
                 : c->type == C_MAP  ? "map"
                                     : prims[c->type].name);
    return buf;
}

/* Why Avro primitive t has no column (NULL: it has one, see avro_prim). */
static const char *prim_refusal(const ls_avro_node_t *t)
{
    const char *lg = t->logical ? t->logical : "";
    if (!strcmp(lg, "timestamp-nanos") || !strcmp(lg, "local-timestamp-nanos"))
        return "nanosecond timestamps need Iceberg format version 3; this table is version 2";
    if (!strcmp(lg, "decimal") && t->precision > MAX_DECIMAL_DIGITS)
        return "Iceberg decimals hold at most 38 digits";
    if (!strcmp(lg, "duration")) return "Iceberg has no type for an Avro duration";
    return NULL;
}

/* The column type of an Avro primitive (logical types included) and how
 * its value is read; -1 when it is not mapped (prim_refusal says why). The
 * Iceberg spec's Avro appendix: decimal on bytes or fixed -> decimal(P,S),
 * fixed -> fixed[L], uuid (string or fixed(16)) -> uuid, time-millis and
 * time-micros -> time (micros). */
static int avro_prim(const ls_avro_node_t *t, ctype *ct, dkind *dk)
{
    const char *lg = t->logical ? t->logical : "";
    if (prim_refusal(t)) return -1;
    switch (t->kind) {
    case LS_AVRO_BOOLEAN: *ct = C_BOOLEAN, *dk = D_BOOLEAN; return 0;
    case LS_AVRO_INT:
        *dk = !strcmp(lg, "time-millis") ? D_TIME_MILLIS : D_INT;
        *ct = !strcmp(lg, "date") ? C_DATE : !strcmp(lg, "time-millis") ? C_TIME : C_INT;
        return 0;
    case LS_AVRO_LONG:
        *dk = !strcmp(lg, "timestamp-millis") || !strcmp(lg, "local-timestamp-millis") ? D_MILLIS
              : !strcmp(lg, "time-micros") ? D_TIME_MICROS
                                           : D_LONG;
        *ct = !strncmp(lg, "timestamp-", 10)         ? C_TIMESTAMPTZ
              : !strncmp(lg, "local-timestamp-", 16) ? C_TIMESTAMP
              : !strcmp(lg, "time-micros")           ? C_TIME
                                                     : C_LONG;
        return 0;
    case LS_AVRO_FLOAT: *ct = C_FLOAT, *dk = D_FLOAT; return 0;
    case LS_AVRO_DOUBLE: *ct = C_DOUBLE, *dk = D_DOUBLE; return 0;
    case LS_AVRO_BYTES:
    case LS_AVRO_FIXED:
        if (!strcmp(lg, "decimal")) {
            *ct = C_DECIMAL, *dk = D_DECIMAL;
        } else if (t->kind == LS_AVRO_BYTES) {
            *ct = C_BINARY, *dk = D_BYTES;
        } else {
            *ct = !strcmp(lg, "uuid") ? C_UUID : C_FIXED, *dk = D_FIXED;
            if (t->size <= 0 || t->size > INT32_MAX) return -1;
        }
        return 0;
    case LS_AVRO_STRING:
        *ct = !strcmp(lg, "uuid") ? C_UUID : C_STRING;
        *dk = !strcmp(lg, "uuid") ? D_UUID_TEXT : D_BYTES;
        return 0;
    case LS_AVRO_ENUM: *ct = C_STRING, *dk = D_ENUM; return 0;
    default: return -1;
    }
}

/* A new column of the primitive type ct for Avro type t. */
static col_t *prim_col(ctype ct, const ls_avro_node_t *t, int id, const char *name, bool required)
{
    col_t *c = col_new(ct, id, name, required);
    if (ct == C_DECIMAL) c->prec = t->precision, c->scale = t->scale;
    if (ct == C_FIXED) c->len = (int)t->size;
    return c;
}

static void unmapped(const ls_avro_node_t *t, const char *path, char *err, size_t errlen)
{
    char why[200];
    const char *refusal = prim_refusal(t);
    snprintf(why, sizeof why, "Avro %s%s%s %s", ls_avro_kind_name(t->kind),
             t->logical ? " with logical type " : "", t->logical ? t->logical : "",
             refusal ? refusal : "is not mapped to a column");
    put_err(err, errlen, path, why);
}

static col_t *from_avro(const ls_avro_node_t *type, const char *name, int id, bool optional,
                        int *next_id, const char *path, char *err, size_t errlen);
static col_t *union_from_avro(const ls_avro_node_t *u, const char *name, int id, bool optional,
                              int *next_id, const char *path, char *err, size_t errlen);

/* The fields of record t as c's kids: a struct's field ids come first, then
 * their children's (as Iceberg numbers a new schema). LS_EINVAL with err
 * naming the path of a field that is not mapped. */
static ls_status struct_from_avro(col_t *c, const ls_avro_node_t *t, int *next_id, const char *path,
                                  char *err, size_t errlen)
{
    if (!t->nfields) {
        put_err(err, errlen, path, "a record without fields has no column");
        return LS_EINVAL;
    }
    int ids = *next_id;
    *next_id += (int)t->nfields;
    char sub[1024];
    for (size_t i = 0; i < t->nfields; i++) {
        const ls_avro_field_t *f = &t->fields[i];
        snprintf(sub, sizeof sub, "%s/%s", path, f->name);
        if (!strncmp(f->name, META_PREFIX, strlen(META_PREFIX))) {
            put_err(err, errlen, sub, "field names starting with _kafka_ are the table's own");
            return LS_EINVAL;
        }
        col_t *k = from_avro(f->type, f->name, ids + (int)i, false, next_id, sub, err, errlen);
        if (!k) return LS_EINVAL;
        col_add(c, k);
    }
    return LS_OK;
}

/* The column of union u of several non-null types: a struct of the tag and
 * one optional member per non-null branch, optional when u has a null
 * branch (or optional says so); ids as a record's. */
static col_t *union_from_avro(const ls_avro_node_t *u, const char *name, int id, bool optional,
                              int *next_id, const char *path, char *err, size_t errlen)
{
    bool has_null = non_null_branches(u) < u->nbranches;
    col_t *c = col_new(C_STRUCT, id, name, !has_null && !optional);
    int ids = *next_id;
    *next_id += 1 + (int)non_null_branches(u);
    col_add(c, col_new(C_INT, ids, UNION_TAG, true));
    char sub[1024], fname[32];
    int k = 0;
    for (size_t i = 0; i < u->nbranches; i++) {
        if (u->branches[i]->kind == LS_AVRO_NULL) continue;
        snprintf(fname, sizeof fname, UNION_MEMBER "%d", k);
        snprintf(sub, sizeof sub, "%s/%s", path, fname);
        col_t *m = from_avro(u->branches[i], fname, ids + 1 + k, true, next_id, sub, err, errlen);
        if (!m) {
            col_free(c);
            return NULL;
        }
        col_add(c, m);
        k++;
    }
    return c;
}

/* A column for Avro type (a union with null makes it optional; optional
 * forces it). NULL with err naming the path when the type is not mapped. */
static col_t *from_avro(const ls_avro_node_t *type, const char *name, int id, bool optional,
                        int *next_id, const char *path, char *err, size_t errlen)
{
    int nb;
    const ls_avro_node_t *t = unwrap(type, &nb);
    if (!t && non_null_branches(type) > 1)
        return union_from_avro(type, name, id, optional, next_id, path, err, errlen);
    if (!t) {
        put_err(err, errlen, path, "a union of null alone has no column");
        return NULL;
    }
    bool required = nb < 0 && !optional;
    char sub[1024];
    col_t *c = NULL, *k;
    switch (t->kind) {
    case LS_AVRO_RECORD:
        c = col_new(C_STRUCT, id, name, required);
        if (struct_from_avro(c, t, next_id, path, err, errlen) != LS_OK) goto fail;
        return c;
    case LS_AVRO_ARRAY:
    case LS_AVRO_MAP: {
        bool map = t->kind == LS_AVRO_MAP;
        c = col_new(map ? C_MAP : C_LIST, id, name, required);
        int kid = *next_id, vid = kid + (map ? 1 : 0);
        *next_id += map ? 2 : 1;
        if (map) col_add(c, col_new(C_STRING, kid, "key", true));
        snprintf(sub, sizeof sub, "%s/%s", path, map ? "values" : "items");
        k = from_avro(t->items, map ? "value" : "element", vid, false, next_id, sub, err, errlen);
        if (!k) goto fail;
        col_add(c, k);
        return c;
    }
    default: {
        ctype ct;
        dkind dk;
        if (avro_prim(t, &ct, &dk) != 0) {
            unmapped(t, path, err, errlen);
            return NULL;
        }
        return prim_col(ct, t, id, name, required);
    }
    }
fail:
    col_free(c);
    return NULL;
}

/* ------------------------------------------------- columns from metadata */

static col_t *from_json(json_t *type, const char *name, int id, bool required, char *err,
                        size_t errlen);

static col_t *kid_from_json(col_t *c, json_t *type, const char *name, json_t *id, json_t *req,
                            char *err, size_t errlen)
{
    if (!json_is_integer(id)) {
        snprintf(err, errlen, "schema: %s of %s has no id", name, c->name);
        return NULL;
    }
    col_t *k = from_json(type, name, (int)json_integer_value(id), json_is_true(req), err, errlen);
    if (k) col_add(c, k);
    return k;
}

/* A column of an Iceberg schema's JSON type (spec, "Schemas"): the types
 * this module writes; another is LS_EINVAL's reason in err. */
static col_t *from_json(json_t *type, const char *name, int id, bool required, char *err,
                        size_t errlen)
{
    if (json_is_string(type)) {
        const char *ts = json_string_value(type);
        int a, b, end = 0;
        if (sscanf(ts, "decimal(%d,%d)%n", &a, &b, &end) == 2 && !ts[end] && a >= 1 &&
            a <= MAX_DECIMAL_DIGITS && b >= 0 && b <= a) {
            col_t *c = col_new(C_DECIMAL, id, name, required);
            c->prec = a, c->scale = b;
            return c;
        }
        if (sscanf(ts, "fixed[%d]%n", &a, &end) == 1 && !ts[end] && a > 0) {
            col_t *c = col_new(C_FIXED, id, name, required);
            c->len = a;
            return c;
        }
        for (int i = 0; i < C_NPRIM; i++)
            if (i != C_DECIMAL && i != C_FIXED && !strcmp(ts, prims[i].name))
                return col_new((ctype)i, id, name, required);
        snprintf(err, errlen, "schema: column %s has type %s, which typed tables do not write",
                 name, json_string_value(type));
        return NULL;
    }
    const char *kind = json_string_value(json_object_get(type, "type"));
    col_t *c = NULL;
    if (kind && !strcmp(kind, "struct")) {
        c = col_new(C_STRUCT, id, name, required);
        size_t i;
        json_t *f;
        json_array_foreach(json_object_get(type, "fields"), i, f)
        {
            const char *fname = json_string_value(json_object_get(f, "name"));
            if (!fname ||
                !kid_from_json(c, json_object_get(f, "type"), fname, json_object_get(f, "id"),
                               json_object_get(f, "required"), err, errlen))
                goto fail;
        }
        return c;
    }
    if (kind && !strcmp(kind, "list")) {
        c = col_new(C_LIST, id, name, required);
        if (!kid_from_json(c, json_object_get(type, "element"), "element",
                           json_object_get(type, "element-id"),
                           json_object_get(type, "element-required"), err, errlen))
            goto fail;
        return c;
    }
    if (kind && !strcmp(kind, "map")) {
        c = col_new(C_MAP, id, name, required);
        json_t *yes = json_true();
        col_t *k = kid_from_json(c, json_object_get(type, "key"), "key",
                                 json_object_get(type, "key-id"), yes, err, errlen);
        json_decref(yes);
        if (!k || k->type != C_STRING) {
            if (k) snprintf(err, errlen, "schema: map %s has keys other than strings", name);
            goto fail;
        }
        if (!kid_from_json(c, json_object_get(type, "value"), "value",
                           json_object_get(type, "value-id"),
                           json_object_get(type, "value-required"), err, errlen))
            goto fail;
        return c;
    }
    snprintf(err, errlen, "schema: column %s has a type typed tables do not write", name);
fail:
    col_free(c);
    return NULL;
}

/* ----------------------------------------------------------------- layout */

static void json_str(ls_buf_t *b, const char *s)
{
    ls_buf_append_u8(b, '"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            ls_buf_printf(b, "\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            ls_buf_printf(b, "\\u%04x", *s);
        else
            ls_buf_append_u8(b, (uint8_t)*s);
    }
    ls_buf_append_u8(b, '"');
}

/* add_field with the decimal and fixed facts of primitive column c */
static void add_field_x(ls_typed_shape_t *s, const char *name, ls_pq_type type,
                        ls_pq_repetition rep, ls_pq_logical lt, int id, int nchildren,
                        const col_t *c)
{
    if (s->nfields == s->capfields) {
        s->capfields = s->capfields ? s->capfields * 2 : 32;
        s->fields = ls_realloc(s->fields, s->capfields * sizeof *s->fields);
    }
    int len = 0;
    if (c) ls_typed_col_pq(c, &len);
    s->fields[s->nfields++] =
        (ls_pq_field_t){name, type, rep, lt, id, nchildren, len, c ? c->prec : 0, c ? c->scale : 0};
}

static void add_field(ls_typed_shape_t *s, const char *name, ls_pq_type type, ls_pq_repetition rep,
                      ls_pq_logical lt, int id, int nchildren)
{
    add_field_x(s, name, type, rep, lt, id, nchildren, NULL);
}

static void layout_type(ls_typed_shape_t *s, col_t *c, ls_buf_t *json);

/* Column c's Parquet field(s), levels and leaves (its parent present at
 * level def, repetition rep), and its Iceberg type's JSON. */
static void layout(ls_typed_shape_t *s, col_t *c, int def, int rep, ls_buf_t *json)
{
    c->def = def + (c->required ? 0 : 1);
    c->rep = rep;
    c->lo = s->ncols;
    ls_pq_repetition pr = c->required ? LS_PQ_REQUIRED : LS_PQ_OPTIONAL;
    switch (c->type) {
    case C_STRUCT:
        add_field(s, c->name, LS_PQ_GROUP, pr, LS_PQ_LT_NONE, c->id, (int)c->nkids);
        break;
    case C_LIST:
    case C_MAP: {
        bool map = c->type == C_MAP;
        add_field(s, c->name, LS_PQ_GROUP, pr, map ? LS_PQ_LT_MAP : LS_PQ_LT_LIST, c->id, 1);
        add_field(s, map ? "key_value" : "list", LS_PQ_GROUP, LS_PQ_REPEATED, LS_PQ_LT_NONE, -1,
                  (int)c->nkids);
        break;
    }
    default:
        c->leaf = s->ncols++;
        int len;
        add_field_x(s, c->name, ls_typed_col_pq(c, &len), pr, prims[c->type].lt, c->id, 0, c);
        break;
    }
    layout_type(s, c, json);
    c->hi = s->ncols;
}

/* Struct field k of a parent present at level def, repetition rep (a
 * "fields":[...] member), laid out. */
static void layout_one(ls_typed_shape_t *s, col_t *k, int def, int rep, ls_buf_t *json, bool first)
{
    ls_buf_printf(json, "%s{\"id\":%d,\"name\":", first ? "" : ",", k->id);
    json_str(json, k->name);
    ls_buf_printf(json, ",\"required\":%s,\"type\":", k->required ? "true" : "false");
    layout(s, k, def, rep, json);
    ls_buf_printf(json, "}");
}

/* The struct fields of c ("fields":[...] members), laid out. */
static void layout_fields(ls_typed_shape_t *s, col_t *c, ls_buf_t *json, bool first)
{
    for (size_t i = 0; i < c->nkids; i++)
        layout_one(s, c->kids[i], c->def, c->rep, json, first && i == 0);
}

static void layout_type(ls_typed_shape_t *s, col_t *c, ls_buf_t *json)
{
    switch (c->type) {
    case C_STRUCT:
        ls_buf_printf(json, "{\"type\":\"struct\",\"fields\":[");
        layout_fields(s, c, json, true);
        ls_buf_printf(json, "]}");
        return;
    case C_LIST: {
        col_t *e = c->kids[0];
        ls_buf_printf(json,
                      "{\"type\":\"list\",\"element-id\":%d,\"element-required\":%s,"
                      "\"element\":",
                      e->id, e->required ? "true" : "false");
        layout(s, e, c->def + 1, c->rep + 1, json);
        ls_buf_printf(json, "}");
        return;
    }
    case C_MAP: {
        col_t *k = c->kids[0], *v = c->kids[1];
        ls_buf_printf(json, "{\"type\":\"map\",\"key-id\":%d,\"key\":", k->id);
        layout(s, k, c->def + 1, c->rep + 1, json);
        ls_buf_printf(json, ",\"value-id\":%d,\"value-required\":%s,\"value\":", v->id,
                      v->required ? "true" : "false");
        layout(s, v, c->def + 1, c->rep + 1, json);
        ls_buf_printf(json, "}");
        return;
    }
    default: {
        char tn[64];
        ls_buf_printf(json, "\"%s\"", ls_typed_type_str(c, tn, sizeof tn));
        return;
    }
    }
}

/* A shape over the value columns root and the key column key (NULL: none),
 * both taken, the value raw bytes when raw_value; last-column-id last_id. */
static ls_typed_shape_t *shape_of(col_t *root, col_t *key, bool raw_value, int last_id)
{
    ls_typed_shape_t *s = LS_NEW(ls_typed_shape_t);
    s->root = root;
    s->key = key;
    s->raw_value = raw_value;
    s->last_id = last_id;
    ls_buf_t json;
    ls_buf_init(&json);
    ls_buf_printf(&json, "{\"type\":\"struct\",\"schema-id\":0,\"fields\":[");
    /* the raw table's columns without its value, top-level names prefixed */
    size_t nraw;
    const ls_pq_field_t *rf = ls_raw_parquet_fields(&nraw);
    char **names = s->meta_names;
    size_t vf = nraw;
    for (size_t i = 0; i < nraw; i++) {
        int id = rf[i].field_id;
        const char *name = rf[i].name;
        if (meta_top_level(id)) name = names[id] = ls_asprintf(META_PREFIX "%s", rf[i].name);
        if (id == LS_RAW_FID_VALUE) { /* a raw value comes after the headers (M_VALUE) */
            vf = i;
            continue;
        }
        add_field(s, name, rf[i].type, rf[i].repetition, rf[i].logical, id, rf[i].nchildren);
    }
    if (raw_value)
        add_field(s, names[LS_RAW_FID_VALUE], rf[vf].type, rf[vf].repetition, rf[vf].logical,
                  LS_RAW_FID_VALUE, 0);
    json_t *raw = json_loads(ls_raw_iceberg_schema_json(), 0, NULL);
    size_t k;
    json_t *f;
    bool first = true;
    char *value_json = NULL;
    json_array_foreach(json_object_get(raw, "fields"), k, f)
    {
        int id = (int)json_integer_value(json_object_get(f, "id"));
        json_object_set_new(f, "name", json_string(names[id]));
        char *text = json_dumps(f, JSON_COMPACT | JSON_PRESERVE_ORDER);
        if (id == LS_RAW_FID_VALUE) {
            value_json = text;
            continue;
        }
        ls_buf_printf(&json, "%s%s", first ? "" : ",", text);
        free(text);
        first = false;
    }
    if (raw_value) ls_buf_printf(&json, ",%s", value_json);
    free(value_json);
    json_decref(raw);
    s->ncols = M_NCOLS + (raw_value ? 1 : 0);
    /* the decoded key, then the value record's fields as top-level columns */
    if (key) layout_one(s, key, 0, 0, &json, false);
    root->def = root->rep = 0;
    root->lo = s->ncols;
    layout_fields(s, root, &json, false);
    root->hi = s->ncols;
    ls_buf_printf(&json, "]");
    for (size_t i = 0; key && i < key->nkids; i++)
        if (key->kids[i]->pk > 0 && key->kids[i]->pk <= LS_TYPED_MAX_PK) {
            s->pk[key->kids[i]->pk - 1] = key->kids[i];
            s->npk++;
        }
    for (size_t i = 0; i < s->npk; i++) /* Iceberg: the identity of a row (spec, "Schemas") */
        ls_buf_printf(&json, "%s%d", i ? "," : ",\"identifier-field-ids\":[", s->pk[i]->id);
    ls_buf_printf(&json, "%s}", s->npk ? "]" : "");
    ls_buf_append_u8(&json, 0);
    s->schema_json = (char *)ls_buf_steal(&json, NULL);
    return s;
}

void ls_typed_shape_free(ls_typed_shape_t *s)
{
    if (!s) return;
    col_free(s->root);
    col_free(s->key);
    for (int i = 0; i <= LS_RAW_LAST_COLUMN_ID; i++)
        ls_free(s->meta_names[i]);
    ls_free(s->fields);
    ls_free(s->schema_json);
    ls_free(s);
}

ls_typed_shape_t *ls_typed_shape_new(const ls_avro_node_t *root, char *err, size_t errlen)
{
    if (!root) {
        snprintf(err, errlen, "/: the value schema is missing");
        return NULL;
    }
    return ls_typed_shape_new_kv(root, NULL, err, errlen);
}

/* The key column of Avro schema key (a record: a struct of its fields; else
 * the one column of that type), field ids from *next_id; optional. */
static col_t *key_from_avro(const ls_avro_node_t *key, int *next_id, char *err, size_t errlen)
{
    int id = (*next_id)++;
    return from_avro(key, LS_TYPED_KEY_COLUMN, id, true, next_id, KEY_PATH, err, errlen);
}

/* Makes key (the key column of a new table) that of a primary key of the
 * fields names[0..n): the column and the fields required, each a
 * top-level field of a record key, of a primitive type other than float and
 * double (Iceberg's identifier fields). LS_EINVAL with err naming the field. */
static ls_status set_primary_key(col_t *key, const char *const *names, size_t n, char *err,
                                 size_t errlen)
{
    char sub[300];
    if (!key || key->type != C_STRUCT) {
        put_err(err, errlen, KEY_PATH,
                key ? "a primary key names fields of a record key; this key is not a record"
                    : "a primary key needs a keyed record to create the table");
        return LS_EINVAL;
    }
    if (n > LS_TYPED_MAX_PK) {
        put_err(err, errlen, KEY_PATH, "too many primary key fields");
        return LS_EINVAL;
    }
    key->required = true;
    key->pk = -1;
    for (size_t i = 0; i < n; i++) {
        snprintf(sub, sizeof sub, "%s/%.200s", KEY_PATH, names[i]);
        col_t *f = NULL;
        for (size_t k = 0; k < key->nkids && !f; k++)
            if (!strcmp(key->kids[k]->name, names[i])) f = key->kids[k];
        const char *why = !f                   ? "no such field in the key schema"
                          : !f->required       ? "a primary key field must be required (the key "
                                                 "schema makes it nullable)"
                          : f->type >= C_NPRIM ? "a primary key field must be a primitive"
                          : f->type == C_FLOAT || f->type == C_DOUBLE
                              ? "a primary key field cannot be float or double (Iceberg)"
                              : NULL;
        if (why) {
            put_err(err, errlen, sub, why);
            return LS_EINVAL;
        }
        f->pk = (int)i + 1;
    }
    return LS_OK;
}

ls_typed_shape_t *ls_typed_shape_new_kv(const ls_avro_node_t *value, const ls_avro_node_t *key,
                                        char *err, size_t errlen)
{
    return ls_typed_shape_new_pk(value, key, NULL, 0, err, errlen);
}

ls_typed_shape_t *ls_typed_shape_new_pk(const ls_avro_node_t *value, const ls_avro_node_t *key,
                                        const char *const *pk, size_t npk, char *err, size_t errlen)
{
    if (value && value->kind != LS_AVRO_RECORD) {
        snprintf(err, errlen, "/: the value schema must be a record to become columns (it is %s)",
                 ls_avro_kind_name(value->kind));
        return NULL;
    }
    col_t *r = col_new(C_STRUCT, 0, "", true), *k = NULL;
    int next = LS_TYPED_FIRST_VALUE_ID;
    if ((value && struct_from_avro(r, value, &next, "", err, errlen) != LS_OK) ||
        (key && !(k = key_from_avro(key, &next, err, errlen))) ||
        (npk && set_primary_key(k, pk, npk, err, errlen) != LS_OK)) {
        col_free(r);
        col_free(k);
        return NULL;
    }
    return shape_of(r, k, value == NULL, next - 1);
}

ls_typed_shape_t *ls_typed_shape_parse(const char *schema_json, int last_column_id, char *err,
                                       size_t errlen)
{
    json_error_t je;
    json_t *schema = json_loads(schema_json, 0, &je);
    if (!schema) {
        snprintf(err, errlen, "schema: %s", je.text);
        return NULL;
    }
    col_t *r = col_new(C_STRUCT, 0, "", true), *key = col_new(C_STRUCT, 0, "", true);
    bool raw_value = false;
    size_t i;
    json_t *f;
    json_array_foreach(json_object_get(schema, "fields"), i, f)
    {
        json_t *id = json_object_get(f, "id");
        const char *name = json_string_value(json_object_get(f, "name"));
        if (json_integer_value(id) == LS_RAW_FID_VALUE) raw_value = true;
        bool is_key = name && !strcmp(name, LS_TYPED_KEY_COLUMN);
        if (json_integer_value(id) < LS_TYPED_FIRST_VALUE_ID) continue; /* the metadata's */
        if (!name || (is_key && key->nkids) ||
            !kid_from_json(is_key ? key : r, json_object_get(f, "type"), name, id,
                           json_object_get(f, "required"), err, errlen)) {
            if (!name) snprintf(err, errlen, "schema: a field has no name");
            if (is_key && key->nkids) snprintf(err, errlen, "schema: two key columns");
            col_free(r);
            col_free(key);
            json_decref(schema);
            return NULL;
        }
    }
    json_t *ident = json_object_get(schema, "identifier-field-ids"), *idv;
    col_t *kc = key->nkids ? key->kids[0] : NULL;
    json_array_foreach(ident, i, idv)
    {
        col_t *f = NULL;
        for (size_t k = 0; kc && k < kc->nkids && !f; k++)
            if (kc->kids[k]->id == (int)json_integer_value(idv)) f = kc->kids[k];
        if (!f || i >= LS_TYPED_MAX_PK) {
            snprintf(err, errlen, "schema: identifier field id %d is not a field of %s",
                     (int)json_integer_value(idv), LS_TYPED_KEY_COLUMN);
            col_free(r);
            col_free(key);
            json_decref(schema);
            return NULL;
        }
        f->pk = (int)i + 1;
        kc->pk = -1;
    }
    json_decref(schema);
    if (!r->nkids && !raw_value) {
        snprintf(err, errlen, "schema: no value column (not a typed table's schema)");
        col_free(r);
        col_free(key);
        return NULL;
    }
    col_t *k = key->nkids ? key->kids[0] : NULL;
    if (k) key->nkids = 0;
    col_free(key);
    return shape_of(r, k, raw_value, last_column_id);
}

const char *ls_typed_iceberg_schema_json(const ls_typed_shape_t *s) { return s->schema_json; }
int ls_typed_last_column_id(const ls_typed_shape_t *s) { return s->last_id; }

const ls_pq_field_t *ls_typed_parquet_fields(const ls_typed_shape_t *s, size_t *n)
{
    *n = s->nfields;
    return s->fields;
}

/* ------------------------------------------- resolution and evolution */

typedef struct walk {
    bool evolve;  /* may change the columns (a copy) */
    bool changed; /* evolve: it did */
    bool needs;   /* fit: failed only because the table must evolve first */
    int next_id;  /* evolve: the next fresh field id */
    char *err;
    size_t errlen;
} walk_t;

static void rnode_free(rnode_t *n)
{
    if (!n) return;
    for (size_t i = 0; i < n->nkids; i++)
        rnode_free(n->kids[i]);
    ls_free(n->kids);
    ls_free(n->absent);
    ls_free(n->member);
    ls_free(n);
}

/* A change the table must make: in fit mode a failure (needs), in evolve
 * mode applied. */
static bool change(walk_t *w, const char *path, const char *what)
{
    if (w->evolve) return w->changed = true;
    w->needs = true;
    put_err(w->err, w->errlen, path, what);
    return false;
}

static bool incompatible(walk_t *w, const char *path, const char *why)
{
    put_err(w->err, w->errlen, path, why);
    return false;
}

static bool promotes(ctype from, ctype to)
{
    return (from == C_INT && to == C_LONG) || (from == C_FLOAT && to == C_DOUBLE);
}

static bool walk_type(walk_t *w, col_t *c, const ls_avro_node_t *t, const char *path, rnode_t *n);
static bool walk_value(walk_t *w, col_t *c, const ls_avro_node_t *type, const char *path,
                       rnode_t **out);

/* Whether c is the column of a union of several types (union_from_avro). */
static bool union_col(const col_t *c)
{
    char want[32];
    if (c->type != C_STRUCT || c->nkids < 2 || strcmp(c->kids[0]->name, UNION_TAG) != 0 ||
        c->kids[0]->type != C_INT)
        return false;
    for (size_t k = 1; k < c->nkids; k++) {
        snprintf(want, sizeof want, UNION_MEMBER "%zu", k - 1);
        if (strcmp(c->kids[k]->name, want) != 0 || c->kids[k]->required) return false;
    }
    return true;
}

/* Writer union u of several non-null types into union column c: its
 * non-null branches are the members field0, field1, ... in order (each by
 * the usual rules: int into long, widening, ...); a branch past the
 * column's members is a new member (evolve: an optional column with fresh
 * ids); a null branch makes the column optional. Reordered branches meet
 * members of other types and are refused by them. */
static bool walk_union(walk_t *w, col_t *c, const ls_avro_node_t *u, const char *path, rnode_t *n)
{
    char why[200], sub[1024], fname[32];
    n->avro = u;
    n->col = c;
    if (!union_col(c)) {
        snprintf(why, sizeof why,
                 "a union of several types cannot fill a %s column (it makes a struct of %s and "
                 "%s0, %s1, ...)",
                 c->type == C_STRUCT ? "struct" : "non-struct", UNION_TAG, UNION_MEMBER,
                 UNION_MEMBER);
        return incompatible(w, path, why);
    }
    n->kids = LS_NEWN(rnode_t *, u->nbranches);
    n->member = LS_NEWN(int, u->nbranches);
    n->nkids = u->nbranches;
    int k = 0;
    for (size_t i = 0; i < u->nbranches; i++) {
        if (u->branches[i]->kind == LS_AVRO_NULL) {
            n->null_branch = (int)i;
            n->member[i] = -1;
            continue;
        }
        snprintf(fname, sizeof fname, UNION_MEMBER "%d", k);
        snprintf(sub, sizeof sub, "%s/%s", path, fname);
        if ((size_t)k + 1 >= c->nkids) {
            if (!change(w, sub, "a new union member column")) return false;
            int id = w->next_id++;
            col_t *m =
                from_avro(u->branches[i], fname, id, true, &w->next_id, sub, w->err, w->errlen);
            if (!m) return false;
            col_add(c, m);
        }
        n->member[i] = k;
        if (!walk_value(w, c->kids[k + 1], u->branches[i], sub, &n->kids[i])) return false;
        k++;
    }
    if (n->null_branch >= 0 && c->required) {
        if (c->pk)
            return incompatible(w, path,
                                "the key column of a primary key cannot become "
                                "optional");
        if (!change(w, path, "the column becomes optional")) return false;
        c->required = false;
    }
    return true;
}

/* Writer type (maybe a union with null) into column c. */
static bool walk_value(walk_t *w, col_t *c, const ls_avro_node_t *type, const char *path,
                       rnode_t **out)
{
    rnode_t *n = *out = LS_NEW(rnode_t);
    const ls_avro_node_t *t = unwrap(type, &n->null_branch);
    if (!t && non_null_branches(type) > 1) return walk_union(w, c, type, path, n);
    if (!t) return incompatible(w, path, "a union of null alone has no column");
    if (n->null_branch >= 0 && c->required) {
        if (c->pk)
            return incompatible(w, path,
                                c->pk > 0 ? "a primary key field cannot become optional"
                                          : "the key column of a primary key cannot become "
                                            "optional");
        if (!change(w, path, "the column becomes optional")) return false;
        c->required = false;
    }
    n->avro = t;
    n->col = c;
    return walk_type(w, c, t, path, n);
}

static bool walk_struct(walk_t *w, col_t *c, const ls_avro_node_t *t, const char *path, rnode_t *n)
{
    char sub[1024];
    n->kids = LS_NEWN(rnode_t *, t->nfields);
    size_t had = c->nkids;
    bool *seen = ls_calloc(had + t->nfields + 1, sizeof *seen);
    size_t *match = ls_calloc(t->nfields + 1, sizeof *match);
    /* the column of each writer field: its name's; else one an alias names
     * (a renamed field keeps its column and the column its name: file
     * comment), of those no other field took */
    for (size_t i = 0; i < t->nfields; i++) {
        match[i] = had;
        for (size_t k = 0; k < had && match[i] == had; k++)
            if (!strcmp(c->kids[k]->name, t->fields[i].name)) match[i] = k, seen[k] = true;
    }
    for (size_t i = 0; i < t->nfields; i++)
        for (size_t a = 0; a < t->fields[i].naliases && match[i] == had; a++)
            for (size_t k = 0; k < had && match[i] == had; k++)
                if (!seen[k] && !strcmp(c->kids[k]->name, t->fields[i].aliases[a]))
                    match[i] = k, seen[k] = true;
    bool ok = true;
    for (size_t i = 0; i < t->nfields && ok; i++) {
        const ls_avro_field_t *f = &t->fields[i];
        snprintf(sub, sizeof sub, "%s/%s", path, f->name);
        size_t k = match[i] < had ? match[i] : c->nkids;
        if (k == c->nkids) { /* a new field: an optional column with fresh ids */
            if (!strncmp(f->name, META_PREFIX, strlen(META_PREFIX))) {
                ok = incompatible(w, sub, "field names starting with _kafka_ are the table's own");
                break;
            }
            if (!change(w, sub, "a new column")) {
                ok = false;
                break;
            }
            int id = w->next_id++;
            col_t *nc = from_avro(f->type, f->name, id, true, &w->next_id, sub, w->err, w->errlen);
            if (!nc) {
                ok = false;
                break;
            }
            col_add(c, nc);
        }
        seen[k] = true;
        ok = walk_value(w, c->kids[k], f->type, sub, &n->kids[i]);
        n->nkids++;
    }
    for (size_t k = 0; k < c->nkids && ok; k++) {
        if (seen[k]) continue;
        snprintf(sub, sizeof sub, "%s/%s", path, c->kids[k]->name);
        if (c->kids[k]->required && c->kids[k]->pk > 0) {
            ok = incompatible(w, sub, "the writer lacks this primary key field");
            break;
        }
        if (c->kids[k]->required) {
            if (!(ok = change(w, sub, "the writer lacks it: the column becomes optional"))) break;
            c->kids[k]->required = false;
        }
        n->absent = ls_realloc(n->absent, (n->nabsent + 1) * sizeof *n->absent);
        n->absent[n->nabsent++] = c->kids[k];
    }
    ls_free(seen);
    ls_free(match);
    return ok;
}

static bool walk_type(walk_t *w, col_t *c, const ls_avro_node_t *t, const char *path, rnode_t *n)
{
    char why[300], sub[1024], tn[64], tn2[64];
    ls_avro_kind want = c->type == C_STRUCT ? LS_AVRO_RECORD
                        : c->type == C_LIST ? LS_AVRO_ARRAY
                        : c->type == C_MAP  ? LS_AVRO_MAP
                                            : LS_AVRO_NULL;
    if (want != LS_AVRO_NULL || t->kind == LS_AVRO_RECORD || t->kind == LS_AVRO_ARRAY ||
        t->kind == LS_AVRO_MAP) {
        if (t->kind != want) {
            snprintf(why, sizeof why, "the %s column cannot take Avro %s",
                     ls_typed_type_str(c, tn, sizeof tn), ls_avro_kind_name(t->kind));
            return incompatible(w, path, why);
        }
        if (c->type == C_STRUCT) return walk_struct(w, c, t, path, n);
        snprintf(sub, sizeof sub, "%s/%s", path, c->type == C_MAP ? "values" : "items");
        n->kids = LS_NEWN(rnode_t *, 1);
        n->nkids = 1;
        return walk_value(w, c->kids[c->nkids - 1], t->items, sub, &n->kids[0]);
    }
    ctype ct;
    if (avro_prim(t, &ct, &n->dec) != 0) {
        unmapped(t, path, w->err, w->errlen);
        return false;
    }
    col_t *wc = prim_col(ct, t, 0, "", true); /* the writer's type, as a column */
    ls_typed_type_str(wc, tn2, sizeof tn2);
    ls_free(wc->name);
    ls_free(wc);
    if (ct == C_UUID && c->type == C_STRING && t->kind == LS_AVRO_STRING) { /* an older table's */
        n->dec = D_BYTES;
        return true;
    }
    if (ct == C_DECIMAL && c->type == C_DECIMAL) {
        int len0, len1;
        col_t wider = *c;
        wider.prec = t->precision;
        if (t->scale != c->scale) {
            snprintf(why, sizeof why,
                     "Iceberg cannot change a decimal's scale (the %s column, the writer's %s)",
                     ls_typed_type_str(c, tn, sizeof tn), tn2);
            return incompatible(w, path, why);
        }
        if (t->precision <= c->prec) return true;
        if (c->pk && ls_typed_col_pq(c, &len0) != ls_typed_col_pq(&wider, &len1)) {
            snprintf(why, sizeof why,
                     "a primary key field's %s cannot widen to %s (its stored form changes)",
                     ls_typed_type_str(c, tn, sizeof tn), tn2);
            return incompatible(w, path, why);
        }
        snprintf(why, sizeof why, "the column widens from %s to %s",
                 ls_typed_type_str(c, tn, sizeof tn), tn2);
        if (!change(w, path, why)) return false;
        c->prec = t->precision;
        return true;
    }
    if (ct == C_FIXED && c->type == C_FIXED && t->size != c->len) {
        snprintf(why, sizeof why, "Iceberg cannot change the %s column to %s",
                 ls_typed_type_str(c, tn, sizeof tn), tn2);
        return incompatible(w, path, why);
    }
    if (ct == c->type || promotes(ct, c->type)) return true;
    if (promotes(c->type, ct)) {
        snprintf(why, sizeof why, "the column widens from %s to %s",
                 ls_typed_type_str(c, tn, sizeof tn), tn2);
        if (!change(w, path, why)) return false;
        c->type = ct;
        return true;
    }
    snprintf(why, sizeof why, "Iceberg cannot promote the %s column to %s",
             ls_typed_type_str(c, tn, sizeof tn), tn2);
    return incompatible(w, path, why);
}

static bool walk_root(walk_t *w, col_t *root, const ls_avro_node_t *writer, rnode_t **out)
{
    *out = LS_NEW(rnode_t);
    (*out)->null_branch = -1;
    (*out)->avro = writer;
    (*out)->col = root;
    if (!writer || writer->kind != LS_AVRO_RECORD)
        return incompatible(w, "", "the value schema must be a record to become columns");
    return walk_struct(w, root, writer, "", *out);
}

ls_status ls_typed_reader_new(const ls_typed_shape_t *s, const ls_avro_node_t *writer,
                              ls_typed_reader_t **out, char *err, size_t errlen)
{
    *out = NULL;
    walk_t w = {.err = err, .errlen = errlen};
    rnode_t *root;
    if (!walk_root(&w, s->root, writer, &root)) { /* fit mode changes nothing */
        rnode_free(root);
        return w.needs ? LS_ECONFLICT : LS_EINVAL;
    }
    *out = LS_NEW(ls_typed_reader_t);
    (*out)->shape = s;
    (*out)->root = root;
    return LS_OK;
}

ls_status ls_typed_key_reader_new(const ls_typed_shape_t *s, const ls_avro_node_t *writer,
                                  ls_typed_reader_t **out, char *err, size_t errlen)
{
    *out = NULL;
    if (!s->key) {
        put_err(err, errlen, KEY_PATH, "the table has no key column yet");
        return LS_ECONFLICT;
    }
    walk_t w = {.err = err, .errlen = errlen};
    rnode_t *root;
    if (!walk_value(&w, s->key, writer, KEY_PATH, &root)) { /* fit mode changes nothing */
        rnode_free(root);
        return w.needs ? LS_ECONFLICT : LS_EINVAL;
    }
    *out = LS_NEW(ls_typed_reader_t);
    (*out)->shape = s;
    (*out)->root = root;
    (*out)->key = true;
    return LS_OK;
}

void ls_typed_reader_free(ls_typed_reader_t *r)
{
    if (!r) return;
    rnode_free(r->root);
    ls_free(r);
}

ls_status ls_typed_evolve(const ls_typed_shape_t *s, const ls_avro_node_t *writer,
                          ls_typed_shape_t **out, char *err, size_t errlen)
{
    *out = NULL;
    col_t *root = col_copy(s->root), *key = s->key ? col_copy(s->key) : NULL;
    walk_t w = {.evolve = true, .next_id = s->last_id + 1, .err = err, .errlen = errlen};
    rnode_t *rn;
    bool ok = walk_root(&w, root, writer, &rn);
    rnode_free(rn);
    if (!ok) {
        col_free(root);
        col_free(key);
        return LS_EINVAL;
    }
    *out = shape_of(root, key, s->raw_value, w.next_id - 1);
    return LS_OK;
}

ls_status ls_typed_evolve_key(const ls_typed_shape_t *s, const ls_avro_node_t *writer,
                              ls_typed_shape_t **out, char *err, size_t errlen)
{
    *out = NULL;
    col_t *root = col_copy(s->root), *key = NULL;
    walk_t w = {.evolve = true, .next_id = s->last_id + 1, .err = err, .errlen = errlen};
    bool ok;
    if (s->key) {
        key = col_copy(s->key);
        rnode_t *rn;
        ok = walk_value(&w, key, writer, KEY_PATH, &rn);
        rnode_free(rn);
    } else { /* the first typed key: a new optional column */
        ok = (key = key_from_avro(writer, &w.next_id, err, errlen)) != NULL;
    }
    if (!ok) {
        col_free(root);
        col_free(key);
        return LS_EINVAL;
    }
    *out = shape_of(root, key, s->raw_value, w.next_id - 1);
    return LS_OK;
}

bool ls_typed_has_key(const ls_typed_shape_t *s) { return s->key != NULL; }
size_t ls_typed_pk_count(const ls_typed_shape_t *s) { return s->npk; }
const char *ls_typed_pk_name(const ls_typed_shape_t *s, size_t i) { return s->pk[i]->name; }
bool ls_typed_key_required(const ls_typed_shape_t *s) { return s->key && s->key->required; }
bool ls_typed_raw_value(const ls_typed_shape_t *s) { return s->raw_value; }
