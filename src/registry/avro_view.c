/* The Avro view of a JSON Schema; the mapping and its limits are in
 * avro_view.h.
 *
 * A view is a tree of vnode_t, one per schema position that holds a value
 * (recursion is refused, so the tree is finite and a $ref used twice gives
 * two subtrees), each with the Avro node it maps to; every allocation is
 * owned by the view's arena. Transcoding walks the tree and the JSON
 * instance together, writing the Avro binary encoding (specification,
 * "Binary Encoding": zig-zag varints, length-prefixed strings, blocked
 * arrays and maps, union branch index first). The inferred schemas of
 * schemaless JSON values are in json_infer.c. */
#include "registry/avro_view.h"

#include <ctype.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/base64.h"
#include "base/pbwire.h"
#include "base/utf8.h"
#include "registry/avro_view_int.h"
#include "registry/json_schema_int.h"
#include "registry/protobuf_int.h"

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
    V_UUID, /* string: a UUID's text form (the table parses it into 16 bytes) */
    V_JSON_TEXT,
    V_ENUM_STRING,
    V_ENUM_INT,
    /* Protobuf (the wire type each is read from in pb_value) */
    P_MESSAGE, /* record */
    P_REPEATED,
    P_MAP,     /* string keys: Avro map of kids[0] */
    P_INT32,   /* varint -> int */
    P_INT64,   /* varint -> long */
    P_UINT32,  /* varint -> long */
    P_UINT64,  /* varint -> long, < 2^63 */
    P_SINT32,  /* zig-zag varint -> int */
    P_SINT64,  /* zig-zag varint -> long */
    P_FIXED32, /* -> long */
    P_FIXED64, /* -> long, < 2^63 */
    P_SFIXED32,
    P_SFIXED64,
    P_FLOAT,
    P_DOUBLE,
    P_BOOL,
    P_STRING,
    P_BYTES,
    P_ENUM,      /* varint -> the value's name (string) */
    P_TIMESTAMP, /* google.protobuf.Timestamp -> long timestamp-micros */
    P_WRAPPER,   /* google.protobuf.*Value: kids[0] is the value's */
} vkind;

/* How a Protobuf field's absence reads (pres[] of a message's fields). */
enum { PRES_IMPLICIT, PRES_OPTIONAL, PRES_REQUIRED, PRES_MANY };

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
    /* Protobuf messages: per field its number, presence, oneof (-1: none) */
    int *numbers, *oneofs;
    unsigned char *pres;
    const penum_t *en; /* P_ENUM */
};

struct ls_avro_view {
    vnode_t *root;
    bool proto;                    /* a Protobuf message's view (else a JSON Schema's) */
    const ls_jsonschema_t *schema; /* JSON: values are validated by it first */
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
    const void *stack[VIEW_MAX_DEPTH]; /* the positions being mapped (recursion) */
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
    if (fmt && !strcmp(fmt, "uuid")) return vnew(m, V_UUID, LS_AVRO_STRING, "uuid");
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
    v->schema = s;
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

/* Declared in avro_view_int.h (json_infer.c uses it too). */
const char *ls_json_kind(json_t *j, bool article)
{
    static const char *const names[][2] = {
        [JSON_OBJECT] = {"object", "an object"}, [JSON_ARRAY] = {"array", "an array"},
        [JSON_STRING] = {"string", "a string"},  [JSON_INTEGER] = {"integer", "an integer"},
        [JSON_REAL] = {"number", "a number"},    [JSON_TRUE] = {"boolean", "a boolean"},
        [JSON_FALSE] = {"boolean", "a boolean"}, [JSON_NULL] = {NULL, "null"},
    };
    return names[json_typeof(j)][article];
}

static const char *type_of(json_t *j) { return ls_json_kind(j, true); }

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
    case V_UUID: { /* RFC 9562 text form: 8-4-4-4-12 hex digits */
        const char *s = json_string_value(j);
        bool ok = s && json_string_length(j) == 36;
        for (size_t k = 0; ok && k < 36; k++)
            ok = k == 8 || k == 13 || k == 18 || k == 23 ? s[k] == '-'
                                                         : isxdigit((unsigned char)s[k]);
        if (!ok)
            return efail(e, "%s where the schema has a uuid",
                         s ? "a string that is not a UUID's text form" : type_of(j));
        put_bytes(e->out, s, 36);
        return 0;
    }
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
    default: break;
    }
    return efail(e, "unmapped value");
}

