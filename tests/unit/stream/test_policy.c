/* Materialization policy (stream/policy.c): validation of every field with
 * messages naming the key and the accepted values, resolution stream ->
 * namespace -> cluster -> default with sources, refusal of values the
 * broker would not act on (and of such values stored by older brokers),
 * table-name templates, enabled.since bookkeeping; and the catalog's
 * namespace records that hold the namespace layer (mem backend). */
#include <stdio.h>
#include <string.h>

#include "base/diag.h"
#include "meta/meta.h"
#include "base/catalog_conf.h"
#include "stream/catalog.h"
#include "stream/policy.h"
#include "unit.h"

#define P(k, v)                                                                                    \
    {                                                                                              \
        (char *)(k), (char *)(v)                                                                   \
    }

static bool check_ok(const char *k, const char *v)
{
    char err[768];
    return ls_policy_check(k, v, err, sizeof err) == LS_OK;
}

/* The refusal message for k=v ("" when accepted). */
static const char *check_err(const char *k, const char *v)
{
    static char err[768];
    err[0] = 0;
    if (ls_policy_check(k, v, err, sizeof err) == LS_OK) return "";
    return err;
}

TEST(valid_values_accepted)
{
    CHECK(check_ok("lakestream.table.enabled", "true"));
    CHECK(check_ok("lakestream.table.enabled", "false"));
    CHECK(check_ok("lakestream.table.catalog", "builtin"));
    CHECK(check_ok("lakestream.table.name", "{topic}"));
    CHECK(check_ok("lakestream.table.name", "{namespace}_{topic}.raw"));
    CHECK(check_ok("lakestream.table.name", "orders"));
    CHECK(check_ok("lakestream.table.partition", "none"));
    CHECK(check_ok("lakestream.table.partition", "day"));
    CHECK(check_ok("lakestream.table.partition", "hour(timestamp), identity(partition)"));
    CHECK(check_ok("lakestream.table.partition",
                   "bucket(16, offset), truncate( 10 , partition ), month(timestamp)"));
    CHECK(check_ok("lakestream.table.partition", "year(timestamp),bucket(4,timestamp)"));
    CHECK(check_ok("lakestream.table.target.file.bytes", "1024"));
    CHECK(check_ok("lakestream.table.target.file.bytes", "1073741824"));
    CHECK(check_ok("lakestream.table.compression", "gzip"));
    CHECK(check_ok("lakestream.table.commit.interval.ms", "1000"));
    CHECK(check_ok("lakestream.table.start.position", "latest"));
    CHECK(check_ok("lakestream.table.write.mode", "upsert"));
    CHECK(check_ok("lakestream.table.sort.order", "none"));
    CHECK(check_ok("lakestream.table.error.handling", "dead-letter"));
    CHECK(check_ok("lakestream.table.evolution", "fail"));
    CHECK(check_ok("lakestream.table.evolution", "dead-letter"));
    CHECK(check_ok("lakestream.table.evolution", "new-table"));
    CHECK(check_ok("lakestream.table.file.delete.delay.ms", "0"));
    CHECK(check_ok("lakestream.table.file.delete.delay.ms", "86400000"));
}

