/* The consumer-group handlers (kafka/h_group.c, classic protocol):
 * JoinGroup, SyncGroup and Heartbeat (the committed offsets' handlers are
 * test_h_group_offsets.c's), through
 * the handler harness (kafka_fake.h) over a real group service in memory.
 * Each error path answers the exact Kafka code and changes nothing (a
 * refused commit leaves the committed offset as it was). One group id per
 * test: the service is shared by the binary. */
#include "group_calls.h"
#include "kafka/msg.h"
#include "kafka_fake.h"
#include "unit.h"

static kf_env_t E;

TEST(join_without_a_member_id_is_told_its_id)
{
    char member[128] = "";
    CHECK_EQ_INT(kg_join(&E, "g-member-required", "", 10000, member, NULL, NULL),
                 LS_KERR_MEMBER_ID_REQUIRED);
    CHECK(member[0] != 0);
    int32_t gen = -7;
    bool leader = false;
    CHECK_EQ_INT(kg_join(&E, "g-member-required", member, 10000, member, &gen, &leader),
                 LS_KERR_NONE);
    CHECK(gen >= 1 && leader);
}

TEST(join_session_timeout_out_of_range)
{
    int32_t below = E.cfg.group_min_session_timeout_ms - 1;
    CHECK_EQ_INT(kg_join(&E, "g-session", "", below, NULL, NULL, NULL),
                 LS_KERR_INVALID_SESSION_TIMEOUT);
    int32_t above = E.cfg.group_max_session_timeout_ms + 1;
    CHECK_EQ_INT(kg_join(&E, "g-session", "", above, NULL, NULL, NULL),
                 LS_KERR_INVALID_SESSION_TIMEOUT);
}

TEST(join_unknown_member)
{
    char member[128];
    int32_t gen;
    CHECK_EQ_INT(kg_join_fully(&E, "g-join-unknown", member, &gen), LS_KERR_NONE);
    CHECK_EQ_INT(kg_join(&E, "g-join-unknown", "nobody-1", 10000, NULL, NULL, NULL),
                 LS_KERR_UNKNOWN_MEMBER_ID);
}

TEST(sync_and_heartbeat_errors)
{
    char member[128];
    int32_t gen;
    bool got = false;
    CHECK_EQ_INT(kg_join_fully(&E, "g-sync", member, &gen), LS_KERR_NONE);
    CHECK_EQ_INT(kg_sync_group(&E, "g-sync", member, gen + 1, true, NULL),
                 LS_KERR_ILLEGAL_GENERATION);
    CHECK_EQ_INT(kg_sync_group(&E, "g-sync", "nobody-2", gen, true, NULL),
                 LS_KERR_UNKNOWN_MEMBER_ID);
    CHECK_EQ_INT(kg_sync_group(&E, "g-sync", member, gen, true, &got), LS_KERR_NONE);
    CHECK(got);
    CHECK_EQ_INT(kg_heartbeat(&E, "g-sync", member, gen), LS_KERR_NONE);
    CHECK_EQ_INT(kg_heartbeat(&E, "g-sync", member, gen - 1), LS_KERR_ILLEGAL_GENERATION);
    CHECK_EQ_INT(kg_heartbeat(&E, "g-sync", "nobody-3", gen), LS_KERR_UNKNOWN_MEMBER_ID);
}

TEST(heartbeat_of_an_unknown_group)
{ /* as Kafka: the member is unknown, so the client rejoins */
    CHECK_EQ_INT(kg_heartbeat(&E, "g-never-joined", "nobody-4", 1), LS_KERR_UNKNOWN_MEMBER_ID);
}

TEST(empty_group_id_is_invalid)
{
    CHECK_EQ_INT(kg_join(&E, "", "", 10000, NULL, NULL, NULL), LS_KERR_INVALID_GROUP_ID);
    CHECK_EQ_INT(kg_heartbeat(&E, "", "m", 1), LS_KERR_INVALID_GROUP_ID);
}

int main(void)
{
    if (kf_open(&E) != 0) return 1;
    RUN(join_without_a_member_id_is_told_its_id);
    RUN(join_session_timeout_out_of_range);
    RUN(join_unknown_member);
    RUN(sync_and_heartbeat_errors);
    RUN(heartbeat_of_an_unknown_group);
    RUN(empty_group_id_is_invalid);
    kf_close(&E);
    UNIT_DONE();
}
