/* Dynamic broker configs: see broker_config.h for the layers and why there
 * is no per-broker layer. One table row per dynamic key: Kafka's name, type,
 * bounds, the ls_config_t field that is its static value. A stored value is
 * checked when it is set (ls_bcfg_check); one that no longer parses (written
 * by another version, or by hand) is reported once per distinct value and
 * the static value applies. */
#include "stream/broker_config.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/diag.h"

/* LS_KAFKA_CONFIG_TYPE_* values (Kafka's ConfigType), kept here so this layer
 * does not include the protocol's headers. */
#define TYPE_STRING 2
#define TYPE_INT 3
#define TYPE_LONG 5

typedef struct bcfg_def {
    const char *name;
    int8_t type;
    int64_t min, max;
    const char *doc;
} bcfg_def_t;

static const bcfg_def_t defs[LS_BCFG_NKEYS] = {
    [LS_BCFG_LOG_RETENTION_MS] = {"log.retention.ms", TYPE_LONG, -1, INT64_MAX,
                                  "Default retention.ms of topics (-1: keep forever)."},
    [LS_BCFG_LOG_RETENTION_BYTES] = {"log.retention.bytes", TYPE_LONG, -1, INT64_MAX,
                                     "Default retention.bytes of topics (-1: no limit)."},
    [LS_BCFG_MESSAGE_MAX_BYTES] = {"message.max.bytes", TYPE_INT, 0, INT32_MAX,
                                   "Default max.message.bytes of topics: the largest record "
                                   "batch accepted."},
    [LS_BCFG_TIMESTAMP_TYPE] = {"log.message.timestamp.type", TYPE_STRING, 0, 1,
                                "Default message.timestamp.type of topics: CreateTime or "
                                "LogAppendTime."},
    [LS_BCFG_TIMESTAMP_BEFORE_MAX_MS] = {"log.message.timestamp.before.max.ms", TYPE_LONG, 0,
                                         INT64_MAX,
                                         "Default message.timestamp.before.max.ms of topics."},
    [LS_BCFG_TIMESTAMP_AFTER_MAX_MS] = {"log.message.timestamp.after.max.ms", TYPE_LONG, 0,
                                        INT64_MAX,
                                        "Default message.timestamp.after.max.ms of topics."},
    [LS_BCFG_MAX_CONNECTIONS] = {"max.connections", TYPE_INT, 0, 1000000,
                                 "Kafka connections a broker accepts at once (0: as many as "
                                 "its descriptor limit allows); beyond it new ones wait."},
    [LS_BCFG_MAX_CONNECTIONS_PER_IP] = {"max.connections.per.ip", TYPE_INT, 1, 1000000,
                                        "Kafka connections a broker accepts from one address; "
                                        "a new one beyond it is closed."},
};

const char *ls_bcfg_name(ls_bcfg_key k) { return defs[k].name; }
int8_t ls_bcfg_type(ls_bcfg_key k) { return defs[k].type; }
const char *ls_bcfg_doc(ls_bcfg_key k) { return defs[k].doc; }

int ls_bcfg_find(const char *name)
{
    for (int k = 0; k < LS_BCFG_NKEYS; k++)
        if (strcmp(defs[k].name, name) == 0) return k;
    return -1;
}

/* Parses a value of k; false when it is not one. */
static bool bcfg_parse(ls_bcfg_key k, const char *v, int64_t *out)
{
    if (k == LS_BCFG_TIMESTAMP_TYPE) {
        if (strcmp(v, "CreateTime") == 0)
            *out = LS_BCFG_TS_CREATE_TIME;
        else if (strcmp(v, "LogAppendTime") == 0)
            *out = LS_BCFG_TS_LOG_APPEND_TIME;
        else
            return false;
        return true;
    }
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno || end == v || *end || x < defs[k].min || x > defs[k].max) return false;
    *out = x;
    return true;
}

