/* HTTP server on libmicrohttpd; contract and threads in http_server.h.
 *
 * Per request: libmicrohttpd calls on_request once with the headers (we
 * allocate the request state), then once per chunk of body (buffered when
 * the path's mount takes bodies, else counted and dropped), then once more
 * with no data: the request is complete and is dispatched to /health or a
 * mount. The state is freed by the completion callback, whatever happened to
 * the request. A body over LS_HTTP_MAX_BODY (by Content-Length or as a
 * chunked body grows) is read and dropped, and answered 413 once it is all
 * in: answering before the body was read made the close reset the
 * connection, and clients saw a reset, not the 413 (issue 29). A client that
 * sent "Expect: 100-continue" is answered 413 at once (it sends no body).
 *
 * Accepting (issue 29): libmicrohttpd's own accept loop spun on EMFILE,
 * logging each attempt, and took descriptors the stores needed. So the
 * listening socket is ours (bound here also so that bind errors carry
 * errno's text and port 0 reveals its port): one thread per server
 * (accept_main) accepts only with a descriptor from the process's client
 * budget (base/fd_budget.h, shared with the Kafka listeners; at the budget
 * new connections wait in the backlog), hands each socket to libmicrohttpd
 * (MHD_add_connection), and on EMFILE/ENFILE sheds the pending connection
 * with a spare descriptor and pauses 100 ms doubling to 2 s, as the Kafka
 * listener does. Descriptor accounting: the accept thread takes a unit
 * before accept; the unit passes to the connection at libmicrohttpd's
 * STARTED notification (handoff, under mu) and is given back at CLOSED; a
 * socket libmicrohttpd refused (per-address limit) never starts, and its
 * unit is given back at once.
 *
 * Deadlines (issue 29): libmicrohttpd's timeout is an idle one, so a client
 * sending a header byte now and then kept its connection forever. Each
 * connection (hconn_t, registered from STARTED to CLOSED) has a phase and a
 * deadline: HEADERS until on_request's first call (http.header.timeout.ms
 * from the connection, LS_HTTP_IDLE_TIMEOUT_S from the previous response on
 * a kept-alive one), BODY until its last call (http.body.timeout.ms), none
 * while a handler runs or the response is sent (libmicrohttpd's idle timeout
 * covers a client that does not read). The same accept thread sweeps them
 * and shuts an overdue socket down (libmicrohttpd then sees EOF and closes
 * it). This is safe against descriptor reuse because libmicrohttpd notifies
 * CLOSED before it closes the socket, and both the sweep and CLOSED hold mu.
 *
 * Security (issue 30): with a keystore the daemon speaks TLS (GnuTLS inside
 * libmicrohttpd; the handshake happens on the connections we hand over like
 * any other). A complete request other than /health is then checked, before
 * any mount sees it: the client certificate (when client auth is requested
 * or required, verified against the truststore) and the authentication hook
 * (sec.auth, given the Authorization header). A refusal is answered in the
 * listener's error shape (Iceberg's ErrorModel, or the schema registry's)
 * with WWW-Authenticate on a 401, so browsers prompt for credentials.
 * /health stays open for load balancers. The PEM texts are copied: the
 * daemon reads them for as long as it runs.
 *
 * Certificate reload (SIGHUP, ls_http_server_reload_tls): libmicrohttpd
 * cannot swap a running daemon's credentials, but the accept loop is ours,
 * so a reload starts a second daemon with the new PEM texts (a "generation",
 * gen_t) and makes it current under mu; new connections go to it, those of
 * the old one finish where they are. Only the accept thread adds
 * connections to a daemon and only it stops a retired one (gen_reap), so a
 * daemon is never stopped while a connection is being handed to it. A
 * retired daemon stops once it has had no connection for RETIRE_MIN_MS, or
 * after RETIRE_MAX_MS whatever it holds (past every deadline a request
 * has); ls_http_server_stop stops them all.
 *
 * The unescape callback is the identity: paths and query strings stay raw
 * until a handler decodes the parts it has split out. */
#include "http/http_server.h"

#include <errno.h>
#include <fcntl.h>
#include <gnutls/gnutls.h>
#include <jansson.h>
#include <microhttpd.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/diag.h"
#include "base/fd_budget.h"
#include "base/loop_lag.h"
#include "base/thread.h"
#include "base/utf8.h"

