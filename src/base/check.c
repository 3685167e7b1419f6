#include "base/check.h"

#include "base/diag.h"

#include <execinfo.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef LS_CHECK_INVARIANTS_DEFAULT
#define LS_CHECK_INVARIANTS_DEFAULT 0
#endif

static ls_panic_hook_fn panic_hook;
/* -1: not decided yet (read LAKESTREAM_CHECK_INVARIANTS on first use). Set
 * once at start on the main thread, read-only afterwards. */
static _Atomic int invariants_on = -1;

bool ls_check_invariants_enabled(void)
{
    if (invariants_on < 0) {
        const char *v = getenv("LAKESTREAM_CHECK_INVARIANTS");
        invariants_on = v && *v ? strcmp(v, "0") != 0 : LS_CHECK_INVARIANTS_DEFAULT;
    }
    return invariants_on > 0;
}

void ls_check_invariants_enable(bool on) { invariants_on = on; }

ls_panic_hook_fn ls_panic_set_hook(ls_panic_hook_fn fn)
{
    ls_panic_hook_fn old = panic_hook;
    panic_hook = fn;
    return old;
}

void ls_panic(const char *file, int line, const char *func, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (panic_hook) {
        panic_hook(msg);
        /* A hook must not return; fall through to abort if it does. */
    }
    LS_ERROR("panic", "%s:%d %s(): %s", file, line, func, msg);
    void *frames[32];
    int n = backtrace(frames, 32);
    backtrace_symbols_fd(frames, n, STDERR_FILENO);
    abort();
}
