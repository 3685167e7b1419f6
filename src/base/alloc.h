/* One allocation policy: these wrappers never return NULL; on OOM they panic
 * (base/check.h: one ERROR line, then abort) — a server that cannot allocate
 * cannot serve. There are no allocator hooks: tests that need allocation
 * failures use the sanitizers' allocator options instead. */
#ifndef LS_ALLOC_H
#define LS_ALLOC_H
#include <stddef.h>

void *ls_malloc(size_t n);
void *ls_calloc(size_t count, size_t size);
void *ls_realloc(void *p, size_t n);
char *ls_strdup(const char *s);
char *ls_strndup(const char *s, size_t n);
void *ls_memdup(const void *p, size_t n);
void ls_free(void *p);

/* printf into a fresh heap string. */
char *ls_asprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#define LS_NEW(type) ((type *)ls_calloc(1, sizeof(type)))
#define LS_NEWN(type, n) ((type *)ls_calloc((n), sizeof(type)))

#endif
