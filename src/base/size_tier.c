/* Size-tiered merge runs; the rule is in size_tier.h. */
#include "base/size_tier.h"

bool ls_tier_next_run(size_t n, size_t from, const ls_tier_rule_t *rule, ls_tier_fits_fn fits,
                      void *arg, size_t *start, size_t *end)
{
    for (size_t s = from; s < n; s++) {
        uint64_t bytes, largest, b;
        if (!fits(arg, s, s, &bytes)) continue;
        largest = bytes;
        size_t best = s; /* the longest run found from s; s: none */
        for (size_t e = s + 1; e < n && e - s < rule->max_items; e++) {
            if (!fits(arg, s, e, &b) || bytes + b > rule->max_bytes) break;
            bytes += b;
            if (b > largest) largest = b;
            if (e + 1 - s >= rule->min_items && largest * rule->growth <= bytes) best = e;
        }
        if (best > s) {
            *start = s;
            *end = best;
            return true;
        }
    }
    return false;
}
