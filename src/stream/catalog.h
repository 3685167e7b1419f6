/* Stream catalog (Lakestream level 2): namespaces and streams.
 *
 * A stream (Kafka: topic) has a namespace, a name, a UUID (Kafka topic id), a
 * stream number unique for all time (from a metadata counter), a partition
 * count (indexed layout: partition i -> log ls_stream_log_id(s, i)), config
 * properties (Kafka topic configs, stored verbatim), a revision and a state.
 *
 * Invariants:
 *  - stream numbers are never reused, so log ids are never reused: a dropped
 *    and re-created topic starts from empty logs and never sees old data;
 *  - drop writes a permanent tombstone (/ls/tomb/<uuid>) in the same txn that
 *    deletes the stream key;
 *  - partitions only grow.
 *
 * Threads: the catalog keeps an in-memory copy of all live streams, guarded by
 * a mutex. Lookups (loop thread, hot path: Metadata, Produce, Fetch) read the
 * copy; mutations (worker threads) write the metadata store first, then update
 * the copy. Streams handed out are immutable snapshots with a refcount.
 * ls_catalog_reload() refreshes the copy from the store (later: on watch). */
#ifndef LS_CATALOG_H
#define LS_CATALOG_H
#include <stdbool.h>
#include <stdint.h>
#include "base/status.h"
#include "base/uuid.h"
#include "meta/meta.h"

#define LS_DEFAULT_NAMESPACE "default"
#define LS_LOG_PARTITION_BITS 20 /* log_id = stream_no << 20 | partition */
#define LS_MAX_PARTITIONS (1 << LS_LOG_PARTITION_BITS)

typedef struct ls_prop {
    char *key;
    char *value;
} ls_prop_t;

typedef struct ls_stream {
    int refcnt; /* atomic */
    char *ns;
    char *name;
    ls_uuid_t id;
    int64_t stream_no;
    int32_t partitions;
    int64_t created_ms;
    ls_prop_t *config; /* sorted by key */
    int nconfig;
    int64_t mod_rev; /* metadata revision of the stream key */
} ls_stream_t;

typedef struct ls_catalog ls_catalog_t;

ls_catalog_t *ls_catalog_open(ls_meta_t *meta, char *err, size_t errlen);
void ls_catalog_close(ls_catalog_t *c);
/* Partition limits applied by create and add_partitions (0: LS_MAX_PARTITIONS
 * and no total): more than per_stream partitions in one stream is LS_EINVAL;
 * a create or grow that would take the partitions of all streams (as this
 * catalog knows them; another broker's concurrent create may slip past by
 * its own size) above total is LS_ELIMIT. Set once, before serving. */
void ls_catalog_set_limits(ls_catalog_t *c, int32_t per_stream, int64_t total);
/* Checks the in-memory map's invariants (base/check.h: panics naming the
 * stream and the rule); run by unit tests and after every reload and watched
 * change when invariant checking is on. */
void ls_catalog_check_invariants(ls_catalog_t *c);
ls_status ls_catalog_reload(ls_catalog_t *c);

/* Validation shared with the Kafka edge: [a-zA-Z0-9._-], 1..249, not "." or "..". */
int ls_stream_name_valid(const char *name);

/* Kafka's rule for metric names, where '.' and '_' read alike: true when
 * another stream of ns (as this catalog knows them) has a name equal to name
 * once every '.' is read as '_' ("a.b" and "a_b"); its name goes into other
 * (cap bytes). Creating such a stream is refused. Does not block. */
bool ls_catalog_collision(ls_catalog_t *c, const char *ns, const char *name, char *other,
                          size_t cap);

/* Mutations (blocking: call from a worker thread). */
ls_status ls_catalog_create(ls_catalog_t *c, const char *ns, const char *name, int32_t partitions,
                            const ls_prop_t *config, int nconfig, int validate_only,
                            ls_stream_t **out /* kept, may be NULL */, char *err, size_t errlen);
ls_status ls_catalog_drop(ls_catalog_t *c, const char *ns, const char *name,
                          ls_stream_t **dropped /* kept, may be NULL */);
ls_status ls_catalog_add_partitions(ls_catalog_t *c, const char *ns, const char *name,
                                    int32_t new_total, int validate_only, char *err, size_t errlen);
