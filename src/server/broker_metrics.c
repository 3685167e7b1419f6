/* /metrics and the scrape-time collectors; design note in broker_metrics.h. */
#include "server/broker_metrics.h"

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/diag.h"
#include "base/i64map.h"
#include "base/loop_lag.h"
#include "base/metrics.h"
#include "group/group.h"
#include "group/group_service.h"
#include "log/log_meta.h"
#include "server/table_groups.h"

struct ls_broker_metrics {
    ls_meta_t *meta;
    ls_catalog_t *catalog;
};

static LS_METRIC_GAUGE(m_rss, "process_resident_memory_bytes", "Resident memory size in bytes.",
                       NULL);
static LS_METRIC_GAUGE(m_vsize, "process_virtual_memory_bytes", "Virtual memory size in bytes.",
                       NULL);
static LS_METRIC_GAUGE(m_fds, "process_open_fds", "Open file descriptors.", NULL);
static LS_METRIC_GAUGE(m_start, "process_start_time_seconds",
                       "Start time of the process since the Unix epoch in seconds.", NULL);
static LS_METRIC_GAUGE(m_loop_lag, "lakestream_event_loop_lag_seconds",
                       "Longest busy iteration of the event loop in the last 10-20 s (or the "
                       "one in progress, if longer).",
                       NULL);
static LS_METRIC_GAUGE(m_loop_lag_max, "lakestream_event_loop_lag_max_seconds",
                       "Longest busy iteration of the event loop since start.", NULL);
static LS_METRIC_COUNTER(m_loop_slow, "lakestream_event_loop_slow_iterations",
                         "Event-loop iterations busy for 50 ms or more.", NULL);
static LS_METRIC_GAUGE(m_group_lag, "lakestream_consumer_group_lag_records",
                       "Records between a consumer group's committed offsets and the log ends, "
                       "summed over the partitions of a topic it committed (the tables as groups "
                       "lakestream.table.<namespace>.<table>).",
                       "group", "topic");
static LS_METRIC_COUNTER(m_scrape_errors, "lakestream_metrics_collect_errors",
                         "Scrapes whose store reads for the lag metrics failed (left out).", NULL);

static void collect_process(void *arg)
{
    long page = sysconf(_SC_PAGESIZE);
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        unsigned long long size = 0, resident = 0;
        if (fscanf(f, "%llu %llu", &size, &resident) == 2) {
            ls_metric_set(ls_metrics_series0(&m_vsize), (double)size * (double)page);
            ls_metric_set(ls_metrics_series0(&m_rss), (double)resident * (double)page);
        }
        fclose(f);
    }
    DIR *d = opendir("/proc/self/fd");
    if (d) {
        int n = 0;
        for (struct dirent *e; (e = readdir(d));)
            if (e->d_name[0] != '.') n++;
        closedir(d);
        ls_metric_set(ls_metrics_series0(&m_fds), n - 1); /* not the one reading it */
    }
    ls_loop_lag_status_t lag;
    ls_loop_lag_get(&lag);
    if (lag.started) {
        int64_t now = lag.current_ms > lag.recent_ms ? lag.current_ms : lag.recent_ms;
        ls_metric_set(ls_metrics_series0(&m_loop_lag), (double)now / 1000);
        ls_metric_set(ls_metrics_series0(&m_loop_lag_max), (double)lag.max_ms / 1000);
        ls_metric_counter_store(ls_metrics_series0(&m_loop_slow), lag.slow);
    }
}

/* ---- consumer-group lag ---- */

typedef struct lag_scan {
    ls_broker_metrics_t *m;
    ls_i64map_t ends; /* log_id -> int64_t * log end (head's next offset); this scrape */
    ls_metrics_rows_t rows;
    char group[256], topic[256]; /* the row being summed */
    int64_t lag;
    bool open, failed;
} lag_scan_t;

/* The log end of log_id (-1: unknown), read once per scrape. */
static int64_t log_end(lag_scan_t *s, int64_t log_id)
{
    int64_t *v = ls_i64map_get(&s->ends, log_id);
    if (v) return *v;
    v = LS_NEW(int64_t);
    *v = -1;
    char key[64];
    ls_log_head_key(key, sizeof key, log_id);
    ls_kv_t kv;
    ls_status st = ls_meta_get(s->m->meta, key, &kv);
    if (st == LS_OK) {
        ls_head_t h;
        if (ls_head_decode(kv.val, kv.vlen, &h) == LS_OK) {
            *v = h.next_offset;
            ls_head_clear(&h);
        }
        ls_kv_free(&kv);
    } else if (st != LS_ENOTFOUND) {
        s->failed = true;
    }
    ls_i64map_put(&s->ends, log_id, v);
    return *v;
}

