/* ls_objstore mem backend: an in-memory store for unit tests.
 *
 * Invariants: objs[0..n) is sorted by key (bytewise, strcmp) with unique
 * keys; each object owns its key and bytes. An object is replaced whole under
 * the mutex, so readers see the old bytes or the new ones, never a mix.
 *
 * Threads: any thread; one mutex guards the array. Copies in and
 * out happen outside the lock where possible (put builds the object first). */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "objstore/objstore.h"

typedef struct mem_obj {
    char *key;
    uint8_t *data;
    size_t len;
    int64_t mtime_ms;
} mem_obj_t;

typedef struct mem_store {
    ls_objstore_t base;
    pthread_mutex_t mu;
    mem_obj_t *objs;
    size_t n, cap;
} mem_store_t;

/* Index of the first object with key >= key. Caller holds mu. */
static size_t mem_lower_bound(const mem_store_t *ms, const char *key)
{
    size_t lo = 0, hi = ms->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(ms->objs[mid].key, key) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static mem_obj_t *mem_find(mem_store_t *ms, const char *key)
{
    size_t i = mem_lower_bound(ms, key);
    return i < ms->n && strcmp(ms->objs[i].key, key) == 0 ? &ms->objs[i] : NULL;
}

static ls_status mem_invalid(mem_store_t *ms, const char *what, const char *key)
{
    pthread_mutex_lock(&ms->mu);
    snprintf(ls_objstore_errbuf(), LS_OBJSTORE_ERRMSG_CAP, "invalid %s '%s'", what,
             key ? key : "(null)");
    pthread_mutex_unlock(&ms->mu);
    return LS_EINVAL;
}

static ls_status mem_put(ls_objstore_t *os, const char *key, const struct iovec *iov, int iovcnt,
                         int flags)
{
    mem_store_t *ms = (mem_store_t *)os;
    if (!ls_objstore_key_valid(key)) return mem_invalid(ms, "object key", key);
    if (iovcnt < 0 || (iovcnt > 0 && !iov) || (flags & ~LS_OBJSTORE_PUT_CREATE_ONLY))
        return mem_invalid(ms, "put arguments for", key);
    size_t len = 0;
    for (int i = 0; i < iovcnt; i++)
        len += iov[i].iov_len;
    uint8_t *data = ls_malloc(len);
    size_t pos = 0;
    for (int i = 0; i < iovcnt; i++) {
        if (iov[i].iov_len) memcpy(data + pos, iov[i].iov_base, iov[i].iov_len);
        pos += iov[i].iov_len;
    }
    int64_t now = ls_clock_wall_ms();

    pthread_mutex_lock(&ms->mu);
    size_t i = mem_lower_bound(ms, key);
    if (i < ms->n && strcmp(ms->objs[i].key, key) == 0) {
        if (flags & LS_OBJSTORE_PUT_CREATE_ONLY) {
            snprintf(ls_objstore_errbuf(), LS_OBJSTORE_ERRMSG_CAP,
                     "put %s: object exists (create-only)", key);
            pthread_mutex_unlock(&ms->mu);
            ls_free(data);
            return LS_EEXISTS;
        }
        ls_free(ms->objs[i].data);
        ms->objs[i].data = data;
        ms->objs[i].len = len;
        ms->objs[i].mtime_ms = now;
        pthread_mutex_unlock(&ms->mu);
        return LS_OK;
    }
    if (ms->n == ms->cap) {
        ms->cap = ms->cap ? ms->cap * 2 : 64;
        ms->objs = ls_realloc(ms->objs, ms->cap * sizeof *ms->objs);
    }
    memmove(&ms->objs[i + 1], &ms->objs[i], (ms->n - i) * sizeof *ms->objs);
    ms->objs[i] = (mem_obj_t){ls_strdup(key), data, len, now};
    ms->n++;
    pthread_mutex_unlock(&ms->mu);
    return LS_OK;
}

static ls_status mem_get(ls_objstore_t *os, const char *key, uint64_t off, uint64_t len,
                         ls_buf_t *out)
{
    mem_store_t *ms = (mem_store_t *)os;
    if (!ls_objstore_key_readable(key)) return mem_invalid(ms, "object key", key);
    out->len = 0;
    pthread_mutex_lock(&ms->mu);
    mem_obj_t *o = mem_find(ms, key);
    if (!o) {
        pthread_mutex_unlock(&ms->mu);
        return LS_ENOTFOUND;
    }
    if (off < o->len) {
        uint64_t n = o->len - off < len ? o->len - off : len;
        ls_buf_append(out, o->data + off, (size_t)n);
    }
    pthread_mutex_unlock(&ms->mu);
    return LS_OK;
}

static ls_status mem_head(ls_objstore_t *os, const char *key, ls_objinfo_t *info)
{
    mem_store_t *ms = (mem_store_t *)os;
    if (!ls_objstore_key_readable(key)) return mem_invalid(ms, "object key", key);
    pthread_mutex_lock(&ms->mu);
    mem_obj_t *o = mem_find(ms, key);
    if (o) {
        info->key = NULL;
        info->size = o->len;
        info->mtime_ms = o->mtime_ms;
    }
    pthread_mutex_unlock(&ms->mu);
    return o ? LS_OK : LS_ENOTFOUND;
}

static ls_status mem_del(ls_objstore_t *os, const char *key)
{
    mem_store_t *ms = (mem_store_t *)os;
    if (!ls_objstore_key_readable(key)) return mem_invalid(ms, "object key", key);
    pthread_mutex_lock(&ms->mu);
    size_t i = mem_lower_bound(ms, key);
    if (i < ms->n && strcmp(ms->objs[i].key, key) == 0) {
        ls_free(ms->objs[i].key);
        ls_free(ms->objs[i].data);
        memmove(&ms->objs[i], &ms->objs[i + 1], (ms->n - i - 1) * sizeof *ms->objs);
        ms->n--;
    }
    pthread_mutex_unlock(&ms->mu);
    return LS_OK;
}

static ls_status mem_list(ls_objstore_t *os, const char *prefix, ls_objinfo_t **out, size_t *n)
{
    mem_store_t *ms = (mem_store_t *)os;
    *out = NULL;
    *n = 0;
    if (!prefix) prefix = "";
    if (!ls_objstore_prefix_valid(prefix)) return mem_invalid(ms, "list prefix", prefix);
    size_t plen = strlen(prefix);
    pthread_mutex_lock(&ms->mu);
    size_t first = mem_lower_bound(ms, prefix), last = first;
    while (last < ms->n && strncmp(ms->objs[last].key, prefix, plen) == 0)
        last++;
    ls_objinfo_t *v = last > first ? LS_NEWN(ls_objinfo_t, last - first) : NULL;
    for (size_t i = first; i < last; i++) {
        v[i - first].key = ls_strdup(ms->objs[i].key);
        v[i - first].size = ms->objs[i].len;
        v[i - first].mtime_ms = ms->objs[i].mtime_ms;
    }
    pthread_mutex_unlock(&ms->mu);
    *out = v;
    *n = last - first;
    return LS_OK;
}

static void mem_close(ls_objstore_t *os)
{
    mem_store_t *ms = (mem_store_t *)os;
    for (size_t i = 0; i < ms->n; i++) {
        ls_free(ms->objs[i].key);
        ls_free(ms->objs[i].data);
    }
    ls_free(ms->objs);
    pthread_mutex_destroy(&ms->mu);
    ls_free(ms);
}

static const ls_objstore_ops_t mem_ops = {
    .name = "mem",
    .put = mem_put,
    .get = mem_get,
    .head = mem_head,
    .del = mem_del,
    .list = mem_list,
    .close = mem_close,
};

ls_objstore_t *ls_objstore_mem_open(void)
{
    mem_store_t *ms = LS_NEW(mem_store_t);
    ms->base.ops = &mem_ops;
    pthread_mutex_init(&ms->mu, NULL);
    return &ms->base;
}
