#include "base/check.h"

#include "base/diag.h"

#include <execinfo.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static ls_panic_hook_fn panic_hook;

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
