/* libFuzzer harness for the transaction records read back from the
 * metadata store: a transactional id's coordinator record (txn/txn.h) and a
 * log's aborted-transaction record (log/log_txn.h).
 *
 * Input byte 0 picks the decoder; the rest is its input. Oracle besides the
 * sanitizers: an accepted record satisfies its invariants and re-encodes to
 * the same bytes. Build and run: `make fuzz` (clang). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "log/log_txn.h"
#include "txn/txn.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    const uint8_t *p = data + 1;
    size_t n = size - 1;
    if (data[0] % 2 == 0) {
        ls_txn_record_t r;
        if (ls_txn_record_decode(p, n, &r) == LS_OK) {
            if (ls_txn_record_check(&r)) abort();
            size_t len;
            uint8_t *b = ls_txn_record_encode(&r, &len);
            if (len != n || memcmp(b, p, n) != 0) abort();
            ls_free(b);
            ls_txn_record_free(&r);
        }
    } else {
        ls_aborted_t a;
        if (ls_aborted_decode(p, n, &a) == LS_OK) {
            ls_buf_t b;
            ls_buf_init(&b);
            ls_aborted_encode(&a, &b);
            if (b.len != n || memcmp(b.data, p, n) != 0) abort();
            ls_buf_free(&b);
        }
    }
    return 0;
}
