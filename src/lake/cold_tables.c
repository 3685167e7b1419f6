/* The broker's table-backed cold-range source: see cold_tables.h.
 *
 * A read of log L's offsets [from, to] (log/cold_source.h, on a libuv
 * worker thread, several at once):
 *   1. L's stream is stream_no = L >> LS_LOG_PARTITION_BITS, its Kafka
 *      partition L's low bits; the plan of that stream is looked up in a
 *      small map (below) or made: the table L's cold reference names
 *      (unfold.h: the entries name no table, the reference is the record of
 *      which table holds them, whatever the policy says now; without one,
 *      the table of the stream's resolved policy), opened through the table
 *      catalog's pointer, the current snapshot's live data files listed
 *      (manifest list and manifests), the topic's message.timestamp.type
 *      (the stream's, else the cluster's dynamic default, else the
 *      broker's). A reference is read only when a plan is made: a log whose
 *      reference moved to another table has its old ranges unfolded into
 *      COs first (unfold.c), so a kept plan of the old table meets the new
 *      ranges as LS_ENOTFOUND (step 3) and is made again;
 *   2. ls_cold_table_read_live plans on that list and rebuilds the batches;
 *   3. LS_ENOTFOUND (a file the list names is gone, or no listed file holds
 *      `from`: a newer snapshot added it) drops the plan and the read is
 *      made once more on a fresh one; a second LS_ENOTFOUND goes back to
 *      the log reader, which retries (and reports a range that stays
 *      missing as corrupt).
 *
 * The plan map (the "cache of table metadata and plans"): at most
 * max_tables plans, least recently used dropped first; a plan older than
 * max_age_ms is made again on its next use, so a changed topic config or
 * policy is seen within that time even if no file went missing. Plans are
 * reference-counted: a read holds its plan while it reads, so dropping one
 * (eviction, staleness) never frees what a read uses; the map and the
 * counters are guarded by one mutex, held only to find, insert or drop,
 * never during store I/O. A plan is immutable once made (the live list is
 * only read), so several reads share it.
 *
 * Not preserved by a rebuild (docs/ARCHITECTURE.md): batch boundaries and
 * the batches' compression (rebuilt batches are uncompressed whatever the
 * topic's compression.type: consumers read any codec), producer
 * id/epoch/sequence. A topic
 * whose message.timestamp.type changed after its records were written is
 * read back with the type it has now.
 *
 * Open data files (cold_table.h, ls_cold_files_t): one cache for all
 * tables, bounded by file_cache_bytes (fetched bytes; a mapped file whole), keeps each file a
 * read opened — footer parsed, row groups fetched, scan cursor — so a
 * catching-up consumer's next read-ahead block goes on from where the last
 * stopped. A plan made again (stale, too old) keeps using the open files
 * its live list still names; files no plan names age out by LRU. */
#include "lake/cold_tables.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/compress.h"
#include "base/diag.h"
#include "lake/cold_table.h"
#include "lake/materialize.h"
#include "lake/unfold.h"
#include "stream/broker_config.h"
#include "stream/policy.h"
#include "table/iceberg_manifest.h"
#include "table/table_catalog.h"

typedef struct plan {
    atomic_int refs;
    int64_t stream_no;
    int64_t made_ms;
    uint64_t used; /* LRU clock */
    ls_stream_t *stream;
    ls_namespace_t *ns;
    ls_policy_t policy;
    ls_table_target_t target;
    ls_ice_table_t *table;
    ls_ice_mentry_t *live;
    size_t nlive;
    bool log_append_time;
} plan_t;

struct ls_cold_tables {
    ls_cold_tables_config_t cfg;
    pthread_mutex_t mu;
    plan_t **v; /* kept plans */
    int n;
    uint64_t clock;
    ls_cold_tables_stats_t stats;
    ls_cold_files_t *files; /* open data files, shared by every table's reads */
};

static void plan_release(plan_t *p)
{
    if (!p || atomic_fetch_sub(&p->refs, 1) != 1) return;
    ls_ice_mentries_free(p->live, p->nlive);
    if (p->table) ls_ice_table_free(p->table);
    ls_namespace_release(p->ns);
    ls_stream_release(p->stream);
    ls_free(p);
}

static ls_stream_t *stream_of(ls_catalog_t *cat, int64_t stream_no)
{
    int n = 0;
    ls_stream_t **v = ls_catalog_list(cat, NULL, &n), *s = NULL;
    for (int i = 0; i < n && !s; i++)
        if (v[i]->stream_no == stream_no) s = ls_stream_keep(v[i]);
    ls_stream_list_release(v, n);
    return s;
}

