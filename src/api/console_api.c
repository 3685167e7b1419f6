/* GET /api/v1/cluster and /api/v1/groups (api/console_api.h). Stateless;
 * runs on the HTTP thread that holds k. */
#include "api/console_api.h"

#include <string.h>

#include "kafka/msg.h"

static json_t *kstr_json(ls_kstr_t s)
{
    return s.len < 0 || !s.ptr ? json_null() : json_stringn(s.ptr, (size_t)s.len);
}

json_t *ls_api_cluster_json(ls_admin_conn_t *k, const ls_api_dialer_t *d)
{
    (void)d;
    ls_kafka_MetadataRequest q = {.Topics = NULL, .NumTopics = 0};
    ls_kafka_MetadataResponse r;
    if (LS_ADMIN_CALL(k, Metadata, METADATA, 9, &q, &r) != 0) return NULL;
    json_t *brokers = json_array();
    for (int32_t i = 0; i < r.NumBrokers; i++)
        json_array_append_new(
            brokers, json_pack("{s:i, s:o, s:i, s:o}", "nodeId", (int)r.Brokers[i].NodeId, "host",
                               kstr_json(r.Brokers[i].Host), "port", (int)r.Brokers[i].Port, "rack",
                               kstr_json(r.Brokers[i].Rack)));
    return json_pack("{s:o, s:i, s:o}", "clusterId", kstr_json(r.ClusterId), "controllerId",
                     (int)r.ControllerId, "brokers", brokers);
}

/* The log end offset of (topic, partition) in lr, -1 if it has none. */
static int64_t log_end(const ls_kafka_ListOffsetsResponse *lr, ls_kstr_t topic, int32_t part)
{
    for (int32_t i = 0; i < lr->NumTopics; i++) {
        const ls_kafka_ListOffsetsResponse_ListOffsetsTopicResponse *t = &lr->Topics[i];
        if (t->Name.len != topic.len || memcmp(t->Name.ptr, topic.ptr, (size_t)topic.len)) continue;
        for (int32_t j = 0; j < t->NumPartitions; j++)
            if (t->Partitions[j].PartitionIndex == part)
                return t->Partitions[j].ErrorCode ? -1 : t->Partitions[j].Offset;
    }
    return -1;
}

/* The group's committed offsets, fetched from its coordinator over a
 * connection of d, into *out (in co's arena; co stays open for the caller to
 * hang up). 0, or -1 with k->err set. */
static int fetch_offsets(ls_admin_conn_t *k, const ls_api_dialer_t *d, ls_kstr_t gid,
                         ls_admin_conn_t *co, const ls_kafka_OffsetFetchResponse_Group **out)
{
    ls_kafka_FindCoordinatorRequest q = {.Key = gid, .KeyType = 0};
    ls_kafka_FindCoordinatorResponse r;
    if (LS_ADMIN_CALL(k, FindCoordinator, FIND_COORDINATOR, 3, &q, &r) != 0) return -1;
    if (r.ErrorCode) {
        ls_admin_errbuf_t eb;
        snprintf(k->err, sizeof k->err, "FindCoordinator of group '%.*s': %s",
                 gid.len > 200 ? 200 : (int)gid.len, gid.ptr,
                 ls_admin_error_name(r.ErrorCode, &eb));
        return -1;
    }
    char addr[300];
    bool v6 = r.Host.len > 0 && memchr(r.Host.ptr, ':', (size_t)r.Host.len);
    snprintf(addr, sizeof addr, "%s%.*s%s:%d", v6 ? "[" : "", r.Host.len > 0 ? (int)r.Host.len : 0,
             r.Host.len > 0 ? r.Host.ptr : "", v6 ? "]" : "", (int)r.Port);
    if (d->dial(d->ctx, co, addr) != 0) {
        snprintf(k->err, sizeof k->err, "%.500s", co->err);
        return -1;
    }
    ls_kafka_OffsetFetchRequest_Group fg = {gid, ls_kstr_null(), -1, NULL, -1};
    ls_kafka_OffsetFetchRequest fq = {.Groups = &fg, .NumGroups = 1};
    ls_kafka_OffsetFetchResponse fr;
    int rc = LS_ADMIN_CALL(co, OffsetFetch, OFFSET_FETCH, 8, &fq, &fr);
    ls_admin_errbuf_t eb;
    if (rc == 0 && fr.NumGroups != 1)
        snprintf(co->err, sizeof co->err, "%d groups in the answer", (int)fr.NumGroups);
    else if (rc == 0 && fr.Groups[0].ErrorCode)
        snprintf(co->err, sizeof co->err, "%s", ls_admin_error_name(fr.Groups[0].ErrorCode, &eb));
    if (rc != 0 || fr.NumGroups != 1 || fr.Groups[0].ErrorCode) {
        snprintf(k->err, sizeof k->err, "OffsetFetch of group '%.*s' at %.100s: %.200s",
                 gid.len > 150 ? 150 : (int)gid.len, gid.ptr, addr, co->err);
        d->hangup(d->ctx, co);
        return -1;
    }
    *out = &fr.Groups[0];
    return 0;
}

