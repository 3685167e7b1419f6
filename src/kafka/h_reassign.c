/* ElectLeaders (key 43), AlterPartitionReassignments (45) and
 * ListPartitionReassignments (46) for a
 * leaderless broker (issue 34).
 *
 * No partition has a leader to move or replicas to place: every broker serves
 * every partition from the shared object store, and the "leader" Metadata
 * names is a placement hint already at its preferred choice. So:
 * - ElectLeaders answers ELECTION_NOT_NEEDED for each partition named, as
 *   Kafka does when the preferred leader already leads (UNKNOWN_TOPIC_OR_PARTITION
 *   for those that do not exist); asked for all partitions, it answers none,
 *   as Kafka leaves out partitions whose election was not needed;
 * - ListPartitionReassignments answers that none is ongoing;
 * - AlterPartitionReassignments is refused per partition with
 *   INVALID_REPLICA_ASSIGNMENT, saying there is nothing to place.
 * As Kafka: ElectLeaders and AlterPartitionReassignments need CLUSTER ALTER,
 * ListPartitionReassignments
 * CLUSTER DESCRIBE (else CLUSTER_AUTHORIZATION_FAILED). Stateless. */
#include <string.h>

#include "kafka/handlers.h"
#include "kafka/msg.h"
#include "kafka/services.h"

void ls_kafka_handle_elect_leaders(ls_kreq_t *req)
{
    ls_kafka_services_t *b = req->svc;
    ls_arena_t *a = req->arena;
    const ls_kafka_ElectLeadersRequest *m = req->msg;
    ls_kafka_ElectLeadersResponse r;
    memset(&r, 0, sizeof r);
    bool allowed = ls_kreq_allowed(req, LS_ACL_OP_ALTER, LS_ACL_RES_CLUSTER, LS_ACL_CLUSTER_NAME);
    if (!allowed) r.ErrorCode = LS_KERR_CLUSTER_AUTHORIZATION_FAILED;
    int32_t n = m->NumTopicPartitions > 0 ? m->NumTopicPartitions : 0;
    r.ReplicaElectionResults = ls_kmsg_alloc(a, n, sizeof *r.ReplicaElectionResults);
    r.NumReplicaElectionResults = n;
    for (int32_t i = 0; i < n; i++) {
        const ls_kafka_ElectLeadersRequest_TopicPartitions *q = &m->TopicPartitions[i];
        ls_kafka_ElectLeadersResponse_ReplicaElectionResult *o = &r.ReplicaElectionResults[i];
        bool exact;
        const char *name = ls_arena_kstr(a, q->Topic, &exact);
        ls_stream_t *s = exact ? ls_catalog_lookup(b->catalog, LS_DEFAULT_NAMESPACE, name) : NULL;
        o->Topic = q->Topic;
        o->PartitionResult = ls_kmsg_alloc(a, q->NumPartitions, sizeof *o->PartitionResult);
        o->NumPartitionResult = q->NumPartitions;
        for (int32_t k = 0; k < q->NumPartitions; k++) {
            ls_kafka_ElectLeadersResponse_PartitionResult *p = &o->PartitionResult[k];
            int32_t idx = q->Partitions[k];
            p->PartitionId = idx;
            if (!allowed) {
                p->ErrorCode = LS_KERR_CLUSTER_AUTHORIZATION_FAILED;
                p->ErrorMessage = ls_kstr_null();
            } else if (!s || idx < 0 || idx >= s->partitions) {
                p->ErrorCode = LS_KERR_UNKNOWN_TOPIC_OR_PARTITION;
                p->ErrorMessage = ls_kstr_null();
            } else {
                p->ErrorCode = LS_KERR_ELECTION_NOT_NEEDED;
                p->ErrorMessage = ls_kstr_c("Leader election not needed: every broker serves "
                                            "every partition (leaderless)");
            }
        }
        ls_stream_release(s);
    }
    ls_kw_t w;
    ls_kreq_encode(req, &w, &r);
    ls_kreq_respond(req, &w);
}

void ls_kafka_handle_list_partition_reassignments(ls_kreq_t *req)
{
    ls_kafka_ListPartitionReassignmentsResponse r;
    memset(&r, 0, sizeof r);
    r.ErrorMessage = ls_kstr_null();
    if (!ls_kreq_allowed(req, LS_ACL_OP_DESCRIBE, LS_ACL_RES_CLUSTER, LS_ACL_CLUSTER_NAME)) {
        r.ErrorCode = LS_KERR_CLUSTER_AUTHORIZATION_FAILED;
        r.ErrorMessage = ls_kstr_c("Cluster authorization failed.");
    }
    ls_kw_t w;
    ls_kreq_encode(req, &w, &r);
    ls_kreq_respond(req, &w);
}

/* AlterPartitionReassignments (key 45): refused per partition with
 * INVALID_REPLICA_ASSIGNMENT and why; CLUSTER ALTER first, as Kafka. */
void ls_kafka_handle_alter_partition_reassignments(ls_kreq_t *req)
{
    ls_arena_t *a = req->arena;
    const ls_kafka_AlterPartitionReassignmentsRequest *m = req->msg;
    ls_kafka_AlterPartitionReassignmentsResponse r;
    memset(&r, 0, sizeof r);
    r.ErrorMessage = ls_kstr_null();
    r.AllowReplicationFactorChange = m->AllowReplicationFactorChange; /* v1: echoed, as Kafka */
    if (!ls_kreq_allowed(req, LS_ACL_OP_ALTER, LS_ACL_RES_CLUSTER, LS_ACL_CLUSTER_NAME)) {
        r.ErrorCode = LS_KERR_CLUSTER_AUTHORIZATION_FAILED;
        r.ErrorMessage = ls_kstr_c("Cluster authorization failed.");
    } else {
        r.Responses = ls_kmsg_alloc(a, m->NumTopics, sizeof *r.Responses);
        r.NumResponses = m->NumTopics;
        for (int32_t i = 0; i < m->NumTopics; i++) {
            const ls_kafka_AlterPartitionReassignmentsRequest_ReassignableTopic *q = &m->Topics[i];
            ls_kafka_AlterPartitionReassignmentsResponse_ReassignableTopicResponse *o =
                &r.Responses[i];
            o->Name = q->Name;
            o->Partitions = ls_kmsg_alloc(a, q->NumPartitions, sizeof *o->Partitions);
            o->NumPartitions = q->NumPartitions;
            for (int32_t k = 0; k < q->NumPartitions; k++) {
                o->Partitions[k].PartitionIndex = q->Partitions[k].PartitionIndex;
                o->Partitions[k].ErrorCode = LS_KERR_INVALID_REPLICA_ASSIGNMENT;
                o->Partitions[k].ErrorMessage =
                    ls_kstr_c("Replicas are not placed on brokers here: every broker serves "
                              "every partition from the shared object store, so there is "
                              "nothing to reassign");
            }
        }
    }
    ls_kw_t w;
    ls_kreq_encode(req, &w, &r);
    ls_kreq_respond(req, &w);
}
