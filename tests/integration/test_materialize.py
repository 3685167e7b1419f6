"""Stream–table duality end to end: a topic created with
lakestream.table.enabled=true becomes an Apache Iceberg table through the
compaction pass — no export pipeline. PyIceberg (an independent reader) scans
the table and finds every produced record exactly once, with its partition,
offset, timestamp, key, value and headers; a broker restart in the middle
adds no duplicates; DuckDB reads the data files."""

import os
import time

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

import iceberg_util
from kafka_util import unique_topic, wait_topic

duckdb = pytest.importorskip("duckdb")

PARTS = 3


def _produce(bootstrap, topic, start, n):
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 2,
                  "enable.idempotence": True})
    for i in range(start, start + n):
        p.produce(topic, key=None if i % 7 == 0 else b"k%d" % i,
                  value=None if i % 11 == 0 else b"value-%d" % i, partition=i % PARTS,
                  headers=[("src", b"test"), ("i", b"%d" % i)], timestamp=1_700_000_000_000 + i)
    assert p.flush(60) == 0


def test_topic_materializes_as_iceberg_table(broker_factory):
    iceberg_util.local_store_only()
    b = broker_factory("--compaction.min.age.ms=0", "--compaction.interval.ms=200")
    topic = unique_topic("table")
    a = AdminClient({"bootstrap.servers": b.bootstrap})
    fs = a.create_topics([NewTopic(topic, PARTS, 1, config={"lakestream.table.enabled": "true"})])
    fs[topic].result(30)
    wait_topic(b.bootstrap, topic, PARTS)
    table_dir = iceberg_util.table_dir(b, topic)

    _produce(b.bootstrap, topic, 0, 600)
    t, rows, _ = iceberg_util.wait_rows(table_dir, 600)
    b.restart()                       # mid-stream restart: nothing twice
    _produce(b.bootstrap, topic, 600, 300)
    t, rows, _ = iceberg_util.wait_rows(table_dir, 900)
    time.sleep(1.0)                   # a further pass must not add rows
    t, rows, _ = iceberg_util.wait_rows(table_dir, 900)
    assert rows.num_rows == 900, "table holds %d rows, produced 900" % rows.num_rows

    d = rows.to_pylist()
    seen = {(r["partition"], r["offset"]) for r in d}
    assert len(seen) == 900, "duplicate (partition, offset) rows"
    by_i = {}
    for r in d:
        hdrs = r["headers"]
        assert hdrs[0]["key"] == "src" and hdrs[0]["value"] == b"test"
        i = int(hdrs[1]["value"])
        by_i[i] = r
    assert sorted(by_i) == list(range(900))
    for i in (0, 7, 11, 77, 599, 600, 899):
        r = by_i[i]
        assert r["partition"] == i % PARTS
        assert r["key"] == (None if i % 7 == 0 else b"k%d" % i)
        assert r["value"] == (None if i % 11 == 0 else b"value-%d" % i)
        ts = r["timestamp"]
        assert int(ts.timestamp() * 1000) == 1_700_000_000_000 + i
    # offsets per partition are dense from 0, as in the log
    for p in range(PARTS):
        offs = sorted(r["offset"] for r in d if r["partition"] == p)
        assert offs == list(range(len(offs)))
    # the table properties record each log's last materialized offset
    marks = {k: v for k, v in t.metadata.properties.items() if k.startswith("lakestream.log.")}
    assert len(marks) == PARTS, marks
    assert sorted(int(v) for v in marks.values()) == [299, 299, 299]
    # an engine that reads Parquet directly agrees
    files = [f.file.file_path.replace("file://", "") for f in t.scan().plan_files()]
    con = duckdb.connect()
    n = con.execute("select count(*) from read_parquet(?)", [files]).fetchone()[0]
    assert n == 900


def test_orphan_files_are_removed(broker_factory):
    """Files under a table that no snapshot references (an engine's write the
    read-only catalog refused, a crashed commit) go after the grace period;
    every referenced file stays and the table keeps every row."""
    iceberg_util.local_store_only()
    b = broker_factory("--compaction.min.age.ms=0", "--compaction.interval.ms=200",
                       "--log.retention.check.interval.ms=300", "--table.orphan.grace.ms=1000")
    topic = unique_topic("orphans")
    a = AdminClient({"bootstrap.servers": b.bootstrap})
    fs = a.create_topics([NewTopic(topic, PARTS, 1, config={
        "lakestream.table.enabled": "true", "lakestream.table.commit.interval.ms": "1000"})])
    fs[topic].result(30)
    wait_topic(b.bootstrap, topic, PARTS)
    tdir = iceberg_util.table_dir(b, topic)
    _produce(b.bootstrap, topic, 0, 300)
    iceberg_util.wait_rows(tdir, 300)
    junk = [os.path.join(tdir, "data", "timestamp_day-2023-11-14", "spark-00000.parquet"),
            os.path.join(tdir, "metadata", "spark-m0.avro"),
            os.path.join(tdir, "metadata", "snap-1-1-spark.avro")]
    old = time.time() - 3600
    for f in junk:
        os.makedirs(os.path.dirname(f), exist_ok=True)
        with open(f, "wb") as fp:
            fp.write(b"not ours")
        os.utime(f, (old, old))
    deadline = time.monotonic() + 30
    while any(os.path.exists(f) for f in junk) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(os.path.exists(f) for f in junk), "orphans still there"
    assert "orphan files" in b.log_text()
    _produce(b.bootstrap, topic, 300, 300)
    t, rows, _ = iceberg_util.wait_rows(tdir, 600)
    assert sorted(rows.column("value").to_pylist(), key=lambda v: (v is None, v)) == sorted(
        [None if i % 11 == 0 else b"value-%d" % i for i in range(600)],
        key=lambda v: (v is None, v))
    for task in t.scan().plan_files():
        assert os.path.exists(task.file.file_path[len("file://"):])


def test_many_headers_kept_in_the_table(broker_factory):
    """A raw row is the record: all of a record's headers reach the table, in
    order, repeated keys and null values included — more than 256 too (the
    materializer used to keep only the first 256, so a cold read rebuilt from
    the row would have lost the rest)."""
    iceberg_util.local_store_only()
    b = broker_factory("--compaction.min.age.ms=0", "--compaction.interval.ms=200")
    topic = unique_topic("hdrs")
    a = AdminClient({"bootstrap.servers": b.bootstrap})
    fs = a.create_topics([NewTopic(topic, 1, 1, config={"lakestream.table.enabled": "true"})])
    fs[topic].result(30)
    wait_topic(b.bootstrap, topic, 1)
    table_dir = iceberg_util.table_dir(b, topic)
    many = [("h%d" % (i % 7), None if i % 5 == 0 else b"v%d" % i) for i in range(300)]
    p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all"})
    p.produce(topic, key=b"k", value=b"many", partition=0, headers=many)
    p.produce(topic, key=b"k", value=b"none", partition=0)
    assert p.flush(30) == 0
    _, rows, _ = iceberg_util.wait_rows(table_dir, 2)
    by_value = {r["value"]: r for r in rows.to_pylist()}
    got = [(h["key"], h["value"]) for h in by_value[b"many"]["headers"]]
    assert got == many, "table kept %d of 300 headers" % len(got)
    assert by_value[b"none"]["headers"] == []
