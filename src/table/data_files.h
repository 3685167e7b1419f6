/* Routes rows into Parquet data files of an Iceberg table: one open file
 * per partition tuple of the table's spec (its sources: the Kafka metadata
 * columns partition, offset, timestamp, field ids 1-3 in every table shape,
 * taken from the record; any other column's value comes from the caller,
 * ls_data_files_writer_sv), each file rolled when it reaches target_file_bytes. The row
 * shape is the caller's (the Parquet fields it writes rows of: the raw
 * table's, iceberg_raw.h, or a typed one, iceberg_typed.h). Rolled and
 * finished files are uploaded with ls_ice_table_put_data; the caller then
 * commits them with ls_ice_table_append. Until that commit they are orphans
 * (a retried task writes new files, never reuses these). One thread. */
#ifndef LS_DATA_FILES_H
#define LS_DATA_FILES_H
#include <stdbool.h>
#include <stddef.h>

#include "base/status.h"
#include "table/iceberg_raw.h"
#include "table/iceberg_table.h"
#include "table/parquet_writer.h"

typedef struct ls_data_files ls_data_files_t;

/* fields must outlive the object. */
ls_data_files_t *ls_data_files_new(ls_ice_table_t *t, const ls_pq_field_t *fields, size_t nfields,
                                   const ls_pq_opts_t *opts, size_t target_file_bytes, char *err,
                                   size_t errlen);
/* The writer of r's partition (opened on first use; NULL on failure, see
 * ls_data_files_error): write one row into it, then call
 * ls_data_files_row_done with the row's status. */
ls_pq_writer_t *ls_data_files_writer(ls_data_files_t *f, const ls_raw_record_t *r);
/* The same when the spec has sources beyond the Kafka columns: src[i] is
 * the row's value of spec field i's source (read for those fields only;
 * its bytes borrowed for the call: a new partition keeps a copy of its
 * values, however long). */
ls_pq_writer_t *ls_data_files_writer_sv(ls_data_files_t *f, const ls_raw_record_t *r,
                                        const ls_ice_sval_t *src);
/* Whether the spec has sources beyond the Kafka columns. */
bool ls_data_files_needs_values(const ls_data_files_t *f);
ls_status ls_data_files_row_done(ls_data_files_t *f, ls_status st);
/* A raw-table row (ls_raw_write) in one call. */
ls_status ls_data_files_add_raw(ls_data_files_t *f, const ls_raw_record_t *r);
/* Finishes and uploads every open file; *files stays owned by f. */
ls_status ls_data_files_finish(ls_data_files_t *f, const ls_ice_datafile_t **files, size_t *n);
const char *ls_data_files_error(const ls_data_files_t *f);
void ls_data_files_free(ls_data_files_t *f);
#endif