static void row_flush(lag_scan_t *s)
{
    if (!s->open) return;
    const char *labels[2] = {s->group, s->topic};
    ls_metrics_rows_add(&s->rows, labels, 2, (double)s->lag);
    s->open = false;
}

/* One partition's committed offset (-1: none) of group on stream st. */
static void add_offset(lag_scan_t *s, const char *group, const ls_stream_t *st, int32_t partition,
                       int64_t offset)
{
    if (!st || partition < 0 || partition >= st->partitions) return;
    if (!s->open || strcmp(s->group, group) || strcmp(s->topic, st->name)) {
        row_flush(s);
        snprintf(s->group, sizeof s->group, "%s", group);
        snprintf(s->topic, sizeof s->topic, "%s", st->name);
        s->lag = 0;
        s->open = true;
    }
    int64_t end = log_end(s, ls_stream_log_id(st, partition));
    if (offset >= 0 && end > offset) s->lag += end - offset;
}

static void on_group_offset(void *arg, const char *group_id, const char *topic, int32_t partition,
                            int64_t offset)
{
    lag_scan_t *s = arg;
    ls_stream_t *st = ls_catalog_lookup(s->m->catalog, LS_DEFAULT_NAMESPACE, topic);
    add_offset(s, group_id, st, partition, offset);
    if (st) ls_stream_release(st);
}

static void collect_group_lag(void *arg)
{
    lag_scan_t s = {.m = arg};
    ls_i64map_init(&s.ends);
    ls_metrics_rows_init(&s.rows);
    if (ls_group_store_offsets(s.m->meta, on_group_offset, &s) != LS_OK) s.failed = true;
    row_flush(&s);
    /* the tables, as the groups Kafka clients see (server/table_groups.h) */
    ls_table_group_t *tg;
    int ntg;
    if (ls_table_groups_read(s.m->meta, s.m->catalog, &tg, &ntg) == LS_OK) {
        for (int i = 0; i < ntg; i++) {
            ls_stream_t *st = ls_catalog_lookup(s.m->catalog, LS_DEFAULT_NAMESPACE, tg[i].topic);
            for (int32_t p = 0; st && p < tg[i].partitions; p++)
                add_offset(&s, tg[i].group_id, st, p, tg[i].offsets[p]);
            row_flush(&s);
            if (st) ls_stream_release(st);
        }
        ls_table_groups_free(tg, ntg);
    } else {
        s.failed = true;
    }
    if (s.failed) {
        /* a partial reading would show lag dropping: keep the last one */
        ls_metric_add(ls_metrics_series0(&m_scrape_errors), 1);
        ls_metrics_rows_free(&s.rows);
    } else {
        ls_metrics_publish(&m_group_lag, &s.rows);
    }
    int64_t k;
    void *v;
    for (size_t it = 0; ls_i64map_next(&s.ends, &it, &k, &v);)
        ls_free(v);
    ls_i64map_free(&s.ends);
}

ls_broker_metrics_t *ls_broker_metrics_start(ls_meta_t *meta, ls_catalog_t *catalog)
{
    ls_broker_metrics_t *m = LS_NEW(ls_broker_metrics_t);
    m->meta = meta;
    m->catalog = catalog;
    ls_metric_set(ls_metrics_series0(&m_start), (double)ls_clock_wall_ms() / 1000);
    ls_metrics_collector_add(collect_process, m);
    ls_metrics_collector_add(collect_group_lag, m);
    return m;
}

void ls_broker_metrics_stop(ls_broker_metrics_t *m)
{
    if (!m) return;
    ls_metrics_collector_remove(collect_process, m);
    ls_metrics_collector_remove(collect_group_lag, m);
    ls_free(m);
}

void ls_broker_metrics_handle(void *arg, const ls_http_request_t *req, ls_http_response_t *resp)
{
    if (strcmp(req->path, "/metrics")) {
        ls_http_error(resp, 404, "NotFoundException", "no resource at %.200s", req->path);
        return;
    }
    if (strcmp(req->method, "GET") && strcmp(req->method, "HEAD")) {
        ls_http_error(resp, 405, "MethodNotAllowedException", "/metrics takes GET or HEAD");
        return;
    }
    bool om = ls_metrics_wants_openmetrics(req->accept);
    resp->status = 200;
    resp->content_type = ls_metrics_content_type(om);
    ls_metrics_render(&resp->body, om);
}
