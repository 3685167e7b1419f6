"""Schema evolution of typed tables (issue 14 §4): values framed with the ids
of three registered versions of one Avro schema — v1, v2 (an added optional
field), v3 (an int widened to long, a float to double) — produced interleaved,
older versions after newer ones, become one Iceberg table whose schema
evolves in the commits that first write each version (new schemas appended,
field ids kept, the new column's id fresh); PyIceberg reads every row with
the right values, null for the column an old row lacks. A version the table
cannot evolve to (a string field turned int) follows
lakestream.table.evolution: fail holds the table back naming the offset,
the schema ids and the reason (the topic keeps taking writes); dead-letter
puts the record into <name>__dlq with the reason (new-table:
test_table_versions.py)."""

import io
import json
import re
import struct
import time

import pytest
from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import NewTopic
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

import iceberg_util as iu
from kafka_util import admin, create_topic, unique_topic
from lsbroker import wait_until

fastavro = pytest.importorskip("fastavro")

TYPED = {"lakestream.table.enabled": "true", "lakestream.table.commit.interval.ms": "1000",
         "lakestream.table.value.format": "schema-registry"}


def record(fields):
    return {"type": "record", "name": "Item", "namespace": "shop", "fields": fields}


V1 = record([{"name": "id", "type": "int"}, {"name": "name", "type": "string"},
             {"name": "price", "type": "float"}])
V2 = record(V1["fields"] + [{"name": "note", "type": ["null", "string"], "default": None}])
V3 = record([{"name": "id", "type": "long"}, {"name": "name", "type": "string"},
             {"name": "price", "type": "double"},
             {"name": "note", "type": ["null", "string"], "default": None}])
BAD = record([{"name": "id", "type": "int"}, {"name": "name", "type": "int"},
              {"name": "price", "type": "float"}])


def register(broker, subject, *schemas):
    sr = SchemaRegistryClient({"url": broker.registry_url})
    sr.set_compatibility(subject_name=subject, level="NONE")
    return [sr.register_schema(subject, Schema(json.dumps(s), "AVRO")) for s in schemas]


def framed(schema_id, schema, value):
    out = io.BytesIO()
    out.write(b"\x00" + struct.pack(">I", schema_id))
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), value)
    return out.getvalue()


def produce(broker, topic, items):
    """items: (schema id, schema, value[, key]) in order, one partition."""
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    failed = []
    for sid, schema, v, *key in items:
        p.produce(topic, value=framed(sid, schema, v), key=key[0] if key else None, partition=0,
                  on_delivery=lambda err, m: err and failed.append(err))
    assert p.flush(30) == 0 and not failed, failed


def item(i, version):
    v = {"id": i, "name": "n%d" % i, "price": i + 0.5}
    if version >= 2:
        v["note"] = None if i % 2 else "note %d" % i
    if version == 3:
        v["id"] = i + (1 << 40)     # needs the widened column
    return v


