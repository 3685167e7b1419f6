/* Broker configuration.
 *
 * Every key is declared once, in cfg_keys[] below: name, type, the struct
 * field it fills, default (as text), bounds and help. Everything else is
 * derived from that row — defaults are applied by parsing the default text
 * with the same code as user input (so a default can never be invalid),
 * environment names are the key upper-cased with dots turned to underscores,
 * flags are "--" + key, and --help prints the table.
 *
 * Sources are applied in order file, environment, flags; a later source
 * overrides an earlier one because each simply calls ls_config_set() again.
 * ls_config_finish() runs once after all sources to fill defaults that depend
 * on other keys (store URLs under data.dir, advertised address from the
 * listener) and to check limits that involve two keys.
 *
 * Ownership: every char * field is heap-owned by the config and freed by
 * ls_config_free(); setting a key frees the previous value. Not thread-safe;
 * configuration is loaded on the main thread before anything starts. */
#include "base/config.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/check.h"
#include "base/diag.h"

extern char **environ;

#define KiB ((int64_t)1 << 10)
#define MiB ((int64_t)1 << 20)
#define GiB ((int64_t)1 << 30)
#define TiB ((int64_t)1 << 40)
#define DAY_MS ((int64_t)86400000)
#define STR_(x) #x
#define STR(x) STR_(x) /* a macro's value as a string literal */

#define CONFIG_FILE_MAX (1 << 20) /* a properties file larger than this is a mistake */
#define ENV_PREFIX "LAKESTREAM_"
#define ENV_CONFIG_FILE "LAKESTREAM_CONFIG"

typedef enum cfg_type {
    CT_STRING,   /* non-empty text; empty resets optional keys (default NULL) */
    CT_URL,      /* scheme://rest */
    CT_INT,      /* decimal integer within [min, max] */
    CT_SIZE,     /* byte count with optional binary suffix */
    CT_BOOL,     /* true/false, yes/no, on/off, 1/0 */
    CT_PORT,     /* TCP port within [min, max] */
    CT_LISTENER, /* [NAME://]host:port[,...], fills a host and a port field */
    CT_LEVEL,    /* debug|info|warn|error */
} cfg_type;

typedef struct cfg_key {
    const char *name;
    const char *alias;   /* another accepted spelling (Kafka KRaft name), or NULL */
    const char *section; /* printed by --help before the first key of a group */
    cfg_type type;
    size_t off, size;    /* the field (host field for listeners) */
    size_t port_off;     /* listeners: the port field */
    bool empty_disables; /* listeners: an empty value turns the feature off (host NULL) */
    bool multi;          /* listeners: a Kafka list NAME://host:port,... */
    bool secret;         /* never a command-line flag; in a config file only if 0600 */
    const char *def;     /* default as text; NULL means unset until ls_config_finish */
    int64_t min, max;
    const char *help;
} cfg_key_t;

#define FIELD(m) .off = offsetof(ls_config_t, m), .size = sizeof(((ls_config_t *)0)->m)

