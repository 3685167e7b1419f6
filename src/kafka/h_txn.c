/* The transaction coordinator's APIs: InitProducerId with a transactional
 * id (key 22), AddPartitionsToTxn (24), AddOffsetsToTxn (25), EndTxn (26).
 *
 * Each request is one run of a pure step of txn/txn.h over the id's record
 * in the metadata store (txn/txn_store.h: read, step, compare-and-set,
 * rerun on a lost compare), made on a worker thread; nothing is cached
 * here, so any broker may serve any id and two brokers acting on one id
 * serialize on its record. The id's coordinator is the rendezvous choice
 * over live brokers (FindCoordinator key type 1, h_group.c); another broker
 * answers NOT_COORDINATOR so that the work stays in one place.
 *
 * A step that leaves a decided record (EndTxn; the fencing abort of an
 * InitProducerId that finds an Ongoing transaction; any request that meets a
 * decision another broker left) hands the id to the broker's transaction
 * thread, which writes the markers and completes the record
 * (server/txcoord.h). EndTxn answers once the decision is durable, as
 * Kafka does; the client's next transaction waits on CONCURRENT_TRANSACTIONS
 * (retriable) until the markers are written.
 *
 * EndTxn v5 is transaction version 2 (KIP-890 part 2): the end bumps the
 * producer epoch and answers the new pair (txn.h, ls_txn_end); such clients
 * send no AddPartitionsToTxn / AddOffsetsToTxn: Produce v12 and
 * TxnOffsetCommit v5 add to the transaction themselves (ls_kafka_txn_join).
 *
 * Outcomes map to Kafka's codes per version (ls_kafka_txn_error): versions
 * that predate PRODUCER_FENCED get INVALID_PRODUCER_EPOCH; a store failure
 * is COORDINATOR_NOT_AVAILABLE (retriable). */
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/diag.h"
#include "kafka/handlers.h"
#include "kafka/msg.h"
#include "kafka/names.h"
#include "kafka/services.h"
#include "txn/txn_store.h"

int16_t ls_kafka_txn_error(ls_txn_err e, bool knows_producer_fenced)
{
    switch (e) {
    case LS_TXERR_NONE: return LS_KERR_NONE;
    case LS_TXERR_INVALID_TRANSACTION_TIMEOUT: return LS_KERR_INVALID_TRANSACTION_TIMEOUT;
    case LS_TXERR_CONCURRENT_TRANSACTIONS: return LS_KERR_CONCURRENT_TRANSACTIONS;
    case LS_TXERR_PRODUCER_FENCED:
        return knows_producer_fenced ? LS_KERR_PRODUCER_FENCED : LS_KERR_INVALID_PRODUCER_EPOCH;
    case LS_TXERR_INVALID_PRODUCER_ID_MAPPING: return LS_KERR_INVALID_PRODUCER_ID_MAPPING;
    case LS_TXERR_INVALID_TXN_STATE: return LS_KERR_INVALID_TXN_STATE;
    case LS_TXERR_TOO_MANY_PARTICIPANTS: return LS_KERR_INVALID_REQUEST;
    case LS_TXERR_NEED_PRODUCER_ID: break; /* internal: never answered */
    }
    return LS_KERR_UNKNOWN_SERVER_ERROR;
}

/* One coordinator request in flight: the decoded fields it needs on the
 * worker, and what the run answered. */
typedef struct txn_call {
    ls_kreq_t *req;
    char *tid; /* arena */
    int64_t producer_id;
    int16_t epoch;
    ls_status st; /* of the store */
    ls_txn_result_t res;
    /* InitProducerId */
    int32_t timeout_ms;
    /* AddPartitionsToTxn / AddOffsetsToTxn */
    ls_txn_partition_t *parts;
    int nparts;
    const char *group;
    /* EndTxn */
    bool commit;
} txn_call_t;

/* The Kafka code of a finished run, for a version knowing PRODUCER_FENCED
 * or not; a decided record is handed to the transaction thread. */
