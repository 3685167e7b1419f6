/* Broker configuration: Kafka-style properties file, then LAKESTREAM_* env
 * variables, then command-line flags (later sources override earlier ones).
 * Every key is declared once in a settings table (base/config_schema.h; the
 * broker's is server/settings.c) with its type, default, bounds and help
 * text; this parser reads the table it is given. A bad value fails with a
 * message naming the key.
 *
 * Env mapping: key "wal.flush.max.bytes" <-> LAKESTREAM_WAL_FLUSH_MAX_BYTES.
 * An unknown LAKESTREAM_* variable is an error (a typo must not be ignored),
 * except LAKESTREAM_CONFIG, which names a properties file (see ls_config_load).
 * Flag mapping: --wal.flush.max.bytes=V or --wal.flush.max.bytes V; a bare
 * --boolean.key means true. */
#ifndef LS_CONFIG_H
#define LS_CONFIG_H
#include <stdint.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/catalog_conf.h"

/* wal.flush.min.interval.ms on s3:// unless set (docs/OBJECT_STORES.md). */
#define LS_WAL_FLUSH_MIN_INTERVAL_S3_MS 200

/* Kafka's security protocols (listener.security.protocol.map values). */
typedef enum ls_secproto {
    LS_SECPROTO_PLAINTEXT,
    LS_SECPROTO_SSL,
    LS_SECPROTO_SASL_PLAINTEXT,
    LS_SECPROTO_SASL_SSL,
} ls_secproto;

#define LS_MAX_LISTENERS 8

/* One Kafka listener (an entry of listeners=NAME://host:port,...), resolved
 * by ls_config_finish: its protocol from listener.security.protocol.map and
 * its advertised address from advertised.listeners (or its own). */
typedef struct ls_listener_cfg {
    char name[64]; /* upper case, e.g. PLAINTEXT, SSL, INTERNAL */
    char host[256];
    int port; /* 0: pick a free port (the broker writes back the one it got) */
    char adv_host[256];
    int adv_port;
    ls_secproto protocol;
} ls_listener_cfg_t;

/* "PLAINTEXT", "SSL", ... */
const char *ls_secproto_name(ls_secproto p);
/* Whether a listener of protocol p authenticates with SASL / runs TLS. */
static inline bool ls_secproto_sasl(ls_secproto p)
{
    return p == LS_SECPROTO_SASL_PLAINTEXT || p == LS_SECPROTO_SASL_SSL;
}
static inline bool ls_secproto_tls(ls_secproto p)
{
    return p == LS_SECPROTO_SSL || p == LS_SECPROTO_SASL_SSL;
}

/* A settings table (base/config_schema.h). */
typedef struct ls_config_schema ls_config_schema_t;

