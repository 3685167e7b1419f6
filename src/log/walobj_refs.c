/* WAL object reference counts: see walobj_refs.h. */
#include "log/walobj_refs.h"

#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "log/log_meta.h"
#include "meta/meta_keys.h"

void ls_walrefs_add(ls_walrefs_t *r, const char *object)
{
    char key[160];
    snprintf(key, sizeof key, LS_KEY_WALOBJ "%s", object);
    for (int i = 0; i < r->n; i++)
        if (strcmp(r->v[i].key, key) == 0) {
            r->v[i].refs++;
            return;
        }
    r->v = ls_realloc(r->v, (size_t)(r->n + 1) * sizeof *r->v);
    ls_walref_t *w = &r->v[r->n++];
    memset(w, 0, sizeof *w);
    memcpy(w->key, key, sizeof key);
    w->refs = 1;
}

ls_status ls_walrefs_prepare(ls_walrefs_t *r, ls_meta_t *meta, ls_meta_cmp_t *cmps, size_t *ncmp,
                             ls_meta_op_t *ops, size_t *nops, int *released)
{
    *released = 0;
    for (int i = 0; i < r->n; i++) {
        ls_walref_t *w = &r->v[i];
        ls_kv_free(&w->kv);
        ls_status st = ls_meta_get(meta, w->key, &w->kv);
        if (st == LS_ENOTFOUND) continue; /* nothing to count down */
        if (st != LS_OK) return st;
        long long count;
        if (w->kv.vlen < 3 || sscanf((const char *)w->kv.val, "n=%lld", &count) != 1)
            continue; /* legacy value: keep the object */
        cmps[(*ncmp)++] = (ls_meta_cmp_t){.kind = LS_META_CMP_MOD_REV,
                                          .key = w->kv.key,
                                          .klen = w->kv.klen,
                                          .rev = w->kv.mod_rev};
        count -= w->refs;
        if (count <= 0) {
            ops[(*nops)++] =
                (ls_meta_op_t){.kind = LS_META_OP_DEL, .key = w->kv.key, .klen = w->kv.klen};
            (*released)++;
        } else {
            snprintf(w->val, sizeof w->val, "n=%lld", count);
            ops[(*nops)++] = (ls_meta_op_t){.kind = LS_META_OP_PUT,
                                            .key = w->kv.key,
                                            .klen = w->kv.klen,
                                            .val = w->val,
                                            .vlen = strlen(w->val)};
        }
    }
    return LS_OK;
}

void ls_walrefs_free(ls_walrefs_t *r)
{
    for (int i = 0; i < r->n; i++)
        ls_kv_free(&r->v[i].kv);
    ls_free(r->v);
    r->v = NULL;
    r->n = 0;
}
