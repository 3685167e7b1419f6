/* Kafka connections.
 *
 * Framing: each request is an int32 size then that many bytes. The size is
 * checked against socket.request.max.bytes before anything is allocated; the
 * frame is then read straight into its own allocation (no reassembly copy
 * for large produce requests). A broken frame or header closes the
 * connection with one diagnostic line naming api, version and byte offset.
 * The body is decoded with the api's generated codec (the dispatch table's
 * ls_kmsg_api_t) before the handler runs; a body that does not decode is
 * refused the same way, naming the field (Struct.Field) and byte.
 *
 * Ordering: Kafka requires responses in request order per connection.
 * Each request takes a slot in the connection's FIFO when it is dispatched;
 * handlers finish slots in any order; the writer sends finished slots from
 * the head only.
 *
 * Append order: Kafka appends a connection's Produce requests in the order
 * they were sent, and idempotent producers rely on it (up to 5 requests in
 * flight per connection, each batch's sequence following the one before:
 * a batch reaching the log before an earlier one is a gap, answered
 * OUT_OF_ORDER_SEQUENCE_NUMBER, which a transactional producer treats as
 * fatal). A handler whose request may wait before it appends (a store read
 * on a worker: the transactional id's record, a topic auto-creation) takes a
 * turn when it is dispatched (ls_kreq_turn_take, in request order) and runs
 * its append through ls_kreq_turn_run, which runs it once every earlier
 * turn of the connection has run. A request freed before its turn ran gives
 * the turn back, so one failed request never holds the others.
 *
 * Serial requests (ARCHITECTURE "Coordinator order"): an api marked serial in
 * the dispatch table (api.c) starts once the connection's earlier serial
 * request finished (answered or freed), in request order, as Kafka handles a
 * connection's requests one at a time. Other apis (Produce, Fetch,
 * heartbeats) keep running at once: a long-polling Fetch never holds a commit.
 *
 * Lifetime: a connection is freed when its handle is closed and no request
 * still references it (refs). A handler that finishes after the peer left
 * finds conn->closed and its response is dropped.
 *
 * Backpressure: reading stops while the log store reports pressure, or while
 * a connection has LS_CONN_MAX_INFLIGHT unanswered requests other than
 * Produce or LS_CONN_MAX_INFLIGHT_PRODUCE Produce requests (higher: each waits
 * for its WAL flush, ARCHITECTURE "Produce requests in flight").
 *
 * Memory of frames being received (queued.max.request.bytes, issue 29): one
 * budget for all connections, taken as a frame's bytes arrive (GRANT_BYTES
 * at a time, never more than the frame still lacks), not for its declared
 * size, and released when the frame is dispatched or the connection closes.
 * Reserving the declared size let four clients announcing 64 MiB and sending
 * a byte every few seconds hold the whole budget, so every other client's
 * produce waited: now a frame holds what it has sent. A connection whose next
 * grant does not fit waits (it is not read; bytes read past its grant are
 * held) in a FIFO. So that waiting frames cannot deadlock on each other's
 * partial reservations, one frame at a time (the overdraft: the queue's head,
 * or anyone while the queue is empty) may take the rest of its size beyond
 * the budget; when it completes or closes, the queue resumes. Memory of
 * incoming requests stays within the budget plus one frame.
 *
 * Deadlines (issue 29), so a slow client loses its own connection and never
 * holds what others need: a frame must arrive whole within
 * request.receive.timeout.ms of its first byte (time spent waiting for the
 * budget is not counted: that is not the client's doing), and a new
 * connection must send a complete request within
 * connections.first.request.timeout.ms (a connection that never sends a byte
 * would otherwise hold its slot for connections.max.idle.ms). Both bound the
 * overdraft too: a slow frame holding it is closed at its deadline.
 *
 * SASL (issue 30, h_sasl.c drives the exchange): on a listener that needs
 * SASL a connection is served only ApiVersions, SaslHandshake and
 * SaslAuthenticate until it has authenticated; any other request closes it
 * (Kafka's IllegalSaslStateException) once the responses before it are
 * written. After a v0 SaslHandshake the client
 * sends bare tokens (a size prefix, no request header) until the exchange
 * ends: such a frame becomes a SaslAuthenticate request marked raw, whose
 * response is the bare token. A failed authentication is answered, then the
 * connection closes once that answer is written (ls_kreq_respond_close);
 * nothing read after it is served. connections.max.reauth.ms (KIP-368): a
 * session past its lifetime is closed at its next request unless that
 * request re-authenticates (SaslHandshake/SaslAuthenticate).
 *
 * Accepting (issue 17 §1): the listening socket is ours (accept4 from a
 * uv_poll callback), so the broker decides when to accept:
 *  - at most max.connections (counted over all of the broker's listeners,
 *    as Kafka's; a listener held at the limit polls again from its sweep
 *    timer once another listener's connection closed), and only with a descriptor from the
 * process's client budget (base/fd_budget.h, shared with the HTTP servers: the stores and files
 * keep a reserve no client can take): at either limit polling stops, and new connections wait in
 * the listen backlog until one closes (as Kafka's acceptor); the sweep timer polls again once the
 * HTTP side gave descriptors back;
 *  - at most max.connections.per.ip from one address: a new one beyond it is
 *    closed at once (Kafka's per-IP quota); by default half of
 *    max.connections, so one address never takes every slot;
 *  - both limits are dynamic broker configs (stream/broker_config.h): read
 *    again before each accept batch and by the sweep timer (at least once a
 *    second), so a limit changed anywhere in the cluster applies here within
 *    a second; a lowered one closes nothing, it holds new connections back;
 *  - EMFILE/ENFILE (the process or system table is full, e.g. another thread
 *    took the last descriptor): the spare descriptor kept for this is closed,
 *    the pending connection accepted and closed (the client sees a reset, not
 *    a hang), the spare reopened, and accepting pauses with a back-off (100 ms
 *    doubling to 2 s) instead of spinning; one rate-limited line says so.
 *  - connections.max.idle.ms: a connection with nothing in flight and no
 *    traffic for that long is closed by a sweep timer, which also applies the
 *    deadlines above. Loop thread only. */
#include "kafka/conn.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/check.h"
#include "base/loop_lag.h"
#include "base/clock.h"
#include "base/diag.h"
#include "base/fd_budget.h"
#include "base/hash.h"
#include "base/i64map.h"
#include "base/tls.h"
#include "group/share_store.h"
#include "kafka/api.h"
#include "kafka/msg.h"
#include "security/sasl.h"
#include "kafka/kmetrics.h"
#include "kafka/kquota.h"
#include "stream/broker_config.h"

#define LS_CONN_MAX_INFLIGHT 256
#define LS_CONN_MAX_INFLIGHT_PRODUCE 4096
#define SCRATCH_SIZE 65536
#define ACCEPT_BATCH 64
#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 2000
#define GRANT_BYTES (256 * 1024) /* queued.max.request.bytes taken per step */

typedef struct slot {
    struct slot *next;
    bool done;
    bool produce; /* counted in inflight_produce */
    bool has_response;
    bool close_after; /* close the connection once this response is written */
    ls_kw_t w;
} slot_t;

/* A request's place in its connection's append order (file comment). */
typedef struct turn {
    struct turn *next;
    void (*fn)(void *arg); /* NULL: given back without running anything */
    void *arg;
    bool ready;
} turn_t;

