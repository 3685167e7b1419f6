"""Upsert tables (issue 15): a compacted topic with
lakestream.table.write.mode=upsert materializes as one row per record key, its
latest value; a tombstone (null value) deletes the row. Checked against a
model after every round of random upserts and deletes, by PyIceberg on the
newest table version: exactly the model's keys, each once, with its latest
value; the table's history shows the copy-on-write overwrite commits, and
the first snapshot still reads as it was (time travel)."""

import json
import os
import random
import time

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from pyiceberg import table as pyiceberg_table

import iceberg_util
from kafka_util import unique_topic, wait_topic

PARTS = 3
KEYS = 60
ROUNDS = 6
PER_ROUND = 150

UPSERT = {"cleanup.policy": "compact",
          "lakestream.table.enabled": "true",
          "lakestream.table.commit.interval.ms": "1000",
          "lakestream.table.write.mode": "upsert"}


def upsert_topic(b, prefix, parts=PARTS, **extra):
    """A topic of b with an upsert table (UPSERT plus extra configs): its
    name and table directory."""
    topic = unique_topic(prefix)
    a = AdminClient({"bootstrap.servers": b.bootstrap})
    a.create_topics([NewTopic(topic, parts, 1, config=dict(UPSERT, **extra))])[topic].result(30)
    wait_topic(b.bootstrap, topic, parts)
    return topic, iceberg_util.table_dir(b, topic)


def newest(tdir):
    md = iceberg_util.current_metadata(tdir)
    return pyiceberg_table.StaticTable.from_metadata("file://" + md) if md else None


def table_marks(t):
    """{log: last materialized offset} of a table version."""
    return {k: int(v) for k, v in t.metadata.properties.items()
            if k.startswith("lakestream.log.")}


