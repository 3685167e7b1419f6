/* The share partitions a broker serves (KIP-932), kept durably in the
 * metadata store, and the share sessions of the members fetching from it.
 *
 * Why the store and not a coordinator. With diskless storage every broker can
 * read every partition, so the state of a share partition (group/share_partition.h)
 * lives in the metadata store, one record per (group, topic, partition):
 *   /ls/share/state/<gid>/<topic id>/<partition %010d>   ls_sharep_encode
 * and any broker can serve it. A broker loads the record on first use and
 * keeps it in memory with the record's mod_rev; every write is a
 * compare-and-set of that mod_rev. When another broker wrote the record
 * meanwhile (a client followed stale metadata, or the partition moved), the
 * write fails, this broker drops its copy (its locks go with it: the records
 * become available again, as after any takeover) and the next request
 * reloads. So two brokers never both hand out a record from one version of
 * the state.
 *
 * The rule callers keep (share_partition.h "Durability"): an answer that
 * acquired or finished records is sent only after ls_share_store_sync says a
 * state that includes those changes is stored. Writes of one partition run
 * one at a time; a sync asked for while one runs is served by the next write,
 * which carries every change made by then (group commit).
 *
 * Entries are reference counted: ls_share_store_get hands out a reference,
 * ls_share_part_release returns it; a dropped entry (a failed write) is freed
 * when its last reference goes, and syncs on it fail with LS_ECONFLICT.
 *
 * Share sessions (ShareFetch's ShareSessionEpoch): per (group, member) on
 * this broker, the partitions the member fetches and the next epoch expected.
 * Epoch 0 opens (or replaces) a session, -1 closes it, anything else must be
 * the expected epoch. At most group.share.max.share.sessions sessions per
 * broker; a member that leaves its group loses its sessions here.
 *
 * Threads: every function runs on the loop thread; store calls run on worker
 * threads through the offload function. */
#ifndef LS_SHARE_STORE_H
#define LS_SHARE_STORE_H
#include <stdbool.h>
#include <stdint.h>

#include "base/status.h"
#include "base/uuid.h"
#include "group/share_partition.h"
#include "meta/meta.h"

typedef struct ls_share_store ls_share_store_t;
typedef struct ls_share_part ls_share_part_t;
typedef void (*ls_share_offload_fn)(void *ctx, void (*fn)(void *arg), void (*after)(void *arg),
                                    void *arg);

/* max_sessions: group.share.max.share.sessions. */
ls_share_store_t *ls_share_store_new(ls_meta_t *meta, const ls_sharep_config_t *cfg,
                                     int max_sessions, ls_share_offload_fn offload,
                                     void *offload_ctx);
/* Waiting gets and syncs are answered LS_ESHUTDOWN-like (LS_EIO) first. */
void ls_share_store_free(ls_share_store_t *st);
const ls_sharep_config_t *ls_share_store_config(const ls_share_store_t *st);

/* The state of (group, topic id, partition), loaded if needed; a partition
 * without a stored state starts at init_offset (share.auto.offset.reset).
 * cfg: the group's settings (NULL: the store's), applied from now on
 * (ls_sharep_set_config). cb gets a reference (release it) or NULL with the
 * load's status. */
typedef void (*ls_share_get_cb)(void *arg, ls_status st, ls_share_part_t *p);
void ls_share_store_get(ls_share_store_t *st, const char *group_id, const ls_uuid_t *topic_id,
                        int32_t partition, int64_t init_offset, const ls_sharep_config_t *cfg,
                        ls_share_get_cb cb, void *arg);
ls_sharep_t *ls_share_part_state(ls_share_part_t *p);
void ls_share_part_release(ls_share_part_t *p);

/* Calls cb once a state with every change made so far is stored (at once
 * when nothing changed); LS_ECONFLICT when another broker wrote the state
 * first (the changes are lost and the entry dropped), else the store's error. */
typedef void (*ls_share_sync_cb)(void *arg, ls_status st);
void ls_share_part_sync(ls_share_part_t *p, ls_share_sync_cb cb, void *arg);

