/* Produce handler (kafka/h_produce.c) error paths, through the handler
 * harness (kafka_fake.h): each asserts the exact Kafka error code a client
 * sees and that nothing was appended. */
#include "kafka_fake.h"
#include "security/authz.h"
#include "unit.h"

static kf_env_t E;

/* Produces batch to topic/partition at version v; the partition's error
 * code, or -1000 when no response came back (the connection closed). */
static int produce(int16_t v, const char *topic, int32_t partition, const ls_buf_t *batch,
                   int16_t acks)
{
    kf_produce_t p;
    kf_produce_req(&p, topic, partition, batch);
    p.m.Acks = acks;
    ls_arena_t *a = ls_arena_new();
    ls_kafka_ProduceResponse r;
    int code = -1000;
    if (kf_call(&E, 0, v, &p.m, &r, a) == 0 && r.NumResponses == 1 &&
        r.Responses[0].NumPartitionResponses == 1)
        code = r.Responses[0].PartitionResponses[0].ErrorCode;
    ls_arena_free(a);
    return code;
}

TEST(appends_a_good_batch)
{ /* the baseline the error tests compare with */
    CHECK(kf_topic(&E, "good", 1) == 0);
    ls_buf_t b;
    kf_batch(&b, -1, -1, -1, 10);
    CHECK_EQ_INT(produce(9, "good", 0, &b, -1), LS_KERR_NONE);
    ls_buf_free(&b);
    CHECK_EQ_INT(kf_hwm(&E, "good", 0), 1);
}

TEST(unknown_topic)
{
    E.cfg.auto_create_topics_enable = false;
    ls_buf_t b;
    kf_batch(&b, -1, -1, -1, 10);
    int code = produce(9, "nosuch", 0, &b, -1);
    ls_buf_free(&b);
    E.cfg.auto_create_topics_enable = true;
    CHECK_EQ_INT(code, LS_KERR_UNKNOWN_TOPIC_OR_PARTITION);
    CHECK_EQ_INT(kf_hwm(&E, "nosuch", 0), -1); /* not created either */
}

TEST(unknown_partition)
{
    CHECK(kf_topic(&E, "onepart", 1) == 0);
    ls_buf_t b;
    kf_batch(&b, -1, -1, -1, 10);
    int code = produce(9, "onepart", 3, &b, -1);
    ls_buf_free(&b);
    CHECK_EQ_INT(code, LS_KERR_UNKNOWN_TOPIC_OR_PARTITION);
    CHECK_EQ_INT(kf_hwm(&E, "onepart", 0), 0);
}

TEST(corrupt_batch_bad_crc)
{
    CHECK(kf_topic(&E, "crc", 1) == 0);
    ls_buf_t b;
    kf_batch(&b, -1, -1, -1, 10);
    b.data[b.len - 2] ^= 0xff; /* a value byte: the CRC no longer matches */
    int code = produce(9, "crc", 0, &b, -1);
    ls_buf_free(&b);
    CHECK_EQ_INT(code, LS_KERR_CORRUPT_MESSAGE);
    CHECK_EQ_INT(kf_hwm(&E, "crc", 0), 0);
}

TEST(batch_too_large)
{
    CHECK(kf_topic(&E, "big", 1) == 0);
    int64_t was = E.cfg.message_max_bytes;
    E.cfg.message_max_bytes = 1000;
    ls_buf_t b;
    kf_batch(&b, -1, -1, -1, 2000);
    int code = produce(9, "big", 0, &b, -1);
    ls_buf_free(&b);
    E.cfg.message_max_bytes = was;
    CHECK_EQ_INT(code, LS_KERR_MESSAGE_TOO_LARGE);
    CHECK_EQ_INT(kf_hwm(&E, "big", 0), 0);
}

TEST(invalid_required_acks)
{
    CHECK(kf_topic(&E, "acks", 1) == 0);
    ls_buf_t b;
    kf_batch(&b, -1, -1, -1, 10);
    int code = produce(9, "acks", 0, &b, 2);
    ls_buf_free(&b);
    CHECK_EQ_INT(code, LS_KERR_INVALID_REQUIRED_ACKS);
    CHECK_EQ_INT(kf_hwm(&E, "acks", 0), 0);
}

TEST(out_of_order_sequence)
{
    CHECK(kf_topic(&E, "seq", 1) == 0);
    ls_buf_t b;
    kf_batch(&b, 5001, 0, 0, 10);
    CHECK_EQ_INT(produce(9, "seq", 0, &b, -1), LS_KERR_NONE);
    ls_buf_free(&b);
    kf_batch(&b, 5001, 0, 5, 10); /* the next is 1 */
    int code = produce(9, "seq", 0, &b, -1);
    ls_buf_free(&b);
    CHECK_EQ_INT(code, LS_KERR_OUT_OF_ORDER_SEQUENCE_NUMBER);
    CHECK_EQ_INT(kf_hwm(&E, "seq", 0), 1);
}

