/* SASL/SCRAM: RFC 7677 vector, round trips of both SCRAM mechanisms and PLAIN
 * against credentials in a metadata store, and bad input (truncated and
 * mutated client messages, wrong proofs, a replayed client-final, authzid,
 * tokenauth), the credential store's round trip and compare-and-set. */
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdlib.h>

#include "base/alloc.h"
#include "base/base64.h"
#include "security/sasl.h"
#include "security/users.h"
#include "unit.h"
#include "meta/meta_keys.h"

static ls_scram_cred_t cred_of(ls_scram_mech m, const char *pw, const char *salt, int iters)
{
    uint8_t salted[LS_SCRAM_MAX_KEY];
    ls_scram_cred_t c;
    ls_scram_salt_password(m, pw, strlen(pw), (const uint8_t *)salt, strlen(salt), iters, salted);
    ls_scram_cred_from_salted(m, salted, ls_scram_key_len(m), (const uint8_t *)salt, strlen(salt),
                              iters, &c);
    return c;
}

/* An independent client: the client-final for server_first (RFC 5802 §3). */
static char *client_final(ls_scram_mech m, const char *pw, const char *bare, const char *sfirst,
                          char *server_sig64, size_t cap)
{
    const EVP_MD *md = m == LS_SCRAM_SHA_512 ? EVP_sha512() : EVP_sha256();
    size_t kl = ls_scram_key_len(m);
    const char *r = strstr(sfirst, "r="), *s = strstr(sfirst, ",s="), *i = strstr(sfirst, ",i=");
    if (!r || !s || !i) return NULL;
    char nonce[256], salt64[256];
    snprintf(nonce, sizeof nonce, "%.*s", (int)(s - r - 2), r + 2);
    snprintf(salt64, sizeof salt64, "%.*s", (int)(i - s - 3), s + 3);
    uint8_t *salt;
    size_t slen;
    if (ls_base64_decode(salt64, &salt, &slen) != 0) return NULL;
    uint8_t salted[64], ck[64], stored[64], sig[64], proof[64], sk[64], ssig[64];
    unsigned int l;
    PKCS5_PBKDF2_HMAC(pw, (int)strlen(pw), salt, (int)slen, atoi(i + 3), md, (int)kl, salted);
    ls_free(salt);
    HMAC(md, salted, (int)kl, (const uint8_t *)"Client Key", 10, ck, &l);
    EVP_Digest(ck, kl, stored, &l, md, NULL);
    char without[512], am[2048];
    snprintf(without, sizeof without, "c=biws,r=%s", nonce);
    snprintf(am, sizeof am, "%s,%s,%s", bare, sfirst, without);
    HMAC(md, stored, (int)kl, (const uint8_t *)am, strlen(am), sig, &l);
    for (size_t k = 0; k < kl; k++)
        proof[k] = ck[k] ^ sig[k];
    HMAC(md, salted, (int)kl, (const uint8_t *)"Server Key", 10, sk, &l);
    HMAC(md, sk, (int)kl, (const uint8_t *)am, strlen(am), ssig, &l);
    char *p64 = ls_base64_encode(proof, kl), *s64 = ls_base64_encode(ssig, kl);
    snprintf(server_sig64, cap, "v=%s", s64);
    char *out = ls_malloc(strlen(without) + strlen(p64) + 4);
    sprintf(out, "%s,p=%s", without, p64);
    ls_free(p64);
    ls_free(s64);
    return out;
}

static ls_meta_t *store_with(const char *user, const char *pw)
{
    ls_meta_t *m = ls_meta_mem_open();
    ls_user_t u = {.name = ls_strdup(user)};
    u.has[LS_SCRAM_SHA_256] = u.has[LS_SCRAM_SHA_512] = true;
    u.cred[LS_SCRAM_SHA_256] = cred_of(LS_SCRAM_SHA_256, pw, "salt-256", 4096);
    u.cred[LS_SCRAM_SHA_512] = cred_of(LS_SCRAM_SHA_512, pw, "salt-512", 8192);
    ls_users_put(m, &u, 0);
    ls_user_free(&u);
    return m;
}

