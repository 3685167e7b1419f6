/* `lakestream groups`: consumer-group administration for operators.
 *
 *   lakestream groups [--bootstrap HOST:PORT] list
 *   lakestream groups [--bootstrap HOST:PORT] describe GROUP
 *   lakestream groups [--bootstrap HOST:PORT] delete GROUP...
 *   lakestream groups [--bootstrap HOST:PORT] reset GROUP --topic T
 *                     (--to-earliest | --to-latest | --to-datetime EPOCH_MS)
 *
 * Talks to a running broker over the Kafka protocol (the same requests a
 * Kafka admin client sends, encoded with our own codecs), so it works the same
 * against one broker or many and never races the broker for the metadata
 * store. Default bootstrap: 127.0.0.1:9092.
 *
 * describe prints every committed partition with the log end offset and lag
 * (end - committed), and the member owning it when the group is Stable
 * (decoded from the consumer protocol's assignment); for a share group, its
 * members and each share partition's start offset, lag and the members it
 * is assigned to (ShareGroupDescribe, DescribeShareGroupOffsets); for a streams
 * group, its members' active and standby tasks and the committed offsets with
 * the member whose active task reads each partition (StreamsGroupDescribe).
 * reset commits the new
 * offsets from outside group management; the broker accepts that only while
 * the group is Empty (stop the consumers first), like kafka-consumer-groups. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "cli/cli.h"
#include "cli/cli_args.h"
#include "kafka/msg.h"

/* A Kafka error for the user: Kafka's name, with what it means here where
 * that helps. */
static const char *kerr_name(int16_t e)
{
    const char *hint = NULL;
    switch (e) {
    case LS_KERR_NONE: return "none";
    case LS_KERR_UNKNOWN_MEMBER_ID:
    case LS_KERR_ILLEGAL_GENERATION:
    case LS_KERR_REBALANCE_IN_PROGRESS:
        hint = "the group has active members: stop them first";
        break;
    case LS_KERR_NON_EMPTY_GROUP: hint = "the group has active members"; break;
    }
    static ls_admin_errbuf_t eb;
    static char buf[256];
    const char *name = ls_admin_error_name(e, &eb);
    if (!hint) return name;
    snprintf(buf, sizeof buf, "%s (%s)", name, hint);
    return buf;
}

static ls_kstr_t ks(const char *s) { return ls_kstr_c(s); }

/* ---------------------------------------------------------------- list */

static int cmd_list(ls_cli_conn_t *c)
{
    ls_kafka_ListGroupsRequest q = {0};
    ls_kafka_ListGroupsResponse r;
    if (LS_CLI_CALL(c, ListGroups, LIST_GROUPS, 5, &q, &r) != 0) return 1;
    if (r.ErrorCode) {
        fprintf(stderr, "lakestream groups: %s\n", kerr_name(r.ErrorCode));
        return 1;
    }
    printf("%-40s %-20s %-10s %s\n", "GROUP", "STATE", "TYPE", "PROTOCOL-TYPE");
    for (int32_t i = 0; i < r.NumGroups; i++)
        printf("%-40.*s %-20.*s %-10.*s %.*s\n", r.Groups[i].GroupId.len, r.Groups[i].GroupId.ptr,
               r.Groups[i].GroupState.len, r.Groups[i].GroupState.ptr, r.Groups[i].GroupType.len,
               r.Groups[i].GroupType.ptr, r.Groups[i].ProtocolType.len,
               r.Groups[i].ProtocolType.ptr);
    return 0;
}

/* ------------------------------------------------------------ describe */

/* Who holds a partition: filled from either kind of group's description. */
typedef struct owner {
    ls_kstr_t topic;
    int32_t partition;
    ls_kstr_t member;
} owner_t;

typedef struct owners {
    owner_t *v;
    int n, cap;
} owners_t;

static void owner_add(owners_t *o, ls_kstr_t topic, int32_t partition, ls_kstr_t member)
{
    if (o->n == o->cap) {
        o->cap = o->cap ? 2 * o->cap : 16;
        o->v = ls_realloc(o->v, (size_t)o->cap * sizeof *o->v);
    }
    o->v[o->n++] = (owner_t){topic, partition, member};
}

