/* Command-line subcommands of the lakestream binary besides `serve`. */
#ifndef LS_CLI_H
#define LS_CLI_H
/* `lakestream groups ...` (groups_cli.c); argv holds the arguments after "groups". */
int ls_cli_groups(int argc, char **argv);
#endif
