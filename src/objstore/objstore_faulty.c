/* Fault-injecting ls_objstore wrapper (see objstore_faulty.h for the URL).
 *
 * Each call: snapshot the settings, count the call (if its op is in `ops`),
 * maybe stall, add latency, then decide: down / fail_nth / fail_every /
 * error rate -> fail without touching the inner store; otherwise call the
 * inner store, and for put/del maybe report failure anyway (lost ack).
 * Injected failures set errmsg to "injected fault ..." so logs show them.
 *
 * Threads: any; `mu` guards settings, counters and the RNG. Sleeping happens
 * outside the lock. */
#include "objstore/objstore_faulty.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/clock.h"

enum { OP_PUT, OP_GET, OP_HEAD, OP_DEL, OP_LIST, OP_N };
static const char *const op_names[OP_N] = {"put", "get", "head", "del", "list"};

typedef struct faulty_cfg {
    double error_rate[OP_N];
    double lost_ack_rate;
    ls_status error;
    uint64_t fail_nth, fail_every;
    unsigned ops;              /* bit per OP_* */
    double p50_ms, p99_ms;
    double stall_rate;
    int64_t stall_ms;
    int down;
} faulty_cfg_t;

typedef struct faulty_store {
    ls_objstore_t base;
    ls_objstore_t *inner;
    pthread_mutex_t mu;
    faulty_cfg_t cfg;
    uint64_t rng;
    ls_objstore_faulty_stats_t stats;
} faulty_store_t;

static const ls_objstore_ops_t faulty_ops;

static uint64_t rng_next(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *s = x;
    return x * 0x2545F4914F6CDD1DULL;
}

static double rng_unit(uint64_t *s) { return (double)(rng_next(s) >> 11) * (1.0 / 9007199254740992.0); }

static int parse_rate(const char *v, double *out)
{
    char *end;
    double d = strtod(v, &end);
    if (end == v || *end || !(d >= 0.0 && d <= 1.0))
        return -1;
    *out = d;
    return 0;
}

static int parse_u64(const char *v, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (errno || end == v || *end || v[0] == '-')
        return -1;
    *out = x;
    return 0;
}

/* Applies one parameter. Returns 1 if applied, 0 if unknown, -1 on a bad value. */
static int cfg_apply(faulty_cfg_t *c, uint64_t *seed, const char *k, const char *v, char *err,
                     int errlen)
{
    double d;
    uint64_t u;
    if (strcmp(k, "error_rate") == 0) {
        if (parse_rate(v, &d) != 0)
            goto bad;
        for (int i = 0; i < OP_N; i++)
            c->error_rate[i] = d;
        return 1;
    }
    for (int i = 0; i < OP_N; i++) {
        char name[32];
        snprintf(name, sizeof name, "%s_error_rate", op_names[i]);
        if (strcmp(k, name) == 0) {
            if (parse_rate(v, &c->error_rate[i]) != 0)
                goto bad;
            return 1;
        }
    }
    if (strcmp(k, "lost_ack_rate") == 0) {
        if (parse_rate(v, &c->lost_ack_rate) != 0)
            goto bad;
        return 1;
    }
    if (strcmp(k, "stall_rate") == 0) {
        if (parse_rate(v, &c->stall_rate) != 0)
            goto bad;
        return 1;
    }
    if (strcmp(k, "error") == 0) {
        if (strcasecmp(v, "eagain") == 0)
            c->error = LS_EAGAIN;
        else if (strcasecmp(v, "eio") == 0)
            c->error = LS_EIO;
        else
            goto bad;
        return 1;
    }
    if (strcmp(k, "fail_nth") == 0 || strcmp(k, "fail_every") == 0 || strcmp(k, "stall_ms") == 0 ||
        strcmp(k, "seed") == 0) {
        if (parse_u64(v, &u) != 0)
            goto bad;
        if (k[0] == 'f')
            *(k[5] == 'n' ? &c->fail_nth : &c->fail_every) = u;
        else if (k[1] == 't')
            c->stall_ms = (int64_t)u;
        else
            *seed = u ? u : 1;
        return 1;
    }
    if (strcmp(k, "latency_p50_ms") == 0 || strcmp(k, "latency_p99_ms") == 0) {
        char *end;
        d = strtod(v, &end);
        if (end == v || *end || !(d >= 0.0 && d <= 600000.0))
            goto bad;
        *(k[9] == '5' ? &c->p50_ms : &c->p99_ms) = d;
        return 1;
    }
    if (strcmp(k, "down") == 0) {
        if (strcasecmp(v, "true") == 0 || strcmp(v, "1") == 0)
            c->down = 1;
        else if (strcasecmp(v, "false") == 0 || strcmp(v, "0") == 0)
            c->down = 0;
        else
            goto bad;
        return 1;
    }
    if (strcmp(k, "ops") == 0) {
        unsigned ops = 0;
        char *dup = ls_strdup(v), *save = NULL;
        for (char *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            int found = 0;
            for (int i = 0; i < OP_N; i++)
                if (strcmp(t, op_names[i]) == 0)
                    ops |= 1u << i, found = 1;
            if (!found) {
                ls_free(dup);
                goto bad;
            }
        }
        ls_free(dup);
        c->ops = ops;
        return 1;
    }
    return 0;
bad:
    if (err)
        snprintf(err, (size_t)errlen, "faulty object store: bad value '%s' for %s", v, k);
    return -1;
}

