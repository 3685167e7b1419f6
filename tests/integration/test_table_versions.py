"""lakestream.table.evolution=new-table (issue 14 §4): a typed table that
meets a record whose schema it cannot evolve to continues as a new table
version <name>__v2 (then __v3, ...) in the same namespace, created with that
schema; it takes that record and everything after it, the old version keeps
everything before and stays readable. Records of an older schema after the
switch go to the newest version when it can take them by resolution, else
follow error.handling (here dead-letter). Values are framed by
confluent-kafka's AvroSerializer against the built-in registry (subject
compatibility NONE); PyIceberg reads every version through the REST catalog.
"""
import json
import os
import re
import subprocess
import time

import pytest
from confluent_kafka import Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

import iceberg_util as iu
from kafka_util import create_topic, unique_topic
from lsbroker import binary_path, wait_until
from test_crash_points import COMPACTION_POINTS, Sender

rest = pytest.importorskip("pyiceberg.catalog")

TYPED = {"lakestream.table.enabled": "true", "lakestream.table.commit.interval.ms": "1000",
         "lakestream.table.value.format": "schema-registry",
         "lakestream.table.evolution": "new-table",
         "lakestream.table.error.handling": "dead-letter"}


def record(fields):
    return {"type": "record", "name": "Payment", "namespace": "shop", "fields": fields}


V1 = record([{"name": "id", "type": "int"}, {"name": "name", "type": "string"},
             {"name": "amount", "type": "string"}])
V1B = record([{"name": "id", "type": "int"}, {"name": "name", "type": "string"}])  # drops amount
V2 = record([{"name": "id", "type": "int"}, {"name": "name", "type": "string"},
             {"name": "amount", "type": "double"}])          # string -> double: incompatible
V3 = record([{"name": "id", "type": "int"}, {"name": "name", "type": "int"},
             {"name": "amount", "type": "double"}])          # string -> int: incompatible


class Avro:
    """AvroSerializer per schema (each registers its schema under the
    subject, whose compatibility is NONE so the incompatible ones register)."""

    def __init__(self, broker, topic):
        self.sr = SchemaRegistryClient({"url": broker.registry_url})
        self.sr.set_compatibility(subject_name=topic + "-value", level="NONE")
        self.ctx = SerializationContext(topic, MessageField.VALUE)
        self.sers = {}

    def __call__(self, schema, value):
        key = json.dumps(schema)
        if key not in self.sers:
            self.sers[key] = AvroSerializer(self.sr, key)
        return self.sers[key](value, self.ctx)

    def id(self, schema):
        return int.from_bytes(self(schema, value_of(schema, 0))[1:5], "big")


def value_of(schema, i):
    v = {"id": i, "name": "n%d" % i}
    names = [f["name"] for f in schema["fields"]]
    if "amount" in names:
        v["amount"] = "%d.25" % i if schema is V1 else i + 0.25
    if schema is V3:
        v["name"] = i * 10
    return v


def produce(broker, topic, values, partition=0):
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    failed = []
    for v in values:
        p.produce(topic, value=v, partition=partition,
                  on_delivery=lambda err, m: err and failed.append(err))
    assert p.flush(30) == 0 and not failed, failed


def rows_by_offset(broker, table):
    md = iu.current_metadata(iu.table_dir(broker, table))
    if not md:
        return {}
    t = iu.pyiceberg_table.StaticTable.from_metadata("file://" + md)
    return {r.get("_kafka_offset", r.get("offset")): r for r in t.scan().to_arrow().to_pylist()}