/* A serial request waiting for, or running, its section (file comment,
 * "Serial requests"): the connection's queue, in request order. */
typedef struct serial {
    struct serial *next;
    ls_kreq_t *req;
    const ls_kafka_api_t *api;
    bool started; /* its handler ran */
} serial_t;

typedef struct write_req {
    uv_write_t req;
    bool close_after;
    ls_kw_t w;
    struct iovec *iov;
    void *cipher; /* TLS: the encrypted bytes being written (w is then empty) */
} write_req_t;

struct ls_kconn {
    uv_tcp_t tcp;
    ls_kafka_listener_t *l;
    struct ls_kconn *next, *prev;
    char peer[64];
    char peer_host[48]; /* the peer's address alone (ACL host filters) */
    char peer_port[8];  /* the peer's port, in decimal */
    /* what ApiVersions v3+ said the client is (client telemetry matching);
     * empty until then */
    char sw_name[128], sw_version[128];
    /* Who the connection acts as (Kafka's KafkaPrincipal "User:name"):
     * User:ANONYMOUS until an authentication (TLS client certificate, SASL)
     * sets it with ls_kconn_set_principal. */
    char principal[256];
    ls_ksasl_t sasl; /* SASL state (listeners that need SASL) */
    bool draining;   /* closing after a response: read requests are dropped */
    int refs;        /* handle (1 while open) + outstanding requests */
    bool closed;
    bool reading;
    uint64_t id; /* unique for the process's life (ls_kreq_conn_id) */
    /* framing */
    uint8_t size_buf[4];
    int size_got;
    uint8_t *frame;
    size_t frame_len, frame_got;
    uint8_t *scratch;
    uint64_t frames;        /* requests seen (for diagnostics) */
    int64_t opened_ms;      /* monotonic: accepted */
    int64_t frame_start_ms; /* monotonic: the frame's first byte (less budget waits) */
    /* responses */
    slot_t *head, *tail;
    /* append order (ls_kreq_turn_*) */
    turn_t *turn_head, *turn_tail;
    bool turns_running;
    /* serial requests: the head's handler is running, the rest wait */
    serial_t *serial_head, *serial_tail;
    bool serials_running;
    int inflight;         /* unanswered requests */
    int inflight_produce; /* of them, Produce */
    /* limits */
    int64_t ip_key;         /* per-address count key (listener's per_ip map) */
    int64_t last_active_ms; /* monotonic: last bytes read or written */
    bool mem_wait;          /* a frame waits for queued.max.request.bytes */
    int64_t wait_since_ms;  /* monotonic: mem_wait began */
    int64_t reserved;       /* bytes of the frame being received, reserved */
    ls_buf_t held;          /* bytes read past the waiting frame's grant */
    struct ls_kconn *wait_next;
    /* TLS (SSL and SASL_SSL listeners): the session, plaintext decrypted
     * from it, and whether the handshake's outcome was applied */
    ls_tls_conn_t *tls;
    uint8_t *plain;
    bool tls_done;
    /* client quotas (kafka/kquota.h): not read until then (monotonic ms) */
    int64_t muted_until_ms;
};

struct ls_kafka_listener {
    ls_kafka_services_t *b;
    ls_listener_cfg_t cfg; /* name, address, security protocol */
    ls_tls_server_t *tls;  /* SSL, SASL_SSL: the certificate and settings; else NULL */
    int fd;                /* listening socket */
    uv_poll_t poll;
    bool polling;
    uv_timer_t backoff;      /* resumes accepting after EMFILE/ENFILE */
    int64_t backoff_ms;      /* 0: not backing off */
    int64_t last_backoff_ms; /* grows while exhaustion repeats; 0 after an accept */
    int reserve_fd;          /* spare descriptor for the EMFILE trick (-1: none) */
    uv_timer_t idle_timer;   /* connections.max.idle.ms sweep */
    uv_timer_t resume_timer; /* zero timer: frames waiting for memory */
    uv_timer_t mute_timer;   /* the next end of a quota mute */
    int64_t mute_due_ms;     /* when mute_timer fires (0: not armed) */
    int handles_open;        /* poll + timers not yet closed */
    bool accepting;
    bool paused;
    bool quiesced;
    ls_kconn_t conns; /* sentinel */
    int nconns;
    int64_t max_conns, max_per_ip, idle_ms; /* limits in force (listener_refresh_limits) */
    int64_t fd_budget;                      /* ls_fd_budget_total() */
    ls_i64map_t per_ip;                     /* ip_key -> count, stored as (void *)(intptr_t)count */
    int64_t recv_bytes;                     /* reserved by frames being received */
    int64_t recv_max;                       /* queued.max.request.bytes */
    ls_kconn_t *wait_head, *wait_tail;      /* frames waiting for memory, FIFO */
    ls_kconn_t *overdraft;                  /* the one frame reserved beyond recv_max */
    int64_t receive_ms, first_ms;           /* the two request deadlines */
    int port;
    void (*close_done)(void *arg);
    void *close_arg;
    bool server_closed;
};

static void conn_update_reading(ls_kconn_t *c);
static void on_mute_due(uv_timer_t *t);
static void conn_close(ls_kconn_t *c, const char *why);
static void listener_update_polling(ls_kafka_listener_t *l);
static void listener_maybe_done(ls_kafka_listener_t *l);
static void frame_release(ls_kconn_t *c);

/* ------------------------------------------------------- per-address count */

static int64_t per_ip_get(const ls_kafka_listener_t *l, int64_t key)
{
    return (int64_t)(intptr_t)ls_i64map_get(&l->per_ip, key);
}

static void per_ip_add(ls_kafka_listener_t *l, int64_t key, int delta)
{
    int64_t n = per_ip_get(l, key) + delta;
    if (n > 0)
        ls_i64map_put(&l->per_ip, key, (void *)(intptr_t)n);
    else
        ls_i64map_del(&l->per_ip, key);
}

/* The address of a peer as a map key: an IPv4 address exactly, an IPv6
 * one by its hash. */
static int64_t ip_key_of(const struct sockaddr_storage *ss)
{
    if (ss->ss_family == AF_INET)
        return (int64_t)((const struct sockaddr_in *)ss)->sin_addr.s_addr | ((int64_t)1 << 40);
    const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;
    return (int64_t)(ls_hash_bytes(LS_HASH_INIT, &s6->sin6_addr, sizeof s6->sin6_addr) |
                     ((uint64_t)1 << 62));
}

/* ------------------------------------------------------------- lifecycle */

static void conn_unref(ls_kconn_t *c)
{
    if (--c->refs > 0) return;
    ls_kafka_listener_t *l = c->l;
    for (slot_t *s = c->head, *next; s; s = next) {
        next = s->next;
        ls_kw_free(&s->w);
        ls_free(s);
    }
    ls_free(c->frame);
    frame_release(c);
    ls_sasl_session_free(c->sasl.session);
    ls_free(c->scratch);
    ls_buf_free(&c->held);
    ls_tls_conn_free(c->tls);
    ls_free(c->plain);
    ls_free(c);
    listener_maybe_done(l);
}

