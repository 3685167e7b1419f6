/* ls_meta etcd backend: etcd v3 through its JSON gateway (POST /v3/...), with
 * libcurl. Revisions, leases and watches are etcd's own, so several brokers
 * sharing one etcd see one store.
 *
 * Wire facts (etcd 3.4 gateway): keys and values are base64; int64 fields are
 * JSON strings; zero/false fields are omitted (a failed txn has no
 * "succeeded", a PUT event no "type", an empty value no "value"); errors come
 * as {"error","message","code"} with the gRPC code.
 *
 * Security (URL query, docs/OPERATIONS.md): `tls=true` (implied by any of
 * the files) speaks https to every endpoint with certificate and host checks
 * on, `cacert=` the CA bundle that signed etcd's certificate (else the
 * system's), `cert=`/`key=` a client certificate for etcd's
 * --client-cert-auth; `user=` with `password-file=` authenticates against
 * etcd's auth (POST /v3/auth/authenticate) and sends the token as the
 * Authorization header of every call and watch. The password never enters
 * the URL or a log line. The token is taken at open and again whenever etcd
 * answers a call "invalid auth token" (its TTL ran out or etcd restarted);
 * that call is then sent once more. A watch stream carries the token it was
 * opened with; a stream etcd refuses is reopened with the current one.
 *
 * Key mapping: the URL's prefix P ("name/") is prepended to every key and
 * range bound and stripped from every key returned. An unbounded range end
 * becomes prefix_end(P) (or etcd's "\0" = "to the end" when P is empty).
 *
 * State and threads:
 *  - eps[0..neps): endpoints "host:port"; cur is the one that answered last.
 *    Unary calls take an easy handle from the pool (base/curl_pool.h: so
 *    connections are reused), POST, and put it back; mu guards cur only,
 *    never a request in flight. Any thread may call any op. Transport
 *    errors are classified by ls_curl_classify (not sent / maybe sent).
 *  - Failover: an endpoint that refuses the connection (the request was not
 *    sent) is skipped for every call. A call whose outcome is unknown (timeout
 *    or a broken connection after sending) is retried elsewhere only when it is
 *    a read; a write then reports LS_EIO ("outcome unknown": maybe applied,
 *    the caller reads back, as for any backend). LS_EAGAIN from a write means
 *    it was certainly not applied (no endpoint took the request).
 *  - Each watch owns one thread and one streaming POST /v3/watch (its own
 *    easy + multi handle, woken by curl_multi_wakeup on cancel). The thread
 *    groups each response's events by revision and calls the callback once per
 *    revision, in order; next_rev is the revision to resume from after a
 *    reconnect (last delivered + 1, advanced by progress notifications). A
 *    compaction past next_rev ends the watch with cb(arg, NULL, 0).
 *    Cancel from another thread joins the thread; cancel from the callback
 *    marks the watch and the thread frees it on its way out. */
#include "meta/meta_etcd.h"
#include "meta/meta_backend.h"

#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/alloc.h"
#include "base/base64.h"
#include "base/check.h"
#include "base/clock.h"
#include "base/curl_pool.h"
#include "base/diag.h"
#include "base/thread.h"

#define ETCD_POOL_MAX 16
#define ETCD_TIMEOUT_MS 5000L
#define ETCD_CONNECT_TIMEOUT_MS 1000L
#define ETCD_WATCH_LINE_MAX (64u << 20)
#define ETCD_WATCH_BACKOFF_MAX_MS 2000

/* gRPC status codes the gateway reports */
enum {
    GRPC_INVALID_ARGUMENT = 3,
    GRPC_DEADLINE = 4,
    GRPC_NOT_FOUND = 5,
    GRPC_EXHAUSTED = 8,
    GRPC_OUT_OF_RANGE = 11,
    GRPC_UNAVAILABLE = 14,
    GRPC_UNAUTHENTICATED = 16
};

typedef struct etcd_meta {
    ls_meta_t base;
    char **eps;
    size_t neps;
    uint8_t *pfx; /* "name/" or empty */
    size_t plen;
    pthread_mutex_t mu;
    ls_curl_pool_t pool;
    size_t cur;
    /* security (file comment) */
    bool tls;
    char *cacert, *cert, *key; /* NULL: not set */
    char *user, *password;     /* NULL: etcd auth off */
    char *token;               /* under mu; NULL before the first authenticate */
    uint64_t token_gen;        /* under mu: bumped by every authenticate */
} etcd_meta_t;

/* ---- key mapping (base/base64.h) ---- */

/* prefix + key as base64; an empty result becomes "\0" (etcd refuses empty keys). */
static char *etcd_key(const etcd_meta_t *em, const void *key, size_t klen)
{
    size_t n = em->plen + klen;
    uint8_t stackbuf[512];
    uint8_t *b = n + 1 <= sizeof stackbuf ? stackbuf : ls_malloc(n + 1);
    if (em->plen) memcpy(b, em->pfx, em->plen);
    if (klen) memcpy(b + em->plen, key, klen);
    if (n == 0) b[n++] = 0;
    char *s = ls_base64_encode(b, n);
    if (b != stackbuf) ls_free(b);
    return s;
}

/* Range end for [.., end): prefix + end, or when end is unbounded the end of
 * the prefix ("\0" = no end, when there is no prefix). */
static char *etcd_end(const etcd_meta_t *em, const void *end, size_t elen)
{
    if (end && elen) return etcd_key(em, end, elen);
    uint8_t stackbuf[512];
    uint8_t *b = em->plen <= sizeof stackbuf ? stackbuf : ls_malloc(em->plen);
    size_t n = ls_meta_prefix_end(em->pfx, em->plen, b);
    char *s = n ? ls_base64_encode(b, n) : ls_strdup("AA==");
    if (b != stackbuf) ls_free(b);
    return s;
}

