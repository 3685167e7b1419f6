/* Unfolding in-table ranges back into compacted objects (docs/ARCHITECTURE.md
 * "The third copy of a table log").
 *
 * A raw append table log may hold index entries of kind LS_IDX_TABLE: their
 * records are rows of the table, no object holds them, and the log reader
 * rebuilds batches from the rows (log/cold_source.h). That is right only
 * while the table holds the records byte for byte and nothing else rewrites
 * its rows: a table that is disabled, renamed, made typed (value.format or
 * key.format leaving raw) or upsert (write.mode=upsert, or the topic turning
 * cleanup.policy=compact: key compaction needs batches and stops at
 * in-table entries) is no longer a source. Before that table may change or
 * lose files, every in-table entry of its logs becomes compacted objects
 * (COs) again: "unfold".
 *
 * The reference. /ls/coldref/<log_id> names the table (namespace, name,
 * store prefix) whose rows a log's in-table entries are. The compaction
 * pass writes it (ls_unfold_ref_ensure) before the log's first in-table
 * swap and for as long as the log's table is a valid source; the entries
 * themselves name no table (docs/FORMATS.md), so the reference is what
 * finds the rows after a rename or a policy change, and what tells the pass
 * a table still serves some log ("no reference names it": its files may go).
 *
 * States of one log (the index and the reference are the only state; each
 * transition is one metadata txn, so a crash anywhere leaves one of them):
 *
 *   VALID     reference names the log's current table, which is a valid
 *             source: in-table entries may be added (compaction pass)
 *      | policy change / disable / rename (seen by the pass's plan)
 *      v
 *   UNFOLDING reference present, table no longer a valid source: the table's
 *             commits and maintenance wait (compactor.c); each call of
 *             ls_unfold_log turns chunks of in-table entries into COs
 *      | no in-table entry left: the reference is deleted (txn compares
 *      | the reference's revision and the caller's claim)
 *      v
 *   FREE      no reference: the table may be written under its new policy,
 *             rewritten, expired or dropped as far as this log is concerned
 *
 * One chunk of an in-table entry E = [f, l] stored under key(l) at revision R:
 *   1. read [f, ...] through the source until about chunk_bytes of batches
 *      (the first batch whole), each batch checked (framing, CRC, records,
 *      offsets dense from f, inside E) before anything is written: a chunk
 *      [f, a];
 *   2. PUT the CO (LSCO format, real offsets, footer) create-only under
 *      co/<log>/<f>-<a>.k<R>.co. The key is a function of the entry's
 *      revision, so a retry after a crash (same revision) finds its own
 *      object: equal bytes are reused, other bytes (the table's files were
 *      rewritten in between: same records, other batch cuts) make a
 *      randomly named object instead (never an overwrite: a stalled former
 *      owner may be writing the same key);
 *   3. one txn, fenced by the caller's claim on the log and compare
 *      mod_rev(key(l)) == R: if a < l, PUT key(a) = the CO entry [f, a]
 *      (compare key(a) absent) and PUT key(l) = in-table [a + 1, l];
 *      else PUT key(l) = the CO entry [f, l]. Keys are last offsets and the
 *      reader's lookup is a ceiling, so every offset is covered by exactly
 *      one entry before and after (no hole, no overlap at any instant).
 * A txn whose answer is lost is resolved by reading the entry's key back:
 * it holds our value only if the txn was applied (the rest or the CO entry,
 * whose object name holds the revision R), so the caller learns of the
 * change exactly when the store has it.
 * Crash points: "unfold.object_written" (after 2: the index is unchanged,
 * the retry reuses or orphans the object) and "unfold.swapped" (after 3:
 * the next call continues at a + 1). An object no entry names (a crash
 * between 2 and 3 whose retry cut differently) lies below the log's
 * high watermark and goes with the log's trims (log_trim.c deletes the
 * log's objects below its start) and key compaction's sweep of unnamed
 * objects.
 *
 * Memory: one chunk (about chunk_bytes plus one batch) at a time; a call
 * writes at most max_chunks objects, so a large backlog spreads over
 * passes. Thread: the compaction worker (blocking calls), one log at a
 * time under its claim. */
