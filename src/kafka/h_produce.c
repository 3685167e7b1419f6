/* Produce (key 0), v3+ (RecordBatch v2 only).
 *
 * Each partition's records are validated in full (framing, magic 2, CRC32C,
 * decompression and record parsing) before anything is buffered; a bad
 * partition gets its own error and does not affect the others. Valid batches
 * are appended to log storage as they arrived (one copy, from the request
 * frame into the WAL buffer; no per-record work beyond validation).
 *
 * The response is sent when every appended batch is durable and committed,
 * or has failed (retriable KAFKA_STORAGE_ERROR). acks=0 requests get no
 * response at all; their batches are still appended.
 *
 * Schema validation (topic configs lakestream.value.schema.validation and
 * lakestream.key.schema.validation): every non-null value (key) of the
 * partition's records must be in the schema registry's wire format with a
 * registered schema id and bytes that decode (registry/framing.h), or the
 * partition's records are refused with INVALID_RECORD naming the first bad
 * record — nothing of them is written, as for a keyless record on a
 * compacted topic. It runs on the loop thread: a schema id is looked up in
 * the metadata store the first time this broker sees it, then cached; a
 * request stops at its first bad record, so a client sending unknown ids
 * costs one lookup per request.
 *
 * Idempotent batches (producerId >= 0) carry their sequence range to log
 * storage, which answers duplicates with the original offset and refuses
 * gaps (OUT_OF_ORDER_SEQUENCE_NUMBER) and stale epochs (INVALID_PRODUCER_EPOCH).
 *
 * Transactional batches (KIP-890 part 1, docs/ARCHITECTURE.md "Produce
 * check"): a request with a TransactionalId first reads the id's record
 * (one store read on a worker, per request); a transactional batch is
 * appended only when that record is Ongoing with the batch's producer pair
 * and lists the partition (else INVALID_TXN_STATE, INVALID_PRODUCER_EPOCH
 * or INVALID_PRODUCER_ID_MAPPING for the partition), and it carries the
 * transaction's number to log storage, whose commit refuses it if the
 * transaction ended on the log meanwhile (INVALID_TXN_STATE). A
 * transactional batch without a TransactionalId, and any control batch
 * (markers are written by the coordinator only), is INVALID_RECORD.
 *
 * Transaction version 2 (KIP-890 part 2): a Produce v12+ with a
 * TransactionalId also adds its partitions to the transaction, the client
 * sending no AddPartitionsToTxn (what Kafka's partition leader asks of the
 * coordinator with AddPartitionsToTxn v5, VerifyOnly false). The worker that
 * reads the record runs the coordinator's own add step over it
 * (ls_txn_run_add: compare-and-set on the record's revision, so it
 * serializes with EndTxn and with other brokers adding partitions) for the
 * partitions of transactional batches that the record does not list yet,
 * with the pair of the first such batch, then reads the record again for the
 * check above. The add begins the transaction when the record is Empty or
 * Complete*; a batch of an epoch an EndTxn v5 has moved past is fenced
 * there. Answers, as Kafka translates the coordinator's: PRODUCER_FENCED ->
 * INVALID_PRODUCER_EPOCH; CONCURRENT_TRANSACTIONS (the previous decision
 * still completing) and a store failure -> NOT_ENOUGH_REPLICAS, which
 * producers retry without a metadata refresh; a transaction over
 * LS_TXN_MAX_PARTICIPANTS -> TRANSACTION_ABORTABLE. Added partitions whose
 * records are then refused (a bad batch) only get a marker with nothing
 * before it, as in Kafka. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/compress.h"
#include "base/crc32c.h"
#include "base/diag.h"
#include "kafka/handlers.h"
#include "kafka/msg.h"
#include "kafka/names.h"
#include "kafka/kmetrics.h"
#include "kafka/kquota.h"
#include "records/records.h"
#include "kafka/services.h"
#include "stream/broker_config.h"
#include "txn/txn_store.h"

#define MAX_BATCHES_PER_PARTITION 256

/* Topic defaults from the broker (dynamic cluster-wide value, else static),
 * read once per request: a topic's own config overrides each. */
typedef struct produce_defaults {
    int64_t max_message_bytes;
    bool log_append_time;
    int64_t ts_before_max_ms, ts_after_max_ms;
} produce_defaults_t;

/* The transactional id's record as read for this request, and the
 * implicit add of transaction version 2 (file comment). */
typedef struct produce_txn {
    ls_status st; /* of the read: LS_OK, LS_ENOTFOUND (no such id) or the store's error */
    ls_txn_record_t rec;
    ls_txn_partition_t *join; /* arena: partitions to add (Produce v12+) */
    int njoin;
    int64_t join_pid; /* the pair of the first transactional batch */
    int16_t join_epoch;
    int16_t join_err;     /* Kafka code for the joined partitions when the add failed */
    const char *join_why; /* arena: its message */
    bool join_concurrent; /* the add met the previous decision still completing */
} produce_txn_t;

/* The add meeting the previous transaction's decision still being completed
 * (CONCURRENT_TRANSACTIONS: a client of transaction version 2 begins the
 * next transaction as soon as EndTxn answers, before the markers are
 * written) is retried here every JOIN_RETRY_MS for up to JOIN_RETRY_MAX_MS
 * before the client is told to retry: Kafka's partition leader does the same
 * (add.partitions.to.txn.retry.backoff.ms 20, ...backoff.max.ms 100), which
 * spares the client its retry.backoff.ms. */
#define JOIN_RETRY_MS 20
#define JOIN_RETRY_MAX_MS 100

typedef struct produce_ctx {
    ls_kreq_t *req;
    ls_kafka_ProduceResponse resp;
    int pending;
    produce_defaults_t def;
    const produce_txn_t *txn; /* NULL: the request has no TransactionalId */
} produce_ctx_t;

