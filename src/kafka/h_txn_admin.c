/* The transaction admin APIs (KIP-664, Kafka's TransactionsCommand):
 * DescribeTransactions (key 65), ListTransactions (66), DescribeProducers
 * (61), and WriteTxnMarkers (27) restricted to aborting a hanging
 * transaction.
 *
 * Design note (docs/ARCHITECTURE.md, "Transactions", "APIs, in build order"):
 *  - DescribeTransactions and ListTransactions read the coordinator's records
 *    (txn/txn_store.h) on a worker, never a cache: what they show is what the
 *    store holds. Each answers only for the ids this broker coordinates (the
 *    rendezvous choice, decided on the loop): DescribeTransactions says
 *    NOT_COORDINATOR for the others, ListTransactions leaves them out, as a
 *    Kafka coordinator shows its own partitions of __transaction_state only;
 *    admin clients ask every broker.
 *  - DescribeProducers answers from the log heads in memory (the loop's
 *    copies, current through commits and the watch), so any broker answers
 *    for any partition. There is no coordinator epoch here: -1.
 *  - WriteTxnMarkers is Kafka's broker-to-broker call; here the coordinator
 *    appends its markers itself, so the only caller is an operator aborting a
 *    *hanging* transaction: one open on a log while its coordinator no longer
 *    runs it (a batch that reopened an ended transaction). It is served for
 *    exactly that: an abort marker for a producer whose transaction is open
 *    on the log, at an epoch no older than the log's. A commit marker is
 *    refused (INVALID_REQUEST): a commit decided outside the coordinator
 *    could break atomicity. A transaction its coordinator still runs (its
 *    record Ongoing or Prepare* at the log's txn_seq) is refused
 *    (INVALID_TXN_STATE): it ends by its producer, its timeout or its
 *    decision, and an abort here would split it. The marker goes through the
 *    same append as the coordinator's (ls_append_t.marker), so it closes the
 *    transaction, raises ended_seq and writes the aborted index like any
 *    abort.
 * Threads: handlers and completions on the loop; store reads on workers. */
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/clock.h"
#include "base/diag.h"
#include "kafka/handlers.h"
#include "kafka/msg.h"
#include "kafka/names.h"
#include "kafka/services.h"
#include "records/records.h"
#include "txn/txn_store.h"

static void respond(ls_kreq_t *req, const void *resp)
{
    ls_kw_t w;
    ls_kreq_encode(req, &w, resp);
    ls_kreq_respond(req, &w);
}

static bool coordinated_here(ls_kreq_t *req, const char *tid)
{
    ls_member_t owner;
    return ls_ksvc_coordinator(req->svc, tid, strlen(tid), &owner) == req->svc->node_id;
}

/* Kafka's TransactionStartTimeMs: -1 when no transaction has begun. */
static int64_t start_ms(const ls_txn_record_t *r)
{
    return r->state != LS_TXN_EMPTY && r->txn_start_ms > 0 ? r->txn_start_ms : -1;
}

/* ------------------------------------------------- DescribeTransactions */

typedef struct describe_one {
    char *tid; /* arena; NULL: answered on the loop already */
    ls_status st;
    ls_txn_record_t rec;
} describe_one_t;

typedef struct describe_call {
    ls_kreq_t *req;
    ls_kafka_DescribeTransactionsResponse r;
    describe_one_t *ids;
} describe_call_t;

static void describe_work(void *arg)
{
    describe_call_t *c = arg;
    for (int i = 0; i < c->r.NumTransactionStates; i++) {
        int64_t rev;
        if (c->ids[i].tid)
            c->ids[i].st = ls_txn_load(c->req->svc->txns, c->ids[i].tid, &c->ids[i].rec, &rev);
    }
}

