/* base/metrics.c: series lookup, counting, and the exposition formats
 * (label escaping, cumulative histogram buckets ending in +Inf, counter
 * _total suffixes, OpenMetrics # EOF), and the bound on series. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/metrics.h"
#include "unit.h"

static const double bounds3[3] = {0.1, 1, 10};

static LS_METRIC_COUNTER(t_records, "t_records", "Records.\nSecond \\ line", "topic");
static LS_METRIC_GAUGE(t_gauge, "t_lag_seconds", "A gauge", "group", "topic");
static LS_METRIC_HISTOGRAM(t_hist, "t_latency_seconds", "A histogram", bounds3, "api");
static LS_METRIC_GAUGE(t_pub, "t_published", "Published rows", "table");
static LS_METRIC_COUNTER(t_many, "t_many", "Many series", "k");
static LS_METRIC_COUNTER(t_race, "t_race", "Raced", "k");
static LS_METRIC_GAUGE(t_huge, "t_huge", "Values past int64");

static char *render(ls_metric_family_t *f, bool om)
{
    ls_buf_t b;
    ls_buf_init(&b);
    ls_metrics_render_families(&f, 1, &b, om);
    ls_buf_append_u8(&b, 0);
    return (char *)b.data;
}

TEST(counter_text_and_openmetrics)
{
    ls_metric_add(ls_metrics_series1(&t_records, "orders"), 3);
    ls_metric_add(ls_metrics_series1(&t_records, "orders"), 4);
    CHECK(ls_metrics_series1(&t_records, "orders") == ls_metrics_series1(&t_records, "orders"));
    char *s = render(&t_records, false);
    CHECK(strstr(s, "# HELP t_records_total Records.\\nSecond \\\\ line\n"));
    CHECK(strstr(s, "# TYPE t_records_total counter\n"));
    CHECK(strstr(s, "t_records_total{topic=\"orders\"} 7\n"));
    CHECK(!strstr(s, "# EOF"));
    free(s);
    s = render(&t_records, true);
    CHECK(strstr(s, "# TYPE t_records counter\n"));
    CHECK(strstr(s, "t_records_total{topic=\"orders\"} 7\n"));
    size_t n = strlen(s);
    CHECK(n > 6 && !strcmp(s + n - 6, "# EOF\n"));
    free(s);
}

TEST(label_values_escaped)
{
    const char *v[2] = {"g\"1\\x\ny", "t"};
    ls_metric_set(ls_metrics_series(&t_gauge, v), 2.5);
    char *s = render(&t_gauge, false);
    CHECK(strstr(s, "t_lag_seconds{group=\"g\\\"1\\\\x\\ny\",topic=\"t\"} 2.5\n"));
    free(s);
}

TEST(histogram_buckets_cumulative)
{
    ls_metric_t *m = ls_metrics_series1(&t_hist, "Produce");
    ls_metric_observe(m, 0.05); /* <= 0.1 */
    ls_metric_observe(m, 0.1);  /* le is inclusive */
    ls_metric_observe(m, 5);
    ls_metric_observe(m, 100); /* only +Inf */
    char *s = render(&t_hist, false);
    CHECK(strstr(s, "# TYPE t_latency_seconds histogram\n"));
    CHECK(strstr(s, "t_latency_seconds_bucket{api=\"Produce\",le=\"0.1\"} 2\n"));
    CHECK(strstr(s, "t_latency_seconds_bucket{api=\"Produce\",le=\"1.0\"} 2\n"));
    CHECK(strstr(s, "t_latency_seconds_bucket{api=\"Produce\",le=\"10.0\"} 3\n"));
    CHECK(strstr(s, "t_latency_seconds_bucket{api=\"Produce\",le=\"+Inf\"} 4\n"));
    CHECK(strstr(s, "t_latency_seconds_count{api=\"Produce\"} 4\n"));
    CHECK(strstr(s, "t_latency_seconds_sum{api=\"Produce\"} 105.15\n"));
    free(s);
}

TEST(published_rows_replace_the_previous)
{
    ls_metrics_rows_t r;
    ls_metrics_rows_init(&r);
    const char *a[1] = {"default.a"}, *b[1] = {"default.b"};
    ls_metrics_rows_add(&r, a, 1, 1);
    ls_metrics_rows_add(&r, b, 1, 2);
    ls_metrics_publish(&t_pub, &r);
    char *s = render(&t_pub, false);
    CHECK(strstr(s, "t_published{table=\"default.a\"} 1\n"));
    CHECK(strstr(s, "t_published{table=\"default.b\"} 2\n"));
    free(s);
    ls_metrics_rows_add(&r, b, 1, 3);
    ls_metrics_publish(&t_pub, &r);
    s = render(&t_pub, false);
    CHECK(!strstr(s, "default.a"));
    CHECK(strstr(s, "t_published{table=\"default.b\"} 3\n"));
    free(s);
    ls_metrics_publish(&t_pub, &r); /* nothing: the family is not written at all */
    s = render(&t_pub, false);
    CHECK_EQ_INT(strlen(s), 0);
    free(s);
}

