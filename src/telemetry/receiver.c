/* The client-metrics receiver; see receiver.h for the design note. */
#include "telemetry/receiver.h"

#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/compress.h"
#include "base/crc32c.h"
#include "base/hash.h"
#include "base/i64map.h"
#include "base/metrics.h"
#include "telemetry/otlp.h"

#define NEVER (INT64_MIN / 2)
#define FAMILY "lakestream_client_metric"

const int8_t ls_telemetry_codecs[4] = {LS_CODEC_ZSTD, LS_CODEC_LZ4, LS_CODEC_GZIP, LS_CODEC_SNAPPY};

static LS_METRIC_COUNTER(m_requests, "lakestream_client_telemetry_requests",
                         "GetTelemetrySubscriptions and PushTelemetry requests by outcome.", "api",
                         "outcome");
static LS_METRIC_COUNTER(m_dropped, "lakestream_client_telemetry_series_dropped",
                         "Pushed series not kept: past the per-client or total bound.");
static LS_METRIC_COUNTER(m_points, "lakestream_client_telemetry_points",
                         "Data points of accepted pushes: number (kept as series), unusable (no "
                         "value, or too many attributes), histogram (histograms and summaries, "
                         "not kept).",
                         "kind");
static LS_METRIC_GAUGE(m_instances, "lakestream_client_telemetry_instances",
                       "Client instances known to this broker's telemetry receiver.");
static LS_METRIC_GAUGE(m_series, "lakestream_client_telemetry_series",
                       "Client metric series kept by this broker's telemetry receiver.");

typedef struct series {
    char *key;    /* name, then \x1f key \x1e value per attribute: the identity */
    char *labels; /* name="..." and the attributes, rendered */
    size_t bytes; /* what it holds: key, labels, itself */
    double value;
} series_t;

typedef struct inst {
    ls_uuid_t id;
    char idstr[23];                   /* Kafka's text form (its Uuid.toString) */
    char *attr[LS_TELEMETRY_NPARAMS]; /* as first seen (Kafka's instance metadata) */
    int64_t version;                  /* of the subscriptions evaluated */
    int32_t sub_id, interval_ms;
    char **metrics;
    int nmetrics;
    int64_t last_get, last_push, last_seen;
    bool got_since_push; /* a get was answered after the last accepted push */
    bool terminating;
    ls_telemetry_outcome last_error;
    ls_i64map_t index; /* key hash -> series_t * */
    int nseries;
} inst_t;

struct ls_telemetry {
    ls_telemetry_subs_t *subs;
    pthread_mutex_t mu;
    inst_t **insts;
    int ninsts;
    int64_t nseries; /* over every instance */
    size_t bytes;    /* their series_t.bytes */
};

/* ------------------------------------------------------------- instances */

/* Every series joins and leaves through these two, which keep the counts. */
static void series_add(ls_telemetry_t *t, inst_t *in, int64_t h, series_t *s)
{
    s->bytes = strlen(s->key) + strlen(s->labels) + sizeof *s;
    ls_i64map_put(&in->index, h, s);
    in->nseries++;
    t->nseries++;
    t->bytes += s->bytes;
}

static void series_remove(ls_telemetry_t *t, inst_t *in, int64_t h)
{
    series_t *s = ls_i64map_del(&in->index, h);
    in->nseries--;
    t->nseries--;
    t->bytes -= s->bytes;
    ls_free(s->key);
    ls_free(s->labels);
    ls_free(s);
}

/* Removes the instance's series for which keep(in, s) is false (all of
 * them when keep is NULL). */
static void drop_series_if(ls_telemetry_t *t, inst_t *in,
                           bool (*keep)(const inst_t *, const series_t *))
{
    int64_t *gone = LS_NEWN(int64_t, in->nseries + 1);
    int n = 0;
    size_t it = 0;
    int64_t k;
    void *v;
    while (ls_i64map_next(&in->index, &it, &k, &v))
        if (!keep || !keep(in, v)) gone[n++] = k;
    for (int i = 0; i < n; i++)
        series_remove(t, in, gone[i]);
    ls_free(gone);
}

