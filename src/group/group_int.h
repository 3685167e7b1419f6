/* Private to group/group*.c: the group object, its members and offsets,
 * and the functions its files share. group.c holds the classic protocol's
 * state machine, the group object and the coordinator; group_offsets.c the
 * committed offsets, the commit checks, deletion and retention;
 * group_typed.c the consumer, share and streams groups' memberships inside
 * a group. Design note: group.h. */
#ifndef LS_GROUP_INT_H
#define LS_GROUP_INT_H
#include "group/group.h"

#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/check.h"
#include "base/diag.h"
#include "base/hash.h"
#include "base/i64map.h"
#include "base/uuid.h"

typedef struct member {
    char *id;
    char *instance_id;
    char *client_id;
    char *client_host;
    int32_t session_ms;
    int32_t rebalance_ms;
    int nprotocols;
    char **pnames;
    uint8_t **pmeta;
    size_t *plen;
    uint8_t *assignment;
    size_t assignment_len;
    int64_t deadline; /* session expiry (monotonic) unless awaiting join/sync */
    ls_group_join_cb join_cb;
    void *join_arg;
    ls_group_sync_cb sync_cb;
    void *sync_arg;
} member_t;

typedef struct pending {
    char *id;
    int64_t deadline;
} pending_t;

typedef struct otopic {
    char *name;
    ls_i64map_t parts; /* partition -> ls_group_offset_t* */
} otopic_t;

typedef struct waiter {
    struct waiter *next;
    ls_group_ready_cb cb;
    void *arg;
} waiter_t;

struct ls_group {
    ls_group_coord_t *c;
    struct ls_group *hnext;
    char *id;
    bool loading;
    waiter_t *whead, *wtail;
    ls_group_state state;
    int32_t generation;
    char *protocol_type;
    char *protocol_name;
    char *leader;
    int64_t state_wall_ms;
    member_t **members;
    int nmembers, capmembers;
    pending_t *pending;
    int npending, cappending;
    int64_t join_deadline;
    int64_t join_started;
    bool initial_delay;
    otopic_t *topics;
    int ntopics, captopics;
    ls_cgroup_t *cg;    /* a consumer-type group's membership (group.h); NULL: classic */
    uint64_t cg_stored; /* ls_cgroup_version when its record was last stored */
    ls_sgroup_t *sg;    /* a share group's membership (group.h); NULL: not a share group */
    uint64_t sg_stored; /* ls_sgroup_version when its record was last stored */
    ls_stgroup_t *st;   /* a streams group's membership (group.h); NULL: not one */
    uint64_t st_stored; /* ls_stgroup_version when its record was last stored */
    bool txn_pending;   /* may hold pending transactional offsets (group.h) */
    uint64_t
        txn_adds; /* TxnOffsetCommits so far: a reread older than the last one keeps the flag */
};

struct ls_group_coord {
    ls_group_config_t cfg;
    ls_group_hooks_t h;
    ls_group_t **buckets;
    size_t nbuckets;
    size_t ngroups;
    bool shut;
};

/* group.c: clocks and timers of the coordinator's hooks */
int64_t ls_grp_now_ms(ls_group_coord_t *c);
int64_t ls_grp_wall_ms(ls_group_coord_t *c);
void ls_grp_wakeup(ls_group_coord_t *c, int64_t at);
/* group.c: strings */
void ls_grp_set_str(char **dst, const char *s);
bool ls_grp_str_eq(const char *a, const char *b);
/* group.c: classic members */
member_t *ls_grp_find_member(ls_group_t *g, const char *id);
int ls_grp_member_protocol_index(const member_t *m, const char *name);
void ls_grp_remove_pending(ls_group_t *g, int i);
bool ls_grp_instance_fenced(ls_group_t *g, const char *member_id, const char *instance_id);
void ls_grp_heartbeat_reset(ls_group_t *g, member_t *m);
/* group.c: the group record is written (ordered, by the hooks' writer); a
 * Dead group comes back to life */
void ls_grp_persist(ls_group_t *g);
void ls_grp_revive(ls_group_t *g);
/* group_offsets.c */
void ls_grp_clear_offsets(ls_group_t *g);
/* group_typed.c: the type of a group, the members of its consumer, share or
 * streams membership (0 for classic), dropping that membership, and after a
 * heartbeat or tick: the generation follows the epoch, the record is stored
 * when it moved (true: stored) */
ls_group_type_t ls_grp_type(const ls_group_t *g);
int ls_grp_typed_members(const ls_group_t *g);
void ls_grp_drop_typed(ls_group_t *g);
bool ls_grp_consumer_settle(ls_group_t *g, bool force);
bool ls_grp_share_settle(ls_group_t *g, bool force);
bool ls_grp_streams_settle(ls_group_t *g, bool force);
ls_sgroup_t *ls_grp_share_new(ls_group_t *g, int32_t epoch_floor);
void ls_grp_share_member_left(void *arg, const char *member_id, bool expired);
#endif
