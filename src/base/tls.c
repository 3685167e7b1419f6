/* TLS with OpenSSL for the broker's servers.
 *
 * Server context (ls_tls_server_t): one SSL_CTX built from Kafka's ssl.*
 * settings (PEM keystore as one file or inline chain/key, PEM truststore,
 * enabled protocols, cipher suites by their IANA or OpenSSL names, client
 * authentication). Every setting is applied as Kafka defines it or refused
 * with an error naming it (JKS/PKCS12 stores, protocols below TLS 1.2, an
 * unknown suite). Reload (SIGHUP) builds a whole new SSL_CTX from the same
 * settings and swaps it in under a mutex; each connection holds a reference
 * to the context it started with (SSL_new), so open sessions are untouched
 * and a failed reload leaves the old context serving.
 *
 * Connections (ls_tls_conn_t): an SSL in server mode over two memory BIOs.
 * The owner reads ciphertext from its socket and feeds it, reads plaintext
 * out (the handshake is driven by the same calls), writes plaintext in and
 * takes the ciphertext to send. Nothing here touches a socket or blocks, so
 * the caller keeps its own framing, budgets, backpressure and deadlines.
 * Memory BIOs grow as needed: a response is encrypted whole.
 *
 * Principal (mTLS): the peer certificate's subject as an RFC 2253 string
 * (Java's X500Principal.getName(), e.g. "CN=alice,O=Example"), mapped by
 * ssl.principal.mapping.rules exactly as Kafka's SslPrincipalMapper: rules
 * "RULE:pattern/replacement/[LU]" and "DEFAULT" in order; the first rule
 * whose pattern matches the whole name gives replaceAll(pattern,
 * replacement), lower- or upper-cased; DEFAULT gives the name itself; none
 * matching fails the authentication.
 *
 * OpenSSL's error queue is per thread: every failure path drains it into
 * the message it returns, so no error is left for an unrelated caller. */
#include "base/tls.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <ctype.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <pcre2.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/buf.h"

#define MAX_RULES 32

typedef struct rule {
    bool is_default;
    pcre2_code *re;
    char *replacement;
    char kase; /* 'L', 'U' or 0 */
} rule_t;

typedef struct rules {
    rule_t v[MAX_RULES];
    int n;
} rules_t;

struct ls_tls_server {
    pthread_mutex_t mu;
    SSL_CTX *ctx; /* under mu: the context new connections use */
    ls_tls_settings_t s;
    char *owned[13]; /* copies of the settings' strings */
    char what[64];
    rules_t rules;
};

struct ls_tls_conn {
    ls_tls_server_t *t;
    SSL *ssl;
    BIO *in, *out; /* memory BIOs: ciphertext from / to the peer */
};

/* ------------------------------------------------------------ errors */

/* The first queued OpenSSL error's reason (and clears the queue). */
static void ssl_reason(char *out, size_t cap, const char *fallback)
{
    unsigned long e = ERR_get_error();
    if (e) {
        const char *r = ERR_reason_error_string(e);
        if (r)
            snprintf(out, cap, "%s", r);
        else
            ERR_error_string_n(e, out, cap);
    } else {
        snprintf(out, cap, "%s", fallback);
    }
    ERR_clear_error();
}

/* ------------------------------------------------------------ settings */

void ls_tls_settings_from_config(ls_tls_settings_t *s, const ls_config_t *c)
{
    *s = (ls_tls_settings_t){
        .keystore_type = c->ssl_keystore_type,
        .keystore_location = c->ssl_keystore_location,
        .keystore_chain = c->ssl_keystore_certificate_chain,
        .keystore_key = c->ssl_keystore_key,
        .key_password = c->ssl_key_password,
        .truststore_type = c->ssl_truststore_type,
        .truststore_location = c->ssl_truststore_location,
        .truststore_certs = c->ssl_truststore_certificates,
        .enabled_protocols = c->ssl_enabled_protocols,
        .protocol = c->ssl_protocol,
        .cipher_suites = c->ssl_cipher_suites,
        .client_auth = c->ssl_client_auth,
        .principal_rules = c->ssl_principal_mapping_rules,
    };
}

