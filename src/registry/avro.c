/* Avro schema parsing and resolution; the contract is in avro.h.
 *
 * Parsing walks the JSON (jansson) once, depth-first, with a path kept for
 * messages and the enclosing namespace passed down. Named types are entered
 * in the names table when their definition starts (before their fields),
 * so a record may refer to itself. */
#include "registry/avro.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/utf8.h"

#define MAX_DEPTH 64

struct ls_avro_schema {
    ls_avro_node_t *root;
    void **allocs; /* every allocation of the schema: nodes, strings, arrays */
    size_t nallocs, capallocs;
    ls_avro_node_t **named; /* defined named types */
    size_t nnamed, capnamed;
};

typedef struct parser {
    ls_avro_schema_t *s;
    char *err;
    size_t errlen;
    int failed;
    char path[512];
    int depth;
} parser_t;

static const char *const KIND_NAMES[] = {
    [LS_AVRO_NULL] = "null",   [LS_AVRO_BOOLEAN] = "boolean", [LS_AVRO_INT] = "int",
    [LS_AVRO_LONG] = "long",   [LS_AVRO_FLOAT] = "float",     [LS_AVRO_DOUBLE] = "double",
    [LS_AVRO_BYTES] = "bytes", [LS_AVRO_STRING] = "string",   [LS_AVRO_RECORD] = "record",
    [LS_AVRO_ENUM] = "enum",   [LS_AVRO_ARRAY] = "array",     [LS_AVRO_MAP] = "map",
    [LS_AVRO_UNION] = "union", [LS_AVRO_FIXED] = "fixed",
};

const char *ls_avro_kind_name(ls_avro_kind k) { return KIND_NAMES[k]; }

/* ---- arena ----------------------------------------------------------------- */

static void *own(ls_avro_schema_t *s, void *p)
{
    if (s->nallocs == s->capallocs) {
        s->capallocs = s->capallocs ? 2 * s->capallocs : 32;
        s->allocs = ls_realloc(s->allocs, s->capallocs * sizeof *s->allocs);
    }
    s->allocs[s->nallocs++] = p;
    return p;
}

static char *own_str(ls_avro_schema_t *s, const char *str) { return own(s, ls_strdup(str)); }

static ls_avro_node_t *new_node(ls_avro_schema_t *s, ls_avro_kind k)
{
    ls_avro_node_t *n = own(s, LS_NEW(ls_avro_node_t));
    n->kind = k;
    return n;
}

void ls_avro_free(ls_avro_schema_t *s)
{
    if (!s) return;
    for (size_t i = 0; i < s->nallocs; i++)
        ls_free(s->allocs[i]);
    ls_free(s->allocs);
    ls_free(s->named);
    ls_free(s);
}

const ls_avro_node_t *ls_avro_root(const ls_avro_schema_t *s) { return s->root; }

/* ---- errors and paths ------------------------------------------------------ */

__attribute__((format(printf, 2, 3))) static void fail(parser_t *p, const char *fmt, ...)
{
    if (p->failed) return;
    p->failed = 1;
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(p->err, p->errlen, "%s: %s", p->path[0] ? p->path : "/", msg);
}

static size_t path_push(parser_t *p, const char *fmt, ...)
{
    size_t old = strlen(p->path);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->path + old, sizeof p->path - old, fmt, ap);
    va_end(ap);
    return old;
}

static void path_pop(parser_t *p, size_t old) { p->path[old] = 0; }

/* ---- names ----------------------------------------------------------------- */

static int valid_name(const char *n)
{
    if (!((*n >= 'A' && *n <= 'Z') || (*n >= 'a' && *n <= 'z') || *n == '_')) return 0;
    for (n++; *n; n++)
        if (!((*n >= 'A' && *n <= 'Z') || (*n >= 'a' && *n <= 'z') || (*n >= '0' && *n <= '9') ||
              *n == '_'))
            return 0;
    return 1;
}

/* A dotted name: every part a valid name ("" is the null namespace). */
static int valid_dotted(const char *n)
{
    char buf[1024];
    if (strlen(n) >= sizeof buf) return 0;
    strcpy(buf, n);
    char *save = NULL;
    if (!*buf) return 1;
    if (buf[0] == '.' || buf[strlen(buf) - 1] == '.' || strstr(buf, "..")) return 0;
    for (char *t = strtok_r(buf, ".", &save); t; t = strtok_r(NULL, ".", &save))
        if (!valid_name(t)) return 0;
    return 1;
}

/* The full name of `name` declared (or referenced) in namespace ns. */
static char *full_name(const char *name, const char *ns)
{
    if (strchr(name, '.') || !ns || !*ns) return ls_strdup(name);
    return ls_asprintf("%s.%s", ns, name);
}

