/* Avro object container writer; see ocf.h. Blocks are kept in memory
 * (already compressed) until finish writes header + blocks. */
#include "table/ocf.h"

#include <string.h>
#include <zlib.h>

#include "base/alloc.h"
#include "base/uuid.h"

struct ls_ocf {
    char *schema;
    ls_ocf_codec codec;
    size_t block_bytes;
    ls_buf_t meta; /* encoded caller key/value pairs */
    int64_t nmeta;
    ls_buf_t block; /* open block's datums */
    int64_t block_count;
    ls_buf_t blocks; /* closed blocks, framed, with sync markers */
    int64_t count;
    uint8_t sync[16];
};

void ls_ocf_long(ls_buf_t *b, int64_t v)
{
    uint64_t z = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
    uint8_t tmp[10];
    int n = 0;
    while (z >= 0x80) {
        tmp[n++] = (uint8_t)(z | 0x80);
        z >>= 7;
    }
    tmp[n++] = (uint8_t)z;
    ls_buf_append(b, tmp, (size_t)n);
}

void ls_ocf_bool(ls_buf_t *b, int v) { ls_buf_append_u8(b, v ? 1 : 0); }

void ls_ocf_bytes(ls_buf_t *b, const void *p, size_t n)
{
    ls_ocf_long(b, (int64_t)n);
    ls_buf_append(b, p, n);
}

void ls_ocf_string(ls_buf_t *b, const char *s) { ls_ocf_bytes(b, s, strlen(s)); }

ls_ocf_t *ls_ocf_new(const char *schema_json, ls_ocf_codec codec, size_t block_bytes)
{
    ls_ocf_t *w = LS_NEW(ls_ocf_t);
    w->schema = ls_strdup(schema_json);
    w->codec = codec;
    w->block_bytes = block_bytes ? block_bytes : 64 << 10;
    ls_buf_init(&w->meta);
    ls_buf_init(&w->block);
    ls_buf_init(&w->blocks);
    ls_random_bytes(w->sync, sizeof w->sync);
    return w;
}

void ls_ocf_free(ls_ocf_t *w)
{
    if (!w) return;
    ls_free(w->schema);
    ls_buf_free(&w->meta);
    ls_buf_free(&w->block);
    ls_buf_free(&w->blocks);
    ls_free(w);
}

void ls_ocf_meta(ls_ocf_t *w, const char *key, const void *val, size_t n)
{
    ls_ocf_string(&w->meta, key);
    ls_ocf_bytes(&w->meta, val, n);
    w->nmeta++;
}

void ls_ocf_meta_str(ls_ocf_t *w, const char *key, const char *val)
{
    ls_ocf_meta(w, key, val, strlen(val));
}

ls_buf_t *ls_ocf_datum(ls_ocf_t *w) { return &w->block; }

int64_t ls_ocf_count(const ls_ocf_t *w) { return w->count; }

static ls_status deflate_raw(const uint8_t *in, size_t len, ls_buf_t *out)
{
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY) !=
        Z_OK)
        return LS_EIO;
    size_t bound = deflateBound(&zs, (uLong)len);
    ls_buf_reserve(out, bound);
    zs.next_in = (Bytef *)in;
    zs.avail_in = (uInt)len;
    zs.next_out = out->data + out->len;
    zs.avail_out = (uInt)bound;
    int rc = deflate(&zs, Z_FINISH);
    if (rc == Z_STREAM_END) out->len += bound - zs.avail_out;
    deflateEnd(&zs);
    return rc == Z_STREAM_END ? LS_OK : LS_EIO;
}

static ls_status close_block(ls_ocf_t *w)
{
    if (!w->block_count) return LS_OK;
    ls_ocf_long(&w->blocks, w->block_count);
    if (w->codec == LS_OCF_CODEC_DEFLATE) {
        ls_buf_t z;
        ls_buf_init(&z);
        ls_status st = deflate_raw(w->block.data, w->block.len, &z);
        if (st != LS_OK) {
            ls_buf_free(&z);
            return st;
        }
        ls_ocf_bytes(&w->blocks, z.data, z.len);
        ls_buf_free(&z);
    } else {
        ls_ocf_bytes(&w->blocks, w->block.data, w->block.len);
    }
    ls_buf_append(&w->blocks, w->sync, sizeof w->sync);
    w->block.len = 0;
    w->block_count = 0;
    return LS_OK;
}

