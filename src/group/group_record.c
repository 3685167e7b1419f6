/* Stored forms of a group's metadata and committed offsets (docs/FORMATS.md,
 * "Consumer groups"), written and read with base/binrec.h. Decoders are
 * bounded and report LS_ECORRUPT on any inconsistency. */
#include <string.h>

#include "base/alloc.h"
#include "base/binrec.h"
#include "base/buf.h"
#include "group/group.h"

/* Version 2 adds the group type after the members; classic groups are still
 * written as version 1, so brokers of before it read every classic group. */
#define REC_VERSION 1
#define REC_VERSION_TYPED 2
#define OFF_VERSION 1

const char *ls_group_type_name(ls_group_type_t t)
{
    switch (t) {
    case LS_GROUP_TYPE_CLASSIC: return "classic";
    case LS_GROUP_TYPE_CONSUMER: return "consumer";
    case LS_GROUP_TYPE_SHARE: return "share";
    case LS_GROUP_TYPE_STREAMS: return "streams";
    }
    return "classic";
}

uint8_t *ls_group_record_encode(const ls_group_record_t *rec, size_t *len)
{
    ls_buf_t b;
    ls_buf_init(&b);
    ls_buf_append_u8(&b, rec->type != LS_GROUP_TYPE_CLASSIC ? REC_VERSION_TYPED : REC_VERSION);
    ls_buf_append_u8(&b, rec->state == LS_GROUP_STABLE ? 1 : 0);
    ls_bw_u32(&b, (uint32_t)rec->generation);
    ls_bw_str(&b, rec->protocol_type);
    ls_bw_str(&b, rec->protocol_name);
    ls_bw_str(&b, rec->leader);
    ls_bw_u64(&b, (uint64_t)rec->state_ms);
    ls_bw_u32(&b, (uint32_t)rec->nmembers);
    for (int i = 0; i < rec->nmembers; i++) {
        const ls_group_record_member_t *m = &rec->members[i];
        ls_bw_str(&b, m->member_id);
        ls_bw_str(&b, m->instance_id);
        ls_bw_str(&b, m->client_id);
        ls_bw_str(&b, m->client_host);
        ls_bw_u32(&b, (uint32_t)m->session_timeout_ms);
        ls_bw_u32(&b, (uint32_t)m->rebalance_timeout_ms);
        ls_bw_bytes(&b, m->metadata, m->metadata_len);
        ls_bw_bytes(&b, m->assignment, m->assignment_len);
    }
    if (rec->type != LS_GROUP_TYPE_CLASSIC) {
        ls_buf_append_u8(&b, (uint8_t)rec->type);
        ls_bw_bytes(&b, rec->type_state ? rec->type_state : (const uint8_t *)"",
                    rec->type_state_len);
    }
    return ls_buf_steal(&b, len);
}

ls_status ls_group_record_decode(const uint8_t *p, size_t len, ls_group_record_t *out)
{
    memset(out, 0, sizeof *out);
    ls_br_t r = ls_br_init(p, len);
    uint8_t version = ls_br_u8(&r);
    if (version != REC_VERSION && version != REC_VERSION_TYPED) return LS_ECORRUPT;
    out->state = ls_br_u8(&r) == 1 ? LS_GROUP_STABLE : LS_GROUP_EMPTY;
    out->generation = (int32_t)ls_br_u32(&r);
    out->protocol_type = ls_br_str(&r);
    out->protocol_name = ls_br_str(&r);
    out->leader = ls_br_str(&r);
    out->state_ms = (int64_t)ls_br_u64(&r);
    uint32_t n = ls_br_u32(&r);
    /* each member needs at least 4 strings + 2 ints + 2 byte strings */
    if (r.err || n > (size_t)(r.end - r.p) / 24) {
        ls_group_record_free(out);
        return LS_ECORRUPT;
    }
    out->members = LS_NEWN(ls_group_record_member_t, n ? n : 1);
    for (uint32_t i = 0; i < n && !r.err; i++) {
        ls_group_record_member_t *m = &out->members[i];
        out->nmembers = (int)i + 1;
        m->member_id = ls_br_str(&r);
        m->instance_id = ls_br_str(&r);
        m->client_id = ls_br_str(&r);
        m->client_host = ls_br_str(&r);
        m->session_timeout_ms = (int32_t)ls_br_u32(&r);
        m->rebalance_timeout_ms = (int32_t)ls_br_u32(&r);
        m->metadata = ls_br_bytes(&r, &m->metadata_len);
        m->assignment = ls_br_bytes(&r, &m->assignment_len);
        if (!r.err &&
            (!m->member_id || !m->client_id || !m->client_host || !m->metadata || !m->assignment))
            r.err = true;
    }
    if (!r.err && version == REC_VERSION_TYPED) {
        uint8_t type = ls_br_u8(&r);
        if (type != LS_GROUP_TYPE_CONSUMER && type != LS_GROUP_TYPE_SHARE &&
            type != LS_GROUP_TYPE_STREAMS)
            r.err = true;
        out->type = (ls_group_type_t)type;
        out->type_state = ls_br_bytes(&r, &out->type_state_len);
        if (!r.err && r.p != r.end) r.err = true;
    }
    if (r.err) {
        ls_group_record_free(out);
        return LS_ECORRUPT;
    }
    return LS_OK;
}

