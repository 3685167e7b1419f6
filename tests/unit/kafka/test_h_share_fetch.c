/* ShareFetch and ShareAcknowledge handlers (kafka/h_share_fetch.c), through
 * the handler harness (kafka_fake.h) with the real share store: records are
 * acquired by one member, acknowledged, and go back to the group when the
 * member closes its session; the session's epochs (SHARE_SESSION_NOT_FOUND,
 * INVALID_SHARE_SESSION_EPOCH), the ids (INVALID_GROUP_ID, INVALID_REQUEST),
 * the partitions (UNKNOWN_TOPIC_ID, UNKNOWN_TOPIC_OR_PARTITION), the ACLs
 * (GROUP / TOPIC_AUTHORIZATION_FAILED) and bad acknowledgements
 * (INVALID_REQUEST, INVALID_RECORD_STATE) answer Kafka's codes. Every
 * ShareFetch has MaxWaitMs 0: it answers what is there at once. */
#include "group/group_configs.h"
#include "kafka_fake.h"
#include "unit.h"

static kf_env_t E;

typedef ls_kafka_ShareFetchRequest_AcknowledgementBatch fack_t;
typedef ls_kafka_ShareFetchResponse_PartitionData fpart_t;

/* A topic of n records in one partition whose share group gid reads from
 * the earliest offset; its id in *id. */
static int share_topic(const char *topic, const char *gid, int n, ls_uuid_t *id)
{
    if (kf_topic(&E, topic, 1) != 0 || kf_produce(&E, topic, 0, n) != 0) return -1;
    ls_group_config_op_t op = {LS_GROUP_CONFIG_SHARE_RESET, "earliest"};
    char err[256];
    if (ls_group_configs_alter(E.group_configs, gid, false, &op, 1, &KF_GROUP_DEFAULTS, false, err,
                               sizeof err) != LS_OK)
        return -1;
    ls_stream_t *s = ls_catalog_lookup(E.catalog, LS_DEFAULT_NAMESPACE, topic);
    if (!s) return -1;
    *id = s->id;
    ls_stream_release(s);
    return 0;
}

/* One ShareFetch v1 of partition `partition` of topic id (with acks[0..nacks)
 * for it) acquiring at most max_records: the top-level code (-1000: no answer), that partition's
 * answer in *p (zeroed when absent), the lock timeout in *lock_ms. */
static int share_fetch(const char *gid, const char *member, int32_t epoch, const ls_uuid_t *id,
                       int32_t partition, fack_t *acks, int nacks, int32_t max_records, fpart_t *p,
                       int32_t *lock_ms, ls_arena_t *a)
{
    ls_kafka_ShareFetchRequest_FetchPartition fp = {.PartitionIndex = partition,
                                                    .AcknowledgementBatches = acks,
                                                    .NumAcknowledgementBatches = nacks};
    ls_kafka_ShareFetchRequest_FetchTopic t = {
        .TopicId = *id, .Partitions = &fp, .NumPartitions = 1};
    ls_kafka_ShareFetchRequest m = {.GroupId = gid ? ls_kstr_c(gid) : ls_kstr_null(),
                                    .MemberId = ls_kstr_c(member),
                                    .ShareSessionEpoch = epoch,
                                    .MaxWaitMs = 0,
                                    .MaxBytes = 1 << 20,
                                    .MaxRecords = max_records,
                                    .BatchSize = 100,
                                    .Topics = &t,
                                    .NumTopics = 1};
    ls_kafka_ShareFetchResponse r;
    memset(p, 0, sizeof *p);
    if (kf_call(&E, 78, 1, &m, &r, a) != 0) return -1000;
    if (lock_ms) *lock_ms = r.AcquisitionLockTimeoutMs;
    for (int32_t i = 0; i < r.NumResponses; i++)
        for (int32_t k = 0; k < r.Responses[i].NumPartitions; k++)
            if (!memcmp(&r.Responses[i].TopicId, id, sizeof *id) &&
                r.Responses[i].Partitions[k].PartitionIndex == partition)
                *p = r.Responses[i].Partitions[k];
    return r.ErrorCode;
}

/* ShareAcknowledge v1 of one batch [first, last] of type for partition 0
 * of topic id: the top-level code (-1000: no answer), the partition's in
 * *pcode (-1: absent). */
