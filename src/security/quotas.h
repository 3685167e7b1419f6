/* Client quotas (Kafka's ClientQuotaManager, KIP-546): the quota values of
 * the cluster in the metadata store, cached and watched by every broker.
 *
 * Storage: every quota of the cluster is in one record,
 *   /ls/cluster/quotas {"quotas":[{"user":"alice","client-id":null,
 *                        "producer_byte_rate":1048576},...]}
 * one object per entity: "user" / "client-id" absent when the entity has no
 * such part, null for the default entity (<default>), else the name; then
 * the keys set. Changed only by compare-and-set on its mod_rev
 * (AlterClientQuotas from any broker), so one request's changes apply whole
 * and two brokers' changes never lose each other. An entity left with no key
 * is dropped.
 *
 * Cache and consistency: as the authorizer's (security/authz.h): each broker
 * holds the quotas in memory (an immutable set swapped whole, only by a
 * newer revision) and watches the record, so a change made on any broker
 * applies on every broker once its watch delivers it (at once on the broker
 * that made it). A watch that falls behind the store's history is replaced
 * by a thread: reread, watch again (both done by meta/meta_follow.h).
 *
 * Resolution (ls_quotas_lookup): Kafka's precedence, first entity that sets
 * the key wins:
 *   user+client-id, user+<default> client-id, user,
 *   <default> user+client-id, <default> user+<default> client-id,
 *   <default> user, client-id, <default> client-id.
 * The entity found also names the rate window the request counts against
 * (its parts with the request's own user / client-id): clients of one
 * entity share it, and a default entity gives each user / client-id its own.
 *
 * Threads: lookups and listings on any thread (read lock); changes block on
 * the store (worker threads); the watch callback runs on the store's
 * thread. */
#ifndef LS_SECURITY_QUOTAS_H
#define LS_SECURITY_QUOTAS_H
#include <stdbool.h>
#include <stddef.h>

#include "base/status.h"
#include "meta/meta.h"

/* The quota keys, in Kafka's spelling (ls_quota_key_name). */
typedef enum {
    LS_QUOTA_PRODUCER_BYTE_RATE = 0,
    LS_QUOTA_CONSUMER_BYTE_RATE = 1,
    LS_QUOTA_REQUEST_PERCENTAGE = 2,
    LS_QUOTA_NKEYS
} ls_quota_key;

/* One part of an entity: absent, the default entity, or a name. */
typedef enum { LS_QPART_NONE = 0, LS_QPART_DEFAULT, LS_QPART_NAME } ls_qpart;

typedef struct ls_quota_entity {
    ls_qpart user, client;
    char *user_name, *client_name; /* LS_QPART_NAME only */
} ls_quota_entity_t;

typedef struct ls_quota {
    ls_quota_entity_t e;
    bool has[LS_QUOTA_NKEYS];
    double v[LS_QUOTA_NKEYS];
} ls_quota_t;

/* One change of AlterClientQuotas: set key to value, or remove it. */
typedef struct ls_quota_op {
    const ls_quota_entity_t *e;
    ls_quota_key key;
    double value;
    bool remove;
} ls_quota_op_t;

typedef struct ls_quotas ls_quotas_t;

const char *ls_quota_key_name(ls_quota_key k);
/* The key named name (len bytes); false when it is not one of the three. */
bool ls_quota_key_find(const char *name, size_t len, ls_quota_key *out);

/* Loads the quotas and starts the watch. NULL with err on a store failure. */
ls_quotas_t *ls_quotas_open(ls_meta_t *meta, char *err, size_t errlen);
void ls_quotas_close(ls_quotas_t *q); /* NULL: no-op */

/* Every entity with its values, copied (ls_quotas_free_list). */
size_t ls_quotas_list(ls_quotas_t *q, ls_quota_t **out);
void ls_quotas_free_list(ls_quota_t *v, size_t n);

/* Applies ops together (one compare-and-set, retried on a conflict).
 * Blocking: worker threads. */
ls_status ls_quotas_alter(ls_quotas_t *q, const ls_quota_op_t *ops, size_t n);

/* The quota of key for a request of user (the principal's name) with
 * client_id, by the precedence above: true with *limit and, in window
 * (cap bytes), the name of the rate window it counts against; false when no
 * entity sets the key. Non-blocking, any thread. */
bool ls_quotas_lookup(ls_quotas_t *q, const char *user, const char *client_id, ls_quota_key key,
                      double *limit, char *window, size_t cap);
#endif
