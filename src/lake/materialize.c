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
 * Rows: the raw table (partition, offset, timestamp, key, value, headers),
 * or with value.format=schema-registry a typed table (table/iceberg_typed.h):
 * each value names its Avro schema by id (Confluent wire format), or a JSON
 * schema or a Protobuf message (picked by the payload's message-index array)
 * whose values are transcoded to Avro datums of its view first
 * (registry/avro_view.h: one path for shape, evolution and shredding; a
 * batch's readers are per schema id and message); the table
 * is created from the first record's schema, and a record that does not
 * fit — not framed, an unknown id, a datum that does not decode — fails the
 * range with the offset and the reason (error.handling=fail: the table
 * holds back and the pass retries; the topic keeps accepting writes).
 *
 * Typed keys (key.format=schema-registry): each record's key, when it has
 * one, is unframed and decoded the same way into the key column
 * (_kafka_key_typed), by a reader per key schema id; a key schema evolves
 * the table like a value schema (the table property lakestream.key.schema-id
 * names the last), and a key that makes no row follows error.handling /
 * evolution like a value. A table created from a keyless first record has
 * no key column until the first keyed record adds it.
 *
 * Subjects: with the header formats a record's schema id must be a version
 * of the subject the policy's subject name strategy gives (else it is a bad
 * record); with schema-registry-latest the bytes carry no id: a batch reads
 * the latest version of <topic>-value (-key) once, at first need, and
 * decodes all its records by it (README "Producers without the header").
 *
 * Schema evolution (issue 14 §4): a batch keeps the table's current schema
 * as a shape and, per value schema id it meets, a reader (the datum decoded
 * by its own writer schema into the current columns, by field name). An id
 * whose schema is a compatible change the table needs (a new field, int ->
 * long, float -> double, required -> optional) evolves the table object
 * before its first row: the new Iceberg schema goes into the metadata the
 * batch will commit (ls_ice_table_set_schema), the data files written so far
 * are kept for that commit (retired, under their old schema: readers
 * project by field id), new ones open over the new shape, and the readers
 * are rebuilt for it. So the schema change and the first rows of it are one
 * table commit (the pointer's compare-and-set): a crash before it leaves
 * nothing, and the retry evolves again from the table as it then is; after
 * it, the retried pass loads the evolved schema. Older versions after a newer
 * one fit as they are. The commit sets lakestream.value.schema-id to the
 * last id evolved to and lakestream.value.schema-ids to every id with rows.
 * An id the table cannot evolve to (a type Iceberg cannot promote, an
 * unmapped type) follows evolution=fail (the range waits, the reason names
 * the offset, both schema ids and the path), dead-letter (into
 * <name>__dlq, as error.handling's dead letters) or new-table (below).
 * Files written under an
 * older schema are copied into the current one by field id wherever rows
 * are copied (upsert copy-on-write, small-file rewrite: ls_pqr_copy_rows).
 * The stream's resolved policy (stream/policy.h) names the table (template),
 * its partition spec (used when the table is created; an existing table
 * keeps its spec, and a policy that gives another one holds the table back:
 * spec_check), the data-file size target and the codec; the caller
 * passes from_offset for start.position=latest.
 *
 * Schemaless JSON (value.format=json): the batch keeps the inferred JSON
 * Schema of the table's value columns (jschema; at begin rebuilt from the
 * table's Iceberg schema: ls_json_infer_from_iceberg) with its view and
 * reader. Each record's types are merged into a copy (ls_json_infer): no
 * change writes the row by the view; added properties make the new schema
 * (the table created from the first record, or evolved in the batch like a
 * new schema version: evolve_table, so the change commits with its first
 * rows); a conflict writes the value's JSON text whole into _raw (the
 * other columns null). A value that is not a JSON object is a bad record
 * (error.handling). The table's lakestream.value.schema-id is "json".
 *
 * Transactions: a table only ever holds committed records. The caller
 * materializes a range only below the log's last stable offset (compactor.c,
 * table_plan.c), so every transactional batch in it belongs to a transaction
 * that ended, and passes the log's aborted records overlapping the range
 * (ls_log_aborted_read, read after the head that gave the LSO). Control
 * batches (markers) make no rows, nor do the batches of aborted
 * transactions (producer P's transactional batch at offset o is aborted iff
 * an aborted record of P has first <= o < marker). An open transaction
 * holds its log's table back (at most transaction.max.timeout.ms: then it is
 * aborted); once it ends its records come in exactly once, as any range.
 * The same range feeds the side tables, so the changelog and dead-letter
 * tables hold no aborted record either.
 *
 * Upsert tables (write.mode=upsert): one row per record key, its latest
 * value. A batch keeps the latest record of each key it is given in memory
 * (up_map: ranges arrive in offset order per log, so a later record of a key
 * replaces the earlier one; a key written to two partitions keeps whichever
 * came last). At commit the live files holding rows of those keys are copied
 * without them (copy-on-write, table/file_rewrite.h ls_file_drop_rows), the
 * latest records that are not tombstones become rows, and both commit as one
 * overwrite snapshot with the logs' offsets (ls_ice_table_overwrite): a
 * reader sees a key's previous row or its new one, never both or neither;
 * a tombstone (null value) leaves no row. A record without a key has no row
 * to replace: it fails the range (error.handling=skip leaves it out). Why
 * copy-on-write and not delete files: PyIceberg reads no equality deletes,
 * position deletes need each old row's file and position (found by the same
 * scan), and a table without delete files stays readable by every engine and
 * rewritable by the small-file maintenance. The cost: every commit reads
 * every live file's key column (the whole file) and rewrites the files an
 * update touches — fine for the compacted topics' key spaces (Connect,
 * changelogs); a longer commit interval amortizes it for big ones. Memory:
 * the latest record of each key of one commit's ranges.
 *
 * Primary keys (primary.key, typed keys only): the identity of a row is the
 * values of the named key fields, so keys of two key-schema versions (other
 * bytes) are one row. up_map still holds the latest record per key bytes;
 * at commit pk_collect decodes every key (in put order) into its identity
 * and keeps the latest record of each (ids_pk); rows and copy-on-write go by
 * ids_pk (ls_file_drop_rows_ident over the key field columns). The fields
 * are the table's identifier-field-ids, fixed when the table is created: a
 * table whose key differs from the policy's holds back (pk_check).
 *
 * Table versions (evolution=new-table, typed tables): a table that meets
 * a record whose schema it cannot evolve to is continued by a new table,
 * <base>__v2, then __v3, ... (base: the policy's name), created with that
 * record's columns (the policy's partition spec applied to them: a spec
 * they cannot take holds the table back at the record, nothing frozen).
 * State, all in the tables themselves:
 *   - a version V is live until its last commit sets continued-as=<next>
 *     (with .reason, .partition, .offset, .schema = the next version's
 *     Iceberg schema, .last-column-id, .value-/.key-schema-id); then V is
 *     frozen for good: nothing writes rows into it again.
 *   - the next version N is created (by the first begin that resolves to
 *     it) from what V recorded, with properties version=<n>, continues=<V>,
 *     version.reason and version.value-/key-schema-id (the ids it started
 *     with). N may not exist yet while V says continued-as=N.
 *   - the version that takes rows is found from the base along continued-as
 *     (resolve_version, every begin and offset lookup; whatever the policy's
 *     evolution is now: a frozen version stays frozen).
 *   - offsets: a log's last offset a version holds is its own record of it,
 *     else that of the version before it (frozen, so this never moves), and
 *     so on back to the base (version_done). So N takes every record of a
 *     log above what V held, whichever partition met the switch.
 * The switch, in a batch writing V: the first record whose value (or key)
 * schema V cannot evolve to, of a schema id not older than the one V
 * started with (new_version), stops its log there: V holds the log's rows
 * below it, the batch records the switch, and the log takes no more rows
 * in this batch (ls_mat_stopped). Other logs go on into V; one of them that
 * meets a record V cannot take stops there too. The commit (forced even
 * with no rows) is V's last: rows, offsets and continued-as in one
 * compare-and-set. The compactor swaps no range of a stopped log (it stays
 * in the WAL) and the next pass writes it into N; a backfill range
 * (ls_materialize_range) is finished in N at once. Exactly-once: before the
 * commit nothing changed (the retry meets the same record); after it V is
 * frozen and N starts above V's offsets, created or not; N's own commits
 * record its offsets as any table's. A record whose schema id is older
 * than the one the current version started with and that the version
 * cannot take (a producer not yet upgraded) starts no version: it follows
 * error.handling, the reason saying so. Upsert tables are refused
 * (stream/policy.c): a new version would lack the keys last written before
 * the switch. Side tables (__dlq, __changelog) are one per base, whatever
 * the version. Maintenance: orphan removal walks every version; only the
 * current version commits, so only it rewrites files and expires snapshots.
 *
 * Changelog tables (lakestream.table.changelog=true): a batch carries a
 * second batch for the append-only table <name>__changelog, always in the
 * raw shape (so a tombstone is a row with a null value, whatever the main
 * table's value format). Every range goes to both; each table skips what it
 * already holds (its own per-log offsets), the changelog commits first, and
 * a log's range counts as materialized (ls_mat_done, the index swap) only
 * once both hold it. A crash between the two commits leaves the changelog
 * ahead; the retry adds the range to the main table only. */
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
/* Table versions (evolution=new-table, file comment): on the version that
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

ls_status ls_table_target_init(ls_table_target_t *t, const ls_stream_t *s, const ls_policy_t *p,
                               struct ls_registry *registry, char *err, int errlen)
{
    t->stream = s;
    t->policy = p;
    t->registry = registry;
    ls_status st =
        ls_policy_table_name(p, s->ns, s->name, t->name, sizeof t->name, err, (size_t)errlen);
    if (st == LS_OK) snprintf(t->prefix, sizeof t->prefix, "warehouse/%s/%s", s->ns, t->name);
    snprintf(t->base, sizeof t->base, "%s", t->name);
    t->version = 1;
    t->prev[0] = 0;
    return st;
}

struct row_ctx;
static ls_status add_row(struct row_ctx *c, const ls_raw_record_t *r);

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

static int on_record(void *arg, const ls_record_view_t *rec)
{
    row_ctx_t *c = arg;
    int64_t offset = c->base_offset + rec->offset_delta;
    if (offset <= c->above || offset > c->last_offset) return 0;
    /* every header, however many (a raw row is the record: cold reads
     * rebuild batches from it, lake/cold_batches.h) */
    ls_raw_header_t stack_hs[MAX_HEADERS];
    ls_raw_header_t *hs = rec->header_count <= MAX_HEADERS
                              ? stack_hs
                              : ls_malloc((size_t)rec->header_count * sizeof *hs);
    size_t nh = 0;
    const uint8_t *hp = rec->headers, *he = rec->headers + rec->headers_len;
    for (int32_t i = 0; i < rec->header_count; i++) {
        ls_record_header_t h;
        if (ls_record_header_next(&hp, he, &h) != 0) break;
        hs[nh++] = (ls_raw_header_t){h.key, (size_t)h.key_len, h.value, h.value_len};
    }
    ls_raw_record_t r = {.partition = c->partition,
                         .offset = offset,
                         .timestamp_ms = rec->timestamp,
                         .key = rec->key,
                         .key_len = rec->key_len,
                         .value = rec->value,
                         .value_len = rec->value_len,
                         .headers = hs,
                         .nheaders = nh};
    c->st = add_row(c, &r);
    if (hs != stack_hs) ls_free(hs);
    c->rows++;
    return c->st != LS_OK;
}

/* The policy's partition spec over the Kafka columns and, in a typed
 * table (typed_schema: its Iceberg schema; NULL for a raw one), value and
 * key fields, each checked against its transform as the Iceberg spec's
 * "Partition Transforms" table says; why names what is refused. */
static ls_status policy_spec(const ls_policy_t *p, const char *typed_schema, int last_column_id,
                             ls_ice_spec_t *spec, char *why, size_t whylen)
{
    memset(spec, 0, sizeof *spec);
    ls_status st = LS_OK;
    ls_typed_shape_t *shape = NULL;
    static const ls_ice_transform tr[] = {
        [LS_POLICY_IDENTITY] = LS_ICE_IDENTITY, [LS_POLICY_HOUR] = LS_ICE_HOUR,
        [LS_POLICY_DAY] = LS_ICE_DAY,           [LS_POLICY_MONTH] = LS_ICE_MONTH,
        [LS_POLICY_YEAR] = LS_ICE_YEAR,         [LS_POLICY_BUCKET] = LS_ICE_BUCKET,
        [LS_POLICY_TRUNCATE] = LS_ICE_TRUNCATE, [LS_POLICY_VOID] = LS_ICE_VOID};
    for (int i = 0; i < p->npart && st == LS_OK; i++) {
        const ls_policy_part_t *f = &p->part[i];
        if (f->column == LS_POLICY_COL_FIELD) {
            if (!typed_schema) {
                snprintf(why, whylen,
                         "%s(%s): a value or key field, but the table is raw (value.format and "
                         "key.format raw); only partition, offset and timestamp can be used",
                         ls_ice_transform_name(tr[f->transform]), f->field);
                st = LS_EINVAL;
                break;
            }
            if (!shape) shape = ls_typed_shape_parse(typed_schema, last_column_id, why, whylen);
            if (!shape) {
                st = LS_EINVAL;
                break;
            }
            int id;
            char type[48];
            if (ls_typed_column_find(shape, f->field, &id, type, sizeof type, why, whylen) != 0) {
                st = LS_EINVAL;
                break;
            }
            st = ls_ice_spec_add_typed(spec, id, f->field, type, tr[f->transform], f->param, why,
                                       whylen);
        } else if (f->column == LS_POLICY_COL_PARTITION) {
            st = ls_ice_spec_add_param(spec, LS_RAW_FID_PARTITION, "partition", LS_ICE_INT,
                                       tr[f->transform], f->param);
        } else if (f->column == LS_POLICY_COL_OFFSET) {
            st = ls_ice_spec_add_param(spec, LS_RAW_FID_OFFSET, "offset", LS_ICE_LONG,
                                       tr[f->transform], f->param);
        } else {
            st = ls_ice_spec_add_param(spec, LS_RAW_FID_TIMESTAMP, "timestamp", LS_ICE_TIMESTAMPTZ,
                                       tr[f->transform], f->param);
        }
        if (st != LS_OK && f->column != LS_POLICY_COL_FIELD)
            snprintf(why, whylen, "unsupported partition field %d", i + 1);
    }
    ls_typed_shape_free(shape);
    return st;
}

