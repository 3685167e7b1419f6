/* Kafka consumer-group messages (classic protocol): C structs in Kafka's own
 * spelling and a decode/encode pair for each direction, per version. Same
 * conventions as msg.h (views into the request buffer, arrays in the arena,
 * NumFoo counts, -1 = null for nullable arrays, fields absent at a version set
 * to the spec default by the decoder and skipped by the encoder).
 *
 * Source of truth: apache/kafka clients/src/main/resources/common/message/
 * {FindCoordinator,JoinGroup,SyncGroup,Heartbeat,LeaveGroup,OffsetCommit,
 * OffsetFetch,ListGroups,DescribeGroups,DeleteGroups,OffsetDelete}
 * {Request,Response}.json. Codecs live in msg_group.c. */
#ifndef LS_KAFKA_MSG_GROUP_H
#define LS_KAFKA_MSG_GROUP_H
#include "kafka/msg.h"

enum {
    LS_KAFKA_API_OFFSET_COMMIT = 8,
    LS_KAFKA_API_OFFSET_FETCH = 9,
    LS_KAFKA_API_FIND_COORDINATOR = 10,
    LS_KAFKA_API_JOIN_GROUP = 11,
    LS_KAFKA_API_HEARTBEAT = 12,
    LS_KAFKA_API_LEAVE_GROUP = 13,
    LS_KAFKA_API_SYNC_GROUP = 14,
    LS_KAFKA_API_DESCRIBE_GROUPS = 15,
    LS_KAFKA_API_LIST_GROUPS = 16,
    LS_KAFKA_API_DELETE_GROUPS = 42,
    LS_KAFKA_API_OFFSET_DELETE = 47,
};

#define LS_KAFKA_OFFSET_COMMIT_MIN 0
#define LS_KAFKA_OFFSET_COMMIT_MAX 9
#define LS_KAFKA_OFFSET_COMMIT_FLEX 8
#define LS_KAFKA_OFFSET_FETCH_MIN 0
#define LS_KAFKA_OFFSET_FETCH_MAX 9
#define LS_KAFKA_OFFSET_FETCH_FLEX 6
#define LS_KAFKA_FIND_COORDINATOR_MIN 0
#define LS_KAFKA_FIND_COORDINATOR_MAX 6
#define LS_KAFKA_FIND_COORDINATOR_FLEX 3
#define LS_KAFKA_JOIN_GROUP_MIN 0
#define LS_KAFKA_JOIN_GROUP_MAX 9
#define LS_KAFKA_JOIN_GROUP_FLEX 6
#define LS_KAFKA_HEARTBEAT_MIN 0
#define LS_KAFKA_HEARTBEAT_MAX 4
#define LS_KAFKA_HEARTBEAT_FLEX 4
#define LS_KAFKA_LEAVE_GROUP_MIN 0
#define LS_KAFKA_LEAVE_GROUP_MAX 5
#define LS_KAFKA_LEAVE_GROUP_FLEX 4
#define LS_KAFKA_SYNC_GROUP_MIN 0
#define LS_KAFKA_SYNC_GROUP_MAX 5
#define LS_KAFKA_SYNC_GROUP_FLEX 4
#define LS_KAFKA_DESCRIBE_GROUPS_MIN 0
#define LS_KAFKA_DESCRIBE_GROUPS_MAX 6
#define LS_KAFKA_DESCRIBE_GROUPS_FLEX 5
#define LS_KAFKA_LIST_GROUPS_MIN 0
#define LS_KAFKA_LIST_GROUPS_MAX 5
#define LS_KAFKA_LIST_GROUPS_FLEX 3
#define LS_KAFKA_DELETE_GROUPS_MIN 0
#define LS_KAFKA_DELETE_GROUPS_MAX 2
#define LS_KAFKA_DELETE_GROUPS_FLEX 2
#define LS_KAFKA_OFFSET_DELETE_MIN 0
#define LS_KAFKA_OFFSET_DELETE_MAX 0
#define LS_KAFKA_OFFSET_DELETE_FLEX INT16_MAX