def test_versions_interleaved_land_in_one_evolving_table(broker):
    iu.local_store_only()
    topic = create_topic(broker.bootstrap, unique_topic("evolve"), config=TYPED)
    i1, i2, i3 = register(broker, topic + "-value", V1, V2, V3)
    s = {1: (i1, V1), 2: (i2, V2), 3: (i3, V3)}
    # the table is created from v1; then v2 evolves it in its own commit
    produce(broker, topic, [(i1, V1, item(i, 1)) for i in range(3)])
    iu.wait_rows(iu.table_dir(broker, topic), 3)
    produce(broker, topic, [(i2, V2, item(i, 2)) for i in range(3, 5)])
    iu.wait_rows(iu.table_dir(broker, topic), 5)
    # then every version interleaved in one commit: v3 evolves it again
    # mid-batch, v1 and v2 after v3 fit the widened table as they are
    order = [1, 3, 2, 1, 3, 1, 2, 3, 1]
    produce(broker, topic, [(s[v][0], s[v][1], item(i, v)) for i, v in enumerate(order, start=5)])
    versions = {i: 1 for i in range(3)}
    versions.update({3: 2, 4: 2})
    versions.update({i: v for i, v in enumerate(order, start=5)})
    t, rows, md = iu.wait_rows(iu.table_dir(broker, topic), len(versions))
    got = {r["_kafka_offset"]: r for r in rows.to_pylist()}
    assert sorted(got) == sorted(versions)
    for off, v in versions.items():
        want = item(off, v)
        r = got[off]
        assert r["id"] == want["id"] and r["name"] == want["name"], (off, r)
        assert r["price"] == pytest.approx(want["price"]), (off, r)
        assert r["note"] == want.get("note"), (off, v, r)   # null where v1 lacks it

    # the schema history: three schemas, field ids kept, the new one fresh
    meta = json.load(open(md))
    assert [sc["schema-id"] for sc in meta["schemas"]] == [0, 1, 2]
    assert meta["current-schema-id"] == 2
    def fields(sc):
        return {f["name"]: (f["id"], f["type"], f["required"]) for f in sc["fields"]}
    f0, f1, f2 = (fields(sc) for sc in meta["schemas"])
    assert (f0["id"], f0["name"], f0["price"]) == ((10, "int", True), (11, "string", True),
                                                  (12, "float", True))
    assert "note" not in f0 and f1["note"] == (13, "string", False)
    assert f1["id"] == f0["id"]
    assert (f2["id"], f2["price"], f2["note"]) == ((10, "long", True), (12, "double", True),
                                                   (13, "string", False))
    assert meta["last-column-id"] == 13
    props = meta["properties"]
    assert props["lakestream.value.schema-id"] == str(i3)
    assert props["lakestream.value.schema-ids"] == ",".join(str(x) for x in sorted({i1, i2, i3}))
    # each snapshot names the schema its files were committed under
    assert [sn["schema-id"] for sn in meta["snapshots"]][-1] == 2
    schema = t.schema()
    assert str(schema.find_field("id").field_type) == "long"
    assert not schema.find_field("note").required
    # a filter on the widened column prunes by bounds written as int and long
    big = t.scan(row_filter="id >= %d" % (1 << 40)).to_arrow().to_pylist()
    assert sorted(r["_kafka_offset"] for r in big) == sorted(o for o, v in versions.items() if v == 3)


def test_an_upsert_table_evolves_and_keeps_older_rows(broker):
    """Copy-on-write copies rows written under an older schema into the
    evolved one (by field id): a key's row stays whole whichever version
    wrote it."""
    iu.local_store_only()
    topic = create_topic(broker.bootstrap, unique_topic("evolve-upsert"),
                         config=dict(TYPED, **{"lakestream.table.write.mode": "upsert"}))
    i1, i2, i3 = register(broker, topic + "-value", V1, V2, V3)
    tdir = iu.table_dir(broker, topic)
    produce(broker, topic, [(i1, V1, item(i, 1), b"k%d" % i) for i in range(4)])
    iu.wait_rows(tdir, 4)
    # v2 replaces k1 and k2: the file of k0..k3 is copied without them, into v2's schema
    produce(broker, topic, [(i2, V2, item(i, 2), b"k%d" % i) for i in (1, 2)])
    wait_until(lambda: len(json.load(open(iu.current_metadata(tdir)))["schemas"]) == 2, 20,
               what="the upsert table's schema to evolve")
    # v3 replaces k0: copied again, into v3's (id long, price double)
    produce(broker, topic, [(i3, V3, item(0, 3), b"k0")])
    wait_until(lambda: len(json.load(open(iu.current_metadata(tdir)))["schemas"]) == 3, 20,
               what="the upsert table's schema to evolve again")
    md = iu.current_metadata(tdir)
    rows = iu.pyiceberg_table.StaticTable.from_metadata("file://" + md).scan().to_arrow()
    got = {r["_kafka_key"]: r for r in rows.to_pylist()}
    want = {b"k0": item(0, 3), b"k1": item(1, 2), b"k2": item(2, 2), b"k3": item(3, 1)}
    assert sorted(got) == sorted(want)
    for k, w in want.items():
        r = got[k]
        assert (r["id"], r["name"], r["note"]) == (w["id"], w["name"], w.get("note")), (k, r)
        assert r["price"] == pytest.approx(w["price"])


