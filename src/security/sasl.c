/* SASL sessions: PLAIN and SCRAM over the stored SCRAM users (design note
 * in sasl.h). Messages to the client follow Kafka's wording, so client
 * libraries that match on them behave as with Kafka. */
#include "security/sasl.h"

#include <openssl/crypto.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "security/users.h"

static const struct {
    ls_sasl_mech mech;
    const char *name;
} mechs[] = {
    {LS_SASL_PLAIN, "PLAIN"},
    {LS_SASL_SCRAM_SHA_256, "SCRAM-SHA-256"},
    {LS_SASL_SCRAM_SHA_512, "SCRAM-SHA-512"},
    {LS_SASL_OAUTHBEARER, "OAUTHBEARER"},
};
#define NMECHS (sizeof mechs / sizeof mechs[0])

const char *ls_sasl_mech_name(ls_sasl_mech m)
{
    for (size_t i = 0; i < NMECHS; i++)
        if (mechs[i].mech == m) return mechs[i].name;
    return "?";
}

bool ls_sasl_mech_from_name(const char *name, size_t len, ls_sasl_mech *out)
{
    for (size_t i = 0; i < NMECHS; i++)
        if (strlen(mechs[i].name) == len && memcmp(mechs[i].name, name, len) == 0) {
            *out = mechs[i].mech;
            return true;
        }
    return false;
}

int ls_sasl_mech_names(unsigned set, const char **names)
{
    int n = 0;
    for (size_t i = 0; i < NMECHS; i++)
        if (set & mechs[i].mech) names[n++] = mechs[i].name;
    return n;
}

ls_status ls_sasl_mechs_parse(const char *list, unsigned *out, char *err, size_t errlen)
{
    *out = 0;
    const char *p = list;
    while (*p) {
        while (*p == ' ' || *p == ',')
            p++;
        if (!*p) break;
        const char *e = p;
        while (*e && *e != ',' && *e != ' ')
            e++;
        size_t n = (size_t)(e - p);
        ls_sasl_mech m;
        if (!ls_sasl_mech_from_name(p, n, &m)) {
            if (n == 6 && memcmp(p, "GSSAPI", 6) == 0)
                snprintf(err, errlen,
                         "GSSAPI (Kerberos) is not supported; use PLAIN, SCRAM-SHA-256, "
                         "SCRAM-SHA-512 or OAUTHBEARER");
            else
                snprintf(err, errlen,
                         "'%.*s' is not a supported mechanism (PLAIN, SCRAM-SHA-256, "
                         "SCRAM-SHA-512, OAUTHBEARER)",
                         (int)(n > 64 ? 64 : n), p);
            return LS_EINVAL;
        }
        *out |= (unsigned)m;
        p = e;
    }
    if (!*out) {
        snprintf(err, errlen, "no mechanism listed");
        return LS_EINVAL;
    }
    return LS_OK;
}

static bool is_scram(ls_sasl_mech m)
{
    return m == LS_SASL_SCRAM_SHA_256 || m == LS_SASL_SCRAM_SHA_512;
}

ls_sasl_session_t *ls_sasl_session_new(ls_sasl_mech mech, ls_oauth_t *oauth)
{
    ls_sasl_session_t *s = LS_NEW(ls_sasl_session_t);
    s->mech = mech;
    s->oauth = oauth;
    if (is_scram(mech))
        ls_scram_server_init(&s->scram,
                             mech == LS_SASL_SCRAM_SHA_512 ? LS_SCRAM_SHA_512 : LS_SCRAM_SHA_256);
    return s;
}

void ls_sasl_session_free(ls_sasl_session_t *s)
{
    if (!s) return;
    if (is_scram(s->mech)) ls_scram_server_free(&s->scram);
    OPENSSL_cleanse(s, sizeof *s);
    ls_free(s);
}

static ls_sasl_result failure(ls_sasl_session_t *s, char *err, size_t errlen, const char *fmt,
                              const char *arg)
{
    s->over = true;
    snprintf(err, errlen, fmt, arg);
    return LS_SASL_FAILURE;
}

/* The message Kafka gives for a wrong password or unknown user. */
static ls_sasl_result bad_credentials(ls_sasl_session_t *s, char *err, size_t errlen)
{
    return failure(s, err, errlen,
                   "Authentication failed during authentication due to invalid credentials "
                   "with SASL mechanism %s",
                   ls_sasl_mech_name(s->mech));
}

static ls_sasl_result store_failure(ls_sasl_session_t *s, char *err, size_t errlen)
{
    return failure(s, err, errlen, "%s",
                   "Authentication failed: the credential store is unavailable, try again");
}

