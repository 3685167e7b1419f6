/* TxnOffsetCommit (key 28, KIP-447): a transactional producer's consumer
 * offsets, stored pending in the group until the transaction's group marker
 * commits or drops them (group/group_txn.h). Sent to the group's
 * coordinator, like OffsetCommit.
 *
 * Flow (the loop, except where a worker is named):
 *  1. a worker reads the transactional id's record: it must be Ongoing with
 *     the request's producer pair and the group among its participants
 *     (ls_txn_check_offsets), which names the transaction (txn_seq). v5+ is
 *     transaction version 2 (KIP-890 part 2): the client sent no
 *     AddOffsetsToTxn, so when the group is not in the transaction yet (or
 *     no transaction is open) the worker first runs the coordinator's add
 *     step for it (ls_txn_run_add, the compare-and-set AddOffsetsToTxn runs;
 *     it begins the transaction if none is open) and reads the record
 *     again;
 *  2. the group: membership (ls_group_txn_commit_check: v3+ generation,
 *     member and instance id as OffsetCommit checks them), the topics against
 *     the catalog, the metadata size; then the offsets are written pending
 *     under the group's owner fence (ls_group_service_txn_commit);
 *  3. a worker reads the record again. Still Ongoing at txn_seq: the
 *     decision, and so the marker, come after the write, which the marker
 *     will see. Otherwise the transaction was decided while we wrote (a
 *     timeout, a new instance's InitProducerId) and its marker may have
 *     missed these keys: we run it ourselves for them (markers are
 *     idempotent) with the outcome the record names, and answer it.
 * So no pending offset outlives its transaction.
 *
 * Outcomes, as Kafka's group coordinator answers them after verifying the
 * transaction: unknown id or another producer id INVALID_PRODUCER_ID_MAPPING;
 * another epoch INVALID_PRODUCER_EPOCH (no version of this API knows
 * PRODUCER_FENCED); a decision being completed CONCURRENT_TRANSACTIONS
 * (retriable); the group not in the transaction, or the transaction over,
 * TRANSACTION_ABORTABLE from v4, INVALID_TXN_STATE before; a store failure
 * COORDINATOR_NOT_AVAILABLE; a broker that does not coordinate the group
 * NOT_COORDINATOR.
 *
 * Threads: the loop, and the two worker steps above (store reads, and the
 * marker of step 3). */
#include <string.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/diag.h"
#include "group/group_service.h"
#include "kafka/handlers.h"
#include "kafka/msg.h"
#include "kafka/names.h"
#include "kafka/services.h"
#include "txn/txn_store.h"

typedef struct toc {
    ls_kreq_t *req;
    const ls_kafka_TxnOffsetCommitRequest *m;
    char *tid, *gid;
    ls_kafka_TxnOffsetCommitResponse resp;
    ls_group_commit_item_t *items; /* the partitions written */
    int16_t **codes;               /* per item: where its code goes */
    int nitems;
    /* worker results */
    ls_status st;
    ls_txn_err err;
    bool prepared; /* the record is decided (a completion is running) */
    int64_t txn_seq;
} toc_t;

static ls_group_service_t *svc(toc_t *t) { return t->req->svc->groups; }

static void toc_respond(toc_t *t)
{
    ls_kw_t w;
    ls_kreq_encode(t->req, &w, &t->resp);
    ls_kreq_respond(t->req, &w);
}

/* Every partition's code: err. */
static void toc_fill(toc_t *t, int16_t err)
{
    ls_arena_t *a = t->req->arena;
    ls_kafka_TxnOffsetCommitResponse *r = &t->resp;
    r->NumTopics = t->m->NumTopics;
    r->Topics = ls_kmsg_alloc(a, t->m->NumTopics, sizeof *r->Topics);
    for (int32_t i = 0; i < t->m->NumTopics; i++) {
        const ls_kafka_TxnOffsetCommitRequest_Topic *qt = &t->m->Topics[i];
        r->Topics[i].Name = qt->Name;
        r->Topics[i].NumPartitions = qt->NumPartitions;
        r->Topics[i].Partitions =
            ls_kmsg_alloc(a, qt->NumPartitions, sizeof *r->Topics[i].Partitions);
        for (int32_t j = 0; j < qt->NumPartitions; j++) {
            r->Topics[i].Partitions[j].PartitionIndex = qt->Partitions[j].PartitionIndex;
            r->Topics[i].Partitions[j].ErrorCode = err;
        }
    }
}

static void toc_fail(toc_t *t, int16_t err)
{
    toc_fill(t, err);
    toc_respond(t);
}