static int share_ack(const char *gid, const char *member, int32_t epoch, const ls_uuid_t *id,
                     int64_t first, int64_t last, int8_t type, int *pcode)
{
    ls_kafka_ShareAcknowledgeRequest_AcknowledgementBatch b = {.FirstOffset = first,
                                                               .LastOffset = last,
                                                               .AcknowledgeTypes = &type,
                                                               .NumAcknowledgeTypes = 1};
    ls_kafka_ShareAcknowledgeRequest_AcknowledgePartition p = {
        .PartitionIndex = 0, .AcknowledgementBatches = &b, .NumAcknowledgementBatches = 1};
    ls_kafka_ShareAcknowledgeRequest_AcknowledgeTopic t = {
        .TopicId = *id, .Partitions = &p, .NumPartitions = 1};
    ls_kafka_ShareAcknowledgeRequest m = {.GroupId = ls_kstr_c(gid),
                                          .MemberId = ls_kstr_c(member),
                                          .ShareSessionEpoch = epoch,
                                          .Topics = &t,
                                          .NumTopics = 1};
    ls_arena_t *a = ls_arena_new();
    ls_kafka_ShareAcknowledgeResponse r;
    int code = -1000;
    *pcode = -1;
    if (kf_call(&E, 79, 1, &m, &r, a) == 0) {
        code = r.ErrorCode;
        if (r.NumResponses == 1 && r.Responses[0].NumPartitions == 1)
            *pcode = r.Responses[0].Partitions[0].ErrorCode;
    }
    ls_arena_free(a);
    return code;
}

static fack_t ack(int64_t first, int64_t last, int8_t *type)
{
    return (fack_t){.FirstOffset = first,
                    .LastOffset = last,
                    .AcknowledgeTypes = type,
                    .NumAcknowledgeTypes = 1};
}

TEST(acquire_then_acknowledge)
{
    ls_uuid_t id;
    CHECK(share_topic("sf-t", "sf-g", 3, &id) == 0);
    ls_arena_t *a = ls_arena_new();
    fpart_t p;
    int32_t lock = 0;
    CHECK_EQ_INT(share_fetch("sf-g", "m1", 0, &id, 0, NULL, 0, 100, &p, &lock, a), LS_KERR_NONE);
    CHECK_EQ_INT(lock, E.cfg.group_share_record_lock_duration_ms);
    CHECK_EQ_INT(p.ErrorCode, LS_KERR_NONE);
    CHECK_EQ_INT(p.NumAcquiredRecords, 1);
    CHECK_EQ_INT(p.AcquiredRecords[0].FirstOffset, 0);
    CHECK_EQ_INT(p.AcquiredRecords[0].LastOffset, 2);
    CHECK_EQ_INT(p.AcquiredRecords[0].DeliveryCount, 1);
    CHECK(p.Records.len > 0);
    /* the acknowledgement rides the next fetch, which has nothing new */
    int8_t accept = LS_SHAREP_ACCEPT;
    fack_t b = ack(0, 2, &accept);
    CHECK_EQ_INT(share_fetch("sf-g", "m1", 1, &id, 0, &b, 1, 100, &p, NULL, a), LS_KERR_NONE);
    CHECK_EQ_INT(p.ErrorCode, LS_KERR_NONE);
    CHECK_EQ_INT(p.AcknowledgeErrorCode, LS_KERR_NONE);
    CHECK_EQ_INT(p.NumAcquiredRecords, 0);
    ls_arena_free(a);
    /* the records are no longer the member's to acknowledge */
    int pcode;
    CHECK_EQ_INT(share_ack("sf-g", "m1", 2, &id, 0, 2, LS_SHAREP_ACCEPT, &pcode), LS_KERR_NONE);
    CHECK_EQ_INT(pcode, LS_KERR_INVALID_RECORD_STATE);
}

