/* Streams groups (KIP-1071, Kafka Streams' "streams" group protocol), as
 * pure logic: no sockets, no store I/O, no wall clock. The caller passes
 * now_ms and a way to look up topics' partition counts; unit tests drive it
 * directly. The handler (kafka/h_streams_group.c) creates the internal
 * topics a heartbeat asks for.
 *
 * The group holds one topology (set by the first member to join; sub-
 * topologies with their source, repartition and changelog topics). From the
 * topology and the topics that exist, each heartbeat configures it:
 *   - every source topic that is not a repartition topic must exist, else
 *     status MISSING_SOURCE_TOPICS and no tasks;
 *   - a repartition topic without a fixed count gets the largest partition
 *     count of the source topics of the sub-topologies writing to it
 *     (computed until nothing moves); copartition groups must agree (external
 *     topics equal; repartition topics follow them), else
 *     INCORRECTLY_PARTITIONED_TOPICS;
 *   - a sub-topology has as many tasks as its largest source (or repartition
 *     source) topic has partitions; its changelog topics get that count;
 *   - internal topics that do not exist are listed for creation and the
 *     status is MISSING_INTERNAL_TOPICS until they do; an existing one with
 *     another partition count is INCORRECTLY_PARTITIONED_TOPICS.
 * Tasks are assigned only while the topology is ready (no such status).
 *
 * Epochs and reconciliation follow the consumer protocol (cgroup.h): the
 * group epoch moves when a member joins, leaves or changes what the
 * assignment reads (process, endpoint, tags), or when the configured
 * topology or the standby count changes; a new target (active and standby
 * tasks per member) is then computed, sticky and balanced: each task stays
 * with its previous owner while that member is below its fair share, the
 * rest go to the least loaded member; standbys go to members of other
 * processes than the task's active owner (fewer standbys when there are not
 * enough processes). Warm-up tasks are never assigned. A member converges
 * by revoking first (UnrevokedTasks, its epoch does not move), then taking
 * what is free (UnreleasedTasks while something is still held):
 *   - an active task goes to a member only when no other member holds it
 *     active and no member of the member's process holds it standby;
 *   - a standby task goes to a member only when no member of its process
 *     holds it (active, or standby on another member).
 * Invariants: an active task is in at most one member's assigned ∪
 * pending-revocation sets; member epoch <= target epoch <= group epoch; the
 * group epoch never decreases and starts above the floor given at creation.
 *
 * Threads: one caller at a time (the loop thread). */
#ifndef LS_STGROUP_H
#define LS_STGROUP_H
#include <stdbool.h>
#include <stdint.h>
#include "base/buf.h"
#include "group/cgroup.h"

typedef struct ls_stgroup_config {
    int32_t session_timeout_ms;    /* group.streams.session.timeout.ms */
    int32_t heartbeat_interval_ms; /* group.streams.heartbeat.interval.ms */
    int32_t max_size;              /* group.streams.max.size */
    int32_t num_standby_replicas;  /* group.streams.num.standby.replicas */
} ls_stgroup_config_t;
void ls_stgroup_config_defaults(ls_stgroup_config_t *cfg);

/* Kafka's status codes of a heartbeat answer. */
enum {
    LS_STGROUP_STALE_TOPOLOGY = 0,
    LS_STGROUP_MISSING_SOURCE_TOPICS = 1,
    LS_STGROUP_INCORRECTLY_PARTITIONED_TOPICS = 2,
    LS_STGROUP_MISSING_INTERNAL_TOPICS = 3,
    LS_STGROUP_SHUTDOWN_APPLICATION = 4,
};

typedef struct ls_stgroup_kv {
    const char *key, *value;
} ls_stgroup_kv_t;

typedef struct ls_stgroup_topic_info {
    const char *name;
    int32_t partitions; /* 0: decided by the group */
    int16_t replication_factor;
    const ls_stgroup_kv_t *configs;
    int nconfigs;
} ls_stgroup_topic_info_t;

/* A copartition group: indexes into the sub-topology's sources and
 * repartition sources. */
typedef struct ls_stgroup_copart {
    const int16_t *sources;
    int nsources;
    const int16_t *repartitions;
    int nrepartitions;
} ls_stgroup_copart_t;

typedef struct ls_stgroup_subtopology {
    const char *id;
    const char *const *sources; /* every source topic, repartition ones too */
    int nsources;
    const char *const *sinks; /* repartition topics it writes to */
    int nsinks;
    const ls_stgroup_topic_info_t *repartitions; /* repartition topics it reads */
    int nrepartitions;
    const ls_stgroup_topic_info_t *changelogs;
    int nchangelogs;
    const ls_stgroup_copart_t *coparts;
    int ncoparts;
} ls_stgroup_subtopology_t;

typedef struct ls_stgroup_topology {
    int32_t epoch;
    const ls_stgroup_subtopology_t *subs;
    int nsubs;
} ls_stgroup_topology_t;

typedef struct ls_stgroup_task {
    const char *sub; /* sub-topology id */
    int32_t partition;
} ls_stgroup_task_t;

typedef struct ls_stgroup_tasks {
    const ls_stgroup_task_t *active, *standby, *warmup;
    int nactive, nstandby, nwarmup;
} ls_stgroup_tasks_t;

typedef struct ls_stgroup_task_offset {
    const char *sub;
    int32_t partition;
    int64_t offset;
} ls_stgroup_task_offset_t;

/* A topic's partition count, -1 when it does not exist. */
typedef int32_t (*ls_stgroup_partitions_fn)(void *arg, const char *topic);

