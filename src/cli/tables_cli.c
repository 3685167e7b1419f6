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
 * pass. Values are validated with the broker's own rules (stream/policy.c).
 *
 * Everything but the printing is admin/table_policy.c, which the REST API
 * (/api/v1/.../policy) calls too: one code path for both front ends. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin/table_policy.h"
#include "base/alloc.h"
#include "base/catalog_conf.h"
#include "base/config.h"
#include "cli/cli.h"
#include "cli/cli_args.h"
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

/* A policy row: key, value, layer. */
static void print_row(const char *key, const char *value, const char *source)
{
    printf("%-*s %-24s %s\n", KEY_W, key, value, source);
}

/* A failed call: the broker's refusal with its Kafka code, or why the call failed. */
static void print_error(const ls_cli_conn_t *c, int16_t kerr)
{
    ls_admin_errbuf_t eb;
    if (kerr)
        fprintf(stderr, PROG ": %s (%s)\n", c->err, ls_admin_error_name(kerr, &eb));
    else
        fprintf(stderr, PROG ": %s\n", c->err);
}

static int cmd_show(ls_cli_conn_t *c, const char *topic)
{
    ls_admin_policy_t p;
    int16_t kerr;
    if (ls_admin_policy_describe(c, topic, &p, &kerr) != 0) {
        print_error(c, kerr);
        return 1;
    }
    printf("table policy of topic %s\n", topic);
    printf("%-*s %-24s %s\n", KEY_W, "KEY", "VALUE", "SOURCE");
    for (int i = 0; i < p.nrows; i++)
        print_row(p.rows[i].key, p.rows[i].value, p.rows[i].source);
    /* the table's lag (a status the broker reports beside the policy) */
    if (p.has_lag)
        printf("\ntable lag: %lld ms%s\n", (long long)p.lag_ms,
               p.lag_ms > 0 ? " (records due for the table and not in it yet)" : " (up to date)");
    else
        printf("\ntable lag: unknown (no table, or no table commit yet)\n");
    if (p.has_skipped)
        printf("records skipped: %lld (lakestream.table.error.handling=skip)\n",
               (long long)p.skipped);
    if (p.held) printf("table held back: %s\n", p.held);
    if (p.catalog_status) printf("external catalog behind: %s\n", p.catalog_status);
    /* the table the rows go to now (evolution=new-table: a later version) */
    if (p.current) printf("current table: %s\n", p.current);
    if (p.current_reason) printf("  started by: %s\n", p.current_reason);
    return 0;
}

static int cmd_alter(ls_cli_conn_t *c, const char *topic, bool set, int n, char **args)
{
    ls_admin_policy_edit_t e;
    memset(&e, 0, sizeof e);
    char err[768];
    for (int i = 0; i < n; i++) {
        char *k = args[i], *v = NULL;
        if (set) {
            char *eq = strchr(args[i], '=');
            if (!eq) {
                fprintf(stderr, PROG ": '%s' is not KEY=VALUE\n", args[i]);
                return 2;
            }
            *eq = 0;
            v = eq + 1;
        }
        if ((set ? ls_admin_policy_edit_set(&e, k, v, false, err, sizeof err)
                 : ls_admin_policy_edit_unset(&e, k, err, sizeof err)) != LS_OK) {
            fprintf(stderr, PROG ": %s%s\n", err, set ? "" : " (see lakestream tables help)");
            return 1;
        }
    }
    int16_t kerr;
    if (ls_admin_policy_alter(c, topic, &e, false, &kerr) != 0) {
        print_error(c, kerr);
        return 1;
    }
    return cmd_show(c, topic);
}

/* ------------------------------------------------------------ namespaces */

static int cmd_namespace(int argc, char **argv, const ls_config_schema_t *settings)
{
    if (argc < 1) {
        usage(stderr);
        return 2;
    }
    const char *ns = argv[0];
    ls_admin_policy_edit_t e;
    memset(&e, 0, sizeof e);
    char *flags[MAX_ARGS];
    int nflags = 0;
    char err[768];
    ls_config_t cfg;
    ls_config_init(&cfg, settings);
    int rc = 1;
    ls_meta_t *meta = NULL;
    ls_catalog_t *cat = NULL;
    /* the configuration first: its external catalogs (catalog.<name>.*) are
     * what lakestream.table.catalog may name */
    for (int i = 1; i < argc; i++) {
        bool is_set = strcmp(argv[i], "--set") == 0, is_unset = strcmp(argv[i], "--unset") == 0;
        if ((is_set || is_unset) && i + 1 < argc)
            i++;
        else if (nflags < MAX_ARGS)
            flags[nflags++] = argv[i];
    }
    if (ls_config_load(&cfg, nflags, flags, err, sizeof err) != 0) {
        fprintf(stderr, PROG ": configuration error: %s\n", err);
        rc = 2;
        goto out;
    }
    ls_catalog_confs_install(&cfg.catalogs);
    for (int i = 1; i < argc; i++) {
        bool is_set = strcmp(argv[i], "--set") == 0, is_unset = strcmp(argv[i], "--unset") == 0;
        if ((is_set || is_unset) && i + 1 < argc) {
            char *arg = argv[++i];
            if (is_set) {
                char *eq = strchr(arg, '=');
                if (!eq) {
                    fprintf(stderr, PROG ": --set wants KEY=VALUE, got '%s'\n", arg);
                    rc = 2;
                    goto out;
                }
                *eq = 0;
                if (ls_admin_policy_edit_set(&e, arg, eq + 1, true, err, sizeof err) != LS_OK) {
                    fprintf(stderr, PROG ": %s\n", err);
                    goto out;
                }
            } else if (ls_admin_policy_edit_unset(&e, arg, err, sizeof err) != LS_OK) {
                fprintf(stderr, PROG ": %s\n", err);
                goto out;
            }
        }
    }
    if (!(meta = ls_meta_open(cfg.metadata_url, err, sizeof err)) ||
        !(cat = ls_catalog_open(meta, err, sizeof err))) {
        fprintf(stderr, PROG ": %s\n", err);
        goto out;
    }
    if (ls_admin_ns_policy_update(cat, ns, &e, false, err, sizeof err) != LS_OK) {
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
    ls_admin_policy_edit_free(&e);
    ls_catalog_close(cat);
    if (meta) ls_meta_close(meta);
    ls_catalog_confs_install(NULL);
    ls_config_free(&cfg);
    return rc;
}

int ls_cli_tables(int argc, char **argv, const ls_config_schema_t *settings)
{
    const char *bootstrap, *cmd;
    int rc;
    int i = ls_cli_command(argc, argv, usage, &bootstrap, &cmd, &rc);
    if (i < 0) return rc;
    if (strcmp(cmd, "namespace") == 0) return cmd_namespace(argc - i, argv + i, settings);
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
