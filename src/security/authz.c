/* The authorizer: bindings in the metadata store, a cached set per broker,
 * checks and audit lines (design: security/authz.h). */
#include "security/authz.h"

#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/diag.h"
#include "meta/meta_follow.h"
#include "meta/meta_keys.h"

#define AUTHZ_CAS_RETRIES 16

typedef struct acl_set {
    ls_acl_t *v;
    size_t n;
    int64_t rev; /* mod_rev of the record it was read from (0: none yet) */
} acl_set_t;

struct ls_authz {
    ls_meta_t *meta;
    char *super_users;
    bool allow_if_none;
    pthread_rwlock_t lock; /* set */
    acl_set_t set;
    ls_meta_follow_t *follow; /* the record: loads, changes (meta/meta_follow.h) */
    pthread_mutex_t audit_mu; /* the denial budget below */
    int64_t audit_sec;
    int audit_lines;
    uint64_t audit_dropped;
};

static void set_free(acl_set_t *s)
{
    for (size_t i = 0; i < s->n; i++)
        ls_acl_clear(&s->v[i]);
    ls_free(s->v);
    s->v = NULL;
    s->n = 0;
}

/* ---- the record ---- */

static int parse_code(json_t *o, const char *field, int (*find)(const char *))
{
    return find(json_string_value(json_object_get(o, field)));
}

static const char *parse_str(json_t *o, const char *field)
{
    return json_string_value(json_object_get(o, field));
}

/* Parses the record's value into s; false (logged) when it is corrupt. */
static bool set_parse(const uint8_t *val, size_t vlen, acl_set_t *s)
{
    json_error_t je;
    json_t *root = json_loadb((const char *)val, vlen, 0, &je);
    json_t *arr = json_object_get(root, "acls");
    if (!json_is_array(arr)) {
        LS_ERROR("authz", "the ACL record %s is corrupt: %s", LS_KEY_CLUSTER_ACLS,
                 root ? "no acls array" : je.text);
        json_decref(root);
        return false;
    }
    s->n = 0;
    s->v = LS_NEWN(ls_acl_t, json_array_size(arr) + 1);
    size_t i;
    json_t *o;
    json_array_foreach(arr, i, o)
    {
        int rt = parse_code(o, "resource", ls_acl_rtype_find);
        int pt = parse_code(o, "pattern", ls_acl_pattern_find);
        int op = parse_code(o, "operation", ls_acl_op_find);
        int pm = parse_code(o, "permission", ls_acl_perm_find);
        const char *name = parse_str(o, "name"), *pr = parse_str(o, "principal"),
                   *host = parse_str(o, "host");
        ls_acl_t b = {(int8_t)rt,   (int8_t)pt, (int8_t)op,  (int8_t)pm,
                      (char *)name, (char *)pr, (char *)host};
        char why[160];
        if (rt < 0 || pt < 0 || op < 0 || pm < 0 || ls_acl_check_binding(&b, why, sizeof why)) {
            LS_ERROR("authz", "skipping a corrupt binding in %s (#%zu)", LS_KEY_CLUSTER_ACLS, i);
            continue;
        }
        ls_acl_copy(&s->v[s->n++], &b);
    }
    json_decref(root);
    return true;
}

static char *set_json(const ls_acl_t *v, size_t n)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(arr, json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s}", "resource",
                                             ls_acl_rtype_name(v[i].rtype), "pattern",
                                             ls_acl_pattern_name(v[i].pattern), "name", v[i].name,
                                             "principal", v[i].principal, "host", v[i].host,
                                             "operation", ls_acl_op_name(v[i].op), "permission",
                                             ls_acl_perm_name(v[i].perm)));
    json_t *root = json_pack("{s:o}", "acls", arr);
    char *s = json_dumps(root, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(root);
    return s;
}

/* Installs *s unless the cached set is as new (then frees it); *s is
 * emptied either way. */
