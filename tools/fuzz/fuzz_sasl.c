/* libFuzzer harness for the server side of SASL (security/sasl.h): PLAIN,
 * SCRAM-SHA-256/512 and OAUTHBEARER exchanges with client messages that are
 * anything (OAUTHBEARER: the RFC 7628 framing and the JWT's base64url and
 * JSON, against a validator with an empty key set, so it never succeeds).
 *
 * Input byte 0 picks the mechanism; the rest is split at 0x00 0xff into up
 * to three client messages, each handed to ls_sasl_step in turn while the
 * session continues. The store holds one user (alice, iterations 4096, so
 * a SCRAM step stays cheap enough to fuzz). Oracle besides the sanitizers:
 * a step ends in exactly one of the three results; SUCCESS names a user
 * and only alice; FAILURE gives a message; after SUCCESS or FAILURE the
 * session refuses more steps. Build and run: `make fuzz` (clang). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "meta/meta.h"
#include "security/sasl.h"
#include "security/scram.h"
#include "security/users.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static ls_meta_t *store;
static ls_oauth_t *validator;

static ls_scram_cred_t cred_of(ls_scram_mech m, const char *pw)
{
    uint8_t salted[LS_SCRAM_MAX_KEY];
    const char *salt = "fuzz-salt";
    ls_scram_cred_t c;
    if (ls_scram_salt_password(m, pw, strlen(pw), (const uint8_t *)salt, strlen(salt), 4096,
                               salted) != LS_OK ||
        ls_scram_cred_from_salted(m, salted, ls_scram_key_len(m), (const uint8_t *)salt,
                                  strlen(salt), 4096, &c) != LS_OK)
        abort();
    return c;
}

static ls_meta_t *the_store(void)
{
    if (store) return store;
    char err[256];
    store = ls_meta_open("mem://", err, sizeof err);
    if (!store) abort();
    ls_user_t u = {.name = ls_strdup("alice")};
    u.has[LS_SCRAM_SHA_256] = u.has[LS_SCRAM_SHA_512] = true;
    u.cred[LS_SCRAM_SHA_256] = cred_of(LS_SCRAM_SHA_256, "alice-pw");
    u.cred[LS_SCRAM_SHA_512] = cred_of(LS_SCRAM_SHA_512, "alice-pw");
    if (ls_users_put(store, &u, 0) != LS_OK) abort();
    ls_user_free(&u);
    return store;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    static const ls_sasl_mech mechs[] = {LS_SASL_PLAIN, LS_SASL_SCRAM_SHA_256,
                                         LS_SASL_SCRAM_SHA_512, LS_SASL_OAUTHBEARER};
    if (!validator) {
        char err[256];
        ls_oauth_opts_t o = {.jwks_url = "file:///dev/null"};
        validator = ls_oauth_open(&o, err, sizeof err);
        if (!validator) abort();
    }
    ls_sasl_session_t *s = ls_sasl_session_new(mechs[data[0] % 4], validator);
    const uint8_t *p = data + 1, *end = data + size;
    ls_sasl_result last = LS_SASL_CONTINUE;
    for (int step = 0; step < 3 && p <= end; step++) {
        const uint8_t *cut = p;
        while (cut + 1 < end && !(cut[0] == 0x00 && cut[1] == 0xff))
            cut++;
        if (cut + 1 >= end) cut = end;
        ls_buf_t out;
        ls_buf_init(&out);
        char err[256] = "";
        ls_sasl_result r =
            ls_sasl_step(s, the_store(), p, (size_t)(cut - p), &out, err, sizeof err);
        if (last != LS_SASL_CONTINUE && r != LS_SASL_FAILURE) abort(); /* a finished session */
        if (r == LS_SASL_SUCCESS && strcmp(s->user, "alice") != 0) abort();
        if (r == LS_SASL_FAILURE && !err[0]) abort();
        if (r != LS_SASL_CONTINUE && r != LS_SASL_SUCCESS && r != LS_SASL_FAILURE) abort();
        ls_buf_free(&out);
        last = r;
        p = cut + 2;
    }
    ls_sasl_session_free(s);
    return 0;
}
