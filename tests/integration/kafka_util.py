"""Client-side helpers shared by the Python integration tests.

These helpers' consumers assign() partitions with explicit start offsets, so
reads are independent of the group coordinator (test_groups.py covers groups).
confluent-kafka insists on a group.id even then; it is set but never used.
"""

import os
import random
import time
import uuid

from confluent_kafka import (OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer,
                             TopicPartition)
from confluent_kafka.admin import AdminClient, NewTopic

# kafka-python: pin the protocol generation instead of letting it guess.
# kafka-python 3.x still sends ApiVersions and clamps to what the broker
# advertises, so this is an upper bound.
KAFKA_PYTHON_API_VERSION = (2, 5, 0)

# Errors a consumer may see while a broker restarts; anything else fails a test.
# _DESTROY_BROKER: librdkafka dropped its handle of a broker that left the
# cluster's metadata (killed, session expired) while a request waited on it.
_TRANSIENT = {KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN, KafkaError._RESOLVE,
              KafkaError._TIMED_OUT, KafkaError._DESTROY_BROKER}


def short(v, n=40):
    """repr of a possibly huge bytes value, for assertion messages."""
    if isinstance(v, (bytes, bytearray)) and len(v) > n:
        return "%r...(%d bytes)" % (bytes(v[:n]), len(v))
    return repr(v)


def unique_topic(prefix="t"):
    return "%s-%s" % (prefix, uuid.uuid4().hex[:10])


def admin(bootstrap, **conf):
    c = {"bootstrap.servers": bootstrap}
    c.update(conf)
    return AdminClient(c)


def producer(bootstrap, **conf):
    c = {"bootstrap.servers": bootstrap, "linger.ms": 5}
    c.update({k.replace("_", "."): v for k, v in conf.items()})
    return Producer(c)


def consumer(bootstrap, **conf):
    c = {
        "bootstrap.servers": bootstrap,
        "group.id": "lakestream-test-unused",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "enable.partition.eof": True,
        "fetch.wait.max.ms": 100,
    }
    c.update({k.replace("_", "."): v for k, v in conf.items()})
    return Consumer(c)


# Replication factor the tests ask for. Lakestream accepts any (durability is
# the object store's); a one-node real Kafka used to check the tests
# themselves needs LS_TEST_DEFAULT_RF=1.
DEFAULT_RF = int(os.environ.get("LS_TEST_DEFAULT_RF", "3"))


# Errors Kafka's protocol marks retriable; librdkafka does not flag them as
# such on admin results.
RETRIABLE_ADMIN_ERRORS = {KafkaError.REQUEST_TIMED_OUT, KafkaError.NOT_CONTROLLER,
                          KafkaError.KAFKA_STORAGE_ERROR, KafkaError._TIMED_OUT,
                          KafkaError._TRANSPORT}


def create_topic(bootstrap, name, partitions=1, replication_factor=None, config=None, timeout=30):
    if replication_factor is None:
        replication_factor = DEFAULT_RF
    a = admin(bootstrap)
    deadline = time.monotonic() + timeout
    retried = False
    while True:
        fs = a.create_topics([NewTopic(name, num_partitions=partitions,
                                       replication_factor=replication_factor,
                                       config=config or {})],
                             operation_timeout=timeout)
        try:
            fs[name].result(timeout)
            break
        except KafkaException as e:
            err = e.args[0]
            # What an application does: retry a retriable error; after such a
            # retry, "already exists" means the earlier attempt was applied
            # and only its answer was lost.
            if retried and err.code() == KafkaError.TOPIC_ALREADY_EXISTS:
                break
            if not (err.retriable() or err.code() in RETRIABLE_ADMIN_ERRORS) \
                    or time.monotonic() > deadline:
                raise
            retried = True
            time.sleep(0.1)
    wait_topic(bootstrap, name, partitions)
    return name


def wait_topic(bootstrap, name, partitions=None, timeout=30):
    """Polls metadata until the topic is listed (with `partitions` partitions)."""
    a = admin(bootstrap)
    deadline = time.monotonic() + timeout
    while True:
        md = a.list_topics(topic=name, timeout=10)
        t = md.topics.get(name)
        if t is not None and t.error is None and (partitions is None or len(t.partitions) == partitions):
            return t
        if time.monotonic() > deadline:
            raise AssertionError("topic %s not visible with %s partitions in metadata: %r"
                                 % (name, partitions, t and (t.error, len(t.partitions))))
        time.sleep(0.05)