static int16_t call_outcome(txn_call_t *c, bool knows_producer_fenced)
{
    ls_kafka_services_t *svc = c->req->svc;
    if (c->st != LS_OK) {
        LS_WARN_RL("kafka", "%s for transactional id '%s': the metadata store failed (%s)",
                   ls_kafka_api_name(c->req->api_key), c->tid, ls_status_str(c->st));
        return LS_KERR_COORDINATOR_NOT_AVAILABLE;
    }
    if (c->res.finish || c->res.err == LS_TXERR_CONCURRENT_TRANSACTIONS)
        svc->txn_finish(svc->root, c->tid);
    if (c->res.err == LS_TXERR_TOO_MANY_PARTICIPANTS)
        LS_WARN("kafka",
                "transactional id '%s': a transaction may hold at most %d partitions and groups; "
                "the request was refused",
                c->tid, LS_TXN_MAX_PARTICIPANTS);
    return ls_kafka_txn_error(c->res.err, knows_producer_fenced);
}

/* NONE when this broker coordinates tid, else NOT_COORDINATOR; a tid that
 * is empty or not printable is INVALID_REQUEST (*tid stays NULL). */
static int16_t txn_target(ls_kreq_t *req, ls_kstr_t wire, char **tid)
{
    bool ok;
    *tid = ls_kafka_id_name(req->arena, wire, &ok);
    if (!*tid || !ok || !**tid) {
        *tid = NULL;
        return LS_KERR_INVALID_REQUEST;
    }
    ls_member_t owner;
    if (ls_ksvc_coordinator(req->svc, *tid, strlen(*tid), &owner) != req->svc->node_id)
        return LS_KERR_NOT_COORDINATOR;
    return LS_KERR_NONE;
}

/* txn_target for a request acting in the transaction (AddPartitionsToTxn,
 * AddOffsetsToTxn, EndTxn): first, as Kafka, WRITE on the transactional id
 * (TRANSACTIONAL_ID_AUTHORIZATION_FAILED). */
static int16_t txn_target_write(ls_kreq_t *req, ls_kstr_t wire, char **tid)
{
    if (!ls_kreq_allowed_k(req, LS_ACL_OP_WRITE, LS_ACL_RES_TRANSACTIONAL_ID, wire)) {
        *tid = NULL;
        return LS_KERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
    }
    return txn_target(req, wire, tid);
}

static txn_call_t *call_new(ls_kreq_t *req, char *tid, int64_t producer_id, int16_t epoch)
{
    txn_call_t *c = ls_arena_alloc(req->arena, sizeof *c);
    memset(c, 0, sizeof *c);
    c->req = req;
    c->tid = tid;
    c->producer_id = producer_id;
    c->epoch = epoch;
    return c;
}

static void respond(ls_kreq_t *req, const void *resp)
{
    ls_kw_t w;
    ls_kreq_encode(req, &w, resp);
    ls_kreq_respond(req, &w);
}

/* ------------------------------------------------------- InitProducerId */

static void init_work(void *arg)
{
    txn_call_t *c = arg;
    c->st = ls_txn_run_init(c->req->svc->txns, c->tid, c->timeout_ms, c->producer_id, c->epoch,
                            &c->res);
}

static void init_done(void *arg)
{
    txn_call_t *c = arg;
    ls_kafka_InitProducerIdResponse r = {.ProducerId = -1, .ProducerEpoch = -1};
    r.ErrorCode = call_outcome(c, c->req->api_version >= 4);
    if (r.ErrorCode == LS_KERR_NONE) {
        r.ProducerId = c->res.producer_id;
        r.ProducerEpoch = c->res.producer_epoch;
        LS_DEBUG("kafka", "transactional id '%s': producer id %lld epoch %d", c->tid,
                 (long long)r.ProducerId, (int)r.ProducerEpoch);
    }
    respond(c->req, &r);
}

void ls_kafka_init_transactional_producer(ls_kreq_t *req)
{
    const ls_kafka_InitProducerIdRequest *m = req->msg;
    char *tid;
    ls_kafka_InitProducerIdResponse r = {.ProducerId = -1, .ProducerEpoch = -1};
    r.ErrorCode = txn_target(req, m->TransactionalId, &tid);
    if (r.ErrorCode == LS_KERR_NONE && (m->ProducerId >= 0) != (m->ProducerEpoch >= 0))
        r.ErrorCode = LS_KERR_INVALID_REQUEST;
    if (r.ErrorCode != LS_KERR_NONE) {
        respond(req, &r);
        return;
    }
    txn_call_t *c = call_new(req, tid, m->ProducerId, m->ProducerEpoch);
    c->timeout_ms = m->TransactionTimeoutMs;
    ls_ksvc_offload(req->svc, init_work, init_done, c);
}