/* A classic group's members' assignments (consumer protocol type):
 * int16 version, [string topic, [int32 partition]], bytes user data. */
static void owners_classic(owners_t *o, const ls_kafka_DescribeGroupsResponse_Group *g)
{
    for (int32_t i = 0; i < g->NumMembers; i++) {
        ls_kr_t r;
        ls_kr_init(&r, g->Members[i].MemberAssignment.ptr,
                   g->Members[i].MemberAssignment.len > 0
                       ? (size_t)g->Members[i].MemberAssignment.len
                       : 0);
        if (ls_kr_remaining(&r) < 6) continue;
        ls_kr_i16(&r);
        int32_t nt = ls_kr_i32(&r);
        for (int32_t t = 0; t < nt && !r.err; t++) {
            ls_kstr_t name = ls_kr_str(&r, false);
            int32_t np = ls_kr_i32(&r);
            for (int32_t p = 0; p < np && !r.err; p++) {
                int32_t x = ls_kr_i32(&r);
                if (!r.err) owner_add(o, name, x, g->Members[i].MemberId);
            }
        }
    }
}

static const char *owner_of(const owners_t *o, ls_kstr_t topic, int32_t part, ls_arena_t *a)
{
    for (int i = 0; i < o->n; i++) {
        const owner_t *w = &o->v[i];
        if (w->partition == part && w->topic.len == topic.len &&
            memcmp(w->topic.ptr, topic.ptr, (size_t)topic.len) == 0) {
            char *s = ls_arena_alloc(a, (size_t)w->member.len + 1);
            memcpy(s, w->member.ptr, (size_t)w->member.len);
            return s;
        }
    }
    return "-";
}

/* A KIP-848 consumer group: printed and its owners filled; 1 when the group
 * is not one (GROUP_ID_NOT_FOUND: a classic group, or none), -1 on error. */
static int describe_consumer(ls_cli_conn_t *c, const char *group, owners_t *o)
{
    ls_kstr_t gk = ks(group);
    ls_kafka_ConsumerGroupDescribeRequest q = {&gk, 1, false};
    ls_kafka_ConsumerGroupDescribeResponse r;
    if (LS_CLI_CALL(c, ConsumerGroupDescribe, CONSUMER_GROUP_DESCRIBE, 1, &q, &r) != 0 ||
        r.NumGroups != 1)
        return -1;
    ls_kafka_ConsumerGroupDescribeResponse_DescribedGroup *g = &r.Groups[0];
    if (g->ErrorCode == LS_KERR_GROUP_ID_NOT_FOUND) return 1;
    if (g->ErrorCode) {
        fprintf(stderr, "lakestream groups: %s: %s\n", group, kerr_name(g->ErrorCode));
        return -1;
    }
    printf("group %s: state %.*s, type consumer, group epoch %d, assignor %.*s, %d member(s)\n",
           group, g->GroupState.len, g->GroupState.ptr, g->GroupEpoch, g->AssignorName.len,
           g->AssignorName.ptr, g->NumMembers);
    for (int32_t i = 0; i < g->NumMembers; i++) {
        ls_kafka_ConsumerGroupDescribeResponse_Member *m = &g->Members[i];
        printf("  member %.*s epoch %d client %.*s host %.*s\n", m->MemberId.len, m->MemberId.ptr,
               m->MemberEpoch, m->ClientId.len, m->ClientId.ptr, m->ClientHost.len,
               m->ClientHost.ptr);
        for (int32_t t = 0; t < m->Assignment.NumTopicPartitions; t++) {
            ls_kafka_ConsumerGroupDescribeResponse_TopicPartitions *tp =
                &m->Assignment.TopicPartitions[t];
            for (int32_t p = 0; p < tp->NumPartitions; p++)
                owner_add(o, tp->TopicName, tp->Partitions[p], m->MemberId);
        }
    }
    return 0;
}

