/* Client quotas: one record in the metadata store, a cached set per broker,
 * Kafka's precedence (design: security/quotas.h). */
#include "security/quotas.h"

#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/diag.h"
#include "meta/meta_follow.h"
#include "meta/meta_keys.h"

#define QUOTAS_CAS_RETRIES 16

static const char *const key_names[LS_QUOTA_NKEYS] = {"producer_byte_rate", "consumer_byte_rate",
                                                      "request_percentage"};

typedef struct quota_set {
    ls_quota_t *v;
    size_t n;
    int64_t rev; /* mod_rev of the record it was read from (0: none yet) */
} quota_set_t;

struct ls_quotas {
    ls_meta_t *meta;
    pthread_rwlock_t lock; /* set */
    quota_set_t set;
    ls_meta_follow_t *follow; /* the record: loads, changes (meta/meta_follow.h) */
};

const char *ls_quota_key_name(ls_quota_key k) { return key_names[k]; }

bool ls_quota_key_find(const char *name, size_t len, ls_quota_key *out)
{
    for (int k = 0; k < LS_QUOTA_NKEYS; k++)
        if (strlen(key_names[k]) == len && memcmp(key_names[k], name, len) == 0) {
            *out = (ls_quota_key)k;
            return true;
        }
    return false;
}

static void entity_copy(ls_quota_entity_t *d, const ls_quota_entity_t *s)
{
    *d = *s;
    d->user_name = s->user == LS_QPART_NAME ? ls_strdup(s->user_name) : NULL;
    d->client_name = s->client == LS_QPART_NAME ? ls_strdup(s->client_name) : NULL;
}

static void entity_clear(ls_quota_entity_t *e)
{
    ls_free(e->user_name);
    ls_free(e->client_name);
    memset(e, 0, sizeof *e);
}

static bool part_eq(ls_qpart a, const char *an, ls_qpart b, const char *bn)
{
    return a == b && (a != LS_QPART_NAME || strcmp(an, bn) == 0);
}

static bool entity_eq(const ls_quota_entity_t *a, const ls_quota_entity_t *b)
{
    return part_eq(a->user, a->user_name, b->user, b->user_name) &&
           part_eq(a->client, a->client_name, b->client, b->client_name);
}

void ls_quotas_free_list(ls_quota_t *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        entity_clear(&v[i].e);
    ls_free(v);
}

static void set_free(quota_set_t *s)
{
    ls_quotas_free_list(s->v, s->n);
    *s = (quota_set_t){0};
}

static void set_copy(quota_set_t *d, const quota_set_t *s)
{
    d->v = LS_NEWN(ls_quota_t, s->n + 1);
    d->n = s->n;
    d->rev = s->rev;
    for (size_t i = 0; i < s->n; i++) {
        d->v[i] = s->v[i];
        entity_copy(&d->v[i].e, &s->v[i].e);
    }
}

/* ---- the record ---- */

static bool parse_part(json_t *o, const char *field, ls_qpart *p, char **name)
{
    json_t *f = json_object_get(o, field);
    *p = !f ? LS_QPART_NONE : json_is_null(f) ? LS_QPART_DEFAULT : LS_QPART_NAME;
    if (*p == LS_QPART_NAME) {
        if (!json_is_string(f)) return false;
        *name = ls_strdup(json_string_value(f));
    }
    return true;
}

