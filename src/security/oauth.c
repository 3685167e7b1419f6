/* OAUTHBEARER token validation against a JWKS (design note in oauth.h). */
#include "security/oauth.h"

#include <curl/curl.h>
#include <jansson.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/rsa.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/base64.h"
#include "base/clock.h"
#include "base/curl_pool.h"
#include "base/buf.h"
#include "base/diag.h"
#include "base/thread.h"

/* A fetch caps the JWKS size: a key set is a few kilobytes. */
#define JWKS_MAX_BYTES (1 << 20)
/* Unknown-kid refreshes at most this often, so bad tokens cannot hammer the
 * identity provider. */
#define KID_REFRESH_MIN_MS 1000

typedef struct jwk {
    char *kid;
    char *alg; /* the JWK's "alg" when it names one: tokens must use it */
    EVP_PKEY *key;
    bool ec;
} jwk_t;

typedef struct keyset {
    int refs; /* under ls_oauth.mu */
    int n;
    jwk_t *keys;
} keyset_t;

struct ls_oauth {
    char *url, *issuer, *scope_claim, *sub_claim;
    char **aud;
    int naud;
    int64_t skew_s, refresh_ms;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    keyset_t *keys;  /* current snapshot; NULL before the first good fetch */
    bool kick, stop; /* refresher wake-ups */
    int64_t last_fetch_ms;
    pthread_t thread;
    bool started;
};

/* ---- key sets ----------------------------------------------------------- */

static void keyset_unref(ls_oauth_t *a, keyset_t *ks)
{
    if (!ks) return;
    pthread_mutex_lock(&a->mu);
    bool last = --ks->refs == 0;
    pthread_mutex_unlock(&a->mu);
    if (!last) return;
    for (int i = 0; i < ks->n; i++) {
        ls_free(ks->keys[i].kid);
        ls_free(ks->keys[i].alg);
        EVP_PKEY_free(ks->keys[i].key);
    }
    ls_free(ks->keys);
    ls_free(ks);
}

/* Strict base64url without padding (RFC 7515 §2). */
static int b64url(const char *s, size_t n, uint8_t **out, size_t *outlen)
{
    if (n % 4 == 1) return -1;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_'))
            return -1;
    }
    char *z = ls_malloc(n + 1);
    memcpy(z, s, n);
    z[n] = 0;
    int rc = ls_base64_decode(z, out, outlen);
    ls_free(z);
    return rc;
}

static int b64url_field(json_t *o, const char *name, uint8_t **out, size_t *len)
{
    const char *s = json_string_value(json_object_get(o, name));
    *len = 0;
    if (!s || b64url(s, strlen(s), out, len) != 0) return -1;
    if (*len == 0) {
        ls_free(*out);
        *out = NULL;
        return -1;
    }
    return 0;
}

static EVP_PKEY *fromdata(const char *type, OSSL_PARAM_BLD *b)
{
    OSSL_PARAM *p = OSSL_PARAM_BLD_to_param(b);
    EVP_PKEY_CTX *c = EVP_PKEY_CTX_new_from_name(NULL, type, NULL);
    EVP_PKEY *k = NULL;
    if (!p || !c || EVP_PKEY_fromdata_init(c) <= 0 ||
        EVP_PKEY_fromdata(c, &k, EVP_PKEY_PUBLIC_KEY, p) <= 0)
        k = NULL;
    EVP_PKEY_CTX_free(c);
    OSSL_PARAM_free(p);
    return k;
}

static EVP_PKEY *rsa_key(json_t *j)
{
    uint8_t *n = NULL, *e = NULL;
    size_t nl, el;
    EVP_PKEY *k = NULL;
    if (b64url_field(j, "n", &n, &nl) == 0 && b64url_field(j, "e", &e, &el) == 0) {
        BIGNUM *bn = BN_bin2bn(n, (int)nl, NULL), *be = BN_bin2bn(e, (int)el, NULL);
        OSSL_PARAM_BLD *b = OSSL_PARAM_BLD_new();
        if (bn && be && b && OSSL_PARAM_BLD_push_BN(b, OSSL_PKEY_PARAM_RSA_N, bn) &&
            OSSL_PARAM_BLD_push_BN(b, OSSL_PKEY_PARAM_RSA_E, be))
            k = fromdata("RSA", b);
        OSSL_PARAM_BLD_free(b);
        BN_free(bn);
        BN_free(be);
    }
    ls_free(n);
    ls_free(e);
    return k;
}

