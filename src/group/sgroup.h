/* Share groups (KIP-932) membership, as pure logic: the ShareGroupHeartbeat
 * state machine and the "simple" assignor. No sockets, no store I/O, no wall
 * clock (the caller passes now_ms and the topic metadata). Unit tests drive
 * it directly (tests/unit/group/test_sgroup.c). The records themselves are shared
 * out per partition by group/share_partition.h.
 *
 * Epochs. As in a consumer group (group/cgroup.h), the group epoch counts
 * changes of the group's inputs (a member joins or leaves, a subscription
 * changes, a subscribed topic appears or grows), and when it passes the
 * assignment epoch the assignor computes a new target assignment stamped
 * with the group epoch. Unlike a consumer group there is no revocation
 * step: several members may read one partition at once (the share partition
 * hands each record to one member), so a member takes its target at once:
 * every successful heartbeat answers with the assignment epoch as the
 * member epoch and the member's target partitions. A heartbeat must carry
 * the member epoch last answered or the one before it (that answer may have
 * been lost); anything else is FENCED_MEMBER_EPOCH, also for a known member
 * that sends 0, as Kafka's coordinator does.
 *
 * The simple assignor (Kafka's SimpleAssignor, our own code): for each set of
 * topics with the same subscribers, with M members and P partitions, every
 * partition gets ceil(M / P) members ("sharing"), and those S * P places are
 * spread so member counts differ by at most one; previous assignments are
 * kept where that balance allows (sticky). More members than partitions
 * therefore means members share partitions; fewer means each has several.
 *
 * Invariants:
 *  - member epoch <= assignment epoch <= group epoch; the group epoch never
 *    decreases and starts above the floor given at creation;
 *  - every partition of a subscribed topic is assigned to at least one
 *    subscriber, and only to members subscribed to its topic;
 *  - a member that leaves or whose session expires is reported to the
 *    on_leave callback, so the embedder releases its acquired records.
 *
 * Threads: one caller at a time (the loop thread). */
#ifndef LS_SGROUP_H
#define LS_SGROUP_H
#include <stdbool.h>
#include <stdint.h>
#include "group/cgroup.h"

#define LS_SGROUP_EPOCH_JOIN 0
#define LS_SGROUP_EPOCH_LEAVE (-1)

/* Outcomes; mapped to Kafka error codes at the protocol edge. */
typedef enum ls_sgroup_err {
    LS_SGERR_NONE = 0,
    LS_SGERR_INVALID_REQUEST, /* res.message names the field */
    LS_SGERR_UNKNOWN_MEMBER_ID,
    LS_SGERR_FENCED_MEMBER_EPOCH,
    LS_SGERR_GROUP_MAX_SIZE_REACHED,
} ls_sgroup_err;
const char *ls_sgroup_err_name(ls_sgroup_err e);

typedef struct ls_sgroup_config {
    int32_t session_timeout_ms;    /* group.share.session.timeout.ms (default 45000) */
    int32_t heartbeat_interval_ms; /* group.share.heartbeat.interval.ms (default 5000) */
    int32_t max_size;              /* group.share.max.size (default 200) */
} ls_sgroup_config_t;
void ls_sgroup_config_defaults(ls_sgroup_config_t *cfg);

typedef struct ls_sgroup ls_sgroup_t;

/* on_leave(arg, member_id, expired): called (synchronously, inside heartbeat
 * or tick) for every member that leaves (expired false) or whose session
 * runs out (true). May be NULL. */
typedef void (*ls_sgroup_leave_fn)(void *arg, const char *member_id, bool expired);
ls_sgroup_t *ls_sgroup_new(const char *group_id, const ls_sgroup_config_t *cfg, int32_t epoch_floor,
                           ls_sgroup_leave_fn on_leave, void *arg);
void ls_sgroup_free(ls_sgroup_t *g);
int32_t ls_sgroup_epoch(const ls_sgroup_t *g);
int32_t ls_sgroup_assignment_epoch(const ls_sgroup_t *g);
int ls_sgroup_member_count(const ls_sgroup_t *g);
/* "Empty" or "Stable" (Kafka's share group states of a live group). */
const char *ls_sgroup_state_name(const ls_sgroup_t *g);

typedef struct ls_sgroup_hb_req {
    const char *member_id;     /* chosen by the client (v1) */
    int32_t member_epoch;      /* 0 join, -1 leave, else the epoch last answered */
    const char *rack_id;       /* NULL: unchanged */
    const char *const *topics; /* SubscribedTopicNames; NULL (ntopics -1): unchanged */
    int ntopics;
    const char *client_id, *client_host; /* of the connection (describe only) */
    /* the group's session timeout and heartbeat interval from now on (the
     * broker's or the group's share.* configs); 0: unchanged */
    int32_t session_timeout_ms, heartbeat_interval_ms;
    int64_t now_ms;
} ls_sgroup_hb_req_t;

/* Valid until the next call on the group. */
typedef struct ls_sgroup_hb_res {
    ls_sgroup_err err;
    const char *message; /* static text or NULL */
    int32_t member_epoch;
    int32_t heartbeat_interval_ms;
    const ls_cgroup_tp_t *assigned;
    int nassigned;
} ls_sgroup_hb_res_t;

/* One ShareGroupHeartbeat. topics: every topic that exists now. */
void ls_sgroup_heartbeat(ls_sgroup_t *g, const ls_sgroup_hb_req_t *req,
                         const ls_cgroup_topic_t *topics, int ntopics, ls_sgroup_hb_res_t *res);
/* Removes members whose session expired by now_ms; returns the next
 * deadline (INT64_MAX: none). */
int64_t ls_sgroup_tick(ls_sgroup_t *g, int64_t now_ms);

/* Describe: i in [0, member_count). */
typedef struct ls_sgroup_member_info {
    const char *member_id;
    const char *rack_id;     /* NULL none */
    const char *client_id;   /* "" unknown */
    const char *client_host; /* "" unknown */
    const char *const *topics;
    int ntopics;
    int32_t member_epoch;
    const ls_cgroup_tp_t *assigned;
    int nassigned;
} ls_sgroup_member_info_t;
void ls_sgroup_member(const ls_sgroup_t *g, int i, ls_sgroup_member_info_t *out);

/* Counts the changes ls_sgroup_encode shows (members, epochs,
 * subscriptions, assignments, described fields); session refreshes do not
 * move it. The embedder stores the group when it moved, before answering
 * the heartbeat that moved it. */
uint64_t ls_sgroup_version(const ls_sgroup_t *g);
/* The stored form (docs/FORMATS.md "Share group state"): epochs, the
 * subscribed topics' metadata and every member with its subscription and
 * assignment, so a coordinator that takes the group over keeps its members
 * and epochs. Deadlines are not stored: decode gives every member a fresh
 * session from now_ms. decode: NULL on any inconsistency. */
void ls_sgroup_encode(const ls_sgroup_t *g, ls_buf_t *b);
ls_sgroup_t *ls_sgroup_decode(const uint8_t *p, size_t len, const char *group_id,
                              const ls_sgroup_config_t *cfg, ls_sgroup_leave_fn on_leave, void *arg,
                              int64_t now_ms);
#endif
