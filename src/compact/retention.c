/* Retention (Kafka's retention.ms / retention.bytes on diskless logs).
 *
 * Kafka deletes whole segments from the oldest while a segment's largest
 * timestamp is older than retention.ms, or while the log minus that segment
 * is still at least retention.bytes, and moves the log start to the next
 * segment; the active segment is no exception. Here the unit is the index
 * entry (a WAL range of one flush, or a compacted object), so:
 *  - the log start moves to the end of the longest qualifying prefix of whole
 *    entries, never past the high watermark (entries end below it);
 *  - entries still in the hot WAL window are cut like any other: retention
 *    is a promise about deletion (compliance settings such as
 *    retention.ms=60000 must hold even when the hot window is longer), and a
 *    WAL entry costs nothing to drop (its object's count goes down, GC
 *    deletes the object once no log references it);
 *  - the exception is a stream with a table: its WAL entries have not been
 *    materialized yet, and the table must not miss rows because the log
 *    expired them, so retention stops at the first WAL entry. Compaction
 *    materializes them, and the next check trims the compacted objects.
 *    Table rows are never removed by log retention (table retention is
 *    separate).
 * Entries left below the log start by a soft trim (DeleteRecords on a
 * table stream) always qualify once compacted.
 *
 * cleanup.policy: time and size retention apply only when the policy holds
 * "delete" (the default, or "compact,delete"); a "compact"-only topic keeps
 * every record (no key compaction yet, so nothing is ever removed from it but
 * by DeleteRecords).
 *
 * Stateless; the caller (compactor.c) owns scheduling and the claim. */
#include "compact/retention.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/diag.h"
#include "log/log_meta.h"
#include "log/log_trim.h"

#define SCAN_PAGE 256
#define SCAN_MAX_ENTRIES 65536 /* per check; a longer backlog continues next check */

static int64_t config_i64(const ls_stream_t *s, const char *key, int64_t def)
{
    const char *v = s ? ls_stream_config_get(s, key) : NULL;
    if (!v) return def;
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno || end == v || *end || x < -1) {
        LS_WARN("retention",
                "topic %s: %s=%s is not a number >= -1; using the broker default "
                "%lld",
                s->name, key, v, (long long)def);
        return def;
    }
    return x;
}

void ls_retention_policy_resolve(const ls_stream_t *s, int64_t default_ms, int64_t default_bytes,
                                 bool table_enabled, ls_retention_policy_t *out)
{
    out->retention_ms = config_i64(s, "retention.ms", default_ms);
    out->retention_bytes = config_i64(s, "retention.bytes", default_bytes);
    out->keep_wal = table_enabled;
    if (s && !ls_stream_cleanup_policy(s).delete) {
        /* cleanup.policy=compact: Kafka never expires records of such a topic
         * by time or size (only key compaction removes superseded ones); a
         * Connect config topic or a Streams changelog must survive any
         * retention.ms. DeleteRecords still trims (an explicit request). */
        out->retention_ms = -1;
        out->retention_bytes = -1;
    }
}

ls_status ls_retention_target(ls_meta_t *meta, int64_t log_id, const ls_retention_policy_t *p,
                              int64_t now_ms, int64_t *target, bool *work)
{
    *work = false;
    ls_start_t start;
    int64_t start_rev;
    ls_status st = ls_log_start_read(meta, log_id, &start, &start_rev);
    if (st != LS_OK) return st;
    *target = start.log_start;
    *work = start.swept_below < start.index_start; /* a sweep is owed (log_trim.c) */
    char key[64];
    ls_log_head_key(key, sizeof key, log_id);
    ls_kv_t kv;
    if ((st = ls_meta_get(meta, key, &kv)) != LS_OK)
        return st == LS_ENOTFOUND ? LS_OK : st; /* no head: nothing appended */
    ls_head_t h;
    st = ls_head_decode(kv.val, kv.vlen, &h);
    ls_kv_free(&kv);
    if (st != LS_OK) return st;
    int64_t retained = h.size_bytes - start.trimmed_bytes;
    bool fenced = h.fenced;
    ls_head_clear(&h);
    if (fenced) return LS_OK; /* dropped stream: nothing to serve, nothing to trim here */

    char prefix[64];
    ls_log_idx_prefix(prefix, sizeof prefix, log_id);
    uint8_t from[128], end[64];
    size_t flen = strlen(prefix);
    memcpy(from, prefix, flen);
    size_t elen = ls_meta_prefix_end(prefix, strlen(prefix), end);
    int scanned = 0;
    bool stop = false;
    while (!stop && scanned < SCAN_MAX_ENTRIES) {
        ls_kvlist_t l;
        if ((st = ls_meta_scan(meta, from, flen, end, elen, SCAN_PAGE, 0, &l)) != LS_OK) return st;
        for (size_t i = 0; i < l.n && !stop; i++, scanned++) {
            ls_idx_entry_t e;
            if (ls_idx_decode(l.v[i].val, l.v[i].vlen, &e) != LS_OK) {
                LS_ERROR("retention",
                         "corrupt index entry at %.*s; retention of log %016llx "
                         "stops before it",
                         (int)l.v[i].klen, (const char *)l.v[i].key, (unsigned long long)log_id);
                stop = true;
                break;
            }
            bool cuttable = !(p->keep_wal && e.kind == LS_IDX_WAL);
            bool below_start = e.last_offset < start.log_start;
            bool too_old = p->retention_ms >= 0 && e.max_timestamp < now_ms - p->retention_ms;
            bool too_big =
                p->retention_bytes >= 0 && retained - (int64_t)e.len >= p->retention_bytes;
            if (cuttable && (below_start || too_old || too_big)) {
                if (e.last_offset + 1 > *target) *target = e.last_offset + 1;
                retained -= e.len;
                *work = true;
            } else {
                stop = true;
            }
            ls_idx_clear(&e);
        }
        /* the next page starts right after the last key seen (key + NUL) */
        if (!l.more || l.n == 0 || l.v[l.n - 1].klen + 1 > sizeof from)
            stop = true;
        else {
            flen = l.v[l.n - 1].klen;
            memcpy(from, l.v[l.n - 1].key, flen);
            from[flen++] = 0;
        }
        ls_kvlist_free(&l);
    }
    return LS_OK;
}