/* Committed offsets, log ends, lag and owner of every committed partition. */
static int describe_offsets(ls_cli_conn_t *c, const char *group, const owners_t *owners)
{
    ls_kstr_t gk = ks(group);
    ls_kafka_OffsetFetchRequest_Group fg = {gk, ls_kstr_null(), -1, NULL, -1};
    ls_kafka_OffsetFetchRequest fq = {.Groups = &fg, .NumGroups = 1};
    ls_kafka_OffsetFetchResponse fr;
    if (LS_CLI_CALL(c, OffsetFetch, OFFSET_FETCH, 8, &fq, &fr) != 0 || fr.NumGroups != 1) return 1;
    ls_kafka_OffsetFetchResponse_Group *og = &fr.Groups[0];
    /* log end offsets of every committed partition in one ListOffsets */
    ls_kafka_ListOffsetsRequest lq = {-1, 0, NULL, og->NumTopics};
    lq.Topics = ls_kmsg_alloc(c->arena, og->NumTopics, sizeof *lq.Topics);
    for (int32_t i = 0; i < og->NumTopics; i++) {
        lq.Topics[i].Name = og->Topics[i].Name;
        lq.Topics[i].NumPartitions = og->Topics[i].NumPartitions;
        lq.Topics[i].Partitions =
            ls_kmsg_alloc(c->arena, og->Topics[i].NumPartitions, sizeof *lq.Topics[i].Partitions);
        for (int32_t j = 0; j < og->Topics[i].NumPartitions; j++) {
            lq.Topics[i].Partitions[j].PartitionIndex = og->Topics[i].Partitions[j].PartitionIndex;
            lq.Topics[i].Partitions[j].CurrentLeaderEpoch = -1;
            lq.Topics[i].Partitions[j].Timestamp = -1;
        }
    }
    ls_kafka_ListOffsetsResponse lr;
    memset(&lr, 0, sizeof lr);
    if (og->NumTopics > 0 && LS_CLI_CALL(c, ListOffsets, LIST_OFFSETS, 6, &lq, &lr) != 0) return 1;
    printf("\n%-30s %9s %14s %14s %10s  %s\n", "TOPIC", "PARTITION", "COMMITTED", "LOG-END", "LAG",
           "OWNER");
    int64_t total = 0;
    for (int32_t i = 0; i < og->NumTopics; i++) {
        for (int32_t j = 0; j < og->Topics[i].NumPartitions; j++) {
            ls_kafka_OffsetFetchResponse_Partition *p = &og->Topics[i].Partitions[j];
            int64_t end = -1;
            for (int32_t k = 0; k < lr.NumTopics && end < 0; k++)
                for (int32_t l = 0; l < lr.Topics[k].NumPartitions; l++)
                    if (lr.Topics[k].Name.len == og->Topics[i].Name.len &&
                        memcmp(lr.Topics[k].Name.ptr, og->Topics[i].Name.ptr,
                               (size_t)og->Topics[i].Name.len) == 0 &&
                        lr.Topics[k].Partitions[l].PartitionIndex == p->PartitionIndex &&
                        lr.Topics[k].Partitions[l].ErrorCode == 0)
                        end = lr.Topics[k].Partitions[l].Offset;
            int64_t lag = end >= 0 && p->CommittedOffset >= 0 ? end - p->CommittedOffset : -1;
            if (lag > 0) total += lag;
            char lagbuf[24] = "-";
            if (lag >= 0) snprintf(lagbuf, sizeof lagbuf, "%lld", (long long)lag);
            printf("%-30.*s %9d %14lld %14lld %10s  %s\n", og->Topics[i].Name.len,
                   og->Topics[i].Name.ptr, p->PartitionIndex, (long long)p->CommittedOffset,
                   (long long)end, lagbuf,
                   owner_of(owners, og->Topics[i].Name, p->PartitionIndex, c->arena));
        }
    }
    printf("total lag %lld\n", (long long)total);
    return 0;
}

/* A share group (KIP-932): printed with its members and assignments, then
 * each share partition's start offset and lag; 1 when the group is not one,
 * else the command's exit code. */