static void drop_series(ls_telemetry_t *t, inst_t *in) { drop_series_if(t, in, NULL); }

static void inst_free(ls_telemetry_t *t, inst_t *in)
{
    drop_series(t, in);
    ls_i64map_free(&in->index);
    for (int i = 0; i < LS_TELEMETRY_NPARAMS; i++)
        ls_free(in->attr[i]);
    for (int i = 0; i < in->nmetrics; i++)
        ls_free(in->metrics[i]);
    ls_free(in->metrics);
    ls_free(in);
}

static void remove_at(ls_telemetry_t *t, int i)
{
    inst_free(t, t->insts[i]);
    t->insts[i] = t->insts[--t->ninsts];
}

static int64_t expiry_ms(const inst_t *in)
{
    int64_t three = 3 * (int64_t)in->interval_ms;
    return three > LS_TELEMETRY_EXPIRY_MIN_MS ? three : LS_TELEMETRY_EXPIRY_MIN_MS;
}

static void expire(ls_telemetry_t *t, int64_t now)
{
    for (int i = 0; i < t->ninsts;)
        if (now - t->insts[i]->last_seen > expiry_ms(t->insts[i]))
            remove_at(t, i);
        else
            i++;
}

static void publish_gauges(const ls_telemetry_t *t)
{
    ls_metric_set(ls_metrics_series0(&m_instances), t->ninsts);
    ls_metric_set(ls_metrics_series0(&m_series), (double)t->nseries);
}

/* Java's Uuid.hashCode: the two halves XORed, then folded to 32 bits. */
static int32_t uuid_hash(const ls_uuid_t *u)
{
    uint64_t hi = 0, lo = 0;
    for (int i = 0; i < 8; i++) {
        hi = hi << 8 | u->b[i];
        lo = lo << 8 | u->b[8 + i];
    }
    uint64_t h = hi ^ lo;
    return (int32_t)(uint32_t)((h >> 32) ^ h);
}

static int32_t subscription_id(const inst_t *in)
{
    ls_buf_t b;
    ls_buf_init(&b);
    ls_buf_printf(&b, "[");
    for (int i = 0; i < in->nmetrics; i++)
        ls_buf_printf(&b, "%s%s", i ? ", " : "", in->metrics[i]);
    ls_buf_printf(&b, "]%d", (int)in->interval_ms);
    uint32_t crc = ls_crc32c(0, b.data, b.len);
    ls_buf_free(&b);
    return (int32_t)crc ^ uuid_hash(&in->id);
}

/* Whether the instance's subscription asks for metric name[0..n). */
static bool wanted(const inst_t *in, const char *name, size_t n)
{
    for (int i = 0; i < in->nmetrics; i++) {
        size_t pl = strlen(in->metrics[i]);
        if (!strcmp(in->metrics[i], LS_TELEMETRY_ALL_METRICS) ||
            (pl <= n && !memcmp(in->metrics[i], name, pl)))
            return true;
    }
    return false;
}

static bool still_wanted(const inst_t *in, const series_t *s)
{
    return wanted(in, s->key, strcspn(s->key, "\x1f"));
}

/* (Re)evaluates in against the subscriptions, as a fresh instance; the
 * series it is no longer subscribed to go. */
static void evaluate(ls_telemetry_t *t, inst_t *in)
{
    ls_telemetry_client_t c;
    memcpy(c.attr, in->attr, sizeof c.attr);
    ls_telemetry_match_t m;
    ls_telemetry_subs_match(t->subs, &c, &m);
    for (int i = 0; i < in->nmetrics; i++)
        ls_free(in->metrics[i]);
    ls_free(in->metrics);
    in->metrics = m.metrics;
    in->nmetrics = m.nmetrics;
    in->interval_ms = m.interval_ms;
    in->version = m.version;
    in->sub_id = subscription_id(in);
    in->last_get = in->last_push = NEVER;
    in->got_since_push = false;
    in->terminating = false;
    in->last_error = LS_TELEMETRY_OK;
    drop_series_if(t, in, still_wanted); /* what it is no longer subscribed to */
}