def wait_caught_up(tdir, want_last, timeout=60):
    """The newest table version records, per partition, the last offset we
    produced (want_last: {partition: offset}); returns it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        t = newest(tdir)
        if t is not None:
            marks = sorted(table_marks(t).values())
            if marks == sorted(want_last.values()):
                return t
        time.sleep(0.2)
    raise AssertionError("table %s did not catch up to %s (has %s)"
                         % (tdir, want_last, t and table_marks(t)))


def table_state(t, snapshot_id=None):
    rows = t.scan(snapshot_id=snapshot_id, selected_fields=("key", "value")).to_arrow().to_pylist()
    state = {}
    for r in rows:
        assert r["key"] not in state, "key %r twice in the table" % r["key"]
        state[r["key"]] = r["value"]
    return state


def model_rounds(b, topic, tdir, seed=15, check=None, model=None):
    """ROUNDS rounds of random upserts and deletes (a fifth of them
    tombstones) into topic, each checked, once the table caught up, against
    the model by PyIceberg and by check(t, model) when given: the newest
    table, the model, and (snapshot id, state) after the first round.
    model: what earlier rounds left in the topic (none: an empty topic)."""
    rnd = random.Random(seed)
    model, last = dict(model or {}), {}
    p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all", "linger.ms": 5,
                  "enable.idempotence": True})
    errors = []

    def cb(err, msg):
        if err is not None:
            errors.append(err)
        else:
            last[msg.partition()] = max(last.get(msg.partition(), -1), msg.offset())
    seq = 0
    first_snapshot = None
    for rnd_no in range(ROUNDS):
        for _ in range(PER_ROUND):
            k = b"key-%d" % rnd.randrange(KEYS)
            if rnd.random() < 0.2:
                value = None
                model.pop(k, None)
            else:
                value = b"v%d" % seq
                model[k] = value
            seq += 1
            # the key decides the partition (as the default partitioner does)
            p.produce(topic, key=k, value=value, partition=hash(k) % PARTS, on_delivery=cb)
        assert p.flush(30) == 0 and not errors, errors
        t = wait_caught_up(tdir, last)
        assert table_state(t) == model, "round %d: the table differs from the model" % rnd_no
        if check:
            check(t, model)
        if first_snapshot is None:
            first_snapshot = (t.metadata.current_snapshot_id, dict(model))
    return t, model, first_snapshot


def test_upsert_table_equals_the_model(broker_factory):
    iceberg_util.local_store_only()
    b = broker_factory("--compaction.min.age.ms=0", "--compaction.interval.ms=200")
    topic, tdir = upsert_topic(b, "upsert")
    t, model, (snap, state) = model_rounds(b, topic, tdir)
    ops = [s.summary.operation.value for s in t.metadata.snapshots]
    assert "overwrite" in ops, ops
    total = int(t.metadata.current_snapshot().summary["total-records"])
    assert total == len(model), "summary total-records %d, keys %d" % (total, len(model))
    # time travel: the first snapshot still holds the first round's state
    assert any(s.snapshot_id == snap for s in t.metadata.snapshots), "first snapshot expired"
    assert table_state(t, snap) == state


MOR = {"lakestream.table.upsert.strategy": "merge-on-read",
       "lakestream.table.rewrite.min.files": "4"}


def duckdb_state(t):
    """The table's rows as DuckDB reads them: its Parquet reader on the live
    data files, less the rows the live position delete files name (what an
    engine applying the deletes itself sees)."""
    import duckdb
    files, deletes = [], []
    for task in t.scan().plan_files():
        files.append(task.file.file_path)
        deletes.extend(d.file_path for d in task.delete_files)
    con = duckdb.connect()
    strip = lambda u: u[len("file://"):] if u.startswith("file://") else u
    rows = con.execute(
        "SELECT key, value FROM read_parquet(?, filename=true, file_row_number=true) d "
        + ("WHERE NOT EXISTS (SELECT 1 FROM read_parquet(?) x "
           "WHERE x.file_path = 'file://' || d.filename AND x.pos = d.file_row_number)"
           if deletes else ""),
        [[strip(f) for f in files]] + ([[strip(f) for f in sorted(set(deletes))]]
                                       if deletes else [])).fetchall()
    state = {}
    for k, v in rows:
        assert bytes(k) not in state, "key %r twice" % k
        state[bytes(k)] = bytes(v)
    return state


def test_merge_on_read_upsert_table_equals_the_model(broker_factory):
    """upsert.strategy=merge-on-read (issue 35): the same rounds as above
    write position delete files instead of copying data files: no upsert
    commit removes a data file, PyIceberg and DuckDB (applying the deletes
    itself) read the model after every round, and the maintenance rewrite
    (rewrite.min.files=4) folds deletes into data files and drops delete
    files while readers keep seeing the model."""
    iceberg_util.local_store_only()
    b = broker_factory("--compaction.min.age.ms=0", "--compaction.interval.ms=200")
    topic, tdir = upsert_topic(b, "upmor", **MOR)

    def check(t, model):
        assert duckdb_state(t) == model
    t, model, (snap, state) = model_rounds(b, topic, tdir, seed=35, check=check)
    sums = [s.summary for s in t.metadata.snapshots]
    def num(s, key):
        return int(s.get(key) or 0)
    assert any(num(s, "added-position-deletes") > 0 for s in sums), sums
    assert all(num(s, "deleted-data-files") == 0
               for s in sums if s.operation.value == "overwrite"), sums
    assert any(num(s, "removed-delete-files") > 0 for s in sums
               if s.operation.value == "replace"), "no rewrite dropped a delete file"
    # the summary's totals agree with what a reader plans and reads
    cur = t.metadata.current_snapshot().summary
    tasks = list(t.scan().plan_files())
    assert num(cur, "total-delete-files") == len({d.file_path for x in tasks
                                                   for d in x.delete_files})
    assert num(cur, "total-records") - num(cur, "total-position-deletes") == len(model)
    assert table_state(t, snap) == state


MOR_V3 = dict(MOR, **{"lakestream.table.format.version": "3"})


def puffin_referenced(path):
    """The referenced-data-file of the one deletion vector in the Puffin
    file at path, from its footer (Puffin spec: magic, JSON, its length,
    flags, magic)."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:4] == b"PFA1" and data[-4:] == b"PFA1"
    n = int.from_bytes(data[-12:-8], "little")
    footer = json.loads(data[-12 - n:-12])
    (blob,) = footer["blobs"]
    assert blob["type"] == "deletion-vector-v1"
    return blob["properties"]["referenced-data-file"]


