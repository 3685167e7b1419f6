#include "log/wal_format.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/crc32c.h"

void ls_wal_footer_encode(const ls_wal_section_t *s, uint32_t n, ls_buf_t *out)
{
    size_t start = out->len;
    ls_buf_reserve(out, (size_t)n * LS_WAL_SECTION_SIZE + LS_WAL_TRAILER_SIZE);
    for (uint32_t i = 0; i < n; i++) {
        uint8_t *p = out->data + out->len;
        ls_be64_put(p, (uint64_t)s[i].log_id);
        ls_be64_put(p + 8, s[i].pos);
        ls_be32_put(p + 16, s[i].len);
        ls_be32_put(p + 20, s[i].entries);
        ls_be64_put(p + 24, (uint64_t)s[i].offsets);
        ls_be64_put(p + 32, (uint64_t)s[i].max_timestamp);
        out->len += LS_WAL_SECTION_SIZE;
    }
    uint8_t *p = out->data + out->len;
    ls_be32_put(p, n);
    out->len += 4;
    uint32_t crc = ls_crc32c(0, out->data + start, out->len - start);
    ls_be32_put(out->data + out->len, crc);
    out->len += 4;
    memcpy(out->data + out->len, LS_WAL_END_MAGIC, 8);
    out->len += 8;
}

ls_status ls_wal_footer_decode(const uint8_t *obj, size_t len, ls_wal_section_t **sections,
                               uint32_t *n, char *why, size_t whylen)
{
    *sections = NULL;
    *n = 0;
    if (len < LS_WAL_HEADER_SIZE + LS_WAL_TRAILER_SIZE || memcmp(obj, LS_WAL_MAGIC, 8) != 0) {
        snprintf(why, whylen, "bad WAL header magic at byte 0 (object %zu bytes)", len);
        return LS_ECORRUPT;
    }
    if (memcmp(obj + len - 8, LS_WAL_END_MAGIC, 8) != 0) {
        snprintf(why, whylen, "bad WAL end magic at byte %zu", len - 8);
        return LS_ECORRUPT;
    }
    uint32_t count = ls_be32_get(obj + len - 16);
    size_t table = (size_t)count * LS_WAL_SECTION_SIZE;
    if (table > len - LS_WAL_HEADER_SIZE - LS_WAL_TRAILER_SIZE) {
        snprintf(why, whylen, "WAL section count %u exceeds object at byte %zu", count, len - 16);
        return LS_ECORRUPT;
    }
    size_t footer_start = len - LS_WAL_TRAILER_SIZE - table;
    uint32_t crc = ls_crc32c(0, obj + footer_start, table + 4);
    if (crc != ls_be32_get(obj + len - 12)) {
        snprintf(why, whylen, "WAL footer CRC mismatch at byte %zu", footer_start);
        return LS_ECORRUPT;
    }
    ls_wal_section_t *s = LS_NEWN(ls_wal_section_t, count ? count : 1);
    for (uint32_t i = 0; i < count; i++) {
        const uint8_t *p = obj + footer_start + (size_t)i * LS_WAL_SECTION_SIZE;
        s[i].log_id = (int64_t)ls_be64_get(p);
        s[i].pos = ls_be64_get(p + 8);
        s[i].len = ls_be32_get(p + 16);
        s[i].entries = ls_be32_get(p + 20);
        s[i].offsets = (int64_t)ls_be64_get(p + 24);
        s[i].max_timestamp = (int64_t)ls_be64_get(p + 32);
        if (s[i].pos < LS_WAL_HEADER_SIZE || s[i].pos > footer_start ||
            s[i].len > footer_start - s[i].pos) {
            snprintf(why, whylen, "WAL section %u [%llu,+%u) outside body at byte %zu", i,
                     (unsigned long long)s[i].pos, s[i].len,
                     footer_start + (size_t)i * LS_WAL_SECTION_SIZE);
            ls_free(s);
            return LS_ECORRUPT;
        }
    }
    *sections = s;
    *n = count;
    return LS_OK;
}

int64_t ls_wal_key_time(const char *key)
{
    if (strncmp(key, "wal/", 4) != 0) return -1;
    char *end;
    long long ms = strtoll(key + 4, &end, 10);
    return end == key + 4 || *end != '-' ? -1 : ms;
}
