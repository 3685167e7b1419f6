/* AWS Signature Version 4, header-based (the "Authorization: AWS4-HMAC-SHA256"
 * form), and the hashes the S3 client needs around it.
 *
 * The canonical request follows AWS's spec as S3 applies it: the path is
 * URI-encoded once (every byte outside A-Za-z0-9-._~ becomes %XX, '/' kept),
 * never normalized; query parameters are decoded, re-encoded and sorted;
 * header names are lower-cased and sorted, values trimmed with inner runs of
 * spaces collapsed. Tested against AWS's published vectors
 * (tests/unit/objstore/test_sigv4.c). Stateless and thread-safe. */
#ifndef LS_SIGV4_H
#define LS_SIGV4_H
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>
#include <time.h>

#include "base/buf.h"

#define LS_SHA256_HEX_LEN 64
#define LS_SIGV4_EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define LS_SIGV4_UNSIGNED "UNSIGNED-PAYLOAD"

typedef struct ls_sigv4_hdr {
    const char *name; /* any case */
    const char *value;
} ls_sigv4_hdr_t;

typedef struct ls_sigv4_req {
    const char *method;         /* "GET", "PUT", ... */
    const char *path;           /* raw (unencoded) absolute path, e.g. "/bucket/a b" */
    const char *query;          /* query string as sent (percent-encoded), or NULL */
    const ls_sigv4_hdr_t *hdrs; /* every header to sign, including host and x-amz-date */
    int nhdrs;
    const char *payload_hash; /* hex SHA-256 of the body, or LS_SIGV4_UNSIGNED */
} ls_sigv4_req_t;

typedef struct ls_sigv4_cred {
    const char *access_key;
    const char *secret_key;
    const char *region;
    const char *service; /* "s3" */
} ls_sigv4_cred_t;

/* Appends the Authorization header value to *out. amz_date is the request's
 * x-amz-date ("YYYYMMDDTHHMMSSZ"). creq / sts, when not NULL, receive the
 * canonical request and the string to sign (for tests). Returns 0, or -1 on
 * malformed input (bad date). */
int ls_sigv4_authorization(const ls_sigv4_req_t *r, const ls_sigv4_cred_t *c, const char *amz_date,
                           ls_buf_t *out, ls_buf_t *creq, ls_buf_t *sts);

/* x-amz-date for a wall-clock time: "YYYYMMDDTHHMMSSZ" (17 bytes with NUL). */
void ls_sigv4_date(time_t t, char out[17]);

/* Appends s URI-encoded the SigV4 way; '/' is kept unless encode_slash. */
void ls_sigv4_uri_encode(ls_buf_t *out, const char *s, size_t n, int encode_slash);

/* Hex SHA-256 of the concatenated iovecs (out: 65 bytes with NUL). */
void ls_sha256_hex_iov(const struct iovec *iov, int iovcnt, char out[LS_SHA256_HEX_LEN + 1]);
void ls_sha256_hex(const void *p, size_t n, char out[LS_SHA256_HEX_LEN + 1]);
/* MD5 of the iovecs: hex (33 bytes with NUL) and base64 (25 bytes with NUL). */
void ls_md5_iov(const struct iovec *iov, int iovcnt, char hex[33], char b64[25]);
#endif
