/* The schema registry's REST API, as the Confluent Schema Registry serves it
 * (the paths clients use), mounted on every path of its own HTTP server
 * (schema.registry.listen). The registry itself is registry/registry.h.
 *
 *   GET    /                                           {}
 *   GET    /schemas/types                              supported schema types
 *   GET    /schemas/ids/{id}[/schema|/subjects|/versions]   ?format=serialized
 *   GET    /subjects                                   ?subjectPrefix= ?deleted=
 *   POST   /subjects/{s}                               lookup   ?deleted= ?normalize=
 *   DELETE /subjects/{s}                               ?permanent=
 *   GET    /subjects/{s}/versions                      ?deleted=
 *   POST   /subjects/{s}/versions                      register ?normalize=
 *   GET    /subjects/{s}/versions/{v}[/schema|/referencedby]   ?deleted= ?format=
 *   DELETE /subjects/{s}/versions/{v}                  ?permanent=
 *   GET|PUT|DELETE /config[/{s}]                       GET ?defaultToGlobal=
 *   GET|PUT|DELETE /mode[/{s}]                         (DELETE: subjects only)
 *   POST   /compatibility/subjects/{s}/versions[/{v}]  ?verbose= ?normalize=
 *
 * {v} is a version number, -1 or "latest". Bodies and answers are JSON
 * (Content-Type application/vnd.schemaregistry.v1+json, which clients and
 * application/json readers both take). Errors carry the registry's codes:
 * {"error_code": 40401, "message": "..."} with the HTTP status of the
 * code's first three digits (404, 409, 422, 500); malformed requests 400,
 * unknown paths 404, other methods 405 (error_code = the status).
 *
 * format=serialized answers a PROTOBUF schema as a base64 FileDescriptorProto.
 * A request field or parameter this registry does not implement (IMPORT
 * mode, data-contract metadata and rule sets, other formats,
 * reference_format) is refused with an error naming it, never ignored.
 *
 * Threads: handlers run on the HTTP server's threads, concurrently. */
#ifndef LS_REGISTRY_REST_H
#define LS_REGISTRY_REST_H
#include "http/http_server.h"
#include "registry/registry.h"

#define LS_SR_CONTENT_TYPE "application/vnd.schemaregistry.v1+json"

/* Whether the request's principal may read (write false) or change (write
 * true) subject (NULL: the registry-wide config and mode). Called on the HTTP
 * threads before the operation; a denial is answered 403 (40301) and
 * audited when log_denied (not when filtering the subject list). Reading a
 * schema by id and the schema types stay open to every authenticated client
 * (a consumer deserializing needs them, and an id names no subject). */
typedef bool (*ls_registry_rest_may_fn)(void *ctx, const ls_http_request_t *req,
                                        const char *subject, bool write, bool log_denied);

typedef struct ls_registry_rest {
    ls_registry_t *registry;
    ls_registry_rest_may_fn may; /* NULL: every request is allowed */
    void *may_ctx;
} ls_registry_rest_t;

/* An ls_http_handler_fn; arg is an ls_registry_rest_t (the caller's, alive
 * while the server runs). Mount it with prefix "" and takes_body set. */
void ls_registry_rest_handle(void *arg, const ls_http_request_t *req, ls_http_response_t *resp);
#endif
