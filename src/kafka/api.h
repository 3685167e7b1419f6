/* Kafka API dispatch: one table {ApiKey, name, min/max version, first flexible
 * version, generated codecs, handler}. Key and version are checked, and the
 * request body decoded (kafka/msg_gen.c), before any handler runs; a body
 * that does not decode closes the connection with one line naming api,
 * version, field and byte offset. ApiVersions is generated from the same table.
 *
 * A handler receives an ls_kreq_t whose `msg` is the decoded request (the
 * api's ls_kafka_<Api>Request, in the request arena; NULL only for an
 * ApiVersions of an unsupported version), and must finish it exactly once
 * with ls_kreq_respond(),
 * ls_kreq_no_response() (acks=0 Produce) or ls_kreq_fail() (malformed body:
 * the connection is closed and one diagnostic line names api, version and
 * byte offset). Handlers may finish asynchronously (after store I/O); the
 * connection sends responses in request order regardless. */
#ifndef LS_KAFKA_API_H
#define LS_KAFKA_API_H
#include <stdbool.h>
#include <stdint.h>
#include "kafka/codec.h"
#include "kafka/msg_gen.h" /* LS_KERR_*: Kafka's error codes */
#include "kafka/msg_rt.h"

typedef struct ls_kafka_services ls_kafka_services_t;
typedef struct ls_kconn ls_kconn_t;

typedef struct ls_kreq {
    ls_kafka_services_t *svc; /* the broker's services (kafka/services.h) */
    ls_kconn_t *conn;         /* owning connection (internal to kafka/conn.c) */
    void *slot;               /* response slot (internal to kafka/conn.c) */
    void *turn;               /* append-order turn (internal to kafka/conn.c) */
    void *serial;             /* serial section (internal to kafka/conn.c) */
    int16_t api_key;
    int16_t api_version;
    int32_t correlation_id;
    ls_kstr_t client_id; /* view into frame */
    bool flex;           /* request uses a flexible version */
    bool raw;            /* a bare SASL token after a v0 SaslHandshake (conn.c) */
    ls_kr_t body;        /* the body; past the decoded request */
    void *msg;           /* the decoded request (ls_kafka_<Api>Request) */
    ls_arena_t *arena;   /* dies with the request */
    uint8_t *frame;      /* owned: the request bytes (without the size prefix) */
    size_t frame_len;
    int64_t start_us; /* ls_clock_mono_us at dispatch (request latency metric) */
    /* client quota throttle (kafka/kquota.h): set by the handler, put in
     * its response; the connection is muted this long once answered */
    int32_t throttle_ms;
} ls_kreq_t;

typedef void (*ls_kafka_handler_fn)(ls_kreq_t *req);

typedef struct ls_kafka_api {
    int16_t key;
    const char *name;
    int16_t min_version;
    int16_t max_version;
    int16_t first_flexible;   /* INT16_MAX when never flexible */
    const ls_kmsg_api_t *msg; /* generated request/response codecs */
    ls_kafka_handler_fn handler;
    /* Handled one at a time per connection, in request order, as Kafka
     * handles every request (conn.c, "Serial requests"): the coordinator
     * apis whose answers depend on the connection's earlier requests. */
    bool serial;
} ls_kafka_api_t;

/* The `transaction.version` feature finalized in ApiVersions (KIP-890 part
 * 2: 2 = the epoch bumps at every transaction end, partitions and groups are
 * added by Produce v12 / TxnOffsetCommit v5), and the epoch of the
 * finalized features (constant: the level never changes). */
#define LS_KAFKA_TRANSACTION_VERSION 2
#define LS_KAFKA_FEATURES_EPOCH 1

/* A cluster feature (h_features.c): the levels this broker supports and the
 * level finalized (0: not finalized). ApiVersions reports them; UpdateFeatures
 * checks against them. */
typedef struct ls_kafka_feature {
    const char *name;
    int16_t min, max;
    int16_t level;
} ls_kafka_feature_t;
extern const ls_kafka_feature_t ls_kafka_features[];
extern const int ls_kafka_nfeatures;

extern const ls_kafka_api_t ls_kafka_apis[];
extern const int ls_kafka_napis;
const ls_kafka_api_t *ls_kafka_api_find(int16_t key);
const char *ls_kafka_api_name(int16_t key);

/* Starts a response: writes the size placeholder and response header (v1 with
 * tagged fields for flexible versions, except ApiVersions which is always v0). */
void ls_kreq_begin(ls_kreq_t *req, ls_kw_t *w);
/* ls_kreq_begin, then the api's response `resp` (its ls_kafka_<Api>Response)
 * encoded at the request's version. */
void ls_kreq_encode(ls_kreq_t *req, ls_kw_t *w, const void *resp);
/* Sends the response built in w (takes ownership of w's contents) and frees req. */
void ls_kreq_respond(ls_kreq_t *req, ls_kw_t *w);
/* ls_kreq_respond, then the connection closes once that response is written;
 * requests read after this one are dropped (a failed SASL authentication). */
