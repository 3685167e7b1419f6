/* Private to lake/materialize*.c: the state of one table commit
 * (ls_mat_batch) and the functions its files share. materialize.c holds the
 * commit itself; mat_version.c table versions (evolution=new-table);
 * mat_upsert.c upsert and primary-key sets; mat_typed.c schema readers and
 * typed rows; mat_json.c JSON rows. Design: src/lake/README.md. */
#ifndef LS_MATERIALIZE_INT_H
#define LS_MATERIALIZE_INT_H
#include "lake/materialize.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "base/alloc.h"
#include "base/clock.h"
#include "base/crashpoint.h"
#include "base/diag.h"
#include "base/hash.h"
#include "records/records.h"
#include "registry/avro_view.h"
#include "registry/registry.h"
#include "table/data_files.h"
#include "table/delta_log.h"
#include "table/delta_mirror.h"
#include "table/iceberg_raw.h"
#include "table/iceberg_table.h"
#include "table/iceberg_typed.h"
#include "table/table_catalog.h"

#define MAX_HEADERS 256
#define TYPED_SCHEMA_ID_KEY "lakestream.value.schema-id"
#define TYPED_SCHEMA_IDS_KEY "lakestream.value.schema-ids"
#define KEY_SCHEMA_ID_KEY "lakestream.key.schema-id"
#define KEY_SCHEMA_IDS_KEY "lakestream.key.schema-ids"
#define JSON_SCHEMA_ID "json" /* TYPED_SCHEMA_ID_KEY of a value.format=json table */
#define SKIPPED_KEY "lakestream.skipped-records"
#define MAX_DECOMPRESSED ((size_t)256 << 20)
/* Table versions (evolution=new-table, src/lake/README.md): on the version that
 * was continued (its last commit) ... */
#define CONT_AS_KEY "lakestream.table.continued-as"
#define CONT_REASON_KEY "lakestream.table.continued-as.reason"
#define CONT_PARTITION_KEY "lakestream.table.continued-as.partition"
#define CONT_OFFSET_KEY "lakestream.table.continued-as.offset"
#define CONT_SCHEMA_KEY "lakestream.table.continued-as.schema"
#define CONT_LAST_COLUMN_KEY "lakestream.table.continued-as.last-column-id"
#define CONT_VID_KEY "lakestream.table.continued-as.value-schema-id"
#define CONT_KID_KEY "lakestream.table.continued-as.key-schema-id"
/* ... and on the version that continues it (set when it is created) */
#define VERSION_KEY "lakestream.table.version"
#define CONTINUES_KEY "lakestream.table.continues"
#define VERSION_REASON_KEY "lakestream.table.version.reason"
#define VERSION_VID_KEY "lakestream.table.version.value-schema-id"
#define VERSION_KID_KEY "lakestream.table.version.key-schema-id"
#define MAX_VERSIONS 1000
struct row_ctx;

typedef struct row_ctx {
    ls_mat_batch_t *b;
    int32_t partition;
    int64_t log_id, last_offset; /* the range's log and last offset */
    int64_t base_offset;
    int64_t above; /* only offsets > above */
    uint64_t rows;
    ls_status st;
    bool incompatible; /* the bad record's schema is one the table cannot evolve to */
    int32_t bad_id;    /* ... that schema's id */
    bool bad_key;      /* ... a key schema */
    int64_t stop_at;   /* the offset of the record that stopped the range (LS_ELIMIT) */
    char err[1024];
} row_ctx_t;

/* Through the table catalog: commits swap the table's pointer in ls_meta.
 * create: make the table when it does not exist (else LS_ENOTFOUND). */
/* The shape a table is created with: the raw one, or a typed one (with
 * the value schema's id kept as a table property). */
typedef struct table_shape {
    const char *schema_json;
    int last_column_id;
    const char *schema_id;     /* typed value: decimal id; NULL: raw */
    const char *key_schema_id; /* typed key: decimal id; NULL: none */
    const char *const *extra;  /* NULL, or more properties: key, value, ..., NULL */
} table_shape_t;

/* A side table of a stream's table (src/lake/README.md): <name>__changelog or
 * <name>__dlq, with its own target and policy (append, raw). */
typedef struct side {
    ls_table_target_t tt;
    ls_policy_t policy;
    ls_mat_batch_t *b;
} side_t;

#define CHANGELOG_SUFFIX "__changelog"
#define DLQ_SUFFIX "__dlq"
#define DLQ_ERROR_HEADER "lakestream.dlq.error"
/* The versions before vt's (cur: vt's table, NULL when not created yet),
 * nearest first, opened: the offsets a version does not record yet are
 * those of the versions before it (they are frozen). */
typedef struct preds {
    ls_ice_table_t **v;
    size_t n;
} preds_t;

/* One table commit: the table handle it appends to, the data files being
 * written, and per log the offset the table holds (from the table at begin,
 * raised by each added range). */
