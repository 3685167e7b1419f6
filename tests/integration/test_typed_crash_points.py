"""kill -9 at every step of a compaction pass that materializes a typed
table with dead letters (issue 14).

The topic's values are framed with schema-registry ids; some are corrupt
(their bytes do not decode), so with lakestream.table.error.handling=
dead-letter they go to <name>__dlq, which a pass commits before the table
(src/compact/materialize.c). The broker is started with LS_CRASH_AT=<point>
and dies the first time it reaches it — for the table.* points that can be
inside the dead-letter table's commit or the typed table's. After a normal
restart and more records, every acknowledged record is exactly once in the
typed table (a row with its values) or in the dead-letter table (its bytes
as produced), never in both, never lost (PyIceberg reads both tables).

  - Avro: v1 and v2 (an added optional field) interleaved, so the table's
    schema evolves inside the pass that dies; every compaction point.
  - JSON Schema and Protobuf: the points where a commit is half done.
"""
import io
import json
import struct
import time

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

import iceberg_util as iu
from kafka_util import create_topic, unique_topic
from test_crash_points import COMPACTION_POINTS, Sender

fastavro = pytest.importorskip("fastavro")
pb = pytest.importorskip("google.protobuf")
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory  # noqa: E402

PARTS = 2
FLAGS = ("--compaction.min.age.ms=0", "--compaction.interval.ms=200")
TYPED = {"lakestream.table.enabled": "true", "lakestream.table.commit.interval.ms": "1000",
         "lakestream.table.value.format": "schema-registry",
         "lakestream.table.error.handling": "dead-letter"}
# where one of the two commits (dead letters, then the table) is half done
HALF_DONE = ["table.metadata_written", "compact.table_committed"]


def frame(sid, payload):
    return b"\x00" + struct.pack(">I", sid) + payload


