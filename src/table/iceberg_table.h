/* Iceberg v2 and v3 tables in the filesystem layout (Iceberg spec, format/spec.md):
 *
 *   <prefix>/metadata/v<N>.metadata.json      table metadata, N = 1, 2, ...
 *   <prefix>/metadata/version-hint.text       "N" of the newest metadata
 *   <prefix>/metadata/snap-<id>-1-<uuid>.avro manifest list per snapshot
 *   <prefix>/metadata/<uuid>-m0.avro          manifest per append
 *   <prefix>/data/[<partition path>/]<uuid>.parquet
 *
 * stored through ls_objstore under a key prefix; `location` is the URI that
 * prefix has for readers (e.g. "file:///var/lib/ls/store/warehouse/ns/t"),
 * and every path written into metadata is location-based.
 *
 * Commit: an append writes its manifest and manifest list (fresh names), then
 * the new metadata file, then moves the table's commit point:
 *  - with a committer (a catalog, e.g. table_catalog.h: a compare-and-set of
 *    a pointer in ls_meta): the metadata is written create-only under a
 *    unique name <prefix>/metadata/<N %05d>-<uuid>.metadata.json and the
 *    committer makes it current — the commit point. Only after that is it
 *    published for path readers as v<N>.metadata.json + version-hint.text,
 *    so the v<N> names only ever hold committed metadata. A commit whose
 *    outcome is unknown (lost answer) publishes nothing; the catalog decides.
 *    A commit that landed but was not published (the process died between
 *    the swap and the copy, or the copy failed) is published by the next
 *    writer that opens the table (ls_ice_table_publish), so a table that
 *    commits rarely (a dead-letter table) is not left stale for path readers.
 *  - without one (the plain filesystem layout): v<N+1>.metadata.json written
 *    create-only is the commit point, then version-hint.text.
 * A concurrent committer that got there first makes an append fail with
 * LS_ECONFLICT (the caller reloads and retries; orphaned manifests are
 * harmless). version-hint.text is a hint only: layout loaders probe onward.
 *
 * Exactly-once hooks: an append may set caller properties. Each goes into
 * the new snapshot's summary; keys starting with LS_ICE_CARRY_PREFIX
 * ("lakestream.") also go into the table properties in the same commit, so
 * the table always holds e.g. every log's last materialized offset while a
 * snapshot records only what its commit changed (tables written before this
 * carried them in every summary; their first append moves them).
 *
 * Maintenance, in every append (design note in iceberg_table.c): manifests
 * are merged as Iceberg's merging append does (commit.manifest-merge.*
 * table properties), snapshots older than the table's snapshot retention expire, the
 * metadata log is trimmed to write.metadata.previous-versions-max, and the
 * files this leaves unreferenced (manifest lists, manifests, data files a
 * rewrite or overwrite removed, metadata files) are deleted by the first
 * commit after they have been unreferenced for the table's file grace
 * (readers that loaded the table earlier keep reading them until then); the
 * table property lakestream.pending-deletes records them meanwhile.
 *
 * Supported: format v2 with data files and position delete files
 * (table/position_deletes.h; equality deletes are refused), and format v3
 * (LS_ICE_FORMAT_VERSION_PROP, ls_ice_table_upgrade) with row lineage and
 * deletion vectors (table/deletion_vector.h) instead of position delete
 * files, schemas given as Iceberg JSON (evolved
 * by ls_ice_table_set_schema in the next commit), one partition spec whose sources are top-level or
 * struct-nested columns of type boolean, int, long, float, double, date, time, timestamp(tz),
 * string, binary, fixed, uuid or decimal, with the transforms the spec's "Partition Transforms"
 * table allows for each: identity, bucket[N] (not boolean, float, double),
 * truncate[W] (int, long, decimal, string, binary), year/month/day (date,
 * timestamp), hour (timestamp), void; null source
 * values give null partition values; unsorted order, merging append. A table
 * object is used by one thread; it is not refreshed behind the caller. */
