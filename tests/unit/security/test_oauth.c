/* SASL/OAUTHBEARER token validation (security/oauth.h): JWTs minted here
 * with keys generated at test time (RSA, P-256, P-384) against a JWKS file:
 * each accepted algorithm, each claim check (exp with and without skew,
 * nbf, iat, iss, aud, sub and the configured subject claim, scope type),
 * a wrong key, alg none, HS256, malformed base64 and JSON, an unknown kid
 * (and the key rotation that makes it known), the RFC 7628 client first
 * message, and the SASL exchange's error challenge. */
#include <openssl/core_names.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rsa.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/base64.h"
#include "base/buf.h"
#include "base/config.h"
#include "security/oauth.h"
#include "security/sasl.h"
#include "server/settings.h"
#include "unit.h"

#define NOW 1900000000LL

static char *b64u(const void *p, size_t n)
{
    char *s = ls_base64_encode(p, n);
    char *o = s;
    for (char *q = s; *q; q++)
        if (*q != '=') *o++ = *q == '+' ? '-' : *q == '/' ? '_' : *q;
    *o = 0;
    return s;
}

static char *b64u_bn(EVP_PKEY *k, const char *param)
{
    BIGNUM *bn = NULL;
    EVP_PKEY_get_bn_param(k, param, &bn);
    uint8_t buf[1024];
    int n = BN_bn2bin(bn, buf);
    BN_free(bn);
    return b64u(buf, (size_t)n);
}

static EVP_PKEY *rsa1, *rsa2, *ec256, *ec384;

/* A JWK for k under kid (RSA n/e or EC x/y/crv). */
static void jwk(FILE *f, EVP_PKEY *k, const char *kid)
{
    if (EVP_PKEY_is_a(k, "RSA")) {
        char *n = b64u_bn(k, OSSL_PKEY_PARAM_RSA_N), *e = b64u_bn(k, OSSL_PKEY_PARAM_RSA_E);
        /* "r1a": the same key bound to RS256 by the JWK's alg */
        fprintf(f, "{\"kty\":\"RSA\",\"kid\":\"%s\",\"use\":\"sig\",%s\"n\":\"%s\",\"e\":\"%s\"}",
                kid, strcmp(kid, "r1a") == 0 ? "\"alg\":\"RS256\"," : "", n, e);
        ls_free(n);
        ls_free(e);
        return;
    }
    uint8_t pt[200];
    size_t pl = 0;
    EVP_PKEY_get_octet_string_param(k, OSSL_PKEY_PARAM_PUB_KEY, pt, sizeof pt, &pl);
    size_t fl = (pl - 1) / 2;
    char *x = b64u(pt + 1, fl), *y = b64u(pt + 1 + fl, fl);
    fprintf(f, "{\"kty\":\"EC\",\"kid\":\"%s\",\"crv\":\"%s\",\"x\":\"%s\",\"y\":\"%s\"}", kid,
            fl == 32 ? "P-256" : "P-384", x, y);
    ls_free(x);
    ls_free(y);
}

static char jwks_path[64];

/* The JWKS file: rsa1 as "r1", ec256 as "e1", ec384 as "e2" (and rsa2 as
 * "r2" when rotated). */
static void write_jwks(bool rotated)
{
    FILE *f = fopen(jwks_path, "w");
    fprintf(f, "{\"keys\":[");
    jwk(f, rsa1, "r1");
    fprintf(f, ",");
    jwk(f, rsa1, "r1a");
    fprintf(f, ",");
    jwk(f, ec256, "e1");
    fprintf(f, ",");
    jwk(f, ec384, "e2");
    fprintf(f, ",{\"kty\":\"oct\",\"kid\":\"h1\",\"k\":\"c2VjcmV0\"}");
    if (rotated) {
        fprintf(f, ",");
        jwk(f, rsa2, "r2");
    }
    fprintf(f, "]}");
    fclose(f);
}

