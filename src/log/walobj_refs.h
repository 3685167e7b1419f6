/* WAL object reference counts (/ls/walobj/<object key> = "n=<count>").
 *
 * A WAL object holds one section per log; its key counts the index entries
 * that still reference it. Whoever removes index entries (compaction's swap,
 * a trim) counts down the objects they named IN THE SAME metadata txn:
 *   ls_walrefs_add()      once per removed WAL index entry;
 *   ls_walrefs_prepare()  reads each object's current count and appends a
 *                         compare on its mod_rev plus a PUT of the lower count
 *                         (or a DEL at zero) to the caller's txn arrays.
 * The compares make a concurrent change of a count (another remover) fail the
 * whole txn: counts never go down twice for one entry. GC deletes an object
 * once its key is gone (logstore.c). Legacy values ("1", from before counts
 * existed) are never counted down, so such objects are kept.
 * Blocking (metadata reads): worker threads only. */
#ifndef LS_WALOBJ_REFS_H
#define LS_WALOBJ_REFS_H
#include <stddef.h>

#include "meta/meta.h"

typedef struct ls_walref {
    char key[160]; /* /ls/walobj/<object> */
    int refs;      /* index entries removed by this txn */
    ls_kv_t kv;    /* current value, read by prepare */
    char val[32];  /* new value */
} ls_walref_t;

typedef struct ls_walrefs {
    ls_walref_t *v;
    int n;
} ls_walrefs_t;

/* Compares + ops prepare may append: 2 per distinct object. */
#define LS_WALREFS_TXN_SLOTS(r) ((size_t)(r)->n * 2)

void ls_walrefs_add(ls_walrefs_t *r, const char *object);
/* Appends compares and ops for every counted object (the arrays need
 * LS_WALREFS_TXN_SLOTS free slots each; they point into r, which must live
 * until the txn ran). *released counts objects whose key the txn deletes.
 * A read failure other than "absent" is returned (nothing appended then for
 * that object; the caller should not commit). */
ls_status ls_walrefs_prepare(ls_walrefs_t *r, ls_meta_t *meta, ls_meta_cmp_t *cmps, size_t *ncmp,
                             ls_meta_op_t *ops, size_t *nops, int *released);
void ls_walrefs_free(ls_walrefs_t *r);
#endif