#define ACCEPT_BATCH 64
#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 2000
#define BUDGET_RETRY_MS 100 /* at the descriptor budget: look again this often */
#define RETIRE_MIN_MS 1000  /* a retired daemon idle this long is stopped */
#define RETIRE_MAX_MS ((int64_t)LS_HTTP_IDLE_TIMEOUT_S * 2000) /* and any after this */

typedef enum { PHASE_HEADERS, PHASE_BODY, PHASE_BUSY } hphase_t;

typedef struct hconn {
    struct hconn *next, *prev;
    int fd;
    char peer[64];
    hphase_t phase;
    int64_t deadline_ms; /* monotonic, for HEADERS and BODY */
    bool counted;        /* holds a unit of the descriptor budget */
    bool cut;            /* shut down by the sweep */
} hconn_t;

/* One libmicrohttpd daemon and the PEM texts it reads while it runs. */
typedef struct gen {
    struct MHD_Daemon *d;
    char *cert_pem, *key_pem, *trust_pem;
    int64_t retired_ms; /* monotonic time it stopped being current */
    int64_t idle_since; /* monotonic time it was first seen empty (0: not yet) */
    struct gen *next;   /* the retired list */
} gen_t;

struct ls_http_server {
    gen_t *cur;     /* the daemon new connections go to (mu) */
    gen_t *retired; /* older daemons finishing their connections (mu) */
    ls_http_mount_t *mounts;
    size_t nmounts;
    int port;
    const char *key; /* the listen setting, for log lines */
    ls_http_limits_t limits;
    int listen_fd;
    int spare_fd; /* kept for shedding a connection on EMFILE (-1: none) */
    int wake[2];  /* pipe: stop the accept thread */
    pthread_t accept_thread;
    bool thread_started;
    pthread_mutex_t mu;     /* conns, handoff, hconn phases */
    hconn_t conns;          /* sentinel of the registered connections */
    int handoff;            /* budget units of accepted sockets not yet STARTED */
    ls_http_security_t sec; /* cert_pem, truststore_pem and realm are our copies */
};

typedef struct req_state {
    size_t body_len;
    int rejected; /* over LS_HTTP_MAX_BODY: drop the body, answer 413 */
    int keep;     /* the path's mount takes bodies: body holds them */
    ls_buf_t body;
} req_state_t;

/* A JSON string of s; bytes that are not UTF-8 (names echoed from a
 * request may hold anything) become U+FFFD. */
static void json_str(ls_buf_t *b, const char *s)
{
    const uint8_t *p = (const uint8_t *)s;
    size_t n = strlen(s);
    ls_buf_append_u8(b, '"');
    for (size_t i = 0; i < n;) {
        uint8_t c = p[i];
        size_t k = ls_utf8_seq_len(p + i, n - i);
        if (c == '"' || c == '\\')
            ls_buf_printf(b, "\\%c", c);
        else if (c < 0x20)
            ls_buf_printf(b, "\\u%04x", c);
        else if (k)
            ls_buf_append(b, p + i, k);
        else
            ls_buf_printf(b, "\\ufffd");
        i += k ? k : 1;
    }
    ls_buf_append_u8(b, '"');
}

void ls_http_error(ls_http_response_t *resp, int code, const char *type, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    resp->status = code;
    resp->content_type = "application/json";
    resp->body.len = 0;
    ls_buf_printf(&resp->body, "{\"error\":{\"message\":");
    json_str(&resp->body, msg);
    ls_buf_printf(&resp->body, ",\"type\":\"%s\",\"code\":%d}}", type, code);
}

void ls_http_send_json(ls_http_response_t *resp, int status, json_t *body)
{
    if (!body) { /* jansson refused a value (e.g. not UTF-8) */
        ls_http_error(resp, 500, "InternalServerError", "response could not be encoded");
        return;
    }
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    resp->status = status;
    resp->content_type = "application/json";
    resp->body.len = 0;
    ls_buf_append(&resp->body, text, strlen(text));
    free(text);
}

/* ---- libmicrohttpd callbacks ----------------------------------------------- */

