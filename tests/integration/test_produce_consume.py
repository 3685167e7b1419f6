"""Produce and consume with confluent-kafka (librdkafka) against the real broker."""

import os

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from kafka_util import (DeliveryLog, assert_dense, consume, create_topic, produce_all, producer,
                        short, unique_topic)

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


def _records(n, tag, with_headers=True):
    out = []
    for i in range(n):
        r = {"key": ("k-%d" % (i % 17)).encode(),
             "value": ("%s value %d " % (tag, i)).encode() * (1 + i % 7)}
        if with_headers:
            r["headers"] = [("seq", str(i).encode()), ("tag", tag.encode())]
        out.append(r)
    return out


@pytest.mark.parametrize("codec", CODECS)
def test_codec_roundtrip(broker, codec):
    topic = create_topic(broker.bootstrap, unique_topic("codec-" + codec), partitions=3)
    recs = _records(600, codec)
    for i, r in enumerate(recs):
        r["partition"] = i % 3
    p = producer(broker.bootstrap, **{"compression.type": codec, "linger.ms": 20,
                                      "batch.num.messages": 200})
    dl = produce_all(p, topic, recs)
    assert len(dl.acked) == 600
    got = consume(broker.bootstrap, topic, [0, 1, 2])
    assert_dense(got)
    for part in range(3):
        want = [r for r in recs if r["partition"] == part]
        msgs = got[part]
        assert len(msgs) == len(want)
        for m, r in zip(msgs, want):
            assert m.key() == r["key"]
            assert m.value() == r["value"]
            assert m.headers() == r["headers"]
    # every acknowledged offset holds the value that was acknowledged there
    by_po = {(m.partition(), m.offset()): m.value() for ms in got.values() for m in ms}
    for (part, off, _k, v) in dl.acked:
        assert by_po[(part, off)] == v


def test_keys_headers_nulls(broker):
    topic = create_topic(broker.bootstrap, unique_topic("nulls"))
    recs = [
        {"key": b"k1", "value": b"v1", "headers": [("a", b"1"), ("a", b"2"), ("empty", b"")]},
        {"key": None, "value": b"no key"},
        {"key": b"tombstone", "value": None},
        {"key": None, "value": None},
        {"key": b"", "value": b""},
        {"key": b"bin\x00\xff", "value": bytes(range(256)), "headers": [("nullhdr", None)]},
        {"key": b"u", "value": "h\u00e9llo \u2603".encode("utf-8"), "headers": [("\u00fcml", b"x")]},
    ]
    produce_all(producer(broker.bootstrap), topic, recs)
    got = consume(broker.bootstrap, topic, [0])[0]
    assert len(got) == len(recs)
    for m, r in zip(got, recs):
        assert m.key() == r["key"], (m.offset(), m.key(), r["key"])
        assert m.value() == r["value"], (m.offset(), m.value(), r["value"])
        want_h = r.get("headers")
        assert (m.headers() or None) == (want_h or None), (m.offset(), m.headers(), want_h)


def test_timestamps_preserved(broker):
    topic = create_topic(broker.bootstrap, unique_topic("ts"))
    base = 1_600_000_000_000
    recs = [{"value": b"x%d" % i, "timestamp": base + i * 1000} for i in range(50)]
    produce_all(producer(broker.bootstrap), topic, recs)
    got = consume(broker.bootstrap, topic, [0])[0]
    assert [m.timestamp()[1] for m in got] == [r["timestamp"] for r in recs]
    # CreateTime (type 1)
    assert all(m.timestamp()[0] == 1 for m in got)


