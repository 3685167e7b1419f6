/* Broker wiring. Start order: metadata store, object store, cluster id,
 * catalog, log storage (loads heads, GCs uncommitted WAL objects), HTTP
 * servers (Iceberg REST catalog, schema registry; their own threads), Kafka
 * listeners (one per entry of listeners). Stop order (graceful, on SIGTERM/SIGINT): the HTTP
 * servers first (joining their threads), then stop accepting and reading Kafka requests, flush and
 * commit everything buffered (producers waiting on it get their acknowledgements), close
 * connections, close stores. */
#include "server/broker.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/catalog_conf.h"
#include "base/diag.h"
#include "base/uuid.h"
#include "cluster/membership.h"
#include "lake/cold_tables.h"
#include "compact/compactor.h"
#include "group/group_service.h"
#include "group/group_txn.h"
#include "api/rest_api.h"
#include "console/console.h"
#include "http/http_server.h"
#include "http/iceberg_rest.h"
#include "http/registry_rest.h"
#include "registry/avro_view.h"
#include "registry/framing.h"
#include "registry/registry.h"
#include "table/iceberg_typed.h"
#include "stream/policy.h"
#include "lake/materialize.h"
#include "kafka/conn.h"
#include "records/records_time.h"
#include "objstore/objstore_s3.h"
#include "security/sasl.h"
#include "security/authz.h"
#include "group/group_configs.h"
#include "telemetry/receiver.h"
#include "telemetry/subscriptions.h"
#include "group/share_store.h"
#include "security/quotas.h"
#include "kafka/kquota.h"
#include "security/http_auth.h"
#include "base/tls.h"
#include "server/broker_metrics.h"
#include "server/table_groups.h"
#include "server/txcoord.h"
#include "stream/broker_config.h"
#include "meta/meta_keys.h"

typedef struct offload {
    void (*fn)(void *);
    void (*after)(void *);
    void *arg;
    uv_work_t work;
} offload_t;

static void offload_work(uv_work_t *w)
{
    offload_t *o = w->data;
    o->fn(o->arg);
}

static void offload_after(uv_work_t *w, int status)
{
    offload_t *o = w->data;
    o->after(o->arg);
    ls_free(o);
}

const char *ls_broker_advertised_host(const ls_broker_t *b)
{
    const ls_config_t *cfg = b->cfg;
    if (cfg->advertised_host && *cfg->advertised_host) return cfg->advertised_host;
    if (cfg->listen_host && *cfg->listen_host && strcmp(cfg->listen_host, "0.0.0.0") != 0 &&
        strcmp(cfg->listen_host, "::") != 0)
        return cfg->listen_host;
    return "localhost";
}

int32_t ls_broker_advertised_port(const ls_broker_t *b)
{
    return b->cfg->advertised_port > 0 ? b->cfg->advertised_port : b->cfg->listen_port;
}

static void self_member(const ls_broker_t *b, ls_member_t *m)
{
    memset(m, 0, sizeof *m);
    m->id = b->node_id;
    snprintf(m->host, sizeof m->host, "%s", ls_broker_advertised_host(b));
    m->port = ls_broker_advertised_port(b);
    snprintf(m->rack, sizeof m->rack, "%s", b->cfg->broker_rack ? b->cfg->broker_rack : "");
    for (int i = 0; i < b->cfg->nlisteners && i < LS_MEMBER_MAX_ENDPOINTS; i++) {
        const ls_listener_cfg_t *l = &b->cfg->listeners[i];
        ls_endpoint_t *e = &m->endpoints[m->nendpoints++];
        snprintf(e->name, sizeof e->name, "%s", l->name);
        snprintf(e->host, sizeof e->host, "%s", l->adv_host);
        e->port = l->adv_port;
    }
}

/* ---- the services handed to the Kafka listener (kafka/services.h) ---- */

static int svc_members(void *root, ls_member_t **out)
{
    ls_broker_t *b = root;
    if (b->members) return ls_membership_members(b->members, out);
    *out = LS_NEW(ls_member_t);
    self_member(b, *out);
    return 1;
}

static bool svc_table_lag(void *root, int64_t stream_no, int64_t *lag_ms)
{
    ls_broker_t *b = root;
    return b->compactor && ls_compactor_table_lag(b->compactor, stream_no, lag_ms);
}

static const char *svc_table_version(void *root, int64_t stream_no, const char **reason)
{
    ls_broker_t *b = root;
    *reason = NULL;
    return b->compactor ? ls_compactor_table_version(b->compactor, stream_no, reason) : NULL;
}

static bool svc_table_skipped(void *root, int64_t stream_no, int64_t *records)
{
    ls_broker_t *b = root;
    return b->compactor && ls_compactor_table_skipped(b->compactor, stream_no, records);
}

static const char *svc_table_held(void *root, int64_t stream_no)
{
    ls_broker_t *b = root;
    return b->compactor ? ls_compactor_table_held(b->compactor, stream_no) : NULL;
}

static const char *svc_table_catalog_status(void *root, int64_t stream_no)
{
    ls_broker_t *b = root;
    return b->compactor ? ls_compactor_table_catalog_status(b->compactor, stream_no) : NULL;
}

/* The REST catalog's view of a held table (HTTP threads): the compactor
 * exists from startup until after the HTTP threads are joined. */
static char *rest_held_reason(void *ctx, const char *ns, const char *table)
{
    ls_broker_t *b = ctx;
    ls_compactor_t *c = __atomic_load_n(&b->compactor, __ATOMIC_ACQUIRE);
    return c ? ls_compactor_table_held_copy(c, ns, table) : NULL;
}

static void svc_tables_changed(void *root) { ls_broker_tables_changed(root); }

static void svc_topics_deleted(void *root, int64_t delay_ms)
{
    ls_broker_t *b = root;
    if (b->compactor) ls_compactor_reclaim_after(b->compactor, delay_ms);
}

static void svc_offload(void *root, void (*fn)(void *arg), void (*after)(void *arg), void *arg)
{
    ls_broker_offload(root, fn, after, arg);
}

/* Producer ids: one metadata counter, unique across brokers and restarts. */
static ls_status svc_new_producer_id(void *root, int64_t *id)
{
    ls_broker_t *b = root;
    return ls_meta_counter_add(b->meta, LS_KEY_COUNTER_PRODUCER_ID, 1, id);
}

static ls_status svc_check_payload(void *root, const uint8_t *p, size_t len, const char *topic,
                                   bool key, const ls_policy_t *pol, char *why, size_t whylen)
{
    ls_broker_t *b = root;
    ls_policy_field f = key ? LS_POLICY_KEY_SUBJECT_STRATEGY : LS_POLICY_VALUE_SUBJECT_STRATEGY;
    ls_frame_subject_t want = {
        .strategy = (ls_sr_strategy)(key ? pol->key_strategy : pol->value_strategy),
        .topic = topic,
        .key = key,
        .strategy_key = ls_policy_key(f),
        .strategy_value = pol->value[f],
    };
    switch (ls_frame_check_payload(b->registry, p, len, &want, why, whylen)) {
    case LS_FRAME_OK: return LS_OK;
    case LS_FRAME_INVALID: return LS_EINVAL;
    default: return LS_EIO;
    }
}

