/* Log trim: the log start moves forward, index entries below it go away.
 *
 * Where the log start lives: in its own key, /ls/start/<log_id>, holding
 * {log_start, trimmed_bytes} — not in the log head. Appends compare-and-set
 * the head on every commit; if trims wrote the head too, every trim would
 * make the next commit of that log lose its compare and reload (and a trim
 * racing a busy log would keep losing). With a separate key the two never
 * touch the same key: a trim cannot block, delay or lose an append, and an
 * append cannot starve a trim. The price is one more key per trimmed log,
 * read at open beside the heads. (The head keeps a reserved log_start field,
 * always 0.)
 *
 * One trim is a sequence of metadata txns, each atomic and each leaving a
 * consistent log:
 *   - compare the start key's mod_rev (0: absent), PUT the new start record
 *     (log start, trimmed bytes += the removed entries' bytes);
 *   - for every removed index entry: compare its mod_rev, DEL it (so a
 *     concurrent compaction swap of the same entries makes one of the two
 *     fail: entries are never removed twice, WAL counts never drop twice);
 *   - count down the WAL objects of removed WAL entries (walobj_refs.h);
 *   - the caller's fence compare, if any (the compactor's ownership key).
 * A txn removes at most what fits max_txn_ops (about 31 entries); a longer
 * trim advances the start to the end of each batch of whole entries first.
 *
 * Invariants
 *  T1  The log start only grows and never passes the high watermark (the
 *      head's next_offset, read before each txn; it only grows too).
 *  T2  After a txn, no index entry lies wholly below the stored log start,
 *      except WAL entries kept by a soft trim (keep_wal) and entries after
 *      them. The entry holding the log start stays whole (Kafka's
 *      DeleteRecords may cut inside a batch; readers get the whole batch and
 *      clients skip the records below their fetch offset).
 *  T3  An object is deleted only after no index entry can reference it: WAL
 *      objects by GC once their count key is gone, compacted objects by the
 *      sweep once their last offset is under the stored index start.
 *
 * Compacted objects are deleted by a sweep after the txns: the start record
 * also holds index_start (no entry ends below it; written by each trim txn)
 * and swept_below (COs ending below it are gone). While swept_below <
 * index_start, a trim lists co/<log_id>/, deletes the objects ending below
 * index_start (also those of compaction swaps that lost to a trim), then
 * advances swept_below by compare-and-set. A crash between a trim's txn and
 * its sweep thus leaves a durable debt that the next trim of the log pays;
 * retention (compact/retention.c) counts that debt as work, so it is paid at
 * the next retention check without any listing while nothing is owed.
 *
 * Threads: ls_log_trim runs on workers; the loop binding (ls_logstore_trim,
 * ls_logstore_apply_trim) on the loop thread. */
#include "log/log_trim.h"

#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/diag.h"
#include "log/co_format.h"
#include "log/logstore_int.h"
#include "log/walobj_refs.h"

#define TRIM_ATTEMPTS 8

ls_status ls_log_start_read(ls_meta_t *meta, int64_t log_id, ls_start_t *out, int64_t *mod_rev)
{
    char key[64];
    ls_log_start_key(key, sizeof key, log_id);
    memset(out, 0, sizeof *out);
    *mod_rev = 0;
    ls_kv_t kv;
    ls_status st = ls_meta_get(meta, key, &kv);
    if (st == LS_ENOTFOUND) return LS_OK;
    if (st != LS_OK) return st;
    st = ls_start_decode(kv.val, kv.vlen, out);
    if (st != LS_OK) LS_ERROR("log", "corrupt log start record at %s (%zu bytes)", key, kv.vlen);
    *mod_rev = kv.mod_rev;
    ls_kv_free(&kv);
    return st;
}

