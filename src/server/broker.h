/* The broker: wires configuration, stores, catalog, log storage and the
 * protocol listeners onto one libuv loop. Owns every component; tears them
 * down in reverse order on shutdown (stop accepting, finish in-flight
 * flushes, close stores). */
#ifndef LS_BROKER_H
#define LS_BROKER_H
#include <stdint.h>
#include <uv.h>
#include "base/config.h"
#include "cluster/placement.h"
#include "kafka/services.h"
#include "log/logstore.h"
#include "meta/meta.h"
#include "objstore/objstore.h"
#include "security/http_auth.h"
#include "stream/catalog.h"
#include "stream/policy.h"

typedef struct ls_kafka_listener ls_kafka_listener_t;
struct ls_group_service;
struct ls_membership;

typedef struct ls_broker {
    uv_loop_t *loop;
    ls_config_t *cfg;
    ls_meta_t *meta;
    ls_objstore_t *os;
    ls_catalog_t *catalog;
    struct ls_authz *authz;   /* ACL authorizer (security/authz.h); NULL: authorization off */
    struct ls_quotas *quotas; /* client quotas of the cluster (security/quotas.h) */
    struct ls_group_configs *group_configs;   /* per-group overrides (group/group_configs.h) */
    struct ls_share_store *shares;            /* share partitions served (group/share_store.h) */
    struct ls_telemetry_subs *client_metrics; /* subscriptions (telemetry/subscriptions.h) */
    struct ls_telemetry *telemetry;           /* pushed client metrics (telemetry/receiver.h) */
    struct ls_kquota *kquota;                 /* this broker's quota windows (kafka/kquota.h) */
    ls_logstore_t *logs;
    ls_kafka_listener_t *kafka[LS_MAX_LISTENERS]; /* one per entry of listeners */
    int nkafka;
    struct ls_http_server *http; /* NULL when http.listen is empty (http/http_server.h) */
    struct ls_rest *rest;        /* the Iceberg REST catalog it serves (http/iceberg_rest.h) */
    struct ls_broker_metrics *metrics;    /* GET /metrics on http (server/broker_metrics.h) */
    struct ls_api *api;                   /* the Lakestream REST API on /api/v1 (api/rest_api.h) */
    struct ls_http_server *registry_http; /* NULL when schema.registry.listen is empty */
    struct ls_registry *registry;         /* the schema registry it serves (registry/registry.h) */
    struct ls_registry_rest *registry_rest; /* the registry's HTTP handler state */
    struct ls_http_basic *http_basic; /* Basic authentication of both HTTP listeners, when on */
    /* what each HTTP listener takes ([0] http, [1] schema registry; security/http_auth.h) */
    struct ls_http_authn http_authn[2];
    char *warehouse_uri;                         /* object store root URI: table locations */
    ls_prop_t table_defaults[LS_POLICY_NFIELDS]; /* cluster layer of the table policy */
    int ntable_defaults;
    struct ls_compactor *compactor;  /* WAL -> compacted objects (compact/compactor.h) */
    struct ls_cold_tables *cold;     /* reads of ranges kept only in tables (lake/cold_tables.h) */
    struct ls_group_service *groups; /* consumer-group coordinator (group/group_service.h) */
    struct ls_txcoord *txn;          /* transaction coordinator (server/txcoord.h) */
    struct ls_membership *members;   /* live brokers (cluster/membership.h) */
    uv_async_t members_changed;      /* membership thread -> loop */
    char cluster_id[64];
    int32_t node_id;
    int stopping;
    unsigned sasl_mechanisms; /* sasl.enabled.mechanisms (security/sasl.h bits) */
    struct ls_oauth *oauth;   /* JWT validator (security/oauth.h) of SASL/OAUTHBEARER and of
                               * HTTP Bearer; NULL if neither is enabled */
    ls_kafka_services_t ksvc; /* what the Kafka listener is handed */
} ls_broker_t;

/* Opens stores and components: LS_OK; or, with err filled, LS_EINVAL for a
 * setting that cannot work, LS_EIO for a store, listener or component that
 * could not be opened, or the metadata store's status. */
ls_status ls_broker_open(ls_broker_t *b, uv_loop_t *loop, ls_config_t *cfg, char *err,
                         size_t errlen);
/* Graceful stop; calls done on the loop when everything is flushed and closed. */
void ls_broker_stop(ls_broker_t *b, void (*done)(void *arg), void *arg);
void ls_broker_free(ls_broker_t *b);

/* The host and port the first listener advertises (the broker's registration). */
const char *ls_broker_advertised_host(const ls_broker_t *b);
int32_t ls_broker_advertised_port(const ls_broker_t *b);

/* Reads every TLS listener's certificate, key and trust material again
 * (SIGHUP; loop thread): new connections use them; a listener whose new
 * material is bad keeps the old and the log says why. */
void ls_broker_reload_tls(ls_broker_t *b);

/* A stream's table policy changed (loop thread): compaction re-reads the
 * policies now instead of at its next scheduled pass. */
void ls_broker_tables_changed(ls_broker_t *b);

/* Runs fn(arg) on a worker thread, then after(arg) on the loop thread. */
void ls_broker_offload(ls_broker_t *b, void (*fn)(void *arg), void (*after)(void *arg), void *arg);
#endif