#include "lake/unfold.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/crashpoint.h"
#include "base/diag.h"
#include "base/compress.h"
#include "base/uuid.h"
#include "lake/cold_table.h"
#include "log/co_format.h"
#include "records/records.h"
#include "table/table_catalog.h"
#include "meta/meta_keys.h"

#define STALE_RETRIES 3
#define PAGE 256

/* ----------------------------------------------------------- reference */

int ls_unfold_ref_key(char *out, size_t cap, int64_t log_id)
{
    return snprintf(out, cap, LS_KEY_COLDREF "%016llx", (unsigned long long)log_id);
}

static ls_status ref_decode(const ls_kv_t *kv, ls_unfold_ref_t *r)
{
    memset(r, 0, sizeof *r);
    size_t plen = strlen(LS_KEY_COLDREF);
    if (kv->klen != plen + 16) return LS_ECORRUPT;
    char hex[17];
    memcpy(hex, kv->key + plen, 16);
    hex[16] = 0;
    char *end;
    r->log_id = (int64_t)strtoull(hex, &end, 16);
    if (*end) return LS_ECORRUPT;
    json_error_t je;
    json_t *j = json_loadb((const char *)kv->val, kv->vlen, 0, &je);
    const char *ns = j ? json_string_value(json_object_get(j, "ns")) : NULL;
    const char *t = j ? json_string_value(json_object_get(j, "table")) : NULL;
    const char *p = j ? json_string_value(json_object_get(j, "prefix")) : NULL;
    ls_status st = LS_ECORRUPT;
    if (ns && t && p && *ns && *t && *p && strlen(ns) < sizeof r->ns &&
        strlen(t) < sizeof r->table && strlen(p) < sizeof r->prefix) {
        snprintf(r->ns, sizeof r->ns, "%s", ns);
        snprintf(r->table, sizeof r->table, "%s", t);
        snprintf(r->prefix, sizeof r->prefix, "%s", p);
        r->mod_rev = kv->mod_rev;
        st = LS_OK;
    }
    json_decref(j);
    return st;
}

ls_status ls_unfold_refs_list(ls_meta_t *meta, ls_unfold_ref_t **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    ls_kvlist_t l;
    ls_status st = ls_meta_scan_prefix(meta, LS_KEY_COLDREF, 0, &l);
    if (st != LS_OK) return st;
    ls_unfold_ref_t *v = LS_NEWN(ls_unfold_ref_t, l.n ? l.n : 1);
    size_t k = 0;
    for (size_t i = 0; i < l.n; i++) {
        if (ref_decode(&l.v[i], &v[k]) == LS_OK)
            k++;
        else
            LS_WARN_RL("compact", "cold reference %.*s is not valid; ignoring it", (int)l.v[i].klen,
                       (const char *)l.v[i].key);
    }
    ls_kvlist_free(&l);
    *out = v;
    *n = k;
    return LS_OK;
}

ls_status ls_unfold_ref_read(ls_meta_t *meta, int64_t log_id, ls_unfold_ref_t *out)
{
    char key[64];
    ls_unfold_ref_key(key, sizeof key, log_id);
    ls_kv_t kv;
    ls_status st = ls_meta_get(meta, key, &kv);
    if (st != LS_OK) return st;
    st = ref_decode(&kv, out);
    ls_kv_free(&kv);
    return st;
}

ls_status ls_unfold_ref_ensure(ls_meta_t *meta, int64_t log_id, const char *ns, const char *table,
                               const char *prefix, char *held, size_t heldlen)
{
    char key[64];
    ls_unfold_ref_key(key, sizeof key, log_id);
    ls_kv_t kv;
    ls_status st = ls_meta_get(meta, key, &kv);
    if (st == LS_OK) {
        ls_unfold_ref_t r;
        ls_status dst = ref_decode(&kv, &r);
        ls_kv_free(&kv);
        if (dst == LS_OK && !strcmp(r.ns, ns) && !strcmp(r.table, table) &&
            !strcmp(r.prefix, prefix))
            return LS_OK;
        if (dst == LS_OK) {
            if (held) snprintf(held, heldlen, "%s.%s", r.ns, r.table);
            return LS_ECONFLICT;
        }
        /* not valid: rewritten below (the entries it guarded need a table;
         * the log's current one is the only candidate left) */
        LS_WARN("compact", "cold reference %s is not valid; rewriting it for %s.%s", key, ns,
                table);
    } else if (st != LS_ENOTFOUND) {
        return st;
    }
    json_t *j = json_pack("{s:s, s:s, s:s}", "ns", ns, "table", table, "prefix", prefix);
    char *val = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    if (!val) return LS_EINVAL; /* not UTF-8 */
    ls_meta_cmp_t cmp = {.kind = LS_META_CMP_MOD_REV,
                         .key = key,
                         .klen = strlen(key),
                         .rev = st == LS_OK ? kv.mod_rev : 0};
    ls_meta_op_t op = {
        .kind = LS_META_OP_PUT, .key = key, .klen = strlen(key), .val = val, .vlen = strlen(val)};
    st = ls_meta_txn(meta, &cmp, 1, &op, 1, NULL);
    free(val);
    return st;
}

