/* Consumer-group coordinator, classic protocol (Kafka's JoinGroup / SyncGroup /
 * Heartbeat / LeaveGroup and committed offsets), as pure logic: no sockets,
 * no store I/O, no wall clock. The embedder supplies hooks (clock, persist,
 * load) and calls ls_group_coord_tick() when the deadline it was told about
 * passes. Unit tests drive it with a fake clock.
 *
 * State machine of one group (Kafka's GroupMetadata, KIP-134/345/394):
 *
 *   Dead ──join──▶ Empty ──join──▶ PreparingRebalance ──all joined / timeout──▶
 *   CompletingRebalance ──leader's SyncGroup──▶ Stable
 *   Stable / CompletingRebalance ──join of a new member, leave, session expiry,
 *       changed protocols──▶ PreparingRebalance
 *   PreparingRebalance ──nobody left──▶ Empty (generation still bumps)
 *   Empty ──DeleteGroups / retention expiry──▶ Dead (= does not exist)
 *
 * Invariants:
 *  - a member is awaiting join (join_cb set) only in PreparingRebalance, and
 *    awaiting sync (sync_cb set) only in CompletingRebalance; leaving either
 *    state answers every waiter exactly once;
 *  - the leader is a member; generation only grows; member ids are unique and
 *    never reused; a static member (group.instance.id) maps to exactly one
 *    member id at a time, any other id presenting that instance id is fenced;
 *  - the persisted record of a group (ls_group_record_*) is written on every
 *    transition to Stable or Empty and whenever a static member is replaced,
 *    so that a restarted broker resumes with the same generation and members.
 *
 * Groups are loaded lazily (hooks.load) the first time a request names them;
 * requests for a group that is loading wait in a queue. A group that does
 * not exist is kept as a Dead entry until evicted by tick.
 *
 * Threads: loop thread only. Callbacks may run before the call returns. */
#ifndef LS_GROUP_H
#define LS_GROUP_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "base/status.h"
#include "group/cgroup.h"
#include "group/stgroup.h"
#include "group/sgroup.h"

/* Group ids of the read-only groups that show each materialized table's
 * progress as committed offsets: LS_TABLE_GROUP_PREFIX "<namespace>.<table>"
 * (docs/OPERATIONS.md "Table lag as consumer-group lag"). */
#define LS_TABLE_GROUP_PREFIX "lakestream.table."

/* One such group: the table's progress through its stream as committed
 * offsets (the next offset it takes, per partition; -1 none yet). */
typedef struct ls_table_group {
    char *group_id;
    char *topic; /* the stream it materializes */
    int32_t partitions;
    int64_t *offsets;
} ls_table_group_t;
void ls_table_groups_free(ls_table_group_t *v, int n);
static inline bool ls_table_group_id(const char *group_id)
{
    return strncmp(group_id, LS_TABLE_GROUP_PREFIX, sizeof LS_TABLE_GROUP_PREFIX - 1) == 0;
}

typedef enum ls_group_state {
    LS_GROUP_EMPTY,
    LS_GROUP_PREPARING_REBALANCE,
    LS_GROUP_COMPLETING_REBALANCE,
    LS_GROUP_STABLE,
    LS_GROUP_DEAD,
} ls_group_state;
const char *ls_group_state_name(ls_group_state s); /* Kafka's spelling: "Stable", ... */