TEST(closing_the_session_gives_the_records_back)
{
    ls_uuid_t id;
    CHECK(share_topic("sf-close", "sf-gc", 2, &id) == 0);
    ls_arena_t *a = ls_arena_new();
    fpart_t p;
    CHECK_EQ_INT(share_fetch("sf-gc", "m1", 0, &id, 0, NULL, 0, 100, &p, NULL, a), LS_KERR_NONE);
    CHECK_EQ_INT(p.NumAcquiredRecords, 1);
    /* a second member gets nothing while m1 holds them */
    CHECK_EQ_INT(share_fetch("sf-gc", "m2", 0, &id, 0, NULL, 0, 100, &p, NULL, a), LS_KERR_NONE);
    CHECK_EQ_INT(p.NumAcquiredRecords, 0);
    int pcode;
    CHECK_EQ_INT(share_ack("sf-gc", "m1", -1, &id, 0, 0, LS_SHAREP_ACCEPT, &pcode), LS_KERR_NONE);
    CHECK_EQ_INT(pcode, LS_KERR_NONE);
    /* offset 0 was accepted; offset 1 went back with the session */
    CHECK_EQ_INT(share_fetch("sf-gc", "m2", 1, &id, 0, NULL, 0, 100, &p, NULL, a), LS_KERR_NONE);
    CHECK_EQ_INT(p.NumAcquiredRecords, 1);
    CHECK_EQ_INT(p.AcquiredRecords[0].FirstOffset, 1);
    CHECK_EQ_INT(p.AcquiredRecords[0].LastOffset, 1);
    CHECK_EQ_INT(p.AcquiredRecords[0].DeliveryCount, 2);
    /* the closed session is gone */
    CHECK_EQ_INT(share_fetch("sf-gc", "m1", 1, &id, 0, NULL, 0, 100, &p, NULL, a),
                 LS_KERR_SHARE_SESSION_NOT_FOUND);
    ls_arena_free(a);
}

/* Sets one of gid's group configs. */
static int group_set(const char *gid, const char *key, const char *value)
{
    ls_group_config_op_t op = {key, value};
    char err[256];
    return ls_group_configs_alter(E.group_configs, gid, false, &op, 1, &KF_GROUP_DEFAULTS, false,
                                  err, sizeof err) == LS_OK
               ? 0
               : -1;
}

TEST(group_lock_duration_and_delivery_limit_apply)
{
    ls_uuid_t id;
    CHECK(share_topic("sf-cfg", "sf-cfg-g", 1, &id) == 0);
    CHECK(group_set("sf-cfg-g", LS_GROUP_CONFIG_SHARE_LOCK, "20000") == 0);
    CHECK(group_set("sf-cfg-g", LS_GROUP_CONFIG_SHARE_DELIVERY, "3") == 0);
    ls_arena_t *a = ls_arena_new();
    fpart_t p;
    int32_t lock = 0;
    CHECK_EQ_INT(share_fetch("sf-cfg-g", "m1", 0, &id, 0, NULL, 0, 100, &p, &lock, a),
                 LS_KERR_NONE);
    CHECK_EQ_INT(lock, 20000);
    CHECK_EQ_INT(p.AcquiredRecords[0].DeliveryCount, 1);
    /* released and taken again by the same fetch, until the group's limit */
    int8_t release = LS_SHAREP_RELEASE;
    fack_t b = ack(0, 0, &release);
    for (int32_t epoch = 1; epoch <= 2; epoch++) {
        CHECK_EQ_INT(share_fetch("sf-cfg-g", "m1", epoch, &id, 0, &b, 1, 100, &p, NULL, a),
                     LS_KERR_NONE);
        CHECK_EQ_INT(p.NumAcquiredRecords, 1);
        CHECK_EQ_INT(p.AcquiredRecords[0].DeliveryCount, epoch + 1);
    }
    CHECK_EQ_INT(share_fetch("sf-cfg-g", "m1", 3, &id, 0, &b, 1, 100, &p, NULL, a), LS_KERR_NONE);
    CHECK_EQ_INT(p.NumAcquiredRecords, 0); /* 3 deliveries: archived (the broker's limit is 5) */

    /* a limit lowered below an available record's count archives it */
    CHECK(share_topic("sf-cfg2", "sf-cfg2-g", 1, &id) == 0);
    CHECK_EQ_INT(share_fetch("sf-cfg2-g", "m1", 0, &id, 0, NULL, 0, 100, &p, &lock, a),
                 LS_KERR_NONE);
    CHECK_EQ_INT(lock, E.cfg.group_share_record_lock_duration_ms);
    CHECK_EQ_INT(share_fetch("sf-cfg2-g", "m1", 1, &id, 0, &b, 1, 100, &p, NULL, a), LS_KERR_NONE);
    CHECK_EQ_INT(p.AcquiredRecords[0].DeliveryCount, 2);
    int pcode;
    CHECK_EQ_INT(share_ack("sf-cfg2-g", "m1", 2, &id, 0, 0, LS_SHAREP_RELEASE, &pcode),
                 LS_KERR_NONE);
    CHECK_EQ_INT(pcode, LS_KERR_NONE);
    CHECK(group_set("sf-cfg2-g", LS_GROUP_CONFIG_SHARE_DELIVERY, "2") == 0);
    CHECK_EQ_INT(share_fetch("sf-cfg2-g", "m1", 3, &id, 0, NULL, 0, 100, &p, NULL, a),
                 LS_KERR_NONE);
    CHECK_EQ_INT(p.NumAcquiredRecords, 0);

    /* the group's in-flight bound holds the acquisitions */
    CHECK(share_topic("sf-cfg3", "sf-cfg3-g", 150, &id) == 0);
    CHECK(group_set("sf-cfg3-g", LS_GROUP_CONFIG_SHARE_LOCKS, "100") == 0);
    CHECK_EQ_INT(share_fetch("sf-cfg3-g", "m1", 0, &id, 0, NULL, 0, 500, &p, NULL, a),
                 LS_KERR_NONE);
    CHECK_EQ_INT(p.NumAcquiredRecords, 1);
    CHECK_EQ_INT(p.AcquiredRecords[0].FirstOffset, 0);
    CHECK_EQ_INT(p.AcquiredRecords[0].LastOffset, 99);
    ls_arena_free(a);
}

