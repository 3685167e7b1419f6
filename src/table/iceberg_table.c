/* Iceberg v2 table writer in the filesystem layout; see iceberg_table.h.
 *
 * State: the current metadata as a jansson tree (so fields we do not model
 * survive a commit untouched), its version N and location, the decoded
 * default partition spec and the committer (the catalog's commit point, if
 * any). A commit builds the next tree from a deep copy and only replaces the
 * state once the commit point has moved (see iceberg_table.h "Commit").
 *
 * Avro schemas follow spec.md "Manifests" / "Manifest Lists" with the spec's
 * fixed field ids; maps with int keys use Iceberg's array-of-key/value
 * records form (logicalType "map"). Manifest entries are written with
 * status ADDED, their snapshot id, and null sequence numbers (inherited from
 * the manifest list entry, spec "Sequence Number Inheritance"). */
#include "table/iceberg_table.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/crashpoint.h"
#include "base/uuid.h"
#include "table/avro_ocf.h"
#include "table/iceberg_manifest.h"

struct ls_ice_table {
    ls_objstore_t *os;
    char *prefix;
    char *location;
    json_t *meta;
    int version;
    char *meta_location;
    ls_ice_committer_t committer; /* commit NULL: the filesystem layout commits */
    ls_ice_spec_t spec;
    int64_t snapshot_retention_ms; /* 0: snapshots never expire */
    int snapshot_min_keep;         /* the newest this many never expire (>= 1) */
    int64_t file_grace_ms;         /* unreferenced files stay readable this long */
    ls_ice_maint_stats_t maint;
    char err[256];
};

/* ---- partition specs and transforms ----------------------------------- */

const char *ls_ice_transform_name(ls_ice_transform t)
{
    switch (t) {
    case LS_ICE_HOUR: return "hour";
    case LS_ICE_DAY: return "day";
    case LS_ICE_MONTH: return "month";
    case LS_ICE_YEAR: return "year";
    case LS_ICE_BUCKET: return "bucket";
    case LS_ICE_TRUNCATE: return "truncate";
    case LS_ICE_VOID: return "void";
    default: return "identity";
    }
}

/* The spec's transform string: "bucket[16]", "truncate[4]", "day", ... */
static void transform_text(const ls_ice_part_field_t *f, char *out, size_t cap)
{
    if (f->transform == LS_ICE_BUCKET || f->transform == LS_ICE_TRUNCATE)
        snprintf(out, cap, "%s[%d]", ls_ice_transform_name(f->transform), f->param);
    else
        snprintf(out, cap, "%s", ls_ice_transform_name(f->transform));
}

int ls_ice_transform_parse2(const char *s, int *param)
{
    *param = 0;
    if (!s) return -1;
    if (!strcmp(s, "identity")) return LS_ICE_IDENTITY;
    if (!strcmp(s, "void")) return LS_ICE_VOID;
    if (!strcmp(s, "hour") || !strcmp(s, "hours")) return LS_ICE_HOUR;
    if (!strcmp(s, "day") || !strcmp(s, "days")) return LS_ICE_DAY;
    if (!strcmp(s, "month") || !strcmp(s, "months")) return LS_ICE_MONTH;
    if (!strcmp(s, "year") || !strcmp(s, "years")) return LS_ICE_YEAR;
    int t = !strncmp(s, "bucket[", 7)     ? LS_ICE_BUCKET
            : !strncmp(s, "truncate[", 9) ? LS_ICE_TRUNCATE
                                          : -1;
    if (t < 0) return -1;
    const char *p = strchr(s, '[') + 1;
    char *e;
    long v = strtol(p, &e, 10);
    if (e == p || *p == '-' || *p == '+' || strcmp(e, "]") || v < 1 || v > 0x7fffffff) return -1;
    *param = (int)v;
    return t;
}

int ls_ice_transform_parse(const char *s)
{
    int param;
    int t = ls_ice_transform_parse2(s, &param);
    return param ? -1 : t;
}

bool ls_ice_transform_accepts(ls_ice_transform t, ls_ice_type ty)
{
    bool ts = ty == LS_ICE_TIMESTAMP || ty == LS_ICE_TIMESTAMPTZ;
    switch (t) {
    case LS_ICE_IDENTITY:
    case LS_ICE_VOID: return true;
    case LS_ICE_HOUR: return ts;
    case LS_ICE_DAY:
    case LS_ICE_MONTH:
    case LS_ICE_YEAR: return ts || ty == LS_ICE_DATE;
    case LS_ICE_BUCKET: /* the spec hashes no boolean, float or double */
        return ty != LS_ICE_BOOLEAN && ty != LS_ICE_FLOAT && ty != LS_ICE_DOUBLE;
    case LS_ICE_TRUNCATE:
        return ty == LS_ICE_INT || ty == LS_ICE_LONG || ty == LS_ICE_DECIMAL ||
               ty == LS_ICE_STRING || ty == LS_ICE_BINARY;
    }
    return false;
}

ls_status ls_ice_spec_add_param(ls_ice_spec_t *s, int source_id, const char *source_name,
                                ls_ice_type source_type, ls_ice_transform t, int param)
{
    if (s->nfields >= LS_ICE_MAX_PART) return LS_ELIMIT;
    bool sized = t == LS_ICE_BUCKET || t == LS_ICE_TRUNCATE;
    if (!ls_ice_transform_accepts(t, source_type) || (sized && param < 1)) return LS_EINVAL;
    ls_ice_part_field_t *f = &s->fields[s->nfields];
    memset(f, 0, sizeof *f);
    f->source_id = source_id;
    f->source_type = source_type;
    f->field_id = 1000 + s->nfields;
    f->transform = t;
    f->param = sized ? param : 0;
    if (t == LS_ICE_IDENTITY)
        snprintf(f->name, sizeof f->name, "%s", source_name);
    else
        snprintf(f->name, sizeof f->name, "%s_%s", source_name,
                 t == LS_ICE_TRUNCATE ? "trunc"
                 : t == LS_ICE_VOID   ? "null"
                                      : ls_ice_transform_name(t));
    s->nfields++;
    return LS_OK;
}

int ls_ice_type_parse(const char *s, ls_ice_type *t, int *prec, int *scale, int *flen)
{
    static const struct {
        const char *n;
        ls_ice_type t;
    } map[] = {
        {"int", LS_ICE_INT},
        {"long", LS_ICE_LONG},
        {"date", LS_ICE_DATE},
        {"time", LS_ICE_TIME},
        {"timestamp", LS_ICE_TIMESTAMP},
        {"timestamptz", LS_ICE_TIMESTAMPTZ},
        {"string", LS_ICE_STRING},
        {"binary", LS_ICE_BINARY},
        {"uuid", LS_ICE_UUID},
        {"boolean", LS_ICE_BOOLEAN},
        {"float", LS_ICE_FLOAT},
        {"double", LS_ICE_DOUBLE},
    };
    *prec = *scale = *flen = 0;
    if (!s) return -1;
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(s, map[i].n)) return *t = map[i].t, 0;
    int a, b, n = 0;
    if (sscanf(s, "decimal(%d, %d)%n", &a, &b, &n) == 2 && n == (int)strlen(s) && a >= 1 &&
        a <= 38 && b >= 0 && b <= a) {
        *t = LS_ICE_DECIMAL;
        *prec = a, *scale = b;
        return 0;
    }
    n = 0;
    if (sscanf(s, "fixed[%d]%n", &a, &n) == 1 && n == (int)strlen(s) && a >= 1) {
        *t = LS_ICE_FIXED;
        *flen = a;
        return 0;
    }
    return -1;
}

ls_status ls_ice_spec_add_typed(ls_ice_spec_t *s, int source_id, const char *source_name,
                                const char *iceberg_type, ls_ice_transform t, int param, char *why,
                                size_t whylen)
{
    ls_ice_type ty;
    int prec, scale, flen;
    if (ls_ice_type_parse(iceberg_type, &ty, &prec, &scale, &flen) != 0) {
        snprintf(why, whylen, "%s has type %s, which partitions are not built for", source_name,
                 iceberg_type ? iceberg_type : "(nested)");
        return LS_EINVAL;
    }
    if (!ls_ice_transform_accepts(t, ty)) {
        snprintf(why, whylen,
                 "%s does not apply to %s (type %s; Iceberg spec, Partition Transforms)",
                 ls_ice_transform_name(t), source_name, iceberg_type);
        return LS_EINVAL;
    }
    ls_status st = ls_ice_spec_add_param(s, source_id, source_name, ty, t, param);
    if (st != LS_OK) {
        snprintf(why, whylen, "%s(%s): %s", ls_ice_transform_name(t), source_name,
                 st == LS_ELIMIT ? "too many partition fields" : "a parameter below 1");
        return st;
    }
    ls_ice_part_field_t *f = &s->fields[s->nfields - 1];
    f->prec = prec, f->scale = scale, f->flen = flen;
    return LS_OK;
}

ls_status ls_ice_spec_add(ls_ice_spec_t *s, int source_id, const char *source_name,
                          ls_ice_type source_type, ls_ice_transform t)
{
    return ls_ice_spec_add_param(s, source_id, source_name, source_type, t, 0);
}

static int64_t floor_div(int64_t a, int64_t b)
{
    return a / b - (a % b != 0 && (a < 0) != (b < 0));
}

static void civil(int64_t z, int64_t *y, unsigned *m, unsigned *d);

int64_t ls_ice_transform_apply(ls_ice_transform t, ls_ice_type source_type, int64_t v)
{
    if (t == LS_ICE_HOUR) return floor_div(v, 3600LL * 1000000);
    int64_t days = source_type == LS_ICE_DATE ? v : floor_div(v, 86400LL * 1000000);
    if (t == LS_ICE_DAY) return days;
    if (t == LS_ICE_MONTH || t == LS_ICE_YEAR) {
        int64_t y;
        unsigned m, d;
        civil(days, &y, &m, &d);
        return t == LS_ICE_YEAR ? y - 1970 : (y - 1970) * 12 + (int64_t)m - 1;
    }
    return v;
}

/* Murmur3 x86 32-bit, seed 0 (Austin Appleby's public-domain algorithm; the
 * spec's Appendix B names it), blocks read little-endian. */
static uint32_t rotl32(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }

uint32_t ls_ice_murmur3(const void *data, size_t n)
{
    const uint8_t *p = data;
    const uint32_t c1 = 0xcc9e2d51u, c2 = 0x1b873593u;
    uint32_t h = 0;
    size_t nb = n / 4;
    for (size_t i = 0; i < nb; i++) {
        uint32_t k = (uint32_t)p[4 * i] | (uint32_t)p[4 * i + 1] << 8 |
                     (uint32_t)p[4 * i + 2] << 16 | (uint32_t)p[4 * i + 3] << 24;
        k *= c1;
        k = rotl32(k, 15);
        k *= c2;
        h ^= k;
        h = rotl32(h, 13);
        h = h * 5 + 0xe6546b64u;
    }
    const uint8_t *tail = p + nb * 4;
    uint32_t k = 0;
    switch (n & 3) {
    case 3: k ^= (uint32_t)tail[2] << 16; /* fall through */
    case 2: k ^= (uint32_t)tail[1] << 8;  /* fall through */
    case 1:
        k ^= tail[0];
        k *= c1;
        k = rotl32(k, 15);
        k *= c2;
        h ^= k;
    }
    h ^= (uint32_t)n;
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    h ^= h >> 16;
    return h;
}

/* spec: (hash & Integer.MAX_VALUE) % N */
int32_t ls_ice_bucket_bytes(const void *p, size_t len, int n)
{
    return (int32_t)((ls_ice_murmur3(p, len) & 0x7fffffffu) % (uint32_t)n);
}

int32_t ls_ice_bucket_long(int64_t v, int n)
{
    uint8_t b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)((uint64_t)v >> (8 * i));
    return ls_ice_bucket_bytes(b, 8, n);
}

int64_t ls_ice_field_apply(const ls_ice_part_field_t *f, int64_t v)
{
    if (f->transform == LS_ICE_BUCKET) return ls_ice_bucket_long(v, f->param);
    if (f->transform == LS_ICE_TRUNCATE) {
        /* spec: v - (((v % W) + W) % W); int sources stay in int range */
        int64_t w = f->param;
        return v - (((v % w) + w) % w);
    }
    return ls_ice_transform_apply(f->transform, f->source_type, v);
}

