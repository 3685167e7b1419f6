/* Dynamic broker configs: the broker settings that Kafka lets an operator
 * change at run time (IncrementalAlterConfigs / AlterConfigs on a BROKER
 * resource) and that mean something on a diskless, leaderless broker.
 *
 * Layers, highest first (each as Kafka's ConfigSource):
 *   DYNAMIC_DEFAULT_BROKER_CONFIG  the cluster-wide value stored in the
 *                                  metadata store (catalog record
 *                                  /ls/cluster/broker-config), set through
 *                                  the default broker resource (name "");
 *   STATIC_BROKER_CONFIG           the broker's properties file, environment
 *                                  or flags (ls_config_t);
 *   DEFAULT_CONFIG                 Kafka's default (also ls_config_t's).
 * There is no per-broker dynamic layer: any broker serves any partition, so a
 * limit that differed by broker would differ by which broker a client
 * happened to reach; a BROKER resource naming one broker is refused.
 *
 * Every broker watches the record (through the catalog), so a change made on
 * one applies on all of them without a restart; each reader asks for the
 * effective value when it needs it (produce per request, retention per check,
 * the listener per accept and once a second), never caching it.
 *
 * Any other broker setting is refused per key with a message that says it is
 * static (or unknown): nothing is stored and ignored. */
#ifndef LS_STREAM_BROKER_CONFIG_H
#define LS_STREAM_BROKER_CONFIG_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/config.h"
#include "stream/catalog.h"

typedef enum ls_bcfg_key {
    LS_BCFG_LOG_RETENTION_MS,        /* default retention.ms of topics */
    LS_BCFG_LOG_RETENTION_BYTES,     /* default retention.bytes */
    LS_BCFG_MESSAGE_MAX_BYTES,       /* default max.message.bytes */
    LS_BCFG_TIMESTAMP_TYPE,          /* default message.timestamp.type (LS_BCFG_TS_*) */
    LS_BCFG_TIMESTAMP_BEFORE_MAX_MS, /* default message.timestamp.before.max.ms */
    LS_BCFG_TIMESTAMP_AFTER_MAX_MS,  /* default message.timestamp.after.max.ms */
    LS_BCFG_MAX_CONNECTIONS,         /* Kafka connections per broker (0: descriptor budget) */
    LS_BCFG_MAX_CONNECTIONS_PER_IP,  /* Kafka connections from one address, per broker */
    LS_BCFG_NKEYS
} ls_bcfg_key;

/* Values of LS_BCFG_TIMESTAMP_TYPE. */
#define LS_BCFG_TS_CREATE_TIME 0
#define LS_BCFG_TS_LOG_APPEND_TIME 1

/* Kafka's name of a key, and the key of a name (-1: not a dynamic config). */
const char *ls_bcfg_name(ls_bcfg_key k);
int ls_bcfg_find(const char *name);
/* Kafka's ConfigType of a key (LS_KAFKA_CONFIG_TYPE_* numbering: 3 INT,
 * 5 LONG, 2 STRING) and one line of documentation. */
int8_t ls_bcfg_type(ls_bcfg_key k);
const char *ls_bcfg_doc(ls_bcfg_key k);

/* Whether name=value may be stored as a dynamic default: LS_OK, or LS_EINVAL with err
 * naming the key and why (static setting, unknown setting, bad value). cfg
 * is this broker's static configuration (message.max.bytes is bounded by its
 * wal.buffer.max.bytes). */
ls_status ls_bcfg_check(const ls_config_t *cfg, const char *name, const char *value, char *err,
                        size_t errlen);

/* The value from the broker's static configuration. */
int64_t ls_bcfg_static(const ls_config_t *cfg, ls_bcfg_key k);
/* The effective value: the cluster's dynamic default when one is set (and
 * valid), else static_value; *dynamic (may be NULL) says which. Any thread,
 * non-blocking. */
int64_t ls_bcfg_effective(ls_catalog_t *c, ls_bcfg_key k, int64_t static_value, bool *dynamic);
/* Text form of a value of k (as DescribeConfigs shows it). */
const char *ls_bcfg_format(ls_bcfg_key k, int64_t v, char *buf, size_t cap);
#endif
