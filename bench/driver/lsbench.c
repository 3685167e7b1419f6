/* lsbench: the load driver for Lakestream benchmarks (and its Kafka peer).
 *
 *   lsbench produce --brokers B --topic T [options]   produce throughput / latency
 *   lsbench consume --brokers B --topic T [options]   catch-up consume throughput
 *   lsbench e2e     --brokers B --topic T [options]   produce -> consume latency
 *
 * Every message carries, in its first 8 bytes, the CLOCK_MONOTONIC time (us) at
 * which it was *meant* to be sent: at a target rate that is the schedule slot,
 * not the moment produce() ran, so a stalled driver or broker shows up in the
 * latency instead of silently lowering the offered load (coordinated omission).
 * Produce latency = delivery report time - that stamp; end-to-end latency =
 * consumer receive time - that stamp (same host, same clock).
 *
 * Consumers use assign() with explicit offsets and never a group.id, so neither
 * consumer groups nor offset commits are needed from the broker.
 *
 * One JSON object goes to stdout; progress and errors to stderr. Exit 0 only if
 * the run completed without delivery errors (or with --allow-errors). */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <librdkafka/rdkafka.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hist.h"

typedef struct opts {
    const char *mode, *brokers, *topic, *acks, *compression, *keys, *payload;
    int partitions, create, size, linger_ms, idempotence, allow_errors;
    double rate, duration, warmup, timeout;
    long long count;
    const char *extra[32];
    int n_extra;
    const char *topic_config[16]; /* key=value, set at --create */
    int n_topic_config;
} opts_t;

static volatile sig_atomic_t g_stop;
static void on_signal(int s)
{
    (void)s;
    g_stop = 1;
}

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "lsbench: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(2);
}

static void conf_set(rd_kafka_conf_t *c, const char *k, const char *v)
{
    char err[256];
    if (rd_kafka_conf_set(c, k, v, err, sizeof err) != RD_KAFKA_CONF_OK)
        die("config %s=%s: %s", k, v, err);
}

static void conf_extra(rd_kafka_conf_t *c, const opts_t *o)
{
    for (int i = 0; i < o->n_extra; i++) {
        char kv[512];
        snprintf(kv, sizeof kv, "%s", o->extra[i]);
        char *eq = strchr(kv, '=');
        if (!eq) die("-X wants key=value, got %s", o->extra[i]);
        *eq = 0;
        conf_set(c, kv, eq + 1);
    }
}

static void log_cb(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
    (void)rk;
    if (level <= 4) fprintf(stderr, "rdkafka %s: %s\n", fac, buf);
}

/* ---- topic creation and metadata ------------------------------------------------- */

static int topic_partitions(rd_kafka_t *rk, const char *topic)
{
    rd_kafka_topic_t *t = rd_kafka_topic_new(rk, topic, NULL);
    const struct rd_kafka_metadata *md = NULL;
    int n = -1;
    if (rd_kafka_metadata(rk, 0, t, &md, 5000) == RD_KAFKA_RESP_ERR_NO_ERROR) {
        if (md->topic_cnt == 1 && md->topics[0].err == RD_KAFKA_RESP_ERR_NO_ERROR) {
            n = md->topics[0].partition_cnt;
            for (int i = 0; i < n; i++)
                if (md->topics[0].partitions[i].leader < 0) n = 0; /* not ready yet */
        }
        rd_kafka_metadata_destroy(md);
    }
    rd_kafka_topic_destroy(t);
    return n;
}

