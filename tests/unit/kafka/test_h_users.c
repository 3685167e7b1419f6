/* DescribeUserScramCredentials and AlterUserScramCredentials handlers
 * (kafka/h_users.c), through the handler harness (kafka_fake.h): an upsert
 * stores a credential a describe then lists (mechanism, iterations), a
 * deletion removes it; each user's changes succeed or fail together with
 * Kafka's code (DUPLICATE_RESOURCE, UNACCEPTABLE_CREDENTIAL,
 * UNSUPPORTED_SASL_MECHANISM, RESOURCE_NOT_FOUND) and nothing stored;
 * CLUSTER ALTER / DESCRIBE first. */
#include "kafka_fake.h"
#include "security/scram.h"
#include "unit.h"

static kf_env_t E;

typedef ls_kafka_AlterUserScramCredentialsRequest_ScramCredentialUpsertion upsert_t;
typedef ls_kafka_AlterUserScramCredentialsRequest_ScramCredentialDeletion deletion_t;
typedef ls_kafka_DescribeUserScramCredentialsRequest_UserName uname_t;

static const uint8_t SALT[16] = "0123456789abcdef";
static const uint8_t SALTED[64] = {1, 2, 3}; /* long enough for either digest */

static upsert_t upsert(const char *user, int8_t mech, int32_t iterations)
{
    size_t keylen = mech == LS_SCRAM_SHA_512 ? 64 : 32;
    return (upsert_t){.Name = ls_kstr_c(user),
                      .Mechanism = mech,
                      .Iterations = iterations,
                      .Salt = {SALT, sizeof SALT},
                      .SaltedPassword = {SALTED, (int32_t)keylen}};
}

/* AlterUserScramCredentials v0: 0 with the answer in *r, or -1. */
static int alter(deletion_t *d, int nd, upsert_t *u, int nu,
                 ls_kafka_AlterUserScramCredentialsResponse *r, ls_arena_t *a)
{
    ls_kafka_AlterUserScramCredentialsRequest m = {
        .Deletions = d, .NumDeletions = nd, .Upsertions = u, .NumUpsertions = nu};
    return kf_call(&E, 51, 0, &m, r, a);
}

/* The one user's code of an alter of one upsertion or deletion (-1000: no
 * answer or not one result for that user). */
static int alter_one(deletion_t *d, upsert_t *u)
{
    ls_arena_t *a = ls_arena_new();
    ls_kafka_AlterUserScramCredentialsResponse r;
    int code = -1000;
    ls_kstr_t user = d ? d->Name : u->Name;
    if (alter(d, d ? 1 : 0, u, u ? 1 : 0, &r, a) == 0 && r.NumResults == 1 &&
        r.Results[0].User.len == user.len &&
        !memcmp(r.Results[0].User.ptr, user.ptr, (size_t)user.len))
        code = r.Results[0].ErrorCode;
    ls_arena_free(a);
    return code;
}

/* DescribeUserScramCredentials v0 of users[0..n) (n -1: every user): 0 with
 * the answer in *r, or -1. */
static int describe(uname_t *users, int n, ls_kafka_DescribeUserScramCredentialsResponse *r,
                    ls_arena_t *a)
{
    ls_kafka_DescribeUserScramCredentialsRequest m = {.Users = users, .NumUsers = n};
    return kf_call(&E, 50, 0, &m, r, a);
}

/* The iterations of user's credential of mech as described; 0: the user
 * has no such credential, -1: the user is not found, -1000: an error. */
