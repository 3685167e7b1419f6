/* Materialization (stream–table duality), run inside the compaction pass on
 * the bytes compaction already holds: one read, two outputs.
 *
 * Exactly-once: each snapshot's summary records, per log, the last offset it
 * materialized ("lakestream.log.<log_id %016x>.last-offset"; the table carries
 * these forward from snapshot to snapshot). A range is appended only above
 * that offset, and the table commit happens BEFORE compaction swaps the
 * index. So a pass that crashes after the table commit but before the swap
 * redoes the swap next time without adding rows, and one that crashes
 * before the table commit leaves only orphan data files.
 *
 * Rows: the raw table (partition, offset, timestamp, key, value, headers),
 * partitioned by day(timestamp) unless the policy says otherwise. Control
 * batches (transaction markers) make no rows. */
#include "compact/materialize.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/diag.h"
#include "kafka/records.h"
#include "table/iceberg_raw.h"
#include "table/iceberg_table.h"

#define MAX_HEADERS 256
#define TARGET_FILE_BYTES ((size_t)128 << 20)
#define MAX_DECOMPRESSED ((size_t)256 << 20)

int ls_table_enabled(const ls_stream_t *s)
{
    const char *v = ls_stream_config_get(s, LS_TABLE_ENABLED);
    return v && (!strcasecmp(v, "true") || !strcmp(v, "1") || !strcasecmp(v, "yes"));
}

int ls_table_prefix(char *out, size_t cap, const ls_stream_t *s)
{
    return snprintf(out, cap, "warehouse/%s/%s", s->ns, s->name);
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

static ls_status open_table(ls_objstore_t *os, const char *warehouse_uri, const ls_stream_t *s,
                            ls_ice_table_t **t, char *err, int errlen)
{
    char prefix[600], location[1200];
    ls_table_prefix(prefix, sizeof prefix, s);
    ls_status st = ls_ice_table_load(os, prefix, t, err, (size_t)errlen);
    if (st != LS_ENOTFOUND)
        return st;
    snprintf(location, sizeof location, "%s/%s", warehouse_uri, prefix);
    ls_ice_spec_t spec;
    memset(&spec, 0, sizeof spec);
    const char *part = ls_stream_config_get(s, LS_TABLE_PARTITION);
    if (!part || !strcmp(part, "day"))
        st = ls_ice_spec_add(&spec, LS_RAW_FID_TIMESTAMP, "timestamp", LS_ICE_TIMESTAMPTZ, LS_ICE_DAY);
    else if (!strcmp(part, "hour"))
        st = ls_ice_spec_add(&spec, LS_RAW_FID_TIMESTAMP, "timestamp", LS_ICE_TIMESTAMPTZ, LS_ICE_HOUR);
    else if (!strcmp(part, "none"))
        st = LS_OK;
    else {
        snprintf(err, (size_t)errlen, "%s: '%s' is not day, hour or none", LS_TABLE_PARTITION, part);
        return LS_EINVAL;
    }
    if (st != LS_OK)
        return st;
    const char *props[] = {"lakestream.stream", s->name, "lakestream.namespace", s->ns, NULL};
    st = ls_ice_table_create(os, prefix, location, ls_raw_iceberg_schema_json(),
                             LS_RAW_LAST_COLUMN_ID, &spec, props, t, err, (size_t)errlen);
    if (st == LS_EEXISTS)   /* created concurrently: load it */
        st = ls_ice_table_load(os, prefix, t, err, (size_t)errlen);
    else if (st == LS_OK)
        LS_INFO("table", "created Iceberg table %s.%s at %s", s->ns, s->name, location);
    return st;
}

ls_status ls_materialize_range(ls_objstore_t *os, const char *warehouse_uri, const ls_stream_t *s,
                               int32_t partition, int64_t log_id, const uint8_t *obj,
                               const ls_co_entry_t *entries, uint32_t n, size_t body_end,
                               int64_t last_offset, uint64_t *rows_out, char *err, int errlen)
{
    *rows_out = 0;
    ls_ice_table_t *t = NULL;
    ls_status st = open_table(os, warehouse_uri, s, &t, err, errlen);
    if (st != LS_OK)
        return st;
    char key[80];
    snprintf(key, sizeof key, "lakestream.log.%016llx.last-offset", (unsigned long long)log_id);
    const char *done = ls_ice_table_summary(t, key);
    int64_t above = done ? strtoll(done, NULL, 10) : -1;
    if (above >= last_offset) {
        ls_ice_table_free(t);
        return LS_OK;   /* materialized by an earlier attempt */
    }
    ls_pq_opts_t opts;
    ls_pq_opts_init(&opts);
    const char *codec = ls_stream_config_get(s, LS_TABLE_COMPRESSION);
    int c = ls_pq_codec_parse(codec ? codec : "zstd");
    if (c < 0) {
        snprintf(err, (size_t)errlen, "%s: unknown codec '%s'", LS_TABLE_COMPRESSION, codec);
        ls_ice_table_free(t);
        return LS_EINVAL;
    }
    opts.codec = (ls_pq_codec)c;
    char ferr[256];
    ls_raw_files_t *files = ls_raw_files_new(t, &opts, TARGET_FILE_BYTES, ferr, sizeof ferr);
    if (!files) {
        snprintf(err, (size_t)errlen, "opening data files: %s", ferr);
        ls_ice_table_free(t);
        return LS_EIO;
    }
    row_ctx_t rc = {.files = files, .partition = partition, .above = above, .st = LS_OK};
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
    const ls_ice_datafile_t *dfs = NULL;
    size_t ndf = 0;
    if (rc.st == LS_OK)
        rc.st = ls_raw_files_finish(files, &dfs, &ndf);
    if (rc.st == LS_OK) {
        char lastbuf[32];
        snprintf(lastbuf, sizeof lastbuf, "%lld", (long long)last_offset);
        const char *summary[] = {key, lastbuf, NULL};
        int64_t snap;
        rc.st = ls_ice_table_append(t, dfs, ndf, summary, ls_clock_wall_ms(), &snap);
        if (rc.st != LS_OK)
            snprintf(err, (size_t)errlen, "committing snapshot: %s", ls_ice_table_error(t));
    } else if (!err[0]) {
        snprintf(err, (size_t)errlen, "writing data files: %s", ls_raw_files_error(files));
    }
    *rows_out = rc.rows;
    ls_raw_files_free(files);
    ls_ice_table_free(t);
    return rc.st;
}
