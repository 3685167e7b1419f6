/* Consumer groups of the KIP-848 protocol ("consumer" group type), as pure
 * logic: no sockets, no store I/O, no wall clock (the caller passes now_ms
 * and the topic metadata). Unit tests drive it directly.
 *
 * Epochs. The group epoch counts changes of the group's inputs (a member
 * joins or leaves, a subscription or the assignor preference changes, a
 * subscribed topic appears or grows). When the group epoch passes the target
 * assignment epoch, the server-side assignor computes a new target
 * assignment (one partition set per member) stamped with the group epoch.
 * Each member then converges to its target by incremental reconciliation:
 *
 *   Stable ──target changed, something to revoke──▶ UnrevokedPartitions
 *     (the member keeps only what it keeps; the rest is "pending revocation";
 *      its epoch does not move)
 *   UnrevokedPartitions ──a heartbeat whose owned list holds none of the
 *     pending partitions──▶ (revocation acknowledged) compute again
 *   compute: everything of the target that no other member holds or is
 *     revoking is assigned; epoch := target epoch; Stable if all of the target
 *     was free, else UnreleasedPartitions (retried on each heartbeat)
 *
 * Invariants:
 *  - a partition is in at most one member's assigned ∪ pending-revocation set
 *    (a partition moves only after its previous owner acknowledged revoking);
 *  - member epoch <= target epoch <= group epoch; the group epoch never
 *    decreases and starts above the epoch floor given at creation (the
 *    highest epoch persisted before, so a coordinator fail-over never hands
 *    out a lower epoch);
 *  - a static member (instance id) maps to one member id at a time.
 *
 * Threads: one caller at a time (the loop thread). */
#ifndef LS_CGROUP_H
#define LS_CGROUP_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "base/buf.h"

/* Member epochs with a meaning in ConsumerGroupHeartbeat. */
#define LS_CGROUP_EPOCH_JOIN 0
#define LS_CGROUP_EPOCH_LEAVE (-1)
#define LS_CGROUP_EPOCH_STATIC_LEAVE (-2)

/* Outcomes of the KIP-848 family (consumer and streams groups); mapped to
 * Kafka error codes at the protocol edge. */
typedef enum ls_cgroup_err {
    LS_CGERR_NONE = 0,
    LS_CGERR_INVALID_REQUEST, /* res.message names the field */
    LS_CGERR_UNKNOWN_MEMBER_ID,
    LS_CGERR_FENCED_MEMBER_EPOCH,
    LS_CGERR_UNRELEASED_INSTANCE_ID,
    LS_CGERR_GROUP_MAX_SIZE_REACHED,
    LS_CGERR_UNSUPPORTED_ASSIGNOR,
    LS_CGERR_INVALID_REGULAR_EXPRESSION,
    LS_CGERR_STALE_MEMBER_EPOCH,
    LS_CGERR_STREAMS_INVALID_TOPOLOGY, /* streams groups (stgroup.h) */
} ls_cgroup_err;
const char *ls_cgroup_err_name(ls_cgroup_err e);

typedef enum ls_cgroup_assignor {
    LS_CGROUP_UNIFORM, /* balanced and sticky (Kafka's "uniform") */
    LS_CGROUP_RANGE,   /* contiguous ranges per topic (Kafka's "range") */
} ls_cgroup_assignor;
/* "uniform" / "range"; false for anything else. */
bool ls_cgroup_assignor_parse(const char *name, ls_cgroup_assignor *out);
const char *ls_cgroup_assignor_name(ls_cgroup_assignor a);

typedef struct ls_cgroup_config {
    int32_t session_timeout_ms;    /* group.consumer.session.timeout.ms */
    int32_t heartbeat_interval_ms; /* group.consumer.heartbeat.interval.ms */
    int32_t max_size;              /* group.consumer.max.size */
    /* group.consumer.assignors: the first is the default */
    ls_cgroup_assignor assignors[2];
    int nassignors;
} ls_cgroup_config_t;
void ls_cgroup_config_defaults(ls_cgroup_config_t *cfg);

typedef struct ls_cgroup_tp {
    const char *topic;
    int32_t partition;
} ls_cgroup_tp_t;

/* A topic that exists, with its partition count. */
typedef struct ls_cgroup_topic {
    const char *name;
    int32_t partitions;
} ls_cgroup_topic_t;

typedef struct ls_cgroup ls_cgroup_t;

/* epoch_floor: the highest group epoch ever handed out (0 for a new group). */
ls_cgroup_t *ls_cgroup_new(const char *group_id, const ls_cgroup_config_t *cfg,
                           int32_t epoch_floor);
void ls_cgroup_free(ls_cgroup_t *g);
int32_t ls_cgroup_epoch(const ls_cgroup_t *g);
int32_t ls_cgroup_target_epoch(const ls_cgroup_t *g);
int ls_cgroup_member_count(const ls_cgroup_t *g);