static inst_t *find(ls_telemetry_t *t, const ls_uuid_t *id)
{
    for (int i = 0; i < t->ninsts; i++)
        if (!memcmp(t->insts[i]->id.b, id->b, 16)) return t->insts[i];
    return NULL;
}

/* The instance of id, created (evaluated) or evaluated again when the
 * subscriptions changed since; c->attr[INSTANCE_ID] is set to its text. */
static inst_t *instance(ls_telemetry_t *t, ls_telemetry_client_t *c, const ls_uuid_t *id,
                        int64_t now)
{
    expire(t, now);
    inst_t *in = find(t, id);
    if (!in) {
        if (t->ninsts == LS_TELEMETRY_MAX_CLIENTS) { /* the one seen longest ago goes */
            int old = 0;
            for (int i = 1; i < t->ninsts; i++)
                if (t->insts[i]->last_seen < t->insts[old]->last_seen) old = i;
            remove_at(t, old);
        }
        in = LS_NEW(inst_t);
        in->id = *id;
        ls_uuid_format_kafka(id, in->idstr);
        ls_i64map_init(&in->index);
        c->attr[LS_TELEMETRY_P_INSTANCE_ID] = in->idstr;
        for (int i = 0; i < LS_TELEMETRY_NPARAMS; i++)
            in->attr[i] = c->attr[i] ? ls_strdup(c->attr[i]) : NULL;
        t->insts = ls_realloc(t->insts, (size_t)(t->ninsts + 1) * sizeof *t->insts);
        t->insts[t->ninsts++] = in;
        evaluate(t, in);
    } else if (in->version != ls_telemetry_subs_version(t->subs)) {
        evaluate(t, in);
    }
    c->attr[LS_TELEMETRY_P_INSTANCE_ID] = in->idstr;
    in->last_seen = now;
    return in;
}

/* ------------------------------------------------------------- requests */

static const char *outcome_name(ls_telemetry_outcome o)
{
    static const char *const names[] = {"ok",
                                        "throttled",
                                        "invalid_request",
                                        "unknown_subscription",
                                        "unsupported_compression",
                                        "too_large",
                                        "invalid_record"};
    return names[o];
}

/* Counts the outcome, then releases the lock the request took. */
static ls_telemetry_outcome counted(ls_telemetry_t *t, const char *api, ls_telemetry_outcome o)
{
    const char *v[] = {api, outcome_name(o)};
    ls_metric_add(ls_metrics_series(&m_requests, v), 1);
    publish_gauges(t);
    pthread_mutex_unlock(&t->mu);
    return o;
}

void ls_telemetry_sub_free(ls_telemetry_sub_t *s)
{
    for (int i = 0; i < s->nmetrics; i++)
        ls_free(s->metrics[i]);
    ls_free(s->metrics);
    s->metrics = NULL;
    s->nmetrics = 0;
}

ls_telemetry_outcome ls_telemetry_get(ls_telemetry_t *t, ls_telemetry_client_t *c,
                                      const ls_uuid_t *id, int64_t now, ls_telemetry_sub_t *out,
                                      char *why, size_t whylen)
{
    memset(out, 0, sizeof *out);
    why[0] = 0;
    pthread_mutex_lock(&t->mu);
    ls_uuid_t fresh = *id;
    if (ls_uuid_is_zero(id)) do /* a new instance: an id no other has */
            ls_uuid_random(&fresh);
        while (find(t, &fresh));
    inst_t *in = instance(t, c, &fresh, now);
    int64_t last = in->last_get > in->last_push ? in->last_get : in->last_push;
    bool retry = in->last_error == LS_TELEMETRY_UNKNOWN_SUB ||
                 in->last_error == LS_TELEMETRY_BAD_COMPRESSION;
    if (now - last < in->interval_ms && !retry) {
        snprintf(why, whylen,
                 "Request from the client [%s] arrived before the next push interval time",
                 in->idstr);
        return counted(t, "get", LS_TELEMETRY_THROTTLED);
    }
    in->last_get = now;
    in->got_since_push = true;
    in->last_error = LS_TELEMETRY_OK;
    out->instance_id = in->id;
    out->subscription_id = in->sub_id;
    out->interval_ms = in->interval_ms;
    out->metrics = LS_NEWN(char *, in->nmetrics + 1);
    for (int i = 0; i < in->nmetrics; i++)
        out->metrics[i] = ls_strdup(in->metrics[i]);
    out->nmetrics = in->nmetrics;
    return counted(t, "get", LS_TELEMETRY_OK);
}

