#include "compact/compactor_int.h"

/* Table metrics (docs/OPERATIONS.md "Metrics"), per table. */
static LS_METRIC_GAUGE(m_lag_s, "lakestream_table_lag_seconds",
                       "How long the oldest stable record the table does not hold yet has waited.",
                       "namespace", "table");

static LS_METRIC_GAUGE(m_lag_rec, "lakestream_table_lag_records",
                       "Stable records of the stream the table does not hold yet (its consumer "
                       "group lag).",
                       "namespace", "table");

static LS_METRIC_GAUGE(m_commit_ts, "lakestream_table_last_commit_timestamp_seconds",
                       "Wall-clock time of the table's last recorded commit.", "namespace",
                       "table");

static LS_METRIC_GAUGE(m_snapshots, "lakestream_table_snapshots", "Snapshots the table keeps.",
                       "namespace", "table");

static LS_METRIC_GAUGE(m_files, "lakestream_table_data_files",
                       "Live data files of the table's current snapshot.", "namespace", "table");

static LS_METRIC_GAUGE(m_tbytes, "lakestream_table_bytes",
                       "Bytes of the live data files of the table's current snapshot.", "namespace",
                       "table");

static LS_METRIC_GAUGE(m_trows, "lakestream_table_rows", "Rows of the table's current snapshot.",
                       "namespace", "table");

static LS_METRIC_GAUGE(m_skipped, "lakestream_table_skipped_records",
                       "Records the table skipped (lakestream.table.error.handling=skip or "
                       "dead-letter), as of its last commit.",
                       "namespace", "table");

/* Streams whose table was turned off are held by nothing. */
void ls_compactor_tables_turned_off(ls_compactor_t *c, const ls_table_plan_t *plan)
{
    for (int i = 0; i < plan->n; i++)
        if (!plan->v[i].table)
            ls_compactor_mark_held(c, &plan->v[i],
                                   plan->v[i].blocked ? plan->v[i].blocked_why : NULL);
}

/* This pass's metrics rows of ts's table. */
static void table_metrics_add(ls_compactor_t *c, const ls_table_plan_stream_t *ts,
                              const ls_table_status_t *status, int64_t lag_ms, int64_t records)
{
    table_metrics_t *m = &c->tm;
    const char *labels[2] = {ts->stream->ns, ts->target.name};
    ls_metrics_rows_add(&m->lag_s, labels, 2, (double)lag_ms / 1000);
    ls_metrics_rows_add(&m->lag_rec, labels, 2, (double)records);
    ls_metrics_rows_add(&m->commit_ts, labels, 2, (double)status->commit_ms / 1000);
    const table_totals_t *tt = ls_i64map_get(&c->table_totals, ts->stream->stream_no);
    if (!tt) return;
    ls_metrics_rows_add(&m->snapshots, labels, 2, (double)tt->t.snapshots);
    ls_metrics_rows_add(&m->files, labels, 2, (double)tt->t.data_files);
    ls_metrics_rows_add(&m->bytes, labels, 2, (double)tt->t.bytes);
    ls_metrics_rows_add(&m->rows, labels, 2, (double)tt->t.rows);
    if (tt->skipped >= 0) ls_metrics_rows_add(&m->skipped, labels, 2, (double)tt->skipped);
}

/* At the end of a pass (worker): this pass's table rows replace the last. */
void ls_compactor_table_metrics_publish(ls_compactor_t *c)
{
    table_metrics_t *m = &c->tm;
    ls_metrics_publish(&m_lag_s, &m->lag_s);
    ls_metrics_publish(&m_lag_rec, &m->lag_rec);
    ls_metrics_publish(&m_commit_ts, &m->commit_ts);
    ls_metrics_publish(&m_snapshots, &m->snapshots);
    ls_metrics_publish(&m_files, &m->files);
    ls_metrics_publish(&m_tbytes, &m->bytes);
    ls_metrics_publish(&m_trows, &m->rows);
    ls_metrics_publish(&m_skipped, &m->skipped);
}

/* The table lag of ts (table_plan.h: from its recorded commit, the same on
 * every broker) for the loop (DescribeConfigs lakestream.table.lag.ms);
 * none before its first recorded commit. Beyond a few commit intervals it
 * is reported (rate-limited) by the broker that commits the table, or by
 * every broker once no commit has been recorded for that long (the
 * committer is gone or stuck). */