typedef struct mat_log {
    int64_t log_id;
    int64_t done; /* recorded at begin; -1: none */
    int64_t last; /* to record at commit; -1: no range added */
    bool stopped; /* evolution=new-table: a record the table cannot take stopped it */
} mat_log_t;

/* A typed batch's reader of one value (or key) schema id: rd NULL when
 * the schema is incompatible with the table's (why); kept for the batch. */
typedef struct typed_reader {
    int32_t id;
    bool key;
    bool wrong_subject; /* rd NULL: the id is not a version of the strategy's subject */
    ls_sr_schema_t *schema;
    const ls_avro_view_t *pv; /* Protobuf: the message's view (schema's), else NULL */
    ls_typed_reader_t *rd;
    char *why;
} typed_reader_t;

/* Data files of a typed batch opened before its table's schema evolved:
 * finished and committed with the rest (their Parquet schema is the old
 * one; readers project by field id). */
typedef struct retired {
    ls_data_files_t *files;
    ls_typed_shape_t *shape;
} retired_t;

/* The latest record of each key of an upsert batch (src/lake/README.md). */
typedef struct up_rec {
    uint64_t hash;
    uint64_t seq;                /* put order: the latest of one primary key wins */
    int64_t log_id, last_offset; /* of the range it came in (a dead letter's marks) */
    ls_raw_record_t r;           /* key, value and headers point into own / hs */
    uint8_t *own;
    ls_raw_header_t *hs;
} up_rec_t;

typedef struct up_map {
    up_rec_t **slots; /* open addressing; NULL: empty */
    size_t cap, n;
    uint64_t seq; /* puts so far */
} up_map_t;

/* primary.key: the batch's latest record of each identity (the values of
 * the key fields), found at commit from up_map's records (src/lake/README.md). */
typedef struct id_ent {
    uint64_t hash;
    uint8_t *id;
    size_t len;
    const up_rec_t *rec; /* in up_map; NULL: a tombstone of a key with no table yet */
} id_ent_t;

typedef struct id_map {
    id_ent_t *slots; /* open addressing; id NULL: empty */
    size_t cap, n;
} id_map_t;

struct ls_mat_batch {
    const ls_table_target_t *tt;
    ls_meta_t *meta;
    ls_objstore_t *os;
    const char *warehouse_uri;
    ls_pq_opts_t opts;
    ls_ice_table_t *t;       /* typed: NULL until its first record creates it */
    ls_data_files_t *files;  /* with t */
    ls_typed_shape_t *shape; /* typed: the table's current schema */
    /* value.format=json: the inferred JSON Schema of the columns, its model,
     * view and reader for the current shape (built on demand) */
    json_t *jschema;
    ls_jsonschema_t *jjs;
    ls_avro_view_t *jview;
    ls_typed_reader_t *jrd;
    typed_reader_t *readers; /* typed: per value schema id met, for shape */
    size_t nreaders;
    retired_t *retired; /* typed: files written before an evolution, with their shape */
    size_t nretired;
    int32_t *ids; /* typed: value schema ids with rows in the table, ascending */
    size_t nids;
    bool ids_changed;
    int32_t *kids; /* typed keys: the same for key schema ids */
    size_t nkids;
    bool kids_changed;
    int32_t evolved_to;     /* typed: the schema id this batch evolved the table to; -1: none */
    int32_t key_evolved_to; /* the same for the key column */
    int32_t latest_vid, latest_kid; /* -latest formats: the version this batch decodes by */
    uint64_t skipped;               /* error.handling=skip: records left out by this batch */
    mat_log_t *logs;
    size_t nlogs, caplogs;
    uint64_t rows;
    ls_status failed;     /* a failed add may have left part of its rows: never commit */
    up_map_t up;          /* write.mode=upsert */
    id_map_t ids_pk;      /* primary.key: up's records by identity, at commit */
    side_t *cl;           /* changelog=true: the changelog table's batch */
    side_t *dlq;          /* error.handling=dead-letter: the dead-letter table's batch */
    ls_table_target_t vt; /* the caller's target, at the version that takes rows now */
    preds_t preds;        /* the versions before it (their offsets) */
    struct {              /* evolution=new-table: the record that starts the next version */
        bool set;
        int32_t partition;
        int64_t log_id, offset;
        int32_t vid, kid; /* its schema ids (-1: none) */
        char *schema;     /* the next version's Iceberg schema */
        int last_column_id;
        char *reason;
        char next[256]; /* its name */
    } sw;
};

/* materialize.c */
ls_status ls_mat_policy_spec(const ls_policy_t *p, const char *typed_schema, int last_column_id,
                             ls_ice_spec_t *spec, char *why, size_t whylen);
ls_status ls_mat_open_table(ls_meta_t *meta, ls_objstore_t *os, const char *warehouse_uri,
                            const ls_table_target_t *tt, const table_shape_t *shape,
                            ls_ice_table_t **t, char *err, size_t errlen);