TEST(bad_values_name_key_and_accepted)
{
    const char *e = check_err("lakestream.table.enabled", "yes");
    CHECK(strstr(e, "lakestream.table.enabled") && strstr(e, "'yes'") && strstr(e, "true, false"));
    e = check_err("lakestream.table.commit.interval.ms", "999");
    CHECK(strstr(e, "lakestream.table.commit.interval.ms") && strstr(e, "1000 to 86400000"));
    e = check_err("lakestream.table.commit.interval.ms", "10s");
    CHECK(e[0]);
    e = check_err("lakestream.table.target.file.bytes", "1023");
    CHECK(strstr(e, "target.file.bytes") && strstr(e, "1024"));
    e = check_err("lakestream.table.partition", "month");
    CHECK(strstr(e, "'month' is not a partition field") && strstr(e, "bucket(N"));
    e = check_err("lakestream.table.partition", "day,hour");
    CHECK(strstr(e, "partitioned twice"));
    e = check_err("lakestream.table.partition", "month(timestamp), year(timestamp)");
    CHECK(strstr(e, "column timestamp is partitioned twice by time transforms"));
    e = check_err("lakestream.table.partition", "bucket(4, partition), bucket(8, partition)");
    CHECK(strstr(e, "partitioned twice by bucket"));
    e = check_err("lakestream.table.partition", "truncate(10, timestamp)");
    CHECK(strstr(e, "truncate does not apply to timestamp (type timestamptz)"));
    e = check_err("lakestream.table.partition", "year(offset)");
    CHECK(strstr(e, "year does not apply to offset (type long)"));
    e = check_err("lakestream.table.partition", "bucket(0, offset)");
    CHECK(strstr(e, "the bucket count must be an integer from 1"));
    e = check_err("lakestream.table.partition", "bucket(offset)");
    CHECK(strstr(e, "bucket needs a parameter"));
    /* value and key fields: the path's syntax here, its type once the schema is known */
    CHECK(check_ok("lakestream.table.partition",
                   "identity(customer.country), bucket(8, customer.id), day(created_at), "
                   "truncate(3, sku), void(note), bucket(4, _kafka_key_typed.id)"));
    CHECK(check_ok("lakestream.table.partition", "void(partition)"));
    e = check_err("lakestream.table.partition", "identity(user..country)");
    CHECK(strstr(e, "'user..country' is neither a Kafka column") && strstr(e, "field path"));
    e = check_err("lakestream.table.partition", "identity(a/b)");
    CHECK(strstr(e, "is neither a Kafka column"));
    e = check_err("lakestream.table.partition", "day(created_at), hour(created_at)");
    CHECK(strstr(e, "column created_at is partitioned twice by time transforms"));
    e = check_err("lakestream.table.partition", "void2(x)");
    CHECK(strstr(e, "'void2' is not a partition transform"));
    e = check_err("lakestream.table.compression", "lz4");
    CHECK(strstr(e, "zstd, snappy, gzip, none"));
    e = check_err("lakestream.table.name", "{topik}");
    CHECK(strstr(e, "unknown placeholder"));
    e = check_err("lakestream.table.name", "a/b");
    CHECK(strstr(e, "'/' is not allowed"));
    e = check_err("lakestream.table.name", "");
    CHECK(e[0]);
    e = check_err("lakestream.table.catalog", "has space");
    CHECK(strstr(e, "lakestream.table.catalog"));
    e = check_err("lakestream.table.start.position", "beginning");
    CHECK(strstr(e, "earliest, latest"));
    e = check_err("lakestream.table.frobnicate", "1");
    CHECK(strstr(e, "Unknown configuration lakestream.table.frobnicate") &&
          strstr(e, "commit.interval.ms"));
    e = check_err("lakestream.table.evolution", "skip");
    CHECK(strstr(e, "lakestream.table.evolution") && strstr(e, "fail, dead-letter, new-table"));
    e = check_err("lakestream.table.file.delete.delay.ms", "86400001");
    CHECK(strstr(e, "lakestream.table.file.delete.delay.ms") && strstr(e, "0 to 86400000"));
    CHECK(check_err("lakestream.table.file.delete.delay.ms", "-1")[0]);
    CHECK(check_err("lakestream.table.file.delete.delay.ms", "5m")[0]);
    e = check_err(LS_POLICY_SINCE_KEY, "1");
    CHECK(strstr(e, "maintained by the broker"));
}

TEST(partition_transforms_parsed)
{
    ls_prop_t stream[] = {
        P("lakestream.table.partition", "bucket(16, offset), truncate(10,partition), month")};
    ls_policy_layers_t l = {stream, 1, NULL, 0, NULL, 0};
    ls_policy_t p;
    char err[512];
    /* bare month is refused (only day and hour have the bare form) */
    CHECK_EQ_INT(ls_policy_resolve(&l, &p, err, sizeof err), LS_EINVAL);
    stream[0].value = (char *)"bucket(16, offset), truncate(10,partition), month(timestamp)";
    CHECK_EQ_INT(ls_policy_resolve(&l, &p, err, sizeof err), LS_OK);
    CHECK_EQ_INT(p.npart, 3);
    CHECK_EQ_INT(p.part[0].column, LS_POLICY_COL_OFFSET);
    CHECK_EQ_INT(p.part[0].transform, LS_POLICY_BUCKET);
    CHECK_EQ_INT(p.part[0].param, 16);
    CHECK_EQ_INT(p.part[1].column, LS_POLICY_COL_PARTITION);
    CHECK_EQ_INT(p.part[1].transform, LS_POLICY_TRUNCATE);
    CHECK_EQ_INT(p.part[1].param, 10);
    CHECK_EQ_INT(p.part[2].column, LS_POLICY_COL_TIMESTAMP);
    CHECK_EQ_INT(p.part[2].transform, LS_POLICY_MONTH);
    CHECK_EQ_INT(p.part[2].param, 0);
}

