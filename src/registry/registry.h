/* The schema registry: Confluent-compatible subjects, versions and global
 * schema ids, kept in the metadata store so every broker of a cluster
 * serves the same registry. http/registry_rest.c serves it over HTTP; the
 * table materializer asks it for schemas by id and for the latest schema of
 * a subject (both cached).
 *
 * Vocabulary (the Confluent registry's): a *schema* is a text of a type
 * (AVRO, JSON, PROTOBUF) plus its references; registering it under a *subject* makes
 * a *version* of that subject (1, 2, ...) pointing at the schema's *id*.
 * One schema has one id whatever the subjects it is registered under. A
 * schema's identity is its type, its text in canonical form (JSON: compact,
 * keys sorted; Protobuf: tokens without comments and layout) and its
 * references; a Protobuf descriptor sent in binary form is registered as
 * the .proto text it describes.
 *
 * Stored state, under /ls/registry/ in ls_meta (values JSON unless noted):
 *   id-counter                        last id handed out (decimal)
 *   schemas/<id>                      {"schemaType","schema","references"}
 *   digests/<hash>                    [ids]: schemas whose identity hashes
 *                                     there (FNV-1a of type, canonical text
 *                                     and references; collisions share it)
 *   subjects/<subject>/<version>      {"id", "deleted"}
 *   heads/<subject>                   rewritten by every change of the
 *                                     subject: the token its writers compare
 *   usage/<id>/<subject>/<version>    "" while that version exists
 *   refs/<subject>/<version>/<id>     "" : schema <id> references it
 *   config, config-subjects/<subject> {"compatibilityLevel"}
 *   mode, mode-subjects/<subject>     {"mode"}
 * Numbers in keys are 10 zero-padded digits; <subject> is percent-encoded
 * (bytes other than [A-Za-z0-9._-]), so it never holds a '/'.
 *
 * Invariants:
 *  - an id names one schema forever: schemas/<id> is written once, in the
 *    txn that raises id-counter to <id> (compare-and-set on the counter's
 *    revision) and adds <id> to its digest bucket (compare-and-set on the
 *    bucket), so two brokers registering at once never hand out one id
 *    twice, and the same schema registered at once gets one id;
 *  - ids are never reused: the counter only grows; a permanently deleted
 *    schema keeps its schemas/ record, and registering the same schema
 *    again gives the same id back;
 *  - a subject's versions are written only by txns that compare the
 *    subject's head, so the compatibility check a registration made against
 *    the versions it read still holds when it commits; a new version is the
 *    highest existing one (soft-deleted included) plus 1, so versions only
 *    grow while a subject has any (a permanently deleted subject restarts
 *    at 1, as in the Confluent registry);
 *  - an id is served (schemas/ids/{id}) while some version uses it, soft-
 *    deleted versions included (soft deletion keeps old data readable).
 *
 * Subject state machine (per version): absent -> live (register) ->
 * soft-deleted (DELETE) -> absent (DELETE ?permanent=true; only from
 * soft-deleted). A subject exists while it has a live version.
 *
 * Threads: every call blocks on ls_meta and may run on any thread at once
 * (the HTTP server's pool); caches sit under one mutex. */
#ifndef LS_REGISTRY_H
#define LS_REGISTRY_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "meta/meta.h"
#include "registry/avro.h"
#include "registry/json_schema.h"
#include "registry/protobuf.h"

#define LS_SR_MAX_REFERENCES 64
#define LS_SR_MAX_SUBJECT 255

typedef enum ls_sr_type { LS_SR_AVRO, LS_SR_JSON, LS_SR_PROTOBUF } ls_sr_type;

typedef enum ls_sr_compat {
    LS_SR_COMPAT_NONE,
    LS_SR_COMPAT_BACKWARD,
    LS_SR_COMPAT_BACKWARD_TRANSITIVE,
    LS_SR_COMPAT_FORWARD,
    LS_SR_COMPAT_FORWARD_TRANSITIVE,
    LS_SR_COMPAT_FULL,
    LS_SR_COMPAT_FULL_TRANSITIVE,
} ls_sr_compat;
#define LS_SR_COMPAT_DEFAULT LS_SR_COMPAT_BACKWARD

typedef enum ls_sr_mode { LS_SR_MODE_READWRITE, LS_SR_MODE_READONLY } ls_sr_mode;

/* Outcomes of registry calls: the Confluent registry's own error codes
 * (the HTTP status is the code's first three digits). */