static void table_lag(ls_compactor_t *c, const ls_table_plan_stream_t *ts,
                      const ls_table_status_t *status)
{
    int64_t now = ls_clock_wall_ms(), lag, records;
    ls_status st = ls_table_status_lag(c->meta, ts, status, now, &lag, &records);
    if (st != LS_OK) {
        LS_WARN_RL("compact", "table %s.%s: measuring its lag failed: %s (will retry)",
                   ts->stream->ns, ts->target.name, ls_status_str(st));
        return;
    }
    int64_t *v = ls_i64map_get(&c->lags_next, ts->stream->stream_no);
    if (!v) {
        v = LS_NEW(int64_t);
        ls_i64map_put(&c->lags_next, ts->stream->stream_no, v);
    }
    *v = lag;
    table_metrics_add(c, ts, status, lag, records);
    int64_t interval = ts->policy.commit_interval_ms;
    int64_t limit = 3 * interval > 10000 ? 3 * interval : 10000;
    int64_t *mine = ls_i64map_get(&c->table_commits, ts->stream->stream_no);
    bool committer = mine && now - *mine < limit;
    if (lag > limit && (committer || now - status->commit_ms > limit))
        LS_WARN_RL("compact",
                   "table %s.%s is falling behind: its oldest record not yet in the "
                   "table was written %lld ms ago (commit interval %lld ms, last commit "
                   "%lld ms ago)",
                   ts->stream->ns, ts->target.name, (long long)lag, (long long)interval,
                   (long long)(now - status->commit_ms));
}

/* After c->batch committed: the status every broker reads (table_plan.h),
 * under the table claim. A failure only leaves the lag reading high. */
static void table_status_record(ls_compactor_t *c, const ls_table_plan_stream_t *ts,
                                ls_table_status_t *status)
{
    int32_t np = ts->stream->partitions;
    int64_t *covered = LS_NEWN(int64_t, (size_t)np);
    for (int32_t p = 0; p < np; p++) {
        covered[p] = p < status->n ? status->covered[p] : -1;
        int64_t done = ls_mat_done(c->batch, ls_stream_log_id(ts->stream, p));
        if (done > covered[p]) covered[p] = done;
    }
    for (size_t i = 0; i < c->npending; i++) {
        int32_t p = (int32_t)(c->pending[i]->log_id & (LS_MAX_PARTITIONS - 1));
        if (p < np && c->pending[i]->co.last_offset > covered[p])
            covered[p] = c->pending[i]->co.last_offset;
    }
    ls_table_status_clear(status);
    *status = (ls_table_status_t){.commit_ms = ls_clock_wall_ms(), .n = np, .covered = covered};
    ls_meta_cmp_t fence = ls_lease_claim_cmp(&c->table_claim);
    ls_status st = ls_table_status_write(c->meta, ts, status, &fence);
    if (st != LS_OK)
        LS_WARN_RL("compact", "table %s.%s: recording its commit for the lag failed: %s",
                   ts->stream->ns, ts->target.name, ls_status_str(st));
}

void ls_compactor_free_i64_values(ls_i64map_t *m)
{
    int64_t k;
    void *v;
    for (size_t it = 0; ls_i64map_next(m, &it, &k, &v);)
        ls_free(v);
    ls_i64map_free(m);
}

const char *ls_compactor_table_version(const ls_compactor_t *c, int64_t stream_no,
                                       const char **reason)
{
    const char *v = ls_i64map_get(&c->vers, stream_no);
    if (reason) *reason = v && v[strlen(v) + 1] ? v + strlen(v) + 1 : NULL;
    return v;
}

const char *ls_compactor_table_catalog_status(const ls_compactor_t *c, int64_t stream_no)
{
    return ls_i64map_get(&c->csync_status, stream_no);
}

const char *ls_compactor_table_held(const ls_compactor_t *c, int64_t stream_no)
{
    return ls_i64map_get(&c->held, stream_no);
}

bool ls_compactor_table_skipped(const ls_compactor_t *c, int64_t stream_no, int64_t *records)
{
    const int64_t *v = ls_i64map_get(&c->skips, stream_no);
    if (v) *records = *v;
    return v != NULL;
}