TEST(resolution_layers_and_sources)
{
    ls_prop_t stream[] = {P("lakestream.table.enabled", "true"),
                          P("lakestream.table.compression", "snappy")};
    ls_prop_t ns[] = {P("lakestream.table.compression", "gzip"),
                      P("lakestream.table.commit.interval.ms", "2000"),
                      P("lakestream.table.partition", "hour,identity(partition)")};
    ls_prop_t cluster[] = {P("lakestream.table.commit.interval.ms", "5000"),
                           P("lakestream.table.target.file.bytes", "4096"),
                           P("lakestream.table.start.position", "latest")};
    ls_policy_layers_t l = {stream, 2, ns, 3, cluster, 3};
    ls_policy_t p;
    char err[512];
    CHECK_EQ_INT(ls_policy_resolve(&l, &p, err, sizeof err), LS_OK);
    CHECK(p.enabled);
    CHECK_EQ_INT(p.source[LS_POLICY_ENABLED], LS_POLICY_SRC_STREAM);
    CHECK(!strcmp(p.value[LS_POLICY_COMPRESSION], "snappy"));
    CHECK_EQ_INT(p.source[LS_POLICY_COMPRESSION], LS_POLICY_SRC_STREAM);
    CHECK_EQ_INT(p.commit_interval_ms, 2000);
    CHECK_EQ_INT(p.source[LS_POLICY_COMMIT_INTERVAL_MS], LS_POLICY_SRC_NAMESPACE);
    CHECK_EQ_INT(p.npart, 2);
    CHECK_EQ_INT(p.part[0].transform, LS_POLICY_HOUR);
    CHECK_EQ_INT(p.part[1].column, LS_POLICY_COL_PARTITION);
    CHECK_EQ_INT(p.target_file_bytes, 4096);
    CHECK_EQ_INT(p.source[LS_POLICY_TARGET_FILE_BYTES], LS_POLICY_SRC_CLUSTER);
    CHECK(p.start_latest);
    CHECK_EQ_INT(p.source[LS_POLICY_NAME], LS_POLICY_SRC_DEFAULT);
    CHECK(!strcmp(p.value[LS_POLICY_NAME], "{topic}"));
    CHECK(!strcmp(p.value[LS_POLICY_CATALOG], "builtin"));
    CHECK_EQ_INT(p.enabled_since_ms, -1);

    /* nothing set anywhere: built-in defaults */
    ls_policy_layers_t none = {0};
    CHECK_EQ_INT(ls_policy_resolve(&none, &p, err, sizeof err), LS_OK);
    CHECK(!p.enabled);
    CHECK_EQ_INT(p.commit_interval_ms, 10000);
    CHECK_EQ_INT(p.file_delete_delay_ms, 300000);
    CHECK_EQ_INT(p.target_file_bytes, 134217728);
    CHECK_EQ_INT(p.npart, 1);
    CHECK_EQ_INT(p.part[0].transform, LS_POLICY_DAY);
    CHECK(!p.start_latest);
    for (int f = 0; f < LS_POLICY_NFIELDS; f++)
        CHECK_EQ_INT(p.source[f], LS_POLICY_SRC_DEFAULT);
}

TEST(bad_stored_value_reported_with_layer)
{
    ls_prop_t ns[] = {P("lakestream.table.compression", "brotli")};
    ls_policy_layers_t l = {NULL, 0, ns, 1, NULL, 0};
    ls_policy_t p;
    char err[512] = "";
    CHECK_EQ_INT(ls_policy_resolve(&l, &p, err, sizeof err), LS_EINVAL);
    CHECK(strstr(err, "lakestream.table.compression") && strstr(err, "namespace layer"));
    /* every field still has a value and a source, for describing it */
    CHECK(!strcmp(p.value[LS_POLICY_COMPRESSION], "brotli"));
    CHECK_EQ_INT(p.source[LS_POLICY_COMPRESSION], LS_POLICY_SRC_NAMESPACE);
    CHECK(!strcmp(p.value[LS_POLICY_START_POSITION], "earliest"));
}

