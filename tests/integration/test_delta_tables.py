"""Delta Lake tables (lakestream.table.format=delta | iceberg,delta): the
pass that commits an Iceberg snapshot also writes a Delta commit naming the
same data files (<table>/_delta_log, docs/FORMATS.md). delta-rs reads the
Delta table and DuckDB the Parquet files its log names; both must equal,
row for row, the Iceberg table of the same topic (PyIceberg) and the
records produced: raw and typed (JSON Schema values) tables, upserts and
small-file rewrites whose removed files show up as remove actions,
checkpoints (read by delta-rs and pyarrow) and the log clean-up below them,
a schema Delta cannot hold (held back), a pass that dies around the Delta
commit (kill -9 at a crash point) and is retried, and refused values."""

import glob
import json
import os
import re
import time

import pytest
from confluent_kafka import KafkaException, Producer, SerializingProducer
from confluent_kafka.admin import AdminClient, NewTopic
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer

import iceberg_util as iu
from kafka_util import create_topic, unique_topic
from test_crash_points import Sender
from test_typed_json import ORDER, order, produce_json
from test_typed_tables import _held_reason

deltalake = pytest.importorskip("deltalake")
from deltalake.exceptions import TableNotFoundError  # noqa: E402
duckdb = pytest.importorskip("duckdb")

BASE = {"lakestream.table.enabled": "true", "lakestream.table.commit.interval.ms": "1000"}
FLAGS = ("--compaction.min.age.ms=0", "--compaction.interval.ms=200")


def delta_log(tdir):
    """Every action of the table's Delta log, as (version, action) in order."""
    out = []
    for f in sorted(glob.glob(os.path.join(tdir, "_delta_log", "*.json"))):
        v = int(os.path.basename(f)[:20])
        with open(f) as fh:
            out.extend((v, json.loads(line)) for line in fh if line.strip())
    return out


def wait_delta(tdir, want, timeout=60):
    """Waits until delta-rs reads `want` rows; returns (DeltaTable, rows)."""
    deadline = time.monotonic() + timeout
    got = None
    while time.monotonic() < deadline:
        try:
            dt = deltalake.DeltaTable(tdir)
        except TableNotFoundError:
            # no log yet, or _delta_log/ made for a first commit not yet
            # published (the file store's temporary name is in that folder)
            dt = None
        if dt is not None:
            rows = dt.to_pyarrow_table().to_pylist()
            got = len(rows)
            if got >= want:
                return dt, rows
        time.sleep(0.2)
    raise AssertionError("Delta table %s has %s rows after %ss, want %d" % (tdir, got, timeout,
                                                                             want))


def same_tables(tdir, n, key):
    """The Iceberg and the Delta table of tdir both hold n rows, equal row for
    row (ordered by key), and DuckDB reads the same rows from the files the
    Delta log names. Returns the rows."""
    _, ice, _ = iu.wait_rows(tdir, n)
    ice = sorted(ice.to_pylist(), key=key)
    dt, rows = wait_delta(tdir, n)
    rows = sorted(rows, key=key)
    assert len(ice) == len(rows) == n, (len(ice), len(rows), n)
    assert rows == ice
    files = [local(u) for u in dt.file_uris()]
    assert files and all(os.path.exists(f) for f in files)
    con = duckdb.connect()
    con.execute("SET TimeZone='UTC'")
    q = con.sql("SELECT * FROM read_parquet(%s)" % files).to_arrow_table()
    assert sorted(q.to_pylist(), key=key) == rows
    return rows


