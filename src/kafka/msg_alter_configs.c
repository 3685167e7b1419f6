/* AlterConfigs (API key 33), versions 0-2, flexible from v2, and
 * IncrementalAlterConfigs (API key 44), versions 0-1, flexible from v1.
 * {Incremental,}AlterConfigs{Request,Response}.json:
 *  - requests: Resources [ResourceType int8, ResourceName string, Configs
 *    [Name string, (Incremental only) ConfigOperation int8, Value nullable
 *    string]], ValidateOnly bool; AlterConfigs v1 is v0;
 *  - responses (same shape for both): ThrottleTimeMs int32, Responses
 *    [ErrorCode int16, ErrorMessage nullable string, ResourceType int8,
 *    ResourceName string]. */
#include "kafka/msg.h"

#define ACFLEX(v) ((v) >= LS_KAFKA_ALTER_CONFIGS_FLEX)
#define IACFLEX(v) ((v) >= LS_KAFKA_INCREMENTAL_ALTER_CONFIGS_FLEX)

int ls_kafka_AlterConfigsRequest_decode(ls_kr_t *r, int16_t v, ls_arena_t *a,
                                        ls_kafka_AlterConfigsRequest *m)
{
    memset(m, 0, sizeof *m);
    if (!ls_kmsg_version_ok(r, v, LS_KAFKA_ALTER_CONFIGS_MIN, LS_KAFKA_ALTER_CONFIGS_MAX))
        return -1;
    bool f = ACFLEX(v);
    m->NumResources = ls_kmsg_arrlen(r, f, 1 + 1 + 1, false, "Resources");
    m->Resources = ls_kmsg_alloc(a, m->NumResources, sizeof *m->Resources);
    for (int32_t i = 0; i < m->NumResources && !r->err; i++) {
        ls_kafka_AlterConfigsRequest_AlterConfigsResource *res = &m->Resources[i];
        res->ResourceType = ls_kr_i8(r);
        res->ResourceName = ls_kmsg_str(r, f, "Resources.ResourceName");
        res->NumConfigs = ls_kmsg_arrlen(r, f, 1 + 1, false, "Configs");
        res->Configs = ls_kmsg_alloc(a, res->NumConfigs, sizeof *res->Configs);
        for (int32_t j = 0; j < res->NumConfigs && !r->err; j++) {
            res->Configs[j].Name = ls_kmsg_str(r, f, "Configs.Name");
            res->Configs[j].Value = ls_kr_str(r, f);
            ls_kr_tags(r, f);
        }
        ls_kr_tags(r, f);
    }
    m->ValidateOnly = ls_kr_bool(r);
    ls_kr_tags(r, f);
    return r->err ? -1 : 0;
}

void ls_kafka_AlterConfigsRequest_encode(ls_kw_t *w, int16_t v,
                                         const ls_kafka_AlterConfigsRequest *m)
{
    bool f = ACFLEX(v);
    ls_kw_arrlen(w, f, m->NumResources);
    for (int32_t i = 0; i < m->NumResources; i++) {
        const ls_kafka_AlterConfigsRequest_AlterConfigsResource *res = &m->Resources[i];
        ls_kw_i8(w, res->ResourceType);
        ls_kmsg_wstr_nn(w, f, res->ResourceName);
        ls_kw_arrlen(w, f, res->NumConfigs);
        for (int32_t j = 0; j < res->NumConfigs; j++) {
            ls_kmsg_wstr_nn(w, f, res->Configs[j].Name);
            ls_kmsg_wstr(w, f, res->Configs[j].Value);
            ls_kw_tags(w, f);
        }
        ls_kw_tags(w, f);
    }
    ls_kw_bool(w, m->ValidateOnly);
    ls_kw_tags(w, f);
}

int ls_kafka_IncrementalAlterConfigsRequest_decode(ls_kr_t *r, int16_t v, ls_arena_t *a,
                                                   ls_kafka_IncrementalAlterConfigsRequest *m)
{
    memset(m, 0, sizeof *m);
    if (!ls_kmsg_version_ok(r, v, LS_KAFKA_INCREMENTAL_ALTER_CONFIGS_MIN,
                            LS_KAFKA_INCREMENTAL_ALTER_CONFIGS_MAX))
        return -1;
    bool f = IACFLEX(v);
    m->NumResources = ls_kmsg_arrlen(r, f, 1 + 1 + 1, false, "Resources");
    m->Resources = ls_kmsg_alloc(a, m->NumResources, sizeof *m->Resources);
    for (int32_t i = 0; i < m->NumResources && !r->err; i++) {
        ls_kafka_IncrementalAlterConfigsRequest_AlterConfigsResource *res = &m->Resources[i];
        res->ResourceType = ls_kr_i8(r);
        res->ResourceName = ls_kmsg_str(r, f, "Resources.ResourceName");
        res->NumConfigs = ls_kmsg_arrlen(r, f, 1 + 1 + 1, false, "Configs");
        res->Configs = ls_kmsg_alloc(a, res->NumConfigs, sizeof *res->Configs);
        for (int32_t j = 0; j < res->NumConfigs && !r->err; j++) {
            res->Configs[j].Name = ls_kmsg_str(r, f, "Configs.Name");
            res->Configs[j].ConfigOperation = ls_kr_i8(r);
            res->Configs[j].Value = ls_kr_str(r, f);
            ls_kr_tags(r, f);
        }
        ls_kr_tags(r, f);
    }
    m->ValidateOnly = ls_kr_bool(r);
    ls_kr_tags(r, f);
    return r->err ? -1 : 0;
}

