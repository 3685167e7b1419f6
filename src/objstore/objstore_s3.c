/* ls_objstore s3 backend: any S3-compatible store (AWS S3, Ceph radosgw,
 * MinIO) over libcurl, signed with SigV4 (sigv4.c).
 *
 * URL: s3://bucket[/prefix][?opt=value&...]. Object key K is stored as
 * "<prefix>/K". Options (URL query > ls_objstore_opts from config > AWS_*
 * environment > default): endpoint, region, path_style, create_only,
 * tls_verify, ca_file, unsigned_payload, request_timeout_ms,
 * connect_timeout_ms, max_connections, max_retries, retry_backoff_ms,
 * retry_backoff_max_ms, multipart_threshold, part_size, list_page_size, and
 * test_fail_part=N (tests only: part N of a multipart upload fails, which
 * must abort the upload); s3_config.c resolves them. Credentials never come
 * from the URL (the broker logs it). Response XML: s3_xml.c.
 *
 * Requests: PUT (If-None-Match: * for create-only), ranged GET, HEAD, DELETE,
 * DeleteObjects (del_many), ListObjectsV2 with continuation, multipart
 * upload above multipart_threshold (aborted on failure). Bodies are signed
 * with their real SHA-256 unless unsigned_payload.
 *
 * Create-only: "true" trusts the server's If-None-Match (412 -> LS_EEXISTS);
 * "false" never sends it and checks with HEAD first (racy: two writers may
 * both create); "auto" sends it and, once per store, probes whether the
 * server honours it (PUT twice); a server that ignores it gets the HEAD
 * check too. A create-only PUT whose earlier attempt may have landed (a
 * retry answered 412) compares the stored ETag with the payload's MD5: if
 * they match the object is ours and the put succeeded. Multipart objects
 * send If-None-Match on CompleteMultipartUpload after a HEAD check (Ceph
 * ignores the header there; WAL objects stay far below the threshold).
 *
 * Retries: exponential backoff with equal jitter (retry_backoff_ms doubling
 * up to retry_backoff_max_ms), at most max_retries times, on transport
 * errors (connect, timeout, reset), 5xx, 429, 408 and throttling codes
 * (SlowDown, RequestTimeout, ...). Never on other 4xx. Every request is
 * idempotent as sent (create-only retries are resolved as above).
 * Exhausted retries give LS_EAGAIN; permanent errors LS_EIO; 404 on
 * objects LS_ENOTFOUND; 412 LS_EEXISTS.
 *
 * Threads: every call blocks its calling thread. Easy handles live in a
 * pool (at most max_connections; callers wait for a free one), so
 * concurrency is bounded and each handle keeps its connections alive
 * across requests (base/curl_pool.h, which also classifies transport
 * errors). Shared mutable state: the pool, the create-only probe result (probe_mu + atomic), the
 * RNG (atomic). Secrets are kept only here and in the signing step; messages carry method, key,
 * status, S3 error code and request id, never headers. */
#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/check.h"
#include "base/clock.h"
#include "base/curl_pool.h"
#include "base/url.h"
#include "base/diag.h"
#include "base/metrics.h"
#include "objstore/objstore_s3.h"
#include "objstore/s3_config.h"
#include "objstore/s3_xml.h"
#include "objstore/sigv4.h"

#define S3_ERRBODY_MAX (16 * 1024)
#define S3_XML_MAX ((size_t)64 << 20) /* list / multipart responses */
#define S3_DELETE_BATCH 1000
#define S3_PROBE_DIR "_lakestream"

/* Request kinds as a bill counts them: a listing page is a GET of the
 * bucket, priced as a LIST. */
enum { REQ_PUT, REQ_GET, REQ_LIST, REQ_HEAD, REQ_DELETE, REQ_POST, REQ_KINDS };
static const char *const req_kind_names[REQ_KINDS] = {"PUT",  "GET",    "LIST",
                                                      "HEAD", "DELETE", "POST"};

/* S3 requests sent, as S3 bills them (docs/OPERATIONS.md "Metrics"). */
static LS_METRIC_COUNTER(m_requests, "lakestream_s3_requests",
                         "S3 requests sent (retries included), by kind as S3 bills them.", "kind");

typedef struct s3_store {
    ls_objstore_t base;
    ls_s3_config_t c;      /* as resolved at open (s3_config.h) */
    int create_only_state; /* atomic: -1 unknown, 0 ignored by server, 1 honoured */

    ls_curl_pool_t pool; /* c.max_conns handles */

    pthread_mutex_t probe_mu;
    uint64_t rng;                 /* atomic */
    uint64_t nrequests, nretries; /* atomic, for diagnostics */
    uint64_t by_kind[REQ_KINDS];  /* atomic: requests sent (retries too), as S3 bills them */
} s3_store_t;

/* One logical request (retried as a unit). */
typedef struct s3_req {
    const char *method;
    const char *key;         /* store-relative key; NULL: the bucket itself */
    const char *query;       /* percent-encoded, or NULL */
    const struct iovec *iov; /* body */
    int iovcnt;
    uint64_t body_len;
    const char *payload_hash; /* NULL: computed from iov */
    ls_sigv4_hdr_t extra[4];
    int nextra;
    ls_buf_t *out; /* 2xx response body (NULL: discarded) */
    uint64_t out_max;
    /* results of the last attempt */
    long status;
    CURLcode cc;
    int attempts;
    char etag[96];
    uint64_t clen;
    int has_clen;
    int64_t mtime_ms;
    char code[64]; /* S3 <Code> of an error response */
    char msg[160];
    char reqid[64];
    int overflow;
    ls_buf_t errbody;
    /* upload cursor */
    int cur;
    size_t cur_off;
} s3_req_t;

static void s3_set_err(s3_store_t *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void s3_set_err(s3_store_t *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ls_objstore_errbuf(), LS_OBJSTORE_ERRMSG_CAP, fmt, ap);
    va_end(ap);
}

