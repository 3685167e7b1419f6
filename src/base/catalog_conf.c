/* catalog.<name>.* broker settings: see catalog_conf.h. */
#include "base/catalog_conf.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "base/alloc.h"

static ls_catalog_confs_t installed;

static const char *const fields_str[] = {"type",  "uri",        "warehouse",
                                         "token", "credential", "oauth2-server-uri",
                                         "scope", "prefix",     NULL};

bool ls_catalog_conf_key(const char *key)
{
    return strncmp(key, LS_CATALOG_CONF_PREFIX, strlen(LS_CATALOG_CONF_PREFIX)) == 0;
}

static const char *field_of(const char *key)
{
    const char *name = key + strlen(LS_CATALOG_CONF_PREFIX);
    const char *dot = strchr(name, '.');
    return dot ? dot + 1 : "";
}

bool ls_catalog_conf_secret(const char *key)
{
    if (!ls_catalog_conf_key(key)) return false;
    const char *f = field_of(key);
    if (strcmp(f, "token") == 0 || strcmp(f, "credential") == 0) return true;
    /* an Authorization header carries a secret as well */
    return strncmp(f, "header.", 7) == 0 && strcasecmp(f + 7, "authorization") == 0;
}

static bool name_ok(const char *s, size_t n)
{
    if (n == 0 || n > LS_CATALOG_NAME_MAX) return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-'))
            return false;
    }
    return true;
}

static bool header_name_ok(const char *s)
{
    if (!*s) return false;
    for (; *s; s++) /* an HTTP token (RFC 9110 5.6.2), without the rarer marks */
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '-' || *s == '_' || *s == '.'))
            return false;
    return true;
}

const ls_catalog_conf_t *ls_catalog_conf_find(const ls_catalog_confs_t *cs, const char *name)
{
    for (size_t i = 0; i < cs->n; i++)
        if (strcmp(cs->v[i].name, name) == 0) return &cs->v[i];
    return NULL;
}

static void set_str(char **dst, const char *v)
{
    ls_free(*dst);
    *dst = ls_strdup(v);
}

ls_status ls_catalog_conf_set(ls_catalog_confs_t *cs, const char *key, const char *value, char *err,
                              size_t errlen)
{
    const char *name = key + strlen(LS_CATALOG_CONF_PREFIX);
    const char *dot = strchr(name, '.');
    if (!ls_catalog_conf_key(key) || !dot || !name_ok(name, (size_t)(dot - name))) {
        snprintf(err, errlen,
                 "%s: unknown key (external catalogs are catalog.<name>.<field>, the name of "
                 "1 to %d characters [a-zA-Z0-9_-])",
                 key, LS_CATALOG_NAME_MAX);
        return LS_EINVAL;
    }
    size_t nlen = (size_t)(dot - name);
    if (nlen == strlen("builtin") && strncmp(name, "builtin", nlen) == 0) {
        snprintf(err, errlen, "%s: 'builtin' names the broker's own catalog", key);
        return LS_EINVAL;
    }
    const char *f = dot + 1;
    int fi = -1;
    for (int i = 0; fields_str[i]; i++)
        if (strcmp(f, fields_str[i]) == 0) fi = i;
    bool header = strncmp(f, "header.", 7) == 0;
    if (fi < 0 && !header) {
        snprintf(err, errlen,
                 "%s: unknown key (a catalog's fields are type, uri, warehouse, token, "
                 "credential, oauth2-server-uri, scope, prefix, header.<name>)",
                 key);
        return LS_EINVAL;
    }
    if (header && !header_name_ok(f + 7)) {
        snprintf(err, errlen, "%s: '%s' is not an HTTP header name", key, f + 7);
        return LS_EINVAL;
    }
    if (strpbrk(value, "\r\n")) {
        snprintf(err, errlen, "%s: the value has a line break", key);
        return LS_EINVAL;
    }
    char nm[LS_CATALOG_NAME_MAX + 1];
    memcpy(nm, name, nlen);
    nm[nlen] = 0;
    ls_catalog_conf_t *c = (ls_catalog_conf_t *)ls_catalog_conf_find(cs, nm);
    if (!c) {
        cs->v = ls_realloc(cs->v, (cs->n + 1) * sizeof *cs->v);
        c = &cs->v[cs->n++];
        memset(c, 0, sizeof *c);
        c->name = ls_strdup(nm);
    }
    if (header) {
        size_t hl = strlen(f + 7);
        for (size_t i = 0; i < c->nheaders; i++)
            if (strncasecmp(c->headers[i], f + 7, hl) == 0 && c->headers[i][hl] == ':') {
                ls_free(c->headers[i]);
                c->headers[i] = ls_asprintf("%s: %s", f + 7, value);
                return LS_OK;
            }
        c->headers = ls_realloc(c->headers, (c->nheaders + 1) * sizeof *c->headers);
        c->headers[c->nheaders++] = ls_asprintf("%s: %s", f + 7, value);
        return LS_OK;
    }
    switch (fi) {
    case 0:
        if (strcmp(value, "rest") != 0) {
            snprintf(err, errlen,
                     "%s: unsupported catalog type '%s' (supported: rest, an Iceberg REST "
                     "catalog)",
                     key, value);
            return LS_EINVAL;
        }
        set_str(&c->type, value);
        break;
    case 1: {
        if (strncmp(value, "http://", 7) != 0 && strncmp(value, "https://", 8) != 0) {
            snprintf(err, errlen, "%s: '%s' is not an http:// or https:// URI", key, value);
            return LS_EINVAL;
        }
        set_str(&c->uri, value);
        size_t n = strlen(c->uri);
        while (n > 8 && c->uri[n - 1] == '/')
            c->uri[--n] = 0;
        break;
    }
    case 2: set_str(&c->warehouse, value); break;
    case 3: set_str(&c->token, value); break;
    case 4: set_str(&c->credential, value); break;
    case 5:
        if (strncmp(value, "http://", 7) != 0 && strncmp(value, "https://", 8) != 0) {
            snprintf(err, errlen, "%s: '%s' is not an http:// or https:// URI", key, value);
            return LS_EINVAL;
        }
        set_str(&c->oauth2_uri, value);
        break;
    case 6: set_str(&c->scope, value); break;
    case 7: {
        const char *p = value;
        while (*p == '/')
            p++;
        set_str(&c->prefix, p);
        size_t n = strlen(c->prefix);
        while (n && c->prefix[n - 1] == '/')
            c->prefix[--n] = 0;
        break;
    }
    }
    return LS_OK;
}

