/* Ownership of per-log background work (compaction, retention) through a
 * metadata lease, so brokers sharing one metadata store never work on the
 * same log at once. Design note at the top of lease.c. */
#ifndef LS_LOG_LEASE_H
#define LS_LOG_LEASE_H
#include <stdbool.h>
#include <stdint.h>

#include "meta/meta.h"

/* One per compactor: its lease and its owner name. Thread-safe. */
typedef struct ls_lease_owner ls_lease_owner_t;

/* A claim on one log (or one table's commit), held by one task (one worker
 * thread). */
typedef struct ls_lease_claim {
    int64_t log_id;
    bool held;
    int64_t rev; /* mod_rev of the owner key as we wrote it */
    char key[64];
} ls_lease_claim_t;

/* name identifies the owner in the key's value (diagnostics). No I/O; starts
 * the thread that renews the lease every ttl_ms/3 while one is held. */
ls_lease_owner_t *ls_lease_owner_new(ls_meta_t *meta, const char *name, int64_t ttl_ms);
/* Stops the renewal thread and revokes the lease if one is held (blocking):
 * owner keys left go at once. */
void ls_lease_owner_free(ls_lease_owner_t *o);
/* Frees the claims a previous run of this owner left (owner keys whose value
 * is "<prefix>/..." but not this owner's name): revokes their leases, so the
 * logs do not wait out the TTL of a process that crashed. Only for a prefix
 * no live process uses (the broker's id, once its registration took over).
 * Returns the number of leases revoked. Blocking. */
int ls_lease_owner_reclaim(ls_lease_owner_t *o, const char *prefix);
/* Renews the lease, if one is held (the renewal thread does, every ttl/3).
 * LS_ENOTFOUND: it had expired (the owner
 * keys attached to it are gone; claims made under it can no longer commit);
 * the owner forgets it and the next claim grants a new one. Blocking. */
ls_status ls_lease_owner_keepalive(ls_lease_owner_t *o);

/* Takes ownership of log_id for one task. LS_OK: claimed (c->held);
 * LS_EEXISTS: another owner holds it (skip the log); else a store error.
 * Grants (or re-grants) the lease when needed. Blocking. */
ls_status ls_lease_claim_log(ls_lease_owner_t *o, int64_t log_id, ls_lease_claim_t *c);
/* Takes ownership of the table commit of stream_no for one pass (same
 * results); released with ls_lease_release. */
ls_status ls_lease_claim_table(ls_lease_owner_t *o, int64_t stream_no, ls_lease_claim_t *c);
/* The compare every commit of the task carries: it fails once the claim is
 * lost (lease expired, key deleted or re-created by another owner). */
ls_meta_cmp_t ls_lease_claim_cmp(const ls_lease_claim_t *c);
/* Ends the task: deletes the owner key if it is still ours. Blocking. */
void ls_lease_release(ls_lease_owner_t *o, ls_lease_claim_t *c);
#endif
