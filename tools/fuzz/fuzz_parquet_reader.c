/* libFuzzer harness for the Parquet reader (src/table/parquet_reader.c)
 * and the Thrift compact decoder under it: the input is a whole file. It is
 * opened and every column chunk of every row group is iterated to the end.
 * Oracle besides the sanitizers: an accepted chunk yields exactly its
 * num_values triples, levels within the column's maxima, a first triple at
 * repetition level 0, and byte-array views that can be read whole; skipping
 * half a chunk (pages passed over unread) then reading on also ends at its
 * num_values; the row cursor gives every column at least one triple per
 * row, starting at repetition level 0; a refusal always carries a message. Seeds:
 * tools/fuzz/corpus/ fuzz_parquet_reader (small uncompressed and snappy files from our writer and
 * pyarrow, data pages v1 and v2, nested columns). */
#include <stdint.h>
#include <stdlib.h>

#include "table/parquet_reader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile uint8_t sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ls_status st;
    char err[256] = "";
    ls_pqr_t *r = ls_pqr_open(data, size, &st, err, sizeof err);
    if (!r) {
        if (st == LS_OK || !err[0]) abort();
        return 0;
    }
    for (int g = 0; g < ls_pqr_num_row_groups(r); g++)
        for (size_t c = 0; c < ls_pqr_num_columns(r); c++) {
            ls_pqr_iter_t *it = ls_pqr_iter_new(r, g, (int)c, &st, err, sizeof err);
            if (!it) {
                if (st == LS_OK || !err[0]) abort();
                continue;
            }
            const ls_pqr_elem_t *e = ls_pqr_column(r, (int)c);
            ls_pqr_triple_t t;
            int rc;
            int64_t n = 0;
            while ((rc = ls_pqr_next(it, &t)) == 1) {
                if (t.rep < 0 || t.rep > e->max_rep || t.def < 0 || t.def > e->max_def) abort();
                if (n == 0 && t.rep != 0) abort();
                for (uint32_t k = 0; k < t.len; k++)
                    sink ^= t.bytes[k];
                n++;
            }
            int64_t nv = ls_pqr_chunk(r, g, (int)c)->num_values;
            if (rc == 0 && n != nv) abort();
            if (rc < 0 && (ls_pqr_iter_status(it) == LS_OK || !ls_pqr_iter_error(it)[0])) abort();
            ls_pqr_iter_free(it);
            /* skipping half the chunk then reading on (pages passed over unread) */
            it = ls_pqr_iter_new(r, g, (int)c, &st, err, sizeof err);
            if (!it) abort(); /* it opened a moment ago */
            if (ls_pqr_skip(it, nv / 2) == 0) {
                int64_t m = nv / 2;
                while ((rc = ls_pqr_next(it, &t)) == 1)
                    m++;
                if (rc == 0 && m != nv) abort();
            }
            if (ls_pqr_iter_status(it) != LS_OK && !ls_pqr_iter_error(it)[0]) abort();
            ls_pqr_iter_free(it);
        }
    /* the row cursor: a file whose chunks all read cleanly may still have
     * columns disagreeing on row counts, but never crashes it */
    for (int g = 0; g < ls_pqr_num_row_groups(r); g++) {
        ls_pqr_rows_t *rs = ls_pqr_rows_new(r, g, NULL, 0, &st, err, sizeof err);
        if (!rs) continue;
        int rc;
        while ((rc = ls_pqr_rows_next(rs)) == 1)
            for (size_t c = 0; c < ls_pqr_num_columns(r); c++) {
                const ls_pqr_triple_t *t;
                if (ls_pqr_rows_col(rs, c, &t) == 0 || t[0].rep != 0) abort();
            }
        if (rc < 0 && !ls_pqr_rows_error(rs)[0]) abort();
        ls_pqr_rows_free(rs);
    }
    ls_pqr_free(r);
    return 0;
}
