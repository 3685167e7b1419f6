/* The metadata keyspace: every key Lakestream keeps in ls_meta, by prefix,
 * in one place. docs/FORMATS.md "Metadata keyspace" describes the record
 * under each key and who writes it; a new kind of key gets its prefix here
 * and its row there.
 *
 * Invariants:
 *  - every key lies under LS_KEY_ROOT: the catalog and the log heads watch
 *    that one prefix and sort the events out by the prefixes below;
 *  - no prefix below is a prefix of another's keys except where the table
 *    says so (LS_KEY_WALGC_TURN is one key beside the LS_KEY_OWNER_COMPACT
 *    range; "/ls/group/..." are four separate ranges);
 *  - a key is its prefix followed by the parts FORMATS.md names (ids in
 *    fixed-width hex, offsets and partitions in fixed-width decimal, so that
 *    keys sort as the numbers do). Modules build theirs by concatenating a
 *    prefix with their format: LS_KEY_HEAD "%016llx".
 *
 * Only macros: any layer allowed to include meta/ may use them, and the
 * strings stay compile-time constants (sizeof, static arrays, switch-free
 * prefix compares). */
#ifndef LS_META_KEYS_H
#define LS_META_KEYS_H

#define LS_KEY_ROOT "/ls/"

/* cluster-wide records (one key each) */
#define LS_KEY_CLUSTER_ID "/ls/cluster/id"
#define LS_KEY_CLUSTER_QUOTAS "/ls/cluster/quotas"
#define LS_KEY_CLUSTER_ACLS "/ls/cluster/acls"
#define LS_KEY_CLUSTER_BROKER_CONFIG "/ls/cluster/broker-config"
#define LS_KEY_COUNTER_STREAM_NO "/ls/counter/stream_no"
#define LS_KEY_COUNTER_PRODUCER_ID "/ls/counter/producer_id"
#define LS_KEY_GROUPCFG "/ls/groupcfg"
#define LS_KEY_CLIENT_METRICS "/ls/clientmetrics"

/* membership: /ls/brokers/<broker_id %010d> */
#define LS_KEY_BROKERS "/ls/brokers/"

/* the catalog: /ls/ns/<ns>, /ls/stream/<ns>/<name>, /ls/tomb/<uuid> */
#define LS_KEY_NS "/ls/ns/"
#define LS_KEY_STREAM "/ls/stream/"
#define LS_KEY_TOMB "/ls/tomb/"

/* logs: /ls/head/<log_id %016x>, /ls/start/<log_id %016x>,
 * /ls/log/<log_id %016x>/idx/<last_offset %020d>,
 * /ls/log/<log_id %016x>/abort/<first_offset %020d> */
#define LS_KEY_HEAD "/ls/head/"
#define LS_KEY_START "/ls/start/"
#define LS_KEY_LOG "/ls/log/"
#define LS_KEY_LOG_IDX "/idx/"     /* after LS_KEY_LOG <log_id> */
#define LS_KEY_LOG_ABORT "/abort/" /* after LS_KEY_LOG <log_id> */
/* WAL objects: /ls/walobj/<object key>; the WAL GC turn (one key) */
#define LS_KEY_WALOBJ "/ls/walobj/"
#define LS_KEY_WALGC_TURN "/ls/owner/walgc"

/* compaction: /ls/owner/compact/<log_id %016x> (and table-<stream_no>),
 * /ls/kcgc/<log_id %016x>/<object key>, /ls/coldref/<log_id %016x> */
#define LS_KEY_OWNER_COMPACT "/ls/owner/compact/"
#define LS_KEY_KCGC "/ls/kcgc/"
#define LS_KEY_COLDREF "/ls/coldref/"

/* tables: /ls/table/<ns>/<table>, /ls/tablestat/<stream_no> */
#define LS_KEY_TABLE "/ls/table/"
#define LS_KEY_TABLESTAT "/ls/tablestat/"

/* groups: /ls/group/{meta,owner}/<gid>, /ls/group/offsets/<gid>/<topic>/<p>,
 * /ls/group/pending/<gid>/<producer id>/<topic>/<p>,
 * /ls/share/state/<gid>/<topic id>/<p> */
#define LS_KEY_GROUP_META "/ls/group/meta/"
#define LS_KEY_GROUP_OFFSETS "/ls/group/offsets/"
#define LS_KEY_GROUP_OWNER "/ls/group/owner/"
#define LS_KEY_GROUP_PENDING "/ls/group/pending/"
#define LS_KEY_SHARE_STATE "/ls/share/state/"

/* transactions: /ls/txn/state/<transactional id> */
#define LS_KEY_TXN_STATE "/ls/txn/state/"

/* security: /ls/users/<name> (SCRAM credentials) */
#define LS_KEY_USERS "/ls/users/"

/* the schema registry's keys, all under this root (registry/registry_store.c) */
#define LS_KEY_REGISTRY "/ls/registry/"

/* `lakestream check`: a probe key written and deleted again,
 * /ls/check/<pid>-<wall ms> */
#define LS_KEY_CHECK "/ls/check/"
#endif
