/* Handler unit-test harness (tests/unit/kafka/test_h_*.c): one broker's Kafka
 * services (kafka/services.h) on a libuv loop over the in-memory stores
 * (meta mem, objstore mem, a real logstore, catalog and quota store),
 * served by a real listener on 127.0.0.1:0. A test builds a request struct
 * of the generated codecs (kafka/msg_gen.h), kf_call() encodes it, sends it
 * over a TCP socket, runs the loop until the response frame is back, and
 * decodes it into the response struct.
 *
 * Why a real listener rather than a hand-made ls_kreq_t: a handler finishes
 * through conn.c (ls_kreq_respond, turns, throttling) and reads the peer,
 * principal and listener from the connection, so the handler runs exactly
 * as in the broker: key/version checks, in-order responses, offloaded work
 * on the libuv thread pool (kf_offload, as server/broker.c's offload).
 * Async handlers need nothing special. Deterministic: no sleeps, the loop
 * runs until the response is there.
 *
 * Usage: kf_open(&env) once per binary; kf_topic() to create topics;
 * kf_call(&env, key, version, &req, &resp, arena) per request (the response
 * lives in the arena); kf_hwm() to see what was appended; kf_close(&env).
 * Fields of env.cfg and env.svc (authz, ...) may be changed between calls.
 * Use a fresh topic name per test: the stores are shared by the binary.
 *
 * The group coordinator (group/group_service.h, over the same stores and
 * loop), the share-partition states and sessions (group/share_store.h),
 * the transaction coordinator's records (txn/txn_store.h) and the
 * client-metrics receiver (telemetry/receiver.h) are the real ones; only their embedder's side is
 * stubbed: transaction markers are not written (kf_txn_markers answers LS_OK; svc.txn_finish does
 * nothing), so a decided transaction stays decided, and the group and share configuration is the
 * broker's defaults (env.cfg at kf_open). */
#ifndef LS_TEST_KAFKA_FAKE_H
#define LS_TEST_KAFKA_FAKE_H
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/config.h"
#include "base/crc32c.h"
#include "group/group_service.h"
#include "group/share_store.h"
#include "kafka/api.h"
#include "kafka/conn.h"
#include "kafka/kquota.h"
#include "kafka/msg_gen.h"
#include "kafka/services.h"
#include "log/logstore.h"
#include "meta/meta.h"
#include "objstore/objstore.h"
#include "records/records.h"
#include "group/group_configs.h"
#include "security/authz.h"
#include "security/quotas.h"
#include "stream/catalog.h"
#include "server/settings.h"
#include "telemetry/receiver.h"
#include "telemetry/subscriptions.h"
#include "txn/txn_store.h"

/* Kafka's broker defaults of the group session and heartbeat settings, for
 * ls_group_configs_alter's heartbeat-below-session rule. */
static const ls_group_config_defaults_t KF_GROUP_DEFAULTS = {
    .consumer = {45000, 5000, {45000, 60000}, {5000, 15000}},
    .share = {45000, 5000, {45000, 60000}, {5000, 15000}},
    .streams = {45000, 5000, {45000, 60000}, {5000, 15000}},
    .share_lock_bounds = {15000, 60000},
    .share_delivery_bounds = {2, 10},
    .share_locks_bounds = {100, 4000}};

typedef struct kf_env {
    uv_loop_t loop;
    ls_config_t cfg;
    ls_meta_t *meta;
    ls_objstore_t *os;
    ls_logstore_t *logs;
    ls_catalog_t *catalog;
    ls_quotas_t *quotas;
    ls_group_configs_t *group_configs;
    ls_kquota_t *kquota;
    ls_group_service_t *groups;
    ls_share_store_t *shares;
    ls_txn_store_t *txns;
    ls_telemetry_subs_t *client_metrics;
    ls_telemetry_t *telemetry;
    ls_kafka_services_t svc;
    ls_kafka_listener_t *listener;      /* PLAINTEXT */
    ls_kafka_listener_t *sasl_listener; /* SASL_PLAINTEXT, once kf_sasl_listener asks */
    bool on_sasl;                       /* fd is connected to sasl_listener */
    int stopping;
    int fd; /* the client socket */
    int32_t corr;
} kf_env_t;

