/* Typed Kafka tables: schema mapping and Avro shredding (see iceberg_typed.h).
 *
 * The shape is a tree of nodes mirroring the value's Avro schema with the
 * Parquet facts each node needs to shred a datum in one walk:
 *   def  definition level of the node's Parquet field when it is present
 *        (its parent's, +1 when the field is optional or repeated);
 *   rep  the repetition level of values inside the node's innermost list or
 *        map (0 outside any);
 *   [lo, hi) the leaf columns under the node, so a null or empty subtree
 *        writes one null entry per leaf at the level where it stopped.
 * Parquet layout, Iceberg's: a list is <opt|req> group (LIST) { repeated
 * group list { element } }, a map <opt|req> group (MAP) { repeated group
 * key_value { required key; value } }.
 *
 * Writing a row is two walks of the datum: the first only decodes (so a
 * corrupt datum writes nothing), the second puts the values. */
#include "table/iceberg_typed.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/buf.h"

typedef enum {
    P_BOOLEAN,
    P_INT,
    P_LONG,
    P_FLOAT,
    P_DOUBLE,
    P_BYTES,
    P_STRING,
    P_ENUM,
    P_MILLIS_TO_MICROS, /* long timestamp-millis / local-timestamp-millis */
} prim_kind;

typedef enum { N_PRIM, N_STRUCT, N_LIST, N_MAP } node_kind;

typedef struct tnode {
    node_kind kind;
    const ls_avro_node_t *avro; /* the non-null type */
    int null_branch;            /* in a union with null: its index, else -1 */
    int def, rep;
    int lo, hi;
    prim_kind prim;      /* N_PRIM */
    int col;             /* N_PRIM: leaf column */
    struct tnode **kids; /* N_STRUCT: fields; N_LIST: [element]; N_MAP: [key, value] */
    size_t nkids;
} tnode_t;

struct ls_typed_shape {
    tnode_t *root; /* the value record */
    ls_pq_field_t *fields;
    size_t nfields, capfields;
    char **names; /* owned names of fields */
    size_t nnames;
    int next_id;
    int ncols; /* leaf columns, the metadata's included */
    char *schema_json;
};

/* The metadata columns are the raw table's without its value, the top-level
 * ones renamed _kafka_<name>; their leaf columns, in order: */
enum { M_PARTITION, M_OFFSET, M_TIMESTAMP, M_KEY, M_HKEY, M_HVALUE, M_NCOLS };
#define META_PREFIX "_kafka_"

static bool meta_top_level(int field_id)
{
    return field_id >= LS_RAW_FID_PARTITION && field_id <= LS_RAW_FID_HEADERS;
}

/* ------------------------------------------------------------------ build */

typedef struct build {
    ls_typed_shape_t *s;
    char *err;
    size_t errlen;
} build_t;

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

/* Appends a Parquet field; returns its index. */
static size_t add_field(build_t *b, const char *name, ls_pq_type type, ls_pq_repetition rep,
                        ls_pq_logical lt, int id, int nchildren)
{
    ls_typed_shape_t *s = b->s;
    if (s->nfields == s->capfields) {
        s->capfields = s->capfields ? s->capfields * 2 : 32;
        s->fields = ls_realloc(s->fields, s->capfields * sizeof *s->fields);
    }
    s->names = ls_realloc(s->names, (s->nnames + 1) * sizeof *s->names);
    char *owned = s->names[s->nnames++] = ls_strdup(name);
    s->fields[s->nfields] = (ls_pq_field_t){owned, type, rep, lt, id, nchildren};
    return s->nfields++;
}

static int fail(build_t *b, const char *path, const char *why)
{
    snprintf(b->err, b->errlen, "%s: %s", *path ? path : "/", why);
    return -1;
}

/* The non-null type of t; *null_branch is the null's index in a union with
 * null (-1 otherwise); NULL for a union this mapping does not take. */
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

