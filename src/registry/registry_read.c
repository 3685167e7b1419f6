/* The registry's reads that change nothing: subjects, a subject's
 * versions, one version, the versions using an id and the ids referencing a
 * version. Soft-deleted versions are left out unless asked for; a subject
 * with no live version reads as not found unless deleted ones are asked
 * for. Each read goes to the store (the cached reads are in registry.c). */
#include "registry/registry_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "meta/meta_keys.h"

/* ---- reading ------------------------------------------------------------------------ */

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

ls_sr_code ls_registry_subjects(ls_registry_t *r, const char *prefix, bool deleted, char ***out,
                                size_t *n, ls_sr_err_t *e)
{
    ls_kvlist_t l;
    ls_status st = ls_meta_scan_prefix(r->meta, LS_KEY_REGISTRY "subjects/", 0, &l);
    if (st != LS_OK) return ls_sr_store_err(r, e, "listing subjects", st);
    *out = LS_NEWN(char *, l.n ? l.n : 1);
    *n = 0;
    size_t plen = strlen(LS_KEY_REGISTRY "subjects/");
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
        char *sub = ls_keypart_decode(enc, elen);
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
    if (ls_sr_read_subject(r, subject, &s, e)) return e->code;
    if (!(deleted ? s.n > 0 : ls_sr_any_live(&s))) {
        ls_sr_subject_state_free(&s);
        return ls_sr_seterr(e, LS_SR_SUBJECT_NOT_FOUND, "Subject '%s' not found.", subject);
    }
    *out = LS_NEWN(ls_sr_version_t, s.n ? s.n : 1);
    *n = 0;
    for (size_t i = 0; i < s.n; i++) {
        if (s.v[i].deleted && !deleted) continue;
        (*out)[*n] = s.v[i];
        (*out)[(*n)++].subject = ls_strdup(subject);
    }
    ls_sr_subject_state_free(&s);
    return LS_SR_OK;
}

ls_sr_code ls_registry_get_version(ls_registry_t *r, const char *subject, int32_t version,
                                   bool deleted, ls_sr_version_t *out, ls_sr_err_t *e)
{
    subject_state_t s;
    if (ls_sr_read_subject(r, subject, &s, e)) return e->code;
    ls_sr_code c;
    const ls_sr_version_t *v = NULL;
    if (!(deleted ? s.n > 0 : ls_sr_any_live(&s))) {
        c = ls_sr_seterr(e, LS_SR_SUBJECT_NOT_FOUND, "Subject '%s' not found.", subject);
        goto out;
    }
    if (version == -1) {
        v = deleted ? &s.v[s.n - 1] : ls_sr_latest_live(&s);
    } else {
        v = ls_sr_find_version(&s, version);
        if (v && v->deleted && !deleted) v = NULL;
    }
    if (!v) {
        c = ls_sr_seterr(e, LS_SR_VERSION_NOT_FOUND, "Version %d not found.", version);
        goto out;
    }
    *out = *v;
    out->subject = ls_strdup(subject);
    c = LS_SR_OK;
out:
    ls_sr_subject_state_free(&s);
    return c;
}

ls_sr_code ls_registry_id_versions(ls_registry_t *r, int32_t id, bool deleted,
                                   ls_sr_version_t **out, size_t *n, ls_sr_err_t *e)
{
    key_t_ k;
    ls_kvlist_t l;
    ls_status st =
        ls_meta_scan_prefix(r->meta, ls_sr_kfmt(&k, LS_KEY_REGISTRY "usage/%010d/", id), 0, &l);
    if (st != LS_OK) return ls_sr_store_err(r, e, "reading a schema's usage", st);
    *out = LS_NEWN(ls_sr_version_t, l.n ? l.n : 1);
    *n = 0;
    size_t plen = strlen(k.s);
    ls_sr_code c = LS_SR_OK;
    for (size_t i = 0; i < l.n && c == LS_SR_OK; i++) {
        const char *enc = (const char *)l.v[i].key + plen;
        const char *slash = strrchr(enc, '/');
        if (!slash) continue;
        char *sub = ls_keypart_decode(enc, (size_t)(slash - enc));
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
    ls_status st = ls_meta_scan_prefix(r->meta, ls_sr_ksub(&k, "refs/", subject, suffix), 0, &l);
    if (st != LS_OK) return ls_sr_store_err(r, e, "reading references", st);
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