def test_one_mib_records(broker_factory):
    b = broker_factory("--message.max.bytes=8388608")
    topic = create_topic(b.bootstrap, unique_topic("big"))
    vals = [os.urandom(1 << 20) for _ in range(4)] + [b"small"] + [os.urandom((1 << 20) - 1)]
    p = producer(b.bootstrap, **{"message.max.bytes": 8388608, "linger.ms": 0})
    produce_all(p, topic, [{"key": b"big%d" % i, "value": v} for i, v in enumerate(vals)])
    got = consume(b.bootstrap, topic, [0], **{"fetch.max.bytes": 52428800,
                                              "max.partition.fetch.bytes": 1048576,
                                              "receive.message.max.bytes": 104857600})[0]
    assert len(got) == len(vals)
    for m, v in zip(got, vals):
        assert m.value() == v, "offset %d: got %s want %s" % (m.offset(), short(m.value()), short(v))


def test_record_larger_than_message_max_bytes_rejected(broker):
    """Default message.max.bytes (1048588): a 2 MiB record batch is refused
    with MSG_SIZE_TOO_LARGE, and the broker keeps serving."""
    topic = create_topic(broker.bootstrap, unique_topic("toolarge"))
    p = producer(broker.bootstrap, **{"message.max.bytes": 8388608, "linger.ms": 0,
                                      "compression.type": "none", "retries": 0})
    dl = DeliveryLog()
    p.produce(topic, value=os.urandom(2 << 20), on_delivery=dl)
    assert p.flush(30) == 0
    assert len(dl.failed) == 1 and not dl.acked
    assert dl.failed[0][0].code() == KafkaError.MSG_SIZE_TOO_LARGE, dl.failed[0][0]
    dl2 = produce_all(producer(broker.bootstrap), topic, [{"value": b"after"}])
    assert dl2.acked[0][1] == 0
    assert [m.value() for m in consume(broker.bootstrap, topic, [0])[0]] == [b"after"]


def test_many_partitions(broker):
    n = 64
    topic = create_topic(broker.bootstrap, unique_topic("many"), partitions=n)
    recs = [{"partition": p, "key": b"p%d" % p, "value": b"p%d-m%d" % (p, i)}
            for i in range(10) for p in range(n)]
    produce_all(producer(broker.bootstrap, **{"linger.ms": 10}), topic, recs)
    got = consume(broker.bootstrap, topic, list(range(n)))
    assert_dense(got)
    for p in range(n):
        assert [m.value() for m in got[p]] == [b"p%d-m%d" % (p, i) for i in range(10)]


def test_keyed_partitioning_is_stable(broker):
    """Records with the same key land in the same partition (client-side
    partitioner, broker-side metadata)."""
    topic = create_topic(broker.bootstrap, unique_topic("keyed"), partitions=8)
    recs = [{"key": b"user-%d" % (i % 20), "value": b"%d" % i} for i in range(400)]
    dl = produce_all(producer(broker.bootstrap), topic, recs)
    where = {}
    for part, _off, k, _v in dl.acked:
        where.setdefault(k, set()).add(part)
    assert all(len(s) == 1 for s in where.values())
    got = consume(broker.bootstrap, topic, list(range(8)))
    assert sum(len(v) for v in got.values()) == 400


@pytest.mark.parametrize("acks", ["0", "1", "all"])
def test_acks(broker, acks):
    topic = create_topic(broker.bootstrap, unique_topic("acks" + acks), partitions=2)
    recs = [{"partition": i % 2, "value": b"acks=%s #%d" % (acks.encode(), i)} for i in range(500)]
    dl = produce_all(producer(broker.bootstrap, **{"acks": acks}), topic, recs)
    assert len(dl.acked) == 500
    if acks == "0":
        # no response, so no offsets: wait for the records to become readable
        got = consume(broker.bootstrap, topic, [0, 1], expect={0: 250, 1: 250})
    else:
        assert all(off >= 0 for _p, off, _k, _v in dl.acked)
        got = consume(broker.bootstrap, topic, [0, 1])
    assert_dense(got)
    for part in (0, 1):
        assert [m.value() for m in got[part]] == [r["value"] for r in recs if r["partition"] == part]