ls_status ls_mat_partition_check(const ls_policy_t *p, const char *typed_schema, int last_column_id,
                                 char *why, size_t whylen)
{
    ls_ice_spec_t spec;
    return policy_spec(p, typed_schema, last_column_id, &spec, why, whylen);
}

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

static ls_status open_table(ls_meta_t *meta, ls_objstore_t *os, const char *warehouse_uri,
                            const ls_table_target_t *tt, const table_shape_t *shape,
                            ls_ice_table_t **t, char *err, int errlen)
{
    bool create = shape != NULL;
    const ls_stream_t *s = tt->stream;
    char location[1200];
    ls_status st = ls_tcat_open(meta, os, s->ns, tt->name, tt->prefix, t, err, (size_t)errlen);
    if (st == LS_OK && ls_ice_table_publish(*t) != LS_OK) /* a commit left unpublished */
        LS_WARN_RL("table", "table %s.%s: publishing its current metadata for path readers: %s",
                   s->ns, tt->name, ls_ice_table_error(*t));
    if (st != LS_ENOTFOUND || !create) return st;
    snprintf(location, sizeof location, "%s/%s", warehouse_uri, tt->prefix);
    ls_ice_spec_t spec;
    char why[400];
    st = policy_spec(tt->policy,
                     shape->schema_id || shape->key_schema_id ? shape->schema_json : NULL,
                     shape->last_column_id, &spec, why, sizeof why);
    if (st != LS_OK) {
        snprintf(err, (size_t)errlen, "%s '%s' cannot be applied to table %s.%s: %s",
                 ls_policy_key(LS_POLICY_PARTITION), tt->policy->value[LS_POLICY_PARTITION], s->ns,
                 tt->name, why);
        LS_WARN("table", "%s", err);
        return st;
    }
    /* old metadata files are deleted after each commit (Iceberg's properties,
     * so every engine's writer would do the same; ls_ice_table_append) */
    const char *props[] = {"lakestream.stream",
                           s->name,
                           "lakestream.namespace",
                           s->ns,
                           "write.metadata.delete-after-commit.enabled",
                           "true",
                           "write.metadata.previous-versions-max",
                           "10",
                           NULL,
                           NULL,
                           NULL,
                           NULL,
                           NULL,
                           NULL,
                           NULL,
                           NULL,
                           NULL,
                           NULL,
                           NULL,
                           NULL,
                           NULL,
                           NULL,
                           NULL,
                           NULL,
                           NULL};
    size_t np = 8;
    if (shape->schema_id) props[np++] = TYPED_SCHEMA_ID_KEY, props[np++] = shape->schema_id;
    if (shape->key_schema_id) props[np++] = KEY_SCHEMA_ID_KEY, props[np++] = shape->key_schema_id;
    for (size_t i = 0; shape->extra && shape->extra[i] && np + 2 < sizeof props / sizeof *props;
         i += 2)
        props[np++] = shape->extra[i], props[np++] = shape->extra[i + 1];
    st = ls_tcat_create(meta, os, s->ns, tt->name, tt->prefix, location, shape->schema_json,
                        shape->last_column_id, &spec, props, t, err, (size_t)errlen);
    if (st == LS_EEXISTS) /* created concurrently: load it */
        st = ls_tcat_open(meta, os, s->ns, tt->name, tt->prefix, t, err, (size_t)errlen);
    else if (st == LS_OK)
        LS_INFO("table", "created Iceberg table %s.%s for stream %s/%s at %s", s->ns, tt->name,
                s->ns, s->name, location);
    return st;
}

/* A side table of a stream's table (file comment): <name>__changelog or
 * <name>__dlq, with its own target and policy (append, raw). */
typedef struct side {
    ls_table_target_t tt;
    ls_policy_t policy;
    ls_mat_batch_t *b;
} side_t;

#define CHANGELOG_SUFFIX "__changelog"
#define DLQ_SUFFIX "__dlq"
#define DLQ_ERROR_HEADER "lakestream.dlq.error"

static ls_status side_target(const ls_table_target_t *tt, const char *suffix, side_t *sd, char *err,
                             int errlen)
{
    sd->policy = *tt->policy;
    sd->policy.upsert = sd->policy.value_typed = sd->policy.key_typed = sd->policy.changelog =
        sd->policy.value_latest = sd->policy.key_latest = false;
    sd->policy.error_skip = sd->policy.error_dlq = sd->policy.evolution_dlq = false;
    sd->policy.value[LS_POLICY_EVOLUTION] = "fail";
    sd->policy.value[LS_POLICY_WRITE_MODE] = "append";
    sd->policy.value[LS_POLICY_VALUE_FORMAT] = "raw";
    sd->policy.value[LS_POLICY_KEY_FORMAT] = "raw";
    sd->policy.value[LS_POLICY_ERROR_HANDLING] = "fail";
    int np = 0; /* a side table is raw: it keeps the Kafka-column partitions only */
    for (int i = 0; i < sd->policy.npart; i++)
        if (sd->policy.part[i].column != LS_POLICY_COL_FIELD)
            sd->policy.part[np++] = sd->policy.part[i];
    sd->policy.npart = np;
    sd->tt = *tt;
    sd->tt.policy = &sd->policy;
    sd->tt.registry = NULL;
    /* one side table for every version of the table (named after its base) */
    int n = snprintf(sd->tt.name, sizeof sd->tt.name, "%s%s", tt->base, suffix);
    if (n < 0 || n > 249) {
        snprintf(err, (size_t)errlen, "table %s: its side table %s%s is longer than 249 characters",
                 tt->base, tt->base, suffix);
        return LS_EINVAL;
    }
    snprintf(sd->tt.prefix, sizeof sd->tt.prefix, "warehouse/%s/%s", tt->stream->ns, sd->tt.name);
    snprintf(sd->tt.base, sizeof sd->tt.base, "%s", sd->tt.name);
    sd->tt.version = 1;
    sd->tt.prev[0] = 0;
    return LS_OK;
}

static void last_offset_key(char *out, size_t cap, int64_t log_id)
{
    snprintf(out, cap, "lakestream.log.%016llx.last-offset", (unsigned long long)log_id);
}

/* The last offset of log_id that tt's own table holds (-1: none). */
static ls_status table_last_offset(ls_meta_t *meta, ls_objstore_t *os, const ls_table_target_t *tt,
                                   int64_t log_id, int64_t *out, char *err, int errlen)
{
    *out = -1;
    ls_ice_table_t *t = NULL;
    ls_status st = open_table(meta, os, NULL, tt, NULL, &t, err, errlen);
    if (st == LS_ENOTFOUND) return LS_OK;
    if (st != LS_OK) return st;
    char key[80];
    last_offset_key(key, sizeof key, log_id);
    const char *done = ls_ice_table_summary(t, key);
    if (done) *out = strtoll(done, NULL, 10);
    ls_ice_table_free(t);
    return LS_OK;
}

/* ------------------------------------------------------- table versions */

/* Whether tt's table may have versions: a typed one (a raw table has no
 * schema to switch on). The chain is followed whatever the policy's
 * evolution says now: a version once continued is frozen for good. */
static bool versioned(const ls_table_target_t *tt)
{
    return tt->policy->value_typed || tt->policy->key_typed;
}

static void target_rename(ls_table_target_t *tt, const char *name)
{
    snprintf(tt->name, sizeof tt->name, "%s", name);
    snprintf(tt->prefix, sizeof tt->prefix, "warehouse/%s/%s", tt->stream->ns, tt->name);
}

/* The version of tt's table that takes rows now, into *out (a copy of tt):
 * the continued-as chain from the base table followed to its end (design
 * note). *cur: that version opened, NULL when it is not created yet (cur
 * may be NULL). */
static ls_status resolve_version(ls_meta_t *meta, ls_objstore_t *os, const ls_table_target_t *tt,
                                 ls_table_target_t *out, ls_ice_table_t **cur, char *err,
                                 int errlen)
{
    *out = *tt;
    if (cur) *cur = NULL;
    for (int i = 0;; i++) {
        ls_ice_table_t *t = NULL;
        ls_status st = open_table(meta, os, NULL, out, NULL, &t, err, errlen);
        if (st == LS_ENOTFOUND) {
            err[0] = 0;
            return LS_OK;
        }
        if (st != LS_OK) return st;
        const char *next = versioned(tt) ? ls_ice_table_summary(t, CONT_AS_KEY) : NULL;
        if (!next) {
            if (cur)
                *cur = t;
            else
                ls_ice_table_free(t);
            return LS_OK;
        }
        if (i >= MAX_VERSIONS || strlen(next) >= sizeof out->name ||
            !ls_tcat_name_ok(next, strlen(next))) {
            snprintf(err, (size_t)errlen,
                     "table %s.%s: %s is '%.100s', not a table name, or its versions go on past "
                     "%d",
                     tt->stream->ns, out->name, CONT_AS_KEY, next, MAX_VERSIONS);
            ls_ice_table_free(t);
            return LS_ECORRUPT;
        }
        snprintf(out->prev, sizeof out->prev, "%s", out->name);
        target_rename(out, next);
        out->version++;
        ls_ice_table_free(t);
    }
}

/* The versions before vt's (cur: vt's table, NULL when not created yet),
 * nearest first, opened: the offsets a version does not record yet are
 * those of the versions before it (they are frozen). */
typedef struct preds {
    ls_ice_table_t **v;
    size_t n;
} preds_t;

static void preds_free(preds_t *p)
{
    for (size_t i = 0; i < p->n; i++)
        ls_ice_table_free(p->v[i]);
    ls_free(p->v);
    memset(p, 0, sizeof *p);
}

static ls_status load_preds(ls_meta_t *meta, ls_objstore_t *os, const ls_table_target_t *vt,
                            ls_ice_table_t *cur, preds_t *p, char *err, int errlen)
{
    memset(p, 0, sizeof *p);
    if (!versioned(vt)) return LS_OK;
    const char *prev = cur ? ls_ice_table_summary(cur, CONTINUES_KEY) : vt->prev;
    ls_table_target_t t = *vt;
    while (prev && prev[0]) {
        if (p->n >= MAX_VERSIONS || strlen(prev) >= sizeof t.name) {
            snprintf(err, (size_t)errlen, "table %s.%s: its versions go on past %d", vt->stream->ns,
                     vt->name, MAX_VERSIONS);
            preds_free(p);
            return LS_ECORRUPT;
        }
        char was[sizeof t.name];
        snprintf(was, sizeof was, "%s", t.name);
        target_rename(&t, prev);
        ls_ice_table_t *pt = NULL;
        ls_status st = open_table(meta, os, NULL, &t, NULL, &pt, err, errlen);
        if (st == LS_ENOTFOUND) {
            snprintf(err, (size_t)errlen,
                     "table %s.%s continues table %s, which does not exist: the offsets it "
                     "holds are unknown",
                     vt->stream->ns, was, t.name);
            st = LS_ECORRUPT;
        }
        if (st != LS_OK) {
            preds_free(p);
            return st;
        }
        p->v = ls_realloc(p->v, (p->n + 1) * sizeof *p->v);
        p->v[p->n++] = pt;
        prev = ls_ice_table_summary(pt, CONTINUES_KEY);
    }
    return LS_OK;
}

/* The last offset of log_id the version cur (NULL: not created) holds,
 * counting what the versions before it hold; -1: none. */
static int64_t version_done(const preds_t *p, const ls_ice_table_t *cur, int64_t log_id)
{
    char key[80];
    last_offset_key(key, sizeof key, log_id);
    const char *v = cur ? ls_ice_table_summary(cur, key) : NULL;
    for (size_t i = 0; !v && i < p->n; i++)
        v = ls_ice_table_summary(p->v[i], key);
    return v ? strtoll(v, NULL, 10) : -1;
}

/* table_last_offset for the table's current version. */
static ls_status version_last_offset(ls_meta_t *meta, ls_objstore_t *os,
                                     const ls_table_target_t *tt, int64_t log_id, int64_t *out,
                                     char *err, int errlen)
{
    *out = -1;
    ls_table_target_t vt;
    ls_ice_table_t *cur = NULL;
    preds_t p = {0};
    ls_status st = resolve_version(meta, os, tt, &vt, &cur, err, errlen);
    if (st == LS_OK) st = load_preds(meta, os, &vt, cur, &p, err, errlen);
    if (st == LS_OK) *out = version_done(&p, cur, log_id);
    preds_free(&p);
    ls_ice_table_free(cur);
    return st;
}

ls_status ls_materialize_last_offset(ls_meta_t *meta, ls_objstore_t *os,
                                     const ls_table_target_t *tt, int64_t log_id, int64_t *out,
                                     char *err, int errlen)
{
    ls_status st = version_last_offset(meta, os, tt, log_id, out, err, errlen);
    if (st != LS_OK || !tt->policy->changelog) return st;
    /* a range is in only once the changelog table holds it too */
    side_t cl;
    int64_t cd;
    st = side_target(tt, CHANGELOG_SUFFIX, &cl, err, errlen);
    if (st == LS_OK) st = table_last_offset(meta, os, &cl.tt, log_id, &cd, err, errlen);
    if (st == LS_OK && cd < *out) *out = cd;
    return st;
}

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

/* The latest record of each key of an upsert batch (file comment). */
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
 * the key fields), found at commit from up_map's records (file comment). */
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

static up_rec_t **up_slot(up_map_t *m, uint64_t h, const uint8_t *key, size_t len)
{
    size_t j = (size_t)h & (m->cap - 1);
    for (;; j = (j + 1) & (m->cap - 1)) {
        up_rec_t *e = m->slots[j];
        if (!e || (e->hash == h && (size_t)e->r.key_len == len && !memcmp(e->r.key, key, len)))
            return &m->slots[j];
    }
}

static void up_free(up_rec_t *e)
{
    if (!e) return;
    ls_free(e->own);
    ls_free(e->hs);
    ls_free(e);
}

/* Keeps a copy of r (which has a key), of log_id's range ending at
 * last_offset, as its key's latest record. */
