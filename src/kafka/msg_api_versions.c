/* ApiVersions (API key 18), versions 0-4; flexible from v3.
 * Spec: ApiVersionsRequest.json / ApiVersionsResponse.json:
 *  - v0-2 requests are empty; v3 adds ClientSoftwareName/Version (KIP-511);
 *  - v1 adds ThrottleTimeMs to the response;
 *  - v3 response tags: SupportedFeatures (0), FinalizedFeaturesEpoch (1),
 *    FinalizedFeatures (2), ZkMigrationReady (3);
 *  - v4 only changes the meaning of SupportedFeatures.MinVersion 0 (KAFKA-17011).
 * The response *header* is always v0 (no tags) — that is conn.c's business;
 * the body here is flexible from v3. */
#include "kafka/msg.h"

#define FLEX(v) ((v) >= LS_KAFKA_API_VERSIONS_FLEX)

int ls_kafka_ApiVersionsRequest_decode(ls_kr_t *r, int16_t v, ls_arena_t *a,
                                       ls_kafka_ApiVersionsRequest *m)
{
    (void)a;
    memset(m, 0, sizeof *m);
    m->ClientSoftwareName.ptr = "";
    m->ClientSoftwareVersion.ptr = "";
    if (!ls_kmsg_version_ok(r, v, LS_KAFKA_API_VERSIONS_MIN, LS_KAFKA_API_VERSIONS_MAX))
        return -1;
    if (v >= 3) {
        m->ClientSoftwareName = ls_kmsg_str(r, true, "ClientSoftwareName");
        m->ClientSoftwareVersion = ls_kmsg_str(r, true, "ClientSoftwareVersion");
    }
    ls_kr_tags(r, FLEX(v));
    return r->err ? -1 : 0;
}

void ls_kafka_ApiVersionsRequest_encode(ls_kw_t *w, int16_t v, const ls_kafka_ApiVersionsRequest *m)
{
    if (v >= 3) {
        ls_kmsg_wstr_nn(w, true, m->ClientSoftwareName);
        ls_kmsg_wstr_nn(w, true, m->ClientSoftwareVersion);
    }
    ls_kw_tags(w, FLEX(v));
}

int ls_kafka_ApiVersionsResponse_decode(ls_kr_t *r, int16_t v, ls_arena_t *a,
                                        ls_kafka_ApiVersionsResponse *m)
{
    memset(m, 0, sizeof *m);
    m->FinalizedFeaturesEpoch = -1;
    if (!ls_kmsg_version_ok(r, v, LS_KAFKA_API_VERSIONS_MIN, LS_KAFKA_API_VERSIONS_MAX))
        return -1;
    bool f = FLEX(v);
    m->ErrorCode = ls_kr_i16(r);
    m->NumApiKeys = ls_kmsg_arrlen(r, f, 6, false, "ApiKeys");
    m->ApiKeys = ls_kmsg_alloc(a, m->NumApiKeys, sizeof *m->ApiKeys);
    for (int32_t i = 0; i < m->NumApiKeys && !r->err; i++) {
        m->ApiKeys[i].ApiKey = ls_kr_i16(r);
        m->ApiKeys[i].MinVersion = ls_kr_i16(r);
        m->ApiKeys[i].MaxVersion = ls_kr_i16(r);
        ls_kr_tags(r, f);
    }
    if (v >= 1)
        m->ThrottleTimeMs = ls_kr_i32(r);
    uint32_t nt = ls_kmsg_tags_begin(r, f);
    for (uint32_t k = 0; k < nt && !r->err; k++) {
        ls_kr_t sub;
        uint32_t tag = ls_kmsg_tag_next(r, &sub);
        switch (tag) {
        case 0:
            m->NumSupportedFeatures = ls_kmsg_arrlen(&sub, true, 6, false, "SupportedFeatures");
            m->SupportedFeatures =
                ls_kmsg_alloc(a, m->NumSupportedFeatures, sizeof *m->SupportedFeatures);
            for (int32_t i = 0; i < m->NumSupportedFeatures && !sub.err; i++) {
                m->SupportedFeatures[i].Name = ls_kmsg_str(&sub, true, "SupportedFeatures.Name");
                m->SupportedFeatures[i].MinVersion = ls_kr_i16(&sub);
                m->SupportedFeatures[i].MaxVersion = ls_kr_i16(&sub);
                ls_kr_tags(&sub, true);
            }
            break;
        case 1:
            m->FinalizedFeaturesEpoch = ls_kr_i64(&sub);
            break;
        case 2:
            m->NumFinalizedFeatures = ls_kmsg_arrlen(&sub, true, 6, false, "FinalizedFeatures");
            m->FinalizedFeatures =
                ls_kmsg_alloc(a, m->NumFinalizedFeatures, sizeof *m->FinalizedFeatures);
            for (int32_t i = 0; i < m->NumFinalizedFeatures && !sub.err; i++) {
                m->FinalizedFeatures[i].Name = ls_kmsg_str(&sub, true, "FinalizedFeatures.Name");
                m->FinalizedFeatures[i].MaxVersionLevel = ls_kr_i16(&sub);
                m->FinalizedFeatures[i].MinVersionLevel = ls_kr_i16(&sub);
                ls_kr_tags(&sub, true);
            }
            break;
        case 3:
            m->ZkMigrationReady = ls_kr_bool(&sub);
            break;
        default:
            break;
        }
        ls_kmsg_tag_end(r, &sub);
    }
    return r->err ? -1 : 0;
}

