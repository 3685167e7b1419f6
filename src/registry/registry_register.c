/* Registration and the checks around it: a subject's name, the candidate
 * schema built from a request (parsed with its references), its id (an
 * existing one with the same identity, else the counter's next), the
 * compatibility check against the subject's live versions, lookups of a
 * schema under a subject, and compatibility tests that register nothing.
 * A registration is one txn comparing the subject's head and, for a new id,
 * the id counter and the digest bucket, so the check it made still holds
 * when it commits (registry.h, registry_store.c). */
#include "registry/registry_int.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/diag.h"
#include "base/utf8.h"
#include "meta/meta_keys.h"

static ls_sr_code check_subject(const char *subject, ls_sr_err_t *e)
{
    size_t n = strlen(subject);
    if (n == 0 || n > LS_SR_MAX_SUBJECT)
        return ls_sr_seterr(e, LS_SR_INVALID_SUBJECT,
                            "The specified subject is not valid: it must "
                            "hold 1 to %d bytes",
                            LS_SR_MAX_SUBJECT);
    for (size_t i = 0; i < n; i++)
        if ((uint8_t)subject[i] < 0x20 || subject[i] == 0x7f)
            return ls_sr_seterr(e, LS_SR_INVALID_SUBJECT,
                                "The specified subject is not valid: it holds a control character");
    if (!ls_utf8_valid((const uint8_t *)subject, n))
        return ls_sr_seterr(e, LS_SR_INVALID_SUBJECT, "The specified subject is not valid UTF-8");
    return LS_SR_OK;
}

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