TEST(rfc7677_vector)
{
    uint8_t *salt;
    size_t slen;
    CHECK(ls_base64_decode("W22ZaJ0SNY7soEsUEjb6gQ==", &salt, &slen) == 0);
    uint8_t salted[64];
    ls_scram_cred_t c;
    CHECK(ls_scram_salt_password(LS_SCRAM_SHA_256, "pencil", 6, salt, slen, 4096, salted) == LS_OK);
    CHECK(ls_scram_cred_from_salted(LS_SCRAM_SHA_256, salted, 32, salt, slen, 4096, &c) == LS_OK);
    ls_free(salt);
    ls_scram_server_t s;
    char err[200];
    ls_scram_server_init(&s, LS_SCRAM_SHA_256);
    const char *cf = "n,,n=user,r=rOprNGfwEbeRWgbNEkqO";
    CHECK(ls_scram_server_client_first(&s, (const uint8_t *)cf, strlen(cf), err, sizeof err) ==
          LS_OK);
    CHECK(strcmp(s.user, "user") == 0);
    /* the RFC's server nonce instead of a random one */
    s.cred = c;
    s.user_known = true;
    ls_free(s.nonce);
    s.nonce = ls_strdup("rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0");
    s.server_first = ls_strdup(
        "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096");
    s.state = LS_SCRAM_ST_FINAL;
    const char *fin =
        "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+"
        "Ute9ytag9zjfMHgsqmmiz7AndVQ=";
    char *out = NULL;
    CHECK(ls_scram_server_client_final(&s, (const uint8_t *)fin, strlen(fin), &out, err,
                                       sizeof err) == LS_OK);
    CHECK(strcmp(out, "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=") == 0);
    ls_free(out);
    ls_scram_server_free(&s);
    /* our password check agrees with the vector's credential */
    CHECK(ls_scram_cred_check_password(&c, "pencil", 6));
    CHECK(!ls_scram_cred_check_password(&c, "pencil2", 7));
}

/* A whole SCRAM exchange through ls_sasl_step; returns the result of the
 * final step, and the final client message in *final_out when asked. */
static ls_sasl_result scram_login(ls_meta_t *m, ls_sasl_mech mech, const char *user, const char *pw,
                                  const char *cnonce, char **final_out, char *err, size_t errlen)
{
    ls_scram_mech sm = mech == LS_SASL_SCRAM_SHA_512 ? LS_SCRAM_SHA_512 : LS_SCRAM_SHA_256;
    ls_sasl_session_t *s = ls_sasl_session_new(mech, NULL);
    char cf[320], bare[300];
    snprintf(bare, sizeof bare, "n=%s,r=%s", user, cnonce);
    snprintf(cf, sizeof cf, "n,,%s", bare);
    ls_buf_t out;
    ls_buf_init(&out);
    ls_sasl_result r = ls_sasl_step(s, m, (const uint8_t *)cf, strlen(cf), &out, err, errlen);
    if (r != LS_SASL_CONTINUE) {
        ls_buf_free(&out);
        ls_sasl_session_free(s);
        return r;
    }
    ls_buf_append_u8(&out, 0);
    char sig[200];
    char *fin = final_out && *final_out
                    ? ls_strdup(*final_out)
                    : client_final(sm, pw, bare, (char *)out.data, sig, sizeof sig);
    ls_buf_t out2;
    ls_buf_init(&out2);
    r = ls_sasl_step(s, m, (const uint8_t *)fin, strlen(fin), &out2, err, errlen);
    if (r == LS_SASL_SUCCESS) {
        ls_buf_append_u8(&out2, 0);
        if (strcmp((char *)out2.data, sig) != 0) r = LS_SASL_FAILURE; /* server proof checked */
        if (strcmp(s->user, user) != 0) r = LS_SASL_FAILURE;
    }
    if (final_out && !*final_out)
        *final_out = fin;
    else
        ls_free(fin);
    ls_buf_free(&out);
    ls_buf_free(&out2);
    ls_sasl_session_free(s);
    return r;
}

TEST(scram_round_trips)
{
    ls_meta_t *m = store_with("alice", "s3cret");
    char err[300];
    CHECK(scram_login(m, LS_SASL_SCRAM_SHA_256, "alice", "s3cret", "abc", NULL, err, sizeof err) ==
          LS_SASL_SUCCESS);
    CHECK(scram_login(m, LS_SASL_SCRAM_SHA_512, "alice", "s3cret", "xyz", NULL, err, sizeof err) ==
          LS_SASL_SUCCESS);
    /* wrong password, unknown user: the same failure at the same step */
    CHECK(scram_login(m, LS_SASL_SCRAM_SHA_256, "alice", "nope", "abc", NULL, err, sizeof err) ==
          LS_SASL_FAILURE);
    CHECK(strstr(err, "invalid credentials with SASL mechanism SCRAM-SHA-256"));
    char err2[300];
    CHECK(scram_login(m, LS_SASL_SCRAM_SHA_512, "mallory", "x", "abc", NULL, err2, sizeof err2) ==
          LS_SASL_FAILURE);
    CHECK(strstr(err2, "invalid credentials with SASL mechanism SCRAM-SHA-512"));
    CHECK(!strstr(err, "s3cret") && !strstr(err, "nope"));
    /* a replayed client-final: the server nonce differs in a new exchange */
    char *fin = NULL;
    CHECK(scram_login(m, LS_SASL_SCRAM_SHA_256, "alice", "s3cret", "abc", &fin, err, sizeof err) ==
          LS_SASL_SUCCESS);
    CHECK(scram_login(m, LS_SASL_SCRAM_SHA_256, "alice", "s3cret", "abc", &fin, err, sizeof err) ==
          LS_SASL_FAILURE);
    CHECK(strstr(err, "nonce"));
    ls_free(fin);
    ls_meta_close(m);
}