static ls_status svc_check_primary_key(void *root, const char *subject, const char *const *fields,
                                       size_t n, char *why, size_t whylen)
{
    ls_broker_t *b = root;
    ls_sr_version_t v;
    ls_sr_schema_t *sc;
    ls_sr_err_t e;
    ls_sr_code code = ls_registry_latest(b->registry, subject, &v, &sc, &e);
    if (code == LS_SR_SUBJECT_NOT_FOUND || code == LS_SR_VERSION_NOT_FOUND) return LS_OK;
    if (code != LS_SR_OK) {
        snprintf(why, whylen, "reading subject %s: %s", subject, e.message);
        return LS_EIO;
    }
    const ls_avro_node_t *root_node = sc->type == LS_SR_AVRO ? ls_avro_root(sc->avro)
                                      : sc->view             ? ls_avro_view_root(sc->view)
                                                             : NULL;
    ls_status st = LS_OK;
    char err[400];
    /* the shape a table of these keys would get decides, by the same rules */
    ls_typed_shape_t *s =
        root_node ? ls_typed_shape_new_pk(NULL, root_node, fields, n, err, sizeof err) : NULL;
    if (root_node && !s) {
        snprintf(why, whylen, "the latest version of subject %s (schema id %d): %s", subject,
                 (int)v.id, err);
        st = LS_EINVAL;
    }
    ls_typed_shape_free(s);
    ls_free(v.subject);
    ls_sr_schema_release(sc);
    return st;
}

/* The latest version of subject as an Avro root (a JSON or Protobuf
 * schema by its view): LS_OK with *root and *sc held (release it), *root
 * NULL when there is none (not registered, not mapped); LS_EIO when the
 * store failed (why). */
static ls_status latest_root(ls_broker_t *b, const char *subject, ls_sr_schema_t **sc,
                             const ls_avro_node_t **root, char *why, size_t whylen)
{
    ls_sr_version_t v;
    ls_sr_err_t e;
    *sc = NULL;
    *root = NULL;
    ls_sr_code code = ls_registry_latest(b->registry, subject, &v, sc, &e);
    if (code == LS_SR_SUBJECT_NOT_FOUND || code == LS_SR_VERSION_NOT_FOUND) return LS_OK;
    if (code != LS_SR_OK) {
        snprintf(why, whylen, "reading subject %s: %s", subject, e.message);
        return LS_EIO;
    }
    ls_free(v.subject);
    *root = (*sc)->type == LS_SR_AVRO ? ls_avro_root((*sc)->avro)
            : (*sc)->view             ? ls_avro_view_root((*sc)->view)
                                      : NULL;
    return LS_OK;
}

static ls_status svc_check_partition(void *root, const char *topic, const struct ls_policy *p,
                                     char *why, size_t whylen)
{
    ls_broker_t *b = root;
    if (p->value_json || (!p->value_typed && !p->key_typed) ||
        (p->value_typed && p->value_strategy != LS_POLICY_TOPIC_NAME) ||
        (p->key_typed && p->key_strategy != LS_POLICY_TOPIC_NAME))
        return LS_OK; /* the schema is known only from the records */
    char subject[300];
    ls_sr_schema_t *vsc = NULL, *ksc = NULL;
    const ls_avro_node_t *vroot = NULL, *kroot = NULL;
    ls_status st = LS_OK;
    if (p->value_typed) {
        snprintf(subject, sizeof subject, "%s-value", topic);
        st = latest_root(b, subject, &vsc, &vroot, why, whylen);
    }
    if (st == LS_OK && p->key_typed) {
        snprintf(subject, sizeof subject, "%s-key", topic);
        st = latest_root(b, subject, &ksc, &kroot, why, whylen);
    }
    /* a subject not registered yet is checked when the table is created */
    if (st == LS_OK && (!p->value_typed || vroot) && (!p->key_typed || kroot)) {
        char err[400];
        /* a schema that makes no table is refused when records come */
        ls_typed_shape_t *s = ls_typed_shape_new_kv(vroot, kroot, err, sizeof err);
        if (s && ls_mat_partition_check(p, ls_typed_iceberg_schema_json(s),
                                        ls_typed_last_column_id(s), err, sizeof err) != LS_OK) {
            snprintf(why, whylen, "%s (by the latest schema of subject %s-%s)", err, topic,
                     p->value_typed ? "value" : "key");
            st = LS_EINVAL;
        }
        ls_typed_shape_free(s);
    }
    ls_sr_schema_release(vsc);
    ls_sr_schema_release(ksc);
    return st;
}

static ls_status svc_check_table_spec(void *root, const char *ns, const char *topic,
                                      const struct ls_policy *p, char *why, size_t whylen)
{
    ls_broker_t *b = root;
    ls_stream_t *s = ls_catalog_lookup(b->catalog, ns, topic);
    if (!s) return LS_OK; /* a new topic: its table is created with the spec */
    ls_table_target_t tt;
    char err[1024];
    ls_status st = ls_table_target_init(&tt, s, p, b->registry, err, sizeof err);
    if (st == LS_OK) st = ls_mat_spec_check(b->meta, b->os, &tt, err, sizeof err);
    ls_stream_release(s);
    if (st != LS_OK) snprintf(why, whylen, "%s", err);
    return st;
}

static void svc_txn_finish(void *root, const char *tid)
{
    ls_broker_t *b = root;
    ls_txcoord_finish(b->txn, tid);
}

static ls_status svc_table_groups(void *root, ls_table_group_t **out, int *n)
{
    ls_broker_t *b = root;
    return ls_table_groups_read(b->meta, b->catalog, out, n);
}

static void services_init(ls_broker_t *b)
{
    b->ksvc = (ls_kafka_services_t){
        .loop = b->loop,
        .cfg = b->cfg,
        .node_id = b->node_id,
        .cluster_id = b->cluster_id,
        .catalog = b->catalog,
        .logs = b->logs,
        .groups = b->groups,
        .authz = b->authz,
        .quotas = b->quotas,
        .kquota = b->kquota,
        .group_configs = b->group_configs,
        .client_metrics = b->client_metrics,
        .telemetry = b->telemetry,
        .shares = b->shares,
        .table_defaults = b->table_defaults,
        .ntable_defaults = b->ntable_defaults,
        .stopping = &b->stopping,
        .users_meta = b->meta,
        .sasl_mechanisms = b->sasl_mechanisms,
        .oauth = b->oauth,
        .root = b,
        .members = svc_members,
        .table_lag = svc_table_lag,
        .table_version = svc_table_version,
        .table_held = svc_table_held,
        .table_catalog_status = svc_table_catalog_status,
        .table_skipped = svc_table_skipped,
        .tables_changed = svc_tables_changed,
        .topics_deleted = svc_topics_deleted,
        .offload = svc_offload,
        .new_producer_id = svc_new_producer_id,
        .check_payload = svc_check_payload,
        .check_primary_key = svc_check_primary_key,
        .check_partition = svc_check_partition,
        .check_table_spec = svc_check_table_spec,
        .txn_finish = svc_txn_finish,
        .table_groups = svc_table_groups,
    };
}

