"""cleanup.policy=compact on a live broker (issue 11 §2).

Kafka never expires the records of a compact-only topic by time or size —
Kafka Connect's config/offset/status topics and Kafka Streams changelogs rely
on it — and refuses records without a key on any compacted topic
(INVALID_RECORD, nothing of the request's partition data written). Lakestream
has no key compaction yet, so a compact topic keeps every record; that is
what these tests check, beside the topics whose policy includes "delete"."""

import time

from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient, ConfigResource

from kafka_util import consume, create_topic, unique_topic, watermarks

FAST = ("--log.retention.check.interval.ms=100", "--compaction.interval.ms=200",
        "--compaction.min.age.ms=0", "--wal.gc.grace.ms=0")


def _produce(bootstrap, topic, records):
    """records: [(key, value)], one batch per flush. Returns [(err, offset)]."""
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 20,
                  "enable.idempotence": False, "retries": 0})
    out = []
    for k, v in records:
        p.produce(topic, key=k, value=v, partition=0,
                  on_delivery=lambda err, msg: out.append((err, msg.offset())))
    assert p.flush(30) == 0
    return out


def _wait_low(bootstrap, topic, want_at_least, timeout):
    deadline = time.monotonic() + timeout
    low = None
    while time.monotonic() < deadline:
        low, _high = watermarks(bootstrap, topic, [0])[0]
        if low >= want_at_least:
            return low
        time.sleep(0.2)
    return low


def test_compact_topic_keeps_every_record_past_retention(broker_factory):
    b = broker_factory(*FAST)
    old = int(time.time() * 1000) - 3600_000   # an hour old: far past retention.ms
    compact = create_topic(b.bootstrap, unique_topic("cmp"),
                           config={"cleanup.policy": "compact", "retention.ms": "1000",
                                   "retention.bytes": "1"})
    both = create_topic(b.bootstrap, unique_topic("cmpdel"),
                        config={"cleanup.policy": "compact,delete", "retention.ms": "1000"})
    plain = create_topic(b.bootstrap, unique_topic("del"), config={"retention.ms": "1000"})
    for t in (compact, both, plain):
        p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all"})
        for i in range(20):
            p.produce(t, key=b"k%d" % (i % 5), value=b"v%d" % i, partition=0, timestamp=old)
            p.flush(30)     # one WAL entry each
    # retention applies to compact,delete and delete: their start moves to the end
    assert _wait_low(b.bootstrap, plain, 19, 30) >= 19
    assert _wait_low(b.bootstrap, both, 19, 30) >= 19
    # ... and the compact topic, checked by the same passes, keeps everything
    time.sleep(1.5)
    assert watermarks(b.bootstrap, compact, [0])[0] == (0, 20)
    got = consume(b.bootstrap, compact, [0], timeout=30)
    assert [m.value() for m in got[0]] == [b"v%d" % i for i in range(20)]
    # a restarted broker (fresh retention state) keeps it too
    b.restart()
    time.sleep(1.5)
    assert watermarks(b.bootstrap, compact, [0])[0] == (0, 20)


def test_compacted_topics_refuse_keyless_records(broker_factory):
    b = broker_factory()
    for policy in ("compact", "compact,delete"):
        t = create_topic(b.bootstrap, unique_topic("nokey"), config={"cleanup.policy": policy})
        # a batch with one keyless record among keyed ones: all refused
        res = _produce(b.bootstrap, t, [(b"a", b"1"), (None, b"2"), (b"c", b"3")])
        assert len(res) == 3
        for err, _off in res:
            assert err is not None and err.code() == KafkaError.INVALID_RECORD, err
        assert watermarks(b.bootstrap, t, [0])[0] == (0, 0)   # nothing written
        # keyed records still go in
        res = _produce(b.bootstrap, t, [(b"a", b"1"), (b"b", b"2")])
        assert [e for e, _ in res] == [None, None]
        assert watermarks(b.bootstrap, t, [0])[0] == (0, 2)
    # a delete topic takes keyless records
    t = create_topic(b.bootstrap, unique_topic("keyless"))
    assert [e for e, _ in _produce(b.bootstrap, t, [(None, b"x")])] == [None]


def test_cleanup_policy_change_applies_to_later_produces(broker_factory):
    b = broker_factory()
    t = create_topic(b.bootstrap, unique_topic("switch"))
    assert [e for e, _ in _produce(b.bootstrap, t, [(None, b"x")])] == [None]
    a = AdminClient({"bootstrap.servers": b.bootstrap})
    r = ConfigResource(ConfigResource.Type.TOPIC, t, set_config={"cleanup.policy": "compact"})
    for f in a.alter_configs([r]).values():
        f.result(30)
    deadline = time.monotonic() + 30
    while True:
        res = _produce(b.bootstrap, t, [(None, b"y")])
        if res[0][0] is not None or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert res[0][0] is not None and res[0][0].code() == KafkaError.INVALID_RECORD
