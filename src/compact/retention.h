/* Retention: which prefix of a log Kafka's retention.ms / retention.bytes
 * let go. The compactor runs it per log every
 * log.retention.check.interval.ms and applies the answer with ls_log_trim
 * (log/log_trim.h) under its claim on the log. Design note in retention.c. */
#ifndef LS_RETENTION_H
#define LS_RETENTION_H
#include <stdbool.h>
#include <stdint.h>

#include "meta/meta.h"
#include "stream/catalog.h"

typedef struct ls_retention_policy {
    int64_t retention_ms;    /* -1: no time limit */
    int64_t retention_bytes; /* -1: no size limit */
    bool keep_wal;           /* table-enabled stream: never cut unmaterialized entries */
} ls_retention_policy_t;

/* A stream's policy: its retention.ms / retention.bytes topic configs, else
 * the broker defaults. An unparsable override falls back to the default
 * (with a warning: CreateTopics validates, so only a hand-edited store gets
 * here). s NULL (no catalog): the defaults apply. table_enabled: the
 * stream's resolved materialization policy enables its table. */
void ls_retention_policy_resolve(const ls_stream_t *s, int64_t default_ms, int64_t default_bytes,
                                 bool table_enabled, ls_retention_policy_t *out);

/* Computes the log start retention allows at now_ms: the end of the longest
 * prefix of whole index entries that are expired (max timestamp older than
 * retention.ms), over the size limit (the retained bytes minus the entry
 * still >= retention.bytes), or already below the log start. *work is true
 * when a trim to *target would change something (or pay a CO sweep a crash
 * left owed). Blocking (metadata reads). */
ls_status ls_retention_target(ls_meta_t *meta, int64_t log_id, const ls_retention_policy_t *p,
                              int64_t now_ms, int64_t *target, bool *work);
#endif
