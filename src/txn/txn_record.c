/* Stored form of a transactional id's record (docs/FORMATS.md,
 * "Transactions"), written and read with base/binrec.h. The decoder is
 * bounded and refuses, as LS_ECORRUPT, anything that does not decode whole
 * or breaks the invariants of txn.h. */
#include <string.h>

#include "base/alloc.h"
#include "base/binrec.h"
#include "base/buf.h"
#include "txn/txn.h"

#define REC_VERSION 1

uint8_t *ls_txn_record_encode(const ls_txn_record_t *r, size_t *len)
{
    ls_buf_t b;
    ls_buf_init(&b);
    ls_buf_append_u8(&b, REC_VERSION);
    ls_bw_str(&b, r->tid);
    ls_buf_append_u8(&b, (uint8_t)r->state);
    ls_bw_u64(&b, (uint64_t)r->producer_id);
    ls_bw_u16(&b, (uint16_t)r->producer_epoch);
    ls_bw_u64(&b, (uint64_t)r->prev_producer_id);
    ls_bw_u16(&b, (uint16_t)r->prev_producer_epoch);
    ls_bw_u32(&b, (uint32_t)r->timeout_ms);
    ls_bw_u64(&b, (uint64_t)r->txn_seq);
    ls_bw_u64(&b, (uint64_t)r->txn_start_ms);
    ls_bw_u64(&b, (uint64_t)r->update_ms);
    ls_bw_u64(&b, (uint64_t)r->marker_producer_id);
    ls_bw_u16(&b, (uint16_t)r->marker_epoch);
    ls_bw_u32(&b, (uint32_t)r->npartitions);
    for (int i = 0; i < r->npartitions; i++) {
        ls_bw_str(&b, r->partitions[i].topic);
        ls_bw_u64(&b, (uint64_t)r->partitions[i].stream_no);
        ls_bw_u32(&b, (uint32_t)r->partitions[i].partition);
    }
    ls_bw_u32(&b, (uint32_t)r->ngroups);
    for (int i = 0; i < r->ngroups; i++)
        ls_bw_str(&b, r->groups[i]);
    return ls_buf_steal(&b, len);
}

ls_status ls_txn_record_decode(const uint8_t *p, size_t len, ls_txn_record_t *out)
{
    memset(out, 0, sizeof *out);
    ls_br_t r = ls_br_init(p, len);
    if (ls_br_u8(&r) != REC_VERSION) return LS_ECORRUPT;
    out->tid = ls_br_str(&r);
    out->state = (ls_txn_state)ls_br_u8(&r);
    out->producer_id = (int64_t)ls_br_u64(&r);
    out->producer_epoch = (int16_t)ls_br_u16(&r);
    out->prev_producer_id = (int64_t)ls_br_u64(&r);
    out->prev_producer_epoch = (int16_t)ls_br_u16(&r);
    out->timeout_ms = (int32_t)ls_br_u32(&r);
    out->txn_seq = (int64_t)ls_br_u64(&r);
    out->txn_start_ms = (int64_t)ls_br_u64(&r);
    out->update_ms = (int64_t)ls_br_u64(&r);
    out->marker_producer_id = (int64_t)ls_br_u64(&r);
    out->marker_epoch = (int16_t)ls_br_u16(&r);
    uint32_t n = ls_br_u32(&r);
    /* each partition needs at least a string length, i64 and i32 */
    if (r.err || n > LS_TXN_MAX_PARTICIPANTS || n > (size_t)(r.end - r.p) / 14) goto corrupt;
    out->partitions = LS_NEWN(ls_txn_partition_t, n ? n : 1);
    for (uint32_t i = 0; i < n && !r.err; i++) {
        ls_txn_partition_t *tp = &out->partitions[i];
        out->npartitions = (int)i + 1;
        tp->topic = ls_br_str(&r);
        tp->stream_no = (int64_t)ls_br_u64(&r);
        tp->partition = (int32_t)ls_br_u32(&r);
        if (!r.err && !tp->topic) r.err = true;
    }
    n = ls_br_u32(&r);
    if (r.err || n > LS_TXN_MAX_PARTICIPANTS || n > (size_t)(r.end - r.p) / 2) goto corrupt;
    out->groups = LS_NEWN(char *, n ? n : 1);
    for (uint32_t i = 0; i < n && !r.err; i++) {
        out->ngroups = (int)i + 1;
        out->groups[i] = ls_br_str(&r);
        if (!r.err && !out->groups[i]) r.err = true;
    }
    if (r.err || r.p != r.end || ls_txn_record_check(out)) goto corrupt;
    return LS_OK;
corrupt:
    ls_txn_record_free(out);
    return LS_ECORRUPT;
}