static void jset_str(json_t *o, const char *k, char *owned)
{
    json_object_set_new(o, k, json_string(owned));
    ls_free(owned);
}

static void jset_i64(json_t *o, const char *k, int64_t v)
{
    char s[24];
    snprintf(s, sizeof s, "%" PRId64, v);
    json_object_set_new(o, k, json_string(s));
}

/* int64 field (a JSON string, or a number, or absent = 0). */
static int64_t jget_i64(const json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    if (json_is_integer(v)) return (int64_t)json_integer_value(v);
    if (json_is_string(v)) return strtoll(json_string_value(v), NULL, 10);
    return 0;
}

static int64_t header_rev(const json_t *resp)
{
    return jget_i64(json_object_get(resp, "header"), "revision");
}

/* Fills kv from an etcd KeyValue; the prefix is stripped. -1 if malformed or
 * outside the prefix. */
static int etcd_kv(const etcd_meta_t *em, const json_t *j, ls_kv_t *kv)
{
    const char *k = json_string_value(json_object_get(j, "key"));
    const char *v = json_string_value(json_object_get(j, "value"));
    uint8_t *kb, *vb = NULL;
    size_t kl, vl = 0;
    if (!k || ls_base64_decode(k, &kb, &kl) != 0) return -1;
    if (kl < em->plen || memcmp(kb, em->pfx, em->plen) != 0 ||
        (v && ls_base64_decode(v, &vb, &vl) != 0)) {
        ls_free(kb);
        return -1;
    }
    memset(kv, 0, sizeof *kv);
    kv->klen = kl - em->plen;
    memmove(kb, kb + em->plen, kv->klen + 1); /* keeps the NUL */
    kv->key = kb;
    if (!vb) vb = ls_calloc(1, 1);
    kv->val = vb;
    kv->vlen = vl;
    kv->create_rev = jget_i64(j, "create_revision");
    kv->mod_rev = jget_i64(j, "mod_revision");
    kv->lease = jget_i64(j, "lease");
    return 0;
}

/* ---- unary calls ---- */

typedef struct etcd_buf {
    char *p;
    size_t n, cap;
} etcd_buf_t;

static size_t etcd_on_write(char *data, size_t size, size_t nmemb, void *arg)
{
    etcd_buf_t *b = arg;
    size_t n = size * nmemb;
    if (b->n + n + 1 > b->cap) {
        b->cap = (b->n + n + 1) * 2;
        b->p = ls_realloc(b->p, b->cap);
    }
    memcpy(b->p + b->n, data, n);
    b->n += n;
    b->p[b->n] = 0;
    return n;
}

static size_t cur_ep(etcd_meta_t *em)
{
    pthread_mutex_lock(&em->mu);
    size_t i = em->cur;
    pthread_mutex_unlock(&em->mu);
    return i;
}

static void set_cur_ep(etcd_meta_t *em, size_t i)
{
    pthread_mutex_lock(&em->mu);
    em->cur = i;
    pthread_mutex_unlock(&em->mu);
}

static ls_status grpc_status(int code)
{
    switch (code) {
    case GRPC_INVALID_ARGUMENT: return LS_EINVAL;
    case GRPC_NOT_FOUND: return LS_ENOTFOUND;
    case GRPC_OUT_OF_RANGE: return LS_ERANGE;
    case GRPC_EXHAUSTED: return LS_ELIMIT;
    case GRPC_DEADLINE:
    case GRPC_UNAVAILABLE: return LS_EAGAIN;
    default: return LS_EIO;
    }
}

