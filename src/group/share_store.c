/* Share-partition states in the metadata store, and share sessions: the
 * design is in share_store.h. */
#include "group/share_store.h"

#include <inttypes.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/clock.h"
#include "base/diag.h"
#include "base/hash.h"
#include "base/i64map.h"
#include "meta/meta_keys.h"

typedef struct get_waiter {
    struct get_waiter *next;
    ls_share_get_cb cb;
    void *arg;
} get_waiter_t;

typedef struct sync_waiter {
    struct sync_waiter *next;
    ls_share_sync_cb cb;
    void *arg;
    uint64_t need; /* the state version that must be stored */
} sync_waiter_t;

struct ls_share_part {
    ls_share_store_t *st;
    struct ls_share_part *next; /* same hash */
    char *key;
    char *gid;
    int refs;     /* the map's (until dropped), holders', one per store call running */
    bool dropped; /* out of the map: a write failed, or the store closed */
    bool loading, writing;
    ls_sharep_t *sp;
    int64_t mod_rev;     /* of the stored record; 0: none stored */
    uint64_t stored_ver; /* ls_sharep_version of what is stored */
    bool ever_stored;
    get_waiter_t *gets;
    sync_waiter_t *syncs;
    /* the store call in flight (worker thread) */
    int64_t init_offset;
    ls_sharep_config_t cfg; /* the loading get's: the state is decoded with it */
    ls_status st_job;
    ls_kv_t kv;
    uint8_t *wbuf;
    size_t wlen;
    uint64_t wver;
    int64_t wrev;
};

typedef struct session {
    char *gid;
    char *member;
    int32_t next_epoch;
    uint64_t id;      /* unique on this broker: a reopened session is another one */
    uint64_t conn_id; /* the client connection that opened it (0: none known) */
    ls_share_tp_t *parts;
    int nparts, cap;
} session_t;

struct ls_share_store {
    ls_meta_t *meta;
    ls_sharep_config_t cfg;
    ls_share_offload_fn offload;
    void *offload_ctx;
    ls_i64map_t parts; /* hash(key) -> ls_share_part_t list */
    session_t *sessions;
    int nsessions, capsessions, max_sessions;
    uint64_t last_session_id;
    int jobs;   /* store calls in flight */
    int nparts; /* entries not freed yet */
    bool closed;
};

/* ------------------------------------------------------------- keys */

static char *state_key(const char *gid, const ls_uuid_t *tid, int32_t partition)
{
    ls_buf_t b;
    ls_buf_init(&b);
    ls_buf_append(&b, LS_KEY_SHARE_STATE, strlen(LS_KEY_SHARE_STATE));
    ls_buf_append_keypart(&b, gid);
    char tail[64];
    char u[37];
    ls_uuid_format(tid, u);
    int n = snprintf(tail, sizeof tail, "/%s/%010" PRId32, u, partition);
    ls_buf_append(&b, tail, (size_t)n);
    ls_buf_append_u8(&b, 0);
    size_t len;
    return (char *)ls_buf_steal(&b, &len);
}

char *ls_share_key_group_prefix(const char *group_id)
{
    ls_buf_t b;
    ls_buf_init(&b);
    ls_buf_append(&b, LS_KEY_SHARE_STATE, strlen(LS_KEY_SHARE_STATE));
    ls_buf_append_keypart(&b, group_id);
    ls_buf_append(&b, "/", 2); /* with the NUL */
    size_t len;
    return (char *)ls_buf_steal(&b, &len);
}

static int64_t key_hash(const char *key) { return (int64_t)ls_hash_str(LS_HASH_INIT, key); }

static ls_share_part_t *part_find(ls_share_store_t *st, const char *key)
{
    for (ls_share_part_t *p = ls_i64map_get(&st->parts, key_hash(key)); p; p = p->next)
        if (!strcmp(p->key, key)) return p;
    return NULL;
}

static void part_unlink(ls_share_part_t *p)
{
    ls_share_store_t *st = p->st;
    int64_t h = key_hash(p->key);
    ls_share_part_t *head = ls_i64map_get(&st->parts, h), **pp = &head;
    while (*pp && *pp != p)
        pp = &(*pp)->next;
    if (!*pp) return;
    *pp = p->next;
    if (head)
        ls_i64map_put(&st->parts, h, head);
    else
        ls_i64map_del(&st->parts, h);
    p->next = NULL;
}

static void store_maybe_free(ls_share_store_t *st);

