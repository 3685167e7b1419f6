/* Materialization (stream–table duality), run inside the compaction pass on
 * the bytes compaction already holds: one read, two outputs.
 *
 * Exactly-once: each snapshot's summary records, per log, the last offset it
 * materialized ("lakestream.log.<log_id %016x>.last-offset"; the table carries
 * these forward from snapshot to snapshot). A range is appended only above
 * that offset, and the table commit happens BEFORE compaction swaps the
 * index. So a pass that crashes after the table commit but before the swap
 * redoes the swap next time without adding rows, and one that crashes
 * before the table commit leaves only orphan data files. The table commit
 * point is the compare-and-set of the table's pointer in ls_meta
 * (table/table_catalog.h); every attempt opens the table from that pointer,
 * so a commit whose answer was lost is seen (or not) by the retry's offset
 * check exactly as it landed.
 *
 * Rows: the raw table (partition, offset, timestamp, key, value, headers).
 * The stream's resolved policy (stream/policy.h) names the table (template),
 * its partition spec (used when the table is created; an existing table
 * keeps its spec), the data-file size target and the codec; the caller
 * passes from_offset for start.position=latest. Control batches
 * (transaction markers) make no rows. */
#include "compact/materialize.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/crashpoint.h"
#include "base/diag.h"
#include "records/records.h"
#include "table/iceberg_raw.h"
#include "table/iceberg_table.h"
#include "table/table_catalog.h"

#define MAX_HEADERS 256
#define MAX_DECOMPRESSED ((size_t)256 << 20)

ls_status ls_table_target_init(ls_table_target_t *t, const ls_stream_t *s, const ls_policy_t *p,
                               char *err, int errlen)
{
    t->stream = s;
    t->policy = p;
    ls_status st = ls_policy_table_name(p, s->ns, s->name, t->name, sizeof t->name, err,
                                        (size_t)errlen);
    if (st == LS_OK)
        snprintf(t->prefix, sizeof t->prefix, "warehouse/%s/%s", s->ns, t->name);
    return st;
}

typedef struct row_ctx {
    ls_raw_files_t *files;
    int32_t partition;
    int64_t base_offset;
    int64_t above;            /* only offsets > above */
    uint64_t rows;
    ls_status st;
} row_ctx_t;

static int on_record(void *arg, const ls_record_view_t *rec)
{
    row_ctx_t *c = arg;
    int64_t offset = c->base_offset + rec->offset_delta;
    if (offset <= c->above)
        return 0;
    ls_raw_header_t hs[MAX_HEADERS];
    size_t nh = 0;
    const uint8_t *hp = rec->headers, *he = rec->headers + rec->headers_len;
    for (int32_t i = 0; i < rec->header_count && nh < MAX_HEADERS; i++) {
        ls_record_header_t h;
        if (ls_record_header_next(&hp, he, &h) != 0)
            break;
        hs[nh++] = (ls_raw_header_t){h.key, (size_t)h.key_len, h.value, h.value_len};
    }
    ls_raw_record_t r = {.partition = c->partition, .offset = offset,
                         .timestamp_ms = rec->timestamp, .key = rec->key,
                         .key_len = rec->key_len, .value = rec->value,
                         .value_len = rec->value_len, .headers = hs, .nheaders = nh};
    c->st = ls_raw_files_add(c->files, &r);
    c->rows++;
    return c->st != LS_OK;
}

/* The policy's partition spec over the raw columns. */
static ls_status policy_spec(const ls_policy_t *p, ls_ice_spec_t *spec)
{
    memset(spec, 0, sizeof *spec);
    ls_status st = LS_OK;
    for (int i = 0; i < p->npart && st == LS_OK; i++) {
        const ls_policy_part_t *f = &p->part[i];
        if (f->column == LS_POLICY_COL_PARTITION)
            st = ls_ice_spec_add(spec, LS_RAW_FID_PARTITION, "partition", LS_ICE_INT,
                                 LS_ICE_IDENTITY);
        else
            st = ls_ice_spec_add(spec, LS_RAW_FID_TIMESTAMP, "timestamp", LS_ICE_TIMESTAMPTZ,
                                 f->transform == LS_POLICY_HOUR ? LS_ICE_HOUR : LS_ICE_DAY);
    }
    return st;
}