/* The namespace part of a full name ("" when none). */
static char *namespace_of(const char *full)
{
    const char *dot = strrchr(full, '.');
    return dot ? ls_strndup(full, (size_t)(dot - full)) : ls_strdup("");
}

static ls_avro_node_t *find_named(const ls_avro_schema_t *s, const char *full)
{
    for (size_t i = 0; i < s->nnamed; i++)
        if (!strcmp(s->named[i]->fullname, full)) return s->named[i];
    return NULL;
}

static int primitive_kind(const char *t, ls_avro_kind *k)
{
    for (int i = LS_AVRO_NULL; i <= LS_AVRO_STRING; i++)
        if (!strcmp(t, KIND_NAMES[i])) {
            *k = (ls_avro_kind)i;
            return 1;
        }
    return 0;
}

/* ---- parsing --------------------------------------------------------------- */

static ls_avro_node_t *parse_node(parser_t *p, json_t *j, const char *ns);

static const char *opt_string(parser_t *p, json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);
    if (!v) return NULL;
    if (!json_is_string(v)) {
        fail(p, "\"%s\" must be a string", key);
        return NULL;
    }
    return json_string_value(v);
}

/* Entered before the body is parsed, so the body may refer to it. */
static int define_named(parser_t *p, ls_avro_node_t *n, json_t *obj, const char *ns,
                        const char **ns_out)
{
    const char *name = opt_string(p, obj, "name");
    const char *explicit_ns = opt_string(p, obj, "namespace");
    if (p->failed) return -1;
    if (!name) {
        fail(p, "a %s needs a \"name\"", KIND_NAMES[n->kind]);
        return -1;
    }
    if (explicit_ns && !valid_dotted(explicit_ns)) {
        fail(p, "invalid namespace '%s'", explicit_ns);
        return -1;
    }
    char *full = full_name(name, explicit_ns ? explicit_ns : ns);
    own(p->s, full);
    if (!valid_dotted(full) || !*full) {
        fail(p, "invalid name '%s'", name);
        return -1;
    }
    ls_avro_kind pk;
    const char *last = strrchr(full, '.') ? strrchr(full, '.') + 1 : full;
    if (primitive_kind(last, &pk) && !strchr(full, '.')) {
        fail(p, "'%s' is a primitive type name and cannot name a %s", full, KIND_NAMES[n->kind]);
        return -1;
    }
    if (find_named(p->s, full)) {
        fail(p, "'%s' is defined twice", full);
        return -1;
    }
    n->fullname = full;
    n->name = own_str(p->s, last);
    char *own_ns = own(p->s, namespace_of(full));
    *ns_out = own_ns;
    json_t *al = json_object_get(obj, "aliases");
    if (al) {
        if (!json_is_array(al)) {
            fail(p, "\"aliases\" must be an array of names");
            return -1;
        }
        n->naliases = json_array_size(al);
        n->aliases = own(p->s, LS_NEWN(char *, n->naliases ? n->naliases : 1));
        for (size_t i = 0; i < n->naliases; i++) {
            json_t *a = json_array_get(al, i);
            if (!json_is_string(a) || !valid_dotted(json_string_value(a)) ||
                !*json_string_value(a)) {
                fail(p, "invalid alias at \"aliases\"[%zu]", i);
                return -1;
            }
            n->aliases[i] = own(p->s, full_name(json_string_value(a), own_ns));
        }
    }
    if (p->s->nnamed == p->s->capnamed) {
        p->s->capnamed = p->s->capnamed ? 2 * p->s->capnamed : 16;
        p->s->named = ls_realloc(p->s->named, p->s->capnamed * sizeof *p->s->named);
    }
    p->s->named[p->s->nnamed++] = n;
    return 0;
}

static int default_valid(const ls_avro_node_t *t, json_t *v, int depth);

static int record_default_valid(const ls_avro_node_t *t, json_t *v, int depth)
{
    if (!json_is_object(v)) return 0;
    for (size_t i = 0; i < t->nfields; i++) {
        json_t *fv = json_object_get(v, t->fields[i].name);
        if (fv ? !default_valid(t->fields[i].type, fv, depth + 1) : !t->fields[i].has_default)
            return 0;
    }
    return 1;
}

/* Whether JSON value v is a valid default for type t (spec: "Complex Types
 * / Records", the table of default values). */
