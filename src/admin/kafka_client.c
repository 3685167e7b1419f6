/* Blocking Kafka-protocol client (kafka_client.h). */
#include "admin/kafka_client.h"

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "base/alloc.h"

int ls_admin_connect(ls_admin_conn_t *c, const char *client_id, const char *hostport,
                     int64_t timeout_ms)
{
    memset(c, 0, sizeof *c);
    c->fd = -1;
    c->client_id = client_id;
    char host[256];
    snprintf(host, sizeof host, "%s", hostport);
    char *colon = strrchr(host, ':');
    if (!colon) {
        snprintf(c->err, sizeof c->err, "wants HOST:PORT, got '%s'", hostport);
        return -1;
    }
    *colon = 0;
    char *h = host;
    if (h[0] == '[' && colon > h && colon[-1] == ']') { /* [v6]:port */
        colon[-1] = 0;
        h++;
    }
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai;
    if (getaddrinfo(h, colon + 1, &hints, &ai) != 0) {
        snprintf(c->err, sizeof c->err, "cannot resolve %s", hostport);
        return -1;
    }
    struct timeval tv = {.tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000};
    for (struct addrinfo *p = ai; p && c->fd < 0; p = p->ai_next) {
        int fd = socket(p->ai_family, p->ai_socktype, p->ai_protocol);
        if (fd >= 0 && timeout_ms > 0) {
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        }
        if (fd >= 0 && connect(fd, p->ai_addr, p->ai_addrlen) == 0)
            c->fd = fd;
        else if (fd >= 0)
            close(fd);
    }
    freeaddrinfo(ai);
    if (c->fd < 0) {
        snprintf(c->err, sizeof c->err, "cannot connect to %s (is the broker running?)", hostport);
        return -1;
    }
    c->arena = ls_arena_new();
    return 0;
}

void ls_admin_close(ls_admin_conn_t *c)
{
    if (c->fd >= 0) close(c->fd);
    if (c->arena) ls_arena_free(c->arena);
    c->fd = -1;
    c->arena = NULL;
}

static int io_all(int fd, void *p, size_t n, int wr)
{
    uint8_t *b = p;
    while (n > 0) {
        ssize_t k = wr ? write(fd, b, n) : read(fd, b, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        b += k;
        n -= (size_t)k;
    }
    return 0;
}

int ls_admin_call(ls_admin_conn_t *c, int16_t key, int16_t v, bool flex, ls_kw_t *body,
                  ls_kr_t *out)
{
    ls_kw_t w;
    ls_kw_init(&w);
    ls_kw_reserve(&w, 4);
    ls_kw_i16(&w, key);
    ls_kw_i16(&w, v);
    ls_kw_i32(&w, ++c->corr);
    ls_kw_str(&w, false, c->client_id);
    ls_kw_tags(&w, flex);
    ls_kw_raw(&w, body->buf.data, body->buf.len);
    ls_kw_patch_i32(&w, 0, (int32_t)(w.buf.len - 4));
    int rc = io_all(c->fd, w.buf.data, w.buf.len, 1);
    ls_kw_free(&w);
    uint8_t szb[4];
    if (rc != 0 || io_all(c->fd, szb, 4, 0) != 0) {
        snprintf(c->err, sizeof c->err, "connection lost (or no answer in time)");
        return -1;
    }
    uint32_t n = ls_be32_get(szb);
    uint8_t *resp = n >= 4 && n <= (64u << 20) ? ls_arena_alloc(c->arena, n) : NULL;
    if (!resp || io_all(c->fd, resp, n, 0) != 0) {
        snprintf(c->err, sizeof c->err, "bad response frame");
        return -1;
    }
    ls_kr_init(out, resp, n);
    if (ls_kr_i32(out) != c->corr) {
        snprintf(c->err, sizeof c->err, "response out of order");
        return -1;
    }
    ls_kr_tags(out, flex);
    if (out->err) snprintf(c->err, sizeof c->err, "bad response header");
    return out->err ? -1 : 0;
}

const char *ls_admin_error_name(int code, ls_admin_errbuf_t *buf)
{
    const char *name = ls_kafka_error_name(code);
    if (name) return name;
    snprintf(buf->s, sizeof buf->s, "error %d", code);
    return buf->s;
}