/* A Prometheus label name from an attribute key: [a-zA-Z_][a-zA-Z0-9_]*,
 * other bytes as '_', a leading digit or "__" (reserved) prefixed. */
static void label_name(const char *k, size_t n, ls_buf_t *out)
{
    if (!n || isdigit((unsigned char)k[0]) || (n >= 2 && k[0] == '_' && k[1] == '_'))
        ls_buf_printf(out, "attr_");
    for (size_t i = 0; i < n; i++)
        ls_buf_append_u8(out, isalnum((unsigned char)k[i]) ? (uint8_t)k[i] : '_');
}

/* The labels of a new series: name, then each attribute under its label
 * name; one that clashes with a label already there is prefixed attr_,
 * and left out if it still does. */
static char *render_labels(const ls_otlp_point_t *pt)
{
    ls_buf_t b, nm;
    ls_buf_init(&b);
    ls_buf_init(&nm);
    const char *taken[LS_OTLP_MAX_ATTRS + 3] = {"client_instance_id", "client_id", "name"};
    char *names[LS_OTLP_MAX_ATTRS];
    int ntaken = 3;
    ls_metrics_put_label(&b, false, "name", pt->name, pt->nlen);
    for (int i = 0; i < pt->nattrs; i++) {
        names[i] = NULL;
        for (int attempt = 0; attempt < 2 && !names[i]; attempt++) {
            nm.len = 0;
            if (attempt) ls_buf_printf(&nm, "attr_");
            label_name(pt->attrs[i].key, pt->attrs[i].klen, &nm);
            ls_buf_append_u8(&nm, 0);
            bool clash = false;
            for (int k = 0; k < ntaken && !clash; k++)
                clash = !strcmp(taken[k], (const char *)nm.data);
            if (!clash) names[i] = ls_strdup((const char *)nm.data);
        }
        if (!names[i]) continue;
        taken[ntaken++] = names[i];
        ls_metrics_put_label(&b, false, names[i], pt->attrs[i].val, pt->attrs[i].vlen);
    }
    for (int i = 0; i < pt->nattrs; i++)
        ls_free(names[i]);
    ls_buf_free(&nm);
    ls_buf_append_u8(&b, 0);
    return (char *)b.data;
}

typedef struct apply {
    ls_telemetry_t *t;
    inst_t *in;
} apply_t;

static void on_point(void *arg, const ls_otlp_point_t *pt)
{
    apply_t *a = arg;
    if (!wanted(a->in, pt->name, pt->nlen)) return; /* not subscribed: not kept */
    ls_buf_t key;
    ls_buf_init(&key);
    ls_buf_append(&key, pt->name, pt->nlen);
    for (int i = 0; i < pt->nattrs; i++) {
        ls_buf_append_u8(&key, 0x1f);
        ls_buf_append(&key, pt->attrs[i].key, pt->attrs[i].klen);
        ls_buf_append_u8(&key, 0x1e);
        ls_buf_append(&key, pt->attrs[i].val, pt->attrs[i].vlen);
    }
    ls_buf_append_u8(&key, 0);
    int64_t h = (int64_t)ls_hash_fast(key.data, key.len);
    series_t *s = ls_i64map_get(&a->in->index, h);
    if (s && strcmp(s->key, (const char *)key.data) != 0) s = NULL; /* a clash: dropped below */
    if (!s &&
        (ls_i64map_get(&a->in->index, h) || a->in->nseries >= LS_TELEMETRY_MAX_CLIENT_SERIES ||
         a->t->nseries >= LS_TELEMETRY_MAX_SERIES)) {
        ls_metric_add(ls_metrics_series0(&m_dropped), 1);
        ls_buf_free(&key);
        return;
    }
    if (!s) {
        char *labels = render_labels(pt);
        if (a->t->bytes + key.len + strlen(labels) > LS_TELEMETRY_MAX_SERIES_BYTES) {
            ls_metric_add(ls_metrics_series0(&m_dropped), 1);
            ls_free(labels);
            ls_buf_free(&key);
            return;
        }
        s = LS_NEW(series_t);
        s->key = (char *)key.data;
        s->labels = labels;
        ls_buf_init(&key);
        series_add(a->t, a->in, h, s);
    }
    ls_buf_free(&key);
    s->value = pt->kind == LS_OTLP_SUM && pt->delta ? s->value + pt->value : pt->value;
}

