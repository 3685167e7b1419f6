/* Delta checkpoint codec (design note in delta_checkpoint.h).
 *
 * One declarative schema (nodes[], pre-order) drives both directions: the
 * Parquet fields are generated from it, a row is written by walking it over
 * the action's JSON, and read back by walking it over the row's Dremel
 * triples. Levels: a top-level struct present is definition level 1; below
 * a present parent at level d, an optional leaf holding a value is d + 1, a
 * map or list present d + 1, one of its entries d + 2 and a non-null entry
 * value d + 3; the only repeated groups are the maps' key_value and the
 * lists' list, so an entry after the first has repetition level 1. */
#include "table/delta_checkpoint.h"

#include <stdio.h>
#include <string.h>
#include "base/alloc.h"
#include "table/parquet_reader.h"
#include "table/parquet_writer.h"

typedef enum { K_STRUCT, K_STR, K_I64, K_I32, K_BOOL, K_MAP, K_LIST } kind_t;

typedef struct node {
    const char *name;
    kind_t kind;
    int nchildren; /* K_STRUCT */
} node_t;

static const node_t nodes[] = {
    {"txn", K_STRUCT, 3},
    {"appId", K_STR, 0},
    {"version", K_I64, 0},
    {"lastUpdated", K_I64, 0},
    {"add", K_STRUCT, 6},
    {"path", K_STR, 0},
    {"partitionValues", K_MAP, 0},
    {"size", K_I64, 0},
    {"modificationTime", K_I64, 0},
    {"dataChange", K_BOOL, 0},
    {"stats", K_STR, 0},
    {"remove", K_STRUCT, 6},
    {"path", K_STR, 0},
    {"deletionTimestamp", K_I64, 0},
    {"dataChange", K_BOOL, 0},
    {"extendedFileMetadata", K_BOOL, 0},
    {"partitionValues", K_MAP, 0},
    {"size", K_I64, 0},
    {"metaData", K_STRUCT, 6},
    {"id", K_STR, 0},
    {"format", K_STRUCT, 2},
    {"provider", K_STR, 0},
    {"options", K_MAP, 0},
    {"schemaString", K_STR, 0},
    {"partitionColumns", K_LIST, 0},
    {"configuration", K_MAP, 0},
    {"createdTime", K_I64, 0},
    {"protocol", K_STRUCT, 4},
    {"minReaderVersion", K_I32, 0},
    {"minWriterVersion", K_I32, 0},
    {"readerFeatures", K_LIST, 0},
    {"writerFeatures", K_LIST, 0},
};
#define NNODES (sizeof nodes / sizeof *nodes)
#define MAX_FIELDS 64

/* The Parquet fields of nodes[] (maps and lists in their standard
 * three-level forms). */
static size_t pq_fields(ls_pq_field_t *f)
{
    size_t n = 0;
    for (size_t i = 0; i < NNODES; i++) {
        const node_t *d = &nodes[i];
        static const ls_pq_type types[] = {[K_STR] = LS_PQ_BYTE_ARRAY,
                                           [K_I64] = LS_PQ_INT64,
                                           [K_I32] = LS_PQ_INT32,
                                           [K_BOOL] = LS_PQ_BOOLEAN};
        switch (d->kind) {
        case K_STRUCT:
            f[n++] = (ls_pq_field_t){
                d->name, LS_PQ_GROUP, LS_PQ_OPTIONAL, LS_PQ_LT_NONE, -1, d->nchildren, 0, 0, 0};
            break;
        case K_MAP:
            f[n++] =
                (ls_pq_field_t){d->name, LS_PQ_GROUP, LS_PQ_OPTIONAL, LS_PQ_LT_MAP, -1, 1, 0, 0, 0};
            f[n++] = (ls_pq_field_t){
                "key_value", LS_PQ_GROUP, LS_PQ_REPEATED, LS_PQ_LT_NONE, -1, 2, 0, 0, 0};
            f[n++] = (ls_pq_field_t){
                "key", LS_PQ_BYTE_ARRAY, LS_PQ_REQUIRED, LS_PQ_LT_STRING, -1, 0, 0, 0, 0};
            f[n++] = (ls_pq_field_t){
                "value", LS_PQ_BYTE_ARRAY, LS_PQ_OPTIONAL, LS_PQ_LT_STRING, -1, 0, 0, 0, 0};
            break;
        case K_LIST:
            f[n++] = (ls_pq_field_t){
                d->name, LS_PQ_GROUP, LS_PQ_OPTIONAL, LS_PQ_LT_LIST, -1, 1, 0, 0, 0};
            f[n++] =
                (ls_pq_field_t){"list", LS_PQ_GROUP, LS_PQ_REPEATED, LS_PQ_LT_NONE, -1, 1, 0, 0, 0};
            f[n++] = (ls_pq_field_t){
                "element", LS_PQ_BYTE_ARRAY, LS_PQ_OPTIONAL, LS_PQ_LT_STRING, -1, 0, 0, 0, 0};
            break;
        default:
            f[n++] = (ls_pq_field_t){d->name,
                                     types[d->kind],
                                     LS_PQ_OPTIONAL,
                                     d->kind == K_STR ? LS_PQ_LT_STRING : LS_PQ_LT_NONE,
                                     -1,
                                     0,
                                     0,
                                     0,
                                     0};
        }
    }
    return n;
}