def test_an_incompatible_version_holds_the_table_back_under_fail(broker):
    iu.local_store_only()
    topic = create_topic(broker.bootstrap, unique_topic("evolve-fail"), config=TYPED)
    i1, ib = register(broker, topic + "-value", V1, BAD)
    produce(broker, topic, [(i1, V1, item(i, 1)) for i in range(3)])
    iu.wait_rows(iu.table_dir(broker, topic), 3)
    produce(broker, topic, [(ib, BAD, {"id": 3, "name": 7, "price": 1.0})])
    wait_until(lambda: re.search(
        r"offset 3 has value schema id %d, which table %s \(value schema id %d\) cannot evolve "
        r"to: /name: Iceberg cannot promote the string column to int "
        r"\(lakestream.table.evolution=fail\)" % (ib, re.escape(topic), i1),
        broker.log_text()), 20, what="the table's reason in the broker log")
    produce(broker, topic, [(i1, V1, item(i, 1)) for i in range(4, 6)])  # writes still accepted
    time.sleep(2.5)                    # two commit intervals: the table does not move
    md = iu.current_metadata(iu.table_dir(broker, topic))
    t = iu.pyiceberg_table.StaticTable.from_metadata("file://" + md)
    assert t.scan().to_arrow().num_rows == 3
    assert len(json.load(open(md))["schemas"]) == 1


def test_an_incompatible_version_is_dead_lettered(broker):
    iu.local_store_only()
    topic = create_topic(broker.bootstrap, unique_topic("evolve-dlq"),
                         config=dict(TYPED, **{"lakestream.table.evolution": "dead-letter"}))
    i1, ib = register(broker, topic + "-value", V1, BAD)
    produce(broker, topic, [(i1, V1, item(0, 1)), (ib, BAD, {"id": 1, "name": 7, "price": 1.0}),
                            (i1, V1, item(2, 1))])
    t, rows, _ = iu.wait_rows(iu.table_dir(broker, topic), 2)
    assert sorted(r["_kafka_offset"] for r in rows.to_pylist()) == [0, 2]
    d, drows, _ = iu.wait_rows(iu.table_dir(broker, topic + "__dlq"), 1)
    (r,) = drows.to_pylist()
    assert r["offset"] == 1 and r["value"] == framed(ib, BAD, {"id": 1, "name": 7, "price": 1.0})
    reason = {h["key"]: h["value"] for h in r["headers"]}["lakestream.dlq.error"]
    assert b"cannot evolve to: /name: Iceberg cannot promote the string column to int" in reason
    assert re.search(r"dead-lettering a record \(evolution=dead-letter\)", broker.log_text())


# the steps of the commit that evolves the schema: rows written, metadata
# written, the table pointer swapped (the commit point), the swaps pending
EVOLVE_POINTS = ["table.data_written", "table.metadata_written", "table.pointer_swapped",
                 "compact.table_committed"]


@pytest.mark.parametrize("point", EVOLVE_POINTS)
def test_kill_during_the_evolving_commit(broker_factory, point):
    """kill -9 at each step of the commit that first writes v2 and v3 rows:
    after the restart the table holds every record exactly once and each
    evolution happened once (three schemas), whether the crash came before
    the commit point (nothing of it stays; the retry evolves again) or after
    (the retry loads the evolved schema)."""
    iu.local_store_only()
    b = broker_factory("--compaction.min.age.ms=0", "--compaction.interval.ms=200")
    topic = create_topic(b.bootstrap, unique_topic("evolve-crash"), config=TYPED)
    i1, i2, i3 = register(b, topic + "-value", V1, V2, V3)
    tdir = iu.table_dir(b, topic)
    produce(b, topic, [(i1, V1, item(i, 1)) for i in range(3)])
    iu.wait_rows(tdir, 3)
    b.stop()
    b.env_extra = {"LS_CRASH_AT": point}
    b.start()
    versions = {i: 1 for i in range(3)}
    more = {3: 2, 4: 3, 5: 1, 6: 2}
    s = {1: (i1, V1), 2: (i2, V2), 3: (i3, V3)}
    produce(b, topic, [(s[v][0], s[v][1], item(i, v)) for i, v in more.items()])
    versions.update(more)
    b.wait_crashed()
    assert ("crash point %s reached" % point) in b.log_text()
    b.env_extra = {}
    b.start()
    # one more record: its commit also publishes v<N> for path readers, which a
    # crash right after the pointer swap left unpublished
    produce(b, topic, [(i1, V1, item(7, 1))])
    versions[7] = 1
    t, rows, md = iu.wait_rows(tdir, len(versions))
    offsets = [r["_kafka_offset"] for r in rows.to_pylist()]
    assert sorted(offsets) == sorted(versions), "rows are not exactly once"
    for r in rows.to_pylist():
        want = item(r["_kafka_offset"], versions[r["_kafka_offset"]])
        assert (r["id"], r["note"]) == (want["id"], want.get("note")), r
    meta = json.load(open(md))
    assert [sc["schema-id"] for sc in meta["schemas"]] == [0, 1, 2]
    assert meta["last-column-id"] == 13
