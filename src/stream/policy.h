/* Materialization policy (the Lakestream model): how a stream becomes a table.
 *
 * Every field is a `lakestream.table.*` key. Its value is resolved, per
 * field, from the first layer that sets it:
 *   stream     the topic's configs (CreateTopics / AlterConfigs /
 *              IncrementalAlterConfigs), stored in the stream record;
 *   namespace  the namespace record's properties (/ls/ns/<ns>);
 *   cluster    the broker configuration key of the same name;
 *   default    the built-in default below.
 * Every layer holds only values this module accepted (ls_policy_check), so
 * resolution of stored values fails only on records written by hand, or
 * written by a broker older than s28, which accepted (and did not apply)
 * catalog values other than builtin and sort.order values other than none:
 * such a stream's policy fails to resolve, naming key, layer and value, and
 * its table is held back (lake/table_plan.c logs it) until the value is
 * removed or set to a supported one.
 *
 * Fields and their accepted values. Every accepted value is applied (the
 * broker acts on it); a value it would not act on is refused by
 * ls_policy_check, never stored and ignored:
 *   enabled              true|false                      applied
 *   catalog              builtin | <name> of a configured applied (compact/catalog_sync.c:
 *                        catalog.<name>.* REST catalog   snapshots mirrored there)
 *   name                 template: {namespace} {topic}   applied
 *   partition            none | list of Iceberg transforms of the Kafka
 *                        columns: identity(c), bucket(N, c), truncate(W, c)
 *                        for c = partition (int) or offset (long);
 *                        year/month/day/hour(timestamp), bucket(N,
 *                        timestamp); bare day, hour = of timestamp; and a
 *                        typed table's value and key fields (their type
 *                        checked when the table's schema is known)
 *                                                        applied at table creation
 *   target.file.bytes    1024..1 GiB                     applied
 *   compression          zstd|snappy|gzip|none           applied
 *   commit.interval.ms   1000..86400000 (freshness)      applied
 *   start.position       earliest|latest                 applied
 *   write.mode           append|upsert                   applied (upsert: lake/materialize.c;
 *                                                        the default for a topic whose own
 *                                                        cleanup.policy has compact)
 *   sort.order           none (no sorted files)          applied
 *   error.handling       fail|skip|dead-letter           applied
 *   snapshot.retention.ms  0 (never) | 1000..1 year      applied
 *   snapshot.retention.min 1..100000 (newest kept)        applied
 *   file.delete.delay.ms 0..86400000 (unreferenced table  applied (table/iceberg_table.h
 *                        files stay readable this long)  ls_ice_table_set_file_grace)
 *   value.format         raw | schema-registry            applied (table/iceberg_typed.h)
 *   rewrite.min.files    0 (never) | 4..1000             applied (table/file_rewrite.h)
 *   changelog            true|false                      applied (lake/materialize.c)
 *   evolution            fail|dead-letter|new-table      applied (lake/materialize.c: what
 *                                                        a record whose schema the typed table
 *                                                        cannot evolve to does; new-table is
 *                                                        refused with write.mode=upsert on a
 *                                                        typed table)
 *   key.format           raw | schema-registry            applied (table/iceberg_typed.h: the
 *                        | schema-registry-latest        decoded key in _kafka_key_typed)
 *   value.format also takes schema-registry-latest: bytes without the
 *                        Confluent header, decoded by the subject's latest version;
 *                        and json: schemaless JSON objects, columns inferred
 *                        (lake/materialize.c; key.format must stay raw)
 *   value.subject.name.strategy, key.subject.name.strategy
 *                        TopicNameStrategy | RecordNameStrategy | TopicRecordNameStrategy
 *                                                        applied (lake/materialize.c): the
 *                                                        subject a header's schema id must be a
 *                                                        version of; with -latest the subject
 *                                                        whose latest version decodes (only
 *                                                        TopicNameStrategy: a cross-field rule)
 *   format               iceberg | delta | iceberg,delta applied (table/delta_mirror.h: a
 *                                                        Delta log over the same data files,
 *                                                        written by the pass that commits them)
 *   delta.checkpoint.interval 1..100000                  applied (table/delta_mirror.h: a Delta
 *                                                        checkpoint at every multiple of it)
 *   upsert.strategy      copy-on-write | merge-on-read   applied (table/file_rewrite.h: how an
 *                                                        upsert commit removes old rows; with
 *                                                        write.mode=upsert, without delta)
 *   format.version       2 | 3                           applied (lake/materialize.c: tables
 *                                                        created at it, v2 tables upgraded to 3;
 *                                                        never lowered on a stream that had 3;
 *                                                        3 not with delta)
 *   primary.key          empty | key fields a,b,...      applied (lake/materialize.c: the
 *                                                        upsert identity; the table's
 *                                                        identifier-field-ids); needs a typed
 *                                                        key and write.mode=upsert (cross-field)
 *
 * `lakestream.table.enabled.since` (wall-clock ms) is kept by the broker, not
 * set by users: the moment the stream's table last became enabled. With
 * start.position=latest only records written at or after it are
 * materialized.
 *
 * No I/O; the only global state read is the installed external catalog set
 * (base/catalog_conf.h), read-only once the broker runs: safe on any thread. */
