"""Typed tables: the rest of the Avro -> Iceberg type mapping (issue 14 §2,
the Iceberg spec's Avro appendix) — decimal (on bytes and on fixed) ->
decimal(P,S), fixed -> fixed[L], uuid -> uuid, time-millis/-micros -> time —
produced by confluent-kafka's AvroSerializer against the built-in registry
and read back value by value by PyIceberg/pyarrow and by DuckDB's own
Parquet reader on the data files. A decimal beyond its precision or a uuid
string that is not one makes no row (error.handling), never a rounded or
garbled one; decimal precision widening evolves the table, a scale change
does not. Also: unions of several types (struct of tag and members), a
renamed field following its Avro alias, and JSON Schema's `format: uuid`."""

import datetime
import decimal
import json
import struct
import uuid

import pytest
from confluent_kafka import Producer, SerializingProducer
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer

import iceberg_util as iu
from kafka_util import create_topic, unique_topic
from lsbroker import wait_until

TYPED = {"lakestream.table.enabled": "true", "lakestream.table.commit.interval.ms": "1000",
         "lakestream.table.value.format": "schema-registry"}


def dec(p, s):
    return {"type": "bytes", "logicalType": "decimal", "precision": p, "scale": s}


PAY = {
    "type": "record", "name": "Payment", "namespace": "bank",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "amount", "type": dec(9, 2)},
        {"name": "big", "type": dec(30, 5)},
        {"name": "mid", "type": {"type": "fixed", "name": "F8", "size": 8,
                                 "logicalType": "decimal", "precision": 18, "scale": 3}},
        {"name": "ref", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "code", "type": {"type": "fixed", "name": "Code", "size": 4}},
        {"name": "at_ms", "type": {"type": "int", "logicalType": "time-millis"}},
        {"name": "at_us", "type": {"type": "long", "logicalType": "time-micros"}},
        {"name": "fee", "type": ["null", dec(4, 1)], "default": None},
    ],
}
D = decimal.Decimal
decimal.getcontext().prec = 60  # exact arithmetic for 30-digit values (the default rounds to 28)


def payment(i):
    return {
        "id": i,
        "amount": D(i * 12345 - 99999).scaleb(-2),
        "big": (D(10) ** 30 - 1 - i).scaleb(-5) * (1 if i % 2 else -1),
        "mid": D(123456789012345 * (i + 1)).scaleb(-3),
        "ref": uuid.UUID(int=(i * 0x0123456789ABCDEF0123456789ABCDEF) % (1 << 128)),
        "code": bytes([i, 255 - i, 0, 7]),
        "at_ms": datetime.time(i % 24, 2, 3, 4000),
        "at_us": datetime.time(1, i % 60, 3, 4005),
        "fee": None if i % 3 == 0 else D(-125 + i).scaleb(-1),
    }


def produce(broker, topic, schema, rows):
    sr = SchemaRegistryClient({"url": broker.registry_url})
    p = SerializingProducer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5,
                             "value.serializer": AvroSerializer(sr, json.dumps(schema))})
    failed = []
    for r in rows:
        p.produce(topic, value=r, partition=0, on_delivery=lambda err, m: err and failed.append(err))
    assert p.flush(30) == 0 and not failed, failed


def wait_rows(tdir, want, timeout=60):
    """iceberg_util.wait_rows, once the table has a snapshot: PyIceberg scans a
    table without one into an empty arrow table, which pyarrow cannot make
    for a uuid column (ArrowNotImplementedError: extension)."""
    def has_snapshot():
        md = iu.current_metadata(tdir)
        return md and iu.pyiceberg_table.StaticTable.from_metadata(
            "file://" + md).current_snapshot() is not None
    wait_until(has_snapshot, timeout, what="the table's first snapshot")
    return iu.wait_rows(tdir, want, timeout)


def as_uuid(v):
    return v if isinstance(v, uuid.UUID) else uuid.UUID(bytes=bytes(v))


