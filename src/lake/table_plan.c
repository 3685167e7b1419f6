/* The table side of a compaction pass.
 *
 * Plan: built at the start of every pass on the worker thread from the
 * catalog's copy (streams, freshly reloaded namespaces) and the cluster
 * layer; immutable for the rest of the pass. A stream whose table is enabled
 * whose stored policy does not resolve (a record edited by hand) is
 * "blocked": its logs are neither compacted nor materialized, so a table
 * never misses a range, and the pass logs why, naming the key.
 *
 * enabled.since: Kafka config changes stamp it in the same catalog write
 * that enables the stream's table (kafka/h_configs.c, h_topics.c). A table
 * enabled by a namespace or cluster default has no such write, so the plan
 * stamps it when it first sees the table enabled (and removes a stale stamp
 * when a default disabled it) — read-modify-CAS through the catalog, so a
 * concurrent AlterConfigs is never overwritten.
 *
 * Backfill (start.position=earliest): compaction materializes WAL ranges as
 * it rewrites them, so a table enabled after its log was compacted would miss
 * the compacted part. Before a pass compacts such a log's WAL entries it
 * materializes, one compacted object at a time, every CO above the table's
 * recorded offset (ceiling lookup of that offset + 1 in the index). Only when
 * none is left may WAL ranges follow, so rows are appended in offset order
 * and the per-log last-offset summary stays a watermark. It costs a second
 * read of those COs, once. Marks remember, per log and table, what the table
 * holds, so a caught-up table is not loaded on every pass. A backfill stops
 * at the log's last stable offset, like the WAL ranges (compactor.c): an
 * object holding an open transaction is materialized up to it, and the rest
 * (and every WAL range) waits for a later pass.
 *
 * Status: the broker that commits a table (under the table claim) records,
 * right after each commit, per partition how far the table accounts for the
 * log (the table's last offset of the log, or the last offset of the ranges
 * the commit took, whichever is higher: a start.position=latest table takes
 * ranges from before it was enabled without rows). Every broker reads that
 * one key per pass: its marks follow the committer's (a broker that never
 * commits the table no longer holds the marks of its last own look at the
 * table, which made it warn "not backfilling" at every pass), and the table
 * lag (lakestream.table.lag.ms) is measured from it against the log's last
 * stable offset, the same on every broker: the age of the first record past
 * the covered offset (its WAL object's seal time; a compacted range's
 * newest record time). The key is written after the snapshot, not in its
 * transaction: a crash between the two leaves it one commit behind, so the
 * lag reads high for one commit interval, never low. */
#include "lake/table_plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/diag.h"
#include "base/hash.h"
#include "log/log_meta.h"
#include "log/log_trim.h"
#include "log/wal_format.h"
#include "log/read_cache.h"
#include "meta/meta_keys.h"

/* ------------------------------------------------------------------ plan */

typedef struct since_arg {
    const char *value; /* NULL: remove */
    ls_prop_t *buf;    /* room for ncur + 1 */
} since_arg_t;

/* Sets or removes the since key unless a concurrent change already did. */
static ls_status since_change(const ls_prop_t *cur, int ncur, void *arg, const ls_prop_t **out,
                              int *nout, char *err, size_t errlen)
{
    since_arg_t *a = arg;
    ls_free(a->buf);
    a->buf = LS_NEWN(ls_prop_t, (size_t)ncur + 1);
    int n = 0;
    bool had = false;
    for (int i = 0; i < ncur; i++) {
        if (strcmp(cur[i].key, LS_POLICY_SINCE_KEY) == 0) {
            had = true;
            continue;
        }
        a->buf[n++] = cur[i];
    }
    if (a->value && had)
        return LS_EEXISTS; /* stamped meanwhile (e.g. by AlterConfigs): keep that one */
    if (!a->value && !had) return LS_EEXISTS;
    if (a->value) a->buf[n++] = (ls_prop_t){(char *)LS_POLICY_SINCE_KEY, (char *)a->value};
    *out = a->buf;
    *nout = n;
    return LS_OK;
}

static void stamp_since(ls_catalog_t *cat, ls_table_plan_stream_t *ts, bool enabled)
{
    char now[32], err[256] = "";
    snprintf(now, sizeof now, "%lld", (long long)ls_clock_wall_ms());
    since_arg_t a = {enabled ? now : NULL, NULL};
    ls_status st = ls_catalog_update_config(cat, ts->stream->ns, ts->stream->name, 0, since_change,
                                            &a, err, sizeof err);
    ls_free(a.buf);
    if (st == LS_OK && enabled)
        ts->policy.enabled_since_ms = strtoll(now, NULL, 10);
    else if (st != LS_OK && st != LS_EEXISTS && st != LS_ENOTFOUND)
        LS_WARN("table", "stream %s/%s: recording %s failed: %s (%s); will retry next pass",
                ts->stream->ns, ts->stream->name, LS_POLICY_SINCE_KEY, ls_status_str(st), err);
}

