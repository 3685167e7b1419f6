/* libFuzzer harness for the decoders of what log storage reads back from the
 * stores: the WAL object footer, log head records, index entries, and the
 * read cache's entry framing (which rewrites base offsets in place), and the
 * compacted-object footer.
 *
 * Input byte 0 picks the decoder; the rest is its input. Oracle besides the
 * sanitizers: an accepted head or index entry re-encodes to the same bytes.
 * Build and run: `make fuzz` (clang), or see the Makefile's fuzz target. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "log/co_format.h"
#include "log/log_meta.h"
#include "log/read_cache.h"
#include "log/wal_format.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    const uint8_t *p = data + 1;
    size_t n = size - 1;
    char why[256];
    switch (data[0] % 5) {
    case 0: {
        ls_wal_section_t *s;
        uint32_t ns;
        if (ls_wal_footer_decode(p, n, &s, &ns, why, sizeof why) == LS_OK) ls_free(s);
        break;
    }
    case 1: {
        ls_head_t h;
        if (ls_head_decode(p, n, &h) == LS_OK) {
            ls_buf_t b;
            ls_buf_init(&b);
            ls_head_encode(&h, &b);
            if (b.len != n || memcmp(b.data, p, n) != 0) abort();
            ls_buf_free(&b);
            ls_head_clear(&h);
        }
        break;
    }
    case 2: {
        ls_idx_entry_t e;
        if (ls_idx_decode(p, n, &e) == LS_OK) {
            ls_buf_t b;
            ls_buf_init(&b);
            ls_idx_encode(&e, &b);
            if (b.len != n || memcmp(b.data, p, n) != 0) abort();
            ls_buf_free(&b);
            ls_idx_clear(&e);
        }
        break;
    }
    case 3: {
        /* entries as read from an object: first 8 bytes pick the offset range */
        if (n < 8) break;
        int64_t count = (int64_t)(p[0] | p[1] << 8) + 1;
        ls_chunk_t *c = ls_chunk_new(n - 8);
        memcpy(c->data, p + 8, n - 8);
        ls_read_cache_t *rc = ls_read_cache_new(1 << 20);
        /* byte 2 picks the kind: real offsets with gaps (key-compacted) or rebased */
        ls_cache_run_t *r = ls_read_cache_insert(rc, 1, 100, 100 + count - 1, p[2] & 1, c, 0, n - 8,
                                                 "fuzz", why, sizeof why);
        if (r) { /* every offset of the range finds its batch or the end */
            for (int64_t o = 100; o < 100 + count && o < 100 + 64; o++)
                if (ls_cache_run_find(r, o) > r->nbatches) abort();
        }
        ls_chunk_release(c);
        ls_read_cache_free(rc);
        break;
    }
    case 4: {
        int64_t id, first, last;
        ls_co_entry_t *e;
        uint32_t ne;
        if (ls_co_footer_decode(p, n, &id, &first, &last, &e, &ne, why, sizeof why) != LS_OK) break;
        if (ne > 0 && e[0].base_offset >= first && e[ne - 1].base_offset <= last) {
            /* the blocks a reader cuts from it (as log_reader.c, after its checks
             * against the index entry) stay inside the body and the range */
            uint64_t end = n - LS_CO_FOOTER_SIZE(ne);
            int64_t *base = ls_malloc(ne * sizeof *base);
            uint32_t *pos = ls_malloc(ne * sizeof *pos);
            for (uint32_t i = 0; i < ne; i++) {
                base[i] = e[i].base_offset;
                pos[i] = e[i].pos;
            }
            ls_read_cache_t *rc = ls_read_cache_new(1 << 20);
            ls_cache_run_t *f = ls_read_cache_footer_insert(rc, id, first, last, "fuzz", base, pos,
                                                            ne, end, 1 + (p[0] & 63));
            for (int k = 0; k < 64; k++) {
                int64_t o = (int64_t)((uint64_t)first +
                                      ((uint64_t)last - (uint64_t)first) / 64 * (uint64_t)k);
                ls_co_block_t b;
                ls_co_footer_block(f, o, &b);
                if (b.first > b.last || b.first < first || b.last > last || b.pos < 8 ||
                    b.pos + b.len > end || b.batches < 1 || b.len == 0)
                    abort();
            }
            ls_read_cache_free(rc);
            ls_free(base);
            ls_free(pos);
        }
        ls_free(e);
        break;
    }
    }
    return 0;
}

#ifdef LS_FUZZ_STANDALONE
#include <stdio.h>
int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        FILE *f = fopen(argv[i], "rb");
        if (!f) continue;
        static uint8_t buf[1 << 20];
        size_t n = fread(buf, 1, sizeof buf, f);
        fclose(f);
        LLVMFuzzerTestOneInput(buf, n);
    }
    return 0;
}
#endif