typedef struct ls_config {
    const ls_config_schema_t *schema; /* the table this config was made from */
    /* paths and stores */
    char *data_dir;          /* data.dir, default "./data" */
    char *object_store_url;  /* object.store.url, default "file://<data.dir>/objects" */
    char *metadata_url;      /* metadata.url, default "sqlite://<data.dir>/meta.db" */
    bool object_store_fsync; /* object.store.fsync, default true */
    /* S3 object store (object.store.url=s3://...); unset strings fall back to AWS_* env */
    char *s3_endpoint;               /* s3.endpoint */
    char *s3_region;                 /* s3.region */
    char *s3_access_key;             /* s3.access.key (secret-adjacent: never logged) */
    char *s3_secret_key;             /* s3.secret.key (never logged) */
    char *s3_session_token;          /* s3.session.token (never logged) */
    char *s3_path_style;             /* s3.path.style: auto|true|false */
    char *s3_create_only;            /* s3.create.only: auto|true|false */
    char *s3_ca_file;                /* s3.ca.file */
    bool s3_tls_verify;              /* s3.tls.verify, default true */
    bool s3_unsigned_payload;        /* s3.unsigned.payload, default false */
    int64_t s3_request_timeout_ms;   /* s3.request.timeout.ms, default 30000 */
    int64_t s3_connect_timeout_ms;   /* s3.connect.timeout.ms, default 5000 */
    int64_t s3_max_connections;      /* s3.max.connections, default 32 */
    int64_t s3_max_retries;          /* s3.max.retries, default 5 */
    int64_t s3_retry_backoff_ms;     /* s3.retry.backoff.ms, default 50 */
    int64_t s3_retry_backoff_max_ms; /* s3.retry.backoff.max.ms, default 2000 */
    int64_t s3_multipart_threshold;  /* s3.multipart.threshold, default 32 MiB */
    int64_t s3_multipart_part_size;  /* s3.multipart.part.size, default 8 MiB */
    /* listener */
    char *listen_host;     /* the first listener's host; default 127.0.0.1 */
    int listen_port;       /* the first listener's port; default 9092 */
    char *advertised_host; /* advertised.host: the first listener's */
    int advertised_port;   /* advertised.port: the first listener's */
    /* Kafka listeners (listeners, advertised.listeners, listener.security.protocol.map),
     * complete after ls_config_finish; [0] is the first (listen_host above) */
    ls_listener_cfg_t listeners[LS_MAX_LISTENERS];
    int nlisteners;
    ls_listener_cfg_t advertised[LS_MAX_LISTENERS]; /* advertised.listeners as given */
    int nadvertised;
    char *listener_protocol_map; /* listener.security.protocol.map; NULL: Kafka's default */
    /* TLS of SSL/SASL_SSL listeners (Kafka's ssl.* names; base/tls.h applies them) */
    char *ssl_keystore_type;              /* ssl.keystore.type: PEM */
    char *ssl_keystore_location;          /* ssl.keystore.location */
    char *ssl_keystore_certificate_chain; /* ssl.keystore.certificate.chain (inline PEM) */
    char *ssl_keystore_key;               /* ssl.keystore.key (inline PEM; secret) */
    char *ssl_key_password;               /* ssl.key.password (secret) */
    char *ssl_truststore_type;            /* ssl.truststore.type: PEM */
    char *ssl_truststore_location;        /* ssl.truststore.location */
    char *ssl_truststore_certificates;    /* ssl.truststore.certificates (inline PEM) */
    char *ssl_enabled_protocols;          /* ssl.enabled.protocols */
    char *ssl_protocol;                   /* ssl.protocol */
    char *ssl_cipher_suites;              /* ssl.cipher.suites; NULL: OpenSSL's defaults */
    char *ssl_client_auth;                /* ssl.client.auth: required|requested|none */
    char *ssl_principal_mapping_rules;    /* ssl.principal.mapping.rules */
    int32_t broker_id;                    /* broker.id, default 0 */
    char *cluster_id;                  /* cluster.id, default: generated and stored in metadata */
    char *broker_rack;                 /* broker.rack: zone for zone-aware placement, default "" */
    char *http_host;                   /* http.listen host; NULL: HTTP disabled */
    int http_port;                     /* http.listen port, default 8181 (0: pick a free port) */
    char *registry_host;               /* schema.registry.listen host; NULL: registry disabled */
    int registry_port;                 /* schema.registry.listen port, default 8081 */
    int64_t broker_session_timeout_ms; /* broker.session.timeout.ms: membership lease TTL, default
                                          9000 */
    /* WAL writer */
    int64_t wal_flush_max_bytes; /* wal.flush.max.bytes, default 4 MiB */
    int64_t wal_flush_linger_ms; /* wal.flush.linger.ms, default 250 (upper bound on batching) */
    int64_t wal_flush_min_interval_ms; /* wal.flush.min.interval.ms; -1 (default) until
                                          ls_config_finish picks the store's: 0 for file://,
                                          LS_WAL_FLUSH_MIN_INTERVAL_S3_MS for s3:// */
    int64_t wal_max_inflight_flushes;  /* wal.max.inflight.flushes, default 4 */
    int64_t num_io_threads;            /* num.io.threads: threads of the store calls other than the
                                          WAL's (libuv's pool, UV_THREADPOOL_SIZE), default 16 */
    int64_t
        wal_buffer_max_bytes; /* wal.buffer.max.bytes: produce backpressure bound, default 64 MiB */
    int64_t wal_gc_grace_ms;  /* wal.gc.grace.ms: age before an uncommitted WAL object is garbage,
                                 default 60000 */
    /* compaction */
    bool compaction_enabled;        /* compaction.enabled, default true */
    int64_t compaction_interval_ms; /* compaction.interval.ms, default 10000 */
    int64_t compaction_min_age_ms;  /* compaction.min.age.ms: hot window, default 60000 */
    int64_t compaction_max_entries; /* compaction.max.entries: WAL entries per compacted object */
    int64_t compaction_max_bytes;   /* compaction.max.bytes: bytes per compacted object */
    int64_t compaction_keymap_max_bytes; /* compaction.keymap.max.bytes: key compaction map bound */
    int64_t compaction_wal_read_budget_bytes; /* compaction.wal.read.budget.bytes */
    int64_t compaction_lease_ttl_ms; /* compaction.lease.ttl.ms: per-log ownership lease, default
                                        30000 */
    /* cluster defaults of the table materialization policy (lakestream.table.*);
     * NULL = built-in default; values are validated by stream/policy.c */
    char *table_enabled;                /* lakestream.table.enabled */
    char *table_catalog;                /* lakestream.table.catalog */
    char *table_name;                   /* lakestream.table.name */
    char *table_partition;              /* lakestream.table.partition */
    char *table_target_file_bytes;      /* lakestream.table.target.file.bytes */
    char *table_compression;            /* lakestream.table.compression */
    char *table_commit_interval_ms;     /* lakestream.table.commit.interval.ms */
    char *table_start_position;         /* lakestream.table.start.position */
    char *table_snapshot_retention_ms;  /* lakestream.table.snapshot.retention.ms */
    char *table_snapshot_retention_min; /* lakestream.table.snapshot.retention.min */
    char *table_file_delete_delay_ms;   /* lakestream.table.file.delete.delay.ms */
    char *table_rewrite_min_files;      /* lakestream.table.rewrite.min.files */
    char *table_changelog;              /* lakestream.table.changelog */
    int64_t table_orphan_grace_ms;      /* table.orphan.grace.ms, default 3600000 */
    char *table_cold_reads;             /* table.cold.reads: table | compacted-object */
    int64_t table_cold_cache_max_bytes; /* table.cold.cache.max.bytes */
    /* read path */
    int64_t read_cache_max_bytes; /* read.cache.max.bytes, default 256 MiB */
    int64_t read_ahead_bytes;     /* read.ahead.bytes, default 4 MiB */
    /* Kafka protocol */
    int64_t message_max_bytes;            /* message.max.bytes, default 1048588 (as Kafka) */
    int64_t socket_request_max_bytes;     /* socket.request.max.bytes, default 100 MiB */
    int64_t queued_max_request_bytes;     /* queued.max.request.bytes: frames being received */
    int64_t max_connections;              /* max.connections (0: from the descriptor limit) */
    int64_t max_connections_per_ip;       /* max.connections.per.ip (0: half of max.connections) */
    int64_t connections_max_idle_ms;      /* connections.max.idle.ms */
    int64_t request_receive_timeout_ms;   /* request.receive.timeout.ms: one frame, whole */
    int64_t connections_first_request_ms; /* connections.first.request.timeout.ms */
    int64_t http_header_timeout_ms;       /* http.header.timeout.ms */
    int64_t http_body_timeout_ms;         /* http.body.timeout.ms */
    int64_t http_max_connections_per_ip;  /* http.max.connections.per.ip */
    bool auto_create_topics_enable;       /* auto.create.topics.enable, default true */
    int32_t num_partitions;               /* num.partitions, default 1 */
    int32_t max_partitions_per_topic;     /* max.partitions.per.topic */
    int64_t max_partitions;               /* max.partitions: all topics of the cluster */
    int64_t log_retention_ms;    /* log.retention.ms, default 604800000 (stored as topic default) */
    int64_t log_retention_bytes; /* log.retention.bytes, default -1 (no limit) */
    char *log_message_timestamp_type;            /* log.message.timestamp.type, CreateTime */
    int64_t log_message_timestamp_before_max_ms; /* default INT64_MAX */
    int64_t log_message_timestamp_after_max_ms;  /* default 3600000 (Kafka 4) */
    int64_t log_retention_check_interval_ms; /* log.retention.check.interval.ms, default 300000 */
    /* client quotas (kafka/kquota.c) */
    int32_t quota_window_num;          /* quota.window.num, default 11 */
    int32_t quota_window_size_seconds; /* quota.window.size.seconds, default 1 */
    /* consumer groups */
    int32_t group_min_session_timeout_ms;      /* group.min.session.timeout.ms, default 6000 */
    int32_t group_max_session_timeout_ms;      /* group.max.session.timeout.ms, default 1800000 */
    int32_t group_initial_rebalance_delay_ms;  /* group.initial.rebalance.delay.ms, default 0 */
    int32_t group_max_size;                    /* group.max.size, default 2147483647 */
    int32_t group_consumer_session_timeout_ms; /* group.consumer.session.timeout.ms */
    int32_t group_consumer_heartbeat_interval_ms; /* group.consumer.heartbeat.interval.ms */
    int32_t group_consumer_max_size;              /* group.consumer.max.size */
    /* group.{consumer,share,streams}.{min,max}.{session.timeout,heartbeat.interval}.ms:
     * the bounds of the kind's session timeout and heartbeat interval, broker
     * and group configs alike (Kafka's defaults 45000..60000 and 5000..15000) */
    int32_t group_consumer_min_session_timeout_ms, group_consumer_max_session_timeout_ms;
    int32_t group_consumer_min_heartbeat_interval_ms, group_consumer_max_heartbeat_interval_ms;
    int32_t group_share_min_session_timeout_ms, group_share_max_session_timeout_ms;
    int32_t group_share_min_heartbeat_interval_ms, group_share_max_heartbeat_interval_ms;
    int32_t group_streams_min_session_timeout_ms, group_streams_max_session_timeout_ms;
    int32_t group_streams_min_heartbeat_interval_ms, group_streams_max_heartbeat_interval_ms;
    int32_t group_share_session_timeout_ms;      /* group.share.session.timeout.ms */
    int32_t group_share_heartbeat_interval_ms;   /* group.share.heartbeat.interval.ms */
    int32_t group_share_max_size;                /* group.share.max.size */
    int32_t group_streams_session_timeout_ms;    /* group.streams.session.timeout.ms */
    int32_t group_streams_heartbeat_interval_ms; /* group.streams.heartbeat.interval.ms */
    int32_t group_streams_max_size;              /* group.streams.max.size */
    int32_t group_streams_num_standby_replicas;  /* group.streams.num.standby.replicas */
    int32_t group_share_record_lock_duration_ms; /* group.share.record.lock.duration.ms */
    int32_t group_share_delivery_count_limit;    /* group.share.delivery.count.limit */
    /* group.share.{min,max}.{record.lock.duration.ms,delivery.count.limit}:
     * the bounds of the broker's value and of the share.* group configs
     * (Kafka's defaults 15000..60000 and 2..10; record locks 100..4000) */
    int32_t group_share_min_record_lock_duration_ms, group_share_max_record_lock_duration_ms;
    int32_t group_share_min_delivery_count_limit, group_share_max_delivery_count_limit;
    /* group.share.{min,max}.partition.max.record.locks (100..2000 / 2000..10000) */
    int32_t group_share_min_partition_max_record_locks, group_share_max_partition_max_record_locks;
    int32_t group_share_partition_max_record_locks; /* group.share.partition.max.record.locks */
    int32_t group_share_max_share_sessions;         /* group.share.max.share.sessions */
    char *group_consumer_assignors;        /* group.consumer.assignors, default "uniform,range" */
    char *group_consumer_migration_policy; /* group.consumer.migration.policy: "disabled" */
    int32_t offset_metadata_max_bytes;     /* offset.metadata.max.bytes, default 4096 */
    int64_t offsets_retention_minutes;     /* offsets.retention.minutes, default 10080 (7 days) */
    int64_t offsets_retention_check_interval_ms; /* offsets.retention.check.interval.ms, default
                                                    600000 */
    /* transactions */
    int32_t transaction_max_timeout_ms;      /* transaction.max.timeout.ms, default 900000 */
    int64_t transactional_id_expiration_ms;  /* transactional.id.expiration.ms, default 604800000 */
    int64_t transaction_cleanup_interval_ms; /* transaction.abort.timed.out.transaction.cleanup.
                                                interval.ms, default 10000 */
    /* authorization */
    char *authorizer_class_name;         /* authorizer.class.name; NULL: authorization off */
    char *super_users;                   /* super.users: ';'-separated principals */
    bool allow_everyone_if_no_acl_found; /* allow.everyone.if.no.acl.found, default false */
    /* diagnostics */
    char *log_level; /* diag.level: debug|info|warn|error, default info */
    /* SASL */
    char *sasl_enabled_mechanisms;     /* sasl.enabled.mechanisms (security/sasl.h parses it) */
    int64_t connections_max_reauth_ms; /* connections.max.reauth.ms, default 0 (never) */
    /* TLS and authentication of the HTTP listeners (issue 30): [0] http.*,
     * [1] schema.registry.* */
    struct ls_http_sec_cfg {
        char *keystore_location;          /* <p>.ssl.keystore.location */
        char *keystore_certificate_chain; /* <p>.ssl.keystore.certificate.chain */
        char *keystore_key;               /* <p>.ssl.keystore.key (secret) */
        char *truststore_location;        /* <p>.ssl.truststore.location */
        char *client_auth;                /* <p>.ssl.client.auth: none|requested|required */
        char *authentication;             /* <p>.authentication: none|basic */
    } http_sec[2];
    /* SASL/OAUTHBEARER (security/oauth.h) */
    char *oauth_jwks_url;          /* sasl.oauthbearer.jwks.endpoint.url */
    int64_t oauth_jwks_refresh_ms; /* sasl.oauthbearer.jwks.endpoint.refresh.ms, default 3600000 */
    char *oauth_expected_audience; /* sasl.oauthbearer.expected.audience: comma list */
    char *oauth_expected_issuer;   /* sasl.oauthbearer.expected.issuer */
    int64_t oauth_clock_skew_s;    /* sasl.oauthbearer.clock.skew.seconds, default 30 */
    char *oauth_scope_claim;       /* sasl.oauthbearer.scope.claim.name, default scope */
    char *oauth_sub_claim;         /* sasl.oauthbearer.sub.claim.name, default sub */
    /* external table catalogs: catalog.<name>.* (base/catalog_conf.h) */
    ls_catalog_confs_t catalogs;
} ls_config_t;

