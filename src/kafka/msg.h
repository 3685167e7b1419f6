/* Kafka request/response messages: C structs in Kafka's own spelling and a
 * decode/encode pair for each, per version.
 *
 * Source of truth: apache/kafka clients/src/main/resources/common/message/
 * <Name>{Request,Response}.json (validVersions, flexibleVersions, per-field
 * versions, nullableVersions, tagged fields). Field and struct names below are
 * the JSON's; nested struct types carry their message as a prefix
 * (ls_kafka_FetchResponse_PartitionData) because Kafka reuses short names
 * (PartitionData, EpochEndOffset) with different shapes across messages. Two
 * shapes that are identical wherever they appear are shared:
 * ls_kafka_LeaderIdAndEpoch and ls_kafka_NodeEndpoint.
 *
 * Conventions
 *  - Strings are ls_kstr_t views (null: ptr NULL, len -1); bytes ls_kbytes_t.
 *    Decoded views point into the request buffer; arrays live in the arena.
 *  - An array field Foo comes with int32_t NumFoo. For arrays the spec marks
 *    nullable, NumFoo == -1 means null; a non-nullable array or string sent as
 *    null is a decode error (as in Kafka's generated code).
 *  - Fields absent at a version are skipped by the encoder and set to the
 *    spec's default by the decoder (e.g. CurrentLeaderEpoch -1).
 *  - Tagged fields (KIP-482) are written only when they differ from the spec
 *    default (scalars), are non-empty (arrays), or, for tagged structs, when
 *    their Has<Field> flag is set. The flag exists because a zeroed struct is
 *    not the default for these ({-1,-1}) and some are dangerous to send by
 *    accident (a DivergingEpoch tells a consumer its log diverged).
 *  - decode returns 0, or -1 with r->err/r->what set (sticky reader). It does
 *    not require the reader to be exhausted; callers that care compare
 *    ls_kr_remaining() to 0.
 *  - Version ranges are exactly those in the LS_KAFKA_<API>_{MIN,MAX,FLEX}
 *    constants below (api.c builds the dispatch table from them); decode of a
 *    version outside the range fails with "unsupported version".
 */
#ifndef LS_KAFKA_MSG_H
#define LS_KAFKA_MSG_H
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include "base/chunk.h"
#include "kafka/codec.h"

/* API keys (protocol guide "Api Keys"). */
enum {
    LS_KAFKA_API_PRODUCE = 0,
    LS_KAFKA_API_FETCH = 1,
    LS_KAFKA_API_LIST_OFFSETS = 2,
    LS_KAFKA_API_METADATA = 3,
    LS_KAFKA_API_API_VERSIONS = 18,
    LS_KAFKA_API_CREATE_TOPICS = 19,
    LS_KAFKA_API_DELETE_TOPICS = 20,
    LS_KAFKA_API_DELETE_RECORDS = 21,
    LS_KAFKA_API_INIT_PRODUCER_ID = 22,
    LS_KAFKA_API_OFFSET_FOR_LEADER_EPOCH = 23,
    LS_KAFKA_API_DESCRIBE_CONFIGS = 32,
    LS_KAFKA_API_ALTER_CONFIGS = 33,
    LS_KAFKA_API_CREATE_PARTITIONS = 37,
    LS_KAFKA_API_INCREMENTAL_ALTER_CONFIGS = 44,
    LS_KAFKA_API_DESCRIBE_CLUSTER = 60,
};

/* Supported version ranges and first flexible version, per API. */
#define LS_KAFKA_PRODUCE_MIN 3
#define LS_KAFKA_PRODUCE_MAX 11
#define LS_KAFKA_PRODUCE_FLEX 9
#define LS_KAFKA_FETCH_MIN 4
#define LS_KAFKA_FETCH_MAX 17
#define LS_KAFKA_FETCH_FLEX 12
#define LS_KAFKA_LIST_OFFSETS_MIN 1
#define LS_KAFKA_LIST_OFFSETS_MAX 9
#define LS_KAFKA_LIST_OFFSETS_FLEX 6
#define LS_KAFKA_METADATA_MIN 0
#define LS_KAFKA_METADATA_MAX 12
#define LS_KAFKA_METADATA_FLEX 9
#define LS_KAFKA_API_VERSIONS_MIN 0
#define LS_KAFKA_API_VERSIONS_MAX 4
#define LS_KAFKA_API_VERSIONS_FLEX 3
#define LS_KAFKA_CREATE_TOPICS_MIN 2
#define LS_KAFKA_CREATE_TOPICS_MAX 7
#define LS_KAFKA_CREATE_TOPICS_FLEX 5
#define LS_KAFKA_DELETE_TOPICS_MIN 1
#define LS_KAFKA_DELETE_TOPICS_MAX 6
#define LS_KAFKA_DELETE_TOPICS_FLEX 4
#define LS_KAFKA_DELETE_RECORDS_MIN 0
#define LS_KAFKA_DELETE_RECORDS_MAX 2
#define LS_KAFKA_DELETE_RECORDS_FLEX 2
#define LS_KAFKA_INIT_PRODUCER_ID_MIN 0
#define LS_KAFKA_INIT_PRODUCER_ID_MAX 5
#define LS_KAFKA_INIT_PRODUCER_ID_FLEX 2
#define LS_KAFKA_OFFSET_FOR_LEADER_EPOCH_MIN 2
#define LS_KAFKA_OFFSET_FOR_LEADER_EPOCH_MAX 4
#define LS_KAFKA_OFFSET_FOR_LEADER_EPOCH_FLEX 4
#define LS_KAFKA_DESCRIBE_CONFIGS_MIN 1
#define LS_KAFKA_DESCRIBE_CONFIGS_MAX 4
#define LS_KAFKA_DESCRIBE_CONFIGS_FLEX 4
#define LS_KAFKA_ALTER_CONFIGS_MIN 0
#define LS_KAFKA_ALTER_CONFIGS_MAX 2
#define LS_KAFKA_ALTER_CONFIGS_FLEX 2
#define LS_KAFKA_INCREMENTAL_ALTER_CONFIGS_MIN 0
#define LS_KAFKA_INCREMENTAL_ALTER_CONFIGS_MAX 1
#define LS_KAFKA_INCREMENTAL_ALTER_CONFIGS_FLEX 1
#define LS_KAFKA_CREATE_PARTITIONS_MIN 0
#define LS_KAFKA_CREATE_PARTITIONS_MAX 3
#define LS_KAFKA_CREATE_PARTITIONS_FLEX 2
#define LS_KAFKA_DESCRIBE_CLUSTER_MIN 0
#define LS_KAFKA_DESCRIBE_CLUSTER_MAX 1
#define LS_KAFKA_DESCRIBE_CLUSTER_FLEX 0

/* A C string as a wire string view (NULL -> null). */
static inline ls_kstr_t ls_kstr_c(const char *s)
{
    ls_kstr_t k = {s, s ? (int32_t)strlen(s) : -1};
    return k;
}
static inline ls_kstr_t ls_kstr_null(void)
{
    ls_kstr_t k = {NULL, -1};
    return k;
}

/* A zero-copy reference to bytes of a kept chunk (Fetch response records). */
typedef struct ls_kref {
    ls_chunk_t *chunk;
    size_t off, len;
} ls_kref_t;

/* ------------------------------------------------------------------ shared */

