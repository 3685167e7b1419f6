/* `lakestream check`: proves the configured stores are usable before a
 * broker is started on them. Object store: create-only PUT of a probe
 * object, a second create-only PUT (must answer "exists"), full and ranged
 * GET (bytes compared), HEAD, LIST (the probe is listed), DELETE, HEAD
 * (gone). Metadata store: read the cluster id, write and delete a probe key.
 * One line per step, "ok"/"FAIL" with timings and the store's message; exit
 * code 0 when every step passed, 1 otherwise, 2 on a configuration error.
 * Secrets are never printed (only the URL, which carries none).
 *
 * With --latency=N (and --latency-size=SIZE, default 1 MiB) it then times N
 * create-only PUTs of SIZE bytes, one at a time (each object deleted after
 * it, untimed), and N metadata writes of a probe key: p50, p99 and max of
 * each. An acks=all produce waits for one WAL object's PUT and one metadata
 * commit, so these are the floor its latency sits on (bench/README.md
 * compares produce latency on S3 with it). */
#include "server/check.h"
#include "server/settings.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/clock.h"
#include "base/config.h"
#include "base/diag.h"
#include "meta/meta.h"
#include "objstore/objstore.h"
#include "meta/meta_keys.h"

typedef struct check {
    int failed;
    int64_t t0;
    int latency_n;         /* --latency: samples, 0 = none */
    int64_t latency_bytes; /* --latency-size */
} check_t;

static void step_begin(check_t *c) { c->t0 = ls_clock_mono_us(); }

