"""value.format=json (issue 14 §2): schemaless JSON objects materialize as
typed columns inferred from the values themselves — integers -> long,
fractions -> double, strings, booleans, objects -> structs, arrays -> lists —
new properties add optional columns in the commit that first writes them,
an integer column takes no fractions (long cannot become double) and a value
that does not fit the columns is kept whole in the column _raw. Read back row
by row by PyIceberg and DuckDB's Parquet reader; a value that is not a JSON
object follows error.handling."""

import json

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

import iceberg_util as iu
from kafka_util import create_topic, unique_topic

JSON = {"lakestream.table.enabled": "true", "lakestream.table.commit.interval.ms": "1000",
        "lakestream.table.value.format": "json"}


def produce(broker, topic, values):
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    for v in values:
        p.produce(topic, value=v if isinstance(v, bytes) else json.dumps(v).encode(),
                  partition=0)
    assert p.flush(30) == 0


def test_json_columns_are_inferred_and_widen(broker):
    iu.local_store_only()
    topic = create_topic(broker.bootstrap, unique_topic("json"), config=JSON)
    first = [{"id": i, "name": "n%d" % i, "price": i + 0.5, "ok": i % 2 == 0,
              "tags": ["a", "b"][: i % 3], "addr": {"city": "c%d" % i}, "gone": None}
             for i in range(5)]
    produce(broker, topic, first)
    t, rows, _ = iu.wait_rows(iu.table_dir(broker, topic), 5)
    types = {f.name: str(f.field_type) for f in t.schema().fields}
    assert types["id"] == "long" and types["price"] == "double" and types["name"] == "string"
    assert types["ok"] == "boolean" and types["tags"].startswith("list<string>")
    assert types["addr"].startswith("struct<") and types["_raw"] == "string"
    assert "gone" not in types  # only nulls so far: no column
    later = [
        {"id": 5, "name": "n5", "price": 7, "extra": {"deep": [1, 2]}},  # int into double; new
        {"id": 6.5, "name": "x"},  # a fraction where id is long: kept whole in _raw
        {"id": 7, "name": 8},  # a number where name is a string: _raw
        {"id": 8, "addr": {"city": "z", "zip": 9}},  # a new nested column
    ]
    produce(broker, topic, later)
    t, rows, _ = iu.wait_rows(iu.table_dir(broker, topic), 9)
    schema = t.schema()
    assert str(schema.find_field("extra").field_type).startswith("struct<")
    assert schema.find_field("id").field_id == 10  # ids kept across evolution
    got = sorted(rows.to_pylist(), key=lambda r: r["_kafka_offset"])
    for i in range(5):
        r, w = got[i], first[i]
        # record 0's [] came before any array said the items' type: no column yet, null
        tags = None if i == 0 else w["tags"]
        assert (r["id"], r["name"], r["price"], r["ok"], r["tags"], r["addr"]["city"]) == (
            w["id"], w["name"], w["price"], w["ok"], tags, w["addr"]["city"]), r
        assert r["_raw"] is None and r["extra"] is None
    assert (got[5]["id"], got[5]["price"], got[5]["extra"]) == (5, 7.0, {"deep": [1, 2]})
    for k in (6, 7):
        assert got[k]["id"] is None and got[k]["name"] is None
        assert json.loads(got[k]["_raw"]) == later[k - 5]
    assert got[8]["addr"] == {"city": "z", "zip": 9} and got[8]["id"] == 8
    duckdb = pytest.importorskip("duckdb")
    files = [f.file.file_path.replace("file://", "") for f in t.scan().plan_files()]
    q = duckdb.connect().execute(
        "SELECT _kafka_offset, id, name, _raw FROM read_parquet(?, union_by_name=true) "
        "ORDER BY _kafka_offset", [files]).fetchall()
    assert [(o, i, n) for o, i, n, _ in q] == [(r["_kafka_offset"], r["id"], r["name"])
                                              for r in got]


def test_json_values_that_are_not_objects_follow_error_handling(broker):
    iu.local_store_only()
    topic = create_topic(broker.bootstrap, unique_topic("json-dlq"),
                         config=dict(JSON, **{"lakestream.table.error.handling": "dead-letter"}))
    bad = [b"not json", b"[1, 2]"]
    produce(broker, topic, [{"a": 1}] + bad + [{"a": 2}])
    t, rows, _ = iu.wait_rows(iu.table_dir(broker, topic), 2)
    assert sorted(r["a"] for r in rows.to_pylist()) == [1, 2]
    d, drows, _ = iu.wait_rows(iu.table_dir(broker, topic + "__dlq"), 2)
    got = sorted(drows.to_pylist(), key=lambda r: r["offset"])
    assert [r["value"] for r in got] == bad
    for r in got:
        hs = {h["key"]: h["value"] for h in r["headers"]}
        assert b"not a JSON object" in hs["lakestream.dlq.error"], hs


def test_json_format_refuses_a_typed_key(broker):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    fs = admin.create_topics([NewTopic(unique_topic("json-key"), 1, 1, config=dict(
        JSON, **{"lakestream.table.key.format": "schema-registry"}))])
    with pytest.raises(Exception) as e:
        for f in fs.values():
            f.result(10)
    assert "key.format" in str(e.value) and "json" in str(e.value)
