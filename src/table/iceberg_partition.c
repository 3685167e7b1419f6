#include "table/iceberg_table_int.h"

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
void ls_ice_transform_text(const ls_ice_part_field_t *f, char *out, size_t cap)
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
