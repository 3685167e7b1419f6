/* Event-loop lag: how long the broker's libuv loop goes without getting
 * back to its I/O, measured on the loop and readable from any thread.
 *
 * Every request, commit and timer of the broker runs on one loop thread, so
 * one slow step (a walk that grows with the cache or the index, a big
 * synchronous parse) delays every client at once, and anything renewed from
 * the loop (a lease) can expire. Measured per loop iteration: the time
 * between two consecutive check phases (after poll), minus the time the
 * loop slept in the kernel waiting for events (uv_metrics_idle_time). That
 * is the whole busy time of the iteration: timers, I/O callbacks, worker
 * completions, whatever ran; a client whose bytes arrived during it waited
 * at most that long for the loop to see them.
 *
 * Reported:
 *  - a WARN line when an iteration is busy for LS_LOOP_LAG_WARN_MS or more,
 *    at most one per LS_LOOP_LAG_WARN_EVERY_MS: the worst iteration since
 *    the previous line, how many iterations went over the threshold, and
 *    the longest piece of marked work inside the worst iteration
 *    (ls_loop_work_begin/end around a few known-heavy callbacks: a Kafka
 *    request's handler, the metadata watch's events, compaction results);
 *  - ls_loop_lag_get: the worst iteration of the last window (between one
 *    and two LS_LOOP_LAG_WINDOW_MS), the worst since start, and a lower
 *    bound of the iteration in progress (so a stall is visible while it
 *    lasts: a heartbeat timer keeps an idle loop iterating every
 *    LS_LOOP_LAG_BEAT_MS). GET /health shows them (http_server.c).
 *
 * Threads: start, begin/end and the handles' callbacks run on the loop
 * thread; ls_loop_lag_get on any thread (atomics). One loop per process. */
#ifndef LS_LOOP_LAG_H
#define LS_LOOP_LAG_H
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#define LS_LOOP_LAG_WARN_MS 50
#define LS_LOOP_LAG_WARN_EVERY_MS 10000
#define LS_LOOP_LAG_WINDOW_MS 10000
#define LS_LOOP_LAG_BEAT_MS 100

typedef struct ls_loop_lag_status {
    bool started;
    int64_t recent_ms;  /* worst iteration of the last window */
    int64_t max_ms;     /* worst iteration since start */
    int64_t current_ms; /* the iteration in progress has been busy at least this long */
    uint64_t slow;      /* iterations of LS_LOOP_LAG_WARN_MS or more since start */
} ls_loop_lag_status_t;

/* Starts measuring loop (its handles are unreferenced: they keep no loop
 * alive; a uv_walk closing every handle closes them). 0 or a libuv error. */
int ls_loop_lag_start(uv_loop_t *loop);
void ls_loop_lag_get(ls_loop_lag_status_t *out);
/* Marks a piece of work on the loop thread, named by a static string, so a
 * slow iteration can say what ran. Nested marks count as the outer one.
 * Cheap (a clock read); no-ops until the monitor runs. */
void ls_loop_work_begin(const char *what);
void ls_loop_work_end(void);
#endif
