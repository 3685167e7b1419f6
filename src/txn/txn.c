/* Transaction coordinator, pure logic (design note: txn.h). Outcomes follow
 * Kafka's TransactionCoordinator answer for answer; where this differs (no
 * PrepareEpochFence state: bumping and deciding are one compare-and-set) the
 * visible results are the same. */
#include "txn/txn.h"

#include <string.h>

#include "base/alloc.h"

/* The last epoch a client may be handed; one more is kept for fencing. */
#define CLIENT_MAX_EPOCH (LS_TXN_MAX_EPOCH - 1)

const char *ls_txn_state_name(ls_txn_state s)
{
    switch (s) {
    case LS_TXN_EMPTY: return "Empty";
    case LS_TXN_ONGOING: return "Ongoing";
    case LS_TXN_PREPARE_COMMIT: return "PrepareCommit";
    case LS_TXN_PREPARE_ABORT: return "PrepareAbort";
    case LS_TXN_COMPLETE_COMMIT: return "CompleteCommit";
    case LS_TXN_COMPLETE_ABORT: return "CompleteAbort";
    }
    return "?";
}

const char *ls_txn_err_name(ls_txn_err e)
{
    switch (e) {
    case LS_TXERR_NONE: return "NONE";
    case LS_TXERR_INVALID_TRANSACTION_TIMEOUT: return "INVALID_TRANSACTION_TIMEOUT";
    case LS_TXERR_CONCURRENT_TRANSACTIONS: return "CONCURRENT_TRANSACTIONS";
    case LS_TXERR_PRODUCER_FENCED: return "PRODUCER_FENCED";
    case LS_TXERR_INVALID_PRODUCER_ID_MAPPING: return "INVALID_PRODUCER_ID_MAPPING";
    case LS_TXERR_INVALID_TXN_STATE: return "INVALID_TXN_STATE";
    case LS_TXERR_TOO_MANY_PARTICIPANTS: return "TOO_MANY_PARTICIPANTS";
    case LS_TXERR_NEED_PRODUCER_ID: return "NEED_PRODUCER_ID";
    }
    return "?";
}

void ls_txn_config_defaults(ls_txn_config_t *cfg)
{
    cfg->max_timeout_ms = 900000;
    cfg->id_expiration_ms = 604800000;
}

/* ---- records ---- */

static void clear_participants(ls_txn_record_t *r)
{
    for (int i = 0; i < r->npartitions; i++)
        ls_free(r->partitions[i].topic);
    for (int i = 0; i < r->ngroups; i++)
        ls_free(r->groups[i]);
    ls_free(r->partitions);
    ls_free(r->groups);
    r->partitions = NULL;
    r->groups = NULL;
    r->npartitions = r->ngroups = 0;
}

void ls_txn_record_free(ls_txn_record_t *r)
{
    clear_participants(r);
    ls_free(r->tid);
    memset(r, 0, sizeof *r);
}

static void add_partition(ls_txn_record_t *r, const ls_txn_partition_t *p)
{
    r->partitions = ls_realloc(r->partitions, (size_t)(r->npartitions + 1) * sizeof *r->partitions);
    ls_txn_partition_t *d = &r->partitions[r->npartitions++];
    d->topic = ls_strdup(p->topic ? p->topic : "");
    d->stream_no = p->stream_no;
    d->partition = p->partition;
}

static void add_group(ls_txn_record_t *r, const char *g)
{
    r->groups = ls_realloc(r->groups, (size_t)(r->ngroups + 1) * sizeof *r->groups);
    r->groups[r->ngroups++] = ls_strdup(g);
}

void ls_txn_record_copy(ls_txn_record_t *dst, const ls_txn_record_t *src)
{
    *dst = *src;
    dst->tid = src->tid ? ls_strdup(src->tid) : NULL;
    dst->partitions = NULL;
    dst->groups = NULL;
    dst->npartitions = dst->ngroups = 0;
    for (int i = 0; i < src->npartitions; i++)
        add_partition(dst, &src->partitions[i]);
    for (int i = 0; i < src->ngroups; i++)
        add_group(dst, src->groups[i]);
}

bool ls_txn_has_partition(const ls_txn_record_t *r, int64_t stream_no, int32_t partition)
{
    for (int i = 0; i < r->npartitions; i++)
        if (r->partitions[i].stream_no == stream_no && r->partitions[i].partition == partition)
            return true;
    return false;
}

