/* OTLP metrics (opentelemetry-proto metrics/v1, MetricsData) decoded from
 * the Protocol Buffers wire format: what a KIP-714 client pushes.
 *
 * MetricsData -> ResourceMetrics -> ScopeMetrics -> Metric; a Metric's
 * gauge or sum carries NumberDataPoints (attributes, as_double or as_int),
 * each handed to the caller as one point. Histograms, exponential
 * histograms and summaries are counted, not handed over. Unknown fields
 * are skipped (Protobuf's rule); a known field in the wrong wire type, a
 * value cut short, or a name or string attribute that is not UTF-8 makes
 * the payload malformed. Attribute values are rendered as text (strings
 * as they are, ints in decimal, doubles with %.17g, booleans true/false;
 * arrays, maps and bytes are skipped). Stateless; any thread. */
#ifndef LS_TELEMETRY_OTLP_H
#define LS_TELEMETRY_OTLP_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

/* attributes handed over per point; a point with more is skipped (counted) */
#define LS_OTLP_MAX_ATTRS 16

typedef enum { LS_OTLP_GAUGE, LS_OTLP_SUM } ls_otlp_kind;

typedef struct ls_otlp_attr {
    const char *key; /* not NUL-terminated */
    size_t klen;
    const char *val; /* not NUL-terminated; a view of the payload or of num */
    size_t vlen;
    char num[32]; /* a number or boolean value's text */
} ls_otlp_attr_t;

typedef struct ls_otlp_point {
    const char *name; /* the metric's name, not NUL-terminated */
    size_t nlen;
    ls_otlp_kind kind;
    bool delta; /* a sum whose temporality is delta (1), not cumulative */
    double value;
    int nattrs;
    ls_otlp_attr_t attrs[LS_OTLP_MAX_ATTRS];
} ls_otlp_point_t;

typedef struct ls_otlp_stats {
    int64_t points;  /* number points handed over */
    int64_t skipped; /* number points with too many attributes, or no value */
    int64_t other;   /* histogram, exponential histogram and summary metrics */
} ls_otlp_stats_t;

typedef void (*ls_otlp_point_fn)(void *arg, const ls_otlp_point_t *pt);

/* Decodes p[0..len) as MetricsData, calling fn for each number point in
 * order. LS_OK, or LS_ECORRUPT with why (the message and field that failed);
 * points before the failure have been handed over. */
ls_status ls_otlp_decode(const uint8_t *p, size_t len, ls_otlp_point_fn fn, void *arg,
                         ls_otlp_stats_t *stats, char *why, size_t whylen);
#endif