static int describe_share(ls_cli_conn_t *c, const char *group, owners_t *o)
{
    ls_kstr_t gk = ks(group);
    ls_kafka_ShareGroupDescribeRequest q = {&gk, 1, false};
    ls_kafka_ShareGroupDescribeResponse r;
    if (LS_CLI_CALL(c, ShareGroupDescribe, SHARE_GROUP_DESCRIBE, 1, &q, &r) != 0 ||
        r.NumGroups != 1)
        return 2;
    ls_kafka_ShareGroupDescribeResponse_DescribedGroup *g = &r.Groups[0];
    if (g->ErrorCode == LS_KERR_GROUP_ID_NOT_FOUND) return 1;
    if (g->ErrorCode) {
        fprintf(stderr, "lakestream groups: %s: %s\n", group, kerr_name(g->ErrorCode));
        return 2;
    }
    printf("group %s: state %.*s, type share, group epoch %d, assignor %.*s, %d member(s)\n", group,
           g->GroupState.len, g->GroupState.ptr, g->GroupEpoch, g->AssignorName.len,
           g->AssignorName.ptr, g->NumMembers);
    for (int32_t i = 0; i < g->NumMembers; i++) {
        ls_kafka_ShareGroupDescribeResponse_Member *m = &g->Members[i];
        printf("  member %.*s epoch %d client %.*s host %.*s\n", m->MemberId.len, m->MemberId.ptr,
               m->MemberEpoch, m->ClientId.len, m->ClientId.ptr, m->ClientHost.len,
               m->ClientHost.ptr);
        for (int32_t t = 0; t < m->Assignment.NumTopicPartitions; t++) {
            ls_kafka_ShareGroupDescribeResponse_TopicPartitions *tp =
                &m->Assignment.TopicPartitions[t];
            for (int32_t p = 0; p < tp->NumPartitions; p++)
                owner_add(o, tp->TopicName, tp->Partitions[p], m->MemberId);
        }
    }
    ls_kafka_DescribeShareGroupOffsetsRequest_DescribeShareGroupOffsetsRequestGroup qg = {gk, NULL,
                                                                                          -1};
    ls_kafka_DescribeShareGroupOffsetsRequest oq = {&qg, 1};
    ls_kafka_DescribeShareGroupOffsetsResponse orr;
    if (LS_CLI_CALL(c, DescribeShareGroupOffsets, DESCRIBE_SHARE_GROUP_OFFSETS, 1, &oq, &orr) !=
            0 ||
        orr.NumGroups != 1)
        return 2;
    ls_kafka_DescribeShareGroupOffsetsResponse_DescribeShareGroupOffsetsResponseGroup *og =
        &orr.Groups[0];
    if (og->ErrorCode) {
        fprintf(stderr, "lakestream groups: %s: %s\n", group, kerr_name(og->ErrorCode));
        return 2;
    }
    /* a share partition is read by every member it is assigned to */
    printf("\n%-30s %9s %14s %10s  %s\n", "TOPIC", "PARTITION", "START-OFFSET", "LAG", "MEMBERS");
    int64_t total = 0;
    for (int32_t i = 0; i < og->NumTopics; i++) {
        ls_kafka_DescribeShareGroupOffsetsResponse_DescribeShareGroupOffsetsResponseTopic *t =
            &og->Topics[i];
        for (int32_t j = 0; j < t->NumPartitions; j++) {
            ls_kafka_DescribeShareGroupOffsetsResponse_DescribeShareGroupOffsetsResponsePartition
                *p = &t->Partitions[j];
            if (p->ErrorCode) {
                printf("%-30.*s %9d %14s %10s  %s\n", t->TopicName.len, t->TopicName.ptr,
                       p->PartitionIndex, "-", "-", kerr_name(p->ErrorCode));
                continue;
            }
            char lagbuf[24] = "-";
            if (p->Lag >= 0) {
                snprintf(lagbuf, sizeof lagbuf, "%lld", (long long)p->Lag);
                total += p->Lag;
            }
            ls_buf_t who;
            ls_buf_init(&who);
            for (int k = 0; k < o->n; k++) {
                const owner_t *w = &o->v[k];
                if (w->partition != p->PartitionIndex || w->topic.len != t->TopicName.len ||
                    memcmp(w->topic.ptr, t->TopicName.ptr, (size_t)w->topic.len) != 0)
                    continue;
                if (who.len) ls_buf_append(&who, ",", 1);
                ls_buf_append(&who, w->member.ptr, (size_t)w->member.len);
            }
            printf("%-30.*s %9d %14lld %10s  %.*s\n", t->TopicName.len, t->TopicName.ptr,
                   p->PartitionIndex, (long long)p->StartOffset, lagbuf, who.len ? (int)who.len : 1,
                   who.len ? (const char *)who.data : "-");
            ls_buf_free(&who);
        }
    }
    printf("total lag %lld\n", (long long)total);
    return 0;
}