static void set_install(ls_authz_t *a, acl_set_t *s)
{
    pthread_rwlock_wrlock(&a->lock);
    acl_set_t old = a->set;
    bool newer = s->rev > a->set.rev;
    if (newer) a->set = *s;
    pthread_rwlock_unlock(&a->lock);
    set_free(newer ? &old : s);
    *s = (acl_set_t){0};
}

/* The follower's load hook: the record's value, parsed, in place of the
 * cached set when newer. */
static bool on_record(void *arg, const uint8_t *val, size_t vlen, int64_t mod_rev)
{
    acl_set_t s = {0};
    if (val && !set_parse(val, vlen, &s)) return false;
    s.rev = mod_rev;
    set_install(arg, &s);
    return true;
}

ls_authz_t *ls_authz_open(ls_meta_t *meta, const char *super_users, bool allow_if_none, char *err,
                          size_t errlen)
{
    ls_authz_t *a = LS_NEW(ls_authz_t);
    a->meta = meta;
    a->super_users = super_users ? ls_strdup(super_users) : NULL;
    a->allow_if_none = allow_if_none;
    pthread_rwlock_init(&a->lock, NULL);
    pthread_mutex_init(&a->audit_mu, NULL);
    ls_meta_follow_cfg_t cfg = {.key = LS_KEY_CLUSTER_ACLS,
                                .tag = "authz",
                                .what = "ACL",
                                .thread = "ls-acl-resync",
                                .load = on_record,
                                .arg = a};
    ls_status st = ls_meta_follow_open(meta, &cfg, &a->follow);
    if (st != LS_OK) {
        snprintf(err, errlen, "cannot load the ACLs (%s): %s: %s", LS_KEY_CLUSTER_ACLS,
                 ls_status_str(st), ls_meta_error(meta));
        ls_authz_close(a);
        return NULL;
    }
    LS_INFO("authz",
            "authorizer on: %zu ACL binding(s), super.users '%s', "
            "allow.everyone.if.no.acl.found=%s",
            a->set.n, super_users ? super_users : "", allow_if_none ? "true" : "false");
    return a;
}

void ls_authz_close(ls_authz_t *a)
{
    if (!a) return;
    ls_meta_follow_close(a->follow);
    set_free(&a->set);
    ls_free(a->super_users);
    pthread_rwlock_destroy(&a->lock);
    pthread_mutex_destroy(&a->audit_mu);
    ls_free(a);
}

/* ---- checks ---- */

static const char *rule_name(ls_acl_rule r)
{
    switch (r) {
    case LS_ACL_BY_SUPER_USER: return "super user";
    case LS_ACL_BY_DENY: return "a DENY binding";
    case LS_ACL_BY_ALLOW: return "an ALLOW binding";
    case LS_ACL_BY_DEFAULT: break;
    }
    return "no matching binding";
}

static void audit_denied(ls_authz_t *a, const char *api, const char *principal, const char *host,
                         int8_t op, int8_t rtype, const char *name, ls_acl_rule rule)
{
    int64_t sec = ls_clock_mono_ms() / 1000;
    uint64_t dropped = 0;
    pthread_mutex_lock(&a->audit_mu);
    if (sec != a->audit_sec) {
        a->audit_sec = sec;
        a->audit_lines = 0;
    }
    bool print = a->audit_lines < LS_AUTHZ_AUDIT_PER_SEC;
    if (print) {
        a->audit_lines++;
        dropped = a->audit_dropped;
        a->audit_dropped = 0;
    } else {
        a->audit_dropped++;
    }
    pthread_mutex_unlock(&a->audit_mu);
    if (!print) return;
    char more[64] = "";
    if (dropped)
        snprintf(more, sizeof more, " (%llu earlier denial(s) not logged)",
                 (unsigned long long)dropped);
    LS_INFO("audit", "DENIED principal=%s host=%s operation=%s resource=%s:%s api=%s by %s%s",
            principal, host, ls_acl_op_name(op), ls_acl_rtype_name(rtype), name, api,
            rule_name(rule), more);
}

