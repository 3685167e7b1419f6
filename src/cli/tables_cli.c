/* `lakestream tables`: a topic's table materialization policy.
 *
 *   lakestream tables [--bootstrap HOST:PORT] show TOPIC
 *   lakestream tables [--bootstrap HOST:PORT] set TOPIC KEY=VALUE...
 *   lakestream tables [--bootstrap HOST:PORT] unset TOPIC KEY...
 *   lakestream tables namespace NS [--set KEY=VALUE]... [--unset KEY]...
 *                     [--config FILE] [--metadata.url=URL]
 *
 * KEY is a policy key (lakestream.table.enabled) or its short form
 * (enabled). show, set and unset talk to a running broker over the Kafka
 * protocol — DescribeConfigs and IncrementalAlterConfigs SET / DELETE, the
 * requests any Kafka admin tool sends — and print every field with its
 * resolved value and the layer it came from (stream, namespace, cluster,
 * default). Every value the broker accepts it applies (stream/policy.c
 * refuses the others), so there is no status column.
 *
 * Namespace defaults are not a Kafka resource, so `tables namespace` writes
 * the namespace record in the metadata store directly (the broker's
 * metadata.url, read from the same --config / LAKESTREAM_* / flags as
 * `serve`); a running broker picks the change up at its next compaction
 * pass. Values are validated with the broker's own rules (stream/policy.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/config.h"
#include "cli/cli.h"
#include "cli/kafka_client.h"
#include "meta/meta.h"
#include "stream/catalog.h"
#include "stream/policy.h"

#define PROG "lakestream tables"
#define MAX_ARGS 64
/* width of the KEY column: the longest policy key,
 * lakestream.table.value.subject.name.strategy */
#define KEY_W 44

static void usage(FILE *f)
{
    fprintf(f, "usage: lakestream tables [--bootstrap HOST:PORT] show TOPIC\n"
               "       lakestream tables [--bootstrap HOST:PORT] set TOPIC KEY=VALUE...\n"
               "       lakestream tables [--bootstrap HOST:PORT] unset TOPIC KEY...\n"
               "       lakestream tables namespace NS [--set KEY=VALUE]... [--unset KEY]...\n"
               "                         [--config FILE] [--metadata.url=URL]\n"
               "KEY: lakestream.table.<field> or just <field>. Fields:\n");
    for (int f0 = 0; f0 < LS_POLICY_NFIELDS; f0++)
        fprintf(f, "  %-*s %s (default %s)\n", KEY_W, ls_policy_key((ls_policy_field)f0),
                ls_policy_accepted((ls_policy_field)f0), ls_policy_default((ls_policy_field)f0));
    fprintf(f, "Default bootstrap: 127.0.0.1:9092.\n");
}

/* "enabled" -> "lakestream.table.enabled" (static buffer per call site). */
static const char *full_key(const char *k, char *buf, size_t cap)
{
    if (ls_policy_is_key(k)) return k;
    snprintf(buf, cap, LS_POLICY_PREFIX "%s", k);
    return buf;
}

static const char *source_name(int8_t src)
{
    switch (src) {
    case LS_KAFKA_CONFIG_SOURCE_TOPIC_CONFIG: return "stream";
    case LS_KAFKA_CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG: return "namespace";
    case LS_KAFKA_CONFIG_SOURCE_STATIC_BROKER_CONFIG: return "cluster";
    case LS_KAFKA_CONFIG_SOURCE_DEFAULT_CONFIG: return "default";
    }
    return "?";
}

static char *kdup(ls_kstr_t s)
{
    char *p = ls_malloc(s.len > 0 ? (size_t)s.len + 1 : 1);
    if (s.len > 0) memcpy(p, s.ptr, (size_t)s.len);
    p[s.len > 0 ? s.len : 0] = 0;
    return p;
}

/* A policy field's row: key, value, layer. Keys that are no field
 * (enabled.since, the statuses) are kept by the broker: SOURCE "broker". */
static void print_row(const char *key, const char *value, const char *source)
{
    bool field = ls_policy_field_of(key) >= 0;
    printf("%-*s %-24s %s\n", KEY_W, key, value, field ? source : "broker");
}

