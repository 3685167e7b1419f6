/* The schema registry's REST API; the contract is in registry_rest.h.
 *
 * A request is split into percent-decoded path segments, its query
 * parameters and JSON body are checked, then one registry call answers it.
 * Routing and request checks never touch the store. */
#include "http/registry_rest.h"

#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/alloc.h"
#include "base/url.h"
#include "base/utf8.h"

#define MAX_SEGMENTS 8

typedef struct req {
    ls_registry_t *r;
    const ls_registry_rest_t *rest;
    const ls_http_request_t *http;
    ls_http_response_t *resp;
    char *seg[MAX_SEGMENTS];
    size_t nseg;
} req_t;

/* ---- responses ------------------------------------------------------------------ */

static void reply_json(req_t *q, int status, json_t *body)
{
    ls_http_response_t *resp = q->resp;
    resp->body.len = 0;
    resp->content_type = LS_SR_CONTENT_TYPE;
    char *text = body ? json_dumps(body, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
    json_decref(body);
    if (!text) {
        resp->status = 500;
        ls_buf_printf(&resp->body, "{\"error_code\":50001,\"message\":\"the response could not "
                                   "be encoded as JSON\"}");
        return;
    }
    resp->status = status;
    ls_buf_append(&resp->body, text, strlen(text));
    free(text);
}

__attribute__((format(printf, 3, 4))) static void reply_error(req_t *q, int code, const char *fmt,
                                                              ...)
{
    char msg[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* messages may echo request bytes: keep them valid UTF-8 */
    for (size_t i = 0; msg[i];) {
        size_t k = ls_utf8_seq_len((const uint8_t *)msg + i, strlen(msg + i));
        if (!k)
            msg[i++] = '?';
        else
            i += k;
    }
    json_t *j = json_pack("{s:i, s:s}", "error_code", code, "message", msg);
    reply_json(q, code > 999 ? code / 100 : code, j);
}

static void reply_sr(req_t *q, const ls_sr_err_t *e)
{
    reply_error(q, (int)e->code, "%s", e->message);
}

/* ---- request parts ----------------------------------------------------------------- */

/* A boolean query parameter (absent: dflt). -1 (answered) when malformed. */
static int qbool(req_t *q, const char *name, bool dflt, bool *out)
{
    ls_buf_t b;
    ls_buf_init(&b);
    int rc = ls_url_query_get(q->http->query, name, &b);
    *out = dflt;
    if (rc == 1) {
        const char *v = b.len ? (const char *)b.data : "";
        if (!strcasecmp(v, "true"))
            *out = true;
        else if (!strcasecmp(v, "false"))
            *out = false;
        else
            rc = -1;
    }
    ls_buf_free(&b);
    if (rc < 0) {
        reply_error(q, 400, "query parameter '%s' must be true or false", name);
        return -1;
    }
    return 0;
}

/* A string query parameter (NULL when absent; caller frees). -1 on a bad
 * escape (answered). */
static int qstr(req_t *q, const char *name, char **out)
{
    ls_buf_t b;
    ls_buf_init(&b);
    int rc = ls_url_query_get(q->http->query, name, &b);
    *out = NULL;
    if (rc == 1) *out = ls_strndup(b.len ? (const char *)b.data : "", b.len);
    ls_buf_free(&b);
    if (rc < 0) {
        reply_error(q, 400, "query parameter '%s' is malformed", name);
        return -1;
    }
    return 0;
}

/* Parameters of the Confluent API that this registry does not implement:
 * refused when given, so none is silently ignored. */
static int refuse_params(req_t *q, const char *const *names)
{
    for (; *names; names++) {
        char *v;
        if (qstr(q, *names, &v)) return -1;
        bool given = v && *v;
        ls_free(v);
        if (given) {
            reply_error(q, 400, "query parameter '%s' is not supported by this registry", *names);
            return -1;
        }
    }
    return 0;
}

/* "latest", -1 or 1..2^31-1. */
static int parse_version(req_t *q, const char *s, int32_t *out)
{
    if (!strcmp(s, "latest")) {
        *out = -1;
        return 0;
    }
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (*s && !*end && !errno && (v == -1 || (v >= 1 && v <= INT32_MAX))) {
        *out = (int32_t)v;
        return 0;
    }
    reply_error(q, LS_SR_INVALID_VERSION,
                "The specified version '%s' is not a valid version id. Allowed values are "
                "between [1, 2^31-1] and the string \"latest\"",
                s);
    return -1;
}

static json_t *load_body(req_t *q)
{
    if (!q->http->body || !q->http->body_len) {
        reply_error(q, 400, "a JSON body is required");
        return NULL;
    }
    json_error_t je;
    json_t *j = json_loadb(q->http->body, q->http->body_len, 0, &je);
    if (!j) {
        reply_error(q, 400, "the body is not valid JSON: %s (line %d, column %d)", je.text, je.line,
                    je.column);
        return NULL;
    }
    if (!json_is_object(j)) {
        json_decref(j);
        reply_error(q, 400, "the body must be a JSON object");
        return NULL;
    }
    return j;
}

/* A field value that asks for nothing: null, false, "", [] or {} (newer
 * clients send such defaults of fields this registry does not have). */
static bool empty_value(json_t *v)
{
    return json_is_null(v) || json_is_false(v) || (json_is_string(v) && !json_string_length(v)) ||
           (json_is_array(v) && !json_array_size(v)) || (json_is_object(v) && !json_object_size(v));
}

/* Fields of a body other than allowed[] that ask for something: refused by
 * name. */
static int check_fields(req_t *q, json_t *body, const char *const *allowed, int code)
{
    const char *k;
    json_t *v;
    json_object_foreach(body, k, v)
    {
        bool ok = empty_value(v);
        for (const char *const *a = allowed; *a && !ok; a++)
            ok = !strcmp(k, *a);
        if (!ok) {
            reply_error(q, code, "the field '%s' is not supported by this registry", k);
            return -1;
        }
    }
    return 0;
}

/* A registration / lookup / compatibility body: {"schema", "schemaType",
 * "references"}. refs are views into body. */
typedef struct schema_req {
    json_t *body;
    ls_sr_input_t in;
    ls_sr_ref_t refs[LS_SR_MAX_REFERENCES];
} schema_req_t;

static int parse_schema_req(req_t *q, schema_req_t *sr)
{
    static const char *const allowed[] = {"schema", "schemaType", "references", NULL};
    memset(sr, 0, sizeof *sr);
    if (!(sr->body = load_body(q))) return -1;
    json_t *b = sr->body;
    if (json_object_get(b, "id") && !empty_value(json_object_get(b, "id"))) {
        reply_error(q, LS_SR_INVALID_SCHEMA,
                    "registering under a given id needs IMPORT mode, which this registry does "
                    "not support");
        return -1;
    }
    if (json_object_get(b, "version") && !empty_value(json_object_get(b, "version"))) {
        reply_error(q, LS_SR_INVALID_SCHEMA,
                    "registering under a given version needs IMPORT mode, which this registry "
                    "does not support");
        return -1;
    }
    if (check_fields(q, b, allowed, LS_SR_INVALID_SCHEMA)) return -1;
    json_t *schema = json_object_get(b, "schema");
    if (!json_is_string(schema)) {
        reply_error(q, LS_SR_INVALID_SCHEMA, "Invalid schema: \"schema\" must be a string");
        return -1;
    }
    sr->in.text = json_string_value(schema);
    sr->in.type = LS_SR_AVRO;
    json_t *type = json_object_get(b, "schemaType");
    if (type && !json_is_null(type) &&
        (!json_is_string(type) || ls_sr_type_parse(json_string_value(type), &sr->in.type))) {
        reply_error(q, LS_SR_INVALID_SCHEMA,
                    "Invalid schema: unknown schemaType (AVRO, JSON or PROTOBUF)");
        return -1;
    }
    json_t *refs = json_object_get(b, "references");
    if (refs && !json_is_null(refs)) {
        if (!json_is_array(refs) || json_array_size(refs) > LS_SR_MAX_REFERENCES) {
            reply_error(q, LS_SR_INVALID_SCHEMA,
                        "Invalid schema: \"references\" must be an array of at most %d "
                        "references",
                        LS_SR_MAX_REFERENCES);
            return -1;
        }
        for (size_t i = 0; i < json_array_size(refs); i++) {
            json_t *rf = json_array_get(refs, i);
            json_t *name = json_object_get(rf, "name"), *sub = json_object_get(rf, "subject");
            json_t *ver = json_object_get(rf, "version");
            if (!json_is_string(name) || !json_is_string(sub) || !json_is_integer(ver) ||
                (json_integer_value(ver) != -1 &&
                 (json_integer_value(ver) < 1 || json_integer_value(ver) > INT32_MAX))) {
                reply_error(q, LS_SR_INVALID_SCHEMA,
                            "Invalid schema: reference %zu needs \"name\", \"subject\" and a "
                            "\"version\" (a version number or -1)",
                            i + 1);
                return -1;
            }
            sr->refs[i].name = (char *)json_string_value(name);
            sr->refs[i].subject = (char *)json_string_value(sub);
            sr->refs[i].version = (int32_t)json_integer_value(ver);
        }
        sr->in.nrefs = json_array_size(refs);
        sr->in.refs = sr->refs;
    }
    return 0;
}

/* ---- JSON forms ----------------------------------------------------------------------- */

/* ?format=: "serialized" asks for a PROTOBUF schema as a base64
 * FileDescriptorProto (Confluent's format for Protobuf descriptors); no other
 * format exists here. -1 when refused (answered). */
static int qformat(req_t *q, bool *serialized)
{
    char *f;
    *serialized = false;
    if (qstr(q, "format", &f)) return -1;
    int rc = 0;
    if (f && !strcmp(f, "serialized"))
        *serialized = true;
    else if (f && *f) {
        reply_error(q, 400,
                    "format '%s' is not supported by this registry (only 'serialized', "
                    "for PROTOBUF schemas)",
                    f);
        rc = -1;
    }
    ls_free(f);
    return rc;
}

/* A schema's fields; serialized: a PROTOBUF schema as a base64 descriptor.
 * -1 (answered) when the format does not apply to the schema's type. */
static int add_schema_fields(req_t *q, json_t *o, const ls_sr_schema_t *s, bool serialized)
{
    if (serialized && s->type != LS_SR_PROTOBUF) {
        reply_error(q, 400, "format 'serialized' applies to PROTOBUF schemas; this one is %s",
                    ls_sr_type_name(s->type));
        return -1;
    }
    if (s->type != LS_SR_AVRO)
        json_object_set_new(o, "schemaType", json_string(ls_sr_type_name(s->type)));
    if (s->nrefs) {
        json_t *refs = json_array();
        for (size_t i = 0; i < s->nrefs; i++)
            json_array_append_new(refs,
                                  json_pack("{s:s, s:s, s:i}", "name", s->refs[i].name, "subject",
                                            s->refs[i].subject, "version", s->refs[i].version));
        json_object_set_new(o, "references", refs);
    }
    if (serialized) {
        char *d = ls_proto_descriptor(s->proto);
        json_object_set_new(o, "schema", json_string(d));
        ls_free(d);
    } else {
        json_object_set_new(o, "schema", json_string(s->text));
    }
    return 0;
}

/* {"subject", "version", "id", ["schemaType"], ["references"], "schema"} */
static void reply_version(req_t *q, const ls_sr_version_t *v, bool serialized)
{
    ls_sr_schema_t *s;
    ls_sr_err_t e;
    if (ls_registry_schema(q->r, v->id, &s, &e)) {
        reply_sr(q, &e);
        return;
    }
    json_t *o =
        json_pack("{s:s, s:i, s:i}", "subject", v->subject, "version", v->version, "id", v->id);
    if (add_schema_fields(q, o, s, serialized) == 0)
        reply_json(q, 200, o);
    else
        json_decref(o);
    ls_sr_schema_release(s);
}

static void reply_raw_schema(req_t *q, int32_t id)
{
    ls_sr_schema_t *s;
    ls_sr_err_t e;
    if (ls_registry_schema(q->r, id, &s, &e)) {
        reply_sr(q, &e);
        return;
    }
    q->resp->status = 200;
    q->resp->content_type = LS_SR_CONTENT_TYPE;
    q->resp->body.len = 0;
    ls_buf_append(&q->resp->body, s->text, strlen(s->text));
    ls_sr_schema_release(s);
}

/* ---- endpoints -------------------------------------------------------------------------- */

static void op_types(req_t *q)
{
    reply_json(q, 200, json_pack("[s, s, s]", "AVRO", "JSON", "PROTOBUF"));
}

static void op_schema_by_id(req_t *q, const char *idtext, const char *what)
{
    static const char *const unsupported[] = {"reference_format", NULL};
    char *end;
    errno = 0;
    long long id = strtoll(idtext, &end, 10);
    if (!*idtext || *end || errno || id < 1 || id > INT32_MAX) {
        reply_error(q, LS_SR_SCHEMA_NOT_FOUND, "Schema %s not found", idtext);
        return;
    }
    /* ?subject= picks the schema context the id lives in; this registry has
     * one (the default) context, so every subject names the same ids */
    bool deleted, serialized;
    if (refuse_params(q, unsupported) || qbool(q, "deleted", false, &deleted) ||
        qformat(q, &serialized))
        return;
    if (serialized && what) {
        reply_error(q, 400, "format applies to /schemas/ids/{id} only");
        return;
    }
    ls_sr_version_t *uses;
    size_t n;
    ls_sr_err_t e;
    /* served while some version uses it (soft-deleted ones too) */
    if (ls_registry_id_versions(q->r, (int32_t)id, true, &uses, &n, &e)) {
        reply_sr(q, &e);
        return;
    }
    if (n == 0) {
        ls_sr_versions_free(uses, n);
        reply_error(q, LS_SR_SCHEMA_NOT_FOUND, "Schema %lld not found", id);
        return;
    }
    if (!what) {
        ls_sr_schema_t *s;
        if (ls_registry_schema(q->r, (int32_t)id, &s, &e)) {
            reply_sr(q, &e);
        } else {
            json_t *o = json_object();
            if (add_schema_fields(q, o, s, serialized) == 0)
                reply_json(q, 200, o);
            else
                json_decref(o);
            ls_sr_schema_release(s);
        }
    } else if (!strcmp(what, "schema")) {
        reply_raw_schema(q, (int32_t)id);
    } else {
        json_t *arr = json_array();
        for (size_t i = 0; i < n; i++) {
            if (uses[i].deleted && !deleted) continue;
            if (!strcmp(what, "subjects")) {
                bool dup = false;
                for (size_t k = 0; k < json_array_size(arr) && !dup; k++)
                    dup = !strcmp(json_string_value(json_array_get(arr, k)), uses[i].subject);
                if (!dup) json_array_append_new(arr, json_string(uses[i].subject));
            } else {
                json_array_append_new(arr, json_pack("{s:s, s:i}", "subject", uses[i].subject,
                                                     "version", uses[i].version));
            }
        }
        reply_json(q, 200, arr);
    }
    ls_sr_versions_free(uses, n);
}

static void op_subjects(req_t *q)
{
    bool deleted;
    char *prefix;
    if (qbool(q, "deleted", false, &deleted) || qstr(q, "subjectPrefix", &prefix)) return;
    char **subs;
    size_t n;
    ls_sr_err_t e;
    if (ls_registry_subjects(q->r, prefix, deleted, &subs, &n, &e)) {
        ls_free(prefix);
        reply_sr(q, &e);
        return;
    }
    ls_free(prefix);
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++) {
        /* what the principal may not read is left out, as Kafka's Metadata does */
        if (!q->rest->may || q->rest->may(q->rest->may_ctx, q->http, subs[i], false, false))
            json_array_append_new(arr, json_string(subs[i]));
        ls_free(subs[i]);
    }
    ls_free(subs);
    reply_json(q, 200, arr);
}

static void op_register(req_t *q, const char *subject)
{
    bool normalize;
    schema_req_t sr = {0};
    if (qbool(q, "normalize", false, &normalize) || parse_schema_req(q, &sr)) {
        json_decref(sr.body);
        return;
    }
    int32_t id, version;
    ls_sr_err_t e;
    if (ls_registry_register(q->r, subject, &sr.in, normalize, &id, &version, &e))
        reply_sr(q, &e);
    else
        reply_json(q, 200, json_pack("{s:i}", "id", id));
    json_decref(sr.body);
}

static void op_lookup(req_t *q, const char *subject)
{
    bool deleted, normalize;
    schema_req_t sr = {0};
    if (qbool(q, "deleted", false, &deleted) || qbool(q, "normalize", false, &normalize) ||
        parse_schema_req(q, &sr)) {
        json_decref(sr.body);
        return;
    }
    ls_sr_version_t v;
    ls_sr_err_t e;
    /* normalize: identities are compared in canonical form anyway */
    if (ls_registry_lookup(q->r, subject, &sr.in, deleted, &v, &e)) {
        reply_sr(q, &e);
    } else {
        reply_version(q, &v, false);
        ls_free(v.subject);
    }
    json_decref(sr.body);
}

static void op_versions(req_t *q, const char *subject)
{
    bool deleted;
    if (qbool(q, "deleted", false, &deleted)) return;
    ls_sr_version_t *v;
    size_t n;
    ls_sr_err_t e;
    if (ls_registry_versions(q->r, subject, deleted, &v, &n, &e)) {
        reply_sr(q, &e);
        return;
    }
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(arr, json_integer(v[i].version));
    ls_sr_versions_free(v, n);
    reply_json(q, 200, arr);
}

static void op_delete_subject(req_t *q, const char *subject)
{
    bool permanent;
    if (qbool(q, "permanent", false, &permanent)) return;
    int32_t *v;
    size_t n;
    ls_sr_err_t e;
    if (ls_registry_delete_subject(q->r, subject, permanent, &v, &n, &e)) {
        reply_sr(q, &e);
        return;
    }
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(arr, json_integer(v[i]));
    ls_free(v);
    reply_json(q, 200, arr);
}

static void op_version(req_t *q, const char *subject, const char *vtext, const char *what)
{
    int32_t version;
    bool deleted, serialized;
    if (parse_version(q, vtext, &version) || qbool(q, "deleted", false, &deleted) ||
        qformat(q, &serialized))
        return;
    if (serialized && what) {
        reply_error(q, 400, "format applies to /subjects/{subject}/versions/{version} only");
        return;
    }
    ls_sr_err_t e;
    if (what && !strcmp(what, "referencedby")) {
        int32_t *ids;
        size_t n;
        if (ls_registry_referenced_by(q->r, subject, version, &ids, &n, &e)) {
            reply_sr(q, &e);
            return;
        }
        json_t *arr = json_array();
        for (size_t i = 0; i < n; i++)
            json_array_append_new(arr, json_integer(ids[i]));
        ls_free(ids);
        reply_json(q, 200, arr);
        return;
    }
    ls_sr_version_t v;
    if (ls_registry_get_version(q->r, subject, version, deleted, &v, &e)) {
        reply_sr(q, &e);
        return;
    }
    if (what)
        reply_raw_schema(q, v.id);
    else
        reply_version(q, &v, serialized);
    ls_free(v.subject);
}

static void op_delete_version(req_t *q, const char *subject, const char *vtext)
{
    int32_t version, deleted_version;
    bool permanent;
    if (parse_version(q, vtext, &version) || qbool(q, "permanent", false, &permanent)) return;
    ls_sr_err_t e;
    if (ls_registry_delete_version(q->r, subject, version, permanent, &deleted_version, &e))
        reply_sr(q, &e);
    else
        reply_json(q, 200, json_integer(deleted_version));
}

static void op_config(req_t *q, const char *method, const char *subject)
{
    ls_sr_err_t e;
    ls_sr_compat level;
    bool set;
    if (!strcmp(method, "GET")) {
        bool to_global;
        if (qbool(q, "defaultToGlobal", false, &to_global)) return;
        if (ls_registry_get_compat(q->r, subject, &level, &set, &e)) {
            reply_sr(q, &e);
        } else if (subject && !set && !to_global) {
            reply_error(q, LS_SR_SUBJECT_COMPAT_NOT_CONFIGURED,
                        "Subject '%s' does not have subject-level compatibility configured",
                        subject);
        } else {
            reply_json(q, 200, json_pack("{s:s}", "compatibilityLevel", ls_sr_compat_name(level)));
        }
    } else if (!strcmp(method, "PUT")) {
        static const char *const allowed[] = {"compatibility", NULL};
        json_t *b = load_body(q);
        if (!b) return;
        json_t *c = json_object_get(b, "compatibility");
        if (check_fields(q, b, allowed, LS_SR_INVALID_COMPAT)) {
        } else if (!json_is_string(c) || ls_sr_compat_parse(json_string_value(c), &level)) {
            reply_error(q, LS_SR_INVALID_COMPAT,
                        "Invalid compatibility level. Valid values are none, backward, forward, "
                        "full, backward_transitive, forward_transitive, and full_transitive");
        } else if (subject && ls_registry_set_compat(q->r, subject, level, &e) == LS_SR_OK) {
            reply_json(q, 200, json_pack("{s:s}", "compatibility", ls_sr_compat_name(level)));
        } else if (!subject && ls_registry_set_compat(q->r, NULL, level, &e) == LS_SR_OK) {
            reply_json(q, 200, json_pack("{s:s}", "compatibility", ls_sr_compat_name(level)));
        } else {
            reply_sr(q, &e);
        }
        json_decref(b);
    } else if (!strcmp(method, "DELETE")) {
        if (ls_registry_delete_compat(q->r, subject, &level, &e))
            reply_sr(q, &e);
        else
            reply_json(q, 200, json_pack("{s:s}", "compatibilityLevel", ls_sr_compat_name(level)));
    } else {
        reply_error(q, 405, "HTTP 405 Method Not Allowed");
    }
}

static void op_mode(req_t *q, const char *method, const char *subject)
{
    ls_sr_err_t e;
    ls_sr_mode mode;
    bool set;
    if (!strcmp(method, "GET")) {
        bool to_global;
        if (qbool(q, "defaultToGlobal", false, &to_global)) return;
        if (ls_registry_get_mode(q->r, subject, &mode, &set, &e))
            reply_sr(q, &e);
        else if (subject && !set && !to_global)
            reply_error(q, LS_SR_SUBJECT_MODE_NOT_CONFIGURED,
                        "Subject '%s' does not have subject-level mode configured", subject);
        else
            reply_json(q, 200, json_pack("{s:s}", "mode", ls_sr_mode_name(mode)));
    } else if (!strcmp(method, "PUT")) {
        static const char *const allowed[] = {"mode", NULL};
        bool force;
        if (qbool(q, "force", false, &force)) return;
        json_t *b = load_body(q);
        if (!b) return;
        json_t *m = json_object_get(b, "mode");
        const char *ms = json_string_value(m);
        if (check_fields(q, b, allowed, LS_SR_INVALID_MODE)) {
        } else if (ms && (!strcmp(ms, "IMPORT") || !strcmp(ms, "READONLY_OVERRIDE"))) {
            reply_error(q, LS_SR_INVALID_MODE,
                        "Invalid mode: %s is not supported by this registry (READWRITE, "
                        "READONLY)",
                        ms);
        } else if (!ms || (strcmp(ms, "READWRITE") && strcmp(ms, "READONLY"))) {
            reply_error(q, LS_SR_INVALID_MODE,
                        "Invalid mode. Valid values are READWRITE and READONLY");
        } else {
            mode = strcmp(ms, "READWRITE") ? LS_SR_MODE_READONLY : LS_SR_MODE_READWRITE;
            if (ls_registry_set_mode(q->r, subject, mode, &e))
                reply_sr(q, &e);
            else
                reply_json(q, 200, json_pack("{s:s}", "mode", ls_sr_mode_name(mode)));
        }
        json_decref(b);
    } else if (!strcmp(method, "DELETE") && subject) {
        if (ls_registry_delete_mode(q->r, subject, &mode, &e))
            reply_sr(q, &e);
        else
            reply_json(q, 200, json_pack("{s:s}", "mode", ls_sr_mode_name(mode)));
    } else {
        reply_error(q, 405, "HTTP 405 Method Not Allowed");
    }
}

static void op_compatibility(req_t *q, const char *subject, const char *vtext)
{
    int32_t version = 0;
    bool verbose, normalize;
    schema_req_t sr = {0};
    if ((vtext && parse_version(q, vtext, &version)) || qbool(q, "verbose", false, &verbose) ||
        qbool(q, "normalize", false, &normalize) || parse_schema_req(q, &sr)) {
        json_decref(sr.body);
        return;
    }
    bool ok;
    ls_buf_t why;
    ls_buf_init(&why);
    ls_sr_err_t e;
    if (ls_registry_test_compat(q->r, subject, version, &sr.in, &ok, &why, &e)) {
        reply_sr(q, &e);
    } else {
        json_t *o = json_pack("{s:b}", "is_compatible", ok);
        if (verbose) {
            json_t *msgs = json_array();
            ls_buf_append_u8(&why, 0);
            for (char *line = (char *)why.data, *nl; line && *line; line = nl ? nl + 1 : NULL) {
                nl = strchr(line, '\n');
                if (nl) *nl = 0;
                if (*line) json_array_append_new(msgs, json_string(line));
            }
            json_object_set_new(o, "messages", msgs);
        }
        reply_json(q, 200, o);
    }
    ls_buf_free(&why);
    json_decref(sr.body);
}

/* ---- routing ---------------------------------------------------------------------------- */

static int is(const char *a, const char *b) { return !strcmp(a, b); }

/* The subject a request acts on (NULL: registry-wide) and whether it
 * changes anything; false when it needs no check (schemas by id, types,
 * the subject list, which is filtered, and unknown paths). */
static bool access_of(const req_t *q, const char **subject, bool *write)
{
    const char *m = q->http->method;
    char *const *s = q->seg;
    size_t n = q->nseg;
    *write = !is(m, "GET") && !is(m, "HEAD");
    *subject = NULL;
    if (n >= 2 && is(s[0], "subjects")) {
        *subject = s[1];
        /* POST /subjects/{s} looks a schema up: a read */
        if (n == 2 && is(m, "POST")) *write = false;
        return true;
    }
    if (n >= 3 && is(s[0], "compatibility") && is(s[1], "subjects")) {
        *subject = s[2];
        *write = false; /* a test, nothing is stored */
        return true;
    }
    if (n >= 1 && (is(s[0], "config") || is(s[0], "mode"))) {
        *subject = n == 2 ? s[1] : NULL;
        return true;
    }
    return false;
}

static void route(req_t *q)
{
    const char *m = q->http->method;
    char **s = q->seg;
    size_t n = q->nseg;
    const char *subject;
    bool write;
    if (q->rest->may && access_of(q, &subject, &write) &&
        !q->rest->may(q->rest->may_ctx, q->http, subject, write, true)) {
        json_t *j = json_pack("{s:i, s:s+}", "error_code", 40301, "message",
                              write ? "not authorized to change " : "not authorized to read ",
                              subject ? subject : "the registry-wide settings");
        reply_json(q, 403, j);
        return;
    }
    bool get = is(m, "GET"), post = is(m, "POST"), del = is(m, "DELETE");
#define ALLOW(cond)                                                                                \
    if (!(cond)) {                                                                                 \
        reply_error(q, 405, "HTTP 405 Method Not Allowed");                                        \
        return;                                                                                    \
    }
    if (n == 0) {
        ALLOW(get);
        reply_json(q, 200, json_object());
    } else if (is(s[0], "schemas") && n == 2 && is(s[1], "types")) {
        ALLOW(get);
        op_types(q);
    } else if (is(s[0], "schemas") && n >= 3 && n <= 4 && is(s[1], "ids")) {
        ALLOW(get);
        if (n == 4 && !is(s[3], "schema") && !is(s[3], "subjects") && !is(s[3], "versions")) {
            reply_error(q, 404, "HTTP 404 Not Found");
            return;
        }
        op_schema_by_id(q, s[2], n == 4 ? s[3] : NULL);
    } else if (is(s[0], "subjects") && n == 1) {
        ALLOW(get);
        op_subjects(q);
    } else if (is(s[0], "subjects") && n == 2) {
        ALLOW(post || del);
        if (post)
            op_lookup(q, s[1]);
        else
            op_delete_subject(q, s[1]);
    } else if (is(s[0], "subjects") && n == 3 && is(s[2], "versions")) {
        ALLOW(get || post);
        if (post)
            op_register(q, s[1]);
        else
            op_versions(q, s[1]);
    } else if (is(s[0], "subjects") && n == 4 && is(s[2], "versions")) {
        ALLOW(get || del);
        if (get)
            op_version(q, s[1], s[3], NULL);
        else
            op_delete_version(q, s[1], s[3]);
    } else if (is(s[0], "subjects") && n == 5 && is(s[2], "versions") &&
               (is(s[4], "schema") || is(s[4], "referencedby"))) {
        ALLOW(get);
        op_version(q, s[1], s[3], s[4]);
    } else if (is(s[0], "config") && n <= 2) {
        op_config(q, m, n == 2 ? s[1] : NULL);
    } else if (is(s[0], "mode") && n <= 2) {
        op_mode(q, m, n == 2 ? s[1] : NULL);
    } else if (is(s[0], "compatibility") && (n == 4 || n == 5) && is(s[1], "subjects") &&
               is(s[3], "versions")) {
        ALLOW(post);
        op_compatibility(q, s[2], n == 5 ? s[4] : NULL);
    } else {
        reply_error(q, 404, "HTTP 404 Not Found");
    }
#undef ALLOW
}

void ls_registry_rest_handle(void *arg, const ls_http_request_t *http, ls_http_response_t *resp)
{
    const ls_registry_rest_t *rest = arg;
    req_t q = {.r = rest->registry, .rest = rest, .http = http, .resp = resp};
    const char *p = http->path;
    bool bad = false;
    while (*p == '/')
        p++;
    while (*p && !bad) {
        const char *end = strchr(p, '/');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (q.nseg == MAX_SEGMENTS) {
            reply_error(&q, 404, "HTTP 404 Not Found");
            bad = true;
            break;
        }
        ls_buf_t b;
        ls_buf_init(&b);
        if (ls_url_decode(p, len, false, &b) || memchr(b.data, 0, b.len) ||
            !ls_utf8_valid(b.data, b.len)) {
            reply_error(&q, 400, "the path holds a malformed segment");
            bad = true;
        } else {
            q.seg[q.nseg++] = ls_strndup((const char *)b.data, b.len);
        }
        ls_buf_free(&b);
        p = end ? end + 1 : p + len;
        while (*p == '/' && !bad)
            p++;
    }
    if (!bad) route(&q);
    for (size_t i = 0; i < q.nseg; i++)
        ls_free(q.seg[i]);
}
