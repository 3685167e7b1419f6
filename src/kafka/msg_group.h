/* Kafka consumer-group messages (classic protocol): their structs and codecs
 * are generated with the others (kafka/msg_gen.h, from src/kafka/messages/
 * {FindCoordinator,JoinGroup,SyncGroup,Heartbeat,LeaveGroup,OffsetCommit,
 * OffsetFetch,ListGroups,DescribeGroups,DeleteGroups,OffsetDelete,
 * ConsumerGroupHeartbeat,ConsumerGroupDescribe}.msg);
 * this header adds the group error codes. */
#ifndef LS_KAFKA_MSG_GROUP_H
#define LS_KAFKA_MSG_GROUP_H
#include "kafka/msg.h"

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
    LS_KERR_NON_EMPTY_GROUP = 68,
    LS_KERR_GROUP_ID_NOT_FOUND = 69,
    LS_KERR_MEMBER_ID_REQUIRED = 79,
    LS_KERR_FENCED_INSTANCE_ID = 82,
    LS_KERR_GROUP_MAX_SIZE_REACHED = 81,
    LS_KERR_GROUP_SUBSCRIBED_TO_TOPIC = 86,
    LS_KERR_UNSTABLE_OFFSET_COMMIT = 88,
    /* KIP-848 consumer groups */
    LS_KERR_FENCED_MEMBER_EPOCH = 110,
    LS_KERR_UNRELEASED_INSTANCE_ID = 111,
    LS_KERR_UNSUPPORTED_ASSIGNOR = 112,
    LS_KERR_STALE_MEMBER_EPOCH = 113,
    LS_KERR_INVALID_REGULAR_EXPRESSION = 128,
};
#endif
