/* Consumer-group message codecs (msg_group.h), both directions.
 *
 * Version notes (from the message JSON specs):
 *  FindCoordinator 0-6, flexible 3+: v1 KeyType, v4 batched CoordinatorKeys /
 *    Coordinators (replacing the single-key fields), v5/v6 no layout change.
 *  JoinGroup 0-9, flexible 6+: v1 RebalanceTimeoutMs, v2 ThrottleTimeMs, v4
 *    MEMBER_ID_REQUIRED, v5 GroupInstanceId, v7 ProtocolType in the response
 *    and nullable ProtocolName, v8 Reason, v9 SkipAssignment.
 *  SyncGroup 0-5, flexible 4+: v1 throttle, v3 GroupInstanceId, v5
 *    ProtocolType/ProtocolName both ways.
 *  Heartbeat 0-4, flexible 4+: v1 throttle, v3 GroupInstanceId.
 *  LeaveGroup 0-5, flexible 4+: v3 batched Members, v5 Reason.
 *  OffsetCommit 0-9, flexible 8+: v1 generation/member and per-partition
 *    CommitTimestamp (v1 only), v2-4 RetentionTimeMs, v3 throttle, v6 leader
 *    epoch, v7 GroupInstanceId.
 *  OffsetFetch 0-9, flexible 6+: v2 null topics = all + top-level ErrorCode,
 *    v3 throttle, v5 leader epoch, v7 RequireStable, v8 multiple Groups, v9
 *    MemberId/MemberEpoch.
 *  ListGroups 0-5, flexible 3+: v4 StatesFilter/GroupState, v5 TypesFilter/GroupType.
 *  DescribeGroups 0-6, flexible 5+: v3 authorized operations, v4
 *    GroupInstanceId, v6 ErrorMessage.
 *  DeleteGroups 0-2, flexible 2+.  OffsetDelete 0 (never flexible). */
#include "kafka/msg_group.h"

static ls_kbytes_t rbytes(ls_kr_t *r, bool f, const char *what)
{
    ls_kbytes_t b = ls_kr_bytes(r, f);
    if (b.len < 0 && !r->err) {
        ls_kr_fail(r, what);
        b.ptr = (const uint8_t *)"";
        b.len = 0;
    }
    return b;
}

static void wbytes(ls_kw_t *w, bool f, ls_kbytes_t b)
{
    if (b.len < 0)
        ls_kw_bytes(w, f, "", 0);
    else
        ls_kw_bytes(w, f, b.ptr, b.len);
}