static int default_valid(const ls_avro_node_t *t, json_t *v, int depth)
{
    if (depth > MAX_DEPTH) return 0;
    switch (t->kind) {
    case LS_AVRO_NULL: return json_is_null(v);
    case LS_AVRO_BOOLEAN: return json_is_boolean(v);
    case LS_AVRO_INT:
        return json_is_integer(v) && json_integer_value(v) >= INT32_MIN &&
               json_integer_value(v) <= INT32_MAX;
    case LS_AVRO_LONG: return json_is_integer(v);
    case LS_AVRO_FLOAT:
    case LS_AVRO_DOUBLE: return json_is_number(v);
    case LS_AVRO_BYTES:
    case LS_AVRO_STRING: return json_is_string(v);
    case LS_AVRO_FIXED: return json_is_string(v);
    case LS_AVRO_ENUM:
        if (!json_is_string(v)) return 0;
        for (size_t i = 0; i < t->nsymbols; i++)
            if (!strcmp(t->symbols[i], json_string_value(v))) return 1;
        return 0;
    case LS_AVRO_ARRAY: {
        if (!json_is_array(v)) return 0;
        for (size_t i = 0; i < json_array_size(v); i++)
            if (!default_valid(t->items, json_array_get(v, i), depth + 1)) return 0;
        return 1;
    }
    case LS_AVRO_MAP: {
        if (!json_is_object(v)) return 0;
        const char *k;
        json_t *mv;
        json_object_foreach(v, k, mv) if (!default_valid(t->items, mv, depth + 1)) return 0;
        return 1;
    }
    case LS_AVRO_RECORD: return record_default_valid(t, v, depth);
    case LS_AVRO_UNION:
        for (size_t i = 0; i < t->nbranches; i++)
            if (default_valid(t->branches[i], v, depth + 1)) return 1;
        return 0;
    }
    return 0;
}

static int parse_names_array(parser_t *p, json_t *arr, const char *what, char ***out, size_t *n)
{
    *n = json_array_size(arr);
    *out = own(p->s, LS_NEWN(char *, *n ? *n : 1));
    for (size_t i = 0; i < *n; i++) {
        json_t *a = json_array_get(arr, i);
        if (!json_is_string(a) || !valid_name(json_string_value(a))) {
            fail(p, "invalid %s at index %zu", what, i);
            return -1;
        }
        for (size_t k = 0; k < i; k++)
            if (!strcmp((*out)[k], json_string_value(a))) {
                fail(p, "%s '%s' appears twice", what, json_string_value(a));
                return -1;
            }
        (*out)[i] = own_str(p->s, json_string_value(a));
    }
    return 0;
}

static void parse_record(parser_t *p, ls_avro_node_t *n, json_t *obj, const char *ns)
{
    json_t *fields = json_object_get(obj, "fields");
    if (!json_is_array(fields)) {
        fail(p, "record '%s' needs a \"fields\" array", n->fullname);
        return;
    }
    n->nfields = json_array_size(fields);
    n->fields = own(p->s, LS_NEWN(ls_avro_field_t, n->nfields ? n->nfields : 1));
    for (size_t i = 0; i < n->nfields && !p->failed; i++) {
        size_t mark = path_push(p, "/fields/%zu", i);
        json_t *f = json_array_get(fields, i);
        ls_avro_field_t *fd = &n->fields[i];
        const char *name = json_is_object(f) ? opt_string(p, f, "name") : NULL;
        if (!p->failed && (!name || !valid_name(name))) {
            fail(p, "a field needs a valid \"name\"");
        } else if (!p->failed) {
            for (size_t k = 0; k < i; k++)
                if (!strcmp(n->fields[k].name, name)) fail(p, "field '%s' appears twice", name);
            fd->name = own_str(p->s, name);
        }
        json_t *type = p->failed ? NULL : json_object_get(f, "type");
        if (!p->failed && !type) fail(p, "field '%s' needs a \"type\"", name);
        if (!p->failed) {
            size_t m2 = path_push(p, "/type");
            fd->type = parse_node(p, type, ns);
            path_pop(p, m2);
        }
        json_t *order = p->failed ? NULL : json_object_get(f, "order");
        if (order && (!json_is_string(order) || (strcmp(json_string_value(order), "ascending") &&
                                                 strcmp(json_string_value(order), "descending") &&
                                                 strcmp(json_string_value(order), "ignore"))))
            fail(p, "\"order\" must be ascending, descending or ignore");
        json_t *al = p->failed ? NULL : json_object_get(f, "aliases");
        if (al && !json_is_array(al))
            fail(p, "\"aliases\" must be an array of names");
        else if (al)
            parse_names_array(p, al, "field alias", &fd->aliases, &fd->naliases);
        json_t *def = p->failed ? NULL : json_object_get(f, "default");
        if (def) {
            fd->has_default = 1;
            if (!default_valid(fd->type, def, 0))
                fail(p, "the default of field '%s' is not a valid %s", name,
                     KIND_NAMES[fd->type->kind]);
        }
        path_pop(p, mark);
    }
}

