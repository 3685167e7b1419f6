/* Typed table rows: a datum shredded into the Parquet columns of a shape
 * (two walks: the first only decodes, so a corrupt datum writes nothing;
 * the second puts the values), and the partition source values of a row.
 * The shape and the reader are in iceberg_typed_int.h; the mapping,
 * layout and evolution in iceberg_typed.c. */
#include "table/iceberg_typed_int.h"

/* ------------------------------------------------------------------ write */

int ls_typed_unframe(const uint8_t *value, int64_t len, int32_t *schema_id, const uint8_t **datum,
                     size_t *datum_len)
{
    if (!value || len < 5 || value[0] != 0) return -1;
    *schema_id = (int32_t)((uint32_t)value[1] << 24 | (uint32_t)value[2] << 16 |
                           (uint32_t)value[3] << 8 | value[4]);
    *datum = value + 5;
    *datum_len = (size_t)len - 5;
    return 0;
}

typedef struct rd {
    ls_avro_rd_t in;   /* registry/avro.h: the datum's bytes */
    ls_pq_writer_t *w; /* NULL: decode only */
    ls_buf_t *ident;   /* per primary key field: its identity bytes (NULL: not wanted) */
    const int *pids;   /* columns whose values are wanted (partition sources) */
    int npids;
    ls_ice_sval_t *pvals; /* their values, per pids[i] */
} rd_t;

/* Null entries for every leaf under c at definition level def. */
static void put_nulls(rd_t *r, const col_t *c, int rep, int def)
{
    if (r->w)
        for (int k = c->lo; k < c->hi; k++)
            ls_pq_put_null(r->w, k, rep, def);
}

static bool shred(rd_t *r, const rnode_t *n, int rep);

/* A value that may be a union with null: reads the branch, then the value. */
static bool shred_value(rd_t *r, const rnode_t *n, int rep)
{
    if (n->member) { /* a union of several types: the tag, the chosen member, nulls */
        int64_t br;
        if (!ls_avro_rd_long(&r->in, &br)) return false;
        if (br < 0 || (size_t)br >= n->nkids) {
            r->in.why = "union branch index out of range";
            return false;
        }
        const col_t *c = n->col;
        if (br == n->null_branch) {
            put_nulls(r, c, rep, c->def - 1);
            return true;
        }
        int m = n->member[br];
        if (r->w) ls_pq_put_i32(r->w, c->kids[0]->leaf, rep, m);
        for (size_t k = 1; k < c->nkids; k++)
            if ((int)k != m + 1) put_nulls(r, c->kids[k], rep, c->def);
        return shred(r, n->kids[br], rep);
    }
    if (n->null_branch >= 0) {
        int64_t br;
        if (!ls_avro_rd_long(&r->in, &br)) return false;
        if (br < 0 || br > 1) {
            r->in.why = "union branch index out of range";
            return false;
        }
        if (br == n->null_branch) {
            put_nulls(r, n->col, rep, n->col->def - 1);
            return true;
        }
    }
    return shred(r, n, rep);
}

/* A primitive value of kind n->dec into its column (widened to the
 * column's type when the writer's is narrower). */
/* The identity bytes of a primary key field's value (file_rewrite.h). */
static void capture(rd_t *r, const rnode_t *n, int64_t l, const uint8_t *p, size_t len)
{
    for (int i = 0; i < r->npids; i++) {
        if (r->pids[i] != n->col->id) continue;
        ls_ice_sval_t *v = &r->pvals[i];
        v->null = false;
        v->l = l;
        v->p = p;
        v->n = len;
        if (n->col->type == C_UUID && len == 16) memcpy(v->u, p, 16); /* p may be a local */
    }
    if (!r->ident || n->col->pk <= 0) return;
    ls_buf_t *b = &r->ident[n->col->pk - 1];
    b->len = 0;
    int flen;
    switch (ls_typed_col_pq(n->col, &flen)) {
    case LS_PQ_BOOLEAN: ls_file_ident_bool(b, l != 0); return;
    case LS_PQ_BYTE_ARRAY:
    case LS_PQ_FIXED_LEN_BYTE_ARRAY: ls_file_ident_bytes(b, p, len); return;
    default: ls_file_ident_long(b, l); return;
    }
}

