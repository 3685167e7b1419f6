/* Kafka API handlers, one per API (h_<area>.c). Referenced from the dispatch
 * table in api.c; each finishes its request exactly once (see api.h). */
#ifndef LS_KAFKA_HANDLERS_H
#define LS_KAFKA_HANDLERS_H
#include "kafka/api.h"
#include "security/acl.h"
#include "group/group.h"
#include "group/group_service.h"
#include "stream/catalog.h"
#include "txn/txn.h"

void ls_kafka_handle_produce(ls_kreq_t *req);                   /* h_produce.c, key 0 */
void ls_kafka_handle_fetch(ls_kreq_t *req);                     /* h_fetch.c, key 1 */
void ls_kafka_handle_list_offsets(ls_kreq_t *req);              /* h_list_offsets.c, key 2 */
void ls_kafka_handle_metadata(ls_kreq_t *req);                  /* h_metadata.c, key 3 */
void ls_kafka_handle_api_versions(ls_kreq_t *req);              /* api.c, key 18 */
void ls_kafka_handle_create_topics(ls_kreq_t *req);             /* h_topics.c, key 19 */
void ls_kafka_handle_delete_topics(ls_kreq_t *req);             /* h_topics.c, key 20 */
void ls_kafka_handle_delete_records(ls_kreq_t *req);            /* h_delete_records.c, key 21 */
void ls_kafka_handle_init_producer_id(ls_kreq_t *req);          /* h_producer.c, key 22 */
void ls_kafka_handle_add_partitions_to_txn(ls_kreq_t *req);     /* h_txn.c, key 24 */
void ls_kafka_handle_add_offsets_to_txn(ls_kreq_t *req);        /* h_txn.c, key 25 */
void ls_kafka_handle_end_txn(ls_kreq_t *req);                   /* h_txn.c, key 26 */
void ls_kafka_handle_offset_for_leader_epoch(ls_kreq_t *req);   /* h_list_offsets.c, key 23 */
void ls_kafka_handle_describe_configs(ls_kreq_t *req);          /* h_configs.c, key 32 */
void ls_kafka_handle_alter_configs(ls_kreq_t *req);             /* h_alter_configs.c, key 33 */
void ls_kafka_handle_incremental_alter_configs(ls_kreq_t *req); /* h_alter_configs.c, key 44 */
void ls_kafka_handle_create_partitions(ls_kreq_t *req);         /* h_topics.c, key 37 */
void ls_kafka_handle_describe_cluster(ls_kreq_t *req);          /* h_metadata.c, key 60 */
/* issue 34: admin APIs of Kafka 4's tools */
void ls_kafka_handle_describe_topic_partitions(ls_kreq_t *req);     /* h_metadata.c, key 75 */
void ls_kafka_handle_alter_replica_log_dirs(ls_kreq_t *req);        /* h_log_dirs.c, key 34 */
void ls_kafka_handle_describe_log_dirs(ls_kreq_t *req);             /* h_log_dirs.c, key 35 */
void ls_kafka_handle_alter_partition_reassignments(ls_kreq_t *req); /* h_reassign.c, key 45 */
void ls_kafka_handle_elect_leaders(ls_kreq_t *req);                 /* h_reassign.c, key 43 */
void ls_kafka_handle_list_partition_reassignments(ls_kreq_t *req);  /* h_reassign.c, key 46 */
void ls_kafka_handle_update_features(ls_kreq_t *req);               /* h_features.c, key 57 */
void ls_kafka_handle_list_config_resources(ls_kreq_t *req);         /* h_configs.c, key 74 */
void ls_kafka_handle_get_telemetry_subscriptions(ls_kreq_t *req);   /* h_telemetry.c, key 71 */
void ls_kafka_handle_push_telemetry(ls_kreq_t *req);                /* h_telemetry.c, key 72 */
/* consumer groups: h_group.c */
void ls_kafka_handle_offset_commit(ls_kreq_t *req);    /* key 8 */
void ls_kafka_handle_offset_fetch(ls_kreq_t *req);     /* key 9 */
void ls_kafka_handle_find_coordinator(ls_kreq_t *req); /* key 10 */
void ls_kafka_handle_join_group(ls_kreq_t *req);       /* key 11 */
void ls_kafka_handle_heartbeat(ls_kreq_t *req);        /* key 12 */
void ls_kafka_handle_leave_group(ls_kreq_t *req);      /* key 13 */
void ls_kafka_handle_sync_group(ls_kreq_t *req);       /* key 14 */
void ls_kafka_handle_describe_groups(ls_kreq_t *req);  /* key 15 */
void ls_kafka_handle_list_groups(ls_kreq_t *req);      /* key 16 */
void ls_kafka_handle_delete_groups(ls_kreq_t *req);    /* key 42 */
void ls_kafka_handle_offset_delete(ls_kreq_t *req);    /* key 47 */
/* transaction admin: h_txn_admin.c */
void ls_kafka_handle_write_txn_markers(ls_kreq_t *req);     /* key 27 (admin abort only) */
void ls_kafka_handle_describe_producers(ls_kreq_t *req);    /* key 61 */
void ls_kafka_handle_describe_transactions(ls_kreq_t *req); /* key 65 */
void ls_kafka_handle_list_transactions(ls_kreq_t *req);     /* key 66 */

