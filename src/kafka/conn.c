/* Kafka connections.
 *
 * Framing: each request is an int32 size then that many bytes. The size is
 * checked against socket.request.max.bytes before anything is allocated; the
 * frame is then read straight into its own allocation (no reassembly copy
 * for large produce requests). A broken frame or header closes the
 * connection with one diagnostic line naming api, version and byte offset.
 *
 * Ordering: Kafka requires responses in request order per connection.
 * Each request takes a slot in the connection's FIFO when it is dispatched;
 * handlers finish slots in any order; the writer sends finished slots from
 * the head only.
 *
 * Lifetime: a connection is freed when its handle is closed and no request
 * still references it (refs). A handler that finishes after the peer left
 * finds conn->closed and its response is dropped.
 *
 * Backpressure: reading stops while the log store reports pressure, or while
 * a connection has LS_CONN_MAX_INFLIGHT unanswered requests, and resumes
 * when the condition clears. Loop thread only. */
#include "kafka/conn.h"

#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/diag.h"
#include "kafka/api.h"

#define LS_CONN_MAX_INFLIGHT 256
#define SCRATCH_SIZE 65536

typedef struct slot {
    struct slot *next;
    bool done;
    bool has_response;
    ls_kw_t w;
} slot_t;

typedef struct write_req {
    uv_write_t req;
    ls_kw_t w;
    struct iovec *iov;
} write_req_t;

struct ls_kconn {
    uv_tcp_t tcp;
    ls_kafka_listener_t *l;
    struct ls_kconn *next, *prev;
    char peer[64];
    int refs;                  /* handle (1 while open) + outstanding requests */
    bool closed;
    bool reading;
    /* framing */
    uint8_t size_buf[4];
    int size_got;
    uint8_t *frame;
    size_t frame_len, frame_got;
    uint8_t *scratch;
    uint64_t frames;           /* requests seen (for diagnostics) */
    /* responses */
    slot_t *head, *tail;
    int inflight;
};

struct ls_kafka_listener {
    ls_broker_t *b;
    uv_tcp_t server;
    bool accepting;
    bool paused;
    bool quiesced;
    ls_kconn_t conns;          /* sentinel */
    int nconns;
    int port;
    void (*close_done)(void *arg);
    void *close_arg;
    bool server_closed;
};

static void conn_update_reading(ls_kconn_t *c);
static void conn_close(ls_kconn_t *c, const char *why);

/* ------------------------------------------------------------- lifecycle */

static void conn_unref(ls_kconn_t *c)
{
    if (--c->refs > 0)
        return;
    ls_kafka_listener_t *l = c->l;
    for (slot_t *s = c->head, *next; s; s = next) {
        next = s->next;
        ls_kw_free(&s->w);
        ls_free(s);
    }
    ls_free(c->frame);
    ls_free(c->scratch);
    ls_free(c);
    if (l->close_done && l->nconns == 0 && l->server_closed) {
        void (*done)(void *) = l->close_done;
        l->close_done = NULL;
        done(l->close_arg);
    }
}

static void on_conn_closed(uv_handle_t *h)
{
    ls_kconn_t *c = h->data;
    c->prev->next = c->next;
    c->next->prev = c->prev;
    c->l->nconns--;
    conn_unref(c);
}

static void conn_close(ls_kconn_t *c, const char *why)
{
    if (c->closed)
        return;
    if (why)
        LS_WARN("kafka", "closing connection from %s: %s", c->peer, why);
    c->closed = true;
    uv_close((uv_handle_t *)&c->tcp, on_conn_closed);
}

/* --------------------------------------------------------------- writing */

static void on_written(uv_write_t *req, int status)
{
    write_req_t *wr = (write_req_t *)req;
    ls_kconn_t *c = req->data;
    ls_kw_free(&wr->w);
    ls_free(wr->iov);
    ls_free(wr);
    if (status < 0 && status != UV_ECANCELED)
        conn_close(c, uv_strerror(status));
    conn_unref(c);
}

