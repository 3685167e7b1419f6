/* Materialization (stream–table duality), run inside the compaction pass on
 * the bytes compaction already holds: one read, two outputs. A range is
 * appended to a table only above the last offset the table's snapshot
 * records for its log, and the table commit (the compare-and-set of its
 * pointer, table/table_catalog.h) happens before compaction swaps the index,
 * so a crash anywhere adds no row twice. Threads: the compactor's worker.
 * The full design (exactly-once, typed and JSON tables, upsert, versions,
 * changelog, dead letters) is src/lake/README.md. */
#include "lake/materialize_int.h"

ls_status ls_table_target_init(ls_table_target_t *t, const ls_stream_t *s, const ls_policy_t *p,
                               struct ls_registry *registry, char *err, size_t errlen)
{
    t->stream = s;
    t->policy = p;
    t->registry = registry;
    ls_status st = ls_policy_table_name(p, s->ns, s->name, t->name, sizeof t->name, err, errlen);
    if (st == LS_OK) snprintf(t->prefix, sizeof t->prefix, "warehouse/%s/%s", s->ns, t->name);
    snprintf(t->base, sizeof t->base, "%s", t->name);
    t->version = 1;
    t->prev[0] = 0;
    return st;
}

static ls_status add_row(row_ctx_t *c, const ls_raw_record_t *r);

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
ls_status ls_mat_policy_spec(const ls_policy_t *p, const char *typed_schema, int last_column_id,
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
            st = ls_typed_column_find(shape, f->field, &id, type, sizeof type, why, whylen);
            if (st != LS_OK) break;
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
    return ls_mat_policy_spec(p, typed_schema, last_column_id, &spec, why, whylen);
}

ls_status ls_mat_open_table(ls_meta_t *meta, ls_objstore_t *os, const char *warehouse_uri,
                            const ls_table_target_t *tt, const table_shape_t *shape,
                            ls_ice_table_t **t, char *err, size_t errlen)
{
    bool create = shape != NULL;
    const ls_stream_t *s = tt->stream;
    char location[1200];
    ls_status st = ls_tcat_open(meta, os, s->ns, tt->name, tt->prefix, t, err, errlen);
    if (st == LS_OK && ls_ice_table_publish(*t) != LS_OK) /* a commit left unpublished */
        LS_WARN_RL("table", "table %s.%s: publishing its current metadata for path readers: %s",
                   s->ns, tt->name, ls_ice_table_error(*t));
    if (st == LS_OK && ls_ice_table_format_version(*t) < tt->policy->format_version)
        ls_ice_table_upgrade(*t, tt->policy->format_version); /* lands with the next commit */
    else if (st == LS_OK && ls_ice_table_format_version(*t) > tt->policy->format_version)
        LS_WARN_RL("table",
                   "table %s.%s is at format version %d; %s=%d cannot lower it (Iceberg tables "
                   "never go back): it stays at %d",
                   s->ns, tt->name, ls_ice_table_format_version(*t),
                   ls_policy_key(LS_POLICY_FORMAT_VERSION), tt->policy->format_version,
                   ls_ice_table_format_version(*t));
    if (st != LS_ENOTFOUND || !create) return st;
    snprintf(location, sizeof location, "%s/%s", warehouse_uri, tt->prefix);
    ls_ice_spec_t spec;
    char why[400];
    st = ls_mat_policy_spec(tt->policy,
                            shape->schema_id || shape->key_schema_id ? shape->schema_json : NULL,
                            shape->last_column_id, &spec, why, sizeof why);
    if (st != LS_OK) {
        snprintf(err, errlen, "%s '%s' cannot be applied to table %s.%s: %s",
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
    char fv[8];
    snprintf(fv, sizeof fv, "%d", tt->policy->format_version);
    props[np++] = LS_ICE_FORMAT_VERSION_PROP, props[np++] = fv;
    if (shape->schema_id) props[np++] = TYPED_SCHEMA_ID_KEY, props[np++] = shape->schema_id;
    if (shape->key_schema_id) props[np++] = KEY_SCHEMA_ID_KEY, props[np++] = shape->key_schema_id;
    for (size_t i = 0; shape->extra && shape->extra[i] && np + 2 < sizeof props / sizeof *props;
         i += 2)
        props[np++] = shape->extra[i], props[np++] = shape->extra[i + 1];
    st = ls_tcat_create(meta, os, s->ns, tt->name, tt->prefix, location, shape->schema_json,
                        shape->last_column_id, &spec, props, t, err, errlen);
    if (st == LS_EEXISTS) /* created concurrently: load it */
        st = ls_tcat_open(meta, os, s->ns, tt->name, tt->prefix, t, err, errlen);
    else if (st == LS_OK)
        LS_INFO("table", "created Iceberg table %s.%s for stream %s/%s at %s", s->ns, tt->name,
                s->ns, s->name, location);
    return st;
}

ls_status ls_mat_side_target(const ls_table_target_t *tt, const char *suffix, side_t *sd, char *err,
                             size_t errlen)
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
        snprintf(err, errlen, "table %s: its side table %s%s is longer than 249 characters",
                 tt->base, tt->base, suffix);
        return LS_EINVAL;
    }
    snprintf(sd->tt.prefix, sizeof sd->tt.prefix, "warehouse/%s/%s", tt->stream->ns, sd->tt.name);
    snprintf(sd->tt.base, sizeof sd->tt.base, "%s", sd->tt.name);
    sd->tt.version = 1;
    sd->tt.prev[0] = 0;
    return LS_OK;
}