static const cfg_key_t cfg_keys[] = {
    {.name = "data.dir",
     .section = "paths and stores",
     .type = CT_STRING,
     FIELD(data_dir),
     .def = "./data",
     .help = "Directory for local state; the default object store and metadata database "
             "live under it."},
    {.name = "object.store.url",
     .type = CT_URL,
     FIELD(object_store_url),
     .help = "Where WAL and compacted objects are stored: file:///path or "
             "s3://bucket/prefix. Default file://<data.dir>/objects."},
    {.name = "metadata.url",
     .type = CT_URL,
     FIELD(metadata_url),
     .help = "Metadata store: sqlite:///path/meta.db or "
             "etcd://host:port[/prefix][?tls=true&cacert=&cert=&key=&user=&password-file=] or "
             "postgresql://user@host:port/db[?sslmode=&sslrootcert=&sslcert=&sslkey=&"
             "connect_timeout=&application_name=&password-file=] (docs/OPERATIONS.md). "
             "Default sqlite://<data.dir>/meta.db."},
    {.name = "object.store.fsync",
     .type = CT_BOOL,
     FIELD(object_store_fsync),
     .def = "true",
     .help = "fsync local objects before acknowledging producers. Turning it off loses "
             "acknowledged data on power failure."},

    {.name = "s3.endpoint",
     .section = "S3 object store (object.store.url=s3://bucket/prefix)",
     .type = CT_STRING,
     FIELD(s3_endpoint),
     .help = "S3 endpoint http(s)://host[:port]. Default $AWS_ENDPOINT_URL_S3, "
             "$AWS_ENDPOINT_URL, else AWS (https://s3.<region>.amazonaws.com)."},
    {.name = "s3.region",
     .type = CT_STRING,
     FIELD(s3_region),
     .help = "Signing region. Default $AWS_REGION, $AWS_DEFAULT_REGION, else us-east-1."},
    {.name = "s3.access.key",
     .type = CT_STRING,
     FIELD(s3_access_key),
     .help = "Access key id. Default $AWS_ACCESS_KEY_ID."},
    {.name = "s3.secret.key",
     .type = CT_STRING,
     FIELD(s3_secret_key),
     .secret = true,
     .help = "Secret access key (never logged). Default $AWS_SECRET_ACCESS_KEY."},
    {.name = "s3.session.token",
     .type = CT_STRING,
     FIELD(s3_session_token),
     .secret = true,
     .help = "Session token of temporary credentials. Default $AWS_SESSION_TOKEN."},
    {.name = "s3.path.style",
     .type = CT_STRING,
     FIELD(s3_path_style),
     .def = "auto",
     .help = "Path-style addressing (host/bucket/key): true, false (virtual-hosted "
             "bucket.host/key) or auto (path style for a custom endpoint or a dotted bucket)."},
    {.name = "s3.create.only",
     .type = CT_STRING,
     FIELD(s3_create_only),
     .def = "auto",
     .help = "How WAL objects are written create-only: true (If-None-Match: *, 412 = "
             "exists), false (HEAD check, not atomic) or auto (probe the server once)."},
    {.name = "s3.ca.file",
     .type = CT_STRING,
     FIELD(s3_ca_file),
     .help = "CA bundle for verifying the endpoint's TLS certificate. Default: system CAs."},
    {.name = "s3.tls.verify",
     .type = CT_BOOL,
     FIELD(s3_tls_verify),
     .def = "true",
     .help = "Verify the endpoint's TLS certificate and host name."},
    {.name = "s3.unsigned.payload",
     .type = CT_BOOL,
     FIELD(s3_unsigned_payload),
     .def = "false",
     .help = "Sign UNSIGNED-PAYLOAD instead of each body's SHA-256 (saves CPU; use with TLS)."},
    {.name = "s3.request.timeout.ms",
     .type = CT_INT,
     FIELD(s3_request_timeout_ms),
     .def = "30000",
     .min = 100,
     .max = 3600000,
     .help = "Timeout of one S3 request attempt (then it is retried)."},
    {.name = "s3.connect.timeout.ms",
     .type = CT_INT,
     FIELD(s3_connect_timeout_ms),
     .def = "5000",
     .min = 10,
     .max = 600000,
     .help = "Timeout of establishing a connection."},
    {.name = "s3.max.connections",
     .type = CT_INT,
     FIELD(s3_max_connections),
     .def = "32",
     .min = 1,
     .max = 1024,
     .help = "Concurrent S3 requests (pooled, kept-alive connections); callers beyond wait."},
    {.name = "s3.max.retries",
     .type = CT_INT,
     FIELD(s3_max_retries),
     .def = "5",
     .min = 0,
     .max = 100,
     .help = "Retries of a request after 5xx, throttling, timeouts or connection errors "
             "(never after other 4xx)."},
    {.name = "s3.retry.backoff.ms",
     .type = CT_INT,
     FIELD(s3_retry_backoff_ms),
     .def = "50",
     .min = 1,
     .max = 60000,
     .help = "First retry backoff; doubles per retry, with jitter."},
    {.name = "s3.retry.backoff.max.ms",
     .type = CT_INT,
     FIELD(s3_retry_backoff_max_ms),
     .def = "2000",
     .min = 1,
     .max = 600000,
     .help = "Largest retry backoff."},
    {.name = "s3.multipart.threshold",
     .type = CT_SIZE,
     FIELD(s3_multipart_threshold),
     .def = "32MiB",
     .min = 5 * MiB,
     .max = 5 * GiB,
     .help = "Objects larger than this are uploaded in parts (multipart upload)."},
    {.name = "s3.multipart.part.size",
     .type = CT_SIZE,
     FIELD(s3_multipart_part_size),
     .def = "8MiB",
     .min = 5 * MiB,
     .max = 5 * GiB,
     .help = "Part size of multipart uploads."},

    {.name = "listeners",
     .section = "network",
     .type = CT_LISTENER,
     FIELD(listen_host),
     .port_off = offsetof(ls_config_t, listen_port),
     .def = "PLAINTEXT://127.0.0.1:9092",
     .min = 0,
     .max = 65535,
     .multi = true,
     .help = "Kafka listeners: NAME://host:port,... (a bare host:port is PLAINTEXT). Each "
             "name's security protocol comes from listener.security.protocol.map. An empty "
             "host binds every interface; port 0 picks a free port."},
    {.name = "advertised.listeners",
     .type = CT_LISTENER,
     FIELD(advertised_host),
     .port_off = offsetof(ls_config_t, advertised_port),
     .min = 1,
     .max = 65535,
     .multi = true,
     .help = "Addresses given to clients in Metadata responses, per listener name: "
             "NAME://host:port,... A client is told the addresses of the listener it "
             "connected through. Default: each listener's own (the host name when it binds "
             "every interface)."},
    {.name = "listener.security.protocol.map",
     .type = CT_STRING,
     FIELD(listener_protocol_map),
     .help = "Security protocol of each listener name: NAME:PROTOCOL,... with PLAINTEXT, "
             "SSL, SASL_PLAINTEXT or SASL_SSL. Default (Kafka's): PLAINTEXT:PLAINTEXT,SSL:SSL,"
             "SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL."},
    {.name = "advertised.host",
     .type = CT_STRING,
     FIELD(advertised_host),
     .help = "Host part of the first listener's advertised address alone (shares its "
             "value with advertised.listeners; whichever is set later wins)."},
    {.name = "advertised.port",
     .type = CT_PORT,
     FIELD(advertised_port),
     .min = 1,
     .max = 65535,
     .help = "Port part of the first listener's advertised address alone (shares its "
             "value with advertised.listeners; whichever is set later wins)."},
    {.name = "broker.id",
     .alias = "node.id",
     .type = CT_INT,
     FIELD(broker_id),
     .def = "0",
     .min = 0,
     .max = INT32_MAX,
     .help = "This broker's id, unique in the cluster."},
    {.name = "cluster.id",
     .type = CT_STRING,
     FIELD(cluster_id),
     .help = "Cluster id. Default: generated once and stored in the metadata store."},
    {.name = "broker.rack",
     .type = CT_STRING,
     FIELD(broker_rack),
     .help = "Zone (rack) of this broker. Clients that put \"ls_az=<zone>\" in client.id "
             "are steered to brokers of their zone."},
    {.name = "broker.session.timeout.ms",
     .type = CT_INT,
     FIELD(broker_session_timeout_ms),
     .def = "9000",
     .min = 1000,
     .max = 600000,
     .help = "A broker that stops renewing its registration for this long is dropped from "
             "the cluster (its partitions and groups move to the others)."},
    {.name = "http.listen",
     .type = CT_LISTENER,
     FIELD(http_host),
     .port_off = offsetof(ls_config_t, http_port),
     .def = "127.0.0.1:8181",
     .min = 0,
     .max = 65535,
     .empty_disables = true,
     .help = "Address of the HTTP server (Iceberg REST catalog at /v1, /health): host:port; "
             "port 0 picks a free port; empty disables HTTP."},
    {.name = "schema.registry.listen",
     .type = CT_LISTENER,
     FIELD(registry_host),
     .port_off = offsetof(ls_config_t, registry_port),
     .def = "127.0.0.1:8081",
     .min = 0,
     .max = 65535,
     .empty_disables = true,
     .help = "Address of the built-in schema registry (the Confluent Schema Registry REST "
             "API): host:port; port 0 picks a free port; empty disables it."},
    {.name = "http.header.timeout.ms",
     .type = CT_INT,
     FIELD(http_header_timeout_ms),
     .def = "10000",
     .min = 100,
     .max = INT64_MAX,
     .help = "An HTTP connection (catalog, schema registry) must send a request's line and "
             "headers within this long of its connection or of its previous response; else "
             "it is closed."},
    {.name = "http.body.timeout.ms",
     .type = CT_INT,
     FIELD(http_body_timeout_ms),
     .def = "30000",
     .min = 100,
     .max = INT64_MAX,
     .help = "An HTTP request's body must arrive whole within this long of its headers; "
             "else the connection is closed."},
    {.name = "http.max.connections.per.ip",
     .type = CT_INT,
     FIELD(http_max_connections_per_ip),
     .def = "16",
     .min = 1,
     .max = 1000000,
     .help = "HTTP connections from one IP address, per HTTP listener; a new one beyond it "
             "is closed at once."},

    {.name = "http.ssl.keystore.location",
     .section = "TLS and authentication of the HTTP listeners",
     .type = CT_STRING,
     FIELD(http_sec[0].keystore_location),
     .help = "PEM file with the private key and certificate chain of the HTTP listener "
             "(http.listen): set, it serves "
             "HTTPS only. Read at start (not on SIGHUP)."},
    {.name = "http.ssl.keystore.certificate.chain",
     .type = CT_STRING,
     FIELD(http_sec[0].keystore_certificate_chain),
     .help = "the HTTP listener (http.listen): the certificate chain as inline PEM (instead of "
             "http.ssl.keystore.location; with http.ssl.keystore.key)."},
    {.name = "http.ssl.keystore.key",
     .type = CT_STRING,
     FIELD(http_sec[0].keystore_key),
     .secret = true,
     .help = "the HTTP listener (http.listen): the unencrypted private key as inline PEM."},
    {.name = "http.ssl.truststore.location",
     .type = CT_STRING,
     FIELD(http_sec[0].truststore_location),
     .help = "the HTTP listener (http.listen): PEM file of the CA certificates client certificates "
             "are verified "
             "against (http.ssl.client.auth)."},
    {.name = "http.ssl.client.auth",
     .type = CT_STRING,
     FIELD(http_sec[0].client_auth),
     .def = "none",
     .help = "the HTTP listener (http.listen): client certificates: required (a request without a "
             "trusted one is "
             "refused), requested (refused when one is sent but not trusted) or none."},
    {.name = "http.authentication",
     .type = CT_STRING,
     FIELD(http_sec[0].authentication),
     .def = "none",
     .help = "the HTTP listener (http.listen): none, basic (HTTP Basic checked against the "
             "SCRAM users), bearer (a JWT checked against sasl.oauthbearer.jwks.endpoint.url) "
             "or basic,bearer; /health stays open."},
    {.name = "schema.registry.ssl.keystore.location",
     .type = CT_STRING,
     FIELD(http_sec[1].keystore_location),
     .help = "PEM file with the private key and certificate chain of the schema registry listener: "
             "set, it serves "
             "HTTPS only. Read at start (not on SIGHUP)."},
    {.name = "schema.registry.ssl.keystore.certificate.chain",
     .type = CT_STRING,
     FIELD(http_sec[1].keystore_certificate_chain),
     .help = "the schema registry listener: the certificate chain as inline PEM (instead of "
             "schema.registry.ssl.keystore.location; with schema.registry.ssl.keystore.key)."},
    {.name = "schema.registry.ssl.keystore.key",
     .type = CT_STRING,
     FIELD(http_sec[1].keystore_key),
     .secret = true,
     .help = "the schema registry listener: the unencrypted private key as inline PEM."},
    {.name = "schema.registry.ssl.truststore.location",
     .type = CT_STRING,
     FIELD(http_sec[1].truststore_location),
     .help = "the schema registry listener: PEM file of the CA certificates client certificates "
             "are verified "
             "against (schema.registry.ssl.client.auth)."},
    {.name = "schema.registry.ssl.client.auth",
     .type = CT_STRING,
     FIELD(http_sec[1].client_auth),
     .def = "none",
     .help = "the schema registry listener: client certificates: required (a request without a "
             "trusted one is "
             "refused), requested (refused when one is sent but not trusted) or none."},
    {.name = "schema.registry.authentication",
     .type = CT_STRING,
     FIELD(http_sec[1].authentication),
     .def = "none",
     .help = "the schema registry listener: none, basic (HTTP Basic checked against the SCRAM "
             "users), bearer (a JWT checked against sasl.oauthbearer.jwks.endpoint.url) or "
             "basic,bearer."},

    {.name = "ssl.keystore.type",
     .section = "TLS (SSL and SASL_SSL listeners; Kafka's ssl.* settings)",
     .type = CT_STRING,
     FIELD(ssl_keystore_type),
     .def = "PEM",
     .help = "Format of the keystore: PEM (JKS and PKCS12 are refused: convert them)."},
    {.name = "ssl.keystore.location",
     .type = CT_STRING,
     FIELD(ssl_keystore_location),
     .help = "PEM file with the private key and the certificate chain (leaf first). Read "
             "again on SIGHUP."},
    {.name = "ssl.keystore.certificate.chain",
     .type = CT_STRING,
     FIELD(ssl_keystore_certificate_chain),
     .help = "The certificate chain as inline PEM text (instead of ssl.keystore.location)."},
    {.name = "ssl.keystore.key",
     .type = CT_STRING,
     FIELD(ssl_keystore_key),
     .secret = true,
     .help = "The private key as inline PEM text (PKCS#8; with ssl.keystore.certificate.chain)."},
    {.name = "ssl.key.password",
     .type = CT_STRING,
     FIELD(ssl_key_password),
     .secret = true,
     .help = "Password of an encrypted private key."},
    {.name = "ssl.truststore.type",
     .type = CT_STRING,
     FIELD(ssl_truststore_type),
     .def = "PEM",
     .help = "Format of the truststore: PEM."},
    {.name = "ssl.truststore.location",
     .type = CT_STRING,
     FIELD(ssl_truststore_location),
     .help = "PEM file of the CA certificates client certificates are verified against."},
    {.name = "ssl.truststore.certificates",
     .type = CT_STRING,
     FIELD(ssl_truststore_certificates),
     .help = "The trusted CA certificates as inline PEM text."},
    {.name = "ssl.enabled.protocols",
     .type = CT_STRING,
     FIELD(ssl_enabled_protocols),
     .def = "TLSv1.2,TLSv1.3",
     .help = "TLS versions accepted: TLSv1.2 and/or TLSv1.3."},
    {.name = "ssl.protocol",
     .type = CT_STRING,
     FIELD(ssl_protocol),
     .def = "TLSv1.3",
     .help = "The TLS context's protocol: the highest version negotiated (TLSv1.3, TLSv1.2 "
             "or TLS)."},
    {.name = "ssl.cipher.suites",
     .type = CT_STRING,
     FIELD(ssl_cipher_suites),
     .help = "Cipher suites allowed, by IANA (Kafka's) or OpenSSL names, comma-separated. "
             "Default: OpenSSL's."},
    {.name = "ssl.client.auth",
     .type = CT_STRING,
     FIELD(ssl_client_auth),
     .def = "none",
     .help = "Client certificates: required, requested (verified when sent) or none. The "
             "principal is the certificate's subject (ssl.principal.mapping.rules)."},
    {.name = "ssl.principal.mapping.rules",
     .type = CT_STRING,
     FIELD(ssl_principal_mapping_rules),
     .def = "DEFAULT",
     .help = "Rules mapping a client certificate's subject (RFC 2253) to a user name: "
             "RULE:pattern/replacement/[LU],...,DEFAULT, as Kafka's."},

    {.name = "wal.flush.max.bytes",
     .section = "WAL writer",
     .type = CT_SIZE,
     FIELD(wal_flush_max_bytes),
     .def = "4MiB",
     .min = 1,
     .max = 5 * GiB,
     .help = "Flush the open WAL object when it holds this many bytes."},
    {.name = "wal.flush.linger.ms",
     .type = CT_INT,
     FIELD(wal_flush_linger_ms),
     .def = "250",
     .min = 0,
     .max = 60000,
     .help = "Upper bound on how long a produced batch waits for its WAL flush; an idle "
             "broker flushes sooner."},
    {.name = "wal.flush.min.interval.ms",
     .type = CT_INT,
     FIELD(wal_flush_min_interval_ms),
     .def = "-1",
     .min = -1,
     .max = 60000,
     .help = "Minimum time between WAL flushes: fewer, larger WAL objects (fewer PUTs, and "
             "fewer GETs and DELETEs after them) for some produce latency. -1: by store, "
             "0 on a local directory, " STR(
                 LS_WAL_FLUSH_MIN_INTERVAL_S3_MS) " on s3:// "
                                                  "(docs/OBJECT_STORES.md says why); an explicit "
                                                  "value always wins."},
    {.name = "wal.max.inflight.flushes",
     .type = CT_INT,
     FIELD(wal_max_inflight_flushes),
     .def = "4",
     .min = 1,
     .max = 1024,
     .help = "WAL objects being uploaded at once; commits stay in order per log."},
    {.name = "wal.buffer.max.bytes",
     .type = CT_SIZE,
     FIELD(wal_buffer_max_bytes),
     .def = "64MiB",
     .min = 1,
     .max = 1 * TiB,
     .help = "Produce data buffered or in flight before the broker stops reading from "
             "producers (backpressure)."},
    {.name = "wal.gc.grace.ms",
     .type = CT_INT,
     FIELD(wal_gc_grace_ms),
     .def = "60000",
     .min = 0,
     .max = 30 * DAY_MS,
     .help = "Age after which a WAL object that no index entry references is deleted."},

    {.name = "compaction.enabled",
     .section = "compaction",
     .type = CT_BOOL,
     FIELD(compaction_enabled),
     .def = "true",
     .help = "Rewrite WAL entries older than compaction.min.age.ms into per-log compacted "
             "objects, so WAL objects can be deleted."},
    {.name = "compaction.interval.ms",
     .type = CT_INT,
     FIELD(compaction_interval_ms),
     .def = "10000",
     .min = 10,
     .max = DAY_MS,
     .help = "How often compaction looks for work."},
    {.name = "compaction.min.age.ms",
     .type = CT_INT,
     FIELD(compaction_min_age_ms),
     .def = "60000",
     .min = 0,
     .max = 30 * DAY_MS,
     .help = "Hot window: WAL entries younger than this stay in WAL objects."},
    {.name = "compaction.max.entries",
     .type = CT_INT,
     FIELD(compaction_max_entries),
     .def = "31",
     .min = 1,
     .max = 31,
     .help = "WAL index entries merged into one compacted object (bounded so the index "
             "swap fits one metadata transaction)."},
    {.name = "compaction.max.bytes",
     .type = CT_SIZE,
     FIELD(compaction_max_bytes),
     .def = "8MiB",
     .min = 1,
     .max = 1 * GiB,
     .help = "Target size of a compacted object. A cold read fetches its footer and the "
             "read.ahead.bytes block it needs, never the whole object."},
    {.name = "compaction.keymap.max.bytes",
     .type = CT_SIZE,
     FIELD(compaction_keymap_max_bytes),
     .def = "16MiB",
     .min = 4096,
     .max = 16 * GiB,
     .help = "Memory bound of the key map a key compaction (cleanup.policy=compact) builds "
             "per log and pass: 24 bytes per distinct key (16MiB: about 630000 keys); a log "
             "with more keys in its dirty part is compacted over several passes."},
    {.name = "compaction.lease.ttl.ms",
     .type = CT_INT,
     FIELD(compaction_lease_ttl_ms),
     .def = "30000",
     .min = 1000,
     .max = DAY_MS,
     .help = "Lease through which a broker owns a log while compacting or trimming it; a "
             "crashed broker's logs are free again after this long."},

    {.name = "lakestream.table.enabled",
     .section = "table materialization (cluster defaults "
                "of the lakestream.table.* topic policy; unset = built-in default)",
     .type = CT_STRING,
     FIELD(table_enabled),
     .help = "true|false: materialize topics as Iceberg tables "
             "(built-in default false)."},
    {.name = "lakestream.table.catalog",
     .type = CT_STRING,
     FIELD(table_catalog),
     .help = "Table catalog: builtin, the broker's own (external catalogs are refused)."},
    {.name = "lakestream.table.name",
     .type = CT_STRING,
     FIELD(table_name),
     .help = "Table name template with {topic} and {namespace} (built-in default {topic})."},
    {.name = "lakestream.table.partition",
     .type = CT_STRING,
     FIELD(table_partition),
     .help = "Partition spec: none or a list of Iceberg transforms of the Kafka columns "
             "(identity, bucket(N, c), truncate(W, c), year/month/day/hour(timestamp)) "
             "(built-in default day)."},
    {.name = "lakestream.table.target.file.bytes",
     .type = CT_STRING,
     FIELD(table_target_file_bytes),
     .help = "Data file size target, 1024..1073741824 (built-in default 134217728)."},
    {.name = "lakestream.table.compression",
     .type = CT_STRING,
     FIELD(table_compression),
     .help = "Parquet codec: zstd|snappy|gzip|none (built-in default zstd)."},
    {.name = "lakestream.table.commit.interval.ms",
     .type = CT_STRING,
     FIELD(table_commit_interval_ms),
     .help = "Table freshness: 1000..86400000 ms (built-in default 10000)."},
    {.name = "lakestream.table.start.position",
     .type = CT_STRING,
     FIELD(table_start_position),
     .help = "earliest|latest: where a newly enabled table starts (built-in default earliest)."},
    {.name = "lakestream.table.snapshot.retention.ms",
     .type = CT_STRING,
     FIELD(table_snapshot_retention_ms),
     .help = "Snapshots older than this expire at the next table commit: 0 (never) or "
             "1000..31536000000 ms (built-in default 900000)."},
    {.name = "lakestream.table.snapshot.retention.min",
     .type = CT_STRING,
     FIELD(table_snapshot_retention_min),
     .help = "The newest this many snapshots never expire: 1..100000 (built-in default 1)."},
    {.name = "lakestream.table.file.delete.delay.ms",
     .type = CT_STRING,
     FIELD(table_file_delete_delay_ms),
     .help = "Unreferenced table files (expired snapshots', old metadata) stay readable this "
             "long before they are deleted: 0..86400000 ms (built-in default 300000)."},
    {.name = "lakestream.table.rewrite.min.files",
     .type = CT_STRING,
     FIELD(table_rewrite_min_files),
     .help = "Small data files of a table partition are rewritten into one once this many line "
             "up: 0 (never) or 4..1000 (built-in default 16)."},
    {.name = "lakestream.table.changelog",
     .type = CT_STRING,
     FIELD(table_changelog),
     .help = "true|false: also keep the append-only table <name>__changelog of every record "
             "(built-in default false)."},
    {.name = "table.orphan.grace.ms",
     .type = CT_INT,
     FIELD(table_orphan_grace_ms),
     .def = "3600000",
     .min = 1000,
     .max = 30 * DAY_MS,
     .help = "Files under a table's location that no snapshot references (failed commits, "
             "engines' refused writes) are deleted once older than this; each table is "
             "swept at most once per this period, with the retention checks."},
    {.name = "table.cold.reads",
     .type = CT_STRING,
     FIELD(table_cold_reads),
     .def = "table",
     .help = "Where the compaction pass leaves the data of a raw append-mode table's topic "
             "(value.format=raw, key.format=raw, write.mode=append, no transactional "
             "batches in the range): table (only in the table's Parquet files; Kafka reads "
             "of it are rebuilt from the rows: one copy fewer) or compacted-object (a "
             "compacted object as well, as for every other topic)."},
    {.name = "table.cold.cache.max.bytes",
     .type = CT_SIZE,
     FIELD(table_cold_cache_max_bytes),
     .def = "256MiB",
     .min = 0,
     .max = 1 * TiB,
     .help = "Cold reads served from a table's Parquet files keep the files they open "
             "open between reads (footer parsed, row groups fetched, where the last read "
             "stopped), up to this many bytes (fetched from S3; a local file mapped counts "
             "whole), least recently used closed first; a catching-up consumer's next "
             "block then costs no store request. 0: every read opens its files again."},

    {.name = "read.cache.max.bytes",
     .section = "read path",
     .type = CT_SIZE,
     FIELD(read_cache_max_bytes),
     .def = "256MiB",
     .min = 0,
     .max = 1 * TiB,
     .help = "Bytes of object data cached for fetches (0 disables the cache)."},
    {.name = "read.ahead.bytes",
     .section = "read path",
     .type = CT_SIZE,
     FIELD(read_ahead_bytes),
     .def = "4MiB",
     .min = 4096,
     .max = 1 * GiB,
     .help = "A cold read inside a compacted object fetches the block of whole batches "
             "(about this many bytes) holding the offset: the rest is read-ahead for the "
             "consumer's next fetches. Smaller: less read per random fetch; larger: fewer "
             "store requests per catch-up. Keep read.cache.max.bytes above partitions "
             "read at once x this."},

    {.name = "message.max.bytes",
     .section = "Kafka protocol",
     .type = CT_SIZE,
     FIELD(message_max_bytes),
     .def = "1048588",
     .min = 1,
     .max = INT32_MAX,
     .help = "Largest record batch a producer may send (as Kafka's)."},
    {.name = "socket.request.max.bytes",
     .type = CT_SIZE,
     FIELD(socket_request_max_bytes),
     .def = "100MiB",
     .min = 1,
     .max = INT32_MAX,
     .help = "Largest request frame accepted; bigger frames close the connection."},
    {.name = "queued.max.request.bytes",
     .type = CT_SIZE,
     FIELD(queued_max_request_bytes),
     .def = "256MiB",
     .min = 1024,
     .max = INT64_MAX,
     .help = "Bytes of request frames being received, all connections together; beyond it "
             "connections wait (are not read) until frames complete. One frame is always "
             "allowed, so socket.request.max.bytes above it still works."},
    {.name = "max.connections",
     .type = CT_INT,
     FIELD(max_connections),
     .def = "0",
     .min = 0,
     .max = 1000000,
     .help = "Kafka connections at once; beyond it new ones wait in the listen backlog. "
             "0 or more than the descriptor limit allows (raised to its hard maximum at start, "
             "less a quarter, at most 256, kept for stores and HTTP): that budget."},
    {.name = "max.connections.per.ip",
     .type = CT_INT,
     FIELD(max_connections_per_ip),
     .def = "0",
     .min = 0,
     .max = 1000000,
     .help = "Kafka connections from one IP address; a new one beyond it is closed at once. "
             "0: half of the max.connections in force, so one address never takes them all."},
    {.name = "connections.max.idle.ms",
     .type = CT_INT,
     FIELD(connections_max_idle_ms),
     .def = "600000",
     .min = 1000,
     .max = INT64_MAX,
     .help = "A Kafka connection with no request in flight and no traffic for this long is "
             "closed (clients reconnect)."},
    {.name = "request.receive.timeout.ms",
     .type = CT_INT,
     FIELD(request_receive_timeout_ms),
     .def = "30000",
     .min = 100,
     .max = INT64_MAX,
     .help = "A Kafka request frame must arrive whole within this long of its first byte "
             "(time spent waiting for queued.max.request.bytes not counted); else its "
             "connection is closed, so a client dripping bytes holds nothing for long."},
    {.name = "connections.first.request.timeout.ms",
     .type = CT_INT,
     FIELD(connections_first_request_ms),
     .def = "10000",
     .min = 100,
     .max = INT64_MAX,
     .help = "A new Kafka connection that has not sent a complete request within this long "
             "is closed (clients send ApiVersions at once)."},
    {.name = "auto.create.topics.enable",
     .type = CT_BOOL,
     FIELD(auto_create_topics_enable),
     .def = "true",
     .help = "Create a topic when a client asks for metadata of an unknown one."},
    {.name = "num.partitions",
     .type = CT_INT,
     FIELD(num_partitions),
     .def = "1",
     .min = 1,
     .max = 1000000,
     .help = "Partitions of an auto-created topic."},
    {.name = "max.partitions.per.topic",
     .type = CT_INT,
     FIELD(max_partitions_per_topic),
     .def = "10000",
     .min = 1,
     .max = 1048576,
     .help = "Most partitions one topic may have (CreateTopics, CreatePartitions, auto-create "
             "beyond it: INVALID_PARTITIONS)."},
    {.name = "max.partitions",
     .type = CT_INT,
     FIELD(max_partitions),
     .def = "50000",
     .min = 1,
     .max = INT64_MAX,
     .help = "Most partitions of all topics of the cluster together (beyond it: "
             "POLICY_VIOLATION); bounds the all-topics Metadata response (~300 B a partition)."},
    {.name = "log.retention.ms",
     .type = CT_INT,
     FIELD(log_retention_ms),
     .def = "604800000",
     .min = -1,
     .max = INT64_MAX,
     .help = "Default retention of new topics in ms (-1: keep forever)."},
    {.name = "log.retention.bytes",
     .type = CT_INT,
     FIELD(log_retention_bytes),
     .def = "-1",
     .min = -1,
     .max = INT64_MAX,
     .help = "Default most bytes kept per partition (-1: no limit); topic retention.bytes "
             "overrides it."},
    {.name = "log.message.timestamp.type",
     .type = CT_STRING,
     FIELD(log_message_timestamp_type),
     .def = "CreateTime",
     .help = "Default message.timestamp.type of topics: CreateTime (the producer's) or "
             "LogAppendTime (the broker's clock at append)."},
    {.name = "log.message.timestamp.before.max.ms",
     .type = CT_INT,
     FIELD(log_message_timestamp_before_max_ms),
     .def = "9223372036854775807",
     .min = 0,
     .max = INT64_MAX,
     .help = "Default message.timestamp.before.max.ms: how far behind the broker's clock a "
             "CreateTime record may be stamped (beyond it: INVALID_TIMESTAMP)."},
    {.name = "log.message.timestamp.after.max.ms",
     .type = CT_INT,
     FIELD(log_message_timestamp_after_max_ms),
     .def = "3600000",
     .min = 0,
     .max = INT64_MAX,
     .help = "Default message.timestamp.after.max.ms: how far ahead of the broker's clock a "
             "CreateTime record may be stamped (Kafka 4's default, one hour)."},
    {.name = "log.retention.check.interval.ms",
     .type = CT_INT,
     FIELD(log_retention_check_interval_ms),
     .def = "300000",
     .min = 1,
     .max = INT32_MAX,
     .help = "How often partitions are checked against retention.ms / retention.bytes."},

    /* client quotas */
    {.name = "quota.window.num",
     .type = CT_INT,
     FIELD(quota_window_num),
     .def = "11",
     .min = 1,
     .max = 3600,
     .help = "Samples of a client quota's rate window (as Kafka's): the rate is measured over "
             "this many windows of quota.window.size.seconds."},
    {.name = "quota.window.size.seconds",
     .type = CT_INT,
     FIELD(quota_window_size_seconds),
     .def = "1",
     .min = 1,
     .max = 3600,
     .help = "Length of one sample of a client quota's rate window, in seconds."},
    {.name = "group.min.session.timeout.ms",
     .section = "consumer groups",
     .type = CT_INT,
     FIELD(group_min_session_timeout_ms),
     .def = "6000",
     .min = 1,
     .max = INT32_MAX,
     .help = "Smallest session.timeout.ms a consumer may ask for (JoinGroup)."},
    {.name = "group.max.session.timeout.ms",
     .type = CT_INT,
     FIELD(group_max_session_timeout_ms),
     .def = "1800000",
     .min = 1,
     .max = INT32_MAX,
     .help = "Largest session.timeout.ms a consumer may ask for (JoinGroup)."},
    {.name = "group.initial.rebalance.delay.ms",
     .type = CT_INT,
     FIELD(group_initial_rebalance_delay_ms),
     .def = "0",
     .min = 0,
     .max = INT32_MAX,
     .help = "How long the first rebalance of an empty group waits for more members "
             "(Kafka's default is 3000; 0 suits one-machine use)."},
    {.name = "group.max.size",
     .type = CT_INT,
     FIELD(group_max_size),
     .def = "2147483647",
     .min = 1,
     .max = INT32_MAX,
     .help = "Most members one consumer group may have."},
    {.name = "offset.metadata.max.bytes",
     .type = CT_INT,
     FIELD(offset_metadata_max_bytes),
     .def = "4096",
     .min = 0,
     .max = INT32_MAX,
     .help = "Largest metadata string stored with a committed offset."},
    {.name = "offsets.retention.minutes",
     .type = CT_INT,
     FIELD(offsets_retention_minutes),
     .def = "10080",
     .min = 1,
     .max = INT32_MAX,
     .help = "Committed offsets of a group that has been empty this long are deleted "
             "(offsets of standalone consumers: this long after their commit)."},
    {.name = "offsets.retention.check.interval.ms",
     .type = CT_INT,
     FIELD(offsets_retention_check_interval_ms),
     .def = "600000",
     .min = 1,
     .max = INT32_MAX,
     .help = "How often expired offsets, offsets of deleted topics and expired empty "
             "groups are removed."},

    {.name = "transaction.max.timeout.ms",
     .section = "transactions",
     .type = CT_INT,
     FIELD(transaction_max_timeout_ms),
     .def = "900000",
     .min = 1,
     .max = INT32_MAX,
     .help = "Largest transaction.timeout.ms a transactional producer may ask for "
             "(InitProducerId answers INVALID_TRANSACTION_TIMEOUT above it)."},
    {.name = "transactional.id.expiration.ms",
     .type = CT_INT,
     FIELD(transactional_id_expiration_ms),
     .def = "604800000",
     .min = 1,
     .max = INT64_MAX,
     .help = "A transactional id with no transaction and no request for this long is "
             "forgotten (its producer id too)."},
    {.name = "transaction.abort.timed.out.transaction.cleanup.interval.ms",
     .type = CT_INT,
     FIELD(transaction_cleanup_interval_ms),
     .def = "10000",
     .min = 1,
     .max = INT32_MAX,
     .help = "How often each broker visits the transactional ids it coordinates: aborts "
             "transactions past their timeout, finishes decisions another broker left, "
             "forgets expired ids."},

    {.name = "authorizer.class.name",
     .section = "authorization",
     .type = CT_STRING,
     FIELD(authorizer_class_name),
     .help = "Turns ACL authorization on: org.apache.kafka.metadata.authorizer.StandardAuthorizer "
             "(or kafka.security.authorizer.AclAuthorizer); the built-in authorizer serves both. "
             "Empty (default): off, every request is allowed."},
    {.name = "super.users",
     .type = CT_STRING,
     FIELD(super_users),
     .help = "Principals allowed everything whatever the ACLs, ';'-separated "
             "(User:admin;User:ops)."},
    {.name = "allow.everyone.if.no.acl.found",
     .type = CT_BOOL,
     FIELD(allow_everyone_if_no_acl_found),
     .def = "false",
     .help = "With the authorizer on, allow a request no ACL applies to (false: deny it)."},

    {.name = "diag.level",
     .section = "diagnostics",
     .type = CT_LEVEL,
     FIELD(log_level),
     .def = "info",
     .help = "Least severe diagnostic line printed: debug, info, warn or error."},

    {.name = "sasl.enabled.mechanisms",
     .section = "SASL (listeners with SASL_PLAINTEXT / SASL_SSL)",
     .type = CT_STRING,
     FIELD(sasl_enabled_mechanisms),
     .def = "SCRAM-SHA-256,SCRAM-SHA-512",
     .help = "Mechanisms SASL listeners offer: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, "
             "OAUTHBEARER (comma separated). PLAIN and SCRAM check the SCRAM users of the "
             "metadata store (`lakestream users`); PLAIN sends the password itself, so it is "
             "offered only when listed. OAUTHBEARER checks JWTs against a JWKS "
             "(sasl.oauthbearer.*). GSSAPI is refused."},
    {.name = "connections.max.reauth.ms",
     .type = CT_INT,
     FIELD(connections_max_reauth_ms),
     .def = "0",
     .min = 0,
     .max = INT64_MAX,
     .help = "SASL session lifetime (KIP-368): clients that support it re-authenticate within "
             "it; a connection that has not is closed at its next request. 0: sessions never "
             "expire."},

    {.name = "sasl.oauthbearer.jwks.endpoint.url",
     .section = "SASL/OAUTHBEARER (OAUTHBEARER in sasl.enabled.mechanisms)",
     .type = CT_STRING,
     FIELD(oauth_jwks_url),
     .help = "Where the identity provider's signing keys (a JWKS) are: file://, http:// or "
             "https://. Required with OAUTHBEARER; tokens must be JWTs signed with RS256, RS384, "
             "RS512, PS256, ES256 or ES384 by a key of this set."},
    {.name = "sasl.oauthbearer.jwks.endpoint.refresh.ms",
     .type = CT_INT,
     FIELD(oauth_jwks_refresh_ms),
     .def = "3600000",
     .min = 0,
     .max = INT64_MAX,
     .help = "How often the JWKS is fetched again (also, at most once a second, when a token "
             "names an unknown kid). 0: only at start and on an unknown kid."},
    {.name = "sasl.oauthbearer.expected.audience",
     .type = CT_STRING,
     FIELD(oauth_expected_audience),
     .help = "Comma-separated audiences; a token's aud must name one. Empty: aud is not "
             "checked."},
    {.name = "sasl.oauthbearer.expected.issuer",
     .type = CT_STRING,
     FIELD(oauth_expected_issuer),
     .help = "A token's iss must equal this. Empty: iss is not checked."},
    {.name = "sasl.oauthbearer.clock.skew.seconds",
     .type = CT_INT,
     FIELD(oauth_clock_skew_s),
     .def = "30",
     .min = 0,
     .max = 86400,
     .help = "Leeway for exp, nbf and iat between the broker's clock and the identity "
             "provider's."},
    {.name = "sasl.oauthbearer.scope.claim.name",
     .type = CT_STRING,
     FIELD(oauth_scope_claim),
     .def = "scope",
     .help = "Claim holding the token's scopes (a string or a list; any other type is "
             "refused)."},
    {.name = "sasl.oauthbearer.sub.claim.name",
     .type = CT_STRING,
     FIELD(oauth_sub_claim),
     .def = "sub",
     .help = "Claim naming the principal: a token authenticates as User:<its value>."},
};

