/* Thrift compact-protocol encoder; see thrift_compact.h for the wire rules. */
#include "table/thrift_compact.h"

#include "base/check.h"

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

static uint64_t zigzag64(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

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

void ls_tc_string(ls_tc_t *t, int16_t id, const char *s)
{
    ls_tc_binary(t, id, s, strlen(s));
}

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

void ls_tc_elem_i32(ls_tc_t *t, int32_t v)
{
    ls_tc_varint(t->out, zigzag64(v));
}

void ls_tc_elem_binary(ls_tc_t *t, const void *p, size_t n)
{
    ls_tc_varint(t->out, n);
    ls_buf_append(t->out, p, n);
}

void ls_tc_elem_struct_begin(ls_tc_t *t)
{
    push(t);
}