ls_status ls_ocf_datum_done(ls_ocf_t *w)
{
    w->block_count++;
    w->count++;
    return w->block.len >= w->block_bytes ? close_block(w) : LS_OK;
}

ls_status ls_ocf_finish(ls_ocf_t *w, ls_buf_t *out)
{
    ls_status st = close_block(w);
    if (st != LS_OK) return st;
    ls_buf_append(out, "Obj\x01", 4);
    ls_ocf_long(out, w->nmeta + 2);
    ls_ocf_string(out, "avro.schema");
    ls_ocf_string(out, w->schema);
    ls_ocf_string(out, "avro.codec");
    ls_ocf_string(out, w->codec == LS_OCF_CODEC_DEFLATE ? "deflate" : "null");
    ls_buf_append(out, w->meta.data, w->meta.len);
    ls_ocf_end(out);
    ls_buf_append(out, w->sync, sizeof w->sync);
    ls_buf_append(out, w->blocks.data, w->blocks.len);
    return LS_OK;
}

/* ---- reading ----------------------------------------------------------
 * Schema: parsed from the header JSON into a type tree; named types
 * (record/enum/fixed) are registered by name and fullname so references
 * resolve. Values: decoded through a bounded cursor with a sticky error. */
#include <jansson.h>
#include <stdio.h>

enum {
    AT_NULL,
    AT_BOOL,
    AT_INT,
    AT_LONG,
    AT_FLOAT,
    AT_DOUBLE,
    AT_BYTES,
    AT_STRING,
    AT_RECORD,
    AT_ENUM,
    AT_ARRAY,
    AT_MAP,
    AT_UNION,
    AT_FIXED
};

typedef struct at {
    int kind;
    char *name;
    struct at **sub; /* record fields / union branches / [array items | map values] */
    char **names;    /* record field names, enum symbols */
    size_t nsub, nnames;
    size_t fixed;
} at_t;

typedef struct at_ctx {
    at_t **all; /* every node, for freeing */
    size_t nall;
    at_t **named;
    size_t nnamed;
    char err[200];
} at_ctx_t;

static at_t *at_new(at_ctx_t *c, int kind)
{
    at_t *t = LS_NEW(at_t);
    t->kind = kind;
    c->all = ls_realloc(c->all, (c->nall + 1) * sizeof *c->all);
    c->all[c->nall++] = t;
    return t;
}

static at_t *at_parse(at_ctx_t *c, json_t *j, int depth);

static at_t *at_prim(at_ctx_t *c, const char *s)
{
    static const char *names[] = {"null",  "boolean", "int",   "long",
                                  "float", "double",  "bytes", "string"};
    for (int i = 0; i < 8; i++)
        if (!strcmp(s, names[i])) return at_new(c, i);
    for (size_t i = 0; i < c->nnamed; i++) {
        const char *n = c->named[i]->name;
        const char *dot = strrchr(n, '.');
        if (!strcmp(n, s) || (dot && !strcmp(dot + 1, s))) return c->named[i];
    }
    snprintf(c->err, sizeof c->err, "schema: unknown type %s", s);
    return NULL;
}

static void at_register(at_ctx_t *c, at_t *t, json_t *j)
{
    const char *n = json_string_value(json_object_get(j, "name"));
    const char *ns = json_string_value(json_object_get(j, "namespace"));
    t->name = ns && n && !strchr(n, '.') ? ls_asprintf("%s.%s", ns, n) : ls_strdup(n ? n : "");
    c->named = ls_realloc(c->named, (c->nnamed + 1) * sizeof *c->named);
    c->named[c->nnamed++] = t;
}

