"""ListOffsets (earliest / latest / by timestamp) and positioned reads."""

from confluent_kafka import OFFSET_END, KafkaError, TopicPartition
from confluent_kafka.admin import OffsetSpec

from kafka_util import (admin, consume, consumer, create_topic, produce_all, producer,
                        unique_topic, watermarks)

BASE_TS = 1_700_000_000_000


def _topic_with_timestamps(broker, n=100, batched=True):
    """n records, record i has timestamp BASE_TS + 10*i. batched=True lets
    many records share a batch (so lookups must look inside batches)."""
    topic = create_topic(broker.bootstrap, unique_topic("ts"))
    p = producer(broker.bootstrap, **{"linger.ms": 50 if batched else 0,
                                      "batch.num.messages": 1000 if batched else 1})
    recs = [{"value": b"m%d" % i, "timestamp": BASE_TS + 10 * i} for i in range(n)]
    if batched:
        produce_all(p, topic, recs)
    else:
        for r in recs:
            produce_all(p, topic, [r])
    return topic


def test_watermarks_empty_and_after_produce(broker):
    topic = create_topic(broker.bootstrap, unique_topic("wm"), partitions=2)
    assert watermarks(broker.bootstrap, topic, [0, 1]) == {0: (0, 0), 1: (0, 0)}
    produce_all(producer(broker.bootstrap), topic, [{"partition": 1, "value": b"x"}] * 7)
    assert watermarks(broker.bootstrap, topic, [0, 1]) == {0: (0, 0), 1: (0, 7)}


def test_list_offsets_admin_earliest_latest(broker):
    topic = create_topic(broker.bootstrap, unique_topic("lo"), partitions=3)
    produce_all(producer(broker.bootstrap), topic,
                [{"partition": p, "value": b"v"} for p in range(3) for _ in range(p * 4)])
    a = admin(broker.bootstrap)
    for spec, want in ((OffsetSpec.earliest(), {0: 0, 1: 0, 2: 0}),
                       (OffsetSpec.latest(), {0: 0, 1: 4, 2: 8})):
        fs = a.list_offsets({TopicPartition(topic, p): spec for p in range(3)})
        got = {tp.partition: f.result(30).offset for tp, f in fs.items()}
        assert got == want


def _offsets_for_times(broker, topic, ts_list):
    c = consumer(broker.bootstrap)
    try:
        r = c.offsets_for_times([TopicPartition(topic, 0, ts) for ts in ts_list], timeout=15)
        for tp in r:
            assert tp.error is None, tp.error
        return [tp.offset for tp in r]
    finally:
        c.close()


def test_offsets_for_times_across_batches(broker):
    topic = _topic_with_timestamps(broker, n=30, batched=False)
    # exact hit, between two records, before the first, after the last
    assert _offsets_for_times(broker, topic, [BASE_TS + 50]) == [5]
    assert _offsets_for_times(broker, topic, [BASE_TS + 55]) == [6]
    assert _offsets_for_times(broker, topic, [0]) == [0]
    assert _offsets_for_times(broker, topic, [BASE_TS + 10 * 30]) == [OFFSET_END]


def test_offsets_for_times_inside_batch(broker):
    """Kafka answers with the first record whose timestamp >= target even
    when it sits in the middle of a batch."""
    topic = _topic_with_timestamps(broker, n=100, batched=True)
    assert _offsets_for_times(broker, topic, [BASE_TS + 10 * 37]) == [37]
    assert _offsets_for_times(broker, topic, [BASE_TS + 10 * 37 + 1]) == [38]
    assert _offsets_for_times(broker, topic, [BASE_TS + 10 * 99]) == [99]
    assert _offsets_for_times(broker, topic, [BASE_TS + 10 * 100]) == [OFFSET_END]


def test_list_offsets_admin_for_timestamp(broker):
    topic = _topic_with_timestamps(broker, n=40, batched=True)
    a = admin(broker.bootstrap)
    tp = TopicPartition(topic, 0)
    r = a.list_offsets({tp: OffsetSpec.for_timestamp(BASE_TS + 10 * 12)})[tp].result(30)
    assert r.offset == 12
    assert r.timestamp == BASE_TS + 10 * 12


def test_consume_from_middle(broker):
    topic = create_topic(broker.bootstrap, unique_topic("mid"))
    produce_all(producer(broker.bootstrap, **{"linger.ms": 20}), topic,
                [{"value": b"m%d" % i} for i in range(100)])
    for start in (37, 0, 99):
        got = consume(broker.bootstrap, topic, [0], start=start)[0]
        assert [m.offset() for m in got] == list(range(start, 100))
        assert [m.value() for m in got] == [b"m%d" % i for i in range(start, 100)]


def test_consume_from_end_waits_for_new(broker):
    topic = create_topic(broker.bootstrap, unique_topic("tail"))
    produce_all(producer(broker.bootstrap), topic, [{"value": b"old"}])
    c = consumer(broker.bootstrap, **{"enable.partition.eof": False})
    try:
        c.assign([TopicPartition(topic, 0, OFFSET_END)])
        assert [m for m in c.consume(num_messages=10, timeout=1.0) if m.error() is None] == []
        produce_all(producer(broker.bootstrap), topic, [{"value": b"new"}])
        got = []
        for _ in range(50):
            got += [m for m in c.consume(num_messages=10, timeout=0.2) if m.error() is None]
            if got:
                break
        assert [(m.offset(), m.value()) for m in got] == [(1, b"new")]
    finally:
        c.close()


def test_fetch_offset_out_of_range(broker):
    """Fetching past the end is OFFSET_OUT_OF_RANGE; with
    auto.offset.reset=error librdkafka surfaces it."""
    topic = create_topic(broker.bootstrap, unique_topic("oor"))
    produce_all(producer(broker.bootstrap), topic, [{"value": b"x"}] * 3)
    c = consumer(broker.bootstrap, **{"auto.offset.reset": "error", "enable.partition.eof": False})
    try:
        c.assign([TopicPartition(topic, 0, 1000)])
        err = None
        for _ in range(50):
            for m in c.consume(num_messages=1, timeout=0.2):
                if m.error() is not None:
                    err = m.error()
            if err:
                break
        assert err is not None and err.code() in (KafkaError._AUTO_OFFSET_RESET,
                                                  KafkaError.OFFSET_OUT_OF_RANGE), err
    finally:
        c.close()


def test_out_of_range_resets_to_earliest(broker):
    topic = create_topic(broker.bootstrap, unique_topic("reset"))
    produce_all(producer(broker.bootstrap), topic, [{"value": b"r%d" % i} for i in range(5)])
    got = consume(broker.bootstrap, topic, [0], start=500, expect={0: 5},
                  **{"auto.offset.reset": "earliest"})[0]
    assert [m.offset() for m in got] == [0, 1, 2, 3, 4]