static ls_status first(const char *msg, char *user, char *err, size_t errlen)
{
    ls_scram_server_t s;
    ls_scram_server_init(&s, LS_SCRAM_SHA_256);
    ls_status st = ls_scram_server_client_first(&s, (const uint8_t *)msg, strlen(msg), err, errlen);
    if (user) strcpy(user, s.user);
    ls_scram_server_free(&s);
    return st;
}

TEST(scram_bad_client_first)
{
    char err[200], user[256];
    CHECK(first("n,,n=al=2Cice=3D,r=abc", user, err, sizeof err) == LS_OK);
    CHECK(strcmp(user, "al,ice=") == 0);
    CHECK(first("n,a=bob,n=bob,r=abc", user, err, sizeof err) == LS_OK);
    CHECK(first("n,a=bob,n=alice,r=abc", NULL, err, sizeof err) == LS_EINVAL);
    CHECK(strstr(err, "authorization id"));
    CHECK(first("y,,n=alice,r=abc", NULL, err, sizeof err) == LS_EINVAL);
    CHECK(strstr(err, "channel binding"));
    CHECK(first("p=tls-unique,,n=alice,r=abc", NULL, err, sizeof err) == LS_EINVAL);
    CHECK(first("n,,n=alice,r=abc,tokenauth=true", NULL, err, sizeof err) == LS_EINVAL);
    CHECK(strstr(err, "tokenauth"));
    CHECK(first("n,,n=alice,r=abc,foo=bar", NULL, err, sizeof err) == LS_OK); /* ignored */
    CHECK(first("n,,m=x,n=alice,r=abc", NULL, err, sizeof err) == LS_EINVAL);
    CHECK(first("n,,n=al=ZZ,r=abc", NULL, err, sizeof err) == LS_EINVAL);
    CHECK(first("n,,n=,r=abc", NULL, err, sizeof err) == LS_EINVAL);
    CHECK(first("n,,n=alice,r=", NULL, err, sizeof err) == LS_EINVAL);
    CHECK(first("n,,n=alice,r=abc,", NULL, err, sizeof err) == LS_EINVAL);
    CHECK(first("n,,n=alice", NULL, err, sizeof err) == LS_EINVAL);
    /* every truncation and single-byte mutation: a clean answer, never a crash */
    const char *good = "n,a=alice,n=alice,r=fyko+d2lbbFgONRv9qkxdawL,ext=1";
    size_t n = strlen(good);
    for (size_t cut = 0; cut < n; cut++) {
        char buf[128];
        memcpy(buf, good, cut);
        buf[cut] = 0;
        /* complete only once the nonce has begun */
        ls_status st = first(buf, NULL, err, sizeof err);
        CHECK(st == LS_OK || st == LS_EINVAL);
        if (cut <= (size_t)(strstr(good, "r=") - good) + 2) CHECK(st == LS_EINVAL);
    }
    const char subst[] = {0, ',', '=', 'n', 'r', '\xff', ' '};
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < sizeof subst; k++) {
            uint8_t buf[128];
            memcpy(buf, good, n);
            buf[i] = (uint8_t)subst[k];
            ls_scram_server_t s;
            ls_scram_server_init(&s, LS_SCRAM_SHA_256);
            ls_status st = ls_scram_server_client_first(&s, buf, n, err, sizeof err);
            CHECK(st == LS_OK || st == LS_EINVAL);
            if (st == LS_OK) {
                char *sf = ls_scram_server_first(&s, NULL);
                CHECK(sf != NULL);
                char *out;
                CHECK(ls_scram_server_client_final(&s, buf, n, &out, err, sizeof err) != LS_OK);
                ls_free(sf);
            }
            ls_scram_server_free(&s);
        }
}