char *ls_compactor_table_held_copy(ls_compactor_t *c, const char *ns, const char *table)
{
    char *out = NULL;
    size_t nl = strlen(ns);
    int64_t k;
    void *v;
    pthread_mutex_lock(&c->held_mu);
    for (size_t it = 0; !out && ls_i64map_next(&c->held, &it, &k, &v);) {
        const char *why = v, *name = why + strlen(why) + 1;
        if (!strncmp(name, ns, nl) && name[nl] == 0x1f && !strcmp(name + nl + 1, table))
            out = ls_strdup(why);
    }
    pthread_mutex_unlock(&c->held_mu);
    return out;
}

bool ls_compactor_table_lag(const ls_compactor_t *c, int64_t stream_no, int64_t *lag_ms)
{
    const int64_t *v = ls_i64map_get(&c->lags, stream_no);
    if (v) *lag_ms = *v;
    return v != NULL;
}

/* ------------------------------------------------------------- unfolding
 *
 * In-table ranges (log/cold_source.h) turned back into compacted objects
 * when their table stops being a valid source (unfold.c has the state
 * machine). The pass keeps every log's cold reference (/ls/coldref/) in
 * c->refs: loaded at full passes, then updated by its own writes and
 * releases (another broker's are seen at the next full pass; a log whose
 * table is valid gets its reference written again then). */

static void refs_clear(ls_compactor_t *c)
{
    ls_compactor_free_i64_values(&c->refs);
    ls_i64map_init(&c->refs);
}

void ls_compactor_refs_load(ls_compactor_t *c)
{
    ls_unfold_ref_t *v;
    size_t n;
    ls_status st = ls_unfold_refs_list(c->meta, &v, &n);
    if (st != LS_OK) {
        LS_WARN_RL("compact", "reading cold references failed: %s; using the last copy",
                   ls_status_str(st));
        return;
    }
    refs_clear(c);
    for (size_t i = 0; i < n; i++) {
        ls_unfold_ref_t *r = LS_NEW(ls_unfold_ref_t);
        *r = v[i];
        ls_i64map_put(&c->refs, r->log_id, r);
    }
    ls_free(v);
    c->refs_loaded = true;
}

static void unfold_put(void *arg, int64_t log_id, const ls_idx_entry_t *e)
{
    ls_compactor_push_result(arg, log_id, e)->put = true;
}

/* Whether ts's table is a valid source for its logs' in-table ranges now;
 * why says why not. */
static bool source_valid(const ls_table_plan_stream_t *ts, char *why, size_t whylen)
{
    return ls_unfold_source_valid(ts->stream, &ts->policy, why, whylen) && ts->table;
}

/* Unfolds log id's in-table ranges when its reference names a table that is
 * no longer their valid source (disabled, renamed, typed, upsert, compacted
 * topic). True while some are left: the log's table must wait. */
bool ls_compactor_unfold_log(ls_compactor_t *c, int64_t id, const ls_table_plan_stream_t *ts)
{
    ls_unfold_ref_t *ref = ls_i64map_get(&c->refs, id);
    if (!ref || !ts || ts->blocked) return false;
    char why[600] = "";
    bool valid = source_valid(ts, why, sizeof why);
    if (valid && !strcmp(ref->ns, ts->stream->ns) && !strcmp(ref->table, ts->target.name))
        return false; /* the table is still their source */
    if (valid)        /* the table name changed */
        snprintf(why, sizeof why, "the topic's table is now %s.%s", ts->stream->ns,
                 ts->target.name);
    if (!c->claim.held && !ls_compactor_claim_log(c, id)) return true;
    const char *tst = ls_stream_config_get(ts->stream, "message.timestamp.type");
    ls_cold_source_t *src =
        ls_unfold_table_source_new(c->meta, c->os, ref, tst && !strcmp(tst, "LogAppendTime"));
    ls_meta_cmp_t fence = ls_lease_claim_cmp(&c->claim);
    ls_unfold_limits_t lim = {.chunk_bytes = c->cfg.max_bytes > 0 ? (size_t)c->cfg.max_bytes : 0,
                              .max_chunks = 64};
    ls_unfold_stats_t was = c->stats.unfold;
    int64_t left = 0;
    ls_status st = ls_unfold_log(c->meta, c->os, id, src, &lim, &fence, unfold_put, c,
                                 &c->stats.unfold, &left);
    ls_unfold_table_source_free(src);
    const ls_unfold_stats_t *now = &c->stats.unfold;
    if (now->objects_written > was.objects_written)
        LS_INFO("compact",
                "log %016llx: %llu records read from table %s.%s became %llu compacted objects "
                "(%llu bytes): %s; %lld in-table ranges left",
                (unsigned long long)id, (unsigned long long)(now->records - was.records), ref->ns,
                ref->table, (unsigned long long)(now->objects_written - was.objects_written),
                (unsigned long long)(now->bytes_written - was.bytes_written), why, (long long)left);
    if (st != LS_OK)
        LS_WARN_RL("compact",
                   "log %016llx: turning in-table ranges back into compacted objects "
                   "failed: %s (will retry)",
                   (unsigned long long)id, ls_status_str(st));
    if (st == LS_OK && left == 0) {
        ls_free(ls_i64map_del(&c->refs, id));
        return false;
    }
    return true;
}