def test_decimal_fixed_uuid_time_columns(broker):
    iu.local_store_only()
    topic = create_topic(broker.bootstrap, unique_topic("typed-dec"), config=TYPED)
    n = 25
    produce(broker, topic, PAY, [payment(i) for i in range(n)])
    t, rows, _ = wait_rows(iu.table_dir(broker, topic), n)
    types = {f.name: str(f.field_type) for f in t.schema().fields}
    assert (types["amount"], types["big"], types["mid"], types["ref"], types["code"],
            types["at_ms"], types["at_us"], types["fee"]) == (
        "decimal(9, 2)", "decimal(30, 5)", "decimal(18, 3)", "uuid", "fixed[4]", "time", "time",
        "decimal(4, 1)")
    assert not t.schema().find_field("fee").required
    got = sorted(rows.to_pylist(), key=lambda r: r["id"])
    assert len(got) == n
    for i, r in enumerate(got):
        want = payment(i)
        for k in ("amount", "big", "mid", "code", "at_ms", "at_us", "fee"):
            assert r[k] == want[k], (i, k, r[k], want[k])
        assert as_uuid(r["ref"]) == want["ref"]
    # filters on the decimal column (PyIceberg evaluates them against the bounds too)
    hit = t.scan(row_filter="amount = -382.74").to_arrow().to_pylist()
    assert [r["id"] for r in hit] == [5]
    assert t.scan(row_filter="amount > 9000000").to_arrow().num_rows == 0
    # DuckDB's own Parquet reader on the data files
    duckdb = pytest.importorskip("duckdb")
    files = [f.file.file_path.replace("file://", "") for f in t.scan().plan_files()]
    q = duckdb.connect().execute(
        "SELECT id, amount, big, mid, code, at_ms, at_us, fee, ref FROM read_parquet(?) ORDER BY id",
        [files]).fetchall()
    assert len(q) == n
    for i, (oid, amount, big, mid, code, at_ms, at_us, fee, ref) in enumerate(q):
        want = payment(i)
        assert (oid, amount, mid, bytes(code), at_ms, at_us, fee) == (
            i, want["amount"], want["mid"], want["code"], want["at_ms"], want["at_us"],
            want["fee"]), i
        assert big == want["big"], (i, big)
        assert (as_uuid(ref) if isinstance(ref, (bytes, bytearray)) else uuid.UUID(str(ref))) == \
            want["ref"], (i, ref)


def framed(schema_id, datum):
    return b"\x00" + struct.pack(">I", schema_id) + datum


def zz(v):
    u = (v << 1) ^ (v >> 63)
    out = bytearray()
    while u >= 0x80:
        out.append((u & 0x7F) | 0x80)
        u >>= 7
    out.append(u)
    return bytes(out)


def avro_bytes(b):
    return zz(len(b)) + b


SMALL = {"type": "record", "name": "Small", "fields": [
    {"name": "amount", "type": dec(9, 2)},
    {"name": "ref", "type": {"type": "string", "logicalType": "uuid"}}]}


def test_out_of_precision_and_malformed_uuid_make_no_row(broker):
    """Hand-framed datums the serializer would not write: 10 digits in a
    decimal(9, 2), a uuid string that is not one. error.handling=dead-letter
    keeps them whole with the reason; nothing is rounded."""
    iu.local_store_only()
    topic = create_topic(broker.bootstrap, unique_topic("typed-dec-bad"),
                         config=dict(TYPED, **{"lakestream.table.error.handling": "dead-letter"}))
    good = {"amount": D("1.25"), "ref": uuid.UUID(int=5)}
    produce(broker, topic, SMALL, [good])
    sr = SchemaRegistryClient({"url": broker.registry_url})
    sid = sr.register_schema(topic + "-value", Schema(json.dumps(SMALL), "AVRO"))
    u = str(uuid.UUID(int=7)).encode()
    too_many = (10 ** 9).to_bytes(5, "big", signed=True)
    bad = [framed(sid, avro_bytes(too_many) + avro_bytes(u)),
           framed(sid, avro_bytes(b"\x01") + avro_bytes(b"not-a-uuid-" + b"x" * 25))]
    p = Producer({"bootstrap.servers": broker.bootstrap})
    for v in bad:
        p.produce(topic, value=v, partition=0)
    assert p.flush(10) == 0
    produce(broker, topic, SMALL, [dict(good, amount=D("-9999999.99"))])
    t, rows, _ = wait_rows(iu.table_dir(broker, topic), 2)
    assert sorted(r["amount"] for r in rows.to_pylist()) == [D("-9999999.99"), D("1.25")]
    d, drows, _ = wait_rows(iu.table_dir(broker, topic + "__dlq"), 2)
    got = sorted(drows.to_pylist(), key=lambda r: r["offset"])
    assert [r["value"] for r in got] == bad
    reasons = [{h["key"]: h["value"] for h in r["headers"]}["lakestream.dlq.error"] for r in got]
    assert b"more digits than its precision" in reasons[0], reasons
    assert b"uuid" in reasons[1], reasons