/* ---- the composition root's operations, as server/broker.c gives them */

typedef struct {
    uv_work_t w;
    void (*fn)(void *);
    void (*after)(void *);
    void *arg;
} kf_work_t;

static void kf_work_fn(uv_work_t *w)
{
    kf_work_t *k = (kf_work_t *)w;
    k->fn(k->arg);
}

static void kf_work_after(uv_work_t *w, int status)
{
    (void)status;
    kf_work_t *k = (kf_work_t *)w;
    if (k->after) k->after(k->arg);
    ls_free(k);
}

static void kf_offload(void *root, void (*fn)(void *), void (*after)(void *), void *arg)
{
    kf_env_t *e = root;
    kf_work_t *k = LS_NEW(kf_work_t);
    k->fn = fn;
    k->after = after;
    k->arg = arg;
    uv_queue_work(&e->loop, &k->w, kf_work_fn, kf_work_after);
}

static int kf_members(void *root, ls_member_t **out)
{
    kf_env_t *e = root;
    ls_member_t *m = ls_calloc(1, sizeof *m);
    m->id = e->svc.node_id;
    snprintf(m->host, sizeof m->host, "127.0.0.1");
    m->port = ls_kafka_listener_port(e->listener);
    *out = m;
    return 1;
}

static bool kf_table_lag(void *root, int64_t s, int64_t *lag)
{
    (void)root, (void)s, (void)lag;
    return false;
}

static const char *kf_table_version(void *root, int64_t s, const char **reason)
{
    (void)root, (void)s;
    *reason = NULL;
    return NULL;
}

static const char *kf_table_held(void *root, int64_t s)
{
    (void)root, (void)s;
    return NULL;
}

static bool kf_table_skipped(void *root, int64_t s, int64_t *n)
{
    (void)root, (void)s, (void)n;
    return false;
}

static void kf_tables_changed(void *root) { (void)root; }
static void kf_topics_deleted(void *root, int64_t d) { (void)root, (void)d; }

static int64_t kf_next_pid = 1000;
static ls_status kf_new_pid(void *root, int64_t *id)
{
    (void)root;
    *id = __atomic_fetch_add(&kf_next_pid, 1, __ATOMIC_SEQ_CST);
    return LS_OK;
}

static void kf_txn_finish(void *root, const char *tid) { (void)root, (void)tid; }

/* The transaction store's markers: none written (the harness has no
 * transaction thread); a decided record stays decided. */
static ls_status kf_log_markers(void *arg, const ls_txn_record_t *rec)
{
    (void)arg, (void)rec;
    return LS_OK;
}

static ls_status kf_group_marker(void *arg, const ls_txn_record_t *rec, const char *group)
{
    (void)arg, (void)rec, (void)group;
    return LS_OK;
}

static inline int kf_reconnect(kf_env_t *e);