#ifndef LS_ICEBERG_TABLE_H
#define LS_ICEBERG_TABLE_H
#include "base/buf.h"
#include "base/status.h"
#include "objstore/objstore.h"
#include "table/parquet_writer.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LS_ICE_MAX_PART 8
#define LS_ICE_CARRY_PREFIX "lakestream."
#define LS_ICE_BOUND_MAX 16 /* binary/string bounds are truncated to this many bytes */
/* The table property holding the files awaiting deletion (the reader grace,
 * iceberg_maintain.c): this writer's bookkeeping, not the table's. */
#define LS_ICE_PENDING_DELETES_KEY LS_ICE_CARRY_PREFIX "pending-deletes"

typedef enum ls_ice_transform {
    LS_ICE_IDENTITY = 0,
    LS_ICE_HOUR,
    LS_ICE_DAY,
    LS_ICE_MONTH,
    LS_ICE_YEAR,
    LS_ICE_BUCKET,   /* bucket[N]: param N */
    LS_ICE_TRUNCATE, /* truncate[W]: param W */
    LS_ICE_VOID,     /* always null */
} ls_ice_transform;

/* Source column types, for partition values and bounds. */
typedef enum ls_ice_type {
    LS_ICE_INT,
    LS_ICE_LONG,
    LS_ICE_DATE,
    LS_ICE_TIMESTAMP,
    LS_ICE_TIMESTAMPTZ,
    LS_ICE_STRING,
    LS_ICE_BINARY,
    LS_ICE_TIME,    /* micros since midnight */
    LS_ICE_UUID,    /* 16 bytes */
    LS_ICE_DECIMAL, /* decimal(prec, scale) */
    LS_ICE_FIXED,   /* fixed[len] */
    LS_ICE_BOOLEAN, /* identity and void only (spec "Partition Transforms") */
    LS_ICE_FLOAT,   /* the same */
    LS_ICE_DOUBLE,  /* the same */
} ls_ice_type;

typedef struct ls_ice_part_field {
    int source_id; /* schema field id */
    ls_ice_type source_type;
    int prec, scale; /* LS_ICE_DECIMAL source */
    int flen;        /* LS_ICE_FIXED source: bytes */
    int field_id;    /* 1000, 1001, ... */
    char name[64];   /* e.g. "timestamp_day" */
    ls_ice_transform transform;
    int param; /* bucket: N >= 1; truncate: W >= 1; else 0 */
} ls_ice_part_field_t;

typedef struct ls_ice_spec {
    int spec_id;
    int nfields;
    ls_ice_part_field_t fields[LS_ICE_MAX_PART];
} ls_ice_spec_t;

/* A partition value (a transform's result). Results of type int, long,
 * date, time, timestamp(tz) are in l, booleans as 0/1; float and double
 * results as the bits of the value as a double (a float widens exactly, so
 * a float -> double promotion of the source keeps every value; NaN
 * canonical, -0.0 and 0.0 distinct, as Java's Float.equals tells identity
 * partitions apart); string, binary, fixed, uuid and decimal results are n
 * bytes in the spec's single-value serialization (Appendix D: UTF-8; the
 * bytes; a decimal's unscaled value as big-endian two's complement, fewest
 * bytes): inline in b up to LS_ICE_PVAL_INLINE, else at ext (b unused).
 * Ownership of ext: a data file owns its partition values' ext
 * (ls_ice_datafile_clear frees them; dec_part and ls_ice_pval_copy
 * allocate); the result of ls_ice_field_apply_sval borrows the source's
 * bytes. So a value that outlives its source is copied with
 * ls_ice_pval_copy, and values are compared with ls_ice_pvals_cmp, never
 * memcmp. Unused inline bytes are zero. */
#define LS_ICE_PVAL_INLINE 128
typedef struct ls_ice_pval {
    uint8_t null; /* 1: null */
    uint32_t n;
    int64_t l;
    uint8_t *ext;
    uint8_t b[LS_ICE_PVAL_INLINE];
} ls_ice_pval_t;

/* The bytes of a string/binary/fixed/uuid/decimal value (v->n of them). */
static inline const uint8_t *ls_ice_pval_data(const ls_ice_pval_t *v)
{
    return v->n > LS_ICE_PVAL_INLINE ? v->ext : v->b;
}
/* *dst = a copy of src that owns its bytes (free with ls_ice_pval_clear). */
void ls_ice_pval_copy(ls_ice_pval_t *dst, const ls_ice_pval_t *src);
void ls_ice_pval_clear(ls_ice_pval_t *v);
/* A total order of tuples of n values (equal iff every value is: null,
 * number and bytes), for grouping files by partition. */
