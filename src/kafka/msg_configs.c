/* DescribeConfigs (API key 32), versions 1-4, flexible from v4; and
 * InitProducerId (API key 22), versions 0-5, flexible from v2.
 * DescribeConfigsRequest/Response.json:
 *  - v1 IncludeSynonyms, ConfigSource and Synonyms (IsDefault is v0 only);
 *  - v3 IncludeDocumentation, ConfigType and Documentation; v4 flexible.
 * InitProducerIdRequest/Response.json:
 *  - v2 flexible; v3 ProducerId/ProducerEpoch in the request (KIP-360);
 *  - v4 may answer PRODUCER_FENCED; v5 may answer TRANSACTION_ABORTABLE. */
#include "kafka/msg.h"

#define DCFLEX(v) ((v) >= LS_KAFKA_DESCRIBE_CONFIGS_FLEX)
#define IPFLEX(v) ((v) >= LS_KAFKA_INIT_PRODUCER_ID_FLEX)

int ls_kafka_DescribeConfigsRequest_decode(ls_kr_t *r, int16_t v, ls_arena_t *a,
                                           ls_kafka_DescribeConfigsRequest *m)
{
    memset(m, 0, sizeof *m);
    if (!ls_kmsg_version_ok(r, v, LS_KAFKA_DESCRIBE_CONFIGS_MIN, LS_KAFKA_DESCRIBE_CONFIGS_MAX))
        return -1;
    bool f = DCFLEX(v);
    m->NumResources = ls_kmsg_arrlen(r, f, 1 + 1 + 1, false, "Resources");
    m->Resources = ls_kmsg_alloc(a, m->NumResources, sizeof *m->Resources);
    for (int32_t i = 0; i < m->NumResources && !r->err; i++) {
        ls_kafka_DescribeConfigsRequest_DescribeConfigsResource *res = &m->Resources[i];
        res->ResourceType = ls_kr_i8(r);
        res->ResourceName = ls_kmsg_str(r, f, "Resources.ResourceName");
        res->ConfigurationKeys =
            ls_kmsg_strs(r, f, a, true, &res->NumConfigurationKeys, "ConfigurationKeys");
        ls_kr_tags(r, f);
    }
    m->IncludeSynonyms = ls_kr_bool(r);
    if (v >= 3)
        m->IncludeDocumentation = ls_kr_bool(r);
    ls_kr_tags(r, f);
    return r->err ? -1 : 0;
}

void ls_kafka_DescribeConfigsRequest_encode(ls_kw_t *w, int16_t v,
                                            const ls_kafka_DescribeConfigsRequest *m)
{
    bool f = DCFLEX(v);
    ls_kw_arrlen(w, f, m->NumResources);
    for (int32_t i = 0; i < m->NumResources; i++) {
        const ls_kafka_DescribeConfigsRequest_DescribeConfigsResource *res = &m->Resources[i];
        ls_kw_i8(w, res->ResourceType);
        ls_kmsg_wstr_nn(w, f, res->ResourceName);
        ls_kmsg_wstrs(w, f, res->ConfigurationKeys, res->NumConfigurationKeys);
        ls_kw_tags(w, f);
    }
    ls_kw_bool(w, m->IncludeSynonyms);
    if (v >= 3)
        ls_kw_bool(w, m->IncludeDocumentation);
    ls_kw_tags(w, f);
}

int ls_kafka_DescribeConfigsResponse_decode(ls_kr_t *r, int16_t v, ls_arena_t *a,
                                            ls_kafka_DescribeConfigsResponse *m)
{
    memset(m, 0, sizeof *m);
    if (!ls_kmsg_version_ok(r, v, LS_KAFKA_DESCRIBE_CONFIGS_MIN, LS_KAFKA_DESCRIBE_CONFIGS_MAX))
        return -1;
    bool f = DCFLEX(v);
    m->ThrottleTimeMs = ls_kr_i32(r);
    m->NumResults = ls_kmsg_arrlen(r, f, 2 + 1 + 1 + 1 + 1, false, "Results");
    m->Results = ls_kmsg_alloc(a, m->NumResults, sizeof *m->Results);
    for (int32_t i = 0; i < m->NumResults && !r->err; i++) {
        ls_kafka_DescribeConfigsResponse_DescribeConfigsResult *res = &m->Results[i];
        res->ErrorCode = ls_kr_i16(r);
        res->ErrorMessage = ls_kr_str(r, f);
        res->ResourceType = ls_kr_i8(r);
        res->ResourceName = ls_kmsg_str(r, f, "Results.ResourceName");
        res->NumConfigs = ls_kmsg_arrlen(r, f, 1 + 1 + 1 + 1 + 1 + 1, false, "Configs");
        res->Configs = ls_kmsg_alloc(a, res->NumConfigs, sizeof *res->Configs);
        for (int32_t j = 0; j < res->NumConfigs && !r->err; j++) {
            ls_kafka_DescribeConfigsResponse_DescribeConfigsResourceResult *c = &res->Configs[j];
            c->Name = ls_kmsg_str(r, f, "Configs.Name");
            c->Value = ls_kr_str(r, f);
            c->ReadOnly = ls_kr_bool(r);
            c->ConfigSource = ls_kr_i8(r);
            c->IsSensitive = ls_kr_bool(r);
            c->NumSynonyms = ls_kmsg_arrlen(r, f, 1 + 1 + 1, false, "Synonyms");
            c->Synonyms = ls_kmsg_alloc(a, c->NumSynonyms, sizeof *c->Synonyms);
            for (int32_t k = 0; k < c->NumSynonyms && !r->err; k++) {
                c->Synonyms[k].Name = ls_kmsg_str(r, f, "Synonyms.Name");
                c->Synonyms[k].Value = ls_kr_str(r, f);
                c->Synonyms[k].Source = ls_kr_i8(r);
                ls_kr_tags(r, f);
            }
            c->Documentation = ls_kstr_null();
            if (v >= 3) {
                c->ConfigType = ls_kr_i8(r);
                c->Documentation = ls_kr_str(r, f);
            }
            ls_kr_tags(r, f);
        }
        ls_kr_tags(r, f);
    }
    ls_kr_tags(r, f);
    return r->err ? -1 : 0;
}