void ls_kafka_IncrementalAlterConfigsRequest_encode(
    ls_kw_t *w, int16_t v, const ls_kafka_IncrementalAlterConfigsRequest *m)
{
    bool f = IACFLEX(v);
    ls_kw_arrlen(w, f, m->NumResources);
    for (int32_t i = 0; i < m->NumResources; i++) {
        const ls_kafka_IncrementalAlterConfigsRequest_AlterConfigsResource *res = &m->Resources[i];
        ls_kw_i8(w, res->ResourceType);
        ls_kmsg_wstr_nn(w, f, res->ResourceName);
        ls_kw_arrlen(w, f, res->NumConfigs);
        for (int32_t j = 0; j < res->NumConfigs; j++) {
            ls_kmsg_wstr_nn(w, f, res->Configs[j].Name);
            ls_kw_i8(w, res->Configs[j].ConfigOperation);
            ls_kmsg_wstr(w, f, res->Configs[j].Value);
            ls_kw_tags(w, f);
        }
        ls_kw_tags(w, f);
    }
    ls_kw_bool(w, m->ValidateOnly);
    ls_kw_tags(w, f);
}

static int response_decode(ls_kr_t *r, bool f, ls_arena_t *a, ls_kafka_AlterConfigsResponse *m)
{
    m->ThrottleTimeMs = ls_kr_i32(r);
    m->NumResponses = ls_kmsg_arrlen(r, f, 2 + 1 + 1 + 1, false, "Responses");
    m->Responses = ls_kmsg_alloc(a, m->NumResponses, sizeof *m->Responses);
    for (int32_t i = 0; i < m->NumResponses && !r->err; i++) {
        ls_kafka_AlterConfigsResourceResponse *res = &m->Responses[i];
        res->ErrorCode = ls_kr_i16(r);
        res->ErrorMessage = ls_kr_str(r, f);
        res->ResourceType = ls_kr_i8(r);
        res->ResourceName = ls_kmsg_str(r, f, "Responses.ResourceName");
        ls_kr_tags(r, f);
    }
    ls_kr_tags(r, f);
    return r->err ? -1 : 0;
}

static void response_encode(ls_kw_t *w, bool f, const ls_kafka_AlterConfigsResponse *m)
{
    ls_kw_i32(w, m->ThrottleTimeMs);
    ls_kw_arrlen(w, f, m->NumResponses);
    for (int32_t i = 0; i < m->NumResponses; i++) {
        const ls_kafka_AlterConfigsResourceResponse *res = &m->Responses[i];
        ls_kw_i16(w, res->ErrorCode);
        ls_kmsg_wstr(w, f, res->ErrorMessage);
        ls_kw_i8(w, res->ResourceType);
        ls_kmsg_wstr_nn(w, f, res->ResourceName);
        ls_kw_tags(w, f);
    }
    ls_kw_tags(w, f);
}

int ls_kafka_AlterConfigsResponse_decode(ls_kr_t *r, int16_t v, ls_arena_t *a,
                                         ls_kafka_AlterConfigsResponse *m)
{
    memset(m, 0, sizeof *m);
    if (!ls_kmsg_version_ok(r, v, LS_KAFKA_ALTER_CONFIGS_MIN, LS_KAFKA_ALTER_CONFIGS_MAX))
        return -1;
    return response_decode(r, ACFLEX(v), a, m);
}

void ls_kafka_AlterConfigsResponse_encode(ls_kw_t *w, int16_t v,
                                          const ls_kafka_AlterConfigsResponse *m)
{
    response_encode(w, ACFLEX(v), m);
}

int ls_kafka_IncrementalAlterConfigsResponse_decode(ls_kr_t *r, int16_t v, ls_arena_t *a,
                                                    ls_kafka_IncrementalAlterConfigsResponse *m)
{
    memset(m, 0, sizeof *m);
    if (!ls_kmsg_version_ok(r, v, LS_KAFKA_INCREMENTAL_ALTER_CONFIGS_MIN,
                            LS_KAFKA_INCREMENTAL_ALTER_CONFIGS_MAX))
        return -1;
    return response_decode(r, IACFLEX(v), a, m);
}

void ls_kafka_IncrementalAlterConfigsResponse_encode(
    ls_kw_t *w, int16_t v, const ls_kafka_IncrementalAlterConfigsResponse *m)
{
    response_encode(w, IACFLEX(v), m);
}