/* A member of the group left or expired: its acquired records become
 * available again in every partition of the group this broker holds, and
 * its sessions here close. */
void ls_share_store_member_left(ls_share_store_t *st, const char *group_id, const char *member_id);

/* The key prefix of a group's partition states ("/ls/share/state/<gid>/");
 * ls_free it. A deleted group's range goes with the group's own keys. */
char *ls_share_key_group_prefix(const char *group_id);
/* The group was deleted (or its offsets reset): this broker's copies of its
 * partition states are dropped, so the next fetch loads what the store
 * holds then. */
void ls_share_store_forget_group(ls_share_store_t *st, const char *group_id);

/* ---- the offsets admin APIs (read and written in the store directly) ---- */
typedef struct ls_share_offset {
    ls_uuid_t topic_id;
    int32_t partition;
    int64_t start_offset; /* the SPSO */
    int64_t finished;     /* records in [SPSO, SPEO) acknowledged or archived */
} ls_share_offset_t;
typedef void (*ls_share_list_cb)(void *arg, ls_status st, const ls_share_offset_t *v, int n);
/* Every stored partition state of the group (undecodable ones left out,
 * logged). */
void ls_share_store_list(ls_share_store_t *st, const char *group_id, ls_share_list_cb cb,
                         void *arg);
typedef void (*ls_share_done_cb)(void *arg, ls_status st);
/* Each v[i] partition starts over at v[i].start_offset with nothing in
 * flight (AlterShareGroupOffsets on an empty group). */
void ls_share_store_reset(ls_share_store_t *st, const char *group_id, const ls_share_offset_t *v,
                          int n, ls_share_done_cb cb, void *arg);
/* The group's states of one topic go (DeleteShareGroupOffsets). */
void ls_share_store_delete_topic(ls_share_store_t *st, const char *group_id,
                                 const ls_uuid_t *topic_id, ls_share_done_cb cb, void *arg);

/* ---- share sessions ---- */
typedef struct ls_share_tp {
    ls_uuid_t topic_id;
    int32_t partition;
} ls_share_tp_t;

typedef enum ls_share_session_err {
    LS_SSERR_NONE = 0,
    LS_SSERR_NOT_FOUND,     /* SHARE_SESSION_NOT_FOUND */
    LS_SSERR_INVALID_EPOCH, /* INVALID_SHARE_SESSION_EPOCH */
    LS_SSERR_LIMIT_REACHED, /* SHARE_SESSION_LIMIT_REACHED */
} ls_share_session_err;

/* One request's session step: epoch 0 opens a session with add (replacing
 * the member's old one), a positive epoch must be the expected one and adds
 * add / removes forget, -1 checks the session exists (the caller closes it
 * with ls_share_session_close once the acknowledgements are done). On
 * success *parts / *nparts are the session's partitions (valid until the
 * next call on the store). */
ls_share_session_err ls_share_session_step(ls_share_store_t *st, const char *group_id,
                                           const char *member_id, int32_t epoch,
                                           const ls_share_tp_t *add, int nadd,
                                           const ls_share_tp_t *forget, int nforget,
                                           const ls_share_tp_t **parts, int *nparts);
void ls_share_session_close(ls_share_store_t *st, const char *group_id, const char *member_id);
/* The open session's id (each opening, epoch 0, makes a new one), 0 with
 * none: a request that waited checks it before acquiring, so a session
 * closed or reopened meanwhile gets nothing locked for it. */
uint64_t ls_share_session_id(ls_share_store_t *st, const char *group_id, const char *member_id);
/* The session was opened on client connection conn_id (ls_kreq_conn_id). */
void ls_share_session_bind(ls_share_store_t *st, const char *group_id, const char *member_id,
                           uint64_t conn_id);
/* Connection conn_id closed: as Kafka's broker, each share session opened on
 * it ends and its member's records on this broker go back (as
 * ls_share_store_member_left); the client opens a new session on its next
 * connection. */
void ls_share_store_conn_closed(ls_share_store_t *st, uint64_t conn_id);
int ls_share_session_count(const ls_share_store_t *st);
#endif
