/* Compaction: WAL entries -> one compacted object (CO) per log range. A pass
 * (worker thread) takes each unfenced log's oldest run of WAL entries older
 * than the hot window, writes one CO create-only under a deterministic key,
 * appends the range to the log's table when one is enabled (lake/, before the
 * swap), and swaps the index in one metadata txn; the loop then applies the
 * new entry. Invariant: every offset in [log start, high watermark) is
 * covered by an index entry at every instant. The full design (steps,
 * invariants, freshness, leases, deleted topics) is src/compact/README.md. */
#include "compact/compactor_int.h"
#include "meta/meta_keys.h"

static void *co_put_main(void *arg)
{
    co_put_t *p = arg;
    p->st = ls_objstore_put(p->os, p->key, &p->iov, 1, LS_OBJSTORE_PUT_CREATE_ONLY);
    return NULL;
}

/* Starts the PUT on a thread when overlap is asked for (and a thread
 * starts), else runs it here. */
static void co_put_start(co_put_t *p, bool overlap)
{
    p->started = overlap && ls_thread_start(&p->th, "ls-co-put", co_put_main, p) == 0;
    if (!p->started) co_put_main(p);
}

static ls_status co_put_join(co_put_t *p)
{
    if (p->started) pthread_join(p->th, NULL);
    p->started = false;
    return p->st;
}

void ls_compactor_swap_free(swap_t *s)
{
    ls_free(s->prev.key);
    for (int i = 0; i < s->n; i++)
        ls_free(s->kvs[i].key);
    ls_free(s->kvs);
    ls_idx_clear(&s->co);
    ls_walrefs_free(&s->refs);
    ls_free(s);
}

/* Metrics (docs/OPERATIONS.md "Metrics"): the compaction passes here, and
 * each table's state as this pass saw it (published whole at the end of
 * every pass, so a table turned off disappears). Lag and last commit come
 * from the table's recorded status (the same on every broker); its size
 * from this broker's last commit of it (absent on a broker that has not
 * committed it since it started). */
static LS_METRIC_HISTOGRAM(m_pass_seconds, "lakestream_compaction_pass_duration_seconds",
                           "Compaction passes (full: every log; tables: table logs only).",
                           ls_metrics_latency_bounds, "kind");

static LS_METRIC_GAUGE(m_backlog, "lakestream_compaction_backlog_seconds",
                       "After the last full pass: how long the oldest WAL entry still due for "
                       "compaction has been due, over every log (0: none waits).",
                       NULL);

static LS_METRIC_COUNTER(m_objects, "lakestream_compaction_objects_written",
                         "Compacted objects written.", NULL);

static LS_METRIC_COUNTER(m_bytes, "lakestream_compaction_bytes_written",
                         "Bytes of compacted objects written.", NULL);

static LS_METRIC_COUNTER(m_rows, "lakestream_table_rows_materialized",
                         "Rows this broker added to tables.", NULL);

static LS_METRIC_COUNTER(m_table_failures, "lakestream_table_commit_failures",
                         "Table commits or backfills that failed (retried).", NULL);

static LS_METRIC_COUNTER(m_wal_reads, "lakestream_compaction_wal_reads",
                         "GETs of WAL objects by compaction passes: a whole object (block) or, "
                         "past compaction.wal.read.budget.bytes, one log's range of it (range).",
                         "kind");

static LS_METRIC_COUNTER(m_wal_ranges_held, "lakestream_compaction_wal_ranges_from_memory",
                         "Log ranges of WAL objects a compaction pass served from an object it "
                         "had read already (no GET).",
                         NULL);

/* Queues an index swap for the loop (pass_after applies them in order). */
result_t *ls_compactor_push_result(ls_compactor_t *c, int64_t log_id, const ls_idx_entry_t *e)
{
    result_t *res = LS_NEW(result_t);
    res->log_id = log_id;
    res->changed_from = e->first_offset;
    res->co = *e;
    res->co.object = ls_strdup(e->object);
    if (!c->results_tail) c->results_tail = &c->results;
    *c->results_tail = res;
    c->results_tail = &res->next;
    return res;
}

/* First offset of the selection written at or after since_ms (start.position
 * = latest: older records are not the table's); last + 1 when none is. */
static int64_t first_since(const ls_idx_entry_t *sel, int n, int64_t since_ms)
{
    for (int i = 0; i < n; i++)
        if (ls_wal_key_time(sel[i].object) >= since_ms) return sel[i].first_offset;
    return sel[n - 1].last_offset + 1;
}

/* Claims log_id for the current task; 1 if the task may go on. */
int ls_compactor_claim_log(ls_compactor_t *c, int64_t log_id)
{
    ls_status st = ls_lease_claim_log(c->owner, log_id, &c->claim);
    if (st == LS_EEXISTS) {
        c->stats.logs_owned_elsewhere++;
    } else if (st != LS_OK) {
        LS_WARN_RL("compact", "log %016llx: claiming it failed: %s (will retry)",
                   (unsigned long long)log_id, ls_status_str(st));
        c->stats.failures++;
    }
    return st == LS_OK;
}

/* The scan cursor of a log: an offset at or below its first WAL (not yet
 * compacted) index entry; 0 when this compactor has not looked at the log.
 * Only compacted entries lie below it, so a scan starts there instead of at
 * the head of the index (which after a day at a 1 s commit interval holds
 * tens of thousands of compacted entries). It never passes a WAL entry:
 * index entries below a compacted one are never added again (appends take
 * offsets above the high watermark), and a cursor left behind by another
 * broker's work (it compacted further under its claim) only costs a longer
 * scan. Kept in memory: after a restart the first scan walks the compacted
 * entries once, a page at a time. */
static int64_t cursor_get(ls_compactor_t *c, int64_t log_id)
{
    int64_t *v = ls_i64map_get(&c->cursors, log_id);
    return v ? *v : 0;
}

/* The value of key k in a map of int64_t * values, made (0) when missing. */
static int64_t *i64_slot(ls_i64map_t *m, int64_t k)
{
    int64_t *v = ls_i64map_get(m, k);
    if (!v) {
        v = LS_NEW(int64_t);
        ls_i64map_put(m, k, v);
    }
    return v;
}

static void cursor_set(ls_compactor_t *c, int64_t log_id, int64_t offset)
{
    int64_t *v = i64_slot(&c->cursors, log_id);
    if (offset > *v) *v = offset;
}

/* Scans the index of log_id from its cursor for the first page that holds
 * an entry not yet compacted, advancing the cursor over compacted entries on
 * the way. On LS_OK, l holds that page (its leading entries may still be
 * compacted ones); an index with only compacted entries gives an empty or
 * all-compacted last page. */
static ls_status scan_uncompacted(ls_compactor_t *c, int64_t log_id, size_t page, ls_kvlist_t *l)
{
    char prefix[64], from[96];
    ls_log_idx_prefix(prefix, sizeof prefix, log_id);
    for (;;) {
        int64_t start = cursor_get(c, log_id);
        if (c->pend_log == log_id && c->pend_next > start)
            start = c->pend_next; /* past ranges waiting for the table commit */
        ls_log_idx_key(from, sizeof from, log_id, start);
        ls_status st = ls_meta_scan_from(c->meta, prefix, from, page, l);
        if (st != LS_OK) return st;
        size_t i = 0;
        for (; i < l->n; i++) {
            ls_idx_entry_t e;
            if (ls_idx_decode(l->v[i].val, l->v[i].vlen, &e) != LS_OK)
                return LS_OK; /* compact_log reports it at this entry */
            bool compacted = e.kind != LS_IDX_WAL;
            int64_t next = e.last_offset + 1;
            ls_idx_clear(&e);
            if (!compacted) return LS_OK;
            cursor_set(c, log_id, next);
        }
        if (!l->more) return LS_OK;
        ls_kvlist_free(l); /* a full page of compacted entries: next page */
        c->stats.index_pages_skipped++;
    }
}

/* The retention policy of ts's logs (ts NULL: the broker defaults), with the
 * broker defaults as the cluster's dynamic broker configs set them now. */
