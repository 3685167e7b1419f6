"""Record timestamps as Kafka 4 applies them (issue 11 §3): accepted configs
are applied, not stored and ignored.

- message.timestamp.type=LogAppendTime: the broker's append time replaces the
  producer's, in fetch (timestamp type LOG_APPEND_TIME), in ListOffsets by
  time, and in the materialized table's timestamp column.
- message.timestamp.after.max.ms (Kafka 4 default: 1 h) and
  message.timestamp.before.max.ms: records outside are INVALID_TIMESTAMP and
  nothing of the batch is written."""

import time

from confluent_kafka import (TIMESTAMP_CREATE_TIME, TIMESTAMP_LOG_APPEND_TIME, KafkaError,
                             Producer, TopicPartition)

from kafka_util import consume, consumer, create_topic, unique_topic, watermarks


def _produce(bootstrap, topic, ts_list):
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 20,
                  "enable.idempotence": False, "retries": 0})
    out = []
    for ts in ts_list:
        p.produce(topic, value=b"v", partition=0, timestamp=ts,
                  on_delivery=lambda err, msg: out.append((err, msg.offset(), msg.timestamp())))
    assert p.flush(30) == 0
    return out


def test_log_append_time_replaces_the_producers_time(broker_factory):
    b = broker_factory("--compaction.min.age.ms=0", "--compaction.interval.ms=200")
    t = create_topic(b.bootstrap, unique_topic("lat"),
                     config={"message.timestamp.type": "LogAppendTime",
                             "lakestream.table.enabled": "true",
                             "lakestream.table.commit.interval.ms": "1000"})
    before = int(time.time() * 1000)
    res = _produce(b.bootstrap, t, [1_000_000_000_000, 1_000_000_000_001])   # year 2001
    after = int(time.time() * 1000)
    assert [e for e, _, _ in res] == [None, None]
    for _, _, (tstype, ts) in res:   # the delivery report carries LogAppendTimeMs
        assert tstype == TIMESTAMP_LOG_APPEND_TIME and before <= ts <= after + 1000
    got = consume(b.bootstrap, t, [0], timeout=30)[0]
    assert len(got) == 2
    for m in got:
        tstype, ts = m.timestamp()
        assert tstype == TIMESTAMP_LOG_APPEND_TIME, m.timestamp()
        assert before <= ts <= after + 1000, (before, ts, after)
    # ListOffsets by time finds them by the append time, not the producer's
    c = consumer(b.bootstrap)
    r = c.offsets_for_times([TopicPartition(t, 0, before - 1)], timeout=10)
    assert r[0].offset == 0
    r = c.offsets_for_times([TopicPartition(t, 0, 1_000_000_000_000)], timeout=10)
    assert r[0].offset == 0
    c.close()
    # the table's timestamp column holds the append time too
    from iceberg_util import local_store_only, table_dir, wait_rows
    local_store_only()
    _t, rows, _md = wait_rows(table_dir(b, t), 2, timeout=60)
    for ts in rows.column("timestamp").to_pylist():
        ms = int(ts.timestamp() * 1000)
        assert before - 1000 <= ms <= after + 1000, (before, ms, after)


def test_create_time_is_bounded_by_the_brokers_clock(broker_factory):
    b = broker_factory()
    now = int(time.time() * 1000)
    t = create_topic(b.bootstrap, unique_topic("tsbound"))
    # Kafka 4's default: at most 1 h ahead; any age
    res = _produce(b.bootstrap, t, [now + 2 * 3600_000])
    assert res[0][0] is not None and res[0][0].code() == KafkaError.INVALID_TIMESTAMP
    res = _produce(b.bootstrap, t, [now - 10 * 365 * 86400_000, now + 60_000])
    assert [e for e, _, _ in res] == [None, None]
    assert res[0][2] == (TIMESTAMP_CREATE_TIME, now - 10 * 365 * 86400_000)
    # the topic's own bounds
    t2 = create_topic(b.bootstrap, unique_topic("tsbound2"),
                      config={"message.timestamp.before.max.ms": "60000",
                              "message.timestamp.after.max.ms": "60000"})
    res = _produce(b.bootstrap, t2, [now - 3600_000])
    assert res[0][0] is not None and res[0][0].code() == KafkaError.INVALID_TIMESTAMP
    res = _produce(b.bootstrap, t2, [now + 3600_000])
    assert res[0][0] is not None and res[0][0].code() == KafkaError.INVALID_TIMESTAMP
    assert watermarks(b.bootstrap, t2, [0])[0] == (0, 0)      # nothing written
    res = _produce(b.bootstrap, t2, [now])
    assert res[0][0] is None
