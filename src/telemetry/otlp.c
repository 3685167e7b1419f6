/* OTLP metrics decoder; see otlp.h. Field numbers are those of
 * opentelemetry-proto's metrics/v1/metrics.proto and common/v1/common.proto. */
#include "telemetry/otlp.h"

#include <stdio.h>
#include <string.h>

#include "base/pbwire.h"
#include "base/utf8.h"

typedef struct dec {
    ls_otlp_point_fn fn;
    void *arg;
    ls_otlp_stats_t *stats;
    char *why;
    size_t whylen;
} dec_t;

static int bad(dec_t *d, const char *msg, uint32_t field)
{
    snprintf(d->why, d->whylen, "%s: field %u is malformed or in the wrong wire type", msg,
             (unsigned)field);
    return -1;
}

static double as_double(uint64_t bits)
{
    double v;
    memcpy(&v, &bits, sizeof v);
    return v;
}

/* AnyValue: 1 string, 2 bool, 3 int, 4 double (5 array, 6 kvlist, 7 bytes
 * skipped). false when the value has no text form. */
static int any_value(dec_t *d, const uint8_t *p, size_t len, ls_otlp_attr_t *a, bool *has)
{
    const uint8_t *q = p, *e = p + len;
    ls_pbwire_field_t f;
    int rc;
    *has = false;
    while ((rc = ls_pbwire_next(&q, e, &f)) == 1) {
        switch (f.num) {
        case 1:
            if (f.wt != 2 || !ls_utf8_valid(f.d, f.n)) return bad(d, "AnyValue", f.num);
            a->val = (const char *)f.d;
            a->vlen = f.n;
            *has = true;
            break;
        case 2:
        case 3:
            if (f.wt != 0) return bad(d, "AnyValue", f.num);
            if (f.num == 2)
                snprintf(a->num, sizeof a->num, "%s", f.v ? "true" : "false");
            else
                snprintf(a->num, sizeof a->num, "%lld", (long long)f.v);
            a->val = a->num;
            a->vlen = strlen(a->num);
            *has = true;
            break;
        case 4:
            if (f.wt != 1) return bad(d, "AnyValue", f.num);
            snprintf(a->num, sizeof a->num, "%.17g", as_double(f.v));
            a->val = a->num;
            a->vlen = strlen(a->num);
            *has = true;
            break;
        default: break;
        }
    }
    return rc < 0 ? bad(d, "AnyValue", 0) : 0;
}

/* KeyValue: 1 key, 2 value. */
static int key_value(dec_t *d, const uint8_t *p, size_t len, ls_otlp_attr_t *a, bool *has)
{
    const uint8_t *q = p, *e = p + len;
    ls_pbwire_field_t f;
    int rc;
    memset(a, 0, sizeof *a);
    *has = false;
    while ((rc = ls_pbwire_next(&q, e, &f)) == 1) {
        if (f.num == 1) {
            if (f.wt != 2 || !ls_utf8_valid(f.d, f.n)) return bad(d, "KeyValue", f.num);
            a->key = (const char *)f.d;
            a->klen = f.n;
        } else if (f.num == 2) {
            if (f.wt != 2 || any_value(d, f.d, f.n, a, has) != 0) return bad(d, "KeyValue", 2);
        }
    }
    if (rc < 0) return bad(d, "KeyValue", 0);
    *has = *has && a->klen > 0;
    return 0;
}

/* NumberDataPoint: 7 attributes, 4 as_double, 6 as_int (2, 3 times, 5
 * exemplars, 8 flags skipped). */
static int number_point(dec_t *d, const uint8_t *p, size_t len, ls_otlp_point_t *pt)
{
    const uint8_t *q = p, *e = p + len;
    ls_pbwire_field_t f;
    int rc;
    bool has_value = false, too_many = false;
    pt->nattrs = 0;
    while ((rc = ls_pbwire_next(&q, e, &f)) == 1) {
        switch (f.num) {
        case 4:
        case 6:
            if (f.wt != 1) return bad(d, "NumberDataPoint", f.num);
            pt->value = f.num == 4 ? as_double(f.v) : (double)(int64_t)f.v;
            has_value = true;
            break;
        case 7: {
            if (f.wt != 2) return bad(d, "NumberDataPoint", f.num);
            ls_otlp_attr_t a;
            bool has;
            if (key_value(d, f.d, f.n, &a, &has) != 0) return -1;
            if (!has) break;
            if (pt->nattrs == LS_OTLP_MAX_ATTRS) {
                too_many = true;
                break;
            }
            pt->attrs[pt->nattrs] = a;
            if (a.val == a.num) pt->attrs[pt->nattrs].val = pt->attrs[pt->nattrs].num;
            pt->nattrs++;
            break;
        }
        default: break;
        }
    }
    if (rc < 0) return bad(d, "NumberDataPoint", 0);
    if (!has_value || too_many) {
        d->stats->skipped++;
        return 0;
    }
    d->stats->points++;
    d->fn(d->arg, pt);
    return 0;
}