typedef struct part_append {
    produce_ctx_t *ctx; /* NULL: acks=0, nobody waits */
    ls_kafka_ProduceResponse_PartitionProduceResponse *pr;
    int batch; /* index of the batch within the partition */
    ls_kmetrics_topic_t m;
    uint32_t records, bytes; /* of the batch, counted once the log acknowledges it */
} part_append_t;

static int16_t append_error(ls_status st)
{
    switch (st) {
    case LS_OK: return LS_KERR_NONE;
    case LS_ENOTFOUND: return LS_KERR_UNKNOWN_TOPIC_OR_PARTITION;
    case LS_ERANGE: return LS_KERR_OUT_OF_ORDER_SEQUENCE_NUMBER;
    case LS_EFENCED: return LS_KERR_INVALID_PRODUCER_EPOCH;
    case LS_EINVAL: return LS_KERR_INVALID_TXN_STATE; /* the transaction ended on the log */
    default: return LS_KERR_KAFKA_STORAGE_ERROR;      /* retriable: the flush failed */
    }
}

static void produce_finish(produce_ctx_t *ctx)
{
    if (--ctx->pending > 0) return;
    ls_kreq_t *req = ctx->req;
    for (int t = 0; t < ctx->resp.NumResponses; t++)
        for (int p = 0; p < ctx->resp.Responses[t].NumPartitionResponses; p++) {
            int16_t *ec = &ctx->resp.Responses[t].PartitionResponses[p].ErrorCode;
            *ec = ls_kafka_error_for_version(req->api_key, req->api_version, *ec);
        }
    ctx->resp.ThrottleTimeMs = req->throttle_ms; /* the request's bytes, counted at dispatch */
    ls_kw_t w;
    ls_kreq_encode(req, &w, &ctx->resp);
    ls_free(ctx);
    ls_kreq_respond(req, &w);
}

static void on_appended(void *arg, ls_status st, int64_t base_offset, int64_t log_start)
{
    part_append_t *pa = arg;
    if (st == LS_OK) ls_kmetrics_produced(&pa->m, pa->records, pa->bytes);
    ls_kafka_ProduceResponse_PartitionProduceResponse *pr = pa->pr;
    if (st != LS_OK) {
        if (pr->ErrorCode == LS_KERR_NONE) {
            pr->ErrorCode = append_error(st);
            pr->BaseOffset = -1;
        }
    } else if (pa->batch == 0 && pr->ErrorCode == LS_KERR_NONE) {
        pr->BaseOffset = base_offset;
        pr->LogStartOffset = log_start;
    }
    produce_ctx_t *ctx = pa->ctx;
    ls_free(pa);
    produce_finish(ctx);
}

static void on_appended_acks0(void *arg, ls_status st, int64_t base_offset, int64_t log_start)
{
    part_append_t *pa = arg;
    if (st == LS_OK) ls_kmetrics_produced(&pa->m, pa->records, pa->bytes);
    ls_free(pa);
    if (st != LS_OK) LS_DEBUG("kafka", "acks=0 batch not appended: %s", ls_status_str(st));
}

static int16_t rb_error(ls_rb_result r)
{
    switch (r) {
    case LS_RB_OK: return LS_KERR_NONE;
    case LS_RB_INVALID: return LS_KERR_INVALID_RECORD;
    case LS_RB_BAD_MAGIC: return LS_KERR_UNSUPPORTED_FOR_MESSAGE_FORMAT;
    case LS_RB_TOO_LARGE: return LS_KERR_MESSAGE_TOO_LARGE;
    case LS_RB_CORRUPT:
    case LS_RB_BAD_CODEC: return LS_KERR_CORRUPT_MESSAGE;
    }
    return LS_KERR_CORRUPT_MESSAGE;
}

/* A numeric topic config (validated when it was set), or def. */
static int64_t stream_i64(const ls_stream_t *s, const char *key, int64_t def)
{
    const char *v = ls_stream_config_get(s, key);
    if (!v) return def;
    char *end;
    long long n = strtoll(v, &end, 10);
    return end != v && !*end ? n : def;
}

/* message.timestamp.type=LogAppendTime: the broker's time, as Kafka sets it
 * (LogValidator): the timestamp-type attribute bit and maxTimestamp of every
 * batch, CRC recomputed (it covers both); record deltas stay, consumers take
 * maxTimestamp for every record of such a batch. The batch bytes are the
 * request frame's own, written once before the append copies them. */
static void stamp_log_append_time(uint8_t *batch, ls_batch_info_t *bi, int64_t now)
{
    uint16_t attrs = (uint16_t)(ls_be16_get(batch + LS_RB_OFF_ATTRIBUTES) | 0x08);
    ls_be16_put(batch + LS_RB_OFF_ATTRIBUTES, attrs);
    ls_be64_put(batch + LS_RB_OFF_MAX_TIMESTAMP, (uint64_t)now);
    uint32_t crc = ls_crc32c(0, batch + LS_RB_OFF_ATTRIBUTES, bi->size - LS_RB_OFF_ATTRIBUTES);
    ls_be32_put(batch + LS_RB_OFF_CRC, crc);
    bi->attributes = (int16_t)attrs;
    bi->timestamp_log_append = true;
    bi->max_timestamp = now;
}

/* The codec a topic stores its batches in (compression.type, as Kafka's
 * LogValidator): false for 'producer' (batches kept as sent); else the codec
 * ('uncompressed' = none) and its level from compression.<codec>.level. */