TEST(session_epochs)
{
    ls_uuid_t id;
    CHECK(share_topic("sf-epoch", "sf-ge", 1, &id) == 0);
    ls_arena_t *a = ls_arena_new();
    fpart_t p;
    CHECK_EQ_INT(share_fetch("sf-ge", "ghost", 4, &id, 0, NULL, 0, 100, &p, NULL, a),
                 LS_KERR_SHARE_SESSION_NOT_FOUND);
    CHECK_EQ_INT(share_fetch("sf-ge", "m1", 0, &id, 0, NULL, 0, 100, &p, NULL, a), LS_KERR_NONE);
    CHECK_EQ_INT(p.NumAcquiredRecords, 1);
    CHECK_EQ_INT(share_fetch("sf-ge", "m1", 3, &id, 0, NULL, 0, 100, &p, NULL, a),
                 LS_KERR_INVALID_SHARE_SESSION_EPOCH);
    CHECK_EQ_INT(p.NumAcquiredRecords, 0);
    /* the expected epoch still works after the refusal */
    CHECK_EQ_INT(share_fetch("sf-ge", "m1", 1, &id, 0, NULL, 0, 100, &p, NULL, a), LS_KERR_NONE);
    int pcode;
    CHECK_EQ_INT(share_ack("sf-ge", "m1", 0, &id, 0, 0, LS_SHAREP_ACCEPT, &pcode),
                 LS_KERR_INVALID_SHARE_SESSION_EPOCH);
    CHECK_EQ_INT(share_ack("sf-ge", "m1", 9, &id, 0, 0, LS_SHAREP_ACCEPT, &pcode),
                 LS_KERR_INVALID_SHARE_SESSION_EPOCH);
    CHECK_EQ_INT(share_ack("sf-ge", "ghost", 1, &id, 0, 0, LS_SHAREP_ACCEPT, &pcode),
                 LS_KERR_SHARE_SESSION_NOT_FOUND);
    ls_arena_free(a);
}

TEST(acknowledgements_need_an_open_session)
{
    ls_uuid_t id;
    CHECK(share_topic("sf-ack0", "sf-ga", 1, &id) == 0);
    int8_t accept = LS_SHAREP_ACCEPT;
    fack_t b = ack(0, 0, &accept);
    ls_arena_t *a = ls_arena_new();
    fpart_t p;
    CHECK_EQ_INT(share_fetch("sf-ga", "m1", 0, &id, 0, &b, 1, 100, &p, NULL, a),
                 LS_KERR_INVALID_REQUEST);
    CHECK_EQ_INT(p.NumAcquiredRecords, 0);
    ls_arena_free(a);
}