/* 0, or -1 with why printed. */
static inline int kf_open(kf_env_t *e)
{
    char err[256] = "";
    memset(e, 0, sizeof *e);
    uv_loop_init(&e->loop);
    ls_config_init(&e->cfg, &ls_broker_settings);
    /* a broker's config always names its object store (ls_config_finish) */
    if (ls_config_set(&e->cfg, "object.store.url", "mem://", err, sizeof err) != 0) {
        printf("# kf_open: %s\n", err);
        return -1;
    }
    e->meta = ls_meta_mem_open();
    e->os = ls_objstore_mem_open();
    ls_logstore_config_t lc = {.flush_max_bytes = 1 << 20,
                               .flush_linger_ms = 1,
                               .max_inflight_flushes = 2,
                               .buffer_max_bytes = 64 << 20,
                               .read_cache_max_bytes = 64 << 20,
                               .broker_id = 1};
    e->logs = ls_logstore_open(&e->loop, e->meta, e->os, &lc, err, sizeof err);
    e->catalog = e->logs ? ls_catalog_open(e->meta, err, sizeof err) : NULL;
    e->quotas = e->catalog ? ls_quotas_open(e->meta, err, sizeof err) : NULL;
    e->group_configs = e->quotas ? ls_group_configs_open(e->meta, err, sizeof err) : NULL;
    e->client_metrics = e->group_configs ? ls_telemetry_subs_open(e->meta, err, sizeof err) : NULL;
    if (!e->client_metrics) {
        printf("# kf_open: %s\n", err);
        return -1;
    }
    e->kquota = ls_kquota_new(e->quotas, e->cfg.quota_window_num, e->cfg.quota_window_size_seconds);
    const ls_config_t *c = &e->cfg;
    ls_group_config_t gc;
    ls_group_config_from_broker(&gc, c);
    e->groups = ls_group_service_open(&e->loop, e->meta, e->catalog, &gc,
                                      c->offsets_retention_check_interval_ms, 1, kf_offload, e);
    ls_sharep_config_t spc = {.delivery_count_limit = c->group_share_delivery_count_limit,
                              .record_lock_duration_ms = c->group_share_record_lock_duration_ms,
                              .max_record_locks = c->group_share_partition_max_record_locks};
    e->shares = ls_share_store_new(e->meta, &spc, c->group_share_max_share_sessions, kf_offload, e);
    ls_group_service_set_shares(e->groups, e->shares);
    ls_txn_store_opts_t to = {.meta = e->meta,
                              .cfg = {.max_timeout_ms = c->transaction_max_timeout_ms,
                                      .id_expiration_ms = c->transactional_id_expiration_ms},
                              .markers = {kf_log_markers, kf_group_marker, e},
                              .new_producer_id = kf_new_pid,
                              .pid_arg = e};
    e->txns = ls_txn_store_new(&to);
    e->telemetry = ls_telemetry_open(e->client_metrics);
    ls_kafka_services_t *s = &e->svc;
    s->loop = &e->loop;
    s->cfg = &e->cfg;
    s->node_id = 1;
    s->cluster_id = "unit-cluster";
    s->catalog = e->catalog;
    s->logs = e->logs;
    s->stopping = &e->stopping;
    s->users_meta = e->meta;
    s->quotas = e->quotas;
    s->group_configs = e->group_configs;
    s->kquota = e->kquota;
    s->groups = e->groups;
    s->shares = e->shares;
    s->txns = e->txns;
    s->telemetry = e->telemetry;
    s->root = e;
    s->members = kf_members;
    s->table_lag = kf_table_lag;
    s->table_version = kf_table_version;
    s->table_held = kf_table_held;
    s->table_skipped = kf_table_skipped;
    s->tables_changed = kf_tables_changed;
    s->topics_deleted = kf_topics_deleted;
    s->offload = kf_offload;
    s->new_producer_id = kf_new_pid;
    s->txn_finish = kf_txn_finish;
    ls_listener_cfg_t l = {
        .name = "PLAINTEXT", .host = "127.0.0.1", .protocol = LS_SECPROTO_PLAINTEXT};
    e->listener = ls_kafka_listener_start(s, &l, err, sizeof err);
    if (!e->listener || ls_kafka_listener_port(e->listener) < 0) {
        printf("# kf_open: listener: %s\n", err);
        return -1;
    }
    return kf_reconnect(e);
}

/* A new client connection (after the broker closed the last one): 0 or -1. */
static inline int kf_reconnect(kf_env_t *e)
{
    if (e->fd > 0) close(e->fd);
    /* the kernel completes the handshake; the loop accepts it on the next run */
    e->fd = socket(AF_INET, SOCK_STREAM, 0);
    ls_kafka_listener_t *l = e->on_sasl ? e->sasl_listener : e->listener;
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)ls_kafka_listener_port(l))};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(e->fd, (struct sockaddr *)&a, sizeof a) != 0) {
        printf("# kf_open: connect: %s\n", strerror(errno));
        return -1;
    }
    return 0;
}

/* Reading the response: a poll on the client socket wakes the loop. */
typedef struct {
    ls_buf_t got;
    int done; /* 1: a whole frame; -1: the connection closed; -2: no answer */
} kf_read_t;

