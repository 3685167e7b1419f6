/* Configuration: defaults, the three sources and their precedence, and the
 * messages a user gets for a bad value — each must name the key (and the
 * file:line or variable it came from) and the offending text. */
#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/config.h"
#include "server/settings.h"
#include "unit.h"

static char tmpdir[] = "/tmp/ls_test_config_XXXXXX";

static const char *write_file(const char *name, const char *text)
{
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "wb");
    if (!f) abort();
    fputs(text, f);
    fclose(f);
    return path;
}

/* ls_config_set expecting failure; returns the message. */
static const char *set_err(const char *key, const char *value)
{
    static char err[512];
    ls_config_t c;
    ls_config_init(&c, &ls_broker_settings);
    err[0] = 0;
    ls_status rc = ls_config_set(&c, key, value, err, sizeof err);
    ls_config_free(&c);
    return rc == 0 ? NULL : err;
}

TEST(defaults)
{
    ls_config_t c;
    char err[256];
    ls_config_init(&c, &ls_broker_settings);
    CHECK(strcmp(c.data_dir, "./data") == 0);
    CHECK(c.object_store_url == NULL); /* derived in finish */
    CHECK(c.object_store_fsync);
    CHECK(strcmp(c.listen_host, "127.0.0.1") == 0);
    CHECK_EQ_INT(c.listen_port, 9092);
    CHECK_EQ_INT(c.broker_id, 0);
    CHECK(c.cluster_id == NULL);
    CHECK_EQ_INT(c.wal_flush_max_bytes, 4 << 20);
    CHECK_EQ_INT(c.wal_flush_linger_ms, 250);
    CHECK_EQ_INT(c.wal_flush_min_interval_ms, -1); /* by store: resolved in finish */
    CHECK_EQ_INT(c.wal_max_inflight_flushes, 4);
    CHECK_EQ_INT(c.num_io_threads, 16);
    CHECK_EQ_INT(c.wal_buffer_max_bytes, 64 << 20);
    CHECK_EQ_INT(c.wal_gc_grace_ms, 60000);
    CHECK_EQ_INT(c.read_cache_max_bytes, 256 << 20);
    CHECK_EQ_INT(c.message_max_bytes, 1048588);
    CHECK_EQ_INT(c.socket_request_max_bytes, 100 << 20);
    CHECK(c.auto_create_topics_enable);
    CHECK_EQ_INT(c.num_partitions, 1);
    CHECK_EQ_INT(c.log_retention_ms, 604800000LL);
    CHECK(strcmp(c.log_level, "info") == 0);

    CHECK_EQ_INT(ls_config_finish(&c, err, sizeof err), 0);
    char cwd[1024], want[1100];
    CHECK(getcwd(cwd, sizeof cwd) != NULL);
    snprintf(want, sizeof want, "file://%s/data/objects", cwd);
    CHECK(strcmp(c.object_store_url, want) == 0);
    snprintf(want, sizeof want, "sqlite://%s/data/meta.db", cwd);
    CHECK(strcmp(c.metadata_url, want) == 0);
    CHECK(strcmp(c.advertised_host, "127.0.0.1") == 0);
    CHECK_EQ_INT(c.advertised_port, 9092);
    CHECK_EQ_INT(c.wal_flush_min_interval_ms, 0); /* a local directory: flush at once */
    ls_config_free(&c);
}

/* wal.flush.min.interval.ms defaults by store: S3 bills each request, so
 * its default batches (issue 29 §9: 4 KB WAL objects on s3:// with 0); an
 * explicit value, 0 included, is kept whatever the store. */
static int64_t flush_min_interval(const char *url, const char *explicit_value)
{
    ls_config_t c;
    char err[256];
    ls_config_init(&c, &ls_broker_settings);
    int64_t v = -100; /* a failed set or finish */
    if (ls_config_set(&c, "object.store.url", url, err, sizeof err) == 0 &&
        (!explicit_value ||
         ls_config_set(&c, "wal.flush.min.interval.ms", explicit_value, err, sizeof err) == 0) &&
        ls_config_finish(&c, err, sizeof err) == 0)
        v = c.wal_flush_min_interval_ms;
    ls_config_free(&c);
    return v;
}

TEST(wal_flush_min_interval_by_store)
{
    CHECK_EQ_INT(flush_min_interval("s3://bucket/pfx", NULL), LS_WAL_FLUSH_MIN_INTERVAL_S3_MS);
    CHECK_EQ_INT(flush_min_interval("faulty+s3://bucket/pfx?error_rate=0", NULL),
                 LS_WAL_FLUSH_MIN_INTERVAL_S3_MS);
    CHECK_EQ_INT(flush_min_interval("file:///tmp/objs", NULL), 0);
    CHECK_EQ_INT(flush_min_interval("mem://", NULL), 0);
    CHECK_EQ_INT(flush_min_interval("s3://bucket/pfx", "0"), 0);
    CHECK_EQ_INT(flush_min_interval("s3://bucket/pfx", "50"), 50);
    CHECK_EQ_INT(flush_min_interval("file:///tmp/objs", "300"), 300);
    CHECK_EQ_INT(flush_min_interval("s3://bucket/pfx", "-1"), LS_WAL_FLUSH_MIN_INTERVAL_S3_MS);
    CHECK(LS_WAL_FLUSH_MIN_INTERVAL_S3_MS >= 100 && LS_WAL_FLUSH_MIN_INTERVAL_S3_MS <= 250);
}