static ls_status pb_encode(const ls_avro_view_t *v, const uint8_t *p, size_t len, ls_buf_t *out,
                           char *why, size_t whylen);

ls_status ls_avro_view_encode(const ls_avro_view_t *v, const uint8_t *p, size_t len, ls_buf_t *out,
                              char *why, size_t whylen)
{
    if (v->proto) return pb_encode(v, p, len, out, why, whylen);
    json_error_t je;
    json_t *j = json_loadb((const char *)p, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je);
    if (!j) {
        snprintf(why, whylen, "not one JSON text: %s (at byte %d)", je.text, je.position);
        return LS_EINVAL;
    }
    /* the schema's own constraints, as produce-time validation checks them
     * (json_validate.c); then the columns' types */
    ls_status st = ls_jsonschema_validate(v->schema, j, why, whylen);
    enc_t e = {.out = out, .why = why, .whylen = whylen};
    if (st == LS_OK && enc_value(&e, v->root, j) != 0) st = LS_EINVAL;
    json_decref(j);
    return st;
}

/* ---- Protobuf ---------------------------------------------------------------------- */

static vnode_t *pb_map_message(mapper_t *m, const pmsg_t *msg);

static bool is_full(const pmsg_t *msg, const char *name)
{
    return msg->full && !strcmp(msg->full, name);
}

/* The column of one value of a scalar type (proto name). */
static vnode_t *pb_scalar(mapper_t *m, const char *t)
{
    static const struct {
        const char *name;
        vkind k;
        ls_avro_kind a;
    } S[] = {
        {"int32", P_INT32, LS_AVRO_INT},       {"int64", P_INT64, LS_AVRO_LONG},
        {"uint32", P_UINT32, LS_AVRO_LONG},    {"uint64", P_UINT64, LS_AVRO_LONG},
        {"sint32", P_SINT32, LS_AVRO_INT},     {"sint64", P_SINT64, LS_AVRO_LONG},
        {"fixed32", P_FIXED32, LS_AVRO_LONG},  {"fixed64", P_FIXED64, LS_AVRO_LONG},
        {"sfixed32", P_SFIXED32, LS_AVRO_INT}, {"sfixed64", P_SFIXED64, LS_AVRO_LONG},
        {"float", P_FLOAT, LS_AVRO_FLOAT},     {"double", P_DOUBLE, LS_AVRO_DOUBLE},
        {"bool", P_BOOL, LS_AVRO_BOOLEAN},     {"string", P_STRING, LS_AVRO_STRING},
        {"bytes", P_BYTES, LS_AVRO_BYTES},
    };
    for (size_t i = 0; t && i < sizeof S / sizeof S[0]; i++)
        if (!strcmp(S[i].name, t)) return vnew(m, S[i].k, S[i].a, NULL);
    fail(m, "scalar type '%s' is not mapped", t ? t : "?");
    return NULL;
}

/* The column of one value of a field's type (not its label). */
static vnode_t *pb_type(mapper_t *m, const ptype_t *t)
{
    switch (t->kind) {
    case T_SCALAR: return pb_scalar(m, t->scalar);
    case T_ENUM: {
        vnode_t *v = vnew(m, P_ENUM, LS_AVRO_STRING, NULL);
        v->en = t->en;
        return v;
    }
    case T_MESSAGE: return pb_map_message(m, t->msg);
    case T_MAP: break;
    }
    fail(m, "a map type inside a map is not mapped");
    return NULL;
}