static size_t keep_escaped(void *cls, struct MHD_Connection *c, char *s) { return strlen(s); }

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    char line[512];
    vsnprintf(line, sizeof line, fmt, ap);
    size_t n = strlen(line);
    while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
        line[--n] = 0;
    /* at most one line per interval, whatever libmicrohttpd repeats */
    LS_WARN_RL("http", "%s", line);
}

static enum MHD_Result add_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                               const char *value)
{
    ls_buf_t *q = cls;
    if (q->len) ls_buf_append_u8(q, '&');
    ls_buf_printf(q, "%s", key);
    if (value) ls_buf_printf(q, "=%s", value);
    return MHD_YES;
}

/* sec NULL: no challenge on a 401 (the listener takes no credentials). */
static enum MHD_Result send_response(struct MHD_Connection *c, ls_http_response_t *resp,
                                     const ls_http_security_t *sec)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(resp->body.len, resp->body.data, MHD_RESPMEM_MUST_COPY);
    if (!r) return MHD_NO;
    if (resp->status != 204)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
                                resp->content_type ? resp->content_type : "application/json");
    char challenge[200];
    if (resp->status == 401 && sec && sec->challenge_basic) {
        snprintf(challenge, sizeof challenge, "Basic realm=\"%s\", charset=\"UTF-8\"", sec->realm);
        MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, challenge);
    }
    if (resp->status == 401 && sec && sec->challenge_bearer) {
        snprintf(challenge, sizeof challenge, "Bearer realm=\"%s\"", sec->realm);
        MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, challenge);
    }
    enum MHD_Result rc = MHD_queue_response(c, (unsigned)resp->status, r);
    MHD_destroy_response(r);
    return rc;
}

static const ls_http_mount_t *find_mount(const ls_http_server_t *s, const char *path)
{
    for (size_t i = 0; i < s->nmounts; i++) {
        size_t n = strlen(s->mounts[i].prefix);
        if (!strncmp(path, s->mounts[i].prefix, n) && (path[n] == 0 || path[n] == '/' || n == 0))
            return &s->mounts[i];
    }
    return NULL;
}

static void dispatch(ls_http_server_t *s, const ls_http_request_t *req, ls_http_response_t *resp)
{
    size_t plen = strlen(req->path);
    if (plen > LS_HTTP_MAX_PATH) {
        ls_http_error(resp, 414, "BadRequestException", "path longer than %d bytes",
                      LS_HTTP_MAX_PATH);
        return;
    }
    if (!strcmp(req->path, "/health")) {
        if (strcmp(req->method, "GET") && strcmp(req->method, "HEAD")) {
            ls_http_error(resp, 405, "MethodNotAllowedException", "/health takes GET or HEAD");
            return;
        }
        resp->status = 200;
        ls_buf_printf(&resp->body, "{\"status\":\"ok\"");
        ls_loop_lag_status_t lag;
        ls_loop_lag_get(&lag);
        if (lag.started) /* served off the loop: a stall in progress shows in current_ms */
            ls_buf_printf(&resp->body,
                          ",\"loop\":{\"lag_ms\":%lld,\"max_lag_ms\":%lld,\"current_ms\":%lld,"
                          "\"slow_iterations\":%llu}",
                          (long long)lag.recent_ms, (long long)lag.max_ms,
                          (long long)lag.current_ms, (unsigned long long)lag.slow);
        ls_buf_append_u8(&resp->body, '}');
        return;
    }
    const ls_http_mount_t *m = find_mount(s, req->path);
    if (m) {
        m->fn(m->arg, req, resp);
        return;
    }
    ls_http_error(resp, 404, "NotFoundException", "no resource at %.200s", req->path);
}

