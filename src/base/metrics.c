/* Metrics registry and exposition; contract and design note in metrics.h.
 *
 * A family's series table is open-addressed by the hash of the joined label
 * values: a lookup probes from hash % MAX; an empty slot is claimed with a
 * compare-and-swap of the pointer, and a thread that loses the race to the
 * same label set finds the winner's series on its next probe (it frees its
 * own). Slots are never emptied, so a reader that saw a pointer keeps a
 * valid series. The last free slot is kept for the overflow series: once
 * nseries reaches MAX - 1, new label sets map to it.
 *
 * Histograms keep per-bucket counts (not cumulative) so an observation is
 * one add; the exposition sums them, so the buckets written are cumulative
 * and the +Inf bucket equals _count. The sum is a double updated by a
 * compare-and-swap loop on its bits. */
#include "base/metrics.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/hash.h"

const double ls_metrics_latency_bounds[17] = {
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60};

struct ls_metrics_row {
    ls_metrics_row_t *next;
    char *values[LS_METRICS_MAX_LABELS];
    double v;
};

typedef struct collector {
    struct collector *next;
    ls_metrics_collector_fn fn;
    void *arg;
} collector_t;

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static ls_metric_family_t *families; /* under reg_mu, in joining order (reversed) */
static collector_t *collectors;      /* under reg_mu */
typedef struct exposer {
    struct exposer *next;
    ls_metrics_exposer_fn fn;
    void *arg;
} exposer_t;
static exposer_t *exposers; /* under reg_mu */

static int nlabels(const ls_metric_family_t *f)
{
    int n = 0;
    while (n < LS_METRICS_MAX_LABELS && f->labels[n])
        n++;
    return n;
}