static void conn_flush(ls_kconn_t *c)
{
    while (c->head && c->head->done) {
        slot_t *s = c->head;
        c->head = s->next;
        if (!c->head)
            c->tail = NULL;
        c->inflight--;
        if (s->has_response && !c->closed) {
            write_req_t *wr = LS_NEW(write_req_t);
            wr->w = s->w;
            int n = ls_kw_iovecs(&wr->w, &wr->iov);
            uv_buf_t *bufs = (uv_buf_t *)wr->iov;   /* uv_buf_t is layout-compatible with iovec on unix */
            wr->req.data = c;
            c->refs++;
            int rc = uv_write(&wr->req, (uv_stream_t *)&c->tcp, bufs, (unsigned)n, on_written);
            if (rc < 0) {
                c->refs--;
                ls_kw_free(&wr->w);
                ls_free(wr->iov);
                ls_free(wr);
                conn_close(c, uv_strerror(rc));
            }
        } else {
            ls_kw_free(&s->w);
        }
        ls_free(s);
    }
    conn_update_reading(c);
}

/* ------------------------------------------------- request finish (api.h) */

static void req_free(ls_kreq_t *req)
{
    ls_arena_free(req->arena);
    ls_free(req->frame);
    ls_kconn_t *c = req->conn;
    ls_free(req);
    conn_unref(c);
}

void ls_kreq_begin(ls_kreq_t *req, ls_kw_t *w)
{
    ls_kw_init(w);
    ls_kw_reserve(w, 4);
    ls_kw_i32(w, req->correlation_id);
    /* response header v1 (tagged fields) for flexible versions, except
     * ApiVersions whose response header is always v0 (KIP-511) */
    if (req->flex && req->api_key != 18)
        ls_kw_tags(w, true);
}

void ls_kreq_respond(ls_kreq_t *req, ls_kw_t *w)
{
    slot_t *s = req->slot;
    ls_kw_patch_i32(w, 0, (int32_t)(w->total - 4));
    s->w = *w;
    memset(w, 0, sizeof *w);
    s->has_response = true;
    s->done = true;
    ls_kconn_t *c = req->conn;
    c->refs++;
    req_free(req);
    conn_flush(c);
    conn_unref(c);
}

void ls_kreq_no_response(ls_kreq_t *req)
{
    slot_t *s = req->slot;
    s->done = true;
    ls_kconn_t *c = req->conn;
    c->refs++;
    req_free(req);
    conn_flush(c);
    conn_unref(c);
}

void ls_kreq_fail(ls_kreq_t *req, const char *why)
{
    char msg[320];
    snprintf(msg, sizeof msg, "malformed %s v%d request (correlation id %d): %s at byte %zu",
             ls_kafka_api_name(req->api_key), req->api_version, req->correlation_id, why,
             ls_kr_pos(&req->body));
    ls_kconn_t *c = req->conn;
    conn_close(c, msg);
    ls_kreq_no_response(req);
}

bool ls_kreq_conn_closed(const ls_kreq_t *req) { return req->conn->closed; }

const char *ls_kreq_peer(const ls_kreq_t *req) { return req->conn->peer; }

/* ----------------------------------------------------------- dispatching */

static void dispatch_frame(ls_kconn_t *c, uint8_t *frame, size_t len)
{
    char why[256];
    ls_kr_t r;
    ls_kr_init(&r, frame, len);
    int16_t key = ls_kr_i16(&r);
    int16_t version = ls_kr_i16(&r);
    int32_t corr = ls_kr_i32(&r);
    if (r.err) {
        snprintf(why, sizeof why, "request header truncated (%zu bytes)", len);
        goto bad;
    }
    const ls_kafka_api_t *api = ls_kafka_api_find(key);
    if (!api) {
        snprintf(why, sizeof why, "unknown api key %d v%d (correlation id %d) at byte 0", key,
                 version, corr);
        goto bad;
    }
    bool supported = version >= api->min_version && version <= api->max_version;
    if (!supported && key != 18) {
        snprintf(why, sizeof why, "unsupported version: %s v%d (supported v%d-v%d) at byte 2",
                 api->name, version, api->min_version, api->max_version);
        goto bad;
    }
    /* An unsupported ApiVersions is answered in the v0 layout; parse its
     * header as v1 and ignore the body. */
    bool flex = supported && version >= api->first_flexible;
    ls_kstr_t client_id = ls_kr_str(&r, false);
    if (flex)
        ls_kr_tags(&r, true);
    if (r.err) {
        snprintf(why, sizeof why, "bad request header for %s v%d: %s at byte %zu", api->name,
                 version, r.what ? r.what : "truncated", ls_kr_pos(&r));
        goto bad;
    }
    ls_kreq_t *req = LS_NEW(ls_kreq_t);
    req->broker = c->l->b;
    req->conn = c;
    req->api_key = key;
    req->api_version = version;
    req->correlation_id = corr;
    req->client_id = client_id;
    req->flex = flex;
    req->body = r;
    req->arena = ls_arena_new();
    req->frame = frame;
    req->frame_len = len;
    slot_t *s = LS_NEW(slot_t);
    if (c->tail)
        c->tail->next = s;
    else
        c->head = s;
    c->tail = s;
    c->inflight++;
    req->slot = s;
    c->refs++;
    c->frames++;
    api->handler(req);
    return;
bad:
    ls_free(frame);
    conn_close(c, why);
}

