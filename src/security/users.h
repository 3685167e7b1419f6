/* SCRAM users: their credentials in the metadata store.
 *
 * One key per user, /ls/users/<name as a key part> (docs/FORMATS.md), whose
 * value is JSON: {"name": ..., "SCRAM-SHA-256": {"salt", "iterations",
 * "stored_key", "server_key"}, "SCRAM-SHA-512": {...}} (bytes in base64).
 * Never the password, never the salted password: what is stored cannot be
 * used to log in (security/scram.h). A user with no credential left has no
 * key.
 *
 * Every authentication reads the store (no cache), so a user added, changed
 * or deleted through any broker of the cluster applies to the next
 * authentication on every broker at once. Writes are compare-and-set on the
 * user's key (retried on a conflict), so two brokers altering one user
 * never lose a change.
 *
 * All calls block on the store: worker threads only. */
#ifndef LS_SECURITY_USERS_H
#define LS_SECURITY_USERS_H
#include <stdbool.h>
#include <stddef.h>

#include "base/status.h"
#include "meta/meta.h"
#include "security/scram.h"

typedef struct ls_user {
    char *name;
    bool has[3]; /* indexed by ls_scram_mech */
    ls_scram_cred_t cred[3];
} ls_user_t;

void ls_user_free(ls_user_t *u);

/* The user's credentials. LS_ENOTFOUND when the user has none; *rev (may be
 * NULL) is the key's mod_rev (0 when absent) for ls_users_put. */
ls_status ls_users_get(ls_meta_t *m, const char *name, ls_user_t *out, int64_t *rev);
/* Every user, sorted by key. *out: ls_free each with ls_user_free, then the array. */
ls_status ls_users_list(ls_meta_t *m, ls_user_t **out, size_t *n);
/* Writes u (deletes its key when it has no credential) if the key is still at
 * rev (0: absent). LS_ECONFLICT when it changed meanwhile: read and retry. */
ls_status ls_users_put(ls_meta_t *m, const ls_user_t *u, int64_t rev);
#endif
