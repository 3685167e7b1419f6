/* Transactional offsets of consumer groups (design note: group_txn.h). */
#include "group/group_txn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/binrec.h"
#include "base/buf.h"
#include "base/diag.h"
#include "group/group_service.h"
#include "meta/meta_keys.h"

#define PENDING_VERSION 1
/* Lost compares in a row before the marker gives up (the completion retries). */
#define MARKER_TRIES 16

static char *buf_cstr(ls_buf_t *b)
{
    ls_buf_append_u8(b, 0);
    size_t n;
    return (char *)ls_buf_steal(b, &n);
}

char *ls_group_key_pending_prefix(const char *group_id)
{
    ls_buf_t b;
    ls_buf_init(&b);
    ls_buf_append(&b, LS_KEY_GROUP_PENDING, strlen(LS_KEY_GROUP_PENDING));
    ls_buf_append_keypart(&b, group_id);
    ls_buf_append_u8(&b, '/');
    return buf_cstr(&b);
}

/* The keys of one producer's pending offsets of a group. */
static char *key_producer_prefix(const char *group_id, int64_t producer_id)
{
    ls_buf_t b;
    ls_buf_init(&b);
    ls_buf_append(&b, LS_KEY_GROUP_PENDING, strlen(LS_KEY_GROUP_PENDING));
    ls_buf_append_keypart(&b, group_id);
    ls_buf_printf(&b, "/%lld/", (long long)producer_id);
    return buf_cstr(&b);
}

char *ls_group_key_pending(const char *group_id, int64_t producer_id, const char *topic,
                           int32_t partition)
{
    ls_buf_t b;
    ls_buf_init(&b);
    ls_buf_append(&b, LS_KEY_GROUP_PENDING, strlen(LS_KEY_GROUP_PENDING));
    ls_buf_append_keypart(&b, group_id);
    ls_buf_printf(&b, "/%lld/%s/%010d", (long long)producer_id, topic, partition);
    return buf_cstr(&b);
}

static bool parse_decimal(const char *p, const char *end, int64_t max, int64_t *out)
{
    if (p == end) return false;
    int64_t v = 0;
    for (; p < end; p++) {
        if (*p < '0' || *p > '9' || v > (max - (*p - '0')) / 10) return false;
        v = v * 10 + (*p - '0');
    }
    *out = v;
    return true;
}

bool ls_group_pending_key_parse(const char *rest, int64_t *producer_id, char **topic,
                                int32_t *partition)
{
    const char *s1 = strchr(rest, '/');
    const char *s2 = s1 ? strrchr(rest, '/') : NULL;
    int64_t part;
    if (!s1 || s2 == s1 || !parse_decimal(rest, s1, INT64_MAX, producer_id) ||
        !parse_decimal(s2 + 1, s2 + strlen(s2), INT32_MAX, &part))
        return false;
    *partition = (int32_t)part;
    *topic = ls_strndup(s1 + 1, (size_t)(s2 - s1 - 1));
    return true;
}

uint8_t *ls_group_pending_encode(int64_t txn_seq, const ls_group_offset_t *o, size_t *len)
{
    size_t rlen;
    uint8_t *rec = ls_group_offset_encode(o, &rlen);
    ls_buf_t b;
    ls_buf_init(&b);
    ls_buf_append_u8(&b, PENDING_VERSION);
    ls_bw_u64(&b, (uint64_t)txn_seq);
    ls_buf_append(&b, rec, rlen);
    ls_free(rec);
    return ls_buf_steal(&b, len);
}

ls_status ls_group_pending_decode(const uint8_t *p, size_t len, int64_t *txn_seq,
                                  const uint8_t **rec, size_t *rlen)
{
    ls_br_t r = ls_br_init(p, len);
    if (ls_br_u8(&r) != PENDING_VERSION) return LS_ECORRUPT;
    *txn_seq = (int64_t)ls_br_u64(&r);
    if (r.err) return LS_ECORRUPT;
    ls_group_offset_t o;
    if (ls_group_offset_decode(r.p, (size_t)(r.end - r.p), &o) != LS_OK) return LS_ECORRUPT;
    ls_free(o.metadata);
    *rec = r.p;
    *rlen = (size_t)(r.end - r.p);
    return LS_OK;
}

/* ------------------------------------------------------------- marker */

/* One txn of the marker: compares and ops over keys it owns. */
typedef struct settle {
    ls_meta_cmp_t *cmps;
    ls_meta_op_t *ops;
    char **keys; /* owned: committed-offset keys */
    int ncmp, nops, nkeys;
} settle_t;

