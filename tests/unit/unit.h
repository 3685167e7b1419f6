/* Minimal unit-test harness. Each test binary defines tests with TEST(name),
 * lists them in main via RUN(name), and ends with UNIT_DONE(). Output lines:
 *   PASS <binary>.<name>
 *   FAIL <binary>.<name>: <file>:<line>: <expr>
 * tests/run.sh counts them. */
#ifndef LS_UNIT_H
#define LS_UNIT_H
#include <stdio.h>
#include <string.h>

static int unit_failed_total, unit_passed_total, unit_cur_failed;
static const char *unit_cur_name;

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
#define UNIT_DONE() return unit_failed_total ? 1 : 0
#endif
