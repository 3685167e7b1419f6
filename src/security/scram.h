/* SCRAM (RFC 5802, SHA-256/512 per RFC 7677 and Kafka's SCRAM-SHA-512):
 * credential derivation and the server side of one exchange, with no I/O.
 *
 * A credential is what the broker keeps instead of a password: salt,
 * iteration count, StoredKey = H(HMAC(SaltedPassword, "Client Key")) and
 * ServerKey = HMAC(SaltedPassword, "Server Key"), SaltedPassword =
 * PBKDF2-HMAC(password, salt, iterations). Neither key lets anyone log in;
 * a proof can only be made from the password (or SaltedPassword).
 *
 * Exchange (ls_scram_server_t), a two-step state machine:
 *   FIRST  --client-first ok-->  FINAL  (server-first sent: salt, iterations,
 *                                        client nonce + our RAND_bytes nonce)
 *   FINAL  --client-final ok-->  DONE   (server-final "v=ServerSignature")
 *   any other input or a wrong proof --> FAILED (terminal)
 * The caller looks up the credential between the two steps (client-first
 * names the user). An unknown user gets a made-up credential (salt derived
 * from the name with a per-process key) so the exchange fails only at the
 * proof, as for a wrong password: a client cannot tell which users exist.
 *
 * Kafka's rules kept here: the GS2 header is "n,," or "n,a=<authzid>," with
 * authzid equal to the user (no channel binding); the client-first message
 * may carry extensions after the nonce (KIP-84 "tokenauth=true" asks for a
 * delegation token, which we do not issue: refused; other extensions are
 * ignored, as Kafka's ScramSaslServer does); the final message must echo the
 * GS2 header (c=) and the whole nonce. Proofs and signatures are compared in
 * constant time (CRYPTO_memcmp). Not thread-safe per exchange; no shared
 * state besides OpenSSL's. */
#ifndef LS_SECURITY_SCRAM_H
#define LS_SECURITY_SCRAM_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

typedef enum ls_scram_mech {
    LS_SCRAM_SHA_256 = 1, /* Kafka's ScramMechanism type codes (AlterUserScramCredentials) */
    LS_SCRAM_SHA_512 = 2,
} ls_scram_mech;

#define LS_SCRAM_MIN_ITERATIONS 4096  /* Kafka's minimum for both mechanisms */
#define LS_SCRAM_MAX_ITERATIONS 16384 /* Kafka's maximum (AlterUserScramCredentials) */
#define LS_SCRAM_MAX_KEY 64           /* SHA-512 digest */
#define LS_SCRAM_MAX_SALT 256

/* "SCRAM-SHA-256" / "SCRAM-SHA-512"; NULL for anything else. */
const char *ls_scram_mech_name(ls_scram_mech m);
/* From a Kafka type code (1, 2); false for others. */
bool ls_scram_mech_from_code(int code, ls_scram_mech *out);
/* From "SCRAM-SHA-256" / "SCRAM-SHA-512" (exact, len bytes); false for others. */
bool ls_scram_mech_from_name(const char *name, size_t len, ls_scram_mech *out);
/* Digest length of the mechanism (32 or 64). */
size_t ls_scram_key_len(ls_scram_mech m);

typedef struct ls_scram_cred {
    ls_scram_mech mech;
    int32_t iterations;
    uint8_t salt[LS_SCRAM_MAX_SALT];
    size_t salt_len;
    uint8_t stored_key[LS_SCRAM_MAX_KEY];
    uint8_t server_key[LS_SCRAM_MAX_KEY];
} ls_scram_cred_t;

/* SaltedPassword = PBKDF2-HMAC-H(password, salt, iterations) into out
 * (ls_scram_key_len bytes). LS_EINVAL for an empty salt or iterations < 1. */
ls_status ls_scram_salt_password(ls_scram_mech m, const void *password, size_t plen,
                                 const uint8_t *salt, size_t salt_len, int32_t iterations,
                                 uint8_t *out);
/* A credential from a SaltedPassword (what AlterUserScramCredentials sends).
 * LS_EINVAL when salted_len is not the digest length or the salt is empty or
 * longer than LS_SCRAM_MAX_SALT. */
ls_status ls_scram_cred_from_salted(ls_scram_mech m, const uint8_t *salted, size_t salted_len,
                                    const uint8_t *salt, size_t salt_len, int32_t iterations,
                                    ls_scram_cred_t *out);
/* Whether password is the one cred was made from (PBKDF2 with cred's salt and
 * iterations: as costly as a SCRAM login; constant-time comparison). */
bool ls_scram_cred_check_password(const ls_scram_cred_t *cred, const void *password, size_t plen);
/* n fresh random bytes (RAND_bytes); LS_EIO if the generator fails. */
ls_status ls_scram_random(uint8_t *out, size_t n);

typedef enum {
    LS_SCRAM_ST_FIRST,
    LS_SCRAM_ST_FINAL,
    LS_SCRAM_ST_DONE,
    LS_SCRAM_ST_FAILED,
} ls_scram_state;

typedef struct ls_scram_server {
    ls_scram_mech mech;
    ls_scram_state state;
    char user[256];          /* the decoded saslname of client-first */
    bool user_known;         /* a stored credential was supplied */
    ls_scram_cred_t cred;    /* the user's, or the made-up one */
    char *client_first_bare; /* "n=...,r=...[,ext]" */
    char *server_first;      /* "r=...,s=...,i=..." */
    char *gs2_header;        /* "n,," or "n,a=...," */
    char *nonce;             /* client nonce + server nonce */
} ls_scram_server_t;

void ls_scram_server_init(ls_scram_server_t *s, ls_scram_mech mech);
void ls_scram_server_free(ls_scram_server_t *s);
/* Step 1: parses client-first. On success the user name is in s->user and
 * the caller supplies the credential with ls_scram_server_first. LS_EINVAL
 * (state FAILED) with the reason in err for a malformed message, an authzid
 * other than the user, channel binding, or tokenauth=true. */
ls_status ls_scram_server_client_first(ls_scram_server_t *s, const uint8_t *msg, size_t len,
                                       char *err, size_t errlen);
/* Step 1, second half: cred is the user's stored credential for this
 * mechanism, or NULL when there is none (a made-up one is used and the
 * exchange will fail at the proof). Returns the server-first message
 * (ls_free it) or NULL if the random generator failed (state FAILED). */
char *ls_scram_server_first(ls_scram_server_t *s, const ls_scram_cred_t *cred);
/* Step 2: checks client-final. LS_OK: *out is the server-final message
 * (ls_free it), state DONE. LS_EINVAL: malformed or wrong nonce, reason in
 * err; LS_EFENCED: a wrong proof (or no such user). Both leave state FAILED. */
ls_status ls_scram_server_client_final(ls_scram_server_t *s, const uint8_t *msg, size_t len,
                                       char **out, char *err, size_t errlen);

#endif