static uint64_t s3_rand(s3_store_t *s)
{
    uint64_t x = __atomic_load_n(&s->rng, __ATOMIC_RELAXED), n;
    do {
        n = x;
        n ^= n << 13;
        n ^= n >> 7;
        n ^= n << 17;
    } while (!__atomic_compare_exchange_n(&s->rng, &x, n, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
    return n * 0x2545F4914F6CDD1DULL;
}

/* ---------------------------------------------------------------- transfer */

static size_t on_read(char *buf, size_t size, size_t nitems, void *arg)
{
    s3_req_t *r = arg;
    size_t cap = size * nitems, n = 0;
    while (n < cap && r->cur < r->iovcnt) {
        const struct iovec *v = &r->iov[r->cur];
        size_t left = v->iov_len - r->cur_off;
        size_t k = left < cap - n ? left : cap - n;
        if (k) memcpy(buf + n, (const char *)v->iov_base + r->cur_off, k);
        n += k;
        r->cur_off += k;
        if (r->cur_off == v->iov_len) {
            r->cur++;
            r->cur_off = 0;
        }
    }
    return n;
}

static int on_seek(void *arg, curl_off_t offset, int origin)
{
    s3_req_t *r = arg;
    if (origin != SEEK_SET || offset < 0) return CURL_SEEKFUNC_CANTSEEK;
    uint64_t left = (uint64_t)offset;
    r->cur = 0;
    r->cur_off = 0;
    while (r->cur < r->iovcnt && left >= r->iov[r->cur].iov_len) {
        left -= r->iov[r->cur].iov_len;
        r->cur++;
    }
    if (r->cur == r->iovcnt && left) return CURL_SEEKFUNC_FAIL;
    r->cur_off = (size_t)left;
    return CURL_SEEKFUNC_OK;
}

static size_t on_write(char *p, size_t size, size_t nmemb, void *arg)
{
    s3_req_t *r = arg;
    size_t n = size * nmemb;
    if (r->status >= 200 && r->status < 300) {
        if (!r->out) return n;
        if (r->out->len + n > r->out_max) {
            r->overflow = 1;
            return 0; /* aborts the transfer */
        }
        if (r->out->len == 0 && r->has_clen && r->clen <= r->out_max)
            ls_buf_reserve(r->out, (size_t)r->clen);
        ls_buf_append(r->out, p, n);
        return n;
    }
    if (r->errbody.len < S3_ERRBODY_MAX) {
        size_t k = S3_ERRBODY_MAX - r->errbody.len < n ? S3_ERRBODY_MAX - r->errbody.len : n;
        ls_buf_append(&r->errbody, p, k);
    }
    return n;
}

static int hdr_is(const char *line, size_t n, const char *name, const char **val, size_t *vlen)
{
    size_t nl = strlen(name);
    if (n <= nl || strncasecmp(line, name, nl) != 0 || line[nl] != ':') return 0;
    size_t i = nl + 1;
    while (i < n && (line[i] == ' ' || line[i] == '\t'))
        i++;
    size_t e = n;
    while (e > i && (line[e - 1] == '\r' || line[e - 1] == '\n' || line[e - 1] == ' '))
        e--;
    *val = line + i;
    *vlen = e - i;
    return 1;
}

static size_t on_header(char *line, size_t size, size_t nitems, void *arg)
{
    s3_req_t *r = arg;
    size_t n = size * nitems;
    const char *v;
    size_t vl;
    if (n > 5 && memcmp(line, "HTTP/", 5) == 0) {
        /* a new response (after 100 Continue, say): forget the last one's */
        const char *sp = memchr(line, ' ', n);
        r->status = sp ? strtol(sp + 1, NULL, 10) : 0;
        r->has_clen = 0;
        r->etag[0] = 0;
        return n;
    }
    if (hdr_is(line, n, "content-length", &v, &vl)) {
        char tmp[32];
        snprintf(tmp, sizeof tmp, "%.*s", (int)(vl < 31 ? vl : 31), v);
        r->clen = strtoull(tmp, NULL, 10);
        r->has_clen = 1;
    } else if (hdr_is(line, n, "etag", &v, &vl)) {
        snprintf(r->etag, sizeof r->etag, "%.*s",
                 (int)(vl < sizeof r->etag - 1 ? vl : sizeof r->etag - 1), v);
    } else if (hdr_is(line, n, "x-amz-request-id", &v, &vl)) {
        snprintf(r->reqid, sizeof r->reqid, "%.*s",
                 (int)(vl < sizeof r->reqid - 1 ? vl : sizeof r->reqid - 1), v);
    } else if (hdr_is(line, n, "last-modified", &v, &vl)) {
        char tmp[64];
        snprintf(tmp, sizeof tmp, "%.*s", (int)(vl < 63 ? vl : 63), v);
        time_t t = curl_getdate(tmp, NULL);
        if (t > 0) r->mtime_ms = (int64_t)t * 1000;
    }
    return n;
}

static int http_transient(const s3_req_t *r)
{
    if (r->status >= 500 || r->status == 429 || r->status == 408) return 1;
    static const char *const codes[] = {
        "SlowDown",         "RequestTimeout", "Throttling",        "ThrottlingException",
        "RequestThrottled", "InternalError",  "ServiceUnavailable"};
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
        if (strcmp(r->code, codes[i]) == 0) return 1;
    return 0;
}

/* The request's path before encoding: path_base "/" prefix key. */
static char *req_path(s3_store_t *s, const s3_req_t *r)
{
    if (!r->key) return ls_strdup(s->c.path_base[0] ? s->c.path_base : "/");
    return ls_asprintf("%s/%s%s", s->c.path_base, s->c.prefix, r->key);
}

/* One HTTP exchange. Fills r->cc, r->status and the response fields. */
static void s3_attempt(s3_store_t *s, CURL *c, s3_req_t *r, const char *path,
                       const char *payload_hash)
{
    char date[17];
    ls_sigv4_date(time(NULL), date);
    ls_sigv4_hdr_t h[10];
    int nh = 0;
    h[nh++] = (ls_sigv4_hdr_t){"host", s->c.host_hdr};
    h[nh++] = (ls_sigv4_hdr_t){"x-amz-content-sha256", payload_hash};
    h[nh++] = (ls_sigv4_hdr_t){"x-amz-date", date};
    if (s->c.session_token) h[nh++] = (ls_sigv4_hdr_t){"x-amz-security-token", s->c.session_token};
    for (int i = 0; i < r->nextra; i++)
        h[nh++] = r->extra[i];
    ls_sigv4_req_t sr = {r->method, path, r->query, h, nh, payload_hash};
    ls_sigv4_cred_t cred = {s->c.access_key, s->c.secret_key, s->c.region, "s3"};
    ls_buf_t auth;
    ls_buf_init(&auth);
    ls_buf_printf(&auth, "Authorization: ");
    ls_sigv4_authorization(&sr, &cred, date, &auth, NULL, NULL);
    ls_buf_append_u8(&auth, 0);

    struct curl_slist *hl = NULL;
    ls_buf_t line;
    ls_buf_init(&line);
    for (int i = 0; i < nh; i++) {
        line.len = 0;
        ls_buf_printf(&line, "%s: %s", h[i].name, h[i].value);
        hl = curl_slist_append(hl, (const char *)line.data);
    }
    hl = curl_slist_append(hl, (const char *)auth.data);
    hl = curl_slist_append(hl, "Expect:");
    hl = curl_slist_append(hl, "Accept:");
    if (!hl) LS_PANIC("s3: curl_slist_append failed (out of memory)");
    memset(auth.data, 0, auth.len);
    ls_buf_free(&auth);

    line.len = 0;
    ls_buf_printf(&line, "%s", s->c.scheme_host);
    ls_sigv4_uri_encode(&line, path, strlen(path), 0);
    if (r->query && *r->query) ls_buf_printf(&line, "?%s", r->query);
    ls_buf_append_u8(&line, 0);

    curl_easy_reset(c);
    curl_easy_setopt(c, CURLOPT_URL, (const char *)line.data);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_PATH_AS_IS, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, s->c.request_timeout_ms);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, s->c.connect_timeout_ms);
    curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(c, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, s->c.tls_verify ? 1L : 0L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, s->c.tls_verify ? 2L : 0L);
    if (s->c.ca_file) curl_easy_setopt(c, CURLOPT_CAINFO, s->c.ca_file);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "lakestream");
    if (strcmp(r->method, "HEAD") == 0) {
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    } else if (strcmp(r->method, "PUT") == 0 || strcmp(r->method, "POST") == 0) {
        curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, (curl_off_t)r->body_len);
        curl_easy_setopt(c, CURLOPT_READFUNCTION, on_read);
        curl_easy_setopt(c, CURLOPT_READDATA, r);
        curl_easy_setopt(c, CURLOPT_SEEKFUNCTION, on_seek);
        curl_easy_setopt(c, CURLOPT_SEEKDATA, r);
        if (strcmp(r->method, "POST") == 0) curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, "POST");
    } else if (strcmp(r->method, "GET") != 0) {
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, r->method);
    }

    r->status = 0;
    r->has_clen = 0;
    r->etag[0] = r->code[0] = r->msg[0] = r->reqid[0] = 0;
    r->mtime_ms = 0;
    r->overflow = 0;
    r->errbody.len = 0;
    r->cur = 0;
    r->cur_off = 0;
    if (r->out) r->out->len = 0;
    r->cc = curl_easy_perform(c);
    if (r->cc == CURLE_OK) {
        long code = 0;
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
        r->status = code;
        if (code >= 300 && r->errbody.len) {
            ls_s3_xml_first((const char *)r->errbody.data, r->errbody.len, "Code", r->code,
                            sizeof r->code);
            ls_s3_xml_first((const char *)r->errbody.data, r->errbody.len, "Message", r->msg,
                            sizeof r->msg);
        }
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, NULL);
    curl_slist_free_all(hl);
    ls_buf_free(&line);
}