static void create_topic(rd_kafka_t *rk, const opts_t *o)
{
    const char *topic = o->topic;
    int partitions = o->partitions;
    char err[256];
    rd_kafka_NewTopic_t *nt = rd_kafka_NewTopic_new(topic, partitions, 1, err, sizeof err);
    if (!nt) die("NewTopic: %s", err);
    for (int i = 0; i < o->n_topic_config; i++) {
        char kv[512];
        snprintf(kv, sizeof kv, "%s", o->topic_config[i]);
        char *eq = strchr(kv, '=');
        if (!eq) die("--topic-config wants key=value, got %s", o->topic_config[i]);
        *eq = 0;
        if (rd_kafka_NewTopic_set_config(nt, kv, eq + 1))
            die("--topic-config %s: rejected by librdkafka", o->topic_config[i]);
    }
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_CreateTopics(rk, &nt, 1, NULL, q);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 30000);
    if (!ev) die("CreateTopics: timed out");
    const rd_kafka_CreateTopics_result_t *res = rd_kafka_event_CreateTopics_result(ev);
    size_t n = 0;
    const rd_kafka_topic_result_t **tr = res ? rd_kafka_CreateTopics_result_topics(res, &n) : NULL;
    if (rd_kafka_event_error(ev)) die("CreateTopics: %s", rd_kafka_event_error_string(ev));
    for (size_t i = 0; i < n; i++) {
        rd_kafka_resp_err_t e = rd_kafka_topic_result_error(tr[i]);
        if (e && e != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS)
            die("CreateTopics %s: %s", topic, rd_kafka_err2str(e));
    }
    rd_kafka_event_destroy(ev);
    rd_kafka_queue_destroy(q);
    rd_kafka_NewTopic_destroy(nt);
    /* Wait until every partition has a leader (Kafka needs a moment). */
    int64_t deadline = now_us() + 30 * 1000000LL;
    while (topic_partitions(rk, topic) != partitions) {
        if (now_us() > deadline)
            die("topic %s: %d partitions with leaders never appeared", topic, partitions);
        usleep(100000);
    }
}

/* ---- producer --------------------------------------------------------------------- */

typedef struct prod_state {
    lsb_hist_t lat;       /* produce latency of measured messages */
    int64_t measure_from; /* stamp (us) from which messages are measured */
    long long acked, failed, acked_measured;
    long long bytes_measured;
    int64_t first_dr_measured, last_dr;
    rd_kafka_resp_err_t first_err;
} prod_state_t;

static void dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    (void)rk;
    prod_state_t *s = opaque;
    int64_t t = now_us();
    if (m->err) {
        s->failed++;
        if (!s->first_err) {
            s->first_err = m->err;
            fprintf(stderr, "lsbench: delivery failed: %s\n", rd_kafka_err2str(m->err));
        }
        return;
    }
    s->acked++;
    s->last_dr = t;
    int64_t stamp;
    memcpy(&stamp, m->payload, sizeof stamp);
    if (stamp >= s->measure_from) {
        if (!s->acked_measured) s->first_dr_measured = t;
        s->acked_measured++;
        s->bytes_measured += (long long)m->len;
        lsb_hist_add(&s->lat, t - stamp);
    }
}

static rd_kafka_t *make_producer(const opts_t *o, prod_state_t *s)
{
    rd_kafka_conf_t *c = rd_kafka_conf_new();
    char v[64];
    conf_set(c, "bootstrap.servers", o->brokers);
    conf_set(c, "acks", o->acks);
    snprintf(v, sizeof v, "%d", o->linger_ms);
    conf_set(c, "linger.ms", v);
    conf_set(c, "compression.codec", o->compression);
    conf_set(c, "enable.idempotence", o->idempotence ? "true" : "false");
    conf_set(c, "partitioner", "murmur2_random"); /* what the Java client does */
    conf_set(c, "queue.buffering.max.kbytes", "262144");
    conf_set(c, "message.timeout.ms", "120000");
    conf_extra(c, o);
    rd_kafka_conf_set_dr_msg_cb(c, dr_cb);
    rd_kafka_conf_set_log_cb(c, log_cb);
    rd_kafka_conf_set_opaque(c, s);
    char err[256];
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, c, err, sizeof err);
    if (!rk) die("producer: %s", err);
    return rk;
}

typedef struct keygen {
    int kind; /* 0 none, 1 uniform random over n keys, 2 round-robin partitions */
    long n;
    uint64_t rng;
    long rr;
} keygen_t;

static void keygen_init(keygen_t *k, const char *spec)
{
    memset(k, 0, sizeof *k);
    k->rng = 0x9E3779B97F4A7C15ULL;
    if (!strcmp(spec, "none"))
        k->kind = 0;
    else if (!strncmp(spec, "uniform:", 8)) {
        k->kind = 1;
        k->n = atol(spec + 8);
        if (k->n < 1) die("--keys uniform:N wants N >= 1");
    } else if (!strcmp(spec, "roundrobin"))
        k->kind = 2;
    else
        die("--keys: none | uniform:N | roundrobin");
}

