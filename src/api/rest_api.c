/* The Lakestream REST API (rest_api.h). */
#include "api/rest_api.h"

#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "admin/kafka_client.h"
#include "admin/table_policy.h"
#include "base/alloc.h"
#include "base/clock.h"
#include "base/url.h"
#include "lake/table_plan.h"
#include "kafka/api.h" /* the Kafka error codes */
#include "kafka/msg.h"
#include "records/records.h"
#include "api/console_api.h"
#include "stream/policy.h"
#include "table/table_catalog.h"

#define MAX_SEGS 8
#define SEG_MAX 512        /* decoded bytes of one path segment */
#define PAGE_DEFAULT 100   /* list entries when no limit is given */
#define RECORDS_DEFAULT 20 /* records when no limit is given */
#define FETCH_MAX_BYTES (4 << 20)
#define VALUE_PREVIEW_MAX 65536 /* bytes of a key or value shown per record */

#define MAX_CONNS 64 /* Kafka connections of running requests (LS_HTTP_THREADS of them) */

struct ls_api {
    ls_api_config_t cfg;
    /* the sockets of requests waiting on the Kafka listener, for ls_api_quiesce */
    pthread_mutex_t mu;
    int fds[MAX_CONNS];
    int nfds;
    bool quiesced;
};

typedef struct call {
    ls_api_t *api;
    const ls_http_request_t *req;
    ls_http_response_t *resp;
    char seg[MAX_SEGS][SEG_MAX + 1]; /* decoded path segments after /api/v1 */
    int nseg;
} call_t;

/* ---------------------------------------------------------------- responses */

/* The error body of every refusal: {"error": {code, type, message, field?}}. */
static void api_error(ls_http_response_t *resp, int code, const char *type, const char *field,
                      const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static void api_error(ls_http_response_t *resp, int code, const char *type, const char *field,
                      const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    json_t *e = json_pack("{s:i, s:s, s:s}", "code", code, "type", type, "message", msg);
    if (!json_object_get(e, "message")) /* not UTF-8: the bytes as escapes */
        json_object_set_new(e, "message", json_string("(message not UTF-8)"));
    if (field) json_object_set_new(e, "field", json_string(field));
    ls_http_send_json(resp, code, json_pack("{s:o}", "error", e));
}

#define BAD(c, field, ...) api_error((c)->resp, 400, "ValidationError", field, __VA_ARGS__)
#define NOT_FOUND(c, ...) api_error((c)->resp, 404, "NotFound", NULL, __VA_ARGS__)
#define CONFLICT(c, field, ...) api_error((c)->resp, 409, "Conflict", field, __VA_ARGS__)
#define UNAVAILABLE(c, ...) api_error((c)->resp, 503, "ServiceUnavailable", NULL, __VA_ARGS__)

static void method_not_allowed(call_t *c, const char *allowed)
{
    api_error(c->resp, 405, "MethodNotAllowed", NULL, "%s %s takes %s", c->req->method,
              c->req->path, allowed);
}

static bool is(const call_t *c, const char *method) { return strcmp(c->req->method, method) == 0; }

/* --------------------------------------------------------------- requests */

/* The JSON object of the request body; NULL with a 400 naming "body". */
static json_t *body_object(call_t *c)
{
    if (!c->req->body || c->req->body_len == 0) {
        BAD(c, "body", "a JSON object body is required");
        return NULL;
    }
    json_error_t je;
    json_t *j = json_loadb(c->req->body, c->req->body_len, JSON_REJECT_DUPLICATES, &je);
    if (!j) {
        BAD(c, "body", "malformed JSON at line %d column %d: %s", je.line, je.column, je.text);
        return NULL;
    }
    if (!json_is_object(j)) {
        json_decref(j);
        BAD(c, "body", "the body must be a JSON object");
        return NULL;
    }
    return j;
}

/* Refuses members of o outside allowed (NULL-terminated): 0, or -1 with a 400
 * naming the member. */
static int only_members(call_t *c, json_t *o, const char *const *allowed, const char *prefix)
{
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v)
    {
        bool ok = false;
        for (int i = 0; allowed[i] && !ok; i++)
            ok = strcmp(k, allowed[i]) == 0;
        if (!ok) {
            char field[300];
            snprintf(field, sizeof field, "%s%.250s", prefix, k);
            BAD(c, field, "unknown member '%.250s'", k);
            return -1;
        }
    }
    return 0;
}

/* A query parameter: 1 found (decoded into out), 0 absent, -1 (400 written). */
static int query_param(call_t *c, const char *name, ls_buf_t *out)
{
    int rc = ls_url_query_get(c->req->query, name, out);
    if (rc < 0) BAD(c, name, "malformed %%-escape in query parameter %s", name);
    return rc;
}

/* An integer query parameter within [lo, hi]; def when absent. 0 or -1 (400). */
static int query_int(call_t *c, const char *name, int64_t lo, int64_t hi, int64_t def, int64_t *out)
{
    ls_buf_t v;
    ls_buf_init(&v);
    int rc = query_param(c, name, &v);
    *out = def;
    if (rc == 1) {
        char *end;
        long long x = strtoll((const char *)v.data, &end, 10);
        if (!v.len || *end || x < lo || x > hi) {
            BAD(c, name, "%s must be an integer from %lld to %lld", name, (long long)lo,
                (long long)hi);
            rc = -1;
        } else {
            *out = x;
        }
    }
    ls_buf_free(&v);
    return rc < 0 ? -1 : 0;
}

typedef struct page {
    int64_t limit;
    char token[SEG_MAX + 1]; /* "" = first page */
} page_t;

static int page_parse(call_t *c, page_t *pg)
{
    if (query_int(c, "limit", 1, LS_API_PAGE_MAX, PAGE_DEFAULT, &pg->limit) != 0) return -1;
    ls_buf_t t;
    ls_buf_init(&t);
    int rc = query_param(c, "pageToken", &t);
    snprintf(pg->token, sizeof pg->token, "%s", rc == 1 ? (const char *)t.data : "");
    ls_buf_free(&t);
    return rc < 0 ? -1 : 0;
}

/* Whether name goes on the page (after the token); sets nextPageToken and
 * returns false once the page is full. */
static bool page_take(page_t *pg, const char *name, const char *last, int *taken, json_t *out)
{
    if (pg->token[0] && strcmp(name, pg->token) <= 0) return false;
    if (*taken == pg->limit) {
        if (!json_object_get(out, "nextPageToken"))
            json_object_set_new(out, "nextPageToken", json_string(last));
        return false;
    }
    (*taken)++;
    return true;
}

/* ----------------------------------------------------- the Kafka connection */

/* Connects k to addr and registers it for ls_api_quiesce. 0, or -1 with
 * k->err set (k closed). */
static int kafka_dial(ls_api_t *a, ls_admin_conn_t *k, const char *addr)
{
    if (ls_admin_connect(k, "lakestream-rest-api", addr, a->cfg.timeout_ms) != 0) {
        char why[sizeof k->err];
        snprintf(why, sizeof why, "%s", k->err);
        snprintf(k->err, sizeof k->err, "Kafka listener %.300s: %.180s", addr, why);
        return -1;
    }
    pthread_mutex_lock(&a->mu);
    bool ok = !a->quiesced && a->nfds < MAX_CONNS;
    if (ok) a->fds[a->nfds++] = k->fd;
    pthread_mutex_unlock(&a->mu);
    if (!ok) {
        ls_admin_close(k);
        snprintf(k->err, sizeof k->err, "the broker is stopping");
        return -1;
    }
    return 0;
}

static int kafka_open(call_t *c, ls_admin_conn_t *k)
{
    char addr[300] = "";
    c->api->cfg.kafka_addr(c->api->cfg.ctx, addr, sizeof addr);
    if (!addr[0]) {
        UNAVAILABLE(c, "no PLAINTEXT Kafka listener is up (the API writes through one: add "
                       "one on 127.0.0.1 to listeners)");
        return -1;
    }
    if (kafka_dial(c->api, k, addr) != 0) {
        UNAVAILABLE(c, "%s", k->err);
        return -1;
    }
    return 0;
}