/* Replaces the whole config set (revisioned by compare-and-set). */
ls_status ls_catalog_set_config(ls_catalog_t *c, const char *ns, const char *name,
                                const ls_prop_t *config, int nconfig);
/* Read-modify-write of a property set: given the current set (sorted by key),
 * fills the new one (memory owned by arg, valid until the next call or the
 * return of the update). LS_OK to write; anything else aborts the update. */
typedef ls_status (*ls_props_change_fn)(const ls_prop_t *cur, int ncur, void *arg,
                                        const ls_prop_t **out, int *nout, char *err, size_t errlen);
/* Read-modify-CAS of a stream's config: change() may run several times (it
 * is re-run on the fresh set after a concurrent change). */
ls_status ls_catalog_update_config(ls_catalog_t *c, const char *ns, const char *name,
                                   int validate_only, ls_props_change_fn change, void *arg,
                                   char *err, size_t errlen);

/* Namespaces: /ls/ns/<ns> records and their properties (namespace-level
 * defaults of the materialization policy, stream/policy.h). The copy is
 * loaded at open and refreshed by ls_catalog_reload_namespaces (blocking). */
typedef struct ls_namespace {
    int refcnt; /* atomic */
    char *name;
    ls_prop_t *props; /* sorted by key */
    int nprops;
} ls_namespace_t;
ls_status ls_catalog_reload_namespaces(ls_catalog_t *c);
/* Kept snapshot or NULL (namespace without a record). Any thread, non-blocking. */
ls_namespace_t *ls_catalog_namespace(ls_catalog_t *c, const char *ns);
void ls_namespace_release(ls_namespace_t *n);
/* Every namespace record (kept snapshots, sorted by name); release each, then
 * ls_free the array. Any thread, non-blocking. */
ls_namespace_t **ls_catalog_namespaces(ls_catalog_t *c, int *n);
/* Read-modify-CAS of a namespace's properties; creates the record if absent. Blocking. */
ls_status ls_catalog_update_namespace(ls_catalog_t *c, const char *ns, ls_props_change_fn change,
                                      void *arg, char *err, size_t errlen);
/* The cluster-wide dynamic broker configs (the property set of Kafka's
 * default broker resource; stream/broker_config.h gives them meaning): a kept
 * snapshot whose name is "", empty when none is set; never NULL. Any thread,
 * non-blocking; changes by any broker arrive through the catalog's watch. */
ls_namespace_t *ls_catalog_broker_config(ls_catalog_t *c);
/* Read-modify-CAS of the dynamic broker configs. Blocking. */
ls_status ls_catalog_update_broker_config(ls_catalog_t *c, ls_props_change_fn change, void *arg,
                                          char *err, size_t errlen);

/* Lookups (any thread, non-blocking). Return kept snapshots or NULL. */
ls_stream_t *ls_catalog_lookup(ls_catalog_t *c, const char *ns, const char *name);
ls_stream_t *ls_catalog_lookup_id(ls_catalog_t *c, const ls_uuid_t *id);
/* All live streams of a namespace (NULL = all), sorted by name; free with ls_stream_list_release.
 */
ls_stream_t **ls_catalog_list(ls_catalog_t *c, const char *ns, int *n);
void ls_stream_list_release(ls_stream_t **v, int n);

ls_stream_t *ls_stream_keep(ls_stream_t *s);
void ls_stream_release(ls_stream_t *s);
const char *ls_stream_config_get(const ls_stream_t *s, const char *key); /* NULL if unset */
/* Kafka's cleanup.policy of the stream (a list of "delete" and "compact";
 * unset = "delete"). A compacted stream keeps the latest record of every key
 * and refuses keyless records; time/size retention applies only with
 * "delete" in the list. */
typedef struct ls_cleanup_policy {
    bool compact;
    bool delete;
} ls_cleanup_policy_t;
ls_cleanup_policy_t ls_stream_cleanup_policy(const ls_stream_t *s);
static inline int64_t ls_stream_log_id(const ls_stream_t *s, int32_t partition)
{
    return (s->stream_no << LS_LOG_PARTITION_BITS) | partition;
}
#endif