typedef struct ls_kafka_LeaderIdAndEpoch {
    int32_t LeaderId;            /* default -1 */
    int32_t LeaderEpoch;         /* default -1 */
} ls_kafka_LeaderIdAndEpoch;

typedef struct ls_kafka_NodeEndpoint {
    int32_t NodeId;
    ls_kstr_t Host;
    int32_t Port;
    ls_kstr_t Rack;              /* nullable */
} ls_kafka_NodeEndpoint;

/* ---------------------------------------------------------- Produce (key 0) */

typedef struct ls_kafka_ProduceRequest_PartitionProduceData {
    int32_t Index;
    ls_kbytes_t Records;         /* raw RecordBatch bytes (nullable); validated by the handler */
} ls_kafka_ProduceRequest_PartitionProduceData;

typedef struct ls_kafka_ProduceRequest_TopicProduceData {
    ls_kstr_t Name;
    ls_kafka_ProduceRequest_PartitionProduceData *PartitionData;
    int32_t NumPartitionData;
} ls_kafka_ProduceRequest_TopicProduceData;

typedef struct ls_kafka_ProduceRequest {
    ls_kstr_t TransactionalId;   /* nullable */
    int16_t Acks;
    int32_t TimeoutMs;
    ls_kafka_ProduceRequest_TopicProduceData *TopicData;
    int32_t NumTopicData;
} ls_kafka_ProduceRequest;

typedef struct ls_kafka_ProduceResponse_BatchIndexAndErrorMessage {
    int32_t BatchIndex;
    ls_kstr_t BatchIndexErrorMessage;   /* nullable */
} ls_kafka_ProduceResponse_BatchIndexAndErrorMessage;

typedef struct ls_kafka_ProduceResponse_PartitionProduceResponse {
    int32_t Index;
    int16_t ErrorCode;
    int64_t BaseOffset;
    int64_t LogAppendTimeMs;     /* v2+, default -1 */
    int64_t LogStartOffset;      /* v5+, default -1 */
    ls_kafka_ProduceResponse_BatchIndexAndErrorMessage *RecordErrors;   /* v8+ */
    int32_t NumRecordErrors;
    ls_kstr_t ErrorMessage;      /* v8+, nullable */
    bool HasCurrentLeader;       /* tagged 0, v10+ */
    ls_kafka_LeaderIdAndEpoch CurrentLeader;
} ls_kafka_ProduceResponse_PartitionProduceResponse;

typedef struct ls_kafka_ProduceResponse_TopicProduceResponse {
    ls_kstr_t Name;
    ls_kafka_ProduceResponse_PartitionProduceResponse *PartitionResponses;
    int32_t NumPartitionResponses;
} ls_kafka_ProduceResponse_TopicProduceResponse;

typedef struct ls_kafka_ProduceResponse {
    ls_kafka_ProduceResponse_TopicProduceResponse *Responses;
    int32_t NumResponses;
    int32_t ThrottleTimeMs;
    ls_kafka_NodeEndpoint *NodeEndpoints;   /* tagged 0, v10+ */
    int32_t NumNodeEndpoints;
} ls_kafka_ProduceResponse;

int ls_kafka_ProduceRequest_decode(ls_kr_t *r, int16_t version, ls_arena_t *a,
                                   ls_kafka_ProduceRequest *m);
void ls_kafka_ProduceRequest_encode(ls_kw_t *w, int16_t version, const ls_kafka_ProduceRequest *m);
int ls_kafka_ProduceResponse_decode(ls_kr_t *r, int16_t version, ls_arena_t *a,
                                    ls_kafka_ProduceResponse *m);
void ls_kafka_ProduceResponse_encode(ls_kw_t *w, int16_t version,
                                     const ls_kafka_ProduceResponse *m);

/* ------------------------------------------------------------ Fetch (key 1) */

typedef struct ls_kafka_FetchRequest_ReplicaState {
    int32_t ReplicaId;           /* default -1 */
    int64_t ReplicaEpoch;        /* default -1 */
} ls_kafka_FetchRequest_ReplicaState;

typedef struct ls_kafka_FetchRequest_FetchPartition {
    int32_t Partition;
    int32_t CurrentLeaderEpoch;  /* v9+, default -1 */
    int64_t FetchOffset;
    int32_t LastFetchedEpoch;    /* v12+, default -1 */
    int64_t LogStartOffset;      /* v5+, default -1 */
    int32_t PartitionMaxBytes;
    ls_uuid_t ReplicaDirectoryId;   /* tagged 0, v17+, default zero */
} ls_kafka_FetchRequest_FetchPartition;

typedef struct ls_kafka_FetchRequest_FetchTopic {
    ls_kstr_t Topic;             /* v0-12 */
    ls_uuid_t TopicId;           /* v13+ */
    ls_kafka_FetchRequest_FetchPartition *Partitions;
    int32_t NumPartitions;
} ls_kafka_FetchRequest_FetchTopic;

typedef struct ls_kafka_FetchRequest_ForgottenTopic {
    ls_kstr_t Topic;             /* v7-12 */
    ls_uuid_t TopicId;           /* v13+ */
    int32_t *Partitions;
    int32_t NumPartitions;
} ls_kafka_FetchRequest_ForgottenTopic;

typedef struct ls_kafka_FetchRequest {
    ls_kstr_t ClusterId;         /* tagged 0, v12+, nullable, default null */
    int32_t ReplicaId;           /* v0-14, default -1 */
    bool HasReplicaState;        /* tagged 1, v15+ */
    ls_kafka_FetchRequest_ReplicaState ReplicaState;
    int32_t MaxWaitMs;
    int32_t MinBytes;
    int32_t MaxBytes;            /* v3+, default 0x7fffffff */
    int8_t IsolationLevel;       /* v4+ */
    int32_t SessionId;           /* v7+, default 0 */
    int32_t SessionEpoch;        /* v7+, default -1 */
    ls_kafka_FetchRequest_FetchTopic *Topics;
    int32_t NumTopics;
    ls_kafka_FetchRequest_ForgottenTopic *ForgottenTopicsData;   /* v7+ */
    int32_t NumForgottenTopicsData;
    ls_kstr_t RackId;            /* v11+, default "" */
} ls_kafka_FetchRequest;

typedef struct ls_kafka_FetchResponse_EpochEndOffset {
    int32_t Epoch;               /* default -1 */
    int64_t EndOffset;           /* default -1 */
} ls_kafka_FetchResponse_EpochEndOffset;

typedef struct ls_kafka_FetchResponse_SnapshotId {
    int64_t EndOffset;           /* default -1 */
    int32_t Epoch;               /* default -1 */
} ls_kafka_FetchResponse_SnapshotId;

typedef struct ls_kafka_FetchResponse_AbortedTransaction {
    int64_t ProducerId;
    int64_t FirstOffset;
} ls_kafka_FetchResponse_AbortedTransaction;