static int describe_classic(ls_cli_conn_t *c, const char *group, owners_t *owners)
{
    ls_kstr_t gk = ks(group);
    ls_kafka_DescribeGroupsRequest dq = {&gk, 1, false};
    ls_kafka_DescribeGroupsResponse dr;
    if (LS_CLI_CALL(c, DescribeGroups, DESCRIBE_GROUPS, 5, &dq, &dr) != 0 || dr.NumGroups != 1)
        return 1;
    ls_kafka_DescribeGroupsResponse_Group *g = &dr.Groups[0];
    if (g->ErrorCode) {
        fprintf(stderr, "lakestream groups: %s: %s\n", group, kerr_name(g->ErrorCode));
        return 1;
    }
    if (g->GroupState.len == 4 && memcmp(g->GroupState.ptr, "Dead", 4) == 0) {
        fprintf(stderr, "lakestream groups: group '%s' does not exist\n", group);
        return 2;
    }
    printf("group %s: state %.*s, protocol %.*s/%.*s, %d member(s)\n", group, g->GroupState.len,
           g->GroupState.ptr, g->ProtocolType.len, g->ProtocolType.ptr, g->ProtocolData.len,
           g->ProtocolData.ptr, g->NumMembers);
    for (int32_t i = 0; i < g->NumMembers; i++)
        printf("  member %.*s%s%.*s client %.*s host %.*s\n", g->Members[i].MemberId.len,
               g->Members[i].MemberId.ptr,
               g->Members[i].GroupInstanceId.len > 0 ? " instance " : "",
               g->Members[i].GroupInstanceId.len > 0 ? g->Members[i].GroupInstanceId.len : 0,
               g->Members[i].GroupInstanceId.ptr ? g->Members[i].GroupInstanceId.ptr : "",
               g->Members[i].ClientId.len, g->Members[i].ClientId.ptr, g->Members[i].ClientHost.len,
               g->Members[i].ClientHost.ptr);
    owners_classic(owners, g);
    return describe_offsets(c, group, owners);
}

/* Tasks of a streams-group member as text ("0_1 1_1"), and its active
 * tasks as owners of the partitions their sub-topology reads. */
static void streams_tasks(const ls_kafka_StreamsGroupDescribeResponse_TaskIds *v, int32_t n,
                          const ls_kafka_StreamsGroupDescribeResponse_Topology *topo,
                          ls_kstr_t member, owners_t *o)
{
    if (n == 0) printf(" -");
    for (int32_t i = 0; i < n; i++) {
        for (int32_t p = 0; p < v[i].NumPartitions; p++) {
            printf(" %.*s_%d", v[i].SubtopologyId.len, v[i].SubtopologyId.ptr, v[i].Partitions[p]);
            for (int32_t s = 0; o && topo->NumSubtopologies > 0 && s < topo->NumSubtopologies;
                 s++) {
                const ls_kafka_StreamsGroupDescribeResponse_Subtopology *st =
                    &topo->Subtopologies[s];
                if (st->SubtopologyId.len != v[i].SubtopologyId.len ||
                    memcmp(st->SubtopologyId.ptr, v[i].SubtopologyId.ptr,
                           (size_t)st->SubtopologyId.len) != 0)
                    continue;
                for (int32_t k = 0; k < st->NumSourceTopics; k++)
                    owner_add(o, st->SourceTopics[k], v[i].Partitions[p], member);
                for (int32_t k = 0; k < st->NumRepartitionSourceTopics; k++)
                    owner_add(o, st->RepartitionSourceTopics[k].Name, v[i].Partitions[p], member);
            }
        }
    }
}

