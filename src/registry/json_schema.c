/* JSON Schema loading and compatibility; the contract is in json_schema.h.
 *
 * Loading builds one node per schema position, memoized by the JSON value
 * it came from, so "$ref" cycles become node cycles (freed through the
 * arena, like avro.c). Comparison walks (old, new) pairs; a pair already on
 * the stack is taken as compatible (it fails, if at all, where the cycle
 * started). Differences the rules call compatible are not recorded; each
 * incompatible one adds a line "<TYPE> at <path>" to the reasons. */
#include "registry/json_schema.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "registry/json_schema_int.h"

#define MAX_DEPTH 64
static const char *const CRITERIA[] = {"allOf", "anyOf", "oneOf"};

typedef struct memo {
    json_t *src;
    jnode_t *node;
} memo_t;

struct ls_jsonschema {
    jnode_t *root;
    json_t **docs; /* [0] the schema, then its references */
    const char **names;
    size_t ndocs;
    void **allocs;
    size_t nallocs, capallocs;
    memo_t *memo;
    size_t nmemo, capmemo;
    ls_ecma_re_t **regexes; /* compiled patterns, to free */
    size_t nregexes, capregexes;
};

typedef struct loader {
    ls_jsonschema_t *s;
    size_t doc; /* the document being loaded (for "#/..." refs) */
    char *err;
    size_t errlen;
    int failed;
    char path[512];
    int depth;
} loader_t;

/* ---- arena ------------------------------------------------------------------- */

static void *own(ls_jsonschema_t *s, void *p)
{
    if (s->nallocs == s->capallocs) {
        s->capallocs = s->capallocs ? 2 * s->capallocs : 32;
        s->allocs = ls_realloc(s->allocs, s->capallocs * sizeof *s->allocs);
    }
    s->allocs[s->nallocs++] = p;
    return p;
}

const jnode_t *ls_jsonschema_root(const ls_jsonschema_t *s) { return s->root; }

void ls_jsonschema_free(ls_jsonschema_t *s)
{
    if (!s) return;
    for (size_t i = 0; i < s->nregexes; i++)
        ls_ecma_re_free(s->regexes[i]);
    ls_free(s->regexes);
    for (size_t i = 0; i < s->nallocs; i++)
        ls_free(s->allocs[i]);
    for (size_t i = 0; i < s->ndocs; i++)
        json_decref(s->docs[i]);
    ls_free(s->docs);
    ls_free(s->names);
    ls_free(s->allocs);
    ls_free(s->memo);
    ls_free(s);
}

/* ---- loading ------------------------------------------------------------------ */

__attribute__((format(printf, 2, 3))) static void fail(loader_t *l, const char *fmt, ...)
{
    if (l->failed) return;
    l->failed = 1;
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(l->err, l->errlen, "#%s: %s", l->path, msg);
}

static jnode_t *load(loader_t *l, json_t *j);

static jnode_t *load_at(loader_t *l, json_t *j, const char *fmt, const char *arg)
{
    size_t old = strlen(l->path);
    snprintf(l->path + old, sizeof l->path - old, fmt, arg);
    jnode_t *n = load(l, j);
    l->path[old] = 0;
    return n;
}

static jnode_t *new_node(loader_t *l, jkind k, json_t *src)
{
    jnode_t *n = own(l->s, LS_NEW(jnode_t));
    n->kind = k;
    n->src = src;
    return n;
}

static limit_t get_limit(loader_t *l, json_t *o, const char *key, int integer)
{
    json_t *v = json_object_get(o, key);
    limit_t lim = {0};
    if (!v) return lim;
    if (!json_is_number(v) || (integer && (!json_is_integer(v) || json_integer_value(v) < 0))) {
        fail(l, "\"%s\" must be a %s", key, integer ? "non-negative integer" : "number");
        return lim;
    }
    lim.has = 1;
    lim.v = json_number_value(v);
    return lim;
}

/* A JSON pointer ("/a/b~1c") inside doc. */
static json_t *resolve_pointer(json_t *doc, const char *ptr)
{
    json_t *cur = doc;
    while (*ptr == '/' && cur) {
        ptr++;
        char tok[256];
        size_t n = 0;
        for (; *ptr && *ptr != '/' && n + 1 < sizeof tok; ptr++) {
            if (ptr[0] == '~' && ptr[1] == '1')
                tok[n++] = '/', ptr++;
            else if (ptr[0] == '~' && ptr[1] == '0')
                tok[n++] = '~', ptr++;
            else
                tok[n++] = *ptr;
        }
        tok[n] = 0;
        if (json_is_object(cur)) {
            cur = json_object_get(cur, tok);
        } else if (json_is_array(cur)) {
            char *end;
            long idx = strtol(tok, &end, 10);
            cur = *tok && !*end && idx >= 0 ? json_array_get(cur, (size_t)idx) : NULL;
        } else {
            cur = NULL;
        }
    }
    return *ptr ? NULL : cur;
}

