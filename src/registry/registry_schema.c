/* Schema objects and the rules between them, with no store behind them:
 * type names and subject naming strategies, parsing a text of a type into
 * its model, a schema's identity (canonical form and references) and its
 * hash, and the compatibility levels applied to a candidate and earlier
 * versions. A parsed schema is immutable and reference counted, so threads
 * share it (registry.h). */
#include "registry/registry_int.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/hash.h"
#include "registry/avro_view.h"

/* ---- names ------------------------------------------------------------------ */

static const char *const TYPE_NAMES[] = {"AVRO", "JSON", "PROTOBUF"};

const char *ls_sr_type_name(ls_sr_type t) { return TYPE_NAMES[t]; }

void ls_sr_subject_name(ls_sr_strategy st, const char *topic, bool key, const char *record,
                        char *out, size_t cap)
{
    switch (st) {
    case LS_SR_TOPIC_NAME: snprintf(out, cap, "%s-%s", topic, key ? "key" : "value"); return;
    case LS_SR_RECORD_NAME: snprintf(out, cap, "%s", record); return;
    case LS_SR_TOPIC_RECORD_NAME: snprintf(out, cap, "%s-%s", topic, record); return;
    }
}

const char *ls_sr_record_name(const ls_avro_node_t *root)
{
    return !root ? "" : root->fullname ? root->fullname : ls_avro_kind_name(root->kind);
}

int ls_sr_type_parse(const char *s, ls_sr_type *out)
{
    for (int i = 0; i < 3; i++)
        if (!strcmp(s, TYPE_NAMES[i])) {
            *out = (ls_sr_type)i;
            return 0;
        }
    return -1;
}

/* ---- schema objects ---------------------------------------------------------- */

void ls_sr_refs_free(ls_sr_ref_t *refs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        ls_free(refs[i].name);
        ls_free(refs[i].subject);
    }
    ls_free(refs);
}

ls_sr_schema_t *ls_sr_schema_keep(ls_sr_schema_t *s)
{
    if (s) __atomic_add_fetch(&s->refcount, 1, __ATOMIC_RELAXED);
    return s;
}

void ls_sr_schema_release(ls_sr_schema_t *s)
{
    if (!s || __atomic_sub_fetch(&s->refcount, 1, __ATOMIC_ACQ_REL) != 0) return;
    ls_free(s->text);
    ls_free(s->canon);
    ls_sr_refs_free(s->refs, s->nrefs);
    ls_avro_free(s->avro);
    ls_jsonschema_free(s->json);
    ls_proto_free(s->proto);
    ls_avro_view_free(s->view);
    ls_avro_views_free(s->pviews);
    ls_free(s->view_why);
    ls_free(s);
}

void ls_sr_versions_free(ls_sr_version_t *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        ls_free(v[i].subject);
    ls_free(v);
}

/* The identity of a schema text: its JSON re-emitted compactly with object
 * keys sorted, so whitespace and key order do not make a new schema. */
static char *canonical(const char *text, ls_sr_err_t *e)
{
    json_error_t je;
    json_t *j = json_loads(text, JSON_DECODE_ANY, &je);
    if (!j) {
        ls_sr_seterr(e, LS_SR_INVALID_SCHEMA,
                     "Invalid schema: not valid JSON: %s (line %d, column %d)", je.text, je.line,
                     je.column);
        return NULL;
    }
    char *out = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    json_decref(j);
    char *c = ls_strdup(out);
    free(out);
    return c;
}

/* Parses text of type with the texts of its references (dependencies
 * first; names[i] is the reference name texts[i] was reached by); refs
 * (resolved: no -1 versions) are copied into the result. */
ls_sr_code ls_sr_parse(ls_sr_type type, const char *text, const ls_sr_ref_t *refs, size_t nrefs,
                       const char *const *names, const char *const *deps, size_t ndeps,
                       ls_sr_schema_t **out, ls_sr_err_t *e)
{
    char why[512];
    ls_avro_schema_t *avro = NULL;
    ls_jsonschema_t *json = NULL;
    ls_proto_t *proto = NULL;
    if (type == LS_SR_AVRO)
        avro = ls_avro_parse(deps, ndeps, text, strlen(text), why, sizeof why);
    else if (type == LS_SR_JSON)
        json = ls_jsonschema_parse(names, deps, ndeps, text, why, sizeof why);
    else
        proto = ls_proto_parse(names, deps, ndeps, text, why, sizeof why);
    if (!avro && !json && !proto)
        return ls_sr_seterr(e, LS_SR_INVALID_SCHEMA, "Invalid schema: %s", why);
    char *canon = proto ? ls_strdup(ls_proto_canonical(proto)) : canonical(text, e);
    if (!canon) {
        ls_avro_free(avro);
        ls_jsonschema_free(json);
        return e->code;
    }
    ls_sr_schema_t *s = LS_NEW(ls_sr_schema_t);
    s->refcount = 1;
    s->type = type;
    s->text = ls_strdup(text);
    s->canon = canon;
    s->avro = avro;
    s->json = json;
    s->proto = proto;
    if (json && !(s->view = ls_avro_view_json(json, why, sizeof why))) s->view_why = ls_strdup(why);
    if (proto) s->pviews = ls_avro_views_proto(proto);
    s->nrefs = nrefs;
    s->refs = LS_NEWN(ls_sr_ref_t, nrefs ? nrefs : 1);
    for (size_t i = 0; i < nrefs; i++) {
        s->refs[i].name = ls_strdup(refs[i].name);
        s->refs[i].subject = ls_strdup(refs[i].subject);
        s->refs[i].version = refs[i].version;
    }
    *out = s;
    return LS_SR_OK;
}