/* Inline PEM as Kafka takes it: each BEGIN/END block's base64 may have lost
 * its line breaks (a properties value continued with '\' joins lines), so
 * blocks are rebuilt with the body re-wrapped (keys are PKCS#8, as Kafka
 * requires: no header lines). NULL when there is no block. */
static char *pem_normalize(const char *in)
{
    ls_buf_t b;
    ls_buf_init(&b);
    const char *p = in;
    int blocks = 0;
    while ((p = strstr(p, "-----BEGIN "))) {
        const char *label_end = strstr(p + 11, "-----");
        const char *body = label_end ? label_end + 5 : NULL;
        const char *end = body ? strstr(body, "-----END ") : NULL;
        const char *end_close = end ? strstr(end + 9, "-----") : NULL;
        if (!end_close) break;
        ls_buf_append(&b, p, (size_t)(body - p));
        ls_buf_append(&b, "\n", 1);
        int col = 0;
        for (const char *q = body; q < end; q++) {
            if (isspace((unsigned char)*q)) continue;
            ls_buf_append(&b, q, 1);
            if (++col == 64) {
                ls_buf_append(&b, "\n", 1);
                col = 0;
            }
        }
        if (col) ls_buf_append(&b, "\n", 1);
        ls_buf_append(&b, end, (size_t)(end_close + 5 - end));
        ls_buf_append(&b, "\n", 1);
        p = end_close + 5;
        blocks++;
    }
    if (!blocks) {
        ls_buf_free(&b);
        return NULL;
    }
    ls_buf_append(&b, "", 1);
    return (char *)b.data;
}

static int key_password_cb(char *buf, int size, int rwflag, void *u)
{
    const char *pw = u;
    if (!pw) return 0;
    int n = (int)strlen(pw);
    if (n > size) n = size;
    memcpy(buf, pw, (size_t)n);
    return n;
}

/* The certificate chain and key from inline PEM text. */
static ls_status use_inline_keystore(SSL_CTX *ctx, const ls_tls_settings_t *s, char *err,
                                     size_t errlen)
{
    char why[256];
    char *chain = pem_normalize(s->keystore_chain);
    char *key = pem_normalize(s->keystore_key);
    ls_status rc = LS_EINVAL;
    if (!chain) {
        snprintf(err, errlen, "ssl.keystore.certificate.chain: no PEM certificate in it");
        goto out;
    }
    if (!key) {
        snprintf(err, errlen, "ssl.keystore.key: no PEM private key in it");
        goto out;
    }
    BIO *bio = BIO_new_mem_buf(chain, -1);
    X509 *leaf = PEM_read_bio_X509(bio, NULL, NULL, NULL);
    if (!leaf || SSL_CTX_use_certificate(ctx, leaf) != 1) {
        ssl_reason(why, sizeof why, "unreadable");
        snprintf(err, errlen, "ssl.keystore.certificate.chain: %s", why);
        X509_free(leaf);
        BIO_free(bio);
        goto out;
    }
    X509_free(leaf);
    X509 *ca;
    while ((ca = PEM_read_bio_X509(bio, NULL, NULL, NULL)))
        SSL_CTX_add0_chain_cert(ctx, ca);
    ERR_clear_error(); /* the end of the text */
    BIO_free(bio);
    bio = BIO_new_mem_buf(key, -1);
    EVP_PKEY *pk = PEM_read_bio_PrivateKey(bio, NULL, key_password_cb, (void *)s->key_password);
    BIO_free(bio);
    if (!pk || SSL_CTX_use_PrivateKey(ctx, pk) != 1) {
        ssl_reason(why, sizeof why, "unreadable");
        snprintf(err, errlen, "ssl.keystore.key: %s%s", why,
                 s->key_password ? "" : " (an encrypted key needs ssl.key.password)");
        EVP_PKEY_free(pk);
        goto out;
    }
    EVP_PKEY_free(pk);
    rc = LS_OK;
out:
    ls_free(chain);
    ls_free(key);
    return rc;
}