/* Kafka settings refused by name: accepting them would leave an operator's
 * line silently unapplied. */
static const struct {
    const char *name, *why;
} refused_keys[] = {
    {"sasl.mechanism.inter.broker.protocol",
     "not applicable: brokers never connect to each other over Kafka (they share the metadata "
     "store), so there is no inter-broker SASL mechanism; remove the line"},
    /* a leading '*': any key ending with the rest (listener.name.<l>.oauthbearer...) */
    {"*oauthbearer.sasl.server.callback.handler.class",
     "not supported: OAUTHBEARER tokens are always checked by the built-in JWT validator "
     "against sasl.oauthbearer.jwks.endpoint.url (no unsecured or custom callback); remove the "
     "line"},
    {"*oauthbearer.sasl.jaas.config",
     "not supported: the broker needs no JAAS login for OAUTHBEARER (the built-in JWT validator "
     "uses the sasl.oauthbearer.* settings); remove the line"},
};

#define NKEYS (sizeof cfg_keys / sizeof cfg_keys[0])

static bool refused_match(const char *pat, const char *key)
{
    if (*pat != '*') return strcmp(key, pat) == 0;
    size_t pl = strlen(pat + 1), kl = strlen(key);
    return kl >= pl && strcmp(key + kl - pl, pat + 1) == 0;
}

