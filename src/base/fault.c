#include "base/fault.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/url.h"

static uint64_t rng_next(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *s = x;
    return x * 0x2545F4914F6CDD1DULL;
}

static double rng_unit(uint64_t *s)
{
    return (double)(rng_next(s) >> 11) * (1.0 / 9007199254740992.0);
}

void ls_fault_init(ls_fault_t *f, const char *what, const char *const *op_names, int nops,
                   unsigned write_ops, ls_status error)
{
    memset(f, 0, sizeof *f);
    pthread_mutex_init(&f->mu, NULL);
    f->what = what;
    f->op_names = op_names;
    f->nops = nops < LS_FAULT_MAX_OPS ? nops : LS_FAULT_MAX_OPS;
    f->write_ops = write_ops;
    f->set.error = error;
    f->set.ops = (1u << f->nops) - 1;
    f->rng = ((uint64_t)getpid() << 32 ^ (uint64_t)ls_clock_mono_us()) | 1;
}

void ls_fault_destroy(ls_fault_t *f) { pthread_mutex_destroy(&f->mu); }

static int parse_rate(const char *v, double *out)
{
    char *end;
    double d = strtod(v, &end);
    if (end == v || *end || !(d >= 0.0 && d <= 1.0)) return -1;
    *out = d;
    return 0;
}

static int parse_u64(const char *v, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (errno || end == v || *end || v[0] == '-') return -1;
    *out = x;
    return 0;
}

typedef struct configure_arg {
    ls_fault_t *f;
    ls_fault_settings_t *s;
    uint64_t seed;
    ls_buf_t *rest;
    char *err;
    size_t errlen;
} configure_arg_t;

/* One parameter: LS_OK applied (or passed on to rest), LS_EINVAL bad or
 * unknown. */
static ls_status apply_param(void *argp, const char *k, const char *v, const char *raw,
                             size_t rawlen)
{
    configure_arg_t *a = argp;
    ls_fault_settings_t *s = a->s;
    const ls_fault_t *f = a->f;
    double d;
    uint64_t u;
    if (strcmp(k, "error_rate") == 0) {
        if (parse_rate(v, &d) != 0) goto bad;
        for (int i = 0; i < f->nops; i++)
            s->error_rate[i] = d;
        return LS_OK;
    }
    for (int i = 0; i < f->nops; i++) {
        size_t n = strlen(f->op_names[i]);
        if (strncmp(k, f->op_names[i], n) == 0 && strcmp(k + n, "_error_rate") == 0) {
            if (parse_rate(v, &s->error_rate[i]) != 0) goto bad;
            return LS_OK;
        }
    }
    if (strcmp(k, "lost_ack_rate") == 0 || strcmp(k, "stall_rate") == 0) {
        if (parse_rate(v, k[0] == 'l' ? &s->lost_ack_rate : &s->stall_rate) != 0) goto bad;
        return LS_OK;
    }
    if (strcmp(k, "error") == 0) {
        if (strcasecmp(v, "eagain") == 0)
            s->error = LS_EAGAIN;
        else if (strcasecmp(v, "eio") == 0)
            s->error = LS_EIO;
        else
            goto bad;
        return LS_OK;
    }
    if (strcmp(k, "fail_nth") == 0 || strcmp(k, "fail_every") == 0 || strcmp(k, "stall_ms") == 0 ||
        strcmp(k, "seed") == 0) {
        if (parse_u64(v, &u) != 0) goto bad;
        if (strcmp(k, "fail_nth") == 0)
            s->fail_nth = u;
        else if (strcmp(k, "fail_every") == 0)
            s->fail_every = u;
        else if (strcmp(k, "stall_ms") == 0)
            s->stall_ms = (int64_t)u;
        else
            a->seed = u ? u : 1;
        return LS_OK;
    }
    if (strcmp(k, "latency_p50_ms") == 0 || strcmp(k, "latency_p99_ms") == 0) {
        char *end;
        d = strtod(v, &end);
        if (end == v || *end || !(d >= 0.0 && d <= 600000.0)) goto bad;
        *(strcmp(k, "latency_p50_ms") == 0 ? &s->p50_ms : &s->p99_ms) = d;
        return LS_OK;
    }
    if (strcmp(k, "down") == 0) {
        if (strcasecmp(v, "true") == 0 || strcmp(v, "1") == 0)
            s->down = true;
        else if (strcasecmp(v, "false") == 0 || strcmp(v, "0") == 0)
            s->down = false;
        else
            goto bad;
        return LS_OK;
    }
    if (strcmp(k, "ops") == 0) {
        unsigned ops = 0;
        for (const char *p = v; *p;) {
            size_t n = strcspn(p, ",");
            int found = -1;
            for (int i = 0; i < f->nops && found < 0; i++)
                if (strlen(f->op_names[i]) == n && strncmp(p, f->op_names[i], n) == 0) found = i;
            if (found < 0) goto bad;
            ops |= 1u << found;
            p += n + (p[n] == ',');
        }
        s->ops = ops;
        return LS_OK;
    }
    if (a->rest) { /* not ours: the inner store's */
        ls_buf_printf(a->rest, "%s%.*s", a->rest->len ? "&" : "", (int)rawlen, raw);
        return LS_OK;
    }
    if (a->err) snprintf(a->err, a->errlen, "%s: unknown parameter '%s'", f->what, k);
    return LS_EINVAL;
bad:
    if (a->err) snprintf(a->err, a->errlen, "%s: bad value '%s' for %s", f->what, v, k);
    return LS_EINVAL;
}