typedef enum ls_sr_code {
    LS_SR_OK = 0,
    LS_SR_SUBJECT_NOT_FOUND = 40401,
    LS_SR_VERSION_NOT_FOUND = 40402,
    LS_SR_SCHEMA_NOT_FOUND = 40403,
    LS_SR_SUBJECT_SOFT_DELETED = 40404,
    LS_SR_SUBJECT_NOT_SOFT_DELETED = 40405,
    LS_SR_VERSION_SOFT_DELETED = 40406,
    LS_SR_VERSION_NOT_SOFT_DELETED = 40407,
    LS_SR_SUBJECT_COMPAT_NOT_CONFIGURED = 40408,
    LS_SR_SUBJECT_MODE_NOT_CONFIGURED = 40409,
    LS_SR_INCOMPATIBLE = 409,
    LS_SR_INVALID_SCHEMA = 42201,
    LS_SR_INVALID_VERSION = 42202,
    LS_SR_INVALID_COMPAT = 42203,
    LS_SR_INVALID_MODE = 42204,
    LS_SR_NOT_PERMITTED = 42205,
    LS_SR_REFERENCE_EXISTS = 42206,
    LS_SR_INVALID_SUBJECT = 42208,
    LS_SR_STORE_ERROR = 50001,
} ls_sr_code;

typedef struct ls_sr_err {
    ls_sr_code code;
    char message[1024];
} ls_sr_err_t;

typedef struct ls_sr_ref {
    char *name;
    char *subject;
    int32_t version;
} ls_sr_ref_t;

/* A schema as submitted (views; nothing is taken over). */
typedef struct ls_sr_input {
    ls_sr_type type;
    const char *text;
    const ls_sr_ref_t *refs;
    size_t nrefs;
} ls_sr_input_t;

/* A registered (or candidate) schema: immutable, shared by the cache and
 * callers through keep/release. */
typedef struct ls_sr_schema {
    int32_t id; /* 0 for a candidate not registered */
    ls_sr_type type;
    char *text;  /* as registered */
    char *canon; /* identity: compact JSON with sorted keys */
    ls_sr_ref_t *refs;
    size_t nrefs;
    ls_avro_schema_t *avro; /* AVRO: parsed, references included */
    ls_jsonschema_t *json;  /* JSON: loaded, references included */
    ls_proto_t *proto;      /* PROTOBUF: parsed, imports included */
    /* JSON: the Avro view its values become table columns by (avro_view.h);
     * NULL with the reason in view_why when the schema is not mapped */
    struct ls_avro_view *view;
    char *view_why;
    struct ls_avro_views *pviews; /* PROTOBUF: the view of each message (avro_view.h) */
    int refcount;                 /* atomic */
} ls_sr_schema_t;

/* One version of a subject. */
typedef struct ls_sr_version {
    char *subject;
    int32_t version;
    int32_t id;
    bool deleted;
} ls_sr_version_t;

typedef struct ls_registry ls_registry_t;

ls_registry_t *ls_registry_new(ls_meta_t *meta);
void ls_registry_free(ls_registry_t *r);

ls_sr_schema_t *ls_sr_schema_keep(ls_sr_schema_t *s);
void ls_sr_schema_release(ls_sr_schema_t *s);
void ls_sr_versions_free(ls_sr_version_t *v, size_t n);

/* Subject name strategies (Confluent's): which subject a record's schema
 * must belong to. The table policy's lakestream.table.*.subject.name.strategy
 * (stream/policy.h, same order) chooses one per topic. */
typedef enum {
    LS_SR_TOPIC_NAME,        /* <topic>-key, <topic>-value */
    LS_SR_RECORD_NAME,       /* the record's full name */
    LS_SR_TOPIC_RECORD_NAME, /* <topic>-<record full name> */
} ls_sr_strategy;
/* The subject by strategy st of topic's keys (key) or values whose schema's
 * record is named record (ls_sr_record_name). */
void ls_sr_subject_name(ls_sr_strategy st, const char *topic, bool key, const char *record,
                        char *out, size_t cap);
/* The full name a schema root gives its records (a schema that is not a
 * named type is named by its type); "" for NULL. */
const char *ls_sr_record_name(const ls_avro_node_t *root);

const char *ls_sr_type_name(ls_sr_type t);
int ls_sr_type_parse(const char *s, ls_sr_type *out); /* 0: known name */
const char *ls_sr_compat_name(ls_sr_compat c);
int ls_sr_compat_parse(const char *s, ls_sr_compat *out);
const char *ls_sr_mode_name(ls_sr_mode m);

/* Registers in under subject (normalize: store the canonical text instead
 * of the submitted one). The schema already live under the subject gives
 * its version back unchanged. */
