/* What the Kafka API handlers (h_<area>.c) share. The handlers themselves,
 * one per API, are declared in kafka/api_gen.h, generated from the
 * descriptions' `handler` lines with the dispatch table's rows; each
 * finishes its request exactly once (see api.h). */
#ifndef LS_KAFKA_HANDLERS_H
#define LS_KAFKA_HANDLERS_H
#include "kafka/api.h"
#include "kafka/api_gen.h"
#include "security/acl.h"
#include "group/group.h"
#include "group/group_service.h"
#include "stream/catalog.h"
#include "txn/txn.h"

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

/* h_txn.c: InitProducerId with a TransactionalId (h_init_producer_id.c hands it over). */
void ls_kafka_init_transactional_producer(ls_kreq_t *req);
/* A transaction outcome as the Kafka code of an API version (those before
 * PRODUCER_FENCED get INVALID_PRODUCER_EPOCH). */
int16_t ls_kafka_txn_error(ls_txn_err e, bool knows_producer_fenced);
#endif