static vnode_t *pb_field(mapper_t *m, const pmsg_t *msg, const pfield_t *f, unsigned char *pres)
{
    if (f->group) {
        fail(m, "proto2 groups are not mapped to columns");
        return NULL;
    }
    vnode_t *v, *k;
    bool proto3 = msg->file && msg->file->proto3;
    if (f->type.kind == T_MAP) {
        *pres = PRES_MANY;
        const pmsg_t *entry = f->entry;
        if (!entry || entry->nfields != 2) {
            fail(m, "map field without its entry message");
            return NULL;
        }
        if (f->type.scalar && !strcmp(f->type.scalar, "string")) {
            v = vnew(m, P_MAP, LS_AVRO_MAP, NULL);
            if (!(k = pb_type(m, &entry->fields[1].type))) return NULL;
        } else { /* other keys: a list of key/value structs (Iceberg's Avro appendix) */
            v = vnew(m, P_REPEATED, LS_AVRO_ARRAY, NULL);
            if (!(k = pb_map_message(m, entry))) return NULL;
        }
        v->kids = own(m->v, LS_NEWN(vnode_t *, 1));
        v->kids[0] = k;
        v->nkids = 1;
        v->avro->items = k->avro;
        return v;
    }
    if (!(k = pb_type(m, &f->type))) return NULL;
    if (f->label == L_REPEATED) {
        *pres = PRES_MANY;
        v = vnew(m, P_REPEATED, LS_AVRO_ARRAY, NULL);
        v->kids = own(m->v, LS_NEWN(vnode_t *, 1));
        v->kids[0] = k;
        v->nkids = 1;
        v->avro->items = k->avro;
        return v;
    }
    if (f->label == L_REQUIRED)
        *pres = PRES_REQUIRED;
    else if (f->type.kind == T_MESSAGE || f->oneof >= 0 || f->label == L_OPTIONAL || !proto3)
        *pres = PRES_OPTIONAL;
    else
        *pres = PRES_IMPLICIT; /* proto3 without presence: absent reads as its default */
    set_nullable(m, k, *pres == PRES_OPTIONAL);
    return k;
}

static vnode_t *pb_map_message(mapper_t *m, const pmsg_t *msg)
{
    if (m->failed) return NULL;
    if (is_full(msg, "google.protobuf.Timestamp"))
        return vnew(m, P_TIMESTAMP, LS_AVRO_LONG, "timestamp-micros");
    static const char *const WRAPPERS[] = {
        "google.protobuf.DoubleValue", "google.protobuf.FloatValue",  "google.protobuf.Int64Value",
        "google.protobuf.UInt64Value", "google.protobuf.Int32Value",  "google.protobuf.UInt32Value",
        "google.protobuf.BoolValue",   "google.protobuf.StringValue", "google.protobuf.BytesValue"};
    for (size_t i = 0; i < sizeof WRAPPERS / sizeof WRAPPERS[0]; i++)
        if (is_full(msg, WRAPPERS[i]) && msg->nfields == 1) {
            vnode_t *k = pb_type(m, &msg->fields[0].type);
            if (!k) return NULL;
            vnode_t *v = own(m->v, LS_NEW(vnode_t));
            *v = *k; /* the wrapped value's column; read from the wrapper message */
            v->kind = P_WRAPPER;
            v->kids = own(m->v, LS_NEWN(vnode_t *, 1));
            v->kids[0] = k;
            v->nkids = 1;
            return v;
        }
    for (int i = 0; i < m->depth; i++)
        if (m->stack[i] == msg) {
            fail(m, "a recursive message (%s) is not mapped: Iceberg has no recursive types",
                 msg->full ? msg->full : msg->name);
            return NULL;
        }
    if (m->depth == VIEW_MAX_DEPTH) {
        fail(m, "nested deeper than %d levels", VIEW_MAX_DEPTH);
        return NULL;
    }
    if (!msg->nfields) {
        fail(m, "a message without fields (%s) has no column", msg->full ? msg->full : msg->name);
        return NULL;
    }
    m->stack[m->depth++] = msg;
    vnode_t *v = vnew(m, P_MESSAGE, LS_AVRO_RECORD, NULL);
    v->avro->name = v->avro->fullname = (char *)(msg->full ? msg->full : msg->name);
    size_t n = msg->nfields;
    v->nkids = n;
    v->kids = own(m->v, LS_NEWN(vnode_t *, n));
    v->names = own(m->v, LS_NEWN(const char *, n));
    v->numbers = own(m->v, LS_NEWN(int, n));
    v->oneofs = own(m->v, LS_NEWN(int, n));
    v->pres = own(m->v, LS_NEWN(unsigned char, n));
    v->avro->nfields = n;
    v->avro->fields = own(m->v, LS_NEWN(ls_avro_field_t, n));
    for (size_t i = 0; i < n && !m->failed; i++) {
        const pfield_t *f = &msg->fields[i];
        size_t old = strlen(m->path);
        snprintf(m->path + old, sizeof m->path - old, "/%s", f->name);
        vnode_t *k = pb_field(m, msg, f, &v->pres[i]);
        if (k) {
            v->kids[i] = k;
            v->names[i] = f->name;
            v->numbers[i] = f->number;
            v->oneofs[i] = f->oneof;
            v->avro->fields[i].name = (char *)f->name;
            v->avro->fields[i].type = k->avro;
            m->path[old] = 0;
        }
    }
    m->depth--;
    return m->failed ? NULL : v;
}