/* Group error codes (protocol guide "Error Codes"). */
enum {
    LS_KERR_OFFSET_METADATA_TOO_LARGE = 12,
    LS_KERR_COORDINATOR_LOAD_IN_PROGRESS = 14,
    LS_KERR_ILLEGAL_GENERATION = 22,
    LS_KERR_INCONSISTENT_GROUP_PROTOCOL = 23,
    LS_KERR_INVALID_GROUP_ID = 24,
    LS_KERR_UNKNOWN_MEMBER_ID = 25,
    LS_KERR_INVALID_SESSION_TIMEOUT = 26,
    LS_KERR_REBALANCE_IN_PROGRESS = 27,
    LS_KERR_INVALID_COMMIT_OFFSET_SIZE = 28,
    LS_KERR_GROUP_AUTHORIZATION_FAILED = 30,
    LS_KERR_NON_EMPTY_GROUP = 68,
    LS_KERR_GROUP_ID_NOT_FOUND = 69,
    LS_KERR_MEMBER_ID_REQUIRED = 79,
    LS_KERR_FENCED_INSTANCE_ID = 82,
    LS_KERR_GROUP_MAX_SIZE_REACHED = 81,
    LS_KERR_GROUP_SUBSCRIBED_TO_TOPIC = 86,
    LS_KERR_UNSTABLE_OFFSET_COMMIT = 88,
};

/* ------------------------------------------------- FindCoordinator (10) */

typedef struct ls_kafka_FindCoordinatorRequest {
    ls_kstr_t Key;                   /* v0-3 */
    int8_t KeyType;                  /* v1+, 0 group, 1 transaction, 2 share (v6+) */
    ls_kstr_t *CoordinatorKeys;      /* v4+ */
    int32_t NumCoordinatorKeys;
} ls_kafka_FindCoordinatorRequest;

typedef struct ls_kafka_FindCoordinatorResponse_Coordinator {
    ls_kstr_t Key;
    int32_t NodeId;
    ls_kstr_t Host;
    int32_t Port;
    int16_t ErrorCode;
    ls_kstr_t ErrorMessage;          /* nullable */
} ls_kafka_FindCoordinatorResponse_Coordinator;

typedef struct ls_kafka_FindCoordinatorResponse {
    int32_t ThrottleTimeMs;          /* v1+ */
    int16_t ErrorCode;               /* v0-3 */
    ls_kstr_t ErrorMessage;          /* v1-3, nullable */
    int32_t NodeId;                  /* v0-3 */
    ls_kstr_t Host;                  /* v0-3 */
    int32_t Port;                    /* v0-3 */
    ls_kafka_FindCoordinatorResponse_Coordinator *Coordinators;   /* v4+ */
    int32_t NumCoordinators;
} ls_kafka_FindCoordinatorResponse;

/* ------------------------------------------------------- JoinGroup (11) */

typedef struct ls_kafka_JoinGroupRequest_Protocol {
    ls_kstr_t Name;
    ls_kbytes_t Metadata;
} ls_kafka_JoinGroupRequest_Protocol;

typedef struct ls_kafka_JoinGroupRequest {
    ls_kstr_t GroupId;
    int32_t SessionTimeoutMs;
    int32_t RebalanceTimeoutMs;      /* v1+, default -1 (= session timeout) */
    ls_kstr_t MemberId;
    ls_kstr_t GroupInstanceId;       /* v5+, nullable, default null */
    ls_kstr_t ProtocolType;
    ls_kafka_JoinGroupRequest_Protocol *Protocols;
    int32_t NumProtocols;
    ls_kstr_t Reason;                /* v8+, nullable */
} ls_kafka_JoinGroupRequest;

typedef struct ls_kafka_JoinGroupResponse_Member {
    ls_kstr_t MemberId;
    ls_kstr_t GroupInstanceId;       /* v5+, nullable */
    ls_kbytes_t Metadata;
} ls_kafka_JoinGroupResponse_Member;

typedef struct ls_kafka_JoinGroupResponse {
    int32_t ThrottleTimeMs;          /* v2+ */
    int16_t ErrorCode;
    int32_t GenerationId;            /* default -1 */
    ls_kstr_t ProtocolType;          /* v7+, nullable */
    ls_kstr_t ProtocolName;          /* nullable v7+ */
    ls_kstr_t Leader;
    bool SkipAssignment;             /* v9+ */
    ls_kstr_t MemberId;
    ls_kafka_JoinGroupResponse_Member *Members;
    int32_t NumMembers;
} ls_kafka_JoinGroupResponse;

/* ------------------------------------------------------- Heartbeat (12) */

typedef struct ls_kafka_HeartbeatRequest {
    ls_kstr_t GroupId;
    int32_t GenerationId;
    ls_kstr_t MemberId;
    ls_kstr_t GroupInstanceId;       /* v3+, nullable */
} ls_kafka_HeartbeatRequest;

typedef struct ls_kafka_HeartbeatResponse {
    int32_t ThrottleTimeMs;          /* v1+ */
    int16_t ErrorCode;
} ls_kafka_HeartbeatResponse;

/* ------------------------------------------------------ LeaveGroup (13) */