/* Gauge (1 data_points) or Sum (1 data_points, 2 aggregation_temporality,
 * 3 is_monotonic). The temporality may follow the points: read it first. */
static int number_metric(dec_t *d, const uint8_t *p, size_t len, ls_otlp_point_t *pt)
{
    const uint8_t *q = p, *e = p + len;
    ls_pbwire_field_t f;
    int rc;
    pt->delta = false;
    while ((rc = ls_pbwire_next(&q, e, &f)) == 1)
        if (f.num == 2) {
            if (f.wt != 0) return bad(d, "Sum", f.num);
            pt->delta = pt->kind == LS_OTLP_SUM && f.v == 1;
        }
    if (rc < 0) return bad(d, pt->kind == LS_OTLP_SUM ? "Sum" : "Gauge", 0);
    q = p;
    while ((rc = ls_pbwire_next(&q, e, &f)) == 1)
        if (f.num == 1) {
            if (f.wt != 2) return bad(d, pt->kind == LS_OTLP_SUM ? "Sum" : "Gauge", f.num);
            if (number_point(d, f.d, f.n, pt) != 0) return -1;
        }
    return 0;
}

/* Metric: 1 name, 5 gauge, 7 sum; 9 histogram, 10 exponential histogram,
 * 11 summary counted. The name may follow the data: read it first. */
static int metric(dec_t *d, const uint8_t *p, size_t len)
{
    const uint8_t *q = p, *e = p + len;
    ls_pbwire_field_t f;
    int rc;
    ls_otlp_point_t pt;
    memset(&pt, 0, sizeof pt);
    while ((rc = ls_pbwire_next(&q, e, &f)) == 1)
        if (f.num == 1) {
            if (f.wt != 2 || !ls_utf8_valid(f.d, f.n)) return bad(d, "Metric", f.num);
            pt.name = (const char *)f.d;
            pt.nlen = f.n;
        }
    if (rc < 0) return bad(d, "Metric", 0);
    q = p;
    while ((rc = ls_pbwire_next(&q, e, &f)) == 1) {
        if (f.num == 5 || f.num == 7) {
            if (f.wt != 2) return bad(d, "Metric", f.num);
            pt.kind = f.num == 5 ? LS_OTLP_GAUGE : LS_OTLP_SUM;
            if (pt.nlen && number_metric(d, f.d, f.n, &pt) != 0) return -1;
        } else if (f.num == 9 || f.num == 10 || f.num == 11) {
            if (f.wt != 2) return bad(d, "Metric", f.num);
            d->stats->other++;
        }
    }
    return 0;
}

/* The repeated message field `num` of p[0..len), each element handed to fn. */
static int each(dec_t *d, const char *msg, const uint8_t *p, size_t len, uint32_t num,
                int (*fn)(dec_t *, const uint8_t *, size_t))
{
    const uint8_t *q = p, *e = p + len;
    ls_pbwire_field_t f;
    int rc;
    while ((rc = ls_pbwire_next(&q, e, &f)) == 1)
        if (f.num == num) {
            if (f.wt != 2) return bad(d, msg, f.num);
            if (fn(d, f.d, f.n) != 0) return -1;
        }
    return rc < 0 ? bad(d, msg, 0) : 0;
}

/* ScopeMetrics: 2 metrics. */
static int scope_metrics(dec_t *d, const uint8_t *p, size_t len)
{
    return each(d, "ScopeMetrics", p, len, 2, metric);
}

/* ResourceMetrics: 2 scope_metrics. */
static int resource_metrics(dec_t *d, const uint8_t *p, size_t len)
{
    return each(d, "ResourceMetrics", p, len, 2, scope_metrics);
}

ls_status ls_otlp_decode(const uint8_t *p, size_t len, ls_otlp_point_fn fn, void *arg,
                         ls_otlp_stats_t *stats, char *why, size_t whylen)
{
    dec_t d = {fn, arg, stats, why, whylen};
    memset(stats, 0, sizeof *stats);
    why[0] = 0;
    if (!len) return LS_OK; /* p may be NULL then */
    /* MetricsData: 1 resource_metrics */
    return each(&d, "MetricsData", p, len, 1, resource_metrics) == 0 ? LS_OK : LS_ECORRUPT;
}