static void curl_common(const etcd_meta_t *em, CURL *c, const char *url, struct curl_slist *hl)
{
    curl_easy_setopt(c, CURLOPT_URL, url);
    if (em->tls) {
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
        if (em->cacert) curl_easy_setopt(c, CURLOPT_CAINFO, em->cacert);
        if (em->cert) curl_easy_setopt(c, CURLOPT_SSLCERT, em->cert);
        if (em->key) curl_easy_setopt(c, CURLOPT_SSLKEY, em->key);
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, ETCD_CONNECT_TIMEOUT_MS);
    curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(c, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(c, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "lakestream");
}

/* The request headers: JSON, and the auth token when there is one; *gen is
 * the token's generation (for etcd_reauth). */
static struct curl_slist *etcd_headers(etcd_meta_t *em, uint64_t *gen)
{
    struct curl_slist *hl = curl_slist_append(NULL, "Content-Type: application/json");
    hl = curl_slist_append(hl, "Expect:");
    pthread_mutex_lock(&em->mu);
    if (em->token) {
        char h[1024];
        snprintf(h, sizeof h, "Authorization: %s", em->token);
        hl = curl_slist_append(hl, h);
    }
    if (gen) *gen = em->token_gen;
    pthread_mutex_unlock(&em->mu);
    return hl;
}

/* etcd's answers to a call whose token is missing, expired or stale. */
static bool etcd_auth_refused(int code, const char *why)
{
    return code == GRPC_UNAUTHENTICATED || strstr(why, "auth token") ||
           strstr(why, "revision of auth store is old") || strstr(why, "user name is empty");
}

/* POSTs body to path once. read_only: the call changes nothing, so an
 * unknown outcome may be retried on another endpoint. On LS_OK *resp is the
 * parsed reply; otherwise ls_meta_errbuf() names the endpoint and the cause,
 * and *unauth says etcd refused the token (etcd_auth_refused). */
static ls_status etcd_post(etcd_meta_t *em, const char *path, const char *body, int read_only,
                           json_t **resp, bool *unauth, uint64_t *gen)
{
    struct curl_slist *hl = etcd_headers(em, gen);
    *unauth = false;
    size_t start = cur_ep(em);
    ls_status st = LS_EAGAIN;
    int code = 0;
    char why[200] = "";
    const char *ep = em->eps[start];
    *resp = NULL;
    CURL *c = ls_curl_pool_get(&em->pool);
    for (size_t t = 0; t < em->neps; t++) {
        size_t i = (start + t) % em->neps;
        ep = em->eps[i];
        char url[512];
        snprintf(url, sizeof url, "%s://%s%s", em->tls ? "https" : "http", ep, path);
        etcd_buf_t b = {0};
        curl_common(em, c, url, hl);
        curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, ETCD_TIMEOUT_MS);
        curl_easy_setopt(c, CURLOPT_POST, 1L);
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, etcd_on_write);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
        CURLcode rc = curl_easy_perform(c);
        long http = 0;
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &http);
        if (rc != CURLE_OK) {
            ls_free(b.p);
            ls_curl_failure why_failed = ls_curl_classify(rc);
            if (why_failed == LS_CURL_NOT_SENT || (read_only && why_failed == LS_CURL_MAYBE_SENT)) {
                snprintf(why, sizeof why, "%s", curl_easy_strerror(rc));
                st = LS_EAGAIN;
                continue; /* next endpoint */
            }
            snprintf(ls_meta_errbuf(), LS_META_ERRMSG_CAP, "etcd %s%s: %s%s", ep, path,
                     curl_easy_strerror(rc),
                     why_failed == LS_CURL_MAYBE_SENT ? " (outcome unknown)" : "");
            st = LS_EIO; /* maybe applied: the caller reads back */
            goto out;
        }
        json_error_t jerr;
        json_t *j = b.p ? json_loadb(b.p, b.n, 0, &jerr) : NULL;
        if (http == 200 && json_is_object(j)) {
            ls_free(b.p);
            if (i != start) set_cur_ep(em, i);
            *resp = j;
            st = LS_OK;
            goto out;
        }
        code = (int)jget_i64(j, "code");
        const char *msg = json_string_value(json_object_get(j, "message"));
        snprintf(why, sizeof why, "HTTP %ld: %.150s", http, msg ? msg : b.p ? b.p : "(no body)");
        ls_free(b.p);
        json_decref(j);
        st = code ? grpc_status(code) : LS_EIO;
        if (em->user && etcd_auth_refused(code, why)) *unauth = true;
        /* no leader / shutting down: another member may serve a read */
        if (code == GRPC_UNAVAILABLE && read_only) continue;
        /* a write that timed out inside etcd may still commit */
        int unknown = !read_only && (code == GRPC_DEADLINE || strstr(why, "timed out"));
        if (unknown) st = LS_EIO;
        snprintf(ls_meta_errbuf(), LS_META_ERRMSG_CAP, "etcd %s%s: %s%s", ep, path, why,
                 unknown ? " (outcome unknown)" : "");
        goto out;
    }
    snprintf(ls_meta_errbuf(), LS_META_ERRMSG_CAP,
             "etcd unreachable (%zu endpoint%s, last %s%s): %s", em->neps, em->neps > 1 ? "s" : "",
             ep, path, why);
    st = LS_EAGAIN;
out:
    ls_curl_pool_put(&em->pool, c);
    curl_slist_free_all(hl);
    if (st != LS_OK && st != LS_ENOTFOUND) LS_DEBUG("meta", "%s", ls_meta_errbuf());
    return st;
}

/* A new auth token from user/password, unless another thread already took
 * one since generation seen. */
static ls_status etcd_reauth(etcd_meta_t *em, uint64_t seen)
{
    pthread_mutex_lock(&em->mu);
    bool fresh = em->token_gen != seen;
    pthread_mutex_unlock(&em->mu);
    if (fresh) return LS_OK;
    json_t *req = json_object();
    json_object_set_new(req, "name", json_string(em->user));
    json_object_set_new(req, "password", json_string(em->password));
    char *body = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    json_t *resp = NULL;
    bool unauth;
    pthread_mutex_lock(&em->mu);
    char *old = em->token; /* authenticate goes without a token */
    em->token = NULL;
    pthread_mutex_unlock(&em->mu);
    ls_status st = etcd_post(em, "/v3/auth/authenticate", body, 1, &resp, &unauth, NULL);
    memset(body, 0, strlen(body)); /* it held the password */
    free(body);
    const char *tok = json_string_value(json_object_get(resp, "token"));
    pthread_mutex_lock(&em->mu);
    if (em->token) { /* another thread's authenticate won meanwhile */
        ls_free(old);
    } else if (st == LS_OK && tok) {
        em->token = ls_strdup(tok);
        em->token_gen++;
        ls_free(old);
    } else {
        em->token = old;
    }
    pthread_mutex_unlock(&em->mu);
    if (st == LS_OK && !tok) {
        snprintf(ls_meta_errbuf(), LS_META_ERRMSG_CAP,
                 "etcd: authenticate as '%s' returned no token", em->user);
        st = LS_EIO;
    } else if (st != LS_OK) {
        /* the message names the endpoint and etcd's reason, never the password */
        LS_WARN_RL("meta", "etcd: authenticating as '%s' failed: %s", em->user, ls_meta_errbuf());
    }
    json_decref(resp);
    return st;
}

/* POSTs req (consumed) to path (etcd_post), authenticating again once when
 * etcd refuses the token. */