_Static_assert(sizeof(int) == 4, "listen_port/advertised_port are stored as 32-bit ints");

/* ---- small helpers ------------------------------------------------------ */

static void errf(char *err, int errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void errf(char *err, int errlen, const char *fmt, ...)
{
    if (!err || errlen <= 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, (size_t)errlen, fmt, ap);
    va_end(ap);
}

static char **str_field(ls_config_t *c, size_t off) { return (char **)((char *)c + off); }

static void str_set(ls_config_t *c, size_t off, char *v)
{
    char **f = str_field(c, off);
    ls_free(*f);
    *f = v;
}

static void int_set(ls_config_t *c, size_t off, size_t size, int64_t v)
{
    if (size == sizeof(int32_t)) {
        int32_t x = (int32_t)v;
        memcpy((char *)c + off, &x, sizeof x);
    } else {
        memcpy((char *)c + off, &v, sizeof v);
    }
}

static bool str_ieq(const char *a, const char *b) { return strcasecmp(a, b) == 0; }

/* Trimmed copy of s. */
static char *trim_dup(const char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        n--;
    return ls_strndup(s, n);
}

/* Renders a byte count the way a user would write it, for range messages. */
static void fmt_size(int64_t v, char *out, size_t n)
{
    static const struct {
        int64_t unit;
        const char *name;
    } units[] = {{TiB, "TiB"}, {GiB, "GiB"}, {MiB, "MiB"}, {KiB, "KiB"}};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (v != 0 && v % units[i].unit == 0) {
            snprintf(out, n, "%" PRId64 "%s", v / units[i].unit, units[i].name);
            return;
        }
    snprintf(out, n, "%" PRId64, v);
}

static const cfg_key_t *key_find(const char *name)
{
    for (size_t i = 0; i < NKEYS; i++)
        if (strcmp(cfg_keys[i].name, name) == 0 ||
            (cfg_keys[i].alias && strcmp(cfg_keys[i].alias, name) == 0))
            return &cfg_keys[i];
    return NULL;
}

bool ls_config_key_known(const char *name) { return key_find(name) != NULL; }

/* Edit distance, for "did you mean" on a misspelt key. */
static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63) return SIZE_MAX;
    size_t row[64];
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

