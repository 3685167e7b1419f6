/* The unit-test harness itself (tests/unit/unit.h): LS_UNIT_TEST=<name> runs
 * that one test of a binary, and a name no test has fails the binary instead
 * of passing with nothing run. The binary runs itself as a child with the
 * filter set; LS_UNIT_HARNESS_CHILD keeps the child from recursing (without a
 * filter the child would run the checks below too). */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "unit.h"

TEST(probe_a) {}
TEST(probe_b) {}

/* Runs this binary with LS_UNIT_TEST=filter; its output into out, its exit
 * code returned (-1 when it could not run). */
static int run_child(const char *filter, char *out, size_t outlen)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "LS_UNIT_HARNESS_CHILD=1 LS_UNIT_TEST='%s' /proc/%d/exe", filter,
             (int)getpid());
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    size_t n = fread(out, 1, outlen - 1, p);
    out[n] = 0;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

TEST(filter_runs_one_test)
{
    if (getenv("LS_UNIT_HARNESS_CHILD")) return;
    char out[4096];
    CHECK_EQ_INT(run_child("probe_b", out, sizeof out), 0);
    CHECK(strcmp(out, "PASS probe_b\n") == 0);
}

TEST(filter_naming_no_test_fails)
{
    if (getenv("LS_UNIT_HARNESS_CHILD")) return;
    char out[4096];
    CHECK_EQ_INT(run_child("no_such_test", out, sizeof out), 1);
    CHECK(strstr(out, "FAIL no_such_test: no test of this name") != NULL);
    CHECK(strstr(out, "PASS") == NULL);
}

int main(void)
{
    RUN(probe_a);
    RUN(probe_b);
    RUN(filter_runs_one_test);
    RUN(filter_naming_no_test_fails);
    UNIT_DONE();
}
