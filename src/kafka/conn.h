/* Kafka listener and connections: framing (int32 size prefix), request
 * headers v1/v2, version checks against the dispatch table, in-order
 * responses, backpressure. See the design note in conn.c. */
#ifndef LS_KAFKA_CONN_H
#define LS_KAFKA_CONN_H
#include <stdbool.h>
#include "kafka/services.h"

typedef struct ls_kafka_listener ls_kafka_listener_t;

ls_kafka_listener_t *ls_kafka_listener_start(ls_kafka_services_t *b, const char *host, int port,
                                             char *err, int errlen);
int ls_kafka_listener_port(const ls_kafka_listener_t *l);
/* Stops accepting connections and reading requests (in-flight ones finish). */
void ls_kafka_listener_quiesce(ls_kafka_listener_t *l);
/* Closes every connection once its in-flight requests are answered, then
 * calls done. */
void ls_kafka_listener_close(ls_kafka_listener_t *l, void (*done)(void *arg), void *arg);
void ls_kafka_listener_free(ls_kafka_listener_t *l);
/* Clients must authenticate with SASL before anything but ApiVersions,
 * SaslHandshake and SaslAuthenticate is served (SASL_PLAINTEXT, SASL_SSL). */
void ls_kafka_listener_require_sasl(ls_kafka_listener_t *l, bool on);
/* Pauses / resumes reading on every connection (produce backpressure). */
void ls_kafka_listener_set_paused(ls_kafka_listener_t *l, bool paused);
#endif