static void step_end(check_t *c, int ok, const char *what, const char *detail)
{
    double ms = (double)(ls_clock_mono_us() - c->t0) / 1000.0;
    printf("  %-4s %-44s %8.1f ms%s%s\n", ok ? "ok" : "FAIL", what, ms,
           detail && *detail ? "  " : "", detail ? detail : "");
    if (!ok) c->failed++;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Sorts ms[0..n) and prints its p50, p99 and max after what. */
static void print_latency(const char *what, double *ms, int n)
{
    qsort(ms, (size_t)n, sizeof *ms, cmp_double);
    int p99 = (int)((double)n * 0.99);
    printf("  ok   %-44s p50 %.1f ms  p99 %.1f ms  max %.1f ms\n", what, ms[n / 2],
           ms[p99 < n ? p99 : n - 1], ms[n - 1]);
}

static void put_latency(check_t *c, ls_objstore_t *os, const char *host)
{
    size_t size = (size_t)c->latency_bytes;
    uint8_t *data = ls_malloc(size ? size : 1);
    for (size_t i = 0; i < size; i++)
        data[i] = (uint8_t)(i * 2654435761u >> 13);
    double *ms = ls_malloc((size_t)c->latency_n * sizeof *ms);
    struct iovec iov = {data, size};
    int done = 0;
    for (int i = 0; i < c->latency_n; i++) {
        char key[160];
        snprintf(key, sizeof key, "_lakestream/latency-%s-%ld-%d.probe", host, (long)getpid(), i);
        int64_t t0 = ls_clock_mono_us();
        ls_status st = ls_objstore_put(os, key, &iov, 1, LS_OBJSTORE_PUT_CREATE_ONLY);
        ms[done] = (double)(ls_clock_mono_us() - t0) / 1000.0;
        if (st != LS_OK) {
            printf("  FAIL %-44s %s\n", "put latency", ls_objstore_error(os));
            c->failed++;
            break;
        }
        done++;
        if (ls_objstore_del(os, key) != LS_OK) {
            printf("  FAIL %-44s delete %s: %s\n", "put latency", key, ls_objstore_error(os));
            c->failed++;
            break;
        }
    }
    if (done == c->latency_n) {
        char what[80];
        snprintf(what, sizeof what, "put latency, %d x %lld bytes", done,
                 (long long)c->latency_bytes);
        print_latency(what, ms, done);
    }
    ls_free(ms);
    ls_free(data);
}

static void check_objstore(check_t *c, const ls_config_t *cfg)
{
    printf("object store %s\n", cfg->object_store_url);
    char err[512];
    ls_objstore_opts_t oo;
    ls_objstore_opts_from_config(&oo, cfg);
    step_begin(c);
    ls_objstore_t *os = ls_objstore_open_opts(cfg->object_store_url, &oo, err, sizeof err);
    step_end(c, os != NULL, "open", os ? os->ops->name : err);
    if (!os) return;
    char host[64] = "host";
    gethostname(host, sizeof host - 1);
    for (char *p = host; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')))
            *p = '-';
    char key[160];
    snprintf(key, sizeof key, "_lakestream/check-%s-%ld-%lld.probe", host, (long)getpid(),
             (long long)ls_clock_wall_ms());
    uint8_t data[4096];
    for (size_t i = 0; i < sizeof data; i++)
        data[i] = (uint8_t)(i * 131 + 7);
    struct iovec iov = {data, sizeof data};
    char detail[300];

    step_begin(c);
    ls_status st = ls_objstore_put(os, key, &iov, 1, LS_OBJSTORE_PUT_CREATE_ONLY);
    snprintf(detail, sizeof detail, "%s", st == LS_OK ? key : ls_objstore_error(os));
    step_end(c, st == LS_OK, "put (create-only) probe object", detail);
    if (st != LS_OK) goto close;

    step_begin(c);
    st = ls_objstore_put(os, key, &iov, 1, LS_OBJSTORE_PUT_CREATE_ONLY);
    snprintf(detail, sizeof detail, "%s",
             st == LS_EEXISTS ? "refused as it should"
             : st == LS_OK    ? "ACCEPTED: the store overwrote an existing object"
                              : ls_objstore_error(os));
    step_end(c, st == LS_EEXISTS, "put (create-only) again: must be refused", detail);

    ls_buf_t b;
    ls_buf_init(&b);
    step_begin(c);
    st = ls_objstore_get(os, key, 0, UINT64_MAX, &b);
    int same = st == LS_OK && b.len == sizeof data && memcmp(b.data, data, sizeof data) == 0;
    snprintf(detail, sizeof detail, "%s",
             st != LS_OK ? ls_objstore_error(os)
             : same      ? ""
                         : "bytes differ");
    step_end(c, same, "get whole object", detail);

    step_begin(c);
    st = ls_objstore_get(os, key, 1000, 100, &b);
    same = st == LS_OK && b.len == 100 && memcmp(b.data, data + 1000, 100) == 0;
    snprintf(detail, sizeof detail, "%s",
             st != LS_OK ? ls_objstore_error(os)
             : same      ? ""
                         : "bytes differ");
    step_end(c, same, "get byte range", detail);
    ls_buf_free(&b);

    ls_objinfo_t info;
    step_begin(c);
    st = ls_objstore_head(os, key, &info);
    int ok = st == LS_OK && info.size == sizeof data;
    snprintf(detail, sizeof detail, "%s",
             st != LS_OK ? ls_objstore_error(os)
             : ok        ? ""
                         : "wrong size");
    step_end(c, ok, "head", detail);

    ls_objinfo_t *v = NULL;
    size_t n = 0;
    step_begin(c);
    st = ls_objstore_list(os, "_lakestream/", &v, &n);
    ok = 0;
    for (size_t i = 0; st == LS_OK && i < n; i++)
        ok |= strcmp(v[i].key, key) == 0;
    ls_objinfo_free(v, n);
    snprintf(detail, sizeof detail, "%s",
             st != LS_OK ? ls_objstore_error(os)
             : ok        ? ""
                         : "probe not listed");
    step_end(c, ok, "list", detail);

    step_begin(c);
    st = ls_objstore_del(os, key);
    snprintf(detail, sizeof detail, "%s", st == LS_OK ? "" : ls_objstore_error(os));
    step_end(c, st == LS_OK, "delete", detail);

    step_begin(c);
    st = ls_objstore_head(os, key, &info);
    step_end(c, st == LS_ENOTFOUND, "head after delete: must be gone",
             st == LS_ENOTFOUND ? ""
             : st == LS_OK      ? "still there"
                                : ls_objstore_error(os));
    if (c->latency_n > 0 && !c->failed) put_latency(c, os, host);
close:
    ls_objstore_close(os);
}

static void check_meta(check_t *c, const ls_config_t *cfg)
{
    printf("metadata store %s\n", cfg->metadata_url);
    char err[512];
    step_begin(c);
    ls_meta_t *m = ls_meta_open(cfg->metadata_url, err, sizeof err);
    step_end(c, m != NULL, "open", m ? "" : err);
    if (!m) return;
    ls_kv_t kv;
    char detail[300];
    step_begin(c);
    ls_status st = ls_meta_get(m, LS_KEY_CLUSTER_ID, &kv);
    if (st == LS_OK) {
        snprintf(detail, sizeof detail, "cluster %.*s", (int)kv.vlen, (const char *)kv.val);
        ls_kv_free(&kv);
    } else {
        snprintf(detail, sizeof detail, "%s",
                 st == LS_ENOTFOUND ? "no cluster yet (created by the first broker)"
                                    : ls_meta_error(m));
    }
    step_end(c, st == LS_OK || st == LS_ENOTFOUND, "read cluster id", detail);
    char key[128];
    snprintf(key, sizeof key, LS_KEY_CHECK "%ld-%lld", (long)getpid(),
             (long long)ls_clock_wall_ms());
    step_begin(c);
    st = ls_meta_put(m, key, "probe", 5);
    step_end(c, st == LS_OK, "write probe key", st == LS_OK ? "" : ls_meta_error(m));
    step_begin(c);
    st = ls_meta_del(m, key);
    step_end(c, st == LS_OK, "delete probe key", st == LS_OK ? "" : ls_meta_error(m));
    if (c->latency_n > 0 && st == LS_OK) {
        double *ms = ls_malloc((size_t)c->latency_n * sizeof *ms);
        int i = 0;
        for (; i < c->latency_n; i++) {
            int64_t t0 = ls_clock_mono_us();
            st = ls_meta_put(m, key, "probe", 5);
            ms[i] = (double)(ls_clock_mono_us() - t0) / 1000.0;
            if (st != LS_OK) break;
        }
        if (st == LS_OK) st = ls_meta_del(m, key);
        if (st == LS_OK) {
            char what[80];
            snprintf(what, sizeof what, "metadata write latency, %d writes", i);
            print_latency(what, ms, i);
        } else {
            printf("  FAIL %-44s %s\n", "metadata write latency", ls_meta_error(m));
            c->failed++;
        }
        ls_free(ms);
    }
    ls_meta_close(m);
}

/* Takes --latency=N and --latency-size=SIZE out of argv (the rest are
 * configuration flags). 0, or -1 with the reason printed. */
static int latency_args(check_t *c, int *argc, char **argv)
{
    c->latency_bytes = 1 << 20;
    int n = 0;
    for (int i = 0; i < *argc; i++) {
        const char *a = argv[i], *v;
        if (!strncmp(a, "--latency=", 10)) {
            v = a + 10;
            char *end;
            long x = strtol(v, &end, 10);
            if (end == v || *end || x < 1 || x > 100000) {
                fprintf(stderr, "lakestream check: --latency=%s: want a count of 1..100000\n", v);
                return -1;
            }
            c->latency_n = (int)x;
        } else if (!strncmp(a, "--latency-size=", 15)) {
            v = a + 15;
            if (ls_config_parse_size(v, &c->latency_bytes) != 0 || c->latency_bytes > (int64_t)1
                                                                                          << 30) {
                fprintf(stderr, "lakestream check: --latency-size=%s: want a size up to 1GiB\n", v);
                return -1;
            }
        } else {
            argv[n++] = argv[i];
        }
    }
    *argc = n;
    return 0;
}

int ls_check_main(int argc, char **argv)
{
    char err[512];
    check_t c = {0};
    if (latency_args(&c, &argc, argv) != 0) return 2;
    ls_config_t cfg;
    ls_config_init(&cfg, &ls_broker_settings);
    if (ls_config_load(&cfg, argc, argv, err, sizeof err) != 0) {
        fprintf(stderr, "lakestream: configuration error: %s\n", err);
        ls_config_free(&cfg);
        return 2;
    }
    ls_diag_level lvl;
    if (cfg.log_level && ls_diag_parse_level(cfg.log_level, &lvl) == 0)
        ls_diag_set_level(lvl > LS_DIAG_WARN ? lvl : LS_DIAG_WARN);
    check_objstore(&c, &cfg);
    check_meta(&c, &cfg);
    printf("%s\n", c.failed ? "check FAILED" : "check passed");
    ls_config_free(&cfg);
    return c.failed ? 1 : 0;
}
