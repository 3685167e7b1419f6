/* JSON Schema validation of documents; the contract is in json_schema.h.
 *
 * A walk of (schema node, JSON value) pairs over the loaded model
 * (json_schema_int.h), carrying the value's JSON pointer. The first failure
 * is reported; inside anyOf/oneOf/not the failures of the branches tried are
 * not reported, only the combination's verdict. Recursion through "$ref"
 * cycles is bounded by MAX_STEPS nested steps (a schema that loops on itself
 * without descending into the value fails there instead of overflowing the
 * stack). Read-only over the schema: safe to run on many threads at once. */
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "registry/json_schema.h"
#include "registry/json_schema_int.h"

#define MAX_STEPS 1024

typedef struct vcx {
    char path[512];
    char *why;
    size_t whylen;
    int quiet; /* > 0 inside anyOf/oneOf/not branches: no message */
    int steps;
} vcx_t;

__attribute__((format(printf, 2, 3))) static int vfail(vcx_t *c, const char *fmt, ...)
{
    if (c->quiet) return -1;
    char what[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    snprintf(c->why, c->whylen, "%s: %s", c->path[0] ? c->path : "/", what);
    return -1;
}

static int check(vcx_t *c, const jnode_t *n, json_t *j);

/* Appends /seg to the pointer with RFC 6901 escapes (~0, ~1); the old length. */
static size_t push(vcx_t *c, const char *seg)
{
    size_t old = strlen(c->path), at = old;
    if (at + 1 < sizeof c->path) c->path[at++] = '/';
    for (const char *s = seg; *s && at + 2 < sizeof c->path; s++) {
        if (*s == '~' || *s == '/') {
            c->path[at++] = '~';
            c->path[at++] = *s == '~' ? '0' : '1';
        } else {
            c->path[at++] = *s;
        }
    }
    c->path[at] = 0;
    return old;
}

/* check at a child of the current value */
static int check_at(vcx_t *c, const jnode_t *n, json_t *j, const char *seg)
{
    size_t old = push(c, seg);
    int rc = check(c, n, j);
    if (!rc || c->quiet) c->path[old] = 0;
    return rc;
}

static const char *kind_name(json_t *j)
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

/* JSON Schema equality: numbers by value (1 == 1.0), objects regardless of
 * key order, arrays element by element. */
static bool jequal(json_t *a, json_t *b)
{
    if (json_is_number(a) && json_is_number(b)) {
        if (json_is_integer(a) && json_is_integer(b))
            return json_integer_value(a) == json_integer_value(b);
        return json_number_value(a) == json_number_value(b);
    }
    if (json_typeof(a) != json_typeof(b)) return false;
    if (json_is_array(a)) {
        if (json_array_size(a) != json_array_size(b)) return false;
        for (size_t i = 0; i < json_array_size(a); i++)
            if (!jequal(json_array_get(a, i), json_array_get(b, i))) return false;
        return true;
    }
    if (json_is_object(a)) {
        if (json_object_size(a) != json_object_size(b)) return false;
        const char *k;
        json_t *v;
        json_object_foreach(a, k, v)
        {
            json_t *w = json_object_get(b, k);
            if (!w || !jequal(v, w)) return false;
        }
        return true;
    }
    return json_equal(a, b);
}

/* Unicode code points of UTF-8 text (jansson has checked the encoding). */
static size_t code_points(const char *s, size_t len)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        n += ((unsigned char)s[i] & 0xc0) != 0x80;
    return n;
}

/* Whether the value's JSON type is the typed node's type. */
static bool of_type(const jnode_t *n, json_t *j)
{
    switch (n->kind) {
    case J_OBJECT: return json_is_object(j);
    case J_ARRAY: return json_is_array(j);
    case J_STRING: return json_is_string(j);
    case J_BOOLEAN: return json_is_boolean(j);
    case J_NULL: return json_is_null(j);
    case J_NUMBER:
        if (!n->integer) return json_is_number(j);
        if (json_is_integer(j)) return true;
        return json_is_real(j) && isfinite(json_real_value(j)) &&
               json_real_value(j) == floor(json_real_value(j));
    default: return true;
    }
}

static const char *type_name(const jnode_t *n)
{
    switch (n->kind) {
    case J_OBJECT: return "an object";
    case J_ARRAY: return "an array";
    case J_STRING: return "a string";
    case J_BOOLEAN: return "a boolean";
    case J_NULL: return "null";
    default: return n->integer ? "an integer" : "a number";
    }
}