static void parse_enum(parser_t *p, ls_avro_node_t *n, json_t *obj)
{
    json_t *sym = json_object_get(obj, "symbols");
    if (!json_is_array(sym)) {
        fail(p, "enum '%s' needs a \"symbols\" array", n->fullname);
        return;
    }
    if (parse_names_array(p, sym, "enum symbol", &n->symbols, &n->nsymbols)) return;
    const char *def = opt_string(p, obj, "default");
    if (def) {
        for (size_t i = 0; i < n->nsymbols; i++)
            if (!strcmp(n->symbols[i], def)) n->enum_default = n->symbols[i];
        if (!n->enum_default) fail(p, "enum default '%s' is not one of its symbols", def);
    }
}

/* Logical types (spec "Logical Types"): kept when valid for the underlying
 * type, otherwise ignored as the specification requires. */
static void parse_logical(parser_t *p, ls_avro_node_t *n, json_t *obj)
{
    json_t *lt = json_object_get(obj, "logicalType");
    if (!json_is_string(lt)) return;
    const char *l = json_string_value(lt);
    int ok = 0;
    if (!strcmp(l, "decimal")) {
        json_t *pr = json_object_get(obj, "precision"), *sc = json_object_get(obj, "scale");
        int64_t prec = json_is_integer(pr) ? json_integer_value(pr) : 0;
        int64_t scale = sc ? (json_is_integer(sc) ? json_integer_value(sc) : -1) : 0;
        int64_t maxprec = 0;
        if (n->kind == LS_AVRO_BYTES)
            maxprec = INT32_MAX;
        else if (n->kind == LS_AVRO_FIXED && n->size > 0 && n->size <= 64) {
            /* floor(log10(2^(8*size-1) - 1)) digits fit in size bytes */
            double v = 1;
            for (int64_t i = 0; i < 8 * n->size - 1; i++)
                v *= 2;
            while (v >= 10) {
                v /= 10;
                maxprec++;
            }
        }
        ok = prec > 0 && prec <= maxprec && scale >= 0 && scale <= prec;
        if (ok) {
            n->precision = (int)prec;
            n->scale = (int)scale;
        }
    } else if (!strcmp(l, "uuid")) {
        ok = n->kind == LS_AVRO_STRING || (n->kind == LS_AVRO_FIXED && n->size == 16);
    } else if (!strcmp(l, "date") || !strcmp(l, "time-millis")) {
        ok = n->kind == LS_AVRO_INT;
    } else if (!strcmp(l, "time-micros") || !strcmp(l, "timestamp-millis") ||
               !strcmp(l, "timestamp-micros") || !strcmp(l, "timestamp-nanos") ||
               !strcmp(l, "local-timestamp-millis") || !strcmp(l, "local-timestamp-micros") ||
               !strcmp(l, "local-timestamp-nanos")) {
        ok = n->kind == LS_AVRO_LONG;
    } else if (!strcmp(l, "duration")) {
        ok = n->kind == LS_AVRO_FIXED && n->size == 12;
    }
    if (ok) n->logical = own_str(p->s, l);
}

static ls_avro_node_t *parse_union(parser_t *p, json_t *arr, const char *ns)
{
    ls_avro_node_t *n = new_node(p->s, LS_AVRO_UNION);
    n->nbranches = json_array_size(arr);
    n->branches = own(p->s, LS_NEWN(ls_avro_node_t *, n->nbranches ? n->nbranches : 1));
    for (size_t i = 0; i < n->nbranches && !p->failed; i++) {
        size_t mark = path_push(p, "/%zu", i);
        json_t *b = json_array_get(arr, i);
        if (json_is_array(b)) {
            fail(p, "a union may not immediately contain another union");
        } else {
            ls_avro_node_t *bn = parse_node(p, b, ns);
            if (bn) {
                for (size_t k = 0; k < i && !p->failed; k++) {
                    const ls_avro_node_t *o = n->branches[k];
                    if (o->kind != bn->kind) continue;
                    if (o->fullname ? !strcmp(o->fullname, bn->fullname) : 1)
                        fail(p, "the union holds %s twice",
                             bn->fullname ? bn->fullname : KIND_NAMES[bn->kind]);
                }
            }
            n->branches[i] = bn;
        }
        path_pop(p, mark);
    }
    return n;
}

static ls_avro_node_t *parse_named_ref(parser_t *p, const char *t, const char *ns)
{
    ls_avro_kind k;
    if (primitive_kind(t, &k)) return new_node(p->s, k);
    char *full = full_name(t, ns);
    ls_avro_node_t *n = find_named(p->s, full);
    if (!n && strcmp(full, t)) n = find_named(p->s, t); /* a name in the null namespace */
    ls_free(full);
    if (!n) fail(p, "unknown type '%s'", t);
    return n;
}

