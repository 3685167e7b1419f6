/* The broker's cold-range source (log/cold_source.h) backed by the tables:
 * the glue between the log reader's in-table ranges (index entries of kind
 * LS_IDX_TABLE) and the reads of lake/cold_table.h. Design note in
 * cold_tables.c. */
#ifndef LS_COLD_TABLES_H
#define LS_COLD_TABLES_H
#include <stddef.h>
#include <stdint.h>

#include "log/cold_source.h"
#include "meta/meta.h"
#include "objstore/objstore.h"
#include "stream/catalog.h"

struct ls_registry;

typedef struct ls_cold_tables_config {
    ls_meta_t *meta;
    ls_objstore_t *os;
    ls_catalog_t *catalog;
    const ls_prop_t *table_defaults; /* the cluster layer of table policies */
    int ntable_defaults;
    struct ls_registry *registry;
    int64_t static_ts_type; /* log.message.timestamp.type of the broker (LS_BCFG_TS_*) */
    size_t batch_bytes;     /* rebuilt batches of about this (0: 256 KiB) */
    int max_tables;         /* tables whose plans are kept (0: 64) */
    int64_t max_age_ms;     /* a kept plan is reloaded after this (0: 30 s) */
    uint64_t
        file_cache_bytes; /* data files kept open: fetched bytes, mapped files whole (0: none) */
} ls_cold_tables_config_t;

typedef struct ls_cold_tables_stats {
    uint64_t reads;                /* reads answered (any status) */
    uint64_t plan_hits;            /* reads served from a kept plan */
    uint64_t plan_loads;           /* table metadata + manifests loaded */
    uint64_t stale;                /* reads that met a stale plan (LS_ENOTFOUND) and reloaded */
    uint64_t evictions;            /* kept plans dropped for the bound */
    uint64_t failures;             /* reads answered with an error */
    uint64_t bytes_read;           /* bytes of data files read */
    uint64_t ranged;               /* files read by ranged GETs */
    uint64_t records_out;          /* records rebuilt */
    uint64_t files_kept_open;      /* file reads that found the file open */
    uint64_t file_cache_bytes;     /* bytes of open files now (fetched; mapped: whole) */
    uint64_t file_cache_evictions; /* open files closed for the bound */
    int tables_kept;               /* plans kept now */
} ls_cold_tables_stats_t;

typedef struct ls_cold_tables ls_cold_tables_t;

ls_cold_tables_t *ls_cold_tables_new(const ls_cold_tables_config_t *cfg);
/* The source to hand to ls_logstore_set_cold_source (ctx: t). */
void ls_cold_tables_source(ls_cold_tables_t *t, ls_cold_source_t *out);
void ls_cold_tables_stats(ls_cold_tables_t *t, ls_cold_tables_stats_t *out);
/* After the last read (the log store freed or its source cleared). */
void ls_cold_tables_free(ls_cold_tables_t *t);
#endif