def test_acks0_then_acks_all_same_connection_order(broker):
    """acks=0 requests get no response; a following acks=all request on the
    same connection must still get its own response (correlation ids)."""
    topic = create_topic(broker.bootstrap, unique_topic("acksmix"))
    p0 = producer(broker.bootstrap, **{"acks": "0"})
    produce_all(p0, topic, [{"value": b"a%d" % i} for i in range(100)])
    pall = producer(broker.bootstrap, **{"acks": "all"})
    dl = produce_all(pall, topic, [{"value": b"b%d" % i} for i in range(100)])
    offs = sorted(o for _p, o, _k, _v in dl.acked)
    assert offs == list(range(100, 200))


def test_idempotent_producer(broker):
    topic = create_topic(broker.bootstrap, unique_topic("idem"), partitions=4)
    p = producer(broker.bootstrap, **{"enable.idempotence": True, "linger.ms": 2,
                                      "max.in.flight.requests.per.connection": 5,
                                      "batch.num.messages": 50})
    recs = [{"partition": i % 4, "key": b"%d" % i, "value": b"idem-%06d" % i} for i in range(4000)]
    dl = produce_all(p, topic, recs)
    assert len(dl.acked) == 4000
    got = consume(broker.bootstrap, topic, [0, 1, 2, 3])
    assert_dense(got)
    for part in range(4):
        assert [m.value() for m in got[part]] == [r["value"] for r in recs if r["partition"] == part]
    acked = {(pa, o): v for pa, o, _k, v in dl.acked}
    for part, msgs in got.items():
        for m in msgs:
            assert acked[(part, m.offset())] == m.value()


def test_produce_unknown_partition_fails(broker):
    topic = create_topic(broker.bootstrap, unique_topic("nopart"), partitions=2)
    p = producer(broker.bootstrap, **{"message.timeout.ms": 5000})
    dl = DeliveryLog()
    p.produce(topic, value=b"x", partition=7, on_delivery=dl)
    p.flush(15)
    assert len(dl.failed) == 1
    assert dl.failed[0][0].code() in (KafkaError._UNKNOWN_PARTITION, KafkaError.UNKNOWN_TOPIC_OR_PART), \
        dl.failed[0][0]


def test_long_poll_fetch_wakes_on_produce(broker):
    """A consumer waiting at the end of the log sees a new record promptly
    (fetch long poll woken by the commit, not by the poll timeout)."""
    import time
    topic = create_topic(broker.bootstrap, unique_topic("longpoll"))
    from kafka_util import consumer
    c = consumer(broker.bootstrap, **{"fetch.wait.max.ms": 5000, "enable.partition.eof": False})
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        c.consume(num_messages=1, timeout=1.0)  # settle: fetch now parked at offset 0
        p = producer(broker.bootstrap, **{"linger.ms": 0})
        t0 = time.monotonic()
        produce_all(p, topic, [{"value": b"wake"}])
        got = None
        while time.monotonic() - t0 < 10 and got is None:
            for m in c.consume(num_messages=1, timeout=0.1):
                if m.error() is None:
                    got = m
        assert got is not None and got.value() == b"wake"
        # producer ack + delivery well under the 5 s fetch.wait.max.ms
        assert time.monotonic() - t0 < 4.0, "fetch long poll was not woken by the commit"
    finally:
        c.close()