static ls_status use_keystore(SSL_CTX *ctx, const ls_tls_settings_t *s, char *err, size_t errlen)
{
    char why[256];
    if (s->keystore_location && (s->keystore_chain || s->keystore_key)) {
        snprintf(err, errlen,
                 "ssl.keystore.location: set together with ssl.keystore.certificate.chain/"
                 "ssl.keystore.key; use one or the other");
        return LS_EINVAL;
    }
    if (s->keystore_location) {
        SSL_CTX_set_default_passwd_cb(ctx, key_password_cb);
        SSL_CTX_set_default_passwd_cb_userdata(ctx, (void *)s->key_password);
        if (SSL_CTX_use_certificate_chain_file(ctx, s->keystore_location) != 1) {
            ssl_reason(why, sizeof why, "unreadable");
            snprintf(err, errlen, "ssl.keystore.location: %s: no certificate chain (%s)",
                     s->keystore_location, why);
            return LS_EINVAL;
        }
        if (SSL_CTX_use_PrivateKey_file(ctx, s->keystore_location, SSL_FILETYPE_PEM) != 1) {
            ssl_reason(why, sizeof why, "unreadable");
            snprintf(err, errlen, "ssl.keystore.location: %s: no usable private key (%s)%s",
                     s->keystore_location, why,
                     s->key_password ? "" : "; an encrypted key needs ssl.key.password");
            return LS_EINVAL;
        }
    } else if (s->keystore_chain || s->keystore_key) {
        ls_status st = use_inline_keystore(ctx, s, err, errlen);
        if (st != LS_OK) return st;
    } else {
        snprintf(err, errlen,
                 "ssl.keystore.location: required by a TLS listener (or "
                 "ssl.keystore.certificate.chain and ssl.keystore.key)");
        return LS_EINVAL;
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
        ssl_reason(why, sizeof why, "mismatch");
        snprintf(err, errlen, "%s: the private key does not match the certificate (%s)",
                 s->keystore_location ? "ssl.keystore.location" : "ssl.keystore.key", why);
        return LS_EINVAL;
    }
    return LS_OK;
}

static ls_status use_truststore(SSL_CTX *ctx, const ls_tls_settings_t *s, char *err, size_t errlen)
{
    char why[256];
    if (s->truststore_location) {
        if (SSL_CTX_load_verify_locations(ctx, s->truststore_location, NULL) != 1) {
            ssl_reason(why, sizeof why, "unreadable");
            snprintf(err, errlen, "ssl.truststore.location: %s: %s", s->truststore_location, why);
            return LS_EINVAL;
        }
        STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(s->truststore_location);
        if (names) SSL_CTX_set_client_CA_list(ctx, names);
        ERR_clear_error();
    }
    if (s->truststore_certs) {
        char *pem = pem_normalize(s->truststore_certs);
        if (!pem) {
            snprintf(err, errlen, "ssl.truststore.certificates: no PEM certificate in it");
            return LS_EINVAL;
        }
        BIO *bio = BIO_new_mem_buf(pem, -1);
        X509_STORE *store = SSL_CTX_get_cert_store(ctx);
        X509 *ca;
        int n = 0;
        while ((ca = PEM_read_bio_X509(bio, NULL, NULL, NULL))) {
            X509_STORE_add_cert(store, ca);
            SSL_CTX_add_client_CA(ctx, ca);
            X509_free(ca);
            n++;
        }
        ERR_clear_error();
        BIO_free(bio);
        ls_free(pem);
        if (!n) {
            snprintf(err, errlen, "ssl.truststore.certificates: no readable certificate");
            return LS_EINVAL;
        }
    }
    return LS_OK;
}

static int proto_version(const char *name)
{
    if (!strcmp(name, "TLSv1.2")) return TLS1_2_VERSION;
    if (!strcmp(name, "TLSv1.3")) return TLS1_3_VERSION;
    return 0;
}

/* Comma-separated list items, trimmed: calls fn for each non-empty one. */
static int each_item(const char *list, int (*fn)(const char *item, void *arg), void *arg)
{
    for (const char *p = list; p && *p;) {
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        size_t n = strcspn(p, ",");
        while (n && isspace((unsigned char)p[n - 1]))
            n--;
        if (n) {
            char item[128];
            snprintf(item, sizeof item, "%.*s", (int)n, p);
            int rc = fn(item, arg);
            if (rc) return rc;
        }
        p += strcspn(p, ",");
    }
    return 0;
}