/* ---------------------------------------------------------------- reading */

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    ls_kconn_t *c = h->data;
    if (c->frame && c->frame_got < c->frame_len) {
        /* mid-frame: read straight into the frame */
        buf->base = (char *)c->frame + c->frame_got;
        buf->len = c->frame_len - c->frame_got;
        return;
    }
    if (!c->scratch)
        c->scratch = ls_malloc(SCRATCH_SIZE);
    buf->base = (char *)c->scratch;
    buf->len = SCRATCH_SIZE;
}

/* Consumes bytes from the scratch buffer into size prefix / frame. */
static void consume(ls_kconn_t *c, const uint8_t *p, size_t n)
{
    int64_t max = c->l->b->cfg->socket_request_max_bytes;
    while (n > 0 && !c->closed) {
        if (!c->frame) {
            size_t take = 4 - (size_t)c->size_got < n ? 4 - (size_t)c->size_got : n;
            memcpy(c->size_buf + c->size_got, p, take);
            c->size_got += (int)take;
            p += take;
            n -= take;
            if (c->size_got < 4)
                return;
            int32_t size = (int32_t)ls_be32_get(c->size_buf);
            c->size_got = 0;
            if (size < 8 || size > max) {
                char why[160];
                snprintf(why, sizeof why,
                         "invalid request size %d (must be 8..%lld, socket.request.max.bytes) "
                         "after %llu requests",
                         size, (long long)max, (unsigned long long)c->frames);
                conn_close(c, why);
                return;
            }
            c->frame = ls_malloc((size_t)size);
            c->frame_len = (size_t)size;
            c->frame_got = 0;
        }
        size_t take = c->frame_len - c->frame_got < n ? c->frame_len - c->frame_got : n;
        memcpy(c->frame + c->frame_got, p, take);
        c->frame_got += take;
        p += take;
        n -= take;
        if (c->frame_got == c->frame_len) {
            uint8_t *frame = c->frame;
            size_t len = c->frame_len;
            c->frame = NULL;
            dispatch_frame(c, frame, len);
        }
    }
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    ls_kconn_t *c = s->data;
    if (nread < 0) {
        if (c->frame || c->size_got)
            LS_WARN("kafka", "connection from %s ended mid-request (%zu of %zu bytes read)",
                    c->peer, c->frame_got, c->frame_len);
        conn_close(c, nread == UV_EOF ? NULL : uv_strerror((int)nread));
        return;
    }
    if (nread == 0)
        return;
    c->refs++;   /* dispatching may close the connection */
    if (c->frame && buf->base == (char *)c->frame + c->frame_got) {
        c->frame_got += (size_t)nread;
        if (c->frame_got == c->frame_len) {
            uint8_t *frame = c->frame;
            size_t len = c->frame_len;
            c->frame = NULL;
            dispatch_frame(c, frame, len);
        }
    } else {
        consume(c, (const uint8_t *)buf->base, (size_t)nread);
    }
    if (!c->closed)
        conn_update_reading(c);
    conn_unref(c);
}

static void conn_update_reading(ls_kconn_t *c)
{
    if (c->closed)
        return;
    bool want = !c->l->paused && !c->l->quiesced && c->inflight < LS_CONN_MAX_INFLIGHT;
    if (want && !c->reading) {
        if (uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) == 0)
            c->reading = true;
    } else if (!want && c->reading) {
        uv_read_stop((uv_stream_t *)&c->tcp);
        c->reading = false;
    }
}

