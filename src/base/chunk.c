#include "base/chunk.h"

#include "base/alloc.h"

ls_chunk_t *ls_chunk_new(size_t len)
{
    ls_chunk_t *c = ls_malloc(sizeof(*c) + len);
    c->refcnt = 1;
    c->len = len;
    c->data = (uint8_t *)(c + 1);
    c->on_free = NULL;
    return c;
}

ls_chunk_t *ls_chunk_adopt(uint8_t *data, size_t len)
{
    ls_chunk_t *c = ls_malloc(sizeof(*c));
    c->refcnt = 1;
    c->len = len;
    c->data = data;
    c->on_free = NULL;
    return c;
}

ls_chunk_t *ls_chunk_keep(ls_chunk_t *c)
{
    __atomic_add_fetch(&c->refcnt, 1, __ATOMIC_RELAXED);
    return c;
}

void ls_chunk_release(ls_chunk_t *c)
{
    if (!c || __atomic_sub_fetch(&c->refcnt, 1, __ATOMIC_ACQ_REL) != 0) return;
    if (c->on_free) c->on_free(c);
    if (c->data != (uint8_t *)(c + 1)) ls_free(c->data);
    ls_free(c);
}
