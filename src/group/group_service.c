/* Group coordinator wiring (design note: group_service.h).
 *
 * Ownership: the service owns the coordinator, the write queue and two
 * timers (deadline ticks, retention pass). Jobs own copies of their keys and
 * values. A job's callback runs on the loop after its txns.
 *
 * Fencing (issue 17 §2): a broker that was paused longer than its session
 * (SIGSTOP, a VM freeze) comes back still believing it coordinates its
 * groups, while another broker took them over and acknowledged newer
 * commits. So ownership is proved in the store, not assumed:
 *  - loading a group also writes its owner record (/ls/group/owner/<gid>);
 *    the revision of that write is the group's fence on this broker;
 *  - every write of the group (offsets, record, deletion) carries a compare
 *    "owner record's mod_rev == fence" in the same txn, so once another
 *    broker loaded the group (rewriting the record) nothing this broker
 *    writes for it can land: the job fails with LS_EFENCED, the group is
 *    dropped from memory and clients are sent to look the coordinator up;
 *  - OffsetFetch of a group in memory first checks the owner record
 *    (ls_group_service_verify): a stale copy is dropped, never served.
 * A broker that loads the group again reads the store first, so whoever
 * owns it last starts from every acknowledged commit: committed offsets
 * never go backwards. Invariant: an acknowledged commit was written under
 * the fence of the load whose in-memory copy answered it. */
#include "group/group_service.h"

#include <stdio.h>
#include <string.h>

#include <stdlib.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/clock.h"
#include "base/diag.h"
#include "base/hash.h"
#include "base/i64map.h"
#include "group/group_txn.h"
#include "meta/meta_keys.h"

/* ------------------------------------------------------------------ keys */

static char *buf_cstr(ls_buf_t *b)
{
    ls_buf_append_u8(b, 0);
    size_t n;
    return (char *)ls_buf_steal(b, &n);
}

void ls_group_config_from_broker(ls_group_config_t *gc, const ls_config_t *cfg)
{
    *gc = (ls_group_config_t){
        .min_session_timeout_ms = cfg->group_min_session_timeout_ms,
        .max_session_timeout_ms = cfg->group_max_session_timeout_ms,
        .initial_rebalance_delay_ms = cfg->group_initial_rebalance_delay_ms,
        .max_size = cfg->group_max_size,
        .offset_metadata_max_bytes = cfg->offset_metadata_max_bytes,
        .offsets_retention_ms = cfg->offsets_retention_minutes * 60000,
        .consumer = {.session_timeout_ms = cfg->group_consumer_session_timeout_ms,
                     .heartbeat_interval_ms = cfg->group_consumer_heartbeat_interval_ms,
                     .max_size = cfg->group_consumer_max_size},
        .share = {.session_timeout_ms = cfg->group_share_session_timeout_ms,
                  .heartbeat_interval_ms = cfg->group_share_heartbeat_interval_ms,
                  .max_size = cfg->group_share_max_size},
        .streams = {.session_timeout_ms = cfg->group_streams_session_timeout_ms,
                    .heartbeat_interval_ms = cfg->group_streams_heartbeat_interval_ms,
                    .max_size = cfg->group_streams_max_size,
                    .num_standby_replicas = cfg->group_streams_num_standby_replicas},
    };
    /* group.consumer.assignors: short names, checked by ls_config_finish */
    for (const char *p = cfg->group_consumer_assignors; p && *p && gc->consumer.nassignors < 2;) {
        size_t n = strcspn(p, ",");
        char name[16];
        snprintf(name, sizeof name, "%.*s", (int)n, p);
        if (ls_cgroup_assignor_parse(name, &gc->consumer.assignors[gc->consumer.nassignors]))
            gc->consumer.nassignors++;
        p += n + (p[n] == ',');
    }
}

char *ls_group_key_meta(const char *group_id)
{
    ls_buf_t b;
    ls_buf_init(&b);
    ls_buf_append(&b, LS_KEY_GROUP_META, strlen(LS_KEY_GROUP_META));
    ls_buf_append_keypart(&b, group_id);
    return buf_cstr(&b);
}

char *ls_group_key_owner(const char *group_id)
{
    ls_buf_t b;
    ls_buf_init(&b);
    ls_buf_append(&b, LS_KEY_GROUP_OWNER, strlen(LS_KEY_GROUP_OWNER));
    ls_buf_append_keypart(&b, group_id);
    return buf_cstr(&b);
}

char *ls_group_key_offsets_prefix(const char *group_id)
{
    ls_buf_t b;
    ls_buf_init(&b);
    ls_buf_append(&b, LS_KEY_GROUP_OFFSETS, strlen(LS_KEY_GROUP_OFFSETS));
    ls_buf_append_keypart(&b, group_id);
    ls_buf_append_u8(&b, '/');
    return buf_cstr(&b);
}

char *ls_group_key_offset(const char *group_id, const char *topic, int32_t partition)
{
    ls_buf_t b;
    ls_buf_init(&b);
    ls_buf_append(&b, LS_KEY_GROUP_OFFSETS, strlen(LS_KEY_GROUP_OFFSETS));
    ls_buf_append_keypart(&b, group_id);
    ls_buf_printf(&b, "/%s/%010d", topic, partition);
    return buf_cstr(&b);
}

/* ------------------------------------------------------------- store I/O */

void ls_table_groups_free(ls_table_group_t *v, int n)
{
    for (int i = 0; i < n; i++) {
        ls_free(v[i].group_id);
        ls_free(v[i].topic);
        ls_free(v[i].offsets);
    }
    ls_free(v);
}