TEST(fenced_producer_epoch)
{
    CHECK(kf_topic(&E, "epoch", 1) == 0);
    ls_buf_t b;
    kf_batch(&b, 5002, 3, 0, 10);
    CHECK_EQ_INT(produce(9, "epoch", 0, &b, -1), LS_KERR_NONE);
    ls_buf_free(&b);
    kf_batch(&b, 5002, 2, 1, 10); /* an older epoch of the same producer */
    int code = produce(9, "epoch", 0, &b, -1);
    ls_buf_free(&b);
    CHECK_EQ_INT(code, LS_KERR_INVALID_PRODUCER_EPOCH);
    CHECK_EQ_INT(kf_hwm(&E, "epoch", 0), 1);
}

TEST(unsupported_version_closes)
{ /* as Kafka: a request of a version the broker does not serve is not
   * answered; the connection closes */
    CHECK(kf_topic(&E, "ver", 1) == 0);
    ls_buf_t b;
    kf_batch(&b, -1, -1, -1, 10);
    int16_t v = ls_kafka_api_find(0)->max_version + 1;
    /* encode with the newest layout the codecs know, under a version the broker refuses */
    kf_produce_t p;
    kf_produce_req(&p, "ver", 0, &b);
    ls_arena_t *a = ls_arena_new();
    ls_kafka_ProduceResponse r;
    int rc = kf_call_as(&E, 0, ls_kafka_api_find(0)->max_version, v, &p.m, &r, a);
    ls_arena_free(a);
    ls_buf_free(&b);
    CHECK_EQ_INT(rc, -1);
    CHECK_EQ_INT(kf_hwm(&E, "ver", 0), 0);
    CHECK(kf_reconnect(&E) == 0);
}

TEST(topic_authorization_failed)
{
    CHECK(kf_topic(&E, "denied", 1) == 0);
    char err[256];
    /* no ACL and allow.everyone.if.no.acl.found=false: User:ANONYMOUS is denied */
    ls_authz_t *az = ls_authz_open(E.meta, NULL, false, err, sizeof err);
    CHECK(az != NULL);
    E.svc.authz = az;
    ls_buf_t b;
    kf_batch(&b, -1, -1, -1, 10);
    int code = produce(9, "denied", 0, &b, -1);
    ls_buf_free(&b);
    E.svc.authz = NULL;
    ls_authz_close(az);
    CHECK_EQ_INT(code, LS_KERR_TOPIC_AUTHORIZATION_FAILED);
    CHECK_EQ_INT(kf_hwm(&E, "denied", 0), 0);
}

TEST(throttled_over_quota)
{ /* Kafka throttles, not refuses: the batch is appended and the response
   * carries throttle_time_ms (the connection is then muted that long, so
   * this test runs last) */
    CHECK(kf_topic(&E, "quota", 1) == 0);
    ls_quota_entity_t ent = {.user = LS_QPART_NONE, .client = LS_QPART_NAME, .client_name = "unit"};
    ls_quota_op_t op = {.e = &ent, .key = LS_QUOTA_PRODUCER_BYTE_RATE, .value = 1000};
    CHECK(ls_quotas_alter(E.quotas, &op, 1) == LS_OK);
    ls_buf_t b;
    kf_batch(&b, -1, -1, -1, 50000);
    kf_produce_t p;
    kf_produce_req(&p, "quota", 0, &b);
    ls_arena_t *a = ls_arena_new();
    ls_kafka_ProduceResponse r;
    int rc = kf_call(&E, 0, 9, &p.m, &r, a);
    int code = rc == 0 ? r.Responses[0].PartitionResponses[0].ErrorCode : -1000;
    int32_t throttle = rc == 0 ? r.ThrottleTimeMs : -1;
    ls_arena_free(a);
    ls_buf_free(&b);
    CHECK_EQ_INT(code, LS_KERR_NONE);
    CHECK(throttle > 0);
    CHECK_EQ_INT(kf_hwm(&E, "quota", 0), 1);
}

int main(void)
{
    if (kf_open(&E) != 0) return 1;
    RUN(appends_a_good_batch);
    RUN(unknown_topic);
    RUN(unknown_partition);
    RUN(corrupt_batch_bad_crc);
    RUN(batch_too_large);
    RUN(invalid_required_acks);
    RUN(out_of_order_sequence);
    RUN(fenced_producer_epoch);
    RUN(topic_authorization_failed);
    RUN(unsupported_version_closes);
    RUN(throttled_over_quota);
    kf_close(&E);
    UNIT_DONE();
}