static void kafka_close(call_t *c, ls_admin_conn_t *k)
{
    ls_api_t *a = c->api;
    pthread_mutex_lock(&a->mu);
    for (int i = 0; i < a->nfds; i++)
        if (a->fds[i] == k->fd) {
            a->fds[i] = a->fds[--a->nfds];
            break;
        }
    pthread_mutex_unlock(&a->mu);
    ls_admin_close(k);
}

void ls_api_quiesce(ls_api_t *a)
{
    if (!a) return;
    pthread_mutex_lock(&a->mu);
    a->quiesced = true;
    for (int i = 0; i < a->nfds; i++) /* their reads return at once: the handlers answer 503 */
        shutdown(a->fds[i], SHUT_RDWR);
    pthread_mutex_unlock(&a->mu);
}

static char *kstr_dup(ls_arena_t *a, ls_kstr_t s)
{
    size_t n = s.len > 0 ? (size_t)s.len : 0;
    char *p = ls_arena_alloc(a, n + 1);
    if (n) memcpy(p, s.ptr, n);
    p[n] = 0;
    return p;
}

/* The index of the key of keys[0..n) a refusal's message names (the longest
 * one: "a.b" before "a"), or -1. */
static int key_named(const char *msg, const char *const *keys, int n)
{
    int best = -1;
    for (int i = 0; i < n; i++)
        if (keys[i] && strstr(msg, keys[i]) && (best < 0 || strlen(keys[i]) > strlen(keys[best])))
            best = i;
    return best;
}

/* A Kafka error code as the HTTP answer. field: the body member a
 * validation failure is about (NULL: the code decides). */
static void kafka_refusal(call_t *c, int16_t code, const char *msg, const char *field)
{
    switch (code) {
    case LS_KERR_UNKNOWN_TOPIC_OR_PARTITION:
    case LS_KERR_UNKNOWN_TOPIC_ID: NOT_FOUND(c, "%s", msg); return;
    case LS_KERR_TOPIC_ALREADY_EXISTS: CONFLICT(c, "name", "%s", msg); return;
    case LS_KERR_INVALID_PARTITIONS:
    case LS_KERR_POLICY_VIOLATION: BAD(c, field ? field : "partitions", "%s", msg); return;
    case LS_KERR_INVALID_REPLICATION_FACTOR:
        BAD(c, field ? field : "replicationFactor", "%s", msg);
        return;
    case LS_KERR_INVALID_TOPIC_EXCEPTION: BAD(c, "name", "%s", msg); return;
    case LS_KERR_INVALID_CONFIG:
    case LS_KERR_INVALID_REQUEST: BAD(c, field ? field : "body", "%s", msg); return;
    case LS_KERR_REQUEST_TIMED_OUT: api_error(c->resp, 504, "Timeout", NULL, "%s", msg); return;
    default: {
        ls_admin_errbuf_t eb;
        api_error(c->resp, 503, "ServiceUnavailable", NULL, "%s (Kafka %s)", msg,
                  ls_admin_error_name(code, &eb));
        return;
    }
    }
}

/* ---------------------------------------------------------------- streams */

static json_t *stream_json(ls_api_t *api, const ls_stream_t *s)
{
    char id[37];
    ls_uuid_format(&s->id, id);
    json_t *configs = json_object();
    int rf = 1;
    for (int i = 0; i < s->nconfig; i++) {
        if (strcmp(s->config[i].key, LS_KAFKA_RF_KEY) == 0)
            rf = atoi(s->config[i].value);
        else if (strcmp(s->config[i].key, LS_POLICY_SINCE_KEY) != 0) /* the broker's own */
            json_object_set_new(configs, s->config[i].key, json_string(s->config[i].value));
    }
    json_t *o =
        json_pack("{s:s, s:s, s:s, s:i, s:i, s:I, s:o, s:{s:s, s:I}}", "name", s->name, "namespace",
                  s->ns, "id", id, "partitions", (int)s->partitions, "replicationFactor", rf,
                  "createdMs", (json_int_t)s->created_ms, "configs", configs, "layout", "type",
                  "indexed", "streamNumber", (json_int_t)s->stream_no);
    /* the table its policy names (resolved as compaction resolves it) */
    ls_policy_t p;
    ls_namespace_t *ns = NULL;
    char err[512], table[256];
    if (o && ls_policy_for_stream(api->cfg.catalog, s, api->cfg.table_defaults,
                                  api->cfg.ntable_defaults, &p, &ns, err, sizeof err) == LS_OK) {
        json_t *t = json_pack("{s:b}", "enabled", p.enabled);
        if (ls_policy_table_name(&p, s->ns, s->name, table, sizeof table, err, sizeof err) ==
            LS_OK) {
            json_object_set_new(t, "namespace", json_string(s->ns));
            json_object_set_new(t, "name", json_string(table));
        }
        json_object_set_new(o, "table", t);
    }
    ls_namespace_release(ns);
    return o;
}

static void list_streams(call_t *c)
{
    page_t pg;
    if (page_parse(c, &pg) != 0) return;
    ls_buf_t nsb;
    ls_buf_init(&nsb);
    int has_ns = query_param(c, "namespace", &nsb);
    if (has_ns < 0) {
        ls_buf_free(&nsb);
        return;
    }
    int n;
    ls_stream_t **v =
        ls_catalog_list(c->api->cfg.catalog, has_ns == 1 ? (const char *)nsb.data : NULL, &n);
    ls_buf_free(&nsb);
    json_t *arr = json_array(), *out = json_object();
    int taken = 0;
    for (int i = 0; i < n; i++)
        if (page_take(&pg, v[i]->name, i > 0 ? v[i - 1]->name : "", &taken, out))
            json_array_append_new(arr, stream_json(c->api, v[i]));
    ls_stream_list_release(v, n);
    json_object_set_new(out, "streams", arr);
    ls_http_send_json(c->resp, 200, out);
}

/* The stream named by segment 1 (kept), or NULL with a 404 written. */
static ls_stream_t *stream_of(call_t *c)
{
    ls_stream_t *s = ls_catalog_lookup(c->api->cfg.catalog, LS_DEFAULT_NAMESPACE, c->seg[1]);
    if (!s) NOT_FOUND(c, "stream '%.300s' does not exist", c->seg[1]);
    return s;
}

/* Per partition: the earliest and the latest offset (ListOffsets). */
static json_t *partition_offsets(ls_admin_conn_t *k, const ls_stream_t *s)
{
    int32_t n = s->partitions;
    json_t *arr = json_array();
    int64_t *lo = ls_arena_alloc(k->arena, (size_t)n * sizeof *lo);
    for (int32_t i = 0; i < n; i++)
        lo[i] = -1; /* a partition the answer leaves out */
    for (int pass = 0; pass < 2; pass++) {
        ls_kafka_ListOffsetsRequest_ListOffsetsPartition *parts =
            ls_arena_alloc(k->arena, (size_t)n * sizeof *parts);
        for (int32_t i = 0; i < n; i++)
            parts[i] = (ls_kafka_ListOffsetsRequest_ListOffsetsPartition){i, -1, pass ? -1 : -2};
        ls_kafka_ListOffsetsRequest_ListOffsetsTopic t = {ls_kstr_c(s->name), parts, n};
        ls_kafka_ListOffsetsRequest q = {.ReplicaId = -1, .Topics = &t, .NumTopics = 1};
        ls_kafka_ListOffsetsResponse r;
        if (LS_ADMIN_CALL(k, ListOffsets, LIST_OFFSETS, 4, &q, &r) != 0 || r.NumTopics != 1) {
            json_decref(arr);
            return NULL;
        }
        for (int32_t i = 0; i < r.Topics[0].NumPartitions; i++) {
            const ls_kafka_ListOffsetsResponse_ListOffsetsPartitionResponse *p =
                &r.Topics[0].Partitions[i];
            if (p->PartitionIndex < 0 || p->PartitionIndex >= n) continue;
            if (!pass) {
                lo[p->PartitionIndex] = p->ErrorCode ? -1 : p->Offset;
                continue;
            }
            json_array_append_new(arr, json_pack("{s:i, s:I, s:I}", "partition",
                                                 (int)p->PartitionIndex, "earliestOffset",
                                                 (json_int_t)lo[p->PartitionIndex], "latestOffset",
                                                 (json_int_t)(p->ErrorCode ? -1 : p->Offset)));
        }
    }
    return arr;
}

