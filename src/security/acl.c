/* ACL bindings, filters and the decision (rules: security/acl.h). Pure
 * functions over arrays; the caller keeps the bindings (security/authz.c). */
#include "security/acl.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "base/alloc.h"

static const char *const rtype_names[] = {
    "UNKNOWN", "ANY", "TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID", "DELEGATION_TOKEN", "USER"};
static const char *const pattern_names[] = {"UNKNOWN", "ANY", "MATCH", "LITERAL", "PREFIXED"};
static const char *const op_names[] = {"UNKNOWN",
                                       "ANY",
                                       "ALL",
                                       "READ",
                                       "WRITE",
                                       "CREATE",
                                       "DELETE",
                                       "ALTER",
                                       "DESCRIBE",
                                       "CLUSTER_ACTION",
                                       "DESCRIBE_CONFIGS",
                                       "ALTER_CONFIGS",
                                       "IDEMPOTENT_WRITE",
                                       "CREATE_TOKENS",
                                       "DESCRIBE_TOKENS",
                                       "TWO_PHASE_COMMIT"};
static const char *const perm_names[] = {"UNKNOWN", "ANY", "DENY", "ALLOW"};

#define NAMES(t) (int)(sizeof t / sizeof t[0])

static const char *name_of(const char *const *names, int n, int8_t v)
{
    return v >= 0 && v < n ? names[v] : "UNKNOWN";
}

static int find_name(const char *const *names, int n, const char *s)
{
    for (int i = 0; s && i < n; i++)
        if (strcasecmp(names[i], s) == 0) return i;
    return -1;
}

const char *ls_acl_rtype_name(int8_t v) { return name_of(rtype_names, NAMES(rtype_names), v); }
const char *ls_acl_pattern_name(int8_t v)
{
    return name_of(pattern_names, NAMES(pattern_names), v);
}
const char *ls_acl_op_name(int8_t v) { return name_of(op_names, NAMES(op_names), v); }
const char *ls_acl_perm_name(int8_t v) { return name_of(perm_names, NAMES(perm_names), v); }
int ls_acl_rtype_find(const char *s) { return find_name(rtype_names, NAMES(rtype_names), s); }
int ls_acl_pattern_find(const char *s) { return find_name(pattern_names, NAMES(pattern_names), s); }
int ls_acl_op_find(const char *s) { return find_name(op_names, NAMES(op_names), s); }
int ls_acl_perm_find(const char *s) { return find_name(perm_names, NAMES(perm_names), s); }

ls_status ls_acl_check_binding(const ls_acl_t *b, char *err, size_t errlen)
{
    if (b->rtype <= LS_ACL_RES_ANY || b->rtype >= NAMES(rtype_names)) {
        snprintf(err, errlen, "Invalid resourceType %s", ls_acl_rtype_name(b->rtype));
        return LS_EINVAL;
    }
    if (b->pattern != LS_ACL_PAT_LITERAL && b->pattern != LS_ACL_PAT_PREFIXED) {
        snprintf(err, errlen, "Invalid patternType %s", ls_acl_pattern_name(b->pattern));
        return LS_EINVAL;
    }
    if (b->op <= LS_ACL_OP_ANY || b->op >= NAMES(op_names)) {
        snprintf(err, errlen, "Invalid operation %s", ls_acl_op_name(b->op));
        return LS_EINVAL;
    }
    if (b->perm != LS_ACL_PERM_ALLOW && b->perm != LS_ACL_PERM_DENY) {
        snprintf(err, errlen, "Invalid permissionType %s", ls_acl_perm_name(b->perm));
        return LS_EINVAL;
    }
    if (!b->name || !b->name[0]) {
        snprintf(err, errlen, "Resource name should not be empty");
        return LS_EINVAL;
    }
    if (b->rtype == LS_ACL_RES_CLUSTER && strcmp(b->name, LS_ACL_CLUSTER_NAME) != 0) {
        snprintf(err, errlen, "The only valid name for the CLUSTER resource is %s",
                 LS_ACL_CLUSTER_NAME);
        return LS_EINVAL;
    }
    if (!b->principal || !strchr(b->principal, ':')) {
        snprintf(err, errlen,
                 "Could not parse principal from `%s` (no colon is present separating the "
                 "principal type from the principal name)",
                 b->principal ? b->principal : "");
        return LS_EINVAL;
    }
    if (!b->host || !b->host[0]) {
        snprintf(err, errlen, "Invalid empty host");
        return LS_EINVAL;
    }
    return LS_OK;
}

