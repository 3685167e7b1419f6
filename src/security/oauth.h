/* SASL/OAUTHBEARER token validation (RFC 7628, Kafka's KIP-255 framing):
 * a compact JWS (RFC 7515) signed with RS256/RS384/RS512, PS256 or
 * ES256/ES384 by a key of a JWKS (RFC 7517), checked as Kafka's broker
 * validator does: `kid` names the key, `exp` is required, `nbf`/`iat` not in
 * the future, issuer and audience when configured, all with a clock skew.
 * `alg=none` and HS* are refused (a shared secret would let any holder mint
 * tokens). The principal is the `sub` claim, or the claim named by
 * sasl.oauthbearer.sub.claim.name.
 *
 * Threads: validation runs on any thread (workers, later the HTTP side); the
 * key set is an immutable snapshot swapped under mu, so a check holds mu
 * only to take a reference. One refresher thread fetches the JWKS (file://,
 * http://, https:// with libcurl) at open, every refresh.ms, and when a
 * token names an unknown `kid` (at most once a second), so no network I/O
 * happens on the event loop or in a validation. A failed fetch keeps the
 * previous keys and logs the URL; tokens then fail to validate. */
#ifndef LS_SECURITY_OAUTH_H
#define LS_SECURITY_OAUTH_H
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

typedef struct ls_oauth_opts {
    const char *jwks_url;    /* sasl.oauthbearer.jwks.endpoint.url (required) */
    const char *audience;    /* sasl.oauthbearer.expected.audience: comma list; NULL: any */
    const char *issuer;      /* sasl.oauthbearer.expected.issuer; NULL: any */
    int64_t clock_skew_s;    /* sasl.oauthbearer.clock.skew.seconds */
    const char *scope_claim; /* sasl.oauthbearer.scope.claim.name */
    const char *sub_claim;   /* sasl.oauthbearer.sub.claim.name */
    int64_t refresh_ms;      /* sasl.oauthbearer.jwks.endpoint.refresh.ms; 0: no periodic refresh */
} ls_oauth_opts_t;

typedef struct ls_oauth ls_oauth_t;

/* Checks the options, loads the JWKS once (a failure is logged, not fatal:
 * the endpoint may come up later) and starts the refresher. NULL with the
 * reason in err for a bad URL scheme. */
ls_oauth_t *ls_oauth_open(const ls_oauth_opts_t *o, char *err, size_t errlen);
void ls_oauth_close(ls_oauth_t *a);
/* Fetches the JWKS now, on the calling thread (the refresher's body; tests). */
ls_status ls_oauth_refresh(ls_oauth_t *a);

/* Validates token[0..n) at wall-clock now_s (seconds since the epoch). On
 * LS_OK principal holds the subject and *exp_ms the token's expiry (epoch
 * ms). Else LS_EINVAL with the reason in err (never key material).
 * Thread-safe. */
ls_status ls_oauth_validate_at(ls_oauth_t *a, const char *token, size_t n, int64_t now_s,
                               char *principal, size_t cap, int64_t *exp_ms, char *err,
                               size_t errlen);
/* ls_oauth_validate_at with the current time. */
ls_status ls_oauth_validate(ls_oauth_t *a, const char *token, size_t n, char *principal, size_t cap,
                            int64_t *exp_ms, char *err, size_t errlen);

/* RFC 7628 client first message `n,[a=authzid],\x01auth=Bearer <token>\x01
 * [key=value\x01]*\x01`: the token's position in msg. -1 if malformed. */
int ls_oauth_client_first(const uint8_t *msg, size_t n, const char **token, size_t *toklen);
#endif
