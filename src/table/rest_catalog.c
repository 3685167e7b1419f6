/* Iceberg REST catalog client: see rest_catalog.h. */
#include "table/rest_catalog.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/curl_pool.h"
#include "table/rest_commit.h"

#define CONNECT_TIMEOUT_MS 5000L
#define REQUEST_TIMEOUT_MS 15000L
#define MAX_ANSWER_BYTES (64u << 20) /* a table's metadata can be large, not this large */

struct ls_rest_catalog {
    ls_catalog_conf_t conf; /* a copy */
    CURL *curl;
    bool ready;   /* GET /v1/config done */
    char *prefix; /* "" or "p/" */
    char *token;  /* bearer token in use */
};

static char *dup_or_null(const char *s) { return s ? ls_strdup(s) : NULL; }

ls_rest_catalog_t *ls_rest_catalog_open(const ls_catalog_conf_t *conf)
{
    ls_curl_global_init();
    ls_rest_catalog_t *rc = LS_NEW(ls_rest_catalog_t);
    ls_catalog_conf_copy(&rc->conf, conf);
    rc->token = dup_or_null(conf->token);
    return rc;
}

void ls_rest_catalog_close(ls_rest_catalog_t *rc)
{
    if (!rc) return;
    if (rc->curl) curl_easy_cleanup(rc->curl);
    ls_catalog_conf_clear(&rc->conf);
    ls_free(rc->prefix);
    ls_free(rc->token);
    ls_free(rc);
}

const char *ls_rest_catalog_name(const ls_rest_catalog_t *rc) { return rc->conf.name; }

static size_t on_data(char *p, size_t size, size_t n, void *arg)
{
    ls_buf_t *b = arg;
    if (b->len + size * n > MAX_ANSWER_BYTES) return 0;
    ls_buf_append(b, p, size * n);
    return size * n;
}

/* One HTTP exchange. form: body is x-www-form-urlencoded text (the token
 * endpoint), else JSON. *code 0 on a transport failure (err filled). */
static void exchange(ls_rest_catalog_t *rc, const char *method, const char *url, const char *body,
                     bool form, bool auth, long *code, ls_buf_t *answer, char *err, size_t errlen)
{
    *code = 0;
    if (!rc->curl) rc->curl = curl_easy_init();
    CURL *c = rc->curl;
    curl_easy_reset(c);
    struct curl_slist *h = NULL;
    h = curl_slist_append(h, form ? "Content-Type: application/x-www-form-urlencoded"
                                  : "Content-Type: application/json");
    h = curl_slist_append(h, "Accept: application/json");
    h = curl_slist_append(h, "Expect:");
    for (size_t i = 0; i < rc->conf.nheaders; i++)
        h = curl_slist_append(h, rc->conf.headers[i]);
    char *bearer = NULL;
    if (auth && rc->token) {
        bearer = ls_asprintf("Authorization: Bearer %s", rc->token);
        h = curl_slist_append(h, bearer);
    }
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    } else if (strcmp(method, "GET") == 0) {
        curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
    }
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, answer);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, CONNECT_TIMEOUT_MS);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, REQUEST_TIMEOUT_MS);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");
    CURLcode cc = curl_easy_perform(c);
    if (cc != CURLE_OK)
        snprintf(err, errlen, "%s %s: %s", method, url, curl_easy_strerror(cc));
    else
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, code);
    curl_slist_free_all(h);
    if (bearer) {
        memset(bearer, 0, strlen(bearer));
        ls_free(bearer);
    }
}

/* The catalog's error message of an answer ({"error": {"message"}}). */
static void describe(const char *what, long code, const ls_buf_t *answer, char *err, size_t errlen)
{
    json_t *j = json_loadb((const char *)answer->data, answer->len, 0, NULL);
    const char *msg = json_string_value(json_object_get(json_object_get(j, "error"), "message"));
    if (!msg) msg = json_string_value(json_object_get(j, "error_description"));
    snprintf(err, errlen, "%s: HTTP %ld%s%.200s", what, code, msg ? ": " : "", msg ? msg : "");
    if (j) json_decref(j);
}

