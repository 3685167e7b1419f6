/* Materialization: the table half of the compaction pass. Given a log range
 * that compaction has just read (entries with real offsets), appends its
 * records as rows of the stream's Iceberg table when the stream's policy
 * enables one. Design note in materialize.c. */
#ifndef LS_MATERIALIZE_H
#define LS_MATERIALIZE_H
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "log/co_format.h"
#include "objstore/objstore.h"
#include "stream/catalog.h"

/* Policy keys (stream config, Kafka topic configs). */
#define LS_TABLE_ENABLED "lakestream.table.enabled"         /* true|false (default false) */
#define LS_TABLE_PARTITION "lakestream.table.partition"     /* day|hour|none (default day) */
#define LS_TABLE_COMPRESSION "lakestream.table.compression" /* zstd|snappy|gzip|none (zstd) */

int ls_table_enabled(const ls_stream_t *s);

/* Object-store prefix of a stream's table: "warehouse/<ns>/<name>". */
int ls_table_prefix(char *out, size_t cap, const ls_stream_t *s);

/* Appends the records of entries[0..n) (base offsets real; entry i spans
 * [pos[i], pos[i+1]) with the last ending at body_end) that lie above the
 * table's recorded last offset for this log, as one snapshot recording
 * last_offset. LS_OK also when the table already holds the range. On error
 * the caller must not swap the index (the range stays in WAL objects and the
 * next pass retries; data files written by a failed attempt are orphans). */
ls_status ls_materialize_range(ls_objstore_t *os, const char *warehouse_uri, const ls_stream_t *s,
                               int32_t partition, int64_t log_id, const uint8_t *obj,
                               const ls_co_entry_t *entries, uint32_t n, size_t body_end,
                               int64_t last_offset, uint64_t *rows_out, char *err, int errlen);
#endif