static ls_status etcd_call(etcd_meta_t *em, const char *path, json_t *req, int read_only,
                           json_t **resp)
{
    char *body = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    bool unauth;
    uint64_t gen;
    ls_status st = etcd_post(em, path, body, read_only, resp, &unauth, &gen);
    if (unauth && etcd_reauth(em, gen) == LS_OK)
        st = etcd_post(em, path, body, read_only, resp, &unauth, NULL);
    free(body);
    return st;
}

static ls_status etcd_bad_reply(etcd_meta_t *em, const char *what)
{
    snprintf(ls_meta_errbuf(), LS_META_ERRMSG_CAP, "etcd: malformed %s reply", what);
    LS_ERROR("meta", "%s", ls_meta_errbuf());
    return LS_EIO;
}

/* ---- ops ---- */

static ls_status etcd_range(etcd_meta_t *em, json_t *req, ls_kvlist_t *out)
{
    json_t *r;
    memset(out, 0, sizeof *out);
    ls_status st = etcd_call(em, "/v3/kv/range", req, 1, &r);
    if (st != LS_OK) return st;
    json_t *kvs = json_object_get(r, "kvs");
    size_t n = json_array_size(kvs);
    out->v = n ? LS_NEWN(ls_kv_t, n) : NULL;
    for (size_t i = 0; i < n; i++) {
        if (etcd_kv(em, json_array_get(kvs, i), &out->v[out->n]) != 0) {
            ls_kvlist_free(out);
            json_decref(r);
            return etcd_bad_reply(em, "range");
        }
        out->n++;
    }
    out->more = json_is_true(json_object_get(r, "more"));
    out->revision = header_rev(r);
    json_decref(r);
    return LS_OK;
}

static ls_status etcd_get(ls_meta_t *m, const void *key, size_t klen, ls_kv_t *out)
{
    etcd_meta_t *em = (etcd_meta_t *)m;
    if (!key || !klen) return LS_EINVAL;
    json_t *req = json_object();
    jset_str(req, "key", etcd_key(em, key, klen));
    ls_kvlist_t l;
    ls_status st = etcd_range(em, req, &l);
    if (st != LS_OK) return st;
    if (l.n == 0) {
        ls_kvlist_free(&l);
        return LS_ENOTFOUND;
    }
    *out = l.v[0];
    for (size_t i = 1; i < l.n; i++)
        ls_kv_free(&l.v[i]);
    ls_free(l.v);
    return LS_OK;
}

static ls_status etcd_scan(ls_meta_t *m, const void *start, size_t slen, const void *end,
                           size_t elen, size_t limit, int reverse, ls_kvlist_t *out)
{
    etcd_meta_t *em = (etcd_meta_t *)m;
    if (slen && !start) return LS_EINVAL;
    json_t *req = json_object();
    jset_str(req, "key", etcd_key(em, start, slen));
    jset_str(req, "range_end", etcd_end(em, end, elen));
    if (limit) jset_i64(req, "limit", (int64_t)limit);
    if (reverse) {
        json_object_set_new(req, "sort_order", json_string("DESCEND"));
        json_object_set_new(req, "sort_target", json_string("KEY"));
    }
    return etcd_range(em, req, out);
}

static ls_status etcd_txn(ls_meta_t *m, const ls_meta_cmp_t *cmps, size_t ncmp,
                          const ls_meta_op_t *ops, size_t nops, int64_t *rev_out)
{
    etcd_meta_t *em = (etcd_meta_t *)m;
    ls_status st = ls_meta_txn_validate(m, cmps, ncmp, ops, nops);
    if (st != LS_OK) return st;
    json_t *req = json_object(), *cmp = json_array(), *succ = json_array();
    int writes = 0;
    for (size_t i = 0; i < ncmp; i++) {
        json_t *c = json_object();
        jset_str(c, "key", etcd_key(em, cmps[i].key, cmps[i].klen));
        json_object_set_new(c, "result", json_string("EQUAL"));
        if (cmps[i].kind == LS_META_CMP_VALUE) {
            json_object_set_new(c, "target", json_string("VALUE"));
            jset_str(c, "value", ls_base64_encode(cmps[i].val ? cmps[i].val : "", cmps[i].vlen));
        } else if (cmps[i].rev == 0) {
            /* absent: etcd's idiom is create_revision == 0 */
            json_object_set_new(c, "target", json_string("CREATE"));
            jset_i64(c, "create_revision", 0);
        } else {
            json_object_set_new(c, "target", json_string("MOD"));
            jset_i64(c, "mod_revision", cmps[i].rev);
        }
        json_array_append_new(cmp, c);
    }
    for (size_t i = 0; i < nops; i++) {
        const ls_meta_op_t *op = &ops[i];
        json_t *o = json_object(), *r = json_object();
        if (op->kind == LS_META_OP_PUT) {
            jset_str(r, "key", etcd_key(em, op->key, op->klen));
            jset_str(r, "value", ls_base64_encode(op->val ? op->val : "", op->vlen));
            if (op->lease) jset_i64(r, "lease", op->lease);
            json_object_set_new(o, "request_put", r);
        } else if (op->kind == LS_META_OP_DEL) {
            jset_str(r, "key", etcd_key(em, op->key, op->klen));
            json_object_set_new(o, "request_delete_range", r);
        } else {
            jset_str(r, "key", etcd_key(em, op->key, op->klen));
            jset_str(r, "range_end", etcd_end(em, op->end, op->elen));
            json_object_set_new(o, "request_delete_range", r);
        }
        writes = 1;
        json_array_append_new(succ, o);
    }
    json_object_set_new(req, "compare", cmp);
    json_object_set_new(req, "success", succ);
    json_t *resp;
    st = etcd_call(em, "/v3/kv/txn", req, !writes, &resp);
    if (st == LS_ENOTFOUND)
        snprintf(ls_meta_errbuf(), LS_META_ERRMSG_CAP, "txn names an unknown or expired lease");
    if (st != LS_OK) return st;
    int ok = json_is_true(json_object_get(resp, "succeeded"));
    if (rev_out) *rev_out = header_rev(resp);
    json_decref(resp);
    if (!ok) {
        snprintf(ls_meta_errbuf(), LS_META_ERRMSG_CAP, "txn compare failed");
        return LS_ECONFLICT;
    }
    return LS_OK;
}

