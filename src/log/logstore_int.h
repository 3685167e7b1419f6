/* Private state of log storage, shared by logstore.c (lifecycle, heads, GC,
 * fence), wal_writer.c (append -> flush -> commit) and log_reader.c (index,
 * reads, waiters). Loop thread only, except the fields documented as owned by
 * a worker while a job is in flight. */
#ifndef LS_LOGSTORE_INT_H
#define LS_LOGSTORE_INT_H
#include <pthread.h>
#include "base/buf.h"
#include "base/i64map.h"
#include "base/workpool.h"
#include "log/log_meta.h"
#include "log/cold_source.h"
#define LS_COLD_BLOCK_SLOTS 4
#include "log/logstore.h"
#include "base/chunk.h"
#include "log/read_cache.h"

typedef struct ls_flush ls_flush_t;
typedef struct ls_section ls_section_t;
typedef struct ls_read_op ls_read_op_t;
typedef struct ls_idx_replay ls_idx_replay_t;
typedef struct ls_watch_ev ls_watch_ev_t;
typedef struct ls_prefetch ls_prefetch_t;

/* A retry of an idempotent batch that is still in flight: answered with the
 * original's outcome. */
typedef struct ls_dup_waiter {
    ls_append_cb cb;
    void *arg;
    struct ls_dup_waiter *next;
} ls_dup_waiter_t;

/* One appended entry waiting for its flush to commit. */
typedef struct ls_pending {
    struct ls_pending *next;  /* in section order */
    struct ls_pending *pnext; /* in the log's idempotent-pending list */
    ls_section_t *section;
    ls_append_cb cb;
    void *arg;
    int64_t rel_offset; /* offsets before this entry within its section */
    int32_t offset_count;
    int64_t max_timestamp; /* of the batch: its producer's last timestamp once committed */
    ls_producer_ref_t producer;
    int64_t txn_seq; /* transactional batch (0: none) */
    bool is_marker;
    ls_log_marker_t marker; /* is_marker: the marker this control batch carries */
    ls_dup_waiter_t *dups;
} ls_pending_t;

struct ls_log_waiter {
    struct ls_log_waiter *next, *prev;
    int64_t log_id;
    void (*cb)(void *arg);
    void *arg;
};

typedef struct ls_logstate {
    int64_t log_id;
    ls_head_t head;    /* committed head as last seen */
    int64_t head_rev;  /* mod_rev of the head key (0: absent) */
    bool head_stale;   /* a commit outcome was ambiguous: reload before use */
    int64_t log_start; /* from /ls/start/ (log_trim.c): only grows */
    int64_t trimmed_bytes;
    ls_section_t *open_section; /* this log's section in the open flush */
    int64_t doom_before; /* WAL I8: sections of flushes sealed before this seal number fail */
    bool doom_mark;      /* scratch of doom_failed_logs (wal_writer.c) */
    ls_pending_t *idem_head, *idem_tail; /* uncommitted idempotent entries, append order */
    /* offset index (loaded lazily) */
    int idx_state;       /* 0 unloaded, 1 loading, 2 loaded */
    ls_idx_entry_t *idx; /* sorted by last_offset */
    int nidx, capidx;
    ls_read_op_t *idx_waiting; /* reads parked until the index loads */
    /* blocks rebuilt from the table lately (log_reader.c): where to look in
     * the read cache, whose runs are keyed by their last offset */
    struct {
        int64_t first, last; /* last < first: empty */
    } cold_blocks[LS_COLD_BLOCK_SLOTS];
    unsigned cold_slot;      /* next slot to reuse */
    ls_idx_replay_t *replay; /* watched index changes during a load */
    int64_t idx_rev;         /* store revision the loaded index reflects (0: unknown) */
    /* aborted-transactions index (log_aborted.c, loaded lazily) */
    int aborted_state;         /* 0 unloaded, 1 loading, 2 loaded, 3 loading but dropped */
    ls_aborted_list_t aborted; /* valid in states 1-2; commits and the watch add to it */
    struct ls_aborted_wait *aborted_waiting; /* lookups parked until it loads */
    ls_log_waiter_t waiters;                 /* sentinel of commit waiters */
} ls_logstate_t;