void ls_mat_last_offset_key(char *out, size_t cap, int64_t log_id)
{
    snprintf(out, cap, "lakestream.log.%016llx.last-offset", (unsigned long long)log_id);
}

/* The last offset of log_id that tt's own table holds (-1: none). */
ls_status ls_mat_table_last_offset(ls_meta_t *meta, ls_objstore_t *os, const ls_table_target_t *tt,
                                   int64_t log_id, int64_t *out, char *err, size_t errlen)
{
    *out = -1;
    ls_ice_table_t *t = NULL;
    ls_status st = ls_mat_open_table(meta, os, NULL, tt, NULL, &t, err, errlen);
    if (st == LS_ENOTFOUND) return LS_OK;
    if (st != LS_OK) return st;
    char key[80];
    ls_mat_last_offset_key(key, sizeof key, log_id);
    const char *done = ls_ice_table_summary(t, key);
    if (done) *out = strtoll(done, NULL, 10);
    ls_ice_table_free(t);
    return LS_OK;
}

mat_log_t *ls_mat_batch_log(ls_mat_batch_t *b, int64_t log_id)
{
    for (size_t i = 0; i < b->nlogs; i++)
        if (b->logs[i].log_id == log_id) return &b->logs[i];
    if (b->nlogs == b->caplogs) {
        b->caplogs = b->caplogs ? b->caplogs * 2 : 16;
        b->logs = ls_realloc(b->logs, b->caplogs * sizeof *b->logs);
    }
    mat_log_t *l = &b->logs[b->nlogs++];
    *l = (mat_log_t){
        .log_id = log_id, .done = ls_mat_version_done(&b->preds, b->t, log_id), .last = -1};
    return l;
}