/* The registered connection of c (NULL if it never STARTED). */
static hconn_t *hconn_of(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

static void hconn_phase(ls_http_server_t *s, struct MHD_Connection *c, hphase_t phase,
                        int64_t within_ms)
{
    hconn_t *h = hconn_of(c);
    if (!h) return;
    pthread_mutex_lock(&s->mu);
    h->phase = phase;
    h->deadline_ms = ls_clock_mono_ms() + within_ms;
    pthread_mutex_unlock(&s->mu);
}

static enum MHD_Result send_413(struct MHD_Connection *c)
{
    ls_http_response_t resp = {.status = 200};
    ls_buf_init(&resp.body);
    ls_http_error(&resp, 413, "BadRequestException", "request body over %d bytes",
                  LS_HTTP_MAX_BODY);
    enum MHD_Result rc = send_response(c, &resp, NULL);
    ls_buf_free(&resp.body);
    return rc;
}

/* A refusal (401, 403) in the listener's error shape. */
static void refuse(const ls_http_server_t *s, ls_http_response_t *resp, int code,
                   const char *reason)
{
    if (s->sec.registry_errors) {
        /* the Confluent registry's: 40101 unauthenticated, 40301 forbidden */
        json_t *j = json_pack("{s:i, s:s}", "error_code", code * 100 + 1, "message", reason);
        ls_http_send_json(resp, code, j);
        return;
    }
    ls_http_error(resp, code, code == 401 ? "NotAuthorizedException" : "ForbiddenException", "%s",
                  reason);
}

/* The client certificate the listener asks for: NULL when acceptable, else
 * why not. */
static const char *check_client_cert(const ls_http_server_t *s, struct MHD_Connection *c)
{
    if (!s->sec.cert_pem || s->sec.client_auth == LS_HTTP_CLIENT_AUTH_NONE) return NULL;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    gnutls_session_t tls = ci ? (gnutls_session_t)ci->tls_session : NULL;
    unsigned n = 0;
    if (!tls || !gnutls_certificate_get_peers(tls, &n) || n == 0)
        return s->sec.client_auth == LS_HTTP_CLIENT_AUTH_REQUIRED
                   ? "a client certificate is required"
                   : NULL;
    unsigned status = 0;
    if (gnutls_certificate_verify_peers2(tls, &status) != GNUTLS_E_SUCCESS || status != 0)
        return "the client certificate is not trusted";
    return NULL;
}

/* Whether the request may reach its mount; if not, resp holds the refusal.
 * principal receives the authenticated principal. */
static bool admit(ls_http_server_t *s, struct MHD_Connection *c, const char *path,
                  ls_http_response_t *resp, char *principal, size_t pcap)
{
    if (!strcmp(path, "/health")) return true;
    const char *why = check_client_cert(s, c);
    if (why) {
        refuse(s, resp, 403, why);
        return false;
    }
    if (!s->sec.auth) return true;
    char reason[200] = "authentication failed";
    const char *authz =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (s->sec.auth(s->sec.auth_arg, authz, principal, pcap, reason, sizeof reason)) return true;
    const hconn_t *h = hconn_of(c);
    LS_WARN_RL("http", "%s: unauthenticated request from %s refused: %s", s->key, h ? h->peer : "?",
               reason);
    refuse(s, resp, 401, reason);
    return false;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
    ls_http_server_t *s = cls;
    req_state_t *st = *con_cls;
    if (!st) {
        hconn_phase(s, c, PHASE_BODY, s->limits.body_timeout_ms);
        *con_cls = st = LS_NEW(req_state_t);
        ls_buf_init(&st->body);
        const ls_http_mount_t *m = strlen(url) <= LS_HTTP_MAX_PATH ? find_mount(s, url) : NULL;
        st->keep = m && m->takes_body;
        const char *cl =
            MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl && strtoull(cl, NULL, 10) > LS_HTTP_MAX_BODY) {
            st->rejected = 1;
            /* a client waiting for 100 Continue sends no body: answer now */
            if (MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_EXPECT))
                return send_413(c);
        }
        return MHD_YES;
    }
    if (*upload_data_size) {
        st->body_len += *upload_data_size;
        if (st->body_len > LS_HTTP_MAX_BODY) st->rejected = 1;
        if (st->keep && !st->rejected) ls_buf_append(&st->body, upload_data, *upload_data_size);
        *upload_data_size = 0;
        return MHD_YES;
    }
    hconn_phase(s, c, PHASE_BUSY, 0);
    if (st->rejected) return send_413(c);
    ls_http_response_t resp = {.status = 200};
    ls_buf_init(&resp.body);
    ls_buf_t query;
    ls_buf_init(&query);
    MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, add_arg, &query);
    ls_buf_append_u8(&query, 0);
    if (st->keep) {
        ls_buf_append_u8(&st->body, 0);
        st->body.len--;
    }
    ls_http_request_t req = {
        .method = method,
        .path = url,
        .query = (const char *)query.data,
        .body_len = st->body_len,
        .body = st->keep ? (const char *)st->body.data : NULL,
        .accept = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT)};
    char principal[300] = "";
    if (admit(s, c, url, &resp, principal, sizeof principal)) {
        req.principal = s->sec.auth ? principal : NULL;
        const hconn_t *h = hconn_of(c);
        req.peer = h ? h->peer : "";
        dispatch(s, &req, &resp);
    }
    if (resp.status >= 500)
        LS_WARN("http", "%s %.200s -> %d %.*s", method, url, resp.status,
                (int)(resp.body.len > 300 ? 300 : resp.body.len), (const char *)resp.body.data);
    enum MHD_Result rc = send_response(c, &resp, s->sec.auth ? &s->sec : NULL);
    ls_buf_free(&query);
    ls_buf_free(&resp.body);
    return rc;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    ls_http_server_t *s = cls;
    req_state_t *st = *con_cls;
    if (st) ls_buf_free(&st->body);
    ls_free(st);
    *con_cls = NULL;
    /* a kept-alive connection: the next request's headers */
    hconn_phase(s, c, PHASE_HEADERS, (int64_t)LS_HTTP_IDLE_TIMEOUT_S * 1000);
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    ls_http_server_t *s = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        hconn_t *h = LS_NEW(hconn_t);
        const union MHD_ConnectionInfo *fi =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        h->fd = fi ? fi->connect_fd : -1;
        const union MHD_ConnectionInfo *ai =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        char host[48] = "?";
        if (ai && ai->client_addr)
            getnameinfo(ai->client_addr,
                        ai->client_addr->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                                               : sizeof(struct sockaddr_in),
                        host, sizeof host, NULL, 0, NI_NUMERICHOST);
        snprintf(h->peer, sizeof h->peer, "%s", host);
        h->phase = PHASE_HEADERS;
        h->deadline_ms = ls_clock_mono_ms() + s->limits.header_timeout_ms;
        pthread_mutex_lock(&s->mu);
        if (s->handoff > 0) {
            s->handoff--;
            h->counted = true;
        }
        h->next = s->conns.next;
        h->prev = &s->conns;
        s->conns.next->prev = h;
        s->conns.next = h;
        pthread_mutex_unlock(&s->mu);
        *socket_context = h;
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
        hconn_t *h = *socket_context;
        if (!h) return;
        pthread_mutex_lock(&s->mu);
        h->prev->next = h->next;
        h->next->prev = h->prev;
        pthread_mutex_unlock(&s->mu);
        if (h->counted) ls_fd_budget_give();
        ls_free(h);
        *socket_context = NULL;
    }
}