/* The logs of a table stream, before its table task: those whose in-table
 * ranges must become compacted objects again are unfolded (true while any
 * is left: the table's commits and maintenance wait, so it neither changes
 * nor loses files under a log that still reads them); where the table is a
 * valid source, each log's reference is written before its first in-table
 * range can be. */
bool ls_compactor_unfold_stream(ls_compactor_t *c, const ls_table_plan_stream_t *ts)
{
    bool hold = false, valid = source_valid(ts, NULL, 0);
    int64_t pending = 0;
    for (int32_t p = 0; p < ts->stream->partitions; p++) {
        int64_t id = ls_stream_log_id(ts->stream, p);
        if (ls_compactor_unfold_log(c, id, ts)) {
            hold = true;
            int64_t n = 0, recs = 0;
            if (ls_unfold_pending(c->meta, id, &n, &recs) == LS_OK) pending += n;
        } else if (valid && !ls_i64map_get(&c->refs, id)) {
            char held[600] = "";
            ls_status st = ls_unfold_ref_ensure(c->meta, id, ts->stream->ns, ts->target.name,
                                                ts->target.prefix, held, sizeof held);
            if (st == LS_OK) {
                ls_unfold_ref_t *r = LS_NEW(ls_unfold_ref_t);
                r->log_id = id;
                snprintf(r->ns, sizeof r->ns, "%s", ts->stream->ns);
                snprintf(r->table, sizeof r->table, "%s", ts->target.name);
                snprintf(r->prefix, sizeof r->prefix, "%s", ts->target.prefix);
                ls_i64map_put(&c->refs, id, r);
            } else {
                /* unknown reference state: no in-table range may be added */
                hold = true;
                LS_WARN_RL("compact", "log %016llx: recording its table %s.%s failed: %s%s%s",
                           (unsigned long long)id, ts->stream->ns, ts->target.name,
                           ls_status_str(st), *held ? "; it still references " : "", held);
            }
        }
        ls_lease_release(c->owner, &c->claim);
    }
    if (hold)
        LS_WARN_RL("compact",
                   "table %s.%s waits: %lld ranges of its topic %s are still read from a table "
                   "that is no longer their source and are being turned back into compacted "
                   "objects; no commit, rewrite or file removal until they are",
                   ts->stream->ns, ts->target.name, (long long)pending, ts->stream->name);
    return hold;
}

/* A deleted topic's log: once its storage is reclaimed (no index entry
 * left), its reference goes too, so its table is free. */
void ls_compactor_unfold_forget(ls_compactor_t *c, int64_t id)
{
    if (!ls_i64map_get(&c->refs, id)) return;
    int64_t n = 0, recs = 0;
    if (ls_unfold_pending(c->meta, id, &n, &recs) != LS_OK || n) return;
    char key[64];
    ls_unfold_ref_key(key, sizeof key, id);
    if (ls_meta_del(c->meta, key) == LS_OK) ls_free(ls_i64map_del(&c->refs, id));
}

/* Orphan files of a table (ls_ice_table_remove_orphans), at most once per
 * grace period per table and broker. Unfenced: an orphan is referenced by no
 * commit, so two brokers deleting it is harmless; the grace period protects
 * files of commits in flight. */