static bool topic_codec(const ls_stream_t *s, int *codec, int *level)
{
    static const struct {
        const char *name;
        int codec;
        const char *level_key;
        int64_t level_def;
    } codecs[] = {
        {"uncompressed", LS_CODEC_NONE, NULL, 0},
        {"gzip", LS_CODEC_GZIP, "compression.gzip.level", -1},
        {"snappy", LS_CODEC_SNAPPY, NULL, 0},
        {"lz4", LS_CODEC_LZ4, "compression.lz4.level", 9},
        {"zstd", LS_CODEC_ZSTD, "compression.zstd.level", 3},
    };
    const char *v = ls_stream_config_get(s, "compression.type");
    if (!v) return false;
    for (size_t i = 0; i < sizeof codecs / sizeof codecs[0]; i++) {
        if (strcmp(v, codecs[i].name) != 0) continue;
        *codec = codecs[i].codec;
        int64_t lv =
            codecs[i].level_key ? stream_i64(s, codecs[i].level_key, codecs[i].level_def) : -1;
        /* gzip's -1 is zlib's default; the ranges were checked when the config was set */
        *level = lv == -1 && *codec == LS_CODEC_GZIP ? LS_COMPRESS_LEVEL_DEFAULT : (int)lv;
        if (!codecs[i].level_key) *level = LS_COMPRESS_LEVEL_DEFAULT;
        return true;
    }
    return false; /* 'producer' */
}

static produce_defaults_t produce_defaults(const ls_kafka_services_t *b)
{
    ls_catalog_t *c = b->catalog;
    const ls_config_t *cfg = b->cfg;
    return (produce_defaults_t){
        .max_message_bytes = ls_bcfg_effective(
            c, LS_BCFG_MESSAGE_MAX_BYTES, ls_bcfg_static(cfg, LS_BCFG_MESSAGE_MAX_BYTES), NULL),
        .log_append_time = ls_bcfg_effective(c, LS_BCFG_TIMESTAMP_TYPE,
                                             ls_bcfg_static(cfg, LS_BCFG_TIMESTAMP_TYPE),
                                             NULL) == LS_BCFG_TS_LOG_APPEND_TIME,
        .ts_before_max_ms =
            ls_bcfg_effective(c, LS_BCFG_TIMESTAMP_BEFORE_MAX_MS,
                              ls_bcfg_static(cfg, LS_BCFG_TIMESTAMP_BEFORE_MAX_MS), NULL),
        .ts_after_max_ms =
            ls_bcfg_effective(c, LS_BCFG_TIMESTAMP_AFTER_MAX_MS,
                              ls_bcfg_static(cfg, LS_BCFG_TIMESTAMP_AFTER_MAX_MS), NULL),
    };
}

static size_t max_batch_bytes(const produce_defaults_t *d, const ls_stream_t *s)
{
    const char *v = ls_stream_config_get(s, "max.message.bytes");
    long long n = v ? atoll(v) : 0;
    return n > 0 ? (size_t)n : (size_t)d->max_message_bytes;
}

/* Schema validation of one partition's records (file comment). */
typedef struct schema_scan {
    ls_kafka_services_t *svc;
    bool key, value;
    const char *topic;
    const ls_policy_t *pol; /* the subject name strategies */
    int32_t index;          /* of the record being checked, among the partition's records */
    ls_status st;           /* check_payload's */
    const char *what;
    char why[512];
} schema_scan_t;

static int schema_scan_record(void *arg, const ls_record_view_t *rec)
{
    schema_scan_t *sc = arg;
    if (sc->value && rec->value_len >= 0) {
        sc->st = sc->svc->check_payload(sc->svc->root, rec->value, (size_t)rec->value_len,
                                        sc->topic, false, sc->pol, sc->why, sizeof sc->why);
        sc->what = "value";
    }
    if (sc->st == LS_OK && sc->key && rec->key_len >= 0) {
        sc->st = sc->svc->check_payload(sc->svc->root, rec->key, (size_t)rec->key_len, sc->topic,
                                        true, sc->pol, sc->why, sizeof sc->why);
        sc->what = "key";
    }
    if (sc->st != LS_OK) return 1;
    sc->index++;
    return 0;
}

static bool stream_flag(const ls_stream_t *s, const char *key)
{
    const char *v = ls_stream_config_get(s, key);
    return v && strcasecmp(v, "true") == 0;
}

/* true when the records were refused (pr filled in). */
static bool schema_refused(ls_kreq_t *req, const ls_stream_t *s,
                           const ls_kafka_ProduceRequest_PartitionProduceData *pd,
                           const ls_batch_info_t *infos, int n,
                           ls_kafka_ProduceResponse_PartitionProduceResponse *pr)
{
    schema_scan_t sc = {.svc = req->svc,
                        .key = stream_flag(s, LS_KAFKA_KEY_VALIDATION_KEY),
                        .value = stream_flag(s, LS_KAFKA_VALUE_VALIDATION_KEY)};
    if (!sc.key && !sc.value) return false;
    /* The subject name strategies are the table policy's (a stored value
     * that no longer parses resolves to the default and is logged there). */
    ls_policy_t pol;
    ls_namespace_t *ns = NULL;
    char perr[256];
    (void)ls_policy_for_stream(req->svc->catalog, s, req->svc->table_defaults,
                               req->svc->ntable_defaults, &pol, &ns, perr, sizeof perr);
    sc.topic = s->name;
    sc.pol = &pol;
    for (int i = 0; i < n && sc.st == LS_OK; i++)
        ls_records_foreach(pd->Records.ptr + infos[i].pos, infos[i].size, LS_RB_MAX_DECOMPRESSED,
                           schema_scan_record, &sc);
    ls_namespace_release(ns);
    if (sc.st == LS_OK) return false;
    char *msg = ls_arena_printf(req->arena, "record %d of %s-%d: its %s %s (%s)", (int)sc.index,
                                s->name, (int)pd->Index, sc.what, sc.why,
                                sc.what[0] == 'k' ? LS_KAFKA_KEY_VALIDATION_KEY
                                                  : LS_KAFKA_VALUE_VALIDATION_KEY);
    pr->ErrorMessage = ls_kstr_c(msg);
    if (sc.st != LS_EINVAL) {
        pr->ErrorCode = LS_KERR_KAFKA_STORAGE_ERROR; /* retriable: the registry's store */
        LS_WARN_RL("kafka", "produce to %s-%d: schema validation could not look up a schema: %s",
                   s->name, (int)pd->Index, sc.why);
        return true;
    }
    pr->ErrorCode = LS_KERR_INVALID_RECORD;
    pr->NumRecordErrors = 1;
    pr->RecordErrors = ls_arena_alloc(req->arena, sizeof *pr->RecordErrors);
    pr->RecordErrors[0].BatchIndex = sc.index;
    pr->RecordErrors[0].BatchIndexErrorMessage = ls_kstr_c(msg);
    LS_INFO("kafka", "produce to %s-%d refused (client %s): %s", s->name, (int)pd->Index,
            ls_kafka_printable(req->arena, req->client_id), msg);
    return true;
}