static void on_conn_closed(uv_handle_t *h)
{
    ls_kconn_t *c = h->data;
    ls_kafka_listener_t *l = c->l;
    c->prev->next = c->next;
    c->next->prev = c->prev;
    l->nconns--;
    l->b->kafka_conns--;
    ls_kmetrics_connection(-1);
    ls_fd_budget_give();
    per_ip_add(l, c->ip_key, -1);
    if (c->mem_wait) { /* leave the memory queue */
        ls_kconn_t **pp = &l->wait_head, *prev = NULL;
        while (*pp && *pp != c) {
            prev = *pp;
            pp = &(*pp)->wait_next;
        }
        if (*pp) {
            *pp = c->wait_next;
            if (l->wait_tail == c) l->wait_tail = prev;
        }
        c->mem_wait = false;
    }
    listener_update_polling(l); /* a slot is free again */
    conn_unref(c);
}

static void conn_close(ls_kconn_t *c, const char *why)
{
    if (c->closed) return;
    if (why) LS_WARN_RL("kafka", "closing connection from %s: %s", c->peer, why);
    c->closed = true;
    /* share sessions end with their connection (as Kafka's broker) */
    if (c->l->b->shares) ls_share_store_conn_closed(c->l->b->shares, c->id);
    uv_close((uv_handle_t *)&c->tcp, on_conn_closed);
}

/* --------------------------------------------------------------- writing */

static void on_written(uv_write_t *req, int status)
{
    write_req_t *wr = (write_req_t *)req;
    ls_kconn_t *c = req->data;
    bool close_after = wr->close_after;
    ls_kw_free(&wr->w);
    ls_free(wr->iov);
    ls_free(wr->cipher);
    ls_free(wr);
    c->last_active_ms = ls_clock_mono_ms();
    if (status < 0 && status != UV_ECANCELED) conn_close(c, uv_strerror(status));
    if (close_after) conn_close(c, NULL);
    conn_unref(c);
}

/* TLS: sends the ciphertext the session has produced (handshake messages,
 * encrypted responses) in one write. */
static void tls_send(ls_kconn_t *c)
{
    size_t n;
    void *cipher = ls_tls_conn_take_output(c->tls, &n);
    if (!cipher) return;
    if (c->closed) {
        ls_free(cipher);
        return;
    }
    write_req_t *wr = LS_NEW(write_req_t);
    ls_kw_init(&wr->w);
    wr->cipher = cipher;
    wr->req.data = c;
    c->refs++;
    uv_buf_t buf = uv_buf_init(cipher, (unsigned)n);
    int rc = uv_write(&wr->req, (uv_stream_t *)&c->tcp, &buf, 1, on_written);
    if (rc < 0) {
        c->refs--;
        ls_kw_free(&wr->w);
        ls_free(cipher);
        ls_free(wr);
        conn_close(c, uv_strerror(rc));
    }
}

/* TLS: a response is encrypted whole into the session's output. */
static void tls_send_response(ls_kconn_t *c, ls_kw_t *w)
{
    struct iovec *iov;
    int n = ls_kw_iovecs(w, &iov);
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++)
        rc = ls_tls_conn_write(c->tls, iov[i].iov_base, iov[i].iov_len);
    ls_free(iov);
    ls_kw_free(w);
    if (rc != 0) conn_close(c, "TLS: could not encrypt a response");
}

static void conn_flush(ls_kconn_t *c)
{
    bool sealed = false; /* TLS: responses were encrypted, to be sent */
    while (c->head && c->head->done) {
        slot_t *s = c->head;
        c->head = s->next;
        if (!c->head) c->tail = NULL;
        c->inflight--;
        if (s->produce) c->inflight_produce--;
        if (s->has_response && !c->closed && c->tls) {
            tls_send_response(c, &s->w);
            sealed = true;
        } else if (s->has_response && !c->closed) {
            write_req_t *wr = LS_NEW(write_req_t);
            wr->w = s->w;
            int n = ls_kw_iovecs(&wr->w, &wr->iov);
            uv_buf_t *bufs =
                (uv_buf_t *)wr->iov; /* uv_buf_t is layout-compatible with iovec on unix */
            wr->req.data = c;
            wr->close_after = s->close_after;
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
            if (s->close_after) conn_close(c, NULL);
        }
        ls_free(s);
    }
    if (sealed) tls_send(c);
    conn_update_reading(c);
}

/* ------------------------------------------------- request finish (api.h) */

static void turns_run(ls_kconn_t *c);
static void serial_end(ls_kreq_t *req);

static void conn_mute(ls_kconn_t *c, int32_t ms);

static void req_free(ls_kreq_t *req)
{
    if (req->throttle_ms > 0) conn_mute(req->conn, req->throttle_ms);
    if (req->turn) { /* never run: give the turn back */
        turn_t *t = req->turn;
        req->turn = NULL;
        t->ready = true;
        turns_run(req->conn);
    }
    if (req->serial) serial_end(req);
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
    if (req->raw) return; /* a bare SASL token (v0 SaslHandshake) */
    ls_kw_i32(w, req->correlation_id);
    /* response header v1 (tagged fields) for flexible versions, except
     * ApiVersions whose response header is always v0 (KIP-511) */
    if (req->flex && req->api_key != 18) ls_kw_tags(w, true);
}

/* Puts the finished response w into req's slot (the writer sends and frees
 * it in request order). */
static void slot_fill(ls_kreq_t *req, ls_kw_t *w)
{
    slot_t *s = req->slot;
    ls_kw_patch_i32(w, 0, (int32_t)(w->total - 4));
    s->w = *w;
    memset(w, 0, sizeof *w);
    s->has_response = true;
    s->done = true;
    req->slot = NULL;
    ls_kmetrics_request_done(req->api_key, req->start_us);
}

void ls_kreq_respond(ls_kreq_t *req, ls_kw_t *w)
{
    slot_fill(req, w);
    ls_kconn_t *c = req->conn;
    c->refs++;
    req_free(req);
    conn_flush(c);
    conn_unref(c);
}

void ls_kreq_respond_close(ls_kreq_t *req, ls_kw_t *w)
{
    ((slot_t *)req->slot)->close_after = true;
    req->conn->draining = true;
    ls_kreq_respond(req, w);
}

void ls_kreq_close(ls_kreq_t *req, const char *why)
{
    ls_kconn_t *c = req->conn;
    conn_close(c, why);
    ls_kreq_no_response(req);
}

void ls_kreq_respond_keep(ls_kreq_t *req, ls_kw_t *w)
{
    slot_fill(req, w);
    conn_flush(req->conn);
}

void ls_kreq_release(ls_kreq_t *req) { req_free(req); }

void ls_kreq_no_response(ls_kreq_t *req)
{
    slot_t *s = req->slot;
    s->done = true;
    ls_kmetrics_request_done(req->api_key, req->start_us);
    ls_kconn_t *c = req->conn;
    c->refs++;
    req_free(req);
    conn_flush(c);
    conn_unref(c);
}