/* Deletes log_id's reference once no in-table entry is left (the caller
 * just saw none, under its claim). */
static ls_status ref_release(ls_meta_t *meta, int64_t log_id, const ls_meta_cmp_t *fence,
                             bool *released)
{
    *released = false;
    char key[64];
    ls_unfold_ref_key(key, sizeof key, log_id);
    ls_kv_t kv;
    ls_status st = ls_meta_get(meta, key, &kv);
    if (st == LS_ENOTFOUND) return LS_OK;
    if (st != LS_OK) return st;
    ls_meta_cmp_t cmps[2];
    size_t nc = 0;
    if (fence) cmps[nc++] = *fence;
    cmps[nc++] = (ls_meta_cmp_t){
        .kind = LS_META_CMP_MOD_REV, .key = key, .klen = strlen(key), .rev = kv.mod_rev};
    ls_kv_free(&kv);
    ls_meta_op_t op = {.kind = LS_META_OP_DEL, .key = key, .klen = strlen(key)};
    st = ls_meta_txn(meta, cmps, nc, &op, 1, NULL);
    *released = st == LS_OK;
    return st;
}

/* ---------------------------------------------------------------- index */

/* The first in-table entry of log_id with last offset >= from: LS_OK with
 * *found, its key's revision in *rev. */
static ls_status next_in_table(ls_meta_t *meta, int64_t log_id, int64_t from, ls_idx_entry_t *e,
                               int64_t *rev, bool *found)
{
    *found = false;
    char prefix[64], start[96];
    ls_log_idx_prefix(prefix, sizeof prefix, log_id);
    for (;;) {
        ls_log_idx_key(start, sizeof start, log_id, from);
        ls_kvlist_t l;
        ls_status st = ls_meta_scan_from(meta, prefix, start, PAGE, &l);
        if (st != LS_OK) return st;
        for (size_t i = 0; i < l.n && !*found; i++) {
            ls_idx_entry_t x;
            if (ls_idx_decode(l.v[i].val, l.v[i].vlen, &x) != LS_OK) {
                LS_ERROR("compact", "log %016llx: corrupt index entry %.*s; unfolding stops there",
                         (unsigned long long)log_id, (int)l.v[i].klen, (const char *)l.v[i].key);
                ls_kvlist_free(&l);
                return LS_ECORRUPT;
            }
            from = x.last_offset + 1;
            if (x.kind == LS_IDX_TABLE) {
                *e = x;
                *rev = l.v[i].mod_rev;
                *found = true;
            } else {
                ls_idx_clear(&x);
            }
        }
        bool more = l.more && l.n > 0;
        ls_kvlist_free(&l);
        if (*found || !more) return LS_OK;
    }
}

ls_status ls_unfold_pending(ls_meta_t *meta, int64_t log_id, int64_t *n, int64_t *records)
{
    *n = *records = 0;
    int64_t from = 0;
    for (;;) {
        ls_idx_entry_t e;
        int64_t rev;
        bool found;
        ls_status st = next_in_table(meta, log_id, from, &e, &rev, &found);
        if (st != LS_OK || !found) return st;
        (*n)++;
        *records += e.last_offset - e.first_offset + 1;
        from = e.last_offset + 1;
        ls_idx_clear(&e);
    }
}

/* ---------------------------------------------------------------- chunk */

typedef struct chunk {
    ls_buf_t obj; /* "LSCO0001" + batches */
    ls_co_entry_t *ents;
    uint32_t n, cap;
    int64_t first, last; /* offsets the chunk holds */
    int64_t max_ts;
    uint64_t records;
} chunk_t;

