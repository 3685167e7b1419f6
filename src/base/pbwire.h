/* The Protocol Buffers wire format, read side: base-128 varints and one
 * field at a time (number, wire type, value or bytes), the reader the
 * schema registry's Protobuf checks and views and the client telemetry
 * receiver's OTLP decoder share. Stateless; any thread. */
#ifndef LS_PBWIRE_H
#define LS_PBWIRE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One base-128 varint from *p (advanced); false when the bytes end first or
 * it runs past 64 bits. */
bool ls_pbwire_varint(const uint8_t **p, const uint8_t *end, uint64_t *out);

/* One field: its number, wire type (0 varint, 1 fixed64, 2 length-delimited,
 * 5 fixed32) and the varint or fixed value (v, little-endian for fixed) or
 * the bytes (d[0..n): length-delimited, and the fixed ones' raw bytes). */
typedef struct ls_pbwire_field {
    uint32_t num;
    int wt;
    uint64_t v;
    const uint8_t *d;
    size_t n;
} ls_pbwire_field_t;

/* The next field at *p (advanced past it); groups (wire types 3/4) are
 * skipped whole. 1: a field; 0: the end; -1: malformed (a bad tag, a value
 * cut short, groups nested deeper than 64). */
int ls_pbwire_next(const uint8_t **p, const uint8_t *end, ls_pbwire_field_t *f);
#endif
