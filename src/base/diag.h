/* Diagnostics: one line per event on stderr, "ts level [module] message".
 * Named "diag", not "log": a log is a Lakestream concept (a partition). */
#ifndef LS_DIAG_H
#define LS_DIAG_H
#include <stdint.h>

typedef enum { LS_DIAG_DEBUG, LS_DIAG_INFO, LS_DIAG_WARN, LS_DIAG_ERROR } ls_diag_level;

void ls_diag_set_level(ls_diag_level lvl);
int ls_diag_parse_level(const char *s, ls_diag_level *out);
void ls_diag(ls_diag_level lvl, const char *module, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define LS_DEBUG(mod, ...) ls_diag(LS_DIAG_DEBUG, mod, __VA_ARGS__)
#define LS_INFO(mod, ...) ls_diag(LS_DIAG_INFO, mod, __VA_ARGS__)
#define LS_WARN(mod, ...) ls_diag(LS_DIAG_WARN, mod, __VA_ARGS__)
#define LS_ERROR(mod, ...) ls_diag(LS_DIAG_ERROR, mod, __VA_ARGS__)

/* Rate-limited lines for conditions that repeat while they last (accept
 * failing on a full descriptor table, a store that is down): one line per
 * call site per LS_DIAG_RL_MS, and the next line printed says how many were
 * suppressed meanwhile, so an operator sees the condition and its rate, never
 * a flood. Any thread; one static state per call site (the macros). */
typedef struct ls_diag_rl {
    int64_t next_ms;     /* atomic: monotonic ms before which lines are dropped */
    uint64_t suppressed; /* atomic */
} ls_diag_rl_t;
#define LS_DIAG_RL_MS 10000
void ls_diag_rl(ls_diag_rl_t *rl, ls_diag_level lvl, const char *module, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
#define LS_INFO_RL(mod, ...)                                                                       \
    do {                                                                                           \
        static ls_diag_rl_t ls_rl_;                                                                \
        ls_diag_rl(&ls_rl_, LS_DIAG_INFO, mod, __VA_ARGS__);                                       \
    } while (0)
#define LS_WARN_RL(mod, ...)                                                                       \
    do {                                                                                           \
        static ls_diag_rl_t ls_rl_;                                                                \
        ls_diag_rl(&ls_rl_, LS_DIAG_WARN, mod, __VA_ARGS__);                                       \
    } while (0)
#define LS_ERROR_RL(mod, ...)                                                                      \
    do {                                                                                           \
        static ls_diag_rl_t ls_rl_;                                                                \
        ls_diag_rl(&ls_rl_, LS_DIAG_ERROR, mod, __VA_ARGS__);                                      \
    } while (0)

#endif