TEST(bad_acknowledgements)
{
    ls_uuid_t id;
    CHECK(share_topic("sf-badack", "sf-gb", 2, &id) == 0);
    ls_arena_t *a = ls_arena_new();
    fpart_t p;
    CHECK_EQ_INT(share_fetch("sf-gb", "m1", 0, &id, 0, NULL, 0, 100, &p, NULL, a), LS_KERR_NONE);
    CHECK_EQ_INT(p.NumAcquiredRecords, 1);
    /* past the records handed out; then a type Kafka does not define */
    int pcode;
    CHECK_EQ_INT(share_ack("sf-gb", "m1", 1, &id, 50, 60, LS_SHAREP_ACCEPT, &pcode), LS_KERR_NONE);
    CHECK_EQ_INT(pcode, LS_KERR_INVALID_REQUEST);
    CHECK_EQ_INT(share_ack("sf-gb", "m1", 2, &id, 0, 1, 9, &pcode), LS_KERR_NONE);
    CHECK_EQ_INT(pcode, LS_KERR_INVALID_REQUEST);
    /* a batch that fails is not applied: the records are still m1's */
    CHECK_EQ_INT(share_ack("sf-gb", "m1", 3, &id, 0, 1, LS_SHAREP_ACCEPT, &pcode), LS_KERR_NONE);
    CHECK_EQ_INT(pcode, LS_KERR_NONE);
    ls_arena_free(a);
}

TEST(renew_takes_renew_acknowledgements_only)
{
    ls_uuid_t id;
    CHECK(share_topic("sf-renew", "sf-gr", 1, &id) == 0);
    ls_arena_t *a = ls_arena_new();
    fpart_t p;
    CHECK_EQ_INT(share_fetch("sf-gr", "m1", 0, &id, 0, NULL, 0, 100, &p, NULL, a), LS_KERR_NONE);
    CHECK_EQ_INT(p.NumAcquiredRecords, 1);
    int8_t accept = LS_SHAREP_ACCEPT;
    ls_kafka_ShareAcknowledgeRequest_AcknowledgementBatch b = {
        .FirstOffset = 0, .LastOffset = 0, .AcknowledgeTypes = &accept, .NumAcknowledgeTypes = 1};
    ls_kafka_ShareAcknowledgeRequest_AcknowledgePartition ap = {
        .PartitionIndex = 0, .AcknowledgementBatches = &b, .NumAcknowledgementBatches = 1};
    ls_kafka_ShareAcknowledgeRequest_AcknowledgeTopic t = {
        .TopicId = id, .Partitions = &ap, .NumPartitions = 1};
    ls_kafka_ShareAcknowledgeRequest m = {.GroupId = ls_kstr_c("sf-gr"),
                                          .MemberId = ls_kstr_c("m1"),
                                          .ShareSessionEpoch = 1,
                                          .IsRenewAck = true,
                                          .Topics = &t,
                                          .NumTopics = 1};
    ls_kafka_ShareAcknowledgeResponse r;
    CHECK(kf_call(&E, 79, 2, &m, &r, a) == 0);
    CHECK_EQ_INT(r.ErrorCode, LS_KERR_NONE);
    CHECK_EQ_INT(r.NumResponses, 1);
    CHECK_EQ_INT(r.Responses[0].Partitions[0].ErrorCode, LS_KERR_INVALID_REQUEST);
    CHECK(kf_kstr_has(r.Responses[0].Partitions[0].ErrorMessage, "RENEW"));
    ls_arena_free(a);
}

TEST(empty_ids_are_refused)
{
    ls_uuid_t id;
    CHECK(share_topic("sf-ids", "sf-gi", 1, &id) == 0);
    ls_arena_t *a = ls_arena_new();
    fpart_t p;
    CHECK_EQ_INT(share_fetch("", "m1", 0, &id, 0, NULL, 0, 100, &p, NULL, a),
                 LS_KERR_INVALID_GROUP_ID);
    CHECK_EQ_INT(share_fetch(NULL, "m1", 0, &id, 0, NULL, 0, 100, &p, NULL, a),
                 LS_KERR_INVALID_GROUP_ID);
    CHECK_EQ_INT(share_fetch("sf-gi", "", 0, &id, 0, NULL, 0, 100, &p, NULL, a),
                 LS_KERR_INVALID_REQUEST);
    int pcode;
    CHECK_EQ_INT(share_ack("", "m1", 1, &id, 0, 0, LS_SHAREP_ACCEPT, &pcode),
                 LS_KERR_INVALID_GROUP_ID);
    ls_arena_free(a);
}