ls_sr_code ls_sr_parse_standalone(const ls_sr_input_t *in, ls_sr_schema_t **out, ls_sr_err_t *e)
{
    return ls_sr_parse(in->type, in->text, in->refs, in->nrefs, NULL, NULL, 0, out, e);
}

bool ls_sr_same_identity(const ls_sr_schema_t *a, const ls_sr_schema_t *b)
{
    if (a->type != b->type || strcmp(a->canon, b->canon) || a->nrefs != b->nrefs) return false;
    for (size_t i = 0; i < a->nrefs; i++)
        if (strcmp(a->refs[i].name, b->refs[i].name) ||
            strcmp(a->refs[i].subject, b->refs[i].subject) ||
            a->refs[i].version != b->refs[i].version)
            return false;
    return true;
}

uint64_t ls_sr_identity_hash(const ls_sr_schema_t *s)
{
    uint64_t h = ls_hash_str(LS_HASH_INIT, TYPE_NAMES[s->type]);
    h = ls_hash_bytes(h, "\x1f", 1);
    h = ls_hash_str(h, s->canon);
    for (size_t i = 0; i < s->nrefs; i++) {
        char v[16];
        snprintf(v, sizeof v, "%d", s->refs[i].version);
        h = ls_hash_str(ls_hash_bytes(h, "\x1f", 1), s->refs[i].name);
        h = ls_hash_str(ls_hash_bytes(h, "\x1f", 1), s->refs[i].subject);
        h = ls_hash_str(ls_hash_bytes(h, "\x1f", 1), v);
    }
    return h;
}

/* ---- compatibility ------------------------------------------------------------ */

static bool can_read(const ls_sr_schema_t *reader, const ls_sr_schema_t *writer, ls_buf_t *why)
{
    if (reader->type != writer->type) {
        if (why)
            ls_buf_printf(why, "TYPE_MISMATCH: a %s schema cannot follow a %s schema",
                          TYPE_NAMES[reader->type], TYPE_NAMES[writer->type]);
        return false;
    }
    if (reader->type == LS_SR_JSON) return ls_jsonschema_can_read(reader->json, writer->json, why);
    if (reader->type == LS_SR_PROTOBUF) return ls_proto_can_read(reader->proto, writer->proto, why);
    return ls_avro_can_read(reader->avro, writer->avro, why);
}

/* One check of candidate against one previous version, in the directions
 * the level asks: backward (the candidate reads data of the previous),
 * forward (the previous reads data of the candidate), or both. */
bool ls_sr_compatible_with(ls_sr_compat level, const ls_sr_schema_t *cand,
                           const ls_sr_schema_t *prev, int32_t prev_version, ls_buf_t *why)
{
    bool back = level == LS_SR_COMPAT_BACKWARD || level == LS_SR_COMPAT_BACKWARD_TRANSITIVE ||
                level == LS_SR_COMPAT_FULL || level == LS_SR_COMPAT_FULL_TRANSITIVE;
    bool fwd = level == LS_SR_COMPAT_FORWARD || level == LS_SR_COMPAT_FORWARD_TRANSITIVE ||
               level == LS_SR_COMPAT_FULL || level == LS_SR_COMPAT_FULL_TRANSITIVE;
    bool ok = true;
    size_t mark = why ? why->len : 0;
    if (back && !can_read(cand, prev, why)) {
        ok = false;
        if (why) {
            ls_buf_printf(why, " (the new schema cannot read data written with version %d)\n",
                          prev_version);
            mark = why->len;
        }
    }
    if (fwd && !can_read(prev, cand, why)) {
        ok = false;
        if (why)
            ls_buf_printf(why, " (version %d cannot read data written with the new schema)\n",
                          prev_version);
    } else if (why) {
        why->len = mark;
    }
    return ok;
}

static bool transitive(ls_sr_compat level)
{
    return level == LS_SR_COMPAT_BACKWARD_TRANSITIVE || level == LS_SR_COMPAT_FORWARD_TRANSITIVE ||
           level == LS_SR_COMPAT_FULL_TRANSITIVE;
}

/* Checks cand against the live versions under level (their version
 * numbers in the reasons). */
bool ls_sr_check_against(ls_sr_compat level, const ls_sr_schema_t *cand, ls_sr_schema_t **prev,
                         const int32_t *versions, size_t n, ls_buf_t *why)
{
    if (level == LS_SR_COMPAT_NONE || n == 0) return true;
    size_t first = transitive(level) ? 0 : n - 1;
    bool ok = true;
    for (size_t i = n; i-- > first;)
        ok = ls_sr_compatible_with(level, cand, prev[i], versions[i], why) && ok;
    return ok;
}

bool ls_sr_compatible(ls_sr_compat level, const ls_sr_schema_t *candidate,
                      ls_sr_schema_t *const *previous, size_t n, ls_buf_t *why)
{
    int32_t *versions = LS_NEWN(int32_t, n ? n : 1);
    for (size_t i = 0; i < n; i++)
        versions[i] = (int32_t)(i + 1);
    bool ok = ls_sr_check_against(level, candidate, (ls_sr_schema_t **)previous, versions, n, why);
    ls_free(versions);
    return ok;
}