static EVP_PKEY *ec_key(json_t *j)
{
    const char *crv = json_string_value(json_object_get(j, "crv"));
    const char *group = NULL;
    size_t flen = 0;
    if (crv && strcmp(crv, "P-256") == 0) group = "prime256v1", flen = 32;
    if (crv && strcmp(crv, "P-384") == 0) group = "secp384r1", flen = 48;
    if (!group) return NULL;
    uint8_t *x = NULL, *y = NULL;
    size_t xl = 0, yl = 0;
    EVP_PKEY *k = NULL;
    if (b64url_field(j, "x", &x, &xl) == 0 && b64url_field(j, "y", &y, &yl) == 0 && xl == flen &&
        yl == flen) {
        uint8_t pt[1 + 2 * 48];
        pt[0] = 4; /* uncompressed point */
        memcpy(pt + 1, x, flen);
        memcpy(pt + 1 + flen, y, flen);
        OSSL_PARAM_BLD *b = OSSL_PARAM_BLD_new();
        if (b && OSSL_PARAM_BLD_push_utf8_string(b, OSSL_PKEY_PARAM_GROUP_NAME, group, 0) &&
            OSSL_PARAM_BLD_push_octet_string(b, OSSL_PKEY_PARAM_PUB_KEY, pt, 1 + 2 * flen))
            k = fromdata("EC", b);
        OSSL_PARAM_BLD_free(b);
    }
    ls_free(x);
    ls_free(y);
    return k;
}

/* Keys of a JWKS document; keys that are not RSA/EC signing keys with a kid
 * are skipped (a JWKS may carry encryption keys too). */
static keyset_t *keyset_parse(const char *text, size_t n, char *err, size_t errlen)
{
    json_error_t je;
    json_t *doc = json_loadb(text, n, 0, &je);
    json_t *arr = doc ? json_object_get(doc, "keys") : NULL;
    if (!json_is_array(arr)) {
        snprintf(err, errlen, "not a JWKS (a JSON object with a \"keys\" array)");
        json_decref(doc);
        return NULL;
    }
    keyset_t *ks = LS_NEW(keyset_t);
    ks->refs = 1;
    ks->keys = ls_calloc(json_array_size(arr) + 1, sizeof *ks->keys);
    size_t i;
    json_t *j;
    json_array_foreach(arr, i, j)
    {
        const char *kty = json_string_value(json_object_get(j, "kty"));
        const char *kid = json_string_value(json_object_get(j, "kid"));
        const char *use = json_string_value(json_object_get(j, "use"));
        if (!kty || !kid || (use && strcmp(use, "sig") != 0)) continue;
        bool ec = strcmp(kty, "EC") == 0;
        EVP_PKEY *k = ec ? ec_key(j) : strcmp(kty, "RSA") == 0 ? rsa_key(j) : NULL;
        if (!k) continue;
        const char *alg = json_string_value(json_object_get(j, "alg"));
        ks->keys[ks->n++] =
            (jwk_t){.kid = ls_strdup(kid), .alg = alg ? ls_strdup(alg) : NULL, .key = k, .ec = ec};
    }
    json_decref(doc);
    return ks;
}

/* ---- fetching ----------------------------------------------------------- */

static size_t on_body(char *p, size_t sz, size_t nm, void *arg)
{
    ls_buf_t *b = arg;
    if (b->len + sz * nm > JWKS_MAX_BYTES) return 0;
    ls_buf_append(b, p, sz * nm);
    return sz * nm;
}