bool ls_txn_has_group(const ls_txn_record_t *r, const char *group)
{
    for (int i = 0; i < r->ngroups; i++)
        if (strcmp(r->groups[i], group) == 0) return true;
    return false;
}

const char *ls_txn_record_check(const ls_txn_record_t *r)
{
    if (!r->tid || !*r->tid) return "no transactional id";
    if ((int)r->state < LS_TXN_EMPTY || r->state > LS_TXN_COMPLETE_ABORT) return "unknown state";
    if (r->producer_id < 0 || r->producer_epoch < 0) return "no producer id";
    bool active = r->state == LS_TXN_ONGOING || ls_txn_state_prepared(r->state);
    if (!active && (r->npartitions || r->ngroups)) return "participants outside a transaction";
    if (r->npartitions + r->ngroups > LS_TXN_MAX_PARTICIPANTS) return "too many participants";
    for (int i = 0; i < r->npartitions; i++)
        for (int j = 0; j < i; j++)
            if (r->partitions[i].stream_no == r->partitions[j].stream_no &&
                r->partitions[i].partition == r->partitions[j].partition)
                return "duplicate partition";
    for (int i = 0; i < r->ngroups; i++)
        for (int j = 0; j < i; j++)
            if (strcmp(r->groups[i], r->groups[j]) == 0) return "duplicate group";
    bool decided = r->state != LS_TXN_EMPTY && r->state != LS_TXN_ONGOING;
    if (decided != (r->marker_producer_id >= 0))
        return "marker pair set outside a decision, or missing in one";
    if (decided && r->marker_epoch < 0) return "decision without a marker epoch";
    if (r->state != LS_TXN_EMPTY && r->txn_seq < 1) return "a transaction without a number";
    return NULL;
}

/* ---- steps ---- */

static ls_txn_result_t result(ls_txn_err e)
{
    return (ls_txn_result_t){.err = e, .producer_id = -1, .producer_epoch = -1};
}

static ls_txn_result_t written(const ls_txn_record_t *next)
{
    ls_txn_result_t r = result(LS_TXERR_NONE);
    r.write = true;
    r.producer_id = next->producer_id;
    r.producer_epoch = next->producer_epoch;
    return r;
}

/* A bump the client will see: epoch + 1, or a new producer id at epoch 0
 * once the epoch is exhausted. The old pair becomes the previous one. */
static ls_txn_err client_bump(ls_txn_record_t *r, int64_t fresh_producer_id)
{
    if (r->producer_epoch >= CLIENT_MAX_EPOCH) {
        if (fresh_producer_id < 0) return LS_TXERR_NEED_PRODUCER_ID;
        r->prev_producer_id = r->producer_id;
        r->prev_producer_epoch = r->producer_epoch;
        r->producer_id = fresh_producer_id;
        r->producer_epoch = 0;
        return LS_TXERR_NONE;
    }
    r->prev_producer_id = r->producer_id;
    r->prev_producer_epoch = r->producer_epoch;
    r->producer_epoch++;
    return LS_TXERR_NONE;
}

/* Decide the current transaction. fence: the epoch goes up by one so every
 * batch and request of the current producer is refused from now on (its
 * pair is not kept as "previous": it may not come back through a retry). */
static void decide(ls_txn_record_t *r, bool commit, bool fence, int64_t now_ms)
{
    r->state = commit ? LS_TXN_PREPARE_COMMIT : LS_TXN_PREPARE_ABORT;
    if (fence) {
        r->producer_epoch++;
        r->prev_producer_id = -1;
        r->prev_producer_epoch = -1;
    }
    r->marker_producer_id = r->producer_id;
    r->marker_epoch = r->producer_epoch;
    r->update_ms = now_ms;
}

