/* The broker's threads (the table is in docs/ARCHITECTURE.md "Threads"):
 * every thread is started through ls_thread_start, which names it (visible in
 * top -H, gdb and /proc), and every timed wait uses the monotonic clock, so a
 * wall-clock step can neither stretch a lease renewal past its session nor
 * make it spin. Condition variables used with timed waits are initialized
 * with ls_cond_init_mono. */
#ifndef LS_THREAD_H
#define LS_THREAD_H
#include <pthread.h>
#include <stdint.h>

/* pthread_create + a name (at most 15 characters are kept). 0 or an errno. */
int ls_thread_start(pthread_t *t, const char *name, void *(*fn)(void *), void *arg);

/* A condition variable whose timed waits count on CLOCK_MONOTONIC. */
void ls_cond_init_mono(pthread_cond_t *cv);

/* With mu held: waits until signalled or the monotonic clock reaches
 * deadline_ms (ls_clock_mono_ms). 0 when woken, ETIMEDOUT at the deadline. */
int ls_cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t deadline_ms);

#endif
