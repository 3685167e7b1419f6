/* lakestream: one binary.
 *   lakestream serve [--config FILE] [--key=value ...]
 *   lakestream check [--config FILE] [--key=value ...]   store connectivity
 *                    [--latency=N [--latency-size=SIZE]]  and the stores' latency
 *   lakestream help | --help     configuration keys and defaults (also serve/check --help)
 *   lakestream groups ...        consumer-group admin over the Kafka protocol (cli/groups_cli.c)
 *   lakestream tables ...        table materialization policy (cli/tables_cli.c)
 *   lakestream users ...         SCRAM users of the cluster (cli/users_cli.c)
 *   lakestream transactions ...  transaction admin over the Kafka protocol (cli/transactions_cli.c)
 *   lakestream version
 * Configuration precedence: defaults < properties file (--config or
 * LAKESTREAM_CONFIG) < LAKESTREAM_* environment < command-line flags. */
#include <errno.h>
#include <ftw.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>

#include "base/config.h"
#include "base/diag.h"
#include "base/loop_lag.h"
#include "cli/cli.h"
#include "server/broker.h"
#include "server/check.h"
#include "server/settings.h"

#define LS_VERSION "0.1.0"

static ls_broker_t broker;
static uv_signal_t sigterm, sigint, sighup;
static uv_timer_t deadline;
static int exit_code;

/* Creates path and its missing parents. created (cap bytes) gets the
 * outermost folder this call made, empty when path existed, so that a
 * start-up that fails can take back what it created. */
static int mkdir_p(const char *path, char *created, size_t cap)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s", path);
    created[0] = 0;
    for (char *p = tmp + 1;; p++) {
        if (*p && *p != '/') continue;
        char c = *p;
        *p = 0;
        if (mkdir(tmp, 0755) == 0) {
            if (!created[0]) snprintf(created, cap, "%s", tmp);
        } else if (errno != EEXIST) {
            return -1;
        }
        if (!c) return 0;
        *p = c;
    }
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    remove(path);
    return 0;
}

static void close_walk(uv_handle_t *h, void *arg)
{
    if (!uv_is_closing(h)) uv_close(h, NULL);
}

static void on_stopped(void *arg) { uv_stop(uv_default_loop()); }

static void on_deadline(uv_timer_t *t)
{
    LS_ERROR("broker", "graceful stop did not finish within 30 s; exiting anyway");
    exit_code = 1;
    uv_stop(uv_default_loop());
}

static void on_signal(uv_signal_t *s, int signum)
{
    if (broker.stopping) {
        LS_WARN("broker", "second signal: exiting without waiting");
        exit_code = 1;
        uv_stop(uv_default_loop());
        return;
    }
    LS_INFO("broker", "received %s", signum == SIGTERM ? "SIGTERM" : "SIGINT");
    uv_timer_start(&deadline, on_deadline, 30000, 0);
    ls_broker_stop(&broker, on_stopped, NULL);
}

/* SIGHUP: TLS certificates and keys are read again (new connections use
 * them; a bad file keeps the old ones, and the log says why). */
static void on_sighup(uv_signal_t *s, int signum)
{
    LS_INFO("broker", "received SIGHUP: reloading TLS certificates");
    ls_broker_reload_tls(&broker);
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: lakestream serve [--config FILE] [--key=value ...]\n"
            "       lakestream check [--config FILE] [--key=value ...]   test the stores\n"
            "             [--latency=N [--latency-size=SIZE]]  and time N PUTs and metadata "
            "writes\n"
            "       lakestream groups    consumer groups: list, describe, delete, reset\n"
            "       lakestream tables    table policy of a topic or namespace: show, set, unset\n"
            "       lakestream transactions  transactions: list, describe, producers, abort\n"
            "       lakestream users     SCRAM users (SASL): add, list, delete\n"
            "       lakestream help      list configuration keys\n"
            "       lakestream version\n");
}

/* The full help: the commands, then every configuration key. */
static int help(void)
{
    usage(stdout);
    printf("\nconfiguration keys (file key=value, env LAKESTREAM_KEY_NAME, flag --key=value):\n");
    ls_config_print_help(&ls_broker_settings);
    return 0;
}

/* serve and check take only configuration flags, so -h and --help anywhere
 * among them ask for the help rather than name a key. */
static bool asks_help(int argc, char **argv)
{
    for (int i = 0; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) return true;
    return false;
}