void ls_kreq_respond_close(ls_kreq_t *req, ls_kw_t *w);
/* Closes the connection without answering req (logging why), and frees req. */
void ls_kreq_close(ls_kreq_t *req, const char *why);
/* Finishes req without a response (acks=0 Produce). */
void ls_kreq_no_response(ls_kreq_t *req);
/* Answers now but keeps req (its arena, decoded body) alive for work still
 * running on its behalf: a request whose deadline passed (timeoutMs) is
 * answered REQUEST_TIMED_OUT while its store job finishes later. The request
 * then ends with ls_kreq_release(), exactly once. */
void ls_kreq_respond_keep(ls_kreq_t *req, ls_kw_t *w);
void ls_kreq_release(ls_kreq_t *req);
/* Malformed request: log "api vN: <why> at byte <pos>", close the connection, free req. */
void ls_kreq_fail(ls_kreq_t *req, const char *why);
/* Append order (conn.c, "Append order"): a handler that may wait before it
 * appends takes a turn as it is dispatched, then appends inside
 * ls_kreq_turn_run's fn, which runs once every earlier turn of the
 * connection has run (at once when none waits; fn may finish req). */
void ls_kreq_turn_take(ls_kreq_t *req);
void ls_kreq_turn_run(ls_kreq_t *req, void (*fn)(void *arg), void *arg);
/* True if the connection is gone (handlers finishing late may skip work). */
bool ls_kreq_conn_closed(const ls_kreq_t *req);
/* The request's connection, unique for the broker's life (never 0). */
uint64_t ls_kreq_conn_id(const ls_kreq_t *req);
/* The peer's "ip:port" ("?" when unknown), for diagnostics and DescribeGroups. */
const char *ls_kreq_peer(const ls_kreq_t *req);
/* The peer's address alone ("127.0.0.1", "::1"; "?" when unknown). */
const char *ls_kreq_peer_host(const ls_kreq_t *req);
/* The peer's port in decimal ("0" when unknown). */
const char *ls_kreq_peer_port(const ls_kreq_t *req);
/* What the client said it is in ApiVersions v3+ (ClientSoftwareName and
 * ClientSoftwareVersion), kept for the connection's life; NULL before or
 * without it. Client telemetry subscriptions match on them. */
void ls_kreq_set_client_software(ls_kreq_t *req, ls_kstr_t name, ls_kstr_t version);
const char *ls_kreq_client_software_name(const ls_kreq_t *req);
const char *ls_kreq_client_software_version(const ls_kreq_t *req);
/* The principal the request acts as, Kafka's "User:<name>" form
 * (LS_KAFKA_ANONYMOUS on an unauthenticated connection). */
#define LS_KAFKA_ANONYMOUS "User:ANONYMOUS"
const char *ls_kreq_principal(const ls_kreq_t *req);
/* The name of the listener the request came through (Metadata and
 * FindCoordinator answer with the brokers' addresses on that listener). */
const char *ls_kreq_listener_name(const ls_kreq_t *req);
void ls_kconn_set_principal(ls_kconn_t *c, const char *principal);

/* SASL state of a connection: h_sasl.c moves it, conn.c gates requests on it.
 *   INITIAL --SaslHandshake--> HANDSHAKEN --SaslAuthenticate...--> AUTHENTICATED
 *   AUTHENTICATED --SaslHandshake (re-authentication, KIP-368)--> HANDSHAKEN
 * `authenticated` stays true through a re-authentication: the connection
 * keeps its principal until the new exchange succeeds or fails (closed). */
enum { LS_KSASL_INITIAL, LS_KSASL_HANDSHAKEN, LS_KSASL_AUTHENTICATED };
struct ls_sasl_session; /* security/sasl.h */
typedef struct ls_ksasl {
    int state;
    bool authenticated; /* has authenticated at least once */
    bool raw;           /* v0 SaslHandshake: bare tokens follow */
    bool reauth_ok;     /* authenticated with SaslAuthenticate v1+: may re-authenticate */
    bool busy;          /* an exchange step runs on a worker */
    int mech;           /* ls_sasl_mech of the handshake */
    struct ls_sasl_session *session; /* the exchange in progress (freed by conn.c) */
    int64_t expires_ms; /* monotonic end of the session (connections.max.reauth.ms); 0: none */
} ls_ksasl_t;
ls_ksasl_t *ls_kreq_sasl(ls_kreq_t *req);
/* Whether the request's listener needs SASL (SASL_PLAINTEXT, SASL_SSL). */
bool ls_kreq_needs_sasl(const ls_kreq_t *req);

/* Maps an internal status to the closest retriable/non-retriable Kafka error. */
int16_t ls_kafka_error_from_status(int st);
#endif