/* Membership changed (on the loop): groups this broker no longer
 * coordinates leave its memory, so a later return of ownership reloads them
 * from the store instead of trusting a stale copy. */
static bool owns_group(void *arg, const char *group_id)
{
    ls_broker_t *b = arg;
    ls_member_t c;
    return ls_ksvc_coordinator(&b->ksvc, group_id, strlen(group_id), &c) == b->node_id;
}

static void on_members_changed_loop(uv_async_t *a)
{
    ls_broker_t *b = a->data;
    if (b->groups && !b->stopping) ls_group_service_retain(b->groups, owns_group, b);
    /* decisions a departed broker left are finished by their new coordinator */
    if (b->txn && !b->stopping) ls_txcoord_kick(b->txn);
}

static void on_members_changed(void *arg)
{
    ls_broker_t *b = arg;
    uv_async_send(&b->members_changed);
}

void ls_broker_offload(ls_broker_t *b, void (*fn)(void *arg), void (*after)(void *arg), void *arg)
{
    offload_t *o = LS_NEW(offload_t);
    o->fn = fn;
    o->after = after;
    o->arg = arg;
    o->work.data = o;
    uv_queue_work(b->loop, &o->work, offload_work, offload_after);
}

/* Kafka clients expect a 22-character base64url cluster id (a UUID). */
/* LS_OK: done; otherwise the store's status (err set): a retriable one
 * (ls_status_retriable) may succeed if tried again; LS_EINVAL for a
 * configured id of another cluster. */
static ls_status try_cluster_id(ls_broker_t *b, char *err, size_t errlen)
{
    ls_kv_t kv;
    ls_status st = ls_meta_get(b->meta, LS_KEY_CLUSTER_ID, &kv);
    if (st == LS_OK) {
        snprintf(b->cluster_id, sizeof b->cluster_id, "%.*s", (int)kv.vlen, (const char *)kv.val);
        ls_kv_free(&kv);
        if (b->cfg->cluster_id && strcmp(b->cfg->cluster_id, b->cluster_id) != 0) {
            snprintf(err, errlen,
                     "cluster.id: configured '%s' but the metadata store belongs to cluster '%s'",
                     b->cfg->cluster_id, b->cluster_id);
            return LS_EINVAL;
        }
        return LS_OK;
    }
    if (st != LS_ENOTFOUND) {
        snprintf(err, errlen, "reading cluster id from metadata: %s", ls_status_str(st));
        return st;
    }
    if (b->cfg->cluster_id)
        snprintf(b->cluster_id, sizeof b->cluster_id, "%s", b->cfg->cluster_id);
    else {
        ls_uuid_t u;
        ls_uuid_random(&u);
        ls_uuid_format_kafka(&u, b->cluster_id);
    }
    ls_meta_cmp_t cmp = {.kind = LS_META_CMP_MOD_REV,
                         .key = LS_KEY_CLUSTER_ID,
                         .klen = strlen(LS_KEY_CLUSTER_ID),
                         .rev = 0};
    ls_meta_op_t op = {.kind = LS_META_OP_PUT,
                       .key = LS_KEY_CLUSTER_ID,
                       .klen = strlen(LS_KEY_CLUSTER_ID),
                       .val = b->cluster_id,
                       .vlen = strlen(b->cluster_id)};
    st = ls_meta_txn(b->meta, &cmp, 1, &op, 1, NULL);
    if (st != LS_OK) {
        /* another broker won the race, or the answer was lost: read again */
        snprintf(err, errlen, "storing cluster id: %s", ls_status_str(st));
        return st;
    }
    return LS_OK;
}

/* Reads the cluster id, creating it on the store's first start. A transient
 * store error (or a create whose answer was lost) is retried from the read. */
static ls_status load_cluster_id(ls_broker_t *b, char *err, size_t errlen)
{
    for (int attempt = 0;; attempt++) {
        ls_status st = try_cluster_id(b, err, errlen);
        if (st == LS_OK || !ls_status_retriable(st) || attempt == 20) return st;
        usleep(100 * 1000);
    }
}

static void group_offload(void *ctx, void (*fn)(void *), void (*after)(void *), void *arg)
{
    ls_broker_offload(ctx, fn, after, arg);
}

static void on_pressure(void *arg, bool pressure)
{
    ls_broker_t *b = arg;
    if (pressure)
        LS_WARN("broker", "produce buffer over wal.buffer.max.bytes: pausing reads");
    else
        LS_INFO("broker", "produce buffer drained: resuming reads");
    for (int i = 0; i < b->nkafka; i++)
        ls_kafka_listener_set_paused(b->kafka[i], pressure);
}

/* The cluster layer of the table policy: lakestream.table.* broker keys,
 * validated like topic configs (a bad value stops the broker, naming it). */
static ls_status load_table_defaults(ls_broker_t *b, char *err, size_t errlen)
{
    const ls_config_t *c = b->cfg;
    const struct {
        ls_policy_field f;
        const char *value;
    } keys[] = {
        {LS_POLICY_ENABLED, c->table_enabled},
        {LS_POLICY_CATALOG, c->table_catalog},
        {LS_POLICY_NAME, c->table_name},
        {LS_POLICY_PARTITION, c->table_partition},
        {LS_POLICY_TARGET_FILE_BYTES, c->table_target_file_bytes},
        {LS_POLICY_COMPRESSION, c->table_compression},
        {LS_POLICY_COMMIT_INTERVAL_MS, c->table_commit_interval_ms},
        {LS_POLICY_START_POSITION, c->table_start_position},
        {LS_POLICY_SNAPSHOT_RETENTION_MS, c->table_snapshot_retention_ms},
        {LS_POLICY_SNAPSHOT_RETENTION_MIN, c->table_snapshot_retention_min},
        {LS_POLICY_FILE_DELETE_DELAY_MS, c->table_file_delete_delay_ms},
        {LS_POLICY_REWRITE_MIN_FILES, c->table_rewrite_min_files},
        {LS_POLICY_CHANGELOG, c->table_changelog},
    };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        if (!keys[i].value) continue;
        const char *key = ls_policy_key(keys[i].f);
        ls_status st = ls_policy_check(key, keys[i].value, err, errlen);
        if (st != LS_OK) return st;
        b->table_defaults[b->ntable_defaults++] = (ls_prop_t){(char *)key, (char *)keys[i].value};
    }
    return LS_OK;
}

