"""Typed tables (issue 14 §2, first slice): a topic with
lakestream.table.value.format=schema-registry whose values are Avro records in
the Confluent wire format (confluent-kafka's AvroSerializer against the
built-in registry) materializes as an Iceberg table with typed columns — the
Kafka metadata as _kafka_* columns, then the record's fields — read back value
by value by PyIceberg and by DuckDB's own Parquet reader. A value that does
not fit (not framed, another schema id) holds the table back with the offset
and the reason in the log; the topic keeps taking writes."""

import datetime
import json
import os
import re
import subprocess
import time
import urllib.request

import pytest
from confluent_kafka import Producer, SerializingProducer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import StringSerializer

import iceberg_util as iu
from kafka_util import create_topic, unique_topic
from lsbroker import binary_path, wait_until

TYPED = {"lakestream.table.enabled": "true", "lakestream.table.commit.interval.ms": "1000",
         "lakestream.table.value.format": "schema-registry"}

ORDER = {
    "type": "record", "name": "Order", "namespace": "shop",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "customer", "type": "string"},
        {"name": "amount", "type": "double"},
        {"name": "ratio", "type": "float"},
        {"name": "qty", "type": "int"},
        {"name": "paid", "type": "boolean"},
        {"name": "status", "type": {"type": "enum", "name": "Status",
                                    "symbols": ["NEW", "PAID", "SHIPPED"]}},
        {"name": "created", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "note", "type": ["null", "string"], "default": None},
        {"name": "raw", "type": "bytes"},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "attrs", "type": {"type": "map", "values": ["null", "long"]}},
        {"name": "address", "type": ["null", {
            "type": "record", "name": "Address",
            "fields": [{"name": "street", "type": "string"},
                       {"name": "zip", "type": ["null", "int"], "default": None}]}],
         "default": None},
        {"name": "lines", "type": {"type": "array", "items": {
            "type": "record", "name": "Line",
            "fields": [{"name": "sku", "type": "string"}, {"name": "n", "type": "int"}]}}},
    ],
}

EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def order(i):
    return {
        "id": i, "customer": "c%d" % (i % 7), "amount": i * 1.25, "ratio": 0.5 * (i % 4),
        "qty": i % 13 - 6, "paid": i % 2 == 0, "status": ["NEW", "PAID", "SHIPPED"][i % 3],
        "created": EPOCH + datetime.timedelta(milliseconds=1_700_000_000_000 + i),
        "day": datetime.date(2026, 1, 1) + datetime.timedelta(days=i % 30),
        "note": None if i % 3 == 0 else "note %d" % i,
        "raw": bytes([i % 256]) * (i % 4),
        "tags": ["t%d" % k for k in range(i % 3)],
        "attrs": {"a": i, "b": None} if i % 2 else {},
        "address": None if i % 4 == 0 else {"street": "s%d" % i, "zip": None if i % 5 == 0 else i},
        "lines": [{"sku": "k%d" % k, "n": k} for k in range(i % 4)],
    }


def produce_orders(broker, topic, n, partitions=1, first=0):
    sr = SchemaRegistryClient({"url": broker.registry_url})
    p = SerializingProducer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5,
                             "key.serializer": StringSerializer(),
                             "value.serializer": AvroSerializer(sr, json.dumps(ORDER))})
    failed = []
    for i in range(first, first + n):
        p.produce(topic, key="k%d" % i, value=order(i), partition=i % partitions,
                  on_delivery=lambda err, m: err and failed.append(err))
    assert p.flush(30) == 0 and not failed, failed


def normalized(row):
    """A produced order as PyIceberg's arrow gives it back."""
    o = dict(row)
    o["attrs"] = sorted(o["attrs"].items())
    return o