/* Fills the defaults of schema's keys (the broker: &ls_broker_settings,
 * server/settings.h); the other calls read the same table. */
void ls_config_init(ls_config_t *c, const ls_config_schema_t *schema);
void ls_config_free(ls_config_t *c);
/* Sets one key from text. On error returns LS_EINVAL and writes "key: reason"
 * to err. */
ls_status ls_config_set(ls_config_t *c, const char *key, const char *value, char *err,
                        size_t errlen);
/* Reads a properties file (key=value or key: value, '#'/'!' comments,
 * backslash line continuation). Unknown keys are errors naming file:line
 * (LS_EINVAL); a file that cannot be read is LS_EIO. */
ls_status ls_config_load_file(ls_config_t *c, const char *path, char *err, size_t errlen);
/* Applies LAKESTREAM_* variables from environ. */
ls_status ls_config_load_env(ls_config_t *c, char *err, size_t errlen);
/* Applies --key=value / --key value flags; argv[0..argc) holds only flags.
 * "--config FILE" is handled by the caller before this. */
ls_status ls_config_load_args(ls_config_t *c, int argc, char **argv, char *err, size_t errlen);
/* Resolves defaults that depend on other keys (store URLs under data.dir). */
ls_status ls_config_finish(ls_config_t *c, char *err, size_t errlen);
/* Writes every key with its default, type, bounds, env name and help to
 * stdout (used by --help). The output is a valid properties file. */
