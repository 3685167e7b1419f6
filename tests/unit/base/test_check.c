/* base/check.h: failed checks reach the one panic path, naming the condition;
 * without a hook the process aborts after one ERROR line. */
#include "base/check.h"

#include "unit.h"

#include <setjmp.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static jmp_buf panic_jmp;
static char panic_msg[512];
static int panic_count;

static void catch_panic(const char *message)
{
    snprintf(panic_msg, sizeof panic_msg, "%s", message);
    panic_count++;
    longjmp(panic_jmp, 1);
}

/* Runs fn under the hook; returns 1 when it panicked. */
static int panics(void (*fn)(void))
{
    panic_msg[0] = 0;
    ls_panic_hook_fn old = ls_panic_set_hook(catch_panic);
    int fired = setjmp(panic_jmp);
    if (!fired) fn();
    ls_panic_set_hook(old);
    return fired;
}

static volatile int depth = 3;
static void holds(void)
{
    LS_CHECK(depth == 3);
    LS_CHECK_NOTNULL(&depth);
    LS_CHECK_ZERO(depth - 3);
    LS_CHECKF(depth > 0, "depth %d", depth);
}
static void fails_check(void) { LS_CHECK(depth == 4); }
static void fails_zero(void) { LS_CHECK_ZERO(depth - 1); }
static void fails_checkf(void) { LS_CHECKF(depth < 0, "WAL I9: depth %d is not negative", depth); }
static void unreachable(void) { LS_UNREACHABLE("state 7"); }

TEST(checks_that_hold_do_not_fire)
{
    panic_count = 0;
    CHECK(!panics(holds));
    CHECK_EQ_INT(panic_count, 0);
}

TEST(failed_check_names_the_condition)
{
    CHECK(panics(fails_check));
    CHECK(strstr(panic_msg, "check failed: depth == 4") != NULL);
    CHECK(panics(fails_zero));
    CHECK(strstr(panic_msg, "depth - 1 returned 2") != NULL);
    CHECK(panics(fails_checkf));
    CHECK(strcmp(panic_msg, "WAL I9: depth 3 is not negative") == 0);
    CHECK(panics(unreachable));
    CHECK(strcmp(panic_msg, "unreachable: state 7") == 0);
}

TEST(without_a_hook_a_panic_logs_and_aborts)
{
    int fds[2];
    CHECK(pipe(fds) == 0);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        dup2(fds[1], STDERR_FILENO);
        close(fds[0]);
        fails_check();
        _exit(0); /* not reached */
    }
    close(fds[1]);
    char out[4096];
    size_t n = 0;
    ssize_t r;
    while (n < sizeof out - 1 && (r = read(fds[0], out + n, sizeof out - 1 - n)) > 0)
        n += (size_t)r;
    out[n] = 0;
    close(fds[0]);
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
    CHECK(strstr(out, "ERROR [panic] tests/unit/base/test_check.c:") != NULL);
    CHECK(strstr(out, "fails_check(): check failed: depth == 4") != NULL);
}

int main(void)
{
    RUN(checks_that_hold_do_not_fire);
    RUN(failed_check_names_the_condition);
    RUN(without_a_hook_a_panic_logs_and_aborts);
    UNIT_DONE();
}
