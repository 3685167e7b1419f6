/* Transaction coordinator, store I/O (design note: txn_store.h). */
#include "txn/txn_store.h"

#include <string.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/clock.h"
#include "base/crashpoint.h"
#include "base/diag.h"
#include "meta/meta_keys.h"

#define LIST_PAGE 256

struct ls_txn_store {
    ls_txn_store_opts_t o;
};

ls_txn_store_t *ls_txn_store_new(const ls_txn_store_opts_t *o)
{
    ls_txn_store_t *s = LS_NEW(ls_txn_store_t);
    s->o = *o;
    if (!s->o.now_ms) s->o.now_ms = ls_clock_wall_ms;
    return s;
}

void ls_txn_store_free(ls_txn_store_t *s) { ls_free(s); }

char *ls_txn_key(const char *tid)
{
    ls_buf_t b;
    ls_buf_init(&b);
    ls_buf_append(&b, LS_KEY_TXN_STATE, strlen(LS_KEY_TXN_STATE));
    ls_buf_append_keypart(&b, tid);
    ls_buf_append_u8(&b, 0);
    size_t n;
    return (char *)ls_buf_steal(&b, &n);
}

static ls_status decode_kv(const ls_kv_t *kv, ls_txn_record_t *out)
{
    ls_status st = ls_txn_record_decode(kv->val, kv->vlen, out);
    if (st != LS_OK)
        LS_WARN("txn",
                "transaction record %.*s does not decode (%zu bytes): left as it is, "
                "its transactional id cannot be used until the key is deleted",
                (int)kv->klen, (const char *)kv->key, kv->vlen);
    return st;
}

ls_status ls_txn_load(ls_txn_store_t *s, const char *tid, ls_txn_record_t *out, int64_t *rev)
{
    char *key = ls_txn_key(tid);
    ls_kv_t kv;
    ls_status st = ls_meta_get(s->o.meta, key, &kv);
    ls_free(key);
    *rev = 0;
    if (st != LS_OK) return st;
    st = decode_kv(&kv, out);
    *rev = kv.mod_rev;
    ls_kv_free(&kv);
    return st;
}

/* Replaces the record at rev (0: absent) with next, or deletes it. */
static ls_status cas(ls_txn_store_t *s, const char *tid, int64_t rev, const ls_txn_record_t *next)
{
    char *key = ls_txn_key(tid);
    size_t len = 0;
    uint8_t *val = next ? ls_txn_record_encode(next, &len) : NULL;
    ls_meta_cmp_t cmp = {.kind = LS_META_CMP_MOD_REV, .key = key, .klen = strlen(key), .rev = rev};
    ls_meta_op_t op = {.kind = next ? LS_META_OP_PUT : LS_META_OP_DEL,
                       .key = key,
                       .klen = strlen(key),
                       .val = val,
                       .vlen = len};
    ls_status st = ls_meta_txn(s->o.meta, &cmp, 1, &op, 1, NULL);
    ls_free(val);
    ls_free(key);
    return st;
}

ls_status ls_txn_run(ls_txn_store_t *s, const char *tid, ls_txn_step_fn step, void *arg,
                     ls_txn_result_t *res)
{
    int64_t fresh = -1;
    for (int tries = 0; tries < LS_TXN_CAS_TRIES; tries++) {
        ls_txn_record_t cur, next;
        int64_t rev;
        ls_status st = ls_txn_load(s, tid, &cur, &rev);
        if (st != LS_OK && st != LS_ENOTFOUND) return st;
        bool exists = st == LS_OK;
        *res = step(arg, exists ? &cur : NULL, fresh, s->o.now_ms(), &next);
        if (res->err == LS_TXERR_NEED_PRODUCER_ID) {
            if (exists) ls_txn_record_free(&cur);
            st = s->o.new_producer_id(s->o.pid_arg, &fresh);
            if (st != LS_OK) return st;
            tries--; /* not a lost race */
            continue;
        }
        if (exists) ls_txn_record_free(&cur);
        if (!res->write) return LS_OK;
        st = cas(s, tid, rev, res->remove ? NULL : &next);
        if (!res->remove) ls_txn_record_free(&next);
        if (st == LS_OK) return LS_OK;
        /* A lost compare: another step won meanwhile; rerun on its result. A
         * write whose answer was lost (LS_EIO) may have been applied: the
         * rerun sees it and answers as it answers a client's retry. */
        if (st != LS_ECONFLICT && st != LS_EIO) return st;
    }
    *res = (ls_txn_result_t){
        .err = LS_TXERR_CONCURRENT_TRANSACTIONS, .producer_id = -1, .producer_epoch = -1};
    return LS_OK;
}