static void get_stream(call_t *c)
{
    ls_stream_t *s = stream_of(c);
    if (!s) return;
    json_t *o = stream_json(c->api, s);
    ls_admin_conn_t k;
    if (kafka_open(c, &k) != 0) {
        json_decref(o);
        ls_stream_release(s);
        return;
    }
    json_t *offs = partition_offsets(&k, s);
    if (!offs) {
        UNAVAILABLE(c, "ListOffsets: %s", k.err);
        json_decref(o);
    } else {
        json_object_set_new(o, "partitionOffsets", offs);
        ls_http_send_json(c->resp, 200, o);
    }
    kafka_close(c, &k);
    ls_stream_release(s);
}

/* Collects {"key": "value"} of member `name` of body b as configs; the
 * policy member's keys become lakestream.table.* configs. NULL values are
 * kept (NULL) for PATCH's "unset". 0, or -1 (400 written). */
typedef struct kv_list {
    const char *key[LS_ADMIN_POLICY_MAX_EDITS * 2];   /* full keys */
    const char *given[LS_ADMIN_POLICY_MAX_EDITS * 2]; /* as the body names them */
    const char *value[LS_ADMIN_POLICY_MAX_EDITS * 2];
    char full[LS_ADMIN_POLICY_MAX_EDITS * 2][LS_ADMIN_POLICY_KEY_MAX];
    int n;
} kv_list_t;

/* "<member>.<key as given>" of entry i into field. */
static const char *kv_field(const kv_list_t *l, int i, const char *member, char *field, size_t cap)
{
    snprintf(field, cap, "%s.%.250s", member, l->given[i]);
    return field;
}

static int kv_collect(call_t *c, json_t *obj, const char *member, bool policy, bool nulls,
                      kv_list_t *l)
{
    if (!obj) return 0;
    if (!json_is_object(obj)) {
        BAD(c, member, "%s must be an object of string values", member);
        return -1;
    }
    const char *k;
    json_t *v;
    json_object_foreach(obj, k, v)
    {
        char field[300];
        snprintf(field, sizeof field, "%s.%.250s", member, k);
        if (l->n >= (int)(sizeof l->key / sizeof l->key[0])) {
            BAD(c, member, "too many entries in %s", member);
            return -1;
        }
        if (!(json_is_string(v) || (nulls && json_is_null(v)))) {
            BAD(c, field, "%s must be a string%s", field, nulls ? " or null (unset)" : "");
            return -1;
        }
        if (strlen(k) >= LS_ADMIN_POLICY_KEY_MAX) {
            BAD(c, field, "key too long");
            return -1;
        }
        l->given[l->n] = k;
        l->key[l->n] = policy ? ls_admin_policy_key(k, l->full[l->n], sizeof l->full[0]) : k;
        l->value[l->n] = json_is_string(v) ? json_string_value(v) : NULL;
        l->n++;
    }
    return 0;
}

static void create_stream(call_t *c)
{
    json_t *b = body_object(c);
    if (!b) return;
    static const char *const allowed[] = {"name",    "partitions", "replicationFactor",
                                          "configs", "policy",     NULL};
    json_t *jname = json_object_get(b, "name"), *jparts = json_object_get(b, "partitions"),
           *jrf = json_object_get(b, "replicationFactor");
    kv_list_t *l = LS_NEW(kv_list_t);
    char perr[768];
    if (only_members(c, b, allowed, "") != 0) goto out;
    if (!json_is_string(jname)) {
        BAD(c, "name", "name (a string) is required");
        goto out;
    }
    if (jparts && (!json_is_integer(jparts) || json_integer_value(jparts) < 1 ||
                   json_integer_value(jparts) > INT32_MAX)) {
        BAD(c, "partitions", "partitions must be a positive integer");
        goto out;
    }
    if (jrf && (!json_is_integer(jrf) || json_integer_value(jrf) < 1 ||
                json_integer_value(jrf) > INT16_MAX)) {
        BAD(c, "replicationFactor", "replicationFactor must be a positive integer");
        goto out;
    }
    if (kv_collect(c, json_object_get(b, "configs"), "configs", false, false, l) != 0) goto out;
    int nconfigs = l->n;
    if (kv_collect(c, json_object_get(b, "policy"), "policy", true, false, l) != 0) goto out;
    /* policy values are checked as the tables CLI checks them, naming the key */
    for (int i = nconfigs; i < l->n; i++) {
        ls_admin_policy_edit_t e;
        memset(&e, 0, sizeof e);
        if (ls_admin_policy_edit_set(&e, l->key[i], l->value[i], false, perr, sizeof perr) !=
            LS_OK) {
            char field[300];
            BAD(c, kv_field(l, i, "policy", field, sizeof field), "%s", perr);
            goto out;
        }
    }
    for (int i = nconfigs; i < l->n; i++)
        for (int j = 0; j < nconfigs; j++)
            if (strcmp(l->key[i], l->key[j]) == 0) {
                char field[300];
                BAD(c, kv_field(l, i, "policy", field, sizeof field),
                    "%s is given both in configs and in policy", l->key[i]);
                goto out;
            }
    ls_admin_conn_t k;
    if (kafka_open(c, &k) != 0) goto out;
    ls_kafka_CreateTopicsRequest_CreatableTopicConfig *cf =
        ls_arena_alloc(k.arena, (size_t)(l->n + 1) * sizeof *cf);
    for (int i = 0; i < l->n; i++)
        cf[i] = (ls_kafka_CreateTopicsRequest_CreatableTopicConfig){ls_kstr_c(l->key[i]),
                                                                    ls_kstr_c(l->value[i])};
    const char *name = json_string_value(jname);
    ls_kafka_CreateTopicsRequest_CreatableTopic t = {
        .Name = ls_kstr_c(name),
        .NumPartitions = jparts ? (int32_t)json_integer_value(jparts) : -1,
        .ReplicationFactor = jrf ? (int16_t)json_integer_value(jrf) : -1,
        .NumAssignments = 0,
        .Configs = cf,
        .NumConfigs = l->n};
    ls_kafka_CreateTopicsRequest q = {
        .Topics = &t, .NumTopics = 1, .TimeoutMs = (int32_t)c->api->cfg.timeout_ms};
    ls_kafka_CreateTopicsResponse r;
    if (LS_ADMIN_CALL(&k, CreateTopics, CREATE_TOPICS, 5, &q, &r) != 0 || r.NumTopics != 1) {
        UNAVAILABLE(c, "CreateTopics: %s", k.err);
    } else if (r.Topics[0].ErrorCode) {
        const char *msg = kstr_dup(k.arena, r.Topics[0].ErrorMessage);
        char field[300];
        int i = key_named(msg, l->key, l->n); /* the member the key was given in */
        kafka_refusal(c, r.Topics[0].ErrorCode, msg,
                      i >= 0
                          ? kv_field(l, i, i < nconfigs ? "configs" : "policy", field, sizeof field)
                          : NULL);
    } else {
        /* the broker's catalog copy has it now (the create wrote through it) */
        ls_stream_t *s = ls_catalog_lookup(c->api->cfg.catalog, LS_DEFAULT_NAMESPACE, name);
        if (s) {
            ls_http_send_json(c->resp, 201, stream_json(c->api, s));
            ls_stream_release(s);
        } else {
            CONFLICT(c, "name", "stream '%.300s' was deleted again before it could be read", name);
        }
    }
    kafka_close(c, &k);
out:
    ls_free(l);
    json_decref(b);
}

static void delete_stream(call_t *c)
{
    ls_admin_conn_t k;
    if (kafka_open(c, &k) != 0) return;
    ls_kstr_t name = ls_kstr_c(c->seg[1]);
    ls_kafka_DeleteTopicsRequest q = {
        .TopicNames = &name, .NumTopicNames = 1, .TimeoutMs = (int32_t)c->api->cfg.timeout_ms};
    ls_kafka_DeleteTopicsResponse r;
    if (LS_ADMIN_CALL(&k, DeleteTopics, DELETE_TOPICS, 5, &q, &r) != 0 || r.NumResponses != 1)
        UNAVAILABLE(c, "DeleteTopics: %s", k.err);
    else if (r.Responses[0].ErrorCode)
        kafka_refusal(c, r.Responses[0].ErrorCode, kstr_dup(k.arena, r.Responses[0].ErrorMessage),
                      NULL);
    else {
        c->resp->status = 204;
        c->resp->body.len = 0;
    }
    kafka_close(c, &k);
}