TEST(absolute_data_dir_and_explicit_urls)
{
    ls_config_t c;
    char err[256];
    ls_config_init(&c, &ls_broker_settings);
    CHECK_EQ_INT(ls_config_set(&c, "data.dir", "/var/lib/ls/", err, sizeof err), 0);
    CHECK_EQ_INT(ls_config_set(&c, "metadata.url", "etcd://10.0.0.1:2379", err, sizeof err), 0);
    CHECK_EQ_INT(ls_config_finish(&c, err, sizeof err), 0);
    CHECK(strcmp(c.object_store_url, "file:///var/lib/ls/objects") == 0);
    CHECK(strcmp(c.metadata_url, "etcd://10.0.0.1:2379") == 0);
    ls_config_free(&c);
}

TEST(sizes)
{
    static const struct {
        const char *text;
        int64_t want;
    } ok[] = {{"4194304", 4194304}, {"4MiB", 4 << 20},     {"4m", 4 << 20},
              {"4 MiB", 4 << 20},   {" 512k ", 512 << 10}, {"2GiB", 2LL << 30},
              {"1g", 1LL << 30},    {"100b", 100},         {"3KIB", 3 << 10}};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        ls_config_t c;
        char err[256];
        ls_config_init(&c, &ls_broker_settings);
        CHECK_EQ_INT(ls_config_set(&c, "wal.flush.max.bytes", ok[i].text, err, sizeof err), 0);
        CHECK_EQ_INT(c.wal_flush_max_bytes, ok[i].want);
        ls_config_free(&c);
    }
    CHECK(strcmp(set_err("wal.flush.max.bytes", "abc"),
                 "wal.flush.max.bytes: 'abc' is not a size (expected bytes, e.g. 4194304 or "
                 "4MiB)") == 0);
    CHECK(strstr(set_err("wal.flush.max.bytes", "4MB"), "'4MB' is not a size") != NULL);
    CHECK(strstr(set_err("wal.flush.max.bytes", "-1"), "'-1' is not a size") != NULL);
    CHECK(strcmp(set_err("wal.flush.max.bytes", "6GiB"),
                 "wal.flush.max.bytes: '6GiB' is out of range (must be 1..5GiB)") == 0);
    CHECK(strstr(set_err("read.cache.max.bytes", "99999999999999999999"), "out of range"));
    CHECK(strstr(set_err("read.cache.max.bytes", "9999999999t"), "out of range"));
}

TEST(integers_booleans_levels)
{
    ls_config_t c;
    char err[256];
    ls_config_init(&c, &ls_broker_settings);
    CHECK_EQ_INT(ls_config_set(&c, "num.partitions", "12", err, sizeof err), 0);
    CHECK_EQ_INT(c.num_partitions, 12);
    CHECK_EQ_INT(ls_config_set(&c, "log.retention.ms", "-1", err, sizeof err), 0);
    CHECK_EQ_INT(c.log_retention_ms, -1);
    CHECK_EQ_INT(ls_config_set(&c, "object.store.fsync", "no", err, sizeof err), 0);
    CHECK(!c.object_store_fsync);
    CHECK_EQ_INT(ls_config_set(&c, "object.store.fsync", "TRUE", err, sizeof err), 0);
    CHECK(c.object_store_fsync);
    CHECK_EQ_INT(ls_config_set(&c, "auto.create.topics.enable", "0", err, sizeof err), 0);
    CHECK(!c.auto_create_topics_enable);
    CHECK_EQ_INT(ls_config_set(&c, "diag.level", "DEBUG", err, sizeof err), 0);
    CHECK(strcmp(c.log_level, "debug") == 0);
    CHECK_EQ_INT(ls_config_set(&c, "node.id", "7", err, sizeof err), 0); /* KRaft spelling */
    CHECK_EQ_INT(c.broker_id, 7);
    ls_config_free(&c);

    CHECK(strcmp(set_err("num.partitions", "0"),
                 "num.partitions: '0' is out of range (must be 1..1000000)") == 0);
    CHECK(strcmp(set_err("num.partitions", "1.5"), "num.partitions: '1.5' is not an integer") == 0);
    CHECK(strstr(set_err("broker.id", "99999999999"), "broker.id: '99999999999' is out of range"));
    CHECK(strstr(set_err("node.id", "x"), "node.id: 'x' is not an integer"));
    CHECK(strstr(set_err("object.store.fsync", "maybe"),
                 "object.store.fsync: 'maybe' is not a boolean"));
    CHECK(strstr(set_err("diag.level", "loud"), "diag.level: 'loud' is not a level"));
    CHECK(strstr(set_err("data.dir", "  "), "data.dir: empty value"));
    CHECK(strstr(set_err("object.store.url", "/tmp/x"), "object.store.url: '/tmp/x' is not a URL"));
    CHECK(strstr(set_err("wal.flush.linger.ms", ""), "wal.flush.linger.ms: empty value"));
}

TEST(unknown_key_suggests)
{
    CHECK(strcmp(set_err("wal.flush.max.byte", "1"),
                 "wal.flush.max.byte: unknown key (did you mean 'wal.flush.max.bytes'?)") == 0);
    CHECK(strstr(set_err("completely.different", "1"), "unknown key (see --help"));
}