static void part_unref(ls_share_part_t *p)
{
    if (--p->refs > 0) return;
    ls_share_store_t *st = p->st;
    st->nparts--;
    ls_sharep_free(p->sp);
    ls_free(p->key);
    ls_free(p->gid);
    ls_free(p->wbuf);
    ls_free(p);
    store_maybe_free(st);
}

/* The entry leaves the map: later gets load afresh; waiting syncs fail.
 * The caller holds a reference of its own. */
static void part_drop(ls_share_part_t *p, ls_status why)
{
    while (p->syncs) {
        sync_waiter_t *w = p->syncs;
        p->syncs = w->next;
        if (w->cb) w->cb(w->arg, why);
        ls_free(w);
    }
    if (p->dropped) return;
    part_unlink(p);
    p->dropped = true;
    part_unref(p); /* the map's */
}

/* ------------------------------------------------------------- load */

static void load_work(void *arg)
{
    ls_share_part_t *p = arg;
    p->st_job = ls_meta_get(p->st->meta, p->key, &p->kv);
}

static void load_after(void *arg)
{
    ls_share_part_t *p = arg;
    ls_share_store_t *st = p->st;
    st->jobs--;
    p->loading = false;
    ls_status s = p->st_job;
    if (s == LS_OK) {
        ls_sharep_t *sp = NULL;
        if (ls_sharep_decode(p->kv.val, p->kv.vlen, &p->cfg, &sp) != LS_OK) {
            /* a state we cannot read: refuse to serve rather than redeliver
             * records that may have been accepted */
            LS_ERROR("share",
                     "share state %s does not decode (%zu bytes); the partition is "
                     "not served until it is repaired or its group's offsets reset",
                     p->key, p->kv.vlen);
            s = LS_ECORRUPT;
        } else {
            p->sp = sp;
            p->mod_rev = p->kv.mod_rev;
            p->stored_ver = ls_sharep_version(sp);
            p->ever_stored = true;
        }
        ls_kv_free(&p->kv);
    } else if (s == LS_ENOTFOUND) {
        p->sp = ls_sharep_new(&p->cfg, p->init_offset);
        p->mod_rev = 0;
        s = LS_OK;
    } else {
        LS_WARN("share", "loading share state %s failed: %s", p->key, ls_status_str(s));
    }
    if (s != LS_OK || st->closed) {
        if (s == LS_OK) s = LS_EIO;
        part_drop(p, s);
    }
    while (p->gets) {
        get_waiter_t *w = p->gets;
        p->gets = w->next;
        if (s == LS_OK) {
            p->refs++;
            w->cb(w->arg, LS_OK, p);
        } else {
            w->cb(w->arg, s, NULL);
        }
        ls_free(w);
    }
    part_unref(p); /* the load's reference */
}

void ls_share_store_get(ls_share_store_t *st, const char *group_id, const ls_uuid_t *topic_id,
                        int32_t partition, int64_t init_offset, const ls_sharep_config_t *cfg,
                        ls_share_get_cb cb, void *arg)
{
    if (st->closed) {
        cb(arg, LS_EIO, NULL);
        return;
    }
    char *key = state_key(group_id, topic_id, partition);
    ls_share_part_t *p = part_find(st, key);
    if (p && !p->loading) {
        ls_free(key);
        p->refs++;
        ls_sharep_set_config(p->sp, cfg ? cfg : &st->cfg);
        cb(arg, LS_OK, p);
        return;
    }
    get_waiter_t *w = LS_NEW(get_waiter_t);
    w->cb = cb;
    w->arg = arg;
    if (p) { /* loading: wait with the others */
        ls_free(key);
        w->next = p->gets;
        p->gets = w;
        return;
    }
    p = LS_NEW(ls_share_part_t);
    p->st = st;
    p->key = key;
    p->gid = ls_strdup(group_id);
    p->refs = 2; /* the map's and the load's */
    st->nparts++;
    p->loading = true;
    p->init_offset = init_offset;
    p->cfg = cfg ? *cfg : st->cfg;
    p->gets = w;
    int64_t h = key_hash(key);
    p->next = ls_i64map_get(&st->parts, h);
    ls_i64map_put(&st->parts, h, p);
    st->jobs++;
    st->offload(st->offload_ctx, load_work, load_after, p);
}

ls_sharep_t *ls_share_part_state(ls_share_part_t *p) { return p->sp; }
void ls_share_part_release(ls_share_part_t *p) { part_unref(p); }

/* ------------------------------------------------------------- write */

static void write_start(ls_share_part_t *p);