/* The record's partitions grouped by topic (their order of addition). */
static void describe_topics(ls_kreq_t *req, const ls_txn_record_t *rec,
                            ls_kafka_DescribeTransactionsResponse_TransactionState *ts)
{
    ls_arena_t *a = req->arena;
    ts->Topics = ls_kmsg_alloc(a, rec->npartitions, sizeof *ts->Topics);
    for (int i = 0; i < rec->npartitions; i++) {
        const ls_txn_partition_t *p = &rec->partitions[i];
        /* as Kafka: topics the principal may not DESCRIBE are left out */
        if (!ls_kreq_allowed_quiet(req, LS_ACL_OP_DESCRIBE, LS_ACL_RES_TOPIC, p->topic)) continue;
        ls_kafka_DescribeTransactionsResponse_TopicData *td = NULL;
        for (int t = 0; t < ts->NumTopics && !td; t++)
            if (ls_kstr_eq(ts->Topics[t].Topic, p->topic)) td = &ts->Topics[t];
        if (!td) {
            td = &ts->Topics[ts->NumTopics++];
            size_t n = strlen(p->topic);
            char *name = ls_arena_alloc(a, n + 1);
            memcpy(name, p->topic, n);
            td->Topic = ls_kstr_c(name);
            td->Partitions = ls_kmsg_alloc(a, rec->npartitions, sizeof *td->Partitions);
        }
        td->Partitions[td->NumPartitions++] = p->partition;
    }
}

static void describe_done(void *arg)
{
    describe_call_t *c = arg;
    for (int i = 0; i < c->r.NumTransactionStates; i++) {
        describe_one_t *d = &c->ids[i];
        ls_kafka_DescribeTransactionsResponse_TransactionState *ts = &c->r.TransactionStates[i];
        if (!d->tid) continue;
        if (d->st == LS_ENOTFOUND) {
            ts->ErrorCode = LS_KERR_TRANSACTIONAL_ID_NOT_FOUND;
            continue;
        }
        if (d->st != LS_OK) {
            LS_WARN_RL("kafka", "DescribeTransactions of '%s': reading its record failed (%s)",
                       d->tid, ls_status_str(d->st));
            ts->ErrorCode = LS_KERR_COORDINATOR_NOT_AVAILABLE;
            continue;
        }
        ts->TransactionState = ls_kstr_c(ls_txn_state_name(d->rec.state));
        ts->TransactionTimeoutMs = d->rec.timeout_ms;
        ts->TransactionStartTimeMs = start_ms(&d->rec);
        ts->ProducerId = d->rec.producer_id;
        ts->ProducerEpoch = d->rec.producer_epoch;
        describe_topics(c->req, &d->rec, ts);
        ls_txn_record_free(&d->rec);
    }
    respond(c->req, &c->r);
}

void ls_kafka_handle_describe_transactions(ls_kreq_t *req)
{
    const ls_kafka_DescribeTransactionsRequest *m = req->msg;
    describe_call_t *c = ls_arena_alloc(req->arena, sizeof *c);
    c->req = req;
    int n = m->NumTransactionalIds;
    c->r.NumTransactionStates = n;
    c->r.TransactionStates = ls_kmsg_alloc(req->arena, n, sizeof *c->r.TransactionStates);
    c->ids = ls_kmsg_alloc(req->arena, n, sizeof *c->ids);
    int pending = 0;
    for (int i = 0; i < n; i++) {
        ls_kafka_DescribeTransactionsResponse_TransactionState *ts = &c->r.TransactionStates[i];
        ts->TransactionalId = m->TransactionalIds[i];
        ts->TransactionState = ls_kstr_c("");
        ts->TransactionStartTimeMs = -1;
        ts->ProducerId = -1;
        ts->ProducerEpoch = -1;
        bool ok;
        char *tid = ls_kafka_id_name(req->arena, m->TransactionalIds[i], &ok);
        if (!tid || !ok || !*tid) {
            ts->ErrorCode = LS_KERR_INVALID_REQUEST;
            if (ts->TransactionalId.len < 0) ts->TransactionalId = ls_kstr_c("");
        } else if (!ls_kreq_allowed(req, LS_ACL_OP_DESCRIBE, LS_ACL_RES_TRANSACTIONAL_ID, tid)) {
            ts->ErrorCode = LS_KERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED; /* as Kafka */
        } else if (!coordinated_here(req, tid)) {
            ts->ErrorCode = LS_KERR_NOT_COORDINATOR;
        } else {
            c->ids[i].tid = tid;
            pending++;
        }
    }
    if (pending == 0) {
        respond(req, &c->r);
        return;
    }
    ls_ksvc_offload(req->svc, describe_work, describe_done, c);
}

/* ----------------------------------------------------- ListTransactions */

/* Kafka's state names that this coordinator never holds (its fencing and
 * expiry happen in one write here): valid filters that match nothing. */
static const char *const kafka_only_states[] = {"PrepareEpochFence", "Dead"};

typedef struct list_item {
    char *tid; /* ls_malloc'd */
    int64_t producer_id;
    ls_txn_state state;
} list_item_t;

