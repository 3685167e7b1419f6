/* DescribeConfigs (key 32) and the topic-configuration model shared with
 * CreateTopics.
 *
 * Topics (resource type 2): every Kafka topic config is described, with its
 * effective value and source (DescribeConfigsResponse v1+ ConfigSource):
 *   TOPIC_CONFIG          a stored override (stream config property);
 *   DYNAMIC_DEFAULT_BROKER_CONFIG  supplied by a cluster-wide dynamic broker
 *                         config (retention.ms <- log.retention.ms,
 *                         retention.bytes <- log.retention.bytes,
 *                         max.message.bytes <- message.max.bytes,
 *                         message.timestamp.* <- log.message.timestamp.*);
 *   STATIC_BROKER_CONFIG  supplied by that broker setting in the broker's
 *                         own configuration, where it differs from Kafka's
 *                         default;
 *   DEFAULT_CONFIG        Kafka's default, which is also Lakestream's.
 * Storage-engine settings that mean nothing on diskless storage (segment.*,
 * flush.*, index.*) are still described with Kafka's defaults so tools that
 * read them keep working. min.insync.replicas is 1: durability comes from the
 * object store, not replicas. Every numeric value is checked against Kafka 4's
 * own bounds (LogConfig's atLeast validators, kafka_mins below) even where it
 * has no effect here, so a value Kafka refuses is never stored.
 *
 * Table policy (lakestream.table.*, stream/policy.h): every field is
 * described with its resolved value and the layer it came from, mapped onto
 * ConfigSource as stream -> TOPIC_CONFIG, namespace ->
 * DYNAMIC_DEFAULT_BROKER_CONFIG (a default stored in the metadata store),
 * cluster -> STATIC_BROKER_CONFIG, built-in -> DEFAULT_CONFIG; synonyms list
 * every layer that sets it, in precedence order, and the documentation says
 * whether the value is applied or only stored. lakestream.table.enabled.since
 * is read-only (kept by the broker). Every change of a stream's configs goes
 * through ls_kafka_topic_policy_apply: it resolves the new policy (table name
 * valid and not the table of another topic) and keeps enabled.since.
 *
 * Brokers (resource type 4): this broker's settings from ls_config_t, read
 * only, except the dynamic broker configs (stream/broker_config.h): those are
 * writable and show their layers (DYNAMIC_DEFAULT_BROKER_CONFIG, then
 * STATIC_BROKER_CONFIG, then DEFAULT_CONFIG). The default broker resource
 * (empty name) lists only the dynamic configs set cluster-wide, as Kafka's
 * default entity does. Topic configs whose default a broker setting supplies
 * (retention.ms <- log.retention.ms, max.message.bytes <- message.max.bytes,
 * message.timestamp.* <- log.message.timestamp.*) show the same layers under
 * the topic's own override. Store URLs are reported as sensitive (null
 * value) since S3 URLs may carry credentials. Broker loggers (type 8)
 * describe as an empty list.
 *
 * Groups (type 32) describe their dynamic configs (group/group_configs.h);
 * client metrics (type 16) a KIP-714 subscription's metrics, interval.ms
 * and match (telemetry/subscriptions.h), each set one as
 * CLIENT_METRICS_CONFIG and the others with their defaults.
 *
 * ListConfigResources (key 74, KIP-1142) names the config resources there
 * are, as Kafka lists them: groups with dynamic configs, client-metrics
 * subscriptions, a broker-logger and a broker resource per live broker,
 * then every topic; v0 (KIP-714's ListClientMetricsResources) asks for
 * client metrics only. A type Kafka
 * does not list (UNKNOWN, the ANY of ACL filters) fails the request with
 * UNSUPPORTED_VERSION, as Kafka; CLUSTER DESCRIBE_CONFIGS first.
 *
 * Everything here is an in-memory lookup: the handler answers synchronously. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/config.h"
#include "group/group_configs.h"
#include "kafka/handlers.h"
#include "kafka/msg.h"
#include "kafka/names.h"
#include "kafka/services.h"
#include "telemetry/subscriptions.h"
#include "stream/broker_config.h"
#include "stream/policy.h"

typedef enum {
    VAL_FIXED,  /* def is the value */
    VAL_BROKER, /* the broker setting broker_name supplies it: a dynamic broker config
                 * (stream/broker_config.h); def is Kafka's default */
} val_kind;

typedef struct topic_config_def {
    const char *name;
    int8_t type; /* LS_KAFKA_CONFIG_TYPE_* */
    val_kind kind;
    const char *def;         /* VAL_FIXED value; VAL_BROKER: Kafka's default */
    const char *broker_name; /* broker-level synonym, or NULL */
    const char *allowed;     /* comma-separated allowed values (STRING/LIST), or NULL */
    const char *doc;
} topic_config_def_t;

#define LONG_MAX_S "9223372036854775807"