struct ls_section {
    ls_logstate_t *log;
    ls_section_t *next; /* in flush order */
    ls_buf_t buf;       /* bytes while the flush is open */
    ls_chunk_t *chunk;  /* bytes after seal */
    ls_pending_t *first, *last;
    uint32_t entries;
    int64_t offsets;
    int64_t max_timestamp;
    int64_t max_timestamp_rel; /* offset (relative) of the entry holding max ts */
    uint64_t obj_pos;
    /* commit job (worker-owned while committing) */
    ls_head_t head_before; /* copy of the head the commit builds on */
    int64_t head_rev_before;
    bool reload_head;
    ls_head_t head_after;
    int64_t commit_rev; /* revision of the txn that committed it */
    int64_t base_offset;
    ls_status st;          /* per-section commit outcome */
    bool doomed;           /* WAL I8: an older section of this log failed: fail, never commit */
    int nmarkers;          /* markers among the entries (each may abort a range) */
    ls_aborted_t *aborted; /* built with head_after: ranges the commit indexes */
    int naborted;
};

typedef enum {
    FLUSH_OPEN,
    FLUSH_PUTTING,
    FLUSH_PUT_DONE,
    FLUSH_COMMITTING,
} ls_flush_state;

struct ls_flush {
    ls_logstore_t *ls;
    ls_flush_t *next; /* seal order */
    ls_flush_state state;
    bool doomed;    /* an earlier flush failed: fail instead of commit */
    int64_t seq;    /* seal number (WAL I8) */
    uint32_t nlive; /* sections the commit may commit (the WAL object's reference count) */
    char key[96];
    ls_section_t *sections, *last_section;
    uint32_t nsections;
    size_t bytes;
    int64_t opened_ms;
    int64_t opened_us, sealed_us; /* monotonic, for the linger and flush metrics */
    ls_buf_t footer;
    uint8_t header[8];
    ls_status put_st;
    char *put_err; /* the store's message when put_st failed (NULL: none) */
    ls_status commit_st;
    char err[256];
    ls_work_t work; /* on ls->wal_pool */
};

struct ls_logstore {
    uv_loop_t *loop;
    ls_meta_t *meta;
    ls_objstore_t *os;
    ls_logstore_config_t cfg;
    ls_i64map_t logs; /* log_id -> ls_logstate_t */
    /* write path */
    ls_flush_t *open;                    /* accumulating, or NULL */
    ls_flush_t *queue_head, *queue_tail; /* sealed, uncommitted, seal order */
    int inflight;                        /* sealed and not yet finished */
    bool committing;
    int64_t last_seal_ms;
    int64_t seals;             /* flushes sealed so far: the next seal number */
    int64_t commit_started_us; /* monotonic start of the running commit */
    int64_t put_est_us;        /* moving averages of a PUT and of a commit (0: none yet), */
    int64_t commit_est_us;     /* which time a flush sealed behind a running commit */
    uint32_t flush_seq;
    uint32_t boot_nonce;
    int64_t buffered_bytes; /* open + in flight */
    bool pressure;
    void (*pressure_cb)(void *arg, bool pressure);
    void *pressure_arg;
    ls_workpool_t *wal_pool; /* PUTs and commits: threads of the WAL alone (base/workpool.h) */
    uv_timer_t seal_timer;
    bool seal_timer_armed;
    int64_t seal_timer_due;
    /* read path */
    ls_read_cache_t *cache;
    ls_bufpool_t *bufpool; /* buffers of store reads the cache keeps (base/chunk.h) */
    ls_entry_time_fn entry_time;
    ls_cold_source_t cold;     /* in-table ranges (cold_source.h); read NULL: none */
    ls_prefetch_t *prefetches; /* read-ahead GETs in flight (log_reader.c) */
    int nprefetches;
    /* other brokers' commits (log_watch.c) */
    bool watch_started;
    ls_meta_watch_t *watch;
    uv_async_t watch_async;
    bool watch_async_ready;   /* under watch_mu: the handle may be signalled */
    pthread_mutex_t watch_mu; /* guards the queue and watch_lost */
    ls_watch_ev_t *watch_head, **watch_tail;
    bool watch_lost;
    bool watch_resyncing;
    int64_t watch_ev_rev; /* loop: revision of the watch event being applied (0: none) */
    /* lifecycle */
    uv_timer_t gc_timer;
    bool gc_running;
    int64_t gc_turn_ttl_ms; /* TTL of the GC turn's lease (logstore.c) */
    int64_t gc_lease;       /* GC worker: lease of our GC turn, 0 when not ours */
    bool shutting_down;
    void (*shutdown_done)(void *arg);
    void *shutdown_arg;
    int handles_open;
    ls_logstore_stats_t stats;
};