void ls_kreq_encode(ls_kreq_t *req, ls_kw_t *w, const void *resp)
{
    ls_kreq_begin(req, w);
    ls_kafka_api_find(req->api_key)->msg->encode_response(w, req->api_version, resp);
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

/* ---------------------------------------------- append order (api.h) */

void ls_kreq_turn_take(ls_kreq_t *req)
{
    ls_kconn_t *c = req->conn;
    turn_t *t = LS_NEW(turn_t);
    if (c->turn_tail)
        c->turn_tail->next = t;
    else
        c->turn_head = t;
    c->turn_tail = t;
    req->turn = t;
}

/* Runs the ready turns at the head, in order. A turn's function may finish
 * its request (freeing it) or give back another turn: the connection is kept
 * alive meanwhile, and a nested call leaves the work to this loop. */
static void turns_run(ls_kconn_t *c)
{
    if (c->turns_running) return;
    c->turns_running = true;
    c->refs++;
    while (c->turn_head && c->turn_head->ready) {
        turn_t *t = c->turn_head;
        c->turn_head = t->next;
        if (!c->turn_head) c->turn_tail = NULL;
        if (t->fn) t->fn(t->arg);
        ls_free(t);
    }
    c->turns_running = false;
    conn_unref(c);
}

void ls_kreq_turn_run(ls_kreq_t *req, void (*fn)(void *arg), void *arg)
{
    turn_t *t = req->turn;
    if (!t) { /* took no turn */
        fn(arg);
        return;
    }
    req->turn = NULL;
    t->fn = fn;
    t->arg = arg;
    t->ready = true;
    turns_run(req->conn);
}

/* ------------------------------------------ serial requests (file comment) */

static void handler_run(ls_kreq_t *req, const ls_kafka_api_t *api)
{
    ls_loop_work_begin(api->name);
    api->handler(req);
    ls_loop_work_end();
}

/* Starts the head's handler when it has not run. A handler may finish its
 * request at once, which ends its section and makes the next one the head:
 * the loop starts that one too, and a nested call leaves it to this loop. */
static void serials_run(ls_kconn_t *c)
{
    if (c->serials_running) return;
    c->serials_running = true;
    c->refs++;
    while (c->serial_head && !c->serial_head->started) {
        serial_t *s = c->serial_head;
        s->started = true;
        handler_run(s->req, s->api);
    }
    c->serials_running = false;
    conn_unref(c);
}

/* Queues req behind the connection's earlier serial requests. */
static void serial_dispatch(ls_kreq_t *req, const ls_kafka_api_t *api)
{
    ls_kconn_t *c = req->conn;
    serial_t *s = LS_NEW(serial_t);
    *s = (serial_t){.req = req, .api = api};
    req->serial = s;
    if (c->serial_tail)
        c->serial_tail->next = s;
    else
        c->serial_head = s;
    c->serial_tail = s;
    serials_run(c);
}

/* req is finishing: its section ends and the next one starts. Only a
 * started request can finish, and the started one is the head. */
static void serial_end(ls_kreq_t *req)
{
    ls_kconn_t *c = req->conn;
    serial_t *s = req->serial;
    LS_CHECK(s == c->serial_head && s->started);
    req->serial = NULL;
    c->serial_head = s->next;
    if (!c->serial_head) c->serial_tail = NULL;
    ls_free(s);
    serials_run(c);
}

bool ls_kreq_conn_closed(const ls_kreq_t *req) { return req->conn->closed; }
uint64_t ls_kreq_conn_id(const ls_kreq_t *req) { return req->conn->id; }

const char *ls_kreq_peer(const ls_kreq_t *req) { return req->conn->peer; }
const char *ls_kreq_peer_host(const ls_kreq_t *req) { return req->conn->peer_host; }
const char *ls_kreq_principal(const ls_kreq_t *req) { return req->conn->principal; }
const char *ls_kreq_peer_port(const ls_kreq_t *req) { return req->conn->peer_port; }

void ls_kreq_set_client_software(ls_kreq_t *req, ls_kstr_t name, ls_kstr_t version)
{
    ls_kconn_t *c = req->conn;
    snprintf(c->sw_name, sizeof c->sw_name, "%.*s", name.len > 0 ? (int)name.len : 0,
             name.len > 0 ? name.ptr : "");
    snprintf(c->sw_version, sizeof c->sw_version, "%.*s", version.len > 0 ? (int)version.len : 0,
             version.len > 0 ? version.ptr : "");
}

const char *ls_kreq_client_software_name(const ls_kreq_t *req)
{
    return req->conn->sw_name[0] ? req->conn->sw_name : NULL;
}

const char *ls_kreq_client_software_version(const ls_kreq_t *req)
{
    return req->conn->sw_version[0] ? req->conn->sw_version : NULL;
}
const char *ls_kreq_listener_name(const ls_kreq_t *req) { return req->conn->l->cfg.name; }
const char *ls_kconn_listener_name(const ls_kconn_t *c) { return c->l->cfg.name; }
ls_secproto ls_kconn_protocol(const ls_kconn_t *c) { return c->l->cfg.protocol; }
bool ls_kconn_needs_sasl(const ls_kconn_t *c) { return ls_secproto_sasl(c->l->cfg.protocol); }

void ls_kconn_set_principal(ls_kconn_t *c, const char *principal)
{
    snprintf(c->principal, sizeof c->principal, "%s", principal);
}

ls_ksasl_t *ls_kreq_sasl(ls_kreq_t *req) { return &req->conn->sasl; }
bool ls_kreq_needs_sasl(const ls_kreq_t *req) { return ls_kconn_needs_sasl(req->conn); }

/* ----------------------------------------------------------- dispatching */

/* A request of c taking frame, with its response slot. */
/* A new slot at the tail of c's response FIFO (one more request in flight). */
static slot_t *slot_push(ls_kconn_t *c, bool produce)
{
    slot_t *s = LS_NEW(slot_t);
    s->produce = produce;
    if (produce) c->inflight_produce++;
    if (c->tail)
        c->tail->next = s;
    else
        c->head = s;
    c->tail = s;
    c->inflight++;
    return s;
}

static ls_kreq_t *req_new(ls_kconn_t *c, int16_t key, int16_t version, int32_t corr, uint8_t *frame,
                          size_t len)
{
    ls_kreq_t *req = LS_NEW(ls_kreq_t);
    req->svc = c->l->b;
    req->conn = c;
    req->api_key = key;
    req->api_version = version;
    req->correlation_id = corr;
    req->arena = ls_arena_new();
    req->frame = frame;
    req->frame_len = len;
    req->start_us = ls_clock_mono_us();
    req->slot = slot_push(c, key == LS_KAFKA_API_PRODUCE);
    c->refs++;
    c->frames++;
    return req;
}

/* After a v0 SaslHandshake: the frame is a bare token, served as a raw
 * SaslAuthenticate (file comment). */
static void dispatch_raw_token(ls_kconn_t *c, uint8_t *frame, size_t len)
{
    const ls_kafka_api_t *api = ls_kafka_api_find(LS_KAFKA_API_SASL_AUTHENTICATE);
    ls_kreq_t *req = req_new(c, api->key, 0, 0, frame, len);
    req->raw = true;
    ls_kafka_SaslAuthenticateRequest *m = ls_arena_alloc(req->arena, sizeof *m);
    m->AuthBytes = (ls_kbytes_t){frame, (int32_t)len};
    req->msg = m;
    handler_run(req, api);
}

/* The SASL gate (file comment): NULL when the request may be served, else
 * why the connection closes. */
static const char *sasl_gate(ls_kconn_t *c, int16_t key, char *why, size_t cap)
{
    if (!ls_kconn_needs_sasl(c)) return NULL;
    bool sasl_api = key == LS_KAFKA_API_SASL_HANDSHAKE || key == LS_KAFKA_API_SASL_AUTHENTICATE;
    if (sasl_api || key == LS_KAFKA_API_API_VERSIONS) return NULL;
    if (!c->sasl.authenticated) {
        snprintf(why, cap,
                 "%s request before SASL authentication (only ApiVersions, SaslHandshake and "
                 "SaslAuthenticate are served until then)",
                 ls_kafka_api_name(key));
        return why;
    }
    if (c->sasl.expires_ms && ls_clock_mono_ms() >= c->sasl.expires_ms) {
        snprintf(why, cap,
                 "%s request after the SASL session expired (connections.max.reauth.ms) "
                 "without re-authentication",
                 ls_kafka_api_name(key));
        return why;
    }
    return NULL;
}

static void dispatch_frame(ls_kconn_t *c, uint8_t *frame, size_t len)
{
    char why[256];
    if (c->draining) { /* closing: nothing more is served */
        ls_free(frame);
        return;
    }
    if (c->sasl.raw && c->sasl.state == LS_KSASL_HANDSHAKEN) {
        dispatch_raw_token(c, frame, len);
        return;
    }
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
    if (flex) ls_kr_tags(&r, true);
    if (r.err) {
        snprintf(why, sizeof why, "bad request header for %s v%d: %s at byte %zu", api->name,
                 version, r.what ? r.what : "truncated", ls_kr_pos(&r));
        goto bad;
    }
    if (sasl_gate(c, key, why, sizeof why)) {
        /* closed once the responses before it are written (a pipelined
         * request must not cut off the answer to the SaslAuthenticate ahead) */
        LS_WARN_RL("kafka", "closing connection from %s: %s", c->peer, why);
        ls_free(frame);
        slot_t *s = slot_push(c, false);
        s->done = s->close_after = true;
        c->draining = true;
        conn_flush(c);
        return;
    }
    ls_kreq_t *req = req_new(c, key, version, corr, frame, len);
    req->client_id = client_id;
    req->flex = flex;
    req->body = r;
    if (supported) {
        req->msg = ls_arena_alloc(req->arena, api->msg->request_size);
        if (api->msg->decode_request(&req->body, version, req->arena, req->msg) != 0) {
            ls_kreq_fail(req, req->body.what ? req->body.what : "undecodable body");
            return;
        }
    }
    /* request_percentage: the handler's time on the loop (kafka/kquota.h) */
    char cid[256];
    snprintf(cid, sizeof cid, "%.*s", client_id.len > 0 ? (int)client_id.len : 0,
             client_id.len > 0 ? client_id.ptr : "");
    int64_t t0 = ls_clock_mono_us();
    if (api->serial)
        serial_dispatch(req, api);
    else
        handler_run(req, api);
    int64_t t1 = ls_clock_mono_us();
    int32_t ms = ls_kquota_record(c->l->b->kquota, c->principal, cid, LS_QUOTA_REQUEST_PERCENTAGE,
                                  (double)(t1 - t0) / 1e4, t1 / 1000);
    if (ms > 0) conn_mute(c, ms);
    return;
bad:
    ls_free(frame);
    conn_close(c, why);
}

/* ---------------------------------------------------------------- reading */

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    ls_kconn_t *c = h->data;
    if (!c->tls && c->frame && c->frame_got < (size_t)c->reserved) {
        /* mid-frame: read straight into the frame, up to its grant */
        buf->base = (char *)c->frame + c->frame_got;
        buf->len = (size_t)c->reserved - c->frame_got;
        return;
    }
    if (!c->scratch) c->scratch = ls_malloc(SCRATCH_SIZE);
    buf->base = (char *)c->scratch;
    buf->len = SCRATCH_SIZE;
}

