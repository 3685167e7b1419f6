/* A minimal blocking Kafka-protocol client for the CLI subcommands: one
 * connection, requests encoded with the broker's own message codecs, one
 * request in flight. Responses live in the connection's arena until close. */
#ifndef LS_CLI_KAFKA_CLIENT_H
#define LS_CLI_KAFKA_CLIENT_H
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "base/buf.h"
#include "kafka/msg.h"

typedef struct ls_cli_conn {
    int fd;
    int32_t corr;
    ls_arena_t *arena;
    const char *prog; /* prefix of error messages, e.g. "lakestream groups" */
} ls_cli_conn_t;

/* Leading "--bootstrap HOST:PORT" / "--bootstrap=HOST:PORT" options (the
 * last wins; default 127.0.0.1:9092): sets *bootstrap and returns the index
 * of the first other argument, or -1 when the option lacks its value. */
int ls_cli_bootstrap_arg(int argc, char **argv, const char **bootstrap);
/* "[--bootstrap HOST:PORT] COMMAND ...": sets *bootstrap and *cmd and returns
 * the index of the argument after COMMAND; or, for a missing command (usage
 * on stderr, *rc 2) and for help / --help (usage on stdout, *rc 0), -1. */
int ls_cli_command(int argc, char **argv, void (*usage)(FILE *out), const char **bootstrap,
                   const char **cmd, int *rc);
/* Connects to HOST:PORT; 0, or -1 with a message on stderr. */
int ls_cli_connect(ls_cli_conn_t *c, const char *prog, const char *hostport);
void ls_cli_close(ls_cli_conn_t *c);
/* Sends body (already encoded for version v) and returns a reader positioned
 * on the response body (arena memory). 0, or -1 (connection lost, bad frame). */
int ls_cli_call(ls_cli_conn_t *c, int16_t key, int16_t v, bool flex, ls_kw_t *body, ls_kr_t *out);

/* Encodes *reqp as <api>Request version v, calls, decodes into *respp.
 * Evaluates to 0 or -1 (after printing which response was bad). */
#define LS_CLI_CALL(c, api, API, v, reqp, respp)                                                   \
    ({                                                                                             \
        ls_kw_t b_;                                                                                \
        ls_kw_init(&b_);                                                                           \
        ls_kafka_##api##Request_encode(&b_, v, reqp);                                              \
        ls_kr_t r_;                                                                                \
        int rc_ = ls_cli_call(c, LS_KAFKA_API_##API, v, (v) >= LS_KAFKA_##API##_FLEX, &b_, &r_);   \
        ls_kw_free(&b_);                                                                           \
        if (rc_ == 0) rc_ = ls_kafka_##api##Response_decode(&r_, v, (c)->arena, respp);            \
        if (rc_ != 0) fprintf(stderr, "%s: bad %s response\n", (c)->prog, #api);                   \
        rc_;                                                                                       \
    })
#endif