/* Makes the plan of log_id's stream (blocking: reference, catalog pointer,
 * metadata.json, manifest list, manifests). NULL with err on failure (*st
 * says why). */
static plan_t *plan_make(ls_cold_tables_t *t, int64_t log_id, ls_status *st, char *err,
                         size_t errlen)
{
    int64_t stream_no = log_id >> LS_LOG_PARTITION_BITS;
    plan_t *p = LS_NEW(plan_t);
    atomic_init(&p->refs, 1);
    p->stream_no = stream_no;
    p->made_ms = ls_clock_wall_ms();
    p->stream = stream_of(t->cfg.catalog, stream_no);
    if (!p->stream) {
        snprintf(err, errlen, "no live topic has stream number %lld", (long long)stream_no);
        *st = LS_ENOTFOUND;
        goto fail;
    }
    char why[512] = "";
    *st = ls_policy_for_stream(t->cfg.catalog, p->stream, t->cfg.table_defaults,
                               t->cfg.ntable_defaults, &p->policy, &p->ns, why, sizeof why);
    if (*st == LS_OK)
        *st = ls_table_target_init(&p->target, p->stream, &p->policy, t->cfg.registry, why,
                                   sizeof why);
    if (*st != LS_OK) {
        snprintf(err, errlen, "topic %s: its table policy does not resolve: %s", p->stream->name,
                 why);
        goto fail;
    }
    ls_unfold_ref_t ref;
    *st = ls_unfold_ref_read(t->cfg.meta, log_id, &ref);
    if (*st == LS_ENOTFOUND) { /* entries written before references were */
        snprintf(ref.ns, sizeof ref.ns, "%s", p->stream->ns);
        snprintf(ref.table, sizeof ref.table, "%s", p->target.name);
        snprintf(ref.prefix, sizeof ref.prefix, "%s", p->target.prefix);
    } else if (*st != LS_OK) {
        snprintf(err, errlen, "log %016llx: reading its cold reference: %s",
                 (unsigned long long)log_id, ls_status_str(*st));
        goto fail;
    }
    *st = ls_tcat_open(t->cfg.meta, t->cfg.os, ref.ns, ref.table, ref.prefix, &p->table, why,
                       sizeof why);
    if (*st != LS_OK) {
        snprintf(err, errlen, "topic %s: opening its table %s.%s: %s (%s)", p->stream->name, ref.ns,
                 ref.table, ls_status_str(*st), why);
        goto fail;
    }
    *st = ls_ice_table_live_files(p->table, &p->live, &p->nlive);
    if (*st != LS_OK) {
        snprintf(err, errlen, "table %s.%s: listing its live files: %s", ref.ns, ref.table,
                 ls_ice_table_error(p->table));
        goto fail;
    }
    const char *tst = ls_stream_config_get(p->stream, "message.timestamp.type");
    if (tst)
        p->log_append_time = strcmp(tst, "LogAppendTime") == 0;
    else
        p->log_append_time =
            ls_bcfg_effective(t->cfg.catalog, LS_BCFG_TIMESTAMP_TYPE, t->cfg.static_ts_type,
                              NULL) == LS_BCFG_TS_LOG_APPEND_TIME;
    return p;
fail:
    plan_release(p);
    return NULL;
}

/* Drops p from the map if it is there (caller holds mu). */
static void drop_locked(ls_cold_tables_t *t, plan_t *p)
{
    for (int i = 0; i < t->n; i++)
        if (t->v[i] == p) {
            t->v[i] = t->v[--t->n];
            plan_release(p);
            return;
        }
}

/* A kept plan of log_id's stream (a reference), made when missing or too old. */
static plan_t *plan_get(ls_cold_tables_t *t, int64_t log_id, ls_status *st, char *err,
                        size_t errlen)
{
    int64_t stream_no = log_id >> LS_LOG_PARTITION_BITS;
    int64_t now = ls_clock_wall_ms();
    pthread_mutex_lock(&t->mu);
    for (int i = 0; i < t->n; i++) {
        plan_t *p = t->v[i];
        if (p->stream_no != stream_no) continue;
        if (now - p->made_ms >= t->cfg.max_age_ms) {
            drop_locked(t, p);
            break;
        }
        atomic_fetch_add(&p->refs, 1);
        p->used = ++t->clock;
        t->stats.plan_hits++;
        pthread_mutex_unlock(&t->mu);
        return p;
    }
    pthread_mutex_unlock(&t->mu);
    plan_t *p = plan_make(t, log_id, st, err, errlen);
    if (!p) return NULL;
    pthread_mutex_lock(&t->mu);
    t->stats.plan_loads++;
    for (int i = 0; i < t->n; i++)
        if (t->v[i]->stream_no == stream_no) { /* made concurrently: the newer stays */
            drop_locked(t, t->v[i]);
            break;
        }
    if (t->n == t->cfg.max_tables) { /* the least recently used goes */
        int lru = 0;
        for (int i = 1; i < t->n; i++)
            if (t->v[i]->used < t->v[lru]->used) lru = i;
        drop_locked(t, t->v[lru]);
        t->stats.evictions++;
    }
    atomic_fetch_add(&p->refs, 1); /* the map's */
    p->used = ++t->clock;
    t->v[t->n++] = p;
    pthread_mutex_unlock(&t->mu);
    return p;
}