static int described_iterations(const char *user, int8_t mech)
{
    uname_t u = {ls_kstr_c(user)};
    ls_arena_t *a = ls_arena_new();
    ls_kafka_DescribeUserScramCredentialsResponse r;
    int it = -1000;
    if (describe(&u, 1, &r, a) == 0 && r.ErrorCode == LS_KERR_NONE && r.NumResults == 1) {
        if (r.Results[0].ErrorCode == LS_KERR_RESOURCE_NOT_FOUND)
            it = -1;
        else if (r.Results[0].ErrorCode == LS_KERR_NONE)
            it = 0;
        for (int32_t i = 0; it == 0 && i < r.Results[0].NumCredentialInfos; i++)
            if (r.Results[0].CredentialInfos[i].Mechanism == mech)
                it = r.Results[0].CredentialInfos[i].Iterations;
    }
    ls_arena_free(a);
    return it;
}

TEST(upsert_describe_delete)
{
    upsert_t u[2] = {upsert("u-alice", LS_SCRAM_SHA_256, 4096),
                     upsert("u-alice", LS_SCRAM_SHA_512, 8192)};
    ls_arena_t *a = ls_arena_new();
    ls_kafka_AlterUserScramCredentialsResponse r;
    CHECK(alter(NULL, 0, u, 2, &r, a) == 0);
    CHECK_EQ_INT(r.NumResults, 1); /* one result per user */
    CHECK(ls_kstr_eq(r.Results[0].User, "u-alice"));
    CHECK_EQ_INT(r.Results[0].ErrorCode, LS_KERR_NONE);
    ls_arena_free(a);
    CHECK_EQ_INT(described_iterations("u-alice", LS_SCRAM_SHA_256), 4096);
    CHECK_EQ_INT(described_iterations("u-alice", LS_SCRAM_SHA_512), 8192);

    deletion_t d = {ls_kstr_c("u-alice"), LS_SCRAM_SHA_512};
    CHECK_EQ_INT(alter_one(&d, NULL), LS_KERR_NONE);
    CHECK_EQ_INT(described_iterations("u-alice", LS_SCRAM_SHA_512), 0);
    CHECK_EQ_INT(described_iterations("u-alice", LS_SCRAM_SHA_256), 4096);
}

TEST(describe_every_user)
{
    upsert_t u = upsert("u-all", LS_SCRAM_SHA_256, 5000);
    CHECK_EQ_INT(alter_one(NULL, &u), LS_KERR_NONE);
    ls_arena_t *a = ls_arena_new();
    ls_kafka_DescribeUserScramCredentialsResponse r;
    CHECK(describe(NULL, -1, &r, a) == 0);
    CHECK_EQ_INT(r.ErrorCode, LS_KERR_NONE);
    bool found = false;
    for (int32_t i = 0; i < r.NumResults; i++)
        if (ls_kstr_eq(r.Results[i].User, "u-all")) {
            found = r.Results[i].NumCredentialInfos == 1 &&
                    r.Results[i].CredentialInfos[0].Iterations == 5000;
        }
    ls_arena_free(a);
    CHECK(found);
}

TEST(iterations_out_of_range_are_unacceptable)
{
    upsert_t few = upsert("u-few", LS_SCRAM_SHA_256, LS_SCRAM_MIN_ITERATIONS - 1);
    upsert_t many = upsert("u-many", LS_SCRAM_SHA_256, LS_SCRAM_MAX_ITERATIONS + 1);
    CHECK_EQ_INT(alter_one(NULL, &few), LS_KERR_UNACCEPTABLE_CREDENTIAL);
    CHECK_EQ_INT(alter_one(NULL, &many), LS_KERR_UNACCEPTABLE_CREDENTIAL);
    CHECK_EQ_INT(described_iterations("u-few", LS_SCRAM_SHA_256), -1);
    CHECK_EQ_INT(described_iterations("u-many", LS_SCRAM_SHA_256), -1);
}