static void sweep_orphans(ls_compactor_t *c, const ls_table_plan_stream_t *ts)
{
    int64_t now = ls_clock_wall_ms(), grace = c->cfg.orphan_grace_ms;
    if (grace <= 0) return;
    int64_t *last = ls_i64map_get(&c->orphan_sweeps, ts->stream->stream_no);
    if (last && now < *last + grace) return;
    if (!last) {
        last = LS_NEW(int64_t);
        ls_i64map_put(&c->orphan_sweeps, ts->stream->stream_no, last);
    }
    *last = now;
    uint64_t deleted = 0;
    char err[512] = "";
    ls_status st = ls_materialize_remove_orphans(c->meta, c->os, &ts->target, now - grace, &deleted,
                                                 err, sizeof err);
    if (st != LS_OK)
        LS_WARN_RL("table", "table %s.%s: removing orphan files failed: %s (%s); will retry",
                   ts->stream->ns, ts->target.name, ls_status_str(st), err);
    else if (deleted)
        LS_INFO("table",
                "table %s.%s: deleted %llu orphan files (older than %lld ms, "
                "referenced by no snapshot)",
                ts->stream->ns, ts->target.name, (unsigned long long)deleted, (long long)grace);
    c->stats.orphans_deleted += deleted;
}

static void idle_postpone(ls_compactor_t *c, const ls_table_plan_stream_t *ts, int64_t at)
{
    int64_t *next = ls_i64map_get(&c->idle_checks, ts->stream->stream_no);
    if (!next) {
        next = LS_NEW(int64_t);
        ls_i64map_put(&c->idle_checks, ts->stream->stream_no, next);
    }
    *next = at;
    if (!c->next_due_ms || at < c->next_due_ms) c->next_due_ms = at;
}

static bool idle_maintain(ls_compactor_t *c, const ls_table_plan_stream_t *ts)
{
    int64_t now = ls_clock_wall_ms(), interval = ts->policy.commit_interval_ms;
    int64_t *next = ls_i64map_get(&c->idle_checks, ts->stream->stream_no);
    if (next && now < *next) {
        if (!c->next_due_ms || *next < c->next_due_ms) c->next_due_ms = *next;
        return false;
    }
    ls_lease_claim_t claim;
    memset(&claim, 0, sizeof claim);
    if (ls_lease_claim_table(c->owner, ts->stream->stream_no, &claim) != LS_OK) {
        idle_postpone(c, ts, now + interval); /* another broker commits it */
        return false;
    }
    int64_t due = INT64_MAX;
    char err[512] = "";
    bool committed = false;
    ls_status st =
        ls_materialize_expire(c->meta, c->os, &ts->target, now, &due, &committed, err, sizeof err);
    ls_lease_release(c->owner, &claim);
    if (st != LS_OK)
        LS_WARN_RL("table",
                   "table %s.%s: expiring snapshots of the idle table failed: %s (%s); "
                   "will retry",
                   ts->stream->ns, ts->target.name, ls_status_str(st), err);
    int64_t at = now + IDLE_CHECK_MAX_MS;
    if (due < at) at = due;
    if (at < now + interval) at = now + interval;
    idle_postpone(c, ts, at);
    return committed;
}

/* Small data files of the table c->batch just committed (ls_mat_rewrite),
 * under the table claim: checked once every rewrite.min.files commits of
 * this broker (fewer cannot have lined up a new run of that many files) and
 * again at the next commit when a check left runs for later. A failure
 * only delays the rewrite: the files stay as they are. */