static ls_status cold_read(void *ctx, int64_t log_id, int64_t from, int64_t to, size_t max_bytes,
                           ls_buf_t *out, int64_t *next, char *err, size_t errlen)
{
    ls_cold_tables_t *t = ctx;
    ls_cold_table_req_t q = {.partition = (int32_t)(log_id & (LS_MAX_PARTITIONS - 1)),
                             .from = from,
                             .to = to,
                             .codec = LS_CODEC_NONE,
                             .batch_bytes = t->cfg.batch_bytes,
                             .max_bytes = max_bytes};
    ls_status st = LS_OK;
    ls_cold_table_stats_t cs = {0};
    bool stale = false;
    *next = from;
    for (int attempt = 0; attempt < 2; attempt++) {
        plan_t *p = plan_get(t, log_id, &st, err, errlen);
        if (!p) break;
        q.log_append_time = p->log_append_time;
        size_t at = out->len;
        st = ls_cold_table_read_live(p->table, p->live, p->nlive, t->files, &q, out, next, &cs, err,
                                     errlen);
        if (st == LS_ENOTFOUND) {
            out->len = at;
            stale = true;
            pthread_mutex_lock(&t->mu);
            drop_locked(t, p); /* the next get makes it again */
            pthread_mutex_unlock(&t->mu);
        }
        plan_release(p);
        if (st != LS_ENOTFOUND) break;
    }
    pthread_mutex_lock(&t->mu);
    t->stats.reads++;
    t->stats.stale += stale;
    t->stats.bytes_read += cs.bytes_read;
    t->stats.ranged += (uint64_t)cs.ranged;
    t->stats.files_kept_open += (uint64_t)cs.files_cached;
    if (st == LS_OK)
        t->stats.records_out += (uint64_t)(*next - from);
    else
        t->stats.failures++;
    pthread_mutex_unlock(&t->mu);
    return st;
}

ls_cold_tables_t *ls_cold_tables_new(const ls_cold_tables_config_t *cfg)
{
    ls_cold_tables_t *t = LS_NEW(ls_cold_tables_t);
    t->cfg = *cfg;
    if (t->cfg.batch_bytes == 0) t->cfg.batch_bytes = 256 * 1024;
    if (t->cfg.max_tables <= 0) t->cfg.max_tables = 64;
    if (t->cfg.max_age_ms <= 0) t->cfg.max_age_ms = 30000;
    t->v = LS_NEWN(plan_t *, (size_t)t->cfg.max_tables);
    if (t->cfg.file_cache_bytes > 0) t->files = ls_cold_files_new(t->cfg.file_cache_bytes);
    pthread_mutex_init(&t->mu, NULL);
    return t;
}

void ls_cold_tables_source(ls_cold_tables_t *t, ls_cold_source_t *out)
{
    *out = (ls_cold_source_t){.read = cold_read, .ctx = t};
}

void ls_cold_tables_stats(ls_cold_tables_t *t, ls_cold_tables_stats_t *out)
{
    pthread_mutex_lock(&t->mu);
    *out = t->stats;
    out->tables_kept = t->n;
    pthread_mutex_unlock(&t->mu);
    if (t->files) {
        ls_cold_files_stats_t fs;
        ls_cold_files_stats(t->files, &fs);
        out->file_cache_bytes = fs.bytes;
        out->file_cache_evictions = fs.evictions;
    }
}

void ls_cold_tables_free(ls_cold_tables_t *t)
{
    if (!t) return;
    for (int i = 0; i < t->n; i++)
        plan_release(t->v[i]);
    ls_cold_files_free(t->files);
    pthread_mutex_destroy(&t->mu);
    ls_free(t->v);
    ls_free(t);
}
