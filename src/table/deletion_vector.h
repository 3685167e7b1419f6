/* Iceberg v3 deletion vectors (spec "Deletion Vectors", Puffin spec
 * "deletion-vector-v1"): the deleted row positions of one data file as a
 * bitmap blob in a Puffin file. What merge-on-read upsert tables of format
 * version 3 write instead of position delete files (design note in
 * deletion_vector.c).
 *
 * Blob: 4-byte big-endian length of what follows up to the checksum, the
 * magic D1 D3 39 64, the positions as a 64-bit Roaring bitmap in the
 * portable layout (8-byte little-endian count of 32-bit bitmaps, then per
 * bitmap its 4-byte little-endian key (the high half of the positions) and
 * a 32-bit Roaring bitmap of the low halves), then a big-endian CRC-32 of
 * the magic and the bitmap. */
#ifndef LS_DELETION_VECTOR_H
#define LS_DELETION_VECTOR_H
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/status.h"
#include "table/iceberg_table.h"

/* Appends the blob of the positions pos[0..n) (sorted, distinct, each
 * >= 0) to out. */
void ls_dv_encode(const int64_t *pos, size_t n, ls_buf_t *out);

/* The positions of the blob p[0..len), sorted and distinct, into *pos
 * (ls_free it; NULL when none) and *n. LS_ECORRUPT with the reason in err
 * for a blob that is not one (length, magic, checksum, a bitmap that does
 * not parse, positions out of order). Reads the three Roaring container
 * kinds (array, bitmap, run). */
ls_status ls_dv_decode(const uint8_t *p, size_t len, int64_t **pos, size_t *n, char *err,
                       size_t errlen);

/* A Puffin file (magic, the blob, the footer: its JSON names the blob's
 * type, offset, length and the properties referenced-data-file and
 * cardinality) holding the blob of pos[0..n) for the data file at
 * data_path, into out; the blob's offset and length in it. */
void ls_dv_puffin(const char *data_path, const int64_t *pos, size_t n, ls_buf_t *out,
                  int64_t *blob_offset, int64_t *blob_length);

/* Writes ls_dv_puffin's file for the data file at data_path of partition
 * part (values in spec order), uploads it (create-only, "<uuid>.puffin"
 * beside the data files) and fills *df: content position deletes, the
 * Puffin file's path and size, record_count n (the cardinality),
 * referenced_data_file, content_offset and content_size. The table's error
 * in err on failure. */
ls_status ls_dv_write(ls_ice_table_t *t, const char *data_path, const int64_t *pos, size_t n,
                      const ls_ice_pval_t *part, ls_ice_datafile_t *df, char *err, size_t errlen);
#endif