TEST(listeners)
{
    ls_config_t c;
    char err[256];
    ls_config_init(&c, &ls_broker_settings);
    CHECK_EQ_INT(ls_config_set(&c, "listeners", "PLAINTEXT://0.0.0.0:19092", err, sizeof err), 0);
    CHECK(strcmp(c.listen_host, "0.0.0.0") == 0);
    CHECK_EQ_INT(c.listen_port, 19092);
    CHECK_EQ_INT(ls_config_set(&c, "listeners", "localhost:9093", err, sizeof err), 0);
    CHECK(strcmp(c.listen_host, "localhost") == 0);
    CHECK_EQ_INT(ls_config_set(&c, "listeners", "[::1]:9094", err, sizeof err), 0);
    CHECK(strcmp(c.listen_host, "::1") == 0);
    CHECK_EQ_INT(ls_config_set(&c, "listeners", "plaintext://:0", err, sizeof err), 0);
    CHECK(strcmp(c.listen_host, "0.0.0.0") == 0);
    CHECK_EQ_INT(c.listen_port, 0);
    ls_config_free(&c);

    CHECK(strstr(set_err("http.listen", "SSL://h:1"), "only PLAINTEXT"));
    CHECK(strstr(set_err("http.listen", "a:1,b:2"), "only one is supported"));
    CHECK(strstr(set_err("listeners", "a:1,b:2"), "names listener PLAINTEXT twice"));
    CHECK(strstr(set_err("listeners", "A B://h:1"), "'A B' is not a listener name"));
    CHECK(strstr(set_err("listeners", "justahost"), "listeners: 'justahost' is not a listener"));
    CHECK(strstr(set_err("listeners", "h:99999"), "'99999' is not a port"));
    CHECK(strstr(set_err("listeners", "::1:9092"), "brackets"));
    CHECK(strstr(set_err("advertised.listeners", ":9092"), "host must not be empty"));
    CHECK(strstr(set_err("advertised.listeners", "h:0"), "'0' is not a port"));
    CHECK(strstr(set_err("advertised.port", "0"), "advertised.port: '0' is not a port"));
}

/* Kafka's listener list: names, the protocol map (Kafka's default when
 * unset), advertised addresses per name, and the first listener filling the
 * single-address fields. */
static ls_status finish_with(ls_config_t *c, const char *const *kv, char *err, size_t errlen)
{
    ls_config_init(c, &ls_broker_settings);
    for (; *kv; kv += 2) {
        ls_status st = ls_config_set(c, kv[0], kv[1], err, errlen);
        if (st != LS_OK) return st;
    }
    return ls_config_finish(c, err, errlen);
}

TEST(listener_list)
{
    ls_config_t c;
    char err[256];
    const char *two[] = {"listeners",
                         "INTERNAL://127.0.0.1:9092, external://0.0.0.0:9093",
                         "listener.security.protocol.map",
                         "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT",
                         "advertised.listeners",
                         "EXTERNAL://kafka.example.com:19093",
                         NULL};
    CHECK_EQ_INT(finish_with(&c, two, err, sizeof err), 0);
    CHECK_EQ_INT(c.nlisteners, 2);
    CHECK(strcmp(c.listeners[0].name, "INTERNAL") == 0);
    CHECK(strcmp(c.listeners[0].adv_host, "127.0.0.1") == 0);
    CHECK_EQ_INT(c.listeners[0].adv_port, 9092);
    CHECK(strcmp(c.listeners[1].name, "EXTERNAL") == 0);
    CHECK(strcmp(c.listeners[1].host, "0.0.0.0") == 0);
    CHECK(strcmp(c.listeners[1].adv_host, "kafka.example.com") == 0);
    CHECK_EQ_INT(c.listeners[1].adv_port, 19093);
    CHECK(c.listeners[1].protocol == LS_SECPROTO_PLAINTEXT);
    CHECK(strcmp(c.listen_host, "127.0.0.1") == 0 && strcmp(c.advertised_host, "127.0.0.1") == 0);
    ls_config_free(&c);

    const char *nomap[] = {"listeners", "CLIENT://127.0.0.1:9092", NULL};
    CHECK_EQ_INT(finish_with(&c, nomap, err, sizeof err), LS_EINVAL);
    CHECK(strstr(err, "listener CLIENT has no security protocol in "
                      "listener.security.protocol.map"));
    ls_config_free(&c);
    const char *badmap[] = {"listener.security.protocol.map", "PLAINTEXT:TLS", NULL};
    CHECK_EQ_INT(finish_with(&c, badmap, err, sizeof err), LS_EINVAL);
    CHECK(strstr(err, "listener.security.protocol.map: 'PLAINTEXT:TLS' is not NAME:PROTOCOL"));
    ls_config_free(&c);
    const char *badadv[] = {"advertised.listeners", "SSL://h:1", NULL};
    CHECK_EQ_INT(finish_with(&c, badadv, err, sizeof err), LS_EINVAL);
    CHECK(strstr(err, "advertised.listeners: SSL is not a listener name in listeners"));
    ls_config_free(&c);
    const char *sameport[] = {"listeners", "A://127.0.0.1:9092,B://127.0.0.1:9092",
                              "listener.security.protocol.map", "A:PLAINTEXT,B:PLAINTEXT", NULL};
    CHECK_EQ_INT(finish_with(&c, sameport, err, sizeof err), LS_EINVAL);
    CHECK(strstr(err, "listeners: A and B both use port 9092"));
    ls_config_free(&c);
    /* SASL_PLAINTEXT and SASL_SSL are both served (SASL over TLS for the latter) */
    const char *sasl[] = {"listeners", "SASL_PLAINTEXT://127.0.0.1:9092", NULL};
    CHECK_EQ_INT(finish_with(&c, sasl, err, sizeof err), 0);
    CHECK(c.nlisteners == 1 && ls_secproto_sasl(c.listeners[0].protocol));
    ls_config_free(&c);
    const char *sasl_ssl[] = {"listeners", "SASL_SSL://127.0.0.1:9092", NULL};
    CHECK_EQ_INT(finish_with(&c, sasl_ssl, err, sizeof err), 0);
    CHECK(c.nlisteners == 1 && ls_secproto_sasl(c.listeners[0].protocol) &&
          ls_secproto_tls(c.listeners[0].protocol));
    ls_config_free(&c);
    /* Kafka's default mechanism is not ours; the inter-broker one is refused */
    const char *inter[] = {"sasl.mechanism.inter.broker.protocol", "PLAIN", NULL};
    CHECK_EQ_INT(finish_with(&c, inter, err, sizeof err), LS_EINVAL);
    CHECK(strstr(err, "sasl.mechanism.inter.broker.protocol: not applicable"));
    ls_config_free(&c);
}