typedef struct ls_kafka_FetchResponse_PartitionData {
    int32_t PartitionIndex;
    int16_t ErrorCode;
    int64_t HighWatermark;
    int64_t LastStableOffset;    /* v4+, default -1 */
    int64_t LogStartOffset;      /* v5+, default -1 */
    bool HasDivergingEpoch;      /* tagged 0, v12+ */
    ls_kafka_FetchResponse_EpochEndOffset DivergingEpoch;
    bool HasCurrentLeader;       /* tagged 1, v12+ */
    ls_kafka_LeaderIdAndEpoch CurrentLeader;
    bool HasSnapshotId;          /* tagged 2, v12+ */
    ls_kafka_FetchResponse_SnapshotId SnapshotId;
    ls_kafka_FetchResponse_AbortedTransaction *AbortedTransactions;   /* v4+, nullable */
    int32_t NumAbortedTransactions;   /* -1 = null */
    int32_t PreferredReadReplica;     /* v11+, default -1 */
    /* Records (nullable bytes). The encoder writes, in order of preference:
     *  - NumRecordRefs > 0: one length prefix for the sum of the refs (compact
     *    for flexible versions), then ls_kw_ref() for each ref — zero copy. The
     *    writer keeps its own chunk references; the caller keeps (and later
     *    releases) the ones in RecordRefs;
     *  - otherwise the Records view (len -1 = null, {NULL,0} = empty).
     * The decoder fills Records (a view) and leaves RecordRefs empty. */
    ls_kref_t *RecordRefs;
    int NumRecordRefs;
    ls_kbytes_t Records;
} ls_kafka_FetchResponse_PartitionData;

typedef struct ls_kafka_FetchResponse_FetchableTopicResponse {
    ls_kstr_t Topic;             /* v0-12 */
    ls_uuid_t TopicId;           /* v13+ */
    ls_kafka_FetchResponse_PartitionData *Partitions;
    int32_t NumPartitions;
} ls_kafka_FetchResponse_FetchableTopicResponse;

typedef struct ls_kafka_FetchResponse {
    int32_t ThrottleTimeMs;
    int16_t ErrorCode;           /* v7+ */
    int32_t SessionId;           /* v7+, default 0 */
    ls_kafka_FetchResponse_FetchableTopicResponse *Responses;
    int32_t NumResponses;
    ls_kafka_NodeEndpoint *NodeEndpoints;   /* tagged 0, v16+ */
    int32_t NumNodeEndpoints;
} ls_kafka_FetchResponse;

int ls_kafka_FetchRequest_decode(ls_kr_t *r, int16_t version, ls_arena_t *a,
                                 ls_kafka_FetchRequest *m);
void ls_kafka_FetchRequest_encode(ls_kw_t *w, int16_t version, const ls_kafka_FetchRequest *m);
int ls_kafka_FetchResponse_decode(ls_kr_t *r, int16_t version, ls_arena_t *a,
                                  ls_kafka_FetchResponse *m);
void ls_kafka_FetchResponse_encode(ls_kw_t *w, int16_t version, const ls_kafka_FetchResponse *m);

/* ------------------------------------------------------ ListOffsets (key 2) */

/* Special Timestamp values (ListOffsetsRequest). */
#define LS_KAFKA_LATEST_TIMESTAMP (-1)
#define LS_KAFKA_EARLIEST_TIMESTAMP (-2)
#define LS_KAFKA_MAX_TIMESTAMP (-3)            /* v7+ */
#define LS_KAFKA_EARLIEST_LOCAL_TIMESTAMP (-4) /* v8+ */
#define LS_KAFKA_LATEST_TIERED_TIMESTAMP (-5)  /* v9+ */

typedef struct ls_kafka_ListOffsetsRequest_ListOffsetsPartition {
    int32_t PartitionIndex;
    int32_t CurrentLeaderEpoch;  /* v4+, default -1 */
    int64_t Timestamp;
} ls_kafka_ListOffsetsRequest_ListOffsetsPartition;

typedef struct ls_kafka_ListOffsetsRequest_ListOffsetsTopic {
    ls_kstr_t Name;
    ls_kafka_ListOffsetsRequest_ListOffsetsPartition *Partitions;
    int32_t NumPartitions;
} ls_kafka_ListOffsetsRequest_ListOffsetsTopic;

typedef struct ls_kafka_ListOffsetsRequest {
    int32_t ReplicaId;
    int8_t IsolationLevel;       /* v2+ */
    ls_kafka_ListOffsetsRequest_ListOffsetsTopic *Topics;
    int32_t NumTopics;
} ls_kafka_ListOffsetsRequest;

typedef struct ls_kafka_ListOffsetsResponse_ListOffsetsPartitionResponse {
    int32_t PartitionIndex;
    int16_t ErrorCode;
    int64_t Timestamp;           /* default -1 */
    int64_t Offset;              /* default -1 */
    int32_t LeaderEpoch;         /* v4+, default -1 */
} ls_kafka_ListOffsetsResponse_ListOffsetsPartitionResponse;

typedef struct ls_kafka_ListOffsetsResponse_ListOffsetsTopicResponse {
    ls_kstr_t Name;
    ls_kafka_ListOffsetsResponse_ListOffsetsPartitionResponse *Partitions;
    int32_t NumPartitions;
} ls_kafka_ListOffsetsResponse_ListOffsetsTopicResponse;

typedef struct ls_kafka_ListOffsetsResponse {
    int32_t ThrottleTimeMs;      /* v2+ */
    ls_kafka_ListOffsetsResponse_ListOffsetsTopicResponse *Topics;
    int32_t NumTopics;
} ls_kafka_ListOffsetsResponse;

int ls_kafka_ListOffsetsRequest_decode(ls_kr_t *r, int16_t version, ls_arena_t *a,
                                       ls_kafka_ListOffsetsRequest *m);
void ls_kafka_ListOffsetsRequest_encode(ls_kw_t *w, int16_t version,
                                        const ls_kafka_ListOffsetsRequest *m);
int ls_kafka_ListOffsetsResponse_decode(ls_kr_t *r, int16_t version, ls_arena_t *a,
                                        ls_kafka_ListOffsetsResponse *m);
void ls_kafka_ListOffsetsResponse_encode(ls_kw_t *w, int16_t version,
                                         const ls_kafka_ListOffsetsResponse *m);

/* --------------------------------------------------------- Metadata (key 3) */

typedef struct ls_kafka_MetadataRequest_MetadataRequestTopic {
    ls_uuid_t TopicId;           /* v10+ */
    ls_kstr_t Name;              /* nullable v10+ */
} ls_kafka_MetadataRequest_MetadataRequestTopic;

typedef struct ls_kafka_MetadataRequest {
    /* v0: empty = all topics. v1+: null (NumTopics -1) = all, empty = none. */
    ls_kafka_MetadataRequest_MetadataRequestTopic *Topics;
    int32_t NumTopics;
    bool AllowAutoTopicCreation;             /* v4+, default true */
    bool IncludeClusterAuthorizedOperations; /* v8-10 */
    bool IncludeTopicAuthorizedOperations;   /* v8+ */
} ls_kafka_MetadataRequest;

typedef struct ls_kafka_MetadataResponse_MetadataResponseBroker {
    int32_t NodeId;
    ls_kstr_t Host;
    int32_t Port;
    ls_kstr_t Rack;              /* v1+, nullable */
} ls_kafka_MetadataResponse_MetadataResponseBroker;

typedef struct ls_kafka_MetadataResponse_MetadataResponsePartition {
    int16_t ErrorCode;
    int32_t PartitionIndex;
    int32_t LeaderId;
    int32_t LeaderEpoch;         /* v7+, default -1 */
    int32_t *ReplicaNodes;
    int32_t NumReplicaNodes;
    int32_t *IsrNodes;
    int32_t NumIsrNodes;
    int32_t *OfflineReplicas;    /* v5+ */
    int32_t NumOfflineReplicas;
} ls_kafka_MetadataResponse_MetadataResponsePartition;