def test_decimal_precision_widens_scale_does_not(broker):
    """v1 decimal(9, 2) -> v2 decimal(20, 2): the column widens in place (same
    field id; old files hold INT32, new ones fixed bytes) and every row reads
    back; v3 decimal(20, 4) changes the scale, which Iceberg cannot express:
    with evolution=dead-letter those records go to the dead-letter table."""
    iu.local_store_only()
    topic = create_topic(broker.bootstrap, unique_topic("typed-dec-evo"),
                         config=dict(TYPED, **{"lakestream.table.evolution": "dead-letter"}))
    sr = SchemaRegistryClient({"url": broker.registry_url})
    sr.set_compatibility(subject_name=topic + "-value", level="NONE")

    def schema(p, s):
        return {"type": "record", "name": "P", "fields": [{"name": "id", "type": "int"},
                                                          {"name": "v", "type": dec(p, s)}]}
    produce(broker, topic, schema(9, 2), [{"id": i, "v": D(i * 101).scaleb(-2)} for i in range(3)])
    t, _, _ = wait_rows(iu.table_dir(broker, topic), 3)
    fid = t.schema().find_field("v").field_id
    wide = D("123456789012345678.91")
    produce(broker, topic, schema(20, 2), [{"id": 3, "v": wide}, {"id": 4, "v": -wide}])
    produce(broker, topic, schema(9, 2), [{"id": 5, "v": D("-0.01")}])
    produce(broker, topic, schema(20, 4), [{"id": 6, "v": D("1.0001")}])
    t, rows, _ = wait_rows(iu.table_dir(broker, topic), 6)
    f = t.schema().find_field("v")
    assert (str(f.field_type), f.field_id) == ("decimal(20, 2)", fid)
    got = {r["id"]: r["v"] for r in rows.to_pylist()}
    assert got == {0: D("0.00"), 1: D("1.01"), 2: D("2.02"), 3: wide, 4: -wide, 5: D("-0.01")}
    d, drows, _ = wait_rows(iu.table_dir(broker, topic + "__dlq"), 1)
    r = drows.to_pylist()[0]
    reason = {h["key"]: h["value"] for h in r["headers"]}["lakestream.dlq.error"]
    assert b"scale" in reason, reason
    duckdb = pytest.importorskip("duckdb")
    files = [x.file.file_path.replace("file://", "") for x in t.scan().plan_files()]
    q = duckdb.connect().execute(
        "SELECT id, CAST(v AS DECIMAL(20, 2)) FROM read_parquet(?, union_by_name=true) ORDER BY id",
        [files]).fetchall()
    assert dict(q) == got


EVENT = {
    "type": "record", "name": "Event", "fields": [
        {"name": "id", "type": "int"},
        {"name": "payload", "type": ["null", "long", "string", {
            "type": "record", "name": "Point",
            "fields": [{"name": "x", "type": "int"}, {"name": "y", "type": "int"}]}],
         "default": None},
        {"name": "either", "type": ["boolean", {"type": "array", "items": "string"}]},
    ],
}


def event(i):
    payload = [None, i * 1000, "s%d" % i, {"x": i, "y": -i}][i % 4]
    return {"id": i, "payload": payload, "either": i % 2 == 0 if i % 3 else ["a"] * (i % 5)}