/* The produce check of a transactional batch (file comment): true when the
 * partition is refused (pr filled in), else *seq is its transaction. */
static bool txn_refused(ls_kreq_t *req, const produce_txn_t *txn, const ls_stream_t *s,
                        int32_t partition, const ls_batch_info_t *bi, int64_t *seq,
                        ls_kafka_ProduceResponse_PartitionProduceResponse *pr)
{
    if (txn->st != LS_OK && txn->st != LS_ENOTFOUND) {
        pr->ErrorCode = LS_KERR_KAFKA_STORAGE_ERROR; /* retriable */
        LS_WARN_RL("kafka", "produce to %s-%d: reading the transaction record failed: %s", s->name,
                   (int)partition, ls_status_str(txn->st));
        return true;
    }
    ls_txn_err e = ls_txn_check_produce(txn->st == LS_OK ? &txn->rec : NULL, bi->producer_id,
                                        bi->producer_epoch, s->stream_no, partition, seq);
    if (e == LS_TXERR_NONE) return false;
    if (txn->join_err != LS_KERR_NONE)
        for (int i = 0; i < txn->njoin; i++)
            if (txn->join[i].stream_no == s->stream_no && txn->join[i].partition == partition) {
                pr->ErrorCode = txn->join_err;
                pr->ErrorMessage = ls_kstr_c(ls_arena_printf(
                    req->arena, "adding %s-%d to the transaction of producer %lld epoch %d: %s",
                    s->name, (int)partition, (long long)bi->producer_id, (int)bi->producer_epoch,
                    txn->join_why));
                LS_INFO("kafka", "%s", pr->ErrorMessage.ptr);
                return true;
            }
    pr->ErrorCode = ls_kafka_txn_error(e, false);
    pr->ErrorMessage = ls_kstr_c(ls_arena_printf(
        req->arena, "transactional produce to %s-%d by producer %lld epoch %d: %s", s->name,
        (int)partition, (long long)bi->producer_id, (int)bi->producer_epoch,
        e == LS_TXERR_INVALID_TXN_STATE ? "the partition is not in an ongoing transaction"
                                        : ls_txn_err_name(e)));
    LS_INFO("kafka", "%s", pr->ErrorMessage.ptr);
    return true;
}