def stats_bound_files(dt, need):
    """Every data file's Delta stats bound its rows: for each column with a
    minValues/maxValues, min <= every non-null value <= max (pyarrow reads
    the file; delta-rs parses the stats). Returns the columns seen with
    bounds, which must include need."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
    adds = pa.table(dt.get_add_actions(flatten=True)).to_pylist()   # an Arrow stream
    seen = set()
    for a in adds:
        data = pq.read_table(local(os.path.join(dt.table_uri, a["path"])))
        for k, lo in a.items():
            if not k.startswith("min.") or lo is None:
                continue
            col, hi = k[4:], a.get("max." + k[4:])
            vals = data.column(col)
            seen.add(col)
            assert pc.min(vals).as_py() >= lo, (a["path"], col, lo)
            if hi is not None:
                assert pc.max(vals).as_py() <= hi, (a["path"], col, hi)
    assert set(need) <= seen, (need, seen)
    return seen


def local(uri):
    """A file the Delta table names, as a local path (delta-rs gives paths or file:// URIs)."""
    return uri[len("file://"):] if uri.startswith("file://") else uri


def raw_key(r):
    return (r["partition"], r["offset"])


def test_raw_topic_as_delta_table(broker):
    iu.local_store_only()
    topic = create_topic(broker.bootstrap, unique_topic("delta-raw"), partitions=2,
                         config=dict(BASE, **{"lakestream.table.format": "delta"}))
    p = Producer({"bootstrap.servers": broker.bootstrap})
    n = 60
    acked = {}   # (partition, offset) -> i

    def rec(i):
        return (None if i % 7 == 0 else b"k%d" % i, None if i % 11 == 0 else b"v%d" % i,
                [("h", b"x%d" % i)] if i % 3 == 0 else [])

    for i in range(n):
        k, v, h = rec(i)
        p.produce(topic, key=k, value=v, partition=i % 2, headers=h or None,
                  on_delivery=lambda e, m, i=i: acked.__setitem__((m.partition(), m.offset()), i))
    assert p.flush(30) == 0 and len(acked) == n
    tdir = iu.table_dir(broker, topic)
    rows = same_tables(tdir, n, raw_key)
    for r in rows:
        k, v, h = rec(acked[raw_key(r)])
        assert (r["key"], r["value"]) == (k, v)
        assert [(x["key"], x["value"]) for x in r["headers"] or []] == h
    log = delta_log(tdir)
    first = [a for v, a in log if v == 0]
    proto = next(a["protocol"] for a in first if "protocol" in a)
    assert (proto["minReaderVersion"], proto["minWriterVersion"]) == (1, 2)
    md = next(a["metaData"] for a in first if "metaData" in a)
    assert md["partitionColumns"] == []
    assert md["configuration"]["delta.deletedFileRetentionDuration"] == "interval 300000 milliseconds"
    fields = {f["name"]: f for f in json.loads(md["schemaString"])["fields"]}
    assert fields["offset"]["type"] == "long" and not fields["offset"]["nullable"]
    assert fields["timestamp"]["type"] == "timestamp"
    adds = [a["add"] for _, a in log if "add" in a]
    assert sum(json.loads(a["stats"])["numRecords"] for a in adds) == n
    assert all(not a["path"].startswith("/") and "://" not in a["path"] for a in adds)
    # the txn action names the Iceberg commit the Delta table mirrors
    ice = iu.pyiceberg_table.StaticTable.from_metadata("file://" + iu.current_metadata(tdir))
    dt = deltalake.DeltaTable(tdir)
    assert dt.transaction_version("lakestream.iceberg") == ice.metadata.last_sequence_number


def test_delta_table_read_where_the_broker_stores_it(broker_factory):
    """The Delta table read by delta-rs from the object store itself: the
    local directory on the file store, the bucket through radosgw's S3 API
    in the S3 lane (commits there are create-only PUTs, If-None-Match: *).
    Several commits, a small-file rewrite (remove actions) and checkpoints:
    delta-rs reads every record produced, once, through the newest
    checkpoint, and the log versions run without a gap."""
    b = broker_factory(*FLAGS)
    topic = create_topic(b.bootstrap, unique_topic("delta-store"), partitions=1, config=dict(
        BASE, **{"lakestream.table.format": "delta",
                 "lakestream.table.rewrite.min.files": "4",
                 "lakestream.table.delta.checkpoint.interval": "3"}))
    loc, opts = b.object_location("warehouse/default/" + topic)
    p = Producer({"bootstrap.servers": b.bootstrap})
    n, want = 0, {}
    t0 = int(time.time() * 1000) - 3_600_000
    for _ in range(8):   # a commit a round: small files, then a rewrite
        for _ in range(25):
            want[n] = b"v%d" % n
            p.produce(topic, value=want[n], partition=0, timestamp=t0 + 1000 * n)
            n += 1
        assert p.flush(30) == 0
        deadline = time.monotonic() + 60
        while True:
            try:
                rows = deltalake.DeltaTable(loc, storage_options=opts).to_pyarrow_table(
                    columns=["offset", "value"]).to_pylist()
            except Exception:   # no _delta_log yet
                rows = []
            if len(rows) >= n or time.monotonic() > deadline:
                break
            time.sleep(0.3)
        assert sorted((r["offset"], r["value"]) for r in rows) == sorted(want.items())
    keys = b.object_keys("warehouse/default/%s/_delta_log" % topic)
    versions = sorted(int(k[:20]) for k in keys if k.endswith(".json") and k[:20].isdigit())
    assert versions == list(range(versions[0], versions[-1] + 1)), versions
    assert any(k.endswith(".checkpoint.parquet") for k in keys), keys
    assert "_last_checkpoint" in keys
    # the rewrite replaced small files: fewer live files than commits
    assert re.search(r"rewrote \d+ small data files", b.log_text())
    dt = deltalake.DeltaTable(loc, storage_options=opts)
    assert len(dt.file_uris()) < 8
    # timestamp stats skip files but never rows: a filter reads exactly its rows
    import datetime
    cut = datetime.datetime.fromtimestamp((t0 + 1000 * 130 + 500) / 1000, datetime.timezone.utc)
    got = dt.to_pyarrow_table(columns=["offset"], filters=[("timestamp", ">", cut)])
    assert sorted(got.column("offset").to_pylist()) == list(range(131, n))
    if not opts:   # the file store: every file's stats against its rows
        stats_bound_files(dt, ["offset", "timestamp"])


def test_typed_table_iceberg_and_delta(broker):
    iu.local_store_only()
    topic = create_topic(broker.bootstrap, unique_topic("delta-typed"), config=dict(
        BASE, **{"lakestream.table.value.format": "schema-registry",
                 "lakestream.table.format": "iceberg,delta"}))
    n = 30
    produce_json(broker, topic, ORDER, [order(i) for i in range(n)])
    rows = same_tables(iu.table_dir(broker, topic), n, lambda r: r["_kafka_offset"])
    assert [r["id"] for r in rows] == list(range(n))
    assert rows[3]["customer"] == order(3)["customer"]
    assert rows[5]["lines"] == order(5)["lines"]
    # stats beyond ints: strings, doubles, timestamps bound every file's rows
    stats_bound_files(deltalake.DeltaTable(iu.table_dir(broker, topic)),
                      ["id", "customer", "amount", "created", "_kafka_timestamp"])


def test_upsert_rewrites_are_delta_removes(broker):
    iu.local_store_only()
    topic = create_topic(broker.bootstrap, unique_topic("delta-upsert"), config=dict(
        BASE, **{"lakestream.table.write.mode": "upsert", "lakestream.table.format": "delta"}))
    tdir = iu.table_dir(broker, topic)
    p = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(20):
        p.produce(topic, key=b"k%d" % i, value=b"a%d" % i)
    assert p.flush(30) == 0
    same_tables(tdir, 20, lambda r: r["key"])
    for i in range(0, 20, 2):
        p.produce(topic, key=b"k%d" % i, value=b"b%d" % i)
    p.produce(topic, key=b"k1", value=None)   # a tombstone deletes k1's row
    assert p.flush(30) == 0
    want = {b"k%d" % i: (b"b%d" if i % 2 == 0 else b"a%d") % i for i in range(20) if i != 1}
    deadline = time.monotonic() + 60
    while True:
        _, ice, _ = iu.wait_rows(tdir, 0)
        if {r["key"]: r["value"] for r in ice.to_pylist()} == want or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    deadline = time.monotonic() + 60
    while True:
        rows = deltalake.DeltaTable(tdir).to_pyarrow_table().to_pylist()
        if {r["key"]: r["value"] for r in rows} == want or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    rows = same_tables(tdir, len(want), lambda r: r["key"])
    assert {r["key"]: r["value"] for r in rows} == want
    removed = [a["remove"]["path"] for _, a in delta_log(tdir) if "remove" in a]
    assert removed, "the copy-on-write commit removed no file in the Delta log"
    live = {local(u) for u in deltalake.DeltaTable(tdir).file_uris()}
    assert not {os.path.join(tdir, r) for r in removed} & live


def test_small_file_rewrites_are_delta_removes(broker):
    """The small-file rewrite (an Iceberg replace commit) is a Delta commit
    that removes the small files and adds the one that holds their rows."""
    iu.local_store_only()
    topic = create_topic(broker.bootstrap, unique_topic("delta-rewrite"), config=dict(
        BASE, **{"lakestream.table.format": "delta", "lakestream.table.rewrite.min.files": "4",
                 "lakestream.table.partition": "none"}))
    tdir = iu.table_dir(broker, topic)
    p = Producer({"bootstrap.servers": broker.bootstrap})
    n = 0
    deadline = time.monotonic() + 120
    while not any("remove" in a for _, a in delta_log(tdir)):
        assert time.monotonic() < deadline, "no rewrite reached the Delta log"
        for _ in range(5):   # one small file per commit
            p.produce(topic, value=b"r%d" % n)
            n += 1
        assert p.flush(30) == 0
        same_tables(tdir, n, raw_key)
    rows = same_tables(tdir, n, raw_key)
    assert sorted(r["value"] for r in rows) == sorted(b"r%d" % i for i in range(n))
    log = delta_log(tdir)
    removed = {a["remove"]["path"] for _, a in log if "remove" in a}
    live = {os.path.relpath(local(u), tdir) for u in deltalake.DeltaTable(tdir).file_uris()}
    assert removed and not removed & live
    assert live <= {a["add"]["path"] for _, a in log if "add" in a}


def test_checkpoints_and_log_cleanup(broker):
    """With checkpoint.interval=2 every even version is followed by a Parquet
    checkpoint that delta-rs loads the table from; with a 1 s snapshot
    retention the commits below a checkpoint older than that are deleted."""
    iu.local_store_only()
    topic = create_topic(broker.bootstrap, unique_topic("delta-cp"), config=dict(
        BASE, **{"lakestream.table.format": "delta",
                 "lakestream.table.delta.checkpoint.interval": "2",
                 "lakestream.table.snapshot.retention.ms": "1000"}))
    tdir = iu.table_dir(broker, topic)
    logdir = os.path.join(tdir, "_delta_log")
    p = Producer({"bootstrap.servers": broker.bootstrap})
    n = 0
    deadline = time.monotonic() + 120
    while os.path.exists(os.path.join(logdir, "%020d.json" % 0)) or n == 0:
        assert time.monotonic() < deadline, "the first commit was never deleted"
        for _ in range(3):
            p.produce(topic, value=b"c%d" % n)
            n += 1
        assert p.flush(30) == 0
        same_tables(tdir, n, raw_key)
        time.sleep(0.5)   # let the checkpoints age past the 1 s retention
    with open(os.path.join(logdir, "_last_checkpoint")) as f:
        last = json.load(f)
    cp = os.path.join(logdir, "%020d.checkpoint.parquet" % last["version"])
    assert os.path.exists(cp) and last["version"] % 2 == 0
    # the checkpoint holds the table's state as Delta's checkpoint schema says
    pa_pq = pytest.importorskip("pyarrow.parquet")
    t = pa_pq.read_table(cp)
    assert {"txn", "add", "remove", "metaData", "protocol"} <= set(t.column_names)
    assert last["size"] == t.num_rows
    adds = [r for r in t.column("add").to_pylist() if r]
    assert len(adds) == len(deltalake.DeltaTable(tdir, version=last["version"]).file_uris())
    # readers load from it: every version before it but the checkpoint's own is gone
    rows = same_tables(tdir, n, raw_key)
    assert sorted(r["value"] for r in rows) == sorted(b"c%d" % i for i in range(n))
    versions = sorted(int(f[:20]) for f in os.listdir(logdir) if f.endswith(".json"))
    assert versions[0] > 0 and versions == list(range(versions[0], versions[-1] + 1))


def test_a_column_delta_cannot_hold_holds_the_table_back(broker):
    """Delta has no time type: a format=delta table with a time column takes
    no commit (neither format), and says why."""
    iu.local_store_only()
    topic = create_topic(broker.bootstrap, unique_topic("delta-time"), config=dict(
        BASE, **{"lakestream.table.value.format": "schema-registry",
                 "lakestream.table.format": "delta"}))
    schema = json.dumps({"type": "record", "name": "Tick", "fields": [
        {"name": "at", "type": {"type": "long", "logicalType": "time-micros"}}]})
    sr = SchemaRegistryClient({"url": broker.registry_url})
    p = SerializingProducer({"bootstrap.servers": broker.bootstrap,
                             "value.serializer": AvroSerializer(sr, schema)})
    p.produce(topic, value={"at": 1000})
    assert p.flush(30) == 0
    deadline = time.monotonic() + 60
    while not (_held_reason(broker, topic) or ""):
        assert time.monotonic() < deadline, "the table was not held back"
        time.sleep(0.3)
    why = _held_reason(broker, topic)
    assert "lakestream.table.format" in why and "time" in why, why
    tdir = iu.table_dir(broker, topic)
    assert not os.path.isdir(os.path.join(tdir, "_delta_log"))
    md = iu.current_metadata(tdir)
    assert md is None or iu.pyiceberg_table.StaticTable.from_metadata(
        "file://" + md).scan().to_arrow().num_rows == 0


@pytest.mark.parametrize("point", ["table.delta.before_commit", "table.delta.committed",
                                   "table.delta.checkpointed"])
def test_crash_around_the_delta_commit(broker_factory, point):
    """The broker dies (kill -9) after the Iceberg commit and before the
    Delta one, after both and before the index swap, or after a checkpoint
    (every commit checkpoints here) before its clean-up; after a restart
    both tables hold every acknowledged record exactly once."""
    iu.local_store_only()
    b = broker_factory(*FLAGS)
    topic = create_topic(b.bootstrap, unique_topic("delta-crash"), partitions=2,
                         config=dict(BASE, **{"lakestream.table.format": "delta",
                                              "lakestream.table.delta.checkpoint.interval": "1"}))
    tdir = iu.table_dir(b, topic)
    s = Sender(b.bootstrap, topic, parts=2)
    s.send(0, 10)
    s.flush()
    same_tables(tdir, 10, raw_key)
    b.stop()
    b.env_extra = {"LS_CRASH_AT": point}
    b.start()
    s.send(10, 40)
    b.wait_crashed()
    assert b.log_text().count("crash point %s reached" % point) == 1
    b.env_extra = {}
    b.start()
    s.send(50, 10)
    s.flush()
    assert len(s.acked) == 60
    rows = same_tables(tdir, 60, raw_key)
    assert {r["value"]: raw_key(r) for r in rows} == s.acked
    adds = [a["add"]["path"] for _, a in delta_log(tdir) if "add" in a]
    assert len(adds) == len(set(adds)), "a data file was added to the Delta log twice"
    with open(os.path.join(tdir, "_delta_log", "_last_checkpoint")) as f:
        last = json.load(f)["version"]
    assert deltalake.DeltaTable(tdir, version=last).to_pyarrow_table().num_rows <= 60


def test_bad_format_values_are_refused_naming_the_key(broker):
    a = AdminClient({"bootstrap.servers": broker.bootstrap})
    for value in ("parquet", "Delta", "delta,iceberg,hudi", ""):
        topic = unique_topic("delta-bad")
        fut = a.create_topics([NewTopic(topic, 1, 1, config={
            "lakestream.table.format": value})])[topic]
        with pytest.raises(KafkaException) as e:
            fut.result(30)
        err = e.value.args[0]
        assert err.code() == 40, (value, err)   # INVALID_CONFIG
        assert "lakestream.table.format" in err.str() and "iceberg,delta" in err.str(), err.str()