int ls_ice_pvals_cmp(const ls_ice_pval_t *x, const ls_ice_pval_t *y, int n);

/* A source value of a row, for the partition transforms: null; an int-like
 * value in l (int, long, date days, time and timestamps in micros; a
 * boolean 0/1); a float or double in f; a decimal's unscaled value in d;
 * string/binary/fixed bytes at p[0..n) (borrowed for the call); a uuid's
 * 16 bytes in u. */
typedef struct ls_ice_sval {
    bool null;
    int64_t l;
    double f;
    __int128 d;
    const uint8_t *p;
    size_t n;
    uint8_t u[16];
} ls_ice_sval_t;

/* Adds a field (field id 1000 + index, name "<column>" for identity else
 * "<column>_<transform>", Iceberg Java's names: _bucket, _trunc, _year,
 * _month, _day, _hour, _null for void). LS_EINVAL for a transform/type
 * pair the spec's "Partition Transforms" table does not allow (boolean,
 * float and double sources take identity and void only), a
 * bucket/truncate parameter < 1, or too many fields. Decimal and fixed
 * sources: set prec/scale/flen of the added field afterwards
 * (ls_ice_spec_add_typed does it). */
ls_status ls_ice_spec_add(ls_ice_spec_t *s, int source_id, const char *source_name,
                          ls_ice_type source_type, ls_ice_transform t);
ls_status ls_ice_spec_add_param(ls_ice_spec_t *s, int source_id, const char *source_name,
                                ls_ice_type source_type, ls_ice_transform t, int param);
/* The same with the source's Iceberg type as the schema spells it ("int",
 * "decimal(9,2)", "fixed[4]", ...); *why says what is refused. */
ls_status ls_ice_spec_add_typed(ls_ice_spec_t *s, int source_id, const char *source_name,
                                const char *iceberg_type, ls_ice_transform t, int param, char *why,
                                size_t whylen);
/* "identity", "bucket", ... (the spec's names, without parameter). */
const char *ls_ice_transform_name(ls_ice_transform t);
/* Whether transform t applies to source type ty (the spec's table). */
bool ls_ice_transform_accepts(ls_ice_transform t, ls_ice_type ty);
/* The Iceberg type named by s (a primitive this writer partitions by):
 * 0 with *t (and prec/scale, flen for decimal/fixed), -1 otherwise. */
int ls_ice_type_parse(const char *s, ls_ice_type *t, int *prec, int *scale, int *flen);
/* Parses "identity", "hour", "day", "month", "year" (and the plurals),
 * "void", "bucket[N]", "truncate[W]" (*param set); -1 if unknown. */
int ls_ice_transform_parse2(const char *s, int *param);
int ls_ice_transform_parse(const char *s); /* the same without parameter: -1 for bucket/truncate */
/* Transform of a source value (int/long/date as is; timestamps in micros);
 * not for bucket/truncate (they need the field's parameter). */
int64_t ls_ice_transform_apply(ls_ice_transform t, ls_ice_type source_type, int64_t v);
/* Transform of an int-like source value (int, long, date, timestamp(tz)
 * in micros) by field f, bucket and truncate included. */
int64_t ls_ice_field_apply(const ls_ice_part_field_t *f, int64_t v);
/* Transform of a source value of any type f accepts into *out (zeroed
 * first; a null source or void gives null). A result longer than
 * LS_ICE_PVAL_INLINE bytes borrows v's bytes (ext): ls_ice_pval_copy it to
 * keep it. LS_OK. */
ls_status ls_ice_field_apply_sval(const ls_ice_part_field_t *f, const ls_ice_sval_t *v,
                                  ls_ice_pval_t *out);
