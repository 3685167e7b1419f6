"""Our Iceberg tables read by the Apache Iceberg Java library, the reference
implementation behind Spark, Trino and Flink (tests/integration/java/iceberg/
IcebergRead.java, compiled with javac against the jars tools/install-deps.sh
puts in .cache/java/iceberg; nothing is downloaded here).

The reader loads a table from a metadata file (StaticTableOperations +
HadoopFileIO) or from its directory (HadoopTables, through version-hint.text)
and reports every row of the current snapshot (IcebergGenerics), the planned
data files with their data/file sequence numbers, the files, entries,
manifests, snapshots and history metadata tables, and every row of the oldest
retained snapshot (time travel). The tests compare that with what was written
and with what PyIceberg plans:

- the tables tests/unit/table/test_iceberg.c writes (as in test_tables.py's
  `warehouse`): raw_unpart, raw_day, raw_hour, raw_markers and raw_merged
  (merged manifests with EXISTING entries, expired snapshots, a trimmed
  metadata log);
- a table a live broker materializes from a 3-partition topic produced in
  bursts (1 s commits, snapshots expiring after 4 s), compared byte for byte
  with the delivery reports of what was produced;
- a typed table whose schema evolved (added column, int -> long, float ->
  double) with versions interleaved, read through its current schema;
- typed tables of decimals (INT32, INT64, fixed bytes), fixed, uuid, time and
  a union of several types (struct of tag and members), value by value.
"""

import json
import os
import subprocess
import time

import pytest

import iceberg_util
import lsbroker
from test_tables import emit, ice_row, ROWS

pyiceberg_table = pytest.importorskip("pyiceberg.table")

pytestmark = pytest.mark.heavy

ICEBERG_LIB = os.path.join(lsbroker.ROOT, ".cache", "java", "iceberg")
READER_SRC = os.path.join(lsbroker.HERE, "java", "iceberg", "IcebergRead.java")
JVM = ["java", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]


# ---- the Java reader ---------------------------------------------------------