static void unknown_key(const char *name, char *err, int errlen)
{
    const char *best = NULL;
    size_t bestd = SIZE_MAX;
    for (size_t i = 0; i < NKEYS; i++) {
        size_t d = edit_distance(name, cfg_keys[i].name);
        if (d < bestd) bestd = d, best = cfg_keys[i].name;
    }
    size_t len = strlen(name);
    if (best && bestd <= (len / 4 > 2 ? len / 4 : 2))
        errf(err, errlen, "%s: unknown key (did you mean '%s'?)", name, best);
    else
        errf(err, errlen, "%s: unknown key (see --help for the list)", name);
}

/* ---- value parsers ------------------------------------------------------ */

/* Whole-string decimal integer; -1 when not a number, -2 when out of int64. */
static int parse_i64(const char *s, int64_t *out)
{
    if (!*s || isspace((unsigned char)*s)) return -1;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (*end) return -1;
    if (errno == ERANGE) return -2;
    *out = v;
    return 0;
}

/* Sizes: digits, optional blank, optional suffix k/m/g/t or KiB/MiB/GiB/TiB
 * (any case). All suffixes are powers of 1024; "kb"/"mb" are refused rather
 * than guessed, since people mean both 1000 and 1024 by them. */
static int parse_size(const char *s, int64_t *out)
{
    const char *p = s;
    if (!isdigit((unsigned char)*p)) return -1;
    uint64_t v = 0;
    for (; isdigit((unsigned char)*p); p++) {
        if (v > (UINT64_MAX - 9) / 10) return -2;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    while (*p == ' ' || *p == '\t')
        p++;
    static const struct {
        const char *sfx;
        int64_t mult;
    } sfx[] = {{"", 1},      {"b", 1},   {"k", KiB},   {"kib", KiB}, {"m", MiB},
               {"mib", MiB}, {"g", GiB}, {"gib", GiB}, {"t", TiB},   {"tib", TiB}};
    for (size_t i = 0; i < sizeof sfx / sizeof sfx[0]; i++)
        if (str_ieq(p, sfx[i].sfx)) {
            if (v > (uint64_t)INT64_MAX / (uint64_t)sfx[i].mult) return -2;
            *out = (int64_t)(v * (uint64_t)sfx[i].mult);
            return 0;
        }
    return -1;
}

static int parse_bool(const char *s, bool *out)
{
    static const char *const yes[] = {"true", "yes", "on", "1"};
    static const char *const no[] = {"false", "no", "off", "0"};
    for (int i = 0; i < 4; i++) {
        if (str_ieq(s, yes[i])) {
            *out = true;
            return 0;
        }
        if (str_ieq(s, no[i])) {
            *out = false;
            return 0;
        }
    }
    return -1;
}

/* overflow: the text did not even fit in int64 (x is then meaningless). */
static int range_check(const cfg_key_t *k, const char *name, const char *v, bool overflow,
                       int64_t x, char *err, int errlen)
{
    if (!overflow && x >= k->min && x <= k->max) return 0;
    if (k->type == CT_SIZE) {
        char lo[32], hi[32];
        fmt_size(k->min, lo, sizeof lo);
        fmt_size(k->max, hi, sizeof hi);
        errf(err, errlen, "%s: '%s' is out of range (must be %s..%s)", name, v, lo, hi);
    } else {
        errf(err, errlen, "%s: '%s' is out of range (must be %" PRId64 "..%" PRId64 ")", name, v,
             k->min, k->max);
    }
    return -1;
}

static bool host_ok(const char *h)
{
    for (; *h; h++)
        if (!(isalnum((unsigned char)*h) || *h == '.' || *h == '-' || *h == '_' || *h == ':' ||
              *h == '%'))
            return false;
    return true;
}

/* One address: [NAME://]host:port, host may be [v6]. Empty host only for
 * the Kafka listeners (bind every interface, as Kafka). A key that takes one
 * address (http.listen) takes no name but PLAINTEXT; the Kafka lists take
 * any listener name (letters, digits, '_'; upper-cased as Kafka does). */
static int parse_listener(ls_listener_cfg_t *out, const cfg_key_t *k, const char *name,
                          const char *v, char *err, int errlen)
{
    static const char expect[] = "expected NAME://host:port or host:port";
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "PLAINTEXT");
    const char *hp = v;
    const char *sep = strstr(v, "://");
    if (sep) {
        size_t nl = (size_t)(sep - v);
        bool ok = nl > 0 && nl < sizeof out->name;
        for (size_t i = 0; ok && i < nl; i++)
            ok = isalnum((unsigned char)v[i]) || v[i] == '_';
        if (!ok) {
            errf(err, errlen, "%s: '%s': '%.*s' is not a listener name (letters, digits, _)", name,
                 v, (int)nl, v);
            return -1;
        }
        for (size_t i = 0; i < nl; i++)
            out->name[i] = (char)toupper((unsigned char)v[i]);
        out->name[nl] = 0;
        if (!k->multi && strcmp(out->name, "PLAINTEXT") != 0) {
            errf(err, errlen, "%s: '%s': only PLAINTEXT is supported here", name, v);
            return -1;
        }
        hp = sep + 3;
    }
    const char *hs = hp, *he, *colon;
    if (*hp == '[') {
        hs = hp + 1;
        he = strchr(hs, ']');
        if (!he || he[1] != ':') {
            errf(err, errlen, "%s: '%s' is not a listener (%s)", name, v, expect);
            return -1;
        }
        colon = he + 1;
    } else {
        colon = strrchr(hp, ':');
        if (!colon) {
            errf(err, errlen, "%s: '%s' is not a listener (%s)", name, v, expect);
            return -1;
        }
        he = colon;
        if (memchr(hs, ':', (size_t)(he - hs))) {
            errf(err, errlen, "%s: '%s': write IPv6 hosts in brackets, e.g. [::1]:9092", name, v);
            return -1;
        }
    }
    int64_t port;
    if (parse_i64(colon + 1, &port) != 0 || port < k->min || port > k->max) {
        errf(err, errlen, "%s: '%s': '%s' is not a port (expected %" PRId64 "..%" PRId64 ")", name,
             v, colon + 1, k->min, k->max);
        return -1;
    }
    if ((size_t)(he - hs) >= sizeof out->host) {
        errf(err, errlen, "%s: '%s': the host is too long", name, v);
        return -1;
    }
    memcpy(out->host, hs, (size_t)(he - hs));
    if (!host_ok(out->host)) {
        errf(err, errlen, "%s: '%s': '%s' is not a host name or address", name, v, out->host);
        return -1;
    }
    if (!*out->host) {
        if (k->off != offsetof(ls_config_t, listen_host)) {
            errf(err, errlen, "%s: '%s': the host must not be empty", name, v);
            return -1;
        }
        snprintf(out->host, sizeof out->host, "0.0.0.0");
    }
    out->port = (int)port;
    return 0;
}

/* A listener key. The Kafka ones (listeners, advertised.listeners) take a
 * comma-separated list with distinct names; their first entry also fills
 * the single host and port fields (listen_host, advertised_host) that the
 * older single-address keys share. */