typedef struct list_call {
    ls_kreq_t *req;
    bool any_state; /* no state filter */
    bool want[LS_TXN_COMPLETE_ABORT + 1];
    int64_t now_ms;
    ls_status st;
    int corrupt;
    list_item_t *items;
    int n, cap;
    ls_kafka_ListTransactionsResponse r;
} list_call_t;

static bool list_includes(const list_call_t *c, const ls_txn_record_t *rec)
{
    const ls_kafka_ListTransactionsRequest *m = c->req->msg;
    if (!c->any_state && !c->want[rec->state]) return false;
    if (m->NumProducerIdFilters > 0) {
        bool found = false;
        for (int i = 0; i < m->NumProducerIdFilters && !found; i++)
            found = m->ProducerIdFilters[i] == rec->producer_id;
        if (!found) return false;
    }
    /* Kafka: "running longer than" the filter, measured from the start
     * time (-1 for an id with no transaction yet, as Kafka has it) */
    if (m->DurationFilter >= 0 && c->now_ms - start_ms(rec) <= m->DurationFilter) return false;
    return true;
}

static void list_visit(void *arg, const ls_txn_record_t *rec)
{
    list_call_t *c = arg;
    if (!list_includes(c, rec)) return;
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 16;
        c->items = ls_realloc(c->items, (size_t)c->cap * sizeof *c->items);
    }
    c->items[c->n++] = (list_item_t){ls_strdup(rec->tid), rec->producer_id, rec->state};
}

static void list_work(void *arg)
{
    list_call_t *c = arg;
    c->now_ms = ls_clock_wall_ms();
    c->st = ls_txn_list(c->req->svc->txns, list_visit, c, &c->corrupt);
}

static void list_done(void *arg)
{
    list_call_t *c = arg;
    ls_kreq_t *req = c->req;
    if (c->corrupt > 0)
        LS_WARN_RL("kafka", "ListTransactions: %d transaction record(s) under %s do not decode",
                   c->corrupt, LS_KEY_TXN_STATE);
    if (c->st != LS_OK) {
        LS_WARN_RL("kafka", "ListTransactions: scanning the transaction records failed (%s)",
                   ls_status_str(c->st));
        c->r.ErrorCode = LS_KERR_COORDINATOR_NOT_AVAILABLE;
    } else {
        c->r.TransactionStates = ls_kmsg_alloc(req->arena, c->n, sizeof *c->r.TransactionStates);
        for (int i = 0; i < c->n; i++) {
            /* as Kafka: only the ids the principal may DESCRIBE */
            if (!coordinated_here(req, c->items[i].tid) ||
                !ls_kreq_allowed_quiet(req, LS_ACL_OP_DESCRIBE, LS_ACL_RES_TRANSACTIONAL_ID,
                                       c->items[i].tid))
                continue;
            ls_kafka_ListTransactionsResponse_TransactionState *ts =
                &c->r.TransactionStates[c->r.NumTransactionStates++];
            size_t len = strlen(c->items[i].tid);
            char *tid = ls_arena_alloc(req->arena, len + 1);
            memcpy(tid, c->items[i].tid, len);
            ts->TransactionalId = ls_kstr_c(tid);
            ts->ProducerId = c->items[i].producer_id;
            ts->TransactionState = ls_kstr_c(ls_txn_state_name(c->items[i].state));
        }
    }
    for (int i = 0; i < c->n; i++)
        ls_free(c->items[i].tid);
    ls_free(c->items);
    respond(req, &c->r);
}

void ls_kafka_handle_list_transactions(ls_kreq_t *req)
{
    const ls_kafka_ListTransactionsRequest *m = req->msg;
    list_call_t *c = ls_arena_alloc(req->arena, sizeof *c);
    c->req = req;
    c->any_state = m->NumStateFilters == 0;
    c->r.UnknownStateFilters = ls_kmsg_alloc(req->arena, m->NumStateFilters, sizeof(ls_kstr_t));
    for (int i = 0; i < m->NumStateFilters; i++) {
        bool known = false;
        for (int s = LS_TXN_EMPTY; s <= LS_TXN_COMPLETE_ABORT; s++)
            if (ls_kstr_eq(m->StateFilters[i], ls_txn_state_name((ls_txn_state)s)))
                c->want[s] = known = true;
        for (size_t k = 0; k < sizeof kafka_only_states / sizeof *kafka_only_states; k++)
            if (ls_kstr_eq(m->StateFilters[i], kafka_only_states[k])) known = true;
        if (!known) c->r.UnknownStateFilters[c->r.NumUnknownStateFilters++] = m->StateFilters[i];
    }
    ls_ksvc_offload(req->svc, list_work, list_done, c);
}