static void retention_policy(ls_compactor_t *c, const ls_table_plan_stream_t *ts,
                             ls_retention_policy_t *p)
{
    int64_t def_ms = c->cfg.catalog ? ls_bcfg_effective(c->cfg.catalog, LS_BCFG_LOG_RETENTION_MS,
                                                        c->cfg.retention_ms, NULL)
                                    : c->cfg.retention_ms;
    int64_t def_bytes = c->cfg.catalog
                            ? ls_bcfg_effective(c->cfg.catalog, LS_BCFG_LOG_RETENTION_BYTES,
                                                c->cfg.retention_bytes, NULL)
                            : c->cfg.retention_bytes;
    ls_retention_policy_resolve(ts ? ts->stream : NULL, def_ms, def_bytes, ts && ts->table, p);
}

static void extend_bounds(ls_compactor_t *c, const ls_table_plan_stream_t *ts, swap_t *sw)
{
    ls_retention_policy_t rp;
    retention_policy(c, ts, &rp);
    sw->extend_max_bytes = LS_TABLE_ENTRY_MAX_BYTES;
    if (rp.retention_bytes > 0 && rp.retention_bytes / 10 < sw->extend_max_bytes)
        sw->extend_max_bytes = rp.retention_bytes / 10;
    sw->extend_span_ms = rp.retention_ms > 0 ? rp.retention_ms / 10 : INT64_MAX;
}

/* Called by ls_compactor_swap_index right before its txn, when the ranges swapped
 * before this one (earlier in the same pass too) are in the index. */
static void extend_in_table(ls_compactor_t *c, swap_t *sw)
{
    if (sw->co.first_offset <= 0 || sw->prev.key) return;
    char key[96];
    int klen = ls_log_idx_key(key, sizeof key, sw->log_id, sw->co.first_offset - 1);
    ls_kv_t kv = {0};
    if (klen <= 0 || ls_meta_get(c->meta, key, &kv) != LS_OK) return; /* none, or later */
    ls_idx_entry_t e;
    if (ls_idx_decode(kv.val, kv.vlen, &e) == LS_OK) {
        /* pos of a kind-3 entry: the max timestamp of its oldest range (0:
         * unknown, e.g. written before pos was kept: never extended) */
        int64_t base = (int64_t)e.pos;
        if (e.kind == LS_IDX_TABLE && e.last_offset + 1 == sw->co.first_offset && base > 0 &&
            (int64_t)e.len + sw->co.len <= sw->extend_max_bytes &&
            sw->co.max_timestamp - base <= sw->extend_span_ms) {
            sw->co.pos = e.pos;
            sw->co.first_offset = e.first_offset;
            sw->co.len += e.len;
            if (e.max_timestamp > sw->co.max_timestamp) sw->co.max_timestamp = e.max_timestamp;
            sw->prev.key = ls_malloc((size_t)klen + 1);
            memcpy(sw->prev.key, key, (size_t)klen + 1);
            sw->prev.klen = (size_t)klen;
            sw->prev.mod_rev = kv.mod_rev;
            sw->prev_len = e.len;
            sw->prev_last = e.last_offset;
        }
        ls_idx_clear(&e);
    }
    ls_kv_free(&kv);
}

/* Step 2: swaps the index in one txn, fenced by the claim. 1 if it did. */
int ls_compactor_swap_index(ls_compactor_t *c, swap_t *sw, const ls_lease_claim_t *claim)
{
    int n = sw->n, swapped = 0;
    int64_t log_id = sw->log_id;
    ls_walrefs_t *refs = (ls_walrefs_t *)&sw->refs;
    size_t cap = (size_t)n + LS_WALREFS_TXN_SLOTS(refs) + 3;
    ls_meta_cmp_t *cmps = LS_NEWN(ls_meta_cmp_t, cap);
    ls_meta_op_t *ops = LS_NEWN(ls_meta_op_t, cap);
    size_t ncmp = 0, nops = 0;
    /* fenced by the claim: a task whose lease expired cannot swap */
    cmps[ncmp++] = ls_lease_claim_cmp(claim);
    for (int i = 0; i < n; i++) {
        const ls_kv_t *kv = &sw->kvs[i];
        cmps[ncmp++] = (ls_meta_cmp_t){
            .kind = LS_META_CMP_MOD_REV, .key = kv->key, .klen = kv->klen, .rev = kv->mod_rev};
        if (i < n - 1)
            ops[nops++] = (ls_meta_op_t){.kind = LS_META_OP_DEL, .key = kv->key, .klen = kv->klen};
    }
    if (sw->co.kind == LS_IDX_TABLE) extend_in_table(c, sw);
    if (sw->prev.key) { /* the in-table entry this one extends goes */
        cmps[ncmp++] = (ls_meta_cmp_t){.kind = LS_META_CMP_MOD_REV,
                                       .key = sw->prev.key,
                                       .klen = sw->prev.klen,
                                       .rev = sw->prev.mod_rev};
        ops[nops++] =
            (ls_meta_op_t){.kind = LS_META_OP_DEL, .key = sw->prev.key, .klen = sw->prev.klen};
    }
    ls_buf_t coval;
    ls_buf_init(&coval);
    ls_idx_encode(&sw->co, &coval);
    const ls_kv_t *lastkv = &sw->kvs[n - 1];
    ops[nops++] = (ls_meta_op_t){.kind = LS_META_OP_PUT,
                                 .key = lastkv->key,
                                 .klen = lastkv->klen,
                                 .val = coval.data,
                                 .vlen = coval.len};
    int released = 0;
    ls_status rs = LS_OK, st = LS_OK;
    size_t ncmp0 = ncmp, nops0 = nops;
    /* WAL objects hold several logs: a conflict on a count alone (another
     * log's swap or trim touching the same object) is retried at once
     * with fresh counts; a changed index entry or a lost claim fails
     * every attempt */
    for (int attempt = 0; attempt < SWAP_ATTEMPTS; attempt++) {
        ncmp = ncmp0;
        nops = nops0;
        rs = ls_walrefs_prepare(refs, c->meta, cmps, &ncmp, ops, &nops, &released);
        if (rs != LS_OK) break;
        st = ls_meta_txn(c->meta, cmps, ncmp, ops, nops, NULL);
        if (st != LS_ECONFLICT) break;
    }
    if (rs != LS_OK) {
        LS_WARN_RL("compact", "log %016llx: reading WAL object counts failed: %s (will retry)",
                   (unsigned long long)log_id, ls_status_str(rs));
        c->stats.failures++;
    } else if (st == LS_OK) {
        ls_crashpoint("compact.index_swapped");
        result_t *res = ls_compactor_push_result(c, log_id, &sw->co);
        if (sw->prev.key) /* the extended entry's rows are where they were */
            res->changed_from = sw->prev_last + 1;
        if (sw->co.kind == LS_IDX_TABLE) {
            c->stats.ranges_in_table++;
            c->stats.bytes_in_table += sw->co.len - sw->prev_len;
            c->stats.table_entries_extended += sw->prev.key != NULL;
        } else {
            c->stats.objects_written++;
            c->stats.bytes_written += sw->bytes;
        }
        c->stats.entries_replaced += (uint64_t)n;
        c->stats.wal_objects_released += (uint64_t)released;
        cursor_set(c, log_id, sw->co.last_offset + 1);
        int64_t *due = ls_i64map_get(&c->merge_due, log_id);
        if (!due) {
            due = LS_NEW(int64_t);
            ls_i64map_put(&c->merge_due, log_id, due);
        }
        (*due)++;
        swapped = 1;
        LS_DEBUG("compact", "log %016llx: [%lld, %lld] -> %s (%d WAL entries)",
                 (unsigned long long)log_id, (long long)sw->co.first_offset,
                 (long long)sw->co.last_offset, sw->co.object, n);
    } else if (st == LS_ECONFLICT) {
        c->stats.conflicts++;
    } else {
        LS_WARN_RL("compact", "log %016llx: index swap failed: %s (will retry)",
                   (unsigned long long)log_id, ls_status_str(st));
        c->stats.failures++;
    }
    ls_buf_free(&coval);
    ls_free(cmps);
    ls_free(ops);
    return swapped;
}

/* The claim on the commit of ts's table, taken the first time one of its
 * partitions has work in this task (ls_lease_claim_table). False when another
 * broker holds it (the table is skipped until its interval comes round
 * again) or the store failed. */