/* Opens the data files of b's table over the Parquet fields of its shape. */
ls_status ls_mat_open_files(ls_mat_batch_t *b, char *err, size_t errlen)
{
    size_t n;
    const ls_pq_field_t *f =
        b->shape ? ls_typed_parquet_fields(b->shape, &n) : ls_raw_parquet_fields(&n);
    char ferr[256];
    b->files = ls_data_files_new(b->t, f, n, &b->opts, (size_t)b->tt->policy->target_file_bytes,
                                 ferr, sizeof ferr);
    if (!b->files) {
        snprintf(err, errlen, "opening data files: %s", ferr);
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
ls_status ls_mat_value_schema(ls_mat_batch_t *b, int32_t id, ls_sr_schema_t **out, char *err,
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
const ls_avro_node_t *ls_mat_schema_root(const ls_sr_schema_t *sc, const ls_avro_view_t *pv)
{
    return pv                       ? ls_avro_view_root(pv)
           : sc->type == LS_SR_AVRO ? ls_avro_root(sc->avro)
                                    : ls_avro_view_root(sc->view);
}

/* The Avro datum of d's payload of schema sc: the payload itself (Avro), or
 * the JSON instance (the Protobuf message of view pv) transcoded into
 * *tmp. LS_ECORRUPT with the reason in why when it does not transcode. */
ls_status ls_mat_payload_datum(const ls_sr_schema_t *sc, const ls_avro_view_t *pv,
                               ls_typed_datum_t *d, ls_buf_t *tmp, char *why, size_t whylen)
{
    if (sc->type == LS_SR_AVRO) return LS_OK;
    if (ls_avro_view_encode(pv ? pv : sc->view, d->datum, d->len, tmp, why, whylen) != 0)
        return LS_ECORRUPT;
    d->datum = tmp->data;
    d->len = tmp->len;
    return LS_OK;
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
void ls_mat_note_id(int32_t **ids, size_t *n, bool *changed, int32_t id)
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

void ls_mat_clear_readers(ls_mat_batch_t *b)
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
 * it is fixed when the table is created (src/lake/README.md). */
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
    ls_status st = ls_mat_policy_spec(tt->policy, schema, last, &want, why, sizeof why);
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
                            char *err, size_t errlen)
{
    ls_table_target_t vt;
    ls_ice_table_t *cur = NULL;
    ls_status st = ls_mat_resolve_version(meta, os, tt, &vt, &cur, err, errlen);
    if (st != LS_OK || !cur) return st; /* no table yet: created with the policy's spec */
    vt.policy = tt->policy;
    st = spec_check(&vt, cur, tt->policy->value_typed || tt->policy->key_typed, err, errlen);
    ls_ice_table_free(cur);
    return st;
}

static ls_status side_begin(ls_mat_batch_t *b, const char *suffix, side_t **out, char *err,
                            size_t errlen)
{
    side_t *sd = *out = LS_NEW(side_t);
    ls_status st = ls_mat_side_target(b->tt, suffix, sd, err, errlen);
    if (st == LS_OK)
        st = ls_mat_begin(b->meta, b->os, b->warehouse_uri, &sd->tt, &sd->b, err, errlen);
    return st;
}

/* Creates b's version (not there yet) from what the version before it
 * recorded when it was continued: the Iceberg schema, the schema ids that
 * started it, and why (src/lake/README.md). */
static ls_status create_version(ls_mat_batch_t *b, char *err, size_t errlen)
{
    const ls_ice_table_t *pt = b->preds.v[0];
    const char *schema = ls_ice_table_summary(pt, CONT_SCHEMA_KEY);
    const char *last = ls_ice_table_summary(pt, CONT_LAST_COLUMN_KEY);
    const char *vid = ls_ice_table_summary(pt, CONT_VID_KEY);
    const char *kid = ls_ice_table_summary(pt, CONT_KID_KEY);
    const char *why = ls_ice_table_summary(pt, CONT_REASON_KEY);
    if (!schema || !last) {
        snprintf(err, errlen, "table %s.%s continues as %s but records no schema for it (%s)",
                 b->tt->stream->ns, b->vt.prev, b->vt.name, CONT_SCHEMA_KEY);
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
    ls_status st =
        ls_mat_open_table(b->meta, b->os, b->warehouse_uri, b->tt, &ts, &b->t, err, errlen);
    if (st == LS_OK)
        LS_INFO("table", "table %s.%s is version %d of table %s, continuing %s: %s",
                b->tt->stream->ns, b->vt.name, b->vt.version, b->vt.base, b->vt.prev,
                why ? why : "?");
    return st;
}

ls_status ls_mat_begin(ls_meta_t *meta, ls_objstore_t *os, const char *warehouse_uri,
                       const ls_table_target_t *tt, ls_mat_batch_t **out, char *err, size_t errlen)
{
    *out = NULL;
    const char *codec = tt->policy->value[LS_POLICY_COMPRESSION];
    int c = ls_pq_codec_parse(codec);
    if (c < 0) {
        snprintf(err, errlen, "%s: unknown codec '%s'", ls_policy_key(LS_POLICY_COMPRESSION),
                 codec);
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
    st = ls_mat_resolve_version(meta, os, tt, &b->vt, &cur, err, errlen);
    if (st == LS_OK) st = ls_mat_load_preds(meta, os, &b->vt, cur, &b->preds, err, errlen);
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
        st =
            ls_mat_open_table(meta, os, warehouse_uri, tt, typed ? NULL : &raw, &b->t, err, errlen);
        if (typed && st == LS_ENOTFOUND) {
            *out = b;
            return LS_OK;
        }
    }
    if (st == LS_OK && typed) {
        const char *id = ls_ice_table_summary(b->t, TYPED_SCHEMA_ID_KEY);
        if (!id && tt->policy->value_typed) {
            snprintf(err, errlen,
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
                snprintf(err, errlen, "table %s: %s", tt->name, why);
                st = LS_EINVAL;
            } else if (ls_typed_raw_value(b->shape) == tt->policy->value_typed) {
                snprintf(err, errlen,
                         "table %s was created with %s values, and %s is %s now (a new table "
                         "name starts a new table)",
                         tt->name, tt->policy->value_typed ? "raw" : "typed",
                         ls_policy_key(LS_POLICY_VALUE_FORMAT),
                         tt->policy->value[LS_POLICY_VALUE_FORMAT]);
                st = LS_EINVAL;
            }
            bool json_table = id && !strcmp(id, JSON_SCHEMA_ID);
            if (st == LS_OK && json_table != tt->policy->value_json) {
                snprintf(err, errlen,
                         "table %s was created with %s values, and %s is %s now (a new table "
                         "name starts a new table)",
                         tt->name, json_table ? "json" : "schema-registry",
                         ls_policy_key(LS_POLICY_VALUE_FORMAT),
                         tt->policy->value[LS_POLICY_VALUE_FORMAT]);
                st = LS_EINVAL;
            }
            if (st == LS_OK && json_table)
                b->jschema = ls_json_infer_from_iceberg(ls_typed_iceberg_schema_json(b->shape));
            if (st == LS_OK) st = pk_check(b, err, errlen);
            if (!json_table) {
                parse_ids(&b->ids, &b->nids, ls_ice_table_summary(b->t, TYPED_SCHEMA_IDS_KEY));
                if (!b->nids && id) /* a table from before the list */
                    parse_ids(&b->ids, &b->nids, id);
            }
            parse_ids(&b->kids, &b->nkids, ls_ice_table_summary(b->t, KEY_SCHEMA_IDS_KEY));
        }
    }
    if (st == LS_OK) st = spec_check(tt, b->t, typed, err, errlen);
    if (st == LS_OK) st = ls_mat_open_files(b, err, errlen);
    if (st != LS_OK) {
        ls_mat_free(b);
        return st;
    }
    *out = b;
    return LS_OK;
}

ls_status ls_mat_write_row(row_ctx_t *c, const ls_raw_record_t *r)
{
    ls_mat_batch_t *b = c->b;
    if (!b->tt->policy->value_typed && !b->tt->policy->key_typed)
        return ls_data_files_add_raw(b->files, r);
    ls_status st = b->tt->policy->value_json ? ls_mat_json_row(c, r) : ls_mat_typed_row(c, r);
    return st == LS_ECORRUPT ? ls_mat_bad_record(c, r) : st;
}

static ls_status add_row(row_ctx_t *c, const ls_raw_record_t *r)
{
    ls_mat_batch_t *b = c->b;
    if (!b->tt->policy->upsert) return ls_mat_write_row(c, r);
    if (r->key_len < 0) {
        snprintf(c->err, sizeof c->err,
                 "record at offset %lld has no key: an upsert table's rows are keyed "
                 "(lakestream.table.write.mode=upsert)",
                 (long long)r->offset);
        return ls_mat_bad_record(c, r);
    }
    ls_mat_up_put(&b->up, r, c->log_id, c->last_offset);
    return LS_OK;
}

int64_t ls_mat_done(ls_mat_batch_t *b, int64_t log_id)
{
    mat_log_t *l = ls_mat_batch_log(b, log_id);
    int64_t done = l->last > l->done ? l->last : l->done;
    if (b->cl) {
        int64_t cd = ls_mat_done(b->cl->b, log_id);
        if (cd < done) done = cd;
    }
    return done;
}

ls_status ls_mat_add(ls_mat_batch_t *b, const ls_mat_range_t *r, uint64_t *rows_out, char *err,
                     size_t errlen)
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
    mat_log_t *l = ls_mat_batch_log(b, r->log_id);
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
            snprintf(err, errlen, "entry at offset %lld does not decode (class %d)",
                     (long long)rc.base_offset, (int)rr);
            rc.st = LS_ECORRUPT;
        }
    }
    if (rc.st == LS_ELIMIT && b->sw.set) {
        /* a new table version takes this log from stop_at: this one holds
         * the rows below it (src/lake/README.md) */
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
            snprintf(err, errlen, "%s", rc.err);
        else
            snprintf(err, errlen, "writing data files: %s", ls_data_files_error(b->files));
    }
    if (rc.st != LS_OK) b->failed = rc.st;
    if (rc.st == LS_OK) {
        l->last = r->last_offset;
        b->rows += rc.rows;
        *rows_out = rc.rows;
    }
    return rc.st;
}

/* A format=delta table's Delta log follows every change of its Iceberg
 * table (table/delta_mirror.h): after each commit and rewrite, and in the
 * idle check and before the orphan sweep, which catch up a log a crash left
 * behind. */
static ls_status delta_follow(ls_ice_table_t *t, const ls_policy_t *p, char *err, size_t errlen)
{
    if (!p->delta) return LS_OK;
    size_t files;
    char why[900];
    ls_delta_opts_t o = {.file_grace_ms = p->file_delete_delay_ms,
                         .log_retention_ms = p->snapshot_retention_ms,
                         .checkpoint_interval = p->delta_checkpoint_interval};
    ls_status st = ls_delta_mirror(t, &o, ls_clock_wall_ms(), &files, why, sizeof why);
    if (st != LS_OK) snprintf(err, errlen, "writing the Delta log: %s", why);
    return st;
}

/* A format=delta table whose schema (as this commit would leave it) has a
 * column Delta cannot express is held back before its Iceberg commit, so
 * the two tables never part. */
static ls_status delta_check(ls_ice_table_t *t, const ls_policy_t *p, char *err, size_t errlen)
{
    if (!p->delta) return LS_OK;
    int last;
    char *ice = ls_ice_table_schema(t, &last), why[300];
    bool ntz;
    char *d = ice ? ls_delta_schema_of_iceberg(ice, &ntz, why, sizeof why) : NULL;
    ls_free(ice);
    if (d) {
        ls_free(d);
        return LS_OK;
    }
    snprintf(err, errlen, "%s=%s: the table's schema cannot be a Delta schema: %s",
             ls_policy_key(LS_POLICY_FORMAT), p->value[LS_POLICY_FORMAT], why);
    return LS_EINVAL;
}

ls_status ls_mat_commit(ls_mat_batch_t *b, uint64_t *rows, char *err, size_t errlen)
{
    *rows = 0;
    if (b->failed != LS_OK) {
        snprintf(err, errlen, "a range of this commit failed to materialize");
        return b->failed;
    }
    side_t *sides[] = {b->cl, b->dlq}; /* committed before the table (src/lake/README.md) */
    for (size_t i = 0; i < 2; i++) {
        uint64_t srows;
        ls_status st = sides[i] ? ls_mat_commit(sides[i]->b, &srows, err, errlen) : LS_OK;
        if (st != LS_OK) {
            char inner[400];
            snprintf(inner, sizeof inner, "%s", err);
            snprintf(err, errlen, "table %s: %s", sides[i]->tt.name, inner);
            return st;
        }
    }
    size_t nkv = 0;
    for (size_t i = 0; i < b->nlogs; i++)
        nkv += b->logs[i].last >= 0;
    if (!nkv && !b->sw.set) return LS_OK; /* nothing added */
    bool upsert = b->tt->policy->upsert;
    uint64_t made = b->rows;
    ls_status st = upsert ? ls_mat_upsert_rows(b, &made, err, errlen) : LS_OK;
    if (st != LS_OK) return st;
    if (!b->t) return LS_OK; /* a typed table no record has created yet */
    if ((st = delta_check(b->t, b->tt->policy, err, errlen)) != LS_OK) return st;
    const char *was = ls_ice_table_summary(b->t, SKIPPED_KEY);
    char skipped[24] = "";
    if (b->skipped || was) /* a running count, carried from snapshot to snapshot */
        snprintf(skipped, sizeof skipped, "%llu",
                 (unsigned long long)(b->skipped + (was ? strtoull(was, NULL, 10) : 0)));
    ls_file_cow_t cow = {0};
    if (upsert && (st = ls_mat_upsert_drops(b, &cow, err, errlen)) != LS_OK) return st;
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
            snprintf(err, errlen, "writing data files: %s", ls_data_files_error(files));
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
        ls_mat_last_offset_key(keys[k], sizeof keys[k], b->logs[i].log_id);
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
        snprintf(err, errlen, "committing snapshot: %s", ls_ice_table_error(b->t));
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

ls_status ls_mat_rewrite(ls_mat_batch_t *b, ls_file_rewrite_stats_t *stats, char *err,
                         size_t errlen)
{
    stats->more = false;
    side_t *sides[] = {b->cl, b->dlq};
    for (size_t i = 0; i < 2; i++) {
        ls_status st = sides[i] ? ls_mat_rewrite(sides[i]->b, stats, err, errlen) : LS_OK;
        if (st != LS_OK) return st;
    }
    if (!b->t) return LS_OK; /* a typed table no record has created yet */
    ls_file_rewrite_opts_t o = ls_mat_rewrite_opts(b);
    bool more = stats->more; /* the side tables' */
    uint64_t commits = stats->commits;
    ls_status st = ls_file_rewrite(b->t, &o, ls_clock_wall_ms(), stats, err, errlen);
    stats->more |= more;
    if (st == LS_OK && stats->commits > commits)
        st = delta_follow(b->t, b->tt->policy, err, errlen);
    return st;
}

void ls_mat_free(ls_mat_batch_t *b)
{
    if (!b) return;
    ls_data_files_free(b->files);
    ls_ice_table_free(b->t);
    ls_mat_json_free_view(b);
    json_decref(b->jschema);
    ls_typed_shape_free(b->shape);
    ls_mat_clear_readers(b);
    for (size_t i = 0; i < b->nretired; i++) {
        ls_data_files_free(b->retired[i].files);
        ls_typed_shape_free(b->retired[i].shape);
    }
    ls_free(b->retired);
    ls_free(b->ids);
    ls_free(b->kids);
    ls_mat_up_clear(&b->up);
    ls_mat_id_clear(&b->ids_pk);
    side_t *sides[] = {b->cl, b->dlq};
    for (size_t i = 0; i < 2; i++) {
        if (sides[i]) ls_mat_free(sides[i]->b);
        ls_free(sides[i]);
    }
    ls_free(b->logs);
    ls_mat_preds_free(&b->preds);
    ls_free(b->sw.schema);
    ls_free(b->sw.reason);
    ls_free(b);
}

bool ls_mat_switched(const ls_mat_batch_t *b) { return b->sw.set; }

bool ls_mat_stopped(ls_mat_batch_t *b, int64_t log_id)
{
    return ls_mat_batch_log(b, log_id)->stopped;
}

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
                               uint64_t *rows_out, char *err, size_t errlen)
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
        snprintf(err, errlen, "the range started new table versions 8 times; will retry");
        st = LS_EAGAIN;
    }
    return st;
}

