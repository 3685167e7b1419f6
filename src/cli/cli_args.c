/* The CLI subcommands' common arguments (cli_args.h). */
#include "cli/cli_args.h"

#include <string.h>

int ls_cli_connect(ls_cli_conn_t *c, const char *prog, const char *hostport)
{
    if (ls_admin_connect(c, prog, hostport, 0) == 0) return 0;
    fprintf(stderr, "%s: %s\n", prog, c->err);
    return -1;
}

int ls_cli_bootstrap_arg(int argc, char **argv, const char **bootstrap)
{
    *bootstrap = "127.0.0.1:9092";
    int i = 0;
    while (i < argc && strncmp(argv[i], "--bootstrap", 11) == 0) {
        if (argv[i][11] == '=') {
            *bootstrap = argv[i] + 12;
            i++;
        } else if (i + 1 < argc) {
            *bootstrap = argv[i + 1];
            i += 2;
        } else {
            return -1;
        }
    }
    return i;
}

int ls_cli_command(int argc, char **argv, void (*usage)(FILE *out), const char **bootstrap,
                   const char **cmd, int *rc)
{
    int i = ls_cli_bootstrap_arg(argc, argv, bootstrap);
    if (i < 0 || i >= argc) {
        usage(stderr);
        *rc = 2;
        return -1;
    }
    *cmd = argv[i++];
    if (strcmp(*cmd, "help") == 0 || strcmp(*cmd, "--help") == 0) {
        usage(stdout);
        *rc = 0;
        return -1;
    }
    return i;
}
