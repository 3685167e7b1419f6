/* HTTP Basic authentication; contract and cache in http_basic.h. */
#include "security/http_basic.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "base/alloc.h"
#include "base/base64.h"
#include "base/clock.h"
#include "security/users.h"

typedef struct slot {
    char user[256];
    uint8_t pw_mac[32];                   /* HMAC-SHA-256(process key, password) */
    uint8_t stored_key[LS_SCRAM_MAX_KEY]; /* the credential it was checked against */
    int64_t until_ms;                     /* monotonic; 0: empty */
} slot_t;

struct ls_http_basic {
    ls_meta_t *meta;
    uint8_t key[32];
    ls_scram_cred_t decoy; /* checked for unknown users: they cost a PBKDF2 too */
    pthread_mutex_t mu;
    slot_t slots[LS_HTTP_BASIC_CACHE_SLOTS];
};

ls_http_basic_t *ls_http_basic_new(ls_meta_t *meta)
{
    ls_http_basic_t *b = LS_NEW(ls_http_basic_t);
    b->meta = meta;
    uint8_t salted[32], salt[16];
    if (ls_scram_random(b->key, sizeof b->key) != LS_OK ||
        ls_scram_random(salted, sizeof salted) != LS_OK ||
        ls_scram_random(salt, sizeof salt) != LS_OK ||
        ls_scram_cred_from_salted(LS_SCRAM_SHA_256, salted, sizeof salted, salt, sizeof salt,
                                  LS_SCRAM_MIN_ITERATIONS, &b->decoy) != LS_OK) {
        ls_free(b);
        return NULL;
    }
    pthread_mutex_init(&b->mu, NULL);
    return b;
}

void ls_http_basic_free(ls_http_basic_t *b)
{
    if (!b) return;
    OPENSSL_cleanse(b->key, sizeof b->key);
    pthread_mutex_destroy(&b->mu);
    ls_free(b);
}

static void pw_mac(const ls_http_basic_t *b, const char *pw, size_t n, uint8_t out[32])
{
    unsigned len = 32;
    HMAC(EVP_sha256(), b->key, sizeof b->key, (const uint8_t *)pw, n, out, &len);
}

/* Whether a live slot says user/password was right against stored_key. */
static bool cached(ls_http_basic_t *b, const char *user, const uint8_t mac[32],
                   const uint8_t *stored_key, size_t klen)
{
    int64_t now = ls_clock_mono_ms();
    bool hit = false;
    pthread_mutex_lock(&b->mu);
    for (size_t i = 0; i < LS_HTTP_BASIC_CACHE_SLOTS && !hit; i++) {
        const slot_t *s = &b->slots[i];
        hit = s->until_ms > now && !strcmp(s->user, user) && !CRYPTO_memcmp(s->pw_mac, mac, 32) &&
              !CRYPTO_memcmp(s->stored_key, stored_key, klen);
    }
    pthread_mutex_unlock(&b->mu);
    return hit;
}

/* Remembers a right password, in the user's slot or the oldest one. */
static void remember(ls_http_basic_t *b, const char *user, const uint8_t mac[32],
                     const uint8_t *stored_key, size_t klen)
{
    pthread_mutex_lock(&b->mu);
    slot_t *pick = &b->slots[0];
    for (size_t i = 0; i < LS_HTTP_BASIC_CACHE_SLOTS; i++) {
        slot_t *s = &b->slots[i];
        if (!strcmp(s->user, user)) {
            pick = s;
            break;
        }
        if (s->until_ms < pick->until_ms) pick = s;
    }
    snprintf(pick->user, sizeof pick->user, "%s", user);
    memcpy(pick->pw_mac, mac, 32);
    memset(pick->stored_key, 0, sizeof pick->stored_key);
    memcpy(pick->stored_key, stored_key, klen);
    pick->until_ms = ls_clock_mono_ms() + LS_HTTP_BASIC_CACHE_MS;
    pthread_mutex_unlock(&b->mu);
}

bool ls_http_basic_check(void *arg, const char *authorization, char *principal, size_t pcap,
                         char *reason, size_t rcap)
{
    ls_http_basic_t *b = arg;
    if (!authorization) {
        snprintf(reason, rcap, "authentication required (HTTP Basic with a SCRAM user)");
        return false;
    }
    if (strncasecmp(authorization, "Basic ", 6) != 0) {
        snprintf(reason, rcap, "unsupported Authorization scheme (this listener takes Basic)");
        return false;
    }
    const char *p = authorization + 6;
    while (*p == ' ')
        p++;
    uint8_t *dec = NULL;
    size_t dlen = 0;
    char *colon = NULL;
    if (ls_base64_decode(p, &dec, &dlen) != 0 || !(colon = memchr(dec, ':', dlen)) ||
        colon == (char *)dec || (size_t)(colon - (char *)dec) >= sizeof((slot_t *)0)->user ||
        memchr(dec, 0, dlen)) {
        if (dec) OPENSSL_cleanse(dec, dlen);
        ls_free(dec);
        snprintf(reason, rcap, "malformed Basic credentials (expected base64 of user:password)");
        return false;
    }
    *colon = 0;
    const char *user = (const char *)dec, *pw = colon + 1;
    size_t pwlen = dlen - (size_t)(colon + 1 - (char *)dec);
    bool ok = false;
    ls_user_t u = {0};
    if (ls_users_get(b->meta, user, &u, NULL) == LS_OK) {
        const ls_scram_cred_t *cred = u.has[LS_SCRAM_SHA_256]   ? &u.cred[LS_SCRAM_SHA_256]
                                      : u.has[LS_SCRAM_SHA_512] ? &u.cred[LS_SCRAM_SHA_512]
                                                                : NULL;
        if (cred) {
            size_t klen = ls_scram_key_len(cred->mech);
            uint8_t mac[32];
            pw_mac(b, pw, pwlen, mac);
            ok = cached(b, user, mac, cred->stored_key, klen);
            if (!ok && ls_scram_cred_check_password(cred, pw, pwlen)) {
                remember(b, user, mac, cred->stored_key, klen);
                ok = true;
            }
            OPENSSL_cleanse(mac, sizeof mac);
        }
        ls_user_free(&u);
    } else {
        /* no such user: pay the same PBKDF2, so timing does not tell who exists */
        (void)ls_scram_cred_check_password(&b->decoy, pw, pwlen);
    }
    /* an unknown user and a wrong password read alike */
    if (ok)
        snprintf(principal, pcap, "User:%s", user);
    else
        snprintf(reason, rcap, "wrong user name or password");
    OPENSSL_cleanse(dec, dlen);
    ls_free(dec);
    return ok;
}
