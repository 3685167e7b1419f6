"""Retention and DeleteRecords on a live broker, with real clients.

retention.ms / retention.bytes advance the log start offset over whole index
entries: ListOffsets EARLIEST returns the new start, a fetch below it answers
OFFSET_OUT_OF_RANGE (so auto.offset.reset=earliest consumers move on), the
objects holding only trimmed data leave the object store, and every later
record is still read exactly once. DeleteRecords (AdminClient.delete_records)
moves the start to an exact offset. Trimming a table-enabled topic never
removes table rows. A kill -9 while retention runs loses nothing above the
new start and shows nothing below it."""

import os
import time

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_util import create_topic, unique_topic, wait_topic, watermarks

FAST = ("--log.retention.check.interval.ms=100", "--compaction.interval.ms=200",
        "--wal.gc.grace.ms=0", "--compaction.lease.ttl.ms=2000")


def _local_store_only():
    if os.environ.get("LS_TEST_OBJECT_STORE", "file") not in ("", "file"):
        pytest.skip("inspects the local object directory")


def _objects(data_dir, sub):
    root = os.path.join(data_dir, "objects", sub)
    out = set()
    for d, _, files in os.walk(root):
        out |= {os.path.relpath(os.path.join(d, f), root) for f in files}
    return out


def _produce_batches(bootstrap, topic, first, batches, per_batch, ts=None):
    """One RecordBatch, one produce request and so one WAL entry per batch
    (linger collects it, flush sends it alone); value i is b"v<i>" for the
    i-th record overall. Returns {i: acked offset}."""
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 50})
    acked = {}

    def dr(err, msg):
        assert err is None, err
        acked[int(msg.value()[1:])] = msg.offset()

    i = first
    for _ in range(batches):
        for _ in range(per_batch):
            kw = {"timestamp": ts} if ts is not None else {}
            p.produce(topic, value=b"v%d" % i, partition=0, on_delivery=dr, **kw)
            i += 1
        assert p.flush(30) == 0
    return acked


def _wait(cond, timeout, what):
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        assert time.monotonic() < deadline, "timed out after %ss waiting for %s" % (timeout, what)
        time.sleep(0.1)


def _low(bootstrap, topic):
    return watermarks(bootstrap, topic, [0])[0][0]


def _read_from(bootstrap, topic, offset, reset="earliest", timeout=60):
    """Reads partition 0 from `offset` to the high watermark with the given
    auto.offset.reset; returns [(offset, value)]."""
    hi = watermarks(bootstrap, topic, [0])[0][1]
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": unique_topic("g"),
                  "enable.auto.commit": False, "auto.offset.reset": reset,
                  "enable.partition.eof": True, "fetch.wait.max.ms": 100})
    try:
        c.assign([TopicPartition(topic, 0, offset)])
        out = []
        deadline = time.monotonic() + timeout
        while not out or out[-1][0] < hi - 1:
            assert time.monotonic() < deadline, "read %d records, last %s, want up to %d" % (
                len(out), out[-1:] or None, hi - 1)
            for m in c.consume(num_messages=500, timeout=0.2):
                if m.error():
                    if m.error().code() == KafkaError._PARTITION_EOF:
                        if hi == 0 or m.offset() >= hi:
                            return out
                        continue
                    raise KafkaException(m.error())
                out.append((m.offset(), m.value()))
        return out
    finally:
        c.close()


