/* Table catalog: which Iceberg tables exist and which metadata file is each
 * one's current metadata, kept in ls_meta as one pointer per table:
 *
 *   /ls/table/<namespace>/<table>  ->  JSON {"version", "metadata-location",
 *                                      "metadata-key", "prefix", "updated-ms"}
 *
 * The pointer is the commit point of every table commit: a compare-and-set
 * on the key's mod_rev (absent = 0) from the revision the committer loaded.
 * The table layer (iceberg_table.c) writes the new metadata file under a
 * unique name, then calls this catalog's committer (ls_ice_committer_t); only
 * after the swap is the file published under the filesystem layout names
 * (v<N>.metadata.json, version-hint.text) for path readers.
 *
 * Lost answers: a txn that fails with an unknown outcome is resolved by
 * reading the pointer back. It holds our exact value (the metadata key is
 * unique per attempt) -> committed; another value -> conflict; unchanged ->
 * not committed; unreadable -> unknown (the caller frees the table and
 * reloads from the pointer before retrying, so a retried append never
 * trusts anything but the pointer — materialize.c's exactly-once check reads
 * the summary of the metadata the pointer names).
 *
 * Tables written before pointers existed have only the filesystem layout:
 * ls_tcat_open falls back to it, and their next commit creates the pointer
 * (compare-and-set on "absent").
 *
 * Names: UTF-8 without '/' or control characters, 1..255 bytes (so a key
 * splits unambiguously and names can be JSON strings). All calls are blocking and thread-safe (they
 * only use ls_meta and ls_objstore); the HTTP threads and the compaction
 * worker call them concurrently. */
#ifndef LS_TABLE_CATALOG_H
#define LS_TABLE_CATALOG_H
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "meta/meta.h"
#include "objstore/objstore.h"
#include "table/iceberg_table.h"

#define LS_TCAT_NAME_MAX 255

typedef struct ls_tcat_pointer {
    char *ns;
    char *name;
    int version;             /* layout version N (v<N>.metadata.json) */
    char *metadata_location; /* URI of the current metadata file, for readers */
    char *metadata_key;      /* its object-store key */
    char *prefix;            /* object-store prefix of the table */
    int64_t updated_ms;
    int64_t mod_rev; /* ls_meta revision of the pointer */
} ls_tcat_pointer_t;

/* 1 when s[0..n) may be a namespace or table name (see above). */
int ls_tcat_name_ok(const char *s, size_t n);

/* Decodes a pointer key and value (ls_meta entry); LS_ECORRUPT with a reason
 * naming the key when either is malformed. */
ls_status ls_tcat_pointer_decode(const ls_kv_t *kv, ls_tcat_pointer_t *out, char *err,
                                 size_t errlen);
void ls_tcat_pointer_clear(ls_tcat_pointer_t *p);

/* The pointer of ns.name; LS_ENOTFOUND when the catalog has no such table
 * (also for names that cannot exist, see ls_tcat_name_ok). */
ls_status ls_tcat_get(ls_meta_t *m, const char *ns, const char *name, ls_tcat_pointer_t *out,
                      char *err, size_t errlen);
/* Every pointer (ns NULL) or those of one namespace, sorted by namespace and
 * name. Undecodable entries are skipped with a warning naming the key. */
ls_status ls_tcat_list(ls_meta_t *m, const char *ns, ls_tcat_pointer_t **out, size_t *n);
void ls_tcat_list_free(ls_tcat_pointer_t *v, size_t n);

/* Opens ns.name for appends: the metadata its pointer names, else (a table
 * from before pointers) the filesystem layout under prefix; LS_ENOTFOUND
 * when neither exists. Commits of the returned table go through the pointer. */
ls_status ls_tcat_open(ls_meta_t *m, ls_objstore_t *os, const char *ns, const char *name,
                       const char *prefix, ls_ice_table_t **out, char *err, size_t errlen);
/* Creates ns.name at prefix/location (see ls_ice_table_create); LS_EEXISTS
 * when its pointer exists already (then open it). */
ls_status ls_tcat_create(ls_meta_t *m, ls_objstore_t *os, const char *ns, const char *name,
                         const char *prefix, const char *location, const char *schema_json,
                         int last_column_id, const ls_ice_spec_t *spec, const char *const *props,
                         ls_ice_table_t **out, char *err, size_t errlen);
#endif
