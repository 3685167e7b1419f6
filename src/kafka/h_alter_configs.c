/* AlterConfigs (key 33) and IncrementalAlterConfigs (key 44): topic, broker,
 * group and client-metrics configs.
 *
 * Topics (resource type 2) only. AlterConfigs replaces a topic's whole set of
 * overrides (Kafka's semantics: a key left out returns to its default);
 * IncrementalAlterConfigs applies SET and DELETE operations to the stored
 * set. APPEND and SUBTRACT (list configs) are refused with INVALID_REQUEST:
 * the only list topic config, cleanup.policy, is set whole with SET.
 * Brokers (resource type 4): the default broker resource (name "") holds
 * the cluster-wide dynamic broker configs (stream/broker_config.h), stored in
 * the metadata store and applied by every broker without a restart; each key
 * is checked by ls_bcfg_check (a static or unknown setting is refused with
 * INVALID_CONFIG naming it). A resource naming one broker is refused
 * (INVALID_REQUEST): there is no per-broker dynamic layer here.
 * Groups (resource type 32): a group's dynamic configs (Kafka's GroupConfig:
 * consumer.session.timeout.ms, consumer.heartbeat.interval.ms), stored by
 * group/group_configs.h and applied by the group's coordinator at its
 * members' next heartbeat; ALTER_CONFIGS on the group.
 * Client metrics (resource type 16): a KIP-714 subscription (metrics,
 * interval.ms, match), stored by telemetry/subscriptions.h and had by
 * clients at their next GetTelemetrySubscriptions; ALTER_CONFIGS on the
 * cluster (as Kafka). A subscription whose keys are all deleted is removed.
 * Its two lists, metrics and match, also take APPEND and SUBTRACT (Kafka's
 * list semantics, telemetry/subscriptions.h); other keys refuse them
 * (INVALID_CONFIG).
 *
 * Flow: names, operations and values are validated on the loop thread with
 * the same checks as CreateTopics (ls_kafka_topic_config_check: Kafka types,
 * lakestream.table.* through stream/policy.c — INVALID_CONFIG names the key
 * and the accepted values). The catalog update — blocking metadata I/O —
 * runs in one offloaded job (ls_ksvc_offload) as a read-modify-CAS per topic
 * (ls_catalog_update_config), whose change step also resolves the resulting
 * table policy and keeps lakestream.table.enabled.since
 * (ls_kafka_topic_policy_apply). ValidateOnly runs every check, writes
 * nothing. When a table policy changed, compaction is told at once so a newly
 * enabled table meets its commit interval from the first record. */
#include <stdio.h>
#include <string.h>

#include "base/diag.h"
#include "group/group_configs.h"
#include "kafka/handlers.h"
#include "kafka/msg.h"
#include "kafka/names.h"
#include "kafka/services.h"
#include "stream/broker_config.h"
#include "stream/policy.h"
#include "telemetry/subscriptions.h"

typedef struct ac_op {
    char *key;
    char *value; /* NULL: delete */
    int8_t op;   /* LS_KAFKA_CONFIG_OP_* (APPEND, SUBTRACT: client-metrics lists only) */
} ac_op_t;

typedef struct ac_res {
    char *name;      /* topic to update; NULL: answered during validation */
    bool broker;     /* the dynamic broker configs, not a topic */
    bool group;      /* a group's dynamic configs, not a topic */
    bool cmetrics;   /* a client-metrics subscription, not a topic */
    bool replace;    /* AlterConfigs: the ops are the whole new set */
    bool table_keys; /* touches the table policy */
    ac_op_t *ops;
    int nops;
    ls_status st;
    char err[512];
    ls_prop_t *buf; /* the new set (arena; reallocated per attempt) */
    char since[24];
} ac_res_t;

typedef struct ac_ctx {
    ls_kreq_t *req;
    bool incremental;
    bool validate_only;
    int32_t n;
    ac_res_t *res;
    ls_kafka_AlterConfigsResponse resp;
} ac_ctx_t;

typedef struct ac_change_arg {
    ls_kafka_services_t *b;
    ls_arena_t *a;
    ac_res_t *r;
} ac_change_arg_t;