static void dynamic_list(char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = 0;
    for (int k = 0; k < LS_BCFG_NKEYS && n < cap; k++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%s", k ? ", " : "", defs[k].name);
}

ls_status ls_bcfg_check(const ls_config_t *cfg, const char *name, const char *value, char *err,
                        size_t errlen)
{
    char list[512];
    int k = ls_bcfg_find(name);
    if (k < 0) {
        dynamic_list(list, sizeof list);
        if (ls_config_key_known(cfg, name))
            snprintf(err, errlen,
                     "Broker config %s cannot be changed dynamically in Lakestream: "
                     "set it in the properties file, a LAKESTREAM_* variable or a flag and "
                     "restart the broker (dynamic broker configs: %s)",
                     name, list);
        else
            snprintf(err, errlen,
                     "Unknown or unsupported dynamic broker config: %s (dynamic "
                     "broker configs: %s)",
                     name, list);
        return LS_EINVAL;
    }
    int64_t v;
    if (!value || !bcfg_parse((ls_bcfg_key)k, value, &v)) {
        if (k == LS_BCFG_TIMESTAMP_TYPE)
            snprintf(err, errlen,
                     "Invalid value %s for configuration %s: must be one of "
                     "[CreateTime, LogAppendTime]",
                     value ? value : "null", name);
        else
            snprintf(err, errlen,
                     "Invalid value %s for configuration %s: must be an integer in "
                     "[%" PRId64 ", %" PRId64 "]",
                     value ? value : "null", name, defs[k].min, defs[k].max);
        return LS_EINVAL;
    }
    if (k == LS_BCFG_MESSAGE_MAX_BYTES && v > cfg->wal_buffer_max_bytes) {
        snprintf(err, errlen,
                 "Invalid value %s for configuration %s: larger than this broker's "
                 "wal.buffer.max.bytes (%" PRId64 "), so a batch of that size could never be "
                 "admitted",
                 value, name, cfg->wal_buffer_max_bytes);
        return LS_EINVAL;
    }
    return LS_OK;
}

int64_t ls_bcfg_static(const ls_config_t *cfg, ls_bcfg_key k)
{
    switch (k) {
    case LS_BCFG_LOG_RETENTION_MS: return cfg->log_retention_ms;
    case LS_BCFG_LOG_RETENTION_BYTES: return cfg->log_retention_bytes;
    case LS_BCFG_MESSAGE_MAX_BYTES: return cfg->message_max_bytes;
    case LS_BCFG_TIMESTAMP_TYPE:
        return cfg->log_message_timestamp_type &&
                       strcmp(cfg->log_message_timestamp_type, "LogAppendTime") == 0
                   ? LS_BCFG_TS_LOG_APPEND_TIME
                   : LS_BCFG_TS_CREATE_TIME;
    case LS_BCFG_TIMESTAMP_BEFORE_MAX_MS: return cfg->log_message_timestamp_before_max_ms;
    case LS_BCFG_TIMESTAMP_AFTER_MAX_MS: return cfg->log_message_timestamp_after_max_ms;
    case LS_BCFG_MAX_CONNECTIONS: return cfg->max_connections;
    case LS_BCFG_MAX_CONNECTIONS_PER_IP: return cfg->max_connections_per_ip;
    case LS_BCFG_NKEYS: break;
    }
    return 0;
}

int64_t ls_bcfg_effective(ls_catalog_t *c, ls_bcfg_key k, int64_t static_value, bool *dynamic)
{
    ls_namespace_t *bc = ls_catalog_broker_config(c);
    const char *stored = NULL;
    for (int i = 0; i < bc->nprops && !stored; i++)
        if (strcmp(bc->props[i].key, defs[k].name) == 0) stored = bc->props[i].value;
    int64_t v = static_value;
    bool dyn = false;
    if (stored) {
        dyn = bcfg_parse(k, stored, &v);
        if (!dyn) {
            v = static_value;
            LS_WARN_RL("config",
                       "dynamic broker config %s=%s is not valid here; using the "
                       "broker's static value %" PRId64 " (fix it with kafka-configs "
                       "--entity-type brokers --entity-default)",
                       defs[k].name, stored, static_value);
        }
    }
    ls_namespace_release(bc);
    if (dynamic) *dynamic = dyn;
    return v;
}

const char *ls_bcfg_format(ls_bcfg_key k, int64_t v, char *buf, size_t cap)
{
    if (k == LS_BCFG_TIMESTAMP_TYPE)
        snprintf(buf, cap, "%s", v == LS_BCFG_TS_LOG_APPEND_TIME ? "LogAppendTime" : "CreateTime");
    else
        snprintf(buf, cap, "%" PRId64, v);
    return buf;
}