/* ---- accepting and deadlines (the accept thread) ---------------------------- */

/* Shuts down connections past their phase's deadline. */
static void sweep_deadlines(ls_http_server_t *s)
{
    int64_t now = ls_clock_mono_ms();
    pthread_mutex_lock(&s->mu);
    for (hconn_t *h = s->conns.next; h != &s->conns; h = h->next) {
        if (h->cut || h->phase == PHASE_BUSY || now < h->deadline_ms || h->fd < 0) continue;
        h->cut = true;
        shutdown(h->fd, SHUT_RDWR);
        LS_WARN_RL("http",
                   "%s: closing a connection from %s: its request's %s did not arrive in "
                   "time (%s=%lld)",
                   s->key, h->peer, h->phase == PHASE_HEADERS ? "headers" : "body",
                   h->phase == PHASE_HEADERS ? "http.header.timeout.ms" : "http.body.timeout.ms",
                   (long long)(h->phase == PHASE_HEADERS ? s->limits.header_timeout_ms
                                                         : s->limits.body_timeout_ms));
    }
    pthread_mutex_unlock(&s->mu);
}

/* The descriptor table is full: shed the pending connection with the spare
 * descriptor (the client sees a reset, not a hang); the caller pauses. */
static void accept_exhausted(ls_http_server_t *s, int err, int64_t pause_ms)
{
    if (s->spare_fd >= 0) {
        close(s->spare_fd);
        s->spare_fd = -1;
        int fd = accept4(s->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) close(fd);
        s->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    }
    LS_WARN_RL("http",
               "%s: accept: %s (%lld client connections open): refusing new connections for "
               "%lld ms; raise the descriptor limit (ulimit -n)",
               s->key, strerror(err), (long long)ls_fd_budget_used(), (long long)pause_ms);
}

