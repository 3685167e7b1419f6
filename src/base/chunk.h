/* Immutable, reference-counted byte chunk shared across threads (read cache
 * entries, WAL object bodies handed to writers). keep/release are atomic;
 * the last release frees. The bytes must not change after publication. */
#ifndef LS_CHUNK_H
#define LS_CHUNK_H
#include <stddef.h>
#include <stdint.h>

typedef struct ls_chunk {
    int refcnt; /* accessed only through __atomic builtins */
    size_t len;
    uint8_t *data;                      /* points into the same allocation unless adopted */
    void (*on_free)(struct ls_chunk *); /* optional hook before free */
} ls_chunk_t;

ls_chunk_t *ls_chunk_new(size_t len);                  /* refcnt 1, data uninitialised */
ls_chunk_t *ls_chunk_adopt(uint8_t *data, size_t len); /* takes ownership of ls_malloc'd data */
ls_chunk_t *ls_chunk_keep(ls_chunk_t *c);
void ls_chunk_release(ls_chunk_t *c);

#endif