/* ---- TLS and authentication of the HTTP listeners (issue 30) ---- */

/* The security of HTTP listener i (LS_HTTP_SEC_*): its PEM material read
 * and checked through base/tls.c (the Kafka listeners' loader, so the same
 * files work for both), and the Basic hook. The PEM strings in *out are
 * the caller's to free (http_security_free). */
static ls_status http_security(ls_broker_t *b, int i, ls_http_security_t *out, char *err,
                               size_t errlen)
{
    const struct ls_http_sec_cfg *h = &b->cfg->http_sec[i];
    const char *what = i == 0 ? "http.listen" : "schema.registry.listen";
    *out = (ls_http_security_t){.realm = i == 0 ? "lakestream" : "lakestream schema registry",
                                .registry_errors = i == 1};
    const char *ca = h->client_auth ? h->client_auth : "none";
    out->client_auth = !strcmp(ca, "required")    ? LS_HTTP_CLIENT_AUTH_REQUIRED
                       : !strcmp(ca, "requested") ? LS_HTTP_CLIENT_AUTH_REQUESTED
                                                  : LS_HTTP_CLIENT_AUTH_NONE;
    unsigned schemes = 0;
    char bad[64];
    (void)ls_config_http_auth(h->authentication, &schemes, bad, sizeof bad); /* config-checked */
    ls_http_authn_t *an = &b->http_authn[i];
    if (schemes & LS_HTTP_AUTH_BASIC) {
        if (!b->http_basic && !(b->http_basic = ls_http_basic_new(b->meta))) {
            snprintf(err, errlen, "%s: no random source for the Basic cache", what);
            return LS_EIO;
        }
        an->basic = b->http_basic;
    }
    if (schemes & LS_HTTP_AUTH_BEARER) an->bearer = b->oauth; /* opened for it (ls_broker_init) */
    if (schemes) {
        out->auth = ls_http_authn_check;
        out->auth_arg = an;
        out->challenge_basic = an->basic != NULL;
        out->challenge_bearer = an->bearer != NULL;
    }
    if (!h->keystore_location && !h->keystore_certificate_chain) return LS_OK;
    ls_tls_settings_t ts = {.keystore_location = h->keystore_location,
                            .keystore_chain = h->keystore_certificate_chain,
                            .keystore_key = h->keystore_key,
                            .truststore_location = h->truststore_location,
                            .client_auth = ca};
    ls_tls_server_t *t = ls_tls_server_new(&ts, what, err, errlen);
    char *chain, *key, *trust;
    ls_status rc = t ? ls_tls_server_pem(t, &chain, &key, &trust, err, errlen) : LS_EINVAL;
    ls_tls_server_free(t);
    if (rc != 0) {
        /* base/tls.c names the Kafka listeners' ssl.X; here it is <prefix>.ssl.X */
        const char *pfx = i == 0 ? "http." : "schema.registry.";
        if (!strncmp(err, "ssl.", 4) && strlen(err) + strlen(pfx) < errlen) {
            memmove(err + strlen(pfx), err, strlen(err) + 1);
            memcpy(err, pfx, strlen(pfx));
        }
        return LS_EINVAL; /* the listener's TLS material */
    }
    out->cert_pem = chain;
    out->key_pem = key;
    out->truststore_pem = trust;
    return LS_OK;
}

static void http_security_free(ls_http_security_t *sec)
{
    ls_free((char *)sec->cert_pem);
    ls_free((char *)sec->key_pem);
    ls_free((char *)sec->truststore_pem);
}

/* The catalog's view of the ACLs (issue 30): a table is its topic's, so
 * loading it (its data) needs READ on the topic and seeing it (list, exists)
 * DESCRIBE, as Kafka's Fetch and Metadata. Without HTTP authentication the
 * principal is User:ANONYMOUS, as on a PLAINTEXT listener. */
static bool rest_may_see(void *ctx, const ls_http_request_t *req, const char *table, bool read,
                         bool log_denied)
{
    ls_broker_t *b = ctx;
    return ls_authz_check(b->authz, read ? "IcebergLoadTable" : "IcebergListTables",
                          req->principal ? req->principal : "User:ANONYMOUS", req->peer,
                          read ? LS_ACL_OP_READ : LS_ACL_OP_DESCRIBE, LS_ACL_RES_TOPIC, table,
                          log_denied);
}

/* The registry's view of the ACLs (issue 30): subject <topic>-value or
 * <topic>-key is its topic's, so reading needs DESCRIBE on the topic and
 * changing WRITE (what a producer that registers its schema holds); either
 * is also granted by the cluster's DESCRIBE / ALTER, which is what other
 * subjects and the registry-wide config and mode need. */
static bool registry_may(void *ctx, const ls_http_request_t *req, const char *subject, bool write,
                         bool log_denied)
{
    ls_broker_t *b = ctx;
    const char *who = req->principal ? req->principal : "User:ANONYMOUS";
    const char *api = write ? "SchemaRegistryWrite" : "SchemaRegistryRead";
    size_t n = subject ? strlen(subject) : 0;
    size_t cut = n > 6 && !strcmp(subject + n - 6, "-value") ? 6
                 : n > 4 && !strcmp(subject + n - 4, "-key") ? 4
                                                             : 0;
    if (cut) {
        char *topic = ls_strndup(subject, n - cut);
        bool ok = ls_authz_check(b->authz, api, who, req->peer,
                                 write ? LS_ACL_OP_WRITE : LS_ACL_OP_DESCRIBE, LS_ACL_RES_TOPIC,
                                 topic, false);
        ls_free(topic);
        if (ok) return true;
    }
    return ls_authz_check(b->authz, api, who, req->peer,
                          write ? LS_ACL_OP_ALTER : LS_ACL_OP_DESCRIBE, LS_ACL_RES_CLUSTER,
                          LS_ACL_CLUSTER_NAME, log_denied);
}

/* The REST API's checks (api/rest_api.h ls_api_access) as Kafka's ACL
 * operations, for the HTTP principal, before the API acts through its own
 * User:ANONYMOUS Kafka client. */
static bool api_may(void *ctx, const ls_http_request_t *req, ls_api_access what, const char *name)
{
    static const int8_t ops[] = {
        [LS_API_DESCRIBE] = LS_ACL_OP_DESCRIBE,
        [LS_API_DESCRIBE_CONFIGS] = LS_ACL_OP_DESCRIBE_CONFIGS,
        [LS_API_ALTER_CONFIGS] = LS_ACL_OP_ALTER_CONFIGS,
        [LS_API_ALTER] = LS_ACL_OP_ALTER,
        [LS_API_CREATE] = LS_ACL_OP_CREATE,
        [LS_API_DELETE] = LS_ACL_OP_DELETE,
        [LS_API_READ] = LS_ACL_OP_READ,
    };
    ls_broker_t *b = ctx;
    return ls_authz_check(b->authz, "RestApi", req->principal ? req->principal : "User:ANONYMOUS",
                          req->peer, ops[what], name ? LS_ACL_RES_TOPIC : LS_ACL_RES_CLUSTER,
                          name ? name : LS_ACL_CLUSTER_NAME, true);
}