static void up_put(up_map_t *m, const ls_raw_record_t *r, int64_t log_id, int64_t last_offset)
{
    if ((m->n + 1) * 2 > m->cap) {
        up_map_t g = {.cap = m->cap ? m->cap * 2 : 1024};
        g.slots = LS_NEWN(up_rec_t *, g.cap);
        for (size_t i = 0; i < m->cap; i++)
            if (m->slots[i])
                *up_slot(&g, m->slots[i]->hash, m->slots[i]->r.key,
                         (size_t)m->slots[i]->r.key_len) = m->slots[i];
        g.n = m->n;
        g.seq = m->seq;
        ls_free(m->slots);
        *m = g;
    }
    size_t size = (size_t)r->key_len + (r->value_len > 0 ? (size_t)r->value_len : 0);
    for (size_t i = 0; i < r->nheaders; i++)
        size += r->headers[i].key_len +
                (r->headers[i].value_len > 0 ? (size_t)r->headers[i].value_len : 0);
    up_rec_t *e = LS_NEW(up_rec_t);
    e->seq = m->seq++;
    e->log_id = log_id;
    e->last_offset = last_offset;
    e->own = ls_malloc(size ? size : 1);
    e->hs = r->nheaders ? LS_NEWN(ls_raw_header_t, r->nheaders) : NULL;
    e->r = *r;
    e->r.headers = e->hs;
    uint8_t *p = e->own;
    if (r->key_len) memcpy(p, r->key, (size_t)r->key_len);
    e->r.key = p;
    p += r->key_len;
    if (r->value_len > 0) {
        memcpy(p, r->value, (size_t)r->value_len);
        e->r.value = p;
        p += r->value_len;
    }
    for (size_t i = 0; i < r->nheaders; i++) {
        const ls_raw_header_t *h = &r->headers[i];
        if (h->key_len) memcpy(p, h->key, h->key_len);
        e->hs[i] = (ls_raw_header_t){(const char *)p, h->key_len, NULL, h->value_len};
        p += h->key_len;
        if (h->value_len > 0) {
            memcpy(p, h->value, (size_t)h->value_len);
            e->hs[i].value = p;
            p += h->value_len;
        } else if (h->value_len == 0) {
            e->hs[i].value = p; /* empty, not null */
        }
    }
    e->hash = ls_hash_fast(r->key, (size_t)r->key_len);
    up_rec_t **slot = up_slot(m, e->hash, r->key, (size_t)r->key_len);
    if (*slot)
        up_free(*slot);
    else
        m->n++;
    *slot = e;
}

/* ls_file_drop_fn: rows of keys this batch writes go. */
static bool up_has(void *arg, const uint8_t *key, size_t len)
{
    up_map_t *m = arg;
    return m->cap && *up_slot(m, ls_hash_fast(key, len), key, len) != NULL;
}

static id_ent_t *id_slot(id_map_t *m, uint64_t h, const uint8_t *id, size_t len)
{
    size_t j = (size_t)h & (m->cap - 1);
    for (;; j = (j + 1) & (m->cap - 1)) {
        id_ent_t *e = &m->slots[j];
        if (!e->id || (e->hash == h && e->len == len && !memcmp(e->id, id, len))) return e;
    }
}

/* rec (NULL: a tombstone to apply) is the latest of identity id so far. */
static void id_put(id_map_t *m, const uint8_t *id, size_t len, const up_rec_t *rec)
{
    if ((m->n + 1) * 2 > m->cap) {
        id_map_t g = {.cap = m->cap ? m->cap * 2 : 1024};
        g.slots = LS_NEWN(id_ent_t, g.cap);
        for (size_t i = 0; i < m->cap; i++)
            if (m->slots[i].id)
                *id_slot(&g, m->slots[i].hash, m->slots[i].id, m->slots[i].len) = m->slots[i];
        g.n = m->n;
        ls_free(m->slots);
        *m = g;
    }
    uint64_t h = ls_hash_fast(id, len);
    id_ent_t *e = id_slot(m, h, id, len);
    if (!e->id) {
        *e = (id_ent_t){h, ls_malloc(len ? len : 1), len, NULL};
        if (len) memcpy(e->id, id, len);
        m->n++;
    }
    e->rec = rec;
}

/* ls_file_drop_fn: rows of identities this batch writes or deletes go. */
static bool id_has(void *arg, const uint8_t *id, size_t len)
{
    id_map_t *m = arg;
    return m->cap && id_slot(m, ls_hash_fast(id, len), id, len)->id != NULL;
}

static void id_clear(id_map_t *m)
{
    for (size_t i = 0; i < m->cap; i++)
        ls_free(m->slots[i].id);
    ls_free(m->slots);
    memset(m, 0, sizeof *m);
}

static void up_clear(up_map_t *m)
{
    for (size_t i = 0; i < m->cap; i++)
        up_free(m->slots[i]);
    ls_free(m->slots);
    memset(m, 0, sizeof *m);
}

static mat_log_t *batch_log(ls_mat_batch_t *b, int64_t log_id)
{
    for (size_t i = 0; i < b->nlogs; i++)
        if (b->logs[i].log_id == log_id) return &b->logs[i];
    if (b->nlogs == b->caplogs) {
        b->caplogs = b->caplogs ? b->caplogs * 2 : 16;
        b->logs = ls_realloc(b->logs, b->caplogs * sizeof *b->logs);
    }
    mat_log_t *l = &b->logs[b->nlogs++];
    *l = (mat_log_t){.log_id = log_id, .done = version_done(&b->preds, b->t, log_id), .last = -1};
    return l;
}

/* Opens the data files of b's table over the Parquet fields of its shape. */
static ls_status open_files(ls_mat_batch_t *b, char *err, int errlen)
{
    size_t n;
    const ls_pq_field_t *f =
        b->shape ? ls_typed_parquet_fields(b->shape, &n) : ls_raw_parquet_fields(&n);
    char ferr[256];
    b->files = ls_data_files_new(b->t, f, n, &b->opts, (size_t)b->tt->policy->target_file_bytes,
                                 ferr, sizeof ferr);
    if (!b->files) {
        snprintf(err, (size_t)errlen, "opening data files: %s", ferr);
        return LS_EIO;
    }
    ls_ice_table_set_snapshot_retention(b->t, b->tt->policy->snapshot_retention_ms,
                                        (int)b->tt->policy->snapshot_retention_min);
    ls_ice_table_set_file_grace(b->t, b->tt->policy->file_delete_delay_ms);
    return LS_OK;
}

/* The Avro schema of value schema id, from the registry. LS_ECORRUPT (a
 * permanent reason in err) when it is not there or not Avro; other
 * statuses are the registry's store failing. */
static ls_status value_schema(ls_mat_batch_t *b, int32_t id, ls_sr_schema_t **out, char *err,
                              size_t errlen)
{
    if (!b->tt->registry) {
        snprintf(err, errlen, "no schema registry is available to this broker");
        return LS_EINVAL;
    }
    ls_sr_err_t e;
    ls_sr_code code = ls_registry_schema(b->tt->registry, id, out, &e);
    if (code != LS_SR_OK) {
        snprintf(err, errlen, "schema id %d: %.400s", (int)id, e.message);
        return code == LS_SR_SCHEMA_NOT_FOUND ? LS_ECORRUPT : LS_EAGAIN;
    }
    if ((*out)->type == LS_SR_JSON && !(*out)->view) {
        snprintf(err, errlen, "schema id %d (JSON) is not mapped to columns: %.400s", (int)id,
                 (*out)->view_why);
        ls_sr_schema_release(*out);
        *out = NULL;
        return LS_ECORRUPT;
    }
    return LS_OK;
}

/* The Avro schema a schema's datums follow: an Avro schema's root, a JSON
 * Schema's Avro view, or the view pv of a Protobuf message
 * (registry/avro_view.h). */
static const ls_avro_node_t *schema_root(const ls_sr_schema_t *sc, const ls_avro_view_t *pv)
{
    return pv                       ? ls_avro_view_root(pv)
           : sc->type == LS_SR_AVRO ? ls_avro_root(sc->avro)
                                    : ls_avro_view_root(sc->view);
}

/* The Avro datum of d's payload of schema sc: the payload itself (Avro), or
 * the JSON instance (the Protobuf message of view pv) transcoded into
 * *tmp. -1 with the reason in why. */
static int payload_datum(const ls_sr_schema_t *sc, const ls_avro_view_t *pv, ls_typed_datum_t *d,
                         ls_buf_t *tmp, char *why, size_t whylen)
{
    if (sc->type == LS_SR_AVRO) return 0;
    if (ls_avro_view_encode(pv ? pv : sc->view, d->datum, d->len, tmp, why, whylen) != 0) return -1;
    d->datum = tmp->data;
    d->len = tmp->len;
    return 0;
}

/* The schema ids of a typed table's property (ascending, comma separated)
 * into ids[0..*n). */
static void parse_ids(int32_t **ids, size_t *n, const char *list)
{
    for (const char *p = list; p && *p;) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p) break;
        *ids = ls_realloc(*ids, (*n + 1) * sizeof **ids);
        (*ids)[(*n)++] = (int32_t)v;
        p = *end == ',' ? end + 1 : end;
    }
}

/* id into the ascending ids[0..*n) (*changed when it was not there). */
static void note_id(int32_t **ids, size_t *n, bool *changed, int32_t id)
{
    size_t i = 0;
    while (i < *n && (*ids)[i] < id)
        i++;
    if (i < *n && (*ids)[i] == id) return;
    *ids = ls_realloc(*ids, (*n + 1) * sizeof **ids);
    memmove(*ids + i + 1, *ids + i, (*n - i) * sizeof **ids);
    (*ids)[i] = id;
    (*n)++;
    *changed = true;
}

/* The property text of ids[0..n) (ls_free it). */
static char *ids_text(const int32_t *ids, size_t n)
{
    ls_buf_t ib;
    ls_buf_init(&ib);
    for (size_t i = 0; i < n; i++)
        ls_buf_printf(&ib, "%s%d", i ? "," : "", (int)ids[i]);
    ls_buf_append_u8(&ib, 0);
    return (char *)ls_buf_steal(&ib, NULL);
}

static void clear_readers(ls_mat_batch_t *b)
{
    for (size_t i = 0; i < b->nreaders; i++) {
        ls_sr_schema_release(b->readers[i].schema);
        ls_typed_reader_free(b->readers[i].rd);
        ls_free(b->readers[i].why);
    }
    ls_free(b->readers);
    b->readers = NULL;
    b->nreaders = 0;
}

/* The table's primary key (its identifier fields) must be the policy's:
 * it is fixed when the table is created (file comment). */
static ls_status pk_check(ls_mat_batch_t *b, char *err, size_t errlen)
{
    const ls_policy_t *p = b->tt->policy;
    char names[LS_POLICY_MAX_PK][LS_POLICY_MAX_PK_NAME];
    ls_policy_primary_key(p, names);
    size_t n = ls_typed_pk_count(b->shape);
    bool same = n == (size_t)p->npk;
    for (size_t i = 0; i < n && same; i++)
        same = !strcmp(ls_typed_pk_name(b->shape, i), names[i]);
    if (same) return LS_OK;
    char has[400] = "";
    size_t k = 0;
    for (size_t i = 0; i < n && k < sizeof has; i++)
        k += (size_t)snprintf(has + k, sizeof has - k, "%s%s", i ? "," : "",
                              ls_typed_pk_name(b->shape, i));
    snprintf(err, errlen,
             "table %s has %s%s%s, and %s is '%s': a table's primary key is set when it is "
             "created (a new table name starts a new one)",
             b->tt->name, n ? "the primary key " : "no primary key", has, "",
             ls_policy_key(LS_POLICY_PRIMARY_KEY), p->value[LS_POLICY_PRIMARY_KEY]);
    return LS_EINVAL;
}

/* The spec of table t as text for people: "country: identity,
 * customer.id_bucket: bucket[8]" (Iceberg's field names and transforms), or
 * "unpartitioned". */
static void spec_text(const ls_ice_spec_t *s, char *out, size_t cap)
{
    size_t k = 0;
    out[0] = 0;
    if (!s->nfields) snprintf(out, cap, "unpartitioned");
    for (int i = 0; i < s->nfields && k < cap; i++) {
        const ls_ice_part_field_t *f = &s->fields[i];
        if (f->transform == LS_ICE_BUCKET || f->transform == LS_ICE_TRUNCATE)
            k += (size_t)snprintf(out + k, cap - k, "%s%s: %s[%d]", i ? ", " : "", f->name,
                                  ls_ice_transform_name(f->transform), f->param);
        else
            k += (size_t)snprintf(out + k, cap - k, "%s%s: %s", i ? ", " : "", f->name,
                                  ls_ice_transform_name(f->transform));
    }
}

/* Whether the policy's partition spec, resolved against table t's current
 * schema (typed: its columns; else the Kafka columns), is the spec t has:
 * the same source field ids, transforms and parameters, in order. A table
 * keeps the spec it was created with — Iceberg's partition spec evolution
 * (a second spec, manifests per spec) is not built — so a policy that asks
 * for another one holds the table back with the reason (never applied to a
 * new table only while the old one goes on under the old spec unnoticed).
 * LS_OK or LS_EINVAL with err naming the key, both specs and the ways out. */
static ls_status spec_check(const ls_table_target_t *tt, ls_ice_table_t *t, bool typed, char *err,
                            size_t errlen)
{
    const ls_ice_spec_t *have = ls_ice_table_spec(t);
    ls_ice_spec_t want;
    char why[400] = "";
    int last = 0;
    char *schema = typed ? ls_ice_table_schema(t, &last) : NULL;
    ls_status st = policy_spec(tt->policy, schema, last, &want, why, sizeof why);
    ls_free(schema);
    bool same = st == LS_OK && want.nfields == have->nfields;
    for (int i = 0; same && i < want.nfields; i++) {
        const ls_ice_part_field_t *x = &want.fields[i], *y = &have->fields[i];
        same = x->source_id == y->source_id && x->transform == y->transform && x->param == y->param;
    }
    if (same) return LS_OK;
    char has[400];
    spec_text(have, has, sizeof has);
    snprintf(err, errlen,
             "%s '%s' is not the partition spec of table %s.%s (%s)%s%s: a table keeps the spec "
             "it was created with (changing it would need Iceberg partition spec evolution, "
             "which is not built); set the spec back, or set %s to a new table name to start a "
             "table with the new spec",
             ls_policy_key(LS_POLICY_PARTITION), tt->policy->value[LS_POLICY_PARTITION],
             tt->stream->ns, tt->name, has, st == LS_OK ? "" : "; and ", why,
             ls_policy_key(LS_POLICY_NAME));
    return LS_EINVAL;
}