def test_unions_of_several_types(broker):
    """A union of several non-null types becomes a struct of a required int
    "tag" (which member the value took) and one optional member per non-null
    branch, "field0", "field1", ... (Iceberg Java's AvroSchemaUtil names);
    the union's null makes the whole struct null."""
    iu.local_store_only()
    topic = create_topic(broker.bootstrap, unique_topic("typed-union"), config=TYPED)
    n = 24
    produce(broker, topic, EVENT, [event(i) for i in range(n)])
    t, rows, _ = wait_rows(iu.table_dir(broker, topic), n)
    p = t.schema().find_field("payload")
    assert not p.required
    assert [(f.name, str(f.field_type), f.required) for f in p.field_type.fields] == [
        ("tag", "int", True), ("field0", "long", False), ("field1", "string", False),
        ("field2", "struct<%d: x: required int, %d: y: required int>" % (
            t.schema().find_field("payload.field2.x").field_id,
            t.schema().find_field("payload.field2.y").field_id), False)]
    assert t.schema().find_field("either").required

    def want_struct(v, kinds):
        if v is None:
            return None
        tag = next(k for k, ok in enumerate(kinds) if ok(v))
        s = {"tag": tag}
        for k in range(len(kinds)):
            s["field%d" % k] = v if k == tag else None
        return s
    pk = [lambda v: isinstance(v, int), lambda v: isinstance(v, str), lambda v: isinstance(v, dict)]
    ek = [lambda v: isinstance(v, bool), lambda v: isinstance(v, list)]
    got = sorted(rows.to_pylist(), key=lambda r: r["id"])
    assert len(got) == n
    for i, r in enumerate(got):
        e = event(i)
        assert r["payload"] == want_struct(e["payload"], pk), (i, r["payload"])
        assert r["either"] == want_struct(e["either"], ek), (i, r["either"])
    duckdb = pytest.importorskip("duckdb")
    files = [f.file.file_path.replace("file://", "") for f in t.scan().plan_files()]
    q = duckdb.connect().execute(
        "SELECT id, payload.tag, payload.field0, payload.field1, payload.field2.x, either.tag, "
        "either.field0, either.field1 FROM read_parquet(?) ORDER BY id", [files]).fetchall()
    assert len(q) == n
    for i, row in enumerate(q):
        e = event(i)
        ps = want_struct(e["payload"], pk) or {}
        es = want_struct(e["either"], ek)
        assert row == (i, ps.get("tag"), ps.get("field0"), ps.get("field1"),
                       (ps.get("field2") or {}).get("x"), es["tag"], es["field0"], es["field1"]), i


def test_a_renamed_field_keeps_its_column_through_its_alias(broker):
    """v2 renames `name` to `title` and lists `name` in its aliases (Avro's way
    to declare a rename; the registry's BACKWARD check accepts it): v2's
    values fill the column `name` (same field id; the column keeps its name,
    so queries naming it keep working), and v1 records produced after v2 land
    there too."""
    iu.local_store_only()
    topic = create_topic(broker.bootstrap, unique_topic("typed-alias"), config=TYPED)
    v1 = {"type": "record", "name": "U", "fields": [{"name": "id", "type": "int"},
                                                  {"name": "name", "type": "string"}]}
    v2 = {"type": "record", "name": "U", "fields": [
        {"name": "id", "type": "int"},
        {"name": "title", "type": "string", "aliases": ["name"]}]}
    produce(broker, topic, v1, [{"id": 0, "name": "a"}])
    t, _, _ = wait_rows(iu.table_dir(broker, topic), 1)
    fid = t.schema().find_field("name").field_id
    produce(broker, topic, v2, [{"id": 1, "title": "b"}])
    produce(broker, topic, v1, [{"id": 2, "name": "c"}])
    t, rows, _ = wait_rows(iu.table_dir(broker, topic), 3)
    names = [f.name for f in t.schema().fields]
    assert "title" not in names and t.schema().find_field("name").field_id == fid
    assert sorted((r["id"], r["name"]) for r in rows.to_pylist()) == [(0, "a"), (1, "b"), (2, "c")]