/* ---------------------------------------------------- DescribeProducers */

void ls_kafka_handle_describe_producers(ls_kreq_t *req)
{
    const ls_kafka_DescribeProducersRequest *m = req->msg;
    ls_kafka_services_t *svc = req->svc;
    ls_kafka_DescribeProducersResponse r = {0};
    r.NumTopics = m->NumTopics;
    r.Topics = ls_kmsg_alloc(req->arena, m->NumTopics, sizeof *r.Topics);
    for (int t = 0; t < m->NumTopics; t++) {
        const ls_kafka_DescribeProducersRequest_TopicRequest *qt = &m->Topics[t];
        ls_kafka_DescribeProducersResponse_TopicResponse *rt = &r.Topics[t];
        rt->Name = qt->Name;
        rt->NumPartitions = qt->NumPartitionIndexes;
        rt->Partitions = ls_kmsg_alloc(req->arena, qt->NumPartitionIndexes, sizeof *rt->Partitions);
        char *name = ls_kafka_topic_name(req->arena, qt->Name);
        /* as Kafka: READ on the topic */
        bool denied = !ls_kreq_allowed_k(req, LS_ACL_OP_READ, LS_ACL_RES_TOPIC, qt->Name);
        ls_stream_t *s =
            name && !denied ? ls_catalog_lookup(svc->catalog, LS_DEFAULT_NAMESPACE, name) : NULL;
        for (int p = 0; p < qt->NumPartitionIndexes; p++) {
            ls_kafka_DescribeProducersResponse_PartitionResponse *rp = &rt->Partitions[p];
            int32_t idx = qt->PartitionIndexes[p];
            rp->PartitionIndex = idx;
            rp->ErrorMessage = ls_kstr_null();
            if (denied) {
                rp->ErrorCode = LS_KERR_TOPIC_AUTHORIZATION_FAILED;
                continue;
            }
            if (!s || idx < 0 || idx >= s->partitions) {
                rp->ErrorCode = LS_KERR_UNKNOWN_TOPIC_OR_PARTITION;
                continue;
            }
            ls_log_producer_t *ps;
            int n = ls_logstore_producers(svc->logs, ls_stream_log_id(s, idx), &ps);
            rp->NumActiveProducers = n;
            rp->ActiveProducers = ls_kmsg_alloc(req->arena, n, sizeof *rp->ActiveProducers);
            for (int i = 0; i < n; i++) {
                ls_kafka_DescribeProducersResponse_ProducerState *o = &rp->ActiveProducers[i];
                o->ProducerId = ps[i].producer_id;
                o->ProducerEpoch = ps[i].epoch;
                o->LastSequence = ps[i].last_sequence;
                o->LastTimestamp = ps[i].last_timestamp;
                o->CoordinatorEpoch = -1;
                o->CurrentTxnStartOffset = ps[i].txn_first_offset;
            }
            ls_free(ps);
        }
        if (s) ls_stream_release(s);
    }
    respond(req, &r);
}

/* ------------------------------------------------------ WriteTxnMarkers */

/* One partition asked to abort: where, and the transaction found open there. */
typedef struct abort_part {
    int16_t *err; /* its result in the response */
    int64_t log_id;
    ls_log_marker_t marker;
    char *where; /* "topic-partition", for log lines */
    struct abort_call *c;
} abort_part_t;

typedef struct abort_call {
    ls_kreq_t *req;
    ls_kafka_WriteTxnMarkersResponse r;
    abort_part_t *parts;
    int nparts;
    int pending;
    /* worker: the records that still run one of the transactions */
    ls_status st;
    bool *running; /* per part */
} abort_call_t;

/* The open transaction of producer_id on log_id (its txn_seq and the
 * head's epoch); false when the producer has none open there. */
static bool open_txn(ls_logstore_t *logs, int64_t log_id, int64_t producer_id, int64_t *txn_seq,
                     int16_t *epoch)
{
    ls_log_producer_t *ps;
    int n = ls_logstore_producers(logs, log_id, &ps);
    bool found = false;
    for (int i = 0; i < n && !found; i++) {
        if (ps[i].producer_id != producer_id || ps[i].txn_seq == 0) continue;
        *txn_seq = ps[i].txn_seq;
        *epoch = ps[i].epoch;
        found = true;
    }
    ls_free(ps);
    return found;
}