def test_an_incompatible_version_continues_as_a_new_table_version(broker_factory):
    iu.local_store_only()
    b = broker_factory("--compaction.min.age.ms=0", "--compaction.interval.ms=200")
    topic = create_topic(b.bootstrap, unique_topic("versions"), config=TYPED)
    avro = Avro(b, topic)
    ids = {n: avro.id(s) for n, s in (("V1", V1), ("V1B", V1B), ("V2", V2), ("V3", V3))}
    assert ids["V1"] < ids["V1B"] < ids["V2"] < ids["V3"]
    plan = [(V1, 0), (V1, 1), (V1, 2)]
    produce(b, topic, [avro(s, value_of(s, i)) for s, i in plan])
    iu.wait_rows(iu.table_dir(b, topic), 3)
    # in one go: V1B evolves the table (amount optional); V2 cannot (string
    # -> double) and starts __v2 at offset 4; V1B after it fits __v2 by
    # resolution; V1 after it fits neither: older than V2, so error.handling
    more = [(V1B, 3), (V2, 4), (V1B, 5), (V1, 6), (V2, 7)]
    produce(b, topic, [avro(s, value_of(s, i)) for s, i in more])
    v2 = topic + "__v2"
    iu.wait_rows(iu.table_dir(b, v2), 3)
    iu.wait_rows(iu.table_dir(b, topic + "__dlq"), 1)
    wait_until(lambda: re.search(
        r"table default\.%s continues as table default\.%s from partition 0 offset 4 "
        r"\(lakestream\.table\.evolution=new-table\): record at offset 4 has value schema id %d, "
        r"which table %s \(value schema id %d\) cannot evolve to: /amount"
        % (re.escape(topic), re.escape(v2), ids["V2"], re.escape(topic), ids["V1B"]),
        b.log_text()), 20, what="the switch in the broker log")

    # V3 (name string -> int) continues __v2 as __v3; then a restart, and
    # more records of every kind
    produce(b, topic, [avro(V3, value_of(V3, 8)), avro(V2, value_of(V2, 9))])
    v3 = topic + "__v3"
    iu.wait_rows(iu.table_dir(b, v3), 1)
    b.stop()
    b.start()
    produce(b, topic, [avro(V3, value_of(V3, 10)), avro(V1B, value_of(V1B, 11))])
    iu.wait_rows(iu.table_dir(b, v3), 2)
    iu.wait_rows(iu.table_dir(b, topic + "__dlq"), 3)
    time.sleep(2.5)                 # two commit intervals: nothing more may come

    # row by row: which version holds what
    base, r2, r3 = (rows_by_offset(b, t) for t in (topic, v2, v3))
    dlq = rows_by_offset(b, topic + "__dlq")
    assert sorted(base) == [0, 1, 2, 3]
    assert sorted(r2) == [4, 5, 7]
    assert sorted(r3) == [8, 10]
    assert sorted(dlq) == [6, 9, 11]
    for off in (0, 1, 2):
        assert (base[off]["name"], base[off]["amount"]) == ("n%d" % off, "%d.25" % off)
    assert (base[3]["name"], base[3]["amount"]) == ("n3", None)
    assert r2[4]["amount"] == 4.25 and r2[7]["amount"] == 7.25
    assert (r2[5]["name"], r2[5]["amount"]) == ("n5", None)     # V1B by resolution
    assert (r3[8]["name"], r3[8]["amount"]) == (80, 8.25)
    assert r3[10]["name"] == 100
    reasons = {o: {h["key"]: h["value"] for h in r["headers"]}["lakestream.dlq.error"]
               for o, r in dlq.items()}
    assert re.search(rb"older than value schema id %d, which started table version %s"
                     % (ids["V2"], v2.encode()), reasons[6]), reasons[6]
    assert re.search(rb"older than value schema id %d, which started table version %s"
                     % (ids["V3"], v3.encode()), reasons[9]), reasons[9]
    # V1B into __v3: name string -> int column; older than V3
    assert b"older than value schema id %d" % ids["V3"] in reasons[11], reasons[11]
    assert dlq[6]["value"] == avro(V1, value_of(V1, 6))

    # status: every version is a table of the REST catalog, PyIceberg reads
    # them; their properties name the chain and why each switch happened
    cat = rest.load_catalog("ls", type="rest", uri=b.http_url)
    listed = {n for _, n in cat.list_tables("default")}
    assert {topic, v2, v3, topic + "__dlq"} <= listed
    tb, t2, t3 = (cat.load_table("default." + n) for n in (topic, v2, v3))
    assert tb.scan().to_arrow().num_rows == 4 and t2.scan().to_arrow().num_rows == 3
    pb, p2, p3 = tb.properties, t2.properties, t3.properties
    assert pb["lakestream.table.continued-as"] == v2
    assert (pb["lakestream.table.continued-as.partition"],
            pb["lakestream.table.continued-as.offset"]) == ("0", "4")
    assert pb["lakestream.table.continued-as.value-schema-id"] == str(ids["V2"])
    assert "cannot evolve to: /amount" in pb["lakestream.table.continued-as.reason"]
    assert "lakestream.table.version" not in pb
    assert (p2["lakestream.table.version"], p2["lakestream.table.continues"]) == ("2", topic)
    assert p2["lakestream.table.version.value-schema-id"] == str(ids["V2"])
    assert p2["lakestream.table.version.reason"] == pb["lakestream.table.continued-as.reason"]
    assert p2["lakestream.table.continued-as"] == v3
    assert p2["lakestream.table.continued-as.offset"] == "8"
    assert "/name" in p2["lakestream.table.continued-as.reason"]
    assert (p3["lakestream.table.version"], p3["lakestream.table.continues"]) == ("3", v2)
    assert "lakestream.table.continued-as" not in p3
    # `lakestream tables show` (DescribeConfigs' read-only status
    # lakestream.table.current) names the version the rows go to now
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKESTREAM_")}
    out = subprocess.run([binary_path(), "tables", "--bootstrap", b.bootstrap, "show", topic],
                         capture_output=True, text=True, timeout=30, env=env).stdout
    assert "current table: %s\n" % v3 in out, out
    assert re.search(r"  started by: record at offset 8 has value schema id %d, which table %s "
                     r"\(value schema id %d\) cannot evolve to: /name"
                     % (ids["V3"], re.escape(v2), ids["V1B"]), out), out   # V1B evolved __v2
    assert re.search(r"lakestream.table.evolution\s+new-table\s+stream", out), out
    # each version's columns are its starting schema's (evolved as usual)
    assert str(t2.schema().find_field("amount").field_type) == "double"
    assert str(t3.schema().find_field("name").field_type) == "int"
    assert str(tb.schema().find_field("amount").field_type) == "string"


