/* Process-wide metrics registry and its exposition (GET /metrics).
 *
 * Families are declared where they are counted, as static objects
 * (LS_METRIC_COUNTER / LS_METRIC_GAUGE / LS_METRIC_HISTOGRAM), and join the
 * registry the first time a series of theirs is asked for, so a module that
 * never counts anything never shows an empty family. Names follow the
 * Prometheus conventions: a unit in the name (_bytes, _seconds), counters
 * declared without their _total suffix (the exposition adds it, as both the
 * text format 0.0.4 and OpenMetrics want it on the samples), histograms in
 * seconds.
 *
 * Series: a family has at most LS_METRICS_MAX_LABELS label names and at
 * most LS_METRICS_MAX_SERIES series; label values are only ever bounded
 * sets (topics, APIs, operations, groups: never a client or a partition
 * crossed with another axis). Past the bound every further label set counts
 * in one series whose label values are all LS_METRICS_OVERFLOW, so nothing
 * is lost from the totals and memory stays bounded.
 *
 * Hot path (produce, fetch, request completion): ls_metrics_series is a
 * lock-free lookup in the family's open-addressed table (a new label set is
 * inserted with one compare-and-swap, so two threads adding the same one
 * agree on a single series), and counting is one relaxed atomic add, so no
 * lock is ever taken where records flow. Series live as long as the process
 * (a counter of a deleted topic keeps its last value, as Prometheus expects
 * of counters).
 *
 * Published families: values computed elsewhere as a whole (per-table and
 * per-group lag, read from the metadata store) are replaced wholesale with
 * ls_metrics_publish, under the registry's mutex, so a table or a group that
 * is gone stops being exposed. Collectors (ls_metrics_collector_add) run at
 * every scrape, on the HTTP server's thread, before the families are
 * written: they set gauges or publish rows; they must be thread-safe.
 *
 * Threads: everything here is safe from any thread. */
#ifndef LS_METRICS_H
#define LS_METRICS_H
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/buf.h"

#define LS_METRICS_MAX_LABELS 3
#define LS_METRICS_MAX_SERIES 1024 /* per family, the overflow series included */
#define LS_METRICS_MAX_BUCKETS 24
#define LS_METRICS_OVERFLOW "_overflow"

typedef enum { LS_METRIC_T_COUNTER, LS_METRIC_T_GAUGE, LS_METRIC_T_HISTOGRAM } ls_metric_type;

struct ls_metric_family;
typedef struct ls_metric {
    const struct ls_metric_family *fam;
    uint64_t hash;
    char *key;                                /* label values joined by \x1f */
    char *values[LS_METRICS_MAX_LABELS];      /* into the same allocation as key */
    uint64_t count;                           /* atomic: counter value, or observations */
    uint64_t bits;                            /* atomic: gauge value or histogram sum (double) */
    uint64_t buckets[LS_METRICS_MAX_BUCKETS]; /* atomic: observations per bucket (not cumulative) */
} ls_metric_t;

typedef struct ls_metrics_row ls_metrics_row_t;

typedef struct ls_metric_family {
    const char *name; /* a counter's without _total */
    const char *help;
    ls_metric_type type;
    const char *labels[LS_METRICS_MAX_LABELS]; /* label names, NULL-terminated when fewer */
    const double *bounds;                      /* histogram: upper bounds, ascending (+Inf added) */
    int nbounds;
    /* the registry's */
    int joined; /* atomic */
    struct ls_metric_family *next;
    ls_metric_t *slots[LS_METRICS_MAX_SERIES]; /* atomic pointers */
    uint32_t nseries;                          /* atomic */
    ls_metrics_row_t *rows;                    /* published (under the registry's mutex) */
    bool published;
} ls_metric_family_t;

#define LS_METRIC_COUNTER(var, nm, hp, ...)                                                        \
    ls_metric_family_t var = {                                                                     \
        .name = nm, .help = hp, .type = LS_METRIC_T_COUNTER, .labels = {__VA_ARGS__}}
#define LS_METRIC_GAUGE(var, nm, hp, ...)                                                          \
    ls_metric_family_t var = {                                                                     \
        .name = nm, .help = hp, .type = LS_METRIC_T_GAUGE, .labels = {__VA_ARGS__}}
