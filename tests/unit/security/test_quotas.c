/* Client quotas: Kafka's precedence of entities, the rate window's throttle
 * (kafka/kquota.h) and the record shared by two brokers of one store. */
#include <string.h>

#include "kafka/kquota.h"
#include "meta/meta.h"
#include "security/quotas.h"
#include "unit.h"

static void set(ls_quotas_t *q, ls_qpart u, const char *un, ls_qpart c, const char *cn,
                ls_quota_key k, double v, bool remove)
{
    ls_quota_entity_t e = {u, c, (char *)un, (char *)cn};
    ls_quota_op_t op = {&e, k, v, remove};
    CHECK(ls_quotas_alter(q, &op, 1) == LS_OK);
}

static double quota_of(ls_quotas_t *q, const char *user, const char *client, char *window)
{
    double v = -1;
    char w[512];
    if (!ls_quotas_lookup(q, user, client, LS_QUOTA_PRODUCER_BYTE_RATE, &v, w, sizeof w)) return -1;
    if (window) strcpy(window, w);
    return v;
}

TEST(precedence)
{
    ls_meta_t *m = ls_meta_mem_open();
    char err[256];
    ls_quotas_t *q = ls_quotas_open(m, err, sizeof err);
    CHECK(q != NULL);
    const ls_quota_key P = LS_QUOTA_PRODUCER_BYTE_RATE;
    CHECK(quota_of(q, "alice", "app", NULL) == -1);
    /* from the weakest (8) to the strongest (1): each one added wins */
    set(q, LS_QPART_NONE, NULL, LS_QPART_DEFAULT, NULL, P, 8, false);
    CHECK(quota_of(q, "alice", "app", NULL) == 8);
    set(q, LS_QPART_NONE, NULL, LS_QPART_NAME, "app", P, 7, false);
    CHECK(quota_of(q, "alice", "app", NULL) == 7);
    CHECK(quota_of(q, "alice", "other", NULL) == 8);
    set(q, LS_QPART_DEFAULT, NULL, LS_QPART_NONE, NULL, P, 6, false);
    CHECK(quota_of(q, "alice", "app", NULL) == 6);
    set(q, LS_QPART_DEFAULT, NULL, LS_QPART_DEFAULT, NULL, P, 5, false);
    CHECK(quota_of(q, "alice", "app", NULL) == 5);
    set(q, LS_QPART_DEFAULT, NULL, LS_QPART_NAME, "app", P, 4, false);
    CHECK(quota_of(q, "alice", "app", NULL) == 4);
    set(q, LS_QPART_NAME, "alice", LS_QPART_NONE, NULL, P, 3, false);
    CHECK(quota_of(q, "alice", "app", NULL) == 3);
    CHECK(quota_of(q, "bob", "app", NULL) == 4);
    set(q, LS_QPART_NAME, "alice", LS_QPART_DEFAULT, NULL, P, 2, false);
    CHECK(quota_of(q, "alice", "app", NULL) == 2);
    set(q, LS_QPART_NAME, "alice", LS_QPART_NAME, "app", P, 1, false);
    char w[512];
    CHECK(quota_of(q, "alice", "app", w) == 1);
    CHECK(strcmp(w, "producer_byte_rate|alice|app") == 0);
    /* a default entity's window is per user / client id */
    CHECK(quota_of(q, "bob", "x", w) == 5 && strcmp(w, "producer_byte_rate|bob|x") == 0);
    /* keys resolve separately; removing the last key drops the entity */
    CHECK(!ls_quotas_lookup(q, "alice", "app", LS_QUOTA_CONSUMER_BYTE_RATE, &(double){0}, w,
                            sizeof w));
    set(q, LS_QPART_NAME, "alice", LS_QPART_NAME, "app", P, 0, true);
    CHECK(quota_of(q, "alice", "app", NULL) == 2);
    ls_quota_t *all;
    size_t n = ls_quotas_list(q, &all);
    CHECK_EQ_INT((int)n, 7);
    ls_quotas_free_list(all, n);
    /* a second broker on the same store loads the same quotas */
    ls_quotas_t *q2 = ls_quotas_open(m, err, sizeof err);
    CHECK(q2 && quota_of(q2, "alice", "app", NULL) == 2);
    ls_quotas_close(q2);
    ls_quotas_close(q);
    ls_meta_close(m);
}

TEST(throttle)
{
    ls_meta_t *m = ls_meta_mem_open();
    char err[256];
    ls_quotas_t *q = ls_quotas_open(m, err, sizeof err);
    set(q, LS_QPART_NONE, NULL, LS_QPART_NAME, "c", LS_QUOTA_PRODUCER_BYTE_RATE, 1000, false);
    ls_kquota_t *k = ls_kquota_new(q, 11, 1);
    int64_t t = 1000000;
    /* within the ten-second allowance: no throttle */
    CHECK_EQ_INT(ls_kquota_record(k, "User:u", "c", LS_QUOTA_PRODUCER_BYTE_RATE, 9000, t), 0);
    /* 20000 bytes over a 10 s span: rate 2000 = twice the quota -> (2000-1000)/1000 * 10 s */
    CHECK_EQ_INT(ls_kquota_record(k, "User:u", "c", LS_QUOTA_PRODUCER_BYTE_RATE, 11000, t), 10000);
    /* capped at the whole window */
    CHECK_EQ_INT(ls_kquota_record(k, "User:u", "c", LS_QUOTA_PRODUCER_BYTE_RATE, 1e6, t), 11000);
    /* another client id has no quota */
    CHECK_EQ_INT(ls_kquota_record(k, "User:u", "d", LS_QUOTA_PRODUCER_BYTE_RATE, 1e6, t), 0);
    /* once the samples age out, the client is under its quota again */
    CHECK_EQ_INT(ls_kquota_record(k, "User:u", "c", LS_QUOTA_PRODUCER_BYTE_RATE, 10, t + 12000), 0);
    ls_kquota_free(k);
    ls_quotas_close(q);
    ls_meta_close(m);
}

int main(void)
{
    RUN(precedence);
    RUN(throttle);
    UNIT_DONE();
}
