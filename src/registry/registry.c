/* The schema registry over ls_meta; state, invariants and threads are in
 * registry.h.
 *
 * Writes are optimistic: read what the decision needs (the subject's head
 * first, then its versions; the id counter and digest bucket when a new id
 * is needed), decide, then commit one txn comparing every key read. A lost
 * compare (another broker, another thread) retries from the reads; an
 * answer lost on the way back (LS_EIO) retries too, and the retry finds the
 * version it may have written already (registration is idempotent).
 *
 * Caches: schemas by id never change, so they are cached without
 * invalidation (bounded by count and by bytes of text; emptied when full).
 * The latest version of a subject (at most LATEST_CACHE_MAX subjects) is
 * cached against a generation number that a watch on the
 * registry's keys bumps on every change anywhere in the cluster (and this
 * broker bumps at once after its own writes); while the watch is lost
 * nothing is cached, and the next call watches again. */
#include "registry/registry.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/diag.h"
#include "base/hash.h"
#include "base/i64map.h"
#include "base/utf8.h"
#include "registry/avro_view.h"

#define P "/ls/registry/"
#define MAX_ATTEMPTS 64
#define SCHEMA_CACHE_MAX 4096
#define SCHEMA_CACHE_BYTES (64u << 20) /* texts held by the cache (models ~ a few x) */
#define LATEST_CACHE_MAX 1024
#define MAX_REF_DEPTH 16
/* Versions per txn of a subject deletion: a permanent one deletes two keys
 * per version, plus the head, config and mode keys and one compare, within
 * the store's txn bound (etcd: 128). */
#define TXN_CHUNK 60

typedef struct latest_entry {
    char *subject;
    uint64_t gen;
    ls_sr_version_t v;
} latest_entry_t;

struct ls_registry {
    ls_meta_t *meta;
    pthread_mutex_t mu;
    ls_i64map_t schemas; /* id -> ls_sr_schema_t* (one reference each) */
    size_t schema_bytes; /* their texts and canonical forms */
    latest_entry_t *latest;
    size_t nlatest;
    uint64_t gen; /* atomic */
    ls_meta_watch_t *watch;
    int watch_lost; /* atomic */
};

/* ---- names ------------------------------------------------------------------ */

static const char *const TYPE_NAMES[] = {"AVRO", "JSON", "PROTOBUF"};
static const char *const COMPAT_NAMES[] = {
    "NONE", "BACKWARD",       "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE",
    "FULL", "FULL_TRANSITIVE"};
static const char *const MODE_NAMES[] = {"READWRITE", "READONLY"};

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
const char *ls_sr_compat_name(ls_sr_compat c) { return COMPAT_NAMES[c]; }
const char *ls_sr_mode_name(ls_sr_mode m) { return MODE_NAMES[m]; }

int ls_sr_type_parse(const char *s, ls_sr_type *out)
{
    for (int i = 0; i < 3; i++)
        if (!strcmp(s, TYPE_NAMES[i])) {
            *out = (ls_sr_type)i;
            return 0;
        }
    return -1;
}

int ls_sr_compat_parse(const char *s, ls_sr_compat *out)
{
    for (int i = 0; i < 7; i++)
        if (!strcmp(s, COMPAT_NAMES[i])) {
            *out = (ls_sr_compat)i;
            return 0;
        }
    return -1;
}

static int mode_parse(const char *s, ls_sr_mode *out)
{
    for (int i = 0; i < 2; i++)
        if (!strcmp(s, MODE_NAMES[i])) {
            *out = (ls_sr_mode)i;
            return 0;
        }
    return -1;
}

__attribute__((format(printf, 3, 4))) static ls_sr_code seterr(ls_sr_err_t *e, ls_sr_code code,
                                                               const char *fmt, ...)
{
    e->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
    return code;
}

static ls_sr_code store_err(ls_registry_t *r, ls_sr_err_t *e, const char *what, ls_status st)
{
    LS_WARN("registry", "%s: %s (%s)", what, ls_status_str(st), ls_meta_error(r->meta));
    return seterr(e, LS_SR_STORE_ERROR, "Error in the backend data store: %s: %s", what,
                  ls_status_str(st));
}

/* ---- schema objects ---------------------------------------------------------- */

static void refs_free(ls_sr_ref_t *refs, size_t n)
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
    refs_free(s->refs, s->nrefs);
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
        seterr(e, LS_SR_INVALID_SCHEMA, "Invalid schema: not valid JSON: %s (line %d, column %d)",
               je.text, je.line, je.column);
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
static ls_sr_code parse_schema(ls_sr_type type, const char *text, const ls_sr_ref_t *refs,
                               size_t nrefs, const char *const *names, const char *const *deps,
                               size_t ndeps, ls_sr_schema_t **out, ls_sr_err_t *e)
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
    if (!avro && !json && !proto) return seterr(e, LS_SR_INVALID_SCHEMA, "Invalid schema: %s", why);
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
    return parse_schema(in->type, in->text, in->refs, in->nrefs, NULL, NULL, 0, out, e);
}

static bool same_identity(const ls_sr_schema_t *a, const ls_sr_schema_t *b)
{
    if (a->type != b->type || strcmp(a->canon, b->canon) || a->nrefs != b->nrefs) return false;
    for (size_t i = 0; i < a->nrefs; i++)
        if (strcmp(a->refs[i].name, b->refs[i].name) ||
            strcmp(a->refs[i].subject, b->refs[i].subject) ||
            a->refs[i].version != b->refs[i].version)
            return false;
    return true;
}

static uint64_t identity_hash(const ls_sr_schema_t *s)
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
static bool compatible_with(ls_sr_compat level, const ls_sr_schema_t *cand,
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

/* ---- keys ------------------------------------------------------------------- */

static void enc_subject(ls_buf_t *b, const char *s)
{
    for (const uint8_t *p = (const uint8_t *)s; *p; p++) {
        if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
            *p == '.' || *p == '_' || *p == '-')
            ls_buf_append_u8(b, *p);
        else
            ls_buf_printf(b, "%%%02X", *p);
    }
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Decodes n bytes of an encoded subject; NULL if malformed. */
static char *dec_subject(const char *s, size_t n)
{
    char *out = ls_malloc(n + 1);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '%') {
            out[k++] = s[i];
            continue;
        }
        int hi = i + 2 < n ? hexval(s[i + 1]) : -1;
        int lo = i + 2 < n ? hexval(s[i + 2]) : -1;
        if (hi < 0 || lo < 0) {
            ls_free(out);
            return NULL;
        }
        out[k++] = (char)(hi << 4 | lo);
        i += 2;
    }
    out[k] = 0;
    return out;
}

typedef struct key {
    char s[LS_SR_MAX_SUBJECT * 3 + 128];
} key_t_;

__attribute__((format(printf, 2, 3))) static const char *kfmt(key_t_ *k, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(k->s, sizeof k->s, fmt, ap);
    va_end(ap);
    return k->s;
}

/* P<what><encoded subject><suffix> */
static const char *ksub(key_t_ *k, const char *what, const char *subject, const char *suffix)
{
    ls_buf_t b;
    ls_buf_init(&b);
    ls_buf_printf(&b, P "%s", what);
    enc_subject(&b, subject);
    ls_buf_printf(&b, "%s", suffix);
    snprintf(k->s, sizeof k->s, "%.*s", (int)b.len, (const char *)b.data);
    ls_buf_free(&b);
    return k->s;
}

/* ---- txn builder --------------------------------------------------------------- */

typedef struct txn {
    ls_meta_cmp_t cmps[8];
    size_t ncmp;
    ls_meta_op_t ops[LS_SR_MAX_REFERENCES + TXN_CHUNK * 2 + 16];
    size_t nops;
    char *owned[LS_SR_MAX_REFERENCES + TXN_CHUNK * 4 + 32];
    size_t nowned;
} txn_t;

static const char *tx_own(txn_t *t, char *s)
{
    t->owned[t->nowned++] = s;
    return s;
}

