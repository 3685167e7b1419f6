/* The dispatch table (kafka/api.c), whose rows tools/kgen generates from the
 * descriptions' `handler` and `row` lines (kafka/api_gen.h): every row is
 * served by its handler with its description's codecs and versions, keys are
 * unique, the serial apis are the coordinator's, and ApiVersions lists the
 * rows in row order, the first 64 in the order the table had when it was
 * hand-kept. */
#include "kafka/api_gen.h"
#include "kafka_fake.h"
#include "unit.h"

static kf_env_t E;

static const ls_kafka_api_t *row_of(int16_t key)
{
    for (int i = 0; i < ls_kafka_napis; i++)
        if (ls_kafka_apis[i].key == key) return &ls_kafka_apis[i];
    return NULL;
}

TEST(every_row_has_handler_and_codecs)
{
    CHECK(ls_kafka_napis > 0);
    for (int i = 0; i < ls_kafka_napis; i++) {
        const ls_kafka_api_t *a = &ls_kafka_apis[i];
        CHECK(a->handler != NULL);
        CHECK(a->msg != NULL);
        CHECK_EQ_INT(a->msg->key, a->key);
        CHECK(strcmp(a->msg->name, a->name) == 0);
        CHECK_EQ_INT(a->min_version, a->msg->min_version);
        CHECK_EQ_INT(a->max_version, a->msg->max_version);
        CHECK_EQ_INT(a->first_flexible, a->msg->first_flexible);
        CHECK(a->min_version <= a->max_version);
        bool described = false; /* a served api is one of the generated messages */
        for (int j = 0; j < ls_kmsg_nall; j++)
            described |= ls_kmsg_all[j] == a->msg;
        CHECK(described);
    }
}

TEST(keys_unique_and_found_by_key)
{
    for (int i = 0; i < ls_kafka_napis; i++) {
        for (int j = 0; j < i; j++)
            CHECK(ls_kafka_apis[j].key != ls_kafka_apis[i].key);
        CHECK(ls_kafka_api_find(ls_kafka_apis[i].key) == &ls_kafka_apis[i]);
        CHECK(strcmp(ls_kafka_api_name(ls_kafka_apis[i].key), ls_kafka_apis[i].name) == 0);
    }
    CHECK(ls_kafka_api_find(38) == NULL); /* CreateDelegationToken: not served */
    CHECK(strcmp(ls_kafka_api_name(38), "CreateDelegationToken") == 0);
    CHECK(ls_kafka_api_find(-1) == NULL && ls_kafka_api_find(INT16_MAX) == NULL);
}