/* ------------------------------------------- queued.max.request.bytes */

/* Grants c's frame more of the budget: the next step, or (the overdraft)
 * all it still lacks beyond the budget. false: it must wait. */
static bool frame_grant(ls_kconn_t *c)
{
    ls_kafka_listener_t *l = c->l;
    int64_t rest = (int64_t)c->frame_len - c->reserved;
    int64_t step = rest < GRANT_BYTES ? rest : GRANT_BYTES;
    if (l->recv_bytes + step > l->recv_max) {
        if (l->overdraft || (l->wait_head && l->wait_head != c)) return false;
        l->overdraft = c;
        step = rest;
    }
    l->recv_bytes += step;
    c->reserved += step;
    return true;
}

static void on_resume(uv_timer_t *t);

static void frame_release(ls_kconn_t *c)
{
    ls_kafka_listener_t *l = c->l;
    if (l->overdraft == c) l->overdraft = NULL;
    if (!c->reserved) return;
    l->recv_bytes -= c->reserved;
    c->reserved = 0;
    if (l->wait_head && !l->quiesced) uv_timer_start(&l->resume_timer, on_resume, 0, 0);
}

/* True when c's frame may take more bytes now; else c is queued for the
 * budget (and must not be read until on_resume takes it). */
static bool frame_has_room(ls_kconn_t *c)
{
    if ((size_t)c->reserved > c->frame_got || frame_grant(c)) return true;
    ls_kafka_listener_t *l = c->l;
    c->mem_wait = true;
    c->wait_since_ms = ls_clock_mono_ms();
    c->wait_next = NULL;
    if (l->wait_tail)
        l->wait_tail->wait_next = c;
    else
        l->wait_head = c;
    l->wait_tail = c;
    LS_WARN_RL("kafka",
               "queued.max.request.bytes (%lld) reached by frames being received: "
               "connection from %s waits with %zu of a %zu-byte request",
               (long long)l->recv_max, c->peer, c->frame_got, c->frame_len);
    return false;
}

/* The frame is whole: hand it to its handler. */
static void frame_complete(ls_kconn_t *c)
{
    uint8_t *frame = c->frame;
    size_t len = c->frame_len;
    c->frame = NULL;
    frame_release(c);
    dispatch_frame(c, frame, len);
}

/* Consumes bytes from the scratch buffer into size prefix / frame. */
static void consume(ls_kconn_t *c, const uint8_t *p, size_t n)
{
    int64_t max = c->l->b->cfg->socket_request_max_bytes;
    while (n > 0 && !c->closed) {
        if (!c->frame) {
            if (c->size_got == 0) c->frame_start_ms = ls_clock_mono_ms();
            size_t take = 4 - (size_t)c->size_got < n ? 4 - (size_t)c->size_got : n;
            memcpy(c->size_buf + c->size_got, p, take);
            c->size_got += (int)take;
            p += take;
            n -= take;
            if (c->size_got < 4) return;
            int32_t size = (int32_t)ls_be32_get(c->size_buf);
            c->size_got = 0;
            /* a bare SASL token may be short; a request has an 8-byte header */
            int32_t min = c->sasl.raw && c->sasl.state == LS_KSASL_HANDSHAKEN ? 1 : 8;
            if (size < min || size > max) {
                char why[160];
                snprintf(why, sizeof why,
                         "invalid request size %d (must be %d..%lld, socket.request.max.bytes) "
                         "after %llu requests",
                         size, (int)min, (long long)max, (unsigned long long)c->frames);
                conn_close(c, why);
                return;
            }
            /* pages are touched (take memory) only as bytes arrive */
            c->frame = ls_malloc((size_t)size);
            c->frame_len = (size_t)size;
            c->frame_got = 0;
        }
        if (!frame_has_room(c)) {
            /* no budget for more yet: stop reading, keep what was read */
            ls_buf_append(&c->held, p, n);
            return;
        }
        size_t room = (size_t)c->reserved - c->frame_got;
        size_t take = room < n ? room : n;
        memcpy(c->frame + c->frame_got, p, take);
        c->frame_got += take;
        p += take;
        n -= take;
        if (c->frame_got == c->frame_len) frame_complete(c);
    }
}

