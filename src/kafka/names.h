/* Names that cross the wire: the one place that decides what a topic name,
 * a group id or a transactional id may be, and how a client id is shown.
 *
 * A wire string has a length; a C string ends at its first NUL. Converting
 * one into the other without this check let "victim\0anything" address topic
 * "victim" (and auto-create "x" from "x\0y"): every handler that turns a
 * wire name into a C string goes through these functions instead.
 *
 *  - Topic names: Kafka's rule (ls_stream_name_valid: [a-zA-Z0-9._-], 1..249
 *    bytes, not "." or ".."), so nothing else ever reaches the catalog.
 *  - Group ids and transactional ids: Kafka accepts any string; here any
 *    string without a NUL or another ASCII control character (they end up
 *    in store keys and log lines, and no client means them).
 *  - Client ids: never refused (Kafka does not); shown in log lines with
 *    control characters, quotes and backslashes escaped, at most 128 bytes. */
#ifndef LS_KAFKA_NAMES_H
#define LS_KAFKA_NAMES_H
#include <stdbool.h>

#include "kafka/codec.h"

/* Arena C string of a valid topic name; NULL when s is null or not one. */
char *ls_kafka_topic_name(ls_arena_t *a, ls_kstr_t s);

/* Arena C string of a group or transactional id; NULL for a null string
 * (*ok true then). *ok is false when the id holds a NUL or control
 * character (the returned copy is still usable in a message). */
char *ls_kafka_id_name(ls_arena_t *a, ls_kstr_t s, bool *ok);

/* Printable, quoted form of any wire string for log lines ("(null)" for null). */
const char *ls_kafka_printable(ls_arena_t *a, ls_kstr_t s);

#endif