typedef struct proto_acc {
    int min, max;
    char bad[128];
} proto_acc_t;

static int proto_item(const char *item, void *arg)
{
    proto_acc_t *a = arg;
    int v = proto_version(item);
    if (!v) {
        snprintf(a->bad, sizeof a->bad, "%s", item);
        return -1;
    }
    if (!a->min || v < a->min) a->min = v;
    if (v > a->max) a->max = v;
    return 0;
}

typedef struct suite_acc {
    SSL_CTX *all; /* every cipher OpenSSL has, to map names */
    ls_buf_t tls12, tls13;
    char bad[128];
} suite_acc_t;

/* A suite by its IANA name (Kafka's, e.g. TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256)
 * or OpenSSL's (ECDHE-RSA-AES128-GCM-SHA256). */
static int suite_item(const char *item, void *arg)
{
    suite_acc_t *a = arg;
    STACK_OF(SSL_CIPHER) *sk = SSL_CTX_get_ciphers(a->all);
    for (int i = 0; i < sk_SSL_CIPHER_num(sk); i++) {
        const SSL_CIPHER *c = sk_SSL_CIPHER_value(sk, i);
        const char *std = SSL_CIPHER_standard_name(c), *name = SSL_CIPHER_get_name(c);
        if ((std && !strcmp(std, item)) || !strcmp(name, item)) {
            ls_buf_t *b = !strcmp(SSL_CIPHER_get_version(c), "TLSv1.3") ? &a->tls13 : &a->tls12;
            if (b->len) ls_buf_append(b, ":", 1);
            ls_buf_append(b, name, strlen(name));
            return 0;
        }
    }
    snprintf(a->bad, sizeof a->bad, "%s", item);
    return -1;
}

static ls_status apply_protocols(SSL_CTX *ctx, const ls_tls_settings_t *s, char *err, size_t errlen)
{
    proto_acc_t pa = {0};
    const char *enabled = s->enabled_protocols ? s->enabled_protocols : "TLSv1.2,TLSv1.3";
    if (each_item(enabled, proto_item, &pa) != 0) {
        snprintf(err, errlen, "ssl.enabled.protocols: '%s' is not supported (TLSv1.2, TLSv1.3)",
                 pa.bad);
        return LS_EINVAL;
    }
    if (!pa.max) {
        snprintf(err, errlen, "ssl.enabled.protocols: empty");
        return LS_EINVAL;
    }
    /* ssl.protocol names the context's protocol: its highest version */
    const char *proto = s->protocol ? s->protocol : "TLSv1.3";
    int top = !strcmp(proto, "TLS") ? TLS1_3_VERSION : proto_version(proto);
    if (!top) {
        snprintf(err, errlen, "ssl.protocol: '%s' is not supported (TLSv1.2, TLSv1.3, TLS)", proto);
        return LS_EINVAL;
    }
    if (pa.max > top) pa.max = top;
    if (s->cipher_suites && *s->cipher_suites) {
        suite_acc_t sa = {.all = SSL_CTX_new(TLS_server_method())};
        ls_buf_init(&sa.tls12);
        ls_buf_init(&sa.tls13);
        SSL_CTX_set_cipher_list(sa.all, "ALL:COMPLEMENTOFALL");
        int rc = each_item(s->cipher_suites, suite_item, &sa);
        SSL_CTX_free(sa.all);
        ls_buf_append(&sa.tls12, "", 1);
        ls_buf_append(&sa.tls13, "", 1);
        if (rc != 0) snprintf(err, errlen, "ssl.cipher.suites: unknown suite '%s'", sa.bad);
        /* suites of one version only: the other version cannot be negotiated */
        if (rc == 0 && sa.tls12.len == 1)
            pa.min = pa.min > TLS1_3_VERSION ? pa.min : TLS1_3_VERSION;
        if (rc == 0 && sa.tls13.len == 1)
            pa.max = pa.max < TLS1_2_VERSION ? pa.max : TLS1_2_VERSION;
        if (rc == 0 &&
            ((sa.tls12.len > 1 && SSL_CTX_set_cipher_list(ctx, (const char *)sa.tls12.data) != 1) ||
             (sa.tls13.len > 1 &&
              SSL_CTX_set_ciphersuites(ctx, (const char *)sa.tls13.data) != 1))) {
            char why[200];
            ssl_reason(why, sizeof why, "refused");
            snprintf(err, errlen, "ssl.cipher.suites: %s", why);
            rc = -1;
        }
        ls_buf_free(&sa.tls12);
        ls_buf_free(&sa.tls13);
        if (rc != 0) return LS_EINVAL;
    }
    if (pa.min > pa.max) {
        snprintf(err, errlen,
                 "ssl.enabled.protocols: no enabled protocol is left by ssl.protocol=%s and "
                 "ssl.cipher.suites",
                 proto);
        return LS_EINVAL;
    }
    SSL_CTX_set_min_proto_version(ctx, pa.min);
    SSL_CTX_set_max_proto_version(ctx, pa.max);
    return LS_OK;
}