/* IncrementalAlterConfigs of stream name: SET of non-NULL values, DELETE of
 * NULL ones (the body's "configs"). 0, or -1 with the answer written. */
static int alter_configs(call_t *c, ls_admin_conn_t *k, const char *name, const kv_list_t *l,
                         bool validate_only)
{
    ls_kafka_IncrementalAlterConfigsRequest_AlterableConfig *ops =
        ls_arena_alloc(k->arena, (size_t)(l->n + 1) * sizeof *ops);
    for (int i = 0; i < l->n; i++)
        ops[i] = (ls_kafka_IncrementalAlterConfigsRequest_AlterableConfig){
            ls_kstr_c(l->key[i]), l->value[i] ? LS_KAFKA_CONFIG_OP_SET : LS_KAFKA_CONFIG_OP_DELETE,
            l->value[i] ? ls_kstr_c(l->value[i]) : ls_kstr_null()};
    ls_kafka_IncrementalAlterConfigsRequest_AlterConfigsResource res = {
        .ResourceType = LS_KAFKA_RESOURCE_TOPIC,
        .ResourceName = ls_kstr_c(name),
        .Configs = ops,
        .NumConfigs = l->n};
    ls_kafka_IncrementalAlterConfigsRequest q = {
        .Resources = &res, .NumResources = 1, .ValidateOnly = validate_only};
    ls_kafka_IncrementalAlterConfigsResponse r;
    if (LS_ADMIN_CALL(k, IncrementalAlterConfigs, INCREMENTAL_ALTER_CONFIGS, 1, &q, &r) != 0 ||
        r.NumResponses != 1) {
        UNAVAILABLE(c, "IncrementalAlterConfigs: %s", k->err);
        return -1;
    }
    if (r.Responses[0].ErrorCode) {
        const char *msg = kstr_dup(k->arena, r.Responses[0].ErrorMessage);
        char field[300];
        int i = key_named(msg, l->key, l->n);
        kafka_refusal(c, r.Responses[0].ErrorCode, msg,
                      i >= 0 ? kv_field(l, i, "configs", field, sizeof field) : "configs");
        return -1;
    }
    return 0;
}

/* CreatePartitions of stream name to count partitions. 0, or -1 answered. */
static int add_partitions(call_t *c, ls_admin_conn_t *k, const char *name, int32_t count,
                          bool validate_only)
{
    ls_kafka_CreatePartitionsRequest_CreatePartitionsTopic t = {
        .Name = ls_kstr_c(name), .Count = count, .NumAssignments = -1};
    ls_kafka_CreatePartitionsRequest q = {.Topics = &t,
                                          .NumTopics = 1,
                                          .TimeoutMs = (int32_t)c->api->cfg.timeout_ms,
                                          .ValidateOnly = validate_only};
    ls_kafka_CreatePartitionsResponse r;
    if (LS_ADMIN_CALL(k, CreatePartitions, CREATE_PARTITIONS, 2, &q, &r) != 0 ||
        r.NumResults != 1) {
        UNAVAILABLE(c, "CreatePartitions: %s", k->err);
        return -1;
    }
    if (r.Results[0].ErrorCode) {
        kafka_refusal(c, r.Results[0].ErrorCode, kstr_dup(k->arena, r.Results[0].ErrorMessage),
                      "partitions");
        return -1;
    }
    return 0;
}

static void patch_stream(call_t *c)
{
    json_t *b = body_object(c);
    if (!b) return;
    static const char *const allowed[] = {"partitions", "configs", NULL};
    json_t *jparts = json_object_get(b, "partitions");
    kv_list_t *l = LS_NEW(kv_list_t);
    ls_stream_t *s = NULL;
    ls_admin_conn_t k = {.fd = -1};
    if (only_members(c, b, allowed, "") != 0) goto out;
    if (jparts && (!json_is_integer(jparts) || json_integer_value(jparts) < 1 ||
                   json_integer_value(jparts) > INT32_MAX)) {
        BAD(c, "partitions", "partitions must be a positive integer");
        goto out;
    }
    if (kv_collect(c, json_object_get(b, "configs"), "configs", false, true, l) != 0) goto out;
    if (!(s = stream_of(c))) goto out;
    if (kafka_open(c, &k) != 0) goto out;
    /* both changes are validated by the broker before either is made, so a
     * refused body changes nothing */
    bool grow = jparts && json_integer_value(jparts) != s->partitions;
    for (int validate = 1; validate >= 0; validate--) {
        if (l->n > 0 && alter_configs(c, &k, s->name, l, validate) != 0) goto out;
        if (grow &&
            add_partitions(c, &k, s->name, (int32_t)json_integer_value(jparts), validate) != 0)
            goto out;
    }
    ls_stream_release(s);
    s = ls_catalog_lookup(c->api->cfg.catalog, LS_DEFAULT_NAMESPACE, c->seg[1]);
    if (s)
        ls_http_send_json(c->resp, 200, stream_json(c->api, s));
    else
        NOT_FOUND(c, "stream '%.300s' was deleted meanwhile", c->seg[1]);
out:
    kafka_close(c, &k);
    ls_stream_release(s);
    ls_free(l);
    json_decref(b);
}

/* ------------------------------------------------------------- policies */

static json_t *policy_json(const char *stream, const ls_admin_policy_t *p)
{
    json_t *fields = json_array(), *values = json_object();
    for (int i = 0; i < p->nrows; i++) {
        json_array_append_new(fields, json_pack("{s:s, s:s, s:s}", "key", p->rows[i].key, "value",
                                                p->rows[i].value, "source", p->rows[i].source));
        if (ls_policy_field_of(p->rows[i].key) >= 0)
            json_object_set_new(values, p->rows[i].key + strlen(LS_POLICY_PREFIX),
                                json_string(p->rows[i].value));
    }
    json_t *st = json_object();
    if (p->has_lag) json_object_set_new(st, "lagMs", json_integer(p->lag_ms));
    if (p->has_skipped) json_object_set_new(st, "skippedRecords", json_integer(p->skipped));
    if (p->held) json_object_set_new(st, "heldReason", json_string(p->held));
    if (p->current) json_object_set_new(st, "currentTable", json_string(p->current));
    if (p->current_reason)
        json_object_set_new(st, "currentTableReason", json_string(p->current_reason));
    return json_pack("{s:s, s:o, s:o, s:o}", "stream", stream, "policy", values, "fields", fields,
                     "status", st);
}

static void stream_policy(call_t *c)
{
    bool get = is(c, "GET"), put = is(c, "PUT");
    json_t *b = NULL;
    kv_list_t *l = LS_NEW(kv_list_t);
    ls_admin_policy_edit_t e;
    memset(&e, 0, sizeof e);
    ls_admin_conn_t k = {.fd = -1};
    char err[768], field[300];
    if (!get) {
        if (!(b = body_object(c))) goto out;
        static const char *const allowed[] = {"policy", NULL};
        if (only_members(c, b, allowed, "") != 0) goto out;
        json_t *pol = json_object_get(b, "policy");
        if (!pol) {
            BAD(c, "policy", "policy (an object of policy keys) is required");
            goto out;
        }
        if (kv_collect(c, pol, "policy", true, !put, l) != 0) goto out;
        for (int i = 0; i < l->n; i++) {
            ls_status st = l->value[i] ? ls_admin_policy_edit_set(&e, l->key[i], l->value[i], false,
                                                                  err, sizeof err)
                                       : ls_admin_policy_edit_unset(&e, l->key[i], err, sizeof err);
            if (st != LS_OK) {
                BAD(c, kv_field(l, i, "policy", field, sizeof field), "%s", err);
                goto out;
            }
        }
    }
    ls_stream_t *s = stream_of(c);
    if (!s) goto out;
    if (put) /* PUT: every field the body leaves out returns to its inherited value */
        for (int f = 0; f < LS_POLICY_NFIELDS; f++) {
            const char *key = ls_policy_key((ls_policy_field)f);
            bool given = false;
            for (int i = 0; i < e.nset && !given; i++)
                given = strcmp(e.set_k[i], key) == 0;
            if (!given && ls_stream_config_get(s, key) &&
                ls_admin_policy_edit_unset(&e, key, err, sizeof err) != LS_OK) {
                BAD(c, "policy", "%s", err);
                ls_stream_release(s);
                goto out;
            }
        }
    ls_stream_release(s);
    if (kafka_open(c, &k) != 0) goto out;
    int16_t kerr = 0;
    if (!get && e.nset + e.nunset > 0 && ls_admin_policy_alter(&k, c->seg[1], &e, false, &kerr)) {
        int i = key_named(k.err, l->key, l->n);
        if (kerr)
            kafka_refusal(c, kerr, k.err,
                          i >= 0 ? kv_field(l, i, "policy", field, sizeof field) : "policy");
        else
            UNAVAILABLE(c, "IncrementalAlterConfigs: %s", k.err);
        goto out;
    }
    ls_admin_policy_t p;
    if (ls_admin_policy_describe(&k, c->seg[1], &p, &kerr) != 0) {
        if (kerr)
            kafka_refusal(c, kerr, k.err, NULL);
        else
            UNAVAILABLE(c, "DescribeConfigs: %s", k.err);
        goto out;
    }
    ls_http_send_json(c->resp, 200, policy_json(c->seg[1], &p));
out:
    kafka_close(c, &k);
    ls_admin_policy_edit_free(&e);
    ls_free(l);
    json_decref(b);
}

