/* `lakestream transactions`: transaction administration for operators.
 *
 *   lakestream transactions [--bootstrap HOST:PORT] list [--state STATE]... [--older-than MS]
 *   lakestream transactions [--bootstrap HOST:PORT] describe TRANSACTIONAL_ID
 *   lakestream transactions [--bootstrap HOST:PORT] producers --topic T --partition P
 *   lakestream transactions [--bootstrap HOST:PORT] abort --topic T --partition P
 *                           --producer-id N
 *
 * Talks to a running broker over the Kafka protocol with the requests of
 * Kafka's kafka-transactions.sh: list asks every live broker
 * (ListTransactions answers for the ids a broker coordinates), describe asks
 * the id's coordinator (FindCoordinator key type 1), producers and abort ask
 * the bootstrap broker (any broker serves any partition). abort closes a
 * *hanging* transaction: one open on a partition (producers shows its first
 * offset) that its coordinator no longer runs; it reads the producer's epoch
 * with DescribeProducers and writes an abort marker with WriteTxnMarkers.
 * The broker refuses it while the coordinator still runs the transaction
 * (docs/OPERATIONS.md, "Hanging transactions"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "cli/cli.h"
#include "cli/cli_args.h"
#include "kafka/msg.h"

#define PROG "lakestream transactions"

/* A Kafka error for the user: Kafka's name, with what it means here where
 * that helps. */
static const char *kerr_name(int16_t e)
{
    const char *hint = NULL;
    switch (e) {
    case LS_KERR_NONE: return "none";
    case LS_KERR_COORDINATOR_NOT_AVAILABLE:
    case LS_KERR_NOT_COORDINATOR: hint = "retry"; break;
    case LS_KERR_INVALID_PRODUCER_EPOCH: hint = "the producer moved to a newer epoch"; break;
    case LS_KERR_INVALID_TXN_STATE:
        hint = "no transaction of that producer is open there, or its coordinator still runs "
               "it: see the broker log";
        break;
    case LS_KERR_CONCURRENT_TRANSACTIONS: hint = "the partition changed meanwhile: retry"; break;
    }
    static ls_admin_errbuf_t eb;
    static char buf[256];
    const char *name = ls_admin_error_name(e, &eb);
    if (!hint) return name;
    snprintf(buf, sizeof buf, "%s (%s)", name, hint);
    return buf;
}

static ls_kstr_t ks(const char *s) { return ls_kstr_c(s); }

static void print_time(int64_t ms)
{
    if (ms < 0) {
        printf("-");
        return;
    }
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    char buf[32];
    gmtime_r(&t, &tm);
    strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
    printf("%s.%03dZ", buf, (int)(ms % 1000));
}

/* ---------------------------------------------------------------- list */

