/* Private to table/parquet_reader*.c: the open file handle and what the
 * files of the reader share. parquet_reader.c holds the footer, the chunk
 * iterator and flat columns; parquet_rows.c the row cursor and the copying
 * of rows into a writer. See src/table/README.md. */
#ifndef LS_PARQUET_READER_INT_H
#define LS_PARQUET_READER_INT_H
#include "table/parquet_reader.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ls_pqr {
    const uint8_t *data;
    size_t len, footer_at; /* footer_at: where FileMetaData starts */
    ls_pqr_elem_t *elems;
    size_t nelems;
    int *cols; /* elem index per leaf */
    size_t ncols;
    int64_t num_rows;
    int nrgs;
    int64_t *rg_rows;
    ls_pqr_chunk_t *chunks; /* nrgs * ncols */
    char *created_by;
    char **kv; /* key, value (NULL when absent), ... */
    size_t nkv;
    char **owned; /* names and paths */
    size_t nowned;
};

/* The name of a Parquet physical type (Type in parquet.thrift), for errors. */
const char *ls_pqr_type_name(int t);
#endif