static const char *iceberg_prim(const ls_avro_node_t *t, prim_kind *pk, ls_pq_type *pt,
                                ls_pq_logical *lt)
{
    const char *lg = t->logical ? t->logical : "";
    *lt = LS_PQ_LT_NONE;
    switch (t->kind) {
    case LS_AVRO_BOOLEAN: *pk = P_BOOLEAN, *pt = LS_PQ_BOOLEAN; return "boolean";
    case LS_AVRO_INT:
        *pk = P_INT, *pt = LS_PQ_INT32;
        if (!strcmp(lg, "date")) {
            *lt = LS_PQ_LT_DATE;
            return "date";
        }
        return strcmp(lg, "time-millis") ? "int" : NULL;
    case LS_AVRO_LONG:
        *pt = LS_PQ_INT64;
        *pk = !strcmp(lg, "timestamp-millis") || !strcmp(lg, "local-timestamp-millis")
                  ? P_MILLIS_TO_MICROS
                  : P_LONG;
        if (!strncmp(lg, "timestamp-", 10)) {
            *lt = LS_PQ_LT_TIMESTAMP_US_UTC;
            return "timestamptz";
        }
        if (!strncmp(lg, "local-timestamp-", 16)) {
            *lt = LS_PQ_LT_TIMESTAMP_US;
            return "timestamp";
        }
        return strcmp(lg, "time-micros") ? "long" : NULL;
    case LS_AVRO_FLOAT: *pk = P_FLOAT, *pt = LS_PQ_FLOAT; return "float";
    case LS_AVRO_DOUBLE: *pk = P_DOUBLE, *pt = LS_PQ_DOUBLE; return "double";
    case LS_AVRO_BYTES:
        *pk = P_BYTES, *pt = LS_PQ_BYTE_ARRAY;
        return strcmp(lg, "decimal") ? "binary" : NULL;
    case LS_AVRO_STRING:
        *pk = P_STRING, *pt = LS_PQ_BYTE_ARRAY, *lt = LS_PQ_LT_STRING;
        return "string";
    case LS_AVRO_ENUM: *pk = P_ENUM, *pt = LS_PQ_BYTE_ARRAY, *lt = LS_PQ_LT_STRING; return "string";
    default: return NULL;
    }
}

static int build_node(build_t *b, const ls_avro_node_t *t, const char *name, int id, int def,
                      int rep, const char *path, ls_buf_t *json, tnode_t **out);

/* A value that may be a union with null: its node (optional when it is),
 * its Parquet field(s) and its type's JSON into json. */
static int build_value(build_t *b, const ls_avro_node_t *type, const char *name, int id, int def,
                       int rep, const char *path, ls_buf_t *json, tnode_t **out, bool *optional)
{
    int nb;
    const ls_avro_node_t *t = unwrap(type, &nb);
    if (!t) return fail(b, path, "a union other than [\"null\", T] is not mapped to a column yet");
    *optional = nb >= 0;
    size_t at = b->s->nfields; /* build_node adds the value's own field first */
    if (build_node(b, t, name, id, def + (*optional ? 1 : 0), rep, path, json, out) != 0) return -1;
    (*out)->null_branch = nb;
    if (*optional) b->s->fields[at].repetition = LS_PQ_OPTIONAL;
    return 0;
}

/* The fields of a record as struct fields ("fields":[...] members). */
static int build_fields(build_t *b, const ls_avro_node_t *t, int def, int rep, const char *path,
                        ls_buf_t *json, tnode_t *n, bool first)
{
    ls_typed_shape_t *s = b->s;
    char sub[1024];
    if (!t->nfields) return fail(b, path, "a record without fields has no column");
    n->kids = LS_NEWN(tnode_t *, t->nfields);
    int ids = s->next_id; /* a struct's field ids come first, then their children's */
    s->next_id += (int)t->nfields;
    for (size_t i = 0; i < t->nfields; i++) {
        const ls_avro_field_t *f = &t->fields[i];
        snprintf(sub, sizeof sub, "%s/%s", path, f->name);
        if (!strncmp(f->name, "_kafka_", 7))
            return fail(b, sub, "field names starting with _kafka_ are the table's own");
        ls_buf_t tj;
        ls_buf_init(&tj);
        bool opt;
        int rc =
            build_value(b, f->type, f->name, ids + (int)i, def, rep, sub, &tj, &n->kids[i], &opt);
        n->nkids++; /* owned even when it failed part-way (node_free takes NULL) */
        if (rc == 0) {
            ls_buf_printf(json, "%s{\"id\":%d,\"name\":", first && i == 0 ? "" : ",", ids + (int)i);
            json_str(json, f->name);
            ls_buf_printf(json, ",\"required\":%s,\"type\":%.*s}", opt ? "false" : "true",
                          (int)tj.len, (const char *)tj.data);
        }
        ls_buf_free(&tj);
        if (rc != 0) return -1;
    }
    return 0;
}

