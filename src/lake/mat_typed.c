#include "lake/materialize_int.h"

/* Evolves b's table to shape ns (taken) for value schema id: the schema
 * goes into the table object (committed with the batch), the data files
 * written so far are kept for the commit, new ones open over ns. */
ls_status ls_mat_evolve_table(ls_mat_batch_t *b, ls_typed_shape_t *ns, int32_t id, bool key,
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
    ls_mat_clear_readers(b); /* they fill the old shape's columns */
    if (id < 0)              /* value.format=json: new inferred columns */
        LS_INFO("table", "table %s.%s: schema evolved to Iceberg schema %d for new JSON properties",
                b->tt->stream->ns, b->tt->name, sid);
    else
        LS_INFO("table", "table %s.%s: schema evolved to Iceberg schema %d for %s schema id %d",
                b->tt->stream->ns, b->tt->name, sid, key ? "key" : "value", (int)id);
    return ls_mat_open_files(b, err, errlen);
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
ls_status ls_mat_latest_id(ls_mat_batch_t *b, bool key, int32_t *id, char *err, size_t errlen)
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
 * ls_mat_value_schema, or the evolution's. */
static ls_status reader_for(ls_mat_batch_t *b, int32_t id, bool key, const ls_avro_view_t *pv,
                            typed_reader_t **rdp, char *err, size_t errlen)
{
    for (size_t i = 0; i < b->nreaders; i++)
        if (b->readers[i].id == id && b->readers[i].key == key && b->readers[i].pv == pv)
            return *rdp = &b->readers[i], LS_OK;
    ls_sr_schema_t *sc;
    ls_status st = ls_mat_value_schema(b, id, &sc, err, errlen);
    if (st != LS_OK) return st;
    const ls_avro_node_t *root = ls_mat_schema_root(sc, pv);
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
        if (st == LS_OK && (st = ls_mat_evolve_table(b, ns, id, key, err, errlen)) != LS_OK) {
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
    ls_status st = vid >= 0 ? ls_mat_value_schema(b, vid, &vs, e, elen) : LS_OK;
    if (st == LS_OK && kid >= 0) st = ls_mat_value_schema(b, kid, &ks, e, elen);
    if (st == LS_OK) {
        char names[LS_POLICY_MAX_PK][LS_POLICY_MAX_PK_NAME];
        const char *pk[LS_POLICY_MAX_PK];
        ls_policy_primary_key(b->tt->policy, names);
        for (int i = 0; i < b->tt->policy->npk; i++)
            pk[i] = names[i];
        *out = ls_typed_shape_new_pk(vs ? ls_mat_schema_root(vs, vpv) : NULL,
                                     ks ? ls_mat_schema_root(ks, kpv) : NULL, pk,
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

ls_status ls_mat_create_typed(row_ctx_t *c, const ls_raw_record_t *r, int32_t vid, int32_t kid,
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
    st = ls_mat_open_table(b->meta, b->os, b->warehouse_uri, b->tt, &ts, &b->t, c->err,
                           sizeof c->err);
    const char *prop = vid >= 0 ? TYPED_SCHEMA_ID_KEY : KEY_SCHEMA_ID_KEY;
    const char *tid = st == LS_OK ? ls_ice_table_summary(b->t, prop) : NULL;
    const char *want = vid >= 0 ? sid : kid >= 0 ? skid : NULL;
    if (st == LS_OK && (want ? !tid || strcmp(tid, want) != 0 : tid != NULL)) {
        /* created concurrently from another record: start over from its schema */
        snprintf(c->err, sizeof c->err, "table %s was created meanwhile; retrying", b->tt->name);
        st = LS_EAGAIN;
    }
    return st == LS_OK ? ls_mat_open_files(b, c->err, sizeof c->err) : st;
}

/* The reader of schema id (a key's when key) for b's current shape, or the
 * record's reason (c->err, c->incompatible) when the table cannot evolve
 * to it. */
ls_status ls_mat_typed_reader(row_ctx_t *c, const ls_raw_record_t *r, int32_t id, bool key,
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
ls_status ls_mat_proto_message(row_ctx_t *c, const ls_raw_record_t *r, int32_t id, bool key,
                               bool latest, ls_typed_datum_t *d, const ls_avro_view_t **pv,
                               ls_sr_schema_t **hold)
{
    for (size_t i = 0; i < c->b->nreaders; i++) /* known not Protobuf: no lookup */
        if (c->b->readers[i].id == id && c->b->readers[i].key == key &&
            c->b->readers[i].schema->type != LS_SR_PROTOBUF)
            return LS_OK;
    ls_sr_schema_t *sc;
    char e[512];
    ls_status st = ls_mat_value_schema(c->b, id, &sc, e, sizeof e);
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
 * at r (src/lake/README.md). Columns that do not map follow error.handling too. */
ls_status ls_mat_new_version(row_ctx_t *c, const ls_raw_record_t *r, int32_t vid, int32_t kid,
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
    st = ls_mat_policy_spec(b->tt->policy, ls_typed_iceberg_schema_json(ns),
                            ls_typed_last_column_id(ns), &spec, why, sizeof why);
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
ls_status ls_mat_row_writer(ls_mat_batch_t *b, const ls_raw_record_t *r, const ls_typed_datum_t *v,
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
ls_status ls_mat_typed_row(row_ctx_t *c, const ls_raw_record_t *r)
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
             (st = ls_mat_latest_id(b, false, &vid, e, sizeof e)) != LS_OK) ||
            (keyed && p->key_latest &&
             (st = ls_mat_latest_id(b, true, &kid, e, sizeof e)) != LS_OK)) {
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
    if ((p->value_typed && (st = ls_mat_proto_message(c, r, vid, false, p->value_latest, &v, &vpv,
                                                      &vhold)) != LS_OK) ||
        (keyed &&
         (st = ls_mat_proto_message(c, r, kid, true, p->key_latest, &k, &kpv, &khold)) != LS_OK))
        goto out;
    if (!b->t && (st = ls_mat_create_typed(c, r, vid, kid, vpv, kpv)) != LS_OK) goto out;
    /* a key schema may evolve the table, which rebuilds every reader: the
     * value's is taken after it */
    const ls_sr_schema_t *vsc = NULL, *ksc = NULL;
    if (keyed && (st = ls_mat_typed_reader(c, r, kid, true, kpv, &k.rd, &ksc)) != LS_OK) goto out;
    const ls_typed_shape_t *before = b->shape;
    if (p->value_typed && (st = ls_mat_typed_reader(c, r, vid, false, vpv, &v.rd, &vsc)) != LS_OK)
        goto out;
    if (keyed && b->shape != before &&
        (st = ls_mat_typed_reader(c, r, kid, true, kpv, &k.rd, &ksc)) != LS_OK)
        goto out;
    char e[512], je[400];
    ls_buf_t vt, kt; /* JSON and Protobuf values and keys transcoded to Avro datums */
    ls_buf_init(&vt);
    ls_buf_init(&kt);
    ls_pq_writer_t *w = NULL;
    if (p->value_typed && ls_mat_payload_datum(vsc, vpv, &v, &vt, je, sizeof je) != LS_OK) {
        snprintf(e, sizeof e, "the value: %s", je);
        st = LS_ECORRUPT;
    } else if (keyed && ls_mat_payload_datum(ksc, kpv, &k, &kt, je, sizeof je) != LS_OK) {
        snprintf(e, sizeof e, "the key: %s", je);
        st = LS_ECORRUPT;
    } else if ((st = ls_mat_row_writer(b, r, p->value_typed ? &v : NULL, keyed ? &k : NULL, &w, e,
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
    if (p->value_typed) ls_mat_note_id(&b->ids, &b->nids, &b->ids_changed, vid);
    if (keyed) ls_mat_note_id(&b->kids, &b->nkids, &b->kids_changed, kid);
    st = ls_data_files_row_done(b->files, st);
out:
    if (st == LS_ECORRUPT && c->incompatible && p->evolution_new_table)
        st = ls_mat_new_version(c, r, p->value_typed ? vid : -1, keyed ? kid : -1, vpv, kpv);
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
    mat_log_t *l = ls_mat_batch_log(d, c->log_id);
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
ls_status ls_mat_bad_record(row_ctx_t *c, const ls_raw_record_t *r)
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
