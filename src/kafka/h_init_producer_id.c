/* InitProducerId (key 22): producer ids for idempotent producers.
 *
 * Ids come from the services' new_producer_id (server/broker.c: one metadata
 * counter, /ls/counter/producer_id), so they are unique across brokers and
 * restarts and never reused; the first id is 1. Allocation is a blocking
 * metadata call and runs through ls_ksvc_offload().
 *
 *  - ProducerId -1 (all versions; the usual case): a new id, epoch 0.
 *  - v3+ with an existing ProducerId and ProducerEpoch (KIP-360: a producer
 *    recovering from UNKNOWN_PRODUCER_ID / an expired id): the same id with
 *    epoch + 1, which resets its sequence numbers without losing the id. When
 *    the epoch would reach INT16_MAX, a fresh id with epoch 0 instead (as
 *    Kafka does when an epoch is exhausted). Only one of the pair set is
 *    INVALID_REQUEST.
 *  - A non-null TransactionalId: the transaction coordinator's business
 *    (h_txn.c).
 * Authorization as Kafka's: WRITE on the TransactionalId
 * (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), else IDEMPOTENT_WRITE on the
 * cluster or WRITE on any topic (CLUSTER_AUTHORIZATION_FAILED). */
#include <string.h>

#include "base/diag.h"
#include "kafka/handlers.h"
#include "kafka/msg.h"
#include "kafka/services.h"

typedef struct ip_ctx {
    ls_kreq_t *req;
    ls_kafka_InitProducerIdResponse resp;
    ls_status st;
} ip_ctx_t;

static void ip_respond(ip_ctx_t *ctx)
{
    ls_kreq_t *req = ctx->req;
    ls_kw_t w;
    ls_kreq_encode(req, &w, &ctx->resp);
    ls_kreq_respond(req, &w);
}

static void ip_alloc_work(void *arg)
{
    ip_ctx_t *ctx = arg;
    int64_t id = -1;
    ctx->st = ctx->req->svc->new_producer_id(ctx->req->svc->root, &id);
    if (ctx->st == LS_OK) ctx->resp.ProducerId = id;
}

static void ip_alloc_done(void *arg)
{
    ip_ctx_t *ctx = arg;
    if (ctx->st != LS_OK) {
        LS_WARN("kafka", "InitProducerId: allocating a producer id failed: %s",
                ls_status_str(ctx->st));
        ctx->resp.ErrorCode = ls_kafka_error_from_status(ctx->st);
        ctx->resp.ProducerId = -1;
        ctx->resp.ProducerEpoch = -1;
    } else {
        ctx->resp.ProducerEpoch = 0;
    }
    ip_respond(ctx);
}

void ls_kafka_handle_init_producer_id(ls_kreq_t *req)
{
    ls_arena_t *a = req->arena;
    const ls_kafka_InitProducerIdRequest *m = req->msg;
    ip_ctx_t *ctx = ls_arena_alloc(a, sizeof *ctx);
    ctx->req = req;
    ctx->resp.ProducerId = -1;
    ctx->resp.ProducerEpoch = -1;
    if (m->TransactionalId.len >= 0) {
        /* as Kafka: WRITE on the transactional id */
        if (!ls_kreq_allowed_k(req, LS_ACL_OP_WRITE, LS_ACL_RES_TRANSACTIONAL_ID,
                               m->TransactionalId)) {
            ctx->resp.ErrorCode = LS_KERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
            ip_respond(ctx);
            return;
        }
        ls_kafka_init_transactional_producer(req);
        return;
    }
    /* idempotent: IDEMPOTENT_WRITE on the cluster, or WRITE on some topic */
    if (!ls_kreq_allowed_quiet(req, LS_ACL_OP_IDEMPOTENT_WRITE, LS_ACL_RES_CLUSTER,
                               LS_ACL_CLUSTER_NAME) &&
        !ls_kreq_allowed_any(req, LS_ACL_OP_WRITE, LS_ACL_RES_TOPIC)) {
        /* denied both ways: audited once, as the cluster operation */
        ls_kreq_allowed_cluster(req, LS_ACL_OP_IDEMPOTENT_WRITE);
        ctx->resp.ErrorCode = LS_KERR_CLUSTER_AUTHORIZATION_FAILED;
        ip_respond(ctx);
        return;
    }
    bool has_id = m->ProducerId >= 0, has_epoch = m->ProducerEpoch >= 0;
    if (has_id != has_epoch) {
        ctx->resp.ErrorCode = LS_KERR_INVALID_REQUEST;
        ip_respond(ctx);
        return;
    }
    if (has_id && m->ProducerEpoch < INT16_MAX - 1) {
        ctx->resp.ProducerId = m->ProducerId;
        ctx->resp.ProducerEpoch = (int16_t)(m->ProducerEpoch + 1);
        ip_respond(ctx);
        return;
    }
    ls_ksvc_offload(req->svc, ip_alloc_work, ip_alloc_done, ctx);
}