static void tx_cmp(txn_t *t, const char *key, int64_t rev)
{
    const char *k = tx_own(t, ls_strdup(key));
    t->cmps[t->ncmp++] =
        (ls_meta_cmp_t){.kind = LS_META_CMP_MOD_REV, .key = k, .klen = strlen(k), .rev = rev};
}

static void tx_put(txn_t *t, const char *key, const char *val)
{
    const char *k = tx_own(t, ls_strdup(key));
    const char *v = tx_own(t, ls_strdup(val));
    t->ops[t->nops++] = (ls_meta_op_t){
        .kind = LS_META_OP_PUT, .key = k, .klen = strlen(k), .val = v, .vlen = strlen(v)};
}

static void tx_del(txn_t *t, const char *key)
{
    const char *k = tx_own(t, ls_strdup(key));
    t->ops[t->nops++] = (ls_meta_op_t){.kind = LS_META_OP_DEL, .key = k, .klen = strlen(k)};
}

static ls_status tx_commit(ls_registry_t *r, txn_t *t, int64_t *rev)
{
    ls_status st = ls_meta_txn(r->meta, t->cmps, t->ncmp, t->ops, t->nops, rev);
    for (size_t i = 0; i < t->nowned; i++)
        ls_free(t->owned[i]);
    t->nowned = t->ncmp = t->nops = 0;
    if (st == LS_OK) __atomic_add_fetch(&r->gen, 1, __ATOMIC_ACQ_REL);
    return st;
}

static txn_t *tx_new(void) { return LS_NEW(txn_t); }

static void tx_free(txn_t *t)
{
    for (size_t i = 0; i < t->nowned; i++)
        ls_free(t->owned[i]);
    ls_free(t);
}

/* The start of optimistic attempt number `attempt` on a subject: after the
 * first, a little backoff, growing; past MAX_ATTEMPTS the store error the
 * caller answers. */
static ls_sr_code attempt_start(int attempt, const char *subject, ls_sr_err_t *e)
{
    if (attempt == MAX_ATTEMPTS)
        return seterr(e, LS_SR_STORE_ERROR,
                      "Error in the backend data store: too much contention on subject '%s'",
                      subject);
    if (attempt) usleep((useconds_t)(1000 * (attempt < 10 ? attempt + 1 : 10)));
    return LS_SR_OK;
}

/* Whether a failed commit is worth another attempt from fresh reads. */
static bool commit_retryable(ls_status st)
{
    return st == LS_ECONFLICT || st == LS_EIO || st == LS_EAGAIN;
}

/* ---- store reads ---------------------------------------------------------------- */

/* The subject's versions (ascending, soft-deleted included) and its head's
 * revision (0: no head). */
typedef struct subject_state {
    int64_t head_rev;
    ls_sr_version_t *v;
    size_t n;
} subject_state_t;

static void subject_state_free(subject_state_t *s)
{
    ls_sr_versions_free(s->v, s->n);
    memset(s, 0, sizeof *s);
}

static ls_sr_code read_subject(ls_registry_t *r, const char *subject, subject_state_t *out,
                               ls_sr_err_t *e)
{
    memset(out, 0, sizeof *out);
    key_t_ k;
    ls_kv_t kv;
    ls_status st = ls_meta_get(r->meta, ksub(&k, "heads/", subject, ""), &kv);
    if (st == LS_OK) {
        out->head_rev = kv.mod_rev;
        ls_kv_free(&kv);
    } else if (st != LS_ENOTFOUND) {
        return store_err(r, e, "reading a subject head", st);
    }
    ls_kvlist_t l;
    st = ls_meta_scan_prefix(r->meta, ksub(&k, "subjects/", subject, "/"), 0, &l);
    if (st != LS_OK) return store_err(r, e, "reading a subject's versions", st);
    out->v = LS_NEWN(ls_sr_version_t, l.n ? l.n : 1);
    for (size_t i = 0; i < l.n; i++) {
        const char *slash = strrchr((const char *)l.v[i].key, '/');
        json_t *j = json_loadb((const char *)l.v[i].val, l.v[i].vlen, 0, NULL);
        json_t *id = json_object_get(j, "id");
        if (!slash || !json_is_integer(id)) {
            json_decref(j);
            ls_kvlist_free(&l);
            subject_state_free(out);
            LS_ERROR("registry", "corrupt version record at %s", (const char *)l.v[i].key);
            return seterr(e, LS_SR_STORE_ERROR,
                          "Error in the backend data store: a corrupt "
                          "version record of subject '%s'",
                          subject);
        }
        ls_sr_version_t *v = &out->v[out->n++];
        v->subject = ls_strdup(subject);
        v->version = (int32_t)strtol(slash + 1, NULL, 10);
        v->id = (int32_t)json_integer_value(id);
        v->deleted = json_is_true(json_object_get(j, "deleted"));
        json_decref(j);
    }
    ls_kvlist_free(&l);
    return LS_SR_OK;
}

static const ls_sr_version_t *latest_live(const subject_state_t *s)
{
    for (size_t i = s->n; i-- > 0;)
        if (!s->v[i].deleted) return &s->v[i];
    return NULL;
}

static bool any_live(const subject_state_t *s) { return latest_live(s) != NULL; }

static const ls_sr_version_t *find_version(const subject_state_t *s, int32_t version)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->v[i].version == version) return &s->v[i];
    return NULL;
}

/* The stored record of id: type, text, refs. */
typedef struct record {
    ls_sr_type type;
    char *text;
    ls_sr_ref_t *refs;
    size_t nrefs;
} record_t;

static void record_free(record_t *rec)
{
    ls_free(rec->text);
    refs_free(rec->refs, rec->nrefs);
    memset(rec, 0, sizeof *rec);
}

static ls_sr_code read_record(ls_registry_t *r, int32_t id, record_t *out, ls_sr_err_t *e)
{
    memset(out, 0, sizeof *out);
    key_t_ k;
    ls_kv_t kv;
    ls_status st = ls_meta_get(r->meta, kfmt(&k, P "schemas/%010d", id), &kv);
    if (st == LS_ENOTFOUND) return seterr(e, LS_SR_SCHEMA_NOT_FOUND, "Schema %d not found", id);
    if (st != LS_OK) return store_err(r, e, "reading a schema", st);
    json_t *j = json_loadb((const char *)kv.val, kv.vlen, 0, NULL);
    ls_kv_free(&kv);
    json_t *type = json_object_get(j, "schemaType"), *text = json_object_get(j, "schema");
    json_t *refs = json_object_get(j, "references");
    if (!json_is_string(type) || ls_sr_type_parse(json_string_value(type), &out->type) ||
        !json_is_string(text) || !json_is_array(refs)) {
        json_decref(j);
        LS_ERROR("registry", "corrupt schema record %s", k.s);
        return seterr(e, LS_SR_STORE_ERROR,
                      "Error in the backend data store: schema %d is "
                      "corrupt",
                      id);
    }
    out->text = ls_strdup(json_string_value(text));
    out->nrefs = json_array_size(refs);
    out->refs = LS_NEWN(ls_sr_ref_t, out->nrefs ? out->nrefs : 1);
    for (size_t i = 0; i < out->nrefs; i++) {
        json_t *rf = json_array_get(refs, i);
        out->refs[i].name = ls_strdup(json_string_value(json_object_get(rf, "name")) ?: "");
        out->refs[i].subject = ls_strdup(json_string_value(json_object_get(rf, "subject")) ?: "");
        out->refs[i].version = (int32_t)json_integer_value(json_object_get(rf, "version"));
    }
    json_decref(j);
    return LS_SR_OK;
}

/* The texts of the schemas refs[] name, transitively, dependencies first,
 * each once; resolved[] gets refs with -1 versions replaced. */
typedef struct deps {
    int32_t *ids;
    char **names; /* the reference name each was first reached by */
    char **texts;
    size_t n;
} deps_t;

static void deps_free(deps_t *d)
{
    for (size_t i = 0; i < d->n; i++) {
        ls_free(d->texts[i]);
        ls_free(d->names[i]);
    }
    ls_free(d->texts);
    ls_free(d->names);
    ls_free(d->ids);
    memset(d, 0, sizeof *d);
}