static void kf_on_readable(uv_poll_t *p, int status, int events)
{
    (void)status, (void)events;
    kf_read_t *r = p->data;
    uint8_t tmp[65536];
    int fd;
    uv_fileno((uv_handle_t *)p, &fd);
    ssize_t n = recv(fd, tmp, sizeof tmp, MSG_DONTWAIT);
    if (n <= 0) {
        if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) r->done = -1;
        return;
    }
    ls_buf_append(&r->got, tmp, (size_t)n);
    if (r->got.len >= 4 && r->got.len >= 4 + (size_t)ls_be32_get(r->got.data)) r->done = 1;
}

static void kf_poll_closed(uv_handle_t *h) { (void)h; }

#define KF_ANSWER_GUARD_MS 60000
static void kf_guard_due(uv_timer_t *t)
{
    kf_read_t *r = t->data;
    r->done = -2;
}

/* Runs the loop until a whole frame is in r (initialized here; the caller
 * frees r->got), the broker closed the connection, or the guard ran out. */
static inline void kf_await(kf_env_t *e, kf_read_t *r)
{
    memset(r, 0, sizeof *r);
    ls_buf_init(&r->got);
    uv_poll_t p;
    uv_poll_init(&e->loop, &p, e->fd);
    p.data = r;
    uv_poll_start(&p, UV_READABLE, kf_on_readable);
    /* a guard, not a timing assertion: a handler that never answers fails
     * the test instead of hanging it */
    uv_timer_t guard;
    uv_timer_init(&e->loop, &guard);
    guard.data = r;
    uv_timer_start(&guard, kf_guard_due, KF_ANSWER_GUARD_MS, 0);
    while (!r->done)
        uv_run(&e->loop, UV_RUN_ONCE);
    if (r->done == -2) printf("# kf_await: nothing in %d ms\n", KF_ANSWER_GUARD_MS);
    uv_close((uv_handle_t *)&guard, kf_poll_closed);
    uv_close((uv_handle_t *)&p, kf_poll_closed);
    uv_run(&e->loop, UV_RUN_NOWAIT);
}

/* Whether the broker closes the connection (after what it answered last)
 * without sending anything more. */
static inline bool kf_closed(kf_env_t *e)
{
    kf_read_t r;
    kf_await(e, &r);
    ls_buf_free(&r.got);
    return r.done == -1;
}

/* Sends request m (the api's ls_kafka_<Api>Request) at version, runs the
 * loop until its response is back and decodes it into resp (the api's
 * ls_kafka_<Api>Response; its strings and arrays in a). 0, or -1 when the
 * broker closed the connection (a request it refused to answer), the
 * response did not decode, or none came (an acks=0 Produce is not answered:
 * not for kf_call). */
static inline int kf_call(kf_env_t *e, int16_t key, int16_t version, const void *m, void *resp,
                          ls_arena_t *a);

/* kf_call with the body encoded at version but the header saying wire
 * (an unsupported version: wire outside the api's range). */
static inline int kf_call_as(kf_env_t *e, int16_t key, int16_t version, int16_t wire, const void *m,
                             void *resp, ls_arena_t *a)
{
    const ls_kafka_api_t *api = ls_kafka_api_find(key);
    bool flex = version >= api->first_flexible;
    ls_kw_t w;
    ls_kw_init(&w);
    ls_kw_reserve(&w, 4);
    ls_kw_i16(&w, key);
    ls_kw_i16(&w, wire);
    int32_t corr = ++e->corr;
    ls_kw_i32(&w, corr);
    ls_kw_str(&w, false, "unit"); /* client id: never compact */
    ls_kw_tags(&w, flex);
    api->msg->encode_request(&w, version, m);
    ls_kw_patch_i32(&w, 0, (int32_t)(w.total - 4));
    struct iovec *iov;
    int n = ls_kw_iovecs(&w, &iov);
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++)
        if (write(e->fd, iov[i].iov_base, iov[i].iov_len) != (ssize_t)iov[i].iov_len) rc = -1;
    ls_free(iov);
    ls_kw_free(&w);
    if (rc) return -1;

    kf_read_t r;
    kf_await(e, &r);
    rc = -1;
    if (r.done == 1) {
        /* the decoded response points into its bytes: keep them in a */
        uint8_t *bytes = ls_arena_alloc(a, r.got.len);
        memcpy(bytes, r.got.data, r.got.len);
        ls_kr_t rd;
        ls_kr_init(&rd, bytes + 4, r.got.len - 4);
        int32_t rcorr = ls_kr_i32(&rd);
        if (flex && key != 18) ls_kr_tags(&rd, true); /* response header v1 */
        memset(resp, 0, api->msg->response_size);
        if (rcorr == corr && api->msg->decode_response(&rd, version, a, resp) == 0 && !rd.err)
            rc = 0;
    }
    ls_buf_free(&r.got);
    return rc;
}

