/* The state of one share partition (KIP-932, "queues for Kafka"): which
 * records of a topic partition a share group has delivered, to whom, and
 * how often. Pure logic: no sockets, no store I/O, no wall clock (callers
 * pass now_ms). Unit tests drive it directly (tests/unit/group/test_share_partition.c).
 *
 * Words. The share-partition start offset (SPSO) is the first offset not yet
 * finished with; the end offset (SPEO) is one past the last offset ever
 * handed out. Offsets below the SPSO are done (acknowledged or archived);
 * offsets in [SPSO, SPEO) are "in flight", each in one state:
 *
 *              acquire (delivery count +1, lock until now + lock duration)
 *   AVAILABLE ─────────────────────────────────────────────▶ ACQUIRED(member)
 *      ▲                                                       │  │  │
 *      │  RELEASE, lock expiry, member leaves                  │  │  │ ACCEPT
 *      └─────────── (count < delivery.count.limit) ────────────┘  │  ▼
 *                                                                 │ ACKNOWLEDGED
 *        REJECT, GAP, or RELEASE / expiry / leave with            ▼
 *        count >= delivery.count.limit ────────────────────▶ ARCHIVED
 *
 * RENEW (KIP-1222) keeps a record ACQUIRED by the same member and restarts
 * its lock from now; its delivery count does not move. Offsets at or above
 * the SPEO are acquired for the first time (AVAILABLE with count 0) when a
 * fetch reaches them.
 *
 * Invariants (checked by the unit tests):
 *  - a record is ACQUIRED by at most one member at a time, and only that
 *    member may acknowledge it (else INVALID_RECORD_STATE);
 *  - the SPSO never decreases; the record at the SPSO is never ACKNOWLEDGED
 *    or ARCHIVED (the SPSO moves over such prefixes at once);
 *  - SPEO - SPSO <= group.share.partition.max.record.locks whenever new
 *    offsets are acquired (a lowered limit only stops new acquisitions);
 *  - a record is AVAILABLE only while its delivery count is below
 *    group.share.delivery.count.limit, so it is delivered at most that often;
 *  - every call first expires the locks that are due by its now_ms, so an
 *    acknowledgement after the lock ran out is refused even when no tick ran.
 *
 * Durability (docs/FORMATS.md "Share partition state"). ls_sharep_encode
 * writes SPSO, SPEO and every in-flight record's state and delivery count;
 * ACQUIRED is written as AVAILABLE, because a lock does not outlive the broker
 * that holds it (the member fetches again from whichever broker serves the
 * partition next). ls_sharep_version counts the changes the encoding shows.
 * The rule for the embedder: an answer to ShareFetch (acquisitions count a
 * delivery) or ShareAcknowledge is sent only after a state that includes its
 * changes is stored, so an accepted or rejected record is never delivered
 * again and the delivery-count limit holds across a takeover.
 *
 * Threads: one caller at a time. */
#ifndef LS_SHARE_PARTITION_H
#define LS_SHARE_PARTITION_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "base/buf.h"
#include "base/status.h"

/* The upper bound Kafka gives group.share.partition.max.record.locks; also
 * the most in-flight records a stored state may hold. */
#define LS_SHAREP_MAX_RECORD_LOCKS_MAX 10000

typedef struct ls_sharep_config {
    int32_t delivery_count_limit;    /* group.share.delivery.count.limit (2..10, default 5) */
    int32_t record_lock_duration_ms; /* group.share.record.lock.duration.ms (1000..3600000) */
    int32_t max_record_locks;        /* group.share.partition.max.record.locks (100..10000) */
} ls_sharep_config_t;
void ls_sharep_config_defaults(ls_sharep_config_t *cfg);
/* NULL when every value is within Kafka's range; else a static message that
 * names the config. */
const char *ls_sharep_config_check(const ls_sharep_config_t *cfg);

typedef enum ls_sharep_state {
    LS_SHAREP_AVAILABLE = 0,
    LS_SHAREP_ACQUIRED,
    LS_SHAREP_ACKNOWLEDGED,
    LS_SHAREP_ARCHIVED,
} ls_sharep_state;

/* Kafka's AcknowledgeType values (ShareFetch / ShareAcknowledge). */
typedef enum ls_sharep_ack {
    LS_SHAREP_GAP = 0, /* no record at that offset: archived */
    LS_SHAREP_ACCEPT = 1,
    LS_SHAREP_RELEASE = 2,
    LS_SHAREP_REJECT = 3,
    LS_SHAREP_RENEW = 4, /* KIP-1222 */
} ls_sharep_ack;