static void write_work(void *arg)
{
    ls_share_part_t *p = arg;
    ls_meta_cmp_t cmp = {
        .kind = LS_META_CMP_MOD_REV, .key = p->key, .klen = strlen(p->key), .rev = p->mod_rev};
    ls_meta_op_t op = {.kind = LS_META_OP_PUT,
                       .key = p->key,
                       .klen = strlen(p->key),
                       .val = p->wbuf,
                       .vlen = p->wlen};
    p->st_job = ls_meta_txn(p->st->meta, &cmp, 1, &op, 1, &p->wrev);
}

static void write_after(void *arg)
{
    ls_share_part_t *p = arg;
    ls_share_store_t *st = p->st;
    st->jobs--;
    p->writing = false;
    ls_free(p->wbuf);
    p->wbuf = NULL;
    if (p->st_job != LS_OK) {
        if (p->st_job == LS_ECONFLICT)
            LS_INFO("share", "share state %s was written by another broker; reloading it", p->key);
        else
            LS_WARN("share",
                    "storing share state %s failed: %s; its in-flight records are "
                    "offered again from the stored state",
                    p->key, ls_status_str(p->st_job));
        part_drop(p, p->st_job);
    } else {
        p->mod_rev = p->wrev;
        p->stored_ver = p->wver;
        p->ever_stored = true;
        for (sync_waiter_t **pw = &p->syncs; *pw;) {
            sync_waiter_t *w = *pw;
            if (w->need > p->stored_ver) {
                pw = &w->next;
                continue;
            }
            *pw = w->next;
            if (w->cb) w->cb(w->arg, LS_OK);
            ls_free(w);
        }
        if (p->syncs && !p->dropped) write_start(p);
    }
    part_unref(p); /* the write's reference */
}

static void write_start(ls_share_part_t *p)
{
    ls_share_store_t *st = p->st;
    ls_buf_t b;
    ls_buf_init(&b);
    ls_sharep_encode(p->sp, &b);
    p->wbuf = ls_buf_steal(&b, &p->wlen);
    p->wver = ls_sharep_version(p->sp);
    p->writing = true;
    p->refs++;
    st->jobs++;
    st->offload(st->offload_ctx, write_work, write_after, p);
}

void ls_share_part_sync(ls_share_part_t *p, ls_share_sync_cb cb, void *arg)
{
    if (p->dropped) {
        if (cb) cb(arg, LS_ECONFLICT);
        return;
    }
    uint64_t need = ls_sharep_version(p->sp);
    if (p->ever_stored && need == p->stored_ver && !p->writing) {
        if (cb) cb(arg, LS_OK);
        return;
    }
    sync_waiter_t *w = LS_NEW(sync_waiter_t);
    w->cb = cb;
    w->arg = arg;
    w->need = need;
    w->next = p->syncs;
    p->syncs = w;
    if (!p->writing) write_start(p);
}

/* ------------------------------------------------------------- members */

static ls_share_part_t **group_parts(ls_share_store_t *st, const char *group_id, int *n);

static session_t *session_find(ls_share_store_t *st, const char *gid, const char *member)
{
    for (int i = 0; i < st->nsessions; i++)
        if (!strcmp(st->sessions[i].gid, gid) && !strcmp(st->sessions[i].member, member))
            return &st->sessions[i];
    return NULL;
}

uint64_t ls_share_session_id(ls_share_store_t *st, const char *group_id, const char *member_id)
{
    session_t *s = session_find(st, group_id, member_id);
    return s ? s->id : 0;
}

void ls_share_session_bind(ls_share_store_t *st, const char *group_id, const char *member_id,
                           uint64_t conn_id)
{
    session_t *s = session_find(st, group_id, member_id);
    if (s) s->conn_id = conn_id;
}

void ls_share_store_conn_closed(ls_share_store_t *st, uint64_t conn_id)
{
    for (int i = 0; conn_id && i < st->nsessions;) {
        session_t *s = &st->sessions[i];
        if (s->conn_id != conn_id) {
            i++;
            continue;
        }
        /* closes the session too, moving the last one into slot i */
        char *gid = ls_strdup(s->gid), *member = ls_strdup(s->member);
        ls_share_store_member_left(st, gid, member);
        ls_free(gid);
        ls_free(member);
    }
}

void ls_share_session_close(ls_share_store_t *st, const char *group_id, const char *member_id)
{
    session_t *s = session_find(st, group_id, member_id);
    if (!s) return;
    ls_free(s->gid);
    ls_free(s->member);
    ls_free(s->parts);
    *s = st->sessions[--st->nsessions];
}

