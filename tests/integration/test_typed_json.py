"""Typed tables from JSON Schema values (issue 14 §2): a topic with
lakestream.table.value.format=schema-registry whose values are JSON written by
confluent-kafka's JSONSerializer against the built-in registry materializes
as an Iceberg table whose columns come from the JSON Schema (object -> struct,
array -> list, additionalProperties -> map, date-time -> timestamptz, date ->
date, integer -> int/long, number -> double, nullable types -> optional),
read back value by value by PyIceberg and DuckDB's Parquet reader. Values
that do not fit go to the dead-letter table with the reason; a later schema
version (added property, widened integer) evolves the table."""

import datetime
import json

import pytest
from confluent_kafka import Producer, SerializingProducer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.json_schema import JSONSerializer
from confluent_kafka.serialization import StringSerializer

import iceberg_util as iu
from kafka_util import create_topic, unique_topic

TYPED = {"lakestream.table.enabled": "true", "lakestream.table.commit.interval.ms": "1000",
         "lakestream.table.value.format": "schema-registry"}

ORDER = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "Order",
    "type": "object",
    "required": ["id", "customer", "created", "lines"],
    "properties": {
        "id": {"type": "integer"},
        "customer": {"type": "string"},
        "amount": {"type": "number"},
        "qty": {"type": "integer", "minimum": -100, "maximum": 100},
        "paid": {"type": "boolean"},
        "status": {"type": "string", "enum": ["NEW", "PAID", "SHIPPED"]},
        "created": {"type": "string", "format": "date-time"},
        "day": {"type": "string", "format": "date"},
        "note": {"type": ["string", "null"]},
        "tags": {"type": "array", "items": {"type": "string"}},
        "attrs": {"type": "object", "additionalProperties": {"type": ["integer", "null"]}},
        "address": {"oneOf": [{"type": "null"}, {"$ref": "#/definitions/Address"}]},
        "lines": {"type": "array", "items": {"$ref": "#/definitions/Line"}},
        "extra": {},
    },
    "definitions": {
        "Address": {"type": "object", "required": ["street"],
                    "properties": {"street": {"type": "string"},
                                   "zip": {"type": ["integer", "null"]}}},
        "Line": {"type": "object", "required": ["sku", "n"],
                 "properties": {"sku": {"type": "string"}, "n": {"type": "integer"}}},
    },
}

UTC = datetime.timezone.utc
T0 = datetime.datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


def order(i):
    o = {
        "id": i, "customer": "c%d" % (i % 7), "amount": i * 1.25, "qty": i % 13 - 6,
        "paid": i % 2 == 0, "status": ["NEW", "PAID", "SHIPPED"][i % 3],
        "created": (T0 + datetime.timedelta(seconds=i, microseconds=7 * i)).isoformat(),
        "day": (datetime.date(2026, 1, 1) + datetime.timedelta(days=i % 30)).isoformat(),
        "note": None if i % 3 == 0 else "note %d" % i,
        "tags": ["t%d" % k for k in range(i % 3)],
        "attrs": {"a": i, "b": None} if i % 2 else {},
        "address": None if i % 4 == 0 else {"street": "s%d" % i,
                                            "zip": None if i % 5 == 0 else i},
        "lines": [{"sku": "k%d" % k, "n": k} for k in range(i % 4)],
        "extra": [i, {"x": "y"}] if i % 2 else "plain",
    }
    if i % 5 == 1:  # optional properties left out: null columns
        for k in ("amount", "paid", "day", "tags"):
            del o[k]
    return o


def produce_json(broker, topic, schema, values, first_key=0):
    sr = SchemaRegistryClient({"url": broker.registry_url})
    p = SerializingProducer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5,
                             "key.serializer": StringSerializer(),
                             "value.serializer": JSONSerializer(json.dumps(schema), sr)})
    failed = []
    for i, v in enumerate(values):
        p.produce(topic, key="k%d" % (first_key + i), value=v, partition=0,
                  on_delivery=lambda err, m: err and failed.append(err))
    assert p.flush(30) == 0 and not failed, failed


def expected(o):
    """A produced order as PyIceberg's arrow gives it back."""
    want = {k: o.get(k) for k in ORDER["properties"]}
    want["created"] = datetime.datetime.fromisoformat(o["created"])
    want["day"] = datetime.date.fromisoformat(o["day"]) if "day" in o else None
    want["attrs"] = sorted(o["attrs"].items())
    want["extra"] = json.dumps(o["extra"], separators=(",", ":"))
    return want