def test_v3_merge_on_read_upsert_table_equals_the_model(broker_factory):
    """format.version=3 (issue 35): the same rounds write one deletion
    vector (a Puffin file) per data file instead of position delete files;
    PyIceberg reads the model after every round; no data file ever has two
    live vectors; the maintenance drops the vectors of the files it copies;
    every snapshot assigns row ids (first-row-id, added-rows) and the
    table's next-row-id stays above them."""
    iceberg_util.local_store_only()
    b = broker_factory("--compaction.min.age.ms=0", "--compaction.interval.ms=200")
    topic, tdir = upsert_topic(b, "upv3", **MOR_V3)

    def check(t, model):
        assert t.metadata.format_version == 3
        vectors = {d.file_path for x in t.scan().plan_files() for d in x.delete_files}
        named = [puffin_referenced(iceberg_util.local_path(v)) for v in vectors]
        assert all(v.endswith(".puffin") for v in vectors), vectors
        assert len(set(named)) == len(named), "a data file with two live vectors"
        live = {x.file.file_path for x in t.scan().plan_files()}
        assert set(named) <= live, "a vector of a data file no longer live"
    t, model, _ = model_rounds(b, topic, tdir, seed=38, check=check)
    sums = [s.summary for s in t.metadata.snapshots]
    assert any(int(s.get("added-position-deletes") or 0) > 0 for s in sums), sums
    assert any(int(s.get("removed-delete-files") or 0) > 0 for s in sums
               if s.operation.value == "replace"), "no rewrite dropped a vector"
    with open(iceberg_util.current_metadata(tdir)) as f:
        md = json.load(f)
    firsts = [(s["first-row-id"], s["added-rows"]) for s in md["snapshots"]]
    assert all(f >= 0 and a >= 0 for f, a in firsts), firsts
    assert md["next-row-id"] >= max(f + a for f, a in firsts)
    assert not any(n.endswith(".deletes.parquet")
                   for _, _, fs in os.walk(os.path.join(tdir, "data")) for n in fs)


def test_merge_on_read_is_refused_where_it_cannot_apply(broker):
    """merge-on-read is how upsert tables remove rows, and a Delta log
    carries no position deletes: both combinations are refused naming the
    key, never accepted and ignored."""
    from confluent_kafka import KafkaException
    a = AdminClient({"bootstrap.servers": broker.bootstrap})
    for extra, why in ((dict(UPSERT, **{"lakestream.table.write.mode": "append",
                                        "cleanup.policy": "delete"}), "write.mode"),
                       (dict(UPSERT, **{"lakestream.table.format": "iceberg,delta"}),
                        "lakestream.table.format")):
        topic = unique_topic("morno")
        cfg = dict(extra, **{"lakestream.table.upsert.strategy": "merge-on-read"})
        fut = a.create_topics([NewTopic(topic, 1, 1, config=cfg)])[topic]
        try:
            fut.result(30)
            raise AssertionError("accepted: %s" % cfg)
        except KafkaException as e:
            msg = str(e.args[0])
            assert "lakestream.table.upsert.strategy" in msg and why in msg, msg