static bool table_claimed(ls_compactor_t *c, const ls_table_plan_stream_t *ts)
{
    if (c->table_claim.held) return true;
    if (c->table_tried) return false;
    c->table_tried = true;
    ls_status st = ls_lease_claim_table(c->owner, ts->stream->stream_no, &c->table_claim);
    if (st == LS_EEXISTS) {
        c->stats.logs_owned_elsewhere++; /* another broker commits it this time */
        int64_t again = ls_clock_wall_ms() + ts->policy.commit_interval_ms;
        if (!c->next_due_ms || again < c->next_due_ms) c->next_due_ms = again;
    } else if (st != LS_OK) {
        LS_WARN_RL("compact", "table %s.%s: claiming its commit failed: %s (will retry)",
                   ts->stream->ns, ts->target.name, ls_status_str(st));
        c->stats.failures++;
    }
    return c->table_claim.held;
}

/* Whether a range of log_id may be left only in ts's table (an index entry
 * of kind 3, docs/ARCHITECTURE.md "The third copy of a table log"): the
 * table holds the records byte for byte and nothing rewrites its rows
 * (ls_unfold_source_valid, the predicate unfolding uses the other way), it
 * has no changelog side table, and the log's
 * cold reference (written by ls_compactor_unfold_stream before the table task) names
 * this table, so readers find the rows and a later policy change unfolds
 * them. */
static bool table_holds_records(ls_compactor_t *c, const ls_table_plan_stream_t *ts, int64_t log_id)
{
    if (!ts || !ts->table || ts->policy.changelog) return false;
    if (!ls_unfold_source_valid(ts->stream, &ts->policy, NULL, 0)) return false;
    const ls_unfold_ref_t *r = ls_i64map_get(&c->refs, log_id);
    return r && !strcmp(r->prefix, ts->target.prefix) && !strcmp(r->ns, ts->stream->ns) &&
           !strcmp(r->table, ts->target.name);
}

/* Whether a range's batches (CO body obj, batch positions ents) hold no
 * transactional or control batch: aborted data and markers are not rows,
 * and read_uncommitted readers must see them, so such a range keeps a CO. */
static bool range_plain(const uint8_t *obj, const ls_co_entry_t *ents, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *b = obj + ents[i].pos;
        uint16_t attrs = (uint16_t)(b[21] << 8 | b[22]); /* RecordBatch v2 attributes */
        if (attrs & 0x30) return false;                  /* bit 4 transactional, 5 control */
    }
    return true;
}

/* Why a stream's table is held back this pass (the first reason of the
 * pass is kept: it names the range that stops the table), or, with why
 * NULL, that it committed: the status clears unless a range failed earlier
 * in the same pass (the table is then still held at that range). Published
 * by pass_after for DescribeConfigs (lakestream.table.held.reason). */
void ls_compactor_mark_held(ls_compactor_t *c, const ls_table_plan_stream_t *ts, const char *why)
{
    char *old = ls_i64map_get(&c->held_next, ts->stream->stream_no);
    if (old && (old[0] || !why)) return;
    ls_free(old);
    if (!why) why = "";
    const char *table = ts->table ? ts->target.name : "";
    size_t wl = strlen(why) + 1, nl = strlen(ts->stream->ns), tl = strlen(table) + 1;
    char *v = ls_malloc(wl + nl + 1 + tl);
    memcpy(v, why, wl);
    memcpy(v + wl, ts->stream->ns, nl);
    v[wl + nl] = 0x1f;
    memcpy(v + wl + nl + 1, table, tl);
    ls_i64map_put(&c->held_next, ts->stream->stream_no, v);
}

/* Compacts the oldest eligible run of one log (ts: its stream's table plan,
 * NULL when unknown). Returns 1 if the log may have more work now: it
 * swapped, or it just claimed the log (the next call looks again under the
 * claim, since the first look may predate another owner's work). */
