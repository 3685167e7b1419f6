/* SCRAM credentials and the server side of an exchange (design note in
 * scram.h). Messages are parsed strictly: anything RFC 5802's grammar (as
 * Kafka restricts it) does not allow fails the exchange with a reason that
 * names the attribute, never the secret parts. */
#include "security/scram.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/base64.h"
#include "base/buf.h"

#define SERVER_NONCE_BYTES 24
#define MOCK_SALT_BYTES 16

const char *ls_scram_mech_name(ls_scram_mech m)
{
    switch (m) {
    case LS_SCRAM_SHA_256: return "SCRAM-SHA-256";
    case LS_SCRAM_SHA_512: return "SCRAM-SHA-512";
    }
    return NULL;
}

bool ls_scram_mech_from_code(int code, ls_scram_mech *out)
{
    if (code != LS_SCRAM_SHA_256 && code != LS_SCRAM_SHA_512) return false;
    *out = (ls_scram_mech)code;
    return true;
}

bool ls_scram_mech_from_name(const char *name, size_t len, ls_scram_mech *out)
{
    for (int code = LS_SCRAM_SHA_256; code <= LS_SCRAM_SHA_512; code++) {
        const char *n = ls_scram_mech_name((ls_scram_mech)code);
        if (strlen(n) == len && memcmp(n, name, len) == 0) {
            *out = (ls_scram_mech)code;
            return true;
        }
    }
    return false;
}

static const EVP_MD *mech_md(ls_scram_mech m)
{
    return m == LS_SCRAM_SHA_512 ? EVP_sha512() : EVP_sha256();
}

size_t ls_scram_key_len(ls_scram_mech m) { return m == LS_SCRAM_SHA_512 ? 64 : 32; }

static void hmac(ls_scram_mech m, const uint8_t *key, size_t klen, const void *data, size_t n,
                 uint8_t *out)
{
    unsigned int len = 0;
    HMAC(mech_md(m), key, (int)klen, data, n, out, &len);
}

static void digest(ls_scram_mech m, const uint8_t *data, size_t n, uint8_t *out)
{
    unsigned int len = 0;
    EVP_Digest(data, n, out, &len, mech_md(m), NULL);
}

ls_status ls_scram_salt_password(ls_scram_mech m, const void *password, size_t plen,
                                 const uint8_t *salt, size_t salt_len, int32_t iterations,
                                 uint8_t *out)
{
    if (salt_len == 0 || iterations < 1) return LS_EINVAL;
    if (PKCS5_PBKDF2_HMAC(password, (int)plen, salt, (int)salt_len, iterations, mech_md(m),
                          (int)ls_scram_key_len(m), out) != 1)
        return LS_EIO;
    return LS_OK;
}

ls_status ls_scram_cred_from_salted(ls_scram_mech m, const uint8_t *salted, size_t salted_len,
                                    const uint8_t *salt, size_t salt_len, int32_t iterations,
                                    ls_scram_cred_t *out)
{
    size_t kl = ls_scram_key_len(m);
    if (salted_len != kl || salt_len == 0 || salt_len > LS_SCRAM_MAX_SALT || iterations < 1)
        return LS_EINVAL;
    memset(out, 0, sizeof *out);
    out->mech = m;
    out->iterations = iterations;
    memcpy(out->salt, salt, salt_len);
    out->salt_len = salt_len;
    uint8_t client_key[LS_SCRAM_MAX_KEY];
    hmac(m, salted, kl, "Client Key", 10, client_key);
    digest(m, client_key, kl, out->stored_key);
    hmac(m, salted, kl, "Server Key", 10, out->server_key);
    OPENSSL_cleanse(client_key, sizeof client_key);
    return LS_OK;
}

bool ls_scram_cred_check_password(const ls_scram_cred_t *cred, const void *password, size_t plen)
{
    uint8_t salted[LS_SCRAM_MAX_KEY];
    ls_scram_cred_t derived;
    bool ok =
        ls_scram_salt_password(cred->mech, password, plen, cred->salt, cred->salt_len,
                               cred->iterations, salted) == LS_OK &&
        ls_scram_cred_from_salted(cred->mech, salted, ls_scram_key_len(cred->mech), cred->salt,
                                  cred->salt_len, cred->iterations, &derived) == LS_OK &&
        CRYPTO_memcmp(derived.stored_key, cred->stored_key, ls_scram_key_len(cred->mech)) == 0;
    OPENSSL_cleanse(salted, sizeof salted);
    OPENSSL_cleanse(&derived, sizeof derived);
    return ok;
}

