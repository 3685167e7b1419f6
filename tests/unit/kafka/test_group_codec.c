/* Consumer-group message codecs (generated into src/kafka/msg_gen.c): every message at
 * every version survives encode -> decode -> encode byte for byte, fields
 * absent at a version come back as their defaults, and truncated input is
 * a decode error, never a crash. */
#include <string.h>

#include "kafka/msg.h"
#include "unit.h"

#define S(x) ls_kstr_c(x)
static const ls_kbytes_t B = {(const uint8_t *)"\x00\x01\x02", 3};

/* encode m at v, decode it, encode again: identical bytes; then every
 * truncation fails to decode */
#define ROUNDTRIP(T, API, m)                                                                       \
    for (int16_t v = LS_KAFKA_##API##_MIN; v <= LS_KAFKA_##API##_MAX; v++) {                       \
        ls_arena_t *a = ls_arena_new();                                                            \
        ls_kw_t w1, w2;                                                                            \
        ls_kw_init(&w1);                                                                           \
        ls_kw_init(&w2);                                                                           \
        ls_kafka_##T##_encode(&w1, v, &(m));                                                       \
        ls_kr_t r;                                                                                 \
        ls_kr_init(&r, w1.buf.data, w1.buf.len);                                                   \
        ls_kafka_##T d;                                                                            \
        int rc = ls_kafka_##T##_decode(&r, v, a, &d);                                              \
        if (rc == 0) ls_kafka_##T##_encode(&w2, v, &d);                                            \
        int same = rc == 0 && ls_kr_remaining(&r) == 0 && w1.buf.len == w2.buf.len &&              \
                   (w1.buf.len == 0 || memcmp(w1.buf.data, w2.buf.data, w1.buf.len) == 0);         \
        int trunc_ok = 1;                                                                          \
        for (size_t cut = 0; cut < w1.buf.len && trunc_ok; cut++) {                                \
            ls_kr_t tr;                                                                            \
            ls_kr_init(&tr, w1.buf.data, cut);                                                     \
            trunc_ok = ls_kafka_##T##_decode(&tr, v, a, &d) != 0;                                  \
        }                                                                                          \
        ls_kw_free(&w1);                                                                           \
        ls_kw_free(&w2);                                                                           \
        ls_arena_free(a);                                                                          \
        if (!same) printf("  %s v%d does not round-trip\n", #T, v);                                \
        CHECK(same);                                                                               \
        if (!trunc_ok) printf("  %s v%d decodes a truncated message\n", #T, v);                    \
        CHECK(trunc_ok);                                                                           \
    }

TEST(find_coordinator)
{
    ls_kstr_t keys[] = {S("g1"), S("g2")};
    ls_kafka_FindCoordinatorRequest q = {S("g1"), 0, keys, 2};
    ROUNDTRIP(FindCoordinatorRequest, FIND_COORDINATOR, q);
    ls_kafka_FindCoordinatorResponse_Coordinator c[] = {
        {S("g1"), 0, S("h"), 9092, 0, ls_kstr_null()}};
    ls_kafka_FindCoordinatorResponse r = {0, 0, ls_kstr_null(), 0, S("h"), 9092, c, 1};
    ROUNDTRIP(FindCoordinatorResponse, FIND_COORDINATOR, r);
}

TEST(join_sync_heartbeat_leave)
{
    ls_kafka_JoinGroupRequest_Protocol p[] = {{S("range"), B}, {S("roundrobin"), B}};
    ls_kafka_JoinGroupRequest jq = {S("g"),        10000, 30000, S("m"),  S("i"),
                                    S("consumer"), p,     2,     S("why")};
    ROUNDTRIP(JoinGroupRequest, JOIN_GROUP, jq);
    ls_kafka_JoinGroupResponse_Member mem[] = {{S("m"), S("i"), B}};
    ls_kafka_JoinGroupResponse jr = {0,      0,     3,      S("consumer"), S("range"),
                                     S("m"), false, S("m"), mem,           1};
    ROUNDTRIP(JoinGroupResponse, JOIN_GROUP, jr);
    ls_kafka_SyncGroupRequest_Assignment as[] = {{S("m"), B}};
    ls_kafka_SyncGroupRequest sq = {S("g"), 3, S("m"), S("i"), S("consumer"), S("range"), as, 1};
    ROUNDTRIP(SyncGroupRequest, SYNC_GROUP, sq);
    ls_kafka_SyncGroupResponse sr = {0, 0, S("consumer"), S("range"), B};
    ROUNDTRIP(SyncGroupResponse, SYNC_GROUP, sr);
    ls_kafka_HeartbeatRequest hq = {S("g"), 3, S("m"), S("i")};
    ROUNDTRIP(HeartbeatRequest, HEARTBEAT, hq);
    ls_kafka_HeartbeatResponse hr = {0, 27};
    ROUNDTRIP(HeartbeatResponse, HEARTBEAT, hr);
    ls_kafka_LeaveGroupRequest_MemberIdentity mi[] = {{S("m"), S("i"), S("bye")}};
    ls_kafka_LeaveGroupRequest lq = {S("g"), S("m"), mi, 1};
    ROUNDTRIP(LeaveGroupRequest, LEAVE_GROUP, lq);
    ls_kafka_LeaveGroupResponse_MemberResponse mr[] = {{S("m"), S("i"), 25}};
    ls_kafka_LeaveGroupResponse lr = {0, 0, mr, 1};
    ROUNDTRIP(LeaveGroupResponse, LEAVE_GROUP, lr);
}

TEST(offsets)
{
    ls_kafka_OffsetCommitRequest_Partition cp[] = {{0, 42, 1, -1, S("meta")},
                                                   {1, 7, -1, -1, ls_kstr_null()}};
    ls_kafka_OffsetCommitRequest_Topic ct[] = {{S("t"), cp, 2}};
    ls_kafka_OffsetCommitRequest cq = {S("g"), 3, S("m"), S("i"), -1, ct, 1};
    ROUNDTRIP(OffsetCommitRequest, OFFSET_COMMIT, cq);
    ls_kafka_OffsetCommitResponse_Partition crp[] = {{0, 0}, {1, 22}};
    ls_kafka_OffsetCommitResponse_Topic crt[] = {{S("t"), crp, 2}};
    ls_kafka_OffsetCommitResponse cr = {0, crt, 1};
    ROUNDTRIP(OffsetCommitResponse, OFFSET_COMMIT, cr);
    int32_t parts[] = {0, 1};
    ls_kafka_OffsetFetchRequest_Topic ft[] = {{S("t"), parts, 2}};
    ls_kafka_OffsetFetchRequest_Group fg[] = {{S("g"), S("m"), 3, ft, 1},
                                              {S("h"), ls_kstr_null(), -1, NULL, -1}};
    ls_kafka_OffsetFetchRequest fq = {S("g"), ft, 1, fg, 2, true};
    ROUNDTRIP(OffsetFetchRequest, OFFSET_FETCH, fq);
    ls_kafka_OffsetFetchResponse_Partition fp[] = {{0, 42, 1, S("meta"), 0}};
    ls_kafka_OffsetFetchResponse_Topic frt[] = {{S("t"), fp, 1}};
    ls_kafka_OffsetFetchResponse_Group frg[] = {{S("g"), frt, 1, 0}};
    ls_kafka_OffsetFetchResponse fr = {0, frt, 1, 0, frg, 1};
    ROUNDTRIP(OffsetFetchResponse, OFFSET_FETCH, fr);
    ls_kafka_OffsetDeleteRequest_Topic dt[] = {{S("t"), parts, 2}};
    ls_kafka_OffsetDeleteRequest dq = {S("g"), dt, 1};
    ROUNDTRIP(OffsetDeleteRequest, OFFSET_DELETE, dq);
    ls_kafka_OffsetDeleteResponse_Partition dp[] = {{0, 0}, {1, 86}};
    ls_kafka_OffsetDeleteResponse_Topic drt[] = {{S("t"), dp, 2}};
    ls_kafka_OffsetDeleteResponse dr = {0, 0, drt, 1};
    ROUNDTRIP(OffsetDeleteResponse, OFFSET_DELETE, dr);
}

TEST(admin)
{
    ls_kstr_t states[] = {S("Stable")}, types[] = {S("classic")};
    ls_kafka_ListGroupsRequest lq = {states, 1, types, 1};
    ROUNDTRIP(ListGroupsRequest, LIST_GROUPS, lq);
    ls_kafka_ListGroupsResponse_Group lg[] = {{S("g"), S("consumer"), S("Stable"), S("classic")}};
    ls_kafka_ListGroupsResponse lr = {0, 0, lg, 1};
    ROUNDTRIP(ListGroupsResponse, LIST_GROUPS, lr);
    ls_kstr_t gs[] = {S("g"), S("h")};
    ls_kafka_DescribeGroupsRequest dq = {gs, 2, true};
    ROUNDTRIP(DescribeGroupsRequest, DESCRIBE_GROUPS, dq);
    ls_kafka_DescribeGroupsResponse_Member dm[] = {{S("m"), S("i"), S("c"), S("/h"), B, B}};
    ls_kafka_DescribeGroupsResponse_Group dg[] = {
        {0, S("msg"), S("g"), S("Stable"), S("consumer"), S("range"), dm, 1, 264}};
    ls_kafka_DescribeGroupsResponse dr = {0, dg, 1};
    ROUNDTRIP(DescribeGroupsResponse, DESCRIBE_GROUPS, dr);
    ls_kafka_DeleteGroupsRequest xq = {gs, 2};
    ROUNDTRIP(DeleteGroupsRequest, DELETE_GROUPS, xq);
    ls_kafka_DeleteGroupsResponse_Result xr_[] = {{S("g"), 0}, {S("h"), 69}};
    ls_kafka_DeleteGroupsResponse xr = {0, xr_, 2};
    ROUNDTRIP(DeleteGroupsResponse, DELETE_GROUPS, xr);
}

TEST(defaults_for_absent_fields)
{
    /* JoinGroup v0 carries no RebalanceTimeoutMs / GroupInstanceId / Reason */
    ls_kafka_JoinGroupRequest_Protocol p[] = {{S("range"), B}};
    ls_kafka_JoinGroupRequest jq = {S("g"),        10000, 30000, S("m"),  S("i"),
                                    S("consumer"), p,     1,     S("why")};
    ls_arena_t *a = ls_arena_new();
    ls_kw_t w;
    ls_kw_init(&w);
    ls_kafka_JoinGroupRequest_encode(&w, 0, &jq);
    ls_kr_t r;
    ls_kr_init(&r, w.buf.data, w.buf.len);
    ls_kafka_JoinGroupRequest d;
    CHECK(ls_kafka_JoinGroupRequest_decode(&r, 0, a, &d) == 0);
    CHECK_EQ_INT(d.RebalanceTimeoutMs, -1);
    CHECK(d.GroupInstanceId.len == -1 && d.Reason.len == -1);
    ls_kw_free(&w);
    /* OffsetCommit v0: no generation; v1 carries CommitTimestamp */
    ls_kafka_OffsetCommitRequest_Partition cp[] = {{0, 42, 5, 1234, S("x")}};
    ls_kafka_OffsetCommitRequest_Topic ct[] = {{S("t"), cp, 1}};
    ls_kafka_OffsetCommitRequest cq = {S("g"), 3, S("m"), ls_kstr_null(), 1000, ct, 1};
    ls_kafka_OffsetCommitRequest cd;
    ls_kw_init(&w);
    ls_kafka_OffsetCommitRequest_encode(&w, 0, &cq);
    ls_kr_init(&r, w.buf.data, w.buf.len);
    CHECK(ls_kafka_OffsetCommitRequest_decode(&r, 0, a, &cd) == 0);
    CHECK_EQ_INT(cd.GenerationIdOrMemberEpoch, -1);
    CHECK_EQ_INT(cd.Topics[0].Partitions[0].CommitTimestamp, -1);
    CHECK_EQ_INT(cd.Topics[0].Partitions[0].CommittedLeaderEpoch, -1);
    ls_kw_free(&w);
    ls_kw_init(&w);
    ls_kafka_OffsetCommitRequest_encode(&w, 1, &cq);
    ls_kr_init(&r, w.buf.data, w.buf.len);
    CHECK(ls_kafka_OffsetCommitRequest_decode(&r, 1, a, &cd) == 0);
    CHECK_EQ_INT(cd.Topics[0].Partitions[0].CommitTimestamp, 1234);
    ls_kw_free(&w);
    ls_arena_free(a);
}

int main(void)
{
    RUN(find_coordinator);
    RUN(join_sync_heartbeat_leave);
    RUN(offsets);
    RUN(admin);
    RUN(defaults_for_absent_fields);
    UNIT_DONE();
}