void ls_kafka_ApiVersionsResponse_encode(ls_kw_t *w, int16_t v,
                                         const ls_kafka_ApiVersionsResponse *m)
{
    bool f = FLEX(v);
    ls_kw_i16(w, m->ErrorCode);
    ls_kw_arrlen(w, f, m->NumApiKeys);
    for (int32_t i = 0; i < m->NumApiKeys; i++) {
        ls_kw_i16(w, m->ApiKeys[i].ApiKey);
        ls_kw_i16(w, m->ApiKeys[i].MinVersion);
        ls_kw_i16(w, m->ApiKeys[i].MaxVersion);
        ls_kw_tags(w, f);
    }
    if (v >= 1)
        ls_kw_i32(w, m->ThrottleTimeMs);
    if (!f)
        return;
    bool sf = m->NumSupportedFeatures > 0;
    bool fe = m->FinalizedFeaturesEpoch != -1;
    bool ff = m->NumFinalizedFeatures > 0;
    bool zk = m->ZkMigrationReady;
    ls_kw_uvarint(w, (uint32_t)sf + (uint32_t)fe + (uint32_t)ff + (uint32_t)zk);
    ls_kw_t t;
    if (sf) {
        ls_kw_init(&t);
        ls_kw_arrlen(&t, true, m->NumSupportedFeatures);
        for (int32_t i = 0; i < m->NumSupportedFeatures; i++) {
            ls_kmsg_wstr_nn(&t, true, m->SupportedFeatures[i].Name);
            ls_kw_i16(&t, m->SupportedFeatures[i].MinVersion);
            ls_kw_i16(&t, m->SupportedFeatures[i].MaxVersion);
            ls_kw_tags(&t, true);
        }
        ls_kmsg_wtag(w, 0, &t);
        ls_kw_free(&t);
    }
    if (fe) {
        ls_kw_init(&t);
        ls_kw_i64(&t, m->FinalizedFeaturesEpoch);
        ls_kmsg_wtag(w, 1, &t);
        ls_kw_free(&t);
    }
    if (ff) {
        ls_kw_init(&t);
        ls_kw_arrlen(&t, true, m->NumFinalizedFeatures);
        for (int32_t i = 0; i < m->NumFinalizedFeatures; i++) {
            ls_kmsg_wstr_nn(&t, true, m->FinalizedFeatures[i].Name);
            ls_kw_i16(&t, m->FinalizedFeatures[i].MaxVersionLevel);
            ls_kw_i16(&t, m->FinalizedFeatures[i].MinVersionLevel);
            ls_kw_tags(&t, true);
        }
        ls_kmsg_wtag(w, 2, &t);
        ls_kw_free(&t);
    }
    if (zk) {
        ls_kw_init(&t);
        ls_kw_bool(&t, true);
        ls_kmsg_wtag(w, 3, &t);
        ls_kw_free(&t);
    }
}