TEST(bad_salt_or_key_length_is_unacceptable)
{
    upsert_t nosalt = upsert("u-salt", LS_SCRAM_SHA_256, 4096);
    nosalt.Salt.len = 0;
    static const uint8_t big[LS_SCRAM_MAX_SALT + 1];
    upsert_t bigsalt = upsert("u-bigsalt", LS_SCRAM_SHA_256, 4096);
    bigsalt.Salt = (ls_kbytes_t){big, (int32_t)sizeof big}; /* too large */
    upsert_t shortkey = upsert("u-key", LS_SCRAM_SHA_512, 4096);
    shortkey.SaltedPassword.len = 32; /* SHA-256's length under SHA-512 */
    CHECK_EQ_INT(alter_one(NULL, &nosalt), LS_KERR_UNACCEPTABLE_CREDENTIAL);
    CHECK_EQ_INT(alter_one(NULL, &bigsalt), LS_KERR_UNACCEPTABLE_CREDENTIAL);
    CHECK_EQ_INT(alter_one(NULL, &shortkey), LS_KERR_UNACCEPTABLE_CREDENTIAL);
    CHECK_EQ_INT(described_iterations("u-bigsalt", LS_SCRAM_SHA_256), -1);
    CHECK_EQ_INT(described_iterations("u-key", LS_SCRAM_SHA_512), -1);
}

TEST(empty_name_is_unacceptable)
{
    upsert_t u = upsert("", LS_SCRAM_SHA_256, 4096);
    CHECK_EQ_INT(alter_one(NULL, &u), LS_KERR_UNACCEPTABLE_CREDENTIAL);
}

TEST(unknown_mechanism_is_unsupported)
{
    upsert_t u = upsert("u-mech", 3, 4096);
    deletion_t d = {ls_kstr_c("u-mech"), 0};
    CHECK_EQ_INT(alter_one(NULL, &u), LS_KERR_UNSUPPORTED_SASL_MECHANISM);
    CHECK_EQ_INT(alter_one(&d, NULL), LS_KERR_UNSUPPORTED_SASL_MECHANISM);
    CHECK_EQ_INT(described_iterations("u-mech", 3), -1);
}

TEST(same_credential_twice_is_a_duplicate_and_applies_nothing)
{
    /* the user's other, valid change is not applied either */
    upsert_t u[3] = {upsert("u-dup", LS_SCRAM_SHA_256, 4096),
                     upsert("u-dup", LS_SCRAM_SHA_256, 5000),
                     upsert("u-other", LS_SCRAM_SHA_256, 4096)};
    deletion_t d = {ls_kstr_c("u-dup"), LS_SCRAM_SHA_512};
    ls_arena_t *a = ls_arena_new();
    ls_kafka_AlterUserScramCredentialsResponse r;
    CHECK(alter(&d, 1, u, 3, &r, a) == 0);
    CHECK_EQ_INT(r.NumResults, 2);
    CHECK(ls_kstr_eq(r.Results[0].User, "u-dup"));
    CHECK_EQ_INT(r.Results[0].ErrorCode, LS_KERR_DUPLICATE_RESOURCE);
    CHECK(ls_kstr_eq(r.Results[1].User, "u-other"));
    CHECK_EQ_INT(r.Results[1].ErrorCode, LS_KERR_NONE);
    ls_arena_free(a);
    CHECK_EQ_INT(described_iterations("u-dup", LS_SCRAM_SHA_256), -1);
    CHECK_EQ_INT(described_iterations("u-other", LS_SCRAM_SHA_256), 4096);
}

TEST(deleting_a_missing_credential_is_not_found)
{
    upsert_t u = upsert("u-del", LS_SCRAM_SHA_256, 4096);
    CHECK_EQ_INT(alter_one(NULL, &u), LS_KERR_NONE);
    deletion_t d = {ls_kstr_c("u-del"), LS_SCRAM_SHA_512};
    CHECK_EQ_INT(alter_one(&d, NULL), LS_KERR_RESOURCE_NOT_FOUND);
    CHECK_EQ_INT(described_iterations("u-del", LS_SCRAM_SHA_256), 4096);
}