static uint64_t xorshift(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

/* Fills key (returns its length, 0 for none) and the explicit partition. */
static int keygen_next(keygen_t *k, int partitions, char *key, int32_t *part)
{
    *part = RD_KAFKA_PARTITION_UA;
    if (k->kind == 1)
        return snprintf(key, 32, "key-%ld", (long)(xorshift(&k->rng) % (uint64_t)k->n));
    if (k->kind == 2) *part = (int32_t)(k->rr++ % partitions);
    return 0;
}

/* Record values. "random": every record a different window of a 64 MiB random
 * pool, so values are incompressible one by one *and* across records (a Parquet
 * dictionary or a zstd window sees no repeats), at the cost of one memcpy each.
 * "text": one compressible value, the same for every record. The first 8 bytes of
 * each value are then overwritten with its timestamp. */
#define PAYLOAD_POOL_BYTES (64u << 20)

typedef struct payload {
    char *pool, *buf;
    size_t pool_len, size;
    unsigned long long n;
} payload_t;

static void payload_init(payload_t *p, int size, const char *kind)
{
    uint64_t r = 0x2545F4914F6CDD1DULL;
    p->size = (size_t)size;
    p->n = 0;
    p->buf = malloc(p->size);
    if (!strcmp(kind, "text")) {
        static const char words[] = "lakestream kafka record value event table offset log ";
        p->pool_len = p->size;
        p->pool = malloc(p->pool_len);
        for (int i = 0; i < size; i++)
            p->pool[i] = words[(xorshift(&r) % 7 == 0) ? (i * 7) % (sizeof words - 1)
                                                       : i % (sizeof words - 1)];
    } else if (!strcmp(kind, "random")) {
        p->pool_len = p->size > PAYLOAD_POOL_BYTES ? p->size : PAYLOAD_POOL_BYTES;
        p->pool = malloc(p->pool_len);
        for (size_t i = 0; i + 8 <= p->pool_len; i += 8) {
            uint64_t x = xorshift(&r);
            memcpy(p->pool + i, &x, 8);
        }
    } else {
        die("--payload: random | text");
    }
    if (!p->pool || !p->buf) die("out of memory for the payload pool");
}

/* The next record's value, stamped. */
static const char *payload_next(payload_t *p, int64_t stamp)
{
    size_t span = p->pool_len - p->size + 1;
    /* An odd stride (not a multiple of 8) so consecutive windows never align. */
    size_t off = (size_t)((p->n++ * 4099ULL) % span);
    memcpy(p->buf, p->pool + off, p->size);
    memcpy(p->buf, &stamp, sizeof stamp);
    return p->buf;
}

static void payload_free(payload_t *p)
{
    free(p->pool);
    free(p->buf);
}

/* Produces for --duration seconds (or --count messages) at --rate msgs/s (0 = as
 * fast as the client queue allows). Returns the number of messages handed over. */
static long long produce_loop(rd_kafka_t *rk, rd_kafka_topic_t *t, const opts_t *o, prod_state_t *s,
                              int64_t t0, payload_t *payload)
{
    (void)s;
    keygen_t kg;
    keygen_init(&kg, o->keys);
    long long sent = 0;
    int64_t end = o->duration > 0 ? t0 + (int64_t)(o->duration * 1e6) : INT64_MAX;
    double interval = o->rate > 0 ? 1e6 / o->rate : 0;
    char key[32];
    while (!g_stop) {
        if (o->count > 0 && sent >= o->count) break;
        int64_t now = now_us();
        if (now >= end) break;
        int64_t stamp = now;
        if (interval > 0) {
            int64_t slot = t0 + (int64_t)((double)sent * interval);
            if (slot > now) {
                int64_t wait = slot - now;
                rd_kafka_poll(rk, 0);
                if (wait > 200) {
                    struct timespec ts = {0, (long)(wait - 100) * 1000};
                    nanosleep(&ts, NULL);
                }
                continue;
            }
            stamp = slot;
        }
        const char *value = payload_next(payload, stamp);
        int32_t part;
        int klen = keygen_next(&kg, o->partitions, key, &part);
        for (;;) {
            if (rd_kafka_produce(t, part, RD_KAFKA_MSG_F_COPY, (void *)value, (size_t)o->size,
                                 klen ? key : NULL, (size_t)klen, NULL) == 0)
                break;
            rd_kafka_resp_err_t e = rd_kafka_last_error();
            if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL) die("produce: %s", rd_kafka_err2str(e));
            rd_kafka_poll(rk, 1);
            if (g_stop) break;
        }
        sent++;
        if ((sent & 1023) == 0) rd_kafka_poll(rk, 0);
    }
    return sent;
}