static ls_status fetch(const char *url, ls_buf_t *out, char *err, size_t errlen)
{
    ls_curl_global_init();
    CURL *c = curl_easy_init();
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return LS_EIO;
    }
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "file,http,https");
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 10000L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    CURLcode rc = curl_easy_perform(c);
    long code = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_cleanup(c);
    if (rc != CURLE_OK) {
        snprintf(err, errlen, "%s", curl_easy_strerror(rc));
        return LS_EIO;
    }
    if (strncmp(url, "file:", 5) != 0 && code != 200) {
        snprintf(err, errlen, "HTTP status %ld", code);
        return LS_EIO;
    }
    return LS_OK;
}

ls_status ls_oauth_refresh(ls_oauth_t *a)
{
    ls_buf_t b;
    ls_buf_init(&b);
    char why[256] = "";
    ls_status st = fetch(a->url, &b, why, sizeof why);
    keyset_t *ks = st == LS_OK ? keyset_parse((const char *)b.data, b.len, why, sizeof why) : NULL;
    ls_buf_free(&b);
    pthread_mutex_lock(&a->mu);
    a->last_fetch_ms = ls_clock_mono_ms();
    keyset_t *old = ks ? a->keys : NULL;
    if (ks) a->keys = ks;
    pthread_mutex_unlock(&a->mu);
    if (!ks) {
        LS_WARN("oauth", "JWKS %s could not be loaded: %s (keeping the previous keys)", a->url,
                why);
        return LS_EIO;
    }
    keyset_unref(a, old);
    return LS_OK;
}

static void *refresher(void *arg)
{
    ls_oauth_t *a = arg;
    pthread_mutex_lock(&a->mu);
    while (!a->stop) {
        if (a->refresh_ms > 0) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            int64_t ns = ts.tv_nsec + (a->refresh_ms % 1000) * 1000000;
            ts.tv_sec += (time_t)(a->refresh_ms / 1000 + ns / 1000000000);
            ts.tv_nsec = (long)(ns % 1000000000);
            while (!a->stop && !a->kick)
                if (pthread_cond_timedwait(&a->cv, &a->mu, &ts) != 0) break;
        } else {
            while (!a->stop && !a->kick)
                pthread_cond_wait(&a->cv, &a->mu);
        }
        if (a->stop) break;
        a->kick = false;
        pthread_mutex_unlock(&a->mu);
        ls_oauth_refresh(a);
        pthread_mutex_lock(&a->mu);
    }
    pthread_mutex_unlock(&a->mu);
    return NULL;
}

/* ---- open / close ------------------------------------------------------- */

ls_oauth_t *ls_oauth_open(const ls_oauth_opts_t *o, char *err, size_t errlen)
{
    const char *u = o->jwks_url;
    if (!u || !*u) {
        snprintf(err, errlen,
                 "sasl.oauthbearer.jwks.endpoint.url is required when OAUTHBEARER is enabled");
        return NULL;
    }
    if (strncmp(u, "file://", 7) != 0 && strncmp(u, "http://", 7) != 0 &&
        strncmp(u, "https://", 8) != 0) {
        snprintf(err, errlen,
                 "sasl.oauthbearer.jwks.endpoint.url '%.200s': only file://, http:// and "
                 "https:// URLs are supported",
                 u);
        return NULL;
    }
    ls_oauth_t *a = LS_NEW(ls_oauth_t);
    a->url = ls_strdup(u);
    a->issuer = o->issuer && *o->issuer ? ls_strdup(o->issuer) : NULL;
    a->scope_claim = ls_strdup(o->scope_claim && *o->scope_claim ? o->scope_claim : "scope");
    a->sub_claim = ls_strdup(o->sub_claim && *o->sub_claim ? o->sub_claim : "sub");
    a->skew_s = o->clock_skew_s;
    a->refresh_ms = o->refresh_ms;
    if (o->audience && *o->audience) {
        a->aud = ls_calloc(strlen(o->audience) + 1, sizeof *a->aud);
        const char *p = o->audience;
        while (*p) {
            while (*p == ',' || *p == ' ')
                p++;
            const char *e = p;
            while (*e && *e != ',')
                e++;
            const char *t = e;
            while (t > p && t[-1] == ' ')
                t--;
            if (t > p) a->aud[a->naud++] = ls_strndup(p, (size_t)(t - p));
            p = e;
        }
    }
    pthread_mutex_init(&a->mu, NULL);
    pthread_cond_init(&a->cv, NULL);
    ls_oauth_refresh(a);
    if (ls_thread_start(&a->thread, "ls-jwks", refresher, a) == 0) a->started = true;
    return a;
}

