"""Cold reads of a raw table topic from its table (issue 13, table.cold.reads).

With table.cold.reads=table, the compaction pass leaves the ranges of a raw,
append-mode table topic only in the table's Parquet files (index entries of
kind 3, no compacted object): the data is written twice (WAL + Parquet), not
three times. A restarted broker (cold cache) then serves every record from
the rows, byte-exact: keys and values (null vs empty), headers (repeated
keys, null values), timestamps of CreateTime and LogAppendTime topics, from
offset 0, from the middle, by timestamp; through a data-file rewrite and
snapshot expiry; after DeleteRecords and retention nothing below the log
start comes back. Runs on the file store and, with LS_TEST_OBJECT_STORE=s3,
on radosgw."""

import os
import random
import re
import sqlite3
import time

import pytest
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource

import kafka_util as ku

FAST = ("--compaction.min.age.ms=0", "--compaction.interval.ms=200", "--wal.gc.grace.ms=0",
        "--read.ahead.bytes=64KiB", "--read.cache.max.bytes=1MiB",
        "--log.retention.check.interval.ms=300")
COLD = ("--table.cold.reads=table",) + FAST
TABLE = {"lakestream.table.enabled": "true", "lakestream.table.commit.interval.ms": "1000"}
PARTS = 2
T0 = int(time.time() * 1000) - 3_600_000  # an hour ago: inside the default retention


def _index_kinds(data_dir):
    """{kind: count} of every log index entry in the broker's metadata (the
    second byte of an entry's value; SQLite is local whatever the store)."""
    db = sqlite3.connect("file:%s?mode=ro" % os.path.join(data_dir, "meta.db"), uri=True,
                         timeout=30)
    try:
        rows = db.execute("SELECT key, val FROM kv WHERE key >= CAST('/ls/log/' AS BLOB)"
                          " AND key < CAST('/ls/log0' AS BLOB)").fetchall()
    finally:
        db.close()
    kinds = {}
    for k, v in rows:
        if b"/idx/" in bytes(k):
            kinds[bytes(v)[1]] = kinds.get(bytes(v)[1], 0) + 1
    return kinds


def _wait_all_in_table(b, timeout=90):
    """Until every index entry is of kind 3 (in the table)."""
    deadline = time.monotonic() + timeout
    while True:
        kinds = _index_kinds(b.data_dir)
        if kinds and set(kinds) == {3}:
            return kinds
        assert time.monotonic() < deadline, "index entry kinds %s, want only 3" % kinds
        time.sleep(0.2)


def _no_compacted_objects(b):
    files = sorted(b.object_keys("co"))
    assert not files, "compacted objects written: %s" % files[:5]
    assert 1 not in _index_kinds(b.data_dir)


def _record(rnd, part, i):
    """A record whose key, value and headers cover the edge cases."""
    k = i % 7
    key = None if k == 0 else (b"" if k == 1 else b"key-%d-%d" % (part, i))
    v = i % 11
    if v == 0:
        value = None
    elif v == 1:
        value = b""
    else:
        value = b"%d:%06d:" % (part, i) + bytes(rnd.getrandbits(8) for _ in range(rnd.randrange(600)))
    h = i % 5
    if h == 0:
        headers = None
    elif h == 1:
        headers = [("a", b"1"), ("a", b"2"), ("empty", b""), ("null", None)]
    else:
        headers = [("h%d" % j, b"x" * j) for j in range(h)]
    return {"key": key, "value": value, "headers": headers, "partition": part,
            "timestamp": T0 + i * 10}


class Acks:
    def __init__(self):
        self.got = {}  # (partition, offset) -> (timestamp type, timestamp)
        self.failed = []

    def __call__(self, err, msg):
        if err is not None:
            self.failed.append(err)
        else:
            self.got[(msg.partition(), msg.offset())] = msg.timestamp()


