/* Key compaction (cleanup.policy=compact): Kafka's log cleaner on diskless
 * storage.
 *
 * A log's index, from its start, reads KCO* CO* WAL*: key-compacted objects
 * (the clean part, kind LS_IDX_KCO), then compacted objects the WAL pass made
 * since (the dirty part), then the hot WAL entries. The kind of each index
 * entry is the only state: it changes in the same txn as the data it
 * describes, so there is no checkpoint to lose or to get ahead of the data.
 *
 * A call for one log (ls_kc_log), under the log's claim (lease.c):
 *   0. deletes the objects earlier swaps replaced, once their grace is over
 *      (markers /ls/kcgc/<log>/<object> = swap time, written by the swap),
 *      and objects of the log no index entry names that are older than the
 *      grace (a crash between writing an object and its swap);
 *   1. plans: the cleanable range is the leading run of compacted entries
 *      whose records are all older than min.compaction.lag.ms; it is due when
 *      dirty bytes / cleanable bytes >= min.cleanable.dirty.ratio, or when the
 *      first dirty entry is older than max.compaction.lag.ms, or when a clean
 *      entry's delete horizon (the earliest of its tombstones', kept in the
 *      index entry) has passed. Not due: done (no claim, no write);
 *   2. builds the key map from the dirty entries in offset order: 128-bit
 *      hash of the key -> latest offset, LS_KC_SLOT_BYTES per key, at most
 *      map_bytes (load 0.9). When it fills, keys already in it still update
 *      and the dirty part ends after that entry; the rest stays dirty for
 *      the next call (multi-pass). Memory of a call: the map, plus one input
 *      entry and one output object at a time (each about compaction.max.bytes);
 *   3. rewrites [index start, dirty end] in groups of at most 31 entries and
 *      group_bytes input bytes (chosen from the index alone), one object per
 *      group, each swapped in one txn: compare the claim and every input
 *      entry's revision, delete the inputs but the last, put the KCO entry
 *      under the last input's key (keys are last offsets: coverage never has
 *      a hole), put a marker per replaced object.
 *
 * Records (Kafka's rules, LogCleaner + KIP-534): a record survives when its
 * key's mapped offset is not above its own (not in the map: kept). Keyless
 * records are dropped (Kafka counts them invalid). A tombstone (null value)
 * survives until its batch's delete horizon: the first rewrite that keeps a
 * tombstone sets the batch's horizon (attributes bit 6, baseTimestamp = now +
 * delete.retention.ms, record timestamp deltas re-based so record timestamps
 * do not change), and a rewrite after the horizon drops it. The horizon is
 * set only when every surviving tombstone of the batch is its key's mapped
 * (latest) record, so every older record of that key was dropped in the same
 * rewrite (groups swap in offset order) — a tombstone never goes before what
 * it deletes. Batches keep baseOffset, lastOffsetDelta, producer id, epoch
 * and base sequence (the Java cleaner's overrideLastOffset); a batch left
 * without records is dropped (producer state lives in the log head, not in
 * the log). A rewritten batch is recompressed with its codec.
 *
 * Transactions (Kafka's cleaner rule; docs/ARCHITECTURE.md, "Transactions"):
 * the cleanable range ends before the first entry reaching the log's last
 * stable offset, so every transactional batch in it belongs to a transaction
 * that ended; the head is read before the index and the aborted records
 * (ls_log_aborted_read), so each ended transaction's outcome is known. A
 * batch of an aborted transaction (its producer has an aborted record with
 * first <= base < marker) is dropped and never mapped, so it never
 * supersedes anything; committed transactional records are mapped and
 * filtered like any other. A marker (control batch) is kept as it is while
 * a batch of its producer was kept since that producer's previous marker
 * (the data of its transaction: a producer has one transaction open per
 * log; the walk goes in offset order from the index start, carried from
 * group to group); once none was, it gets a delete horizon like a
 * tombstone's (counted in the entry's horizon, so the log comes due) and
 * goes at the first rewrite after it. Records at or past the LSO, markers
 * included, are left for a later call. An abort marker goes together with its
 * aborted-index record (deleted in the swap's txn, and from the loop's copy
 * with the new entry, ls_kc_swapped_fn): as Kafka's cleaner keeps a txn-index
 * entry only beside its retained marker. A record without its marker would
 * make read_committed consumers skip every later batch of that producer, its
 * committed transactions included, waiting for an abort that never comes.
 *
 * The log's last batch (holding the last offset the index covers) never
 * goes: were it dropped (a marker or a tombstone past its horizon, all else
 * superseded), the high watermark would lie past every batch and a consumer
 * in the gap would fetch nothing forever, never reaching the end (Kafka never
 * cleans its active segment). When every record of it would go, it is kept
 * as it is (a marker with its aborted record), and goes at the first clean
 * after the log has grown past it. Its last record is never superseded
 * (nothing follows it), so keeping it resurrects nothing.
 *
 * Invariants: (I1) every offset of [log start, high watermark) is covered by
 * an index entry at every instant (swaps are single txns replacing entries in
 * place); (I2) a record is dropped only when a record of the same key at a
 * higher offset exists in the log, which itself survives until superseded;
 * (I3) a tombstone is dropped only after its horizon, and only records above
 * it remain for its key; (I4) an object is deleted only when no index entry
 * names it, after the grace, so a reader holding a stale entry re-looks up;
 * (I5) nothing at or past the LSO is rewritten, a record of an aborted
 * transaction never survives a rewrite nor drops another, and a marker goes
 * only after its horizon, with no data of its transaction left.
 * Crashes: after writing an object, before its swap: the index is unchanged
 * and the object an orphan (step 0); between two swaps: the swapped groups
 * are clean, the rest still dirty or clean, each state consistent (I2/I3 do
 * not depend on the rest of the call; I5 judges a marker by the groups
 * before it, each of which was swapped or left as it was, since a failed
 * swap ends the call); between a swap and the deletions:
 * markers remain and step 0 deletes later. Object keys are unique
 * (ls_kco_key with a random generation) and written create-only.
 *
 * Merging small objects (logs that are not key-compacted). The WAL pass adds
 * one compacted object per log and pass (per commit interval for a table
 * log), and nothing else removes entries before retention does: at a 1 s
 * commit interval a week of one partition is 600,000 index entries, each
 * loaded, scanned and held in memory. So the same rewrite, with every batch
 * copied byte for byte (no key map, no filtering), merges runs of adjacent
 * CO entries into one CO entry, swapped and collected exactly as above (I1,
 * I4 hold; I2/I3 are moot: no record goes). Which runs (next_merge), as a
 * size-tiered LSM merges: the longest run, from the oldest entry on, of at
 * least MERGE_MIN_ENTRIES and at most 31 consecutive CO entries with
 * contiguous offsets, at most lim->group_bytes of input, whose max
 * timestamps lie within p->merge_span_ms (the caller passes a tenth of
 * retention.ms and of retention.bytes, so retention, which trims whole
 * entries, stays that precise), and whose largest entry is at most
 * 1/MERGE_GROWTH of the run's bytes (base/size_tier.h). So whenever a byte is rewritten, the
 * object holding it grows at least MERGE_GROWTH times (16 to 31 times for
 * inputs of one size, the common case: one commit interval of data each;
 * a big old object never absorbs a trickle of small new ones): every byte
 * is rewritten at most log4(group bytes / first size) times, about twice in
 * practice, and a log keeps a few runs' worth of entries of each size class
 * plus those no run can take (at the span or byte bound): bounded by its
 * retention, not by how long it has run. Sizes may vary (a pass that found
 * one small flush makes a tiny object); they only have to add up.
 * Key-compacted entries (KCO) are never merged here. */