/* Validates and appends one partition. */
static void produce_partition(produce_ctx_t *ctx, ls_stream_t *s,
                              const ls_kafka_ProduceRequest_PartitionProduceData *pd,
                              ls_kafka_ProduceResponse_PartitionProduceResponse *pr, bool acks0)
{
    ls_kreq_t *req = ctx->req;
    ls_kafka_services_t *b = req->svc;
    pr->Index = pd->Index;
    pr->BaseOffset = -1;
    pr->LogAppendTimeMs = -1;
    pr->LogStartOffset = -1;
    pr->ErrorMessage = ls_kstr_null();
    if (!s || pd->Index < 0 || pd->Index >= s->partitions) {
        pr->ErrorCode = LS_KERR_UNKNOWN_TOPIC_OR_PARTITION;
        return;
    }
    if (pd->Records.len <= 0) {
        pr->ErrorCode = LS_KERR_INVALID_RECORD;
        pr->ErrorMessage = ls_kstr_c("empty record set");
        return;
    }
    ls_batch_info_t infos[MAX_BATCHES_PER_PARTITION];
    int n = 0;
    char why[256] = "";
    ls_rb_result rr =
        ls_records_validate(pd->Records.ptr, (size_t)pd->Records.len, max_batch_bytes(&ctx->def, s),
                            infos, MAX_BATCHES_PER_PARTITION, &n, why, sizeof why);
    for (int i = 0; rr == LS_RB_OK && i < n; i++) {
        if (infos[i].control) {
            rr = LS_RB_INVALID;
            snprintf(why, sizeof why, "batch %d: control batches are written by the broker only",
                     i);
        } else if (infos[i].transactional && !ctx->txn) {
            rr = LS_RB_INVALID;
            snprintf(why, sizeof why,
                     "batch %d is transactional but the request has no TransactionalId", i);
        }
    }
    if (rr == LS_RB_OK && ls_stream_cleanup_policy(s).compact) {
        /* Kafka (LogValidator): a compacted topic refuses a record without a
         * key, and with it the whole request for this partition; RecordErrors
         * (v8+) name the record by its index among the partition's records */
        int32_t before = 0;
        for (int i = 0; i < n; before += infos[i].record_count, i++) {
            if (infos[i].first_null_key < 0) continue;
            int32_t idx = before + infos[i].first_null_key;
            char *msg = ls_arena_printf(req->arena,
                                        "Compacted topic cannot accept message without key in "
                                        "topic partition %s-%d",
                                        s->name, (int)pd->Index);
            pr->ErrorCode = LS_KERR_INVALID_RECORD;
            pr->ErrorMessage = ls_kstr_c(msg);
            pr->NumRecordErrors = 1;
            pr->RecordErrors = ls_arena_alloc(req->arena, sizeof *pr->RecordErrors);
            pr->RecordErrors[0].BatchIndex = idx;
            pr->RecordErrors[0].BatchIndexErrorMessage = ls_kstr_c(msg);
            LS_INFO("kafka",
                    "produce to %s-%d refused: record %d has no key (cleanup.policy "
                    "compact)",
                    s->name, (int)pd->Index, (int)idx);
            return;
        }
    }
    if (rr != LS_RB_OK) {
        pr->ErrorCode = rb_error(rr);
        size_t wl = strlen(why);
        char *msg = ls_arena_alloc(req->arena, wl + 1);
        memcpy(msg, why, wl + 1);
        pr->ErrorMessage = ls_kstr_c(msg);
        LS_INFO("kafka", "produce to %s-%d refused (client %s): %s", s->name, pd->Index,
                ls_kafka_printable(req->arena, req->client_id), why);
        return;
    }
    if (schema_refused(req, s, pd, infos, n, pr)) return;
    /* timestamps: stamped by the broker, or bounded around its clock */
    int64_t now = ls_clock_wall_ms();
    const char *tstype = ls_stream_config_get(s, "message.timestamp.type");
    if (tstype ? strcmp(tstype, "LogAppendTime") == 0 : ctx->def.log_append_time) {
        for (int i = 0; i < n; i++)
            stamp_log_append_time((uint8_t *)pd->Records.ptr + infos[i].pos, &infos[i], now);
        pr->LogAppendTimeMs = now;
    } else {
        int64_t after = stream_i64(s, "message.timestamp.after.max.ms", ctx->def.ts_after_max_ms);
        int64_t before =
            stream_i64(s, "message.timestamp.before.max.ms", ctx->def.ts_before_max_ms);
        int64_t hi = after > INT64_MAX - now ? INT64_MAX : now + after;
        int64_t lo = before > now ? INT64_MIN : now - before;
        for (int i = 0; i < n; i++) {
            bool late = infos[i].min_record_ts<lo, early = infos[i].max_record_ts> hi;
            if (!late && !early) continue;
            int64_t bad = early ? infos[i].max_record_ts : infos[i].min_record_ts;
            pr->ErrorCode = LS_KERR_INVALID_TIMESTAMP;
            pr->ErrorMessage = ls_kstr_c(ls_arena_printf(
                req->arena,
                "Timestamp %lld of a record in batch %d is out of range: it must be within [%lld, "
                "%lld] (message.timestamp.before.max.ms / message.timestamp.after.max.ms)",
                (long long)bad, i, (long long)lo, (long long)hi));
            LS_INFO("kafka", "produce to %s-%d refused: record timestamp %lld outside [%lld, %lld]",
                    s->name, (int)pd->Index, (long long)bad, (long long)lo, (long long)hi);
            return;
        }
    }
    /* compression.type naming a codec: batches in another codec are stored
     * recompressed (Kafka's LogValidator; header fields stay, the CRC is new)
     * and must still fit max.message.bytes afterwards */
    const uint8_t *data[MAX_BATCHES_PER_PARTITION];
    size_t size[MAX_BATCHES_PER_PARTITION];
    int codec, level;
    bool recompress = topic_codec(s, &codec, &level);
    for (int i = 0; i < n; i++) {
        data[i] = pd->Records.ptr + infos[i].pos;
        size[i] = infos[i].size;
        if (!recompress || infos[i].codec == codec) continue;
        ls_buf_t nb;
        ls_buf_init(&nb);
        size_t max = max_batch_bytes(&ctx->def, s);
        rr = ls_records_recompress(data[i], &infos[i], max, codec, level, &nb, why, sizeof why);
        if (rr == LS_RB_OK && nb.len > max) {
            rr = LS_RB_TOO_LARGE;
            snprintf(why, sizeof why,
                     "batch %d is %zu bytes once compressed with %s (compression.type), over "
                     "max.message.bytes %zu",
                     i, nb.len, ls_codec_name(codec), max);
        }
        if (rr != LS_RB_OK) {
            ls_buf_free(&nb);
            pr->ErrorCode = rb_error(rr);
            pr->ErrorMessage = ls_kstr_c(ls_arena_printf(req->arena, "%s", why));
            LS_INFO("kafka", "produce to %s-%d refused: %s", s->name, (int)pd->Index, why);
            return;
        }
        uint8_t *copy = ls_arena_alloc(req->arena, nb.len);
        memcpy(copy, nb.data, nb.len);
        data[i] = copy;
        size[i] = nb.len;
        ls_buf_free(&nb);
    }
    int64_t txn_seq[MAX_BATCHES_PER_PARTITION] = {0};
    for (int i = 0; i < n; i++)
        if (infos[i].transactional &&
            txn_refused(req, ctx->txn, s, pd->Index, &infos[i], &txn_seq[i], pr))
            return;
    int64_t log_id = ls_stream_log_id(s, pd->Index);
    ls_kmetrics_topic_t m = ls_kmetrics_topic(s->name);
    for (int i = 0; i < n; i++) {
        const ls_batch_info_t *bi = &infos[i];
        ls_append_t a = {
            .log_id = log_id,
            .data = data[i],
            .len = size[i],
            .offset_count = bi->last_offset_delta + 1,
            .max_timestamp = bi->max_timestamp,
            .producer = {.producer_id = bi->producer_id,
                         .producer_epoch = bi->producer_epoch,
                         .base_sequence = bi->base_sequence,
                         .last_sequence =
                             (int32_t)(((int64_t)bi->base_sequence + bi->last_offset_delta) %
                                       ((int64_t)INT32_MAX + 1))},
        };
        if (bi->producer_id < 0) a.producer.producer_id = -1;
        a.txn_seq = txn_seq[i];
        part_append_t *pa = LS_NEW(part_append_t);
        pa->m = m;
        pa->records = (uint32_t)bi->record_count;
        pa->bytes = (uint32_t)bi->size;
        if (acks0) {
            ls_logstore_append(b->logs, &a, on_appended_acks0, pa);
            continue;
        }
        pa->ctx = ctx;
        pa->pr = pr;
        pa->batch = i;
        ctx->pending++;
        ls_logstore_append(b->logs, &a, on_appended, pa);
    }
}

