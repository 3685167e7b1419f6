"""In-table ranges turned back into compacted objects (issue 13, lake/unfold.c).

A raw append table topic is produced to and compacted; then, with the broker
stopped, every compacted index entry of its logs is rewritten as an
"in the table" entry (kind 3, docs/FORMATS.md) and its compacted object is
deleted, so the table's Parquet rows are the only cold copy. When the table
stops being a valid source (disabled, or switched to upsert), the compaction
pass must read those ranges from the table and write compacted objects
before anything else touches the table: afterwards no in-table entry and no
cold reference is left, and after a restart every record is consumed
byte-exact (keys, null keys, values, null values, headers, timestamps)."""

import glob
import os
import sqlite3
import struct
import time

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource

import iceberg_util
import kafka_util as ku

PARTS = 2
N = 1200
T0 = int(time.time() * 1000) - 3_600_000  # inside retention.ms


def _local_only(b):
    iceberg_util.local_store_only()
    if b.external or os.environ.get("LS_TEST_META", "sqlite") not in ("", "sqlite"):
        pytest.skip("edits the local SQLite metadata file")


def _db(b, ro=True):
    path = os.path.join(b.data_dir, "meta.db")
    if ro:
        return sqlite3.connect("file:%s?mode=ro" % path, uri=True, timeout=30)
    return sqlite3.connect(path, timeout=30)


def _rows(b, prefix):
    db = _db(b)
    try:
        return [(bytes(k), bytes(v)) for k, v in db.execute(
            "SELECT key, val FROM kv WHERE key >= CAST(? AS BLOB) AND key < CAST(? AS BLOB)",
            (prefix, prefix[:-1] + chr(ord(prefix[-1]) + 1))).fetchall()]
    finally:
        db.close()


def _kinds(b):
    """{kind: count} of every index entry (the value's second byte)."""
    out = {}
    for k, v in _rows(b, "/ls/log/"):
        if b"/idx/" in k:
            out[v[1]] = out.get(v[1], 0) + 1
    return out


def _refs(b):
    return _rows(b, "/ls/coldref/")


def _value(p, i):
    if i % 97 == 5:
        return None
    if i % 89 == 3:
        return b""
    return b"%d-%05d|" % (p, i) + bytes((i * 7 + k) % 251 for k in range(i % 300))


def _record(i):
    p = i % PARTS
    key = None if i % 13 == 0 and i < N else b"key-%d" % (i % 41)
    headers = [("h%d" % (i % 3), b"v%d" % i), ("empty", b"")] if i % 4 else None
    return {"partition": p, "key": key, "value": _value(p, i), "headers": headers,
            "timestamp": T0 + i * 11}


def _produce(b, topic, first, n):
    p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all", "linger.ms": 5,
                  "batch.size": 4096})
    recs = [_record(i) for i in range(first, first + n)]
    dl = ku.produce_all(p, topic, recs)
    assert len(dl.acked) == n
    return recs


def _wait(cond, what, timeout=90):
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "timed out waiting for " + what
        time.sleep(0.2)


def _to_in_table(b):
    """With the broker stopped: every compacted entry (kind 1) becomes an
    in-table entry over the same offsets, and its object is deleted."""
    db = _db(b, ro=False)
    objects = os.path.join(b.data_dir, "objects")
    changed = 0
    try:
        rev = db.execute("SELECT ival FROM meta WHERE name='revision'").fetchone()[0]
        for k, v in db.execute("SELECT key, val FROM kv WHERE key >= CAST('/ls/log/' AS BLOB)"
                               " AND key < CAST('/ls/log0' AS BLOB)").fetchall():
            k, v = bytes(k), bytes(v)
            if b"/idx/" not in k or v[0] != 1 or v[1] != 1:
                continue
            (klen,) = struct.unpack(">H", v[42:44])
            obj = v[44:44 + klen].decode()
            nv = (bytes([1, 3]) + v[2:26] + struct.pack(">IQ", 0, 0) + v[38:42]
                  + struct.pack(">H", 5) + b"table")
            rev += 1
            db.execute("UPDATE kv SET val=?, mod_rev=? WHERE key=?", (nv, rev, k))
            if os.path.exists(os.path.join(objects, obj)):
                os.unlink(os.path.join(objects, obj))
            changed += 1
        db.execute("UPDATE meta SET ival=? WHERE name='revision'", (rev,))
        db.commit()
    finally:
        db.close()
    return changed


def _check_all(b, topic, recs):
    got = ku.consume(b.bootstrap, topic, list(range(PARTS)), timeout=120)
    want = {p: [r for r in recs if r["partition"] == p] for p in range(PARTS)}
    for p in range(PARTS):
        msgs = got[p]
        assert [m.offset() for m in msgs] == list(range(len(want[p]))), "partition %d" % p
        for m, r in zip(msgs, want[p]):
            assert m.key() == r["key"], (p, m.offset())
            assert m.value() == r["value"], (p, m.offset())
            assert (m.headers() or None) == (r["headers"] or None), (p, m.offset())
            assert m.timestamp()[1] == r["timestamp"], (p, m.offset())


