/* A followed record of the metadata store (design: meta/meta_follow.h).
 * Invariant: while open, exactly one of the watch and the rewatch thread
 * carries the record's changes to the hook; write_mu makes this broker's
 * changes one at a time, so they lose compares only to other brokers. */
#include "meta/meta_follow.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/diag.h"
#include "base/thread.h"

struct ls_meta_follow {
    ls_meta_t *meta;
    ls_meta_follow_cfg_t cfg;
    size_t klen;
    ls_meta_watch_t *watch;
    pthread_t rewatch;
    bool rewatching;
    pthread_mutex_t write_mu; /* one change of this broker at a time */
};

/* The record as stored: *kv valid (free it) when *found; *store_rev the store
 * revision the read observed. */
static ls_status record_get(ls_meta_follow_t *f, ls_kvlist_t *l, bool *found, int64_t *store_rev)
{
    ls_status st = ls_meta_scan_prefix(f->meta, f->cfg.key, 1, l);
    if (st != LS_OK) return st;
    *found = l->n == 1 && l->v[0].klen == f->klen;
    if (store_rev) *store_rev = l->revision;
    return LS_OK;
}

/* Reads the record into the hook. */
static ls_status record_load(ls_meta_follow_t *f, int64_t *store_rev)
{
    ls_kvlist_t l;
    bool found;
    ls_status st = record_get(f, &l, &found, store_rev);
    if (st != LS_OK) return st;
    if (!f->cfg.load(f->cfg.arg, found ? l.v[0].val : NULL, found ? l.v[0].vlen : 0,
                     found ? l.v[0].mod_rev : 0))
        st = LS_ECORRUPT;
    ls_kvlist_free(&l);
    return st;
}

/* ---- watch ---- */

static void on_watch(void *arg, const ls_meta_event_t *ev, size_t n);

static void *rewatch_main(void *arg)
{
    ls_meta_follow_t *f = arg;
    ls_meta_watch_cancel(f->meta, f->watch);
    f->watch = NULL;
    for (;;) {
        int64_t rev = 0;
        ls_status st = record_load(f, &rev);
        if (st == LS_OK)
            st = ls_meta_watch(f->meta, f->cfg.key, f->klen, rev, on_watch, f, &f->watch);
        if (st == LS_OK) {
            LS_INFO(f->cfg.tag, "%s watch resynchronized at revision %lld", f->cfg.what,
                    (long long)rev);
            return NULL;
        }
        LS_ERROR(f->cfg.tag, "resynchronizing the %s watch: %s; retrying", f->cfg.what,
                 ls_status_str(st));
        sleep(1);
    }
}

static void on_watch(void *arg, const ls_meta_event_t *ev, size_t n)
{
    ls_meta_follow_t *f = arg;
    if (!ev) {
        LS_WARN(f->cfg.tag, "%s watch fell behind the store's history; rereading %s", f->cfg.what,
                f->cfg.key);
        if (f->rewatching) pthread_join(f->rewatch, NULL);
        f->rewatching = ls_thread_start(&f->rewatch, f->cfg.thread, rewatch_main, f) == 0;
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const ls_kv_t *kv = &ev[i].kv;
        if (kv->klen != f->klen || memcmp(kv->key, f->cfg.key, kv->klen) != 0) continue;
        bool put = ev[i].kind == LS_META_EV_PUT;
        f->cfg.load(f->cfg.arg, put ? kv->val : NULL, put ? kv->vlen : 0, kv->mod_rev);
    }
}

ls_status ls_meta_follow_open(ls_meta_t *meta, const ls_meta_follow_cfg_t *cfg,
                              ls_meta_follow_t **out)
{
    ls_meta_follow_t *f = LS_NEW(ls_meta_follow_t);
    f->meta = meta;
    f->cfg = *cfg;
    f->klen = strlen(cfg->key);
    pthread_mutex_init(&f->write_mu, NULL);
    int64_t rev = 0;
    ls_status st = record_load(f, &rev);
    if (st == LS_OK) st = ls_meta_watch(meta, cfg->key, f->klen, rev, on_watch, f, &f->watch);
    if (st != LS_OK) {
        ls_meta_follow_close(f);
        f = NULL;
    }
    *out = f;
    return st;
}

void ls_meta_follow_close(ls_meta_follow_t *f)
{
    if (!f) return;
    if (f->rewatching) pthread_join(f->rewatch, NULL);
    if (f->watch) ls_meta_watch_cancel(f->meta, f->watch);
    pthread_mutex_destroy(&f->write_mu);
    ls_free(f);
}

/* ---- changes ---- */

ls_status ls_meta_follow_change(ls_meta_follow_t *f, int attempts, ls_meta_follow_step_fn step,
                                void *ctx, int64_t *rev)
{
    pthread_mutex_lock(&f->write_mu);
    ls_status st = LS_ECONFLICT;
    *rev = 0;
    for (int attempt = 0; attempt < attempts && st == LS_ECONFLICT; attempt++) {
        ls_kvlist_t l;
        bool found;
        if ((st = record_get(f, &l, &found, NULL)) != LS_OK) break;
        char *next = NULL;
        st = step(ctx, found ? l.v[0].val : NULL, found ? l.v[0].vlen : 0, &next);
        int64_t cur_rev = found ? l.v[0].mod_rev : 0;
        ls_kvlist_free(&l);
        if (st != LS_OK || !next) break;
        ls_meta_cmp_t cmp = {
            .kind = LS_META_CMP_MOD_REV, .key = f->cfg.key, .klen = f->klen, .rev = cur_rev};
        ls_meta_op_t op = {.kind = LS_META_OP_PUT,
                           .key = f->cfg.key,
                           .klen = f->klen,
                           .val = next,
                           .vlen = strlen(next)};
        st = ls_meta_txn(f->meta, &cmp, 1, &op, 1, rev);
        free(next);
    }
    if (st != LS_OK) *rev = 0;
    pthread_mutex_unlock(&f->write_mu);
    return st;
}

json_t *ls_meta_follow_settings_parse(const uint8_t *val, size_t vlen,
                                      ls_meta_setting_check_fn check)
{
    if (!val) return json_object();
    json_t *doc = json_loadb((const char *)val, vlen, 0, NULL);
    if (!doc || !json_is_object(doc)) goto bad;
    const char *name, *k;
    json_t *kv, *v;
    json_object_foreach(doc, name, kv)
    {
        if (!json_is_object(kv)) goto bad;
        json_object_foreach(kv, k, v)
        {
            char e[512];
            if (!json_is_string(v) || check(k, json_string_value(v), e, sizeof e) != 0) goto bad;
        }
    }
    return doc;
bad:
    json_decref(doc);
    return NULL;
}