typedef struct ls_kafka_LeaveGroupRequest_MemberIdentity {
    ls_kstr_t MemberId;
    ls_kstr_t GroupInstanceId;       /* nullable */
    ls_kstr_t Reason;                /* v5+, nullable */
} ls_kafka_LeaveGroupRequest_MemberIdentity;

typedef struct ls_kafka_LeaveGroupRequest {
    ls_kstr_t GroupId;
    ls_kstr_t MemberId;              /* v0-2 */
    ls_kafka_LeaveGroupRequest_MemberIdentity *Members;   /* v3+ */
    int32_t NumMembers;
} ls_kafka_LeaveGroupRequest;

typedef struct ls_kafka_LeaveGroupResponse_MemberResponse {
    ls_kstr_t MemberId;
    ls_kstr_t GroupInstanceId;       /* nullable */
    int16_t ErrorCode;
} ls_kafka_LeaveGroupResponse_MemberResponse;

typedef struct ls_kafka_LeaveGroupResponse {
    int32_t ThrottleTimeMs;          /* v1+ */
    int16_t ErrorCode;
    ls_kafka_LeaveGroupResponse_MemberResponse *Members;  /* v3+ */
    int32_t NumMembers;
} ls_kafka_LeaveGroupResponse;

/* ------------------------------------------------------- SyncGroup (14) */

typedef struct ls_kafka_SyncGroupRequest_Assignment {
    ls_kstr_t MemberId;
    ls_kbytes_t Assignment;
} ls_kafka_SyncGroupRequest_Assignment;

typedef struct ls_kafka_SyncGroupRequest {
    ls_kstr_t GroupId;
    int32_t GenerationId;
    ls_kstr_t MemberId;
    ls_kstr_t GroupInstanceId;       /* v3+, nullable */
    ls_kstr_t ProtocolType;          /* v5+, nullable */
    ls_kstr_t ProtocolName;          /* v5+, nullable */
    ls_kafka_SyncGroupRequest_Assignment *Assignments;
    int32_t NumAssignments;
} ls_kafka_SyncGroupRequest;

typedef struct ls_kafka_SyncGroupResponse {
    int32_t ThrottleTimeMs;          /* v1+ */
    int16_t ErrorCode;
    ls_kstr_t ProtocolType;          /* v5+, nullable */
    ls_kstr_t ProtocolName;          /* v5+, nullable */
    ls_kbytes_t Assignment;
} ls_kafka_SyncGroupResponse;

/* ---------------------------------------------------- OffsetCommit (8) */

typedef struct ls_kafka_OffsetCommitRequest_Partition {
    int32_t PartitionIndex;
    int64_t CommittedOffset;
    int32_t CommittedLeaderEpoch;    /* v6+, default -1 */
    int64_t CommitTimestamp;         /* v1 only, default -1 */
    ls_kstr_t CommittedMetadata;     /* nullable */
} ls_kafka_OffsetCommitRequest_Partition;

typedef struct ls_kafka_OffsetCommitRequest_Topic {
    ls_kstr_t Name;
    ls_kafka_OffsetCommitRequest_Partition *Partitions;
    int32_t NumPartitions;
} ls_kafka_OffsetCommitRequest_Topic;

typedef struct ls_kafka_OffsetCommitRequest {
    ls_kstr_t GroupId;
    int32_t GenerationIdOrMemberEpoch;   /* v1+, default -1 */
    ls_kstr_t MemberId;              /* v1+, default "" */
    ls_kstr_t GroupInstanceId;       /* v7+, nullable */
    int64_t RetentionTimeMs;         /* v2-4, default -1 */
    ls_kafka_OffsetCommitRequest_Topic *Topics;
    int32_t NumTopics;
} ls_kafka_OffsetCommitRequest;

typedef struct ls_kafka_OffsetCommitResponse_Partition {
    int32_t PartitionIndex;
    int16_t ErrorCode;
} ls_kafka_OffsetCommitResponse_Partition;

typedef struct ls_kafka_OffsetCommitResponse_Topic {
    ls_kstr_t Name;
    ls_kafka_OffsetCommitResponse_Partition *Partitions;
    int32_t NumPartitions;
} ls_kafka_OffsetCommitResponse_Topic;

typedef struct ls_kafka_OffsetCommitResponse {
    int32_t ThrottleTimeMs;          /* v3+ */
    ls_kafka_OffsetCommitResponse_Topic *Topics;
    int32_t NumTopics;
} ls_kafka_OffsetCommitResponse;

/* ----------------------------------------------------- OffsetFetch (9) */

