/* Client quota enforcement: rate windows and throttle times (design:
 * kafka/kquota.h). */
#include "kafka/kquota.h"

#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/hash.h"
#include "base/i64map.h"
#include "kafka/services.h"

#define SWEEP_EVERY 4096 /* records between sweeps of idle windows */

typedef struct window {
    char name[512];
    int64_t last_ms; /* last record */
    int cur;         /* current sample */
    int64_t *start;  /* sample start, ms (0: unused) */
    double *value;
} window_t;

struct ls_kquota {
    ls_quotas_t *quotas;
    int samples;
    int64_t sample_ms;
    ls_i64map_t windows; /* hash of name -> window_t */
    uint64_t records;
};

ls_kquota_t *ls_kquota_new(ls_quotas_t *quotas, int samples, int sample_seconds)
{
    ls_kquota_t *k = LS_NEW(ls_kquota_t);
    k->quotas = quotas;
    k->samples = samples;
    k->sample_ms = (int64_t)sample_seconds * 1000;
    ls_i64map_init(&k->windows);
    return k;
}

static void window_free(window_t *w)
{
    ls_free(w->start);
    ls_free(w->value);
    ls_free(w);
}

void ls_kquota_free(ls_kquota_t *k)
{
    if (!k) return;
    size_t it = 0;
    int64_t key;
    void *v;
    while (ls_i64map_next(&k->windows, &it, &key, &v))
        window_free(v);
    ls_i64map_free(&k->windows);
    ls_free(k);
}

static void sweep(ls_kquota_t *k, int64_t now)
{
    int64_t idle = 2 * k->samples * k->sample_ms;
    size_t it = 0;
    int64_t key;
    void *v;
    int64_t dead[64];
    int nd = 0;
    while (nd < 64 && ls_i64map_next(&k->windows, &it, &key, &v))
        if (now - ((window_t *)v)->last_ms > idle) dead[nd++] = key;
    for (int i = 0; i < nd; i++)
        window_free(ls_i64map_del(&k->windows, dead[i]));
}

/* The window of (principal, client_id, key), created on first use; NULL
 * with *limit untouched when no quota applies. */
static window_t *window_of(ls_kquota_t *k, const char *principal, const char *client_id,
                           ls_quota_key key, double *limit, bool create)
{
    const char *user = strncmp(principal, "User:", 5) == 0 ? principal + 5 : principal;
    char name[512];
    if (!ls_quotas_lookup(k->quotas, user, client_id, key, limit, name, sizeof name)) return NULL;
    int64_t h = (int64_t)ls_hash_str(0, name);
    window_t *w = ls_i64map_get(&k->windows, h);
    if (w && strcmp(w->name, name) != 0) { /* a hash collision: start over */
        window_free(ls_i64map_del(&k->windows, h));
        w = NULL;
    }
    if (!w && create) {
        w = LS_NEW(window_t);
        memcpy(w->name, name, sizeof name);
        w->start = LS_NEWN(int64_t, (size_t)k->samples);
        w->value = LS_NEWN(double, (size_t)k->samples);
        ls_i64map_put(&k->windows, h, w);
    }
    return w;
}

/* Kafka's SampledStat: forgets samples older than the whole window, then
 * moves to a new sample when the current one is full. */
static void window_advance(const ls_kquota_t *k, window_t *w, int64_t now)
{
    for (int i = 0; i < k->samples; i++)
        if (w->start[i] && now - w->start[i] >= k->samples * k->sample_ms) {
            w->start[i] = 0;
            w->value[i] = 0;
        }
    if (!w->start[w->cur]) {
        w->start[w->cur] = now;
    } else if (now - w->start[w->cur] >= k->sample_ms) {
        w->cur = (w->cur + 1) % k->samples;
        w->start[w->cur] = now;
        w->value[w->cur] = 0;
    }
}

int32_t ls_kquota_record(ls_kquota_t *k, const char *principal, const char *client_id,
                         ls_quota_key key, double amount, int64_t now_ms)
{
    if (!k) return 0;
    if (++k->records % SWEEP_EVERY == 0) sweep(k, now_ms);
    double limit = 0;
    window_t *w = window_of(k, principal, client_id, key, &limit, true);
    if (!w) return 0;
    window_advance(k, w, now_ms);
    w->value[w->cur] += amount;
    w->last_ms = now_ms;
    double total = 0;
    int64_t oldest = now_ms;
    for (int i = 0; i < k->samples; i++)
        if (w->start[i]) {
            total += w->value[i];
            if (w->start[i] < oldest) oldest = w->start[i];
        }
    int64_t span = now_ms - oldest, min_span = (k->samples - 1) * k->sample_ms;
    if (span < min_span) span = min_span;
    if (span <= 0) span = k->sample_ms;
    double rate = total * 1000.0 / (double)span;
    if (rate <= limit) return 0;
    int64_t max_ms = k->samples * k->sample_ms;
    double ms = limit > 0 ? (rate - limit) / limit * (double)span : (double)max_ms;
    return (int32_t)(ms > (double)max_ms ? (double)max_ms : ms);
}

void ls_kquota_unrecord(ls_kquota_t *k, const char *principal, const char *client_id,
                        ls_quota_key key, double amount)
{
    if (!k) return;
    double limit = 0;
    window_t *w = window_of(k, principal, client_id, key, &limit, false);
    if (w) w->value[w->cur] -= amount;
}

static void client_id_of(const ls_kreq_t *req, char *out, size_t cap)
{
    snprintf(out, cap, "%.*s", req->client_id.len > 0 ? (int)req->client_id.len : 0,
             req->client_id.len > 0 ? req->client_id.ptr : "");
}

int32_t ls_kreq_quota_record(ls_kreq_t *req, ls_quota_key key, double amount)
{
    char cid[256];
    client_id_of(req, cid, sizeof cid);
    int32_t ms = ls_kquota_record(req->svc->kquota, ls_kreq_principal(req), cid, key, amount,
                                  ls_clock_mono_ms());
    if (ms > req->throttle_ms) req->throttle_ms = ms;
    return ms;
}

void ls_kreq_quota_unrecord(ls_kreq_t *req, ls_quota_key key, double amount)
{
    char cid[256];
    client_id_of(req, cid, sizeof cid);
    ls_kquota_unrecord(req->svc->kquota, ls_kreq_principal(req), cid, key, amount);
}

double ls_kreq_quota_window_max(ls_kreq_t *req, ls_quota_key key)
{
    ls_kquota_t *k = req->svc->kquota;
    char cid[256], window[512];
    const char *principal = ls_kreq_principal(req);
    const char *user = strncmp(principal, "User:", 5) == 0 ? principal + 5 : principal;
    double limit;
    client_id_of(req, cid, sizeof cid);
    if (!k || !ls_quotas_lookup(k->quotas, user, cid, key, &limit, window, sizeof window))
        return -1;
    int spans = k->samples > 1 ? k->samples - 1 : 1;
    return limit * (double)spans * (double)k->sample_ms / 1000.0;
}
