/* A client of an external Iceberg REST catalog (catalog.<name>.*,
 * base/catalog_conf.h): the calls compact/catalog_sync.c mirrors a table
 * with. Blocking (libcurl), one handle kept alive; used by one thread at a
 * time (the compaction worker that owns it).
 *
 * Session: before the first call, GET /v1/config (with ?warehouse= when
 * set) gives the path prefix (its "overrides" "prefix", unless
 * catalog.<name>.prefix is set); with a credential an OAuth2
 * client_credentials token is fetched from the token endpoint (default
 * <uri>/v1/oauth/tokens) and fetched again once when a call answers 401.
 * With a token it is sent as "Authorization: Bearer". The configured extra
 * headers go on every request.
 *
 * Results: LS_OK; LS_ENOTFOUND (404); LS_ECONFLICT (409: a requirement of a
 * commit failed, or the namespace/table exists); LS_EAGAIN (transport
 * failure, timeout, 5xx, 429: retry later — for a commit the outcome is then
 * unknown and the caller must reload); LS_EIO (any other answer, e.g. 400,
 * 401, 403). err names the request, the status and the catalog's message. */
#ifndef LS_TABLE_REST_CATALOG_H
#define LS_TABLE_REST_CATALOG_H
#include <jansson.h>
#include <stddef.h>

#include "base/catalog_conf.h"
#include "base/status.h"

typedef struct ls_rest_catalog ls_rest_catalog_t;

/* conf is copied. */
ls_rest_catalog_t *ls_rest_catalog_open(const ls_catalog_conf_t *conf);
void ls_rest_catalog_close(ls_rest_catalog_t *rc);
const char *ls_rest_catalog_name(const ls_rest_catalog_t *rc);

/* GET .../namespaces/{ns}/tables/{table}: the table's "metadata" (*metadata,
 * to json_decref) and "metadata-location" (*location, to ls_free; either
 * out may be NULL). */
ls_status ls_rest_catalog_load(ls_rest_catalog_t *rc, const char *ns, const char *table,
                               json_t **metadata, char **location, char *err, size_t errlen);
/* POST .../namespaces; LS_OK also when it exists. */
ls_status ls_rest_catalog_create_namespace(ls_rest_catalog_t *rc, const char *ns, char *err,
                                           size_t errlen);
/* POST .../namespaces/{ns}/register: the table whose current metadata is
 * the file at metadata_location. */
ls_status ls_rest_catalog_register(ls_rest_catalog_t *rc, const char *ns, const char *table,
                                   const char *metadata_location, char *err, size_t errlen);
/* POST .../namespaces/{ns}/tables/{table} with a CommitTableRequest. */
ls_status ls_rest_catalog_commit(ls_rest_catalog_t *rc, const char *ns, const char *table,
                                 const json_t *body, char *err, size_t errlen);
#endif