class DeliveryLog:
    """Delivery-report callback that records every outcome."""

    def __init__(self):
        self.acked = []    # (partition, offset, key, value)
        self.failed = []   # (KafkaError, key, value)

    def __call__(self, err, msg):
        if err is not None:
            self.failed.append((err, msg.key(), msg.value()))
        else:
            self.acked.append((msg.partition(), msg.offset(), msg.key(), msg.value()))


def produce_all(p, topic, records, partition=None, flush_timeout=60):
    """records: iterable of dicts with value, and optionally key, headers,
    timestamp, partition. Returns the DeliveryLog; fails if anything failed."""
    dl = DeliveryLog()
    for r in records:
        kw = dict(value=r.get("value"), key=r.get("key"), on_delivery=dl)
        if r.get("headers") is not None:
            kw["headers"] = r["headers"]
        if r.get("timestamp") is not None:
            kw["timestamp"] = r["timestamp"]
        part = r.get("partition", partition)
        if part is not None:
            kw["partition"] = part
        while True:
            try:
                p.produce(topic, **kw)
                break
            except BufferError:
                p.poll(0.05)
        p.poll(0)
    remaining = p.flush(flush_timeout)
    assert remaining == 0, "%d messages still undelivered after %ss" % (remaining, flush_timeout)
    assert not dl.failed, "%d deliveries failed, first: %s" % (
        len(dl.failed), [(e, short(k), short(v)) for e, k, v in dl.failed[:3]])
    return dl


def watermarks(bootstrap, topic, partitions, timeout=30):
    """{partition: (low, high)} via ListOffsets. Retries transient
    connection errors (a broker that just restarted) until timeout."""
    c = consumer(bootstrap)
    deadline = time.monotonic() + timeout
    try:
        out = {}
        for p in partitions:
            while True:
                try:
                    out[p] = c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
                    break
                except KafkaException as e:
                    if e.args[0].code() not in _TRANSIENT or time.monotonic() > deadline:
                        raise
                    time.sleep(0.1)
        return out
    finally:
        c.close()


def consume(bootstrap, topic, partitions, start=OFFSET_BEGINNING, expect=None, timeout=60,
            ignore_transient=False, **conf):
    """Reads partitions from `start` (an offset or OFFSET_BEGINNING, or a dict
    partition -> offset) until every partition reached its high watermark
    (queried first) or, if `expect` is a dict partition -> count, until that
    many messages were read. Returns {partition: [Message, ...]}."""
    if expect is None:
        wm = watermarks(bootstrap, topic, partitions)
    c = consumer(bootstrap, **conf)
    try:
        tps = []
        for p in partitions:
            off = start[p] if isinstance(start, dict) else start
            tps.append(TopicPartition(topic, p, off))
        c.assign(tps)
        out = {p: [] for p in partitions}
        last = {p: None for p in partitions}
        deadline = time.monotonic() + timeout

        def done():
            for p in partitions:
                if expect is not None:
                    if len(out[p]) < expect.get(p, 0):
                        return False
                else:
                    hi = wm[p][1]
                    first = start[p] if isinstance(start, dict) else start
                    if first >= 0 and first >= hi:
                        continue
                    if hi > 0 and (last[p] is None or last[p] < hi - 1):
                        return False
            return True

        while not done():
            if time.monotonic() > deadline:
                got = {p: (len(v), last[p]) for p, v in out.items()}
                raise AssertionError("consume %s timed out after %ss: got (count, last offset) %s, want %s"
                                     % (topic, timeout, got, expect if expect is not None else wm))
            for m in c.consume(num_messages=1000, timeout=0.2):
                e = m.error()
                if e is not None:
                    if e.code() == KafkaError._PARTITION_EOF:
                        continue
                    if ignore_transient and e.code() in _TRANSIENT:
                        continue
                    raise KafkaException(e)
                out[m.partition()].append(m)
                last[m.partition()] = m.offset()
        return out
    finally:
        c.close()


