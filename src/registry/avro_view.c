/* The Avro view of a JSON Schema; the mapping and its limits are in
 * avro_view.h.
 *
 * A view is a tree of vnode_t, one per schema position that holds a value
 * (recursion is refused, so the tree is finite and a $ref used twice gives
 * two subtrees), each with the Avro node it maps to; every allocation is
 * owned by the view's arena. Transcoding walks the tree and the JSON
 * instance together, writing the Avro binary encoding (specification,
 * "Binary Encoding": zig-zag varints, length-prefixed strings, blocked
 * arrays and maps, union branch index first). */
#include "registry/avro_view.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/base64.h"
#include "registry/json_schema_int.h"

#define VIEW_MAX_DEPTH 64

typedef enum vkind {
    V_RECORD,
    V_ARRAY,
    V_MAP,
    V_STRING,
    V_BASE64,
    V_INT,
    V_LONG,
    V_DOUBLE,
    V_BOOLEAN,
    V_TIMESTAMP,
    V_DATE,
    V_JSON_TEXT,
    V_ENUM_STRING,
    V_ENUM_INT,
} vkind;

typedef struct vnode vnode_t;
struct vnode {
    vkind kind;
    bool nullable;
    ls_avro_node_t *avro; /* [null, type] when nullable, else the type */
    vnode_t **kids;       /* record: per property; array, map: [items] */
    const char **names;   /* record: property names */
    size_t nkids;
    json_t *values; /* enums: the members (an array), or the const value */
    bool one;       /* values is the const value */
};

struct ls_avro_view {
    vnode_t *root;
    void **allocs;
    size_t nallocs, capallocs;
};

static void *own(ls_avro_view_t *v, void *p)
{
    if (v->nallocs == v->capallocs) {
        v->capallocs = v->capallocs ? 2 * v->capallocs : 32;
        v->allocs = ls_realloc(v->allocs, v->capallocs * sizeof *v->allocs);
    }
    v->allocs[v->nallocs++] = p;
    return p;
}

void ls_avro_view_free(ls_avro_view_t *v)
{
    if (!v) return;
    for (size_t i = 0; i < v->nallocs; i++)
        ls_free(v->allocs[i]);
    ls_free(v->allocs);
    ls_free(v);
}

const ls_avro_node_t *ls_avro_view_root(const ls_avro_view_t *v) { return v->root->avro; }

/* ---- mapping ------------------------------------------------------------------ */

typedef struct mapper {
    ls_avro_view_t *v;
    char *err;
    size_t errlen;
    bool failed;
    char path[512];
    const jnode_t *stack[VIEW_MAX_DEPTH]; /* the positions being mapped (recursion) */
    int depth;
    int nrecords; /* for unique record names */
} mapper_t;