/* Accepts what the budget allows; returns a pause in ms (0: none). */
static int64_t accept_some(ls_http_server_t *s, int64_t *last_backoff)
{
    for (int i = 0; i < ACCEPT_BATCH; i++) {
        if (!ls_fd_budget_take()) return BUDGET_RETRY_MS;
        struct sockaddr_storage ss;
        socklen_t sl = sizeof ss;
        int fd = accept4(s->listen_fd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            int err = errno;
            ls_fd_budget_give();
            if (err == EINTR || err == ECONNABORTED || err == EPROTO) continue;
            if (err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM) {
                int64_t next = *last_backoff ? *last_backoff * 2 : BACKOFF_MIN_MS;
                *last_backoff = next > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : next;
                accept_exhausted(s, err, *last_backoff);
                return *last_backoff;
            }
            if (err != EAGAIN && err != EWOULDBLOCK)
                LS_WARN_RL("http", "%s: accept failed: %s", s->key, strerror(err));
            return 0;
        }
        *last_backoff = 0;
        pthread_mutex_lock(&s->mu);
        s->handoff++;
        struct MHD_Daemon *d = s->cur->d;
        pthread_mutex_unlock(&s->mu);
        if (MHD_add_connection(d, fd, (struct sockaddr *)&ss, sl) != MHD_YES) {
            /* refused (e.g. the per-address limit) and closed: it never starts */
            pthread_mutex_lock(&s->mu);
            bool give = s->handoff > 0;
            if (give) s->handoff--;
            pthread_mutex_unlock(&s->mu);
            if (give) ls_fd_budget_give();
        }
    }
    return 0;
}

static void gen_free(gen_t *g)
{
    if (!g) return;
    if (g->d) MHD_stop_daemon(g->d); /* CLOSED for every connection: units given back */
    ls_free(g->cert_pem);
    ls_free(g->key_pem);
    ls_free(g->trust_pem);
    ls_free(g);
}

/* Stops the retired daemons that are done (accept thread only: see the
 * design note). */
static void gen_reap(ls_http_server_t *s)
{
    int64_t now = ls_clock_mono_ms();
    gen_t *done = NULL;
    pthread_mutex_lock(&s->mu);
    for (gen_t **p = &s->retired; *p;) {
        gen_t *g = *p;
        const union MHD_DaemonInfo *di =
            MHD_get_daemon_info(g->d, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
        bool empty = di && di->num_connections == 0;
        if (!empty) g->idle_since = 0;
        if (empty && !g->idle_since) g->idle_since = now;
        if ((empty && now - g->idle_since >= RETIRE_MIN_MS) ||
            now - g->retired_ms >= RETIRE_MAX_MS) {
            *p = g->next;
            g->next = done;
            done = g;
        } else {
            p = &g->next;
        }
    }
    pthread_mutex_unlock(&s->mu);
    while (done) {
        gen_t *next = done->next;
        gen_free(done);
        done = next;
    }
}

static void *accept_main(void *arg)
{
    ls_http_server_t *s = arg;
    int64_t sweep_ms = s->limits.header_timeout_ms < s->limits.body_timeout_ms
                           ? s->limits.header_timeout_ms
                           : s->limits.body_timeout_ms;
    sweep_ms = sweep_ms / 10 < 50 ? 50 : sweep_ms / 10 > 1000 ? 1000 : sweep_ms / 10;
    int64_t last_backoff = 0, paused_until = 0, next_sweep = 0;
    for (;;) {
        int64_t now = ls_clock_mono_ms();
        if (now >= next_sweep) {
            sweep_deadlines(s);
            gen_reap(s);
            next_sweep = now + sweep_ms;
        }
        bool listen = now >= paused_until;
        int64_t wait = next_sweep - now;
        if (!listen && paused_until - now < wait) wait = paused_until - now;
        struct pollfd pf[2] = {{.fd = s->wake[0], .events = POLLIN},
                               {.fd = s->listen_fd, .events = POLLIN}};
        int n = poll(pf, listen ? 2 : 1, (int)(wait > 0 ? wait : 0));
        if (n < 0 && errno != EINTR) {
            LS_WARN_RL("http", "%s: poll failed: %s", s->key, strerror(errno));
            continue;
        }
        if (pf[0].revents) break; /* stopping */
        if (listen && (pf[1].revents & POLLIN)) {
            int64_t pause = accept_some(s, &last_backoff);
            if (pause) paused_until = ls_clock_mono_ms() + pause;
        }
    }
    return NULL;
}

/* ---- lifecycle ------------------------------------------------------------- */

/* A listening socket on host:port in *fd (left as it is on failure), its
 * port in *bound_port: LS_EINVAL when host does not resolve, LS_EIO when the
 * socket cannot listen. */
static ls_status bind_listener(const char *key, const char *host, int port, int *fd_out,
                               int *bound_port, char *err, size_t errlen)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    char ps[16];
    snprintf(ps, sizeof ps, "%d", port);
    struct addrinfo *ai = NULL;
    int gai = getaddrinfo(host, ps, &hints, &ai);
    if (gai) {
        snprintf(err, errlen, "%s: cannot resolve '%s': %s", key, host, gai_strerror(gai));
        return LS_EINVAL;
    }
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    int one = 1;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) ||
        bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 128)) {
        snprintf(err, errlen, "%s: cannot listen on %s:%d: %s", key, host, port, strerror(errno));
        if (fd >= 0) close(fd);
        freeaddrinfo(ai);
        return LS_EIO;
    }
    freeaddrinfo(ai);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    getsockname(fd, (struct sockaddr *)&ss, &sl);
    *bound_port = ss.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
                                           : ntohs(((struct sockaddr_in *)&ss)->sin_port);
    *fd_out = fd;
    return LS_OK;
}