ls_status ls_mat_side_target(const ls_table_target_t *tt, const char *suffix, side_t *sd, char *err,
                             size_t errlen);
void ls_mat_last_offset_key(char *out, size_t cap, int64_t log_id);
ls_status ls_mat_table_last_offset(ls_meta_t *meta, ls_objstore_t *os, const ls_table_target_t *tt,
                                   int64_t log_id, int64_t *out, char *err, size_t errlen);
mat_log_t *ls_mat_batch_log(ls_mat_batch_t *b, int64_t log_id);
ls_status ls_mat_open_files(ls_mat_batch_t *b, char *err, size_t errlen);
ls_status ls_mat_value_schema(ls_mat_batch_t *b, int32_t id, ls_sr_schema_t **out, char *err,
                              size_t errlen);
const ls_avro_node_t *ls_mat_schema_root(const ls_sr_schema_t *sc, const ls_avro_view_t *pv);
ls_status ls_mat_payload_datum(const ls_sr_schema_t *sc, const ls_avro_view_t *pv,
                               ls_typed_datum_t *d, ls_buf_t *tmp, char *why, size_t whylen);
void ls_mat_note_id(int32_t **ids, size_t *n, bool *changed, int32_t id);
void ls_mat_clear_readers(ls_mat_batch_t *b);
ls_status ls_mat_write_row(row_ctx_t *c, const ls_raw_record_t *r);

/* mat_version.c */
bool ls_mat_versioned(const ls_table_target_t *tt);
void ls_mat_target_rename(ls_table_target_t *tt, const char *name);
ls_status ls_mat_resolve_version(ls_meta_t *meta, ls_objstore_t *os, const ls_table_target_t *tt,
                                 ls_table_target_t *out, ls_ice_table_t **cur, char *err,
                                 size_t errlen);
void ls_mat_preds_free(preds_t *p);
ls_status ls_mat_load_preds(ls_meta_t *meta, ls_objstore_t *os, const ls_table_target_t *vt,
                            ls_ice_table_t *cur, preds_t *p, char *err, size_t errlen);
int64_t ls_mat_version_done(const preds_t *p, const ls_ice_table_t *cur, int64_t log_id);

/* mat_upsert.c */
void ls_mat_up_put(up_map_t *m, const ls_raw_record_t *r, int64_t log_id, int64_t last_offset);
void ls_mat_id_clear(id_map_t *m);
void ls_mat_up_clear(up_map_t *m);
ls_status ls_mat_pk_collect(ls_mat_batch_t *b, char *err, size_t errlen);
ls_status ls_mat_upsert_rows(ls_mat_batch_t *b, uint64_t *rows, char *err, size_t errlen);
ls_file_rewrite_opts_t ls_mat_rewrite_opts(const ls_mat_batch_t *b);
ls_status ls_mat_upsert_drops(ls_mat_batch_t *b, ls_file_cow_t *cow, char *err, size_t errlen);

/* mat_typed.c */
ls_status ls_mat_evolve_table(ls_mat_batch_t *b, ls_typed_shape_t *ns, int32_t id, bool key,
                              char *err, size_t errlen);
ls_status ls_mat_latest_id(ls_mat_batch_t *b, bool key, int32_t *id, char *err, size_t errlen);
ls_status ls_mat_create_typed(row_ctx_t *c, const ls_raw_record_t *r, int32_t vid, int32_t kid,
                              const ls_avro_view_t *vpv, const ls_avro_view_t *kpv);
ls_status ls_mat_typed_reader(row_ctx_t *c, const ls_raw_record_t *r, int32_t id, bool key,
                              const ls_avro_view_t *pv, const ls_typed_reader_t **out,
                              const ls_sr_schema_t **schema);
ls_status ls_mat_proto_message(row_ctx_t *c, const ls_raw_record_t *r, int32_t id, bool key,
                               bool latest, ls_typed_datum_t *d, const ls_avro_view_t **pv,
                               ls_sr_schema_t **hold);
ls_status ls_mat_new_version(row_ctx_t *c, const ls_raw_record_t *r, int32_t vid, int32_t kid,
                             const ls_avro_view_t *vpv, const ls_avro_view_t *kpv);
ls_status ls_mat_row_writer(ls_mat_batch_t *b, const ls_raw_record_t *r, const ls_typed_datum_t *v,
                            const ls_typed_datum_t *k, ls_pq_writer_t **w, char *err,
                            size_t errlen);
ls_status ls_mat_typed_row(row_ctx_t *c, const ls_raw_record_t *r);
ls_status ls_mat_bad_record(row_ctx_t *c, const ls_raw_record_t *r);

/* mat_json.c */
void ls_mat_json_free_view(ls_mat_batch_t *b);
ls_status ls_mat_json_row(row_ctx_t *c, const ls_raw_record_t *r);
#endif