__attribute__((format(printf, 2, 3))) static void fail(mapper_t *m, const char *fmt, ...)
{
    if (m->failed) return;
    m->failed = true;
    char msg[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(m->err, m->errlen, "#%s: %s", m->path, msg);
}

static ls_avro_node_t *anode(mapper_t *m, ls_avro_kind k, const char *logical)
{
    ls_avro_node_t *a = own(m->v, LS_NEW(ls_avro_node_t));
    a->kind = k;
    a->logical = (char *)logical; /* static strings: never freed through the node */
    return a;
}

static vnode_t *vnew(mapper_t *m, vkind k, ls_avro_kind ak, const char *logical)
{
    vnode_t *n = own(m->v, LS_NEW(vnode_t));
    n->kind = k;
    n->avro = anode(m, ak, logical);
    return n;
}

static const jnode_t *deref(const jnode_t *n)
{
    for (int i = 0; n && n->kind == J_REF && i < VIEW_MAX_DEPTH; i++)
        n = n->sub;
    return n;
}

/* Whether a combined part only constrains values (no type of its own). */
static bool constraint_only(const jnode_t *n)
{
    return n->kind == J_ENUM || n->kind == J_CONST || n->kind == J_NOT || n->kind == J_EMPTY;
}

static vnode_t *map_node(mapper_t *m, const jnode_t *n, bool *nullable);

static vnode_t *map_at(mapper_t *m, const jnode_t *n, const char *seg, bool *nullable)
{
    size_t old = strlen(m->path);
    snprintf(m->path + old, sizeof m->path - old, "/%s", seg);
    vnode_t *r = map_node(m, n, nullable);
    m->path[old] = 0;
    return r;
}

/* The node's Avro type made a union with null when nullable. */
static void set_nullable(mapper_t *m, vnode_t *n, bool nullable)
{
    if (!nullable || n->nullable) return;
    ls_avro_node_t *u = anode(m, LS_AVRO_UNION, NULL);
    u->nbranches = 2;
    u->branches = own(m->v, LS_NEWN(ls_avro_node_t *, 2));
    u->branches[0] = anode(m, LS_AVRO_NULL, NULL);
    u->branches[1] = n->avro;
    n->avro = u;
    n->nullable = true;
}

static vnode_t *map_enum(mapper_t *m, const jnode_t *n)
{
    json_t *vals = n->values;
    bool strings = true, ints = true;
    size_t cnt = n->kind == J_CONST ? 1 : json_array_size(vals);
    for (size_t i = 0; i < cnt; i++) {
        json_t *x = n->kind == J_CONST ? vals : json_array_get(vals, i);
        strings = strings && json_is_string(x);
        ints = ints && json_is_integer(x);
    }
    if (!cnt || (!strings && !ints)) {
        fail(m, "an enum or const of other values than all strings or all integers is not mapped "
                "to a column");
        return NULL;
    }
    vnode_t *v = strings ? vnew(m, V_ENUM_STRING, LS_AVRO_STRING, NULL)
                         : vnew(m, V_ENUM_INT, LS_AVRO_LONG, NULL);
    v->values = vals;
    v->one = n->kind == J_CONST;
    return v;
}

static vnode_t *map_string(mapper_t *m, const jnode_t *n)
{
    const char *fmt = json_string_value(json_object_get(n->src, "format"));
    const char *enc = json_string_value(json_object_get(n->src, "contentEncoding"));
    if (enc && !strcmp(enc, "base64")) return vnew(m, V_BASE64, LS_AVRO_BYTES, NULL);
    if (fmt && !strcmp(fmt, "date-time"))
        return vnew(m, V_TIMESTAMP, LS_AVRO_LONG, "timestamp-micros");
    if (fmt && !strcmp(fmt, "date")) return vnew(m, V_DATE, LS_AVRO_INT, "date");
    return vnew(m, V_STRING, LS_AVRO_STRING, NULL);
}

static vnode_t *map_number(mapper_t *m, const jnode_t *n)
{
    if (!n->integer) return vnew(m, V_DOUBLE, LS_AVRO_DOUBLE, NULL);
    double lo = n->min.has ? n->min.v : n->exmin.has ? n->exmin.v : -INFINITY;
    double hi = n->max.has ? n->max.v : n->exmax.has ? n->exmax.v : INFINITY;
    if (lo >= -2147483648.0 && hi <= 2147483647.0) return vnew(m, V_INT, LS_AVRO_INT, NULL);
    return vnew(m, V_LONG, LS_AVRO_LONG, NULL);
}

static vnode_t *json_text(mapper_t *m) { return vnew(m, V_JSON_TEXT, LS_AVRO_STRING, NULL); }

static vnode_t *map_object(mapper_t *m, const jnode_t *n)
{
    if (n->nprops == 0) {
        if (n->additional_schema && n->npatterns == 0) {
            vnode_t *v = vnew(m, V_MAP, LS_AVRO_MAP, NULL);
            bool nl = false;
            vnode_t *k = map_at(m, n->additional_schema, "additionalProperties", &nl);
            if (!k) return NULL;
            set_nullable(m, k, nl);
            v->kids = own(m->v, LS_NEWN(vnode_t *, 1));
            v->kids[0] = k;
            v->nkids = 1;
            v->avro->items = k->avro;
            return v;
        }
        return json_text(m);
    }
    vnode_t *v = vnew(m, V_RECORD, LS_AVRO_RECORD, NULL);
    char name[32];
    snprintf(name, sizeof name, "r%d", m->nrecords++);
    v->avro->name = v->avro->fullname = own(m->v, ls_strdup(name));
    v->nkids = n->nprops;
    v->kids = own(m->v, LS_NEWN(vnode_t *, n->nprops));
    v->names = own(m->v, LS_NEWN(const char *, n->nprops));
    v->avro->nfields = n->nprops;
    v->avro->fields = own(m->v, LS_NEWN(ls_avro_field_t, n->nprops));
    for (size_t i = 0; i < n->nprops; i++) {
        const char *pn = n->props[i].name;
        bool required = false;
        for (size_t r = 0; n->required && r < json_array_size(n->required); r++)
            if (!strcmp(json_string_value(json_array_get(n->required, r)), pn)) required = true;
        char seg[300];
        snprintf(seg, sizeof seg, "properties/%s", pn);
        bool nl = false;
        vnode_t *k = map_at(m, n->props[i].schema, seg, &nl);
        if (!k) return NULL;
        set_nullable(m, k, nl || !required);
        v->kids[i] = k;
        v->names[i] = pn;
        v->avro->fields[i].name = (char *)pn;
        v->avro->fields[i].type = k->avro;
    }
    return v;
}

static vnode_t *map_array(mapper_t *m, const jnode_t *n)
{
    if (n->ntuple) {
        fail(m, "tuples (prefixItems, an array of items schemas) are not mapped to a column");
        return NULL;
    }
    vnode_t *v = vnew(m, V_ARRAY, LS_AVRO_ARRAY, NULL);
    vnode_t *k;
    bool nl = false;
    if (n->items) {
        k = map_at(m, n->items, "items", &nl);
        if (!k) return NULL;
    } else {
        k = json_text(m);
    }
    set_nullable(m, k, nl);
    v->kids = own(m->v, LS_NEWN(vnode_t *, 1));
    v->kids[0] = k;
    v->nkids = 1;
    v->avro->items = k->avro;
    return v;
}

/* A string or integer value also restricted to an enum's (const's)
 * members: checked when transcoding. */
static void enum_check(vnode_t *v, const jnode_t *c)
{
    bool one = c->kind == J_CONST;
    size_t cnt = one ? 1 : json_array_size(c->values);
    bool strings = true, ints = true;
    for (size_t i = 0; i < cnt; i++) {
        json_t *x = one ? c->values : json_array_get(c->values, i);
        strings = strings && json_is_string(x);
        ints = ints && json_is_integer(x);
    }
    if (v->kind == V_STRING && strings)
        v->kind = V_ENUM_STRING;
    else if ((v->kind == V_INT || v->kind == V_LONG) && ints)
        v->kind = V_ENUM_INT;
    else
        return;
    v->values = c->values;
    v->one = one;
}

static vnode_t *map_combined(mapper_t *m, const jnode_t *n, bool *nullable)
{
    const jnode_t *typed[8], *constraint = NULL;
    size_t ntyped = 0, nnull = 0;
    bool all = n->crit == 0; /* allOf */
    for (size_t i = 0; i < n->nsubs; i++) {
        const jnode_t *s = deref(n->subs[i]);
        if (!s) continue;
        if (s->kind == J_NULL && !all) {
            nnull++;
        } else if (all && constraint_only(s)) {
            if (s->kind == J_ENUM || s->kind == J_CONST) constraint = s;
        } else if (ntyped < 8) {
            typed[ntyped++] = s;
        } else {
            ntyped++;
        }
    }
    if (all) {
        if (ntyped == 1) {
            vnode_t *v = map_node(m, typed[0], nullable);
            if (v && constraint) enum_check(v, constraint); /* {"type": "string", "enum": [...]} */
            return v;
        }
        if (ntyped == 0) return constraint ? map_enum(m, constraint) : json_text(m);
        fail(m, "allOf of several typed schemas is not mapped to a column");
        return NULL;
    }
    if (nnull) *nullable = true;
    if (ntyped == 1) return map_node(m, typed[0], nullable);
    if (ntyped == 0) {
        fail(m, "a schema accepting only null has no column");
        return NULL;
    }
    return json_text(m); /* several types: the value's JSON text */
}

static vnode_t *map_node(mapper_t *m, const jnode_t *n, bool *nullable)
{
    if (m->failed) return NULL;
    n = deref(n);
    if (!n) {
        fail(m, "an unresolved $ref");
        return NULL;
    }
    for (int i = 0; i < m->depth; i++)
        if (m->stack[i] == n) {
            fail(m, "a recursive schema ($ref cycle) is not mapped: Iceberg has no recursive "
                    "types");
            return NULL;
        }
    if (m->depth == VIEW_MAX_DEPTH) {
        fail(m, "nested deeper than %d levels", VIEW_MAX_DEPTH);
        return NULL;
    }
    m->stack[m->depth++] = n;
    vnode_t *v = NULL;
    switch (n->kind) {
    case J_EMPTY: v = json_text(m); break;
    case J_FALSE: fail(m, "a schema accepting nothing (false) has no column"); break;
    case J_NULL: fail(m, "a schema accepting only null has no column"); break;
    case J_NOT: fail(m, "\"not\" alone is not mapped to a column"); break;
    case J_ENUM:
    case J_CONST: v = map_enum(m, n); break;
    case J_STRING: v = map_string(m, n); break;
    case J_NUMBER: v = map_number(m, n); break;
    case J_BOOLEAN: v = vnew(m, V_BOOLEAN, LS_AVRO_BOOLEAN, NULL); break;
    case J_OBJECT: v = map_object(m, n); break;
    case J_ARRAY: v = map_array(m, n); break;
    case J_COMBINED: v = map_combined(m, n, nullable); break;
    case J_REF: fail(m, "a $ref chain deeper than %d", VIEW_MAX_DEPTH); break;
    }
    m->depth--;
    return m->failed ? NULL : v;
}

ls_avro_view_t *ls_avro_view_json(const ls_jsonschema_t *s, char *err, size_t errlen)
{
    ls_avro_view_t *v = LS_NEW(ls_avro_view_t);
    mapper_t m = {.v = v, .err = err, .errlen = errlen};
    bool nullable = false;
    const jnode_t *top = deref(ls_jsonschema_root(s));
    vnode_t *root = map_node(&m, top, &nullable);
    if (!root) {
        ls_avro_view_free(v);
        return NULL;
    }
    /* a top-level record is named by the schema's "title", as the Confluent
     * serializers' record-name subject strategies name a JSON schema */
    const char *title = json_string_value(json_object_get(top->src, "title"));
    if (root->kind == V_RECORD && title)
        root->avro->name = root->avro->fullname = own(v, ls_strdup(title));
    /* a nullable top level is not made a union: a null value has no row (it
     * fails like a tombstone in a typed append table) */
    v->root = root;
    return v;
}

/* ---- transcoding ---------------------------------------------------------------- */

typedef struct enc {
    ls_buf_t *out;
    char *why;
    size_t whylen;
    bool failed;
    char path[512];
} enc_t;

__attribute__((format(printf, 2, 3))) static int efail(enc_t *e, const char *fmt, ...)
{
    if (e->failed) return -1;
    e->failed = true;
    char msg[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(e->why, e->whylen, "%s: %s", e->path[0] ? e->path : "/", msg);
    return -1;
}

static void put_long(ls_buf_t *b, int64_t v)
{
    uint64_t z = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
    uint8_t tmp[10];
    size_t n = 0;
    while (z >= 0x80) {
        tmp[n++] = (uint8_t)(z | 0x80);
        z >>= 7;
    }
    tmp[n++] = (uint8_t)z;
    ls_buf_append(b, tmp, n);
}

static void put_bytes(ls_buf_t *b, const void *p, size_t n)
{
    put_long(b, (int64_t)n);
    ls_buf_append(b, p, n);
}

static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

static int digits(const char **s, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++, (*s)++) {
        if (**s < '0' || **s > '9') return -1;
        v = v * 10 + (**s - '0');
    }
    *out = v;
    return 0;
}

/* "YYYY-MM-DD" at *s (advanced past it): days since 1970-01-01. */
static int parse_date(const char **s, int64_t *days)
{
    int y, mo, d;
    if (digits(s, 4, &y) || *(*s)++ != '-' || digits(s, 2, &mo) || *(*s)++ != '-' ||
        digits(s, 2, &d))
        return -1;
    static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1]) return -1;
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (mo == 2 && d == 29 && !leap) return -1;
    *days = days_from_civil(y, (unsigned)mo, (unsigned)d);
    return 0;
}