#ifndef LS_POLICY_H
#define LS_POLICY_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "stream/catalog.h"

#define LS_POLICY_PREFIX "lakestream.table."
#define LS_POLICY_SINCE_KEY "lakestream.table.enabled.since"
#define LS_POLICY_BUILTIN_CATALOG "builtin"
#define LS_POLICY_MAX_PART 8
#define LS_POLICY_MIN_COMMIT_INTERVAL_MS 1000
#define LS_POLICY_MAX_PK 16       /* fields in a primary key */
#define LS_POLICY_MAX_PK_NAME 128 /* bytes of one field name */

typedef enum ls_policy_field {
    LS_POLICY_ENABLED,
    LS_POLICY_CATALOG,
    LS_POLICY_NAME,
    LS_POLICY_PARTITION,
    LS_POLICY_TARGET_FILE_BYTES,
    LS_POLICY_COMPRESSION,
    LS_POLICY_COMMIT_INTERVAL_MS,
    LS_POLICY_START_POSITION,
    LS_POLICY_WRITE_MODE,
    LS_POLICY_SORT_ORDER,
    LS_POLICY_ERROR_HANDLING,
    LS_POLICY_SNAPSHOT_RETENTION_MS,
    LS_POLICY_SNAPSHOT_RETENTION_MIN,
    LS_POLICY_VALUE_FORMAT,
    LS_POLICY_REWRITE_MIN_FILES,
    LS_POLICY_CHANGELOG,
    LS_POLICY_EVOLUTION,
    LS_POLICY_KEY_FORMAT,
    LS_POLICY_VALUE_SUBJECT_STRATEGY,
    LS_POLICY_KEY_SUBJECT_STRATEGY,
    LS_POLICY_PRIMARY_KEY,
    LS_POLICY_FILE_DELETE_DELAY_MS,
    LS_POLICY_FORMAT,
    LS_POLICY_DELTA_CHECKPOINT_INTERVAL,
    LS_POLICY_UPSERT_STRATEGY,
    LS_POLICY_FORMAT_VERSION,
    LS_POLICY_NFIELDS
} ls_policy_field;

typedef enum ls_policy_source {
    LS_POLICY_SRC_STREAM,
    LS_POLICY_SRC_NAMESPACE,
    LS_POLICY_SRC_CLUSTER,
    LS_POLICY_SRC_DEFAULT,
} ls_policy_source;

/* Raw-table columns a partition field may use, and transforms. */
typedef enum {
    LS_POLICY_COL_PARTITION,
    LS_POLICY_COL_TIMESTAMP,
    LS_POLICY_COL_OFFSET,
    LS_POLICY_COL_FIELD, /* a typed table's value or key field: ls_policy_part_t.field */
} ls_policy_column;
typedef enum {
    LS_POLICY_IDENTITY,
    LS_POLICY_HOUR,
    LS_POLICY_DAY,
    LS_POLICY_MONTH,
    LS_POLICY_YEAR,
    LS_POLICY_BUCKET,   /* param: N buckets */
    LS_POLICY_TRUNCATE, /* param: width W */
    LS_POLICY_VOID,     /* always null */
} ls_policy_transform;
/* Subject name strategies (Confluent's names), for typed keys and values;
 * the same order as registry.h's ls_sr_strategy, which names subjects. */
typedef enum {
    LS_POLICY_TOPIC_NAME,        /* <topic>-key, <topic>-value */
    LS_POLICY_RECORD_NAME,       /* the record's full name */
    LS_POLICY_TOPIC_RECORD_NAME, /* <topic>-<record full name> */
} ls_policy_strategy;

typedef struct ls_policy_part {
    ls_policy_column column;
    ls_policy_transform transform;
    int param;       /* bucket N, truncate W (>= 1); else 0 */
    char field[128]; /* LS_POLICY_COL_FIELD: the column path ("customer.country",
                      * "_kafka_key_typed.id"); its type is checked when the
                      * table's schema is known */
} ls_policy_part_t;

/* The three stored layers; any may be empty (n = 0). */
typedef struct ls_policy_layers {
    const ls_prop_t *stream;
    int nstream;
    const ls_prop_t *ns;
    int nns;
    const ls_prop_t *cluster;
    int ncluster;
} ls_policy_layers_t;