typedef struct ls_kafka_MetadataResponse_MetadataResponseTopic {
    int16_t ErrorCode;
    ls_kstr_t Name;              /* nullable v12+ */
    ls_uuid_t TopicId;           /* v10+ */
    bool IsInternal;             /* v1+ */
    ls_kafka_MetadataResponse_MetadataResponsePartition *Partitions;
    int32_t NumPartitions;
    int32_t TopicAuthorizedOperations;   /* v8+, default INT32_MIN */
} ls_kafka_MetadataResponse_MetadataResponseTopic;

typedef struct ls_kafka_MetadataResponse {
    int32_t ThrottleTimeMs;      /* v3+ */
    ls_kafka_MetadataResponse_MetadataResponseBroker *Brokers;
    int32_t NumBrokers;
    ls_kstr_t ClusterId;         /* v2+, nullable */
    int32_t ControllerId;        /* v1+, default -1 */
    ls_kafka_MetadataResponse_MetadataResponseTopic *Topics;
    int32_t NumTopics;
    int32_t ClusterAuthorizedOperations; /* v8-10, default INT32_MIN */
} ls_kafka_MetadataResponse;

int ls_kafka_MetadataRequest_decode(ls_kr_t *r, int16_t version, ls_arena_t *a,
                                    ls_kafka_MetadataRequest *m);
void ls_kafka_MetadataRequest_encode(ls_kw_t *w, int16_t version,
                                     const ls_kafka_MetadataRequest *m);
int ls_kafka_MetadataResponse_decode(ls_kr_t *r, int16_t version, ls_arena_t *a,
                                     ls_kafka_MetadataResponse *m);
void ls_kafka_MetadataResponse_encode(ls_kw_t *w, int16_t version,
                                      const ls_kafka_MetadataResponse *m);

/* ----------------------------------------------------- ApiVersions (key 18) */

typedef struct ls_kafka_ApiVersionsRequest {
    ls_kstr_t ClientSoftwareName;      /* v3+ */
    ls_kstr_t ClientSoftwareVersion;   /* v3+ */
} ls_kafka_ApiVersionsRequest;

typedef struct ls_kafka_ApiVersionsResponse_ApiVersion {
    int16_t ApiKey;
    int16_t MinVersion;
    int16_t MaxVersion;
} ls_kafka_ApiVersionsResponse_ApiVersion;

typedef struct ls_kafka_ApiVersionsResponse_SupportedFeatureKey {
    ls_kstr_t Name;
    int16_t MinVersion;
    int16_t MaxVersion;
} ls_kafka_ApiVersionsResponse_SupportedFeatureKey;

typedef struct ls_kafka_ApiVersionsResponse_FinalizedFeatureKey {
    ls_kstr_t Name;
    int16_t MaxVersionLevel;
    int16_t MinVersionLevel;
} ls_kafka_ApiVersionsResponse_FinalizedFeatureKey;

typedef struct ls_kafka_ApiVersionsResponse {
    int16_t ErrorCode;
    ls_kafka_ApiVersionsResponse_ApiVersion *ApiKeys;
    int32_t NumApiKeys;
    int32_t ThrottleTimeMs;                  /* v1+ */
    ls_kafka_ApiVersionsResponse_SupportedFeatureKey *SupportedFeatures; /* tagged 0, v3+ */
    int32_t NumSupportedFeatures;
    int64_t FinalizedFeaturesEpoch;          /* tagged 1, v3+, default -1 */
    ls_kafka_ApiVersionsResponse_FinalizedFeatureKey *FinalizedFeatures; /* tagged 2, v3+ */
    int32_t NumFinalizedFeatures;
    bool ZkMigrationReady;                   /* tagged 3, v3+, default false */
} ls_kafka_ApiVersionsResponse;

int ls_kafka_ApiVersionsRequest_decode(ls_kr_t *r, int16_t version, ls_arena_t *a,
                                       ls_kafka_ApiVersionsRequest *m);
void ls_kafka_ApiVersionsRequest_encode(ls_kw_t *w, int16_t version,
                                        const ls_kafka_ApiVersionsRequest *m);
int ls_kafka_ApiVersionsResponse_decode(ls_kr_t *r, int16_t version, ls_arena_t *a,
                                        ls_kafka_ApiVersionsResponse *m);
void ls_kafka_ApiVersionsResponse_encode(ls_kw_t *w, int16_t version,
                                         const ls_kafka_ApiVersionsResponse *m);

/* ---------------------------------------------------- CreateTopics (key 19) */

typedef struct ls_kafka_CreateTopicsRequest_CreatableReplicaAssignment {
    int32_t PartitionIndex;
    int32_t *BrokerIds;
    int32_t NumBrokerIds;
} ls_kafka_CreateTopicsRequest_CreatableReplicaAssignment;

typedef struct ls_kafka_CreateTopicsRequest_CreatableTopicConfig {
    ls_kstr_t Name;
    ls_kstr_t Value;             /* nullable */
} ls_kafka_CreateTopicsRequest_CreatableTopicConfig;

typedef struct ls_kafka_CreateTopicsRequest_CreatableTopic {
    ls_kstr_t Name;
    int32_t NumPartitions;       /* -1: default */
    int16_t ReplicationFactor;   /* -1: default */
    ls_kafka_CreateTopicsRequest_CreatableReplicaAssignment *Assignments;
    int32_t NumAssignments;
    ls_kafka_CreateTopicsRequest_CreatableTopicConfig *Configs;
    int32_t NumConfigs;
} ls_kafka_CreateTopicsRequest_CreatableTopic;

typedef struct ls_kafka_CreateTopicsRequest {
    ls_kafka_CreateTopicsRequest_CreatableTopic *Topics;
    int32_t NumTopics;
    int32_t TimeoutMs;           /* JSON spelling: timeoutMs */
    bool ValidateOnly;           /* JSON spelling: validateOnly */
} ls_kafka_CreateTopicsRequest;

typedef struct ls_kafka_CreateTopicsResponse_CreatableTopicConfigs {
    ls_kstr_t Name;
    ls_kstr_t Value;             /* nullable */
    bool ReadOnly;
    int8_t ConfigSource;         /* default -1 */
    bool IsSensitive;
} ls_kafka_CreateTopicsResponse_CreatableTopicConfigs;

typedef struct ls_kafka_CreateTopicsResponse_CreatableTopicResult {
    ls_kstr_t Name;
    ls_uuid_t TopicId;           /* v7+ */
    int16_t ErrorCode;
    ls_kstr_t ErrorMessage;      /* v1+, nullable */
    int16_t TopicConfigErrorCode;/* tagged 0, v5+, default 0 */
    int32_t NumPartitions;       /* v5+, default -1 */
    int16_t ReplicationFactor;   /* v5+, default -1 */
    ls_kafka_CreateTopicsResponse_CreatableTopicConfigs *Configs;   /* v5+, nullable */
    int32_t NumConfigs;          /* -1 = null */
} ls_kafka_CreateTopicsResponse_CreatableTopicResult;