#define FLEX(v, api) ((v) >= LS_KAFKA_##api##_FLEX)
#define CHECKV(api)                                                                            \
    if (!ls_kmsg_version_ok(r, v, LS_KAFKA_##api##_MIN, LS_KAFKA_##api##_MAX))                 \
        return -1;                                                                             \
    bool f = FLEX(v, api)

/* --------------------------------------------------------- FindCoordinator */

int ls_kafka_FindCoordinatorRequest_decode(ls_kr_t *r, int16_t v, ls_arena_t *a,
                                           ls_kafka_FindCoordinatorRequest *m)
{
    memset(m, 0, sizeof *m);
    m->Key = ls_kstr_null();
    CHECKV(FIND_COORDINATOR);
    if (v <= 3)
        m->Key = ls_kmsg_str(r, f, "Key");
    if (v >= 1)
        m->KeyType = ls_kr_i8(r);
    if (v >= 4)
        m->CoordinatorKeys =
            ls_kmsg_strs(r, f, a, false, &m->NumCoordinatorKeys, "CoordinatorKeys");
    ls_kr_tags(r, f);
    return r->err ? -1 : 0;
}

void ls_kafka_FindCoordinatorRequest_encode(ls_kw_t *w, int16_t v,
                                            const ls_kafka_FindCoordinatorRequest *m)
{
    bool f = FLEX(v, FIND_COORDINATOR);
    if (v <= 3)
        ls_kmsg_wstr_nn(w, f, m->Key);
    if (v >= 1)
        ls_kw_i8(w, m->KeyType);
    if (v >= 4)
        ls_kmsg_wstrs(w, f, m->CoordinatorKeys, m->NumCoordinatorKeys);
    ls_kw_tags(w, f);
}

int ls_kafka_FindCoordinatorResponse_decode(ls_kr_t *r, int16_t v, ls_arena_t *a,
                                            ls_kafka_FindCoordinatorResponse *m)
{
    memset(m, 0, sizeof *m);
    m->ErrorMessage = ls_kstr_null();
    CHECKV(FIND_COORDINATOR);
    if (v >= 1)
        m->ThrottleTimeMs = ls_kr_i32(r);
    if (v <= 3) {
        m->ErrorCode = ls_kr_i16(r);
        if (v >= 1)
            m->ErrorMessage = ls_kr_str(r, f);
        m->NodeId = ls_kr_i32(r);
        m->Host = ls_kmsg_str(r, f, "Host");
        m->Port = ls_kr_i32(r);
    } else {
        m->NumCoordinators = ls_kmsg_arrlen(r, f, 1 + 4 + 1 + 4 + 2 + 1, false, "Coordinators");
        m->Coordinators = ls_kmsg_alloc(a, m->NumCoordinators, sizeof *m->Coordinators);
        for (int32_t i = 0; i < m->NumCoordinators && !r->err; i++) {
            ls_kafka_FindCoordinatorResponse_Coordinator *c = &m->Coordinators[i];
            c->Key = ls_kmsg_str(r, f, "Coordinators.Key");
            c->NodeId = ls_kr_i32(r);
            c->Host = ls_kmsg_str(r, f, "Coordinators.Host");
            c->Port = ls_kr_i32(r);
            c->ErrorCode = ls_kr_i16(r);
            c->ErrorMessage = ls_kr_str(r, f);
            ls_kr_tags(r, f);
        }
    }
    ls_kr_tags(r, f);
    return r->err ? -1 : 0;
}

void ls_kafka_FindCoordinatorResponse_encode(ls_kw_t *w, int16_t v,
                                             const ls_kafka_FindCoordinatorResponse *m)
{
    bool f = FLEX(v, FIND_COORDINATOR);
    if (v >= 1)
        ls_kw_i32(w, m->ThrottleTimeMs);
    if (v <= 3) {
        ls_kw_i16(w, m->ErrorCode);
        if (v >= 1)
            ls_kmsg_wstr(w, f, m->ErrorMessage);
        ls_kw_i32(w, m->NodeId);
        ls_kmsg_wstr_nn(w, f, m->Host);
        ls_kw_i32(w, m->Port);
    } else {
        ls_kw_arrlen(w, f, m->NumCoordinators);
        for (int32_t i = 0; i < m->NumCoordinators; i++) {
            const ls_kafka_FindCoordinatorResponse_Coordinator *c = &m->Coordinators[i];
            ls_kmsg_wstr_nn(w, f, c->Key);
            ls_kw_i32(w, c->NodeId);
            ls_kmsg_wstr_nn(w, f, c->Host);
            ls_kw_i32(w, c->Port);
            ls_kw_i16(w, c->ErrorCode);
            ls_kmsg_wstr(w, f, c->ErrorMessage);
            ls_kw_tags(w, f);
        }
    }
    ls_kw_tags(w, f);
}

/* --------------------------------------------------------------- JoinGroup */

int ls_kafka_JoinGroupRequest_decode(ls_kr_t *r, int16_t v, ls_arena_t *a,
                                     ls_kafka_JoinGroupRequest *m)
{
    memset(m, 0, sizeof *m);
    m->RebalanceTimeoutMs = -1;
    m->GroupInstanceId = ls_kstr_null();
    m->Reason = ls_kstr_null();
    CHECKV(JOIN_GROUP);
    m->GroupId = ls_kmsg_str(r, f, "GroupId");
    m->SessionTimeoutMs = ls_kr_i32(r);
    if (v >= 1)
        m->RebalanceTimeoutMs = ls_kr_i32(r);
    m->MemberId = ls_kmsg_str(r, f, "MemberId");
    if (v >= 5)
        m->GroupInstanceId = ls_kr_str(r, f);
    m->ProtocolType = ls_kmsg_str(r, f, "ProtocolType");
    m->NumProtocols = ls_kmsg_arrlen(r, f, 2, false, "Protocols");
    m->Protocols = ls_kmsg_alloc(a, m->NumProtocols, sizeof *m->Protocols);
    for (int32_t i = 0; i < m->NumProtocols && !r->err; i++) {
        m->Protocols[i].Name = ls_kmsg_str(r, f, "Protocols.Name");
        m->Protocols[i].Metadata = rbytes(r, f, "Protocols.Metadata");
        ls_kr_tags(r, f);
    }
    if (v >= 8)
        m->Reason = ls_kr_str(r, f);
    ls_kr_tags(r, f);
    return r->err ? -1 : 0;
}

void ls_kafka_JoinGroupRequest_encode(ls_kw_t *w, int16_t v, const ls_kafka_JoinGroupRequest *m)
{
    bool f = FLEX(v, JOIN_GROUP);
    ls_kmsg_wstr_nn(w, f, m->GroupId);
    ls_kw_i32(w, m->SessionTimeoutMs);
    if (v >= 1)
        ls_kw_i32(w, m->RebalanceTimeoutMs);
    ls_kmsg_wstr_nn(w, f, m->MemberId);
    if (v >= 5)
        ls_kmsg_wstr(w, f, m->GroupInstanceId);
    ls_kmsg_wstr_nn(w, f, m->ProtocolType);
    ls_kw_arrlen(w, f, m->NumProtocols);
    for (int32_t i = 0; i < m->NumProtocols; i++) {
        ls_kmsg_wstr_nn(w, f, m->Protocols[i].Name);
        wbytes(w, f, m->Protocols[i].Metadata);
        ls_kw_tags(w, f);
    }
    if (v >= 8)
        ls_kmsg_wstr(w, f, m->Reason);
    ls_kw_tags(w, f);
}

int ls_kafka_JoinGroupResponse_decode(ls_kr_t *r, int16_t v, ls_arena_t *a,
                                      ls_kafka_JoinGroupResponse *m)
{
    memset(m, 0, sizeof *m);
    m->GenerationId = -1;
    m->ProtocolType = ls_kstr_null();
    CHECKV(JOIN_GROUP);
    if (v >= 2)
        m->ThrottleTimeMs = ls_kr_i32(r);
    m->ErrorCode = ls_kr_i16(r);
    m->GenerationId = ls_kr_i32(r);
    if (v >= 7)
        m->ProtocolType = ls_kr_str(r, f);
    m->ProtocolName = v >= 7 ? ls_kr_str(r, f) : ls_kmsg_str(r, f, "ProtocolName");
    m->Leader = ls_kmsg_str(r, f, "Leader");
    if (v >= 9)
        m->SkipAssignment = ls_kr_bool(r);
    m->MemberId = ls_kmsg_str(r, f, "MemberId");
    m->NumMembers = ls_kmsg_arrlen(r, f, 2, false, "Members");
    m->Members = ls_kmsg_alloc(a, m->NumMembers, sizeof *m->Members);
    for (int32_t i = 0; i < m->NumMembers && !r->err; i++) {
        ls_kafka_JoinGroupResponse_Member *mb = &m->Members[i];
        mb->MemberId = ls_kmsg_str(r, f, "Members.MemberId");
        mb->GroupInstanceId = v >= 5 ? ls_kr_str(r, f) : ls_kstr_null();
        mb->Metadata = rbytes(r, f, "Members.Metadata");
        ls_kr_tags(r, f);
    }
    ls_kr_tags(r, f);
    return r->err ? -1 : 0;
}

void ls_kafka_JoinGroupResponse_encode(ls_kw_t *w, int16_t v, const ls_kafka_JoinGroupResponse *m)
{
    bool f = FLEX(v, JOIN_GROUP);
    if (v >= 2)
        ls_kw_i32(w, m->ThrottleTimeMs);
    ls_kw_i16(w, m->ErrorCode);
    ls_kw_i32(w, m->GenerationId);
    if (v >= 7) {
        ls_kmsg_wstr(w, f, m->ProtocolType);
        ls_kmsg_wstr(w, f, m->ProtocolName);
    } else {
        ls_kmsg_wstr_nn(w, f, m->ProtocolName);
    }
    ls_kmsg_wstr_nn(w, f, m->Leader);
    if (v >= 9)
        ls_kw_bool(w, m->SkipAssignment);
    ls_kmsg_wstr_nn(w, f, m->MemberId);
    ls_kw_arrlen(w, f, m->NumMembers);
    for (int32_t i = 0; i < m->NumMembers; i++) {
        const ls_kafka_JoinGroupResponse_Member *mb = &m->Members[i];
        ls_kmsg_wstr_nn(w, f, mb->MemberId);
        if (v >= 5)
            ls_kmsg_wstr(w, f, mb->GroupInstanceId);
        wbytes(w, f, mb->Metadata);
        ls_kw_tags(w, f);
    }
    ls_kw_tags(w, f);
}

/* --------------------------------------------------------------- Heartbeat */

int ls_kafka_HeartbeatRequest_decode(ls_kr_t *r, int16_t v, ls_arena_t *a,
                                     ls_kafka_HeartbeatRequest *m)
{
    memset(m, 0, sizeof *m);
    m->GroupInstanceId = ls_kstr_null();
    CHECKV(HEARTBEAT);
    m->GroupId = ls_kmsg_str(r, f, "GroupId");
    m->GenerationId = ls_kr_i32(r);
    m->MemberId = ls_kmsg_str(r, f, "MemberId");
    if (v >= 3)
        m->GroupInstanceId = ls_kr_str(r, f);
    ls_kr_tags(r, f);
    return r->err ? -1 : 0;
}

void ls_kafka_HeartbeatRequest_encode(ls_kw_t *w, int16_t v, const ls_kafka_HeartbeatRequest *m)
{
    bool f = FLEX(v, HEARTBEAT);
    ls_kmsg_wstr_nn(w, f, m->GroupId);
    ls_kw_i32(w, m->GenerationId);
    ls_kmsg_wstr_nn(w, f, m->MemberId);
    if (v >= 3)
        ls_kmsg_wstr(w, f, m->GroupInstanceId);
    ls_kw_tags(w, f);
}

int ls_kafka_HeartbeatResponse_decode(ls_kr_t *r, int16_t v, ls_arena_t *a,
                                      ls_kafka_HeartbeatResponse *m)
{
    memset(m, 0, sizeof *m);
    CHECKV(HEARTBEAT);
    if (v >= 1)
        m->ThrottleTimeMs = ls_kr_i32(r);
    m->ErrorCode = ls_kr_i16(r);
    ls_kr_tags(r, f);
    return r->err ? -1 : 0;
}

void ls_kafka_HeartbeatResponse_encode(ls_kw_t *w, int16_t v, const ls_kafka_HeartbeatResponse *m)
{
    bool f = FLEX(v, HEARTBEAT);
    if (v >= 1)
        ls_kw_i32(w, m->ThrottleTimeMs);
    ls_kw_i16(w, m->ErrorCode);
    ls_kw_tags(w, f);
}

/* -------------------------------------------------------------- LeaveGroup */

int ls_kafka_LeaveGroupRequest_decode(ls_kr_t *r, int16_t v, ls_arena_t *a,
                                      ls_kafka_LeaveGroupRequest *m)
{
    memset(m, 0, sizeof *m);
    m->MemberId = ls_kstr_null();
    CHECKV(LEAVE_GROUP);
    m->GroupId = ls_kmsg_str(r, f, "GroupId");
    if (v <= 2) {
        m->MemberId = ls_kmsg_str(r, f, "MemberId");
    } else {
        m->NumMembers = ls_kmsg_arrlen(r, f, 2, false, "Members");
        m->Members = ls_kmsg_alloc(a, m->NumMembers, sizeof *m->Members);
        for (int32_t i = 0; i < m->NumMembers && !r->err; i++) {
            ls_kafka_LeaveGroupRequest_MemberIdentity *mi = &m->Members[i];
            mi->MemberId = ls_kmsg_str(r, f, "Members.MemberId");
            mi->GroupInstanceId = ls_kr_str(r, f);
            mi->Reason = v >= 5 ? ls_kr_str(r, f) : ls_kstr_null();
            ls_kr_tags(r, f);
        }
    }
    ls_kr_tags(r, f);
    return r->err ? -1 : 0;
}

void ls_kafka_LeaveGroupRequest_encode(ls_kw_t *w, int16_t v, const ls_kafka_LeaveGroupRequest *m)
{
    bool f = FLEX(v, LEAVE_GROUP);
    ls_kmsg_wstr_nn(w, f, m->GroupId);
    if (v <= 2) {
        ls_kmsg_wstr_nn(w, f, m->MemberId);
    } else {
        ls_kw_arrlen(w, f, m->NumMembers);
        for (int32_t i = 0; i < m->NumMembers; i++) {
            ls_kmsg_wstr_nn(w, f, m->Members[i].MemberId);
            ls_kmsg_wstr(w, f, m->Members[i].GroupInstanceId);
            if (v >= 5)
                ls_kmsg_wstr(w, f, m->Members[i].Reason);
            ls_kw_tags(w, f);
        }
    }
    ls_kw_tags(w, f);
}

int ls_kafka_LeaveGroupResponse_decode(ls_kr_t *r, int16_t v, ls_arena_t *a,
                                       ls_kafka_LeaveGroupResponse *m)
{
    memset(m, 0, sizeof *m);
    CHECKV(LEAVE_GROUP);
    if (v >= 1)
        m->ThrottleTimeMs = ls_kr_i32(r);
    m->ErrorCode = ls_kr_i16(r);
    if (v >= 3) {
        m->NumMembers = ls_kmsg_arrlen(r, f, 2 + 1 + 2, false, "Members");
        m->Members = ls_kmsg_alloc(a, m->NumMembers, sizeof *m->Members);
        for (int32_t i = 0; i < m->NumMembers && !r->err; i++) {
            m->Members[i].MemberId = ls_kmsg_str(r, f, "Members.MemberId");
            m->Members[i].GroupInstanceId = ls_kr_str(r, f);
            m->Members[i].ErrorCode = ls_kr_i16(r);
            ls_kr_tags(r, f);
        }
    }
    ls_kr_tags(r, f);
    return r->err ? -1 : 0;
}

void ls_kafka_LeaveGroupResponse_encode(ls_kw_t *w, int16_t v,
                                        const ls_kafka_LeaveGroupResponse *m)
{
    bool f = FLEX(v, LEAVE_GROUP);
    if (v >= 1)
        ls_kw_i32(w, m->ThrottleTimeMs);
    ls_kw_i16(w, m->ErrorCode);
    if (v >= 3) {
        ls_kw_arrlen(w, f, m->NumMembers);
        for (int32_t i = 0; i < m->NumMembers; i++) {
            ls_kmsg_wstr_nn(w, f, m->Members[i].MemberId);
            ls_kmsg_wstr(w, f, m->Members[i].GroupInstanceId);
            ls_kw_i16(w, m->Members[i].ErrorCode);
            ls_kw_tags(w, f);
        }
    }
    ls_kw_tags(w, f);
}

/* --------------------------------------------------------------- SyncGroup */

int ls_kafka_SyncGroupRequest_decode(ls_kr_t *r, int16_t v, ls_arena_t *a,
                                     ls_kafka_SyncGroupRequest *m)
{
    memset(m, 0, sizeof *m);
    m->GroupInstanceId = ls_kstr_null();
    m->ProtocolType = ls_kstr_null();
    m->ProtocolName = ls_kstr_null();
    CHECKV(SYNC_GROUP);
    m->GroupId = ls_kmsg_str(r, f, "GroupId");
    m->GenerationId = ls_kr_i32(r);
    m->MemberId = ls_kmsg_str(r, f, "MemberId");
    if (v >= 3)
        m->GroupInstanceId = ls_kr_str(r, f);
    if (v >= 5) {
        m->ProtocolType = ls_kr_str(r, f);
        m->ProtocolName = ls_kr_str(r, f);
    }
    m->NumAssignments = ls_kmsg_arrlen(r, f, 2, false, "Assignments");
    m->Assignments = ls_kmsg_alloc(a, m->NumAssignments, sizeof *m->Assignments);
    for (int32_t i = 0; i < m->NumAssignments && !r->err; i++) {
        m->Assignments[i].MemberId = ls_kmsg_str(r, f, "Assignments.MemberId");
        m->Assignments[i].Assignment = rbytes(r, f, "Assignments.Assignment");
        ls_kr_tags(r, f);
    }
    ls_kr_tags(r, f);
    return r->err ? -1 : 0;
}

void ls_kafka_SyncGroupRequest_encode(ls_kw_t *w, int16_t v, const ls_kafka_SyncGroupRequest *m)
{
    bool f = FLEX(v, SYNC_GROUP);
    ls_kmsg_wstr_nn(w, f, m->GroupId);
    ls_kw_i32(w, m->GenerationId);
    ls_kmsg_wstr_nn(w, f, m->MemberId);
    if (v >= 3)
        ls_kmsg_wstr(w, f, m->GroupInstanceId);
    if (v >= 5) {
        ls_kmsg_wstr(w, f, m->ProtocolType);
        ls_kmsg_wstr(w, f, m->ProtocolName);
    }
    ls_kw_arrlen(w, f, m->NumAssignments);
    for (int32_t i = 0; i < m->NumAssignments; i++) {
        ls_kmsg_wstr_nn(w, f, m->Assignments[i].MemberId);
        wbytes(w, f, m->Assignments[i].Assignment);
        ls_kw_tags(w, f);
    }
    ls_kw_tags(w, f);
}

int ls_kafka_SyncGroupResponse_decode(ls_kr_t *r, int16_t v, ls_arena_t *a,
                                      ls_kafka_SyncGroupResponse *m)
{
    memset(m, 0, sizeof *m);
    m->ProtocolType = ls_kstr_null();
    m->ProtocolName = ls_kstr_null();
    CHECKV(SYNC_GROUP);
    if (v >= 1)
        m->ThrottleTimeMs = ls_kr_i32(r);
    m->ErrorCode = ls_kr_i16(r);
    if (v >= 5) {
        m->ProtocolType = ls_kr_str(r, f);
        m->ProtocolName = ls_kr_str(r, f);
    }
    m->Assignment = rbytes(r, f, "Assignment");
    ls_kr_tags(r, f);
    return r->err ? -1 : 0;
}

void ls_kafka_SyncGroupResponse_encode(ls_kw_t *w, int16_t v, const ls_kafka_SyncGroupResponse *m)
{
    bool f = FLEX(v, SYNC_GROUP);
    if (v >= 1)
        ls_kw_i32(w, m->ThrottleTimeMs);
    ls_kw_i16(w, m->ErrorCode);
    if (v >= 5) {
        ls_kmsg_wstr(w, f, m->ProtocolType);
        ls_kmsg_wstr(w, f, m->ProtocolName);
    }
    wbytes(w, f, m->Assignment);
    ls_kw_tags(w, f);
}

/* ------------------------------------------------------------ OffsetCommit */

int ls_kafka_OffsetCommitRequest_decode(ls_kr_t *r, int16_t v, ls_arena_t *a,
                                        ls_kafka_OffsetCommitRequest *m)
{
    memset(m, 0, sizeof *m);
    m->GenerationIdOrMemberEpoch = -1;
    m->MemberId = ls_kstr_c("");
    m->GroupInstanceId = ls_kstr_null();
    m->RetentionTimeMs = -1;
    CHECKV(OFFSET_COMMIT);
    m->GroupId = ls_kmsg_str(r, f, "GroupId");
    if (v >= 1) {
        m->GenerationIdOrMemberEpoch = ls_kr_i32(r);
        m->MemberId = ls_kmsg_str(r, f, "MemberId");
    }
    if (v >= 7)
        m->GroupInstanceId = ls_kr_str(r, f);
    if (v >= 2 && v <= 4)
        m->RetentionTimeMs = ls_kr_i64(r);
    m->NumTopics = ls_kmsg_arrlen(r, f, 2, false, "Topics");
    m->Topics = ls_kmsg_alloc(a, m->NumTopics, sizeof *m->Topics);
    for (int32_t i = 0; i < m->NumTopics && !r->err; i++) {
        ls_kafka_OffsetCommitRequest_Topic *t = &m->Topics[i];
        t->Name = ls_kmsg_str(r, f, "Topics.Name");
        t->NumPartitions = ls_kmsg_arrlen(r, f, 4 + 8 + 1, false, "Topics.Partitions");
        t->Partitions = ls_kmsg_alloc(a, t->NumPartitions, sizeof *t->Partitions);
        for (int32_t j = 0; j < t->NumPartitions && !r->err; j++) {
            ls_kafka_OffsetCommitRequest_Partition *p = &t->Partitions[j];
            p->PartitionIndex = ls_kr_i32(r);
            p->CommittedOffset = ls_kr_i64(r);
            p->CommittedLeaderEpoch = v >= 6 ? ls_kr_i32(r) : -1;
            p->CommitTimestamp = v == 1 ? ls_kr_i64(r) : -1;
            p->CommittedMetadata = ls_kr_str(r, f);
            ls_kr_tags(r, f);
        }
        ls_kr_tags(r, f);
    }
    ls_kr_tags(r, f);
    return r->err ? -1 : 0;
}

void ls_kafka_OffsetCommitRequest_encode(ls_kw_t *w, int16_t v,
                                         const ls_kafka_OffsetCommitRequest *m)
{
    bool f = FLEX(v, OFFSET_COMMIT);
    ls_kmsg_wstr_nn(w, f, m->GroupId);
    if (v >= 1) {
        ls_kw_i32(w, m->GenerationIdOrMemberEpoch);
        ls_kmsg_wstr_nn(w, f, m->MemberId);
    }
    if (v >= 7)
        ls_kmsg_wstr(w, f, m->GroupInstanceId);
    if (v >= 2 && v <= 4)
        ls_kw_i64(w, m->RetentionTimeMs);
    ls_kw_arrlen(w, f, m->NumTopics);
    for (int32_t i = 0; i < m->NumTopics; i++) {
        const ls_kafka_OffsetCommitRequest_Topic *t = &m->Topics[i];
        ls_kmsg_wstr_nn(w, f, t->Name);
        ls_kw_arrlen(w, f, t->NumPartitions);
        for (int32_t j = 0; j < t->NumPartitions; j++) {
            const ls_kafka_OffsetCommitRequest_Partition *p = &t->Partitions[j];
            ls_kw_i32(w, p->PartitionIndex);
            ls_kw_i64(w, p->CommittedOffset);
            if (v >= 6)
                ls_kw_i32(w, p->CommittedLeaderEpoch);
            if (v == 1)
                ls_kw_i64(w, p->CommitTimestamp);
            ls_kmsg_wstr(w, f, p->CommittedMetadata);
            ls_kw_tags(w, f);
        }
        ls_kw_tags(w, f);
    }
    ls_kw_tags(w, f);
}

int ls_kafka_OffsetCommitResponse_decode(ls_kr_t *r, int16_t v, ls_arena_t *a,
                                         ls_kafka_OffsetCommitResponse *m)
{
    memset(m, 0, sizeof *m);
    CHECKV(OFFSET_COMMIT);
    if (v >= 3)
        m->ThrottleTimeMs = ls_kr_i32(r);
    m->NumTopics = ls_kmsg_arrlen(r, f, 2, false, "Topics");
    m->Topics = ls_kmsg_alloc(a, m->NumTopics, sizeof *m->Topics);
    for (int32_t i = 0; i < m->NumTopics && !r->err; i++) {
        ls_kafka_OffsetCommitResponse_Topic *t = &m->Topics[i];
        t->Name = ls_kmsg_str(r, f, "Topics.Name");
        t->NumPartitions = ls_kmsg_arrlen(r, f, 6, false, "Topics.Partitions");
        t->Partitions = ls_kmsg_alloc(a, t->NumPartitions, sizeof *t->Partitions);
        for (int32_t j = 0; j < t->NumPartitions && !r->err; j++) {
            t->Partitions[j].PartitionIndex = ls_kr_i32(r);
            t->Partitions[j].ErrorCode = ls_kr_i16(r);
            ls_kr_tags(r, f);
        }
        ls_kr_tags(r, f);
    }
    ls_kr_tags(r, f);
    return r->err ? -1 : 0;
}

void ls_kafka_OffsetCommitResponse_encode(ls_kw_t *w, int16_t v,
                                          const ls_kafka_OffsetCommitResponse *m)
{
    bool f = FLEX(v, OFFSET_COMMIT);
    if (v >= 3)
        ls_kw_i32(w, m->ThrottleTimeMs);
    ls_kw_arrlen(w, f, m->NumTopics);
    for (int32_t i = 0; i < m->NumTopics; i++) {
        const ls_kafka_OffsetCommitResponse_Topic *t = &m->Topics[i];
        ls_kmsg_wstr_nn(w, f, t->Name);
        ls_kw_arrlen(w, f, t->NumPartitions);
        for (int32_t j = 0; j < t->NumPartitions; j++) {
            ls_kw_i32(w, t->Partitions[j].PartitionIndex);
            ls_kw_i16(w, t->Partitions[j].ErrorCode);
            ls_kw_tags(w, f);
        }
        ls_kw_tags(w, f);
    }
    ls_kw_tags(w, f);
}

/* ------------------------------------------------------------- OffsetFetch */

static ls_kafka_OffsetFetchRequest_Topic *of_req_topics(ls_kr_t *r, bool f, ls_arena_t *a,
                                                        bool nullable, int32_t *n)
{
    *n = ls_kmsg_arrlen(r, f, 2, nullable, "Topics");
    ls_kafka_OffsetFetchRequest_Topic *t = ls_kmsg_alloc(a, *n, sizeof *t);
    for (int32_t i = 0; i < *n && !r->err; i++) {
        t[i].Name = ls_kmsg_str(r, f, "Topics.Name");
        t[i].PartitionIndexes =
            ls_kmsg_i32s(r, f, a, false, &t[i].NumPartitionIndexes, "PartitionIndexes");
        ls_kr_tags(r, f);
    }
    return t;
}

static void of_req_wtopics(ls_kw_t *w, bool f, const ls_kafka_OffsetFetchRequest_Topic *t,
                           int32_t n)
{
    ls_kw_arrlen(w, f, n);
    for (int32_t i = 0; i < n; i++) {
        ls_kmsg_wstr_nn(w, f, t[i].Name);
        ls_kmsg_wi32s(w, f, t[i].PartitionIndexes, t[i].NumPartitionIndexes);
        ls_kw_tags(w, f);
    }
}

int ls_kafka_OffsetFetchRequest_decode(ls_kr_t *r, int16_t v, ls_arena_t *a,
                                       ls_kafka_OffsetFetchRequest *m)
{
    memset(m, 0, sizeof *m);
    m->GroupId = ls_kstr_null();
    CHECKV(OFFSET_FETCH);
    if (v <= 7) {
        m->GroupId = ls_kmsg_str(r, f, "GroupId");
        m->Topics = of_req_topics(r, f, a, v >= 2, &m->NumTopics);
    } else {
        m->NumGroups = ls_kmsg_arrlen(r, f, 2, false, "Groups");
        m->Groups = ls_kmsg_alloc(a, m->NumGroups, sizeof *m->Groups);
        for (int32_t i = 0; i < m->NumGroups && !r->err; i++) {
            ls_kafka_OffsetFetchRequest_Group *g = &m->Groups[i];
            g->GroupId = ls_kmsg_str(r, f, "Groups.GroupId");
            g->MemberId = ls_kstr_null();
            g->MemberEpoch = -1;
            if (v >= 9) {
                g->MemberId = ls_kr_str(r, f);
                g->MemberEpoch = ls_kr_i32(r);
            }
            g->Topics = of_req_topics(r, f, a, true, &g->NumTopics);
            ls_kr_tags(r, f);
        }
    }
    if (v >= 7)
        m->RequireStable = ls_kr_bool(r);
    ls_kr_tags(r, f);
    return r->err ? -1 : 0;
}

void ls_kafka_OffsetFetchRequest_encode(ls_kw_t *w, int16_t v,
                                        const ls_kafka_OffsetFetchRequest *m)
{
    bool f = FLEX(v, OFFSET_FETCH);
    if (v <= 7) {
        ls_kmsg_wstr_nn(w, f, m->GroupId);
        of_req_wtopics(w, f, m->Topics, m->NumTopics);
    } else {
        ls_kw_arrlen(w, f, m->NumGroups);
        for (int32_t i = 0; i < m->NumGroups; i++) {
            const ls_kafka_OffsetFetchRequest_Group *g = &m->Groups[i];
            ls_kmsg_wstr_nn(w, f, g->GroupId);
            if (v >= 9) {
                ls_kmsg_wstr(w, f, g->MemberId);
                ls_kw_i32(w, g->MemberEpoch);
            }
            of_req_wtopics(w, f, g->Topics, g->NumTopics);
            ls_kw_tags(w, f);
        }
    }
    if (v >= 7)
        ls_kw_bool(w, m->RequireStable);
    ls_kw_tags(w, f);
}

static ls_kafka_OffsetFetchResponse_Topic *of_resp_topics(ls_kr_t *r, int16_t v, bool f,
                                                          ls_arena_t *a, int32_t *n)
{
    *n = ls_kmsg_arrlen(r, f, 2, false, "Topics");
    ls_kafka_OffsetFetchResponse_Topic *t = ls_kmsg_alloc(a, *n, sizeof *t);
    for (int32_t i = 0; i < *n && !r->err; i++) {
        t[i].Name = ls_kmsg_str(r, f, "Topics.Name");
        t[i].NumPartitions = ls_kmsg_arrlen(r, f, 4 + 8 + 1 + 2, false, "Partitions");
        t[i].Partitions = ls_kmsg_alloc(a, t[i].NumPartitions, sizeof *t[i].Partitions);
        for (int32_t j = 0; j < t[i].NumPartitions && !r->err; j++) {
            ls_kafka_OffsetFetchResponse_Partition *p = &t[i].Partitions[j];
            p->PartitionIndex = ls_kr_i32(r);
            p->CommittedOffset = ls_kr_i64(r);
            p->CommittedLeaderEpoch = v >= 5 ? ls_kr_i32(r) : -1;
            p->Metadata = ls_kr_str(r, f);
            p->ErrorCode = ls_kr_i16(r);
            ls_kr_tags(r, f);
        }
        ls_kr_tags(r, f);
    }
    return t;
}

static void of_resp_wtopics(ls_kw_t *w, int16_t v, bool f,
                            const ls_kafka_OffsetFetchResponse_Topic *t, int32_t n)
{
    ls_kw_arrlen(w, f, n);
    for (int32_t i = 0; i < n; i++) {
        ls_kmsg_wstr_nn(w, f, t[i].Name);
        ls_kw_arrlen(w, f, t[i].NumPartitions);
        for (int32_t j = 0; j < t[i].NumPartitions; j++) {
            const ls_kafka_OffsetFetchResponse_Partition *p = &t[i].Partitions[j];
            ls_kw_i32(w, p->PartitionIndex);
            ls_kw_i64(w, p->CommittedOffset);
            if (v >= 5)
                ls_kw_i32(w, p->CommittedLeaderEpoch);
            ls_kmsg_wstr(w, f, p->Metadata);
            ls_kw_i16(w, p->ErrorCode);
            ls_kw_tags(w, f);
        }
        ls_kw_tags(w, f);
    }
}

int ls_kafka_OffsetFetchResponse_decode(ls_kr_t *r, int16_t v, ls_arena_t *a,
                                        ls_kafka_OffsetFetchResponse *m)
{
    memset(m, 0, sizeof *m);
    CHECKV(OFFSET_FETCH);
    if (v >= 3)
        m->ThrottleTimeMs = ls_kr_i32(r);
    if (v <= 7) {
        m->Topics = of_resp_topics(r, v, f, a, &m->NumTopics);
        if (v >= 2)
            m->ErrorCode = ls_kr_i16(r);
    } else {
        m->NumGroups = ls_kmsg_arrlen(r, f, 2 + 1 + 2, false, "Groups");
        m->Groups = ls_kmsg_alloc(a, m->NumGroups, sizeof *m->Groups);
        for (int32_t i = 0; i < m->NumGroups && !r->err; i++) {
            ls_kafka_OffsetFetchResponse_Group *g = &m->Groups[i];
            g->GroupId = ls_kmsg_str(r, f, "Groups.GroupId");
            g->Topics = of_resp_topics(r, v, f, a, &g->NumTopics);
            g->ErrorCode = ls_kr_i16(r);
            ls_kr_tags(r, f);
        }
    }
    ls_kr_tags(r, f);
    return r->err ? -1 : 0;
}

void ls_kafka_OffsetFetchResponse_encode(ls_kw_t *w, int16_t v,
                                         const ls_kafka_OffsetFetchResponse *m)
{
    bool f = FLEX(v, OFFSET_FETCH);
    if (v >= 3)
        ls_kw_i32(w, m->ThrottleTimeMs);
    if (v <= 7) {
        of_resp_wtopics(w, v, f, m->Topics, m->NumTopics);
        if (v >= 2)
            ls_kw_i16(w, m->ErrorCode);
    } else {
        ls_kw_arrlen(w, f, m->NumGroups);
        for (int32_t i = 0; i < m->NumGroups; i++) {
            const ls_kafka_OffsetFetchResponse_Group *g = &m->Groups[i];
            ls_kmsg_wstr_nn(w, f, g->GroupId);
            of_resp_wtopics(w, v, f, g->Topics, g->NumTopics);
            ls_kw_i16(w, g->ErrorCode);
            ls_kw_tags(w, f);
        }
    }
    ls_kw_tags(w, f);
}

/* -------------------------------------------------------------- ListGroups */

int ls_kafka_ListGroupsRequest_decode(ls_kr_t *r, int16_t v, ls_arena_t *a,
                                      ls_kafka_ListGroupsRequest *m)
{
    memset(m, 0, sizeof *m);
    CHECKV(LIST_GROUPS);
    if (v >= 4)
        m->StatesFilter = ls_kmsg_strs(r, f, a, false, &m->NumStatesFilter, "StatesFilter");
    if (v >= 5)
        m->TypesFilter = ls_kmsg_strs(r, f, a, false, &m->NumTypesFilter, "TypesFilter");
    ls_kr_tags(r, f);
    return r->err ? -1 : 0;
}

void ls_kafka_ListGroupsRequest_encode(ls_kw_t *w, int16_t v, const ls_kafka_ListGroupsRequest *m)
{
    bool f = FLEX(v, LIST_GROUPS);
    if (v >= 4)
        ls_kmsg_wstrs(w, f, m->StatesFilter, m->NumStatesFilter);
    if (v >= 5)
        ls_kmsg_wstrs(w, f, m->TypesFilter, m->NumTypesFilter);
    ls_kw_tags(w, f);
}

int ls_kafka_ListGroupsResponse_decode(ls_kr_t *r, int16_t v, ls_arena_t *a,
                                       ls_kafka_ListGroupsResponse *m)
{
    memset(m, 0, sizeof *m);
    CHECKV(LIST_GROUPS);
    if (v >= 1)
        m->ThrottleTimeMs = ls_kr_i32(r);
    m->ErrorCode = ls_kr_i16(r);
    m->NumGroups = ls_kmsg_arrlen(r, f, 2, false, "Groups");
    m->Groups = ls_kmsg_alloc(a, m->NumGroups, sizeof *m->Groups);
    for (int32_t i = 0; i < m->NumGroups && !r->err; i++) {
        ls_kafka_ListGroupsResponse_Group *g = &m->Groups[i];
        g->GroupId = ls_kmsg_str(r, f, "Groups.GroupId");
        g->ProtocolType = ls_kmsg_str(r, f, "Groups.ProtocolType");
        g->GroupState = v >= 4 ? ls_kmsg_str(r, f, "Groups.GroupState") : ls_kstr_c("");
        g->GroupType = v >= 5 ? ls_kmsg_str(r, f, "Groups.GroupType") : ls_kstr_c("");
        ls_kr_tags(r, f);
    }
    ls_kr_tags(r, f);
    return r->err ? -1 : 0;
}

void ls_kafka_ListGroupsResponse_encode(ls_kw_t *w, int16_t v,
                                        const ls_kafka_ListGroupsResponse *m)
{
    bool f = FLEX(v, LIST_GROUPS);
    if (v >= 1)
        ls_kw_i32(w, m->ThrottleTimeMs);
    ls_kw_i16(w, m->ErrorCode);
    ls_kw_arrlen(w, f, m->NumGroups);
    for (int32_t i = 0; i < m->NumGroups; i++) {
        const ls_kafka_ListGroupsResponse_Group *g = &m->Groups[i];
        ls_kmsg_wstr_nn(w, f, g->GroupId);
        ls_kmsg_wstr_nn(w, f, g->ProtocolType);
        if (v >= 4)
            ls_kmsg_wstr_nn(w, f, g->GroupState);
        if (v >= 5)
            ls_kmsg_wstr_nn(w, f, g->GroupType);
        ls_kw_tags(w, f);
    }
    ls_kw_tags(w, f);
}

/* ---------------------------------------------------------- DescribeGroups */

int ls_kafka_DescribeGroupsRequest_decode(ls_kr_t *r, int16_t v, ls_arena_t *a,
                                          ls_kafka_DescribeGroupsRequest *m)
{
    memset(m, 0, sizeof *m);
    CHECKV(DESCRIBE_GROUPS);
    m->Groups = ls_kmsg_strs(r, f, a, false, &m->NumGroups, "Groups");
    if (v >= 3)
        m->IncludeAuthorizedOperations = ls_kr_bool(r);
    ls_kr_tags(r, f);
    return r->err ? -1 : 0;
}

void ls_kafka_DescribeGroupsRequest_encode(ls_kw_t *w, int16_t v,
                                           const ls_kafka_DescribeGroupsRequest *m)
{
    bool f = FLEX(v, DESCRIBE_GROUPS);
    ls_kmsg_wstrs(w, f, m->Groups, m->NumGroups);
    if (v >= 3)
        ls_kw_bool(w, m->IncludeAuthorizedOperations);
    ls_kw_tags(w, f);
}

int ls_kafka_DescribeGroupsResponse_decode(ls_kr_t *r, int16_t v, ls_arena_t *a,
                                           ls_kafka_DescribeGroupsResponse *m)
{
    memset(m, 0, sizeof *m);
    CHECKV(DESCRIBE_GROUPS);
    if (v >= 1)
        m->ThrottleTimeMs = ls_kr_i32(r);
    m->NumGroups = ls_kmsg_arrlen(r, f, 2 + 4 * 1 + 1, false, "Groups");
    m->Groups = ls_kmsg_alloc(a, m->NumGroups, sizeof *m->Groups);
    for (int32_t i = 0; i < m->NumGroups && !r->err; i++) {
        ls_kafka_DescribeGroupsResponse_Group *g = &m->Groups[i];
        g->ErrorCode = ls_kr_i16(r);
        g->ErrorMessage = v >= 6 ? ls_kr_str(r, f) : ls_kstr_null();
        g->GroupId = ls_kmsg_str(r, f, "Groups.GroupId");
        g->GroupState = ls_kmsg_str(r, f, "Groups.GroupState");
        g->ProtocolType = ls_kmsg_str(r, f, "Groups.ProtocolType");
        g->ProtocolData = ls_kmsg_str(r, f, "Groups.ProtocolData");
        g->NumMembers = ls_kmsg_arrlen(r, f, 5, false, "Groups.Members");
        g->Members = ls_kmsg_alloc(a, g->NumMembers, sizeof *g->Members);
        for (int32_t j = 0; j < g->NumMembers && !r->err; j++) {
            ls_kafka_DescribeGroupsResponse_Member *mb = &g->Members[j];
            mb->MemberId = ls_kmsg_str(r, f, "Members.MemberId");
            mb->GroupInstanceId = v >= 4 ? ls_kr_str(r, f) : ls_kstr_null();
            mb->ClientId = ls_kmsg_str(r, f, "Members.ClientId");
            mb->ClientHost = ls_kmsg_str(r, f, "Members.ClientHost");
            mb->MemberMetadata = rbytes(r, f, "Members.MemberMetadata");
            mb->MemberAssignment = rbytes(r, f, "Members.MemberAssignment");
            ls_kr_tags(r, f);
        }
        g->AuthorizedOperations = v >= 3 ? ls_kr_i32(r) : INT32_MIN;
        ls_kr_tags(r, f);
    }
    ls_kr_tags(r, f);
    return r->err ? -1 : 0;
}

void ls_kafka_DescribeGroupsResponse_encode(ls_kw_t *w, int16_t v,
                                            const ls_kafka_DescribeGroupsResponse *m)
{
    bool f = FLEX(v, DESCRIBE_GROUPS);
    if (v >= 1)
        ls_kw_i32(w, m->ThrottleTimeMs);
    ls_kw_arrlen(w, f, m->NumGroups);
    for (int32_t i = 0; i < m->NumGroups; i++) {
        const ls_kafka_DescribeGroupsResponse_Group *g = &m->Groups[i];
        ls_kw_i16(w, g->ErrorCode);
        if (v >= 6)
            ls_kmsg_wstr(w, f, g->ErrorMessage);
        ls_kmsg_wstr_nn(w, f, g->GroupId);
        ls_kmsg_wstr_nn(w, f, g->GroupState);
        ls_kmsg_wstr_nn(w, f, g->ProtocolType);
        ls_kmsg_wstr_nn(w, f, g->ProtocolData);
        ls_kw_arrlen(w, f, g->NumMembers);
        for (int32_t j = 0; j < g->NumMembers; j++) {
            const ls_kafka_DescribeGroupsResponse_Member *mb = &g->Members[j];
            ls_kmsg_wstr_nn(w, f, mb->MemberId);
            if (v >= 4)
                ls_kmsg_wstr(w, f, mb->GroupInstanceId);
            ls_kmsg_wstr_nn(w, f, mb->ClientId);
            ls_kmsg_wstr_nn(w, f, mb->ClientHost);
            wbytes(w, f, mb->MemberMetadata);
            wbytes(w, f, mb->MemberAssignment);
            ls_kw_tags(w, f);
        }
        if (v >= 3)
            ls_kw_i32(w, g->AuthorizedOperations);
        ls_kw_tags(w, f);
    }
    ls_kw_tags(w, f);
}

/* ------------------------------------------------------------ DeleteGroups */

int ls_kafka_DeleteGroupsRequest_decode(ls_kr_t *r, int16_t v, ls_arena_t *a,
                                        ls_kafka_DeleteGroupsRequest *m)
{
    memset(m, 0, sizeof *m);
    CHECKV(DELETE_GROUPS);
    m->GroupsNames = ls_kmsg_strs(r, f, a, false, &m->NumGroupsNames, "GroupsNames");
    ls_kr_tags(r, f);
    return r->err ? -1 : 0;
}

void ls_kafka_DeleteGroupsRequest_encode(ls_kw_t *w, int16_t v,
                                         const ls_kafka_DeleteGroupsRequest *m)
{
    bool f = FLEX(v, DELETE_GROUPS);
    ls_kmsg_wstrs(w, f, m->GroupsNames, m->NumGroupsNames);
    ls_kw_tags(w, f);
}

int ls_kafka_DeleteGroupsResponse_decode(ls_kr_t *r, int16_t v, ls_arena_t *a,
                                         ls_kafka_DeleteGroupsResponse *m)
{
    memset(m, 0, sizeof *m);
    CHECKV(DELETE_GROUPS);
    m->ThrottleTimeMs = ls_kr_i32(r);
    m->NumResults = ls_kmsg_arrlen(r, f, 3, false, "Results");
    m->Results = ls_kmsg_alloc(a, m->NumResults, sizeof *m->Results);
    for (int32_t i = 0; i < m->NumResults && !r->err; i++) {
        m->Results[i].GroupId = ls_kmsg_str(r, f, "Results.GroupId");
        m->Results[i].ErrorCode = ls_kr_i16(r);
        ls_kr_tags(r, f);
    }
    ls_kr_tags(r, f);
    return r->err ? -1 : 0;
}

void ls_kafka_DeleteGroupsResponse_encode(ls_kw_t *w, int16_t v,
                                          const ls_kafka_DeleteGroupsResponse *m)
{
    bool f = FLEX(v, DELETE_GROUPS);
    ls_kw_i32(w, m->ThrottleTimeMs);
    ls_kw_arrlen(w, f, m->NumResults);
    for (int32_t i = 0; i < m->NumResults; i++) {
        ls_kmsg_wstr_nn(w, f, m->Results[i].GroupId);
        ls_kw_i16(w, m->Results[i].ErrorCode);
        ls_kw_tags(w, f);
    }
    ls_kw_tags(w, f);
}

/* ------------------------------------------------------------ OffsetDelete */

int ls_kafka_OffsetDeleteRequest_decode(ls_kr_t *r, int16_t v, ls_arena_t *a,
                                        ls_kafka_OffsetDeleteRequest *m)
{
    memset(m, 0, sizeof *m);
    CHECKV(OFFSET_DELETE);
    m->GroupId = ls_kmsg_str(r, f, "GroupId");
    m->NumTopics = ls_kmsg_arrlen(r, f, 2 + 4, false, "Topics");
    m->Topics = ls_kmsg_alloc(a, m->NumTopics, sizeof *m->Topics);
    for (int32_t i = 0; i < m->NumTopics && !r->err; i++) {
        m->Topics[i].Name = ls_kmsg_str(r, f, "Topics.Name");
        m->Topics[i].Partitions =
            ls_kmsg_i32s(r, f, a, false, &m->Topics[i].NumPartitions, "Topics.Partitions");
    }
    return r->err ? -1 : 0;
}

void ls_kafka_OffsetDeleteRequest_encode(ls_kw_t *w, int16_t v,
                                         const ls_kafka_OffsetDeleteRequest *m)
{
    ls_kmsg_wstr_nn(w, false, m->GroupId);
    ls_kw_arrlen(w, false, m->NumTopics);
    for (int32_t i = 0; i < m->NumTopics; i++) {
        ls_kmsg_wstr_nn(w, false, m->Topics[i].Name);
        ls_kmsg_wi32s(w, false, m->Topics[i].Partitions, m->Topics[i].NumPartitions);
    }
}

int ls_kafka_OffsetDeleteResponse_decode(ls_kr_t *r, int16_t v, ls_arena_t *a,
                                         ls_kafka_OffsetDeleteResponse *m)
{
    memset(m, 0, sizeof *m);
    CHECKV(OFFSET_DELETE);
    (void)f;
    m->ErrorCode = ls_kr_i16(r);
    m->ThrottleTimeMs = ls_kr_i32(r);
    m->NumTopics = ls_kmsg_arrlen(r, false, 2 + 4, false, "Topics");
    m->Topics = ls_kmsg_alloc(a, m->NumTopics, sizeof *m->Topics);
    for (int32_t i = 0; i < m->NumTopics && !r->err; i++) {
        ls_kafka_OffsetDeleteResponse_Topic *t = &m->Topics[i];
        t->Name = ls_kmsg_str(r, false, "Topics.Name");
        t->NumPartitions = ls_kmsg_arrlen(r, false, 6, false, "Topics.Partitions");
        t->Partitions = ls_kmsg_alloc(a, t->NumPartitions, sizeof *t->Partitions);
        for (int32_t j = 0; j < t->NumPartitions && !r->err; j++) {
            t->Partitions[j].PartitionIndex = ls_kr_i32(r);
            t->Partitions[j].ErrorCode = ls_kr_i16(r);
        }
    }
    return r->err ? -1 : 0;
}

void ls_kafka_OffsetDeleteResponse_encode(ls_kw_t *w, int16_t v,
                                          const ls_kafka_OffsetDeleteResponse *m)
{
    ls_kw_i16(w, m->ErrorCode);
    ls_kw_i32(w, m->ThrottleTimeMs);
    ls_kw_arrlen(w, false, m->NumTopics);
    for (int32_t i = 0; i < m->NumTopics; i++) {
        const ls_kafka_OffsetDeleteResponse_Topic *t = &m->Topics[i];
        ls_kmsg_wstr_nn(w, false, t->Name);
        ls_kw_arrlen(w, false, t->NumPartitions);
        for (int32_t j = 0; j < t->NumPartitions; j++) {
            ls_kw_i32(w, t->Partitions[j].PartitionIndex);
            ls_kw_i16(w, t->Partitions[j].ErrorCode);
        }
    }
}