def test_new_table_is_refused_for_a_typed_upsert_table(broker):
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import NewTopic
    from kafka_util import admin
    a = admin(broker.bootstrap)
    name = unique_topic("versions-upsert")
    fs = a.create_topics([NewTopic(name, 1, 1, config=dict(
        TYPED, **{"lakestream.table.write.mode": "upsert"}))])
    with pytest.raises(KafkaException) as e:
        fs[name].result(30)
    msg = e.value.args[0].str()
    assert "lakestream.table.evolution" in msg and "new-table" in msg, msg
    assert "lakestream.table.write.mode=upsert" in msg, msg


def crash_schema(i):
    """The schema of crash-test record i: V1 first, then V2 (the switch, one
    per partition), then V1B, V2 and V1 mixed."""
    if i < 30:
        return V1
    if i < 32:
        return V2
    return [V1B, V2, V1, V1B][i % 4]


@pytest.mark.parametrize("point", COMPACTION_POINTS)
def test_kill_at_every_step_of_the_pass_that_starts_a_version(broker_factory, point):
    """kill -9 at each step of the compaction pass that meets the first V2
    record (two partitions): after a restart and more records, every
    acknowledged record is exactly once in the base table, in __v2 or in
    the dead-letter table; per partition the base table holds a prefix of
    the offsets, __v2 and the dead letters the rest; V2 records are all in
    __v2, V1 records after the switch dead letters, V1B ones in __v2."""
    iu.local_store_only()
    b = broker_factory("--compaction.min.age.ms=0", "--compaction.interval.ms=200")
    topic = create_topic(b.bootstrap, unique_topic("versions-crash"), partitions=2, config=TYPED)
    avro = Avro(b, topic)
    for s in (V1, V1B, V2):
        avro.id(s)
    b.stop()
    b.env_extra = {"LS_CRASH_AT": point}
    b.start()
    s = Sender(b.bootstrap, topic, parts=2)
    made = {}
    first = [avro(crash_schema(i), value_of(crash_schema(i), i)) for i in range(60)]
    s.send_values(first)
    s.flush()
    b.wait_crashed()
    assert ("crash point %s reached" % point) in b.log_text()
    b.env_extra = {}
    b.start()
    second = [avro(crash_schema(i), value_of(crash_schema(i), i)) for i in range(60, 90)]
    s.send_values(second, first=60)
    s.flush()
    for i, v in enumerate(first + second):
        made[s.acked[v]] = (crash_schema(i), i)
    assert len(made) == 90

    v2 = topic + "__v2"
    n_v1_after = 0
    def settled():
        tabs = [rows_by_partition_offset(b, t) for t in (topic, v2, topic + "__dlq")]
        return sum(len(t) for t in tabs) >= len(made)
    wait_until(settled, 90, what="every record in a table version or the dead letters")
    time.sleep(1.5)                 # one more commit interval: nothing more may come
    base, r2, dlq = (rows_by_partition_offset(b, t) for t in (topic, v2, topic + "__dlq"))
    assert not set(base) & set(r2) and not set(base) & set(dlq) and not set(r2) & set(dlq)
    assert sorted(set(base) | set(r2) | set(dlq)) == sorted(made), "not exactly once"
    for p in (0, 1):
        before = [o for q, o in base if q == p]
        after = [o for q, o in list(r2) + list(dlq) if q == p]
        assert not before or not after or max(before) < min(after), (p, before, after)
    for po, (schema, i) in made.items():
        if schema is V2:
            assert po in r2, (po, i)
        elif po in dlq:
            assert schema is V1, (po, i)
            assert dlq[po]["value"] == avro(V1, value_of(V1, i))
            n_v1_after += 1
        else:
            row = base.get(po) or r2[po]
            assert (row["id"], row["name"]) == (i, "n%d" % i), (po, row)
            if po in r2:
                assert schema is V1B and row["amount"] is None
    assert n_v1_after > 0