ls_avro_view_t *ls_avro_view_proto(const ls_proto_t *p, const int64_t *idx, size_t n, char *err,
                                   size_t errlen)
{
    const pmsg_t *msg = ls_proto_message_at(ls_proto_file(p), idx, n, err, errlen);
    if (!msg) return NULL;
    ls_avro_view_t *v = LS_NEW(ls_avro_view_t);
    v->proto = true;
    mapper_t m = {.v = v, .err = err, .errlen = errlen};
    vnode_t *root = pb_map_message(&m, msg);
    if (root && root->kind != P_MESSAGE) /* a well-known type at the top: its fields */
        fail(&m, "a well-known type (%s) at the top level is not mapped", msg->full);
    if (m.failed) {
        ls_avro_view_free(v);
        return NULL;
    }
    v->root = root;
    return v;
}

int ls_avro_view_proto_indexes(const uint8_t *p, size_t len, int64_t *idx, size_t cap, size_t *n,
                               size_t *used)
{
    ls_avro_rd_t r = {p, p + len, NULL};
    int64_t cnt;
    if (!ls_avro_rd_long(&r, &cnt) || cnt < 0 || (uint64_t)cnt > cap) return -1;
    for (int64_t i = 0; i < cnt; i++)
        if (!ls_avro_rd_long(&r, &idx[i]) || idx[i] < 0) return -1;
    *n = (size_t)cnt;
    *used = (size_t)(r.p - p);
    return 0;
}

static int pb_message(enc_t *e, const vnode_t *v, const uint8_t *p, size_t len, int depth);

/* A scalar's value from one wire field (or one element of a packed run:
 * wt as the element's). */