ls_txn_result_t ls_txn_init(const ls_txn_record_t *cur, const char *tid,
                            const ls_txn_init_req_t *rq, const ls_txn_config_t *cfg, int64_t now_ms,
                            ls_txn_record_t *next)
{
    if (rq->timeout_ms <= 0 || rq->timeout_ms > cfg->max_timeout_ms)
        return result(LS_TXERR_INVALID_TRANSACTION_TIMEOUT);
    bool has_pair = rq->producer_id >= 0;
    if (!cur) {
        /* A pair presented for an id that does not exist (expired meanwhile):
         * Kafka answers INVALID_PRODUCER_ID_MAPPING; the client starts over. */
        if (has_pair) return result(LS_TXERR_INVALID_PRODUCER_ID_MAPPING);
        if (rq->fresh_producer_id < 0) return result(LS_TXERR_NEED_PRODUCER_ID);
        memset(next, 0, sizeof *next);
        next->tid = ls_strdup(tid);
        next->state = LS_TXN_EMPTY;
        next->producer_id = rq->fresh_producer_id;
        next->producer_epoch = 0;
        next->prev_producer_id = -1;
        next->prev_producer_epoch = -1;
        next->timeout_ms = rq->timeout_ms;
        next->update_ms = now_ms;
        next->marker_producer_id = -1;
        next->marker_epoch = -1;
        return written(next);
    }
    if (ls_txn_state_prepared(cur->state)) return result(LS_TXERR_CONCURRENT_TRANSACTIONS);
    bool is_current = has_pair && rq->producer_id == cur->producer_id &&
                      rq->producer_epoch == cur->producer_epoch;
    bool is_prev = has_pair && rq->producer_id == cur->prev_producer_id &&
                   rq->producer_epoch == cur->prev_producer_epoch;
    if (has_pair && !is_current && !is_prev) return result(LS_TXERR_PRODUCER_FENCED);
    if (cur->state == LS_TXN_ONGOING) {
        /* A new instance (or the producer recovering, KIP-360) takes over:
         * abort what is open, fencing its epoch; the caller retries. */
        ls_txn_record_copy(next, cur);
        decide(next, false, true, now_ms);
        if (is_current) { /* the producer fenced itself: its retry may resume */
            next->prev_producer_id = cur->producer_id;
            next->prev_producer_epoch = cur->producer_epoch;
        }
        ls_txn_result_t r = written(next);
        r.err = LS_TXERR_CONCURRENT_TRANSACTIONS;
        r.finish = true;
        r.producer_id = r.producer_epoch = -1;
        return r;
    }
    if (is_prev) { /* a retry of a bump that succeeded: answer it again */
        ls_txn_result_t r = result(LS_TXERR_NONE);
        r.producer_id = cur->producer_id;
        r.producer_epoch = cur->producer_epoch;
        return r;
    }
    ls_txn_record_copy(next, cur);
    ls_txn_err e = client_bump(next, rq->fresh_producer_id);
    if (e != LS_TXERR_NONE) {
        ls_txn_record_free(next);
        return result(e);
    }
    next->state = LS_TXN_EMPTY;
    next->timeout_ms = rq->timeout_ms;
    next->update_ms = now_ms;
    next->marker_producer_id = -1;
    next->marker_epoch = -1;
    return written(next);
}

/* Checks shared by every request of a producer in a transaction. */
static ls_txn_err check_pair(const ls_txn_record_t *cur, int64_t producer_id, int16_t epoch)
{
    if (!cur || producer_id != cur->producer_id) return LS_TXERR_INVALID_PRODUCER_ID_MAPPING;
    if (epoch != cur->producer_epoch) return LS_TXERR_PRODUCER_FENCED;
    return LS_TXERR_NONE;
}

ls_txn_result_t ls_txn_add(const ls_txn_record_t *cur, int64_t producer_id, int16_t epoch,
                           const ls_txn_partition_t *parts, int nparts, const char *const *groups,
                           int ngroups, int64_t now_ms, ls_txn_record_t *next)
{
    ls_txn_err e = check_pair(cur, producer_id, epoch);
    if (e != LS_TXERR_NONE) return result(e);
    if (ls_txn_state_prepared(cur->state)) return result(LS_TXERR_CONCURRENT_TRANSACTIONS);
    bool begin = cur->state != LS_TXN_ONGOING;
    /* Count what is new first, so a refused request changes nothing. */
    ls_txn_record_t probe = {0};
    int fresh = 0;
    for (int i = 0; i < nparts; i++)
        if ((begin || !ls_txn_has_partition(cur, parts[i].stream_no, parts[i].partition)) &&
            !ls_txn_has_partition(&probe, parts[i].stream_no, parts[i].partition)) {
            add_partition(&probe, &parts[i]);
            fresh++;
        }
    for (int i = 0; i < ngroups; i++)
        if ((begin || !ls_txn_has_group(cur, groups[i])) && !ls_txn_has_group(&probe, groups[i])) {
            add_group(&probe, groups[i]);
            fresh++;
        }
    int kept = begin ? 0 : cur->npartitions + cur->ngroups;
    if (kept + fresh > LS_TXN_MAX_PARTICIPANTS) {
        ls_txn_record_free(&probe);
        return result(LS_TXERR_TOO_MANY_PARTICIPANTS);
    }
    if (!begin && fresh == 0) { /* all already in: nothing to write */
        ls_txn_record_free(&probe);
        return result(LS_TXERR_NONE);
    }
    ls_txn_record_copy(next, cur);
    if (begin) {
        clear_participants(next);
        next->state = LS_TXN_ONGOING;
        next->txn_seq++;
        next->txn_start_ms = now_ms;
        next->marker_producer_id = -1;
        next->marker_epoch = -1;
    }
    for (int i = 0; i < probe.npartitions; i++)
        add_partition(next, &probe.partitions[i]);
    for (int i = 0; i < probe.ngroups; i++)
        add_group(next, probe.groups[i]);
    next->update_ms = now_ms;
    ls_txn_record_free(&probe);
    return written(next);
}

