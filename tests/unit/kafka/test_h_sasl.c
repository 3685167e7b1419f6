/* SaslHandshake and SaslAuthenticate handlers (kafka/h_sasl.c), through the
 * handler harness (kafka_fake.h) on its SASL_PLAINTEXT listener with the
 * PLAIN mechanism checked against a SCRAM user of the metadata store: a
 * good exchange authenticates the connection as User:<name>; a listener
 * without SASL answers ILLEGAL_SASL_STATE and keeps the connection; an
 * unknown or disabled mechanism (UNSUPPORTED_SASL_MECHANISM, naming the
 * enabled ones), a step out of order (ILLEGAL_SASL_STATE) or a wrong
 * password (SASL_AUTHENTICATION_FAILED) is answered, then the connection
 * closes; a re-authentication keeps its mechanism and its principal. */
#include "kafka_fake.h"
#include "security/sasl.h"
#include "security/users.h"
#include "unit.h"

static kf_env_t E;

#define MECHS (LS_SASL_PLAIN | LS_SASL_SCRAM_SHA_256)

/* Stores user with password (a SCRAM-SHA-256 credential, which PLAIN
 * checks): 0 or -1. */
static int add_user(const char *user, const char *password)
{
    static const uint8_t salt[8] = "saltsalt";
    uint8_t salted[LS_SCRAM_MAX_KEY];
    ls_user_t u = {.name = (char *)user};
    u.has[LS_SCRAM_SHA_256] = true;
    if (ls_scram_salt_password(LS_SCRAM_SHA_256, password, strlen(password), salt, sizeof salt,
                               LS_SCRAM_MIN_ITERATIONS, salted) != LS_OK ||
        ls_scram_cred_from_salted(LS_SCRAM_SHA_256, salted, ls_scram_key_len(LS_SCRAM_SHA_256),
                                  salt, sizeof salt, LS_SCRAM_MIN_ITERATIONS,
                                  &u.cred[LS_SCRAM_SHA_256]) != LS_OK)
        return -1;
    return ls_users_put(E.meta, &u, 0) == LS_OK ? 0 : -1;
}

/* SaslHandshake v1 naming mech: the error code (-1000: no answer); the
 * mechanisms offered, comma-separated, in offered[256]. */
static int handshake(const char *mech, char *offered)
{
    ls_kafka_SaslHandshakeRequest m = {.Mechanism = ls_kstr_c(mech)};
    ls_arena_t *a = ls_arena_new();
    ls_kafka_SaslHandshakeResponse r;
    int code = -1000;
    if (offered) offered[0] = 0;
    if (kf_call(&E, 17, 1, &m, &r, a) == 0) {
        code = r.ErrorCode;
        for (int32_t i = 0; offered && i < r.NumMechanisms; i++)
            snprintf(offered + strlen(offered), 256 - strlen(offered), "%s%.*s", i ? "," : "",
                     (int)r.Mechanisms[i].len, r.Mechanisms[i].ptr);
    }
    ls_arena_free(a);
    return code;
}

/* SaslAuthenticate v2 with PLAIN's token for user and password: the error
 * code (-1000: no answer), its message in msg[256]. */
static int authenticate(const char *user, const char *password, char *msg)
{
    char token[256];
    int n = snprintf(token, sizeof token, "%c%s%c%s", 0, user, 0, password);
    ls_kafka_SaslAuthenticateRequest m = {.AuthBytes = {(const uint8_t *)token, n}};
    ls_arena_t *a = ls_arena_new();
    ls_kafka_SaslAuthenticateResponse r;
    int code = -1000;
    if (msg) msg[0] = 0;
    if (kf_call(&E, 36, 2, &m, &r, a) == 0) {
        code = r.ErrorCode;
        if (msg && r.ErrorMessage.len > 0)
            snprintf(msg, 256, "%.*s", (int)r.ErrorMessage.len, r.ErrorMessage.ptr);
    }
    ls_arena_free(a);
    return code;
}

/* The connection's principal as the authorizer sees it: whether a
 * DescribeAcls passes with only `super` a super user. */
static bool acts_as(const char *super)
{
    if (kf_authz_on(&E, super) != 0) return false;
    ls_kafka_DescribeAclsRequest m = {.ResourceTypeFilter = LS_ACL_RES_ANY,
                                      .ResourceNameFilter = ls_kstr_null(),
                                      .PatternTypeFilter = LS_ACL_PAT_ANY,
                                      .PrincipalFilter = ls_kstr_null(),
                                      .HostFilter = ls_kstr_null(),
                                      .Operation = LS_ACL_OP_ANY,
                                      .PermissionType = LS_ACL_PERM_ANY};
    ls_arena_t *a = ls_arena_new();
    ls_kafka_DescribeAclsResponse r;
    bool ok = kf_call(&E, 29, 3, &m, &r, a) == 0 && r.ErrorCode == LS_KERR_NONE;
    ls_arena_free(a);
    kf_authz_off(&E);
    return ok;
}

TEST(plain_authenticates_the_connection)
{
    CHECK(add_user("alice", "alice-secret") == 0);
    CHECK(kf_sasl_listener(&E, MECHS) == 0);
    char offered[256];
    CHECK_EQ_INT(handshake("PLAIN", offered), LS_KERR_NONE);
    CHECK(strcmp(offered, "PLAIN,SCRAM-SHA-256") == 0);
    CHECK_EQ_INT(authenticate("alice", "alice-secret", NULL), LS_KERR_NONE);
    CHECK(acts_as("User:alice"));
    CHECK(!acts_as("User:ANONYMOUS"));
    /* a second SaslAuthenticate is out of place, and answered */
    char msg[256];
    CHECK_EQ_INT(authenticate("alice", "alice-secret", msg), LS_KERR_ILLEGAL_SASL_STATE);
    CHECK(strstr(msg, "after successful authentication") != NULL);
    CHECK(kf_plaintext_listener(&E) == 0);
}