/* ----------------------------------------------------------- namespaces */

static json_t *ns_json(ls_api_t *api, const char *name)
{
    json_t *pol = json_object();
    ls_namespace_t *rec = ls_catalog_namespace(api->cfg.catalog, name);
    for (int i = 0; rec && i < rec->nprops; i++)
        if (ls_policy_field_of(rec->props[i].key) >= 0)
            json_object_set_new(pol, rec->props[i].key + strlen(LS_POLICY_PREFIX),
                                json_string(rec->props[i].value));
    ls_namespace_release(rec);
    int n;
    ls_stream_t **v = ls_catalog_list(api->cfg.catalog, name, &n);
    ls_stream_list_release(v, n);
    return json_pack("{s:s, s:o, s:i}", "name", name, "policy", pol, "streams", n);
}

/* Whether ns exists: it has a record, or streams (the default namespace). */
static bool ns_exists(ls_api_t *api, const char *ns)
{
    ls_namespace_t *rec = ls_catalog_namespace(api->cfg.catalog, ns);
    ls_namespace_release(rec);
    if (rec || strcmp(ns, LS_DEFAULT_NAMESPACE) == 0) return true;
    int n;
    ls_stream_t **v = ls_catalog_list(api->cfg.catalog, ns, &n);
    ls_stream_list_release(v, n);
    return n > 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void list_namespaces(call_t *c)
{
    page_t pg;
    if (page_parse(c, &pg) != 0) return;
    /* the namespaces with a record or a stream, and the default one */
    int nrec, nstreams;
    ls_namespace_t **recs = ls_catalog_namespaces(c->api->cfg.catalog, &nrec);
    ls_stream_t **v = ls_catalog_list(c->api->cfg.catalog, NULL, &nstreams);
    char **names = LS_NEWN(char *, (size_t)(nrec + nstreams) + 1);
    size_t n = 0;
    names[n++] = ls_strdup(LS_DEFAULT_NAMESPACE);
    for (int i = 0; i < nrec; i++) {
        names[n++] = ls_strdup(recs[i]->name);
        ls_namespace_release(recs[i]);
    }
    ls_free(recs);
    for (int i = 0; i < nstreams; i++)
        names[n++] = ls_strdup(v[i]->ns);
    ls_stream_list_release(v, nstreams);
    qsort(names, n, sizeof *names, cmp_str);
    json_t *arr = json_array(), *out = json_object();
    int taken = 0;
    const char *last = "";
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && strcmp(names[i], names[i - 1]) == 0) continue;
        if (page_take(&pg, names[i], last, &taken, out))
            json_array_append_new(arr, ns_json(c->api, names[i]));
        last = names[i];
    }
    for (size_t i = 0; i < n; i++)
        ls_free(names[i]);
    ls_free(names);
    json_object_set_new(out, "namespaces", arr);
    ls_http_send_json(c->resp, 200, out);
}

/* Applies the body's {"policy": {...}} to namespace ns (PUT: replaces the
 * set; PATCH: null unsets). 0, or -1 with the answer written. */
static int ns_apply(call_t *c, const char *ns, json_t *pol, bool replace, bool create)
{
    kv_list_t *l = LS_NEW(kv_list_t);
    ls_admin_policy_edit_t e;
    memset(&e, 0, sizeof e);
    char err[768], field[300];
    int rc = -1;
    if (pol && kv_collect(c, pol, "policy", true, !replace, l) != 0) goto out;
    for (int i = 0; i < l->n; i++) {
        ls_status st = l->value[i] ? ls_admin_policy_edit_set(&e, l->key[i], l->value[i], true, err,
                                                              sizeof err)
                                   : ls_admin_policy_edit_unset(&e, l->key[i], err, sizeof err);
        if (st != LS_OK) {
            BAD(c, kv_field(l, i, "policy", field, sizeof field), "%s", err);
            goto out;
        }
    }
    if (replace) {
        ls_namespace_t *rec = ls_catalog_namespace(c->api->cfg.catalog, ns);
        for (int i = 0; rec && i < rec->nprops; i++) {
            bool given = false;
            for (int j = 0; j < e.nset && !given; j++)
                given = strcmp(e.set_k[j], rec->props[i].key) == 0;
            if (!given && ls_policy_field_of(rec->props[i].key) >= 0 &&
                ls_admin_policy_edit_unset(&e, rec->props[i].key, err, sizeof err) != LS_OK) {
                BAD(c, "policy", "%s", err);
                ls_namespace_release(rec);
                goto out;
            }
        }
        ls_namespace_release(rec);
    }
    ls_status st = ls_admin_ns_policy_update(c->api->cfg.catalog, ns, &e, create, err, sizeof err);
    if (st == LS_EINVAL) {
        BAD(c, "policy", "%s", err);
        goto out;
    }
    if (st != LS_OK) {
        UNAVAILABLE(c, "namespace %s: %s", ns, err[0] ? err : ls_status_str(st));
        goto out;
    }
    rc = 0;
out:
    ls_admin_policy_edit_free(&e);
    ls_free(l);
    return rc;
}

static void create_namespace(call_t *c)
{
    json_t *b = body_object(c);
    if (!b) return;
    static const char *const allowed[] = {"name", "policy", NULL};
    json_t *jname = json_object_get(b, "name");
    const char *ns = json_string_value(jname);
    if (only_members(c, b, allowed, "") != 0) goto out;
    if (!ns || !ls_stream_name_valid(ns)) {
        BAD(c, "name", "name must be 1 to 249 characters of [a-zA-Z0-9._-], not '.' or '..'");
        goto out;
    }
    if (ns_exists(c->api, ns)) {
        CONFLICT(c, "name", "namespace '%s' exists", ns);
        goto out;
    }
    if (ns_apply(c, ns, json_object_get(b, "policy"), false, true) == 0)
        ls_http_send_json(c->resp, 201, ns_json(c->api, ns));
out:
    json_decref(b);
}

static void ns_policy(call_t *c)
{
    const char *ns = c->seg[1];
    if (!ns_exists(c->api, ns)) {
        NOT_FOUND(c, "namespace '%.300s' does not exist", ns);
        return;
    }
    if (!is(c, "GET")) {
        json_t *b = body_object(c);
        if (!b) return;
        static const char *const allowed[] = {"policy", NULL};
        json_t *pol = json_object_get(b, "policy");
        int rc = only_members(c, b, allowed, "");
        if (rc == 0 && !pol) {
            BAD(c, "policy", "policy (an object of policy keys) is required");
            rc = -1;
        }
        if (rc == 0) rc = ns_apply(c, ns, pol, is(c, "PUT"), false);
        json_decref(b);
        if (rc != 0) return;
    }
    json_t *o = ns_json(c->api, ns);
    ls_http_send_json(
        c->resp, 200,
        json_pack("{s:s, s:O}", "namespace", ns, "policy", json_object_get(o, "policy")));
    json_decref(o);
}