/* Transaction version 2: the abort of a transaction the coordinator never
 * saw begin (the client sent records that may not have arrived, so it
 * cannot know): nothing to mark, but the epoch moves on as for any end, so
 * whatever of those records is still in flight is fenced. Decided and
 * completed in one write. */
static ls_txn_result_t end_empty_abort(const ls_txn_record_t *cur, int64_t fresh_producer_id,
                                       int64_t now_ms, ls_txn_record_t *next)
{
    ls_txn_record_copy(next, cur);
    next->txn_seq++;
    next->txn_start_ms = now_ms;
    next->state = LS_TXN_COMPLETE_ABORT;
    next->marker_producer_id = cur->producer_id;
    next->marker_epoch = (int16_t)(cur->producer_epoch + 1);
    next->update_ms = now_ms;
    ls_txn_err e = client_bump(next, fresh_producer_id);
    if (e != LS_TXERR_NONE) {
        ls_txn_record_free(next);
        return result(e);
    }
    return written(next);
}

ls_txn_result_t ls_txn_end(const ls_txn_record_t *cur, int64_t producer_id, int16_t epoch,
                           bool commit, bool bump, int64_t fresh_producer_id, int64_t now_ms,
                           ls_txn_record_t *next)
{
    ls_txn_state done = commit ? LS_TXN_COMPLETE_COMMIT : LS_TXN_COMPLETE_ABORT;
    ls_txn_state prepared = commit ? LS_TXN_PREPARE_COMMIT : LS_TXN_PREPARE_ABORT;
    /* Transaction version 2: the decision moved the pair on; a retry of it
     * still holds the previous pair (KIP-890 part 2; Kafka's
     * retryOnEpochBump / retryOnOverflow). */
    if (bump && cur && producer_id == cur->prev_producer_id && epoch == cur->prev_producer_epoch) {
        if (cur->state != done && cur->state != prepared) {
            /* a retry with the other outcome, or the pair an InitProducerId
             * replaced, or a transaction begun since */
            bool decided = cur->state != LS_TXN_EMPTY && cur->state != LS_TXN_ONGOING;
            return result(decided ? LS_TXERR_INVALID_TXN_STATE : LS_TXERR_PRODUCER_FENCED);
        }
        ls_txn_result_t r =
            result(cur->state == done ? LS_TXERR_NONE : LS_TXERR_CONCURRENT_TRANSACTIONS);
        r.finish = cur->state == prepared;
        r.producer_id = cur->producer_id;
        r.producer_epoch = cur->producer_epoch;
        return r;
    }
    ls_txn_err e = check_pair(cur, producer_id, epoch);
    if (e != LS_TXERR_NONE) return result(e);
    switch (cur->state) {
    case LS_TXN_ONGOING: break;
    case LS_TXN_PREPARE_COMMIT:
    case LS_TXN_PREPARE_ABORT: {
        /* Version 2: the decision already moved the pair, so the current
         * pair ends its *next* transaction, whatever the outcome: it waits
         * for the completion (Kafka answers PRODUCER_FENCED here, which no
         * client of it provokes on purpose; waiting keeps the producer). */
        ls_txn_result_t r = result(cur->state == prepared || bump ? LS_TXERR_CONCURRENT_TRANSACTIONS
                                                                  : LS_TXERR_INVALID_TXN_STATE);
        r.finish = true;
        return r;
    }
    case LS_TXN_COMPLETE_COMMIT:
    case LS_TXN_COMPLETE_ABORT:
        /* Transaction version 1: the pair did not move, so this is a retry
         * when the outcome matches. Version 2: the current pair has not
         * begun anything here (a retry holds the previous pair): an abort
         * is the empty one, a commit has nothing to commit. */
        if (bump)
            return commit ? result(LS_TXERR_INVALID_TXN_STATE)
                          : end_empty_abort(cur, fresh_producer_id, now_ms, next);
        return result(cur->state == done ? LS_TXERR_NONE : LS_TXERR_INVALID_TXN_STATE);
    case LS_TXN_EMPTY:
        if (bump && !commit) return end_empty_abort(cur, fresh_producer_id, now_ms, next);
        return result(LS_TXERR_INVALID_TXN_STATE);
    }
    ls_txn_record_copy(next, cur);
    decide(next, commit, false, now_ms);
    if (bump) {
        /* The markers carry epoch + 1 (fencing the pair that wrote the
         * data); the client continues with the next client-visible pair:
         * that same epoch, or a new producer id at epoch 0 once the epoch
         * is exhausted (the markers then still carry the old id). */
        next->marker_epoch = (int16_t)(cur->producer_epoch + 1);
        e = client_bump(next, fresh_producer_id);
        if (e != LS_TXERR_NONE) {
            ls_txn_record_free(next);
            return result(e);
        }
    }
    ls_txn_result_t r = written(next);
    r.finish = true;
    return r;
}

