/* Thrift compact protocol encoder and decoder; see thrift_compact.h for the wire rules. */
#include "table/thrift_compact.h"

#include "base/check.h"

#include <stdio.h>
#include <string.h>

void ls_tc_init(ls_tc_t *t, ls_buf_t *out)
{
    t->out = out;
    t->depth = 0;
    t->last[0] = 0;
}

void ls_tc_varint(ls_buf_t *out, uint64_t v)
{
    uint8_t tmp[10];
    int n = 0;
    while (v >= 0x80) {
        tmp[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    tmp[n++] = (uint8_t)v;
    ls_buf_append(out, tmp, (size_t)n);
}

static uint64_t zigzag64(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }

static void field(ls_tc_t *t, int16_t id, uint8_t type)
{
    int delta = id - t->last[t->depth];
    if (delta > 0 && delta <= 15) {
        ls_buf_append_u8(t->out, (uint8_t)(delta << 4 | type));
    } else {
        ls_buf_append_u8(t->out, type);
        ls_tc_varint(t->out, zigzag64(id));
    }
    t->last[t->depth] = id;
}

static void push(ls_tc_t *t)
{
    LS_CHECK(t->depth + 1 < LS_TC_MAX_DEPTH);
    t->last[++t->depth] = 0;
}

void ls_tc_bool(ls_tc_t *t, int16_t id, int v)
{
    field(t, id, v ? LS_TC_BOOL_TRUE : LS_TC_BOOL_FALSE);
}

void ls_tc_i32(ls_tc_t *t, int16_t id, int32_t v)
{
    field(t, id, LS_TC_I32);
    ls_tc_varint(t->out, zigzag64(v));
}

void ls_tc_i64(ls_tc_t *t, int16_t id, int64_t v)
{
    field(t, id, LS_TC_I64);
    ls_tc_varint(t->out, zigzag64(v));
}

void ls_tc_binary(ls_tc_t *t, int16_t id, const void *p, size_t n)
{
    field(t, id, LS_TC_BINARY);
    ls_tc_elem_binary(t, p, n);
}

void ls_tc_string(ls_tc_t *t, int16_t id, const char *s) { ls_tc_binary(t, id, s, strlen(s)); }

void ls_tc_struct_begin(ls_tc_t *t, int16_t id)
{
    field(t, id, LS_TC_STRUCT);
    push(t);
}

void ls_tc_struct_end(ls_tc_t *t)
{
    LS_CHECK(t->depth > 0);
    ls_buf_append_u8(t->out, 0);
    t->depth--;
}

void ls_tc_end(ls_tc_t *t)
{
    LS_CHECK(t->depth == 0);
    ls_buf_append_u8(t->out, 0);
}

void ls_tc_list_begin(ls_tc_t *t, int16_t id, uint8_t elem_type, uint32_t n)
{
    field(t, id, LS_TC_LIST);
    if (n < 15) {
        ls_buf_append_u8(t->out, (uint8_t)(n << 4 | elem_type));
    } else {
        ls_buf_append_u8(t->out, (uint8_t)(0xF0 | elem_type));
        ls_tc_varint(t->out, n);
    }
}

void ls_tc_elem_i32(ls_tc_t *t, int32_t v) { ls_tc_varint(t->out, zigzag64(v)); }

void ls_tc_elem_binary(ls_tc_t *t, const void *p, size_t n)
{
    ls_tc_varint(t->out, n);
    ls_buf_append(t->out, p, n);
}

void ls_tc_elem_struct_begin(ls_tc_t *t) { push(t); }

/* ---- decoder ---------------------------------------------------------- */

void ls_tcr_init(ls_tcr_t *r, const uint8_t *p, size_t n)
{
    memset(r, 0, sizeof *r);
    r->base = r->p = p;
    r->end = n ? p + n : p; /* (NULL, 0) is a valid empty input */
}

void ls_tcr_fail(ls_tcr_t *r, const char *what)
{
    if (r->failed) return;
    r->failed = 1;
    snprintf(r->err, sizeof r->err, "thrift: %s at byte %zu", what, ls_tcr_offset(r));
    r->p = r->end;
}

static uint64_t rd_varint(ls_tcr_t *r)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (r->p >= r->end) {
            ls_tcr_fail(r, "truncated varint");
            return 0;
        }
        uint8_t b = *r->p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) return v;
    }
    ls_tcr_fail(r, "varint longer than 10 bytes");
    return 0;
}

static int64_t unzigzag(uint64_t v) { return (int64_t)(v >> 1) ^ -(int64_t)(v & 1); }

int ls_tcr_field(ls_tcr_t *r, int16_t *id)
{
    *id = 0;
    if (r->failed) return 0;
    if (r->p >= r->end) {
        ls_tcr_fail(r, "truncated struct");
        return 0;
    }
    uint8_t b = *r->p++;
    if (b == 0) { /* STOP */
        if (r->depth > 0) r->depth--;
        return 0;
    }
    int type = b & 0x0f;
    int delta = b >> 4;
    int64_t fid;
    if (delta)
        fid = r->last[r->depth] + delta;
    else
        fid = unzigzag(rd_varint(r));
    if (r->failed) return 0;
    if (type < LS_TC_BOOL_TRUE || type > LS_TC_STRUCT || fid < INT16_MIN || fid > INT16_MAX) {
        ls_tcr_fail(r, "bad field header");
        return 0;
    }
    r->last[r->depth] = (int16_t)fid;
    *id = (int16_t)fid;
    return type;
}