/* The http.* limits both HTTP servers apply. */
static ls_http_limits_t http_limits(const ls_config_t *cfg)
{
    return (ls_http_limits_t){.header_timeout_ms = cfg->http_header_timeout_ms,
                              .body_timeout_ms = cfg->http_body_timeout_ms,
                              .max_connections_per_ip = cfg->http_max_connections_per_ip};
}

/* The REST API reaches this broker's Kafka listener as a client (one code
 * path for every front end, api/rest_api.h): its address, once listening
 * (HTTP threads read it; listen_port is set on the loop before serving). */
#define API_KAFKA_TIMEOUT_MS 30000
static void api_kafka_addr(void *ctx, char *buf, size_t cap)
{
    /* the API's writes go through this broker's first PLAINTEXT listener, as
     * User:ANONYMOUS from this host (so the authorizer, when on, decides);
     * without one the API cannot write and says so */
    const ls_config_t *cfg = ((ls_broker_t *)ctx)->cfg;
    buf[0] = 0;
    for (int i = 0; i < cfg->nlisteners; i++) {
        const ls_listener_cfg_t *lc = &cfg->listeners[i];
        int port = __atomic_load_n(&lc->port, __ATOMIC_ACQUIRE);
        if (lc->protocol != LS_SECPROTO_PLAINTEXT || port <= 0) continue;
        const char *h = lc->host;
        if (!*h || strcmp(h, "0.0.0.0") == 0) h = "127.0.0.1";
        if (strcmp(h, "::") == 0) h = "::1";
        snprintf(buf, cap, strchr(h, ':') ? "[%s]:%d" : "%s:%d", h, port);
        return;
    }
}

/* The Iceberg REST catalog on http.listen (unset: no HTTP server). Readers
 * of an S3 store get its non-secret client settings, never credentials. */
static ls_status start_http(ls_broker_t *b, char *err, size_t errlen)
{
    const ls_config_t *cfg = b->cfg;
    if (!cfg->http_host) return LS_OK;
    char *endpoint = NULL, *region = NULL;
    int path_style = 0;
    const char *props[8] = {NULL};
    if (ls_objstore_s3_client_props(b->os, &endpoint, &region, &path_style) == LS_OK) {
        const char *kv[] = {"s3.endpoint",
                            endpoint,
                            "s3.region",
                            region,
                            "s3.path-style-access",
                            path_style ? "true" : "false",
                            NULL};
        memcpy(props, kv, sizeof kv);
    }
    b->rest = ls_rest_new(&(ls_rest_config_t){.meta = b->meta,
                                              .os = b->os,
                                              .client_props = props,
                                              .held_reason = rest_held_reason,
                                              .held_ctx = b,
                                              .may_see = b->authz ? rest_may_see : NULL,
                                              .may_ctx = b});
    ls_free(endpoint);
    ls_free(region);
    b->metrics = ls_broker_metrics_start(b->meta, b->catalog);
    b->api = ls_api_new(&(ls_api_config_t){.meta = b->meta,
                                           .os = b->os,
                                           .catalog = b->catalog,
                                           .table_defaults = b->table_defaults,
                                           .ntable_defaults = b->ntable_defaults,
                                           .kafka_addr = api_kafka_addr,
                                           .ctx = b,
                                           .timeout_ms = API_KAFKA_TIMEOUT_MS,
                                           .may = b->authz ? api_may : NULL});
    ls_http_mount_t mounts[] = {{"/v1", ls_rest_handle, b->rest, 0},
                                {"/metrics", ls_broker_metrics_handle, b->metrics, 0},
                                {LS_API_PREFIX, ls_api_handle, b->api, 1},
                                {"", ls_console_handle, NULL, 0}}; /* last: the console at / */
    ls_http_limits_t limits = http_limits(cfg);
    ls_http_security_t sec;
    ls_status st = http_security(b, 0, &sec, err, errlen);
    if (st != LS_OK) return st;
    b->http = ls_http_server_start("http.listen", cfg->http_host, cfg->http_port, mounts,
                                   sizeof mounts / sizeof mounts[0], &limits, &sec, err, errlen);
    http_security_free(&sec);
    if (!b->http) return LS_EIO;
    int v6 = strchr(cfg->http_host, ':') != NULL;
    LS_INFO("broker",
            "serving the Iceberg REST catalog on %s://%s%s%s:%d/v1 (console: /, health: /health, "
            "metrics: /metrics)",
            cfg->http_sec[0].keystore_location || cfg->http_sec[0].keystore_certificate_chain
                ? "https"
                : "http",
            v6 ? "[" : "", cfg->http_host, v6 ? "]" : "", ls_http_server_port(b->http));
    return LS_OK;
}

/* The schema registry on schema.registry.listen (unset: not served; typed
 * tables still read it). Its state is in the metadata store, so every
 * broker serves the same registry. */
static ls_status start_registry(ls_broker_t *b, char *err, size_t errlen)
{
    const ls_config_t *cfg = b->cfg;
    if (!cfg->registry_host) return LS_OK;
    b->registry_rest = LS_NEW(ls_registry_rest_t);
    *b->registry_rest = (ls_registry_rest_t){
        .registry = b->registry, .may = b->authz ? registry_may : NULL, .may_ctx = b};
    ls_http_mount_t mounts[] = {{"", ls_registry_rest_handle, b->registry_rest, 1}};
    ls_http_limits_t limits = http_limits(cfg);
    ls_http_security_t sec;
    ls_status st = http_security(b, 1, &sec, err, errlen);
    if (st != LS_OK) return st;
    b->registry_http =
        ls_http_server_start("schema.registry.listen", cfg->registry_host, cfg->registry_port,
                             mounts, 1, &limits, &sec, err, errlen);
    http_security_free(&sec);
    if (!b->registry_http) return LS_EIO;
    int v6 = strchr(cfg->registry_host, ':') != NULL;
    LS_INFO(
        "broker", "serving the schema registry on %s://%s%s%s:%d",
        cfg->http_sec[1].keystore_location || cfg->http_sec[1].keystore_certificate_chain ? "https"
                                                                                          : "http",
        v6 ? "[" : "", cfg->registry_host, v6 ? "]" : "", ls_http_server_port(b->registry_http));
    return LS_OK;
}

/* ---- the transaction coordinator (server/txcoord.h) ---- */