static void print_common(const opts_t *o)
{
    printf("\"mode\":\"%s\",\"topic\":\"%s\",\"config\":{\"partitions\":%d,\"size\":%d,"
           "\"keys\":\"%s\",\"rate\":%.1f,\"duration_s\":%.2f,\"warmup_s\":%.2f,\"acks\":\"%s\","
           "\"linger_ms\":%d,\"compression\":\"%s\",\"idempotence\":%s,\"payload\":\"%s\"}",
           o->mode, o->topic, o->partitions, o->size, o->keys, o->rate, o->duration, o->warmup,
           o->acks, o->linger_ms, o->compression, o->idempotence ? "true" : "false", o->payload);
}

static void print_producer(const prod_state_t *s, long long sent, double secs)
{
    printf("\"produce\":{\"sent\":%lld,\"acked\":%lld,\"failed\":%lld,\"measured\":%lld,"
           "\"seconds\":%.3f,\"msgs_per_sec\":%.1f,\"mb_per_sec\":%.3f,\"latency\":",
           sent, s->acked, s->failed, s->acked_measured, secs,
           secs > 0 ? (double)s->acked_measured / secs : 0,
           secs > 0 ? (double)s->bytes_measured / secs / 1048576.0 : 0);
    lsb_hist_json(stdout, &s->lat);
    printf("}");
}

static int run_produce(const opts_t *o)
{
    prod_state_t *s = calloc(1, sizeof *s);
    lsb_hist_init(&s->lat);
    rd_kafka_t *rk = make_producer(o, s);
    if (o->create) create_topic(rk, o);
    rd_kafka_topic_t *t = rd_kafka_topic_new(rk, o->topic, NULL);
    payload_t payload;
    payload_init(&payload, o->size, o->payload);

    int64_t t0 = now_us();
    s->measure_from = t0 + (int64_t)(o->warmup * 1e6);
    long long sent = produce_loop(rk, t, o, s, t0, &payload);
    int64_t t_stop = now_us();
    rd_kafka_resp_err_t fe = rd_kafka_flush(rk, (int)(o->timeout * 1000));
    /* Throughput: measured messages over the window from the end of warm-up to
     * the last delivery report (includes draining what was queued). */
    double secs = (double)(s->last_dr - (s->measure_from > t0 ? s->measure_from : t0)) / 1e6;
    if (secs <= 0) secs = (double)(t_stop - t0) / 1e6;
    printf("{");
    print_common(o);
    printf(",");
    print_producer(s, sent, secs);
    printf(",\"flush_timed_out\":%s}\n", fe ? "true" : "false");
    int bad = fe || s->failed || s->acked_measured == 0;
    rd_kafka_topic_destroy(t);
    rd_kafka_destroy(rk);
    payload_free(&payload);
    free(s);
    return bad && !o->allow_errors ? 1 : 0;
}

/* Low/high watermarks, retried for a while: right after CreateTopics a broker may
 * still answer NOT_LEADER / LEADER_NOT_AVAILABLE. */
static void watermarks(rd_kafka_t *rk, const char *topic, int p, int64_t *lo, int64_t *hi)
{
    rd_kafka_resp_err_t e = RD_KAFKA_RESP_ERR_NO_ERROR;
    for (int i = 0; i < 100; i++) {
        e = rd_kafka_query_watermark_offsets(rk, topic, p, lo, hi, 10000);
        if (!e) return;
        usleep(100000);
    }
    die("watermarks %s/%d: %s", topic, p, rd_kafka_err2str(e));
}

/* ---- consumer --------------------------------------------------------------------- */

static rd_kafka_t *make_consumer(const opts_t *o)
{
    rd_kafka_conf_t *c = rd_kafka_conf_new();
    conf_set(c, "bootstrap.servers", o->brokers);
    conf_set(c, "enable.auto.commit", "false");
    conf_set(c, "enable.auto.offset.store", "false");
    conf_set(c, "enable.partition.eof", "true");
    conf_extra(c, o);
    rd_kafka_conf_set_log_cb(c, log_cb);
    char err[256];
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, c, err, sizeof err);
    if (!rk) die("consumer: %s", err);
    return rk;
}

