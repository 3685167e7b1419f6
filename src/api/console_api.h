/* Read-only views of the cluster the web console (console/) shows and the
 * REST API serves beside the catalog (rest_api.c routes them):
 *
 *   GET /api/v1/cluster   {"clusterId", "brokers": [{"nodeId","host","port","rack"}]}
 *                         — Kafka's Metadata as any client sees it
 *   GET /api/v1/groups    {"groups": [{"groupId","state","protocolType",
 *                           "offsets": [{"topic","partition","committedOffset",
 *                                        "logEndOffset","lag"}], "lag"}]}
 *                         — ListGroups, then OffsetFetch and ListOffsets per group,
 *                           lag = log end - committed (as kafka-consumer-groups
 *                           --describe computes it; -1 where either is unknown)
 *
 * Both go through the broker's own Kafka listener on the connection k the
 * caller opened (admin/kafka_client.h), so they show exactly what a Kafka
 * tool would. A group's offsets are fetched from its coordinator (found
 * with FindCoordinator; on a cluster it may be another broker), on a
 * connection made with d. NULL with k->err set when an exchange fails. */
#ifndef LS_API_CONSOLE_API_H
#define LS_API_CONSOLE_API_H
#include <jansson.h>

#include "admin/kafka_client.h"

/* How the caller opens (0, or -1 with k->err set) and closes connections. */
typedef struct ls_api_dialer {
    int (*dial)(void *ctx, ls_admin_conn_t *k, const char *hostport);
    void (*hangup)(void *ctx, ls_admin_conn_t *k);
    void *ctx;
} ls_api_dialer_t;

json_t *ls_api_cluster_json(ls_admin_conn_t *k, const ls_api_dialer_t *d); /* d unused */
json_t *ls_api_groups_json(ls_admin_conn_t *k, const ls_api_dialer_t *d);
#endif