typedef struct ls_kafka_CreateTopicsResponse {
    int32_t ThrottleTimeMs;      /* v2+ */
    ls_kafka_CreateTopicsResponse_CreatableTopicResult *Topics;
    int32_t NumTopics;
} ls_kafka_CreateTopicsResponse;

int ls_kafka_CreateTopicsRequest_decode(ls_kr_t *r, int16_t version, ls_arena_t *a,
                                        ls_kafka_CreateTopicsRequest *m);
void ls_kafka_CreateTopicsRequest_encode(ls_kw_t *w, int16_t version,
                                         const ls_kafka_CreateTopicsRequest *m);
int ls_kafka_CreateTopicsResponse_decode(ls_kr_t *r, int16_t version, ls_arena_t *a,
                                         ls_kafka_CreateTopicsResponse *m);
void ls_kafka_CreateTopicsResponse_encode(ls_kw_t *w, int16_t version,
                                          const ls_kafka_CreateTopicsResponse *m);

/* ---------------------------------------------------- DeleteTopics (key 20) */

typedef struct ls_kafka_DeleteTopicsRequest_DeleteTopicState {
    ls_kstr_t Name;              /* nullable */
    ls_uuid_t TopicId;
} ls_kafka_DeleteTopicsRequest_DeleteTopicState;

typedef struct ls_kafka_DeleteTopicsRequest {
    ls_kafka_DeleteTopicsRequest_DeleteTopicState *Topics;   /* v6+ */
    int32_t NumTopics;
    ls_kstr_t *TopicNames;                                   /* v0-5 */
    int32_t NumTopicNames;
    int32_t TimeoutMs;
} ls_kafka_DeleteTopicsRequest;

typedef struct ls_kafka_DeleteTopicsResponse_DeletableTopicResult {
    ls_kstr_t Name;              /* nullable v6+ */
    ls_uuid_t TopicId;           /* v6+ */
    int16_t ErrorCode;
    ls_kstr_t ErrorMessage;      /* v5+, nullable */
} ls_kafka_DeleteTopicsResponse_DeletableTopicResult;

typedef struct ls_kafka_DeleteTopicsResponse {
    int32_t ThrottleTimeMs;      /* v1+ */
    ls_kafka_DeleteTopicsResponse_DeletableTopicResult *Responses;
    int32_t NumResponses;
} ls_kafka_DeleteTopicsResponse;

int ls_kafka_DeleteTopicsRequest_decode(ls_kr_t *r, int16_t version, ls_arena_t *a,
                                        ls_kafka_DeleteTopicsRequest *m);
void ls_kafka_DeleteTopicsRequest_encode(ls_kw_t *w, int16_t version,
                                         const ls_kafka_DeleteTopicsRequest *m);
int ls_kafka_DeleteTopicsResponse_decode(ls_kr_t *r, int16_t version, ls_arena_t *a,
                                         ls_kafka_DeleteTopicsResponse *m);
void ls_kafka_DeleteTopicsResponse_encode(ls_kw_t *w, int16_t version,
                                          const ls_kafka_DeleteTopicsResponse *m);

/* -------------------------------------------------- InitProducerId (key 22) */

typedef struct ls_kafka_InitProducerIdRequest {
    ls_kstr_t TransactionalId;   /* nullable */
    int32_t TransactionTimeoutMs;
    int64_t ProducerId;          /* v3+, default -1 */
    int16_t ProducerEpoch;       /* v3+, default -1 */
} ls_kafka_InitProducerIdRequest;

typedef struct ls_kafka_InitProducerIdResponse {
    int32_t ThrottleTimeMs;
    int16_t ErrorCode;
    int64_t ProducerId;          /* default -1 */
    int16_t ProducerEpoch;
} ls_kafka_InitProducerIdResponse;

int ls_kafka_InitProducerIdRequest_decode(ls_kr_t *r, int16_t version, ls_arena_t *a,
                                          ls_kafka_InitProducerIdRequest *m);
void ls_kafka_InitProducerIdRequest_encode(ls_kw_t *w, int16_t version,
                                           const ls_kafka_InitProducerIdRequest *m);
int ls_kafka_InitProducerIdResponse_decode(ls_kr_t *r, int16_t version, ls_arena_t *a,
                                           ls_kafka_InitProducerIdResponse *m);
void ls_kafka_InitProducerIdResponse_encode(ls_kw_t *w, int16_t version,
                                            const ls_kafka_InitProducerIdResponse *m);

/* -------------------------------------------- OffsetForLeaderEpoch (key 23) */

typedef struct ls_kafka_OffsetForLeaderEpochRequest_OffsetForLeaderPartition {
    int32_t Partition;
    int32_t CurrentLeaderEpoch;  /* v2+, default -1 */
    int32_t LeaderEpoch;
} ls_kafka_OffsetForLeaderEpochRequest_OffsetForLeaderPartition;

typedef struct ls_kafka_OffsetForLeaderEpochRequest_OffsetForLeaderTopic {
    ls_kstr_t Topic;
    ls_kafka_OffsetForLeaderEpochRequest_OffsetForLeaderPartition *Partitions;
    int32_t NumPartitions;
} ls_kafka_OffsetForLeaderEpochRequest_OffsetForLeaderTopic;

typedef struct ls_kafka_OffsetForLeaderEpochRequest {
    int32_t ReplicaId;           /* v3+, default -2 */
    ls_kafka_OffsetForLeaderEpochRequest_OffsetForLeaderTopic *Topics;
    int32_t NumTopics;
} ls_kafka_OffsetForLeaderEpochRequest;

typedef struct ls_kafka_OffsetForLeaderEpochResponse_EpochEndOffset {
    int16_t ErrorCode;
    int32_t Partition;
    int32_t LeaderEpoch;         /* v1+, default -1 */
    int64_t EndOffset;           /* default -1 */
} ls_kafka_OffsetForLeaderEpochResponse_EpochEndOffset;

typedef struct ls_kafka_OffsetForLeaderEpochResponse_OffsetForLeaderTopicResult {
    ls_kstr_t Topic;
    ls_kafka_OffsetForLeaderEpochResponse_EpochEndOffset *Partitions;
    int32_t NumPartitions;
} ls_kafka_OffsetForLeaderEpochResponse_OffsetForLeaderTopicResult;

typedef struct ls_kafka_OffsetForLeaderEpochResponse {
    int32_t ThrottleTimeMs;      /* v2+ */
    ls_kafka_OffsetForLeaderEpochResponse_OffsetForLeaderTopicResult *Topics;
    int32_t NumTopics;
} ls_kafka_OffsetForLeaderEpochResponse;

int ls_kafka_OffsetForLeaderEpochRequest_decode(ls_kr_t *r, int16_t version, ls_arena_t *a,
                                                ls_kafka_OffsetForLeaderEpochRequest *m);
void ls_kafka_OffsetForLeaderEpochRequest_encode(ls_kw_t *w, int16_t version,
                                                 const ls_kafka_OffsetForLeaderEpochRequest *m);
int ls_kafka_OffsetForLeaderEpochResponse_decode(ls_kr_t *r, int16_t version, ls_arena_t *a,
                                                 ls_kafka_OffsetForLeaderEpochResponse *m);
void ls_kafka_OffsetForLeaderEpochResponse_encode(ls_kw_t *w, int16_t version,
                                                  const ls_kafka_OffsetForLeaderEpochResponse *m);

/* ------------------------------------------------- DescribeConfigs (key 32) */

