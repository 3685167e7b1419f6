/* Transactions on one log, pure logic (design note: log_txn.h). */
#include "log/log_txn.h"

#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/binrec.h"
#include "meta/meta_keys.h"

#define ABORTED_VERSION 1

static ls_pstate_t *find(const ls_head_t *h, int64_t pid)
{
    for (int i = 0; i < h->nproducers; i++)
        if (h->producers[i].producer_id == pid) return &h->producers[i];
    return NULL;
}

ls_txb_verdict ls_log_txn_check_batch(const ls_head_t *h, int64_t pid, int16_t epoch,
                                      int64_t txn_seq)
{
    const ls_pstate_t *ps = find(h, pid);
    if (!ps) return LS_TXB_OK;
    if (epoch < ps->epoch) return LS_TXB_FENCED;
    if (txn_seq == 0) return ps->txn_seq ? LS_TXB_OPEN_TRANSACTION : LS_TXB_OK;
    if (txn_seq <= ps->ended_seq) return LS_TXB_ENDED;
    /* Another transaction still open here: its marker has not landed in this
     * head, so the coordinator cannot have begun this one (completion
     * precedes the next add). An earlier batch is late; a later one means the
     * head itself is stale (a broker's cached view, before the watch brings
     * the marker another broker wrote). */
    if (ps->txn_seq && ps->txn_seq != txn_seq)
        return ps->txn_seq > txn_seq ? LS_TXB_ENDED : LS_TXB_BEHIND;
    return LS_TXB_OK;
}

void ls_log_txn_apply_batch(ls_head_t *h, int64_t pid, int64_t txn_seq, int64_t base_offset)
{
    ls_pstate_t *ps = find(h, pid);
    if (!ps || txn_seq == 0 || ps->txn_seq == txn_seq) return;
    ps->txn_seq = txn_seq;
    ps->txn_first_offset = base_offset;
}

ls_marker_action ls_log_txn_marker_plan(const ls_head_t *h, const ls_log_marker_t *m)
{
    const ls_pstate_t *ps = find(h, m->producer_id);
    if (ps && ps->ended_seq >= m->txn_seq) return LS_MARK_NOOP;
    return LS_MARK_APPLY;
}

bool ls_log_txn_marker_apply(ls_head_t *h, const ls_log_marker_t *m, ls_marker_action act,
                             int64_t marker_offset, ls_aborted_t *out)
{
    if (act == LS_MARK_NOOP) return false;
    ls_pstate_t *ps = find(h, m->producer_id);
    if (!ps) {
        h->producers = ls_realloc(h->producers, (size_t)(h->nproducers + 1) * sizeof *ps);
        ps = &h->producers[h->nproducers++];
        memset(ps, 0, sizeof *ps);
        ps->producer_id = m->producer_id;
        ps->epoch = m->epoch;
    }
    if (m->epoch > ps->epoch) { /* Kafka's marker fencing: sequences restart */
        ps->epoch = m->epoch;
        ps->nbatches = 0;
    }
    bool aborted = false;
    if (ps->txn_seq == m->txn_seq) {
        if (!m->commit) {
            out->producer_id = m->producer_id;
            out->first_offset = ps->txn_first_offset;
            out->marker_offset = marker_offset;
            if (marker_offset - ps->txn_first_offset > h->max_aborted_span)
                h->max_aborted_span = marker_offset - ps->txn_first_offset;
            aborted = true;
        }
        ps->txn_seq = 0;
        ps->txn_first_offset = 0;
    }
    ps->ended_seq = m->txn_seq;
    return aborted;
}

int64_t ls_log_txn_lso(const ls_head_t *h)
{
    int64_t lso = h->next_offset;
    for (int i = 0; i < h->nproducers; i++)
        if (h->producers[i].txn_seq && h->producers[i].txn_first_offset < lso)
            lso = h->producers[i].txn_first_offset;
    return lso;
}

/* ---- aborted-transactions index ---- */

int ls_log_abort_key(char *out, size_t cap, int64_t log_id, int64_t first_offset)
{
    return snprintf(out, cap, LS_KEY_LOG "%016llx" LS_KEY_LOG_ABORT "%020lld",
                    (unsigned long long)log_id, (long long)first_offset);
}

int ls_log_abort_key_parse(const char *key, size_t klen, int64_t *log_id)
{
    static const char pre[] = LS_KEY_LOG, mid[] = LS_KEY_LOG_ABORT;
    size_t pl = sizeof pre - 1, ml = sizeof mid - 1;
    if (klen != pl + 16 + ml + 20 || memcmp(key, pre, pl) != 0 ||
        memcmp(key + pl + 16, mid, ml) != 0)
        return -1;
    int64_t id = 0;
    for (size_t i = pl; i < pl + 16; i++) {
        char c = key[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0) return -1;
        id = id << 4 | d;
    }
    for (size_t i = pl + 16 + ml; i < klen; i++)
        if (key[i] < '0' || key[i] > '9') return -1;
    *log_id = id;
    return 0;
}