/* logstore.c */
ls_logstate_t *ls_logstate_get(ls_logstore_t *ls, int64_t log_id, bool create);
void ls_logstore_check_shutdown(ls_logstore_t *ls);
/* wal_writer.c */
#define LS_WAL_MAX_THREADS 32 /* the WAL's own threads, at most */
/* Opening: ls_wal_init starts the WAL's threads (LS_EIO with err set when
 * they cannot start); ls_wal_start, once nothing else can fail, its seal
 * timer; ls_wal_abandon undoes ls_wal_init when the store fails to open. */
ls_status ls_wal_init(ls_logstore_t *ls, char *err, size_t errlen);
void ls_wal_start(ls_logstore_t *ls);
void ls_wal_abandon(ls_logstore_t *ls);
void ls_wal_seal_now(ls_logstore_t *ls); /* used by shutdown */
bool ls_wal_idle(const ls_logstore_t *ls);
void ls_wal_check_invariants(const ls_logstore_t *ls); /* panics naming the broken one */
/* log_watch.c */
ls_status ls_log_watch_start(ls_logstore_t *ls, int64_t after_rev, char *err, size_t errlen);
void ls_log_watch_resync_if_lost(ls_logstore_t *ls);
void ls_log_watch_cancel(ls_logstore_t *ls); /* no callbacks after it returns */
void ls_log_watch_free(ls_logstore_t *ls);
/* log_trim.c: a log start record (this broker's trim, or another's seen by
 * the watch): the start and trimmed bytes only grow; index entries and
 * cached runs ending below index_start are dropped. */
void ls_trim_learn(ls_logstore_t *ls, int64_t log_id, int64_t log_start, int64_t trimmed_bytes,
                   int64_t index_start);
/* log_reader.c */
void ls_reader_on_commit(ls_logstore_t *ls, ls_logstate_t *lg, const ls_idx_entry_t *e,
                         ls_chunk_t *chunk, size_t off);
void ls_reader_wake(ls_logstore_t *ls, ls_logstate_t *lg);
void ls_reader_drop_log(ls_logstore_t *ls, ls_logstate_t *lg);
/* Key-value updates of the index (entry keyed by last offset), from this
 * broker's commits and from the metadata watch (log_watch.c). */
void ls_reader_index_put(ls_logstore_t *ls, ls_logstate_t *lg, const ls_idx_entry_t *e);
void ls_reader_index_del(ls_logstore_t *ls, ls_logstate_t *lg, int64_t last_offset);
/* Deletes n keys at once: one pass over the index from the first deleted
 * entry instead of one move of the index's tail per key (a compaction swap
 * deletes up to compaction.max.entries consecutive keys in one txn). */
void ls_reader_index_del_many(ls_logstore_t *ls, ls_logstate_t *lg, const int64_t *lasts, int n);
void ls_reader_replay_clear(ls_logstate_t *lg);
/* log_aborted.c: aborted ranges committed (here or, via the watch,
 * elsewhere); the log start moved; forget the list (reload on next use);
 * free a log's list and fail its parked lookups. */
void ls_aborted_add(ls_logstate_t *lg, const ls_aborted_t *v, int n);
void ls_aborted_learn_start(ls_logstate_t *lg);
void ls_aborted_forget(ls_logstate_t *lg, int64_t first_offset);
void ls_aborted_drop(ls_logstate_t *lg);
void ls_aborted_free(ls_logstate_t *lg);
#endif