static int set_listener(ls_config_t *c, const cfg_key_t *k, const char *name, const char *v,
                        char *err, int errlen)
{
    ls_listener_cfg_t list[LS_MAX_LISTENERS];
    int n = 0;
    if (!k->multi && strchr(v, ',')) {
        errf(err, errlen, "%s: '%s' names several addresses; only one is supported", name, v);
        return -1;
    }
    for (const char *p = v;;) {
        size_t len = strcspn(p, ",");
        if (n == LS_MAX_LISTENERS) {
            errf(err, errlen, "%s: more than %d listeners", name, LS_MAX_LISTENERS);
            return -1;
        }
        char *entry = ls_strndup(p, len);
        char *t = trim_dup(entry);
        ls_free(entry);
        int rc = parse_listener(&list[n], k, name, t, err, errlen);
        ls_free(t);
        if (rc) return -1;
        for (int i = 0; i < n; i++)
            if (strcmp(list[i].name, list[n].name) == 0) {
                errf(err, errlen, "%s: '%s' names listener %s twice", name, v, list[n].name);
                return -1;
            }
        n++;
        if (!p[len]) break;
        p += len + 1;
    }
    str_set(c, k->off, ls_strdup(list[0].host));
    int_set(c, k->port_off, sizeof(int), list[0].port);
    if (k->multi) {
        bool adv = k->off == offsetof(ls_config_t, advertised_host);
        memcpy(adv ? c->advertised : c->listeners, list, (size_t)n * sizeof list[0]);
        *(adv ? &c->nadvertised : &c->nlisteners) = n;
    }
    return 0;
}

/* Applies an already-trimmed value; name is the spelling the user wrote. */
static int key_apply(ls_config_t *c, const cfg_key_t *k, const char *name, const char *v, char *err,
                     int errlen)
{
    if (!*v) {
        /* An empty value resets a key that has no default ("object.store.url="
         * in a file generated by --help means "derive it"). */
        if (!k->def && (k->type == CT_STRING || k->type == CT_URL)) {
            str_set(c, k->off, NULL);
            return 0;
        }
        if (!k->def && k->type == CT_PORT) {
            int_set(c, k->off, k->size, 0);
            return 0;
        }
        if ((!k->def || k->empty_disables) && k->type == CT_LISTENER) {
            str_set(c, k->off, NULL);
            int_set(c, k->port_off, sizeof(int), 0);
            if (k->off == offsetof(ls_config_t, advertised_host)) c->nadvertised = 0;
            return 0;
        }
        errf(err, errlen, "%s: empty value (default %s)", name, k->def ? k->def : "none");
        return -1;
    }
    int64_t x = 0;
    bool b;
    int rc;
    switch (k->type) {
    case CT_STRING: str_set(c, k->off, ls_strdup(v)); return 0;
    case CT_URL: {
        const char *s = strstr(v, "://");
        bool ok = s && s > v && isalpha((unsigned char)v[0]);
        for (const char *q = v; ok && q < s; q++)
            ok = isalnum((unsigned char)*q) || *q == '+' || *q == '-' || *q == '.';
        if (!ok) {
            errf(err, errlen,
                 "%s: '%s' is not a URL (expected scheme://..., e.g. file:///var/lib/lakestream"
                 " or s3://bucket/prefix)",
                 name, v);
            return -1;
        }
        str_set(c, k->off, ls_strdup(v));
        return 0;
    }
    case CT_INT:
        rc = parse_i64(v, &x);
        if (rc == -1) {
            errf(err, errlen, "%s: '%s' is not an integer", name, v);
            return -1;
        }
        if (range_check(k, name, v, rc == -2, x, err, errlen)) return -1;
        int_set(c, k->off, k->size, x);
        return 0;
    case CT_SIZE:
        rc = parse_size(v, &x);
        if (rc == -1) {
            errf(err, errlen, "%s: '%s' is not a size (expected bytes, e.g. 4194304 or 4MiB)", name,
                 v);
            return -1;
        }
        if (range_check(k, name, v, rc == -2, x, err, errlen)) return -1;
        int_set(c, k->off, k->size, x);
        return 0;
    case CT_BOOL:
        if (parse_bool(v, &b)) {
            errf(err, errlen,
                 "%s: '%s' is not a boolean (expected true/false, yes/no, on/off or 1/0)", name, v);
            return -1;
        }
        *(bool *)((char *)c + k->off) = b;
        return 0;
    case CT_PORT:
        if (parse_i64(v, &x) != 0 || x < k->min || x > k->max) {
            errf(err, errlen, "%s: '%s' is not a port (expected %" PRId64 "..%" PRId64 ")", name, v,
                 k->min, k->max);
            return -1;
        }
        int_set(c, k->off, k->size, x);
        return 0;
    case CT_LISTENER: return set_listener(c, k, name, v, err, errlen);
    case CT_LEVEL: {
        char low[16];
        size_t n = strlen(v);
        ls_diag_level lvl;
        if (n >= sizeof low) n = sizeof low - 1;
        for (size_t i = 0; i < n; i++)
            low[i] = (char)tolower((unsigned char)v[i]);
        low[n] = 0;
        if (strlen(v) >= sizeof low || ls_diag_parse_level(low, &lvl) != 0) {
            errf(err, errlen, "%s: '%s' is not a level (expected debug, info, warn or error)", name,
                 v);
            return -1;
        }
        str_set(c, k->off, ls_strdup(low));
        return 0;
    }
    }
    errf(err, errlen, "%s: internal error: bad key type", name);
    return -1;
}

/* ---- public API ---------------------------------------------------------- */

void ls_config_init(ls_config_t *c)
{
    memset(c, 0, sizeof *c);
    char err[256];
    for (size_t i = 0; i < NKEYS; i++) {
        const cfg_key_t *k = &cfg_keys[i];
        if (!k->def) continue;
        if (key_apply(c, k, k->name, k->def, err, sizeof err) != 0) {
            /* A default that fails its own parser is a bug in the table above. */
            LS_PANIC("bad built-in default: %s", err);
        }
    }
}

void ls_config_free(ls_config_t *c)
{
    for (size_t i = 0; i < NKEYS; i++) {
        cfg_type t = cfg_keys[i].type;
        if (t == CT_STRING || t == CT_URL || t == CT_LISTENER || t == CT_LEVEL)
            str_set(c, cfg_keys[i].off, NULL); /* shared fields become NULL once */
    }
    memset(c, 0, sizeof *c);
}

int ls_config_set(ls_config_t *c, const char *key, const char *value, char *err, int errlen)
{
    const cfg_key_t *k = key_find(key);
    if (!k) {
        for (size_t i = 0; i < sizeof refused_keys / sizeof refused_keys[0]; i++)
            if (refused_match(refused_keys[i].name, key)) {
                errf(err, errlen, "%s: %s", key, refused_keys[i].why);
                return -1;
            }
        unknown_key(key, err, errlen);
        return -1;
    }
    char *v = trim_dup(value ? value : "");
    int rc = key_apply(c, k, key, v, err, errlen);
    ls_free(v);
    return rc;
}

/* Java properties escapes (java.util.Properties#load): \t \n \r \f, \uXXXX,
 * and a backslash before any other character stands for that character. */
static int unescape(const char *s, size_t n, ls_buf_t *out)
{
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (ch != '\\' || i + 1 == n) {
            ls_buf_append_u8(out, (uint8_t)ch);
            continue;
        }
        ch = s[++i];
        switch (ch) {
        case 't': ls_buf_append_u8(out, '\t'); break;
        case 'n': ls_buf_append_u8(out, '\n'); break;
        case 'r': ls_buf_append_u8(out, '\r'); break;
        case 'f': ls_buf_append_u8(out, '\f'); break;
        case 'u': {
            unsigned cp = 0;
            if (i + 4 >= n) return -1;
            for (int d = 1; d <= 4; d++) {
                char h = s[i + d];
                cp <<= 4;
                if (h >= '0' && h <= '9')
                    cp |= (unsigned)(h - '0');
                else if (h >= 'a' && h <= 'f')
                    cp |= (unsigned)(h - 'a' + 10);
                else if (h >= 'A' && h <= 'F')
                    cp |= (unsigned)(h - 'A' + 10);
                else
                    return -1;
            }
            i += 4;
            if (cp < 0x80) {
                ls_buf_append_u8(out, (uint8_t)cp);
            } else if (cp < 0x800) {
                ls_buf_append_u8(out, (uint8_t)(0xc0 | cp >> 6));
                ls_buf_append_u8(out, (uint8_t)(0x80 | (cp & 0x3f)));
            } else {
                ls_buf_append_u8(out, (uint8_t)(0xe0 | cp >> 12));
                ls_buf_append_u8(out, (uint8_t)(0x80 | ((cp >> 6) & 0x3f)));
                ls_buf_append_u8(out, (uint8_t)(0x80 | (cp & 0x3f)));
            }
            break;
        }
        default: ls_buf_append_u8(out, (uint8_t)ch); break;
        }
    }
    ls_buf_append_u8(out, 0);
    return 0;
}

/* One logical line: split key from value at the first unescaped '=', ':' or
 * blank, then apply. */
static int apply_line(ls_config_t *c, const char *path, int lineno, const char *s, size_t n,
                      bool others_can_read, char *err, int errlen)
{
    size_t i = 0;
    while (i < n && s[i] != '=' && s[i] != ':' && s[i] != ' ' && s[i] != '\t' && s[i] != '\f') {
        if (s[i] == '\\' && i + 1 < n) i++;
        i++;
    }
    size_t klen = i;
    while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\f'))
        i++;
    if (i < n && (s[i] == '=' || s[i] == ':')) i++;
    int rc = -1;
    ls_buf_t key, val;
    ls_buf_init(&key);
    ls_buf_init(&val);
    if (unescape(s, klen, &key) || unescape(s + i, n - i, &val)) {
        errf(err, errlen, "%s:%d: bad \\u escape", path, lineno);
        goto free_bufs;
    }
    if (klen == 0) {
        errf(err, errlen, "%s:%d: missing key before '%.*s'", path, lineno, (int)(n > 40 ? 40 : n),
             s);
        goto free_bufs;
    }
    char msg[512];
    const cfg_key_t *k = key_find((char *)key.data);
    if (k && k->secret && others_can_read) {
        errf(err, errlen,
             "%s:%d: %s is a secret, but other users can read this file: chmod 600 %s (or pass "
             "it in the environment)",
             path, lineno, k->name, path);
        goto free_bufs;
    }
    if (ls_config_set(c, (char *)key.data, (char *)val.data, msg, sizeof msg) != 0) {
        errf(err, errlen, "%s:%d: %s", path, lineno, msg);
        goto free_bufs;
    }
    rc = 0;
free_bufs:
    ls_buf_free(&key);
    ls_buf_free(&val);
    return rc;
}