static int compact_log(ls_compactor_t *c, int64_t log_id, const ls_table_plan_stream_t *ts)
{
    bool table = ts && ts->table;
    if (table && c->table_ts != ts)
        return 0; /* a table log compacts only into its table's commit (ls_compactor_table_task) */
    /* a table log has no hot window: its table task runs once per commit
     * interval and takes everything committed by then (ls_compactor_table_task) */
    int64_t hot = table ? 0 : c->cfg.min_age_ms;
    if (!table && ts) {
        /* a compacted topic's max.compaction.lag.ms bounds how long a record
         * may wait for key compaction, so also how long it stays in the WAL */
        ls_kc_policy_t kp;
        ls_kc_policy_resolve(ts->stream, &kp);
        if (kp.compact && kp.max_lag_ms < hot) hot = kp.max_lag_ms;
    }
    /* a table log is compacted (and materialized) only below its last
     * stable offset, so every transaction with data in a range has ended
     * and its aborted records are known (read after the head) */
    int64_t lso = INT64_MAX, span = 0;
    if (table) {
        ls_status st = ls_log_stable_read(c->meta, log_id, &lso, &span);
        if (st != LS_OK) {
            LS_WARN_RL("compact", "log %016llx: reading its head failed: %s (will retry)",
                       (unsigned long long)log_id, ls_status_str(st));
            c->stats.failures++;
            return 0;
        }
    }
    ls_kvlist_t l;
    if (scan_uncompacted(c, log_id, (size_t)c->cfg.max_entries + 64, &l) != LS_OK) return 0;
    int64_t now = ls_clock_wall_ms();
    c->cur_lag_ms = 0; /* how long the oldest WAL entry has been due */
    /* the last page, not started past pending ranges: does the index hold
     * any WAL entry at all? (retention may have emptied it) */
    bool no_wal = !l.more && c->pend_log != log_id;
    for (size_t i = 0; i < l.n; i++) {
        ls_idx_entry_t e;
        if (ls_idx_decode(l.v[i].val, l.v[i].vlen, &e) != LS_OK) {
            no_wal = false;
            break;
        }
        bool wal = e.kind == LS_IDX_WAL;
        int64_t t = wal ? ls_wal_key_time(e.object) : -1;
        ls_idx_clear(&e);
        if (wal) {
            if (t >= 0 && now - t > hot) c->cur_lag_ms = now - t - hot;
            no_wal = false;
            break;
        }
    }
    c->cur_no_wal = no_wal;
    ls_idx_entry_t *sel = LS_NEWN(ls_idx_entry_t, (size_t)c->cfg.max_entries);
    size_t *sel_kv = LS_NEWN(size_t, (size_t)c->cfg.max_entries);
    int n = 0;
    int64_t bytes = 0;
    for (size_t i = 0; i < l.n && n < c->cfg.max_entries; i++) {
        ls_idx_entry_t e;
        if (ls_idx_decode(l.v[i].val, l.v[i].vlen, &e) != LS_OK) break;
        if (e.kind != LS_IDX_WAL && n == 0) {
            ls_idx_clear(&e);
            continue; /* already compacted: look past it */
        }
        int64_t t = ls_wal_key_time(e.object);
        bool old_enough = t >= 0 && now - t >= hot;
        bool contiguous = n == 0 || sel[n - 1].last_offset + 1 == e.first_offset;
        if (e.kind != LS_IDX_WAL || !old_enough || !contiguous || e.last_offset >= lso ||
            (n > 0 && bytes + e.len > c->cfg.max_bytes)) {
            if (table && e.kind == LS_IDX_WAL && !old_enough && t >= 0 &&
                (!c->next_due_ms || t + hot < c->next_due_ms))
                c->next_due_ms = t + hot; /* come back exactly when it is due */
            ls_idx_clear(&e);
            break;
        }
        bytes += e.len;
        sel_kv[n] = i;
        sel[n++] = e;
    }
    int swapped = 0;
    ls_buf_t obj;
    ls_buf_init(&obj);
    ls_co_entry_t *ents = NULL;
    uint32_t nents = 0, capents = 0;
    ls_walrefs_t refs = {0};
    ls_aborted_list_t aborted = {0};
    co_put_t put = {0};
    if (n == 0) goto out;
    if (table && !table_claimed(c, ts)) goto out;
    if (!c->claim.held) {
        swapped = ls_compactor_claim_log(c, log_id);
        goto out;
    }
    /* 1. read and rebase */
    ls_buf_append(&obj, LS_CO_MAGIC, 8);
    int64_t max_ts = -1;
    for (int i = 0; i < n; i++) {
        ls_buf_t part;
        ls_buf_init(&part);
        ls_status st =
            ls_wal_blocks_read(&c->wal_reads, sel[i].object, sel[i].pos, sel[i].len, &part);
        if (st != LS_OK || part.len != sel[i].len) {
            LS_WARN_RL("compact", "log %016llx: reading %s [%llu,+%u) failed: %s",
                       (unsigned long long)log_id, sel[i].object, (unsigned long long)sel[i].pos,
                       sel[i].len, st != LS_OK ? ls_status_str(st) : "short read");
            ls_buf_free(&part);
            c->stats.failures++;
            goto out;
        }
        char why[256];
        uint32_t *pos = NULL;
        int64_t *base = NULL;
        int k;
        if (ls_entries_rebase(part.data, part.len, sel[i].first_offset, sel[i].last_offset, false,
                              sel[i].object, sel[i].pos, &pos, &base, NULL, &k, why,
                              sizeof why) != LS_OK) {
            LS_ERROR("compact", "log %016llx: %s; leaving the range uncompacted",
                     (unsigned long long)log_id, why);
            ls_buf_free(&part);
            c->stats.failures++;
            goto out;
        }
        for (int j = 0; j < k; j++) {
            if (nents == capents) {
                capents = capents ? capents * 2 : 64;
                ents = ls_realloc(ents, capents * sizeof *ents);
            }
            ents[nents].base_offset = base[j];
            ents[nents++].pos = (uint32_t)(obj.len + pos[j]);
        }
        ls_free(pos);
        ls_free(base);
        ls_buf_append(&obj, part.data, part.len);
        ls_buf_free(&part);
        if (sel[i].max_timestamp > max_ts) max_ts = sel[i].max_timestamp;
        ls_walrefs_add(&refs, sel[i].object);
    }
    int64_t first = sel[0].first_offset, last = sel[n - 1].last_offset;
    size_t body_len = obj.len - LS_CO_HEADER_SIZE;
    ls_co_footer_encode(&obj, log_id, first, last, ents, nents);
    char co_key[128];
    ls_co_key(co_key, sizeof co_key, log_id, first, last);
    /* table.cold.reads=table: a range the table will hold whole, as the
     * records themselves, gets no CO; after its table commit its WAL
     * entries are swapped for one kind-3 entry (ls_compactor_table_task) */
    bool in_table =
        table && c->cfg.cold_reads_table && table_holds_records(c, ts, log_id) &&
        (!ts->policy.start_latest || first_since(sel, n, ts->policy.enabled_since_ms) <= first) &&
        range_plain(obj.data, ents, nents);
    put = (co_put_t){.os = c->os, .key = co_key, .iov = {obj.data, obj.len}};
    if (!in_table) co_put_start(&put, table && !c->batch_failed);
    ls_status st = LS_OK;
    if (!table) {
        st = co_put_join(&put);
        if (st != LS_OK && st != LS_EEXISTS) {
            LS_WARN_RL("compact", "log %016llx: writing %s failed: %s", (unsigned long long)log_id,
                       co_key, ls_status_str(st));
            c->stats.failures++;
            goto out;
        }
        ls_crashpoint("compact.co_written");
    }
    /* the swap to make: the CO entry under the key of the last replaced one */
    swap_t *sw = LS_NEW(swap_t);
    sw->log_id = log_id;
    sw->n = n;
    sw->kvs = LS_NEWN(ls_kv_t, (size_t)n);
    for (int i = 0; i < n; i++) {
        const ls_kv_t *kv = &l.v[sel_kv[i]];
        sw->kvs[i].key = ls_malloc(kv->klen + 1);
        memcpy(sw->kvs[i].key, kv->key, kv->klen + 1);
        sw->kvs[i].klen = kv->klen;
        sw->kvs[i].mod_rev = kv->mod_rev;
    }
    sw->co = (ls_idx_entry_t){.kind = LS_IDX_CO,
                              .first_offset = first,
                              .last_offset = last,
                              .max_timestamp = max_ts,
                              .entries = nents,
                              .pos = LS_CO_HEADER_SIZE,
                              .len = (uint32_t)body_len,
                              .object = ls_strdup(co_key)};
    if (in_table) { /* docs/FORMATS.md, index entry kind 3 */
        ls_free(sw->co.object);
        sw->co.kind = LS_IDX_TABLE;
        sw->co.entries = 0;
        sw->co.pos = max_ts > 0 ? (uint64_t)max_ts : 0; /* the base of extensions */
        sw->co.object = ls_strdup(LS_COLD_TABLE_OBJECT);
        extend_bounds(c, ts, sw);
    }
    sw->refs = refs;
    memset(&refs, 0, sizeof refs);
    sw->bytes = in_table ? 0 : obj.len;
    if (!table) {
        swapped = ls_compactor_swap_index(c, sw, &c->claim);
        ls_compactor_swap_free(sw);
        goto out;
    }
    /* 1b. the table: same bytes, second output, into the table's one commit
     * of this pass; the swap waits for that commit (ls_compactor_table_task) */
    if (!c->batch && !c->batch_failed) {
        char berr[512] = "";
        st = ls_mat_begin(c->meta, c->os, c->cfg.warehouse_uri, &ts->target, &c->batch, berr,
                          sizeof berr);
        if (st != LS_OK) {
            LS_WARN_RL("compact", "table %s.%s: opening it failed: %s (%s); will retry",
                       ts->stream->ns, ts->target.name, ls_status_str(st), berr);
            char why[700];
            snprintf(why, sizeof why, "opening the table failed: %s (%s)", ls_status_str(st), berr);
            ls_compactor_mark_held(c, ts, why);
            c->stats.table_failures++;
            c->batch_failed = true;
        } else { /* the version it writes (evolution=new-table), for DescribeConfigs */
            /* one allocation: "<name>\0<reason>\0" (reason "" for a base table) */
            const char *name = ls_mat_table_name(c->batch), *why = ls_mat_version_reason(c->batch);
            size_t nl = strlen(name) + 1, wl = why ? strlen(why) + 1 : 1;
            char *v = ls_malloc(nl + wl);
            memcpy(v, name, nl);
            memcpy(v + nl, why ? why : "", wl);
            ls_free(ls_i64map_get(&c->vers_next, ts->stream->stream_no));
            ls_i64map_put(&c->vers_next, ts->stream->stream_no, v);
        }
    }
    if (!c->batch) {
        ls_compactor_swap_free(sw);
        goto out;
    }
    {
        char terr[512] = "";
        uint64_t rows = 0;
        st = ls_log_aborted_read(c->meta, log_id, first, last, span, &aborted);
        if (st != LS_OK) {
            LS_WARN_RL("compact",
                       "log %016llx: reading the aborted transactions of [%lld, %lld] failed: "
                       "%s; its table waits",
                       (unsigned long long)log_id, (long long)first, (long long)last,
                       ls_status_str(st));
            char why[200];
            snprintf(why, sizeof why,
                     "partition %d, offsets [%lld, %lld]: reading their aborted transactions "
                     "failed: %s",
                     (int)(log_id & (LS_MAX_PARTITIONS - 1)), (long long)first, (long long)last,
                     ls_status_str(st));
            ls_compactor_mark_held(c, ts, why);
            c->stats.table_failures++;
            ls_compactor_swap_free(sw);
            goto out;
        }
        ls_mat_range_t r = {.partition = (int32_t)(log_id & (LS_MAX_PARTITIONS - 1)),
                            .log_id = log_id,
                            .obj = obj.data,
                            .entries = ents,
                            .n = nents,
                            .body_end = LS_CO_HEADER_SIZE + body_len,
                            .from_offset = ts->policy.start_latest
                                               ? first_since(sel, n, ts->policy.enabled_since_ms)
                                               : 0,
                            .last_offset = last,
                            .aborted = &aborted};
        st = ls_mat_add(c->batch, &r, &rows, terr, sizeof terr);
        if (st != LS_OK) {
            LS_WARN_RL("compact",
                       "log %016llx (%s-%d): materializing [%lld, %lld] into table %s.%s "
                       "failed: %s (%s); will retry",
                       (unsigned long long)log_id, ts->stream->name, (int)r.partition,
                       (long long)first, (long long)last, ts->stream->ns, ts->target.name,
                       ls_status_str(st), terr);
            char why[700];
            snprintf(why, sizeof why, "partition %d, offsets [%lld, %lld]: %s (%s)",
                     (int)r.partition, (long long)first, (long long)last, ls_status_str(st), terr);
            ls_compactor_mark_held(c, ts, why);
            c->stats.table_failures++;
            ls_compactor_swap_free(sw);
            goto out;
        }
        if (ls_mat_stopped(c->batch, log_id)) {
            /* evolution=new-table: the table holds this range only up to
             * the record where its next version takes over (or not at all):
             * the range stays in the WAL and a later pass writes the rest
             * into that version (lake/README.md, table versions) */
            ls_compactor_swap_free(sw);
            goto out;
        }
        if (!in_table) {
            st = co_put_join(&put);
            if (st != LS_OK && st != LS_EEXISTS) {
                LS_WARN_RL("compact", "log %016llx: writing %s failed: %s",
                           (unsigned long long)log_id, co_key, ls_status_str(st));
                c->stats.failures++;
                ls_compactor_swap_free(sw);
                goto out;
            }
            ls_crashpoint("compact.co_written");
        }
        if (c->npending == c->cappending) {
            c->cappending = c->cappending ? c->cappending * 2 : 16;
            c->pending = ls_realloc(c->pending, c->cappending * sizeof *c->pending);
        }
        c->pending[c->npending++] = sw;
        c->pend_log = log_id;
        c->pend_next = last + 1;
        swapped = 1;
    }
out:
    co_put_join(&put); /* before obj (its bytes) is freed */
    for (int i = 0; i < n; i++)
        ls_idx_clear(&sel[i]);
    ls_free(sel);
    ls_free(sel_kv);
    ls_free(ents);
    ls_walrefs_free(&refs);
    ls_aborted_list_free(&aborted);
    ls_buf_free(&obj);
    ls_kvlist_free(&l);
    return swapped;
}

