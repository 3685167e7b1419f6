/* HTTP server on libmicrohttpd; contract and threads in http_server.h.
 *
 * Per request: libmicrohttpd calls on_request once with the headers (we
 * allocate the request state; a Content-Length over LS_HTTP_MAX_BODY is
 * answered 413 right there, before any body is read), then once per chunk of
 * body (buffered when the path's mount takes bodies, else counted and
 * dropped; a chunked body that outgrows the bound closes the connection),
 * then once more with no data: the request is complete and is dispatched to
 * /health or a mount. The state
 * is freed by the completion callback, whatever happened to the request.
 *
 * The listening socket is bound here rather than by libmicrohttpd so that
 * bind errors carry errno's text and port 0 reveals its port. The unescape
 * callback is the identity: paths and query strings stay raw until a handler
 * decodes the parts it has split out. */
#include "http/http_server.h"

#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/diag.h"
#include "base/loop_lag.h"
#include "base/utf8.h"

struct ls_http_server {
    struct MHD_Daemon *d;
    ls_http_mount_t *mounts;
    size_t nmounts;
    int port;
};

typedef struct req_state {
    size_t body_len;
    int rejected; /* a 413 is queued: ignore the rest */
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

/* ---- libmicrohttpd callbacks ----------------------------------------------- */

static size_t keep_escaped(void *cls, struct MHD_Connection *c, char *s) { return strlen(s); }

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    char line[512];
    vsnprintf(line, sizeof line, fmt, ap);
    size_t n = strlen(line);
    while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
        line[--n] = 0;
    /* libmicrohttpd repeats some lines in a loop (a full descriptor table
     * makes it busy-wait, logging each attempt): at most one per interval */
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

static enum MHD_Result send_response(struct MHD_Connection *c, ls_http_response_t *resp)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(resp->body.len, resp->body.data, MHD_RESPMEM_MUST_COPY);
    if (!r) return MHD_NO;
    if (resp->status != 204)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
                                resp->content_type ? resp->content_type : "application/json");
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

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
    ls_http_server_t *s = cls;
    req_state_t *st = *con_cls;
    ls_http_response_t resp = {.status = 200};
    ls_buf_init(&resp.body);
    enum MHD_Result rc = MHD_YES;
    if (!st) {
        *con_cls = st = LS_NEW(req_state_t);
        ls_buf_init(&st->body);
        const ls_http_mount_t *m = strlen(url) <= LS_HTTP_MAX_PATH ? find_mount(s, url) : NULL;
        st->keep = m && m->takes_body;
        const char *cl =
            MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl && strtoull(cl, NULL, 10) > LS_HTTP_MAX_BODY) {
            /* refused before any of it is read (no 100 Continue is sent) */
            st->rejected = 1;
            ls_http_error(&resp, 413, "BadRequestException", "request body over %d bytes",
                          LS_HTTP_MAX_BODY);
            rc = send_response(c, &resp);
        }
        ls_buf_free(&resp.body);
        return rc;
    }
    if (*upload_data_size) {
        st->body_len += *upload_data_size;
        if (st->keep && st->body_len <= LS_HTTP_MAX_BODY)
            ls_buf_append(&st->body, upload_data, *upload_data_size);
        *upload_data_size = 0;
        ls_buf_free(&resp.body);
        /* a chunked body that outgrows the bound: drop the connection */
        return st->body_len > LS_HTTP_MAX_BODY ? MHD_NO : MHD_YES;
    }
    if (st->rejected) {
        ls_buf_free(&resp.body);
        return MHD_YES;
    }
    ls_buf_t query;
    ls_buf_init(&query);
    MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, add_arg, &query);
    ls_buf_append_u8(&query, 0);
    if (st->keep) {
        ls_buf_append_u8(&st->body, 0);
        st->body.len--;
    }
    ls_http_request_t req = {.method = method,
                             .path = url,
                             .query = (const char *)query.data,
                             .body_len = st->body_len,
                             .body = st->keep ? (const char *)st->body.data : NULL};
    dispatch(s, &req, &resp);
    if (resp.status >= 500)
        LS_WARN("http", "%s %.200s -> %d %.*s", method, url, resp.status,
                (int)(resp.body.len > 300 ? 300 : resp.body.len), (const char *)resp.body.data);
    rc = send_response(c, &resp);
    ls_buf_free(&query);
    ls_buf_free(&resp.body);
    return rc;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    req_state_t *st = *con_cls;
    if (st) ls_buf_free(&st->body);
    ls_free(st);
    *con_cls = NULL;
}

/* ---- lifecycle ------------------------------------------------------------- */

static int bind_listener(const char *key, const char *host, int port, int *bound_port, char *err,
                         size_t errlen)
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
        return -1;
    }
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    int one = 1;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) ||
        bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 128)) {
        snprintf(err, errlen, "%s: cannot listen on %s:%d: %s", key, host, port, strerror(errno));
        if (fd >= 0) close(fd);
        freeaddrinfo(ai);
        return -1;
    }
    freeaddrinfo(ai);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    getsockname(fd, (struct sockaddr *)&ss, &sl);
    *bound_port = ss.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
                                           : ntohs(((struct sockaddr_in *)&ss)->sin_port);
    return fd;
}

ls_http_server_t *ls_http_server_start(const char *key, const char *host, int port,
                                       const ls_http_mount_t *mounts, size_t nmounts, char *err,
                                       size_t errlen)
{
    ls_http_server_t *s = LS_NEW(ls_http_server_t);
    int fd = bind_listener(key, host, port, &s->port, err, errlen);
    if (fd < 0) {
        ls_free(s);
        return NULL;
    }
    s->mounts = LS_NEWN(ls_http_mount_t, nmounts ? nmounts : 1);
    memcpy(s->mounts, mounts, nmounts * sizeof *mounts);
    s->nmounts = nmounts;
    s->d = MHD_start_daemon(
        MHD_USE_AUTO | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, 0, NULL, NULL,
        on_request, s, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL, MHD_OPTION_LISTEN_SOCKET, fd,
        MHD_OPTION_THREAD_POOL_SIZE, (unsigned)LS_HTTP_THREADS, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
        (size_t)LS_HTTP_MAX_HEADER_BYTES, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned)LS_HTTP_MAX_CONNECTIONS, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
        (unsigned)LS_HTTP_MAX_CONNECTIONS_PER_IP, MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned)LS_HTTP_IDLE_TIMEOUT_S, MHD_OPTION_UNESCAPE_CALLBACK, keep_escaped, NULL,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL, MHD_OPTION_END);
    if (!s->d) {
        snprintf(err, errlen, "%s: libmicrohttpd did not start on %s:%d", key, host, s->port);
        close(fd);
        ls_free(s->mounts);
        ls_free(s);
        return NULL;
    }
    return s;
}

int ls_http_server_port(const ls_http_server_t *s) { return s->port; }

void ls_http_server_stop(ls_http_server_t *s)
{
    if (!s) return;
    MHD_stop_daemon(s->d);
    ls_free(s->mounts);
    ls_free(s);
}
