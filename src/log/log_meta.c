#include "log/log_meta.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "meta/meta_keys.h"

/* A head is written as version 2 only when it holds transaction state, so
 * logs never written transactionally keep the version 1 bytes; as version 3
 * (version 2 plus each producer's last batch timestamp) once a producer has
 * such a timestamp, which idempotent appends set. */
enum {
    HEAD_VERSION = 1,
    HEAD_VERSION_TXN = 2,
    HEAD_VERSION_TS = 3,
    IDX_VERSION = 1,
    START_VERSION = 1
};
/* An index entry with a delete horizon (key-compacted objects holding
 * tombstones) is written as version 2: the horizon follows len. */
enum { IDX_VERSION_HORIZON = 2 };

static bool head_has_txn_state(const ls_head_t *h)
{
    if (h->max_aborted_span) return true;
    for (int i = 0; i < h->nproducers; i++)
        if (h->producers[i].txn_seq || h->producers[i].txn_first_offset ||
            h->producers[i].ended_seq)
            return true;
    return false;
}

/* Version 3 carries producers' last batch timestamps: written only when one
 * is known, so heads without them keep their older bytes. */
static bool head_has_timestamps(const ls_head_t *h)
{
    for (int i = 0; i < h->nproducers; i++)
        if (h->producers[i].last_timestamp) return true;
    return false;
}

int ls_log_head_key(char *out, size_t cap, int64_t log_id)
{
    return snprintf(out, cap, LS_KEY_HEAD "%016llx", (unsigned long long)log_id);
}

int ls_log_idx_prefix(char *out, size_t cap, int64_t log_id)
{
    return snprintf(out, cap, LS_KEY_LOG "%016llx" LS_KEY_LOG_IDX, (unsigned long long)log_id);
}

int ls_log_idx_key(char *out, size_t cap, int64_t log_id, int64_t last_offset)
{
    return snprintf(out, cap, LS_KEY_LOG "%016llx" LS_KEY_LOG_IDX "%020lld",
                    (unsigned long long)log_id, (long long)last_offset);
}

int ls_log_start_key(char *out, size_t cap, int64_t log_id)
{
    return snprintf(out, cap, LS_KEY_START "%016llx", (unsigned long long)log_id);
}

static int64_t log_id_from_key(const char *prefix, const char *key, size_t klen)
{
    size_t plen = strlen(prefix);
    if (klen != plen + 16 || memcmp(key, prefix, plen) != 0) return -1;
    char hex[17];
    memcpy(hex, key + plen, 16);
    hex[16] = 0;
    char *end;
    unsigned long long v = strtoull(hex, &end, 16);
    return *end ? -1 : (int64_t)v;
}

int ls_log_idx_key_parse(const char *key, size_t klen, int64_t *log_id, int64_t *last_offset)
{
    /* LS_KEY_LOG + 16 hex + LS_KEY_LOG_IDX + 20 digits */
    static const char pre[] = LS_KEY_LOG, mid[] = LS_KEY_LOG_IDX;
    size_t pl = sizeof pre - 1, ml = sizeof mid - 1;
    if (klen != pl + 16 + ml + 20 || memcmp(key, pre, pl) != 0 ||
        memcmp(key + pl + 16, mid, ml) != 0)
        return -1;
    char hex[17], dec[21], *end;
    memcpy(hex, key + pl, 16);
    hex[16] = 0;
    memcpy(dec, key + pl + 16 + ml, 20);
    dec[20] = 0;
    unsigned long long id = strtoull(hex, &end, 16);
    if (*end) return -1;
    long long last = strtoll(dec, &end, 10);
    if (*end) return -1;
    *log_id = (int64_t)id;
    *last_offset = (int64_t)last;
    return 0;
}

int64_t ls_log_id_from_head_key(const char *key, size_t klen)
{
    return log_id_from_key(LS_KEY_HEAD, key, klen);
}

int64_t ls_log_id_from_start_key(const char *key, size_t klen)
{
    return log_id_from_key(LS_KEY_START, key, klen);
}

/* Bounded big-endian cursor for decoding values (sticky failure). */
typedef struct {
    const uint8_t *p, *end;
    int bad;
} cur_t;

static uint64_t cur_be(cur_t *c, int n)
{
    if (c->bad || c->end - c->p < n) {
        c->bad = 1;
        return 0;
    }
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v = v << 8 | *c->p++;
    return v;
}

static void put_be(ls_buf_t *b, uint64_t v, int n)
{
    uint8_t tmp[8];
    for (int i = n - 1; i >= 0; i--, v >>= 8)
        tmp[i] = (uint8_t)v;
    ls_buf_append(b, tmp, (size_t)n);
}