def _produce(b, topic, first, n, rnd, expected):
    """Produces records first..first+n-1 (partition i % PARTS); appends them
    to expected[partition] in offset order with their acknowledged offsets."""
    p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all", "linger.ms": 5,
                  "batch.size": 16384, "enable.idempotence": True})
    acks = Acks()
    recs = [_record(rnd, i % PARTS, i) for i in range(first, first + n)]
    for r in recs:
        kw = dict(key=r["key"], value=r["value"], partition=r["partition"],
                  timestamp=r["timestamp"], on_delivery=acks)
        if r["headers"] is not None:
            kw["headers"] = r["headers"]
        p.produce(topic, **kw)
        p.poll(0)
    assert p.flush(60) == 0 and not acks.failed, acks.failed[:3]
    per = {q: [] for q in range(PARTS)}
    for r in recs:
        per[r["partition"]].append(r)
    for q in range(PARTS):
        offs = sorted(o for (pp, o) in acks.got if pp == q)
        assert offs == list(range(len(expected[q]), len(expected[q]) + len(per[q])))
        for r, o in zip(per[q], offs):
            r = dict(r, offset=o, acked_ts=acks.got[(q, o)])
            expected[q].append(r)


def _check(msgs, want, log_append):
    assert [m.offset() for m in msgs] == [r["offset"] for r in want]
    for m, r in zip(msgs, want):
        where = "partition %d offset %d" % (m.partition(), m.offset())
        assert m.key() == r["key"], where
        assert m.value() == r["value"], where
        assert (m.headers() or None) == r["headers"], where
        if log_append:
            assert m.timestamp() == r["acked_ts"], where
            assert m.timestamp()[0] == 2, where  # TIMESTAMP_LOG_APPEND_TIME
        else:
            assert m.timestamp() == (1, r["timestamp"]), where  # TIMESTAMP_CREATE_TIME


def _read_all(b, topic, expected, log_append, start=None):
    start = start or {q: 0 for q in range(PARTS)}
    got = ku.consume(b.bootstrap, topic, list(range(PARTS)), start=start, timeout=120,
                     max_partition_fetch_bytes=32 << 10)
    for q in range(PARTS):
        _check(got[q], expected[q][start[q]:], log_append)


def _cold_stats(b):
    found = re.findall(r"cold reads from tables: (\d+) reads \((\d+) failed\), (\d+) records "
                       r"rebuilt", b.log_text())
    assert found, "no cold-read figures logged at shutdown"
    return tuple(map(int, found[-1]))


