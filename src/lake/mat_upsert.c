#include "lake/materialize_int.h"

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
void ls_mat_up_put(up_map_t *m, const ls_raw_record_t *r, int64_t log_id, int64_t last_offset)
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

void ls_mat_id_clear(id_map_t *m)
{
    for (size_t i = 0; i < m->cap; i++)
        ls_free(m->slots[i].id);
    ls_free(m->slots);
    memset(m, 0, sizeof *m);
}

void ls_mat_up_clear(up_map_t *m)
{
    for (size_t i = 0; i < m->cap; i++)
        up_free(m->slots[i]);
    ls_free(m->slots);
    memset(m, 0, sizeof *m);
}

/* primary.key: the identity of r's key (a typed key: upsert tables have
 * keys) in out: the values of the primary key fields, decoded by the key's
 * schema into the table's current key column — so keys written by
 * different versions of the key schema have one identity. LS_ENOTFOUND: a
 * tombstone while no table exists (nothing to delete). Creates or evolves
 * the table as ls_mat_typed_row would. */
static ls_status pk_identity(row_ctx_t *c, const ls_raw_record_t *r, ls_buf_t *out)
{
    ls_mat_batch_t *b = c->b;
    const ls_policy_t *p = b->tt->policy;
    ls_typed_datum_t k = {0}, v = {0};
    int32_t kid = -1, vid = -1;
    char e[512];
    ls_status st;
    if (p->key_latest) {
        if ((st = ls_mat_latest_id(b, true, &kid, e, sizeof e)) != LS_OK) {
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
            if ((st = ls_mat_latest_id(b, false, &vid, e, sizeof e)) != LS_OK) {
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
    if ((st = ls_mat_proto_message(c, r, kid, true, p->key_latest, &k, &kpv, &khold)) != LS_OK)
        goto out;
    if (!b->t) {
        if (vid >= 0 && (st = ls_mat_proto_message(c, r, vid, false, p->value_latest, &v, &vpv,
                                                   &vhold)) != LS_OK)
            goto out;
        if ((st = ls_mat_create_typed(c, r, vid, kid, vpv, kpv)) != LS_OK) goto out;
    }
    const ls_sr_schema_t *ksc = NULL;
    if ((st = ls_mat_typed_reader(c, r, kid, true, kpv, &k.rd, &ksc)) != LS_OK) goto out;
    ls_buf_t kt; /* a JSON or Protobuf key transcoded to an Avro datum */
    ls_buf_init(&kt);
    char je[400];
    if (ls_mat_payload_datum(ksc, kpv, &k, &kt, je, sizeof je) != LS_OK) {
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
ls_status ls_mat_pk_collect(ls_mat_batch_t *b, char *err, size_t errlen)
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
            rc.rows++; /* ls_mat_bad_record uncounts it */
            rc.st = ls_mat_bad_record(&rc, &v[i]->r);
        }
    }
    ls_buf_free(&id);
    ls_free(v);
    if (rc.st != LS_OK) snprintf(err, errlen, "%s", rc.err[0] ? rc.err : "primary key");
    return rc.st;
}

/* Upsert: the rows of the batch's latest records (tombstones make none),
 * written into its data files; *rows counts them. With a primary key, the
 * latest record of each identity. */
ls_status ls_mat_upsert_rows(ls_mat_batch_t *b, uint64_t *rows, char *err, size_t errlen)
{
    row_ctx_t rc = {.b = b, .st = LS_OK};
    bool pk = b->tt->policy->npk > 0;
    if (pk && (rc.st = ls_mat_pk_collect(b, err, errlen)) != LS_OK) return rc.st;
    size_t cap = pk ? b->ids_pk.cap : b->up.cap;
    for (size_t i = 0; i < cap && rc.st == LS_OK; i++) {
        const up_rec_t *e = pk ? b->ids_pk.slots[i].rec : b->up.slots[i];
        if (!e || e->r.value_len < 0) continue;
        rc.rows++;
        rc.log_id = e->log_id;
        rc.last_offset = e->last_offset;
        rc.st = ls_mat_write_row(&rc, &e->r);
    }
    if (rc.st != LS_OK)
        snprintf(err, errlen, "%s",
                 rc.err[0]  ? rc.err
                 : b->files ? ls_data_files_error(b->files)
                            : "no table");
    *rows = rc.rows;
    return rc.st;
}

/* How b's table rewrites data files (table/file_rewrite.h): its row shape,
 * codec, target size and rewrite.min.files. */
ls_file_rewrite_opts_t ls_mat_rewrite_opts(const ls_mat_batch_t *b)
{
    size_t nf;
    const ls_pq_field_t *f =
        b->shape ? ls_typed_parquet_fields(b->shape, &nf) : ls_raw_parquet_fields(&nf);
    return (ls_file_rewrite_opts_t){.fields = f,
                                    .nfields = nf,
                                    .pq = &b->opts,
                                    .target_bytes = b->tt->policy->target_file_bytes,
                                    .min_files = (int)b->tt->policy->rewrite_min_files,
                                    .merge_on_read = b->tt->policy->merge_on_read};
}

/* Upsert: the live files holding rows of the batch's keys, copied without
 * them (src/lake/README.md). */
ls_status ls_mat_upsert_drops(ls_mat_batch_t *b, ls_file_cow_t *cow, char *err, size_t errlen)
{
    ls_file_rewrite_opts_t o = ls_mat_rewrite_opts(b);
    size_t npk = b->shape ? ls_typed_pk_count(b->shape) : 0;
    if (!npk)
        return ls_file_drop_rows(b->t, &o, b->shape ? "_kafka_key" : "key", up_has, &b->up, cow,
                                 err, errlen);
    char paths[LS_TYPED_MAX_PK][200];
    const char *cols[LS_TYPED_MAX_PK];
    for (size_t i = 0; i < npk; i++) {
        snprintf(paths[i], sizeof paths[i], "%s.%.150s", LS_TYPED_KEY_COLUMN,
                 ls_typed_pk_name(b->shape, i));
        cols[i] = paths[i];
    }
    return ls_file_drop_rows_ident(b->t, &o, cols, npk, id_has, &b->ids_pk, cow, err, errlen);
}