TEST(scram_bad_client_final)
{
    ls_meta_t *m = store_with("alice", "pw");
    const char *bad[] = {"",
                         "c=biws",
                         "c=biws,r=",
                         "c=eSws,r=abc,p=AAAA",
                         "c=biws,r=abcWRONG,p=AAAA",
                         "c=biws,r=%s,p=",
                         "c=biws,r=%s,p=!!!",
                         "c=biws,r=%s",
                         "c=biws,r=%s,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ls_sasl_session_t *s = ls_sasl_session_new(LS_SASL_SCRAM_SHA_256, NULL);
        ls_buf_t out;
        ls_buf_init(&out);
        char err[300];
        const char *cf = "n,,n=alice,r=abc";
        CHECK(ls_sasl_step(s, m, (const uint8_t *)cf, strlen(cf), &out, err, sizeof err) ==
              LS_SASL_CONTINUE);
        ls_buf_append_u8(&out, 0);
        char nonce[200], msg[400];
        snprintf(nonce, sizeof nonce, "%.*s",
                 (int)(strchr((char *)out.data, ',') - (char *)out.data - 2), (char *)out.data + 2);
        snprintf(msg, sizeof msg, bad[i], nonce);
        ls_buf_t out2;
        ls_buf_init(&out2);
        CHECK(ls_sasl_step(s, m, (const uint8_t *)msg, strlen(msg), &out2, err, sizeof err) ==
              LS_SASL_FAILURE);
        CHECK(strncmp(err, "Authentication failed", 21) == 0);
        /* and nothing after a failure */
        CHECK(ls_sasl_step(s, m, (const uint8_t *)cf, strlen(cf), &out2, err, sizeof err) ==
              LS_SASL_FAILURE);
        ls_buf_free(&out);
        ls_buf_free(&out2);
        ls_sasl_session_free(s);
    }
    ls_meta_close(m);
}

static ls_sasl_result plain(ls_meta_t *m, const char *tok, size_t n, char *err, size_t errlen)
{
    ls_sasl_session_t *s = ls_sasl_session_new(LS_SASL_PLAIN, NULL);
    ls_buf_t out;
    ls_buf_init(&out);
    ls_sasl_result r = ls_sasl_step(s, m, (const uint8_t *)tok, n, &out, err, errlen);
    ls_buf_free(&out);
    ls_sasl_session_free(s);
    return r;
}

TEST(plain_against_scram_credentials)
{
    ls_meta_t *m = store_with("alice", "s3cret");
    char err[300];
    CHECK(plain(m, "\0alice\0s3cret", 13, err, sizeof err) == LS_SASL_SUCCESS);
    CHECK(plain(m, "alice\0alice\0s3cret", 18, err, sizeof err) == LS_SASL_SUCCESS);
    CHECK(plain(m, "bob\0alice\0s3cret", 16, err, sizeof err) == LS_SASL_FAILURE);
    CHECK(strstr(err, "authorization id"));
    CHECK(plain(m, "\0alice\0wrong", 12, err, sizeof err) == LS_SASL_FAILURE);
    CHECK(strstr(err, "Invalid username or password") && !strstr(err, "wrong"));
    CHECK(plain(m, "\0nobody\0s3cret", 14, err, sizeof err) == LS_SASL_FAILURE);
    CHECK(strstr(err, "Invalid username or password"));
    CHECK(plain(m, "\0alice", 6, err, sizeof err) == LS_SASL_FAILURE);
    CHECK(plain(m, "\0\0s3cret", 8, err, sizeof err) == LS_SASL_FAILURE);
    CHECK(plain(m, "\0alice\0", 7, err, sizeof err) == LS_SASL_FAILURE);
    CHECK(plain(m, "\0alice\0s3cret\0", 14, err, sizeof err) == LS_SASL_FAILURE);
    CHECK(plain(m, "", 0, err, sizeof err) == LS_SASL_FAILURE);
    /* a user with only SCRAM-SHA-512 logs in with PLAIN too */
    ls_user_t u;
    CHECK(ls_users_get(m, "alice", &u, NULL) == LS_OK);
    u.has[LS_SCRAM_SHA_256] = false;
    int64_t rev;
    ls_user_free(&u);
    CHECK(ls_users_get(m, "alice", &u, &rev) == LS_OK);
    u.has[LS_SCRAM_SHA_256] = false;
    CHECK(ls_users_put(m, &u, rev) == LS_OK);
    ls_user_free(&u);
    CHECK(plain(m, "\0alice\0s3cret", 13, err, sizeof err) == LS_SASL_SUCCESS);
    ls_meta_close(m);
}

