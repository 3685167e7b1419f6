/* Deletion of subjects and versions: soft (the version record is kept,
 * marked deleted) and permanent (only from soft-deleted; the version and
 * usage keys go, the schema record stays so ids are never reused). A live
 * version other live schemas reference is not soft-deleted. A subject's
 * deletion runs in chunks that fit the store's txn bound, each comparing
 * and rewriting the head, so a chunk lost to a concurrent change restarts
 * from the reads. */
#include "registry/registry_int.h"

#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/diag.h"

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

ls_sr_code ls_registry_delete_subject(ls_registry_t *r, const char *subject, bool permanent,
                                      int32_t **versions, size_t *nv, ls_sr_err_t *e)
{
    if (ls_sr_check_writable(r, subject, e)) return e->code;
    txn_t *t = ls_sr_tx_new();
    ls_sr_code c = LS_SR_OK;
    *versions = NULL;
    *nv = 0;
    for (int attempt = 0;; attempt++) {
        if ((c = ls_sr_attempt_start(attempt, subject, e))) break;
        subject_state_t s;
        if ((c = ls_sr_read_subject(r, subject, &s, e))) break;
        bool live = ls_sr_any_live(&s);
        if (s.n == 0) {
            c = ls_sr_seterr(e, LS_SR_SUBJECT_NOT_FOUND, "Subject '%s' not found.", subject);
        } else if (!permanent && !live) {
            c = ls_sr_seterr(
                e, LS_SR_SUBJECT_SOFT_DELETED,
                "Subject '%s' was soft deleted.Set permanent=true to delete permanently", subject);
        } else if (permanent && live) {
            c = ls_sr_seterr(e, LS_SR_SUBJECT_NOT_SOFT_DELETED,
                             "Subject '%s' was not deleted first before being permanently deleted",
                             subject);
        }
        for (size_t i = 0; i < s.n && c == LS_SR_OK && !permanent; i++) {
            bool yes;
            if (s.v[i].deleted) continue;
            if ((c = referenced(r, subject, s.v[i].version, &yes, e))) break;
            if (yes)
                c = ls_sr_seterr(
                    e, LS_SR_REFERENCE_EXISTS,
                    "One or more references exist to the schema {subject=%s, version=%d}", subject,
                    s.v[i].version);
        }
        if (c) {
            ls_sr_subject_state_free(&s);
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
        for (size_t i = 0; i < s.n && st == LS_OK;) {
            ls_sr_tx_cmp(t, ls_sr_ksub(&k, "heads/", subject, ""), head_rev);
            size_t chunk = TXN_CHUNK;
            int max_ops = ls_meta_max_txn_ops(r->meta);
            if ((size_t)max_ops < 2 * chunk + 8)
                chunk = max_ops > 10 ? (size_t)(max_ops - 8) / 2 : 1;
            size_t end = i + chunk < s.n ? i + chunk : s.n;
            bool last = end == s.n;
            for (; i < end; i++) {
                char suffix[32];
                snprintf(suffix, sizeof suffix, "/%010d", s.v[i].version);
                const char *vk = ls_sr_ksub(&k, "subjects/", subject, suffix);
                if (permanent) {
                    ls_sr_tx_del(t, vk);
                    ls_sr_tx_del(t, ls_sr_kusage(&k, s.v[i].id, subject, s.v[i].version));
                    (*versions)[(*nv)++] = s.v[i].version;
                } else if (!s.v[i].deleted) {
                    char val[64];
                    snprintf(val, sizeof val, "{\"id\":%d,\"deleted\":true}", s.v[i].id);
                    ls_sr_tx_put(t, vk, val);
                    (*versions)[(*nv)++] = s.v[i].version;
                }
            }
            if (permanent && last) {
                ls_sr_tx_del(t, ls_sr_ksub(&k, "heads/", subject, ""));
                ls_sr_tx_del(t, ls_sr_ksub(&k, "config-subjects/", subject, ""));
                ls_sr_tx_del(t, ls_sr_ksub(&k, "mode-subjects/", subject, ""));
            } else {
                ls_sr_tx_put(t, ls_sr_ksub(&k, "heads/", subject, ""), "0");
            }
            int64_t rev = 0;
            st = ls_sr_tx_commit(r, t, &rev);
            head_rev = rev;
        }
        ls_sr_subject_state_free(&s);
        if (st == LS_OK) {
            LS_INFO("registry", "%s deleted subject '%s' (%zu versions)",
                    permanent ? "permanently" : "soft", subject, *nv);
            break;
        }
        if (!ls_sr_commit_retryable(st)) {
            c = ls_sr_store_err(r, e, "deleting a subject", st);
            break;
        }
    }
    ls_sr_tx_free(t);
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
    if (ls_sr_check_writable(r, subject, e)) return e->code;
    txn_t *t = ls_sr_tx_new();
    ls_sr_code c = LS_SR_OK;
    for (int attempt = 0;; attempt++) {
        if ((c = ls_sr_attempt_start(attempt, subject, e))) break;
        subject_state_t s;
        if ((c = ls_sr_read_subject(r, subject, &s, e))) break;
        const ls_sr_version_t *v = NULL;
        if (s.n == 0) {
            c = ls_sr_seterr(e, LS_SR_SUBJECT_NOT_FOUND, "Subject '%s' not found.", subject);
        } else if (version == -1) {
            v = permanent ? &s.v[s.n - 1] : ls_sr_latest_live(&s);
            if (!v)
                c = ls_sr_seterr(e, LS_SR_SUBJECT_NOT_FOUND, "Subject '%s' not found.", subject);
        } else if (!(v = ls_sr_find_version(&s, version))) {
            c = ls_sr_seterr(e, LS_SR_VERSION_NOT_FOUND, "Version %d not found.", version);
        }
        if (c == LS_SR_OK && !permanent && v->deleted)
            c = ls_sr_seterr(
                e, LS_SR_VERSION_SOFT_DELETED,
                "Subject '%s' Version %d was soft deleted.Set permanent=true to delete "
                "permanently",
                subject, v->version);
        if (c == LS_SR_OK && permanent && !v->deleted)
            c = ls_sr_seterr(
                e, LS_SR_VERSION_NOT_SOFT_DELETED,
                "Subject '%s' Version %d was not deleted first before being permanently "
                "deleted",
                subject, v->version);
        bool yes = false;
        if (c == LS_SR_OK && !permanent && !(c = referenced(r, subject, v->version, &yes, e)) &&
            yes)
            c = ls_sr_seterr(e, LS_SR_REFERENCE_EXISTS,
                             "One or more references exist to the schema {subject=%s, version=%d}",
                             subject, v->version);
        if (c) {
            ls_sr_subject_state_free(&s);
            break;
        }
        key_t_ k;
        char suffix[32];
        snprintf(suffix, sizeof suffix, "/%010d", v->version);
        ls_sr_tx_cmp(t, ls_sr_ksub(&k, "heads/", subject, ""), s.head_rev);
        const char *vk = ls_sr_ksub(&k, "subjects/", subject, suffix);
        bool last_one = permanent && s.n == 1;
        if (permanent) {
            ls_sr_tx_del(t, vk);
            ls_sr_tx_del(t, ls_sr_kusage(&k, v->id, subject, v->version));
        } else {
            char val[64];
            snprintf(val, sizeof val, "{\"id\":%d,\"deleted\":true}", v->id);
            ls_sr_tx_put(t, vk, val);
        }
        if (last_one)
            ls_sr_tx_del(t, ls_sr_ksub(&k, "heads/", subject, ""));
        else
            ls_sr_tx_put(t, ls_sr_ksub(&k, "heads/", subject, ""), "0");
        *deleted_version = v->version;
        ls_sr_subject_state_free(&s);
        ls_status st = ls_sr_tx_commit(r, t, NULL);
        if (st == LS_OK) break;
        if (!ls_sr_commit_retryable(st)) {
            c = ls_sr_store_err(r, e, "deleting a version", st);
            break;
        }
    }
    ls_sr_tx_free(t);
    return c;
}
