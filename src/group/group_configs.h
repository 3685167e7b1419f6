/* Dynamic group configs (Kafka's GroupConfig, KIP-848): per-group overrides
 * of the consumer protocol's session timeout and heartbeat interval, set
 * with IncrementalAlterConfigs / AlterConfigs on a GROUP resource
 * (`kafka-configs --entity-type groups`).
 *
 * Stored as one record of the metadata store, /ls/groupcfg: a JSON object
 * {"<group id>": {"<key>": "<value>", ...}, ...}, followed by every broker
 * (meta/meta_follow.h), so the coordinator of a group, on whichever broker,
 * applies an override set on any broker at the group's next heartbeat. A
 * group's overrides stay when the group is deleted (as Kafka's do).
 *
 * Keys (Kafka's): consumer.session.timeout.ms and
 * consumer.heartbeat.interval.ms, positive ints; the effective heartbeat
 * interval must stay below the effective session timeout (Kafka's rule);
 * the same for streams.session.timeout.ms and streams.heartbeat.interval.ms
 * (streams groups), and streams.num.standby.replicas, 0 to 2.
 * share.session.timeout.ms and share.heartbeat.interval.ms (share groups,
 * the same rules); share.record.lock.duration.ms,
 * share.delivery.count.limit and share.partition.max.record.locks, which the
 * group's share partitions apply from the next fetch, each within the
 * broker's group.share.{min,max}.* bounds.
 * share.auto.offset.reset, earliest, latest or by_duration:<duration>: where
 * a share partition without state starts (by_duration: the first record
 * with a timestamp at most that long ago); share.isolation.level, read_uncommitted or
 * read_committed: whether share consumers get records of open and aborted
 * transactions. Kafka's other share.* and streams.* group keys are refused
 * with the list of those served.
 *
 * Threads: lookups from any thread (a rwlock over the parsed copy); changes
 * block on the store (worker threads). */
#ifndef LS_GROUP_CONFIGS_H
#define LS_GROUP_CONFIGS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/config.h"
#include "meta/meta.h"

#define LS_GROUP_CONFIG_SESSION "consumer.session.timeout.ms"
#define LS_GROUP_CONFIG_HEARTBEAT "consumer.heartbeat.interval.ms"
/* earliest | latest (Kafka's default); ls_group_configs_get gives 1 / 0;
 * or by_duration:<ISO-8601 duration> (KIP-1106): ls_group_configs_get gives
 * nothing, ls_group_config_duration_ms of the text the duration */
#define LS_GROUP_CONFIG_SHARE_RESET "share.auto.offset.reset"
/* read_uncommitted (Kafka's default) | read_committed; gives 0 / 1 */
#define LS_GROUP_CONFIG_SHARE_ISOLATION "share.isolation.level"
/* share groups' session and heartbeat, and what the share partitions of the
 * group apply: how long a fetched record stays locked to its member and how
 * many deliveries a record gets before it is archived */
#define LS_GROUP_CONFIG_SHARE_SESSION "share.session.timeout.ms"
#define LS_GROUP_CONFIG_SHARE_HEARTBEAT "share.heartbeat.interval.ms"
#define LS_GROUP_CONFIG_SHARE_LOCK "share.record.lock.duration.ms"
#define LS_GROUP_CONFIG_SHARE_DELIVERY "share.delivery.count.limit"
#define LS_GROUP_CONFIG_SHARE_LOCKS "share.partition.max.record.locks"
#define LS_GROUP_CONFIG_STREAMS_SESSION "streams.session.timeout.ms"
#define LS_GROUP_CONFIG_STREAMS_HEARTBEAT "streams.heartbeat.interval.ms"
#define LS_GROUP_CONFIG_STREAMS_STANDBYS "streams.num.standby.replicas" /* 0..2 */

typedef struct ls_group_configs ls_group_configs_t;

/* Reads and follows the record; NULL and err on failure. */
ls_group_configs_t *ls_group_configs_open(ls_meta_t *meta, char *err, size_t errlen);
void ls_group_configs_close(ls_group_configs_t *gc);

/* A key and value as SET would store them: LS_OK, or LS_EINVAL with err naming the
 * key and what is accepted. value NULL: the key alone (DELETE). */
ls_status ls_group_config_check(const char *key, const char *value, char *err, size_t errlen);

/* The group's override of key; false when it has none. */
bool ls_group_configs_get(ls_group_configs_t *gc, const char *group, const char *key,
                          int32_t *value);

/* The group's value of key as stored (any key); false when it has none. */
bool ls_group_configs_get_text(ls_group_configs_t *gc, const char *group, const char *key,
                               char *buf, size_t cap);

/* share.auto.offset.reset's by_duration:<duration> (Java's Duration.parse
 * form, PnDTnHnMn.nS, not negative): the duration in ms; -1 for any other
 * text. */
int64_t ls_group_config_duration_ms(const char *value);

/* For the keys whose values are words (share.*): the word ls_group_configs_get
 * gave as v; NULL for int keys. */
const char *ls_group_config_word(const char *key, int32_t v);

/* The groups with overrides (ls_free each and the array). */
char **ls_group_configs_groups(ls_group_configs_t *gc, int *n);

/* One change of a group's overrides: value NULL deletes the key. */
typedef struct ls_group_config_op {
    const char *key;
    const char *value;
} ls_group_config_op_t;
/* A key's bounds, inclusive, from the broker's group.<kind>.{min,max}.* keys. */
typedef struct ls_group_config_bound {
    int32_t min, max;
} ls_group_config_bound_t;
/* The broker's values of one group kind's session and heartbeat keys, for
 * the heartbeat-below-session rule, and their bounds
 * (group.<kind>.{min,max}.*: a value outside is refused, as Kafka's
 * GroupConfig does). */
typedef struct ls_group_config_kind_defaults {
    int32_t session, heartbeat;
    ls_group_config_bound_t session_bounds, heartbeat_bounds;
} ls_group_config_kind_defaults_t;
typedef struct ls_group_config_defaults {
    ls_group_config_kind_defaults_t consumer, share, streams;
    /* group.share.{min,max}.{record.lock.duration.ms,delivery.count.limit,
     * partition.max.record.locks} */
    ls_group_config_bound_t share_lock_bounds, share_delivery_bounds, share_locks_bounds;
} ls_group_config_defaults_t;
/* The broker configuration's values and bounds. */
ls_group_config_defaults_t ls_group_config_defaults_of(const ls_config_t *cfg);
/* Applies ops (every one checked by ls_group_config_check) to the group's
 * overrides, or replaces them by ops (replace: AlterConfigs), by
 * compare-and-set. LS_EINVAL with err when the result breaks the
 * heartbeat-below-session rule; validate_only checks and writes nothing. */
ls_status ls_group_configs_alter(ls_group_configs_t *gc, const char *group, bool replace,
                                 const ls_group_config_op_t *ops, int n,
                                 const ls_group_config_defaults_t *defs, bool validate_only,
                                 char *err, size_t errlen);
#endif