/* Sorted by name (DescribeConfigs answers in this order). */
static const topic_config_def_t topic_defs[] = {
    {"cleanup.policy", LS_KAFKA_CONFIG_TYPE_LIST, VAL_FIXED, "delete", "log.cleanup.policy",
     "delete,compact", "Retention policy for old log segments: delete and/or compact."},
    {"compression.gzip.level", LS_KAFKA_CONFIG_TYPE_INT, VAL_FIXED, "-1", NULL, NULL,
     "Level the broker compresses with when compression.type is gzip (-1: zlib's default)."},
    {"compression.lz4.level", LS_KAFKA_CONFIG_TYPE_INT, VAL_FIXED, "9", NULL, NULL,
     "Level the broker compresses with when compression.type is lz4."},
    {"compression.type", LS_KAFKA_CONFIG_TYPE_STRING, VAL_FIXED, "producer", "compression.type",
     "uncompressed,zstd,lz4,snappy,gzip,producer",
     "Codec the topic's batches are stored in: 'producer' keeps them as sent; a codec (or "
     "'uncompressed') makes the broker recompress batches sent in another one, as Kafka does."},
    {"compression.zstd.level", LS_KAFKA_CONFIG_TYPE_INT, VAL_FIXED, "3", NULL, NULL,
     "Level the broker compresses with when compression.type is zstd."},
    {"delete.retention.ms", LS_KAFKA_CONFIG_TYPE_LONG, VAL_FIXED, "86400000",
     "log.cleaner.delete.retention.ms", NULL,
     "Applied (compacted topics): a tombstone stays at least this long after the key "
     "compaction that first kept it (its batch's delete horizon, KIP-534), then goes at the "
     "next key compaction of the partition."},
    {"file.delete.delay.ms", LS_KAFKA_CONFIG_TYPE_LONG, VAL_FIXED, "60000",
     "log.segment.delete.delay.ms", NULL,
     "How long after the topic is deleted its storage (index entries, compacted objects, WAL "
     "objects it alone holds) is deleted."},
    {"flush.messages", LS_KAFKA_CONFIG_TYPE_LONG, VAL_FIXED, LONG_MAX_S,
     "log.flush.interval.messages", NULL, "No effect: data is durable in the object store."},
    {"flush.ms", LS_KAFKA_CONFIG_TYPE_LONG, VAL_FIXED, LONG_MAX_S, "log.flush.interval.ms", NULL,
     "No effect: data is durable in the object store."},
    {"index.interval.bytes", LS_KAFKA_CONFIG_TYPE_INT, VAL_FIXED, "4096",
     "log.index.interval.bytes", NULL, "No effect on diskless storage."},
    {LS_KAFKA_KEY_VALIDATION_KEY, LS_KAFKA_CONFIG_TYPE_BOOLEAN, VAL_FIXED, "false", NULL, NULL,
     "Produce-time schema validation of keys: every non-null key must be in the schema "
     "registry's wire format with a registered schema id and bytes that decode by it (Avro: "
     "one datum of the schema; JSON: one JSON text; Protobuf: well-formed message indexes and "
     "wire bytes), or the partition's records are refused with INVALID_RECORD."},
    {LS_KAFKA_VALUE_VALIDATION_KEY, LS_KAFKA_CONFIG_TYPE_BOOLEAN, VAL_FIXED, "false", NULL, NULL,
     "Produce-time schema validation of values, as lakestream.key.schema.validation does for "
     "keys; null values (tombstones) pass."},
    {"local.retention.bytes", LS_KAFKA_CONFIG_TYPE_LONG, VAL_FIXED, "-2", NULL, NULL,
     "Tiered storage: bytes kept on local disk. Diskless: no record is ever on a local disk, "
     "every one is in the object store from its acknowledgement (no effect)."},
    {"local.retention.ms", LS_KAFKA_CONFIG_TYPE_LONG, VAL_FIXED, "-2", NULL, NULL,
     "Tiered storage: time kept on local disk. Diskless: no effect (see local.retention.bytes)."},
    {"max.compaction.lag.ms", LS_KAFKA_CONFIG_TYPE_LONG, VAL_FIXED, LONG_MAX_S,
     "log.cleaner.max.compaction.lag.ms", NULL,
     "Applied (compacted topics): a partition whose oldest uncompacted record is older than "
     "this is key-compacted whatever its dirty ratio, and records leave the WAL hot window "
     "(compaction.min.age.ms) by this age at the latest."},
    {"max.message.bytes", LS_KAFKA_CONFIG_TYPE_INT, VAL_BROKER, "1048588", "message.max.bytes",
     NULL, "Largest record batch size allowed."},
    {"message.timestamp.after.max.ms", LS_KAFKA_CONFIG_TYPE_LONG, VAL_BROKER, "3600000",
     "log.message.timestamp.after.max.ms", NULL,
     "Allowed time a record timestamp may be ahead of the broker's clock."},
    {"message.timestamp.before.max.ms", LS_KAFKA_CONFIG_TYPE_LONG, VAL_BROKER, LONG_MAX_S,
     "log.message.timestamp.before.max.ms", NULL,
     "Allowed time a record timestamp may be behind the broker's clock."},
    {"message.timestamp.type", LS_KAFKA_CONFIG_TYPE_STRING, VAL_BROKER, "CreateTime",
     "log.message.timestamp.type", "CreateTime,LogAppendTime",
     "Whether record timestamps are the producer's (CreateTime) or the broker's."},
    {"min.cleanable.dirty.ratio", LS_KAFKA_CONFIG_TYPE_DOUBLE, VAL_FIXED, "0.5",
     "log.cleaner.min.cleanable.ratio", NULL,
     "Applied (compacted topics): key compaction of a partition starts when its bytes not "
     "yet key-compacted are at least this share of its compacted bytes (0 to 1)."},
    {"min.compaction.lag.ms", LS_KAFKA_CONFIG_TYPE_LONG, VAL_FIXED, "0",
     "log.cleaner.min.compaction.lag.ms", NULL,
     "Applied (compacted topics): records younger than this (by timestamp) are not "
     "key-compacted."},
    {"min.insync.replicas", LS_KAFKA_CONFIG_TYPE_INT, VAL_FIXED, "1", "min.insync.replicas", NULL,
     "Durability comes from the object store; accepted for compatibility."},
    {"preallocate", LS_KAFKA_CONFIG_TYPE_BOOLEAN, VAL_FIXED, "false", "log.preallocate", NULL,
     "No effect on diskless storage."},
    {"remote.log.copy.disable", LS_KAFKA_CONFIG_TYPE_BOOLEAN, VAL_FIXED, "false", NULL, NULL,
     "Tiered storage: stop copying to remote storage. Diskless: the object store is the only "
     "storage (no effect)."},
    {"remote.log.delete.on.disable", LS_KAFKA_CONFIG_TYPE_BOOLEAN, VAL_FIXED, "false", NULL, NULL,
     "Tiered storage: delete remote data when disabling it. Diskless: no effect."},
    {"remote.storage.enable", LS_KAFKA_CONFIG_TYPE_BOOLEAN, VAL_FIXED, "false", NULL, NULL,
     "Tiered storage on/off. Diskless: every record is in the object store either way; true "
     "and false mean the same here."},
    {"retention.bytes", LS_KAFKA_CONFIG_TYPE_LONG, VAL_BROKER, "-1", "log.retention.bytes", NULL,
     "Maximum bytes retained per partition (-1: no limit)."},
    {"retention.ms", LS_KAFKA_CONFIG_TYPE_LONG, VAL_BROKER, "604800000", "log.retention.ms", NULL,
     "How long records are retained (-1: forever)."},
    {"segment.bytes", LS_KAFKA_CONFIG_TYPE_INT, VAL_FIXED, "1073741824", "log.segment.bytes", NULL,
     "No effect on diskless storage."},
    {"segment.index.bytes", LS_KAFKA_CONFIG_TYPE_INT, VAL_FIXED, "10485760",
     "log.index.size.max.bytes", NULL, "No effect on diskless storage."},
    {"segment.jitter.ms", LS_KAFKA_CONFIG_TYPE_LONG, VAL_FIXED, "0", "log.roll.jitter.ms", NULL,
     "No effect on diskless storage."},
    {"segment.ms", LS_KAFKA_CONFIG_TYPE_LONG, VAL_FIXED, "604800000", "log.roll.ms", NULL,
     "No effect on diskless storage: there are no segments to roll; records become "
     "compactable when they leave the WAL hot window (compaction.min.age.ms, bounded by "
     "max.compaction.lag.ms)."},
    {"unclean.leader.election.enable", LS_KAFKA_CONFIG_TYPE_BOOLEAN, VAL_FIXED, "false",
     "unclean.leader.election.enable", NULL, "No effect: partitions have no replicas to elect."},
};
#define NTOPIC_DEFS ((int)(sizeof topic_defs / sizeof topic_defs[0]))

static const topic_config_def_t *topic_def_find(const char *name)
{
    for (int i = 0; i < NTOPIC_DEFS; i++)
        if (strcmp(topic_defs[i].name, name) == 0) return &topic_defs[i];
    return NULL;
}

const char *ls_kafka_topic_config_value(const ls_stream_t *s, const char *name)
{
    const char *v = ls_stream_config_get(s, name);
    const topic_config_def_t *d = v ? NULL : topic_def_find(name);
    return v ? v : d && d->kind == VAL_FIXED ? d->def : NULL;
}

static const char *prop_get(const ls_prop_t *v, int n, const char *key)
{
    for (int i = 0; i < n; i++)
        if (v[i].key && strcmp(v[i].key, key) == 0) return v[i].value;
    return NULL;
}

static bool key_wanted(const ls_kstr_t *keys, int32_t nkeys, const char *name)
{
    if (nkeys < 0) return true;
    for (int32_t i = 0; i < nkeys; i++)
        if (ls_kstr_eq(keys[i], name)) return true;
    return false;
}

typedef ls_kafka_DescribeConfigsResponse_DescribeConfigsResourceResult cfg_entry_t;
typedef ls_kafka_DescribeConfigsResponse_DescribeConfigsSynonym cfg_syn_t;

/* The broker layers of a config: the cluster's dynamic default (NULL when
 * none is set), the static value and whether it differs from Kafka's. */
typedef struct broker_layers {
    const char *dynamic;
    const char *stat;
    bool stat_set;
} broker_layers_t;

static broker_layers_t broker_layers_of(ls_arena_t *a, const ls_kafka_services_t *b, ls_bcfg_key k,
                                        const char *kafka_default)
{
    char buf[32];
    broker_layers_t l = {NULL, NULL, false};
    int64_t sv = ls_bcfg_static(b->cfg, k);
    l.stat = ls_arena_printf(a, "%s", ls_bcfg_format(k, sv, buf, sizeof buf));
    l.stat_set = strcmp(l.stat, kafka_default) != 0;
    bool dyn;
    int64_t v = ls_bcfg_effective(b->catalog, k, sv, &dyn);
    if (dyn) l.dynamic = ls_arena_printf(a, "%s", ls_bcfg_format(k, v, buf, sizeof buf));
    return l;
}

/* Synonyms of a value supplied by the broker layers, in precedence order. */
static int add_broker_synonyms(const broker_layers_t *l, const char *name,
                               const char *kafka_default, cfg_syn_t *out)
{
    int n = 0;
    if (l->dynamic)
        out[n++] = (cfg_syn_t){ls_kstr_c(name), ls_kstr_c(l->dynamic),
                               LS_KAFKA_CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG};
    if (l->stat_set)
        out[n++] = (cfg_syn_t){ls_kstr_c(name), ls_kstr_c(l->stat),
                               LS_KAFKA_CONFIG_SOURCE_STATIC_BROKER_CONFIG};
    out[n++] = (cfg_syn_t){ls_kstr_c(name), ls_kstr_c(kafka_default),
                           LS_KAFKA_CONFIG_SOURCE_DEFAULT_CONFIG};
    return n;
}

static const char *broker_layers_value(const broker_layers_t *l, int8_t *source)
{
    *source = l->dynamic    ? LS_KAFKA_CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG
              : l->stat_set ? LS_KAFKA_CONFIG_SOURCE_STATIC_BROKER_CONFIG
                            : LS_KAFKA_CONFIG_SOURCE_DEFAULT_CONFIG;
    return l->dynamic ? l->dynamic : l->stat;
}