/* The backfill a table log owes (start.position=earliest) before its WAL
 * ranges may follow: 0 when none is left (ls_table_backfill). */
int ls_compactor_backfill_log(ls_compactor_t *c, int64_t id, const ls_table_plan_stream_t *ts)
{
    if (ts->policy.start_latest) return 0;
    int r = 0;
    uint64_t rows = 0;
    for (int rounds = 0; rounds < 64; rounds++) {
        r = ls_table_backfill(&c->marks, c->meta, c->os, c->cfg.warehouse_uri, ts, id, &rows);
        if (r > 0) c->stats.rows_materialized += rows;
        if (r != 1) break;
    }
    if (r < 0) c->stats.table_failures++;
    return r;
}

/* One log: whole runs while they qualify (a backlog drains in one pass). */
void ls_compactor_compact_rounds(ls_compactor_t *c, int64_t id, const ls_table_plan_stream_t *ts,
                                 int64_t next_offset)
{
    c->cur_lag_ms = 0;
    /* every offset below the head's is compacted (the cursor says so): no
     * index scan, which an idle log would otherwise cost every pass */
    if (next_offset >= 0 && cursor_get(c, id) >= next_offset) return;
    /* each round is whole (its swap commits or changes nothing), so a stop
     * asked for meanwhile ends the backlog here, not 64 rounds later */
    c->cur_no_wal = false;
    for (int rounds = 0;
         rounds < 64 && !__atomic_load_n(&c->stopping, __ATOMIC_RELAXED) && compact_log(c, id, ts);
         rounds++)
        ;
    /* An index without WAL entries (retention trimmed them, or only
     * compacted ones are left below a cursor that lags): everything below
     * the head read before the scan is compacted or gone, and later appends
     * take offsets at or above it, so the cursor may move to the head and
     * the next passes skip the log without a scan. */
    if (next_offset >= 0 && c->cur_no_wal) cursor_set(c, id, next_offset);
    if (c->cur_lag_ms > c->pass_backlog_ms) c->pass_backlog_ms = c->cur_lag_ms;
    bool table = ts && ts->table;
    int64_t period = c->cfg.interval_ms > 0 ? c->cfg.interval_ms : 1000;
    if (!table && c->cur_lag_ms > (3 * period > 60000 ? 3 * period : 60000))
        LS_WARN_RL("compact",
                   "compaction of log %016llx is falling behind: its oldest WAL entry "
                   "has been due for %lld ms; WAL objects are not being collected",
                   (unsigned long long)id, (long long)c->cur_lag_ms);
}

/* Runs one trim under the task's claim and queues its result for the loop
 * (partial progress counts too: the loop takes the max). */
static trim_done_t *run_trim(ls_compactor_t *c, const ls_trim_req_t *req, ls_status *st)
{
    trim_done_t *t = LS_NEW(trim_done_t);
    t->log_id = req->log_id;
    *st = ls_log_trim(c->meta, c->os, req, &t->r);
    c->stats.entries_trimmed += (uint64_t)t->r.entries_removed;
    c->stats.wal_objects_released += (uint64_t)t->r.wal_released;
    c->stats.cos_deleted += (uint64_t)t->r.cos_deleted;
    t->next = c->trims;
    c->trims = t;
    return t;
}

/* Retention of one log: trims to what retention.ms / retention.bytes allow. */
void ls_compactor_retain_log(ls_compactor_t *c, int64_t id, const ls_table_plan_stream_t *ts)
{
    ls_retention_policy_t p;
    retention_policy(c, ts, &p);
    int64_t target;
    bool work;
    ls_status st = ls_retention_target(c->meta, id, &p, ls_clock_wall_ms(), &target, &work);
    if (st == LS_OK && work && !c->claim.held) {
        if (!ls_compactor_claim_log(c, id)) return;
        /* look again under the claim */
        st = ls_retention_target(c->meta, id, &p, ls_clock_wall_ms(), &target, &work);
    }
    if (st != LS_OK || !work) {
        if (st != LS_OK) {
            LS_WARN("retention", "log %016llx: reading its index failed: %s (will retry)",
                    (unsigned long long)id, ls_status_str(st));
            c->stats.failures++;
        }
        return;
    }
    ls_meta_cmp_t fence = ls_lease_claim_cmp(&c->claim);
    ls_trim_req_t req = {
        .log_id = id, .new_start = target, .keep_wal = p.keep_wal, .fence = &fence};
    trim_done_t *t = run_trim(c, &req, &st);
    if (st == LS_OK) {
        LS_INFO("retention",
                "log %016llx: log start now %lld (retention.ms %lld, retention.bytes "
                "%lld; %d index entries, %d compacted objects removed)",
                (unsigned long long)id, (long long)t->r.log_start, (long long)p.retention_ms,
                (long long)p.retention_bytes, t->r.entries_removed, t->r.cos_deleted);
    } else if (st == LS_ECONFLICT) {
        c->stats.conflicts++;
    } else {
        LS_WARN("retention", "log %016llx: trimming to %lld failed: %s (will retry)",
                (unsigned long long)id, (long long)target, ls_status_str(st));
        c->stats.failures++;
    }
}

static ls_status kc_claim(void *arg, int64_t log_id, ls_meta_cmp_t *fence)
{
    ls_compactor_t *c = arg;
    if (!c->claim.held && !ls_compactor_claim_log(c, log_id)) return LS_EEXISTS;
    *fence = ls_lease_claim_cmp(&c->claim);
    return LS_OK;
}

static void kc_swapped(void *arg, int64_t log_id, const ls_idx_entry_t *e,
                       const int64_t *aborts_gone, size_t n)
{
    ls_compactor_t *c = arg;
    /* the objects this swap replaced may be deleted once their grace is over */
    int64_t *look = i64_slot(&c->marker_looks, log_id);
    int64_t due = ls_clock_wall_ms() + c->cfg.replaced_grace_ms;
    if (*look == 0 || due < *look) *look = due;
    result_t *res = ls_compactor_push_result(c, log_id, e);
    if (n) {
        res->aborts_gone = ls_memdup(aborts_gone, n * sizeof *aborts_gone);
        res->naborts_gone = n;
    }
}