/* The new config set from the current one (runs on the worker, maybe twice). */
static ls_status ac_change(const ls_prop_t *cur, int ncur, void *arg, const ls_prop_t **out,
                           int *nout, char *err, size_t errlen)
{
    ac_change_arg_t *ca = arg;
    ac_res_t *r = ca->r;
    r->buf = ls_arena_alloc(ca->a, (size_t)(ncur + r->nops + 1) * sizeof *r->buf);
    int n = 0;
    for (int i = 0; i < ncur; i++) /* AlterConfigs replaces all but the broker-kept factor */
        if (!r->replace || strcmp(cur[i].key, LS_KAFKA_RF_KEY) == 0) r->buf[n++] = cur[i];
    for (int k = 0; k < r->nops; k++) {
        int at = -1;
        for (int i = 0; i < n && at < 0; i++)
            if (strcmp(r->buf[i].key, r->ops[k].key) == 0) at = i;
        if (!r->ops[k].value) {
            if (at >= 0) r->buf[at] = r->buf[--n];
        } else if (at >= 0) {
            r->buf[at].value = r->ops[k].value;
        } else {
            r->buf[n++] = (ls_prop_t){r->ops[k].key, r->ops[k].value};
        }
    }
    if (!r->broker) {
        ls_status st =
            ls_kafka_topic_policy_apply(ca->b, LS_DEFAULT_NAMESPACE, r->name, cur, ncur, r->buf, &n,
                                        r->since, sizeof r->since, err, errlen);
        if (st != LS_OK) return st;
    }
    *out = r->buf;
    *nout = n;
    return LS_OK;
}

static void ac_work(void *arg)
{
    ac_ctx_t *ctx = arg;
    for (int32_t i = 0; i < ctx->n; i++) {
        ac_res_t *r = &ctx->res[i];
        if (!r->name) continue;
        ac_change_arg_t ca = {ctx->req->svc, ctx->req->arena, r};
        if (r->cmetrics) {
            ls_telemetry_subs_op_t *ops =
                ls_arena_alloc(ctx->req->arena, (size_t)(r->nops + 1) * sizeof *ops);
            for (int k = 0; k < r->nops; k++)
                ops[k] = (ls_telemetry_subs_op_t){
                    r->ops[k].key, r->ops[k].value,
                    r->ops[k].op == LS_KAFKA_CONFIG_OP_APPEND     ? LS_TELEMETRY_LIST_APPEND
                    : r->ops[k].op == LS_KAFKA_CONFIG_OP_SUBTRACT ? LS_TELEMETRY_LIST_SUBTRACT
                                                                  : LS_TELEMETRY_LIST_NONE};
            r->st = ctx->req->svc->client_metrics
                        ? ls_telemetry_subs_alter(ctx->req->svc->client_metrics, r->name,
                                                  r->replace, ops, r->nops, ctx->validate_only,
                                                  r->err, sizeof r->err)
                        : LS_EAGAIN;
            continue;
        }
        if (r->group) {
            ls_group_config_op_t *ops =
                ls_arena_alloc(ctx->req->arena, (size_t)(r->nops + 1) * sizeof *ops);
            for (int k = 0; k < r->nops; k++)
                ops[k] = (ls_group_config_op_t){r->ops[k].key, r->ops[k].value};
            const ls_group_config_defaults_t defs = ls_group_config_defaults_of(ctx->req->svc->cfg);
            r->st = ctx->req->svc->group_configs
                        ? ls_group_configs_alter(ctx->req->svc->group_configs, r->name, r->replace,
                                                 ops, r->nops, &defs, ctx->validate_only, r->err,
                                                 sizeof r->err)
                        : LS_EAGAIN;
            continue;
        }
        if (r->broker) { /* every value was checked: validate_only has nothing left to do */
            r->st = ctx->validate_only
                        ? LS_OK
                        : ls_catalog_update_broker_config(ctx->req->svc->catalog, ac_change, &ca,
                                                          r->err, sizeof r->err);
            continue;
        }
        r->st = ls_catalog_update_config(ctx->req->svc->catalog, LS_DEFAULT_NAMESPACE, r->name,
                                         ctx->validate_only, ac_change, &ca, r->err, sizeof r->err);
    }
}

