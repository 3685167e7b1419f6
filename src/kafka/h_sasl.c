/* SaslHandshake (key 17) and SaslAuthenticate (key 36): the Kafka side of
 * SASL (security/sasl.h does the mechanisms). The connection's state
 * machine is in api.h (ls_ksasl_t); conn.c gates other requests on it.
 *
 * As Kafka: on a listener without SASL both are answered ILLEGAL_SASL_STATE;
 * a handshake naming a mechanism not in sasl.enabled.mechanisms is answered
 * UNSUPPORTED_SASL_MECHANISM with the enabled list, then the connection
 * closes; a SaslAuthenticate before a handshake, or a second handshake
 * mid-exchange, is ILLEGAL_SASL_STATE and closes; a failed exchange is
 * answered SASL_AUTHENTICATION_FAILED with Kafka's message, then closes. A
 * re-authentication (KIP-368: a handshake on an authenticated connection
 * whose client used SaslAuthenticate v1+) must keep the mechanism and the
 * principal; with connections.max.reauth.ms set, an OAUTHBEARER session's
 * lifetime is capped by its token's exp. Exchange steps read the credential
 * store and run PBKDF2 or a signature check, so they run on a worker; one
 * step at a time per connection. */
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/clock.h"
#include "base/diag.h"
#include "kafka/api.h"
#include "kafka/handlers.h"
#include "kafka/msg.h"
#include "kafka/services.h"
#include "security/sasl.h"

static void handshake_respond(ls_kreq_t *req, int16_t err, bool close)
{
    const char *names[LS_SASL_NMECHS];
    int n = ls_sasl_mech_names(req->svc->sasl_mechanisms, names);
    ls_kafka_SaslHandshakeResponse resp = {.ErrorCode = err, .NumMechanisms = n};
    resp.Mechanisms = ls_arena_alloc(req->arena, (size_t)n * sizeof *resp.Mechanisms + 1);
    for (int i = 0; i < n; i++)
        resp.Mechanisms[i] = ls_kstr_c(names[i]);
    ls_kw_t w;
    ls_kreq_encode(req, &w, &resp);
    if (close)
        ls_kreq_respond_close(req, &w);
    else
        ls_kreq_respond(req, &w);
}

void ls_kafka_handle_sasl_handshake(ls_kreq_t *req)
{
    ls_kafka_SaslHandshakeRequest *m = req->msg;
    ls_ksasl_t *a = ls_kreq_sasl(req);
    if (!ls_kreq_needs_sasl(req)) {
        handshake_respond(req, LS_KERR_ILLEGAL_SASL_STATE, false);
        return;
    }
    bool reauth = a->state == LS_KSASL_AUTHENTICATED;
    if (a->state == LS_KSASL_HANDSHAKEN || a->busy ||
        (reauth && (!a->reauth_ok || req->api_version < 1))) {
        LS_WARN_RL("sasl", "%s: SaslHandshake v%d out of place (%s): closing", ls_kreq_peer(req),
                   req->api_version,
                   reauth ? "re-authentication needs SaslAuthenticate v1+" : "exchange under way");
        handshake_respond(req, LS_KERR_ILLEGAL_SASL_STATE, true);
        return;
    }
    ls_sasl_mech mech;
    if (!ls_sasl_mech_from_name(m->Mechanism.ptr,
                                m->Mechanism.len > 0 ? (size_t)m->Mechanism.len : 0, &mech) ||
        !(req->svc->sasl_mechanisms & (unsigned)mech) || (reauth && (int)mech != a->mech)) {
        LS_WARN_RL("sasl", "%s: SASL mechanism '%.*s' is not enabled%s: closing", ls_kreq_peer(req),
                   m->Mechanism.len > 64 ? 64 : (int)m->Mechanism.len,
                   m->Mechanism.ptr ? m->Mechanism.ptr : "",
                   reauth ? " for this re-authentication (it must keep its mechanism)"
                          : " (sasl.enabled.mechanisms)");
        handshake_respond(req, LS_KERR_UNSUPPORTED_SASL_MECHANISM, true);
        return;
    }
    ls_sasl_session_free(a->session);
    a->session = ls_sasl_session_new(mech, req->svc->oauth);
    a->mech = (int)mech;
    a->state = LS_KSASL_HANDSHAKEN;
    a->raw = req->api_version == 0;
    handshake_respond(req, LS_KERR_NONE, false);
}

typedef struct auth_job {
    ls_kreq_t *req;
    const uint8_t *in;
    size_t n;
    ls_sasl_result res;
    ls_buf_t out;
    char err[640];
} auth_job_t;

static void auth_work(void *arg)
{
    auth_job_t *j = arg;
    ls_ksasl_t *a = ls_kreq_sasl(j->req);
    j->res = ls_sasl_step(a->session, j->req->svc->users_meta, j->in, j->n, &j->out, j->err,
                          sizeof j->err);
}