/* Runs r with retries. Returns LS_OK when a final HTTP response arrived (the
 * caller reads r->status), LS_EAGAIN when transient failures outlasted the
 * retries, LS_EIO on a permanent transport failure. */
static ls_status s3_request(s3_store_t *s, s3_req_t *r)
{
    char hash[LS_SHA256_HEX_LEN + 1];
    const char *ph = r->payload_hash;
    if (!ph) {
        if (s->c.unsigned_payload && r->body_len)
            ph = LS_SIGV4_UNSIGNED;
        else if (!r->body_len)
            ph = LS_SIGV4_EMPTY_SHA256;
        else {
            ls_sha256_hex_iov(r->iov, r->iovcnt, hash);
            ph = hash;
        }
    }
    char *path = req_path(s, r);
    ls_buf_init(&r->errbody);
    CURL *c = ls_curl_pool_get(&s->pool);
    ls_status st = LS_OK;
    int kind = strcmp(r->method, "PUT") == 0      ? REQ_PUT
               : strcmp(r->method, "HEAD") == 0   ? REQ_HEAD
               : strcmp(r->method, "DELETE") == 0 ? REQ_DELETE
               : strcmp(r->method, "POST") == 0   ? REQ_POST
               : r->key                           ? REQ_GET
                                                  : REQ_LIST;
    for (r->attempts = 1;; r->attempts++) {
        __atomic_add_fetch(&s->nrequests, 1, __ATOMIC_RELAXED);
        __atomic_add_fetch(&s->by_kind[kind], 1, __ATOMIC_RELAXED);
        ls_metric_add(ls_metrics_series1(&m_requests, req_kind_names[kind]), 1);
        s3_attempt(s, c, r, path, ph);
        /* every request is idempotent as sent: retry whatever may have failed in transit */
        int transient =
            r->cc != CURLE_OK ? ls_curl_classify(r->cc) != LS_CURL_PERMANENT : http_transient(r);
        if (r->cc == CURLE_OK && !transient) break;
        if (!transient) {
            /* the endpoint too: a certificate or name the operator must fix */
            s3_set_err(s, "%s %s at %s: %s%s", r->method, r->key ? r->key : "(bucket)",
                       s->c.scheme_host, curl_easy_strerror(r->cc),
                       r->overflow ? " (response larger than expected)" : "");
            st = LS_EIO;
            break;
        }
        if (r->attempts > s->c.max_retries) {
            if (r->cc != CURLE_OK)
                s3_set_err(s, "%s %s: %s (after %d attempts)", r->method,
                           r->key ? r->key : "(bucket)", curl_easy_strerror(r->cc), r->attempts);
            else
                s3_set_err(s, "%s %s: HTTP %ld %s %s (after %d attempts)", r->method,
                           r->key ? r->key : "(bucket)", r->status, r->code, r->msg, r->attempts);
            st = LS_EAGAIN;
            break;
        }
        /* equal jitter: half the backoff fixed, half random */
        int shift = r->attempts - 1 < 20 ? r->attempts - 1 : 20;
        long b = s->c.backoff_ms << shift;
        if (b > s->c.backoff_max_ms || b <= 0) b = s->c.backoff_max_ms;
        long d = b / 2 + (long)(s3_rand(s) % (uint64_t)(b / 2 + 1));
        __atomic_add_fetch(&s->nretries, 1, __ATOMIC_RELAXED);
        if (r->cc == CURLE_OPERATION_TIMEDOUT)
            /* a store that stops answering (a full Ceph cluster blocks writes): what
             * waits on it (produce acknowledgements) waits this long per attempt */
            LS_WARN_RL("objstore",
                       "s3: %s %s: no answer within s3.request.timeout.ms (%ld ms) from %s; "
                       "retry %d of %d in %ld ms",
                       r->method, r->key ? r->key : "(bucket)", (long)s->c.request_timeout_ms,
                       s->c.scheme_host, r->attempts, s->c.max_retries, d);
        else
            LS_DEBUG("objstore", "s3: %s %s: %s; retry %d in %ld ms", r->method,
                     r->key ? r->key : "(bucket)",
                     r->cc != CURLE_OK ? curl_easy_strerror(r->cc) : (r->code[0] ? r->code : "5xx"),
                     r->attempts, d);
        struct timespec ts = {d / 1000, (d % 1000) * 1000000L};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
            ;
    }
    ls_curl_pool_put(&s->pool, c);
    ls_free(path);
    if (st != LS_OK) LS_WARN_RL("objstore", "s3: %s", ls_objstore_errbuf());
    return st;
}

