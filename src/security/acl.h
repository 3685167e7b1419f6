/* ACL bindings and Kafka's authorization decision (StandardAuthorizer's
 * rules), with no I/O: the pure half of the authorizer (security/authz.h
 * keeps the bindings in the metadata store and serves the checks).
 *
 * A binding is (resource type, resource name, pattern type, principal, host,
 * operation, permission), every enum numbered as Kafka numbers it on the
 * wire (AclOperation, AclPermissionType, ResourceType, PatternType codes),
 * so a binding crosses the protocol edge unchanged. A stored binding has
 * concrete values only: pattern LITERAL or PREFIXED, a real resource type,
 * an operation other than ANY, permission ALLOW or DENY. Filters
 * (DescribeAcls, DeleteAcls) use the same struct where ANY / MATCH and NULL
 * strings mean "whatever".
 *
 * The decision for (principal, host, operation, resource type, name):
 *  1. a principal named in super.users is allowed everything;
 *  2. the candidate bindings are those of the resource type whose pattern
 *     covers the name: LITERAL with name equal, LITERAL "*" (any name), and
 *     PREFIXED whose name is a prefix of it;
 *  3. of those, a binding applies when its principal is the request's or
 *     "User:*", its host is the request's address or "*", and its operation
 *     is the one asked, or ALL, or (ALLOW bindings only) one that implies it:
 *     READ, WRITE, DELETE and ALTER imply DESCRIBE; ALTER_CONFIGS implies
 *     DESCRIBE_CONFIGS. A DENY of READ does not deny DESCRIBE;
 *  4. any applicable DENY: denied (DENY beats ALLOW); else any applicable
 *     ALLOW: allowed; else the default, allow.everyone.if.no.acl.found
 *     (false: denied). As in StandardAuthorizer, the default applies when no
 *     binding applies to the request, even if the resource has bindings for
 *     other principals or operations. */
#ifndef LS_SECURITY_ACL_H
#define LS_SECURITY_ACL_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

/* ResourceType */
enum {
    LS_ACL_RES_UNKNOWN = 0,
    LS_ACL_RES_ANY = 1,
    LS_ACL_RES_TOPIC = 2,
    LS_ACL_RES_GROUP = 3,
    LS_ACL_RES_CLUSTER = 4,
    LS_ACL_RES_TRANSACTIONAL_ID = 5,
    LS_ACL_RES_DELEGATION_TOKEN = 6,
    LS_ACL_RES_USER = 7,
};
/* PatternType */
enum {
    LS_ACL_PAT_UNKNOWN = 0,
    LS_ACL_PAT_ANY = 1,
    LS_ACL_PAT_MATCH = 2,
    LS_ACL_PAT_LITERAL = 3,
    LS_ACL_PAT_PREFIXED = 4,
};
/* AclOperation */
enum {
    LS_ACL_OP_UNKNOWN = 0,
    LS_ACL_OP_ANY = 1,
    LS_ACL_OP_ALL = 2,
    LS_ACL_OP_READ = 3,
    LS_ACL_OP_WRITE = 4,
    LS_ACL_OP_CREATE = 5,
    LS_ACL_OP_DELETE = 6,
    LS_ACL_OP_ALTER = 7,
    LS_ACL_OP_DESCRIBE = 8,
    LS_ACL_OP_CLUSTER_ACTION = 9,
    LS_ACL_OP_DESCRIBE_CONFIGS = 10,
    LS_ACL_OP_ALTER_CONFIGS = 11,
    LS_ACL_OP_IDEMPOTENT_WRITE = 12,
    LS_ACL_OP_CREATE_TOKENS = 13,
    LS_ACL_OP_DESCRIBE_TOKENS = 14,
    LS_ACL_OP_TWO_PHASE_COMMIT = 15,
};
/* AclPermissionType */
enum {
    LS_ACL_PERM_UNKNOWN = 0,
    LS_ACL_PERM_ANY = 1,
    LS_ACL_PERM_DENY = 2,
    LS_ACL_PERM_ALLOW = 3,
};

/* The name of the one CLUSTER resource, as Kafka's. */
#define LS_ACL_CLUSTER_NAME "kafka-cluster"
#define LS_ACL_WILDCARD "*"
#define LS_ACL_WILDCARD_PRINCIPAL "User:*"

typedef struct ls_acl {
    int8_t rtype;
    int8_t pattern;
    int8_t op;
    int8_t perm;
    char *name;      /* filters: NULL = any */
    char *principal; /* filters: NULL = any */
    char *host;      /* filters: NULL = any */
} ls_acl_t;

/* Kafka's upper-case names ("TOPIC", "PREFIXED", "DESCRIBE_CONFIGS",
 * "ALLOW"); "UNKNOWN" for a code outside the enum. */
const char *ls_acl_rtype_name(int8_t v);
const char *ls_acl_pattern_name(int8_t v);
const char *ls_acl_op_name(int8_t v);
const char *ls_acl_perm_name(int8_t v);
/* The code of a name (case-insensitive), or -1. */
int ls_acl_rtype_find(const char *s);
int ls_acl_pattern_find(const char *s);
int ls_acl_op_find(const char *s);
int ls_acl_perm_find(const char *s);

/* Whether b may be stored (Kafka's CreateAcls validation): LS_OK, or
 * LS_EINVAL with the reason in err. */
ls_status ls_acl_check_binding(const ls_acl_t *b, char *err, size_t errlen);
/* Whether f is a usable filter (no UNKNOWN element, every code known):
 * LS_OK, or LS_EINVAL with the reason in err. */
ls_status ls_acl_check_filter(const ls_acl_t *f, char *err, size_t errlen);
/* Whether stored binding b matches filter f (Kafka's AclBindingFilter). */
bool ls_acl_filter_matches(const ls_acl_t *f, const ls_acl_t *b);
/* Same binding (every field equal). */
bool ls_acl_equal(const ls_acl_t *a, const ls_acl_t *b);

void ls_acl_copy(ls_acl_t *dst, const ls_acl_t *src); /* deep copy */
void ls_acl_clear(ls_acl_t *b);                       /* frees the strings */

/* What decided a request (for the audit line). */
typedef enum {
    LS_ACL_BY_SUPER_USER,
    LS_ACL_BY_DENY,
    LS_ACL_BY_ALLOW,
    LS_ACL_BY_DEFAULT,
} ls_acl_rule;

/* The decision over acls[0..n) (rules above). super_users is the
 * super.users list (';'-separated principals, may be NULL);
 * allow_if_none is allow.everyone.if.no.acl.found. *rule (may be NULL) says
 * what decided. */
bool ls_acl_decide(const ls_acl_t *acls, size_t n, const char *super_users, bool allow_if_none,
                   const char *principal, const char *host, int8_t op, int8_t rtype,
                   const char *name, ls_acl_rule *rule);
/* Whether principal is named in super_users (';'-separated, spaces around
 * names ignored). */
bool ls_acl_is_super_user(const char *super_users, const char *principal);
/* Kafka's authorizeByResourceType: whether the principal may do op on some
 * resource of rtype: a super user, or an applicable ALLOW binding of rtype
 * that no applicable DENY covers (a DENY on "*" covers everything, a DENY
 * PREFIXED p covers names starting with p, a DENY LITERAL the same name);
 * with no applicable binding at all, allow_if_none. */
bool ls_acl_decide_any(const ls_acl_t *acls, size_t n, const char *super_users, bool allow_if_none,
                       const char *principal, const char *host, int8_t op, int8_t rtype);
#endif