static void auth_respond(ls_kreq_t *req, int16_t err, const char *msg, const ls_buf_t *token,
                         int64_t lifetime_ms, bool close)
{
    if (req->raw) {
        /* v0 handshake: a bare token, or (no way to say why) a closed connection */
        if (err != LS_KERR_NONE) {
            ls_kreq_close(req, msg);
            return;
        }
        ls_kw_t w;
        ls_kreq_begin(req, &w);
        ls_kw_raw(&w, token->data, token->len);
        ls_kreq_respond(req, &w);
        return;
    }
    ls_kafka_SaslAuthenticateResponse resp = {
        .ErrorCode = err,
        .ErrorMessage = msg ? ls_kstr_c(msg) : (ls_kstr_t){NULL, -1},
        .AuthBytes = {token && token->len ? token->data : (const uint8_t *)"",
                      token ? (int32_t)token->len : 0},
        .SessionLifetimeMs = lifetime_ms,
    };
    ls_kw_t w;
    ls_kreq_encode(req, &w, &resp);
    if (close)
        ls_kreq_respond_close(req, &w);
    else
        ls_kreq_respond(req, &w);
}

static void auth_done(void *arg)
{
    auth_job_t *j = arg;
    ls_kreq_t *req = j->req;
    ls_ksasl_t *a = ls_kreq_sasl(req);
    a->busy = false;
    const char *mech = ls_sasl_mech_name((ls_sasl_mech)a->mech);
    if (j->res == LS_SASL_CONTINUE) {
        auth_respond(req, LS_KERR_NONE, NULL, &j->out, 0, false);
    } else if (j->res == LS_SASL_FAILURE) {
        LS_WARN_RL("sasl", "failed authentication from %s with %s: %s", ls_kreq_peer(req), mech,
                   j->err);
        auth_respond(req, LS_KERR_SASL_AUTHENTICATION_FAILED, j->err, NULL, 0, true);
    } else {
        char principal[300];
        snprintf(principal, sizeof principal, "User:%s", a->session->user);
        if (a->authenticated && strcmp(principal, ls_kreq_principal(req)) != 0) {
            snprintf(j->err, sizeof j->err,
                     "Cannot change principals during re-authentication from %s: %s",
                     ls_kreq_principal(req), principal);
            LS_WARN_RL("sasl", "failed re-authentication from %s: %s", ls_kreq_peer(req), j->err);
            auth_respond(req, LS_KERR_SASL_AUTHENTICATION_FAILED, j->err, NULL, 0, true);
        } else {
            int64_t reauth_ms = req->svc->cfg->connections_max_reauth_ms;
            /* KIP-368 as Kafka: with re-authentication on, a session never
             * outlives its credential (an OAUTHBEARER token's exp) */
            if (reauth_ms > 0 && a->session->expires_ms) {
                int64_t left = a->session->expires_ms - ls_clock_wall_ms();
                if (left < reauth_ms) reauth_ms = left > 1 ? left : 1;
            }
            if (!a->authenticated)
                LS_DEBUG("sasl", "%s authenticated as %s with %s", ls_kreq_peer(req), principal,
                         mech);
            ls_kconn_set_principal(req->conn, principal);
            a->authenticated = true;
            a->state = LS_KSASL_AUTHENTICATED;
            a->reauth_ok = !req->raw && req->api_version >= 1;
            a->expires_ms = reauth_ms > 0 ? ls_clock_mono_ms() + reauth_ms : 0;
            a->raw = false;
            ls_sasl_session_free(a->session);
            a->session = NULL;
            auth_respond(req, LS_KERR_NONE, NULL, &j->out, reauth_ms, false);
        }
    }
    ls_buf_free(&j->out);
    ls_free(j);
}

void ls_kafka_handle_sasl_authenticate(ls_kreq_t *req)
{
    ls_kafka_SaslAuthenticateRequest *m = req->msg;
    ls_ksasl_t *a = ls_kreq_sasl(req);
    if (!ls_kreq_needs_sasl(req) || a->state == LS_KSASL_AUTHENTICATED) {
        auth_respond(req, LS_KERR_ILLEGAL_SASL_STATE,
                     ls_kreq_needs_sasl(req)
                         ? "SaslAuthenticate request received after successful authentication"
                         : "SaslAuthenticate request received on a listener without SASL",
                     NULL, 0, false);
        return;
    }
    if (a->state != LS_KSASL_HANDSHAKEN || a->busy || (a->raw && !req->raw)) {
        auth_respond(req, LS_KERR_ILLEGAL_SASL_STATE,
                     "Unexpected SaslAuthenticate request: no SaslHandshake (v1) before it or an "
                     "exchange step still running",
                     NULL, 0, true);
        return;
    }
    auth_job_t *j = LS_NEW(auth_job_t);
    j->req = req;
    j->in = m->AuthBytes.ptr ? m->AuthBytes.ptr : (const uint8_t *)"";
    j->n = m->AuthBytes.len > 0 ? (size_t)m->AuthBytes.len : 0;
    ls_buf_init(&j->out);
    a->busy = true;
    ls_ksvc_offload(req->svc, auth_work, auth_done, j);
}