# _in_table_topic makes the in-table entries by hand from compacted objects,
# so its brokers write compacted objects (the default, table, writes kind-3
# entries itself: test_cold_read_topic_unfolds_... below)
CO_FIRST = ("--table.cold.reads=compacted-object",)


def _in_table_topic(b):
    """A raw table topic, produced to and compacted, then (broker stopped)
    every compacted range made an in-table one with its object deleted."""
    _local_only(b)
    topic = ku.create_topic(b.bootstrap, ku.unique_topic("unfold"), partitions=PARTS, config={
        "lakestream.table.enabled": "true", "lakestream.table.commit.interval.ms": "1000"})
    recs = []
    for r in range(3):  # several table commits: several data files and entries
        recs += _produce(b, topic, r * (N // 3), N // 3)
        time.sleep(1.2)
    # everything compacted (and so in the table), each log referencing it
    _wait(lambda: _kinds(b).get(0, 0) == 0 and _kinds(b).get(1, 0) > 0, "compaction")
    _wait(lambda: len(_refs(b)) == PARTS, "cold references")
    iceberg_util.wait_rows(iceberg_util.table_dir(b, topic), N)
    assert b.stop() == 0
    assert _to_in_table(b) > PARTS
    assert _kinds(b).get(1, 0) == 0 and _kinds(b).get(3, 0) > PARTS
    assert not glob.glob(os.path.join(b.data_dir, "objects", "co", "*", "*.co"))
    return topic, recs


def _alter(b, topic, change):
    a = ku.admin(b.bootstrap)
    res = ConfigResource("topic", topic, incremental_configs=[
        ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in change.items()])
    a.incremental_alter_configs([res])[res].result(30)


def _unfolded(b, topic):
    # every in-table range back in compacted objects, the references to the
    # old table released: it is free (a renamed table's logs reference the
    # new one)
    _wait(lambda: _kinds(b).get(3, 0) == 0, "in-table entries to be unfolded")
    _wait(lambda: not [v for _k, v in _refs(b) if b'"%s"' % topic.encode() in v],
          "cold references to be released")
    assert glob.glob(os.path.join(b.data_dir, "objects", "co", "*", "*.co"))


@pytest.mark.parametrize("change", [
    {"lakestream.table.enabled": "false"},
    {"lakestream.table.write.mode": "upsert"},
    {"lakestream.table.name": "unfold_renamed"},
])
def test_in_table_ranges_become_objects_when_the_table_stops_being_their_source(
        broker_factory, change):
    b = broker_factory("--compaction.min.age.ms=0", "--compaction.interval.ms=200",
                       "--wal.gc.grace.ms=0", *CO_FIRST)
    topic, recs = _in_table_topic(b)
    b.start()
    _alter(b, topic, change)
    _unfolded(b, topic)
    assert "became" in b.log_text() and "compacted objects" in b.log_text()
    recs += _produce(b, topic, N, 200)  # the topic goes on under its new policy
    b.restart()  # cold read cache
    _check_all(b, topic, recs)


@pytest.mark.parametrize("point", ["unfold.object_written", "unfold.swapped"])
def test_kill9_while_unfolding(broker_factory, point):
    """kill -9 after an object is written (not swapped) and after a swap (the
    rest of the range still in the table): the restarted broker finishes,
    nothing lost or doubled."""
    b = broker_factory("--compaction.min.age.ms=0", "--compaction.interval.ms=200",
                       "--wal.gc.grace.ms=0", "--compaction.max.bytes=8KiB", *CO_FIRST)
    topic, recs = _in_table_topic(b)
    b.env_extra = {"LS_CRASH_AT": point}
    b.start()
    _alter(b, topic, {"lakestream.table.enabled": "false"})
    b.wait_crashed()
    assert _kinds(b).get(3, 0) > 0
    b.env_extra = {}
    b.start()
    _unfolded(b, topic)
    b.restart()
    _check_all(b, topic, recs)


@pytest.mark.parametrize("change", [
    {"lakestream.table.enabled": "false"},
    {"lakestream.table.write.mode": "upsert"},
])
def test_cold_read_topic_unfolds_when_its_table_stops_being_the_source(broker_factory, change):
    """table.cold.reads=table: the pass itself leaves the topic's ranges only
    in the table (kind 3). Then the table is disabled or made upsert: every
    range becomes compacted objects again, no reference is left, and after a
    restart every record reads back byte-exact."""
    b = broker_factory("--table.cold.reads=table", "--compaction.min.age.ms=0",
                       "--compaction.interval.ms=200", "--wal.gc.grace.ms=0")
    _local_only(b)
    topic = ku.create_topic(b.bootstrap, ku.unique_topic("unfoldcold"), partitions=PARTS, config={
        "lakestream.table.enabled": "true", "lakestream.table.commit.interval.ms": "1000"})
    recs = []
    for r in range(3):
        recs += _produce(b, topic, r * (N // 3), N // 3)
        time.sleep(1.2)
    _wait(lambda: set(_kinds(b)) == {3}, "every range in the table")
    assert not glob.glob(os.path.join(b.data_dir, "objects", "co", "*", "*.co"))
    _check_all(b, topic, recs)  # served from the table's rows
    _alter(b, topic, change)
    _unfolded(b, topic)
    recs += _produce(b, topic, N, 200)
    b.restart()
    _check_all(b, topic, recs)
