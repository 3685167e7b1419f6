/* The one non-cryptographic hash of the code base: 64-bit FNV-1a (offset
 * basis 0xcbf29ce484222325, prime 0x100000001b3). Used for in-memory hash
 * tables and for rendezvous placement (cluster/placement.c), where every
 * broker of a cluster must compute the same value: never change the
 * constants. Chain calls to hash several parts: h = ls_hash_str(ls_hash_str(
 * LS_HASH_INIT, a), b). */
#ifndef LS_HASH_H
#define LS_HASH_H
#include <stddef.h>
#include <stdint.h>

#define LS_HASH_INIT 0xcbf29ce484222325ULL

static inline uint64_t ls_hash_bytes(uint64_t h, const void *data, size_t n)
{
    const uint8_t *p = data;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ULL;
    return h;
}

static inline uint64_t ls_hash_str(uint64_t h, const char *s)
{
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 0x100000001b3ULL;
    return h;
}

#endif