static void rewrite_files(ls_compactor_t *c, const ls_table_plan_stream_t *ts)
{
    int64_t min = ts->policy.rewrite_min_files;
    if (min <= 0) return;
    int64_t *waited = ls_i64map_get(&c->rewrite_waits, ts->stream->stream_no);
    if (!waited) {
        waited = LS_NEW(int64_t);
        ls_i64map_put(&c->rewrite_waits, ts->stream->stream_no, waited);
    }
    if (++*waited < min) return;
    ls_file_rewrite_stats_t *rs = &c->stats.rewrite;
    uint64_t removed = rs->files_removed, added = rs->files_added, in = rs->bytes_read,
             out = rs->bytes_written, dels = rs->delete_files_removed,
             merged = rs->delete_files_added;
    char err[512] = "";
    ls_status st = ls_mat_rewrite(c->batch, rs, err, sizeof err);
    *waited = rs->more ? min - 1 : 0;
    if (st != LS_OK) {
        LS_WARN_RL("table",
                   "table %s.%s: rewriting small data files failed: %s (%s); they stay and "
                   "are tried again after %lld commits",
                   ts->stream->ns, ts->target.name, ls_status_str(st), err, (long long)min);
        rs->failures++;
    } else if (rs->files_removed > removed || rs->delete_files_removed > dels) {
        char deletes[96] = "";
        if (rs->delete_files_removed > dels) /* merge-on-read tables */
            snprintf(deletes, sizeof deletes,
                     "; %llu position delete files applied or merged (into %llu)",
                     (unsigned long long)(rs->delete_files_removed - dels),
                     (unsigned long long)(rs->delete_files_added - merged));
        LS_INFO(
            "table",
            "table %s.%s: rewrote %llu small data files (%llu bytes) into %llu (%llu bytes)%s%s",
            ts->stream->ns, ts->target.name, (unsigned long long)(rs->files_removed - removed),
            (unsigned long long)(rs->bytes_read - in),
            (unsigned long long)(rs->files_added - added),
            (unsigned long long)(rs->bytes_written - out), deletes,
            rs->more ? "; more next commit" : "");
    }
}

/* The logs of one stream with a table: their due WAL ranges become COs and
 * rows of ONE table commit (ls_mat_batch), and only after that commit are
 * their index swaps made, each under its log's claim; then retention. So a
 * pass makes one snapshot per table whatever the partition count and the
 * backlog (up to 64 rounds per log), and the table never misses a range the
 * log compacted. A failed commit leaves every range in WAL objects for the
 * next pass (its COs are rewritten identically, its data files are orphans).
 * The task runs at most once per commit interval, under a claim on the table
 * (ls_lease_claim_table, taken when a partition first has work, as is the table
 * load): with several brokers one commits a table at a time and the others
 * skip it, instead of all racing on its pointer. */