static ls_sr_code collect_deps(ls_registry_t *r, const ls_sr_ref_t *refs, size_t nrefs,
                               ls_sr_ref_t *resolved, deps_t *d, int depth, ls_sr_err_t *e)
{
    if (depth > MAX_REF_DEPTH)
        return seterr(e, LS_SR_INVALID_SCHEMA,
                      "Invalid schema: references nested deeper than %d levels", MAX_REF_DEPTH);
    for (size_t i = 0; i < nrefs; i++) {
        const ls_sr_ref_t *rf = &refs[i];
        if (!rf->name || !*rf->name || !rf->subject || !*rf->subject)
            return seterr(e, LS_SR_INVALID_SCHEMA,
                          "Invalid schema: reference %zu needs a name and a subject", i + 1);
        ls_sr_version_t v;
        ls_sr_err_t inner;
        if (ls_registry_get_version(r, rf->subject, rf->version, false, &v, &inner) != LS_SR_OK) {
            if (inner.code == LS_SR_STORE_ERROR) {
                *e = inner;
                return e->code;
            }
            return seterr(e, LS_SR_INVALID_SCHEMA,
                          "Invalid schema: reference '%s' (subject '%s', version %d): %s", rf->name,
                          rf->subject, rf->version, inner.message);
        }
        ls_free(v.subject);
        if (resolved) {
            resolved[i].name = ls_strdup(rf->name);
            resolved[i].subject = ls_strdup(rf->subject);
            resolved[i].version = v.version;
        }
        bool seen = false;
        for (size_t k = 0; k < d->n && !seen; k++)
            seen = d->ids[k] == v.id;
        if (seen) continue;
        record_t rec;
        if (read_record(r, v.id, &rec, e) != LS_SR_OK) return e->code;
        ls_sr_code c = collect_deps(r, rec.refs, rec.nrefs, NULL, d, depth + 1, e);
        if (c == LS_SR_OK) {
            seen = false;
            for (size_t k = 0; k < d->n && !seen; k++)
                seen = d->ids[k] == v.id;
            if (!seen) {
                d->ids = ls_realloc(d->ids, (d->n + 1) * sizeof *d->ids);
                d->texts = ls_realloc(d->texts, (d->n + 1) * sizeof *d->texts);
                d->names = ls_realloc(d->names, (d->n + 1) * sizeof *d->names);
                d->names[d->n] = ls_strdup(rf->name);
                d->ids[d->n] = v.id;
                d->texts[d->n++] = rec.text;
                rec.text = NULL;
            }
        }
        record_free(&rec);
        if (c != LS_SR_OK) return c;
    }
    return LS_SR_OK;
}

/* Parses a schema and its references' texts from the store. */
static ls_sr_code parse_with_refs(ls_registry_t *r, ls_sr_type type, const char *text,
                                  const ls_sr_ref_t *refs, size_t nrefs, ls_sr_schema_t **out,
                                  ls_sr_err_t *e)
{
    if (nrefs > LS_SR_MAX_REFERENCES)
        return seterr(e, LS_SR_INVALID_SCHEMA, "Invalid schema: more than %d references",
                      LS_SR_MAX_REFERENCES);
    for (size_t i = 0; i < nrefs; i++)
        for (size_t k = 0; k < i; k++)
            if (refs[i].name && refs[k].name && !strcmp(refs[i].name, refs[k].name))
                return seterr(e, LS_SR_INVALID_SCHEMA,
                              "Invalid schema: reference name '%s' appears twice", refs[i].name);
    deps_t d = {0};
    ls_sr_ref_t *resolved = LS_NEWN(ls_sr_ref_t, nrefs ? nrefs : 1);
    ls_sr_code c = collect_deps(r, refs, nrefs, resolved, &d, 0, e);
    if (c == LS_SR_OK)
        c = parse_schema(type, text, resolved, nrefs, (const char *const *)d.names,
                         (const char *const *)d.texts, d.n, out, e);
    refs_free(resolved, nrefs);
    deps_free(&d);
    return c;
}

ls_sr_code ls_registry_schema(ls_registry_t *r, int32_t id, ls_sr_schema_t **out, ls_sr_err_t *e)
{
    pthread_mutex_lock(&r->mu);
    ls_sr_schema_t *s = ls_sr_schema_keep(ls_i64map_get(&r->schemas, id));
    pthread_mutex_unlock(&r->mu);
    if (s) {
        *out = s;
        return LS_SR_OK;
    }
    record_t rec;
    if (read_record(r, id, &rec, e) != LS_SR_OK) return e->code;
    ls_sr_err_t inner;
    ls_sr_code c = parse_with_refs(r, rec.type, rec.text, rec.refs, rec.nrefs, &s, &inner);
    record_free(&rec);
    if (c != LS_SR_OK) {
        if (inner.code == LS_SR_STORE_ERROR) {
            *e = inner;
            return e->code;
        }
        LS_ERROR("registry", "stored schema %d no longer parses: %s", id, inner.message);
        return seterr(e, LS_SR_STORE_ERROR, "Error in the backend data store: schema %d: %s", id,
                      inner.message);
    }
    s->id = id;
    pthread_mutex_lock(&r->mu);
    ls_sr_schema_t *raced = ls_i64map_get(&r->schemas, id);
    if (raced) {
        ls_sr_schema_release(s);
        s = raced;
    } else {
        size_t bytes = strlen(s->text) + strlen(s->canon);
        if (r->schemas.count >= SCHEMA_CACHE_MAX || r->schema_bytes + bytes > SCHEMA_CACHE_BYTES) {
            int64_t k;
            void *v;
            for (size_t it = 0; ls_i64map_next(&r->schemas, &it, &k, &v);)
                ls_sr_schema_release(v);
            ls_i64map_free(&r->schemas);
            ls_i64map_init(&r->schemas);
            r->schema_bytes = 0;
        }
        ls_i64map_put(&r->schemas, id, s);
        r->schema_bytes += bytes;
    }
    ls_sr_schema_keep(s);
    pthread_mutex_unlock(&r->mu);
    *out = s;
    return LS_SR_OK;
}

/* ---- configuration ---------------------------------------------------------------- */

/* Reads a {"<field>": "<value>"} record; *found 0 when absent. */
static ls_sr_code read_setting(ls_registry_t *r, const char *key, const char *field, char *val,
                               size_t cap, bool *found, ls_sr_err_t *e)
{
    ls_kv_t kv;
    ls_status st = ls_meta_get(r->meta, key, &kv);
    *found = false;
    if (st == LS_ENOTFOUND) return LS_SR_OK;
    if (st != LS_OK) return store_err(r, e, "reading a registry setting", st);
    json_t *j = json_loadb((const char *)kv.val, kv.vlen, 0, NULL);
    ls_kv_free(&kv);
    const char *v = json_string_value(json_object_get(j, field));
    if (v) {
        snprintf(val, cap, "%s", v);
        *found = true;
    }
    json_decref(j);
    if (!v) {
        LS_ERROR("registry", "corrupt setting at %s", key);
        return seterr(e, LS_SR_STORE_ERROR,
                      "Error in the backend data store: a corrupt "
                      "setting");
    }
    return LS_SR_OK;
}

static ls_sr_code write_setting(ls_registry_t *r, const char *key, const char *field,
                                const char *val, ls_sr_err_t *e)
{
    json_t *j = json_pack("{s:s}", field, val);
    char *text = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    ls_status st = ls_meta_put(r->meta, key, text, strlen(text));
    free(text);
    if (st != LS_OK) return store_err(r, e, "writing a registry setting", st);
    __atomic_add_fetch(&r->gen, 1, __ATOMIC_ACQ_REL);
    return LS_SR_OK;
}

static const char *setting_key(key_t_ *k, const char *global, const char *per, const char *sub)
{
    return sub ? ksub(k, per, sub, "") : kfmt(k, P "%s", global);
}