static int cmd_show(ls_cli_conn_t *c, const char *topic)
{
    ls_kafka_DescribeConfigsRequest_DescribeConfigsResource res = {.ResourceType =
                                                                       LS_KAFKA_RESOURCE_TOPIC,
                                                                   .ResourceName = ls_kstr_c(topic),
                                                                   .ConfigurationKeys = NULL,
                                                                   .NumConfigurationKeys = -1};
    ls_kafka_DescribeConfigsRequest q = {.Resources = &res, .NumResources = 1};
    ls_kafka_DescribeConfigsResponse r;
    if (LS_CLI_CALL(c, DescribeConfigs, DESCRIBE_CONFIGS, 4, &q, &r) != 0) return 1;
    if (r.NumResults != 1) return 1;
    const ls_kafka_DescribeConfigsResponse_DescribeConfigsResult *d = &r.Results[0];
    if (d->ErrorCode) {
        fprintf(stderr, PROG ": %.*s (error %d)\n",
                d->ErrorMessage.len > 0 ? d->ErrorMessage.len : 0,
                d->ErrorMessage.ptr ? d->ErrorMessage.ptr : "", d->ErrorCode);
        return 1;
    }
    printf("table policy of topic %s\n", topic);
    printf("%-*s %-24s %s\n", KEY_W, "KEY", "VALUE", "SOURCE");
    for (int32_t i = 0; i < d->NumConfigs; i++) {
        const ls_kafka_DescribeConfigsResponse_DescribeConfigsResourceResult *e = &d->Configs[i];
        char *key = kdup(e->Name), *value = kdup(e->Value);
        if (ls_policy_is_key(key)) print_row(key, value, source_name(e->ConfigSource));
        ls_free(key);
        ls_free(value);
    }
    /* the table's lag (a status the broker reports beside the policy) */
    const char *lag = "unknown (no table, or no table commit yet)";
    char lagbuf[96];
    for (int32_t i = 0; i < d->NumConfigs; i++)
        if (ls_kstr_eq(d->Configs[i].Name, "lakestream.table.lag.ms")) {
            char *v = kdup(d->Configs[i].Value);
            long long ms = atoll(v);
            snprintf(lagbuf, sizeof lagbuf, "%lld ms%s", ms,
                     ms > 0 ? " (records due for the table and not in it yet)" : " (up to date)");
            lag = lagbuf;
            ls_free(v);
        }
    printf("\ntable lag: %s\n", lag);
    /* records error.handling=skip left out, if any */
    for (int32_t i = 0; i < d->NumConfigs; i++)
        if (ls_kstr_eq(d->Configs[i].Name, "lakestream.table.skipped.records")) {
            char *v = kdup(d->Configs[i].Value);
            printf("records skipped: %s (lakestream.table.error.handling=skip)\n", v);
            ls_free(v);
        }
    /* why the table is held back, if it is */
    for (int32_t i = 0; i < d->NumConfigs; i++)
        if (ls_kstr_eq(d->Configs[i].Name, "lakestream.table.held.reason")) {
            char *v = kdup(d->Configs[i].Value);
            printf("table held back: %s\n", v);
            ls_free(v);
        }
    /* the table the rows go to now (evolution=new-table: a later version) */
    for (int32_t i = 0; i < d->NumConfigs; i++)
        if (ls_kstr_eq(d->Configs[i].Name, "lakestream.table.current") ||
            ls_kstr_eq(d->Configs[i].Name, "lakestream.table.current.reason")) {
            char *v = kdup(d->Configs[i].Value);
            printf("%s: %s\n",
                   ls_kstr_eq(d->Configs[i].Name, "lakestream.table.current") ? "current table"
                                                                              : "  started by",
                   v);
            ls_free(v);
        }
    return 0;
}