void ls_oauth_close(ls_oauth_t *a)
{
    if (!a) return;
    pthread_mutex_lock(&a->mu);
    a->stop = true;
    pthread_cond_signal(&a->cv);
    pthread_mutex_unlock(&a->mu);
    if (a->started) pthread_join(a->thread, NULL);
    keyset_unref(a, a->keys);
    for (int i = 0; i < a->naud; i++)
        ls_free(a->aud[i]);
    ls_free(a->aud);
    ls_free(a->url);
    ls_free(a->issuer);
    ls_free(a->scope_claim);
    ls_free(a->sub_claim);
    pthread_mutex_destroy(&a->mu);
    pthread_cond_destroy(&a->cv);
    ls_free(a);
}

/* ---- validation --------------------------------------------------------- */

static ls_status bad(char *err, size_t errlen, const char *fmt, const char *arg)
{
    snprintf(err, errlen, fmt, arg);
    return LS_EINVAL;
}

static keyset_t *snapshot(ls_oauth_t *a)
{
    pthread_mutex_lock(&a->mu);
    keyset_t *ks = a->keys;
    if (ks) ks->refs++;
    pthread_mutex_unlock(&a->mu);
    return ks;
}

static void kick_refresh(ls_oauth_t *a)
{
    pthread_mutex_lock(&a->mu);
    if (ls_clock_mono_ms() - a->last_fetch_ms >= KID_REFRESH_MIN_MS) {
        a->kick = true;
        pthread_cond_signal(&a->cv);
    }
    pthread_mutex_unlock(&a->mu);
}

/* ES* signatures are r||s (RFC 7518 §3.4); OpenSSL verifies DER. */
static uint8_t *ecdsa_der(const uint8_t *sig, size_t n, size_t flen, size_t *outlen)
{
    if (n != 2 * flen) return NULL;
    ECDSA_SIG *s = ECDSA_SIG_new();
    BIGNUM *r = BN_bin2bn(sig, (int)flen, NULL), *ss = BN_bin2bn(sig + flen, (int)flen, NULL);
    uint8_t *der = NULL;
    if (s && r && ss && ECDSA_SIG_set0(s, r, ss)) {
        r = ss = NULL;
        int l = i2d_ECDSA_SIG(s, &der);
        *outlen = l > 0 ? (size_t)l : 0;
        if (l <= 0) der = NULL;
    }
    BN_free(r);
    BN_free(ss);
    ECDSA_SIG_free(s);
    return der;
}

static bool verify(const jwk_t *k, const char *alg, const uint8_t *data, size_t n,
                   const uint8_t *sig, size_t sl)
{
    const EVP_MD *md = NULL;
    bool pss = false, ec = false;
    size_t flen = 0;
    if (strcmp(alg, "RS256") == 0)
        md = EVP_sha256();
    else if (strcmp(alg, "RS384") == 0)
        md = EVP_sha384();
    else if (strcmp(alg, "RS512") == 0)
        md = EVP_sha512();
    else if (strcmp(alg, "PS256") == 0)
        md = EVP_sha256(), pss = true;
    else if (strcmp(alg, "ES256") == 0)
        md = EVP_sha256(), ec = true, flen = 32;
    else if (strcmp(alg, "ES384") == 0)
        md = EVP_sha384(), ec = true, flen = 48;
    if (!md || ec != k->ec || (k->alg && strcmp(k->alg, alg) != 0)) return false;
    if (ec && EVP_PKEY_get_bits(k->key) != (int)flen * 8) return false;
    uint8_t *der = NULL;
    if (ec) {
        der = ecdsa_der(sig, sl, flen, &sl);
        if (!der) return false;
        sig = der;
    }
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    EVP_PKEY_CTX *pc = NULL;
    bool ok = c && EVP_DigestVerifyInit(c, &pc, md, NULL, k->key) == 1;
    if (ok && pss)
        ok = EVP_PKEY_CTX_set_rsa_padding(pc, RSA_PKCS1_PSS_PADDING) > 0 &&
             EVP_PKEY_CTX_set_rsa_pss_saltlen(pc, RSA_PSS_SALTLEN_DIGEST) > 0 &&
             EVP_PKEY_CTX_set_rsa_mgf1_md(pc, md) > 0;
    ok = ok && EVP_DigestVerify(c, sig, sl, data, n) == 1;
    EVP_MD_CTX_free(c);
    OPENSSL_free(der);
    return ok;
}

