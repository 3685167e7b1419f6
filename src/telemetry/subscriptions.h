/* Client-metrics subscriptions (KIP-714): the CLIENT_METRICS config
 * resources (type 16) an operator sets with IncrementalAlterConfigs /
 * AlterConfigs (`kafka-configs --entity-type client-metrics`), and the
 * matching of a client against them (GetTelemetrySubscriptions).
 *
 * Stored as one record of the metadata store, /ls/clientmetrics: a JSON
 * object {"<subscription>": {"<key>": "<value>", ...}, ...}, followed by
 * every broker (meta/meta_follow.h), so a subscription set through any
 * broker reaches every client at its next GetTelemetrySubscriptions
 * whichever broker it asks. The record's revision is the subscriptions'
 * version: a client instance evaluated against an older one is evaluated
 * again (as Kafka's subscription update version).
 *
 * Keys and values (Kafka's ClientMetricsConfigs, checked the same way):
 *  - metrics: a comma-separated list of metric name prefixes, or `*` for
 *    every metric; empty: none;
 *  - interval.ms: the push interval, an int in 100..3600000, default 300000;
 *  - match: a comma-separated list of <param>=<regex>, param one of
 *    client_instance_id, client_id, client_software_name,
 *    client_software_version, client_source_address, client_source_port;
 *    each split at '=' into exactly two parts, the regex (Java-like: PCRE2)
 *    matching the whole attribute. Every pattern must match (a client
 *    lacking the attribute does not); an empty list matches every client.
 * A subscription whose keys are all deleted is removed.
 *
 * Threads: lookups and matching from any thread (a rwlock over the parsed
 * set); changes block on the store (worker threads). */
#ifndef LS_TELEMETRY_SUBSCRIPTIONS_H
#define LS_TELEMETRY_SUBSCRIPTIONS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "meta/meta.h"

#define LS_TELEMETRY_METRICS "metrics"
#define LS_TELEMETRY_INTERVAL "interval.ms"
#define LS_TELEMETRY_MATCH "match"
#define LS_TELEMETRY_INTERVAL_DEFAULT 300000
#define LS_TELEMETRY_INTERVAL_MIN 100
#define LS_TELEMETRY_INTERVAL_MAX 3600000
#define LS_TELEMETRY_ALL_METRICS "*"

typedef struct ls_telemetry_subs ls_telemetry_subs_t;

/* Reads and follows the record; NULL and err on failure. */
ls_telemetry_subs_t *ls_telemetry_subs_open(ls_meta_t *meta, char *err, size_t errlen);
void ls_telemetry_subs_close(ls_telemetry_subs_t *s);

/* A key and value as SET would store them: LS_OK, or LS_EINVAL with err naming the key,
 * the value and what is accepted. value NULL: the key alone (DELETE). */
ls_status ls_telemetry_subs_check(const char *key, const char *value, char *err, size_t errlen);

/* The subscription's stored value of key (ls_free it); NULL when unset. */
char *ls_telemetry_subs_get(ls_telemetry_subs_t *s, const char *name, const char *key);
/* The subscriptions' names, sorted (ls_free each and the array). */
char **ls_telemetry_subs_names(ls_telemetry_subs_t *s, int *n);

/* One change of a subscription: value NULL deletes the key; list (the
 * list keys, metrics and match, only) appends value's items missing from
 * the key's list, or subtracts them (IncrementalAlterConfigs' APPEND and
 * SUBTRACT, as Kafka does them; items compared trimmed). */
enum { LS_TELEMETRY_LIST_NONE, LS_TELEMETRY_LIST_APPEND, LS_TELEMETRY_LIST_SUBTRACT };
typedef struct ls_telemetry_subs_op {
    const char *key;
    const char *value;
    int list;
} ls_telemetry_subs_op_t;
/* Whether key may take an APPEND or SUBTRACT: LS_OK, or LS_EINVAL with err. */
ls_status ls_telemetry_subs_check_list(const char *key, char *err, size_t errlen);
/* Applies ops (each checked by ls_telemetry_subs_check) to the
 * subscription, or replaces its keys by ops (replace: AlterConfigs), by
 * compare-and-set; validate_only checks and writes nothing. */
ls_status ls_telemetry_subs_alter(ls_telemetry_subs_t *s, const char *name, bool replace,
                                  const ls_telemetry_subs_op_t *ops, int n, bool validate_only,
                                  char *err, size_t errlen);

/* What a client is matched on (Kafka's client instance metadata); NULL:
 * the client did not say (a pattern on it does not match). */
enum {
    LS_TELEMETRY_P_INSTANCE_ID,
    LS_TELEMETRY_P_CLIENT_ID,
    LS_TELEMETRY_P_SOFTWARE_NAME,
    LS_TELEMETRY_P_SOFTWARE_VERSION,
    LS_TELEMETRY_P_SOURCE_ADDRESS,
    LS_TELEMETRY_P_SOURCE_PORT,
    LS_TELEMETRY_NPARAMS
};
typedef struct ls_telemetry_client {
    const char *attr[LS_TELEMETRY_NPARAMS];
} ls_telemetry_client_t;

/* The union of the subscriptions a client matches: the metric prefixes
 * (just "*" when one subscription asks for every metric; sorted, no
 * duplicates), the smallest of their intervals (the default when none
 * matches), and the version of the subscriptions it was made from. */
typedef struct ls_telemetry_match {
    char **metrics;
    int nmetrics;
    int32_t interval_ms;
    int64_t version;
} ls_telemetry_match_t;
void ls_telemetry_subs_match(ls_telemetry_subs_t *s, const ls_telemetry_client_t *c,
                             ls_telemetry_match_t *out);
void ls_telemetry_match_free(ls_telemetry_match_t *m);
/* The subscriptions' version now (changes whenever any subscription does). */
int64_t ls_telemetry_subs_version(ls_telemetry_subs_t *s);
#endif
