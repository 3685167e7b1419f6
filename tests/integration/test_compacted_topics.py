"""cleanup.policy=compact on a live broker (issue 11 §2).

Kafka never expires the records of a compact-only topic by time or size —
Kafka Connect's config/offset/status topics and Kafka Streams changelogs rely
on it — and refuses records without a key on any compacted topic
(INVALID_RECORD, nothing of the request's partition data written). Lakestream
has no key compaction yet, so a compact topic keeps every record; that is
what these tests check, beside the topics whose policy includes "delete"."""

import time

from confluent_kafka import KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource

from kafka_util import (KAFKA_PYTHON_API_VERSION, consume, consumer, create_topic,
                        latest_per_key, produce_keyed, read_keyed, unique_topic, watermarks)
from lsbroker import wait_until

FAST = ("--log.retention.check.interval.ms=100", "--compaction.interval.ms=200",
        "--compaction.min.age.ms=0", "--wal.gc.grace.ms=0")


def _produce(bootstrap, topic, records):
    """records: [(key, value)], one batch per flush (a long linger: nothing leaves
    before the flush, so a stall between two produce calls cannot split the batch).
    Returns [(err, offset)]."""
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5000,
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
            # distinct keys: key compaction has nothing to drop here
            p.produce(t, key=b"k%d" % i, value=b"v%d" % i, partition=0, timestamp=old)
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


KC = ("--compaction.interval.ms=200", "--compaction.min.age.ms=0", "--wal.gc.grace.ms=0")


def _read_kafka_python(bootstrap, topic, last):
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KTP
    c = KafkaConsumer(bootstrap_servers=bootstrap, api_version=KAFKA_PYTHON_API_VERSION,
                      group_id=None, enable_auto_commit=False, fetch_max_wait_ms=100)
    try:
        tp = KTP(topic, 0)
        c.assign([tp])
        c.seek_to_beginning(tp)
        out = {}
        deadline = time.monotonic() + 30
        while last not in out and time.monotonic() < deadline:
            for recs in c.poll(timeout_ms=200).values():
                for r in recs:
                    out[r.offset] = (r.key, r.value)
        return out
    finally:
        c.close()