static int leaf_columns(const node_t *d)
{
    return d->kind == K_MAP ? 2 : d->kind == K_STRUCT ? 0 : 1;
}

/* ---- writing ------------------------------------------------------------- */

/* Nulls at level def in every leaf of the node at *i (and its children). */
static void put_nulls(ls_pq_writer_t *w, size_t *i, int *col, int def)
{
    const node_t *d = &nodes[(*i)++];
    if (d->kind == K_STRUCT) {
        for (int c = 0; c < d->nchildren; c++)
            put_nulls(w, i, col, def);
        return;
    }
    for (int c = 0; c < leaf_columns(d); c++)
        ls_pq_put_null(w, (*col)++, 0, def);
}

static void put_entries(ls_pq_writer_t *w, const node_t *d, json_t *v, int col, int pdef)
{
    if (!json_is_object(v) && !json_is_array(v)) {
        for (int c = 0; c < leaf_columns(d); c++)
            ls_pq_put_null(w, col + c, 0, pdef);
        return;
    }
    if (!json_object_size(v) && !json_array_size(v)) {
        for (int c = 0; c < leaf_columns(d); c++)
            ls_pq_put_null(w, col + c, 0, pdef + 1);
        return;
    }
    int rep = 0;
    if (d->kind == K_MAP) {
        const char *k;
        json_t *x;
        json_object_foreach(v, k, x)
        {
            ls_pq_put_bytes(w, col, rep, k, strlen(k));
            if (json_is_string(x))
                ls_pq_put_bytes(w, col + 1, rep, json_string_value(x), json_string_length(x));
            else
                ls_pq_put_null(w, col + 1, rep, pdef + 2);
            rep = 1;
        }
        return;
    }
    size_t j;
    json_t *x;
    json_array_foreach(v, j, x)
    {
        if (json_is_string(x))
            ls_pq_put_bytes(w, col, rep, json_string_value(x), json_string_length(x));
        else
            ls_pq_put_null(w, col, rep, pdef + 2);
        rep = 1;
    }
}

/* The node at *i over v (NULL: absent), its parent present at level pdef. */
static void put_node(ls_pq_writer_t *w, size_t *i, int *col, json_t *v, int pdef)
{
    const node_t *d = &nodes[*i];
    if (d->kind == K_STRUCT) {
        if (!json_is_object(v)) {
            put_nulls(w, i, col, pdef);
            return;
        }
        (*i)++;
        for (int c = 0; c < d->nchildren; c++)
            put_node(w, i, col, json_object_get(v, nodes[*i].name), pdef + 1);
        return;
    }
    (*i)++;
    int c = *col;
    *col += leaf_columns(d);
    if (d->kind == K_MAP || d->kind == K_LIST) {
        put_entries(w, d, v, c, pdef);
    } else if (d->kind == K_STR && json_is_string(v)) {
        ls_pq_put_bytes(w, c, 0, json_string_value(v), json_string_length(v));
    } else if (d->kind == K_I64 && json_is_integer(v)) {
        ls_pq_put_i64(w, c, 0, (int64_t)json_integer_value(v));
    } else if (d->kind == K_I32 && json_is_integer(v)) {
        ls_pq_put_i32(w, c, 0, (int32_t)json_integer_value(v));
    } else if (d->kind == K_BOOL && json_is_boolean(v)) {
        ls_pq_put_bool(w, c, 0, json_is_true(v));
    } else {
        ls_pq_put_null(w, c, 0, pdef);
    }
}

ls_status ls_delta_checkpoint_encode(json_t *actions, ls_buf_t *out, char *err, size_t errlen)
{
    ls_pq_field_t f[MAX_FIELDS];
    size_t nf = pq_fields(f);
    ls_pq_opts_t o;
    ls_pq_opts_init(&o);
    o.codec = LS_PQ_ZSTD;
    ls_pq_writer_t *w = ls_pq_writer_new(f, nf, &o, out, err, errlen);
    if (!w) return LS_EINVAL;
    ls_status st = LS_OK;
    size_t a;
    json_t *act;
    json_array_foreach(actions, a, act)
    {
        size_t i = 0;
        int col = 0, kinds = 0;
        while (i < NNODES) {
            json_t *v = json_object_get(act, nodes[i].name);
            kinds += v != NULL;
            put_node(w, &i, &col, v, 0);
        }
        if (kinds != 1) {
            snprintf(err, errlen,
                     "checkpoint row %zu: %d action kinds (one of txn, add, remove, "
                     "metaData, protocol is wanted)",
                     a, kinds);
            st = LS_EINVAL;
            break;
        }
        if ((st = ls_pq_end_row(w)) != LS_OK) {
            snprintf(err, errlen, "checkpoint row %zu: %s", a, ls_pq_error(w));
            break;
        }
    }
    if (st == LS_OK && (st = ls_pq_writer_finish(w)) != LS_OK)
        snprintf(err, errlen, "checkpoint: %s", ls_pq_error(w));
    ls_pq_writer_free(w);
    return st;
}

