/* Compacted object (CO) format (docs/FORMATS.md "Compacted object"). One log,
 * one contiguous offset range, entries already carrying their real offsets:
 *
 *   "LSCO0001"                                 8-byte magic
 *   entries                                    RecordBatch v2, baseOffset = real offset
 *   footer: n x { base_offset i64 | pos u32 }  (12 bytes each; pos from object start)
 *           log_id i64 | first i64 | last i64 | n u32 | crc32c u32 (over the footer
 *           up to and including n) | "LSCOEND1"
 * The footer lets a reader that has only the object (a tool, a future
 * recovery pass) find every entry; the broker reads through the index entry,
 * which records the entries' byte range. Written create-only under
 * co/<log_id %016x>/<first %020d>-<last %020d>.co: deterministic, so a retried
 * compaction writes the same bytes under the same key. A key-compacted object
 * (compact/keycompact.c: same layout, batches with gaps between their offsets,
 * maybe none) is written under
 * co/<log_id %016x>/<first %020d>-<last %020d>.k<gen %020d>.co, gen being the
 * revision of the index entry it replaces: a retry of the same rewrite reuses
 * the key (overwriting an object nothing references yet), a later rewrite of
 * the same range gets a new one. */
#ifndef LS_CO_FORMAT_H
#define LS_CO_FORMAT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "base/buf.h"
#include "base/status.h"

#define LS_CO_MAGIC "LSCO0001"
#define LS_CO_END_MAGIC "LSCOEND1"
#define LS_CO_HEADER_SIZE 8
#define LS_CO_TRAILER_SIZE 40 /* log_id, first, last, n, crc, end magic */
/* Bytes of the footer (entry table + trailer) of an object holding n entries:
 * it starts right after the entries, at index pos + len. */
#define LS_CO_FOOTER_SIZE(n) ((size_t)(n)*12 + LS_CO_TRAILER_SIZE)

typedef struct ls_co_entry {
    int64_t base_offset;
    uint32_t pos;
} ls_co_entry_t;

int ls_co_key(char *out, size_t cap, int64_t log_id, int64_t first, int64_t last);
int ls_kco_key(char *out, size_t cap, int64_t log_id, int64_t first, int64_t last, int64_t gen);
int ls_co_prefix(char *out, size_t cap, int64_t log_id); /* "co/<log_id>/" */
/* Parses a key written by ls_co_key or ls_kco_key; false for anything else. */
bool ls_co_key_parse(const char *key, int64_t *log_id, int64_t *first, int64_t *last);
/* Appends the footer for entries to obj (which already holds header + entries). */
void ls_co_footer_encode(ls_buf_t *obj, int64_t log_id, int64_t first, int64_t last,
                         const ls_co_entry_t *e, uint32_t n);
/* Validates a footer read on its own: f[0, len) are the object's bytes from
 * position `at` (where the entries end) to its end. Checks the end magic, that
 * the count matches len, the CRC, and that positions lie in [8, at) and both
 * positions and base offsets ascend. Returns the entry table (ls_malloc'd) or
 * LS_ECORRUPT with why naming the byte position. */
ls_status ls_co_footer_parse(const uint8_t *f, size_t len, uint64_t at, int64_t *log_id,
                             int64_t *first, int64_t *last, ls_co_entry_t **e, uint32_t *n,
                             char *why, size_t whylen);
/* Validates a whole CO and returns its entry table (ls_malloc'd). */
ls_status ls_co_footer_decode(const uint8_t *obj, size_t len, int64_t *log_id, int64_t *first,
                              int64_t *last, ls_co_entry_t **e, uint32_t *n, char *why,
                              size_t whylen);
#endif
