/* Parquet rows: the row cursor (ls_pqr_rows_*: a row group's columns read
 * in step, one triple per column per row) and the copying of a file's rows
 * into a writer (ls_pqr_copy_rows*, with the projection onto the writer's
 * schema). The handle is in parquet_reader_int.h; the footer and the chunk
 * iterator in parquet_reader.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "table/parquet_reader_int.h"

/* ---- row cursor --------------------------------------------------------- */

typedef struct rows_col {
    ls_pqr_iter_t *it;
    ls_pqr_triple_t next; /* lookahead: the first triple of the next row */
    int has_next, done;
    ls_pqr_triple_t *row; /* the current row's triples */
    size_t n, cap;
} rows_col_t;

struct ls_pqr_rows {
    rows_col_t *c;
    size_t nc;
    int64_t rows, want_rows;
    ls_status st;
    char err[256];
};

static int rows_fail(ls_pqr_rows_t *rs, ls_status st, const char *msg)
{
    if (rs->st == LS_OK) {
        rs->st = st;
        snprintf(rs->err, sizeof rs->err, "%s", msg);
    }
    return -1;
}

ls_pqr_rows_t *ls_pqr_rows_new(ls_pqr_t *r, int rg, const int *cols, size_t ncols, ls_status *st,
                               char *err, size_t errlen)
{
    if (!cols) ncols = r->ncols;
    ls_pqr_rows_t *rs = LS_NEW(ls_pqr_rows_t);
    rs->c = LS_NEWN(rows_col_t, ncols ? ncols : 1);
    rs->nc = ncols;
    rs->want_rows = ls_pqr_rg_num_rows(r, rg);
    rs->st = LS_OK;
    for (size_t k = 0; k < ncols; k++) {
        rs->c[k].it = ls_pqr_iter_new(r, rg, cols ? cols[k] : (int)k, st, err, errlen);
        if (!rs->c[k].it) {
            ls_pqr_rows_free(rs);
            return NULL;
        }
    }
    *st = LS_OK;
    return rs;
}

static int rows_pull(ls_pqr_rows_t *rs, rows_col_t *c)
{
    int rc = ls_pqr_next(c->it, &c->next);
    if (rc < 0) return rows_fail(rs, ls_pqr_iter_status(c->it), ls_pqr_iter_error(c->it));
    c->has_next = rc == 1;
    c->done = rc == 0;
    return 0;
}

int ls_pqr_rows_next(ls_pqr_rows_t *rs)
{
    if (rs->st != LS_OK) return -1;
    int ended = -1; /* whether the columns ran out, agreed by all */
    for (size_t k = 0; k < rs->nc; k++) {
        rows_col_t *c = &rs->c[k];
        c->n = 0;
        if (!c->has_next && !c->done && rows_pull(rs, c) < 0) return -1;
        if (ended < 0) ended = c->done;
        if (c->done != ended) {
            char msg[200];
            snprintf(msg, sizeof msg,
                     "parquet row group: columns disagree on the row count after %lld rows",
                     (long long)rs->rows);
            return rows_fail(rs, LS_ECORRUPT, msg);
        }
        if (c->done) continue;
        do {
            if (c->n == c->cap) {
                c->cap = c->cap ? c->cap * 2 : 16;
                c->row = ls_realloc(c->row, c->cap * sizeof *c->row);
            }
            c->row[c->n++] = c->next;
            if (rows_pull(rs, c) < 0) return -1;
        } while (c->has_next && c->next.rep > 0);
    }
    if (ended == 1 || rs->nc == 0) {
        if (rs->nc && rs->rows != rs->want_rows) {
            char msg[200];
            snprintf(msg, sizeof msg, "parquet row group: %lld rows read, footer says %lld",
                     (long long)rs->rows, (long long)rs->want_rows);
            return rows_fail(rs, LS_ECORRUPT, msg);
        }
        return 0;
    }
    rs->rows++;
    return 1;
}

size_t ls_pqr_rows_col(const ls_pqr_rows_t *rs, size_t k, const ls_pqr_triple_t **t)
{
    *t = rs->c[k].row;
    return rs->c[k].n;
}

ls_status ls_pqr_rows_status(const ls_pqr_rows_t *rs) { return rs->st; }

const char *ls_pqr_rows_error(const ls_pqr_rows_t *rs) { return rs->err; }

