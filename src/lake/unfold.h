/* Unfolding in-table ranges: a log's index entries of kind LS_IDX_TABLE
 * (log/cold_source.h) turned back into compacted objects, read from the
 * table's rows, before the table stops being a valid source for them.
 * Design note, state machine and invariants in unfold.c. */
#ifndef LS_UNFOLD_H
#define LS_UNFOLD_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "log/cold_source.h"
#include "log/log_meta.h"
#include "meta/meta.h"
#include "objstore/objstore.h"
#include "stream/catalog.h"
#include "stream/policy.h"

/* The table a log's in-table ranges are rows of (docs/FORMATS.md "Cold
 * reference"): /ls/coldref/<log_id %016x> = JSON {"ns","table","prefix"}. */
typedef struct ls_unfold_ref {
    int64_t log_id;
    char ns[256];
    char table[256];
    char prefix[600];
    int64_t mod_rev;
} ls_unfold_ref_t;

/* Every reference (one prefix scan); undecodable ones are skipped with a
 * warning naming the key. */
ls_status ls_unfold_refs_list(ls_meta_t *meta, ls_unfold_ref_t **out, size_t *n);
/* log_id's reference: LS_ENOTFOUND when it has none, LS_ECORRUPT when the
 * stored one does not decode (the broker's cold source, cold_tables.c). */
ls_status ls_unfold_ref_read(ls_meta_t *meta, int64_t log_id, ls_unfold_ref_t *out);
/* Records that log_id's in-table ranges are rows of ns.table at prefix:
 * LS_OK when the reference now names that table (written, or already so),
 * LS_ECONFLICT when it names another table (its ranges must be unfolded
 * first; *held gets the other table's name), else the store's status. */
ls_status ls_unfold_ref_ensure(ls_meta_t *meta, int64_t log_id, const char *ns, const char *table,
                               const char *prefix, char *held, size_t heldlen);
/* The metadata key of log_id's reference. */
int ls_unfold_ref_key(char *out, size_t cap, int64_t log_id);

typedef struct ls_unfold_limits {
    size_t chunk_bytes; /* batches per compacted object, about (compaction.max.bytes) */
    int max_chunks;     /* objects one call writes at most (the rest next call); <= 0: 64 */
} ls_unfold_limits_t;

typedef struct ls_unfold_stats {
    uint64_t ranges_unfolded; /* in-table entries fully turned into objects */
    uint64_t objects_written;
    uint64_t bytes_written;
    uint64_t records; /* records moved into objects */
    uint64_t failures;
    uint64_t refs_released; /* references deleted: no in-table entry left */
} ls_unfold_stats_t;

/* One swapped index entry (a put under its last offset's key), in order:
 * the caller's in-memory index of the log is stale after it (the compactor
 * has the log's index reloaded, ls_logstore_reload_index). */
typedef void (*ls_unfold_put_fn)(void *arg, int64_t log_id, const ls_idx_entry_t *e);

/* Unfolds log_id's in-table entries, oldest first, through src (which reads
 * the table named by the log's reference), each in chunks of about
 * lim->chunk_bytes: per chunk one object (create-only) then one metadata
 * txn fenced by `fence` (the caller's claim on the log) and the entry's
 * revision. *left: in-table entries still in the index afterwards (0: done,
 * and the reference, if any, is released in the same call). A failure
 * stops the call (logged, counted); everything done so far stays done. */
ls_status ls_unfold_log(ls_meta_t *meta, ls_objstore_t *os, int64_t log_id,
                        const ls_cold_source_t *src, const ls_unfold_limits_t *lim,
                        const ls_meta_cmp_t *fence, ls_unfold_put_fn put, void *arg,
                        ls_unfold_stats_t *st, int64_t *left);

/* Whether a stream's table (policy p, enabled or not) holds its records byte
 * for byte and nothing rewrites its rows: enabled, value.format=raw,
 * key.format=raw, write.mode=append, no changelog table, cleanup.policy
 * without compact. Only then may a log of it have
 * in-table entries (the one predicate for adding and for unfolding them).
 * false with why naming the first setting that rules it out. */
bool ls_unfold_source_valid(const ls_stream_t *s, const ls_policy_t *p, char *why, size_t whylen);

/* A cold-range source reading the table a reference names (whatever the
 * stream's policy says now): rows rebuilt as batches compressed with
 * LS_UNFOLD_CODEC (the producers' codecs are not kept by the rows; lz4 is
 * readable by every Kafka client and Fetch version that reads lz4, unlike
 * zstd), LogAppendTime batches when log_append_time. The table is loaded
 * at the first read and reloaded after a stale plan. Free with
 * ls_unfold_table_source_free. One thread at a time. */
#define LS_UNFOLD_CODEC 3 /* LS_CODEC_LZ4 */
ls_cold_source_t *ls_unfold_table_source_new(ls_meta_t *meta, ls_objstore_t *os,
                                             const ls_unfold_ref_t *ref, bool log_append_time);
void ls_unfold_table_source_free(ls_cold_source_t *src);

/* In-table entries of log_id and their offsets (a paged index scan): *n
 * entries covering *records offsets. */
ls_status ls_unfold_pending(ls_meta_t *meta, int64_t log_id, int64_t *n, int64_t *records);
#endif