/* RFC 4616: [authzid] NUL authcid NUL passwd. */
static ls_sasl_result plain_step(ls_sasl_session_t *s, ls_meta_t *meta, const uint8_t *in, size_t n,
                                 char *err, size_t errlen)
{
    const uint8_t *nul1 = memchr(in, 0, n);
    const uint8_t *nul2 = nul1 ? memchr(nul1 + 1, 0, n - (size_t)(nul1 + 1 - in)) : NULL;
    if (!nul1 || !nul2 || memchr(nul2 + 1, 0, n - (size_t)(nul2 + 1 - in)))
        return failure(s, err, errlen, "%s",
                       "Authentication failed: Invalid SASL/PLAIN response: expected 3 tokens");
    size_t zlen = (size_t)(nul1 - in), ulen = (size_t)(nul2 - nul1 - 1);
    size_t plen = n - (size_t)(nul2 + 1 - in);
    if (ulen == 0)
        return failure(s, err, errlen, "%s", "Authentication failed: username not specified");
    if (plen == 0)
        return failure(s, err, errlen, "%s", "Authentication failed: password not specified");
    if (ulen >= sizeof s->user)
        return failure(s, err, errlen, "%s", "Authentication failed: username too long");
    if (zlen && (zlen != ulen || memcmp(in, nul1 + 1, ulen) != 0))
        return failure(s, err, errlen, "%s",
                       "Authentication failed: Client requested an authorization id that is "
                       "different from username");
    char user[sizeof s->user];
    memcpy(user, nul1 + 1, ulen);
    user[ulen] = '\0';
    ls_user_t u;
    ls_status st = ls_users_get(meta, user, &u, NULL);
    if (st != LS_OK && st != LS_ENOTFOUND) return store_failure(s, err, errlen);
    bool ok = false;
    if (st == LS_OK) {
        const ls_scram_cred_t *cr =
            u.has[LS_SCRAM_SHA_256] ? &u.cred[LS_SCRAM_SHA_256] : &u.cred[LS_SCRAM_SHA_512];
        ok = (u.has[LS_SCRAM_SHA_256] || u.has[LS_SCRAM_SHA_512]) &&
             ls_scram_cred_check_password(cr, nul2 + 1, plen);
        ls_user_free(&u);
    } else {
        /* as costly as a real check, so timing does not tell who exists */
        uint8_t salted[LS_SCRAM_MAX_KEY];
        ls_scram_salt_password(LS_SCRAM_SHA_256, nul2 + 1, plen, (const uint8_t *)user, ulen,
                               LS_SCRAM_MIN_ITERATIONS, salted);
    }
    s->over = true;
    if (!ok)
        return failure(s, err, errlen, "%s", "Authentication failed: Invalid username or password");
    memcpy(s->user, user, ulen + 1);
    return LS_SASL_SUCCESS;
}

static ls_sasl_result scram_step(ls_sasl_session_t *s, ls_meta_t *meta, const uint8_t *in, size_t n,
                                 ls_buf_t *out, char *err, size_t errlen)
{
    char why[200];
    if (s->scram.state == LS_SCRAM_ST_FIRST) {
        if (ls_scram_server_client_first(&s->scram, in, n, why, sizeof why) != LS_OK)
            return failure(s, err, errlen, "Authentication failed: %s", why);
        ls_user_t u;
        ls_status st = ls_users_get(meta, s->scram.user, &u, NULL);
        if (st != LS_OK && st != LS_ENOTFOUND) return store_failure(s, err, errlen);
        const ls_scram_cred_t *cr =
            st == LS_OK && u.has[s->scram.mech] ? &u.cred[s->scram.mech] : NULL;
        char *first = ls_scram_server_first(&s->scram, cr);
        if (st == LS_OK) ls_user_free(&u);
        if (!first) return failure(s, err, errlen, "%s", "Authentication failed: internal error");
        ls_buf_append(out, first, strlen(first));
        ls_free(first);
        return LS_SASL_CONTINUE;
    }
    char *final = NULL;
    ls_status st = ls_scram_server_client_final(&s->scram, in, n, &final, why, sizeof why);
    s->over = true;
    if (st == LS_EFENCED) return bad_credentials(s, err, errlen);
    if (st != LS_OK) return failure(s, err, errlen, "Authentication failed: %s", why);
    ls_buf_append(out, final, strlen(final));
    ls_free(final);
    snprintf(s->user, sizeof s->user, "%s", s->scram.user);
    return LS_SASL_SUCCESS;
}

/* RFC 7628: a bad token is answered with an error challenge; the client
 * acknowledges it with 0x01 and only then does the exchange fail (Kafka's
 * OAuthBearerSaslServer does the same). */
static ls_sasl_result oauth_step(ls_sasl_session_t *s, const uint8_t *in, size_t n, ls_buf_t *out,
                                 char *err, size_t errlen)
{
    if (s->oauth_failed) return failure(s, err, errlen, "Authentication failed: %s", s->oauth_err);
    const char *tok;
    size_t tl;
    if (ls_oauth_client_first(in, n, &tok, &tl) != 0)
        return failure(s, err, errlen, "%s",
                       "Authentication failed: Invalid OAUTHBEARER client first message");
    int64_t exp_ms = 0;
    if (!s->oauth || ls_oauth_validate(s->oauth, tok, tl, s->user, sizeof s->user, &exp_ms,
                                       s->oauth_err, sizeof s->oauth_err) != LS_OK) {
        if (!s->oauth) snprintf(s->oauth_err, sizeof s->oauth_err, "no token validator");
        s->user[0] = '\0';
        s->oauth_failed = true;
        static const char answer[] = "{\"status\":\"invalid_token\"}";
        ls_buf_append(out, answer, sizeof answer - 1);
        return LS_SASL_CONTINUE;
    }
    s->over = true;
    s->expires_ms = exp_ms;
    return LS_SASL_SUCCESS;
}

ls_sasl_result ls_sasl_step(ls_sasl_session_t *s, ls_meta_t *meta, const uint8_t *in, size_t n,
                            ls_buf_t *out, char *err, size_t errlen)
{
    if (s->over)
        return failure(s, err, errlen, "%s", "Authentication failed: exchange already over");
    if (s->mech == LS_SASL_PLAIN) return plain_step(s, meta, in, n, err, errlen);
    if (s->mech == LS_SASL_OAUTHBEARER) return oauth_step(s, in, n, out, err, errlen);
    return scram_step(s, meta, in, n, out, err, errlen);
}