ls_status ls_group_store_offsets(ls_meta_t *meta, ls_group_offset_fn cb, void *arg)
{
    ls_kvlist_t l;
    ls_status st = ls_meta_scan_prefix(meta, LS_KEY_GROUP_OFFSETS, 0, &l);
    if (st != LS_OK) return st;
    size_t plen = strlen(LS_KEY_GROUP_OFFSETS);
    for (size_t i = 0; i < l.n; i++) {
        /* "<group id, encoded>/<topic>/<partition>" */
        const char *rest = (const char *)l.v[i].key + plen;
        const char *gslash = strchr(rest, '/'), *pslash = strrchr(rest, '/');
        ls_group_offset_t o;
        if (!gslash || pslash == gslash ||
            ls_group_offset_decode(l.v[i].val, l.v[i].vlen, &o) != LS_OK)
            continue;
        ls_free(o.metadata);
        char *gid = ls_keypart_decode(rest, (size_t)(gslash - rest));
        char *topic = ls_strndup(gslash + 1, (size_t)(pslash - gslash - 1));
        if (gid) cb(arg, gid, topic, (int32_t)strtol(pslash + 1, NULL, 10), o.offset);
        ls_free(gid);
        ls_free(topic);
    }
    ls_kvlist_free(&l);
    return LS_OK;
}

ls_status ls_group_store_load(ls_meta_t *meta, const char *group_id, ls_group_loaded_t *out)
{
    memset(out, 0, sizeof *out);
    char *mk = ls_group_key_meta(group_id);
    ls_kv_t kv;
    ls_status st = ls_meta_get(meta, mk, &kv);
    ls_free(mk);
    if (st == LS_OK) {
        st = ls_group_record_decode(kv.val, kv.vlen, &out->rec);
        ls_kv_free(&kv);
        if (st != LS_OK) return st;
        out->exists = true;
    } else if (st != LS_ENOTFOUND) {
        return st;
    }
    /* Pending keys before committed offsets: a marker moves a pending offset
     * to the committed ones in one txn, so one that ran between the two
     * reads is seen either as still pending (the group stays flagged and is
     * read again) or, when its pending key was gone by the first read,
     * complete in the second. The other order could see neither. */
    char *pfx = ls_group_key_pending_prefix(group_id);
    size_t plen = strlen(pfx);
    ls_kvlist_t l;
    st = ls_meta_scan_prefix(meta, pfx, 0, &l);
    ls_free(pfx);
    if (st != LS_OK) {
        ls_group_loaded_free(out);
        return st;
    }
    out->txn_pending = LS_NEWN(ls_group_tp_t, l.n ? l.n : 1);
    for (size_t i = 0; i < l.n; i++) {
        int64_t pid;
        ls_group_tp_t *tp = &out->txn_pending[out->ntxn_pending];
        if (ls_group_pending_key_parse((const char *)l.v[i].key + plen, &pid, &tp->topic,
                                       &tp->partition))
            out->ntxn_pending++;
    }
    ls_kvlist_free(&l);
    pfx = ls_group_key_offsets_prefix(group_id);
    plen = strlen(pfx);
    st = ls_meta_scan_prefix(meta, pfx, 0, &l);
    ls_free(pfx);
    if (st != LS_OK) {
        ls_group_loaded_free(out);
        return st;
    }
    out->offsets = LS_NEWN(ls_group_loaded_offset_t, l.n ? l.n : 1);
    for (size_t i = 0; i < l.n; i++) {
        const char *rest = (const char *)l.v[i].key + plen; /* "<topic>/<partition>" */
        const char *slash = strrchr(rest, '/');
        ls_group_loaded_offset_t *lo = &out->offsets[out->noffsets];
        if (!slash || ls_group_offset_decode(l.v[i].val, l.v[i].vlen, &lo->o) != LS_OK) {
            LS_WARN("group", "group '%s': skipping unreadable offset record %s", group_id,
                    (const char *)l.v[i].key);
            continue;
        }
        lo->topic = ls_strndup(rest, (size_t)(slash - rest));
        lo->partition = (int32_t)strtol(slash + 1, NULL, 10);
        out->noffsets++;
    }
    ls_kvlist_free(&l);
    if (out->noffsets > 0 || out->ntxn_pending > 0) out->exists = true;
    return LS_OK;
}

/* ------------------------------------------------------------- writer */

typedef struct wop {
    ls_meta_op_kind kind;
    char *key;
    char *end; /* DEL_RANGE */
    uint8_t *val;
    size_t vlen;
} wop_t;

/* A reread of a group (ls_group_service_refresh). */
typedef struct refresh_ctx {
    ls_group_refresh_cb cb;
    void *arg;
    uint64_t deletions; /* the fence's count at submission */
    uint64_t txn_adds;  /* the group's ls_group_txn_adds at submission */
    ls_group_loaded_t l;
} refresh_ctx_t;

typedef struct job {
    struct job *next;
    wop_t *ops;
    int nops;
    bool exclusive;    /* contains a range delete, or reads: runs alone */
    refresh_ctx_t *rf; /* a reread of the group (ls_group_service_refresh), not a write */
    char *gid;         /* the group written (NULL: a barrier) */
    char *owner_key;   /* its owner record, compared against fence_rev */
    int64_t fence_rev;
    ls_group_write_cb cb;
    void *arg;
    ls_status st;
} job_t;