static void chunk_free(chunk_t *c)
{
    ls_buf_free(&c->obj);
    ls_free(c->ents);
    memset(c, 0, sizeof *c);
}

/* Checks the batches the source returned for [cur, to] and appends them:
 * framing, magic, CRC and records (ls_records_validate), the first at cur,
 * offsets dense (an in-table range has no gaps), none past to. */
static ls_status take_batches(chunk_t *c, int64_t log_id, const ls_buf_t *got, int64_t to,
                              int64_t next, char *err, size_t errlen)
{
    int64_t cur = c->last + 1;
    for (size_t p = 0; p < got->len;) {
        if (got->len - p < LS_RB_HEADER_SIZE) {
            snprintf(err, errlen, "a batch at byte %zu of the rows of %lld is truncated", p,
                     (long long)cur);
            return LS_ECORRUPT;
        }
        size_t size = 12 + (size_t)ls_be32_get(got->data + p + LS_RB_OFF_LENGTH);
        if (size < LS_RB_HEADER_SIZE || size > got->len - p) {
            snprintf(err, errlen, "a batch at byte %zu of the rows of %lld is truncated", p,
                     (long long)cur);
            return LS_ECORRUPT;
        }
        ls_batch_info_t bi;
        int nb = 0;
        char why[256];
        if (ls_records_validate(got->data + p, size, size, &bi, 1, &nb, why, sizeof why) !=
                LS_RB_OK ||
            nb != 1) {
            snprintf(err, errlen, "the batch rebuilt at offset %lld is not valid: %s",
                     (long long)cur, why);
            return LS_ECORRUPT;
        }
        int64_t last = bi.base_offset + bi.last_offset_delta;
        if (bi.base_offset != cur || bi.control || bi.record_count != bi.last_offset_delta + 1 ||
            last > to) {
            snprintf(err, errlen,
                     "the table answered a batch [%lld, %lld] of %d records where offset %lld "
                     "(up to %lld) was due",
                     (long long)bi.base_offset, (long long)last, bi.record_count, (long long)cur,
                     (long long)to);
            return LS_ECORRUPT;
        }
        if (c->n == c->cap) {
            c->cap = c->cap ? c->cap * 2 : 64;
            c->ents = ls_realloc(c->ents, c->cap * sizeof *c->ents);
        }
        c->ents[c->n++] = (ls_co_entry_t){.base_offset = cur, .pos = (uint32_t)c->obj.len};
        ls_buf_append(&c->obj, got->data + p, size);
        if (bi.max_timestamp > c->max_ts) c->max_ts = bi.max_timestamp;
        c->records += (uint64_t)bi.record_count;
        c->last = last;
        cur = last + 1;
        p += size;
    }
    if (got->len == 0 || next != cur) {
        snprintf(err, errlen, "the table's rows from %lld ended at %lld but the source said %lld",
                 (long long)c->first, (long long)cur, (long long)next);
        return LS_ECORRUPT;
    }
    (void)log_id;
    return LS_OK;
}

/* Step 1: reads [from, to] until about chunk_bytes of batches. */
static ls_status read_chunk(const ls_cold_source_t *src, int64_t log_id, int64_t from, int64_t to,
                            size_t chunk_bytes, chunk_t *c, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    ls_buf_init(&c->obj);
    ls_buf_append(&c->obj, LS_CO_MAGIC, 8);
    c->first = from;
    c->last = from - 1;
    c->max_ts = -1;
    int stale = 0;
    while (c->last < to) {
        size_t body = c->obj.len - LS_CO_HEADER_SIZE;
        if (body >= chunk_bytes) break;
        ls_buf_t got;
        ls_buf_init(&got);
        int64_t next = c->last + 1;
        ls_status st = src->read(src->ctx, log_id, c->last + 1, to, chunk_bytes - body, &got, &next,
                                 err, errlen);
        if (st == LS_ENOTFOUND && ++stale <= STALE_RETRIES) { /* a stale plan: re-planned */
            ls_buf_free(&got);
            continue;
        }
        if (st == LS_OK) st = take_batches(c, log_id, &got, to, next, err, errlen);
        ls_buf_free(&got);
        if (st == LS_ENOTFOUND) /* still no live file holds the rows: they are lost */
            st = LS_ECORRUPT;
        if (st != LS_OK) return st;
    }
    return LS_OK;
}