def _read_kafkajs(bootstrap, topic, last):
    import json
    import os
    import subprocess
    script = os.path.join(os.path.dirname(__file__), "js", "read_compacted.js")
    r = subprocess.run(["node", script, bootstrap, topic, str(last)], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    out = {}
    for line in r.stdout.splitlines():
        m = json.loads(line)
        out[m["offset"]] = (m["key"].encode(), None if m["value"] is None else m["value"].encode())
    return out


def test_key_compaction_keeps_the_latest_record_of_each_key(broker_factory):
    b = broker_factory(*KC)
    t = create_topic(b.bootstrap, unique_topic("kc"),
                     config={"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01"})
    model = produce_keyed(b.bootstrap, t, 600, 40, 15, seed=1)
    want = latest_per_key(model)
    assert len(want) < len(model) / 5
    # compaction runs in the background: wait until the log is exactly the model
    wait_until(lambda: read_keyed(b.bootstrap, t) == want, 60, what="key compaction")
    # a client with its own record decoder (kafka-python) reads the same: gaps
    # inside and between batches, re-encoded batches with a delete horizon
    assert _read_kafka_python(b.bootstrap, t, max(model)) == want
    # offsets are unchanged: the high watermark too; tombstones (value None)
    # stay for delete.retention.ms (a day by default)
    assert watermarks(b.bootstrap, t, [0])[0] == (0, len(model))
    assert any(v is None for _k, v in want.values())
    # a fetch at a removed offset starts at the next record present
    removed = sorted(set(model) - set(want))
    c = consumer(b.bootstrap)
    try:
        for x in removed[:: max(1, len(removed) // 5)]:
            c.assign([TopicPartition(t, 0, x)])
            msgs = []
            wait_until(lambda: msgs.extend(c.consume(10, timeout=0.2)) or msgs, 20,
                       what="a record at or after %d" % x)
            assert msgs[0].error() is None
            assert msgs[0].offset() == min(o for o in want if o > x)
    finally:
        c.close()
    # the next updates compact into the same view; a restarted broker reads it too
    more = produce_keyed(b.bootstrap, t, 200, 40, 15, seed=2)
    model.update(more)
    want = latest_per_key(model)
    wait_until(lambda: read_keyed(b.bootstrap, t) == want, 60, what="second key compaction")
    b.restart()
    assert read_keyed(b.bootstrap, t) == want


def test_kafkajs_reads_a_key_compacted_topic(broker_factory):
    b = broker_factory(*KC)
    t = create_topic(b.bootstrap, unique_topic("kcjs"),
                     config={"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01"})
    # kafkajs decodes gzip only (other codecs need plugins)
    model = produce_keyed(b.bootstrap, t, 300, 20, 15, seed=4, compression="gzip")
    want = latest_per_key(model)
    wait_until(lambda: read_keyed(b.bootstrap, t) == want, 60, what="key compaction")
    assert _read_kafkajs(b.bootstrap, t, max(model)) == want


def test_tombstones_go_after_delete_retention(broker_factory):
    b = broker_factory(*KC)
    t = create_topic(b.bootstrap, unique_topic("kctomb"),
                     config={"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0",
                             "delete.retention.ms": "500"})
    model = produce_keyed(b.bootstrap, t, 300, 30, 30, seed=3)
    want = latest_per_key(model)
    live = {o: kv for o, kv in want.items() if kv[1] is not None}
    assert len(live) < len(want)
    # the first key compaction keeps the tombstones and stamps their horizon;
    # once it has passed they go, with no further write to the topic (the
    # index entries carry the earliest horizon of their tombstones)
    wait_until(lambda: read_keyed(b.bootstrap, t) == live, 60, interval=0.2,
               what="tombstones dropped")


def test_table_enabled_after_key_compaction_backfills_what_is_left(broker_factory):
    """start.position=earliest backfills a table from compacted objects; after
    key compaction those have gaps: the table gets exactly the records left."""
    import iceberg_util
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry
    iceberg_util.local_store_only()
    b = broker_factory(*KC)
    t = create_topic(b.bootstrap, unique_topic("kctbl"),
                     config={"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01"})
    model = produce_keyed(b.bootstrap, t, 300, 20, 10, seed=5)
    want = latest_per_key(model)
    wait_until(lambda: read_keyed(b.bootstrap, t) == want, 60, what="key compaction")
    a = AdminClient({"bootstrap.servers": b.bootstrap})
    res = ConfigResource(ConfigResource.Type.TOPIC, t, incremental_configs=[
        ConfigEntry("lakestream.table.enabled", "true",
                    incremental_operation=AlterConfigOpType.SET),
        # every record left, tombstones too: an append table (upsert is the
        # default on a compacted topic)
        ConfigEntry("lakestream.table.write.mode", "append",
                    incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("lakestream.table.commit.interval.ms", "1000",
                    incremental_operation=AlterConfigOpType.SET)])
    a.incremental_alter_configs([res])[res].result(30)
    _tbl, rows, _md = iceberg_util.wait_rows(iceberg_util.table_dir(b, t), len(want), timeout=60)
    got = {o: (k, v) for o, k, v in zip(rows.column("offset").to_pylist(),
                                        rows.column("key").to_pylist(),
                                        rows.column("value").to_pylist())}
    assert got == want


def _read_committed_latest(bootstrap, topic):
    """Partition 0 read read_committed from the beginning to the LSO, latest
    value per key."""
    from confluent_kafka import Consumer
    import uuid
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "g-" + uuid.uuid4().hex,
                  "isolation.level": "read_committed", "enable.auto.commit": False,
                  "enable.partition.eof": True})
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        out, deadline = {}, time.monotonic() + 30
        while time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                assert m.error().code() == KafkaError._PARTITION_EOF, m.error()
                return out
            if m.value() is None:
                out.pop(m.key(), None)
            else:
                out[m.key()] = m.value()
        raise AssertionError("read_committed consumer never reached the end")
    finally:
        c.close()


def test_read_committed_after_aborted_markers_are_compacted_away(broker_factory):
    """Issue 29 item 2: once key compaction dropped an aborted transaction's
    marker (after delete.retention.ms, its data already gone), the aborted
    index still named the transaction, so read_committed consumers skipped
    every later batch of that producer, committed ones included (51 of 100
    keys). Kafka's cleaner drops the aborted-index entry with the marker."""
    import uuid
    b = broker_factory(*KC)
    t = create_topic(b.bootstrap, unique_topic("kctxn"),
                     config={"cleanup.policy": "compact", "delete.retention.ms": "500",
                             "min.compaction.lag.ms": "0", "max.compaction.lag.ms": "1000",
                             "min.cleanable.dirty.ratio": "0.01"})
    p = Producer({"bootstrap.servers": b.bootstrap, "transactional.id": "kt-" + uuid.uuid4().hex})
    p.init_transactions(30)

    def txn(records, commit):
        p.begin_transaction()
        for k, v in records:
            p.produce(t, key=k, value=v, partition=0)
        p.flush(30)
        (p.commit_transaction if commit else p.abort_transaction)(30)

    keys = [b"k%d" % i for i in range(100)]
    txn([(k, b"c1") for k in keys], True)
    txn([(k, b"a2") for k in keys], False)
    txn([(k, b"c3") for k in keys[:50]], True)
    txn([(k, None) for k in keys[50:]], False)
    want = {k: (b"c3" if i < 50 else b"c1") for i, k in enumerate(keys)}
    assert _read_committed_latest(b.bootstrap, t) == want
    # key compaction drops the aborted data at once and, after
    # delete.retention.ms, the markers; read_committed stays exact throughout
    def markers_gone():
        assert _read_committed_latest(b.bootstrap, t) == want
        # the first abort's marker goes; the last one is the log's last batch: kept
        return _markers_dropped(b.log_text()) >= 1
    wait_until(markers_gone, 60, interval=0.5, what="the aborted markers compacted away")
    assert _read_committed_latest(b.bootstrap, t) == want
    b.restart()   # the stored aborted index agrees (no in-memory leftover)
    assert _read_committed_latest(b.bootstrap, t) == want


def _markers_dropped(log):
    import re
    return sum(int(n) for n in re.findall(r"and (\d+) transaction markers", log))