/* A group's fence: the revision of this broker's last owner-record write. */
typedef struct fence {
    struct fence *next; /* same hash */
    char *gid;
    int64_t rev;
    /* offset and group deletions submitted (memory changes before the
     * store does): a reread that began before one must not be installed */
    uint64_t deletions;
} fence_t;

struct ls_group_service {
    uv_loop_t *loop;
    ls_meta_t *meta;
    ls_catalog_t *catalog;
    ls_group_coord_t *coord;
    ls_group_offload_fn offload;
    void *offload_ctx;
    uv_timer_t tick;
    uv_timer_t retention;
    int64_t tick_at; /* scheduled tick (INT64_MAX none) */
    int64_t retention_interval_ms;
    job_t *qhead, *qtail;     /* waiting */
    job_t *batch;             /* in flight (linked by next) */
    ls_i64map_t fences;       /* hash(gid) -> fence_t list (loop thread) */
    int32_t node_id;          /* written into owner records (diagnostics) */
    ls_share_store_t *shares; /* share partitions this broker serves (may be NULL) */
    bool stopped;
    int closing;
    bool freed;
};

/* ---- fences (loop thread) ---- */

static int64_t gid_hash(const char *gid) { return (int64_t)ls_hash_str(LS_HASH_INIT, gid); }

static fence_t *fence_find(ls_group_service_t *s, const char *gid)
{
    for (fence_t *f = ls_i64map_get(&s->fences, gid_hash(gid)); f; f = f->next)
        if (strcmp(f->gid, gid) == 0) return f;
    return NULL;
}

static void fence_set(ls_group_service_t *s, const char *gid, int64_t rev)
{
    fence_t *f = fence_find(s, gid);
    if (!f) {
        f = LS_NEW(fence_t);
        f->gid = ls_strdup(gid);
        f->next = ls_i64map_get(&s->fences, gid_hash(gid));
        ls_i64map_put(&s->fences, gid_hash(gid), f);
    }
    f->rev = rev;
}

static void fence_drop(ls_group_service_t *s, const char *gid)
{
    int64_t h = gid_hash(gid);
    fence_t *head = ls_i64map_get(&s->fences, h), **pp = &head;
    while (*pp && strcmp((*pp)->gid, gid) != 0)
        pp = &(*pp)->next;
    if (!*pp) return;
    fence_t *f = *pp;
    *pp = f->next;
    if (head)
        ls_i64map_put(&s->fences, h, head);
    else
        ls_i64map_del(&s->fences, h);
    ls_free(f->gid);
    ls_free(f);
}

static void fences_free(ls_group_service_t *s)
{
    int64_t k;
    void *v;
    for (size_t it = 0; ls_i64map_next(&s->fences, &it, &k, &v);)
        for (fence_t *f = v, *n; f; f = n) {
            n = f->next;
            ls_free(f->gid);
            ls_free(f);
        }
    ls_i64map_free(&s->fences);
}

/* The group lost: another broker loaded it after us. */
static void fenced(ls_group_service_t *s, const char *gid)
{
    if (!fence_find(s, gid)) return;
    LS_WARN("group",
            "group '%s': another broker took over its coordination (its owner record "
            "changed, e.g. while this broker was paused); dropping the in-memory copy",
            gid);
    fence_drop(s, gid);
    ls_group_coord_unload(s->coord, gid);
}

static void job_free(job_t *j)
{
    if (j->rf) { /* a reread never run (the service is freed) */
        ls_group_loaded_free(&j->rf->l);
        ls_free(j->rf);
    }
    for (int i = 0; i < j->nops; i++) {
        ls_free(j->ops[i].key);
        ls_free(j->ops[i].end);
        ls_free(j->ops[i].val);
    }
    ls_free(j->ops);
    ls_free(j->gid);
    ls_free(j->owner_key);
    ls_free(j);
}

static void writer_kick(ls_group_service_t *s);

/* Runs jobs [first, end) as txns of at most max compares + ops: each txn
 * carries the fences of every group in the run. Returns the first failure. */
static ls_status run_jobs(ls_meta_t *meta, job_t *first, job_t *end)
{
    int max = ls_meta_max_txn_ops(meta);
    ls_meta_cmp_t *cmps = LS_NEWN(ls_meta_cmp_t, (size_t)max);
    ls_meta_op_t *ops = LS_NEWN(ls_meta_op_t, (size_t)max);
    int ncmp = 0;
    for (job_t *j = first; j != end; j = j->next) {
        if (!j->owner_key) continue;
        bool seen = false;
        for (int k = 0; k < ncmp; k++)
            seen |= strcmp((const char *)cmps[k].key, j->owner_key) == 0;
        if (!seen && ncmp < max / 2)
            cmps[ncmp++] = (ls_meta_cmp_t){.kind = LS_META_CMP_MOD_REV,
                                           .key = j->owner_key,
                                           .klen = strlen(j->owner_key),
                                           .rev = j->fence_rev};
    }
    ls_status st = LS_OK;
    int n = 0, room = max - ncmp;
    /* flatten; within a txn a later op on a key replaces an earlier one */
    for (job_t *j = first; j != end && st == LS_OK; j = j->next) {
        for (int i = 0; i < j->nops && st == LS_OK; i++) {
            wop_t *w = &j->ops[i];
            int slot = n;
            for (int k = 0; k < n; k++)
                if (ops[k].klen == strlen(w->key) && memcmp(ops[k].key, w->key, ops[k].klen) == 0)
                    slot = k;
            if (slot == n && n == room) {
                st = ls_meta_txn(meta, cmps, (size_t)ncmp, ops, (size_t)n, NULL);
                n = 0;
                slot = 0;
            }
            ls_meta_op_t o = {.kind = w->kind,
                              .key = w->key,
                              .klen = strlen(w->key),
                              .val = w->val,
                              .vlen = w->vlen};
            if (w->kind == LS_META_OP_DEL_RANGE) {
                o.end = w->end;
                o.elen = strlen(w->end);
            }
            ops[slot] = o;
            if (slot == n) n++;
        }
    }
    if (st == LS_OK && n > 0) st = ls_meta_txn(meta, cmps, (size_t)ncmp, ops, (size_t)n, NULL);
    ls_free(cmps);
    ls_free(ops);
    return st;
}