typedef struct ls_policy {
    /* per field: resolved text (points into the layers or static text) and source */
    const char *value[LS_POLICY_NFIELDS];
    ls_policy_source source[LS_POLICY_NFIELDS];
    /* typed values of the applied fields */
    bool enabled;
    ls_policy_part_t part[LS_POLICY_MAX_PART];
    int npart;
    int64_t target_file_bytes;
    int64_t commit_interval_ms;
    int64_t snapshot_retention_ms;  /* 0: snapshots never expire */
    int64_t snapshot_retention_min; /* the newest this many never expire */
    int64_t file_delete_delay_ms;   /* unreferenced files stay readable this long */
    int64_t rewrite_min_files;      /* small files a rewrite takes at least; 0: never */
    bool start_latest;
    bool value_typed;  /* value.format=schema-registry: typed columns */
    bool key_typed;    /* key.format=schema-registry(-latest): a typed key column */
    bool value_latest; /* value.format=schema-registry-latest: no header, latest version */
    bool value_json;   /* value.format=json: schemaless JSON, inferred columns (value_typed too) */
    bool key_latest;   /* key.format=schema-registry-latest */
    ls_policy_strategy value_strategy; /* value.subject.name.strategy */
    ls_policy_strategy key_strategy;   /* key.subject.name.strategy */
    int npk;            /* primary.key: how many key fields (0: none; ls_policy_primary_key) */
    bool error_skip;    /* error.handling=skip */
    bool error_dlq;     /* error.handling=dead-letter: into <name>__dlq */
    bool evolution_dlq; /* evolution=dead-letter: into <name>__dlq */
    bool evolution_new_table;          /* evolution=new-table: a new table version <name>__vN */
    bool upsert;                       /* write.mode=upsert: one row per key */
    bool merge_on_read;                /* upsert.strategy=merge-on-read: position deletes */
    int format_version;                /* format.version: the Iceberg table's, 2 or 3 */
    bool changelog;                    /* also the append-only table <name>__changelog */
    bool delta;                        /* format has delta: a Delta Lake log beside the table */
    int64_t delta_checkpoint_interval; /* a Delta checkpoint every this many versions */
    int64_t enabled_since_ms;          /* -1: not recorded */
} ls_policy_t;

/* Field metadata. */
const char *ls_policy_key(ls_policy_field f);
const char *ls_policy_default(ls_policy_field f);
const char *ls_policy_accepted(ls_policy_field f); /* human-readable accepted values */
const char *ls_policy_doc(ls_policy_field f);
const char *ls_policy_source_name(ls_policy_source s); /* stream|namespace|cluster|default */
/* Field of a key, or -1 (also for the broker-kept LS_POLICY_SINCE_KEY). */
int ls_policy_field_of(const char *key);
bool ls_policy_is_key(const char *key); /* starts with LS_POLICY_PREFIX */

/* Validates a user-set `lakestream.table.*` key and value. LS_EINVAL with a
 * message naming the key and the accepted values (an unknown key lists the
 * known ones; LS_POLICY_SINCE_KEY is refused as broker-maintained). */
ls_status ls_policy_check(const char *key, const char *value, char *err, size_t errlen);

/* Resolves every field stream -> namespace -> cluster -> default. LS_EINVAL
 * (message names key, layer and value) when a stored value is invalid, or
 * when resolved values break a cross-field rule (a -latest format with a
 * subject strategy that needs the record's name); every field still gets a
 * value and a source (for describing it). */
ls_status ls_policy_resolve(const ls_policy_layers_t *l, ls_policy_t *out, char *err,
                            size_t errlen);

/* Resolves s's policy from its config, its namespace's properties in the
 * catalog's copy (the snapshot is kept in *ns, possibly NULL: release it with
 * ls_namespace_release after the policy's last use) and the cluster defaults. */
ls_status ls_policy_for_stream(ls_catalog_t *cat, const ls_stream_t *s, const ls_prop_t *cluster,
                               int ncluster, ls_policy_t *out, ls_namespace_t **ns, char *err,
                               size_t errlen);

/* The fields of p's primary key (p->npk of them) into names. */
void ls_policy_primary_key(const ls_policy_t *p, char names[][LS_POLICY_MAX_PK_NAME]);

/* Expands the name template. LS_EINVAL when the result is not a valid table
 * name (1..249 of [a-zA-Z0-9._-], not "." or ".."). */
ls_status ls_policy_table_name(const ls_policy_t *p, const char *ns, const char *topic, char *out,
                               size_t cap, char *err, size_t errlen);

/* The value LS_POLICY_SINCE_KEY must hold after a stream's policy changes
 * from `before` (NULL: the stream is new) to `after`: NULL when the table is
 * disabled, a fresh stamp (now_ms, written into buf) when it just became
 * enabled, else the value it already had (may be NULL). */
const char *ls_policy_since_after(const ls_policy_t *before, const ls_policy_t *after,
                                  int64_t now_ms, char *buf, size_t cap);
#endif
