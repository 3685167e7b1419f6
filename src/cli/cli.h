/* Command-line subcommands of the lakestream binary besides `serve`. */
#ifndef LS_CLI_H
#define LS_CLI_H
#include "base/config.h"

/* `lakestream groups ...` (groups_cli.c); argv holds the arguments after "groups". */
int ls_cli_groups(int argc, char **argv);
/* `lakestream transactions ...` (transactions_cli.c): list, describe, abort hanging ones. */
int ls_cli_transactions(int argc, char **argv);
/* `lakestream tables ...` (tables_cli.c): a topic's table policy; namespace defaults. */
int ls_cli_tables(int argc, char **argv, const ls_config_schema_t *settings);
/* `lakestream users ...` (users_cli.c): SCRAM users in the metadata store: add, list, delete. */
int ls_cli_users(int argc, char **argv, const ls_config_schema_t *settings);
#endif