ls_status ls_mat_spec_check(ls_meta_t *meta, ls_objstore_t *os, const ls_table_target_t *tt,
                            char *err, int errlen)
{
    ls_table_target_t vt;
    ls_ice_table_t *cur = NULL;
    ls_status st = resolve_version(meta, os, tt, &vt, &cur, err, errlen);
    if (st != LS_OK || !cur) return st; /* no table yet: created with the policy's spec */
    vt.policy = tt->policy;
    st =
        spec_check(&vt, cur, tt->policy->value_typed || tt->policy->key_typed, err, (size_t)errlen);
    ls_ice_table_free(cur);
    return st;
}

static ls_status side_begin(ls_mat_batch_t *b, const char *suffix, side_t **out, char *err,
                            int errlen)
{
    side_t *sd = *out = LS_NEW(side_t);
    ls_status st = side_target(b->tt, suffix, sd, err, errlen);
    if (st == LS_OK)
        st = ls_mat_begin(b->meta, b->os, b->warehouse_uri, &sd->tt, &sd->b, err, errlen);
    return st;
}

/* Creates b's version (not there yet) from what the version before it
 * recorded when it was continued: the Iceberg schema, the schema ids that
 * started it, and why (file comment). */
static ls_status create_version(ls_mat_batch_t *b, char *err, int errlen)
{
    const ls_ice_table_t *pt = b->preds.v[0];
    const char *schema = ls_ice_table_summary(pt, CONT_SCHEMA_KEY);
    const char *last = ls_ice_table_summary(pt, CONT_LAST_COLUMN_KEY);
    const char *vid = ls_ice_table_summary(pt, CONT_VID_KEY);
    const char *kid = ls_ice_table_summary(pt, CONT_KID_KEY);
    const char *why = ls_ice_table_summary(pt, CONT_REASON_KEY);
    if (!schema || !last) {
        snprintf(err, (size_t)errlen,
                 "table %s.%s continues as %s but records no schema for it (%s)", b->tt->stream->ns,
                 b->vt.prev, b->vt.name, CONT_SCHEMA_KEY);
        return LS_ECORRUPT;
    }
    char ver[16];
    snprintf(ver, sizeof ver, "%d", b->vt.version);
    const char *extra[13] = {VERSION_KEY,        ver,           CONTINUES_KEY, b->vt.prev,
                             VERSION_REASON_KEY, why ? why : ""};
    size_t n = 6;
    if (vid) extra[n++] = VERSION_VID_KEY, extra[n++] = vid;
    if (kid) extra[n++] = VERSION_KID_KEY, extra[n++] = kid;
    table_shape_t ts = {schema, atoi(last), vid, kid, extra};
    ls_status st = open_table(b->meta, b->os, b->warehouse_uri, b->tt, &ts, &b->t, err, errlen);
    if (st == LS_OK)
        LS_INFO("table", "table %s.%s is version %d of table %s, continuing %s: %s",
                b->tt->stream->ns, b->vt.name, b->vt.version, b->vt.base, b->vt.prev,
                why ? why : "?");
    return st;
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
    b->vt = *tt;
    b->tt = &b->vt;
    b->sw.vid = b->sw.kid = -1;
    b->evolved_to = b->key_evolved_to = -1;
    b->meta = meta;
    b->os = os;
    b->warehouse_uri = warehouse_uri;
    ls_pq_opts_init(&b->opts);
    b->opts.codec = (ls_pq_codec)c;
    bool typed = tt->policy->value_typed || tt->policy->key_typed;
    if (!typed) b->opts.row_group_bytes = LS_RAW_ROW_GROUP_BYTES; /* iceberg_raw.h: why */
    table_shape_t raw = {ls_raw_iceberg_schema_json(), LS_RAW_LAST_COLUMN_ID, NULL, NULL, NULL};
    ls_status st =
        tt->policy->changelog ? side_begin(b, CHANGELOG_SUFFIX, &b->cl, err, errlen) : LS_OK;
    if (st == LS_OK && (tt->policy->error_dlq || (typed && tt->policy->evolution_dlq)))
        st = side_begin(b, DLQ_SUFFIX, &b->dlq, err, errlen);
    if (st != LS_OK) {
        ls_mat_free(b);
        return st;
    }
    /* the version that takes rows now (the table itself unless it was
     * continued), and the offsets of those before it */
    ls_ice_table_t *cur = NULL;
    st = resolve_version(meta, os, tt, &b->vt, &cur, err, errlen);
    if (st == LS_OK) st = load_preds(meta, os, &b->vt, cur, &b->preds, err, errlen);
    if (st != LS_OK) {
        ls_ice_table_free(cur);
        ls_mat_free(b);
        return st;
    }
    tt = b->tt;
    /* a typed table is created by its first record (its schema is the
     * record's); a new version of one by what the version before recorded */
    if (cur) {
        b->t = cur;
    } else if (typed && b->preds.n) {
        st = create_version(b, err, errlen);
    } else {
        st = open_table(meta, os, warehouse_uri, tt, typed ? NULL : &raw, &b->t, err, errlen);
        if (typed && st == LS_ENOTFOUND) {
            *out = b;
            return LS_OK;
        }
    }
    if (st == LS_OK && typed) {
        const char *id = ls_ice_table_summary(b->t, TYPED_SCHEMA_ID_KEY);
        if (!id && tt->policy->value_typed) {
            snprintf(err, (size_t)errlen,
                     "table %s has no %s: it was not created as a typed "
                     "table (a new table name starts a new one)",
                     tt->name, TYPED_SCHEMA_ID_KEY);
            st = LS_EINVAL;
        } else {
            int last;
            char *schema = ls_ice_table_schema(b->t, &last), why[400] = "no current schema";
            b->shape = schema ? ls_typed_shape_parse(schema, last, why, sizeof why) : NULL;
            ls_free(schema);
            if (!b->shape) {
                snprintf(err, (size_t)errlen, "table %s: %s", tt->name, why);
                st = LS_EINVAL;
            } else if (ls_typed_raw_value(b->shape) == tt->policy->value_typed) {
                snprintf(err, (size_t)errlen,
                         "table %s was created with %s values, and %s is %s now (a new table "
                         "name starts a new table)",
                         tt->name, tt->policy->value_typed ? "raw" : "typed",
                         ls_policy_key(LS_POLICY_VALUE_FORMAT),
                         tt->policy->value[LS_POLICY_VALUE_FORMAT]);
                st = LS_EINVAL;
            }
            bool json_table = id && !strcmp(id, JSON_SCHEMA_ID);
            if (st == LS_OK && json_table != tt->policy->value_json) {
                snprintf(err, (size_t)errlen,
                         "table %s was created with %s values, and %s is %s now (a new table "
                         "name starts a new table)",
                         tt->name, json_table ? "json" : "schema-registry",
                         ls_policy_key(LS_POLICY_VALUE_FORMAT),
                         tt->policy->value[LS_POLICY_VALUE_FORMAT]);
                st = LS_EINVAL;
            }
            if (st == LS_OK && json_table)
                b->jschema = ls_json_infer_from_iceberg(ls_typed_iceberg_schema_json(b->shape));
            if (st == LS_OK) st = pk_check(b, err, (size_t)errlen);
            if (!json_table) {
                parse_ids(&b->ids, &b->nids, ls_ice_table_summary(b->t, TYPED_SCHEMA_IDS_KEY));
                if (!b->nids && id) /* a table from before the list */
                    parse_ids(&b->ids, &b->nids, id);
            }
            parse_ids(&b->kids, &b->nkids, ls_ice_table_summary(b->t, KEY_SCHEMA_IDS_KEY));
        }
    }
    if (st == LS_OK) st = spec_check(tt, b->t, typed, err, (size_t)errlen);
    if (st == LS_OK) st = open_files(b, err, errlen);
    if (st != LS_OK) {
        ls_mat_free(b);
        return st;
    }
    *out = b;
    return LS_OK;
}

/* value.format=json: drops the view and reader of the inferred columns. */
static void json_free_view(ls_mat_batch_t *b)
{
    ls_typed_reader_free(b->jrd);
    ls_avro_view_free(b->jview);
    ls_jsonschema_free(b->jjs);
    b->jrd = NULL;
    b->jview = NULL;
    b->jjs = NULL;
}

/* Evolves b's table to shape ns (taken) for value schema id: the schema
 * goes into the table object (committed with the batch), the data files
 * written so far are kept for the commit, new ones open over ns. */
static ls_status evolve_table(ls_mat_batch_t *b, ls_typed_shape_t *ns, int32_t id, bool key,
                              char *err, size_t errlen)
{
    int sid;
    ls_status st = ls_ice_table_set_schema(b->t, ls_typed_iceberg_schema_json(ns),
                                           ls_typed_last_column_id(ns), &sid);
    if (st != LS_OK) {
        snprintf(err, errlen, "evolving the table's schema: %s", ls_ice_table_error(b->t));
        ls_typed_shape_free(ns);
        return st;
    }
    b->retired = ls_realloc(b->retired, (b->nretired + 1) * sizeof *b->retired);
    b->retired[b->nretired++] = (retired_t){b->files, b->shape};
    b->files = NULL;
    b->shape = ns;
    if (key)
        b->key_evolved_to = id;
    else
        b->evolved_to = id;
    clear_readers(b); /* they fill the old shape's columns */
    if (id < 0)       /* value.format=json: new inferred columns */
        LS_INFO("table", "table %s.%s: schema evolved to Iceberg schema %d for new JSON properties",
                b->tt->stream->ns, b->tt->name, sid);
    else
        LS_INFO("table", "table %s.%s: schema evolved to Iceberg schema %d for %s schema id %d",
                b->tt->stream->ns, b->tt->name, sid, key ? "key" : "value", (int)id);
    return open_files(b, err, (int)errlen);
}

/* The subject of b's keys (key) or values whose schema root is root, by
 * the policy's subject name strategy (Confluent's rules; a schema that is
 * not a named type is named by its type). */
_Static_assert(LS_POLICY_TOPIC_NAME == (int)LS_SR_TOPIC_NAME &&
                   LS_POLICY_RECORD_NAME == (int)LS_SR_RECORD_NAME &&
                   LS_POLICY_TOPIC_RECORD_NAME == (int)LS_SR_TOPIC_RECORD_NAME,
               "policy strategies follow registry.h's order");

static void subject_of(const ls_mat_batch_t *b, bool key, const ls_avro_node_t *root, char *out,
                       size_t cap)
{
    const ls_policy_t *p = b->tt->policy;
    ls_sr_subject_name((ls_sr_strategy)(key ? p->key_strategy : p->value_strategy),
                       b->tt->stream->name, key, ls_sr_record_name(root), out, cap);
}

/* Whether schema id (root its Avro root) is a version — live or soft-deleted
 * — of the subject the strategy gives (*ok); why names both otherwise. */
static ls_status subject_check(ls_mat_batch_t *b, int32_t id, bool key, const ls_avro_node_t *root,
                               bool *ok, char *why, size_t whylen, char *err, size_t errlen)
{
    char subject[512];
    subject_of(b, key, root, subject, sizeof subject);
    ls_sr_version_t *vs = NULL;
    size_t n = 0;
    ls_sr_err_t e;
    if (ls_registry_id_versions(b->tt->registry, id, true, &vs, &n, &e) != LS_SR_OK) {
        snprintf(err, errlen, "schema id %d: %.400s", (int)id, e.message);
        return LS_EAGAIN;
    }
    *ok = false;
    for (size_t i = 0; i < n && !*ok; i++)
        *ok = !strcmp(vs[i].subject, subject);
    ls_sr_versions_free(vs, n);
    ls_policy_field f = key ? LS_POLICY_KEY_SUBJECT_STRATEGY : LS_POLICY_VALUE_SUBJECT_STRATEGY;
    if (!*ok)
        snprintf(why, whylen, "%s schema id %d is not a version of subject %.250s (%s=%s)",
                 key ? "key" : "value", (int)id, subject, ls_policy_key(f),
                 b->tt->policy->value[f]);
    return LS_OK;
}

/* schema-registry-latest: the id of the latest version of the strategy's
 * subject, read once per batch (so one batch decodes by one version).
 * LS_ECORRUPT (reason in err) when the subject has no live version. */
static ls_status latest_id(ls_mat_batch_t *b, bool key, int32_t *id, char *err, size_t errlen)
{
    int32_t *cached = key ? &b->latest_kid : &b->latest_vid;
    if (*cached > 0) return *id = *cached, LS_OK;
    if (!b->tt->registry) {
        snprintf(err, errlen, "no schema registry is available to this broker");
        return LS_EINVAL;
    }
    char subject[512];
    subject_of(b, key, NULL, subject, sizeof subject);
    ls_sr_version_t v;
    ls_sr_schema_t *sc;
    ls_sr_err_t e;
    ls_sr_code code = ls_registry_latest(b->tt->registry, subject, &v, &sc, &e);
    if (code != LS_SR_OK) {
        ls_policy_field f = key ? LS_POLICY_KEY_FORMAT : LS_POLICY_VALUE_FORMAT;
        snprintf(err, errlen, "subject %.200s has no version to decode by (%s=%s): %.150s", subject,
                 ls_policy_key(f), b->tt->policy->value[f], e.message);
        return code == LS_SR_SUBJECT_NOT_FOUND || code == LS_SR_VERSION_NOT_FOUND ? LS_ECORRUPT
                                                                                  : LS_EAGAIN;
    }
    *id = *cached = v.id;
    ls_free(v.subject);
    ls_sr_schema_release(sc);
    return LS_OK;
}

/* The reader of value schema id for b's current shape (evolving the table
 * when the schema is a compatible change it needs); *rdp NULL with the
 * reason in *why when the schema is incompatible. Other failures as
 * value_schema, or the evolution's. */