void ls_table_plan_build(ls_table_plan_t *p, ls_catalog_t *cat, const ls_prop_t *cluster,
                         int ncluster, struct ls_registry *registry)
{
    memset(p, 0, sizeof *p);
    ls_status st = ls_catalog_reload_namespaces(cat);
    if (st != LS_OK)
        LS_WARN("table", "reloading namespace policies failed: %s; using the last copy",
                ls_status_str(st));
    ls_stream_t **streams = ls_catalog_list(cat, NULL, &p->n);
    p->v = p->n ? LS_NEWN(ls_table_plan_stream_t, (size_t)p->n) : NULL;
    for (int i = 0; i < p->n; i++) {
        ls_table_plan_stream_t *ts = &p->v[i];
        ts->stream = streams[i];
        char err[512];
        st = ls_policy_for_stream(cat, ts->stream, cluster, ncluster, &ts->policy, &ts->ns, err,
                                  sizeof err);
        if (st == LS_OK && ts->policy.enabled)
            st = ls_table_target_init(&ts->target, ts->stream, &ts->policy, registry, err,
                                      sizeof err);
        if (st != LS_OK) {
            /* cannot tell whether a table is wanted: keep the WAL for it */
            ts->blocked = true;
            snprintf(ts->blocked_why, sizeof ts->blocked_why,
                     "the table policy does not resolve: %s", err);
            /* every pass plans again: rate-limited (the line counts the rest) */
            LS_WARN_RL("table",
                       "stream %s/%s: policy does not resolve: %s; its logs are not "
                       "compacted until this is fixed",
                       ts->stream->ns, ts->stream->name, err);
            continue;
        }
        bool on = ts->policy.enabled;
        bool stamped = ls_stream_config_get(ts->stream, LS_POLICY_SINCE_KEY) != NULL;
        if (on != stamped) stamp_since(cat, ts, on);
        if (!on) continue;
        ts->table = true;
        if (!p->min_interval_ms || ts->policy.commit_interval_ms < p->min_interval_ms)
            p->min_interval_ms = ts->policy.commit_interval_ms;
    }
    ls_free(streams); /* the references moved into the plan */
}

void ls_table_plan_clear(ls_table_plan_t *p)
{
    for (int i = 0; i < p->n; i++) {
        ls_stream_release(p->v[i].stream);
        ls_namespace_release(p->v[i].ns);
    }
    ls_free(p->v);
    memset(p, 0, sizeof *p);
}

const ls_table_plan_stream_t *ls_table_plan_find(const ls_table_plan_t *p, int64_t log_id)
{
    for (int i = 0; i < p->n; i++)
        if (p->v[i].stream->stream_no == log_id >> LS_LOG_PARTITION_BITS) return &p->v[i];
    return NULL;
}

/* ----------------------------------------------------------------- marks */

typedef struct mark {
    uint64_t table; /* hash of the table prefix: a renamed table starts over */
    int64_t done;
} mark_t;

static uint64_t prefix_hash(const ls_table_target_t *tt)
{
    return ls_hash_str(LS_HASH_INIT, tt->prefix);
}

void ls_table_marks_init(ls_table_marks_t *m) { ls_i64map_init(&m->map); }

void ls_table_marks_free(ls_table_marks_t *m)
{
    size_t it = 0;
    int64_t k;
    void *v;
    while (ls_i64map_next(&m->map, &it, &k, &v))
        ls_free(v);
    ls_i64map_free(&m->map);
}

void ls_table_marks_set(ls_table_marks_t *m, int64_t log_id, const ls_table_target_t *tt,
                        int64_t done)
{
    mark_t *mk = ls_i64map_get(&m->map, log_id);
    if (!mk) {
        mk = LS_NEW(mark_t);
        ls_i64map_put(&m->map, log_id, mk);
    }
    mk->table = prefix_hash(tt);
    mk->done = done;
}

/* ---------------------------------------------------------------- backfill */