/* Through the table catalog: commits swap the table's pointer in ls_meta.
 * create: make the table when it does not exist (else LS_ENOTFOUND). */
static ls_status open_table(ls_meta_t *meta, ls_objstore_t *os, const char *warehouse_uri,
                            const ls_table_target_t *tt, bool create, ls_ice_table_t **t,
                            char *err, int errlen)
{
    const ls_stream_t *s = tt->stream;
    char location[1200];
    ls_status st = ls_tcat_open(meta, os, s->ns, tt->name, tt->prefix, t, err, (size_t)errlen);
    if (st != LS_ENOTFOUND || !create)
        return st;
    snprintf(location, sizeof location, "%s/%s", warehouse_uri, tt->prefix);
    ls_ice_spec_t spec;
    st = policy_spec(tt->policy, &spec);
    if (st != LS_OK) {
        snprintf(err, (size_t)errlen, "%s: unsupported partition spec '%s'",
                 ls_policy_key(LS_POLICY_PARTITION), tt->policy->value[LS_POLICY_PARTITION]);
        return st;
    }
    /* old metadata files are deleted after each commit (Iceberg's properties,
     * so every engine's writer would do the same; ls_ice_table_append) */
    const char *props[] = {"lakestream.stream", s->name, "lakestream.namespace", s->ns,
                           "write.metadata.delete-after-commit.enabled", "true",
                           "write.metadata.previous-versions-max", "10", NULL};
    st = ls_tcat_create(meta, os, s->ns, tt->name, tt->prefix, location,
                        ls_raw_iceberg_schema_json(), LS_RAW_LAST_COLUMN_ID, &spec, props, t,
                        err, (size_t)errlen);
    if (st == LS_EEXISTS)   /* created concurrently: load it */
        st = ls_tcat_open(meta, os, s->ns, tt->name, tt->prefix, t, err, (size_t)errlen);
    else if (st == LS_OK)
        LS_INFO("table", "created Iceberg table %s.%s for stream %s/%s at %s", s->ns, tt->name,
                s->ns, s->name, location);
    return st;
}

static void last_offset_key(char *out, size_t cap, int64_t log_id)
{
    snprintf(out, cap, "lakestream.log.%016llx.last-offset", (unsigned long long)log_id);
}

ls_status ls_materialize_last_offset(ls_meta_t *meta, ls_objstore_t *os,
                                     const ls_table_target_t *tt, int64_t log_id, int64_t *out,
                                     char *err, int errlen)
{
    *out = -1;
    ls_ice_table_t *t = NULL;
    ls_status st = open_table(meta, os, NULL, tt, false, &t, err, errlen);
    if (st == LS_ENOTFOUND)
        return LS_OK;
    if (st != LS_OK)
        return st;
    char key[80];
    last_offset_key(key, sizeof key, log_id);
    const char *done = ls_ice_table_summary(t, key);
    if (done)
        *out = strtoll(done, NULL, 10);
    ls_ice_table_free(t);
    return LS_OK;
}

/* One table commit: the table handle it appends to, the data files being
 * written, and per log the offset the table holds (from the table at begin,
 * raised by each added range). */
typedef struct mat_log {
    int64_t log_id;
    int64_t done;    /* recorded at begin; -1: none */
    int64_t last;    /* to record at commit; -1: no range added */
} mat_log_t;

struct ls_mat_batch {
    const ls_table_target_t *tt;
    ls_ice_table_t *t;
    ls_raw_files_t *files;
    mat_log_t *logs;
    size_t nlogs, caplogs;
    uint64_t rows;
    ls_status failed;   /* a failed add may have left part of its rows: never commit */
};