/* ResourceType (KIP-133 / AdminClient ConfigResource.Type). */
#define LS_KAFKA_RESOURCE_TOPIC 2
#define LS_KAFKA_RESOURCE_BROKER 4
#define LS_KAFKA_RESOURCE_BROKER_LOGGER 8
/* ConfigSource (DescribeConfigsResponse v1+). */
#define LS_KAFKA_CONFIG_SOURCE_UNKNOWN 0
#define LS_KAFKA_CONFIG_SOURCE_TOPIC_CONFIG 1
#define LS_KAFKA_CONFIG_SOURCE_DYNAMIC_BROKER_CONFIG 2
#define LS_KAFKA_CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG 3
#define LS_KAFKA_CONFIG_SOURCE_STATIC_BROKER_CONFIG 4
#define LS_KAFKA_CONFIG_SOURCE_DEFAULT_CONFIG 5
/* ConfigType (v3+). */
#define LS_KAFKA_CONFIG_TYPE_UNKNOWN 0
#define LS_KAFKA_CONFIG_TYPE_BOOLEAN 1
#define LS_KAFKA_CONFIG_TYPE_STRING 2
#define LS_KAFKA_CONFIG_TYPE_INT 3
#define LS_KAFKA_CONFIG_TYPE_SHORT 4
#define LS_KAFKA_CONFIG_TYPE_LONG 5
#define LS_KAFKA_CONFIG_TYPE_DOUBLE 6
#define LS_KAFKA_CONFIG_TYPE_LIST 7
#define LS_KAFKA_CONFIG_TYPE_CLASS 8
#define LS_KAFKA_CONFIG_TYPE_PASSWORD 9

typedef struct ls_kafka_DescribeConfigsRequest_DescribeConfigsResource {
    int8_t ResourceType;
    ls_kstr_t ResourceName;
    ls_kstr_t *ConfigurationKeys;   /* nullable: null = all keys */
    int32_t NumConfigurationKeys;   /* -1 = null */
} ls_kafka_DescribeConfigsRequest_DescribeConfigsResource;

typedef struct ls_kafka_DescribeConfigsRequest {
    ls_kafka_DescribeConfigsRequest_DescribeConfigsResource *Resources;
    int32_t NumResources;
    bool IncludeSynonyms;        /* v1+ (spelled IncludeSynoyms in older JSON) */
    bool IncludeDocumentation;   /* v3+ */
} ls_kafka_DescribeConfigsRequest;

typedef struct ls_kafka_DescribeConfigsResponse_DescribeConfigsSynonym {
    ls_kstr_t Name;
    ls_kstr_t Value;             /* nullable */
    int8_t Source;
} ls_kafka_DescribeConfigsResponse_DescribeConfigsSynonym;

typedef struct ls_kafka_DescribeConfigsResponse_DescribeConfigsResourceResult {
    ls_kstr_t Name;
    ls_kstr_t Value;             /* nullable */
    bool ReadOnly;
    int8_t ConfigSource;         /* v1+, default -1 */
    bool IsSensitive;
    ls_kafka_DescribeConfigsResponse_DescribeConfigsSynonym *Synonyms;   /* v1+ */
    int32_t NumSynonyms;
    int8_t ConfigType;           /* v3+ */
    ls_kstr_t Documentation;     /* v3+, nullable */
} ls_kafka_DescribeConfigsResponse_DescribeConfigsResourceResult;

typedef struct ls_kafka_DescribeConfigsResponse_DescribeConfigsResult {
    int16_t ErrorCode;
    ls_kstr_t ErrorMessage;      /* nullable */
    int8_t ResourceType;
    ls_kstr_t ResourceName;
    ls_kafka_DescribeConfigsResponse_DescribeConfigsResourceResult *Configs;
    int32_t NumConfigs;
} ls_kafka_DescribeConfigsResponse_DescribeConfigsResult;

typedef struct ls_kafka_DescribeConfigsResponse {
    int32_t ThrottleTimeMs;
    ls_kafka_DescribeConfigsResponse_DescribeConfigsResult *Results;
    int32_t NumResults;
} ls_kafka_DescribeConfigsResponse;

int ls_kafka_DescribeConfigsRequest_decode(ls_kr_t *r, int16_t version, ls_arena_t *a,
                                           ls_kafka_DescribeConfigsRequest *m);
void ls_kafka_DescribeConfigsRequest_encode(ls_kw_t *w, int16_t version,
                                            const ls_kafka_DescribeConfigsRequest *m);
int ls_kafka_DescribeConfigsResponse_decode(ls_kr_t *r, int16_t version, ls_arena_t *a,
                                            ls_kafka_DescribeConfigsResponse *m);
void ls_kafka_DescribeConfigsResponse_encode(ls_kw_t *w, int16_t version,
                                             const ls_kafka_DescribeConfigsResponse *m);

/* ------------------------- AlterConfigs (key 33), IncrementalAlterConfigs (44) */

/* IncrementalAlterConfigs ConfigOperation (KIP-339). */
#define LS_KAFKA_CONFIG_OP_SET 0
#define LS_KAFKA_CONFIG_OP_DELETE 1
#define LS_KAFKA_CONFIG_OP_APPEND 2
#define LS_KAFKA_CONFIG_OP_SUBTRACT 3

typedef struct ls_kafka_AlterConfigsRequest_AlterableConfig {
    ls_kstr_t Name;
    ls_kstr_t Value;             /* nullable */
} ls_kafka_AlterConfigsRequest_AlterableConfig;

typedef struct ls_kafka_AlterConfigsRequest_AlterConfigsResource {
    int8_t ResourceType;
    ls_kstr_t ResourceName;
    ls_kafka_AlterConfigsRequest_AlterableConfig *Configs;
    int32_t NumConfigs;
} ls_kafka_AlterConfigsRequest_AlterConfigsResource;

typedef struct ls_kafka_AlterConfigsRequest {
    ls_kafka_AlterConfigsRequest_AlterConfigsResource *Resources;
    int32_t NumResources;
    bool ValidateOnly;
} ls_kafka_AlterConfigsRequest;

typedef struct ls_kafka_IncrementalAlterConfigsRequest_AlterableConfig {
    ls_kstr_t Name;
    int8_t ConfigOperation;      /* LS_KAFKA_CONFIG_OP_* */
    ls_kstr_t Value;             /* nullable */
} ls_kafka_IncrementalAlterConfigsRequest_AlterableConfig;

typedef struct ls_kafka_IncrementalAlterConfigsRequest_AlterConfigsResource {
    int8_t ResourceType;
    ls_kstr_t ResourceName;
    ls_kafka_IncrementalAlterConfigsRequest_AlterableConfig *Configs;
    int32_t NumConfigs;
} ls_kafka_IncrementalAlterConfigsRequest_AlterConfigsResource;

typedef struct ls_kafka_IncrementalAlterConfigsRequest {
    ls_kafka_IncrementalAlterConfigsRequest_AlterConfigsResource *Resources;
    int32_t NumResources;
    bool ValidateOnly;
} ls_kafka_IncrementalAlterConfigsRequest;

/* Both responses have this shape (AlterConfigsResourceResponse). */
typedef struct ls_kafka_AlterConfigsResourceResponse {
    int16_t ErrorCode;
    ls_kstr_t ErrorMessage;      /* nullable */
    int8_t ResourceType;
    ls_kstr_t ResourceName;
} ls_kafka_AlterConfigsResourceResponse;