static int cmd_alter(ls_cli_conn_t *c, const char *topic, bool set, int n, char **args)
{
    ls_kafka_IncrementalAlterConfigsRequest_AlterableConfig *ops =
        ls_arena_alloc(c->arena, (size_t)n * sizeof *ops);
    for (int i = 0; i < n; i++) {
        char *kb = ls_arena_alloc(c->arena, 256), *k = args[i], *v = NULL;
        if (set) {
            char *eq = strchr(args[i], '=');
            if (!eq) {
                fprintf(stderr, PROG ": '%s' is not KEY=VALUE\n", args[i]);
                return 2;
            }
            *eq = 0;
            v = eq + 1;
        }
        const char *key = full_key(k, kb, 256);
        char err[768];
        if (set && ls_policy_check(key, v, err, sizeof err) != LS_OK) {
            fprintf(stderr, PROG ": %s\n", err);
            return 1;
        }
        if (!set && ls_policy_field_of(key) < 0) {
            fprintf(stderr, PROG ": %s is not a table policy key (see lakestream tables help)\n",
                    key);
            return 1;
        }
        ops[i] = (ls_kafka_IncrementalAlterConfigsRequest_AlterableConfig){
            ls_kstr_c(key), set ? LS_KAFKA_CONFIG_OP_SET : LS_KAFKA_CONFIG_OP_DELETE,
            set ? ls_kstr_c(v) : ls_kstr_null()};
    }
    ls_kafka_IncrementalAlterConfigsRequest_AlterConfigsResource res = {
        .ResourceType = LS_KAFKA_RESOURCE_TOPIC,
        .ResourceName = ls_kstr_c(topic),
        .Configs = ops,
        .NumConfigs = n};
    ls_kafka_IncrementalAlterConfigsRequest q = {.Resources = &res, .NumResources = 1};
    ls_kafka_IncrementalAlterConfigsResponse r;
    if (LS_CLI_CALL(c, IncrementalAlterConfigs, INCREMENTAL_ALTER_CONFIGS, 1, &q, &r) != 0)
        return 1;
    if (r.NumResponses != 1) return 1;
    if (r.Responses[0].ErrorCode) {
        fprintf(stderr, PROG ": %.*s (error %d)\n",
                r.Responses[0].ErrorMessage.len > 0 ? r.Responses[0].ErrorMessage.len : 0,
                r.Responses[0].ErrorMessage.ptr ? r.Responses[0].ErrorMessage.ptr : "",
                r.Responses[0].ErrorCode);
        return 1;
    }
    return cmd_show(c, topic);
}

/* ------------------------------------------------------------ namespaces */

typedef struct ns_edit {
    const char *set_k[MAX_ARGS], *set_v[MAX_ARGS], *unset_k[MAX_ARGS];
    int nset, nunset;
    ls_prop_t *buf;
} ns_edit_t;

static ls_status ns_change(const ls_prop_t *cur, int ncur, void *arg, const ls_prop_t **out,
                           int *nout, char *err, int errlen)
{
    ns_edit_t *e = arg;
    ls_free(e->buf);
    e->buf = LS_NEWN(ls_prop_t, (size_t)(ncur + e->nset) + 1);
    int n = 0;
    for (int i = 0; i < ncur; i++) {
        bool drop = false;
        for (int k = 0; k < e->nunset && !drop; k++)
            drop = strcmp(cur[i].key, e->unset_k[k]) == 0;
        for (int k = 0; k < e->nset && !drop; k++)
            drop = strcmp(cur[i].key, e->set_k[k]) == 0;
        if (!drop) e->buf[n++] = cur[i];
    }
    for (int k = 0; k < e->nset; k++)
        e->buf[n++] = (ls_prop_t){(char *)e->set_k[k], (char *)e->set_v[k]};
    *out = e->buf;
    *nout = n;
    return LS_OK;
}