ls_sr_code ls_registry_get_compat(ls_registry_t *r, const char *subject, ls_sr_compat *level,
                                  bool *set, ls_sr_err_t *e)
{
    key_t_ k;
    char v[64];
    bool found;
    *set = false;
    if (subject) {
        if (read_setting(r, setting_key(&k, "config", "config-subjects/", subject),
                         "compatibilityLevel", v, sizeof v, &found, e))
            return e->code;
        if (found && ls_sr_compat_parse(v, level) == 0) {
            *set = true;
            return LS_SR_OK;
        }
    }
    if (read_setting(r, setting_key(&k, "config", NULL, NULL), "compatibilityLevel", v, sizeof v,
                     &found, e))
        return e->code;
    if (!found || ls_sr_compat_parse(v, level)) *level = LS_SR_COMPAT_DEFAULT;
    if (!subject) *set = found;
    return LS_SR_OK;
}

ls_sr_code ls_registry_set_compat(ls_registry_t *r, const char *subject, ls_sr_compat level,
                                  ls_sr_err_t *e)
{
    key_t_ k;
    return write_setting(r, setting_key(&k, "config", "config-subjects/", subject),
                         "compatibilityLevel", COMPAT_NAMES[level], e);
}

ls_sr_code ls_registry_delete_compat(ls_registry_t *r, const char *subject, ls_sr_compat *old,
                                     ls_sr_err_t *e)
{
    bool set;
    if (ls_registry_get_compat(r, subject, old, &set, e)) return e->code;
    if (subject && !set)
        return seterr(e, LS_SR_SUBJECT_COMPAT_NOT_CONFIGURED,
                      "Subject '%s' does not have subject-level compatibility configured", subject);
    key_t_ k;
    ls_status st = ls_meta_del(r->meta, setting_key(&k, "config", "config-subjects/", subject));
    if (st != LS_OK) return store_err(r, e, "deleting a compatibility level", st);
    return LS_SR_OK;
}

ls_sr_code ls_registry_get_mode(ls_registry_t *r, const char *subject, ls_sr_mode *mode, bool *set,
                                ls_sr_err_t *e)
{
    key_t_ k;
    char v[64];
    bool found;
    *set = false;
    if (subject) {
        if (read_setting(r, setting_key(&k, "mode", "mode-subjects/", subject), "mode", v, sizeof v,
                         &found, e))
            return e->code;
        if (found && mode_parse(v, mode) == 0) {
            *set = true;
            return LS_SR_OK;
        }
    }
    if (read_setting(r, setting_key(&k, "mode", NULL, NULL), "mode", v, sizeof v, &found, e))
        return e->code;
    if (!found || mode_parse(v, mode)) *mode = LS_SR_MODE_READWRITE;
    if (!subject) *set = found;
    return LS_SR_OK;
}

ls_sr_code ls_registry_set_mode(ls_registry_t *r, const char *subject, ls_sr_mode mode,
                                ls_sr_err_t *e)
{
    key_t_ k;
    return write_setting(r, setting_key(&k, "mode", "mode-subjects/", subject), "mode",
                         MODE_NAMES[mode], e);
}

ls_sr_code ls_registry_delete_mode(ls_registry_t *r, const char *subject, ls_sr_mode *old,
                                   ls_sr_err_t *e)
{
    bool set;
    if (ls_registry_get_mode(r, subject, old, &set, e)) return e->code;
    if (subject && !set)
        return seterr(e, LS_SR_SUBJECT_MODE_NOT_CONFIGURED,
                      "Subject '%s' does not have subject-level mode configured", subject);
    key_t_ k;
    ls_status st = ls_meta_del(r->meta, setting_key(&k, "mode", "mode-subjects/", subject));
    if (st != LS_OK) return store_err(r, e, "deleting a mode", st);
    return LS_SR_OK;
}

static ls_sr_code check_writable(ls_registry_t *r, const char *subject, ls_sr_err_t *e)
{
    ls_sr_mode m;
    bool set;
    if (ls_registry_get_mode(r, subject, &m, &set, e)) return e->code;
    if (m == LS_SR_MODE_READONLY)
        return seterr(e, LS_SR_NOT_PERMITTED, "Subject %s is in read-only mode", subject);
    return LS_SR_OK;
}

static ls_sr_code check_subject(const char *subject, ls_sr_err_t *e)
{
    size_t n = strlen(subject);
    if (n == 0 || n > LS_SR_MAX_SUBJECT)
        return seterr(e, LS_SR_INVALID_SUBJECT,
                      "The specified subject is not valid: it must "
                      "hold 1 to %d bytes",
                      LS_SR_MAX_SUBJECT);
    for (size_t i = 0; i < n; i++)
        if ((uint8_t)subject[i] < 0x20 || subject[i] == 0x7f)
            return seterr(e, LS_SR_INVALID_SUBJECT,
                          "The specified subject is not valid: it holds a control character");
    if (!ls_utf8_valid((const uint8_t *)subject, n))
        return seterr(e, LS_SR_INVALID_SUBJECT, "The specified subject is not valid UTF-8");
    return LS_SR_OK;
}

static bool check_against(ls_sr_compat level, const ls_sr_schema_t *cand, ls_sr_schema_t **prev,
                          const int32_t *versions, size_t n, ls_buf_t *why);

/* ---- registration ------------------------------------------------------------------ */

/* The schemas of live versions of a subject, oldest first. */
static ls_sr_code live_schemas(ls_registry_t *r, const subject_state_t *s, ls_sr_schema_t ***out,
                               int32_t **versions, size_t *n, ls_sr_err_t *e)
{
    *out = LS_NEWN(ls_sr_schema_t *, s->n ? s->n : 1);
    *versions = LS_NEWN(int32_t, s->n ? s->n : 1);
    *n = 0;
    for (size_t i = 0; i < s->n; i++) {
        if (s->v[i].deleted) continue;
        if (ls_registry_schema(r, s->v[i].id, &(*out)[*n], e) != LS_SR_OK) {
            for (size_t k = 0; k < *n; k++)
                ls_sr_schema_release((*out)[k]);
            ls_free(*out);
            ls_free(*versions);
            return e->code;
        }
        (*versions)[(*n)++] = s->v[i].version;
    }
    return LS_SR_OK;
}

bool ls_sr_compatible(ls_sr_compat level, const ls_sr_schema_t *candidate,
                      ls_sr_schema_t *const *previous, size_t n, ls_buf_t *why)
{
    int32_t *versions = LS_NEWN(int32_t, n ? n : 1);
    for (size_t i = 0; i < n; i++)
        versions[i] = (int32_t)(i + 1);
    bool ok = check_against(level, candidate, (ls_sr_schema_t **)previous, versions, n, why);
    ls_free(versions);
    return ok;
}

static void schemas_release(ls_sr_schema_t **v, int32_t *versions, size_t n)
{
    for (size_t i = 0; i < n; i++)
        ls_sr_schema_release(v[i]);
    ls_free(v);
    ls_free(versions);
}

/* Checks cand against the live versions under level (their version
 * numbers in the reasons). */
static bool check_against(ls_sr_compat level, const ls_sr_schema_t *cand, ls_sr_schema_t **prev,
                          const int32_t *versions, size_t n, ls_buf_t *why)
{
    if (level == LS_SR_COMPAT_NONE || n == 0) return true;
    size_t first = transitive(level) ? 0 : n - 1;
    bool ok = true;
    for (size_t i = n; i-- > first;)
        ok = compatible_with(level, cand, prev[i], versions[i], why) && ok;
    return ok;
}

/* The id of a schema with cand's identity, 0 if none; the digest bucket's
 * key, revision and ids for a new id's txn. */
typedef struct digest {
    key_t_ key;
    int64_t rev;
    json_t *ids; /* array */
} digest_t;