/* A float or double partition value's bits (ls_ice_pval_t) and back. */
int64_t ls_ice_double_bits(double d);
double ls_ice_bits_double(int64_t l);
/* An int-like partition value (zeroed, not null). */
void ls_ice_pval_long(ls_ice_pval_t *out, int64_t v);
/* Iceberg's 32-bit Murmur3 (x86 variant, seed 0; spec Appendix B) of n bytes. */
uint32_t ls_ice_murmur3(const void *p, size_t n);
/* bucket[N] of the int/long/date/timestamp value v: spec Appendix B hashes
 * int and date as long, 8 bytes little-endian. */
int32_t ls_ice_bucket_long(int64_t v, int n);
/* bucket[N] of a string/binary value (its bytes, UTF-8 for strings). */
int32_t ls_ice_bucket_bytes(const void *p, size_t len, int n);
/* A decimal's unscaled value as the spec's single-value serialization
 * (big-endian two's complement, fewest bytes; what bucket hashes): its
 * length (1..16). */
size_t ls_ice_decimal_bytes(__int128 v, uint8_t out[16]);
/* Hive-style partition path "a=1/ts_day=2023-11-14" (human-readable values;
 * string and binary values reduced to object-key characters: the path is
 * for people, the manifest holds the values). */
void ls_ice_partition_path(const ls_ice_spec_t *s, const ls_ice_pval_t *values, ls_buf_t *out);

typedef struct ls_ice_colmetric {
    int field_id;
    int64_t column_size, value_count, null_count;
    int has_lower, has_upper;
    uint8_t lower[LS_ICE_BOUND_MAX], upper[LS_ICE_BOUND_MAX];
    size_t lower_len, upper_len;
} ls_ice_colmetric_t;

/* What a file holds (spec "Manifests", data_file.content). Position
 * delete files (table/position_deletes.h) name rows of data files of their
 * partition by (file_path, pos); equality deletes are never written. */
#define LS_ICE_CONTENT_DATA 0
#define LS_ICE_CONTENT_POSITION_DELETES 1

/* A data or delete file to add. Paths are full locations (see
 * ls_ice_table_put_data). */
typedef struct ls_ice_datafile {
    int content; /* LS_ICE_CONTENT_*: 0 for data */
    char *path;
    int64_t record_count;
    int64_t file_size;
    ls_ice_pval_t partition[LS_ICE_MAX_PART]; /* transformed values, in spec order */
    ls_ice_colmetric_t *metrics;
    size_t nmetrics;
    /* format version 3 (spec "Row Lineage"): the _row_id of the file's first
     * row, when assigned (a new file's is inherited from its manifest) */
    bool has_first_row_id;
    int64_t first_row_id;
    /* a deletion vector (table/deletion_vector.h; content_size > 0): the data
     * file it deletes from (owned) and its blob's bytes in the Puffin file */
    char *referenced_data_file;
    int64_t content_offset, content_size;
} ls_ice_datafile_t;

/* Fills metrics (column_sizes, value_counts, null_value_counts for every
 * leaf with a field id; lower/upper bounds in Iceberg's single-value
 * serialization for non-repeated leaves) and record_count from a finished
 * Parquet writer. */
void ls_ice_datafile_metrics(ls_ice_datafile_t *df, const ls_pq_writer_t *w);
void ls_ice_datafile_clear(ls_ice_datafile_t *df);

typedef struct ls_ice_table ls_ice_table_t;

/* The creation property (ls_ice_table_create's props) that sets the
 * table's format version, "2" (the default) or "3", as Iceberg's
 * format-version table property does; it is not stored as a property. */
#define LS_ICE_FORMAT_VERSION_PROP "format-version"
/* The reserved field ids of the row lineage columns (spec "Reserved Field
 * IDs"): _row_id and _last_updated_sequence_number. */
#define LS_ICE_FID_ROW_ID 2147483540
#define LS_ICE_FID_LAST_UPDATED_SEQ 2147483539

/* A catalog's commit point. commit() makes the metadata file `key` (URI
 * `location`, layout version `version`) the table's current metadata iff
 * the current one is still the one this table object was loaded from or last
 * committed. Returns LS_OK (committed), LS_ECONFLICT (another commit won:
 * reload) or another status (not known to be committed: the caller must
 * reload before retrying; the catalog holds the truth). It may write a
 * reason to err. release() frees arg. A table object owns its committer's
 * arg from the call that opens it (also when that call fails). */