static ls_avro_node_t *parse_object(parser_t *p, json_t *obj, const char *ns)
{
    json_t *tj = json_object_get(obj, "type");
    if (!tj) {
        fail(p, "a schema object needs a \"type\"");
        return NULL;
    }
    if (!json_is_string(tj)) {
        /* {"type": {...}} or {"type": [...]}: the nested schema itself */
        size_t mark = path_push(p, "/type");
        ls_avro_node_t *n = parse_node(p, tj, ns);
        path_pop(p, mark);
        return n;
    }
    const char *t = json_string_value(tj);
    ls_avro_node_t *n = NULL;
    const char *inner_ns = ns;
    if (!strcmp(t, "record") || !strcmp(t, "error")) {
        n = new_node(p->s, LS_AVRO_RECORD);
        if (define_named(p, n, obj, ns, &inner_ns) == 0) parse_record(p, n, obj, inner_ns);
    } else if (!strcmp(t, "enum")) {
        n = new_node(p->s, LS_AVRO_ENUM);
        if (define_named(p, n, obj, ns, &inner_ns) == 0) parse_enum(p, n, obj);
    } else if (!strcmp(t, "fixed")) {
        n = new_node(p->s, LS_AVRO_FIXED);
        json_t *sz = json_object_get(obj, "size");
        if (define_named(p, n, obj, ns, &inner_ns) == 0) {
            if (!json_is_integer(sz) || json_integer_value(sz) < 0 ||
                json_integer_value(sz) > INT32_MAX)
                fail(p, "fixed '%s' needs a \"size\" >= 0", n->fullname);
            else
                n->size = json_integer_value(sz);
        }
    } else if (!strcmp(t, "array") || !strcmp(t, "map")) {
        int arr = t[0] == 'a';
        n = new_node(p->s, arr ? LS_AVRO_ARRAY : LS_AVRO_MAP);
        json_t *it = json_object_get(obj, arr ? "items" : "values");
        if (!it) {
            fail(p, "%s needs \"%s\"", t, arr ? "items" : "values");
        } else {
            size_t mark = path_push(p, arr ? "/items" : "/values");
            n->items = parse_node(p, it, ns);
            path_pop(p, mark);
        }
    } else {
        ls_avro_kind k;
        if (primitive_kind(t, &k))
            n = new_node(p->s, k);
        else
            return parse_named_ref(p, t, ns);
    }
    if (n && !p->failed) parse_logical(p, n, obj);
    return p->failed ? NULL : n;
}

static ls_avro_node_t *parse_node(parser_t *p, json_t *j, const char *ns)
{
    if (p->failed) return NULL;
    if (++p->depth > MAX_DEPTH) {
        fail(p, "nested deeper than %d levels", MAX_DEPTH);
        return NULL;
    }
    ls_avro_node_t *n = NULL;
    if (json_is_string(j))
        n = parse_named_ref(p, json_string_value(j), ns);
    else if (json_is_array(j))
        n = parse_union(p, j, ns);
    else if (json_is_object(j))
        n = parse_object(p, j, ns);
    else
        fail(p, "a schema is a JSON string, object or array");
    p->depth--;
    return p->failed ? NULL : n;
}

static ls_avro_node_t *parse_text(parser_t *p, const char *text, size_t len, const char *what)
{
    json_error_t je;
    json_t *j = json_loadb(text, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je);
    if (!j) {
        snprintf(p->err, p->errlen, "%s is not valid JSON: %s (line %d, column %d)", what, je.text,
                 je.line, je.column);
        p->failed = 1;
        return NULL;
    }
    p->path[0] = 0;
    ls_avro_node_t *n = parse_node(p, j, "");
    json_decref(j);
    return n;
}

ls_avro_schema_t *ls_avro_parse(const char *const *deps, size_t ndeps, const char *text, size_t len,
                                char *err, size_t errlen)
{
    ls_avro_schema_t *s = LS_NEW(ls_avro_schema_t);
    parser_t p = {.s = s, .err = err, .errlen = errlen};
    for (size_t i = 0; i < ndeps && !p.failed; i++) {
        parse_text(&p, deps[i], strlen(deps[i]), "a referenced schema");
        if (p.failed) {
            char inner[400];
            snprintf(inner, sizeof inner, "%s", err);
            snprintf(err, errlen, "referenced schema %zu: %s", i + 1, inner);
        }
    }
    if (!p.failed) s->root = parse_text(&p, text, len, "the schema");
    if (p.failed || !s->root) {
        ls_avro_free(s);
        return NULL;
    }
    return s;
}