static void on_connection(uv_stream_t *server, int status)
{
    ls_kafka_listener_t *l = server->data;
    if (status < 0) {
        LS_WARN("kafka", "accept failed: %s", uv_strerror(status));
        return;
    }
    ls_kconn_t *c = LS_NEW(ls_kconn_t);
    c->l = l;
    c->refs = 1;
    uv_tcp_init(server->loop, &c->tcp);
    c->tcp.data = c;
    if (uv_accept(server, (uv_stream_t *)&c->tcp) != 0) {
        uv_close((uv_handle_t *)&c->tcp, (uv_close_cb)ls_free);
        return;
    }
    uv_tcp_nodelay(&c->tcp, 1);
    struct sockaddr_storage ss;
    int sl = sizeof ss;
    snprintf(c->peer, sizeof c->peer, "?");
    if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&ss, &sl) == 0) {
        char ip[48] = "";
        int port = 0;
        if (ss.ss_family == AF_INET) {
            uv_ip4_name((struct sockaddr_in *)&ss, ip, sizeof ip);
            port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
        } else {
            uv_ip6_name((struct sockaddr_in6 *)&ss, ip, sizeof ip);
            port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
        }
        snprintf(c->peer, sizeof c->peer, "%s:%d", ip, port);
    }
    c->next = l->conns.next;
    c->prev = &l->conns;
    l->conns.next->prev = c;
    l->conns.next = c;
    l->nconns++;
    conn_update_reading(c);
}

/* --------------------------------------------------------------- listener */

ls_kafka_listener_t *ls_kafka_listener_start(ls_broker_t *b, const char *host, int port, char *err,
                                             int errlen)
{
    ls_kafka_listener_t *l = LS_NEW(ls_kafka_listener_t);
    l->b = b;
    l->conns.next = l->conns.prev = &l->conns;
    struct sockaddr_storage addr;
    int rc = uv_ip4_addr(host, port, (struct sockaddr_in *)&addr);
    if (rc != 0)
        rc = uv_ip6_addr(host, port, (struct sockaddr_in6 *)&addr);
    if (rc != 0) {
        snprintf(err, (size_t)errlen, "listeners: '%s' is not an IP address", host);
        ls_free(l);
        return NULL;
    }
    uv_tcp_init(b->loop, &l->server);
    l->server.data = l;
    rc = uv_tcp_bind(&l->server, (struct sockaddr *)&addr, 0);
    if (rc == 0)
        rc = uv_listen((uv_stream_t *)&l->server, 1024, on_connection);
    if (rc != 0) {
        snprintf(err, (size_t)errlen, "listeners: cannot listen on %s:%d: %s", host, port,
                 uv_strerror(rc));
        l->server_closed = true;
        uv_close((uv_handle_t *)&l->server, NULL);
        return l;   /* caller frees after the loop closes the handle */
    }
    struct sockaddr_storage bound;
    int bl = sizeof bound;
    uv_tcp_getsockname(&l->server, (struct sockaddr *)&bound, &bl);
    l->port = ntohs(((struct sockaddr_in *)&bound)->sin_port);
    l->accepting = true;
    return l;
}

int ls_kafka_listener_port(const ls_kafka_listener_t *l) { return l->accepting ? l->port : -1; }

static void on_server_closed(uv_handle_t *h)
{
    ls_kafka_listener_t *l = h->data;
    l->server_closed = true;
    if (l->close_done && l->nconns == 0) {
        void (*done)(void *) = l->close_done;
        l->close_done = NULL;
        done(l->close_arg);
    }
}

void ls_kafka_listener_quiesce(ls_kafka_listener_t *l)
{
    l->quiesced = true;
    if (l->accepting) {
        l->accepting = false;
        uv_close((uv_handle_t *)&l->server, on_server_closed);
    }
    for (ls_kconn_t *c = l->conns.next; c != &l->conns; c = c->next)
        conn_update_reading(c);
}

void ls_kafka_listener_close(ls_kafka_listener_t *l, void (*done)(void *arg), void *arg)
{
    ls_kafka_listener_quiesce(l);
    l->close_done = done;
    l->close_arg = arg;
    for (ls_kconn_t *c = l->conns.next, *next; c != &l->conns; c = next) {
        next = c->next;
        conn_close(c, NULL);
    }
    if (l->nconns == 0 && l->server_closed && l->close_done) {
        l->close_done = NULL;
        done(arg);
    }
}

void ls_kafka_listener_free(ls_kafka_listener_t *l) { ls_free(l); }

void ls_kafka_listener_set_paused(ls_kafka_listener_t *l, bool paused)
{
    l->paused = paused;
    for (ls_kconn_t *c = l->conns.next; c != &l->conns; c = c->next)
        conn_update_reading(c);
}