ls_status ls_scram_random(uint8_t *out, size_t n)
{
    return RAND_bytes(out, (int)n) == 1 ? LS_OK : LS_EIO;
}

/* ------------------------------------------------------------ exchange */

static char *buf_str(ls_buf_t *b)
{
    size_t n;
    ls_buf_append_u8(b, 0);
    return (char *)ls_buf_steal(b, &n);
}

/* Key of the made-up credentials of unknown users: random per process, so
 * the same unknown name always gets the same salt here (a client probing
 * twice sees no difference from a real user) without revealing anything. */
static uint8_t mock_key[32];
static pthread_once_t mock_once = PTHREAD_ONCE_INIT;
static void mock_init(void)
{
    if (RAND_bytes(mock_key, sizeof mock_key) != 1) memset(mock_key, 0x5a, sizeof mock_key);
}

void ls_scram_server_init(ls_scram_server_t *s, ls_scram_mech mech)
{
    memset(s, 0, sizeof *s);
    s->mech = mech;
    s->state = LS_SCRAM_ST_FIRST;
}

void ls_scram_server_free(ls_scram_server_t *s)
{
    ls_free(s->client_first_bare);
    ls_free(s->server_first);
    ls_free(s->gs2_header);
    ls_free(s->nonce);
    OPENSSL_cleanse(&s->cred, sizeof s->cred);
    memset(s, 0, sizeof *s);
    s->state = LS_SCRAM_ST_FAILED;
}

static ls_status fail(ls_scram_server_t *s, char *err, size_t errlen, const char *why)
{
    s->state = LS_SCRAM_ST_FAILED;
    snprintf(err, errlen, "%s", why);
    return LS_EINVAL;
}

/* A printable nonce: 0x21..0x7e except ','. */
static bool nonce_ok(const char *p, size_t n)
{
    if (n == 0) return false;
    for (size_t i = 0; i < n; i++)
        if (p[i] < 0x21 || p[i] > 0x7e || p[i] == ',') return false;
    return true;
}

/* Decodes a saslname (",", "=" escaped as =2C, =3D) into out. */
static bool saslname_decode(const char *p, size_t n, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        char ch = p[i];
        if (ch == '\0' || ch == ',') return false;
        if (ch == '=') {
            if (i + 2 >= n) return false;
            if (p[i + 1] == '2' && p[i + 2] == 'C')
                ch = ',';
            else if (p[i + 1] == '3' && p[i + 2] == 'D')
                ch = '=';
            else
                return false;
            i += 2;
        }
        if (o + 1 >= cap) return false;
        out[o++] = ch;
    }
    out[o] = '\0';
    return o > 0;
}

/* Next attribute of a comma-separated message: [*p, end) up to the next
 * ',' (or end). Returns its length and advances *p past the comma. */
static size_t next_attr(const char **p, const char *end, const char **start)
{
    *start = *p;
    const char *c = memchr(*p, ',', (size_t)(end - *p));
    size_t n = (size_t)((c ? c : end) - *p);
    *p = c ? c + 1 : end;
    return n;
}