def rows_by_partition_offset(broker, table):
    md = iu.current_metadata(iu.table_dir(broker, table))
    if not md:
        return {}
    t = iu.pyiceberg_table.StaticTable.from_metadata("file://" + md)
    out = {}
    for r in t.scan().to_arrow().to_pylist():
        po = (r["_kafka_partition"], r["_kafka_offset"]) if "_kafka_offset" in r else \
            (r["partition"], r["offset"])
        out[po] = r
    return out


def test_a_json_schema_change_starts_a_version_too(broker_factory):
    """The same with confluent-kafka's JSONSerializer: `qty` integer ->
    string cannot evolve the table (long column), so __v2 starts there; a
    record of the first version after it is dead-lettered."""
    from confluent_kafka.schema_registry.json_schema import JSONSerializer
    iu.local_store_only()
    b = broker_factory("--compaction.min.age.ms=0", "--compaction.interval.ms=200")
    topic = create_topic(b.bootstrap, unique_topic("versions-json"), config=TYPED)
    sr = SchemaRegistryClient({"url": b.registry_url})
    sr.set_compatibility(subject_name=topic + "-value", level="NONE")
    def schema(qty):
        return json.dumps({"type": "object", "additionalProperties": False,
                           "required": ["id", "qty"],
                           "properties": {"id": {"type": "integer"}, "qty": {"type": qty}}})
    ctx = SerializationContext(topic, MessageField.VALUE)
    s1 = JSONSerializer(schema("integer"), sr, to_dict=lambda o, c: o)
    s2 = JSONSerializer(schema("string"), sr, to_dict=lambda o, c: o)
    vals = [s1({"id": 0, "qty": 5}, ctx), s1({"id": 1, "qty": 6}, ctx),
            s2({"id": 2, "qty": "seven"}, ctx), s1({"id": 3, "qty": 8}, ctx),
            s2({"id": 4, "qty": "nine"}, ctx)]
    produce(b, topic, vals)
    iu.wait_rows(iu.table_dir(b, topic + "__v2"), 2)
    iu.wait_rows(iu.table_dir(b, topic + "__dlq"), 1)
    time.sleep(1.5)
    base, r2, dlq = (rows_by_offset(b, t) for t in (topic, topic + "__v2", topic + "__dlq"))
    assert {o: r["qty"] for o, r in base.items()} == {0: 5, 1: 6}
    assert {o: r["qty"] for o, r in r2.items()} == {2: "seven", 4: "nine"}
    assert sorted(dlq) == [3] and dlq[3]["value"] == vals[3]


