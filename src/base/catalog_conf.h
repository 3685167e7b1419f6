/* External table catalogs: the broker settings catalog.<name>.<field>.
 *
 *   catalog.<name>.type               rest (the only kind)
 *   catalog.<name>.uri                base URI of an Iceberg REST catalog
 *   catalog.<name>.warehouse          warehouse to ask GET /v1/config for
 *   catalog.<name>.token              bearer token (secret)
 *   catalog.<name>.credential         OAuth2 client credentials id:secret (secret)
 *   catalog.<name>.oauth2-server-uri  token endpoint (default <uri>/v1/oauth/tokens)
 *   catalog.<name>.scope              OAuth2 scope (default "catalog")
 *   catalog.<name>.prefix             path prefix (default: the catalog's
 *                                     GET /v1/config "prefix" override)
 *   catalog.<name>.header.<H>         an extra HTTP header H on every request
 *
 * A name is 1..64 of [a-zA-Z0-9_-] and not "builtin". Unknown fields, a
 * type other than rest, a catalog without uri, and token together with
 * credential are refused with a message naming the key.
 *
 * The parsed set (ls_catalog_confs_t) belongs to the configuration. The
 * broker installs a copy process-wide once at start, before any thread
 * reads it (ls_catalog_confs_install); from then on it is read-only, so the
 * policy parser and the compaction worker read it without locks. */
#ifndef LS_BASE_CATALOG_CONF_H
#define LS_BASE_CATALOG_CONF_H
#include <stdbool.h>
#include <stddef.h>

#include "base/status.h"

#define LS_CATALOG_CONF_PREFIX "catalog."
#define LS_CATALOG_NAME_MAX 64

typedef struct ls_catalog_conf {
    char *name;
    char *type;
    char *uri; /* without trailing '/' */
    char *warehouse;
    char *token;      /* secret */
    char *credential; /* secret: "id:secret" (or "secret" alone) */
    char *oauth2_uri;
    char *scope;
    char *prefix;
    char **headers; /* "Name: value" */
    size_t nheaders;
} ls_catalog_conf_t;

typedef struct ls_catalog_confs {
    ls_catalog_conf_t *v;
    size_t n;
} ls_catalog_confs_t;

/* Whether key is a catalog.* key (then ls_catalog_conf_set decides on it). */
bool ls_catalog_conf_key(const char *key);
/* Whether key names a secret field (token, credential): never a flag, never
 * logged. */
bool ls_catalog_conf_secret(const char *key);
/* Sets catalog.<name>.<field> = value; LS_EINVAL with err naming the key when the
 * name or field is unknown or the value bad. */
ls_status ls_catalog_conf_set(ls_catalog_confs_t *cs, const char *key, const char *value, char *err,
                              size_t errlen);
/* Cross-field checks once every source is read: type and uri set, type rest,
 * not both token and credential. */
ls_status ls_catalog_conf_finish(const ls_catalog_confs_t *cs, char *err, size_t errlen);
void ls_catalog_confs_free(ls_catalog_confs_t *cs);
/* A deep copy of s into d; ls_catalog_conf_clear frees what one holds. */
void ls_catalog_conf_copy(ls_catalog_conf_t *d, const ls_catalog_conf_t *s);
void ls_catalog_conf_clear(ls_catalog_conf_t *c);
const ls_catalog_conf_t *ls_catalog_conf_find(const ls_catalog_confs_t *cs, const char *name);

/* The process-wide set (a deep copy of cs; NULL clears it). */
void ls_catalog_confs_install(const ls_catalog_confs_t *cs);
/* The installed catalog called name, or NULL. */
const ls_catalog_conf_t *ls_catalog_conf_get(const char *name);
/* The installed names, comma-separated, into buf ("" when none). */
void ls_catalog_conf_names(char *buf, size_t cap);
#endif