static int cmd_namespace(int argc, char **argv)
{
    if (argc < 1) {
        usage(stderr);
        return 2;
    }
    const char *ns = argv[0];
    ns_edit_t e;
    memset(&e, 0, sizeof e);
    char *flags[MAX_ARGS];
    int nflags = 0;
    static char keys[MAX_ARGS][256];
    for (int i = 1; i < argc; i++) {
        bool is_set = strcmp(argv[i], "--set") == 0, is_unset = strcmp(argv[i], "--unset") == 0;
        if ((is_set || is_unset) && i + 1 < argc && e.nset + e.nunset < MAX_ARGS) {
            char *arg = argv[++i], *v = NULL;
            if (is_set) {
                char *eq = strchr(arg, '=');
                if (!eq) {
                    fprintf(stderr, PROG ": --set wants KEY=VALUE, got '%s'\n", arg);
                    return 2;
                }
                *eq = 0;
                v = eq + 1;
            }
            const char *key = full_key(arg, keys[e.nset + e.nunset], sizeof keys[0]);
            char err[768];
            if (is_set && ls_policy_check(key, v, err, sizeof err) != LS_OK) {
                fprintf(stderr, PROG ": %s\n", err);
                return 1;
            }
            if (is_set && ls_policy_field_of(key) == LS_POLICY_PRIMARY_KEY && *v) {
                /* field names of one topic's key: as a default it would make every
                 * topic of the namespace without such a key unresolvable */
                fprintf(stderr,
                        PROG ": %s names fields of one topic's key: set it on the topic "
                             "(CreateTopics, AlterConfigs), not as a namespace default\n",
                        key);
                return 1;
            }
            if (is_unset && ls_policy_field_of(key) < 0) {
                fprintf(stderr, PROG ": %s is not a table policy key\n", key);
                return 1;
            }
            if (is_set) {
                e.set_k[e.nset] = key;
                e.set_v[e.nset++] = v;
            } else {
                e.unset_k[e.nunset++] = key;
            }
        } else if (nflags < MAX_ARGS) {
            flags[nflags++] = argv[i];
        }
    }
    char err[768];
    ls_config_t cfg;
    ls_config_init(&cfg);
    int rc = 1;
    ls_meta_t *meta = NULL;
    ls_catalog_t *cat = NULL;
    if (ls_config_load(&cfg, nflags, flags, err, sizeof err) != 0) {
        fprintf(stderr, PROG ": configuration error: %s\n", err);
        rc = 2;
        goto out;
    }
    if (!(meta = ls_meta_open(cfg.metadata_url, err, sizeof err)) ||
        !(cat = ls_catalog_open(meta, err, sizeof err))) {
        fprintf(stderr, PROG ": %s\n", err);
        goto out;
    }
    if (e.nset + e.nunset > 0 &&
        ls_catalog_update_namespace(cat, ns, ns_change, &e, err, sizeof err) != LS_OK) {
        fprintf(stderr, PROG ": namespace %s: %s\n", ns, err);
        goto out;
    }
    ls_namespace_t *rec = ls_catalog_namespace(cat, ns);
    printf("table policy defaults of namespace %s%s\n", ns, rec ? "" : " (no record yet)");
    printf("%-*s %-24s %s\n", KEY_W, "KEY", "VALUE", "SOURCE");
    for (int i = 0; rec && i < rec->nprops; i++)
        if (ls_policy_field_of(rec->props[i].key) >= 0)
            print_row(rec->props[i].key, rec->props[i].value, "namespace");
    ls_namespace_release(rec);
    rc = 0;
out:
    ls_free(e.buf);
    ls_catalog_close(cat);
    if (meta) ls_meta_close(meta);
    ls_config_free(&cfg);
    return rc;
}

int ls_cli_tables(int argc, char **argv)
{
    const char *bootstrap, *cmd;
    int rc;
    int i = ls_cli_command(argc, argv, usage, &bootstrap, &cmd, &rc);
    if (i < 0) return rc;
    if (strcmp(cmd, "namespace") == 0) return cmd_namespace(argc - i, argv + i);
    bool show = strcmp(cmd, "show") == 0, set = strcmp(cmd, "set") == 0,
         unset = strcmp(cmd, "unset") == 0;
    if (!(show || set || unset) || i >= argc || (!show && i + 1 >= argc) ||
        (show && i + 1 != argc)) {
        usage(stderr);
        return 2;
    }
    const char *topic = argv[i++];
    ls_cli_conn_t c = {.fd = -1};
    if (ls_cli_connect(&c, PROG, bootstrap) != 0) return 1;
    rc = show ? cmd_show(&c, topic) : cmd_alter(&c, topic, set, argc - i, argv + i);
    ls_cli_close(&c);
    return rc;
}