/* Each generated row against the macros of its name (LS_KAFKA_<PFX>_*). */
#define CHECK_ROW(api, pfx, fn, serial_)                                                           \
    do {                                                                                           \
        const ls_kafka_api_t *a = row_of(LS_KAFKA_API_##pfx);                                      \
        CHECK(a != NULL);                                                                          \
        CHECK(strcmp(a->name, #api) == 0);                                                         \
        CHECK_EQ_INT(a->min_version, LS_KAFKA_##pfx##_MIN);                                        \
        CHECK_EQ_INT(a->max_version, LS_KAFKA_##pfx##_MAX);                                        \
        CHECK_EQ_INT(a->first_flexible, LS_KAFKA_##pfx##_FLEX);                                    \
        CHECK(a->msg == &ls_kmsg_##api);                                                           \
        CHECK(a->handler == fn);                                                                   \
        CHECK(a->serial == (serial_));                                                             \
        rows++;                                                                                    \
    } while (0);

TEST(rows_match_their_macros)
{
    int rows = 0;
    LS_KAFKA_API_ROWS(CHECK_ROW)
    CHECK_EQ_INT(rows, ls_kafka_napis);
    /* a few spelled out, so a wrong macro cannot agree with itself */
    CHECK(row_of(0)->min_version == 3 && row_of(0)->handler == ls_kafka_handle_produce);
    CHECK(row_of(18)->handler == ls_kafka_handle_api_versions);
    CHECK(row_of(35)->handler == ls_kafka_handle_describe_log_dirs);
}

/* The coordinator apis whose answers depend on the connection's earlier
 * requests (kafka/api.h, conn.c "Serial requests"), and no other. */
TEST(serial_set_is_the_coordinators)
{
    static const int16_t serial[] = {
        LS_KAFKA_API_OFFSET_COMMIT,
        LS_KAFKA_API_OFFSET_FETCH,
        LS_KAFKA_API_LEAVE_GROUP,
        LS_KAFKA_API_INIT_PRODUCER_ID,
        LS_KAFKA_API_ADD_PARTITIONS_TO_TXN,
        LS_KAFKA_API_ADD_OFFSETS_TO_TXN,
        LS_KAFKA_API_END_TXN,
        LS_KAFKA_API_TXN_OFFSET_COMMIT,
        LS_KAFKA_API_OFFSET_DELETE,
    };
    int n = (int)(sizeof serial / sizeof serial[0]), seen = 0;
    for (int i = 0; i < ls_kafka_napis; i++) {
        bool want = false;
        for (int j = 0; j < n; j++)
            want |= serial[j] == ls_kafka_apis[i].key;
        if (ls_kafka_apis[i].serial != want) printf("  %s serial?\n", ls_kafka_apis[i].name);
        CHECK(ls_kafka_apis[i].serial == want);
        seen += want;
    }
    CHECK_EQ_INT(seen, n);
}

/* The keys in the hand-kept table's order: rows 0-63. A new api takes the
 * next row and leaves these alone. */
static const int16_t first_rows[] = {
    0,  1,  2,  3,  8,  9,  10, 11, 12, 13, 14, 15, 16, 18, 19, 20, 21, 22, 24, 25, 26, 28,
    29, 30, 31, 23, 32, 33, 37, 42, 44, 47, 60, 27, 61, 65, 66, 17, 36, 50, 51, 48, 49, 75,
    35, 34, 43, 45, 46, 57, 74, 71, 72, 68, 69, 76, 77, 78, 79, 90, 91, 92, 88, 89,
};

TEST(rows_keep_their_order)
{
    int n = (int)(sizeof first_rows / sizeof first_rows[0]);
    CHECK(ls_kafka_napis >= n);
    for (int i = 0; i < n; i++)
        CHECK_EQ_INT(ls_kafka_apis[i].key, first_rows[i]);
}

/* What a client sees: ApiVersions lists every row, in row order, with its
 * range; Produce from v0 (KAFKA-18659, kafka/api.c). */
TEST(api_versions_lists_the_rows_in_order)
{
    ls_arena_t *a = ls_arena_new();
    ls_kafka_ApiVersionsRequest q = {.ClientSoftwareName = ls_kstr_c("unit"),
                                     .ClientSoftwareVersion = ls_kstr_c("1")};
    ls_kafka_ApiVersionsResponse r;
    int rc = kf_call(&E, LS_KAFKA_API_API_VERSIONS, 3, &q, &r, a);
    CHECK(rc == 0);
    CHECK_EQ_INT(r.ErrorCode, 0);
    CHECK_EQ_INT(r.NumApiKeys, ls_kafka_napis);
    for (int i = 0; i < ls_kafka_napis; i++) {
        const ls_kafka_api_t *api = &ls_kafka_apis[i];
        CHECK_EQ_INT(r.ApiKeys[i].ApiKey, api->key);
        CHECK_EQ_INT(r.ApiKeys[i].MinVersion, api->key == 0 ? 0 : api->min_version);
        CHECK_EQ_INT(r.ApiKeys[i].MaxVersion, api->max_version);
    }
    ls_arena_free(a);
}

int main(void)
{
    if (kf_open(&E) != 0) return 1;
    RUN(every_row_has_handler_and_codecs);
    RUN(keys_unique_and_found_by_key);
    RUN(rows_match_their_macros);
    RUN(serial_set_is_the_coordinators);
    RUN(rows_keep_their_order);
    RUN(api_versions_lists_the_rows_in_order);
    kf_close(&E);
    UNIT_DONE();
}