static void join(ls_metric_family_t *f)
{
    if (__atomic_load_n(&f->joined, __ATOMIC_ACQUIRE)) return;
    pthread_mutex_lock(&reg_mu);
    if (!f->joined) {
        f->next = families;
        families = f;
        __atomic_store_n(&f->joined, 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&reg_mu);
}

static ls_metric_t *series_new(const ls_metric_family_t *f, const char *const *values,
                               uint64_t hash)
{
    int n = nlabels(f);
    size_t len = 0;
    for (int i = 0; i < n; i++)
        len += strlen(values[i] ? values[i] : "") + 1;
    ls_metric_t *m = ls_calloc(1, sizeof *m + len + 1);
    m->fam = f;
    m->hash = hash;
    m->key = (char *)(m + 1);
    char *p = m->key;
    for (int i = 0; i < n; i++) {
        size_t l = strlen(values[i] ? values[i] : "");
        memcpy(p, values[i] ? values[i] : "", l);
        p[l] = i + 1 < n ? '\x1f' : 0;
        p += l + 1;
    }
    /* values point into a second copy split at the separators (none
     * without labels: series_free frees values[0], NULL then) */
    char *v = n ? ls_strdup(m->key) : NULL;
    for (int i = 0; i < n; i++) {
        m->values[i] = v;
        v = strchr(v, '\x1f');
        if (v) *v++ = 0;
    }
    return m;
}

static void series_free(ls_metric_t *m)
{
    ls_free(m->values[0]);
    ls_free(m);
}

static bool same_key(const ls_metric_family_t *f, const ls_metric_t *m, const char *const *values)
{
    const char *k = m->key;
    int n = nlabels(f);
    for (int i = 0; i < n; i++) {
        const char *v = values[i] ? values[i] : "";
        size_t l = strlen(v);
        if (strncmp(k, v, l) || (k[l] != (i + 1 < n ? '\x1f' : 0))) return false;
        k += l + 1;
    }
    return true;
}

static uint64_t key_hash(const ls_metric_family_t *f, const char *const *values)
{
    uint64_t h = LS_HASH_INIT;
    int n = nlabels(f);
    for (int i = 0; i < n; i++) {
        h = ls_hash_str(h, values[i] ? values[i] : "");
        h = ls_hash_bytes(h, "\x1f", 1);
    }
    return h;
}

static ls_metric_t *overflow_series(ls_metric_family_t *f)
{
    const char *ov[LS_METRICS_MAX_LABELS] = {LS_METRICS_OVERFLOW, LS_METRICS_OVERFLOW,
                                             LS_METRICS_OVERFLOW};
    uint64_t h = key_hash(f, ov);
    /* the overflow series is found like any other; it may take the last slot */
    for (uint32_t i = 0; i < LS_METRICS_MAX_SERIES; i++) {
        ls_metric_t **slot = &f->slots[(h + i) % LS_METRICS_MAX_SERIES];
        ls_metric_t *m = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
        if (m && m->hash == h && same_key(f, m, ov)) return m;
        if (!m) {
            ls_metric_t *fresh = series_new(f, ov, h);
            if (__atomic_compare_exchange_n(slot, &m, fresh, false, __ATOMIC_ACQ_REL,
                                            __ATOMIC_ACQUIRE)) {
                __atomic_add_fetch(&f->nseries, 1, __ATOMIC_RELAXED);
                return fresh;
            }
            series_free(fresh);
            if (m->hash == h && same_key(f, m, ov)) return m;
        }
    }
    return NULL; /* not reached: a slot is always kept for it */
}

ls_metric_t *ls_metrics_series(ls_metric_family_t *f, const char *const *values)
{
    join(f);
    uint64_t h = key_hash(f, values);
    for (uint32_t i = 0; i < LS_METRICS_MAX_SERIES; i++) {
        ls_metric_t **slot = &f->slots[(h + i) % LS_METRICS_MAX_SERIES];
        ls_metric_t *m = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
        if (m && m->hash == h && same_key(f, m, values)) return m;
        if (m) continue;
        if (__atomic_load_n(&f->nseries, __ATOMIC_RELAXED) >= LS_METRICS_MAX_SERIES - 1)
            return overflow_series(f);
        ls_metric_t *fresh = series_new(f, values, h);
        if (__atomic_compare_exchange_n(slot, &m, fresh, false, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE)) {
            __atomic_add_fetch(&f->nseries, 1, __ATOMIC_RELAXED);
            return fresh;
        }
        series_free(fresh);
        if (m->hash == h && same_key(f, m, values)) return m; /* the same set, raced */
    }
    return overflow_series(f);
}

ls_metric_t *ls_metrics_series0(ls_metric_family_t *f)
{
    const char *none[1] = {NULL};
    return ls_metrics_series(f, none);
}

ls_metric_t *ls_metrics_series1(ls_metric_family_t *f, const char *value)
{
    const char *v[1] = {value};
    return ls_metrics_series(f, v);
}

static double bits_double(uint64_t b)
{
    double d;
    memcpy(&d, &b, sizeof d);
    return d;
}

static uint64_t double_bits(double d)
{
    uint64_t b;
    memcpy(&b, &d, sizeof b);
    return b;
}

void ls_metric_set(ls_metric_t *m, double v)
{
    __atomic_store_n(&m->bits, double_bits(v), __ATOMIC_RELAXED);
}

/* A double kept in m->bits, added to by compare-and-swap. */
static void bits_add(uint64_t *bits, double d)
{
    uint64_t old = __atomic_load_n(bits, __ATOMIC_RELAXED);
    while (!__atomic_compare_exchange_n(bits, &old, double_bits(bits_double(old) + d), true,
                                        __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
}

void ls_metric_gauge_add(ls_metric_t *m, double d) { bits_add(&m->bits, d); }

void ls_metric_observe(ls_metric_t *m, double v)
{
    const ls_metric_family_t *f = m->fam;
    int b = 0;
    while (b < f->nbounds && v > f->bounds[b])
        b++; /* b == nbounds: the +Inf bucket */
    __atomic_add_fetch(&m->buckets[b], 1, __ATOMIC_RELAXED);
    bits_add(&m->bits, v);
    __atomic_add_fetch(&m->count, 1, __ATOMIC_RELAXED);
}

double ls_metric_value(const ls_metric_t *m)
{
    if (m->fam->type == LS_METRIC_T_GAUGE)
        return bits_double(__atomic_load_n(&m->bits, __ATOMIC_RELAXED));
    return (double)__atomic_load_n(&m->count, __ATOMIC_RELAXED);
}

/* ---- published rows ------------------------------------------------------ */

void ls_metrics_rows_init(ls_metrics_rows_t *r)
{
    r->head = NULL;
    r->tail = &r->head;
}

void ls_metrics_rows_add(ls_metrics_rows_t *r, const char *const *values, int n, double v)
{
    ls_metrics_row_t *row = LS_NEW(ls_metrics_row_t);
    for (int i = 0; i < n && i < LS_METRICS_MAX_LABELS; i++)
        row->values[i] = ls_strdup(values[i]);
    row->v = v;
    *r->tail = row;
    r->tail = &row->next;
}

static void rows_free(ls_metrics_row_t *row)
{
    while (row) {
        ls_metrics_row_t *next = row->next;
        for (int i = 0; i < LS_METRICS_MAX_LABELS; i++)
            ls_free(row->values[i]);
        ls_free(row);
        row = next;
    }
}

void ls_metrics_rows_free(ls_metrics_rows_t *r)
{
    rows_free(r->head);
    ls_metrics_rows_init(r);
}

void ls_metrics_publish(ls_metric_family_t *f, ls_metrics_rows_t *r)
{
    join(f);
    pthread_mutex_lock(&reg_mu);
    ls_metrics_row_t *old = f->rows;
    f->rows = r->head;
    f->published = true;
    pthread_mutex_unlock(&reg_mu);
    rows_free(old);
    ls_metrics_rows_init(r);
}

void ls_metrics_collector_add(ls_metrics_collector_fn fn, void *arg)
{
    collector_t *c = LS_NEW(collector_t);
    c->fn = fn;
    c->arg = arg;
    pthread_mutex_lock(&reg_mu);
    c->next = collectors;
    collectors = c;
    pthread_mutex_unlock(&reg_mu);
}

void ls_metrics_collector_remove(ls_metrics_collector_fn fn, void *arg)
{
    pthread_mutex_lock(&reg_mu);
    for (collector_t **p = &collectors; *p; p = &(*p)->next)
        if ((*p)->fn == fn && (*p)->arg == arg) {
            collector_t *c = *p;
            *p = c->next;
            ls_free(c);
            break;
        }
    pthread_mutex_unlock(&reg_mu);
}

/* ---- exposition ---------------------------------------------------------- */

/* The shortest %g form that reads back as v (0.0005, not 0.00050000000000000001). */
static void put_shortest(ls_buf_t *b, double v)
{
    char s[40];
    for (int prec = 6; prec <= 17; prec++) {
        snprintf(s, sizeof s, "%.*g", prec, v);
        if (strtod(s, NULL) == v) break;
    }
    ls_buf_printf(b, "%s", s);
}

/* A number as both formats read it: integers without exponent, +Inf/-Inf/NaN
 * spelled as the formats spell them. */
static void put_number(ls_buf_t *b, double v)
{
    if (isnan(v))
        ls_buf_printf(b, "NaN");
    else if (isinf(v))
        ls_buf_printf(b, v > 0 ? "+Inf" : "-Inf");
    else if (fabs(v) < 1e15 && v == (double)(int64_t)v) /* the cast only when in range */
        ls_buf_printf(b, "%lld", (long long)v);
    else
        put_shortest(b, v);
}

/* A histogram bound as a le value: OpenMetrics wants canonical floats
 * ("1.0", not "1"), which the text format reads as well. */
static void put_bound(ls_buf_t *b, double v)
{
    if (v == (double)(int64_t)v)
        ls_buf_printf(b, "%lld.0", (long long)v);
    else
        put_shortest(b, v);
}

/* Label values escape backslash, double quote and line feed (both formats);
 * HELP text escapes backslash and line feed. */
static void put_escaped_n(ls_buf_t *b, const char *s, size_t n, bool quote)
{
    for (const char *end = s + n; s < end; s++) {
        if (*s == '\\')
            ls_buf_printf(b, "\\\\");
        else if (*s == '\n')
            ls_buf_printf(b, "\\n");
        else if (*s == '"' && quote)
            ls_buf_printf(b, "\\\"");
        else
            ls_buf_append_u8(b, (uint8_t)*s);
    }
}

static void put_escaped(ls_buf_t *b, const char *s, bool quote)
{
    put_escaped_n(b, s, strlen(s), quote);
}

void ls_metrics_put_label(ls_buf_t *b, bool first, const char *name, const char *value, size_t vlen)
{
    ls_buf_printf(b, "%s%s=\"", first ? "" : ",", name);
    put_escaped_n(b, value, vlen, true);
    ls_buf_append_u8(b, '"');
}

void ls_metrics_put_value(ls_buf_t *b, double v) { put_number(b, v); }

/* {a="x",b="y"[,le="..."]}; nothing at all without labels. */
static void put_labels(ls_buf_t *b, const ls_metric_family_t *f, char *const *values,
                       const double *le)
{
    int n = nlabels(f);
    if (!n && !le) return;
    ls_buf_append_u8(b, '{');
    for (int i = 0; i < n; i++) {
        ls_buf_printf(b, "%s%s=\"", i ? "," : "", f->labels[i]);
        put_escaped(b, values[i] ? values[i] : "", true);
        ls_buf_append_u8(b, '"');
    }
    if (le) {
        ls_buf_printf(b, "%sle=\"", n ? "," : "");
        if (isinf(*le))
            ls_buf_printf(b, "+Inf");
        else
            put_bound(b, *le);
        ls_buf_append_u8(b, '"');
    }
    ls_buf_append_u8(b, '}');
}

static void put_series(ls_buf_t *b, const ls_metric_family_t *f, const ls_metric_t *m)
{
    if (f->type == LS_METRIC_T_COUNTER) {
        ls_buf_printf(b, "%s_total", f->name);
        put_labels(b, f, m->values, NULL);
        ls_buf_printf(b, " %llu\n",
                      (unsigned long long)__atomic_load_n(&m->count, __ATOMIC_RELAXED));
        return;
    }
    if (f->type == LS_METRIC_T_GAUGE) {
        ls_buf_printf(b, "%s", f->name);
        put_labels(b, f, m->values, NULL);
        ls_buf_append_u8(b, ' ');
        put_number(b, ls_metric_value(m));
        ls_buf_append_u8(b, '\n');
        return;
    }
    /* one consistent reading: buckets first, then _count as their total, so
     * +Inf == _count even while observations land */
    uint64_t cum = 0;
    for (int i = 0; i <= f->nbounds; i++) {
        cum += __atomic_load_n(&m->buckets[i], __ATOMIC_RELAXED);
        double le = i < f->nbounds ? f->bounds[i] : INFINITY;
        ls_buf_printf(b, "%s_bucket", f->name);
        put_labels(b, f, m->values, &le);
        ls_buf_printf(b, " %llu\n", (unsigned long long)cum);
    }
    ls_buf_printf(b, "%s_sum", f->name);
    put_labels(b, f, m->values, NULL);
    ls_buf_append_u8(b, ' ');
    put_number(b, bits_double(__atomic_load_n(&m->bits, __ATOMIC_RELAXED)));
    ls_buf_printf(b, "\n%s_count", f->name);
    put_labels(b, f, m->values, NULL);
    ls_buf_printf(b, " %llu\n", (unsigned long long)cum);
}

static const char *type_name(ls_metric_type t)
{
    return t == LS_METRIC_T_COUNTER ? "counter" : t == LS_METRIC_T_GAUGE ? "gauge" : "histogram";
}

void ls_metrics_put_header(ls_buf_t *b, const char *name, const char *help, ls_metric_type t,
                           bool om)
{
    /* the text format names a counter family by its samples (_total);
     * OpenMetrics by the name without the suffix */
    const char *suffix = t == LS_METRIC_T_COUNTER && !om ? "_total" : "";
    ls_buf_printf(b, "# HELP %s%s ", name, suffix);
    put_escaped(b, help, false);
    ls_buf_printf(b, "\n# TYPE %s%s %s\n", name, suffix, type_name(t));
}

/* Caller holds reg_mu (published rows). */
static void put_family(ls_buf_t *b, const ls_metric_family_t *f, bool om)
{
    bool any = f->published ? f->rows != NULL : __atomic_load_n(&f->nseries, __ATOMIC_RELAXED);
    if (!any) return;
    ls_metrics_put_header(b, f->name, f->help, f->type, om);
    if (f->published) {
        for (const ls_metrics_row_t *r = f->rows; r; r = r->next) {
            ls_buf_printf(b, "%s", f->name);
            put_labels(b, f, r->values, NULL);
            ls_buf_append_u8(b, ' ');
            put_number(b, r->v);
            ls_buf_append_u8(b, '\n');
        }
        return;
    }
    for (uint32_t i = 0; i < LS_METRICS_MAX_SERIES; i++) {
        const ls_metric_t *m = __atomic_load_n(&f->slots[i], __ATOMIC_ACQUIRE);
        if (m) put_series(b, f, m);
    }
}

static void render_families(ls_metric_family_t *const *fams, int n, ls_buf_t *out, bool om)
{
    pthread_mutex_lock(&reg_mu);
    for (int i = 0; i < n; i++)
        put_family(out, fams[i], om);
    pthread_mutex_unlock(&reg_mu);
}

void ls_metrics_render_families(ls_metric_family_t *const *fams, int n, ls_buf_t *out,
                                bool openmetrics)
{
    render_families(fams, n, out, openmetrics);
    if (openmetrics) ls_buf_printf(out, "# EOF\n");
}

void ls_metrics_exposer_add(ls_metrics_exposer_fn fn, void *arg)
{
    exposer_t *e = LS_NEW(exposer_t);
    e->fn = fn;
    e->arg = arg;
    pthread_mutex_lock(&reg_mu);
    e->next = exposers;
    exposers = e;
    pthread_mutex_unlock(&reg_mu);
}

void ls_metrics_exposer_remove(ls_metrics_exposer_fn fn, void *arg)
{
    pthread_mutex_lock(&reg_mu);
    for (exposer_t **p = &exposers; *p; p = &(*p)->next)
        if ((*p)->fn == fn && (*p)->arg == arg) {
            exposer_t *e = *p;
            *p = e->next;
            ls_free(e);
            break;
        }
    pthread_mutex_unlock(&reg_mu);
}

/* The exposers run without the registry's mutex (they may count). */
static void run_exposers(ls_buf_t *out, bool om)
{
    pthread_mutex_lock(&reg_mu);
    int n = 0;
    for (exposer_t *e = exposers; e; e = e->next)
        n++;
    exposer_t *es = LS_NEWN(exposer_t, (size_t)n + 1);
    n = 0;
    for (exposer_t *e = exposers; e; e = e->next)
        es[n++] = *e;
    pthread_mutex_unlock(&reg_mu);
    for (int i = 0; i < n; i++)
        es[i].fn(es[i].arg, out, om);
    ls_free(es);
}

void ls_metrics_render(ls_buf_t *out, bool openmetrics)
{
    /* collectors run without the registry's mutex: they publish */
    pthread_mutex_lock(&reg_mu);
    int nc = 0;
    for (collector_t *c = collectors; c; c = c->next)
        nc++;
    collector_t *cs = LS_NEWN(collector_t, (size_t)nc + 1);
    nc = 0;
    for (collector_t *c = collectors; c; c = c->next)
        cs[nc++] = *c;
    pthread_mutex_unlock(&reg_mu);
    for (int i = 0; i < nc; i++)
        cs[i].fn(cs[i].arg);
    ls_free(cs);
    pthread_mutex_lock(&reg_mu);
    int n = 0;
    for (ls_metric_family_t *f = families; f; f = f->next)
        n++;
    ls_metric_family_t **v = LS_NEWN(ls_metric_family_t *, (size_t)n + 1);
    int k = n;
    for (ls_metric_family_t *f = families; f; f = f->next)
        v[--k] = f; /* joining order */
    pthread_mutex_unlock(&reg_mu);
    /* sorted by name, so a scrape reads the same from run to run */
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && strcmp(v[j - 1]->name, v[j]->name) > 0; j--) {
            ls_metric_family_t *t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    render_families(v, n, out, openmetrics);
    ls_free(v);
    run_exposers(out, openmetrics);
    if (openmetrics) ls_buf_printf(out, "# EOF\n");
}

const char *ls_metrics_content_type(bool openmetrics)
{
    return openmetrics ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
                       : "text/plain; version=0.0.4; charset=utf-8";
}

bool ls_metrics_wants_openmetrics(const char *accept)
{
    return accept && strstr(accept, "application/openmetrics-text") != NULL;
}