/* A float or double partition source's value (widened: exact). */
static void capture_float(rd_t *r, const rnode_t *n, double d)
{
    for (int i = 0; i < r->npids; i++)
        if (r->pids[i] == n->col->id) r->pvals[i].null = false, r->pvals[i].f = d;
}

/* A decimal's unscaled value from its two's-complement big-endian bytes
 * p[0..len) (empty: 0), checked to have at most prec digits (Avro
 * specification: a value beyond the precision is invalid, never rounded). */
static bool decimal_value(rd_t *r, const uint8_t *p, size_t len, int prec, __int128 *out)
{
    bool neg = len && (p[0] & 0x80);
    size_t k = 0; /* sign-extension bytes beyond 16 carry nothing */
    while (len - k > 16 && p[k] == (neg ? 0xff : 0x00))
        k++;
    if (len - k > 16 || (len - k == 16 && ((p[k] & 0x80) != 0) != neg)) {
        r->in.why = "a decimal wider than 128 bits";
        return false;
    }
    unsigned __int128 u = neg ? ~(unsigned __int128)0 : 0;
    for (; k < len; k++)
        u = u << 8 | p[k];
    __int128 v = (__int128)u;
    unsigned __int128 mag = v < 0 ? -(unsigned __int128)u : u, limit = 1;
    for (int i = 0; i < prec; i++)
        limit *= 10;
    if (mag >= limit) {
        r->in.why = "a decimal with more digits than its precision";
        return false;
    }
    *out = v;
    return true;
}

static int hexval(uint8_t ch)
{
    return ch >= '0' && ch <= '9'   ? ch - '0'
           : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
           : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10
                                    : -1;
}

/* The 16 bytes of a UUID's text form (RFC 9562: 8-4-4-4-12 hex digits). */
static bool uuid_parse(const uint8_t *p, size_t len, uint8_t out[16])
{
    if (len != 36) return false;
    int o = 0;
    for (size_t i = 0; i < 36;) {
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (p[i++] != '-') return false;
            continue;
        }
        int hi = hexval(p[i]), lo = hexval(p[i + 1]);
        if (hi < 0 || lo < 0) return false;
        out[o++] = (uint8_t)(hi << 4 | lo);
        i += 2;
    }
    return true;
}

