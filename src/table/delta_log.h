/* A Delta Lake transaction log (the Delta protocol's "Delta Log Entries"):
 *
 *   <prefix>/_delta_log/<version %020d>.json   one commit per version, 0, 1, ...
 *
 *   <prefix>/_delta_log/<version %020d>.checkpoint.parquet  (table/delta_checkpoint.h)
 *   <prefix>/_delta_log/_last_checkpoint       {"version": V, "size": rows, ...}
 *
 * each commit newline-delimited JSON actions. This module replays the log
 * (from the checkpoint _last_checkpoint names, then the commits after it:
 * the live files, the tombstones, the txn versions, the current metaData
 * and protocol), writes the next commit, writes checkpoints and deletes the
 * log files a checkpoint made unneeded.
 *
 * Invariant: a commit file is never overwritten. The next version is put
 * create-only (LS_OBJSTORE_PUT_CREATE_ONLY: an exclusive link on the local
 * store, If-None-Match: * on S3), so of two writers of one version exactly
 * one wins; the other gets LS_ECONFLICT and must load the log again.
 *
 * A checkpoint is written before _last_checkpoint names it, and log files
 * are deleted only below a checkpoint _last_checkpoint already names or
 * passed, so every loader finds a checkpoint and the commits after it.
 *
 * Threads: a log object belongs to one thread; the store is thread-safe. */
#ifndef LS_DELTA_LOG_H
#define LS_DELTA_LOG_H
#include "base/status.h"
#include "objstore/objstore.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LS_DELTA_LOG_DIR "_delta_log"

typedef struct ls_delta_log ls_delta_log_t;

/* Replays the commits under <prefix>/_delta_log/. An empty log (no table
 * yet) loads as version -1. LS_ECORRUPT (err) for a commit that is not
 * JSON actions or a gap in the versions; the store's status otherwise. */
ls_status ls_delta_log_load(ls_objstore_t *os, const char *prefix, ls_delta_log_t **out, char *err,
                            size_t errlen);
void ls_delta_log_free(ls_delta_log_t *l);

int64_t ls_delta_log_version(const ls_delta_log_t *l); /* -1: no commit */
/* The version of the newest txn action of app_id, or -1. */
int64_t ls_delta_log_txn(const ls_delta_log_t *l, const char *app_id);
/* Whether path (as the log spells it) is added and not removed since. */
bool ls_delta_log_live(const ls_delta_log_t *l, const char *path);
int64_t ls_delta_log_live_size(const ls_delta_log_t *l, const char *path); /* its add's size */
/* The live paths, in no order: n of them, borrowed from l. */
const char **ls_delta_log_live_paths(const ls_delta_log_t *l, size_t *n);
/* The current metaData's schemaString, configuration (JSON object text,
 * ls_free it) and id; NULL before the first metaData. */
const char *ls_delta_log_schema(const ls_delta_log_t *l);
char *ls_delta_log_configuration(const ls_delta_log_t *l);
const char *ls_delta_log_table_id(const ls_delta_log_t *l);
int ls_delta_log_reader_version(const ls_delta_log_t *l); /* protocol's; 0: none */

/* The next commit, built action by action; commitInfo comes first. */
typedef struct ls_delta_commit ls_delta_commit_t;
ls_delta_commit_t *ls_delta_commit_new(int64_t now_ms, const char *operation);
void ls_delta_commit_free(ls_delta_commit_t *c);
/* protocol: reader/writer versions; features (NULL-terminated, or NULL) are
 * both reader and writer features (reader version 3, writer version 7). */
void ls_delta_commit_protocol(ls_delta_commit_t *c, int min_reader, int min_writer,
                              const char *const *features);
/* metaData: id, the schema (Delta's JSON schema text), no partition columns,
 * configuration: NULL-terminated key, value, ... */
void ls_delta_commit_metadata(ls_delta_commit_t *c, const char *id, const char *schema_string,
                              const char *const *configuration, int64_t created_ms);
/* add: path relative to the table root (encoded by ls_delta_path_encode);
 * stats: JSON text or NULL. */
void ls_delta_commit_add(ls_delta_commit_t *c, const char *path, int64_t size, int64_t mtime_ms,
                         const char *stats);
void ls_delta_commit_remove(ls_delta_commit_t *c, const char *path, int64_t size);
void ls_delta_commit_txn(ls_delta_commit_t *c, const char *app_id, int64_t version);
/* How many add and remove actions it holds; how many actions (commitInfo too). */
size_t ls_delta_commit_files(const ls_delta_commit_t *c);
size_t ls_delta_commit_actions(const ls_delta_commit_t *c);
/* The commit's bytes: one JSON action per line (ls_free it). */
char *ls_delta_commit_encode(const ls_delta_commit_t *c, size_t *len);
/* Puts c as version ls_delta_log_version(l) + 1, create-only. LS_ECONFLICT
 * when that version exists (another writer's: load the log again); the
 * store's status (err) otherwise. On LS_OK, l is not updated: load again. */
ls_status ls_delta_commit_put(ls_objstore_t *os, const char *prefix, const ls_delta_log_t *l,
                              const ls_delta_commit_t *c, char *err, size_t errlen);

/* Writes the checkpoint of l's version (its protocol, metaData, txns, live
 * adds and the removes of files deleted at or after tombs_after_ms), then
 * _last_checkpoint naming it. The store's status (err) on failure. */
ls_status ls_delta_log_checkpoint(ls_objstore_t *os, const char *prefix, const ls_delta_log_t *l,
                                  int64_t tombs_after_ms, char *err, size_t errlen);
/* Deletes the commits and checkpoints below the newest checkpoint of
 * version <= upto_version that was written before older_than_ms: the
 * versions before it are older than the log's retention and no reader
 * needs them to read a later one. *deleted counts the files. */
ls_status ls_delta_log_cleanup(ls_objstore_t *os, const char *prefix, int64_t upto_version,
                               int64_t older_than_ms, size_t *deleted, char *err, size_t errlen);

/* Deletes the whole log once its every file was written before
 * older_than_ms (nothing otherwise), newest version first: a table whose
 * format no longer has delta. *deleted counts the files. */
ls_status ls_delta_log_drop(ls_objstore_t *os, const char *prefix, int64_t older_than_ms,
                            size_t *deleted, char *err, size_t errlen);

/* A path as a Delta log spells it: an RFC 2396 relative URI, every byte
 * but unreserved characters, '/' and '=' percent-encoded (ls_free it). */
char *ls_delta_path_encode(const char *path);
#endif