void ls_share_store_member_left(ls_share_store_t *st, const char *group_id, const char *member_id)
{
    int n;
    ls_share_part_t **touched = group_parts(st, group_id, &n);
    for (int i = 0; i < n; i++)
        ls_sharep_release_member(touched[i]->sp, member_id, ls_clock_mono_ms());
    for (int i = 0; i < n; i++) {
        /* fire and forget: a failed write drops the entry, which frees the
         * records just the same */
        ls_share_part_sync(touched[i], NULL, NULL);
        part_unref(touched[i]);
    }
    ls_free(touched);
    ls_share_session_close(st, group_id, member_id);
}

/* Entries of one group that are loaded (each with a reference taken). */
static ls_share_part_t **group_parts(ls_share_store_t *st, const char *group_id, int *n)
{
    int64_t k;
    void *v;
    ls_share_part_t **out = NULL;
    *n = 0;
    for (size_t it = 0; ls_i64map_next(&st->parts, &it, &k, &v);)
        for (ls_share_part_t *p = v; p; p = p->next)
            if (!p->loading && !strcmp(p->gid, group_id)) {
                out = ls_realloc(out, (size_t)(*n + 1) * sizeof *out);
                out[(*n)++] = p;
                p->refs++;
            }
    return out;
}

void ls_share_store_forget_group(ls_share_store_t *st, const char *group_id)
{
    int n;
    ls_share_part_t **v = group_parts(st, group_id, &n);
    for (int i = 0; i < n; i++) {
        part_drop(v[i], LS_ECONFLICT);
        part_unref(v[i]);
    }
    ls_free(v);
}

/* ------------------------------------------------------------- admin */

typedef struct admin_job {
    ls_share_store_t *st;
    char *gid;
    ls_uuid_t topic_id;
    ls_share_offset_t *v;
    int n;
    ls_share_list_cb list_cb;
    ls_share_done_cb done_cb;
    void *arg;
    ls_status res;
} admin_job_t;

/* "<uuid>/<partition>" after the group's prefix */
static bool parse_tail(const char *tail, ls_share_offset_t *o)
{
    char u[37];
    if (strlen(tail) != 36 + 1 + 10 || tail[36] != '/') return false;
    memcpy(u, tail, 36);
    u[36] = 0;
    if (ls_uuid_parse(u, &o->topic_id) != 0) return false;
    char *end;
    long p = strtol(tail + 37, &end, 10);
    if (*end || p < 0 || p > INT32_MAX) return false;
    o->partition = (int32_t)p;
    return true;
}

static void list_work(void *arg)
{
    admin_job_t *j = arg;
    char *prefix = ls_share_key_group_prefix(j->gid);
    ls_kvlist_t l;
    j->res = ls_meta_scan_prefix(j->st->meta, prefix, 0, &l);
    if (j->res == LS_OK) {
        j->v = LS_NEWN(ls_share_offset_t, l.n ? l.n : 1);
        for (size_t i = 0; i < l.n; i++) {
            ls_share_offset_t *o = &j->v[j->n];
            ls_sharep_t *sp = NULL;
            if (!parse_tail((const char *)l.v[i].key + strlen(prefix), o) ||
                ls_sharep_decode(l.v[i].val, l.v[i].vlen, &j->st->cfg, &sp) != LS_OK) {
                LS_WARN("share", "skipping unreadable share state %s", (const char *)l.v[i].key);
                continue;
            }
            o->start_offset = ls_sharep_spso(sp);
            o->finished = 0;
            for (int64_t off = o->start_offset; off < ls_sharep_speo(sp); off++) {
                ls_sharep_state state;
                int32_t dc;
                const char *owner;
                if (ls_sharep_record(sp, off, &state, &dc, &owner) &&
                    (state == LS_SHAREP_ACKNOWLEDGED || state == LS_SHAREP_ARCHIVED))
                    o->finished++;
            }
            ls_sharep_free(sp);
            j->n++;
        }
        ls_kvlist_free(&l);
    }
    ls_free(prefix);
}

static void admin_after(void *arg)
{
    admin_job_t *j = arg;
    ls_share_store_t *st = j->st;
    st->jobs--;
    if (j->list_cb) j->list_cb(j->arg, j->res, j->v, j->n);
    if (j->done_cb) {
        ls_share_store_forget_group(st, j->gid); /* what the store holds now is served */
        j->done_cb(j->arg, j->res);
    }
    ls_free(j->v);
    ls_free(j->gid);
    ls_free(j);
    store_maybe_free(st);
}