/* ---------------------------------------------------- AddPartitionsToTxn */

typedef struct add_parts {
    txn_call_t *c;
    ls_kafka_AddPartitionsToTxnResponse r;
} add_parts_t;

static void add_work(void *arg)
{
    txn_call_t *c = arg;
    c->st = ls_txn_run_add(c->req->svc->txns, c->tid, c->producer_id, c->epoch, c->parts, c->nparts,
                           c->group ? &c->group : NULL, c->group ? 1 : 0, &c->res);
}

/* Every partition result of r gets err. */
static void add_parts_fill(ls_kafka_AddPartitionsToTxnResponse *r, int16_t err)
{
    for (int t = 0; t < r->NumResults; t++)
        for (int p = 0; p < r->Results[t].NumResults; p++)
            r->Results[t].Results[p].ErrorCode = err;
}

static void add_parts_work(void *arg)
{
    add_parts_t *a = arg;
    add_work(a->c);
}

static void add_parts_done(void *arg)
{
    add_parts_t *a = arg;
    add_parts_fill(&a->r, call_outcome(a->c, a->c->req->api_version >= 2));
    respond(a->c->req, &a->r);
}

void ls_kafka_handle_add_partitions_to_txn(ls_kreq_t *req)
{
    const ls_kafka_AddPartitionsToTxnRequest *m = req->msg;
    ls_kafka_services_t *svc = req->svc;
    add_parts_t *a = ls_arena_alloc(req->arena, sizeof *a);
    memset(a, 0, sizeof *a);
    ls_kafka_AddPartitionsToTxnResponse *r = &a->r;
    r->NumResults = m->NumTopics;
    r->Results = ls_kmsg_alloc(req->arena, m->NumTopics, sizeof *r->Results);
    int total = 0;
    for (int t = 0; t < m->NumTopics; t++) {
        const ls_kafka_AddPartitionsToTxnRequest_AddPartitionsToTxnTopic *td = &m->Topics[t];
        r->Results[t].Name = td->Name;
        r->Results[t].NumResults = td->NumPartitions;
        r->Results[t].Results =
            ls_kmsg_alloc(req->arena, td->NumPartitions, sizeof *r->Results[t].Results);
        for (int p = 0; p < td->NumPartitions; p++)
            r->Results[t].Results[p].PartitionIndex = td->Partitions[p];
        total += td->NumPartitions;
    }
    char *tid;
    int16_t err = txn_target_write(req, m->TransactionalId, &tid);
    if (err != LS_KERR_NONE) {
        add_parts_fill(r, err);
        respond(req, r);
        return;
    }
    txn_call_t *c = call_new(req, tid, m->ProducerId, m->ProducerEpoch);
    a->c = c;
    c->parts = ls_arena_alloc(req->arena, sizeof *c->parts * (size_t)(total > 0 ? total : 1));
    /* Kafka: when any partition is unknown (or a topic the principal may
     * not WRITE), nothing is added; those say why and the others
     * OPERATION_NOT_ATTEMPTED */
    bool unknown = false;
    for (int t = 0; t < m->NumTopics; t++) {
        const ls_kafka_AddPartitionsToTxnRequest_AddPartitionsToTxnTopic *td = &m->Topics[t];
        char *name = ls_kafka_topic_name(req->arena, td->Name);
        if (!ls_kreq_allowed_k(req, LS_ACL_OP_WRITE, LS_ACL_RES_TOPIC, td->Name)) {
            for (int p = 0; p < td->NumPartitions; p++)
                r->Results[t].Results[p].ErrorCode = LS_KERR_TOPIC_AUTHORIZATION_FAILED;
            unknown = td->NumPartitions > 0 || unknown;
            continue;
        }
        ls_stream_t *s = name ? ls_catalog_lookup(svc->catalog, LS_DEFAULT_NAMESPACE, name) : NULL;
        for (int p = 0; p < td->NumPartitions; p++) {
            int32_t idx = td->Partitions[p];
            if (!s || idx < 0 || idx >= s->partitions) {
                r->Results[t].Results[p].ErrorCode = LS_KERR_UNKNOWN_TOPIC_OR_PARTITION;
                unknown = true;
                continue;
            }
            c->parts[c->nparts++] =
                (ls_txn_partition_t){.topic = name, .stream_no = s->stream_no, .partition = idx};
        }
        if (s) ls_stream_release(s);
    }
    if (unknown) {
        for (int t = 0; t < r->NumResults; t++)
            for (int p = 0; p < r->Results[t].NumResults; p++)
                if (r->Results[t].Results[p].ErrorCode == LS_KERR_NONE)
                    r->Results[t].Results[p].ErrorCode = LS_KERR_OPERATION_NOT_ATTEMPTED;
        respond(req, r);
        return;
    }
    ls_ksvc_offload(req->svc, add_parts_work, add_parts_done, a);
}