typedef struct ls_stgroup_hb_req {
    const char *member_id;
    int32_t member_epoch;
    int32_t endpoint_epoch; /* EndpointInformationEpoch the member holds */
    const char *instance_id;
    const char *rack_id;                   /* NULL: unchanged */
    int32_t rebalance_timeout_ms;          /* -1: unchanged */
    const ls_stgroup_topology_t *topology; /* NULL: not sent */
    bool has_owned;                        /* ActiveTasks/StandbyTasks/WarmupTasks sent */
    ls_stgroup_tasks_t owned;
    const char *process_id; /* NULL: unchanged */
    bool has_endpoint;
    const char *endpoint_host;
    uint16_t endpoint_port;
    const ls_stgroup_kv_t *tags; /* ClientTags; ntags -1: unchanged */
    int ntags;
    const ls_stgroup_task_offset_t *offsets, *end_offsets; /* n -1: unchanged */
    int noffsets, nend_offsets;
    bool shutdown_application;
    const char *client_id, *client_host;
    /* the group's dynamic configs (group/group_configs.h); <= 0 (standby:
     * < 0): the broker's */
    int32_t session_timeout_ms, heartbeat_interval_ms, num_standby_replicas;
    ls_stgroup_partitions_fn partitions;
    void *partitions_arg;
    int64_t now_ms;
} ls_stgroup_hb_req_t;

typedef struct ls_stgroup_status {
    int8_t code;
    const char *detail;
} ls_stgroup_status_t;

/* An internal topic the coordinator must create. */
typedef struct ls_stgroup_create {
    const char *name;
    int32_t partitions;
    int16_t replication_factor; /* 0: the broker's default */
    const ls_stgroup_kv_t *configs;
    int nconfigs;
} ls_stgroup_create_t;

/* Valid until the next call on the group (message: as long as res). */
typedef struct ls_stgroup_hb_res {
    ls_cgroup_err err; /* INVALID_REQUEST, UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH,
                        * GROUP_MAX_SIZE_REACHED; message says why */
    const char *message;
    int32_t member_epoch;
    int32_t heartbeat_interval_ms;
    bool send_tasks; /* the answer carries the member's tasks */
    ls_stgroup_tasks_t tasks;
    const ls_stgroup_status_t *status;
    int nstatus;
    int32_t endpoint_epoch;
    bool send_endpoints; /* the member's endpoint epoch is behind */
    const ls_stgroup_create_t *create;
    int ncreate;
    char text[512]; /* what message may point to: it outlives the group */
} ls_stgroup_hb_res_t;

typedef struct ls_stgroup ls_stgroup_t;

/* epoch_floor: the highest group epoch ever handed out (0 for a new group). */
ls_stgroup_t *ls_stgroup_new(const char *group_id, const ls_stgroup_config_t *cfg,
                             int32_t epoch_floor);
void ls_stgroup_free(ls_stgroup_t *g);
int32_t ls_stgroup_epoch(const ls_stgroup_t *g);
int32_t ls_stgroup_target_epoch(const ls_stgroup_t *g);
int ls_stgroup_member_count(const ls_stgroup_t *g);

void ls_stgroup_heartbeat(ls_stgroup_t *g, const ls_stgroup_hb_req_t *req,
                          ls_stgroup_hb_res_t *res);
/* Removes members whose session expired by now_ms and members that did not
 * revoke within their rebalance timeout; returns the next deadline
 * (INT64_MAX: none). */
int64_t ls_stgroup_tick(ls_stgroup_t *g, int64_t now_ms);
int64_t ls_stgroup_next_deadline(const ls_stgroup_t *g);

/* Kafka's state names: "Empty", "NotReady" (no ready topology), "Assigning",
 * "Reconciling", "Stable". */
const char *ls_stgroup_state_name(const ls_stgroup_t *g);

/* The topology (NULL: none yet), valid until the next call on the group. */
const ls_stgroup_topology_t *ls_stgroup_topology(const ls_stgroup_t *g);

typedef struct ls_stgroup_member_info {
    const char *member_id, *rack_id, *client_id, *client_host, *process_id;
    const char *endpoint_host; /* NULL: none */
    uint16_t endpoint_port;
    const ls_stgroup_kv_t *tags;
    int ntags;
    const ls_stgroup_task_offset_t *offsets, *end_offsets;
    int noffsets, nend_offsets;
    int32_t member_epoch, topology_epoch;
    ls_stgroup_tasks_t assigned, target;
} ls_stgroup_member_info_t;
void ls_stgroup_member(const ls_stgroup_t *g, int i, ls_stgroup_member_info_t *out);

/* Counts the changes ls_stgroup_encode shows: the embedder stores the group
 * when it moved. Session refreshes do not move it. */
uint64_t ls_stgroup_version(const ls_stgroup_t *g);
/* The stored form (docs/FORMATS.md): epochs, topology and members with their
 * tasks; members get a fresh session from now_ms at decode. Reported task
 * offsets are not stored. decode: NULL on any inconsistency. */
void ls_stgroup_encode(const ls_stgroup_t *g, ls_buf_t *b);
ls_stgroup_t *ls_stgroup_decode(const uint8_t *p, size_t len, const char *group_id,
                                const ls_stgroup_config_t *cfg, int64_t now_ms);

/* Does the topology read topic? OffsetDelete's rule. */
bool ls_stgroup_subscribed(const ls_stgroup_t *g, const char *topic);
/* OffsetCommit's rule, as consumer groups'. */
ls_cgroup_err ls_stgroup_commit_check(const ls_stgroup_t *g, const char *member_id,
                                      int32_t member_epoch);
/* Checks what ls_stgroup_tick / heartbeat keep true; aborts on a breach. */
void ls_stgroup_check_invariants(const ls_stgroup_t *g);
#endif