static SSL_CTX *ctx_build(const ls_tls_settings_t *s, char *err, size_t errlen)
{
    if (s->keystore_type && strcasecmp(s->keystore_type, "PEM") != 0) {
        snprintf(err, errlen,
                 "ssl.keystore.type: '%s' is not supported; use PEM (convert a JKS or PKCS12 "
                 "store with keytool/openssl)",
                 s->keystore_type);
        return NULL;
    }
    if (s->truststore_type && strcasecmp(s->truststore_type, "PEM") != 0) {
        snprintf(err, errlen, "ssl.truststore.type: '%s' is not supported; use PEM",
                 s->truststore_type);
        return NULL;
    }
    const char *auth = s->client_auth ? s->client_auth : "none";
    int verify;
    if (!strcmp(auth, "required"))
        verify = SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
    else if (!strcmp(auth, "requested"))
        verify = SSL_VERIFY_PEER;
    else if (!strcmp(auth, "none"))
        verify = SSL_VERIFY_NONE;
    else {
        snprintf(err, errlen, "ssl.client.auth: '%s' is not one of required, requested, none",
                 auth);
        return NULL;
    }
    if (verify != SSL_VERIFY_NONE && !s->truststore_location && !s->truststore_certs) {
        snprintf(err, errlen,
                 "ssl.client.auth=%s needs the CA that signs client certificates: "
                 "ssl.truststore.location or ssl.truststore.certificates",
                 auth);
        return NULL;
    }
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx) {
        char why[200];
        ssl_reason(why, sizeof why, "out of memory");
        snprintf(err, errlen, "TLS context: %s", why);
        return NULL;
    }
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
    SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    SSL_CTX_set_num_tickets(ctx, 0);
    if (apply_protocols(ctx, s, err, errlen) != 0 || use_keystore(ctx, s, err, errlen) != 0 ||
        use_truststore(ctx, s, err, errlen) != 0) {
        SSL_CTX_free(ctx);
        ERR_clear_error();
        return NULL;
    }
    SSL_CTX_set_verify(ctx, verify, NULL);
    return ctx;
}

/* ------------------------------------------------------ principal rules */

static void rules_free(rules_t *r)
{
    for (int i = 0; i < r->n; i++) {
        pcre2_code_free(r->v[i].re);
        ls_free(r->v[i].replacement);
    }
    r->n = 0;
}

/* Up to an unescaped '/': the text with its escapes kept (the pattern is
 * a regex, where "\/" means '/'); NULL when the '/' is missing. */
static char *until_slash(const char **pp)
{
    const char *p = *pp, *s = p;
    while (*p && *p != '/')
        p += (*p == '\\' && p[1]) ? 2 : 1;
    if (*p != '/') return NULL;
    *pp = p + 1;
    return ls_strndup(s, (size_t)(p - s));
}

