/* The Protocol Buffers wire reader; see pbwire.h. */
#include "base/pbwire.h"

bool ls_pbwire_varint(const uint8_t **p, const uint8_t *end, uint64_t *out)
{
    uint64_t v = 0;
    for (int sh = 0; sh < 64 && *p < end; sh += 7) {
        uint8_t b = *(*p)++;
        v |= (uint64_t)(b & 0x7f) << sh;
        if (!(b & 0x80)) return *out = v, true;
    }
    return false;
}

int ls_pbwire_next(const uint8_t **p, const uint8_t *end, ls_pbwire_field_t *f)
{
    for (;;) {
        if (*p >= end) return 0;
        uint64_t tag;
        if (!ls_pbwire_varint(p, end, &tag) || tag >> 3 == 0 || tag >> 3 > 0x1fffffff) return -1;
        f->num = (uint32_t)(tag >> 3);
        f->wt = (int)(tag & 7);
        f->d = NULL;
        f->n = 0;
        switch (f->wt) {
        case 0:
            if (!ls_pbwire_varint(p, end, &f->v)) return -1;
            return 1;
        case 1:
        case 5: {
            size_t w = f->wt == 1 ? 8 : 4;
            if ((size_t)(end - *p) < w) return -1;
            f->d = *p;
            f->n = w;
            f->v = 0;
            for (size_t i = 0; i < w; i++)
                f->v |= (uint64_t)(*p)[i] << (8 * i);
            *p += w;
            return 1;
        }
        case 2:
            if (!ls_pbwire_varint(p, end, &f->v) || f->v > (uint64_t)(end - *p)) return -1;
            f->d = *p;
            f->n = (size_t)f->v;
            *p += f->n;
            return 1;
        case 3: { /* a group: skip to its end, nested ones included */
            int depth = 1;
            ls_pbwire_field_t g;
            while (depth) {
                if (*p >= end) return -1;
                uint64_t t2;
                const uint8_t *at = *p;
                if (!ls_pbwire_varint(p, end, &t2)) return -1;
                if ((t2 & 7) == 3) {
                    if (++depth > 64) return -1;
                    continue;
                }
                if ((t2 & 7) == 4) {
                    depth--;
                    continue;
                }
                *p = at;
                if (ls_pbwire_next(p, end, &g) != 1) return -1;
            }
            continue;
        }
        default: return -1;
        }
    }
}