def test_an_incompatible_key_schema_starts_a_version(broker_factory):
    """Typed keys (raw values): a key schema string -> int starts __v2 with
    an int key column; a string key after it is dead-lettered."""
    iu.local_store_only()
    b = broker_factory("--compaction.min.age.ms=0", "--compaction.interval.ms=200")
    cfg = dict(TYPED, **{"lakestream.table.value.format": "raw",
                         "lakestream.table.key.format": "schema-registry"})
    topic = create_topic(b.bootstrap, unique_topic("versions-key"), config=cfg)
    sr = SchemaRegistryClient({"url": b.registry_url})
    sr.set_compatibility(subject_name=topic + "-key", level="NONE")
    ctx = SerializationContext(topic, MessageField.KEY)
    ks = AvroSerializer(sr, json.dumps("string"))
    ki = AvroSerializer(sr, json.dumps("int"))
    keys = [ks("a", ctx), ks("b", ctx), ki(7, ctx), ks("c", ctx), ki(9, ctx)]
    p = Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 5})
    for i, k in enumerate(keys):
        p.produce(topic, key=k, value=b"v%d" % i, partition=0)
    assert p.flush(30) == 0
    iu.wait_rows(iu.table_dir(b, topic + "__v2"), 2)
    iu.wait_rows(iu.table_dir(b, topic + "__dlq"), 1)
    time.sleep(1.5)
    base, r2, dlq = (rows_by_offset(b, t) for t in (topic, topic + "__v2", topic + "__dlq"))
    assert {o: r["_kafka_key_typed"] for o, r in base.items()} == {0: "a", 1: "b"}
    assert {o: r["_kafka_key_typed"] for o, r in r2.items()} == {2: 7, 4: 9}
    assert {o: r["_kafka_value"] for o, r in r2.items()} == {2: b"v2", 4: b"v4"}
    assert sorted(dlq) == [3] and dlq[3]["key"] == keys[3]
    md = json.load(open(iu.current_metadata(iu.table_dir(b, topic))))
    assert md["properties"]["lakestream.table.continued-as.key-schema-id"] == \
        str(int.from_bytes(keys[2][1:5], "big"))
    reason = {h["key"]: h["value"] for h in dlq[3]["headers"]}["lakestream.dlq.error"]
    assert b"older than key schema id" in reason, reason


def _proto_event(score_type, fname):
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    F = descriptor_pb2.FieldDescriptorProto
    fd = descriptor_pb2.FileDescriptorProto(name=fname, package="shop", syntax="proto3")
    m = fd.message_type.add(name="Event")
    m.field.add(name="name", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    m.field.add(name="id", number=2, type=F.TYPE_INT64, label=F.LABEL_OPTIONAL)
    m.field.add(name="score", number=3, type=score_type, label=F.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.Event"))


def test_a_protobuf_change_starts_a_version_too(broker_factory):
    """Protobuf values (framed as ProtobufSerializer frames them: id, then
    the message-index array [0]): `score` string -> double starts __v2; a
    string-score record after it is dead-lettered."""
    pytest.importorskip("google.protobuf")
    from google.protobuf import descriptor_pb2
    from confluent_kafka.schema_registry import Schema
    F = descriptor_pb2.FieldDescriptorProto
    iu.local_store_only()
    b = broker_factory("--compaction.min.age.ms=0", "--compaction.interval.ms=200")
    topic = create_topic(b.bootstrap, unique_topic("versions-proto"), config=TYPED)
    sr = SchemaRegistryClient({"url": b.registry_url})
    sr.set_compatibility(subject_name=topic + "-value", level="NONE")
    text = ('syntax = "proto3";\npackage shop;\n\nmessage Event {\n  string name = 1;\n'
            '  int64 id = 2;\n  %s score = 3;\n}\n')
    i1 = sr.register_schema(topic + "-value", Schema(text % "string", "PROTOBUF"))
    i2 = sr.register_schema(topic + "-value", Schema(text % "double", "PROTOBUF"))
    E1 = _proto_event(F.TYPE_STRING, "shop/v1.proto")
    E2 = _proto_event(F.TYPE_DOUBLE, "shop/v2.proto")
    def frame(sid, msg):
        return b"\x00" + sid.to_bytes(4, "big") + b"\x00" + msg.SerializeToString()
    vals = [frame(i1, E1(name="a", id=1, score="s1")), frame(i1, E1(name="b", id=2, score="s2")),
            frame(i2, E2(name="c", id=3, score=3.5)), frame(i1, E1(name="d", id=4, score="s4")),
            frame(i2, E2(name="e", id=5, score=5.5))]
    produce(b, topic, vals)
    iu.wait_rows(iu.table_dir(b, topic + "__v2"), 2)
    iu.wait_rows(iu.table_dir(b, topic + "__dlq"), 1)
    time.sleep(1.5)
    base, r2, dlq = (rows_by_offset(b, t) for t in (topic, topic + "__v2", topic + "__dlq"))
    assert {o: (r["name"], r["score"]) for o, r in base.items()} == {0: ("a", "s1"), 1: ("b", "s2")}
    assert {o: (r["name"], r["score"]) for o, r in r2.items()} == {2: ("c", 3.5), 4: ("e", 5.5)}
    assert sorted(dlq) == [3] and dlq[3]["value"] == vals[3]