/* Whether a pass looks for log id's replaced objects (markers a swap left,
 * deleted after their grace; one metadata scan). Not every pass: an idle
 * log would cost a scan per pass for nothing, which on etcd with thousands
 * of partitions is most of the cluster's idle load. A log is looked at on
 * its first pass here, then every max(grace, interval), and right after the
 * grace of a swap this compactor made; a swap another broker made (before
 * this one took the log over) is found by the next periodic look. So a
 * replaced object is deleted within about two graces of its swap. */
static bool marker_look_due(ls_compactor_t *c, int64_t id, int64_t now)
{
    int64_t *look = i64_slot(&c->marker_looks, id);
    if (*look > now) return false;
    int64_t every = c->cfg.replaced_grace_ms > c->cfg.interval_ms ? c->cfg.replaced_grace_ms
                                                                  : c->cfg.interval_ms;
    *look = now + (every > 0 ? every : 1);
    return true;
}

/* Key compaction of a cleanup.policy=compact log (keycompact.c), after its
 * WAL entries became compacted objects, under the task's claim (taken by
 * ls_kc_log only when the log is due). Any other log whose WAL entries became
 * compacted objects since its last check is checked for runs of small
 * objects to merge (keycompact.c, "Merging small objects"), each merged
 * object spanning at most a tenth of the log's retention (time and bytes).
 * After a restart a log is checked again at its next compaction. */
void ls_compactor_key_compact(ls_compactor_t *c, int64_t id, const ls_table_plan_stream_t *ts)
{
    ls_kc_policy_t p;
    ls_kc_policy_resolve(ts ? ts->stream : NULL, &p);
    ls_kc_limits_t lim = {.map_bytes =
                              c->cfg.keymap_max_bytes ? c->cfg.keymap_max_bytes : (size_t)16 << 20,
                          .group_bytes = c->cfg.max_bytes,
                          .grace_ms = c->cfg.replaced_grace_ms};
    int64_t now_ms = ls_clock_wall_ms();
    lim.check_markers = marker_look_due(c, id, now_ms);
    int64_t *due = ls_i64map_del(&c->merge_due, id);
    if (due && ts && !p.compact) {
        ls_retention_policy_t rp;
        retention_policy(c, ts, &rp);
        p.merge = true;
        p.merge_span_ms = rp.retention_ms > 0 ? rp.retention_ms / 10 : INT64_MAX;
        if (rp.retention_bytes > 0 && rp.retention_bytes / 10 < lim.group_bytes)
            lim.group_bytes = rp.retention_bytes / 10;
    }
    ls_free(due);
    ls_kc_stats_t was = c->stats.keycompact;
    int64_t t0 = ls_clock_mono_us();
    ls_status st = ls_kc_log(c->meta, c->os, id, &p, &lim, now_ms, kc_claim, kc_swapped, c,
                             &c->stats.keycompact);
    const ls_kc_stats_t *now = &c->stats.keycompact;
    if (now->cleans > was.cleans) /* what a clean did and how fast (operators, make bench) */
        LS_INFO("compact",
                "log %016llx: key compaction read %llu records (%llu bytes), kept %llu, dropped "
                "%llu superseded, %llu aborted, %llu tombstones and %llu transaction markers, "
                "wrote %llu bytes in %.3f s",
                (unsigned long long)id, (unsigned long long)(now->records_read - was.records_read),
                (unsigned long long)(now->bytes_read - was.bytes_read),
                (unsigned long long)(now->records_kept - was.records_kept),
                (unsigned long long)(now->superseded_dropped - was.superseded_dropped),
                (unsigned long long)(now->aborted_dropped - was.aborted_dropped),
                (unsigned long long)(now->tombstones_dropped - was.tombstones_dropped),
                (unsigned long long)(now->markers_dropped - was.markers_dropped),
                (unsigned long long)(now->bytes_written - was.bytes_written),
                (double)(ls_clock_mono_us() - t0) / 1e6);
    if (st != LS_OK)
        LS_WARN_RL("compact", "log %016llx: key compaction failed: %s (will retry)",
                   (unsigned long long)id, ls_status_str(st));
}

/* Storage of a deleted topic (issue 17 §5): its logs are fenced, so nothing
 * appends to them; trimming each to its high watermark removes every index
 * entry, deletes its compacted objects and counts its WAL objects down (GC
 * deletes them at zero), through the same crash-safe trim as retention, under
 * the same claim. What stays is the head and the start record (a few bytes
 * each): the fence itself, so the log id is never used again. Runs with the
 * retention checks, and file.delete.delay.ms after a deletion on this broker
 * (ls_compactor_reclaim_after). */
static void reclaim_log(ls_compactor_t *c, int64_t id, int64_t next_offset)
{
    ls_start_t start;
    int64_t rev;
    ls_status st = ls_log_start_read(c->meta, id, &start, &rev);
    if (st != LS_OK || (start.log_start >= next_offset && start.swept_below >= start.index_start)) {
        /* (a read failure is retried at the next check); objects key compaction
         * replaced before the topic went are deleted once their grace is over */
        ls_compactor_key_compact(c, id, NULL);
        ls_lease_release(c->owner, &c->claim);
        return;
    }
    if (!ls_compactor_claim_log(c, id)) return;
    ls_meta_cmp_t fence = ls_lease_claim_cmp(&c->claim);
    ls_trim_req_t req = {.log_id = id,
                         .new_start = next_offset,
                         .keep_wal = false,
                         .fence = &fence,
                         .reclaim = true};
    trim_done_t *t = run_trim(c, &req, &st);
    if (st == LS_OK)
        LS_INFO("retention",
                "deleted log %016llx: storage reclaimed (%d index entries, %d "
                "compacted objects removed)",
                (unsigned long long)id, t->r.entries_removed, t->r.cos_deleted);
    else if (st != LS_ECONFLICT)
        LS_WARN_RL("retention",
                   "deleted log %016llx: reclaiming its storage failed: %s (will "
                   "retry)",
                   (unsigned long long)id, ls_status_str(st));
    ls_compactor_key_compact(
        c, id, NULL); /* not compacted any more: deletes what key compaction replaced */
    ls_lease_release(c->owner, &c->claim);
}

/* One log's task: compaction rounds, key compaction, then retention when a
 * check is due; a claim taken on the way (only once work was found) ends
 * with the task. next_offset: the log's head as the pass read it. */
static void log_task(ls_compactor_t *c, int64_t id, const ls_table_plan_stream_t *ts,
                     int64_t next_offset)
{
    if (c->pass_compact && !(ts && ts->blocked)) ls_compactor_unfold_log(c, id, ts);
    if (c->pass_compact && !(ts && ts->blocked))
        ls_compactor_compact_rounds(c, id, ts, next_offset);
    if (c->pass_compact && ts && !ts->blocked) ls_compactor_key_compact(c, id, ts);
    if (c->pass_retention && !(ts && ts->blocked)) ls_compactor_retain_log(c, id, ts);
    ls_lease_release(c->owner, &c->claim);
}

/* End of a pass's WAL reads: the blocks go (wal_blocks.c B3), and a pass
 * that outgrew the budget says so, since its further reads cost a GET per
 * log and object instead of one per object. */
static void wal_reads_end(ls_compactor_t *c)
{
    uint64_t ranges = c->wal_reads.stats.exact_reads - c->pass_range_reads;
    if (c->wal_reads.full && ranges > 0)
        LS_INFO_RL("compact",
                   "a compaction pass held %zu MiB of WAL objects "
                   "(compaction.wal.read.budget.bytes) and read %llu further log ranges with "
                   "a GET each; a larger budget reads each WAL object once",
                   c->wal_reads.budget_bytes >> 20, (unsigned long long)ranges);
    ls_wal_blocks_clear(&c->wal_reads);
    c->pass_range_reads = c->wal_reads.stats.exact_reads;
}

