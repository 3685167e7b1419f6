/* Size-tiered merge runs: which consecutive items (compacted objects of a
 * log, data files of a table partition) to rewrite into one, so that small
 * items stay few while every byte is rewritten only a few times.
 *
 * A run is at least min_items and at most max_items consecutive items that
 * the caller lets belong together (the `fits` callback: adjacency, kind,
 * time span), holding at most max_bytes, whose largest item is at most
 * 1/growth of the run's bytes. So whenever a byte is rewritten, the item
 * holding it grows at least `growth` times: a byte is rewritten at most
 * log_growth(max_bytes / first size) times, and a big old item never absorbs
 * a trickle of small new ones. Users: keycompact.c ("Merging small
 * objects") and table/file_rewrite.c. No I/O, no state. */
#ifndef LS_SIZE_TIER_H
#define LS_SIZE_TIER_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ls_tier_rule {
    size_t min_items, max_items; /* 2 <= min_items <= max_items */
    uint64_t max_bytes;          /* a run's input at most */
    uint64_t growth;             /* run bytes >= growth x its largest item */
} ls_tier_rule_t;

/* Whether item `next` may end a run that starts at `first` (next == first:
 * whether a run may start there; next > first: the run holds first..next-1
 * already), and its size in bytes. */
typedef bool (*ls_tier_fits_fn)(void *arg, size_t first, size_t next, uint64_t *bytes);

/* The longest run of items [*start, *end] at or after `from` (the first
 * start that has one), of n items; false when there is none. */
bool ls_tier_next_run(size_t n, size_t from, const ls_tier_rule_t *rule, ls_tier_fits_fn fits,
                      void *arg, size_t *start, size_t *end);
#endif