static at_t *at_parse(at_ctx_t *c, json_t *j, int depth)
{
    if (depth > 64) {
        snprintf(c->err, sizeof c->err, "schema: nested too deep");
        return NULL;
    }
    if (json_is_string(j)) return at_prim(c, json_string_value(j));
    if (json_is_array(j)) {
        at_t *t = at_new(c, AT_UNION);
        t->nsub = json_array_size(j);
        t->sub = LS_NEWN(at_t *, t->nsub ? t->nsub : 1);
        for (size_t i = 0; i < t->nsub; i++)
            if (!(t->sub[i] = at_parse(c, json_array_get(j, i), depth + 1))) return NULL;
        return t;
    }
    const char *type = json_string_value(json_object_get(j, "type"));
    if (!type) {
        if (json_is_object(j) && json_object_get(j, "type"))
            return at_parse(c, json_object_get(j, "type"), depth + 1);
        snprintf(c->err, sizeof c->err, "schema: type missing");
        return NULL;
    }
    if (!strcmp(type, "record") || !strcmp(type, "error")) {
        at_t *t = at_new(c, AT_RECORD);
        at_register(c, t, j);
        json_t *fs = json_object_get(j, "fields");
        t->nsub = t->nnames = json_array_size(fs);
        t->sub = LS_NEWN(at_t *, t->nsub ? t->nsub : 1);
        t->names = LS_NEWN(char *, t->nsub ? t->nsub : 1);
        for (size_t i = 0; i < t->nsub; i++) {
            json_t *f = json_array_get(fs, i);
            const char *fn = json_string_value(json_object_get(f, "name"));
            t->names[i] = ls_strdup(fn ? fn : "");
            if (!(t->sub[i] = at_parse(c, json_object_get(f, "type"), depth + 1))) return NULL;
        }
        return t;
    }
    if (!strcmp(type, "enum")) {
        at_t *t = at_new(c, AT_ENUM);
        at_register(c, t, j);
        json_t *sy = json_object_get(j, "symbols");
        t->nnames = json_array_size(sy);
        t->names = LS_NEWN(char *, t->nnames ? t->nnames : 1);
        for (size_t i = 0; i < t->nnames; i++) {
            const char *s = json_string_value(json_array_get(sy, i));
            t->names[i] = ls_strdup(s ? s : "");
        }
        return t;
    }
    if (!strcmp(type, "fixed")) {
        at_t *t = at_new(c, AT_FIXED);
        at_register(c, t, j);
        t->fixed = (size_t)json_integer_value(json_object_get(j, "size"));
        return t;
    }
    if (!strcmp(type, "array") || !strcmp(type, "map")) {
        at_t *t = at_new(c, type[0] == 'a' ? AT_ARRAY : AT_MAP);
        t->nsub = 1;
        t->sub = LS_NEWN(at_t *, 1);
        if (!(t->sub[0] =
                  at_parse(c, json_object_get(j, type[0] == 'a' ? "items" : "values"), depth + 1)))
            return NULL;
        return t;
    }
    return at_prim(c, type); /* {"type": "long", "logicalType": ...} */
}

static void at_ctx_free(at_ctx_t *c)
{
    for (size_t i = 0; i < c->nall; i++) {
        at_t *t = c->all[i];
        for (size_t k = 0; k < t->nnames; k++)
            ls_free(t->names[k]);
        ls_free(t->names);
        ls_free(t->sub);
        ls_free(t->name);
        ls_free(t);
    }
    ls_free(c->all);
    ls_free(c->named);
}

typedef struct rd {
    const uint8_t *p, *end, *base;
    int bad;
    char *err;
    size_t errlen;
} rd_t;

static void rd_fail(rd_t *r, const char *what)
{
    if (!r->bad)
        snprintf(r->err, r->errlen, "avro: %s at byte %zu", what, (size_t)(r->p - r->base));
    r->bad = 1;
}

static int64_t rd_long(rd_t *r)
{
    uint64_t v = 0;
    for (int shift = 0; !r->bad; shift += 7) {
        if (r->p >= r->end || shift > 63) {
            rd_fail(r, "truncated or overlong varint");
            return 0;
        }
        uint8_t b = *r->p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
    }
    return 0;
}

