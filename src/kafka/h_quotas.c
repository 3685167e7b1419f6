/* DescribeClientQuotas (key 48) and AlterClientQuotas (key 49, KIP-546):
 * the client quotas of the metadata store (security/quotas.h), enforced by
 * kafka/kquota.h. Kafka's rules and errors:
 *  - entity types user and client-id; a null name is the default entity
 *    (<default>). The ip type (connection_creation_rate) is not served:
 *    INVALID_REQUEST naming it;
 *  - keys producer_byte_rate, consumer_byte_rate (bytes/s) and
 *    request_percentage; any other key: INVALID_REQUEST naming it; a value
 *    must be positive (byte rates whole); an entity with a type twice, a
 *    key twice, or no type: INVALID_REQUEST;
 *  - Alter: each entry succeeds or fails alone; the valid entries of one
 *    request apply together (one compare-and-set); validateOnly stores
 *    nothing;
 *  - Describe: a component matches an exact name (Match), the default
 *    entity (MatchType 1, or 0 with a null Match) or any entity of its type
 *    (MatchType 2); strict also requires the entity to have no other type;
 *  - authorization: ALTER_CONFIGS / DESCRIBE_CONFIGS on the cluster, else
 *    CLUSTER_AUTHORIZATION_FAILED, checked before anything else (a denied
 *    request learns nothing about its entries or filter). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "kafka/api.h"
#include "kafka/handlers.h"
#include "kafka/msg.h"
#include "kafka/services.h"
#include "security/acl.h"
#include "security/quotas.h"

typedef ls_kafka_AlterClientQuotasRequest_EntryData aentry_t;
typedef ls_kafka_DescribeClientQuotasResponse_EntryData dentry_t;

static bool kstr_is(ls_kstr_t s, const char *c)
{
    return s.len >= 0 && (size_t)s.len == strlen(c) && memcmp(s.ptr, c, (size_t)s.len) == 0;
}

/* The entity of an entry, or the reason it is refused. */
static const char *parse_entity(ls_arena_t *a, const aentry_t *en, ls_quota_entity_t *e)
{
    memset(e, 0, sizeof *e);
    if (en->NumEntity == 0) return "The quota entity has no type";
    for (int i = 0; i < en->NumEntity; i++) {
        ls_kstr_t t = en->Entity[i].EntityType, n = en->Entity[i].EntityName;
        ls_qpart *p;
        char **name;
        if (kstr_is(t, "user")) {
            p = &e->user;
            name = &e->user_name;
        } else if (kstr_is(t, "client-id")) {
            p = &e->client;
            name = &e->client_name;
        } else if (kstr_is(t, "ip")) {
            return "Quota entity type 'ip' (connection_creation_rate) is not supported by this "
                   "broker";
        } else {
            return ls_arena_printf(a, "Unknown quota entity type '%s'", ls_arena_kstr(a, t, NULL));
        }
        if (*p != LS_QPART_NONE)
            return ls_arena_printf(a, "Quota entity type '%s' given twice",
                                   ls_arena_kstr(a, t, NULL));
        *p = n.len < 0 ? LS_QPART_DEFAULT : LS_QPART_NAME;
        if (n.len >= 0) *name = ls_arena_kstr(a, n, NULL);
    }
    return NULL;
}

/* ---- AlterClientQuotas ---- */

typedef struct alter_job {
    ls_kreq_t *req;
    ls_kafka_AlterClientQuotasResponse resp;
    ls_quota_entity_t *ents;
    ls_quota_op_t *ops;
    size_t nops;
    int *op_entry; /* the response entry of each op */
} alter_job_t;

static void alter_work(void *arg)
{
    alter_job_t *j = arg;
    ls_status st = ls_quotas_alter(j->req->svc->quotas, j->ops, j->nops);
    if (st == LS_OK) return;
    for (size_t i = 0; i < j->nops; i++) {
        ls_kafka_AlterClientQuotasResponse_EntryData *r = &j->resp.Entries[j->op_entry[i]];
        r->ErrorCode = ls_kafka_error_from_status(st);
        r->ErrorMessage = ls_kstr_c("the metadata store failed; try again");
    }
}

static void alter_done(void *arg)
{
    alter_job_t *j = arg;
    ls_kreq_t *req = j->req;
    ls_kafka_AlterClientQuotasResponse resp = j->resp;
    ls_free(j);
    ls_kw_t w;
    ls_kreq_encode(req, &w, &resp);
    ls_kreq_respond(req, &w);
}