static jnode_t *load_ref(loader_t *l, json_t *o, const char *ref)
{
    const char *hash = strchr(ref, '#');
    size_t base_len = hash ? (size_t)(hash - ref) : strlen(ref);
    size_t doc = l->doc;
    if (base_len) {
        doc = l->s->ndocs;
        for (size_t i = 1; i < l->s->ndocs; i++)
            if (strlen(l->s->names[i]) == base_len && !strncmp(l->s->names[i], ref, base_len))
                doc = i;
        if (doc == l->s->ndocs) {
            fail(l, "\"$ref\" '%s' names no schema reference", ref);
            return NULL;
        }
    }
    json_t *target = resolve_pointer(l->s->docs[doc], hash ? hash + 1 : "");
    if (!target) {
        fail(l, "\"$ref\" '%s' points at nothing", ref);
        return NULL;
    }
    jnode_t *n = new_node(l, J_REF, o);
    size_t saved = l->doc;
    l->doc = doc;
    n->sub = load_at(l, target, "/$ref(%s)", ref);
    l->doc = saved;
    return l->failed ? NULL : n;
}

static const char *const OBJECT_KEYS[] = {
    "properties",    "required", "additionalProperties", "patternProperties", "minProperties",
    "maxProperties", NULL};
static const char *const ARRAY_KEYS[] = {"items",       "additionalItems", "minItems", "maxItems",
                                         "uniqueItems", "prefixItems",     NULL};
static const char *const STRING_KEYS[] = {"minLength", "maxLength", "pattern", NULL};
static const char *const NUMBER_KEYS[] = {"minimum",          "maximum",    "exclusiveMinimum",
                                          "exclusiveMaximum", "multipleOf", NULL};
static const char *const REFUSED_KEYS[] = {"dependencies",
                                           "dependentRequired",
                                           "dependentSchemas",
                                           "unevaluatedProperties",
                                           "unevaluatedItems",
                                           "contains",
                                           "if",
                                           "then",
                                           "else",
                                           "propertyNames",
                                           NULL};

static int has_any(json_t *o, const char *const *keys)
{
    for (; *keys; keys++)
        if (json_object_get(o, *keys)) return 1;
    return 0;
}

/* Compiles an ECMA-262 pattern (ecma_regex.h), owned by the schema; a
 * pattern that does not compile makes the schema invalid. */
static ls_ecma_re_t *own_regex(loader_t *l, const char *pattern, const char *keyword)
{
    char why[200];
    ls_ecma_re_t *re = ls_ecma_re_compile(pattern, why, sizeof why);
    if (!re) {
        fail(l, "the %s pattern \"%s\" is not a valid regular expression: %s", keyword, pattern,
             why);
        return NULL;
    }
    if (l->s->nregexes == l->s->capregexes) {
        l->s->capregexes = l->s->capregexes ? 2 * l->s->capregexes : 8;
        l->s->regexes = ls_realloc(l->s->regexes, l->s->capregexes * sizeof *l->s->regexes);
    }
    l->s->regexes[l->s->nregexes++] = re;
    return re;
}

static void load_object(loader_t *l, jnode_t *n, json_t *o)
{
    json_t *props = json_object_get(o, "properties");
    if (props && !json_is_object(props)) {
        fail(l, "\"properties\" must be an object");
        return;
    }
    n->nprops = props ? json_object_size(props) : 0;
    n->props = own(l->s, LS_NEWN(prop_t, n->nprops ? n->nprops : 1));
    size_t i = 0;
    const char *k;
    json_t *v;
    if (props) json_object_foreach(props, k, v)
        {
            n->props[i].name = k;
            n->props[i++].schema = load_at(l, v, "/properties/%s", k);
            if (l->failed) return;
        }
    json_t *req = json_object_get(o, "required");
    if (req && !json_is_array(req)) {
        fail(l, "\"required\" must be an array of names");
        return;
    }
    for (size_t r = 0; req && r < json_array_size(req); r++)
        if (!json_is_string(json_array_get(req, r))) {
            fail(l, "\"required\" must be an array of names");
            return;
        }
    n->required = req;
    json_t *add = json_object_get(o, "additionalProperties");
    n->additional = !add || !json_is_false(add);
    if (add && !json_is_boolean(add))
        n->additional_schema = load_at(l, add, "%s", "/additionalProperties");
    json_t *pp = json_object_get(o, "patternProperties");
    if (pp && !json_is_object(pp)) {
        fail(l, "\"patternProperties\" must be an object");
        return;
    }
    n->npatterns = pp ? json_object_size(pp) : 0;
    n->patterns = own(l->s, LS_NEWN(pattern_t, n->npatterns ? n->npatterns : 1));
    i = 0;
    if (pp) json_object_foreach(pp, k, v)
        {
            n->patterns[i].re = own_regex(l, k, "patternProperties");
            if (!n->patterns[i].re) return;
            n->patterns[i].schema = load_at(l, v, "/patternProperties/%s", k);
            i++;
            if (l->failed) return;
        }
    n->min_props = get_limit(l, o, "minProperties", 1);
    n->max_props = get_limit(l, o, "maxProperties", 1);
}