#include "compact/keycompact.h"

#include <errno.h>
#include <inttypes.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/crashpoint.h"
#include "base/crc32c.h"
#include "base/compress.h"
#include "base/diag.h"
#include "base/size_tier.h"
#include "base/uuid.h"
#include "log/co_format.h"
#include "log/log_trim.h"
#include "log/log_txn.h"
#include "records/records.h"
#include "meta/meta_keys.h"

#define GROUP_MAX_ENTRIES 31     /* 1 + 31 compares, 62 ops: within etcd's 128 */
#define GROUP_MAX_ABORTS 32      /* aborted records deleted per swap: 94 ops */
#define MERGE_MIN_ENTRIES 16     /* entries a merge takes at least */
#define MERGE_GROWTH 4           /* a merged object is at least this x its largest input */
#define ATTR_DELETE_HORIZON 0x40 /* KIP-534: baseTimestamp holds the delete horizon */
#define MAX_DECOMPRESSED ((size_t)256 << 20)

/* ------------------------------------------------------------------ policy */

static int64_t cfg_i64(const ls_stream_t *s, const char *key, int64_t def)
{
    const char *v = ls_stream_config_get(s, key);
    if (!v) return def;
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno || *end || !*v || x < 0) {
        LS_WARN_RL("compact", "stream %s: stored %s=%s is not valid; using %lld", s->name, key, v,
                   (long long)def);
        return def;
    }
    return x;
}

void ls_kc_policy_resolve(const ls_stream_t *s, ls_kc_policy_t *out)
{
    *out = (ls_kc_policy_t){.compact = false,
                            .min_lag_ms = 0,
                            .max_lag_ms = INT64_MAX,
                            .delete_retention_ms = 86400000,
                            .dirty_ratio = 0.5};
    if (!s) return;
    out->compact = ls_stream_cleanup_policy(s).compact;
    out->min_lag_ms = cfg_i64(s, "min.compaction.lag.ms", 0);
    out->max_lag_ms = cfg_i64(s, "max.compaction.lag.ms", INT64_MAX);
    if (out->max_lag_ms < 1) out->max_lag_ms = INT64_MAX;
    out->delete_retention_ms = cfg_i64(s, "delete.retention.ms", 86400000);
    const char *r = ls_stream_config_get(s, "min.cleanable.dirty.ratio");
    if (r) {
        char *end;
        double d = strtod(r, &end);
        if (*r && !*end && d >= 0 && d <= 1)
            out->dirty_ratio = d;
        else
            LS_WARN_RL("compact",
                       "stream %s: stored min.cleanable.dirty.ratio=%s is not valid; "
                       "using 0.5",
                       s->name, r);
    }
}

/* ----------------------------------------------------------------- key map */

typedef struct slot {
    uint64_t h1, h2;
    int64_t off1; /* offset + 1; 0: empty */
} slot_t;

typedef struct keymap {
    slot_t *v;
    size_t mask, n, limit;
    bool full; /* a new key did not fit */
} keymap_t;

static void map_init(keymap_t *m, size_t bytes)
{
    size_t slots = bytes / sizeof(slot_t), cap = 16;
    while (cap * 2 <= slots)
        cap *= 2;
    m->v = LS_NEWN(slot_t, cap);
    m->mask = cap - 1;
    m->n = 0;
    m->limit = cap / 10 * 9;
    m->full = false;
}

static void key_hash(const uint8_t *key, int32_t len, uint64_t *h1, uint64_t *h2)
{
    uint8_t d[SHA256_DIGEST_LENGTH];
    SHA256(key, (size_t)len, d);
    memcpy(h1, d, 8);
    memcpy(h2, d + 8, 8);
}

static slot_t *map_slot(const keymap_t *m, uint64_t h1, uint64_t h2)
{
    for (size_t i = h1 & m->mask;; i = (i + 1) & m->mask) {
        slot_t *s = &m->v[i];
        if (!s->off1 || (s->h1 == h1 && s->h2 == h2)) return s;
    }
}

/* Records key -> offset (offsets arrive ascending); a new key beyond the
 * limit is refused and marks the map full. */
static void map_put(keymap_t *m, uint64_t h1, uint64_t h2, int64_t off)
{
    slot_t *s = map_slot(m, h1, h2);
    if (!s->off1) {
        if (m->n >= m->limit) {
            m->full = true;
            return;
        }
        s->h1 = h1;
        s->h2 = h2;
        m->n++;
    }
    s->off1 = off + 1;
}

