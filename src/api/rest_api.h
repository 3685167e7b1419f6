/* The Lakestream REST API: the catalog of the design — namespaces, streams
 * (Kafka topics), their layout, materialization policies and tables —
 * under /api/v1 on the broker's HTTP listener (beside the Iceberg REST
 * catalog on /v1). docs/api/openapi.json is its contract, embedded in the
 * binary and served at /api/v1/openapi.json.
 *
 *   GET            /api/v1/openapi.json
 *   GET            /api/v1/layouts                        the stream layouts
 *   GET|POST       /api/v1/namespaces                     list | create
 *   GET            /api/v1/namespaces/{ns}
 *   GET|PUT|PATCH  /api/v1/namespaces/{ns}/policy         namespace policy defaults
 *   GET|POST       /api/v1/streams                        list | create (CreateTopics)
 *   GET|PATCH|DELETE /api/v1/streams/{name}               (CreatePartitions,
 *                                                          IncrementalAlterConfigs, DeleteTopics)
 *   GET|PUT|PATCH  /api/v1/streams/{name}/policy          resolved policy | change it
 *   GET            /api/v1/streams/{name}/partitions/{p}/records?offset=&limit=
 *   GET            /api/v1/tables                         tables of the table catalog
 *   GET            /api/v1/tables/{ns}/{table}            a table's state
 *
 * One code path: every change to a stream goes to this broker's own Kafka
 * listener as the Kafka admin request a Kafka tool would send (through
 * admin/kafka_client.h), so it is validated and applied by the very
 * handlers of CreateTopics, DeleteTopics, CreatePartitions and
 * IncrementalAlterConfigs ("accepted means applied", the same refusals);
 * policies go through admin/table_policy.h, the module `lakestream tables`
 * calls. Reads of the catalog use the broker's catalog copy (the same on
 * every broker once the watch has delivered a change) and the table
 * catalog in the metadata store.
 *
 * Errors: {"error": {"code", "type", "message", "field"?}} — 400
 * ValidationError naming the field of the body or query parameter that is
 * wrong (a config's field is "configs.<key>", a policy key's
 * "policy.<key>"), 404 NotFound, 405 MethodNotAllowed, 409 Conflict, 503
 * when the broker's Kafka listener or the metadata store does not answer.
 * A refused change changes nothing (the broker's handlers check every
 * item before they write).
 *
 * Lists are sorted by name and paged with limit (1..1000, default 100) and
 * pageToken (the last name of the previous page, handed out as
 * nextPageToken).
 *
 * Threads: handlers run on the HTTP server's threads and block (a Kafka
 * connection per request, bounded by timeout_ms; the metadata store). The
 * configuration is immutable after ls_api_new; the set of open Kafka
 * connections (for ls_api_quiesce) is guarded by a mutex. */
#ifndef LS_API_REST_API_H
#define LS_API_REST_API_H
#include <stddef.h>
#include <stdint.h>

#include "http/http_server.h"
#include "meta/meta.h"
#include "objstore/objstore.h"
#include "stream/catalog.h"

#define LS_API_PREFIX "/api/v1"
#define LS_API_PAGE_MAX 1000
#define LS_API_RECORDS_MAX 500 /* records one records request returns at most */

/* What a request of the API does, in Kafka's terms (the server maps it to
 * an ACL operation on the topic `name`, or on the cluster when name is
 * NULL): checked for the request's principal before the API acts, since its
 * own Kafka client is User:ANONYMOUS (issue 30). */
typedef enum ls_api_access {
    LS_API_DESCRIBE,         /* see it (a stream, a table; NULL: lists, cluster, groups) */
    LS_API_DESCRIBE_CONFIGS, /* read its policy or configs */
    LS_API_ALTER_CONFIGS,    /* change its policy or configs */
    LS_API_ALTER,            /* add partitions */
    LS_API_CREATE,           /* create it */
    LS_API_DELETE,           /* delete it */
    LS_API_READ,             /* read its records */
} ls_api_access;

typedef struct ls_api_config {
    ls_meta_t *meta;
    ls_objstore_t *os;
    ls_catalog_t *catalog;
    const ls_prop_t *table_defaults; /* the cluster layer of the table policy */
    int ntable_defaults;
    /* "host:port" of this broker's Kafka listener into buf ("" while it is
     * not listening yet); any thread. */
    void (*kafka_addr)(void *ctx, char *buf, size_t cap);
    void *ctx;
    int64_t timeout_ms; /* bound of one Kafka exchange */
    /* NULL (everything allowed), or whether req's principal may do `what`
     * to topic `name` (NULL: the cluster); a denial is answered 403 and is
     * the hook's to audit. */
    bool (*may)(void *ctx, const ls_http_request_t *req, ls_api_access what, const char *name);
} ls_api_config_t;

typedef struct ls_api ls_api_t;

ls_api_t *ls_api_new(const ls_api_config_t *cfg);
void ls_api_free(ls_api_t *a); /* NULL: no-op */
/* The broker is stopping: requests waiting on its Kafka listener (which the
 * stopping loop no longer serves) are answered 503 at once, new ones too, so
 * the HTTP server's stop can join its threads. Any thread; NULL: no-op. */
void ls_api_quiesce(ls_api_t *a);
/* The mount's handler (ls_http_mount_t.fn, prefix LS_API_PREFIX, takes bodies). */
void ls_api_handle(void *arg, const ls_http_request_t *req, ls_http_response_t *resp);

/* The OpenAPI document (docs/api/openapi.json as built in), NUL-terminated. */
const char *ls_api_openapi(size_t *len);
#endif