static mat_log_t *batch_log(ls_mat_batch_t *b, int64_t log_id)
{
    for (size_t i = 0; i < b->nlogs; i++)
        if (b->logs[i].log_id == log_id)
            return &b->logs[i];
    if (b->nlogs == b->caplogs) {
        b->caplogs = b->caplogs ? b->caplogs * 2 : 16;
        b->logs = ls_realloc(b->logs, b->caplogs * sizeof *b->logs);
    }
    mat_log_t *l = &b->logs[b->nlogs++];
    char key[80];
    last_offset_key(key, sizeof key, log_id);
    const char *done = ls_ice_table_summary(b->t, key);
    *l = (mat_log_t){.log_id = log_id, .done = done ? strtoll(done, NULL, 10) : -1, .last = -1};
    return l;
}

ls_status ls_mat_begin(ls_meta_t *meta, ls_objstore_t *os, const char *warehouse_uri,
                       const ls_table_target_t *tt, ls_mat_batch_t **out, char *err, int errlen)
{
    *out = NULL;
    const char *codec = tt->policy->value[LS_POLICY_COMPRESSION];
    int c = ls_pq_codec_parse(codec);
    if (c < 0) {
        snprintf(err, (size_t)errlen, "%s: unknown codec '%s'",
                 ls_policy_key(LS_POLICY_COMPRESSION), codec);
        return LS_EINVAL;
    }
    ls_mat_batch_t *b = LS_NEW(ls_mat_batch_t);
    b->tt = tt;
    ls_status st = open_table(meta, os, warehouse_uri, tt, true, &b->t, err, errlen);
    if (st != LS_OK) {
        ls_free(b);
        return st;
    }
    ls_ice_table_set_snapshot_retention(b->t, tt->policy->snapshot_retention_ms,
                                        (int)tt->policy->snapshot_retention_min);
    ls_pq_opts_t opts;
    ls_pq_opts_init(&opts);
    opts.codec = (ls_pq_codec)c;
    char ferr[256];
    b->files = ls_raw_files_new(b->t, &opts, (size_t)tt->policy->target_file_bytes, ferr,
                                sizeof ferr);
    if (!b->files) {
        snprintf(err, (size_t)errlen, "opening data files: %s", ferr);
        ls_mat_free(b);
        return LS_EIO;
    }
    *out = b;
    return LS_OK;
}

int64_t ls_mat_done(ls_mat_batch_t *b, int64_t log_id)
{
    mat_log_t *l = batch_log(b, log_id);
    return l->last > l->done ? l->last : l->done;
}

ls_status ls_mat_add(ls_mat_batch_t *b, int32_t partition, int64_t log_id, const uint8_t *obj,
                     const ls_co_entry_t *entries, uint32_t n, size_t body_end,
                     int64_t from_offset, int64_t last_offset, uint64_t *rows_out, char *err,
                     int errlen)
{
    *rows_out = 0;
    mat_log_t *l = batch_log(b, log_id);
    int64_t above = l->last > l->done ? l->last : l->done;
    if (from_offset > last_offset || above >= last_offset)
        return LS_OK;   /* start.position=latest, or the table holds the range already */
    if (above < from_offset - 1)
        above = from_offset - 1;
    row_ctx_t rc = {.files = b->files, .partition = partition, .above = above, .st = LS_OK};
    for (uint32_t i = 0; i < n && rc.st == LS_OK; i++) {
        size_t end = i + 1 < n ? entries[i + 1].pos : body_end;
        const uint8_t *batch = obj + entries[i].pos;
        size_t len = end - entries[i].pos;
        ls_batch_info_t bi;
        ls_batch_header_parse(batch, &bi);
        if (bi.control)
            continue;
        rc.base_offset = entries[i].base_offset;
        if (rc.base_offset + bi.last_offset_delta <= above)
            continue;
        ls_rb_result rr = ls_records_foreach(batch, len, MAX_DECOMPRESSED, on_record, &rc);
        if (rr != LS_RB_OK) {
            snprintf(err, (size_t)errlen, "entry at offset %lld does not decode (class %d)",
                     (long long)rc.base_offset, (int)rr);
            rc.st = LS_ECORRUPT;
        }
    }
    if (rc.st != LS_OK && !err[0])
        snprintf(err, (size_t)errlen, "writing data files: %s", ls_raw_files_error(b->files));
    if (rc.st != LS_OK)
        b->failed = rc.st;
    if (rc.st == LS_OK) {
        l->last = last_offset;
        b->rows += rc.rows;
        *rows_out = rc.rows;
    }
    return rc.st;
}