static int cmd_list(const char *bootstrap, ls_kstr_t *states, int nstates, int64_t older_than)
{
    ls_cli_conn_t c = {.fd = -1};
    if (ls_cli_connect(&c, PROG, bootstrap) != 0) return 1;
    ls_kafka_MetadataRequest mq = {NULL, 0, false, false, false};
    ls_kafka_MetadataResponse mr;
    if (LS_CLI_CALL(&c, Metadata, METADATA, 9, &mq, &mr) != 0) {
        ls_cli_close(&c);
        return 1;
    }
    ls_kafka_ListTransactionsRequest q = {states, nstates, NULL, 0, older_than};
    int rc = 0;
    bool header = false;
    for (int32_t b = 0; b < mr.NumBrokers; b++) {
        char addr[300];
        snprintf(addr, sizeof addr, "%.*s:%d", mr.Brokers[b].Host.len, mr.Brokers[b].Host.ptr,
                 (int)mr.Brokers[b].Port);
        ls_cli_conn_t bc = {.fd = -1};
        ls_kafka_ListTransactionsResponse r;
        if (ls_cli_connect(&bc, PROG, addr) != 0 ||
            LS_CLI_CALL(&bc, ListTransactions, LIST_TRANSACTIONS, 1, &q, &r) != 0) {
            ls_cli_close(&bc);
            rc = 1;
            continue;
        }
        if (r.ErrorCode) {
            fprintf(stderr, PROG ": broker %d: %s\n", mr.Brokers[b].NodeId, kerr_name(r.ErrorCode));
            rc = 1;
        }
        for (int32_t i = 0; i < r.NumUnknownStateFilters && b == 0; i++) {
            fprintf(stderr, PROG ": unknown state '%.*s'\n", r.UnknownStateFilters[i].len,
                    r.UnknownStateFilters[i].ptr);
            rc = 1;
        }
        if (!header) {
            printf("%-40s %-20s %-16s %s\n", "TRANSACTIONAL-ID", "PRODUCER-ID", "STATE",
                   "COORDINATOR");
            header = true;
        }
        for (int32_t i = 0; i < r.NumTransactionStates; i++) {
            ls_kafka_ListTransactionsResponse_TransactionState *t = &r.TransactionStates[i];
            printf("%-40.*s %-20lld %-16.*s %d\n", t->TransactionalId.len, t->TransactionalId.ptr,
                   (long long)t->ProducerId, t->TransactionState.len, t->TransactionState.ptr,
                   mr.Brokers[b].NodeId);
        }
        ls_cli_close(&bc);
    }
    ls_cli_close(&c);
    return rc;
}

/* ------------------------------------------------------------ describe */

/* Connects to the coordinator of tid (FindCoordinator key type 1). */
static int connect_coordinator(ls_cli_conn_t *c, const char *bootstrap, const char *tid)
{
    if (ls_cli_connect(c, PROG, bootstrap) != 0) return -1;
    ls_kafka_FindCoordinatorRequest q = {.Key = ks(tid), .KeyType = 1};
    ls_kafka_FindCoordinatorResponse r;
    if (LS_CLI_CALL(c, FindCoordinator, FIND_COORDINATOR, 3, &q, &r) != 0) return -1;
    if (r.ErrorCode) {
        fprintf(stderr, PROG ": finding the coordinator of '%s': %s\n", tid,
                kerr_name(r.ErrorCode));
        return -1;
    }
    char addr[300];
    snprintf(addr, sizeof addr, "%.*s:%d", r.Host.len > 0 ? (int)r.Host.len : 0,
             r.Host.len > 0 ? r.Host.ptr : "", (int)r.Port);
    if (strcmp(addr, bootstrap) == 0) return 0;
    ls_cli_close(c);
    return ls_cli_connect(c, PROG, addr);
}

static int cmd_describe(ls_cli_conn_t *c, const char *tid)
{
    ls_kstr_t id = ks(tid);
    ls_kafka_DescribeTransactionsRequest q = {&id, 1};
    ls_kafka_DescribeTransactionsResponse r;
    if (LS_CLI_CALL(c, DescribeTransactions, DESCRIBE_TRANSACTIONS, 0, &q, &r) != 0 ||
        r.NumTransactionStates != 1)
        return 1;
    ls_kafka_DescribeTransactionsResponse_TransactionState *t = &r.TransactionStates[0];
    if (t->ErrorCode) {
        fprintf(stderr, PROG ": %s: %s\n", tid, kerr_name(t->ErrorCode));
        return t->ErrorCode == LS_KERR_TRANSACTIONAL_ID_NOT_FOUND ? 2 : 1;
    }
    printf("transactional id %s\n", tid);
    printf("  state          %.*s\n", t->TransactionState.len, t->TransactionState.ptr);
    printf("  producer       id %lld, epoch %d\n", (long long)t->ProducerId, (int)t->ProducerEpoch);
    printf("  timeout        %d ms\n", t->TransactionTimeoutMs);
    printf("  started        ");
    print_time(t->TransactionStartTimeMs);
    printf("\n  partitions    ");
    if (t->NumTopics == 0) printf(" -");
    for (int32_t i = 0; i < t->NumTopics; i++)
        for (int32_t j = 0; j < t->Topics[i].NumPartitions; j++)
            printf(" %.*s-%d", t->Topics[i].Topic.len, t->Topics[i].Topic.ptr,
                   t->Topics[i].Partitions[j]);
    printf("\n");
    return 0;
}