static void refresh_read(ls_group_service_t *s, job_t *j);

static void batch_work(void *arg)
{
    ls_group_service_t *s = arg;
    if (s->batch->rf) {
        refresh_read(s, s->batch);
        return;
    }
    ls_status st = run_jobs(s->meta, s->batch, NULL);
    if (st != LS_ECONFLICT || !s->batch->next) {
        for (job_t *j = s->batch; j; j = j->next)
            j->st = st == LS_ECONFLICT ? LS_EFENCED : st;
        return;
    }
    /* a fence failed somewhere in the batch: find which, job by job (the
     * others are written again: puts and deletes are idempotent) */
    for (job_t *j = s->batch; j; j = j->next) {
        ls_status one = run_jobs(s->meta, j, j->next);
        j->st = one == LS_ECONFLICT ? LS_EFENCED : one;
    }
}

static void refresh_done(ls_group_service_t *s, job_t *j);

static void batch_done(void *arg)
{
    ls_group_service_t *s = arg;
    job_t *j = s->batch;
    s->batch = NULL;
    while (j) {
        job_t *next = j->next;
        if (j->rf)
            refresh_done(s, j);
        else if (j->st == LS_EFENCED)
            fenced(s, j->gid);
        else if (j->st != LS_OK)
            LS_WARN_RL("group", "storing group state failed: %s", ls_status_str(j->st));
        if (j->cb) j->cb(j->arg, j->st);
        job_free(j);
        j = next;
    }
    writer_kick(s);
}

static void writer_kick(ls_group_service_t *s)
{
    if (s->batch || !s->qhead) return;
    int max = ls_meta_max_txn_ops(s->meta) / 2; /* the other half: the batch's fences */
    job_t *first = s->qhead, *last = first;
    int total = first->nops;
    if (!first->exclusive) {
        while (last->next && !last->next->exclusive && total + last->next->nops + 1 <= max) {
            last = last->next;
            total += last->nops + 1;
        }
    }
    s->qhead = last->next;
    if (!s->qhead) s->qtail = NULL;
    last->next = NULL;
    s->batch = first;
    s->offload(s->offload_ctx, batch_work, batch_done, s);
}

static job_t *job_new(int nops, ls_group_write_cb cb, void *arg)
{
    job_t *j = LS_NEW(job_t);
    j->ops = LS_NEWN(wop_t, nops > 0 ? nops : 1);
    j->cb = cb;
    j->arg = arg;
    return j;
}

/* Attaches the group's fence (taken when this broker loaded it). A group
 * without one was dropped meanwhile: the job fails as fenced. */
static bool job_fence(ls_group_service_t *s, job_t *j, const char *gid)
{
    j->gid = ls_strdup(gid);
    fence_t *f = fence_find(s, gid);
    if (!f) return false;
    j->owner_key = ls_group_key_owner(gid);
    j->fence_rev = f->rev;
    return true;
}

static void job_fail_fenced(job_t *j)
{
    if (j->cb) j->cb(j->arg, LS_EFENCED);
    job_free(j);
}

static void job_submit(ls_group_service_t *s, job_t *j)
{
    if (s->qtail)
        s->qtail->next = j;
    else
        s->qhead = j;
    s->qtail = j;
    writer_kick(s);
}

void ls_group_service_commit(ls_group_service_t *s, const char *group_id,
                             const ls_group_commit_item_t *items, int n, ls_group_write_cb cb,
                             void *arg)
{
    job_t *j = job_new(n, cb, arg);
    if (!job_fence(s, j, group_id)) {
        job_fail_fenced(j);
        return;
    }
    for (int i = 0; i < n; i++) {
        wop_t *w = &j->ops[j->nops++];
        w->kind = LS_META_OP_PUT;
        w->key = ls_group_key_offset(group_id, items[i].topic, items[i].partition);
        w->val = ls_group_offset_encode(&items[i].o, &w->vlen);
    }
    job_submit(s, j);
}

void ls_group_service_delete_offsets(ls_group_service_t *s, const char *group_id,
                                     const ls_group_commit_item_t *items, int n,
                                     ls_group_write_cb cb, void *arg)
{
    job_t *j = job_new(n, cb, arg);
    if (!job_fence(s, j, group_id)) {
        job_fail_fenced(j);
        return;
    }
    fence_find(s, group_id)->deletions++;
    for (int i = 0; i < n; i++) {
        wop_t *w = &j->ops[j->nops++];
        w->kind = LS_META_OP_DEL;
        w->key = ls_group_key_offset(group_id, items[i].topic, items[i].partition);
    }
    job_submit(s, j);
}