typedef struct ls_cgroup_hb_req {
    const char *member_id; /* v1: chosen by the client; v0: by the caller on join */
    int32_t member_epoch;
    const char *instance_id;      /* NULL: dynamic */
    int32_t rebalance_timeout_ms; /* -1: unchanged */
    const char *const *topics;    /* SubscribedTopicNames; NULL (ntopics -1): unchanged */
    int ntopics;
    const char *regex;           /* SubscribedTopicRegex (RE2/J syntax subset); NULL: unchanged */
    const char *assignor;        /* ServerAssignor; NULL: unchanged */
    const ls_cgroup_tp_t *owned; /* TopicPartitions; NULL (nowned -1): unchanged */
    int nowned;
    const char *rack_id;     /* RackId; NULL: unchanged */
    const char *client_id;   /* of the connection (describe only) */
    const char *client_host; /* of the connection (describe only) */
    /* > 0: the group's session timeout / heartbeat interval from now on
     * (its dynamic group config, group/group_configs.h); else unchanged */
    int32_t session_timeout_ms;
    int32_t heartbeat_interval_ms;
    int64_t now_ms;
} ls_cgroup_hb_req_t;

/* Valid until the next call on the group. */
typedef struct ls_cgroup_hb_res {
    ls_cgroup_err err;
    const char *message; /* static text or NULL */
    int32_t member_epoch;
    int32_t heartbeat_interval_ms;
    const ls_cgroup_tp_t *assigned;
    int nassigned;
} ls_cgroup_hb_res_t;

/* One ConsumerGroupHeartbeat. topics: the topics that exist now among those
 * the members (with this request's subscription) subscribe to by name, and
 * every topic when a member or the request subscribes by regex; other topics
 * may be passed too (ignored). */
void ls_cgroup_heartbeat(ls_cgroup_t *g, const ls_cgroup_hb_req_t *req,
                         const ls_cgroup_topic_t *topics, int ntopics, ls_cgroup_hb_res_t *res);
/* Removes members whose session expired by now_ms (and static members that
 * left temporarily and did not come back in time), and members that did not
 * acknowledge a revocation within their rebalance timeout; returns the next
 * deadline (INT64_MAX: none). */
int64_t ls_cgroup_tick(ls_cgroup_t *g, int64_t now_ms);
/* The earliest deadline of ls_cgroup_tick, without expiring anything. */
int64_t ls_cgroup_next_deadline(const ls_cgroup_t *g);

/* Kafka's names of a consumer group's state: "Empty" (no members),
 * "Assigning" (the target is behind the group epoch), "Reconciling" (a member
 * has not reached the target yet), "Stable". Static strings. */
const char *ls_cgroup_state_name(const ls_cgroup_t *g);
/* The assignor the next target assignment uses (the members' choice). */
ls_cgroup_assignor ls_cgroup_assignor_in_use(const ls_cgroup_t *g);

/* Describe: a member's current state. i in [0, member_count). */
typedef struct ls_cgroup_member_info {
    const char *member_id;
    const char *instance_id;
    const char *rack_id;       /* NULL none */
    const char *client_id;     /* "" unknown */
    const char *client_host;   /* "" unknown */
    const char *const *topics; /* subscribed names */
    int ntopics;
    const char *regex; /* NULL none */
    int32_t member_epoch;
    const ls_cgroup_tp_t *assigned;
    int nassigned;
    const ls_cgroup_tp_t *target;
    int ntarget;
} ls_cgroup_member_info_t;
void ls_cgroup_member(const ls_cgroup_t *g, int i, ls_cgroup_member_info_t *out);
/* Counts the changes that ls_cgroup_encode shows (members, their epochs,
 * states and partitions, the group's epochs): the embedder stores the group
 * when it moved. Session refreshes do not move it. */
uint64_t ls_cgroup_version(const ls_cgroup_t *g);
/* The stored form: epochs, the subscribed topics' metadata and every member
 * (subscription, epochs, assigned / pending-revocation / target partitions),
 * so a coordinator that takes the group over keeps its members. Deadlines
 * are not stored: decode gives every member a fresh session from now_ms.
 * decode: NULL on any inconsistency. */
void ls_cgroup_encode(const ls_cgroup_t *g, ls_buf_t *b);
ls_cgroup_t *ls_cgroup_decode(const uint8_t *p, size_t len, const char *group_id,
                              const ls_cgroup_config_t *cfg, int64_t now_ms);
/* What the caller must look up for the next heartbeat (see above): whether
 * a member subscribes by regex, and each topic name members subscribe to
 * (fn may see a name more than once). */
bool ls_cgroup_has_regex(const ls_cgroup_t *g);
void ls_cgroup_each_topic_name(const ls_cgroup_t *g, void (*fn)(void *arg, const char *name),
                               void *arg);
/* Does a member subscribe to topic (by name or regex)? OffsetDelete's rule. */
bool ls_cgroup_subscribed(const ls_cgroup_t *g, const char *topic);
/* OffsetCommit v9+ rule: the member exists and commits with its epoch. */
ls_cgroup_err ls_cgroup_commit_check(const ls_cgroup_t *g, const char *member_id,
                                     int32_t member_epoch);
#endif
