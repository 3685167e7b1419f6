/* What the Kafka protocol layer is handed: the shared services of one broker
 * (issue 12 §1), as nginx keeps its shared context in core below the
 * modules. server/broker.c composes the services and fills one of these;
 * kafka/ depends only on it (and the modules it names), never on server/, so
 * a second protocol (the HTTP catalog, a schema registry) can be served by
 * the same services.
 *
 * The plain fields are the broker's components, valid for the listener's
 * life; the operations are the composition root's (root is its context).
 * Every call is made on the loop thread. */
#ifndef LS_KAFKA_SERVICES_H
#define LS_KAFKA_SERVICES_H
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "base/config.h"
#include "base/status.h"
#include "cluster/placement.h"
#include "group/group.h"
#include "log/logstore.h"
#include "stream/catalog.h"
#include "stream/policy.h"

struct ls_policy; /* stream/policy.h */

struct ls_group_service;

typedef struct ls_kafka_services {
    uv_loop_t *loop;
    const ls_config_t *cfg;
    int32_t node_id;
    const char *cluster_id;
    ls_catalog_t *catalog;
    ls_logstore_t *logs;
    struct ls_group_service *groups;
    struct ls_txn_store *txns;       /* transaction coordinator's records (txn/txn_store.h) */
    struct ls_authz *authz;          /* ACL authorizer (security/authz.h); NULL: off */
    const ls_prop_t *table_defaults; /* cluster layer of the table policy */
    int ntable_defaults;
    const int *stopping; /* non-zero once the broker is shutting down */
    /* SASL (h_sasl.c, h_users.c): the store holding the SCRAM users
     * (security/users.h) and the mechanisms sasl.enabled.mechanisms enables
     * (ls_sasl_mech bits); the OAUTHBEARER token validator when that
     * mechanism is enabled (security/oauth.h), else NULL. */
    struct ls_meta *users_meta;
    unsigned sasl_mechanisms;
    struct ls_oauth *oauth;
    /* Client quotas: the cluster's values (security/quotas.h) and this
     * broker's rate windows (kafka/kquota.h). */
    struct ls_quotas *quotas;
    struct ls_kquota *kquota;
    /* Dynamic group configs (group/group_configs.h): GROUP resources of
     * Describe/AlterConfigs, applied by ConsumerGroupHeartbeat. */
    struct ls_group_configs *group_configs;
    /* Share-partition states and share sessions (group/share_store.h):
     * ShareFetch, ShareAcknowledge. */
    struct ls_share_store *shares;
    /* Client telemetry (KIP-714): the client-metrics subscriptions
     * (telemetry/subscriptions.h, CLIENT_METRICS resources of
     * Describe/AlterConfigs) and the receiver of GetTelemetrySubscriptions
     * and PushTelemetry (telemetry/receiver.h). */
    struct ls_telemetry_subs *client_metrics;
    struct ls_telemetry *telemetry;
    int kafka_conns; /* Kafka connections open on all listeners (kafka/conn.c) */

    void *root;
    /* The live brokers (sorted by id; at least this one): ls_free() the array. */
    int (*members)(void *root, ls_member_t **out);
    /* The table lag of a stream at the last compaction pass. */
    bool (*table_lag)(void *root, int64_t stream_no, int64_t *lag_ms);
    /* the table (version) the stream's rows go to now, NULL: unknown yet;
     * *reason: why that version exists (NULL: the base table) */
    const char *(*table_version)(void *root, int64_t stream_no, const char **reason);
    /* why the stream's table is held back at the last pass, NULL: it is not */
    const char *(*table_held)(void *root, int64_t stream_no);
    /* why the stream's external catalog lacks its latest snapshot, or NULL */
    const char *(*table_catalog_status)(void *root, int64_t stream_no);
    /* records error.handling=skip left out of the stream's table, as of its
     * last commit by this broker; false: none, or not known here */
    bool (*table_skipped)(void *root, int64_t stream_no, int64_t *records);
    /* A stream's table policy changed: compaction re-reads the policies now. */
    void (*tables_changed)(void *root);
    /* Topics were deleted and their logs fenced: their storage is reclaimed
     * delay_ms from now (file.delete.delay.ms). */
    void (*topics_deleted)(void *root, int64_t delay_ms);
    /* Runs fn(arg) on a worker thread, then after(arg) on the loop thread. */
    void (*offload)(void *root, void (*fn)(void *arg), void (*after)(void *arg), void *arg);
    /* A new producer id, unique across brokers and restarts (blocking: call
     * it from offloaded work). */
    ls_status (*new_producer_id)(void *root, int64_t *id);
    /* Produce-time schema validation of one key (key) or value of topic
     * (registry/framing.h): LS_OK when p[0..len) is in the schema registry's
     * wire format with a registered schema id of the subject pol's subject
     * name strategy names, and bytes that decode; LS_EINVAL (refuse the
     * record) or LS_EIO (the registry's store failed: retriable) with the
     * reason in why.
     * Blocks on the metadata store the first time a schema id is seen (then
     * cached). */
    ls_status (*check_payload)(void *root, const uint8_t *p, size_t len, const char *topic,
                               bool key, const struct ls_policy *pol, char *why, size_t whylen);
    /* Whether fields[0..n) can be the primary key of keys of subject's
     * latest version (table/iceberg_typed.h's rules): LS_OK yes, or nothing to
     * check yet (no such subject, a schema that is not mapped); LS_EINVAL no,
     * with the field and the reason in why; LS_EIO the registry's store
     * failed (why).
     * Blocking: call it from offloaded work. */
    ls_status (*check_primary_key)(void *root, const char *subject, const char *const *fields,
                                   size_t n, char *why, size_t whylen);
    /* Whether the partition spec of policy p (stream/policy.h) applies to
     * the table topic's latest value (and key) schemas would make
     * (TopicNameStrategy subjects): LS_OK yes, or nothing to check yet (a
     * subject not registered, schemaless JSON); LS_EINVAL no, with the
     * field, the transform and the reason in why; LS_EIO the registry's
     * store failed (why).
     * Blocking, as check_primary_key. */
    ls_status (*check_partition)(void *root, const char *topic, const struct ls_policy *p,
                                 char *why, size_t whylen);
    /* Whether the table of topic ns/topic under policy p, when it exists,
     * has the partition spec p gives it (a table keeps the spec it was
     * created with): LS_OK yes or no table yet; LS_EINVAL no, with both specs
     * in why; another status when its metadata could not be read (why). Blocking, as
     * check_primary_key. */
    ls_status (*check_table_spec)(void *root, const char *ns, const char *topic,
                                  const struct ls_policy *p, char *why, size_t whylen);
    /* Finishes tid's decision in the background if it has one (writes its
     * markers, then completes it): after EndTxn, or when a request met a
     * decided record. */
    void (*txn_finish)(void *root, const char *tid);
    /* Every table as its read-only consumer group (group/group.h), from
     * the recorded table statuses: *out freed with ls_table_groups_free.
     * Blocking, as check_primary_key. */
    ls_status (*table_groups)(void *root, ls_table_group_t **out, int *n);
} ls_kafka_services_t;

static inline void ls_ksvc_offload(const ls_kafka_services_t *s, void (*fn)(void *arg),
                                   void (*after)(void *arg), void *arg)
{
    s->offload(s->root, fn, after, arg);
}

static inline int ls_ksvc_members(const ls_kafka_services_t *s, ls_member_t **out)
{
    return s->members(s->root, out);
}

/* Node id of the coordinator of a group (or transactional id): the same on
 * every broker, whatever zone the client is in; *out is that member. */
int32_t ls_ksvc_coordinator(const ls_kafka_services_t *s, const char *key, size_t klen,
                            ls_member_t *out);
#endif