static ls_status read_head(ls_meta_t *meta, int64_t log_id, ls_head_t *h)
{
    char key[64];
    ls_log_head_key(key, sizeof key, log_id);
    ls_kv_t kv;
    memset(h, 0, sizeof *h);
    ls_status st = ls_meta_get(meta, key, &kv);
    if (st == LS_ENOTFOUND) return LS_OK; /* nothing appended yet: next offset 0 */
    if (st != LS_OK) return st;
    st = ls_head_decode(kv.val, kv.vlen, h);
    if (st != LS_OK) LS_ERROR("log", "corrupt log head at %s (%zu bytes)", key, kv.vlen);
    ls_kv_free(&kv);
    return st;
}

ls_status ls_log_stable_read(ls_meta_t *meta, int64_t log_id, int64_t *lso,
                             int64_t *max_aborted_span)
{
    ls_head_t h;
    ls_status st = read_head(meta, log_id, &h);
    if (st != LS_OK) return st;
    *lso = ls_log_txn_lso(&h);
    *max_aborted_span = h.max_aborted_span;
    ls_head_clear(&h);
    return LS_OK;
}

/* Deletes compacted objects of log_id whose last offset is below bound;
 * *listed is false when the listing failed. */
static int sweep_cos(ls_objstore_t *os, int64_t log_id, int64_t bound, bool *listed)
{
    char prefix[64];
    ls_co_prefix(prefix, sizeof prefix, log_id);
    ls_objinfo_t *objs = NULL;
    size_t n = 0;
    ls_status st = ls_objstore_list(os, prefix, &objs, &n);
    *listed = st == LS_OK;
    if (st != LS_OK) {
        LS_WARN("trim",
                "log %016llx: listing %s failed: %s; trimmed compacted objects stay "
                "until the next trim",
                (unsigned long long)log_id, prefix, ls_status_str(st));
        return 0;
    }
    int deleted = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t id, first, last;
        if (!ls_co_key_parse(objs[i].key, &id, &first, &last) || id != log_id || last >= bound)
            continue;
        ls_status dst = ls_objstore_del(os, objs[i].key);
        if (dst == LS_OK || dst == LS_ENOTFOUND)
            deleted++;
        else
            LS_WARN("trim",
                    "deleting trimmed compacted object %s failed: %s (retried by the "
                    "next trim of the log)",
                    objs[i].key, ls_status_str(dst));
    }
    ls_objinfo_free(objs, n);
    return deleted;
}

/* Pays the CO sweep the start record owes, then records it as paid. */
static ls_status sweep_owed(ls_meta_t *meta, ls_objstore_t *os, const ls_trim_req_t *req,
                            ls_trim_result_t *out)
{
    ls_start_t cur;
    int64_t rev;
    ls_status st = ls_log_start_read(meta, req->log_id, &cur, &rev);
    if (st != LS_OK || cur.swept_below >= cur.index_start) return st;
    bool listed;
    out->cos_deleted = sweep_cos(os, req->log_id, cur.index_start, &listed);
    if (!listed) return LS_OK; /* warned; the debt stays for the next trim */
    char key[64];
    ls_log_start_key(key, sizeof key, req->log_id);
    cur.swept_below = cur.index_start;
    ls_buf_t val;
    ls_buf_init(&val);
    ls_start_encode(&cur, &val);
    ls_meta_cmp_t cmp = {.kind = LS_META_CMP_MOD_REV, .key = key, .klen = strlen(key), .rev = rev};
    ls_meta_op_t op = {
        .kind = LS_META_OP_PUT, .key = key, .klen = strlen(key), .val = val.data, .vlen = val.len};
    st = ls_meta_txn(meta, &cmp, 1, &op, 1, NULL);
    ls_buf_free(&val);
    return st == LS_ECONFLICT ? LS_OK : st; /* a newer trim owes (and pays) its own */
}

/* One txn: removes up to `per` whole entries below the target. *more is set
 * when entries below the target remain for another txn. */
