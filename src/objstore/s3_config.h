/* The settings of one S3 store, resolved from its s3:// URL (s3_config.c). */
#ifndef LS_OBJSTORE_S3_CONFIG_H
#define LS_OBJSTORE_S3_CONFIG_H
#include <stdint.h>

#include "objstore/objstore.h"

enum { LS_S3_TRI_AUTO = -1, LS_S3_TRI_OFF = 0, LS_S3_TRI_ON = 1 };
#define LS_S3_MAX_PARTS 10000 /* S3's limit of parts in a multipart upload */

typedef struct ls_s3_config {
    char *bucket;
    char *prefix;      /* "" or "dir/sub/" */
    char *scheme_host; /* "https://host[:port]" as requests go out */
    char *host_hdr;    /* Host header value */
    char *path_base;   /* "" (virtual-hosted) or "/bucket" (path style) */
    char *region, *access_key, *secret_key, *session_token, *ca_file;
    int tls_verify, unsigned_payload, path_style;
    int create_only_mode; /* LS_S3_TRI_* */
    long request_timeout_ms, connect_timeout_ms;
    int max_conns, max_retries;
    long backoff_ms, backoff_max_ms;
    uint64_t mp_threshold, part_size;
    int list_page;
    int test_fail_part; /* test hook: this part number fails (0: none) */
} ls_s3_config_t;

/* Fills c from url ("s3://bucket[/prefix][?opt=value&...]") over o (NULL:
 * defaults) and the environment. LS_OK, or LS_EINVAL with err naming the bad
 * part. */
ls_status ls_s3_config_resolve(const char *url, const ls_objstore_opts_t *o, ls_s3_config_t *c,
                               char *err, size_t errlen);
/* Frees the strings, wiping the secrets first. */
void ls_s3_config_free(ls_s3_config_t *c);
#endif
