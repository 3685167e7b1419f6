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
 * Bounds: request line + headers within LS_HTTP_MAX_HEADER_BYTES (larger:
 * 414/431 from libmicrohttpd), path within LS_HTTP_MAX_PATH, bodies within
 * LS_HTTP_MAX_BODY (a larger Content-Length: 413; a chunked body growing past
 * it: the connection is closed; bodies are buffered only for mounts that
 * take them, counted and dropped otherwise), at most LS_HTTP_MAX_CONNECTIONS connections
 * and LS_HTTP_MAX_CONNECTIONS_PER_IP from one client address (beyond either,
 * new connections are closed at once), idle connections closed after
 * LS_HTTP_IDLE_TIMEOUT_S. The per-address bound is what keeps a slowloris
 * (many connections each sending a byte now and then, which the idle timeout
 * never catches) from taking every slot: /health and the catalog stay
 * reachable from any other address. libmicrohttpd 0.9.75 has no deadline for
 * a whole request, so one address can still hold its own slots.
 *
 * Paths reach handlers undecoded (percent escapes intact), so an escaped
 * '/' (%2F) inside a segment never splits it; handlers decode each segment
 * with ls_url_decode (base/url.h). The query string is handed over raw as well
 * (ls_url_query_get). */
#ifndef LS_HTTP_SERVER_H
#define LS_HTTP_SERVER_H
#include <stddef.h>

#include "base/buf.h"

#define LS_HTTP_MAX_HEADER_BYTES (32 * 1024)
#define LS_HTTP_MAX_PATH 8192
#define LS_HTTP_MAX_BODY (1024 * 1024)
#define LS_HTTP_MAX_CONNECTIONS 256
#define LS_HTTP_MAX_CONNECTIONS_PER_IP 16
#define LS_HTTP_IDLE_TIMEOUT_S 60
#define LS_HTTP_THREADS 4

typedef struct ls_http_request {
    const char *method; /* "GET", "HEAD", "POST", ... */
    const char *path;   /* raw, starts with '/', no query */
    const char *query;  /* raw "k=v&k2=v2" (may be empty, never NULL) */
    size_t body_len;    /* bytes of request body received */
    const char *body;   /* the body, NUL-terminated, when the mount takes bodies; else NULL */
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

/* Binds host:port (port 0: a free port) and starts serving. mounts[] is
 * copied. NULL with a reason in err naming the setting `key` (e.g.
 * "http.listen: cannot listen on ...: Address already in use"). */
ls_http_server_t *ls_http_server_start(const char *key, const char *host, int port,
                                       const ls_http_mount_t *mounts, size_t nmounts, char *err,
                                       size_t errlen);
int ls_http_server_port(const ls_http_server_t *s);
/* Stops accepting, waits for running handlers, closes every connection. */
void ls_http_server_stop(ls_http_server_t *s);

/* Adds {"error": {"message", "type", "code"}} (the Iceberg REST ErrorModel,
 * used for every error this server writes) and sets the status. */
void ls_http_error(ls_http_response_t *resp, int code, const char *type, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
#endif
