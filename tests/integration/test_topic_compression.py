"""A topic's compression.type, applied as Kafka applies it: 'producer' keeps
batches as the producer sent them; a codec (or 'uncompressed') makes the
broker store every batch sent in another codec recompressed, with its
offsets, timestamps, headers and producer sequence unchanged; the
compression.<codec>.level configs set the level. librdkafka's admin test
(0081) creates topics with compression.type set and used to be refused."""
import glob
import os
import socket
import struct
import subprocess

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import ConfigResource

from kafka_util import admin, consume, create_topic, produce_all, producer, unique_topic
import lsbroker

CODEC_IDS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
TOPIC_CODECS = {"uncompressed": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def _stored_codecs(bootstrap, topic, partition=0):
    """The codec bits of every data batch the broker serves for the partition
    (transaction markers are never compressed, on Kafka either)."""
    return [b[22] & 7 for b in _stored_batches(bootstrap, topic, partition) if not b[22] & 0x20]


def _stored_batches(bootstrap, topic, partition=0):
    """Every batch the broker serves for the partition, as bytes (a raw
    Fetch v4: what is stored, as a consumer receives it)."""
    host, port = bootstrap.split(":")
    s = socket.create_connection((host, int(port)), timeout=10)
    try:
        tname = topic.encode()
        body = struct.pack(">iiiib", -1, 100, 1, 64 << 20, 0)
        body += struct.pack(">ih", 1, len(tname)) + tname
        body += struct.pack(">iiqi", 1, partition, 0, 64 << 20)
        client = b"codec-probe"
        req = struct.pack(">hhih", 1, 4, 7, len(client)) + client + body
        s.sendall(struct.pack(">i", len(req)) + req)
        size = struct.unpack(">i", _read(s, 4))[0]
        resp = _read(s, size)
    finally:
        s.close()
    pos = 4 + 4  # correlation id, throttle time
    ntopics = struct.unpack_from(">i", resp, pos)[0]
    pos += 4
    assert ntopics == 1
    nlen = struct.unpack_from(">h", resp, pos)[0]
    pos += 2 + nlen + 4  # name, partition count
    pos += 4  # partition index
    err = struct.unpack_from(">h", resp, pos)[0]
    assert err == 0, err
    pos += 2 + 8 + 8
    naborted = struct.unpack_from(">i", resp, pos)[0]
    pos += 4 + max(naborted, 0) * 16
    rlen = struct.unpack_from(">i", resp, pos)[0]
    pos += 4
    records, batches, p = resp[pos:pos + rlen], [], 0
    while p + 61 <= len(records):
        blen = struct.unpack_from(">i", records, p + 8)[0]
        if p + 12 + blen > len(records):
            break  # a partial batch at the end of the response
        batches.append(records[p:p + 12 + blen])
        p += 12 + blen
    return batches


def _read(s, n):
    out = b""
    while len(out) < n:
        chunk = s.recv(n - len(out))
        assert chunk, "connection closed"
        out += chunk
    return out


def _records(n):
    return [{"key": b"k%d" % i, "value": (b"value-%d-" % i) * 20,
             "headers": [("h", b"%d" % i)], "partition": 0} for i in range(n)]


@pytest.mark.parametrize("topic_codec", sorted(TOPIC_CODECS))
def test_topic_codec_recompresses_what_producers_send(broker, topic_codec):
    t = create_topic(broker.bootstrap, unique_topic("cmp-" + topic_codec),
                     config={"compression.type": topic_codec})
    sent = []
    for producer_codec in ("none", "gzip", "snappy", "lz4", "zstd"):
        recs = _records(50)
        for r in recs:
            r["value"] = producer_codec.encode() + b":" + r["value"]
        # the client's defaults otherwise (idempotent where it is by default)
        produce_all(producer(broker.bootstrap, **{"compression.type": producer_codec,
                                                  "linger.ms": 50}), t, recs)
        sent += recs
    assert set(_stored_codecs(broker.bootstrap, t)) == {TOPIC_CODECS[topic_codec]}
    got = consume(broker.bootstrap, t, [0])[0]
    assert [m.offset() for m in got] == list(range(len(sent)))
    assert [(m.key(), m.value(), m.headers()) for m in got] == \
        [(r["key"], r["value"], r["headers"]) for r in sent]


def test_producer_keeps_each_batch_as_sent(broker):
    t = create_topic(broker.bootstrap, unique_topic("cmp-producer"))
    for codec in ("none", "gzip", "lz4", "zstd"):
        produce_all(producer(broker.bootstrap, **{"compression.type": codec, "linger.ms": 50}),
                    t, _records(20))
    codecs = _stored_codecs(broker.bootstrap, t)
    runs = [c for i, c in enumerate(codecs) if i == 0 or c != codecs[i - 1]]
    assert runs == [0, 1, 3, 4]  # each producer's batches (one or more) as it sent them


def test_idempotent_and_transactional_batches_keep_their_sequence(broker):
    """Recompression keeps producer id, epoch and sequence: a retried batch is
    still recognised as a duplicate, and transactions commit."""
    from confluent_kafka import Producer
    t = create_topic(broker.bootstrap, unique_topic("cmp-txn"),
                     config={"compression.type": "zstd"})
    p = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "cmp-" + t,
                  "compression.type": "gzip"})
    p.init_transactions(30)
    for round_ in range(3):
        p.begin_transaction()
        for i in range(100):
            p.produce(t, b"r%d-%d" % (round_, i), partition=0)
        p.commit_transaction(30)
    got = consume(broker.bootstrap, t, [0], expect={0: 300},
                  **{"isolation.level": "read_committed"})[0]
    assert [m.value() for m in got] == [b"r%d-%d" % (r, i) for r in range(3) for i in range(100)]
    assert set(_stored_codecs(broker.bootstrap, t)) == {4}