typedef struct ls_kafka_OffsetFetchRequest_Topic {
    ls_kstr_t Name;
    int32_t *PartitionIndexes;
    int32_t NumPartitionIndexes;
} ls_kafka_OffsetFetchRequest_Topic;

typedef struct ls_kafka_OffsetFetchRequest_Group {
    ls_kstr_t GroupId;
    ls_kstr_t MemberId;              /* v9+, nullable, default null */
    int32_t MemberEpoch;             /* v9+, default -1 */
    ls_kafka_OffsetFetchRequest_Topic *Topics;   /* nullable: all topics */
    int32_t NumTopics;
} ls_kafka_OffsetFetchRequest_Group;

typedef struct ls_kafka_OffsetFetchRequest {
    ls_kstr_t GroupId;               /* v0-7 */
    ls_kafka_OffsetFetchRequest_Topic *Topics;   /* v0-7, nullable v2-7 */
    int32_t NumTopics;
    ls_kafka_OffsetFetchRequest_Group *Groups;   /* v8+ */
    int32_t NumGroups;
    bool RequireStable;              /* v7+ */
} ls_kafka_OffsetFetchRequest;

typedef struct ls_kafka_OffsetFetchResponse_Partition {
    int32_t PartitionIndex;
    int64_t CommittedOffset;
    int32_t CommittedLeaderEpoch;    /* v5+, default -1 */
    ls_kstr_t Metadata;              /* nullable */
    int16_t ErrorCode;
} ls_kafka_OffsetFetchResponse_Partition;

typedef struct ls_kafka_OffsetFetchResponse_Topic {
    ls_kstr_t Name;
    ls_kafka_OffsetFetchResponse_Partition *Partitions;
    int32_t NumPartitions;
} ls_kafka_OffsetFetchResponse_Topic;

typedef struct ls_kafka_OffsetFetchResponse_Group {
    ls_kstr_t GroupId;
    ls_kafka_OffsetFetchResponse_Topic *Topics;
    int32_t NumTopics;
    int16_t ErrorCode;
} ls_kafka_OffsetFetchResponse_Group;

typedef struct ls_kafka_OffsetFetchResponse {
    int32_t ThrottleTimeMs;          /* v3+ */
    ls_kafka_OffsetFetchResponse_Topic *Topics;  /* v0-7 */
    int32_t NumTopics;
    int16_t ErrorCode;               /* v2-7 */
    ls_kafka_OffsetFetchResponse_Group *Groups;  /* v8+ */
    int32_t NumGroups;
} ls_kafka_OffsetFetchResponse;

/* ------------------------------------------------------ ListGroups (16) */

typedef struct ls_kafka_ListGroupsRequest {
    ls_kstr_t *StatesFilter;         /* v4+ */
    int32_t NumStatesFilter;
    ls_kstr_t *TypesFilter;          /* v5+ */
    int32_t NumTypesFilter;
} ls_kafka_ListGroupsRequest;

typedef struct ls_kafka_ListGroupsResponse_Group {
    ls_kstr_t GroupId;
    ls_kstr_t ProtocolType;
    ls_kstr_t GroupState;            /* v4+ */
    ls_kstr_t GroupType;             /* v5+ */
} ls_kafka_ListGroupsResponse_Group;

typedef struct ls_kafka_ListGroupsResponse {
    int32_t ThrottleTimeMs;          /* v1+ */
    int16_t ErrorCode;
    ls_kafka_ListGroupsResponse_Group *Groups;
    int32_t NumGroups;
} ls_kafka_ListGroupsResponse;

/* -------------------------------------------------- DescribeGroups (15) */

typedef struct ls_kafka_DescribeGroupsRequest {
    ls_kstr_t *Groups;
    int32_t NumGroups;
    bool IncludeAuthorizedOperations;    /* v3+ */
} ls_kafka_DescribeGroupsRequest;

typedef struct ls_kafka_DescribeGroupsResponse_Member {
    ls_kstr_t MemberId;
    ls_kstr_t GroupInstanceId;       /* v4+, nullable */
    ls_kstr_t ClientId;
    ls_kstr_t ClientHost;
    ls_kbytes_t MemberMetadata;
    ls_kbytes_t MemberAssignment;
} ls_kafka_DescribeGroupsResponse_Member;

typedef struct ls_kafka_DescribeGroupsResponse_Group {
    int16_t ErrorCode;
    ls_kstr_t ErrorMessage;          /* v6+, nullable */
    ls_kstr_t GroupId;
    ls_kstr_t GroupState;
    ls_kstr_t ProtocolType;
    ls_kstr_t ProtocolData;
    ls_kafka_DescribeGroupsResponse_Member *Members;
    int32_t NumMembers;
    int32_t AuthorizedOperations;    /* v3+, default INT32_MIN */
} ls_kafka_DescribeGroupsResponse_Group;