static ls_sr_code find_id(ls_registry_t *r, const ls_sr_schema_t *cand, int32_t *id, digest_t *d,
                          ls_sr_err_t *e)
{
    *id = 0;
    kfmt(&d->key, P "digests/%016" PRIx64, identity_hash(cand));
    d->rev = 0;
    d->ids = NULL;
    ls_kv_t kv;
    ls_status st = ls_meta_get(r->meta, d->key.s, &kv);
    if (st == LS_ENOTFOUND) {
        d->ids = json_array();
        return LS_SR_OK;
    }
    if (st != LS_OK) return store_err(r, e, "reading a schema digest", st);
    d->rev = kv.mod_rev;
    d->ids = json_loadb((const char *)kv.val, kv.vlen, 0, NULL);
    ls_kv_free(&kv);
    if (!json_is_array(d->ids)) {
        json_decref(d->ids);
        d->ids = NULL;
        LS_ERROR("registry", "corrupt digest record %s", d->key.s);
        return seterr(e, LS_SR_STORE_ERROR, "Error in the backend data store: a corrupt digest");
    }
    for (size_t i = 0; i < json_array_size(d->ids); i++) {
        int32_t cid = (int32_t)json_integer_value(json_array_get(d->ids, i));
        ls_sr_schema_t *s;
        if (ls_registry_schema(r, cid, &s, e) != LS_SR_OK) {
            json_decref(d->ids);
            d->ids = NULL;
            return e->code;
        }
        bool same = same_identity(s, cand);
        ls_sr_schema_release(s);
        if (same) {
            *id = cid;
            break;
        }
    }
    return LS_SR_OK;
}

static char *record_json(const ls_sr_schema_t *s)
{
    json_t *refs = json_array();
    for (size_t i = 0; i < s->nrefs; i++)
        json_array_append_new(refs, json_pack("{s:s, s:s, s:i}", "name", s->refs[i].name, "subject",
                                              s->refs[i].subject, "version", s->refs[i].version));
    json_t *j = json_pack("{s:s, s:s, s:o}", "schemaType", TYPE_NAMES[s->type], "schema", s->text,
                          "references", refs);
    char *text = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    char *out = ls_strdup(text);
    free(text);
    return out;
}

static ls_sr_code read_counter(ls_registry_t *r, int64_t *val, int64_t *rev, ls_sr_err_t *e)
{
    ls_kv_t kv;
    ls_status st = ls_meta_get(r->meta, P "id-counter", &kv);
    *val = 0;
    *rev = 0;
    if (st == LS_ENOTFOUND) return LS_SR_OK;
    if (st != LS_OK) return store_err(r, e, "reading the schema id counter", st);
    char *end;
    *val = strtoll((const char *)kv.val, &end, 10);
    *rev = kv.mod_rev;
    bool bad = end == (const char *)kv.val || *val < 0;
    ls_kv_free(&kv);
    if (bad) {
        LS_ERROR("registry", "corrupt id counter " P "id-counter");
        return seterr(e, LS_SR_STORE_ERROR,
                      "Error in the backend data store: a corrupt id "
                      "counter");
    }
    return LS_SR_OK;
}

/* Builds the candidate from the request: parsed with its references. */
static ls_sr_code candidate(ls_registry_t *r, const ls_sr_input_t *in, bool normalize,
                            ls_sr_schema_t **out, ls_sr_err_t *e)
{
    if (!in->text || !*in->text)
        return seterr(e, LS_SR_INVALID_SCHEMA, "Invalid schema: the schema is empty");
    /* a Protobuf descriptor in binary form (what Python's serializer sends)
     * is registered as the .proto text it describes */
    char *text = NULL;
    if (in->type == LS_SR_PROTOBUF && ls_proto_is_serialized(in->text)) {
        char why[400];
        if (!(text = ls_proto_text_from_descriptor(in->text, why, sizeof why)))
            return seterr(e, LS_SR_INVALID_SCHEMA, "Invalid schema: %s", why);
    }
    ls_sr_code c =
        parse_with_refs(r, in->type, text ? text : in->text, in->refs, in->nrefs, out, e);
    ls_free(text);
    if (c != LS_SR_OK) return c;
    if (normalize) {
        ls_free((*out)->text);
        (*out)->text = ls_strdup((*out)->canon);
    }
    return LS_SR_OK;
}

ls_sr_code ls_registry_register(ls_registry_t *r, const char *subject, const ls_sr_input_t *in,
                                bool normalize, int32_t *id_out, int32_t *version_out,
                                ls_sr_err_t *e)
{
    if (check_subject(subject, e) || check_writable(r, subject, e)) return e->code;
    ls_sr_schema_t *cand;
    if (candidate(r, in, normalize, &cand, e)) return e->code;
    ls_sr_compat level;
    bool set;
    ls_sr_code c = ls_registry_get_compat(r, subject, &level, &set, e);
    txn_t *t = tx_new();
    for (int attempt = 0; c == LS_SR_OK; attempt++) {
        if ((c = attempt_start(attempt, subject, e))) break;
        subject_state_t s;
        if ((c = read_subject(r, subject, &s, e))) break;
        ls_sr_schema_t **prev;
        int32_t *pv;
        size_t np;
        if ((c = live_schemas(r, &s, &prev, &pv, &np, e))) {
            subject_state_free(&s);
            break;
        }
        /* already live under the subject: that version */
        for (size_t i = np; i-- > 0;)
            if (same_identity(prev[i], cand)) {
                for (size_t k = 0; k < s.n; k++)
                    if (s.v[k].version == pv[i]) *id_out = s.v[k].id;
                *version_out = pv[i];
                schemas_release(prev, pv, np);
                subject_state_free(&s);
                goto done;
            }
        ls_buf_t why;
        ls_buf_init(&why);
        bool ok = check_against(level, cand, prev, pv, np, &why);
        schemas_release(prev, pv, np);
        if (!ok) {
            while (why.len && why.data[why.len - 1] == '\n')
                why.len--;
            c = seterr(e, LS_SR_INCOMPATIBLE,
                       "Schema being registered is incompatible with an earlier schema for "
                       "subject \"%s\" (compatibility %s): %.*s",
                       subject, COMPAT_NAMES[level], (int)why.len, (const char *)why.data);
            ls_buf_free(&why);
            subject_state_free(&s);
            break;
        }
        ls_buf_free(&why);
        digest_t d;
        int32_t id;
        if ((c = find_id(r, cand, &id, &d, e))) {
            subject_state_free(&s);
            break;
        }
        int32_t version = s.n ? s.v[s.n - 1].version + 1 : 1;
        key_t_ k;
        char val[64];
        tx_cmp(t, ksub(&k, "heads/", subject, ""), s.head_rev);
        if (id == 0) {
            int64_t counter, crev;
            if ((c = read_counter(r, &counter, &crev, e))) {
                json_decref(d.ids);
                subject_state_free(&s);
                break;
            }
            if (counter >= INT32_MAX) {
                c = seterr(e, LS_SR_STORE_ERROR,
                           "Error in the backend data store: schema ids "
                           "are exhausted");
                json_decref(d.ids);
                subject_state_free(&s);
                break;
            }
            id = (int32_t)(counter + 1);
            tx_cmp(t, P "id-counter", crev);
            tx_cmp(t, d.key.s, d.rev);
            snprintf(val, sizeof val, "%d", id);
            tx_put(t, P "id-counter", val);
            char *rec = record_json(cand);
            tx_put(t, kfmt(&k, P "schemas/%010d", id), rec);
            ls_free(rec);
            json_array_append_new(d.ids, json_integer(id));
            char *ids = json_dumps(d.ids, JSON_COMPACT);
            tx_put(t, d.key.s, ids);
            free(ids);
            for (size_t i = 0; i < cand->nrefs; i++) {
                char suffix[48];
                snprintf(suffix, sizeof suffix, "/%010d/%010d", cand->refs[i].version, id);
                tx_put(t, ksub(&k, "refs/", cand->refs[i].subject, suffix), "");
            }
        }
        json_decref(d.ids);
        snprintf(val, sizeof val, "{\"id\":%d,\"deleted\":false}", id);
        char suffix[32];
        snprintf(suffix, sizeof suffix, "/%010d", version);
        tx_put(t, ksub(&k, "subjects/", subject, suffix), val);
        snprintf(val, sizeof val, "%d", version);
        tx_put(t, ksub(&k, "heads/", subject, ""), val);
        char usage[64];
        snprintf(usage, sizeof usage, P "usage/%010d/", id);
        ls_buf_t uk;
        ls_buf_init(&uk);
        ls_buf_printf(&uk, "%s", usage);
        enc_subject(&uk, subject);
        ls_buf_printf(&uk, "/%010d", version);
        ls_buf_append_u8(&uk, 0);
        tx_put(t, (const char *)uk.data, "");
        ls_buf_free(&uk);
        subject_state_free(&s);
        ls_status st = tx_commit(r, t, NULL);
        if (st == LS_OK) {
            *id_out = id;
            *version_out = version;
            LS_INFO("registry", "registered schema id %d as version %d of subject '%s'", id,
                    version, subject);
            goto done;
        }
        if (!commit_retryable(st)) {
            c = store_err(r, e, "registering a schema", st);
            break;
        }
    }
    tx_free(t);
    ls_sr_schema_release(cand);
    return c;
done:
    tx_free(t);
    ls_sr_schema_release(cand);
    return LS_SR_OK;
}

