/* Cluster features (KIP-584): the table ApiVersions reports, and
 * UpdateFeatures (key 57) against it.
 *
 * Each feature has the range of levels this broker supports and the level
 * finalized on the cluster. The levels are fixed: they belong to the code,
 * not to state in the metadata store, so every broker of every cluster reports
 * the same ones and the finalized epoch never moves (LS_KAFKA_FEATURES_EPOCH).
 * `transaction.version` is finalized at 2 (api.h); the broker serves clients
 * of transaction versions 0-2 alike, whatever a client picks per request.
 * The other features Kafka defines are listed at level 0 (not finalized, no
 * supported range reported), so an update that leaves them at 0 is the no-op
 * Kafka makes of it; metadata.version and kraft.version describe a KRaft
 * quorum this broker does not have, so every update of them is refused.
 *
 * UpdateFeatures, as Kafka 4's controller decides it: CLUSTER ALTER first
 * (else CLUSTER_AUTHORIZATION_FAILED); then the updates are checked in order
 * and the first that cannot be applied fails the whole request with
 * INVALID_UPDATE_VERSION and a message naming the feature and the level (an
 * unknown upgrade type, a level below 0, one outside the supported range, a
 * downgrade asked as an upgrade or the reverse). Left for last is what only a
 * fixed level explains: any level other than the finalized one is refused
 * with that reason, never accepted and ignored. Updates that keep every
 * level answer success (v0-1 with one result per feature, v2 with none);
 * validate-only or not, nothing changes. Stateless. */
#include <stdio.h>
#include <string.h>

#include "kafka/api.h"
#include "kafka/handlers.h"
#include "kafka/msg.h"
#include "kafka/names.h"

/* UpdateFeatures' upgrade types (KIP-778); v0 has AllowDowngrade instead. */
enum { UPGRADE = 1, SAFE_DOWNGRADE = 2, UNSAFE_DOWNGRADE = 3 };

const ls_kafka_feature_t ls_kafka_features[] = {
    {"transaction.version", 0, LS_KAFKA_TRANSACTION_VERSION, LS_KAFKA_TRANSACTION_VERSION},
    {"eligible.leader.replicas.version", 0, 0, 0},
    {"group.version", 0, 1, 1},   /* KIP-848 consumer groups (h_consumer_group.c) */
    {"share.version", 0, 1, 1},   /* KIP-932 share groups (h_share_fetch.c) */
    {"streams.version", 0, 1, 1}, /* KIP-1071 streams groups (h_streams_group.c) */
};
const int ls_kafka_nfeatures = (int)(sizeof ls_kafka_features / sizeof ls_kafka_features[0]);

static const ls_kafka_feature_t *feature_find(ls_kstr_t name)
{
    for (int i = 0; i < ls_kafka_nfeatures; i++)
        if (ls_kstr_eq(name, ls_kafka_features[i].name)) return &ls_kafka_features[i];
    return NULL;
}

/* Why `level` cannot be applied to the feature with upgrade type `type`, or
 * NULL when it can (it is the level the feature already has). */
static const char *update_refused(ls_arena_t *a, const ls_kafka_feature_t *f, int16_t level,
                                  int type)
{
    if (type < UPGRADE || type > UNSAFE_DOWNGRADE)
        return ls_arena_printf(a,
                               "upgrade type %d is none of 1 (upgrade), 2 (safe downgrade), "
                               "3 (unsafe downgrade)",
                               type);
    if (level < 0) return "a feature level cannot be below 0";
    if (!f) return "this broker does not support this feature";
    if (level < f->min || level > f->max) {
        if (f->max == 0) return "this broker does not support this feature";
        return ls_arena_printf(a, "this broker only supports levels %d to %d", f->min, f->max);
    }
    if (level < f->level && type == UPGRADE)
        return ls_arena_printf(a,
                               "that lowers the level from %d: set the upgrade type to a "
                               "safe or unsafe downgrade",
                               f->level);
    if (level > f->level && type != UPGRADE)
        return ls_arena_printf(a, "that raises the level from %d, which a downgrade cannot",
                               f->level);
    if (level != f->level)
        return ls_arena_printf(a,
                               "its level is fixed at %d on this broker, which keeps no "
                               "finalized level to change (the broker serves every "
                               "supported level to clients alike)",
                               f->level);
    return NULL;
}

void ls_kafka_handle_update_features(ls_kreq_t *req)
{
    ls_arena_t *a = req->arena;
    const ls_kafka_UpdateFeaturesRequest *m = req->msg;
    ls_kafka_UpdateFeaturesResponse r;
    memset(&r, 0, sizeof r);
    r.ErrorMessage = ls_kstr_null();
    if (!ls_kreq_allowed_cluster(req, LS_ACL_OP_ALTER)) {
        r.ErrorCode = LS_KERR_CLUSTER_AUTHORIZATION_FAILED;
        r.ErrorMessage = ls_kstr_c("Cluster authorization failed.");
        goto out;
    }
    for (int32_t i = 0; i < m->NumFeatureUpdates; i++) {
        const ls_kafka_UpdateFeaturesRequest_FeatureUpdateKey *u = &m->FeatureUpdates[i];
        int type =
            req->api_version == 0 ? (u->AllowDowngrade ? SAFE_DOWNGRADE : UPGRADE) : u->UpgradeType;
        const char *why = update_refused(a, feature_find(u->Feature), u->MaxVersionLevel, type);
        if (why) {
            r.ErrorCode = LS_KERR_INVALID_UPDATE_VERSION;
            r.ErrorMessage = ls_kstr_c(ls_arena_printf(
                a, "No feature was updated: level %d for feature %s cannot be applied: %s",
                u->MaxVersionLevel, ls_kafka_printable(a, u->Feature), why));
            goto out;
        }
    }
    if (req->api_version <= 1) {
        r.Results = ls_kmsg_alloc(a, m->NumFeatureUpdates, sizeof *r.Results);
        r.NumResults = m->NumFeatureUpdates;
        for (int32_t i = 0; i < m->NumFeatureUpdates; i++) {
            r.Results[i].Feature = m->FeatureUpdates[i].Feature;
            r.Results[i].ErrorMessage = ls_kstr_null();
        }
    }
out:;
    ls_kw_t w;
    ls_kreq_encode(req, &w, &r);
    ls_kreq_respond(req, &w);
}
