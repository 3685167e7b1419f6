/* The registry's store I/O over ls_meta: the keys (percent-encoded
 * subjects under LS_KEY_REGISTRY; layout in registry.h), the txn builder every write
 * commits through, the retry loop's pacing, and the reads each operation
 * starts from (a subject's versions and head, a schema's record, the texts
 * of its references).
 *
 * Writes are optimistic: read what the decision needs (the subject's head
 * first, then its versions; the id counter and digest bucket when a new id
 * is needed), decide, then commit one txn comparing every key read. A lost
 * compare (another broker, another thread) retries from the reads; an
 * answer lost on the way back (LS_EIO) retries too, and the retry finds the
 * version it may have written already (registration is idempotent). A
 * committed txn bumps the latest-version cache's generation at once. */
#include "registry/registry_int.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/diag.h"
#include "meta/meta_keys.h"

#define MAX_ATTEMPTS 64
#define MAX_REF_DEPTH 16

/* ---- keys ------------------------------------------------------------------- */

const char *ls_sr_kfmt(key_t_ *k, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(k->s, sizeof k->s, fmt, ap);
    va_end(ap);
    return k->s;
}

/* LS_KEY_REGISTRY<what><encoded subject><suffix> */
const char *ls_sr_ksub(key_t_ *k, const char *what, const char *subject, const char *suffix)
{
    ls_buf_t b;
    ls_buf_init(&b);
    ls_buf_printf(&b, LS_KEY_REGISTRY "%s", what);
    ls_buf_append_keypart(&b, subject);
    ls_buf_printf(&b, "%s", suffix);
    snprintf(k->s, sizeof k->s, "%.*s", (int)b.len, (const char *)b.data);
    ls_buf_free(&b);
    return k->s;
}

const char *ls_sr_kusage(key_t_ *k, int32_t id, const char *subject, int32_t version)
{
    char what[32], suffix[16];
    snprintf(what, sizeof what, "usage/%010d/", id);
    snprintf(suffix, sizeof suffix, "/%010d", version);
    return ls_sr_ksub(k, what, subject, suffix);
}

/* ---- txn builder --------------------------------------------------------------- */

static const char *tx_own(txn_t *t, char *s)
{
    t->owned[t->nowned++] = s;
    return s;
}

void ls_sr_tx_cmp(txn_t *t, const char *key, int64_t rev)
{
    const char *k = tx_own(t, ls_strdup(key));
    t->cmps[t->ncmp++] =
        (ls_meta_cmp_t){.kind = LS_META_CMP_MOD_REV, .key = k, .klen = strlen(k), .rev = rev};
}

void ls_sr_tx_put(txn_t *t, const char *key, const char *val)
{
    const char *k = tx_own(t, ls_strdup(key));
    const char *v = tx_own(t, ls_strdup(val));
    t->ops[t->nops++] = (ls_meta_op_t){
        .kind = LS_META_OP_PUT, .key = k, .klen = strlen(k), .val = v, .vlen = strlen(v)};
}

void ls_sr_tx_del(txn_t *t, const char *key)
{
    const char *k = tx_own(t, ls_strdup(key));
    t->ops[t->nops++] = (ls_meta_op_t){.kind = LS_META_OP_DEL, .key = k, .klen = strlen(k)};
}

ls_status ls_sr_tx_commit(ls_registry_t *r, txn_t *t, int64_t *rev)
{
    ls_status st = ls_meta_txn(r->meta, t->cmps, t->ncmp, t->ops, t->nops, rev);
    for (size_t i = 0; i < t->nowned; i++)
        ls_free(t->owned[i]);
    t->nowned = t->ncmp = t->nops = 0;
    if (st == LS_OK) __atomic_add_fetch(&r->gen, 1, __ATOMIC_ACQ_REL);
    return st;
}

txn_t *ls_sr_tx_new(void) { return LS_NEW(txn_t); }

void ls_sr_tx_free(txn_t *t)
{
    for (size_t i = 0; i < t->nowned; i++)
        ls_free(t->owned[i]);
    ls_free(t);
}

/* The start of optimistic attempt number `attempt` on a subject: after the
 * first, a little backoff, growing; past MAX_ATTEMPTS the store error the
 * caller answers. */
ls_sr_code ls_sr_attempt_start(int attempt, const char *subject, ls_sr_err_t *e)
{
    if (attempt == MAX_ATTEMPTS)
        return ls_sr_seterr(e, LS_SR_STORE_ERROR,
                            "Error in the backend data store: too much contention on subject '%s'",
                            subject);
    if (attempt) usleep((useconds_t)(1000 * (attempt < 10 ? attempt + 1 : 10)));
    return LS_SR_OK;
}

/* Whether a failed commit is worth another attempt from fresh reads. */
bool ls_sr_commit_retryable(ls_status st)
{
    return st == LS_ECONFLICT || st == LS_EIO || st == LS_EAGAIN;
}

/* ---- store reads ---------------------------------------------------------------- */

void ls_sr_subject_state_free(subject_state_t *s)
{
    ls_sr_versions_free(s->v, s->n);
    memset(s, 0, sizeof *s);
}