/* Checks one entry's ops; NULL when they may apply. */
static const char *check_ops(ls_arena_t *a, const aentry_t *en)
{
    bool seen[LS_QUOTA_NKEYS] = {false};
    for (int k = 0; k < en->NumOps; k++) {
        ls_quota_key key;
        const char *name = ls_arena_kstr(a, en->Ops[k].Key, NULL);
        if (!ls_quota_key_find(name, strlen(name), &key))
            return ls_arena_printf(a,
                                   "Unknown quota key '%s' (supported: producer_byte_rate, "
                                   "consumer_byte_rate, request_percentage)",
                                   name);
        if (seen[key]) return ls_arena_printf(a, "Quota key '%s' given twice", name);
        seen[key] = true;
        double v = en->Ops[k].Value;
        if (en->Ops[k].Remove) continue;
        if (!(v > 0) || !isfinite(v))
            return ls_arena_printf(a, "Quota '%s' must be positive (got %g)", name, v);
        if (key != LS_QUOTA_REQUEST_PERCENTAGE && v != floor(v))
            return ls_arena_printf(a, "Quota '%s' must be a whole number of bytes (got %g)", name,
                                   v);
    }
    return NULL;
}

void ls_kafka_handle_alter_client_quotas(ls_kreq_t *req)
{
    const ls_kafka_AlterClientQuotasRequest *m = req->msg;
    alter_job_t *j = LS_NEW(alter_job_t);
    j->req = req;
    int n = m->NumEntries;
    j->resp.Entries = ls_arena_alloc(req->arena, (size_t)(n + 1) * sizeof *j->resp.Entries);
    j->ents = ls_arena_alloc(req->arena, (size_t)(n + 1) * sizeof *j->ents);
    size_t nops = 0;
    for (int i = 0; i < n; i++)
        nops += (size_t)m->Entries[i].NumOps;
    j->ops = ls_arena_alloc(req->arena, (nops + 1) * sizeof *j->ops);
    j->op_entry = ls_arena_alloc(req->arena, (nops + 1) * sizeof *j->op_entry);
    j->resp.NumEntries = n;
    bool allowed = ls_kreq_allowed_cluster(req, LS_ACL_OP_ALTER_CONFIGS);
    for (int i = 0; i < n; i++) {
        const aentry_t *en = &m->Entries[i];
        ls_kafka_AlterClientQuotasResponse_EntryData *r = &j->resp.Entries[i];
        memset(r, 0, sizeof *r);
        r->ErrorMessage = (ls_kstr_t){NULL, -1};
        r->NumEntity = en->NumEntity;
        r->Entity = ls_arena_alloc(req->arena, (size_t)(en->NumEntity + 1) * sizeof *r->Entity);
        for (int k = 0; k < en->NumEntity; k++) {
            r->Entity[k].EntityType = en->Entity[k].EntityType;
            r->Entity[k].EntityName = en->Entity[k].EntityName;
        }
        if (!allowed) {
            r->ErrorCode = LS_KERR_CLUSTER_AUTHORIZATION_FAILED;
            continue;
        }
        const char *why = parse_entity(req->arena, en, &j->ents[i]);
        if (!why) why = check_ops(req->arena, en);
        if (why) {
            r->ErrorCode = LS_KERR_INVALID_REQUEST;
            r->ErrorMessage = ls_kstr_c(why);
            continue;
        }
        for (int k = 0; k < en->NumOps && !m->ValidateOnly; k++) {
            ls_quota_key key;
            ls_quota_key_find(en->Ops[k].Key.ptr, (size_t)en->Ops[k].Key.len, &key);
            j->ops[j->nops] =
                (ls_quota_op_t){&j->ents[i], key, en->Ops[k].Value, en->Ops[k].Remove};
            j->op_entry[j->nops++] = i;
        }
    }
    if (j->nops == 0) {
        alter_done(j);
        return;
    }
    ls_ksvc_offload(req->svc, alter_work, alter_done, j);
}

/* ---- DescribeClientQuotas ---- */