def test_json_values_become_typed_columns(broker):
    iu.local_store_only()
    topic = create_topic(broker.bootstrap, unique_topic("typed-json"), config=TYPED)
    n = 40
    produce_json(broker, topic, ORDER, [order(i) for i in range(n)])
    t, rows, _ = iu.wait_rows(iu.table_dir(broker, topic), n)
    schema = t.schema()
    names = [f.name for f in schema.fields]
    assert names[5:] == list(ORDER["properties"])
    types = {f.name: str(f.field_type) for f in schema.fields}
    assert types["id"] == "long" and types["qty"] == "int" and types["amount"] == "double"
    assert types["created"] == "timestamptz" and types["day"] == "date"
    assert types["status"] == "string" and types["extra"] == "string"
    assert types["tags"].startswith("list<string>")
    assert types["attrs"].startswith("map<string, long>")
    assert types["address"].startswith("struct<")
    assert schema.find_field("id").required and schema.find_field("created").required
    assert not schema.find_field("note").required and not schema.find_field("address").required
    got = sorted(rows.to_pylist(), key=lambda r: r["id"])
    assert len(got) == n
    for i, r in enumerate(got):
        want = expected(order(i))
        assert r["_kafka_key"] == b"k%d" % i and r["_kafka_offset"] == i
        for k, v in want.items():
            if k == "attrs":
                assert sorted(r[k]) == v, (i, k, r[k], v)
            else:
                assert r[k] == v, (i, k, r[k], v)
    duckdb = pytest.importorskip("duckdb")
    files = [f.file.file_path.replace("file://", "") for f in t.scan().plan_files()]
    con = duckdb.connect()
    con.execute("SET TimeZone='UTC'")
    q = con.execute("SELECT id, customer, qty, status, created, day, note, tags, address.street, "
                    "address.zip, len(lines), extra FROM read_parquet(?) ORDER BY id",
                    [files]).fetchall()
    assert len(q) == n
    for i, row in enumerate(q):
        w = expected(order(i))
        addr = w["address"] or {}
        assert row == (i, w["customer"], w["qty"], w["status"], w["created"], w["day"],
                       w["note"], w["tags"], addr.get("street"), addr.get("zip"),
                       len(w["lines"]), w["extra"]), (i, row)


def frame(schema_id, payload):
    return b"\x00" + schema_id.to_bytes(4, "big") + payload


def test_json_values_that_do_not_fit_go_to_the_dead_letter_table(broker):
    """error.handling=dead-letter: a JSON value framed with a registered
    schema's id that is not JSON, lacks a required property or has a value of
    another type than its column goes as it is into <name>__dlq, the reason
    naming the property; the rest make rows."""
    iu.local_store_only()
    topic = create_topic(broker.bootstrap, unique_topic("typed-json-dlq"),
                         config=dict(TYPED, **{"lakestream.table.error.handling": "dead-letter"}))
    produce_json(broker, topic, ORDER, [order(i) for i in range(3)])
    sr = SchemaRegistryClient({"url": broker.registry_url})
    sid = sr.get_latest_version(topic + "-value").schema_id
    good = order(3)
    bad = [
        (frame(sid, b"{not json"), b"not one JSON text"),
        (frame(sid, json.dumps(dict(good, id="three")).encode()), b"/id: a string where"),
        (frame(sid, json.dumps({k: v for k, v in good.items() if k != "customer"}).encode()),
         b"/customer: the property is required"),
        (frame(sid, json.dumps(dict(good, created="yesterday")).encode()), b"/created:"),
        (frame(sid, json.dumps(dict(good, lines=[{"sku": "x"}])).encode()),
         b"/lines/0/n: the property is required"),
    ]
    p = Producer({"bootstrap.servers": broker.bootstrap})
    for v, _ in bad:
        p.produce(topic, key=b"bad", value=v, partition=0)
    assert p.flush(10) == 0
    produce_json(broker, topic, ORDER, [order(i) for i in range(3, 5)], first_key=3)
    t, rows, _ = iu.wait_rows(iu.table_dir(broker, topic), 5)
    assert sorted(r["id"] for r in rows.to_pylist()) == list(range(5))
    d, drows, _ = iu.wait_rows(iu.table_dir(broker, topic + "__dlq"), len(bad))
    got = sorted(drows.to_pylist(), key=lambda r: r["offset"])
    assert [r["value"] for r in got] == [v for v, _ in bad]
    for r, (_, why) in zip(got, bad):
        hs = {h["key"]: h["value"] for h in r["headers"]}
        assert why in hs["lakestream.dlq.error"], hs