static void load_array(loader_t *l, jnode_t *n, json_t *o)
{
    json_t *items = json_object_get(o, "items"), *prefix = json_object_get(o, "prefixItems");
    json_t *tuple = json_is_array(items) ? items : prefix;
    if (prefix && !json_is_array(prefix)) {
        fail(l, "\"prefixItems\" must be an array");
        return;
    }
    if (items && !json_is_array(items)) n->items = load_at(l, items, "%s", "/items");
    n->ntuple = tuple ? json_array_size(tuple) : 0;
    n->tuple = own(l->s, LS_NEWN(jnode_t *, n->ntuple ? n->ntuple : 1));
    for (size_t i = 0; i < n->ntuple && !l->failed; i++) {
        char idx[24];
        snprintf(idx, sizeof idx, "%zu", i);
        n->tuple[i] = load_at(l, json_array_get(tuple, i), "/items/%s", idx);
    }
    /* after a tuple, "additionalItems" (draft 4-7) or "items" (2020-12) */
    json_t *add = json_object_get(o, "additionalItems");
    if (prefix && items && !json_is_array(items)) {
        add = items;
        n->items = NULL;
    }
    n->additional = !add || !json_is_false(add);
    if (add && !json_is_boolean(add))
        n->additional_schema = load_at(l, add, "%s", "/additionalItems");
    n->min_items = get_limit(l, o, "minItems", 1);
    n->max_items = get_limit(l, o, "maxItems", 1);
    n->unique = json_is_true(json_object_get(o, "uniqueItems"));
}

/* One typed schema (kind from a type name) with that type's keywords. */
static jnode_t *load_typed(loader_t *l, json_t *o, const char *type)
{
    jnode_t *n;
    if (!strcmp(type, "object")) {
        n = new_node(l, J_OBJECT, o);
        load_object(l, n, o);
    } else if (!strcmp(type, "array")) {
        n = new_node(l, J_ARRAY, o);
        load_array(l, n, o);
    } else if (!strcmp(type, "string")) {
        n = new_node(l, J_STRING, o);
        n->min_len = get_limit(l, o, "minLength", 1);
        n->max_len = get_limit(l, o, "maxLength", 1);
        json_t *p = json_object_get(o, "pattern");
        if (p && !json_is_string(p)) fail(l, "\"pattern\" must be a string");
        n->pattern = json_string_value(p);
        if (n->pattern) n->pattern_re = own_regex(l, n->pattern, "pattern");
    } else if (!strcmp(type, "number") || !strcmp(type, "integer")) {
        n = new_node(l, J_NUMBER, o);
        n->integer = type[0] == 'i';
        n->min = get_limit(l, o, "minimum", 0);
        n->max = get_limit(l, o, "maximum", 0);
        json_t *exmin = json_object_get(o, "exclusiveMinimum");
        json_t *exmax = json_object_get(o, "exclusiveMaximum");
        /* draft 4: a boolean making minimum/maximum exclusive */
        if (json_is_true(exmin))
            n->exmin = n->min, n->min.has = 0;
        else if (!json_is_boolean(exmin))
            n->exmin = get_limit(l, o, "exclusiveMinimum", 0);
        if (json_is_true(exmax))
            n->exmax = n->max, n->max.has = 0;
        else if (!json_is_boolean(exmax))
            n->exmax = get_limit(l, o, "exclusiveMaximum", 0);
        n->multiple = get_limit(l, o, "multipleOf", 0);
        if (n->multiple.has && n->multiple.v <= 0) fail(l, "\"multipleOf\" must be > 0");
    } else if (!strcmp(type, "boolean")) {
        n = new_node(l, J_BOOLEAN, o);
    } else if (!strcmp(type, "null")) {
        n = new_node(l, J_NULL, o);
    } else {
        fail(l, "unknown type '%s'", type);
        return NULL;
    }
    return l->failed ? NULL : n;
}

static void add_part(loader_t *l, jnode_t **parts, size_t *n, jnode_t *p)
{
    if (p && *n < 8) parts[(*n)++] = p;
}

static jnode_t *combined(loader_t *l, json_t *src, criterion c, jnode_t **parts, size_t n)
{
    jnode_t *cn = new_node(l, J_COMBINED, src);
    cn->crit = c;
    cn->nsubs = n;
    cn->subs = own(l->s, LS_NEWN(jnode_t *, n ? n : 1));
    memcpy(cn->subs, parts, n * sizeof *parts);
    return cn;
}