static ls_stream_t *lookup_topic(ls_kafka_services_t *b, const char *name)
{
    return name ? ls_catalog_lookup(b->catalog, LS_DEFAULT_NAMESPACE, name) : NULL;
}

/* A produce request with its topics resolved once: names[t] is TopicData[t]'s
 * name (NULL when it is not a valid topic name: INVALID_TOPIC_EXCEPTION),
 * streams[t] its kept stream, or NULL when unknown. */
typedef struct produce_job {
    ls_kreq_t *req;
    ls_kafka_ProduceRequest m;
    char **names;          /* arena */
    ls_stream_t **streams; /* arena */
    char **refused;        /* arena, NULL until set: why auto-creating topic t was refused */
    char *tid;             /* arena; NULL without a TransactionalId */
    bool *denied;          /* arena: topic t may not be written by the principal */
    bool *creatable;       /* arena: topic t may be auto-created by the principal */
    bool tid_denied;       /* the principal may not WRITE the transactional id */
    produce_txn_t txn;     /* read when tid is set */
    int64_t join_start_ms; /* monotonic: the first add attempt */
} produce_job_t;

static void produce_process(produce_job_t *job);

/* Runs produce_process in the request's append turn (conn.c "Append order":
 * a connection's requests append in the order they were sent, whichever
 * waited on a worker). */
static void produce_turn(void *arg)
{
    produce_job_t *job = arg;
    /* produce_process answers at once when every partition is refused, and
     * that frees the request's arena, job included: keep the record here */
    bool has_rec = job->tid && job->txn.st == LS_OK;
    produce_txn_t txn = job->txn;
    produce_process(job);
    if (has_rec) ls_txn_record_free(&txn.rec);
}

static void produce_in_turn(produce_job_t *job) { ls_kreq_turn_run(job->req, produce_turn, job); }

/* Worker thread: create the missing topics (as Kafka's auto.create.topics). */
static void autocreate_work(void *arg)
{
    produce_job_t *job = arg;
    ls_kafka_services_t *b = job->req->svc;
    for (int t = 0; t < job->m.NumTopicData; t++) {
        const char *name = job->names[t];
        if (job->streams[t] || !name || job->denied[t] || !job->creatable[t]) continue;
        char err[256];
        ls_status st = ls_catalog_create(b->catalog, LS_DEFAULT_NAMESPACE, name,
                                         b->cfg->num_partitions, NULL, 0, 0, NULL, err, sizeof err);
        if (st == LS_OK)
            LS_INFO("kafka", "auto-created topic %s with %d partitions on produce", name,
                    b->cfg->num_partitions);
        else if (st != LS_EEXISTS)
            LS_WARN("kafka", "auto-creating topic %s failed: %s", name, err);
        if (st == LS_ELIMIT) { /* the producer is told why (POLICY_VIOLATION) */
            if (!job->refused)
                job->refused =
                    ls_arena_alloc(job->req->arena, sizeof(char *) * (size_t)job->m.NumTopicData);
            job->refused[t] = ls_arena_printf(job->req->arena, "%s", err);
        }
    }
}

static void autocreate_after(void *arg)
{
    produce_job_t *job = arg;
    for (int t = 0; t < job->m.NumTopicData; t++)
        if (!job->streams[t] && !job->denied[t])
            job->streams[t] = lookup_topic(job->req->svc, job->names[t]);
    produce_in_turn(job);
}

/* Loop: the partitions a Produce v12+ adds to its transaction (file
 * comment): those whose first batch is transactional, all under the pair of
 * the first one (a batch of another pair is refused by the check). */
static void join_collect(produce_job_t *job)
{
    ls_kreq_t *req = job->req;
    produce_txn_t *tx = &job->txn;
    int total = 0;
    for (int t = 0; t < job->m.NumTopicData; t++)
        total += job->m.TopicData[t].NumPartitionData;
    tx->join = ls_arena_alloc(req->arena, sizeof *tx->join * (size_t)(total > 0 ? total : 1));
    for (int t = 0; t < job->m.NumTopicData; t++) {
        const ls_stream_t *s = job->streams[t];
        const ls_kafka_ProduceRequest_TopicProduceData *td = &job->m.TopicData[t];
        for (int p = 0; s && p < td->NumPartitionData; p++) {
            const ls_kafka_ProduceRequest_PartitionProduceData *pd = &td->PartitionData[p];
            if (pd->Index < 0 || pd->Index >= s->partitions || pd->Records.len < LS_RB_HEADER_SIZE)
                continue;
            const uint8_t *b = (const uint8_t *)pd->Records.ptr;
            uint16_t attrs = ls_be16_get(b + LS_RB_OFF_ATTRIBUTES);
            if (b[LS_RB_OFF_MAGIC] != 2 || !(attrs & 0x10) || (attrs & 0x20)) continue;
            int64_t pid = (int64_t)ls_be64_get(b + LS_RB_OFF_PRODUCER_ID);
            int16_t epoch = (int16_t)ls_be16_get(b + LS_RB_OFF_PRODUCER_EPOCH);
            if (tx->njoin == 0) {
                tx->join_pid = pid;
                tx->join_epoch = epoch;
            } else if (pid != tx->join_pid || epoch != tx->join_epoch) {
                continue;
            }
            tx->join[tx->njoin++] = (ls_txn_partition_t){
                .topic = job->names[t], .stream_no = s->stream_no, .partition = pd->Index};
        }
    }
}