void ls_group_service_txn_commit(ls_group_service_t *s, const char *group_id, int64_t producer_id,
                                 int64_t txn_seq, const ls_group_commit_item_t *items, int n,
                                 ls_group_write_cb cb, void *arg)
{
    job_t *j = job_new(n, cb, arg);
    if (!job_fence(s, j, group_id)) {
        job_fail_fenced(j);
        return;
    }
    for (int i = 0; i < n; i++) {
        wop_t *w = &j->ops[j->nops++];
        w->kind = LS_META_OP_PUT;
        w->key = ls_group_key_pending(group_id, producer_id, items[i].topic, items[i].partition);
        w->val = ls_group_pending_encode(txn_seq, &items[i].o, &w->vlen);
    }
    job_submit(s, j);
}

void ls_group_service_barrier(ls_group_service_t *s, ls_group_write_cb cb, void *arg)
{
    job_submit(s, job_new(0, cb, arg));
}

ls_status ls_group_service_txn_marker(ls_group_service_t *s, const char *group_id,
                                      int64_t producer_id, int64_t txn_seq, bool commit)
{
    return ls_group_txn_marker(s->meta, group_id, producer_id, txn_seq, commit);
}

/* ------------------------------------------------------------- refresh */

/* A reread runs in the writer's queue, alone: it sees every write submitted
 * before it, and its result is installed before the callbacks of writes
 * submitted after it run (they apply to memory on completion). What changes
 * memory before the store (offset deletions, a group deletion) is caught by
 * the fence's deletion count and the Dead state: such a reread is run again,
 * or not installed. */
static void refresh_read(ls_group_service_t *s, job_t *j)
{
    j->st = ls_group_store_load(s->meta, j->gid, &j->rf->l);
}

static void refresh_submit(ls_group_service_t *s, const char *group_id, refresh_ctx_t *rf)
{
    job_t *j = job_new(0, NULL, NULL);
    j->exclusive = true;
    j->rf = rf;
    if (!job_fence(s, j, group_id)) {
        rf->cb(rf->arg, LS_EFENCED, NULL, 0);
        ls_free(rf);
        j->rf = NULL;
        job_free(j);
        return;
    }
    rf->deletions = fence_find(s, group_id)->deletions;
    ls_group_t *g = ls_group_find(s->coord, group_id);
    rf->txn_adds = g ? ls_group_txn_adds(g) : 0;
    job_submit(s, j);
}

static void refresh_done(ls_group_service_t *s, job_t *j)
{
    refresh_ctx_t *rf = j->rf;
    j->rf = NULL;
    fence_t *f = fence_find(s, j->gid);
    ls_status st = j->st;
    if (st == LS_OK && (!f || f->rev != j->fence_rev)) st = LS_EFENCED; /* unloaded meanwhile */
    if (st == LS_OK && f->deletions != rf->deletions) {
        ls_group_loaded_free(&rf->l);
        refresh_submit(s, j->gid, rf); /* read again, after the deletions */
        return;
    }
    ls_group_t *g = st == LS_OK ? ls_group_find(s->coord, j->gid) : NULL;
    if (g) ls_group_offsets_reload(g, &rf->l, rf->txn_adds);
    if (st != LS_OK && st != LS_EFENCED)
        LS_WARN_RL("group", "rereading group '%s' failed: %s", j->gid, ls_status_str(st));
    rf->cb(rf->arg, st, rf->l.txn_pending, rf->l.ntxn_pending);
    ls_group_loaded_free(&rf->l);
    ls_free(rf);
}

void ls_group_service_refresh(ls_group_service_t *s, const char *group_id, ls_group_refresh_cb cb,
                              void *arg)
{
    refresh_ctx_t *rf = LS_NEW(refresh_ctx_t);
    rf->cb = cb;
    rf->arg = arg;
    refresh_submit(s, group_id, rf);
}

/* ------------------------------------------------------------- hooks */

static void h_share_left(void *arg, const char *group_id, const char *member_id)
{
    ls_group_service_t *s = arg;
    if (s->shares) ls_share_store_member_left(s->shares, group_id, member_id);
}

static int64_t h_now(void *arg)
{
    ls_group_service_t *s = arg;
    uv_update_time(s->loop);
    return (int64_t)uv_now(s->loop);
}

static int64_t h_wall(void *arg) { return ls_clock_wall_ms(); }

static void on_tick(uv_timer_t *t);

static void h_wakeup(void *arg, int64_t at)
{
    ls_group_service_t *s = arg;
    if (s->stopped || at >= s->tick_at) return;
    s->tick_at = at;
    int64_t now = (int64_t)uv_now(s->loop);
    uv_timer_start(&s->tick, on_tick, (uint64_t)(at > now ? at - now : 0), 0);
}

static void on_tick(uv_timer_t *t)
{
    ls_group_service_t *s = t->data;
    s->tick_at = INT64_MAX;
    int64_t next = ls_group_coord_tick(s->coord);
    if (next != INT64_MAX) h_wakeup(s, next);
}