/* A streams group (KIP-1071): printed with its members and their tasks, then
 * the committed offsets; 1 when the group is not one, else the exit code. */
static int describe_streams(ls_cli_conn_t *c, const char *group, owners_t *o)
{
    ls_kstr_t gk = ks(group);
    ls_kafka_StreamsGroupDescribeRequest q = {&gk, 1, false};
    ls_kafka_StreamsGroupDescribeResponse r;
    if (LS_CLI_CALL(c, StreamsGroupDescribe, STREAMS_GROUP_DESCRIBE, 0, &q, &r) != 0 ||
        r.NumGroups != 1)
        return -1;
    ls_kafka_StreamsGroupDescribeResponse_DescribedGroup *g = &r.Groups[0];
    if (g->ErrorCode == LS_KERR_GROUP_ID_NOT_FOUND) return 1;
    if (g->ErrorCode) {
        fprintf(stderr, "lakestream groups: %s: %s\n", group, kerr_name(g->ErrorCode));
        return -1;
    }
    printf("group %s: state %.*s, type streams, group epoch %d, topology epoch %d, %d member(s)\n",
           group, g->GroupState.len, g->GroupState.ptr, g->GroupEpoch,
           g->HasTopology ? g->Topology.Epoch : -1, g->NumMembers);
    for (int32_t i = 0; i < g->NumMembers; i++) {
        ls_kafka_StreamsGroupDescribeResponse_Member *m = &g->Members[i];
        printf("  member %.*s epoch %d process %.*s client %.*s host %.*s\n    active:",
               m->MemberId.len, m->MemberId.ptr, m->MemberEpoch, m->ProcessId.len, m->ProcessId.ptr,
               m->ClientId.len, m->ClientId.ptr, m->ClientHost.len, m->ClientHost.ptr);
        streams_tasks(m->Assignment.ActiveTasks, m->Assignment.NumActiveTasks, &g->Topology,
                      m->MemberId, o);
        printf("\n    standby:");
        streams_tasks(m->Assignment.StandbyTasks, m->Assignment.NumStandbyTasks, &g->Topology,
                      m->MemberId, NULL);
        printf("\n");
    }
    return describe_offsets(c, group, o);
}

static int cmd_describe(ls_cli_conn_t *c, const char *group)
{
    owners_t owners = {0};
    int rc = describe_consumer(c, group, &owners);
    if (rc == 0)
        rc = describe_offsets(c, group, &owners);
    else if (rc == 1 && (rc = describe_share(c, group, &owners)) == 1 &&
             (rc = describe_streams(c, group, &owners)) == 1)
        rc = describe_classic(c, group, &owners);
    else if (rc != 0)
        rc = 1;
    ls_free(owners.v);
    return rc;
}

/* ------------------------------------------------------------- delete */

static int cmd_delete(ls_cli_conn_t *c, const char *group)
{
    ls_kstr_t name = ks(group);
    ls_kafka_DeleteGroupsRequest q = {&name, 1};
    ls_kafka_DeleteGroupsResponse r;
    if (LS_CLI_CALL(c, DeleteGroups, DELETE_GROUPS, 2, &q, &r) != 0) return 1;
    int rc = 0;
    for (int32_t i = 0; i < r.NumResults; i++) {
        printf("%.*s: %s\n", r.Results[i].GroupId.len, r.Results[i].GroupId.ptr,
               r.Results[i].ErrorCode ? kerr_name(r.Results[i].ErrorCode) : "deleted");
        if (r.Results[i].ErrorCode) rc = 1;
    }
    return rc;
}

/* ------------------------------------------------------- coordinator */

/* Connects to the broker that coordinates `group` (FindCoordinator through
 * the bootstrap broker; in a cluster that may be another broker). */
