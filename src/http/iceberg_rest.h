/* The built-in Iceberg REST catalog (apache/iceberg
 * open-api/rest-catalog-open-api.yaml), read-only, mounted on /v1 of the
 * broker's HTTP server. It serves the tables of the table catalog
 * (table/table_catalog.h: one pointer per table in ls_meta), i.e. every
 * table the broker has created for a stream with
 * lakestream.table.enabled=true:
 *
 *   GET  /v1/config                                  defaults, overrides, endpoints
 *   GET  /v1/[{prefix}/]namespaces                   namespaces holding tables
 *   GET|HEAD /v1/[{prefix}/]namespaces/{ns}
 *   GET  /v1/[{prefix}/]namespaces/{ns}/tables
 *   GET|HEAD /v1/[{prefix}/]namespaces/{ns}/tables/{table}   LoadTableResult
 *   POST /v1/[{prefix}/]namespaces/{ns}/tables/{table}/metrics  accepted, dropped
 *   GET  /v1/[{prefix}/]namespaces/{ns}/views        always empty
 *
 * {prefix} is LS_REST_WAREHOUSE ("lakestream"; /v1/config?warehouse=
 * lakestream hands it out as the "prefix" override). The spec's write
 * endpoints answer 406 UnsupportedOperationException (tables are created
 * and committed by the broker), other methods 405, unknown paths 404, and
 * malformed paths (bad %-escapes, empty segments or namespace levels, NUL
 * bytes, over-long names) 400 — all with the spec's error body
 * {"error": {"message", "type", "code"}}.
 *
 * A namespace exists while it holds a table (namespaces are single-level;
 * multi-level ones, %1F-separated, never exist). Lists are sorted by name
 * and paged with pageSize / pageToken (the token is the last name given).
 *
 * LoadTableResult carries the pointer's metadata-location (a file:// or
 * s3:// URI readers open directly), the metadata file's JSON and, in
 * "config" (and /v1/config "defaults"), the object store's non-secret client
 * properties (s3.endpoint, s3.region, s3.path-style-access): never
 * credentials. While the broker holds the table back (a range that cannot
 * go in: ls_compactor_table_held), the served metadata carries the reason
 * as the property lakestream.held-reason (not in the metadata file: it is
 * this broker's view, from its last compaction pass).
 *
 * Threads: requests run on HTTP server threads, concurrently; the catalog
 * object is immutable after ls_rest_new and uses only ls_meta / ls_objstore
 * (thread-safe, blocking). */
#ifndef LS_ICEBERG_REST_H
#define LS_ICEBERG_REST_H
#include <stddef.h>

#include "http/http_server.h"
#include "meta/meta.h"
#include "objstore/objstore.h"
#include "table/table_catalog.h"

#define LS_REST_WAREHOUSE "lakestream"
#define LS_REST_SEGMENT_MAX 1024 /* decoded bytes of one path segment */

typedef enum ls_rest_op {
    LS_REST_GET_CONFIG,
    LS_REST_LIST_NAMESPACES,
    LS_REST_LOAD_NAMESPACE,
    LS_REST_NAMESPACE_EXISTS,
    LS_REST_LIST_TABLES,
    LS_REST_LOAD_TABLE,
    LS_REST_TABLE_EXISTS,
    LS_REST_REPORT_METRICS,
    LS_REST_LIST_VIEWS,
    LS_REST_LOAD_VIEW,
    LS_REST_UNSUPPORTED,        /* a write endpoint of the spec: 406 */
    LS_REST_METHOD_NOT_ALLOWED, /* 405 */
    LS_REST_NOT_FOUND,          /* no such endpoint: 404 */
    LS_REST_BAD_REQUEST,        /* malformed path: 400 */
} ls_rest_op;

typedef struct ls_rest_route {
    ls_rest_op op;
    int prefixed;                     /* the /v1/{prefix}/... form */
    char ns[LS_REST_SEGMENT_MAX + 1]; /* decoded; levels separated by 0x1F */
    size_t ns_len;
    int ns_levels;
    char name[LS_REST_SEGMENT_MAX + 1]; /* table or view, decoded */
    size_t name_len;
    char reason[160]; /* for UNSUPPORTED, METHOD_NOT_ALLOWED, NOT_FOUND, BAD_REQUEST */
} ls_rest_route_t;

/* Routes a request (method, raw path). Pure: no I/O. */
void ls_rest_route(const char *method, const char *path, ls_rest_route_t *out);

typedef struct ls_rest_config {
    ls_meta_t *meta;
    ls_objstore_t *os;
    const char *const *client_props; /* NULL or NULL-terminated key, value, ... (copied) */
    /* NULL, or why table ns.table is held back (a copy to ls_free) or NULL:
     * LoadTableResult then shows it as the table property
     * lakestream.held-reason. Called on the HTTP threads. */
    char *(*held_reason)(void *ctx, const char *ns, const char *table);
    void *held_ctx;
    /* NULL (everything visible), or whether the request's principal may
     * `read` (load: the table's data) or else see (list, exists) the table
     * of topic `table`; a denial is audited when log_denied. Called on the
     * HTTP threads. */
    bool (*may_see)(void *ctx, const ls_http_request_t *req, const char *table, bool read,
                    bool log_denied);
    void *may_ctx;
} ls_rest_config_t;

typedef struct ls_rest ls_rest_t;

ls_rest_t *ls_rest_new(const ls_rest_config_t *cfg);
void ls_rest_free(ls_rest_t *r);
/* An ls_http_handler_fn; arg is the ls_rest_t. */
void ls_rest_handle(void *arg, const ls_http_request_t *req, ls_http_response_t *resp);
#endif