/* header.payload signed with k by alg (none and HS256 too). */
static char *mint(EVP_PKEY *k, const char *alg, const char *hdr, const char *pay)
{
    char *h = b64u(hdr, strlen(hdr)), *p = b64u(pay, strlen(pay));
    size_t il = strlen(h) + 1 + strlen(p);
    char *input = ls_malloc(il + 1);
    snprintf(input, il + 1, "%s.%s", h, p);
    uint8_t sig[1024];
    size_t sl = 0;
    if (strcmp(alg, "HS256") == 0) {
        unsigned l = 0;
        HMAC(EVP_sha256(), "secret", 6, (const uint8_t *)input, il, sig, &l);
        sl = l;
    } else if (strcmp(alg, "none") != 0) {
        const EVP_MD *md = strstr(alg, "384")   ? EVP_sha384()
                           : strstr(alg, "512") ? EVP_sha512()
                                                : EVP_sha256();
        EVP_MD_CTX *c = EVP_MD_CTX_new();
        EVP_PKEY_CTX *pc = NULL;
        EVP_DigestSignInit(c, &pc, md, NULL, k);
        if (alg[0] == 'P') {
            EVP_PKEY_CTX_set_rsa_padding(pc, RSA_PKCS1_PSS_PADDING);
            EVP_PKEY_CTX_set_rsa_pss_saltlen(pc, RSA_PSS_SALTLEN_DIGEST);
        }
        sl = sizeof sig;
        EVP_DigestSign(c, sig, &sl, (const uint8_t *)input, il);
        EVP_MD_CTX_free(c);
        if (alg[0] == 'E') { /* DER -> r||s */
            const uint8_t *d = sig;
            ECDSA_SIG *es = d2i_ECDSA_SIG(NULL, &d, (long)sl);
            size_t fl = strcmp(alg, "ES256") == 0 ? 32 : 48;
            memset(sig, 0, 2 * fl);
            BN_bn2binpad(ECDSA_SIG_get0_r(es), sig, (int)fl);
            BN_bn2binpad(ECDSA_SIG_get0_s(es), sig + fl, (int)fl);
            sl = 2 * fl;
            ECDSA_SIG_free(es);
        }
    }
    char *s = b64u(sig, sl);
    char *tok = ls_malloc(il + strlen(s) + 2);
    sprintf(tok, "%s.%s", input, s);
    ls_free(h);
    ls_free(p);
    ls_free(s);
    ls_free(input);
    return tok;
}

static ls_oauth_t *open_validator(const char *aud, const char *iss, const char *sub_claim)
{
    char url[128], err[256];
    snprintf(url, sizeof url, "file://%s", jwks_path);
    ls_oauth_opts_t o = {.jwks_url = url,
                         .audience = aud,
                         .issuer = iss,
                         .clock_skew_s = 30,
                         .sub_claim = sub_claim};
    return ls_oauth_open(&o, err, sizeof err);
}

/* Validates a token of alg/kid with payload claims at NOW: the status, and
 * the principal in who. */
static ls_status check(ls_oauth_t *a, EVP_PKEY *k, const char *alg, const char *kid,
                       const char *claims, char *who, char *err)
{
    char hdr[128];
    snprintf(hdr, sizeof hdr, "{\"alg\":\"%s\",\"kid\":\"%s\",\"typ\":\"JWT\"}", alg, kid);
    char *t = mint(k, alg, hdr, claims);
    int64_t exp_ms = 0;
    who[0] = 0;
    ls_status st = ls_oauth_validate_at(a, t, strlen(t), NOW, who, 256, &exp_ms, err, 256);
    ls_free(t);
    return st;
}

#define GOOD                                                                                       \
    "{\"sub\":\"alice\",\"exp\":1900000600,\"iat\":1900000000,\"iss\":\"idp\",\"aud\":[\"x\","     \
    "\"kafka\"]}"