/* ls_ice_table_expire of one table with its policy's retention and delay. */
static ls_status expire_one(ls_ice_table_t *t, const ls_policy_t *p, int64_t now_ms,
                            int64_t *next_ms, bool *committed, char *err, size_t errlen)
{
    ls_ice_table_set_snapshot_retention(t, p->snapshot_retention_ms,
                                        (int)p->snapshot_retention_min);
    ls_ice_table_set_file_grace(t, p->file_delete_delay_ms);
    int64_t next;
    ls_status st = ls_ice_table_expire(t, now_ms, committed, &next);
    if (st != LS_OK)
        snprintf(err, errlen, "%s", ls_ice_table_error(t));
    else if (next < *next_ms)
        *next_ms = next;
    return st == LS_OK ? delta_follow(t, p, err, errlen) : st;
}

ls_status ls_materialize_expire(ls_meta_t *meta, ls_objstore_t *os, const ls_table_target_t *tt,
                                int64_t now_ms, int64_t *next_ms, bool *committed, char *err,
                                size_t errlen)
{
    *next_ms = INT64_MAX;
    *committed = false;
    bool side_committed;
    static const char *const suffixes[] = {CHANGELOG_SUFFIX, DLQ_SUFFIX};
    bool has[] = {tt->policy->changelog,
                  tt->policy->error_dlq || ((tt->policy->value_typed || tt->policy->key_typed) &&
                                            tt->policy->evolution_dlq)};
    ls_status st = LS_OK;
    for (size_t i = 0; i < 2 && st == LS_OK; i++) {
        if (!has[i]) continue;
        side_t sd;
        ls_ice_table_t *t = NULL;
        if ((st = ls_mat_side_target(tt, suffixes[i], &sd, err, errlen)) == LS_OK &&
            (st = ls_mat_open_table(meta, os, NULL, &sd.tt, NULL, &t, err, errlen)) == LS_OK)
            st = expire_one(t, &sd.policy, now_ms, next_ms, &side_committed, err, errlen);
        ls_ice_table_free(t);
        if (st == LS_ENOTFOUND) st = LS_OK;
    }
    ls_table_target_t vt;
    ls_ice_table_t *cur = NULL;
    if (st == LS_OK &&
        (st = ls_mat_resolve_version(meta, os, tt, &vt, &cur, err, errlen)) == LS_OK && cur)
        st = expire_one(cur, tt->policy, now_ms, next_ms, committed, err, errlen);
    ls_ice_table_free(cur);
    return st;
}