def test_retention_ms_advances_earliest_and_frees_objects(broker_factory):
    _local_store_only()
    b = broker_factory(*FAST)
    topic = create_topic(b.bootstrap, unique_topic("ret-ms"), config={"retention.ms": "600000"})
    old = int(time.time() * 1000) - 3600 * 1000
    before = _objects(b.data_dir, "wal")
    acked_old = _produce_batches(b.bootstrap, topic, 0, 5, 20, ts=old)
    old_objects = _objects(b.data_dir, "wal") - before
    assert old_objects
    acked_new = _produce_batches(b.bootstrap, topic, 100, 3, 20)
    assert sorted(acked_old.values()) == list(range(100))
    # the hour-old records expire; the fresh ones stay
    _wait(lambda: _low(b.bootstrap, topic) == 100, 30, "earliest offset 100")
    assert watermarks(b.bootstrap, topic, [0])[0] == (100, 160)
    # their WAL objects are released and garbage-collected
    _wait(lambda: not (old_objects & _objects(b.data_dir, "wal")), 30,
          "the trimmed WAL objects to be deleted")
    # a consumer at offset 0 gets OFFSET_OUT_OF_RANGE and resets to the start,
    # then sees every later record exactly once
    got = _read_from(b.bootstrap, topic, 0)
    assert [o for o, _ in got] == list(range(100, 160))
    assert {int(v[1:]): o for o, v in got} == acked_new
    # a consumer that refuses to reset sees the error
    with pytest.raises(KafkaException) as ei:
        _read_from(b.bootstrap, topic, 5, reset="error", timeout=10)
    assert ei.value.args[0].code() in (KafkaError.OFFSET_OUT_OF_RANGE, KafkaError._AUTO_OFFSET_RESET)


def test_retention_bytes_keeps_the_newest_entries(broker_factory):
    b = broker_factory(*FAST)
    # retention.bytes=1: an entry goes while what stays is still >= 1 byte,
    # so exactly the newest index entry (the last flush) remains
    topic = create_topic(b.bootstrap, unique_topic("ret-bytes"), config={"retention.bytes": "1"})
    _produce_batches(b.bootstrap, topic, 0, 6, 10)
    _wait(lambda: _low(b.bootstrap, topic) == 50, 30, "earliest offset 50")
    got = _read_from(b.bootstrap, topic, 0)
    assert [v for _, v in got] == [b"v%d" % i for i in range(50, 60)]


def test_delete_records(broker_factory):
    b = broker_factory(*FAST)
    topic = create_topic(b.bootstrap, unique_topic("delrec"), partitions=2)
    _produce_batches(b.bootstrap, topic, 0, 4, 10)
    a = AdminClient({"bootstrap.servers": b.bootstrap})

    def delete(offset, partition=0):
        fs = a.delete_records([TopicPartition(topic, partition, offset)])
        return list(fs.values())[0].result(30)

    # inside a batch: the start is exactly 25
    assert delete(25).low_watermark == 25
    assert watermarks(b.bootstrap, topic, [0])[0] == (25, 40)
    got = _read_from(b.bootstrap, topic, 0)
    assert [o for o, _ in got] == list(range(25, 40))
    assert got[0][1] == b"v25"
    # below the start: no change
    assert delete(10).low_watermark == 25
    # beyond the high watermark: OFFSET_OUT_OF_RANGE
    with pytest.raises(KafkaException) as ei:
        delete(41)
    assert ei.value.args[0].code() == KafkaError.OFFSET_OUT_OF_RANGE
    # -1 (OFFSET_END): everything so far; new records still flow
    assert delete(-1).low_watermark == 40
    _produce_batches(b.bootstrap, topic, 40, 1, 5)
    got = _read_from(b.bootstrap, topic, 0)
    assert [o for o, _ in got] == list(range(40, 45))
    # an empty partition: -1 is a no-op at 0
    assert delete(-1, partition=1).low_watermark == 0
    # survives a restart
    b.restart()
    assert watermarks(b.bootstrap, topic, [0])[0] == (40, 45)


def _table_topic(b, prefix, retention_ms):
    """A one-partition raw table topic, 1 s commits, the given retention.ms."""
    topic = unique_topic(prefix)
    a = AdminClient({"bootstrap.servers": b.bootstrap})
    fs = a.create_topics([NewTopic(topic, 1, 1, config={
        "lakestream.table.enabled": "true", "lakestream.table.commit.interval.ms": "1000",
        "retention.ms": str(retention_ms)})])
    fs[topic].result(30)
    wait_topic(b.bootstrap, topic, 1)
    return topic


