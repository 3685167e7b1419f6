/* base/workpool.c: jobs run once each on the pool's threads and complete on
 * the loop, whatever libuv's shared pool is busy with; close frees it. */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <uv.h>

#include "base/workpool.h"
#include "unit.h"
#include "uv_hold.h"

typedef struct job {
    ls_work_t w;
    atomic_int *ran;
    int worked;  /* set on the pool thread */
    int aftered; /* set on the loop */
    pthread_t worker;
} job_t;

static void job_work(ls_work_t *w)
{
    job_t *j = w->data;
    j->worked++;
    j->worker = pthread_self();
    atomic_fetch_add(j->ran, 1);
}

static int afters;
static void job_after(ls_work_t *w)
{
    job_t *j = w->data;
    j->aftered++;
    afters++;
}

static void on_closed(void *arg) { *(int *)arg = 1; }

TEST(every_job_runs_once_and_completes_on_the_loop)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    ls_workpool_t *p = NULL;
    char err[128] = "";
    CHECK_EQ_INT(ls_workpool_new(&loop, "ls-test-pool", 3, &p, err, sizeof err), LS_OK);
    enum { N = 500 };
    static job_t jobs[N];
    atomic_int ran = 0;
    afters = 0;
    for (int i = 0; i < N; i++) {
        jobs[i] = (job_t){.ran = &ran};
        jobs[i].w.data = &jobs[i];
        ls_workpool_submit(p, &jobs[i].w, job_work, job_after);
    }
    CHECK_EQ_INT(ls_workpool_pending(p), N);
    for (int i = 0; i < 100000 && afters < N; i++)
        uv_run(&loop, UV_RUN_ONCE);
    CHECK_EQ_INT(afters, N);
    CHECK_EQ_INT(atomic_load(&ran), N);
    CHECK_EQ_INT(ls_workpool_pending(p), 0);
    for (int i = 0; i < N; i++) {
        CHECK_EQ_INT(jobs[i].worked, 1);
        CHECK_EQ_INT(jobs[i].aftered, 1);
        CHECK(!pthread_equal(jobs[i].worker, pthread_self()));
    }
    int closed = 0;
    ls_workpool_close(p, on_closed, &closed);
    CHECK_EQ_INT(uv_run(&loop, UV_RUN_DEFAULT), 0); /* no handle is left open */
    CHECK_EQ_INT(closed, 1);
    CHECK_EQ_INT(uv_loop_close(&loop), 0);
}

TEST(jobs_run_while_libuvs_pool_is_held)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    /* every thread of libuv's pool (4, or UV_THREADPOOL_SIZE) and more */
    static uv_work_t holds[256];
    uv_hold_pool(&loop, holds, 256);
    ls_workpool_t *p = NULL;
    char err[128] = "";
    CHECK_EQ_INT(ls_workpool_new(&loop, "ls-test-pool", 1, &p, err, sizeof err), LS_OK);
    atomic_int ran = 0;
    job_t j = {.ran = &ran};
    j.w.data = &j;
    afters = 0;
    ls_workpool_submit(p, &j.w, job_work, job_after);
    for (int i = 0; i < 100000 && !afters; i++)
        uv_run(&loop, UV_RUN_NOWAIT);
    CHECK_EQ_INT(afters, 1); /* done although no libuv worker was free */
    int closed = 0;
    ls_workpool_close(p, on_closed, &closed);
    uv_hold_release();
    CHECK_EQ_INT(uv_run(&loop, UV_RUN_DEFAULT), 0);
    CHECK_EQ_INT(closed, 1);
    CHECK_EQ_INT(uv_loop_close(&loop), 0);
}

static ls_workpool_t *resubmit_pool;
static int chain_left;
static void chain_after(ls_work_t *w)
{
    afters++;
    if (--chain_left > 0) ls_workpool_submit(resubmit_pool, w, job_work, chain_after);
}

TEST(an_after_may_submit_its_job_again)
{
    /* the WAL's flush does this: its PUT's after queues its commit */
    uv_loop_t loop;
    uv_loop_init(&loop);
    char err[128] = "";
    CHECK_EQ_INT(ls_workpool_new(&loop, "ls-test-pool", 2, &resubmit_pool, err, sizeof err), LS_OK);
    atomic_int ran = 0;
    job_t j = {.ran = &ran};
    j.w.data = &j;
    afters = 0;
    chain_left = 1000;
    ls_workpool_submit(resubmit_pool, &j.w, job_work, chain_after);
    for (int i = 0; i < 1000000 && chain_left > 0; i++)
        uv_run(&loop, UV_RUN_ONCE);
    CHECK_EQ_INT(afters, 1000);
    CHECK_EQ_INT(j.worked, 1000);
    int closed = 0;
    ls_workpool_close(resubmit_pool, on_closed, &closed);
    CHECK_EQ_INT(uv_run(&loop, UV_RUN_DEFAULT), 0);
    CHECK_EQ_INT(closed, 1);
    CHECK_EQ_INT(uv_loop_close(&loop), 0);
}

int main(void)
{
    RUN(every_job_runs_once_and_completes_on_the_loop);
    RUN(jobs_run_while_libuvs_pool_is_held);
    RUN(an_after_may_submit_its_job_again);
    UNIT_DONE();
}