/* Worker: does the record already hold every partition to join? */
static bool join_needed(const produce_txn_t *tx)
{
    if (tx->njoin == 0) return false;
    if (tx->st != LS_OK) return true;
    const ls_txn_record_t *r = &tx->rec;
    if (r->state != LS_TXN_ONGOING || r->producer_id != tx->join_pid ||
        r->producer_epoch != tx->join_epoch)
        return true;
    for (int i = 0; i < tx->njoin; i++)
        if (!ls_txn_has_partition(r, tx->join[i].stream_no, tx->join[i].partition)) return true;
    return false;
}

/* Worker: the coordinator's add step for the partitions to join; on
 * success the record is read again for the check. */
static void join_run(produce_job_t *job)
{
    produce_txn_t *tx = &job->txn;
    ls_txn_store_t *txns = job->req->svc->txns;
    ls_txn_result_t res;
    ls_status st = ls_txn_run_add(txns, job->tid, tx->join_pid, tx->join_epoch, tx->join, tx->njoin,
                                  NULL, 0, &res);
    if (st == LS_OK && res.err == LS_TXERR_NONE) {
        if (tx->st == LS_OK) ls_txn_record_free(&tx->rec);
        int64_t rev;
        tx->st = ls_txn_load(txns, job->tid, &tx->rec, &rev);
        return;
    }
    if (st != LS_OK) {
        tx->join_err = LS_KERR_NOT_ENOUGH_REPLICAS; /* retriable, as Kafka answers */
        tx->join_why =
            ls_arena_printf(job->req->arena, "the metadata store failed (%s)", ls_status_str(st));
        return;
    }
    switch (res.err) {
    case LS_TXERR_CONCURRENT_TRANSACTIONS:
        tx->join_err = LS_KERR_NOT_ENOUGH_REPLICAS;
        tx->join_concurrent = true;
        break;
    case LS_TXERR_TOO_MANY_PARTICIPANTS: tx->join_err = LS_KERR_TRANSACTION_ABORTABLE; break;
    default: tx->join_err = ls_kafka_txn_error(res.err, false); break;
    }
    tx->join_why = res.err == LS_TXERR_TOO_MANY_PARTICIPANTS
                       ? ls_arena_printf(job->req->arena,
                                         "a transaction may hold at most %d partitions and groups",
                                         LS_TXN_MAX_PARTICIPANTS)
                       : ls_txn_err_name(res.err);
}

/* Worker thread: the transactional id's record, for the produce check
 * (with the implicit add of Produce v12+ first). */
static void txn_read_work(void *arg)
{
    produce_job_t *job = arg;
    int64_t rev;
    job->txn.st = ls_txn_load(job->req->svc->txns, job->tid, &job->txn.rec, &rev);
    if ((job->txn.st == LS_OK || job->txn.st == LS_ENOTFOUND) && join_needed(&job->txn))
        join_run(job);
}

static void txn_read_after(void *arg);

static void join_timer_closed(uv_handle_t *h) { ls_free(h); }

static void join_retry(uv_timer_t *t)
{
    produce_job_t *job = t->data;
    uv_close((uv_handle_t *)t, join_timer_closed);
    ls_ksvc_offload(job->req->svc, txn_read_work, txn_read_after, job);
}

static void txn_read_after(void *arg)
{
    produce_job_t *job = arg;
    produce_txn_t *tx = &job->txn;
    if (tx->join_concurrent && ls_clock_mono_ms() - job->join_start_ms < JOIN_RETRY_MAX_MS) {
        if (tx->st == LS_OK) ls_txn_record_free(&tx->rec);
        tx->st = LS_OK;
        tx->join_err = LS_KERR_NONE;
        tx->join_why = NULL;
        tx->join_concurrent = false;
        uv_timer_t *t = LS_NEW(uv_timer_t);
        uv_timer_init(job->req->svc->loop, t);
        t->data = job;
        uv_timer_start(t, join_retry, JOIN_RETRY_MS, 0);
        return;
    }
    produce_in_turn(job);
}