/* ------------------------------------------------------- AddOffsetsToTxn */

static void add_offsets_done(void *arg)
{
    txn_call_t *c = arg;
    ls_kafka_AddOffsetsToTxnResponse r = {.ErrorCode = call_outcome(c, c->req->api_version >= 2)};
    respond(c->req, &r);
}

void ls_kafka_handle_add_offsets_to_txn(ls_kreq_t *req)
{
    const ls_kafka_AddOffsetsToTxnRequest *m = req->msg;
    ls_kafka_AddOffsetsToTxnResponse r = {0};
    char *tid;
    r.ErrorCode = txn_target_write(req, m->TransactionalId, &tid);
    /* as Kafka: READ on the group whose offsets join the transaction */
    if (!r.ErrorCode && !ls_kreq_allowed_k(req, LS_ACL_OP_READ, LS_ACL_RES_GROUP, m->GroupId))
        r.ErrorCode = LS_KERR_GROUP_AUTHORIZATION_FAILED;
    bool ok = true;
    char *group = r.ErrorCode ? NULL : ls_kafka_id_name(req->arena, m->GroupId, &ok);
    if (!r.ErrorCode && (!group || !ok || !*group)) r.ErrorCode = LS_KERR_INVALID_GROUP_ID;
    if (r.ErrorCode != LS_KERR_NONE) {
        respond(req, &r);
        return;
    }
    txn_call_t *c = call_new(req, tid, m->ProducerId, m->ProducerEpoch);
    c->group = group;
    ls_ksvc_offload(req->svc, add_work, add_offsets_done, c);
}

/* ---------------------------------------------------------------- EndTxn */

static void end_work(void *arg)
{
    txn_call_t *c = arg;
    /* v5 is transaction version 2: the end bumps the epoch (txn.h) */
    c->st = ls_txn_run_end(c->req->svc->txns, c->tid, c->producer_id, c->epoch, c->commit,
                           c->req->api_version >= 5, &c->res);
}

static void end_done(void *arg)
{
    txn_call_t *c = arg;
    ls_kafka_EndTxnResponse r = {.ErrorCode = call_outcome(c, c->req->api_version >= 2),
                                 .ProducerId = -1,
                                 .ProducerEpoch = -1};
    if (r.ErrorCode == LS_KERR_NONE && c->req->api_version >= 5) {
        r.ProducerId = c->res.producer_id;
        r.ProducerEpoch = c->res.producer_epoch;
        LS_DEBUG("kafka", "transactional id '%s': ended, next producer id %lld epoch %d", c->tid,
                 (long long)r.ProducerId, (int)r.ProducerEpoch);
    }
    respond(c->req, &r);
}

void ls_kafka_handle_end_txn(ls_kreq_t *req)
{
    const ls_kafka_EndTxnRequest *m = req->msg;
    ls_kafka_EndTxnResponse r = {0};
    char *tid;
    r.ErrorCode = txn_target_write(req, m->TransactionalId, &tid);
    if (r.ErrorCode != LS_KERR_NONE) {
        respond(req, &r);
        return;
    }
    txn_call_t *c = call_new(req, tid, m->ProducerId, m->ProducerEpoch);
    c->commit = m->Committed;
    ls_ksvc_offload(req->svc, end_work, end_done, c);
}