void ls_kafka_handle_txn_offset_commit(ls_kreq_t *req); /* h_txn_offsets.c, key 28 */
/* SASL and its users */
void ls_kafka_handle_sasl_handshake(ls_kreq_t *req);                  /* h_sasl.c, key 17 */
void ls_kafka_handle_sasl_authenticate(ls_kreq_t *req);               /* h_sasl.c, key 36 */
void ls_kafka_handle_describe_user_scram_credentials(ls_kreq_t *req); /* h_users.c, key 50 */
void ls_kafka_handle_alter_user_scram_credentials(ls_kreq_t *req);    /* h_users.c, key 51 */
/* ACL admin: h_acls.c */
void ls_kafka_handle_describe_acls(ls_kreq_t *req); /* key 29 */
void ls_kafka_handle_create_acls(ls_kreq_t *req);   /* key 30 */
void ls_kafka_handle_delete_acls(ls_kreq_t *req);   /* key 31 */

/* h_acls.c: authorization of a request (its principal and peer host)
 * against the broker's authorizer; always true when there is none. Codes
 * are security/acl.h's (LS_ACL_OP_*, LS_ACL_RES_*). ls_kreq_allowed audits
 * a denial; the _quiet form does not (for what a listing leaves out, as
 * Kafka's logIfDenied=false); _k takes a wire name; _cluster the CLUSTER
 * resource; _any is Kafka's authorizeByResourceType (op on some resource of
 * the type). ls_kreq_authorized_ops narrows an AuthorizedOperations bit
 * field (KIP-430) to the operations allowed. */
bool ls_kreq_allowed(ls_kreq_t *req, int8_t op, int8_t rtype, const char *name);
bool ls_kreq_allowed_quiet(ls_kreq_t *req, int8_t op, int8_t rtype, const char *name);
bool ls_kreq_allowed_k(ls_kreq_t *req, int8_t op, int8_t rtype, ls_kstr_t name);
bool ls_kreq_allowed_cluster(ls_kreq_t *req, int8_t op);
bool ls_kreq_allowed_any(ls_kreq_t *req, int8_t op, int8_t rtype);
int32_t ls_kreq_authorized_ops(ls_kreq_t *req, int8_t rtype, const char *name, int32_t ops);
/* A config resource (DescribeConfigs, AlterConfigs: type TOPIC, GROUP,
 * BROKER, BROKER_LOGGER or CLIENT_METRICS, as LS_KAFKA_RESOURCE_*) checked
 * for op (DESCRIBE_CONFIGS, ALTER_CONFIGS) on the topic, the group or the
 * cluster: 0, or the Kafka error (TOPIC_ / GROUP_ /
 * CLUSTER_AUTHORIZATION_FAILED). Other types pass. */
int16_t ls_kreq_config_denied(ls_kreq_t *req, int8_t type, ls_kstr_t name, int8_t op);
void ls_kafka_handle_describe_client_quotas(ls_kreq_t *req); /* h_quotas.c, key 48 */
void ls_kafka_handle_alter_client_quotas(ls_kreq_t *req);    /* h_quotas.c, key 49 */
/* The request conn.c decoded (req->msg), copied into m of type ls_kafka_<T>;
 * and a response (checked to be an ls_kafka_<T>) encoded and sent. Both name
 * the handler's `req`. */
#define LS_KREQUEST(T, m) ((m) = *(const ls_kafka_##T *)req->msg)
#define LS_KRESPOND(T, resp)                                                                       \
    do {                                                                                           \
        const ls_kafka_##T *resp_ = &(resp);                                                       \
        ls_kw_t w_;                                                                                \
        ls_kreq_encode(req, &w_, resp_);                                                           \
        ls_kreq_respond(req, &w_);                                                                 \
    } while (0)
/* h_group.c: what the group handlers share (h_group.c, h_group_offsets.c,
 * h_consumer_group.c, h_streams_group.c).
 * ls_kgroup_cstr: arena C string of a wire id (group, member, instance,
 * protocol); NULL for null; *ok false when it holds a NUL or control
 * character (kafka/names.h). ls_kgroup_acquire: the group if this broker
 * coordinates it, else cb(arg, NULL) (the client is answered
 * COORDINATOR_NOT_AVAILABLE and looks the coordinator up again).
 * ls_kgroup_table_refused: a write to a lakestream.table.* group (read-only),
 * logged. ls_kgroup_client_host: Kafka's ClientHost, "/" + address.
 * LS_KGROUP_AUTHORIZED_OPS: AclOperation bits (KIP-430) READ 3, DELETE 6,
 * DESCRIBE 8. */