/* Outcomes; mapped to Kafka error codes at the protocol edge (h_group.c). */
typedef enum ls_group_err {
    LS_GERR_NONE = 0,
    LS_GERR_INVALID_GROUP_ID,
    LS_GERR_INVALID_SESSION_TIMEOUT,
    LS_GERR_INCONSISTENT_GROUP_PROTOCOL,
    LS_GERR_UNKNOWN_MEMBER_ID,
    LS_GERR_MEMBER_ID_REQUIRED,
    LS_GERR_ILLEGAL_GENERATION,
    LS_GERR_REBALANCE_IN_PROGRESS,
    LS_GERR_FENCED_INSTANCE_ID,
    LS_GERR_GROUP_MAX_SIZE_REACHED,
    LS_GERR_COORDINATOR_NOT_AVAILABLE,
    LS_GERR_NON_EMPTY_GROUP,
    LS_GERR_GROUP_ID_NOT_FOUND,
    LS_GERR_OFFSET_METADATA_TOO_LARGE,
    LS_GERR_GROUP_SUBSCRIBED_TO_TOPIC,
    LS_GERR_STALE_MEMBER_EPOCH,  /* consumer groups: a commit with an older member epoch */
    LS_GERR_FENCED_MEMBER_EPOCH, /* consumer groups: a newer epoch than the member's */
} ls_group_err;
const char *ls_group_err_name(ls_group_err e);

typedef struct ls_group_config {
    int32_t min_session_timeout_ms;     /* group.min.session.timeout.ms */
    int32_t max_session_timeout_ms;     /* group.max.session.timeout.ms */
    int32_t initial_rebalance_delay_ms; /* group.initial.rebalance.delay.ms */
    int32_t max_size;                   /* group.max.size */
    int32_t offset_metadata_max_bytes;  /* offset.metadata.max.bytes */
    int64_t offsets_retention_ms;       /* offsets.retention.minutes * 60000 */
    ls_cgroup_config_t consumer;        /* group.consumer.*: groups of the KIP-848 protocol */
    ls_sgroup_config_t share;           /* group.share.*: share groups (KIP-932) */
    ls_stgroup_config_t streams;        /* group.streams.*: streams groups (KIP-1071) */
} ls_group_config_t;
void ls_group_config_defaults(ls_group_config_t *cfg);

/* ---- stored state (also what hooks.load returns) ---- */

typedef struct ls_group_offset {
    int64_t offset;
    int32_t leader_epoch; /* -1 unknown */
    char *metadata;       /* NULL = null; may hold NUL bytes (see metadata_len) */
    int64_t commit_ms;    /* wall clock */
    int64_t stream_no;    /* topic incarnation the offset belongs to (-1 unknown) */
    int32_t metadata_len; /* bytes of metadata (NUL-terminated copy besides) */
} ls_group_offset_t;

typedef struct ls_group_record_member {
    char *member_id;
    char *instance_id; /* NULL for dynamic members */
    char *client_id;
    char *client_host;
    int32_t session_timeout_ms;
    int32_t rebalance_timeout_ms;
    uint8_t *metadata; /* subscription for the selected protocol */
    size_t metadata_len;
    uint8_t *assignment;
    size_t assignment_len;
} ls_group_record_member_t;

/* Kafka's group types; the values are the stored group_type byte. */
typedef enum ls_group_type_t {
    LS_GROUP_TYPE_CLASSIC = 0,
    LS_GROUP_TYPE_CONSUMER = 1, /* KIP-848 */
    LS_GROUP_TYPE_SHARE = 2,    /* KIP-932 */
    LS_GROUP_TYPE_STREAMS = 3,  /* KIP-1071 */
} ls_group_type_t;
/* "classic" / "consumer" / "share" / "streams" */
const char *ls_group_type_name(ls_group_type_t t);

/* A group's persisted metadata (no offsets). */
typedef struct ls_group_record {
    ls_group_state state; /* LS_GROUP_EMPTY or LS_GROUP_STABLE */
    ls_group_type_t type; /* not classic: version 2 of the record; generation is its
                           * group epoch, its members are in type_state
                           * (ls_cgroup_encode / ls_sgroup_encode), nmembers is 0 */
    uint8_t *type_state;
    size_t type_state_len;
    int32_t generation;
    char *protocol_type; /* NULL: offsets only, no membership ever */
    char *protocol_name;
    char *leader;
    int64_t state_ms; /* when the state was entered (wall clock) */
    ls_group_record_member_t *members;
    int nmembers;
} ls_group_record_t;