/* Every accepted value is applied: a value the broker would not act on
 * (an external catalog, a sort order) is refused, naming key, value and
 * what is supported; the same value stored by a broker before s28 (which
 * accepted it as "not applied") fails resolution, naming its layer. */
TEST(unapplied_values_refused)
{
    static const struct {
        const char *key, *value, *supported;
    } no[] = {
        {"lakestream.table.catalog", "glue-prod", "accepted values are builtin"},
        {"lakestream.table.catalog", "Builtin", "accepted values are builtin"},
        {"lakestream.table.catalog", "", "accepted values are builtin"},
        {"lakestream.table.sort.order", "offset", "accepted values are none"},
        {"lakestream.table.sort.order", "timestamp,key", "accepted values are none"},
        {"lakestream.table.sort.order", "frobnicate", "accepted values are none"},
    };
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++) {
        const char *e = check_err(no[i].key, no[i].value);
        char quoted[64];
        snprintf(quoted, sizeof quoted, "Invalid value '%s'", no[i].value);
        CHECK(strstr(e, no[i].key) && strstr(e, quoted) && strstr(e, no[i].supported));
    }
    CHECK(strstr(check_err("lakestream.table.catalog", "glue-prod"),
                 "no catalog named 'glue-prod' is configured (configured: builtin)"));
    CHECK(strstr(check_err("lakestream.table.sort.order", "offset"),
                 "sorting data files is not supported"));
    CHECK(check_ok("lakestream.table.catalog", "builtin"));
    CHECK(check_ok("lakestream.table.sort.order", "none"));

    /* stored before this rule, in each layer: resolution fails, naming it */
    ls_prop_t st[] = {P("lakestream.table.enabled", "true"),
                      P("lakestream.table.catalog", "glue-prod")};
    ls_prop_t ns[] = {P("lakestream.table.sort.order", "key")};
    ls_prop_t cl[] = {P("lakestream.table.sort.order", "timestamp")};
    ls_policy_t p;
    char err[512] = "";
    ls_policy_layers_t l1 = {st, 2, NULL, 0, NULL, 0};
    CHECK_EQ_INT(ls_policy_resolve(&l1, &p, err, sizeof err), LS_EINVAL);
    CHECK(strstr(err, "Invalid value 'glue-prod' for configuration lakestream.table.catalog "
                      "(stream layer)"));
    CHECK(!strcmp(p.value[LS_POLICY_CATALOG], "glue-prod"));
    CHECK_EQ_INT(p.source[LS_POLICY_CATALOG], LS_POLICY_SRC_STREAM);
    ls_policy_layers_t l2 = {NULL, 0, ns, 1, cl, 1};
    CHECK_EQ_INT(ls_policy_resolve(&l2, &p, err, sizeof err), LS_EINVAL);
    CHECK(strstr(err, "Invalid value 'key' for configuration lakestream.table.sort.order "
                      "(namespace layer)") &&
          strstr(err, "accepted values are none"));
    ls_policy_layers_t l3 = {NULL, 0, NULL, 0, cl, 1};
    CHECK_EQ_INT(ls_policy_resolve(&l3, &p, err, sizeof err), LS_EINVAL);
    CHECK(strstr(err, "'timestamp'") && strstr(err, "(cluster layer)"));
    /* removing the stored value (or setting a supported one) resolves again */
    ls_prop_t fixed[] = {P("lakestream.table.enabled", "true"),
                         P("lakestream.table.catalog", "builtin")};
    ls_policy_layers_t l4 = {fixed, 2, NULL, 0, NULL, 0};
    CHECK_EQ_INT(ls_policy_resolve(&l4, &p, err, sizeof err), LS_OK);
    CHECK(p.enabled);
}

/* lakestream.table.catalog takes the name of a catalog.<name>.* of the
 * broker configuration (installed process-wide at start), and only those. */
