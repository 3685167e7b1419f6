/* A private worker pool: a fixed set of named threads that run one owner's
 * jobs in FIFO order and complete each of them on the owner's libuv loop.
 *
 * Why not uv_queue_work alone: libuv has one process-wide pool (4 threads),
 * shared by every job of the broker and served in FIFO order: store reads of
 * catching-up consumers and their read-ahead, the compaction pass (which
 * holds a thread for its whole pass), group commits, GC deletes. Work that a
 * client waits on queued behind them; with an object store whose calls take
 * tens of milliseconds, the WAL's PUT and metadata commit (which gate every
 * acks=all answer) waited for whole rounds of other jobs. A workpool gives
 * such work threads no other job can take.
 *
 * Life cycle (every call on the loop thread except work callbacks):
 *
 *   ls_workpool_new ──▶ OPEN (threads wait for jobs; the async handle is
 *     open, so the loop stays alive) ──ls_workpool_submit*──▶ OPEN
 *   OPEN ──ls_workpool_close (nothing pending)──▶ CLOSING (threads told to
 *     stop and joined; the async handle closing) ──close callback──▶ freed,
 *     the owner's closed(arg) called.
 *
 * Invariants: a submitted job's work runs exactly once, on a pool thread,
 * and its after exactly once, on the loop, after its work returned; jobs
 * start in submission order (with more than one thread they may finish in
 * another); no job is submitted after close, and close is called only when
 * every submitted job's after has run (checked). */
#ifndef LS_WORKPOOL_H
#define LS_WORKPOOL_H
#include <stdint.h>
#include <uv.h>

#include "base/status.h"

typedef struct ls_work ls_work_t;
struct ls_work {
    void (*work)(ls_work_t *w);  /* on a pool thread */
    void (*after)(ls_work_t *w); /* on the loop */
    void *data;                  /* the owner's */
    ls_work_t *next;             /* the pool's */
};

typedef struct ls_workpool ls_workpool_t;

/* threads >= 1; name: the threads' name (at most 15 characters kept).
 * LS_OK, or LS_EIO with err set when a thread or the handle cannot start. */
ls_status ls_workpool_new(uv_loop_t *loop, const char *name, int threads, ls_workpool_t **out,
                          char *err, size_t errlen);
/* Queues w; w->data is the caller's. w stays the caller's memory and must
 * live until after(w) ran. */
void ls_workpool_submit(ls_workpool_t *p, ls_work_t *w, void (*work)(ls_work_t *w),
                        void (*after)(ls_work_t *w));
/* Jobs submitted and not yet completed on the loop. */
int ls_workpool_pending(const ls_workpool_t *p);
/* Stops and frees the pool once its handle closed, then calls closed(arg)
 * (may be NULL). Only with nothing pending. */
void ls_workpool_close(ls_workpool_t *p, void (*closed)(void *arg), void *arg);
#endif