/* The Kafka code of a failed check of the transaction. */
static int16_t txn_code(toc_t *t)
{
    if (t->st != LS_OK && t->st != LS_ENOTFOUND) {
        LS_WARN_RL("kafka",
                   "TxnOffsetCommit for transactional id '%s': the metadata store failed (%s)",
                   t->tid, ls_status_str(t->st));
        return LS_KERR_COORDINATOR_NOT_AVAILABLE;
    }
    if (t->st == LS_ENOTFOUND) return LS_KERR_INVALID_PRODUCER_ID_MAPPING;
    if (t->err == LS_TXERR_TOO_MANY_PARTICIPANTS) { /* the v5 add */
        LS_WARN("kafka",
                "transactional id '%s': a transaction may hold at most %d partitions and groups; "
                "TxnOffsetCommit of group '%s' refused",
                t->tid, LS_TXN_MAX_PARTICIPANTS, t->gid);
        return LS_KERR_TRANSACTION_ABORTABLE;
    }
    if (t->err == LS_TXERR_INVALID_TXN_STATE) {
        if (t->prepared) {
            ls_kafka_services_t *b = t->req->svc;
            b->txn_finish(b->root, t->tid); /* whoever decided may be gone */
            return LS_KERR_CONCURRENT_TRANSACTIONS;
        }
        return t->req->api_version >= 4 ? LS_KERR_TRANSACTION_ABORTABLE : LS_KERR_INVALID_TXN_STATE;
    }
    return ls_kafka_txn_error(t->err, false);
}

/* Worker: the record, checked for this request (sets st, err, prepared, txn_seq). */
static void check_txn(toc_t *t, ls_txn_record_t *rec)
{
    int64_t rev;
    t->st = ls_txn_load(t->req->svc->txns, t->tid, rec, &rev);
    if (t->st != LS_OK) return;
    t->prepared = ls_txn_state_prepared(rec->state);
    t->err = ls_txn_check_offsets(rec, t->m->ProducerId, t->m->ProducerEpoch, t->gid, &t->txn_seq);
}

/* ------------------------------------------------------- 3. after the write */

static void recheck_work(void *arg)
{
    toc_t *t = arg;
    int64_t seq = t->txn_seq;
    ls_txn_record_t rec;
    check_txn(t, &rec);
    if (t->st != LS_OK && t->st != LS_ENOTFOUND) return; /* the client retries */
    bool committed = false;
    if (t->st == LS_OK) {
        if (t->err == LS_TXERR_NONE && t->txn_seq == seq) {
            ls_txn_record_free(&rec); /* still open: its marker comes later */
            return;
        }
        committed = rec.txn_seq == seq &&
                    (rec.state == LS_TXN_PREPARE_COMMIT || rec.state == LS_TXN_COMPLETE_COMMIT);
        ls_txn_record_free(&rec);
    }
    /* decided (or gone) meanwhile: settle what we wrote with its outcome */
    t->txn_seq = seq;
    t->st = ls_group_service_txn_marker(svc(t), t->gid, t->m->ProducerId, seq, committed);
    t->prepared = false;
    t->err = committed ? LS_TXERR_NONE : LS_TXERR_INVALID_TXN_STATE;
}

static void recheck_done(void *arg)
{
    toc_t *t = arg;
    int16_t code = t->st == LS_OK && t->err == LS_TXERR_NONE ? LS_KERR_NONE : txn_code(t);
    for (int i = 0; i < t->nitems; i++)
        *t->codes[i] = code;
    toc_respond(t);
}

/* ------------------------------------------------------- 2. the group */

static void written(void *arg, ls_status st)
{
    toc_t *t = arg;
    if (st != LS_OK) {
        int16_t code = ls_kafka_group_write_error(st);
        for (int i = 0; i < t->nitems; i++)
            *t->codes[i] = code;
        toc_respond(t);
        return;
    }
    ls_ksvc_offload(t->req->svc, recheck_work, recheck_done, t);
}