def test_json_schema_uuid_format_is_a_uuid_column(broker):
    """JSON Schema's equivalent: a string with `format: uuid` (JSONSerializer)
    becomes a uuid column; a value that is not a UUID's text form makes no row
    (error.handling=dead-letter keeps it with the reason)."""
    from test_typed_json import produce_json
    iu.local_store_only()
    topic = create_topic(broker.bootstrap, unique_topic("typed-json-uuid"),
                         config=dict(TYPED, **{"lakestream.table.error.handling": "dead-letter"}))
    schema = {"type": "object", "title": "Ref", "required": ["id", "ref"], "properties": {
        "id": {"type": "integer"}, "ref": {"type": "string", "format": "uuid"}}}
    refs = [uuid.UUID(int=i * 7919 + 1) for i in range(5)]
    produce_json(broker, topic, schema, [{"id": i, "ref": str(u)} for i, u in enumerate(refs)]
                 + [{"id": 5, "ref": "not-a-uuid"}])
    t, rows, _ = wait_rows(iu.table_dir(broker, topic), 5)
    assert str(t.schema().find_field("ref").field_type) == "uuid"
    assert sorted((r["id"], as_uuid(r["ref"])) for r in rows.to_pylist()) == list(enumerate(refs))
    d, drows, _ = wait_rows(iu.table_dir(broker, topic + "__dlq"), 1)
    reason = {h["key"]: h["value"] for h in drows.to_pylist()[0]["headers"]}["lakestream.dlq.error"]
    assert b"/ref: a string that is not a UUID's text form" in reason, reason


def test_uuid_and_decimal_primary_key_fields(broker):
    """Upsert by a primary key of a uuid and a decimal(20, 2) field (both
    stored as fixed bytes): a later record of the same key replaces its row
    in another commit — the identity taken from a key datum equals the one
    read back from the stored columns."""
    from confluent_kafka.admin import AdminClient, NewTopic
    from kafka_util import wait_topic
    iu.local_store_only()
    topic = unique_topic("typed-pk-uuid")
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(
        topic, 1, 1, config=dict(TYPED, **{
            "cleanup.policy": "compact", "lakestream.table.key.format": "schema-registry",
            "lakestream.table.primary.key": "ref,amt"}))])[topic].result(30)
    wait_topic(broker.bootstrap, topic, 1)
    key = {"type": "record", "name": "K", "fields": [
        {"name": "ref", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "amt", "type": dec(20, 2)}]}
    value = {"type": "record", "name": "V", "fields": [{"name": "owner", "type": "string"}]}
    sr = SchemaRegistryClient({"url": broker.registry_url})
    p = SerializingProducer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5,
                             "key.serializer": AvroSerializer(sr, json.dumps(key)),
                             "value.serializer": AvroSerializer(sr, json.dumps(value))})
    u1, u2 = uuid.UUID(int=1), uuid.UUID(int=2)
    k1, k2 = {"ref": u1, "amt": D("-1.50")}, {"ref": u2, "amt": D("123456789012345678.00")}
    for k, v in ((k1, "a"), (k2, "b")):
        p.produce(topic, key=k, value={"owner": v}, partition=0)
    assert p.flush(30) == 0
    wait_rows(iu.table_dir(broker, topic), 2)
    p.produce(topic, key=k1, value={"owner": "c"}, partition=0)
    assert p.flush(30) == 0

    def rows():
        md = iu.current_metadata(iu.table_dir(broker, topic))
        t = iu.pyiceberg_table.StaticTable.from_metadata("file://" + md)
        return sorted((as_uuid(r["_kafka_key_typed"]["ref"]), r["_kafka_key_typed"]["amt"],
                       r["owner"]) for r in t.scan().to_arrow().to_pylist())
    want = [(u1, D("-1.50"), "c"), (u2, D("123456789012345678.00"), "b")]
    wait_until(lambda: rows() == want, 30, what="the upsert replacing key 1's row")
    assert rows() == want