bool ls_authz_check(ls_authz_t *a, const char *api, const char *principal, const char *host,
                    int8_t op, int8_t rtype, const char *name, bool log_denied)
{
    ls_acl_rule rule;
    pthread_rwlock_rdlock(&a->lock);
    bool ok = ls_acl_decide(a->set.v, a->set.n, a->super_users, a->allow_if_none, principal, host,
                            op, rtype, name, &rule);
    pthread_rwlock_unlock(&a->lock);
    if (!ok && log_denied) audit_denied(a, api, principal, host, op, rtype, name, rule);
    return ok;
}

bool ls_authz_check_any(ls_authz_t *a, const char *principal, const char *host, int8_t op,
                        int8_t rtype)
{
    pthread_rwlock_rdlock(&a->lock);
    bool ok = ls_acl_decide_any(a->set.v, a->set.n, a->super_users, a->allow_if_none, principal,
                                host, op, rtype);
    pthread_rwlock_unlock(&a->lock);
    return ok;
}

size_t ls_authz_list(ls_authz_t *a, const ls_acl_t *f, ls_acl_t **out)
{
    pthread_rwlock_rdlock(&a->lock);
    ls_acl_t *v = LS_NEWN(ls_acl_t, a->set.n + 1);
    size_t n = 0;
    for (size_t i = 0; i < a->set.n; i++)
        if (ls_acl_filter_matches(f, &a->set.v[i])) ls_acl_copy(&v[n++], &a->set.v[i]);
    pthread_rwlock_unlock(&a->lock);
    *out = v;
    return n;
}

void ls_authz_free_list(ls_acl_t *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        ls_acl_clear(&v[i]);
    ls_free(v);
}

/* ---- changes ---- */

static void audit_change(const char *what, const ls_acl_t *b, const char *by, const char *from)
{
    LS_INFO("audit",
            "ACL %s by principal=%s host=%s: resource=%s:%s:%s principal=%s host=%s "
            "operation=%s permission=%s",
            what, by, from, ls_acl_rtype_name(b->rtype), ls_acl_pattern_name(b->pattern), b->name,
            b->principal, b->host, ls_acl_op_name(b->op), ls_acl_perm_name(b->perm));
}

/* One compare-and-set change: edit(ctx, cur, &next) turns the current
 * bindings into the next ones (or returns an error); the record is written
 * when next differs, on the revision read, retrying from a fresh read when
 * another broker changed it meanwhile. */
typedef ls_status (*edit_fn)(void *ctx, const acl_set_t *cur, acl_set_t *next, bool *changed);

typedef struct change_ctx {
    edit_fn edit;
    void *ctx;
    acl_set_t next; /* what the last step made */
} change_ctx_t;

/* The follower's change step: the edit applied to the record. */
static ls_status change_step(void *arg, const uint8_t *val, size_t vlen, char **json)
{
    change_ctx_t *c = arg;
    acl_set_t cur = {0};
    bool changed = false;
    set_free(&c->next);
    if (val && !set_parse(val, vlen, &cur)) return LS_ECORRUPT;
    ls_status st = c->edit(c->ctx, &cur, &c->next, &changed);
    set_free(&cur);
    if (st == LS_OK && changed) *json = set_json(c->next.v, c->next.n);
    return st;
}

static ls_status change(ls_authz_t *a, edit_fn edit, void *ctx)
{
    change_ctx_t c = {.edit = edit, .ctx = ctx};
    int64_t rev;
    ls_status st = ls_meta_follow_change(a->follow, AUTHZ_CAS_RETRIES, change_step, &c, &rev);
    if (st == LS_OK && rev) {
        c.next.rev = rev;
        set_install(a, &c.next); /* enforced here before the answer */
    }
    set_free(&c.next);
    if (st != LS_OK)
        LS_ERROR("authz", "changing the ACLs failed: %s: %s", ls_status_str(st),
                 ls_meta_error(a->meta));
    return st;
}