/* A NumericDate claim (RFC 7519 §2): absent is fine unless required. */
static int numeric_date(json_t *claims, const char *name, int64_t *out)
{
    json_t *v = json_object_get(claims, name);
    if (!v) return 0;
    /* beyond a few hundred million years: not a date (and no overflow) */
    if (!json_is_number(v) || fabs(json_number_value(v)) > 1e13) return -1;
    *out = (int64_t)json_number_value(v);
    return 1;
}

static bool audience_ok(ls_oauth_t *a, json_t *aud)
{
    if (!a->naud) return true;
    for (int i = 0; i < a->naud; i++) {
        if (json_is_string(aud) && strcmp(json_string_value(aud), a->aud[i]) == 0) return true;
        size_t k;
        json_t *v;
        json_array_foreach(aud, k, v) if (json_is_string(v) &&
                                          strcmp(json_string_value(v), a->aud[i]) == 0) return true;
    }
    return false;
}

static ls_status check_claims(ls_oauth_t *a, json_t *cl, int64_t now, char *principal, size_t cap,
                              int64_t *exp_ms, char *err, size_t errlen)
{
    int64_t exp = 0, nbf = 0, iat = 0;
    int he = numeric_date(cl, "exp", &exp), hn = numeric_date(cl, "nbf", &nbf),
        hi = numeric_date(cl, "iat", &iat);
    if (he < 0 || hn < 0 || hi < 0)
        return bad(err, errlen, "%s", "a date claim (exp, nbf, iat) is not a number");
    if (he == 0) return bad(err, errlen, "%s", "the token has no exp claim");
    if (now - a->skew_s >= exp) return bad(err, errlen, "%s", "the token has expired");
    if (hn && now + a->skew_s < nbf)
        return bad(err, errlen, "%s", "the token is not yet valid (nbf)");
    if (hi && now + a->skew_s < iat)
        return bad(err, errlen, "%s", "the token was issued in the future (iat)");
    if (a->issuer) {
        const char *iss = json_string_value(json_object_get(cl, "iss"));
        if (!iss || strcmp(iss, a->issuer) != 0)
            return bad(err, errlen, "%s", "the token's issuer (iss) is not the expected issuer");
    }
    if (!audience_ok(a, json_object_get(cl, "aud")))
        return bad(err, errlen, "%s", "the token's audience (aud) is not an expected audience");
    json_t *scope = json_object_get(cl, a->scope_claim);
    if (scope && !json_is_string(scope) && !json_is_array(scope))
        return bad(err, errlen, "the scope claim '%s' is neither a string nor a list",
                   a->scope_claim);
    const char *sub = json_string_value(json_object_get(cl, a->sub_claim));
    if (!sub || !*sub) return bad(err, errlen, "the token has no subject claim '%s'", a->sub_claim);
    if (strlen(sub) >= cap) return bad(err, errlen, "%s", "the token's subject is too long");
    memcpy(principal, sub, strlen(sub) + 1);
    *exp_ms = exp * 1000;
    return LS_OK;
}