static int check_object(vcx_t *c, const jnode_t *n, json_t *j)
{
    size_t size = json_object_size(j);
    if (n->min_props.has && (double)size < n->min_props.v)
        return vfail(c, "%zu properties, fewer than minProperties %g", size, n->min_props.v);
    if (n->max_props.has && (double)size > n->max_props.v)
        return vfail(c, "%zu properties, more than maxProperties %g", size, n->max_props.v);
    for (size_t r = 0; n->required && r < json_array_size(n->required); r++) {
        const char *name = json_string_value(json_array_get(n->required, r));
        if (!json_object_get(j, name)) {
            size_t old = push(c, name);
            vfail(c, "the property is required");
            if (c->quiet) c->path[old] = 0;
            return -1;
        }
    }
    const char *k;
    json_t *v;
    json_object_foreach(j, k, v)
    {
        bool matched = false;
        for (size_t i = 0; i < n->nprops; i++)
            if (!strcmp(n->props[i].name, k)) {
                matched = true;
                if (check_at(c, n->props[i].schema, v, k)) return -1;
                break;
            }
        for (size_t i = 0; i < n->npatterns; i++) {
            int m = ls_ecma_re_search(n->patterns[i].re, k, strlen(k));
            if (m == LS_RE_LIMIT)
                return vfail(c,
                             "matching the property \"%s\" against a patternProperties "
                             "pattern exceeded the match limit",
                             k);
            if (m == LS_RE_MATCH) {
                matched = true;
                if (check_at(c, n->patterns[i].schema, v, k)) return -1;
            }
        }
        if (matched) continue;
        if (!n->additional)
            return vfail(c, "the property \"%s\" is not allowed (additionalProperties is false)",
                         k);
        if (n->additional_schema && check_at(c, n->additional_schema, v, k)) return -1;
    }
    return 0;
}

static int check_array(vcx_t *c, const jnode_t *n, json_t *j)
{
    size_t size = json_array_size(j);
    if (n->min_items.has && (double)size < n->min_items.v)
        return vfail(c, "%zu items, fewer than minItems %g", size, n->min_items.v);
    if (n->max_items.has && (double)size > n->max_items.v)
        return vfail(c, "%zu items, more than maxItems %g", size, n->max_items.v);
    for (size_t i = 0; i < size; i++) {
        char idx[24];
        snprintf(idx, sizeof idx, "%zu", i);
        const jnode_t *s = NULL;
        if (n->items)
            s = n->items;
        else if (i < n->ntuple)
            s = n->tuple[i];
        else if (n->ntuple && !n->additional)
            return vfail(c,
                         "%zu items, more than the %zu the schema lists (additionalItems is "
                         "false)",
                         size, n->ntuple);
        else if (n->ntuple)
            s = n->additional_schema;
        if (s && check_at(c, s, json_array_get(j, i), idx)) return -1;
    }
    if (n->unique)
        for (size_t a = 0; a < size; a++)
            for (size_t b = a + 1; b < size; b++)
                if (jequal(json_array_get(j, a), json_array_get(j, b)))
                    return vfail(c, "items %zu and %zu are equal (uniqueItems)", a, b);
    return 0;
}

static int check_string(vcx_t *c, const jnode_t *n, json_t *j)
{
    size_t len = code_points(json_string_value(j), json_string_length(j));
    if (n->min_len.has && (double)len < n->min_len.v)
        return vfail(c, "a string of %zu characters, shorter than minLength %g", len, n->min_len.v);
    if (n->max_len.has && (double)len > n->max_len.v)
        return vfail(c, "a string of %zu characters, longer than maxLength %g", len, n->max_len.v);
    if (n->pattern_re) {
        int m = ls_ecma_re_search(n->pattern_re, json_string_value(j), json_string_length(j));
        if (m == LS_RE_LIMIT)
            return vfail(c,
                         "matching the string against the pattern \"%s\" exceeded the match "
                         "limit",
                         n->pattern);
        if (m != LS_RE_MATCH)
            return vfail(c, "the string does not match the pattern \"%s\"", n->pattern);
    }
    return 0;
}