static ls_status trim_step(ls_meta_t *meta, const ls_trim_req_t *req, int per,
                           ls_trim_result_t *out, bool *more)
{
    *more = false;
    ls_start_t cur;
    int64_t start_rev;
    ls_status st = ls_log_start_read(meta, req->log_id, &cur, &start_rev);
    if (st != LS_OK) return st;
    ls_head_t h;
    if ((st = read_head(meta, req->log_id, &h)) != LS_OK) return st;
    bool fenced = h.fenced;
    int64_t hw = h.next_offset;
    ls_head_clear(&h);
    /* out reports stored state only: a failed txn below must not make the
     * loop drop entries that still exist */
    out->log_start = cur.log_start;
    out->trimmed_bytes = cur.trimmed_bytes;
    out->index_start = cur.index_start;
    if (fenced && !req->reclaim) return LS_ENOTFOUND;
    int64_t target = req->new_start == LS_TRIM_TO_HIGH_WATERMARK ? hw : req->new_start;
    if (target > hw) return LS_ERANGE;
    if (target < cur.log_start) target = cur.log_start;

    char prefix[64];
    ls_log_idx_prefix(prefix, sizeof prefix, req->log_id);
    ls_kvlist_t l;
    if ((st = ls_meta_scan_prefix(meta, prefix, (size_t)per + 1, &l)) != LS_OK) return st;
    size_t cap = (size_t)per * 4 + 4;
    ls_meta_cmp_t *cmps = LS_NEWN(ls_meta_cmp_t, cap);
    ls_meta_op_t *ops = LS_NEWN(ls_meta_op_t, cap);
    size_t ncmp = 0, nops = 0;
    ls_walrefs_t refs = {0};
    int removed = 0;
    int64_t removed_bytes = 0, last_removed = -1;
    int64_t index_start = target; /* where the remaining index will begin */
    for (size_t i = 0; i < l.n; i++) {
        ls_idx_entry_t e;
        if (ls_idx_decode(l.v[i].val, l.v[i].vlen, &e) != LS_OK) {
            LS_ERROR("trim", "corrupt index entry at %.*s (%zu bytes); not trimming log %016llx",
                     (int)l.v[i].klen, (const char *)l.v[i].key, l.v[i].vlen,
                     (unsigned long long)req->log_id);
            st = LS_ECORRUPT;
            break;
        }
        bool below = e.last_offset < target;
        bool kept = below && req->keep_wal && e.kind == LS_IDX_WAL;
        if (!below || kept || removed == per) {
            *more = below && !kept;
            index_start = e.first_offset < target ? e.first_offset : target;
            ls_idx_clear(&e);
            break;
        }
        cmps[ncmp++] = (ls_meta_cmp_t){.kind = LS_META_CMP_MOD_REV,
                                       .key = l.v[i].key,
                                       .klen = l.v[i].klen,
                                       .rev = l.v[i].mod_rev};
        ops[nops++] =
            (ls_meta_op_t){.kind = LS_META_OP_DEL, .key = l.v[i].key, .klen = l.v[i].klen};
        if (e.kind == LS_IDX_WAL) ls_walrefs_add(&refs, e.object);
        removed++;
        removed_bytes += e.len;
        last_removed = e.last_offset;
        ls_idx_clear(&e);
    }
    int released = 0;
    if (st == LS_OK) st = ls_walrefs_prepare(&refs, meta, cmps, &ncmp, ops, &nops, &released);
    int64_t new_start = *more ? last_removed + 1 : target;
    if (st == LS_OK && (removed > 0 || new_start > cur.log_start)) {
        char skey[64];
        ls_log_start_key(skey, sizeof skey, req->log_id);
        ls_start_t next = {.log_start = new_start,
                           .trimmed_bytes = cur.trimmed_bytes + removed_bytes,
                           .index_start =
                               index_start > cur.index_start ? index_start : cur.index_start,
                           .swept_below = cur.swept_below};
        ls_buf_t val;
        ls_buf_init(&val);
        ls_start_encode(&next, &val);
        cmps[ncmp++] = (ls_meta_cmp_t){
            .kind = LS_META_CMP_MOD_REV, .key = skey, .klen = strlen(skey), .rev = start_rev};
        ops[nops++] = (ls_meta_op_t){.kind = LS_META_OP_PUT,
                                     .key = skey,
                                     .klen = strlen(skey),
                                     .val = val.data,
                                     .vlen = val.len};
        if (req->fence) cmps[ncmp++] = *req->fence;
        st = ls_meta_txn(meta, cmps, ncmp, ops, nops, NULL);
        if (st == LS_OK) {
            out->log_start = next.log_start;
            out->trimmed_bytes = next.trimmed_bytes;
            out->index_start = next.index_start;
            out->entries_removed += removed;
            out->wal_released += released;
        }
        ls_buf_free(&val);
    }
    ls_walrefs_free(&refs);
    ls_free(cmps);
    ls_free(ops);
    ls_kvlist_free(&l);
    return st;
}