#define LS_METRIC_HISTOGRAM(var, nm, hp, bnds, ...)                                                \
    ls_metric_family_t var = {.name = nm,                                                          \
                              .help = hp,                                                          \
                              .type = LS_METRIC_T_HISTOGRAM,                                       \
                              .bounds = bnds,                                                      \
                              .nbounds = (int)(sizeof bnds / sizeof bnds[0]),                      \
                              .labels = {__VA_ARGS__}}

/* Latency buckets shared by the request, store and pass histograms:
 * 0.5 ms to 60 s. */
extern const double ls_metrics_latency_bounds[17];

/* The series of f with these label values (as many as f has label names;
 * NULL values are ""), created on first use. Never NULL. */
ls_metric_t *ls_metrics_series(ls_metric_family_t *f, const char *const *values);
/* Shorthands for families with no label or one label. */
ls_metric_t *ls_metrics_series0(ls_metric_family_t *f);
ls_metric_t *ls_metrics_series1(ls_metric_family_t *f, const char *value);

static inline void ls_metric_add(ls_metric_t *m, uint64_t n)
{
    __atomic_add_fetch(&m->count, n, __ATOMIC_RELAXED);
}
void ls_metric_set(ls_metric_t *m, double v);
/* A counter kept elsewhere (a module's own monotonic statistics): its value. */
static inline void ls_metric_counter_store(ls_metric_t *m, uint64_t v)
{
    __atomic_store_n(&m->count, v, __ATOMIC_RELAXED);
}
void ls_metric_gauge_add(ls_metric_t *m, double d); /* a gauge up or down */
void ls_metric_observe(ls_metric_t *m, double v);
double ls_metric_value(const ls_metric_t *m); /* a counter's count or a gauge's value */

/* Rows of a published family: built by one thread, then handed over. */
typedef struct ls_metrics_rows {
    ls_metrics_row_t *head, **tail;
} ls_metrics_rows_t;
void ls_metrics_rows_init(ls_metrics_rows_t *r);
/* values: n label values, in the order of the family's label names. */
void ls_metrics_rows_add(ls_metrics_rows_t *r, const char *const *values, int n, double v);
void ls_metrics_rows_free(ls_metrics_rows_t *r);
/* Replaces f's exposed samples by rows (taken; r is left empty). f is then
 * only exposed through what is published (a gauge family). */
void ls_metrics_publish(ls_metric_family_t *f, ls_metrics_rows_t *r);

typedef void (*ls_metrics_collector_fn)(void *arg);
void ls_metrics_collector_add(ls_metrics_collector_fn fn, void *arg);
void ls_metrics_collector_remove(ls_metrics_collector_fn fn, void *arg);

/* Exposers write whole families of their own at every scrape, after the
 * registry's, for samples whose label names are not known in advance (the
 * client telemetry receiver: each pushed metric's attributes become
 * labels). They run on the HTTP server's thread and must be thread-safe;
 * they write with the ls_metrics_put_* helpers below. */
typedef void (*ls_metrics_exposer_fn)(void *arg, ls_buf_t *out, bool openmetrics);
void ls_metrics_exposer_add(ls_metrics_exposer_fn fn, void *arg);
void ls_metrics_exposer_remove(ls_metrics_exposer_fn fn, void *arg);
/* A family's # HELP and # TYPE lines, as the registry's families have them. */
void ls_metrics_put_header(ls_buf_t *b, const char *name, const char *help, ls_metric_type t,
                           bool openmetrics);
/* One label, name="value" (after a comma unless first), the value
 * value[0..vlen) escaped; name must be a valid label name. */
void ls_metrics_put_label(ls_buf_t *b, bool first, const char *name, const char *value,
                          size_t vlen);
/* A sample's value as the exposition writes numbers. */
void ls_metrics_put_value(ls_buf_t *b, double v);

/* Runs the collectors and writes every family that has a series or rows,
 * then the exposers' families: the text format 0.0.4, or OpenMetrics 1.0
 * (ending in "# EOF"). */
void ls_metrics_render(ls_buf_t *out, bool openmetrics);
/* Writes only the given families (tests, and the above). */
void ls_metrics_render_families(ls_metric_family_t *const *fams, int n, ls_buf_t *out,
                                bool openmetrics);
/* The content type of either format. */
const char *ls_metrics_content_type(bool openmetrics);
/* true when an Accept header asks for OpenMetrics. */
bool ls_metrics_wants_openmetrics(const char *accept);
#endif