/* The latest offset mapped for the key, -1 when not mapped. */
static int64_t map_get(const keymap_t *m, uint64_t h1, uint64_t h2)
{
    const slot_t *s = map_slot(m, h1, h2);
    return s->off1 - 1;
}

/* ------------------------------------------------------------- the index */

typedef struct kc_index {
    ls_kvlist_t l;
    ls_idx_entry_t *e; /* decoded, same order as l */
    size_t n;          /* leading entries decoded (stops at a corrupt one) */
} kc_index_t;

static void index_free(kc_index_t *ix)
{
    for (size_t i = 0; i < ix->n; i++)
        ls_idx_clear(&ix->e[i]);
    ls_free(ix->e);
    ls_kvlist_free(&ix->l);
    memset(ix, 0, sizeof *ix);
}

static ls_status index_load(ls_meta_t *meta, int64_t log_id, kc_index_t *ix)
{
    memset(ix, 0, sizeof *ix);
    char prefix[64];
    ls_log_idx_prefix(prefix, sizeof prefix, log_id);
    ls_status st = ls_meta_scan_prefix(meta, prefix, 0, &ix->l);
    if (st != LS_OK) return st;
    ix->e = LS_NEWN(ls_idx_entry_t, ix->l.n ? ix->l.n : 1);
    for (; ix->n < ix->l.n; ix->n++)
        if (ls_idx_decode(ix->l.v[ix->n].val, ix->l.v[ix->n].vlen, &ix->e[ix->n]) != LS_OK) {
            LS_ERROR("compact",
                     "log %016llx: corrupt index entry %.*s; key compaction stops "
                     "before it",
                     (unsigned long long)log_id, (int)ix->l.v[ix->n].klen,
                     (const char *)ix->l.v[ix->n].key);
            break;
        }
    return LS_OK;
}

typedef struct kc_plan {
    size_t m; /* cleanable: entries [0, m) */
    size_t k; /* clean: entries [0, k) */
    bool due;
} kc_plan_t;

/* lso: the log's last stable offset; nothing at or past it is cleanable. */
static kc_plan_t plan(const kc_index_t *ix, const ls_kc_policy_t *p, int64_t now, int64_t lso)
{
    kc_plan_t pl = {0};
    size_t m = 0;
    for (; m < ix->n; m++) {
        const ls_idx_entry_t *e = &ix->e[m];
        /* in-table ranges (cold_source.h) are never rewritten here: only
         * raw append logs, never key-compacted, have them */
        if (e->kind == LS_IDX_WAL || e->kind == LS_IDX_TABLE ||
            (m > 0 && e->first_offset != ix->e[m - 1].last_offset + 1) || e->last_offset >= lso)
            break;
        if (p->min_lag_ms > 0 && e->max_timestamp > now - p->min_lag_ms) break;
    }
    size_t k = 0;
    while (k < m && ix->e[k].kind == LS_IDX_KCO)
        k++;
    pl.m = m;
    pl.k = k;
    /* a tombstone past its horizon is due whatever the dirty ratio, so a log
     * that stopped receiving writes still loses its expired tombstones */
    for (size_t i = 0; i < m; i++)
        if (ix->e[i].delete_horizon_ms > 0 && ix->e[i].delete_horizon_ms <= now) pl.due = true;
    if (k == m) return pl;
    uint64_t dirty = 0, total = 0;
    for (size_t i = 0; i < m; i++) {
        total += ix->e[i].len;
        if (i >= k) dirty += ix->e[i].len;
    }
    bool overdue = p->max_lag_ms != INT64_MAX && now - ix->e[k].max_timestamp >= p->max_lag_ms;
    pl.due = pl.due || overdue || (total > 0 && (double)dirty / (double)total >= p->dirty_ratio);
    return pl;
}

/* ------------------------------------------------------------ batch walker */

typedef int (*batch_fn)(void *arg, const uint8_t *b, size_t len, int64_t base);

/* Calls fn for each batch of an entry body (real base offsets). */
static ls_status each_batch(const uint8_t *p, size_t len, batch_fn fn, void *arg)
{
    for (size_t q = 0; q < len;) {
        if (len - q < LS_RB_HEADER_SIZE) return LS_ECORRUPT;
        size_t sz = 12 + (size_t)ls_be32_get(p + q + LS_RB_OFF_LENGTH);
        if (sz < LS_RB_HEADER_SIZE || sz > len - q) return LS_ECORRUPT;
        int rc = fn(arg, p + q, sz, (int64_t)ls_be64_get(p + q));
        if (rc < 0) return LS_ECORRUPT;
        q += sz;
    }
    return LS_OK;
}

static ls_status read_entry(ls_objstore_t *os, const ls_idx_entry_t *e, ls_buf_t *out,
                            ls_kc_stats_t *st)
{
    ls_buf_init(out);
    if (e->len == 0) return LS_OK;
    ls_status s = ls_objstore_get(os, e->object, e->pos, e->len, out);
    if (s == LS_OK && out->len != e->len) s = LS_ECORRUPT;
    if (s == LS_OK) st->bytes_read += e->len;
    return s;
}

/* --------------------------------------------------------------- map build */

typedef struct map_ctx {
    keymap_t *m;
    int64_t base;
    const ls_aborted_list_t *aborted; /* the log's aborted transactions in the range */
    ls_kc_stats_t *st;
} map_ctx_t;

/* Whether a batch holds records of an aborted transaction. */
static bool aborted_batch(const ls_aborted_list_t *l, const ls_batch_info_t *h, int64_t base)
{
    return h->transactional && !h->control && ls_aborted_list_find(l, h->producer_id, base);
}

static int map_record(void *arg, const ls_record_view_t *r)
{
    map_ctx_t *c = arg;
    if (r->key_len < 0) return 0;
    uint64_t h1, h2;
    key_hash(r->key, r->key_len, &h1, &h2);
    map_put(c->m, h1, h2, c->base + r->offset_delta);
    return 0;
}