static ls_status etcd_lease_grant(ls_meta_t *m, int64_t ttl_ms, int64_t *lease_out)
{
    etcd_meta_t *em = (etcd_meta_t *)m;
    if (ttl_ms <= 0 || !lease_out) return LS_EINVAL;
    json_t *req = json_object(), *resp;
    jset_i64(req, "TTL", (ttl_ms + 999) / 1000); /* etcd counts seconds */
    ls_status st = etcd_call(em, "/v3/lease/grant", req, 0, &resp);
    if (st != LS_OK) return st;
    *lease_out = jget_i64(resp, "ID");
    json_decref(resp);
    return *lease_out > 0 ? LS_OK : etcd_bad_reply(em, "lease grant");
}

static ls_status etcd_lease_keepalive(ls_meta_t *m, int64_t lease)
{
    etcd_meta_t *em = (etcd_meta_t *)m;
    json_t *req = json_object(), *resp;
    jset_i64(req, "ID", lease);
    ls_status st = etcd_call(em, "/v3/lease/keepalive", req, 1, &resp);
    if (st != LS_OK) return st;
    /* one streamed message: {"result":{...,"TTL":"n"}}; no TTL = lease gone */
    json_t *res = json_object_get(resp, "result");
    if (!res) {
        json_t *e = json_object_get(resp, "error");
        int code = (int)jget_i64(e, "grpc_code");
        if (!code) code = (int)jget_i64(e, "code");
        snprintf(ls_meta_errbuf(), LS_META_ERRMSG_CAP, "etcd lease keepalive %" PRId64 ": %.150s",
                 lease,
                 e && json_string_value(json_object_get(e, "message"))
                     ? json_string_value(json_object_get(e, "message"))
                     : "no result");
        json_decref(resp);
        return code ? grpc_status(code) : LS_EIO;
    }
    int64_t ttl = jget_i64(res, "TTL");
    json_decref(resp);
    if (ttl <= 0) {
        snprintf(ls_meta_errbuf(), LS_META_ERRMSG_CAP, "lease %" PRId64 " not found", lease);
        return LS_ENOTFOUND;
    }
    return LS_OK;
}

static ls_status etcd_lease_revoke(ls_meta_t *m, int64_t lease)
{
    etcd_meta_t *em = (etcd_meta_t *)m;
    json_t *req = json_object(), *resp;
    jset_i64(req, "ID", lease);
    ls_status st = etcd_call(em, "/v3/lease/revoke", req, 0, &resp);
    if (st != LS_OK) return st;
    json_decref(resp);
    return LS_OK;
}

ls_status ls_meta_etcd_compact(ls_meta_t *m, int64_t rev)
{
    etcd_meta_t *em = (etcd_meta_t *)m;
    json_t *req = json_object(), *resp;
    jset_i64(req, "revision", rev);
    json_object_set_new(req, "physical", json_true());
    ls_status st = etcd_call(em, "/v3/kv/compaction", req, 0, &resp);
    if (st == LS_OK) json_decref(resp);
    return st;
}

/* ---- watch ---- */

struct ls_meta_watch {
    etcd_meta_t *em;
    char *key64, *end64; /* the etcd range watched, base64 */
    ls_meta_watch_cb cb;
    void *arg;
    int64_t next_rev; /* resume point: newest delivered (or known quiet) + 1 */
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int cancelled; /* guarded by mu */
    int self_free; /* cancelled from its own callback: the thread frees */
    int finished;  /* compacted signal given: no more streaming */
    CURLM *multi;
    etcd_buf_t line; /* partial stream message */
    ls_status line_err;
};

static int watch_cancelled(ls_meta_watch_t *w)
{
    pthread_mutex_lock(&w->mu);
    int c = w->cancelled;
    pthread_mutex_unlock(&w->mu);
    return c;
}

/* Delivers ev[0..n) (all of one revision) unless the watch is cancelled. */
static void watch_deliver(ls_meta_watch_t *w, ls_meta_event_t *ev, size_t n)
{
    if (!watch_cancelled(w)) w->cb(w->arg, ev, n);
}

/* Handles one WatchResponse. Returns 0 to keep streaming, -1 to drop the
 * stream (reconnect), 1 when the watch is finished (compacted). */