/* ---- reading ------------------------------------------------------------- */

typedef struct row {
    const ls_pqr_triple_t *t[MAX_FIELDS];
    size_t n[MAX_FIELDS];
} row_t;

static json_t *entries_of(const node_t *d, const row_t *r, int col, int pdef)
{
    const ls_pqr_triple_t *k = r->t[col];
    if (!r->n[col] || k[0].def <= pdef) return NULL;
    json_t *out = d->kind == K_MAP ? json_object() : json_array();
    if (k[0].def == pdef + 1) return out; /* empty */
    for (size_t j = 0; j < r->n[col]; j++) {
        if (d->kind == K_MAP) {
            const ls_pqr_triple_t *v = j < r->n[col + 1] ? &r->t[col + 1][j] : NULL;
            char *key = ls_strndup((const char *)k[j].bytes, k[j].len);
            json_object_set_new(out, key,
                                v && v->def == pdef + 3
                                    ? json_stringn((const char *)v->bytes, v->len)
                                    : json_null());
            ls_free(key);
        } else {
            json_array_append_new(out, k[j].def == pdef + 3
                                           ? json_stringn((const char *)k[j].bytes, k[j].len)
                                           : json_null());
        }
    }
    return out;
}

static json_t *get_node(size_t *i, int *col, const row_t *r, int pdef)
{
    const node_t *d = &nodes[(*i)++];
    if (d->kind == K_STRUCT) {
        int first = *col;
        json_t *obj = json_object();
        for (int c = 0; c < d->nchildren; c++) {
            const char *name = nodes[*i].name;
            json_t *v = get_node(i, col, r, pdef + 1);
            if (v) json_object_set_new(obj, name, v);
        }
        if (!r->n[first] || r->t[first][0].def <= pdef) { /* the struct is null */
            json_decref(obj);
            return NULL;
        }
        return obj;
    }
    int c = *col;
    *col += leaf_columns(d);
    if (d->kind == K_MAP || d->kind == K_LIST) return entries_of(d, r, c, pdef);
    const ls_pqr_triple_t *t = r->n[c] ? &r->t[c][0] : NULL;
    if (!t || t->def != pdef + 1) return NULL;
    switch (d->kind) {
    case K_STR: return json_stringn((const char *)t->bytes, t->len);
    case K_I64: return json_integer(t->v.i64);
    case K_I32: return json_integer(t->v.i32);
    default: return json_boolean(t->v.boolean);
    }
}

ls_status ls_delta_checkpoint_decode(const uint8_t *data, size_t len, json_t **out, char *err,
                                     size_t errlen)
{
    *out = NULL;
    ls_status st = LS_OK;
    ls_pqr_t *r = ls_pqr_open(data, len, &st, err, errlen);
    if (!r) return st;
    int ncols = 0;
    for (size_t i = 0; i < NNODES; i++)
        ncols += leaf_columns(&nodes[i]);
    if (ls_pqr_num_columns(r) != (size_t)ncols) {
        snprintf(err, errlen, "checkpoint: %zu columns, not the %d of the checkpoint schema",
                 ls_pqr_num_columns(r), ncols);
        ls_pqr_free(r);
        return LS_ECORRUPT;
    }
    json_t *actions = json_array();
    for (int rg = 0; rg < ls_pqr_num_row_groups(r) && st == LS_OK; rg++) {
        ls_pqr_rows_t *rs = ls_pqr_rows_new(r, rg, NULL, 0, &st, err, errlen);
        if (!rs) break;
        int more;
        while ((more = ls_pqr_rows_next(rs)) == 1) {
            row_t row;
            for (int c = 0; c < ncols; c++)
                row.n[c] = ls_pqr_rows_col(rs, (size_t)c, &row.t[c]);
            size_t i = 0;
            int col = 0;
            while (i < NNODES) {
                const char *name = nodes[i].name;
                json_t *v = get_node(&i, &col, &row, 0);
                if (v) json_array_append_new(actions, json_pack("{s:o}", name, v));
            }
        }
        if (more < 0) {
            st = ls_pqr_rows_status(rs);
            snprintf(err, errlen, "checkpoint: %s", ls_pqr_rows_error(rs));
        }
        ls_pqr_rows_free(rs);
    }
    ls_pqr_free(r);
    if (st != LS_OK) {
        json_decref(actions);
        return st;
    }
    *out = actions;
    return LS_OK;
}
