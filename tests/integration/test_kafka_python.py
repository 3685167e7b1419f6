"""kafka-python (pure Python client, its own protocol code) against the broker.

kafka-python sends xerial-framed snappy (like the Java client), so this also
covers the snappy framing librdkafka does not use."""

import time

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewPartitions, NewTopic

from kafka_util import DEFAULT_RF, KAFKA_PYTHON_API_VERSION, consume, create_topic, unique_topic

pytestmark = pytest.mark.store_agnostic  # the S3 stage leaves it out (pytest.ini)


CODECS = [None, "gzip", "snappy", "lz4", "zstd"]


def kp_producer(bootstrap, **kw):
    conf = dict(bootstrap_servers=bootstrap, api_version=KAFKA_PYTHON_API_VERSION,
                linger_ms=10, request_timeout_ms=20000)
    conf.update(kw)
    return KafkaProducer(**conf)


def kp_consumer(bootstrap, **kw):
    conf = dict(bootstrap_servers=bootstrap, api_version=KAFKA_PYTHON_API_VERSION,
                group_id=None, enable_auto_commit=False, request_timeout_ms=20000,
                fetch_max_wait_ms=100)
    conf.update(kw)
    return KafkaConsumer(**conf)


def kp_read_all(bootstrap, topic, partitions, want, timeout=60, **kw):
    c = kp_consumer(bootstrap, **kw)
    try:
        tps = [TopicPartition(topic, p) for p in partitions]
        c.assign(tps)
        c.seek_to_beginning(*tps)
        out = []
        deadline = time.monotonic() + timeout
        while len(out) < want:
            assert time.monotonic() < deadline, "kafka-python read %d of %d" % (len(out), want)
            for _tp, recs in c.poll(timeout_ms=200).items():
                out.extend(recs)
        return out
    finally:
        c.close()


# Pinned (2, 5, 0): classic non-flexible encodings (Produce v8, Fetch v11).
# None: kafka-python negotiates the newest versions both sides support, which
# exercises the flexible (tagged-field) encodings from an independent codec.
API_VERSIONS = [KAFKA_PYTHON_API_VERSION, None]


@pytest.mark.parametrize("api_version", API_VERSIONS, ids=["pinned", "negotiated"])
@pytest.mark.parametrize("codec", CODECS, ids=[c or "none" for c in CODECS])
def test_kafka_python_codec_roundtrip(broker, codec, api_version):
    topic = create_topic(broker.bootstrap, unique_topic("kp-%s" % (codec or "none")), partitions=2)
    p = kp_producer(broker.bootstrap, compression_type=codec, acks="all", api_version=api_version)
    futs = []
    for i in range(300):
        futs.append(p.send(topic, key=b"k%d" % (i % 5), value=b"kafka-python %d " % i * (1 + i % 4),
                           headers=[("i", str(i).encode()), ("codec", str(codec).encode())],
                           partition=i % 2, timestamp_ms=1_650_000_000_000 + i))
    p.flush(30)
    metas = [f.get(timeout=30) for f in futs]
    p.close(10)
    for part in (0, 1):
        offs = [m.offset for m in metas if m.partition == part]
        assert offs == list(range(150)), offs[:10]
    # read back with librdkafka (an independent decoder)
    got = consume(broker.bootstrap, topic, [0, 1])
    for part in (0, 1):
        msgs = got[part]
        idx = [i for i in range(300) if i % 2 == part]
        assert [m.value() for m in msgs] == [b"kafka-python %d " % i * (1 + i % 4) for i in idx]
        assert [m.key() for m in msgs] == [b"k%d" % (i % 5) for i in idx]
        assert [m.headers() for m in msgs] == [[("i", str(i).encode()), ("codec", str(codec).encode())]
                                               for i in idx]
        assert [m.timestamp()[1] for m in msgs] == [1_650_000_000_000 + i for i in idx]
    # and with kafka-python itself
    recs = kp_read_all(broker.bootstrap, topic, [0, 1], 300, api_version=api_version)
    assert sorted(r.value for r in recs) == sorted(b"kafka-python %d " % i * (1 + i % 4) for i in range(300))


def test_kafka_python_admin_and_offsets(broker):
    a = KafkaAdminClient(bootstrap_servers=broker.bootstrap, api_version=KAFKA_PYTHON_API_VERSION,
                         request_timeout_ms=20000)
    try:
        name = unique_topic("kpadmin")
        a.create_topics([NewTopic(name, num_partitions=2, replication_factor=DEFAULT_RF)])
        deadline = time.monotonic() + 20
        while name not in a.list_topics():
            assert time.monotonic() < deadline
            time.sleep(0.05)
        a.create_partitions({name: NewPartitions(total_count=3)})
    finally:
        a.close()
    p = kp_producer(broker.bootstrap)
    for i in range(30):
        p.send(name, value=b"v%d" % i, partition=i % 3, timestamp_ms=1_000_000 + i * 100)
    p.flush(30)
    p.close(10)
    c = kp_consumer(broker.bootstrap)
    try:
        tps = [TopicPartition(name, i) for i in range(3)]
        assert c.beginning_offsets(tps) == {tp: 0 for tp in tps}
        assert c.end_offsets(tps) == {tp: 10 for tp in tps}
        # partition 0 holds i = 0, 3, 6, ... with ts 1_000_000 + 300*k
        r = c.offsets_for_times({tps[0]: 1_000_000 + 300 * 4})
        assert r[tps[0]].offset == 4
        r = c.offsets_for_times({tps[0]: 1_000_000 + 300 * 4 + 1})
        assert r[tps[0]].offset == 5
        r = c.offsets_for_times({tps[0]: 9_999_999_999})
        assert r[tps[0]] is None
    finally:
        c.close()


def test_kafka_python_null_and_large(broker):
    topic = create_topic(broker.bootstrap, unique_topic("kpnull"))
    p = kp_producer(broker.bootstrap, max_request_size=2_000_000)
    vals = [None, b"", b"x" * 900_000, b"end"]
    for i, v in enumerate(vals):
        p.send(topic, key=None if i % 2 else b"key", value=v)
    p.flush(30)
    p.close(10)
    recs = kp_read_all(broker.bootstrap, topic, [0], len(vals))
    assert [r.value for r in recs] == vals
    assert [r.key for r in recs] == [b"key", None, b"key", None]


def test_kafka_python_idempotent_producer(broker):
    topic = create_topic(broker.bootstrap, unique_topic("kpidem"), partitions=2)
    p = kp_producer(broker.bootstrap, enable_idempotence=True, acks="all", compression_type="lz4")
    futs = [p.send(topic, value=b"kpi-%05d" % i, partition=i % 2) for i in range(2000)]
    p.flush(60)
    metas = [f.get(timeout=30) for f in futs]
    p.close(10)
    for part in (0, 1):
        assert [m.offset for m in metas if m.partition == part] == list(range(1000))
    got = consume(broker.bootstrap, topic, [0, 1])
    for part in (0, 1):
        assert [m.value() for m in got[part]] == [b"kpi-%05d" % i for i in range(part, 2000, 2)]