@pytest.mark.parametrize("tstype", ["CreateTime", "LogAppendTime"])
def test_cold_reads_come_from_the_table(broker_factory, tstype):
    b = broker_factory(*COLD)
    log_append = tstype == "LogAppendTime"
    topic = ku.create_topic(b.bootstrap, ku.unique_topic("coldt"), partitions=PARTS,
                            config=dict(TABLE, **{"message.timestamp.type": tstype}))
    rnd = random.Random(7)
    expected = {q: [] for q in range(PARTS)}
    for rnd_i in range(4):  # several commits, several data files
        _produce(b, topic, rnd_i * 500, 500, rnd, expected)
    kinds = _wait_all_in_table(b)
    assert kinds[3] >= PARTS
    _no_compacted_objects(b)

    b.restart()  # cold cache: every read rebuilt from the Parquet rows
    _read_all(b, topic, expected, log_append)
    mid = {q: len(expected[q]) // 2 + 3 for q in range(PARTS)}
    _read_all(b, topic, expected, log_append, start=mid)
    # by timestamp (CreateTime: the producer's; LogAppendTime: the broker's)
    c = ku.consumer(b.bootstrap)
    try:
        for q in range(PARTS):
            r = expected[q][len(expected[q]) // 3]
            ts = r["acked_ts"][1] if log_append else r["timestamp"]
            res = c.offsets_for_times([TopicPartition(topic, q, ts)], timeout=30)
            first = min(x["offset"] for x in expected[q]
                        if (x["acked_ts"][1] if log_append else x["timestamp"]) >= ts)
            assert res[0].error is None and res[0].offset == first
    finally:
        c.close()
    # newer commits than the broker's kept plan: a read past it meets no
    # file holding its offset, makes the plan again and is served
    ends = {q: len(expected[q]) for q in range(PARTS)}
    _produce(b, topic, 2000, 300, rnd, expected)
    _wait_all_in_table(b)
    _read_all(b, topic, expected, log_append, start=ends)
    # the setting is reported
    a = AdminClient({"bootstrap.servers": b.bootstrap})
    res = ConfigResource(ConfigResource.Type.BROKER, "0")
    cfg = a.describe_configs([res])[res].result(30)
    assert cfg["table.cold.reads"].value == "table"
    b.stop()
    reads, failed, records = _cold_stats(b)
    assert reads > 0 and failed == 0
    assert re.search(r"plans: \d+ loads, \d+ hits, [1-9]\d* stale", b.log_text()), \
        "the read past the kept plan did not re-make it"
    assert records >= sum(len(v) for v in expected.values())  # all of it came from the rows


@pytest.mark.parametrize("version", ["2", "3"])
def test_cold_reads_survive_rewrites_and_snapshot_expiry(broker_factory, version):
    # replaced files go when their snapshots expired (1 s) and their delay
    # (1 s) is over, deleted by the next commit; at format version 3 the
    # rewritten files carry the row lineage columns too
    b = broker_factory(*COLD)
    topic = ku.create_topic(b.bootstrap, ku.unique_topic("coldrw"), partitions=PARTS,
                            config=dict(TABLE, **{
                                "lakestream.table.format.version": version,
                                "lakestream.table.rewrite.min.files": "4",
                                "lakestream.table.snapshot.retention.ms": "1000",
                                "lakestream.table.snapshot.retention.min": "1",
                                "lakestream.table.file.delete.delay.ms": "1000"}))

    def parquet_files():  # on the file store or S3
        return {k for k in b.object_keys("warehouse/default/" + topic) if k.endswith(".parquet")}
    rnd = random.Random(11)
    expected = {q: [] for q in range(PARTS)}
    n = 0
    for _ in range(3):
        _produce(b, topic, n, 200, rnd, expected)
        n += 200
        _wait_all_in_table(b)
    b.restart()
    _read_all(b, topic, expected, False)  # plans kept by this broker now
    # more commits: small files rewritten, the replaced ones deleted while
    # the broker holds plans naming them
    deadline = time.monotonic() + 120
    before, gone = parquet_files(), False
    while not re.search(r"rewrote \d+ small data files", b.log_text()) or not gone:
        assert time.monotonic() < deadline, "no rewrite and removal of the replaced files seen"
        _produce(b, topic, n, 100, rnd, expected)
        n += 100
        _wait_all_in_table(b)
        gone = bool(before - parquet_files())
    _read_all(b, topic, expected, False)  # stale plans re-made
    b.restart()
    _read_all(b, topic, expected, False)
    b.stop()
    assert _cold_stats(b)[1] == 0


def test_nothing_below_the_log_start_comes_back(broker_factory):
    b = broker_factory(*COLD)
    topic = ku.create_topic(b.bootstrap, ku.unique_topic("coldtrim"), partitions=PARTS,
                            config=TABLE)
    rnd = random.Random(5)
    expected = {q: [] for q in range(PARTS)}
    _produce(b, topic, 0, 600, rnd, expected)
    _wait_all_in_table(b)
    a = AdminClient({"bootstrap.servers": b.bootstrap})
    fs = a.delete_records([TopicPartition(topic, 0, 101)])
    assert list(fs.values())[0].result(30).low_watermark == 101
    b.restart()
    assert ku.watermarks(b.bootstrap, topic, [0])[0] == (101, len(expected[0]))
    _read_all(b, topic, expected, False, start={0: 101, 1: 0})
    got = ku.consume(b.bootstrap, topic, [0], timeout=60, max_partition_fetch_bytes=32 << 10)
    assert got[0][0].offset() == 101
    _check(got[0], expected[0][101:], False)
    # retention: every record is an hour old
    res = ConfigResource(ConfigResource.Type.TOPIC, topic)
    res.set_config("retention.ms", "60000")
    for k, v in TABLE.items():
        res.set_config(k, v)
    a.alter_configs([res])[res].result(30)
    deadline = time.monotonic() + 60
    while True:
        wm = ku.watermarks(b.bootstrap, topic, list(range(PARTS)))
        if all(lo == hi for lo, hi in wm.values()):
            break
        assert time.monotonic() < deadline, "retention left %s" % wm
        time.sleep(0.2)
    b.restart()
    wm = ku.watermarks(b.bootstrap, topic, list(range(PARTS)))
    assert wm == {q: (len(expected[q]), len(expected[q])) for q in range(PARTS)}
    # new records after the trim (retention back to a week: they are an
    # hour old too): read from the new start, nothing older
    res.set_config("retention.ms", "604800000")
    a.alter_configs([res])[res].result(30)
    _produce(b, topic, 600, 100, rnd, expected)
    got = ku.consume(b.bootstrap, topic, list(range(PARTS)), timeout=60)
    for q in range(PARTS):
        _check(got[q], expected[q][wm[q][0]:], False)