/* Zero timer: grants waiting frames in arrival order; each then takes the
 * bytes it held (which may complete it, start the next frame, or use up the
 * grant and queue it again at the tail). */
static void on_resume(uv_timer_t *t)
{
    ls_kafka_listener_t *l = t->data;
    while (l->wait_head && !l->quiesced) {
        ls_kconn_t *c = l->wait_head;
        if (!frame_grant(c)) break;
        l->wait_head = c->wait_next;
        if (!l->wait_head) l->wait_tail = NULL;
        c->mem_wait = false;
        c->frame_start_ms += ls_clock_mono_ms() - c->wait_since_ms;
        ls_buf_t held = c->held;
        ls_buf_init(&c->held);
        c->refs++;
        consume(c, held.data, held.len);
        ls_buf_free(&held);
        if (!c->closed) conn_update_reading(c);
        conn_unref(c);
    }
}

/* TLS: the handshake just completed. With a client certificate the
 * connection acts as its principal (ssl.principal.mapping.rules); a
 * certificate no rule maps fails the authentication, as in Kafka. */
static void tls_established(ls_kconn_t *c)
{
    c->tls_done = true;
    char principal[sizeof c->principal], why[512];
    if (ls_tls_conn_principal(c->tls, principal, sizeof principal, why, sizeof why) != LS_OK) {
        conn_close(c, why);
    } else if (principal[0]) {
        LS_DEBUG("kafka", "TLS connection from %s authenticated as %s", c->peer, principal);
        ls_kconn_set_principal(c, principal);
    }
}

/* TLS: ciphertext arrived. Everything the session can decrypt now is taken
 * (so nothing waits inside it once reading stops): into the framing, or,
 * while a frame waits for queued.max.request.bytes, held with the bytes
 * read past its grant. Handshake replies go out at once. */
static void tls_on_read(ls_kconn_t *c, const uint8_t *p, size_t n)
{
    ls_tls_conn_feed(c->tls, p, n);
    if (!c->plain) c->plain = ls_malloc(SCRATCH_SIZE);
    char why[512];
    while (!c->closed) {
        size_t got;
        ls_status st = ls_tls_conn_read(c->tls, c->plain, SCRATCH_SIZE, &got, why, sizeof why);
        if (!c->tls_done && ls_tls_conn_established(c->tls)) tls_established(c);
        if ((st == LS_OK && got == 0) || c->closed) break;
        if (st != LS_OK) {
            tls_send(c); /* the alert, if any */
            conn_close(c, *why ? why : NULL);
            return;
        }
        if (c->mem_wait)
            ls_buf_append(&c->held, c->plain, got);
        else
            consume(c, c->plain, got);
    }
    tls_send(c);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    ls_kconn_t *c = s->data;
    if (nread < 0) {
        /* between requests, an end or a reset is how clients and health
         * probes hang up: not worth a warning */
        bool mid = c->frame || c->size_got;
        if (c->frame)
            LS_WARN("kafka", "connection from %s ended mid-request (%zu of %zu bytes read)",
                    c->peer, c->frame_got, c->frame_len);
        else if (c->size_got)
            LS_WARN("kafka", "connection from %s ended mid-request (%d of the 4 size bytes read)",
                    c->peer, c->size_got);
        conn_close(c, nread == UV_EOF || (nread == UV_ECONNRESET && !mid)
                          ? NULL
                          : uv_strerror((int)nread));
        return;
    }
    if (nread == 0) return;
    c->last_active_ms = ls_clock_mono_ms();
    c->refs++; /* dispatching may close the connection */
    if (c->tls) {
        tls_on_read(c, (const uint8_t *)buf->base, (size_t)nread);
    } else if (c->frame && buf->base == (char *)c->frame + c->frame_got) {
        c->frame_got += (size_t)nread;
        if (c->frame_got == c->frame_len)
            frame_complete(c);
        else
            frame_has_room(c);
    } else {
        consume(c, (const uint8_t *)buf->base, (size_t)nread);
    }
    if (!c->closed) conn_update_reading(c);
    conn_unref(c);
}

static void conn_update_reading(ls_kconn_t *c)
{
    if (c->closed) return;
    bool want = !c->l->paused && !c->l->quiesced && !c->mem_wait &&
                c->inflight - c->inflight_produce < LS_CONN_MAX_INFLIGHT &&
                c->inflight_produce < LS_CONN_MAX_INFLIGHT_PRODUCE && !c->muted_until_ms;
    if (want && !c->reading) {
        if (uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) == 0) c->reading = true;
    } else if (!want && c->reading) {
        uv_read_stop((uv_stream_t *)&c->tcp);
        c->reading = false;
    }
}

/* Quota mutes (KIP-219): a throttled connection is not read until its
 * throttle time has passed. One listener timer, armed for the earliest end,
 * unmutes every connection due. */
static void mute_arm(ls_kafka_listener_t *l, int64_t due, int64_t now)
{
    if (l->quiesced || (l->mute_due_ms && l->mute_due_ms <= due)) return;
    l->mute_due_ms = due;
    uv_timer_start(&l->mute_timer, on_mute_due, (uint64_t)(due > now ? due - now : 0), 0);
}

static void on_mute_due(uv_timer_t *t)
{
    ls_kafka_listener_t *l = t->data;
    int64_t now = ls_clock_mono_ms(), next = 0;
    l->mute_due_ms = 0;
    for (ls_kconn_t *c = l->conns.next; c != &l->conns; c = c->next) {
        if (!c->muted_until_ms) continue;
        if (c->muted_until_ms <= now) {
            c->muted_until_ms = 0;
            conn_update_reading(c);
        } else if (!next || c->muted_until_ms < next) {
            next = c->muted_until_ms;
        }
    }
    if (next) mute_arm(l, next, now);
}

static void conn_mute(ls_kconn_t *c, int32_t ms)
{
    if (c->closed) return;
    int64_t now = ls_clock_mono_ms(), until = now + ms;
    if (until > c->muted_until_ms) c->muted_until_ms = until;
    conn_update_reading(c);
    mute_arm(c->l, c->muted_until_ms, now);
}

/* --------------------------------------------------------------- accepting */