void ls_head_encode(const ls_head_t *h, ls_buf_t *out)
{
    bool ts = head_has_timestamps(h);
    bool txn = ts || head_has_txn_state(h); /* version 3 has version 2's fields */
    put_be(out, ts ? HEAD_VERSION_TS : txn ? HEAD_VERSION_TXN : HEAD_VERSION, 1);
    put_be(out, h->fenced ? 1 : 0, 1);
    put_be(out, (uint64_t)h->next_offset, 8);
    put_be(out, (uint64_t)h->log_start, 8);
    put_be(out, (uint64_t)h->size_bytes, 8);
    put_be(out, (uint64_t)h->max_timestamp, 8);
    put_be(out, (uint64_t)h->max_timestamp_offset, 8);
    put_be(out, (uint64_t)h->nproducers, 2);
    for (int i = 0; i < h->nproducers; i++) {
        const ls_pstate_t *ps = &h->producers[i];
        put_be(out, (uint64_t)ps->producer_id, 8);
        put_be(out, (uint16_t)ps->epoch, 2);
        put_be(out, (uint64_t)ps->nbatches, 1);
        for (int j = 0; j < ps->nbatches; j++) {
            put_be(out, (uint32_t)ps->batches[j].first_seq, 4);
            put_be(out, (uint32_t)ps->batches[j].last_seq, 4);
            put_be(out, (uint64_t)ps->batches[j].base_offset, 8);
        }
        if (txn) {
            put_be(out, (uint64_t)ps->txn_seq, 8);
            put_be(out, (uint64_t)ps->txn_first_offset, 8);
            put_be(out, (uint64_t)ps->ended_seq, 8);
        }
        if (ts) put_be(out, (uint64_t)ps->last_timestamp, 8);
    }
    if (txn) put_be(out, (uint64_t)h->max_aborted_span, 8);
}

ls_status ls_head_decode(const uint8_t *p, size_t len, ls_head_t *h)
{
    memset(h, 0, sizeof *h);
    cur_t c = {p, p + len, 0};
    uint64_t version = cur_be(&c, 1);
    if (version != HEAD_VERSION && version != HEAD_VERSION_TXN && version != HEAD_VERSION_TS)
        return LS_ECORRUPT;
    bool ts = version == HEAD_VERSION_TS;
    bool txn = version != HEAD_VERSION;
    uint64_t flags = cur_be(&c, 1);
    if (flags & ~(uint64_t)1)
        return LS_ECORRUPT; /* unknown flag bits: written by a newer version or damaged */
    h->fenced = flags & 1;
    h->next_offset = (int64_t)cur_be(&c, 8);
    h->log_start = (int64_t)cur_be(&c, 8);
    h->size_bytes = (int64_t)cur_be(&c, 8);
    h->max_timestamp = (int64_t)cur_be(&c, 8);
    h->max_timestamp_offset = (int64_t)cur_be(&c, 8);
    int n = (int)cur_be(&c, 2);
    if (c.bad || (size_t)n * 11 > (size_t)(c.end - c.p)) return LS_ECORRUPT;
    h->producers = LS_NEWN(ls_pstate_t, n ? n : 1);
    h->nproducers = n;
    for (int i = 0; i < n && !c.bad; i++) {
        ls_pstate_t *ps = &h->producers[i];
        ps->producer_id = (int64_t)cur_be(&c, 8);
        ps->epoch = (int16_t)cur_be(&c, 2);
        ps->nbatches = (int)cur_be(&c, 1);
        if (ps->nbatches > LS_PRODUCER_BATCHES) c.bad = 1;
        for (int j = 0; j < ps->nbatches && !c.bad; j++) {
            ps->batches[j].first_seq = (int32_t)cur_be(&c, 4);
            ps->batches[j].last_seq = (int32_t)cur_be(&c, 4);
            ps->batches[j].base_offset = (int64_t)cur_be(&c, 8);
        }
        if (txn) {
            ps->txn_seq = (int64_t)cur_be(&c, 8);
            ps->txn_first_offset = (int64_t)cur_be(&c, 8);
            ps->ended_seq = (int64_t)cur_be(&c, 8);
            /* an open transaction lies inside the log, after every ended one */
            if (ps->txn_seq < 0 || ps->ended_seq < 0 ||
                (ps->txn_seq == 0 && ps->txn_first_offset != 0) ||
                (ps->txn_seq > 0 && (ps->txn_seq <= ps->ended_seq || ps->txn_first_offset < 0 ||
                                     ps->txn_first_offset >= h->next_offset)))
                c.bad = 1;
        }
        if (ts) ps->last_timestamp = (int64_t)cur_be(&c, 8);
    }
    if (txn) {
        h->max_aborted_span = (int64_t)cur_be(&c, 8);
        /* canonical: version 2 only with transaction state, 3 only with a
         * producer's timestamp */
        if (h->max_aborted_span < 0 ||
            (!c.bad && (ts ? !head_has_timestamps(h) : !head_has_txn_state(h))))
            c.bad = 1;
    }
    if (c.bad || c.p != c.end || h->next_offset < h->log_start || h->log_start < 0) {
        ls_head_clear(h);
        return LS_ECORRUPT;
    }
    return LS_OK;
}

