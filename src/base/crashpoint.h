/* Crash points, for crash-consistency tests: ls_crashpoint("name") ends the
 * process at once with SIGKILL — exactly what kill -9 at that instant would
 * do: no flush, no atexit, no cleanup — when the environment variable
 * LS_CRASH_AT equals "name". Unset (production), a call costs one
 * load and a branch. The points and what each leaves behind are listed in
 * docs/RELIABILITY.md; tests/integration/test_crash_points.py visits each. */
#ifndef LS_CRASHPOINT_H
#define LS_CRASHPOINT_H

void ls_crashpoint(const char *name);
#endif
