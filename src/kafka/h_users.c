/* DescribeUserScramCredentials (key 50) and AlterUserScramCredentials (key
 * 51, KIP-554): the SCRAM users of the metadata store (security/users.h).
 * Kafka's rules and errors:
 *  - one result per user named, in request order; a user's changes apply
 *    together or not at all (one compare-and-set on its key, retried when
 *    another broker changed the user meanwhile);
 *  - a (user, mechanism) named twice in one request: DUPLICATE_RESOURCE for
 *    that user; an empty name: UNACCEPTABLE_CREDENTIAL; a mechanism other
 *    than SCRAM-SHA-256/512: UNSUPPORTED_SASL_MECHANISM; iterations outside
 *    [4096, 16384]: UNACCEPTABLE_CREDENTIAL; deleting a credential that does
 *    not exist: RESOURCE_NOT_FOUND;
 *  - Describe: no list (or an empty one) means every user; a user named
 *    twice: DUPLICATE_RESOURCE; one without credentials: RESOURCE_NOT_FOUND.
 * The client sends the salted password; the broker keeps StoredKey and
 * ServerKey derived from it. Every change is one "audit" line (who, from
 * where, user, mechanism, outcome), never salt or key material. */
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/diag.h"
#include "kafka/api.h"
#include "kafka/handlers.h"
#include "security/acl.h"
#include "kafka/msg.h"
#include "kafka/services.h"
#include "security/users.h"

#define CAS_ATTEMPTS 16

typedef ls_kafka_AlterUserScramCredentialsRequest_ScramCredentialUpsertion upsert_t;
typedef ls_kafka_AlterUserScramCredentialsRequest_ScramCredentialDeletion delete_t;

typedef struct user_change {
    ls_kstr_t name;
    int16_t err;
    const char *msg;
} user_change_t;

typedef struct alter_job {
    ls_kreq_t *req;
    user_change_t *users;
    int nusers;
} alter_job_t;

static int user_index(alter_job_t *j, ls_kstr_t name)
{
    for (int i = 0; i < j->nusers; i++)
        if (j->users[i].name.len == name.len &&
            memcmp(j->users[i].name.ptr, name.ptr, (size_t)(name.len > 0 ? name.len : 0)) == 0)
            return i;
    j->users[j->nusers].name = name;
    return j->nusers++;
}

static void set_err(user_change_t *u, int16_t err, const char *msg)
{
    if (u->err == LS_KERR_NONE) {
        u->err = err;
        u->msg = msg;
    }
}

/* Checks that do not need the store; the first error of a user sticks. A
 * request denied (Kafka: ALTER on the cluster, checked first) answers that
 * for every user and nothing about its changes. */