static void server_free(ls_http_server_t *s)
{
    if (s->thread_started) {
        ssize_t w = write(s->wake[1], "x", 1);
        (void)w; /* a full pipe is already a wake-up */
        pthread_join(s->accept_thread, NULL);
    }
    gen_free(s->cur);
    while (s->retired) {
        gen_t *next = s->retired->next;
        gen_free(s->retired);
        s->retired = next;
    }
    if (s->handoff > 0)
        for (; s->handoff > 0; s->handoff--)
            ls_fd_budget_give();
    if (s->listen_fd >= 0) close(s->listen_fd);
    if (s->spare_fd >= 0) close(s->spare_fd);
    if (s->wake[0] >= 0) close(s->wake[0]);
    if (s->wake[1] >= 0) close(s->wake[1]);
    pthread_mutex_destroy(&s->mu);
    ls_free((char *)s->sec.cert_pem);
    ls_free((char *)s->sec.key_pem);
    ls_free((char *)s->sec.truststore_pem);
    ls_free((char *)s->sec.realm);
    ls_free(s->mounts);
    ls_free(s);
}

/* A daemon serving with these PEM texts (cert NULL: plain HTTP); NULL if
 * libmicrohttpd refused them. */
static gen_t *gen_start(ls_http_server_t *s, const char *cert, const char *key, const char *trust)
{
    gen_t *g = LS_NEW(gen_t);
    g->cert_pem = cert ? ls_strdup(cert) : NULL;
    g->key_pem = key ? ls_strdup(key) : NULL;
    g->trust_pem = trust ? ls_strdup(trust) : NULL;
    struct MHD_OptionItem tls_opts[] = {
        {MHD_OPTION_HTTPS_MEM_KEY, 0, g->key_pem},
        {MHD_OPTION_HTTPS_MEM_CERT, 0, g->cert_pem},
        {g->trust_pem ? MHD_OPTION_HTTPS_MEM_TRUST : MHD_OPTION_END, 0, g->trust_pem},
        {MHD_OPTION_END, 0, NULL}};
    if (!g->cert_pem) tls_opts[0].option = MHD_OPTION_END;
    /* the descriptor budget bounds connections, all listeners together */
    g->d = MHD_start_daemon(
        MHD_USE_AUTO | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG | MHD_USE_ITC |
            MHD_USE_NO_LISTEN_SOCKET | (g->cert_pem ? MHD_USE_TLS : 0),
        0, NULL, NULL, on_request, s, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
        MHD_OPTION_THREAD_POOL_SIZE, (unsigned)LS_HTTP_THREADS, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
        (size_t)LS_HTTP_MAX_HEADER_BYTES, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned)ls_fd_budget_total(), MHD_OPTION_PER_IP_CONNECTION_LIMIT,
        (unsigned)s->limits.max_connections_per_ip, MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned)LS_HTTP_IDLE_TIMEOUT_S, MHD_OPTION_UNESCAPE_CALLBACK, keep_escaped, NULL,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_NOTIFY_CONNECTION, on_connection,
        s, MHD_OPTION_ARRAY, tls_opts, MHD_OPTION_END);
    if (!g->d) {
        gen_free(g);
        return NULL;
    }
    return g;
}

