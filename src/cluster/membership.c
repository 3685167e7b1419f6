/* Cluster membership; the design note is in membership.h. */
#include "cluster/membership.h"

#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/diag.h"
#include "base/thread.h"
#include "meta/meta_keys.h"

#define REGISTER_ATTEMPTS 20

struct ls_membership {
    ls_meta_t *meta;
    ls_member_t self;
    int64_t ttl_ms;
    void (*on_change)(void *arg);
    void *arg;
    char key[64];
    int64_t lease; /* renewal thread only, after start */
    pthread_mutex_t mu;
    pthread_cond_t cond;
    bool stop;
    ls_member_t *live; /* under mu, sorted by id */
    int nlive;
    ls_meta_watch_t *watch;
    pthread_t thread;
};

static void encode_self(const ls_member_t *m, char **out)
{
    json_t *j =
        json_pack("{s:i, s:s, s:i, s:s, s:I}", "id", (int)m->id, "host", m->host, "port",
                  (int)m->port, "rack", m->rack, "since_ms", (json_int_t)ls_clock_wall_ms());
    json_t *eps = json_array();
    for (int i = 0; i < m->nendpoints; i++)
        json_array_append_new(eps,
                              json_pack("{s:s, s:s, s:i}", "name", m->endpoints[i].name, "host",
                                        m->endpoints[i].host, "port", (int)m->endpoints[i].port));
    json_object_set_new(j, "endpoints", eps);
    *out = json_dumps(j, JSON_COMPACT);
    json_decref(j);
}

int ls_member_decode(const uint8_t *val, size_t len, ls_member_t *out)
{
    json_error_t je;
    json_t *j = json_loadb((const char *)val, len, 0, &je);
    if (!j) return -1;
    json_t *id = json_object_get(j, "id"), *host = json_object_get(j, "host"),
           *port = json_object_get(j, "port"), *rack = json_object_get(j, "rack");
    int ok = json_is_integer(id) && json_is_string(host) && json_is_integer(port) &&
             (!rack || json_is_string(rack));
    if (ok) {
        memset(out, 0, sizeof *out);
        out->id = (int32_t)json_integer_value(id);
        snprintf(out->host, sizeof out->host, "%s", json_string_value(host));
        out->port = (int32_t)json_integer_value(port);
        if (rack) snprintf(out->rack, sizeof out->rack, "%s", json_string_value(rack));
        json_t *eps = json_object_get(j, "endpoints");
        for (size_t i = 0; json_is_array(eps) && i < json_array_size(eps) &&
                           out->nendpoints < LS_MEMBER_MAX_ENDPOINTS;
             i++) {
            json_t *e = json_array_get(eps, i), *en = json_object_get(e, "name"),
                   *eh = json_object_get(e, "host"), *ep = json_object_get(e, "port");
            if (!json_is_string(en) || !json_is_string(eh) || !json_is_integer(ep)) continue;
            ls_endpoint_t *d = &out->endpoints[out->nendpoints++];
            snprintf(d->name, sizeof d->name, "%s", json_string_value(en));
            snprintf(d->host, sizeof d->host, "%s", json_string_value(eh));
            d->port = (int32_t)json_integer_value(ep);
        }
    }
    json_decref(j);
    return ok ? 0 : -1;
}

