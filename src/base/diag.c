#include "base/diag.h"

#include <stdarg.h>
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
    if (lvl < diag_min)
        return;
    char line[1024];
    struct timeval tv;
    gettimeofday(&tv, NULL);
    struct tm tm;
    gmtime_r(&tv.tv_sec, &tm);
    int n = snprintf(line, sizeof line, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ %-5s [%s] ",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                     tm.tm_sec, (int)(tv.tv_usec / 1000), level_names[lvl], module);
    va_list ap;
    va_start(ap, fmt);
    if (n >= 0 && (size_t)n < sizeof line)
        vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    va_end(ap);
    /* one fputs per line: stdio locks the stream, so lines never interleave */
    size_t len = strlen(line);
    if (len < sizeof line - 1) {
        line[len] = '\n';
        line[len + 1] = 0;
    }
    fputs(line, stderr);
}