static ls_status status_of(long code)
{
    if (code >= 200 && code < 300) return LS_OK;
    if (code == 404) return LS_ENOTFOUND;
    if (code == 409) return LS_ECONFLICT;
    if (code == 0 || code == 429 || code >= 500) return LS_EAGAIN;
    return LS_EIO;
}

/* client_credentials grant (RFC 6749 4.4) at the token endpoint. */
static ls_status fetch_token(ls_rest_catalog_t *rc, char *err, size_t errlen)
{
    const char *cred = rc->conf.credential;
    const char *colon = strchr(cred, ':');
    if (!rc->curl) rc->curl = curl_easy_init();
    char *id = colon ? curl_easy_escape(rc->curl, cred, (int)(colon - cred)) : NULL;
    char *secret = curl_easy_escape(rc->curl, colon ? colon + 1 : cred, 0);
    char *scope = curl_easy_escape(rc->curl, rc->conf.scope ? rc->conf.scope : "catalog", 0);
    char *form = ls_asprintf("grant_type=client_credentials%s%s&client_secret=%s&scope=%s",
                             id ? "&client_id=" : "", id ? id : "", secret, scope);
    curl_free(id);
    curl_free(secret);
    curl_free(scope);
    char *url = rc->conf.oauth2_uri ? ls_strdup(rc->conf.oauth2_uri)
                                    : ls_asprintf("%s/v1/oauth/tokens", rc->conf.uri);
    ls_buf_t answer;
    ls_buf_init(&answer);
    long code;
    exchange(rc, "POST", url, form, true, false, &code, &answer, err, errlen);
    memset(form, 0, strlen(form));
    ls_free(form);
    ls_status st = status_of(code);
    if (st == LS_OK) {
        json_t *j = json_loadb((const char *)answer.data, answer.len, 0, NULL);
        const char *tok = json_string_value(json_object_get(j, "access_token"));
        if (tok) {
            ls_free(rc->token);
            rc->token = ls_strdup(tok);
        } else {
            snprintf(err, errlen, "POST %s: the answer has no access_token", url);
            st = LS_EIO;
        }
        if (j) json_decref(j);
    } else if (code) {
        char what[300];
        snprintf(what, sizeof what, "POST %s (OAuth2 token)", url);
        describe(what, code, &answer, err, errlen);
    }
    ls_buf_free(&answer);
    ls_free(url);
    return st;
}

/* GET /v1/config: the prefix. */
static ls_status session(ls_rest_catalog_t *rc, char *err, size_t errlen)
{
    if (rc->ready) return LS_OK;
    ls_status st;
    if (rc->conf.credential && !rc->token && (st = fetch_token(rc, err, errlen)) != LS_OK)
        return st;
    if (!rc->curl) rc->curl = curl_easy_init();
    char *wh = rc->conf.warehouse ? curl_easy_escape(rc->curl, rc->conf.warehouse, 0) : NULL;
    char *url =
        ls_asprintf("%s/v1/config%s%s", rc->conf.uri, wh ? "?warehouse=" : "", wh ? wh : "");
    curl_free(wh);
    ls_buf_t answer;
    ls_buf_init(&answer);
    long code;
    exchange(rc, "GET", url, NULL, false, true, &code, &answer, err, errlen);
    if (code == 401 && rc->conf.credential && fetch_token(rc, err, errlen) == LS_OK) {
        ls_buf_free(&answer);
        ls_buf_init(&answer);
        exchange(rc, "GET", url, NULL, false, true, &code, &answer, err, errlen);
    }
    st = status_of(code);
    if (st == LS_OK) {
        json_t *j = json_loadb((const char *)answer.data, answer.len, 0, NULL);
        const char *p =
            json_string_value(json_object_get(json_object_get(j, "overrides"), "prefix"));
        if (rc->conf.prefix) p = rc->conf.prefix;
        ls_free(rc->prefix);
        rc->prefix = p && *p ? ls_asprintf("%s/", p) : ls_strdup("");
        rc->ready = true;
        if (j) json_decref(j);
    } else if (code) {
        char what[300];
        snprintf(what, sizeof what, "GET %s", url);
        describe(what, code, &answer, err, errlen);
    }
    ls_buf_free(&answer);
    ls_free(url);
    return st;
}