ls_status ls_scram_server_client_first(ls_scram_server_t *s, const uint8_t *msg, size_t len,
                                       char *err, size_t errlen)
{
    if (s->state != LS_SCRAM_ST_FIRST) return fail(s, err, errlen, "unexpected client-first");
    const char *p = (const char *)msg, *end = p + len;
    if (memchr(p, '\0', len)) return fail(s, err, errlen, "client-first: NUL byte");
    const char *a;
    /* GS2 header: "n" (no channel binding), then an optional authzid */
    size_t n = next_attr(&p, end, &a);
    if (n != 1 || a[0] != 'n' || p >= end)
        return fail(s, err, errlen,
                    n >= 1 && (a[0] == 'y' || a[0] == 'p')
                        ? "client-first: channel binding is not supported"
                        : "client-first: bad GS2 header");
    char authzid[256] = "";
    n = next_attr(&p, end, &a);
    if (n > 0) {
        if (n < 3 || a[0] != 'a' || a[1] != '=' ||
            !saslname_decode(a + 2, n - 2, authzid, sizeof authzid))
            return fail(s, err, errlen, "client-first: bad authzid");
    }
    s->gs2_header = ls_malloc((size_t)(p - (const char *)msg) + 1);
    memcpy(s->gs2_header, msg, (size_t)(p - (const char *)msg));
    s->gs2_header[p - (const char *)msg] = '\0';
    const char *bare = p;
    n = next_attr(&p, end, &a);
    if (n >= 2 && a[0] == 'm' && a[1] == '=')
        return fail(s, err, errlen, "client-first: mandatory extension m= is not supported");
    if (n < 3 || a[0] != 'n' || a[1] != '=' ||
        !saslname_decode(a + 2, n - 2, s->user, sizeof s->user))
        return fail(s, err, errlen, "client-first: bad user name (n=)");
    n = next_attr(&p, end, &a);
    if (n < 3 || a[0] != 'r' || a[1] != '=' || !nonce_ok(a + 2, n - 2))
        return fail(s, err, errlen, "client-first: bad nonce (r=)");
    const char *cnonce = a + 2;
    size_t cnonce_len = n - 2;
    /* Kafka's SCRAM extensions (KIP-84): key=value after the nonce */
    while (p < end || (p == end && p[-1] == ',')) {
        n = next_attr(&p, end, &a);
        const char *eq = memchr(a, '=', n);
        if (!eq || eq == a) return fail(s, err, errlen, "client-first: bad extension");
        if ((size_t)(eq - a) == 9 && memcmp(a, "tokenauth", 9) == 0 && n == 14 &&
            memcmp(eq + 1, "true", 4) == 0)
            return fail(s, err, errlen,
                        "client-first: delegation tokens (tokenauth=true) are not supported");
        if (p == end) break;
    }
    if (authzid[0] && strcmp(authzid, s->user) != 0)
        return fail(s, err, errlen,
                    "Client requested an authorization id that is different from username");
    s->client_first_bare = ls_malloc((size_t)(end - bare) + 1);
    memcpy(s->client_first_bare, bare, (size_t)(end - bare));
    s->client_first_bare[end - bare] = '\0';
    s->nonce = ls_malloc(cnonce_len + 1);
    memcpy(s->nonce, cnonce, cnonce_len);
    s->nonce[cnonce_len] = '\0';
    return LS_OK;
}

char *ls_scram_server_first(ls_scram_server_t *s, const ls_scram_cred_t *cred)
{
    if (s->state != LS_SCRAM_ST_FIRST || !s->nonce) {
        s->state = LS_SCRAM_ST_FAILED;
        return NULL;
    }
    uint8_t rnd[SERVER_NONCE_BYTES];
    if (cred) {
        s->cred = *cred;
        s->user_known = true;
    } else {
        pthread_once(&mock_once, mock_init);
        uint8_t h[LS_SCRAM_MAX_KEY];
        char input[300];
        int n = snprintf(input, sizeof input, "%d:%s", (int)s->mech, s->user);
        hmac(LS_SCRAM_SHA_256, mock_key, sizeof mock_key, input, (size_t)n, h);
        memset(&s->cred, 0, sizeof s->cred);
        s->cred.mech = s->mech;
        s->cred.iterations = LS_SCRAM_MIN_ITERATIONS;
        memcpy(s->cred.salt, h, MOCK_SALT_BYTES);
        s->cred.salt_len = MOCK_SALT_BYTES;
        if (ls_scram_random(s->cred.stored_key, sizeof s->cred.stored_key) != LS_OK ||
            ls_scram_random(s->cred.server_key, sizeof s->cred.server_key) != LS_OK) {
            s->state = LS_SCRAM_ST_FAILED;
            return NULL;
        }
        s->user_known = false;
    }
    if (s->cred.mech != s->mech || ls_scram_random(rnd, sizeof rnd) != LS_OK) {
        s->state = LS_SCRAM_ST_FAILED;
        return NULL;
    }
    char *rnd64 = ls_base64_encode(rnd, sizeof rnd);
    char *salt64 = ls_base64_encode(s->cred.salt, s->cred.salt_len);
    ls_buf_t b;
    ls_buf_init(&b);
    ls_buf_printf(&b, "r=%s%s", s->nonce, rnd64);
    char *full = buf_str(&b);
    ls_free(s->nonce);
    s->nonce = full;
    ls_buf_init(&b);
    ls_buf_printf(&b, "r=%s,s=%s,i=%d", s->nonce + 2, salt64, (int)s->cred.iterations);
    s->server_first = buf_str(&b);
    memmove(s->nonce, s->nonce + 2, strlen(s->nonce + 2) + 1);
    ls_free(rnd64);
    ls_free(salt64);
    s->state = LS_SCRAM_ST_FINAL;
    return ls_strdup(s->server_first);
}