static const uint8_t *rd_take(rd_t *r, size_t n)
{
    if (r->bad || (size_t)(r->end - r->p) < n) {
        rd_fail(r, "truncated");
        return NULL;
    }
    const uint8_t *p = r->p;
    r->p += n;
    return p;
}

static void set_bytes(ls_av_t *v, const uint8_t *p, size_t n)
{
    v->kind = LS_AV_BYTES;
    v->p = ls_malloc(n + 1);
    if (n) memcpy(v->p, p, n);
    v->p[n] = 0;
    v->n = n;
}

static void rd_value(rd_t *r, const at_t *t, ls_av_t *v, int depth);

static void push_item(ls_av_t *v, size_t *cap)
{
    if (v->nitems == *cap) {
        *cap = *cap ? *cap * 2 : 4;
        v->items = ls_realloc(v->items, *cap * sizeof *v->items);
        if (v->kind != LS_AV_ARRAY) v->keys = ls_realloc(v->keys, *cap * sizeof *v->keys);
    }
    memset(&v->items[v->nitems], 0, sizeof *v->items);
    v->nitems++;
}

static void rd_value(rd_t *r, const at_t *t, ls_av_t *v, int depth)
{
    memset(v, 0, sizeof *v);
    if (r->bad) return;
    if (depth > 64) {
        rd_fail(r, "value nested too deep");
        return;
    }
    switch (t->kind) {
    case AT_NULL: v->kind = LS_AV_NULL; return;
    case AT_BOOL: {
        const uint8_t *p = rd_take(r, 1);
        v->kind = LS_AV_BOOL;
        v->l = p ? *p != 0 : 0;
        return;
    }
    case AT_INT:
    case AT_LONG:
        v->kind = LS_AV_LONG;
        v->l = rd_long(r);
        return;
    case AT_FLOAT: {
        const uint8_t *p = rd_take(r, 4);
        float f = 0;
        if (p) memcpy(&f, p, 4);
        v->kind = LS_AV_DOUBLE;
        v->d = f;
        return;
    }
    case AT_DOUBLE: {
        const uint8_t *p = rd_take(r, 8);
        v->kind = LS_AV_DOUBLE;
        if (p) memcpy(&v->d, p, 8);
        return;
    }
    case AT_BYTES:
    case AT_STRING: {
        int64_t n = rd_long(r);
        if (n < 0) rd_fail(r, "negative length");
        const uint8_t *p = r->bad ? NULL : rd_take(r, (size_t)n);
        if (p) set_bytes(v, p, (size_t)n);
        return;
    }
    case AT_FIXED: {
        const uint8_t *p = rd_take(r, t->fixed);
        if (p) set_bytes(v, p, t->fixed);
        return;
    }
    case AT_ENUM: {
        int64_t i = rd_long(r);
        if (i < 0 || (size_t)i >= t->nnames)
            rd_fail(r, "enum index out of range");
        else
            set_bytes(v, (const uint8_t *)t->names[i], strlen(t->names[i]));
        return;
    }
    case AT_UNION: {
        int64_t i = rd_long(r);
        if (i < 0 || (size_t)i >= t->nsub)
            rd_fail(r, "union branch out of range");
        else
            rd_value(r, t->sub[i], v, depth + 1);
        return;
    }
    case AT_RECORD:
        v->kind = LS_AV_RECORD;
        v->nitems = t->nsub;
        v->items = LS_NEWN(ls_av_t, t->nsub ? t->nsub : 1);
        v->keys = t->names; /* borrowed from the schema: see ls_ocf_file_read */
        for (size_t i = 0; i < t->nsub && !r->bad; i++)
            rd_value(r, t->sub[i], &v->items[i], depth + 1);
        return;
    case AT_ARRAY:
    case AT_MAP: {
        v->kind = t->kind == AT_ARRAY ? LS_AV_ARRAY : LS_AV_MAP;
        size_t cap = 0;
        for (;;) {
            int64_t n = rd_long(r);
            if (r->bad || n == 0) return;
            if (n < 0) {
                n = -n;
                rd_long(r); /* block byte size */
            }
            if ((uint64_t)n > (uint64_t)(r->end - r->p)) {
                rd_fail(r, "block count exceeds the data");
                return;
            }
            for (int64_t k = 0; k < n && !r->bad; k++) {
                push_item(v, &cap);
                if (v->kind == LS_AV_MAP) {
                    int64_t kn = rd_long(r);
                    const uint8_t *kp = kn >= 0 && !r->bad ? rd_take(r, (size_t)kn) : NULL;
                    if (!kp) {
                        rd_fail(r, "bad map key");
                        v->keys[v->nitems - 1] = NULL;
                        return;
                    }
                    v->keys[v->nitems - 1] = ls_strndup((const char *)kp, (size_t)kn);
                }
                rd_value(r, t->sub[0], &v->items[v->nitems - 1], depth + 1);
            }
        }
    }
    }
}

