/* The Confluent wire format of a record key or value: magic byte 0, the
 * schema id (4 bytes, big-endian), then the payload in the schema's format
 * (Avro binary datum; JSON text; Protobuf: the message-index array, then
 * the message's wire bytes). Used by produce-time schema validation
 * (lakestream.value.schema.validation / lakestream.key.schema.validation).
 * Thread-safe as the registry is; blocks on the metadata store the first
 * time a schema id is looked up (then cached). */
#ifndef LS_REGISTRY_FRAMING_H
#define LS_REGISTRY_FRAMING_H
#include <stddef.h>
#include <stdint.h>

#include "registry/registry.h"

typedef enum ls_frame_check {
    LS_FRAME_OK = 0,
    LS_FRAME_INVALID,     /* not framed, unknown id, or the payload does not decode */
    LS_FRAME_STORE_ERROR, /* the registry's store failed: retry */
} ls_frame_check;

/* Checks p[0..len): framed, the id names a registered schema, and the
 * payload decodes by it — Avro: exactly one datum of the schema (every
 * union, enum, int range, string checked); JSON: one JSON text valid
 * under the schema (ls_jsonschema_validate, json_schema.h); Protobuf:
 * a message-index array naming a message of the schema and wire bytes
 * that decode as it (ls_proto_check_payload, protobuf.h); and, with want,
 * an id of the subject it names. Otherwise the reason in why. */
/* The subject a record's schema must belong to (Confluent's broker-side
 * validation does the same): the topic's subject name strategy applied to
 * the topic and the schema's record name; the schema id must be a version
 * (live or soft-deleted) of that subject. */
typedef struct ls_frame_subject {
    ls_sr_strategy strategy;
    const char *topic;
    bool key;
    const char *strategy_key; /* the config key that chose it, for messages */
    const char *strategy_value;
} ls_frame_subject_t;

/* want NULL: any subject. */
ls_frame_check ls_frame_check_payload(ls_registry_t *r, const uint8_t *p, size_t len,
                                      const ls_frame_subject_t *want, char *why, size_t whylen);
#endif
