/* Iceberg REST catalog request bodies for mirroring a table (pure JSON, no
 * I/O): what compact/catalog_sync.c sends so an external catalog's copy of a
 * table follows the broker's own.
 *
 * The broker's table (its metadata JSON, "ours") is the only writer we know
 * of; the catalog's copy ("theirs", the "metadata" of its LoadTableResult)
 * may have been changed by other writers. ls_rest_commit_plan compares them:
 *   IN_SYNC   the catalog's main branch is our current snapshot;
 *   COMMIT    its main is an ancestor of ours (or it has none; or one we have
 *             expired since, found through the catalog's copies of our
 *             snapshots' parent links): the body of a
 *             CommitTableRequest (REST spec, POST .../tables/{table}) that
 *             adds what it lacks — new schemas and partition specs (by id),
 *             the snapshots after its main (oldest first), then moves main
 *             to ours — under the requirements assert-table-uuid and
 *             assert-ref-snapshot-id(main = its main), so a writer that
 *             commits in between makes the catalog answer 409 instead of
 *             losing its snapshot;
 *             Snapshots of its main lineage that our metadata no longer has
 *             (ours, expired since: their files are gone) are removed
 *             (remove-snapshots, after main moved; unless another ref names
 *             them) — also with main in sync, after an expiry of ours;
 *   DIVERGED  another table under the name (a different table-uuid) or a main
 *             branch that is not in our history (another writer's snapshot):
 *             nothing is sent, why says what differs. We never overwrite it.
 * Snapshot, schema and spec objects are copied from our metadata as they
 * are, so ids, field ids and manifest lists stay exactly ours. */
#ifndef LS_TABLE_REST_COMMIT_H
#define LS_TABLE_REST_COMMIT_H
#include <jansson.h>
#include <stdint.h>

typedef enum { LS_REST_IN_SYNC, LS_REST_COMMIT, LS_REST_DIVERGED } ls_rest_plan_kind;

typedef struct ls_rest_plan {
    ls_rest_plan_kind kind;
    json_t *body;          /* COMMIT: the CommitTableRequest (owned) */
    int64_t base_main;     /* the catalog's main snapshot (-1: none) */
    int64_t our_main;      /* our current snapshot (-1: none) */
    int added_snapshots;   /* add-snapshot updates in body */
    int removed_snapshots; /* snapshot ids in its remove-snapshots update */
    char why[300];         /* DIVERGED: the reason */
} ls_rest_plan_t;

/* The snapshot id a metadata JSON's main branch names (refs.main, else
 * current-snapshot-id), -1 when none. */
int64_t ls_rest_main_snapshot(const json_t *metadata);
/* Plans the commit that brings theirs up to ours (see above). metadata_path
 * (NULL: none): the catalog's write.metadata.path, set by the commit when
 * the catalog's copy has another (so the files it writes stay out of ours).
 * 0, or -1 when ours is not table metadata (why filled). */
int ls_rest_commit_plan(const json_t *ours, const json_t *theirs, const char *metadata_path,
                        ls_rest_plan_t *out);
void ls_rest_plan_clear(ls_rest_plan_t *p);

/* RegisterTableRequest: {"name", "metadata-location"}. */
json_t *ls_rest_register_body(const char *name, const char *metadata_location);
/* CreateNamespaceRequest of a one-level namespace: {"namespace": [ns]}. */
json_t *ls_rest_namespace_body(const char *ns);
#endif