def test_trimming_a_table_topic_keeps_its_rows(broker_factory):
    _local_store_only()
    pyiceberg_table = pytest.importorskip("pyiceberg.table")
    import glob
    import re
    b = broker_factory(*FAST, "--compaction.min.age.ms=0")
    topic = _table_topic(b, "ret-table", 60000)
    # records from 2023: expired the moment they arrive
    _produce_batches(b.bootstrap, topic, 0, 6, 50, ts=1_700_000_000_000)
    _wait(lambda: _low(b.bootstrap, topic) == 300, 60, "the log to be trimmed to 300")
    table_dir = os.path.join(b.data_dir, "objects", "warehouse", "default", topic)
    mds = glob.glob(os.path.join(table_dir, "metadata", "v*.metadata.json"))
    md = max(mds, key=lambda f: int(re.search(r"v(\d+)\.metadata\.json$", f).group(1)))
    rows = pyiceberg_table.StaticTable.from_metadata("file://" + md).scan().to_arrow().to_pylist()
    assert sorted(r["offset"] for r in rows) == list(range(300))
    assert sorted(r["value"] for r in rows) == sorted(b"v%d" % i for i in range(300))
    # the log holds nothing any more: no index entry is left (its ranges were
    # in-table entries by default, compacted objects otherwise) and no
    # compacted object
    from test_compaction import _index_entries_per_log
    _wait(lambda: not any(_index_entries_per_log(b.data_dir).values()), 30,
          "the trimmed index entries to go")
    assert not _objects(b.data_dir, "co")


def test_in_table_entries_stop_growing_at_a_tenth_of_retention(broker_factory):
    """table.cold.reads=table (the default): a range of a raw table topic
    extends the in-table index entry before it instead of adding one per
    pass, but only while the entry's records stay within a tenth of
    retention.ms, since retention trims whole entries. One batch per commit
    interval (about 1.2 s apart), each stamped 27 s before it is sent,
    retention 30 s (span 3 s): each batch expires about 3 s after it was
    sent, so while batches keep coming the log start moves up a few batches
    at a time. An entry that absorbed
    every range would carry the newest timestamp and expire only as a whole,
    3 s after the last batch."""
    _local_store_only()
    b = broker_factory(*FAST, "--compaction.min.age.ms=0")
    topic = _table_topic(b, "ret-span", 30000)
    lows = []
    for i in range(10):
        _produce_batches(b.bootstrap, topic, i * 10, 1, 10, ts=int(time.time() * 1000) - 27000)
        time.sleep(1.1)  # one pass (one table commit) per batch
        lows.append(_low(b.bootstrap, topic))
    # trimmed whole entries at a time, while later batches were still kept
    assert any(0 < low < 90 for low in lows), lows
    assert all(low % 10 == 0 for low in lows), lows
    low = _low(b.bootstrap, topic)
    if low < 100:
        got = _read_from(b.bootstrap, topic, low)
        assert got[:1] == [(low, b"v%d" % low)] and got == [(k, b"v%d" % k)
                                                              for k in range(low, low + len(got))]