typedef struct ls_kafka_DescribeGroupsResponse {
    int32_t ThrottleTimeMs;          /* v1+ */
    ls_kafka_DescribeGroupsResponse_Group *Groups;
    int32_t NumGroups;
} ls_kafka_DescribeGroupsResponse;

/* ---------------------------------------------------- DeleteGroups (42) */

typedef struct ls_kafka_DeleteGroupsRequest {
    ls_kstr_t *GroupsNames;
    int32_t NumGroupsNames;
} ls_kafka_DeleteGroupsRequest;

typedef struct ls_kafka_DeleteGroupsResponse_Result {
    ls_kstr_t GroupId;
    int16_t ErrorCode;
} ls_kafka_DeleteGroupsResponse_Result;

typedef struct ls_kafka_DeleteGroupsResponse {
    int32_t ThrottleTimeMs;
    ls_kafka_DeleteGroupsResponse_Result *Results;
    int32_t NumResults;
} ls_kafka_DeleteGroupsResponse;

/* ---------------------------------------------------- OffsetDelete (47) */

typedef struct ls_kafka_OffsetDeleteRequest_Topic {
    ls_kstr_t Name;
    int32_t *Partitions;             /* PartitionIndex of each partition */
    int32_t NumPartitions;
} ls_kafka_OffsetDeleteRequest_Topic;

typedef struct ls_kafka_OffsetDeleteRequest {
    ls_kstr_t GroupId;
    ls_kafka_OffsetDeleteRequest_Topic *Topics;
    int32_t NumTopics;
} ls_kafka_OffsetDeleteRequest;

typedef struct ls_kafka_OffsetDeleteResponse_Partition {
    int32_t PartitionIndex;
    int16_t ErrorCode;
} ls_kafka_OffsetDeleteResponse_Partition;

typedef struct ls_kafka_OffsetDeleteResponse_Topic {
    ls_kstr_t Name;
    ls_kafka_OffsetDeleteResponse_Partition *Partitions;
    int32_t NumPartitions;
} ls_kafka_OffsetDeleteResponse_Topic;

typedef struct ls_kafka_OffsetDeleteResponse {
    int16_t ErrorCode;
    int32_t ThrottleTimeMs;
    ls_kafka_OffsetDeleteResponse_Topic *Topics;
    int32_t NumTopics;
} ls_kafka_OffsetDeleteResponse;

/* ------------------------------------------------------------- codecs */

#define LS_KAFKA_GROUP_CODEC(T)                                                                \
    int ls_kafka_##T##_decode(ls_kr_t *r, int16_t version, ls_arena_t *a, ls_kafka_##T *m);    \
    void ls_kafka_##T##_encode(ls_kw_t *w, int16_t version, const ls_kafka_##T *m);

LS_KAFKA_GROUP_CODEC(FindCoordinatorRequest)
LS_KAFKA_GROUP_CODEC(FindCoordinatorResponse)
LS_KAFKA_GROUP_CODEC(JoinGroupRequest)
LS_KAFKA_GROUP_CODEC(JoinGroupResponse)
LS_KAFKA_GROUP_CODEC(HeartbeatRequest)
LS_KAFKA_GROUP_CODEC(HeartbeatResponse)
LS_KAFKA_GROUP_CODEC(LeaveGroupRequest)
LS_KAFKA_GROUP_CODEC(LeaveGroupResponse)
LS_KAFKA_GROUP_CODEC(SyncGroupRequest)
LS_KAFKA_GROUP_CODEC(SyncGroupResponse)
LS_KAFKA_GROUP_CODEC(OffsetCommitRequest)
LS_KAFKA_GROUP_CODEC(OffsetCommitResponse)
LS_KAFKA_GROUP_CODEC(OffsetFetchRequest)
LS_KAFKA_GROUP_CODEC(OffsetFetchResponse)
LS_KAFKA_GROUP_CODEC(ListGroupsRequest)
LS_KAFKA_GROUP_CODEC(ListGroupsResponse)
LS_KAFKA_GROUP_CODEC(DescribeGroupsRequest)
LS_KAFKA_GROUP_CODEC(DescribeGroupsResponse)
LS_KAFKA_GROUP_CODEC(DeleteGroupsRequest)
LS_KAFKA_GROUP_CODEC(DeleteGroupsResponse)
LS_KAFKA_GROUP_CODEC(OffsetDeleteRequest)
LS_KAFKA_GROUP_CODEC(OffsetDeleteResponse)
#undef LS_KAFKA_GROUP_CODEC
#endif