ls_status ls_materialize_remove_orphans(ls_meta_t *meta, ls_objstore_t *os,
                                        const ls_table_target_t *tt, int64_t older_than_ms,
                                        uint64_t *deleted, char *err, size_t errlen)
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
        ls_status st = ls_mat_side_target(tt, suffixes[i], &sd, err, errlen);
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
        ls_status st = ls_mat_open_table(meta, os, NULL, &vt, NULL, &t, err, errlen);
        if (st == LS_ENOTFOUND) return LS_OK;
        if (st != LS_OK) return st;
        /* the Delta log follows the table first while it is format=delta;
         * once it is not, the log goes whole when all of it is older than
         * the grace (never piecemeal by age, which would leave gaps) */
        size_t dn = 0;
        if (tt->policy->delta) {
            st = delta_follow(t, tt->policy, err, errlen);
        } else {
            char why[600];
            st = ls_delta_log_drop(os, ls_ice_table_prefix(t), older_than_ms, &dn, why, sizeof why);
            if (st != LS_OK) snprintf(err, errlen, "deleting the Delta log: %s", why);
        }
        if (st == LS_OK) {
            st = ls_ice_table_remove_orphans(t, older_than_ms, LS_DELTA_LOG_DIR, &n);
            if (st != LS_OK) snprintf(err, errlen, "%s", ls_ice_table_error(t));
        }
        n += dn;
        *deleted += n;
        const char *next = ls_mat_versioned(tt) ? ls_ice_table_summary(t, CONT_AS_KEY) : NULL;
        if (st == LS_OK && next && strlen(next) < sizeof vt.name &&
            ls_tcat_name_ok(next, strlen(next)))
            ls_mat_target_rename(&vt, next);
        else
            next = NULL;
        ls_ice_table_free(t);
        if (st != LS_OK || !next) return st;
    }
    return LS_OK;
}
