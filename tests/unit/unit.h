/* Minimal unit-test harness. Each test binary defines tests with TEST(name),
 * lists them in main via RUN(name), and ends with UNIT_DONE(). Output lines:
 *   PASS <binary>.<name>
 *   FAIL <binary>.<name>: <file>:<line>: <expr>
 * tests/run.sh counts them.
 *
 * One test alone: LS_UNIT_TEST=<name> build/tests/test_<binary> runs only the
 * tests of that name (`make unit T=test_<binary>:<name>` does this). A name
 * that matches no test fails the binary, so a typo is not a silent pass. */
#ifndef LS_UNIT_H
#define LS_UNIT_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int unit_failed_total, unit_passed_total, unit_cur_failed;
static const char *unit_cur_name;

/* Whether RUN(name) runs: always without LS_UNIT_TEST, else on an exact match. */
static inline int unit_selected(const char *name)
{
    const char *only = getenv("LS_UNIT_TEST");
    return !only || !*only || strcmp(only, name) == 0;
}

#define TEST(name) static void test_##name(void)
#define CHECK(expr)                                                                                \
    do {                                                                                           \
        if (!(expr)) {                                                                             \
            printf("FAIL %s: %s:%d: %s\n", unit_cur_name, __FILE__, __LINE__, #expr);              \
            fflush(stdout);                                                                        \
            unit_cur_failed = 1;                                                                   \
            return;                                                                                \
        }                                                                                          \
    } while (0)
#define CHECK_EQ_INT(a, b)                                                                         \
    do {                                                                                           \
        long long _a = (long long)(a), _b = (long long)(b);                                        \
        if (_a != _b) {                                                                            \
            printf("FAIL %s: %s:%d: %s == %s (%lld != %lld)\n", unit_cur_name, __FILE__, __LINE__, \
                   #a, #b, _a, _b);                                                                \
            fflush(stdout);                                                                        \
            unit_cur_failed = 1;                                                                   \
            return;                                                                                \
        }                                                                                          \
    } while (0)
#define RUN(name)                                                                                  \
    do {                                                                                           \
        if (!unit_selected(#name)) break;                                                          \
        unit_cur_name = #name;                                                                     \
        unit_cur_failed = 0;                                                                       \
        test_##name();                                                                             \
        if (unit_cur_failed)                                                                       \
            unit_failed_total++;                                                                   \
        else {                                                                                     \
            unit_passed_total++;                                                                   \
            printf("PASS %s\n", #name);                                                            \
        }                                                                                          \
        fflush(stdout);                                                                            \
    } while (0)
#define UNIT_DONE() return unit_done()
static inline int unit_done(void)
{
    const char *only = getenv("LS_UNIT_TEST");
    if (only && *only && unit_failed_total + unit_passed_total == 0) {
        printf("FAIL %s: no test of this name (LS_UNIT_TEST)\n", only);
        return 1;
    }
    return unit_failed_total ? 1 : 0;
}
#endif