static void topic_entry(ls_arena_t *a, const ls_kafka_services_t *b, const topic_config_def_t *d,
                        const char *override, bool synonyms, bool docs, cfg_entry_t *e)
{
    int8_t dsource = LS_KAFKA_CONFIG_SOURCE_DEFAULT_CONFIG;
    const char *dval = d->def;
    broker_layers_t bl = {NULL, NULL, false};
    if (d->kind == VAL_BROKER) {
        bl = broker_layers_of(a, b, (ls_bcfg_key)ls_bcfg_find(d->broker_name), d->def);
        dval = broker_layers_value(&bl, &dsource);
    }
    e->Name = ls_kstr_c(d->name);
    e->Value = ls_kstr_c(override ? override : dval);
    e->ReadOnly = false;
    e->ConfigSource = override ? LS_KAFKA_CONFIG_SOURCE_TOPIC_CONFIG : dsource;
    e->IsSensitive = false;
    e->ConfigType = d->type;
    e->Documentation = docs ? ls_kstr_c(d->doc) : ls_kstr_null();
    if (!synonyms) return;
    /* Synonyms in precedence order: the override, the broker layers, the default. */
    e->Synonyms = ls_arena_alloc(a, 4 * sizeof *e->Synonyms);
    int n = 0;
    if (override)
        e->Synonyms[n++] = (cfg_syn_t){ls_kstr_c(d->name), ls_kstr_c(override),
                                       LS_KAFKA_CONFIG_SOURCE_TOPIC_CONFIG};
    if (d->kind == VAL_BROKER)
        n += add_broker_synonyms(&bl, d->broker_name, d->def, e->Synonyms + n);
    else if (d->broker_name)
        e->Synonyms[n++] = (cfg_syn_t){ls_kstr_c(d->broker_name), ls_kstr_c(dval),
                                       LS_KAFKA_CONFIG_SOURCE_DEFAULT_CONFIG};
    e->NumSynonyms = n;
}

static int8_t policy_source(ls_policy_source src)
{
    switch (src) {
    case LS_POLICY_SRC_STREAM: return LS_KAFKA_CONFIG_SOURCE_TOPIC_CONFIG;
    case LS_POLICY_SRC_NAMESPACE: return LS_KAFKA_CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG;
    case LS_POLICY_SRC_CLUSTER: return LS_KAFKA_CONFIG_SOURCE_STATIC_BROKER_CONFIG;
    case LS_POLICY_SRC_DEFAULT: break;
    }
    return LS_KAFKA_CONFIG_SOURCE_DEFAULT_CONFIG;
}

static int8_t policy_type(ls_policy_field f)
{
    switch (f) {
    case LS_POLICY_ENABLED: return LS_KAFKA_CONFIG_TYPE_BOOLEAN;
    case LS_POLICY_TARGET_FILE_BYTES:
    case LS_POLICY_COMMIT_INTERVAL_MS: return LS_KAFKA_CONFIG_TYPE_LONG;
    default: return LS_KAFKA_CONFIG_TYPE_STRING;
    }
}

/* One entry per policy field: resolved value, source, layers as synonyms. */
static int32_t policy_entries(ls_arena_t *a, const ls_policy_layers_t *l, const ls_kstr_t *keys,
                              int32_t nkeys, bool synonyms, bool docs, cfg_entry_t *v)
{
    ls_policy_t pol;
    char err[512];
    ls_policy_resolve(l, &pol, err, sizeof err); /* a bad stored value is shown as stored */
    int32_t n = 0;
    for (int f = 0; f < LS_POLICY_NFIELDS; f++) {
        const char *key = ls_policy_key((ls_policy_field)f);
        if (!key_wanted(keys, nkeys, key)) continue;
        cfg_entry_t *e = &v[n++];
        e->Name = ls_kstr_c(key);
        e->Value = ls_kstr_c(ls_arena_printf(a, "%s", pol.value[f]));
        e->ConfigSource = policy_source(pol.source[f]);
        e->ConfigType = policy_type((ls_policy_field)f);
        e->Documentation = docs ? ls_kstr_c(ls_arena_printf(a, "%s Accepted: %s.",
                                                            ls_policy_doc((ls_policy_field)f),
                                                            ls_policy_accepted((ls_policy_field)f)))
                                : ls_kstr_null();
        if (!synonyms) continue;
        const struct {
            const ls_prop_t *v;
            int n;
            int8_t src;
        } layers[] = {
            {l->stream, l->nstream, LS_KAFKA_CONFIG_SOURCE_TOPIC_CONFIG},
            {l->ns, l->nns, LS_KAFKA_CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG},
            {l->cluster, l->ncluster, LS_KAFKA_CONFIG_SOURCE_STATIC_BROKER_CONFIG},
        };
        e->Synonyms = ls_arena_alloc(a, 4 * sizeof *e->Synonyms);
        for (int k = 0; k < 3; k++) {
            const char *lv = prop_get(layers[k].v, layers[k].n, key);
            if (lv)
                e->Synonyms[e->NumSynonyms++] =
                    (cfg_syn_t){e->Name, ls_kstr_c(ls_arena_printf(a, "%s", lv)), layers[k].src};
        }
        e->Synonyms[e->NumSynonyms++] =
            (cfg_syn_t){e->Name, ls_kstr_c(ls_policy_default((ls_policy_field)f)),
                        LS_KAFKA_CONFIG_SOURCE_DEFAULT_CONFIG};
    }
    return n;
}

int32_t ls_kafka_topic_configs(ls_arena_t *a, struct ls_kafka_services *b, const char *ns,
                               const struct ls_prop *overrides, int noverrides,
                               const ls_kstr_t *keys, int32_t nkeys, bool synonyms, bool docs,
                               cfg_entry_t **out)
{
    cfg_entry_t *v =
        ls_arena_alloc(a, (size_t)(NTOPIC_DEFS + LS_POLICY_NFIELDS + noverrides) * sizeof *v);
    int32_t n = 0;
    for (int i = 0; i < NTOPIC_DEFS; i++) {
        const topic_config_def_t *d = &topic_defs[i];
        if (!key_wanted(keys, nkeys, d->name)) continue;
        topic_entry(a, b, d, prop_get(overrides, noverrides, d->name), synonyms, docs, &v[n++]);
    }
    ls_namespace_t *nsrec = ls_catalog_namespace(b->catalog, ns);
    ls_policy_layers_t l = {overrides,
                            noverrides,
                            nsrec ? nsrec->props : NULL,
                            nsrec ? nsrec->nprops : 0,
                            b->table_defaults,
                            b->ntable_defaults};
    n += policy_entries(a, &l, keys, nkeys, synonyms, docs, v + n);
    ls_namespace_release(nsrec);
    /* Other stored overrides Kafka does not define (lakestream.*, and the
     * broker-kept lakestream.table.enabled.since, read-only). */
    for (int i = 0; i < noverrides; i++) {
        const ls_prop_t *p = &overrides[i];
        if (!p->key || topic_def_find(p->key) || ls_policy_field_of(p->key) >= 0 ||
            !key_wanted(keys, nkeys, p->key))
            continue;
        cfg_entry_t *e = &v[n++];
        e->Name = ls_kstr_c(p->key);
        e->Value = ls_kstr_c(p->value);
        e->ReadOnly =
            strcmp(p->key, LS_POLICY_SINCE_KEY) == 0 || strcmp(p->key, LS_KAFKA_RF_KEY) == 0;
        e->ConfigSource = LS_KAFKA_CONFIG_SOURCE_TOPIC_CONFIG;
        e->ConfigType = LS_KAFKA_CONFIG_TYPE_STRING;
        e->Documentation = ls_kstr_null();
        if (synonyms) {
            e->Synonyms = ls_arena_alloc(a, sizeof *e->Synonyms);
            e->Synonyms[0] = (cfg_syn_t){e->Name, e->Value, LS_KAFKA_CONFIG_SOURCE_TOPIC_CONFIG};
            e->NumSynonyms = 1;
        }
    }
    *out = v;
    return n;
}

/* A read-only status entry (not a setting) appended to r. */
static void add_status(ls_arena_t *a, ls_kafka_DescribeConfigsResponse_DescribeConfigsResult *r,
                       const char *key, const char *value, int8_t type, const char *doc)
{
    cfg_entry_t *v = ls_arena_alloc(a, (size_t)(r->NumConfigs + 1) * sizeof *v);
    if (r->NumConfigs) memcpy(v, r->Configs, (size_t)r->NumConfigs * sizeof *v);
    cfg_entry_t *e = &v[r->NumConfigs];
    memset(e, 0, sizeof *e);
    e->Name = ls_kstr_c(key);
    e->Value = ls_kstr_c(ls_arena_printf(a, "%s", value));
    e->ReadOnly = true;
    e->ConfigSource = LS_KAFKA_CONFIG_SOURCE_DEFAULT_CONFIG;
    e->ConfigType = type;
    e->Documentation = ls_kstr_c(doc);
    r->Configs = v;
    r->NumConfigs++;
}