void ls_config_print_help(const ls_config_schema_t *schema);
/* Whether name (or its alias) is a setting of c's table. */
bool ls_config_key_known(const ls_config_t *c, const char *name);
/* The whole startup sequence on an initialized config: the properties file
 * named by "--config FILE" / "--config=FILE" in argv, else by the
 * LAKESTREAM_CONFIG variable (the one LAKESTREAM_* variable that is not a
 * key); then LAKESTREAM_* variables; then the remaining --key flags; then
 * ls_config_finish. argv[0..argc) holds only flags. */
ls_status ls_config_load(ls_config_t *c, int argc, char **argv, char *err, size_t errlen);
/* A size as the config reads one: digits, then nothing, b, or a k/m/g/t or
 * KiB/MiB/GiB/TiB suffix (any case, powers of 1024). 0, or -1 when it is not
 * one, -2 past int64. */
int ls_config_parse_size(const char *s, int64_t *out);
/* The schemes of http.authentication / schema.registry.authentication (a
 * comma list) in *schemes: LS_HTTP_AUTH_* bits, 0 for "none" or unset. LS_EINVAL with the
 * offending word in bad (bcap bytes) for anything else. */
enum { LS_HTTP_AUTH_BASIC = 1, LS_HTTP_AUTH_BEARER = 2 };
ls_status ls_config_http_auth(const char *s, unsigned *schemes, char *bad, size_t bcap);

#endif
