/* Cold ranges held by a table (docs/ARCHITECTURE.md "The third copy of a
 * table log"): an index entry of kind LS_IDX_TABLE names no object; its
 * records [first, last] are rows of the log's table, and the log reader asks
 * a cold-range source for them.
 *
 * Why an interface: the log layer may not depend on the table layer
 * (tools/lint/layers.txt). The source is implemented above (compact/, wired
 * by server/) and handed down here, so dependencies keep pointing down.
 *
 * Contract of read (called on a libuv worker thread, several at once):
 *  - answers the records of log_id with offsets in [from, to] (to: the
 *    entry's last offset) as RecordBatches v2 carrying their real offsets,
 *    in offset order, starting with the record at `from` (a range in the
 *    table has no gaps), stopping at about max_bytes (the first batch is
 *    whole whatever its size); *next is one past the last record returned;
 *  - reads the table's current snapshot: the snapshot, not the index, says
 *    which files hold the rows, so a file replaced by a rewrite or expired
 *    is met as LS_ENOTFOUND by one read and re-planned by the next; the log
 *    reader retries such a read (like a compacted object replaced while a
 *    read waited);
 *  - errors: LS_ENOTFOUND (the file plan is stale: retry), LS_EAGAIN/LS_EIO
 *    (store trouble: the fetch answers KAFKA_STORAGE_ERROR, clients retry),
 *    LS_ECORRUPT (rows missing from the table or unreadable: logged as an
 *    error), with err naming the table, file and offset.
 * The source never decides what is readable: the log start, the high
 * watermark and the last stable offset stay the log's (trims move the log
 * start as for any entry; rows below it are never asked for). */
#ifndef LS_COLD_SOURCE_H
#define LS_COLD_SOURCE_H
#include <stddef.h>
#include <stdint.h>
#include "base/buf.h"
#include "base/status.h"

typedef struct ls_cold_source {
    ls_status (*read)(void *ctx, int64_t log_id, int64_t from, int64_t to, size_t max_bytes,
                      ls_buf_t *out, int64_t *next, char *err, size_t errlen);
    void *ctx;
} ls_cold_source_t;

/* The object name an LS_IDX_TABLE entry carries (the entry format requires
 * a non-empty name; no object of this name exists). */
#define LS_COLD_TABLE_OBJECT "table"

struct ls_logstore;
/* Sets (or, with NULL, clears) the source; the struct is copied. Before
 * the first read. Without a source, a read meeting an in-table entry
 * answers LS_EIO and logs why. */
void ls_logstore_set_cold_source(struct ls_logstore *ls, const ls_cold_source_t *src);
#endif