/* --------------------------------------------------------------- tables */

/* The stream whose policy names table ns.name (kept), or NULL. */
static ls_stream_t *stream_of_table(ls_api_t *api, const char *ns, const char *name)
{
    int n;
    ls_stream_t **v = ls_catalog_list(api->cfg.catalog, ns, &n), *found = NULL;
    for (int i = 0; i < n && !found; i++) {
        ls_policy_t p;
        ls_namespace_t *nsr = NULL;
        char err[512], table[256];
        if (ls_policy_for_stream(api->cfg.catalog, v[i], api->cfg.table_defaults,
                                 api->cfg.ntable_defaults, &p, &nsr, err, sizeof err) == LS_OK &&
            ls_policy_table_name(&p, v[i]->ns, v[i]->name, table, sizeof table, err, sizeof err) ==
                LS_OK &&
            strcmp(table, name) == 0)
            found = ls_stream_keep(v[i]);
        ls_namespace_release(nsr);
    }
    ls_stream_list_release(v, n);
    return found;
}

static json_t *table_summary(const ls_tcat_pointer_t *p)
{
    return json_pack("{s:s, s:s, s:s, s:I}", "namespace", p->ns, "name", p->name,
                     "metadataLocation", p->metadata_location, "lastCommitMs",
                     (json_int_t)p->updated_ms);
}

static void list_tables(call_t *c)
{
    page_t pg;
    if (page_parse(c, &pg) != 0) return;
    ls_buf_t nsb;
    ls_buf_init(&nsb);
    int has_ns = query_param(c, "namespace", &nsb);
    if (has_ns < 0) {
        ls_buf_free(&nsb);
        return;
    }
    ls_tcat_pointer_t *v = NULL;
    size_t n = 0;
    ls_status st =
        ls_tcat_list(c->api->cfg.meta, has_ns == 1 ? (const char *)nsb.data : NULL, &v, &n);
    ls_buf_free(&nsb);
    if (st != LS_OK) {
        UNAVAILABLE(c, "table catalog: %s", ls_status_str(st));
        return;
    }
    /* paged by "<namespace>.<name>", the list's order */
    json_t *arr = json_array(), *out = json_object();
    int taken = 0;
    char last[600] = "";
    for (size_t i = 0; i < n; i++) {
        char key[600];
        snprintf(key, sizeof key, "%s.%s", v[i].ns, v[i].name);
        if (page_take(&pg, key, last, &taken, out))
            json_array_append_new(arr, table_summary(&v[i]));
        snprintf(last, sizeof last, "%s", key);
    }
    ls_tcat_list_free(v, n);
    json_object_set_new(out, "tables", arr);
    ls_http_send_json(c->resp, 200, out);
}

/* Snapshot figures of the table's current metadata (its current snapshot's
 * summary, as Iceberg writes it). */
static void table_state(call_t *c, const ls_tcat_pointer_t *p, json_t *o)
{
    ls_buf_t b;
    ls_buf_init(&b);
    ls_status st = ls_objstore_get(c->api->cfg.os, p->metadata_key, 0, UINT64_MAX, &b);
    json_t *md = st == LS_OK ? json_loadb((const char *)b.data, b.len, 0, NULL) : NULL;
    ls_buf_free(&b);
    json_t *snaps = json_object_get(md, "snapshots");
    json_t *cur = json_object_get(md, "current-snapshot-id");
    json_object_set_new(o, "snapshots", json_integer((json_int_t)json_array_size(snaps)));
    if (json_is_integer(cur) && json_integer_value(cur) >= 0)
        json_object_set(o, "currentSnapshotId", cur);
    json_object_set_new(o, "formatVersion",
                        json_integer(json_integer_value(json_object_get(md, "format-version"))));
    size_t i;
    json_t *s;
    json_array_foreach(snaps, i, s)
    {
        if (!json_equal(json_object_get(s, "snapshot-id"), cur)) continue;
        json_t *sum = json_object_get(s, "summary");
        static const char *const keys[][2] = {{"total-records", "rows"},
                                              {"total-data-files", "dataFiles"},
                                              {"total-files-size", "bytes"}};
        for (size_t k = 0; k < 3; k++) {
            const char *v = json_string_value(json_object_get(sum, keys[k][0]));
            json_object_set_new(o, keys[k][1], json_integer(v ? strtoll(v, NULL, 10) : 0));
        }
        json_object_set(o, "lastSnapshotMs", json_object_get(s, "timestamp-ms"));
    }
    if (!json_object_get(o, "rows")) { /* no snapshot yet */
        json_object_set_new(o, "rows", json_integer(0));
        json_object_set_new(o, "dataFiles", json_integer(0));
        json_object_set_new(o, "bytes", json_integer(0));
    }
    if (!md) json_object_set_new(o, "metadataError", json_string("metadata file unreadable"));
    json_decref(md);
}

static void get_table(call_t *c)
{
    ls_tcat_pointer_t p;
    char err[512];
    ls_status st = ls_tcat_get(c->api->cfg.meta, c->seg[1], c->seg[2], &p, err, sizeof err);
    if (st == LS_ENOTFOUND) {
        NOT_FOUND(c, "table '%.200s.%.200s' does not exist", c->seg[1], c->seg[2]);
        return;
    }
    if (st != LS_OK) {
        UNAVAILABLE(c, "table catalog: %s", err[0] ? err : ls_status_str(st));
        return;
    }
    json_t *o = table_summary(&p);
    table_state(c, &p, o);
    /* the stream it materializes: committed offsets and lag */
    ls_stream_t *s = stream_of_table(c->api, p.ns, p.name);
    if (s) {
        json_object_set_new(o, "stream", json_string(s->name));
        ls_table_status_t ts;
        if (ls_table_status_get(c->api->cfg.meta, s->stream_no, p.prefix, &ts) == LS_OK) {
            json_t *arr = json_array();
            for (int32_t i = 0; i < ts.n; i++) /* Kafka's convention: the next offset to take */
                json_array_append_new(arr, json_pack("{s:i, s:I}", "partition", (int)i,
                                                     "committedOffset",
                                                     (json_int_t)(ts.covered[i] + 1)));
            json_object_set_new(o, "committedOffsets", arr);
            json_object_set_new(o, "statusCommitMs", json_integer(ts.commit_ms));
            ls_table_status_clear(&ts);
        }
        ls_admin_conn_t k;
        ls_admin_policy_t pol;
        int16_t kerr;
        if (kafka_open(c, &k) != 0) {
            json_decref(o);
            ls_stream_release(s);
            ls_tcat_pointer_clear(&p);
            return;
        }
        if (ls_admin_policy_describe(&k, s->name, &pol, &kerr) == 0) {
            if (pol.has_lag) json_object_set_new(o, "lagMs", json_integer(pol.lag_ms));
            if (pol.held) json_object_set_new(o, "heldReason", json_string(pol.held));
        }
        kafka_close(c, &k);
        ls_stream_release(s);
    }
    ls_tcat_pointer_clear(&p);
    ls_http_send_json(c->resp, 200, o);
}

/* -------------------------------------------------------------- records */

typedef struct rec_ctx {
    json_t *arr;
    int64_t base, from;
    int64_t limit;
    int64_t next; /* the offset after the last record taken */
} rec_ctx_t;

/* A key or value as the console shows it: text when it is UTF-8 (json too
 * when it parses), else base64. */
static json_t *payload_json(const uint8_t *p, int32_t len)
{
    if (!p || len < 0) return json_null();
    size_t n = (size_t)len > VALUE_PREVIEW_MAX ? VALUE_PREVIEW_MAX : (size_t)len;
    json_t *o = json_pack("{s:i, s:b}", "size", (int)len, "truncated", n < (size_t)len);
    json_t *text = json_stringn((const char *)p, n);
    if (text) {
        json_object_set_new(o, "encoding", json_string("text"));
        json_object_set_new(o, "text", text);
        json_t *j = n == (size_t)len ? json_loadb((const char *)p, n, JSON_DECODE_ANY, NULL) : NULL;
        if (j) json_object_set_new(o, "json", j);
        return o;
    }
    ls_buf_t b;
    ls_buf_init(&b);
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) |
                     (i + 2 < n ? p[i + 2] : 0);
        char q[4] = {tab[v >> 18 & 63], tab[v >> 12 & 63], i + 1 < n ? tab[v >> 6 & 63] : '=',
                     i + 2 < n ? tab[v & 63] : '='};
        ls_buf_append(&b, q, 4);
    }
    json_object_set_new(o, "encoding", json_string("base64"));
    json_object_set_new(o, "base64", json_stringn((const char *)b.data, b.len));
    ls_buf_free(&b);
    return o;
}