void ls_group_record_free(ls_group_record_t *r)
{
    for (int i = 0; i < r->nmembers; i++) {
        ls_group_record_member_t *m = &r->members[i];
        ls_free(m->member_id);
        ls_free(m->instance_id);
        ls_free(m->client_id);
        ls_free(m->client_host);
        ls_free(m->metadata);
        ls_free(m->assignment);
    }
    ls_free(r->members);
    ls_free(r->type_state);
    ls_free(r->protocol_type);
    ls_free(r->protocol_name);
    ls_free(r->leader);
    memset(r, 0, sizeof *r);
}

uint8_t *ls_group_offset_encode(const ls_group_offset_t *o, size_t *len)
{
    ls_buf_t b;
    ls_buf_init(&b);
    ls_buf_append_u8(&b, OFF_VERSION);
    ls_bw_u64(&b, (uint64_t)o->offset);
    ls_bw_u32(&b, (uint32_t)o->leader_epoch);
    ls_bw_u64(&b, (uint64_t)o->commit_ms);
    ls_bw_u64(&b, (uint64_t)o->stream_no);
    if (o->metadata)
        ls_bw_bytes(&b, (const uint8_t *)o->metadata, (size_t)o->metadata_len);
    else
        ls_bw_u32(&b, 0xffffffffu);
    return ls_buf_steal(&b, len);
}

ls_status ls_group_offset_decode(const uint8_t *p, size_t len, ls_group_offset_t *out)
{
    memset(out, 0, sizeof *out);
    ls_br_t r = ls_br_init(p, len);
    if (ls_br_u8(&r) != OFF_VERSION) return LS_ECORRUPT;
    out->offset = (int64_t)ls_br_u64(&r);
    out->leader_epoch = (int32_t)ls_br_u32(&r);
    out->commit_ms = (int64_t)ls_br_u64(&r);
    out->stream_no = (int64_t)ls_br_u64(&r);
    uint32_t n = ls_br_u32(&r);
    if (!r.err && n != 0xffffffffu) {
        if (ls_br_need(&r, n)) {
            out->metadata = ls_malloc((size_t)n + 1);
            memcpy(out->metadata, r.p, n);
            out->metadata[n] = 0;
            out->metadata_len = (int32_t)n;
            r.p += n;
        }
    }
    if (r.err) {
        ls_free(out->metadata);
        out->metadata = NULL;
        return LS_ECORRUPT;
    }
    return LS_OK;
}

void ls_group_loaded_free(ls_group_loaded_t *l)
{
    ls_group_record_free(&l->rec);
    for (int i = 0; i < l->noffsets; i++) {
        ls_free(l->offsets[i].topic);
        ls_free(l->offsets[i].o.metadata);
    }
    ls_free(l->offsets);
    for (int i = 0; i < l->ntxn_pending; i++)
        ls_free(l->txn_pending[i].topic);
    ls_free(l->txn_pending);
    memset(l, 0, sizeof *l);
}
