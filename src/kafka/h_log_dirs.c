/* DescribeLogDirs (key 35) for a diskless broker (issue 34).
 *
 * A broker has no log directories: every partition lives in the object store,
 * which every broker shares. So each broker answers one virtual log dir named
 * by the object store's URL (any user:password part left out), holding every
 * partition asked for (all of them for a null topic list) with its retained
 * bytes from the log store's head (ls_logstore_info, in memory, so the answer
 * is built on the loop thread). The same bytes are answered by every broker:
 * they are the cluster's, not a broker's. OffsetLag is 0 and IsFutureKey false
 * (nothing ever moves between dirs); TotalBytes and UsableBytes are -1, Kafka's
 * "unknown", as an object store has no capacity to report; IsCordoned (v5)
 * false, as nothing can cordon it. As Kafka: CLUSTER
 * DESCRIBE is required, else CLUSTER_AUTHORIZATION_FAILED (v3+) and no dirs;
 * unknown topics and partitions are left out. */
#include <string.h>

#include "kafka/handlers.h"
#include "kafka/msg.h"
#include "kafka/services.h"

typedef ls_kafka_DescribeLogDirsResponse_DescribeLogDirsTopic ld_topic_t;

/* The object store URL without a "user[:password]@" part. */
static const char *log_dir_name(ls_arena_t *a, const char *url)
{
    const char *scheme = strstr(url, "://");
    if (!scheme) return url;
    const char *host = scheme + 3;
    const char *at = strchr(host, '@');
    const char *slash = strchr(host, '/');
    if (!at || (slash && slash < at)) return url;
    return ls_arena_printf(a, "%.*s%s", (int)(host - url), url, at + 1);
}

static void fill_topic(ls_kafka_services_t *b, ls_arena_t *a, ld_topic_t *t, const ls_stream_t *s,
                       const int32_t *parts, int32_t nparts)
{
    t->Name = ls_kstr_c(ls_arena_printf(a, "%s", s->name));
    int32_t n = parts ? nparts : s->partitions;
    t->Partitions = ls_kmsg_alloc(a, n, sizeof *t->Partitions);
    t->NumPartitions = 0;
    for (int32_t i = 0; i < n; i++) {
        int32_t p = parts ? parts[i] : i;
        if (p < 0 || p >= s->partitions) continue; /* not here: left out, as Kafka */
        ls_log_info_t info;
        ls_logstore_info(b->logs, ls_stream_log_id(s, p), &info);
        ls_kafka_DescribeLogDirsResponse_DescribeLogDirsPartition *o =
            &t->Partitions[t->NumPartitions++];
        o->PartitionIndex = p;
        o->PartitionSize = info.size_bytes;
    }
}

void ls_kafka_handle_describe_log_dirs(ls_kreq_t *req)
{
    ls_kafka_services_t *b = req->svc;
    ls_arena_t *a = req->arena;
    const ls_kafka_DescribeLogDirsRequest *m = req->msg;
    ls_kafka_DescribeLogDirsResponse r;
    memset(&r, 0, sizeof r);
    if (!ls_kreq_allowed(req, LS_ACL_OP_DESCRIBE, LS_ACL_RES_CLUSTER, LS_ACL_CLUSTER_NAME)) {
        r.ErrorCode = LS_KERR_CLUSTER_AUTHORIZATION_FAILED;
        goto out;
    }
    ls_kafka_DescribeLogDirsResponse_DescribeLogDirsResult *d = ls_arena_alloc(a, sizeof *d);
    memset(d, 0, sizeof *d);
    d->LogDir = ls_kstr_c(log_dir_name(a, b->cfg->object_store_url));
    d->TotalBytes = d->UsableBytes = -1;
    r.Results = d;
    r.NumResults = 1;
    if (m->NumTopics < 0) {
        int nall = 0;
        ls_stream_t **all = ls_catalog_list(b->catalog, LS_DEFAULT_NAMESPACE, &nall);
        d->Topics = ls_kmsg_alloc(a, nall, sizeof *d->Topics);
        for (int i = 0; i < nall; i++)
            fill_topic(b, a, &d->Topics[d->NumTopics++], all[i], NULL, 0);
        if (all) ls_stream_list_release(all, nall);
        goto out;
    }
    d->Topics = ls_kmsg_alloc(a, m->NumTopics, sizeof *d->Topics);
    for (int i = 0; i < m->NumTopics; i++) {
        bool exact;
        const char *name = ls_arena_kstr(a, m->Topics[i].Topic, &exact);
        ls_stream_t *s = exact ? ls_catalog_lookup(b->catalog, LS_DEFAULT_NAMESPACE, name) : NULL;
        if (!s) continue;
        fill_topic(b, a, &d->Topics[d->NumTopics++], s, m->Topics[i].Partitions,
                   m->Topics[i].NumPartitions);
        ls_stream_release(s);
    }
out:;
    ls_kw_t w;
    ls_kreq_encode(req, &w, &r);
    ls_kreq_respond(req, &w);
}

/* AlterReplicaLogDirs (key 34): the only log dir is the virtual one, which
 * every partition is already in; any path asked for is not a log dir of this
 * broker, so each partition answers LOG_DIR_NOT_FOUND as Kafka does for an
 * unknown dir (CLUSTER_AUTHORIZATION_FAILED without CLUSTER ALTER). */
void ls_kafka_handle_alter_replica_log_dirs(ls_kreq_t *req)
{
    ls_arena_t *a = req->arena;
    const ls_kafka_AlterReplicaLogDirsRequest *m = req->msg;
    ls_kafka_AlterReplicaLogDirsResponse r;
    memset(&r, 0, sizeof r);
    int16_t err = ls_kreq_allowed(req, LS_ACL_OP_ALTER, LS_ACL_RES_CLUSTER, LS_ACL_CLUSTER_NAME)
                      ? LS_KERR_LOG_DIR_NOT_FOUND
                      : LS_KERR_CLUSTER_AUTHORIZATION_FAILED;
    int32_t n = 0;
    for (int32_t i = 0; i < m->NumDirs; i++)
        n += m->Dirs[i].NumTopics;
    r.Results = ls_kmsg_alloc(a, n, sizeof *r.Results);
    for (int32_t i = 0; i < m->NumDirs; i++)
        for (int32_t k = 0; k < m->Dirs[i].NumTopics; k++) {
            const ls_kafka_AlterReplicaLogDirsRequest_AlterReplicaLogDirTopic *q =
                &m->Dirs[i].Topics[k];
            ls_kafka_AlterReplicaLogDirsResponse_AlterReplicaLogDirTopicResult *o =
                &r.Results[r.NumResults++];
            o->TopicName = q->Name;
            o->Partitions = ls_kmsg_alloc(a, q->NumPartitions, sizeof *o->Partitions);
            o->NumPartitions = q->NumPartitions;
            for (int32_t p = 0; p < q->NumPartitions; p++) {
                o->Partitions[p].PartitionIndex = q->Partitions[p];
                o->Partitions[p].ErrorCode = err;
            }
        }
    ls_kw_t w;
    ls_kreq_encode(req, &w, &r);
    ls_kreq_respond(req, &w);
}