static void settle_free(settle_t *t)
{
    for (int i = 0; i < t->nkeys; i++)
        ls_free(t->keys[i]);
    ls_free(t->keys);
    ls_free(t->cmps);
    ls_free(t->ops);
}

/* Adds the settling of one pending entry kv to t. */
static ls_status settle_entry(ls_meta_t *meta, const char *group_id, size_t gplen,
                              const ls_kv_t *kv, int64_t txn_seq, bool commit, settle_t *t)
{
    int64_t seq;
    const uint8_t *rec = NULL;
    size_t rlen = 0;
    bool readable = ls_group_pending_decode(kv->val, kv->vlen, &seq, &rec, &rlen) == LS_OK;
    if (!readable)
        LS_WARN("group", "group '%s': dropping unreadable pending offset record %s", group_id,
                (const char *)kv->key);
    else if (seq > txn_seq)
        return LS_OK; /* a later transaction's: not this marker's */
    t->cmps[t->ncmp++] = (ls_meta_cmp_t){
        .kind = LS_META_CMP_MOD_REV, .key = kv->key, .klen = kv->klen, .rev = kv->mod_rev};
    t->ops[t->nops++] = (ls_meta_op_t){.kind = LS_META_OP_DEL, .key = kv->key, .klen = kv->klen};
    if (!readable || !commit || seq != txn_seq) return LS_OK;
    int64_t pid;
    char *topic;
    int32_t partition;
    if (!ls_group_pending_key_parse((const char *)kv->key + gplen, &pid, &topic, &partition))
        return LS_OK; /* not a key this module writes: dropped */
    char *ck = ls_group_key_offset(group_id, topic, partition);
    ls_free(topic);
    t->keys[t->nkeys++] = ck;
    ls_kv_t cur;
    int64_t crev = 0;
    ls_status st = ls_meta_get(meta, ck, &cur);
    if (st == LS_OK) {
        crev = cur.mod_rev;
        ls_kv_free(&cur);
    } else if (st != LS_ENOTFOUND) {
        return st;
    }
    if (crev > kv->mod_rev) return LS_OK; /* committed after the TxnOffsetCommit: it wins */
    t->cmps[t->ncmp++] =
        (ls_meta_cmp_t){.kind = LS_META_CMP_MOD_REV, .key = ck, .klen = strlen(ck), .rev = crev};
    t->ops[t->nops++] = (ls_meta_op_t){
        .kind = LS_META_OP_PUT, .key = ck, .klen = strlen(ck), .val = rec, .vlen = rlen};
    return LS_OK;
}

ls_status ls_group_txn_marker(ls_meta_t *meta, const char *group_id, int64_t producer_id,
                              int64_t txn_seq, bool commit)
{
    char *gprefix = ls_group_key_pending_prefix(group_id);
    size_t gplen = strlen(gprefix);
    char *prefix = key_producer_prefix(group_id, producer_id);
    char *from = ls_strdup(prefix);
    int per_txn = ls_meta_max_txn_ops(meta) / 4; /* per entry: 2 compares + 2 ops */
    if (per_txn < 1) per_txn = 1;
    int conflicts = 0;
    ls_status st = LS_OK;
    for (;;) {
        ls_kvlist_t l;
        st = ls_meta_scan_from(meta, prefix, from, (size_t)per_txn, &l);
        if (st != LS_OK) break;
        settle_t t = {.cmps = LS_NEWN(ls_meta_cmp_t, 2 * l.n + 1),
                      .ops = LS_NEWN(ls_meta_op_t, 2 * l.n + 1),
                      .keys = LS_NEWN(char *, l.n + 1)};
        for (size_t i = 0; i < l.n && st == LS_OK; i++)
            st = settle_entry(meta, group_id, gplen, &l.v[i], txn_seq, commit, &t);
        if (st == LS_OK && t.nops > 0)
            st = ls_meta_txn(meta, t.cmps, (size_t)t.ncmp, t.ops, (size_t)t.nops, NULL);
        settle_free(&t);
        bool more = l.more && l.n > 0;
        if (st == LS_OK && more) {
            /* past the last key read: pending keys have fixed-form tails, so
             * no key lies between it and it + "\x01" */
            ls_free(from);
            size_t kl = l.v[l.n - 1].klen;
            from = ls_malloc(kl + 2);
            memcpy(from, l.v[l.n - 1].key, kl);
            from[kl] = '\x01';
            from[kl + 1] = 0;
        }
        ls_kvlist_free(&l);
        if (st == LS_ECONFLICT && ++conflicts < MARKER_TRIES) {
            st = LS_OK; /* the group changed under us: read the same page again */
            continue;
        }
        if (st != LS_OK || !more) break;
    }
    ls_free(from);
    ls_free(prefix);
    ls_free(gprefix);
    return st;
}