static ls_status reader_for(ls_mat_batch_t *b, int32_t id, bool key, const ls_avro_view_t *pv,
                            typed_reader_t **rdp, char *err, size_t errlen)
{
    for (size_t i = 0; i < b->nreaders; i++)
        if (b->readers[i].id == id && b->readers[i].key == key && b->readers[i].pv == pv)
            return *rdp = &b->readers[i], LS_OK;
    ls_sr_schema_t *sc;
    ls_status st = value_schema(b, id, &sc, err, errlen);
    if (st != LS_OK) return st;
    const ls_avro_node_t *root = schema_root(sc, pv);
    char why[512] = "";
    ls_typed_reader_t *rd = NULL;
    bool in_subject = true; /* a -latest id is its subject's by construction */
    if (!(key ? b->tt->policy->key_latest : b->tt->policy->value_latest) &&
        (st = subject_check(b, id, key, root, &in_subject, why, sizeof why, err, errlen)) !=
            LS_OK) {
        ls_sr_schema_release(sc);
        return st;
    }
    st = !in_subject ? LS_EINVAL
         : key       ? ls_typed_key_reader_new(b->shape, root, &rd, why, sizeof why)
                     : ls_typed_reader_new(b->shape, root, &rd, why, sizeof why);
    if (st == LS_ECONFLICT) {
        ls_typed_shape_t *ns;
        st = key ? ls_typed_evolve_key(b->shape, root, &ns, why, sizeof why)
                 : ls_typed_evolve(b->shape, root, &ns, why, sizeof why);
        if (st == LS_OK && (st = evolve_table(b, ns, id, key, err, errlen)) != LS_OK) {
            ls_sr_schema_release(sc);
            return st;
        }
        if (st == LS_OK)
            st = key ? ls_typed_key_reader_new(b->shape, root, &rd, why, sizeof why)
                     : ls_typed_reader_new(b->shape, root, &rd, why, sizeof why);
    }
    b->readers = ls_realloc(b->readers, (b->nreaders + 1) * sizeof *b->readers);
    typed_reader_t *tr = &b->readers[b->nreaders++];
    *tr = (typed_reader_t){id, key, !in_subject, sc, pv, rd, st == LS_OK ? NULL : ls_strdup(why)};
    *rdp = tr;
    return LS_OK;
}

/* The value (key) schema id the table's columns were last made from, in buf. */
static const char *table_schema_id(ls_mat_batch_t *b, bool key, char *buf, size_t cap)
{
    const char *was = ls_ice_table_summary(b->t, key ? KEY_SCHEMA_ID_KEY : TYPED_SCHEMA_ID_KEY);
    int32_t evolved = key ? b->key_evolved_to : b->evolved_to;
    if (evolved >= 0)
        snprintf(buf, cap, "%d", (int)evolved);
    else
        snprintf(buf, cap, "%s", was ? was : "?");
    return buf;
}

/* The table's first record: the table is created with the shape of its
 * value schema vid (value.format typed) and key schema kid (-1: none). */
/* The columns a table made from value schema vid and key schema kid (-1:
 * none) has; LS_ECORRUPT (reason in e) when they do not map. */
static ls_status shape_from(ls_mat_batch_t *b, int32_t vid, int32_t kid, const ls_avro_view_t *vpv,
                            const ls_avro_view_t *kpv, ls_typed_shape_t **out, char *e, size_t elen)
{
    ls_sr_schema_t *vs = NULL, *ks = NULL;
    char why[400];
    *out = NULL;
    ls_status st = vid >= 0 ? value_schema(b, vid, &vs, e, elen) : LS_OK;
    if (st == LS_OK && kid >= 0) st = value_schema(b, kid, &ks, e, elen);
    if (st == LS_OK) {
        char names[LS_POLICY_MAX_PK][LS_POLICY_MAX_PK_NAME];
        const char *pk[LS_POLICY_MAX_PK];
        ls_policy_primary_key(b->tt->policy, names);
        for (int i = 0; i < b->tt->policy->npk; i++)
            pk[i] = names[i];
        *out = ls_typed_shape_new_pk(vs ? schema_root(vs, vpv) : NULL,
                                     ks ? schema_root(ks, kpv) : NULL, pk,
                                     (size_t)b->tt->policy->npk, why, sizeof why);
        if (!*out) {
            if (vid >= 0 && kid >= 0)
                snprintf(e, elen, "value schema id %d, key schema id %d: %s", (int)vid, (int)kid,
                         why);
            else
                snprintf(e, elen, "%s schema id %d: %s", vid >= 0 ? "value" : "key",
                         (int)(vid >= 0 ? vid : kid), why);
            st = LS_ECORRUPT;
        }
    }
    ls_sr_schema_release(vs);
    ls_sr_schema_release(ks);
    return st;
}

static ls_status create_typed(row_ctx_t *c, const ls_raw_record_t *r, int32_t vid, int32_t kid,
                              const ls_avro_view_t *vpv, const ls_avro_view_t *kpv)
{
    ls_mat_batch_t *b = c->b;
    char e[512];
    ls_status st = shape_from(b, vid, kid, vpv, kpv, &b->shape, e, sizeof e);
    if (st != LS_OK) {
        snprintf(c->err, sizeof c->err, "record at offset %lld: %s", (long long)r->offset, e);
        return st;
    }
    char sid[16], skid[16];
    snprintf(sid, sizeof sid, "%d", (int)vid);
    snprintf(skid, sizeof skid, "%d", (int)kid);
    table_shape_t ts = {ls_typed_iceberg_schema_json(b->shape), ls_typed_last_column_id(b->shape),
                        vid >= 0 ? sid : NULL, kid >= 0 ? skid : NULL, NULL};
    st =
        open_table(b->meta, b->os, b->warehouse_uri, b->tt, &ts, &b->t, c->err, (int)sizeof c->err);
    const char *prop = vid >= 0 ? TYPED_SCHEMA_ID_KEY : KEY_SCHEMA_ID_KEY;
    const char *tid = st == LS_OK ? ls_ice_table_summary(b->t, prop) : NULL;
    const char *want = vid >= 0 ? sid : kid >= 0 ? skid : NULL;
    if (st == LS_OK && (want ? !tid || strcmp(tid, want) != 0 : tid != NULL)) {
        /* created concurrently from another record: start over from its schema */
        snprintf(c->err, sizeof c->err, "table %s was created meanwhile; retrying", b->tt->name);
        st = LS_EAGAIN;
    }
    return st == LS_OK ? open_files(b, c->err, (int)sizeof c->err) : st;
}

/* The reader of schema id (a key's when key) for b's current shape, or the
 * record's reason (c->err, c->incompatible) when the table cannot evolve
 * to it. */
static ls_status typed_reader(row_ctx_t *c, const ls_raw_record_t *r, int32_t id, bool key,
                              const ls_avro_view_t *pv, const ls_typed_reader_t **out,
                              const ls_sr_schema_t **schema)
{
    ls_mat_batch_t *b = c->b;
    typed_reader_t *tr;
    char e[512];
    ls_status st = reader_for(b, id, key, pv, &tr, e, sizeof e);
    if (st != LS_OK) {
        snprintf(c->err, sizeof c->err, "record at offset %lld: %s", (long long)r->offset, e);
        return st;
    }
    if (!tr->rd && tr->wrong_subject) { /* error.handling, not evolution, decides */
        snprintf(c->err, sizeof c->err, "record at offset %lld: %s", (long long)r->offset, tr->why);
        return LS_ECORRUPT;
    }
    if (!tr->rd) {
        char tid[16];
        snprintf(c->err, sizeof c->err,
                 "record at offset %lld has %s schema id %d, which table %s (%s schema id %s) "
                 "cannot evolve to: %s",
                 (long long)r->offset, key ? "key" : "value", (int)id, b->tt->name,
                 key ? "key" : "value", table_schema_id(b, key, tid, sizeof tid), tr->why);
        c->incompatible = true;
        c->bad_id = id;
        c->bad_key = key;
        return LS_ECORRUPT;
    }
    *out = tr->rd;
    *schema = tr->schema;
    return LS_OK;
}

/* A Protobuf payload (value, or key when key) of schema id: *pv the view
 * of the message its index array names (none with latest: the first
 * message), d advanced past the array, *hold the schema keeping the view
 * alive (release it). Other schemas: nothing. A bad array or a message not
 * mapped is the record's reason (LS_ECORRUPT). */
static ls_status proto_message(row_ctx_t *c, const ls_raw_record_t *r, int32_t id, bool key,
                               bool latest, ls_typed_datum_t *d, const ls_avro_view_t **pv,
                               ls_sr_schema_t **hold)
{
    for (size_t i = 0; i < c->b->nreaders; i++) /* known not Protobuf: no lookup */
        if (c->b->readers[i].id == id && c->b->readers[i].key == key &&
            c->b->readers[i].schema->type != LS_SR_PROTOBUF)
            return LS_OK;
    ls_sr_schema_t *sc;
    char e[512];
    ls_status st = value_schema(c->b, id, &sc, e, sizeof e);
    if (st != LS_OK) {
        snprintf(c->err, sizeof c->err, "record at offset %lld: %s", (long long)r->offset, e);
        return st;
    }
    if (sc->type != LS_SR_PROTOBUF) {
        ls_sr_schema_release(sc);
        return LS_OK;
    }
    int64_t idx[32];
    size_t n = 0, used = 0;
    if (!latest && ls_avro_view_proto_indexes(d->datum, d->len, idx, 32, &n, &used) != 0) {
        snprintf(c->err, sizeof c->err,
                 "record at offset %lld: the %s's Protobuf message-index array is malformed",
                 (long long)r->offset, key ? "key" : "value");
        ls_sr_schema_release(sc);
        return LS_ECORRUPT;
    }
    *pv = ls_avro_views_find(sc->pviews, idx, n, e, sizeof e);
    if (!*pv) {
        snprintf(c->err, sizeof c->err, "record at offset %lld: the %s's schema id %d: %s",
                 (long long)r->offset, key ? "key" : "value", (int)id, e);
        ls_sr_schema_release(sc);
        return LS_ECORRUPT;
    }
    d->datum += used;
    d->len -= used;
    *hold = sc;
    return LS_OK;
}

/* evolution=new-table: r's schema (c->bad_id) is one the table cannot
 * evolve to. A schema older than the one that started this version
 * follows error.handling (LS_ECORRUPT, c->incompatible cleared);
 * otherwise r starts the next version: its columns are made from r's
 * schemas and kept in b->sw for the commit, and LS_ELIMIT stops the batch
 * at r (file comment). Columns that do not map follow error.handling too. */
static ls_status new_version(row_ctx_t *c, const ls_raw_record_t *r, int32_t vid, int32_t kid,
                             const ls_avro_view_t *vpv, const ls_avro_view_t *kpv)
{
    ls_mat_batch_t *b = c->b;
    c->incompatible = false;
    size_t n = strlen(c->err);
    const char *start = ls_ice_table_summary(b->t, c->bad_key ? VERSION_KID_KEY : VERSION_VID_KEY);
    if (start && c->bad_id < atoi(start)) {
        snprintf(c->err + n, sizeof c->err - n,
                 "; it is older than %s schema id %s, which started table version %s, so it "
                 "starts no new version (%s=new-table)",
                 c->bad_key ? "key" : "value", start, b->tt->name,
                 ls_policy_key(LS_POLICY_EVOLUTION));
        return LS_ECORRUPT;
    }
    c->stop_at = r->offset;
    if (b->sw.set) return LS_ELIMIT; /* the next version is known: this log stops too */
    char next[300], e[512];
    int len = snprintf(next, sizeof next, "%s__v%d", b->vt.base, b->vt.version + 1);
    if (len < 0 || len > 249) {
        snprintf(c->err + n, sizeof c->err - n,
                 "; its new table version %s would be longer than 249 characters", next);
        return LS_EINVAL;
    }
    ls_typed_shape_t *ns = NULL;
    ls_status st = shape_from(b, vid, kid, vpv, kpv, &ns, e, sizeof e);
    if (st == LS_ECORRUPT) {
        snprintf(c->err + n, sizeof c->err - n, "; nor can it start a new table version: %s", e);
        return st;
    }
    if (st != LS_OK) {
        snprintf(c->err, sizeof c->err, "record at offset %lld: %s", (long long)r->offset, e);
        return st;
    }
    /* the partition policy is applied to the new version's columns: one
     * it cannot be applied to (a source field the new schema lacks, or whose
     * new type the transform does not take) holds the table back here,
     * before anything is frozen */
    ls_ice_spec_t spec;
    char why[400];
    st = policy_spec(b->tt->policy, ls_typed_iceberg_schema_json(ns), ls_typed_last_column_id(ns),
                     &spec, why, sizeof why);
    if (st != LS_OK) {
        snprintf(c->err + n, sizeof c->err - n,
                 "; its new table version %s cannot be created: %s '%s': %s", next,
                 ls_policy_key(LS_POLICY_PARTITION), b->tt->policy->value[LS_POLICY_PARTITION],
                 why);
        ls_typed_shape_free(ns);
        return LS_EINVAL;
    }
    b->sw.set = true;
    b->sw.partition = c->partition;
    b->sw.log_id = c->log_id;
    b->sw.offset = r->offset;
    b->sw.vid = vid;
    b->sw.kid = kid;
    b->sw.schema = ls_strdup(ls_typed_iceberg_schema_json(ns));
    b->sw.last_column_id = ls_typed_last_column_id(ns);
    b->sw.reason = ls_strdup(c->err);
    memcpy(b->sw.next, next, (size_t)len + 1); /* len <= 249 */
    ls_typed_shape_free(ns);
    return LS_ELIMIT;
}

/* The data file writer of a typed row: by the Kafka columns, and when the
 * spec partitions by value or key fields, by their values in the datums.
 * LS_ECORRUPT (a bad record, err says why) when a datum does not decode;
 * LS_EINVAL when no file opens (ls_data_files_error). */
static ls_status row_writer(ls_mat_batch_t *b, const ls_raw_record_t *r, const ls_typed_datum_t *v,
                            const ls_typed_datum_t *k, ls_pq_writer_t **w, char *err, size_t errlen)
{
    *w = NULL;
    if (!ls_data_files_needs_values(b->files)) {
        *w = ls_data_files_writer(b->files, r);
        return *w ? LS_OK : LS_EINVAL;
    }
    const ls_ice_spec_t *spec = ls_ice_table_spec(b->t);
    int ids[LS_ICE_MAX_PART];
    ls_ice_sval_t vals[LS_ICE_MAX_PART];
    for (int i = 0; i < spec->nfields; i++)
        ids[i] = spec->fields[i].source_id;
    ls_status st = ls_typed_values(v, k, ids, spec->nfields, vals, err, errlen);
    if (st != LS_OK) return st;
    *w = ls_data_files_writer_sv(b->files, r, vals);
    return *w ? LS_OK : LS_EINVAL;
}

/* A typed row: the value (value.format=schema-registry) and the key
 * (key.format=schema-registry, when the record has one), each decoded by
 * its own schema, into the table's current columns — after evolving them
 * when a schema is a compatible change, or creating the table from them
 * when this is the first record. */