/* Record field names are borrowed from the schema while decoding; they are
 * replaced by owned copies before the schema is freed. */
static void own_names(ls_av_t *v)
{
    if (v->kind == LS_AV_RECORD) {
        char **k = LS_NEWN(char *, v->nitems ? v->nitems : 1);
        for (size_t i = 0; i < v->nitems; i++)
            k[i] = ls_strdup(v->keys[i]);
        v->keys = k;
    }
    for (size_t i = 0; i < v->nitems; i++)
        own_names(&v->items[i]);
}

static void av_free_owned(ls_av_t *v)
{
    if (v->kind == LS_AV_RECORD) {
        for (size_t i = 0; i < v->nitems; i++)
            ls_free(v->keys[i]);
        ls_free(v->keys);
        v->keys = NULL;
        for (size_t i = 0; i < v->nitems; i++)
            av_free_owned(&v->items[i]);
        ls_free(v->items);
        ls_free(v->p);
        return;
    }
    if (v->kind == LS_AV_ARRAY || v->kind == LS_AV_MAP) {
        for (size_t i = 0; i < v->nitems; i++) {
            av_free_owned(&v->items[i]);
            if (v->kind == LS_AV_MAP) ls_free(v->keys[i]);
        }
        ls_free(v->items);
        ls_free(v->keys);
        return;
    }
    ls_free(v->p);
}

static ls_status inflate_raw(const uint8_t *in, size_t len, ls_buf_t *out)
{
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (inflateInit2(&zs, -MAX_WBITS) != Z_OK) return LS_EIO;
    zs.next_in = (Bytef *)in;
    zs.avail_in = (uInt)len;
    int rc;
    do {
        ls_buf_reserve(out, len * 4 + 4096);
        zs.next_out = out->data + out->len;
        zs.avail_out = (uInt)(out->cap - out->len);
        rc = inflate(&zs, Z_NO_FLUSH);
        out->len = out->cap - zs.avail_out;
        if (out->len > ((size_t)1 << 30)) rc = Z_DATA_ERROR;
    } while (rc == Z_OK);
    inflateEnd(&zs);
    return rc == Z_STREAM_END ? LS_OK : LS_ECORRUPT;
}