static void schemas_release(ls_sr_schema_t **v, int32_t *versions, size_t n)
{
    for (size_t i = 0; i < n; i++)
        ls_sr_schema_release(v[i]);
    ls_free(v);
    ls_free(versions);
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
    ls_sr_kfmt(&d->key, LS_KEY_REGISTRY "digests/%016" PRIx64, ls_sr_identity_hash(cand));
    d->rev = 0;
    d->ids = NULL;
    ls_kv_t kv;
    ls_status st = ls_meta_get(r->meta, d->key.s, &kv);
    if (st == LS_ENOTFOUND) {
        d->ids = json_array();
        return LS_SR_OK;
    }
    if (st != LS_OK) return ls_sr_store_err(r, e, "reading a schema digest", st);
    d->rev = kv.mod_rev;
    d->ids = json_loadb((const char *)kv.val, kv.vlen, 0, NULL);
    ls_kv_free(&kv);
    if (!json_is_array(d->ids)) {
        json_decref(d->ids);
        d->ids = NULL;
        LS_ERROR("registry", "corrupt digest record %s", d->key.s);
        return ls_sr_seterr(e, LS_SR_STORE_ERROR,
                            "Error in the backend data store: a corrupt digest");
    }
    for (size_t i = 0; i < json_array_size(d->ids); i++) {
        int32_t cid = (int32_t)json_integer_value(json_array_get(d->ids, i));
        ls_sr_schema_t *s;
        if (ls_registry_schema(r, cid, &s, e) != LS_SR_OK) {
            json_decref(d->ids);
            d->ids = NULL;
            return e->code;
        }
        bool same = ls_sr_same_identity(s, cand);
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
    json_t *j = json_pack("{s:s, s:s, s:o}", "schemaType", ls_sr_type_name(s->type), "schema",
                          s->text, "references", refs);
    char *text = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    char *out = ls_strdup(text);
    free(text);
    return out;
}

static ls_sr_code read_counter(ls_registry_t *r, int64_t *val, int64_t *rev, ls_sr_err_t *e)
{
    ls_kv_t kv;
    ls_status st = ls_meta_get(r->meta, LS_KEY_REGISTRY "id-counter", &kv);
    *val = 0;
    *rev = 0;
    if (st == LS_ENOTFOUND) return LS_SR_OK;
    if (st != LS_OK) return ls_sr_store_err(r, e, "reading the schema id counter", st);
    char *end;
    *val = strtoll((const char *)kv.val, &end, 10);
    *rev = kv.mod_rev;
    bool bad = end == (const char *)kv.val || *val < 0;
    ls_kv_free(&kv);
    if (bad) {
        LS_ERROR("registry", "corrupt id counter " LS_KEY_REGISTRY "id-counter");
        return ls_sr_seterr(e, LS_SR_STORE_ERROR,
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
        return ls_sr_seterr(e, LS_SR_INVALID_SCHEMA, "Invalid schema: the schema is empty");
    /* a Protobuf descriptor in binary form (what Python's serializer sends)
     * is registered as the .proto text it describes */
    char *text = NULL;
    if (in->type == LS_SR_PROTOBUF && ls_proto_is_serialized(in->text)) {
        char why[400];
        if (!(text = ls_proto_text_from_descriptor(in->text, why, sizeof why)))
            return ls_sr_seterr(e, LS_SR_INVALID_SCHEMA, "Invalid schema: %s", why);
    }
    ls_sr_code c =
        ls_sr_parse_with_refs(r, in->type, text ? text : in->text, in->refs, in->nrefs, out, e);
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
    if (check_subject(subject, e) || ls_sr_check_writable(r, subject, e)) return e->code;
    ls_sr_schema_t *cand;
    if (candidate(r, in, normalize, &cand, e)) return e->code;
    ls_sr_compat level;
    bool set;
    ls_sr_code c = ls_registry_get_compat(r, subject, &level, &set, e);
    txn_t *t = ls_sr_tx_new();
    for (int attempt = 0; c == LS_SR_OK; attempt++) {
        if ((c = ls_sr_attempt_start(attempt, subject, e))) break;
        subject_state_t s;
        if ((c = ls_sr_read_subject(r, subject, &s, e))) break;
        ls_sr_schema_t **prev;
        int32_t *pv;
        size_t np;
        if ((c = live_schemas(r, &s, &prev, &pv, &np, e))) {
            ls_sr_subject_state_free(&s);
            break;
        }
        /* already live under the subject: that version */
        for (size_t i = np; i-- > 0;)
            if (ls_sr_same_identity(prev[i], cand)) {
                for (size_t k = 0; k < s.n; k++)
                    if (s.v[k].version == pv[i]) *id_out = s.v[k].id;
                *version_out = pv[i];
                schemas_release(prev, pv, np);
                ls_sr_subject_state_free(&s);
                goto done;
            }
        ls_buf_t why;
        ls_buf_init(&why);
        bool ok = ls_sr_check_against(level, cand, prev, pv, np, &why);
        schemas_release(prev, pv, np);
        if (!ok) {
            while (why.len && why.data[why.len - 1] == '\n')
                why.len--;
            c = ls_sr_seterr(e, LS_SR_INCOMPATIBLE,
                             "Schema being registered is incompatible with an earlier schema for "
                             "subject \"%s\" (compatibility %s): %.*s",
                             subject, ls_sr_compat_name(level), (int)why.len,
                             (const char *)why.data);
            ls_buf_free(&why);
            ls_sr_subject_state_free(&s);
            break;
        }
        ls_buf_free(&why);
        digest_t d;
        int32_t id;
        if ((c = find_id(r, cand, &id, &d, e))) {
            ls_sr_subject_state_free(&s);
            break;
        }
        int32_t version = s.n ? s.v[s.n - 1].version + 1 : 1;
        key_t_ k;
        char val[64];
        ls_sr_tx_cmp(t, ls_sr_ksub(&k, "heads/", subject, ""), s.head_rev);
        if (id == 0) {
            int64_t counter, crev;
            if ((c = read_counter(r, &counter, &crev, e))) {
                json_decref(d.ids);
                ls_sr_subject_state_free(&s);
                break;
            }
            if (counter >= INT32_MAX) {
                c = ls_sr_seterr(e, LS_SR_STORE_ERROR,
                                 "Error in the backend data store: schema ids "
                                 "are exhausted");
                json_decref(d.ids);
                ls_sr_subject_state_free(&s);
                break;
            }
            id = (int32_t)(counter + 1);
            ls_sr_tx_cmp(t, LS_KEY_REGISTRY "id-counter", crev);
            ls_sr_tx_cmp(t, d.key.s, d.rev);
            snprintf(val, sizeof val, "%d", id);
            ls_sr_tx_put(t, LS_KEY_REGISTRY "id-counter", val);
            char *rec = record_json(cand);
            ls_sr_tx_put(t, ls_sr_kfmt(&k, LS_KEY_REGISTRY "schemas/%010d", id), rec);
            ls_free(rec);
            json_array_append_new(d.ids, json_integer(id));
            char *ids = json_dumps(d.ids, JSON_COMPACT);
            ls_sr_tx_put(t, d.key.s, ids);
            free(ids);
            for (size_t i = 0; i < cand->nrefs; i++) {
                char suffix[48];
                snprintf(suffix, sizeof suffix, "/%010d/%010d", cand->refs[i].version, id);
                ls_sr_tx_put(t, ls_sr_ksub(&k, "refs/", cand->refs[i].subject, suffix), "");
            }
        }
        json_decref(d.ids);
        snprintf(val, sizeof val, "{\"id\":%d,\"deleted\":false}", id);
        char suffix[32];
        snprintf(suffix, sizeof suffix, "/%010d", version);
        ls_sr_tx_put(t, ls_sr_ksub(&k, "subjects/", subject, suffix), val);
        snprintf(val, sizeof val, "%d", version);
        ls_sr_tx_put(t, ls_sr_ksub(&k, "heads/", subject, ""), val);
        ls_sr_tx_put(t, ls_sr_kusage(&k, id, subject, version), "");
        ls_sr_subject_state_free(&s);
        ls_status st = ls_sr_tx_commit(r, t, NULL);
        if (st == LS_OK) {
            *id_out = id;
            *version_out = version;
            LS_INFO("registry", "registered schema id %d as version %d of subject '%s'", id,
                    version, subject);
            goto done;
        }
        if (!ls_sr_commit_retryable(st)) {
            c = ls_sr_store_err(r, e, "registering a schema", st);
            break;
        }
    }
    ls_sr_tx_free(t);
    ls_sr_schema_release(cand);
    return c;
done:
    ls_sr_tx_free(t);
    ls_sr_schema_release(cand);
    return LS_SR_OK;
}

ls_sr_code ls_registry_lookup(ls_registry_t *r, const char *subject, const ls_sr_input_t *in,
                              bool deleted, ls_sr_version_t *out, ls_sr_err_t *e)
{
    subject_state_t s;
    if (ls_sr_read_subject(r, subject, &s, e)) return e->code;
    if (!(deleted ? s.n > 0 : ls_sr_any_live(&s))) {
        ls_sr_subject_state_free(&s);
        return ls_sr_seterr(e, LS_SR_SUBJECT_NOT_FOUND, "Subject '%s' not found.", subject);
    }
    ls_sr_schema_t *cand;
    if (candidate(r, in, false, &cand, e)) {
        ls_sr_subject_state_free(&s);
        return e->code;
    }
    ls_sr_code c = ls_sr_seterr(e, LS_SR_SCHEMA_NOT_FOUND, "Schema not found");
    for (size_t i = s.n; i-- > 0;) {
        if (s.v[i].deleted && !deleted) continue;
        ls_sr_schema_t *have;
        if (ls_registry_schema(r, s.v[i].id, &have, e)) {
            c = e->code;
            break;
        }
        bool same = ls_sr_same_identity(have, cand);
        ls_sr_schema_release(have);
        if (same) {
            *out = s.v[i];
            out->subject = ls_strdup(subject);
            c = LS_SR_OK;
            break;
        }
    }
    ls_sr_schema_release(cand);
    ls_sr_subject_state_free(&s);
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
    ls_sr_code c = ls_sr_read_subject(r, subject, &s, e);
    *compatible = true;
    if (c == LS_SR_OK && version == 0) {
        ls_sr_schema_t **prev;
        int32_t *pv;
        size_t np;
        if (!(c = live_schemas(r, &s, &prev, &pv, &np, e))) {
            *compatible = ls_sr_check_against(level, cand, prev, pv, np, why);
            schemas_release(prev, pv, np);
        }
    } else if (c == LS_SR_OK) {
        const ls_sr_version_t *v =
            version == -1 ? ls_sr_latest_live(&s) : ls_sr_find_version(&s, version);
        if (v && v->deleted) v = NULL;
        if (!ls_sr_any_live(&s) && version != -1)
            c = ls_sr_seterr(e, LS_SR_SUBJECT_NOT_FOUND, "Subject '%s' not found.", subject);
        else if (!v && version != -1)
            c = ls_sr_seterr(e, LS_SR_VERSION_NOT_FOUND, "Version %d not found.", version);
        if (c == LS_SR_OK && v) {
            ls_sr_schema_t *prev;
            if (!(c = ls_registry_schema(r, v->id, &prev, e))) {
                /* against one version: the level's direction, not its history */
                ls_sr_compat one = level == LS_SR_COMPAT_BACKWARD_TRANSITIVE ? LS_SR_COMPAT_BACKWARD
                                   : level == LS_SR_COMPAT_FORWARD_TRANSITIVE ? LS_SR_COMPAT_FORWARD
                                   : level == LS_SR_COMPAT_FULL_TRANSITIVE    ? LS_SR_COMPAT_FULL
                                                                              : level;
                *compatible = one == LS_SR_COMPAT_NONE ||
                              ls_sr_compatible_with(one, cand, prev, v->version, why);
                ls_sr_schema_release(prev);
            }
        }
    }
    ls_sr_subject_state_free(&s);
    ls_sr_schema_release(cand);
    return c;
}