/* The statuses of a stream's table, as this broker's last compaction pass
 * saw them; `lakestream tables show` prints them:
 *  - lakestream.table.lag.ms: how long the oldest record not yet in the
 *    table has waited, from the table's last recorded commit against the
 *    log end (compact/table_plan.h), so every broker reports the same;
 *    absent when the stream has no table or no commit was recorded yet;
 *  - lakestream.table.current: the table the rows go to now (the policy's
 *    name, or with evolution=new-table the version that continues it,
 *    <name>__v2, ...), absent before a pass opened the table; with a version,
 *    lakestream.table.current.reason says why it exists;
 *  - lakestream.table.held.reason: why the table is held back (the range
 *    that cannot go in, with its partition, offsets and reason: a record
 *    error.handling=fail refuses, a schema evolution=fail refuses, a
 *    partition spec the table does not have, a policy that does not
 *    resolve, a store failure); absent while it goes on;
 *  - lakestream.table.catalog.status: while the external catalog the
 *    policy names lacks the table's latest snapshot, since when, whether
 *    another writer is in the way, and the last error; absent when in sync;
 *  - lakestream.table.skipped.records: the records error.handling=skip has
 *    left out (the table property lakestream.skipped-records) as of this
 *    broker's last commit; absent when none was. */
#define TABLE_LAG_KEY "lakestream.table.lag.ms"
#define TABLE_VERSION_KEY "lakestream.table.current"
#define TABLE_VERSION_REASON_KEY "lakestream.table.current.reason"
#define TABLE_HELD_KEY "lakestream.table.held.reason"
#define TABLE_CATALOG_STATUS_KEY "lakestream.table.catalog.status"
#define TABLE_SKIPPED_KEY "lakestream.table.skipped.records"
static void add_table_statuses(ls_arena_t *a, ls_kafka_services_t *b, const ls_stream_t *s,
                               const ls_kstr_t *keys, int32_t nkeys,
                               ls_kafka_DescribeConfigsResponse_DescribeConfigsResult *r)
{
    int64_t lag;
    if (key_wanted(keys, nkeys, TABLE_LAG_KEY) && b->table_lag(b->root, s->stream_no, &lag))
        add_status(a, r, TABLE_LAG_KEY, ls_arena_printf(a, "%lld", (long long)lag),
                   LS_KAFKA_CONFIG_TYPE_LONG,
                   "Status, not a setting: how long the oldest record not yet in the table has "
                   "waited (ms), from the table's last commit against the log end, as of "
                   "this broker's last compaction pass (the same on every broker).");
    const char *why = NULL;
    const char *name = b->table_version ? b->table_version(b->root, s->stream_no, &why) : NULL;
    if (name && key_wanted(keys, nkeys, TABLE_VERSION_KEY))
        add_status(a, r, TABLE_VERSION_KEY, name, LS_KAFKA_CONFIG_TYPE_STRING,
                   "Status, not a setting: the table the topic's rows go to now "
                   "(lakestream.table.evolution=new-table continues a table as <name>__v2, ...), "
                   "at the last compaction pass.");
    if (name && why && key_wanted(keys, nkeys, TABLE_VERSION_REASON_KEY))
        add_status(a, r, TABLE_VERSION_REASON_KEY, why, LS_KAFKA_CONFIG_TYPE_STRING,
                   "Status, not a setting: why the current table version exists (the record, "
                   "its schema ids and the incompatibility that continued the version before).");
    const char *held = b->table_held ? b->table_held(b->root, s->stream_no) : NULL;
    if (held && key_wanted(keys, nkeys, TABLE_HELD_KEY))
        add_status(a, r, TABLE_HELD_KEY, held, LS_KAFKA_CONFIG_TYPE_STRING,
                   "Status, not a setting: why the table is held back at the last compaction "
                   "pass (the range that cannot go in and the reason); absent while it goes on. "
                   "The topic keeps accepting writes; the table resumes once the cause is fixed "
                   "(for a record, e.g. by lakestream.table.error.handling=skip or dead-letter).");
    const char *cst =
        b->table_catalog_status ? b->table_catalog_status(b->root, s->stream_no) : NULL;
    if (cst && key_wanted(keys, nkeys, TABLE_CATALOG_STATUS_KEY))
        add_status(a, r, TABLE_CATALOG_STATUS_KEY, cst, LS_KAFKA_CONFIG_TYPE_STRING,
                   "Status, not a setting: the external catalog of lakestream.table.catalog "
                   "lacks the table's latest snapshot: since when (UTC), "
                   "whether another writer's snapshot is in the way (conflict) or it fails, "
                   "and the last error; absent while it is in sync.");
    int64_t skipped;
    if (b->table_skipped && key_wanted(keys, nkeys, TABLE_SKIPPED_KEY) &&
        b->table_skipped(b->root, s->stream_no, &skipped))
        add_status(a, r, TABLE_SKIPPED_KEY, ls_arena_printf(a, "%lld", (long long)skipped),
                   LS_KAFKA_CONFIG_TYPE_LONG,
                   "Status, not a setting: records lakestream.table.error.handling=skip has left "
                   "out of the table (its property lakestream.skipped-records), at this broker's "
                   "last commit of it.");
}

/* The table name a stream's policy gives, or NULL when its table is off or
 * the policy does not resolve. */
static const char *table_name_of(ls_kafka_services_t *b, const ls_stream_t *s, char *buf,
                                 size_t cap)
{
    ls_policy_t pol;
    ls_namespace_t *nsrec;
    char err[256];
    ls_status st = ls_policy_for_stream(b->catalog, s, b->table_defaults, b->ntable_defaults, &pol,
                                        &nsrec, err, sizeof err);
    if (st == LS_OK && pol.enabled)
        st = ls_policy_table_name(&pol, s->ns, s->name, buf, cap, err, sizeof err);
    ls_namespace_release(nsrec);
    return st == LS_OK && pol.enabled ? buf : NULL;
}

ls_status ls_kafka_topic_policy_apply(struct ls_kafka_services *b, const char *ns, const char *name,
                                      const struct ls_prop *before, int nbefore,
                                      struct ls_prop *after, int *nafter, char *since_buf,
                                      size_t since_cap, char *err, size_t errlen)
{
    ls_namespace_t *nsrec = ls_catalog_namespace(b->catalog, ns);
    const ls_prop_t *nsp = nsrec ? nsrec->props : NULL;
    int nns = nsrec ? nsrec->nprops : 0;
    ls_policy_layers_t lb = {before, nbefore, nsp, nns, b->table_defaults, b->ntable_defaults};
    ls_policy_layers_t la = {after, *nafter, nsp, nns, b->table_defaults, b->ntable_defaults};
    ls_policy_t pb, pa;
    char table[256];
    /* the new set's values were checked one by one; this checks the result */
    ls_status st = ls_policy_resolve(&la, &pa, err, errlen);
    if (st != LS_OK) goto out;
    st = LS_EINVAL; /* for each refusal below */
    bool had = before != NULL;
    if (had) /* stored: it resolves */
        ls_policy_resolve(&lb, &pb, err, errlen);
    if (had && pb.format_version > pa.format_version) { /* Iceberg tables never go back */
        snprintf(err, errlen,
                 "Invalid value '%d' for configuration %s: the topic's tables are at format "
                 "version %d, and an Iceberg table's format version never goes back",
                 pa.format_version, ls_policy_key(LS_POLICY_FORMAT_VERSION), pb.format_version);
        goto out;
    }
    { /* Kafka's one cross-key rule of the compaction settings */
        const char *mn = prop_get(after, *nafter, "min.compaction.lag.ms");
        const char *mx = prop_get(after, *nafter, "max.compaction.lag.ms");
        if (mn && mx && strtoll(mn, NULL, 10) > strtoll(mx, NULL, 10)) {
            snprintf(err, errlen,
                     "conflict topic config setting min.compaction.lag.ms "
                     "(%s) > max.compaction.lag.ms (%s)",
                     mn, mx);
            goto out;
        }
    }
    if (pa.npk && pa.key_strategy == LS_POLICY_TOPIC_NAME && b->check_primary_key) {
        /* the fields must be in the key schema (when it is registered yet) */
        char names[LS_POLICY_MAX_PK][LS_POLICY_MAX_PK_NAME], subject[300], why[512];
        const char *f[LS_POLICY_MAX_PK];
        ls_policy_primary_key(&pa, names);
        for (int i = 0; i < pa.npk; i++)
            f[i] = names[i];
        snprintf(subject, sizeof subject, "%s-key", name);
        if (b->check_primary_key(b->root, subject, f, (size_t)pa.npk, why, sizeof why) != LS_OK) {
            snprintf(err, errlen, "Invalid value '%s' for configuration %s: %s",
                     pa.value[LS_POLICY_PRIMARY_KEY], ls_policy_key(LS_POLICY_PRIMARY_KEY), why);
            goto out;
        }
    }
    bool field_parts = false;
    for (int i = 0; i < pa.npart; i++)
        field_parts |= pa.part[i].column == LS_POLICY_COL_FIELD;
    const char *kp = ls_policy_key(LS_POLICY_PARTITION);
    const char *vb = prop_get(before, nbefore, kp), *va = prop_get(after, *nafter, kp);
    bool part_set = !before || (!vb != !va) || (vb && va && strcmp(vb, va) != 0);
    if (field_parts && part_set && b->check_partition) {
        /* value and key fields, when the spec is set: against the latest schemas
         * registered (the table checks it again when it is created) */
        char why[512];
        if (b->check_partition(b->root, name, &pa, why, sizeof why) != LS_OK) {
            snprintf(err, errlen, "Invalid value '%s' for configuration %s: %s",
                     pa.value[LS_POLICY_PARTITION], ls_policy_key(LS_POLICY_PARTITION), why);
            goto out;
        }
    }
    if (part_set && pa.enabled && b->check_table_spec) {
        /* a table with data keeps its spec: refused here rather than taken
         * and held back at the next pass (materialize.c spec_check) */
        char why[1024];
        ls_status c = b->check_table_spec(b->root, ns, name, &pa, why, sizeof why);
        if (c != LS_OK) {
            snprintf(err, errlen, "Invalid value '%s' for configuration %s: %s%s",
                     pa.value[LS_POLICY_PARTITION], ls_policy_key(LS_POLICY_PARTITION),
                     c != LS_EINVAL ? "reading the table's metadata: " : "", why);
            goto out;
        }
    }
    if (pa.enabled) {
        st = ls_policy_table_name(&pa, ns, name, table, sizeof table, err, errlen);
        if (st != LS_OK) goto out;
        bool taken = false;
        int nstreams = 0;
        ls_stream_t **v = ls_catalog_list(b->catalog, ns, &nstreams);
        for (int i = 0; i < nstreams && !taken; i++) {
            char other[256];
            if (strcmp(v[i]->name, name) != 0 && table_name_of(b, v[i], other, sizeof other) &&
                strcmp(other, table) == 0) {
                snprintf(err, errlen,
                         "Invalid value for configuration %s: table '%s' in namespace '%s' is "
                         "already the table of topic '%s'",
                         ls_policy_key(LS_POLICY_NAME), table, ns, v[i]->name);
                taken = true;
            }
        }
        ls_stream_list_release(v, nstreams);
        if (taken) {
            st = LS_EINVAL;
            goto out;
        }
    }
    /* enabled.since: kept by the broker, never taken from the request */
    int n = 0;
    for (int i = 0; i < *nafter; i++)
        if (strcmp(after[i].key, LS_POLICY_SINCE_KEY) != 0) after[n++] = after[i];
    const char *since =
        ls_policy_since_after(had ? &pb : NULL, &pa, ls_clock_wall_ms(), since_buf, since_cap);
    if (since) after[n++] = (ls_prop_t){(char *)LS_POLICY_SINCE_KEY, (char *)since};
    *nafter = n;
    err[0] = 0;
    st = LS_OK;
out:
    ls_namespace_release(nsrec);
    return st;
}

