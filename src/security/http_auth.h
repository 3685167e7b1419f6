/* The credentials an HTTP listener takes (http.authentication,
 * schema.registry.authentication): HTTP Basic with a SCRAM user
 * (security/http_basic.h), Bearer with a JWT checked like a SASL/OAUTHBEARER
 * token (security/oauth.h), or both. One ls_http_auth_fn dispatches on the
 * Authorization header's scheme to the checks this listener enables; a
 * scheme it does not enable is refused as if absent, naming the ones it
 * takes. Stateless beyond its two pointers, which it does not own:
 * thread-safe as they are. */
#ifndef LS_SECURITY_HTTP_AUTH_H
#define LS_SECURITY_HTTP_AUTH_H
#include <stdbool.h>
#include <stddef.h>

#include "base/config.h" /* LS_HTTP_AUTH_*, ls_config_http_auth */
#include "security/http_basic.h"
#include "security/oauth.h"

typedef struct ls_http_authn {
    ls_http_basic_t *basic; /* NULL: Basic not taken */
    ls_oauth_t *bearer;     /* NULL: Bearer not taken */
} ls_http_authn_t;

/* An ls_http_auth_fn (http/http_server.h) with arg an ls_http_authn_t. The
 * principal of a Bearer token is "User:" and its subject claim, as on a
 * SASL/OAUTHBEARER connection. */
bool ls_http_authn_check(void *arg, const char *authorization, char *principal, size_t pcap,
                         char *reason, size_t rcap);
#endif