static json_t *offsets_json(ls_admin_conn_t *k, const ls_kafka_OffsetFetchResponse_Group *og,
                            int64_t *total);

/* One group's committed offsets with their lag, or NULL (k->err). */
static json_t *group_offsets(ls_admin_conn_t *k, const ls_api_dialer_t *d, ls_kstr_t gid,
                             int64_t *total)
{
    ls_admin_conn_t co;
    const ls_kafka_OffsetFetchResponse_Group *og;
    if (fetch_offsets(k, d, gid, &co, &og) != 0) return NULL;
    json_t *arr = offsets_json(k, og, total);
    d->hangup(d->ctx, &co);
    return arr;
}

/* og's offsets with the log end offsets (ListOffsets on k) and lag, or NULL. */
static json_t *offsets_json(ls_admin_conn_t *k, const ls_kafka_OffsetFetchResponse_Group *og,
                            int64_t *total)
{
    ls_kafka_ListOffsetsRequest lq = {.ReplicaId = -1, .NumTopics = og->NumTopics};
    lq.Topics = ls_kmsg_alloc(k->arena, og->NumTopics, sizeof *lq.Topics);
    for (int32_t i = 0; i < og->NumTopics; i++) {
        int32_t np = og->Topics[i].NumPartitions;
        lq.Topics[i].Name = og->Topics[i].Name;
        lq.Topics[i].NumPartitions = np;
        lq.Topics[i].Partitions = ls_kmsg_alloc(k->arena, np, sizeof *lq.Topics[i].Partitions);
        for (int32_t j = 0; j < np; j++)
            lq.Topics[i].Partitions[j] = (ls_kafka_ListOffsetsRequest_ListOffsetsPartition){
                og->Topics[i].Partitions[j].PartitionIndex, -1, -1};
    }
    ls_kafka_ListOffsetsResponse lr;
    memset(&lr, 0, sizeof lr);
    if (og->NumTopics > 0 && LS_ADMIN_CALL(k, ListOffsets, LIST_OFFSETS, 4, &lq, &lr) != 0)
        return NULL;
    json_t *arr = json_array();
    for (int32_t i = 0; i < og->NumTopics; i++)
        for (int32_t j = 0; j < og->Topics[i].NumPartitions; j++) {
            const ls_kafka_OffsetFetchResponse_Partition *p = &og->Topics[i].Partitions[j];
            int64_t end = log_end(&lr, og->Topics[i].Name, p->PartitionIndex);
            int64_t lag = end >= 0 && p->CommittedOffset >= 0 ? end - p->CommittedOffset : -1;
            if (lag > 0) *total += lag;
            json_array_append_new(arr, json_pack("{s:o, s:i, s:I, s:I, s:I}", "topic",
                                                 kstr_json(og->Topics[i].Name), "partition",
                                                 (int)p->PartitionIndex, "committedOffset",
                                                 (json_int_t)p->CommittedOffset, "logEndOffset",
                                                 (json_int_t)end, "lag", (json_int_t)lag));
        }
    return arr;
}

json_t *ls_api_groups_json(ls_admin_conn_t *k, const ls_api_dialer_t *d)
{
    ls_kafka_ListGroupsRequest q = {0};
    ls_kafka_ListGroupsResponse r;
    if (LS_ADMIN_CALL(k, ListGroups, LIST_GROUPS, 4, &q, &r) != 0) return NULL;
    if (r.ErrorCode) {
        ls_admin_errbuf_t eb;
        snprintf(k->err, sizeof k->err, "ListGroups: %s", ls_admin_error_name(r.ErrorCode, &eb));
        return NULL;
    }
    json_t *groups = json_array();
    for (int32_t i = 0; i < r.NumGroups; i++) {
        int64_t total = 0;
        json_t *offs = group_offsets(k, d, r.Groups[i].GroupId, &total);
        if (!offs) {
            json_decref(groups);
            return NULL;
        }
        json_array_append_new(groups, json_pack("{s:o, s:o, s:o, s:o, s:I}", "groupId",
                                                kstr_json(r.Groups[i].GroupId), "state",
                                                kstr_json(r.Groups[i].GroupState), "protocolType",
                                                kstr_json(r.Groups[i].ProtocolType), "offsets",
                                                offs, "lag", (json_int_t)total));
    }
    return json_pack("{s:o}", "groups", groups);
}
