/* One allocation policy: these wrappers abort on OOM (a server that cannot
 * allocate cannot serve). Tests may swap the hooks to inject failures. */
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