@pytest.fixture(scope="module")
def java_reader(tmp_path_factory):
    """Compiles IcebergRead once; returns run(*tables) -> parsed JSON tables."""
    if not os.path.isdir(ICEBERG_LIB) or not any(f.startswith("iceberg-core-")
                                                 for f in os.listdir(ICEBERG_LIB)):
        pytest.fail("no Iceberg jars in %s; run tools/install-deps.sh test" % ICEBERG_LIB,
                    pytrace=False)
    cp = os.path.join(ICEBERG_LIB, "*")
    out = str(tmp_path_factory.mktemp("icejava_classes"))
    r = subprocess.run(["javac", "-nowarn", "-cp", cp, "-d", out, READER_SRC],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, "javac IcebergRead failed:\n%s%s" % (r.stdout, r.stderr)

    def run(*tables, check=True):
        res = subprocess.run(JVM + ["-cp", out + os.pathsep + cp, "IcebergRead"] + list(tables),
                             capture_output=True, text=True, timeout=120)
        if not check:
            return res
        assert res.returncode == 0, "IcebergRead %s failed:\n%s" % (tables, res.stderr[-4000:])
        doc = json.loads(res.stdout)
        assert doc["iceberg_version"].startswith("1.")
        return doc["tables"]
    return run


def row_json(partition, offset, ts_us, key, value, headers):
    """A row in IcebergRead's layout: bytes as hex, headers as [key, value hex]."""
    hx = lambda b: None if b is None else b.hex()  # noqa: E731
    return [partition, offset, ts_us, hx(key), hx(value),
            [[h["key"], hx(h["value"])] for h in headers]]


def ice_row_json(i):
    r = ice_row(i)
    return row_json(r["partition"], r["offset"], r["ts_us"], r["key"], r["value"], r["headers"])


def pyiceberg_rows(t, snapshot_id=None):
    """Every row of a PyIceberg scan in IcebergRead's layout, sorted."""
    arrow = t.scan(snapshot_id=snapshot_id).to_arrow() if snapshot_id else t.scan().to_arrow()
    out = []
    for r in arrow.to_pylist():
        ts = r["timestamp"]
        ts_us = int(ts.timestamp()) * 1000000 + ts.microsecond
        out.append(row_json(r["partition"], r["offset"], ts_us, r["key"], r["value"],
                            r["headers"] or []))
    return sorted(out, key=lambda x: (x[0], x[1]))


def pyiceberg_sequences(t):
    """{data file path: (data sequence number, file sequence number)} of the
    current snapshot's live entries, as PyIceberg reads its manifests."""
    out = {}
    for m in t.current_snapshot().manifests(t.io):
        for e in m.fetch_manifest_entry(t.io, discard_deleted=True):
            assert e.data_file.file_path not in out, "file listed twice: %s" % e.data_file.file_path
            out[e.data_file.file_path] = (e.sequence_number, e.file_sequence_number)
    return out


def check_probes(jt):
    """Java's filtered reads (which prune files by partition values and
    column bounds, then filter rows) return exactly the rows that match."""
    rows = jt["rows"]
    assert jt["probes"]
    for probe in jt["probes"]:
        what = probe["what"]
        if what == "key-is-null":
            want = {(r[0], r[1]) for r in rows if r[3] is None}
        else:
            kind, at = what.split("@")
            p, o = (int(x) for x in at.split(":"))
            (ref,) = [r for r in rows if r[0] == p and r[1] == o]
            col = {"partition+offset": None, "timestamp": 2, "key": 3, "value": 4}[kind]
            want = {(p, o)} if col is None else {(r[0], r[1]) for r in rows if r[col] == ref[col]}
        got = [tuple(x) for x in probe["rows"]]
        assert len(got) == len(set(got)), "%s: a row returned twice" % what
        assert set(got) == want, "%s: Java returned %d rows, %d match" % (what, len(got), len(want))


def check_against_pyiceberg(jt, t):
    """What the Java reader and PyIceberg agree on for any table."""
    md = t.metadata
    # snapshots: ids, parents, sequence numbers, current
    want = sorted(((s.snapshot_id, s.parent_snapshot_id, s.sequence_number) for s in md.snapshots),
                  key=lambda x: x[2])
    assert [(s["id"], s["parent"], s["seq"]) for s in jt["snapshots"]] == want
    assert jt["current_snapshot_id"] == md.current_snapshot_id
    assert jt["last_sequence_number"] == md.last_sequence_number
    assert jt["format_version"] == 2
    assert sorted(r["snapshot_id"] for r in jt["meta"]["snapshots"]) == sorted(x[0] for x in want)
    assert [h["snapshot_id"] for h in jt["meta"]["history"]] == \
        [e.snapshot_id for e in md.snapshot_log]
    # planned files: the same files, each with the data sequence number PyIceberg inherits
    seqs = pyiceberg_sequences(t)
    planned = {p["path"]: (p["data_seq"], p["file_seq"]) for p in jt["planned"]}
    assert len(planned) == len(jt["planned"]), "a file planned twice"
    assert planned == seqs
    assert set(planned) == {task.file.file_path for task in t.scan().plan_files()}
    assert all(p["deletes"] == 0 for p in jt["planned"])
    # metadata tables: files = planned files; entries hold the same sequence numbers
    files = {f["file_path"]: f["record_count"] for f in jt["meta"]["files"]}
    assert set(files) == set(planned)
    assert sum(files.values()) == len(jt["rows"])
    live = [e for e in jt["meta"]["entries"] if e["status"] != 2]
    assert {e["data_file"]["file_path"]: (e["sequence_number"], e["file_sequence_number"])
            for e in live} == seqs
    manifests = t.current_snapshot().manifests(t.io)
    assert sorted(m["path"] for m in jt["meta"]["manifests"]) == \
        sorted(m.manifest_path for m in manifests)
    by_path = {m.manifest_path: m for m in manifests}
    for m in jt["meta"]["manifests"]:
        pm = by_path[m["path"]]
        assert (m["added_data_files_count"], m["existing_data_files_count"],
                m["deleted_data_files_count"], m["added_snapshot_id"]) == \
            (pm.added_files_count, pm.existing_files_count, pm.deleted_files_count,
             pm.added_snapshot_id)
    # every row exactly once, the same rows as PyIceberg's
    rows = sorted(jt["rows"], key=lambda x: (x[0], x[1]))
    assert len({(r[0], r[1]) for r in rows}) == len(rows), "a row read twice"
    assert rows == pyiceberg_rows(t)
    check_probes(jt)
    # time travel to the oldest retained snapshot
    oldest = min(md.snapshots, key=lambda s: s.sequence_number)
    assert jt["oldest_snapshot_id"] == oldest.snapshot_id
    assert sorted(jt["oldest_rows"], key=lambda x: (x[0], x[1])) == \
        pyiceberg_rows(t, oldest.snapshot_id)
    return rows


# ---- tables written by tests/unit/table/test_iceberg.c -----------------------------

@pytest.fixture(scope="module")
def warehouse(tmp_path_factory):
    out = emit("test_iceberg", tmp_path_factory.mktemp("iceberg"))
    return os.path.join(str(out), "store", "warehouse", "ns")


def _hinted_metadata(warehouse, name):
    md = os.path.join(warehouse, name, "metadata")
    with open(os.path.join(md, "version-hint.text")) as fp:
        return os.path.join(md, "v%d.metadata.json" % int(fp.read().strip()))


@pytest.fixture(scope="module")
def warehouse_java(warehouse, java_reader):
    """One JVM over the five tables: {name: IcebergRead's report}."""
    names = ["raw_unpart", "raw_day", "raw_hour", "raw_markers"]
    args = [_hinted_metadata(warehouse, name) for name in names]
    args.append("dir:" + os.path.join(warehouse, "raw_merged"))   # through version-hint.text
    args.append(_hinted_metadata(warehouse, "raw_rewritten"))
    tables = java_reader(*args)
    return dict(zip(names + ["raw_merged", "raw_rewritten"], tables))


def _load(warehouse, name):
    return pyiceberg_table.StaticTable.from_metadata("file://" + _hinted_metadata(warehouse, name))


@pytest.mark.parametrize("name,nrows", [("raw_unpart", ROWS), ("raw_day", ROWS),
                                        ("raw_hour", ROWS), ("raw_markers", 10),
                                        ("raw_merged", 2000), ("raw_rewritten", 2100)])
def test_java_reads_every_warehouse_row(warehouse, warehouse_java, name, nrows):
    jt = warehouse_java[name]
    rows = sorted(jt["rows"], key=lambda x: x[1])
    assert len(rows) == nrows
    for i, got in enumerate(rows):
        assert got == ice_row_json(i), (name, i)
    # and the same snapshots, files, sequence numbers, metadata tables and
    # time travel as PyIceberg's
    check_against_pyiceberg(jt, _load(warehouse, name))


def test_java_warehouse_snapshots_and_time_travel(warehouse_java):
    for name in ("raw_unpart", "raw_day"):
        jt = warehouse_java[name]
        assert [s["seq"] for s in jt["snapshots"]] == [1, 2, 3]
        assert jt["snapshots"][1]["parent"] == jt["snapshots"][0]["id"]
        assert jt["snapshots"][2]["summary"]["total-records"] == str(ROWS)
        # data sequence numbers of the three appends' files
        assert sorted({p["data_seq"] for p in jt["planned"]}) == [1, 2, 3]
        assert sorted(jt["oldest_rows"], key=lambda x: x[1]) == [ice_row_json(i)
                                                                  for i in range(2000)]
    assert "day" in warehouse_java["raw_day"]["spec"]
    parts = {(p["partition"]["timestamp_day"], p["partition"]["partition"])
             for p in warehouse_java["raw_day"]["planned"]}
    assert parts == {(ice_row(i)["ts_us"] // 86400000000, i % 3) for i in range(ROWS)}


def test_java_rewritten_table(warehouse_java):
    """raw_rewritten: Java reads the "replace" snapshot as Iceberg's own
    RewriteFiles writes one: the twenty removed files DELETED by it, the rest
    EXISTING with their own sequence numbers, the new file with the rewrite's."""
    jt = warehouse_java["raw_rewritten"]
    planned = jt["planned"]
    assert len(planned) == 44 and sum(p["records"] for p in planned) == 2100
    p0 = sorted(p["data_seq"] for p in planned if p["partition"]["partition"] == 0)
    assert p0 == [21, 22]
    assert sorted({p["data_seq"] for p in planned if p["partition"]["partition"] != 0}) == \
        list(range(1, 21)) + [22]
    # the current snapshot's manifests still hold the replace's 20 DELETED
    # entries, each with the sequence number of the append that wrote it
    deleted = [e for e in jt["meta"]["entries"] if e["status"] == 2]
    assert sorted(e["sequence_number"] for e in deleted) == list(range(1, 21))
    replace_id = next(x["id"] for x in jt["snapshots"] if x["seq"] == 21)
    assert all(e["snapshot_id"] == replace_id and e["data_file"]["partition"]["partition"] == 0
               for e in deleted)


def test_java_merged_and_expired_table(warehouse, warehouse_java):
    """raw_merged: Java plans every row once through merged manifests whose
    EXISTING entries keep their original snapshot ids and sequence numbers,
    reads the table through version-hint.text, and time-travels to the oldest
    snapshot that expiry left."""
    jt = warehouse_java["raw_merged"]
    assert jt["metadata_location"] == _hinted_metadata(warehouse, "raw_merged")
    seqs = [s["seq"] for s in jt["snapshots"]]
    assert 2 <= len(seqs) <= 12 and seqs == list(range(seqs[0], seqs[-1] + 1))
    assert seqs[0] > 1, "nothing expired"
    assert jt["last_sequence_number"] == 40
    # files from all 40 appends, each with the sequence number of its append
    planned = jt["planned"]
    assert len(planned) == 120 and sum(p["records"] for p in planned) == 2000
    assert sorted({p["data_seq"] for p in planned}) == list(range(1, 41))
    assert all(p["data_seq"] == p["file_seq"] for p in planned)
    for p in planned:
        offs = [r[1] for r in jt["rows"] if r[0] == p["partition"]["partition"]
                and (r[1] // 50) + 1 == p["data_seq"]]
        assert len(offs) == p["records"], p
    # merged manifests: EXISTING entries (status 0) with explicit snapshot ids
    # and sequence numbers older than their manifest's snapshot
    manifests = jt["meta"]["manifests"]
    assert len(manifests) <= 4
    assert any(m["existing_data_files_count"] > 0 for m in manifests)
    existing = [e for e in jt["meta"]["entries"] if e["status"] == 0]
    assert existing and all(e["sequence_number"] < 40 for e in existing)
    retained = {s["id"] for s in jt["snapshots"]}
    assert any(e["snapshot_id"] not in retained for e in existing), \
        "no EXISTING entry from an expired snapshot"
    # time travel: the oldest retained snapshot holds the first seq*50 rows
    assert sorted(jt["oldest_rows"], key=lambda x: x[1]) == [ice_row_json(i)
                                                              for i in range(seqs[0] * 50)]


def test_java_loads_metadata_log_going_back(warehouse, java_reader):
    """Regression: table timestamps came from the caller's clock unclamped, so a
    committer whose clock was behind the previous one's (test_iceberg.c once
    appended at 2023 times to tables created now) wrote a metadata log going
    back in time, and Iceberg Java refused the table ('[BUG] Expected sorted
    previous metadata log entries.'). Appends now never go back."""
    res = java_reader(_hinted_metadata(warehouse, "raw_unpart"),
                      "dir:" + os.path.join(warehouse, "raw_day"), check=False)
    assert "Expected sorted previous metadata log entries" not in res.stderr
    assert res.returncode == 0, res.stderr[-2000:]


# ---- a table the broker materializes -----------------------------------------

PARTS = 3
BURSTS = 6
PER_BURST = 500
KEEP = 3  # snapshots the live table keeps once idle (snapshot.retention.min)
TS0_MS = 1_700_000_000_000


def _record(i):
    """Record i: binary keys/values that are not UTF-8, null keys and values,
    empty values, repeated header keys and null header values."""
    key = None if i % 9 == 0 else bytes([0xff, 0x00, i & 0xff, (i >> 8) & 0xff]) + b"k%d" % (i % 13)
    if i % 17 == 0:
        value = None
    elif i % 23 == 0:
        value = b""
    elif i % 5 == 0:   # long runs of 0xff: upper bounds truncated past them
        value = b"\xff" * (10 + i % 20) + b"%d" % i
    else:
        value = b"v%d-" % i + bytes(range(256))[i % 216:i % 216 + 40]
    headers = [("i", b"%d" % i)]
    if i % 4 == 1:
        headers.append(("dup", b"\x00\x01"))
        headers.append(("dup", None))
    if i % 6 == 2:
        headers.append(("empty", b""))
    return key, value, headers, TS0_MS + i * 60_000


def test_java_reads_live_broker_table(broker_factory, java_reader):
    iceberg_util.local_store_only()
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    from kafka_util import unique_topic, wait_topic

    b = broker_factory("--compaction.min.age.ms=0", "--compaction.interval.ms=200")
    topic = unique_topic("icejava")
    a = AdminClient({"bootstrap.servers": b.bootstrap})
    a.create_topics([NewTopic(topic, PARTS, 1, config={
        "lakestream.table.enabled": "true",
        "lakestream.table.commit.interval.ms": "1000",
        "lakestream.table.snapshot.retention.ms": "4000",
        "lakestream.table.snapshot.retention.min": str(KEEP)})])[topic].result(30)
    wait_topic(b.bootstrap, topic, PARTS)
    tdir = iceberg_util.table_dir(b, topic)

    produced = {}   # (partition, offset) -> row in IcebergRead's layout
    errors = []

    def delivered(i):
        def cb(err, msg):
            if err is not None:
                errors.append(err)
                return
            key, value, headers, ts_ms = _record(i)
            produced[(msg.partition(), msg.offset())] = row_json(
                msg.partition(), msg.offset(), ts_ms * 1000, key, value,
                [{"key": k, "value": v} for k, v in headers])
        return cb

    p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all", "linger.ms": 5,
                  "enable.idempotence": True})
    n = BURSTS * PER_BURST
    for burst in range(BURSTS):
        for i in range(burst * PER_BURST, (burst + 1) * PER_BURST):
            key, value, headers, ts_ms = _record(i)
            p.produce(topic, key=key, value=value, headers=headers, timestamp=ts_ms,
                      partition=(i * 7) % PARTS, on_delivery=delivered(i))
        assert p.flush(30) == 0
        if burst < BURSTS - 1:
            time.sleep(1.5)
    assert not errors and len(produced) == n

    t, _, md = iceberg_util.wait_rows(tdir, n, timeout=40)
    # the table goes on without records: its snapshots past retention expire
    # in a commit of its own (the newest KEEP stay); once that landed nothing
    # commits, and both readers read the newest metadata
    deadline = time.monotonic() + 60
    while True:
        md = iceberg_util.current_metadata(tdir)
        t = pyiceberg_table.StaticTable.from_metadata("file://" + md)
        if len(t.metadata.snapshots) == KEEP:
            break
        assert time.monotonic() < deadline, "the idle table kept %d snapshots" % len(
            t.metadata.snapshots)
        time.sleep(0.5)
    jt, hinted = java_reader(md, "hint:" + tdir)
    assert jt["metadata_location"] == md
    # HadoopTables finds the same metadata through version-hint.text
    assert hinted["metadata_location"] == md

    assert len(jt["snapshots"]) >= 2, "expected several retained snapshots"
    assert jt["last_sequence_number"] >= 4, "expected a commit per burst or so"
    rows = check_against_pyiceberg(jt, t)
    # exactly what was produced, byte for byte, once
    assert len(rows) == n
    want = sorted(produced.values(), key=lambda x: (x[0], x[1]))
    assert rows == want
    # the snapshots of the table were taken in turns: data sequence numbers
    # of the planned files span more than one commit
    assert len({p["data_seq"] for p in jt["planned"]}) >= 2


def test_java_reads_incompressible_values(broker_factory, java_reader):
    """Random 1 KiB values (4 MiB in one data file): after the first zstd page
    of the value chunk does not shrink, the next ones are zstd frames of raw
    blocks (parquet_writer.c). The Iceberg Java library (parquet-mr's zstd)
    and PyIceberg read every value byte for byte."""
    iceberg_util.local_store_only()
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    from kafka_util import unique_topic, wait_topic

    b = broker_factory("--compaction.min.age.ms=0", "--compaction.interval.ms=200")
    topic = unique_topic("icerand")
    a = AdminClient({"bootstrap.servers": b.bootstrap})
    a.create_topics([NewTopic(topic, 1, 1, config={
        "lakestream.table.enabled": "true",
        "lakestream.table.commit.interval.ms": "1000"})])[topic].result(30)
    wait_topic(b.bootstrap, topic, 1)
    tdir = iceberg_util.table_dir(b, topic)
    n = 4096
    values = [os.urandom(1024) for _ in range(n)]
    produced = {}

    def delivered(err, msg):
        assert err is None
        produced[msg.offset()] = msg.value()

    p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all", "linger.ms": 20})
    for i, v in enumerate(values):
        p.produce(topic, value=v, timestamp=TS0_MS + i, on_delivery=delivered)
        p.poll(0)
    assert p.flush(30) == 0 and len(produced) == n
    iceberg_util.wait_rows(tdir, n, timeout=40)
    md = iceberg_util.current_metadata(tdir)
    t = pyiceberg_table.StaticTable.from_metadata("file://" + md)
    jt, _ = java_reader(md, "hint:" + tdir)
    rows = check_against_pyiceberg(jt, t)
    assert len(rows) == n
    assert {r[1]: bytes.fromhex(r[4]) for r in rows} == produced
    # the random bytes are stored (zstd could not shrink them either)
    live = [os.path.join(tdir, "data", p["path"].split("/data/", 1)[1]) for p in jt["planned"]]
    assert sum(os.path.getsize(f) for f in live) > n * 1024


def test_java_reads_upsert_table(broker_factory, java_reader):
    """An upsert table (issue 15) after rounds of random upserts and deletes:
    the Iceberg Java library plans the same live files as PyIceberg after the
    copy-on-write overwrite commits and reads exactly one row per live key,
    its latest value."""
    iceberg_util.local_store_only()
    import random
    from confluent_kafka import Producer
    from test_upsert_tables import table_marks, upsert_topic, wait_caught_up

    b = broker_factory("--compaction.min.age.ms=0", "--compaction.interval.ms=200")
    topic, tdir = upsert_topic(b, "upjava")
    rnd = random.Random(16)
    model, last = {}, {}
    p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all", "linger.ms": 5})

    def cb(err, msg):
        assert err is None, err
        last[msg.partition()] = max(last.get(msg.partition(), -1), msg.offset())
    for seq in range(600):
        k = b"\xffk%d" % rnd.randrange(40)
        value = None if rnd.random() < 0.2 else b"v%d" % seq
        if value is None:
            model.pop(k, None)
        else:
            model[k] = value
        p.produce(topic, key=k, value=value, partition=k[-1] % PARTS, on_delivery=cb)
        if seq % 150 == 149:
            assert p.flush(30) == 0
            wait_caught_up(tdir, last)
    t = wait_caught_up(tdir, last)
    assert table_marks(t)
    md = iceberg_util.current_metadata(tdir)
    t = pyiceberg_table.StaticTable.from_metadata("file://" + md)
    (jt,) = java_reader(md)
    rows = check_against_pyiceberg(jt, t)
    got = {bytes.fromhex(r[3]): bytes.fromhex(r[4]) for r in rows}
    assert len(got) == len(rows) and got == model
    assert "overwrite" in [s.summary.operation.value for s in t.metadata.snapshots]


def test_java_reads_merge_on_read_upsert_table(broker_factory, java_reader):
    """A merge-on-read upsert table (issue 35: position delete files, and
    maintenance folding them into data files): the Iceberg Java library
    plans the same data files with the same sequence numbers as PyIceberg,
    the same delete files for each, and reads exactly one row per live key,
    its latest value."""
    iceberg_util.local_store_only()
    from test_upsert_tables import MOR, model_rounds, upsert_topic

    b = broker_factory("--compaction.min.age.ms=0", "--compaction.interval.ms=200")
    topic, tdir = upsert_topic(b, "upmorjava", **MOR)
    t, model, _ = model_rounds(b, topic, tdir, seed=36)
    md = iceberg_util.current_metadata(tdir)
    t = pyiceberg_table.StaticTable.from_metadata("file://" + md)
    (jt,) = java_reader(md)
    assert [(s["id"], s["seq"]) for s in jt["snapshots"]] == \
        sorted(((s.snapshot_id, s.sequence_number) for s in t.metadata.snapshots),
               key=lambda x: x[1])
    planned = {p["path"]: (p["data_seq"], p["file_seq"], p["deletes"]) for p in jt["planned"]}
    tasks = list(t.scan().plan_files())
    seqs = pyiceberg_sequences(t)
    assert planned == {x.file.file_path: seqs[x.file.file_path] + (len(x.delete_files),)
                       for x in tasks}
    got = {bytes.fromhex(r[3]): bytes.fromhex(r[4]) for r in jt["rows"]}
    assert len(got) == len(jt["rows"]) and got == model
    sums = [s.summary for s in t.metadata.snapshots]
    assert any(int(s.get("added-position-deletes") or 0) > 0 for s in sums)


def test_java_reads_v3_deletion_vector_table(broker_factory, java_reader):
    """A merge-on-read upsert table of format version 3 (issue 35: deletion
    vectors in Puffin files, row lineage): the Iceberg Java library loads it
    as version 3, plans at most one vector per data file and only the data
    file's own, reads exactly one row per live key, its latest value; every
    snapshot assigns row ids at or above the last one's and every planned
    data file has a first row id, their ranges disjoint."""
    iceberg_util.local_store_only()
    from test_upsert_tables import MOR_V3, model_rounds, upsert_topic

    b = broker_factory("--compaction.min.age.ms=0", "--compaction.interval.ms=200")
    topic, tdir = upsert_topic(b, "upv3java", **MOR_V3)
    t, model, _ = model_rounds(b, topic, tdir, seed=39)
    (jt,) = java_reader(iceberg_util.current_metadata(tdir))
    assert jt["format_version"] == 3
    got = {bytes.fromhex(r[3]): bytes.fromhex(r[4]) for r in jt["rows"]}
    assert len(got) == len(jt["rows"]) and got == model
    assert any(p["deletes"] for p in jt["planned"]), "no deletion vector planned"
    for p in jt["planned"]:
        assert p["deletes"] <= 1 and p["delete_refs"] == [p["path"]] * p["deletes"], p
    ranges = sorted((p["first_row_id"], p["first_row_id"] + p["records"]) for p in jt["planned"])
    assert all(a[1] <= b[0] for a, b in zip(ranges, ranges[1:])), ranges
    nxt = 0
    for s in jt["snapshots"]:
        assert s["first_row_id"] is not None and s["first_row_id"] >= nxt, s
        nxt = s["first_row_id"] + s["added_rows"]


def test_java_reads_evolved_typed_table(broker, java_reader):
    """Schema evolution (issue 14 §4): the Iceberg Java library reads a typed
    table written under three schemas through the current one — old files
    projected by field id (null for the added column, ints as longs) — with
    the same rows as produced."""
    iceberg_util.local_store_only()
    from kafka_util import create_topic, unique_topic
    from test_schema_evolution import TYPED, V1, V2, V3, item, produce, register

    topic = create_topic(broker.bootstrap, unique_topic("evolve-java"), config=TYPED)
    i1, i2, i3 = register(broker, topic + "-value", V1, V2, V3)
    s = {1: (i1, V1), 2: (i2, V2), 3: (i3, V3)}
    tdir = iceberg_util.table_dir(broker, topic)
    versions = [1, 1, 2, 3, 1, 2]
    for i, v in enumerate(versions):     # one commit each: files under every schema
        produce(broker, topic, [(s[v][0], s[v][1], item(i, v))])
        iceberg_util.wait_rows(tdir, i + 1)
    (jt,) = java_reader("records:" + iceberg_util.current_metadata(tdir))
    assert [sc["id"] for sc in jt["schemas"]] == [0, 1, 2] and jt["current_schema_id"] == 2
    assert "id: required long" in jt["schemas"][2]["struct"]
    assert "note: optional string" in jt["schemas"][2]["struct"]
    got = {r["_kafka_offset"]: r for r in jt["records"]}
    assert sorted(got) == list(range(len(versions)))
    for i, v in enumerate(versions):
        want, r = item(i, v), got[i]
        assert (r["id"], r["name"], r["note"]) == (want["id"], want["name"], want.get("note")), r
        assert r["price"] == pytest.approx(want["price"])


def test_java_reads_primary_key_table(broker_factory, java_reader):
    """An upsert table keyed by typed key fields (lakestream.table.primary.key)
    after random upserts and deletes, the key schema evolving midway: the
    Iceberg Java library sees the identifier fields and reads one row per
    key, the model's, as PyIceberg does."""
    iceberg_util.local_store_only()
    from test_primary_keys import pk_topic, run_model, table_state

    b = broker_factory("--compaction.min.age.ms=0", "--compaction.interval.ms=200")
    topic, tdir = pk_topic(b, "pkjava")
    t, model = run_model(b, topic, tdir, rounds=4, per_round=150, seed=16)
    assert table_state(t) == model
    (jt,) = java_reader("records:" + iceberg_util.current_metadata(tdir))
    assert jt["identifier_field_names"] == ["_kafka_key_typed.region", "_kafka_key_typed.id"]
    got = {}
    for r in jt["records"]:
        k = r["_kafka_key_typed"]
        ident = (k["region"], k["id"])
        assert ident not in got, "key %r twice" % (ident,)
        got[ident] = (r["owner"], r["balance"])
    assert got == model


def test_java_reads_decimal_fixed_uuid_time_and_union_columns(broker, java_reader):
    """The types issue 14's second mapping slice added (decimal on INT32,
    INT64 and fixed bytes, fixed, uuid, time, unions of several types as a
    struct of tag and members): the Iceberg Java library reads every value
    as produced."""
    import datetime
    import decimal
    import uuid
    iceberg_util.local_store_only()
    from kafka_util import create_topic, unique_topic
    from test_typed_types import EVENT, PAY, TYPED, event, payment, produce, wait_rows

    out = {}
    for name, schema, make, n in (("pay", PAY, payment, 12), ("ev", EVENT, event, 8)):
        topic = create_topic(broker.bootstrap, unique_topic("java-" + name), config=TYPED)
        produce(broker, topic, schema, [make(i) for i in range(n)])
        tdir = iceberg_util.table_dir(broker, topic)
        wait_rows(tdir, n)
        res = java_reader("records:" + iceberg_util.current_metadata(tdir), check=False)
        assert res.returncode == 0, res.stderr[-4000:]
        (jt,) = json.loads(res.stdout, parse_float=decimal.Decimal)["tables"]
        out[name] = jt
    jt = out["pay"]
    struct = jt["schemas"][-1]["struct"]
    for part in ("amount: required decimal(9, 2)", "big: required decimal(30, 5)",
                 "mid: required decimal(18, 3)", "ref: required uuid", "code: required fixed[4]",
                 "at_ms: required time", "fee: optional decimal(4, 1)"):
        assert part in struct, (part, struct)
    got = {r["id"]: r for r in jt["records"]}
    assert sorted(got) == list(range(12))
    for i in range(12):
        want, r = payment(i), got[i]
        for k in ("amount", "big", "mid", "fee"):
            assert (None if r[k] is None else decimal.Decimal(r[k])) == want[k], (i, k, r[k])
        assert uuid.UUID(r["ref"]) == want["ref"] and r["code"] == want["code"].hex()
        for k in ("at_ms", "at_us"):  # LocalTime.toString: ISO, trailing zeros left out
            assert datetime.time.fromisoformat(r[k]) == want[k], (i, k, r[k])
    jt = out["ev"]
    assert "payload: optional struct<" in jt["schemas"][-1]["struct"]
    got = {r["id"]: r for r in jt["records"]}
    for i in range(8):
        e, r = event(i), got[i]
        p = r["payload"]
        if e["payload"] is None:
            assert p is None, (i, p)
            continue
        tag = {int: 0, str: 1, dict: 2}[type(e["payload"])]
        assert p["tag"] == tag and p["field%d" % tag] == e["payload"], (i, p)
        assert all(p["field%d" % k] is None for k in range(3) if k != tag), (i, p)


def test_java_reads_value_field_partitions(broker, java_reader):
    """Partitions on value fields (issue 14 §2): the Iceberg Java library
    reads the partition tuples of string (identity, truncate), nested long
    (bucket), timestamp (day), decimal (identity of a 4-byte and truncate of
    a 13-byte fixed), uuid (bucket, identity) and time (identity) sources
    with nulls as PyIceberg's transforms give them, prunes by the manifests
    and summaries, and reads every row. (identity of a fixed[L] column is
    left out: Iceberg Java 1.12's InternalReader reads an Avro fixed in a
    manifest as length-prefixed bytes, so it cannot read such manifests,
    its own included; fastavro and Avro's Java GenericDatumReader read ours.)"""
    import decimal
    iceberg_util.local_store_only()
    from kafka_util import create_topic, unique_topic
    from pyiceberg.transforms import BucketTransform
    from pyiceberg.types import UUIDType
    import test_field_partitions as fp
    import test_typed_types as ty

    spec = "identity(country), bucket(8, customer.id), day(created_at), truncate(3, sku)"
    topic = create_topic(broker.bootstrap, unique_topic("fparts-java"), partitions=2,
                         config=dict(fp.TYPED, **{"lakestream.table.partition": spec}))
    n = 40
    fp.produce(broker, topic, n)
    t, _, md = iceberg_util.wait_rows(iceberg_util.table_dir(broker, topic), n)
    (jt,) = java_reader("parts:country=DE@" + md)
    py = {tuple(task.file.partition[i] for i in range(4)) for task in t.scan().plan_files()}
    java = {(p["country"], p["customer.id_bucket"], p["created_at_day"], p["sku_trunc"])
            for p in jt["planned"]}
    assert java == py and len(jt["planned"]) == len(py)
    assert 0 < jt["filtered_files"] < len(py)
    assert jt["filtered_rows"] == sum(1 for i in range(n) if fp.sale(i)["country"] == "DE")
    (rt,) = java_reader("records:" + md)
    assert sorted(r["id"] for r in rt["records"]) == list(range(n))

    topic = create_topic(broker.bootstrap, unique_topic("fparts-java-dec"), config=dict(
        ty.TYPED, **{"lakestream.table.partition":
                     "identity(amount), truncate(100, big), bucket(4, ref), identity(ref), "
                     "identity(at_us)"}))
    rows = [ty.payment(i) for i in range(8)]
    ty.produce(broker, topic, ty.PAY, rows)
    tdir = iceberg_util.table_dir(broker, topic)
    ty.wait_rows(tdir, len(rows))
    md = iceberg_util.current_metadata(tdir)
    res = java_reader("parts:@" + md, check=False)
    assert res.returncode == 0, res.stderr[-4000:]
    (jt,) = json.loads(res.stdout, parse_float=decimal.Decimal)["tables"]
    bucket = BucketTransform(4).transform(UUIDType())

    def trunc100(d):  # truncate(100) of the unscaled value, same scale
        u = int(d.scaleb(5))
        return decimal.Decimal(u - u % 100).scaleb(-5)

    want = sorted((str(r["amount"]), str(trunc100(r["big"])), bucket(r["ref"]), str(r["ref"]),
                   (r["at_us"].hour * 3600 + r["at_us"].minute * 60 + r["at_us"].second) * 10**6
                   + r["at_us"].microsecond) for r in rows)
    got = sorted((str(p["amount"]), str(p["big_trunc"]), p["ref_bucket"], p["ref"], p["at_us"])
                 for p in jt["planned"])
    assert got == want
    (rt,) = java_reader("records:" + md)
    assert sorted(r["id"] for r in rt["records"]) == list(range(len(rows)))


def test_java_reads_boolean_float_double_partitions(broker, java_reader):
    """Identity partitions of boolean, float and double fields: the Iceberg
    Java library reads the partition tuples (NaN and null included, doubles
    at full precision), prunes an equality on each by the manifests and
    their summaries (contains_nan, IEEE bounds), and reads every row."""
    import math
    iceberg_util.local_store_only()
    from kafka_util import create_topic, unique_topic
    import test_field_partitions as fp

    topic = create_topic(broker.bootstrap, unique_topic("fparts-java-float"), config=dict(
        fp.TYPED, **{"lakestream.table.partition":
                     "identity(ok), identity(ratio), identity(score)"}))
    n = 60
    fp.produce_values(broker, topic, fp.READING, fp.reading, n)
    _, _, md = iceberg_util.wait_rows(iceberg_util.table_dir(broker, topic), n)
    want = {(r["ok"], r["ratio"], "NaN" if r["score"] is not None and math.isnan(r["score"])
             else r["score"]) for r in map(fp.reading, range(n))}
    for flt, keep in (("score=0.1", lambda r: r["score"] == 0.1),
                      ("score=-1e300", lambda r: r["score"] == -1e300),
                      ("ratio=-3.25", lambda r: r["ratio"] == -3.25),
                      ("ok=false", lambda r: not r["ok"])):
        (jt,) = java_reader("parts:%s@%s" % (flt, md))
        got = {(p["ok"], p["ratio"], "NaN" if p["score"] is not None and math.isnan(p["score"])
                else p["score"]) for p in jt["planned"]}
        assert got == want and len(jt["planned"]) == len(want)
        assert 0 < jt["filtered_files"] < len(want), (flt, jt["filtered_files"])
        assert jt["filtered_rows"] == sum(1 for i in range(n) if keep(fp.reading(i))), flt
    (rt,) = java_reader("records:" + md)
    assert sorted(r["id"] for r in rt["records"]) == list(range(n))


def test_java_reads_partition_values_longer_than_128_bytes(broker, java_reader):
    """identity of URLs up to ~1000 bytes and truncate(200) of bytes values:
    the Iceberg Java library reads the whole partition values, prunes an
    equality on a long URL by them, and reads every row."""
    iceberg_util.local_store_only()
    from kafka_util import create_topic, unique_topic
    import test_field_partitions as fp

    topic = create_topic(broker.bootstrap, unique_topic("fparts-java-long"), config=dict(
        fp.TYPED, **{"lakestream.table.partition": "identity(url), truncate(200, body)"}))
    n = 20
    fp.produce_values(broker, topic, fp.PAGE, fp.page, n)
    _, _, md = iceberg_util.wait_rows(iceberg_util.table_dir(broker, topic), n)
    long_url = fp.page(1)["url"]
    (jt,) = java_reader("parts:url=%s@%s" % (long_url, md))
    got = {(p["url"], p["body_trunc"]) for p in jt["planned"]}
    assert got == {(fp.page(i)["url"], fp.page(i)["body"][:200].hex()) for i in range(n)}
    assert 0 < jt["filtered_files"] < len(got)
    assert jt["filtered_rows"] == sum(1 for i in range(n) if fp.page(i)["url"] == long_url)
    (rt,) = java_reader("records:" + md)
    assert sorted(r["id"] for r in rt["records"]) == list(range(n))