TEST(listener_without_sasl_answers_illegal_state)
{
    CHECK(kf_plaintext_listener(&E) == 0);
    CHECK_EQ_INT(handshake("PLAIN", NULL), LS_KERR_ILLEGAL_SASL_STATE);
    char msg[256];
    CHECK_EQ_INT(authenticate("alice", "alice-secret", msg), LS_KERR_ILLEGAL_SASL_STATE);
    CHECK(strstr(msg, "without SASL") != NULL);
    CHECK(acts_as("User:ANONYMOUS")); /* still open, still anonymous */
}

TEST(unsupported_mechanism_names_the_enabled_ones_and_closes)
{
    CHECK(kf_sasl_listener(&E, MECHS) == 0);
    char offered[256];
    CHECK_EQ_INT(handshake("GSSAPI", offered), LS_KERR_UNSUPPORTED_SASL_MECHANISM);
    CHECK(strcmp(offered, "PLAIN,SCRAM-SHA-256") == 0);
    CHECK(kf_closed(&E));
    /* known, but not enabled on this listener */
    CHECK(kf_reconnect(&E) == 0);
    CHECK_EQ_INT(handshake("SCRAM-SHA-512", NULL), LS_KERR_UNSUPPORTED_SASL_MECHANISM);
    CHECK(kf_closed(&E));
    CHECK(kf_plaintext_listener(&E) == 0);
}

TEST(authenticate_before_handshake_is_illegal_and_closes)
{
    CHECK(kf_sasl_listener(&E, MECHS) == 0);
    char msg[256];
    CHECK_EQ_INT(authenticate("alice", "alice-secret", msg), LS_KERR_ILLEGAL_SASL_STATE);
    CHECK(strstr(msg, "no SaslHandshake") != NULL);
    CHECK(kf_closed(&E));
    CHECK(kf_plaintext_listener(&E) == 0);
}

TEST(second_handshake_mid_exchange_is_illegal_and_closes)
{
    CHECK(kf_sasl_listener(&E, MECHS) == 0);
    CHECK_EQ_INT(handshake("PLAIN", NULL), LS_KERR_NONE);
    CHECK_EQ_INT(handshake("PLAIN", NULL), LS_KERR_ILLEGAL_SASL_STATE);
    CHECK(kf_closed(&E));
    CHECK(kf_plaintext_listener(&E) == 0);
}

TEST(wrong_password_fails_and_closes)
{
    CHECK(add_user("bob", "bob-secret") == 0);
    CHECK(kf_sasl_listener(&E, MECHS) == 0);
    CHECK_EQ_INT(handshake("PLAIN", NULL), LS_KERR_NONE);
    char msg[256];
    CHECK_EQ_INT(authenticate("bob", "not-bobs", msg), LS_KERR_SASL_AUTHENTICATION_FAILED);
    CHECK(msg[0] != 0);
    CHECK(strstr(msg, "not-bobs") == NULL); /* never the password */
    CHECK(kf_closed(&E));
    CHECK(kf_plaintext_listener(&E) == 0);
}

TEST(reauthentication_keeps_mechanism_and_principal)
{
    CHECK(add_user("carol", "carol-secret") == 0);
    CHECK(add_user("dave", "dave-secret") == 0);
    CHECK(kf_sasl_listener(&E, MECHS) == 0);
    CHECK_EQ_INT(handshake("PLAIN", NULL), LS_KERR_NONE);
    CHECK_EQ_INT(authenticate("carol", "carol-secret", NULL), LS_KERR_NONE);
    /* the same principal again: fine */
    CHECK_EQ_INT(handshake("PLAIN", NULL), LS_KERR_NONE);
    CHECK_EQ_INT(authenticate("carol", "carol-secret", NULL), LS_KERR_NONE);
    CHECK(acts_as("User:carol"));
    /* another principal: refused, and the connection closes */
    CHECK_EQ_INT(handshake("PLAIN", NULL), LS_KERR_NONE);
    char msg[256];
    CHECK_EQ_INT(authenticate("dave", "dave-secret", msg), LS_KERR_SASL_AUTHENTICATION_FAILED);
    CHECK(strstr(msg, "Cannot change principals") != NULL);
    CHECK(kf_closed(&E));
    /* another mechanism: refused */
    CHECK(kf_reconnect(&E) == 0);
    CHECK_EQ_INT(handshake("PLAIN", NULL), LS_KERR_NONE);
    CHECK_EQ_INT(authenticate("carol", "carol-secret", NULL), LS_KERR_NONE);
    CHECK_EQ_INT(handshake("SCRAM-SHA-256", NULL), LS_KERR_UNSUPPORTED_SASL_MECHANISM);
    CHECK(kf_closed(&E));
    CHECK(kf_plaintext_listener(&E) == 0);
}

int main(void)
{
    if (kf_open(&E) != 0) return 1;
    RUN(plain_authenticates_the_connection);
    RUN(listener_without_sasl_answers_illegal_state);
    RUN(unsupported_mechanism_names_the_enabled_ones_and_closes);
    RUN(authenticate_before_handshake_is_illegal_and_closes);
    RUN(second_handshake_mid_exchange_is_illegal_and_closes);
    RUN(wrong_password_fails_and_closes);
    RUN(reauthentication_keeps_mechanism_and_principal);
    kf_close(&E);
    UNIT_DONE();
}