void ls_aborted_encode(const ls_aborted_t *a, ls_buf_t *out)
{
    ls_buf_append_u8(out, ABORTED_VERSION);
    ls_bw_u64(out, (uint64_t)a->producer_id);
    ls_bw_u64(out, (uint64_t)a->first_offset);
    ls_bw_u64(out, (uint64_t)a->marker_offset);
}

ls_status ls_aborted_decode(const uint8_t *p, size_t len, ls_aborted_t *out)
{
    ls_br_t r = ls_br_init(p, len);
    if (ls_br_u8(&r) != ABORTED_VERSION) return LS_ECORRUPT;
    out->producer_id = (int64_t)ls_br_u64(&r);
    out->first_offset = (int64_t)ls_br_u64(&r);
    out->marker_offset = (int64_t)ls_br_u64(&r);
    if (r.err || r.p != r.end || out->producer_id < 0 || out->first_offset < 0 ||
        out->marker_offset <= out->first_offset)
        return LS_ECORRUPT;
    return LS_OK;
}

/* First index whose first_offset >= x. */
static int lower_bound(const ls_aborted_list_t *l, int64_t x)
{
    int lo = 0, hi = l->n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (l->v[mid].first_offset < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void push(ls_aborted_list_t *l, int at, const ls_aborted_t *a)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 8;
        l->v = ls_realloc(l->v, (size_t)l->cap * sizeof *l->v);
    }
    memmove(&l->v[at + 1], &l->v[at], (size_t)(l->n - at) * sizeof *l->v);
    l->v[at] = *a;
    l->n++;
}

void ls_aborted_list_put(ls_aborted_list_t *l, const ls_aborted_t *a)
{
    int i = lower_bound(l, a->first_offset);
    if (i < l->n && l->v[i].first_offset == a->first_offset)
        l->v[i] = *a;
    else
        push(l, i, a);
}

void ls_aborted_list_trim(ls_aborted_list_t *l, int64_t log_start)
{
    int k = 0;
    for (int i = 0; i < l->n; i++)
        if (l->v[i].marker_offset >= log_start) l->v[k++] = l->v[i];
    l->n = k;
}

int ls_aborted_list_range(const ls_aborted_list_t *l, int64_t a, int64_t b,
                          int64_t max_aborted_span, ls_aborted_list_t *out)
{
    int found = 0;
    int64_t from = a - max_aborted_span;
    for (int i = lower_bound(l, from < 0 ? 0 : from); i < l->n && l->v[i].first_offset <= b; i++)
        if (l->v[i].marker_offset >= a) {
            push(out, out->n, &l->v[i]);
            found++;
        }
    return found;
}

bool ls_aborted_list_find(const ls_aborted_list_t *l, int64_t pid, int64_t offset)
{
    for (int i = lower_bound(l, offset + 1) - 1; i >= 0; i--)
        if (l->v[i].producer_id == pid && l->v[i].marker_offset > offset) return true;
    return false;
}

const ls_aborted_t *ls_aborted_list_of_marker(const ls_aborted_list_t *l, int64_t pid,
                                              int64_t marker_offset)
{
    for (int i = lower_bound(l, marker_offset) - 1; i >= 0; i--)
        if (l->v[i].producer_id == pid && l->v[i].marker_offset == marker_offset) return &l->v[i];
    return NULL;
}

void ls_aborted_list_remove(ls_aborted_list_t *l, int64_t first_offset)
{
    int i = lower_bound(l, first_offset);
    if (i >= l->n || l->v[i].first_offset != first_offset) return;
    memmove(&l->v[i], &l->v[i + 1], (size_t)(l->n - i - 1) * sizeof l->v[0]);
    l->n--;
}

int ls_log_abort_key_first(const char *key, size_t klen, int64_t *first_offset)
{
    int64_t id;
    if (ls_log_abort_key_parse(key, klen, &id) != 0) return -1;
    int64_t v = 0;
    for (size_t i = klen - 20; i < klen; i++) {
        if (v > (INT64_MAX - 9) / 10) return -1;
        v = v * 10 + (key[i] - '0');
    }
    *first_offset = v;
    return 0;
}

void ls_aborted_list_free(ls_aborted_list_t *l)
{
    ls_free(l->v);
    memset(l, 0, sizeof *l);
}