static void h_persist(void *arg, const char *group_id, const ls_group_record_t *rec)
{
    ls_group_service_t *s = arg;
    job_t *j = job_new(4, NULL, NULL);
    if (!job_fence(s, j, group_id)) {
        job_fail_fenced(j);
        return;
    }
    if (rec) {
        wop_t *w = &j->ops[j->nops++];
        w->kind = LS_META_OP_PUT;
        w->key = ls_group_key_meta(group_id);
        w->val = ls_group_record_encode(rec, &w->vlen);
    } else {
        j->exclusive = true;
        fence_find(s, group_id)->deletions++; /* memory is Dead already */
        wop_t *w = &j->ops[j->nops++];
        w->kind = LS_META_OP_DEL_RANGE;
        w->key = ls_group_key_offsets_prefix(group_id);
        size_t kl = strlen(w->key);
        w->end = ls_strdup(w->key);
        w->end[kl - 1] = '/' + 1; /* prefix end: '/' -> '0' */
        w = &j->ops[j->nops++];
        w->kind = LS_META_OP_DEL_RANGE; /* pending transactional offsets go too */
        w->key = ls_group_key_pending_prefix(group_id);
        kl = strlen(w->key);
        w->end = ls_strdup(w->key);
        w->end[kl - 1] = '/' + 1;
        w = &j->ops[j->nops++];
        w->kind = LS_META_OP_DEL_RANGE; /* a share group's partition states too */
        w->key = ls_share_key_group_prefix(group_id);
        kl = strlen(w->key);
        w->end = ls_strdup(w->key);
        w->end[kl - 1] = '/' + 1;
        w = &j->ops[j->nops++];
        w->kind = LS_META_OP_DEL;
        w->key = ls_group_key_meta(group_id);
        if (s->shares) ls_share_store_forget_group(s->shares, group_id);
    }
    job_submit(s, j);
}

typedef struct load_ctx {
    ls_group_service_t *s;
    char *group_id;
    ls_status st;
    ls_group_loaded_t l;
    int64_t owner_rev;
} load_ctx_t;

/* Claims the group first (rewriting its owner record fences every earlier
 * owner), then reads it: everything acknowledged under an earlier fence is
 * in the store by then. */
static void load_work(void *arg)
{
    load_ctx_t *lc = arg;
    char *key = ls_group_key_owner(lc->group_id);
    char val[64];
    int vl = snprintf(val, sizeof val, "{\"broker\":%d,\"since_ms\":%lld}", (int)lc->s->node_id,
                      (long long)ls_clock_wall_ms());
    ls_meta_op_t op = {
        .kind = LS_META_OP_PUT, .key = key, .klen = strlen(key), .val = val, .vlen = (size_t)vl};
    lc->st = ls_meta_txn(lc->s->meta, NULL, 0, &op, 1, &lc->owner_rev);
    ls_free(key);
    if (lc->st == LS_OK) lc->st = ls_group_store_load(lc->s->meta, lc->group_id, &lc->l);
}

static void load_after(void *arg)
{
    load_ctx_t *lc = arg;
    if (lc->st != LS_OK)
        LS_WARN_RL("group", "loading group '%s' failed: %s", lc->group_id, ls_status_str(lc->st));
    else
        fence_set(lc->s, lc->group_id, lc->owner_rev);
    ls_group_coord_load_done(lc->s->coord, lc->group_id, lc->st, &lc->l);
    ls_free(lc->group_id);
    ls_free(lc);
}

static void h_load(void *arg, const char *group_id)
{
    ls_group_service_t *s = arg;
    load_ctx_t *lc = LS_NEW(load_ctx_t);
    lc->s = s;
    lc->group_id = ls_strdup(group_id);
    s->offload(s->offload_ctx, load_work, load_after, lc);
}

static int64_t h_stream_no(void *arg, const char *topic)
{
    ls_group_service_t *s = arg;
    ls_stream_t *st = ls_catalog_lookup(s->catalog, LS_DEFAULT_NAMESPACE, topic);
    int64_t n = st ? st->stream_no : -1;
    ls_stream_release(st);
    return n;
}

/* ------------------------------------------------------------- verify */

typedef struct verify_ctx {
    ls_group_service_t *s;
    char *group_id;
    char *owner_key;
    int64_t fence_rev;
    ls_status st;
    int64_t mod_rev;
    void (*cb)(void *arg, bool owned);
    void *arg;
} verify_ctx_t;

static void verify_work(void *arg)
{
    verify_ctx_t *vc = arg;
    ls_kv_t kv;
    vc->st = ls_meta_get(vc->s->meta, vc->owner_key, &kv);
    if (vc->st == LS_OK) {
        vc->mod_rev = kv.mod_rev;
        ls_kv_free(&kv);
    } else if (vc->st == LS_ENOTFOUND) {
        vc->st = LS_OK;
        vc->mod_rev = 0;
    }
}

static void verify_after(void *arg)
{
    verify_ctx_t *vc = arg;
    bool owned = vc->st == LS_OK && vc->mod_rev == vc->fence_rev;
    fence_t *f = fence_find(vc->s, vc->group_id);
    if (vc->st == LS_OK && !owned && f && f->rev == vc->fence_rev)
        fenced(vc->s, vc->group_id); /* not re-fenced by a newer load meanwhile */
    vc->cb(vc->arg, owned);
    ls_free(vc->group_id);
    ls_free(vc->owner_key);
    ls_free(vc);
}

void ls_group_service_verify(ls_group_service_t *s, const char *group_id,
                             void (*cb)(void *arg, bool owned), void *arg)
{
    fence_t *f = fence_find(s, group_id);
    if (!f || !ls_group_find(s->coord, group_id)) {
        cb(arg, true); /* not in memory: acquiring loads and claims it */
        return;
    }
    verify_ctx_t *vc = LS_NEW(verify_ctx_t);
    vc->s = s;
    vc->group_id = ls_strdup(group_id);
    vc->owner_key = ls_group_key_owner(group_id);
    vc->fence_rev = f->rev;
    vc->cb = cb;
    vc->arg = arg;
    s->offload(s->offload_ctx, verify_work, verify_after, vc);
}