/* Step 2: the object, create-only; *key gets its name. */
static ls_status put_object(ls_objstore_t *os, int64_t log_id, chunk_t *c, int64_t rev, char *key,
                            size_t keylen)
{
    ls_kco_key(key, keylen, log_id, c->first, c->last, rev);
    struct iovec iov = {c->obj.data, c->obj.len};
    ls_status st = ls_objstore_put(os, key, &iov, 1, LS_OBJSTORE_PUT_CREATE_ONLY);
    if (st != LS_EEXISTS) return st;
    ls_buf_t old;
    ls_buf_init(&old);
    st = ls_objstore_get(os, key, 0, UINT64_MAX, &old);
    bool same = st == LS_OK && old.len == c->obj.len && !memcmp(old.data, c->obj.data, old.len);
    ls_buf_free(&old);
    if (same) return LS_OK; /* a retry's own object */
    uint64_t gen;
    ls_random_bytes(&gen, sizeof gen);
    ls_kco_key(key, keylen, log_id, c->first, c->last, (int64_t)(gen >> 1));
    return ls_objstore_put(os, key, &iov, 1, LS_OBJSTORE_PUT_CREATE_ONLY);
}

/* Steps 1-3 for one chunk of e (its key's revision *rev, updated). 1: a
 * chunk swapped (e updated to what is left, or e->first_offset past
 * e->last_offset when the entry is done), 0: stopped (logged). */
