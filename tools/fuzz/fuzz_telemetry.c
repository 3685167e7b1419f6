/* libFuzzer harness for what a KIP-714 client pushes: PushTelemetry's
 * payload through the receiver (decompression, the OTLP decoder, the
 * series it keeps) and the exposition of what was kept.
 *
 * Input: byte 0 picks the compression type (0-4 Kafka's codecs, 5 one
 * that does not exist); the rest is the payload, pushed by a new client
 * instance subscribed to every metric. Oracles besides the sanitizers: an
 * unknown codec is refused as such, and the exposition of what was kept is
 * whole lines. Build and run: `make fuzz`. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "meta/meta.h"
#include "telemetry/receiver.h"
#include "telemetry/subscriptions.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static ls_telemetry_t *recv_;
static int64_t now = 1000000000;

static void setup(void)
{
    char err[256];
    ls_meta_t *m = ls_meta_open("mem://", err, sizeof err);
    ls_telemetry_subs_t *s = m ? ls_telemetry_subs_open(m, err, sizeof err) : NULL;
    ls_telemetry_subs_op_t op = {LS_TELEMETRY_METRICS, "*", LS_TELEMETRY_LIST_NONE};
    if (!s || ls_telemetry_subs_alter(s, "all", true, &op, 1, false, err, sizeof err) != LS_OK)
        abort();
    recv_ = ls_telemetry_open(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!recv_) setup();
    if (size < 1) return 0;
    ls_telemetry_client_t c = {{NULL, "fuzz", "fuzz", "1", "127.0.0.1", "1"}};
    ls_uuid_t zero = {{0}};
    ls_telemetry_sub_t sub;
    char why[512];
    now += 1000;
    if (ls_telemetry_get(recv_, &c, &zero, now, &sub, why, sizeof why) != LS_TELEMETRY_OK) abort();
    int8_t codec = (int8_t)(data[0] % 6);
    ls_telemetry_push_t p = {sub.instance_id, sub.subscription_id, false, codec, data + 1,
                             size - 1};
    ls_telemetry_outcome o = ls_telemetry_push(recv_, &c, &p, now, why, sizeof why);
    if ((codec == 5) != (o == LS_TELEMETRY_BAD_COMPRESSION)) abort();
    ls_telemetry_sub_free(&sub);
    ls_buf_t out;
    ls_buf_init(&out);
    ls_telemetry_render(recv_, &out, false, now);
    if (out.len && out.data[out.len - 1] != '\n') abort();
    ls_buf_free(&out);
    return 0;
}