void ls_group_record_free(ls_group_record_t *r);
/* Binary encoding, version 1 (docs/FORMATS.md). decode: LS_ECORRUPT on bad input. */
uint8_t *ls_group_record_encode(const ls_group_record_t *r, size_t *len);
ls_status ls_group_record_decode(const uint8_t *p, size_t len, ls_group_record_t *out);
uint8_t *ls_group_offset_encode(const ls_group_offset_t *o, size_t *len);
ls_status ls_group_offset_decode(const uint8_t *p, size_t len, ls_group_offset_t *out);

/* Everything hooks.load found for one group. */
typedef struct ls_group_loaded_offset {
    char *topic;
    int32_t partition;
    ls_group_offset_t o;
} ls_group_loaded_offset_t;

/* A topic partition (of a pending transactional offset). */
typedef struct ls_group_tp {
    char *topic;
    int32_t partition;
} ls_group_tp_t;

typedef struct ls_group_loaded {
    bool exists; /* a group record, a committed or a pending offset was found */
    ls_group_record_t rec;
    ls_group_loaded_offset_t *offsets;
    int noffsets;
    ls_group_tp_t *txn_pending; /* partitions with pending transactional offsets */
    int ntxn_pending;
} ls_group_loaded_t;
void ls_group_loaded_free(ls_group_loaded_t *l);

/* ---- coordinator ---- */

typedef struct ls_group ls_group_t;
typedef struct ls_group_coord ls_group_coord_t;

typedef struct ls_group_hooks {
    void *arg;
    int64_t (*now_ms)(void *arg);  /* monotonic: timeouts */
    int64_t (*wall_ms)(void *arg); /* commit timestamps, retention */
    /* Start loading group_id; finish with ls_group_coord_load_done(). */
    void (*load)(void *arg, const char *group_id);
    /* Store the group's record (ls_group_snapshot()); NULL record = delete
     * the group and all its offsets. Fire and forget: failures are the
     * embedder's to report; later calls supersede earlier ones. */
    void (*persist)(void *arg, const char *group_id, const ls_group_record_t *rec);
    /* The earliest deadline changed: call ls_group_coord_tick() at at_ms. */
    void (*wakeup)(void *arg, int64_t at_ms);
    /* Current stream number of a topic, -1 when it does not exist (used to
     * hide and expire offsets of deleted topics). */
    int64_t (*topic_stream_no)(void *arg, const char *topic);
    /* A share group's member left or expired: release the records it holds
     * (group/share_store.h). May be NULL. */
    void (*share_left)(void *arg, const char *group_id, const char *member_id);
} ls_group_hooks_t;

ls_group_coord_t *ls_group_coord_new(const ls_group_config_t *cfg, const ls_group_hooks_t *hooks);
/* Answers every waiting request with COORDINATOR_NOT_AVAILABLE. */
void ls_group_coord_shutdown(ls_group_coord_t *c);
void ls_group_coord_free(ls_group_coord_t *c);
const ls_group_config_t *ls_group_coord_config(const ls_group_coord_t *c);

/* Makes the group's state available, loading it if needed, then calls
 * cb(arg, g) (g never NULL; a group that does not exist is in state Dead),
 * or cb(arg, NULL) if loading failed. */
typedef void (*ls_group_ready_cb)(void *arg, ls_group_t *g);
void ls_group_acquire(ls_group_coord_t *c, const char *group_id, ls_group_ready_cb cb, void *arg);
/* Completion of hooks.load: st != LS_OK fails the waiters (they may retry).
 * Takes ownership of *l's contents. */
void ls_group_coord_load_done(ls_group_coord_t *c, const char *group_id, ls_status st,
                              ls_group_loaded_t *l);
/* The loaded group if in memory (no load). */
ls_group_t *ls_group_find(ls_group_coord_t *c, const char *group_id);
/* Checks the invariants above over every group in memory (base/check.h:
 * panics naming the group and the rule). Runs after every tick when
 * invariant checking is on. */