static int unfold_chunk(ls_meta_t *meta, ls_objstore_t *os, int64_t log_id,
                        const ls_cold_source_t *src, size_t chunk_bytes, const ls_meta_cmp_t *fence,
                        ls_idx_entry_t *e, int64_t *rev, ls_unfold_put_fn put, void *arg,
                        ls_unfold_stats_t *stats)
{
    chunk_t c;
    char err[512] = "";
    ls_status st =
        read_chunk(src, log_id, e->first_offset, e->last_offset, chunk_bytes, &c, err, sizeof err);
    if (st != LS_OK) {
        if (st == LS_ECORRUPT)
            LS_ERROR("compact",
                     "log %016llx: reading in-table offsets [%lld, %lld] to turn them back into a "
                     "compacted object failed: %s; the range stays in the table",
                     (unsigned long long)log_id, (long long)e->first_offset,
                     (long long)e->last_offset, err);
        else
            LS_WARN_RL("compact",
                       "log %016llx: reading in-table offsets [%lld, %lld] failed: %s (%s); "
                       "will retry",
                       (unsigned long long)log_id, (long long)e->first_offset,
                       (long long)e->last_offset, ls_status_str(st), err);
        stats->failures++;
        chunk_free(&c);
        return 0;
    }
    size_t body_len = c.obj.len - LS_CO_HEADER_SIZE;
    ls_co_footer_encode(&c.obj, log_id, c.first, c.last, c.ents, c.n);
    char okey[160];
    st = put_object(os, log_id, &c, *rev, okey, sizeof okey);
    if (st != LS_OK) {
        LS_WARN_RL("compact", "log %016llx: writing %s failed: %s (will retry)",
                   (unsigned long long)log_id, okey, ls_status_str(st));
        stats->failures++;
        chunk_free(&c);
        return 0;
    }
    ls_crashpoint("unfold.object_written");
    ls_idx_entry_t co = {.kind = LS_IDX_CO,
                         .first_offset = c.first,
                         .last_offset = c.last,
                         .max_timestamp = c.max_ts,
                         .entries = c.n,
                         .pos = LS_CO_HEADER_SIZE,
                         .len = (uint32_t)body_len,
                         .object = okey};
    bool split = c.last < e->last_offset;
    ls_idx_entry_t rest = *e;
    rest.first_offset = c.last + 1;
    rest.len = e->len > body_len ? e->len - (uint32_t)body_len : 1;
    char ekey[96], ckey[96];
    ls_log_idx_key(ekey, sizeof ekey, log_id, e->last_offset);
    ls_log_idx_key(ckey, sizeof ckey, log_id, c.last);
    ls_buf_t vco, vrest;
    ls_buf_init(&vco);
    ls_buf_init(&vrest);
    ls_idx_encode(&co, &vco);
    ls_meta_cmp_t cmps[3];
    ls_meta_op_t ops[2];
    size_t nc = 0, no = 0;
    if (fence) cmps[nc++] = *fence;
    cmps[nc++] = (ls_meta_cmp_t){
        .kind = LS_META_CMP_MOD_REV, .key = ekey, .klen = strlen(ekey), .rev = *rev};
    if (split) {
        ls_idx_encode(&rest, &vrest);
        cmps[nc++] =
            (ls_meta_cmp_t){.kind = LS_META_CMP_MOD_REV, .key = ckey, .klen = strlen(ckey)};
        ops[no++] = (ls_meta_op_t){.kind = LS_META_OP_PUT,
                                   .key = ckey,
                                   .klen = strlen(ckey),
                                   .val = vco.data,
                                   .vlen = vco.len};
        ops[no++] = (ls_meta_op_t){.kind = LS_META_OP_PUT,
                                   .key = ekey,
                                   .klen = strlen(ekey),
                                   .val = vrest.data,
                                   .vlen = vrest.len};
    } else {
        ops[no++] = (ls_meta_op_t){.kind = LS_META_OP_PUT,
                                   .key = ekey,
                                   .klen = strlen(ekey),
                                   .val = vco.data,
                                   .vlen = vco.len};
    }
    st = ls_meta_txn(meta, cmps, nc, ops, no, NULL);
    if (st != LS_OK && st != LS_ECONFLICT) {
        /* the answer may be lost while the txn was applied: the entry's key
         * holds exactly our value only if it was (values name the object,
         * unique to this attempt's entry revision), so the index this
         * broker serves from is updated either way */
        const ls_buf_t *mine = split ? &vrest : &vco;
        ls_kv_t kv;
        if (ls_meta_get(meta, ekey, &kv) == LS_OK) {
            if (kv.vlen == mine->len && !memcmp(kv.val, mine->data, kv.vlen)) st = LS_OK;
            ls_kv_free(&kv);
        }
    }
    int done = 0;
    if (st == LS_OK) {
        ls_crashpoint("unfold.swapped");
        stats->objects_written++;
        stats->bytes_written += c.obj.len;
        stats->records += c.records;
        put(arg, log_id, &co);
        if (split) {
            put(arg, log_id, &rest);
            /* the revision the next chunk compares */
            ls_kv_t kv;
            ls_status gst = ls_meta_get(meta, ekey, &kv);
            if (gst == LS_OK) {
                *rev = kv.mod_rev;
                ls_kv_free(&kv);
                e->first_offset = rest.first_offset;
                e->len = rest.len;
                done = 1;
            }
        } else {
            stats->ranges_unfolded++;
            e->first_offset = e->last_offset + 1;
            done = 1;
        }
        LS_DEBUG("compact", "log %016llx: in-table [%lld, %lld] -> %s", (unsigned long long)log_id,
                 (long long)c.first, (long long)c.last, okey);
    } else if (st != LS_ECONFLICT) {
        LS_WARN_RL("compact",
                   "log %016llx: swapping in-table offsets [%lld, %lld] for %s failed: %s "
                   "(will retry)",
                   (unsigned long long)log_id, (long long)c.first, (long long)c.last, okey,
                   ls_status_str(st));
        stats->failures++;
    }
    ls_buf_free(&vco);
    ls_buf_free(&vrest);
    chunk_free(&c);
    return done;
}

ls_status ls_unfold_log(ls_meta_t *meta, ls_objstore_t *os, int64_t log_id,
                        const ls_cold_source_t *src, const ls_unfold_limits_t *lim,
                        const ls_meta_cmp_t *fence, ls_unfold_put_fn put, void *arg,
                        ls_unfold_stats_t *stats, int64_t *left)
{
    *left = 0;
    size_t chunk = lim->chunk_bytes ? lim->chunk_bytes : (size_t)64 << 20;
    int budget = lim->max_chunks > 0 ? lim->max_chunks : 64;
    int64_t from = 0;
    ls_status st;
    for (;;) {
        ls_idx_entry_t e;
        int64_t rev;
        bool found;
        st = next_in_table(meta, log_id, from, &e, &rev, &found);
        if (st != LS_OK) return st;
        if (!found) break;
        while (budget > 0 && e.first_offset <= e.last_offset) {
            budget--;
            if (!unfold_chunk(meta, os, log_id, src, chunk, fence, &e, &rev, put, arg, stats))
                break;
        }
        bool done = e.first_offset > e.last_offset;
        from = e.last_offset + 1;
        ls_idx_clear(&e);
        if (!done) {
            (*left)++; /* stopped (failure or budget): count what is left */
            int64_t n = 0, recs = 0;
            st = ls_unfold_pending(meta, log_id, &n, &recs);
            if (st == LS_OK) *left = n;
            return st;
        }
    }
    bool released;
    st = ref_release(meta, log_id, fence, &released);
    if (released) stats->refs_released++;
    if (st == LS_ECONFLICT) st = LS_OK; /* another change: looked at next pass */
    return st;
}