static int watch_message(ls_meta_watch_t *w, const char *p, size_t n)
{
    json_error_t jerr;
    json_t *j = json_loadb(p, n, 0, &jerr);
    json_t *res = json_object_get(j, "result");
    if (!res) {
        LS_WARN("meta", "etcd watch: %s", j ? "stream error" : "malformed message");
        json_decref(j);
        return -1;
    }
    int64_t compact = jget_i64(res, "compact_revision");
    if (compact) {
        LS_WARN("meta",
                "etcd watch fell behind: history before revision %" PRId64
                " is compacted (wanted %" PRId64 ")",
                compact, w->next_rev);
        json_decref(j);
        if (!watch_cancelled(w)) w->cb(w->arg, NULL, 0);
        return 1;
    }
    if (json_is_true(json_object_get(res, "canceled"))) {
        json_decref(j);
        return -1;
    }
    json_t *evs = json_object_get(res, "events");
    size_t ne = json_array_size(evs);
    if (!ne && !json_is_true(json_object_get(res, "created"))) {
        int64_t hr = header_rev(res); /* progress notification: quiet up to hr */
        if (hr + 1 > w->next_rev) w->next_rev = hr + 1;
    }
    ls_meta_event_t *batch = ne ? LS_NEWN(ls_meta_event_t, ne) : NULL;
    size_t nb = 0;
    int rc = 0;
    for (size_t i = 0; i <= ne && rc == 0; i++) {
        json_t *e = i < ne ? json_array_get(evs, i) : NULL;
        ls_meta_event_t ev;
        memset(&ev, 0, sizeof ev);
        if (e) {
            const char *type = json_string_value(json_object_get(e, "type"));
            ev.kind = type && strcmp(type, "DELETE") == 0 ? LS_META_EV_DEL : LS_META_EV_PUT;
            if (etcd_kv(w->em, json_object_get(e, "kv"), &ev.kv) != 0) {
                LS_WARN("meta", "etcd watch: malformed event");
                rc = -1;
                break;
            }
            if (ev.kind == LS_META_EV_DEL) ev.kv.create_rev = 0;
        }
        /* a revision's events are contiguous: flush when the revision changes */
        if (nb && (!e || ev.kv.mod_rev != batch[0].kv.mod_rev)) {
            int64_t rev = batch[0].kv.mod_rev;
            if (rev >= w->next_rev) watch_deliver(w, batch, nb); /* else: replayed */
            for (size_t k = 0; k < nb; k++)
                ls_kv_free(&batch[k].kv);
            nb = 0;
            if (rev + 1 > w->next_rev) w->next_rev = rev + 1;
            if (watch_cancelled(w)) rc = 1;
        }
        if (e) batch[nb++] = ev;
    }
    for (size_t k = 0; k < nb; k++)
        ls_kv_free(&batch[k].kv);
    ls_free(batch);
    json_decref(j);
    return rc;
}

static size_t watch_on_write(char *data, size_t size, size_t nmemb, void *arg)
{
    ls_meta_watch_t *w = arg;
    size_t n = size * nmemb;
    etcd_on_write(data, size, nmemb, &w->line);
    /* messages are newline-delimited */
    for (;;) {
        char *nl = memchr(w->line.p, '\n', w->line.n);
        if (!nl) break;
        size_t len = (size_t)(nl - w->line.p);
        int rc = len ? watch_message(w, w->line.p, len) : 0;
        memmove(w->line.p, nl + 1, w->line.n - len - 1);
        w->line.n -= len + 1;
        if (rc == 1) w->finished = 1;
        if (rc != 0) return 0; /* abort the transfer */
    }
    if (w->line.n > ETCD_WATCH_LINE_MAX) {
        LS_WARN("meta", "etcd watch: message over %u bytes", ETCD_WATCH_LINE_MAX);
        return 0;
    }
    return n;
}

/* One streaming session against endpoint ep; returns when it ends. */
static void watch_stream(ls_meta_watch_t *w, const char *ep)
{
    json_t *cr = json_object(), *req = json_object();
    json_object_set_new(cr, "key", json_string(w->key64));
    json_object_set_new(cr, "range_end", json_string(w->end64));
    jset_i64(cr, "start_revision", w->next_rev);
    json_object_set_new(cr, "progress_notify", json_true());
    json_object_set_new(req, "create_request", cr);
    char *body = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    struct curl_slist *hl = etcd_headers(w->em, NULL);
    char url[512];
    snprintf(url, sizeof url, "%s://%s/v3/watch", w->em->tls ? "https" : "http", ep);
    CURL *c = curl_easy_init();
    curl_common(w->em, c, url, hl);
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, watch_on_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, w);
    /* no overall timeout: the stream is meant to stay open; a peer that
     * vanished without a FIN is found by TCP keepalive (etcd's own progress
     * notifications come only every ~10 min) */
    curl_easy_setopt(c, CURLOPT_TCP_KEEPIDLE, 10L);
    curl_easy_setopt(c, CURLOPT_TCP_KEEPINTVL, 5L);
    w->line.n = 0;
    curl_multi_add_handle(w->multi, c);
    int running = 1;
    while (running && !watch_cancelled(w)) {
        if (curl_multi_perform(w->multi, &running) != CURLM_OK) break;
        if (running) curl_multi_poll(w->multi, NULL, 0, 1000, NULL);
    }
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(w->multi, &left)))
        if (msg->msg == CURLMSG_DONE && msg->data.result != CURLE_OK &&
            msg->data.result != CURLE_WRITE_ERROR)
            LS_DEBUG("meta", "etcd watch %s: %s", ep, curl_easy_strerror(msg->data.result));
    curl_multi_remove_handle(w->multi, c);
    curl_easy_cleanup(c);
    curl_slist_free_all(hl);
    free(body);
}

static void watch_free(ls_meta_watch_t *w)
{
    if (w->multi) curl_multi_cleanup(w->multi);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    ls_free(w->line.p);
    ls_free(w->key64);
    ls_free(w->end64);
    ls_free(w);
}

