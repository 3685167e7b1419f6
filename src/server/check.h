/* `lakestream check [--config FILE] [--key=value ...] [--latency=N
 * [--latency-size=SIZE]]`: connectivity and permission check of the
 * configured object and metadata stores, and with --latency their PUT and
 * write latency. */
#ifndef LS_CHECK_H
#define LS_CHECK_H
/* argv[0..argc) holds only flags (--latency* and configuration). Returns
 * the process exit code. */
int ls_check_main(int argc, char **argv);
#endif