TEST(external_catalog_names)
{
    ls_catalog_confs_t cs = {0};
    char err[256];
    CHECK_EQ_INT(ls_catalog_conf_set(&cs, "catalog.lake.type", "rest", err, sizeof err), 0);
    CHECK_EQ_INT(
        ls_catalog_conf_set(&cs, "catalog.lake.uri", "http://127.0.0.1:1", err, sizeof err), 0);
    ls_catalog_confs_install(&cs);
    ls_catalog_confs_free(&cs);
    CHECK(check_ok("lakestream.table.catalog", "lake"));
    CHECK(check_ok("lakestream.table.catalog", "builtin"));
    const char *e = check_err("lakestream.table.catalog", "lake2");
    CHECK(strstr(e, "Invalid value 'lake2'") && strstr(e, "(configured: builtin, lake)"));
    ls_prop_t st[] = {P("lakestream.table.enabled", "true"), P("lakestream.table.catalog", "lake")};
    ls_policy_layers_t l = {st, 2, NULL, 0, NULL, 0};
    ls_policy_t p;
    CHECK_EQ_INT(ls_policy_resolve(&l, &p, err, sizeof err), LS_OK);
    CHECK(!strcmp(p.value[LS_POLICY_CATALOG], "lake"));
    /* a catalog removed from the configuration: its tables are held back */
    ls_catalog_confs_install(NULL);
    CHECK_EQ_INT(ls_policy_resolve(&l, &p, err, sizeof err), LS_EINVAL);
    CHECK(strstr(err, "no catalog named 'lake' is configured"));
}

TEST(table_name_template)
{
    ls_prop_t stream[] = {P("lakestream.table.name", "{namespace}_{topic}_raw")};
    ls_policy_layers_t l = {stream, 1, NULL, 0, NULL, 0};
    ls_policy_t p;
    char err[512], name[300];
    CHECK_EQ_INT(ls_policy_resolve(&l, &p, err, sizeof err), LS_OK);
    CHECK_EQ_INT(ls_policy_table_name(&p, "sales", "orders", name, sizeof name, err, sizeof err),
                 LS_OK);
    CHECK(!strcmp(name, "sales_orders_raw"));
    /* an expansion longer than 249 characters is refused, naming the key */
    char longtopic[250];
    memset(longtopic, 'x', 249);
    longtopic[249] = 0;
    CHECK_EQ_INT(ls_policy_table_name(&p, "sales", longtopic, name, sizeof name, err, sizeof err),
                 LS_EINVAL);
    CHECK(strstr(err, "lakestream.table.name"));
}

TEST(enabled_since_bookkeeping)
{
    ls_prop_t off[] = {P("lakestream.table.enabled", "false")};
    ls_prop_t on[] = {P("lakestream.table.enabled", "true"),
                      P(LS_POLICY_SINCE_KEY, "1700000000000")};
    ls_prop_t on_unstamped[] = {P("lakestream.table.enabled", "true")};
    ls_policy_layers_t loff = {off, 1, NULL, 0, NULL, 0}, lon = {on, 2, NULL, 0, NULL, 0},
                       lnew = {on_unstamped, 1, NULL, 0, NULL, 0};
    ls_policy_t poff, pon, pnew;
    char err[256], buf[32];
    CHECK_EQ_INT(ls_policy_resolve(&loff, &poff, err, sizeof err), LS_OK);
    CHECK_EQ_INT(ls_policy_resolve(&lon, &pon, err, sizeof err), LS_OK);
    CHECK_EQ_INT(ls_policy_resolve(&lnew, &pnew, err, sizeof err), LS_OK);
    CHECK_EQ_INT(pon.enabled_since_ms, 1700000000000LL);
    /* just enabled: stamped now */
    const char *v = ls_policy_since_after(&poff, &pnew, 1800000000000LL, buf, sizeof buf);
    CHECK(v && !strcmp(v, "1800000000000"));
    v = ls_policy_since_after(NULL, &pnew, 42, buf, sizeof buf);
    CHECK(v && !strcmp(v, "42"));
    /* stays enabled: the old stamp is kept */
    v = ls_policy_since_after(&pon, &pnew, 1800000000000LL, buf, sizeof buf);
    CHECK(v && !strcmp(v, "1700000000000"));
    /* disabled: removed */
    CHECK(ls_policy_since_after(&pon, &poff, 1800000000000LL, buf, sizeof buf) == NULL);
}

