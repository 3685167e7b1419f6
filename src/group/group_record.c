/* Stored forms of a group's metadata and committed offsets (docs/FORMATS.md,
 * "Consumer groups"). Big-endian; strings are u16 length (0xffff = null) +
 * bytes, byte strings u32 length + bytes (0xffffffff = null). Decoders are
 * bounded and report LS_ECORRUPT on any inconsistency. */
#include <string.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "group/group.h"

#define REC_VERSION 1
#define OFF_VERSION 1

static void put_u16(ls_buf_t *b, uint16_t v)
{
    uint8_t x[2];
    ls_be16_put(x, v);
    ls_buf_append(b, x, 2);
}
static void put_u32(ls_buf_t *b, uint32_t v)
{
    uint8_t x[4];
    ls_be32_put(x, v);
    ls_buf_append(b, x, 4);
}
static void put_u64(ls_buf_t *b, uint64_t v)
{
    uint8_t x[8];
    ls_be64_put(x, v);
    ls_buf_append(b, x, 8);
}
static void put_str(ls_buf_t *b, const char *s)
{
    if (!s) {
        put_u16(b, 0xffff);
        return;
    }
    size_t n = strlen(s);
    if (n > 0xfffe)
        n = 0xfffe;
    put_u16(b, (uint16_t)n);
    ls_buf_append(b, s, n);
}
static void put_bytes(ls_buf_t *b, const uint8_t *p, size_t n)
{
    put_u32(b, (uint32_t)n);
    if (n)
        ls_buf_append(b, p, n);
}

typedef struct rd {
    const uint8_t *p, *end;
    bool err;
} rd_t;

static bool need(rd_t *r, size_t n)
{
    if (r->err || (size_t)(r->end - r->p) < n) {
        r->err = true;
        return false;
    }
    return true;
}
static uint8_t get_u8(rd_t *r)
{
    if (!need(r, 1))
        return 0;
    return *r->p++;
}
static uint16_t get_u16(rd_t *r)
{
    if (!need(r, 2))
        return 0;
    uint16_t v = ls_be16_get(r->p);
    r->p += 2;
    return v;
}
static uint32_t get_u32(rd_t *r)
{
    if (!need(r, 4))
        return 0;
    uint32_t v = ls_be32_get(r->p);
    r->p += 4;
    return v;
}
static uint64_t get_u64(rd_t *r)
{
    if (!need(r, 8))
        return 0;
    uint64_t v = ls_be64_get(r->p);
    r->p += 8;
    return v;
}
static char *get_str(rd_t *r)
{
    uint16_t n = get_u16(r);
    if (r->err || n == 0xffff)
        return NULL;
    if (!need(r, n))
        return NULL;
    char *s = ls_strndup((const char *)r->p, n);
    r->p += n;
    return s;
}
static uint8_t *get_bytes(rd_t *r, size_t *len)
{
    uint32_t n = get_u32(r);
    *len = 0;
    if (r->err || !need(r, n))
        return NULL;
    uint8_t *p = ls_memdup(n ? r->p : (const uint8_t *)"", n ? n : 1);
    r->p += n;
    *len = n;
    return p;
}

uint8_t *ls_group_record_encode(const ls_group_record_t *rec, size_t *len)
{
    ls_buf_t b;
    ls_buf_init(&b);
    ls_buf_append_u8(&b, REC_VERSION);
    ls_buf_append_u8(&b, rec->state == LS_GROUP_STABLE ? 1 : 0);
    put_u32(&b, (uint32_t)rec->generation);
    put_str(&b, rec->protocol_type);
    put_str(&b, rec->protocol_name);
    put_str(&b, rec->leader);
    put_u64(&b, (uint64_t)rec->state_ms);
    put_u32(&b, (uint32_t)rec->nmembers);
    for (int i = 0; i < rec->nmembers; i++) {
        const ls_group_record_member_t *m = &rec->members[i];
        put_str(&b, m->member_id);
        put_str(&b, m->instance_id);
        put_str(&b, m->client_id);
        put_str(&b, m->client_host);
        put_u32(&b, (uint32_t)m->session_timeout_ms);
        put_u32(&b, (uint32_t)m->rebalance_timeout_ms);
        put_bytes(&b, m->metadata, m->metadata_len);
        put_bytes(&b, m->assignment, m->assignment_len);
    }
    return ls_buf_steal(&b, len);
}

ls_status ls_group_record_decode(const uint8_t *p, size_t len, ls_group_record_t *out)
{
    memset(out, 0, sizeof *out);
    rd_t r = {p, p + len, false};
    if (get_u8(&r) != REC_VERSION)
        return LS_ECORRUPT;
    out->state = get_u8(&r) == 1 ? LS_GROUP_STABLE : LS_GROUP_EMPTY;
    out->generation = (int32_t)get_u32(&r);
    out->protocol_type = get_str(&r);
    out->protocol_name = get_str(&r);
    out->leader = get_str(&r);
    out->state_ms = (int64_t)get_u64(&r);
    uint32_t n = get_u32(&r);
    /* each member needs at least 4 strings + 2 ints + 2 byte strings */
    if (r.err || n > (size_t)(r.end - r.p) / 24) {
        ls_group_record_free(out);
        return LS_ECORRUPT;
    }
    out->members = LS_NEWN(ls_group_record_member_t, n ? n : 1);
    for (uint32_t i = 0; i < n && !r.err; i++) {
        ls_group_record_member_t *m = &out->members[i];
        out->nmembers = (int)i + 1;
        m->member_id = get_str(&r);
        m->instance_id = get_str(&r);
        m->client_id = get_str(&r);
        m->client_host = get_str(&r);
        m->session_timeout_ms = (int32_t)get_u32(&r);
        m->rebalance_timeout_ms = (int32_t)get_u32(&r);
        m->metadata = get_bytes(&r, &m->metadata_len);
        m->assignment = get_bytes(&r, &m->assignment_len);
        if (!r.err && (!m->member_id || !m->client_id || !m->client_host || !m->metadata ||
                       !m->assignment))
            r.err = true;
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
    put_u64(&b, (uint64_t)o->offset);
    put_u32(&b, (uint32_t)o->leader_epoch);
    put_u64(&b, (uint64_t)o->commit_ms);
    put_u64(&b, (uint64_t)o->stream_no);
    if (o->metadata)
        put_bytes(&b, (const uint8_t *)o->metadata, (size_t)o->metadata_len);
    else
        put_u32(&b, 0xffffffffu);
    return ls_buf_steal(&b, len);
}

ls_status ls_group_offset_decode(const uint8_t *p, size_t len, ls_group_offset_t *out)
{
    memset(out, 0, sizeof *out);
    rd_t r = {p, p + len, false};
    if (get_u8(&r) != OFF_VERSION)
        return LS_ECORRUPT;
    out->offset = (int64_t)get_u64(&r);
    out->leader_epoch = (int32_t)get_u32(&r);
    out->commit_ms = (int64_t)get_u64(&r);
    out->stream_no = (int64_t)get_u64(&r);
    uint32_t n = get_u32(&r);
    if (!r.err && n != 0xffffffffu) {
        if (need(&r, n)) {
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
    memset(l, 0, sizeof *l);
}