void ls_kafka_DescribeConfigsResponse_encode(ls_kw_t *w, int16_t v,
                                             const ls_kafka_DescribeConfigsResponse *m)
{
    bool f = DCFLEX(v);
    ls_kw_i32(w, m->ThrottleTimeMs);
    ls_kw_arrlen(w, f, m->NumResults);
    for (int32_t i = 0; i < m->NumResults; i++) {
        const ls_kafka_DescribeConfigsResponse_DescribeConfigsResult *res = &m->Results[i];
        ls_kw_i16(w, res->ErrorCode);
        ls_kmsg_wstr(w, f, res->ErrorMessage);
        ls_kw_i8(w, res->ResourceType);
        ls_kmsg_wstr_nn(w, f, res->ResourceName);
        ls_kw_arrlen(w, f, res->NumConfigs);
        for (int32_t j = 0; j < res->NumConfigs; j++) {
            const ls_kafka_DescribeConfigsResponse_DescribeConfigsResourceResult *c =
                &res->Configs[j];
            ls_kmsg_wstr_nn(w, f, c->Name);
            ls_kmsg_wstr(w, f, c->Value);
            ls_kw_bool(w, c->ReadOnly);
            ls_kw_i8(w, c->ConfigSource);
            ls_kw_bool(w, c->IsSensitive);
            ls_kw_arrlen(w, f, c->NumSynonyms);
            for (int32_t k = 0; k < c->NumSynonyms; k++) {
                ls_kmsg_wstr_nn(w, f, c->Synonyms[k].Name);
                ls_kmsg_wstr(w, f, c->Synonyms[k].Value);
                ls_kw_i8(w, c->Synonyms[k].Source);
                ls_kw_tags(w, f);
            }
            if (v >= 3) {
                ls_kw_i8(w, c->ConfigType);
                ls_kmsg_wstr(w, f, c->Documentation);
            }
            ls_kw_tags(w, f);
        }
        ls_kw_tags(w, f);
    }
    ls_kw_tags(w, f);
}

/* ---------------------------------------------------------- InitProducerId */

int ls_kafka_InitProducerIdRequest_decode(ls_kr_t *r, int16_t v, ls_arena_t *a,
                                          ls_kafka_InitProducerIdRequest *m)
{
    (void)a;
    memset(m, 0, sizeof *m);
    m->ProducerId = -1;
    m->ProducerEpoch = -1;
    if (!ls_kmsg_version_ok(r, v, LS_KAFKA_INIT_PRODUCER_ID_MIN, LS_KAFKA_INIT_PRODUCER_ID_MAX))
        return -1;
    bool f = IPFLEX(v);
    m->TransactionalId = ls_kr_str(r, f);
    m->TransactionTimeoutMs = ls_kr_i32(r);
    if (v >= 3) {
        m->ProducerId = ls_kr_i64(r);
        m->ProducerEpoch = ls_kr_i16(r);
    }
    ls_kr_tags(r, f);
    return r->err ? -1 : 0;
}

void ls_kafka_InitProducerIdRequest_encode(ls_kw_t *w, int16_t v,
                                           const ls_kafka_InitProducerIdRequest *m)
{
    bool f = IPFLEX(v);
    ls_kmsg_wstr(w, f, m->TransactionalId);
    ls_kw_i32(w, m->TransactionTimeoutMs);
    if (v >= 3) {
        ls_kw_i64(w, m->ProducerId);
        ls_kw_i16(w, m->ProducerEpoch);
    }
    ls_kw_tags(w, f);
}

int ls_kafka_InitProducerIdResponse_decode(ls_kr_t *r, int16_t v, ls_arena_t *a,
                                           ls_kafka_InitProducerIdResponse *m)
{
    (void)a;
    memset(m, 0, sizeof *m);
    if (!ls_kmsg_version_ok(r, v, LS_KAFKA_INIT_PRODUCER_ID_MIN, LS_KAFKA_INIT_PRODUCER_ID_MAX))
        return -1;
    bool f = IPFLEX(v);
    m->ThrottleTimeMs = ls_kr_i32(r);
    m->ErrorCode = ls_kr_i16(r);
    m->ProducerId = ls_kr_i64(r);
    m->ProducerEpoch = ls_kr_i16(r);
    ls_kr_tags(r, f);
    return r->err ? -1 : 0;
}

void ls_kafka_InitProducerIdResponse_encode(ls_kw_t *w, int16_t v,
                                            const ls_kafka_InitProducerIdResponse *m)
{
    bool f = IPFLEX(v);
    ls_kw_i32(w, m->ThrottleTimeMs);
    ls_kw_i16(w, m->ErrorCode);
    ls_kw_i64(w, m->ProducerId);
    ls_kw_i16(w, m->ProducerEpoch);
    ls_kw_tags(w, f);
}
