/* A minimal blocking Kafka-protocol client: one connection, requests encoded
 * with the broker's own message codecs, one request in flight. The admin
 * operations that the CLI and the REST API share (admin/table_policy.h,
 * api/) go through it, so both reach the broker through the exact request
 * handlers any Kafka admin tool reaches (CreateTopics, IncrementalAlterConfigs,
 * ...): one code path for every front end.
 *
 * Errors never print: they land in c->err (the CLI prints them, the REST API
 * answers them). Responses live in the connection's arena until close.
 * Threads: a connection belongs to one thread; it blocks (on the REST API's
 * HTTP threads, bounded by the timeout given to ls_admin_connect). */
#ifndef LS_ADMIN_KAFKA_CLIENT_H
#define LS_ADMIN_KAFKA_CLIENT_H
#include <stdbool.h>
#include <stdint.h>

#include "base/buf.h"
#include "kafka/msg.h"

typedef struct ls_admin_conn {
    int fd;
    int32_t corr;
    ls_arena_t *arena;
    const char *client_id; /* Kafka client id, e.g. "lakestream-cli" */
    char err[512];         /* why the last call failed */
} ls_admin_conn_t;

/* Connects to HOST:PORT ([v6]:port too); timeout_ms > 0 bounds every later
 * send and receive. 0, or -1 with c->err set (c is then closed). */
int ls_admin_connect(ls_admin_conn_t *c, const char *client_id, const char *hostport,
                     int64_t timeout_ms);
void ls_admin_close(ls_admin_conn_t *c);
/* Sends body (already encoded for version v) and returns a reader positioned
 * on the response body (arena memory). 0, or -1 (connection lost, timeout,
 * bad frame) with c->err set. */
int ls_admin_call(ls_admin_conn_t *c, int16_t key, int16_t v, bool flex, ls_kw_t *body,
                  ls_kr_t *out);

/* A Kafka error code in a message for a human: Kafka's name
 * ("NOT_COORDINATOR", kafka/msg_gen.h ls_kafka_error_name), or "error N"
 * written into buf for a code not in Kafka's list. */
typedef struct ls_admin_errbuf {
    char s[24];
} ls_admin_errbuf_t;
const char *ls_admin_error_name(int code, ls_admin_errbuf_t *buf);

/* Encodes *reqp as <api>Request version v, calls, decodes into *respp.
 * Evaluates to 0 or -1 (c->err names the failure). */
#define LS_ADMIN_CALL(c, api, API, v, reqp, respp)                                                 \
    ({                                                                                             \
        ls_kw_t b_;                                                                                \
        ls_kw_init(&b_);                                                                           \
        ls_kafka_##api##Request_encode(&b_, v, reqp);                                              \
        ls_kr_t r_;                                                                                \
        int rc_ = ls_admin_call(c, LS_KAFKA_API_##API, v, (v) >= LS_KAFKA_##API##_FLEX, &b_, &r_); \
        ls_kw_free(&b_);                                                                           \
        if (rc_ == 0 && ls_kafka_##api##Response_decode(&r_, v, (c)->arena, respp) != 0) {         \
            snprintf((c)->err, sizeof(c)->err, "bad %s response", #api);                           \
            rc_ = -1;                                                                              \
        }                                                                                          \
        rc_;                                                                                       \
    })
#endif