static void alter_validate(alter_job_t *j, const ls_kafka_AlterUserScramCredentialsRequest *m,
                           bool denied)
{
    int total = m->NumDeletions + m->NumUpsertions;
    j->users = ls_arena_alloc(j->req->arena, (size_t)(total + 1) * sizeof *j->users);
    memset(j->users, 0, (size_t)(total + 1) * sizeof *j->users);
    /* (user, mechanism) pairs seen, for duplicates */
    int *seen_user = ls_arena_alloc(j->req->arena, (size_t)(total + 1) * sizeof(int));
    int8_t *seen_mech = ls_arena_alloc(j->req->arena, (size_t)(total + 1));
    for (int k = 0; k < total; k++) {
        bool del = k < m->NumDeletions;
        ls_kstr_t name = del ? m->Deletions[k].Name : m->Upsertions[k - m->NumDeletions].Name;
        int8_t mech =
            del ? m->Deletions[k].Mechanism : m->Upsertions[k - m->NumDeletions].Mechanism;
        int ui = user_index(j, name);
        user_change_t *u = &j->users[ui];
        if (denied) {
            set_err(u, LS_KERR_CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.");
            continue;
        }
        for (int e = 0; e < k; e++)
            if (seen_user[e] == ui && seen_mech[e] == mech)
                set_err(u, LS_KERR_DUPLICATE_RESOURCE,
                        "A user credential cannot be altered twice in the same request");
        seen_user[k] = ui;
        seen_mech[k] = mech;
        ls_scram_mech sm;
        if (name.len <= 0)
            set_err(u, LS_KERR_UNACCEPTABLE_CREDENTIAL, "Username must not be empty");
        if (!ls_scram_mech_from_code(mech, &sm))
            set_err(u, LS_KERR_UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism");
        if (del) continue;
        const upsert_t *up = &m->Upsertions[k - m->NumDeletions];
        if (up->Iterations < LS_SCRAM_MIN_ITERATIONS)
            set_err(u, LS_KERR_UNACCEPTABLE_CREDENTIAL, "Too few iterations");
        else if (up->Iterations > LS_SCRAM_MAX_ITERATIONS)
            set_err(u, LS_KERR_UNACCEPTABLE_CREDENTIAL, "Too many iterations");
        if (up->Salt.len <= 0 || up->Salt.len > LS_SCRAM_MAX_SALT)
            set_err(u, LS_KERR_UNACCEPTABLE_CREDENTIAL, "Salt must hold 1 to 256 bytes");
        if (ls_scram_mech_from_code(mech, &sm) &&
            (up->SaltedPassword.len < 0 || (size_t)up->SaltedPassword.len != ls_scram_key_len(sm)))
            set_err(u, LS_KERR_UNACCEPTABLE_CREDENTIAL,
                    "Salted password does not have the mechanism's digest length");
    }
}

/* Applies the changes of user ui to u (read from the store). */
static void alter_apply(const ls_kafka_AlterUserScramCredentialsRequest *m, alter_job_t *j, int ui,
                        ls_user_t *u)
{
    user_change_t *uc = &j->users[ui];
    for (int k = 0; k < m->NumDeletions; k++) {
        const delete_t *d = &m->Deletions[k];
        if (user_index(j, d->Name) != ui) continue;
        if (!u->has[d->Mechanism])
            set_err(uc, LS_KERR_RESOURCE_NOT_FOUND,
                    "Attempt to delete a user credential that does not exist");
        u->has[d->Mechanism] = false;
    }
    for (int k = 0; k < m->NumUpsertions; k++) {
        const upsert_t *up = &m->Upsertions[k];
        if (user_index(j, up->Name) != ui) continue;
        ls_scram_mech sm = (ls_scram_mech)up->Mechanism;
        if (ls_scram_cred_from_salted(sm, up->SaltedPassword.ptr, (size_t)up->SaltedPassword.len,
                                      up->Salt.ptr, (size_t)up->Salt.len, up->Iterations,
                                      &u->cred[sm]) != LS_OK)
            set_err(uc, LS_KERR_UNACCEPTABLE_CREDENTIAL, "Invalid credential");
        u->has[sm] = true;
    }
}

static void alter_work(void *arg)
{
    alter_job_t *j = arg;
    const ls_kafka_AlterUserScramCredentialsRequest *m = j->req->msg;
    ls_meta_t *meta = j->req->svc->users_meta;
    for (int i = 0; i < j->nusers; i++) {
        user_change_t *uc = &j->users[i];
        if (uc->err != LS_KERR_NONE) continue;
        char *name = ls_arena_kstr(j->req->arena, uc->name, NULL);
        ls_status st = LS_ECONFLICT;
        for (int attempt = 0; attempt < CAS_ATTEMPTS && st == LS_ECONFLICT; attempt++) {
            ls_user_t u;
            int64_t rev;
            st = ls_users_get(meta, name, &u, &rev);
            if (st == LS_ENOTFOUND) {
                memset(&u, 0, sizeof u);
                u.name = ls_strdup(name);
                st = LS_OK;
            }
            if (st != LS_OK) break;
            alter_apply(m, j, i, &u);
            if (uc->err == LS_KERR_NONE) st = ls_users_put(meta, &u, rev);
            ls_user_free(&u);
        }
        if (st != LS_OK && uc->err == LS_KERR_NONE)
            set_err(uc, ls_kafka_error_from_status(st), "the metadata store failed; try again");
    }
}

static void alter_audit(ls_kreq_t *req, const alter_job_t *j)
{
    const ls_kafka_AlterUserScramCredentialsRequest *m = req->msg;
    int total = m->NumDeletions + m->NumUpsertions;
    for (int k = 0; k < total; k++) {
        bool del = k < m->NumDeletions;
        ls_kstr_t name = del ? m->Deletions[k].Name : m->Upsertions[k - m->NumDeletions].Name;
        int8_t mech =
            del ? m->Deletions[k].Mechanism : m->Upsertions[k - m->NumDeletions].Mechanism;
        const user_change_t *uc = NULL;
        for (int i = 0; i < j->nusers; i++)
            if (j->users[i].name.len == name.len &&
                memcmp(j->users[i].name.ptr, name.ptr, (size_t)(name.len > 0 ? name.len : 0)) == 0)
                uc = &j->users[i];
        ls_scram_mech sm;
        const char *mn = ls_scram_mech_from_code(mech, &sm) ? ls_scram_mech_name(sm) : "unknown";
        char iters[32] = "";
        if (!del)
            snprintf(iters, sizeof iters, " iterations=%d",
                     (int)m->Upsertions[k - m->NumDeletions].Iterations);
        LS_INFO("audit", "%s from %s: %s SCRAM credential user=%.*s mechanism=%s%s: %s",
                ls_kreq_principal(req), ls_kreq_peer_host(req), del ? "delete" : "upsert",
                name.len > 0 ? (int)(name.len > 200 ? 200 : name.len) : 0, name.ptr ? name.ptr : "",
                mn, iters,
                uc && uc->err == LS_KERR_NONE ? "done" : (uc && uc->msg ? uc->msg : "refused"));
    }
}

static void alter_done(void *arg)
{
    alter_job_t *j = arg;
    ls_kreq_t *req = j->req;
    alter_audit(req, j);
    ls_kafka_AlterUserScramCredentialsResponse resp = {.NumResults = j->nusers};
    resp.Results = ls_arena_alloc(req->arena, (size_t)(j->nusers + 1) * sizeof *resp.Results);
    for (int i = 0; i < j->nusers; i++) {
        resp.Results[i].User = j->users[i].name;
        resp.Results[i].ErrorCode = j->users[i].err;
        resp.Results[i].ErrorMessage =
            j->users[i].msg ? ls_kstr_c(j->users[i].msg) : (ls_kstr_t){NULL, -1};
    }
    ls_free(j);
    ls_kw_t w;
    ls_kreq_encode(req, &w, &resp);
    ls_kreq_respond(req, &w);
}

void ls_kafka_handle_alter_user_scram_credentials(ls_kreq_t *req)
{
    alter_job_t *j = LS_NEW(alter_job_t);
    j->req = req;
    alter_validate(j, req->msg, !ls_kreq_allowed_cluster(req, LS_ACL_OP_ALTER));
    ls_ksvc_offload(req->svc, alter_work, alter_done, j);
}

/* ------------------------------------------------------------- describe */

typedef ls_kafka_DescribeUserScramCredentialsResponse_DescribeUserScramCredentialsResult dresult_t;

typedef struct describe_job {
    ls_kreq_t *req;
    ls_kafka_DescribeUserScramCredentialsResponse resp;
} describe_job_t;

static void fill_infos(ls_arena_t *a, dresult_t *r, const ls_user_t *u)
{
    r->CredentialInfos = ls_arena_alloc(a, 3 * sizeof *r->CredentialInfos);
    for (int m = LS_SCRAM_SHA_256; m <= LS_SCRAM_SHA_512; m++)
        if (u->has[m]) {
            r->CredentialInfos[r->NumCredentialInfos].Mechanism = (int8_t)m;
            r->CredentialInfos[r->NumCredentialInfos].Iterations = u->cred[m].iterations;
            r->NumCredentialInfos++;
        }
}

static void describe_work(void *arg)
{
    describe_job_t *j = arg;
    ls_kreq_t *req = j->req;
    const ls_kafka_DescribeUserScramCredentialsRequest *m = req->msg;
    ls_meta_t *meta = req->svc->users_meta;
    ls_kafka_DescribeUserScramCredentialsResponse *resp = &j->resp;
    resp->ErrorMessage = (ls_kstr_t){NULL, -1};
    if (m->NumUsers <= 0) { /* null or empty: every user */
        ls_user_t *all;
        size_t n;
        ls_status st = ls_users_list(meta, &all, &n);
        if (st != LS_OK) {
            resp->ErrorCode = ls_kafka_error_from_status(st);
            resp->ErrorMessage = ls_kstr_c("the metadata store failed; try again");
            return;
        }
        resp->Results = ls_arena_alloc(req->arena, (n + 1) * sizeof *resp->Results);
        memset(resp->Results, 0, (n + 1) * sizeof *resp->Results);
        for (size_t i = 0; i < n; i++) {
            dresult_t *r = &resp->Results[i];
            r->User = ls_kstr_c(ls_arena_kstr(req->arena, ls_kstr_c(all[i].name), NULL));
            r->ErrorMessage = (ls_kstr_t){NULL, -1};
            fill_infos(req->arena, r, &all[i]);
            ls_user_free(&all[i]);
        }
        ls_free(all);
        resp->NumResults = (int32_t)n;
        return;
    }
    resp->Results = ls_arena_alloc(req->arena, (size_t)m->NumUsers * sizeof *resp->Results);
    memset(resp->Results, 0, (size_t)m->NumUsers * sizeof *resp->Results);
    for (int i = 0; i < m->NumUsers; i++) {
        ls_kstr_t name = m->Users[i].Name;
        bool dup = false;
        for (int k = 0; k < resp->NumResults; k++)
            if (resp->Results[k].User.len == name.len &&
                memcmp(resp->Results[k].User.ptr, name.ptr,
                       (size_t)(name.len > 0 ? name.len : 0)) == 0) {
                resp->Results[k].ErrorCode = LS_KERR_DUPLICATE_RESOURCE;
                resp->Results[k].ErrorMessage =
                    ls_kstr_c("Cannot describe SCRAM credentials for the same user twice in a "
                              "single request");
                resp->Results[k].NumCredentialInfos = 0;
                dup = true;
            }
        if (dup) continue;
        dresult_t *r = &resp->Results[resp->NumResults++];
        r->User = name;
        r->ErrorMessage = (ls_kstr_t){NULL, -1};
        ls_user_t u;
        ls_status st = ls_users_get(meta, ls_arena_kstr(req->arena, name, NULL), &u, NULL);
        if (st == LS_ENOTFOUND) {
            r->ErrorCode = LS_KERR_RESOURCE_NOT_FOUND;
            r->ErrorMessage =
                ls_kstr_c("Attempt to describe a user credential that does not exist");
        } else if (st != LS_OK) {
            r->ErrorCode = ls_kafka_error_from_status(st);
            r->ErrorMessage = ls_kstr_c("the metadata store failed; try again");
        } else {
            fill_infos(req->arena, r, &u);
            ls_user_free(&u);
        }
    }
}

static void describe_done(void *arg)
{
    describe_job_t *j = arg;
    ls_kreq_t *req = j->req;
    ls_kafka_DescribeUserScramCredentialsResponse resp = j->resp;
    ls_free(j);
    ls_kw_t w;
    ls_kreq_encode(req, &w, &resp);
    ls_kreq_respond(req, &w);
}

void ls_kafka_handle_describe_user_scram_credentials(ls_kreq_t *req)
{
    describe_job_t *j = LS_NEW(describe_job_t);
    j->req = req;
    if (!ls_kreq_allowed_cluster(req, LS_ACL_OP_DESCRIBE)) { /* Kafka: DESCRIBE on the cluster */
        j->resp.ErrorCode = LS_KERR_CLUSTER_AUTHORIZATION_FAILED;
        j->resp.ErrorMessage = ls_kstr_c("Cluster authorization failed.");
        describe_done(j);
        return;
    }
    ls_ksvc_offload(req->svc, describe_work, describe_done, j);
}
