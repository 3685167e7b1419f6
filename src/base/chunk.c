#include "base/chunk.h"

#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>

#include "base/alloc.h"

ls_chunk_t *ls_chunk_new(size_t len)
{
    ls_chunk_t *c = ls_malloc(sizeof(*c) + len);
    c->refcnt = 1;
    c->len = len;
    c->data = (uint8_t *)(c + 1);
    c->pool = NULL;
    c->cap = 0;
    c->map = NULL;
    c->maplen = 0;
    return c;
}

ls_chunk_t *ls_chunk_adopt(uint8_t *data, size_t len)
{
    ls_chunk_t *c = ls_chunk_new(0);
    c->len = len;
    c->data = data;
    return c;
}

ls_chunk_t *ls_chunk_mapped(void *map, size_t maplen, uint8_t *data, size_t len)
{
    ls_chunk_t *c = ls_chunk_new(0);
    c->len = len;
    c->data = data;
    c->map = map;
    c->maplen = maplen;
    return c;
}

ls_chunk_t *ls_chunk_keep(ls_chunk_t *c)
{
    __atomic_add_fetch(&c->refcnt, 1, __ATOMIC_RELAXED);
    return c;
}

static void pool_give(ls_bufpool_t *p, uint8_t *data, size_t cap);

void ls_chunk_release(ls_chunk_t *c)
{
    if (!c || __atomic_sub_fetch(&c->refcnt, 1, __ATOMIC_ACQ_REL) != 0) return;
    if (c->map)
        munmap(c->map, c->maplen);
    else if (c->pool)
        pool_give(c->pool, c->data, c->cap);
    else if (c->data != (uint8_t *)(c + 1))
        ls_free(c->data);
    ls_free(c);
}

/* ------------------------------------------------------------ buffer pool */

enum { POOL_SLOTS = 64 };

struct ls_bufpool {
    pthread_mutex_t mu;
    int refs; /* the owner + one per chunk not yet released */
    size_t max_bytes, kept_bytes;
    int nkept;
    struct {
        uint8_t *data;
        size_t cap;
    } kept[POOL_SLOTS];
    uint64_t reused, allocated;
};

ls_bufpool_t *ls_bufpool_new(size_t max_bytes)
{
    ls_bufpool_t *p = LS_NEW(ls_bufpool_t);
    pthread_mutex_init(&p->mu, NULL);
    p->refs = 1;
    p->max_bytes = max_bytes;
    return p;
}

static void pool_unref_locked_and_unlock(ls_bufpool_t *p)
{
    bool last = --p->refs == 0;
    pthread_mutex_unlock(&p->mu);
    if (!last) return;
    for (int i = 0; i < p->nkept; i++)
        ls_free(p->kept[i].data);
    pthread_mutex_destroy(&p->mu);
    ls_free(p);
}

void ls_bufpool_release(ls_bufpool_t *p)
{
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    pool_unref_locked_and_unlock(p);
}

void ls_bufpool_take(ls_bufpool_t *p, ls_buf_t *b, size_t n)
{
    ls_buf_init(b);
    if (n == 0) n = 1;
    pthread_mutex_lock(&p->mu);
    int best = -1;
    for (int i = 0; i < p->nkept; i++)
        if (p->kept[i].cap >= n && p->kept[i].cap - n <= n / 2 &&
            (best < 0 || p->kept[i].cap < p->kept[best].cap))
            best = i;
    if (best >= 0) {
        b->data = p->kept[best].data;
        b->cap = p->kept[best].cap;
        p->kept_bytes -= b->cap;
        memmove(p->kept + best, p->kept + best + 1,
                (size_t)(p->nkept - best - 1) * sizeof *p->kept); /* keeps their order */
        p->nkept--;
        p->reused++;
    } else {
        p->allocated++;
    }
    pthread_mutex_unlock(&p->mu);
    if (!b->data) {
        b->data = ls_malloc(n);
        b->cap = n;
    }
}

ls_chunk_t *ls_bufpool_chunk(ls_bufpool_t *p, ls_buf_t *b)
{
    size_t len = b->len, cap = b->cap;
    uint8_t *data = ls_buf_steal(b, NULL);
    ls_chunk_t *c = ls_chunk_adopt(data, len);
    c->pool = p;
    c->cap = cap;
    pthread_mutex_lock(&p->mu);
    p->refs++;
    pthread_mutex_unlock(&p->mu);
    return c;
}

static void pool_give(ls_bufpool_t *p, uint8_t *data, size_t cap)
{
    uint8_t *evicted[POOL_SLOTS];
    int nev = 0;
    pthread_mutex_lock(&p->mu);
    if (p->refs > 1 && cap <= p->max_bytes) {
        /* kept[] is in the order buffers came back: the oldest go first */
        int drop = 0;
        size_t bytes = p->kept_bytes;
        while (drop < p->nkept && (p->nkept - drop >= POOL_SLOTS || bytes + cap > p->max_bytes))
            bytes -= p->kept[drop++].cap;
        for (int i = 0; i < drop; i++)
            evicted[nev++] = p->kept[i].data;
        memmove(p->kept, p->kept + drop, (size_t)(p->nkept - drop) * sizeof *p->kept);
        p->nkept -= drop;
        p->kept[p->nkept].data = data;
        p->kept[p->nkept].cap = cap;
        p->nkept++;
        p->kept_bytes = bytes + cap;
        data = NULL;
    }
    pool_unref_locked_and_unlock(p);
    ls_free(data);
    for (int i = 0; i < nev; i++)
        ls_free(evicted[i]);
}

void ls_bufpool_counts(ls_bufpool_t *p, uint64_t *reused, uint64_t *allocated)
{
    pthread_mutex_lock(&p->mu);
    *reused = p->reused;
    *allocated = p->allocated;
    pthread_mutex_unlock(&p->mu);
}