static bool set_parse(const uint8_t *val, size_t vlen, quota_set_t *s)
{
    json_error_t je;
    json_t *root = json_loadb((const char *)val, vlen, 0, &je);
    json_t *arr = json_object_get(root, "quotas");
    if (!json_is_array(arr)) {
        LS_ERROR("quotas", "the quota record %s is corrupt: %s", LS_KEY_CLUSTER_QUOTAS,
                 root ? "no quotas array" : je.text);
        json_decref(root);
        return false;
    }
    s->n = 0;
    s->v = LS_NEWN(ls_quota_t, json_array_size(arr) + 1);
    size_t i;
    json_t *o;
    json_array_foreach(arr, i, o)
    {
        ls_quota_t *qt = &s->v[s->n];
        memset(qt, 0, sizeof *qt);
        bool ok = parse_part(o, "user", &qt->e.user, &qt->e.user_name) &&
                  parse_part(o, "client-id", &qt->e.client, &qt->e.client_name) &&
                  (qt->e.user != LS_QPART_NONE || qt->e.client != LS_QPART_NONE);
        for (int k = 0; ok && k < LS_QUOTA_NKEYS; k++) {
            json_t *v = json_object_get(o, key_names[k]);
            if (!v) continue;
            if (!json_is_number(v)) ok = false;
            qt->has[k] = true;
            qt->v[k] = json_number_value(v);
        }
        if (!ok) {
            LS_ERROR("quotas", "skipping a corrupt entity in %s (#%zu)", LS_KEY_CLUSTER_QUOTAS, i);
            entity_clear(&qt->e);
            continue;
        }
        s->n++;
    }
    json_decref(root);
    return true;
}

static void json_part(json_t *o, const char *field, ls_qpart p, const char *name)
{
    if (p == LS_QPART_DEFAULT) json_object_set_new(o, field, json_null());
    if (p == LS_QPART_NAME) json_object_set_new(o, field, json_string(name));
}

static char *set_json(const quota_set_t *s)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < s->n; i++) {
        const ls_quota_t *qt = &s->v[i];
        json_t *o = json_object();
        json_part(o, "user", qt->e.user, qt->e.user_name);
        json_part(o, "client-id", qt->e.client, qt->e.client_name);
        for (int k = 0; k < LS_QUOTA_NKEYS; k++)
            if (qt->has[k]) json_object_set_new(o, key_names[k], json_real(qt->v[k]));
        json_array_append_new(arr, o);
    }
    json_t *root = json_pack("{s:o}", "quotas", arr);
    char *str = json_dumps(root, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(root);
    return str;
}

/* Installs *s unless the cached set is as new (then frees it); *s is
 * emptied either way. */
static void set_install(ls_quotas_t *q, quota_set_t *s)
{
    pthread_rwlock_wrlock(&q->lock);
    quota_set_t old = q->set;
    bool newer = s->rev > q->set.rev;
    if (newer) q->set = *s;
    pthread_rwlock_unlock(&q->lock);
    set_free(newer ? &old : s);
    *s = (quota_set_t){0};
}

/* The follower's load hook: the record's value, parsed, in place of the
 * cached set when newer. */
static bool on_record(void *arg, const uint8_t *val, size_t vlen, int64_t mod_rev)
{
    quota_set_t s = {0};
    if (val && !set_parse(val, vlen, &s)) return false;
    s.rev = mod_rev;
    set_install(arg, &s);
    return true;
}

ls_quotas_t *ls_quotas_open(ls_meta_t *meta, char *err, size_t errlen)
{
    ls_quotas_t *q = LS_NEW(ls_quotas_t);
    q->meta = meta;
    pthread_rwlock_init(&q->lock, NULL);
    ls_meta_follow_cfg_t cfg = {.key = LS_KEY_CLUSTER_QUOTAS,
                                .tag = "quotas",
                                .what = "quota",
                                .thread = "ls-quota-resync",
                                .load = on_record,
                                .arg = q};
    ls_status st = ls_meta_follow_open(meta, &cfg, &q->follow);
    if (st != LS_OK) {
        snprintf(err, errlen, "cannot load the client quotas (%s): %s: %s", LS_KEY_CLUSTER_QUOTAS,
                 ls_status_str(st), ls_meta_error(meta));
        ls_quotas_close(q);
        return NULL;
    }
    return q;
}

void ls_quotas_close(ls_quotas_t *q)
{
    if (!q) return;
    ls_meta_follow_close(q->follow);
    set_free(&q->set);
    pthread_rwlock_destroy(&q->lock);
    ls_free(q);
}

size_t ls_quotas_list(ls_quotas_t *q, ls_quota_t **out)
{
    quota_set_t c;
    pthread_rwlock_rdlock(&q->lock);
    set_copy(&c, &q->set);
    pthread_rwlock_unlock(&q->lock);
    *out = c.v;
    return c.n;
}

/* ---- changes ---- */