ls_status ls_acl_check_filter(const ls_acl_t *f, char *err, size_t errlen)
{
    const char *what = NULL;
    if (f->rtype <= LS_ACL_RES_UNKNOWN || f->rtype >= NAMES(rtype_names))
        what = "resource type";
    else if (f->pattern <= LS_ACL_PAT_UNKNOWN || f->pattern >= NAMES(pattern_names))
        what = "pattern type";
    else if (f->op <= LS_ACL_OP_UNKNOWN || f->op >= NAMES(op_names))
        what = "operation";
    else if (f->perm <= LS_ACL_PERM_UNKNOWN || f->perm >= NAMES(perm_names))
        what = "permission type";
    if (!what) return LS_OK;
    snprintf(err, errlen, "The filter's %s is UNKNOWN", what);
    return LS_EINVAL;
}

static bool str_any_eq(const char *filter, const char *v)
{
    return !filter || strcmp(filter, v) == 0;
}

bool ls_acl_filter_matches(const ls_acl_t *f, const ls_acl_t *b)
{
    if (f->rtype != LS_ACL_RES_ANY && f->rtype != b->rtype) return false;
    if (f->pattern != LS_ACL_PAT_ANY && f->pattern != LS_ACL_PAT_MATCH && f->pattern != b->pattern)
        return false;
    if (f->name) {
        if (f->pattern == LS_ACL_PAT_MATCH && b->pattern != f->pattern) {
            /* MATCH: the bindings that would apply to a resource of that name */
            if (b->pattern == LS_ACL_PAT_LITERAL) {
                if (strcmp(f->name, b->name) != 0 && strcmp(b->name, LS_ACL_WILDCARD) != 0)
                    return false;
            } else if (strncmp(f->name, b->name, strlen(b->name)) != 0) {
                return false;
            }
        } else if (strcmp(f->name, b->name) != 0) {
            return false;
        }
    }
    return str_any_eq(f->principal, b->principal) && str_any_eq(f->host, b->host) &&
           (f->op == LS_ACL_OP_ANY || f->op == b->op) &&
           (f->perm == LS_ACL_PERM_ANY || f->perm == b->perm);
}

bool ls_acl_equal(const ls_acl_t *a, const ls_acl_t *b)
{
    return a->rtype == b->rtype && a->pattern == b->pattern && a->op == b->op &&
           a->perm == b->perm && strcmp(a->name, b->name) == 0 &&
           strcmp(a->principal, b->principal) == 0 && strcmp(a->host, b->host) == 0;
}

void ls_acl_copy(ls_acl_t *dst, const ls_acl_t *src)
{
    *dst = *src;
    dst->name = src->name ? ls_strdup(src->name) : NULL;
    dst->principal = src->principal ? ls_strdup(src->principal) : NULL;
    dst->host = src->host ? ls_strdup(src->host) : NULL;
}

void ls_acl_clear(ls_acl_t *b)
{
    ls_free(b->name);
    ls_free(b->principal);
    ls_free(b->host);
    b->name = b->principal = b->host = NULL;
}

bool ls_acl_is_super_user(const char *super_users, const char *principal)
{
    size_t plen = strlen(principal);
    for (const char *p = super_users; p && *p;) {
        while (*p == ' ' || *p == ';')
            p++;
        const char *e = strchr(p, ';');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        size_t t = n;
        while (t > 0 && p[t - 1] == ' ')
            t--;
        if (t == plen && t > 0 && memcmp(p, principal, plen) == 0) return true;
        p += n;
    }
    return false;
}

/* Whether binding b's principal and host are the request's. */
static bool who_matches(const ls_acl_t *b, const char *principal, const char *host)
{
    return (strcmp(b->principal, principal) == 0 ||
            strcmp(b->principal, LS_ACL_WILDCARD_PRINCIPAL) == 0) &&
           (strcmp(b->host, LS_ACL_WILDCARD) == 0 || strcmp(b->host, host) == 0);
}