static bool parse_i64(const char *s, int64_t *out)
{
    if (!s || !*s) return false;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end) return false;
    *out = v;
    return true;
}

static bool in_list(const char *allowed, const char *v, size_t n)
{
    const char *p = allowed;
    while (*p) {
        const char *c = strchr(p, ',');
        size_t len = c ? (size_t)(c - p) : strlen(p);
        if (len == n && strncmp(p, v, n) == 0) return true;
        if (!c) break;
        p = c + 1;
    }
    return false;
}

/* Kafka 4's lower bounds of the numeric topic configs (LogConfig's atLeast
 * validators; retention.bytes has none), whether the config is applied here
 * or has no effect: a value Kafka refuses is refused the same way. */
static const struct {
    const char *name;
    int64_t min;
} kafka_mins[] = {
    {"delete.retention.ms", 0},
    {"file.delete.delay.ms", 0},
    {"flush.messages", 1},
    {"flush.ms", 0},
    {"index.interval.bytes", 0},
    {"local.retention.bytes", -2},
    {"local.retention.ms", -2},
    {"max.compaction.lag.ms", 1},
    {"max.message.bytes", 0},
    {"message.timestamp.after.max.ms", 0},
    {"message.timestamp.before.max.ms", 0},
    {"min.compaction.lag.ms", 0},
    {"min.insync.replicas", 1},
    {"retention.ms", -1},
    {"segment.bytes", 1048576},
    {"segment.index.bytes", 4},
    {"segment.jitter.ms", 0},
    {"segment.ms", 1},
};

static bool kafka_min_of(const char *name, int64_t *min)
{
    for (size_t i = 0; i < sizeof kafka_mins / sizeof kafka_mins[0]; i++)
        if (strcmp(kafka_mins[i].name, name) == 0) {
            *min = kafka_mins[i].min;
            return true;
        }
    return false;
}

ls_status ls_kafka_topic_config_check(const char *name, const char *value, char *err, size_t errlen)
{
    if (ls_policy_is_key(name)) return ls_policy_check(name, value, err, errlen);
    if (strcmp(name, LS_KAFKA_RF_KEY) == 0) {
        snprintf(err, errlen,
                 "Configuration %s is maintained by the broker (the "
                 "replication factor the topic was created with) and cannot be set",
                 name);
        return LS_EINVAL;
    }
    const topic_config_def_t *d = topic_def_find(name);
    if (!d) {
        snprintf(err, errlen, "Unknown topic config name: %s", name);
        return LS_EINVAL;
    }
    bool ok = true;
    int64_t iv = 0;
    switch (d->type) {
    case LS_KAFKA_CONFIG_TYPE_INT:
        ok = parse_i64(value, &iv) && iv >= INT32_MIN && iv <= INT32_MAX;
        break;
    case LS_KAFKA_CONFIG_TYPE_LONG: ok = parse_i64(value, &iv); break;
    case LS_KAFKA_CONFIG_TYPE_DOUBLE: {
        char *end;
        errno = 0;
        double dv = strtod(value, &end);
        ok = *value && !*end && !errno && dv >= 0;
        break;
    }
    case LS_KAFKA_CONFIG_TYPE_BOOLEAN:
        ok = strcasecmp(value, "true") == 0 || strcasecmp(value, "false") == 0;
        break;
    case LS_KAFKA_CONFIG_TYPE_STRING:
        ok = !d->allowed || in_list(d->allowed, value, strlen(value));
        break;
    case LS_KAFKA_CONFIG_TYPE_LIST: {
        /* every comma-separated item (spaces allowed) must be allowed */
        const char *p = value;
        ok = *p != 0;
        while (ok && *p) {
            while (*p == ' ')
                p++;
            const char *c = strchr(p, ',');
            size_t len = c ? (size_t)(c - p) : strlen(p);
            while (len && p[len - 1] == ' ')
                len--;
            ok = len > 0 && in_list(d->allowed, p, len);
            p = c ? c + 1 : p + strlen(p);
        }
        break;
    }
    default: break;
    }
    /* Kafka's ranges of the compression levels */
    if (ok && strcmp(name, "compression.gzip.level") == 0)
        ok = iv == -1 || (iv >= 1 && iv <= 9);
    else if (ok && strcmp(name, "compression.lz4.level") == 0)
        ok = iv >= 1 && iv <= 17;
    else if (ok && strcmp(name, "compression.zstd.level") == 0)
        ok = iv >= -131072 && iv <= 22;
    else if (ok && strcmp(name, "min.cleanable.dirty.ratio") == 0)
        ok = strtod(value, NULL) <= 1.0;
    int64_t min;
    if (ok && kafka_min_of(name, &min) && iv < min) {
        snprintf(err, errlen,
                 "Invalid value %s for configuration %s: Value must be at least %" PRId64, value,
                 name, min);
        return LS_EINVAL;
    }
    if (!ok) {
        if (d->allowed)
            snprintf(err, errlen, "Invalid value %s for configuration %s: must be one of [%s]",
                     value, name, d->allowed);
        else
            snprintf(err, errlen, "Invalid value %s for configuration %s", value, name);
        return LS_EINVAL;
    }
    return LS_OK;
}

/* ----------------------------------------------------------- broker configs */

typedef struct broker_entry {
    const char *name;
    const char *value;         /* NULL with sensitive */
    const char *kafka_default; /* DEFAULT_CONFIG when value equals it */
    int8_t type;
    bool sensitive;
    const char *doc;
} broker_entry_t;

/* The configs of this broker, or (default_only: the default broker resource,
 * name "") only the cluster-wide dynamic ones that are set, as Kafka answers
 * for its default entity. Dynamic broker configs are writable
 * (ReadOnly=false) with their layers as synonyms; the rest are read-only. */