/* ---- the steps as runs ---- */

typedef struct init_arg {
    const ls_txn_config_t *cfg;
    const char *tid;
    int32_t timeout_ms;
    int64_t producer_id;
    int16_t producer_epoch;
} init_arg_t;

static ls_txn_result_t init_step(void *arg, const ls_txn_record_t *cur, int64_t fresh,
                                 int64_t now_ms, ls_txn_record_t *next)
{
    init_arg_t *a = arg;
    ls_txn_init_req_t rq = {.timeout_ms = a->timeout_ms,
                            .producer_id = a->producer_id,
                            .producer_epoch = a->producer_epoch,
                            .fresh_producer_id = fresh};
    return ls_txn_init(cur, a->tid, &rq, a->cfg, now_ms, next);
}

ls_status ls_txn_run_init(ls_txn_store_t *s, const char *tid, int32_t timeout_ms,
                          int64_t producer_id, int16_t producer_epoch, ls_txn_result_t *res)
{
    init_arg_t a = {&s->o.cfg, tid, timeout_ms, producer_id, producer_epoch};
    return ls_txn_run(s, tid, init_step, &a, res);
}

typedef struct add_arg {
    int64_t producer_id;
    int16_t epoch;
    const ls_txn_partition_t *parts;
    int nparts;
    const char *const *groups;
    int ngroups;
} add_arg_t;

static ls_txn_result_t add_step(void *arg, const ls_txn_record_t *cur, int64_t fresh,
                                int64_t now_ms, ls_txn_record_t *next)
{
    add_arg_t *a = arg;
    return ls_txn_add(cur, a->producer_id, a->epoch, a->parts, a->nparts, a->groups, a->ngroups,
                      now_ms, next);
}

ls_status ls_txn_run_add(ls_txn_store_t *s, const char *tid, int64_t producer_id, int16_t epoch,
                         const ls_txn_partition_t *parts, int nparts, const char *const *groups,
                         int ngroups, ls_txn_result_t *res)
{
    add_arg_t a = {producer_id, epoch, parts, nparts, groups, ngroups};
    return ls_txn_run(s, tid, add_step, &a, res);
}

typedef struct end_arg {
    int64_t producer_id;
    int16_t epoch;
    bool commit, bump;
} end_arg_t;

static ls_txn_result_t end_step(void *arg, const ls_txn_record_t *cur, int64_t fresh,
                                int64_t now_ms, ls_txn_record_t *next)
{
    end_arg_t *a = arg;
    return ls_txn_end(cur, a->producer_id, a->epoch, a->commit, a->bump, fresh, now_ms, next);
}

ls_status ls_txn_run_end(ls_txn_store_t *s, const char *tid, int64_t producer_id, int16_t epoch,
                         bool commit, bool bump, ls_txn_result_t *res)
{
    end_arg_t a = {producer_id, epoch, commit, bump};
    return ls_txn_run(s, tid, end_step, &a, res);
}

static ls_txn_result_t complete_step(void *arg, const ls_txn_record_t *cur, int64_t fresh,
                                     int64_t now_ms, ls_txn_record_t *next)
{
    return ls_txn_complete(cur, *(const int64_t *)arg, now_ms, next);
}

static ls_txn_result_t expire_step(void *arg, const ls_txn_record_t *cur, int64_t fresh,
                                   int64_t now_ms, ls_txn_record_t *next)
{
    return ls_txn_expire(cur, arg, now_ms, next);
}

/* ---- finishing decisions ---- */

