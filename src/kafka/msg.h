/* Kafka request/response messages: the generated structs and codecs
 * (kafka/msg_gen.h, from the descriptions in src/kafka/messages/; see
 * docs/ARCHITECTURE.md "Kafka messages"), plus the protocol constants and
 * helpers the handlers share.
 *
 * Source of truth for the descriptions: apache/kafka clients/src/main/
 * resources/common/message/<Name>{Request,Response}.json (validVersions,
 * flexibleVersions, per-field versions, nullableVersions, tagged fields). */
#ifndef LS_KAFKA_MSG_H
#define LS_KAFKA_MSG_H
#include <stdbool.h>
#include <stdint.h>

#include "base/status.h"
#include "kafka/msg_gen.h"

/* Special Timestamp values (ListOffsetsRequest). */
#define LS_KAFKA_LATEST_TIMESTAMP (-1)
#define LS_KAFKA_EARLIEST_TIMESTAMP (-2)
#define LS_KAFKA_MAX_TIMESTAMP (-3)            /* v7+ */
#define LS_KAFKA_EARLIEST_LOCAL_TIMESTAMP (-4) /* v8+ */
#define LS_KAFKA_LATEST_TIERED_TIMESTAMP (-5)  /* v9+ */

/* EndpointType (DescribeCluster v1+, KIP-919). */
#define LS_KAFKA_ENDPOINT_BROKER 1
#define LS_KAFKA_ENDPOINT_CONTROLLER 2

/* ResourceType (KIP-133 / AdminClient ConfigResource.Type). */
#define LS_KAFKA_RESOURCE_TOPIC 2
#define LS_KAFKA_RESOURCE_BROKER 4
#define LS_KAFKA_RESOURCE_BROKER_LOGGER 8
#define LS_KAFKA_RESOURCE_CLIENT_METRICS 16
#define LS_KAFKA_RESOURCE_GROUP 32
/* ConfigSource (DescribeConfigsResponse v1+). */
#define LS_KAFKA_CONFIG_SOURCE_UNKNOWN 0
#define LS_KAFKA_CONFIG_SOURCE_TOPIC_CONFIG 1
#define LS_KAFKA_CONFIG_SOURCE_DYNAMIC_BROKER_CONFIG 2
#define LS_KAFKA_CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG 3
#define LS_KAFKA_CONFIG_SOURCE_STATIC_BROKER_CONFIG 4
#define LS_KAFKA_CONFIG_SOURCE_DEFAULT_CONFIG 5
#define LS_KAFKA_CONFIG_SOURCE_CLIENT_METRICS_CONFIG 7
#define LS_KAFKA_CONFIG_SOURCE_GROUP_CONFIG 8
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

/* IncrementalAlterConfigs ConfigOperation (KIP-339). */
#define LS_KAFKA_CONFIG_OP_SET 0
#define LS_KAFKA_CONFIG_OP_DELETE 1
#define LS_KAFKA_CONFIG_OP_APPEND 2
#define LS_KAFKA_CONFIG_OP_SUBTRACT 3

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
int32_t
ls_kafka_topic_configs(ls_arena_t *a, struct ls_kafka_services *b, const char *ns,
                       const struct ls_prop *overrides, int noverrides, const ls_kstr_t *keys,
                       int32_t nkeys, bool synonyms, bool docs,
                       ls_kafka_DescribeConfigsResponse_DescribeConfigsResourceResult **out);
/* A stream's config set is about to change from before[0..nbefore) (NULL: the
 * stream is new) to after[0..*nafter): checks the table policy it resolves to
 * (with the namespace and cluster layers: the table name is valid and not
 * the table of another topic of the namespace), and sets or removes the
 * broker-kept lakestream.table.enabled.since in after (room for one more
 * entry; its value may live in since_buf). LS_OK, or LS_EINVAL with a
 * message naming the key in err (also when the schema registry or the
 * table's metadata could not be read for a check). Any thread. */
ls_status ls_kafka_topic_policy_apply(struct ls_kafka_services *b, const char *ns, const char *name,
                                      const struct ls_prop *before, int nbefore,
                                      struct ls_prop *after, int *nafter, char *since_buf,
                                      size_t since_cap, char *err, size_t errlen);
/* The replication factor a topic was created with (CreateTopics), kept by the
 * broker as a read-only topic config: durability comes from the object store,
 * but tools compare the factor they asked for with what Metadata reports, so
 * Metadata lists that many distinct live brokers as replicas (fewer when fewer
 * brokers are live). Absent: 1. */
#define LS_KAFKA_RF_KEY "lakestream.replication.factor"
/* Produce-time schema validation (h_produce.c), topic configs. */
#define LS_KAFKA_KEY_VALIDATION_KEY "lakestream.key.schema.validation"
#define LS_KAFKA_VALUE_VALIDATION_KEY "lakestream.value.schema.validation"
/* Validates one topic config for CreateTopics: known name (or "lakestream."
 * prefix) and a value of the right type. LS_OK, or LS_EINVAL with a message
 * in err. */
ls_status ls_kafka_topic_config_check(const char *name, const char *value, char *err,
                                      size_t errlen);
/* A Kafka topic config of stream s: its stored override, else the default
 * of a config no broker setting supplies; NULL for others. */
struct ls_stream;
const char *ls_kafka_topic_config_value(const struct ls_stream *s, const char *name);

#endif