size_t ls_ice_decimal_bytes(__int128 v, uint8_t out[16])
{
    uint8_t be[16];
    for (int i = 0; i < 16; i++)
        be[15 - i] = (uint8_t)((unsigned __int128)v >> (8 * i));
    size_t k = 0; /* drop leading bytes that only repeat the next one's sign */
    while (k < 15 && ((be[k] == 0 && !(be[k + 1] & 0x80)) || (be[k] == 0xff && (be[k + 1] & 0x80))))
        k++;
    memcpy(out, be + k, 16 - k);
    return 16 - k;
}

int64_t ls_ice_double_bits(double d)
{
    if (d != d) return 0x7ff8000000000000LL; /* Java's canonical NaN */
    int64_t l;
    memcpy(&l, &d, 8);
    return l;
}

double ls_ice_bits_double(int64_t l)
{
    double d;
    memcpy(&d, &l, 8);
    return d;
}

void ls_ice_pval_long(ls_ice_pval_t *out, int64_t v)
{
    memset(out, 0, sizeof *out);
    out->l = v;
}

static bool bytes_result(ls_ice_type t)
{
    return t == LS_ICE_STRING || t == LS_ICE_BINARY || t == LS_ICE_FIXED || t == LS_ICE_UUID ||
           t == LS_ICE_DECIMAL;
}

/* Bytes p[0..n) as *out's value: inline, or borrowed when longer. */
static ls_status pval_bytes(ls_ice_pval_t *out, const uint8_t *p, size_t n)
{
    if (n > UINT32_MAX) return LS_ELIMIT; /* a source value holds no 4 GiB */
    if (n > LS_ICE_PVAL_INLINE)
        out->ext = (uint8_t *)p; /* borrowed (header: ownership) */
    else if (n)
        memcpy(out->b, p, n);
    out->n = (uint32_t)n;
    return LS_OK;
}

void ls_ice_pval_copy(ls_ice_pval_t *dst, const ls_ice_pval_t *src)
{
    *dst = *src;
    if (src->n > LS_ICE_PVAL_INLINE) {
        dst->ext = ls_malloc(src->n);
        memcpy(dst->ext, src->ext, src->n);
    }
}

void ls_ice_pval_clear(ls_ice_pval_t *v)
{
    if (v->n > LS_ICE_PVAL_INLINE) ls_free(v->ext);
    memset(v, 0, sizeof *v);
}

int ls_ice_pvals_cmp(const ls_ice_pval_t *x, const ls_ice_pval_t *y, int n)
{
    for (int i = 0; i < n; i++) {
        const ls_ice_pval_t *a = &x[i], *b = &y[i];
        if (a->null != b->null) return a->null ? -1 : 1;
        if (a->l != b->l) return a->l < b->l ? -1 : 1;
        if (a->n != b->n) return a->n < b->n ? -1 : 1;
        int c = a->n ? memcmp(ls_ice_pval_data(a), ls_ice_pval_data(b), a->n) : 0;
        if (c) return c < 0 ? -1 : 1;
    }
    return 0;
}

ls_status ls_ice_field_apply_sval(const ls_ice_part_field_t *f, const ls_ice_sval_t *v,
                                  ls_ice_pval_t *out)
{
    memset(out, 0, sizeof *out);
    if (v->null || f->transform == LS_ICE_VOID) {
        out->null = 1;
        return LS_OK;
    }
    ls_ice_type ty = f->source_type;
    if (ty == LS_ICE_FLOAT || ty == LS_ICE_DOUBLE) { /* identity: the value's bits */
        out->l = ls_ice_double_bits(v->f);
        return LS_OK;
    }
    if (!bytes_result(ty)) {
        out->l = ls_ice_field_apply(f, v->l);
        return LS_OK;
    }
    uint8_t dec[16];
    const uint8_t *p = v->p;
    size_t n = v->n;
    __int128 d = v->d;
    if (ty == LS_ICE_UUID) p = v->u, n = 16;
    if (ty == LS_ICE_DECIMAL && f->transform == LS_ICE_TRUNCATE) {
        __int128 w = f->param; /* spec: unscaled - (((unscaled % W) + W) % W), same scale */
        d = d - (((d % w) + w) % w);
    }
    if (ty == LS_ICE_DECIMAL) p = dec, n = ls_ice_decimal_bytes(d, dec);
    switch (f->transform) {
    case LS_ICE_BUCKET: out->l = ls_ice_bucket_bytes(p, n, f->param); return LS_OK;
    case LS_ICE_TRUNCATE:
        if (ty == LS_ICE_STRING) { /* the first W code points */
            size_t k = 0;
            for (int cp = 0; k < n && cp < f->param; cp++)
                for (k++; k < n && (p[k] & 0xC0) == 0x80;)
                    k++;
            n = k;
        } else if (ty == LS_ICE_BINARY && n > (size_t)f->param) {
            n = (size_t)f->param;
        }
        return pval_bytes(out, p, n);
    default: return pval_bytes(out, p, n); /* identity */
    }
}

/* Days since 1970-01-01 -> civil date (H. Hinnant's days_from_civil inverse). */
static void civil(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = (int64_t)yoe + era * 400 + (*m <= 2);
}

/* Object keys allow [A-Za-z0-9._-] only, so the path uses name-value;
 * strings keep those characters (others become '_'), other byte values are
 * hex, both cut to 32 characters: the file's uuid name makes it unique. */