/* End of a pass (worker; the stats are the worker's while it runs). */
static void pass_metrics(ls_compactor_t *c, bool full, int64_t start_us)
{
    const ls_wal_blocks_stats_t *ws = &c->wal_reads.stats;
    ls_metric_counter_store(ls_metrics_series1(&m_wal_reads, "block"), ws->gets - ws->exact_reads);
    ls_metric_counter_store(ls_metrics_series1(&m_wal_reads, "range"), ws->exact_reads);
    ls_metric_counter_store(ls_metrics_series0(&m_wal_ranges_held), ws->hits);
    ls_metric_observe(ls_metrics_series1(&m_pass_seconds, full ? "full" : "tables"),
                      (double)(ls_clock_mono_us() - start_us) / 1e6);
    if (full) ls_metric_set(ls_metrics_series0(&m_backlog), (double)c->pass_backlog_ms / 1000);
    ls_metric_counter_store(ls_metrics_series0(&m_objects), c->stats.objects_written);
    ls_metric_counter_store(ls_metrics_series0(&m_bytes), c->stats.bytes_written);
    ls_metric_counter_store(ls_metrics_series0(&m_rows), c->stats.rows_materialized);
    ls_metric_counter_store(ls_metrics_series0(&m_table_failures), c->stats.table_failures);
    ls_compactor_table_metrics_publish(c);
}

static void pass_work(uv_work_t *w)
{
    ls_compactor_t *c = w->data;
    int64_t start_us = ls_clock_mono_us();
    c->pass_backlog_ms = 0;
    if (!c->reclaimed) {
        /* the first pass runs after the broker's registration took over
         * its id, so a claim under this id from another run is a dead one */
        ls_lease_owner_reclaim(c->owner, c->owner_prefix);
        c->reclaimed = true;
    }
    ls_table_plan_t plan;
    memset(&plan, 0, sizeof plan);
    if (c->cfg.catalog)
        ls_table_plan_build(&plan, c->cfg.catalog, c->cfg.table_defaults, c->cfg.ntable_defaults,
                            c->cfg.registry);
    c->table_period_ms = plan.min_interval_ms;
    c->next_due_ms = 0;
    if (c->pass_full || !c->refs_loaded) ls_compactor_refs_load(c);
    if (!c->pass_full) {
        /* between full passes: only the logs of streams with a table */
        for (int i = 0; i < plan.n; i++)
            if (plan.v[i].table) ls_compactor_table_task(c, &plan.v[i]);
        ls_compactor_tables_turned_off(c, &plan);
        ls_table_plan_clear(&plan);
        wal_reads_end(c);
        pass_metrics(c, false, start_us);
        return;
    }
    ls_kvlist_t heads;
    if (ls_meta_scan_prefix(c->meta, LS_KEY_HEAD, 0, &heads) != LS_OK) {
        ls_table_plan_clear(&plan);
        return;
    }
    for (size_t i = 0; i < heads.n; i++) {
        int64_t id = ls_log_id_from_head_key((const char *)heads.v[i].key, heads.v[i].klen);
        ls_head_t h;
        if (id < 0 || ls_head_decode(heads.v[i].val, heads.v[i].vlen, &h) != LS_OK) continue;
        bool fenced = h.fenced;
        int64_t next_offset = h.next_offset;
        ls_head_clear(&h);
        if (fenced) {
            if (c->pass_retention || c->pass_reclaim) reclaim_log(c, id, next_offset);
            if (c->pass_retention || c->pass_reclaim) ls_compactor_unfold_forget(c, id);
            continue;
        }
        const ls_table_plan_stream_t *ts = ls_table_plan_find(&plan, id);
        if (!(ts && ts->table)) log_task(c, id, ts, next_offset);
    }
    for (int i = 0; i < plan.n; i++)
        if (plan.v[i].table) ls_compactor_table_task(c, &plan.v[i]);
    ls_compactor_tables_turned_off(c, &plan);
    ls_table_plan_clear(&plan);
    ls_kvlist_free(&heads);
    wal_reads_end(c);
    pass_metrics(c, true, start_us);
}

static void arm(ls_compactor_t *c);

static void start_pass(ls_compactor_t *c, bool full);

static void maybe_stopped(ls_compactor_t *c);

static void pass_after(uv_work_t *w, int status)
{
    ls_compactor_t *c = w->data;
    ls_loop_work_begin("compaction results");
    c->running = false;
    c->stats.passes++;
    { /* publish this pass's table lags */
        ls_i64map_t done = c->lags;
        c->lags = c->lags_next;
        c->lags_next = done;
        ls_compactor_free_i64_values(&c->lags_next);
        ls_i64map_init(&c->lags_next);
        /* and the table versions begun (a stream not begun keeps its last) */
        int64_t k;
        void *v;
        for (size_t it = 0; ls_i64map_next(&c->vers_next, &it, &k, &v);) {
            ls_free(ls_i64map_get(&c->vers, k));
            ls_i64map_put(&c->vers, k, v);
        }
        ls_i64map_free(&c->vers_next);
        ls_i64map_init(&c->vers_next);
        /* and why tables are held ("": a commit cleared it) */
        pthread_mutex_lock(&c->held_mu);
        for (size_t it = 0; ls_i64map_next(&c->held_next, &it, &k, &v);) {
            ls_free(ls_i64map_get(&c->held, k));
            if (((char *)v)[0]) {
                ls_i64map_put(&c->held, k, v);
            } else {
                ls_i64map_del(&c->held, k);
                ls_free(v);
            }
        }
        pthread_mutex_unlock(&c->held_mu);
        ls_i64map_free(&c->held_next);
        ls_i64map_init(&c->held_next);
        /* and whether external catalogs are behind ("": in sync) */
        for (size_t it = 0; ls_i64map_next(&c->csync_status_next, &it, &k, &v);) {
            ls_free(ls_i64map_get(&c->csync_status, k));
            if (((char *)v)[0]) {
                ls_i64map_put(&c->csync_status, k, v);
            } else {
                ls_i64map_del(&c->csync_status, k);
                ls_free(v);
            }
        }
        ls_i64map_free(&c->csync_status_next);
        ls_i64map_init(&c->csync_status_next);
        /* and the skipped-record counts committed */
        for (size_t it = 0; ls_i64map_next(&c->skips_next, &it, &k, &v);) {
            ls_free(ls_i64map_get(&c->skips, k));
            ls_i64map_put(&c->skips, k, v);
        }
        ls_i64map_free(&c->skips_next);
        ls_i64map_init(&c->skips_next);
    }
    for (result_t *r = c->results, *next; r; r = next) {
        next = r->next;
        if (r->put)
            ls_logstore_reload_index(c->logs, r->log_id);
        else
            ls_logstore_apply_compaction_from(c->logs, r->log_id, &r->co, r->changed_from);
        ls_logstore_aborted_forget(c->logs, r->log_id, r->aborts_gone, r->naborts_gone);
        ls_free(r->aborts_gone);
        ls_idx_clear(&r->co);
        ls_free(r);
    }
    c->results = NULL;
    c->results_tail = &c->results;
    for (trim_done_t *t = c->trims, *next; t; t = next) {
        next = t->next;
        ls_logstore_apply_trim(c->logs, t->log_id, &t->r);
        ls_free(t);
    }
    c->trims = NULL;
    done_cb_t *ws = c->waiters;
    c->waiters = NULL;
    while (ws) {
        done_cb_t *d = ws;
        ws = d->next;
        d->fn(d->arg);
        ls_free(d);
    }
    ls_loop_work_end();
    if (c->stopping)
        maybe_stopped(c);
    else if (c->retention_due || c->reclaim_due)
        start_pass(c, false); /* a check came due during the pass */
    else if (c->cfg.enabled)
        arm(c);
}

static void start_pass(ls_compactor_t *c, bool full)
{
    if (c->running || c->stopping) return;
    int64_t now = ls_clock_wall_ms();
    c->pass_retention = c->retention_due; /* retention visits every log */
    c->retention_due = false;
    c->pass_reclaim = c->reclaim_due; /* and reclaiming, every deleted one */
    c->reclaim_due = false;
    c->pass_compact = c->cfg.enabled || full;
    c->pass_full = full || c->pass_retention || c->pass_reclaim || now >= c->next_full_ms;
    if (c->pass_full) c->next_full_ms = now + c->cfg.interval_ms;
    c->running = true;
    c->work.data = c;
    uv_queue_work(c->loop, &c->work, pass_work, pass_after);
}

static void on_timer(uv_timer_t *t) { start_pass(t->data, false); }

static void on_retention_timer(uv_timer_t *t)
{
    ls_compactor_t *c = t->data;
    c->retention_due = c->cfg.retention;
    start_pass(c, false);
}

