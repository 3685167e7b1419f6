/* TLS for the broker's servers (OpenSSL): a reloadable server context built
 * from Kafka's ssl.* settings, and a connection engine over memory BIOs
 * that the caller drives with the bytes its own event loop reads and
 * writes. Design note in tls.c. */
#ifndef LS_TLS_H
#define LS_TLS_H
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "base/config.h"
#include "base/status.h"

/* Kafka's ssl.* settings (base/config.h fields; NULL: unset). */
typedef struct ls_tls_settings {
    const char *keystore_type;       /* ssl.keystore.type: PEM only */
    const char *keystore_location;   /* ssl.keystore.location: key and chain in one PEM file */
    const char *keystore_chain;      /* ssl.keystore.certificate.chain: inline PEM */
    const char *keystore_key;        /* ssl.keystore.key: inline PEM */
    const char *key_password;        /* ssl.key.password: of an encrypted key */
    const char *truststore_type;     /* ssl.truststore.type: PEM only */
    const char *truststore_location; /* ssl.truststore.location: PEM CA certificates */
    const char *truststore_certs;    /* ssl.truststore.certificates: inline PEM */
    const char *enabled_protocols;   /* ssl.enabled.protocols: TLSv1.2,TLSv1.3 */
    const char *protocol;            /* ssl.protocol: TLSv1.3 (the highest version) */
    const char *cipher_suites;       /* ssl.cipher.suites: names, IANA or OpenSSL */
    const char *client_auth;         /* ssl.client.auth: required|requested|none */
    const char *principal_rules;     /* ssl.principal.mapping.rules */
} ls_tls_settings_t;

void ls_tls_settings_from_config(ls_tls_settings_t *s, const ls_config_t *c);

typedef struct ls_tls_server ls_tls_server_t;

/* Builds the server context; NULL with err naming the setting at fault.
 * what names the server in log lines ("listener SSL", "http.listen"). */
ls_tls_server_t *ls_tls_server_new(const ls_tls_settings_t *s, const char *what, char *err,
                                   size_t errlen);
/* Reads the certificate, key and trust material again (SIGHUP): new
 * connections use them, open ones keep theirs. On failure (err) the
 * current material stays in use. Any thread. */
ls_status ls_tls_server_reload(ls_tls_server_t *t, char *err, size_t errlen);
void ls_tls_server_free(ls_tls_server_t *t);
/* The PEM files of the server's material, for servers that take PEM text
 * (the HTTP server): malloc'ed copies (free them), all NULL on failure (err;
 * LS_EIO when a file cannot be read, LS_EINVAL when it holds no PEM). */
ls_status ls_tls_server_pem(ls_tls_server_t *t, char **cert_chain, char **key, char **trust,
                            char *err, size_t errlen);

typedef struct ls_tls_conn ls_tls_conn_t;

/* One server-side connection: accepts a handshake. */
ls_tls_conn_t *ls_tls_conn_new(ls_tls_server_t *t);
void ls_tls_conn_free(ls_tls_conn_t *c);
/* Ciphertext read from the peer. */
void ls_tls_conn_feed(ls_tls_conn_t *c, const void *p, size_t n);
/* Plaintext decrypted from what was fed (driving the handshake first):
 * LS_OK with *got bytes in out (0: more ciphertext is needed), LS_ESHUTDOWN
 * when the peer closed the session cleanly (close_notify; why ""), LS_EIO
 * when it failed (why says how). */
ls_status ls_tls_conn_read(ls_tls_conn_t *c, void *out, size_t cap, size_t *got, char *why,
                           size_t whylen);
/* Encrypts n bytes of plaintext for sending (always whole: the output is a
 * memory buffer taken with ls_tls_conn_take_output). */
int ls_tls_conn_write(ls_tls_conn_t *c, const void *p, size_t n);
/* Ciphertext waiting to be sent (handshake messages, records): a malloc'ed
 * buffer of *len bytes (free it), or NULL when there is none. */
void *ls_tls_conn_take_output(ls_tls_conn_t *c, size_t *len);
/* True once the handshake has completed. */
bool ls_tls_conn_established(const ls_tls_conn_t *c);
/* The principal of the peer's certificate by ssl.principal.mapping.rules
 * ("User:CN=...,O=..." by DEFAULT): LS_OK with out set (to "" when the peer
 * sent no certificate), LS_ENOTFOUND when no rule applies (why). After the
 * handshake. */
ls_status ls_tls_conn_principal(ls_tls_conn_t *c, char *out, size_t cap, char *why, size_t whylen);

/* The principal of an RFC 2253 distinguished name by rules (the text of
 * ssl.principal.mapping.rules, NULL: DEFAULT): LS_OK with out set,
 * LS_ENOTFOUND when no rule applies, LS_EINVAL when the rules do not parse
 * (why). Exposed for tests. */
ls_status ls_tls_map_principal(const char *rules, const char *dn, char *out, size_t cap, char *why,
                               size_t whylen);
#endif