def assert_dense(msgs_by_partition, start=0):
    for p, msgs in msgs_by_partition.items():
        offs = [m.offset() for m in msgs]
        assert offs == list(range(start, start + len(offs))), \
            "partition %d offsets not dense from %d: %s" % (p, start, _summ(offs))


def _summ(offs):
    if len(offs) <= 20:
        return offs
    return "%s ... %s (n=%d)" % (offs[:10], offs[-10:], len(offs))


def alter_broker_defaults(bootstrap, configs, validate_only=False, resource_name="", timeout=30):
    """IncrementalAlterConfigs v0 on a BROKER resource, by hand: librdkafka and
    kafka-python refuse the default broker resource (empty name) that Kafka's
    own kafka-configs --entity-default uses. configs: {name: value} (None:
    DELETE). Returns [(error_code, error_message)] of the one resource."""
    import socket
    import struct

    def s16(s):
        if s is None:
            return struct.pack(">h", -1)
        b = s.encode()
        return struct.pack(">h", len(b)) + b

    body = struct.pack(">i", 1) + struct.pack(">b", 4) + s16(resource_name)
    body += struct.pack(">i", len(configs))
    for k, v in configs.items():
        body += s16(k) + struct.pack(">b", 1 if v is None else 0) + s16(v)
    body += struct.pack(">b", 1 if validate_only else 0)
    req = struct.pack(">hhi", 44, 0, 7) + s16("lakestream-test") + body
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=timeout) as s:
        s.sendall(struct.pack(">i", len(req)) + req)
        buf = b""
        while len(buf) < 4 or len(buf) < 4 + struct.unpack(">i", buf[:4])[0]:
            chunk = s.recv(65536)
            assert chunk, "connection closed before the IncrementalAlterConfigs response"
            buf += chunk
    p = 4 + 4 + 4  # size, correlation id, throttle
    (n,) = struct.unpack(">i", buf[p:p + 4])
    p += 4
    out = []
    for _ in range(n):
        code, mlen = struct.unpack(">hh", buf[p:p + 4])
        p += 4
        msg = None
        if mlen >= 0:
            msg = buf[p:p + mlen].decode()
            p += mlen
        p += 1  # resource type
        (nlen,) = struct.unpack(">h", buf[p:p + 2])
        p += 2 + max(nlen, 0)
        out.append((code, msg))
    return out


def produce_keyed(bootstrap, topic, n, nkeys, tombstone_pct, seed, compression=None):
    """Partition 0 of a compacted topic: n random updates and tombstones over
    nkeys keys, flushed every 50 records (several WAL entries), then a last
    record under a key of its own; returns {offset: (key, value)} as
    acknowledged (value None: a tombstone). compression: the producer's codec
    (default: one picked by seed)."""
    rnd = random.Random(seed)
    codec = rnd.choice(["none", "lz4", "zstd", "gzip", "snappy"])
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
                  "compression.type": compression or codec})
    acked = {}

    def cb(err, msg):
        assert err is None, err
        acked[msg.offset()] = (msg.key(), msg.value())

    for i in range(n):
        k = b"key-%d" % rnd.randrange(nkeys)
        v = None if rnd.randrange(100) < tombstone_pct else b"value-%d" % i
        p.produce(topic, key=k, value=v, partition=0, on_delivery=cb)
        if i % 50 == 49:
            p.flush(30)    # several WAL entries, so several compacted objects
    # the last record: a value under its own key (the log's end is then a record)
    p.produce(topic, key=b"end-%d" % seed, value=b"end", partition=0, on_delivery=cb)
    assert p.flush(30) == 0
    assert len(acked) == n + 1
    return acked


def latest_per_key(model):
    """What key compaction leaves of such a model: the latest record of each key."""
    last = {}
    for off in sorted(model):
        last[model[off][0]] = off
    return {off: model[off] for off in last.values()}


def read_keyed(bootstrap, topic):
    """Partition 0 from the beginning to the high watermark: {offset: (key, value)}."""
    got = consume(bootstrap, topic, [0], timeout=30)[0]
    return {m.offset(): (m.key(), m.value()) for m in got}
