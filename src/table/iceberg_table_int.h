/* Private to table/iceberg_*.c of the table writer: the table handle and
 * the functions its files share. iceberg_table.c holds the metadata, the
 * appends and orphan files; iceberg_partition.c partition specs, transforms
 * and murmur3; iceberg_metrics.c data file metrics; iceberg_maintain.c
 * manifest merging and snapshot expiry. See src/table/README.md. */
#ifndef LS_ICEBERG_TABLE_INT_H
#define LS_ICEBERG_TABLE_INT_H
#include "table/iceberg_table.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "base/alloc.h"
#include "base/clock.h"
#include "base/crashpoint.h"
#include "base/uuid.h"
#include "table/ocf.h"
#include "table/iceberg_manifest.h"
struct ls_ice_table {
    ls_objstore_t *os;
    char *prefix;
    char *location;
    json_t *meta;
    int version;
    char *meta_location;
    ls_ice_committer_t committer; /* commit NULL: the filesystem layout commits */
    ls_ice_spec_t spec;
    int64_t snapshot_retention_ms; /* 0: snapshots never expire */
    int snapshot_min_keep;         /* the newest this many never expire (>= 1) */
    int64_t file_grace_ms;         /* unreferenced files stay readable this long */
    ls_ice_maint_stats_t maint;
    char err[256];
};
/* ---- manifest merging ----------------------------------------------------
 *
 * Every fast append adds one manifest, and a snapshot's manifest list names
 * every live manifest, so without merging a table committed every second
 * has lists of tens of thousands of entries within a day and every reader
 * opens that many files. Like Iceberg's merging appends (table properties
 * commit.manifest-merge.enabled, commit.manifest.min-count-to-merge,
 * commit.manifest.target-size-bytes, with Iceberg's defaults), once a list
 * would hold min-count manifests the small data manifests of the current
 * spec are rewritten, in bins of up to the target size, into manifests whose
 * entries are EXISTING with their snapshot ids and sequence numbers made
 * explicit (spec "Sequence Number Inheritance"), so every reader plans the
 * same files with the same sequence numbers. A bin takes at most
 * MERGE_MAX_INPUTS manifests, bounding a commit's work on tables written
 * before merging existed. The replaced manifests stay referenced by older
 * snapshots and are deleted when those expire (ls_ice_expire_done). */
#define MERGE_MAX_INPUTS 1000
/* Data files a rewrite removes (ls_ice_table_rewrite): full locations. */
typedef struct removal {
    const char *const *paths;
    size_t n;
    bool *found;                            /* per path: live in the parent snapshot */
    int64_t rows, bytes;                    /* of the data files found */
    int64_t del_files, del_rows, del_bytes; /* of the position delete files found */
    int64_t rows_deleted;                   /* rows of the data files deletes took (rewrite) */
    bool overwrite; /* rows may go (copy-on-write): no row check, operation "overwrite" */
} removal_t;
typedef struct mlist_build {
    ls_ocf_t *w;
    int fv;              /* the table's format version */
    int64_t next_row_id; /* v3: the next row id to assign (spec "First Row ID Assignment") */
    int64_t snap_id, seq;
    int replaced, created;
    removal_t *rm; /* NULL: an append */
} mlist_build_t;
/* ---- snapshot expiry, old metadata and the reader grace --------------------
 *
 * A table committed every second gains 86,400 snapshots a day, and its
 * metadata file lists them all. Each commit therefore also expires, in the
 * same commit, the oldest snapshots older than the table's snapshot retention
 * (ls_ice_table_set_snapshot_retention; the newest min_keep, the current
 * snapshot and any snapshot a ref names always stay; at most
 * EXPIRE_MAX_PER_COMMIT per commit, so a table with a long history is
 * trimmed over several commits), and trims the metadata log to
 * write.metadata.previous-versions-max entries (Iceberg's property and
 * default); ls_ice_table_expire does the same for a table nobody appends to.
 *
 * Reader grace: an engine that loaded the table keeps reading what it loaded
 * (Spark caches a loaded table for 30 s; a query plans once and reads for
 * minutes), so a file is deleted only once it has been unreferenced for the
 * table's file grace (ls_ice_table_set_file_grace). What stopped being
 * referenced is recorded durably in the table itself, the table property
 * PENDING_KEY: a JSON array, oldest first, of
 *   {"at": ms, "snapshot-id": id, "manifest-list": loc, "removed-files": bool}
 *       a snapshot this table expired at `at`;
 *   {"at": ms, "metadata-file": loc}
 *       a metadata file that left the log (delete-after-commit only),
 *       no longer current since `at` (its successor's timestamp).
 * A commit moves the entries whose grace is over (at + grace <= now) out of
 * the list, and only once that commit has landed (ls_ice_expire_done) deletes their
 * files: a due snapshot's manifest list; the manifests it named that the
 * oldest snapshot still readable (the oldest pending one, else the oldest
 * retained) does not name (history is linear: a manifest absent from that
 * list is in no later list); the data files it removed (entries DELETED by
 * it in the manifests it wrote: every later snapshot lacks them, and every
 * snapshot still readable is later); and due metadata files with their v<N>
 * copies. Grace 0 deletes at the commit that expires, as Iceberg's
 * expireSnapshots does. A crash in between leaves orphans (the sweep below
 * takes them), never a broken table or a file deleted early: a file leaves
 * the pending list only in the commit that precedes its deletion. */
