/* Blocking Kafka-protocol client of the CLI subcommands (kafka_client.h). */
#include "cli/kafka_client.h"

#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/alloc.h"

int ls_cli_connect(ls_cli_conn_t *c, const char *prog, const char *hostport)
{
    char host[256];
    snprintf(host, sizeof host, "%s", hostport);
    char *colon = strrchr(host, ':');
    if (!colon) {
        fprintf(stderr, "%s: --bootstrap wants HOST:PORT, got '%s'\n", prog, hostport);
        return -1;
    }
    *colon = 0;
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai;
    if (getaddrinfo(host, colon + 1, &hints, &ai) != 0) {
        fprintf(stderr, "%s: cannot resolve %s\n", prog, hostport);
        return -1;
    }
    c->fd = -1;
    for (struct addrinfo *p = ai; p && c->fd < 0; p = p->ai_next) {
        int fd = socket(p->ai_family, p->ai_socktype, p->ai_protocol);
        if (fd >= 0 && connect(fd, p->ai_addr, p->ai_addrlen) == 0)
            c->fd = fd;
        else if (fd >= 0)
            close(fd);
    }
    freeaddrinfo(ai);
    if (c->fd < 0) {
        fprintf(stderr, "%s: cannot connect to %s (is the broker running?)\n", prog, hostport);
        return -1;
    }
    c->prog = prog;
    c->arena = ls_arena_new();
    return 0;
}

int ls_cli_bootstrap_arg(int argc, char **argv, const char **bootstrap)
{
    *bootstrap = "127.0.0.1:9092";
    int i = 0;
    while (i < argc && strncmp(argv[i], "--bootstrap", 11) == 0) {
        if (argv[i][11] == '=') {
            *bootstrap = argv[i] + 12;
            i++;
        } else if (i + 1 < argc) {
            *bootstrap = argv[i + 1];
            i += 2;
        } else {
            return -1;
        }
    }
    return i;
}

int ls_cli_command(int argc, char **argv, void (*usage)(FILE *out), const char **bootstrap,
                   const char **cmd, int *rc)
{
    int i = ls_cli_bootstrap_arg(argc, argv, bootstrap);
    if (i < 0 || i >= argc) {
        usage(stderr);
        *rc = 2;
        return -1;
    }
    *cmd = argv[i++];
    if (strcmp(*cmd, "help") == 0 || strcmp(*cmd, "--help") == 0) {
        usage(stdout);
        *rc = 0;
        return -1;
    }
    return i;
}

void ls_cli_close(ls_cli_conn_t *c)
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
        if (k <= 0) return -1;
        b += k;
        n -= (size_t)k;
    }
    return 0;
}

int ls_cli_call(ls_cli_conn_t *c, int16_t key, int16_t v, bool flex, ls_kw_t *body, ls_kr_t *out)
{
    ls_kw_t w;
    ls_kw_init(&w);
    ls_kw_reserve(&w, 4);
    ls_kw_i16(&w, key);
    ls_kw_i16(&w, v);
    ls_kw_i32(&w, ++c->corr);
    ls_kw_str(&w, false, "lakestream-cli");
    ls_kw_tags(&w, flex);
    ls_kw_raw(&w, body->buf.data, body->buf.len);
    ls_kw_patch_i32(&w, 0, (int32_t)(w.buf.len - 4));
    int rc = io_all(c->fd, w.buf.data, w.buf.len, 1);
    ls_kw_free(&w);
    uint8_t szb[4];
    if (rc != 0 || io_all(c->fd, szb, 4, 0) != 0) {
        fprintf(stderr, "%s: connection lost\n", c->prog);
        return -1;
    }
    uint32_t n = ls_be32_get(szb);
    if (n < 4 || n > (64u << 20)) return -1;
    uint8_t *resp = ls_arena_alloc(c->arena, n);
    if (io_all(c->fd, resp, n, 0) != 0) return -1;
    ls_kr_init(out, resp, n);
    if (ls_kr_i32(out) != c->corr) return -1;
    ls_kr_tags(out, flex);
    return out->err ? -1 : 0;
}
