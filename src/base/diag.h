/* Diagnostics: one line per event on stderr, "ts level [module] message".
 * Named "diag", not "log": a log is a Lakestream concept (a partition). */
#ifndef LS_DIAG_H
#define LS_DIAG_H

typedef enum { LS_DIAG_DEBUG, LS_DIAG_INFO, LS_DIAG_WARN, LS_DIAG_ERROR } ls_diag_level;

void ls_diag_set_level(ls_diag_level lvl);
int ls_diag_parse_level(const char *s, ls_diag_level *out);
void ls_diag(ls_diag_level lvl, const char *module, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define LS_DEBUG(mod, ...) ls_diag(LS_DIAG_DEBUG, mod, __VA_ARGS__)
#define LS_INFO(mod, ...) ls_diag(LS_DIAG_INFO, mod, __VA_ARGS__)
#define LS_WARN(mod, ...) ls_diag(LS_DIAG_WARN, mod, __VA_ARGS__)
#define LS_ERROR(mod, ...) ls_diag(LS_DIAG_ERROR, mod, __VA_ARGS__)

#endif