typedef struct ls_ice_committer {
    ls_status (*commit)(void *arg, int version, const char *location, const char *key, char *err,
                        size_t errlen);
    void (*release)(void *arg);
    void *arg;
} ls_ice_committer_t;

/* Creates the first metadata (version 1) and version-hint.text. LS_EEXISTS
 * if the table exists (committer: its commit reported a conflict; none:
 * v1.metadata.json exists). committer: NULL for the plain filesystem
 * layout. props: NULL or NULL-terminated key, value, ... list. */
ls_status ls_ice_table_create(ls_objstore_t *os, const char *prefix, const char *location,
                              const char *schema_json, int last_column_id,
                              const ls_ice_spec_t *spec, const char *const *props,
                              const ls_ice_committer_t *committer, ls_ice_table_t **out, char *err,
                              size_t errlen);
/* Loads the newest metadata of the filesystem layout (version hint, then
 * probing onward). LS_ENOTFOUND when there is none. */
ls_status ls_ice_table_load(ls_objstore_t *os, const char *prefix,
                            const ls_ice_committer_t *committer, ls_ice_table_t **out, char *err,
                            size_t errlen);
/* Loads the metadata file `key` (under prefix) as layout version `version`:
 * what a catalog's pointer names. */
ls_status ls_ice_table_load_file(ls_objstore_t *os, const char *prefix, const char *key,
                                 int version, const ls_ice_committer_t *committer,
                                 ls_ice_table_t **out, char *err, size_t errlen);
void ls_ice_table_free(ls_ice_table_t *t);

/* A table loaded from its catalog pointer (ls_ice_table_load_file with a
 * committer) whose v<N>.metadata.json copy is missing: writes it (the
 * committed metadata file's bytes) and raises version-hint.text to N if it
 * is lower. One HEAD when the copy exists; nothing for other tables.
 * LS_OK, or the store's status (with ls_ice_table_error): best-effort for
 * the caller, path readers only lag until a later call or commit. */
ls_status ls_ice_table_publish(ls_ice_table_t *t);

/* The table's format version: 2, or 3 (row lineage: every snapshot
 * assigns row ids to the data files it adds, spec "Row Lineage"; deletes
 * are deletion vectors, table/deletion_vector.h). */
int ls_ice_table_format_version(const ls_ice_table_t *t);
/* Raises the format version to fv from the next commit on (2 to 3: the
 * table's next-row-id starts at 0; snapshots before keep no row ids). The
 * same version: nothing. LS_EINVAL (reason in ls_ice_table_error) for a
 * downgrade or a version this writer does not write: Iceberg tables never
 * go back. */
ls_status ls_ice_table_upgrade(ls_ice_table_t *t, int fv);

/* Uploads a data file (create-only) as <prefix>/data/<partition path>/<uuid>.<ext>
 * and sets df->path and df->file_size. */
ls_status ls_ice_table_put_data(ls_ice_table_t *t, const ls_buf_t *bytes, const char *ext,
                                ls_ice_datafile_t *df);

/* The first half of ls_ice_table_put_data, for a caller that PUTs the bytes
 * itself (on another thread: data_files.c): the new file's object key
 * (caller frees), with df->path set; df->file_size is the caller's. */
char *ls_ice_table_data_key(ls_ice_table_t *t, const char *ext, ls_ice_datafile_t *df);
ls_objstore_t *ls_ice_table_objstore(const ls_ice_table_t *t);

/* Reads the file at location loc (a full location under the table's, e.g.
 * a live data file's path) into out (its old contents replaced); LS_EINVAL
 * for a location elsewhere, the store's status otherwise (with
 * ls_ice_table_error). */
ls_status ls_ice_table_get_file(ls_ice_table_t *t, const char *loc, ls_buf_t *out);
/* The same for bytes [off, off + len) of it (len UINT64_MAX: to the end). */
ls_status ls_ice_table_get_range(ls_ice_table_t *t, const char *loc, uint64_t off, uint64_t len,
                                 ls_buf_t *out);
/* The file at location loc mapped whole (ls_objstore_map: a store of
 * local files); LS_EINVAL when the store maps nothing (or loc is not the
 * table's), else the store's status with err. t is not written. */