ls_txn_result_t ls_txn_complete(const ls_txn_record_t *cur, int64_t txn_seq, int64_t now_ms,
                                ls_txn_record_t *next)
{
    if (!cur || !ls_txn_state_prepared(cur->state) || cur->txn_seq != txn_seq)
        return result(LS_TXERR_NONE);
    ls_txn_record_copy(next, cur);
    next->state =
        cur->state == LS_TXN_PREPARE_COMMIT ? LS_TXN_COMPLETE_COMMIT : LS_TXN_COMPLETE_ABORT;
    clear_participants(next);
    next->update_ms = now_ms;
    return written(next);
}

ls_txn_result_t ls_txn_expire(const ls_txn_record_t *cur, const ls_txn_config_t *cfg,
                              int64_t now_ms, ls_txn_record_t *next)
{
    if (!cur) return result(LS_TXERR_NONE);
    if (ls_txn_state_prepared(cur->state)) {
        ls_txn_result_t r = result(LS_TXERR_NONE);
        r.finish = true;
        return r;
    }
    if (cur->state == LS_TXN_ONGOING) {
        if (now_ms - cur->txn_start_ms < cur->timeout_ms) return result(LS_TXERR_NONE);
        ls_txn_record_copy(next, cur);
        decide(next, false, true, now_ms);
        ls_txn_result_t r = written(next);
        r.finish = true;
        return r;
    }
    if (now_ms - cur->update_ms < cfg->id_expiration_ms) return result(LS_TXERR_NONE);
    ls_txn_result_t r = result(LS_TXERR_NONE);
    r.write = r.remove = true;
    return r;
}

ls_txn_err ls_txn_check_produce(const ls_txn_record_t *cur, int64_t producer_id, int16_t epoch,
                                int64_t stream_no, int32_t partition, int64_t *txn_seq)
{
    ls_txn_err e = check_pair(cur, producer_id, epoch);
    if (e != LS_TXERR_NONE) return e;
    if (cur->state != LS_TXN_ONGOING || !ls_txn_has_partition(cur, stream_no, partition))
        return LS_TXERR_INVALID_TXN_STATE;
    *txn_seq = cur->txn_seq;
    return LS_TXERR_NONE;
}

ls_txn_err ls_txn_check_offsets(const ls_txn_record_t *cur, int64_t producer_id, int16_t epoch,
                                const char *group, int64_t *txn_seq)
{
    ls_txn_err e = check_pair(cur, producer_id, epoch);
    if (e != LS_TXERR_NONE) return e;
    if (cur->state != LS_TXN_ONGOING || !ls_txn_has_group(cur, group))
        return LS_TXERR_INVALID_TXN_STATE;
    *txn_seq = cur->txn_seq;
    return LS_TXERR_NONE;
}
