/* Iceberg v2 position delete files (spec "Position Delete Files"): rows
 * (file_path, pos) that name the row at 0-based position pos of the data
 * file at file_path as deleted, for data files of the delete file's
 * partition whose data sequence number is at most the delete file's. What
 * merge-on-read upsert tables write instead of copying files (design note
 * in position_deletes.c).
 *
 * An index (ls_posdel_t) holds the rows of a snapshot's live delete files,
 * so the writer never deletes a row twice, the maintenance rewrite leaves
 * deleted rows out of the files it writes, and a delete file whose data
 * files are all gone can leave the table. */
#ifndef LS_POSITION_DELETES_H
#define LS_POSITION_DELETES_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "table/iceberg_manifest.h"
#include "table/iceberg_table.h"
#include "table/parquet_writer.h"

/* The reserved field ids of the spec ("Reserved Field IDs"). */
#define LS_POSDEL_FID_FILE_PATH 2147483546
#define LS_POSDEL_FID_POS 2147483545

/* The delete files' Parquet schema: file_path (required string), pos
 * (required long). */
const ls_pq_field_t *ls_posdel_fields(size_t *n);

typedef struct ls_posdel ls_posdel_t;

/* Reads every position delete file and deletion vector among live[0..n)
 * (ls_ice_table_live_entries) into *out; *bytes_read adds what was read. A delete file that cannot
 * be read fails the call (its rows would come back otherwise): the store's status, or LS_ECORRUPT,
 * with the reason in err. */
ls_status ls_posdel_load(ls_ice_table_t *t, const ls_ice_mentry_t *live, size_t n,
                         ls_posdel_t **out, uint64_t *bytes_read, char *err, size_t errlen);
void ls_posdel_free(ls_posdel_t *d);

/* Rows of the data file at path the index deletes: sets flags[pos] for each
 * pos < nrows; returns how many flags it set that were clear. */
int64_t ls_posdel_mark(const ls_posdel_t *d, const char *path, uint8_t *flags, int64_t nrows);
/* How many distinct rows of path the index deletes. */
int64_t ls_posdel_count(const ls_posdel_t *d, const char *path);
/* The path of the deletion vector (table/deletion_vector.h) the index
 * holds for the data file at data_path, or NULL. */
const char *ls_posdel_dv_of(const ls_posdel_t *d, const char *data_path);
/* Whether the delete file at del_path names only data files gone() says
 * are gone (a delete file the index does not hold: false). A position
 * delete file's data file that has a deletion vector counts as gone: a
 * vector holds every deleted row of its file (format version 3 merges the
 * older deletes into it). */
bool ls_posdel_covered(const ls_posdel_t *d, const char *del_path,
                       bool (*gone)(void *arg, const char *data_path), void *arg);

/* One row of a delete file to write; path is borrowed. */
typedef struct ls_posdel_row {
    const char *path;
    int64_t pos;
} ls_posdel_row_t;

/* The rows of the delete files at del_paths[0..n) naming data files keep()
 * accepts, each (path, pos) once, sorted: *out (ls_free it; its paths are
 * the index's, valid until ls_posdel_free), their count returned. What a
 * merge of those delete files into one writes. */
size_t ls_posdel_rows_of(const ls_posdel_t *d, const char *const *del_paths, size_t n,
                         bool (*keep)(void *arg, const char *data_path), void *arg,
                         ls_posdel_row_t **out);

/* Writes rows[0..n) (n >= 1; sorted here by path, then pos, as the spec
 * asks) as one delete file of partition part (values in spec order) with
 * pq's codec, uploads it (create-only) and fills *df (content position
 * deletes, metrics). The table's error in err on failure. */
ls_status ls_posdel_write(ls_ice_table_t *t, ls_posdel_row_t *rows, size_t n,
                          const ls_ice_pval_t *part, const ls_pq_opts_t *pq, ls_ice_datafile_t *df,
                          char *err, size_t errlen);
#endif