static admin_job_t *admin_job(ls_share_store_t *st, const char *gid, void *arg)
{
    admin_job_t *j = LS_NEW(admin_job_t);
    j->st = st;
    j->gid = ls_strdup(gid);
    j->arg = arg;
    st->jobs++;
    return j;
}

void ls_share_store_list(ls_share_store_t *st, const char *group_id, ls_share_list_cb cb, void *arg)
{
    admin_job_t *j = admin_job(st, group_id, arg);
    j->list_cb = cb;
    st->offload(st->offload_ctx, list_work, admin_after, j);
}

static void reset_work(void *arg)
{
    admin_job_t *j = arg;
    int max = ls_meta_max_txn_ops(j->st->meta);
    if (max < 1) max = 1;
    j->res = LS_OK;
    for (int at = 0; at < j->n && j->res == LS_OK; at += max) {
        int k = j->n - at < max ? j->n - at : max;
        ls_meta_op_t *ops = LS_NEWN(ls_meta_op_t, (size_t)k);
        char **keys = LS_NEWN(char *, (size_t)k);
        uint8_t **vals = LS_NEWN(uint8_t *, (size_t)k);
        for (int i = 0; i < k; i++) {
            const ls_share_offset_t *o = &j->v[at + i];
            keys[i] = state_key(j->gid, &o->topic_id, o->partition);
            ls_sharep_t *sp = ls_sharep_new(&j->st->cfg, o->start_offset);
            ls_buf_t b;
            ls_buf_init(&b);
            ls_sharep_encode(sp, &b);
            ls_sharep_free(sp);
            size_t len;
            vals[i] = ls_buf_steal(&b, &len);
            ops[i] = (ls_meta_op_t){.kind = LS_META_OP_PUT,
                                    .key = keys[i],
                                    .klen = strlen(keys[i]),
                                    .val = vals[i],
                                    .vlen = len};
        }
        int64_t rev;
        j->res = ls_meta_txn(j->st->meta, NULL, 0, ops, (size_t)k, &rev);
        for (int i = 0; i < k; i++) {
            ls_free(keys[i]);
            ls_free(vals[i]);
        }
        ls_free(keys);
        ls_free(vals);
        ls_free(ops);
    }
}

void ls_share_store_reset(ls_share_store_t *st, const char *group_id, const ls_share_offset_t *v,
                          int n, ls_share_done_cb cb, void *arg)
{
    admin_job_t *j = admin_job(st, group_id, arg);
    j->done_cb = cb;
    j->v = LS_NEWN(ls_share_offset_t, n ? (size_t)n : 1);
    if (n) memcpy(j->v, v, (size_t)n * sizeof *v);
    j->n = n;
    st->offload(st->offload_ctx, reset_work, admin_after, j);
}

static void delete_work(void *arg)
{
    admin_job_t *j = arg;
    char *prefix = ls_share_key_group_prefix(j->gid);
    char u[37];
    ls_uuid_format(&j->topic_id, u);
    size_t pl = strlen(prefix);
    char *start = ls_malloc(pl + 36 + 2 + 1), *end = ls_malloc(pl + 36 + 2 + 1);
    snprintf(start, pl + 39, "%s%s/", prefix, u);
    snprintf(end, pl + 39, "%s%s0", prefix, u); /* '/' + 1 */
    ls_meta_op_t op = {.kind = LS_META_OP_DEL_RANGE,
                       .key = start,
                       .klen = strlen(start),
                       .end = end,
                       .elen = strlen(end)};
    int64_t rev;
    j->res = ls_meta_txn(j->st->meta, NULL, 0, &op, 1, &rev);
    ls_free(start);
    ls_free(end);
    ls_free(prefix);
}

void ls_share_store_delete_topic(ls_share_store_t *st, const char *group_id,
                                 const ls_uuid_t *topic_id, ls_share_done_cb cb, void *arg)
{
    admin_job_t *j = admin_job(st, group_id, arg);
    j->done_cb = cb;
    j->topic_id = *topic_id;
    st->offload(st->offload_ctx, delete_work, admin_after, j);
}

/* ------------------------------------------------------------- sessions */

static bool tp_eq(const ls_share_tp_t *a, const ls_share_tp_t *b)
{
    return a->partition == b->partition && !memcmp(&a->topic_id, &b->topic_id, sizeof a->topic_id);
}