/* ---- schema resolution ----------------------------------------------------- */

typedef struct pair {
    const ls_avro_node_t *r, *w;
} pair_t;

typedef struct resolver {
    pair_t stack[MAX_DEPTH * 2];
    int depth;
    char path[512];
    ls_buf_t *why;
} resolver_t;

__attribute__((format(printf, 2, 3))) static int incompatible(resolver_t *rs, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (rs->why) ls_buf_printf(rs->why, "%s at %s", msg, rs->path[0] ? rs->path : "/");
    return 0;
}

static const char *describe(const ls_avro_node_t *n)
{
    return n->fullname ? n->fullname : KIND_NAMES[n->kind];
}

/* Names match when the unqualified names are equal, or the writer's full
 * name is one of the reader's aliases (spec: "Schema Resolution", and
 * "Aliases"). */
static int names_match(const ls_avro_node_t *r, const ls_avro_node_t *w)
{
    if (!strcmp(r->name, w->name)) return 1;
    for (size_t i = 0; i < r->naliases; i++)
        if (!strcmp(r->aliases[i], w->fullname)) return 1;
    return 0;
}

static int promotable(ls_avro_kind w, ls_avro_kind r)
{
    switch (w) {
    case LS_AVRO_INT: return r == LS_AVRO_LONG || r == LS_AVRO_FLOAT || r == LS_AVRO_DOUBLE;
    case LS_AVRO_LONG: return r == LS_AVRO_FLOAT || r == LS_AVRO_DOUBLE;
    case LS_AVRO_FLOAT: return r == LS_AVRO_DOUBLE;
    case LS_AVRO_STRING: return r == LS_AVRO_BYTES;
    case LS_AVRO_BYTES: return r == LS_AVRO_STRING;
    default: return 0;
    }
}

static int resolve(resolver_t *rs, const ls_avro_node_t *r, const ls_avro_node_t *w);

/* Without reporting: used to pick a matching union branch. */
static int resolves_quietly(resolver_t *rs, const ls_avro_node_t *r, const ls_avro_node_t *w)
{
    ls_buf_t *why = rs->why;
    rs->why = NULL;
    int ok = resolve(rs, r, w);
    rs->why = why;
    return ok;
}

static int resolve_record(resolver_t *rs, const ls_avro_node_t *r, const ls_avro_node_t *w)
{
    for (size_t i = 0; i < r->nfields; i++) {
        const ls_avro_field_t *rf = &r->fields[i];
        const ls_avro_field_t *wf = NULL;
        for (size_t k = 0; k < w->nfields && !wf; k++)
            if (!strcmp(w->fields[k].name, rf->name)) wf = &w->fields[k];
        for (size_t a = 0; a < rf->naliases && !wf; a++)
            for (size_t k = 0; k < w->nfields && !wf; k++)
                if (!strcmp(w->fields[k].name, rf->aliases[a])) wf = &w->fields[k];
        size_t mark = strlen(rs->path);
        snprintf(rs->path + mark, sizeof rs->path - mark, "/fields/%s", rf->name);
        int ok = 1;
        if (!wf) {
            if (!rf->has_default)
                ok = incompatible(rs,
                                  "READER_FIELD_MISSING_DEFAULT_VALUE: the reader's field '%s' "
                                  "is not in the writer's record '%s' and has no default",
                                  rf->name, w->fullname);
        } else {
            ok = resolve(rs, rf->type, wf->type);
        }
        rs->path[mark] = 0;
        if (!ok) return 0;
    }
    return 1;
}