TEST(accepted_algorithms)
{
    ls_oauth_t *a = open_validator("kafka", "idp", NULL);
    CHECK(a);
    char who[256], err[256];
    static const char *rs[] = {"RS256", "RS384", "RS512", "PS256"};
    for (int i = 0; i < 4; i++) {
        CHECK_EQ_INT(check(a, rsa1, rs[i], "r1", GOOD, who, err), LS_OK);
        CHECK(strcmp(who, "alice") == 0);
    }
    CHECK_EQ_INT(check(a, ec256, "ES256", "e1", GOOD, who, err), LS_OK);
    CHECK_EQ_INT(check(a, ec384, "ES384", "e2", GOOD, who, err), LS_OK);
    /* an algorithm that does not fit the key */
    CHECK_EQ_INT(check(a, ec384, "ES256", "e2", GOOD, who, err), LS_EINVAL);
    CHECK_EQ_INT(check(a, rsa1, "RS256", "e1", GOOD, who, err), LS_EINVAL);
    /* a JWK naming its alg accepts only that one */
    CHECK_EQ_INT(check(a, rsa1, "RS256", "r1a", GOOD, who, err), LS_OK);
    CHECK_EQ_INT(check(a, rsa1, "PS256", "r1a", GOOD, who, err), LS_EINVAL);
    ls_oauth_close(a);
}

TEST(refused_tokens)
{
    ls_oauth_t *a = open_validator("kafka", "idp", NULL);
    char who[256], err[256];
    /* wrong key: signed by rsa2, named r1 */
    CHECK_EQ_INT(check(a, rsa2, "RS256", "r1", GOOD, who, err), LS_EINVAL);
    CHECK(strstr(err, "signature"));
    CHECK_EQ_INT(check(a, NULL, "none", "r1", GOOD, who, err), LS_EINVAL);
    CHECK(strstr(err, "not accepted"));
    CHECK_EQ_INT(check(a, NULL, "HS256", "h1", GOOD, who, err), LS_EINVAL);
    CHECK(strstr(err, "not accepted"));
    CHECK(who[0] == 0);
    /* claims */
    static const struct {
        const char *claims, *why;
    } badc[] = {
        {"{\"sub\":\"alice\",\"iss\":\"idp\",\"aud\":\"kafka\"}", "no exp"},
        {"{\"sub\":\"alice\",\"exp\":1899999960,\"iss\":\"idp\",\"aud\":\"kafka\"}", "expired"},
        {"{\"sub\":\"alice\",\"exp\":\"soon\",\"iss\":\"idp\",\"aud\":\"kafka\"}", "not a number"},
        {"{\"sub\":\"alice\",\"exp\":1e300,\"iss\":\"idp\",\"aud\":\"kafka\"}", "not a number"},
        {"{\"sub\":\"alice\",\"exp\":1900000600,\"nbf\":1900000100,\"iss\":\"idp\",\"aud\":"
         "\"kafka\"}",
         "nbf"},
        {"{\"sub\":\"alice\",\"exp\":1900000600,\"iat\":1900000100,\"iss\":\"idp\",\"aud\":"
         "\"kafka\"}",
         "iat"},
        {"{\"sub\":\"alice\",\"exp\":1900000600,\"iss\":\"other\",\"aud\":\"kafka\"}", "issuer"},
        {"{\"sub\":\"alice\",\"exp\":1900000600,\"aud\":\"kafka\"}", "issuer"},
        {"{\"sub\":\"alice\",\"exp\":1900000600,\"iss\":\"idp\",\"aud\":\"web\"}", "audience"},
        {"{\"sub\":\"alice\",\"exp\":1900000600,\"iss\":\"idp\"}", "audience"},
        {"{\"exp\":1900000600,\"iss\":\"idp\",\"aud\":\"kafka\"}", "subject"},
        {"{\"sub\":\"alice\",\"exp\":1900000600,\"iss\":\"idp\",\"aud\":\"kafka\",\"scope\":7}",
         "scope"},
    };
    for (size_t i = 0; i < sizeof badc / sizeof badc[0]; i++) {
        CHECK_EQ_INT(check(a, rsa1, "RS256", "r1", badc[i].claims, who, err), LS_EINVAL);
        if (!strstr(err, badc[i].why)) printf("  claim %zu: %s\n", i, err);
        CHECK(strstr(err, badc[i].why));
    }
    ls_oauth_close(a);
}

