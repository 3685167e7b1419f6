/* Table policies for the front ends (table_policy.h). */
#include "admin/table_policy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"

const char *ls_admin_policy_key(const char *k, char *buf, size_t cap)
{
    if (ls_policy_is_key(k)) return k;
    snprintf(buf, cap, LS_POLICY_PREFIX "%s", k);
    return buf;
}

/* The key of edit slot i, expanded; NULL with err when the slot table is
 * full or the key is given twice. */
static const char *edit_key(ls_admin_policy_edit_t *e, const char *k, char *err, size_t errlen)
{
    int i = e->nset + e->nunset;
    if (i >= LS_ADMIN_POLICY_MAX_EDITS) {
        snprintf(err, errlen, "at most %d policy changes at once", LS_ADMIN_POLICY_MAX_EDITS);
        return NULL;
    }
    const char *key = ls_admin_policy_key(k, e->keys[i], sizeof e->keys[i]);
    if (key != e->keys[i]) snprintf(e->keys[i], sizeof e->keys[i], "%s", key);
    for (int j = 0; j < e->nset; j++)
        if (strcmp(e->set_k[j], e->keys[i]) == 0) goto twice;
    for (int j = 0; j < e->nunset; j++)
        if (strcmp(e->unset_k[j], e->keys[i]) == 0) goto twice;
    return e->keys[i];
twice:
    snprintf(err, errlen, "%s is given twice", e->keys[i]);
    return NULL;
}

ls_status ls_admin_policy_edit_set(ls_admin_policy_edit_t *e, const char *k, const char *value,
                                   bool ns_level, char *err, size_t errlen)
{
    const char *key = edit_key(e, k, err, errlen);
    if (!key) return LS_EINVAL;
    /* a topic's catalog may name an external catalog of the broker's
     * configuration, which a client does not have: AlterConfigs checks it
     * there; a namespace edit is written here, so it is checked here (the
     * caller installed the configuration's catalogs) */
    bool broker_checks = !ns_level && ls_policy_field_of(key) == LS_POLICY_CATALOG;
    if (!broker_checks) {
        ls_status st = ls_policy_check(key, value, err, errlen);
        if (st != LS_OK) return st;
    }
    if (ns_level && ls_policy_field_of(key) == LS_POLICY_PRIMARY_KEY && *value) {
        /* field names of one topic's key: as a default it would make every
         * topic of the namespace without such a key unresolvable */
        snprintf(err, errlen,
                 "%s names fields of one topic's key: set it on the topic "
                 "(CreateTopics, AlterConfigs), not as a namespace default",
                 key);
        return LS_EINVAL;
    }
    e->set_k[e->nset] = key;
    e->set_v[e->nset++] = value;
    return LS_OK;
}

ls_status ls_admin_policy_edit_unset(ls_admin_policy_edit_t *e, const char *k, char *err,
                                     size_t errlen)
{
    const char *key = edit_key(e, k, err, errlen);
    if (!key) return LS_EINVAL;
    if (ls_policy_field_of(key) < 0) {
        snprintf(err, errlen, "%s is not a table policy key", key);
        return LS_EINVAL;
    }
    e->unset_k[e->nunset++] = key;
    return LS_OK;
}

void ls_admin_policy_edit_free(ls_admin_policy_edit_t *e)
{
    ls_free(e->buf);
    e->buf = NULL;
}

/* The layer a DescribeConfigs source stands for (h_configs.c maps the
 * policy's layers onto Kafka's config sources). */
static const char *source_name(int8_t src)
{
    switch (src) {
    case LS_KAFKA_CONFIG_SOURCE_TOPIC_CONFIG: return "stream";
    case LS_KAFKA_CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG: return "namespace";
    case LS_KAFKA_CONFIG_SOURCE_STATIC_BROKER_CONFIG: return "cluster";
    case LS_KAFKA_CONFIG_SOURCE_DEFAULT_CONFIG: return "default";
    }
    return "?";
}

static char *kdup(ls_arena_t *a, ls_kstr_t s)
{
    size_t n = s.len > 0 ? (size_t)s.len : 0;
    char *p = ls_arena_alloc(a, n + 1);
    if (n) memcpy(p, s.ptr, n);
    p[n] = 0;
    return p;
}

static void set_error(ls_admin_conn_t *c, ls_kstr_t msg, int16_t code, int16_t *kerr)
{
    *kerr = code;
    snprintf(c->err, sizeof c->err, "%.*s", msg.len > 0 ? msg.len : 0, msg.ptr ? msg.ptr : "");
}