ls_status ls_fault_configure(ls_fault_t *f, const char *params, ls_buf_t *rest, char *err,
                             size_t errlen)
{
    pthread_mutex_lock(&f->mu);
    ls_fault_settings_t s = f->set;
    configure_arg_t a = {f, &s, 0, rest, err, errlen};
    ls_status rc = ls_url_query_foreach(params, false, apply_param, &a, err, errlen);
    if (rc == LS_OK) {
        f->set = s;
        if (a.seed) f->rng = a.seed;
    }
    pthread_mutex_unlock(&f->mu);
    return rc;
}

static void sleep_ms(double ms)
{
    if (ms <= 0) return;
    if (ms > 600000) ms = 600000;
    struct timespec ts = {(time_t)(ms / 1000), (long)(fmod(ms, 1000.0) * 1e6)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

ls_fault_verdict_t ls_fault_before(ls_fault_t *f, int op, char *errbuf, size_t cap)
{
    pthread_mutex_lock(&f->mu);
    ls_fault_settings_t c = f->set;
    bool counted = (c.ops >> op) & 1;
    uint64_t nth = counted ? ++f->stats.calls : 0;
    double u_err = rng_unit(&f->rng), u_stall = rng_unit(&f->rng), u_ack = rng_unit(&f->rng);
    double u1 = rng_unit(&f->rng), u2 = rng_unit(&f->rng);
    bool stall = counted && c.stall_rate > 0 && u_stall < c.stall_rate;
    ls_fault_verdict_t v = {.error = c.error};
    v.fail = counted && (c.down || (c.fail_nth && nth == c.fail_nth) ||
                         (c.fail_every && nth % c.fail_every == 0) ||
                         (c.error_rate[op] > 0 && u_err < c.error_rate[op]));
    v.lose_ack = counted && !v.fail && ((f->write_ops >> op) & 1) && c.lost_ack_rate > 0 &&
                 u_ack < c.lost_ack_rate;
    f->stats.stalls += stall;
    f->stats.injected += v.fail;
    f->stats.lost_acks += v.lose_ack;
    pthread_mutex_unlock(&f->mu);

    double delay = 0;
    if (counted && c.p50_ms > 0) {
        delay = c.p50_ms;
        if (c.p99_ms > c.p50_ms) { /* lognormal through (p50, p99) */
            double z = sqrt(-2.0 * log(u1 > 0 ? u1 : 1e-300)) * cos(2 * M_PI * u2);
            double sigma = (log(c.p99_ms) - log(c.p50_ms)) / 2.326348;
            delay = exp(log(c.p50_ms) + sigma * z);
        }
    }
    if (stall) delay += (double)c.stall_ms;
    sleep_ms(delay);
    if (v.fail && errbuf)
        snprintf(errbuf, cap, "injected fault: %s failed (%s)", f->op_names[op],
                 c.down ? "store down" : "fault injection");
    return v;
}

void ls_fault_get_stats(ls_fault_t *f, ls_fault_stats_t *out)
{
    pthread_mutex_lock(&f->mu);
    *out = f->stats;
    pthread_mutex_unlock(&f->mu);
}