def test_avro_values_become_typed_columns(broker):
    iu.local_store_only()
    topic = create_topic(broker.bootstrap, unique_topic("typed"), partitions=2, config=TYPED)
    n = 60
    produce_orders(broker, topic, n, partitions=2)
    t, rows, md = iu.wait_rows(iu.table_dir(broker, topic), n)
    schema = t.schema()
    names = [f.name for f in schema.fields]
    assert names[:5] == ["_kafka_partition", "_kafka_offset", "_kafka_timestamp", "_kafka_key",
                         "_kafka_headers"]
    assert names[5:] == [f["name"] for f in ORDER["fields"]]
    types = {f.name: str(f.field_type) for f in schema.fields}
    assert types["created"] == "timestamptz" and types["day"] == "date"
    assert types["status"] == "string" and types["raw"] == "binary"
    assert types["tags"].startswith("list<string>") and types["attrs"].startswith("map<string, long>")
    assert not schema.find_field("note").required and schema.find_field("id").required
    got = sorted(rows.to_pylist(), key=lambda r: r["id"])
    assert len(got) == n
    for i, r in enumerate(got):
        want = order(i)
        assert r["_kafka_key"] == b"k%d" % i and r["_kafka_partition"] == i % 2
        for k in ("id", "customer", "amount", "ratio", "qty", "paid", "status", "created", "day",
                  "note", "raw", "tags", "address", "lines"):
            assert r[k] == want[k], (i, k, r[k], want[k])
        assert sorted(r["attrs"]) == sorted(want["attrs"].items()), (i, r["attrs"])
    # an independent Parquet reader on the data files
    duckdb = pytest.importorskip("duckdb")
    files = [f.file.file_path.replace("file://", "") for f in t.scan().plan_files()]
    con = duckdb.connect()
    q = con.execute("SELECT id, customer, status, created, day, note, tags, address.street, "
                    "len(lines) FROM read_parquet(?) ORDER BY id", [files]).fetchall()
    assert len(q) == n
    for i, (oid, cust, status, created, day, note, tags, street, nlines) in enumerate(q):
        want = order(i)
        assert (oid, cust, status, note, tags, nlines) == (
            i, want["customer"], want["status"], want["note"], want["tags"], len(want["lines"]))
        assert created == want["created"] and day == want["day"]
        assert street == (want["address"] or {}).get("street")


def _held_reason(broker, topic):
    """The topic's read-only status lakestream.table.held.reason, or None."""
    res = ConfigResource(ConfigResource.Type.TOPIC, topic)
    a = AdminClient({"bootstrap.servers": broker.bootstrap})  # alive until the answer
    cfg = a.describe_configs([res])[res].result(30)
    e = cfg.get("lakestream.table.held.reason")
    return e.value if e is not None else None


def _rest_held_reason(broker, topic):
    """The table property lakestream.held-reason as the REST catalog serves it."""
    url = "%s/v1/namespaces/default/tables/%s" % (broker.http_url, topic)
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.load(r)["metadata"].get("properties", {}).get("lakestream.held-reason")


def _tables_show(broker, topic):
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKESTREAM_")}
    return subprocess.run([binary_path(), "tables", "--bootstrap", broker.bootstrap, "show", topic],
                          capture_output=True, text=True, timeout=30, env=env).stdout


def test_a_value_that_does_not_fit_holds_the_table_back(broker):
    """error.handling=fail (the default): the table stops at the record and
    says why — the broker log, DescribeConfigs' status
    lakestream.table.held.reason, `lakestream tables show` and the REST
    catalog's table property lakestream.held-reason name the
    partition, the offsets and the reason — while the topic keeps taking
    writes; with error.handling=skip it goes on and the status clears."""
    iu.local_store_only()
    topic = create_topic(broker.bootstrap, unique_topic("typed-bad"), config=TYPED)
    produce_orders(broker, topic, 5)
    iu.wait_rows(iu.table_dir(broker, topic), 5)
    assert _held_reason(broker, topic) is None and _rest_held_reason(broker, topic) is None
    p = Producer({"bootstrap.servers": broker.bootstrap})
    p.produce(topic, value=b"plain bytes, no schema id", partition=0)
    assert p.flush(10) == 0
    wait_until(lambda: re.search(r"offset 5: the value is not in the Confluent wire format",
                                 broker.log_text()), 20,
               what="the table's reason in the broker log")
    produce_orders(broker, topic, 3, first=5)   # the topic keeps accepting writes
    time.sleep(2.5)                    # two commit intervals: the table does not move
    md = iu.current_metadata(iu.table_dir(broker, topic))
    rows = iu.pyiceberg_table.StaticTable.from_metadata("file://" + md).scan().to_arrow()
    assert rows.num_rows == 5
    why = _held_reason(broker, topic)
    assert why and re.search(r"^partition 0, offsets \[5, \d+\]: .*offset 5: the value is not in "
                             r"the Confluent wire format", why), why
    assert "table held back: " + why + "\n" in _tables_show(broker, topic)
    assert _rest_held_reason(broker, topic) == why
    # skip: the table goes on past the record, and is no longer held
    res = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[ConfigEntry(
        "lakestream.table.error.handling", "skip", incremental_operation=AlterConfigOpType.SET)])
    a = AdminClient({"bootstrap.servers": broker.bootstrap})
    a.incremental_alter_configs([res])[res].result(30)
    iu.wait_rows(iu.table_dir(broker, topic), 8)
    wait_until(lambda: _held_reason(broker, topic) is None, 20, what="the held status to clear")
    assert "table held back" not in _tables_show(broker, topic)
    assert _rest_held_reason(broker, topic) is None