void ls_pqr_rows_free(ls_pqr_rows_t *rs)
{
    if (!rs) return;
    for (size_t k = 0; k < rs->nc; k++) {
        ls_pqr_iter_free(rs->c[k].it);
        ls_free(rs->c[k].row);
    }
    ls_free(rs->c);
    ls_free(rs);
}

/* ---- copying rows into a writer ------------------------------------------ */

static void put_triple(ls_pq_writer_t *w, int col, int type, int max_def, const ls_pqr_triple_t *t)
{
    if (t->def < max_def) {
        ls_pq_put_null(w, col, t->rep, t->def);
        return;
    }
    switch (type) {
    case LS_PQ_BOOLEAN: ls_pq_put_bool(w, col, t->rep, t->v.boolean); break;
    case LS_PQ_INT32: ls_pq_put_i32(w, col, t->rep, t->v.i32); break;
    case LS_PQ_INT64: ls_pq_put_i64(w, col, t->rep, t->v.i64); break;
    case LS_PQ_FLOAT: ls_pq_put_float(w, col, t->rep, t->v.f32); break;
    case LS_PQ_DOUBLE: ls_pq_put_double(w, col, t->rep, t->v.f64); break;
    default: ls_pq_put_bytes(w, col, t->rep, t->bytes, t->len);
    }
}

/* Copying projects the file onto the writer's schema by Iceberg field id
 * (what a reader of an evolved table does): a writer leaf takes the file
 * leaf of its field id, along the same path of ids; INT32 values widen to
 * INT64 and FLOAT to DOUBLE (and a decimal's INT32 or INT64 to fixed bytes); definition levels are
 * re-counted where a field became optional. A writer leaf the file lacks (a column added since) is
 * null wherever its deepest ancestor the file has is present: it follows the levels of the file
 * leaf sharing the longest path with it, keeping only the entries at or above that ancestor's
 * repetition level. */
#define PROJ_MAX_DEPTH 32

typedef struct pnode {
    int id;
    const char *name;
    ls_pq_repetition rep;
    int nchildren;
} pnode_t;

typedef struct chain {
    int at[PROJ_MAX_DEPTH];
    int len;
} chain_t;

typedef struct proj {
    int src;      /* the file column the entries come from */
    bool present; /* the file holds this column (else it is null) */
    int keep_rep; /* entries of src with a higher repetition level are not this column's */
    int defmap[PROJ_MAX_DEPTH + 1]; /* src's definition level -> the writer's */
} proj_t;

/* The leaves' paths (node indexes below the root) of a pre-order tree. */
static int leaf_chains(const pnode_t *nodes, size_t n, chain_t *out, size_t nleaves)
{
    int left[PROJ_MAX_DEPTH + 1], path[PROJ_MAX_DEPTH];
    int d = 0;
    size_t leaves = 0;
    left[0] = n ? nodes[0].nchildren : 0;
    for (size_t i = 1; i < n; i++) {
        while (d > 0 && left[d] == 0)
            d--;
        if (left[d] == 0) return -1;
        left[d]--;
        path[d] = (int)i;
        if (nodes[i].nchildren > 0) {
            if (d + 1 >= PROJ_MAX_DEPTH) return -1;
            left[++d] = nodes[i].nchildren;
        } else {
            if (leaves == nleaves) return -1;
            memcpy(out[leaves].at, path, (size_t)(d + 1) * sizeof *path);
            out[leaves++].len = d + 1;
        }
    }
    return leaves == nleaves ? 0 : -1;
}

static bool same_node(const pnode_t *a, const pnode_t *b)
{
    return a->id == b->id && (a->id >= 0 || strcmp(a->name, b->name) == 0);
}

/* Definition (or repetition, repeated) level of the first j nodes of c. */
static int levels(const pnode_t *nodes, const chain_t *c, int j, bool repeated)
{
    int n = 0;
    for (int k = 0; k < j; k++)
        n += repeated ? nodes[c->at[k]].rep == LS_PQ_REPEATED
                      : nodes[c->at[k]].rep != LS_PQ_REQUIRED;
    return n;
}

/* to_logical: a decimal widened past 18 digits stores fixed bytes where
 * older files hold INT32 or INT64 */