ls_status ls_catalog_conf_finish(const ls_catalog_confs_t *cs, char *err, size_t errlen)
{
    for (size_t i = 0; i < cs->n; i++) {
        const ls_catalog_conf_t *c = &cs->v[i];
        if (!c->type) {
            snprintf(err, errlen, "catalog.%s.type: missing (set it to rest)", c->name);
            return LS_EINVAL;
        }
        if (!c->uri) {
            snprintf(err, errlen, "catalog.%s.uri: missing (the catalog's base URI)", c->name);
            return LS_EINVAL;
        }
        if (c->token && c->credential) {
            snprintf(err, errlen,
                     "catalog.%s.token and catalog.%s.credential: set one of them, not both",
                     c->name, c->name);
            return LS_EINVAL;
        }
    }
    return LS_OK;
}

void ls_catalog_conf_clear(ls_catalog_conf_t *c)
{
    ls_free(c->name);
    ls_free(c->type);
    ls_free(c->uri);
    ls_free(c->warehouse);
    ls_free(c->token);
    ls_free(c->credential);
    ls_free(c->oauth2_uri);
    ls_free(c->scope);
    ls_free(c->prefix);
    for (size_t i = 0; i < c->nheaders; i++)
        ls_free(c->headers[i]);
    ls_free(c->headers);
    memset(c, 0, sizeof *c);
}

void ls_catalog_confs_free(ls_catalog_confs_t *cs)
{
    for (size_t i = 0; i < cs->n; i++)
        ls_catalog_conf_clear(&cs->v[i]);
    ls_free(cs->v);
    cs->v = NULL;
    cs->n = 0;
}

static char *dup_or_null(const char *s) { return s ? ls_strdup(s) : NULL; }

void ls_catalog_conf_copy(ls_catalog_conf_t *d, const ls_catalog_conf_t *s)
{
    d->name = ls_strdup(s->name);
    d->type = dup_or_null(s->type);
    d->uri = dup_or_null(s->uri);
    d->warehouse = dup_or_null(s->warehouse);
    d->token = dup_or_null(s->token);
    d->credential = dup_or_null(s->credential);
    d->oauth2_uri = dup_or_null(s->oauth2_uri);
    d->scope = dup_or_null(s->scope);
    d->prefix = dup_or_null(s->prefix);
    d->nheaders = s->nheaders;
    d->headers = s->nheaders ? LS_NEWN(char *, s->nheaders) : NULL;
    for (size_t h = 0; h < s->nheaders; h++)
        d->headers[h] = ls_strdup(s->headers[h]);
}

void ls_catalog_confs_install(const ls_catalog_confs_t *cs)
{
    ls_catalog_confs_free(&installed);
    if (!cs || !cs->n) return;
    installed.v = LS_NEWN(ls_catalog_conf_t, cs->n);
    installed.n = cs->n;
    for (size_t i = 0; i < cs->n; i++)
        ls_catalog_conf_copy(&installed.v[i], &cs->v[i]);
}

const ls_catalog_conf_t *ls_catalog_conf_get(const char *name)
{
    return ls_catalog_conf_find(&installed, name);
}

void ls_catalog_conf_names(char *buf, size_t cap)
{
    size_t n = 0;
    if (cap) buf[0] = 0;
    for (size_t i = 0; i < installed.n && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%s", i ? ", " : "", installed.v[i].name);
}