static jnode_t *load_object_schema(loader_t *l, json_t *o)
{
    for (const char *const *k = REFUSED_KEYS; *k; k++)
        if (json_object_get(o, *k)) {
            fail(l, "the keyword \"%s\" is not supported by this registry", *k);
            return NULL;
        }
    /* an annotation here (json_schema.h), but one the meta-schemas type */
    json_t *format = json_object_get(o, "format");
    if (format && !json_is_string(format)) {
        fail(l, "\"format\" must be a string");
        return NULL;
    }
    json_t *ref = json_object_get(o, "$ref");
    if (ref) {
        if (!json_is_string(ref)) {
            fail(l, "\"$ref\" must be a string");
            return NULL;
        }
        return load_ref(l, o, json_string_value(ref));
    }
    jnode_t *parts[8];
    size_t n = 0;
    json_t *type = json_object_get(o, "type");
    if (json_is_string(type)) {
        add_part(l, parts, &n, load_typed(l, o, json_string_value(type)));
    } else if (json_is_array(type)) {
        jnode_t *alts[8];
        size_t na = 0;
        if (json_array_size(type) == 0 || json_array_size(type) > 7) {
            fail(l, "\"type\" must list 1 to 7 types");
            return NULL;
        }
        for (size_t i = 0; i < json_array_size(type) && !l->failed; i++) {
            const char *t = json_string_value(json_array_get(type, i));
            if (!t)
                fail(l, "\"type\" must list type names");
            else
                add_part(l, alts, &na, load_typed(l, o, t));
        }
        if (!l->failed) add_part(l, parts, &n, na == 1 ? alts[0] : combined(l, o, C_ANY, alts, na));
    } else if (type) {
        fail(l, "\"type\" must be a type name or an array of them");
    } else {
        /* no type: the keywords of one type make a schema of that type */
        if (has_any(o, OBJECT_KEYS)) add_part(l, parts, &n, load_typed(l, o, "object"));
        if (has_any(o, ARRAY_KEYS)) add_part(l, parts, &n, load_typed(l, o, "array"));
        if (has_any(o, STRING_KEYS)) add_part(l, parts, &n, load_typed(l, o, "string"));
        if (has_any(o, NUMBER_KEYS)) add_part(l, parts, &n, load_typed(l, o, "number"));
    }
    json_t *en = json_object_get(o, "enum");
    if (en && !l->failed) {
        if (!json_is_array(en)) fail(l, "\"enum\" must be an array");
        jnode_t *e = new_node(l, J_ENUM, o);
        e->values = en;
        add_part(l, parts, &n, e);
    }
    json_t *cst = json_object_get(o, "const");
    if (cst && !l->failed) {
        jnode_t *c = new_node(l, J_CONST, o);
        c->values = cst;
        add_part(l, parts, &n, c);
    }
    json_t *nt = json_object_get(o, "not");
    if (nt && !l->failed) {
        jnode_t *c = new_node(l, J_NOT, o);
        c->sub = load_at(l, nt, "%s", "/not");
        add_part(l, parts, &n, c);
    }
    for (int c = 0; c < 3 && !l->failed; c++) {
        json_t *arr = json_object_get(o, CRITERIA[c]);
        if (!arr) continue;
        if (!json_is_array(arr) || json_array_size(arr) == 0) {
            fail(l, "\"%s\" must be a non-empty array", CRITERIA[c]);
            break;
        }
        size_t m = json_array_size(arr);
        jnode_t **subs = ls_malloc(m * sizeof *subs);
        for (size_t i = 0; i < m && !l->failed; i++) {
            char at[48];
            snprintf(at, sizeof at, "%s/%zu", CRITERIA[c], i);
            subs[i] = load_at(l, json_array_get(arr, i), "/%s", at);
        }
        if (!l->failed) {
            jnode_t *cn = new_node(l, J_COMBINED, o);
            cn->crit = (criterion)c;
            cn->nsubs = m;
            cn->subs = own(l->s, subs);
            add_part(l, parts, &n, cn);
        } else {
            ls_free(subs);
        }
    }
    if (l->failed) return NULL;
    if (n == 0) return new_node(l, J_EMPTY, o);
    if (n == 1) return parts[0];
    return combined(l, o, C_ALL, parts, n);
}