static void path_bytes(ls_buf_t *out, ls_ice_type t, const ls_ice_pval_t *v)
{
    const uint8_t *p = ls_ice_pval_data(v);
    for (size_t i = 0; i < v->n && i < 32; i++) {
        uint8_t c = p[i];
        if (t != LS_ICE_STRING)
            ls_buf_printf(out, "%02x", c);
        else
            ls_buf_append_u8(out, (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                                          (c >= '0' && c <= '9') || c == '.' || c == '-'
                                      ? c
                                      : '_');
    }
}

void ls_ice_partition_path(const ls_ice_spec_t *s, const ls_ice_pval_t *vals, ls_buf_t *out)
{
    for (int i = 0; i < s->nfields; i++) {
        const ls_ice_part_field_t *f = &s->fields[i];
        ls_ice_type rt = ls_ice_result_type(f);
        int64_t v = vals[i].l;
        if (i) ls_buf_append_u8(out, '/');
        int64_t y;
        unsigned m, d;
        if (vals[i].null) {
            ls_buf_printf(out, "%s-null", f->name);
        } else if (bytes_result(rt)) {
            ls_buf_printf(out, "%s-", f->name);
            path_bytes(out, rt, &vals[i]);
        } else if (rt == LS_ICE_BOOLEAN) {
            ls_buf_printf(out, "%s-%s", f->name, v ? "true" : "false");
        } else if (rt == LS_ICE_FLOAT || rt == LS_ICE_DOUBLE) {
            char num[40];
            double x = ls_ice_bits_double(v);
            for (int prec = 1; prec <= 17; prec++) { /* the shortest text that reads back */
                snprintf(num, sizeof num, "%.*g", prec, x);
                double y = strtod(num, NULL);
                if (x != x || (rt == LS_ICE_FLOAT ? (float)y == (float)x : y == x)) break;
            }
            for (char *c = num; *c; c++) /* object-key characters: 1e+20 -> 1e_20 */
                if (*c == '+') *c = '_';
            ls_buf_printf(out, "%s-%s", f->name, num);
        } else if (f->transform == LS_ICE_YEAR) {
            ls_buf_printf(out, "%s-%04lld", f->name, (long long)(v + 1970));
        } else if (f->transform == LS_ICE_MONTH) {
            int64_t yy = floor_div(v, 12);
            ls_buf_printf(out, "%s-%04lld-%02lld", f->name, (long long)(yy + 1970),
                          (long long)(v - yy * 12 + 1));
        } else if (f->transform == LS_ICE_HOUR) {
            civil(floor_div(v, 24), &y, &m, &d);
            ls_buf_printf(out, "%s-%04lld-%02u-%02u-%02lld", f->name, (long long)y, m, d,
                          (long long)(v - floor_div(v, 24) * 24));
        } else if (rt == LS_ICE_DATE) {
            civil(v, &y, &m, &d);
            ls_buf_printf(out, "%s-%04lld-%02u-%02u", f->name, (long long)y, m, d);
        } else {
            ls_buf_printf(out, "%s-%lld", f->name, (long long)v);
        }
    }
}

/* ---- data file metrics -------------------------------------------------- */

static size_t utf8_cut(const uint8_t *p, size_t n, size_t max)
{
    if (n <= max) return n;
    size_t k = max;
    while (k > 0 && (p[k] & 0xC0) == 0x80)
        k--; /* do not split a code point */
    return k;
}

/* A DECIMAL bound (Iceberg spec, "Binary single-value serialization"): the
 * unscaled value as two's-complement big-endian bytes, the fewest that
 * hold it, from a Parquet plain value (INT32/INT64 little-endian, fixed
 * bytes big-endian). Its length, 0 when it does not fit a bound. */
static size_t decimal_bound(ls_pq_type type, const uint8_t *v, size_t n, uint8_t *out)
{
    uint8_t be[LS_ICE_BOUND_MAX];
    if (n > sizeof be || n == 0) return 0;
    if (type == LS_PQ_FIXED_LEN_BYTE_ARRAY)
        memcpy(be, v, n);
    else
        for (size_t i = 0; i < n; i++)
            be[i] = v[n - 1 - i];
    size_t k = 0; /* drop a leading byte that only repeats the next one's sign */
    while (k + 1 < n &&
           ((be[k] == 0 && !(be[k + 1] & 0x80)) || (be[k] == 0xff && (be[k + 1] & 0x80))))
        k++;
    memcpy(out, be + k, n - k);
    return n - k;
}

void ls_ice_datafile_metrics(ls_ice_datafile_t *df, const ls_pq_writer_t *w)
{
    size_t nc = ls_pq_ncolumns(w);
    df->record_count = ls_pq_num_rows(w);
    df->metrics = ls_realloc(df->metrics, (nc ? nc : 1) * sizeof *df->metrics);
    df->nmetrics = 0;
    for (size_t i = 0; i < nc; i++) {
        const ls_pq_colstats_t *s = ls_pq_column_stats(w, (int)i);
        if (s->field_id < 0) continue;
        ls_ice_colmetric_t *m = &df->metrics[df->nmetrics++];
        memset(m, 0, sizeof *m);
        m->field_id = s->field_id;
        m->column_size = s->compressed_bytes;
        m->value_count = s->num_values;
        m->null_count = s->null_count;
        if (!s->has_bounds || s->max_rep > 0) continue;
        if (s->logical ==
            LS_PQ_LT_DECIMAL) { /* spec: the unscaled value, big-endian, fewest bytes */
            m->lower_len = decimal_bound(s->type, s->min.data, s->min.len, m->lower);
            m->upper_len = decimal_bound(s->type, s->max.data, s->max.len, m->upper);
            m->has_lower = m->has_upper = m->lower_len > 0 && m->upper_len > 0;
            continue;
        }
        if (s->type == LS_PQ_FIXED_LEN_BYTE_ARRAY) { /* uuid, fixed[L]: whole values or none */
            if (s->min.len > LS_ICE_BOUND_MAX) continue;
            memcpy(m->lower, s->min.data, s->min.len);
            memcpy(m->upper, s->max.data, s->max.len);
            m->lower_len = s->min.len;
            m->upper_len = s->max.len;
            m->has_lower = m->has_upper = 1;
            continue;
        }
        if (s->type != LS_PQ_BYTE_ARRAY) {
            /* INT32 / INT64 plain values are already little-endian */
            memcpy(m->lower, s->min.data, s->min.len);
            memcpy(m->upper, s->max.data, s->max.len);
            m->lower_len = s->min.len;
            m->upper_len = s->max.len;
            m->has_lower = m->has_upper = 1;
            continue;
        }
        int str = s->logical == LS_PQ_LT_STRING;
        /* lower bound: any prefix is <= the value */
        m->lower_len = str ? utf8_cut(s->min.data, s->min.len, LS_ICE_BOUND_MAX)
                           : (s->min.len < LS_ICE_BOUND_MAX ? s->min.len : LS_ICE_BOUND_MAX);
        if (m->lower_len) /* an empty minimum (b"") has no bytes to copy */
            memcpy(m->lower, s->min.data, m->lower_len);
        m->has_lower = 1;
        /* upper bound: exact when short; binary: truncated prefix with its
         * last non-0xff byte incremented; long strings: left out */
        if (s->max.len <= LS_ICE_BOUND_MAX) {
            if (s->max.len) memcpy(m->upper, s->max.data, s->max.len);
            m->upper_len = s->max.len;
            m->has_upper = 1;
        } else if (!str) {
            size_t k = LS_ICE_BOUND_MAX;
            memcpy(m->upper, s->max.data, k);
            while (k > 0 && m->upper[k - 1] == 0xff)
                k--;
            if (k > 0) {
                m->upper[k - 1]++;
                m->upper_len = k;
                m->has_upper = 1;
            }
        }
    }
}

void ls_ice_datafile_clear(ls_ice_datafile_t *df)
{
    for (int i = 0; i < LS_ICE_MAX_PART; i++)
        if (df->partition[i].n > LS_ICE_PVAL_INLINE) ls_free(df->partition[i].ext);
    ls_free(df->path);
    ls_free(df->metrics);
    memset(df, 0, sizeof *df);
}

/* ---- metadata JSON helpers ---------------------------------------------- */

static json_t *spec_json(const ls_ice_spec_t *s)
{
    json_t *fields = json_array();
    for (int i = 0; i < s->nfields; i++) {
        const ls_ice_part_field_t *f = &s->fields[i];
        char tr[32];
        transform_text(f, tr, sizeof tr);
        json_array_append_new(fields,
                              json_pack("{s:s, s:s, s:i, s:i}", "name", f->name, "transform", tr,
                                        "source-id", f->source_id, "field-id", f->field_id));
    }
    return fields;
}

/* The field with id `id` among fields, searched through struct types only
 * (partition sources cannot be inside lists or maps: spec "Partitioning"). */
static json_t *field_by_id(json_t *fields, json_int_t id)
{
    json_t *sf;
    size_t k;
    json_array_foreach(fields, k, sf)
    {
        if (json_integer_value(json_object_get(sf, "id")) == id) return sf;
        json_t *ty = json_object_get(sf, "type");
        if (json_is_object(ty) && json_is_string(json_object_get(ty, "type")) &&
            !strcmp(json_string_value(json_object_get(ty, "type")), "struct")) {
            json_t *hit = field_by_id(json_object_get(ty, "fields"), id);
            if (hit) return hit;
        }
    }
    return NULL;
}

/* Rebuilds t->spec from the metadata's default spec and current schema. */
static ls_status load_spec(ls_ice_table_t *t)
{
    json_int_t spec_id = json_integer_value(json_object_get(t->meta, "default-spec-id"));
    json_int_t schema_id = json_integer_value(json_object_get(t->meta, "current-schema-id"));
    json_t *schema = NULL, *spec = NULL, *v;
    size_t i;
    json_array_foreach(json_object_get(t->meta, "schemas"), i,
                       v) if (json_integer_value(json_object_get(v, "schema-id")) == schema_id)
        schema = v;
    json_array_foreach(json_object_get(t->meta, "partition-specs"), i,
                       v) if (json_integer_value(json_object_get(v, "spec-id")) == spec_id) spec =
        v;
    if (!schema || !spec) {
        snprintf(t->err, sizeof t->err, "metadata: current schema or default spec missing");
        return LS_ECORRUPT;
    }
    memset(&t->spec, 0, sizeof t->spec);
    t->spec.spec_id = (int)spec_id;
    json_t *pf;
    json_array_foreach(json_object_get(spec, "fields"), i, pf)
    {
        if (i >= LS_ICE_MAX_PART) return LS_ELIMIT;
        ls_ice_part_field_t *f = &t->spec.fields[i];
        f->source_id = (int)json_integer_value(json_object_get(pf, "source-id"));
        f->field_id = (int)json_integer_value(json_object_get(pf, "field-id"));
        snprintf(f->name, sizeof f->name, "%s", json_string_value(json_object_get(pf, "name")));
        int tr =
            ls_ice_transform_parse2(json_string_value(json_object_get(pf, "transform")), &f->param);
        json_t *src = field_by_id(json_object_get(schema, "fields"), f->source_id);
        if (tr < 0 || !src ||
            ls_ice_type_parse(json_string_value(json_object_get(src, "type")), &f->source_type,
                              &f->prec, &f->scale, &f->flen) != 0 ||
            !ls_ice_transform_accepts((ls_ice_transform)tr, f->source_type)) {
            snprintf(t->err, sizeof t->err, "metadata: unsupported partition field %s", f->name);
            return LS_EINVAL;
        }
        f->transform = (ls_ice_transform)tr;
        t->spec.nfields++;
    }
    return LS_OK;
}

static char *key_of(const ls_ice_table_t *t, const char *rel)
{
    return ls_asprintf("%s/%s", t->prefix, rel);
}

/* Key of a location under this table, or NULL when it lies elsewhere. */
static char *key_for_location(const ls_ice_table_t *t, const char *loc)
{
    size_t n = strlen(t->location);
    if (strncmp(loc, t->location, n) || loc[n] != '/') return NULL;
    return key_of(t, loc + n + 1);
}

static ls_status put_bytes(ls_ice_table_t *t, const char *key, const void *p, size_t n, int flags)
{
    struct iovec iov = {(void *)p, n};
    ls_status st = ls_objstore_put(t->os, key, &iov, 1, flags);
    if (st != LS_OK) snprintf(t->err, sizeof t->err, "put %s: %s", key, ls_status_str(st));
    return st;
}

static char *new_uuid(void)
{
    ls_uuid_t u;
    ls_uuid_random(&u);
    char *s = ls_malloc(37);
    ls_uuid_format(&u, s);
    return s;
}

/* Best-effort: a failure leaves a readable table (loaders probe onward). */
static void write_version_hint(ls_ice_table_t *t, int version)
{
    char hint[24];
    int n = snprintf(hint, sizeof hint, "%d", version);
    char *key = key_of(t, "metadata/version-hint.text");
    put_bytes(t, key, hint, (size_t)n, 0);
    ls_free(key);
}

/* Stores `meta` as version `version` and moves the commit point (see the
 * header). On LS_OK *rel_out is the new file's name under the prefix. */
static ls_status write_metadata(ls_ice_table_t *t, json_t *meta, int version, char **rel_out)
{
    char vrel[64];
    snprintf(vrel, sizeof vrel, "metadata/v%d.metadata.json", version);
    char *text = json_dumps(meta, JSON_COMPACT | JSON_REAL_PRECISION(17));
    size_t len = strlen(text);
    ls_status st;
    char *rel;
    if (!t->committer.commit) {
        rel = ls_strdup(vrel);
        char *key = key_of(t, rel);
        st = put_bytes(t, key, text, len, LS_OBJSTORE_PUT_CREATE_ONLY);
        ls_free(key);
        if (st == LS_EEXISTS && version > 1) {
            snprintf(t->err, sizeof t->err, "%s exists: concurrent commit", vrel);
            st = LS_ECONFLICT;
        }
    } else {
        char *u = new_uuid();
        rel = ls_asprintf("metadata/%05d-%s.metadata.json", version, u);
        ls_free(u);
        char *key = key_of(t, rel);
        st = put_bytes(t, key, text, len, LS_OBJSTORE_PUT_CREATE_ONLY);
        if (st == LS_OK) {
            ls_crashpoint("table.metadata_written");
            char *loc = ls_asprintf("%s/%s", t->location, rel);
            t->err[0] = 0;
            st = t->committer.commit(t->committer.arg, version, loc, key, t->err, sizeof t->err);
            ls_free(loc);
            if (st == LS_ECONFLICT)
                ls_objstore_del(t->os, key); /* never current: nobody reads it */
            else if (st != LS_OK && !t->err[0])
                snprintf(t->err, sizeof t->err, "commit of %s: %s", key, ls_status_str(st));
        }
        if (st == LS_OK) {
            ls_crashpoint("table.pointer_swapped");
            /* publish for path readers; only committed metadata gets a v<N>
             * name: the same file without writing it again where the store
             * copies (a hard link on a local store, CopyObject on S3), else
             * the bytes again */
            char *vkey = key_of(t, vrel);
            ls_status ps = ls_objstore_copies(t->os) ? ls_objstore_copy(t->os, key, vkey)
                                                     : put_bytes(t, vkey, text, len, 0);
            ls_free(vkey);
            if (ps != LS_OK) version = 0; /* no hint pointing at a missing file */
        }
        ls_free(key);
    }
    free(text);
    if (st != LS_OK) {
        ls_free(rel);
        return st;
    }
    if (version > 0) write_version_hint(t, version);
    *rel_out = rel;
    return LS_OK;
}

static void set_meta_location(ls_ice_table_t *t, const char *rel)
{
    ls_free(t->meta_location);
    t->meta_location = ls_asprintf("%s/%s", t->location, rel);
}

static ls_ice_table_t *table_new(ls_objstore_t *os, const char *prefix,
                                 const ls_ice_committer_t *committer)
{
    ls_ice_table_t *t = LS_NEW(ls_ice_table_t);
    t->os = os;
    t->prefix = ls_strdup(prefix);
    if (committer) t->committer = *committer;
    return t;
}

ls_status ls_ice_table_create(ls_objstore_t *os, const char *prefix, const char *location,
                              const char *schema_json, int last_column_id,
                              const ls_ice_spec_t *spec, const char *const *props,
                              const ls_ice_committer_t *committer, ls_ice_table_t **out, char *err,
                              size_t errlen)
{
    *out = NULL;
    json_error_t je;
    json_t *schema = json_loads(schema_json, 0, &je);
    if (!schema || !json_is_object(schema)) {
        snprintf(err, errlen, "schema is not a JSON object: %s", je.text);
        json_decref(schema);
        if (committer && committer->release) committer->release(committer->arg);
        return LS_EINVAL;
    }
    if (!json_object_get(schema, "schema-id"))
        json_object_set_new(schema, "schema-id", json_integer(0));
    ls_ice_table_t *t = table_new(os, prefix, committer);
    t->location = ls_strdup(location);
    ls_uuid_t u;
    ls_uuid_random(&u);
    char uuid[37];
    ls_uuid_format(&u, uuid);
    json_t *properties = json_object();
    for (size_t i = 0; props && props[i] && props[i + 1]; i += 2)
        json_object_set_new(properties, props[i], json_string(props[i + 1]));
    int last_pid = 999;
    for (int i = 0; i < spec->nfields; i++)
        if (spec->fields[i].field_id > last_pid) last_pid = spec->fields[i].field_id;
    t->meta = json_pack(
        "{s:i, s:s, s:s, s:i, s:I, s:i, s:i, s:[o], s:i, s:[{s:i, s:o}], s:i, s:i, s:[{s:i, s:[]}],"
        " s:o, s:[], s:[], s:[], s:{}}",
        "format-version", 2, "table-uuid", uuid, "location", location, "last-sequence-number", 0,
        "last-updated-ms", (json_int_t)ls_clock_wall_ms(), "last-column-id", last_column_id,
        "current-schema-id", (int)json_integer_value(json_object_get(schema, "schema-id")),
        "schemas", schema, "default-spec-id", spec->spec_id, "partition-specs", "spec-id",
        spec->spec_id, "fields", spec_json(spec), "last-partition-id", last_pid,
        "default-sort-order-id", 0, "sort-orders", "order-id", 0, "fields", "properties",
        properties, "snapshots", "snapshot-log", "metadata-log", "refs");
    if (!t->meta) {
        snprintf(err, errlen, "cannot build table metadata");
        ls_ice_table_free(t);
        return LS_EINVAL;
    }
    t->version = 1;
    char *rel = NULL;
    ls_status st = load_spec(t);
    if (st == LS_OK) st = write_metadata(t, t->meta, 1, &rel);
    if (st == LS_ECONFLICT) st = LS_EEXISTS; /* the catalog has the table already */
    if (st != LS_OK) {
        snprintf(err, errlen, "%s", t->err);
        ls_ice_table_free(t);
        return st;
    }
    set_meta_location(t, rel);
    ls_free(rel);
    *out = t;
    return LS_OK;
}

static ls_status get_text(ls_objstore_t *os, const char *key, ls_buf_t *b)
{
    b->len = 0;
    ls_status st = ls_objstore_get(os, key, 0, UINT64_MAX, b);
    if (st == LS_OK) ls_buf_append_u8(b, 0);
    return st;
}

/* Reads and checks the metadata file rel (under the prefix) as `version`. */
static ls_status load_metadata(ls_ice_table_t *t, const char *rel, int version, ls_buf_t *b)
{
    char *key = key_of(t, rel);
    ls_status st = get_text(t->os, key, b);
    ls_free(key);
    if (st != LS_OK) return st;
    json_error_t je;
    t->meta = json_loads((char *)b->data, 0, &je);
    if (!t->meta || json_integer_value(json_object_get(t->meta, "format-version")) != 2 ||
        !json_string_value(json_object_get(t->meta, "location"))) {
        snprintf(t->err, sizeof t->err, "%s/%s: not Iceberg v2 metadata (%s)", t->prefix, rel,
                 t->meta ? "format-version/location" : je.text);
        return LS_ECORRUPT;
    }
    t->location = ls_strdup(json_string_value(json_object_get(t->meta, "location")));
    t->version = version;
    set_meta_location(t, rel);
    return load_spec(t);
}

static ls_status load_done(ls_ice_table_t *t, ls_status st, ls_buf_t *b, ls_ice_table_t **out,
                           char *err, size_t errlen)
{
    ls_buf_free(b);
    if (st == LS_OK) {
        *out = t;
        return LS_OK;
    }
    if (!t->err[0]) snprintf(t->err, sizeof t->err, "load %s: %s", t->prefix, ls_status_str(st));
    snprintf(err, errlen, "%s", t->err);
    ls_ice_table_free(t);
    return st;
}

ls_status ls_ice_table_load(ls_objstore_t *os, const char *prefix,
                            const ls_ice_committer_t *committer, ls_ice_table_t **out, char *err,
                            size_t errlen)
{
    *out = NULL;
    ls_ice_table_t *t = table_new(os, prefix, committer);
    ls_buf_t b;
    ls_buf_init(&b);
    char *key = key_of(t, "metadata/version-hint.text");
    ls_status st = get_text(os, key, &b);
    ls_free(key);
    int version = st == LS_OK ? atoi((char *)b.data) : 0;
    if (st != LS_OK && st != LS_ENOTFOUND) return load_done(t, st, &b, out, err, errlen);
    if (version < 1) version = 1;
    /* the hint may lag behind a commit: probe forward */
    char rel[64];
    for (;;) {
        snprintf(rel, sizeof rel, "metadata/v%d.metadata.json", version + 1);
        key = key_of(t, rel);
        ls_objinfo_t info;
        st = ls_objstore_head(os, key, &info);
        ls_free(key);
        if (st == LS_ENOTFOUND) break;
        if (st != LS_OK) return load_done(t, st, &b, out, err, errlen);
        version++;
    }
    snprintf(rel, sizeof rel, "metadata/v%d.metadata.json", version);
    return load_done(t, load_metadata(t, rel, version, &b), &b, out, err, errlen);
}

ls_status ls_ice_table_load_file(ls_objstore_t *os, const char *prefix, const char *key,
                                 int version, const ls_ice_committer_t *committer,
                                 ls_ice_table_t **out, char *err, size_t errlen)
{
    *out = NULL;
    ls_ice_table_t *t = table_new(os, prefix, committer);
    ls_buf_t b;
    ls_buf_init(&b);
    size_t n = strlen(prefix);
    if (strncmp(key, prefix, n) || key[n] != '/') {
        snprintf(t->err, sizeof t->err, "metadata file %s is outside the table prefix %s", key,
                 prefix);
        return load_done(t, LS_EINVAL, &b, out, err, errlen);
    }
    return load_done(t, load_metadata(t, key + n + 1, version, &b), &b, out, err, errlen);
}

ls_status ls_ice_table_publish(ls_ice_table_t *t)
{
    if (!t->committer.commit || t->version < 1 || !t->meta_location) return LS_OK;
    char vrel[64];
    snprintf(vrel, sizeof vrel, "metadata/v%d.metadata.json", t->version);
    char *vkey = key_of(t, vrel);
    ls_objinfo_t info;
    ls_status st = ls_objstore_head(t->os, vkey, &info);
    if (st != LS_ENOTFOUND) {
        if (st != LS_OK) snprintf(t->err, sizeof t->err, "head %s: %s", vkey, ls_status_str(st));
        ls_free(vkey);
        return st;
    }
    ls_buf_t b;
    ls_buf_init(&b);
    char *key = key_for_location(t, t->meta_location);
    st = key ? ls_objstore_copy(t->os, key, vkey) : LS_EINVAL;
    if (st != LS_OK) snprintf(t->err, sizeof t->err, "publishing %s: %s", vkey, ls_status_str(st));
    ls_free(key);
    ls_free(vkey);
    if (st == LS_OK) {
        char *hkey = key_of(t, "metadata/version-hint.text");
        ls_status hs = get_text(t->os, hkey, &b);
        ls_free(hkey);
        if (hs == LS_ENOTFOUND || (hs == LS_OK && atoi((char *)b.data) < t->version))
            write_version_hint(t, t->version);
    }
    ls_buf_free(&b);
    return st;
}

void ls_ice_table_free(ls_ice_table_t *t)
{
    if (!t) return;
    if (t->committer.release) t->committer.release(t->committer.arg);
    json_decref(t->meta);
    ls_free(t->prefix);
    ls_free(t->location);
    ls_free(t->meta_location);
    ls_free(t);
}

const ls_ice_spec_t *ls_ice_table_spec(const ls_ice_table_t *t) { return &t->spec; }
int ls_ice_table_version(const ls_ice_table_t *t) { return t->version; }
const char *ls_ice_table_metadata_location(const ls_ice_table_t *t) { return t->meta_location; }
const char *ls_ice_table_error(const ls_ice_table_t *t) { return t->err; }

int64_t ls_ice_table_current_snapshot(const ls_ice_table_t *t)
{
    json_t *v = json_object_get(t->meta, "current-snapshot-id");
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : -1;
}

static json_t *current_snapshot(const ls_ice_table_t *t)
{
    int64_t id = ls_ice_table_current_snapshot(t);
    json_t *s;
    size_t i;
    if (id < 0) return NULL;
    json_array_foreach(json_object_get(t->meta, "snapshots"), i,
                       s) if (json_integer_value(json_object_get(s, "snapshot-id")) == id) return s;
    return NULL;
}

size_t ls_ice_table_snapshot_count(const ls_ice_table_t *t)
{
    return json_array_size(json_object_get(t->meta, "snapshots"));
}

const char *ls_ice_table_summary(const ls_ice_table_t *t, const char *key)
{
    if (!strncmp(key, LS_ICE_CARRY_PREFIX, strlen(LS_ICE_CARRY_PREFIX))) {
        const char *v =
            json_string_value(json_object_get(json_object_get(t->meta, "properties"), key));
        if (v) return v;
    }
    return json_string_value(json_object_get(json_object_get(current_snapshot(t), "summary"), key));
}

ls_status ls_ice_table_put_data(ls_ice_table_t *t, const ls_buf_t *bytes, const char *ext,
                                ls_ice_datafile_t *df)
{
    char *old = df->path;
    df->path = NULL;
    char *key = ls_ice_table_data_key(t, ext, df);
    ls_status st = put_bytes(t, key, bytes->data, bytes->len, LS_OBJSTORE_PUT_CREATE_ONLY);
    if (st == LS_OK) {
        ls_free(old);
        df->file_size = (int64_t)bytes->len;
    } else {
        ls_free(df->path);
        df->path = old;
    }
    ls_free(key);
    return st;
}

ls_objstore_t *ls_ice_table_objstore(const ls_ice_table_t *t) { return t->os; }

char *ls_ice_table_data_key(ls_ice_table_t *t, const char *ext, ls_ice_datafile_t *df)
{
    ls_buf_t rel;
    ls_buf_init(&rel);
    ls_buf_printf(&rel, "data/");
    if (t->spec.nfields) {
        ls_ice_partition_path(&t->spec, df->partition, &rel);
        ls_buf_append_u8(&rel, '/');
    }
    char *u = new_uuid();
    ls_buf_printf(&rel, "%s.%s", u, ext);
    ls_buf_append_u8(&rel, 0);
    ls_free(u);
    char *key = key_of(t, (char *)rel.data);
    ls_free(df->path);
    df->path = ls_asprintf("%s/%s", t->location, (char *)rel.data);
    ls_buf_free(&rel);
    return key;
}

/* ---- append --------------------------------------------------------------- */

/* GETs a file of this table by location (declared in the header). */
ls_status ls_ice_table_read_range(const ls_ice_table_t *t, const char *loc, uint64_t off,
                                  uint64_t len, ls_buf_t *out, char *err, size_t errlen)
{
    char *key = key_for_location(t, loc);
    if (!key) {
        snprintf(err, errlen, "%s is outside the table location", loc);
        return LS_EINVAL;
    }
    out->len = 0;
    ls_status st = ls_objstore_get(t->os, key, off, len, out);
    if (st != LS_OK) snprintf(err, errlen, "get %s: %s", key, ls_status_str(st));
    ls_free(key);
    return st;
}

ls_status ls_ice_table_map_file(const ls_ice_table_t *t, const char *loc, ls_chunk_t **out,
                                char *err, size_t errlen)
{
    *out = NULL;
    char *key = key_for_location(t, loc);
    if (!key) {
        snprintf(err, errlen, "%s is outside the table location", loc);
        return LS_EINVAL;
    }
    ls_status st = ls_objstore_map(t->os, key, out);
    if (st != LS_OK && st != LS_EINVAL) snprintf(err, errlen, "map %s: %s", key, ls_status_str(st));
    ls_free(key);
    return st;
}

ls_status ls_ice_table_get_range(ls_ice_table_t *t, const char *loc, uint64_t off, uint64_t len,
                                 ls_buf_t *out)
{
    return ls_ice_table_read_range(t, loc, off, len, out, t->err, sizeof t->err);
}

ls_status ls_ice_table_get_file(ls_ice_table_t *t, const char *loc, ls_buf_t *out)
{
    return ls_ice_table_get_range(t, loc, 0, UINT64_MAX, out);
}

/* Best-effort delete of a file of this table (maintenance after a commit:
 * a file left behind is an orphan, never a broken table). */
static void delete_location(ls_ice_table_t *t, const char *loc)
{
    char *key = key_for_location(t, loc);
    if (key && ls_objstore_del(t->os, key) == LS_OK) t->maint.files_deleted++;
    ls_free(key);
}

static const char *prop_str(const ls_ice_table_t *t, const char *key)
{
    return json_string_value(json_object_get(json_object_get(t->meta, "properties"), key));
}

static int64_t prop_long(const ls_ice_table_t *t, const char *key, int64_t dflt)
{
    const char *v = prop_str(t, key);
    char *end;
    long long x = v ? strtoll(v, &end, 10) : 0;
    return v && *v && !*end && x >= 0 ? (int64_t)x : dflt;
}

static bool prop_bool(const ls_ice_table_t *t, const char *key, bool dflt)
{
    const char *v = prop_str(t, key);
    return v ? !strcasecmp(v, "true") : dflt;
}

static json_t *current_schema(const ls_ice_table_t *t)
{
    json_t *v, *found = NULL;
    size_t i;
    json_int_t sid = json_integer_value(json_object_get(t->meta, "current-schema-id"));
    json_array_foreach(json_object_get(t->meta, "schemas"), i,
                       v) if (json_integer_value(json_object_get(v, "schema-id")) == sid) found = v;
    return found;
}

char *ls_ice_table_schema(const ls_ice_table_t *t, int *last_column_id)
{
    *last_column_id = (int)json_integer_value(json_object_get(t->meta, "last-column-id"));
    json_t *schema = current_schema(t);
    char *text = schema ? json_dumps(schema, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    char *out = text ? ls_strdup(text) : NULL;
    free(text);
    return out;
}

/* Schema evolution (spec, "Schema Evolution"): the new schema is appended
 * to `schemas` under the next schema id and made current; field ids are
 * the caller's (kept for existing columns, fresh above last-column-id for
 * added ones). Only the table object changes: the next commit carries it,
 * so the schema lands with that commit's data or not at all. */
ls_status ls_ice_table_set_schema(ls_ice_table_t *t, const char *schema_json, int last_column_id,
                                  int *schema_id)
{
    json_error_t je;
    json_t *schema = json_loads(schema_json, 0, &je);
    int was = (int)json_integer_value(json_object_get(t->meta, "last-column-id"));
    if (!schema || !json_is_object(schema) || last_column_id < was) {
        snprintf(t->err, sizeof t->err, "new schema: %s",
                 schema ? "last-column-id would go back (ids are never reused)" : je.text);
        json_decref(schema);
        return LS_EINVAL;
    }
    json_t *schemas = json_object_get(t->meta, "schemas"), *v;
    json_int_t id = -1;
    size_t i;
    json_array_foreach(schemas, i, v)
    {
        json_int_t sid = json_integer_value(json_object_get(v, "schema-id"));
        if (sid > id) id = sid;
    }
    id++;
    json_object_set_new(schema, "schema-id", json_integer(id));
    json_array_append_new(schemas, schema);
    json_object_set_new(t->meta, "current-schema-id", json_integer(id));
    json_object_set_new(t->meta, "last-column-id", json_integer(last_column_id));
    *schema_id = (int)id;
    return load_spec(t); /* the spec's sources must still be there */
}

/* Writes a manifest of n entries; its location and length on LS_OK. */
static ls_status put_manifest(ls_ice_table_t *t, const ls_ice_mentry_t *e, size_t n,
                              char **path_out, int64_t *len_out)
{
    char *schema = json_dumps(current_schema(t), JSON_COMPACT);
    json_t *sj = spec_json(&t->spec);
    char *spec = json_dumps(sj, JSON_COMPACT);
    json_decref(sj);
    ls_buf_t out;
    ls_buf_init(&out);
    ls_status st = ls_ice_manifest_encode(
        &t->spec, schema, (int)json_integer_value(json_object_get(t->meta, "current-schema-id")),
        spec, e, n, &out);
    free(schema);
    free(spec);
    char *u = new_uuid();
    char *rel = ls_asprintf("metadata/%s-m0.avro", u);
    ls_free(u);
    char *key = key_of(t, rel);
    if (st == LS_OK) st = put_bytes(t, key, out.data, out.len, LS_OBJSTORE_PUT_CREATE_ONLY);
    if (st == LS_OK) {
        *path_out = ls_asprintf("%s/%s", t->location, rel);
        *len_out = (int64_t)out.len;
    }
    ls_free(key);
    ls_free(rel);
    ls_buf_free(&out);
    return st;
}

/* ---- manifest merging ----------------------------------------------------
 *
 * Every fast append adds one manifest, and a snapshot's manifest list names
 * every live manifest, so without merging a table committed every second
 * has lists of tens of thousands of entries within a day and every reader
 * opens that many files. Like Iceberg's merging appends (table properties
 * commit.manifest-merge.enabled, commit.manifest.min-count-to-merge,
 * commit.manifest.target-size-bytes, with Iceberg's defaults), once a list
 * would hold min-count manifests the small data manifests of the current
 * spec are rewritten, in bins of up to the target size, into manifests whose
 * entries are EXISTING with their snapshot ids and sequence numbers made
 * explicit (spec "Sequence Number Inheritance"), so every reader plans the
 * same files with the same sequence numbers. A bin takes at most
 * MERGE_MAX_INPUTS manifests, bounding a commit's work on tables written
 * before merging existed. The replaced manifests stay referenced by older
 * snapshots and are deleted when those expire (expire_done). */
#define MERGE_MAX_INPUTS 1000

/* Data files a rewrite removes (ls_ice_table_rewrite): full locations. */
typedef struct removal {
    const char *const *paths;
    size_t n;
    bool *found;         /* per path: live in the parent snapshot */
    int64_t rows, bytes; /* of the files found */
    bool overwrite;      /* rows may go (copy-on-write): no row check, operation "overwrite" */
} removal_t;

typedef struct mlist_build {
    ls_avro_ocf_t *w;
    int64_t snap_id, seq;
    int replaced, created;
    removal_t *rm; /* NULL: an append */
} mlist_build_t;

/* The index of path in rm, or -1. */
static ssize_t removal_find(const removal_t *rm, const char *path)
{
    for (size_t i = 0; i < rm->n; i++)
        if (!strcmp(rm->paths[i], path)) return (ssize_t)i;
    return -1;
}

/* Entries of a parent manifest with their inherited snapshot id and
 * sequence numbers made explicit (spec "Sequence Number Inheritance"), so
 * they keep them when written into a manifest of a later snapshot. */
static void make_explicit(ls_ice_mentry_t *e, int64_t msnap, int64_t mseq)
{
    if (e->snapshot_id < 0) e->snapshot_id = msnap;
    if (e->seq < 0) e->seq = mseq;
    if (e->file_seq < 0) e->file_seq = mseq;
}

/* Moves the live (ADDED, EXISTING) entries of e[0..ne), decoded from the
 * manifest the list record r names, to the end of *all (n entries, cap
 * slots), their snapshot ids and sequence numbers made explicit; frees the
 * DELETED ones and e. */
static void take_live(const ls_av_t *r, ls_ice_mentry_t *e, size_t ne, ls_ice_mentry_t **all,
                      size_t *n, size_t *cap)
{
    int64_t mseq = ls_ice_av_long(r, "sequence_number", NULL, 0);
    int64_t msnap = ls_ice_av_long(r, "added_snapshot_id", NULL, 0);
    for (size_t k = 0; k < ne; k++) {
        if (e[k].status == LS_ICE_DELETED) {
            ls_ice_datafile_clear(&e[k].df);
            continue;
        }
        if (*n == *cap) {
            *cap = *cap ? *cap * 2 : 64;
            *all = ls_realloc(*all, *cap * sizeof **all);
        }
        (*all)[*n] = e[k]; /* takes the data file */
        make_explicit(&(*all)[(*n)++], msnap, mseq);
    }
    ls_free(e);
}

/* A rewrite: the parent list record r names a manifest of entries e[0..ne)
 * (decoded). When it holds a live file rm removes, writes it again with
 * those entries DELETED (by this snapshot) and the others EXISTING, adds
 * that to the list and returns 1; 0 when it holds none (the caller copies
 * the record as it is). Entries DELETED before are dropped. */
static int rewrite_manifest(ls_ice_table_t *t, mlist_build_t *mb, const ls_av_t *r,
                            ls_ice_mentry_t *e, size_t ne, ls_status *st)
{
    bool hit = false;
    for (size_t k = 0; k < ne && !hit; k++)
        hit = e[k].status != LS_ICE_DELETED && removal_find(mb->rm, e[k].df.path) >= 0;
    if (!hit) return 0;
    int64_t mseq = ls_ice_av_long(r, "sequence_number", NULL, 0);
    int64_t msnap = ls_ice_av_long(r, "added_snapshot_id", NULL, 0);
    ls_ice_mentry_t *out = LS_NEWN(ls_ice_mentry_t, ne);
    size_t n = 0;
    ls_ice_mfile_t m = {
        .spec_id = t->spec.spec_id, .seq = mb->seq, .added_snapshot_id = mb->snap_id};
    int64_t min_seq = INT64_MAX;
    for (size_t k = 0; k < ne; k++) {
        if (e[k].status == LS_ICE_DELETED) continue;
        ls_ice_mentry_t *o = &out[n++];
        *o = e[k]; /* a shallow copy: e keeps the data file */
        make_explicit(o, msnap, mseq);
        ssize_t i = removal_find(mb->rm, o->df.path);
        if (i >= 0) {
            o->status = LS_ICE_DELETED;
            o->snapshot_id = mb->snap_id;
            mb->rm->found[i] = true;
            mb->rm->rows += o->df.record_count;
            mb->rm->bytes += o->df.file_size;
            m.deleted_files++;
            m.deleted_rows += o->df.record_count;
        } else {
            o->status = LS_ICE_EXISTING;
            m.existing_files++;
            m.existing_rows += o->df.record_count;
        }
        if (o->seq < min_seq) min_seq = o->seq;
    }
    char *path = NULL;
    *st = put_manifest(t, out, n, &path, &m.length);
    if (*st == LS_OK) {
        m.path = path;
        m.min_seq = min_seq == INT64_MAX ? mb->seq : min_seq;
        ls_ice_mlist_add(mb->w, &m, &t->spec, out, n);
        mb->replaced++;
        mb->created++;
    }
    ls_free(path);
    ls_free(out);
    return 1;
}

/* Reads the data manifest a list record r names into e[0..*ne), with raw as
 * scratch. LS_EINVAL (reason in t->err) for a delete manifest or one this
 * writer cannot read back: its files cannot be accounted for. */
static ls_status read_data_manifest(ls_ice_table_t *t, const ls_av_t *r, ls_buf_t *raw,
                                    ls_ice_mentry_t **e, size_t *ne)
{
    const char *path = ls_ice_av_str(r, "manifest_path");
    if (ls_ice_av_long(r, "content", NULL, 0) != 0 || !path) {
        snprintf(t->err, sizeof t->err, "the table has delete files");
        return LS_EINVAL;
    }
    ls_status st = ls_ice_table_get_file(t, path, raw);
    if (st != LS_OK) return st;
    return ls_ice_manifest_decode(raw->data, raw->len, &t->spec, e, ne, t->err, sizeof t->err);
}

/* A rewrite carries the parent's manifests: those holding a removed file
 * are written again (rewrite_manifest), the others copied; no merging. A
 * manifest this writer cannot read back, or a delete manifest, makes the
 * rewrite fail (LS_EINVAL): its files cannot be checked. */
static ls_status carry_for_rewrite(ls_ice_table_t *t, mlist_build_t *mb, const ls_avro_file_t *f)
{
    ls_status st = LS_OK;
    ls_buf_t raw;
    ls_buf_init(&raw);
    for (size_t i = 0; i < f->nrecords && st == LS_OK; i++) {
        const ls_av_t *r = &f->records[i];
        ls_ice_mentry_t *e;
        size_t ne;
        if ((st = read_data_manifest(t, r, &raw, &e, &ne)) != LS_OK) break;
        if (!rewrite_manifest(t, mb, r, e, ne, &st)) ls_ice_mlist_copy(mb->w, r);
        ls_ice_mentries_free(e, ne);
    }
    ls_buf_free(&raw);
    return st;
}

/* Merges the parent list records idx[0..n) into one manifest added to the
 * list; inputs this writer cannot read back are copied instead. */
static ls_status merge_bin(ls_ice_table_t *t, mlist_build_t *mb, const ls_avro_file_t *f,
                           const size_t *idx, size_t n)
{
    ls_ice_mentry_t *all = NULL;
    size_t nall = 0, cap = 0;
    int64_t min_seq = INT64_MAX, rows = 0;
    ls_status st = LS_OK;
    ls_buf_t raw;
    ls_buf_init(&raw);
    for (size_t i = 0; i < n && st == LS_OK; i++) {
        const ls_av_t *r = &f->records[idx[i]];
        const char *path = ls_ice_av_str(r, "manifest_path");
        st = path ? ls_ice_table_get_file(t, path, &raw) : LS_ECORRUPT;
        if (st != LS_OK) break;
        ls_ice_mentry_t *e;
        size_t ne;
        char derr[200];
        if (ls_ice_manifest_decode(raw.data, raw.len, &t->spec, &e, &ne, derr, sizeof derr) !=
            LS_OK) {
            ls_ice_mlist_copy(mb->w, r); /* not ours to rewrite: keep it as it is */
            continue;
        }
        size_t from = nall;
        take_live(r, e, ne, &all, &nall, &cap);
        for (size_t k = from; k < nall; k++) {
            all[k].status = LS_ICE_EXISTING;
            if (all[k].seq < min_seq) min_seq = all[k].seq;
            rows += all[k].df.record_count;
        }
        mb->replaced++;
    }
    ls_buf_free(&raw);
    if (st == LS_OK && nall) {
        char *path = NULL;
        int64_t len = 0;
        st = put_manifest(t, all, nall, &path, &len);
        if (st == LS_OK) {
            ls_ice_mfile_t m = {.path = path,
                                .length = len,
                                .spec_id = t->spec.spec_id,
                                .seq = mb->seq,
                                .min_seq = min_seq,
                                .added_snapshot_id = mb->snap_id,
                                .existing_files = (int64_t)nall,
                                .existing_rows = rows};
            ls_ice_mlist_add(mb->w, &m, &t->spec, all, nall);
            mb->created++;
        }
        ls_free(path);
    }
    ls_ice_mentries_free(all, nall);
    return st;
}

/* The parent's manifests into the new list, merged when due. */
static ls_status carry_manifests(ls_ice_table_t *t, mlist_build_t *mb, const ls_avro_file_t *f,
                                 bool added)
{
    size_t total = f->nrecords + (added ? 1 : 0);
    bool due = prop_bool(t, "commit.manifest-merge.enabled", true) &&
               total >= (size_t)prop_long(t, "commit.manifest.min-count-to-merge", 100);
    int64_t target = prop_long(t, "commit.manifest.target-size-bytes", 8 << 20);
    bool *merged = LS_NEWN(bool, f->nrecords ? f->nrecords : 1);
    size_t *bin = LS_NEWN(size_t, f->nrecords ? f->nrecords : 1);
    size_t nbin = 0, inputs = 0;
    int64_t bin_bytes = 0;
    ls_status st = LS_OK;
    for (size_t i = 0; due && i < f->nrecords && inputs < MERGE_MAX_INPUTS; i++) {
        const ls_av_t *r = &f->records[i];
        int64_t len = ls_ice_av_long(r, "manifest_length", NULL, 0);
        if (ls_ice_av_long(r, "content", NULL, 0) != 0 ||
            ls_ice_av_long(r, "partition_spec_id", NULL, -1) != t->spec.spec_id || len >= target)
            continue;
        merged[i] = true;
        bin[nbin++] = i;
        inputs++;
        bin_bytes += len;
        if (bin_bytes >= target) {
            st = merge_bin(t, mb, f, bin, nbin);
            nbin = 0;
            bin_bytes = 0;
            if (st != LS_OK) break;
        }
    }
    if (st == LS_OK && nbin > 1) {
        st = merge_bin(t, mb, f, bin, nbin);
    } else if (nbin == 1) {
        merged[bin[0]] = false; /* a bin of one is left as it is */
    }
    for (size_t i = 0; st == LS_OK && i < f->nrecords; i++)
        if (!merged[i]) ls_ice_mlist_copy(mb->w, &f->records[i]);
    ls_free(merged);
    ls_free(bin);
    return st;
}

static ls_status write_manifest_list(ls_ice_table_t *t, json_t *parent, mlist_build_t *mb,
                                     const char *manifest, int64_t manifest_len,
                                     const ls_ice_mentry_t *e, size_t n, char **path_out)
{
    int64_t pid = parent ? (int64_t)json_integer_value(json_object_get(parent, "snapshot-id")) : 0;
    mb->w = ls_ice_mlist_new(mb->snap_id, parent ? &pid : NULL, mb->seq);
    /* the new manifest first (none for an append of no files) */
    if (manifest) {
        int64_t rows = 0;
        for (size_t k = 0; k < n; k++)
            rows += e[k].df.record_count;
        ls_ice_mfile_t m = {.path = manifest,
                            .length = manifest_len,
                            .spec_id = t->spec.spec_id,
                            .seq = mb->seq,
                            .min_seq = mb->seq,
                            .added_snapshot_id = mb->snap_id,
                            .added_files = (int64_t)n,
                            .added_rows = rows};
        ls_ice_mlist_add(mb->w, &m, &t->spec, e, n);
    }
    /* then every manifest of the parent snapshot, merged when due */
    ls_status st = LS_OK;
    const char *plist = parent ? json_string_value(json_object_get(parent, "manifest-list")) : NULL;
    if (plist) {
        ls_buf_t raw;
        ls_buf_init(&raw);
        st = ls_ice_table_get_file(t, plist, &raw);
        ls_avro_file_t f;
        if (st == LS_OK &&
            (st = ls_avro_file_read(raw.data, raw.len, &f, t->err, sizeof t->err)) == LS_OK) {
            st = mb->rm ? carry_for_rewrite(t, mb, &f)
                        : carry_manifests(t, mb, &f, manifest != NULL);
            ls_avro_file_free(&f);
            if (st == LS_OK && mb->replaced) ls_crashpoint("table.manifests_merged");
        }
        ls_buf_free(&raw);
    }
    ls_buf_t out;
    ls_buf_init(&out);
    if (st == LS_OK) st = ls_avro_ocf_finish(mb->w, &out);
    ls_avro_ocf_free(mb->w);
    mb->w = NULL;
    if (st == LS_OK) {
        char *u = new_uuid();
        char *rel = ls_asprintf("metadata/snap-%lld-1-%s.avro", (long long)mb->snap_id, u);
        ls_free(u);
        char *key = key_of(t, rel);
        st = put_bytes(t, key, out.data, out.len, LS_OBJSTORE_PUT_CREATE_ONLY);
        if (st == LS_OK) *path_out = ls_asprintf("%s/%s", t->location, rel);
        ls_free(key);
        ls_free(rel);
    }
    ls_buf_free(&out);
    return st;
}

/* ---- snapshot expiry, old metadata and the reader grace --------------------
 *
 * A table committed every second gains 86,400 snapshots a day, and its
 * metadata file lists them all. Each commit therefore also expires, in the
 * same commit, the oldest snapshots older than the table's snapshot retention
 * (ls_ice_table_set_snapshot_retention; the newest min_keep, the current
 * snapshot and any snapshot a ref names always stay; at most
 * EXPIRE_MAX_PER_COMMIT per commit, so a table with a long history is
 * trimmed over several commits), and trims the metadata log to
 * write.metadata.previous-versions-max entries (Iceberg's property and
 * default); ls_ice_table_expire does the same for a table nobody appends to.
 *
 * Reader grace: an engine that loaded the table keeps reading what it loaded
 * (Spark caches a loaded table for 30 s; a query plans once and reads for
 * minutes), so a file is deleted only once it has been unreferenced for the
 * table's file grace (ls_ice_table_set_file_grace). What stopped being
 * referenced is recorded durably in the table itself, the table property
 * PENDING_KEY: a JSON array, oldest first, of
 *   {"at": ms, "snapshot-id": id, "manifest-list": loc, "removed-files": bool}
 *       a snapshot this table expired at `at`;
 *   {"at": ms, "metadata-file": loc}
 *       a metadata file that left the log (delete-after-commit only),
 *       no longer current since `at` (its successor's timestamp).
 * A commit moves the entries whose grace is over (at + grace <= now) out of
 * the list, and only once that commit has landed (expire_done) deletes their
 * files: a due snapshot's manifest list; the manifests it named that the
 * oldest snapshot still readable (the oldest pending one, else the oldest
 * retained) does not name (history is linear: a manifest absent from that
 * list is in no later list); the data files it removed (entries DELETED by
 * it in the manifests it wrote: every later snapshot lacks them, and every
 * snapshot still readable is later); and due metadata files with their v<N>
 * copies. Grace 0 deletes at the commit that expires, as Iceberg's
 * expireSnapshots does. A crash in between leaves orphans (the sweep below
 * takes them), never a broken table or a file deleted early: a file leaves
 * the pending list only in the commit that precedes its deletion. */
#define EXPIRE_MAX_PER_COMMIT 100
#define PENDING_KEY LS_ICE_CARRY_PREFIX "pending-deletes"

static int64_t summary_long(json_t *summary, const char *key)
{
    const char *s = json_string_value(json_object_get(summary, key));
    return s ? strtoll(s, NULL, 10) : 0;
}

typedef struct expiry {
    size_t expired;  /* snapshots removed by this commit */
    size_t trimmed;  /* metadata-log entries removed */
    json_t *due;     /* pending entries to delete once the commit landed */
    char *keep_list; /* manifest list whose manifests stay (NULL: keep all) */
    bool due_snapshots;
} expiry_t;

static bool ref_names(json_t *refs, json_int_t id)
{
    const char *k;
    json_t *v;
    json_object_foreach(refs, k, v) if (json_integer_value(json_object_get(v, "snapshot-id")) ==
                                        id) return true;
    return false;
}

/* The pending list of metadata meta (a new array when there is none). */
static json_t *pending_of(json_t *meta)
{
    const char *v =
        json_string_value(json_object_get(json_object_get(meta, "properties"), PENDING_KEY));
    json_t *p = v ? json_loads(v, 0, NULL) : NULL;
    if (json_is_array(p)) return p;
    json_decref(p);
    return json_array();
}

static void expire_plan(ls_ice_table_t *t, json_t *next, int64_t now_ms, expiry_t *x)
{
    memset(x, 0, sizeof *x);
    x->due = json_array();
    json_t *pending = pending_of(next);
    json_t *snaps = json_object_get(next, "snapshots");
    json_t *refs = json_object_get(next, "refs");
    json_int_t cur = json_integer_value(json_object_get(next, "current-snapshot-id"));
    size_t keep = t->snapshot_min_keep > 1 ? (size_t)t->snapshot_min_keep : 1;
    json_t *gone = json_object(); /* expired ids, as decimal keys */
    while (t->snapshot_retention_ms > 0 && json_array_size(snaps) > keep &&
           x->expired < EXPIRE_MAX_PER_COMMIT) {
        json_t *s = json_array_get(snaps, 0);
        json_int_t id = json_integer_value(json_object_get(s, "snapshot-id"));
        if (id == cur || ref_names(refs, id) ||
            json_integer_value(json_object_get(s, "timestamp-ms")) >=
                now_ms - t->snapshot_retention_ms)
            break;
        json_t *sum = json_object_get(s, "summary");
        json_t *e = json_pack("{s:I, s:I, s:b}", "at", (json_int_t)now_ms, "snapshot-id", id,
                              "removed-files", summary_long(sum, "deleted-data-files") > 0);
        json_t *list = json_object_get(s, "manifest-list");
        if (json_is_string(list)) json_object_set(e, "manifest-list", list);
        json_array_append_new(pending, e);
        char key[32];
        snprintf(key, sizeof key, "%lld", (long long)id);
        json_object_set_new(gone, key, json_true());
        x->expired++;
        json_array_remove(snaps, 0);
    }
    if (x->expired) {
        json_t *log = json_object_get(next, "snapshot-log"), *kept = json_array(), *e;
        size_t i;
        json_array_foreach(log, i, e)
        {
            char key[32];
            snprintf(key, sizeof key, "%lld",
                     (long long)json_integer_value(json_object_get(e, "snapshot-id")));
            if (!json_object_get(gone, key)) json_array_append(kept, e);
        }
        json_object_set_new(next, "snapshot-log", kept);
    }
    json_decref(gone);
    json_t *mlog = json_object_get(next, "metadata-log");
    size_t max = (size_t)prop_long(t, "write.metadata.previous-versions-max", 100);
    if (max < 1) max = 1;
    bool delete_old = prop_bool(t, "write.metadata.delete-after-commit.enabled", false);
    while (json_array_size(mlog) > max) {
        const char *m =
            json_string_value(json_object_get(json_array_get(mlog, 0), "metadata-file"));
        /* current until its successor was written: the next entry's time */
        json_t *succ = json_object_get(json_array_get(mlog, 1), "timestamp-ms");
        if (delete_old && m)
            json_array_append_new(pending, json_pack("{s:O, s:s}", "at", succ, "metadata-file", m));
        json_array_remove(mlog, 0);
        x->trimmed++;
    }
    /* entries whose grace is over leave the list (due); the rest stay */
    json_t *rest = json_array(), *e;
    size_t i;
    json_array_foreach(pending, i, e)
    {
        bool is_due =
            (int64_t)json_integer_value(json_object_get(e, "at")) + t->file_grace_ms <= now_ms;
        json_array_append(is_due ? x->due : rest, e);
        bool snap = json_object_get(e, "snapshot-id") != NULL;
        if (is_due && snap) x->due_snapshots = true;
        const char *l = json_string_value(json_object_get(e, "manifest-list"));
        if (!is_due && snap && !x->keep_list && l) x->keep_list = ls_strdup(l);
    }
    if (!x->keep_list) {
        const char *l =
            json_string_value(json_object_get(json_array_get(snaps, 0), "manifest-list"));
        if (l) x->keep_list = ls_strdup(l);
    }
    json_t *props = json_object_get(next, "properties");
    if (!props) json_object_set_new(next, "properties", props = json_object());
    if (json_array_size(rest)) {
        char *text = json_dumps(rest, JSON_COMPACT);
        json_object_set_new(props, PENDING_KEY, json_string(text));
        free(text);
    } else {
        json_object_del(props, PENDING_KEY);
    }
    json_decref(rest);
    json_decref(pending);
}

static void expiry_clear(expiry_t *x)
{
    json_decref(x->due);
    ls_free(x->keep_list);
}

/* Adds the manifest paths of the list at loc to set (keys: locations). */
static ls_status list_manifests(ls_ice_table_t *t, const char *loc, json_t *set)
{
    ls_buf_t raw;
    ls_buf_init(&raw);
    ls_status st = ls_ice_table_get_file(t, loc, &raw);
    ls_avro_file_t f;
    if (st == LS_OK &&
        (st = ls_avro_file_read(raw.data, raw.len, &f, t->err, sizeof t->err)) == LS_OK) {
        for (size_t i = 0; i < f.nrecords; i++) {
            const char *p = ls_ice_av_str(&f.records[i], "manifest_path");
            if (p)
                json_object_set_new(
                    set, p,
                    json_integer(ls_ice_av_long(&f.records[i], "added_snapshot_id", NULL, -1)));
        }
        ls_avro_file_free(&f);
    }
    ls_buf_free(&raw);
    return st;
}

/* A manifest entry that keeps its data file: live (ADDED, EXISTING), or
 * DELETED by a snapshot still retained (its changes, read incrementally,
 * include the file's rows). Once the deleting snapshot has expired, every
 * retained snapshot is newer (expiry takes the oldest first) and none has
 * the file live, though the entry may stay in a manifest until the next
 * merge rewrites it. A DELETED entry without a snapshot id inherits the
 * manifest's added_snapshot_id (spec: "Snapshot ID inheritance"). */
static int64_t entry_deleted_by(const ls_av_t *rec, int64_t manifest_snapshot)
{
    if (ls_ice_av_long(rec, "status", NULL, -1) != LS_ICE_DELETED) return -1;
    const ls_av_t *sid = ls_av_field(rec, "snapshot_id");
    return sid && sid->kind == LS_AV_LONG ? sid->l : manifest_snapshot;
}

static bool entry_keeps_file(const ls_av_t *rec, int64_t manifest_snapshot, json_t *retained)
{
    int64_t by = entry_deleted_by(rec, manifest_snapshot);
    if (by < 0) return true;
    char key[32];
    snprintf(key, sizeof key, "%lld", (long long)by);
    return json_object_get(retained, key) != NULL;
}

/* The v<N> copy of a committed metadata file ("<N %05d>-<uuid>..." or
 * "v<N>..." under metadata/), or NULL. */
static char *published_copy(const char *loc)
{
    const char *base = strrchr(loc, '/');
    if (!base) return NULL;
    base++;
    char *end;
    long v = strtol(base[0] == 'v' ? base + 1 : base, &end, 10);
    if (v < 1 || (base[0] != 'v' && *end != '-')) return NULL;
    return ls_asprintf("%.*s/v%ld.metadata.json", (int)(base - 1 - loc), loc, v);
}

/* Deletes the data files snapshot id removed: the entries DELETED by it in
 * the manifests it wrote (those its list names with its id as adder). */
static void delete_removed_files(ls_ice_table_t *t, const char *list, int64_t id)
{
    json_t *mans = json_object();
    if (list_manifests(t, list, mans) == LS_OK) {
        const char *k;
        json_t *v;
        ls_buf_t raw;
        ls_buf_init(&raw);
        json_object_foreach(mans, k, v)
        {
            ls_avro_file_t f;
            if (json_integer_value(v) != id || ls_ice_table_get_file(t, k, &raw) != LS_OK ||
                ls_avro_file_read(raw.data, raw.len, &f, t->err, sizeof t->err) != LS_OK)
                continue; /* unreadable: its files stay (orphans, not losses) */
            for (size_t r = 0; r < f.nrecords; r++) {
                const ls_av_t *d = ls_av_field(&f.records[r], "data_file");
                const char *p = d ? ls_ice_av_str(d, "file_path") : NULL;
                if (p && entry_deleted_by(&f.records[r], id) == id) delete_location(t, p);
            }
            ls_avro_file_free(&f);
        }
        ls_buf_free(&raw);
    }
    json_decref(mans);
}

static void expire_done(ls_ice_table_t *t, const expiry_t *x)
{
    json_t *e;
    size_t i;
    if (x->expired || json_array_size(x->due)) ls_crashpoint("table.expiry_committed");
    if (x->due_snapshots) {
        json_t *gone = json_object(), *live = json_object();
        bool ok = x->keep_list && list_manifests(t, x->keep_list, live) == LS_OK;
        json_array_foreach(x->due, i, e)
        {
            const char *l = json_string_value(json_object_get(e, "manifest-list"));
            if (!l) continue;
            if (list_manifests(t, l, gone) != LS_OK) ok = false;
            if (json_is_true(json_object_get(e, "removed-files")))
                delete_removed_files(
                    t, l, (int64_t)json_integer_value(json_object_get(e, "snapshot-id")));
        }
        const char *k;
        json_t *v;
        if (ok) /* an unreadable list: keep every manifest (orphans, not losses) */
            json_object_foreach(gone, k, v) if (!json_object_get(live, k)) delete_location(t, k);
        json_decref(gone);
        json_decref(live);
    }
    json_array_foreach(x->due, i, e)
    {
        const char *l = json_string_value(json_object_get(e, "manifest-list"));
        if (l) delete_location(t, l);
        const char *m = json_string_value(json_object_get(e, "metadata-file"));
        if (!m) continue;
        char *copy = published_copy(m);
        delete_location(t, m);
        if (copy && strcmp(copy, m)) delete_location(t, copy);
        ls_free(copy);
    }
    t->maint.snapshots_expired += x->expired;
}

void ls_ice_table_set_file_grace(ls_ice_table_t *t, int64_t grace_ms)
{
    t->file_grace_ms = grace_ms > 0 ? grace_ms : 0;
}

void ls_ice_table_set_snapshot_retention(ls_ice_table_t *t, int64_t retention_ms, int min_keep)
{
    t->snapshot_retention_ms = retention_ms;
    t->snapshot_min_keep = min_keep > 1 ? min_keep : 1;
}

void ls_ice_table_maint_stats(const ls_ice_table_t *t, ls_ice_maint_stats_t *out)
{
    *out = t->maint;
}

/* ---- append --------------------------------------------------------------- */

static void summary_set(json_t *summary, const char *key, int64_t v)
{
    char num[32];
    snprintf(num, sizeof num, "%lld", (long long)v);
    json_object_set_new(summary, key, json_string(num));
}

static bool carried(const char *key)
{
    return !strncmp(key, LS_ICE_CARRY_PREFIX, strlen(LS_ICE_CARRY_PREFIX));
}

/* Commits next (built from t->meta, which it replaces on LS_OK) as the
 * table's next version at now_ms: the current metadata goes into the
 * metadata log, expiry is planned into it, and its deletions follow once
 * the commit landed. next is consumed. */
static ls_status land(ls_ice_table_t *t, json_t *next, int64_t now_ms)
{
    json_array_append_new(json_object_get(next, "metadata-log"),
                          json_pack("{s:O, s:s}", "timestamp-ms",
                                    json_object_get(t->meta, "last-updated-ms"), "metadata-file",
                                    t->meta_location));
    json_object_set_new(next, "last-updated-ms", json_integer(now_ms));
    expiry_t x;
    expire_plan(t, next, now_ms, &x);
    char *rel = NULL;
    ls_status st = write_metadata(t, next, t->version + 1, &rel);
    if (st != LS_OK) {
        expiry_clear(&x);
        json_decref(next);
        return st;
    }
    json_decref(t->meta);
    t->meta = next;
    t->version++;
    set_meta_location(t, rel);
    ls_free(rel);
    expire_done(t, &x);
    expiry_clear(&x);
    return LS_OK;
}

/* One new snapshot adding files[0..n) and, for a rewrite (rm), removing
 * rm's files: an "append" or a "replace" (spec "Snapshots"). */
static ls_status commit_files(ls_ice_table_t *t, const ls_ice_datafile_t *files, size_t n,
                              removal_t *rm, const char *const *summary_kv, int64_t now_ms,
                              int64_t *snapshot_id)
{
    t->err[0] = 0;
    /* Timestamps never go back: Iceberg's Java reader refuses a table whose
     * snapshot or metadata log goes back more than a minute, which a committer
     * whose clock is behind the previous one's would otherwise write */
    int64_t last_updated = (int64_t)json_integer_value(json_object_get(t->meta, "last-updated-ms"));
    if (now_ms < last_updated) now_ms = last_updated;
    json_t *parent = current_snapshot(t);
    mlist_build_t mb = {
        .seq = (int64_t)json_integer_value(json_object_get(t->meta, "last-sequence-number")) + 1,
        .rm = rm};
    do {
        ls_random_bytes(&mb.snap_id, sizeof mb.snap_id);
        mb.snap_id &= INT64_MAX;
    } while (mb.snap_id == 0);
    char *manifest = NULL, *list = NULL;
    int64_t manifest_len = 0;
    ls_ice_mentry_t *entries = n ? LS_NEWN(ls_ice_mentry_t, n) : NULL;
    for (size_t k = 0; k < n; k++)
        entries[k] = (ls_ice_mentry_t){.status = LS_ICE_ADDED,
                                       .snapshot_id = mb.snap_id,
                                       .seq = -1,
                                       .file_seq = -1,
                                       .df = files[k]};
    /* n == 0 still makes a snapshot: it moves carried properties (e.g. a
     * log's offset past records that produce no rows) */
    ls_status st = n ? put_manifest(t, entries, n, &manifest, &manifest_len) : LS_OK;
    if (st == LS_OK)
        st = write_manifest_list(t, parent, &mb, manifest, manifest_len, entries, n, &list);
    ls_free(entries); /* the data files stay the caller's */
    ls_free(manifest);
    int64_t recs = 0, bytes = 0;
    for (size_t k = 0; k < n; k++)
        recs += files[k].record_count, bytes += files[k].file_size;
    for (size_t i = 0; st == LS_OK && rm && i < rm->n; i++)
        if (!rm->found[i]) {
            snprintf(t->err, sizeof t->err, "%s is not a live file of the table", rm->paths[i]);
            st = LS_ECONFLICT; /* another commit removed it: reload */
        }
    if (st == LS_OK && rm && !rm->overwrite && recs != rm->rows) {
        snprintf(t->err, sizeof t->err,
                 "a rewrite must keep every row: %lld rows removed, %lld added",
                 (long long)rm->rows, (long long)recs);
        st = LS_EINVAL;
    }
    if (st != LS_OK) {
        ls_free(list); /* its manifests are orphans now */
        return st;
    }

    /* summary (spec "Snapshots": operation plus metrics, all strings) */
    json_t *psum = parent ? json_object_get(parent, "summary") : NULL;
    json_t *summary = json_object();
    json_object_set_new(summary, "operation",
                        json_string(!rm             ? "append"
                                    : rm->overwrite ? "overwrite"
                                                    : "replace"));
    summary_set(summary, "added-data-files", (int64_t)n);
    summary_set(summary, "added-records", recs);
    summary_set(summary, "added-files-size", bytes);
    int64_t gone_files = 0, gone_rows = 0, gone_bytes = 0;
    if (rm) {
        gone_files = (int64_t)rm->n, gone_rows = rm->rows, gone_bytes = rm->bytes;
        summary_set(summary, "deleted-data-files", gone_files);
        summary_set(summary, "deleted-records", gone_rows);
        summary_set(summary, "removed-files-size", gone_bytes);
    }
    summary_set(summary, "total-data-files",
                summary_long(psum, "total-data-files") + (int64_t)n - gone_files);
    summary_set(summary, "total-records", summary_long(psum, "total-records") + recs - gone_rows);
    summary_set(summary, "total-files-size",
                summary_long(psum, "total-files-size") + bytes - gone_bytes);
    summary_set(summary, "total-delete-files", 0);
    summary_set(summary, "total-position-deletes", 0);
    summary_set(summary, "total-equality-deletes", 0);
    if (mb.replaced) {
        summary_set(summary, "manifests-created", mb.created + (n ? 1 : 0));
        summary_set(summary, "manifests-replaced", mb.replaced);
    }

    json_t *next = json_deep_copy(t->meta);
    json_t *props = json_object_get(next, "properties");
    if (!props) json_object_set_new(next, "properties", props = json_object());
    /* carried keys live in the table properties, set in the same commit; a
     * table written before kept them in every snapshot summary: move them */
    const char *k;
    json_t *v;
    json_object_foreach(psum, k, v) if (carried(k) && !json_object_get(props, k))
        json_object_set(props, k, v);
    for (size_t i = 0; summary_kv && summary_kv[i] && summary_kv[i + 1]; i += 2) {
        json_object_set_new(summary, summary_kv[i], json_string(summary_kv[i + 1]));
        if (carried(summary_kv[i]))
            json_object_set_new(props, summary_kv[i], json_string(summary_kv[i + 1]));
    }

    json_t *snap = json_pack(
        "{s:I, s:I, s:I, s:s, s:o, s:I}", "snapshot-id", (json_int_t)mb.snap_id, "sequence-number",
        (json_int_t)mb.seq, "timestamp-ms", (json_int_t)now_ms, "manifest-list", list, "summary",
        summary, "schema-id", json_integer_value(json_object_get(t->meta, "current-schema-id")));
    ls_free(list);
    if (parent) json_object_set(snap, "parent-snapshot-id", json_object_get(parent, "snapshot-id"));

    json_array_append_new(json_object_get(next, "snapshots"), snap);
    json_object_set_new(next, "current-snapshot-id", json_integer(mb.snap_id));
    json_object_set_new(next, "last-sequence-number", json_integer(mb.seq));
    json_array_append_new(json_object_get(next, "snapshot-log"),
                          json_pack("{s:I, s:I}", "timestamp-ms", (json_int_t)now_ms, "snapshot-id",
                                    (json_int_t)mb.snap_id));
    json_t *refs = json_object_get(next, "refs");
    if (!refs) json_object_set_new(next, "refs", refs = json_object());
    json_object_set_new(
        refs, "main",
        json_pack("{s:I, s:s}", "snapshot-id", (json_int_t)mb.snap_id, "type", "branch"));
    if ((st = land(t, next, now_ms)) != LS_OK) return st;
    t->maint.manifests_replaced += (uint64_t)mb.replaced;
    if (snapshot_id) *snapshot_id = mb.snap_id;
    return LS_OK;
}

ls_status ls_ice_table_append(ls_ice_table_t *t, const ls_ice_datafile_t *files, size_t n,
                              const char *const *summary_kv, int64_t now_ms, int64_t *snapshot_id)
{
    return commit_files(t, files, n, NULL, summary_kv, now_ms, snapshot_id);
}

ls_status ls_ice_table_rewrite(ls_ice_table_t *t, const char *const *removed, size_t nremoved,
                               const ls_ice_datafile_t *added, size_t nadded, int64_t now_ms,
                               int64_t *snapshot_id)
{
    if (!nremoved || !current_snapshot(t)) {
        snprintf(t->err, sizeof t->err, "a rewrite needs files to remove");
        return LS_EINVAL;
    }
    removal_t rm = {.paths = removed, .n = nremoved, .found = LS_NEWN(bool, nremoved)};
    ls_status st = commit_files(t, added, nadded, &rm, NULL, now_ms, snapshot_id);
    ls_free(rm.found);
    return st;
}

ls_status ls_ice_table_overwrite(ls_ice_table_t *t, const char *const *removed, size_t nremoved,
                                 const ls_ice_datafile_t *added, size_t nadded,
                                 const char *const *summary_kv, int64_t now_ms,
                                 int64_t *snapshot_id)
{
    if (!nremoved) return commit_files(t, added, nadded, NULL, summary_kv, now_ms, snapshot_id);
    removal_t rm = {
        .paths = removed, .n = nremoved, .found = LS_NEWN(bool, nremoved), .overwrite = true};
    ls_status st = commit_files(t, added, nadded, &rm, summary_kv, now_ms, snapshot_id);
    ls_free(rm.found);
    return st;
}

ls_status ls_ice_table_expire(ls_ice_table_t *t, int64_t now_ms, bool *committed, int64_t *next_ms)
{
    t->err[0] = 0;
    *committed = false;
    int64_t last_updated = (int64_t)json_integer_value(json_object_get(t->meta, "last-updated-ms"));
    if (now_ms < last_updated) now_ms = last_updated;
    json_t *next = json_deep_copy(t->meta);
    expiry_t x;
    expire_plan(t, next, now_ms, &x);
    ls_status st = LS_OK;
    if (x.expired || x.due_snapshots || x.trimmed) {
        /* a commit of its own, as Iceberg's expireSnapshots: the snapshots
         * leave the metadata and their files become pending */
        json_decref(next);
        st = land(t, json_deep_copy(t->meta), now_ms);
        if (st == LS_OK) *committed = true;
    } else {
        /* only metadata files are due: they are nobody's reference, so they
         * go without a commit (their entries leave the list at the next one;
         * deleting again is harmless); no commit also means no new pending
         * metadata file, so an idle table settles */
        json_decref(next);
        expire_done(t, &x);
    }
    expiry_clear(&x);
    /* when something can next be due: a pending entry's grace, or the
     * oldest snapshot's retention */
    int64_t when = INT64_MAX;
    json_t *pending = pending_of(t->meta), *e;
    size_t i;
    json_array_foreach(pending, i, e)
    {
        int64_t at = (int64_t)json_integer_value(json_object_get(e, "at")) + t->file_grace_ms;
        if (at < when) when = at;
    }
    json_decref(pending);
    json_t *snaps = json_object_get(t->meta, "snapshots");
    if (t->snapshot_retention_ms > 0 && json_array_size(snaps) > 1) {
        int64_t at =
            (int64_t)json_integer_value(json_object_get(json_array_get(snaps, 0), "timestamp-ms")) +
            t->snapshot_retention_ms + 1;
        if (at < when) when = at;
    }
    *next_ms = when;
    return st;
}

ls_status ls_ice_table_live_files(ls_ice_table_t *t, ls_ice_mentry_t **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    t->err[0] = 0;
    json_t *snap = current_snapshot(t);
    const char *list = snap ? json_string_value(json_object_get(snap, "manifest-list")) : NULL;
    if (!list) return LS_OK;
    ls_buf_t raw;
    ls_buf_init(&raw);
    ls_avro_file_t f;
    ls_status st = ls_ice_table_get_file(t, list, &raw);
    if (st != LS_OK ||
        (st = ls_avro_file_read(raw.data, raw.len, &f, t->err, sizeof t->err)) != LS_OK) {
        ls_buf_free(&raw);
        return st;
    }
    size_t cap = 0;
    for (size_t i = 0; i < f.nrecords && st == LS_OK; i++) {
        const ls_av_t *r = &f.records[i];
        ls_ice_mentry_t *e;
        size_t ne;
        if ((st = read_data_manifest(t, r, &raw, &e, &ne)) != LS_OK) break;
        take_live(r, e, ne, out, n, &cap);
    }
    ls_avro_file_free(&f);
    ls_buf_free(&raw);
    if (st != LS_OK) {
        ls_ice_mentries_free(*out, *n);
        *out = NULL;
        *n = 0;
    }
    return st;
}

/* ---- orphan files -----------------------------------------------------------
 *
 * Files under the table's data/ and metadata/ that no retained snapshot and
 * no metadata-log entry references: data files and manifests of commits that
 * failed or crashed, the leftovers of a crash between a commit and its
 * clean-up, and files engines wrote before the read-only catalog refused
 * their commit. A file is deleted only when it was last written before
 * older_than_ms (the grace period: a commit in flight — ours or another
 * broker's — writes its files first and commits within it). Referenced: the
 * current metadata file and the metadata log (with their v<N> copies and the
 * version hint), every retained snapshot's manifest list, every manifest
 * those lists name and every data file those manifests name live, or name
 * DELETED by a retained snapshot (entry_keeps_file). Any read failure
 * deletes nothing. */
ls_status ls_ice_table_remove_orphans(ls_ice_table_t *t, int64_t older_than_ms, uint64_t *deleted)
{
    *deleted = 0;
    t->err[0] = 0;
    json_t *refs = json_object(), *manifests = json_object(), *s, *e;
    size_t i;
    char *copy;
    json_object_set_new(refs, t->meta_location, json_true());
    if ((copy = published_copy(t->meta_location))) json_object_set_new(refs, copy, json_true());
    ls_free(copy);
    json_array_foreach(json_object_get(t->meta, "metadata-log"), i, e)
    {
        const char *m = json_string_value(json_object_get(e, "metadata-file"));
        if (!m) continue;
        json_object_set_new(refs, m, json_true());
        if ((copy = published_copy(m))) json_object_set_new(refs, copy, json_true());
        ls_free(copy);
    }
    char *hint = ls_asprintf("%s/metadata/version-hint.text", t->location);
    json_object_set_new(refs, hint, json_true());
    ls_free(hint);
    ls_status st = LS_OK;
    json_t *retained = json_object(); /* snapshot ids, as decimal keys */
    /* what is pending deletion is still readable: protected like the rest */
    json_t *pending = pending_of(t->meta),
           *readable = json_copy(json_object_get(t->meta, "snapshots"));
    json_array_foreach(pending, i, e)
    {
        const char *m = json_string_value(json_object_get(e, "metadata-file"));
        if (m) {
            json_object_set_new(refs, m, json_true());
            if ((copy = published_copy(m))) json_object_set_new(refs, copy, json_true());
            ls_free(copy);
        } else {
            json_array_append(readable, e);
        }
    }
    json_decref(pending);
    json_array_foreach(readable, i, s)
    {
        char key[32];
        snprintf(key, sizeof key, "%lld",
                 (long long)json_integer_value(json_object_get(s, "snapshot-id")));
        json_object_set_new(retained, key, json_true());
        const char *l = json_string_value(json_object_get(s, "manifest-list"));
        if (!l) continue;
        json_object_set_new(refs, l, json_true());
        if ((st = list_manifests(t, l, manifests)) != LS_OK) break;
    }
    json_decref(readable);
    const char *k;
    json_t *v;
    ls_buf_t raw;
    ls_buf_init(&raw);
    json_object_foreach(manifests, k, v)
    {
        if (st != LS_OK) break;
        json_object_set_new(refs, k, json_true());
        if ((st = ls_ice_table_get_file(t, k, &raw)) != LS_OK) break;
        ls_avro_file_t f;
        if ((st = ls_avro_file_read(raw.data, raw.len, &f, t->err, sizeof t->err)) != LS_OK) break;
        for (size_t r = 0; r < f.nrecords; r++) {
            const ls_av_t *d = ls_av_field(&f.records[r], "data_file");
            const char *p = d ? ls_ice_av_str(d, "file_path") : NULL;
            if (p && entry_keeps_file(&f.records[r], json_integer_value(v), retained))
                json_object_set_new(refs, p, json_true());
        }
        ls_avro_file_free(&f);
    }
    ls_buf_free(&raw);
    json_decref(retained);
    bool announced = false;
    /* every key under the table's location: engines write where they like
     * (Spark's data/<col>=<value>/...) */
    if (st == LS_OK) {
        char *prefix = ls_asprintf("%s/", t->prefix);
        ls_objinfo_t *objs = NULL;
        size_t n = 0;
        st = ls_objstore_list(t->os, prefix, &objs, &n);
        if (st != LS_OK) snprintf(t->err, sizeof t->err, "list %s: %s", prefix, ls_status_str(st));
        size_t plen = strlen(t->prefix);
        for (size_t o = 0; st == LS_OK && o < n; o++) {
            if (objs[o].mtime_ms >= older_than_ms) continue;
            char *loc = ls_asprintf("%s%s", t->location, objs[o].key + plen);
            if (!json_object_get(refs, loc)) {
                if (!announced) {
                    ls_crashpoint("table.orphans_found");
                    announced = true;
                }
                if (ls_objstore_del(t->os, objs[o].key) == LS_OK) (*deleted)++;
            }
            ls_free(loc);
        }
        ls_objinfo_free(objs, n);
        ls_free(prefix);
    }
    t->maint.files_deleted += *deleted;
    json_decref(refs);
    json_decref(manifests);
    return st;
}