static int build_node(build_t *b, const ls_avro_node_t *t, const char *name, int id, int def,
                      int rep, const char *path, ls_buf_t *json, tnode_t **out)
{
    ls_typed_shape_t *s = b->s;
    tnode_t *n = *out = LS_NEW(tnode_t);
    n->avro = t;
    n->def = def;
    n->rep = rep;
    n->null_branch = -1;
    n->lo = s->ncols;
    char sub[1024];
    int rc = 0;
    switch (t->kind) {
    case LS_AVRO_RECORD:
        n->kind = N_STRUCT;
        add_field(b, name, LS_PQ_GROUP, LS_PQ_REQUIRED, LS_PQ_LT_NONE, id, (int)t->nfields);
        ls_buf_printf(json, "{\"type\":\"struct\",\"fields\":[");
        rc = build_fields(b, t, def, rep, path, json, n, true);
        ls_buf_printf(json, "]}");
        break;
    case LS_AVRO_ARRAY:
    case LS_AVRO_MAP: {
        bool map = t->kind == LS_AVRO_MAP;
        n->kind = map ? N_MAP : N_LIST;
        add_field(b, name, LS_PQ_GROUP, LS_PQ_REQUIRED, map ? LS_PQ_LT_MAP : LS_PQ_LT_LIST, id, 1);
        add_field(b, map ? "key_value" : "list", LS_PQ_GROUP, LS_PQ_REPEATED, LS_PQ_LT_NONE, -1,
                  map ? 2 : 1);
        int kid = s->next_id, vid = s->next_id + (map ? 1 : 0);
        s->next_id += map ? 2 : 1;
        n->kids = LS_NEWN(tnode_t *, 2);
        if (map) { /* keys: strings, required, one level into the repeated group */
            tnode_t *k = n->kids[n->nkids++] = LS_NEW(tnode_t);
            *k = (tnode_t){.kind = N_PRIM,
                           .prim = P_STRING,
                           .def = def + 1,
                           .rep = rep + 1,
                           .null_branch = -1,
                           .lo = s->ncols,
                           .col = s->ncols,
                           .hi = s->ncols + 1};
            s->ncols++;
            add_field(b, "key", LS_PQ_BYTE_ARRAY, LS_PQ_REQUIRED, LS_PQ_LT_STRING, kid, 0);
        }
        snprintf(sub, sizeof sub, "%s/%s", path, map ? "values" : "items");
        ls_buf_t tj;
        ls_buf_init(&tj);
        bool opt;
        rc = build_value(b, t->items, map ? "value" : "element", vid, def + 1, rep + 1, sub, &tj,
                         &n->kids[n->nkids], &opt);
        n->nkids++;
        if (rc == 0) {
            if (map)
                ls_buf_printf(json,
                              "{\"type\":\"map\",\"key-id\":%d,\"key\":\"string\","
                              "\"value-id\":%d,\"value-required\":%s,\"value\":%.*s}",
                              kid, vid, opt ? "false" : "true", (int)tj.len, (const char *)tj.data);
            else
                ls_buf_printf(json,
                              "{\"type\":\"list\",\"element-id\":%d,"
                              "\"element-required\":%s,\"element\":%.*s}",
                              vid, opt ? "false" : "true", (int)tj.len, (const char *)tj.data);
        }
        ls_buf_free(&tj);
        break;
    }
    default: {
        prim_kind pk;
        ls_pq_type pt;
        ls_pq_logical lt;
        const char *ice = iceberg_prim(t, &pk, &pt, &lt);
        if (!ice) {
            char why[160];
            snprintf(why, sizeof why, "Avro %s%s%s is not mapped to a column yet",
                     ls_avro_kind_name(t->kind), t->logical ? " with logical type " : "",
                     t->logical ? t->logical : "");
            return fail(b, path, why);
        }
        n->kind = N_PRIM;
        n->prim = pk;
        n->col = s->ncols++;
        add_field(b, name, pt, LS_PQ_REQUIRED, lt, id, 0);
        ls_buf_printf(json, "\"%s\"", ice);
        break;
    }
    }
    n->hi = s->ncols;
    return rc;
}

static void node_free(tnode_t *n)
{
    if (!n) return;
    for (size_t i = 0; i < n->nkids; i++)
        node_free(n->kids[i]);
    ls_free(n->kids);
    ls_free(n);
}

void ls_typed_shape_free(ls_typed_shape_t *s)
{
    if (!s) return;
    node_free(s->root);
    for (size_t i = 0; i < s->nnames; i++)
        ls_free(s->names[i]);
    ls_free(s->names);
    ls_free(s->fields);
    ls_free(s->schema_json);
    ls_free(s);
}

