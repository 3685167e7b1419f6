/* Protobuf schemas (.proto text, proto2 and proto3) for the schema registry:
 * a parser of the language's grammar into a model of messages, fields,
 * oneofs and enums with every type name resolved, and the compatibility
 * rules the Confluent Schema Registry documents for Protobuf.
 *
 * Parsing (the Protocol Buffers language specification, proto2 and proto3):
 * syntax, package, import [public|weak], option (values, aggregates
 * skipped as balanced braces), message (fields with labels, map<K, V>,
 * oneof, nested messages and enums, groups, reserved, extensions, extend,
 * options), enum (values, reserved, options), service (rpc). A type name is
 * resolved as protoc does: a leading '.' is fully qualified, otherwise the
 * innermost enclosing scope outward, against this file and the files it
 * imports. Imports are the schema's references (matched by reference name
 * = import path) or one of the well-known google/protobuf files, which are
 * built in. Refused: a type that does not resolve, an import that is
 * neither, duplicate field numbers or names, numbers outside 1..2^29-1 or in
 * 19000-19999, "edition" files. A descriptor in binary (base64) form is
 * turned into .proto text first (ls_proto_text_from_descriptor).
 *
 * Compatibility (old -> new; BACKWARD = the new schema reads the old data):
 * incompatible are a changed package, a removed message, a field whose kind
 * (scalar / message / map) or scalar group changes (int32 int64 uint32 uint64
 * bool enums | sint32 sint64 | fixed32 sfixed32 | fixed64 sfixed64 | float |
 * double | string bytes), a field of another or incompatible message type,
 * a required field added or removed, several fields moved into one oneof, a
 * field moved into an existing oneof, a field removed from a oneof.
 * Everything else (fields, messages, enums and enum values added or
 * removed, renamed fields, oneofs added or removed) is compatible.
 *
 * A parsed schema is immutable and may be shared between threads. */
#ifndef LS_REGISTRY_PROTOBUF_H
#define LS_REGISTRY_PROTOBUF_H
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/status.h"

typedef struct ls_proto ls_proto_t;

/* Parses text after the texts of its references (names[i]: the import path
 * texts[i] answers). NULL with a message in err. */
ls_proto_t *ls_proto_parse(const char *const *names, const char *const *texts, size_t ndeps,
                           const char *text, char *err, size_t errlen);
void ls_proto_free(ls_proto_t *p);
/* The text's tokens joined by single spaces: comments and layout removed
 * (the schema's identity). */
const char *ls_proto_canonical(const ls_proto_t *p);

/* The schema's file as a serialized FileDescriptorProto, base64 (what
 * clients ask for with format=serialized): package, imports, messages
 * (fields, map entries, oneofs, proto3 optional fields with their synthetic
 * oneofs, nested types) and enums. Options and services are not carried. */
char *ls_proto_descriptor(const ls_proto_t *p);
/* Whether text is a serialized descriptor (base64) rather than .proto text. */
int ls_proto_is_serialized(const char *text);
/* .proto text of a serialized (base64) FileDescriptorProto: syntax,
 * package, imports, messages, enums, services (options are not kept;
 * groups are refused). NULL with a message in err. */
char *ls_proto_text_from_descriptor(const char *b64, char *err, size_t errlen);

/* 1 when data written with writer is read with reader (the rules above);
 * 0 with the incompatible differences appended to why. */
int ls_proto_can_read(const ls_proto_t *reader, const ls_proto_t *writer, ls_buf_t *why);

/* Checks a Confluent Protobuf payload's message against the schema: the
 * message-index path idx[0..n) (n == 0: [0]) names a message of the schema,
 * and wire[0..len) decodes as it - each known field in its type's wire type
 * (repeated scalars packed or not), lengths in bounds, proto3 strings UTF-8,
 * embedded messages, map entries and groups checked the same way; unknown
 * field numbers pass, as Protobuf parsers keep them. 0, or -1 with the
 * reason in why. */
ls_status ls_proto_check_payload(const ls_proto_t *p, const int64_t *idx, size_t n,
                                 const uint8_t *wire, size_t len, char *why, size_t whylen);
#endif