void ls_group_coord_check_invariants(const ls_group_coord_t *c);
/* Runs expirations due at now; returns the next deadline (INT64_MAX: none). */
int64_t ls_group_coord_tick(ls_group_coord_t *c);
/* Drops a loaded group from memory (its coordinator moved to another
 * broker): waiting JoinGroup/SyncGroup requests are answered
 * COORDINATOR_NOT_AVAILABLE so their clients look the coordinator up again.
 * The stored state is untouched. No-op for unknown or loading groups. */
void ls_group_coord_unload(ls_group_coord_t *c, const char *group_id);
/* Ids of the groups in memory that exist (not Dead); free with ls_free each + array. */
char **ls_group_coord_ids(ls_group_coord_t *c, int *n);

/* ---- one group ---- */
const char *ls_group_id(const ls_group_t *g);
ls_group_state ls_group_get_state(const ls_group_t *g);
int32_t ls_group_generation(const ls_group_t *g);
const char *ls_group_protocol_type(const ls_group_t *g); /* NULL none */
const char *ls_group_protocol_name(const ls_group_t *g); /* NULL none */
const char *ls_group_leader(const ls_group_t *g);        /* NULL none */
int ls_group_member_count(const ls_group_t *g);
/* Snapshot for persistence / describe (caller frees with ls_group_record_free). */
void ls_group_snapshot(const ls_group_t *g, ls_group_record_t *out);

/* ---- groups of the KIP-848 consumer protocol ----
 * A group is "classic" or "consumer" (Kafka's group types). A consumer group
 * keeps its membership in an ls_cgroup_t (cgroup.h) inside the same group
 * object, so loading, fencing, offsets, retention and deletion are shared;
 * its classic state stays Empty (no classic members) and its generation is
 * the group epoch. Its record holds the whole membership (ls_cgroup_encode)
 * and is stored whenever ls_cgroup_version moves, so a coordinator that
 * takes it over keeps its members, their epochs and partitions (members get
 * a fresh session there).
 * Changing type (group.consumer.migration.policy=disabled): an Empty or Dead
 * classic group becomes a consumer group on its first heartbeat, a consumer
 * group without members becomes classic on its first JoinGroup; a group with
 * members keeps its type (GROUP_ID_NOT_FOUND / INCONSISTENT_GROUP_PROTOCOL). */
const char *ls_group_type(const ls_group_t *g);            /* ls_group_type_name of its type */
const ls_cgroup_t *ls_group_consumer(const ls_group_t *g); /* NULL: not a consumer group */
const ls_sgroup_t *ls_group_share(const ls_group_t *g);    /* NULL: not a share group */
const ls_stgroup_t *ls_group_streams(const ls_group_t *g); /* NULL: not a streams group */
/* Kafka's state name of either type ("Stable", "Reconciling", ...). */
const char *ls_group_state_label(const ls_group_t *g);
/* One ConsumerGroupHeartbeat (req->now_ms is set here). LS_GERR_GROUP_ID_NOT_FOUND:
 * a classic group with members; otherwise LS_GERR_NONE and res holds the
 * outcome (res->err). *stored: the group record changed (the caller answers
 * once it is written, so an epoch handed out survives a fail-over). */
ls_group_err ls_group_consumer_heartbeat(ls_group_t *g, ls_cgroup_hb_req_t *req,
                                         const ls_cgroup_topic_t *topics, int ntopics,
                                         ls_cgroup_hb_res_t *res, bool *stored);