TEST(advertised_address)
{
    ls_config_t c;
    char err[256];
    /* advertised.listeners, then the single-part keys override it */
    ls_config_init(&c, &ls_broker_settings);
    CHECK_EQ_INT(
        ls_config_set(&c, "advertised.listeners", "PLAINTEXT://broker1:29092", err, sizeof err), 0);
    CHECK_EQ_INT(ls_config_set(&c, "advertised.port", "29093", err, sizeof err), 0);
    CHECK_EQ_INT(ls_config_finish(&c, err, sizeof err), 0);
    CHECK(strcmp(c.advertised_host, "broker1") == 0);
    CHECK_EQ_INT(c.advertised_port, 29093);
    ls_config_free(&c);

    /* host only: the port follows the listener */
    ls_config_init(&c, &ls_broker_settings);
    CHECK_EQ_INT(ls_config_set(&c, "listeners", "127.0.0.1:9999", err, sizeof err), 0);
    CHECK_EQ_INT(ls_config_set(&c, "advertised.host", "kafka.local", err, sizeof err), 0);
    CHECK_EQ_INT(ls_config_finish(&c, err, sizeof err), 0);
    CHECK(strcmp(c.advertised_host, "kafka.local") == 0);
    CHECK_EQ_INT(c.advertised_port, 9999);
    ls_config_free(&c);

    /* a wildcard listener never advertises the wildcard */
    ls_config_init(&c, &ls_broker_settings);
    CHECK_EQ_INT(ls_config_set(&c, "listeners", "0.0.0.0:9092", err, sizeof err), 0);
    CHECK_EQ_INT(ls_config_finish(&c, err, sizeof err), 0);
    CHECK(strcmp(c.advertised_host, "0.0.0.0") != 0 && c.advertised_host[0]);
    ls_config_free(&c);

    ls_config_init(&c, &ls_broker_settings);
    CHECK_EQ_INT(ls_config_set(&c, "advertised.host", "0.0.0.0", err, sizeof err), 0);
    CHECK_EQ_INT(ls_config_finish(&c, err, sizeof err), LS_EINVAL);
    CHECK(strstr(err, "advertised.host: '0.0.0.0'"));
    ls_config_free(&c);
}

TEST(file_parsing)
{
    const char *path = write_file("ok.properties", "\xEF\xBB\xBF# comment after a byte order mark\n"
                                                   "! also a comment \\\n"
                                                   "\n"
                                                   "   data.dir = /srv/ls   \n"
                                                   "num.partitions:3\n"
                                                   "broker.id 4\n"
                                                   "listeners=PLAINTEXT://\\\n"
                                                   "          127.0.0.1:\\\n"
                                                   "          9500\n"
                                                   "cluster.id=abc\\u0044ef\r\n"
                                                   "wal.flush.max.bytes=8MiB\r\n"
                                                   "\t diag.level\t=\twarn\n"
                                                   "auto.create.topics.enable=false");
    ls_config_t c;
    char err[256] = "";
    ls_config_init(&c, &ls_broker_settings);
    ls_status rc = ls_config_load_file(&c, path, err, sizeof err);
    if (rc) printf("  %s\n", err);
    CHECK_EQ_INT(rc, 0);
    CHECK(strcmp(c.data_dir, "/srv/ls") == 0);
    CHECK_EQ_INT(c.num_partitions, 3);
    CHECK_EQ_INT(c.broker_id, 4);
    CHECK(strcmp(c.listen_host, "127.0.0.1") == 0);
    CHECK_EQ_INT(c.listen_port, 9500);
    CHECK(strcmp(c.cluster_id, "abcDef") == 0);
    CHECK_EQ_INT(c.wal_flush_max_bytes, 8 << 20);
    CHECK(strcmp(c.log_level, "warn") == 0);
    CHECK(!c.auto_create_topics_enable);
    ls_config_free(&c);
}

/* Regression (found by fuzzing ls_config_load_file): an empty file made the
 * parser do arithmetic on a NULL buffer. */
TEST(empty_file_is_all_defaults)
{
    const char *path = write_file("empty.properties", "");
    ls_config_t c;
    char err[256];
    ls_config_init(&c, &ls_broker_settings);
    CHECK_EQ_INT(ls_config_load_file(&c, path, err, sizeof err), 0);
    CHECK_EQ_INT(c.listen_port, 9092);
    ls_config_free(&c);
}

TEST(file_errors_name_path_and_line)
{
    char want[512], err[512];
    ls_config_t c;
    const char *path = write_file("bad.properties", "# header\n"
                                                    "num.partitions=2\n"
                                                    "\n"
                                                    "wal.flush.max.bytes=abc\n");
    ls_config_init(&c, &ls_broker_settings);
    CHECK_EQ_INT(ls_config_load_file(&c, path, err, sizeof err), LS_EINVAL);
    snprintf(want, sizeof want,
             "%s:4: wal.flush.max.bytes: 'abc' is not a size (expected bytes, e.g. 4194304 or "
             "4MiB)",
             path);
    CHECK(strcmp(err, want) == 0);
    ls_config_free(&c);

    /* a continued line is reported at its first line */
    path = write_file("bad2.properties", "a=1\\\n  2\nlisteners=nope\\\n  still\n");
    ls_config_init(&c, &ls_broker_settings);
    CHECK_EQ_INT(ls_config_load_file(&c, path, err, sizeof err), LS_EINVAL);
    snprintf(want, sizeof want, "%s:1: a: unknown key", path);
    CHECK(strncmp(err, want, strlen(want)) == 0);
    ls_config_free(&c);

    path = write_file("bad3.properties", "num.partitions=1\n\nlisteners=nope\\\n  still\n");
    ls_config_init(&c, &ls_broker_settings);
    CHECK_EQ_INT(ls_config_load_file(&c, path, err, sizeof err), LS_EINVAL);
    snprintf(want, sizeof want, "%s:3: listeners: 'nopestill' is not a listener", path);
    CHECK(strncmp(err, want, strlen(want)) == 0);
    ls_config_free(&c);

    ls_config_init(&c, &ls_broker_settings);
    CHECK_EQ_INT(ls_config_load_file(&c, "/nonexistent/x.properties", err, sizeof err), LS_EIO);
    CHECK(strstr(err, "/nonexistent/x.properties: cannot open config file"));
    ls_config_free(&c);
}

