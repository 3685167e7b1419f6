/* Thrift compact protocol: an encoder and a bounded decoder, enough for
 * Parquet's footer and page headers (parquet-format
 * src/main/thrift/parquet.thrift).
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
 * programming error (asserted).
 *
 * Decoder (ls_tcr_*): reads untrusted bytes through a cursor with a sticky
 * error. Every read checks what remains; after the first failure every read
 * returns 0/empty and ls_tcr_failed() is true, with a message naming what
 * broke and its byte offset. List and map sizes are bounded by the bytes
 * left (every element takes at least one byte), nesting by LS_TC_MAX_DEPTH,
 * so corrupt input can neither allocate without bound nor recurse without
 * bound. Callers read the fields they know and ls_tcr_skip() the others
 * (forward compatibility, as Thrift requires). */
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

/* ---- decoder ---- */
typedef struct ls_tcr {
    const uint8_t *base, *p, *end;
    int depth;
    int16_t last[LS_TC_MAX_DEPTH];
    int failed;
    char err[128];
} ls_tcr_t;

void ls_tcr_init(ls_tcr_t *r, const uint8_t *p, size_t n);
/* Marks the reader failed (first message wins); for semantic errors the
 * caller finds while decoding, so they carry the offset too. */
void ls_tcr_fail(ls_tcr_t *r, const char *what);
static inline int ls_tcr_failed(const ls_tcr_t *r) { return r->failed; }
static inline size_t ls_tcr_offset(const ls_tcr_t *r) { return (size_t)(r->p - r->base); }

/* Next field of the current struct: its compact type (LS_TC_*; booleans
 * come back as LS_TC_BOOL_TRUE/FALSE, their value), id in *id. Returns 0 at
 * the struct's STOP (leaving the struct, unless at the top level) or on
 * error. */
int ls_tcr_field(ls_tcr_t *r, int16_t *id);
/* Enters a struct whose field header ls_tcr_field returned (or a list
 * element of struct type). Its fields are then read until ls_tcr_field
 * returns 0. */
void ls_tcr_struct_begin(ls_tcr_t *r);
int32_t ls_tcr_i32(ls_tcr_t *r); /* i16 and i32 (and byte, widened) */
int64_t ls_tcr_i64(ls_tcr_t *r);
/* A binary/string: a view into the input. */
void ls_tcr_binary(ls_tcr_t *r, const uint8_t **p, size_t *n);
/* List or set header: element type in *elem, returns the count. */
uint32_t ls_tcr_list(ls_tcr_t *r, int *elem);
/* Skips a value of the given type (a field's or a list element's). */
void ls_tcr_skip(ls_tcr_t *r, int type);
#endif