static int member_cmp(const void *a, const void *b)
{
    const ls_member_t *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* Replaces the live set; tells on_change if it differs. */
static void set_live(ls_membership_t *m, ls_member_t *v, int n)
{
    bool self_listed = false;
    for (int i = 0; i < n; i++)
        self_listed |= v[i].id == m->self.id;
    if (!self_listed) {
        v = ls_realloc(v, (size_t)(n + 1) * sizeof *v);
        v[n++] = m->self;
    }
    qsort(v, (size_t)n, sizeof *v, member_cmp);
    pthread_mutex_lock(&m->mu);
    bool changed = n != m->nlive || memcmp(v, m->live, (size_t)n * sizeof *v) != 0;
    ls_free(m->live);
    m->live = v;
    m->nlive = n;
    pthread_mutex_unlock(&m->mu);
    if (changed) {
        LS_INFO("cluster", "live brokers: %d", n);
        if (m->on_change) m->on_change(m->arg);
    }
}

static ls_status rescan(ls_membership_t *m, int64_t *rev)
{
    ls_kvlist_t l;
    ls_status st = ls_meta_scan_prefix(m->meta, LS_KEY_BROKERS, 0, &l);
    if (st != LS_OK) return st;
    ls_member_t *v = LS_NEWN(ls_member_t, l.n + 1);
    int n = 0;
    for (size_t i = 0; i < l.n; i++) {
        if (ls_member_decode(l.v[i].val, l.v[i].vlen, &v[n]) == 0)
            n++;
        else
            LS_WARN("cluster", "ignoring malformed broker registration at %.*s", (int)l.v[i].klen,
                    (const char *)l.v[i].key);
    }
    if (rev) *rev = l.revision;
    ls_kvlist_free(&l);
    set_live(m, v, n);
    return LS_OK;
}

static void on_watch(void *arg, const ls_meta_event_t *ev, size_t n)
{
    ls_membership_t *m = arg;
    /* any change (or a watch that fell behind): rescan, the set is small */
    (void)ev;
    (void)n;
    ls_status st = rescan(m, NULL);
    if (st != LS_OK)
        LS_WARN("cluster", "reading live brokers: %s: %s", ls_status_str(st),
                ls_meta_error(m->meta));
}

/* Writes the registration under a fresh lease. A key held by this broker's
 * previous incarnation (same address) is taken over; one held by another
 * live broker is LS_EEXISTS with err naming it. */
static ls_status register_self(ls_membership_t *m, char *err, size_t errlen)
{
    int64_t lease;
    ls_status st = ls_meta_lease_grant(m->meta, m->ttl_ms, &lease);
    if (st != LS_OK) {
        snprintf(err, errlen, "granting the broker session lease: %s: %s", ls_status_str(st),
                 ls_meta_error(m->meta));
        return st;
    }
    char *val;
    encode_self(&m->self, &val);
    ls_meta_op_t put = {.kind = LS_META_OP_PUT,
                        .key = m->key,
                        .klen = strlen(m->key),
                        .val = val,
                        .vlen = strlen(val),
                        .lease = lease};
    int64_t taken_over = 0; /* the lease of a previous run we replace */
    for (int attempt = 0; attempt < REGISTER_ATTEMPTS; attempt++) {
        if (attempt > 0 && st != LS_ECONFLICT)
            usleep(100 * 1000); /* a transient store error: try again shortly */
        ls_kv_t kv;
        st = ls_meta_get(m->meta, m->key, &kv);
        if (st != LS_OK && st != LS_ENOTFOUND) {
            if (ls_status_retriable(st)) continue;
            break;
        }
        if (st == LS_OK && kv.lease == lease) {
            /* an earlier attempt was applied but its answer was lost */
            ls_kv_free(&kv);
            st = LS_OK;
            break;
        }
        int64_t rev = st == LS_OK ? kv.mod_rev : 0, old_lease = 0;
        if (st == LS_OK) {
            ls_member_t other;
            int ok = ls_member_decode(kv.val, kv.vlen, &other) == 0;
            old_lease = kv.lease;
            taken_over = old_lease != lease ? old_lease : 0;
            ls_kv_free(&kv);
            if (ok && (strcmp(other.host, m->self.host) != 0 || other.port != m->self.port)) {
                snprintf(err, errlen,
                         "broker.id %d is registered by a live broker at %s:%d (this broker "
                         "advertises %s:%d); give every broker a unique broker.id",
                         (int)m->self.id, other.host, (int)other.port, m->self.host,
                         (int)m->self.port);
                st = LS_EEXISTS;
                break;
            }
        }
        ls_meta_cmp_t cmp = {
            .kind = LS_META_CMP_MOD_REV, .key = m->key, .klen = strlen(m->key), .rev = rev};
        st = ls_meta_txn(m->meta, &cmp, 1, &put, 1, NULL);
        if (st == LS_ECONFLICT || (st != LS_OK && ls_status_retriable(st)))
            continue; /* reread: the write may have been applied */
        break;
    }
    free(val);
    if (st == LS_OK) {
        if (taken_over) {
            LS_INFO("cluster", "took over the registration of broker %d's previous run",
                    (int)m->self.id);
            ls_meta_lease_revoke(m->meta, taken_over);
        }
        m->lease = lease;
        return LS_OK;
    }
    ls_meta_lease_revoke(m->meta, lease);
    if (st != LS_EEXISTS)
        snprintf(err, errlen, "registering broker %d: %s: %s", (int)m->self.id, ls_status_str(st),
                 ls_meta_error(m->meta));
    return st;
}

static void *renew_thread(void *arg)
{
    ls_membership_t *m = arg;
    int64_t every = m->ttl_ms / 3 > 0 ? m->ttl_ms / 3 : 1;
    bool warned = false;
    int64_t last_ok = ls_clock_mono_ms(); /* last successful renewal */
    pthread_mutex_lock(&m->mu);
    while (!m->stop) {
        int64_t slept_from = ls_clock_mono_ms();
        ls_cond_wait_until(&m->cond, &m->mu, slept_from + every);
        if (m->stop) break;
        pthread_mutex_unlock(&m->mu);
        int64_t woke = ls_clock_mono_ms();
        ls_status st = ls_meta_lease_keepalive(m->meta, m->lease);
        if (st == LS_ENOTFOUND) {
            /* Say what is known: a wait of `every` that took far longer means
             * this process did not run (SIGSTOP, a VM pause, CPU starvation);
             * otherwise renewals kept failing, i.e. the store was unreachable. */
            int64_t overslept = woke - slept_from - every;
            if (overslept > every)
                LS_WARN("cluster",
                        "broker session lease expired: this broker did not run for "
                        "%lld ms (paused or starved of CPU), longer than broker.session.timeout.ms "
                        "(%lld); other brokers may have taken over its groups and partitions; "
                        "registering again",
                        (long long)(woke - slept_from), (long long)m->ttl_ms);
            else
                LS_WARN("cluster",
                        "broker session lease expired: renewals failed for %lld ms "
                        "(metadata store unreachable?), longer than broker.session.timeout.ms "
                        "(%lld); registering again",
                        (long long)(woke - last_ok), (long long)m->ttl_ms);
            char err[512];
            st = register_self(m, err, sizeof err);
            if (st != LS_OK) LS_ERROR("cluster", "%s", err);
        }
        if (st != LS_OK && !warned)
            LS_WARN("cluster", "renewing the broker session lease: %s: %s", ls_status_str(st),
                    ls_meta_error(m->meta));
        warned = st != LS_OK;
        if (st == LS_OK) {
            last_ok = ls_clock_mono_ms();
            rescan(m, NULL);
        }
        pthread_mutex_lock(&m->mu);
    }
    pthread_mutex_unlock(&m->mu);
    return NULL;
}

ls_membership_t *ls_membership_start(ls_meta_t *meta, const ls_member_t *self,
                                     int64_t session_timeout_ms, void (*on_change)(void *arg),
                                     void *arg, char *err, size_t errlen)
{
    ls_membership_t *m = LS_NEW(ls_membership_t);
    m->meta = meta;
    m->self = *self;
    m->ttl_ms = session_timeout_ms;
    snprintf(m->key, sizeof m->key, LS_KEY_BROKERS "%010d", (int)self->id);
    pthread_mutex_init(&m->mu, NULL);
    ls_cond_init_mono(&m->cond);
    /* a registration of another broker may be a crashed one whose lease has
     * not expired yet: wait up to one session timeout for it */
    int64_t deadline = ls_clock_mono_ms() + session_timeout_ms + 1000;
    ls_status st;
    for (;;) {
        st = register_self(m, err, errlen);
        if (st != LS_EEXISTS || ls_clock_mono_ms() > deadline) break;
        usleep(250 * 1000);
    }
    int64_t rev = 0;
    if (st == LS_OK) {
        st = LS_EAGAIN;
        for (int attempt = 0; attempt < REGISTER_ATTEMPTS && ls_status_retriable(st); attempt++) {
            if (attempt) usleep(100 * 1000); /* a transient store error */
            st = rescan(m, &rev);
        }
        if (st != LS_OK) snprintf(err, errlen, "reading live brokers: %s", ls_status_str(st));
    }
    if (st == LS_OK) {
        st = ls_meta_watch(meta, LS_KEY_BROKERS, strlen(LS_KEY_BROKERS), rev, on_watch, m,
                           &m->watch);
        if (st != LS_OK) snprintf(err, errlen, "watching live brokers: %s", ls_status_str(st));
    }
    if (st != LS_OK || ls_thread_start(&m->thread, "ls-membership", renew_thread, m) != 0) {
        if (st == LS_OK)
            snprintf(err, errlen, "starting the membership thread: %s", strerror(errno));
        if (m->watch) ls_meta_watch_cancel(meta, m->watch);
        if (m->lease) ls_meta_lease_revoke(meta, m->lease);
        pthread_mutex_destroy(&m->mu);
        pthread_cond_destroy(&m->cond);
        ls_free(m->live);
        ls_free(m);
        return NULL;
    }
    LS_INFO("cluster", "registered as broker %d (%s:%d%s%s), session timeout %lld ms",
            (int)self->id, self->host, (int)self->port, *self->rack ? ", rack " : "", self->rack,
            (long long)session_timeout_ms);
    return m;
}

int ls_membership_members(ls_membership_t *m, ls_member_t **out)
{
    pthread_mutex_lock(&m->mu);
    int n = m->nlive;
    *out = LS_NEWN(ls_member_t, n ? n : 1);
    memcpy(*out, m->live, (size_t)n * sizeof **out);
    pthread_mutex_unlock(&m->mu);
    return n;
}

void ls_membership_stop(ls_membership_t *m)
{
    if (!m) return;
    pthread_mutex_lock(&m->mu);
    m->stop = true;
    pthread_cond_signal(&m->cond);
    pthread_mutex_unlock(&m->mu);
    pthread_join(m->thread, NULL);
    ls_meta_watch_cancel(m->meta, m->watch);
    ls_status st = ls_meta_lease_revoke(m->meta, m->lease);
    if (st != LS_OK && st != LS_ENOTFOUND)
        LS_WARN("cluster",
                "deregistering broker %d: %s (its registration expires with the "
                "session lease)",
                (int)m->self.id, ls_status_str(st));
    else
        LS_INFO("cluster", "deregistered broker %d", (int)m->self.id);
    pthread_mutex_destroy(&m->mu);
    pthread_cond_destroy(&m->cond);
    ls_free(m->live);
    ls_free(m);
}