static void conn_open(ls_kafka_listener_t *l, int fd, const struct sockaddr_storage *ss,
                      int64_t ip_key)
{
    static uint64_t last_conn_id; /* the loop thread's */
    ls_kconn_t *c = LS_NEW(ls_kconn_t);
    c->id = ++last_conn_id;
    c->l = l;
    c->refs = 1;
    c->ip_key = ip_key;
    c->last_active_ms = c->opened_ms = ls_clock_mono_ms();
    ls_buf_init(&c->held);
    uv_tcp_init(l->b->loop, &c->tcp);
    c->tcp.data = c;
    if (uv_tcp_open(&c->tcp, fd) != 0) {
        close(fd);
        ls_fd_budget_give();
        uv_close((uv_handle_t *)&c->tcp, (uv_close_cb)ls_free);
        return;
    }
    uv_tcp_nodelay(&c->tcp, 1);
    char ip[48] = "?";
    int port = 0;
    if (ss->ss_family == AF_INET) {
        uv_ip4_name((const struct sockaddr_in *)ss, ip, sizeof ip);
        port = ntohs(((const struct sockaddr_in *)ss)->sin_port);
    } else if (ss->ss_family == AF_INET6) {
        uv_ip6_name((const struct sockaddr_in6 *)ss, ip, sizeof ip);
        port = ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
    }
    snprintf(c->peer, sizeof c->peer, "%s:%d", ip, port);
    snprintf(c->peer_host, sizeof c->peer_host, "%s", ip);
    snprintf(c->peer_port, sizeof c->peer_port, "%d", port);
    snprintf(c->principal, sizeof c->principal, "%s", LS_KAFKA_ANONYMOUS);
    if (l->tls) c->tls = ls_tls_conn_new(l->tls);
    c->next = l->conns.next;
    c->prev = &l->conns;
    l->conns.next->prev = c;
    l->conns.next = c;
    l->nconns++;
    l->b->kafka_conns++;
    ls_kmetrics_connection(1);
    per_ip_add(l, ip_key, 1);
    conn_update_reading(c);
}

static void on_accept_ready(uv_poll_t *p, int status, int events);

/* max.connections / max.connections.per.ip as the cluster's dynamic broker
 * configs (else this broker's static settings) give them now, max.connections
 * bounded by the descriptor budget. A lowered limit closes nothing: it holds
 * new connections back until enough have closed, as Kafka does. */
static void listener_refresh_limits(ls_kafka_listener_t *l)
{
    const ls_kafka_services_t *b = l->b;
    int64_t want = ls_bcfg_effective(b->catalog, LS_BCFG_MAX_CONNECTIONS,
                                     ls_bcfg_static(b->cfg, LS_BCFG_MAX_CONNECTIONS), NULL);
    int64_t max_conns = want > 0 && want < l->fd_budget ? want : l->fd_budget;
    if (want > l->fd_budget && max_conns != l->max_conns)
        LS_WARN("kafka",
                "max.connections=%lld is more than the descriptor limit allows "
                "(ulimit -n, less a reserve for stores and HTTP): accepting at most %lld",
                (long long)want, (long long)l->fd_budget);
    int64_t per_ip =
        ls_bcfg_effective(b->catalog, LS_BCFG_MAX_CONNECTIONS_PER_IP,
                          ls_bcfg_static(b->cfg, LS_BCFG_MAX_CONNECTIONS_PER_IP), NULL);
    if (per_ip <= 0) per_ip = max_conns / 2 > 0 ? max_conns / 2 : 1;
    if (l->max_conns && (max_conns != l->max_conns || per_ip != l->max_per_ip))
        LS_INFO("kafka", "connection limits now %lld (%lld per address), were %lld (%lld)",
                (long long)max_conns, (long long)per_ip, (long long)l->max_conns,
                (long long)l->max_per_ip);
    l->max_conns = max_conns;
    l->max_per_ip = per_ip;
}

static void listener_update_polling(ls_kafka_listener_t *l)
{
    bool want = l->accepting && !l->backoff_ms && l->b->kafka_conns < l->max_conns &&
                ls_fd_budget_used() < l->fd_budget;
    if (want && !l->polling) {
        if (uv_poll_start(&l->poll, UV_READABLE, on_accept_ready) == 0) l->polling = true;
    } else if (!want && l->polling) {
        uv_poll_stop(&l->poll);
        l->polling = false;
    }
}

static void on_backoff_done(uv_timer_t *t)
{
    ls_kafka_listener_t *l = t->data;
    l->backoff_ms = 0;
    listener_update_polling(l);
}

/* The descriptor table is full: shed the pending connection with the spare
 * descriptor (the client gets a reset, not a hang) and pause accepting. */
static void accept_exhausted(ls_kafka_listener_t *l, int err)
{
    if (l->reserve_fd >= 0) {
        close(l->reserve_fd);
        l->reserve_fd = -1;
        int fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) close(fd);
        l->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    }
    int64_t next = l->last_backoff_ms ? l->last_backoff_ms * 2 : BACKOFF_MIN_MS;
    if (next > BACKOFF_MAX_MS) next = BACKOFF_MAX_MS;
    l->last_backoff_ms = next;
    struct rlimit rl = {0, 0};
    getrlimit(RLIMIT_NOFILE, &rl);
    LS_WARN_RL("kafka",
               "accept: %s (descriptor limit %llu, %d Kafka connections open): refusing new "
               "connections for %lld ms; raise the limit (ulimit -n) or lower max.connections",
               strerror(err), (unsigned long long)rl.rlim_cur, l->b->kafka_conns, (long long)next);
    l->backoff_ms = next;
    listener_update_polling(l);
    uv_timer_start(&l->backoff, on_backoff_done, (uint64_t)next, 0);
}

static void on_accept_ready(uv_poll_t *p, int status, int events)
{
    ls_kafka_listener_t *l = p->data;
    if (status < 0) {
        LS_WARN_RL("kafka", "listener poll failed: %s", uv_strerror(status));
        return;
    }
    listener_refresh_limits(l);
    for (int i = 0; i < ACCEPT_BATCH && l->b->kafka_conns < l->max_conns && ls_fd_budget_take();
         i++) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof ss;
        int fd = accept4(l->fd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) ls_fd_budget_give();
        if (fd < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) break;
            if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO) continue;
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                accept_exhausted(l, errno);
                return;
            }
            LS_WARN_RL("kafka", "accept failed: %s", strerror(errno));
            break;
        }
        int64_t key = ip_key_of(&ss);
        if (per_ip_get(l, key) >= l->max_per_ip) {
            close(fd);
            ls_fd_budget_give();
            LS_WARN_RL("kafka",
                       "refused a connection: its address already has %lld "
                       "connections (max.connections.per.ip)",
                       (long long)l->max_per_ip);
            continue;
        }
        l->last_backoff_ms = 0;
        conn_open(l, fd, &ss, key);
    }
    listener_update_polling(l); /* at max.connections: stop until one closes */
}

/* connections.max.idle.ms: close connections with nothing in flight and no
 * traffic for that long; and those past a request deadline. */
static void on_idle_sweep(uv_timer_t *t)
{
    ls_kafka_listener_t *l = t->data;
    /* a raised connection limit lets a listener held at the old one accept */
    listener_refresh_limits(l);
    listener_update_polling(l);
    int64_t now = ls_clock_mono_ms();
    for (ls_kconn_t *c = l->conns.next, *next; c != &l->conns; c = next) {
        next = c->next;
        if (c->closed || c->mem_wait) continue;
        int64_t quiet = now - c->last_active_ms;
        char why[192];
        if ((c->frame || c->size_got) && now - c->frame_start_ms >= l->receive_ms) {
            snprintf(why, sizeof why,
                     "a request frame did not arrive within request.receive.timeout.ms "
                     "(%lld ms; %zu bytes of it came)",
                     (long long)l->receive_ms, c->frame ? 4 + c->frame_got : (size_t)c->size_got);
            conn_close(c, why);
        } else if (c->frames == 0 && now - c->opened_ms >= l->first_ms) {
            snprintf(why, sizeof why,
                     "no complete request within connections.first.request.timeout.ms "
                     "(%lld ms)",
                     (long long)l->first_ms);
            conn_close(c, why);
        } else if (c->inflight == 0 && !c->frame && quiet >= l->idle_ms) {
            LS_DEBUG("kafka",
                     "closing connection from %s: idle for %lld ms "
                     "(connections.max.idle.ms)",
                     c->peer, (long long)quiet);
            conn_close(c, NULL);
        }
    }
}