static int serve(int argc, char **argv)
{
    char err[512];
    ls_config_t cfg;
    ls_config_init(&cfg, &ls_broker_settings);
    if (ls_config_load(&cfg, argc, argv, err, sizeof err) != 0) {
        fprintf(stderr, "lakestream: configuration error: %s\n", err);
        ls_config_free(&cfg);
        return 2;
    }
    ls_diag_level lvl;
    if (cfg.log_level && ls_diag_parse_level(cfg.log_level, &lvl) == 0) ls_diag_set_level(lvl);
    char created[4096];
    if (mkdir_p(cfg.data_dir, created, sizeof created) != 0) {
        fprintf(stderr, "lakestream: data.dir: cannot create '%s': %s\n", cfg.data_dir,
                strerror(errno));
        ls_config_free(&cfg);
        return 2;
    }
    struct stat dst;
    if (stat(cfg.data_dir, &dst) == 0 && (dst.st_mode & 077) && dst.st_uid == geteuid() &&
        chmod(cfg.data_dir, 0700) == 0)
        LS_INFO("broker", "data.dir %s was readable by other users: now mode 0700", cfg.data_dir);
    signal(SIGPIPE, SIG_IGN);
    /* num.io.threads sizes libuv's worker pool, which reads this once, at its
     * first job (none has run yet) */
    char io_threads[24];
    snprintf(io_threads, sizeof io_threads, "%lld", (long long)cfg.num_io_threads);
    setenv("UV_THREADPOOL_SIZE", io_threads, 1);
    uv_loop_t *loop = uv_default_loop();
    /* The listener accepts before open returns (cluster registration comes
     * after it): hold SIGTERM/SIGINT until their handlers are in place, so
     * a signal that early still means a graceful stop (and SIGHUP, whose
     * default action would end the process, a reload). */
    sigset_t stop_signals, old_mask;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGTERM);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &stop_signals, &old_mask);
    if (ls_broker_open(&broker, loop, &cfg, err, sizeof err) != LS_OK) {
        LS_ERROR("broker", "cannot start: %s", err);
        uv_walk(loop, close_walk, NULL);
        uv_run(loop, UV_RUN_DEFAULT);
        ls_broker_free(&broker);
        /* a data dir this start made holds nothing but what the failed
         * start wrote: leave the disk as it was */
        if (created[0]) nftw(created, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
        ls_config_free(&cfg);
        return 1;
    }
    int lrc = ls_loop_lag_start(loop);
    if (lrc != 0) LS_WARN("broker", "event loop lag is not measured: %s", uv_strerror(lrc));
    uv_signal_init(loop, &sigterm);
    uv_signal_start(&sigterm, on_signal, SIGTERM);
    uv_signal_init(loop, &sigint);
    uv_signal_start(&sigint, on_signal, SIGINT);
    uv_signal_init(loop, &sighup);
    uv_signal_start(&sighup, on_sighup, SIGHUP);
    pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
    uv_timer_init(loop, &deadline);
    uv_run(loop, UV_RUN_DEFAULT);
    if (exit_code != 0) {
        /* the stop's deadline passed or a second signal came: a worker may
         * still be in a store request retrying through an outage, and the
         * loop would wait for it. Everything acknowledged is in the stores
         * already (a produce is answered after its WAL commit), so leave. */
        fflush(stderr);
        _exit(exit_code);
    }
    uv_walk(loop, close_walk, NULL);
    uv_run(loop, UV_RUN_DEFAULT);
    ls_broker_free(&broker);
    uv_loop_close(loop);
    ls_config_free(&cfg);
    return exit_code;
}

int main(int argc, char **argv)
{
    /* Everything the broker creates (metadata db, objects, warehouse, data
     * dir) is the broker user's alone, whatever umask it was started with:
     * the metadata and the objects are the topics' data. */
    umask(077);
    /* Every Kafka connection is a descriptor: take all the kernel allows
     * this process (the soft limit is often 1024 while the hard one is far
     * higher); kafka/conn.c keeps a reserve of it for everything else. */
    struct rlimit nofile;
    if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
        nofile.rlim_cur = nofile.rlim_max;
        setrlimit(RLIMIT_NOFILE, &nofile);
    }
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if ((strcmp(argv[1], "serve") == 0 || strcmp(argv[1], "check") == 0) &&
        asks_help(argc - 2, argv + 2))
        return help();
    if (strcmp(argv[1], "serve") == 0) return serve(argc - 2, argv + 2);
    if (strcmp(argv[1], "check") == 0) return ls_check_main(argc - 2, argv + 2);
    if (strcmp(argv[1], "groups") == 0) return ls_cli_groups(argc - 2, argv + 2);
    if (strcmp(argv[1], "tables") == 0)
        return ls_cli_tables(argc - 2, argv + 2, &ls_broker_settings);
    if (strcmp(argv[1], "transactions") == 0) return ls_cli_transactions(argc - 2, argv + 2);
    if (strcmp(argv[1], "users") == 0) return ls_cli_users(argc - 2, argv + 2, &ls_broker_settings);
    if (strcmp(argv[1], "version") == 0 || strcmp(argv[1], "--version") == 0) {
        printf("lakestream %s\n", LS_VERSION);
        return 0;
    }
    if (strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0 ||
        strcmp(argv[1], "-h") == 0)
        return help();
    fprintf(stderr, "lakestream: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