ls_sr_code ls_registry_lookup(ls_registry_t *r, const char *subject, const ls_sr_input_t *in,
                              bool deleted, ls_sr_version_t *out, ls_sr_err_t *e)
{
    subject_state_t s;
    if (read_subject(r, subject, &s, e)) return e->code;
    if (!(deleted ? s.n > 0 : any_live(&s))) {
        subject_state_free(&s);
        return seterr(e, LS_SR_SUBJECT_NOT_FOUND, "Subject '%s' not found.", subject);
    }
    ls_sr_schema_t *cand;
    if (candidate(r, in, false, &cand, e)) {
        subject_state_free(&s);
        return e->code;
    }
    ls_sr_code c = seterr(e, LS_SR_SCHEMA_NOT_FOUND, "Schema not found");
    for (size_t i = s.n; i-- > 0;) {
        if (s.v[i].deleted && !deleted) continue;
        ls_sr_schema_t *have;
        if (ls_registry_schema(r, s.v[i].id, &have, e)) {
            c = e->code;
            break;
        }
        bool same = same_identity(have, cand);
        ls_sr_schema_release(have);
        if (same) {
            *out = s.v[i];
            out->subject = ls_strdup(subject);
            c = LS_SR_OK;
            break;
        }
    }
    ls_sr_schema_release(cand);
    subject_state_free(&s);
    return c;
}

/* ---- reading ------------------------------------------------------------------------ */

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

ls_sr_code ls_registry_subjects(ls_registry_t *r, const char *prefix, bool deleted, char ***out,
                                size_t *n, ls_sr_err_t *e)
{
    ls_kvlist_t l;
    ls_status st = ls_meta_scan_prefix(r->meta, P "subjects/", 0, &l);
    if (st != LS_OK) return store_err(r, e, "listing subjects", st);
    *out = LS_NEWN(char *, l.n ? l.n : 1);
    *n = 0;
    size_t plen = strlen(P "subjects/");
    const char *last = NULL;
    size_t lastlen = 0;
    bool last_added = false;
    for (size_t i = 0; i < l.n; i++) {
        const char *enc = (const char *)l.v[i].key + plen;
        const char *slash = strchr(enc, '/');
        if (!slash) continue;
        size_t elen = (size_t)(slash - enc);
        bool same = last && elen == lastlen && !memcmp(enc, last, elen);
        if (same && last_added) continue;
        if (!same) {
            last = enc;
            lastlen = elen;
            last_added = false;
        }
        if (!deleted && strstr((const char *)l.v[i].val, "\"deleted\":true")) continue;
        char *sub = dec_subject(enc, elen);
        if (!sub) continue;
        if (prefix && strncmp(sub, prefix, strlen(prefix))) {
            ls_free(sub);
            continue;
        }
        (*out)[(*n)++] = sub;
        last_added = true;
    }
    ls_kvlist_free(&l);
    qsort(*out, *n, sizeof **out, cmp_str);
    return LS_SR_OK;
}

ls_sr_code ls_registry_versions(ls_registry_t *r, const char *subject, bool deleted,
                                ls_sr_version_t **out, size_t *n, ls_sr_err_t *e)
{
    subject_state_t s;
    if (read_subject(r, subject, &s, e)) return e->code;
    if (!(deleted ? s.n > 0 : any_live(&s))) {
        subject_state_free(&s);
        return seterr(e, LS_SR_SUBJECT_NOT_FOUND, "Subject '%s' not found.", subject);
    }
    *out = LS_NEWN(ls_sr_version_t, s.n ? s.n : 1);
    *n = 0;
    for (size_t i = 0; i < s.n; i++) {
        if (s.v[i].deleted && !deleted) continue;
        (*out)[*n] = s.v[i];
        (*out)[(*n)++].subject = ls_strdup(subject);
    }
    subject_state_free(&s);
    return LS_SR_OK;
}

ls_sr_code ls_registry_get_version(ls_registry_t *r, const char *subject, int32_t version,
                                   bool deleted, ls_sr_version_t *out, ls_sr_err_t *e)
{
    subject_state_t s;
    if (read_subject(r, subject, &s, e)) return e->code;
    ls_sr_code c;
    const ls_sr_version_t *v = NULL;
    if (!(deleted ? s.n > 0 : any_live(&s))) {
        c = seterr(e, LS_SR_SUBJECT_NOT_FOUND, "Subject '%s' not found.", subject);
        goto out;
    }
    if (version == -1) {
        v = deleted ? &s.v[s.n - 1] : latest_live(&s);
    } else {
        v = find_version(&s, version);
        if (v && v->deleted && !deleted) v = NULL;
    }
    if (!v) {
        c = seterr(e, LS_SR_VERSION_NOT_FOUND, "Version %d not found.", version);
        goto out;
    }
    *out = *v;
    out->subject = ls_strdup(subject);
    c = LS_SR_OK;
out:
    subject_state_free(&s);
    return c;
}

ls_sr_code ls_registry_id_versions(ls_registry_t *r, int32_t id, bool deleted,
                                   ls_sr_version_t **out, size_t *n, ls_sr_err_t *e)
{
    key_t_ k;
    ls_kvlist_t l;
    ls_status st = ls_meta_scan_prefix(r->meta, kfmt(&k, P "usage/%010d/", id), 0, &l);
    if (st != LS_OK) return store_err(r, e, "reading a schema's usage", st);
    *out = LS_NEWN(ls_sr_version_t, l.n ? l.n : 1);
    *n = 0;
    size_t plen = strlen(k.s);
    ls_sr_code c = LS_SR_OK;
    for (size_t i = 0; i < l.n && c == LS_SR_OK; i++) {
        const char *enc = (const char *)l.v[i].key + plen;
        const char *slash = strrchr(enc, '/');
        if (!slash) continue;
        char *sub = dec_subject(enc, (size_t)(slash - enc));
        if (!sub) continue;
        int32_t version = (int32_t)strtol(slash + 1, NULL, 10);
        ls_sr_version_t v;
        c = ls_registry_get_version(r, sub, version, true, &v, e);
        ls_free(sub);
        if (c == LS_SR_SUBJECT_NOT_FOUND || c == LS_SR_VERSION_NOT_FOUND) {
            c = LS_SR_OK; /* deleted meanwhile */
            continue;
        }
        if (c != LS_SR_OK) break;
        if (v.id != id || (v.deleted && !deleted)) {
            ls_free(v.subject);
            continue;
        }
        (*out)[(*n)++] = v;
    }
    ls_kvlist_free(&l);
    if (c != LS_SR_OK) {
        ls_sr_versions_free(*out, *n);
        *out = NULL;
        *n = 0;
    }
    return c;
}