/* ----------------------------------------------------------- producers */

/* The active producers of topic-partition; NULL after printing why. */
static ls_kafka_DescribeProducersResponse_PartitionResponse *
describe_producers(ls_cli_conn_t *c, const char *topic, int32_t part)
{
    ls_kafka_DescribeProducersRequest_TopicRequest qt = {ks(topic), &part, 1};
    ls_kafka_DescribeProducersRequest q = {&qt, 1};
    ls_kafka_DescribeProducersResponse r;
    if (LS_CLI_CALL(c, DescribeProducers, DESCRIBE_PRODUCERS, 0, &q, &r) != 0 || r.NumTopics != 1 ||
        r.Topics[0].NumPartitions != 1) {
        fprintf(stderr, PROG ": no answer for %s-%d\n", topic, part);
        return NULL;
    }
    ls_kafka_DescribeProducersResponse_PartitionResponse *p = &r.Topics[0].Partitions[0];
    if (p->ErrorCode) {
        fprintf(stderr, PROG ": %s-%d: %s\n", topic, part, kerr_name(p->ErrorCode));
        return NULL;
    }
    return p;
}

static int cmd_producers(ls_cli_conn_t *c, const char *topic, int32_t part)
{
    ls_kafka_DescribeProducersResponse_PartitionResponse *p = describe_producers(c, topic, part);
    if (!p) return 1;
    printf("%-20s %6s %14s %20s  %s\n", "PRODUCER-ID", "EPOCH", "LAST-SEQUENCE", "OPEN-TXN-START",
           "LAST-TIMESTAMP");
    for (int32_t i = 0; i < p->NumActiveProducers; i++) {
        ls_kafka_DescribeProducersResponse_ProducerState *s = &p->ActiveProducers[i];
        char start[24] = "-";
        if (s->CurrentTxnStartOffset >= 0)
            snprintf(start, sizeof start, "%lld", (long long)s->CurrentTxnStartOffset);
        printf("%-20lld %6d %14d %20s  ", (long long)s->ProducerId, s->ProducerEpoch,
               s->LastSequence, start);
        print_time(s->LastTimestamp); /* of its last batch */
        printf("\n");
    }
    return 0;
}

/* --------------------------------------------------------------- abort */

static int cmd_abort(ls_cli_conn_t *c, const char *topic, int32_t part, int64_t pid)
{
    ls_kafka_DescribeProducersResponse_PartitionResponse *p = describe_producers(c, topic, part);
    if (!p) return 1;
    ls_kafka_DescribeProducersResponse_ProducerState *s = NULL;
    for (int32_t i = 0; i < p->NumActiveProducers && !s; i++)
        if (p->ActiveProducers[i].ProducerId == pid) s = &p->ActiveProducers[i];
    if (!s || s->CurrentTxnStartOffset < 0) {
        fprintf(stderr, PROG ": producer %lld has no open transaction on %s-%d\n", (long long)pid,
                topic, part);
        return 1;
    }
    ls_kafka_WriteTxnMarkersRequest_WritableTxnMarkerTopic mt = {ks(topic), &part, 1};
    ls_kafka_WriteTxnMarkersRequest_WritableTxnMarker m = {
        pid, (int16_t)s->ProducerEpoch, false, &mt, 1, s->CoordinatorEpoch};
    ls_kafka_WriteTxnMarkersRequest q = {&m, 1};
    ls_kafka_WriteTxnMarkersResponse r;
    if (LS_CLI_CALL(c, WriteTxnMarkers, WRITE_TXN_MARKERS, 1, &q, &r) != 0 || r.NumMarkers != 1 ||
        r.Markers[0].NumTopics != 1 || r.Markers[0].Topics[0].NumPartitions != 1)
        return 1;
    int16_t e = r.Markers[0].Topics[0].Partitions[0].ErrorCode;
    if (e) {
        fprintf(stderr, PROG ": aborting the transaction of producer %lld on %s-%d: %s\n",
                (long long)pid, topic, part, kerr_name(e));
        return 1;
    }
    printf("aborted the transaction of producer %lld on %s-%d (it began at offset %lld)\n",
           (long long)pid, topic, part, (long long)s->CurrentTxnStartOffset);
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: lakestream transactions [--bootstrap HOST:PORT] list [--state STATE]... "
            "[--older-than MS]\n"
            "       lakestream transactions [--bootstrap HOST:PORT] describe TRANSACTIONAL_ID\n"
            "       lakestream transactions [--bootstrap HOST:PORT] producers --topic T "
            "--partition P\n"
            "       lakestream transactions [--bootstrap HOST:PORT] abort --topic T --partition P "
            "--producer-id N\n"
            "Talks to a running broker (default 127.0.0.1:9092). abort closes a hanging "
            "transaction\n"
            "(open on the partition, no longer run by its coordinator); see docs/OPERATIONS.md.\n");
}

