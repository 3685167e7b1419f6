/* Shared fixture of the unit tests that drive log storage on a libuv loop
 * with the in-memory stores (test_compactor.c, test_retention.c, the cold-read,
 * unfold and key-compaction tests): one loop, reads collected whole,
 * synthetic entries, append acknowledgements, and a small logstore config. */
#ifndef LS_TEST_LOG_FIXTURE_H
#define LS_TEST_LOG_FIXTURE_H
#include "records/records.h"
#include <string.h>
#include <uv.h>

#include "base/buf.h"
#include "log/logstore.h"
#include "objstore/objstore.h"

static uv_loop_t loop;

/* A 77-byte entry framed like a RecordBatch v2 (base offset 0, length,
 * lastOffsetDelta = records - 1, maxTimestamp ts), body bytes = fill. */
static inline size_t make_entry(uint8_t *out, int records, uint8_t fill, int64_t ts)
{
    size_t len = 61 + 16;
    memset(out, fill, len);
    ls_be64_put(out, 0);
    ls_be32_put(out + 8, (uint32_t)(len - 12));
    ls_be32_put(out + LS_RB_OFF_LAST_OFFSET_DELTA, (uint32_t)(records - 1));
    ls_be64_put(out + LS_RB_OFF_MAX_TIMESTAMP, (uint64_t)ts);
    return len;
}

/* What one read returned: its status, the log start it saw, and the bytes
 * of its slices joined (free with ls_buf_free). */
typedef struct {
    int done;
    ls_status st;
    int64_t log_start;
    ls_buf_t bytes;
} read_got_t;

static inline void on_read_got(void *arg, ls_read_result_t *res)
{
    read_got_t *r = arg;
    r->st = res->st;
    r->log_start = res->log_start;
    ls_buf_init(&r->bytes);
    for (int i = 0; i < res->nslices; i++)
        ls_buf_append(&r->bytes, res->slices[i].chunk->data + res->slices[i].off,
                      res->slices[i].len);
    ls_read_result_free(res);
    r->done = 1;
}

typedef struct {
    int done;
    ls_status st;
    int64_t off;
} ack_t;

static void on_ack(void *arg, ls_status st, int64_t base, int64_t start)
{
    ack_t *a = arg;
    a->done = 1;
    a->st = st;
    a->off = base;
}

static void run_until(int *flag)
{
    for (int i = 0; i < 1000000 && !*flag; i++)
        uv_run(&loop, UV_RUN_ONCE);
}

static void flag_cb(void *arg) { *(int *)arg = 1; }

/* Shuts ls down (flushing what it buffers) and frees it. */
static inline void close_store(ls_logstore_t *ls)
{
    int shut = 0;
    ls_logstore_shutdown(ls, flag_cb, &shut);
    run_until(&shut);
    ls_logstore_free(ls);
}

static ls_logstore_config_t lcfg(void)
{
    ls_logstore_config_t c = {.flush_max_bytes = 1 << 20,
                              .flush_linger_ms = 1,
                              .max_inflight_flushes = 2,
                              .buffer_max_bytes = 64 << 20,
                              .read_cache_max_bytes = 64 << 20,
                              .gc_grace_ms = 0,
                              .broker_id = 1};
    return c;
}

/* Objects under prefix, or (size_t)-1 when listing fails. */
static size_t count_objects(ls_objstore_t *os, const char *prefix)
{
    ls_objinfo_t *v;
    size_t n;
    if (ls_objstore_list(os, prefix, &v, &n) != LS_OK) return (size_t)-1;
    ls_objinfo_free(v, n);
    return n;
}
#endif