static void *watch_thread(void *arg)
{
    ls_meta_watch_t *w = arg;
    pthread_mutex_lock(&w->mu); /* wait until the creator stored w->th */
    pthread_mutex_unlock(&w->mu);
    etcd_meta_t *em = w->em;
    int backoff = 50;
    size_t ep = cur_ep(em);
    while (!watch_cancelled(w) && !w->finished) {
        int64_t before = w->next_rev;
        watch_stream(w, em->eps[ep]);
        if (watch_cancelled(w) || w->finished) break;
        /* the stream broke: back off, then resume elsewhere from next_rev */
        if (w->next_rev > before) backoff = 50;
        ep = (ep + 1) % em->neps;
        int64_t until = ls_clock_mono_ms() + backoff;
        pthread_mutex_lock(&w->mu);
        while (!w->cancelled && ls_cond_wait_until(&w->cv, &w->mu, until) == 0) {
        }
        pthread_mutex_unlock(&w->mu);
        backoff = backoff * 2 > ETCD_WATCH_BACKOFF_MAX_MS ? ETCD_WATCH_BACKOFF_MAX_MS : backoff * 2;
    }
    /* finished (compacted) but not cancelled: park until cancel */
    pthread_mutex_lock(&w->mu);
    while (!w->cancelled)
        pthread_cond_wait(&w->cv, &w->mu);
    int self_free = w->self_free;
    pthread_mutex_unlock(&w->mu);
    if (self_free) watch_free(w);
    return NULL;
}

static ls_status etcd_watch(ls_meta_t *m, const void *prefix, size_t plen, int64_t after_rev,
                            ls_meta_watch_cb cb, void *arg, ls_meta_watch_t **out)
{
    etcd_meta_t *em = (etcd_meta_t *)m;
    if (!cb || after_rev < 0 || (plen && !prefix) || !out) return LS_EINVAL;
    char *key64 = etcd_key(em, prefix, plen);
    char *end64;
    {
        uint8_t stackbuf[512];
        uint8_t *e = plen <= sizeof stackbuf ? stackbuf : ls_malloc(plen);
        size_t elen = plen ? ls_meta_prefix_end(prefix, plen, e) : 0;
        end64 = etcd_end(em, elen ? e : NULL, elen);
        if (e != stackbuf) ls_free(e);
    }
    /* Probe: is after_rev+1 still in etcd's history? (A future revision is
     * fine: the watch waits for it.) after_rev 0 = from the current revision. */
    json_t *req = json_object(), *resp;
    json_object_set_new(req, "key", json_string(key64));
    json_object_set_new(req, "range_end", json_string(end64));
    json_object_set_new(req, "count_only", json_true());
    if (after_rev) jset_i64(req, "revision", after_rev + 1);
    ls_status st = etcd_call(em, "/v3/kv/range", req, 1, &resp);
    if (st == LS_ERANGE && strstr(ls_meta_errbuf(), "future revision")) st = LS_OK, resp = NULL;
    if (st != LS_OK) {
        ls_free(key64);
        ls_free(end64);
        return st;
    }
    if (!after_rev) after_rev = header_rev(resp);
    json_decref(resp);

    ls_meta_watch_t *w = LS_NEW(ls_meta_watch_t);
    w->em = em;
    w->key64 = key64;
    w->end64 = end64;
    w->cb = cb;
    w->arg = arg;
    w->next_rev = after_rev + 1;
    pthread_mutex_init(&w->mu, NULL);
    ls_cond_init_mono(&w->cv);
    w->multi = curl_multi_init();
    pthread_mutex_lock(&w->mu);
    if (!w->multi || ls_thread_start(&w->th, "ls-etcd-watch", watch_thread, w) != 0) {
        pthread_mutex_unlock(&w->mu);
        watch_free(w);
        snprintf(ls_meta_errbuf(), LS_META_ERRMSG_CAP, "etcd watch: cannot start its thread");
        return LS_EIO;
    }
    pthread_mutex_unlock(&w->mu);
    *out = w;
    return LS_OK;
}

static void etcd_watch_cancel(ls_meta_t *m, ls_meta_watch_t *w)
{
    (void)m;
    if (!w) return;
    int self = pthread_equal(pthread_self(), w->th);
    pthread_mutex_lock(&w->mu);
    w->cancelled = 1;
    w->self_free = self;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    if (self) {
        pthread_detach(w->th); /* the thread frees w when it unwinds */
        return;
    }
    curl_multi_wakeup(w->multi);
    pthread_join(w->th, NULL);
    watch_free(w);
}

static void etcd_close(ls_meta_t *m)
{
    etcd_meta_t *em = (etcd_meta_t *)m;
    ls_curl_pool_destroy(&em->pool);
    for (size_t i = 0; i < em->neps; i++)
        ls_free(em->eps[i]);
    ls_free(em->eps);
    ls_free(em->pfx);
    ls_free(em->cacert);
    ls_free(em->cert);
    ls_free(em->key);
    ls_free(em->user);
    if (em->password) memset(em->password, 0, strlen(em->password));
    ls_free(em->password);
    ls_free(em->token);
    pthread_mutex_destroy(&em->mu);
    ls_free(em);
}

static const ls_meta_ops_t etcd_ops = {
    .name = "etcd",
    .max_txn_ops = LS_META_MAX_TXN_OPS,
    .get = etcd_get,
    .scan = etcd_scan,
    .txn = etcd_txn,
    .lease_grant = etcd_lease_grant,
    .lease_keepalive = etcd_lease_keepalive,
    .lease_revoke = etcd_lease_revoke,
    .watch = etcd_watch,
    .watch_cancel = etcd_watch_cancel,
    .close = etcd_close,
};

/* The password in file path, its first line (no newline); NULL if the
 * file cannot be read or is empty. */
static char *read_password(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    char line[1024];
    char *pw = NULL;
    if (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = 0;
        if (line[0]) pw = ls_strdup(line);
    }
    memset(line, 0, sizeof line);
    fclose(f);
    return pw;
}