ls_sr_code ls_sr_read_subject(ls_registry_t *r, const char *subject, subject_state_t *out,
                              ls_sr_err_t *e)
{
    memset(out, 0, sizeof *out);
    key_t_ k;
    ls_kv_t kv;
    ls_status st = ls_meta_get(r->meta, ls_sr_ksub(&k, "heads/", subject, ""), &kv);
    if (st == LS_OK) {
        out->head_rev = kv.mod_rev;
        ls_kv_free(&kv);
    } else if (st != LS_ENOTFOUND) {
        return ls_sr_store_err(r, e, "reading a subject head", st);
    }
    ls_kvlist_t l;
    st = ls_meta_scan_prefix(r->meta, ls_sr_ksub(&k, "subjects/", subject, "/"), 0, &l);
    if (st != LS_OK) return ls_sr_store_err(r, e, "reading a subject's versions", st);
    out->v = LS_NEWN(ls_sr_version_t, l.n ? l.n : 1);
    for (size_t i = 0; i < l.n; i++) {
        const char *slash = strrchr((const char *)l.v[i].key, '/');
        json_t *j = json_loadb((const char *)l.v[i].val, l.v[i].vlen, 0, NULL);
        json_t *id = json_object_get(j, "id");
        if (!slash || !json_is_integer(id)) {
            json_decref(j);
            ls_kvlist_free(&l);
            ls_sr_subject_state_free(out);
            LS_ERROR("registry", "corrupt version record at %s", (const char *)l.v[i].key);
            return ls_sr_seterr(e, LS_SR_STORE_ERROR,
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

const ls_sr_version_t *ls_sr_latest_live(const subject_state_t *s)
{
    for (size_t i = s->n; i-- > 0;)
        if (!s->v[i].deleted) return &s->v[i];
    return NULL;
}

bool ls_sr_any_live(const subject_state_t *s) { return ls_sr_latest_live(s) != NULL; }

const ls_sr_version_t *ls_sr_find_version(const subject_state_t *s, int32_t version)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->v[i].version == version) return &s->v[i];
    return NULL;
}

void ls_sr_record_free(record_t *rec)
{
    ls_free(rec->text);
    ls_sr_refs_free(rec->refs, rec->nrefs);
    memset(rec, 0, sizeof *rec);
}

ls_sr_code ls_sr_read_record(ls_registry_t *r, int32_t id, record_t *out, ls_sr_err_t *e)
{
    memset(out, 0, sizeof *out);
    key_t_ k;
    ls_kv_t kv;
    ls_status st = ls_meta_get(r->meta, ls_sr_kfmt(&k, LS_KEY_REGISTRY "schemas/%010d", id), &kv);
    if (st == LS_ENOTFOUND)
        return ls_sr_seterr(e, LS_SR_SCHEMA_NOT_FOUND, "Schema %d not found", id);
    if (st != LS_OK) return ls_sr_store_err(r, e, "reading a schema", st);
    json_t *j = json_loadb((const char *)kv.val, kv.vlen, 0, NULL);
    ls_kv_free(&kv);
    json_t *type = json_object_get(j, "schemaType"), *text = json_object_get(j, "schema");
    json_t *refs = json_object_get(j, "references");
    if (!json_is_string(type) || ls_sr_type_parse(json_string_value(type), &out->type) ||
        !json_is_string(text) || !json_is_array(refs)) {
        json_decref(j);
        LS_ERROR("registry", "corrupt schema record %s", k.s);
        return ls_sr_seterr(e, LS_SR_STORE_ERROR,
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
        return ls_sr_seterr(e, LS_SR_INVALID_SCHEMA,
                            "Invalid schema: references nested deeper than %d levels",
                            MAX_REF_DEPTH);
    for (size_t i = 0; i < nrefs; i++) {
        const ls_sr_ref_t *rf = &refs[i];
        if (!rf->name || !*rf->name || !rf->subject || !*rf->subject)
            return ls_sr_seterr(e, LS_SR_INVALID_SCHEMA,
                                "Invalid schema: reference %zu needs a name and a subject", i + 1);
        ls_sr_version_t v;
        ls_sr_err_t inner;
        if (ls_registry_get_version(r, rf->subject, rf->version, false, &v, &inner) != LS_SR_OK) {
            if (inner.code == LS_SR_STORE_ERROR) {
                *e = inner;
                return e->code;
            }
            return ls_sr_seterr(e, LS_SR_INVALID_SCHEMA,
                                "Invalid schema: reference '%s' (subject '%s', version %d): %s",
                                rf->name, rf->subject, rf->version, inner.message);
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
        if (ls_sr_read_record(r, v.id, &rec, e) != LS_SR_OK) return e->code;
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
        ls_sr_record_free(&rec);
        if (c != LS_SR_OK) return c;
    }
    return LS_SR_OK;
}

/* Parses a schema and its references' texts from the store. */
ls_sr_code ls_sr_parse_with_refs(ls_registry_t *r, ls_sr_type type, const char *text,
                                 const ls_sr_ref_t *refs, size_t nrefs, ls_sr_schema_t **out,
                                 ls_sr_err_t *e)
{
    if (nrefs > LS_SR_MAX_REFERENCES)
        return ls_sr_seterr(e, LS_SR_INVALID_SCHEMA, "Invalid schema: more than %d references",
                            LS_SR_MAX_REFERENCES);
    for (size_t i = 0; i < nrefs; i++)
        for (size_t k = 0; k < i; k++)
            if (refs[i].name && refs[k].name && !strcmp(refs[i].name, refs[k].name))
                return ls_sr_seterr(e, LS_SR_INVALID_SCHEMA,
                                    "Invalid schema: reference name '%s' appears twice",
                                    refs[i].name);
    deps_t d = {0};
    ls_sr_ref_t *resolved = LS_NEWN(ls_sr_ref_t, nrefs ? nrefs : 1);
    ls_sr_code c = collect_deps(r, refs, nrefs, resolved, &d, 0, e);
    if (c == LS_SR_OK)
        c = ls_sr_parse(type, text, resolved, nrefs, (const char *const *)d.names,
                        (const char *const *)d.texts, d.n, out, e);
    ls_sr_refs_free(resolved, nrefs);
    deps_free(&d);
    return c;
}
