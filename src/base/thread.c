#include "base/thread.h"

#include "base/check.h"

#include <errno.h>
#include <string.h>
#include <time.h>

int ls_thread_start(pthread_t *t, const char *name, void *(*fn)(void *), void *arg)
{
    int rc = pthread_create(t, NULL, fn, arg);
    if (rc == 0 && name) {
        char short_name[16];
        strncpy(short_name, name, sizeof short_name - 1);
        short_name[sizeof short_name - 1] = 0;
        pthread_setname_np(*t, short_name);
    }
    return rc;
}

void ls_cond_init_mono(pthread_cond_t *cv)
{
    pthread_condattr_t ca;
    LS_CHECK_ZERO(pthread_condattr_init(&ca));
    LS_CHECK_ZERO(pthread_condattr_setclock(&ca, CLOCK_MONOTONIC));
    LS_CHECK_ZERO(pthread_cond_init(cv, &ca));
    pthread_condattr_destroy(&ca);
}

int ls_cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t deadline_ms)
{
    if (deadline_ms < 0) deadline_ms = 0;
    struct timespec ts = {.tv_sec = deadline_ms / 1000,
                          .tv_nsec = (long)(deadline_ms % 1000) * 1000000L};
    return pthread_cond_timedwait(cv, mu, &ts);
}
