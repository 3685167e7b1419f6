/* The CLI subcommands' common arguments and their Kafka connection
 * (admin/kafka_client.h, with errors printed under the command's name). */
#ifndef LS_CLI_ARGS_H
#define LS_CLI_ARGS_H
#include <stdio.h>

#include "admin/kafka_client.h"

typedef ls_admin_conn_t ls_cli_conn_t;

/* Leading "--bootstrap HOST:PORT" / "--bootstrap=HOST:PORT" options (the
 * last wins; default 127.0.0.1:9092): sets *bootstrap and returns the index
 * of the first other argument, or -1 when the option lacks its value. */
int ls_cli_bootstrap_arg(int argc, char **argv, const char **bootstrap);
/* "[--bootstrap HOST:PORT] COMMAND ...": sets *bootstrap and *cmd and returns
 * the index of the argument after COMMAND; or, for a missing command (usage
 * on stderr, *rc 2) and for help / --help (usage on stdout, *rc 0), -1. */
int ls_cli_command(int argc, char **argv, void (*usage)(FILE *out), const char **bootstrap,
                   const char **cmd, int *rc);
/* Connects to HOST:PORT; 0, or -1 with "prog: why" on stderr. */
int ls_cli_connect(ls_cli_conn_t *c, const char *prog, const char *hostport);
#define ls_cli_close ls_admin_close

/* LS_ADMIN_CALL, printing "prog: why" on stderr when it fails. */
#define LS_CLI_CALL(c, api, API, v, reqp, respp)                                                   \
    ({                                                                                             \
        int rc2_ = LS_ADMIN_CALL(c, api, API, v, reqp, respp);                                     \
        if (rc2_ != 0) fprintf(stderr, "%s: %s\n", (c)->client_id, (c)->err);                      \
        rc2_;                                                                                      \
    })
#endif