/* Manual assignment without a group (the "simple consumer" API): every partition
 * of the topic starts at offsets[p] and delivers into one queue. */
typedef struct assigned {
    rd_kafka_topic_t *t;
    rd_kafka_queue_t *q;
    int np;
} assigned_t;

static void assign_all(rd_kafka_t *rk, const char *topic, int np, const int64_t *offsets,
                       assigned_t *a)
{
    a->t = rd_kafka_topic_new(rk, topic, NULL);
    a->q = rd_kafka_queue_new(rk);
    a->np = np;
    for (int p = 0; p < np; p++)
        if (rd_kafka_consume_start_queue(a->t, p, offsets[p], a->q) == -1)
            die("consume_start %s/%d: %s", topic, p, rd_kafka_err2str(rd_kafka_last_error()));
}

static void unassign_all(assigned_t *a)
{
    for (int p = 0; p < a->np; p++)
        rd_kafka_consume_stop(a->t, p);
    rd_kafka_queue_destroy(a->q);
    rd_kafka_topic_destroy(a->t);
}

/* Catch-up: every partition from its log start to the high watermark seen at
 * start. Time runs from assign() to the last record. */
static int run_consume(const opts_t *o)
{
    rd_kafka_t *rk = make_consumer(o);
    int np = topic_partitions(rk, o->topic);
    if (np <= 0) die("topic %s not found", o->topic);
    int64_t *hw = calloc((size_t)np, sizeof *hw), *start = calloc((size_t)np, sizeof *start);
    long long total = 0;
    for (int p = 0; p < np; p++) {
        int64_t lo, hi;
        watermarks(rk, o->topic, p, &lo, &hi);
        hw[p] = hi;
        total += hi - lo;
        start[p] = lo;
    }
    if (o->count > 0 && o->count < total) total = o->count;
    int64_t t0 = now_us(), t_last = t0, deadline = t0 + (int64_t)(o->timeout * 1e6);
    assigned_t a;
    assign_all(rk, o->topic, np, start, &a);
    long long msgs = 0, bytes = 0, errors = 0;
    int done_parts = 0;
    int *done = calloc((size_t)np, sizeof *done);
    for (int p = 0; p < np; p++)
        if (start[p] >= hw[p]) done[p] = 1, done_parts++;
    while (done_parts < np && msgs < total && !g_stop && now_us() < deadline) {
        rd_kafka_message_t *m = rd_kafka_consume_queue(a.q, 100);
        if (!m) continue;
        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
        } else if (m->err) {
            if (errors++ < 5) fprintf(stderr, "lsbench: consume: %s\n", rd_kafka_message_errstr(m));
        } else {
            msgs++;
            bytes += (long long)m->len;
            t_last = now_us();
            int p = m->partition;
            if (p >= 0 && p < np && !done[p] && m->offset + 1 >= hw[p]) done[p] = 1, done_parts++;
        }
        rd_kafka_message_destroy(m);
    }
    double secs = (double)(t_last - t0) / 1e6;
    printf("{");
    print_common(o);
    printf(",\"consume\":{\"expected\":%lld,\"messages\":%lld,\"bytes\":%lld,\"errors\":%lld,"
           "\"seconds\":%.3f,\"msgs_per_sec\":%.1f,\"mb_per_sec\":%.3f,\"complete\":%s}}\n",
           total, msgs, bytes, errors, secs, secs > 0 ? (double)msgs / secs : 0,
           secs > 0 ? (double)bytes / secs / 1048576.0 : 0, msgs >= total ? "true" : "false");
    unassign_all(&a);
    rd_kafka_destroy(rk);
    free(hw);
    free(start);
    free(done);
    return msgs >= total || o->allow_errors ? 0 : 1;
}

/* ---- end to end ------------------------------------------------------------------- */

typedef struct e2e_state {
    const opts_t *o;
    rd_kafka_t *rk;
    assigned_t a;
    lsb_hist_t lat;
    int64_t measure_from;
    volatile int ready, stop;
    long long received, errors;
} e2e_state_t;

