/* Cluster membership: every broker registers itself in the metadata store
 * under a lease and keeps the set of live brokers.
 *
 *   /ls/brokers/<id %010d> = {"id":..,"host":..,"port":..,"rack":..,"since_ms":..}
 *
 * The key is attached to the broker's session lease (TTL
 * broker.session.timeout.ms), renewed every third of the TTL by a thread of
 * this module. A clean shutdown revokes the lease (the broker disappears at
 * once); a crashed broker disappears when the lease expires.
 *
 * Invariants and states:
 *  - REGISTERING -> LIVE -> (lease lost: REGISTERING again) -> STOPPED.
 *    A lost lease (store unreachable longer than the TTL) is re-granted and
 *    the key rewritten; meanwhile the broker keeps serving (all data paths
 *    are compare-and-set on the store, membership only steers clients).
 *  - One live key per broker id. A key left by this broker's previous
 *    incarnation (same advertised host:port, crashed before its lease
 *    expired) is taken over and its lease revoked; a key of a different live
 *    broker makes start wait up to one session timeout, then fail with an
 *    error naming both addresses.
 *  - The live set is the registered keys: refreshed from a watch on the
 *    prefix and, as a backstop for a watch that falls behind, rescanned every
 *    renewal. It always contains this broker, even while REGISTERING.
 * Threads: one renewal thread plus the store's watch thread; the live set is
 * guarded by a mutex and copied out. on_change runs on either thread. */
#ifndef LS_MEMBERSHIP_H
#define LS_MEMBERSHIP_H
#include <stdint.h>
#include "cluster/placement.h"
#include "meta/meta.h"

typedef struct ls_membership ls_membership_t;

/* Registers self (blocking) and starts renewal and the watch. NULL with err
 * filled when registration fails. on_change(arg) runs after the live set
 * changed (from a membership or store thread). */
ls_membership_t *ls_membership_start(ls_meta_t *meta, const ls_member_t *self,
                                     int64_t session_timeout_ms, void (*on_change)(void *arg),
                                     void *arg, char *err, size_t errlen);
/* Copy of the live brokers sorted by id (ls_free it); returns the count. */
int ls_membership_members(ls_membership_t *m, ls_member_t **out);
/* Deregisters at once (revokes the lease) and stops the threads. */
void ls_membership_stop(ls_membership_t *m);

/* Parses a registration value into *out; 0 on success. */
int ls_member_decode(const uint8_t *val, size_t len, ls_member_t *out);
#endif
