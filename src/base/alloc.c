#include "base/alloc.h"

#include "base/check.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Noreturn void ls_oom(size_t n) { LS_PANIC("out of memory allocating %zu bytes", n); }

void *ls_malloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) ls_oom(n);
    return p;
}

void *ls_calloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p) ls_oom(count * size);
    return p;
}

void *ls_realloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) ls_oom(n);
    return q;
}

char *ls_strdup(const char *s) { return s ? ls_memdup(s, strlen(s) + 1) : NULL; }

char *ls_strndup(const char *s, size_t n)
{
    char *p = ls_malloc(n + 1);
    memcpy(p, s, n);
    p[n] = 0;
    return p;
}

void *ls_memdup(const void *p, size_t n)
{
    void *q = ls_malloc(n);
    if (n) memcpy(q, p, n);
    return q;
}

void ls_free(void *p) { free(p); }

char *ls_asprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = ls_malloc((size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}
