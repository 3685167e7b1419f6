#include "lake/materialize_int.h"

/* ------------------------------------------------------- table versions */

/* Whether tt's table may have versions: a typed one (a raw table has no
 * schema to switch on). The chain is followed whatever the policy's
 * evolution says now: a version once continued is frozen for good. */
bool ls_mat_versioned(const ls_table_target_t *tt)
{
    return tt->policy->value_typed || tt->policy->key_typed;
}

void ls_mat_target_rename(ls_table_target_t *tt, const char *name)
{
    snprintf(tt->name, sizeof tt->name, "%s", name);
    snprintf(tt->prefix, sizeof tt->prefix, "warehouse/%s/%s", tt->stream->ns, tt->name);
}

/* The version of tt's table that takes rows now, into *out (a copy of tt):
 * the continued-as chain from the base table followed to its end (design
 * note). *cur: that version opened, NULL when it is not created yet (cur
 * may be NULL). */
ls_status ls_mat_resolve_version(ls_meta_t *meta, ls_objstore_t *os, const ls_table_target_t *tt,
                                 ls_table_target_t *out, ls_ice_table_t **cur, char *err,
                                 size_t errlen)
{
    *out = *tt;
    if (cur) *cur = NULL;
    for (int i = 0;; i++) {
        ls_ice_table_t *t = NULL;
        ls_status st = ls_mat_open_table(meta, os, NULL, out, NULL, &t, err, errlen);
        if (st == LS_ENOTFOUND) {
            err[0] = 0;
            return LS_OK;
        }
        if (st != LS_OK) return st;
        const char *next = ls_mat_versioned(tt) ? ls_ice_table_summary(t, CONT_AS_KEY) : NULL;
        if (!next) {
            if (cur)
                *cur = t;
            else
                ls_ice_table_free(t);
            return LS_OK;
        }
        if (i >= MAX_VERSIONS || strlen(next) >= sizeof out->name ||
            !ls_tcat_name_ok(next, strlen(next))) {
            snprintf(err, errlen,
                     "table %s.%s: %s is '%.100s', not a table name, or its versions go on past "
                     "%d",
                     tt->stream->ns, out->name, CONT_AS_KEY, next, MAX_VERSIONS);
            ls_ice_table_free(t);
            return LS_ECORRUPT;
        }
        snprintf(out->prev, sizeof out->prev, "%s", out->name);
        ls_mat_target_rename(out, next);
        out->version++;
        ls_ice_table_free(t);
    }
}

void ls_mat_preds_free(preds_t *p)
{
    for (size_t i = 0; i < p->n; i++)
        ls_ice_table_free(p->v[i]);
    ls_free(p->v);
    memset(p, 0, sizeof *p);
}

ls_status ls_mat_load_preds(ls_meta_t *meta, ls_objstore_t *os, const ls_table_target_t *vt,
                            ls_ice_table_t *cur, preds_t *p, char *err, size_t errlen)
{
    memset(p, 0, sizeof *p);
    if (!ls_mat_versioned(vt)) return LS_OK;
    const char *prev = cur ? ls_ice_table_summary(cur, CONTINUES_KEY) : vt->prev;
    ls_table_target_t t = *vt;
    while (prev && prev[0]) {
        if (p->n >= MAX_VERSIONS || strlen(prev) >= sizeof t.name) {
            snprintf(err, errlen, "table %s.%s: its versions go on past %d", vt->stream->ns,
                     vt->name, MAX_VERSIONS);
            ls_mat_preds_free(p);
            return LS_ECORRUPT;
        }
        char was[sizeof t.name];
        snprintf(was, sizeof was, "%s", t.name);
        ls_mat_target_rename(&t, prev);
        ls_ice_table_t *pt = NULL;
        ls_status st = ls_mat_open_table(meta, os, NULL, &t, NULL, &pt, err, errlen);
        if (st == LS_ENOTFOUND) {
            snprintf(err, errlen,
                     "table %s.%s continues table %s, which does not exist: the offsets it "
                     "holds are unknown",
                     vt->stream->ns, was, t.name);
            st = LS_ECORRUPT;
        }
        if (st != LS_OK) {
            ls_mat_preds_free(p);
            return st;
        }
        p->v = ls_realloc(p->v, (p->n + 1) * sizeof *p->v);
        p->v[p->n++] = pt;
        prev = ls_ice_table_summary(pt, CONTINUES_KEY);
    }
    return LS_OK;
}

/* The last offset of log_id the version cur (NULL: not created) holds,
 * counting what the versions before it hold; -1: none. */
int64_t ls_mat_version_done(const preds_t *p, const ls_ice_table_t *cur, int64_t log_id)
{
    char key[80];
    ls_mat_last_offset_key(key, sizeof key, log_id);
    const char *v = cur ? ls_ice_table_summary(cur, key) : NULL;
    for (size_t i = 0; !v && i < p->n; i++)
        v = ls_ice_table_summary(p->v[i], key);
    return v ? strtoll(v, NULL, 10) : -1;
}

/* ls_mat_table_last_offset for the table's current version. */
static ls_status version_last_offset(ls_meta_t *meta, ls_objstore_t *os,
                                     const ls_table_target_t *tt, int64_t log_id, int64_t *out,
                                     char *err, size_t errlen)
{
    *out = -1;
    ls_table_target_t vt;
    ls_ice_table_t *cur = NULL;
    preds_t p = {0};
    ls_status st = ls_mat_resolve_version(meta, os, tt, &vt, &cur, err, errlen);
    if (st == LS_OK) st = ls_mat_load_preds(meta, os, &vt, cur, &p, err, errlen);
    if (st == LS_OK) *out = ls_mat_version_done(&p, cur, log_id);
    ls_mat_preds_free(&p);
    ls_ice_table_free(cur);
    return st;
}

ls_status ls_materialize_last_offset(ls_meta_t *meta, ls_objstore_t *os,
                                     const ls_table_target_t *tt, int64_t log_id, int64_t *out,
                                     char *err, size_t errlen)
{
    ls_status st = version_last_offset(meta, os, tt, log_id, out, err, errlen);
    if (st != LS_OK || !tt->policy->changelog) return st;
    /* a range is in only once the changelog table holds it too */
    side_t cl;
    int64_t cd;
    st = ls_mat_side_target(tt, CHANGELOG_SUFFIX, &cl, err, errlen);
    if (st == LS_OK) st = ls_mat_table_last_offset(meta, os, &cl.tt, log_id, &cd, err, errlen);
    if (st == LS_OK && cd < *out) *out = cd;
    return st;
}