static int rec_cb(void *arg, const ls_record_view_t *r)
{
    rec_ctx_t *x = arg;
    int64_t off = x->base + r->offset_delta;
    if (off < x->from) return 0;
    if ((int64_t)json_array_size(x->arr) >= x->limit) return 1;
    json_t *hdrs = json_array();
    const uint8_t *hp = r->headers, *he = r->headers + r->headers_len;
    ls_record_header_t h;
    for (int32_t i = 0; i < r->header_count && ls_record_header_next(&hp, he, &h) == 0; i++) {
        json_t *k = json_stringn(h.key, (size_t)h.key_len);
        json_array_append_new(hdrs, json_pack("{s:o, s:o}", "key", k ? k : json_string("?"),
                                              "value", payload_json(h.value, h.value_len)));
    }
    json_array_append_new(x->arr, json_pack("{s:I, s:I, s:o, s:o, s:o}", "offset", (json_int_t)off,
                                            "timestamp", (json_int_t)r->timestamp, "key",
                                            payload_json(r->key, r->key_len), "value",
                                            payload_json(r->value, r->value_len), "headers", hdrs));
    x->next = off + 1;
    return 0;
}

static void get_records(call_t *c)
{
    char *end;
    long long part = strtoll(c->seg[3], &end, 10);
    int64_t limit, offset;
    ls_stream_t *s = stream_of(c);
    if (!s) return;
    if (!c->seg[3][0] || *end || part < 0 || part >= s->partitions) {
        ls_stream_release(s);
        NOT_FOUND(c, "stream '%.300s' has no partition %.40s", c->seg[1], c->seg[3]);
        return;
    }
    ls_stream_release(s);
    if (query_int(c, "limit", 1, LS_API_RECORDS_MAX, RECORDS_DEFAULT, &limit) != 0 ||
        query_int(c, "offset", -1, INT64_MAX, -1, &offset) != 0)
        return;
    ls_admin_conn_t k;
    if (kafka_open(c, &k) != 0) return;
    json_t *arr = json_array();
    int64_t lo = -1, hi = -1;
    {
        /* the partition's bounds: the default start is the latest `limit` records */
        ls_kafka_ListOffsetsRequest_ListOffsetsPartition lp[2] = {{(int32_t)part, -1, -2},
                                                                  {(int32_t)part, -1, -1}};
        for (int i = 0; i < 2; i++) {
            ls_kafka_ListOffsetsRequest_ListOffsetsTopic t = {ls_kstr_c(c->seg[1]), &lp[i], 1};
            ls_kafka_ListOffsetsRequest q = {.ReplicaId = -1, .Topics = &t, .NumTopics = 1};
            ls_kafka_ListOffsetsResponse r;
            if (LS_ADMIN_CALL(&k, ListOffsets, LIST_OFFSETS, 4, &q, &r) != 0 || r.NumTopics != 1 ||
                r.Topics[0].NumPartitions != 1 || r.Topics[0].Partitions[0].ErrorCode) {
                UNAVAILABLE(c, "ListOffsets: %s", k.err[0] ? k.err : "refused");
                goto out;
            }
            *(i ? &hi : &lo) = r.Topics[0].Partitions[0].Offset;
        }
    }
    if (offset < 0) offset = hi - limit > lo ? hi - limit : lo;
    if (offset < lo || offset > hi) {
        BAD(c, "offset", "offset %lld is outside the partition's %lld..%lld", (long long)offset,
            (long long)lo, (long long)hi);
        goto out;
    }
    rec_ctx_t x = {.arr = arr, .from = offset, .limit = limit, .next = offset};
    /* fetch from `offset` until limit records or the end of the log */
    for (int rounds = 0; rounds < 64 && (int64_t)json_array_size(arr) < limit && x.next < hi;
         rounds++) {
        ls_kafka_FetchRequest_FetchPartition fp = {.Partition = (int32_t)part,
                                                   .CurrentLeaderEpoch = -1,
                                                   .FetchOffset = x.next,
                                                   .LogStartOffset = -1,
                                                   .PartitionMaxBytes = FETCH_MAX_BYTES};
        ls_kafka_FetchRequest_FetchTopic ft = {
            .Topic = ls_kstr_c(c->seg[1]), .Partitions = &fp, .NumPartitions = 1};
        ls_kafka_FetchRequest q = {.ReplicaId = -1,
                                   .MaxWaitMs = 0,
                                   .MinBytes = 0,
                                   .MaxBytes = FETCH_MAX_BYTES,
                                   .IsolationLevel = 0,
                                   .SessionEpoch = -1,
                                   .Topics = &ft,
                                   .NumTopics = 1};
        ls_kafka_FetchResponse r;
        if (LS_ADMIN_CALL(&k, Fetch, FETCH, 4, &q, &r) != 0 || r.NumResponses != 1 ||
            r.Responses[0].NumPartitions != 1) {
            UNAVAILABLE(c, "Fetch: %s", k.err);
            goto out;
        }
        const ls_kafka_FetchResponse_PartitionData *pd = &r.Responses[0].Partitions[0];
        if (pd->ErrorCode == LS_KERR_OFFSET_OUT_OF_RANGE) {
            BAD(c, "offset", "offset %lld is outside the partition's %lld..%lld", (long long)x.next,
                (long long)lo, (long long)hi);
            goto out;
        }
        if (pd->ErrorCode) {
            kafka_refusal(c, pd->ErrorCode, "Fetch refused", NULL);
            goto out;
        }
        const uint8_t *p = pd->Records.ptr;
        size_t len = pd->Records.len > 0 ? (size_t)pd->Records.len : 0, pos = 0;
        int64_t before = x.next;
        while (pos + LS_RB_HEADER_SIZE <= len && (int64_t)json_array_size(arr) < limit) {
            ls_batch_info_t bi;
            ls_batch_header_parse(p + pos, &bi);
            if (bi.size < LS_RB_HEADER_SIZE || pos + bi.size > len) break; /* a partial batch */
            x.base = bi.base_offset;
            if (!bi.control &&
                ls_records_foreach(p + pos, bi.size, 64u << 20, rec_cb, &x) != LS_RB_OK)
                break;
            if (bi.base_offset + bi.last_offset_delta + 1 > x.next &&
                (int64_t)json_array_size(arr) < limit)
                x.next = bi.base_offset + bi.last_offset_delta + 1;
            pos += bi.size;
        }
        if (x.next == before) break; /* nothing readable: stop rather than spin */
    }
    ls_http_send_json(c->resp, 200,
                      json_pack("{s:s, s:i, s:I, s:I, s:I, s:o}", "stream", c->seg[1], "partition",
                                (int)part, "earliestOffset", (json_int_t)lo, "latestOffset",
                                (json_int_t)hi, "nextOffset", (json_int_t)x.next, "records", arr));
    arr = NULL;
out:
    json_decref(arr);
    kafka_close(c, &k);
}

/* --------------------------------------------------------------- routing */

static void serve_openapi(call_t *c)
{
    size_t n;
    const char *doc = ls_api_openapi(&n);
    c->resp->status = 200;
    c->resp->content_type = "application/json";
    c->resp->body.len = 0;
    ls_buf_append(&c->resp->body, doc, n);
}

static void layouts(call_t *c)
{
    ls_http_send_json(c->resp, 200,
                      json_pack("{s:[{s:s, s:s}]}", "layouts", "type", "indexed", "description",
                                "partition i of stream number s is log s << 20 | i: one log per "
                                "partition, never reused after the stream is dropped"));
}