int ls_config_load_file(ls_config_t *c, const char *path, char *err, int errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        errf(err, errlen, "%s: cannot open config file: %s", path, strerror(errno));
        return -1;
    }
    int rc = -1;
    struct stat st;
    bool others_can_read = fstat(fileno(f), &st) != 0 || (st.st_mode & (S_IRWXG | S_IRWXO));
    ls_buf_t text, logical;
    ls_buf_init(&text);
    ls_buf_init(&logical);
    char chunk[4096];
    size_t got;
    while ((got = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (text.len + got > CONFIG_FILE_MAX) {
            errf(err, errlen, "%s: config file larger than %d bytes", path, CONFIG_FILE_MAX);
            goto free_text;
        }
        ls_buf_append(&text, chunk, got);
    }
    if (ferror(f)) {
        errf(err, errlen, "%s: read error: %s", path, strerror(errno));
        goto free_text;
    }

    static const char nothing[1];
    const char *p = text.len ? (const char *)text.data : nothing; /* empty file: no NULL + 0 */
    const char *end = p + text.len;
    if (text.len >= 3 && memcmp(p, "\xEF\xBB\xBF", 3) == 0)
        p += 3; /* UTF-8 byte order mark left by some editors */
    int lineno = 0;
    while (p < end) {
        /* Gather one logical line: natural lines joined while they end in an
         * odd number of backslashes. Leading blanks of every natural line are
         * dropped; comments are recognised only at a logical line's start. */
        int first = lineno + 1;
        bool cont = true, comment = false;
        logical.len = 0;
        while (cont && p < end) {
            const char *eol = p;
            while (eol < end && *eol != '\n' && *eol != '\r')
                eol++;
            lineno++;
            const char *s = p;
            while (s < eol && (*s == ' ' || *s == '\t' || *s == '\f'))
                s++;
            if (logical.len == 0 && first == lineno && s < eol && (*s == '#' || *s == '!'))
                comment = true;
            size_t bs = 0;
            for (const char *q = eol; q > s && q[-1] == '\\'; q--)
                bs++;
            cont = !comment && (bs & 1);
            ls_buf_append(&logical, s, (size_t)(eol - s) - (cont ? 1 : 0));
            p = eol; /* step over one line ending: \n, \r\n or a lone \r */
            if (p < end && *p == '\r') p++;
            if (p < end && *p == '\n' && (p == eol || p[-1] == '\r')) p++;
        }
        if (comment || logical.len == 0) continue;
        if (apply_line(c, path, first, (const char *)logical.data, logical.len, others_can_read,
                       err, errlen))
            goto free_text;
    }
    rc = 0;
free_text:
    ls_buf_free(&logical);
    ls_buf_free(&text);
    fclose(f);
    return rc;
}

int ls_config_load_env(ls_config_t *c, char *err, int errlen)
{
    size_t plen = strlen(ENV_PREFIX);
    for (char **e = environ; e && *e; e++) {
        if (strncmp(*e, ENV_PREFIX, plen) != 0) continue;
        const char *eq = strchr(*e, '=');
        if (!eq) continue;
        size_t nlen = (size_t)(eq - *e);
        if (nlen == strlen(ENV_CONFIG_FILE) && strncmp(*e, ENV_CONFIG_FILE, nlen) == 0)
            continue; /* names a config file; read by ls_config_load */
        char var[128], key[128];
        if (nlen >= sizeof var) {
            errf(err, errlen, "%.40s...: unknown variable", *e);
            return -1;
        }
        memcpy(var, *e, nlen);
        var[nlen] = 0;
        size_t klen = nlen - plen;
        for (size_t i = 0; i < klen; i++) {
            char ch = var[plen + i];
            key[i] = ch == '_' ? '.' : (char)tolower((unsigned char)ch);
        }
        key[klen] = 0;
        const cfg_key_t *k = key_find(key);
        if (!k) {
            errf(err, errlen,
                 "%s: unknown variable (no config key '%s'; " ENV_CONFIG_FILE
                 " names a config file)",
                 var, key);
            return -1;
        }
        char msg[512];
        if (ls_config_set(c, key, eq + 1, msg, sizeof msg) != 0) {
            errf(err, errlen, "%s: %s", var, msg);
            return -1;
        }
    }
    return 0;
}

/* "s3.secret.key" -> "S3_SECRET_KEY": the LAKESTREAM_* variable of a key. */
static const char *env_suffix(const char *name, char *out, size_t cap)
{
    size_t i = 0;
    for (; name[i] && i + 1 < cap; i++)
        out[i] = name[i] == '.' ? '_' : (char)toupper((unsigned char)name[i]);
    out[i] = 0;
    return out;
}

int ls_config_load_args(ls_config_t *c, int argc, char **argv, char *err, int errlen)
{
    char msg[512];
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--", 2) != 0 || !a[2]) {
            errf(err, errlen, "unexpected argument '%s' (flags are --key=value or --key value)", a);
            return -1;
        }
        const char *name = a + 2;
        const char *eq = strchr(name, '=');
        char key[128];
        size_t klen = eq ? (size_t)(eq - name) : strlen(name);
        if (klen >= sizeof key) {
            errf(err, errlen, "--%.40s...: unknown key", name);
            return -1;
        }
        memcpy(key, name, klen);
        key[klen] = 0;
        if (strcmp(key, "config") == 0) {
            errf(err, errlen, "--config: config files are read before flags (ls_config_load)");
            return -1;
        }
        const cfg_key_t *k = key_find(key);
        if (!k) {
            unknown_key(key, msg, sizeof msg);
            errf(err, errlen, "--%s", msg);
            return -1;
        }
        if (k->secret) {
            /* every local user can read a process's flags (/proc/PID/cmdline) */
            errf(err, errlen,
                 "--%s: secrets are not accepted as command-line flags (any local user can "
                 "read them); set LAKESTREAM_%s or the AWS_* variable, or put it in a config "
                 "file of mode 0600",
                 k->name, env_suffix(k->name, msg, sizeof msg));
            return -1;
        }
        const char *val;
        if (eq) {
            val = eq + 1;
        } else if (i + 1 < argc && !(k->type == CT_BOOL && strncmp(argv[i + 1], "--", 2) == 0)) {
            val = argv[++i];
        } else if (k->type == CT_BOOL) {
            val = "true"; /* bare --flag switches a boolean on */
        } else {
            errf(err, errlen, "--%s: missing value", key);
            return -1;
        }
        if (ls_config_set(c, key, val, msg, sizeof msg) != 0) {
            errf(err, errlen, "--%s", msg);
            return -1;
        }
    }
    return 0;
}

/* data.dir as an absolute path without trailing slashes, so derived URLs are
 * well-formed (file:///abs/...) and survive a later chdir. */
static char *data_dir_abs(const char *dir, char *err, int errlen)
{
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        n--;
    if (dir[0] == '/') return ls_strndup(dir, n);
    while (n >= 2 && dir[0] == '.' && dir[1] == '/') {
        dir += 2, n -= 2;
        while (n && *dir == '/')
            dir++, n--;
    }
    if (n == 1 && dir[0] == '.') n = 0;
    char cwd[4096];
    if (!getcwd(cwd, sizeof cwd)) {
        errf(err, errlen, "data.dir: cannot resolve '%s': %s", dir, strerror(errno));
        return NULL;
    }
    if (n == 0) return ls_strdup(cwd);
    return ls_asprintf("%s%s%.*s", cwd, strcmp(cwd, "/") == 0 ? "" : "/", (int)n, dir);
}

static bool host_is_wildcard(const char *h)
{
    return !h || !*h || strcmp(h, "0.0.0.0") == 0 || strcmp(h, "::") == 0;
}

static const char *const secproto_names[] = {"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"};

const char *ls_secproto_name(ls_secproto p) { return secproto_names[p]; }

/* The protocol listener name maps to in listener.security.protocol.map
 * (Kafka's default map when unset): 0, or -1 with err set. */
static int listener_protocol(const ls_config_t *c, const char *lname, ls_secproto *out, char *err,
                             int errlen)
{
    const char *map = c->listener_protocol_map
                          ? c->listener_protocol_map
                          : "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,"
                            "SASL_SSL:SASL_SSL";
    for (const char *p = map; *p;) {
        size_t len = strcspn(p, ",");
        char *entry = ls_strndup(p, len);
        char *e = trim_dup(entry);
        ls_free(entry);
        char *colon = strchr(e, ':');
        int found = -1;
        if (colon) {
            *colon = 0;
            char *proto = trim_dup(colon + 1);
            for (int i = 0; i < 4; i++)
                if (str_ieq(proto, secproto_names[i])) found = i;
            ls_free(proto);
        }
        if (!colon || found < 0 || !*e) {
            errf(err, errlen,
                 "listener.security.protocol.map: '%.*s' is not NAME:PROTOCOL (PROTOCOL one of "
                 "PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL)",
                 (int)len, p);
            ls_free(e);
            return -1;
        }
        bool match = str_ieq(e, lname);
        ls_free(e);
        if (match) {
            *out = (ls_secproto)found;
            return 0;
        }
        p += len;
        if (*p) p++;
    }
    errf(err, errlen,
         "listeners: listener %s has no security protocol in listener.security.protocol.map "
         "(%s)",
         lname, map);
    return -1;
}

/* Resolves every Kafka listener: its protocol, and its advertised address
 * (its advertised.listeners entry, else its own address; a listener binding
 * every interface advertises this machine's name, as Kafka does). The first
 * listener's advertised address is advertised.host/advertised.port, which
 * advertised.listeners' first entry also sets. */
static int listeners_finish(ls_config_t *c, char *err, int errlen)
{
    for (int i = 0; i < c->nadvertised; i++) {
        int j = 0;
        while (j < c->nlisteners && strcmp(c->listeners[j].name, c->advertised[i].name) != 0)
            j++;
        if (j == c->nlisteners) {
            errf(err, errlen, "advertised.listeners: %s is not a listener name in listeners",
                 c->advertised[i].name);
            return -1;
        }
    }
    char hn[256];
    const char *own_name =
        gethostname(hn, sizeof hn) == 0 && hn[0] && memchr(hn, 0, sizeof hn) ? hn : "127.0.0.1";
    for (int i = 0; i < c->nlisteners; i++) {
        ls_listener_cfg_t *l = &c->listeners[i];
        if (listener_protocol(c, l->name, &l->protocol, err, errlen) != 0) return -1;
        for (int j = 0; j < i; j++)
            if (l->port != 0 && c->listeners[j].port == l->port) {
                errf(err, errlen, "listeners: %s and %s both use port %d", c->listeners[j].name,
                     l->name, l->port);
                return -1;
            }
        const ls_listener_cfg_t *a = NULL;
        for (int j = 0; j < c->nadvertised; j++)
            if (strcmp(c->advertised[j].name, l->name) == 0) a = &c->advertised[j];
        /* the first listener's address may come from the single-part keys */
        if (i == 0 && (!c->nadvertised || a == &c->advertised[0])) {
            snprintf(l->adv_host, sizeof l->adv_host, "%s",
                     c->advertised_host ? c->advertised_host : "");
            l->adv_port = c->advertised_port;
        } else if (a) {
            snprintf(l->adv_host, sizeof l->adv_host, "%s", a->host);
            l->adv_port = a->port;
        }
        if (!*l->adv_host)
            snprintf(l->adv_host, sizeof l->adv_host, "%s",
                     host_is_wildcard(l->host) ? own_name : l->host);
        if (host_is_wildcard(l->adv_host)) {
            errf(err, errlen, "%s: '%s' is a wildcard address clients cannot reach",
                 i == 0 && !a ? "advertised.host" : "advertised.listeners", l->adv_host);
            return -1;
        }
        if (l->adv_port == 0) l->adv_port = l->port; /* 0 still when picking a free port */
    }
    str_set(c, offsetof(ls_config_t, advertised_host), ls_strdup(c->listeners[0].adv_host));
    c->advertised_port = c->listeners[0].adv_port;
    return 0;
}