def test_kill9_during_retention(broker_factory):
    _local_store_only()
    common = ["--wal.gc.grace.ms=0", "--compaction.lease.ttl.ms=2000"]
    b = broker_factory(*common, "--log.retention.check.interval.ms=86400000",
                       "--compaction.min.age.ms=0", "--compaction.interval.ms=200",
                       "--compaction.max.entries=8")
    topic = create_topic(b.bootstrap, unique_topic("ret-crash"), config={"retention.ms": "600000"})
    old = int(time.time() * 1000) - 3600 * 1000
    acked = _produce_batches(b.bootstrap, topic, 0, 60, 5, ts=old)     # 0..299: expired
    _wait(lambda: len(_objects(b.data_dir, "co")) >= 7, 30, "compacted objects of 0..299")
    b.stop()
    # the rest stays in WAL objects: the trim covers both kinds of entries
    b.extra_args = b.extra_args[:len(b.extra_args) - 4] + [
        "--log.retention.check.interval.ms=86400000", "--compaction.enabled=false"]
    base_args = list(b.extra_args)
    b.start()
    acked.update(_produce_batches(b.bootstrap, topic, 300, 60, 5, ts=old))   # 300..599: expired
    acked.update(_produce_batches(b.bootstrap, topic, 600, 20, 5))           # 600..699: fresh
    assert sorted(acked.values()) == list(range(700))
    b.stop()
    # retention on, with a slow metadata store so the trim (several txns of
    # up to 31 entries) takes a second or two and the kills land inside it
    meta = os.path.join(b.data_dir, "meta.db")
    slow = base_args[:-2] + ["--compaction.enabled=false", "--log.retention.check.interval.ms=100"]
    lows = []
    for delay in (0.3, 0.6, 0.9, 1.2, 1.5):
        b.extra_args = slow + ["--metadata.url=faulty+sqlite://%s?latency_p50_ms=8" % meta]
        b.start()
        time.sleep(delay)
        b.kill9()
        b.extra_args = base_args
        b.start()
        low, high = watermarks(b.bootstrap, topic, [0])[0]
        assert high == 700, "high watermark %d after a crash, want 700" % high
        assert low >= (lows[-1] if lows else 0), "log start went back: %s -> %d" % (lows, low)
        lows.append(low)
        # nothing below the start is visible ...
        if low > 0:
            with pytest.raises(KafkaException) as ei:
                _read_from(b.bootstrap, topic, low - 1, reset="error", timeout=10)
            assert ei.value.args[0].code() in (KafkaError.OFFSET_OUT_OF_RANGE,
                                               KafkaError._AUTO_OFFSET_RESET)
        # ... and every offset from it on is there exactly once, with its value
        got = _read_from(b.bootstrap, topic, low)
        assert [o for o, _ in got] == list(range(low, 700))
        assert all(acked[int(v[1:])] == o for o, v in got)
        b.stop()
    print("log start after each kill -9:", lows)
    b.extra_args = slow
    b.start()
    _wait(lambda: _low(b.bootstrap, topic) == 600, 60, "retention to finish at 600")
    got = _read_from(b.bootstrap, topic, 0)
    assert [o for o, _ in got] == list(range(600, 700))
    assert all(acked[int(v[1:])] == o for o, v in got)
    # nothing of the trimmed range is left in the object store
    _wait(lambda: not _objects(b.data_dir, "co"), 30, "trimmed COs to be deleted")
    _wait(lambda: len(_objects(b.data_dir, "wal")) <= 20, 30, "trimmed WAL objects to be deleted")


def test_two_brokers_share_retention_and_both_see_the_new_start(cluster):
    """Two brokers over one etcd prefix: their compactors contend for the
    partition (one owner at a time); the broker that did not make the final
    trim learns the new start through its metadata watch: once the trimming
    broker is stopped, the survivor serves the trimmed log without a restart."""
    # the default hot window keeps the entries apart: a compacted object
    # merging old and fresh records would be kept until its newest expires
    flags = ["--http.listen=", "--log.retention.check.interval.ms=100",
             "--compaction.interval.ms=200", "--wal.gc.grace.ms=0",
             "--compaction.lease.ttl.ms=2000", "--broker.session.timeout.ms=2000"]
    nodes = [cluster.add(*flags) for _ in range(2)]
    topic = create_topic(nodes[0].bootstrap, unique_topic("ret-cluster"),
                         config={"retention.ms": "600000"})
    old = int(time.time() * 1000) - 3600 * 1000
    _produce_batches(nodes[0].bootstrap, topic, 0, 10, 10, ts=old)
    acked = _produce_batches(nodes[1].bootstrap, topic, 100, 5, 10)
    _wait(lambda: watermarks(nodes[0].bootstrap, topic, [0])[0] == (100, 150), 30,
          "the leader to report (100, 150)")
    trimmers = _wait(lambda: [i for i, b in enumerate(nodes)
                              if "log start now 100 " in b.log_text()], 10, "the trim's log line")
    assert len(trimmers) == 1, "the final trim was made %d times" % len(trimmers)
    nodes[trimmers[0]].stop()
    survivor = nodes[1 - trimmers[0]]

    def served_by_survivor():
        m = AdminClient({"bootstrap.servers": survivor.bootstrap}).list_topics(topic=topic,
                                                                             timeout=10)
        return m.topics[topic].partitions[0].leader == 2 - trimmers[0]
    _wait(served_by_survivor, 30, "the survivor to lead the partition")
    assert watermarks(survivor.bootstrap, topic, [0])[0] == (100, 150)
    got = _read_from(survivor.bootstrap, topic, 0)
    assert [o for o, _ in got] == list(range(100, 150))
    assert {int(v[1:]): o for o, v in got} == acked