/* RFC 3339 date-time: microseconds since the epoch (UTC). */
static int parse_date_time(const char *s, int64_t *us)
{
    int64_t days;
    int h, mi, sec, oh = 0, om = 0, sign = 0;
    if (parse_date(&s, &days)) return -1;
    if (*s != 'T' && *s != 't' && *s != ' ') return -1;
    s++;
    if (digits(&s, 2, &h) || *s++ != ':' || digits(&s, 2, &mi) || *s++ != ':' ||
        digits(&s, 2, &sec))
        return -1;
    if (h > 23 || mi > 59 || sec > 60) return -1;
    int64_t frac = 0;
    if (*s == '.') {
        s++;
        int nd = 0;
        for (; *s >= '0' && *s <= '9'; s++, nd++)
            if (nd < 6) frac = frac * 10 + (*s - '0');
        if (!nd) return -1;
        for (; nd < 6; nd++)
            frac *= 10;
    }
    if (*s == 'Z' || *s == 'z') {
        s++;
    } else if (*s == '+' || *s == '-') {
        sign = *s++ == '-' ? -1 : 1;
        if (digits(&s, 2, &oh) || *s++ != ':' || digits(&s, 2, &om) || oh > 23 || om > 59)
            return -1;
    } else {
        return -1;
    }
    if (*s) return -1;
    int64_t secs = days * 86400 + h * 3600 + mi * 60 + sec - sign * (oh * 3600 + om * 60);
    *us = secs * 1000000 + frac;
    return 0;
}