#define LS_KGROUP_AUTHORIZED_OPS ((1 << 3) | (1 << 6) | (1 << 8))
char *ls_kgroup_cstr(ls_arena_t *a, ls_kstr_t s, bool *ok);
void ls_kgroup_acquire(ls_kreq_t *req, const char *gid, ls_group_ready_cb cb, void *arg);
bool ls_kgroup_table_refused(ls_kreq_t *req, const char *gid);
char *ls_kgroup_client_host(ls_kreq_t *req);
/* ls_kgroup_describe_each: what ConsumerGroupDescribe, ShareGroupDescribe and
 * StreamsGroupDescribe share. For each id i, Kafka's checks in its order
 * (DESCRIBE on the group, a valid id, not a table's read-only group, its
 * coordinator here, the group not Dead), then one(arg, i, gid, g, 0, NULL)
 * with the group, or one(arg, i, gid, NULL, err, fmt) with the refusal (fmt:
 * a message with one %s for the id, or NULL); done(arg) once every id is
 * answered (perhaps before it returns). */
typedef void (*ls_kgroup_desc_fn)(void *arg, int32_t i, const char *gid, ls_group_t *g, int16_t err,
                                  const char *fmt);
void ls_kgroup_describe_each(ls_kreq_t *req, const ls_kstr_t *ids, int32_t n, ls_kgroup_desc_fn one,
                             void (*done)(void *arg), void *arg);
/* The tables' read-only groups (server/table_groups.h), read on a worker:
 * cb(arg, st, v, n) on the loop with every one (v is freed after cb);
 * ls_kgroup_table_find: the one of id gid in v, or NULL. */
typedef void (*ls_kgroup_tables_cb)(void *arg, ls_status st, const ls_table_group_t *v, int n);
void ls_kgroup_tables_read(ls_kreq_t *req, ls_kgroup_tables_cb cb, void *arg);
const ls_table_group_t *ls_kgroup_table_find(const ls_table_group_t *v, int n, const char *gid);
/* h_consumer_group.c: the KIP-848 consumer group protocol */
void ls_kafka_handle_consumer_group_heartbeat(ls_kreq_t *req);     /* key 68 */
void ls_kafka_handle_consumer_group_describe(ls_kreq_t *req);      /* key 69 */
void ls_kafka_handle_share_group_heartbeat(ls_kreq_t *req);        /* key 76 */
void ls_kafka_handle_share_group_describe(ls_kreq_t *req);         /* key 77 */
void ls_kafka_handle_share_fetch(ls_kreq_t *req);                  /* key 78 */
void ls_kafka_handle_share_acknowledge(ls_kreq_t *req);            /* key 79 */
void ls_kafka_handle_describe_share_group_offsets(ls_kreq_t *req); /* key 90 */
void ls_kafka_handle_alter_share_group_offsets(ls_kreq_t *req);    /* key 91 */
void ls_kafka_handle_delete_share_group_offsets(ls_kreq_t *req);   /* key 92 */
/* h_streams_group.c: the KIP-1071 streams group protocol */
void ls_kafka_handle_streams_group_heartbeat(ls_kreq_t *req); /* key 88 */
void ls_kafka_handle_streams_group_describe(ls_kreq_t *req);  /* key 89 */
/* h_consumer_group.c: an outcome of the KIP-848 family (consumer and
 * streams groups) as its Kafka code. */
int16_t ls_kafka_cgroup_error(ls_cgroup_err e);
/* h_group.c: a group outcome as its Kafka code. */
int16_t ls_kafka_group_error(ls_group_err e);
/* h_group_offsets.c: a failed group write (OffsetCommit, TxnOffsetCommit): NOT_COORDINATOR when
 * another broker's owner record fenced it, else COORDINATOR_NOT_AVAILABLE;
 * both retriable. */
int16_t ls_kafka_group_write_error(ls_status st);

/* h_group_offsets.c: fills an offset-commit item (OffsetCommit, TxnOffsetCommit)
 * from one request partition; UNKNOWN_TOPIC_OR_PARTITION for a stream that
 * does not hold it, OFFSET_METADATA_TOO_LARGE over max_metadata, else NONE
 * (the item filled, its strings in a). */
int16_t ls_kafka_commit_item(ls_arena_t *a, ls_group_commit_item_t *it, const ls_stream_t *s,
                             char *topic, int32_t partition, int64_t offset, int32_t leader_epoch,
                             ls_kstr_t metadata, int32_t max_metadata, int64_t commit_ms);

/* h_txn.c: InitProducerId with a TransactionalId (h_producer.c hands it over). */
void ls_kafka_init_transactional_producer(ls_kreq_t *req);
/* A transaction outcome as the Kafka code of an API version (those before
 * PRODUCER_FENCED get INVALID_PRODUCER_EPOCH). */
int16_t ls_kafka_txn_error(ls_txn_err e, bool knows_producer_fenced);
#endif
