/* `lakestream users`: the SCRAM users of a cluster.
 *
 *   lakestream users add NAME [--mechanism M]... [--iterations N]
 *                    [--password-file FILE] [--config FILE] [--key=value ...]
 *   lakestream users list [--config FILE] [--key=value ...]
 *   lakestream users delete NAME [--mechanism M]... [--config FILE] [--key=value ...]
 *
 * delete without --mechanism removes every credential of the user. *
 * Users live in the metadata store (security/users.h), so this writes there
 * directly: the broker's metadata.url, read from the same --config /
 * LAKESTREAM_* / flags as `serve`. That works before any user exists (the
 * first user of a cluster whose listeners all need SASL) and, the store
 * being shared, every broker of the cluster authenticates the user at once
 * — no broker needs to be running. Kafka's own tools go through the brokers
 * instead (AlterUserScramCredentials, kafka-configs --entity-type users).
 *
 * The password is never an argument (other users of the machine would see it
 * in ps): it is the first line of --password-file, else of standard input.
 * add derives a credential per mechanism (default both SCRAM-SHA-256 and
 * SCRAM-SHA-512, so every SASL mechanism works) with a fresh random salt and
 * --iterations (default 4096, Kafka's; 4096..16384 as Kafka accepts), and
 * replaces the user's credential of those mechanisms. Each change is an
 * "audit" line on stderr. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/config.h"
#include "base/diag.h"
#include "cli/cli.h"
#include "meta/meta.h"
#include "security/users.h"

#define PROG "lakestream users"
#define MAX_ARGS 64
#define SALT_BYTES 32
#define DEFAULT_ITERATIONS 4096

static void usage(FILE *f)
{
    fprintf(f, "usage: lakestream users add NAME [--mechanism M]... [--iterations N]\n"
               "                        [--password-file FILE] [--config FILE] [--key=value ...]\n"
               "       lakestream users list [--config FILE] [--key=value ...]\n"
               "       lakestream users delete NAME [--mechanism M]... [--config FILE] "
               "[--key=value ...]\n"
               "M: SCRAM-SHA-256 or SCRAM-SHA-512 (default: both). The password is the first "
               "line of\n--password-file, else of standard input; never an argument. The users "
               "are written to the\nmetadata store of the configuration (metadata.url), which "
               "every broker of the cluster reads.\n");
}

/* The first line of f, without its line end; NULL if empty or unreadable. */
static char *read_password(const char *file)
{
    FILE *f = file ? fopen(file, "r") : stdin;
    if (!f) return NULL;
    char *line = NULL;
    size_t cap = 0;
    ssize_t n = getline(&line, &cap, f);
    if (file) fclose(f);
    if (n <= 0) {
        free(line);
        return NULL;
    }
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
        line[--n] = '\0';
    if (n == 0) {
        free(line);
        return NULL;
    }
    return line;
}

static void audit(const char *what, const char *name, ls_scram_mech m, int iterations)
{
    char iters[32] = "";
    if (iterations) snprintf(iters, sizeof iters, " iterations=%d", iterations);
    LS_INFO("audit", "local uid %d via " PROG ": %s SCRAM credential user=%s mechanism=%s%s: done",
            (int)getuid(), what, name, ls_scram_mech_name(m), iters);
}

static int cmd_list(ls_meta_t *meta)
{
    ls_user_t *all;
    size_t n;
    if (ls_users_list(meta, &all, &n) != LS_OK) {
        fprintf(stderr, PROG ": cannot read the users: %s\n", ls_meta_error(meta));
        return 1;
    }
    printf("%-32s %s\n", "USER", "CREDENTIALS");
    for (size_t i = 0; i < n; i++) {
        printf("%-32s", all[i].name);
        for (int m = LS_SCRAM_SHA_256; m <= LS_SCRAM_SHA_512; m++)
            if (all[i].has[m])
                printf(" %s(iterations=%d)", ls_scram_mech_name((ls_scram_mech)m),
                       (int)all[i].cred[m].iterations);
        printf("\n");
        ls_user_free(&all[i]);
    }
    ls_free(all);
    return 0;
}

/* add (password != NULL) or delete the credentials of mechs (bit per
 * ls_scram_mech; a delete of mechanisms not named on the command line skips
 * those the user has not). */
static int cmd_change(ls_meta_t *meta, const char *name, unsigned mechs, bool named,
                      const char *password, int iterations)
{
    for (int attempt = 0; attempt < 16; attempt++) {
        ls_user_t u;
        int64_t rev;
        ls_status st = ls_users_get(meta, name, &u, &rev);
        if (st == LS_ENOTFOUND) {
            if (!password) {
                fprintf(stderr, PROG ": user %s has no credentials\n", name);
                return 1;
            }
            memset(&u, 0, sizeof u);
            u.name = ls_strdup(name);
        } else if (st != LS_OK) {
            fprintf(stderr, PROG ": cannot read user %s: %s\n", name, ls_meta_error(meta));
            return 1;
        }
        for (int m = LS_SCRAM_SHA_256; m <= LS_SCRAM_SHA_512; m++) {
            if (!(mechs & (1u << m))) continue;
            if (!password) {
                if (!u.has[m] && !named) {
                    mechs &= ~(1u << m);
                    continue;
                }
                if (!u.has[m]) {
                    fprintf(stderr, PROG ": user %s has no %s credential\n", name,
                            ls_scram_mech_name((ls_scram_mech)m));
                    ls_user_free(&u);
                    return 1;
                }
                u.has[m] = false;
                continue;
            }
            uint8_t salt[SALT_BYTES], salted[LS_SCRAM_MAX_KEY];
            if (ls_scram_random(salt, sizeof salt) != LS_OK ||
                ls_scram_salt_password((ls_scram_mech)m, password, strlen(password), salt,
                                       sizeof salt, iterations, salted) != LS_OK ||
                ls_scram_cred_from_salted((ls_scram_mech)m, salted,
                                          ls_scram_key_len((ls_scram_mech)m), salt, sizeof salt,
                                          iterations, &u.cred[m]) != LS_OK) {
                fprintf(stderr, PROG ": cannot derive the credential\n");
                ls_user_free(&u);
                return 1;
            }
            u.has[m] = true;
        }
        st = ls_users_put(meta, &u, rev);
        ls_user_free(&u);
        if (st == LS_ECONFLICT) continue; /* changed meanwhile (another broker, another CLI) */
        if (st != LS_OK) {
            fprintf(stderr, PROG ": cannot write user %s: %s\n", name, ls_meta_error(meta));
            return 1;
        }
        for (int m = LS_SCRAM_SHA_256; m <= LS_SCRAM_SHA_512; m++)
            if (mechs & (1u << m))
                audit(password ? "upsert" : "delete", name, (ls_scram_mech)m,
                      password ? iterations : 0);
        return 0;
    }
    fprintf(stderr, PROG ": user %s keeps changing; try again\n", name);
    return 1;
}