static void *e2e_consumer(void *arg)
{
    e2e_state_t *s = arg;
    while (!s->stop) {
        rd_kafka_message_t *m = rd_kafka_consume_queue(s->a.q, 50);
        s->ready = 1;
        if (!m) continue;
        if (!m->err && m->len >= 8) {
            int64_t t = now_us(), stamp;
            memcpy(&stamp, m->payload, sizeof stamp);
            s->received++;
            if (stamp >= s->measure_from) lsb_hist_add(&s->lat, t - stamp);
        } else if (m->err && m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            if (s->errors++ < 5)
                fprintf(stderr, "lsbench: e2e consume: %s\n", rd_kafka_message_errstr(m));
        }
        rd_kafka_message_destroy(m);
    }
    return NULL;
}

static int run_e2e(const opts_t *o)
{
    if (o->rate <= 0) die("e2e needs --rate (latency is measured below saturation)");
    prod_state_t *ps = calloc(1, sizeof *ps);
    lsb_hist_init(&ps->lat);
    rd_kafka_t *prk = make_producer(o, ps);
    if (o->create) create_topic(prk, o);
    int np = topic_partitions(prk, o->topic);
    if (np <= 0) die("topic %s not found", o->topic);

    e2e_state_t *cs = calloc(1, sizeof *cs);
    lsb_hist_init(&cs->lat);
    cs->o = o;
    cs->rk = make_consumer(o);
    int64_t *start = calloc((size_t)np, sizeof *start);
    for (int p = 0; p < np; p++) {
        int64_t lo, hi;
        watermarks(cs->rk, o->topic, p, &lo, &hi);
        start[p] = hi;
    }
    assign_all(cs->rk, o->topic, np, start, &cs->a);
    free(start);
    cs->measure_from = INT64_MAX;
    pthread_t th;
    pthread_create(&th, NULL, e2e_consumer, cs);
    while (!cs->ready)
        usleep(1000);
    usleep(500000); /* let the first fetches reach the broker */

    rd_kafka_topic_t *t = rd_kafka_topic_new(prk, o->topic, NULL);
    payload_t payload;
    payload_init(&payload, o->size, o->payload);
    int64_t t0 = now_us();
    ps->measure_from = cs->measure_from = t0 + (int64_t)(o->warmup * 1e6);
    long long sent = produce_loop(prk, t, o, ps, t0, &payload);
    rd_kafka_resp_err_t fe = rd_kafka_flush(prk, (int)(o->timeout * 1000));
    double psecs = (double)(ps->last_dr - ps->measure_from) / 1e6;
    /* Wait for the consumer to see everything that was acknowledged. */
    int64_t deadline = now_us() + 10 * 1000000LL;
    while (cs->received < ps->acked && now_us() < deadline)
        usleep(10000);
    cs->stop = 1;
    pthread_join(th, NULL);

    printf("{");
    print_common(o);
    printf(",");
    print_producer(ps, sent, psecs);
    printf(",\"e2e\":{\"received\":%lld,\"errors\":%lld,\"latency\":", cs->received, cs->errors);
    lsb_hist_json(stdout, &cs->lat);
    printf("},\"flush_timed_out\":%s}\n", fe ? "true" : "false");
    int bad = fe || ps->failed || cs->received < ps->acked;
    unassign_all(&cs->a);
    rd_kafka_destroy(cs->rk);
    rd_kafka_topic_destroy(t);
    rd_kafka_destroy(prk);
    payload_free(&payload);
    free(ps);
    free(cs);
    return bad && !o->allow_errors ? 1 : 0;
}

/* ---- main ------------------------------------------------------------------------- */

static void usage(void)
{
    fprintf(stderr,
            "usage: lsbench produce|consume|e2e --brokers HOST:PORT --topic T [options]\n"
            "  --partitions N      partitions (with --create; default 16)\n"
            "  --create            create the topic first (replication factor 1)\n"
            "  --topic-config K=V  a topic config for --create (repeatable)\n"
            "  --size BYTES        record value size (default 1024; first 8 bytes = timestamp)\n"
            "  --keys SPEC         none | uniform:N (random of N keys, murmur2) | roundrobin\n"
            "  --rate MSGS_PER_S   target rate (0 = as fast as possible; default 0)\n"
            "  --duration S        produce for S seconds (default 10)\n"
            "  --count N           stop after N messages (consume: at most N)\n"
            "  --warmup S          leave the first S seconds out of the figures (default 1)\n"
            "  --acks all|1|0      (default all)      --linger-ms MS (default 5)\n"
            "  --compression none|gzip|snappy|lz4|zstd (default none)\n"
            "  --idempotence       enable.idempotence=true\n"
            "  --payload random|text  (default random: every value different, incompressible)\n"
            "  --timeout S         flush / catch-up timeout (default 120)\n"
            "  -X key=value        any other librdkafka property\n"
            "  --allow-errors      exit 0 even if deliveries failed\n");
    exit(2);
}