static void group_ready(void *arg, ls_group_t *g)
{
    toc_t *t = arg;
    ls_kreq_t *req = t->req;
    ls_arena_t *a = req->arena;
    if (!g) {
        toc_fail(t, LS_KERR_COORDINATOR_NOT_AVAILABLE);
        return;
    }
    bool ok;
    ls_group_err ge =
        ls_group_txn_commit_check(g, t->m->GenerationId, ls_kafka_id_name(a, t->m->MemberId, &ok),
                                  ls_kafka_id_name(a, t->m->GroupInstanceId, &ok));
    toc_fill(t, ls_kafka_group_error(ge));
    if (ge != LS_GERR_NONE) {
        toc_respond(t);
        return;
    }
    int total = 0;
    for (int32_t i = 0; i < t->m->NumTopics; i++)
        total += t->m->Topics[i].NumPartitions;
    t->items = ls_kmsg_alloc(a, total, sizeof *t->items);
    t->codes = ls_kmsg_alloc(a, total, sizeof *t->codes);
    int32_t maxmeta =
        ls_group_coord_config(ls_group_service_coord(svc(t)))->offset_metadata_max_bytes;
    int64_t now = ls_clock_wall_ms();
    for (int32_t i = 0; i < t->m->NumTopics; i++) {
        const ls_kafka_TxnOffsetCommitRequest_Topic *qt = &t->m->Topics[i];
        char *topic = ls_kafka_topic_name(a, qt->Name);
        bool denied = !ls_kreq_allowed_k(req, LS_ACL_OP_READ, LS_ACL_RES_TOPIC, qt->Name);
        ls_stream_t *s = topic && !denied
                             ? ls_catalog_lookup(req->svc->catalog, LS_DEFAULT_NAMESPACE, topic)
                             : NULL;
        for (int32_t j = 0; j < qt->NumPartitions; j++) {
            const ls_kafka_TxnOffsetCommitRequest_Partition *qp = &qt->Partitions[j];
            int16_t *code = &t->resp.Topics[i].Partitions[j].ErrorCode;
            if (denied) {
                *code = LS_KERR_TOPIC_AUTHORIZATION_FAILED;
                continue;
            }
            *code = ls_kafka_commit_item(a, &t->items[t->nitems], s, topic, qp->PartitionIndex,
                                         qp->CommittedOffset, qp->CommittedLeaderEpoch,
                                         qp->CommittedMetadata, maxmeta, now);
            if (*code == LS_KERR_NONE) t->codes[t->nitems++] = code;
        }
        ls_stream_release(s);
    }
    if (t->nitems == 0) {
        toc_respond(t);
        return;
    }
    ls_group_txn_offsets_added(g);
    ls_group_service_txn_commit(svc(t), t->gid, t->m->ProducerId, t->txn_seq, t->items, t->nitems,
                                written, t);
}

/* ------------------------------------------------------- 1. the transaction */

static void check_work(void *arg)
{
    toc_t *t = arg;
    ls_txn_record_t rec;
    check_txn(t, &rec);
    if (t->st == LS_OK) ls_txn_record_free(&rec);
    if (t->req->api_version < 5 || t->st != LS_OK || t->err != LS_TXERR_INVALID_TXN_STATE ||
        t->prepared)
        return;
    /* transaction version 2: add the group to the transaction (step 1) */
    const char *g = t->gid;
    ls_txn_result_t res;
    t->st = ls_txn_run_add(t->req->svc->txns, t->tid, t->m->ProducerId, t->m->ProducerEpoch, NULL,
                           0, &g, 1, &res);
    if (t->st != LS_OK) return;
    if (res.err != LS_TXERR_NONE) {
        t->err = res.err;
        return;
    }
    check_txn(t, &rec);
    if (t->st == LS_OK) ls_txn_record_free(&rec);
}

static void check_done(void *arg)
{
    toc_t *t = arg;
    if (t->st != LS_OK || t->err != LS_TXERR_NONE) {
        toc_fail(t, txn_code(t));
        return;
    }
    ls_group_acquire(ls_group_service_coord(svc(t)), t->gid, group_ready, t);
}

void ls_kafka_handle_txn_offset_commit(ls_kreq_t *req)
{
    toc_t *t = ls_arena_alloc(req->arena, sizeof *t);
    memset(t, 0, sizeof *t);
    t->req = req;
    t->m = req->msg;
    bool gid_ok, tid_ok;
    t->gid = ls_kafka_id_name(req->arena, t->m->GroupId, &gid_ok);
    t->tid = ls_kafka_id_name(req->arena, t->m->TransactionalId, &tid_ok);
    /* as Kafka: WRITE on the transactional id, READ on the group, READ on
     * each topic (group_ready) */
    if (!ls_kreq_allowed_k(req, LS_ACL_OP_WRITE, LS_ACL_RES_TRANSACTIONAL_ID,
                           t->m->TransactionalId)) {
        toc_fail(t, LS_KERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
        return;
    }
    if (!ls_kreq_allowed_k(req, LS_ACL_OP_READ, LS_ACL_RES_GROUP, t->m->GroupId)) {
        toc_fail(t, LS_KERR_GROUP_AUTHORIZATION_FAILED);
        return;
    }
    if (!gid_ok || !t->gid || !*t->gid) {
        toc_fail(t, LS_KERR_INVALID_GROUP_ID);
        return;
    }
    if (ls_table_group_id(t->gid)) { /* read-only (h_group.c "Tables as groups") */
        LS_INFO("kafka",
                "TxnOffsetCommit to group %s refused: the lakestream.table.* groups are "
                "read-only",
                t->gid);
        toc_fail(t, LS_KERR_GROUP_AUTHORIZATION_FAILED);
        return;
    }
    if (!tid_ok || !t->tid || !*t->tid) {
        toc_fail(t, LS_KERR_INVALID_REQUEST);
        return;
    }
    if (!req->svc->groups || !req->svc->txns) {
        toc_fail(t, LS_KERR_COORDINATOR_NOT_AVAILABLE);
        return;
    }
    ls_member_t owner;
    if (ls_ksvc_coordinator(req->svc, t->gid, strlen(t->gid), &owner) != req->svc->node_id) {
        toc_fail(t, LS_KERR_NOT_COORDINATOR);
        return;
    }
    ls_ksvc_offload(req->svc, check_work, check_done, t);
}