TEST(clock_skew)
{
    ls_oauth_t *a = open_validator(NULL, NULL, NULL);
    char who[256], err[256];
    /* expired 10 s ago: inside the 30 s skew */
    CHECK_EQ_INT(check(a, rsa1, "RS256", "r1", "{\"sub\":\"bob\",\"exp\":1899999990}", who, err),
                 LS_OK);
    /* 31 s ago: outside */
    CHECK_EQ_INT(check(a, rsa1, "RS256", "r1", "{\"sub\":\"bob\",\"exp\":1899999969}", who, err),
                 LS_EINVAL);
    /* nbf 20 s ahead: inside */
    CHECK_EQ_INT(check(a, rsa1, "RS256", "r1",
                       "{\"sub\":\"bob\",\"exp\":1900000600,\"nbf\":1900000020}", who, err),
                 LS_OK);
    ls_oauth_close(a);
    /* skew 0: expired 10 s ago is refused */
    char url[128];
    snprintf(url, sizeof url, "file://%s", jwks_path);
    ls_oauth_opts_t o = {.jwks_url = url};
    a = ls_oauth_open(&o, err, sizeof err);
    CHECK_EQ_INT(check(a, rsa1, "RS256", "r1", "{\"sub\":\"bob\",\"exp\":1899999990}", who, err),
                 LS_EINVAL);
    ls_oauth_close(a);
}

TEST(sub_claim_name)
{
    ls_oauth_t *a = open_validator(NULL, NULL, "client_id");
    char who[256], err[256];
    CHECK_EQ_INT(check(a, rsa1, "RS256", "r1",
                       "{\"sub\":\"alice\",\"client_id\":\"svc-1\",\"exp\":1900000600}", who, err),
                 LS_OK);
    CHECK(strcmp(who, "svc-1") == 0);
    CHECK_EQ_INT(check(a, rsa1, "RS256", "r1", "{\"sub\":\"alice\",\"exp\":1900000600}", who, err),
                 LS_EINVAL);
    ls_oauth_close(a);
}

TEST(malformed)
{
    ls_oauth_t *a = open_validator(NULL, NULL, NULL);
    char who[256], err[256];
    int64_t e;
    static const char *toks[] = {
        "",
        "abc",
        "a.b",
        "a.b.c.d",
        "eyJhbGciOiJSUzI1NiJ9.e30.a*b",
        "e30=.e30.AA",
        "bm90IGpzb24.e30.AA", /* "not json" */
        "eyJhbGciOiJSUzI1NiIsImtpZCI6InIxIn0.bm90IGpzb24.AA",
        "eyJhbGciOiJSUzI1NiIsImtpZCI6InIxIn0.W10.AA", /* payload [] */
        "eyJhbGciOiJSUzI1NiJ9.e30.AA",                /* no kid */
        "A.e30.AA",                                   /* 1 char: not base64 */
    };
    for (size_t i = 0; i < sizeof toks / sizeof toks[0]; i++)
        CHECK_EQ_INT(ls_oauth_validate_at(a, toks[i], strlen(toks[i]), NOW, who, sizeof who, &e,
                                          err, sizeof err),
                     LS_EINVAL);
    ls_oauth_close(a);
}

TEST(unknown_kid_and_rotation)
{
    ls_oauth_t *a = open_validator(NULL, NULL, NULL);
    char who[256], err[256];
    const char *c = "{\"sub\":\"carol\",\"exp\":1900000600}";
    CHECK_EQ_INT(check(a, rsa2, "RS256", "r2", c, who, err), LS_EINVAL);
    CHECK(strstr(err, "kid"));
    write_jwks(true);
    /* the unknown kid woke the refresher (or the next one will): await the key */
    ls_status st = LS_EINVAL;
    for (int i = 0; i < 600 && st != LS_OK; i++) {
        st = check(a, rsa2, "RS256", "r2", c, who, err);
        if (st != LS_OK) usleep(20000);
    }
    CHECK_EQ_INT(st, LS_OK);
    CHECK(strcmp(who, "carol") == 0);
    write_jwks(false);
    ls_oauth_close(a);
}

