/* HTTP server of the broker (libmicrohttpd), beside kafka/: it serves
 * handlers mounted on path prefixes (the Iceberg REST catalog on /v1) and
 * GET /health itself.
 *
 * Threads: the server runs its own threads (libmicrohttpd's internal polling
 * thread pool), never the broker's libuv loop. Handlers run on those
 * threads, concurrently, and may block; they may only use thread-safe
 * things (ls_meta, ls_objstore, immutable data). Stop joins every thread:
 * after ls_http_server_stop returns, no handler runs.
 *
 * Threads also: one accept thread per server (accepting and deadlines).
 *
 * Bounds: request line + headers within LS_HTTP_MAX_HEADER_BYTES (larger:
 * 414/431 from libmicrohttpd), path within LS_HTTP_MAX_PATH, bodies within
 * LS_HTTP_MAX_BODY (larger: read, dropped and answered 413; bodies are
 * buffered only for mounts that take them, counted and dropped otherwise).
 * Connections: only with a descriptor from the process's client budget
 * (base/fd_budget.h, shared with the Kafka listeners; beyond it new ones
 * wait in the listen backlog), at most limits->max_connections_per_ip from
 * one client address (beyond it a new one is closed at once); a request's
 * headers must arrive within limits->header_timeout_ms of the connection
 * (LS_HTTP_IDLE_TIMEOUT_S of the previous response on a kept-alive one) and
 * its body within limits->body_timeout_ms of the headers, else the
 * connection is closed; idle connections (a response the client does not
 * read) are closed after LS_HTTP_IDLE_TIMEOUT_S. Together they keep a
 * slowloris (connections sending a byte now and then, which an idle timeout
 * never catches) from holding slots: /health and the catalog stay reachable
 * from any other address.
 *
 * Paths reach handlers undecoded (percent escapes intact), so an escaped
 * '/' (%2F) inside a segment never splits it; handlers decode each segment
 * with ls_url_decode (base/url.h). The query string is handed over raw as well
 * (ls_url_query_get). */
#ifndef LS_HTTP_SERVER_H
#define LS_HTTP_SERVER_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/status.h"

#define LS_HTTP_MAX_HEADER_BYTES (32 * 1024)
#define LS_HTTP_MAX_PATH 8192
#define LS_HTTP_MAX_BODY (1024 * 1024)
#define LS_HTTP_IDLE_TIMEOUT_S 60
#define LS_HTTP_THREADS 4

typedef struct ls_http_request {
    const char *method;    /* "GET", "HEAD", "POST", ... */
    const char *path;      /* raw, starts with '/', no query */
    const char *query;     /* raw "k=v&k2=v2" (may be empty, never NULL) */
    size_t body_len;       /* bytes of request body received */
    const char *body;      /* the body, NUL-terminated, when the mount takes bodies; else NULL */
    const char *accept;    /* the Accept header, or NULL (content negotiation: /metrics) */
    const char *peer;      /* the client's address (numeric), for ACL host matching */
    const char *principal; /* authenticated ("User:alice"), or NULL when the listener has no
                            * authentication */
} ls_http_request_t;

typedef struct ls_http_response {
    int status;
    const char *content_type; /* static string; default application/json */
    ls_buf_t body;            /* initialized by the server */
} ls_http_response_t;

typedef void (*ls_http_handler_fn)(void *arg, const ls_http_request_t *req,
                                   ls_http_response_t *resp);

typedef struct ls_http_mount {
    const char *prefix; /* e.g. "/v1": matches "/v1" and "/v1/..."; "" matches every path */
    ls_http_handler_fn fn;
    void *arg;
    int takes_body; /* buffer request bodies (up to LS_HTTP_MAX_BODY) for fn */
} ls_http_mount_t;

typedef struct ls_http_server ls_http_server_t;

/* From the broker's configuration (http.* keys). */
typedef struct ls_http_limits {
    int64_t header_timeout_ms;      /* http.header.timeout.ms */
    int64_t body_timeout_ms;        /* http.body.timeout.ms */
    int64_t max_connections_per_ip; /* http.max.connections.per.ip */
} ls_http_limits_t;

/* Client certificates on an HTTPS listener (<prefix>.ssl.client.auth). */
typedef enum {
    LS_HTTP_CLIENT_AUTH_NONE,
    LS_HTTP_CLIENT_AUTH_REQUESTED, /* verified against the truststore when sent */
    LS_HTTP_CLIENT_AUTH_REQUIRED,  /* a request without a verified one is refused (403) */
} ls_http_client_auth;

/* The authentication hook: the one place a request's credentials are judged.
 * authorization is the request's Authorization header (NULL when absent).
 * Returns true with the principal ("User:alice") in principal, or false with
 * the reason (for the 401 body and the log) in reason. Called on the HTTP
 * worker threads, concurrently: the function must be thread-safe. */
typedef bool (*ls_http_auth_fn)(void *arg, const char *authorization, char *principal, size_t pcap,
                                char *reason, size_t rcap);

/* TLS and authentication of one listener (http.ssl.*, http.authentication;
 * schema.registry.*). Zeroed: plain HTTP, no authentication. */
typedef struct ls_http_security {
    const char *cert_pem;       /* certificate chain, leaf first (PEM); NULL: plain HTTP */
    const char *key_pem;        /* its private key (PEM) */
    const char *truststore_pem; /* CA certificates for client certificates; NULL: none */
    ls_http_client_auth client_auth;
    ls_http_auth_fn auth; /* NULL: every request is anonymous */
    void *auth_arg;
    const char *realm;     /* WWW-Authenticate: Basic realm="..." */
    bool challenge_basic;  /* a 401 offers Basic (WWW-Authenticate) */
    bool challenge_bearer; /* a 401 offers Bearer (RFC 6750) */
    bool registry_errors;  /* 401/403 bodies in the schema registry's shape, not Iceberg's */
} ls_http_security_t;

/* Binds host:port (port 0: a free port) and starts serving. mounts[] is
 * copied. NULL with a reason in err naming the setting `key` (e.g.
 * "http.listen: cannot listen on ...: Address already in use"). */
ls_http_server_t *ls_http_server_start(const char *key, const char *host, int port,
                                       const ls_http_mount_t *mounts, size_t nmounts,
                                       const ls_http_limits_t *limits,
                                       const ls_http_security_t *sec, char *err, size_t errlen);
int ls_http_server_port(const ls_http_server_t *s);
/* Stops accepting, waits for running handlers, closes every connection. */
/* Serves new connections with this certificate chain, key and truststore
 * (PEM; SIGHUP): those already open finish with the old ones. Does nothing
 * on a plain HTTP listener. LS_EINVAL with a reason (the listener keeps its
 * current certificate) if libmicrohttpd refuses them. Any thread but the
 * server's own. */
ls_status ls_http_server_reload_tls(ls_http_server_t *s, const char *cert_pem, const char *key_pem,
                                    const char *truststore_pem, char *err, size_t errlen);
void ls_http_server_stop(ls_http_server_t *s);

/* Adds {"error": {"message", "type", "code"}} (the Iceberg REST ErrorModel,
 * used for every error this server writes) and sets the status. */
void ls_http_error(ls_http_response_t *resp, int code, const char *type, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Sets the status and body (compact JSON) from body, which it takes (a
 * jansson json_t; NULL, a value jansson refused, answers 500). */
struct json_t;
void ls_http_send_json(ls_http_response_t *resp, int status, struct json_t *body);
#endif
