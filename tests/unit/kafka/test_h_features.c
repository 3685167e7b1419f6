/* UpdateFeatures handler (kafka/h_features.c), through the handler harness
 * (kafka_fake.h): the levels are fixed, so an update that keeps a level is
 * answered success (v0-1 with one result per feature, v2 with none) and any
 * other is refused whole with INVALID_UPDATE_VERSION naming the feature and
 * the level; CLUSTER ALTER comes first. */
#include "kafka_fake.h"
#include "unit.h"

static kf_env_t E;

typedef ls_kafka_UpdateFeaturesRequest_FeatureUpdateKey upd_t;

/* UpdateFeatures at version of updates u[0..n): 0 with the answer in *r (in
 * a), or -1. */
static int update(int16_t version, const upd_t *u, int n, ls_kafka_UpdateFeaturesResponse *r,
                  ls_arena_t *a)
{
    ls_kafka_UpdateFeaturesRequest m = {
        .TimeoutMs = 60000, .FeatureUpdates = (upd_t *)u, .NumFeatureUpdates = n};
    return kf_call(&E, 57, version, &m, r, a);
}

static upd_t feature(const char *name, int16_t level, int8_t type)
{
    return (upd_t){.Feature = ls_kstr_c(name), .MaxVersionLevel = level, .UpgradeType = type};
}

TEST(keeping_every_level_succeeds_with_a_result_per_feature)
{
    upd_t u[2] = {feature("transaction.version", 2, 1), feature("streams.version", 1, 2)};
    ls_arena_t *a = ls_arena_new();
    ls_kafka_UpdateFeaturesResponse r;
    CHECK(update(1, u, 2, &r, a) == 0);
    CHECK_EQ_INT(r.ErrorCode, LS_KERR_NONE);
    CHECK_EQ_INT(r.NumResults, 2);
    CHECK(ls_kstr_eq(r.Results[0].Feature, "transaction.version"));
    CHECK_EQ_INT(r.Results[0].ErrorCode, LS_KERR_NONE);
    CHECK(ls_kstr_eq(r.Results[1].Feature, "streams.version"));
    CHECK_EQ_INT(r.Results[1].ErrorCode, LS_KERR_NONE);
    ls_arena_free(a);
}

TEST(v2_answers_without_results)
{
    upd_t u = feature("group.version", 1, 1);
    ls_arena_t *a = ls_arena_new();
    ls_kafka_UpdateFeaturesResponse r;
    CHECK(update(2, &u, 1, &r, a) == 0);
    CHECK_EQ_INT(r.ErrorCode, LS_KERR_NONE);
    CHECK_EQ_INT(r.NumResults, 0);
    ls_arena_free(a);
}

/* The whole request's error code when its message contains w1 (and w2
 * unless NULL) and it has no per-feature result; -2000 otherwise, -1000:
 * no answer. */
static int refused(int16_t version, const upd_t *u, int n, const char *w1, const char *w2)
{
    ls_arena_t *a = ls_arena_new();
    ls_kafka_UpdateFeaturesResponse r;
    int code = -1000;
    if (update(version, u, n, &r, a) == 0) {
        code = r.ErrorCode;
        if (r.NumResults != 0 || !kf_kstr_has(r.ErrorMessage, w1) ||
            (w2 && !kf_kstr_has(r.ErrorMessage, w2)))
            code = -2000;
    }
    ls_arena_free(a);
    return code;
}

TEST(raising_a_fixed_level_is_refused_naming_feature_and_level)
{
    upd_t u = feature("transaction.version", 3, 1);
    CHECK_EQ_INT(refused(1, &u, 1, "feature \"transaction.version\"", "levels 0 to 2"),
                 LS_KERR_INVALID_UPDATE_VERSION);
}

TEST(unknown_feature_is_refused)
{
    upd_t u = feature("no.such.version", 1, 1);
    CHECK_EQ_INT(refused(1, &u, 1, "no.such.version", "does not support"),
                 LS_KERR_INVALID_UPDATE_VERSION);
}

TEST(unknown_upgrade_type_is_refused)
{
    upd_t u = feature("group.version", 1, 7);
    CHECK_EQ_INT(refused(1, &u, 1, "upgrade type 7", NULL), LS_KERR_INVALID_UPDATE_VERSION);
}

TEST(negative_level_is_refused)
{
    upd_t u = feature("group.version", -1, 1);
    CHECK_EQ_INT(refused(1, &u, 1, "below 0", NULL), LS_KERR_INVALID_UPDATE_VERSION);
}

TEST(downgrade_asked_as_upgrade_is_refused)
{
    upd_t u = feature("transaction.version", 1, 1);
    CHECK_EQ_INT(refused(1, &u, 1, "lowers the level from 2", NULL),
                 LS_KERR_INVALID_UPDATE_VERSION);
}

TEST(one_refused_update_fails_the_whole_request)
{
    /* the first update keeps its level (a safe downgrade to the same level);
     * the second names a level the broker does not support */
    upd_t v[2] = {feature("group.version", 1, 2),
                  feature("eligible.leader.replicas.version", 1, 1)};
    CHECK_EQ_INT(
        refused(1, v, 2, "feature \"eligible.leader.replicas.version\"", "does not support"),
        LS_KERR_INVALID_UPDATE_VERSION);
}

TEST(safe_downgrade_of_a_fixed_level_is_refused_saying_it_is_fixed)
{
    upd_t u = feature("transaction.version", 1, 2);
    CHECK_EQ_INT(refused(1, &u, 1, "fixed at 2", NULL), LS_KERR_INVALID_UPDATE_VERSION);
}

TEST(v0_allow_downgrade_maps_to_a_safe_downgrade)
{
    /* v0 has no upgrade type: AllowDowngrade false is an upgrade, which
     * cannot lower a level */
    upd_t u = {.Feature = ls_kstr_c("transaction.version"), .MaxVersionLevel = 1};
    CHECK_EQ_INT(refused(0, &u, 1, "lowers the level", NULL), LS_KERR_INVALID_UPDATE_VERSION);
    u.AllowDowngrade = true;
    CHECK_EQ_INT(refused(0, &u, 1, "fixed at 2", NULL), LS_KERR_INVALID_UPDATE_VERSION);
}

TEST(cluster_authorization_failed)
{
    CHECK(kf_authz_on(&E, NULL) == 0);
    upd_t u = feature("transaction.version", 2, 1);
    ls_arena_t *a = ls_arena_new();
    ls_kafka_UpdateFeaturesResponse r;
    int rc = update(1, &u, 1, &r, a);
    kf_authz_off(&E);
    CHECK(rc == 0);
    CHECK_EQ_INT(r.ErrorCode, LS_KERR_CLUSTER_AUTHORIZATION_FAILED);
    CHECK_EQ_INT(r.NumResults, 0);
    ls_arena_free(a);
}

int main(void)
{
    if (kf_open(&E) != 0) return 1;
    RUN(keeping_every_level_succeeds_with_a_result_per_feature);
    RUN(v2_answers_without_results);
    RUN(raising_a_fixed_level_is_refused_naming_feature_and_level);
    RUN(unknown_feature_is_refused);
    RUN(unknown_upgrade_type_is_refused);
    RUN(negative_level_is_refused);
    RUN(downgrade_asked_as_upgrade_is_refused);
    RUN(one_refused_update_fails_the_whole_request);
    RUN(safe_downgrade_of_a_fixed_level_is_refused_saying_it_is_fixed);
    RUN(v0_allow_downgrade_maps_to_a_safe_downgrade);
    RUN(cluster_authorization_failed);
    kf_close(&E);
    UNIT_DONE();
}