/* ------------------------------------------------------------- listing */

typedef struct list_ctx {
    ls_group_service_t *s;
    void (*cb)(void *arg, ls_status st, ls_group_listing_t *v, int n);
    void *arg;
    ls_status st;
    ls_group_listing_t *v;
    int n;
} list_ctx_t;

static void list_work(void *arg)
{
    list_ctx_t *lc = arg;
    ls_kvlist_t l;
    lc->st = ls_meta_scan_prefix(lc->s->meta, LS_KEY_GROUP_META, 0, &l);
    if (lc->st != LS_OK) return;
    lc->v = LS_NEWN(ls_group_listing_t, l.n ? l.n : 1);
    size_t plen = strlen(LS_KEY_GROUP_META);
    for (size_t i = 0; i < l.n; i++) {
        char *gid = ls_keypart_decode((const char *)l.v[i].key + plen, l.v[i].klen - plen);
        ls_group_record_t r;
        if (!gid || ls_group_record_decode(l.v[i].val, l.v[i].vlen, &r) != LS_OK) {
            ls_free(gid);
            continue;
        }
        ls_group_listing_t *x = &lc->v[lc->n++];
        x->group_id = gid;
        x->protocol_type = ls_strdup(r.protocol_type ? r.protocol_type : "");
        x->state = r.state;
        x->state_name = ls_group_state_name(r.state);
        x->group_type = ls_group_type_name(r.type);
        ls_group_record_free(&r);
    }
    ls_kvlist_free(&l);
}

static void list_after(void *arg)
{
    list_ctx_t *lc = arg;
    ls_group_service_t *s = lc->s;
    if (lc->st == LS_OK) {
        /* merge: loaded groups answer from memory (also those not stored yet) */
        int nids;
        char **ids = ls_group_coord_ids(s->coord, &nids);
        lc->v = ls_realloc(lc->v, (size_t)(lc->n + nids + 1) * sizeof *lc->v);
        for (int i = 0; i < nids; i++) {
            int k;
            for (k = 0; k < lc->n; k++)
                if (strcmp(lc->v[k].group_id, ids[i]) == 0) break;
            if (k == lc->n) {
                memset(&lc->v[k], 0, sizeof lc->v[k]);
                lc->v[k].group_id = ids[i];
                lc->n++;
            } else {
                ls_free(ids[i]);
            }
        }
        ls_free(ids);
        int out = 0;
        for (int k = 0; k < lc->n; k++) {
            ls_group_t *g = ls_group_find(s->coord, lc->v[k].group_id);
            if (g) {
                if (ls_group_get_state(g) == LS_GROUP_DEAD) {
                    ls_free(lc->v[k].group_id);
                    ls_free(lc->v[k].protocol_type);
                    continue;
                }
                lc->v[k].state = ls_group_get_state(g);
                lc->v[k].state_name = ls_group_state_label(g);
                lc->v[k].group_type = ls_group_type(g);
                ls_free(lc->v[k].protocol_type);
                const char *pt = ls_group_protocol_type(g);
                lc->v[k].protocol_type = ls_strdup(pt ? pt : "");
            }
            lc->v[out++] = lc->v[k];
        }
        lc->n = out;
    }
    lc->cb(lc->arg, lc->st, lc->v, lc->n);
    for (int k = 0; k < lc->n; k++) {
        ls_free(lc->v[k].group_id);
        ls_free(lc->v[k].protocol_type);
    }
    ls_free(lc->v);
    ls_free(lc);
}

void ls_group_service_list(ls_group_service_t *s,
                           void (*cb)(void *arg, ls_status st, ls_group_listing_t *v, int n),
                           void *arg)
{
    list_ctx_t *lc = LS_NEW(list_ctx_t);
    lc->s = s;
    lc->cb = cb;
    lc->arg = arg;
    s->offload(s->offload_ctx, list_work, list_after, lc);
}

/* ------------------------------------------------------------- retention */

typedef struct drop_ctx {
    ls_group_commit_item_t *items;
    int n;
} drop_ctx_t;

static void drop_one(void *arg, const char *topic, int32_t partition)
{
    drop_ctx_t *d = arg;
    d->items = ls_realloc(d->items, (size_t)(d->n + 1) * sizeof *d->items);
    memset(&d->items[d->n], 0, sizeof d->items[d->n]);
    d->items[d->n].topic = ls_strdup(topic);
    d->items[d->n].partition = partition;
    d->n++;
}

typedef struct expire_ctx {
    ls_group_service_t *s;
    int pending;
    int dropped;
} expire_ctx_t;

/* Expires one group's offsets (g NULL: it could not be had) and counts the
 * pass down. */
static void expire_group(expire_ctx_t *ec, ls_group_t *g)
{
    if (g) {
        drop_ctx_t d = {NULL, 0};
        char *gid = ls_strdup(ls_group_id(g));
        ec->dropped += ls_group_expire(g, drop_one, &d);
        if (d.n > 0 && ls_group_get_state(g) != LS_GROUP_DEAD)
            ls_group_service_delete_offsets(ec->s, gid, d.items, d.n, NULL, NULL);
        for (int i = 0; i < d.n; i++)
            ls_free((char *)d.items[i].topic);
        ls_free(d.items);
        ls_free(gid);
    }
    if (--ec->pending == 0) {
        if (ec->dropped > 0)
            LS_INFO("group", "retention: removed %d committed offsets", ec->dropped);
        ls_free(ec);
    }
}

