/* The non-cryptographic hashes of the code base.
 *
 * ls_hash_bytes / ls_hash_str: 64-bit FNV-1a (offset basis
 * 0xcbf29ce484222325, prime 0x100000001b3). Used for in-memory hash tables
 * and for rendezvous placement (cluster/placement.c), where every broker of
 * a cluster must compute the same value: never change the constants. Chain
 * calls to hash several parts: h = ls_hash_str(ls_hash_str(LS_HASH_INIT, a), b).
 *
 * ls_hash_fast: eight bytes per step (FNV takes one), for hash tables over
 * long values on hot paths (the Parquet writer's dictionaries hash every
 * value of a column chunk). Its values are never stored or compared across
 * processes, so its constants may change. */
#ifndef LS_HASH_H
#define LS_HASH_H
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define LS_HASH_INIT 0xcbf29ce484222325ULL

static inline uint64_t ls_hash_bytes(uint64_t h, const void *data, size_t n)
{
    const uint8_t *p = data;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ULL;
    return h;
}

static inline uint64_t ls_hash_fast(const void *data, size_t n)
{
    const uint8_t *p = data;
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ n, w;
    for (; n >= 8; p += 8, n -= 8) {
        memcpy(&w, p, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdULL;
        h ^= h >> 32;
    }
    w = 0;
    if (n) memcpy(&w, p, n); /* p may be NULL when n is 0 */
    h = (h ^ w) * 0xc4ceb9fe1a85ec53ULL;
    return h ^ (h >> 29);
}

static inline uint64_t ls_hash_str(uint64_t h, const char *s)
{
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 0x100000001b3ULL;
    return h;
}

#endif