TEST(env_overrides)
{
    ls_config_t c;
    char err[512];
    ls_config_init(&c, &ls_broker_settings);
    setenv("LAKESTREAM_WAL_FLUSH_MAX_BYTES", "2MiB", 1);
    setenv("LAKESTREAM_NODE_ID", "9", 1);
    setenv("LAKESTREAM_CONFIG", "/ignored/by/load_env", 1);
    CHECK_EQ_INT(ls_config_load_env(&c, err, sizeof err), 0);
    CHECK_EQ_INT(c.wal_flush_max_bytes, 2 << 20);
    CHECK_EQ_INT(c.broker_id, 9);

    setenv("LAKESTREAM_NUM_PARTITIONS", "zero", 1);
    CHECK_EQ_INT(ls_config_load_env(&c, err, sizeof err), LS_EINVAL);
    CHECK(strcmp(err, "LAKESTREAM_NUM_PARTITIONS: num.partitions: 'zero' is not an integer") == 0);
    unsetenv("LAKESTREAM_NUM_PARTITIONS");

    setenv("LAKESTREAM_WAL_FLUSH_MAX_BYTE", "1", 1); /* typo: must not be ignored */
    CHECK_EQ_INT(ls_config_load_env(&c, err, sizeof err), LS_EINVAL);
    CHECK(strstr(err, "LAKESTREAM_WAL_FLUSH_MAX_BYTE: unknown variable") == err);
    unsetenv("LAKESTREAM_WAL_FLUSH_MAX_BYTE");
    unsetenv("LAKESTREAM_WAL_FLUSH_MAX_BYTES");
    unsetenv("LAKESTREAM_NODE_ID");
    unsetenv("LAKESTREAM_CONFIG");
    ls_config_free(&c);
}

TEST(flags)
{
    ls_config_t c;
    char err[512];
    ls_config_init(&c, &ls_broker_settings);
    char *argv[] = {"--num.partitions=6",          "--data.dir", "/x y", "--object.store.fsync",
                    "--auto.create.topics.enable", "off"};
    CHECK_EQ_INT(ls_config_load_args(&c, 6, argv, err, sizeof err), 0);
    CHECK_EQ_INT(c.num_partitions, 6);
    CHECK(strcmp(c.data_dir, "/x y") == 0);
    CHECK(c.object_store_fsync);
    CHECK(!c.auto_create_topics_enable);

    char *bad1[] = {"--num.partitions"};
    CHECK_EQ_INT(ls_config_load_args(&c, 1, bad1, err, sizeof err), LS_EINVAL);
    CHECK(strcmp(err, "--num.partitions: missing value") == 0);
    char *bad2[] = {"--num.partitons=3"};
    CHECK_EQ_INT(ls_config_load_args(&c, 1, bad2, err, sizeof err), LS_EINVAL);
    CHECK(strstr(err, "--num.partitons: unknown key (did you mean 'num.partitions'?)") == err);
    char *bad3[] = {"serve"};
    CHECK_EQ_INT(ls_config_load_args(&c, 1, bad3, err, sizeof err), LS_EINVAL);
    CHECK(strstr(err, "unexpected argument 'serve'"));
    char *bad4[] = {"--message.max.bytes=1x"};
    CHECK_EQ_INT(ls_config_load_args(&c, 1, bad4, err, sizeof err), LS_EINVAL);
    CHECK(strstr(err, "--message.max.bytes: '1x' is not a size") == err);
    ls_config_free(&c);
}

TEST(precedence_file_env_flags)
{
    const char *path = write_file("prec.properties", "wal.flush.max.bytes=1MiB\n"
                                                     "num.partitions=2\n"
                                                     "broker.id=1\n");
    ls_config_t c;
    char err[512] = "";
    char flag_cfg[300];
    snprintf(flag_cfg, sizeof flag_cfg, "--config=%s", path);
    setenv("LAKESTREAM_WAL_FLUSH_MAX_BYTES", "2MiB", 1);
    setenv("LAKESTREAM_NUM_PARTITIONS", "5", 1);
    char *argv[] = {flag_cfg, "--wal.flush.max.bytes=3MiB"};
    ls_config_init(&c, &ls_broker_settings);
    ls_status rc = ls_config_load(&c, 2, argv, err, sizeof err);
    if (rc) printf("  %s\n", err);
    CHECK_EQ_INT(rc, 0);
    CHECK_EQ_INT(c.wal_flush_max_bytes, 3 << 20); /* flag beats env beats file */
    CHECK_EQ_INT(c.num_partitions, 5);            /* env beats file */
    CHECK_EQ_INT(c.broker_id, 1);                 /* file beats default */
    CHECK(c.object_store_url != NULL);            /* finished */
    ls_config_free(&c);

    /* LAKESTREAM_CONFIG names the file when no --config is given */
    setenv("LAKESTREAM_CONFIG", path, 1);
    unsetenv("LAKESTREAM_NUM_PARTITIONS");
    ls_config_init(&c, &ls_broker_settings);
    CHECK_EQ_INT(ls_config_load(&c, 0, NULL, err, sizeof err), 0);
    CHECK_EQ_INT(c.num_partitions, 2);
    CHECK_EQ_INT(c.wal_flush_max_bytes, 2 << 20);
    ls_config_free(&c);
    unsetenv("LAKESTREAM_CONFIG");
    unsetenv("LAKESTREAM_WAL_FLUSH_MAX_BYTES");
}

