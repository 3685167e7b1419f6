#include "table/iceberg_table_int.h"

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
    ls_free(df->referenced_data_file);
    memset(df, 0, sizeof *df);
}