/* Outcomes; mapped to Kafka error codes at the protocol edge. */
typedef enum ls_sharep_err {
    LS_SPERR_NONE = 0,
    LS_SPERR_INVALID_REQUEST,      /* malformed range or type, or beyond the SPEO */
    LS_SPERR_INVALID_RECORD_STATE, /* a record not ACQUIRED by this member */
} ls_sharep_err;
const char *ls_sharep_err_name(ls_sharep_err e);

typedef struct ls_sharep ls_sharep_t;

/* start_offset: the first SPSO (from share.auto.offset.reset, or an
 * AlterShareGroupOffsets). */
ls_sharep_t *ls_sharep_new(const ls_sharep_config_t *cfg, int64_t start_offset);
/* The settings from now on (a group's share.* configs changed): a longer or
 * shorter lock applies to the next acquisition or renewal, a lower delivery
 * limit archives the available records it now forbids (as a decode does). */
void ls_sharep_set_config(ls_sharep_t *sp, const ls_sharep_config_t *cfg);
void ls_sharep_free(ls_sharep_t *sp);
int64_t ls_sharep_spso(const ls_sharep_t *sp);
int64_t ls_sharep_speo(const ls_sharep_t *sp);
/* State, delivery count and (ACQUIRED only, else NULL) owner of an offset
 * in [SPSO, SPEO); false outside. */
bool ls_sharep_record(const ls_sharep_t *sp, int64_t offset, ls_sharep_state *state,
                      int32_t *delivery_count, const char **member_id);
/* Counts the changes ls_sharep_encode shows; the embedder stores the state
 * when it moved (see the durability rule above). */
uint64_t ls_sharep_version(const ls_sharep_t *sp);

/* Kafka's AcquiredRecords: consecutive offsets with one delivery count. */
typedef struct ls_sharep_range {
    int64_t first, last;
    int32_t delivery_count;
} ls_sharep_range_t;

/* The lowest offset an acquire would hand out now (expiring due locks
 * first): the first AVAILABLE in-flight record, else the SPEO; -1 when the
 * in-flight window is full. Where a fetch starts reading. */
int64_t ls_sharep_next_offset(ls_sharep_t *sp, int64_t now_ms);

/* Acquires for member_id up to max_records records below log_end, lowest
 * offsets first: AVAILABLE in-flight records, then new offsets from the
 * SPEO while the in-flight window allows. log_end is the partition's high
 * watermark, or the end of the records the caller has read, exclusive. *ranges (ascending, valid
 * until the next call) and the count returned describe what was acquired; 0 when nothing was. */
int ls_sharep_acquire(ls_sharep_t *sp, const char *member_id, int64_t log_end, int max_records,
                      int64_t now_ms, const ls_sharep_range_t **ranges);

/* One AcknowledgementBatch: offsets [first, last] with either one type for
 * all (ntypes 1) or one type per offset (ntypes last - first + 1). All or
 * nothing: on an error no record changes. */
ls_sharep_err ls_sharep_acknowledge(ls_sharep_t *sp, const char *member_id, int64_t first,
                                    int64_t last, const uint8_t *types, int ntypes, int64_t now_ms);

/* The member left the group (or its share session closed): its acquired
 * records go back to AVAILABLE, or to ARCHIVED at the delivery-count limit. */
void ls_sharep_release_member(ls_sharep_t *sp, const char *member_id, int64_t now_ms);

/* Expires the locks due by now_ms; returns when to call it next: no lock
 * ends earlier (INT64_MAX: none held). */
int64_t ls_sharep_tick(ls_sharep_t *sp, int64_t now_ms);

/* The log's start offset moved (retention, DeleteRecords): records below it
 * are gone, so the SPSO moves up to it (and the SPEO with it if behind). */
void ls_sharep_log_start(ls_sharep_t *sp, int64_t log_start);

/* The stored form (docs/FORMATS.md). decode: LS_ECORRUPT on anything
 * inconsistent, never reading past len; locks come back AVAILABLE. */
void ls_sharep_encode(const ls_sharep_t *sp, ls_buf_t *b);
ls_status ls_sharep_decode(const uint8_t *p, size_t len, const ls_sharep_config_t *cfg,
                           ls_sharep_t **out);
#endif
