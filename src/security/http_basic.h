/* HTTP Basic authentication against the SCRAM users of the metadata store
 * (security/users.h): the check behind http.authentication=basic and
 * schema.registry.authentication=basic.
 *
 * A password is right when PBKDF2 with the user's stored salt and iterations
 * gives the stored StoredKey (ls_scram_cred_check_password; constant time).
 * PBKDF2 costs as much as a SCRAM login, and an HTTP client sends its
 * password with every request, so a successful check is remembered for
 * LS_HTTP_BASIC_CACHE_MS: as an HMAC of the password under a per-process
 * random key, beside the StoredKey it was checked against. The user is still
 * read from the store on every request, so a deleted user or a changed
 * password applies at once (the StoredKey no longer matches); only the
 * PBKDF2 is skipped. Failed checks are never cached; an unknown user costs a
 * PBKDF2 too (a decoy credential), so timing does not tell which users exist.
 *
 * Thread-safe (a mutex around the cache); blocks on the store: HTTP worker
 * threads only. */
#ifndef LS_SECURITY_HTTP_BASIC_H
#define LS_SECURITY_HTTP_BASIC_H
#include <stdbool.h>
#include <stddef.h>

#include "meta/meta.h"

#define LS_HTTP_BASIC_CACHE_MS 60000
#define LS_HTTP_BASIC_CACHE_SLOTS 64

typedef struct ls_http_basic ls_http_basic_t;

ls_http_basic_t *ls_http_basic_new(ls_meta_t *meta);
void ls_http_basic_free(ls_http_basic_t *b);

/* An ls_http_auth_fn (http/http_server.h) with arg the ls_http_basic_t:
 * authorization is "Basic base64(user:password)" or NULL. */
bool ls_http_basic_check(void *arg, const char *authorization, char *principal, size_t pcap,
                         char *reason, size_t rcap);
#endif