def test_levels_are_applied_and_bad_values_refused(broker):
    """zlib writes the level class into the gzip header (XFL, its 9th byte):
    2 for the best compression (level 9), 4 for the fastest (level 1)."""
    data = [{"value": b"abcdefgh" * 200 + b"%d" % i, "partition": 0} for i in range(50)]
    for level, xfl in (("1", 4), ("9", 2)):
        t = create_topic(broker.bootstrap, unique_topic("cmp-lvl"),
                         config={"compression.type": "gzip", "compression.gzip.level": level})
        produce_all(producer(broker.bootstrap, **{"compression.type": "none", "linger.ms": 50}),
                    t, data)
        batches = _stored_batches(broker.bootstrap, t)
        assert batches and all(b[22] & 7 == 1 and b[61:63] == b"\x1f\x8b" and b[61 + 8] == xfl
                               for b in batches), (level, [b[61:71].hex() for b in batches])
        assert [m.value() for m in consume(broker.bootstrap, t, [0])[0]] == \
            [r["value"] for r in data]
    a = admin(broker.bootstrap)
    res = ConfigResource(ConfigResource.Type.TOPIC, t)
    res.set_config("compression.type", "brotli")
    with pytest.raises(KafkaException) as ei:
        a.alter_configs([res])[res].result(30)
    assert "compression.type" in ei.value.args[0].str()


@pytest.mark.skipif(not glob.glob(os.path.join(lsbroker.ROOT, ".cache/java/tools/kafka-tools-*.jar")),
                    reason="Kafka's tools not installed (tools/install-deps.sh test)")
@pytest.mark.parametrize("topic_codec", ["snappy", "lz4"])
def test_kafkas_own_consumer_reads_recompressed_batches(broker, topic_codec):
    """Kafka's Java consumer (ConsoleConsumer) decodes what the broker wrote:
    snappy as a raw block, lz4 as a standard frame."""
    t = create_topic(broker.bootstrap, unique_topic("cmp-java"),
                     config={"compression.type": topic_codec})
    produce_all(producer(broker.bootstrap, **{"compression.type": "none", "linger.ms": 50}), t,
                [{"value": b"hello-%d" % i, "partition": 0} for i in range(100)])
    r = subprocess.run(["java", "-cp", os.path.join(lsbroker.ROOT, ".cache/java/tools/*"),
                        "org.apache.kafka.tools.consumer.ConsoleConsumer",
                        "--bootstrap-server", broker.bootstrap, "--topic", t, "--from-beginning",
                        "--max-messages", "100", "--timeout-ms", "30000"],
                       capture_output=True, text=True, timeout=120)
    assert r.stdout.split() == ["hello-%d" % i for i in range(100)], r.stderr[-2000:]
