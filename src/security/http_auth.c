/* Dispatch of an HTTP request's credentials to Basic or Bearer (see
 * http_auth.h). */
#include "security/http_auth.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "base/status.h"

/* What this listener takes, for the reasons of a refusal. */
static const char *taken(const ls_http_authn_t *a)
{
    return a->basic && a->bearer ? "Basic with a SCRAM user or Bearer with a JWT"
           : a->basic            ? "Basic with a SCRAM user"
                                 : "Bearer with a JWT";
}

static bool bearer_check(ls_oauth_t *o, const char *token, char *principal, size_t pcap,
                         char *reason, size_t rcap)
{
    while (*token == ' ')
        token++;
    size_t n = strlen(token);
    while (n && token[n - 1] == ' ')
        n--;
    char sub[256], why[200];
    int64_t exp_ms;
    if (ls_oauth_validate(o, token, n, sub, sizeof sub, &exp_ms, why, sizeof why) != LS_OK) {
        snprintf(reason, rcap, "invalid bearer token: %s", why);
        return false;
    }
    snprintf(principal, pcap, "User:%s", sub);
    return true;
}

bool ls_http_authn_check(void *arg, const char *authorization, char *principal, size_t pcap,
                         char *reason, size_t rcap)
{
    const ls_http_authn_t *a = arg;
    if (authorization && a->basic && !strncasecmp(authorization, "Basic ", 6))
        return ls_http_basic_check(a->basic, authorization, principal, pcap, reason, rcap);
    if (authorization && a->bearer && !strncasecmp(authorization, "Bearer ", 7))
        return bearer_check(a->bearer, authorization + 7, principal, pcap, reason, rcap);
    snprintf(reason, rcap, "%s (this listener takes %s)",
             authorization ? "unsupported Authorization scheme" : "authentication required",
             taken(a));
    return false;
}
