/* Catalog sync: a table whose policy names an external catalog
 * (lakestream.table.catalog=<name>, catalog.<name>.* of the broker
 * configuration) is mirrored there after the compaction pass commits it.
 *
 * The built-in catalog stays the table's source of truth: its commit is
 * made first and never waits for, or fails because of, the external one.
 * After it the sync step compares the external catalog's copy with ours
 * (table/rest_commit.h) and:
 *   absent     creates the namespace and REGISTERS the table at our current
 *              metadata file (registerTable, not createTable: schema field
 *              ids, partition spec and snapshots stay exactly ours, and the
 *              data files stay where they are, in our object store);
 *   behind     commits what it lacks (schemas, specs, snapshots; main moved
 *              to ours) asserting table uuid and its main snapshot;
 *   diverged   another writer's snapshot is its main (or another table has
 *              the name): nothing is written, the table is reported
 *              (log line, lakestream_table_catalog_failures_total
 *              {reason="conflict"}, status) and checked again later — it
 *              syncs again once the other writer's change is gone (e.g. the
 *              external table dropped, then it is registered anew).
 * A 409 on commit (a writer committed between our load and our commit) is
 * the same conflict: reloaded and re-planned on the next attempt, never
 * forced. Transport errors, timeouts, 5xx and 429 are retried at the next
 * pass after an exponential backoff (1 s doubling to 5 min); a commit with
 * an unknown outcome is safe to retry because every attempt re-plans from
 * a fresh load. Such a failure also backs the whole catalog off: until it
 * is due no table sends it a request, so an unreachable catalog costs the
 * compaction worker one timeout per backoff, whatever the table count.
 *
 * State per table (in memory, this broker): the metadata location last
 * mirrored, the next attempt's time, consecutive failures and the last
 * error. Lost on restart: the first pass after it reloads the catalog's
 * copy and catches up. Only the compaction worker thread calls it. */
#ifndef LS_COMPACT_CATALOG_SYNC_H
#define LS_COMPACT_CATALOG_SYNC_H
#include <stdbool.h>
#include <stdint.h>

#include "meta/meta.h"
#include "objstore/objstore.h"

typedef struct ls_catalog_sync ls_catalog_sync_t;

ls_catalog_sync_t *ls_catalog_sync_new(void);
void ls_catalog_sync_free(ls_catalog_sync_t *s);

/* Mirrors ns.table into the external catalog `catalog` when its built-in
 * pointer moved since the last mirror: checked after a commit (committed),
 * once per table after start, and when a failed attempt's retry is due;
 * otherwise it returns without I/O. */
void ls_catalog_sync_table(ls_catalog_sync_t *s, ls_meta_t *meta, ls_objstore_t *os,
                           const char *catalog, const char *ns, const char *table, bool committed,
                           int64_t now_ms);

/* The sync status of ns.table for `lakestream tables show` and the REST API:
 * "" when in sync or not mirrored, else a sentence (behind since, why). */
void ls_catalog_sync_status(ls_catalog_sync_t *s, const char *ns, const char *table, char *out,
                            size_t cap);
#endif
