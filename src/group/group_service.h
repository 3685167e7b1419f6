/* The group coordinator embedded in a broker: the pure state machine
 * (group.h) wired to the metadata store, a libuv timer and the catalog.
 *
 * Keyspace (docs/FORMATS.md, "Consumer groups"):
 *   /ls/group/meta/<gid>                              group record
 *   /ls/group/offsets/<gid>/<topic>/<partition %010d> committed offset
 * <gid> is the group id with every byte outside [A-Za-z0-9._-] written as
 * %XX, so it never contains '/' and a group's keys are one prefix.
 *
 *   /ls/group/owner/<gid>                             owner record (fencing,
 *                                                      group_service.c)
 *   /ls/group/pending/<gid>/<producer id>/<topic>/<partition %010d>
 *                                     pending transactional offset (group_txn.h)
 * Writes go through one ordered writer: jobs run in submission order;
 * consecutive small jobs are batched into one metadata txn (group commit:
 * a later write of the same key replaces an earlier one in the batch). A
 * job with more keys than a txn holds is split into several txns, each
 * atomic. Loads and listings run on worker threads, like the writes.
 *
 * Threads: every function here runs on the loop thread; store calls run on
 * worker threads through the offload function given at open. */
#ifndef LS_GROUP_SERVICE_H
#define LS_GROUP_SERVICE_H
#include <stdbool.h>
#include <uv.h>
#include "base/config.h"
#include "group/group.h"
#include "group/share_store.h"
#include "meta/meta.h"
#include "stream/catalog.h"

typedef struct ls_group_service ls_group_service_t;
typedef void (*ls_group_offload_fn)(void *ctx, void (*fn)(void *arg), void (*after)(void *arg),
                                    void *arg);

/* The coordinator's settings from the broker's (group.*, offsets.*,
 * group.consumer.*). */
void ls_group_config_from_broker(ls_group_config_t *gc, const ls_config_t *cfg);

/* The share partitions this broker serves: a share group's member that
 * leaves or expires here releases its records there. */
void ls_group_service_set_shares(ls_group_service_t *s, ls_share_store_t *shares);

ls_group_service_t *ls_group_service_open(uv_loop_t *loop, ls_meta_t *meta, ls_catalog_t *catalog,
                                          const ls_group_config_t *cfg,
                                          int64_t retention_check_interval_ms, int32_t node_id,
                                          ls_group_offload_fn offload, void *offload_ctx);
/* Proves this broker still owns a group it holds in memory before its state
 * is served (OffsetFetch): reads the group's owner record and compares it
 * with the fence taken at load. cb(arg, true) when it still owns it (or the
 * group is not in memory: loading claims it afresh); cb(arg, false) after
 * dropping a stale copy, or when the store cannot be read (retriable). */
void ls_group_service_verify(ls_group_service_t *s, const char *group_id,
                             void (*cb)(void *arg, bool owned), void *arg);
ls_group_coord_t *ls_group_service_coord(ls_group_service_t *s);
/* Answers waiting requests, stops the timers. Writes in flight finish. */
void ls_group_service_stop(ls_group_service_t *s);
void ls_group_service_free(ls_group_service_t *s);

typedef struct ls_group_commit_item {
    const char *topic;
    int32_t partition;
    ls_group_offset_t o; /* ignored by delete */
} ls_group_commit_item_t;
typedef void (*ls_group_write_cb)(void *arg, ls_status st);
/* Stores committed offsets (copied before return); cb on the loop. */
void ls_group_service_commit(ls_group_service_t *s, const char *group_id,
                             const ls_group_commit_item_t *items, int n, ls_group_write_cb cb,
                             void *arg);
void ls_group_service_delete_offsets(ls_group_service_t *s, const char *group_id,
                                     const ls_group_commit_item_t *items, int n,
                                     ls_group_write_cb cb, void *arg);

/* TxnOffsetCommit: stores the offsets pending for transaction txn_seq of
 * producer_id (group_txn.h), fenced like commit; cb on the loop. */
void ls_group_service_txn_commit(ls_group_service_t *s, const char *group_id, int64_t producer_id,
                                 int64_t txn_seq, const ls_group_commit_item_t *items, int n,
                                 ls_group_write_cb cb, void *arg);

/* ls_group_txn_marker over the service's store, for handlers that settle a
 * transaction's offsets themselves (TxnOffsetCommit racing a decision).
 * Blocking: worker threads only. */
ls_status ls_group_service_txn_marker(ls_group_service_t *s, const char *group_id,
                                      int64_t producer_id, int64_t txn_seq, bool commit);

/* Rereads a loaded group's committed offsets and pending transactional
 * offsets from the store, in order with its writes, and installs the
 * committed ones in memory (ls_group_offsets_reload): how the coordinator
 * sees a transaction's group marker written by any broker. Used for groups
 * with ls_group_txn_pending() only (OffsetFetch, retention), so groups
 * without transactions never pay for it. cb on the loop with the partitions
 * that still have pending offsets (valid during the call; a partition may
 * appear once per producer); LS_EFENCED when the group is no longer loaded
 * by this broker. */
typedef void (*ls_group_refresh_cb)(void *arg, ls_status st, const ls_group_tp_t *pending,
                                    int npending);
void ls_group_service_refresh(ls_group_service_t *s, const char *group_id, ls_group_refresh_cb cb,
                              void *arg);

/* cb runs once every write submitted before it is done (st: the last batch's). */
void ls_group_service_barrier(ls_group_service_t *s, ls_group_write_cb cb, void *arg);

typedef struct ls_group_listing {
    char *group_id;
    char *protocol_type; /* "" none */
    ls_group_state state;
    const char *state_name; /* Kafka's, of either group type (static) */
    const char *group_type; /* "classic" / "consumer" (static) */
} ls_group_listing_t;
/* Every existing group: stored ones, with the in-memory state where loaded.
 * v is freed by the service after cb returns. */
void ls_group_service_list(ls_group_service_t *s,
                           void (*cb)(void *arg, ls_status st, ls_group_listing_t *v, int n),
                           void *arg);
/* Drops from memory every loaded group for which owned(arg, id) is false
 * (this broker stopped coordinating it). */
void ls_group_service_retain(ls_group_service_t *s, bool (*owned)(void *arg, const char *group_id),
                             void *arg);
/* Runs the retention pass now (also run every retention_check_interval_ms). */
void ls_group_service_cleanup(ls_group_service_t *s);

/* Keys (heap strings). */
char *ls_group_key_meta(const char *group_id);
char *ls_group_key_offsets_prefix(const char *group_id);
char *ls_group_key_owner(const char *group_id);
char *ls_group_key_offset(const char *group_id, const char *topic, int32_t partition);
/* Blocking: loads one group's record, offsets and the partitions with
 * pending transactional offsets (worker threads, CLI). */
ls_status ls_group_store_load(ls_meta_t *meta, const char *group_id, ls_group_loaded_t *out);
/* Every committed offset of every group, from the store (any thread,
 * blocking), in key order (a group's offsets together): cb per offset. */
typedef void (*ls_group_offset_fn)(void *arg, const char *group_id, const char *topic,
                                   int32_t partition, int64_t offset);
ls_status ls_group_store_offsets(ls_meta_t *meta, ls_group_offset_fn cb, void *arg);
#endif