TEST(describe_a_user_twice_or_unknown)
{
    upsert_t u = upsert("u-twice", LS_SCRAM_SHA_256, 4096);
    CHECK_EQ_INT(alter_one(NULL, &u), LS_KERR_NONE);
    uname_t names[3] = {{ls_kstr_c("u-twice")}, {ls_kstr_c("u-nobody")}, {ls_kstr_c("u-twice")}};
    ls_arena_t *a = ls_arena_new();
    ls_kafka_DescribeUserScramCredentialsResponse r;
    CHECK(describe(names, 3, &r, a) == 0);
    CHECK_EQ_INT(r.ErrorCode, LS_KERR_NONE);
    CHECK_EQ_INT(r.NumResults, 2);
    CHECK(ls_kstr_eq(r.Results[0].User, "u-twice"));
    CHECK_EQ_INT(r.Results[0].ErrorCode, LS_KERR_DUPLICATE_RESOURCE);
    CHECK_EQ_INT(r.Results[0].NumCredentialInfos, 0);
    CHECK(ls_kstr_eq(r.Results[1].User, "u-nobody"));
    CHECK_EQ_INT(r.Results[1].ErrorCode, LS_KERR_RESOURCE_NOT_FOUND);
    ls_arena_free(a);
}

TEST(cluster_authorization_failed)
{
    CHECK(kf_authz_on(&E, NULL) == 0);
    upsert_t u = upsert("u-denied", LS_SCRAM_SHA_256, 4096);
    int alter_code = alter_one(NULL, &u);
    ls_arena_t *a = ls_arena_new();
    ls_kafka_DescribeUserScramCredentialsResponse r;
    int rc = describe(NULL, -1, &r, a);
    kf_authz_off(&E);
    CHECK_EQ_INT(alter_code, LS_KERR_CLUSTER_AUTHORIZATION_FAILED);
    CHECK(rc == 0);
    CHECK_EQ_INT(r.ErrorCode, LS_KERR_CLUSTER_AUTHORIZATION_FAILED);
    CHECK_EQ_INT(r.NumResults, 0);
    ls_arena_free(a);
    CHECK_EQ_INT(described_iterations("u-denied", LS_SCRAM_SHA_256), -1);
}

TEST(authorization_comes_before_validation)
{
    /* as Kafka: a principal without CLUSTER ALTER learns nothing about its
     * request, valid or not */
    CHECK(kf_authz_on(&E, NULL) == 0);
    upsert_t few = upsert("u-denied-few", LS_SCRAM_SHA_256, LS_SCRAM_MIN_ITERATIONS - 1);
    upsert_t twice[2] = {upsert("u-denied-dup", LS_SCRAM_SHA_256, 4096),
                         upsert("u-denied-dup", LS_SCRAM_SHA_256, 4096)};
    int few_code = alter_one(NULL, &few);
    ls_arena_t *a = ls_arena_new();
    ls_kafka_AlterUserScramCredentialsResponse r;
    int rc = alter(NULL, 0, twice, 2, &r, a);
    kf_authz_off(&E);
    CHECK_EQ_INT(few_code, LS_KERR_CLUSTER_AUTHORIZATION_FAILED);
    CHECK(rc == 0);
    CHECK_EQ_INT(r.NumResults, 1);
    CHECK_EQ_INT(r.Results[0].ErrorCode, LS_KERR_CLUSTER_AUTHORIZATION_FAILED);
    ls_arena_free(a);
}

int main(void)
{
    if (kf_open(&E) != 0) return 1;
    RUN(upsert_describe_delete);
    RUN(describe_every_user);
    RUN(iterations_out_of_range_are_unacceptable);
    RUN(bad_salt_or_key_length_is_unacceptable);
    RUN(empty_name_is_unacceptable);
    RUN(unknown_mechanism_is_unsupported);
    RUN(same_credential_twice_is_a_duplicate_and_applies_nothing);
    RUN(deleting_a_missing_credential_is_not_found);
    RUN(describe_a_user_twice_or_unknown);
    RUN(cluster_authorization_failed);
    RUN(authorization_comes_before_validation);
    kf_close(&E);
    UNIT_DONE();
}
