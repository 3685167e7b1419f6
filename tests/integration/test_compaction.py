"""Compaction on a live broker: with a zero hot window, WAL entries are
rewritten into compacted objects while producers and consumers run. A
consumer reading across the swap sees every record once, at its offset, with
its bytes; afterwards the WAL objects are gone and a restarted broker serves
everything from compacted objects."""

import os
import time

import pytest

from kafka_util import consume, create_topic, produce_all, unique_topic


def _objects(data_dir, sub):
    root = os.path.join(data_dir, "objects", sub)
    out = []
    for d, _, files in os.walk(root):
        out += [os.path.join(d, f) for f in files]
    return out


def _index_entries_per_log(data_dir):
    """Index entries per log id, read from the broker's SQLite store."""
    import sqlite3
    db = sqlite3.connect("file:%s?mode=ro" % os.path.join(data_dir, "meta.db"), uri=True,
                         timeout=30)
    try:
        keys = [bytes(k) for (k,) in db.execute(
            "SELECT key FROM kv WHERE key >= CAST('/ls/log/' AS BLOB)"
            " AND key < CAST('/ls/log0' AS BLOB)")]
    finally:
        db.close()
    out = {}
    for k in keys:
        if b"/idx/" not in k:
            continue
        log = k.split(b"/")[3]
        out[log] = out.get(log, 0) + 1
    return out


def test_compaction_keeps_every_record_and_frees_wal(broker_factory):
    if os.environ.get("LS_TEST_OBJECT_STORE", "file") not in ("", "file"):
        pytest.skip("inspects the local object directory")
    b = broker_factory("--compaction.min.age.ms=0", "--compaction.interval.ms=200",
                       "--wal.gc.grace.ms=0")
    topic = create_topic(b.bootstrap, unique_topic("compact"), partitions=3)
    from confluent_kafka import Producer
    expected = {}
    for batch in range(10):
        p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all", "linger.ms": 1})
        recs = [{"key": b"k%d" % i, "value": b"b%02d-v%04d" % (batch, i), "partition": i % 3,
                 "headers": [("h", b"%d" % i)]} for i in range(300)]
        dl = produce_all(p, topic, recs)
        for part, off, _k, v in dl.acked:
            expected[(part, off)] = v
        # read everything so far while compaction swaps entries underneath
        got = consume(b.bootstrap, topic, [0, 1, 2], timeout=60)
        seen = {(part, m.offset()): m.value() for part, msgs in got.items() for m in msgs}
        assert seen == expected
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and (_objects(b.data_dir, "wal") or not _objects(b.data_dir, "co")):
        time.sleep(0.1)
    assert _objects(b.data_dir, "co"), "no compacted objects were written"
    # WAL objects still in the hot path may remain for the most recent flushes
    # of a partition only until the next pass; allow none after the wait
    assert not _objects(b.data_dir, "wal"), "WAL objects left: %s" % _objects(b.data_dir, "wal")[:3]
    b.restart()
    got = consume(b.bootstrap, topic, [0, 1, 2], timeout=60)
    seen = {(part, m.offset()): m.value() for part, msgs in got.items() for m in msgs}
    assert seen == expected
    hdrs = [m.headers() for msgs in got.values() for m in msgs]
    assert all(h and h[0][0] == "h" for h in hdrs)


def test_compaction_and_table_keep_up_past_many_compacted_objects(broker_factory):
    """Regression (issue 11 §1): the compaction scan once looked at a fixed
    window from the head of a log's index, so after ~max_entries + 64
    compacted objects the WAL entries behind them were never reached: tables
    stopped advancing and WAL objects piled up, silently, for good. With one
    WAL entry per compacted object that wall is 65 flushes away; 160 steady
    flushes into a table topic and a plain topic must all be compacted, and
    the table must hold every record, in offset order, with its value."""
    from iceberg_util import local_store_only, table_dir, wait_rows
    local_store_only()
    b = broker_factory("--compaction.min.age.ms=0", "--compaction.interval.ms=100",
                       "--compaction.max.entries=1", "--wal.gc.grace.ms=0")
    plain = create_topic(b.bootstrap, unique_topic("steady"))
    tabled = create_topic(b.bootstrap, unique_topic("steadyt"),
                          config={"lakestream.table.enabled": "true",
                                  "lakestream.table.commit.interval.ms": "1000"})
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all", "linger.ms": 0})
    n = 160
    for i in range(n):   # one flush per record: acknowledged before the next is sent
        for t in (plain, tabled):
            dl = produce_all(p, t, [{"value": b"v%04d" % i, "partition": 0}])
            assert len(dl.acked) == 1
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and _objects(b.data_dir, "wal"):
        time.sleep(0.2)
    left = _objects(b.data_dir, "wal")
    assert not left, "%d WAL objects never compacted" % len(left)
    _t, rows, _md = wait_rows(table_dir(b, tabled), n, timeout=60)
    assert rows.num_rows == n
    table = sorted(zip(rows.column("offset").to_pylist(), rows.column("value").to_pylist()))
    assert table == [(i, b"v%04d" % i) for i in range(n)]
    got = consume(b.bootstrap, plain, [0], timeout=60)
    assert [m.value() for m in got[0]] == [b"v%04d" % i for i in range(n)]
    # 160 small compacted objects per log are merged (keycompact.c "Merging
    # small objects"): the index of a log does not grow with its passes
    deadline = time.monotonic() + 60
    while True:
        per_log = _index_entries_per_log(b.data_dir)
        if (per_log and max(per_log.values()) <= 40) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert per_log and max(per_log.values()) <= 40, per_log
    got = consume(b.bootstrap, plain, [0], timeout=60)
    assert [m.value() for m in got[0]] == [b"v%04d" % i for i in range(n)]
    _t, rows, _md = wait_rows(table_dir(b, tabled), n, timeout=60)
    assert sorted(rows.column("offset").to_pylist()) == list(range(n))
    # the lag is visible (DescribeConfigs lakestream.table.lag.ms, `tables show`)
    # and small once the table caught up
    import re
    import subprocess
    from lsbroker import binary_path
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKESTREAM_")}
    deadline = time.monotonic() + 30
    while True:
        out = subprocess.run([binary_path(), "tables", "--bootstrap", b.bootstrap, "show", tabled],
                             capture_output=True, text=True, timeout=30, env=env).stdout
        m = re.search(r"table lag: (\d+) ms", out)
        if (m and int(m.group(1)) < 3000) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert m and int(m.group(1)) < 3000, out