/* Maps a final response that is not a success to a status, with a message. */
static ls_status s3_fail(s3_store_t *s, s3_req_t *r)
{
    s3_set_err(s, "%s %s: HTTP %ld%s%s%s%s%s%s", r->method, r->key ? r->key : "(bucket)", r->status,
               r->code[0] ? " " : "", r->code, r->msg[0] ? ": " : "", r->msg,
               r->reqid[0] ? " request-id " : "", r->reqid);
    if (r->status == 404 && strcmp(r->code, "NoSuchBucket") != 0) return LS_ENOTFOUND;
    if (r->status == 412) return LS_EEXISTS;
    LS_WARN_RL("objstore", "s3: %s", ls_objstore_errbuf());
    return LS_EIO;
}

static void s3_req_done(s3_req_t *r) { ls_buf_free(&r->errbody); }

/* write: a key the broker writes; else any a listing may return. */
static ls_status check_key(s3_store_t *s, const char *key, int write)
{
    if (!(write ? ls_objstore_key_valid(key) : ls_objstore_key_readable(key))) {
        s3_set_err(s, "invalid object key '%s'", key ? key : "(null)");
        return LS_EINVAL;
    }
    return LS_OK;
}

/* ---------------------------------------------------------------- head/get */

static ls_status s3_head(ls_objstore_t *os, const char *key, ls_objinfo_t *info)
{
    s3_store_t *s = (s3_store_t *)os;
    ls_status st = check_key(s, key, 0);
    if (st != LS_OK) return st;
    s3_req_t r = {.method = "HEAD", .key = key};
    st = s3_request(s, &r);
    if (st == LS_OK) {
        if (r.status == 200) {
            info->key = NULL;
            info->size = r.has_clen ? r.clen : 0;
            info->mtime_ms = r.mtime_ms;
        } else {
            st = s3_fail(s, &r);
        }
    }
    s3_req_done(&r);
    return st;
}

static ls_status s3_get(ls_objstore_t *os, const char *key, uint64_t off, uint64_t len,
                        ls_buf_t *out)
{
    s3_store_t *s = (s3_store_t *)os;
    ls_status st = check_key(s, key, 0);
    if (st != LS_OK) return st;
    out->len = 0;
    if (len == 0) {
        ls_objinfo_t info;
        return s3_head(os, key, &info);
    }
    char range[64];
    s3_req_t r = {.method = "GET", .key = key, .out = out};
    if (off > 0 || len != UINT64_MAX) {
        if (len > UINT64_MAX - off)
            snprintf(range, sizeof range, "bytes=%" PRIu64 "-", off);
        else
            snprintf(range, sizeof range, "bytes=%" PRIu64 "-%" PRIu64, off, off + len - 1);
        r.extra[r.nextra++] = (ls_sigv4_hdr_t){"range", range};
    }
    /* a server that ignores Range sends the whole object: accept it and cut */
    r.out_max = (off == 0 && len < (uint64_t)SIZE_MAX / 2) ? len : (uint64_t)SIZE_MAX / 2;
    st = s3_request(s, &r);
    if (st == LS_OK) {
        if (r.status == 206) {
            if (out->len > len) out->len = (size_t)len;
        } else if (r.status == 200) {
            if (r.nextra) { /* Range ignored */
                size_t from = off < out->len ? (size_t)off : out->len;
                size_t n = out->len - from;
                if (n > len) n = (size_t)len;
                memmove(out->data, out->data + from, n);
                out->len = n;
            }
        } else if (r.status == 416) {
            out->len = 0; /* starts at or past the end */
        } else {
            out->len = 0;
            st = s3_fail(s, &r);
        }
    } else {
        out->len = 0;
    }
    s3_req_done(&r);
    return st;
}

/* ---------------------------------------------------------------- put */

static uint64_t iov_total(const struct iovec *iov, int iovcnt)
{
    uint64_t t = 0;
    for (int i = 0; i < iovcnt; i++)
        t += iov[i].iov_len;
    return t;
}

/* 1 when the stored object's ETag is the MD5 of our bytes (single-part). */
static int s3_is_ours(s3_store_t *s, const char *key, const struct iovec *iov, int iovcnt)
{
    s3_req_t r = {.method = "HEAD", .key = key};
    int ours = 0;
    if (s3_request(s, &r) == LS_OK && r.status == 200 && r.etag[0]) {
        char hex[33];
        ls_md5_iov(iov, iovcnt, hex, NULL);
        const char *e = r.etag[0] == '"' ? r.etag + 1 : r.etag;
        ours = strncasecmp(e, hex, 32) == 0 && (e[32] == '"' || e[32] == 0);
    }
    s3_req_done(&r);
    return ours;
}

/* HEAD: LS_OK if absent, LS_EEXISTS if present, else the failure. */
static ls_status s3_absent(s3_store_t *s, const char *key)
{
    s3_req_t r = {.method = "HEAD", .key = key};
    ls_status st = s3_request(s, &r);
    if (st == LS_OK) {
        if (r.status == 200) {
            s3_set_err(s, "put %s: object exists (create-only)", key);
            st = LS_EEXISTS;
        } else if (r.status != 404) {
            st = s3_fail(s, &r);
        }
    }
    s3_req_done(&r);
    return st;
}