static void on_reclaim_timer(uv_timer_t *t)
{
    ls_compactor_t *c = t->data;
    c->reclaim_due = true;
    start_pass(c, false);
}

void ls_compactor_reclaim_after(ls_compactor_t *c, int64_t delay_ms)
{
    if (c->stopping || !c->cfg.retention) return;
    if (delay_ms < 0) delay_ms = 0;
    /* several deletions: the earliest due one wins (a reclaim pass takes
     * every deleted log, also those whose delay has not passed yet) */
    if (uv_is_active((uv_handle_t *)&c->reclaim_timer) &&
        uv_timer_get_due_in(&c->reclaim_timer) <= (uint64_t)delay_ms)
        return;
    uv_timer_start(&c->reclaim_timer, on_reclaim_timer, (uint64_t)delay_ms, 0);
}

/* One-shot: the next full pass, a table's commit interval from now (so each
 * new WAL entry of a table log is seen before it is due), or the earliest due
 * entry, whichever comes first. */
static void arm(ls_compactor_t *c)
{
    int64_t now = ls_clock_wall_ms(), at = c->next_full_ms;
    if (c->table_period_ms > 0 && now + c->table_period_ms < at) at = now + c->table_period_ms;
    if (c->next_due_ms > 0 && c->next_due_ms < at) at = c->next_due_ms;
    uv_timer_start(&c->timer, on_timer, at > now ? (uint64_t)(at - now) : 0, 0);
}

ls_compactor_t *ls_compactor_start(uv_loop_t *loop, ls_logstore_t *logs, ls_meta_t *meta,
                                   ls_objstore_t *os, const ls_compactor_config_t *cfg)
{
    ls_compactor_t *c = LS_NEW(ls_compactor_t);
    c->loop = loop;
    c->logs = logs;
    c->meta = meta;
    c->os = os;
    c->cfg = *cfg;
    if (c->cfg.max_entries < 1) c->cfg.max_entries = 1;
    if (c->cfg.lease_ttl_ms <= 0) c->cfg.lease_ttl_ms = 30000;
    uint32_t nonce;
    ls_random_bytes(&nonce, sizeof nonce);
    char name[96];
    snprintf(c->owner_prefix, sizeof c->owner_prefix, "%s",
             cfg->owner_name ? cfg->owner_name : "compactor");
    snprintf(name, sizeof name, "%s/%08x", c->owner_prefix, nonce);
    c->owner = ls_lease_owner_new(meta, name, c->cfg.lease_ttl_ms);
    uv_timer_init(loop, &c->timer);
    uv_timer_init(loop, &c->retention_timer);
    uv_timer_init(loop, &c->reclaim_timer);
    c->timer.data = c->retention_timer.data = c->reclaim_timer.data = c;
    c->handles_open = 3;
    ls_table_marks_init(&c->marks);
    ls_i64map_init(&c->cursors);
    ls_i64map_init(&c->marker_looks);
    ls_i64map_init(&c->merge_due);
    ls_i64map_init(&c->table_commits);
    ls_i64map_init(&c->orphan_sweeps);
    ls_i64map_init(&c->idle_checks);
    ls_i64map_init(&c->rewrite_waits);
    ls_i64map_init(&c->refs);
    /* a pass holds at most wal_read_budget of WAL objects (wal_blocks.c B2) */
    if (c->cfg.wal_read_budget <= 0) c->cfg.wal_read_budget = WAL_READ_BUDGET;
    ls_wal_blocks_init(&c->wal_reads, os, (size_t)c->cfg.wal_object_bytes,
                       (size_t)c->cfg.wal_read_budget);
    c->pend_log = -1;
    ls_i64map_init(&c->lags_next);
    ls_i64map_init(&c->lags);
    ls_i64map_init(&c->table_totals);
    table_metrics_t *tm = &c->tm;
    ls_metrics_rows_t *rows[] = {&tm->lag_s, &tm->lag_rec, &tm->commit_ts, &tm->snapshots,
                                 &tm->files, &tm->bytes,   &tm->rows,      &tm->skipped};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        ls_metrics_rows_init(rows[i]);
    ls_i64map_init(&c->vers_next);
    ls_i64map_init(&c->vers);
    ls_i64map_init(&c->held_next);
    ls_i64map_init(&c->held);
    c->csync = ls_catalog_sync_new();
    ls_i64map_init(&c->csync_status_next);
    ls_i64map_init(&c->csync_status);
    pthread_mutex_init(&c->held_mu, NULL);
    ls_i64map_init(&c->skips_next);
    ls_i64map_init(&c->skips);
    c->next_full_ms = ls_clock_wall_ms() + c->cfg.interval_ms;
    /* until the first pass has read the table policies, assume the shortest
     * commit interval, so tables are fresh right after a restart too */
    c->table_period_ms = LS_POLICY_MIN_COMMIT_INTERVAL_MS;
    if (cfg->enabled) arm(c);
    if (cfg->retention && cfg->retention_check_interval_ms > 0)
        uv_timer_start(&c->retention_timer, on_retention_timer,
                       (uint64_t)cfg->retention_check_interval_ms,
                       (uint64_t)cfg->retention_check_interval_ms);
    return c;
}

void ls_compactor_kick(ls_compactor_t *c, void (*done)(void *arg), void *arg)
{
    if (done) {
        done_cb_t *d = LS_NEW(done_cb_t);
        d->fn = done;
        d->arg = arg;
        d->next = c->waiters;
        c->waiters = d;
    }
    if (!c->running) c->retention_due = c->cfg.retention;
    start_pass(c, true);
}

/* Stopped once the timers are closed and no pass is running. */
static void maybe_stopped(ls_compactor_t *c)
{
    if (c->handles_open || c->running || !c->stop_done) return;
    void (*done)(void *) = c->stop_done;
    c->stop_done = NULL;
    done(c->stop_arg);
}

static void timer_closed(uv_handle_t *h)
{
    ls_compactor_t *c = h->data;
    c->handles_open--;
    maybe_stopped(c);
}

void ls_compactor_stop(ls_compactor_t *c, void (*done)(void *arg), void *arg)
{
    __atomic_store_n(&c->stopping, true, __ATOMIC_RELAXED); /* a pass's rounds read it */
    c->stop_done = done;
    c->stop_arg = arg;
    uv_close((uv_handle_t *)&c->timer, timer_closed);
    uv_close((uv_handle_t *)&c->retention_timer, timer_closed);
    uv_close((uv_handle_t *)&c->reclaim_timer, timer_closed);
}

void ls_compactor_free(ls_compactor_t *c)
{
    ls_lease_owner_free(c->owner); /* revokes: owner keys left go at once */
    ls_table_marks_free(&c->marks);
    ls_compactor_free_i64_values(&c->cursors);
    ls_compactor_free_i64_values(&c->marker_looks);
    ls_compactor_free_i64_values(&c->merge_due);
    ls_compactor_free_i64_values(&c->lags_next);
    ls_compactor_free_i64_values(&c->lags);
    ls_compactor_free_i64_values(&c->table_totals);
    ls_compactor_free_i64_values(&c->vers_next);
    ls_compactor_free_i64_values(&c->vers);
    ls_compactor_free_i64_values(&c->held_next);
    ls_compactor_free_i64_values(&c->held);
    ls_catalog_sync_free(c->csync);
    ls_compactor_free_i64_values(&c->csync_status_next);
    ls_compactor_free_i64_values(&c->csync_status);
    pthread_mutex_destroy(&c->held_mu);
    ls_compactor_free_i64_values(&c->skips_next);
    ls_compactor_free_i64_values(&c->skips);
    ls_compactor_free_i64_values(&c->table_commits);
    ls_compactor_free_i64_values(&c->orphan_sweeps);
    ls_compactor_free_i64_values(&c->idle_checks);
    ls_compactor_free_i64_values(&c->rewrite_waits);
    ls_compactor_free_i64_values(&c->refs);
    ls_wal_blocks_free(&c->wal_reads);
    ls_free(c->pending);
    ls_free(c);
}

void ls_compactor_stats(const ls_compactor_t *c, ls_compactor_stats_t *out)
{
    *out = c->stats;
    out->wal_reads = c->wal_reads.stats;
}