static ls_status rules_parse(const char *text, rules_t *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    const char *p = text ? text : "DEFAULT";
    for (;;) {
        while (isspace((unsigned char)*p))
            p++;
        if (!*p) break;
        if (r->n == MAX_RULES) {
            snprintf(err, errlen, "ssl.principal.mapping.rules: more than %d rules", MAX_RULES);
            goto bad;
        }
        rule_t *ru = &r->v[r->n];
        const char *start = p;
        if (!strncmp(p, "DEFAULT", 7)) {
            ru->is_default = true;
            p += 7;
        } else if (!strncmp(p, "RULE:", 5)) {
            p += 5;
            char *pat = until_slash(&p);
            char *rep = pat ? until_slash(&p) : NULL;
            if (!rep) {
                ls_free(pat);
                snprintf(err, errlen,
                         "ssl.principal.mapping.rules: invalid rule '%.60s' (expected "
                         "RULE:pattern/replacement/[LU] or DEFAULT)",
                         start);
                goto bad;
            }
            if (*p == 'L' || *p == 'U') ru->kase = *p++;
            int ec;
            PCRE2_SIZE eo;
            ru->re = pcre2_compile((PCRE2_SPTR)pat, PCRE2_ZERO_TERMINATED, 0, &ec, &eo, NULL);
            if (!ru->re) {
                PCRE2_UCHAR msg[120];
                pcre2_get_error_message(ec, msg, sizeof msg);
                snprintf(err, errlen, "ssl.principal.mapping.rules: pattern '%s': %s at %zu", pat,
                         (const char *)msg, (size_t)eo);
                ls_free(pat);
                ls_free(rep);
                goto bad;
            }
            ls_free(pat);
            ru->replacement = rep;
        } else {
            snprintf(err, errlen,
                     "ssl.principal.mapping.rules: invalid rule '%.60s' (expected "
                     "RULE:pattern/replacement/[LU] or DEFAULT)",
                     start);
            goto bad;
        }
        r->n++;
        /* as Kafka's splitter: anything up to the next comma is ignored */
        p += strcspn(p, ",");
        if (*p == ',') p++;
    }
    return LS_OK;
bad:
    rules_free(r);
    return LS_EINVAL;
}

/* LS_OK with the principal in out, or LS_ENOTFOUND (why) when no rule
 * applies. */
static ls_status rules_apply(const rules_t *r, const char *dn, char *out, size_t cap, char *why,
                             size_t whylen)
{
    for (int i = 0; i < r->n; i++) {
        const rule_t *ru = &r->v[i];
        if (ru->is_default) {
            snprintf(out, cap, "User:%s", dn);
            return LS_OK;
        }
        pcre2_match_data *md = pcre2_match_data_create_from_pattern(ru->re, NULL);
        int m = pcre2_match(ru->re, (PCRE2_SPTR)dn, strlen(dn), 0,
                            PCRE2_ANCHORED | PCRE2_ENDANCHORED, md, NULL);
        pcre2_match_data_free(md);
        if (m < 0) continue;
        PCRE2_UCHAR res[512];
        PCRE2_SIZE rlen = sizeof res;
        int rc =
            pcre2_substitute(ru->re, (PCRE2_SPTR)dn, strlen(dn), 0, PCRE2_SUBSTITUTE_GLOBAL, NULL,
                             NULL, (PCRE2_SPTR)ru->replacement, PCRE2_ZERO_TERMINATED, res, &rlen);
        if (rc < 0) continue;
        for (PCRE2_SIZE k = 0; k < rlen && ru->kase; k++)
            res[k] = (PCRE2_UCHAR)(ru->kase == 'L' ? tolower(res[k]) : toupper(res[k]));
        snprintf(out, cap, "User:%.*s", (int)rlen, (const char *)res);
        return LS_OK;
    }
    snprintf(why, whylen, "no rule of ssl.principal.mapping.rules applies to '%s'", dn);
    return LS_ENOTFOUND;
}

ls_status ls_tls_map_principal(const char *rules, const char *dn, char *out, size_t cap, char *why,
                               size_t whylen)
{
    rules_t r;
    ls_status rc = rules_parse(rules, &r, why, whylen);
    if (rc != LS_OK) return rc;
    rc = rules_apply(&r, dn, out, cap, why, whylen);
    rules_free(&r);
    return rc;
}