/* ---- share groups (KIP-932) ----
 * A share group holds an ls_sgroup_t (sgroup.h) the same way: its record is
 * version 2 with group type 2 and stored whenever ls_sgroup_version moves,
 * before the heartbeat that moved it is answered. Only a group id nobody
 * uses becomes a share group; a share group refuses JoinGroup
 * (INCONSISTENT_GROUP_PROTOCOL), ConsumerGroupHeartbeat and offset commits
 * (GROUP_ID_NOT_FOUND), as Kafka's. One ShareGroupHeartbeat (req->now_ms is
 * set here): LS_GERR_GROUP_ID_NOT_FOUND for a group of another type. */
ls_group_err ls_group_share_heartbeat(ls_group_t *g, ls_sgroup_hb_req_t *req,
                                      const ls_cgroup_topic_t *topics, int ntopics,
                                      ls_sgroup_hb_res_t *res, bool *stored);

/* ---- streams groups (KIP-1071) ----
 * A streams group holds an ls_stgroup_t (stgroup.h) the same way (record
 * version 2, group type 3, stored whenever ls_stgroup_version moves, before
 * the heartbeat is answered). A group id nobody uses or an Empty classic
 * group (its offsets kept: a Kafka Streams application moving from the
 * classic protocol) becomes a streams group on its first heartbeat; a
 * streams group without members becomes classic on its first JoinGroup;
 * one with members refuses JoinGroup (INCONSISTENT_GROUP_PROTOCOL) and
 * ConsumerGroupHeartbeat (GROUP_ID_NOT_FOUND). Offset commits follow the
 * consumer groups' member-epoch rules. One StreamsGroupHeartbeat (req->now_ms
 * is set here): LS_GERR_GROUP_ID_NOT_FOUND for a group of another type. */
ls_group_err ls_group_streams_heartbeat(ls_group_t *g, ls_stgroup_hb_req_t *req,
                                        ls_stgroup_hb_res_t *res, bool *stored);

typedef struct ls_group_protocol {
    const char *name;
    const uint8_t *metadata;
    size_t len;
} ls_group_protocol_t;

typedef struct ls_group_join_req {
    const char *member_id;   /* "" = unknown */
    const char *instance_id; /* NULL = dynamic member */
    const char *client_id;
    const char *client_host;
    int32_t session_timeout_ms;
    int32_t rebalance_timeout_ms; /* < 0: session timeout */
    const char *protocol_type;
    const ls_group_protocol_t *protocols;
    int nprotocols;
    bool require_known_member_id; /* JoinGroup v4+: MEMBER_ID_REQUIRED first */
} ls_group_join_req_t;

typedef struct ls_group_join_member {
    const char *member_id;
    const char *instance_id;
    const uint8_t *metadata;
    size_t len;
} ls_group_join_member_t;

/* Valid only during the callback. */
typedef struct ls_group_join_result {
    ls_group_err err;
    int32_t generation; /* -1 on error */
    const char *protocol_type;
    const char *protocol_name;
    const char *leader;                    /* "" on error */
    const char *member_id;                 /* assigned id (also with MEMBER_ID_REQUIRED) */
    const ls_group_join_member_t *members; /* the leader only */
    int nmembers;
} ls_group_join_result_t;
typedef void (*ls_group_join_cb)(void *arg, const ls_group_join_result_t *res);

typedef struct ls_group_sync_result {
    ls_group_err err;
    const char *protocol_type;
    const char *protocol_name;
    const uint8_t *assignment;
    size_t len;
} ls_group_sync_result_t;
typedef void (*ls_group_sync_cb)(void *arg, const ls_group_sync_result_t *res);

typedef struct ls_group_assignment {
    const char *member_id;
    const uint8_t *assignment;
    size_t len;
} ls_group_assignment_t;

void ls_group_join(ls_group_t *g, const ls_group_join_req_t *req, ls_group_join_cb cb, void *arg);
void ls_group_sync(ls_group_t *g, int32_t generation, const char *member_id,
                   const char *instance_id, const char *protocol_type, const char *protocol_name,
                   const ls_group_assignment_t *assignments, int nassignments, ls_group_sync_cb cb,
                   void *arg);