ls_status ls_ocf_file_read(const uint8_t *data, size_t len, ls_ocf_file_t *f, char *err,
                           size_t errlen)
{
    memset(f, 0, sizeof *f);
    rd_t r = {data, data + len, data, 0, err, errlen};
    at_ctx_t c;
    memset(&c, 0, sizeof c);
    ls_status st = LS_ECORRUPT;
    size_t cap = 0;
    const uint8_t *magic = rd_take(&r, 4);
    if (!magic || memcmp(magic, "Obj\x01", 4)) {
        snprintf(err, errlen, "avro: not an object container file");
        return LS_ECORRUPT;
    }
    for (;;) {
        int64_t n = rd_long(&r);
        if (r.bad || n == 0) break;
        if (n < 0) n = -n, rd_long(&r);
        for (int64_t i = 0; i < n && !r.bad; i++) {
            int64_t kn = rd_long(&r);
            const uint8_t *kp = kn >= 0 ? rd_take(&r, (size_t)kn) : NULL;
            int64_t vn = rd_long(&r);
            const uint8_t *vp = vn >= 0 && kp ? rd_take(&r, (size_t)vn) : NULL;
            if (!vp) {
                rd_fail(&r, "bad header metadata");
                break;
            }
            f->meta = ls_realloc(f->meta, (f->nmeta + 1) * 2 * sizeof *f->meta);
            f->meta[2 * f->nmeta] = ls_strndup((const char *)kp, (size_t)kn);
            f->meta[2 * f->nmeta + 1] = ls_strndup((const char *)vp, (size_t)vn);
            f->nmeta++;
        }
    }
    const uint8_t *sync = rd_take(&r, 16);
    if (r.bad) goto out;
    const char *schema = ls_ocf_file_meta(f, "avro.schema");
    const char *codec = ls_ocf_file_meta(f, "avro.codec");
    if (codec && strcmp(codec, "null") && strcmp(codec, "deflate")) {
        snprintf(err, errlen, "avro: unsupported codec %s", codec);
        st = LS_EINVAL;
        goto out;
    }
    json_error_t je;
    json_t *sj = schema ? json_loads(schema, JSON_DECODE_ANY, &je) : NULL;
    at_t *root = sj ? at_parse(&c, sj, 0) : NULL;
    json_decref(sj);
    if (!root) {
        snprintf(err, errlen, "avro: bad schema: %s", c.err[0] ? c.err : "missing or not JSON");
        goto out;
    }
    int deflated = codec && !strcmp(codec, "deflate");
    while (r.p < r.end && !r.bad) {
        int64_t count = rd_long(&r);
        int64_t size = rd_long(&r);
        const uint8_t *blk = size >= 0 && !r.bad ? rd_take(&r, (size_t)size) : NULL;
        const uint8_t *s2 = blk ? rd_take(&r, 16) : NULL;
        if (!s2 || memcmp(s2, sync, 16) || count < 0) {
            rd_fail(&r, "bad block framing or sync marker");
            break;
        }
        ls_buf_t plain;
        ls_buf_init(&plain);
        if (deflated && inflate_raw(blk, (size_t)size, &plain) != LS_OK) {
            ls_buf_free(&plain);
            rd_fail(&r, "bad deflate block");
            break;
        }
        rd_t br = {deflated ? plain.data : blk,
                   (deflated ? plain.data : blk) + (deflated ? plain.len : (size_t)size),
                   deflated ? plain.data : blk,
                   0,
                   err,
                   errlen};
        if ((uint64_t)count > (uint64_t)(br.end - br.p) + 1)
            rd_fail(&br, "record count exceeds block");
        for (int64_t i = 0; i < count && !br.bad; i++) {
            if (f->nrecords == cap) {
                cap = cap ? cap * 2 : 16;
                f->records = ls_realloc(f->records, cap * sizeof *f->records);
            }
            rd_value(&br, root, &f->records[f->nrecords], 0);
            own_names(&f->records[f->nrecords]);
            f->nrecords++;
        }
        ls_buf_free(&plain);
        if (br.bad) {
            r.bad = 1;
            break;
        }
    }
    if (!r.bad) st = LS_OK;
out:
    at_ctx_free(&c);
    if (st != LS_OK) ls_ocf_file_free(f);
    return st;
}

void ls_ocf_file_free(ls_ocf_file_t *f)
{
    for (size_t i = 0; i < f->nrecords; i++)
        av_free_owned(&f->records[i]);
    ls_free(f->records);
    for (size_t i = 0; i < 2 * f->nmeta; i++)
        ls_free(f->meta[i]);
    ls_free(f->meta);
    memset(f, 0, sizeof *f);
}

const char *ls_ocf_file_meta(const ls_ocf_file_t *f, const char *key)
{
    for (size_t i = 0; i < f->nmeta; i++)
        if (!strcmp(f->meta[2 * i], key)) return f->meta[2 * i + 1];
    return NULL;
}

const ls_av_t *ls_av_field(const ls_av_t *rec, const char *name)
{
    if (!rec || rec->kind != LS_AV_RECORD) return NULL;
    for (size_t i = 0; i < rec->nitems; i++)
        if (!strcmp(rec->keys[i], name)) return &rec->items[i];
    return NULL;
}
