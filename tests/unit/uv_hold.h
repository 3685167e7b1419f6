/* Holding libuv's shared worker pool in unit tests: uv_hold_pool queues n
 * jobs that each take a worker thread and keep it until uv_hold_release, so
 * every thread of the pool (4, or UV_THREADPOOL_SIZE) is taken and later
 * jobs queue behind them. Used to show that work on a private pool
 * (base/workpool.h) does not wait for libuv's. */
#ifndef LS_TEST_UV_HOLD_H
#define LS_TEST_UV_HOLD_H
#include <pthread.h>
#include <uv.h>

static pthread_mutex_t uv_hold_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t uv_hold_cv = PTHREAD_COND_INITIALIZER;
static int uv_hold_released;

static void uv_hold_work(uv_work_t *w)
{
    pthread_mutex_lock(&uv_hold_mu);
    while (!uv_hold_released)
        pthread_cond_wait(&uv_hold_cv, &uv_hold_mu);
    pthread_mutex_unlock(&uv_hold_mu);
}

static void uv_hold_after(uv_work_t *w, int status) {}

/* holds: n handles that live until the loop ran their after callbacks */
static inline void uv_hold_pool(uv_loop_t *loop, uv_work_t *holds, int n)
{
    uv_hold_released = 0;
    for (int i = 0; i < n; i++)
        uv_queue_work(loop, &holds[i], uv_hold_work, uv_hold_after);
}

static inline void uv_hold_release(void)
{
    pthread_mutex_lock(&uv_hold_mu);
    uv_hold_released = 1;
    pthread_cond_broadcast(&uv_hold_cv);
    pthread_mutex_unlock(&uv_hold_mu);
}
#endif