ls_group_err ls_group_heartbeat(ls_group_t *g, int32_t generation, const char *member_id,
                                const char *instance_id);
/* One member leaving (member_id "" with an instance id: by instance). */
ls_group_err ls_group_leave(ls_group_t *g, const char *member_id, const char *instance_id);

/* Offsets. commit_check validates membership for a commit (generation < 0:
 * a commit from outside group management, allowed only while Empty). On
 * LS_GERR_NONE the caller persists, then applies each offset with
 * ls_group_offset_put (which also brings a Dead group to life as Empty). */
ls_group_err ls_group_commit_check(ls_group_t *g, int32_t generation, const char *member_id,
                                   const char *instance_id);
/* OffsetFetch v9 of a consumer group: a member (member_id not NULL/"" or
 * epoch >= 0) must exist and fetch with its current epoch
 * (STALE_MEMBER_EPOCH otherwise); classic groups check nothing. */
ls_group_err ls_group_fetch_check(ls_group_t *g, const char *member_id, int32_t member_epoch);
void ls_group_offset_put(ls_group_t *g, const char *topic, int32_t partition,
                         const ls_group_offset_t *o);
/* NULL when nothing is committed (or it belongs to a deleted incarnation). */
const ls_group_offset_t *ls_group_offset_get(ls_group_t *g, const char *topic, int32_t partition);
/* Iterates committed offsets: for (int64_t i = 0; ls_group_offset_next(g, &i, &t, &p, &o);) */
bool ls_group_offset_next(ls_group_t *g, int64_t *iter, const char **topic, int32_t *partition,
                          const ls_group_offset_t **o);
void ls_group_offset_del(ls_group_t *g, const char *topic, int32_t partition);
/* OffsetDelete rules: may the offsets of topic be deleted now? */
ls_group_err ls_group_offset_delete_check(ls_group_t *g, const char *topic);
/* DeleteGroups: an Empty group becomes Dead and hooks.persist(NULL) removes it. */
ls_group_err ls_group_delete(ls_group_t *g);
/* Transactional offsets (KIP-447; stored by group/group_txn.h). A group
 * knows whether it *may* hold pending offsets: set when a load finds some
 * and by every TxnOffsetCommit, cleared only by a reread finding none. While
 * set, the committed offsets in memory may lag the store (a marker written
 * by another broker) and the group is not deleted by retention.
 * txn_commit_check: TxnOffsetCommit's membership rules (Kafka's: a request
 * without generation, member and instance id is accepted in any state; with
 * them they must match as for OffsetCommit, but a rebalance in progress does
 * not refuse it; a Dead group accepts only generation < 0). */
ls_group_err ls_group_txn_commit_check(ls_group_t *g, int32_t generation, const char *member_id,
                                       const char *instance_id);
/* Pending offsets are being written: a Dead group comes to life as Empty
 * (persisted, as by ls_group_offset_put) and the flag is set. */
void ls_group_txn_offsets_added(ls_group_t *g);
bool ls_group_txn_pending(const ls_group_t *g);
/* How many times pending offsets were added (a reread's snapshot). */
uint64_t ls_group_txn_adds(const ls_group_t *g);
/* Replaces the committed offsets in memory and the flag with a reread of the
 * store (takes over l's offsets); txn_adds: ls_group_txn_adds when the read
 * was submitted — if pending offsets were added since, the flag stays set. A
 * Dead group is left alone: it was deleted after the read began. */
void ls_group_offsets_reload(ls_group_t *g, ls_group_loaded_t *l, uint64_t txn_adds);
/* Retention: drops offsets of deleted topics and expired offsets, and an
 * Empty group with none left (and no pending transactional offsets). Returns the number of offsets
 * dropped; the caller deletes them from the store via the (topic, partition) pairs it receives
 * through drop_cb before they are removed from memory. */
int ls_group_expire(ls_group_t *g, void (*drop_cb)(void *arg, const char *topic, int32_t partition),
                    void *arg);
#endif