/* --------------------------------------------------------------- listener */

/* A listening socket on host:port into *fd, its bound port into *port_out. */
static ls_status listen_socket(const char *host, int port, int *fd_out, int *port_out, char *err,
                               size_t errlen)
{
    struct sockaddr_storage addr;
    socklen_t alen;
    int rc = uv_ip4_addr(host, port, (struct sockaddr_in *)&addr);
    alen = sizeof(struct sockaddr_in);
    if (rc != 0) {
        rc = uv_ip6_addr(host, port, (struct sockaddr_in6 *)&addr);
        alen = sizeof(struct sockaddr_in6);
    }
    if (rc != 0) {
        snprintf(err, errlen, "listeners: '%s' is not an IP address", host);
        return LS_EINVAL;
    }
    int fd = socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(fd, (struct sockaddr *)&addr, alen) != 0 || listen(fd, 1024) != 0) {
        snprintf(err, errlen, "listeners: cannot listen on %s:%d: %s", host, port, strerror(errno));
        if (fd >= 0) close(fd);
        return LS_EIO;
    }
    struct sockaddr_storage bound;
    socklen_t bl = sizeof bound;
    getsockname(fd, (struct sockaddr *)&bound, &bl);
    *port_out = ntohs(bound.ss_family == AF_INET ? ((struct sockaddr_in *)&bound)->sin_port
                                                 : ((struct sockaddr_in6 *)&bound)->sin6_port);
    *fd_out = fd;
    return LS_OK;
}

ls_kafka_listener_t *ls_kafka_listener_start(ls_kafka_services_t *b, const ls_listener_cfg_t *lc,
                                             char *err, size_t errlen)
{
    ls_kafka_listener_t *l = LS_NEW(ls_kafka_listener_t);
    l->b = b;
    l->cfg = *lc;
    l->conns.next = l->conns.prev = &l->conns;
    l->fd = l->reserve_fd = -1;
    if (ls_secproto_tls(lc->protocol)) {
        ls_tls_settings_t ts;
        ls_tls_settings_from_config(&ts, b->cfg);
        char what[96], why[400];
        snprintf(what, sizeof what, "listener %s", lc->name);
        l->tls = ls_tls_server_new(&ts, what, why, sizeof why);
        if (!l->tls) {
            snprintf(err, errlen, "%s (for the %s listener %s)", why,
                     ls_secproto_name(lc->protocol), lc->name);
            l->server_closed = true;
            return l;
        }
    }
    if (listen_socket(lc->host, lc->port, &l->fd, &l->port, err, errlen) != LS_OK) {
        l->server_closed = true;
        return l; /* caller sees port -1 and frees */
    }
    const ls_config_t *cfg = b->cfg;
    l->fd_budget = ls_fd_budget_total();
    listener_refresh_limits(l);
    l->idle_ms = cfg->connections_max_idle_ms;
    l->receive_ms = cfg->request_receive_timeout_ms;
    l->first_ms = cfg->connections_first_request_ms;
    l->recv_max = cfg->queued_max_request_bytes;
    ls_i64map_init(&l->per_ip);
    l->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    uv_poll_init(b->loop, &l->poll, l->fd);
    l->poll.data = l;
    uv_timer_init(b->loop, &l->backoff);
    l->backoff.data = l;
    uv_timer_init(b->loop, &l->idle_timer);
    l->idle_timer.data = l;
    uv_timer_init(b->loop, &l->resume_timer);
    l->resume_timer.data = l;
    uv_timer_init(b->loop, &l->mute_timer);
    l->mute_timer.data = l;
    l->handles_open = 5;
    /* at most a second: the sweep also applies changed connection limits */
    int64_t sweep = l->idle_ms < l->receive_ms ? l->idle_ms : l->receive_ms;
    sweep = (sweep < l->first_ms ? sweep : l->first_ms) / 10;
    sweep = sweep < 100 ? 100 : sweep > 1000 ? 1000 : sweep;
    uv_timer_start(&l->idle_timer, on_idle_sweep, (uint64_t)sweep, (uint64_t)sweep);
    l->accepting = true;
    listener_update_polling(l);
    LS_INFO("kafka",
            "listener %s (%s) on %s:%d: accepting up to %lld connections (%lld per address), idle "
            "timeout %lld ms, "
            "%lld bytes of requests in flight, request deadlines %lld ms (first %lld ms)",
            lc->name, ls_secproto_name(lc->protocol), lc->host, l->port, (long long)l->max_conns,
            (long long)l->max_per_ip, (long long)l->idle_ms, (long long)l->recv_max,
            (long long)l->receive_ms, (long long)l->first_ms);
    return l;
}

int ls_kafka_listener_port(const ls_kafka_listener_t *l) { return l->accepting ? l->port : -1; }
const char *ls_kafka_listener_name(const ls_kafka_listener_t *l) { return l->cfg.name; }
ls_secproto ls_kafka_listener_protocol(const ls_kafka_listener_t *l) { return l->cfg.protocol; }

static void listener_maybe_done(ls_kafka_listener_t *l)
{
    if (l->close_done && l->nconns == 0 && l->server_closed) {
        void (*done)(void *) = l->close_done;
        l->close_done = NULL;
        done(l->close_arg);
    }
}

static void on_listener_handle_closed(uv_handle_t *h)
{
    ls_kafka_listener_t *l = h->data;
    if (--l->handles_open > 0) return;
    close(l->fd);
    l->fd = -1;
    if (l->reserve_fd >= 0) close(l->reserve_fd);
    l->reserve_fd = -1;
    l->server_closed = true;
    listener_maybe_done(l);
}

void ls_kafka_listener_quiesce(ls_kafka_listener_t *l)
{
    l->quiesced = true;
    if (l->accepting) {
        l->accepting = false;
        l->polling = false;
        uv_close((uv_handle_t *)&l->poll, on_listener_handle_closed);
        uv_close((uv_handle_t *)&l->backoff, on_listener_handle_closed);
        uv_close((uv_handle_t *)&l->idle_timer, on_listener_handle_closed);
        uv_close((uv_handle_t *)&l->resume_timer, on_listener_handle_closed);
        uv_close((uv_handle_t *)&l->mute_timer, on_listener_handle_closed);
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
    listener_maybe_done(l);
}

ls_status ls_kafka_listener_reload_tls(ls_kafka_listener_t *l, char *err, size_t errlen)
{
    return l->tls && ls_tls_server_reload(l->tls, err, errlen) != 0 ? LS_EINVAL : LS_OK;
}

void ls_kafka_listener_free(ls_kafka_listener_t *l)
{
    ls_tls_server_free(l->tls);
    ls_i64map_free(&l->per_ip); /* a zeroed map (listen failed) frees nothing */
    ls_free(l);
}

void ls_kafka_listener_set_paused(ls_kafka_listener_t *l, bool paused)
{
    l->paused = paused;
    for (ls_kconn_t *c = l->conns.next; c != &l->conns; c = c->next)
        conn_update_reading(c);
}