static int map_batch(void *arg, const uint8_t *b, size_t len, int64_t base)
{
    map_ctx_t *c = arg;
    ls_batch_info_t h;
    ls_batch_header_parse(b, &h);
    if (h.control || aborted_batch(c->aborted, &h, base)) return 0;
    c->base = base;
    return ls_records_foreach(b, len, MAX_DECOMPRESSED, map_record, c) == LS_RB_OK ? 0 : -1;
}

/* ---------------------------------------------------------- batch rewrite */

typedef struct filt {
    const keymap_t *m;
    int64_t now, base;
    bool keep_all;    /* a marker's record: kept whatever the key map says */
    bool horizon_set; /* the batch already carries a delete horizon */
    int64_t horizon;
    /* decisions (first walk) */
    int32_t kept, dropped;
    bool tombstone_kept, all_tombstones_latest;
    ls_kc_stats_t *st;
    /* encoding (second walk) */
    bool encode;
    ls_buf_t *payload;
    int64_t new_base_ts, max_ts;
} filt_t;

/* Kafka's retention rule for one record; counts what it drops. */
static bool keep_record(filt_t *f, const ls_record_view_t *r, bool count)
{
    if (f->keep_all) return true;
    int64_t off = f->base + r->offset_delta;
    if (r->key_len < 0) {
        if (count) f->st->keyless_dropped++;
        return false;
    }
    uint64_t h1, h2;
    key_hash(r->key, r->key_len, &h1, &h2);
    int64_t mapped = map_get(f->m, h1, h2);
    if (mapped > off) {
        if (count) f->st->superseded_dropped++;
        return false;
    }
    if (!r->value) {
        if (f->horizon_set && f->horizon <= f->now) {
            if (count) f->st->tombstones_dropped++;
            return false;
        }
        if (!f->encode) {
            f->tombstone_kept = true;
            if (mapped != off) f->all_tombstones_latest = false;
        }
    }
    return true;
}