/* ------------------------------------------------- validity and the source */

bool ls_unfold_source_valid(const ls_stream_t *s, const ls_policy_t *p, char *why, size_t whylen)
{
    const char *no = NULL;
    if (!p->enabled)
        no = "lakestream.table.enabled is false";
    else if (p->value_typed)
        no = "lakestream.table.value.format is not raw";
    else if (p->key_typed)
        no = "lakestream.table.key.format is not raw";
    else if (p->upsert)
        no = "lakestream.table.write.mode is upsert";
    else if (p->changelog)
        no = "lakestream.table.changelog is true";
    else if (s && ls_stream_cleanup_policy(s).compact)
        no = "cleanup.policy has compact (key compaction needs the batches)";
    if (no && why) snprintf(why, whylen, "%s", no);
    return no == NULL;
}

_Static_assert(LS_UNFOLD_CODEC == LS_CODEC_LZ4, "LS_UNFOLD_CODEC is lz4");

typedef struct tsrc {
    ls_cold_source_t src; /* first: the source is the struct */
    ls_meta_t *meta;
    ls_objstore_t *os;
    ls_unfold_ref_t ref;
    bool log_append_time;
    ls_ice_table_t *t;
} tsrc_t;

static ls_status tsrc_read(void *ctx, int64_t log_id, int64_t from, int64_t to, size_t max_bytes,
                           ls_buf_t *out, int64_t *next, char *err, size_t errlen)
{
    tsrc_t *s = ctx;
    if (!s->t) {
        char e[256] = "";
        ls_status st = ls_tcat_open(s->meta, s->os, s->ref.ns, s->ref.table, s->ref.prefix, &s->t,
                                    e, sizeof e);
        if (st != LS_OK) {
            snprintf(err, errlen, "opening table %s.%s: %s (%s)", s->ref.ns, s->ref.table,
                     ls_status_str(st), e);
            /* a table that is gone while a log still names it: its rows are lost */
            return st == LS_ENOTFOUND ? LS_ECORRUPT : st;
        }
    }
    ls_cold_table_req_t q = {.partition = (int32_t)(log_id & (LS_MAX_PARTITIONS - 1)),
                             .from = from,
                             .to = to,
                             .codec = LS_UNFOLD_CODEC,
                             .log_append_time = s->log_append_time,
                             .batch_bytes = 256 * 1024,
                             .max_bytes = max_bytes};
    char e[512] = "";
    ls_status st = ls_cold_table_read(s->t, &q, out, next, NULL, e, sizeof e);
    if (st != LS_OK) {
        snprintf(err, errlen, "table %s.%s: %s", s->ref.ns, s->ref.table, e);
        if (st == LS_ENOTFOUND) { /* stale plan: the next read reloads */
            ls_ice_table_free(s->t);
            s->t = NULL;
        }
    }
    return st;
}

ls_cold_source_t *ls_unfold_table_source_new(ls_meta_t *meta, ls_objstore_t *os,
                                             const ls_unfold_ref_t *ref, bool log_append_time)
{
    tsrc_t *s = LS_NEW(tsrc_t);
    s->src = (ls_cold_source_t){tsrc_read, s};
    s->meta = meta;
    s->os = os;
    s->ref = *ref;
    s->log_append_time = log_append_time;
    return &s->src;
}

void ls_unfold_table_source_free(ls_cold_source_t *src)
{
    if (!src) return;
    tsrc_t *s = (tsrc_t *)src;
    if (s->t) ls_ice_table_free(s->t);
    ls_free(s);
}
