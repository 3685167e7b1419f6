/* Kafka listener and connections: framing (int32 size prefix), request
 * headers v1/v2, version checks against the dispatch table, in-order
 * responses, backpressure. See the design note in conn.c. */
#ifndef LS_KAFKA_CONN_H
#define LS_KAFKA_CONN_H
#include <stdbool.h>
#include "kafka/services.h"

typedef struct ls_kafka_listener ls_kafka_listener_t;
typedef struct ls_kconn ls_kconn_t;

/* A Kafka listener: one of the broker's listeners (base/config.h
 * ls_listener_cfg_t: its name, address and security protocol, an
 * ls_secproto: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL). lc is copied. */
ls_kafka_listener_t *ls_kafka_listener_start(ls_kafka_services_t *b, const ls_listener_cfg_t *lc,
                                             char *err, size_t errlen);
int ls_kafka_listener_port(const ls_kafka_listener_t *l);
const char *ls_kafka_listener_name(const ls_kafka_listener_t *l);
ls_secproto ls_kafka_listener_protocol(const ls_kafka_listener_t *l);

/* The listener a connection came through: its name (the one Metadata
 * advertises the brokers' addresses of), its protocol, and whether it
 * authenticates with SASL (SASL_PLAINTEXT, SASL_SSL: requests other than
 * ApiVersions/SaslHandshake/SaslAuthenticate wait for authentication). */
const char *ls_kconn_listener_name(const ls_kconn_t *c);
ls_secproto ls_kconn_protocol(const ls_kconn_t *c);
bool ls_kconn_needs_sasl(const ls_kconn_t *c);
/* Stops accepting connections and reading requests (in-flight ones finish). */
void ls_kafka_listener_quiesce(ls_kafka_listener_t *l);
/* Closes every connection once its in-flight requests are answered, then
 * calls done. */
void ls_kafka_listener_close(ls_kafka_listener_t *l, void (*done)(void *arg), void *arg);
void ls_kafka_listener_free(ls_kafka_listener_t *l);
/* Reads the listener's certificate, key and trust material again (SIGHUP):
 * new connections use them; on failure (LS_EINVAL with err) the old ones
 * stay. LS_OK for a listener without TLS. */
ls_status ls_kafka_listener_reload_tls(ls_kafka_listener_t *l, char *err, size_t errlen);
/* Pauses / resumes reading on every connection (produce backpressure). */
void ls_kafka_listener_set_paused(ls_kafka_listener_t *l, bool paused);
#endif
