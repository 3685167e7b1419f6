/* The model of a loaded JSON Schema (json_schema.c), shared with the
 * modules that read it (avro_view.c: typed table columns). Private to
 * registry/. A loaded model is immutable. */
#ifndef LS_REGISTRY_JSON_SCHEMA_INT_H
#define LS_REGISTRY_JSON_SCHEMA_INT_H
#include <jansson.h>
#include <stddef.h>

#include "registry/json_schema.h"
#include "registry/ecma_regex.h"

typedef enum jkind {
    J_EMPTY,
    J_FALSE,
    J_OBJECT,
    J_ARRAY,
    J_STRING,
    J_NUMBER,
    J_BOOLEAN,
    J_NULL,
    J_ENUM,
    J_CONST,
    J_COMBINED,
    J_NOT,
    J_REF,
} jkind;

typedef enum { C_ALL, C_ANY, C_ONE } criterion;

typedef struct jnode jnode_t;

typedef struct prop {
    const char *name;
    jnode_t *schema;
} prop_t;

typedef struct pattern {
    ls_ecma_re_t *re;
    jnode_t *schema;
} pattern_t;

/* A limit keyword: present or not, and its value. */
typedef struct limit {
    int has;
    double v;
} limit_t;

struct jnode {
    jkind kind;
    json_t *src; /* the schema value (annotations: "default") */
    /* combined */
    criterion crit;
    jnode_t **subs;
    size_t nsubs;
    /* object */
    prop_t *props;
    size_t nprops;
    json_t *required; /* array of names, or NULL */
    int additional;   /* additionalProperties / additionalItems permitted */
    jnode_t *additional_schema;
    pattern_t *patterns;
    size_t npatterns;
    limit_t min_props, max_props;
    /* array */
    jnode_t *items;  /* the schema of every item, or NULL */
    jnode_t **tuple; /* positional item schemas */
    size_t ntuple;
    limit_t min_items, max_items;
    int unique;
    /* string */
    limit_t min_len, max_len;
    const char *pattern;
    ls_ecma_re_t *pattern_re; /* compiled (ecma_regex.h), NULL: no pattern */
    /* number */
    int integer;
    limit_t min, max, exmin, exmax, multiple;
    /* enum, const */
    json_t *values;
    /* not, ref */
    jnode_t *sub;
};

/* The schema's root node. */
const jnode_t *ls_jsonschema_root(const ls_jsonschema_t *s);
#endif
