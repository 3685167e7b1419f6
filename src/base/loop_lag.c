/* Event-loop lag; the design note is in loop_lag.h. */
#include "base/loop_lag.h"

#include <stdio.h>

#include "base/diag.h"

#define NS_PER_MS 1000000ull

static struct {
    uv_loop_t *loop;
    uv_check_t check;
    uv_timer_t beat;
    /* loop thread */
    uint64_t last_check_ns, last_idle_ns;
    uint64_t window_end_ns;
    int64_t window_ms, prev_window_ms;
    int depth; /* nesting of ls_loop_work_begin */
    uint64_t work_start_ns;
    const char *work_what;
    uint64_t iter_work_ns; /* longest marked work of this iteration */
    const char *iter_work_what;
    /* the worst slow iteration since the last WARN line */
    uint64_t next_warn_ns;
    uint64_t pend_count, pend_ns, pend_work_ns;
    const char *pend_work_what;
    /* any thread (__atomic) */
    bool started;
    int64_t last_check_ms; /* monotonic ms of the last check phase */
    int64_t recent_ms, max_ms;
    uint64_t slow;
} g;

static void store64(int64_t *p, int64_t v) { __atomic_store_n(p, v, __ATOMIC_RELAXED); }

static void warn_pending(uint64_t now)
{
    if (!g.pend_count || now < g.next_warn_ns) return;
    char more[96] = "";
    if (g.pend_count > 1)
        snprintf(more, sizeof more, "; %llu iterations took %d ms or more since the last such line",
                 (unsigned long long)g.pend_count, LS_LOOP_LAG_WARN_MS);
    if (g.pend_work_what)
        LS_WARN("loop",
                "event loop lag: one iteration was busy for %llu ms (longest marked work in it: "
                "%s, %llu ms); every client waited that long%s",
                (unsigned long long)(g.pend_ns / NS_PER_MS), g.pend_work_what,
                (unsigned long long)(g.pend_work_ns / NS_PER_MS), more);
    else
        LS_WARN("loop",
                "event loop lag: one iteration was busy for %llu ms (no marked work in it); "
                "every client waited that long%s",
                (unsigned long long)(g.pend_ns / NS_PER_MS), more);
    g.pend_count = g.pend_ns = g.pend_work_ns = 0;
    g.pend_work_what = NULL;
    g.next_warn_ns = now + LS_LOOP_LAG_WARN_EVERY_MS * NS_PER_MS;
}

static void on_check(uv_check_t *h)
{
    uint64_t now = uv_hrtime(), idle = uv_metrics_idle_time(g.loop);
    uint64_t span = now - g.last_check_ns, slept = idle - g.last_idle_ns;
    uint64_t busy = span > slept ? span - slept : 0;
    g.last_check_ns = now;
    g.last_idle_ns = idle;
    store64(&g.last_check_ms, (int64_t)(now / NS_PER_MS));
    int64_t ms = (int64_t)(busy / NS_PER_MS);
    if (now >= g.window_end_ns) {
        g.prev_window_ms = g.window_ms;
        g.window_ms = 0;
        g.window_end_ns = now + LS_LOOP_LAG_WINDOW_MS * NS_PER_MS;
    }
    if (ms > g.window_ms) g.window_ms = ms;
    store64(&g.recent_ms, g.window_ms > g.prev_window_ms ? g.window_ms : g.prev_window_ms);
    if (ms > __atomic_load_n(&g.max_ms, __ATOMIC_RELAXED)) store64(&g.max_ms, ms);
    if (ms >= LS_LOOP_LAG_WARN_MS) {
        __atomic_add_fetch(&g.slow, 1, __ATOMIC_RELAXED);
        g.pend_count++;
        if (busy > g.pend_ns) {
            g.pend_ns = busy;
            g.pend_work_ns = g.iter_work_ns;
            g.pend_work_what = g.iter_work_what;
        }
    }
    g.iter_work_ns = 0;
    g.iter_work_what = NULL;
    warn_pending(now);
}

/* Keeps an idle loop iterating (so the iteration in progress is measurable
 * from outside) and prints a WARN held back by the rate limit. */
static void on_beat(uv_timer_t *t) { warn_pending(uv_hrtime()); }

int ls_loop_lag_start(uv_loop_t *loop)
{
    int rc = uv_loop_configure(loop, UV_METRICS_IDLE_TIME);
    if (rc == 0) rc = uv_check_init(loop, &g.check);
    if (rc != 0) return rc;
    uv_timer_init(loop, &g.beat);
    g.loop = loop;
    g.last_check_ns = uv_hrtime();
    g.last_idle_ns = uv_metrics_idle_time(loop);
    g.window_end_ns = g.last_check_ns + LS_LOOP_LAG_WINDOW_MS * NS_PER_MS;
    store64(&g.last_check_ms, (int64_t)(g.last_check_ns / NS_PER_MS));
    uv_check_start(&g.check, on_check);
    uv_unref((uv_handle_t *)&g.check);
    uv_timer_start(&g.beat, on_beat, LS_LOOP_LAG_BEAT_MS, LS_LOOP_LAG_BEAT_MS);
    uv_unref((uv_handle_t *)&g.beat);
    __atomic_store_n(&g.started, true, __ATOMIC_RELEASE);
    return 0;
}

void ls_loop_lag_get(ls_loop_lag_status_t *out)
{
    out->started = __atomic_load_n(&g.started, __ATOMIC_ACQUIRE);
    out->recent_ms = __atomic_load_n(&g.recent_ms, __ATOMIC_RELAXED);
    out->max_ms = __atomic_load_n(&g.max_ms, __ATOMIC_RELAXED);
    out->slow = __atomic_load_n(&g.slow, __ATOMIC_RELAXED);
    int64_t since = (int64_t)(uv_hrtime() / NS_PER_MS) -
                    __atomic_load_n(&g.last_check_ms, __ATOMIC_RELAXED) - LS_LOOP_LAG_BEAT_MS;
    out->current_ms = out->started && since > 0 ? since : 0;
}

void ls_loop_work_begin(const char *what)
{
    if (!g.loop || g.depth++) return;
    g.work_start_ns = uv_hrtime();
    g.work_what = what;
}

void ls_loop_work_end(void)
{
    if (!g.loop || --g.depth) return;
    uint64_t d = uv_hrtime() - g.work_start_ns;
    if (d > g.iter_work_ns) {
        g.iter_work_ns = d;
        g.iter_work_what = g.work_what;
    }
}