ls_http_server_t *ls_http_server_start(const char *key, const char *host, int port,
                                       const ls_http_mount_t *mounts, size_t nmounts,
                                       const ls_http_limits_t *limits,
                                       const ls_http_security_t *sec, char *err, size_t errlen)
{
    ls_http_server_t *s = LS_NEW(ls_http_server_t);
    s->key = key;
    s->limits = *limits;
    s->listen_fd = s->spare_fd = s->wake[0] = s->wake[1] = -1;
    s->conns.next = s->conns.prev = &s->conns;
    pthread_mutex_init(&s->mu, NULL);
    s->mounts = LS_NEWN(ls_http_mount_t, nmounts ? nmounts : 1);
    memcpy(s->mounts, mounts, nmounts * sizeof *mounts);
    s->nmounts = nmounts;
    if (sec) {
        s->sec = *sec;
        s->sec.cert_pem = sec->cert_pem ? ls_strdup(sec->cert_pem) : NULL;
        s->sec.key_pem = sec->key_pem ? ls_strdup(sec->key_pem) : NULL;
        s->sec.truststore_pem = sec->truststore_pem ? ls_strdup(sec->truststore_pem) : NULL;
        s->sec.realm = ls_strdup(sec->realm ? sec->realm : "lakestream");
    }
    if (s->sec.cert_pem && MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
        snprintf(err, errlen, "%s: this libmicrohttpd has no TLS support", key);
        server_free(s);
        return NULL;
    }
    if (bind_listener(key, host, port, &s->listen_fd, &s->port, err, errlen) != LS_OK) {
        server_free(s);
        return NULL;
    }
    if (pipe2(s->wake, O_CLOEXEC | O_NONBLOCK) != 0) {
        snprintf(err, errlen, "%s: pipe: %s", key, strerror(errno));
        server_free(s);
        return NULL;
    }
    s->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    s->cur = gen_start(s, s->sec.cert_pem, s->sec.key_pem, s->sec.truststore_pem);
    if (!s->cur) {
        snprintf(err, errlen, "%s: libmicrohttpd did not start on %s:%d%s", key, host, s->port,
                 s->sec.cert_pem ? " (is the keystore a PEM private key and certificate?)" : "");
        server_free(s);
        return NULL;
    }
    if (ls_thread_start(&s->accept_thread, "ls-http-accept", accept_main, s) != 0) {
        snprintf(err, errlen, "%s: cannot start the accept thread", key);
        server_free(s);
        return NULL;
    }
    s->thread_started = true;
    return s;
}

int ls_http_server_port(const ls_http_server_t *s) { return s->port; }

ls_status ls_http_server_reload_tls(ls_http_server_t *s, const char *cert_pem, const char *key_pem,
                                    const char *truststore_pem, char *err, size_t errlen)
{
    if (!s->cur->cert_pem) return LS_OK; /* plain HTTP: nothing to reload */
    gen_t *g = gen_start(s, cert_pem, key_pem, truststore_pem);
    if (!g) {
        snprintf(err, errlen, "%s: libmicrohttpd refused the new certificate and key", s->key);
        return LS_EINVAL;
    }
    pthread_mutex_lock(&s->mu);
    gen_t *old = s->cur;
    old->retired_ms = ls_clock_mono_ms();
    old->next = s->retired;
    s->retired = old;
    s->cur = g;
    pthread_mutex_unlock(&s->mu);
    return LS_OK;
}

void ls_http_server_stop(ls_http_server_t *s)
{
    if (s) server_free(s);
}