static void no_point(void *arg, const ls_otlp_point_t *pt)
{
    (void)arg;
    (void)pt;
}

/* Decompresses and decodes the payload: nothing changes unless it all
 * decodes. */
static ls_telemetry_outcome ingest(ls_telemetry_t *t, inst_t *in, const ls_telemetry_push_t *p,
                                   char *why, size_t whylen)
{
    ls_buf_t plain;
    ls_buf_init(&plain);
    const uint8_t *d = p->metrics;
    size_t n = p->len;
    if (p->compression != LS_CODEC_NONE) {
        ls_status st =
            ls_decompress(p->compression, p->metrics, p->len, LS_TELEMETRY_MAX_DECODED, &plain);
        if (st != LS_OK) {
            snprintf(why, whylen, "Telemetry from [%s] does not decompress as %s: %s", in->idstr,
                     ls_codec_name(p->compression), ls_status_str(st));
            ls_buf_free(&plain);
            return LS_TELEMETRY_BAD_PAYLOAD;
        }
        d = plain.data;
        n = plain.len;
    }
    ls_otlp_stats_t stats;
    char err[256];
    ls_status rc = ls_otlp_decode(d, n, no_point, NULL, &stats, err, sizeof err);
    if (rc == LS_OK) {
        apply_t a = {t, in};
        ls_otlp_decode(d, n, on_point, &a, &stats, err, sizeof err);
        ls_metric_add(ls_metrics_series1(&m_points, "number"), (uint64_t)stats.points);
        ls_metric_add(ls_metrics_series1(&m_points, "unusable"), (uint64_t)stats.skipped);
        ls_metric_add(ls_metrics_series1(&m_points, "histogram"), (uint64_t)stats.other);
    } else {
        snprintf(why, whylen, "Telemetry from [%s] is not OTLP MetricsData: %s", in->idstr, err);
    }
    ls_buf_free(&plain);
    return rc == 0 ? LS_TELEMETRY_OK : LS_TELEMETRY_BAD_PAYLOAD;
}

static bool reserved_id(const ls_uuid_t *id)
{
    static const uint8_t one[16] = {[15] = 1}; /* Kafka's reserved ids: zero and one */
    return ls_uuid_is_zero(id) || !memcmp(id->b, one, 16);
}

static bool codec_known(int8_t c)
{
    return c == LS_CODEC_NONE || c == LS_CODEC_GZIP || c == LS_CODEC_SNAPPY || c == LS_CODEC_LZ4 ||
           c == LS_CODEC_ZSTD;
}

/* Kafka's checks, in its order; the push's timestamp is taken when it may
 * be accepted. */