/* Aborted-transaction records (log_txn.h) whose marker lies below `below`
 * describe data that is gone: delete them. They are keyed by first offset,
 * so they all lie below that key; a record of a transaction the bound cuts
 * through (first < below <= marker) stays. The bound is the index start
 * when that is lower than the log start: a soft trim (keep_wal) moves the
 * start past WAL entries the table has not materialized yet, and
 * materialization needs their aborted records to leave those rows out. The
 * records are immutable and only deleted here, so no compares are needed;
 * a crash before this step leaves records below the start, which readers
 * never ask for (reads below the start are out of range) and the next trim
 * deletes. */
static ls_status sweep_aborted(ls_meta_t *meta, int64_t log_id, int64_t below)
{
    char from[96], to[96];
    ls_log_abort_key(from, sizeof from, log_id, 0);
    ls_log_abort_key(to, sizeof to, log_id, below);
    int per = ls_meta_max_txn_ops(meta);
    for (;;) {
        ls_kvlist_t l;
        ls_status st = ls_meta_scan(meta, from, strlen(from), to, strlen(to), (size_t)per, 0, &l);
        if (st != LS_OK) return st;
        ls_meta_op_t *ops = LS_NEWN(ls_meta_op_t, l.n ? l.n : 1);
        size_t nops = 0;
        for (size_t i = 0; i < l.n; i++) {
            ls_aborted_t a;
            if (ls_aborted_decode(l.v[i].val, l.v[i].vlen, &a) == LS_OK && a.marker_offset >= below)
                continue; /* still holds data of the log (or, undecodable, kept for a human) */
            ops[nops++] =
                (ls_meta_op_t){.kind = LS_META_OP_DEL, .key = l.v[i].key, .klen = l.v[i].klen};
        }
        bool more = l.more;
        if (l.n) /* resume after the last key seen */
            snprintf(from, sizeof from, "%.*s~", (int)l.v[l.n - 1].klen,
                     (const char *)l.v[l.n - 1].key);
        if (nops) st = ls_meta_txn(meta, NULL, 0, ops, nops, NULL);
        ls_free(ops);
        ls_kvlist_free(&l);
        if (st != LS_OK || !more) return st;
    }
}

ls_status ls_log_trim(ls_meta_t *meta, ls_objstore_t *os, const ls_trim_req_t *req,
                      ls_trim_result_t *out)
{
    memset(out, 0, sizeof *out);
    /* per entry: compare + delete, plus at most compare + op for its WAL
     * object; per txn: the start key's compare + PUT and the fence */
    int per = (ls_meta_max_txn_ops(meta) - 3) / 4;
    if (per < 1) per = 1;
    ls_status st = LS_OK;
    int attempts = 0;
    for (;;) {
        bool more = false;
        st = trim_step(meta, req, per, out, &more);
        if (st == LS_ECONFLICT && ++attempts < TRIM_ATTEMPTS)
            continue; /* a concurrent swap, trim or WAL count change: reread and redo */
        if (st != LS_OK || !more) break;
    }
    ls_status sst = sweep_owed(meta, os, req, out);
    ls_status ast = sweep_aborted(
        meta, req->log_id, out->index_start < out->log_start ? out->index_start : out->log_start);
    return st != LS_OK ? st : sst != LS_OK ? sst : ast;
}