/* A call of the catalog API: path below /v1/{prefix}/. */
static ls_status call(ls_rest_catalog_t *rc, const char *method, const char *path,
                      const json_t *body, json_t **out, char *err, size_t errlen)
{
    if (out) *out = NULL;
    ls_status st = session(rc, err, errlen);
    if (st != LS_OK) return st;
    char *url = ls_asprintf("%s/v1/%s%s", rc->conf.uri, rc->prefix, path);
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    ls_buf_t answer;
    ls_buf_init(&answer);
    long code;
    exchange(rc, method, url, text, false, true, &code, &answer, err, errlen);
    if (code == 401 && rc->conf.credential && fetch_token(rc, err, errlen) == LS_OK) {
        ls_buf_free(&answer);
        ls_buf_init(&answer);
        exchange(rc, method, url, text, false, true, &code, &answer, err, errlen);
    }
    st = status_of(code);
    if (st == LS_OK && out) {
        *out = json_loadb((const char *)answer.data, answer.len, 0, NULL);
        if (!*out) {
            snprintf(err, errlen, "%s %s: the answer is not JSON", method, url);
            st = LS_EIO;
        }
    } else if (st != LS_OK && code) {
        char what[600];
        snprintf(what, sizeof what, "%s %s", method, url);
        describe(what, code, &answer, err, errlen);
    }
    ls_buf_free(&answer);
    free(text);
    ls_free(url);
    return st;
}

static char *escape(ls_rest_catalog_t *rc, const char *s)
{
    if (!rc->curl) rc->curl = curl_easy_init();
    char *e = curl_easy_escape(rc->curl, s, 0);
    char *r = ls_strdup(e);
    curl_free(e);
    return r;
}

ls_status ls_rest_catalog_load(ls_rest_catalog_t *rc, const char *ns, const char *table,
                               json_t **metadata, char **location, char *err, size_t errlen)
{
    char *n = escape(rc, ns), *t = escape(rc, table);
    char *path = ls_asprintf("namespaces/%s/tables/%s", n, t);
    json_t *ans;
    ls_status st = call(rc, "GET", path, NULL, &ans, err, errlen);
    ls_free(path);
    ls_free(n);
    ls_free(t);
    if (st != LS_OK) return st;
    json_t *md = json_object_get(ans, "metadata");
    const char *loc = json_string_value(json_object_get(ans, "metadata-location"));
    if (!json_is_object(md)) {
        snprintf(err, errlen, "loading %s.%s: the answer has no metadata", ns, table);
        json_decref(ans);
        return LS_EIO;
    }
    if (metadata) *metadata = json_incref(md);
    if (location) *location = loc ? ls_strdup(loc) : NULL;
    json_decref(ans);
    return LS_OK;
}

ls_status ls_rest_catalog_create_namespace(ls_rest_catalog_t *rc, const char *ns, char *err,
                                           size_t errlen)
{
    json_t *body = ls_rest_namespace_body(ns);
    ls_status st = call(rc, "POST", "namespaces", body, NULL, err, errlen);
    json_decref(body);
    return st == LS_ECONFLICT ? LS_OK : st; /* it exists */
}

ls_status ls_rest_catalog_register(ls_rest_catalog_t *rc, const char *ns, const char *table,
                                   const char *metadata_location, char *err, size_t errlen)
{
    char *n = escape(rc, ns);
    char *path = ls_asprintf("namespaces/%s/register", n);
    json_t *body = ls_rest_register_body(table, metadata_location);
    ls_status st = call(rc, "POST", path, body, NULL, err, errlen);
    json_decref(body);
    ls_free(path);
    ls_free(n);
    return st;
}

ls_status ls_rest_catalog_commit(ls_rest_catalog_t *rc, const char *ns, const char *table,
                                 const json_t *body, char *err, size_t errlen)
{
    char *n = escape(rc, ns), *t = escape(rc, table);
    char *path = ls_asprintf("namespaces/%s/tables/%s", n, t);
    ls_status st = call(rc, "POST", path, body, NULL, err, errlen);
    ls_free(path);
    ls_free(n);
    ls_free(t);
    return st;
}