static ls_telemetry_outcome push_check(inst_t *in, const ls_telemetry_push_t *p, int64_t now,
                                       char *why, size_t whylen)
{
    if (in->terminating) {
        snprintf(why, whylen,
                 "Client [%s] sent the previous request with state terminating to TRUE, can "
                 "not accept any requests after that",
                 in->idstr);
        return LS_TELEMETRY_BAD_REQUEST;
    }
    /* by order, not by clock: a get and a push in the same millisecond */
    bool accept = in->got_since_push || now - in->last_push >= in->interval_ms;
    if (accept) {
        in->last_push = now;
        in->got_since_push = false;
    } else if (!p->terminating) {
        snprintf(why, whylen,
                 "Request from the client [%s] arrived before the next push interval time",
                 in->idstr);
        return LS_TELEMETRY_THROTTLED;
    }
    if (p->subscription_id != in->sub_id) {
        snprintf(why, whylen, "Unknown client subscription id for the client [%s]", in->idstr);
        return LS_TELEMETRY_UNKNOWN_SUB;
    }
    if (!codec_known(p->compression)) {
        snprintf(why, whylen,
                 "Unknown compression type [%d] is received in telemetry request from [%s]",
                 (int)p->compression, in->idstr);
        return LS_TELEMETRY_BAD_COMPRESSION;
    }
    if (p->len > LS_TELEMETRY_MAX_BYTES) {
        snprintf(why, whylen,
                 "Telemetry request from [%s] is larger than the maximum allowed size [%d]",
                 in->idstr, LS_TELEMETRY_MAX_BYTES);
        return LS_TELEMETRY_TOO_LARGE;
    }
    return LS_TELEMETRY_OK;
}

ls_telemetry_outcome ls_telemetry_push(ls_telemetry_t *t, ls_telemetry_client_t *c,
                                       const ls_telemetry_push_t *p, int64_t now, char *why,
                                       size_t whylen)
{
    why[0] = 0;
    pthread_mutex_lock(&t->mu);
    if (reserved_id(&p->instance_id)) {
        snprintf(why, whylen, "Invalid request from the client, invalid client instance id");
        return counted(t, "push", LS_TELEMETRY_BAD_REQUEST);
    }
    inst_t *in = instance(t, c, &p->instance_id, now);
    ls_telemetry_outcome o = push_check(in, p, now, why, whylen);
    if (o == LS_TELEMETRY_OK) {
        in->terminating = p->terminating;
        if (p->len) o = ingest(t, in, p, why, whylen);
        if (p->terminating) drop_series(t, in);
    }
    in->last_error = o;
    return counted(t, "push", o);
}

/* ------------------------------------------------------------- exposition */

static void render(void *arg, ls_buf_t *out, bool om)
{
    ls_telemetry_render(arg, out, om, ls_clock_mono_ms());
}

void ls_telemetry_render(ls_telemetry_t *t, ls_buf_t *out, bool openmetrics, int64_t now)
{
    pthread_mutex_lock(&t->mu);
    expire(t, now);
    publish_gauges(t);
    if (t->nseries)
        ls_metrics_put_header(out, FAMILY,
                              "Metrics pushed by clients (KIP-714), by client instance: the "
                              "latest value (delta sums: their total since first seen here).",
                              LS_METRIC_T_GAUGE, openmetrics);
    for (int i = 0; i < t->ninsts; i++) {
        inst_t *in = t->insts[i];
        const char *cid =
            in->attr[LS_TELEMETRY_P_CLIENT_ID] ? in->attr[LS_TELEMETRY_P_CLIENT_ID] : "";
        size_t it = 0;
        int64_t k;
        void *v;
        while (ls_i64map_next(&in->index, &it, &k, &v)) {
            const series_t *s = v;
            ls_buf_printf(out, FAMILY "{");
            ls_metrics_put_label(out, true, "client_instance_id", in->idstr, strlen(in->idstr));
            ls_metrics_put_label(out, false, "client_id", cid, strlen(cid));
            ls_buf_printf(out, "%s} ", s->labels);
            ls_metrics_put_value(out, s->value);
            ls_buf_append_u8(out, '\n');
        }
    }
    pthread_mutex_unlock(&t->mu);
}

/* ------------------------------------------------------------- open */

ls_telemetry_t *ls_telemetry_open(ls_telemetry_subs_t *subs)
{
    ls_telemetry_t *t = LS_NEW(ls_telemetry_t);
    t->subs = subs;
    pthread_mutex_init(&t->mu, NULL);
    ls_metrics_exposer_add(render, t);
    return t;
}

void ls_telemetry_close(ls_telemetry_t *t)
{
    if (!t) return;
    ls_metrics_exposer_remove(render, t);
    for (int i = 0; i < t->ninsts; i++)
        inst_free(t, t->insts[i]);
    ls_free(t->insts);
    pthread_mutex_destroy(&t->mu);
    ls_free(t);
}
