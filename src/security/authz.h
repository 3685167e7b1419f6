/* The authorizer: Kafka's StandardAuthorizer over ACL bindings kept in the
 * metadata store (decision rules: security/acl.h).
 *
 * Storage: every binding of the cluster is in one record,
 *   /ls/cluster/acls  {"acls":[{"host":"*","name":"t","operation":"READ",
 *                      "pattern":"LITERAL","permission":"ALLOW",
 *                      "principal":"User:alice","resource":"TOPIC"},...]}
 * changed only by compare-and-set on its mod_rev (CreateAcls/DeleteAcls from
 * any broker), so a batch of creations or a delete filter applies whole or
 * not at all and two brokers' changes never lose each other. One record
 * keeps the change atomic and the watch trivial; it bounds the bindings of
 * a cluster to LS_AUTHZ_MAX_ACLS (a store value stays well under etcd's
 * request limit), beyond which CreateAcls is refused.
 *
 * Cache and consistency: each broker holds the bindings in memory (an
 * immutable set swapped whole) and watches the record, so a change made on
 * any broker is enforced by every broker as soon as its watch delivers it
 * (a broker's own change is installed at once, before it answers). A set
 * is only replaced by one of a newer revision. A watch that falls behind
 * the store's history is replaced by a thread: reread, watch again (both
 * done by meta/meta_follow.h).
 *
 * Threads: checks and listings run on any thread (the loop's, mostly),
 * holding a read lock while they scan the set; changes (create, delete)
 * block on the store and run on worker threads; the watch callback runs on
 * the store's thread. Audit lines (one per ACL change; one per denied
 * request, at most LS_AUTHZ_AUDIT_PER_SEC a second, then a count of those
 * left out) go to the diagnostics as module "audit". */
#ifndef LS_SECURITY_AUTHZ_H
#define LS_SECURITY_AUTHZ_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "meta/meta.h"
#include "security/acl.h"

#define LS_AUTHZ_MAX_ACLS 5000
#define LS_AUTHZ_AUDIT_PER_SEC 20

typedef struct ls_authz ls_authz_t;

/* Loads the bindings and starts the watch. super_users: super.users
 * (';'-separated principals, may be NULL); allow_if_none:
 * allow.everyone.if.no.acl.found. NULL with err on a store failure. */
ls_authz_t *ls_authz_open(ls_meta_t *meta, const char *super_users, bool allow_if_none, char *err,
                          size_t errlen);
void ls_authz_close(ls_authz_t *a); /* NULL: no-op */

/* The decision for a request of api (for the audit line) by principal
 * from host. A denial is audited when log_denied (false for checks that
 * only filter what a listing shows). Non-blocking, any thread. */
bool ls_authz_check(ls_authz_t *a, const char *api, const char *principal, const char *host,
                    int8_t op, int8_t rtype, const char *name, bool log_denied);
/* Kafka's authorizeByResourceType (security/acl.h ls_acl_decide_any). */
bool ls_authz_check_any(ls_authz_t *a, const char *principal, const char *host, int8_t op,
                        int8_t rtype);

/* The bindings matching filter f, copied into *out (ls_authz_free_list). */
size_t ls_authz_list(ls_authz_t *a, const ls_acl_t *f, ls_acl_t **out);
void ls_authz_free_list(ls_acl_t *v, size_t n);

/* Adds bindings b[0..n) (each already valid: ls_acl_check_binding) in one
 * change; a binding already present is not added twice. by/from name the
 * principal and host asking (audit). LS_ELIMIT beyond LS_AUTHZ_MAX_ACLS.
 * Blocking: call from a worker thread. */
ls_status ls_authz_create(ls_authz_t *a, const ls_acl_t *b, size_t n, const char *by,
                          const char *from);
/* Removes every binding matching any of filters f[0..nf) in one change;
 * matched[i] / nmatched[i] receive the bindings filter i removed (a binding
 * matching two filters is reported under both, as Kafka does;
 * ls_authz_free_list each). Blocking. */
ls_status ls_authz_delete(ls_authz_t *a, const ls_acl_t *f, size_t nf, ls_acl_t **matched,
                          size_t *nmatched, const char *by, const char *from);
#endif