ls_sr_code ls_registry_referenced_by(ls_registry_t *r, const char *subject, int32_t version,
                                     int32_t **ids, size_t *n, ls_sr_err_t *e)
{
    ls_sr_version_t v;
    if (ls_registry_get_version(r, subject, version, false, &v, e)) return e->code;
    ls_free(v.subject);
    key_t_ k;
    char suffix[32];
    snprintf(suffix, sizeof suffix, "/%010d/", v.version);
    ls_kvlist_t l;
    ls_status st = ls_meta_scan_prefix(r->meta, ksub(&k, "refs/", subject, suffix), 0, &l);
    if (st != LS_OK) return store_err(r, e, "reading references", st);
    *ids = LS_NEWN(int32_t, l.n ? l.n : 1);
    *n = 0;
    ls_sr_code c = LS_SR_OK;
    for (size_t i = 0; i < l.n; i++) {
        int32_t id = (int32_t)strtol(strrchr((const char *)l.v[i].key, '/') + 1, NULL, 10);
        ls_sr_version_t *uses;
        size_t nuses;
        if ((c = ls_registry_id_versions(r, id, false, &uses, &nuses, e))) break;
        ls_sr_versions_free(uses, nuses);
        if (nuses) (*ids)[(*n)++] = id;
    }
    ls_kvlist_free(&l);
    if (c) {
        ls_free(*ids);
        *ids = NULL;
        *n = 0;
    }
    return c;
}

static ls_sr_code refresh_watch(ls_registry_t *r);

ls_sr_code ls_registry_latest(ls_registry_t *r, const char *subject, ls_sr_version_t *version,
                              ls_sr_schema_t **schema, ls_sr_err_t *e)
{
    if (__atomic_load_n(&r->watch_lost, __ATOMIC_ACQUIRE)) refresh_watch(r);
    uint64_t gen = __atomic_load_n(&r->gen, __ATOMIC_ACQUIRE);
    bool cacheable = !__atomic_load_n(&r->watch_lost, __ATOMIC_ACQUIRE);
    bool hit = false;
    pthread_mutex_lock(&r->mu);
    for (size_t i = 0; i < r->nlatest && cacheable; i++)
        if (r->latest[i].gen == gen && !strcmp(r->latest[i].subject, subject)) {
            *version = r->latest[i].v;
            version->subject = ls_strdup(subject);
            hit = true;
            break;
        }
    pthread_mutex_unlock(&r->mu);
    if (!hit && ls_registry_get_version(r, subject, -1, false, version, e)) return e->code;
    if (ls_registry_schema(r, version->id, schema, e)) {
        ls_free(version->subject);
        return e->code;
    }
    if (hit || !cacheable) return LS_SR_OK;
    pthread_mutex_lock(&r->mu);
    latest_entry_t *slot = NULL;
    for (size_t i = 0; i < r->nlatest && !slot; i++)
        if (!strcmp(r->latest[i].subject, subject) || r->latest[i].gen != gen) slot = &r->latest[i];
    if (!slot && r->nlatest < LATEST_CACHE_MAX) {
        r->latest = ls_realloc(r->latest, (r->nlatest + 1) * sizeof *r->latest);
        slot = &r->latest[r->nlatest++];
        slot->subject = NULL;
    }
    if (slot) {
        ls_free(slot->subject);
        slot->subject = ls_strdup(subject);
        slot->gen = gen;
        slot->v = *version;
        slot->v.subject = NULL;
    }
    pthread_mutex_unlock(&r->mu);
    return LS_SR_OK;
}

/* ---- deletion --------------------------------------------------------------------- */

/* Whether a live schema other than the version's own references it. */
static ls_sr_code referenced(ls_registry_t *r, const char *subject, int32_t version, bool *yes,
                             ls_sr_err_t *e)
{
    int32_t *ids;
    size_t n;
    *yes = false;
    ls_sr_code c = ls_registry_referenced_by(r, subject, version, &ids, &n, e);
    if (c == LS_SR_VERSION_NOT_FOUND || c == LS_SR_SUBJECT_NOT_FOUND) return LS_SR_OK;
    if (c) return c;
    *yes = n > 0;
    ls_free(ids);
    return LS_SR_OK;
}

static void put_usage_key(ls_buf_t *b, int32_t id, const char *subject, int32_t version)
{
    b->len = 0;
    ls_buf_printf(b, P "usage/%010d/", id);
    enc_subject(b, subject);
    ls_buf_printf(b, "/%010d", version);
    ls_buf_append_u8(b, 0);
}

ls_sr_code ls_registry_delete_subject(ls_registry_t *r, const char *subject, bool permanent,
                                      int32_t **versions, size_t *nv, ls_sr_err_t *e)
{
    if (check_writable(r, subject, e)) return e->code;
    txn_t *t = tx_new();
    ls_sr_code c = LS_SR_OK;
    *versions = NULL;
    *nv = 0;
    for (int attempt = 0;; attempt++) {
        if ((c = attempt_start(attempt, subject, e))) break;
        subject_state_t s;
        if ((c = read_subject(r, subject, &s, e))) break;
        bool live = any_live(&s);
        if (s.n == 0) {
            c = seterr(e, LS_SR_SUBJECT_NOT_FOUND, "Subject '%s' not found.", subject);
        } else if (!permanent && !live) {
            c = seterr(e, LS_SR_SUBJECT_SOFT_DELETED,
                       "Subject '%s' was soft deleted.Set permanent=true to delete permanently",
                       subject);
        } else if (permanent && live) {
            c = seterr(e, LS_SR_SUBJECT_NOT_SOFT_DELETED,
                       "Subject '%s' was not deleted first before being permanently deleted",
                       subject);
        }
        for (size_t i = 0; i < s.n && c == LS_SR_OK && !permanent; i++) {
            bool yes;
            if (s.v[i].deleted) continue;
            if ((c = referenced(r, subject, s.v[i].version, &yes, e))) break;
            if (yes)
                c = seterr(e, LS_SR_REFERENCE_EXISTS,
                           "One or more references exist to the schema {subject=%s, version=%d}",
                           subject, s.v[i].version);
        }
        if (c) {
            subject_state_free(&s);
            break;
        }
        ls_free(*versions);
        *versions = LS_NEWN(int32_t, s.n);
        *nv = 0;
        /* in chunks that fit a txn; each compares and rewrites the head,
         * so a chunk lost to a concurrent change restarts from the reads */
        int64_t head_rev = s.head_rev;
        ls_status st = LS_OK;
        key_t_ k;
        ls_buf_t uk;
        ls_buf_init(&uk);
        for (size_t i = 0; i < s.n && st == LS_OK;) {
            tx_cmp(t, ksub(&k, "heads/", subject, ""), head_rev);
            size_t chunk = TXN_CHUNK;
            int max_ops = ls_meta_max_txn_ops(r->meta);
            if ((size_t)max_ops < 2 * chunk + 8)
                chunk = max_ops > 10 ? (size_t)(max_ops - 8) / 2 : 1;
            size_t end = i + chunk < s.n ? i + chunk : s.n;
            bool last = end == s.n;
            for (; i < end; i++) {
                char suffix[32];
                snprintf(suffix, sizeof suffix, "/%010d", s.v[i].version);
                const char *vk = ksub(&k, "subjects/", subject, suffix);
                if (permanent) {
                    tx_del(t, vk);
                    put_usage_key(&uk, s.v[i].id, subject, s.v[i].version);
                    tx_del(t, (const char *)uk.data);
                    (*versions)[(*nv)++] = s.v[i].version;
                } else if (!s.v[i].deleted) {
                    char val[64];
                    snprintf(val, sizeof val, "{\"id\":%d,\"deleted\":true}", s.v[i].id);
                    tx_put(t, vk, val);
                    (*versions)[(*nv)++] = s.v[i].version;
                }
            }
            if (permanent && last) {
                tx_del(t, ksub(&k, "heads/", subject, ""));
                tx_del(t, ksub(&k, "config-subjects/", subject, ""));
                tx_del(t, ksub(&k, "mode-subjects/", subject, ""));
            } else {
                tx_put(t, ksub(&k, "heads/", subject, ""), "0");
            }
            int64_t rev = 0;
            st = tx_commit(r, t, &rev);
            head_rev = rev;
        }
        ls_buf_free(&uk);
        subject_state_free(&s);
        if (st == LS_OK) {
            LS_INFO("registry", "%s deleted subject '%s' (%zu versions)",
                    permanent ? "permanently" : "soft", subject, *nv);
            break;
        }
        if (!commit_retryable(st)) {
            c = store_err(r, e, "deleting a subject", st);
            break;
        }
    }
    tx_free(t);
    if (c) {
        ls_free(*versions);
        *versions = NULL;
        *nv = 0;
    }
    return c;
}