TEST(series_bounded_with_overflow)
{
    char k[32];
    for (int i = 0; i < LS_METRICS_MAX_SERIES + 100; i++) {
        snprintf(k, sizeof k, "k%d", i);
        ls_metric_add(ls_metrics_series1(&t_many, k), 1);
    }
    ls_metric_t *ov = ls_metrics_series1(&t_many, "another");
    CHECK(!strcmp(ov->values[0], LS_METRICS_OVERFLOW));
    char *s = render(&t_many, false);
    int lines = 0;
    unsigned long long total = 0;
    for (char *p = strstr(s, "\nt_many_total{"); p; p = strstr(p + 1, "\nt_many_total{")) {
        lines++;
        total += strtoull(strchr(p, '}') + 2, NULL, 10);
    }
    CHECK_EQ_INT(lines, LS_METRICS_MAX_SERIES);
    CHECK_EQ_INT(total, LS_METRICS_MAX_SERIES + 100); /* nothing lost */
    free(s);
}

static void *race_main(void *arg)
{
    char k[16];
    for (int i = 0; i < 20000; i++) {
        snprintf(k, sizeof k, "k%d", i % 50);
        ls_metric_add(ls_metrics_series1(&t_race, k), 1);
    }
    return NULL;
}

TEST(concurrent_counting_exact)
{
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, race_main, NULL);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    uint64_t total = 0;
    char k[16];
    for (int i = 0; i < 50; i++) {
        snprintf(k, sizeof k, "k%d", i);
        total += (uint64_t)ls_metric_value(ls_metrics_series1(&t_race, k));
    }
    CHECK_EQ_INT(total, 80000);
    CHECK_EQ_INT(t_race.nseries, 50);
}

TEST(accept_header)
{
    CHECK(ls_metrics_wants_openmetrics("application/openmetrics-text; version=1.0.0"));
    CHECK(!ls_metrics_wants_openmetrics("text/plain"));
    CHECK(!ls_metrics_wants_openmetrics(NULL));
}

/* A value far past int64 (a client can push one) is written as a float;
 * converting it to an integer first was undefined (found by fuzz_telemetry). */
TEST(values_past_int64_written_as_floats)
{
    ls_metric_set(ls_metrics_series0(&t_huge), 5.47493e193);
    char *s = render(&t_huge, false);
    CHECK(strstr(s, "t_huge 5.47493e+193\n"));
    free(s);
    ls_metric_set(ls_metrics_series0(&t_huge), -1e300);
    s = render(&t_huge, false);
    CHECK(strstr(s, "t_huge -1e+300\n"));
    free(s);
}

static void expose(void *arg, ls_buf_t *out, bool om)
{
    ls_metrics_put_header(out, "t_exposed", "Exposed by a module.", LS_METRIC_T_GAUGE, om);
    ls_buf_printf(out, "t_exposed{");
    ls_metrics_put_label(out, true, "who", (const char *)arg, strlen(arg));
    ls_buf_printf(out, "} ");
    ls_metrics_put_value(out, 3);
    ls_buf_append_u8(out, '\n');
}

/* An exposer's family comes after the registry's and before # EOF, with
 * its label values escaped; removed, it is gone. */
TEST(exposers_write_their_families)
{
    char who[] = "a\"b";
    ls_metrics_exposer_add(expose, who);
    ls_buf_t b;
    ls_buf_init(&b);
    ls_metrics_render(&b, true);
    ls_buf_append_u8(&b, 0);
    const char *s = (const char *)b.data;
    const char *at = strstr(s, "# TYPE t_exposed gauge\nt_exposed{who=\"a\\\"b\"} 3\n# EOF\n");
    CHECK(at && strstr(s, "t_records_total") < at);
    ls_buf_free(&b);
    ls_metrics_exposer_remove(expose, who);
    ls_buf_init(&b);
    ls_metrics_render(&b, false);
    ls_buf_append_u8(&b, 0);
    CHECK(!strstr((const char *)b.data, "t_exposed"));
    ls_buf_free(&b);
}

int main(void)
{
    RUN(counter_text_and_openmetrics);
    RUN(label_values_escaped);
    RUN(histogram_buckets_cumulative);
    RUN(published_rows_replace_the_previous);
    RUN(series_bounded_with_overflow);
    RUN(concurrent_counting_exact);
    RUN(accept_header);
    RUN(values_past_int64_written_as_floats);
    RUN(exposers_write_their_families);
    UNIT_DONE();
}
