/* Private to registry/registry*.c: what the files of the registry share.
 * The registry object and its error helpers (registry.c); schema identity
 * and the compatibility rules (registry_schema.c); the store's keys, the
 * txn builder, the retry pacing and the reads every operation starts from
 * (registry_store.c); the mode check every write makes first
 * (registry_config.c). The stored keys and the invariants are in
 * registry.h. */
#ifndef LS_REGISTRY_REGISTRY_INT_H
#define LS_REGISTRY_REGISTRY_INT_H
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/i64map.h"
#include "meta/meta.h"
#include "registry/registry.h"
#include "meta/meta_keys.h"

/* The registry's keys in ls_meta lie under LS_KEY_REGISTRY (meta/meta_keys.h). */
/* Versions per txn of a subject deletion: a permanent one deletes two keys
 * per version, plus the head, config and mode keys and one compare, within
 * the store's txn bound (etcd: 128). */
#define TXN_CHUNK 60

typedef struct latest_entry {
    char *subject;
    uint64_t gen;
    ls_sr_version_t v;
} latest_entry_t;

struct ls_registry {
    ls_meta_t *meta;
    pthread_mutex_t mu;
    ls_i64map_t schemas; /* id -> ls_sr_schema_t* (one reference each) */
    size_t schema_bytes; /* their texts and canonical forms */
    latest_entry_t *latest;
    size_t nlatest;
    uint64_t gen; /* atomic */
    ls_meta_watch_t *watch;
    int watch_lost; /* atomic */
};

/* ---- errors (registry.c) ---- */

/* Fills e (code and formatted message) and returns code. */
__attribute__((format(printf, 3, 4))) ls_sr_code ls_sr_seterr(ls_sr_err_t *e, ls_sr_code code,
                                                              const char *fmt, ...);
/* A store failure while doing `what`: logged, and answered as
 * LS_SR_STORE_ERROR. */
ls_sr_code ls_sr_store_err(ls_registry_t *r, ls_sr_err_t *e, const char *what, ls_status st);

/* ---- schema objects and compatibility (registry_schema.c) ---- */

void ls_sr_refs_free(ls_sr_ref_t *refs, size_t n);
/* Parses text of type with the texts of its references (dependencies
 * first; names[i] is the reference name texts[i] was reached by); refs
 * (resolved: no -1 versions) are copied into the result. */
ls_sr_code ls_sr_parse(ls_sr_type type, const char *text, const ls_sr_ref_t *refs, size_t nrefs,
                       const char *const *names, const char *const *deps, size_t ndeps,
                       ls_sr_schema_t **out, ls_sr_err_t *e);
/* Whether a and b are one schema: type, canonical text and references. */
bool ls_sr_same_identity(const ls_sr_schema_t *a, const ls_sr_schema_t *b);
/* The hash of that identity: the digest bucket it is found in. */
uint64_t ls_sr_identity_hash(const ls_sr_schema_t *s);
/* One check of candidate against one previous version, in the directions
 * the level asks. */
bool ls_sr_compatible_with(ls_sr_compat level, const ls_sr_schema_t *cand,
                           const ls_sr_schema_t *prev, int32_t prev_version, ls_buf_t *why);
/* Checks cand against the live versions under level (their version
 * numbers in the reasons). */
bool ls_sr_check_against(ls_sr_compat level, const ls_sr_schema_t *cand, ls_sr_schema_t **prev,
                         const int32_t *versions, size_t n, ls_buf_t *why);

/* ---- keys (registry_store.c) ---- */

typedef struct key {
    char s[LS_SR_MAX_SUBJECT * 3 + 128];
} key_t_;

__attribute__((format(printf, 2, 3))) const char *ls_sr_kfmt(key_t_ *k, const char *fmt, ...);
/* LS_KEY_REGISTRY<what><encoded subject><suffix> */
const char *ls_sr_ksub(key_t_ *k, const char *what, const char *subject, const char *suffix);
/* LS_KEY_REGISTRY usage/<id>/<encoded subject>/<version> */
const char *ls_sr_kusage(key_t_ *k, int32_t id, const char *subject, int32_t version);

/* ---- txn builder and retries (registry_store.c) ---- */

/* Compares and operations of one txn, with the strings it owns. */
typedef struct txn {
    ls_meta_cmp_t cmps[8];
    size_t ncmp;
    ls_meta_op_t ops[LS_SR_MAX_REFERENCES + TXN_CHUNK * 2 + 16];
    size_t nops;
    char *owned[LS_SR_MAX_REFERENCES + TXN_CHUNK * 4 + 32];
    size_t nowned;
} txn_t;

txn_t *ls_sr_tx_new(void);
void ls_sr_tx_free(txn_t *t);
void ls_sr_tx_cmp(txn_t *t, const char *key, int64_t rev);
void ls_sr_tx_put(txn_t *t, const char *key, const char *val);
void ls_sr_tx_del(txn_t *t, const char *key);
/* Commits and empties t; a commit bumps the latest-version generation. */
ls_status ls_sr_tx_commit(ls_registry_t *r, txn_t *t, int64_t *rev);
/* The start of optimistic attempt number `attempt` on a subject: after the
 * first, a little backoff, growing; past MAX_ATTEMPTS the store error the
 * caller answers. */
ls_sr_code ls_sr_attempt_start(int attempt, const char *subject, ls_sr_err_t *e);
/* Whether a failed commit is worth another attempt from fresh reads. */
bool ls_sr_commit_retryable(ls_status st);

/* ---- store reads (registry_store.c) ---- */

/* The subject's versions (ascending, soft-deleted included) and its head's
 * revision (0: no head). */
typedef struct subject_state {
    int64_t head_rev;
    ls_sr_version_t *v;
    size_t n;
} subject_state_t;

void ls_sr_subject_state_free(subject_state_t *s);
ls_sr_code ls_sr_read_subject(ls_registry_t *r, const char *subject, subject_state_t *out,
                              ls_sr_err_t *e);
/* The newest live version; NULL when none is. */
const ls_sr_version_t *ls_sr_latest_live(const subject_state_t *s);
bool ls_sr_any_live(const subject_state_t *s);
const ls_sr_version_t *ls_sr_find_version(const subject_state_t *s, int32_t version);

/* The stored record of id: type, text, refs. */
typedef struct record {
    ls_sr_type type;
    char *text;
    ls_sr_ref_t *refs;
    size_t nrefs;
} record_t;

void ls_sr_record_free(record_t *rec);
ls_sr_code ls_sr_read_record(ls_registry_t *r, int32_t id, record_t *out, ls_sr_err_t *e);
/* Parses a schema and its references' texts from the store. */
ls_sr_code ls_sr_parse_with_refs(ls_registry_t *r, ls_sr_type type, const char *text,
                                 const ls_sr_ref_t *refs, size_t nrefs, ls_sr_schema_t **out,
                                 ls_sr_err_t *e);

/* ---- modes (registry_config.c) ---- */

/* LS_SR_NOT_PERMITTED while the subject (or the registry) is read-only. */
ls_sr_code ls_sr_check_writable(ls_registry_t *r, const char *subject, ls_sr_err_t *e);
#endif
