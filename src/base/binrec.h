/* Stored binary records: the one writer and bounded reader behind the
 * metadata-store records of docs/FORMATS.md (group records, committed
 * offsets, transaction records). Big-endian integers; strings are u16 length
 * (0xffff = null) + bytes; byte strings u32 length (0xffffffff = null) +
 * bytes.
 *
 * The reader has a sticky error: after the first read past the end every
 * read returns 0 / NULL and `err` stays set, so a decoder reads all its
 * fields and checks once. */
#ifndef LS_BINREC_H
#define LS_BINREC_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

void ls_bw_u16(ls_buf_t *b, uint16_t v);
void ls_bw_u32(ls_buf_t *b, uint32_t v);
void ls_bw_u64(ls_buf_t *b, uint64_t v);
void ls_bw_str(ls_buf_t *b, const char *s); /* NULL = null; cut at 0xfffe bytes */
void ls_bw_bytes(ls_buf_t *b, const uint8_t *p, size_t n);

typedef struct ls_br {
    const uint8_t *p, *end;
    bool err;
} ls_br_t;

static inline ls_br_t ls_br_init(const uint8_t *p, size_t len)
{
    return (ls_br_t){p, p + len, false};
}
/* True when n more bytes remain (and no earlier read failed); sets err if not. */
bool ls_br_need(ls_br_t *r, size_t n);
uint8_t ls_br_u8(ls_br_t *r);
uint16_t ls_br_u16(ls_br_t *r);
uint32_t ls_br_u32(ls_br_t *r);
uint64_t ls_br_u64(ls_br_t *r);
/* NULL for null or on error (a NUL byte inside is an error: ls_bw_str never
 * writes one); ls_free */
char *ls_br_str(ls_br_t *r);
uint8_t *ls_br_bytes(ls_br_t *r, size_t *len); /* NULL only on error; ls_free */
/* A u32 item count, refused (err, 0) when the bytes left cannot hold that
 * many items of at least min_bytes each, so garbage never makes a decoder
 * allocate much. */
int ls_br_count(ls_br_t *r, size_t min_bytes);

#endif