static void session_add(session_t *s, const ls_share_tp_t *tp)
{
    for (int i = 0; i < s->nparts; i++)
        if (tp_eq(&s->parts[i], tp)) return;
    if (s->nparts == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 8;
        s->parts = ls_realloc(s->parts, (size_t)s->cap * sizeof *s->parts);
    }
    s->parts[s->nparts++] = *tp;
}

static void session_forget(session_t *s, const ls_share_tp_t *tp)
{
    for (int i = 0; i < s->nparts; i++)
        if (tp_eq(&s->parts[i], tp)) {
            s->parts[i] = s->parts[--s->nparts];
            return;
        }
}

ls_share_session_err ls_share_session_step(ls_share_store_t *st, const char *group_id,
                                           const char *member_id, int32_t epoch,
                                           const ls_share_tp_t *add, int nadd,
                                           const ls_share_tp_t *forget, int nforget,
                                           const ls_share_tp_t **parts, int *nparts)
{
    session_t *s = session_find(st, group_id, member_id);
    if (epoch == 0) {
        if (!s) {
            if (st->nsessions >= st->max_sessions) return LS_SSERR_LIMIT_REACHED;
            if (st->nsessions == st->capsessions) {
                st->capsessions = st->capsessions ? 2 * st->capsessions : 16;
                st->sessions =
                    ls_realloc(st->sessions, (size_t)st->capsessions * sizeof *st->sessions);
            }
            s = &st->sessions[st->nsessions++];
            memset(s, 0, sizeof *s);
            s->gid = ls_strdup(group_id);
            s->member = ls_strdup(member_id);
        }
        s->id = ++st->last_session_id;
        s->nparts = 0;
        s->next_epoch = 1;
    } else if (!s) {
        return LS_SSERR_NOT_FOUND;
    } else if (epoch != -1 && epoch != s->next_epoch) {
        return LS_SSERR_INVALID_EPOCH;
    } else if (epoch != -1) {
        s->next_epoch = epoch == INT32_MAX ? 1 : epoch + 1;
    }
    if (epoch != -1) {
        for (int i = 0; i < nadd; i++)
            session_add(s, &add[i]);
        for (int i = 0; i < nforget; i++)
            session_forget(s, &forget[i]);
    }
    *parts = s->parts;
    *nparts = s->nparts;
    return LS_SSERR_NONE;
}

int ls_share_session_count(const ls_share_store_t *st) { return st->nsessions; }

/* ------------------------------------------------------------- store */

ls_share_store_t *ls_share_store_new(ls_meta_t *meta, const ls_sharep_config_t *cfg,
                                     int max_sessions, ls_share_offload_fn offload,
                                     void *offload_ctx)
{
    ls_share_store_t *st = LS_NEW(ls_share_store_t);
    st->meta = meta;
    st->cfg = *cfg;
    st->max_sessions = max_sessions > 0 ? max_sessions : 1;
    st->offload = offload;
    st->offload_ctx = offload_ctx;
    ls_i64map_init(&st->parts);
    return st;
}

const ls_sharep_config_t *ls_share_store_config(const ls_share_store_t *st) { return &st->cfg; }

static void store_maybe_free(ls_share_store_t *st)
{
    if (!st->closed || st->jobs > 0 || st->nparts > 0) return;
    ls_i64map_free(&st->parts);
    ls_free(st);
}

void ls_share_store_free(ls_share_store_t *st)
{
    if (!st) return;
    st->closed = true;
    while (st->nsessions)
        ls_share_session_close(st, st->sessions[0].gid, st->sessions[0].member);
    ls_free(st->sessions);
    st->sessions = NULL;
    /* drop every entry; those with a store call in flight go when it ends
     * (held like a store call meanwhile, so the last unref does not free st) */
    st->jobs++;
    int64_t k;
    void *v;
    ls_share_part_t **all = NULL;
    int n = 0;
    for (size_t it = 0; ls_i64map_next(&st->parts, &it, &k, &v);)
        for (ls_share_part_t *p = v; p; p = p->next) {
            all = ls_realloc(all, (size_t)(n + 1) * sizeof *all);
            all[n++] = p;
        }
    for (int i = 0; i < n; i++) {
        ls_share_part_t *p = all[i];
        if (p->loading) continue; /* load_after drops it */
        p->refs++;
        part_drop(p, LS_EIO);
        part_unref(p);
    }
    ls_free(all);
    st->jobs--;
    store_maybe_free(st);
}
