/* Fault-injecting ls_meta wrapper (see meta_faulty.h for the URL).
 * Each call reads the settings under `mu`, sleeps outside it, then either
 * fails without touching the inner store or delegates; a delegated txn may
 * additionally report failure after it was applied (lost acknowledgement),
 * the case that makes callers resolve ambiguous commits. */
#include "meta/meta_faulty.h"
#include "meta/meta_backend.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"

typedef struct faulty_meta {
    ls_meta_t base;
    ls_meta_t *inner;
    pthread_mutex_t mu;
    double error_rate, txn_error_rate, lost_ack_rate;
    uint64_t fail_nth;
    int64_t latency_ms;
    int down;
    uint64_t rng;
    ls_meta_faulty_stats_t stats;
} faulty_meta_t;

static const ls_meta_ops_t faulty_meta_ops;

static double rng_unit(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *s = x;
    return (double)((x * 0x2545F4914F6CDD1DULL) >> 11) / (double)(1ULL << 53);
}

static int set_param(faulty_meta_t *f, const char *k, const char *v, char *err, int errlen)
{
    char *end;
    double d = strtod(v, &end);
    int num_ok = *v && !*end;
    if (!strcmp(k, "down")) {
        if (strcmp(v, "true") && strcmp(v, "false"))
            goto bad;
        f->down = !strcmp(v, "true");
        return 0;
    }
    if (!num_ok)
        goto bad;
    if (!strcmp(k, "error_rate"))
        f->error_rate = d;
    else if (!strcmp(k, "txn_error_rate"))
        f->txn_error_rate = d;
    else if (!strcmp(k, "lost_ack_rate"))
        f->lost_ack_rate = d;
    else if (!strcmp(k, "fail_nth"))
        f->fail_nth = (uint64_t)d;
    else if (!strcmp(k, "latency_ms"))
        f->latency_ms = (int64_t)d;
    else if (!strcmp(k, "seed"))
        f->rng = (uint64_t)d | 1;
    else {
        snprintf(err, (size_t)errlen, "faulty metadata: unknown parameter '%s'", k);
        return -1;
    }
    if ((!strcmp(k, "error_rate") || !strcmp(k, "txn_error_rate") || !strcmp(k, "lost_ack_rate")) &&
        (d < 0 || d > 1))
        goto bad;
    return 0;
bad:
    snprintf(err, (size_t)errlen, "faulty metadata: bad value '%s' for '%s'", v, k);
    return -1;
}

static int apply_params(faulty_meta_t *f, const char *params, char *err, int errlen)
{
    char *copy = ls_strdup(params), *save = NULL;
    int rc = 0;
    pthread_mutex_lock(&f->mu);
    for (char *kv = strtok_r(copy, "&", &save); kv && rc == 0; kv = strtok_r(NULL, "&", &save)) {
        char *eq = strchr(kv, '=');
        if (!eq) {
            snprintf(err, (size_t)errlen, "faulty metadata: '%s' is not name=value", kv);
            rc = -1;
            break;
        }
        *eq = 0;
        rc = set_param(f, kv, eq + 1, err, errlen);
    }
    pthread_mutex_unlock(&f->mu);
    ls_free(copy);
    return rc;
}

/* Returns non-zero if this call must fail before reaching the store. */
static int before_call(faulty_meta_t *f, int is_txn, int *lose_ack)
{
    pthread_mutex_lock(&f->mu);
    int64_t sleep_ms = f->latency_ms;
    int fail = f->down || rng_unit(&f->rng) < f->error_rate;
    if (is_txn) {
        f->stats.txns++;
        fail = fail || rng_unit(&f->rng) < f->txn_error_rate || f->stats.txns == f->fail_nth;
        *lose_ack = !fail && rng_unit(&f->rng) < f->lost_ack_rate;
        if (*lose_ack)
            f->stats.lost_acks++;
    }
    if (fail)
        f->stats.injected++;
    pthread_mutex_unlock(&f->mu);
    if (sleep_ms > 0)
        usleep((useconds_t)sleep_ms * 1000);
    return fail;
}

/* Injected failures name themselves so broker logs and client errors show
 * them for what they are. */
static ls_status injected(faulty_meta_t *f, const char *what)
{
    snprintf(ls_meta_errbuf(), LS_META_ERRMSG_CAP, "injected fault: %s", what);
    return LS_EIO;
}

static ls_status f_get(ls_meta_t *m, const void *key, size_t klen, ls_kv_t *out)
{
    faulty_meta_t *f = (faulty_meta_t *)m;
    int lose;
    if (before_call(f, 0, &lose))
        return injected(f, "get failed");
    return f->inner->ops->get(f->inner, key, klen, out);
}