static int connect_coordinator(ls_cli_conn_t *c, const char *bootstrap, const char *group)
{
    if (ls_cli_connect(c, "lakestream groups", bootstrap) != 0) return -1;
    ls_kafka_FindCoordinatorRequest q = {.Key = ks(group), .KeyType = 0};
    ls_kafka_FindCoordinatorResponse r;
    if (LS_CLI_CALL(c, FindCoordinator, FIND_COORDINATOR, 3, &q, &r) != 0) return -1;
    if (r.ErrorCode) {
        fprintf(stderr, "lakestream groups: finding the coordinator of '%s': %s\n", group,
                kerr_name(r.ErrorCode));
        return -1;
    }
    char addr[300];
    snprintf(addr, sizeof addr, "%.*s:%d", r.Host.len > 0 ? (int)r.Host.len : 0,
             r.Host.len > 0 ? r.Host.ptr : "", (int)r.Port);
    if (strcmp(addr, bootstrap) == 0) return 0;
    ls_cli_close(c);
    return ls_cli_connect(c, "lakestream groups", addr);
}

/* -------------------------------------------------------------- reset */

static int cmd_reset(ls_cli_conn_t *c, const char *group, const char *topic, int64_t ts)
{
    ls_kafka_MetadataRequest_MetadataRequestTopic mt = {.Name = ks(topic)};
    ls_kafka_MetadataRequest mq = {&mt, 1, false, false, false};
    ls_kafka_MetadataResponse mr;
    if (LS_CLI_CALL(c, Metadata, METADATA, 9, &mq, &mr) != 0 || mr.NumTopics != 1) return 1;
    if (mr.Topics[0].ErrorCode) {
        fprintf(stderr, "lakestream groups: topic %s: %s\n", topic,
                kerr_name(mr.Topics[0].ErrorCode));
        return 1;
    }
    int32_t np = mr.Topics[0].NumPartitions;
    ls_kafka_ListOffsetsRequest_ListOffsetsTopic lt = {ks(topic), NULL, np};
    lt.Partitions = ls_kmsg_alloc(c->arena, np, sizeof *lt.Partitions);
    for (int32_t i = 0; i < np; i++) {
        lt.Partitions[i].PartitionIndex = mr.Topics[0].Partitions[i].PartitionIndex;
        lt.Partitions[i].CurrentLeaderEpoch = -1;
        lt.Partitions[i].Timestamp = ts;
    }
    ls_kafka_ListOffsetsRequest lq = {-1, 0, &lt, 1};
    ls_kafka_ListOffsetsResponse lr;
    if (LS_CLI_CALL(c, ListOffsets, LIST_OFFSETS, 6, &lq, &lr) != 0 || lr.NumTopics != 1) return 1;
    /* a timestamp past the last record: the end of the log */
    ls_kafka_ListOffsetsRequest_ListOffsetsTopic et = lt;
    et.Partitions = ls_kmsg_alloc(c->arena, np, sizeof *et.Partitions);
    for (int32_t i = 0; i < np; i++) {
        et.Partitions[i] = lt.Partitions[i];
        et.Partitions[i].Timestamp = -1;
    }
    ls_kafka_ListOffsetsRequest eq = {-1, 0, &et, 1};
    ls_kafka_ListOffsetsResponse er;
    if (LS_CLI_CALL(c, ListOffsets, LIST_OFFSETS, 6, &eq, &er) != 0 || er.NumTopics != 1) return 1;
    ls_kafka_OffsetCommitRequest_Topic ct = {ks(topic), NULL, 0};
    ct.Partitions = ls_kmsg_alloc(c->arena, np, sizeof *ct.Partitions);
    for (int32_t i = 0; i < lr.Topics[0].NumPartitions; i++) {
        ls_kafka_ListOffsetsResponse_ListOffsetsPartitionResponse *p = &lr.Topics[0].Partitions[i];
        if (p->ErrorCode) {
            fprintf(stderr, "lakestream groups: %s[%d]: %s\n", topic, p->PartitionIndex,
                    kerr_name(p->ErrorCode));
            return 1;
        }
        int64_t off = p->Offset;
        if (off < 0) off = er.Topics[0].Partitions[i].Offset;
        ls_kafka_OffsetCommitRequest_Partition *cp = &ct.Partitions[ct.NumPartitions++];
        cp->PartitionIndex = p->PartitionIndex;
        cp->CommittedOffset = off;
        cp->CommittedLeaderEpoch = -1;
        cp->CommitTimestamp = -1;
        cp->CommittedMetadata = ls_kstr_c("");
    }
    ls_kafka_OffsetCommitRequest cq = {ks(group), -1, ks(""), ls_kstr_null(), -1, &ct, 1};
    ls_kafka_OffsetCommitResponse cr;
    if (LS_CLI_CALL(c, OffsetCommit, OFFSET_COMMIT, 8, &cq, &cr) != 0 || cr.NumTopics != 1)
        return 1;
    int rc = 0;
    printf("%-30s %9s %14s  %s\n", "TOPIC", "PARTITION", "NEW-OFFSET", "RESULT");
    for (int32_t i = 0; i < cr.Topics[0].NumPartitions; i++) {
        int16_t e = cr.Topics[0].Partitions[i].ErrorCode;
        printf("%-30s %9d %14lld  %s\n", topic, cr.Topics[0].Partitions[i].PartitionIndex,
               (long long)ct.Partitions[i].CommittedOffset, e ? kerr_name(e) : "ok");
        if (e) rc = 1;
    }
    return rc;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: lakestream groups [--bootstrap HOST:PORT] list\n"
               "       lakestream groups [--bootstrap HOST:PORT] describe GROUP\n"
               "       lakestream groups [--bootstrap HOST:PORT] delete GROUP...\n"
               "       lakestream groups [--bootstrap HOST:PORT] reset GROUP --topic TOPIC\n"
               "                         (--to-earliest | --to-latest | --to-datetime EPOCH_MS)\n"
               "Talks to a running broker (default 127.0.0.1:9092). reset needs an empty group.\n");
}