static void abort_visit(void *arg, const ls_txn_record_t *rec)
{
    abort_call_t *c = arg;
    if (rec->state != LS_TXN_ONGOING && !ls_txn_state_prepared(rec->state)) return;
    for (int i = 0; i < c->nparts; i++) {
        const ls_log_marker_t *mk = &c->parts[i].marker;
        if (rec->txn_seq == mk->txn_seq &&
            (rec->producer_id == mk->producer_id || rec->marker_producer_id == mk->producer_id))
            c->running[i] = true;
    }
}

static void abort_work(void *arg)
{
    abort_call_t *c = arg;
    c->st = ls_txn_list(c->req->svc->txns, abort_visit, c, NULL);
}

static void abort_part_done(void *arg, ls_status st, int64_t base_offset, int64_t log_start)
{
    (void)log_start;
    abort_part_t *p = arg;
    abort_call_t *c = p->c;
    *p->err = ls_kafka_error_from_status(st);
    if (st == LS_OK)
        LS_INFO("kafka",
                "%s: transaction %lld of producer %lld aborted by an operator (marker at offset "
                "%lld)",
                p->where, (long long)p->marker.txn_seq, (long long)p->marker.producer_id,
                (long long)base_offset);
    else
        LS_WARN_RL("kafka", "%s: the abort marker of producer %lld could not be written (%s)",
                   p->where, (long long)p->marker.producer_id, ls_status_str(st));
    if (--c->pending == 0) respond(c->req, &c->r);
}

static void abort_done(void *arg)
{
    abort_call_t *c = arg;
    ls_kafka_services_t *svc = c->req->svc;
    c->pending = 1; /* released below, so no acknowledgement answers early */
    for (int i = 0; i < c->nparts; i++) {
        abort_part_t *p = &c->parts[i];
        int64_t seq;
        int16_t epoch;
        if (c->st != LS_OK) {
            *p->err = LS_KERR_COORDINATOR_NOT_AVAILABLE;
        } else if (c->running[i]) {
            LS_WARN("kafka",
                    "%s: refusing to abort transaction %lld of producer %lld: its coordinator "
                    "still runs it (it ends by its producer, its timeout or its decision)",
                    p->where, (long long)p->marker.txn_seq, (long long)p->marker.producer_id);
            *p->err = LS_KERR_INVALID_TXN_STATE;
        } else if (!open_txn(svc->logs, p->log_id, p->marker.producer_id, &seq, &epoch) ||
                   seq != p->marker.txn_seq) {
            *p->err = LS_KERR_CONCURRENT_TRANSACTIONS; /* it changed meanwhile: ask again */
        } else {
            uint8_t batch[LS_RB_MARKER_SIZE];
            size_t len = ls_records_marker(batch, p->marker.producer_id, p->marker.epoch, false, 0,
                                           ls_clock_wall_ms());
            ls_append_t a = {.log_id = p->log_id,
                             .data = batch,
                             .len = len,
                             .offset_count = 1,
                             .max_timestamp = (int64_t)ls_be64_get(batch + LS_RB_OFF_MAX_TIMESTAMP),
                             .producer = {.producer_id = p->marker.producer_id,
                                          .producer_epoch = p->marker.epoch,
                                          .base_sequence = -1,
                                          .last_sequence = -1},
                             .txn_seq = p->marker.txn_seq,
                             .marker = &p->marker};
            c->pending++;
            ls_logstore_append(svc->logs, &a, abort_part_done, p); /* copies batch */
        }
    }
    if (--c->pending == 0) respond(c->req, &c->r);
}