static ls_status typed_row(row_ctx_t *c, const ls_raw_record_t *r)
{
    ls_mat_batch_t *b = c->b;
    const ls_policy_t *p = b->tt->policy;
    ls_typed_datum_t v = {0}, k = {0};
    int32_t vid = -1, kid = -1;
    ls_status st;
    bool keyed = p->key_typed && r->key_len >= 0;
    if ((p->value_latest && r->value_len >= 0) || (keyed && p->key_latest)) {
        char e[512];
        if ((p->value_latest && r->value_len >= 0 &&
             (st = latest_id(b, false, &vid, e, sizeof e)) != LS_OK) ||
            (keyed && p->key_latest && (st = latest_id(b, true, &kid, e, sizeof e)) != LS_OK)) {
            snprintf(c->err, sizeof c->err, "record at offset %lld: %s", (long long)r->offset, e);
            return st;
        }
        if (p->value_latest) v = (ls_typed_datum_t){NULL, r->value, (size_t)r->value_len};
        if (keyed && p->key_latest) k = (ls_typed_datum_t){NULL, r->key, (size_t)r->key_len};
    }
    if (p->value_typed &&
        (p->value_latest ? r->value_len < 0
                         : ls_typed_unframe(r->value, r->value_len, &vid, &v.datum, &v.len) != 0)) {
        snprintf(c->err, sizeof c->err, "record at offset %lld: %s", (long long)r->offset,
                 r->value_len < 0 ? "null value (a typed append table has no row for a tombstone)"
                                  : "the value is not in the Confluent wire format (magic byte "
                                    "0, 4-byte schema id)");
        return LS_ECORRUPT;
    }
    if (keyed && !p->key_latest &&
        ls_typed_unframe(r->key, r->key_len, &kid, &k.datum, &k.len) != 0) {
        snprintf(c->err, sizeof c->err,
                 "record at offset %lld: the key is not in the Confluent wire format (magic "
                 "byte 0, 4-byte schema id; %s=%s)",
                 (long long)r->offset, ls_policy_key(LS_POLICY_KEY_FORMAT),
                 p->value[LS_POLICY_KEY_FORMAT]);
        return LS_ECORRUPT;
    }
    /* Protobuf: the message the payload's index array names, and its bytes */
    const ls_avro_view_t *vpv = NULL, *kpv = NULL;
    ls_sr_schema_t *vhold = NULL, *khold = NULL; /* keep the views alive */
    if ((p->value_typed &&
         (st = proto_message(c, r, vid, false, p->value_latest, &v, &vpv, &vhold)) != LS_OK) ||
        (keyed && (st = proto_message(c, r, kid, true, p->key_latest, &k, &kpv, &khold)) != LS_OK))
        goto out;
    if (!b->t && (st = create_typed(c, r, vid, kid, vpv, kpv)) != LS_OK) goto out;
    /* a key schema may evolve the table, which rebuilds every reader: the
     * value's is taken after it */
    const ls_sr_schema_t *vsc = NULL, *ksc = NULL;
    if (keyed && (st = typed_reader(c, r, kid, true, kpv, &k.rd, &ksc)) != LS_OK) goto out;
    const ls_typed_shape_t *before = b->shape;
    if (p->value_typed && (st = typed_reader(c, r, vid, false, vpv, &v.rd, &vsc)) != LS_OK)
        goto out;
    if (keyed && b->shape != before &&
        (st = typed_reader(c, r, kid, true, kpv, &k.rd, &ksc)) != LS_OK)
        goto out;
    char e[512], je[400];
    ls_buf_t vt, kt; /* JSON and Protobuf values and keys transcoded to Avro datums */
    ls_buf_init(&vt);
    ls_buf_init(&kt);
    ls_pq_writer_t *w = NULL;
    if (p->value_typed && payload_datum(vsc, vpv, &v, &vt, je, sizeof je) != 0) {
        snprintf(e, sizeof e, "the value: %s", je);
        st = LS_ECORRUPT;
    } else if (keyed && payload_datum(ksc, kpv, &k, &kt, je, sizeof je) != 0) {
        snprintf(e, sizeof e, "the key: %s", je);
        st = LS_ECORRUPT;
    } else if ((st = row_writer(b, r, p->value_typed ? &v : NULL, keyed ? &k : NULL, &w, e,
                                sizeof e)) == LS_OK) {
        st = ls_typed_write_kv(b->shape, p->value_typed ? &v : NULL, keyed ? &k : NULL, w, r, e,
                               sizeof e);
    }
    if (st == LS_EINVAL) { /* no writer: data_files' reason */
        ls_buf_free(&vt);
        ls_buf_free(&kt);
        goto out;
    }
    ls_buf_free(&vt);
    ls_buf_free(&kt);
    if (st == LS_ECORRUPT) { /* nothing of the row was written */
        snprintf(c->err, sizeof c->err, "record at offset %lld: %s", (long long)r->offset, e);
        goto out;
    }
    if (p->value_typed) note_id(&b->ids, &b->nids, &b->ids_changed, vid);
    if (keyed) note_id(&b->kids, &b->nkids, &b->kids_changed, kid);
    st = ls_data_files_row_done(b->files, st);
out:
    if (st == LS_ECORRUPT && c->incompatible && p->evolution_new_table)
        st = new_version(c, r, p->value_typed ? vid : -1, keyed ? kid : -1, vpv, kpv);
    ls_sr_schema_release(vhold);
    ls_sr_schema_release(khold);
    return st;
}

/* A row of r in the batch's data files (raw or typed). */
/* error.handling=dead-letter: r goes to the dead-letter table as it is,
 * the reason (c->err) in an extra header; a record an earlier attempt
 * already put there (its offset within that table's mark) is not added
 * again. */
static ls_status dead_letter(row_ctx_t *c, const ls_raw_record_t *r)
{
    ls_mat_batch_t *d = c->b->dlq->b;
    mat_log_t *l = batch_log(d, c->log_id);
    if (r->offset <= l->done) return LS_OK;
    ls_raw_header_t *hs = LS_NEWN(ls_raw_header_t, r->nheaders + 1);
    size_t nh = r->nheaders;
    if (nh) memcpy(hs, r->headers, nh * sizeof *hs);
    hs[nh++] = (ls_raw_header_t){DLQ_ERROR_HEADER, strlen(DLQ_ERROR_HEADER),
                                 (const uint8_t *)c->err, (int64_t)strlen(c->err)};
    ls_raw_record_t dr = *r;
    dr.headers = hs;
    dr.nheaders = nh;
    ls_status st = ls_data_files_add_raw(d->files, &dr);
    ls_free(hs);
    if (st != LS_OK) {
        snprintf(c->err, sizeof c->err, "writing the dead-letter table: %s",
                 ls_data_files_error(d->files));
        return st;
    }
    if (c->last_offset > l->last) l->last = c->last_offset;
    d->rows++;
    return LS_OK;
}

/* A record that makes no row (the reason in c->err): error.handling says
 * what happens — fail (LS_ECORRUPT: the range waits), skip (counted), or
 * dead-letter (into <name>__dlq); for a record whose schema the table
 * cannot evolve to, evolution does (fail or dead-letter). */
static ls_status bad_record(row_ctx_t *c, const ls_raw_record_t *r)
{
    ls_mat_batch_t *b = c->b;
    const ls_policy_t *p = b->tt->policy;
    ls_policy_field f = c->incompatible ? LS_POLICY_EVOLUTION : LS_POLICY_ERROR_HANDLING;
    bool dlq = c->incompatible ? p->evolution_dlq : p->error_dlq;
    bool skip = !c->incompatible && p->error_skip;
    c->incompatible = false;
    if (!skip && !dlq) {
        size_t n = strlen(c->err);
        snprintf(c->err + n, sizeof c->err - n, " (%s=%s)", ls_policy_key(f), p->value[f]);
        return LS_ECORRUPT;
    }
    LS_WARN_RL("table", "table %s.%s: %s a record (%s=%s): %s", b->tt->stream->ns, b->tt->name,
               dlq ? "dead-lettering" : "skipping", ls_policy_key(f) + strlen(LS_POLICY_PREFIX),
               p->value[f], c->err);
    ls_status st = dlq ? dead_letter(c, r) : LS_OK;
    if (st != LS_OK) return st;
    c->err[0] = 0;
    c->rows--; /* counted as a row by its caller */
    if (!dlq) b->skipped++;
    return LS_OK;
}

/* value.format=json (design note at the top): the view and reader of
 * b->jschema for the current shape (made from the view when there is none
 * yet: a new table). */
static ls_status json_view(ls_mat_batch_t *b, char *err, size_t errlen)
{
    json_free_view(b);
    char *text = json_dumps(b->jschema, JSON_COMPACT);
    b->jjs = text ? ls_jsonschema_parse(NULL, NULL, 0, text, err, errlen) : NULL;
    free(text);
    if (b->jjs) b->jview = ls_avro_view_json(b->jjs, err, errlen);
    if (!b->jview) return LS_EINVAL;
    if (!b->shape && !(b->shape = ls_typed_shape_new(ls_avro_view_root(b->jview), err, errlen)))
        return LS_EINVAL;
    return ls_typed_reader_new(b->shape, ls_avro_view_root(b->jview), &b->jrd, err, errlen);
}

/* A schemaless JSON row: the value's types merged into the inferred
 * columns (creating the table, or evolving it with new optional columns,
 * in the batch's commit), then the value written into them; a JSON object
 * that does not fit goes whole into _raw. */
static ls_status json_row(row_ctx_t *c, const ls_raw_record_t *r)
{
    ls_mat_batch_t *b = c->b;
    char why[400];
    if (r->value_len < 0) {
        snprintf(c->err, sizeof c->err,
                 "record at offset %lld: null value (a typed append table has no row for a "
                 "tombstone)",
                 (long long)r->offset);
        return LS_ECORRUPT;
    }
    json_t *next = b->jschema ? json_deep_copy(b->jschema) : NULL;
    int m = ls_json_infer(&next, r->value, (size_t)r->value_len, why, sizeof why);
    if (m == -2) {
        json_decref(next);
        snprintf(c->err, sizeof c->err, "record at offset %lld: the value is %s (%s=json)",
                 (long long)r->offset, why, ls_policy_key(LS_POLICY_VALUE_FORMAT));
        return LS_ECORRUPT;
    }
    ls_status st = LS_OK;
    if (!b->t) {     /* the first record: the table takes its columns */
        if (m < 0) { /* it does not fit even alone (a _raw property): _raw only */
            json_decref(next);
            next = NULL;
            ls_json_infer(&next, (const uint8_t *)"{}", 2, why, sizeof why);
        }
        json_decref(b->jschema);
        b->jschema = next;
        ls_typed_shape_free(b->shape);
        b->shape = NULL;
        st = json_view(b, why, sizeof why);
        if (st != LS_OK) {
            snprintf(c->err, sizeof c->err, "record at offset %lld: %s", (long long)r->offset, why);
            return LS_ECORRUPT;
        }
        table_shape_t ts = {ls_typed_iceberg_schema_json(b->shape),
                            ls_typed_last_column_id(b->shape), JSON_SCHEMA_ID, NULL, NULL};
        st = open_table(b->meta, b->os, b->warehouse_uri, b->tt, &ts, &b->t, c->err,
                        (int)sizeof c->err);
        if (st == LS_OK) {
            /* created concurrently from another record: start over from its columns */
            int last;
            char *cur = ls_ice_table_schema(b->t, &last);
            ls_typed_shape_t *ts2 = cur ? ls_typed_shape_parse(cur, last, why, sizeof why) : NULL;
            if (!ts2 || strcmp(ls_typed_iceberg_schema_json(ts2),
                               ls_typed_iceberg_schema_json(b->shape)) != 0) {
                snprintf(c->err, sizeof c->err, "table %s was created meanwhile; retrying",
                         b->tt->name);
                st = LS_EAGAIN;
            }
            ls_typed_shape_free(ts2);
            ls_free(cur);
        }
        if (st == LS_OK) st = open_files(b, c->err, (int)sizeof c->err);
        if (st != LS_OK) return st;
    } else if (m == 1) { /* new columns: evolve the table in this batch's commit */
        json_t *old = b->jschema;
        b->jschema = next;
        ls_typed_shape_t *ns = NULL;
        ls_jsonschema_t *js = NULL;
        ls_avro_view_t *v = NULL;
        char *text = json_dumps(next, JSON_COMPACT);
        js = ls_jsonschema_parse(NULL, NULL, 0, text, why, sizeof why);
        free(text);
        if (js) v = ls_avro_view_json(js, why, sizeof why);
        st = v ? ls_typed_evolve(b->shape, ls_avro_view_root(v), &ns, why, sizeof why) : LS_EINVAL;
        ls_avro_view_free(v);
        ls_jsonschema_free(js);
        if (st == LS_OK) {
            json_decref(old);
            json_free_view(b); /* its reader fills the old shape */
            if ((st = evolve_table(b, ns, -1, false, c->err, sizeof c->err)) != LS_OK) return st;
        } else { /* cannot happen by the merge rules; the value falls back whole */
            json_decref(b->jschema);
            b->jschema = old;
            m = -1;
        }
    } else {
        json_decref(next);
    }
    if (!b->jrd && (st = json_view(b, why, sizeof why)) != LS_OK) {
        snprintf(c->err, sizeof c->err, "record at offset %lld: the table's columns: %s",
                 (long long)r->offset, why);
        return LS_EINVAL;
    }
    /* the value, or a value that does not fit whole in _raw */
    char *fallback = NULL;
    const uint8_t *text = r->value;
    size_t tlen = (size_t)r->value_len;
    if (m < 0) {
        json_t *o = json_object();
        json_object_set_new(o, "_raw", json_stringn((const char *)r->value, tlen));
        fallback = json_dumps(o, JSON_COMPACT);
        json_decref(o);
        text = (const uint8_t *)fallback;
        tlen = strlen(fallback);
    }
    ls_buf_t d;
    ls_buf_init(&d);
    char e[512];
    ls_typed_datum_t v = {b->jrd, NULL, 0};
    ls_pq_writer_t *w = NULL;
    if (ls_avro_view_encode(b->jview, text, tlen, &d, e, sizeof e) != 0) {
        st = LS_ECORRUPT;
    } else {
        v.datum = d.data;
        v.len = d.len;
        st = row_writer(b, r, &v, NULL, &w, e, sizeof e);
        if (st == LS_OK) st = ls_typed_write_kv(b->shape, &v, NULL, w, r, e, sizeof e);
    }
    ls_buf_free(&d);
    free(fallback);
    if (st == LS_ECORRUPT) {
        snprintf(c->err, sizeof c->err, "record at offset %lld: %s", (long long)r->offset, e);
        return st;
    }
    return st == LS_EINVAL ? st : ls_data_files_row_done(b->files, st);
}

