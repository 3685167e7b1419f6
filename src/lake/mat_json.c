#include "lake/materialize_int.h"

/* value.format=json: drops the view and reader of the inferred columns. */
void ls_mat_json_free_view(ls_mat_batch_t *b)
{
    ls_typed_reader_free(b->jrd);
    ls_avro_view_free(b->jview);
    ls_jsonschema_free(b->jjs);
    b->jrd = NULL;
    b->jview = NULL;
    b->jjs = NULL;
}

/* value.format=json (src/lake/README.md): the view and reader of
 * b->jschema for the current shape (made from the view when there is none
 * yet: a new table). */
static ls_status json_view(ls_mat_batch_t *b, char *err, size_t errlen)
{
    ls_mat_json_free_view(b);
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
ls_status ls_mat_json_row(row_ctx_t *c, const ls_raw_record_t *r)
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
    ls_json_fit m = ls_json_infer(&next, r->value, (size_t)r->value_len, why, sizeof why);
    if (m == LS_JSON_NOT_OBJECT) {
        json_decref(next);
        snprintf(c->err, sizeof c->err, "record at offset %lld: the value is %s (%s=json)",
                 (long long)r->offset, why, ls_policy_key(LS_POLICY_VALUE_FORMAT));
        return LS_ECORRUPT;
    }
    ls_status st = LS_OK;
    if (!b->t) {                     /* the first record: the table takes its columns */
        if (m == LS_JSON_CONFLICT) { /* it does not fit even alone (a _raw property): _raw only */
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
        st = ls_mat_open_table(b->meta, b->os, b->warehouse_uri, b->tt, &ts, &b->t, c->err,
                               sizeof c->err);
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
        if (st == LS_OK) st = ls_mat_open_files(b, c->err, sizeof c->err);
        if (st != LS_OK) return st;
    } else if (m == LS_JSON_WIDENED) { /* new columns: evolve the table in this batch's commit */
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
            ls_mat_json_free_view(b); /* its reader fills the old shape */
            if ((st = ls_mat_evolve_table(b, ns, -1, false, c->err, sizeof c->err)) != LS_OK)
                return st;
        } else { /* cannot happen by the merge rules; the value falls back whole */
            json_decref(b->jschema);
            b->jschema = old;
            m = LS_JSON_CONFLICT;
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
    if (m == LS_JSON_CONFLICT) {
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
        st = ls_mat_row_writer(b, r, &v, NULL, &w, e, sizeof e);
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