static inline int kf_call(kf_env_t *e, int16_t key, int16_t version, const void *m, void *resp,
                          ls_arena_t *a)
{
    return kf_call_as(e, key, version, version, m, resp, a);
}

static void kf_flag(void *arg) { *(int *)arg = 1; }

static inline void kf_close(kf_env_t *e)
{
    close(e->fd);
    ls_group_service_stop(e->groups); /* its timers close while the loop runs below */
    int done = 0;
    ls_kafka_listener_close(e->listener, kf_flag, &done);
    while (!done)
        uv_run(&e->loop, UV_RUN_ONCE);
    ls_kafka_listener_free(e->listener);
    if (e->sasl_listener) {
        done = 0;
        ls_kafka_listener_close(e->sasl_listener, kf_flag, &done);
        while (!done)
            uv_run(&e->loop, UV_RUN_ONCE);
        ls_kafka_listener_free(e->sasl_listener);
    }
    done = 0;
    ls_logstore_shutdown(e->logs, kf_flag, &done);
    while (!done)
        uv_run(&e->loop, UV_RUN_ONCE);
    ls_logstore_free(e->logs);
    ls_group_service_free(e->groups);
    ls_txn_store_free(e->txns);
    ls_catalog_close(e->catalog);
    ls_kquota_free(e->kquota);
    ls_quotas_close(e->quotas);
    ls_group_configs_close(e->group_configs);
    ls_share_store_free(e->shares);
    ls_telemetry_close(e->telemetry);
    ls_telemetry_subs_close(e->client_metrics);
    ls_meta_close(e->meta);
    ls_objstore_close(e->os);
    ls_config_free(&e->cfg);
}

/* Connects the client to a SASL_PLAINTEXT listener (started on first use)
 * offering mechanisms mechs (ls_sasl_mech bits, sasl.enabled.mechanisms):
 * 0, or -1 (printed). kf_plaintext_listener connects back. */
static inline int kf_sasl_listener(kf_env_t *e, unsigned mechs)
{
    char err[256] = "";
    e->svc.sasl_mechanisms = mechs;
    if (!e->sasl_listener) {
        ls_listener_cfg_t l = {
            .name = "SASL", .host = "127.0.0.1", .protocol = LS_SECPROTO_SASL_PLAINTEXT};
        e->sasl_listener = ls_kafka_listener_start(&e->svc, &l, err, sizeof err);
        if (!e->sasl_listener || ls_kafka_listener_port(e->sasl_listener) < 0) {
            printf("# kf_sasl_listener: %s\n", err);
            return -1;
        }
    }
    e->on_sasl = true;
    return kf_reconnect(e);
}

static inline int kf_plaintext_listener(kf_env_t *e)
{
    e->on_sasl = false;
    return kf_reconnect(e);
}

/* Whether response string s (not NUL-terminated) contains needle: how a
 * test checks that an error message names the field or value refused. */
static inline bool kf_kstr_has(ls_kstr_t s, const char *needle)
{
    size_t n = strlen(needle);
    for (int32_t i = 0; s.ptr && i + (int32_t)n <= s.len; i++)
        if (memcmp(s.ptr + i, needle, n) == 0) return true;
    return false;
}

/* Turns the ACL checks on with no binding stored and
 * allow.everyone.if.no.acl.found false, so every check of this client
 * (User:ANONYMOUS) is denied unless super (super.users, may be NULL) names
 * it: 0, or -1 (printed). kf_authz_off turns the checks off again. */