int ls_admin_policy_describe(ls_admin_conn_t *c, const char *topic, ls_admin_policy_t *out,
                             int16_t *kerr)
{
    memset(out, 0, sizeof *out);
    *kerr = 0;
    ls_kafka_DescribeConfigsRequest_DescribeConfigsResource res = {.ResourceType =
                                                                       LS_KAFKA_RESOURCE_TOPIC,
                                                                   .ResourceName = ls_kstr_c(topic),
                                                                   .ConfigurationKeys = NULL,
                                                                   .NumConfigurationKeys = -1};
    ls_kafka_DescribeConfigsRequest q = {.Resources = &res, .NumResources = 1};
    ls_kafka_DescribeConfigsResponse r;
    if (LS_ADMIN_CALL(c, DescribeConfigs, DESCRIBE_CONFIGS, 4, &q, &r) != 0) return -1;
    if (r.NumResults != 1) {
        snprintf(c->err, sizeof c->err, "DescribeConfigs answered %d resources", r.NumResults);
        return -1;
    }
    const ls_kafka_DescribeConfigsResponse_DescribeConfigsResult *d = &r.Results[0];
    if (d->ErrorCode) {
        set_error(c, d->ErrorMessage, d->ErrorCode, kerr);
        return -1;
    }
    out->rows = ls_arena_alloc(c->arena, (size_t)(d->NumConfigs + 1) * sizeof *out->rows);
    for (int32_t i = 0; i < d->NumConfigs; i++) {
        const ls_kafka_DescribeConfigsResponse_DescribeConfigsResourceResult *e = &d->Configs[i];
        char *key = kdup(c->arena, e->Name), *value = kdup(c->arena, e->Value);
        /* statuses the broker reports beside the policy */
        if (strcmp(key, "lakestream.table.lag.ms") == 0) {
            out->has_lag = true;
            out->lag_ms = strtoll(value, NULL, 10);
        } else if (strcmp(key, "lakestream.table.skipped.records") == 0) {
            out->has_skipped = true;
            out->skipped = strtoll(value, NULL, 10);
        } else if (strcmp(key, "lakestream.table.held.reason") == 0) {
            out->held = value;
        } else if (strcmp(key, "lakestream.table.catalog.status") == 0) {
            out->catalog_status = value;
        } else if (strcmp(key, "lakestream.table.current") == 0) {
            out->current = value;
        } else if (strcmp(key, "lakestream.table.current.reason") == 0) {
            out->current_reason = value;
        } else if (ls_policy_is_key(key)) {
            /* keys that are no field (enabled.since) are kept by the broker */
            out->rows[out->nrows++] = (ls_admin_policy_row_t){
                key, value, ls_policy_field_of(key) >= 0 ? source_name(e->ConfigSource) : "broker"};
        }
    }
    return 0;
}

int ls_admin_policy_alter(ls_admin_conn_t *c, const char *topic, const ls_admin_policy_edit_t *e,
                          bool validate_only, int16_t *kerr)
{
    *kerr = 0;
    int n = e->nset + e->nunset;
    ls_kafka_IncrementalAlterConfigsRequest_AlterableConfig *ops =
        ls_arena_alloc(c->arena, (size_t)(n + 1) * sizeof *ops);
    for (int i = 0; i < e->nset; i++)
        ops[i] = (ls_kafka_IncrementalAlterConfigsRequest_AlterableConfig){
            ls_kstr_c(e->set_k[i]), LS_KAFKA_CONFIG_OP_SET, ls_kstr_c(e->set_v[i])};
    for (int i = 0; i < e->nunset; i++)
        ops[e->nset + i] = (ls_kafka_IncrementalAlterConfigsRequest_AlterableConfig){
            ls_kstr_c(e->unset_k[i]), LS_KAFKA_CONFIG_OP_DELETE, ls_kstr_null()};
    ls_kafka_IncrementalAlterConfigsRequest_AlterConfigsResource res = {
        .ResourceType = LS_KAFKA_RESOURCE_TOPIC,
        .ResourceName = ls_kstr_c(topic),
        .Configs = ops,
        .NumConfigs = n};
    ls_kafka_IncrementalAlterConfigsRequest q = {
        .Resources = &res, .NumResources = 1, .ValidateOnly = validate_only};
    ls_kafka_IncrementalAlterConfigsResponse r;
    if (LS_ADMIN_CALL(c, IncrementalAlterConfigs, INCREMENTAL_ALTER_CONFIGS, 1, &q, &r) != 0)
        return -1;
    if (r.NumResponses != 1) {
        snprintf(c->err, sizeof c->err, "IncrementalAlterConfigs answered %d resources",
                 r.NumResponses);
        return -1;
    }
    if (r.Responses[0].ErrorCode) {
        set_error(c, r.Responses[0].ErrorMessage, r.Responses[0].ErrorCode, kerr);
        return -1;
    }
    return 0;
}

/* The namespace's new property set from the current one (may run twice). */
static ls_status ns_change(const ls_prop_t *cur, int ncur, void *arg, const ls_prop_t **out,
                           int *nout, char *err, size_t errlen)
{
    ls_admin_policy_edit_t *e = arg;
    ls_free(e->buf);
    e->buf = LS_NEWN(ls_prop_t, (size_t)(ncur + e->nset) + 1);
    int n = 0;
    for (int i = 0; i < ncur; i++) {
        bool drop = false;
        for (int k = 0; k < e->nunset && !drop; k++)
            drop = strcmp(cur[i].key, e->unset_k[k]) == 0;
        for (int k = 0; k < e->nset && !drop; k++)
            drop = strcmp(cur[i].key, e->set_k[k]) == 0;
        if (!drop) e->buf[n++] = cur[i];
    }
    for (int k = 0; k < e->nset; k++)
        e->buf[n++] = (ls_prop_t){(char *)e->set_k[k], (char *)e->set_v[k]};
    *out = e->buf;
    *nout = n;
    return LS_OK;
}

ls_status ls_admin_ns_policy_update(ls_catalog_t *cat, const char *ns, ls_admin_policy_edit_t *e,
                                    bool create, char *err, size_t errlen)
{
    if (e->nset + e->nunset == 0 && !create) return LS_OK;
    return ls_catalog_update_namespace(cat, ns, ns_change, e, err, errlen);
}
