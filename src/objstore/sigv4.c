/* AWS Signature Version 4 (see sigv4.h). Uses OpenSSL's EVP digests and
 * one-shot HMAC; every buffer is local to the call, so any thread may sign. */
#include "objstore/sigv4.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "base/alloc.h"
#include "base/check.h"

static const char hexd[] = "0123456789abcdef";

static void to_hex(const unsigned char *p, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = hexd[p[i] >> 4];
        out[2 * i + 1] = hexd[p[i] & 15];
    }
    out[2 * n] = 0;
}

static void digest_iov(const EVP_MD *md, const struct iovec *iov, int iovcnt, unsigned char *dig,
                       unsigned int *dlen)
{
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (!ctx) LS_PANIC("sigv4: EVP_MD_CTX_new failed (out of memory)");
    EVP_DigestInit_ex(ctx, md, NULL);
    for (int i = 0; i < iovcnt; i++)
        if (iov[i].iov_len) EVP_DigestUpdate(ctx, iov[i].iov_base, iov[i].iov_len);
    EVP_DigestFinal_ex(ctx, dig, dlen);
    EVP_MD_CTX_free(ctx);
}

void ls_sha256_hex_iov(const struct iovec *iov, int iovcnt, char out[LS_SHA256_HEX_LEN + 1])
{
    unsigned char dig[EVP_MAX_MD_SIZE];
    unsigned int dlen = 0;
    digest_iov(EVP_sha256(), iov, iovcnt, dig, &dlen);
    to_hex(dig, dlen, out);
}

void ls_sha256_hex(const void *p, size_t n, char out[LS_SHA256_HEX_LEN + 1])
{
    struct iovec v = {(void *)p, n};
    ls_sha256_hex_iov(&v, 1, out);
}

void ls_md5_iov(const struct iovec *iov, int iovcnt, char hex[33], char b64[25])
{
    unsigned char dig[EVP_MAX_MD_SIZE];
    unsigned int dlen = 0;
    digest_iov(EVP_md5(), iov, iovcnt, dig, &dlen);
    if (hex) to_hex(dig, dlen, hex);
    if (b64) EVP_EncodeBlock((unsigned char *)b64, dig, (int)dlen);
}

void ls_sigv4_date(time_t t, char out[17])
{
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, 17, "%Y%m%dT%H%M%SZ", &tm);
}

static int unreserved(unsigned char ch)
{
    return isalnum(ch) || ch == '-' || ch == '.' || ch == '_' || ch == '~';
}

void ls_sigv4_uri_encode(ls_buf_t *out, const char *s, size_t n, int encode_slash)
{
    ls_buf_reserve(out, n * 3 + 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (unreserved(ch) || (ch == '/' && !encode_slash)) {
            out->data[out->len++] = ch;
        } else {
            out->data[out->len++] = '%';
            out->data[out->len++] = (uint8_t) "0123456789ABCDEF"[ch >> 4];
            out->data[out->len++] = (uint8_t) "0123456789ABCDEF"[ch & 15];
        }
    }
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Percent-decodes s[0..n) into out (NUL-terminated). */
static void uri_decode(const char *s, size_t n, ls_buf_t *out)
{
    out->len = 0;
    ls_buf_reserve(out, n + 1);
    for (size_t i = 0; i < n; i++) {
        int hi, lo;
        if (s[i] == '%' && i + 2 < n && (hi = hexval(s[i + 1])) >= 0 &&
            (lo = hexval(s[i + 2])) >= 0) {
            out->data[out->len++] = (uint8_t)(hi << 4 | lo);
            i += 2;
        } else {
            out->data[out->len++] = (uint8_t)s[i];
        }
    }
    out->data[out->len] = 0;
}

typedef struct kv_s {
    char *k, *v; /* encoded */
} kv_s_t;

static int kv_cmp(const void *a, const void *b)
{
    const kv_s_t *x = a, *y = b;
    int c = strcmp(x->k, y->k);
    return c ? c : strcmp(x->v, y->v);
}

static char *encode_dup(const char *s, size_t n)
{
    ls_buf_t dec, enc;
    ls_buf_init(&dec);
    ls_buf_init(&enc);
    uri_decode(s, n, &dec);
    ls_sigv4_uri_encode(&enc, (const char *)dec.data, dec.len, 1);
    ls_buf_append_u8(&enc, 0);
    ls_buf_free(&dec);
    size_t len;
    return (char *)ls_buf_steal(&enc, &len);
}

static void canonical_query(const char *q, ls_buf_t *out)
{
    if (!q || !*q) return;
    size_t cap = 1;
    for (const char *p = q; *p; p++)
        cap += *p == '&';
    kv_s_t *v = LS_NEWN(kv_s_t, cap);
    size_t n = 0;
    const char *p = q;
    while (*p) {
        const char *amp = strchr(p, '&');
        size_t len = amp ? (size_t)(amp - p) : strlen(p);
        if (len) {
            const char *eq = memchr(p, '=', len);
            size_t klen = eq ? (size_t)(eq - p) : len;
            v[n].k = encode_dup(p, klen);
            v[n].v = eq ? encode_dup(eq + 1, len - klen - 1) : ls_strdup("");
            n++;
        }
        p += len;
        if (*p == '&') p++;
    }
    qsort(v, n, sizeof *v, kv_cmp);
    for (size_t i = 0; i < n; i++) {
        ls_buf_printf(out, "%s%s=%s", i ? "&" : "", v[i].k, v[i].v);
        ls_free(v[i].k);
        ls_free(v[i].v);
    }
    ls_free(v);
}

typedef struct hdr_s {
    char *name;  /* lower-case */
    char *value; /* trimmed, runs of spaces collapsed */
} hdr_s_t;

static int hdr_cmp(const void *a, const void *b)
{
    return strcmp(((const hdr_s_t *)a)->name, ((const hdr_s_t *)b)->name);
}

static char *hdr_value(const char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    char *out = ls_malloc(n + 1);
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i] == '\t' ? ' ' : s[i];
        if (ch == ' ' && o && out[o - 1] == ' ') continue;
        out[o++] = ch;
    }
    out[o] = 0;
    return out;
}

