/* A private worker pool: see workpool.h for the design note. */
#include "base/workpool.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/check.h"
#include "base/thread.h"

struct ls_workpool {
    uv_loop_t *loop;
    uv_async_t done_async;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    ls_work_t *wait_head, *wait_tail; /* under mu: waiting for a thread */
    ls_work_t *done_head, *done_tail; /* under mu: worked, after not yet run */
    bool stopping;                    /* under mu */
    int pending;                      /* loop thread: submitted, after not yet run */
    int nthreads;
    pthread_t *threads;
    void (*closed)(void *arg);
    void *closed_arg;
};

static void push(ls_work_t **head, ls_work_t **tail, ls_work_t *w)
{
    w->next = NULL;
    if (*tail)
        (*tail)->next = w;
    else
        *head = w;
    *tail = w;
}

static void *pool_main(void *arg)
{
    ls_workpool_t *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->wait_head && !p->stopping)
            pthread_cond_wait(&p->cv, &p->mu);
        if (!p->wait_head) break; /* stopping with nothing left */
        ls_work_t *w = p->wait_head;
        p->wait_head = w->next;
        if (!p->wait_head) p->wait_tail = NULL;
        pthread_mutex_unlock(&p->mu);
        w->work(w);
        pthread_mutex_lock(&p->mu);
        push(&p->done_head, &p->done_tail, w);
        uv_async_send(&p->done_async);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

static void on_done(uv_async_t *a)
{
    ls_workpool_t *p = a->data;
    pthread_mutex_lock(&p->mu);
    ls_work_t *w = p->done_head;
    p->done_head = p->done_tail = NULL;
    pthread_mutex_unlock(&p->mu);
    while (w) {
        ls_work_t *next = w->next;
        p->pending--;
        w->after(w); /* may submit again, or free w */
        w = next;
    }
}

static void stop_threads(ls_workpool_t *p, int started)
{
    pthread_mutex_lock(&p->mu);
    p->stopping = true;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < started; i++)
        pthread_join(p->threads[i], NULL);
}

static void pool_free(ls_workpool_t *p)
{
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    ls_free(p->threads);
    ls_free(p);
}

static void handle_closed(uv_handle_t *h)
{
    ls_workpool_t *p = h->data;
    void (*closed)(void *) = p->closed;
    void *arg = p->closed_arg;
    pool_free(p);
    if (closed) closed(arg);
}

ls_status ls_workpool_new(uv_loop_t *loop, const char *name, int threads, ls_workpool_t **out,
                          char *err, size_t errlen)
{
    ls_workpool_t *p = LS_NEW(ls_workpool_t);
    p->loop = loop;
    p->nthreads = threads < 1 ? 1 : threads;
    p->threads = LS_NEWN(pthread_t, p->nthreads);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    int rc = uv_async_init(loop, &p->done_async, on_done);
    if (rc != 0) {
        snprintf(err, errlen, "worker pool %s: %s", name, uv_strerror(rc));
        pool_free(p);
        return LS_EIO;
    }
    p->done_async.data = p;
    for (int i = 0; i < p->nthreads; i++) {
        rc = ls_thread_start(&p->threads[i], name, pool_main, p);
        if (rc != 0) {
            snprintf(err, errlen, "worker pool %s: thread %d of %d: %s", name, i + 1, p->nthreads,
                     strerror(rc));
            stop_threads(p, i);
            p->closed = NULL;
            uv_close((uv_handle_t *)&p->done_async, handle_closed);
            return LS_EIO;
        }
    }
    *out = p;
    return LS_OK;
}

void ls_workpool_submit(ls_workpool_t *p, ls_work_t *w, void (*work)(ls_work_t *w),
                        void (*after)(ls_work_t *w))
{
    w->work = work;
    w->after = after;
    /* stopping is written on this (the loop) thread only */
    LS_CHECKF(!p->stopping, "worker pool: a job submitted after close");
    p->pending++;
    pthread_mutex_lock(&p->mu);
    push(&p->wait_head, &p->wait_tail, w);
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

int ls_workpool_pending(const ls_workpool_t *p) { return p->pending; }

void ls_workpool_close(ls_workpool_t *p, void (*closed)(void *arg), void *arg)
{
    LS_CHECKF(p->pending == 0, "worker pool closed with %d jobs pending", p->pending);
    stop_threads(p, p->nthreads);
    p->closed = closed;
    p->closed_arg = arg;
    uv_close((uv_handle_t *)&p->done_async, handle_closed);
}
