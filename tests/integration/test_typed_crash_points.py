"""kill -9 at every step of a compaction pass that materializes a typed
table with dead letters (issue 14).

The topic's values are framed with schema-registry ids; some are corrupt
(their bytes do not decode), so with lakestream.table.error.handling=
dead-letter they go to <name>__dlq, which a pass commits before the table
(src/lake/materialize.c). Both tables first hold a commit, so the
table.* points die inside a snapshot commit, not a table's creation. The
broker is started with LS_CRASH_AT=<point> and dies the first time it
reaches it: for a table.* point, once inside the dead-letter table's commit
(a batch with dead letters) and once inside the typed table's (a batch
without); the files each crash leaves are checked to tell which. After
each normal restart every acknowledged record is exactly once in the typed
table (a row with its values) or in the dead-letter table (its bytes as
produced), never in both, never lost (PyIceberg reads both tables by path,
so a committed but unpublished v<N> would show as a lag).

  - Avro: v1 and v2 (an added optional field) interleaved, so the table's
    schema evolves inside the pass that dies; one broker per point.
  - JSON Schema and Protobuf: every compaction point in turn on one broker
    and topic (a crash, a recovery, the check, the next point).
"""
import io
import json
import os
import re
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


def frame(sid, payload):
    return b"\x00" + struct.pack(">I", sid) + payload


TABLE_POINTS = [p for p in COMPACTION_POINTS if p.startswith("table.")]
WARM = 10                           # records before the first crash: both tables exist


def _files(tdir):
    """(metadata files written by commits, data files) of the table at tdir."""
    meta, data = set(), set()
    for root, _, names in os.walk(tdir):
        for n in names:
            rel = os.path.relpath(os.path.join(root, n), tdir)
            if rel.startswith("metadata/") and re.match(r"\d{5}-.*\.metadata\.json$", n):
                meta.add(rel)
            elif rel.startswith("data/"):
                data.add(rel)
    return meta, data


def _crash(b, point, send, times):
    """Restarts b to die at `point`, sends (send()), waits for the crash and
    checks the log says it came at `point` (the times-th time). Leaves b
    down, so the caller sees the files as the crash left them."""
    b.stop()
    b.env_extra = {"LS_CRASH_AT": point}
    b.start()
    send()
    b.wait_crashed()
    assert b.log_text().count("crash point %s reached" % point) == times, point
    b.env_extra = {}


def crash_run(broker_factory, prefix, setup, batch, row_id, points):
    """setup(broker, topic) -> make(i) giving (value bytes, good?) for
    record i; row_id(row) gives the i of a good record's row.

    WARM records first, committed to both tables by a normal broker (so the
    table.* points are reached in a snapshot commit, not in the creation of
    a table). Then, for each point in turn on the same topic and broker:
    batch A (good and bad records) with LS_CRASH_AT=point; the dead letters
    commit first, so a table.* point dies inside the dead-letter table's
    commit. For a table.* point, once A is in, batch B of good records only
    dies at the point again, now inside the typed table's commit. The files
    each crash leaves show which commit died, and after each recovery the
    tables hold every acknowledged record exactly once. A last batch after
    the last point, then the same check once more after a commit interval
    in which nothing may come."""
    iu.local_store_only()
    b = broker_factory(*FLAGS)
    topic = create_topic(b.bootstrap, unique_topic(prefix), partitions=PARTS, config=TYPED)
    make = setup(b, topic)
    tdir, ddir = iu.table_dir(b, topic), iu.table_dir(b, topic + "__dlq")
    s = Sender(b.bootstrap, topic, parts=PARTS)
    made = []                       # (value, good?, i)

    def send(ids, flush=True):
        """flush=False while the broker may die: what it did not acknowledge
        is sent again after the restart (idempotent producer)."""
        recs = [make(i) + (i,) for i in ids]
        s.send_values([v for v, _, _ in recs], first=len(made))
        made.extend(recs)
        if flush:
            s.flush()

    def check(timeout=90):
        """Both tables hold exactly the acknowledged records (waiting for
        them): good ones as rows with their values, bad ones as dead letters
        with their bytes, none in both."""
        assert not s.failed and len(s.acked) == len(made)
        good = {s.acked[v]: i for v, ok, i in made if ok}
        bad = {s.acked[v]: v for v, ok, _ in made if not ok}
        _, rows, _ = iu.wait_rows(tdir, len(good), timeout=timeout)
        _, drows, _ = iu.wait_rows(ddir, len(bad), timeout=timeout)
        rows, drows = rows.to_pylist(), drows.to_pylist()
        in_table = [(r["_kafka_partition"], r["_kafka_offset"]) for r in rows]
        assert len(in_table) == len(set(in_table)) == len(good), "table rows are not exactly once"
        got = {(r["_kafka_partition"], r["_kafka_offset"]): row_id(r) for r in rows}
        assert got == good, "a table row with other values than its record's"
        dl = [(r["partition"], r["offset"]) for r in drows]
        assert len(dl) == len(set(dl)) == len(bad), "dead letters are not exactly once"
        assert {(r["partition"], r["offset"]): r["value"] for r in drows} == bad
        assert not set(got) & set(dl)

    send(range(WARM))
    check()
    n = WARM
    for point in points:
        before = (_files(tdir), _files(ddir))
        _crash(b, point, lambda: send(range(n, n + batch), flush=False), 1)
        n += batch
        if point in TABLE_POINTS:   # it died in the dead-letter table's commit
            (tm, _), (dm, dd) = before
            (tm2, _), (dm2, dd2) = _files(tdir), _files(ddir)
            assert tm2 == tm, "%s: the typed table's commit was reached first" % point
            assert dd2 > dd, "%s: no dead letters were written before the crash" % point
            assert len(dm2 - dm) == (0 if point == "table.data_written" else 1), (point, dm, dm2)
            b.start()
            s.flush()
            check()
            before = (_files(tdir), _files(ddir))
            goods = [i for i in range(n, n + batch) if make(i)[1]]
            _crash(b, point, lambda: send(goods, flush=False), 2)
            n += batch
            (tm, td), dfiles = before
            (tm2, td2), dfiles2 = _files(tdir), _files(ddir)
            assert dfiles2 == dfiles, "%s: the dead-letter table changed in a pass " \
                "without dead letters" % point
            assert td2 > td, "%s: no typed data was written before the crash" % point
            assert len(tm2 - tm) == (0 if point == "table.data_written" else 1), (point, tm, tm2)
        b.start()
        s.flush()
        check()
    send(range(n, n + batch // 2))
    check()
    time.sleep(1.5)                 # one more commit interval: nothing more may come
    check(timeout=5)               # already there: only read again


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
    assert r.get("note") == (None if (i // 10) % 2 == 0 else "note %d" % i), r
    return i


@pytest.mark.parametrize("point", COMPACTION_POINTS)
def test_avro_typed_table_with_dead_letters_and_evolution(broker_factory, point):
    crash_run(broker_factory, "tcrash-avro", avro_setup, 120, avro_id, [point])


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


def test_json_schema_typed_table_with_dead_letters(broker_factory):
    """Every compaction point in turn, on one broker and topic."""
    crash_run(broker_factory, "tcrash-json", json_setup, 40, json_id, COMPACTION_POINTS)


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


def test_protobuf_typed_table_with_dead_letters(broker_factory):
    """Every compaction point in turn, on one broker and topic."""
    crash_run(broker_factory, "tcrash-proto", proto_setup, 40, proto_id, COMPACTION_POINTS)