/* The first index entry whose last offset is >= offset (a ceiling lookup). */
static ls_status ceiling_entry(ls_meta_t *meta, int64_t log_id, int64_t offset, ls_idx_entry_t *e,
                               bool *found)
{
    char start[96], prefix[64];
    uint8_t end[64];
    ls_log_idx_key(start, sizeof start, log_id, offset < 0 ? 0 : offset);
    size_t plen = (size_t)ls_log_idx_prefix(prefix, sizeof prefix, log_id);
    size_t elen = ls_meta_prefix_end(prefix, plen, end);
    ls_kvlist_t l;
    ls_status st = ls_meta_scan(meta, start, strlen(start), end, elen, 1, 0, &l);
    if (st != LS_OK) return st;
    *found = l.n > 0;
    if (*found) st = ls_idx_decode(l.v[0].val, l.v[0].vlen, e);
    ls_kvlist_free(&l);
    return st;
}

int ls_table_backfill(ls_table_marks_t *m, ls_meta_t *meta, ls_objstore_t *os,
                      const char *warehouse_uri, const ls_table_plan_stream_t *ts, int64_t log_id,
                      uint64_t *rows)
{
    *rows = 0;
    const ls_table_target_t *tt = &ts->target;
    char err[512] = "";
    mark_t *mk = ls_i64map_get(&m->map, log_id);
    bool hint = mk && mk->table == prefix_hash(tt);
    int64_t done = hint ? mk->done : -1;
    ls_idx_entry_t e;
    bool found = false;
    for (;;) {
        if (!hint) {
            ls_status st = ls_materialize_last_offset(meta, os, tt, log_id, &done, err, sizeof err);
            if (st != LS_OK) {
                LS_WARN("table", "log %016llx: reading table %s.%s failed: %s (%s); will retry",
                        (unsigned long long)log_id, ts->stream->ns, tt->name, ls_status_str(st),
                        err);
                return -1;
            }
            ls_table_marks_set(m, log_id, tt, done);
        }
        ls_status st = ceiling_entry(meta, log_id, done + 1, &e, &found);
        if (st != LS_OK) {
            LS_WARN("table", "log %016llx: index lookup for backfill failed: %s",
                    (unsigned long long)log_id, ls_status_str(st));
            return -1;
        }
        if (!found) return 0;
        /* in-table rows past the mark: the mark is behind the table (a
         * commit recorded late, or a status a crash left one commit
         * behind: compactor.c); the table's own summary decides */
        if (!hint || e.kind != LS_IDX_TABLE) break;
        ls_idx_clear(&e);
        hint = false;
    }
    if (e.kind == LS_IDX_TABLE) {
        /* rows said to be in the table, past what the table holds: only a
         * table replaced under an in-table range gets here (cold_source.h;
         * such a range must be turned back into a CO first) */
        LS_WARN_RL("table",
                   "log %016llx: offsets [%lld, %lld] are marked in table %s.%s, which holds "
                   "rows only up to %lld; not backfilling",
                   (unsigned long long)log_id, (long long)e.first_offset, (long long)e.last_offset,
                   ts->stream->ns, tt->name, (long long)done);
        ls_idx_clear(&e);
        return -1;
    }
    if (e.kind == LS_IDX_WAL) {
        ls_idx_clear(&e);
        return 0;
    }
    /* rows only below the last stable offset (read before the aborted
     * records, ls_log_aborted_read) */
    int64_t lso, span;
    ls_status st = ls_log_stable_read(meta, log_id, &lso, &span);
    if (st != LS_OK) {
        LS_WARN("table", "log %016llx: reading its head for backfill failed: %s",
                (unsigned long long)log_id, ls_status_str(st));
        ls_idx_clear(&e);
        return -1;
    }
    if (done + 1 >= lso) { /* an open transaction holds the table before this object */
        ls_idx_clear(&e);
        return 2;
    }
    int64_t last = e.last_offset < lso ? e.last_offset : lso - 1;
    if (e.kind == LS_IDX_KCO && e.entries == 0) {
        /* key compaction left no record in the range: nothing to add */
        ls_table_marks_set(m, log_id, tt, e.last_offset);
        ls_idx_clear(&e);
        return 1;
    }
    int rc = -1;
    ls_buf_t body;
    ls_buf_init(&body);
    uint32_t *pos = NULL;
    int64_t *base = NULL;
    ls_co_entry_t *ents = NULL;
    ls_aborted_list_t aborted = {0};
    st = ls_log_aborted_read(meta, log_id, done + 1, last, span, &aborted);
    if (st != LS_OK) {
        LS_WARN("table", "log %016llx: reading its aborted transactions for backfill failed: %s",
                (unsigned long long)log_id, ls_status_str(st));
        goto out;
    }
    st = ls_objstore_get(os, e.object, e.pos, e.len, &body);
    if (st != LS_OK || body.len != e.len) {
        LS_WARN("table", "log %016llx: reading %s for backfill failed: %s",
                (unsigned long long)log_id, e.object,
                st != LS_OK ? ls_status_str(st) : "short read");
        goto out;
    }
    int k;
    if (ls_entries_rebase(body.data, body.len, e.first_offset, e.last_offset, e.kind == LS_IDX_KCO,
                          e.object, e.pos, &pos, &base, NULL, &k, err, sizeof err) != LS_OK) {
        LS_ERROR("table", "log %016llx: %s; backfill of table %s.%s stops here",
                 (unsigned long long)log_id, err, ts->stream->ns, tt->name);
        goto out;
    }
    ents = LS_NEWN(ls_co_entry_t, (size_t)k + 1);
    for (int i = 0; i < k; i++)
        ents[i] = (ls_co_entry_t){.base_offset = base[i], .pos = pos[i]};
    ls_mat_range_t r = {.partition = (int32_t)(log_id & (LS_MAX_PARTITIONS - 1)),
                        .log_id = log_id,
                        .obj = body.data,
                        .entries = ents,
                        .n = (uint32_t)k,
                        .body_end = body.len,
                        .from_offset = done + 1,
                        .last_offset = last,
                        .aborted = &aborted};
    st = ls_materialize_range(meta, os, warehouse_uri, tt, &r, rows, err, sizeof err);
    if (st != LS_OK) {
        LS_WARN("table",
                "log %016llx: backfilling [%lld, %lld] into table %s.%s failed: %s (%s); "
                "will retry",
                (unsigned long long)log_id, (long long)(done + 1), (long long)last, ts->stream->ns,
                tt->name, ls_status_str(st), err);
        goto out;
    }
    ls_table_marks_set(m, log_id, tt, last);
    LS_DEBUG("table", "log %016llx: backfilled [%lld, %lld] from %s into %s.%s",
             (unsigned long long)log_id, (long long)(done + 1), (long long)last, e.object,
             ts->stream->ns, tt->name);
    rc = last == e.last_offset ? 1 : 2;
out:
    ls_aborted_list_free(&aborted);
    ls_free(ents);
    ls_free(pos);
    ls_free(base);
    ls_buf_free(&body);
    ls_idx_clear(&e);
    return rc;
}