int main(int argc, char **argv)
{
    opts_t o = {.brokers = "127.0.0.1:9092",
                .acks = "all",
                .compression = "none",
                .keys = "uniform:100000",
                .payload = "random",
                .partitions = 16,
                .size = 1024,
                .linger_ms = 5,
                .duration = 10,
                .warmup = 1,
                .timeout = 120};
    if (argc < 2) usage();
    o.mode = argv[1];
    enum {
        O_BROKERS = 256,
        O_TOPIC,
        O_PARTS,
        O_CREATE,
        O_SIZE,
        O_KEYS,
        O_RATE,
        O_DUR,
        O_COUNT,
        O_WARM,
        O_ACKS,
        O_LINGER,
        O_COMP,
        O_IDEM,
        O_PAYLOAD,
        O_TIMEOUT,
        O_ALLOW,
        O_TCONF
    };
    static const struct option lo[] = {{"brokers", 1, 0, O_BROKERS},
                                       {"topic", 1, 0, O_TOPIC},
                                       {"partitions", 1, 0, O_PARTS},
                                       {"create", 0, 0, O_CREATE},
                                       {"size", 1, 0, O_SIZE},
                                       {"keys", 1, 0, O_KEYS},
                                       {"rate", 1, 0, O_RATE},
                                       {"duration", 1, 0, O_DUR},
                                       {"count", 1, 0, O_COUNT},
                                       {"warmup", 1, 0, O_WARM},
                                       {"acks", 1, 0, O_ACKS},
                                       {"linger-ms", 1, 0, O_LINGER},
                                       {"compression", 1, 0, O_COMP},
                                       {"idempotence", 0, 0, O_IDEM},
                                       {"payload", 1, 0, O_PAYLOAD},
                                       {"timeout", 1, 0, O_TIMEOUT},
                                       {"allow-errors", 0, 0, O_ALLOW},
                                       {"topic-config", 1, 0, O_TCONF},
                                       {0, 0, 0, 0}};
    int c;
    optind = 2;
    while ((c = getopt_long(argc, argv, "X:", lo, NULL)) != -1) {
        switch (c) {
        case O_BROKERS: o.brokers = optarg; break;
        case O_TOPIC: o.topic = optarg; break;
        case O_PARTS: o.partitions = atoi(optarg); break;
        case O_CREATE: o.create = 1; break;
        case O_SIZE: o.size = atoi(optarg); break;
        case O_KEYS: o.keys = optarg; break;
        case O_RATE: o.rate = atof(optarg); break;
        case O_DUR: o.duration = atof(optarg); break;
        case O_COUNT: o.count = atoll(optarg); break;
        case O_WARM: o.warmup = atof(optarg); break;
        case O_ACKS: o.acks = optarg; break;
        case O_LINGER: o.linger_ms = atoi(optarg); break;
        case O_COMP: o.compression = optarg; break;
        case O_IDEM: o.idempotence = 1; break;
        case O_PAYLOAD: o.payload = optarg; break;
        case O_TIMEOUT: o.timeout = atof(optarg); break;
        case O_ALLOW: o.allow_errors = 1; break;
        case O_TCONF:
            if (o.n_topic_config == 16) die("too many --topic-config");
            o.topic_config[o.n_topic_config++] = optarg;
            break;
        case 'X':
            if (o.n_extra == 32) die("too many -X");
            o.extra[o.n_extra++] = optarg;
            break;
        default: usage();
        }
    }
    if (!o.topic) die("--topic is required");
    if (o.size < 8) die("--size must be at least 8 (the timestamp)");
    if (o.partitions < 1) die("--partitions must be >= 1");
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    if (!strcmp(o.mode, "produce")) return run_produce(&o);
    if (!strcmp(o.mode, "consume")) return run_consume(&o);
    if (!strcmp(o.mode, "e2e")) return run_e2e(&o);
    usage();
    return 2;
}