static bool parse_int(const char *s, int64_t min, int64_t *out)
{
    char *end;
    long long v = strtoll(s, &end, 10);
    if (!*s || *end || v < min) return false;
    *out = v;
    return true;
}

int ls_cli_transactions(int argc, char **argv)
{
    const char *bootstrap, *cmd;
    int rc;
    int i = ls_cli_command(argc, argv, usage, &bootstrap, &cmd, &rc);
    if (i < 0) return rc;
    const char *topic = NULL, *tid = NULL;
    int64_t part = -1, pid = -1, older = -1;
    ls_kstr_t *states = ls_calloc((size_t)argc + 1, sizeof *states);
    int nstates = 0;
    if (strcmp(cmd, "describe") == 0 && i < argc) tid = argv[i++];
    for (; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        bool ok = v != NULL;
        if (strcmp(a, "--topic") == 0 && ok)
            topic = v;
        else if (strcmp(a, "--partition") == 0 && ok)
            ok = parse_int(v, 0, &part) && part <= INT32_MAX;
        else if (strcmp(a, "--producer-id") == 0 && ok)
            ok = parse_int(v, 0, &pid);
        else if (strcmp(a, "--state") == 0 && ok)
            states[nstates++] = ks(v);
        else if (strcmp(a, "--older-than") == 0 && ok)
            ok = parse_int(v, 0, &older);
        else
            ok = false;
        if (!ok) {
            fprintf(stderr, PROG ": bad argument '%s'\n", a);
            ls_free(states);
            usage(stderr);
            return 2;
        }
        i++;
    }
    bool needs_part = strcmp(cmd, "producers") == 0 || strcmp(cmd, "abort") == 0;
    if ((strcmp(cmd, "describe") == 0 && !tid) || (needs_part && (!topic || part < 0)) ||
        (strcmp(cmd, "abort") == 0 && pid < 0)) {
        ls_free(states);
        usage(stderr);
        return 2;
    }
    ls_cli_conn_t c = {.fd = -1};
    if (strcmp(cmd, "list") == 0) {
        rc = cmd_list(bootstrap, states, nstates, older);
    } else if (strcmp(cmd, "describe") == 0) {
        rc = connect_coordinator(&c, bootstrap, tid) != 0 ? 1 : cmd_describe(&c, tid);
    } else if (needs_part) {
        if (ls_cli_connect(&c, PROG, bootstrap) != 0)
            rc = 1;
        else if (strcmp(cmd, "producers") == 0)
            rc = cmd_producers(&c, topic, (int32_t)part);
        else
            rc = cmd_abort(&c, topic, (int32_t)part, pid);
    } else {
        usage(stderr);
        rc = 2;
    }
    ls_cli_close(&c);
    ls_free(states);
    return rc;
}