void ls_kafka_handle_write_txn_markers(ls_kreq_t *req)
{
    const ls_kafka_WriteTxnMarkersRequest *m = req->msg;
    ls_kafka_services_t *svc = req->svc;
    abort_call_t *c = ls_arena_alloc(req->arena, sizeof *c);
    c->req = req;
    c->r.NumMarkers = m->NumMarkers;
    c->r.Markers = ls_kmsg_alloc(req->arena, m->NumMarkers, sizeof *c->r.Markers);
    int total = 0;
    for (int i = 0; i < m->NumMarkers; i++)
        for (int t = 0; t < m->Markers[i].NumTopics; t++)
            total += m->Markers[i].Topics[t].NumPartitionIndexes;
    c->parts = ls_kmsg_alloc(req->arena, total, sizeof *c->parts);
    c->running = ls_kmsg_alloc(req->arena, total, sizeof *c->running);
    /* as Kafka: CLUSTER_ACTION on the cluster (a broker's own request) */
    bool denied = !ls_kreq_allowed_cluster(req, LS_ACL_OP_CLUSTER_ACTION);
    for (int i = 0; i < m->NumMarkers; i++) {
        const ls_kafka_WriteTxnMarkersRequest_WritableTxnMarker *qm = &m->Markers[i];
        ls_kafka_WriteTxnMarkersResponse_WritableTxnMarkerResult *rm = &c->r.Markers[i];
        rm->ProducerId = qm->ProducerId;
        rm->NumTopics = qm->NumTopics;
        rm->Topics = ls_kmsg_alloc(req->arena, qm->NumTopics, sizeof *rm->Topics);
        if (qm->TransactionResult)
            LS_WARN_RL("kafka",
                       "WriteTxnMarkers from %s: a commit marker for producer %lld refused; only "
                       "the abort of a hanging transaction is served (the coordinator writes its "
                       "own markers)",
                       ls_kreq_peer(req), (long long)qm->ProducerId);
        for (int t = 0; t < qm->NumTopics; t++) {
            const ls_kafka_WriteTxnMarkersRequest_WritableTxnMarkerTopic *qt = &qm->Topics[t];
            ls_kafka_WriteTxnMarkersResponse_WritableTxnMarkerTopicResult *rt = &rm->Topics[t];
            rt->Name = qt->Name;
            rt->NumPartitions = qt->NumPartitionIndexes;
            rt->Partitions =
                ls_kmsg_alloc(req->arena, qt->NumPartitionIndexes, sizeof *rt->Partitions);
            char *name = ls_kafka_topic_name(req->arena, qt->Name);
            ls_stream_t *s =
                name ? ls_catalog_lookup(svc->catalog, LS_DEFAULT_NAMESPACE, name) : NULL;
            for (int p = 0; p < qt->NumPartitionIndexes; p++) {
                ls_kafka_WriteTxnMarkersResponse_WritableTxnMarkerPartitionResult *rp =
                    &rt->Partitions[p];
                int32_t idx = qt->PartitionIndexes[p];
                rp->PartitionIndex = idx;
                if (denied) {
                    rp->ErrorCode = LS_KERR_CLUSTER_AUTHORIZATION_FAILED;
                    continue;
                }
                if (qm->TransactionResult) {
                    rp->ErrorCode = LS_KERR_INVALID_REQUEST;
                    continue;
                }
                if (!s || idx < 0 || idx >= s->partitions) {
                    rp->ErrorCode = LS_KERR_UNKNOWN_TOPIC_OR_PARTITION;
                    continue;
                }
                int64_t log_id = ls_stream_log_id(s, idx), seq;
                int16_t epoch;
                if (!open_txn(svc->logs, log_id, qm->ProducerId, &seq, &epoch)) {
                    LS_WARN_RL("kafka",
                               "WriteTxnMarkers from %s: producer %lld has no transaction open "
                               "on %s-%d; nothing to abort",
                               ls_kreq_peer(req), (long long)qm->ProducerId, name, idx);
                    rp->ErrorCode = LS_KERR_INVALID_TXN_STATE;
                    continue;
                }
                if (qm->ProducerEpoch < epoch) { /* Kafka: a marker of an older epoch */
                    rp->ErrorCode = LS_KERR_INVALID_PRODUCER_EPOCH;
                    continue;
                }
                abort_part_t *ap = &c->parts[c->nparts++];
                ap->err = &rp->ErrorCode;
                ap->log_id = log_id;
                ap->marker = (ls_log_marker_t){.producer_id = qm->ProducerId,
                                               .epoch = qm->ProducerEpoch,
                                               .txn_seq = seq,
                                               .commit = false};
                size_t wl = strlen(name) + 16;
                ap->where = ls_arena_alloc(req->arena, wl);
                snprintf(ap->where, wl, "%s-%d", name, idx);
                ap->c = c;
            }
            if (s) ls_stream_release(s);
        }
    }
    if (c->nparts == 0) {
        respond(req, &c->r);
        return;
    }
    ls_ksvc_offload(svc, abort_work, abort_done, c);
}