static ls_status f_scan(ls_meta_t *m, const void *s, size_t sl, const void *e, size_t el,
                        size_t limit, int reverse, ls_kvlist_t *out)
{
    faulty_meta_t *f = (faulty_meta_t *)m;
    int lose;
    if (before_call(f, 0, &lose))
        return injected(f, "scan failed");
    return f->inner->ops->scan(f->inner, s, sl, e, el, limit, reverse, out);
}

static ls_status f_txn(ls_meta_t *m, const ls_meta_cmp_t *c, size_t nc, const ls_meta_op_t *o,
                       size_t no, int64_t *rev)
{
    faulty_meta_t *f = (faulty_meta_t *)m;
    int lose = 0;
    if (before_call(f, 1, &lose))
        return injected(f, "txn failed");
    ls_status st = f->inner->ops->txn(f->inner, c, nc, o, no, rev);
    return st == LS_OK && lose ? injected(f, "txn applied, acknowledgement lost") : st;
}

static ls_status f_lease_grant(ls_meta_t *m, int64_t ttl, int64_t *out)
{
    faulty_meta_t *f = (faulty_meta_t *)m;
    return f->inner->ops->lease_grant(f->inner, ttl, out);
}

static ls_status f_lease_keepalive(ls_meta_t *m, int64_t lease)
{
    faulty_meta_t *f = (faulty_meta_t *)m;
    return f->inner->ops->lease_keepalive(f->inner, lease);
}

static ls_status f_lease_revoke(ls_meta_t *m, int64_t lease)
{
    faulty_meta_t *f = (faulty_meta_t *)m;
    return f->inner->ops->lease_revoke(f->inner, lease);
}

static ls_status f_watch(ls_meta_t *m, const void *p, size_t pl, int64_t after, ls_meta_watch_cb cb,
                         void *arg, ls_meta_watch_t **out)
{
    faulty_meta_t *f = (faulty_meta_t *)m;
    return f->inner->ops->watch(f->inner, p, pl, after, cb, arg, out);
}

static void f_watch_cancel(ls_meta_t *m, ls_meta_watch_t *w)
{
    faulty_meta_t *f = (faulty_meta_t *)m;
    f->inner->ops->watch_cancel(f->inner, w);
}

static void f_close(ls_meta_t *m)
{
    faulty_meta_t *f = (faulty_meta_t *)m;
    ls_meta_close(f->inner);
    pthread_mutex_destroy(&f->mu);
    ls_free(f);
}

static const ls_meta_ops_t faulty_meta_ops = {
    .name = "faulty",
    .max_txn_ops = LS_META_MAX_TXN_OPS,
    .get = f_get,
    .scan = f_scan,
    .txn = f_txn,
    .lease_grant = f_lease_grant,
    .lease_keepalive = f_lease_keepalive,
    .lease_revoke = f_lease_revoke,
    .watch = f_watch,
    .watch_cancel = f_watch_cancel,
    .close = f_close,
};

ls_meta_t *ls_meta_faulty_open(const char *url, char *err, int errlen)
{
    if (strncmp(url, "faulty+", 7) != 0) {
        snprintf(err, (size_t)errlen, "faulty metadata URL must start with faulty+: '%s'", url);
        return NULL;
    }
    char *inner_url = ls_strdup(url + 7);
    char *q = strchr(inner_url, '?');
    if (q)
        *q++ = 0;
    faulty_meta_t *f = LS_NEW(faulty_meta_t);
    f->base.ops = &faulty_meta_ops;
    pthread_mutex_init(&f->mu, NULL);
    f->rng = (((uint64_t)time(NULL) * 2654435761u) ^ ((uint64_t)getpid() << 16)) | 1;
    if (q && apply_params(f, q, err, errlen) != 0) {
        pthread_mutex_destroy(&f->mu);
        ls_free(f);
        ls_free(inner_url);
        return NULL;
    }
    f->inner = ls_meta_open(inner_url, err, errlen);
    ls_free(inner_url);
    if (!f->inner) {
        pthread_mutex_destroy(&f->mu);
        ls_free(f);
        return NULL;
    }
    return &f->base;
}

int ls_meta_faulty_set(ls_meta_t *m, const char *params, char *err, int errlen)
{
    if (m->ops != &faulty_meta_ops) {
        snprintf(err, (size_t)errlen, "not a faulty metadata store");
        return -1;
    }
    return apply_params((faulty_meta_t *)m, params, err, errlen);
}

void ls_meta_faulty_stats(ls_meta_t *m, ls_meta_faulty_stats_t *out)
{
    faulty_meta_t *f = (faulty_meta_t *)m;
    pthread_mutex_lock(&f->mu);
    *out = f->stats;
    pthread_mutex_unlock(&f->mu);
}
