/* SASL mechanisms a Kafka listener offers: PLAIN (RFC 4616), SCRAM-SHA-256
 * and SCRAM-SHA-512 (security/scram.h), all checked against the SCRAM users
 * of the metadata store (security/users.h), and OAUTHBEARER (RFC 7628),
 * whose JWT is checked against a JWKS (security/oauth.h).
 *
 * PLAIN has no credential of its own: Kafka's PLAIN checks a JAAS user list
 * in each broker's configuration; we check the password against the user's
 * stored SCRAM credential instead (PBKDF2 with its salt and iterations,
 * SCRAM-SHA-256 first, then SCRAM-SHA-512), so one `lakestream users add`
 * serves every mechanism, the cluster has one user list, and no broker holds
 * a password.
 *
 * A session is one authentication on one connection:
 *   PLAIN:  one client token -> SUCCESS | FAILURE
 *   SCRAM:  client-first -> CONTINUE (server-first), client-final ->
 *           SUCCESS (server-final) | FAILURE
 *   OAUTHBEARER: client-first -> SUCCESS | CONTINUE ({"status":
 *           "invalid_token"}, RFC 7628 §3.2.2), client's 0x01 -> FAILURE
 * After SUCCESS or FAILURE every further step is a FAILURE. Steps block on
 * the store and on PBKDF2: worker threads only; one step at a time. */
#ifndef LS_SECURITY_SASL_H
#define LS_SECURITY_SASL_H
#include <stdbool.h>
#include <stddef.h>

#include "base/buf.h"
#include "meta/meta.h"
#include "security/oauth.h"
#include "security/scram.h"

typedef enum ls_sasl_mech {
    LS_SASL_PLAIN = 1 << 0,
    LS_SASL_SCRAM_SHA_256 = 1 << 1,
    LS_SASL_SCRAM_SHA_512 = 1 << 2,
    LS_SASL_OAUTHBEARER = 1 << 3,
} ls_sasl_mech;

/* sasl.enabled.mechanisms when it is not set: the two SCRAM mechanisms
 * (Kafka's default, GSSAPI, is not supported; PLAIN sends the password
 * itself and is opted into by naming it). */
#define LS_SASL_DEFAULT_MECHANISMS "SCRAM-SHA-256,SCRAM-SHA-512"

/* Parses a comma-separated mechanism list (sasl.enabled.mechanisms) into a
 * set of ls_sasl_mech bits. LS_EINVAL with the reason in err for an empty list or a
 * mechanism we do not support (GSSAPI, anything else). */
ls_status ls_sasl_mechs_parse(const char *list, unsigned *out, char *err, size_t errlen);
/* The names in mechs, in a fixed order, at most LS_SASL_NMECHS; returns how many. */
#define LS_SASL_NMECHS 4
int ls_sasl_mech_names(unsigned mechs, const char **names);
const char *ls_sasl_mech_name(ls_sasl_mech m);
/* A mechanism by its exact name; false when unknown. */
bool ls_sasl_mech_from_name(const char *name, size_t len, ls_sasl_mech *out);

typedef enum {
    LS_SASL_CONTINUE, /* out holds a challenge; the client answers */
    LS_SASL_SUCCESS,  /* out holds the last server token (may be empty) */
    LS_SASL_FAILURE,  /* err holds a message for the client */
} ls_sasl_result;

typedef struct ls_sasl_session {
    ls_sasl_mech mech;
    bool over;
    ls_scram_server_t scram;
    char user[256];      /* the authenticated user after SUCCESS */
    ls_oauth_t *oauth;   /* OAUTHBEARER: the validator (not owned) */
    int64_t expires_ms;  /* OAUTHBEARER after SUCCESS: the token's exp (epoch ms) */
    bool oauth_failed;   /* OAUTHBEARER: the error challenge was sent */
    char oauth_err[200]; /* why, for the FAILURE that follows it */
} ls_sasl_session_t;

/* oauth: the validator for OAUTHBEARER (NULL for the other mechanisms). */
ls_sasl_session_t *ls_sasl_session_new(ls_sasl_mech mech, ls_oauth_t *oauth);
void ls_sasl_session_free(ls_sasl_session_t *s);
/* One client token in[0..n); a server token is appended to out. The message
 * in err never holds a password or credential material. */
ls_sasl_result ls_sasl_step(ls_sasl_session_t *s, ls_meta_t *meta, const uint8_t *in, size_t n,
                            ls_buf_t *out, char *err, size_t errlen);
#endif