ls_status ls_mat_commit(ls_mat_batch_t *b, uint64_t *rows, char *err, int errlen)
{
    *rows = 0;
    if (b->failed != LS_OK) {
        snprintf(err, (size_t)errlen, "a range of this commit failed to materialize");
        return b->failed;
    }
    size_t nkv = 0;
    for (size_t i = 0; i < b->nlogs; i++)
        nkv += b->logs[i].last >= 0;
    if (!nkv)
        return LS_OK;
    const ls_ice_datafile_t *dfs = NULL;
    size_t ndf = 0;
    ls_status st = ls_raw_files_finish(b->files, &dfs, &ndf);
    if (st != LS_OK) {
        snprintf(err, (size_t)errlen, "writing data files: %s", ls_raw_files_error(b->files));
        return st;
    }
    const char **kv = LS_NEWN(const char *, 2 * nkv + 1);
    char (*keys)[80] = ls_calloc(nkv, sizeof *keys);
    char (*vals)[24] = ls_calloc(nkv, sizeof *vals);
    size_t k = 0;
    for (size_t i = 0; i < b->nlogs; i++) {
        if (b->logs[i].last < 0)
            continue;
        last_offset_key(keys[k], sizeof keys[k], b->logs[i].log_id);
        snprintf(vals[k], sizeof vals[k], "%lld", (long long)b->logs[i].last);
        kv[2 * k] = keys[k];
        kv[2 * k + 1] = vals[k];
        k++;
    }
    ls_crashpoint("table.data_written");
    int64_t snap;
    st = ls_ice_table_append(b->t, dfs, ndf, kv, ls_clock_wall_ms(), &snap);
    if (st != LS_OK)
        snprintf(err, (size_t)errlen, "committing snapshot: %s", ls_ice_table_error(b->t));
    else
        *rows = b->rows;
    ls_free(kv);
    ls_free(keys);
    ls_free(vals);
    return st;
}

void ls_mat_free(ls_mat_batch_t *b)
{
    if (!b)
        return;
    ls_raw_files_free(b->files);
    ls_ice_table_free(b->t);
    ls_free(b->logs);
    ls_free(b);
}

ls_status ls_materialize_range(ls_meta_t *meta, ls_objstore_t *os, const char *warehouse_uri,
                               const ls_table_target_t *tt,
                               int32_t partition, int64_t log_id, const uint8_t *obj,
                               const ls_co_entry_t *entries, uint32_t n, size_t body_end,
                               int64_t from_offset, int64_t last_offset, uint64_t *rows_out,
                               char *err, int errlen)
{
    *rows_out = 0;
    if (from_offset > last_offset)
        return LS_OK;   /* start.position=latest: nothing of this range belongs to the table */
    ls_mat_batch_t *b;
    ls_status st = ls_mat_begin(meta, os, warehouse_uri, tt, &b, err, errlen);
    if (st != LS_OK)
        return st;
    uint64_t added;
    st = ls_mat_add(b, partition, log_id, obj, entries, n, body_end, from_offset, last_offset,
                    &added, err, errlen);
    if (st == LS_OK)
        st = ls_mat_commit(b, rows_out, err, errlen);
    ls_mat_free(b);
    return st;
}

ls_status ls_materialize_remove_orphans(ls_meta_t *meta, ls_objstore_t *os,
                                        const ls_table_target_t *tt, int64_t older_than_ms,
                                        uint64_t *deleted, char *err, int errlen)
{
    *deleted = 0;
    ls_ice_table_t *t = NULL;
    ls_status st = open_table(meta, os, NULL, tt, false, &t, err, errlen);
    if (st == LS_ENOTFOUND)
        return LS_OK;
    if (st != LS_OK)
        return st;
    st = ls_ice_table_remove_orphans(t, older_than_ms, deleted);
    if (st != LS_OK)
        snprintf(err, (size_t)errlen, "%s", ls_ice_table_error(t));
    ls_ice_table_free(t);
    return st;
}