static ls_status write_row(row_ctx_t *c, const ls_raw_record_t *r)
{
    ls_mat_batch_t *b = c->b;
    if (!b->tt->policy->value_typed && !b->tt->policy->key_typed)
        return ls_data_files_add_raw(b->files, r);
    ls_status st = b->tt->policy->value_json ? json_row(c, r) : typed_row(c, r);
    return st == LS_ECORRUPT ? bad_record(c, r) : st;
}

static ls_status add_row(row_ctx_t *c, const ls_raw_record_t *r)
{
    ls_mat_batch_t *b = c->b;
    if (!b->tt->policy->upsert) return write_row(c, r);
    if (r->key_len < 0) {
        snprintf(c->err, sizeof c->err,
                 "record at offset %lld has no key: an upsert table's rows are keyed "
                 "(lakestream.table.write.mode=upsert)",
                 (long long)r->offset);
        return bad_record(c, r);
    }
    up_put(&b->up, r, c->log_id, c->last_offset);
    return LS_OK;
}

int64_t ls_mat_done(ls_mat_batch_t *b, int64_t log_id)
{
    mat_log_t *l = batch_log(b, log_id);
    int64_t done = l->last > l->done ? l->last : l->done;
    if (b->cl) {
        int64_t cd = ls_mat_done(b->cl->b, log_id);
        if (cd < done) done = cd;
    }
    return done;
}

ls_status ls_mat_add(ls_mat_batch_t *b, const ls_mat_range_t *r, uint64_t *rows_out, char *err,
                     int errlen)
{
    *rows_out = 0;
    if (errlen > 0) err[0] = 0; /* not a message of an earlier call (begin's lookups) */
    if (b->cl) {                /* the changelog first: each table skips what it holds */
        uint64_t crows;
        ls_status st = ls_mat_add(b->cl->b, r, &crows, err, errlen);
        if (st != LS_OK) {
            b->failed = st;
            return st;
        }
    }
    mat_log_t *l = batch_log(b, r->log_id);
    if (l->stopped) return LS_OK; /* its rows from here on go to the next version */
    int64_t above = l->last > l->done ? l->last : l->done;
    if (r->from_offset > r->last_offset || above >= r->last_offset)
        return LS_OK; /* start.position=latest, or the table holds the range already */
    if (above < r->from_offset - 1) above = r->from_offset - 1;
    row_ctx_t rc = {.b = b,
                    .partition = r->partition,
                    .log_id = r->log_id,
                    .last_offset = r->last_offset,
                    .above = above,
                    .st = LS_OK};
    for (uint32_t i = 0; i < r->n && rc.st == LS_OK; i++) {
        size_t end = i + 1 < r->n ? r->entries[i + 1].pos : r->body_end;
        const uint8_t *batch = r->obj + r->entries[i].pos;
        size_t len = end - r->entries[i].pos;
        ls_batch_info_t bi;
        ls_batch_header_parse(batch, &bi);
        rc.base_offset = r->entries[i].base_offset;
        if (rc.base_offset > r->last_offset) break;
        if (bi.control) continue; /* transaction markers make no rows */
        if (rc.base_offset + bi.last_offset_delta <= above) continue;
        if (bi.transactional && r->aborted &&
            ls_aborted_list_find(r->aborted, bi.producer_id, rc.base_offset))
            continue; /* records of an aborted transaction */
        ls_rb_result rr = ls_records_foreach(batch, len, MAX_DECOMPRESSED, on_record, &rc);
        if (rr != LS_RB_OK) {
            snprintf(err, (size_t)errlen, "entry at offset %lld does not decode (class %d)",
                     (long long)rc.base_offset, (int)rr);
            rc.st = LS_ECORRUPT;
        }
    }
    if (rc.st == LS_ELIMIT && b->sw.set) {
        /* a new table version takes this log from stop_at: this one holds
         * the rows below it (file comment) */
        rc.st = LS_OK;
        rc.rows--; /* the record that stopped it made no row here */
        l->stopped = true;
        if (rc.stop_at - 1 > above) l->last = rc.stop_at - 1;
        b->rows += rc.rows;
        *rows_out = rc.rows;
        return LS_OK;
    }
    if (rc.st != LS_OK && !err[0]) {
        if (rc.err[0])
            snprintf(err, (size_t)errlen, "%s", rc.err);
        else
            snprintf(err, (size_t)errlen, "writing data files: %s", ls_data_files_error(b->files));
    }
    if (rc.st != LS_OK) b->failed = rc.st;
    if (rc.st == LS_OK) {
        l->last = r->last_offset;
        b->rows += rc.rows;
        *rows_out = rc.rows;
    }
    return rc.st;
}

/* primary.key: the identity of r's key (a typed key: upsert tables have
 * keys) in out: the values of the primary key fields, decoded by the key's
 * schema into the table's current key column — so keys written by
 * different versions of the key schema have one identity. LS_ENOTFOUND: a
 * tombstone while no table exists (nothing to delete). Creates or evolves
 * the table as typed_row would. */
static ls_status pk_identity(row_ctx_t *c, const ls_raw_record_t *r, ls_buf_t *out)
{
    ls_mat_batch_t *b = c->b;
    const ls_policy_t *p = b->tt->policy;
    ls_typed_datum_t k = {0}, v = {0};
    int32_t kid = -1, vid = -1;
    char e[512];
    ls_status st;
    if (p->key_latest) {
        if ((st = latest_id(b, true, &kid, e, sizeof e)) != LS_OK) {
            snprintf(c->err, sizeof c->err, "record at offset %lld: %s", (long long)r->offset, e);
            return st;
        }
        k = (ls_typed_datum_t){NULL, r->key, (size_t)r->key_len};
    } else if (ls_typed_unframe(r->key, r->key_len, &kid, &k.datum, &k.len) != 0) {
        snprintf(c->err, sizeof c->err,
                 "record at offset %lld: the key is not in the Confluent wire format (magic "
                 "byte 0, 4-byte schema id; %s=%s)",
                 (long long)r->offset, ls_policy_key(LS_POLICY_KEY_FORMAT),
                 p->value[LS_POLICY_KEY_FORMAT]);
        return LS_ECORRUPT;
    }
    if (!b->t) { /* the table is created by its first record, which must have a value */
        if (r->value_len < 0) return LS_ENOTFOUND;
        if (p->value_typed && p->value_latest) {
            if ((st = latest_id(b, false, &vid, e, sizeof e)) != LS_OK) {
                snprintf(c->err, sizeof c->err, "record at offset %lld: %s", (long long)r->offset,
                         e);
                return st;
            }
        } else if (p->value_typed &&
                   ls_typed_unframe(r->value, r->value_len, &vid, &v.datum, &v.len) != 0) {
            snprintf(c->err, sizeof c->err,
                     "record at offset %lld: the value is not in the Confluent wire format "
                     "(magic byte 0, 4-byte schema id)",
                     (long long)r->offset);
            return LS_ECORRUPT;
        }
    }
    /* Protobuf: the messages the index arrays name (views kept alive by hold) */
    const ls_avro_view_t *vpv = NULL, *kpv = NULL;
    ls_sr_schema_t *vhold = NULL, *khold = NULL;
    if ((st = proto_message(c, r, kid, true, p->key_latest, &k, &kpv, &khold)) != LS_OK) goto out;
    if (!b->t) {
        if (vid >= 0 &&
            (st = proto_message(c, r, vid, false, p->value_latest, &v, &vpv, &vhold)) != LS_OK)
            goto out;
        if ((st = create_typed(c, r, vid, kid, vpv, kpv)) != LS_OK) goto out;
    }
    const ls_sr_schema_t *ksc = NULL;
    if ((st = typed_reader(c, r, kid, true, kpv, &k.rd, &ksc)) != LS_OK) goto out;
    ls_buf_t kt; /* a JSON or Protobuf key transcoded to an Avro datum */
    ls_buf_init(&kt);
    char je[400];
    if (payload_datum(ksc, kpv, &k, &kt, je, sizeof je) != 0) {
        snprintf(e, sizeof e, "the key: %s", je);
        st = LS_ECORRUPT;
    } else {
        st = ls_typed_key_identity(k.rd, k.datum, k.len, out, e, sizeof e);
    }
    ls_buf_free(&kt);
    if (st != LS_OK)
        snprintf(c->err, sizeof c->err, "record at offset %lld: %s", (long long)r->offset, e);
out:
    ls_sr_schema_release(vhold);
    ls_sr_schema_release(khold);
    return st;
}

static int by_seq(const void *x, const void *y)
{
    const up_rec_t *a = *(const up_rec_t *const *)x, *b = *(const up_rec_t *const *)y;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* primary.key: b->ids_pk from up_map's records, in the order they came (a
 * later record of an identity replaces an earlier one, whatever key bytes
 * each had); a record whose key makes no identity follows error.handling. */
static ls_status pk_collect(ls_mat_batch_t *b, char *err, int errlen)
{
    up_rec_t **v = LS_NEWN(up_rec_t *, b->up.n ? b->up.n : 1);
    size_t n = 0;
    for (size_t i = 0; i < b->up.cap; i++)
        if (b->up.slots[i]) v[n++] = b->up.slots[i];
    qsort(v, n, sizeof *v, by_seq);
    row_ctx_t rc = {.b = b, .st = LS_OK};
    ls_buf_t id;
    ls_buf_init(&id);
    for (size_t i = 0; i < n && rc.st == LS_OK; i++) {
        rc.log_id = v[i]->log_id;
        rc.last_offset = v[i]->last_offset;
        rc.err[0] = 0;
        rc.st = pk_identity(&rc, &v[i]->r, &id);
        if (rc.st == LS_OK)
            id_put(&b->ids_pk, id.data, id.len, v[i]);
        else if (rc.st == LS_ENOTFOUND)
            rc.st = LS_OK;
        else if (rc.st == LS_ECORRUPT) {
            rc.rows++; /* bad_record uncounts it */
            rc.st = bad_record(&rc, &v[i]->r);
        }
    }
    ls_buf_free(&id);
    ls_free(v);
    if (rc.st != LS_OK) snprintf(err, (size_t)errlen, "%s", rc.err[0] ? rc.err : "primary key");
    return rc.st;
}

/* Upsert: the rows of the batch's latest records (tombstones make none),
 * written into its data files; *rows counts them. With a primary key, the
 * latest record of each identity. */
static ls_status upsert_rows(ls_mat_batch_t *b, uint64_t *rows, char *err, int errlen)
{
    row_ctx_t rc = {.b = b, .st = LS_OK};
    bool pk = b->tt->policy->npk > 0;
    if (pk && (rc.st = pk_collect(b, err, errlen)) != LS_OK) return rc.st;
    size_t cap = pk ? b->ids_pk.cap : b->up.cap;
    for (size_t i = 0; i < cap && rc.st == LS_OK; i++) {
        const up_rec_t *e = pk ? b->ids_pk.slots[i].rec : b->up.slots[i];
        if (!e || e->r.value_len < 0) continue;
        rc.rows++;
        rc.log_id = e->log_id;
        rc.last_offset = e->last_offset;
        rc.st = write_row(&rc, &e->r);
    }
    if (rc.st != LS_OK)
        snprintf(err, (size_t)errlen, "%s",
                 rc.err[0]  ? rc.err
                 : b->files ? ls_data_files_error(b->files)
                            : "no table");
    *rows = rc.rows;
    return rc.st;
}

/* How b's table rewrites data files (table/file_rewrite.h): its row shape,
 * codec, target size and rewrite.min.files. */
static ls_file_rewrite_opts_t rewrite_opts(const ls_mat_batch_t *b)
{
    size_t nf;
    const ls_pq_field_t *f =
        b->shape ? ls_typed_parquet_fields(b->shape, &nf) : ls_raw_parquet_fields(&nf);
    return (ls_file_rewrite_opts_t){.fields = f,
                                    .nfields = nf,
                                    .pq = &b->opts,
                                    .target_bytes = b->tt->policy->target_file_bytes,
                                    .min_files = (int)b->tt->policy->rewrite_min_files};
}

/* Upsert: the live files holding rows of the batch's keys, copied without
 * them (file comment). */
static ls_status upsert_drops(ls_mat_batch_t *b, ls_file_cow_t *cow, char *err, int errlen)
{
    ls_file_rewrite_opts_t o = rewrite_opts(b);
    size_t npk = b->shape ? ls_typed_pk_count(b->shape) : 0;
    if (!npk)
        return ls_file_drop_rows(b->t, &o, b->shape ? "_kafka_key" : "key", up_has, &b->up, cow,
                                 err, (size_t)errlen);
    char paths[LS_TYPED_MAX_PK][200];
    const char *cols[LS_TYPED_MAX_PK];
    for (size_t i = 0; i < npk; i++) {
        snprintf(paths[i], sizeof paths[i], "%s.%.150s", LS_TYPED_KEY_COLUMN,
                 ls_typed_pk_name(b->shape, i));
        cols[i] = paths[i];
    }
    return ls_file_drop_rows_ident(b->t, &o, cols, npk, id_has, &b->ids_pk, cow, err,
                                   (size_t)errlen);
}