ls_status ls_ice_table_map_file(const ls_ice_table_t *t, const char *loc, ls_chunk_t **out,
                                char *err, size_t errlen);
/* ls_ice_table_get_range for readers sharing t between threads: the error
 * goes to err, t is not written (ls_ice_table_error stays as it was). */
ls_status ls_ice_table_read_range(const ls_ice_table_t *t, const char *loc, uint64_t off,
                                  uint64_t len, ls_buf_t *out, char *err, size_t errlen);

/* Fast append of n data files as one new snapshot (n may be 0: a snapshot
 * that only moves summary properties, e.g. a log's offset past records that
 * made no rows). summary: NULL or
 * NULL-terminated key, value, ... of extra summary properties. now_ms: the
 * snapshot timestamp, raised to the table's last-updated-ms if it is earlier
 * (timestamps never go back). LS_ECONFLICT when another commit won; t is then stale
 * (free it and load again). */
ls_status ls_ice_table_append(ls_ice_table_t *t, const ls_ice_datafile_t *files, size_t n,
                              const char *const *summary, int64_t now_ms, int64_t *snapshot_id);

/* Replaces the live files removed[0..nremoved) (full locations: data
 * files, and position delete files whose rows all name removed data files
 * or that a merged delete file among added replaces) by added[0..nadded),
 * whose data files must hold exactly the removed data files' rows less
 * rows_deleted (the rows position deletes removed from them, which the
 * caller left out), as one snapshot with operation
 * "replace" (Iceberg's RewriteFiles): manifests naming a removed file are
 * written again with it DELETED and the rest EXISTING (snapshot ids and
 * sequence numbers kept). Position deletes name files by path, so the new
 * files (new paths) are out of every delete's reach: the caller applied
 * them. LS_ECONFLICT when a removed file is no longer live (reload) or
 * another commit won. The removed files stay in storage while older
 * snapshots name them; once this snapshot has expired, a commit after the
 * file grace deletes them. */
ls_status ls_ice_table_rewrite(ls_ice_table_t *t, const char *const *removed, size_t nremoved,
                               const ls_ice_datafile_t *added, size_t nadded, int64_t rows_deleted,
                               int64_t now_ms, int64_t *snapshot_id);

/* Copy-on-write (Iceberg's OverwriteFiles): removes the live data files
 * removed[0..nremoved) and adds added[0..nadded) — any rows: the caller
 * copied what stays of the removed files into added ones — as one snapshot
 * with operation "overwrite" and the summary properties of summary (as for
 * an append); with nothing removed it is an append, or an "overwrite"
 * when added holds position delete files (merge-on-read, Iceberg's
 * RowDelta: they go into a delete manifest of their own). Same manifests,
 * carried properties and conflicts as ls_ice_table_rewrite. */
ls_status ls_ice_table_overwrite(ls_ice_table_t *t, const char *const *removed, size_t nremoved,
                                 const ls_ice_datafile_t *added, size_t nadded,
                                 const char *const *summary_kv, int64_t now_ms,
                                 int64_t *snapshot_id);

/* Snapshots older than retention_ms (by timestamp) expire in later appends,
 * keeping at least min_keep (>= 1) of the newest; retention_ms 0 (the
 * default): snapshots never expire. The current one always stays. */
void ls_ice_table_set_snapshot_retention(ls_ice_table_t *t, int64_t retention_ms, int min_keep);

/* Files that stop being referenced (expired snapshots' manifest lists,
 * manifests and removed data files; metadata files that left the log) stay
 * readable grace_ms (default 0: deleted by the commit that unreferences
 * them, as Iceberg's expireSnapshots) before a later commit or
 * ls_ice_table_expire deletes them. */
void ls_ice_table_set_file_grace(ls_ice_table_t *t, int64_t grace_ms);

/* Maintenance of a table nobody appends to: expires what the retention and
 * the metadata-log limit expire (a commit of its own, without a snapshot, as
 * Iceberg's expireSnapshots) and deletes the files whose grace is over (with
 * that commit, or without one when only metadata files are due). *committed
 * tells whether it committed; *next_ms is when something next becomes due
 * (INT64_MAX: nothing pending). LS_ECONFLICT when another commit won. */
