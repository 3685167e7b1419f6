/* Always-on invariant checks and the one panic path.
 *
 * An invariant that does not hold means the process state can no longer be
 * trusted: continuing risks acknowledging data that is not durable or serving
 * bytes of the wrong log. So a failed check never returns: ls_panic() writes
 * one ERROR line naming file, line, function and the failed condition (plus a
 * backtrace on stderr) and aborts. The checks stay on in every build — release,
 * ASan, chaos — and cost a compare and a predictable branch.
 *
 *   LS_CHECK(cond)              the condition must hold
 *   LS_CHECKF(cond, fmt, ...)   same, with a message naming the values involved
 *   LS_CHECK_NOTNULL(p)         a pointer that must be set
 *   LS_CHECK_ZERO(x)            a call that must return 0 (pthread_*, ...)
 *   LS_UNREACHABLE(what)        a state the code rules out (switch defaults)
 *   LS_PANIC(fmt, ...)          an unrecoverable condition that is not a bug
 *                               (out of memory, no kernel randomness, ...)
 *
 * Per-module invariant checkers (ls_<module>_check_invariants) are built from
 * these and run by unit tests and at the end of each pass that could break
 * them; they name the invariant (e.g. "WAL I2") in their message.
 *
 * Unit tests that must see a check fire install a hook with
 * ls_panic_set_hook(): it is called instead of abort() and must not return
 * (the tests longjmp out of it). */
#ifndef LS_CHECK_H
#define LS_CHECK_H
#include <stdbool.h>

typedef void (*ls_panic_hook_fn)(const char *message);

_Noreturn void ls_panic(const char *file, int line, const char *func, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Returns the previous hook; NULL restores the default (abort). */
ls_panic_hook_fn ls_panic_set_hook(ls_panic_hook_fn fn);

/* Whole-structure invariant checkers cost more than a compare (they walk
 * queues and indexes), so they run only when enabled: by default in
 * sanitizer builds (-DLS_CHECK_INVARIANTS_DEFAULT=1), and wherever
 * LAKESTREAM_CHECK_INVARIANTS=1 is set (the chaos run sets it for every
 * broker); unit tests switch them on themselves. */
bool ls_check_invariants_enabled(void);
void ls_check_invariants_enable(bool on);

#define LS_PANIC(...) ls_panic(__FILE__, __LINE__, __func__, __VA_ARGS__)
#define LS_CHECK(cond)                                                                             \
    do {                                                                                           \
        if (__builtin_expect(!(cond), 0)) LS_PANIC("check failed: %s", #cond);                     \
    } while (0)
#define LS_CHECKF(cond, ...)                                                                       \
    do {                                                                                           \
        if (__builtin_expect(!(cond), 0)) LS_PANIC(__VA_ARGS__);                                   \
    } while (0)
#define LS_CHECK_NOTNULL(p) LS_CHECKF((p) != NULL, "check failed: %s is NULL", #p)
#define LS_CHECK_ZERO(x)                                                                           \
    do {                                                                                           \
        long ls_check_v_ = (long)(x);                                                              \
        if (__builtin_expect(ls_check_v_ != 0, 0))                                                 \
            LS_PANIC("check failed: %s returned %ld", #x, ls_check_v_);                            \
    } while (0)
#define LS_UNREACHABLE(what) LS_PANIC("unreachable: %s", what)

#endif