ls_status ls_txn_finish(ls_txn_store_t *s, const char *tid)
{
    ls_txn_record_t rec;
    int64_t rev;
    ls_status st = ls_txn_load(s, tid, &rec, &rev);
    if (st == LS_ENOTFOUND) return LS_OK;
    if (st != LS_OK) return st;
    if (!ls_txn_state_prepared(rec.state)) {
        ls_txn_record_free(&rec);
        return LS_OK;
    }
    ls_crashpoint("txn.decided"); /* decided, no marker written */
    const ls_txn_markers_t *mk = &s->o.markers;
    if (rec.npartitions > 0) {
        st = mk->log_markers(mk->arg, &rec);
        if (st != LS_OK)
            LS_WARN_RL("txn",
                       "transaction '%s' (%s, txn %lld): the markers of its %d partitions could "
                       "not all be written (%s); the decision stays and is retried by the next "
                       "sweep",
                       tid, ls_txn_state_name(rec.state), (long long)rec.txn_seq, rec.npartitions,
                       ls_status_str(st));
    }
    for (int i = 0; i < rec.ngroups && st == LS_OK; i++) {
        st = mk->group_marker(mk->arg, &rec, rec.groups[i]);
        if (st != LS_OK)
            LS_WARN_RL("txn",
                       "transaction '%s' (%s, txn %lld): the offsets of group '%s' could not be "
                       "settled (%s); the decision stays and is retried by the next sweep",
                       tid, ls_txn_state_name(rec.state), (long long)rec.txn_seq, rec.groups[i],
                       ls_status_str(st));
    }
    int64_t seq = rec.txn_seq;
    ls_txn_record_free(&rec);
    if (st != LS_OK) return st;
    ls_crashpoint("txn.markers_written"); /* every marker written, not completed */
    ls_txn_result_t res;
    return ls_txn_run(s, tid, complete_step, &seq, &res);
}

ls_status ls_txn_list(ls_txn_store_t *s, ls_txn_visit_fn visit, void *arg, int *corrupt)
{
    if (corrupt) *corrupt = 0;
    const size_t plen = strlen(LS_KEY_TXN_STATE);
    uint8_t end[sizeof LS_KEY_TXN_STATE];
    size_t elen = ls_meta_prefix_end(LS_KEY_TXN_STATE, plen, end);
    uint8_t *from = ls_memdup(LS_KEY_TXN_STATE, plen);
    size_t flen = plen;
    for (;;) {
        ls_kvlist_t page;
        ls_status rc = ls_meta_scan(s->o.meta, from, flen, end, elen, LIST_PAGE, 0, &page);
        if (rc != LS_OK) {
            ls_free(from);
            return rc;
        }
        for (size_t i = 0; i < page.n; i++) {
            ls_txn_record_t rec;
            if (decode_kv(&page.v[i], &rec) != LS_OK) {
                if (corrupt) (*corrupt)++;
                continue;
            }
            visit(arg, &rec);
            ls_txn_record_free(&rec);
        }
        bool more = page.more && page.n > 0;
        if (more) { /* continue just after the last key: key + "\0" */
            const ls_kv_t *last = &page.v[page.n - 1];
            ls_free(from);
            flen = last->klen + 1;
            from = ls_calloc(1, flen);
            memcpy(from, last->key, last->klen);
        }
        ls_kvlist_free(&page);
        if (!more) break;
    }
    ls_free(from);
    return LS_OK;
}

/* ---- the sweep ---- */

typedef struct sweep_ctx {
    ls_txn_store_t *s;
    bool (*mine)(void *arg, const char *tid);
    void *arg;
    ls_txn_sweep_stats_t *st;
} sweep_ctx_t;

static void sweep_visit(void *arg, const ls_txn_record_t *rec)
{
    sweep_ctx_t *x = arg;
    if (!x->mine(x->arg, rec->tid)) return;
    ls_txn_sweep_stats_t *st = x->st;
    st->visited++;
    ls_txn_result_t res;
    ls_status rc = ls_txn_run(x->s, rec->tid, expire_step, &x->s->o.cfg, &res);
    if (rc != LS_OK || res.err != LS_TXERR_NONE) {
        st->failed++;
        return;
    }
    if (res.write && res.remove) {
        st->expired++;
        return;
    }
    if (res.write && res.finish) st->aborted++;
    if (!res.finish) return;
    if (ls_txn_finish(x->s, rec->tid) == LS_OK)
        st->finished++;
    else
        st->failed++;
}

ls_status ls_txn_sweep(ls_txn_store_t *s, bool (*mine)(void *arg, const char *tid), void *arg,
                       ls_txn_sweep_stats_t *st)
{
    memset(st, 0, sizeof *st);
    sweep_ctx_t x = {s, mine, arg, st};
    int corrupt;
    ls_status rc = ls_txn_list(s, sweep_visit, &x, &corrupt);
    st->failed += corrupt;
    return rc;
}