/* Splits the path after the prefix into decoded segments; -1 (400 written). */
static int split(call_t *c)
{
    const char *p = c->req->path + strlen(LS_API_PREFIX);
    c->nseg = 0;
    while (*p == '/') {
        p++;
        const char *e = strchr(p, '/');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n == 0 && !e) break; /* a trailing '/' */
        if (c->nseg == MAX_SEGS) {
            NOT_FOUND(c, "no resource at %.200s", c->req->path);
            return -1;
        }
        ls_buf_t b;
        ls_buf_init(&b);
        if (n == 0 || ls_url_decode(p, n, false, &b) != 0 || b.len > SEG_MAX ||
            memchr(b.data, 0, b.len)) {
            ls_buf_free(&b);
            BAD(c, "path",
                "malformed path segment %d (empty, bad %%-escape, NUL or over %d "
                "bytes)",
                c->nseg + 1, SEG_MAX);
            return -1;
        }
        memcpy(c->seg[c->nseg], b.data, b.len);
        c->seg[c->nseg++][b.len] = 0;
        ls_buf_free(&b);
        p += n;
    }
    return 0;
}

#define SEG(i, lit) (c.nseg > (i) && strcmp(c.seg[i], lit) == 0)
#define ROUTE(cond, methods, fn)                                                                   \
    if (cond) {                                                                                    \
        if (!strstr(" " methods " ", method)) {                                                    \
            method_not_allowed(&c, methods);                                                       \
            return;                                                                                \
        }                                                                                          \
        fn(&c);                                                                                    \
        return;                                                                                    \
    }

/* GET /api/v1/cluster and /api/v1/groups: read-only views (api/console_api.h)
 * over this broker's Kafka listener; groups also dial each coordinator. */
static int view_dial(void *ctx, ls_admin_conn_t *k, const char *addr)
{
    return kafka_dial(((call_t *)ctx)->api, k, addr);
}

static void view_hangup(void *ctx, ls_admin_conn_t *k) { kafka_close(ctx, k); }

static void kafka_view(call_t *c, json_t *(*view)(ls_admin_conn_t *k, const ls_api_dialer_t *d))
{
    ls_admin_conn_t k;
    if (kafka_open(c, &k) != 0) return;
    ls_api_dialer_t d = {view_dial, view_hangup, c};
    json_t *o = view(&k, &d);
    if (o)
        ls_http_send_json(c->resp, 200, o);
    else
        UNAVAILABLE(c, "%s", k.err);
    kafka_close(c, &k);
}

static void get_cluster(call_t *c) { kafka_view(c, ls_api_cluster_json); }

static void list_groups(call_t *c) { kafka_view(c, ls_api_groups_json); }

/* One check of the hook; false (403 sent) when denied. */
static bool allowed(call_t *c, ls_api_access what, const char *name)
{
    if (c->api->cfg.may(c->api->cfg.ctx, c->req, what, name)) return true;
    ls_http_error(c->resp, 403, "Forbidden", "not authorized to %s %s%s", c->req->method,
                  name ? "stream " : "this resource", name ? name : "");
    return false;
}

/* The request's checks in Kafka's terms (ls_api_access), before routing:
 * false when one was denied (answered). Lists need the cluster's DESCRIBE
 * (they are not filtered); a stream's creation CREATE on the cluster or on
 * the name in the body, as Kafka's CreateTopics. */
static bool authorize(call_t *c)
{
    int n = c->nseg;
    const char *m = c->req->method;
    bool get = !strcmp(m, "GET") || !strcmp(m, "HEAD");
    if (n == 0 || !strcmp(c->seg[0], "openapi.json") || !strcmp(c->seg[0], "layouts")) return true;
    if (!strcmp(c->seg[0], "namespaces"))
        return allowed(c, get ? LS_API_DESCRIBE_CONFIGS : LS_API_ALTER_CONFIGS, NULL);
    if (!strcmp(c->seg[0], "streams") && n == 1 && !get) {
        json_t *body = c->req->body ? json_loads(c->req->body, 0, NULL) : NULL;
        const char *name = json_string_value(json_object_get(body, "name"));
        bool ok = (name && c->api->cfg.may(c->api->cfg.ctx, c->req, LS_API_CREATE, name)) ||
                  allowed(c, LS_API_CREATE, NULL);
        json_decref(body);
        return ok;
    }
    if (!strcmp(c->seg[0], "streams") && n >= 2) {
        const char *s = c->seg[1];
        if (n == 2 && !strcmp(m, "DELETE")) return allowed(c, LS_API_DELETE, s);
        if (n == 2 && !strcmp(m, "PATCH")) {
            json_t *body = c->req->body ? json_loads(c->req->body, 0, NULL) : NULL;
            bool parts = json_object_get(body, "partitions") != NULL;
            json_decref(body);
            return allowed(c, LS_API_ALTER_CONFIGS, s) && (!parts || allowed(c, LS_API_ALTER, s));
        }
        if (n == 3 && !strcmp(c->seg[2], "policy"))
            return allowed(c, get ? LS_API_DESCRIBE_CONFIGS : LS_API_ALTER_CONFIGS, s);
        if (n == 5 && !strcmp(c->seg[2], "partitions")) return allowed(c, LS_API_READ, s);
        return allowed(c, LS_API_DESCRIBE, s);
    }
    if (!strcmp(c->seg[0], "tables") && n == 3) return allowed(c, LS_API_DESCRIBE, c->seg[2]);
    return allowed(c, LS_API_DESCRIBE, NULL); /* lists, cluster, groups */
}

void ls_api_handle(void *arg, const ls_http_request_t *req, ls_http_response_t *resp)
{
    call_t c = {.api = arg, .req = req, .resp = resp};
    if (split(&c) != 0) return;
    if (c.api->cfg.may && !authorize(&c)) return;
    char method[24]; /* " GET " for the ROUTE match */
    snprintf(method, sizeof method, " %.16s ", req->method);
    bool head = strcmp(req->method, "HEAD") == 0;
    if (head) snprintf(method, sizeof method, " GET ");
    int n = c.nseg;
    ROUTE(n == 1 && SEG(0, "openapi.json"), "GET", serve_openapi);
    ROUTE(n == 1 && SEG(0, "layouts"), "GET", layouts);
    if (n == 1 && SEG(0, "namespaces")) {
        ROUTE(is(&c, "POST"), "GET POST", create_namespace);
        ROUTE(true, "GET POST", list_namespaces);
    }
    if (n == 2 && SEG(0, "namespaces")) {
        if (strstr(" GET ", method)) {
            if (!ns_exists(c.api, c.seg[1]))
                NOT_FOUND(&c, "namespace '%.300s' does not exist", c.seg[1]);
            else
                ls_http_send_json(resp, 200, ns_json(c.api, c.seg[1]));
            return;
        }
        method_not_allowed(&c, "GET");
        return;
    }
    ROUTE(n == 3 && SEG(0, "namespaces") && SEG(2, "policy"), "GET PUT PATCH", ns_policy);
    if (n == 1 && SEG(0, "streams")) {
        ROUTE(is(&c, "POST"), "GET POST", create_stream);
        ROUTE(true, "GET POST", list_streams);
    }
    if (n == 2 && SEG(0, "streams")) {
        ROUTE(is(&c, "PATCH"), "GET PATCH DELETE", patch_stream);
        ROUTE(is(&c, "DELETE"), "GET PATCH DELETE", delete_stream);
        ROUTE(true, "GET PATCH DELETE", get_stream);
    }
    ROUTE(n == 3 && SEG(0, "streams") && SEG(2, "policy"), "GET PUT PATCH", stream_policy);
    ROUTE(n == 5 && SEG(0, "streams") && SEG(2, "partitions") && SEG(4, "records"), "GET",
          get_records);
    ROUTE(n == 1 && SEG(0, "tables"), "GET", list_tables);
    ROUTE(n == 3 && SEG(0, "tables"), "GET", get_table);
    ROUTE(n == 1 && SEG(0, "cluster"), "GET", get_cluster);
    ROUTE(n == 1 && SEG(0, "groups"), "GET", list_groups);
    NOT_FOUND(&c, "no resource at %.200s", req->path);
}

ls_api_t *ls_api_new(const ls_api_config_t *cfg)
{
    ls_api_t *a = LS_NEW(ls_api_t);
    a->cfg = *cfg;
    pthread_mutex_init(&a->mu, NULL);
    return a;
}

void ls_api_free(ls_api_t *a)
{
    if (!a) return;
    pthread_mutex_destroy(&a->mu);
    ls_free(a);
}