TEST(credential_store)
{
    ls_meta_t *m = ls_meta_mem_open();
    ls_user_t u = {.name = ls_strdup("a/b c")}, got;
    u.has[LS_SCRAM_SHA_512] = true;
    u.cred[LS_SCRAM_SHA_512] = cred_of(LS_SCRAM_SHA_512, "hunter2", "NaCl", 4096);
    CHECK(ls_users_put(m, &u, 0) == LS_OK);
    CHECK(ls_users_put(m, &u, 0) == LS_ECONFLICT); /* exists now */
    int64_t rev;
    CHECK(ls_users_get(m, "a/b c", &got, &rev) == LS_OK);
    CHECK(rev > 0 && strcmp(got.name, "a/b c") == 0);
    CHECK(got.has[LS_SCRAM_SHA_512] && !got.has[LS_SCRAM_SHA_256]);
    CHECK(got.cred[LS_SCRAM_SHA_512].iterations == 4096);
    CHECK(memcmp(got.cred[LS_SCRAM_SHA_512].stored_key, u.cred[LS_SCRAM_SHA_512].stored_key, 64) ==
          0);
    CHECK(ls_scram_cred_check_password(&got.cred[LS_SCRAM_SHA_512], "hunter2", 7));
    ls_user_free(&got);
    /* what is stored holds neither the password nor the salted password */
    ls_kvlist_t l;
    CHECK(ls_meta_scan_prefix(m, LS_KEY_USERS, 0, &l) == LS_OK);
    CHECK(l.n == 1);
    CHECK(!strstr((char *)l.v[0].val, "hunter2"));
    uint8_t salted[64];
    ls_scram_salt_password(LS_SCRAM_SHA_512, "hunter2", 7, (const uint8_t *)"NaCl", 4, 4096,
                           salted);
    char *s64 = ls_base64_encode(salted, 64);
    CHECK(!strstr((char *)l.v[0].val, s64));
    ls_free(s64);
    ls_kvlist_free(&l);
    ls_user_t *all;
    size_t n;
    ls_user_t v = {.name = ls_strdup("b")};
    v.has[LS_SCRAM_SHA_256] = true;
    v.cred[LS_SCRAM_SHA_256] = cred_of(LS_SCRAM_SHA_256, "x", "y", 4096);
    CHECK(ls_users_put(m, &v, 0) == LS_OK);
    CHECK(ls_users_list(m, &all, &n) == LS_OK);
    CHECK_EQ_INT(n, 2);
    for (size_t i = 0; i < n; i++)
        ls_user_free(&all[i]);
    ls_free(all);
    /* no credential left: the key goes */
    u.has[LS_SCRAM_SHA_512] = false;
    CHECK(ls_users_put(m, &u, rev) == LS_OK);
    CHECK(ls_users_get(m, "a/b c", &got, NULL) == LS_ENOTFOUND);
    ls_user_free(&u);
    ls_user_free(&v);
    ls_meta_close(m);
}

TEST(mechanism_lists)
{
    unsigned set;
    char err[200];
    CHECK(ls_sasl_mechs_parse(LS_SASL_DEFAULT_MECHANISMS, &set, err, sizeof err) == 0);
    CHECK(set == (LS_SASL_SCRAM_SHA_256 | LS_SASL_SCRAM_SHA_512));
    CHECK(ls_sasl_mechs_parse("PLAIN, SCRAM-SHA-512", &set, err, sizeof err) == 0);
    CHECK(set == (LS_SASL_PLAIN | LS_SASL_SCRAM_SHA_512));
    CHECK(ls_sasl_mechs_parse("GSSAPI", &set, err, sizeof err) == LS_EINVAL);
    CHECK(strstr(err, "GSSAPI") && strstr(err, "not supported"));
    CHECK(ls_sasl_mechs_parse("PLAIN,XOAUTH2", &set, err, sizeof err) == LS_EINVAL);
    CHECK(strstr(err, "XOAUTH2"));
    CHECK(ls_sasl_mechs_parse(" , ", &set, err, sizeof err) == LS_EINVAL);
    const char *names[LS_SASL_NMECHS];
    CHECK_EQ_INT(ls_sasl_mech_names(LS_SASL_PLAIN | LS_SASL_SCRAM_SHA_256, names), 2);
    CHECK(strcmp(names[0], "PLAIN") == 0 && strcmp(names[1], "SCRAM-SHA-256") == 0);
}

int main(void)
{
    RUN(rfc7677_vector);
    RUN(scram_round_trips);
    RUN(scram_bad_client_first);
    RUN(scram_bad_client_final);
    RUN(plain_against_scram_credentials);
    RUN(credential_store);
    RUN(mechanism_lists);
    UNIT_DONE();
}