typedef struct ls_kafka_AlterConfigsResponse {
    int32_t ThrottleTimeMs;
    ls_kafka_AlterConfigsResourceResponse *Responses;
    int32_t NumResponses;
} ls_kafka_AlterConfigsResponse;
typedef ls_kafka_AlterConfigsResponse ls_kafka_IncrementalAlterConfigsResponse;

int ls_kafka_AlterConfigsRequest_decode(ls_kr_t *r, int16_t version, ls_arena_t *a,
                                        ls_kafka_AlterConfigsRequest *m);
void ls_kafka_AlterConfigsRequest_encode(ls_kw_t *w, int16_t version,
                                         const ls_kafka_AlterConfigsRequest *m);
int ls_kafka_AlterConfigsResponse_decode(ls_kr_t *r, int16_t version, ls_arena_t *a,
                                         ls_kafka_AlterConfigsResponse *m);
void ls_kafka_AlterConfigsResponse_encode(ls_kw_t *w, int16_t version,
                                          const ls_kafka_AlterConfigsResponse *m);
int ls_kafka_IncrementalAlterConfigsRequest_decode(ls_kr_t *r, int16_t version, ls_arena_t *a,
                                                   ls_kafka_IncrementalAlterConfigsRequest *m);
void ls_kafka_IncrementalAlterConfigsRequest_encode(
    ls_kw_t *w, int16_t version, const ls_kafka_IncrementalAlterConfigsRequest *m);
int ls_kafka_IncrementalAlterConfigsResponse_decode(ls_kr_t *r, int16_t version, ls_arena_t *a,
                                                    ls_kafka_IncrementalAlterConfigsResponse *m);
void ls_kafka_IncrementalAlterConfigsResponse_encode(
    ls_kw_t *w, int16_t version, const ls_kafka_IncrementalAlterConfigsResponse *m);

/* ------------------------------------------------ CreatePartitions (key 37) */

typedef struct ls_kafka_CreatePartitionsRequest_CreatePartitionsAssignment {
    int32_t *BrokerIds;
    int32_t NumBrokerIds;
} ls_kafka_CreatePartitionsRequest_CreatePartitionsAssignment;

typedef struct ls_kafka_CreatePartitionsRequest_CreatePartitionsTopic {
    ls_kstr_t Name;
    int32_t Count;
    ls_kafka_CreatePartitionsRequest_CreatePartitionsAssignment *Assignments;   /* nullable */
    int32_t NumAssignments;      /* -1 = null */
} ls_kafka_CreatePartitionsRequest_CreatePartitionsTopic;

typedef struct ls_kafka_CreatePartitionsRequest {
    ls_kafka_CreatePartitionsRequest_CreatePartitionsTopic *Topics;
    int32_t NumTopics;
    int32_t TimeoutMs;
    bool ValidateOnly;
} ls_kafka_CreatePartitionsRequest;

typedef struct ls_kafka_CreatePartitionsResponse_CreatePartitionsTopicResult {
    ls_kstr_t Name;
    int16_t ErrorCode;
    ls_kstr_t ErrorMessage;      /* nullable */
} ls_kafka_CreatePartitionsResponse_CreatePartitionsTopicResult;

typedef struct ls_kafka_CreatePartitionsResponse {
    int32_t ThrottleTimeMs;
    ls_kafka_CreatePartitionsResponse_CreatePartitionsTopicResult *Results;
    int32_t NumResults;
} ls_kafka_CreatePartitionsResponse;

int ls_kafka_CreatePartitionsRequest_decode(ls_kr_t *r, int16_t version, ls_arena_t *a,
                                            ls_kafka_CreatePartitionsRequest *m);
void ls_kafka_CreatePartitionsRequest_encode(ls_kw_t *w, int16_t version,
                                             const ls_kafka_CreatePartitionsRequest *m);
int ls_kafka_CreatePartitionsResponse_decode(ls_kr_t *r, int16_t version, ls_arena_t *a,
                                             ls_kafka_CreatePartitionsResponse *m);
void ls_kafka_CreatePartitionsResponse_encode(ls_kw_t *w, int16_t version,
                                              const ls_kafka_CreatePartitionsResponse *m);

/* ------------------------------------------------- DescribeCluster (key 60) */

typedef struct ls_kafka_DescribeClusterRequest {
    bool IncludeClusterAuthorizedOperations;
    int8_t EndpointType;         /* v1+, default 1 (brokers) */
} ls_kafka_DescribeClusterRequest;

typedef struct ls_kafka_DescribeClusterResponse_DescribeClusterBroker {
    int32_t BrokerId;
    ls_kstr_t Host;
    int32_t Port;
    ls_kstr_t Rack;              /* nullable */
} ls_kafka_DescribeClusterResponse_DescribeClusterBroker;

typedef struct ls_kafka_DescribeClusterResponse {
    int32_t ThrottleTimeMs;
    int16_t ErrorCode;
    ls_kstr_t ErrorMessage;      /* nullable */
    int8_t EndpointType;         /* v1+, default 1 */
    ls_kstr_t ClusterId;
    int32_t ControllerId;        /* default -1 */
    ls_kafka_DescribeClusterResponse_DescribeClusterBroker *Brokers;
    int32_t NumBrokers;
    int32_t ClusterAuthorizedOperations;   /* default INT32_MIN */
} ls_kafka_DescribeClusterResponse;

int ls_kafka_DescribeClusterRequest_decode(ls_kr_t *r, int16_t version, ls_arena_t *a,
                                           ls_kafka_DescribeClusterRequest *m);
void ls_kafka_DescribeClusterRequest_encode(ls_kw_t *w, int16_t version,
                                            const ls_kafka_DescribeClusterRequest *m);
int ls_kafka_DescribeClusterResponse_decode(ls_kr_t *r, int16_t version, ls_arena_t *a,
                                            ls_kafka_DescribeClusterResponse *m);
void ls_kafka_DescribeClusterResponse_encode(ls_kw_t *w, int16_t version,
                                             const ls_kafka_DescribeClusterResponse *m);

/* --------------------------------------------------- DeleteRecords (key 21) */

typedef struct ls_kafka_DeleteRecordsRequest_DeleteRecordsPartition {
    int32_t PartitionIndex;
    int64_t Offset;              /* -1: the high watermark */
} ls_kafka_DeleteRecordsRequest_DeleteRecordsPartition;

typedef struct ls_kafka_DeleteRecordsRequest_DeleteRecordsTopic {
    ls_kstr_t Name;
    ls_kafka_DeleteRecordsRequest_DeleteRecordsPartition *Partitions;
    int32_t NumPartitions;
} ls_kafka_DeleteRecordsRequest_DeleteRecordsTopic;

typedef struct ls_kafka_DeleteRecordsRequest {
    ls_kafka_DeleteRecordsRequest_DeleteRecordsTopic *Topics;
    int32_t NumTopics;
    int32_t TimeoutMs;
} ls_kafka_DeleteRecordsRequest;

typedef struct ls_kafka_DeleteRecordsResponse_DeleteRecordsPartitionResult {
    int32_t PartitionIndex;
    int64_t LowWatermark;
    int16_t ErrorCode;
} ls_kafka_DeleteRecordsResponse_DeleteRecordsPartitionResult;