static bool widens(int from, int to, int to_logical)
{
    return from == to || (from == LS_PQ_INT32 && to == LS_PQ_INT64) ||
           (from == LS_PQ_FLOAT && to == LS_PQ_DOUBLE) ||
           (to_logical == LS_PQ_LT_DECIMAL && to == LS_PQ_FIXED_LEN_BYTE_ARRAY &&
            (from == LS_PQ_INT32 || from == LS_PQ_INT64));
}

/* proj[k] for every writer column k; LS_EINVAL with err when the file
 * cannot be projected (a field id on another path, a type not widened). */
static ls_status plan_projection(ls_pqr_t *r, ls_pq_writer_t *w, proj_t *proj, char *err,
                                 size_t errlen)
{
    size_t nwf, nfe = r->nelems, nwc = ls_pq_ncolumns(w);
    const ls_pq_field_t *wf = ls_pq_writer_fields(w, &nwf);
    pnode_t *wn = LS_NEWN(pnode_t, nwf), *fn = LS_NEWN(pnode_t, nfe + 1);
    chain_t *wc = LS_NEWN(chain_t, nwc + 1), *fc = LS_NEWN(chain_t, r->ncols + 1);
    for (size_t i = 0; i < nwf; i++)
        wn[i] = (pnode_t){wf[i].field_id, wf[i].name, wf[i].repetition, wf[i].nchildren};
    for (size_t i = 0; i < nfe; i++)
        fn[i] = (pnode_t){r->elems[i].field_id, r->elems[i].name, r->elems[i].repetition,
                          r->elems[i].nchildren};
    ls_status st = LS_OK;
    if (leaf_chains(wn, nwf, wc, nwc) != 0 || leaf_chains(fn, nfe, fc, r->ncols) != 0) {
        snprintf(err, errlen, "parquet copy: a schema nests deeper than %d", PROJ_MAX_DEPTH);
        st = LS_EINVAL;
    }
    for (size_t k = 0; k < nwc && st == LS_OK; k++) {
        const chain_t *W = &wc[k];
        const ls_pq_colstats_t *c = ls_pq_column_stats(w, (int)k);
        int best = 0, shared = 0, leaf_id = wn[W->at[W->len - 1]].id;
        for (size_t f = 0; f < r->ncols; f++) {
            const chain_t *F = &fc[f];
            int s = 0;
            while (s < W->len && s < F->len && same_node(&wn[W->at[s]], &fn[F->at[s]]))
                s++;
            if (s > shared) best = (int)f, shared = s;
            if (leaf_id >= 0 && fn[F->at[F->len - 1]].id == leaf_id && s < W->len) {
                snprintf(err, errlen,
                         "parquet copy: field id %d is %s in the writer, elsewhere in "
                         "the file",
                         leaf_id, c->path);
                st = LS_EINVAL;
            }
        }
        const chain_t *F = &fc[best];
        proj_t *p = &proj[k];
        p->src = best;
        p->present = shared == W->len && shared == F->len;
        p->keep_rep = levels(wn, W, shared, true);
        const ls_pqr_elem_t *e = &r->elems[F->at[F->len - 1]];
        if (p->present && !widens(e->type, (int)c->type, (int)c->logical)) {
            snprintf(err, errlen, "parquet copy: column %s is %s in the file, %s in the writer",
                     c->path, ls_pqr_type_name(e->type), ls_pqr_type_name(c->type));
            st = LS_EINVAL;
        }
        for (int d = 0; d <= e->max_def && st == LS_OK; d++) {
            int j = 0; /* the nodes of F present at level d */
            while (j < F->len && levels(fn, F, j + 1, false) <= d)
                j++;
            p->defmap[d] = levels(wn, W, j < shared ? j : shared, false);
        }
    }
    /* nothing of the file may be left behind */
    for (size_t f = 0; f < r->ncols && st == LS_OK; f++) {
        size_t k = 0;
        while (k < nwc && !(proj[k].present && proj[k].src == (int)f))
            k++;
        if (k == nwc) {
            snprintf(err, errlen, "parquet copy: the writer has no column %s of the file",
                     ls_pqr_column(r, (int)f)->path);
            st = LS_EINVAL;
        }
    }
    ls_free(wn);
    ls_free(fn);
    ls_free(wc);
    ls_free(fc);
    return st;
}