static jnode_t *load(loader_t *l, json_t *j)
{
    if (l->failed) return NULL;
    for (size_t i = 0; i < l->s->nmemo; i++)
        if (l->s->memo[i].src == j) return l->s->memo[i].node;
    if (++l->depth > MAX_DEPTH) {
        fail(l, "nested deeper than %d levels", MAX_DEPTH);
        return NULL;
    }
    jnode_t *n = NULL;
    if (json_is_true(j))
        n = new_node(l, J_EMPTY, j);
    else if (json_is_false(j))
        n = new_node(l, J_FALSE, j);
    else if (json_is_object(j)) {
        /* a placeholder first, so a $ref cycle back to j finds it */
        jnode_t *ph = new_node(l, J_REF, j);
        if (l->s->nmemo == l->s->capmemo) {
            l->s->capmemo = l->s->capmemo ? 2 * l->s->capmemo : 32;
            l->s->memo = ls_realloc(l->s->memo, l->s->capmemo * sizeof *l->s->memo);
        }
        l->s->memo[l->s->nmemo++] = (memo_t){j, ph};
        n = load_object_schema(l, j);
        if (n) ph->sub = n;
        n = n ? ph : NULL;
    } else {
        fail(l, "a schema is a JSON object or a boolean");
    }
    l->depth--;
    return l->failed ? NULL : n;
}

ls_jsonschema_t *ls_jsonschema_parse(const char *const *names, const char *const *texts,
                                     size_t ndeps, const char *text, char *err, size_t errlen)
{
    ls_jsonschema_t *s = LS_NEW(ls_jsonschema_t);
    s->ndocs = ndeps + 1;
    s->docs = LS_NEWN(json_t *, s->ndocs);
    s->names = LS_NEWN(const char *, s->ndocs);
    loader_t l = {.s = s, .err = err, .errlen = errlen};
    for (size_t i = 0; i < s->ndocs && !l.failed; i++) {
        const char *t = i ? texts[i - 1] : text;
        json_error_t je;
        s->docs[i] = json_loads(t, JSON_DECODE_ANY, &je);
        s->names[i] = i ? own(s, ls_strdup(names[i - 1])) : "";
        if (!s->docs[i]) {
            snprintf(err, errlen, "%s%s is not valid JSON: %s (line %d, column %d)",
                     i ? "the referenced schema " : "the schema", i ? names[i - 1] : "", je.text,
                     je.line, je.column);
            l.failed = 1;
        } else if (!json_is_object(s->docs[i]) && !json_is_boolean(s->docs[i])) {
            snprintf(err, errlen, "a JSON schema is a JSON object or a boolean");
            l.failed = 1;
        }
    }
    if (!l.failed) s->root = load(&l, s->docs[0]);
    if (l.failed || !s->root) {
        ls_jsonschema_free(s);
        return NULL;
    }
    return s;
}

/* ---- compatibility ------------------------------------------------------------------ */

typedef struct pairing {
    const jnode_t *o, *u;
} pairing_t;

typedef struct cx {
    pairing_t *stack; /* shared by sub-contexts */
    int *depth;
    int bad;       /* incompatible differences found */
    ls_buf_t *why; /* NULL in sub-contexts */
    char path[512];
} cx_t;