def test_dead_letter_keeps_what_does_not_fit(broker):
    """error.handling=dead-letter: records that make no row (not framed, an
    unknown schema id, a datum that does not decode) go as they are into the
    raw table <name>__dlq with the reason in a header; the rest make rows;
    nothing acknowledged disappears."""
    iu.local_store_only()
    topic = create_topic(broker.bootstrap, unique_topic("typed-dlq"),
                         config=dict(TYPED, **{"lakestream.table.error.handling": "dead-letter"}))
    produce_orders(broker, topic, 4)
    p = Producer({"bootstrap.servers": broker.bootstrap})
    bad = [b"not framed", b"\x00\x00\x00\x7f\xffno such schema id"]
    for v in bad:
        p.produce(topic, key=b"bad", value=v, partition=0, headers=[("h", b"1")])
    assert p.flush(10) == 0
    produce_orders(broker, topic, 3, first=4)
    t, rows, _ = iu.wait_rows(iu.table_dir(broker, topic), 7)
    assert sorted(r["_kafka_offset"] for r in rows.to_pylist()) == [0, 1, 2, 3, 6, 7, 8]
    d, drows, _ = iu.wait_rows(iu.table_dir(broker, topic + "__dlq"), 2)
    got = sorted(drows.to_pylist(), key=lambda r: r["offset"])
    assert [(r["offset"], r["key"], r["value"]) for r in got] == \
        [(4, b"bad", bad[0]), (5, b"bad", bad[1])]
    for r in got:
        hs = {h["key"]: h["value"] for h in r["headers"]}
        assert hs["h"] == b"1"
        assert b"offset %d" % r["offset"] in hs["lakestream.dlq.error"], hs
    # a later pass adds nothing twice to either table
    produce_orders(broker, topic, 2, first=7)
    t, rows, _ = iu.wait_rows(iu.table_dir(broker, topic), 9)
    assert rows.num_rows == 9
    d, drows, _ = iu.wait_rows(iu.table_dir(broker, topic + "__dlq"), 2)
    assert drows.num_rows == 2


def test_skip_leaves_out_what_does_not_fit_and_counts_it(broker):
    iu.local_store_only()
    topic = create_topic(broker.bootstrap, unique_topic("typed-skip"),
                         config=dict(TYPED, **{"lakestream.table.error.handling": "skip"}))
    produce_orders(broker, topic, 4)
    p = Producer({"bootstrap.servers": broker.bootstrap})
    p.produce(topic, value=b"not framed", partition=0)
    p.produce(topic, value=b"\x00\x00\x00\x7f\xffno such schema id", partition=0)
    assert p.flush(10) == 0
    produce_orders(broker, topic, 3, first=4)
    t, rows, _ = iu.wait_rows(iu.table_dir(broker, topic), 7)
    assert sorted(r["id"] for r in rows.to_pylist()) == list(range(7))
    offsets = sorted(r["_kafka_offset"] for r in rows.to_pylist())
    assert offsets == [0, 1, 2, 3, 6, 7, 8]
    def skipped():
        md = iu.current_metadata(iu.table_dir(broker, topic))
        return iu.pyiceberg_table.StaticTable.from_metadata("file://" + md).properties.get(
            "lakestream.skipped-records")

    wait_until(lambda: skipped() == "2", 20, what="the table to count 2 skipped records")
    # the same count is a status of the topic (DescribeConfigs, tables show)
    wait_until(lambda: "records skipped: 2 " in _tables_show(broker, topic), 20,
               what="tables show to count 2 skipped records")
    assert re.search(r"skipping a record \(error.handling=skip\): record at offset 4", broker.log_text())