ls_status ls_scram_server_client_final(ls_scram_server_t *s, const uint8_t *msg, size_t len,
                                       char **out, char *err, size_t errlen)
{
    *out = NULL;
    if (s->state != LS_SCRAM_ST_FINAL) return fail(s, err, errlen, "unexpected client-final");
    const char *p = (const char *)msg, *end = p + len;
    if (memchr(p, '\0', len)) return fail(s, err, errlen, "client-final: NUL byte");
    const char *a;
    size_t n = next_attr(&p, end, &a);
    /* c=: the GS2 header, base64 */
    char *gs2_64 = ls_base64_encode(s->gs2_header, strlen(s->gs2_header));
    bool c_ok = n >= 2 && a[0] == 'c' && a[1] == '=' && n - 2 == strlen(gs2_64) &&
                memcmp(a + 2, gs2_64, n - 2) == 0;
    ls_free(gs2_64);
    if (!c_ok) return fail(s, err, errlen, "client-final: channel binding (c=) does not match");
    n = next_attr(&p, end, &a);
    if (n < 2 || a[0] != 'r' || a[1] != '=' || n - 2 != strlen(s->nonce) ||
        CRYPTO_memcmp(a + 2, s->nonce, n - 2) != 0)
        return fail(s, err, errlen, "client-final: nonce (r=) does not match");
    /* extensions, then the proof, which is last */
    const char *proof_attr = NULL;
    size_t proof_len = 0;
    while (p < end) {
        n = next_attr(&p, end, &a);
        if (n >= 2 && a[0] == 'p' && a[1] == '=' && p == end) {
            proof_attr = a;
            proof_len = n;
        } else if (!memchr(a, '=', n) || n < 2 || a[0] == '=') {
            return fail(s, err, errlen, "client-final: bad attribute");
        }
    }
    if (!proof_attr) return fail(s, err, errlen, "client-final: no proof (p=)");
    char proof64[200];
    if (proof_len - 2 >= sizeof proof64)
        return fail(s, err, errlen, "client-final: bad proof (p=)");
    memcpy(proof64, proof_attr + 2, proof_len - 2);
    proof64[proof_len - 2] = '\0';
    uint8_t *proof = NULL;
    size_t plen = 0;
    size_t kl = ls_scram_key_len(s->mech);
    if (ls_base64_decode(proof64, &proof, &plen) != 0 || plen != kl) {
        ls_free(proof);
        return fail(s, err, errlen, "client-final: bad proof (p=)");
    }
    /* AuthMessage = client-first-bare "," server-first "," client-final-without-proof */
    ls_buf_t am;
    ls_buf_init(&am);
    ls_buf_printf(&am, "%s,%s,", s->client_first_bare, s->server_first);
    ls_buf_append(&am, msg, (size_t)(proof_attr - 1 - (const char *)msg));
    uint8_t sig[LS_SCRAM_MAX_KEY], client_key[LS_SCRAM_MAX_KEY], stored[LS_SCRAM_MAX_KEY];
    hmac(s->mech, s->cred.stored_key, kl, am.data, am.len, sig);
    for (size_t i = 0; i < kl; i++)
        client_key[i] = proof[i] ^ sig[i];
    digest(s->mech, client_key, kl, stored);
    bool ok = CRYPTO_memcmp(stored, s->cred.stored_key, kl) == 0 && s->user_known;
    ls_free(proof);
    OPENSSL_cleanse(client_key, sizeof client_key);
    if (!ok) {
        ls_buf_free(&am);
        s->state = LS_SCRAM_ST_FAILED;
        snprintf(err, errlen, "invalid credentials");
        return LS_EFENCED;
    }
    uint8_t server_sig[LS_SCRAM_MAX_KEY];
    hmac(s->mech, s->cred.server_key, kl, am.data, am.len, server_sig);
    ls_buf_free(&am);
    char *sig64 = ls_base64_encode(server_sig, kl);
    ls_buf_t b;
    ls_buf_init(&b);
    ls_buf_printf(&b, "v=%s", sig64);
    ls_free(sig64);
    *out = buf_str(&b);
    s->state = LS_SCRAM_ST_DONE;
    return LS_OK;
}