#define EXPIRE_MAX_PER_COMMIT 100
#define PENDING_KEY LS_ICE_PENDING_DELETES_KEY
typedef struct expiry {
    size_t expired;  /* snapshots removed by this commit */
    size_t trimmed;  /* metadata-log entries removed */
    json_t *due;     /* pending entries to delete once the commit landed */
    char *keep_list; /* manifest list whose manifests stay (NULL: keep all) */
    bool due_snapshots;
} expiry_t;

/* iceberg_table.c */
char *ls_ice_key_of(const ls_ice_table_t *t, const char *rel);
ls_status ls_ice_put_bytes(ls_ice_table_t *t, const char *key, const void *p, size_t n, int flags);
char *ls_ice_new_uuid(void);
void ls_ice_delete_location(ls_ice_table_t *t, const char *loc);
int64_t ls_ice_prop_long(const ls_ice_table_t *t, const char *key, int64_t dflt);
bool ls_ice_prop_bool(const ls_ice_table_t *t, const char *key, bool dflt);
ls_status ls_ice_put_manifest(ls_ice_table_t *t, const ls_ice_mentry_t *e, size_t n,
                              char **path_out, int64_t *len_out);

/* iceberg_partition.c */
void ls_ice_transform_text(const ls_ice_part_field_t *f, char *out, size_t cap);

/* iceberg_maintain.c */
void ls_ice_take_live(const ls_av_t *r, ls_ice_mentry_t *e, size_t ne, ls_ice_mentry_t **all,
                      size_t *n, size_t *cap);
ls_status ls_ice_read_manifest(ls_ice_table_t *t, const ls_av_t *r, ls_buf_t *raw,
                               ls_ice_mentry_t **e, size_t *ne);
/* A manifest a commit wrote (n >= 1 entries of one content). */
typedef struct ls_ice_newman {
    const char *path;
    int64_t len;
    const ls_ice_mentry_t *e;
    size_t n;
} ls_ice_newman_t;
ls_status ls_ice_write_manifest_list(ls_ice_table_t *t, json_t *parent, mlist_build_t *mb,
                                     const ls_ice_newman_t *nm, size_t nnm, char **path_out);
int64_t ls_ice_summary_long(json_t *summary, const char *key);
json_t *ls_ice_pending_of(json_t *meta);
void ls_ice_expire_plan(ls_ice_table_t *t, json_t *next, int64_t now_ms, expiry_t *x);
void ls_ice_expiry_clear(expiry_t *x);
ls_status ls_ice_list_manifests(ls_ice_table_t *t, const char *loc, json_t *set);
bool ls_ice_entry_keeps_file(const ls_av_t *rec, int64_t manifest_snapshot, json_t *retained);
char *ls_ice_published_copy(const char *loc);
void ls_ice_expire_done(ls_ice_table_t *t, const expiry_t *x);
#endif
