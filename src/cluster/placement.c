/* Rendezvous hashing; see placement.h. */
#include "cluster/placement.h"

#include "base/hash.h"

#include <string.h>

/* Weights: the key's FNV-1a (base/hash.h) mixed with the broker id by a
 * 64-bit finalizer (splitmix64), so weights of different brokers are
 * independent. */

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

int ls_place(const ls_member_t *m, int n, const void *key, size_t klen, const char *zone)
{
    int in_zone = 0;
    if (zone && *zone)
        for (int i = 0; i < n; i++)
            in_zone += strcmp(m[i].rack, zone) == 0;
    uint64_t kh = ls_hash_bytes(LS_HASH_INIT, key, klen);
    int best = -1;
    uint64_t best_w = 0;
    for (int i = 0; i < n; i++) {
        if (in_zone && strcmp(m[i].rack, zone) != 0) continue;
        uint64_t w = mix(kh ^ mix((uint64_t)(uint32_t)m[i].id));
        if (best < 0 || w > best_w || (w == best_w && m[i].id < m[best].id)) {
            best = i;
            best_w = w;
        }
    }
    return best;
}

int ls_client_zone(const char *client_id, size_t len, char *out, size_t cap)
{
    static const char tag[] = "ls_az=";
    const size_t tl = sizeof tag - 1;
    out[0] = 0;
    size_t i = 0;
    while (i < len) {
        size_t start = i;
        while (i < len && !strchr(",; &", client_id[i]))
            i++;
        if (i - start > tl && memcmp(client_id + start, tag, tl) == 0) {
            size_t n = i - start - tl;
            if (n >= cap) n = cap - 1;
            memcpy(out, client_id + start + tl, n);
            out[n] = 0;
            return 0;
        }
        i++;
    }
    return 0;
}

int32_t ls_place_id(const ls_member_t *m, int n, const void *key, size_t klen, const char *zone)
{
    int i = ls_place(m, n, key, klen, zone);
    return i < 0 ? -1 : m[i].id;
}
