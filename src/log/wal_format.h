/* WAL object format (docs/FORMATS.md "WAL object"). One object per flush:
 *
 *   "LSWAL001"                                  8-byte magic
 *   section 0 bytes | section 1 bytes | ...    one contiguous run of entries per log
 *   footer: nsections x { log_id i64 | pos u64 | len u32 | entries u32 |
 *                         offsets i64 | max_timestamp i64 }   (40 bytes each)
 *   nsections u32 | footer crc32c u32 (over the section table and nsections)
 *   "LSWALEND"                                  8-byte magic
 * All integers big-endian. Entries are stored exactly as the producer sent
 * them; offsets are not in the object (they are assigned at commit), so an
 * object is valid whatever offsets its commit assigns, and a retried commit
 * needs no rewrite. */
#ifndef LS_WAL_FORMAT_H
#define LS_WAL_FORMAT_H
#include <stddef.h>
#include <stdint.h>
#include "base/buf.h"
#include "base/status.h"

#define LS_WAL_MAGIC "LSWAL001"
#define LS_WAL_END_MAGIC "LSWALEND"
#define LS_WAL_HEADER_SIZE 8
#define LS_WAL_SECTION_SIZE 40
#define LS_WAL_TRAILER_SIZE 16 /* nsections + crc + end magic */

typedef struct ls_wal_section {
    int64_t log_id;
    uint64_t pos; /* byte position in the object */
    uint32_t len;
    uint32_t entries;
    int64_t offsets; /* offsets the section's entries consume */
    int64_t max_timestamp;
} ls_wal_section_t;

/* Appends the footer for sections to out. */
void ls_wal_footer_encode(const ls_wal_section_t *s, uint32_t n, ls_buf_t *out);
/* Parses the footer of a whole object; *sections is ls_malloc'd. Checks
 * magics, CRC and that every section lies inside the object body.
 * On failure writes a reason (naming the byte offset) to why. */
ls_status ls_wal_footer_decode(const uint8_t *obj, size_t len, ls_wal_section_t **sections,
                               uint32_t *n, char *why, size_t whylen);
/* WAL object keys: "wal/<13-digit wall ms of the seal>-<node>-<nonce>-<seq>.wal"
 * (wal_writer.c). The seal time of a key, or -1 when key is not one. */
int64_t ls_wal_key_time(const char *key);

#endif