/* ------------------------------------------------------------- server */

static char *dup_or_null(const char *s) { return s ? ls_strdup(s) : NULL; }

ls_tls_server_t *ls_tls_server_new(const ls_tls_settings_t *s, const char *what, char *err,
                                   size_t errlen)
{
    ls_tls_server_t *t = LS_NEW(ls_tls_server_t);
    const char **in[] = {&t->s.keystore_type,       &t->s.keystore_location,
                         &t->s.keystore_chain,      &t->s.keystore_key,
                         &t->s.key_password,        &t->s.truststore_type,
                         &t->s.truststore_location, &t->s.truststore_certs,
                         &t->s.enabled_protocols,   &t->s.protocol,
                         &t->s.cipher_suites,       &t->s.client_auth,
                         &t->s.principal_rules};
    t->s = *s;
    for (size_t i = 0; i < sizeof in / sizeof in[0]; i++)
        *in[i] = t->owned[i] = dup_or_null(*in[i]);
    snprintf(t->what, sizeof t->what, "%s", what);
    pthread_mutex_init(&t->mu, NULL);
    if (rules_parse(s->principal_rules, &t->rules, err, errlen) != 0 ||
        !(t->ctx = ctx_build(&t->s, err, errlen))) {
        ls_tls_server_free(t);
        return NULL;
    }
    return t;
}

ls_status ls_tls_server_reload(ls_tls_server_t *t, char *err, size_t errlen)
{
    SSL_CTX *ctx = ctx_build(&t->s, err, errlen);
    if (!ctx) return LS_EINVAL;
    pthread_mutex_lock(&t->mu);
    SSL_CTX *old = t->ctx;
    t->ctx = ctx;
    pthread_mutex_unlock(&t->mu);
    SSL_CTX_free(old); /* connections hold their own reference */
    return LS_OK;
}

void ls_tls_server_free(ls_tls_server_t *t)
{
    if (!t) return;
    SSL_CTX_free(t->ctx);
    rules_free(&t->rules);
    for (size_t i = 0; i < sizeof t->owned / sizeof t->owned[0]; i++)
        ls_free(t->owned[i]);
    pthread_mutex_destroy(&t->mu);
    ls_free(t);
}

/* ---------------------------------------------------------- connections */

ls_tls_conn_t *ls_tls_conn_new(ls_tls_server_t *t)
{
    ls_tls_conn_t *c = LS_NEW(ls_tls_conn_t);
    c->t = t;
    pthread_mutex_lock(&t->mu);
    c->ssl = SSL_new(t->ctx); /* takes its own reference to the context */
    pthread_mutex_unlock(&t->mu);
    c->in = BIO_new(BIO_s_mem());
    c->out = BIO_new(BIO_s_mem());
    BIO_set_mem_eof_return(c->in, -1); /* empty: "want more", not end of stream */
    SSL_set_bio(c->ssl, c->in, c->out);
    SSL_set_accept_state(c->ssl);
    return c;
}

void ls_tls_conn_free(ls_tls_conn_t *c)
{
    if (!c) return;
    SSL_free(c->ssl); /* frees both BIOs */
    ls_free(c);
}

void ls_tls_conn_feed(ls_tls_conn_t *c, const void *p, size_t n) { BIO_write(c->in, p, (int)n); }

ls_status ls_tls_conn_read(ls_tls_conn_t *c, void *out, size_t cap, size_t *got, char *why,
                           size_t whylen)
{
    *got = 0;
    int n = SSL_read(c->ssl, out, (int)(cap > INT32_MAX ? INT32_MAX : cap));
    if (n > 0) {
        *got = (size_t)n;
        return LS_OK;
    }
    int e = SSL_get_error(c->ssl, n);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
        ERR_clear_error();
        return LS_OK;
    }
    if (e == SSL_ERROR_ZERO_RETURN) {
        snprintf(why, whylen, "%s", "");
        ERR_clear_error();
        return LS_ESHUTDOWN;
    }
    char r[200];
    ssl_reason(r, sizeof r, "protocol error");
    long v = SSL_get_verify_result(c->ssl);
    if (v != X509_V_OK)
        snprintf(why, whylen, "TLS %s failed: %s (client certificate: %s)",
                 SSL_is_init_finished(c->ssl) ? "session" : "handshake", r,
                 X509_verify_cert_error_string(v));
    else
        snprintf(why, whylen, "TLS %s failed: %s%s",
                 SSL_is_init_finished(c->ssl) ? "session" : "handshake", r,
                 !SSL_is_init_finished(c->ssl) && (strstr(r, "wrong version") || strstr(r, "http"))
                     ? " (a client speaking plaintext to a TLS listener?)"
                     : "");
    return LS_EIO;
}