def test_format_version_upgrade_and_refusals(broker_factory):
    """lakestream.table.format.version (issue 35): a value other than 2 or
    3, and 3 with a Delta log, are refused naming the key; an upsert table
    with data written at version 2 is upgraded to 3 by its next commit
    (PyIceberg reads every key's latest value before and after, and the
    commit after the upgrade assigns row ids), and the topic then refuses 2:
    an Iceberg table's format version never goes back."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource
    iceberg_util.local_store_only()
    b = broker_factory("--compaction.min.age.ms=0", "--compaction.interval.ms=200")
    a = AdminClient({"bootstrap.servers": b.bootstrap})
    key = "lakestream.table.format.version"

    def refused(fut, *words):
        try:
            fut.result(30)
            raise AssertionError("accepted")
        except KafkaException as e:
            msg = str(e.args[0])
            assert key in msg and all(w in msg for w in words), msg
    for cfg, words in (({key: "4"}, ()),
                       ({key: "3", "lakestream.table.format": "iceberg,delta"},
                        ("lakestream.table.format",))):
        topic = unique_topic("fvno")
        refused(a.create_topics([NewTopic(topic, 1, 1, config=dict(UPSERT, **cfg))])[topic],
                *words)
    topic, tdir = upsert_topic(b, "fvup", **MOR)
    t, model, _ = model_rounds(b, topic, tdir, seed=40)
    assert t.metadata.format_version == 2

    def alter(v):
        res = ConfigResource("topic", topic, incremental_configs=[ConfigEntry(
            key, v, incremental_operation=AlterConfigOpType.SET)])
        return a.incremental_alter_configs([res])[res]
    alter("3").result(30)
    t, model, _ = model_rounds(b, topic, tdir, seed=41, model=model)
    assert t.metadata.format_version == 3 and table_state(t) == model
    with open(iceberg_util.current_metadata(tdir)) as f:
        md = json.load(f)
    assert md["next-row-id"] > 0
    assert [s.get("first-row-id") is not None for s in md["snapshots"]][-1]
    refused(alter("2"), "never goes back")


def test_upsert_needs_keys(broker_factory):
    """A keyless record on an upsert table that is not a compacted topic
    holds the table back with the reason; error.handling=skip leaves it out."""
    iceberg_util.local_store_only()
    b = broker_factory("--compaction.min.age.ms=0", "--compaction.interval.ms=200")
    a = AdminClient({"bootstrap.servers": b.bootstrap})
    topic = unique_topic("upskip")
    cfg = dict(UPSERT, **{"cleanup.policy": "delete", "lakestream.table.error.handling": "skip"})
    a.create_topics([NewTopic(topic, 1, 1, config=cfg)])[topic].result(30)
    wait_topic(b.bootstrap, topic, 1)
    p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all"})
    for i in range(10):
        p.produce(topic, key=None if i == 3 else b"k%d" % (i % 4), value=b"v%d" % i, partition=0)
    assert p.flush(30) == 0
    t = wait_caught_up(iceberg_util.table_dir(b, topic), {0: 9})
    assert table_state(t) == {b"k0": b"v8", b"k1": b"v9", b"k2": b"v6", b"k3": b"v7"}
    assert t.metadata.current_snapshot().summary["lakestream.skipped-records"] == "1"


def test_typed_upsert_table(broker_factory):
    """A compacted topic with typed values (value.format=schema-registry) is an
    upsert table by default: one row per key with the latest value's fields;
    a tombstone deletes the row."""
    iceberg_util.local_store_only()
    import json
    from confluent_kafka import SerializingProducer
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.serialization import StringSerializer
    b = broker_factory("--compaction.min.age.ms=0", "--compaction.interval.ms=200")
    topic = unique_topic("uptyped")
    a = AdminClient({"bootstrap.servers": b.bootstrap})
    a.create_topics([NewTopic(topic, 1, 1, config={
        "cleanup.policy": "compact", "lakestream.table.enabled": "true",
        "lakestream.table.commit.interval.ms": "1000",
        "lakestream.table.value.format": "schema-registry"})])[topic].result(30)
    wait_topic(b.bootstrap, topic, 1)
    schema = {"type": "record", "name": "Acct", "fields": [
        {"name": "owner", "type": "string"}, {"name": "balance", "type": "long"}]}
    ser = AvroSerializer(SchemaRegistryClient({"url": b.registry_url}), json.dumps(schema))
    p = SerializingProducer({"bootstrap.servers": b.bootstrap, "key.serializer": StringSerializer(),
                             "value.serializer": ser})
    last = {}
    model = {}
    for rnd_no in range(3):
        for i in range(40):
            k = "acct-%d" % (i % 7)
            if (i + rnd_no) % 9 == 8:
                v = None
                model.pop(k, None)
            else:
                v = {"owner": "o%d" % (i % 7), "balance": rnd_no * 100 + i}
                model[k] = v
            p.produce(topic, key=k, value=v, partition=0,
                      on_delivery=lambda err, msg: last.__setitem__(0, msg.offset()))
        assert p.flush(30) == 0
        t = wait_caught_up(iceberg_util.table_dir(b, topic), dict(last))
        rows = t.scan().to_arrow().to_pylist()
        got = {r["_kafka_key"].decode(): {"owner": r["owner"], "balance": r["balance"]}
               for r in rows}
        assert len(got) == len(rows) and got == model, (rnd_no, got, model)


def test_changelog_table_keeps_every_change(broker_factory):
    """lakestream.table.changelog=true: beside the upsert table, the append-only
    table <name>__changelog holds every record — updates and tombstones — at its
    offset, committed in the same pass."""
    iceberg_util.local_store_only()
    b = broker_factory("--compaction.min.age.ms=0", "--compaction.interval.ms=200")
    topic, tdir = upsert_topic(b, "upcl", **{"lakestream.table.changelog": "true"})
    cdir = iceberg_util.table_dir(b, topic + "__changelog")
    p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all", "linger.ms": 5})
    sent, last, model = {}, {}, {}

    def cb(err, msg):
        assert err is None, err
        sent[(msg.partition(), msg.offset())] = (msg.key(), msg.value())
        last[msg.partition()] = max(last.get(msg.partition(), -1), msg.offset())
    for rnd_no in range(3):
        for i in range(90):
            k = b"c%d" % (i % 11)
            v = None if (i + rnd_no) % 5 == 0 else b"r%d-%d" % (rnd_no, i)
            if v is None:
                model.pop(k, None)
            else:
                model[k] = v
            p.produce(topic, key=k, value=v, partition=(i % 11) % PARTS, on_delivery=cb)
        assert p.flush(30) == 0
        t = wait_caught_up(tdir, last)
        assert table_state(t) == model
        c = wait_caught_up(cdir, last)
        rows = c.scan(selected_fields=("partition", "offset", "key", "value")).to_arrow().to_pylist()
        got = {(r["partition"], r["offset"]): (r["key"], r["value"]) for r in rows}
        assert len(got) == len(rows) and got == sent