static int pb_scalar_out(enc_t *e, const vnode_t *v, int wt, uint64_t x, const uint8_t *d, size_t n)
{
    static const int WANT[] = {
        [P_INT32] = 0,  [P_INT64] = 0,   [P_UINT32] = 0,    [P_UINT64] = 0,   [P_SINT32] = 0,
        [P_SINT64] = 0, [P_FIXED32] = 5, [P_FIXED64] = 1,   [P_SFIXED32] = 5, [P_SFIXED64] = 1,
        [P_FLOAT] = 5,  [P_DOUBLE] = 1,  [P_BOOL] = 0,      [P_STRING] = 2,   [P_BYTES] = 2,
        [P_ENUM] = 0,   [P_MESSAGE] = 2, [P_TIMESTAMP] = 2, [P_WRAPPER] = 2,
    };
    if (wt != WANT[v->kind])
        return efail(e, "wire type %d where the field's type has %d", wt, WANT[v->kind]);
    switch (v->kind) {
    case P_INT32:
    case P_SFIXED32: put_long(e->out, (int32_t)(uint32_t)x); return 0;
    case P_INT64:
    case P_SFIXED64: put_long(e->out, (int64_t)x); return 0;
    case P_UINT32:
    case P_FIXED32: put_long(e->out, (int64_t)(uint32_t)x); return 0;
    case P_UINT64:
    case P_FIXED64:
        if (x > (uint64_t)INT64_MAX)
            return efail(e, "%llu is out of the long column's range", (unsigned long long)x);
        put_long(e->out, (int64_t)x);
        return 0;
    case P_SINT32: put_long(e->out, (int32_t)((uint32_t)x >> 1) ^ -(int32_t)(x & 1)); return 0;
    case P_SINT64: put_long(e->out, (int64_t)(x >> 1) ^ -(int64_t)(x & 1)); return 0;
    case P_FLOAT:
    case P_DOUBLE: ls_buf_append(e->out, d, n); return 0;
    case P_BOOL: ls_buf_append_u8(e->out, x != 0); return 0;
    case P_STRING:
        if (!ls_utf8_valid(d, n)) return efail(e, "a string that is not UTF-8");
        put_bytes(e->out, d, n);
        return 0;
    case P_BYTES: put_bytes(e->out, d, n); return 0;
    case P_ENUM: {
        int32_t num = (int32_t)(uint32_t)x;
        for (size_t i = 0; v->en && i < v->en->nvalues; i++)
            if (v->en->numbers[i] == num) {
                put_bytes(e->out, v->en->values[i], strlen(v->en->values[i]));
                return 0;
            }
        char t[16]; /* an open enum's unknown value: kept as its number */
        snprintf(t, sizeof t, "%d", (int)num);
        put_bytes(e->out, t, strlen(t));
        return 0;
    }
    case P_MESSAGE:
    case P_TIMESTAMP:
    case P_WRAPPER: return pb_message(e, v, d, n, 0);
    default: return efail(e, "unmapped value");
    }
}

/* The default of an absent proto3 field without presence. */
static int pb_default(enc_t *e, const vnode_t *v)
{
    static const uint8_t zeros[8];
    switch (v->kind) {
    case P_FLOAT: ls_buf_append(e->out, zeros, 4); return 0;
    case P_DOUBLE: ls_buf_append(e->out, zeros, 8); return 0;
    case P_BOOL: ls_buf_append_u8(e->out, 0); return 0;
    case P_ENUM: return pb_scalar_out(e, v, 0, 0, NULL, 0);
    case P_STRING:
    case P_BYTES:
    default: put_long(e->out, 0); return 0; /* 0, or an empty string */
    }
}

static bool packable(vkind k) { return k >= P_INT32 && k <= P_BOOL; }
static bool packable_enum(vkind k) { return packable(k) || k == P_ENUM; }

/* Elements of a repeated field (all its occurrences, packed runs
 * included), as one Avro block. */
static int pb_repeated(enc_t *e, const vnode_t *v, int num, const uint8_t *p, size_t len)
{
    const vnode_t *el = v->kids[0];
    ls_buf_t items, *saved = e->out;
    ls_buf_init(&items);
    e->out = &items;
    int64_t count = 0;
    const uint8_t *q = p, *end = p + len;
    ls_pbwire_field_t f;
    int rc = 0, r;
    while (rc == 0 && (r = ls_pbwire_next(&q, end, &f)) == 1) {
        if (f.num != (uint32_t)num) continue;
        if (f.wt == 2 && packable_enum(el->kind)) { /* a packed run */
            const uint8_t *a = f.d, *ae = f.d + f.n;
            while (rc == 0 && a < ae) {
                uint64_t x = 0;
                const uint8_t *d = a;
                size_t w =
                    el->kind == P_FIXED32 || el->kind == P_SFIXED32 || el->kind == P_FLOAT    ? 4
                    : el->kind == P_FIXED64 || el->kind == P_SFIXED64 || el->kind == P_DOUBLE ? 8
                                                                                              : 0;
                if (w) {
                    if ((size_t)(ae - a) < w) {
                        rc = efail(e, "a packed run cut short");
                        break;
                    }
                    for (size_t i = 0; i < w; i++)
                        x |= (uint64_t)a[i] << (8 * i);
                    a += w;
                } else if (!ls_pbwire_varint(&a, ae, &x)) {
                    rc = efail(e, "a packed run cut short");
                    break;
                }
                rc = pb_scalar_out(e, el, w == 4 ? 5 : w == 8 ? 1 : 0, x, d, w);
                count++;
            }
        } else {
            rc = pb_scalar_out(e, el, f.wt, f.v, f.d, f.n);
            count++;
        }
    }
    e->out = saved;
    if (rc == 0 && r < 0) rc = efail(e, "malformed wire bytes");
    if (rc == 0) {
        if (count) put_long(e->out, count);
        ls_buf_append(e->out, items.data, items.len);
        put_long(e->out, 0);
    }
    ls_buf_free(&items);
    return rc;
}