/* sasl.oauthbearer.jwks.endpoint.refresh.ms: a key the provider retired
 * stops verifying without any token asking for a refresh. */
TEST(periodic_refresh)
{
    char url[128], err[256], who[256];
    snprintf(url, sizeof url, "file://%s", jwks_path);
    ls_oauth_opts_t o = {.jwks_url = url, .refresh_ms = 20};
    ls_oauth_t *a = ls_oauth_open(&o, err, sizeof err);
    const char *c = "{\"sub\":\"erin\",\"exp\":1900000600}";
    CHECK_EQ_INT(check(a, ec256, "ES256", "e1", c, who, err), LS_OK);
    FILE *f = fopen(jwks_path, "w");
    fprintf(f, "{\"keys\":[");
    jwk(f, rsa1, "r1");
    fprintf(f, "]}");
    fclose(f);
    ls_status st = LS_OK;
    for (int i = 0; i < 600 && st == LS_OK; i++) {
        st = check(a, ec256, "ES256", "e1", c, who, err);
        if (st == LS_OK) usleep(20000);
    }
    CHECK_EQ_INT(st, LS_EINVAL);
    CHECK(strstr(err, "kid"));
    write_jwks(false);
    ls_oauth_close(a);
}

TEST(unreachable_jwks)
{
    char err[256], who[256];
    ls_oauth_opts_t o = {.jwks_url = "file:///nonexistent/jwks.json"};
    ls_oauth_t *a = ls_oauth_open(&o, err, sizeof err);
    CHECK(a);
    CHECK_EQ_INT(check(a, rsa1, "RS256", "r1", "{\"sub\":\"a\",\"exp\":1900000600}", who, err),
                 LS_EINVAL);
    ls_oauth_close(a);
    o.jwks_url = "ftp://example/jwks";
    CHECK(!ls_oauth_open(&o, err, sizeof err));
    CHECK(strstr(err, "sasl.oauthbearer.jwks.endpoint.url"));
}

TEST(client_first_message)
{
    const char *tok;
    size_t tl;
    const char m1[] = "n,,\x01"
                      "auth=Bearer abc.def.ghi\x01\x01";
    CHECK_EQ_INT(ls_oauth_client_first((const uint8_t *)m1, sizeof m1 - 1, &tok, &tl), 0);
    CHECK(tl == 11 && memcmp(tok, "abc.def.ghi", 11) == 0);
    const char m2[] = "n,a=alice,\x01host=h\x01"
                      "auth=Bearer T\x01port=9\x01\x01";
    CHECK_EQ_INT(ls_oauth_client_first((const uint8_t *)m2, sizeof m2 - 1, &tok, &tl), 0);
    CHECK(tl == 1 && *tok == 'T');
    static const char *bad[] = {"",
                                "n,,",
                                "n,,\x01\x01",
                                "x,,\x01"
                                "auth=Bearer T\x01\x01",
                                "n,,\x01"
                                "auth=Bearer T\x01",
                                "n,,\x01"
                                "auth=Bearer T"};
    /* exact-size heap copies, so a read past the end is caught under ASan
     * (fuzz_sasl found one after "n,,") */
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        size_t n = strlen(bad[i]);
        uint8_t *m = ls_malloc(n ? n : 1);
        memcpy(m, bad[i], n);
        int rc = ls_oauth_client_first(m, n, &tok, &tl);
        ls_free(m);
        CHECK_EQ_INT(rc, -1);
    }
}

/* The SASL exchange with the current clock: success gives the user and the
 * expiry; a bad token gets the invalid_token challenge, then fails. */
