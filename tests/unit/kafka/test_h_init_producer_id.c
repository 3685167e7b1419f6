/* InitProducerId handler (kafka/h_init_producer_id.c) error paths, through the
 * handler harness (kafka_fake.h): the exact Kafka error code, and no
 * producer id handed out. (Transactional ids past the authorization check
 * go to the transaction coordinator, h_txn.c: test_h_txn.c.) */
#include "kafka_fake.h"
#include "security/authz.h"
#include "unit.h"

static kf_env_t E;

/* InitProducerId v4 (tid NULL: idempotent only); the error code, the
 * producer id in *pid, or -1000. */
static int init_pid(const char *tid, int64_t id, int16_t epoch, int64_t *pid)
{
    ls_kafka_InitProducerIdRequest m = {.TransactionalId = {NULL, -1},
                                        .TransactionTimeoutMs = 60000,
                                        .ProducerId = id,
                                        .ProducerEpoch = epoch};
    if (tid) m.TransactionalId = (ls_kstr_t){tid, (int32_t)strlen(tid)};
    ls_arena_t *a = ls_arena_new();
    ls_kafka_InitProducerIdResponse r;
    int code = -1000;
    if (kf_call(&E, 22, 4, &m, &r, a) == 0) {
        code = r.ErrorCode;
        if (pid) *pid = r.ProducerId;
    }
    ls_arena_free(a);
    return code;
}

TEST(idempotent_producer_gets_an_id)
{ /* the baseline the error tests compare with (an offloaded allocation) */
    int64_t pid = -7;
    CHECK_EQ_INT(init_pid(NULL, -1, -1, &pid), LS_KERR_NONE);
    CHECK(pid >= 0);
}

TEST(id_without_epoch_is_invalid)
{
    int64_t pid = -7;
    CHECK_EQ_INT(init_pid(NULL, 42, -1, &pid), LS_KERR_INVALID_REQUEST);
    CHECK_EQ_INT(pid, -1);
}

static int denied(const char *tid, int64_t *pid)
{
    char err[256];
    ls_authz_t *az = ls_authz_open(E.meta, NULL, false, err, sizeof err);
    if (!az) return -2000;
    E.svc.authz = az;
    int code = init_pid(tid, -1, -1, pid);
    E.svc.authz = NULL;
    ls_authz_close(az);
    return code;
}

TEST(idempotent_denied_cluster_authorization_failed)
{
    int64_t pid = -7;
    CHECK_EQ_INT(denied(NULL, &pid), LS_KERR_CLUSTER_AUTHORIZATION_FAILED);
    CHECK_EQ_INT(pid, -1);
}

TEST(transactional_id_authorization_failed)
{
    int64_t pid = -7;
    CHECK_EQ_INT(denied("tx-1", &pid), LS_KERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
    CHECK_EQ_INT(pid, -1);
}

int main(void)
{
    if (kf_open(&E) != 0) return 1;
    RUN(idempotent_producer_gets_an_id);
    RUN(id_without_epoch_is_invalid);
    RUN(idempotent_denied_cluster_authorization_failed);
    RUN(transactional_id_authorization_failed);
    kf_close(&E);
    UNIT_DONE();
}