/* ------------------------------------------------------------ loop binding */

void ls_trim_learn(ls_logstore_t *ls, int64_t log_id, int64_t log_start, int64_t trimmed_bytes,
                   int64_t index_start)
{
    ls_logstate_t *lg = ls_logstate_get(ls, log_id, true);
    if (log_start > lg->log_start) {
        lg->log_start = log_start;
        ls_aborted_learn_start(lg);
    }
    if (trimmed_bytes > lg->trimmed_bytes) lg->trimmed_bytes = trimmed_bytes;
    if (lg->idx_state == 2) {
        int drop = 0;
        while (drop < lg->nidx && lg->idx[drop].last_offset < index_start)
            ls_idx_clear(&lg->idx[drop++]);
        if (drop) {
            memmove(lg->idx, lg->idx + drop, (size_t)(lg->nidx - drop) * sizeof *lg->idx);
            lg->nidx -= drop;
        }
    } else if (lg->idx_state == 1 && index_start > 0) {
        lg->idx_state = 3; /* loading: the scan may predate the trim */
    }
    if (index_start > 0) ls_read_cache_drop_range(ls->cache, log_id, 0, index_start - 1);
}

void ls_logstore_apply_trim(ls_logstore_t *ls, int64_t log_id, const ls_trim_result_t *r)
{
    ls_trim_learn(ls, log_id, r->log_start, r->trimmed_bytes, r->index_start);
}

typedef struct trim_job {
    ls_logstore_t *ls;
    ls_trim_req_t req;
    ls_trim_result_t res;
    ls_status st;
    ls_trim_cb cb;
    void *arg;
    uv_work_t work;
} trim_job_t;

static void trim_work(uv_work_t *w)
{
    trim_job_t *j = w->data;
    j->st = ls_log_trim(j->ls->meta, j->ls->os, &j->req, &j->res);
}

static void trim_after(uv_work_t *w, int status)
{
    trim_job_t *j = w->data;
    if (status == UV_ECANCELED) j->st = LS_ESHUTDOWN;
    if (j->st == LS_OK) {
        ls_logstore_apply_trim(j->ls, j->req.log_id, &j->res);
        LS_INFO("trim",
                "log %016llx: log start now %lld (%d index entries removed, %d WAL "
                "objects released, %d compacted objects deleted)",
                (unsigned long long)j->req.log_id, (long long)j->res.log_start,
                j->res.entries_removed, j->res.wal_released, j->res.cos_deleted);
    } else if (j->st != LS_ERANGE) {
        LS_WARN("trim", "log %016llx: trimming to %lld failed: %s",
                (unsigned long long)j->req.log_id, (long long)j->req.new_start,
                ls_status_str(j->st));
    }
    ls_logstate_t *lg = ls_logstate_get(j->ls, j->req.log_id, false);
    j->cb(j->arg, j->st, lg ? lg->log_start : j->res.log_start);
    ls_free(j);
}

void ls_logstore_trim(ls_logstore_t *ls, int64_t log_id, int64_t offset, bool keep_wal,
                      ls_trim_cb cb, void *arg)
{
    trim_job_t *j = LS_NEW(trim_job_t);
    j->ls = ls;
    j->req = (ls_trim_req_t){.log_id = log_id, .new_start = offset, .keep_wal = keep_wal};
    j->cb = cb;
    j->arg = arg;
    j->work.data = j;
    uv_queue_work(ls->loop, &j->work, trim_work, trim_after);
}