static int32_t broker_configs(ls_arena_t *a, const ls_kafka_services_t *b, bool default_only,
                              const ls_kstr_t *keys, int32_t nkeys, bool synonyms, bool docs,
                              cfg_entry_t **out)
{
    const ls_config_t *c = b->cfg;
    /* every listener's bound and advertised address, as Kafka lists them */
    char *listeners = "", *advertised = "", *protocols = "";
    for (int i = 0; i < c->nlisteners; i++) {
        const ls_listener_cfg_t *l = &c->listeners[i];
        const char *sep = i ? "," : "";
        listeners = ls_arena_printf(a, "%s%s%s://%s:%d", listeners, sep, l->name, l->host, l->port);
        advertised = ls_arena_printf(a, "%s%s%s://%s:%d", advertised, sep, l->name, l->adv_host,
                                     l->adv_port);
        protocols =
            ls_arena_printf(a, "%s%s%s:%s", protocols, sep, l->name, ls_secproto_name(l->protocol));
    }
    const broker_entry_t list[] = {
        {"advertised.listeners", advertised, NULL, LS_KAFKA_CONFIG_TYPE_STRING, false,
         "Addresses clients are told to connect to."},
        {"auto.create.topics.enable", c->auto_create_topics_enable ? "true" : "false", "true",
         LS_KAFKA_CONFIG_TYPE_BOOLEAN, false, "Create topics on first Metadata request."},
        {"broker.id", ls_arena_printf(a, "%d", (int)b->node_id), NULL, LS_KAFKA_CONFIG_TYPE_INT,
         false, "This broker's id."},
        {"cluster.id", b->cluster_id, NULL, LS_KAFKA_CONFIG_TYPE_STRING, false,
         "Cluster id kept in the metadata store."},
        {"compression.type", "producer", "producer", LS_KAFKA_CONFIG_TYPE_STRING, false,
         "Default topic compression."},
        {"data.dir", c->data_dir, NULL, LS_KAFKA_CONFIG_TYPE_STRING, false,
         "Local directory for the embedded stores."},
        {"default.replication.factor", "1", "1", LS_KAFKA_CONFIG_TYPE_INT, false,
         "Durability comes from the object store."},
        {"delete.topic.enable", "true", "true", LS_KAFKA_CONFIG_TYPE_BOOLEAN, false,
         "Topics may be deleted."},
        {"listener.security.protocol.map", protocols, NULL, LS_KAFKA_CONFIG_TYPE_STRING, false,
         "Security protocol of each listener."},
        {"listeners", listeners, NULL, LS_KAFKA_CONFIG_TYPE_STRING, false, "Listening addresses."},
        {"log.cleanup.policy", "delete", "delete", LS_KAFKA_CONFIG_TYPE_LIST, false,
         "Default topic cleanup policy."},
        {"log.retention.bytes", NULL, "-1", LS_KAFKA_CONFIG_TYPE_LONG, false, NULL},
        {"log.message.timestamp.after.max.ms", NULL, "3600000", LS_KAFKA_CONFIG_TYPE_LONG, false,
         NULL},
        {"log.message.timestamp.before.max.ms", NULL, LONG_MAX_S, LS_KAFKA_CONFIG_TYPE_LONG, false,
         NULL},
        {"log.message.timestamp.type", NULL, "CreateTime", LS_KAFKA_CONFIG_TYPE_STRING, false,
         NULL},
        {"log.retention.check.interval.ms",
         ls_arena_printf(a, "%" PRId64, c->log_retention_check_interval_ms), "300000",
         LS_KAFKA_CONFIG_TYPE_LONG, false, "How often retention is checked."},
        {"log.retention.ms", NULL, "604800000", LS_KAFKA_CONFIG_TYPE_LONG, false, NULL},
        {"max.connections", NULL, "0", LS_KAFKA_CONFIG_TYPE_INT, false, NULL},
        {"max.connections.per.ip", NULL, "1000", LS_KAFKA_CONFIG_TYPE_INT, false, NULL},
        {"message.max.bytes", NULL, "1048588", LS_KAFKA_CONFIG_TYPE_INT, false, NULL},
        {"metadata.url", NULL, NULL, LS_KAFKA_CONFIG_TYPE_PASSWORD, true,
         "Metadata store (may carry credentials)."},
        {"min.insync.replicas", "1", "1", LS_KAFKA_CONFIG_TYPE_INT, false,
         "Accepted for compatibility."},
        {"node.id", ls_arena_printf(a, "%d", (int)b->node_id), NULL, LS_KAFKA_CONFIG_TYPE_INT,
         false, "This broker's id."},
        {"num.io.threads", ls_arena_printf(a, "%" PRId64, c->num_io_threads), "8",
         LS_KAFKA_CONFIG_TYPE_INT, false,
         "Threads of the store calls other than the WAL's (reads, compaction, coordinators)."},
        {"num.partitions", ls_arena_printf(a, "%d", (int)c->num_partitions), "1",
         LS_KAFKA_CONFIG_TYPE_INT, false, "Partitions of auto-created topics."},
        {"object.store.url", NULL, NULL, LS_KAFKA_CONFIG_TYPE_PASSWORD, true,
         "Object store (may carry credentials)."},
        {"offsets.topic.replication.factor", "1", NULL, LS_KAFKA_CONFIG_TYPE_SHORT, false,
         "Accepted for compatibility."},
        {"read.ahead.bytes", ls_arena_printf(a, "%" PRId64, c->read_ahead_bytes), NULL,
         LS_KAFKA_CONFIG_TYPE_LONG, false, "Block of a cold compacted-object read."},
        {"read.cache.max.bytes", ls_arena_printf(a, "%" PRId64, c->read_cache_max_bytes), NULL,
         LS_KAFKA_CONFIG_TYPE_LONG, false, "Read cache bound."},
        {"socket.request.max.bytes", ls_arena_printf(a, "%" PRId64, c->socket_request_max_bytes),
         "104857600", LS_KAFKA_CONFIG_TYPE_INT, false, "Largest request accepted."},
        {"table.cold.cache.max.bytes",
         ls_arena_printf(a, "%" PRId64, c->table_cold_cache_max_bytes), "268435456",
         LS_KAFKA_CONFIG_TYPE_LONG, false,
         "Fetched bytes of table data files kept open for cold reads."},
        {"table.cold.reads", c->table_cold_reads, "table", LS_KAFKA_CONFIG_TYPE_STRING, false,
         "Where the old data of a raw append-mode table's topic stays: table (only its "
         "Parquet rows) or compacted-object."},
        {"transaction.state.log.min.isr", "1", NULL, LS_KAFKA_CONFIG_TYPE_INT, false,
         "Accepted for compatibility."},
        {"transaction.state.log.replication.factor", "1", NULL, LS_KAFKA_CONFIG_TYPE_SHORT, false,
         "Accepted for compatibility."},
        {"wal.buffer.max.bytes", ls_arena_printf(a, "%" PRId64, c->wal_buffer_max_bytes), NULL,
         LS_KAFKA_CONFIG_TYPE_LONG, false, "Produce backpressure bound."},
        {"wal.flush.linger.ms", ls_arena_printf(a, "%" PRId64, c->wal_flush_linger_ms), NULL,
         LS_KAFKA_CONFIG_TYPE_LONG, false, "Upper bound on WAL batching time."},
        {"wal.flush.max.bytes", ls_arena_printf(a, "%" PRId64, c->wal_flush_max_bytes), NULL,
         LS_KAFKA_CONFIG_TYPE_LONG, false, "WAL object size that triggers a flush."},
        {"wal.flush.min.interval.ms", ls_arena_printf(a, "%" PRId64, c->wal_flush_min_interval_ms),
         NULL, LS_KAFKA_CONFIG_TYPE_LONG, false,
         "Minimum gap between flushes (request-cost dial)."},
        {"wal.max.inflight.flushes", ls_arena_printf(a, "%" PRId64, c->wal_max_inflight_flushes),
         NULL, LS_KAFKA_CONFIG_TYPE_LONG, false, "WAL uploads in flight at once."},
    };
    int nlist = (int)(sizeof list / sizeof list[0]);
    cfg_entry_t *v = ls_arena_alloc(a, (size_t)nlist * sizeof *v);
    int32_t n = 0;
    for (int i = 0; i < nlist; i++) {
        const broker_entry_t *be = &list[i];
        if (!key_wanted(keys, nkeys, be->name)) continue;
        int k = ls_bcfg_find(be->name);
        if (k >= 0) { /* a dynamic broker config: its layers */
            broker_layers_t bl = broker_layers_of(a, b, (ls_bcfg_key)k, be->kafka_default);
            if (default_only && !bl.dynamic) continue;
            cfg_entry_t *e = &v[n++];
            e->Name = ls_kstr_c(be->name);
            e->Value = ls_kstr_c(broker_layers_value(&bl, &e->ConfigSource));
            e->ReadOnly = false;
            e->ConfigType = ls_bcfg_type((ls_bcfg_key)k);
            e->Documentation = docs ? ls_kstr_c(ls_bcfg_doc((ls_bcfg_key)k)) : ls_kstr_null();
            if (synonyms) {
                e->Synonyms = ls_arena_alloc(a, 3 * sizeof *e->Synonyms);
                e->NumSynonyms = add_broker_synonyms(&bl, be->name, be->kafka_default, e->Synonyms);
            }
            continue;
        }
        if (default_only) continue;
        cfg_entry_t *e = &v[n++];
        e->Name = ls_kstr_c(be->name);
        e->Value = be->sensitive ? ls_kstr_null() : ls_kstr_c(be->value ? be->value : "");
        e->ReadOnly = true; /* static: the properties file, LAKESTREAM_* variables, flags */
        e->IsSensitive = be->sensitive;
        e->ConfigSource =
            be->kafka_default && be->value && strcmp(be->value, be->kafka_default) == 0
                ? LS_KAFKA_CONFIG_SOURCE_DEFAULT_CONFIG
                : LS_KAFKA_CONFIG_SOURCE_STATIC_BROKER_CONFIG;
        e->ConfigType = be->type;
        e->Documentation = docs ? ls_kstr_c(be->doc) : ls_kstr_null();
        if (synonyms) {
            e->Synonyms = ls_arena_alloc(a, sizeof *e->Synonyms);
            e->Synonyms[0] = (cfg_syn_t){e->Name, e->Value, e->ConfigSource};
            e->NumSynonyms = 1;
        }
    }
    *out = v;
    return n;
}

