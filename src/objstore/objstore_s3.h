/* S3 backend extras beyond the ls_objstore vtable (the backend itself is
 * opened through ls_objstore_open / ls_objstore_s3_open; see objstore_s3.c
 * for its URL options). */
#ifndef LS_OBJSTORE_S3_H
#define LS_OBJSTORE_S3_H
#include <stddef.h>

#include "objstore/objstore.h"

/* Counts multipart uploads in progress under the store's prefix + prefix
 * (ListMultipartUploads; at most one page). LS_EINVAL if os is not s3. */
ls_status ls_objstore_s3_count_uploads(ls_objstore_t *os, const char *prefix, size_t *count);
/* The store's non-secret client settings as resolved at open (for readers
 * of tables in it, e.g. the Iceberg REST catalog): endpoint
 * "http(s)://host[:port]", region and path-style addressing. Strings are
 * ls_malloc'd. LS_EINVAL if os is not s3. Never exposes credentials. */
ls_status ls_objstore_s3_client_props(ls_objstore_t *os, char **endpoint, char **region,
                                      int *path_style);
#endif