/* next = cur with ops applied; entities left without a key dropped. */
static void apply_ops(const quota_set_t *cur, const ls_quota_op_t *ops, size_t n, quota_set_t *next)
{
    set_copy(next, cur);
    ls_quota_t *v = LS_NEWN(ls_quota_t, cur->n + n + 1);
    memcpy(v, next->v, next->n * sizeof *v);
    ls_free(next->v);
    next->v = v;
    for (size_t i = 0; i < n; i++) {
        size_t j = 0;
        while (j < next->n && !entity_eq(&next->v[j].e, ops[i].e))
            j++;
        if (j == next->n) {
            if (ops[i].remove) continue;
            memset(&next->v[j], 0, sizeof next->v[j]);
            entity_copy(&next->v[j].e, ops[i].e);
            next->n++;
        }
        next->v[j].has[ops[i].key] = !ops[i].remove;
        next->v[j].v[ops[i].key] = ops[i].remove ? 0 : ops[i].value;
    }
    size_t k = 0;
    for (size_t j = 0; j < next->n; j++) {
        bool any = false;
        for (int key = 0; key < LS_QUOTA_NKEYS; key++)
            any |= next->v[j].has[key];
        if (any)
            next->v[k++] = next->v[j];
        else
            entity_clear(&next->v[j].e);
    }
    next->n = k;
}

typedef struct alter_ctx {
    const ls_quota_op_t *ops;
    size_t n;
    quota_set_t next; /* what the last step made */
} alter_ctx_t;

/* The follower's change step: the record with the ops applied. */
static ls_status alter_step(void *arg, const uint8_t *val, size_t vlen, char **json)
{
    alter_ctx_t *c = arg;
    quota_set_t cur = {0};
    set_free(&c->next);
    if (val && !set_parse(val, vlen, &cur)) return LS_ECORRUPT;
    apply_ops(&cur, c->ops, c->n, &c->next);
    set_free(&cur);
    *json = set_json(&c->next);
    return LS_OK;
}

ls_status ls_quotas_alter(ls_quotas_t *q, const ls_quota_op_t *ops, size_t n)
{
    alter_ctx_t c = {.ops = ops, .n = n};
    int64_t rev;
    ls_status st = ls_meta_follow_change(q->follow, QUOTAS_CAS_RETRIES, alter_step, &c, &rev);
    if (st == LS_OK) {
        c.next.rev = rev;
        set_install(q, &c.next); /* applied here before the answer */
    }
    set_free(&c.next);
    if (st != LS_OK)
        LS_ERROR("quotas", "changing the client quotas failed: %s: %s", ls_status_str(st),
                 ls_meta_error(q->meta));
    return st;
}

/* ---- resolution ---- */

bool ls_quotas_lookup(ls_quotas_t *q, const char *user, const char *client_id, ls_quota_key key,
                      double *limit, char *window, size_t cap)
{
    /* Kafka's order (security/quotas.h) */
    static const ls_qpart order[8][2] = {
        {LS_QPART_NAME, LS_QPART_NAME},       {LS_QPART_NAME, LS_QPART_DEFAULT},
        {LS_QPART_NAME, LS_QPART_NONE},       {LS_QPART_DEFAULT, LS_QPART_NAME},
        {LS_QPART_DEFAULT, LS_QPART_DEFAULT}, {LS_QPART_DEFAULT, LS_QPART_NONE},
        {LS_QPART_NONE, LS_QPART_NAME},       {LS_QPART_NONE, LS_QPART_DEFAULT},
    };
    bool found = false;
    pthread_rwlock_rdlock(&q->lock);
    for (int o = 0; o < 8 && !found; o++) {
        ls_quota_entity_t want = {order[o][0], order[o][1], (char *)user, (char *)client_id};
        for (size_t i = 0; i < q->set.n && !found; i++) {
            if (!q->set.v[i].has[key] || !entity_eq(&q->set.v[i].e, &want)) continue;
            found = true;
            *limit = q->set.v[i].v[key];
            snprintf(window, cap, "%s|%s|%s", key_names[key],
                     want.user == LS_QPART_NONE ? "" : user,
                     want.client == LS_QPART_NONE ? "" : client_id);
        }
    }
    pthread_rwlock_unlock(&q->lock);
    return found;
}