/* Parses "k=v&k=v". Unknown keys go to *rest (re-joined with '&') when
 * rest is not NULL, else they are errors. */
static int cfg_parse(faulty_cfg_t *c, uint64_t *seed, const char *params, ls_buf_t *rest,
                     char *err, int errlen)
{
    const char *p = params;
    while (p && *p) {
        const char *amp = strchr(p, '&');
        size_t len = amp ? (size_t)(amp - p) : strlen(p);
        if (len) {
            char *kv = ls_strndup(p, len);
            char *eq = strchr(kv, '=');
            const char *v = "";
            if (eq) {
                *eq = 0;
                v = eq + 1;
            }
            int rc = cfg_apply(c, seed, kv, v, err, errlen);
            if (rc == 0) {
                if (!rest) {
                    if (err)
                        snprintf(err, (size_t)errlen, "faulty object store: unknown parameter '%s'",
                                 kv);
                    rc = -1;
                } else {
                    ls_buf_printf(rest, "%s%.*s", rest->len ? "&" : "", (int)len, p);
                }
            }
            ls_free(kv);
            if (rc < 0)
                return -1;
        }
        p += len;
        if (*p == '&')
            p++;
    }
    return 0;
}

static void sleep_ms(double ms)
{
    if (ms <= 0)
        return;
    if (ms > 600000)
        ms = 600000;
    struct timespec ts = {(time_t)(ms / 1000), (long)(fmod(ms, 1000.0) * 1e6)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* Before a call: delays, then 1 if it must fail without reaching the store. */
static int before(faulty_store_t *f, int op, int *lost_ack)
{
    pthread_mutex_lock(&f->mu);
    faulty_cfg_t c = f->cfg;
    int counted = (c.ops >> op) & 1;
    uint64_t nth = 0;
    if (counted)
        nth = ++f->stats.calls;
    double u_err = rng_unit(&f->rng), u_stall = rng_unit(&f->rng), u_ack = rng_unit(&f->rng);
    double u1 = rng_unit(&f->rng), u2 = rng_unit(&f->rng);
    int stall = counted && c.stall_rate > 0 && u_stall < c.stall_rate;
    int fail = counted && (c.down || (c.fail_nth && nth == c.fail_nth) ||
                           (c.fail_every && nth % c.fail_every == 0) ||
                           (c.error_rate[op] > 0 && u_err < c.error_rate[op]));
    *lost_ack = counted && !fail && (op == OP_PUT || op == OP_DEL) && c.lost_ack_rate > 0 &&
                u_ack < c.lost_ack_rate;
    if (stall)
        f->stats.stalls++;
    if (fail)
        f->stats.injected++;
    if (*lost_ack)
        f->stats.lost_acks++;
    pthread_mutex_unlock(&f->mu);

    double delay = 0;
    if (c.p50_ms > 0) {
        delay = c.p50_ms;
        if (c.p99_ms > c.p50_ms) {
            double z = sqrt(-2.0 * log(u1 > 0 ? u1 : 1e-300)) * cos(2 * M_PI * u2);
            double sigma = (log(c.p99_ms) - log(c.p50_ms)) / 2.326348;
            delay = exp(log(c.p50_ms) + sigma * z);
        }
    }
    if (stall)
        delay += (double)c.stall_ms;
    sleep_ms(delay);
    if (fail)
        snprintf(ls_objstore_errbuf(), LS_OBJSTORE_ERRMSG_CAP, "injected fault: %s failed (%s)",
                 op_names[op], c.down ? "store down" : "fault injection");
    return fail;
}

static ls_status injected(faulty_store_t *f)
{
    pthread_mutex_lock(&f->mu);
    ls_status st = f->cfg.error;
    pthread_mutex_unlock(&f->mu);
    return st;
}


static ls_status faulty_put(ls_objstore_t *os, const char *key, const struct iovec *iov,
                            int iovcnt, int flags)
{
    faulty_store_t *f = (faulty_store_t *)os;
    int lost;
    if (before(f, OP_PUT, &lost))
        return injected(f);
    ls_status st = ls_objstore_put(f->inner, key, iov, iovcnt, flags);
    if (st == LS_OK && lost) {
        snprintf(ls_objstore_errbuf(), LS_OBJSTORE_ERRMSG_CAP, "injected fault: put %s done, ack lost",
                 key);
        return injected(f);
    }
    return st;
}

static ls_status faulty_get(ls_objstore_t *os, const char *key, uint64_t off, uint64_t len,
                            ls_buf_t *out)
{
    faulty_store_t *f = (faulty_store_t *)os;
    int lost;
    if (before(f, OP_GET, &lost)) {
        out->len = 0;
        return injected(f);
    }
    return ls_objstore_get(f->inner, key, off, len, out);
}

static ls_status faulty_head(ls_objstore_t *os, const char *key, ls_objinfo_t *info)
{
    faulty_store_t *f = (faulty_store_t *)os;
    int lost;
    if (before(f, OP_HEAD, &lost))
        return injected(f);
    return ls_objstore_head(f->inner, key, info);
}

static ls_status faulty_del(ls_objstore_t *os, const char *key)
{
    faulty_store_t *f = (faulty_store_t *)os;
    int lost;
    if (before(f, OP_DEL, &lost))
        return injected(f);
    ls_status st = ls_objstore_del(f->inner, key);
    return st == LS_OK && lost ? injected(f) : st;
}

static ls_status faulty_del_many(ls_objstore_t *os, const char *const *keys, size_t n)
{
    faulty_store_t *f = (faulty_store_t *)os;
    int lost;
    if (before(f, OP_DEL, &lost))
        return injected(f);
    ls_status st = ls_objstore_del_many(f->inner, keys, n);
    return st == LS_OK && lost ? injected(f) : st;
}

static ls_status faulty_list(ls_objstore_t *os, const char *prefix, ls_objinfo_t **out,
                             size_t *n)
{
    faulty_store_t *f = (faulty_store_t *)os;
    int lost;
    if (before(f, OP_LIST, &lost)) {
        *out = NULL;
        *n = 0;
        return injected(f);
    }
    return ls_objstore_list(f->inner, prefix, out, n);
}

static void faulty_close(ls_objstore_t *os)
{
    faulty_store_t *f = (faulty_store_t *)os;
    ls_objstore_close(f->inner);
    pthread_mutex_destroy(&f->mu);
    ls_free(f);
}

static const ls_objstore_ops_t faulty_ops = {
    .name = "faulty",
    .put = faulty_put,
    .get = faulty_get,
    .head = faulty_head,
    .del = faulty_del,
    .list = faulty_list,
    .close = faulty_close,
    .del_many = faulty_del_many,
};

int ls_objstore_is_faulty(const ls_objstore_t *os) { return os && os->ops == &faulty_ops; }

int ls_objstore_faulty_set(ls_objstore_t *os, const char *params, char *err, int errlen)
{
    if (!ls_objstore_is_faulty(os)) {
        if (err)
            snprintf(err, (size_t)errlen, "not a faulty object store");
        return -1;
    }
    faulty_store_t *f = (faulty_store_t *)os;
    pthread_mutex_lock(&f->mu);
    faulty_cfg_t c = f->cfg;
    uint64_t seed = 0;
    int rc = cfg_parse(&c, &seed, params, NULL, err, errlen);
    if (rc == 0) {
        f->cfg = c;
        if (seed)
            f->rng = seed;
    }
    pthread_mutex_unlock(&f->mu);
    return rc;
}

void ls_objstore_faulty_stats(ls_objstore_t *os, ls_objstore_faulty_stats_t *out)
{
    memset(out, 0, sizeof *out);
    if (!ls_objstore_is_faulty(os))
        return;
    faulty_store_t *f = (faulty_store_t *)os;
    pthread_mutex_lock(&f->mu);
    *out = f->stats;
    pthread_mutex_unlock(&f->mu);
}

ls_objstore_t *ls_objstore_faulty_open(const char *url, const ls_objstore_opts_t *o, char *err,
                                       int errlen)
{
    if (!url || strncmp(url, "faulty+", 7) != 0) {
        if (err)
            snprintf(err, (size_t)errlen, "not a faulty+ URL");
        return NULL;
    }
    const char *inner_url = url + 7;
    const char *qm = strchr(inner_url, '?');
    faulty_cfg_t c;
    memset(&c, 0, sizeof c);
    c.error = LS_EAGAIN;
    c.ops = (1u << OP_N) - 1;
    uint64_t seed = 0;
    ls_buf_t rest;
    ls_buf_init(&rest);
    if (cfg_parse(&c, &seed, qm ? qm + 1 : NULL, &rest, err, errlen) != 0) {
        ls_buf_free(&rest);
        return NULL;
    }
    char *iu = qm ? ls_asprintf("%.*s%s%.*s", (int)(qm - inner_url), inner_url,
                                rest.len ? "?" : "", (int)rest.len, (const char *)rest.data)
                  : ls_strdup(inner_url);
    ls_buf_free(&rest);
    ls_objstore_t *inner = ls_objstore_open_opts(iu, o, err, errlen);
    ls_free(iu);
    if (!inner)
        return NULL;
    faulty_store_t *f = LS_NEW(faulty_store_t);
    f->base.ops = &faulty_ops;
    f->inner = inner;
    f->cfg = c;
    f->rng = seed ? seed : ((uint64_t)getpid() << 32 ^ (uint64_t)ls_clock_mono_us()) | 1;
    pthread_mutex_init(&f->mu, NULL);
    return &f->base;
}
