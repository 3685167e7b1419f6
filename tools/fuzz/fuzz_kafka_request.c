/* libFuzzer harness for every generated Kafka message decoder
 * (src/kafka/msg_gen.c, over the codec primitives in src/kafka/codec.c and
 * the helpers in src/kafka/msg_rt.c).
 *
 * Input: byte 0 picks a message (every request, then every response: the
 * requests are what hostile clients send; the responses are decoded by the
 * CLI and tests and cost nothing to cover); the remaining bytes are decoded
 * as that message's body at every version the broker supports.
 *
 * Oracle, besides the sanitizers: a body the decoder accepts must re-encode to
 * bytes that decode again, consuming exactly all of them, and re-encode to the
 * same bytes (decode∘encode is a fixed point). Re-encoding also reads every
 * string/bytes view the decoder produced, so ASan reports any view that
 * escapes the input.
 *
 * Build and run (clang; `apt-get install -y clang` if missing):
 *   clang -g -O1 -std=c11 -D_GNU_SOURCE -Isrc \
 *       -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
 *       -o build/fuzz_kafka_request tools/fuzz/fuzz_kafka_request.c \
 *       src/kafka/codec.c src/kafka/msg_gen.c src/kafka/msg_rt.c src/base/alloc.c src/base/buf.c \
 *       src/base/chunk.c src/base/uuid.c src/base/check.c src/base/diag.c
 * (`make fuzz` builds every harness against the whole library instead.)
 *   mkdir -p build/fuzz-kafka-corpus && build/fuzz_kafka_request \
 *       -max_total_time=60 -max_len=4096 build/fuzz-kafka-corpus
 * Without libFuzzer (gcc), -DLS_FUZZ_STANDALONE adds a main() that replays
 * the files named on the command line:
 *   gcc -g -std=c11 -D_GNU_SOURCE -DLS_FUZZ_STANDALONE -Isrc -fsanitize=address,undefined \
 *       -o build/fuzz_kafka_request tools/fuzz/fuzz_kafka_request.c src/kafka/codec.c \
 *       src/kafka/msg_gen.c src/kafka/msg_rt.c src/base/alloc.c src/base/buf.c src/base/chunk.c \
 *       src/base/uuid.c src/base/check.c src/base/diag.c
 * A crash leaves crash-<sha1>; replay it and turn it into a regression test in
 * tests/unit/kafka/test_kafka_codec.c. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "kafka/codec.h"
#include "kafka/msg.h"

/* Every generated message, requests first (indices 0..n-1), then
 * responses: with a selector byte taken modulo 2n, requests get half of the
 * inputs. The list is the generator's (ls_kmsg_all), so a message added to
 * src/kafka/messages/ is fuzzed without touching this file. */
typedef struct msg_desc {
    const char *name;
    int16_t min, max;
    size_t size;
    int (*dec)(ls_kr_t *, int16_t, ls_arena_t *, void *);
    void (*enc)(ls_kw_t *, int16_t, const void *);
} msg_desc;

static void pick(int sel, msg_desc *d)
{
    const ls_kmsg_api_t *api = ls_kmsg_all[sel % ls_kmsg_nall];
    bool resp = sel >= ls_kmsg_nall;
    d->name = api->name;
    d->min = api->min_version;
    d->max = api->max_version;
    d->size = resp ? api->response_size : api->request_size;
    d->dec = resp ? api->decode_response : api->decode_request;
    d->enc = resp ? api->encode_response : api->encode_request;
}

/* Copies the referenced bytes (Fetch response records) into one flat buffer. */
static void flatten(ls_kw_t *w, ls_buf_t *out)
{
    struct iovec *iov;
    int n = ls_kw_iovecs(w, &iov);
    ls_buf_init(out);
    for (int i = 0; i < n; i++)
        ls_buf_append(out, iov[i].iov_base, iov[i].iov_len);
    ls_free(iov);
}

static void one(const msg_desc *d, int16_t v, const uint8_t *p, size_t n)
{
    ls_arena_t *a = ls_arena_new();
    void *m1 = ls_calloc(1, d->size), *m2 = ls_calloc(1, d->size);
    ls_kr_t r;
    ls_kr_init(&r, p, n);
    if (d->dec(&r, v, a, m1) == 0) {
        if (r.err) abort(); /* success must mean no sticky error */
        ls_kw_t w1, w2;
        ls_kw_init(&w1);
        ls_kw_init(&w2);
        d->enc(&w1, v, m1);
        ls_buf_t f1, f2;
        flatten(&w1, &f1);
        ls_kr_t r2;
        ls_kr_init(&r2, f1.data, f1.len);
        if (d->dec(&r2, v, a, m2) != 0 || ls_kr_remaining(&r2) != 0) {
            fprintf(stderr, "%s v%d: re-encoding does not decode: %s at %zu\n", d->name, v,
                    r2.what ? r2.what : "(trailing bytes)", ls_kr_pos(&r2));
            abort();
        }
        d->enc(&w2, v, m2);
        flatten(&w2, &f2);
        if (f1.len != f2.len || (f1.len && memcmp(f1.data, f2.data, f1.len) != 0)) {
            fprintf(stderr, "%s v%d: decode/encode is not a fixed point\n", d->name, v);
            abort();
        }
        ls_buf_free(&f1);
        ls_buf_free(&f2);
        ls_kw_free(&w1);
        ls_kw_free(&w2);
    } else if (!r.err) {
        abort(); /* failure must leave the sticky error set */
    }
    ls_free(m1);
    ls_free(m2);
    ls_arena_free(a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    msg_desc md;
    pick(data[0] % (2 * ls_kmsg_nall), &md);
    const msg_desc *d = &md;
    /* Decode from a private copy of exactly the body so ASan catches any
     * read past its end. */
    size_t n = size - 1;
    uint8_t *body = malloc(n ? n : 1);
    if (!body) return 0;
    if (n) memcpy(body, data + 1, n);
    for (int16_t v = d->min; v <= d->max; v++)
        one(d, v, body, n);
    free(body);
    return 0;
}

#ifdef LS_FUZZ_STANDALONE
int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        FILE *f = fopen(argv[i], "rb");
        if (!f) {
            perror(argv[i]);
            return 1;
        }
        static uint8_t buf[1 << 20];
        size_t n = fread(buf, 1, sizeof buf, f);
        fclose(f);
        LLVMFuzzerTestOneInput(buf, n);
        printf("%s: ok\n", argv[i]);
    }
    return 0;
}
#endif