int ls_cli_groups(int argc, char **argv)
{
    const char *bootstrap, *cmd;
    int rc;
    int i = ls_cli_command(argc, argv, usage, &bootstrap, &cmd, &rc);
    if (i < 0) return rc;
    const char *group = NULL, *topic = NULL;
    int64_t ts = 0;
    bool have_ts = false;
    if (strcmp(cmd, "describe") == 0 || strcmp(cmd, "reset") == 0) {
        if (i >= argc) {
            usage(stderr);
            return 2;
        }
        group = argv[i++];
    }
    if (strcmp(cmd, "reset") == 0) {
        for (; i < argc; i++) {
            if (strcmp(argv[i], "--topic") == 0 && i + 1 < argc) {
                topic = argv[++i];
            } else if (strcmp(argv[i], "--to-earliest") == 0) {
                ts = -2, have_ts = true;
            } else if (strcmp(argv[i], "--to-latest") == 0) {
                ts = -1, have_ts = true;
            } else if (strcmp(argv[i], "--to-datetime") == 0 && i + 1 < argc) {
                char *end;
                ts = strtoll(argv[++i], &end, 10);
                if (*end || ts < 0) {
                    fprintf(stderr, "lakestream groups: --to-datetime wants epoch milliseconds\n");
                    return 2;
                }
                have_ts = true;
            } else {
                usage(stderr);
                return 2;
            }
        }
        if (!topic || !have_ts) {
            usage(stderr);
            return 2;
        }
    }
    ls_cli_conn_t c = {.fd = -1};
    if (strcmp(cmd, "list") == 0) {
        if (ls_cli_connect(&c, "lakestream groups", bootstrap) != 0) return 1;
        rc = cmd_list(&c);
    } else if (strcmp(cmd, "describe") == 0) {
        if (connect_coordinator(&c, bootstrap, group) != 0) return 1;
        rc = cmd_describe(&c, group);
    } else if (strcmp(cmd, "delete") == 0) {
        if (i >= argc) {
            usage(stderr);
            return 2;
        }
        rc = 0;
        for (; i < argc; i++) {
            ls_cli_conn_t gc = {.fd = -1};
            if (connect_coordinator(&gc, bootstrap, argv[i]) != 0 || cmd_delete(&gc, argv[i]) != 0)
                rc = 1;
            ls_cli_close(&gc);
        }
    } else if (strcmp(cmd, "reset") == 0) {
        if (connect_coordinator(&c, bootstrap, group) != 0) return 1;
        rc = cmd_reset(&c, group, topic, ts);
    } else {
        usage(stderr);
        return 2;
    }
    ls_cli_close(&c);
    return rc;
}