typedef struct create_ctx {
    const ls_acl_t *b;
    size_t n;
} create_ctx_t;

static ls_status create_edit(void *arg, const acl_set_t *cur, acl_set_t *next, bool *changed)
{
    create_ctx_t *c = arg;
    next->v = LS_NEWN(ls_acl_t, cur->n + c->n + 1);
    for (size_t i = 0; i < cur->n; i++)
        ls_acl_copy(&next->v[next->n++], &cur->v[i]);
    for (size_t i = 0; i < c->n; i++) {
        bool dup = false;
        for (size_t j = 0; j < next->n && !dup; j++)
            dup = ls_acl_equal(&next->v[j], &c->b[i]);
        if (dup) continue;
        ls_acl_copy(&next->v[next->n++], &c->b[i]);
        *changed = true;
    }
    return next->n > LS_AUTHZ_MAX_ACLS ? LS_ELIMIT : LS_OK;
}

ls_status ls_authz_create(ls_authz_t *a, const ls_acl_t *b, size_t n, const char *by,
                          const char *from)
{
    create_ctx_t c = {b, n};
    ls_status st = change(a, create_edit, &c);
    if (st == LS_OK)
        for (size_t i = 0; i < n; i++)
            audit_change("created", &b[i], by, from);
    return st;
}

typedef struct delete_ctx {
    const ls_acl_t *f;
    size_t nf;
    ls_acl_t **matched;
    size_t *nmatched;
} delete_ctx_t;

static ls_status delete_edit(void *arg, const acl_set_t *cur, acl_set_t *next, bool *changed)
{
    delete_ctx_t *c = arg;
    for (size_t i = 0; i < c->nf; i++) { /* a retry starts over */
        ls_authz_free_list(c->matched[i], c->nmatched[i]);
        c->matched[i] = LS_NEWN(ls_acl_t, cur->n + 1);
        c->nmatched[i] = 0;
    }
    next->v = LS_NEWN(ls_acl_t, cur->n + 1);
    for (size_t j = 0; j < cur->n; j++) {
        bool hit = false;
        for (size_t i = 0; i < c->nf; i++)
            if (ls_acl_filter_matches(&c->f[i], &cur->v[j])) {
                ls_acl_copy(&c->matched[i][c->nmatched[i]++], &cur->v[j]);
                hit = true;
            }
        if (hit)
            *changed = true;
        else
            ls_acl_copy(&next->v[next->n++], &cur->v[j]);
    }
    return LS_OK;
}

ls_status ls_authz_delete(ls_authz_t *a, const ls_acl_t *f, size_t nf, ls_acl_t **matched,
                          size_t *nmatched, const char *by, const char *from)
{
    for (size_t i = 0; i < nf; i++) {
        matched[i] = NULL;
        nmatched[i] = 0;
    }
    delete_ctx_t c = {f, nf, matched, nmatched};
    ls_status st = change(a, delete_edit, &c);
    if (st != LS_OK) {
        for (size_t i = 0; i < nf; i++) {
            ls_authz_free_list(matched[i], nmatched[i]);
            matched[i] = NULL;
            nmatched[i] = 0;
        }
        return st;
    }
    /* a binding two filters matched is one removal: audit it once */
    for (size_t i = 0; i < nf; i++)
        for (size_t k = 0; k < nmatched[i]; k++) {
            bool seen = false;
            for (size_t p = 0; p < i && !seen; p++)
                for (size_t q = 0; q < nmatched[p] && !seen; q++)
                    seen = ls_acl_equal(&matched[p][q], &matched[i][k]);
            if (!seen) audit_change("deleted", &matched[i][k], by, from);
        }
    return LS_OK;
}