TEST(sasl_exchange)
{
    ls_oauth_t *a = open_validator(NULL, NULL, NULL);
    char claims[128], hdr[] = "{\"alg\":\"RS256\",\"kid\":\"r1\"}", err[640];
    long long exp = (long long)time(NULL) + 600;
    snprintf(claims, sizeof claims, "{\"sub\":\"dave\",\"exp\":%lld}", exp);
    char *t = mint(rsa1, "RS256", hdr, claims);
    ls_buf_t msg, out;
    ls_buf_init(&msg);
    ls_buf_init(&out);
    ls_buf_append(&msg,
                  "n,,\x01"
                  "auth=Bearer ",
                  16);
    ls_buf_append(&msg, t, strlen(t));
    ls_buf_append(&msg, "\x01\x01", 2);
    ls_sasl_session_t *s = ls_sasl_session_new(LS_SASL_OAUTHBEARER, a);
    CHECK_EQ_INT(ls_sasl_step(s, NULL, msg.data, msg.len, &out, err, sizeof err), LS_SASL_SUCCESS);
    CHECK(strcmp(s->user, "dave") == 0);
    CHECK_EQ_INT(s->expires_ms, exp * 1000);
    ls_sasl_session_free(s);
    /* a corrupted signature */
    msg.data[msg.len - 4] ^= 1;
    s = ls_sasl_session_new(LS_SASL_OAUTHBEARER, a);
    CHECK_EQ_INT(ls_sasl_step(s, NULL, msg.data, msg.len, &out, err, sizeof err), LS_SASL_CONTINUE);
    CHECK(out.len == 26 && memcmp(out.data, "{\"status\":\"invalid_token\"}", 26) == 0);
    CHECK_EQ_INT(ls_sasl_step(s, NULL, (const uint8_t *)"\x01", 1, &out, err, sizeof err),
                 LS_SASL_FAILURE);
    CHECK(strstr(err, "Authentication failed"));
    CHECK(s->user[0] == 0);
    ls_sasl_session_free(s);
    ls_free(t);
    ls_buf_free(&msg);
    ls_buf_free(&out);
    ls_oauth_close(a);
}

TEST(mechanism_list)
{
    unsigned m;
    char err[200];
    CHECK_EQ_INT(ls_sasl_mechs_parse("SCRAM-SHA-256,OAUTHBEARER", &m, err, sizeof err), 0);
    CHECK(m == (LS_SASL_SCRAM_SHA_256 | LS_SASL_OAUTHBEARER));
}

/* Kafka's settings are applied; its unsecured/custom validator ones are
 * refused by name, not stored and ignored. */
TEST(settings)
{
    ls_config_t c;
    ls_config_init(&c, &ls_broker_settings);
    char err[512];
    CHECK_EQ_INT(ls_config_set(&c, "sasl.oauthbearer.expected.audience", "kafka", err, sizeof err),
                 0);
    CHECK(strcmp(c.oauth_expected_audience, "kafka") == 0);
    CHECK_EQ_INT(c.oauth_clock_skew_s, 30);
    CHECK(strcmp(c.oauth_sub_claim, "sub") == 0);
    const char *k = "listener.name.sasl_ssl.oauthbearer.sasl.server.callback.handler.class";
    CHECK_EQ_INT(ls_config_set(&c, k,
                               "org.apache.kafka.common.security.oauthbearer."
                               "OAuthBearerValidatorCallbackHandler",
                               err, sizeof err),
                 LS_EINVAL);
    CHECK(strstr(err, k) && strstr(err, "not supported"));
    ls_config_free(&c);
}

int main(void)
{
    rsa1 = EVP_RSA_gen(2048);
    rsa2 = EVP_RSA_gen(2048);
    ec256 = EVP_EC_gen("P-256");
    ec384 = EVP_EC_gen("P-384");
    snprintf(jwks_path, sizeof jwks_path, "/tmp/test_oauth_%d.json", (int)getpid());
    write_jwks(false);
    RUN(accepted_algorithms);
    RUN(refused_tokens);
    RUN(clock_skew);
    RUN(sub_claim_name);
    RUN(malformed);
    RUN(unknown_kid_and_rotation);
    RUN(periodic_refresh);
    RUN(unreachable_jwks);
    RUN(client_first_message);
    RUN(sasl_exchange);
    RUN(mechanism_list);
    RUN(settings);
    unlink(jwks_path);
    EVP_PKEY_free(rsa1);
    EVP_PKEY_free(rsa2);
    EVP_PKEY_free(ec256);
    EVP_PKEY_free(ec384);
    UNIT_DONE();
}