def test_delete_topics_gives_its_storage_back(broker_factory):
    """Regression (issue 17 §5): compacted objects, WAL objects and index
    entries of deleted topics stayed forever (compaction, retention and trim
    all skipped deleted logs). A deleted topic's logs are now trimmed to their
    end in the background: the object store is back to what it held before."""
    _local_store_only()
    b = broker_factory(*FAST, "--compaction.min.age.ms=0")
    keep = create_topic(b.bootstrap, unique_topic("keep"), partitions=1)
    _produce_batches(b.bootstrap, keep, 0, 3, 10)
    _wait(lambda: not _objects(b.data_dir, "wal"), 30, "the kept topic compacted")
    baseline = _objects(b.data_dir, "co") | _objects(b.data_dir, "wal")
    gone = create_topic(b.bootstrap, unique_topic("gone"), partitions=2)
    _produce_batches(b.bootstrap, gone, 0, 20, 50)
    _wait(lambda: len(_objects(b.data_dir, "co") - baseline) > 0, 30, "compacted objects")
    a = AdminClient({"bootstrap.servers": b.bootstrap})
    for f in a.delete_topics([gone]).values():
        f.result(30)
    _wait(lambda: (_objects(b.data_dir, "co") | _objects(b.data_dir, "wal")) == baseline, 60,
          "the deleted topic's objects removed")
    # the kept topic is untouched
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": unique_topic("g"),
                  "auto.offset.reset": "earliest"})
    c.assign([TopicPartition(keep, 0, 0)])
    n = 0
    deadline = time.monotonic() + 30
    while n < 30 and time.monotonic() < deadline:
        n += sum(1 for m in c.consume(100, timeout=0.5) if m.error() is None)
    c.close()
    assert n == 30


def test_deleted_topic_storage_goes_after_file_delete_delay_not_the_retention_check(
        broker_factory):
    """A deleted topic's storage used to come back only at the next retention
    check (log.retention.check.interval.ms, 5 minutes by default). As Kafka
    deletes a deleted topic's files file.delete.delay.ms after the deletion
    (default 60000), the broker that deleted it reclaims it then: here the
    topic's delay is 0 and the retention check keeps its 5-minute default."""
    _local_store_only()
    b = broker_factory("--compaction.interval.ms=200", "--wal.gc.grace.ms=0",
                       "--compaction.lease.ttl.ms=2000", "--compaction.min.age.ms=0")
    gone = create_topic(b.bootstrap, unique_topic("gone"), partitions=2,
                        config={"file.delete.delay.ms": "0"})
    _produce_batches(b.bootstrap, gone, 0, 20, 50)
    _wait(lambda: _objects(b.data_dir, "co") and not _objects(b.data_dir, "wal"), 60,
          "the topic compacted")
    a = AdminClient({"bootstrap.servers": b.bootstrap})
    for f in a.delete_topics([gone]).values():
        f.result(30)
    # well inside the 5-minute retention check
    _wait(lambda: not (_objects(b.data_dir, "co") | _objects(b.data_dir, "wal")), 120,
          "the deleted topic's objects removed")
    # the line follows the deletes it reports (later still under ASan)
    _wait(lambda: "storage reclaimed" in b.log_text(), 30, "the reclaim logged")