typedef struct mapent {
    const uint8_t *key, *entry; /* the key's bytes; the whole entry */
    size_t klen, elen, order;
} mapent_t;

static int mapent_cmp(const void *a, const void *b)
{
    const mapent_t *x = a, *y = b;
    size_t n = x->klen < y->klen ? x->klen : y->klen;
    int c = n ? memcmp(x->key, y->key, n) : 0;
    if (c) return c;
    if (x->klen != y->klen) return x->klen < y->klen ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

static bool same_key(const mapent_t *x, const mapent_t *y)
{
    return x->klen == y->klen && (!x->klen || !memcmp(x->key, y->key, x->klen));
}

static bool message_like(vkind k) { return k == P_MESSAGE || k == P_TIMESTAMP || k == P_WRAPPER; }

/* The value of field num in p[0..len) (the last occurrence; a message's
 * occurrences merged, as a parser does by concatenating them): absent ->
 * *found 0. */
static int pb_single(enc_t *e, const vnode_t *v, int num, const uint8_t *p, size_t len, bool write,
                     int *found)
{
    const uint8_t *q = p, *end = p + len;
    ls_pbwire_field_t f, last = {0};
    int r, n = 0;
    ls_buf_t merged;
    ls_buf_init(&merged);
    while ((r = ls_pbwire_next(&q, end, &f)) == 1) {
        if (f.num != (uint32_t)num) continue;
        if (message_like(v->kind) && f.wt == 2) ls_buf_append(&merged, f.d, f.n);
        last = f;
        n++;
    }
    int rc = 0;
    if (r < 0)
        rc = efail(e, "malformed wire bytes");
    else if (n && write && message_like(v->kind) && last.wt == 2)
        rc = pb_message(e, v, merged.data, merged.len, 0);
    else if (n && write)
        rc = pb_scalar_out(e, v, last.wt, last.v, last.d, last.n);
    ls_buf_free(&merged);
    *found = n;
    return rc;
}

/* A map<string, V> field: its entries (the last of a key wins, as
 * Protobuf parsers do) as one Avro map block. */
static int pb_string_map(enc_t *e, const vnode_t *v, int num, const uint8_t *p, size_t len)
{
    mapent_t *ents = NULL;
    size_t n = 0, cap = 0;
    const uint8_t *q = p, *end = p + len;
    ls_pbwire_field_t f;
    int r, rc = 0;
    while ((r = ls_pbwire_next(&q, end, &f)) == 1) {
        if (f.num != (uint32_t)num) continue;
        if (f.wt != 2) {
            rc = efail(e, "a map entry that is not length-delimited");
            break;
        }
        mapent_t me = {(const uint8_t *)"", f.d, 0, f.n, n};
        const uint8_t *a = f.d, *ae = f.d + f.n;
        ls_pbwire_field_t g;
        int r2;
        while ((r2 = ls_pbwire_next(&a, ae, &g)) == 1)
            if (g.num == 1 && g.wt == 2) me.key = g.d, me.klen = g.n;
        if (r2 < 0) {
            rc = efail(e, "a malformed map entry");
            break;
        }
        if (n == cap) ents = ls_realloc(ents, (cap = cap ? 2 * cap : 8) * sizeof *ents);
        ents[n++] = me;
    }
    if (rc == 0 && r < 0) rc = efail(e, "malformed wire bytes");
    if (rc == 0) {
        if (n) qsort(ents, n, sizeof *ents, mapent_cmp);
        size_t live = 0;
        for (size_t i = 0; i < n; i++)
            live += i + 1 == n || !same_key(&ents[i], &ents[i + 1]);
        if (live) put_long(e->out, (int64_t)live);
        const vnode_t *vk = v->kids[0];
        for (size_t i = 0; i < n && rc == 0; i++) {
            if (i + 1 < n && same_key(&ents[i], &ents[i + 1])) continue; /* a later one wins */
            if (!ls_utf8_valid(ents[i].key, ents[i].klen)) {
                rc = efail(e, "a map key that is not UTF-8");
                break;
            }
            put_bytes(e->out, ents[i].key, ents[i].klen);
            int found;
            rc = pb_single(e, vk, 2, ents[i].entry, ents[i].elen, true, &found);
            if (rc == 0 && !found)
                rc = message_like(vk->kind) ? pb_message(e, vk, NULL, 0, 0) : pb_default(e, vk);
        }
        if (rc == 0) put_long(e->out, 0);
    }
    ls_free(ents);
    return rc;
}

/* The offset of the last occurrence of field num, -1 when absent. */
static long pb_last_pos(const uint8_t *p, size_t len, int num)
{
    const uint8_t *q = p, *end = p + len;
    long pos = -1;
    ls_pbwire_field_t f;
    for (const uint8_t *at = q; ls_pbwire_next(&q, end, &f) == 1; at = q)
        if (f.num == (uint32_t)num) pos = (long)(at - p);
    return pos;
}

static int pb_message(enc_t *e, const vnode_t *v, const uint8_t *p, size_t len, int depth)
{
    if (depth > VIEW_MAX_DEPTH) return efail(e, "nested too deep");
    if (!p) p = (const uint8_t *)"";
    int found, rc;
    if (v->kind == P_TIMESTAMP) {
        /* google.protobuf.Timestamp: seconds (1, int64), nanos (2, int32) */
        const uint8_t *q = p, *end = p + len;
        ls_pbwire_field_t f;
        int64_t sec = 0, nanos = 0;
        int r;
        while ((r = ls_pbwire_next(&q, end, &f)) == 1) {
            if (f.num == 1 && f.wt == 0) sec = (int64_t)f.v;
            if (f.num == 2 && f.wt == 0) nanos = (int32_t)(uint32_t)f.v;
        }
        if (r < 0) return efail(e, "malformed wire bytes");
        if (sec < -9223372036854LL || sec > 9223372036853LL || nanos < 0 || nanos > 999999999)
            return efail(e, "a Timestamp out of range (seconds %lld, nanos %lld)", (long long)sec,
                         (long long)nanos);
        put_long(e->out, sec * 1000000 + nanos / 1000);
        return 0;
    }
    if (v->kind == P_WRAPPER) {
        if ((rc = pb_single(e, v->kids[0], 1, p, len, true, &found)) != 0) return rc;
        return found ? 0 : pb_default(e, v->kids[0]);
    }
    for (size_t i = 0; i < v->nkids; i++) {
        const vnode_t *k = v->kids[i];
        size_t old = strlen(e->path);
        snprintf(e->path + old, sizeof e->path - old, "/%s", v->names[i]);
        if (v->pres[i] == PRES_MANY) {
            rc = k->kind == P_MAP ? pb_string_map(e, k, v->numbers[i], p, len)
                                  : pb_repeated(e, k, v->numbers[i], p, len);
            if (rc) return rc;
            e->path[old] = 0;
            continue;
        }
        /* a oneof member counts only when it was set last among its oneof */
        bool present = true;
        if (v->oneofs[i] >= 0) {
            long mine = pb_last_pos(p, len, v->numbers[i]), best = -1;
            for (size_t j = 0; j < v->nkids; j++)
                if (v->oneofs[j] == v->oneofs[i] && v->pres[j] != PRES_MANY) {
                    long pj = pb_last_pos(p, len, v->numbers[j]);
                    if (pj > best) best = pj;
                }
            present = mine >= 0 && mine == best;
        }
        const vnode_t *val = k;
        if (present && (rc = pb_single(e, val, v->numbers[i], p, len, false, &found)) != 0)
            return rc;
        if (!present) found = 0;
        if (v->pres[i] == PRES_OPTIONAL) {
            put_long(e->out, found ? 1 : 0);
        } else if (!found && v->pres[i] == PRES_REQUIRED) {
            return efail(e, "the required field is missing");
        } else if (!found) {
            if ((rc = pb_default(e, val)) != 0) return rc;
        }
        if (found && (rc = pb_single(e, val, v->numbers[i], p, len, true, &found)) != 0) return rc;
        e->path[old] = 0;
    }
    return 0;
}

static ls_status pb_encode(const ls_avro_view_t *v, const uint8_t *p, size_t len, ls_buf_t *out,
                           char *why, size_t whylen)
{
    enc_t e = {.out = out, .why = why, .whylen = whylen};
    return pb_message(&e, v->root, p, len, 0) == 0 ? LS_OK : LS_EINVAL;
}

/* ---- the views of every message of a Protobuf schema ------------------------------ */

typedef struct pview {
    const pmsg_t *msg;
    ls_avro_view_t *view; /* NULL: why */
    char *why;
} pview_t;

struct ls_avro_views {
    const ls_proto_t *p;
    pview_t *v;
    size_t n, cap;
};

static void views_add(ls_avro_views_t *vs, const pmsg_t *msg, int64_t *path, size_t depth)
{
    if (depth >= 32 || vs->n >= 4096) return;
    if (!msg->map_entry) {
        char err[400];
        if (vs->n == vs->cap)
            vs->v = ls_realloc(vs->v, (vs->cap = vs->cap ? 2 * vs->cap : 8) * sizeof *vs->v);
        ls_avro_view_t *view = ls_avro_view_proto(vs->p, path, depth + 1, err, sizeof err);
        vs->v[vs->n++] = (pview_t){msg, view, view ? NULL : ls_strdup(err)};
    }
    for (size_t i = 0; i < msg->nmsgs; i++) {
        path[depth + 1] = (int64_t)i;
        views_add(vs, msg->msgs[i], path, depth + 1);
    }
}

ls_avro_views_t *ls_avro_views_proto(const ls_proto_t *p)
{
    ls_avro_views_t *vs = LS_NEW(ls_avro_views_t);
    vs->p = p;
    const pfile_t *f = ls_proto_file(p);
    int64_t path[33];
    for (size_t i = 0; i < f->nmsgs; i++) {
        path[0] = (int64_t)i;
        views_add(vs, f->msgs[i], path, 0);
    }
    return vs;
}

void ls_avro_views_free(ls_avro_views_t *vs)
{
    if (!vs) return;
    for (size_t i = 0; i < vs->n; i++) {
        ls_avro_view_free(vs->v[i].view);
        ls_free(vs->v[i].why);
    }
    ls_free(vs->v);
    ls_free(vs);
}

const ls_avro_view_t *ls_avro_views_find(const ls_avro_views_t *vs, const int64_t *idx, size_t n,
                                         char *why, size_t whylen)
{
    const pmsg_t *msg = ls_proto_message_at(ls_proto_file(vs->p), idx, n, why, whylen);
    if (!msg) return NULL;
    for (size_t i = 0; i < vs->n; i++)
        if (vs->v[i].msg == msg) {
            if (!vs->v[i].view)
                snprintf(why, whylen, "message %s is not mapped to columns: %s",
                         msg->full ? msg->full : msg->name, vs->v[i].why);
            return vs->v[i].view;
        }
    snprintf(why, whylen, "message %s is not mapped to columns (a map entry, or nested too deep)",
             msg->full ? msg->full : msg->name);
    return NULL;
}