/* The URL's query (file comment, "Security"): unknown names are refused, a
 * password file that cannot be read too; then the first authenticate. */
static ls_status etcd_security(etcd_meta_t *em, const char *query, char *err, size_t errlen)
{
    char *q = ls_strdup(query), *save = NULL, *pwfile = NULL;
    ls_status rc = LS_OK;
    bool tls_off = false; /* tls=false given */
    for (char *kv = strtok_r(q, "&", &save); kv && rc == LS_OK; kv = strtok_r(NULL, "&", &save)) {
        char *eq = strchr(kv, '=');
        const char *v = eq ? eq + 1 : "";
        if (eq) *eq = 0;
        char **dst = !strcmp(kv, "cacert")          ? &em->cacert
                     : !strcmp(kv, "cert")          ? &em->cert
                     : !strcmp(kv, "key")           ? &em->key
                     : !strcmp(kv, "user")          ? &em->user
                     : !strcmp(kv, "password-file") ? &pwfile
                                                    : NULL;
        if (!strcmp(kv, "tls") && (!strcmp(v, "true") || !strcmp(v, "false"))) {
            em->tls = !strcmp(v, "true");
            tls_off = !em->tls;
        } else if (!strcmp(kv, "password")) {
            snprintf(err, errlen,
                     "etcd URL: a password is not taken in the URL (it would be logged); "
                     "name a file holding it with password-file=");
            rc = LS_EINVAL;
        } else if (!dst || !*v) {
            snprintf(err, errlen,
                     "etcd URL: unknown or empty parameter '%s' (known: tls=true|false, cacert, "
                     "cert, key, user, password-file)",
                     kv);
            rc = LS_EINVAL;
        } else {
            ls_free(*dst);
            *dst = ls_strdup(v);
        }
    }
    ls_free(q);
    if (rc == LS_OK && (em->cacert || em->cert || em->key)) {
        if (tls_off) {
            snprintf(err, errlen,
                     "etcd URL: tls=false with cacert/cert/key: the files "
                     "mean TLS; drop one or the other");
            rc = LS_EINVAL;
        }
        em->tls = true;
    }
    if (rc == LS_OK && !em->cert != !em->key) {
        snprintf(err, errlen,
                 "etcd URL: cert= and key= go together (a client certificate "
                 "and its private key)");
        rc = LS_EINVAL;
    }
    if (rc == LS_OK && !em->user != !pwfile) {
        snprintf(err, errlen, "etcd URL: user= and password-file= go together");
        rc = LS_EINVAL;
    }
    if (rc == LS_OK && pwfile && !(em->password = read_password(pwfile))) {
        snprintf(err, errlen, "etcd URL: password-file '%s' cannot be read or is empty", pwfile);
        rc = LS_EIO;
    }
    ls_free(pwfile);
    if (rc == LS_OK && em->user && (rc = etcd_reauth(em, 0)) != LS_OK)
        snprintf(err, errlen, "etcd: authenticating as '%s' failed: %s", em->user,
                 ls_meta_errbuf());
    return rc;
}

ls_meta_t *ls_meta_etcd_open(const char *url, char *err, size_t errlen)
{
    char eb[128];
    if (!err || errlen == 0) err = eb, errlen = sizeof eb;
    if (!url || strncmp(url, "etcd://", 7) != 0) {
        snprintf(err, errlen, "etcd URL '%s' does not start with etcd://", url ? url : "");
        return NULL;
    }
    const char *hosts = url + 7, *qmark = strchr(hosts, '?');
    size_t ulen = qmark ? (size_t)(qmark - hosts) : strlen(hosts);
    const char *slash = memchr(hosts, '/', ulen);
    size_t hlen = slash ? (size_t)(slash - hosts) : ulen;
    if (hlen == 0) {
        snprintf(err, errlen, "etcd URL '%s' names no endpoint (etcd://host:port/prefix)", url);
        return NULL;
    }
    etcd_meta_t *em = LS_NEW(etcd_meta_t);
    em->base.ops = &etcd_ops;
    pthread_mutex_init(&em->mu, NULL);
    ls_curl_pool_init(&em->pool, 0, ETCD_POOL_MAX);
    for (const char *p = hosts; p < hosts + hlen;) {
        const char *comma = memchr(p, ',', (size_t)(hosts + hlen - p));
        size_t n = comma ? (size_t)(comma - p) : (size_t)(hosts + hlen - p);
        const char *colon = memchr(p, ':', n);
        if (n == 0 || n > 255 || !colon || colon == p || colon + 1 == p + n ||
            strspn(colon + 1, "0123456789") < (size_t)(p + n - colon - 1)) {
            snprintf(err, errlen, "etcd URL '%s': endpoint '%.*s' is not host:port", url, (int)n,
                     p);
            etcd_close(&em->base);
            return NULL;
        }
        em->eps = ls_realloc(em->eps, (em->neps + 1) * sizeof *em->eps);
        em->eps[em->neps++] = ls_strndup(p, n);
        p += n + (comma ? 1 : 0);
    }
    const char *pfx = slash ? slash + 1 : "";
    em->plen = slash ? (size_t)(hosts + ulen - pfx) : 0;
    int add_slash = em->plen && pfx[em->plen - 1] != '/';
    em->pfx = ls_malloc(em->plen + 2);
    memcpy(em->pfx, pfx, em->plen);
    if (add_slash) em->pfx[em->plen++] = '/';
    em->pfx[em->plen] = 0;
    if (qmark && etcd_security(em, qmark + 1, err, errlen) != 0) {
        etcd_close(&em->base);
        return NULL;
    }
    return &em->base;
}