static int resolve(resolver_t *rs, const ls_avro_node_t *r, const ls_avro_node_t *w)
{
    /* named types may recurse: a pair already being resolved is assumed
     * to resolve (it fails, if at all, where the recursion started) */
    for (int i = 0; i < rs->depth; i++)
        if (rs->stack[i].r == r && rs->stack[i].w == w) return 1;
    if (rs->depth == (int)(sizeof rs->stack / sizeof rs->stack[0]))
        return incompatible(rs, "schemas nested too deeply to compare");
    rs->stack[rs->depth++] = (pair_t){r, w};
    int ok;
    if (w->kind == LS_AVRO_UNION) {
        /* every branch the writer may have written must be readable */
        ok = 1;
        for (size_t i = 0; i < w->nbranches && ok; i++) {
            size_t mark = strlen(rs->path);
            snprintf(rs->path + mark, sizeof rs->path - mark, "/%zu", i);
            if (r->kind == LS_AVRO_UNION) {
                int found = 0;
                for (size_t k = 0; k < r->nbranches && !found; k++)
                    found = resolves_quietly(rs, r->branches[k], w->branches[i]);
                if (!found)
                    ok = incompatible(rs,
                                      "MISSING_UNION_BRANCH: the reader's union has no branch "
                                      "for the writer's %s",
                                      describe(w->branches[i]));
            } else {
                ok = resolve(rs, r, w->branches[i]);
            }
            rs->path[mark] = 0;
        }
    } else if (r->kind == LS_AVRO_UNION) {
        int found = 0;
        for (size_t k = 0; k < r->nbranches && !found; k++)
            found = resolves_quietly(rs, r->branches[k], w);
        ok = found || incompatible(rs,
                                   "MISSING_UNION_BRANCH: the reader's union has no branch for "
                                   "the writer's %s",
                                   describe(w));
    } else if (r->kind != w->kind) {
        ok = promotable(w->kind, r->kind) ||
             incompatible(rs, "TYPE_MISMATCH: the reader's %s cannot read the writer's %s",
                          describe(r), describe(w));
    } else {
        switch (r->kind) {
        case LS_AVRO_RECORD:
            ok = names_match(r, w) ? resolve_record(rs, r, w)
                                   : incompatible(rs,
                                                  "NAME_MISMATCH: the reader's record '%s' does "
                                                  "not match the writer's '%s'",
                                                  r->fullname, w->fullname);
            break;
        case LS_AVRO_ENUM:
            if (!names_match(r, w)) {
                ok = incompatible(rs,
                                  "NAME_MISMATCH: the reader's enum '%s' does not match the "
                                  "writer's '%s'",
                                  r->fullname, w->fullname);
                break;
            }
            ok = 1;
            for (size_t i = 0; i < w->nsymbols && ok && !r->enum_default; i++) {
                int found = 0;
                for (size_t k = 0; k < r->nsymbols && !found; k++)
                    found = !strcmp(r->symbols[k], w->symbols[i]);
                if (!found)
                    ok = incompatible(rs,
                                      "MISSING_ENUM_SYMBOLS: the reader's enum '%s' lacks the "
                                      "writer's symbol '%s' and has no default",
                                      r->fullname, w->symbols[i]);
            }
            break;
        case LS_AVRO_FIXED:
            if (!names_match(r, w))
                ok = incompatible(rs,
                                  "NAME_MISMATCH: the reader's fixed '%s' does not match the "
                                  "writer's '%s'",
                                  r->fullname, w->fullname);
            else if (r->size != w->size)
                ok = incompatible(rs,
                                  "FIXED_SIZE_MISMATCH: the reader's fixed '%s' has %lld bytes, "
                                  "the writer's %lld",
                                  r->fullname, (long long)r->size, (long long)w->size);
            else
                ok = 1;
            break;
        case LS_AVRO_ARRAY:
        case LS_AVRO_MAP: {
            size_t mark = strlen(rs->path);
            snprintf(rs->path + mark, sizeof rs->path - mark,
                     r->kind == LS_AVRO_ARRAY ? "/items" : "/values");
            ok = resolve(rs, r->items, w->items);
            rs->path[mark] = 0;
            break;
        }
        default: ok = 1; /* the same primitive */
        }
    }
    rs->depth--;
    return ok;
}

int ls_avro_can_read(const ls_avro_schema_t *reader, const ls_avro_schema_t *writer, ls_buf_t *why)
{
    resolver_t rs = {.why = why};
    return resolve(&rs, reader->root, writer->root);
}

/* ---------------------------------------------------------------- datums */

bool ls_avro_rd_long(ls_avro_rd_t *r, int64_t *out)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (r->p >= r->end) {
            r->why = "truncated varint";
            return false;
        }
        uint8_t b = *r->p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
            return true;
        }
    }
    r->why = "varint longer than 10 bytes";
    return false;
}

bool ls_avro_rd_bytes(ls_avro_rd_t *r, const uint8_t **p, size_t *n)
{
    int64_t len;
    if (!ls_avro_rd_long(r, &len)) return false;
    if (len < 0 || len > r->end - r->p) {
        r->why = len < 0 ? "negative length" : "length past the end of the datum";
        return false;
    }
    *p = r->p;
    *n = (size_t)len;
    r->p += len;
    return true;
}

bool ls_avro_rd_fixed(ls_avro_rd_t *r, void *out, size_t n)
{
    if ((size_t)(r->end - r->p) < n) {
        r->why = "truncated value";
        return false;
    }
    if (out) memcpy(out, r->p, n);
    r->p += n;
    return true;
}

bool ls_avro_rd_block(ls_avro_rd_t *r, bool items_take_bytes, int64_t *count)
{
    if (!ls_avro_rd_long(r, count)) return false;
    if (*count < 0) { /* a block with its byte size: skip the size */
        int64_t size;
        if (*count == INT64_MIN) {
            r->why = "block count out of range";
            return false;
        }
        if (!ls_avro_rd_long(r, &size)) return false;
        *count = -*count;
    }
    if (items_take_bytes && *count > r->end - r->p) {
        r->why = "block count past the end of the datum";
        return false;
    }
    return true;
}