static void put_projected(ls_pq_writer_t *w, int col, int ftype, const ls_pq_colstats_t *c,
                          const proj_t *p, const ls_pqr_triple_t *t)
{
    int def = p->defmap[t->def];
    if (!p->present || def < c->max_def) {
        ls_pq_put_null(w, col, t->rep, def);
        return;
    }
    if (ftype == LS_PQ_INT32 && c->type == LS_PQ_FIXED_LEN_BYTE_ARRAY)
        ls_pq_put_decimal(w, col, t->rep, t->v.i32);
    else if (ftype == LS_PQ_INT64 && c->type == LS_PQ_FIXED_LEN_BYTE_ARRAY)
        ls_pq_put_decimal(w, col, t->rep, t->v.i64);
    else if (ftype == LS_PQ_INT32 && c->type == LS_PQ_INT64)
        ls_pq_put_i64(w, col, t->rep, t->v.i32);
    else if (ftype == LS_PQ_FLOAT && c->type == LS_PQ_DOUBLE)
        ls_pq_put_double(w, col, t->rep, t->v.f32);
    else /* the value as stored (its own level is the file's maximum) */
        put_triple(w, col, ftype, t->def, t);
}

ls_status ls_pqr_copy_rows(ls_pqr_t *r, ls_pq_writer_t *w, char *err, size_t errlen)
{
    return ls_pqr_copy_rows_except(r, w, NULL, NULL, err, errlen);
}

/* Which fill writer column c takes: 1 the position's, 2 the constant, 0 none. */
static int fill_kind(const ls_pqr_fill_t *fill, const ls_pq_colstats_t *c)
{
    if (!fill || c->type != LS_PQ_INT64 || c->max_rep != 0 || c->max_def != 1) return 0;
    if (c->field_id == fill->pos_field_id && fill->pos_field_id >= 0) return 1;
    if (c->field_id == fill->const_field_id && fill->const_field_id >= 0) return 2;
    return 0;
}

ls_status ls_pqr_copy_rows_except(ls_pqr_t *r, ls_pq_writer_t *w, const uint8_t *drop,
                                  const ls_pqr_fill_t *fill, char *err, size_t errlen)
{
    size_t nwc = ls_pq_ncolumns(w);
    proj_t *proj = LS_NEWN(proj_t, nwc + 1);
    ls_status st = plan_projection(r, w, proj, err, errlen);
    if (st != LS_OK) {
        ls_free(proj);
        return st;
    }
    int *fills = LS_NEWN(int, nwc + 1);
    for (size_t k = 0; k < nwc; k++)
        fills[k] = fill_kind(fill, ls_pq_column_stats(w, (int)k));
    int64_t row = 0;
    for (int g = 0; g < r->nrgs && st == LS_OK; g++) {
        ls_pqr_rows_t *rs = ls_pqr_rows_new(r, g, NULL, 0, &st, err, errlen);
        if (!rs) break;
        int rc;
        while ((rc = ls_pqr_rows_next(rs)) == 1) {
            int64_t at = row++;
            if (drop && drop[at]) continue;
            for (size_t k = 0; k < nwc; k++) {
                const proj_t *p = &proj[k];
                int ftype = ls_pqr_column(r, p->src)->type;
                const ls_pq_colstats_t *c = ls_pq_column_stats(w, (int)k);
                const ls_pqr_triple_t *t;
                size_t n = ls_pqr_rows_col(rs, (size_t)p->src, &t);
                if (fills[k] && (!p->present || !n || p->defmap[t[0].def] < c->max_def)) {
                    ls_pq_put_i64(w, (int)k, 0,
                                  fills[k] == 1 ? fill->pos_base + at : fill->const_value);
                    continue;
                }
                for (size_t i = 0; i < n; i++)
                    if (t[i].rep <= p->keep_rep) put_projected(w, (int)k, ftype, c, p, &t[i]);
            }
            st = ls_pq_end_row(w);
            if (st != LS_OK) {
                snprintf(err, errlen, "parquet copy: %s", ls_pq_error(w));
                break;
            }
        }
        if (st == LS_OK && rc < 0) {
            st = ls_pqr_rows_status(rs);
            snprintf(err, errlen, "%s", ls_pqr_rows_error(rs));
        }
        ls_pqr_rows_free(rs);
    }
    ls_free(fills);
    ls_free(proj);
    return st;
}