static void ac_done(void *arg)
{
    ac_ctx_t *ctx = arg;
    ls_kreq_t *req = ctx->req;
    ls_arena_t *a = req->arena;
    bool tables = false;
    for (int32_t i = 0; i < ctx->n; i++) {
        ac_res_t *r = &ctx->res[i];
        ls_kafka_AlterConfigsResourceResponse *out = &ctx->resp.Responses[i];
        if (!r->name) continue;
        switch (r->st) {
        case LS_OK:
            out->ErrorCode = LS_KERR_NONE;
            tables |=
                r->table_keys && !ctx->validate_only && !r->broker && !r->group && !r->cmetrics;
            if ((r->group || r->cmetrics) && !ctx->validate_only)
                for (int k = 0; k < r->nops; k++)
                    LS_INFO("kafka", "%s %s config %s %s%s (client %s)",
                            r->group ? "group" : "client-metrics", r->name, r->ops[k].key,
                            r->ops[k].value ? "set to " : "deleted",
                            r->ops[k].value ? r->ops[k].value : "",
                            ls_kafka_printable(a, req->client_id));
            if (r->broker && !ctx->validate_only)
                for (int k = 0; k < r->nops; k++)
                    LS_INFO("kafka", "dynamic broker config %s %s%s (client %s)", r->ops[k].key,
                            r->ops[k].value ? "set to " : "deleted",
                            r->ops[k].value ? r->ops[k].value : "",
                            ls_kafka_printable(a, req->client_id));
            continue;
        case LS_ENOTFOUND:
            out->ErrorCode = LS_KERR_UNKNOWN_TOPIC_OR_PARTITION;
            out->ErrorMessage =
                ls_kstr_c(ls_arena_printf(a, "Topic '%s' does not exist.", r->name));
            continue;
        case LS_EINVAL: out->ErrorCode = LS_KERR_INVALID_CONFIG; break;
        default:
            out->ErrorCode = ls_kafka_error_from_status(r->st);
            LS_WARN("kafka", "%s '%s': %s",
                    ctx->incremental ? "IncrementalAlterConfigs" : "AlterConfigs", r->name,
                    r->err[0] ? r->err : ls_status_str(r->st));
            break;
        }
        out->ErrorMessage =
            ls_kstr_c(ls_arena_printf(a, "%s", r->err[0] ? r->err : ls_status_str(r->st)));
    }
    if (tables) req->svc->tables_changed(req->svc->root);
    ls_kw_t w;
    ls_kreq_encode(req, &w, &ctx->resp);
    ls_kreq_respond(req, &w);
}

/* Validates one resource's name and type; NULL or the refusal message. */
static const char *ac_resource_check(ls_arena_t *a, int8_t type, ls_kstr_t rname, char **name,
                                     ac_res_t *r, int16_t *code)
{
    if (type == LS_KAFKA_RESOURCE_CLIENT_METRICS) {
        bool exact;
        *name = rname.len >= 0 ? ls_arena_kstr(a, rname, &exact) : "";
        if (rname.len < 0 || !exact || !**name) {
            *code = LS_KERR_INVALID_REQUEST;
            return "Subscription name can't be empty";
        }
        r->cmetrics = true;
        return NULL;
    }
    if (type == LS_KAFKA_RESOURCE_GROUP) {
        bool exact;
        *name = ls_arena_kstr(a, rname, &exact);
        if (!exact || !**name) {
            *code = LS_KERR_INVALID_REQUEST;
            return "A group resource needs a group id.";
        }
        r->group = true;
        return NULL;
    }
    if (type == LS_KAFKA_RESOURCE_BROKER) {
        *code = LS_KERR_INVALID_REQUEST;
        if (rname.len > 0)
            return ls_arena_printf(
                a,
                "Broker %s: Lakestream applies dynamic broker configs to the whole cluster "
                "(any broker serves any partition), not to one broker: alter the default broker "
                "resource instead (empty name; kafka-configs --entity-type brokers "
                "--entity-default).",
                ls_kafka_printable(a, rname));
        r->broker = true;
        *name = "";
        return NULL;
    }
    if (type != LS_KAFKA_RESOURCE_TOPIC) {
        *code = LS_KERR_INVALID_REQUEST;
        return ls_arena_printf(
            a,
            "Unsupported resource type %d: topics (2), brokers (4), client metrics (16) and groups "
            "(32) can be altered.",
            (int)type);
    }
    bool exact;
    *name = ls_arena_kstr(a, rname, &exact);
    if (!exact || !ls_stream_name_valid(*name)) {
        *code = LS_KERR_INVALID_TOPIC_EXCEPTION;
        return ls_arena_printf(a, "Topic name '%s' is illegal.", *name);
    }
    return NULL;
}