/* From the ls-txn thread: the membership copies its live set under a lock. */
static bool txn_mine(void *arg, const char *tid)
{
    ls_broker_t *b = arg;
    ls_member_t c;
    return ls_ksvc_coordinator(&b->ksvc, tid, strlen(tid), &c) == b->node_id;
}

static ls_status txn_new_producer_id(void *arg, int64_t *id)
{
    return svc_new_producer_id(arg, id);
}

static ls_status txn_group_marker(void *arg, const char *group, int64_t producer_id,
                                  int64_t txn_seq, bool commit)
{
    ls_broker_t *b = arg;
    return ls_group_txn_marker(b->meta, group, producer_id, txn_seq, commit);
}

static ls_status start_txn(ls_broker_t *b, char *err, size_t errlen)
{
    const ls_config_t *cfg = b->cfg;
    ls_txcoord_opts_t o = {.loop = b->loop,
                           .meta = b->meta,
                           .logs = b->logs,
                           .cfg = {.max_timeout_ms = cfg->transaction_max_timeout_ms,
                                   .id_expiration_ms = cfg->transactional_id_expiration_ms},
                           .sweep_interval_ms = cfg->transaction_cleanup_interval_ms,
                           .mine = txn_mine,
                           .new_producer_id = txn_new_producer_id,
                           .group_marker = txn_group_marker,
                           .arg = b};
    b->txn = ls_txcoord_start(&o, err, errlen);
    return b->txn ? LS_OK : LS_EIO;
}

void ls_broker_tables_changed(ls_broker_t *b)
{
    if (b->compactor && !b->stopping && b->cfg->compaction_enabled)
        ls_compactor_kick(b->compactor, NULL, NULL);
}

/* One Kafka listener per entry of listeners. A listener on port 0 ("pick a
 * free port") advertises the port it got. */
static ls_status start_kafka(ls_broker_t *b, char *err, size_t errlen)
{
    ls_config_t *cfg = b->cfg;
    for (int i = 0; i < cfg->nlisteners; i++) {
        ls_listener_cfg_t *lc = &cfg->listeners[i];
        ls_kafka_listener_t *l = ls_kafka_listener_start(&b->ksvc, lc, err, errlen);
        b->kafka[b->nkafka++] = l;
        if (ls_kafka_listener_port(l) < 0) return LS_EIO;
        if (lc->port == 0) {
            /* the REST API reads it from its threads (api_kafka_addr) */
            __atomic_store_n(&lc->port, ls_kafka_listener_port(l), __ATOMIC_RELEASE);
            if (lc->adv_port <= 0) lc->adv_port = lc->port;
        }
    }
    cfg->listen_port = cfg->listeners[0].port;
    cfg->advertised_port = cfg->listeners[0].adv_port;
    return LS_OK;
}

/* A failed open after the transaction threads started: they stop first (the
 * caller then closes every handle of the loop, theirs included). */
static ls_status open_failed(ls_broker_t *b, ls_status st)
{
    ls_txcoord_stop(b->txn);
    return st;
}