/* A group that may hold pending transactional offsets is reread first: a
 * marker written elsewhere may have committed offsets memory lacks (and
 * while some are still pending, ls_group_expire keeps the group). */
typedef struct expire_reread {
    expire_ctx_t *ec;
    char *gid;
} expire_reread_t;

static void expire_reread(void *arg, ls_status st, const ls_group_tp_t *pending, int npending)
{
    expire_reread_t *er = arg;
    expire_group(er->ec, st == LS_OK ? ls_group_find(er->ec->s->coord, er->gid) : NULL);
    ls_free(er->gid);
    ls_free(er);
}

static void expire_ready(void *arg, ls_group_t *g)
{
    expire_ctx_t *ec = arg;
    if (g && ls_group_txn_pending(g)) {
        expire_reread_t *er = LS_NEW(expire_reread_t);
        er->ec = ec;
        er->gid = ls_strdup(ls_group_id(g));
        ls_group_service_refresh(ec->s, er->gid, expire_reread, er);
        return;
    }
    expire_group(ec, g);
}

static void expire_list_done(void *arg, ls_status st, ls_group_listing_t *v, int n)
{
    ls_group_service_t *s = arg;
    if (st != LS_OK || s->stopped) return;
    expire_ctx_t *ec = LS_NEW(expire_ctx_t);
    ec->s = s;
    ec->pending = 1;
    for (int i = 0; i < n; i++) {
        ec->pending++;
        ls_group_acquire(s->coord, v[i].group_id, expire_ready, ec);
    }
    expire_ready(ec, NULL);
}

void ls_group_service_cleanup(ls_group_service_t *s)
{
    if (!s->stopped) ls_group_service_list(s, expire_list_done, s);
}

static void on_retention(uv_timer_t *t) { ls_group_service_cleanup(t->data); }

/* ------------------------------------------------------------- lifecycle */

ls_group_service_t *ls_group_service_open(uv_loop_t *loop, ls_meta_t *meta, ls_catalog_t *catalog,
                                          const ls_group_config_t *cfg,
                                          int64_t retention_check_interval_ms, int32_t node_id,
                                          ls_group_offload_fn offload, void *offload_ctx)
{
    ls_group_service_t *s = LS_NEW(ls_group_service_t);
    s->loop = loop;
    s->node_id = node_id;
    ls_i64map_init(&s->fences);
    s->meta = meta;
    s->catalog = catalog;
    s->offload = offload;
    s->offload_ctx = offload_ctx;
    s->tick_at = INT64_MAX;
    s->retention_interval_ms = retention_check_interval_ms;
    ls_group_hooks_t h = {
        .arg = s,
        .now_ms = h_now,
        .wall_ms = h_wall,
        .load = h_load,
        .persist = h_persist,
        .wakeup = h_wakeup,
        .topic_stream_no = h_stream_no,
        .share_left = h_share_left,
    };
    s->coord = ls_group_coord_new(cfg, &h);
    uv_timer_init(loop, &s->tick);
    s->tick.data = s;
    uv_timer_init(loop, &s->retention);
    s->retention.data = s;
    if (retention_check_interval_ms > 0)
        uv_timer_start(&s->retention, on_retention, (uint64_t)retention_check_interval_ms,
                       (uint64_t)retention_check_interval_ms);
    return s;
}

ls_group_coord_t *ls_group_service_coord(ls_group_service_t *s) { return s->coord; }

void ls_group_service_set_shares(ls_group_service_t *s, ls_share_store_t *shares)
{
    s->shares = shares;
}

static void on_timer_closed(uv_handle_t *h)
{
    ls_group_service_t *s = h->data;
    if (--s->closing == 0 && s->freed) {
        ls_group_coord_free(s->coord);
        ls_free(s);
    }
}

void ls_group_service_retain(ls_group_service_t *s, bool (*owned)(void *arg, const char *group_id),
                             void *arg)
{
    int n;
    char **ids = ls_group_coord_ids(s->coord, &n);
    for (int i = 0; i < n; i++) {
        if (!owned(arg, ids[i])) {
            LS_INFO("group", "group '%s' is now coordinated by another broker; unloading it",
                    ids[i]);
            ls_group_coord_unload(s->coord, ids[i]);
            fence_drop(s, ids[i]);
        }
        ls_free(ids[i]);
    }
    ls_free(ids);
}

void ls_group_service_stop(ls_group_service_t *s)
{
    if (s->stopped) return;
    s->stopped = true;
    ls_group_coord_shutdown(s->coord);
    uv_timer_stop(&s->tick);
    uv_timer_stop(&s->retention);
    /* the embedder may have closed every handle already (failed start) */
    if (!uv_is_closing((uv_handle_t *)&s->tick)) {
        s->closing++;
        uv_close((uv_handle_t *)&s->tick, on_timer_closed);
    }
    if (!uv_is_closing((uv_handle_t *)&s->retention)) {
        s->closing++;
        uv_close((uv_handle_t *)&s->retention, on_timer_closed);
    }
}

void ls_group_service_free(ls_group_service_t *s)
{
    if (!s) return;
    if (!s->stopped) ls_group_service_stop(s);
    for (job_t *j = s->qhead, *n; j; j = n) {
        n = j->next;
        job_free(j);
    }
    s->qhead = s->qtail = NULL;
    fences_free(s);
    s->freed = true;
    if (s->closing == 0) {
        ls_group_coord_free(s->coord);
        ls_free(s);
    }
}