static ls_prop_t *ns_buf;
static ls_status set_ns(const ls_prop_t *cur, int ncur, void *arg, const ls_prop_t **out, int *nout,
                        char *err, size_t errlen)
{
    const ls_prop_t *add = arg;
    static ls_prop_t v[8];
    int n = 0;
    for (int i = 0; i < ncur && n < 7; i++)
        if (strcmp(cur[i].key, add->key) != 0) v[n++] = cur[i];
    v[n++] = *add;
    ns_buf = v;
    *out = v;
    *nout = n;
    return LS_OK;
}

TEST(namespace_layer_from_catalog)
{
    char err[256];
    ls_meta_t *m = ls_meta_mem_open();
    ls_catalog_t *c = ls_catalog_open(m, err, sizeof err);
    CHECK(c);
    ls_stream_t *s;
    ls_prop_t cfg[] = {P("lakestream.table.enabled", "true")};
    CHECK_EQ_INT(ls_catalog_create(c, "sales", "orders", 1, cfg, 1, 0, &s, err, sizeof err), LS_OK);
    ls_prop_t add = P("lakestream.table.commit.interval.ms", "3000");
    CHECK_EQ_INT(ls_catalog_update_namespace(c, "sales", set_ns, &add, err, sizeof err), LS_OK);
    ls_prop_t add2 = P("lakestream.table.compression", "none");
    CHECK_EQ_INT(ls_catalog_update_namespace(c, "sales", set_ns, &add2, err, sizeof err), LS_OK);
    ls_prop_t cluster[] = {P("lakestream.table.commit.interval.ms", "9000")};
    ls_policy_t p;
    ls_namespace_t *ns;
    CHECK_EQ_INT(ls_policy_for_stream(c, s, cluster, 1, &p, &ns, err, sizeof err), LS_OK);
    CHECK(ns != NULL);
    CHECK_EQ_INT(p.commit_interval_ms, 3000);
    CHECK_EQ_INT(p.source[LS_POLICY_COMMIT_INTERVAL_MS], LS_POLICY_SRC_NAMESPACE);
    CHECK(!strcmp(p.value[LS_POLICY_COMPRESSION], "none"));
    ls_namespace_release(ns);
    /* a second catalog over the same store (another process) sees the record */
    ls_catalog_t *c2 = ls_catalog_open(m, err, sizeof err);
    ns = ls_catalog_namespace(c2, "sales");
    CHECK(ns && ns->nprops == 2);
    ls_namespace_release(ns);
    /* a namespace without a record has no layer */
    CHECK(ls_catalog_namespace(c2, "nobody") == NULL);
    ls_catalog_close(c2);
    ls_stream_release(s);
    ls_catalog_close(c);
    ls_meta_close(m);
}

/* A compacted topic's table defaults to upsert; any layer that sets
 * write.mode wins; compact,delete counts as compacted. */
TEST(typed_key_formats_and_subject_strategies)
{
    ls_policy_t p;
    char err[512];
    /* formats and strategies resolve to their typed members, across layers */
    ls_prop_t stream[] = {P("lakestream.table.key.format", "schema-registry-latest"),
                          P("lakestream.table.value.subject.name.strategy",
                            "io.confluent.kafka.serializers.subject.TopicRecordNameStrategy")};
    ls_prop_t ns[] = {P("lakestream.table.value.format", "schema-registry")};
    ls_policy_layers_t l = {stream, 2, ns, 1, NULL, 0};
    CHECK_EQ_INT(ls_policy_resolve(&l, &p, err, sizeof err), LS_OK);
    CHECK(p.key_typed && p.key_latest && p.value_typed && !p.value_latest);
    CHECK_EQ_INT(p.value_strategy, LS_POLICY_TOPIC_RECORD_NAME);
    CHECK_EQ_INT(p.key_strategy, LS_POLICY_TOPIC_NAME);
    CHECK_EQ_INT(p.source[LS_POLICY_KEY_SUBJECT_STRATEGY], LS_POLICY_SRC_DEFAULT);
    /* -latest with a strategy that needs the record's name: the rule names both keys */
    ls_prop_t bad[] = {P("lakestream.table.key.subject.name.strategy", "RecordNameStrategy")};
    ls_policy_layers_t lb = {stream, 2, ns, 1, bad, 1};
    CHECK_EQ_INT(ls_policy_resolve(&lb, &p, err, sizeof err), LS_EINVAL);
    CHECK(strstr(err, "lakestream.table.key.subject.name.strategy (cluster layer)") &&
          strstr(err, "lakestream.table.key.format=schema-registry-latest (stream layer)"));
    /* the same strategy with the header format is fine */
    ls_prop_t hdr[] = {P("lakestream.table.key.format", "schema-registry")};
    ls_policy_layers_t lh = {hdr, 1, NULL, 0, bad, 1};
    CHECK_EQ_INT(ls_policy_resolve(&lh, &p, err, sizeof err), LS_OK);
    CHECK_EQ_INT(p.key_strategy, LS_POLICY_RECORD_NAME);
    CHECK_EQ_INT(
        ls_policy_check("lakestream.table.key.subject.name.strategy", "ByName", err, sizeof err),
        LS_EINVAL);
    CHECK(strstr(err, "TopicNameStrategy, RecordNameStrategy") != NULL);
}