ls_status ls_broker_open(ls_broker_t *b, uv_loop_t *loop, ls_config_t *cfg, char *err,
                         size_t errlen)
{
    memset(b, 0, sizeof *b);
    b->loop = loop;
    b->cfg = cfg;
    b->node_id = cfg->broker_id;
    char why[200];
    if (ls_sasl_mechs_parse(cfg->sasl_enabled_mechanisms, &b->sasl_mechanisms, why, sizeof why) !=
        0) {
        snprintf(err, errlen, "sasl.enabled.mechanisms: %s", why);
        return LS_EINVAL;
    }
    /* The JWT validator serves SASL/OAUTHBEARER and HTTP Bearer alike. */
    const char *bearer_user = NULL;
    for (int i = 0; i < 2; i++) {
        unsigned schemes = 0;
        char bad[64];
        if (ls_config_http_auth(cfg->http_sec[i].authentication, &schemes, bad, sizeof bad) == 0 &&
            (schemes & LS_HTTP_AUTH_BEARER))
            bearer_user =
                i == 0 ? "http.authentication=bearer" : "schema.registry.authentication=bearer";
    }
    bool want_jwt = (b->sasl_mechanisms & LS_SASL_OAUTHBEARER) || bearer_user;
    if (!want_jwt &&
        (cfg->oauth_jwks_url || cfg->oauth_expected_audience || cfg->oauth_expected_issuer)) {
        snprintf(err, errlen,
                 "%s is set but OAUTHBEARER is not in sasl.enabled.mechanisms and no HTTP "
                 "listener takes bearer: add it there or remove the setting",
                 cfg->oauth_jwks_url            ? "sasl.oauthbearer.jwks.endpoint.url"
                 : cfg->oauth_expected_audience ? "sasl.oauthbearer.expected.audience"
                                                : "sasl.oauthbearer.expected.issuer");
        return LS_EINVAL;
    }
    if (want_jwt) {
        if (!cfg->oauth_jwks_url && bearer_user) {
            snprintf(err, errlen,
                     "%s: needs sasl.oauthbearer.jwks.endpoint.url (the keys bearer tokens are "
                     "checked against)",
                     bearer_user);
            return LS_EINVAL;
        }
        ls_oauth_opts_t oo = {
            .jwks_url = cfg->oauth_jwks_url,
            .audience = cfg->oauth_expected_audience,
            .issuer = cfg->oauth_expected_issuer,
            .clock_skew_s = cfg->oauth_clock_skew_s,
            .scope_claim = cfg->oauth_scope_claim,
            .sub_claim = cfg->oauth_sub_claim,
            .refresh_ms = cfg->oauth_jwks_refresh_ms,
        };
        b->oauth = ls_oauth_open(&oo, why, sizeof why);
        if (!b->oauth) {
            snprintf(err, errlen, "%s", why);
            return LS_EINVAL;
        }
    }
    b->meta = ls_meta_open(cfg->metadata_url, err, errlen);
    if (!b->meta) return LS_EIO;
    ls_objstore_opts_t oo;
    ls_objstore_opts_from_config(&oo, cfg);
    b->os = ls_objstore_open_opts(cfg->object_store_url, &oo, err, errlen);
    if (!b->os) return LS_EIO;
    ls_status st = load_cluster_id(b, err, errlen);
    if (st != LS_OK) return st;
    ls_catalog_confs_install(&b->cfg->catalogs); /* before anything reads it */
    st = load_table_defaults(b, err, errlen);
    if (st != LS_OK) return st;
    b->catalog = ls_catalog_open(b->meta, err, errlen);
    if (!b->catalog) return LS_EIO;
    ls_catalog_set_limits(b->catalog, cfg->max_partitions_per_topic, cfg->max_partitions);
    if (cfg->authorizer_class_name) { /* authorizer.class.name (checked by the config) */
        b->authz = ls_authz_open(b->meta, cfg->super_users, cfg->allow_everyone_if_no_acl_found,
                                 err, errlen);
        if (!b->authz) return LS_EIO;
    }
    b->quotas = ls_quotas_open(b->meta, err, errlen);
    if (!b->quotas) return LS_EIO;
    b->group_configs = ls_group_configs_open(b->meta, err, errlen);
    if (!b->group_configs) return LS_EIO;
    b->client_metrics = ls_telemetry_subs_open(b->meta, err, errlen);
    if (!b->client_metrics) return LS_EIO;
    b->telemetry = ls_telemetry_open(b->client_metrics);
    b->kquota = ls_kquota_new(b->quotas, cfg->quota_window_num, cfg->quota_window_size_seconds);
    ls_logstore_config_t lc = {
        .flush_max_bytes = cfg->wal_flush_max_bytes,
        .flush_linger_ms = cfg->wal_flush_linger_ms,
        .flush_min_interval_ms = cfg->wal_flush_min_interval_ms,
        .max_inflight_flushes = (int)cfg->wal_max_inflight_flushes,
        .buffer_max_bytes = cfg->wal_buffer_max_bytes,
        .read_cache_max_bytes = cfg->read_cache_max_bytes,
        .read_ahead_bytes = cfg->read_ahead_bytes,
        .gc_grace_ms = cfg->wal_gc_grace_ms,
        .broker_id = cfg->broker_id,
    };
    b->logs = ls_logstore_open(loop, b->meta, b->os, &lc, err, errlen);
    if (!b->logs) return LS_EIO;
    ls_logstore_set_entry_time_fn(b->logs, ls_kafka_batch_offset_for_time);
    ls_logstore_on_pressure_change(b->logs, on_pressure, b);
    /* table locations are URIs of the object store root: the store URL
     * without the fault wrapper or query parameters */
    const char *wu = cfg->object_store_url;
    if (!strncmp(wu, "faulty+", 7)) wu += 7;
    b->warehouse_uri = ls_strndup(wu, strcspn(wu, "?"));
    while (strlen(b->warehouse_uri) > 8 && b->warehouse_uri[strlen(b->warehouse_uri) - 1] == '/')
        b->warehouse_uri[strlen(b->warehouse_uri) - 1] = 0;
    char owner[32]; /* names this broker in per-log owner keys */
    snprintf(owner, sizeof owner, "broker-%d", (int)cfg->broker_id);
    b->registry = ls_registry_new(b->meta); /* schemas of typed tables, and the HTTP API */
    ls_compactor_config_t cc = {
        .catalog = b->catalog,
        .registry = b->registry,
        .warehouse_uri = b->warehouse_uri,
        .table_defaults = b->table_defaults,
        .ntable_defaults = b->ntable_defaults,
        .enabled = cfg->compaction_enabled,
        .interval_ms = cfg->compaction_interval_ms,
        .min_age_ms = cfg->compaction_min_age_ms,
        .max_entries = (int)cfg->compaction_max_entries,
        .max_bytes = cfg->compaction_max_bytes,
        .wal_object_bytes = cfg->wal_flush_max_bytes,
        .wal_read_budget = cfg->compaction_wal_read_budget_bytes,
        .keymap_max_bytes = (size_t)cfg->compaction_keymap_max_bytes,
        .replaced_grace_ms = cfg->wal_gc_grace_ms,
        .owner_name = owner,
        .lease_ttl_ms = cfg->compaction_lease_ttl_ms,
        .retention = true,
        .retention_ms = cfg->log_retention_ms,
        .retention_bytes = cfg->log_retention_bytes,
        .retention_check_interval_ms = cfg->log_retention_check_interval_ms,
        .orphan_grace_ms = cfg->table_orphan_grace_ms,
        .cold_reads_table = cfg->table_cold_reads && strcmp(cfg->table_cold_reads, "table") == 0,
    };
    /* published for the REST catalog's threads (rest_held_reason), which
     * serve from before this point */
    __atomic_store_n(&b->compactor, ls_compactor_start(loop, b->logs, b->meta, b->os, &cc),
                     __ATOMIC_RELEASE);
    /* reads of ranges the compaction pass left only in a table (kind-3 index
     * entries): always served, whatever table.cold.reads says now, since an
     * earlier run may have written such entries */
    ls_cold_tables_config_t ctc = {.meta = b->meta,
                                   .os = b->os,
                                   .catalog = b->catalog,
                                   .table_defaults = b->table_defaults,
                                   .ntable_defaults = b->ntable_defaults,
                                   .registry = b->registry,
                                   .static_ts_type = ls_bcfg_static(cfg, LS_BCFG_TIMESTAMP_TYPE),
                                   .file_cache_bytes = (uint64_t)cfg->table_cold_cache_max_bytes};
    b->cold = ls_cold_tables_new(&ctc);
    ls_cold_source_t src;
    ls_cold_tables_source(b->cold, &src);
    ls_logstore_set_cold_source(b->logs, &src);
    ls_group_config_t gc;
    ls_group_config_from_broker(&gc, cfg);
    b->groups = ls_group_service_open(loop, b->meta, b->catalog, &gc,
                                      cfg->offsets_retention_check_interval_ms, b->node_id,
                                      group_offload, b);
    ls_sharep_config_t spc = {
        .delivery_count_limit = cfg->group_share_delivery_count_limit,
        .record_lock_duration_ms = cfg->group_share_record_lock_duration_ms,
        .max_record_locks = cfg->group_share_partition_max_record_locks,
    };
    b->shares =
        ls_share_store_new(b->meta, &spc, cfg->group_share_max_share_sessions, group_offload, b);
    ls_group_service_set_shares(b->groups, b->shares);
    st = start_http(b, err, errlen);
    if (st == LS_OK) st = start_registry(b, err, errlen);
    if (st != LS_OK) return st;
    services_init(b); /* before the transaction threads, which read it */
    st = start_txn(b, err, errlen);
    if (st != LS_OK) return st;
    b->ksvc.txns = ls_txcoord_store(b->txn);
    st = start_kafka(b, err, errlen);
    if (st != LS_OK) return open_failed(b, st);
    uv_async_init(loop, &b->members_changed, on_members_changed_loop);
    b->members_changed.data = b;
    ls_member_t self;
    self_member(b, &self);
    b->members = ls_membership_start(b->meta, &self, cfg->broker_session_timeout_ms,
                                     on_members_changed, b, err, errlen);
    if (!b->members) return open_failed(b, LS_EIO);
    LS_INFO("broker",
            "lakestream broker %d of cluster %s serving Kafka on %s:%d (objects: %s, metadata: %s)",
            b->node_id, b->cluster_id, cfg->listen_host, cfg->listen_port, cfg->object_store_url,
            cfg->metadata_url);
    return LS_OK;
}