#define DATUM_MAX_DEPTH 256

static const ls_avro_node_t MAP_KEY = {.kind = LS_AVRO_STRING}; /* map keys are strings */

/* Whether a value of n is always encoded in zero bytes (null, an empty
 * fixed, a record of such fields): an array of them may hold any count. */
static bool zero_size(const ls_avro_node_t *n, int depth)
{
    if (n->kind == LS_AVRO_NULL || (n->kind == LS_AVRO_FIXED && n->size == 0)) return true;
    if (n->kind != LS_AVRO_RECORD || depth > 32) return false;
    for (size_t i = 0; i < n->nfields; i++)
        if (!zero_size(n->fields[i].type, depth + 1)) return false;
    return true;
}

static bool skip_datum(ls_avro_rd_t *r, const ls_avro_node_t *n, int depth)
{
    if (depth > DATUM_MAX_DEPTH) {
        r->why = "nested deeper than 256 levels";
        return false;
    }
    int64_t v;
    const uint8_t *p;
    size_t len;
    switch (n->kind) {
    case LS_AVRO_NULL: return true;
    case LS_AVRO_BOOLEAN:
        if (!ls_avro_rd_fixed(r, NULL, 1)) return false;
        if (r->p[-1] > 1) r->why = "boolean byte is neither 0 nor 1";
        return r->p[-1] <= 1;
    case LS_AVRO_INT:
        if (!ls_avro_rd_long(r, &v)) return false;
        if (v < INT32_MIN || v > INT32_MAX) r->why = "int out of range";
        return v >= INT32_MIN && v <= INT32_MAX;
    case LS_AVRO_LONG: return ls_avro_rd_long(r, &v);
    case LS_AVRO_FLOAT: return ls_avro_rd_fixed(r, NULL, 4);
    case LS_AVRO_DOUBLE: return ls_avro_rd_fixed(r, NULL, 8);
    case LS_AVRO_BYTES: return ls_avro_rd_bytes(r, &p, &len);
    case LS_AVRO_STRING:
        if (!ls_avro_rd_bytes(r, &p, &len)) return false;
        if (!ls_utf8_valid(p, len)) r->why = "string is not UTF-8";
        return ls_utf8_valid(p, len);
    case LS_AVRO_FIXED: return ls_avro_rd_fixed(r, NULL, (size_t)n->size);
    case LS_AVRO_ENUM:
        if (!ls_avro_rd_long(r, &v)) return false;
        if (v < 0 || (uint64_t)v >= n->nsymbols) r->why = "enum index out of range";
        return v >= 0 && (uint64_t)v < n->nsymbols;
    case LS_AVRO_UNION:
        if (!ls_avro_rd_long(r, &v)) return false;
        if (v < 0 || (uint64_t)v >= n->nbranches) {
            r->why = "union branch index out of range";
            return false;
        }
        return skip_datum(r, n->branches[v], depth + 1);
    case LS_AVRO_RECORD:
        for (size_t i = 0; i < n->nfields; i++)
            if (!skip_datum(r, n->fields[i].type, depth + 1)) return false;
        return true;
    case LS_AVRO_ARRAY:
    case LS_AVRO_MAP: {
        /* items of no bytes (an array of nulls) need no walk: any count */
        bool empty = n->kind == LS_AVRO_ARRAY && zero_size(n->items, 0);
        for (;;) {
            int64_t count;
            if (!ls_avro_rd_block(r, !empty, &count)) return false;
            if (count == 0) return true;
            for (int64_t i = 0; i < count && !empty; i++) {
                if (n->kind == LS_AVRO_MAP && !skip_datum(r, &MAP_KEY, depth + 1)) return false;
                if (!skip_datum(r, n->items, depth + 1)) return false;
            }
        }
    }
    }
    r->why = "unknown type";
    return false;
}

ls_status ls_avro_datum_check(const ls_avro_node_t *n, const uint8_t *p, size_t len, char *why,
                              size_t whylen)
{
    ls_avro_rd_t r = {p, p + len, NULL};
    if (!skip_datum(&r, n, 0)) {
        snprintf(why, whylen, "%s at byte %zu of the datum", r.why, (size_t)(r.p - p));
        return LS_EINVAL;
    }
    if (r.p != r.end) {
        snprintf(why, whylen, "%zu bytes left over after the datum", (size_t)(r.end - r.p));
        return LS_EINVAL;
    }
    return LS_OK;
}