static void hmac(const void *key, size_t klen, const char *msg, size_t mlen, unsigned char out[32])
{
    unsigned int olen = 32;
    HMAC(EVP_sha256(), key, (int)klen, (const unsigned char *)msg, mlen, out, &olen);
}

int ls_sigv4_authorization(const ls_sigv4_req_t *r, const ls_sigv4_cred_t *c, const char *amz_date,
                           ls_buf_t *out, ls_buf_t *creq_out, ls_buf_t *sts_out)
{
    if (!amz_date || strlen(amz_date) != 16 || amz_date[8] != 'T') return -1;
    char day[9];
    memcpy(day, amz_date, 8);
    day[8] = 0;

    /* canonical request */
    ls_buf_t creq;
    ls_buf_init(&creq);
    ls_buf_printf(&creq, "%s\n", r->method);
    const char *path = r->path && *r->path ? r->path : "/";
    ls_sigv4_uri_encode(&creq, path, strlen(path), 0);
    ls_buf_append_u8(&creq, '\n');
    canonical_query(r->query, &creq);
    ls_buf_append_u8(&creq, '\n');

    hdr_s_t *h = LS_NEWN(hdr_s_t, r->nhdrs ? r->nhdrs : 1);
    for (int i = 0; i < r->nhdrs; i++) {
        h[i].name = ls_strdup(r->hdrs[i].name);
        for (char *p = h[i].name; *p; p++)
            *p = (char)tolower((unsigned char)*p);
        h[i].value = hdr_value(r->hdrs[i].value);
    }
    qsort(h, (size_t)r->nhdrs, sizeof *h, hdr_cmp);
    ls_buf_t signed_hdrs;
    ls_buf_init(&signed_hdrs);
    for (int i = 0; i < r->nhdrs; i++) {
        /* repeated names: one line, values joined by commas (spec) */
        if (i && strcmp(h[i].name, h[i - 1].name) == 0) {
            creq.len--; /* drop the '\n' */
            ls_buf_printf(&creq, ",%s\n", h[i].value);
            continue;
        }
        ls_buf_printf(&creq, "%s:%s\n", h[i].name, h[i].value);
        ls_buf_printf(&signed_hdrs, "%s%s", signed_hdrs.len ? ";" : "", h[i].name);
    }
    ls_buf_append_u8(&signed_hdrs, 0);
    ls_buf_printf(&creq, "\n%s\n%s", (const char *)signed_hdrs.data, r->payload_hash);
    for (int i = 0; i < r->nhdrs; i++) {
        ls_free(h[i].name);
        ls_free(h[i].value);
    }
    ls_free(h);

    /* string to sign */
    char creq_hash[LS_SHA256_HEX_LEN + 1];
    ls_sha256_hex(creq.data, creq.len, creq_hash);
    ls_buf_t sts;
    ls_buf_init(&sts);
    ls_buf_printf(&sts, "AWS4-HMAC-SHA256\n%s\n%s/%s/%s/aws4_request\n%s", amz_date, day, c->region,
                  c->service, creq_hash);

    /* signing key: HMAC chain over date, region, service, "aws4_request" */
    unsigned char k[32], k2[32];
    char *secret = ls_asprintf("AWS4%s", c->secret_key);
    hmac(secret, strlen(secret), day, strlen(day), k);
    memset(secret, 0, strlen(secret));
    ls_free(secret);
    hmac(k, 32, c->region, strlen(c->region), k2);
    hmac(k2, 32, c->service, strlen(c->service), k);
    hmac(k, 32, "aws4_request", 12, k2);
    unsigned char sig[32];
    hmac(k2, 32, (const char *)sts.data, sts.len, sig);
    memset(k, 0, sizeof k);
    memset(k2, 0, sizeof k2);
    char sighex[65];
    to_hex(sig, 32, sighex);

    ls_buf_printf(out,
                  "AWS4-HMAC-SHA256 Credential=%s/%s/%s/%s/aws4_request, SignedHeaders=%s, "
                  "Signature=%s",
                  c->access_key, day, c->region, c->service, (const char *)signed_hdrs.data,
                  sighex);
    if (creq_out) ls_buf_append(creq_out, creq.data, creq.len);
    if (sts_out) ls_buf_append(sts_out, sts.data, sts.len);
    ls_buf_free(&signed_hdrs);
    ls_buf_free(&creq);
    ls_buf_free(&sts);
    return 0;
}