void ls_broker_reload_tls(ls_broker_t *b)
{
    for (int i = 0; i < b->nkafka; i++) {
        char err[512];
        const char *name = ls_kafka_listener_name(b->kafka[i]);
        if (ls_kafka_listener_reload_tls(b->kafka[i], err, sizeof err) != LS_OK)
            LS_WARN("broker", "listener %s keeps its current certificate: %s", name, err);
        else if (ls_secproto_tls(ls_kafka_listener_protocol(b->kafka[i])))
            LS_INFO("broker", "listener %s: certificate and key reloaded", name);
    }
    ls_http_server_t *https[2] = {b->http, b->registry_http};
    for (int i = 0; i < 2; i++) {
        const char *name = i == 0 ? "http.listen" : "schema.registry.listen";
        const struct ls_http_sec_cfg *h = &b->cfg->http_sec[i];
        if (!https[i] || (!h->keystore_location && !h->keystore_certificate_chain)) continue;
        char err[512];
        ls_http_security_t sec;
        if (http_security(b, i, &sec, err, sizeof err) != LS_OK ||
            ls_http_server_reload_tls(https[i], sec.cert_pem, sec.key_pem, sec.truststore_pem, err,
                                      sizeof err) != 0)
            LS_WARN("broker", "%s keeps its current certificate: %s", name, err);
        else
            LS_INFO("broker", "%s: certificate and key reloaded", name);
        http_security_free(&sec);
    }
}

typedef struct stop_ctx {
    ls_broker_t *b;
    void (*done)(void *);
    void *arg;
    int listeners_open; /* Kafka listeners not closed yet */
} stop_ctx_t;

static void stop_listener_closed(void *arg)
{
    stop_ctx_t *s = arg;
    LS_INFO("broker", "stopped");
    void (*done)(void *) = s->done;
    void *darg = s->arg;
    ls_free(s);
    done(darg);
}

/* Each listener closed: the last one ends the stop. */
static void stop_one_listener_closed(void *arg)
{
    stop_ctx_t *s = arg;
    if (--s->listeners_open == 0) stop_listener_closed(s);
}

static void stop_logs_flushed(void *arg)
{
    stop_ctx_t *s = arg;
    LS_INFO("broker", "log storage flushed; closing connections");
    ls_broker_t *b = s->b; /* the last close may free s */
    s->listeners_open = b->nkafka;
    for (int i = 0, n = b->nkafka; i < n; i++)
        ls_kafka_listener_close(b->kafka[i], stop_one_listener_closed, s);
}

static void stop_compactor_idle(void *arg)
{
    stop_ctx_t *s = arg;
    ls_logstore_shutdown(s->b->logs, stop_logs_flushed, s);
}

static void deregister_work(void *arg)
{
    stop_ctx_t *s = arg;
    ls_txcoord_stop(s->b->txn); /* before membership: its sweep asks who is live */
    ls_membership_stop(s->b->members);
}

static void deregistered(void *arg)
{
    stop_ctx_t *s = arg;
    s->b->members = NULL;
    uv_close((uv_handle_t *)&s->b->members_changed, NULL);
    ls_compactor_stop(s->b->compactor, stop_compactor_idle, s);
}

void ls_broker_stop(ls_broker_t *b, void (*done)(void *arg), void *arg)
{
    if (b->stopping) return;
    b->stopping = 1;
    LS_INFO("broker", "stopping: no new requests; flushing buffered produce data");
    stop_ctx_t *s = LS_NEW(stop_ctx_t);
    s->b = b;
    s->done = done;
    s->arg = arg;
    ls_api_quiesce(b->api);       /* its requests wait on the Kafka listener: answer them */
    ls_http_server_stop(b->http); /* joins the HTTP threads: no handler runs after */
    b->http = NULL;
    ls_http_server_stop(b->registry_http);
    b->registry_http = NULL;
    ls_free(b->registry_rest);
    b->registry_rest = NULL;
    ls_http_basic_free(b->http_basic);
    b->http_basic = NULL;
    for (int i = 0; i < b->nkafka; i++)
        ls_kafka_listener_quiesce(b->kafka[i]);
    if (b->groups) ls_group_service_stop(b->groups); /* answers JoinGroup/SyncGroup waiters */
    /* deregister first: clients and the other brokers move on at once */
    ls_broker_offload(b, deregister_work, deregistered, s);
}

void ls_broker_free(ls_broker_t *b)
{
    ls_membership_stop(b->members);
    ls_api_quiesce(b->api);
    ls_http_server_stop(b->http);
    ls_rest_free(b->rest);
    ls_broker_metrics_stop(b->metrics);
    ls_api_free(b->api);
    ls_http_server_stop(b->registry_http);
    ls_free(b->registry_rest); /* a broker whose open failed never ran ls_broker_stop */
    ls_http_basic_free(b->http_basic);
    for (int i = 0; i < b->nkafka; i++)
        ls_kafka_listener_free(b->kafka[i]);
    ls_group_service_free(b->groups);
    /* after the loop ran dry: no marker of a stopped finisher is still being
     * appended, no request still reads its store */
    ls_txcoord_free(b->txn);
    if (b->compactor) ls_compactor_free(b->compactor);
    ls_registry_free(b->registry); /* after the compactor, which reads it */
    ls_free(b->warehouse_uri);
    ls_logstore_free(b->logs);
    /* after the log store: no cold read runs any more. A broker that never
     * served (its open failed) has no figures to tell: its last line stays
     * the error that stopped it. */
    if (b->cold && b->stopping) {
        ls_cold_tables_stats_t cs;
        ls_cold_tables_stats(b->cold, &cs);
        LS_INFO("broker",
                "cold reads from tables: %llu reads (%llu failed), %llu records rebuilt, "
                "%llu bytes of data files read (%llu ranged), %llu file reads from open files "
                "(%llu closed for the bound), plans: %llu loads, %llu hits, %llu stale, %llu "
                "evicted",
                (unsigned long long)cs.reads, (unsigned long long)cs.failures,
                (unsigned long long)cs.records_out, (unsigned long long)cs.bytes_read,
                (unsigned long long)cs.ranged, (unsigned long long)cs.files_kept_open,
                (unsigned long long)cs.file_cache_evictions, (unsigned long long)cs.plan_loads,
                (unsigned long long)cs.plan_hits, (unsigned long long)cs.stale,
                (unsigned long long)cs.evictions);
    }
    if (b->cold) ls_cold_tables_free(b->cold);
    if (b->catalog) ls_catalog_close(b->catalog);
    ls_authz_close(b->authz);
    ls_kquota_free(b->kquota);
    ls_quotas_close(b->quotas);
    ls_group_configs_close(b->group_configs);
    ls_telemetry_close(b->telemetry);
    ls_telemetry_subs_close(b->client_metrics);
    ls_share_store_free(b->shares);
    ls_oauth_close(b->oauth);
    ls_objstore_close(b->os);
    ls_meta_close(b->meta);
    ls_catalog_confs_install(NULL);
    memset(b, 0, sizeof *b);
}
