/* `lakestream check [--config FILE] [--key=value ...]`: connectivity and
 * permission check of the configured object and metadata stores. */
#ifndef LS_CHECK_H
#define LS_CHECK_H
/* argv[0..argc) holds only flags. Returns the process exit code. */
int ls_check_main(int argc, char **argv);
#endif