static bool shred_prim(rd_t *r, const rnode_t *n, int rep)
{
    ls_pq_writer_t *w = r->w;
    int col = n->col->leaf, flen;
    ls_pq_type pt = ls_typed_col_pq(n->col, &flen);
    int64_t l;
    const uint8_t *p;
    size_t len;
    switch (n->dec) {
    case D_BOOLEAN: {
        uint8_t b;
        if (!ls_avro_rd_fixed(&r->in, &b, 1)) return false;
        if (b > 1) {
            r->in.why = "boolean byte not 0 or 1";
            return false;
        }
        if (w) ls_pq_put_bool(w, col, rep, b);
        capture(r, n, b, NULL, 0);
        return true;
    }
    case D_INT:
        if (!ls_avro_rd_long(&r->in, &l)) return false;
        if (l < INT32_MIN || l > INT32_MAX) {
            r->in.why = "int out of range";
            return false;
        }
        if (w && pt == LS_PQ_INT64)
            ls_pq_put_i64(w, col, rep, l);
        else if (w)
            ls_pq_put_i32(w, col, rep, (int32_t)l);
        capture(r, n, l, NULL, 0);
        return true;
    case D_LONG:
    case D_MILLIS:
        if (!ls_avro_rd_long(&r->in, &l)) return false;
        if (w) ls_pq_put_i64(w, col, rep, n->dec == D_LONG ? l : l * 1000);
        capture(r, n, n->dec == D_LONG ? l : l * 1000, NULL, 0);
        return true;
    case D_FLOAT: {
        float f;
        if (!ls_avro_rd_fixed(&r->in, &f, 4)) /* Avro floats are little-endian, as this host */
            return false;
        if (w && pt == LS_PQ_DOUBLE)
            ls_pq_put_double(w, col, rep, (double)f);
        else if (w)
            ls_pq_put_float(w, col, rep, f);
        capture_float(r, n, (double)f);
        return true;
    }
    case D_DOUBLE: {
        double d;
        if (!ls_avro_rd_fixed(&r->in, &d, 8)) return false;
        if (w) ls_pq_put_double(w, col, rep, d);
        capture_float(r, n, d);
        return true;
    }
    case D_BYTES:
        if (!ls_avro_rd_bytes(&r->in, &p, &len)) return false;
        if (w) ls_pq_put_bytes(w, col, rep, p, len);
        capture(r, n, 0, p, len);
        return true;
    case D_ENUM:
        if (!ls_avro_rd_long(&r->in, &l)) return false;
        if (l < 0 || (size_t)l >= n->avro->nsymbols) {
            r->in.why = "enum index out of range";
            return false;
        }
        if (w) ls_pq_put_bytes(w, col, rep, n->avro->symbols[l], strlen(n->avro->symbols[l]));
        capture(r, n, 0, (const uint8_t *)n->avro->symbols[l], strlen(n->avro->symbols[l]));
        return true;
    case D_TIME_MILLIS:
    case D_TIME_MICROS: { /* a time of day (Avro spec): [0, 24 h), what readers can show */
        int64_t per_day = n->dec == D_TIME_MILLIS ? 86400000LL : 86400000000LL;
        if (!ls_avro_rd_long(&r->in, &l)) return false;
        if (l < 0 || l >= per_day) {
            r->in.why = "a time of day outside [00:00, 24:00)";
            return false;
        }
        if (n->dec == D_TIME_MILLIS) l *= 1000;
        if (w) ls_pq_put_i64(w, col, rep, l);
        capture(r, n, l, NULL, 0);
        return true;
    }
    case D_DECIMAL: {
        __int128 v;
        if (n->avro->kind == LS_AVRO_FIXED) {
            p = r->in.p;
            len = (size_t)n->avro->size;
            if (!ls_avro_rd_fixed(&r->in, NULL, len)) return false;
        } else if (!ls_avro_rd_bytes(&r->in, &p, &len)) {
            return false;
        }
        if (!decimal_value(r, p, len, n->avro->precision, &v)) return false;
        if (w) ls_pq_put_decimal(w, col, rep, v);
        for (int i = 0; i < r->npids; i++)
            if (r->pids[i] == n->col->id) r->pvals[i].null = false, r->pvals[i].d = v;
        if (r->ident && n->col->pk > 0) {
            uint8_t be[16];
            for (int i = 0; i < flen; i++) /* as stored (ls_pq_put_decimal) */
                be[flen - 1 - i] = (uint8_t)(v >> (8 * i));
            capture(r, n, (int64_t)v, be, (size_t)flen);
        }
        return true;
    }
    case D_FIXED:
        p = r->in.p;
        len = (size_t)n->avro->size;
        if (!ls_avro_rd_fixed(&r->in, NULL, len)) return false;
        if (w) ls_pq_put_bytes(w, col, rep, p, len);
        capture(r, n, 0, p, len);
        return true;
    case D_UUID_TEXT: {
        uint8_t u[16];
        if (!ls_avro_rd_bytes(&r->in, &p, &len)) return false;
        if (!uuid_parse(p, len, u)) {
            r->in.why = "a uuid string that is not a UUID's text form";
            return false;
        }
        if (w) ls_pq_put_bytes(w, col, rep, u, 16);
        capture(r, n, 0, u, 16);
        return true;
    }
    }
    return false;
}

static bool shred(rd_t *r, const rnode_t *n, int rep)
{
    const col_t *c = n->col;
    switch (c->type) {
    case C_STRUCT:
        for (size_t i = 0; i < n->nkids; i++)
            if (!shred_value(r, n->kids[i], rep)) return false;
        for (size_t i = 0; i < n->nabsent; i++) /* optional: null at the struct's level */
            put_nulls(r, n->absent[i], rep, c->def);
        return true;
    case C_LIST:
    case C_MAP: {
        bool map = c->type == C_MAP;
        int64_t items = 0;
        for (;;) {
            int64_t count;
            if (!ls_avro_rd_block(&r->in, true, &count)) return false;
            if (count == 0) break;
            for (int64_t i = 0; i < count; i++, items++) {
                int rr = items == 0 ? rep : c->rep + 1;
                if (map) {
                    const uint8_t *k;
                    size_t kn;
                    if (!ls_avro_rd_bytes(&r->in, &k, &kn)) return false;
                    if (r->w) ls_pq_put_bytes(r->w, c->kids[0]->leaf, rr, k, kn);
                }
                if (!shred_value(r, n->kids[0], rr)) return false;
            }
        }
        if (items == 0) /* present, empty: every leaf at the list's own level */
            put_nulls(r, c, rep, c->def);
        return true;
    }
    default: return shred_prim(r, n, rep);
    }
}