__attribute__((format(printf, 3, 4))) static void bad(cx_t *c, const char *where, const char *fmt,
                                                      ...)
{
    c->bad++;
    if (!c->why) return;
    char msg[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    ls_buf_printf(c->why, "%s at #%s%s%s\n", msg, c->path, where ? "/" : "", where ? where : "");
}

static void compare(cx_t *c, const jnode_t *o, const jnode_t *u);

/* A quiet context for a trial comparison. */
static cx_t sub(const cx_t *c)
{
    cx_t s = {.stack = c->stack, .depth = c->depth};
    snprintf(s.path, sizeof s.path, "%s", c->path);
    return s;
}

static int compatible(const cx_t *c, const jnode_t *o, const jnode_t *u)
{
    cx_t s = sub(c);
    compare(&s, o, u);
    return s.bad == 0;
}

static void compare_at(cx_t *c, const char *seg, const char *name, const jnode_t *o,
                       const jnode_t *u)
{
    size_t old = strlen(c->path);
    snprintf(c->path + old, sizeof c->path - old, "/%s%s%s", seg, name ? "/" : "",
             name ? name : "");
    compare(c, o, u);
    c->path[old] = 0;
}

static const jnode_t *deref(const jnode_t *n)
{
    for (int i = 0; n && n->kind == J_REF && i < MAX_DEPTH; i++)
        n = n->sub;
    return n;
}

static int has_default(const jnode_t *n)
{
    return n && json_is_object(n->src) && json_object_get(n->src, "default") != NULL;
}

static int requires(const jnode_t *n, const char *name)
{
    for (size_t i = 0; n->required && i < json_array_size(n->required); i++)
        if (!strcmp(json_string_value(json_array_get(n->required, i)), name)) return 1;
    return 0;
}

static const jnode_t *prop_of(const jnode_t *n, const char *name)
{
    for (size_t i = 0; i < n->nprops; i++)
        if (!strcmp(n->props[i].name, name)) return n->props[i].schema;
    return NULL;
}

static int open_object(const jnode_t *n)
{
    return n->npatterns == 0 && !n->additional_schema && n->additional;
}

/* The schema a partially open object gives a property it does not name. */
static const jnode_t *partial_schema(const jnode_t *n, const char *name)
{
    for (size_t i = 0; i < n->npatterns; i++)
        if (ls_ecma_re_search(n->patterns[i].re, name, strlen(name)) == LS_RE_MATCH)
            return n->patterns[i].schema;
    return n->additional_schema;
}

/* max-like limit: may grow or go, not appear or shrink */
static void cmp_max(cx_t *c, const char *kw, const char *name, limit_t o, limit_t u)
{
    if (!o.has && u.has)
        bad(c, kw, "%s_ADDED", name);
    else if (o.has && u.has && u.v < o.v)
        bad(c, kw, "%s_DECREASED", name);
}

/* min-like limit: may shrink or go, not appear or grow */
static void cmp_min(cx_t *c, const char *kw, const char *name, limit_t o, limit_t u)
{
    if (!o.has && u.has)
        bad(c, kw, "%s_ADDED", name);
    else if (o.has && u.has && u.v > o.v)
        bad(c, kw, "%s_INCREASED", name);
}

static void compare_object(cx_t *c, const jnode_t *o, const jnode_t *u)
{
    /* required */
    for (size_t i = 0; i < o->nprops; i++) {
        const char *k = o->props[i].name;
        const jnode_t *up = prop_of(u, k);
        if (up && !requires(o, k) && requires(u, k) && !has_default(up)) {
            size_t old = strlen(c->path);
            snprintf(c->path + old, sizeof c->path - old, "/required");
            bad(c, k, "REQUIRED_ATTRIBUTE_ADDED");
            c->path[old] = 0;
        }
    }
    /* properties: removed, then common and added */
    for (size_t i = 0; i < o->nprops; i++) {
        const char *k = o->props[i].name;
        if (prop_of(u, k) || open_object(u)) continue;
        const jnode_t *partial = partial_schema(u, k);
        size_t old = strlen(c->path);
        snprintf(c->path + old, sizeof c->path - old, "/properties");
        if (partial) {
            if (!compatible(c, o->props[i].schema, partial))
                bad(c, k, "PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL");
        } else if (deref(o->props[i].schema)->kind != J_FALSE) {
            bad(c, k, "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL");
        }
        c->path[old] = 0;
    }
    for (size_t i = 0; i < u->nprops; i++) {
        const char *k = u->props[i].name;
        const jnode_t *op = prop_of(o, k), *up = u->props[i].schema;
        if (op) {
            compare_at(c, "properties", k, op, up);
            continue;
        }
        size_t old = strlen(c->path);
        snprintf(c->path + old, sizeof c->path - old, "/properties");
        if (open_object(o)) {
            if (deref(up)->kind != J_EMPTY) bad(c, k, "PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL");
        } else {
            const jnode_t *partial = partial_schema(o, k);
            if (partial && !compatible(c, partial, up))
                bad(c, k, "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL");
            if (requires(u, k) && !has_default(up))
                bad(c, k, "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL");
        }
        c->path[old] = 0;
    }
    /* additionalProperties */
    if (o->additional != u->additional) {
        if (!u->additional) bad(c, "additionalProperties", "ADDITIONAL_PROPERTIES_REMOVED");
    } else if (!o->additional_schema && u->additional_schema) {
        bad(c, "additionalProperties", "ADDITIONAL_PROPERTIES_NARROWED");
    } else if (o->additional_schema && u->additional_schema) {
        compare_at(c, "additionalProperties", NULL, o->additional_schema, u->additional_schema);
    }
    cmp_max(c, "maxProperties", "MAX_PROPERTIES", o->max_props, u->max_props);
    cmp_min(c, "minProperties", "MIN_PROPERTIES", o->min_props, u->min_props);
}

static int open_array(const jnode_t *n) { return n->additional && !n->additional_schema; }

static void compare_array(cx_t *c, const jnode_t *o, const jnode_t *u)
{
    if (o->items && u->items)
        compare_at(c, "items", NULL, o->items, u->items);
    else if (!o->items && u->items)
        bad(c, "items", "SCHEMA_ADDED");
    size_t common = o->ntuple < u->ntuple ? o->ntuple : u->ntuple;
    for (size_t i = 0; i < common; i++) {
        char idx[24];
        snprintf(idx, sizeof idx, "%zu", i);
        compare_at(c, "items", idx, o->tuple[i], u->tuple[i]);
    }
    for (size_t i = common; i < o->ntuple; i++) {
        char idx[32];
        snprintf(idx, sizeof idx, "items/%zu", i);
        if (open_array(u)) continue;
        if (u->additional_schema) {
            if (!compatible(c, o->tuple[i], u->additional_schema))
                bad(c, idx, "ITEM_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL");
        } else if (deref(o->tuple[i])->kind != J_FALSE) {
            bad(c, idx, "ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL");
        }
    }
    for (size_t i = common; i < u->ntuple; i++) {
        char idx[32];
        snprintf(idx, sizeof idx, "items/%zu", i);
        if (open_array(o)) {
            if (deref(u->tuple[i])->kind != J_EMPTY)
                bad(c, idx, "ITEM_ADDED_TO_OPEN_CONTENT_MODEL");
        } else if (o->additional_schema && !compatible(c, o->additional_schema, u->tuple[i])) {
            bad(c, idx, "ITEM_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL");
        }
    }
    if (o->additional != u->additional) {
        if (o->additional) bad(c, "additionalItems", "ADDITIONAL_ITEMS_REMOVED");
    } else if (!o->additional_schema && u->additional_schema) {
        bad(c, "additionalItems", "ADDITIONAL_ITEMS_NARROWED");
    } else if (o->additional_schema && u->additional_schema) {
        compare_at(c, "additionalItems", NULL, o->additional_schema, u->additional_schema);
    }
    cmp_max(c, "maxItems", "MAX_ITEMS", o->max_items, u->max_items);
    cmp_min(c, "minItems", "MIN_ITEMS", o->min_items, u->min_items);
    if (!o->unique && u->unique) bad(c, "uniqueItems", "UNIQUE_ITEMS_ADDED");
}

static void compare_number(cx_t *c, const jnode_t *o, const jnode_t *u)
{
    cmp_max(c, "maximum", "MAXIMUM", o->max, u->max);
    cmp_min(c, "minimum", "MINIMUM", o->min, u->min);
    cmp_max(c, "exclusiveMaximum", "EXCLUSIVE_MAXIMUM", o->exmax, u->exmax);
    cmp_min(c, "exclusiveMinimum", "EXCLUSIVE_MINIMUM", o->exmin, u->exmin);
    if (!o->multiple.has && u->multiple.has) {
        bad(c, "multipleOf", "MULTIPLE_OF_ADDED");
    } else if (o->multiple.has && u->multiple.has && o->multiple.v != u->multiple.v) {
        /* compatible only when the new step divides the old one */
        double q = o->multiple.v / u->multiple.v;
        if (fabs(q - round(q)) > 1e-9)
            bad(c, "multipleOf",
                fabs(u->multiple.v / o->multiple.v - round(u->multiple.v / o->multiple.v)) < 1e-9
                    ? "MULTIPLE_OF_EXPANDED"
                    : "MULTIPLE_OF_CHANGED");
    }
    if (!o->integer && u->integer) bad(c, NULL, "TYPE_NARROWED");
}

static void compare_string(cx_t *c, const jnode_t *o, const jnode_t *u)
{
    cmp_max(c, "maxLength", "MAX_LENGTH", o->max_len, u->max_len);
    cmp_min(c, "minLength", "MIN_LENGTH", o->min_len, u->min_len);
    if (!o->pattern && u->pattern)
        bad(c, "pattern", "PATTERN_ADDED");
    else if (o->pattern && u->pattern && strcmp(o->pattern, u->pattern))
        bad(c, "pattern", "PATTERN_CHANGED");
}

static int contains_value(json_t *arr, json_t *v)
{
    for (size_t i = 0; i < json_array_size(arr); i++)
        if (json_equal(json_array_get(arr, i), v)) return 1;
    return 0;
}

static void compare_enum(cx_t *c, const jnode_t *o, const jnode_t *u)
{
    for (size_t i = 0; i < json_array_size(o->values); i++)
        if (!contains_value(u->values, json_array_get(o->values, i))) {
            int narrowed = 1;
            for (size_t k = 0; k < json_array_size(u->values) && narrowed; k++)
                narrowed = contains_value(o->values, json_array_get(u->values, k));
            bad(c, "enum", narrowed ? "ENUM_ARRAY_NARROWED" : "ENUM_ARRAY_CHANGED");
            return;
        }
}

/* Maximum bipartite matching (augmenting paths) over compatible pairs. */
static int augment(int i, const unsigned char *ok, size_t nu, int *match_u, unsigned char *seen)
{
    for (size_t j = 0; j < nu; j++) {
        if (!ok[(size_t)i * nu + j] || seen[j]) continue;
        seen[j] = 1;
        if (match_u[j] < 0 || augment(match_u[j], ok, nu, match_u, seen)) {
            match_u[j] = i;
            return 1;
        }
    }
    return 0;
}

static void compare_combined(cx_t *c, const jnode_t *o, const jnode_t *u)
{
    if (o->crit != u->crit) {
        int extended = u->crit == C_ANY || (u->crit == C_ONE && o->nsubs == 1) ||
                       (u->crit == C_ALL && o->nsubs == 1 && u->nsubs == 1);
        if (!extended) {
            bad(c, NULL, "COMBINED_TYPE_CHANGED (%s to %s)", CRITERIA[o->crit], CRITERIA[u->crit]);
            return;
        }
    }
    if (o->nsubs < u->nsubs && u->crit == C_ALL) bad(c, NULL, "PRODUCT_TYPE_EXTENDED");
    if (o->nsubs > u->nsubs && u->crit != C_ALL) bad(c, NULL, "SUM_TYPE_NARROWED");
    unsigned char *ok = ls_calloc(o->nsubs * u->nsubs + 1, 1);
    for (size_t i = 0; i < o->nsubs; i++)
        for (size_t j = 0; j < u->nsubs; j++)
            ok[i * u->nsubs + j] = (unsigned char)compatible(c, o->subs[i], u->subs[j]);
    int *match_u = ls_malloc((u->nsubs + 1) * sizeof *match_u);
    unsigned char *seen = ls_malloc(u->nsubs + 1);
    for (size_t j = 0; j < u->nsubs; j++)
        match_u[j] = -1;
    size_t matched = 0;
    for (size_t i = 0; i < o->nsubs; i++) {
        memset(seen, 0, u->nsubs + 1);
        matched += (size_t)augment((int)i, ok, u->nsubs, match_u, seen);
    }
    if (matched < (o->nsubs < u->nsubs ? o->nsubs : u->nsubs))
        bad(c, CRITERIA[o->crit], "COMBINED_TYPE_SUBSCHEMAS_CHANGED");
    ls_free(ok);
    ls_free(match_u);
    ls_free(seen);
}

static int same_type(const jnode_t *a, const jnode_t *b) { return a->kind == b->kind; }

static void compare(cx_t *c, const jnode_t *o, const jnode_t *u)
{
    o = deref(o);
    u = deref(u);
    if (!o && !u) return;
    if (!o) {
        bad(c, NULL, "SCHEMA_ADDED");
        return;
    }
    if (!u) return; /* SCHEMA_REMOVED: compatible */
    for (int i = 0; i < *c->depth; i++)
        if (c->stack[i].o == o && c->stack[i].u == u) return;
    if (*c->depth == MAX_DEPTH * 4) {
        bad(c, NULL, "schemas nested too deeply to compare");
        return;
    }
    c->stack[(*c->depth)++] = (pairing_t){o, u};
    /* one side combined, the other not: a branch may carry the whole match */
    if (o->kind != J_COMBINED && u->kind == J_COMBINED) {
        if (u->nsubs == 1 && compatible(c, o, u->subs[0])) goto done;
        if (u->crit != C_ALL)
            for (size_t i = 0; i < u->nsubs; i++)
                if (compatible(c, o, u->subs[i])) goto done; /* SUM_TYPE_EXTENDED */
    } else if (o->kind == J_COMBINED && u->kind != J_COMBINED) {
        if (o->nsubs == 1 && compatible(c, o->subs[0], u)) goto done;
        if (o->crit == C_ALL)
            for (size_t i = 0; i < o->nsubs; i++)
                if (compatible(c, o->subs[i], u)) goto done; /* PRODUCT_TYPE_NARROWED */
    }
    if (!same_type(o, u)) {
        if (o->kind != J_FALSE && u->kind != J_EMPTY) bad(c, NULL, "TYPE_CHANGED");
        goto done;
    }
    switch (o->kind) {
    case J_OBJECT: compare_object(c, o, u); break;
    case J_ARRAY: compare_array(c, o, u); break;
    case J_STRING: compare_string(c, o, u); break;
    case J_NUMBER: compare_number(c, o, u); break;
    case J_ENUM: compare_enum(c, o, u); break;
    case J_CONST:
        if (!json_equal(o->values, u->values)) bad(c, "const", "CONST_CHANGED");
        break;
    case J_COMBINED: compare_combined(c, o, u); break;
    case J_NOT:
        /* the new "not" must exclude no more than the old one */
        if (!compatible(c, u->sub, o->sub)) bad(c, "not", "NOT_TYPE_EXTENDED");
        break;
    default: break;
    }
done:
    (*c->depth)--;
}

int ls_jsonschema_can_read(const ls_jsonschema_t *reader, const ls_jsonschema_t *writer,
                           ls_buf_t *why)
{
    pairing_t *stack = LS_NEWN(pairing_t, MAX_DEPTH * 4);
    int depth = 0;
    cx_t c = {.stack = stack, .depth = &depth, .why = why};
    size_t mark = why ? why->len : 0;
    compare(&c, writer->root, reader->root);
    ls_free(stack);
    if (why && why->len > mark && why->data[why->len - 1] == '\n') why->len--;
    return c.bad == 0;
}