/* a is option name, as "--name" or "--name=value" */
static bool is_opt(const char *a, const char *name)
{
    size_t n = strlen(name);
    return strncmp(a, name, n) == 0 && (a[n] == '\0' || a[n] == '=');
}

int ls_cli_users(int argc, char **argv, const ls_config_schema_t *settings)
{
    if (argc < 1 || strcmp(argv[0], "help") == 0 || strcmp(argv[0], "--help") == 0 ||
        strcmp(argv[0], "-h") == 0) {
        usage(argc < 1 ? stderr : stdout);
        return argc < 1 ? 2 : 0;
    }
    const char *cmd = argv[0], *name = NULL, *password_file = NULL;
    bool add = strcmp(cmd, "add") == 0, del = strcmp(cmd, "delete") == 0;
    if (!add && !del && strcmp(cmd, "list") != 0) {
        fprintf(stderr, PROG ": unknown command '%s'\n", cmd);
        usage(stderr);
        return 2;
    }
    unsigned mechs = 0;
    int iterations = DEFAULT_ITERATIONS;
    char *flags[MAX_ARGS];
    int nflags = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = strchr(a, '=') ? strchr(a, '=') + 1 : (i + 1 < argc ? argv[i + 1] : NULL);
        bool inline_v = strchr(a, '=') != NULL;
        if (is_opt(a, "--password")) {
            fprintf(stderr, PROG ": --password: a password on the command line is visible to "
                                 "other users of the machine; use --password-file FILE or standard "
                                 "input\n");
            return 2;
        }
        if (is_opt(a, "--mechanism") || is_opt(a, "--iterations") || is_opt(a, "--password-file")) {
            if (!v) {
                fprintf(stderr, PROG ": %s wants a value\n", a);
                return 2;
            }
            if (!inline_v) i++;
            if (a[2] == 'm') {
                ls_scram_mech m;
                if (!ls_scram_mech_from_name(v, strlen(v), &m)) {
                    fprintf(stderr,
                            PROG ": --mechanism: '%s' is not SCRAM-SHA-256 or "
                                 "SCRAM-SHA-512\n",
                            v);
                    return 2;
                }
                mechs |= 1u << m;
            } else if (a[2] == 'i') {
                char *end;
                long n = strtol(v, &end, 10);
                if (*end || n < LS_SCRAM_MIN_ITERATIONS || n > LS_SCRAM_MAX_ITERATIONS) {
                    fprintf(stderr, PROG ": --iterations: '%s' is not within %d..%d\n", v,
                            LS_SCRAM_MIN_ITERATIONS, LS_SCRAM_MAX_ITERATIONS);
                    return 2;
                }
                iterations = (int)n;
            } else {
                password_file = v;
            }
        } else if (a[0] != '-' && !name && (add || del)) {
            name = a;
        } else if (nflags < MAX_ARGS) {
            flags[nflags++] = argv[i];
        }
    }
    if ((add || del) && (!name || !*name)) {
        fprintf(stderr, PROG " %s: which user? (NAME)\n", cmd);
        return 2;
    }
    bool named = mechs != 0;
    if (!mechs) mechs = (1u << LS_SCRAM_SHA_256) | (1u << LS_SCRAM_SHA_512);
    char *password = NULL;
    if (add && !(password = read_password(password_file))) {
        fprintf(stderr, PROG " add: no password (the first line of %s is empty or unreadable)\n",
                password_file ? password_file : "standard input");
        return 2;
    }
    char err[768];
    ls_config_t cfg;
    ls_config_init(&cfg, settings);
    int rc = 1;
    ls_meta_t *meta = NULL;
    if (ls_config_load(&cfg, nflags, flags, err, sizeof err) != 0) {
        fprintf(stderr, PROG ": configuration error: %s\n", err);
        rc = 2;
    } else if (!(meta = ls_meta_open(cfg.metadata_url, err, sizeof err))) {
        fprintf(stderr, PROG ": %s\n", err);
    } else if (add || del) {
        rc = cmd_change(meta, name, mechs, named, password, iterations);
    } else {
        rc = cmd_list(meta);
    }
    if (password) {
        memset(password, 0, strlen(password));
        free(password);
    }
    if (meta) ls_meta_close(meta);
    ls_config_free(&cfg);
    return rc;
}