ls_status ls_typed_write(const ls_typed_reader_t *rd, ls_pq_writer_t *w, const ls_raw_record_t *r,
                         const uint8_t *datum, size_t len, char *err, size_t errlen)
{
    ls_typed_datum_t v = {rd, datum, len};
    return ls_typed_write_kv(rd->shape, &v, NULL, w, r, err, errlen);
}

/* Decodes d without writing: LS_ECORRUPT with err saying where it stopped. */
static ls_status dry_run(const ls_typed_datum_t *d, const char *what, char *err, size_t errlen)
{
    rd_t dry = {{d->datum, d->datum + d->len, NULL}, NULL, NULL, NULL, 0, NULL};
    bool ok = d->rd->key ? shred_value(&dry, d->rd->root, 0) : shred(&dry, d->rd->root, 0);
    if (ok && dry.in.p == dry.in.end) return LS_OK;
    snprintf(err, errlen, "Avro %s datum does not match its schema: %s at byte %zu of %zu", what,
             dry.in.why ? dry.in.why : "bytes left over", (size_t)(dry.in.p - d->datum), d->len);
    return LS_ECORRUPT;
}

ls_status ls_typed_write_kv(const ls_typed_shape_t *s, const ls_typed_datum_t *value,
                            const ls_typed_datum_t *key, ls_pq_writer_t *w,
                            const ls_raw_record_t *r, char *err, size_t errlen)
{
    if ((value && (value->rd->shape != s || value->rd->key)) ||
        (key && (key->rd->shape != s || !key->rd->key)) || (!value && !s->raw_value)) {
        snprintf(err, errlen, "a reader of another shape, or no value for a typed value");
        return LS_EINVAL;
    }
    if (!key && s->key && s->key->required) {
        snprintf(err, errlen, "the table's key column %s is required: the record needs a key",
                 LS_TYPED_KEY_COLUMN);
        return LS_ECORRUPT;
    }
    ls_status st = value ? dry_run(value, "value", err, errlen) : LS_OK;
    if (st == LS_OK && key) st = dry_run(key, "key", err, errlen);
    if (st != LS_OK) return st;
    ls_pq_put_i32(w, M_PARTITION, 0, r->partition);
    ls_pq_put_i64(w, M_OFFSET, 0, r->offset);
    ls_pq_put_i64(w, M_TIMESTAMP, 0, r->timestamp_ms * 1000);
    if (r->key_len < 0)
        ls_pq_put_null(w, M_KEY, 0, 0);
    else
        ls_pq_put_bytes(w, M_KEY, 0, r->key, (size_t)r->key_len);
    ls_raw_put_headers(w, M_HKEY, M_HVALUE, r->headers, r->nheaders);
    if (s->raw_value && r->value_len < 0)
        ls_pq_put_null(w, M_VALUE, 0, 0);
    else if (s->raw_value)
        ls_pq_put_bytes(w, M_VALUE, 0, r->value, (size_t)r->value_len);
    if (s->key && key) {
        rd_t wet = {{key->datum, key->datum + key->len, NULL}, w, NULL, NULL, 0, NULL};
        shred_value(&wet, key->rd->root, 0);
    } else if (s->key) { /* no key, or one not decoded: a null key column */
        rd_t wet = {{NULL, NULL, NULL}, w, NULL, NULL, 0, NULL};
        put_nulls(&wet, s->key, 0, 0);
    }
    if (value) {
        rd_t wet = {{value->datum, value->datum + value->len, NULL}, w, NULL, NULL, 0, NULL};
        shred(&wet, value->rd->root, 0);
    }
    return ls_pq_end_row(w);
}