int ls_tls_conn_write(ls_tls_conn_t *c, const void *p, size_t n)
{
    size_t done = 0;
    while (done < n) {
        size_t chunk = n - done > (1u << 30) ? (1u << 30) : n - done;
        int w = SSL_write(c->ssl, (const char *)p + done, (int)chunk);
        if (w <= 0) {
            ERR_clear_error();
            return -1;
        }
        done += (size_t)w;
    }
    return 0;
}

void *ls_tls_conn_take_output(ls_tls_conn_t *c, size_t *len)
{
    size_t n = BIO_ctrl_pending(c->out);
    *len = 0;
    if (!n) return NULL;
    void *buf = ls_malloc(n);
    int r = BIO_read(c->out, buf, (int)n);
    *len = r > 0 ? (size_t)r : 0;
    return buf;
}

bool ls_tls_conn_established(const ls_tls_conn_t *c) { return SSL_is_init_finished(c->ssl); }

ls_status ls_tls_conn_principal(ls_tls_conn_t *c, char *out, size_t cap, char *why, size_t whylen)
{
    X509 *peer = SSL_get1_peer_certificate(c->ssl);
    if (!peer) {
        if (cap) out[0] = 0;
        return LS_OK;
    }
    BIO *b = BIO_new(BIO_s_mem());
    X509_NAME_print_ex(b, X509_get_subject_name(peer), 0, XN_FLAG_RFC2253);
    char dn[1024];
    int n = BIO_read(b, dn, (int)sizeof dn - 1);
    dn[n > 0 ? n : 0] = 0;
    BIO_free(b);
    X509_free(peer);
    return rules_apply(&c->t->rules, dn, out, cap, why, whylen);
}

/* ------------------------------------------------------------ PEM text */

static char *read_file(const char *path, char *err, size_t errlen, const char *key)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: cannot read %s", key, path);
        return NULL;
    }
    ls_buf_t b;
    ls_buf_init(&b);
    char tmp[4096];
    size_t n;
    while ((n = fread(tmp, 1, sizeof tmp, f)) > 0)
        ls_buf_append(&b, tmp, n);
    fclose(f);
    ls_buf_append(&b, "", 1);
    return (char *)b.data;
}

ls_status ls_tls_server_pem(ls_tls_server_t *t, char **cert_chain, char **key, char **trust,
                            char *err, size_t errlen)
{
    const ls_tls_settings_t *s = &t->s;
    *cert_chain = *key = *trust = NULL;
    if (s->keystore_location) {
        char *all = read_file(s->keystore_location, err, errlen, "ssl.keystore.location");
        if (!all) return LS_EIO;
        *cert_chain = all;
        *key = ls_strdup(all);
    } else {
        *cert_chain = pem_normalize(s->keystore_chain ? s->keystore_chain : "");
        *key = pem_normalize(s->keystore_key ? s->keystore_key : "");
    }
    if (s->truststore_location)
        *trust = read_file(s->truststore_location, err, errlen, "ssl.truststore.location");
    else if (s->truststore_certs)
        *trust = pem_normalize(s->truststore_certs);
    if (!*cert_chain || !*key || ((s->truststore_location || s->truststore_certs) && !*trust)) {
        if (!*err) snprintf(err, errlen, "ssl.keystore: no PEM material");
        ls_free(*cert_chain);
        ls_free(*key);
        ls_free(*trust);
        ls_status st = s->truststore_location && !*trust ? LS_EIO : LS_EINVAL;
        *cert_chain = *key = *trust = NULL;
        return st;
    }
    return LS_OK;
}