def test_concurrent_producers_and_tailing_consumer(broker):
    """Four producers on their own connections write to the same partitions
    at once while a consumer tails; per-producer order holds in every
    partition, nothing is lost or doubled, and acknowledged offsets match."""
    import threading
    topic = create_topic(broker.bootstrap, unique_topic("conc"), partitions=3)
    n_per, nprod = 2500, 4
    logs = [DeliveryLog() for _ in range(nprod)]
    errors = []

    def run(k):
        try:
            p = producer(broker.bootstrap, **{"acks": "all", "linger.ms": k, "enable.idempotence": True,
                                              "compression.type": CODECS[k % len(CODECS)]})
            for i in range(n_per):
                while True:
                    try:
                        p.produce(topic, value=b"p%d-%06d" % (k, i), partition=i % 3, on_delivery=logs[k])
                        break
                    except BufferError:
                        p.poll(0.01)
                if i % 100 == 0:
                    p.poll(0)
            if p.flush(60) != 0:
                errors.append("producer %d: flush timed out" % k)
        except Exception as e:  # noqa: BLE001
            errors.append("producer %d: %r" % (k, e))

    threads = [threading.Thread(target=run, args=(k,)) for k in range(nprod)]
    for t in threads:
        t.start()
    want = {part: nprod * len(range(part, n_per, 3)) for part in range(3)}
    got = consume(broker.bootstrap, topic, [0, 1, 2], expect=want, timeout=120)
    for t in threads:
        t.join()
    assert not errors, errors
    for dl in logs:
        assert not dl.failed and len(dl.acked) == n_per
    assert_dense(got)
    by_po = {(m.partition(), m.offset()): m.value() for ms in got.values() for m in ms}
    for dl in logs:
        for part, off, _k, v in dl.acked:
            assert by_po.get((part, off)) == v
    for part, msgs in got.items():
        for k in range(nprod):
            seq = [int(m.value().split(b"-")[1]) for m in msgs if m.value().startswith(b"p%d-" % k)]
            assert seq == sorted(seq), "producer %d order broken in partition %d" % (k, part)
    assert len(by_po) == n_per * nprod


def test_tiny_fetch_limits_still_make_progress(broker):
    """max.partition.fetch.bytes / fetch.max.bytes below one record: the
    broker still returns the first batch whole, so the consumer progresses."""
    topic = create_topic(broker.bootstrap, unique_topic("tinyfetch"))
    recs = [{"value": os.urandom(3000)} for _ in range(60)]
    produce_all(producer(broker.bootstrap, **{"linger.ms": 20, "compression.type": "none"}), topic, recs)
    got = consume(broker.bootstrap, topic, [0], **{"max.partition.fetch.bytes": 1000,
                                                   "fetch.max.bytes": 1000,
                                                   "message.max.bytes": 1000})[0]
    assert [m.value() for m in got] == [r["value"] for r in recs]


def test_consumer_survives_broker_restart(broker):
    """A consumer that keeps its connection through a broker restart picks
    up where it was (reconnect, metadata, leader-epoch validation) with no
    skipped or repeated offsets."""
    topic = create_topic(broker.bootstrap, unique_topic("survive"), partitions=2)
    from kafka_util import consumer
    p = producer(broker.bootstrap)
    produce_all(p, topic, [{"partition": i % 2, "value": b"a%d" % i} for i in range(200)])
    c = consumer(broker.bootstrap, **{"enable.partition.eof": False, "reconnect.backoff.ms": 20,
                                      "reconnect.backoff.max.ms": 200})
    seen = []
    try:
        c.assign([TopicPartition(topic, 0, 0), TopicPartition(topic, 1, 0)])
        import time
        deadline = time.monotonic() + 30
        while len(seen) < 200 and time.monotonic() < deadline:
            seen += [m for m in c.consume(num_messages=500, timeout=0.2) if m.error() is None]
        assert len(seen) == 200
        broker.restart()
        produce_all(producer(broker.bootstrap), topic,
                    [{"partition": i % 2, "value": b"b%d" % i} for i in range(200)])
        deadline = time.monotonic() + 60
        while len(seen) < 400 and time.monotonic() < deadline:
            for m in c.consume(num_messages=500, timeout=0.2):
                if m.error() is None:
                    seen.append(m)
                elif m.error().code() not in (KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN):
                    raise KafkaException(m.error())
    finally:
        c.close()
    for part in (0, 1):
        offs = [m.offset() for m in seen if m.partition() == part]
        assert offs == list(range(200)), "partition %d offsets after restart: %s" % (part, offs[95:110])