def crash_run(broker_factory, prefix, setup, batch, row_id, point):
    """setup(broker, topic) -> make(i) giving (value bytes, good?) for
    record i; row_id(row) gives the id a good record's row carries. Sends
    a first batch, dies at `point`, restarts, sends a second one; checks
    the two tables against the acknowledged records."""
    iu.local_store_only()
    b = broker_factory(*FLAGS)
    topic = create_topic(b.bootstrap, unique_topic(prefix), partitions=PARTS, config=TYPED)
    make = setup(b, topic)
    b.stop()
    b.env_extra = {"LS_CRASH_AT": point}
    b.start()
    s = Sender(b.bootstrap, topic, parts=PARTS)
    first = [make(i) for i in range(batch)]
    s.send_values([v for v, _ in first])
    s.flush()
    b.wait_crashed()                # the first compaction task dies at `point`
    assert ("crash point %s reached" % point) in b.log_text()
    b.env_extra = {}
    b.start()
    second = [make(i) for i in range(batch, batch + batch // 2)]
    s.send_values([v for v, _ in second], first=batch)
    s.flush()
    made = first + second
    assert len(s.acked) == len(made)
    good = {s.acked[v]: i for i, (v, ok) in enumerate(made) if ok}
    bad = {s.acked[v]: v for v, ok in made if not ok}
    assert good and bad

    _, rows, _ = iu.wait_rows(iu.table_dir(b, topic), len(good), timeout=90)
    _, drows, _ = iu.wait_rows(iu.table_dir(b, topic + "__dlq"), len(bad), timeout=90)
    time.sleep(1.5)                 # one more commit interval: nothing more may come
    _, rows, _ = iu.wait_rows(iu.table_dir(b, topic), len(good))
    _, drows, _ = iu.wait_rows(iu.table_dir(b, topic + "__dlq"), len(bad))
    in_table = [(r["_kafka_partition"], r["_kafka_offset"]) for r in rows.to_pylist()]
    assert len(in_table) == len(set(in_table)) == len(good), "table rows are not exactly once"
    got = {(r["_kafka_partition"], r["_kafka_offset"]): row_id(r) for r in rows.to_pylist()}
    assert got == good, "a table row with other values than its record's"
    dl = [(r["partition"], r["offset"]) for r in drows.to_pylist()]
    assert len(dl) == len(set(dl)) == len(bad), "dead letters are not exactly once"
    assert {(r["partition"], r["offset"]): r["value"] for r in drows.to_pylist()} == bad
    assert not set(got) & set(dl)


# ---- Avro: v1 -> v2 in the pass that dies ---------------------------------

def _avro(fields):
    return {"type": "record", "name": "Item", "namespace": "shop", "fields": fields}


AV1 = _avro([{"name": "id", "type": "long"}, {"name": "name", "type": "string"}])
AV2 = _avro(AV1["fields"] + [{"name": "note", "type": ["null", "string"], "default": None}])


def avro_setup(b, topic):
    sr = SchemaRegistryClient({"url": b.registry_url})
    sr.set_compatibility(subject_name=topic + "-value", level="NONE")
    ids = [sr.register_schema(topic + "-value", Schema(json.dumps(s), "AVRO"))
           for s in (AV1, AV2)]
    parsed = [fastavro.parse_schema(s) for s in (AV1, AV2)]

    def make(i):
        if i % 7 == 3:              # a string whose length runs past the end
            return frame(ids[0], b"\x02\x40ab%d" % i), False
        v = 1 if (i // 10) % 2 == 0 else 2      # v1 and v2 in runs of ten
        val = {"id": i, "name": "n%d" % i}
        if v == 2:
            val["note"] = "note %d" % i
        out = io.BytesIO()
        fastavro.schemaless_writer(out, parsed[v - 1], val)
        return frame(ids[v - 1], out.getvalue()), True
    return make


def avro_id(r):
    i = r["id"]
    assert r["name"] == "n%d" % i
    assert r["note"] == (None if (i // 10) % 2 == 0 else "note %d" % i), r
    return i


@pytest.mark.parametrize("point", COMPACTION_POINTS)
def test_avro_typed_table_with_dead_letters_and_evolution(broker_factory, point):
    crash_run(broker_factory, "tcrash-avro", avro_setup, 120, avro_id, point)


# ---- JSON Schema -----------------------------------------------------------

JSCHEMA = {"type": "object", "additionalProperties": False, "required": ["id", "name"],
           "properties": {"id": {"type": "integer"}, "name": {"type": "string"},
                          "x": {"type": "number"}}}


def json_setup(b, topic):
    sr = SchemaRegistryClient({"url": b.registry_url})
    sid = sr.register_schema(topic + "-value", Schema(json.dumps(JSCHEMA), "JSON"))

    def make(i):
        if i % 7 == 3:
            return frame(sid, b'{"id": %d, "name": ' % i), False    # not one JSON text
        if i % 7 == 5:
            return frame(sid, json.dumps({"id": "x%d" % i, "name": "n"}).encode()), False
        return frame(sid, json.dumps({"id": i, "name": "n%d" % i, "x": i / 4}).encode()), True
    return make


def json_id(r):
    i = r["id"]
    assert (r["name"], r["x"]) == ("n%d" % i, i / 4), r
    return i


@pytest.mark.parametrize("point", HALF_DONE)
def test_json_schema_typed_table_with_dead_letters(broker_factory, point):
    crash_run(broker_factory, "tcrash-json", json_setup, 90, json_id, point)


# ---- Protobuf ---------------------------------------------------------------

PROTO = """syntax = "proto3";
package shop;

message Event {
  string name = 1;
  int64 id = 2;
  double score = 3;
}
"""


def _event_class():
    F = descriptor_pb2.FieldDescriptorProto
    fd = descriptor_pb2.FileDescriptorProto(name="shop/crash_event.proto", package="shop",
                                            syntax="proto3")
    m = fd.message_type.add(name="Event")
    m.field.add(name="name", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    m.field.add(name="id", number=2, type=F.TYPE_INT64, label=F.LABEL_OPTIONAL)
    m.field.add(name="score", number=3, type=F.TYPE_DOUBLE, label=F.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.Event"))


def proto_setup(b, topic):
    sr = SchemaRegistryClient({"url": b.registry_url})
    sid = sr.register_schema(topic + "-value", Schema(PROTO, "PROTOBUF"))
    Event = _event_class()

    def make(i):
        if i % 7 == 3:              # message index [0], then a string running past the end
            return frame(sid, b"\x00" + b"\x0a\x30ab%d" % i), False
        msg = Event(name="n%d" % i, id=i + 1, score=(i + 1) / 4)   # no proto3 defaults
        return frame(sid, b"\x00" + msg.SerializeToString()), True
    return make


def proto_id(r):
    i = r["id"] - 1
    assert (r["name"], r["score"]) == ("n%d" % i, (i + 1) / 4), r
    return i


@pytest.mark.parametrize("point", HALF_DONE)
def test_protobuf_typed_table_with_dead_letters(broker_factory, point):
    crash_run(broker_factory, "tcrash-proto", proto_setup, 90, proto_id, point)