ls_status ls_mat_commit(ls_mat_batch_t *b, uint64_t *rows, char *err, int errlen)
{
    *rows = 0;
    if (b->failed != LS_OK) {
        snprintf(err, (size_t)errlen, "a range of this commit failed to materialize");
        return b->failed;
    }
    side_t *sides[] = {b->cl, b->dlq}; /* committed before the table (file comment) */
    for (size_t i = 0; i < 2; i++) {
        uint64_t srows;
        ls_status st = sides[i] ? ls_mat_commit(sides[i]->b, &srows, err, errlen) : LS_OK;
        if (st != LS_OK) {
            char inner[400];
            snprintf(inner, sizeof inner, "%s", err);
            snprintf(err, (size_t)errlen, "table %s: %s", sides[i]->tt.name, inner);
            return st;
        }
    }
    size_t nkv = 0;
    for (size_t i = 0; i < b->nlogs; i++)
        nkv += b->logs[i].last >= 0;
    if (!nkv && !b->sw.set) return LS_OK; /* nothing added */
    bool upsert = b->tt->policy->upsert;
    uint64_t made = b->rows;
    ls_status st = upsert ? upsert_rows(b, &made, err, errlen) : LS_OK;
    if (st != LS_OK) return st;
    if (!b->t) return LS_OK; /* a typed table no record has created yet */
    const char *was = ls_ice_table_summary(b->t, SKIPPED_KEY);
    char skipped[24] = "";
    if (b->skipped || was) /* a running count, carried from snapshot to snapshot */
        snprintf(skipped, sizeof skipped, "%llu",
                 (unsigned long long)(b->skipped + (was ? strtoull(was, NULL, 10) : 0)));
    ls_file_cow_t cow = {0};
    if (upsert && (st = upsert_drops(b, &cow, err, errlen)) != LS_OK) return st;
    /* the files to add: what stays of rewritten files, then the new rows
     * (those written before a schema evolution first) */
    ls_ice_datafile_t *added = LS_NEWN(ls_ice_datafile_t, cow.nadded + 1);
    size_t nadded = cow.nadded;
    if (cow.nadded) memcpy(added, cow.added, cow.nadded * sizeof *added);
    for (size_t i = 0; i <= b->nretired; i++) {
        ls_data_files_t *files = i < b->nretired ? b->retired[i].files : b->files;
        const ls_ice_datafile_t *dfs = NULL;
        size_t ndf = 0;
        st = ls_data_files_finish(files, &dfs, &ndf);
        if (st != LS_OK) {
            snprintf(err, (size_t)errlen, "writing data files: %s", ls_data_files_error(files));
            ls_free(added);
            ls_file_cow_clear(&cow);
            return st;
        }
        added = ls_realloc(added, (nadded + ndf + 1) * sizeof *added);
        if (ndf) memcpy(added + nadded, dfs, ndf * sizeof *added);
        nadded += ndf;
    }
    char evolved[16], key_evolved[16], *ids = NULL, *kids = NULL;
    const char **kv = LS_NEWN(const char *, 2 * nkv + 11 + 16);
    char(*keys)[80] = ls_calloc(nkv, sizeof *keys);
    char(*vals)[24] = ls_calloc(nkv, sizeof *vals);
    size_t k = 0;
    for (size_t i = 0; i < b->nlogs; i++) {
        if (b->logs[i].last < 0) continue;
        last_offset_key(keys[k], sizeof keys[k], b->logs[i].log_id);
        snprintf(vals[k], sizeof vals[k], "%lld", (long long)b->logs[i].last);
        kv[2 * k] = keys[k];
        kv[2 * k + 1] = vals[k];
        k++;
    }
    if (skipped[0]) {
        kv[2 * k] = SKIPPED_KEY;
        kv[2 * k + 1] = skipped;
        k++;
    }
    if (b->evolved_to >= 0) { /* the table properties name the schema applied last */
        snprintf(evolved, sizeof evolved, "%d", (int)b->evolved_to);
        kv[2 * k] = TYPED_SCHEMA_ID_KEY;
        kv[2 * k + 1] = evolved;
        k++;
    }
    if (b->key_evolved_to >= 0) {
        snprintf(key_evolved, sizeof key_evolved, "%d", (int)b->key_evolved_to);
        kv[2 * k] = KEY_SCHEMA_ID_KEY;
        kv[2 * k + 1] = key_evolved;
        k++;
    }
    if (b->ids_changed) {
        kv[2 * k] = TYPED_SCHEMA_IDS_KEY;
        kv[2 * k + 1] = ids = ids_text(b->ids, b->nids);
        k++;
    }
    if (b->kids_changed) {
        kv[2 * k] = KEY_SCHEMA_IDS_KEY;
        kv[2 * k + 1] = kids = ids_text(b->kids, b->nkids);
        k++;
    }
    char swp[16], swo[24], swl[16], swv[16], swk[16];
    if (b->sw.set) { /* the last commit of this version: what continues it */
        snprintf(swp, sizeof swp, "%d", (int)b->sw.partition);
        snprintf(swo, sizeof swo, "%lld", (long long)b->sw.offset);
        snprintf(swl, sizeof swl, "%d", b->sw.last_column_id);
        const char *sk[] = {CONT_AS_KEY,        b->sw.next,   CONT_REASON_KEY,      b->sw.reason,
                            CONT_PARTITION_KEY, swp,          CONT_OFFSET_KEY,      swo,
                            CONT_SCHEMA_KEY,    b->sw.schema, CONT_LAST_COLUMN_KEY, swl};
        for (size_t i = 0; i < sizeof sk / sizeof *sk; i += 2, k++)
            kv[2 * k] = sk[i], kv[2 * k + 1] = sk[i + 1];
        if (b->sw.vid >= 0) {
            snprintf(swv, sizeof swv, "%d", (int)b->sw.vid);
            kv[2 * k] = CONT_VID_KEY, kv[2 * k + 1] = swv, k++;
        }
        if (b->sw.kid >= 0) {
            snprintf(swk, sizeof swk, "%d", (int)b->sw.kid);
            kv[2 * k] = CONT_KID_KEY, kv[2 * k + 1] = swk, k++;
        }
    }
    ls_crashpoint("table.data_written");
    int64_t snap;
    st = ls_ice_table_overwrite(b->t, (const char *const *)cow.removed, cow.nremoved, added, nadded,
                                kv, ls_clock_wall_ms(), &snap);
    if (st != LS_OK)
        snprintf(err, (size_t)errlen, "committing snapshot: %s", ls_ice_table_error(b->t));
    else
        *rows = made;
    if (st == LS_OK && b->sw.set)
        LS_WARN("table",
                "table %s.%s continues as table %s.%s from partition %d offset %lld "
                "(lakestream.table.evolution=new-table): %s",
                b->tt->stream->ns, b->tt->name, b->tt->stream->ns, b->sw.next, (int)b->sw.partition,
                (long long)b->sw.offset, b->sw.reason);
    ls_free(added);
    ls_file_cow_clear(&cow);
    ls_free(kv);
    ls_free(ids);
    ls_free(kids);
    ls_free(keys);
    ls_free(vals);
    return st;
}

ls_status ls_mat_rewrite(ls_mat_batch_t *b, ls_file_rewrite_stats_t *stats, char *err, int errlen)
{
    stats->more = false;
    side_t *sides[] = {b->cl, b->dlq};
    for (size_t i = 0; i < 2; i++) {
        ls_status st = sides[i] ? ls_mat_rewrite(sides[i]->b, stats, err, errlen) : LS_OK;
        if (st != LS_OK) return st;
    }
    if (!b->t) return LS_OK; /* a typed table no record has created yet */
    ls_file_rewrite_opts_t o = rewrite_opts(b);
    bool more = stats->more; /* the side tables' */
    ls_status st = ls_file_rewrite(b->t, &o, ls_clock_wall_ms(), stats, err, (size_t)errlen);
    stats->more |= more;
    return st;
}

void ls_mat_free(ls_mat_batch_t *b)
{
    if (!b) return;
    ls_data_files_free(b->files);
    ls_ice_table_free(b->t);
    json_free_view(b);
    json_decref(b->jschema);
    ls_typed_shape_free(b->shape);
    clear_readers(b);
    for (size_t i = 0; i < b->nretired; i++) {
        ls_data_files_free(b->retired[i].files);
        ls_typed_shape_free(b->retired[i].shape);
    }
    ls_free(b->retired);
    ls_free(b->ids);
    ls_free(b->kids);
    up_clear(&b->up);
    id_clear(&b->ids_pk);
    side_t *sides[] = {b->cl, b->dlq};
    for (size_t i = 0; i < 2; i++) {
        if (sides[i]) ls_mat_free(sides[i]->b);
        ls_free(sides[i]);
    }
    ls_free(b->logs);
    preds_free(&b->preds);
    ls_free(b->sw.schema);
    ls_free(b->sw.reason);
    ls_free(b);
}

bool ls_mat_switched(const ls_mat_batch_t *b) { return b->sw.set; }

bool ls_mat_stopped(ls_mat_batch_t *b, int64_t log_id) { return batch_log(b, log_id)->stopped; }

const char *ls_mat_table_name(const ls_mat_batch_t *b) { return b->tt->name; }

const char *ls_mat_version_reason(const ls_mat_batch_t *b)
{
    return b->t && b->tt->version > 1 ? ls_ice_table_summary(b->t, VERSION_REASON_KEY) : NULL;
}

int64_t ls_mat_skipped_records(const ls_mat_batch_t *b)
{
    const char *v = b->t ? ls_ice_table_summary(b->t, SKIPPED_KEY) : NULL;
    return v ? (int64_t)strtoll(v, NULL, 10) : -1;
}

static int64_t summary_i64(const ls_ice_table_t *t, const char *key)
{
    const char *v = ls_ice_table_summary(t, key);
    return v ? (int64_t)strtoll(v, NULL, 10) : 0;
}

bool ls_mat_totals(const ls_mat_batch_t *b, ls_mat_totals_t *out)
{
    if (!b->t) return false;
    out->snapshots = (int64_t)ls_ice_table_snapshot_count(b->t);
    out->data_files = summary_i64(b->t, "total-data-files");
    out->bytes = summary_i64(b->t, "total-files-size");
    out->rows = summary_i64(b->t, "total-records");
    return true;
}

ls_status ls_materialize_range(ls_meta_t *meta, ls_objstore_t *os, const char *warehouse_uri,
                               const ls_table_target_t *tt, const ls_mat_range_t *r,
                               uint64_t *rows_out, char *err, int errlen)
{
    *rows_out = 0;
    if (r->from_offset > r->last_offset)
        return LS_OK; /* start.position=latest: nothing of this range belongs to the table */
    /* a range that starts a new table version is finished in that version:
     * begin again (it resolves to the new version), which holds the rest */
    ls_status st = LS_OK;
    bool switched = true;
    for (int i = 0; i < 8 && switched && st == LS_OK; i++) {
        ls_mat_batch_t *b;
        st = ls_mat_begin(meta, os, warehouse_uri, tt, &b, err, errlen);
        if (st != LS_OK) return st;
        uint64_t added, rows = 0;
        st = ls_mat_add(b, r, &added, err, errlen);
        if (st == LS_OK) st = ls_mat_commit(b, &rows, err, errlen);
        *rows_out += rows;
        switched = ls_mat_switched(b);
        ls_mat_free(b);
    }
    if (st == LS_OK && switched) {
        snprintf(err, (size_t)errlen, "the range started new table versions 8 times; will retry");
        st = LS_EAGAIN;
    }
    return st;
}

/* ls_ice_table_expire of one table with its policy's retention and delay. */
static ls_status expire_one(ls_ice_table_t *t, const ls_policy_t *p, int64_t now_ms,
                            int64_t *next_ms, char *err, int errlen)
{
    ls_ice_table_set_snapshot_retention(t, p->snapshot_retention_ms,
                                        (int)p->snapshot_retention_min);
    ls_ice_table_set_file_grace(t, p->file_delete_delay_ms);
    bool committed;
    int64_t next;
    ls_status st = ls_ice_table_expire(t, now_ms, &committed, &next);
    if (st != LS_OK)
        snprintf(err, (size_t)errlen, "%s", ls_ice_table_error(t));
    else if (next < *next_ms)
        *next_ms = next;
    return st;
}

ls_status ls_materialize_expire(ls_meta_t *meta, ls_objstore_t *os, const ls_table_target_t *tt,
                                int64_t now_ms, int64_t *next_ms, char *err, int errlen)
{
    *next_ms = INT64_MAX;
    static const char *const suffixes[] = {CHANGELOG_SUFFIX, DLQ_SUFFIX};
    bool has[] = {tt->policy->changelog,
                  tt->policy->error_dlq || ((tt->policy->value_typed || tt->policy->key_typed) &&
                                            tt->policy->evolution_dlq)};
    ls_status st = LS_OK;
    for (size_t i = 0; i < 2 && st == LS_OK; i++) {
        if (!has[i]) continue;
        side_t sd;
        ls_ice_table_t *t = NULL;
        if ((st = side_target(tt, suffixes[i], &sd, err, errlen)) == LS_OK &&
            (st = open_table(meta, os, NULL, &sd.tt, NULL, &t, err, errlen)) == LS_OK)
            st = expire_one(t, &sd.policy, now_ms, next_ms, err, errlen);
        ls_ice_table_free(t);
        if (st == LS_ENOTFOUND) st = LS_OK;
    }
    ls_table_target_t vt;
    ls_ice_table_t *cur = NULL;
    if (st == LS_OK && (st = resolve_version(meta, os, tt, &vt, &cur, err, errlen)) == LS_OK && cur)
        st = expire_one(cur, tt->policy, now_ms, next_ms, err, errlen);
    ls_ice_table_free(cur);
    return st;
}

ls_status ls_materialize_remove_orphans(ls_meta_t *meta, ls_objstore_t *os,
                                        const ls_table_target_t *tt, int64_t older_than_ms,
                                        uint64_t *deleted, char *err, int errlen)
{
    *deleted = 0;
    static const char *const suffixes[] = {CHANGELOG_SUFFIX, DLQ_SUFFIX};
    bool has[] = {tt->policy->changelog,
                  tt->policy->error_dlq || ((tt->policy->value_typed || tt->policy->key_typed) &&
                                            tt->policy->evolution_dlq)};
    for (size_t i = 0; i < 2; i++) {
        if (!has[i]) continue;
        side_t sd;
        uint64_t sn = 0;
        ls_status st = side_target(tt, suffixes[i], &sd, err, errlen);
        if (st == LS_OK)
            st = ls_materialize_remove_orphans(meta, os, &sd.tt, older_than_ms, &sn, err, errlen);
        if (st != LS_OK) return st;
        *deleted += sn;
    }
    /* every version of the table, from the base along continued-as */
    ls_table_target_t vt = *tt;
    for (int i = 0; i < MAX_VERSIONS; i++) {
        uint64_t n = 0;
        ls_ice_table_t *t = NULL;
        ls_status st = open_table(meta, os, NULL, &vt, NULL, &t, err, errlen);
        if (st == LS_ENOTFOUND) return LS_OK;
        if (st != LS_OK) return st;
        st = ls_ice_table_remove_orphans(t, older_than_ms, &n);
        *deleted += n;
        if (st != LS_OK) snprintf(err, (size_t)errlen, "%s", ls_ice_table_error(t));
        const char *next = versioned(tt) ? ls_ice_table_summary(t, CONT_AS_KEY) : NULL;
        if (st == LS_OK && next && strlen(next) < sizeof vt.name &&
            ls_tcat_name_ok(next, strlen(next)))
            target_rename(&vt, next);
        else
            next = NULL;
        ls_ice_table_free(t);
        if (st != LS_OK || !next) return st;
    }
    return LS_OK;
}