static void s3_probe_create_only(s3_store_t *s);

/* How a create-only write is guarded: *hdr send If-None-Match, *head check first. */
static void create_only_plan(s3_store_t *s, int *hdr, int *head)
{
    if (s->c.create_only_mode == LS_S3_TRI_ON) {
        *hdr = 1, *head = 0;
        return;
    }
    if (s->c.create_only_mode == LS_S3_TRI_OFF) {
        *hdr = 0, *head = 1;
        return;
    }
    s3_probe_create_only(s);
    int state = __atomic_load_n(&s->create_only_state, __ATOMIC_ACQUIRE);
    *hdr = state != 0;
    *head = state != 1;
}

static ls_status s3_put_single(s3_store_t *s, const char *key, const struct iovec *iov, int iovcnt,
                               uint64_t total, int create_only, int send_hdr)
{
    s3_req_t r = {.method = "PUT", .key = key, .iov = iov, .iovcnt = iovcnt, .body_len = total};
    if (create_only && send_hdr) r.extra[r.nextra++] = (ls_sigv4_hdr_t){"if-none-match", "*"};
    ls_status st = s3_request(s, &r);
    if (st == LS_OK && r.status != 200) {
        if (r.status == 412 && r.attempts > 1 && s3_is_ours(s, key, iov, iovcnt)) {
            /* an earlier attempt landed and only its answer was lost */
            st = LS_OK;
        } else if (r.status == 412) {
            s3_set_err(s, "put %s: object exists (create-only)", key);
            st = LS_EEXISTS;
        } else {
            st = s3_fail(s, &r);
        }
    }
    s3_req_done(&r);
    return st;
}

/* iov[*] restricted to bytes [from, from + n). Returns a fresh array. */
static struct iovec *iov_slice(const struct iovec *iov, int iovcnt, uint64_t from, uint64_t n,
                               int *outcnt)
{
    struct iovec *v = LS_NEWN(struct iovec, iovcnt ? iovcnt : 1);
    int k = 0;
    uint64_t pos = 0;
    for (int i = 0; i < iovcnt && n > 0; i++) {
        uint64_t len = iov[i].iov_len;
        if (pos + len <= from) {
            pos += len;
            continue;
        }
        uint64_t skip = from > pos ? from - pos : 0;
        uint64_t take = len - skip < n ? len - skip : n;
        v[k].iov_base = (char *)iov[i].iov_base + skip;
        v[k].iov_len = (size_t)take;
        k++;
        n -= take;
        from += take;
        pos += len;
    }
    *outcnt = k;
    return v;
}

static void s3_abort_upload(s3_store_t *s, const char *key, const char *upload_q)
{
    s3_req_t r = {.method = "DELETE", .key = key, .query = upload_q};
    ls_status st = s3_request(s, &r);
    if (st != LS_OK || (r.status != 204 && r.status != 200 && r.status != 404))
        LS_WARN("objstore",
                "s3: aborting multipart upload of %s failed (HTTP %ld %s); the "
                "bucket's lifecycle rule for incomplete uploads must clean it up",
                key, r.status, r.code);
    s3_req_done(&r);
}

static ls_status s3_put_multipart(s3_store_t *s, const char *key, const struct iovec *iov,
                                  int iovcnt, uint64_t total, int create_only)
{
    uint64_t psize = s->c.part_size;
    while ((total + psize - 1) / psize > LS_S3_MAX_PARTS)
        psize *= 2;
    int nparts = (int)((total + psize - 1) / psize);
    int hdr = 0, head = 0;
    if (create_only) {
        create_only_plan(s, &hdr, &head);
        ls_status st = s3_absent(s, key); /* servers may ignore the header on complete */
        if (st != LS_OK) return st;
    }
    /* initiate */
    ls_buf_t xml;
    ls_buf_init(&xml);
    s3_req_t r = {
        .method = "POST", .key = key, .query = "uploads=", .out = &xml, .out_max = 1 << 20};
    ls_status st = s3_request(s, &r);
    if (st == LS_OK && r.status != 200) st = s3_fail(s, &r);
    s3_req_done(&r);
    char upload_id[512];
    if (st == LS_OK) {
        ls_s3_xml_first((const char *)xml.data, xml.len, "UploadId", upload_id, sizeof upload_id);
        if (!upload_id[0]) {
            s3_set_err(s, "put %s: CreateMultipartUpload answered without an UploadId", key);
            st = LS_EIO;
        }
    }
    if (st != LS_OK) {
        ls_buf_free(&xml);
        return st;
    }
    ls_buf_t uq;
    ls_buf_init(&uq);
    ls_buf_printf(&uq, "uploadId=");
    ls_sigv4_uri_encode(&uq, upload_id, strlen(upload_id), 1);
    ls_buf_append_u8(&uq, 0);
    const char *upload_q = (const char *)uq.data;

    /* parts, in order */
    char(*etags)[96] = ls_calloc((size_t)nparts, sizeof *etags);
    for (int p = 0; p < nparts && st == LS_OK; p++) {
        uint64_t from = (uint64_t)p * psize;
        uint64_t n = total - from < psize ? total - from : psize;
        if (s->c.test_fail_part == p + 1) {
            s3_set_err(s, "put %s: part %d failed (test_fail_part)", key, p + 1);
            st = LS_EIO;
            break;
        }
        int cnt;
        struct iovec *sub = iov_slice(iov, iovcnt, from, n, &cnt);
        char *q = ls_asprintf("partNumber=%d&%s", p + 1, upload_q);
        s3_req_t pr = {
            .method = "PUT", .key = key, .query = q, .iov = sub, .iovcnt = cnt, .body_len = n};
        st = s3_request(s, &pr);
        if (st == LS_OK && pr.status != 200) st = s3_fail(s, &pr);
        if (st == LS_OK && !pr.etag[0]) {
            s3_set_err(s, "put %s: part %d answered without an ETag", key, p + 1);
            st = LS_EIO;
        }
        if (st == LS_OK) memcpy(etags[p], pr.etag, sizeof etags[p]);
        s3_req_done(&pr);
        ls_free(q);
        ls_free(sub);
    }
    /* complete */
    if (st == LS_OK) {
        ls_buf_t body;
        ls_buf_init(&body);
        ls_buf_printf(&body, "<CompleteMultipartUpload>");
        for (int p = 0; p < nparts; p++) {
            const char *e = etags[p];
            int quoted = e[0] == '"';
            ls_buf_printf(&body, "<Part><PartNumber>%d</PartNumber><ETag>%s%s%s</ETag></Part>",
                          p + 1, quoted ? "" : "\"", e, quoted ? "" : "\"");
        }
        ls_buf_printf(&body, "</CompleteMultipartUpload>");
        struct iovec bv = {body.data, body.len};
        s3_req_t cr = {.method = "POST",
                       .key = key,
                       .query = upload_q,
                       .iov = &bv,
                       .iovcnt = 1,
                       .body_len = body.len,
                       .out = &xml,
                       .out_max = 1 << 20};
        if (create_only && hdr) cr.extra[cr.nextra++] = (ls_sigv4_hdr_t){"if-none-match", "*"};
        st = s3_request(s, &cr);
        if (st == LS_OK && cr.status != 200) st = s3_fail(s, &cr);
        if (st == LS_OK) {
            /* a 200 may still carry an <Error> (S3 reports late failures so) */
            char code[64];
            ls_s3_xml_first((const char *)xml.data, xml.len, "Code", code, sizeof code);
            size_t pos = 0, vs, vl;
            if (ls_s3_xml_next((const char *)xml.data, xml.len, &pos, "Error", &vs, &vl)) {
                s3_set_err(s, "put %s: CompleteMultipartUpload failed: %s", key, code);
                st = LS_EIO;
            }
        }
        s3_req_done(&cr);
        ls_buf_free(&body);
    }
    if (st != LS_OK) s3_abort_upload(s, key, upload_q);
    ls_free(etags);
    ls_buf_free(&uq);
    ls_buf_free(&xml);
    return st;
}