void ls_head_clear(ls_head_t *h)
{
    ls_free(h->producers);
    h->producers = NULL;
    h->nproducers = 0;
}

void ls_start_encode(const ls_start_t *s, ls_buf_t *out)
{
    put_be(out, START_VERSION, 1);
    put_be(out, (uint64_t)s->log_start, 8);
    put_be(out, (uint64_t)s->trimmed_bytes, 8);
    put_be(out, (uint64_t)s->index_start, 8);
    put_be(out, (uint64_t)s->swept_below, 8);
}

ls_status ls_start_decode(const uint8_t *p, size_t len, ls_start_t *s)
{
    cur_t c = {p, p + len, 0};
    if (cur_be(&c, 1) != START_VERSION) return LS_ECORRUPT;
    s->log_start = (int64_t)cur_be(&c, 8);
    s->trimmed_bytes = (int64_t)cur_be(&c, 8);
    s->index_start = (int64_t)cur_be(&c, 8);
    s->swept_below = (int64_t)cur_be(&c, 8);
    if (c.bad || c.p != c.end || s->log_start < 0 || s->trimmed_bytes < 0 || s->index_start < 0 ||
        s->swept_below < 0 || s->swept_below > s->index_start)
        return LS_ECORRUPT;
    return LS_OK;
}

void ls_idx_encode(const ls_idx_entry_t *e, ls_buf_t *out)
{
    size_t klen = strlen(e->object);
    put_be(out, e->delete_horizon_ms > 0 ? IDX_VERSION_HORIZON : IDX_VERSION, 1);
    put_be(out, (uint64_t)e->kind, 1);
    put_be(out, (uint64_t)e->first_offset, 8);
    put_be(out, (uint64_t)e->last_offset, 8);
    put_be(out, (uint64_t)e->max_timestamp, 8);
    put_be(out, e->entries, 4);
    put_be(out, e->pos, 8);
    put_be(out, e->len, 4);
    if (e->delete_horizon_ms > 0) put_be(out, (uint64_t)e->delete_horizon_ms, 8);
    put_be(out, klen, 2);
    ls_buf_append(out, e->object, klen);
}

ls_status ls_idx_decode(const uint8_t *p, size_t len, ls_idx_entry_t *e)
{
    memset(e, 0, sizeof *e);
    cur_t c = {p, p + len, 0};
    uint64_t version = cur_be(&c, 1);
    if (version != IDX_VERSION && version != IDX_VERSION_HORIZON) return LS_ECORRUPT;
    e->kind = (ls_idx_kind)cur_be(&c, 1);
    e->first_offset = (int64_t)cur_be(&c, 8);
    e->last_offset = (int64_t)cur_be(&c, 8);
    e->max_timestamp = (int64_t)cur_be(&c, 8);
    e->entries = (uint32_t)cur_be(&c, 4);
    e->pos = cur_be(&c, 8);
    e->len = (uint32_t)cur_be(&c, 4);
    if (version == IDX_VERSION_HORIZON) e->delete_horizon_ms = (int64_t)cur_be(&c, 8);
    size_t klen = (size_t)cur_be(&c, 2);
    if (c.bad || klen == 0 || klen != (size_t)(c.end - c.p) || e->last_offset < e->first_offset ||
        (e->kind != LS_IDX_WAL && e->kind != LS_IDX_CO && e->kind != LS_IDX_KCO &&
         e->kind != LS_IDX_TABLE) ||
        (e->kind == LS_IDX_TABLE && e->entries != 0) ||
        (version == IDX_VERSION_HORIZON && (e->kind != LS_IDX_KCO || e->delete_horizon_ms <= 0)) ||
        memchr(c.p, 0, klen))
        return LS_ECORRUPT;
    e->object = ls_strndup((const char *)c.p, klen);
    return LS_OK;
}

void ls_idx_clear(ls_idx_entry_t *e)
{
    ls_free(e->object);
    e->object = NULL;
}