int ls_config_http_auth(const char *s, unsigned *schemes, char *bad, size_t bcap)
{
    *schemes = 0;
    if (!s || !strcmp(s, "none")) return 0;
    const char *p = s;
    while (*p) {
        while (*p == ' ' || *p == ',')
            p++;
        size_t n = strcspn(p, ", ");
        if (!n) break;
        if (n == 5 && !strncmp(p, "basic", 5))
            *schemes |= LS_HTTP_AUTH_BASIC;
        else if (n == 6 && !strncmp(p, "bearer", 6))
            *schemes |= LS_HTTP_AUTH_BEARER;
        else {
            snprintf(bad, bcap, "%.*s", (int)n, p);
            return -1;
        }
        p += n;
    }
    if (!*schemes) {
        snprintf(bad, bcap, "%s", s);
        return -1;
    }
    return 0;
}

/* The http.* / schema.registry.* TLS and authentication settings that
 * involve each other: refused unless they can be applied as written. */
static int http_sec_finish(ls_config_t *c, char *err, int errlen)
{
    static const char *const pfx[2] = {"http", "schema.registry"};
    for (int i = 0; i < 2; i++) {
        const char *p = pfx[i];
        const struct ls_http_sec_cfg *h = &c->http_sec[i];
        const char *ca = h->client_auth ? h->client_auth : "none";
        const char *au = h->authentication ? h->authentication : "none";
        bool tls = h->keystore_location || h->keystore_certificate_chain;
        if (strcmp(ca, "none") && strcmp(ca, "requested") && strcmp(ca, "required")) {
            errf(err, errlen, "%s.ssl.client.auth: '%s' is not none, requested or required", p, ca);
            return -1;
        }
        unsigned schemes;
        char bad[64];
        if (ls_config_http_auth(au, &schemes, bad, sizeof bad) != 0) {
            errf(err, errlen, "%s.authentication: '%s' is not none, basic, bearer or basic,bearer",
                 p, bad);
            return -1;
        }
        if (h->keystore_location && (h->keystore_certificate_chain || h->keystore_key)) {
            errf(err, errlen,
                 "%s.ssl.keystore.location: set with %s.ssl.keystore.certificate.chain/key; "
                 "choose one",
                 p, p);
            return -1;
        }
        if (!h->keystore_certificate_chain != !h->keystore_key) {
            errf(err, errlen, "%s.ssl.keystore.%s: needs %s.ssl.keystore.%s", p,
                 h->keystore_key ? "key" : "certificate.chain", p,
                 h->keystore_key ? "certificate.chain" : "key");
            return -1;
        }
        if (!tls && (h->truststore_location || strcmp(ca, "none"))) {
            errf(err, errlen, "%s.ssl.%s: applies to HTTPS only; set %s.ssl.keystore.location", p,
                 h->truststore_location ? "truststore.location" : "client.auth", p);
            return -1;
        }
        if (strcmp(ca, "none") && !h->truststore_location) {
            errf(err, errlen, "%s.ssl.client.auth=%s: needs %s.ssl.truststore.location", p, ca, p);
            return -1;
        }
    }
    return 0;
}

int ls_config_finish(ls_config_t *c, char *err, int errlen)
{
    if (!c->object_store_url || !c->metadata_url) {
        char *dir = data_dir_abs(c->data_dir, err, errlen);
        if (!dir) return -1;
        if (!c->object_store_url) c->object_store_url = ls_asprintf("file://%s/objects", dir);
        if (!c->metadata_url) c->metadata_url = ls_asprintf("sqlite://%s/meta.db", dir);
        ls_free(dir);
    }
    if (listeners_finish(c, err, errlen) != 0) return -1;
    if (http_sec_finish(c, err, errlen) != 0) return -1;
    if (c->wal_flush_min_interval_ms < 0) {
        /* per store: a local directory has no per-request price, so flush as
         * soon as data arrives; S3 bills every PUT and every GET/DELETE that
         * follows an object, so batch (the value is the one DescribeConfigs
         * reports from here on) */
        const char *u = c->object_store_url;
        if (strncmp(u, "faulty+", 7) == 0) u += 7;
        c->wal_flush_min_interval_ms =
            strncmp(u, "s3://", 5) == 0 ? LS_WAL_FLUSH_MIN_INTERVAL_S3_MS : 0;
    }

    /* Limits that involve two keys: a batch or a flush larger than the whole
     * produce buffer could never be admitted, and the broker would stall. */
    char a[32], b[32];
    if (c->wal_flush_max_bytes > c->wal_buffer_max_bytes) {
        fmt_size(c->wal_buffer_max_bytes, a, sizeof a);
        fmt_size(c->wal_flush_max_bytes, b, sizeof b);
        errf(err, errlen, "wal.buffer.max.bytes: %s is smaller than wal.flush.max.bytes (%s)", a,
             b);
        return -1;
    }
    const char *tcr = c->table_cold_reads ? c->table_cold_reads : "";
    if (strcmp(tcr, "table") != 0 && strcmp(tcr, "compacted-object") != 0) {
        errf(err, errlen, "table.cold.reads: '%s' is neither table nor compacted-object", tcr);
        return -1;
    }
    const char *tst = c->log_message_timestamp_type ? c->log_message_timestamp_type : "";
    if (strcmp(tst, "CreateTime") != 0 && strcmp(tst, "LogAppendTime") != 0) {
        errf(err, errlen,
             "log.message.timestamp.type: '%s' is neither CreateTime nor "
             "LogAppendTime",
             tst);
        return -1;
    }
    /* authorization: the built-in authorizer answers to Kafka's class
     * names; another class (a plugin) cannot be loaded, so it is refused
     * rather than silently serving without the checks it would make */
    const char *acn = c->authorizer_class_name;
    if (acn && strcmp(acn, "org.apache.kafka.metadata.authorizer.StandardAuthorizer") != 0 &&
        strcmp(acn, "kafka.security.authorizer.AclAuthorizer") != 0) {
        errf(err, errlen,
             "authorizer.class.name: '%s' is not supported; use "
             "org.apache.kafka.metadata.authorizer.StandardAuthorizer (the built-in ACL "
             "authorizer) or leave it empty (authorization off)",
             acn);
        return -1;
    }
    if (c->message_max_bytes > c->wal_buffer_max_bytes) {
        fmt_size(c->wal_buffer_max_bytes, a, sizeof a);
        fmt_size(c->message_max_bytes, b, sizeof b);
        errf(err, errlen, "wal.buffer.max.bytes: %s is smaller than message.max.bytes (%s)", a, b);
        return -1;
    }
    return 0;
}

int ls_config_load(ls_config_t *c, int argc, char **argv, char *err, int errlen)
{
    const char *file = NULL;
    char **rest = LS_NEWN(char *, (size_t)argc + 1);
    int nrest = 0, rc = -1;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--config") == 0) {
            if (i + 1 >= argc) {
                errf(err, errlen, "--config: missing file name");
                goto free_rest;
            }
            file = argv[++i];
        } else if (strncmp(a, "--config=", 9) == 0) {
            file = a + 9;
        } else {
            rest[nrest++] = argv[i];
        }
    }
    if (!file) {
        const char *env = getenv(ENV_CONFIG_FILE);
        if (env && *env) file = env;
    }
    if (file && ls_config_load_file(c, file, err, errlen)) goto free_rest;
    if (ls_config_load_env(c, err, errlen) || ls_config_load_args(c, nrest, rest, err, errlen) ||
        ls_config_finish(c, err, errlen))
        goto free_rest;
    rc = 0;
free_rest:
    ls_free(rest);
    return rc;
}

static const char *type_name(const cfg_key_t *k)
{
    switch (k->type) {
    case CT_STRING: return "string";
    case CT_URL: return "url";
    case CT_INT: return "integer";
    case CT_SIZE: return "size";
    case CT_BOOL: return "boolean";
    case CT_PORT: return "port";
    case CT_LISTENER: return "listener";
    case CT_LEVEL: return "level";
    }
    return "?";
}

void ls_config_print_help(void)
{
    /* The output is itself a valid properties file holding every default. */
    printf("# Lakestream configuration. Sources, later overriding earlier:\n"
           "#   1. a properties file: --config FILE, or the file named by %s\n"
           "#   2. environment: %s<KEY> with the key upper-cased and dots as underscores,\n"
           "#      e.g. LAKESTREAM_WAL_FLUSH_MAX_BYTES=8MiB (unknown %s* variables are errors)\n"
           "#   3. flags: --key=value or --key value\n"
           "# Sizes take k/m/g/t or KiB/MiB/GiB/TiB suffixes (powers of 1024).\n",
           ENV_CONFIG_FILE, ENV_PREFIX, ENV_PREFIX);
    for (size_t i = 0; i < NKEYS; i++) {
        const cfg_key_t *k = &cfg_keys[i];
        if (k->section) printf("\n# ---- %s ----\n", k->section);
        char range[96] = "";
        if (k->type == CT_INT || k->type == CT_PORT) {
            snprintf(range, sizeof range, ", %" PRId64 "..%" PRId64, k->min, k->max);
        } else if (k->type == CT_SIZE) {
            char lo[32], hi[32];
            fmt_size(k->min, lo, sizeof lo);
            fmt_size(k->max, hi, sizeof hi);
            snprintf(range, sizeof range, ", %s..%s", lo, hi);
        }
        char env[128];
        size_t n = 0;
        for (const char *s = k->name; *s && n + 1 < sizeof env; s++)
            env[n++] = *s == '.' ? '_' : (char)toupper((unsigned char)*s);
        env[n] = 0;
        printf("# %s (%s%s; env %s%s%s%s)\n#   %s\n%s=%s\n", k->name, type_name(k), range,
               ENV_PREFIX, env, k->alias ? "; alias " : "", k->alias ? k->alias : "", k->help,
               k->name, k->def ? k->def : "");
    }
}