ls_status ls_typed_key_identity(const ls_typed_reader_t *krd, const uint8_t *datum, size_t len,
                                ls_buf_t *out, char *err, size_t errlen)
{
    const ls_typed_shape_t *s = krd->shape;
    if (!krd->key || !s->npk) {
        snprintf(err, errlen, "not a key reader of a table with a primary key");
        return LS_EINVAL;
    }
    ls_buf_t ids[LS_TYPED_MAX_PK];
    for (size_t i = 0; i < s->npk; i++)
        ls_buf_init(&ids[i]);
    rd_t r = {{datum, datum + len, NULL}, NULL, ids, NULL, 0, NULL};
    ls_status st = LS_OK;
    if (!shred_value(&r, krd->root, 0) || r.in.p != r.in.end) {
        snprintf(err, errlen, "Avro key datum does not match its schema: %s at byte %zu of %zu",
                 r.in.why ? r.in.why : "bytes left over", (size_t)(r.in.p - datum), len);
        st = LS_ECORRUPT;
    }
    out->len = 0;
    for (size_t i = 0; i < s->npk; i++) {
        if (st == LS_OK && !ids[i].len) { /* the writer lacks it: cannot be (walk), but be sure */
            snprintf(err, errlen, "the key has no value for primary key field %s", s->pk[i]->name);
            st = LS_ECORRUPT;
        }
        if (st == LS_OK) ls_buf_append(out, ids[i].data, ids[i].len);
        ls_buf_free(&ids[i]);
    }
    return st;
}

/* ------------------------------------------------- partition source values */

ls_status ls_typed_column_find(const ls_typed_shape_t *s, const char *path, int *id, char *type,
                               size_t typelen, char *why, size_t whylen)
{
    const col_t *c = s->root;
    const char *p = path;
    size_t kl = strlen(LS_TYPED_KEY_COLUMN);
    if (!strncmp(path, LS_TYPED_KEY_COLUMN, kl) && (!path[kl] || path[kl] == '.')) {
        if (!s->key) {
            snprintf(why, whylen, "%s: the table has no typed key column (key.format)", path);
            return LS_EINVAL;
        }
        c = s->key;
        p = path[kl] ? path + kl + 1 : path + kl;
    } else if (s->raw_value) {
        snprintf(why, whylen, "%s: the table's value is raw (value.format), it has no value fields",
                 path);
        return LS_EINVAL;
    }
    while (*p) {
        const char *dot = strchr(p, '.');
        size_t n = dot ? (size_t)(dot - p) : strlen(p);
        if (c->type != C_STRUCT) {
            snprintf(why, whylen,
                     "%s: %.*s is inside a %s (partition sources are top-level or in "
                     "structs only)",
                     path, (int)n, p,
                     c->type == C_LIST  ? "list"
                     : c->type == C_MAP ? "map"
                                        : "primitive");
            return LS_EINVAL;
        }
        const col_t *hit = NULL;
        for (size_t k = 0; k < c->nkids && !hit; k++)
            if (strlen(c->kids[k]->name) == n && !strncmp(c->kids[k]->name, p, n)) hit = c->kids[k];
        if (!hit) {
            snprintf(why, whylen, "%s: no field %.*s in the table's schema", path, (int)n, p);
            return LS_EINVAL;
        }
        c = hit;
        p = dot ? dot + 1 : p + n;
    }
    if (c->type >= C_NPRIM) {
        snprintf(why, whylen, "%s is a %s, not a primitive column", path,
                 c->type == C_STRUCT ? "struct"
                 : c->type == C_LIST ? "list"
                                     : "map");
        return LS_EINVAL;
    }
    *id = c->id;
    ls_typed_type_str(c, type, typelen);
    return LS_OK;
}

ls_status ls_typed_values(const ls_typed_datum_t *value, const ls_typed_datum_t *key,
                          const int *ids, int n, ls_ice_sval_t *out, char *err, size_t errlen)
{
    for (int i = 0; i < n; i++) {
        memset(&out[i], 0, sizeof out[i]);
        out[i].null = true;
    }
    const ls_typed_datum_t *d[2] = {value, key};
    for (int k = 0; k < 2; k++) {
        if (!d[k]) continue;
        rd_t r = {{d[k]->datum, d[k]->datum + d[k]->len, NULL}, NULL, NULL, ids, n, out};
        bool ok = d[k]->rd->key ? shred_value(&r, d[k]->rd->root, 0) : shred(&r, d[k]->rd->root, 0);
        if (!ok || r.in.p != r.in.end) {
            snprintf(err, errlen, "Avro %s datum does not match its schema: %s at byte %zu of %zu",
                     k ? "key" : "value", r.in.why ? r.in.why : "bytes left over",
                     (size_t)(r.in.p - d[k]->datum), d[k]->len);
            return LS_ECORRUPT;
        }
    }
    return LS_OK;
}
