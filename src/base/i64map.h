/* Open-addressing hash map from int64 keys to pointers (single thread). */
#ifndef LS_I64MAP_H
#define LS_I64MAP_H
#include <stddef.h>
#include <stdint.h>

typedef struct ls_i64map {
    int64_t *keys;
    void **vals;  /* NULL = empty slot; deleted slots hold the tombstone marker */
    size_t cap;   /* power of two */
    size_t count; /* live entries */
    size_t used;  /* live + tombstones */
} ls_i64map_t;

void ls_i64map_init(ls_i64map_t *m);
void ls_i64map_free(ls_i64map_t *m);
void *ls_i64map_get(const ls_i64map_t *m, int64_t key);
void ls_i64map_put(ls_i64map_t *m, int64_t key, void *val); /* val != NULL */
void *ls_i64map_del(ls_i64map_t *m, int64_t key);           /* returns old value */
/* Iterate: for (size_t i = 0; ls_i64map_next(m, &i, &k, &v);) */
int ls_i64map_next(const ls_i64map_t *m, size_t *iter, int64_t *key, void **val);
#endif
