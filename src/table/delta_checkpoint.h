/* Delta Lake checkpoint files (the Delta protocol's "Checkpoints", classic
 * single-file form): the actions that make up a table version, one per
 * Parquet row, in the checkpoint schema — top-level optional structs txn,
 * add, remove, metaData and protocol, exactly one of them non-null per row;
 * partitionValues, format.options and configuration as MAP<string,string>,
 * partitionColumns and the feature lists as LIST<string>.
 *
 * A pure codec: actions in as JSON, Parquet bytes out, and back. The fields
 * it holds are the ones this writer's actions carry (delta_log.h); others
 * are dropped. No state, any thread. */
#ifndef LS_DELTA_CHECKPOINT_H
#define LS_DELTA_CHECKPOINT_H
#include <jansson.h>
#include "base/buf.h"
#include "base/status.h"

/* actions: a JSON array of single-key action objects ({"add": {...}}, ...).
 * The checkpoint's bytes into out (zstd). LS_EINVAL (err) for an action of
 * another kind. */
ls_status ls_delta_checkpoint_encode(json_t *actions, ls_buf_t *out, char *err, size_t errlen);
/* The actions of a checkpoint's bytes (a new JSON array in *out).
 * LS_ECORRUPT / LS_EINVAL (err) for a file that is not one. */
ls_status ls_delta_checkpoint_decode(const uint8_t *data, size_t len, json_t **out, char *err,
                                     size_t errlen);
#endif
