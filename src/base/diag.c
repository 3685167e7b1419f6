#include "base/diag.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

static ls_diag_level diag_min = LS_DIAG_INFO;
static const char *const level_names[] = {"DEBUG", "INFO", "WARN", "ERROR"};

void ls_diag_set_level(ls_diag_level lvl) { diag_min = lvl; }

int ls_diag_parse_level(const char *s, ls_diag_level *out)
{
    static const char *const lower[] = {"debug", "info", "warn", "error"};
    for (int i = 0; i < 4; i++)
        if (strcmp(s, lower[i]) == 0) {
            *out = (ls_diag_level)i;
            return 0;
        }
    return -1;
}

void ls_diag(ls_diag_level lvl, const char *module, const char *fmt, ...)
{
    if (lvl < diag_min) return;
    char line[1024];
    struct timeval tv;
    gettimeofday(&tv, NULL);
    struct tm tm;
    gmtime_r(&tv.tv_sec, &tm);
    int n = snprintf(line, sizeof line, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ %-5s [%s] ",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                     (int)(tv.tv_usec / 1000), level_names[lvl], module);
    va_list ap;
    va_start(ap, fmt);
    if (n >= 0 && (size_t)n < sizeof line) vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    va_end(ap);
    /* one fputs per line: stdio locks the stream, so lines never interleave */
    size_t len = strlen(line);
    if (len < sizeof line - 1) {
        line[len] = '\n';
        line[len + 1] = 0;
    }
    fputs(line, stderr);
}

void ls_diag_rl(ls_diag_rl_t *rl, ls_diag_level lvl, const char *module, const char *fmt, ...)
{
    if (lvl < diag_min) return;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    int64_t next = __atomic_load_n(&rl->next_ms, __ATOMIC_RELAXED);
    if (now < next || !__atomic_compare_exchange_n(&rl->next_ms, &next, now + LS_DIAG_RL_MS, false,
                                                   __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
        __atomic_add_fetch(&rl->suppressed, 1, __ATOMIC_RELAXED);
        return;
    }
    uint64_t dropped = __atomic_exchange_n(&rl->suppressed, 0, __ATOMIC_RELAXED);
    char msg[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (dropped)
        ls_diag(lvl, module, "%s (%llu similar lines in the last %d s not shown)", msg,
                (unsigned long long)dropped, LS_DIAG_RL_MS / 1000);
    else
        ls_diag(lvl, module, "%s", msg);
}