/* ---------------------------------------------------------------- status */

static void status_key(char *out, size_t cap, int64_t stream_no)
{
    snprintf(out, cap, LS_KEY_TABLESTAT "%016llx", (unsigned long long)stream_no);
}

void ls_table_status_clear(ls_table_status_t *s)
{
    ls_free(s->covered);
    memset(s, 0, sizeof *s);
}

/* Parses a status value (NUL-terminated, meta.h); prefix and plen: the
 * table prefix it names. LS_ENOTFOUND when malformed. */
static ls_status status_parse(const char *v, ls_table_status_t *out, const char **prefix,
                              size_t *plen)
{
    memset(out, 0, sizeof *out);
    long long ms;
    int n, used = 0;
    if (sscanf(v, "%lld %d\n%n", &ms, &n, &used) != 2 || n < 0 || n > LS_MAX_PARTITIONS)
        return LS_ENOTFOUND;
    const char *p = v + used, *nl = strchr(p, '\n');
    if (!nl) return LS_ENOTFOUND;
    *prefix = p;
    *plen = (size_t)(nl - p);
    out->commit_ms = ms;
    out->n = n;
    out->covered = LS_NEWN(int64_t, (size_t)n + 1);
    p = nl + 1;
    for (int i = 0; i < n; i++) {
        char *end;
        out->covered[i] = strtoll(p, &end, 10);
        if (end == p) {
            ls_table_status_clear(out);
            return LS_ENOTFOUND;
        }
        p = end;
    }
    return LS_OK;
}

ls_status ls_table_status_read(ls_meta_t *meta, const ls_table_plan_stream_t *ts,
                               ls_table_status_t *out)
{
    return ls_table_status_get(meta, ts->stream->stream_no, ts->target.prefix, out);
}