/* authorizer.class.name: Kafka's two class names turn the built-in
 * authorizer on, empty keeps it off, anything else is refused by name. */
TEST(authorizer_settings)
{
    static const char *const on[] = {"org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                                     "kafka.security.authorizer.AclAuthorizer"};
    ls_config_t c;
    char err[512];
    for (size_t i = 0; i < 2; i++) {
        ls_config_init(&c, &ls_broker_settings);
        CHECK_EQ_INT(ls_config_set(&c, "authorizer.class.name", on[i], err, sizeof err), 0);
        CHECK_EQ_INT(ls_config_set(&c, "super.users", "User:a;User:b", err, sizeof err), 0);
        CHECK_EQ_INT(ls_config_finish(&c, err, sizeof err), 0);
        CHECK(c.authorizer_class_name && strcmp(c.authorizer_class_name, on[i]) == 0);
        CHECK(!c.allow_everyone_if_no_acl_found); /* Kafka's default */
        ls_config_free(&c);
    }
    ls_config_init(&c, &ls_broker_settings);
    CHECK_EQ_INT(ls_config_set(&c, "authorizer.class.name", "", err, sizeof err), 0);
    CHECK_EQ_INT(ls_config_finish(&c, err, sizeof err), 0);
    CHECK(c.authorizer_class_name == NULL);
    ls_config_free(&c);
    ls_config_init(&c, &ls_broker_settings);
    CHECK_EQ_INT(ls_config_set(&c, "authorizer.class.name", "com.example.Mine", err, sizeof err),
                 0);
    CHECK_EQ_INT(ls_config_finish(&c, err, sizeof err), LS_EINVAL);
    CHECK(strstr(err, "authorizer.class.name: 'com.example.Mine' is not supported"));
    ls_config_free(&c);
    ls_config_init(&c, &ls_broker_settings);
    CHECK(ls_config_set(&c, "allow.everyone.if.no.acl.found", "maybe", err, sizeof err) != 0);
    CHECK(strstr(err, "allow.everyone.if.no.acl.found"));
    ls_config_free(&c);
}

TEST(cross_key_limits)
{
    ls_config_t c;
    char err[512];
    ls_config_init(&c, &ls_broker_settings);
    CHECK_EQ_INT(ls_config_set(&c, "wal.buffer.max.bytes", "1MiB", err, sizeof err), 0);
    CHECK_EQ_INT(ls_config_finish(&c, err, sizeof err), LS_EINVAL);
    CHECK(strcmp(err, "wal.buffer.max.bytes: 1MiB is smaller than wal.flush.max.bytes (4MiB)") ==
          0);
    ls_config_free(&c);
}

TEST(share_lock_and_delivery_limit_within_their_bounds)
{
    ls_config_t c;
    char err[512];
    /* Kafka's defaults: locks 15000..60000, deliveries 2..10 */
    const char *low[] = {"group.share.record.lock.duration.ms", "5000", NULL};
    CHECK_EQ_INT(finish_with(&c, low, err, sizeof err), LS_EINVAL);
    ls_config_free(&c);
    CHECK(strcmp(err, "group.share.record.lock.duration.ms must be greater than or equal to "
                      "group.share.min.record.lock.duration.ms") == 0);
    const char *lowered[] = {"group.share.record.lock.duration.ms", "5000",
                             "group.share.min.record.lock.duration.ms", "1000", NULL};
    CHECK_EQ_INT(finish_with(&c, lowered, err, sizeof err), 0);
    ls_config_free(&c);
    const char *high[] = {"group.share.delivery.count.limit", "8",
                          "group.share.max.delivery.count.limit", "6", NULL};
    CHECK_EQ_INT(finish_with(&c, high, err, sizeof err), LS_EINVAL);
    ls_config_free(&c);
    CHECK(strcmp(err, "group.share.max.delivery.count.limit must be greater than or equal to "
                      "group.share.delivery.count.limit") == 0);
    const char *locks[] = {"group.share.partition.max.record.locks", "5000", NULL};
    CHECK_EQ_INT(finish_with(&c, locks, err, sizeof err), LS_EINVAL);
    ls_config_free(&c);
    CHECK(strcmp(err, "group.share.max.partition.max.record.locks must be greater than or equal "
                      "to group.share.partition.max.record.locks") == 0);
    /* each bound has Kafka's own range */
    const char *range[] = {"group.share.max.record.lock.duration.ms", "20000", NULL};
    CHECK_EQ_INT(finish_with(&c, range, err, sizeof err), LS_EINVAL);
    ls_config_free(&c);
    CHECK(strstr(err, "group.share.max.record.lock.duration.ms") != NULL);
}

TEST(group_timeouts_within_their_bounds)
{
    ls_config_t c;
    char err[512];
    /* Kafka's defaults: 45000..60000 and 5000..15000 for each kind */
    const char *ok[] = {"group.share.session.timeout.ms", "60000",
                        "group.streams.heartbeat.interval.ms", "15000", NULL};
    CHECK_EQ_INT(finish_with(&c, ok, err, sizeof err), 0);
    ls_config_free(&c);
    const char *low[] = {"group.consumer.session.timeout.ms", "6000", NULL};
    CHECK_EQ_INT(finish_with(&c, low, err, sizeof err), LS_EINVAL);
    ls_config_free(&c);
    CHECK(strcmp(err, "group.consumer.session.timeout.ms must be greater than or equal to "
                      "group.consumer.min.session.timeout.ms") == 0);
    const char *lowered[] = {"group.consumer.session.timeout.ms", "6000",
                             "group.consumer.min.session.timeout.ms", "6000", NULL};
    CHECK_EQ_INT(finish_with(&c, lowered, err, sizeof err), 0);
    ls_config_free(&c);
    const char *high[] = {"group.streams.heartbeat.interval.ms", "20000", NULL};
    CHECK_EQ_INT(finish_with(&c, high, err, sizeof err), LS_EINVAL);
    ls_config_free(&c);
    CHECK(strstr(err, "group.streams.heartbeat.interval.ms must be less than or equal to "
                      "group.streams.max.heartbeat.interval.ms") != NULL);
    const char *crossed[] = {"group.share.min.session.timeout.ms", "70000", NULL};
    CHECK_EQ_INT(finish_with(&c, crossed, err, sizeof err), LS_EINVAL);
    ls_config_free(&c);
    CHECK(strstr(err, "group.share.max.session.timeout.ms must be greater than or equal to "
                      "group.share.min.session.timeout.ms") != NULL);
    const char *beat[] = {"group.consumer.min.session.timeout.ms",
                          "1000",
                          "group.consumer.session.timeout.ms",
                          "4000",
                          "group.consumer.min.heartbeat.interval.ms",
                          "1000",
                          NULL};
    CHECK_EQ_INT(finish_with(&c, beat, err, sizeof err),
                 LS_EINVAL); /* heartbeat 5000 >= session 4000 */
    ls_config_free(&c);
    CHECK(strstr(err, "group.consumer.heartbeat.interval.ms must be less than "
                      "group.consumer.session.timeout.ms") != NULL);
}

TEST(help_output_is_a_config_file_of_defaults)
{
    char path[300];
    snprintf(path, sizeof path, "%s/help.properties", tmpdir);
    fflush(stdout);
    int saved = dup(1);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    CHECK(saved >= 0 && fd >= 0);
    dup2(fd, 1);
    ls_config_print_help(&ls_broker_settings);
    fflush(stdout);
    dup2(saved, 1);
    close(fd);
    close(saved);

    FILE *f = fopen(path, "r");
    char text[16384];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    CHECK(strstr(text, "\nwal.flush.max.bytes=4MiB\n"));
    CHECK(strstr(text, "LAKESTREAM_WAL_FLUSH_MAX_BYTES"));
    CHECK(strstr(text, "LAKESTREAM_CONFIG"));
    CHECK(strstr(text, "alias node.id"));
    CHECK(strstr(text, "\nobject.store.url=\n"));

    ls_config_t a, b;
    char err[512] = "";
    ls_config_init(&a, &ls_broker_settings);
    ls_config_init(&b, &ls_broker_settings);
    ls_status rc = ls_config_load_file(&a, path, err, sizeof err);
    if (rc) printf("  %s\n", err);
    CHECK_EQ_INT(rc, 0);
    CHECK_EQ_INT(ls_config_finish(&a, err, sizeof err), 0);
    CHECK_EQ_INT(ls_config_finish(&b, err, sizeof err), 0);
    CHECK(strcmp(a.object_store_url, b.object_store_url) == 0);
    CHECK(strcmp(a.advertised_host, b.advertised_host) == 0);
    CHECK_EQ_INT(a.listen_port, b.listen_port);
    CHECK_EQ_INT(a.read_cache_max_bytes, b.read_cache_max_bytes);
    ls_config_free(&a);
    ls_config_free(&b);
}

/* Regression (issue 17 §8): a secret given as a flag is readable by every
 * local user in /proc/PID/cmdline; one in a world-readable file is no better. */
TEST(secrets_never_as_flags_nor_in_readable_files)
{
    ls_config_t c;
    char err[512];
    ls_config_init(&c, &ls_broker_settings);
    char *flag[] = {"--s3.secret.key=hunter2"};
    CHECK_EQ_INT(ls_config_load_args(&c, 1, flag, err, sizeof err), LS_EINVAL);
    CHECK(strstr(err, "--s3.secret.key: secrets are not accepted as command-line flags") == err);
    CHECK(strstr(err, "LAKESTREAM_S3_SECRET_KEY") != NULL);
    CHECK(strstr(err, "hunter2") == NULL);
    char *flag2[] = {"--s3.session.token", "tok"};
    CHECK_EQ_INT(ls_config_load_args(&c, 2, flag2, err, sizeof err), LS_EINVAL);
    CHECK(c.s3_secret_key == NULL && c.s3_session_token == NULL);

    const char *path = write_file("secret.properties", "s3.access.key=AK\ns3.secret.key=hunter2\n");
    CHECK_EQ_INT(chmod(path, 0644), 0);
    CHECK_EQ_INT(ls_config_load_file(&c, path, err, sizeof err), LS_EINVAL);
    CHECK(strstr(err, "s3.secret.key is a secret, but other users can read this file") != NULL);
    CHECK(strstr(err, "hunter2") == NULL);
    CHECK_EQ_INT(chmod(path, 0600), 0);
    CHECK_EQ_INT(ls_config_load_file(&c, path, err, sizeof err), 0);
    CHECK(c.s3_secret_key && strcmp(c.s3_secret_key, "hunter2") == 0);
    /* a readable file without secrets is fine */
    const char *plain = write_file("plain.properties", "num.partitions=2\n");
    CHECK_EQ_INT(chmod(plain, 0644), 0);
    CHECK_EQ_INT(ls_config_load_file(&c, plain, err, sizeof err), 0);
    ls_config_free(&c);
}

/* catalog.<name>.* (base/catalog_conf.h): every field parsed, unknown
 * fields, bad names, other types and missing uri refused naming the key,
 * the secrets neither flags nor in readable files. */
TEST(external_catalogs)
{
    ls_config_t c;
    ls_config_init(&c, &ls_broker_settings);
    char err[512] = "";
    const char *ok[][2] = {
        {"catalog.lake.type", "rest"},
        {"catalog.lake.uri", "http://127.0.0.1:8181/"},
        {"catalog.lake.warehouse", "wh1"},
        {"catalog.lake.credential", "id:secret"},
        {"catalog.lake.oauth2-server-uri", "http://127.0.0.1:9/token"},
        {"catalog.lake.prefix", "/p1/"},
        {"catalog.lake.header.X-Iceberg-Access-Delegation", "none"},
        {"catalog.other_2.type", "rest"},
        {"catalog.other_2.uri", "https://cat.example"},
        {"catalog.other_2.token", "tok"},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        CHECK_EQ_INT(ls_config_set(&c, ok[i][0], ok[i][1], err, sizeof err), 0);
    CHECK_EQ_INT(ls_config_finish(&c, err, sizeof err), 0);
    CHECK_EQ_INT((int)c.catalogs.n, 2);
    const ls_catalog_conf_t *l = ls_catalog_conf_find(&c.catalogs, "lake");
    CHECK(l && !strcmp(l->uri, "http://127.0.0.1:8181") && !strcmp(l->prefix, "p1") &&
          !strcmp(l->credential, "id:secret") && !strcmp(l->warehouse, "wh1"));
    CHECK(l->nheaders == 1 && !strcmp(l->headers[0], "X-Iceberg-Access-Delegation: none"));
    const struct {
        const char *key, *value, *want;
    } bad[] = {
        {"catalog.lake.typo", "x", "catalog.lake.typo: unknown key"},
        {"catalog.lake", "x", "catalog.lake: unknown key"},
        {"catalog.a.b.uri", "http://x", "catalog.a.b.uri: unknown key"},
        {"catalog.builtin.uri", "http://x", "'builtin' names the broker's own catalog"},
        {"catalog.lake.type", "glue", "unsupported catalog type 'glue'"},
        {"catalog.lake.uri", "ftp://x", "is not an http:// or https:// URI"},
        {"catalog.lake.header.Bad Name", "x", "is not an HTTP header name"},
        {"catalog.lake.token", "a\r\nInjected: 1", "line break"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        CHECK_EQ_INT(ls_config_set(&c, bad[i].key, bad[i].value, err, sizeof err), LS_EINVAL);
        CHECK(strstr(err, bad[i].want));
    }
    ls_config_free(&c);

    /* cross-field: type and uri are required, token and credential exclusive */
    ls_config_init(&c, &ls_broker_settings);
    CHECK_EQ_INT(ls_config_set(&c, "catalog.x.uri", "http://h", err, sizeof err), 0);
    CHECK_EQ_INT(ls_config_finish(&c, err, sizeof err), LS_EINVAL);
    CHECK(strstr(err, "catalog.x.type: missing"));
    ls_config_free(&c);
    ls_config_init(&c, &ls_broker_settings);
    CHECK_EQ_INT(ls_config_set(&c, "catalog.x.type", "rest", err, sizeof err), 0);
    CHECK_EQ_INT(ls_config_finish(&c, err, sizeof err), LS_EINVAL);
    CHECK(strstr(err, "catalog.x.uri: missing"));
    CHECK_EQ_INT(ls_config_set(&c, "catalog.x.uri", "http://h", err, sizeof err), 0);
    CHECK_EQ_INT(ls_config_set(&c, "catalog.x.token", "t", err, sizeof err), 0);
    CHECK_EQ_INT(ls_config_set(&c, "catalog.x.credential", "a:b", err, sizeof err), 0);
    CHECK_EQ_INT(ls_config_finish(&c, err, sizeof err), LS_EINVAL);
    CHECK(strstr(err, "set one of them, not both"));
    ls_config_free(&c);

    /* flags: the plain fields yes, the secrets no */
    ls_config_init(&c, &ls_broker_settings);
    char *args[] = {"--catalog.y.type=rest", "--catalog.y.uri", "http://h"};
    CHECK_EQ_INT(ls_config_load_args(&c, 3, args, err, sizeof err), 0);
    CHECK(ls_catalog_conf_find(&c.catalogs, "y"));
    char *secret[] = {"--catalog.y.token=t"};
    CHECK_EQ_INT(ls_config_load_args(&c, 1, secret, err, sizeof err), LS_EINVAL);
    CHECK(strstr(err, "secrets are not accepted as command-line flags"));
    ls_config_free(&c);
}

int main(void)
{
    if (!mkdtemp(tmpdir)) return 2;
    RUN(defaults);
    RUN(absolute_data_dir_and_explicit_urls);
    RUN(wal_flush_min_interval_by_store);
    RUN(sizes);
    RUN(integers_booleans_levels);
    RUN(unknown_key_suggests);
    RUN(listeners);
    RUN(listener_list);
    RUN(advertised_address);
    RUN(authorizer_settings);
    RUN(file_parsing);
    RUN(empty_file_is_all_defaults);
    RUN(file_errors_name_path_and_line);
    RUN(env_overrides);
    RUN(flags);
    RUN(precedence_file_env_flags);
    RUN(cross_key_limits);
    RUN(group_timeouts_within_their_bounds);
    RUN(share_lock_and_delivery_limit_within_their_bounds);
    RUN(help_output_is_a_config_file_of_defaults);
    RUN(secrets_never_as_flags_nor_in_readable_files);
    RUN(external_catalogs);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (system(cmd) != 0) return 2;
    UNIT_DONE();
}