/* A GROUP resource (group/group_configs.h): each key with the group's
 * override (GROUP_CONFIG) or the broker's value (DEFAULT_CONFIG). */
static int32_t group_configs(ls_arena_t *a, const ls_kafka_services_t *b, const char *group,
                             const ls_kstr_t *keys, int32_t nkeys, bool synonyms, bool docs,
                             cfg_entry_t **out)
{
    static const struct {
        const char *name, *doc;
    } known[] = {
        {LS_GROUP_CONFIG_SESSION,
         "The timeout to detect client failures when using the consumer group protocol."},
        {LS_GROUP_CONFIG_HEARTBEAT, "The heartbeat interval given to the members."},
        {LS_GROUP_CONFIG_SHARE_SESSION,
         "The timeout to detect client failures when using the share group protocol."},
        {LS_GROUP_CONFIG_SHARE_HEARTBEAT, "The heartbeat interval given to the members."},
        {LS_GROUP_CONFIG_SHARE_LOCK,
         "How long a member holds a record it fetched before the record is offered again."},
        {LS_GROUP_CONFIG_SHARE_DELIVERY,
         "Deliveries of one record to the group before it is archived."},
        {LS_GROUP_CONFIG_SHARE_LOCKS, "Most in-flight records of one share partition."},
        {LS_GROUP_CONFIG_SHARE_RESET,
         "Where a share group starts reading a partition it has no state for."},
        {LS_GROUP_CONFIG_SHARE_ISOLATION,
         "Whether share consumers get records of open and aborted transactions."},
        {LS_GROUP_CONFIG_STREAMS_SESSION,
         "The timeout to detect client failures when using the streams group protocol."},
        {LS_GROUP_CONFIG_STREAMS_HEARTBEAT, "The heartbeat interval given to the members."},
        {LS_GROUP_CONFIG_STREAMS_STANDBYS, "The number of standby replicas for each task."},
    };
    /* the broker's values; the share keys default to latest and
     * read_uncommitted (Kafka's), both 0 */
    int32_t defaults[] = {b->cfg->group_consumer_session_timeout_ms,
                          b->cfg->group_consumer_heartbeat_interval_ms,
                          b->cfg->group_share_session_timeout_ms,
                          b->cfg->group_share_heartbeat_interval_ms,
                          b->cfg->group_share_record_lock_duration_ms,
                          b->cfg->group_share_delivery_count_limit,
                          b->cfg->group_share_partition_max_record_locks,
                          0,
                          0,
                          b->cfg->group_streams_session_timeout_ms,
                          b->cfg->group_streams_heartbeat_interval_ms,
                          b->cfg->group_streams_num_standby_replicas};
    cfg_entry_t *v = ls_arena_alloc(a, sizeof known / sizeof known[0] * sizeof *v);
    int32_t n = 0;
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        if (!key_wanted(keys, nkeys, known[i].name)) continue;
        int32_t val = defaults[i];
        bool set =
            b->group_configs && ls_group_configs_get(b->group_configs, group, known[i].name, &val);
        const char *word = ls_group_config_word(known[i].name, val);
        char text[128];
        if (!set && b->group_configs &&
            ls_group_configs_get_text(b->group_configs, group, known[i].name, text, sizeof text) &&
            ls_group_config_duration_ms(text) >= 0) {
            /* share.auto.offset.reset=by_duration:... (not one of the words) */
            word = ls_arena_printf(a, "%s", text);
            set = true;
        }
        cfg_entry_t *e = &v[n++];
        memset(e, 0, sizeof *e);
        e->Name = ls_kstr_c(known[i].name);
        e->Value = ls_kstr_c(word ? word : ls_arena_printf(a, "%d", (int)val));
        e->ConfigSource =
            set ? LS_KAFKA_CONFIG_SOURCE_GROUP_CONFIG : LS_KAFKA_CONFIG_SOURCE_DEFAULT_CONFIG;
        e->ConfigType = word ? LS_KAFKA_CONFIG_TYPE_STRING : LS_KAFKA_CONFIG_TYPE_INT;
        e->Documentation = docs ? ls_kstr_c(known[i].doc) : ls_kstr_null();
        if (synonyms) {
            e->Synonyms = ls_arena_alloc(a, sizeof *e->Synonyms);
            e->Synonyms[0] = (cfg_syn_t){e->Name, e->Value, e->ConfigSource};
            e->NumSynonyms = 1;
        }
    }
    *out = v;
    return n;
}

/* A CLIENT_METRICS resource (telemetry/subscriptions.h): each key with the
 * subscription's value (CLIENT_METRICS_CONFIG) or Kafka's default. */
static int32_t client_metrics_configs(ls_arena_t *a, const ls_kafka_services_t *b, const char *name,
                                      const ls_kstr_t *keys, int32_t nkeys, bool synonyms,
                                      bool docs, cfg_entry_t **out)
{
    static const struct {
        const char *name, *def, *doc;
        int8_t type;
    } known[] = {
        {LS_TELEMETRY_METRICS, "", "Subscription metrics list", LS_KAFKA_CONFIG_TYPE_LIST},
        {LS_TELEMETRY_INTERVAL, "300000", "Push interval in milliseconds",
         LS_KAFKA_CONFIG_TYPE_INT},
        {LS_TELEMETRY_MATCH, "", "Client match pattern list", LS_KAFKA_CONFIG_TYPE_LIST},
    };
    cfg_entry_t *v = ls_arena_alloc(a, sizeof known / sizeof known[0] * sizeof *v);
    int32_t n = 0;
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        if (!key_wanted(keys, nkeys, known[i].name)) continue;
        char *set = b->client_metrics
                        ? ls_telemetry_subs_get(b->client_metrics, name, known[i].name)
                        : NULL;
        cfg_entry_t *e = &v[n++];
        memset(e, 0, sizeof *e);
        e->Name = ls_kstr_c(known[i].name);
        e->Value = ls_kstr_c(ls_arena_printf(a, "%s", set ? set : known[i].def));
        e->ConfigSource = set ? LS_KAFKA_CONFIG_SOURCE_CLIENT_METRICS_CONFIG
                              : LS_KAFKA_CONFIG_SOURCE_DEFAULT_CONFIG;
        e->ConfigType = known[i].type;
        e->Documentation = docs ? ls_kstr_c(known[i].doc) : ls_kstr_null();
        if (synonyms) {
            e->Synonyms = ls_arena_alloc(a, sizeof *e->Synonyms);
            e->Synonyms[0] = (cfg_syn_t){e->Name, e->Value, e->ConfigSource};
            e->NumSynonyms = 1;
        }
        ls_free(set);
    }
    *out = v;
    return n;
}

/* ----------------------------------------------------------------- handler */