static bool part_matches(ls_qpart p, const char *name, int8_t match_type, ls_kstr_t match)
{
    if (p == LS_QPART_NONE) return false;
    if (match_type == 2) return true; /* any entity of the type */
    if (match_type == 1 || match.len < 0) return p == LS_QPART_DEFAULT;
    return p == LS_QPART_NAME && kstr_is(match, name);
}

static void add_part(ls_arena_t *a, dentry_t *d, const char *type, ls_qpart p, const char *name)
{
    if (p == LS_QPART_NONE) return;
    d->Entity[d->NumEntity].EntityType = ls_kstr_c(type);
    d->Entity[d->NumEntity++].EntityName = p == LS_QPART_DEFAULT
                                               ? (ls_kstr_t){NULL, -1}
                                               : ls_kstr_c(ls_arena_kstr(a, ls_kstr_c(name), NULL));
}

void ls_kafka_handle_describe_client_quotas(ls_kreq_t *req)
{
    const ls_kafka_DescribeClientQuotasRequest *m = req->msg;
    ls_kafka_DescribeClientQuotasResponse resp = {.ErrorMessage = {NULL, -1}};
    bool user = false, client = false;
    int8_t umt = 0, cmt = 0;
    ls_kstr_t um = {NULL, -1}, cm = {NULL, -1};
    const char *why = NULL;
    for (int i = 0; i < m->NumComponents && !why; i++) {
        const ls_kafka_DescribeClientQuotasRequest_ComponentData *c = &m->Components[i];
        bool *seen = kstr_is(c->EntityType, "user")        ? &user
                     : kstr_is(c->EntityType, "client-id") ? &client
                                                           : NULL;
        if (kstr_is(c->EntityType, "ip"))
            why = "Quota entity type 'ip' (connection_creation_rate) is not supported by this "
                  "broker";
        else if (!seen)
            why = ls_arena_printf(req->arena, "Unknown quota entity type '%s'",
                                  ls_arena_kstr(req->arena, c->EntityType, NULL));
        else if (*seen)
            why = "A quota entity type appears twice in the filter";
        else if (c->MatchType < 0 || c->MatchType > 2)
            why = ls_arena_printf(req->arena, "Unknown quota filter match type %d", c->MatchType);
        else if (c->MatchType != 0 && c->Match.len >= 0)
            why = "A quota filter component matching the default or any entity names one";
        if (why) break;
        *seen = true;
        if (seen == &user) {
            umt = c->MatchType;
            um = c->Match;
        } else {
            cmt = c->MatchType;
            cm = c->Match;
        }
    }
    if (!ls_kreq_allowed_cluster(req, LS_ACL_OP_DESCRIBE_CONFIGS)) {
        resp.ErrorCode = LS_KERR_CLUSTER_AUTHORIZATION_FAILED;
    } else if (why) {
        resp.ErrorCode = LS_KERR_INVALID_REQUEST;
        resp.ErrorMessage = ls_kstr_c(why);
    } else {
        ls_quota_t *all;
        size_t n = ls_quotas_list(req->svc->quotas, &all);
        resp.Entries = ls_arena_alloc(req->arena, (n + 1) * sizeof *resp.Entries);
        for (size_t i = 0; i < n; i++) {
            const ls_quota_t *q = &all[i];
            if (user && !part_matches(q->e.user, q->e.user_name, umt, um)) continue;
            if (client && !part_matches(q->e.client, q->e.client_name, cmt, cm)) continue;
            if (m->Strict && ((!user && q->e.user) || (!client && q->e.client))) continue;
            dentry_t *d = &resp.Entries[resp.NumEntries++];
            memset(d, 0, sizeof *d);
            d->Entity = ls_arena_alloc(req->arena, 2 * sizeof *d->Entity);
            add_part(req->arena, d, "user", q->e.user, q->e.user_name);
            add_part(req->arena, d, "client-id", q->e.client, q->e.client_name);
            d->Values = ls_arena_alloc(req->arena, LS_QUOTA_NKEYS * sizeof *d->Values);
            for (int k = 0; k < LS_QUOTA_NKEYS; k++)
                if (q->has[k]) {
                    d->Values[d->NumValues].Key = ls_kstr_c(ls_quota_key_name((ls_quota_key)k));
                    d->Values[d->NumValues++].Value = q->v[k];
                }
        }
        ls_quotas_free_list(all, n);
    }
    ls_kw_t w;
    ls_kreq_encode(req, &w, &resp);
    ls_kreq_respond(req, &w);
}