ls_sr_code ls_registry_delete_version(ls_registry_t *r, const char *subject, int32_t version,
                                      bool permanent, int32_t *deleted_version, ls_sr_err_t *e)
{
    if (check_writable(r, subject, e)) return e->code;
    txn_t *t = tx_new();
    ls_sr_code c = LS_SR_OK;
    for (int attempt = 0;; attempt++) {
        if ((c = attempt_start(attempt, subject, e))) break;
        subject_state_t s;
        if ((c = read_subject(r, subject, &s, e))) break;
        const ls_sr_version_t *v = NULL;
        if (s.n == 0) {
            c = seterr(e, LS_SR_SUBJECT_NOT_FOUND, "Subject '%s' not found.", subject);
        } else if (version == -1) {
            v = permanent ? &s.v[s.n - 1] : latest_live(&s);
            if (!v) c = seterr(e, LS_SR_SUBJECT_NOT_FOUND, "Subject '%s' not found.", subject);
        } else if (!(v = find_version(&s, version))) {
            c = seterr(e, LS_SR_VERSION_NOT_FOUND, "Version %d not found.", version);
        }
        if (c == LS_SR_OK && !permanent && v->deleted)
            c = seterr(e, LS_SR_VERSION_SOFT_DELETED,
                       "Subject '%s' Version %d was soft deleted.Set permanent=true to delete "
                       "permanently",
                       subject, v->version);
        if (c == LS_SR_OK && permanent && !v->deleted)
            c = seterr(e, LS_SR_VERSION_NOT_SOFT_DELETED,
                       "Subject '%s' Version %d was not deleted first before being permanently "
                       "deleted",
                       subject, v->version);
        bool yes = false;
        if (c == LS_SR_OK && !permanent && !(c = referenced(r, subject, v->version, &yes, e)) &&
            yes)
            c = seterr(e, LS_SR_REFERENCE_EXISTS,
                       "One or more references exist to the schema {subject=%s, version=%d}",
                       subject, v->version);
        if (c) {
            subject_state_free(&s);
            break;
        }
        key_t_ k;
        char suffix[32];
        snprintf(suffix, sizeof suffix, "/%010d", v->version);
        tx_cmp(t, ksub(&k, "heads/", subject, ""), s.head_rev);
        const char *vk = ksub(&k, "subjects/", subject, suffix);
        bool last_one = permanent && s.n == 1;
        if (permanent) {
            tx_del(t, vk);
            ls_buf_t uk;
            ls_buf_init(&uk);
            put_usage_key(&uk, v->id, subject, v->version);
            tx_del(t, (const char *)uk.data);
            ls_buf_free(&uk);
        } else {
            char val[64];
            snprintf(val, sizeof val, "{\"id\":%d,\"deleted\":true}", v->id);
            tx_put(t, vk, val);
        }
        if (last_one)
            tx_del(t, ksub(&k, "heads/", subject, ""));
        else
            tx_put(t, ksub(&k, "heads/", subject, ""), "0");
        *deleted_version = v->version;
        subject_state_free(&s);
        ls_status st = tx_commit(r, t, NULL);
        if (st == LS_OK) break;
        if (!commit_retryable(st)) {
            c = store_err(r, e, "deleting a version", st);
            break;
        }
    }
    tx_free(t);
    return c;
}

/* ---- compatibility tests ------------------------------------------------------------ */

ls_sr_code ls_registry_test_compat(ls_registry_t *r, const char *subject, int32_t version,
                                   const ls_sr_input_t *in, bool *compatible, ls_buf_t *why,
                                   ls_sr_err_t *e)
{
    ls_sr_compat level;
    bool set;
    if (ls_registry_get_compat(r, subject, &level, &set, e)) return e->code;
    ls_sr_schema_t *cand;
    if (candidate(r, in, false, &cand, e)) return e->code;
    subject_state_t s;
    ls_sr_code c = read_subject(r, subject, &s, e);
    *compatible = true;
    if (c == LS_SR_OK && version == 0) {
        ls_sr_schema_t **prev;
        int32_t *pv;
        size_t np;
        if (!(c = live_schemas(r, &s, &prev, &pv, &np, e))) {
            *compatible = check_against(level, cand, prev, pv, np, why);
            schemas_release(prev, pv, np);
        }
    } else if (c == LS_SR_OK) {
        const ls_sr_version_t *v = version == -1 ? latest_live(&s) : find_version(&s, version);
        if (v && v->deleted) v = NULL;
        if (!any_live(&s) && version != -1)
            c = seterr(e, LS_SR_SUBJECT_NOT_FOUND, "Subject '%s' not found.", subject);
        else if (!v && version != -1)
            c = seterr(e, LS_SR_VERSION_NOT_FOUND, "Version %d not found.", version);
        if (c == LS_SR_OK && v) {
            ls_sr_schema_t *prev;
            if (!(c = ls_registry_schema(r, v->id, &prev, e))) {
                /* against one version: the level's direction, not its history */
                ls_sr_compat one = level == LS_SR_COMPAT_BACKWARD_TRANSITIVE ? LS_SR_COMPAT_BACKWARD
                                   : level == LS_SR_COMPAT_FORWARD_TRANSITIVE ? LS_SR_COMPAT_FORWARD
                                   : level == LS_SR_COMPAT_FULL_TRANSITIVE    ? LS_SR_COMPAT_FULL
                                                                              : level;
                *compatible =
                    one == LS_SR_COMPAT_NONE || compatible_with(one, cand, prev, v->version, why);
                ls_sr_schema_release(prev);
            }
        }
    }
    subject_state_free(&s);
    ls_sr_schema_release(cand);
    return c;
}

/* ---- lifecycle ---------------------------------------------------------------------- */

static void on_change(void *arg, const ls_meta_event_t *ev, size_t n)
{
    ls_registry_t *r = arg;
    if (!ev) __atomic_store_n(&r->watch_lost, 1, __ATOMIC_RELEASE);
    __atomic_add_fetch(&r->gen, 1, __ATOMIC_ACQ_REL);
}

static ls_sr_code refresh_watch(ls_registry_t *r)
{
    pthread_mutex_lock(&r->mu);
    if (r->watch) ls_meta_watch_cancel(r->meta, r->watch);
    r->watch = NULL;
    ls_status st = ls_meta_watch(r->meta, P, strlen(P), 0, on_change, r, &r->watch);
    if (st == LS_OK)
        __atomic_store_n(&r->watch_lost, 0, __ATOMIC_RELEASE);
    else
        r->watch = NULL;
    __atomic_add_fetch(&r->gen, 1, __ATOMIC_ACQ_REL);
    pthread_mutex_unlock(&r->mu);
    if (st != LS_OK)
        LS_WARN_RL("registry",
                   "cannot watch the registry's keys (%s): latest versions are read "
                   "from the store on every call until it works",
                   ls_status_str(st));
    return st == LS_OK ? LS_SR_OK : LS_SR_STORE_ERROR;
}

ls_registry_t *ls_registry_new(ls_meta_t *meta)
{
    ls_registry_t *r = LS_NEW(ls_registry_t);
    r->meta = meta;
    pthread_mutex_init(&r->mu, NULL);
    ls_i64map_init(&r->schemas);
    r->watch_lost = 1;
    refresh_watch(r);
    return r;
}

void ls_registry_free(ls_registry_t *r)
{
    if (!r) return;
    if (r->watch) ls_meta_watch_cancel(r->meta, r->watch);
    int64_t k;
    void *v;
    for (size_t it = 0; ls_i64map_next(&r->schemas, &it, &k, &v);)
        ls_sr_schema_release(v);
    ls_i64map_free(&r->schemas);
    for (size_t i = 0; i < r->nlatest; i++)
        ls_free(r->latest[i].subject);
    ls_free(r->latest);
    pthread_mutex_destroy(&r->mu);
    ls_free(r);
}