void ls_kafka_handle_describe_configs(ls_kreq_t *req)
{
    ls_kafka_services_t *b = req->svc;
    ls_arena_t *a = req->arena;
    const ls_kafka_DescribeConfigsRequest *m = req->msg;
    ls_kafka_DescribeConfigsResponse resp;
    memset(&resp, 0, sizeof resp);
    resp.NumResults = m->NumResources;
    resp.Results = ls_kmsg_alloc(a, m->NumResources, sizeof *resp.Results);
    ls_stream_t **held = ls_kmsg_alloc(a, m->NumResources, sizeof *held);
    char *node = ls_arena_printf(a, "%d", (int)b->node_id);
    for (int32_t i = 0; i < m->NumResources; i++) {
        const ls_kafka_DescribeConfigsRequest_DescribeConfigsResource *q = &m->Resources[i];
        ls_kafka_DescribeConfigsResponse_DescribeConfigsResult *r = &resp.Results[i];
        r->ResourceType = q->ResourceType;
        r->ResourceName = q->ResourceName;
        r->ErrorMessage = ls_kstr_null();
        /* as Kafka: DESCRIBE_CONFIGS on the topic, or on the cluster for brokers */
        r->ErrorCode = ls_kreq_config_denied(req, q->ResourceType, q->ResourceName,
                                             LS_ACL_OP_DESCRIBE_CONFIGS);
        if (r->ErrorCode != LS_KERR_NONE) {
            r->ErrorMessage = ls_kstr_c("Authorization failed.");
            continue;
        }
        switch (q->ResourceType) {
        case LS_KAFKA_RESOURCE_TOPIC: {
            const char *name = ls_kafka_topic_name(a, q->ResourceName);
            if (!name) {
                r->ErrorCode = LS_KERR_INVALID_TOPIC_EXCEPTION;
                r->ErrorMessage = ls_kstr_c(ls_arena_printf(
                    a, "Topic name %s is illegal", ls_kafka_printable(a, q->ResourceName)));
                break;
            }
            ls_stream_t *s = ls_catalog_lookup(b->catalog, LS_DEFAULT_NAMESPACE, name);
            if (!s) {
                r->ErrorCode = LS_KERR_UNKNOWN_TOPIC_OR_PARTITION;
                r->ErrorMessage = ls_kstr_c(ls_arena_printf(a, "Topic '%s' does not exist.", name));
                break;
            }
            held[i] = s;
            r->NumConfigs = ls_kafka_topic_configs(
                a, b, s->ns, s->config, s->nconfig, q->ConfigurationKeys, q->NumConfigurationKeys,
                m->IncludeSynonyms, m->IncludeDocumentation, &r->Configs);
            add_table_statuses(a, b, s, q->ConfigurationKeys, q->NumConfigurationKeys, r);
            break;
        }
        case LS_KAFKA_RESOURCE_BROKER:
            if (q->ResourceName.len > 0 && !ls_kstr_eq(q->ResourceName, node)) {
                r->ErrorCode = LS_KERR_INVALID_REQUEST;
                r->ErrorMessage = ls_kstr_c(ls_arena_printf(
                    a, "Unexpected broker id, expected %s or empty string, but received %.*s", node,
                    (int)q->ResourceName.len, q->ResourceName.ptr));
                break;
            }
            r->NumConfigs = broker_configs(a, b, q->ResourceName.len <= 0, q->ConfigurationKeys,
                                           q->NumConfigurationKeys, m->IncludeSynonyms,
                                           m->IncludeDocumentation, &r->Configs);
            break;
        case LS_KAFKA_RESOURCE_BROKER_LOGGER:
            r->NumConfigs = 0; /* no per-logger levels to describe */
            break;
        case LS_KAFKA_RESOURCE_GROUP: {
            bool exact;
            const char *group = ls_arena_kstr(a, q->ResourceName, &exact);
            if (!exact || !*group) {
                r->ErrorCode = LS_KERR_INVALID_REQUEST;
                r->ErrorMessage = ls_kstr_c("A group resource needs a group id.");
                break;
            }
            r->NumConfigs =
                group_configs(a, b, group, q->ConfigurationKeys, q->NumConfigurationKeys,
                              m->IncludeSynonyms, m->IncludeDocumentation, &r->Configs);
            break;
        }
        case LS_KAFKA_RESOURCE_CLIENT_METRICS: {
            bool exact;
            const char *name =
                q->ResourceName.len >= 0 ? ls_arena_kstr(a, q->ResourceName, &exact) : "";
            if (q->ResourceName.len < 0 || !exact || !*name) {
                r->ErrorCode = LS_KERR_INVALID_REQUEST;
                r->ErrorMessage = ls_kstr_c("Subscription name can't be empty");
                break;
            }
            r->NumConfigs =
                client_metrics_configs(a, b, name, q->ConfigurationKeys, q->NumConfigurationKeys,
                                       m->IncludeSynonyms, m->IncludeDocumentation, &r->Configs);
            break;
        }
        default:
            r->ErrorCode = LS_KERR_INVALID_REQUEST;
            r->ErrorMessage =
                ls_kstr_c(ls_arena_printf(a, "Unsupported resource type %d", (int)q->ResourceType));
            break;
        }
    }
    ls_kw_t w;
    ls_kreq_encode(req, &w, &resp);
    for (int32_t i = 0; i < m->NumResources; i++)
        ls_stream_release(held[i]);
    ls_kreq_respond(req, &w);
}

/* ------------------------------------------------ ListConfigResources */

typedef ls_kafka_ListConfigResourcesResponse_ConfigResource cres_t;

/* v0 has no ResourceTypes: it lists client-metrics resources only. */
static bool wants_type(const ls_kreq_t *req, int8_t type)
{
    const ls_kafka_ListConfigResourcesRequest *m = req->msg;
    if (req->api_version == 0) return type == LS_KAFKA_RESOURCE_CLIENT_METRICS;
    if (m->NumResourceTypes <= 0) return true;
    for (int32_t i = 0; i < m->NumResourceTypes; i++)
        if (m->ResourceTypes[i] == type) return true;
    return false;
}

void ls_kafka_handle_list_config_resources(ls_kreq_t *req)
{
    ls_kafka_services_t *b = req->svc;
    ls_arena_t *a = req->arena;
    const ls_kafka_ListConfigResourcesRequest *m = req->msg;
    ls_kafka_ListConfigResourcesResponse r;
    memset(&r, 0, sizeof r);
    if (!ls_kreq_allowed_cluster(req, LS_ACL_OP_DESCRIBE_CONFIGS)) {
        r.ErrorCode = LS_KERR_CLUSTER_AUTHORIZATION_FAILED;
        goto out;
    }
    for (int32_t i = 0; i < m->NumResourceTypes; i++) {
        switch (m->ResourceTypes[i]) {
        case LS_KAFKA_RESOURCE_TOPIC:
        case LS_KAFKA_RESOURCE_BROKER:
        case LS_KAFKA_RESOURCE_BROKER_LOGGER:
        case LS_KAFKA_RESOURCE_CLIENT_METRICS:
        case LS_KAFKA_RESOURCE_GROUP: break;
        default: r.ErrorCode = LS_KERR_UNSUPPORTED_VERSION; goto out;
        }
    }
    ls_member_t *live = NULL;
    int nlive = 0, nall = 0;
    ls_stream_t **all = NULL;
    bool brokers = wants_type(req, LS_KAFKA_RESOURCE_BROKER);
    bool loggers = wants_type(req, LS_KAFKA_RESOURCE_BROKER_LOGGER);
    if (brokers || loggers) nlive = ls_ksvc_members(b, &live);
    if (wants_type(req, LS_KAFKA_RESOURCE_TOPIC))
        all = ls_catalog_list(b->catalog, LS_DEFAULT_NAMESPACE, &nall);
    int ngroups = 0; /* the groups with dynamic configs (group/group_configs.h) */
    char **groups = wants_type(req, LS_KAFKA_RESOURCE_GROUP) && b->group_configs
                        ? ls_group_configs_groups(b->group_configs, &ngroups)
                        : NULL;
    int nsubs = 0; /* the client-metrics subscriptions (telemetry/subscriptions.h) */
    char **subs = wants_type(req, LS_KAFKA_RESOURCE_CLIENT_METRICS) && b->client_metrics
                      ? ls_telemetry_subs_names(b->client_metrics, &nsubs)
                      : NULL;
    r.ConfigResources =
        ls_kmsg_alloc(a, 2 * nlive + nall + ngroups + nsubs, sizeof *r.ConfigResources);
    /* Kafka's order: groups, client metrics, loggers, brokers, topics */
    for (int pass = 0; pass < 2; pass++) {
        char **names = pass == 0 ? groups : subs;
        for (int i = 0; i < (pass == 0 ? ngroups : nsubs); i++) {
            r.ConfigResources[r.NumConfigResources++] =
                (cres_t){.ResourceName = ls_kstr_c(ls_arena_printf(a, "%s", names[i])),
                         .ResourceType = pass == 0 ? LS_KAFKA_RESOURCE_GROUP
                                                   : LS_KAFKA_RESOURCE_CLIENT_METRICS};
            ls_free(names[i]);
        }
        ls_free(names);
    }
    for (int pass = 0; pass < 2; pass++) {
        if (!(pass == 0 ? loggers : brokers)) continue;
        for (int i = 0; i < nlive; i++)
            r.ConfigResources[r.NumConfigResources++] =
                (cres_t){.ResourceName = ls_kstr_c(ls_arena_printf(a, "%d", (int)live[i].id)),
                         .ResourceType = pass == 0 ? LS_KAFKA_RESOURCE_BROKER_LOGGER
                                                   : LS_KAFKA_RESOURCE_BROKER};
    }
    for (int i = 0; i < nall; i++)
        r.ConfigResources[r.NumConfigResources++] =
            (cres_t){.ResourceName = ls_kstr_c(ls_arena_printf(a, "%s", all[i]->name)),
                     .ResourceType = LS_KAFKA_RESOURCE_TOPIC};
    if (all) ls_stream_list_release(all, nall);
    ls_free(live);
out:;
    ls_kw_t w;
    ls_kreq_encode(req, &w, &r);
    ls_kreq_respond(req, &w);
}