V1 = {"type": "object", "additionalProperties": False, "required": ["id"],
      "properties": {"id": {"type": "integer", "minimum": 0, "maximum": 1000000},
                     "x": {"type": "number"}}}
V2 = {"type": "object", "additionalProperties": False, "required": ["id"],
      "properties": {"id": {"type": "integer", "minimum": 0},
                     "x": {"type": "number"},
                     "tag": {"type": "string"}}}


def test_json_schema_evolution_added_property_and_widened_integer(broker):
    """v1 (id within 32 bits: int) -> v2 (id unbounded: long, a new optional
    property): the table evolves in the commit of the first v2 rows; v1 rows
    written after v2 still land; old rows read null for the new column."""
    iu.local_store_only()
    topic = create_topic(broker.bootstrap, unique_topic("typed-json-evo"), config=TYPED)
    produce_json(broker, topic, V1, [{"id": i, "x": i / 2} for i in range(3)])
    t, rows, _ = iu.wait_rows(iu.table_dir(broker, topic), 3)
    assert str(t.schema().find_field("id").field_type) == "int"
    produce_json(broker, topic, V2, [{"id": 2**40 + i, "x": 1.0, "tag": "v2-%d" % i}
                                     for i in range(2)], first_key=3)
    produce_json(broker, topic, V1, [{"id": 7}], first_key=5)
    t, rows, _ = iu.wait_rows(iu.table_dir(broker, topic), 6)
    schema = t.schema()
    assert str(schema.find_field("id").field_type) == "long"
    assert str(schema.find_field("tag").field_type) == "string"
    assert schema.find_field("id").field_id == 10  # ids kept across versions
    got = sorted((r["_kafka_offset"], r["id"], r["x"], r["tag"]) for r in rows.to_pylist())
    assert got == [(0, 0, 0.0, None), (1, 1, 0.5, None), (2, 2, 1.0, None),
                   (3, 2**40, 1.0, "v2-0"), (4, 2**40 + 1, 1.0, "v2-1"), (5, 7, None, None)]


def test_json_keys_and_headerless_json_values(broker):
    """key.format=schema-registry with JSONSerializer keys (an object key is
    the struct _kafka_key_typed), value.format=schema-registry-latest with
    plain JSON text (no header) decoded by the latest version of
    <topic>-value."""
    iu.local_store_only()
    topic = unique_topic("typed-json-kv")
    create_topic(broker.bootstrap, topic, config={
        "lakestream.table.enabled": "true", "lakestream.table.commit.interval.ms": "1000",
        "lakestream.table.key.format": "schema-registry",
        "lakestream.table.value.format": "schema-registry-latest"})
    sr = SchemaRegistryClient({"url": broker.registry_url})
    from confluent_kafka.schema_registry import Schema
    sr.register_schema(topic + "-value", Schema(json.dumps(V2), "JSON"))
    key_schema = {"type": "object", "required": ["user"],
                  "properties": {"user": {"type": "string"}, "n": {"type": "integer"}}}
    p = SerializingProducer({"bootstrap.servers": broker.bootstrap,
                             "key.serializer": JSONSerializer(json.dumps(key_schema), sr)})
    values = [{"id": i, "tag": "t%d" % i} if i % 2 else {"id": i, "x": 0.25} for i in range(4)]
    for i, v in enumerate(values):
        p.produce(topic, key={"user": "u%d" % i, "n": i}, value=json.dumps(v).encode(),
                  partition=0)
    assert p.flush(30) == 0
    t, rows, _ = iu.wait_rows(iu.table_dir(broker, topic), 4)
    assert str(t.schema().find_field("_kafka_key_typed").field_type).startswith("struct<")
    got = sorted(rows.to_pylist(), key=lambda r: r["_kafka_offset"])
    assert [r["_kafka_key_typed"] for r in got] == [{"user": "u%d" % i, "n": i}
                                                    for i in range(4)]
    assert [(r["id"], r["x"], r["tag"]) for r in got] == [
        (v["id"], v.get("x"), v.get("tag")) for v in values]
