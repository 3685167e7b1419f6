/* Table materialization policies as the front ends manage them: the one
 * module `lakestream tables` (cli/tables_cli.c) and the REST API (api/)
 * both call, so a policy shown, set or unset means the same thing whichever
 * front end is used.
 *
 *   stream level     read with DescribeConfigs and changed with
 *                    IncrementalAlterConfigs SET / DELETE over the Kafka
 *                    protocol (admin/kafka_client.h): the broker's own
 *                    handlers validate, resolve and apply them, as for any
 *                    Kafka admin tool;
 *   namespace level  the namespace record's properties (stream/catalog.h),
 *                    read-modify-CAS in the metadata store.
 *
 * Edits are checked here first with the broker's rules (stream/policy.c),
 * so a refusal names the key before anything is sent; the broker checks
 * again (cross-field rules, the table's schema). Keys may be given in full
 * (lakestream.table.enabled) or short (enabled).
 *
 * No global state; blocking (the connection's or the metadata store's I/O). */
#ifndef LS_ADMIN_TABLE_POLICY_H
#define LS_ADMIN_TABLE_POLICY_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "admin/kafka_client.h"
#include "stream/catalog.h"
#include "stream/policy.h"

#define LS_ADMIN_POLICY_MAX_EDITS 64
#define LS_ADMIN_POLICY_KEY_MAX 96

/* One row of a stream's policy: a field with its resolved value and the
 * layer it came from (stream|namespace|cluster|default), or a key the
 * broker keeps (lakestream.table.enabled.since: source "broker"). */
typedef struct ls_admin_policy_row {
    char *key;
    char *value;
    const char *source;
} ls_admin_policy_row_t;

/* A stream's policy and its table's status as the broker reports them. */
typedef struct ls_admin_policy {
    ls_admin_policy_row_t *rows; /* in the broker's order */
    int nrows;
    bool has_lag; /* lag_ms known (the table has committed) */
    int64_t lag_ms;
    bool has_skipped; /* records error.handling=skip left out */
    int64_t skipped;
    char *held;           /* why the table is held back; NULL: it is not */
    char *catalog_status; /* the external catalog is behind: why; NULL: in sync */
    char *current;        /* the table the rows go to now; NULL: unknown */
    char *current_reason; /* why that table version exists; NULL: the base table */
} ls_admin_policy_t;

/* A set of edits: SET key=value and unset key, each checked when added. */
typedef struct ls_admin_policy_edit {
    const char *set_k[LS_ADMIN_POLICY_MAX_EDITS], *set_v[LS_ADMIN_POLICY_MAX_EDITS];
    const char *unset_k[LS_ADMIN_POLICY_MAX_EDITS];
    int nset, nunset;
    char keys[LS_ADMIN_POLICY_MAX_EDITS][LS_ADMIN_POLICY_KEY_MAX];
    ls_prop_t *buf; /* the namespace update's new set (ls_admin_policy_edit_free) */
} ls_admin_policy_edit_t;

/* The full key of k ("enabled" -> "lakestream.table.enabled") into buf. */
const char *ls_admin_policy_key(const char *k, char *buf, size_t cap);

/* Adds a SET of key (short or full) to value for a stream (ns_level false)
 * or a namespace default (true; primary.key is refused there: it names one
 * topic's key fields). LS_OK, or LS_EINVAL with err naming the key and the accepted
 * values (also when the key is given twice or there are too many edits). */
ls_status ls_admin_policy_edit_set(ls_admin_policy_edit_t *e, const char *key, const char *value,
                                   bool ns_level, char *err, size_t errlen);
/* Adds an unset of key: it must be a policy field. LS_OK, or LS_EINVAL
 * with err. */
ls_status ls_admin_policy_edit_unset(ls_admin_policy_edit_t *e, const char *key, char *err,
                                     size_t errlen);
void ls_admin_policy_edit_free(ls_admin_policy_edit_t *e);

/* DescribeConfigs of topic: its policy rows and table status (arena of c).
 * 0; or -1 with c->err (the broker's message) and *kerr (the Kafka error
 * code; 0 when the call itself failed): UNKNOWN_TOPIC_OR_PARTITION for a
 * topic that does not exist. */
int ls_admin_policy_describe(ls_admin_conn_t *c, const char *topic, ls_admin_policy_t *out,
                             int16_t *kerr);
/* IncrementalAlterConfigs of topic with e's SETs and DELETEs (validate_only:
 * every check, no change). 0; or -1 with c->err and *kerr as above. */
int ls_admin_policy_alter(ls_admin_conn_t *c, const char *topic, const ls_admin_policy_edit_t *e,
                          bool validate_only, int16_t *kerr);
/* Applies e to namespace ns's defaults, creating its record if absent (with
 * no edits: only when create). LS_EINVAL with err for a bad name. */
ls_status ls_admin_ns_policy_update(ls_catalog_t *cat, const char *ns, ls_admin_policy_edit_t *e,
                                    bool create, char *err, size_t errlen);
#endif