static void put_uvarint(ls_buf_t *b, uint64_t v)
{
    uint8_t t[10];
    size_t n = 0;
    while (v >= 0x80) {
        t[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    t[n++] = (uint8_t)v;
    ls_buf_append(b, t, n);
}

static void put_varlong(ls_buf_t *b, int64_t v)
{
    put_uvarint(b, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

static int filt_record(void *arg, const ls_record_view_t *r)
{
    filt_t *f = arg;
    if (!f->encode) {
        if (keep_record(f, r, true))
            f->kept++;
        else
            f->dropped++;
        return 0;
    }
    if (!keep_record(f, r, false)) return 0;
    ls_buf_t body;
    ls_buf_init(&body);
    uint8_t attr = 0;
    ls_buf_append(&body, &attr, 1);
    put_varlong(&body, r->timestamp - f->new_base_ts);
    put_varlong(&body, r->offset_delta);
    put_varlong(&body, r->key_len);
    ls_buf_append(&body, r->key, (size_t)r->key_len);
    put_varlong(&body, r->value ? r->value_len : -1);
    if (r->value) ls_buf_append(&body, r->value, (size_t)r->value_len);
    put_varlong(&body, r->header_count);
    ls_buf_append(&body, r->headers, r->headers_len);
    put_varlong(f->payload, (int64_t)body.len);
    ls_buf_append(f->payload, body.data, body.len);
    ls_buf_free(&body);
    if (r->timestamp > f->max_ts) f->max_ts = r->timestamp;
    return 0;
}

typedef struct group_out {
    ls_buf_t obj; /* header + batches */
    ls_co_entry_t *ents;
    uint32_t n, cap;
    int64_t max_ts;
    int64_t min_horizon; /* earliest delete horizon of a kept tombstone; 0: none */
    bool changed;        /* differs from the input bytes */
    bool merge;          /* copy every batch (merging small objects) */
    const keymap_t *m;
    const ls_aborted_list_t *aborted; /* the log's aborted transactions in the range */
    int64_t now, delete_retention_ms;
    int64_t log_last; /* the last offset the index covers: its batch never goes */
    ls_kc_stats_t *st;
    /* first offsets of the aborted records whose markers this group drops */
    int64_t aborts_gone[GROUP_MAX_ABORTS];
    size_t naborts_gone;
    /* producers whose transaction has data kept since their last marker,
     * carried from group to group of one call (the walk is in offset
     * order from the index start, so a marker comes after all of it) */
    int64_t *txn_data;
    size_t ntxn, captxn;
} group_out_t;

static void txn_data_note(group_out_t *g, int64_t pid)
{
    for (size_t i = 0; i < g->ntxn; i++)
        if (g->txn_data[i] == pid) return;
    if (g->ntxn == g->captxn) {
        g->captxn = g->captxn ? g->captxn * 2 : 8;
        g->txn_data = ls_realloc(g->txn_data, g->captxn * sizeof *g->txn_data);
    }
    g->txn_data[g->ntxn++] = pid;
}

/* Whether pid's transaction kept data since its last marker; forgets it
 * (the marker at hand ends that transaction). */
static bool txn_data_take(group_out_t *g, int64_t pid)
{
    for (size_t i = 0; i < g->ntxn; i++)
        if (g->txn_data[i] == pid) {
            g->txn_data[i] = g->txn_data[--g->ntxn];
            return true;
        }
    return false;
}

static void out_batch(group_out_t *g, const uint8_t *b, size_t len, int64_t base, int64_t max_ts)
{
    if (g->n == g->cap) {
        g->cap = g->cap ? g->cap * 2 : 64;
        g->ents = ls_realloc(g->ents, g->cap * sizeof *g->ents);
    }
    g->ents[g->n++] = (ls_co_entry_t){.base_offset = base, .pos = (uint32_t)g->obj.len};
    ls_buf_append(&g->obj, b, len);
    if (max_ts > g->max_ts) g->max_ts = max_ts;
}

/* Writes batch b again with the records f keeps (f->kept of them; same
 * baseOffset, lastOffsetDelta and producer fields), recompressed with its
 * codec; with a new delete horizon when horizon > 0 (KIP-534: attributes
 * bit 6, baseTimestamp = horizon, record timestamp deltas re-based). */
static int rebuild_batch(group_out_t *g, const uint8_t *b, size_t len, int64_t base,
                         const ls_batch_info_t *h, filt_t *f, int64_t horizon)
{
    g->changed = true;
    ls_buf_t payload;
    ls_buf_init(&payload);
    f->encode = true;
    f->payload = &payload;
    f->max_ts = -1;
    f->new_base_ts = h->base_timestamp;
    int16_t attrs = h->attributes;
    if (horizon > 0) {
        f->new_base_ts = horizon;
        attrs |= ATTR_DELETE_HORIZON;
    }
    if (ls_records_foreach(b, len, MAX_DECOMPRESSED, filt_record, f) != LS_RB_OK) {
        ls_buf_free(&payload);
        return -1;
    }
    ls_buf_t packed;
    ls_buf_init(&packed);
    const ls_buf_t *rec = &payload;
    if (h->codec != LS_CODEC_NONE) {
        if (ls_compress(h->codec, payload.data, payload.len, &packed) != LS_OK) {
            ls_buf_free(&payload);
            ls_buf_free(&packed);
            return -1;
        }
        rec = &packed;
    }
    uint8_t hdr[LS_RB_HEADER_SIZE];
    memcpy(hdr, b, LS_RB_HEADER_SIZE);
    ls_be32_put(hdr + LS_RB_OFF_LENGTH, (uint32_t)(LS_RB_HEADER_SIZE - 12 + rec->len));
    ls_be16_put(hdr + LS_RB_OFF_ATTRIBUTES, (uint16_t)attrs);
    ls_be64_put(hdr + LS_RB_OFF_BASE_TIMESTAMP, (uint64_t)f->new_base_ts);
    int64_t max_ts = h->timestamp_log_append ? h->max_timestamp : f->max_ts;
    ls_be64_put(hdr + LS_RB_OFF_MAX_TIMESTAMP, (uint64_t)max_ts);
    ls_be32_put(hdr + LS_RB_OFF_RECORD_COUNT, (uint32_t)f->kept);
    uint32_t crc =
        ls_crc32c(0, hdr + LS_RB_OFF_ATTRIBUTES, LS_RB_HEADER_SIZE - LS_RB_OFF_ATTRIBUTES);
    crc = ls_crc32c(crc, rec->data, rec->len);
    ls_be32_put(hdr + LS_RB_OFF_CRC, crc);
    out_batch(g, hdr, sizeof hdr, base, max_ts);
    ls_buf_append(&g->obj, rec->data, rec->len);
    ls_buf_free(&payload);
    ls_buf_free(&packed);
    return 0;
}

/* now + delete.retention.ms, saturated. */
static int64_t new_horizon(const group_out_t *g)
{
    int64_t dr = g->delete_retention_ms;
    return dr > INT64_MAX - g->now ? INT64_MAX : g->now + dr;
}

/* A transaction marker (Kafka's rule): kept as it is while data of its
 * transaction remains before it; once none does, it gets a delete horizon
 * (so read_committed readers that saw the data still see the end of the
 * transaction for delete.retention.ms) and goes at the first rewrite after
 * that horizon. */
static int marker_batch(group_out_t *g, const uint8_t *b, size_t len, int64_t base,
                        const ls_batch_info_t *h)
{
    if (txn_data_take(g, h->producer_id)) {
        out_batch(g, b, len, base, h->max_timestamp);
        return 0;
    }
    bool horizon_set = (h->attributes & ATTR_DELETE_HORIZON) != 0;
    if (horizon_set && h->base_timestamp <= g->now) {
        if (base >= g->log_last) { /* the log's last batch stays (file comment) */
            out_batch(g, b, len, base, h->max_timestamp);
            return 0;
        }
        /* an abort marker goes with its aborted record (file comment); past
         * GROUP_MAX_ABORTS of them the rest wait for the next swap */
        const ls_aborted_t *a = ls_aborted_list_of_marker(g->aborted, h->producer_id, base);
        if (!a || g->naborts_gone < GROUP_MAX_ABORTS) {
            if (a) g->aborts_gone[g->naborts_gone++] = a->first_offset;
            g->changed = true;
            g->st->markers_dropped++;
            return 0;
        }
    }
    int64_t horizon = horizon_set ? h->base_timestamp : new_horizon(g);
    if (!g->min_horizon || horizon < g->min_horizon)
        g->min_horizon = horizon; /* the index entry says when to come back */
    if (horizon_set) {
        out_batch(g, b, len, base, h->max_timestamp);
        return 0;
    }
    filt_t f = {.keep_all = true, .kept = h->record_count, .st = g->st, .base = base};
    return rebuild_batch(g, b, len, base, h, &f, horizon);
}

static int rewrite_batch(void *arg, const uint8_t *b, size_t len, int64_t base)
{
    group_out_t *g = arg;
    ls_batch_info_t h;
    ls_batch_header_parse(b, &h);
    if (g->merge) {
        out_batch(g, b, len, base, h.max_timestamp);
        return 0;
    }
    if (h.control) return marker_batch(g, b, len, base, &h);
    if (aborted_batch(g->aborted, &h, base)) {
        g->changed = true;
        g->st->records_read += (uint64_t)h.record_count;
        g->st->aborted_dropped += (uint64_t)h.record_count;
        return 0;
    }
    filt_t f = {.m = g->m,
                .now = g->now,
                .base = base,
                .st = g->st,
                .horizon_set = (h.attributes & ATTR_DELETE_HORIZON) != 0,
                .horizon = h.base_timestamp,
                .all_tombstones_latest = true};
    if (ls_records_foreach(b, len, MAX_DECOMPRESSED, filt_record, &f) != LS_RB_OK) return -1;
    g->st->records_read += (uint64_t)(f.kept + f.dropped);
    g->st->records_kept += (uint64_t)f.kept;
    bool set_horizon = !f.horizon_set && f.tombstone_kept && f.all_tombstones_latest;
    if (f.kept == 0 && base + h.last_offset_delta < g->log_last) {
        g->changed = true;
        return 0;
    }
    if (f.kept == 0) { /* the log's last batch stays as it is (file comment) */
        if (h.transactional) txn_data_note(g, h.producer_id);
        out_batch(g, b, len, base, h.max_timestamp);
        return 0;
    }
    if (h.transactional) txn_data_note(g, h.producer_id); /* its marker stays */
    int64_t horizon = set_horizon ? new_horizon(g) : f.horizon_set ? f.horizon : 0;
    if (f.tombstone_kept && horizon > 0 && (!g->min_horizon || horizon < g->min_horizon))
        g->min_horizon = horizon; /* the index entry says when to come back */
    if (f.dropped == 0 && !set_horizon) {
        out_batch(g, b, len, base, h.max_timestamp);
        return 0;
    }
    return rebuild_batch(g, b, len, base, &h, &f, set_horizon ? horizon : 0);
}

/* ------------------------------------------------------------- deletions */

static int marker_key(char *out, size_t cap, int64_t log_id, const char *object)
{
    return snprintf(out, cap, LS_KEY_KCGC "%016llx/%s", (unsigned long long)log_id, object);
}

/* Step 0: replaced objects past their grace, and orphans of crashed calls. */
static void collect(ls_meta_t *meta, ls_objstore_t *os, int64_t log_id, const kc_index_t *ix,
                    int64_t now, int64_t grace, ls_kc_stats_t *st)
{
    char prefix[64];
    snprintf(prefix, sizeof prefix, LS_KEY_KCGC "%016llx/", (unsigned long long)log_id);
    ls_kvlist_t l;
    if (ls_meta_scan_prefix(meta, prefix, 0, &l) == LS_OK) {
        size_t plen = strlen(prefix);
        for (size_t i = 0; i < l.n; i++) {
            long long at = strtoll((const char *)l.v[i].val, NULL, 10);
            if (at + grace > now) continue;
            const char *object = (const char *)l.v[i].key + plen;
            ls_status s = ls_objstore_del(os, object);
            if (s != LS_OK && s != LS_ENOTFOUND) {
                LS_WARN_RL("compact", "deleting replaced object %s failed: %s (will retry)", object,
                           ls_status_str(s));
                continue;
            }
            if (s == LS_OK) st->objects_deleted++;
            ls_meta_del(meta, (const char *)l.v[i].key);
        }
        ls_kvlist_free(&l);
    }
    /* key-compacted objects no entry names: a call died before its swap */
    char co_prefix[64];
    ls_co_prefix(co_prefix, sizeof co_prefix, log_id);
    ls_objinfo_t *objs = NULL;
    size_t n = 0;
    if (ls_objstore_list(os, co_prefix, &objs, &n) != LS_OK) return;
    for (size_t i = 0; i < n; i++) {
        const char *key = objs[i].key;
        if (strstr(key, ".k") == NULL || objs[i].mtime_ms + grace > now) continue;
        bool named = false;
        for (size_t j = 0; j < ix->n && !named; j++)
            named = strcmp(ix->e[j].object, key) == 0;
        if (named) continue;
        char mk[256];
        marker_key(mk, sizeof mk, log_id, key);
        ls_kv_t kv;
        if (ls_meta_get(meta, mk, &kv) == LS_OK) { /* replaced: its marker decides */
            ls_kv_free(&kv);
            continue;
        }
        if (ls_objstore_del(os, key) == LS_OK) {
            st->objects_deleted++;
            LS_INFO("compact",
                    "log %016llx: deleted %s, written by a key compaction that did not "
                    "finish",
                    (unsigned long long)log_id, key);
        }
    }
    ls_objinfo_free(objs, n);
}

/* -------------------------------------------------------------- the call */

/* Step 3 for entries [gs, ge]: 1 swapped, 0 nothing to change, -1 stop. */
static int rewrite_group(ls_meta_t *meta, ls_objstore_t *os, int64_t log_id, const kc_index_t *ix,
                         size_t gs, size_t ge, group_out_t *g, const ls_meta_cmp_t *fence,
                         ls_kc_swapped_fn swapped, void *arg)
{
    ls_kc_stats_t *st = g->st;
    ls_buf_init(&g->obj);
    ls_buf_append(&g->obj, LS_CO_MAGIC, 8);
    g->n = 0;
    g->max_ts = -1;
    g->min_horizon = 0;
    g->changed = false;
    g->naborts_gone = 0;
    for (size_t i = gs; i <= ge; i++) {
        const ls_idx_entry_t *e = &ix->e[i];
        if (e->kind != LS_IDX_KCO || g->merge) g->changed = true; /* dirty become clean */
        ls_buf_t body;
        ls_status s = read_entry(os, e, &body, st);
        if (s == LS_OK) s = each_batch(body.data, body.len, rewrite_batch, g);
        ls_buf_free(&body);
        if (s != LS_OK) {
            LS_WARN_RL("compact",
                       "log %016llx: key compaction of %s [%lld, %lld] failed: %s "
                       "(will retry)",
                       (unsigned long long)log_id, e->object, (long long)e->first_offset,
                       (long long)e->last_offset, ls_status_str(s));
            st->failures++;
            return -1;
        }
    }
    if (!g->changed && ge == gs) return 0;
    int64_t first = ix->e[gs].first_offset, last = ix->e[ge].last_offset;
    size_t body_len = g->obj.len - LS_CO_HEADER_SIZE;
    ls_co_footer_encode(&g->obj, log_id, first, last, g->ents, g->n);
    uint64_t gen;
    ls_random_bytes(&gen, sizeof gen);
    char key[160];
    ls_kco_key(key, sizeof key, log_id, first, last, (int64_t)(gen >> 1));
    struct iovec iov = {g->obj.data, g->obj.len};
    ls_status s = ls_objstore_put(os, key, &iov, 1, LS_OBJSTORE_PUT_CREATE_ONLY);
    if (s != LS_OK) {
        LS_WARN_RL("compact", "log %016llx: writing %s failed: %s (will retry)",
                   (unsigned long long)log_id, key, ls_status_str(s));
        st->failures++;
        return -1;
    }
    st->bytes_written += g->obj.len;
    ls_crashpoint("keycompact.object_written");
    ls_idx_entry_t ne = {.kind = g->merge ? LS_IDX_CO : LS_IDX_KCO,
                         .first_offset = first,
                         .last_offset = last,
                         .max_timestamp = g->max_ts,
                         .entries = g->n,
                         .pos = LS_CO_HEADER_SIZE,
                         .len = (uint32_t)body_len,
                         .object = key,
                         .delete_horizon_ms = g->min_horizon};
    size_t n = ge - gs + 1;
    ls_meta_cmp_t cmps[1 + GROUP_MAX_ENTRIES];
    ls_meta_op_t ops[2 * GROUP_MAX_ENTRIES + GROUP_MAX_ABORTS];
    char mkeys[GROUP_MAX_ENTRIES][256];
    char akeys[GROUP_MAX_ABORTS][96];
    char at[24];
    snprintf(at, sizeof at, "%" PRId64, g->now);
    size_t nc = 0, no = 0;
    cmps[nc++] = *fence;
    ls_buf_t val;
    ls_buf_init(&val);
    ls_idx_encode(&ne, &val);
    for (size_t i = 0; i < n; i++) {
        const ls_kv_t *kv = &ix->l.v[gs + i];
        cmps[nc++] = (ls_meta_cmp_t){
            .kind = LS_META_CMP_MOD_REV, .key = kv->key, .klen = kv->klen, .rev = kv->mod_rev};
        if (i < n - 1)
            ops[no++] = (ls_meta_op_t){.kind = LS_META_OP_DEL, .key = kv->key, .klen = kv->klen};
        else
            ops[no++] = (ls_meta_op_t){.kind = LS_META_OP_PUT,
                                       .key = kv->key,
                                       .klen = kv->klen,
                                       .val = val.data,
                                       .vlen = val.len};
        int ml = marker_key(mkeys[i], sizeof mkeys[i], log_id, ix->e[gs + i].object);
        ops[no++] = (ls_meta_op_t){.kind = LS_META_OP_PUT,
                                   .key = mkeys[i],
                                   .klen = (size_t)ml,
                                   .val = at,
                                   .vlen = strlen(at)};
    }
    for (size_t i = 0; i < g->naborts_gone; i++) {
        int al = ls_log_abort_key(akeys[i], sizeof akeys[i], log_id, g->aborts_gone[i]);
        ops[no++] = (ls_meta_op_t){.kind = LS_META_OP_DEL, .key = akeys[i], .klen = (size_t)al};
    }
    s = ls_meta_txn(meta, cmps, nc, ops, no, NULL);
    ls_buf_free(&val);
    if (s != LS_OK) {
        /* the object is an orphan now: step 0 of a later call deletes it */
        if (s == LS_ECONFLICT)
            st->conflicts++;
        else {
            st->failures++;
            LS_WARN_RL("compact",
                       "log %016llx: key compaction swap of [%lld, %lld] failed: %s "
                       "(will retry)",
                       (unsigned long long)log_id, (long long)first, (long long)last,
                       ls_status_str(s));
        }
        return -1;
    }
    ls_crashpoint("keycompact.swapped");
    if (g->merge) {
        st->merges++;
        st->entries_merged += n;
    } else {
        st->swaps++;
    }
    if (swapped) swapped(arg, log_id, &ne, g->aborts_gone, g->naborts_gone);
    LS_DEBUG("compact", "log %016llx: [%lld, %lld] %s into %s (%zu entries, %u batches)",
             (unsigned long long)log_id, (long long)first, (long long)last,
             g->merge ? "merged" : "key-compacted", key, n, g->n);
    return 1;
}

/* ------------------------------------------------- merging small objects */

/* Which CO entries may form a merge run (ls_tier_fits_fn): CO entries with
 * contiguous offsets whose max timestamps lie within the merge span. */
typedef struct merge_fit {
    const kc_index_t *ix;
    const ls_kc_policy_t *p;
} merge_fit_t;

static bool merge_fits(void *arg, size_t first, size_t next, uint64_t *bytes)
{
    const merge_fit_t *m = arg;
    const ls_idx_entry_t *x = &m->ix->e[next];
    *bytes = x->len;
    if (x->kind != LS_IDX_CO) return false;
    return next == first ||
           (x->first_offset == m->ix->e[next - 1].last_offset + 1 &&
            x->max_timestamp - m->ix->e[first].max_timestamp <= m->p->merge_span_ms);
}

/* The first run at or after entry `from` that the design note lets merge:
 * entries [*gs, *ge]; false when there is none. */
static bool next_merge(const kc_index_t *ix, size_t from, const ls_kc_policy_t *p,
                       int64_t group_bytes, size_t *gs, size_t *ge)
{
    ls_tier_rule_t rule = {.min_items = MERGE_MIN_ENTRIES,
                           .max_items = GROUP_MAX_ENTRIES,
                           .max_bytes = (uint64_t)group_bytes,
                           .growth = MERGE_GROWTH};
    merge_fit_t m = {ix, p};
    return ls_tier_next_run(ix->n, from, &rule, merge_fits, &m, gs, ge);
}

/* Merges every run next_merge finds (under the claim), in offset order. */
static void merge_log(ls_meta_t *meta, ls_objstore_t *os, int64_t log_id, const kc_index_t *ix,
                      const ls_kc_policy_t *p, const ls_kc_limits_t *lim, int64_t now,
                      const ls_meta_cmp_t *fence, ls_kc_swapped_fn swapped, void *arg,
                      ls_kc_stats_t *st)
{
    group_out_t g = {.merge = true, .now = now, .st = st};
    int merges = 0;
    size_t gs, ge;
    for (size_t from = 0; next_merge(ix, from, p, lim->group_bytes, &gs, &ge); from = ge + 1) {
        if (lim->max_swaps > 0 && merges >= lim->max_swaps) break;
        int r = rewrite_group(meta, os, log_id, ix, gs, ge, &g, fence, swapped, arg);
        ls_buf_free(&g.obj);
        if (r < 0) break;
        merges += r;
    }
    ls_free(g.ents);
}

/* Whether replaced objects of log_id wait for deletion (one key read). */
static bool has_markers(ls_meta_t *meta, int64_t log_id)
{
    char prefix[64];
    snprintf(prefix, sizeof prefix, LS_KEY_KCGC "%016llx/", (unsigned long long)log_id);
    ls_kvlist_t l;
    if (ls_meta_scan_prefix(meta, prefix, 1, &l) != LS_OK) return false;
    bool any = l.n > 0;
    ls_kvlist_free(&l);
    return any;
}

ls_status ls_kc_log(ls_meta_t *meta, ls_objstore_t *os, int64_t log_id, const ls_kc_policy_t *p,
                    const ls_kc_limits_t *lim, int64_t now_ms, ls_kc_claim_fn claim,
                    ls_kc_swapped_fn swapped, void *arg, ls_kc_stats_t *st)
{
    kc_index_t ix;
    ls_status s;
    kc_plan_t pl = {0};
    bool merge = !p->compact && p->merge;
    size_t gs, ge;
    /* nothing at or past the LSO is cleaned (the head is read before the
     * index and the aborted records: every transaction with data below that
     * LSO has ended and is in them) */
    int64_t lso = INT64_MAX, span = 0;
    /* a log that is neither compacted (any more) nor asked to merge costs one
     * key read when the caller asks it to look for replaced objects */
    if (p->compact || merge) {
        if (p->compact && (s = ls_log_stable_read(meta, log_id, &lso, &span)) != LS_OK) return s;
        if ((s = index_load(meta, log_id, &ix)) != LS_OK) return s;
        if (p->compact)
            pl = plan(&ix, p, now_ms, lso);
        else
            pl.due = next_merge(&ix, 0, p, lim->group_bytes, &gs, &ge);
        index_free(&ix);
    }
    if (!pl.due && !(lim->check_markers && has_markers(meta, log_id))) return LS_OK;
    ls_meta_cmp_t fence;
    if (claim(arg, log_id, &fence) != LS_OK) return LS_OK;
    /* under the claim: look again (another owner may have worked meanwhile) */
    if (p->compact && (s = ls_log_stable_read(meta, log_id, &lso, &span)) != LS_OK) return s;
    if ((s = index_load(meta, log_id, &ix)) != LS_OK) return s;
    collect(meta, os, log_id, &ix, now_ms, lim->grace_ms, st);
    if (merge) {
        merge_log(meta, os, log_id, &ix, p, lim, now_ms, &fence, swapped, arg, st);
        index_free(&ix);
        return LS_OK;
    }
    pl = plan(&ix, p, now_ms, lso);
    if (!p->compact || !pl.due) {
        index_free(&ix);
        return LS_OK;
    }
    ls_aborted_list_t aborted = {0};
    s = ls_log_aborted_read(meta, log_id, ix.e[0].first_offset, ix.e[pl.m - 1].last_offset, span,
                            &aborted);
    if (s != LS_OK) {
        LS_WARN_RL("compact",
                   "log %016llx: reading its aborted transactions failed: %s; key compaction "
                   "waits",
                   (unsigned long long)log_id, ls_status_str(s));
        st->failures++;
        index_free(&ix);
        return s;
    }
    /* step 2: the key map over the dirty entries */
    keymap_t m;
    map_init(&m, lim->map_bytes);
    size_t end = pl.m - 1;
    for (size_t j = pl.k; j < pl.m; j++) {
        ls_buf_t body;
        s = read_entry(os, &ix.e[j], &body, st);
        map_ctx_t mc = {.m = &m, .aborted = &aborted, .st = st};
        if (s == LS_OK) s = each_batch(body.data, body.len, map_batch, &mc);
        ls_buf_free(&body);
        if (s != LS_OK) {
            LS_WARN_RL("compact",
                       "log %016llx: reading %s for key compaction failed: %s (will "
                       "retry)",
                       (unsigned long long)log_id, ix.e[j].object, ls_status_str(s));
            st->failures++;
            ls_free(m.v);
            ls_aborted_list_free(&aborted);
            index_free(&ix);
            return s;
        }
        if (m.full) {
            /* the rest stays dirty for the next call; the entry that did not
             * fit is cleaned only when it is the first dirty one (progress),
             * so a newly clean entry normally had every key mapped (a
             * tombstone whose key was not mapped never gets a horizon) */
            end = j > pl.k ? j - 1 : j;
            st->map_full++;
            break;
        }
    }
    /* step 3: groups from the index start, swapped in offset order */
    group_out_t g = {.m = &m,
                     .aborted = &aborted,
                     .now = now_ms,
                     .delete_retention_ms = p->delete_retention_ms,
                     .log_last = ix.e[ix.n - 1].last_offset,
                     .st = st};
    int swaps = 0;
    bool any = false;
    for (size_t gs = 0; gs <= end;) {
        if (lim->max_swaps > 0 && swaps >= lim->max_swaps) break;
        size_t ge = gs;
        uint64_t bytes = ix.e[gs].len;
        while (ge + 1 <= end && ge + 1 - gs < GROUP_MAX_ENTRIES &&
               bytes + ix.e[ge + 1].len <= (uint64_t)lim->group_bytes) {
            ge++;
            bytes += ix.e[ge].len;
        }
        int r = rewrite_group(meta, os, log_id, &ix, gs, ge, &g, &fence, swapped, arg);
        ls_buf_free(&g.obj);
        if (r < 0) break;
        if (r > 0) {
            swaps++;
            any = true;
        }
        gs = ge + 1;
    }
    if (any) st->cleans++;
    ls_free(g.ents);
    ls_free(g.txn_data);
    ls_free(m.v);
    ls_aborted_list_free(&aborted);
    index_free(&ix);
    return LS_OK;
}