static ls_status s3_put(ls_objstore_t *os, const char *key, const struct iovec *iov, int iovcnt,
                        int flags)
{
    s3_store_t *s = (s3_store_t *)os;
    ls_status st = check_key(s, key, 1);
    if (st != LS_OK) return st;
    if (iovcnt < 0 || (iovcnt > 0 && !iov) || (flags & ~LS_OBJSTORE_PUT_CREATE_ONLY)) {
        s3_set_err(s, "put %s: invalid arguments", key);
        return LS_EINVAL;
    }
    int create_only = flags & LS_OBJSTORE_PUT_CREATE_ONLY;
    uint64_t total = iov_total(iov, iovcnt);
    if (total > s->c.mp_threshold) return s3_put_multipart(s, key, iov, iovcnt, total, create_only);
    int hdr = 0, head = 0;
    if (create_only) {
        create_only_plan(s, &hdr, &head);
        if (head) {
            st = s3_absent(s, key);
            if (st != LS_OK) return st;
        }
    }
    return s3_put_single(s, key, iov, iovcnt, total, create_only, hdr);
}

/* Once per store (auto mode): does the server refuse a second create-only
 * PUT? Transport failures leave the answer unknown (asked again later). */
static void s3_probe_create_only(s3_store_t *s)
{
    if (__atomic_load_n(&s->create_only_state, __ATOMIC_ACQUIRE) != -1) return;
    pthread_mutex_lock(&s->probe_mu);
    if (__atomic_load_n(&s->create_only_state, __ATOMIC_ACQUIRE) != -1) {
        pthread_mutex_unlock(&s->probe_mu);
        return;
    }
    char key[128];
    snprintf(key, sizeof key, S3_PROBE_DIR "/create-only-probe-%ld-%016" PRIx64, (long)getpid(),
             s3_rand(s));
    struct iovec v = {"probe", 5};
    int state = -1;
    s3_req_t r1 = {.method = "PUT", .key = key, .iov = &v, .iovcnt = 1, .body_len = 5};
    r1.extra[r1.nextra++] = (ls_sigv4_hdr_t){"if-none-match", "*"};
    ls_status st1 = s3_request(s, &r1);
    long status1 = st1 == LS_OK ? r1.status : 0; /* 0: no answer (transport failure) */
    bool landed = status1 == 200 || (status1 == 412 && r1.attempts > 1);
    s3_req_done(&r1);
    if (landed) {
        ls_status st2 = s3_put_single(s, key, &v, 1, 5, 1, 1);
        if (st2 == LS_EEXISTS)
            state = 1;
        else if (st2 == LS_OK)
            state = 0;
        s3_req_t r = {.method = "DELETE", .key = key};
        s3_request(s, &r);
        s3_req_done(&r);
    } else if (status1 == 400 || status1 == 501) {
        state = 0; /* the header itself is refused; a transport failure (an
                    * untrusted certificate) tells nothing: asked again later */
    }
    if (state != -1) {
        if (state == 0)
            LS_WARN("objstore", "s3: the server ignores If-None-Match on PUT; create-only "
                                "writes fall back to a HEAD check (not atomic). Set "
                                "s3.create.only=false to silence this.");
        else
            LS_INFO("objstore", "s3: server honours If-None-Match (atomic create-only puts)");
        __atomic_store_n(&s->create_only_state, state, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&s->probe_mu);
}

/* ---------------------------------------------------------------- copy */

/* CopyObject: the server copies, the bytes never pass through us. A copy
 * can fail after its 200 status line (the error in the body), as S3
 * documents for long copies. */
static ls_status s3_copy(ls_objstore_t *os, const char *src, const char *dst)
{
    s3_store_t *s = (s3_store_t *)os;
    ls_status st = check_key(s, src, 0);
    if (st == LS_OK) st = check_key(s, dst, 1);
    if (st != LS_OK) return st;
    char *from = ls_asprintf("/%s/%s%s", s->c.bucket, s->c.prefix, src);
    ls_buf_t source, out;
    ls_buf_init(&source);
    ls_buf_init(&out);
    ls_sigv4_uri_encode(&source, from, strlen(from), 0);
    ls_buf_append_u8(&source, 0);
    ls_free(from);
    s3_req_t r = {.method = "PUT", .key = dst, .out = &out, .out_max = S3_XML_MAX};
    r.extra[r.nextra++] = (ls_sigv4_hdr_t){"x-amz-copy-source", (const char *)source.data};
    st = s3_request(s, &r);
    if (st == LS_OK && r.status != 200) {
        st = s3_fail(s, &r);
    } else if (st == LS_OK && out.len && memmem(out.data, out.len, "<Error>", 7)) {
        char code[64];
        ls_s3_xml_first((const char *)out.data, out.len, "Code", code, sizeof code);
        s3_set_err(s, "copy %s to %s: %s", src, dst, code);
        st = !strcmp(code, "NoSuchKey") ? LS_ENOTFOUND : LS_EIO;
    }
    s3_req_done(&r);
    ls_buf_free(&source);
    ls_buf_free(&out);
    return st;
}

/* ---------------------------------------------------------------- delete */

static ls_status s3_del(ls_objstore_t *os, const char *key)
{
    s3_store_t *s = (s3_store_t *)os;
    ls_status st = check_key(s, key, 0);
    if (st != LS_OK) return st;
    s3_req_t r = {.method = "DELETE", .key = key};
    st = s3_request(s, &r);
    if (st == LS_OK && r.status != 204 && r.status != 200 && r.status != 404) st = s3_fail(s, &r);
    s3_req_done(&r);
    return st;
}

static ls_status s3_del_many(ls_objstore_t *os, const char *const *keys, size_t n)
{
    s3_store_t *s = (s3_store_t *)os;
    for (size_t i = 0; i < n; i++)
        if (check_key(s, keys[i], 0) != LS_OK) return LS_EINVAL;
    ls_status st = LS_OK;
    for (size_t at = 0; at < n && st == LS_OK; at += S3_DELETE_BATCH) {
        size_t m = n - at < S3_DELETE_BATCH ? n - at : S3_DELETE_BATCH;
        ls_buf_t body, resp;
        ls_buf_init(&body);
        ls_buf_init(&resp);
        ls_buf_printf(&body, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>"
                             "<Delete><Quiet>true</Quiet>");
        for (size_t i = 0; i < m; i++) { /* other writers' keys may need XML escaping */
            ls_buf_printf(&body, "<Object><Key>%s", s->c.prefix);
            for (const char *c = keys[at + i]; *c; c++) {
                const char *ent = *c == '&'   ? "&amp;"
                                  : *c == '<' ? "&lt;"
                                  : *c == '>' ? "&gt;"
                                              : NULL;
                if (ent)
                    ls_buf_printf(&body, "%s", ent);
                else
                    ls_buf_append_u8(&body, (uint8_t)*c);
            }
            ls_buf_printf(&body, "</Key></Object>");
        }
        ls_buf_printf(&body, "</Delete>");
        struct iovec bv = {body.data, body.len};
        char md5[25];
        ls_md5_iov(&bv, 1, NULL, md5);
        s3_req_t r = {.method = "POST",
                      .key = NULL,
                      .query = "delete=",
                      .iov = &bv,
                      .iovcnt = 1,
                      .body_len = body.len,
                      .out = &resp,
                      .out_max = S3_XML_MAX};
        r.extra[r.nextra++] = (ls_sigv4_hdr_t){"content-md5", md5};
        r.extra[r.nextra++] = (ls_sigv4_hdr_t){"content-type", "application/xml"};
        st = s3_request(s, &r);
        if (st == LS_OK && (r.status == 501 || r.status == 405)) {
            /* no DeleteObjects here: one by one */
            for (size_t i = 0; i < m && st == LS_OK; i++)
                st = s3_del(os, keys[at + i]);
        } else if (st == LS_OK && r.status != 200) {
            st = s3_fail(s, &r);
        } else if (st == LS_OK) {
            size_t pos = 0, vs, vl;
            while (ls_s3_xml_next((const char *)resp.data, resp.len, &pos, "Error", &vs, &vl)) {
                char code[64], k[LS_OBJSTORE_KEY_MAX + 1];
                ls_s3_xml_first((const char *)resp.data + vs, vl, "Code", code, sizeof code);
                ls_s3_xml_first((const char *)resp.data + vs, vl, "Key", k, sizeof k);
                if (strcmp(code, "NoSuchKey") == 0) continue;
                s3_set_err(s, "delete %s: %s", k, code);
                st = LS_EIO;
                break;
            }
        }
        s3_req_done(&r);
        ls_buf_free(&body);
        ls_buf_free(&resp);
    }
    return st;
}

/* ---------------------------------------------------------------- list */

static int info_cmp(const void *a, const void *b)
{
    return strcmp(((const ls_objinfo_t *)a)->key, ((const ls_objinfo_t *)b)->key);
}

static ls_status s3_list(ls_objstore_t *os, const char *prefix, ls_objinfo_t **out, size_t *nout)
{
    s3_store_t *s = (s3_store_t *)os;
    *out = NULL;
    *nout = 0;
    if (!ls_objstore_prefix_valid(prefix)) {
        s3_set_err(s, "invalid list prefix '%s'", prefix ? prefix : "(null)");
        return LS_EINVAL;
    }
    char *full = ls_asprintf("%s%s", s->c.prefix, prefix);
    size_t plen = strlen(s->c.prefix);
    ls_objinfo_t *v = NULL;
    size_t n = 0, cap = 0;
    char *token = NULL;
    ls_status st = LS_OK;
    ls_buf_t xml, q;
    ls_buf_init(&xml);
    ls_buf_init(&q);
    for (int page = 0;; page++) {
        q.len = 0;
        if (token) {
            ls_buf_printf(&q, "continuation-token=");
            ls_sigv4_uri_encode(&q, token, strlen(token), 1);
            ls_buf_printf(&q, "&");
        }
        ls_buf_printf(&q, "list-type=2&max-keys=%d&prefix=", s->c.list_page);
        ls_sigv4_uri_encode(&q, full, strlen(full), 1);
        ls_buf_append_u8(&q, 0);
        s3_req_t r = {.method = "GET",
                      .key = NULL,
                      .query = (const char *)q.data,
                      .out = &xml,
                      .out_max = S3_XML_MAX};
        st = s3_request(s, &r);
        if (st == LS_OK && r.status != 200) st = s3_fail(s, &r);
        s3_req_done(&r);
        if (st != LS_OK) break;
        const char *x = (const char *)xml.data;
        size_t xl = xml.len, pos = 0, vs, vl;
        while (ls_s3_xml_next(x, xl, &pos, "Contents", &vs, &vl)) {
            char k[LS_OBJSTORE_KEY_MAX + 64], sz[32], lm[64];
            ls_s3_xml_first(x + vs, vl, "Key", k, sizeof k);
            ls_s3_xml_first(x + vs, vl, "Size", sz, sizeof sz);
            ls_s3_xml_first(x + vs, vl, "LastModified", lm, sizeof lm);
            if (strncmp(k, s->c.prefix, plen) != 0 || !ls_objstore_key_readable(k + plen))
                continue; /* not one of ours (foreign or unrepresentable key) */
            if (n == cap) {
                cap = cap ? cap * 2 : 64;
                v = ls_realloc(v, cap * sizeof *v);
            }
            v[n].key = ls_strdup(k + plen);
            v[n].size = strtoull(sz, NULL, 10);
            v[n].mtime_ms = ls_s3_iso8601_ms(lm);
            n++;
        }
        char trunc[16];
        ls_s3_xml_first(x, xl, "IsTruncated", trunc, sizeof trunc);
        if (strcmp(trunc, "true") != 0) break;
        char next[1024];
        ls_s3_xml_first(x, xl, "NextContinuationToken", next, sizeof next);
        if (!next[0] || page > 1000000) {
            s3_set_err(s, "list %s: truncated listing without a continuation token", prefix);
            st = LS_EIO;
            break;
        }
        ls_free(token);
        token = ls_strdup(next);
    }
    ls_free(token);
    ls_free(full);
    ls_buf_free(&xml);
    ls_buf_free(&q);
    if (st != LS_OK) {
        ls_objinfo_free(v, n);
        return st;
    }
    if (n > 1) qsort(v, n, sizeof *v, info_cmp); /* S3 sorts already; other servers may not */
    *out = v;
    *nout = n;
    return LS_OK;
}

/* ListMultipartUploads under the store prefix + prefix (one page of up to
 * 1000 is enough to tell "none" from "some"). */
ls_status ls_objstore_s3_client_props(ls_objstore_t *os, char **endpoint, char **region,
                                      int *path_style)
{
    if (!os || os->ops->put != s3_put) return LS_EINVAL;
    const s3_store_t *s = (const s3_store_t *)os;
    /* virtual-hosted requests go to <bucket>.<host>: the endpoint is <host> */
    const char *sep = strstr(s->c.scheme_host, "://");
    size_t skip = s->c.path_style ? 0 : strlen(s->c.bucket) + 1;
    *endpoint = ls_asprintf("%.*s://%s", (int)(sep - s->c.scheme_host), s->c.scheme_host,
                            s->c.host_hdr + skip);
    *region = ls_strdup(s->c.region);
    *path_style = s->c.path_style;
    return LS_OK;
}

ls_status ls_objstore_s3_count_uploads(ls_objstore_t *os, const char *prefix, size_t *count)
{
    *count = 0;
    if (!os || os->ops->put != s3_put) return LS_EINVAL;
    s3_store_t *s = (s3_store_t *)os;
    char *full = ls_asprintf("%s%s", s->c.prefix, prefix ? prefix : "");
    ls_buf_t q, xml;
    ls_buf_init(&q);
    ls_buf_init(&xml);
    ls_buf_printf(&q, "prefix=");
    ls_sigv4_uri_encode(&q, full, strlen(full), 1);
    ls_buf_printf(&q, "&uploads=");
    ls_buf_append_u8(&q, 0);
    s3_req_t r = {.method = "GET",
                  .key = NULL,
                  .query = (const char *)q.data,
                  .out = &xml,
                  .out_max = S3_XML_MAX};
    ls_status st = s3_request(s, &r);
    if (st == LS_OK && r.status != 200) st = s3_fail(s, &r);
    if (st == LS_OK) {
        size_t pos = 0, vs, vl;
        while (ls_s3_xml_next((const char *)xml.data, xml.len, &pos, "Upload", &vs, &vl))
            (*count)++;
    }
    s3_req_done(&r);
    ls_buf_free(&q);
    ls_buf_free(&xml);
    ls_free(full);
    return st;
}

/* ---------------------------------------------------------------- lifecycle */

static void s3_close(ls_objstore_t *os)
{
    s3_store_t *s = (s3_store_t *)os;
    ls_curl_pool_destroy(&s->pool);
    /* what this process asked of the store: the request bill (per kind,
     * as S3 prices them) that tests/soak/cluster_soak.py sums per GB */
    char kinds[256];
    size_t n = 0;
    for (int k = 0; k < REQ_KINDS; k++)
        n += (size_t)snprintf(kinds + n, sizeof kinds - n, "%s%s %" PRIu64, k ? ", " : "",
                              req_kind_names[k], s->by_kind[k]);
    LS_INFO("objstore", "s3 requests of this run: %" PRIu64 " (%s), %" PRIu64 " of them retries",
            s->nrequests, kinds, s->nretries);
    ls_s3_config_free(&s->c);
    pthread_mutex_destroy(&s->probe_mu);
    ls_free(s);
}

static const ls_objstore_ops_t s3_ops = {
    .name = "s3",
    .put = s3_put,
    .get = s3_get,
    .head = s3_head,
    .del = s3_del,
    .list = s3_list,
    .close = s3_close,
    .del_many = s3_del_many,
    .copy = s3_copy,
};

/* ---------------------------------------------------------------- open */

ls_objstore_t *ls_objstore_s3_open(const char *url, const ls_objstore_opts_t *o, char *err,
                                   size_t errlen)
{
    s3_store_t *s = LS_NEW(s3_store_t);
    if (ls_s3_config_resolve(url, o, &s->c, err, errlen) != 0) {
        ls_free(s);
        return NULL;
    }
    s->base.ops = &s3_ops;
    s->create_only_state = -1;
    pthread_mutex_init(&s->probe_mu, NULL);
    ls_curl_pool_init(&s->pool, s->c.max_conns, s->c.max_conns);
    s->rng = ((uint64_t)getpid() << 32) ^ (uint64_t)ls_clock_mono_us() ^ (uint64_t)(uintptr_t)s;
    if (!s->rng) s->rng = 1;
    LS_INFO("objstore", "s3: bucket %s prefix '%s' at %s (%s, region %s, create-only %s)",
            s->c.bucket, s->c.prefix, s->c.scheme_host,
            s->c.path_style ? "path style" : "virtual-hosted", s->c.region,
            s->c.create_only_mode == LS_S3_TRI_AUTO ? "auto"
            : s->c.create_only_mode                 ? "true"
                                                    : "false");
    return &s->base;
}
