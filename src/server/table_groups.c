/* Tables as consumer groups; design note in table_groups.h. */
#include "server/table_groups.h"

#include <stdio.h>

#include "base/alloc.h"
#include "lake/table_plan.h"

ls_status ls_table_groups_read(ls_meta_t *meta, ls_catalog_t *catalog, ls_table_group_t **out,
                               int *n)
{
    *out = NULL;
    *n = 0;
    ls_table_status_entry_t *tv;
    size_t nt;
    ls_status st = ls_table_status_list(meta, &tv, &nt);
    if (st != LS_OK) return st;
    int ns = 0;
    ls_stream_t **streams = ls_catalog_list(catalog, NULL, &ns);
    ls_table_group_t *v = LS_NEWN(ls_table_group_t, nt + 1);
    int k = 0;
    for (size_t i = 0; i < nt; i++) {
        const ls_stream_t *s = NULL;
        for (int j = 0; j < ns && !s; j++)
            if (streams[j]->stream_no == tv[i].stream_no) s = streams[j];
        if (!s) continue; /* its stream was deleted */
        ls_table_group_t *g = &v[k++];
        size_t len = sizeof LS_TABLE_GROUP_PREFIX + strlen(tv[i].ns) + strlen(tv[i].table) + 1;
        g->group_id = ls_malloc(len);
        snprintf(g->group_id, len, LS_TABLE_GROUP_PREFIX "%s.%s", tv[i].ns, tv[i].table);
        g->topic = ls_strdup(s->name);
        g->partitions = s->partitions;
        g->offsets = LS_NEWN(int64_t, (size_t)s->partitions + 1);
        /* covered: the last offset it accounts for; a group commits the next */
        for (int32_t p = 0; p < s->partitions; p++)
            g->offsets[p] = p < tv[i].status.n && tv[i].status.covered[p] >= 0
                                ? tv[i].status.covered[p] + 1
                                : -1;
    }
    ls_stream_list_release(streams, ns);
    ls_table_status_list_free(tv, nt);
    *out = v;
    *n = k;
    return LS_OK;
}