typedef struct ls_kafka_DeleteRecordsResponse_DeleteRecordsTopicResult {
    ls_kstr_t Name;
    ls_kafka_DeleteRecordsResponse_DeleteRecordsPartitionResult *Partitions;
    int32_t NumPartitions;
} ls_kafka_DeleteRecordsResponse_DeleteRecordsTopicResult;

typedef struct ls_kafka_DeleteRecordsResponse {
    int32_t ThrottleTimeMs;
    ls_kafka_DeleteRecordsResponse_DeleteRecordsTopicResult *Topics;
    int32_t NumTopics;
} ls_kafka_DeleteRecordsResponse;

int ls_kafka_DeleteRecordsRequest_decode(ls_kr_t *r, int16_t version, ls_arena_t *a,
                                         ls_kafka_DeleteRecordsRequest *m);
void ls_kafka_DeleteRecordsRequest_encode(ls_kw_t *w, int16_t version,
                                          const ls_kafka_DeleteRecordsRequest *m);
int ls_kafka_DeleteRecordsResponse_decode(ls_kr_t *r, int16_t version, ls_arena_t *a,
                                          ls_kafka_DeleteRecordsResponse *m);
void ls_kafka_DeleteRecordsResponse_encode(ls_kw_t *w, int16_t version,
                                           const ls_kafka_DeleteRecordsResponse *m);

/* Downgrades an error code to one the request version can carry, as Kafka
 * does: KAFKA_STORAGE_ERROR (56) becomes NOT_LEADER_OR_FOLLOWER (6) for
 * Produce < v4 and Fetch < v6; UNKNOWN_TOPIC_ID (100) becomes
 * UNKNOWN_TOPIC_OR_PARTITION (3) for Fetch < v13. Other codes pass through. */
int16_t ls_kafka_error_for_version(int16_t api_key, int16_t version, int16_t err);

/* ------------------------------- topic configuration (h_configs.c) -----
 * Shared by DescribeConfigs and CreateTopics (v5+ returns the new topic's
 * configuration). Kafka topic configs are stored verbatim as stream config
 * properties; keys under "lakestream." are Lakestream's own and unchecked. */
struct ls_prop;
struct ls_config;
/* Describes a topic's configuration into an arena array: every Kafka topic
 * config with its effective value and ConfigSource (TOPIC_CONFIG for stored
 * overrides, STATIC_BROKER_CONFIG when a non-default broker setting supplies
 * it, DEFAULT_CONFIG otherwise), every lakestream.table.* policy field with
 * its resolved value and layer (h_configs.c), then any other stored override.
 * keys filters the result (nkeys < 0: everything). Returns the number of
 * entries. */
struct ls_kafka_services;
int32_t ls_kafka_topic_configs(ls_arena_t *a, struct ls_kafka_services *b, const char *ns,
                               const struct ls_prop *overrides, int noverrides,
                               const ls_kstr_t *keys, int32_t nkeys, bool synonyms, bool docs,
                               ls_kafka_DescribeConfigsResponse_DescribeConfigsResourceResult **out);
/* A stream's config set is about to change from before[0..nbefore) (NULL: the
 * stream is new) to after[0..*nafter): checks the table policy it resolves to
 * (with the namespace and cluster layers: the table name is valid and not
 * the table of another topic of the namespace), and sets or removes the
 * broker-kept lakestream.table.enabled.since in after (room for one more
 * entry; its value may live in since_buf). 0, or -1 with a message naming
 * the key in err. Any thread. */
int ls_kafka_topic_policy_apply(struct ls_kafka_services *b, const char *ns, const char *name,
                                const struct ls_prop *before, int nbefore, struct ls_prop *after,
                                int *nafter, char *since_buf, size_t since_cap, char *err,
                                int errlen);
/* The replication factor a topic was created with (CreateTopics), kept by the
 * broker as a read-only topic config: durability comes from the object store,
 * but tools compare the factor they asked for with what Metadata reports, so
 * Metadata lists that many distinct live brokers as replicas (fewer when fewer
 * brokers are live). Absent: 1. */
#define LS_KAFKA_RF_KEY "lakestream.replication.factor"
/* Validates one topic config for CreateTopics: known name (or "lakestream."
 * prefix) and a value of the right type. 0, or -1 with a message in err. */
int ls_kafka_topic_config_check(const char *name, const char *value, char *err, int errlen);

/* -------------------------------------------- helpers shared by msg_*.c ---
 * Not for handlers: they use the typed functions above. */

/* Fails r with "unsupported version" unless min <= v <= max. */
bool ls_kmsg_version_ok(ls_kr_t *r, int16_t v, int16_t min, int16_t max);
/* Array count; a null array is an error unless nullable (then -1). */
int32_t ls_kmsg_arrlen(ls_kr_t *r, bool flex, size_t min_elem, bool nullable, const char *what);
/* Zeroed arena array of n elements (NULL when n <= 0). */
void *ls_kmsg_alloc(ls_arena_t *a, int32_t n, size_t elem);
/* Non-nullable string: null on the wire is an error naming `what`. */
ls_kstr_t ls_kmsg_str(ls_kr_t *r, bool flex, const char *what);
/* Writes a string as is (nullable field) / with null written as "" (non-nullable). */
void ls_kmsg_wstr(ls_kw_t *w, bool flex, ls_kstr_t s);
void ls_kmsg_wstr_nn(ls_kw_t *w, bool flex, ls_kstr_t s);
/* []int32 and []string fields. */
int32_t *ls_kmsg_i32s(ls_kr_t *r, bool flex, ls_arena_t *a, bool nullable, int32_t *n,
                      const char *what);
void ls_kmsg_wi32s(ls_kw_t *w, bool flex, const int32_t *v, int32_t n);
ls_kstr_t *ls_kmsg_strs(ls_kr_t *r, bool flex, ls_arena_t *a, bool nullable, int32_t *n,
                        const char *what);
void ls_kmsg_wstrs(ls_kw_t *w, bool flex, const ls_kstr_t *v, int32_t n);
/* Tagged-field sections with known tags:
 *   uint32_t n = ls_kmsg_tags_begin(r, flex);
 *   for (uint32_t i = 0; i < n && !r->err; i++) {
 *       ls_kr_t sub; uint32_t tag = ls_kmsg_tag_next(r, &sub);
 *       switch (tag) { case 0: ... read from &sub ...; }
 *       ls_kmsg_tag_end(r, &sub);
 *   }
 * Unknown tags are skipped (their bytes were consumed by tag_next). */
uint32_t ls_kmsg_tags_begin(ls_kr_t *r, bool flex);
uint32_t ls_kmsg_tag_next(ls_kr_t *r, ls_kr_t *sub);
void ls_kmsg_tag_end(ls_kr_t *r, ls_kr_t *sub);
/* Writes one tagged field whose payload was built in `payload` (copied bytes only). */
void ls_kmsg_wtag(ls_kw_t *w, uint32_t tag, const ls_kw_t *payload);
/* NodeEndpoint arrays (Produce v10+, Fetch v16+ tagged fields; always flexible). */
ls_kafka_NodeEndpoint *ls_kmsg_node_endpoints(ls_kr_t *r, ls_arena_t *a, int32_t *n);
void ls_kmsg_wnode_endpoints(ls_kw_t *w, const ls_kafka_NodeEndpoint *v, int32_t n);

#endif