/* Whether b's operation grants (ALLOW) or refuses (DENY) op: implied
 * operations widen ALLOW bindings only. */
static bool op_matches(const ls_acl_t *b, int8_t op)
{
    if (b->op == LS_ACL_OP_ALL || b->op == op) return true;
    if (b->perm != LS_ACL_PERM_ALLOW) return false;
    if (op == LS_ACL_OP_DESCRIBE)
        return b->op == LS_ACL_OP_READ || b->op == LS_ACL_OP_WRITE || b->op == LS_ACL_OP_DELETE ||
               b->op == LS_ACL_OP_ALTER;
    if (op == LS_ACL_OP_DESCRIBE_CONFIGS) return b->op == LS_ACL_OP_ALTER_CONFIGS;
    return false;
}

static bool resource_matches(const ls_acl_t *b, int8_t rtype, const char *name)
{
    if (b->rtype != rtype) return false;
    if (b->pattern == LS_ACL_PAT_PREFIXED) return strncmp(name, b->name, strlen(b->name)) == 0;
    return strcmp(b->name, name) == 0 || strcmp(b->name, LS_ACL_WILDCARD) == 0;
}

bool ls_acl_decide(const ls_acl_t *acls, size_t n, const char *super_users, bool allow_if_none,
                   const char *principal, const char *host, int8_t op, int8_t rtype,
                   const char *name, ls_acl_rule *rule)
{
    ls_acl_rule r = LS_ACL_BY_DEFAULT;
    if (ls_acl_is_super_user(super_users, principal)) {
        r = LS_ACL_BY_SUPER_USER;
    } else {
        for (size_t i = 0; i < n && r != LS_ACL_BY_DENY; i++) {
            const ls_acl_t *b = &acls[i];
            if (!resource_matches(b, rtype, name) || !who_matches(b, principal, host) ||
                !op_matches(b, op))
                continue;
            r = b->perm == LS_ACL_PERM_DENY ? LS_ACL_BY_DENY : LS_ACL_BY_ALLOW;
        }
    }
    if (rule) *rule = r;
    return r == LS_ACL_BY_SUPER_USER || r == LS_ACL_BY_ALLOW ||
           (r == LS_ACL_BY_DEFAULT && allow_if_none);
}

bool ls_acl_decide_any(const ls_acl_t *acls, size_t n, const char *super_users, bool allow_if_none,
                       const char *principal, const char *host, int8_t op, int8_t rtype)
{
    /* As Kafka: a name no binding names first, so super users and the
     * default for a resource without bindings answer as for any resource. */
    if (ls_acl_decide(acls, n, super_users, allow_if_none, principal, host, op, rtype, "hardcode",
                      NULL))
        return true;
    for (size_t i = 0; i < n; i++) {
        const ls_acl_t *a = &acls[i];
        if (a->rtype != rtype || a->perm != LS_ACL_PERM_ALLOW || !who_matches(a, principal, host) ||
            (a->op != op && a->op != LS_ACL_OP_ALL))
            continue;
        /* covered by a DENY: "*" covers everything; else a PREFIXED deny
         * covers the names it prefixes and a LITERAL one its own name (an
         * ALLOW on "*" is covered by a DENY on "*" alone) */
        bool wild = a->pattern == LS_ACL_PAT_LITERAL && strcmp(a->name, LS_ACL_WILDCARD) == 0;
        bool covered = false;
        for (size_t j = 0; j < n && !covered; j++) {
            const ls_acl_t *d = &acls[j];
            if (d->rtype != rtype || d->perm != LS_ACL_PERM_DENY ||
                !who_matches(d, principal, host) || (d->op != op && d->op != LS_ACL_OP_ALL))
                continue;
            if (d->pattern == LS_ACL_PAT_LITERAL)
                covered =
                    strcmp(d->name, LS_ACL_WILDCARD) == 0 ||
                    (!wild && a->pattern == LS_ACL_PAT_LITERAL && strcmp(d->name, a->name) == 0);
            else
                covered = !wild && strncmp(a->name, d->name, strlen(d->name)) == 0;
        }
        if (!covered) return true;
    }
    return false;
}