ls_typed_shape_t *ls_typed_shape_new(const ls_avro_node_t *root, char *err, size_t errlen)
{
    if (!root || root->kind != LS_AVRO_RECORD) {
        snprintf(err, errlen, "/: the value schema must be a record to become columns (it is %s)",
                 root ? ls_avro_kind_name(root->kind) : "missing");
        return NULL;
    }
    ls_typed_shape_t *s = LS_NEW(ls_typed_shape_t);
    build_t b = {s, err, errlen};
    ls_buf_t json;
    ls_buf_init(&json);
    ls_buf_printf(&json, "{\"type\":\"struct\",\"schema-id\":0,\"fields\":[");
    /* the raw table's columns without its value, top-level names prefixed */
    size_t nraw;
    const ls_pq_field_t *rf = ls_raw_parquet_fields(&nraw);
    char name[64];
    for (size_t i = 0; i < nraw; i++) {
        if (rf[i].field_id == LS_RAW_FID_VALUE) continue;
        snprintf(name, sizeof name, "%s%s", meta_top_level(rf[i].field_id) ? META_PREFIX : "",
                 rf[i].name);
        add_field(&b, name, rf[i].type, rf[i].repetition, rf[i].logical, rf[i].field_id,
                  rf[i].nchildren);
    }
    json_t *raw = json_loads(ls_raw_iceberg_schema_json(), 0, NULL);
    size_t k;
    json_t *f;
    bool first = true;
    json_array_foreach(json_object_get(raw, "fields"), k, f)
    {
        int id = (int)json_integer_value(json_object_get(f, "id"));
        if (id == LS_RAW_FID_VALUE) continue;
        snprintf(name, sizeof name, META_PREFIX "%s",
                 json_string_value(json_object_get(f, "name")));
        json_object_set_new(f, "name", json_string(name));
        char *text = json_dumps(f, JSON_COMPACT | JSON_PRESERVE_ORDER);
        ls_buf_printf(&json, "%s%s", first ? "" : ",", text);
        free(text);
        first = false;
    }
    json_decref(raw);
    s->ncols = M_NCOLS;
    s->next_id = LS_TYPED_FIRST_VALUE_ID;
    /* the value record's fields are top-level columns, after the metadata */
    tnode_t *r = s->root = LS_NEW(tnode_t);
    *r = (tnode_t){.kind = N_STRUCT, .avro = root, .null_branch = -1, .lo = s->ncols};
    if (build_fields(&b, root, 0, 0, "", &json, r, false) != 0) {
        ls_buf_free(&json);
        ls_typed_shape_free(s);
        return NULL;
    }
    r->hi = s->ncols;
    ls_buf_printf(&json, "]}");
    ls_buf_append_u8(&json, 0);
    s->schema_json = (char *)ls_buf_steal(&json, NULL);
    return s;
}

const char *ls_typed_iceberg_schema_json(const ls_typed_shape_t *s) { return s->schema_json; }
int ls_typed_last_column_id(const ls_typed_shape_t *s) { return s->next_id - 1; }

const ls_pq_field_t *ls_typed_parquet_fields(const ls_typed_shape_t *s, size_t *n)
{
    *n = s->nfields;
    return s->fields;
}

/* ------------------------------------------------------------------ write */

int ls_typed_unframe(const uint8_t *value, int64_t len, int32_t *schema_id, const uint8_t **datum,
                     size_t *datum_len)
{
    if (!value || len < 5 || value[0] != 0) return -1;
    *schema_id = (int32_t)((uint32_t)value[1] << 24 | (uint32_t)value[2] << 16 |
                           (uint32_t)value[3] << 8 | value[4]);
    *datum = value + 5;
    *datum_len = (size_t)len - 5;
    return 0;
}

typedef struct rd {
    ls_avro_rd_t in;   /* registry/avro.h: the datum's bytes */
    ls_pq_writer_t *w; /* NULL: decode only */
} rd_t;

/* Null entries for every leaf under n at definition level def. */
static void put_nulls(rd_t *r, const tnode_t *n, int rep, int def)
{
    if (r->w)
        for (int c = n->lo; c < n->hi; c++)
            ls_pq_put_null(r->w, c, rep, def);
}

static bool shred(rd_t *r, const tnode_t *n, int rep);

/* A value that may be a union with null: reads the branch, then the value. */
static bool shred_value(rd_t *r, const tnode_t *n, int rep)
{
    if (n->null_branch >= 0) {
        int64_t br;
        if (!ls_avro_rd_long(&r->in, &br)) return false;
        if (br < 0 || br > 1) {
            r->in.why = "union branch index out of range";
            return false;
        }
        if (br == n->null_branch) {
            put_nulls(r, n, rep, n->def - 1);
            return true;
        }
    }
    return shred(r, n, rep);
}