void ls_kafka_handle_produce(ls_kreq_t *req)
{
    produce_job_t *job = ls_arena_alloc(req->arena, sizeof *job);
    job->req = req;
    job->m = *(const ls_kafka_ProduceRequest *)req->msg;
    ls_kafka_services_t *b = req->svc;
    /* producer_byte_rate counts the request's size, as Kafka's */
    ls_kreq_quota_record(req, LS_QUOTA_PRODUCER_BYTE_RATE, (double)req->frame_len);
    ls_kreq_turn_take(req);
    int n = job->m.NumTopicData;
    job->streams = ls_arena_alloc(req->arena, sizeof(ls_stream_t *) * (size_t)(n > 0 ? n : 1));
    job->names = ls_arena_alloc(req->arena, sizeof(char *) * (size_t)(n > 0 ? n : 1));
    job->denied = ls_arena_alloc(req->arena, sizeof(bool) * (size_t)(n > 0 ? n : 1));
    job->creatable = ls_arena_alloc(req->arena, sizeof(bool) * (size_t)(n > 0 ? n : 1));
    bool missing = false;
    /* as Kafka: WRITE on each topic; creating a missing one needs CREATE on
     * the cluster or the topic (what Metadata's auto-creation needs) */
    bool may_create_all =
        ls_kreq_allowed_quiet(req, LS_ACL_OP_CREATE, LS_ACL_RES_CLUSTER, LS_ACL_CLUSTER_NAME);
    for (int t = 0; t < n; t++) {
        job->names[t] = ls_kafka_topic_name(req->arena, job->m.TopicData[t].Name);
        job->denied[t] = job->names[t] &&
                         !ls_kreq_allowed(req, LS_ACL_OP_WRITE, LS_ACL_RES_TOPIC, job->names[t]);
        job->streams[t] = job->denied[t] ? NULL : lookup_topic(b, job->names[t]);
        if (job->names[t] && !job->denied[t] && !job->streams[t] && !may_create_all &&
            !ls_kreq_allowed(req, LS_ACL_OP_CREATE, LS_ACL_RES_TOPIC, job->names[t]))
            continue; /* UNKNOWN_TOPIC_OR_PARTITION */
        job->creatable[t] = true;
        missing |= job->names[t] && !job->denied[t] && !job->streams[t];
    }
    if (job->m.TransactionalId.len >= 0) {
        /* no auto-creation: a transaction's partitions were added to it, so
         * they exist */
        bool ok;
        job->tid = ls_kafka_id_name(req->arena, job->m.TransactionalId, &ok);
        if (!job->tid || !ok || !*job->tid) job->tid = ls_arena_printf(req->arena, "%s", "");
        job->tid_denied =
            !ls_kreq_allowed(req, LS_ACL_OP_WRITE, LS_ACL_RES_TRANSACTIONAL_ID, job->tid);
        if (job->tid_denied) { /* every partition answers the denial; nothing joins */
            job->txn.st = LS_ENOTFOUND;
            produce_in_turn(job);
            return;
        } else if (req->api_version >= 12) { /* transaction version 2 */
            join_collect(job);
            job->join_start_ms = ls_clock_mono_ms();
        }
        ls_ksvc_offload(b, txn_read_work, txn_read_after, job);
        return;
    }
    if (missing && b->cfg->auto_create_topics_enable) {
        ls_ksvc_offload(b, autocreate_work, autocreate_after, job);
        return;
    }
    produce_in_turn(job);
}

static void produce_process(produce_job_t *job)
{
    ls_kreq_t *req = job->req;
    const ls_kafka_ProduceRequest m = job->m;
    bool acks0 = m.Acks == 0;
    produce_ctx_t *ctx = LS_NEW(produce_ctx_t);
    ctx->req = req;
    ctx->pending = 1; /* released at the end of this function */
    ctx->def = produce_defaults(req->svc);
    ctx->txn = job->tid ? &job->txn : NULL;
    ctx->resp.NumResponses = m.NumTopicData;
    ctx->resp.Responses =
        ls_arena_alloc(req->arena, sizeof(*ctx->resp.Responses) *
                                       (size_t)(m.NumTopicData > 0 ? m.NumTopicData : 1));
    int16_t all_error = LS_KERR_NONE;
    if (m.Acks != 0 && m.Acks != 1 && m.Acks != -1) all_error = LS_KERR_INVALID_REQUIRED_ACKS;
    if (job->tid_denied) all_error = LS_KERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
    for (int t = 0; t < m.NumTopicData; t++) {
        const ls_kafka_ProduceRequest_TopicProduceData *td = &m.TopicData[t];
        ls_kafka_ProduceResponse_TopicProduceResponse *tr = &ctx->resp.Responses[t];
        tr->Name = td->Name;
        tr->NumPartitionResponses = td->NumPartitionData;
        tr->PartitionResponses = ls_arena_alloc(
            req->arena, sizeof(*tr->PartitionResponses) *
                            (size_t)(td->NumPartitionData > 0 ? td->NumPartitionData : 1));
        ls_stream_t *s = job->streams[t];
        int16_t topic_error = all_error;
        const char *why = NULL;
        if (topic_error == LS_KERR_NONE && job->denied[t]) {
            topic_error = LS_KERR_TOPIC_AUTHORIZATION_FAILED;
        } else if (topic_error == LS_KERR_NONE && !job->names[t]) {
            topic_error = LS_KERR_INVALID_TOPIC_EXCEPTION;
            LS_INFO("kafka", "produce to an invalid topic name %s refused",
                    ls_kafka_printable(req->arena, td->Name));
        } else if (topic_error == LS_KERR_NONE && !s && job->refused && job->refused[t]) {
            topic_error = LS_KERR_POLICY_VIOLATION;
            why = job->refused[t];
        }
        for (int p = 0; p < td->NumPartitionData; p++) {
            ls_kafka_ProduceResponse_PartitionProduceResponse *pr = &tr->PartitionResponses[p];
            if (topic_error != LS_KERR_NONE) {
                pr->Index = td->PartitionData[p].Index;
                pr->ErrorCode = topic_error;
                pr->BaseOffset = -1;
                pr->LogAppendTimeMs = -1;
                pr->LogStartOffset = -1;
                pr->ErrorMessage = why ? ls_kstr_c(why) : ls_kstr_null();
                continue;
            }
            produce_partition(ctx, s, &td->PartitionData[p], pr, acks0);
        }
        if (s) ls_stream_release(s);
    }
    if (acks0) {
        /* batches were copied into the WAL buffer; nothing to answer */
        ls_free(ctx);
        ls_kreq_no_response(req);
        return;
    }
    produce_finish(ctx);
}