static int check_number(vcx_t *c, const jnode_t *n, json_t *j)
{
    double d = json_number_value(j);
    if (n->min.has && d < n->min.v) return vfail(c, "%.17g is less than minimum %g", d, n->min.v);
    if (n->max.has && d > n->max.v)
        return vfail(c, "%.17g is greater than maximum %g", d, n->max.v);
    if (n->exmin.has && d <= n->exmin.v)
        return vfail(c, "%.17g is not greater than exclusiveMinimum %g", d, n->exmin.v);
    if (n->exmax.has && d >= n->exmax.v)
        return vfail(c, "%.17g is not less than exclusiveMaximum %g", d, n->exmax.v);
    if (n->multiple.has) {
        double m = n->multiple.v;
        bool ok;
        if (json_is_integer(j) && m == floor(m) && m < 9.2e18)
            ok = json_integer_value(j) % (json_int_t)m == 0;
        else {
            double q = d / m;
            ok = isfinite(q) && q == floor(q);
        }
        if (!ok) return vfail(c, "%.17g is not a multiple of %g (multipleOf)", d, m);
    }
    return 0;
}

static int check(vcx_t *c, const jnode_t *n, json_t *j)
{
    if (++c->steps > MAX_STEPS) {
        c->steps--;
        return vfail(c, "the schema recurses deeper than %d steps here", MAX_STEPS);
    }
    int rc = 0;
    switch (n->kind) {
    case J_EMPTY: break;
    case J_FALSE: rc = vfail(c, "the schema allows no value here (false)"); break;
    case J_REF: rc = n->sub ? check(c, n->sub, j) : 0; break;
    case J_OBJECT:
    case J_ARRAY:
    case J_STRING:
    case J_NUMBER:
    case J_BOOLEAN:
    case J_NULL:
        if (!of_type(n, j)) {
            /* keywords of a type without "type" constrain that type only */
            if (json_object_get(n->src, "type"))
                rc = vfail(c, "%s where the schema has %s", kind_name(j), type_name(n));
            break;
        }
        if (n->kind == J_OBJECT) rc = check_object(c, n, j);
        if (n->kind == J_ARRAY) rc = check_array(c, n, j);
        if (n->kind == J_STRING) rc = check_string(c, n, j);
        if (n->kind == J_NUMBER) rc = check_number(c, n, j);
        break;
    case J_ENUM: {
        bool member = false;
        for (size_t i = 0; i < json_array_size(n->values) && !member; i++)
            member = jequal(json_array_get(n->values, i), j);
        if (!member) rc = vfail(c, "the value is not one of the schema's enum members");
        break;
    }
    case J_CONST:
        if (!jequal(n->values, j)) rc = vfail(c, "the value is not the schema's const");
        break;
    case J_NOT:
        c->quiet++;
        rc = check(c, n->sub, j);
        c->quiet--;
        rc = rc ? 0 : vfail(c, "the value matches the schema under \"not\"");
        break;
    case J_COMBINED:
        if (n->crit == C_ALL) {
            for (size_t i = 0; i < n->nsubs && !rc; i++)
                rc = check(c, n->subs[i], j);
            break;
        }
        size_t ok = 0, first = 0, second = 0;
        c->quiet++;
        for (size_t i = 0; i < n->nsubs; i++)
            if (check(c, n->subs[i], j) == 0) {
                if (ok == 0) first = i;
                if (ok == 1) second = i;
                if (++ok > 1 || n->crit == C_ANY) break;
            }
        c->quiet--;
        if (ok == 0) {
            if (n->nsubs == 1) {
                rc = check(c, n->subs[0], j); /* its own reason */
                break;
            }
            rc = vfail(c, "the value matches none of the %zu schemas of %s", n->nsubs,
                       n->crit == C_ANY ? "anyOf (or the type list)" : "oneOf");
        } else if (n->crit == C_ONE && ok > 1) {
            rc = vfail(c, "the value matches schemas %zu and %zu of oneOf, not exactly one", first,
                       second);
        }
        break;
    }
    c->steps--;
    return rc;
}

ls_status ls_jsonschema_validate(const ls_jsonschema_t *s, json_t *doc, char *why, size_t whylen)
{
    vcx_t c = {.why = why, .whylen = whylen};
    return check(&c, ls_jsonschema_root(s), doc) == 0 ? LS_OK : LS_EINVAL;
}
