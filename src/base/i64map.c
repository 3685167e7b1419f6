#include "base/i64map.h"

#include "base/alloc.h"

static char tombstone_marker;
#define TOMB ((void *)&tombstone_marker)

static size_t slot_of(int64_t key, size_t cap)
{
    uint64_t h = (uint64_t)key * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 17) & (cap - 1);
}

void ls_i64map_init(ls_i64map_t *m)
{
    m->keys = NULL;
    m->vals = NULL;
    m->cap = m->count = m->used = 0;
}

void ls_i64map_free(ls_i64map_t *m)
{
    ls_free(m->keys);
    ls_free(m->vals);
    ls_i64map_init(m);
}

static void rehash(ls_i64map_t *m, size_t cap)
{
    int64_t *ok = m->keys;
    void **ov = m->vals;
    size_t ocap = m->cap;
    m->keys = LS_NEWN(int64_t, cap);
    m->vals = LS_NEWN(void *, cap);
    m->cap = cap;
    m->count = m->used = 0;
    for (size_t i = 0; i < ocap; i++)
        if (ov[i] && ov[i] != TOMB) ls_i64map_put(m, ok[i], ov[i]);
    ls_free(ok);
    ls_free(ov);
}

void *ls_i64map_get(const ls_i64map_t *m, int64_t key)
{
    if (!m->cap) return NULL;
    for (size_t i = slot_of(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
        if (!m->vals[i]) return NULL;
        if (m->vals[i] != TOMB && m->keys[i] == key) return m->vals[i];
    }
}

void ls_i64map_put(ls_i64map_t *m, int64_t key, void *val)
{
    if ((m->used + 1) * 4 >= m->cap * 3)
        rehash(m, m->cap ? (m->count * 2 >= m->cap ? m->cap * 2 : m->cap) : 16);
    size_t tomb = (size_t)-1;
    for (size_t i = slot_of(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
        if (!m->vals[i]) {
            if (tomb != (size_t)-1)
                i = tomb;
            else
                m->used++;
            m->keys[i] = key;
            m->vals[i] = val;
            m->count++;
            return;
        }
        if (m->vals[i] == TOMB) {
            if (tomb == (size_t)-1) tomb = i;
        } else if (m->keys[i] == key) {
            m->vals[i] = val;
            return;
        }
    }
}

void *ls_i64map_del(ls_i64map_t *m, int64_t key)
{
    if (!m->cap) return NULL;
    for (size_t i = slot_of(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
        if (!m->vals[i]) return NULL;
        if (m->vals[i] != TOMB && m->keys[i] == key) {
            void *v = m->vals[i];
            m->vals[i] = TOMB;
            m->count--;
            return v;
        }
    }
}

int ls_i64map_next(const ls_i64map_t *m, size_t *iter, int64_t *key, void **val)
{
    for (; *iter < m->cap; (*iter)++) {
        if (m->vals[*iter] && m->vals[*iter] != TOMB) {
            *key = m->keys[*iter];
            *val = m->vals[*iter];
            (*iter)++;
            return 1;
        }
    }
    return 0;
}