/* evolution=new-table: a typed upsert table is refused naming both keys
 * (a new version would lack the keys last written before the switch);
 * a raw upsert table has no schema to switch on, so it resolves. */
TEST(new_table_evolution_refused_for_typed_upsert)
{
    ls_policy_t p;
    char err[512];
    ls_prop_t stream[] = {P("lakestream.table.evolution", "new-table"),
                          P("lakestream.table.value.format", "schema-registry")};
    ls_policy_layers_t l = {stream, 2, NULL, 0, NULL, 0};
    CHECK_EQ_INT(ls_policy_resolve(&l, &p, err, sizeof err), LS_OK);
    CHECK(p.evolution_new_table && !p.evolution_dlq);
    ls_prop_t ns[] = {P("lakestream.table.write.mode", "upsert")};
    ls_policy_layers_t lu = {stream, 2, ns, 1, NULL, 0};
    CHECK_EQ_INT(ls_policy_resolve(&lu, &p, err, sizeof err), LS_EINVAL);
    CHECK(strstr(err, "lakestream.table.evolution (stream layer)") &&
          strstr(err, "lakestream.table.write.mode=upsert, namespace layer"));
    ls_prop_t raw[] = {P("lakestream.table.evolution", "new-table")};
    ls_policy_layers_t lr = {raw, 1, ns, 1, NULL, 0};
    CHECK_EQ_INT(ls_policy_resolve(&lr, &p, err, sizeof err), LS_OK);
}

TEST(compacted_topics_default_to_upsert)
{
    static const struct {
        const char *cleanup, *mode;
        bool upsert;
    } rows[] = {
        {"compact", NULL, true},
        {"compact,delete", NULL, true},
        {"delete, compact", NULL, true},
        {"delete", NULL, false},
        {NULL, NULL, false},
        {"compact", "append", false},
        {"compactx", NULL, false},
        {"delete", "upsert", true},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        ls_prop_t stream[2];
        int n = 0;
        if (rows[i].cleanup) stream[n++] = (ls_prop_t)P("cleanup.policy", rows[i].cleanup);
        if (rows[i].mode) stream[n++] = (ls_prop_t)P("lakestream.table.write.mode", rows[i].mode);
        ls_policy_layers_t l = {stream, n, NULL, 0, NULL, 0};
        ls_policy_t p;
        char err[256];
        CHECK_EQ_INT(ls_policy_resolve(&l, &p, err, sizeof err), LS_OK);
        CHECK(p.upsert == rows[i].upsert);
        CHECK(!strcmp(p.value[LS_POLICY_WRITE_MODE], rows[i].upsert ? "upsert" : "append"));
        CHECK(p.source[LS_POLICY_WRITE_MODE] ==
              (rows[i].mode ? LS_POLICY_SRC_STREAM : LS_POLICY_SRC_DEFAULT));
    }
}

int main(void)
{
    ls_diag_set_level(LS_DIAG_WARN);
    RUN(typed_key_formats_and_subject_strategies);
    RUN(compacted_topics_default_to_upsert);
    RUN(valid_values_accepted);
    RUN(bad_values_name_key_and_accepted);
    RUN(partition_transforms_parsed);
    RUN(resolution_layers_and_sources);
    RUN(bad_stored_value_reported_with_layer);
    RUN(unapplied_values_refused);
    RUN(external_catalog_names);
    RUN(table_name_template);
    RUN(new_table_evolution_refused_for_typed_upsert);
    RUN(enabled_since_bookkeeping);
    RUN(namespace_layer_from_catalog);
    UNIT_DONE();
}