TEST(unknown_topic_id_or_partition)
{
    ls_uuid_t id;
    CHECK(share_topic("sf-parts", "sf-gp", 1, &id) == 0);
    ls_uuid_t nosuch = id;
    nosuch.b[0] ^= 0xff;
    ls_arena_t *a = ls_arena_new();
    fpart_t p;
    CHECK_EQ_INT(share_fetch("sf-gp", "m1", 0, &nosuch, 0, NULL, 0, 100, &p, NULL, a),
                 LS_KERR_NONE);
    CHECK_EQ_INT(p.ErrorCode, LS_KERR_UNKNOWN_TOPIC_ID);
    CHECK_EQ_INT(p.NumAcquiredRecords, 0);
    CHECK_EQ_INT(share_fetch("sf-gp", "m1", 1, &id, 5, NULL, 0, 100, &p, NULL, a), LS_KERR_NONE);
    CHECK_EQ_INT(p.ErrorCode, LS_KERR_UNKNOWN_TOPIC_OR_PARTITION);
    ls_arena_free(a);
}

TEST(group_and_topic_authorization_failed)
{
    ls_uuid_t id;
    CHECK(share_topic("sf-denied", "sf-gd", 1, &id) == 0);
    ls_arena_t *a = ls_arena_new();
    fpart_t p;
    CHECK(kf_authz_on(&E, NULL) == 0);
    int group_code = share_fetch("sf-gd", "m1", 0, &id, 0, NULL, 0, 100, &p, NULL, a);
    /* READ on the group only: the topic stays denied */
    ls_acl_t b = {LS_ACL_RES_GROUP,
                  LS_ACL_PAT_LITERAL,
                  LS_ACL_OP_READ,
                  LS_ACL_PERM_ALLOW,
                  "sf-gd",
                  "User:ANONYMOUS",
                  "*"};
    ls_status st = ls_authz_create(E.svc.authz, &b, 1, "User:test", "127.0.0.1");
    int topic_code = share_fetch("sf-gd", "m1", 0, &id, 0, NULL, 0, 100, &p, NULL, a);
    ls_acl_t *gone;
    size_t ngone;
    if (ls_authz_delete(E.svc.authz, &b, 1, &gone, &ngone, "User:test", "127.0.0.1") == LS_OK)
        ls_authz_free_list(gone, ngone);
    kf_authz_off(&E);
    CHECK_EQ_INT(group_code, LS_KERR_GROUP_AUTHORIZATION_FAILED);
    CHECK(st == LS_OK);
    CHECK_EQ_INT(topic_code, LS_KERR_NONE);
    CHECK_EQ_INT(p.ErrorCode, LS_KERR_TOPIC_AUTHORIZATION_FAILED);
    CHECK_EQ_INT(p.NumAcquiredRecords, 0);
    ls_arena_free(a);
}

TEST(max_records_bounds_the_acquisitions)
{
    ls_uuid_t id;
    CHECK(share_topic("sf-max", "sf-gx", 5, &id) == 0);
    ls_arena_t *a = ls_arena_new();
    fpart_t p;
    CHECK_EQ_INT(share_fetch("sf-gx", "m1", 0, &id, 0, NULL, 0, 2, &p, NULL, a), LS_KERR_NONE);
    CHECK_EQ_INT(p.NumAcquiredRecords, 1);
    CHECK_EQ_INT(p.AcquiredRecords[0].FirstOffset, 0);
    CHECK_EQ_INT(p.AcquiredRecords[0].LastOffset, 1);
    /* the rest is there for the next fetch */
    CHECK_EQ_INT(share_fetch("sf-gx", "m1", 1, &id, 0, NULL, 0, 100, &p, NULL, a), LS_KERR_NONE);
    CHECK_EQ_INT(p.NumAcquiredRecords, 1);
    CHECK_EQ_INT(p.AcquiredRecords[0].FirstOffset, 2);
    CHECK_EQ_INT(p.AcquiredRecords[0].LastOffset, 4);
    ls_arena_free(a);
}

int main(void)
{
    if (kf_open(&E) != 0) return 1;
    RUN(acquire_then_acknowledge);
    RUN(closing_the_session_gives_the_records_back);
    RUN(group_lock_duration_and_delivery_limit_apply);
    RUN(session_epochs);
    RUN(acknowledgements_need_an_open_session);
    RUN(bad_acknowledgements);
    RUN(renew_takes_renew_acknowledgements_only);
    RUN(empty_ids_are_refused);
    RUN(unknown_topic_id_or_partition);
    RUN(group_and_topic_authorization_failed);
    RUN(max_records_bounds_the_acquisitions);
    kf_close(&E);
    UNIT_DONE();
}
