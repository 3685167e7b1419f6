/* Shared descriptor budget of client connections; see fd_budget.h. */
#include "base/fd_budget.h"

#include <pthread.h>
#include <stdatomic.h>
#include <sys/resource.h>

#define FD_RESERVE_MAX 256 /* descriptors kept for stores, files, listeners */

static atomic_int_fast64_t used;
static int64_t total;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void init_total(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) {
        total = 1000000;
        return;
    }
    int64_t lim = (int64_t)rl.rlim_cur;
    int64_t reserve = lim / 4 < FD_RESERVE_MAX ? lim / 4 : FD_RESERVE_MAX;
    total = lim - reserve < 8 ? 8 : lim - reserve;
}

int64_t ls_fd_budget_total(void)
{
    pthread_once(&once, init_total);
    return total;
}

bool ls_fd_budget_take(void)
{
    int64_t max = ls_fd_budget_total();
    int_fast64_t n = atomic_load(&used);
    do {
        if (n >= max) return false;
    } while (!atomic_compare_exchange_weak(&used, &n, n + 1));
    return true;
}

void ls_fd_budget_give(void) { atomic_fetch_sub(&used, 1); }

int64_t ls_fd_budget_used(void) { return (int64_t)atomic_load(&used); }