ls_status ls_oauth_validate_at(ls_oauth_t *a, const char *tok, size_t n, int64_t now_s,
                               char *principal, size_t cap, int64_t *exp_ms, char *err,
                               size_t errlen)
{
    const char *d1 = memchr(tok, '.', n);
    const char *d2 = d1 ? memchr(d1 + 1, '.', n - (size_t)(d1 + 1 - tok)) : NULL;
    if (!d2 || memchr(d2 + 1, '.', n - (size_t)(d2 + 1 - tok)))
        return bad(err, errlen, "%s", "the token is not a compact JWS (header.payload.signature)");
    uint8_t *hdr = NULL, *pay = NULL, *sig = NULL;
    size_t hl, pl, sl;
    json_t *h = NULL, *cl = NULL;
    keyset_t *ks = NULL;
    ls_status st;
    if (b64url(tok, (size_t)(d1 - tok), &hdr, &hl) != 0 ||
        b64url(d1 + 1, (size_t)(d2 - d1 - 1), &pay, &pl) != 0 ||
        b64url(d2 + 1, n - (size_t)(d2 + 1 - tok), &sig, &sl) != 0) {
        st = bad(err, errlen, "%s", "the token is not valid base64url");
        goto out;
    }
    h = json_loadb((const char *)hdr, hl, 0, NULL);
    cl = json_loadb((const char *)pay, pl, 0, NULL);
    if (!json_is_object(h) || !json_is_object(cl)) {
        st = bad(err, errlen, "%s", "the token's header or payload is not a JSON object");
        goto out;
    }
    const char *alg = json_string_value(json_object_get(h, "alg"));
    const char *kid = json_string_value(json_object_get(h, "kid"));
    if (!alg ||
        !(strcmp(alg, "RS256") == 0 || strcmp(alg, "RS384") == 0 || strcmp(alg, "RS512") == 0 ||
          strcmp(alg, "PS256") == 0 || strcmp(alg, "ES256") == 0 || strcmp(alg, "ES384") == 0)) {
        st = bad(err, errlen,
                 "the token's algorithm '%.20s' is not accepted (RS256, RS384, RS512, PS256, "
                 "ES256, ES384)",
                 alg ? alg : "");
        goto out;
    }
    if (!kid) {
        st = bad(err, errlen, "%s", "the token's header has no kid");
        goto out;
    }
    ks = snapshot(a);
    const jwk_t *k = NULL;
    for (int i = 0; ks && i < ks->n && !k; i++)
        if (strcmp(ks->keys[i].kid, kid) == 0) k = &ks->keys[i];
    if (!k) {
        kick_refresh(a);
        st = bad(err, errlen, "%s", "the token's kid is not in the JWKS");
        goto out;
    }
    if (!verify(k, alg, (const uint8_t *)tok, (size_t)(d2 - tok), sig, sl)) {
        st = bad(err, errlen, "%s", "the token's signature does not verify");
        goto out;
    }
    st = check_claims(a, cl, now_s, principal, cap, exp_ms, err, errlen);
out:
    if (ks) keyset_unref(a, ks);
    json_decref(h);
    json_decref(cl);
    ls_free(hdr);
    ls_free(pay);
    ls_free(sig);
    return st;
}

ls_status ls_oauth_validate(ls_oauth_t *a, const char *token, size_t n, char *principal, size_t cap,
                            int64_t *exp_ms, char *err, size_t errlen)
{
    return ls_oauth_validate_at(a, token, n, ls_clock_wall_ms() / 1000, principal, cap, exp_ms, err,
                                errlen);
}

int ls_oauth_client_first(const uint8_t *msg, size_t n, const char **token, size_t *toklen)
{
    /* gs2 header: "n," or "y," then an optional a=authzid, then ',' */
    if (n < 3 || (msg[0] != 'n' && msg[0] != 'y') || msg[1] != ',') return -1;
    const uint8_t *end = msg + n;
    const uint8_t *p = memchr(msg + 2, ',', n - 2);
    if (!p || p + 1 >= end || p[1] != 0x01) return -1;
    *token = NULL;
    p += 2;
    while (p < end && *p != 0x01) { /* key=value\x01 pairs, then a lone \x01 */
        const uint8_t *e = memchr(p, 0x01, (size_t)(end - p));
        if (!e) return -1;
        if (e - p > 12 && memcmp(p, "auth=Bearer ", 12) == 0) {
            *token = (const char *)p + 12;
            *toklen = (size_t)(e - p - 12);
        }
        p = e + 1;
    }
    if (p + 1 != end || !*token) return -1;
    return 0;
}