/* Validates one operation and appends it to r; NULL or the refusal message. */
static const char *ac_op_check(ls_arena_t *a, const ls_config_t *cfg, ac_res_t *r, ls_kstr_t kname,
                               int8_t op, ls_kstr_t kvalue, int16_t *code)
{
    bool ek, ev = true;
    char *key = ls_arena_kstr(a, kname, &ek);
    char *value = kvalue.len >= 0 ? ls_arena_kstr(a, kvalue, &ev) : NULL;
    *code = LS_KERR_INVALID_CONFIG;
    if (!ek || !ev) return ls_arena_printf(a, "Config '%s' contains a NUL byte.", key);
    for (int i = 0; i < r->nops; i++)
        if (strcmp(r->ops[i].key, key) == 0) {
            *code = LS_KERR_INVALID_REQUEST;
            return ls_arena_printf(a, "Config '%s' is given twice.", key);
        }
    char cerr[1024];
    bool list_op = op == LS_KAFKA_CONFIG_OP_APPEND || op == LS_KAFKA_CONFIG_OP_SUBTRACT;
    if (list_op && r->cmetrics) { /* Kafka's list configs: metrics, match */
        if (ls_telemetry_subs_check_list(key, cerr, sizeof cerr) != 0)
            return ls_arena_printf(a, "%s", cerr);
    } else if (list_op) {
        *code = LS_KERR_INVALID_REQUEST;
        return ls_arena_printf(
            a,
            "Config '%s': APPEND and SUBTRACT are not supported; use SET with the "
            "whole value.",
            key);
    }
    if (op != LS_KAFKA_CONFIG_OP_SET && op != LS_KAFKA_CONFIG_OP_DELETE && !list_op) {
        *code = LS_KERR_INVALID_REQUEST;
        return ls_arena_printf(a, "Config '%s': unknown operation %d.", key, (int)op);
    }
    if (op == LS_KAFKA_CONFIG_OP_DELETE) {
        value = NULL;
        if (r->broker && ls_bcfg_find(key) < 0) { /* the refusal names why */
            ls_bcfg_check(cfg, key, NULL, cerr, sizeof cerr);
            return ls_arena_printf(a, "%s", cerr);
        }
        if (r->group && ls_group_config_check(key, NULL, cerr, sizeof cerr) != 0)
            return ls_arena_printf(a, "%s", cerr);
        if (r->cmetrics && ls_telemetry_subs_check(key, NULL, cerr, sizeof cerr) != 0)
            return ls_arena_printf(a, "%s", cerr);
        if (!r->broker && !r->group && !r->cmetrics &&
            (strcmp(key, LS_POLICY_SINCE_KEY) == 0 || strcmp(key, LS_KAFKA_RF_KEY) == 0))
            return ls_arena_printf(
                a, "Configuration %s is maintained by the broker and cannot be deleted", key);
    } else if (!value) {
        return ls_arena_printf(
            a, "Config '%s' has a null value: use DELETE to return to the default.", key);
    } else if (r->cmetrics ? ls_telemetry_subs_check(key, value, cerr, sizeof cerr) != 0
               : r->group  ? ls_group_config_check(key, value, cerr, sizeof cerr) != 0
               : r->broker ? ls_bcfg_check(cfg, key, value, cerr, sizeof cerr) != 0
                           : ls_kafka_topic_config_check(key, value, cerr, sizeof cerr) != LS_OK) {
        return ls_arena_printf(a, "%s", cerr);
    }
    r->ops[r->nops++] = (ac_op_t){key, value, op};
    r->table_keys |= !r->broker && !r->group && !r->cmetrics && ls_policy_is_key(key);
    return NULL;
}