static bool shred(rd_t *r, const tnode_t *n, int rep)
{
    ls_pq_writer_t *w = r->w;
    switch (n->kind) {
    case N_STRUCT:
        for (size_t i = 0; i < n->nkids; i++)
            if (!shred_value(r, n->kids[i], rep)) return false;
        return true;
    case N_LIST:
    case N_MAP: {
        bool map = n->kind == N_MAP;
        const tnode_t *v = n->kids[map ? 1 : 0];
        int64_t items = 0;
        for (;;) {
            int64_t count;
            if (!ls_avro_rd_block(&r->in, true, &count)) return false;
            if (count == 0) break;
            for (int64_t i = 0; i < count; i++, items++) {
                int rr = items == 0 ? rep : n->rep + 1;
                if (map) {
                    const uint8_t *k;
                    size_t kn;
                    if (!ls_avro_rd_bytes(&r->in, &k, &kn)) return false;
                    if (w) ls_pq_put_bytes(w, n->kids[0]->col, rr, k, kn);
                }
                if (!shred_value(r, v, rr)) return false;
            }
        }
        if (items == 0) /* present, empty: every leaf at the list's own level */
            put_nulls(r, n, rep, n->def);
        return true;
    }
    case N_PRIM: break;
    }
    int col = n->col;
    int64_t l;
    const uint8_t *p;
    size_t len;
    switch (n->prim) {
    case P_BOOLEAN: {
        uint8_t b;
        if (!ls_avro_rd_fixed(&r->in, &b, 1)) return false;
        if (b > 1) {
            r->in.why = "boolean byte not 0 or 1";
            return false;
        }
        if (w) ls_pq_put_bool(w, col, rep, b);
        return true;
    }
    case P_INT:
        if (!ls_avro_rd_long(&r->in, &l)) return false;
        if (l < INT32_MIN || l > INT32_MAX) {
            r->in.why = "int out of range";
            return false;
        }
        if (w) ls_pq_put_i32(w, col, rep, (int32_t)l);
        return true;
    case P_LONG:
    case P_MILLIS_TO_MICROS:
        if (!ls_avro_rd_long(&r->in, &l)) return false;
        if (w) ls_pq_put_i64(w, col, rep, n->prim == P_LONG ? l : l * 1000);
        return true;
    case P_FLOAT: {
        float f;
        if (!ls_avro_rd_fixed(&r->in, &f, 4)) /* Avro floats are little-endian, as this host */
            return false;
        if (w) ls_pq_put_float(w, col, rep, f);
        return true;
    }
    case P_DOUBLE: {
        double d;
        if (!ls_avro_rd_fixed(&r->in, &d, 8)) return false;
        if (w) ls_pq_put_double(w, col, rep, d);
        return true;
    }
    case P_BYTES:
    case P_STRING:
        if (!ls_avro_rd_bytes(&r->in, &p, &len)) return false;
        if (w) ls_pq_put_bytes(w, col, rep, p, len);
        return true;
    case P_ENUM:
        if (!ls_avro_rd_long(&r->in, &l)) return false;
        if (l < 0 || (size_t)l >= n->avro->nsymbols) {
            r->in.why = "enum index out of range";
            return false;
        }
        if (w) ls_pq_put_bytes(w, col, rep, n->avro->symbols[l], strlen(n->avro->symbols[l]));
        return true;
    }
    return false;
}

ls_status ls_typed_write(const ls_typed_shape_t *s, ls_pq_writer_t *w, const ls_raw_record_t *r,
                         const uint8_t *datum, size_t len, char *err, size_t errlen)
{
    rd_t dry = {{datum, datum + len, NULL}, NULL};
    if (!shred(&dry, s->root, 0) || dry.in.p != dry.in.end) {
        snprintf(err, errlen, "Avro datum does not match its schema: %s at byte %zu of %zu",
                 dry.in.why ? dry.in.why : "bytes left over", (size_t)(dry.in.p - datum), len);
        return LS_ECORRUPT;
    }
    ls_pq_put_i32(w, M_PARTITION, 0, r->partition);
    ls_pq_put_i64(w, M_OFFSET, 0, r->offset);
    ls_pq_put_i64(w, M_TIMESTAMP, 0, r->timestamp_ms * 1000);
    if (r->key_len < 0)
        ls_pq_put_null(w, M_KEY, 0, 0);
    else
        ls_pq_put_bytes(w, M_KEY, 0, r->key, (size_t)r->key_len);
    ls_raw_put_headers(w, M_HKEY, M_HVALUE, r->headers, r->nheaders);
    rd_t wet = {{datum, datum + len, NULL}, w};
    shred(&wet, s->root, 0);
    return ls_pq_end_row(w);
}