static inline int kf_authz_on(kf_env_t *e, const char *super)
{
    char err[256];
    e->svc.authz = ls_authz_open(e->meta, super, false, err, sizeof err);
    if (!e->svc.authz) printf("# kf_authz_on: %s\n", err);
    return e->svc.authz ? 0 : -1;
}

static inline void kf_authz_off(kf_env_t *e)
{
    ls_authz_close(e->svc.authz);
    e->svc.authz = NULL;
}

/* Creates topic (default namespace) with partitions: 0, or -1 (printed). */
static inline int kf_topic(kf_env_t *e, const char *topic, int32_t partitions)
{
    char err[256];
    if (ls_catalog_create(e->catalog, LS_DEFAULT_NAMESPACE, topic, partitions, NULL, 0, 0, NULL,
                          err, sizeof err) != LS_OK) {
        printf("# kf_topic %s: %s\n", topic, err);
        return -1;
    }
    return 0;
}

/* A transactional producer's pair (InitProducerId v4 answers it). */
typedef struct kf_pair {
    int64_t id;
    int16_t epoch;
} kf_pair_t;

/* InitProducerId v4 for transactional id tid: the error code (-1000: no
 * answer) and the pair in *p. */
static inline int kf_init_tid(kf_env_t *e, const char *tid, int32_t timeout_ms, kf_pair_t *p)
{
    ls_kafka_InitProducerIdRequest m = {.TransactionalId = {tid, (int32_t)strlen(tid)},
                                        .TransactionTimeoutMs = timeout_ms,
                                        .ProducerId = -1,
                                        .ProducerEpoch = -1};
    ls_arena_t *a = ls_arena_new();
    ls_kafka_InitProducerIdResponse r;
    int code = -1000;
    if (kf_call(e, 22, 4, &m, &r, a) == 0) {
        code = r.ErrorCode;
        if (p) *p = (kf_pair_t){r.ProducerId, r.ProducerEpoch};
    }
    ls_arena_free(a);
    return code;
}

/* AddPartitionsToTxn (v0-3) of topic partition 0 for tid's pair p: the
 * partition's code (-1000: no answer). */
static inline int kf_add_partition(kf_env_t *e, int16_t version, const char *tid, kf_pair_t p,
                                   const char *topic)
{
    int32_t part = 0;
    ls_kafka_AddPartitionsToTxnRequest_AddPartitionsToTxnTopic t = {
        .Name = {topic, (int32_t)strlen(topic)}, .Partitions = &part, .NumPartitions = 1};
    ls_kafka_AddPartitionsToTxnRequest m = {.TransactionalId = {tid, (int32_t)strlen(tid)},
                                            .ProducerId = p.id,
                                            .ProducerEpoch = p.epoch,
                                            .Topics = &t,
                                            .NumTopics = 1};
    ls_arena_t *a = ls_arena_new();
    ls_kafka_AddPartitionsToTxnResponse r;
    int code = -1000;
    if (kf_call(e, 24, version, &m, &r, a) == 0 && r.NumResults == 1 &&
        r.Results[0].NumResults == 1)
        code = r.Results[0].Results[0].ErrorCode;
    ls_arena_free(a);
    return code;
}

/* The next offset partition p of topic gets (its high watermark); -1: no
 * such topic. */
static inline int64_t kf_hwm(kf_env_t *e, const char *topic, int32_t p)
{
    ls_stream_t *s = ls_catalog_lookup(e->catalog, LS_DEFAULT_NAMESPACE, topic);
    if (!s) return -1;
    ls_log_info_t li;
    ls_logstore_info(e->logs, ls_stream_log_id(s, p), &li);
    ls_stream_release(s);
    return li.high_watermark;
}

static inline void kf_put_varint(ls_buf_t *b, int64_t v)
{
    uint64_t z = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
    do {
        uint8_t c = (uint8_t)((z & 0x7f) | (z > 0x7f ? 0x80 : 0));
        ls_buf_append(b, &c, 1);
        z >>= 7;
    } while (z);
}