ls_status ls_ice_table_expire(ls_ice_table_t *t, int64_t now_ms, bool *committed, int64_t *next_ms);

/* Deletes the files under the table's location that nothing the table
 * still holds references (failed or crashed commits, engines' refused
 * writes, wherever they put them), last written before older_than_ms;
 * *deleted counts them. Files pending deletion (within their grace) count
 * as referenced, and so does everything under <location>/<keep_dir>/ (NULL:
 * nothing: a Delta log, table/delta_mirror.h). A read failure deletes nothing
 * and is returned. Design note in iceberg_table.c. */
ls_status ls_ice_table_remove_orphans(ls_ice_table_t *t, int64_t older_than_ms,
                                      const char *keep_dir, uint64_t *deleted);
/* Below the table's location: where external catalogs the table is mirrored
 * to write their own metadata files (write.metadata.path, set by
 * compact/catalog_sync.c); never orphans of ours. */
#define LS_ICE_CATALOGS_DIR "metadata/catalogs"

typedef struct ls_ice_maint_stats {
    uint64_t snapshots_expired;  /* by this table object's appends */
    uint64_t manifests_replaced; /* merged into new manifests */
    uint64_t files_deleted;      /* manifest lists, manifests, data and metadata files */
} ls_ice_maint_stats_t;
void ls_ice_table_maint_stats(const ls_ice_table_t *t, ls_ice_maint_stats_t *out);

/* The live data files of the current snapshot (ADDED and EXISTING entries,
 * snapshot ids and sequence numbers explicit), in manifest-list order: free
 * with ls_ice_mentries_free (iceberg_manifest.h). LS_EINVAL (with
 * ls_ice_table_error) when a manifest is not one this writer reads back or
 * the table has delete files (a caller that applies them lists them with
 * ls_ice_table_live_entries). */
struct ls_ice_mentry;
ls_status ls_ice_table_live_files(ls_ice_table_t *t, struct ls_ice_mentry **out, size_t *n);
/* The same with the live position delete files too (df.content tells them
 * apart), data manifests first. */
ls_status ls_ice_table_live_entries(ls_ice_table_t *t, struct ls_ice_mentry **out, size_t *n);

/* The current schema's JSON (free with ls_free) and last-column-id. */
char *ls_ice_table_schema(const ls_ice_table_t *t, int *last_column_id);
/* Makes schema_json (an Iceberg struct; its schema-id is replaced by the next
 * free one, *schema_id) the current schema and raises last-column-id, as
 * part of the table's next commit (a failed commit drops it with the rest).
 * LS_EINVAL (ls_ice_table_error) for JSON that is not a schema, a
 * last_column_id below the table's, or a partition source gone. */
ls_status ls_ice_table_set_schema(ls_ice_table_t *t, const char *schema_json, int last_column_id,
                                  int *schema_id);
const ls_ice_spec_t *ls_ice_table_spec(const ls_ice_table_t *t);
int ls_ice_table_version(const ls_ice_table_t *t);              /* N: layout version */
int64_t ls_ice_table_current_snapshot(const ls_ice_table_t *t); /* -1: none */
size_t ls_ice_table_snapshot_count(const ls_ice_table_t *t);    /* snapshots kept */
/* Summary property of the current snapshot, or NULL; a carried key
 * (LS_ICE_CARRY_PREFIX) is read from the table properties first. */
const char *ls_ice_table_summary(const ls_ice_table_t *t, const char *key);
/* Location of the current metadata file. */
const char *ls_ice_table_metadata_location(const ls_ice_table_t *t);
const char *ls_ice_table_error(const ls_ice_table_t *t);
const char *ls_ice_table_location(const ls_ice_table_t *t); /* the URI readers use */
const char *ls_ice_table_prefix(const ls_ice_table_t *t);   /* its object key prefix */
const char *ls_ice_table_uuid(const ls_ice_table_t *t);     /* table-uuid */
/* last-sequence-number: raised by every commit that makes a snapshot. */
int64_t ls_ice_table_last_sequence(const ls_ice_table_t *t);
#endif