static int enc_value(enc_t *e, const vnode_t *v, json_t *j);

static int enc_at(enc_t *e, const vnode_t *v, json_t *j, const char *seg)
{
    size_t old = strlen(e->path);
    snprintf(e->path + old, sizeof e->path - old, "/%s", seg);
    int rc = enc_value(e, v, j);
    if (!e->failed) e->path[old] = 0;
    return rc;
}

static const char *type_of(json_t *j)
{
    switch (json_typeof(j)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    default: return "null";
    }
}

/* An integer value (integers, and numbers with no fraction, as JSON Schema
 * counts 1.0 an integer). */
static int get_integer(json_t *j, int64_t *out)
{
    if (json_is_integer(j)) return *out = json_integer_value(j), 0;
    if (!json_is_real(j)) return -1;
    double d = json_real_value(j);
    if (d != floor(d) || d < -9223372036854775808.0 || d >= 9223372036854775808.0) return -1;
    *out = (int64_t)d;
    return 0;
}

static int enc_value(enc_t *e, const vnode_t *v, json_t *j)
{
    if (v->nullable) {
        if (!j || json_is_null(j)) return put_long(e->out, 0), 0;
        put_long(e->out, 1);
    } else if (!j) {
        return efail(e, "the property is required");
    } else if (json_is_null(j)) {
        return efail(e, "null where the schema allows none");
    }
    int64_t i;
    switch (v->kind) {
    case V_RECORD:
        if (!json_is_object(j)) return efail(e, "%s where the schema has an object", type_of(j));
        for (size_t k = 0; k < v->nkids; k++)
            if (enc_at(e, v->kids[k], json_object_get(j, v->names[k]), v->names[k])) return -1;
        return 0;
    case V_ARRAY: {
        if (!json_is_array(j)) return efail(e, "%s where the schema has an array", type_of(j));
        size_t n = json_array_size(j);
        if (n) put_long(e->out, (int64_t)n);
        for (size_t k = 0; k < n; k++) {
            char idx[24];
            snprintf(idx, sizeof idx, "%zu", k);
            if (enc_at(e, v->kids[0], json_array_get(j, k), idx)) return -1;
        }
        put_long(e->out, 0);
        return 0;
    }
    case V_MAP: {
        if (!json_is_object(j)) return efail(e, "%s where the schema has an object", type_of(j));
        size_t n = json_object_size(j);
        if (n) put_long(e->out, (int64_t)n);
        const char *k;
        json_t *x;
        json_object_foreach(j, k, x)
        {
            put_bytes(e->out, k, strlen(k));
            if (enc_at(e, v->kids[0], x, k)) return -1;
        }
        put_long(e->out, 0);
        return 0;
    }
    case V_STRING:
        if (!json_is_string(j)) return efail(e, "%s where the schema has a string", type_of(j));
        put_bytes(e->out, json_string_value(j), json_string_length(j));
        return 0;
    case V_BASE64: {
        uint8_t *raw;
        size_t n;
        if (!json_is_string(j) || ls_base64_decode(json_string_value(j), &raw, &n) != 0)
            return efail(e, "%s where the schema has a base64 string",
                         json_is_string(j) ? "a string that is not base64" : type_of(j));
        put_bytes(e->out, raw, n);
        ls_free(raw);
        return 0;
    }
    case V_INT:
    case V_LONG:
        if (get_integer(j, &i) != 0)
            return efail(e, "%s where the schema has an integer", type_of(j));
        if (v->kind == V_INT && (i < INT32_MIN || i > INT32_MAX))
            return efail(e, "%lld is out of the schema's 32-bit range", (long long)i);
        put_long(e->out, i);
        return 0;
    case V_DOUBLE: {
        if (!json_is_number(j)) return efail(e, "%s where the schema has a number", type_of(j));
        double d = json_number_value(j);
        uint64_t bits;
        memcpy(&bits, &d, 8);
        uint8_t le[8];
        for (int k = 0; k < 8; k++)
            le[k] = (uint8_t)(bits >> (8 * k));
        ls_buf_append(e->out, le, 8);
        return 0;
    }
    case V_BOOLEAN:
        if (!json_is_boolean(j)) return efail(e, "%s where the schema has a boolean", type_of(j));
        ls_buf_append_u8(e->out, json_is_true(j) ? 1 : 0);
        return 0;
    case V_TIMESTAMP: {
        int64_t us;
        if (!json_is_string(j) || parse_date_time(json_string_value(j), &us) != 0)
            return efail(e, "%s where the schema has an RFC 3339 date-time",
                         json_is_string(j) ? "a string that is not a date-time" : type_of(j));
        put_long(e->out, us);
        return 0;
    }
    case V_DATE: {
        int64_t days;
        const char *s = json_string_value(j);
        if (!s || parse_date(&s, &days) != 0 || *s)
            return efail(e, "%s where the schema has a date (YYYY-MM-DD)",
                         json_is_string(j) ? "a string that is not a date" : type_of(j));
        if (days < INT32_MIN || days > INT32_MAX) return efail(e, "the date is out of range");
        put_long(e->out, days);
        return 0;
    }
    case V_JSON_TEXT: {
        char *t = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
        if (!t) return efail(e, "the value cannot be written as JSON text");
        put_bytes(e->out, t, strlen(t));
        free(t);
        return 0;
    }
    case V_ENUM_STRING:
    case V_ENUM_INT: {
        bool member = false;
        if (v->one) member = json_equal(v->values, j);
        for (size_t k = 0; !v->one && k < json_array_size(v->values) && !member; k++)
            member = json_equal(json_array_get(v->values, k), j);
        if (!member) return efail(e, "the value is not one of the schema's enum members");
        if (v->kind == V_ENUM_STRING)
            put_bytes(e->out, json_string_value(j), json_string_length(j));
        else
            put_long(e->out, json_integer_value(j));
        return 0;
    }
    }
    return efail(e, "unmapped value");
}

int ls_avro_view_encode(const ls_avro_view_t *v, const uint8_t *p, size_t len, ls_buf_t *out,
                        char *why, size_t whylen)
{
    json_error_t je;
    json_t *j = json_loadb((const char *)p, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je);
    if (!j) {
        snprintf(why, whylen, "not one JSON text: %s (at byte %d)", je.text, je.position);
        return -1;
    }
    enc_t e = {.out = out, .why = why, .whylen = whylen};
    int rc = enc_value(&e, v->root, j);
    json_decref(j);
    return rc;
}