/* A RecordBatch v2 of one record (a null key, a value of vlen bytes) into
 * out (initialized here), CRC sealed; pid -1, epoch -1, seq -1 for a batch
 * without idempotence. */
static inline void kf_batch(ls_buf_t *out, int64_t pid, int16_t epoch, int32_t seq, size_t vlen)
{
    ls_buf_t rec;
    ls_buf_init(&rec);
    uint8_t zero = 0;
    ls_buf_append(&rec, &zero, 1); /* attributes */
    kf_put_varint(&rec, 0);        /* timestamp delta */
    kf_put_varint(&rec, 0);        /* offset delta */
    kf_put_varint(&rec, -1);       /* key: null */
    kf_put_varint(&rec, (int64_t)vlen);
    for (size_t i = 0; i < vlen; i++)
        ls_buf_append(&rec, "v", 1);
    kf_put_varint(&rec, 0); /* headers */

    ls_buf_init(out);
    uint8_t h[LS_RB_HEADER_SIZE] = {0};
    ls_buf_append(out, h, sizeof h);
    kf_put_varint(out, (int64_t)rec.len);
    ls_buf_append(out, rec.data, rec.len);
    ls_buf_free(&rec);
    uint8_t *b = out->data;
    ls_be32_put(b + LS_RB_OFF_LENGTH, (uint32_t)(out->len - 12));
    b[LS_RB_OFF_MAGIC] = 2;
    ls_be64_put(b + LS_RB_OFF_BASE_TIMESTAMP, (uint64_t)1700000000000LL);
    ls_be64_put(b + LS_RB_OFF_MAX_TIMESTAMP, (uint64_t)1700000000000LL);
    ls_be64_put(b + LS_RB_OFF_PRODUCER_ID, (uint64_t)pid);
    ls_be16_put(b + LS_RB_OFF_PRODUCER_EPOCH, (uint16_t)epoch);
    ls_be32_put(b + LS_RB_OFF_BASE_SEQUENCE, (uint32_t)seq);
    ls_be32_put(b + LS_RB_OFF_RECORD_COUNT, 1);
    ls_be32_put(b + LS_RB_OFF_CRC, ls_crc32c(0, b + LS_RB_OFF_ATTRIBUTES, out->len - 21));
}

/* A Produce request of one batch to topic/partition (acks -1). */
typedef struct {
    ls_kafka_ProduceRequest m;
    ls_kafka_ProduceRequest_TopicProduceData td;
    ls_kafka_ProduceRequest_PartitionProduceData pd;
} kf_produce_t;

static inline void kf_produce_req(kf_produce_t *p, const char *topic, int32_t partition,
                                  const ls_buf_t *batch)
{
    memset(p, 0, sizeof *p);
    p->m.TransactionalId = (ls_kstr_t){NULL, -1};
    p->m.Acks = -1;
    p->m.TimeoutMs = 30000;
    p->m.TopicData = &p->td;
    p->m.NumTopicData = 1;
    p->td.Name = (ls_kstr_t){topic, (int32_t)strlen(topic)};
    p->td.PartitionData = &p->pd;
    p->td.NumPartitionData = 1;
    p->pd.Index = partition;
    p->pd.Records = (ls_kbytes_t){batch->data, (int32_t)batch->len};
}

/* Appends n one-record batches (values of 10 bytes) to topic/partition
 * through Produce v9: 0 (NONE), the first partition error code, or -1000
 * (no answer). */
static inline int kf_produce(kf_env_t *e, const char *topic, int32_t partition, int n)
{
    for (int i = 0; i < n; i++) {
        ls_buf_t b;
        kf_batch(&b, -1, -1, -1, 10);
        kf_produce_t p;
        kf_produce_req(&p, topic, partition, &b);
        ls_arena_t *a = ls_arena_new();
        ls_kafka_ProduceResponse r;
        int code = kf_call(e, 0, 9, &p.m, &r, a) == 0
                       ? r.Responses[0].PartitionResponses[0].ErrorCode
                       : -1000;
        ls_arena_free(a);
        ls_buf_free(&b);
        if (code) return code;
    }
    return 0;
}
#endif