ls_status ls_table_status_get(ls_meta_t *meta, int64_t stream_no, const char *table_prefix,
                              ls_table_status_t *out)
{
    memset(out, 0, sizeof *out);
    char key[64];
    status_key(key, sizeof key, stream_no);
    ls_kv_t kv;
    ls_status st = ls_meta_get(meta, key, &kv);
    if (st != LS_OK) return st;
    const char *prefix;
    size_t plen, want = strlen(table_prefix);
    /* malformed or of another table: as if none */
    st = status_parse((const char *)kv.val, out, &prefix, &plen);
    if (st == LS_OK && (plen != want || memcmp(prefix, table_prefix, want) != 0)) {
        ls_table_status_clear(out);
        st = LS_ENOTFOUND;
    }
    ls_kv_free(&kv);
    return st;
}

ls_status ls_table_status_list(ls_meta_t *meta, ls_table_status_entry_t **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    ls_kvlist_t l;
    ls_status st = ls_meta_scan_prefix(meta, LS_KEY_TABLESTAT, 0, &l);
    if (st != LS_OK) return st;
    ls_table_status_entry_t *v = LS_NEWN(ls_table_status_entry_t, l.n + 1);
    size_t k = 0;
    for (size_t i = 0; i < l.n; i++) {
        ls_table_status_entry_t *e = &v[k];
        const char *prefix, *key = (const char *)l.v[i].key;
        size_t plen, pl = strlen(LS_KEY_TABLESTAT);
        if (l.v[i].klen <= pl) continue;
        e->stream_no = strtoll(key + pl, NULL, 16);
        if (status_parse((const char *)l.v[i].val, &e->status, &prefix, &plen) != LS_OK) continue;
        /* "warehouse/<ns>/<table>" (ls_table_target_init) */
        const char *ns = memchr(prefix, '/', plen);
        const char *tb = ns ? memchr(ns + 1, '/', plen - (size_t)(ns + 1 - prefix)) : NULL;
        size_t nslen = tb ? (size_t)(tb - ns - 1) : 0,
               tlen = tb ? plen - (size_t)(tb + 1 - prefix) : 0;
        if (!tb || !nslen || !tlen || nslen >= sizeof e->ns || tlen >= sizeof e->table) {
            ls_table_status_clear(&e->status);
            continue;
        }
        memcpy(e->ns, ns + 1, nslen);
        memcpy(e->table, tb + 1, tlen);
        k++;
    }
    ls_kvlist_free(&l);
    *out = v;
    *n = k;
    return LS_OK;
}

void ls_table_status_list_free(ls_table_status_entry_t *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        ls_table_status_clear(&v[i].status);
    ls_free(v);
}

ls_status ls_table_status_write(ls_meta_t *meta, const ls_table_plan_stream_t *ts,
                                const ls_table_status_t *s, const ls_meta_cmp_t *fence)
{
    char key[64];
    status_key(key, sizeof key, ts->stream->stream_no);
    ls_buf_t v;
    ls_buf_init(&v);
    ls_buf_printf(&v, "%lld %d\n%s\n", (long long)s->commit_ms, (int)s->n, ts->target.prefix);
    for (int32_t i = 0; i < s->n; i++)
        ls_buf_printf(&v, "%s%lld", i ? " " : "", (long long)s->covered[i]);
    ls_meta_op_t op = {
        .kind = LS_META_OP_PUT, .key = key, .klen = strlen(key), .val = v.data, .vlen = v.len};
    ls_status st = ls_meta_txn(meta, fence, fence ? 1 : 0, &op, 1, NULL);
    ls_buf_free(&v);
    return st;
}

ls_status ls_table_status_lag(ls_meta_t *meta, const ls_table_plan_stream_t *ts,
                              const ls_table_status_t *s, int64_t now_ms, int64_t *lag_ms,
                              int64_t *records)
{
    *lag_ms = 0;
    if (records) *records = 0;
    for (int32_t p = 0; p < ts->stream->partitions; p++) {
        int64_t id = ls_stream_log_id(ts->stream, p);
        int64_t covered = p < s->n ? s->covered[p] : -1, lso, span;
        ls_status st = ls_log_stable_read(meta, id, &lso, &span);
        if (st != LS_OK) return st;
        if (covered + 1 >= lso) continue; /* every stable record accounted for */
        if (records) *records += lso - (covered + 1);
        ls_idx_entry_t e;
        bool found = false;
        if ((st = ceiling_entry(meta, id, covered + 1, &e, &found)) != LS_OK) return st;
        if (!found) continue; /* trimmed away meanwhile */
        int64_t t = e.kind == LS_IDX_WAL ? ls_wal_key_time(e.object) : e.max_timestamp;
        ls_idx_clear(&e);
        if (t >= 0 && now_ms - t > *lag_ms) *lag_ms = now_ms - t;
    }
    return LS_OK;
}
