/* Latency histogram with HDR-like log buckets (bench driver only).
 *
 * Values are microseconds. Values below 128 get one bucket each (exact); above,
 * every power of two is split into 64 equal sub-buckets, so a recorded value is
 * known to within 1/64 (~1.6%) of itself. Fixed size (no allocation), covers up
 * to 2^40 us. Percentiles report the midpoint of the bucket that holds them.
 * Not thread-safe: each thread keeps its own and merges. */
#ifndef LSB_HIST_H
#define LSB_HIST_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define LSB_HIST_SUB 64
#define LSB_HIST_MAX_MSB 40
#define LSB_HIST_N (128 + (LSB_HIST_MAX_MSB - 7 + 1) * LSB_HIST_SUB)

typedef struct lsb_hist {
    uint64_t b[LSB_HIST_N];
    uint64_t count;
    uint64_t min, max;
    double sum;
} lsb_hist_t;

static inline void lsb_hist_init(lsb_hist_t *h)
{
    memset(h, 0, sizeof *h);
    h->min = UINT64_MAX;
}

static inline int lsb_hist_index(uint64_t v)
{
    if (v < 128) return (int)v;
    int msb = 63 - __builtin_clzll(v);
    if (msb > LSB_HIST_MAX_MSB) return LSB_HIST_N - 1;
    int shift = msb - 6;
    return 128 + (msb - 7) * LSB_HIST_SUB + (int)((v >> shift) - 64);
}

/* [lo, hi] of bucket i, inclusive. */
static inline void lsb_hist_range(int i, uint64_t *lo, uint64_t *hi)
{
    if (i < 128) {
        *lo = *hi = (uint64_t)i;
        return;
    }
    int msb = (i - 128) / LSB_HIST_SUB + 7;
    int shift = msb - 6;
    uint64_t sub = (uint64_t)((i - 128) % LSB_HIST_SUB) + 64;
    *lo = sub << shift;
    *hi = ((sub + 1) << shift) - 1;
}

static inline void lsb_hist_add(lsb_hist_t *h, int64_t v_us)
{
    uint64_t v = v_us < 0 ? 0 : (uint64_t)v_us;
    h->b[lsb_hist_index(v)]++;
    h->count++;
    h->sum += (double)v;
    if (v < h->min) h->min = v;
    if (v > h->max) h->max = v;
}

static inline void lsb_hist_merge(lsb_hist_t *dst, const lsb_hist_t *src)
{
    for (int i = 0; i < LSB_HIST_N; i++)
        dst->b[i] += src->b[i];
    dst->count += src->count;
    dst->sum += src->sum;
    if (src->min < dst->min) dst->min = src->min;
    if (src->max > dst->max) dst->max = src->max;
}

/* Value (us) at quantile q in [0,1]: the midpoint of the bucket holding it,
 * clamped to the observed min/max. */
static inline double lsb_hist_quantile(const lsb_hist_t *h, double q)
{
    if (!h->count) return 0;
    uint64_t rank = (uint64_t)(q * (double)h->count + 0.5);
    if (rank < 1) rank = 1;
    if (rank > h->count) rank = h->count;
    uint64_t seen = 0;
    for (int i = 0; i < LSB_HIST_N; i++) {
        seen += h->b[i];
        if (seen >= rank) {
            uint64_t lo, hi;
            lsb_hist_range(i, &lo, &hi);
            double mid = ((double)lo + (double)hi) / 2;
            if (mid < (double)h->min) mid = (double)h->min;
            if (mid > (double)h->max) mid = (double)h->max;
            return mid;
        }
    }
    return (double)h->max;
}

/* JSON object with summary percentiles in milliseconds, plus the non-empty
 * buckets as [upper_bound_ms, count] pairs (for CDF plots). */
static inline void lsb_hist_json(FILE *f, const lsb_hist_t *h)
{
    fprintf(f,
            "{\"count\":%llu,\"min_ms\":%.3f,\"mean_ms\":%.3f,\"p50_ms\":%.3f,"
            "\"p90_ms\":%.3f,\"p99_ms\":%.3f,\"p999_ms\":%.3f,\"max_ms\":%.3f,\"buckets\":[",
            (unsigned long long)h->count, h->count ? (double)h->min / 1000 : 0,
            h->count ? h->sum / (double)h->count / 1000 : 0, lsb_hist_quantile(h, 0.50) / 1000,
            lsb_hist_quantile(h, 0.90) / 1000, lsb_hist_quantile(h, 0.99) / 1000,
            lsb_hist_quantile(h, 0.999) / 1000, (double)h->max / 1000);
    int first = 1;
    for (int i = 0; i < LSB_HIST_N; i++) {
        if (!h->b[i]) continue;
        uint64_t lo, hi;
        lsb_hist_range(i, &lo, &hi);
        fprintf(f, "%s[%.3f,%llu]", first ? "" : ",", (double)hi / 1000,
                (unsigned long long)h->b[i]);
        first = 0;
    }
    fprintf(f, "]}");
}

#endif
