#include "log/co_format.h"

#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/crc32c.h"

#define TRAILER (8 + 8 + 8 + 4 + 4 + 8)

int ls_co_key(char *out, size_t cap, int64_t log_id, int64_t first, int64_t last)
{
    return snprintf(out, cap, "co/%016llx/%020lld-%020lld.co", (unsigned long long)log_id,
                    (long long)first, (long long)last);
}

int ls_kco_key(char *out, size_t cap, int64_t log_id, int64_t first, int64_t last, int64_t gen)
{
    return snprintf(out, cap, "co/%016llx/%020lld-%020lld.k%020lld.co", (unsigned long long)log_id,
                    (long long)first, (long long)last, (long long)gen);
}

int ls_co_prefix(char *out, size_t cap, int64_t log_id)
{
    return snprintf(out, cap, "co/%016llx/", (unsigned long long)log_id);
}

bool ls_co_key_parse(const char *key, int64_t *log_id, int64_t *first, int64_t *last)
{
    unsigned long long id;
    long long f, l, g;
    int n = 0;
    size_t len = strlen(key), plain = 3 + 16 + 1 + 20 + 1 + 20 + 3;
    if (len == plain) {
        if (sscanf(key, "co/%16llx/%20lld-%20lld.co%n", &id, &f, &l, &n) != 3) return false;
    } else if (len == plain + 22) {
        if (sscanf(key, "co/%16llx/%20lld-%20lld.k%20lld.co%n", &id, &f, &l, &g, &n) != 4 || g < 0)
            return false;
    } else {
        return false;
    }
    if (key[n] != 0 || f < 0 || l < f) return false;
    *log_id = (int64_t)id;
    *first = f;
    *last = l;
    return true;
}

void ls_co_footer_encode(ls_buf_t *obj, int64_t log_id, int64_t first, int64_t last,
                         const ls_co_entry_t *e, uint32_t n)
{
    size_t start = obj->len;
    ls_buf_reserve(obj, (size_t)n * 12 + TRAILER);
    uint8_t *p = obj->data + obj->len;
    for (uint32_t i = 0; i < n; i++, p += 12) {
        ls_be64_put(p, (uint64_t)e[i].base_offset);
        ls_be32_put(p + 8, e[i].pos);
    }
    ls_be64_put(p, (uint64_t)log_id);
    ls_be64_put(p + 8, (uint64_t)first);
    ls_be64_put(p + 16, (uint64_t)last);
    ls_be32_put(p + 24, n);
    obj->len += (size_t)n * 12 + 28;
    ls_be32_put(obj->data + obj->len, ls_crc32c(0, obj->data + start, obj->len - start));
    obj->len += 4;
    memcpy(obj->data + obj->len, LS_CO_END_MAGIC, 8);
    obj->len += 8;
}

ls_status ls_co_footer_parse(const uint8_t *f, size_t len, uint64_t at, int64_t *log_id,
                             int64_t *first, int64_t *last, ls_co_entry_t **e, uint32_t *n,
                             char *why, size_t whylen)
{
    *e = NULL;
    *n = 0;
    if (len < TRAILER || memcmp(f + len - 8, LS_CO_END_MAGIC, 8) != 0) {
        snprintf(why, whylen,
                 "no compacted-object end magic in the %zu footer bytes at byte %llu (object "
                 "truncated or not a compacted object)",
                 len, (unsigned long long)at);
        return LS_ECORRUPT;
    }
    const uint8_t *t = f + len - TRAILER;
    uint32_t count = ls_be32_get(t + 24);
    if ((size_t)count * 12 != len - TRAILER) {
        snprintf(why, whylen,
                 "compacted-object footer at byte %llu counts %u entries, %zu bytes hold %zu",
                 (unsigned long long)at, count, len, (len - TRAILER) / 12);
        return LS_ECORRUPT;
    }
    if (ls_crc32c(0, f, (size_t)count * 12 + 28) != ls_be32_get(t + 28)) {
        snprintf(why, whylen, "compacted-object footer CRC mismatch at byte %llu",
                 (unsigned long long)at);
        return LS_ECORRUPT;
    }
    *log_id = (int64_t)ls_be64_get(t);
    *first = (int64_t)ls_be64_get(t + 8);
    *last = (int64_t)ls_be64_get(t + 16);
    ls_co_entry_t *v = LS_NEWN(ls_co_entry_t, count ? count : 1);
    for (uint32_t i = 0; i < count; i++) {
        v[i].base_offset = (int64_t)ls_be64_get(f + (size_t)i * 12);
        v[i].pos = ls_be32_get(f + (size_t)i * 12 + 8);
        if (v[i].pos < LS_CO_HEADER_SIZE || v[i].pos >= at ||
            (i && (v[i].pos <= v[i - 1].pos || v[i].base_offset <= v[i - 1].base_offset))) {
            snprintf(why, whylen,
                     "compacted-object entry %u (offset %lld, position %u) outside the body "
                     "[8, %llu) or not after entry %u",
                     i, (long long)v[i].base_offset, v[i].pos, (unsigned long long)at,
                     i ? i - 1 : 0);
            ls_free(v);
            return LS_ECORRUPT;
        }
    }
    *e = v;
    *n = count;
    return LS_OK;
}

ls_status ls_co_footer_decode(const uint8_t *obj, size_t len, int64_t *log_id, int64_t *first,
                              int64_t *last, ls_co_entry_t **e, uint32_t *n, char *why,
                              size_t whylen)
{
    *e = NULL;
    *n = 0;
    if (len < LS_CO_HEADER_SIZE + TRAILER || memcmp(obj, LS_CO_MAGIC, 8) != 0 ||
        memcmp(obj + len - 8, LS_CO_END_MAGIC, 8) != 0) {
        snprintf(why, whylen, "bad compacted-object magic (object %zu bytes)", len);
        return LS_ECORRUPT;
    }
    const uint8_t *t = obj + len - TRAILER;
    uint32_t count = ls_be32_get(t + 24);
    if ((size_t)count * 12 > len - LS_CO_HEADER_SIZE - TRAILER) {
        snprintf(why, whylen, "compacted-object entry count %u too large at byte %zu", count,
                 len - TRAILER + 24);
        return LS_ECORRUPT;
    }
    size_t fstart = len - TRAILER - (size_t)count * 12;
    return ls_co_footer_parse(obj + fstart, len - fstart, fstart, log_id, first, last, e, n, why,
                              whylen);
}