static void ac_handle(ls_kreq_t *req, bool incremental)
{
    ls_arena_t *a = req->arena;
    const ls_config_t *cfg = req->svc->cfg;
    ac_ctx_t *ctx = ls_arena_alloc(a, sizeof *ctx);
    memset(ctx, 0, sizeof *ctx);
    ctx->req = req;
    ctx->incremental = incremental;
    /* the decoded request: one of the two, by api */
    const ls_kafka_AlterConfigsRequest *am = incremental ? NULL : req->msg;
    const ls_kafka_IncrementalAlterConfigsRequest *im = incremental ? req->msg : NULL;
    ctx->n = incremental ? im->NumResources : am->NumResources;
    ctx->validate_only = incremental ? im->ValidateOnly : am->ValidateOnly;
    ctx->res = ls_kmsg_alloc(a, ctx->n, sizeof *ctx->res);
    ctx->resp.NumResponses = ctx->n;
    ctx->resp.Responses = ls_kmsg_alloc(a, ctx->n, sizeof *ctx->resp.Responses);
    bool any = false;
    for (int32_t i = 0; i < ctx->n; i++) {
        int8_t type = incremental ? im->Resources[i].ResourceType : am->Resources[i].ResourceType;
        ls_kstr_t rname =
            incremental ? im->Resources[i].ResourceName : am->Resources[i].ResourceName;
        int32_t nconf = incremental ? im->Resources[i].NumConfigs : am->Resources[i].NumConfigs;
        ls_kafka_AlterConfigsResourceResponse *out = &ctx->resp.Responses[i];
        out->ResourceType = type;
        out->ResourceName = rname;
        out->ErrorMessage = ls_kstr_null();
        ac_res_t *r = &ctx->res[i];
        char *name = NULL;
        int16_t code = LS_KERR_NONE;
        /* as Kafka: ALTER_CONFIGS on the topic, or on the cluster for brokers */
        code = ls_kreq_config_denied(req, type, rname, LS_ACL_OP_ALTER_CONFIGS);
        const char *why = code != LS_KERR_NONE ? "Authorization failed."
                                               : ac_resource_check(a, type, rname, &name, r, &code);
        r->replace = !incremental;
        r->ops = ls_kmsg_alloc(a, nconf, sizeof *r->ops);
        for (int32_t k = 0; k < nconf && !why; k++) {
            if (incremental) {
                const ls_kafka_IncrementalAlterConfigsRequest_AlterableConfig *c =
                    &im->Resources[i].Configs[k];
                why = ac_op_check(a, cfg, r, c->Name, c->ConfigOperation, c->Value, &code);
            } else {
                const ls_kafka_AlterConfigsRequest_AlterableConfig *c =
                    &am->Resources[i].Configs[k];
                /* a null value means "back to the default": leave it out of the new set */
                why = c->Value.len < 0 ? NULL
                                       : ac_op_check(a, cfg, r, c->Name, LS_KAFKA_CONFIG_OP_SET,
                                                     c->Value, &code);
            }
        }
        /* a whole new set may drop table keys */
        r->table_keys |= r->replace && !r->broker && !r->group && !r->cmetrics;
        if (why) {
            out->ErrorCode = code;
            out->ErrorMessage = ls_kstr_c(why);
            continue;
        }
        r->name = name;
        any = true;
    }
    if (!any) {
        ac_done(ctx);
        return;
    }
    ls_ksvc_offload(req->svc, ac_work, ac_done, ctx);
}

void ls_kafka_handle_alter_configs(ls_kreq_t *req) { ac_handle(req, false); }

void ls_kafka_handle_incremental_alter_configs(ls_kreq_t *req) { ac_handle(req, true); }
