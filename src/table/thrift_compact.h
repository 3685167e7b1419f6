/* Thrift compact-protocol encoder (write side only), enough for Parquet's
 * footer and page headers (parquet-format src/main/thrift/parquet.thrift).
 *
 * Compact protocol facts (Thrift's TCompactProtocol spec):
 *  - a field header is one byte (delta << 4 | type) when the id is 1..15
 *    above the previous field id of the same struct, else the type byte and a
 *    zigzag varint i16 id; a struct ends with a 0 byte (STOP);
 *  - booleans in fields live in the type nibble (1 true, 2 false);
 *  - i16/i32/i64 are zigzag varints, binary/string a varint length + bytes;
 *  - a list header is (size << 4 | elem type) for size < 15, else
 *    (0xF0 | elem type) and a varint size.
 * The encoder keeps the previous field id per nesting level. Unions are
 * structs with exactly one field. Nesting deeper than LS_TC_MAX_DEPTH is a
 * programming error (asserted). */
#ifndef LS_THRIFT_COMPACT_H
#define LS_THRIFT_COMPACT_H
#include "base/buf.h"
#include <stddef.h>
#include <stdint.h>

enum {
    LS_TC_BOOL_TRUE = 1,
    LS_TC_BOOL_FALSE = 2,
    LS_TC_BYTE = 3,
    LS_TC_I16 = 4,
    LS_TC_I32 = 5,
    LS_TC_I64 = 6,
    LS_TC_DOUBLE = 7,
    LS_TC_BINARY = 8,
    LS_TC_LIST = 9,
    LS_TC_SET = 10,
    LS_TC_MAP = 11,
    LS_TC_STRUCT = 12,
};
#define LS_TC_MAX_DEPTH 16

typedef struct ls_tc {
    ls_buf_t *out;
    int depth;
    int16_t last[LS_TC_MAX_DEPTH];
} ls_tc_t;

void ls_tc_init(ls_tc_t *t, ls_buf_t *out);
void ls_tc_varint(ls_buf_t *out, uint64_t v); /* unsigned LEB128 */

/* Fields of the current struct. */
void ls_tc_bool(ls_tc_t *t, int16_t id, int v);
void ls_tc_i32(ls_tc_t *t, int16_t id, int32_t v);
void ls_tc_i64(ls_tc_t *t, int16_t id, int64_t v);
void ls_tc_binary(ls_tc_t *t, int16_t id, const void *p, size_t n);
void ls_tc_string(ls_tc_t *t, int16_t id, const char *s);
void ls_tc_struct_begin(ls_tc_t *t, int16_t id); /* field header, then nest */
void ls_tc_struct_end(ls_tc_t *t);               /* STOP, un-nest */
void ls_tc_list_begin(ls_tc_t *t, int16_t id, uint8_t elem_type, uint32_t n);

/* List elements (after ls_tc_list_begin; lists need no end marker). */
void ls_tc_elem_i32(ls_tc_t *t, int32_t v);
void ls_tc_elem_binary(ls_tc_t *t, const void *p, size_t n);
void ls_tc_elem_struct_begin(ls_tc_t *t); /* nest without a field header */

/* Top-level struct: ls_tc_init starts at depth 0 inside the message struct;
 * ls_tc_end writes its STOP. */
void ls_tc_end(ls_tc_t *t);
#endif
