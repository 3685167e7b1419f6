/* Log trim: advancing a log's start offset and removing what lies below it
 * (a trim is logical first, the start record moves, and physical after, the
 * objects below it are deleted; a soft trim keeps WAL entries). Used by the
 * compactor's retention (worker thread, blocking call) and by DeleteRecords
 * (ls_logstore_trim in logstore.h, which runs this on a worker and then
 * tells the loop). Design note at the top of log_trim.c. */
#ifndef LS_LOG_TRIM_H
#define LS_LOG_TRIM_H
#include <stdbool.h>
#include <stdint.h>

#include "base/status.h"
#include "log/log_meta.h"
#include "meta/meta.h"
#include "objstore/objstore.h"

/* new_start meaning "the high watermark read by the trim itself" (Kafka's
 * DeleteRecords offset -1). */
#define LS_TRIM_TO_HIGH_WATERMARK INT64_MAX

typedef struct ls_trim_req {
    int64_t log_id;
    int64_t new_start; /* <= high watermark, or LS_TRIM_TO_HIGH_WATERMARK */
    /* Soft trim for WAL entries: advance the start but keep WAL index entries
     * (and everything after the first one) because a reader of raw entries
     * (the table materializer) has not consumed them yet; compaction turns
     * them into COs and a later trim removes those. */
    bool keep_wal;
    /* Optional compare added to every txn (the compactor's ownership key):
     * once it fails every attempt does, and the trim ends with LS_ECONFLICT. */
    const ls_meta_cmp_t *fence;
    /* A fenced (deleted) log is trimmed too: its storage is being reclaimed.
     * Otherwise a fenced log is LS_ENOTFOUND (DeleteRecords of a deleted topic). */
    bool reclaim;
} ls_trim_req_t;

/* The stored state after the call (also when nothing changed or a later txn
 * failed: only committed txns count). */
typedef struct ls_trim_result {
    int64_t log_start;
    int64_t trimmed_bytes; /* total */
    int64_t index_start;   /* no index entry is left below this offset */
    int entries_removed;
    int wal_released; /* WAL object keys deleted (GC removes the objects) */
    int cos_deleted;  /* compacted objects deleted */
} ls_trim_result_t;

/* Blocking; worker threads only. LS_ERANGE: new_start beyond the high
 * watermark; LS_ENOTFOUND: the log is fenced (its stream was dropped);
 * LS_ECONFLICT: the fence failed, or concurrent writers won every attempt
 * (each attempt rereads the start, the head and the index). */
ls_status ls_log_trim(ls_meta_t *meta, ls_objstore_t *os, const ls_trim_req_t *req,
                      ls_trim_result_t *out);
/* Reads a log's start record (absent: zeros, *mod_rev 0). */
ls_status ls_log_start_read(ls_meta_t *meta, int64_t log_id, ls_start_t *out, int64_t *mod_rev);
/* A log's last stable offset (log_txn.h) and the largest span of its
 * aborted transactions, from its stored head (absent: 0 and 0). For the
 * compaction pass, which may not ask the loop; read it before
 * ls_log_aborted_read. Blocking; worker threads only. */
ls_status ls_log_stable_read(ls_meta_t *meta, int64_t log_id, int64_t *lso,
                             int64_t *max_aborted_span);
#endif