void ls_compactor_table_task(ls_compactor_t *c, const ls_table_plan_stream_t *ts)
{
    int32_t np = ts->stream->partitions;
    ls_lease_claim_t *claims = LS_NEWN(ls_lease_claim_t, (size_t)np);
    int64_t now = ls_clock_wall_ms(), interval = ts->policy.commit_interval_ms;
    /* the table as its committer recorded it: this broker's marks follow
     * it, whoever committed (table_plan.c "Status") */
    ls_table_status_t status = {0};
    bool recorded = !ts->blocked && ls_table_status_read(c->meta, ts, &status) == LS_OK;
    for (int32_t p = 0; recorded && p < np && p < status.n; p++)
        ls_table_marks_set(&c->marks, ls_stream_log_id(ts->stream, p), &ts->target,
                           status.covered[p]);
    /* the commit interval runs from the last commit of any broker (else a
     * broker that has not committed lately would commit at once) */
    int64_t *last = ls_i64map_get(&c->table_commits, ts->stream->stream_no);
    int64_t last_ms = last ? *last : -1;
    if (recorded && status.commit_ms > last_ms) last_ms = status.commit_ms;
    bool due = last_ms < 0 || now >= last_ms + interval;
    if (!due && (!c->next_due_ms || last_ms + interval < c->next_due_ms))
        c->next_due_ms = last_ms + interval; /* come back when the interval is up */
    /* in-table ranges first: the table waits while any is left (unfold.c) */
    bool hold = c->pass_compact && !ts->blocked && ls_compactor_unfold_stream(c, ts);
    bool committed = false;
    if (c->pass_compact && !ts->blocked && due && !hold) {
        c->table_ts = ts;
        c->table_tried = c->batch_failed = false;
        memset(&c->table_claim, 0, sizeof c->table_claim);
        char err[512] = "";
        ls_status st;
        for (int32_t p = 0; p < np; p++) {
            int64_t id = ls_stream_log_id(ts->stream, p);
            if (ls_compactor_backfill_log(c, id, ts) != 0)
                continue; /* the table is behind on this log: its WAL ranges wait */
            c->pend_log = id;
            c->pend_next = 0;
            ls_compactor_compact_rounds(c, id, ts, -1);
            claims[p] = c->claim; /* held until its swaps are made */
            memset(&c->claim, 0, sizeof c->claim);
        }
        c->pend_log = -1;
        if (c->batch) {
            uint64_t rows = 0;
            st = ls_mat_commit(c->batch, &rows, err, sizeof err);
            if (c->npending) { /* the interval restarts with every commit attempt */
                if (!last) {
                    last = LS_NEW(int64_t);
                    ls_i64map_put(&c->table_commits, ts->stream->stream_no, last);
                }
                *last = now;
            }
            if (st == LS_OK && c->npending) {
                ls_crashpoint("compact.table_committed");
                table_totals_t *tot = ls_i64map_get(&c->table_totals, ts->stream->stream_no);
                if (!tot) {
                    tot = LS_NEW(table_totals_t);
                    ls_i64map_put(&c->table_totals, ts->stream->stream_no, tot);
                }
                if (!ls_mat_totals(c->batch, &tot->t)) memset(&tot->t, 0, sizeof tot->t);
                tot->skipped = ls_mat_skipped_records(c->batch);
                idle_postpone(c, ts, now + interval); /* the commit maintained it */
                ls_compactor_mark_held(c, ts, NULL);
                int64_t skipped = ls_mat_skipped_records(c->batch);
                if (skipped >= 0) {
                    int64_t *v = ls_i64map_get(&c->skips_next, ts->stream->stream_no);
                    if (!v) {
                        v = LS_NEW(int64_t);
                        ls_i64map_put(&c->skips_next, ts->stream->stream_no, v);
                    }
                    *v = skipped;
                }
                c->stats.rows_materialized += rows;
                for (size_t i = 0; i < c->npending; i++) {
                    swap_t *sw = c->pending[i];
                    ls_compactor_swap_index(c, sw, &claims[sw->log_id & (LS_MAX_PARTITIONS - 1)]);
                    ls_table_marks_set(&c->marks, sw->log_id, &ts->target,
                                       ls_mat_done(c->batch, sw->log_id));
                }
                table_status_record(c, ts, &status);
                recorded = true;
                committed = true;
                rewrite_files(c, ts);
            } else if (c->npending) {
                LS_WARN_RL("compact",
                           "table %s.%s: committing %zu ranges failed: %s (%s); they "
                           "stay in the WAL and are retried",
                           ts->stream->ns, ts->target.name, c->npending, ls_status_str(st), err);
                char why[700];
                snprintf(why, sizeof why, "committing %zu ranges failed: %s (%s)", c->npending,
                         ls_status_str(st), err);
                ls_compactor_mark_held(c, ts, why);
                c->stats.table_failures++;
            }
            ls_mat_free(c->batch);
            c->batch = NULL;
        }
        for (size_t i = 0; i < c->npending; i++)
            ls_compactor_swap_free(c->pending[i]);
        c->npending = 0;
        ls_lease_release(c->owner, &c->table_claim);
        c->table_ts = NULL;
    }
    if (recorded) table_lag(c, ts, &status);
    ls_table_status_clear(&status);
    /* an idle table's expiry commits too (its snapshots leave the catalog's
     * copy as well) */
    if (c->pass_compact && !ts->blocked && !hold && idle_maintain(c, ts)) committed = true;
    /* after the built-in commit (never before, never blocking it): the
     * table's external catalog, if its policy names one */
    const char *ext = ts->policy.value[LS_POLICY_CATALOG];
    if (c->pass_compact && ts->table && !ts->blocked && ext &&
        strcmp(ext, LS_POLICY_BUILTIN_CATALOG) != 0) {
        ls_catalog_sync_table(c->csync, c->meta, c->os, ext, ts->stream->ns, ts->target.name,
                              committed, ls_clock_wall_ms());
        char status[700];
        ls_catalog_sync_status(c->csync, ts->stream->ns, ts->target.name, status, sizeof status);
        ls_free(ls_i64map_get(&c->csync_status_next, ts->stream->stream_no));
        ls_i64map_put(&c->csync_status_next, ts->stream->stream_no, ls_strdup(status));
    }
    if (c->pass_retention && !ts->blocked && !hold) sweep_orphans(c, ts);
    for (int32_t p = 0; p < np; p++) {
        int64_t id = ls_stream_log_id(ts->stream, p);
        c->claim = claims[p];
        if (c->pass_compact && c->pass_full && !ts->blocked) ls_compactor_key_compact(c, id, ts);
        if (c->pass_retention && !ts->blocked) ls_compactor_retain_log(c, id, ts);
        ls_lease_release(c->owner, &c->claim);
    }
    ls_free(claims);
}