ls_sr_code ls_registry_register(ls_registry_t *r, const char *subject, const ls_sr_input_t *in,
                                bool normalize, int32_t *id, int32_t *version, ls_sr_err_t *err);
/* The live (or, with deleted, any) version of subject holding schema in. */
ls_sr_code ls_registry_lookup(ls_registry_t *r, const char *subject, const ls_sr_input_t *in,
                              bool deleted, ls_sr_version_t *out, ls_sr_err_t *err);
/* Subjects, sorted; those with a live version (deleted: any version). */
ls_sr_code ls_registry_subjects(ls_registry_t *r, const char *prefix, bool deleted, char ***out,
                                size_t *n, ls_sr_err_t *err);
/* Versions of subject, ascending (deleted: soft-deleted ones too). */
ls_sr_code ls_registry_versions(ls_registry_t *r, const char *subject, bool deleted,
                                ls_sr_version_t **out, size_t *n, ls_sr_err_t *err);
/* One version; version -1 is the latest. */
ls_sr_code ls_registry_get_version(ls_registry_t *r, const char *subject, int32_t version,
                                   bool deleted, ls_sr_version_t *out, ls_sr_err_t *err);
ls_sr_code ls_registry_delete_subject(ls_registry_t *r, const char *subject, bool permanent,
                                      int32_t **versions, size_t *n, ls_sr_err_t *err);
ls_sr_code ls_registry_delete_version(ls_registry_t *r, const char *subject, int32_t version,
                                      bool permanent, int32_t *deleted_version, ls_sr_err_t *err);
/* Ids of live schemas referencing subject/version. */
ls_sr_code ls_registry_referenced_by(ls_registry_t *r, const char *subject, int32_t version,
                                     int32_t **ids, size_t *n, ls_sr_err_t *err);
/* The schema of an id (cached; release it). */
ls_sr_code ls_registry_schema(ls_registry_t *r, int32_t id, ls_sr_schema_t **out, ls_sr_err_t *err);
/* The (subject, version) pairs using an id. */
ls_sr_code ls_registry_id_versions(ls_registry_t *r, int32_t id, bool deleted,
                                   ls_sr_version_t **out, size_t *n, ls_sr_err_t *err);
/* The latest live version of subject and its schema (cached; release it). */
ls_sr_code ls_registry_latest(ls_registry_t *r, const char *subject, ls_sr_version_t *version,
                              ls_sr_schema_t **schema, ls_sr_err_t *err);

/* Compatibility level: subject NULL is the global one. *set is false when
 * the subject has none of its own (*level is then the global one). */
ls_sr_code ls_registry_get_compat(ls_registry_t *r, const char *subject, ls_sr_compat *level,
                                  bool *set, ls_sr_err_t *err);
ls_sr_code ls_registry_set_compat(ls_registry_t *r, const char *subject, ls_sr_compat level,
                                  ls_sr_err_t *err);
/* Removes the subject's own level (or resets the global one); *old is the
 * level it had. */
ls_sr_code ls_registry_delete_compat(ls_registry_t *r, const char *subject, ls_sr_compat *old,
                                     ls_sr_err_t *err);
ls_sr_code ls_registry_get_mode(ls_registry_t *r, const char *subject, ls_sr_mode *mode, bool *set,
                                ls_sr_err_t *err);
ls_sr_code ls_registry_set_mode(ls_registry_t *r, const char *subject, ls_sr_mode mode,
                                ls_sr_err_t *err);
ls_sr_code ls_registry_delete_mode(ls_registry_t *r, const char *subject, ls_sr_mode *old,
                                   ls_sr_err_t *err);

/* Whether in is compatible with subject's version (-1: latest; 0: every
 * version the subject's level checks) under the subject's level. Reasons
 * of incompatibility are appended to why, one per line. */
ls_sr_code ls_registry_test_compat(ls_registry_t *r, const char *subject, int32_t version,
                                   const ls_sr_input_t *in, bool *compatible, ls_buf_t *why,
                                   ls_sr_err_t *err);

/* The rule itself (no store): whether candidate may follow the versions
 * previous[0..n) (oldest first) under level. Exposed for unit tests. */
bool ls_sr_compatible(ls_sr_compat level, const ls_sr_schema_t *candidate,
                      ls_sr_schema_t *const *previous, size_t n, ls_buf_t *why);
/* Parses a schema without references (unit tests, tools). */
ls_sr_code ls_sr_parse_standalone(const ls_sr_input_t *in, ls_sr_schema_t **out, ls_sr_err_t *err);
#endif