void ls_tcr_struct_begin(ls_tcr_t *r)
{
    if (r->failed) return;
    if (r->depth + 1 >= LS_TC_MAX_DEPTH) {
        ls_tcr_fail(r, "structs nested too deep");
        return;
    }
    r->last[++r->depth] = 0;
}

int32_t ls_tcr_i32(ls_tcr_t *r)
{
    int64_t v = unzigzag(rd_varint(r));
    if (v < INT32_MIN || v > INT32_MAX) {
        ls_tcr_fail(r, "i32 out of range");
        return 0;
    }
    return (int32_t)v;
}

int64_t ls_tcr_i64(ls_tcr_t *r) { return unzigzag(rd_varint(r)); }

void ls_tcr_binary(ls_tcr_t *r, const uint8_t **p, size_t *n)
{
    uint64_t len = rd_varint(r);
    *p = r->p;
    *n = 0;
    if (r->failed) return;
    if (len > (uint64_t)(r->end - r->p)) {
        ls_tcr_fail(r, "binary runs past the end");
        return;
    }
    *n = (size_t)len;
    r->p += len;
}

static uint32_t container_size(ls_tcr_t *r, uint64_t n)
{
    if (n > (uint64_t)(r->end - r->p)) { /* every element takes >= 1 byte */
        ls_tcr_fail(r, "container larger than the bytes left");
        return 0;
    }
    return (uint32_t)n;
}

uint32_t ls_tcr_list(ls_tcr_t *r, int *elem)
{
    *elem = 0;
    if (r->failed) return 0;
    if (r->p >= r->end) {
        ls_tcr_fail(r, "truncated list header");
        return 0;
    }
    uint8_t b = *r->p++;
    *elem = b & 0x0f;
    uint64_t n = b >> 4;
    if (n == 15) n = rd_varint(r);
    return container_size(r, n);
}

static void skip_n(ls_tcr_t *r, size_t n)
{
    if (n > (size_t)(r->end - r->p)) {
        ls_tcr_fail(r, "value runs past the end");
        return;
    }
    r->p += n;
}

void ls_tcr_skip(ls_tcr_t *r, int type)
{
    if (r->failed) return;
    switch (type) {
    case LS_TC_BOOL_TRUE:
    case LS_TC_BOOL_FALSE:
        return; /* a field's value is in its type; list elements are read below */
    case LS_TC_BYTE: skip_n(r, 1); return;
    case LS_TC_I16:
    case LS_TC_I32:
    case LS_TC_I64: rd_varint(r); return;
    case LS_TC_DOUBLE: skip_n(r, 8); return;
    case LS_TC_BINARY: {
        const uint8_t *p;
        size_t n;
        ls_tcr_binary(r, &p, &n);
        return;
    }
    case LS_TC_LIST:
    case LS_TC_SET: {
        int elem;
        uint32_t n = ls_tcr_list(r, &elem);
        int depth = r->depth;
        if (depth + 1 >= LS_TC_MAX_DEPTH) {
            ls_tcr_fail(r, "containers nested too deep");
            return;
        }
        r->depth++; /* counts container nesting against the bound */
        for (uint32_t i = 0; i < n && !r->failed; i++)
            ls_tcr_skip(r, elem == LS_TC_BOOL_TRUE || elem == LS_TC_BOOL_FALSE ? LS_TC_BYTE : elem);
        r->depth = depth;
        return;
    }
    case LS_TC_MAP: {
        uint32_t n = container_size(r, rd_varint(r));
        if (!n || r->failed) return;
        if (r->p >= r->end) {
            ls_tcr_fail(r, "truncated map header");
            return;
        }
        uint8_t kv = *r->p++;
        int kt = kv >> 4, vt = kv & 0x0f;
        if (kt == LS_TC_BOOL_TRUE || kt == LS_TC_BOOL_FALSE) kt = LS_TC_BYTE;
        if (vt == LS_TC_BOOL_TRUE || vt == LS_TC_BOOL_FALSE) vt = LS_TC_BYTE;
        int depth = r->depth;
        if (depth + 1 >= LS_TC_MAX_DEPTH) {
            ls_tcr_fail(r, "containers nested too deep");
            return;
        }
        r->depth++;
        for (uint32_t i = 0; i < n && !r->failed; i++) {
            ls_tcr_skip(r, kt);
            ls_tcr_skip(r, vt);
        }
        r->depth = depth;
        return;
    }
    case LS_TC_STRUCT: {
        ls_tcr_struct_begin(r);
        int16_t id;
        int t;
        while ((t = ls_tcr_field(r, &id)) != 0)
            ls_tcr_skip(r, t);
        return;
    }
    default: ls_tcr_fail(r, "unknown type");
    }
}
