"""Partition transforms on value and key fields of typed tables (issue 14 §2):
lakestream.table.partition = identity(country), bucket(8, customer.id),
day(created_at), truncate(3, sku) over Avro values (confluent-kafka's
AvroSerializer against the built-in registry), with null values in some
records (a null country, a null customer struct, a null timestamp). PyIceberg
reads every row; each data file's partition tuple equals PyIceberg's own
transforms of the rows it holds (identity of a string, Murmur3 bucket of a
nested long, day of a timestamp, truncate of a string, null for null); the
manifest list's partition summaries carry contains_null and the spec's
single-value bound bytes (UTF-8 strings), so filtered scans plan fewer files;
DuckDB's Parquet reader reads the same rows. A JSON Schema topic partitions
by a string and a key field; a field whose type the transform does not take,
or that the schema lacks, holds the table back with the reason."""

import datetime
import json
import re
import struct
import time

import pyarrow.parquet as pq
import pytest
from confluent_kafka import SerializingProducer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONSerializer
from confluent_kafka.serialization import StringSerializer

import iceberg_util as iu
from kafka_util import create_topic, unique_topic
from lsbroker import wait_until

pytest.importorskip("pyiceberg.table")
fastavro = pytest.importorskip("fastavro")
from pyiceberg.expressions import EqualTo, IsNull  # noqa: E402
from pyiceberg.transforms import (BucketTransform, DayTransform,  # noqa: E402
                                  TruncateTransform)
from pyiceberg.types import LongType, StringType, TimestamptzType  # noqa: E402

TYPED = {"lakestream.table.enabled": "true", "lakestream.table.commit.interval.ms": "1000",
         "lakestream.table.value.format": "schema-registry"}

SALE = {
    "type": "record", "name": "Sale", "namespace": "shop",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "sku", "type": "string"},
        {"name": "country", "type": ["null", "string"], "default": None},
        {"name": "customer", "type": ["null", {
            "type": "record", "name": "Customer",
            "fields": [{"name": "id", "type": "long"}, {"name": "tier", "type": "string"}]}],
         "default": None},
        {"name": "created_at", "type": ["null", {"type": "long",
                                                 "logicalType": "timestamp-millis"}],
         "default": None},
        {"name": "items", "type": {"type": "array", "items": "string"}},
    ],
}

EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
COUNTRIES = ["US", "DE", "FR", None, "Ünï"]  # a non-ASCII string partition value too
DAYS = [datetime.datetime(2026, 3, d, 10, tzinfo=datetime.timezone.utc) for d in (1, 2, 5)]


def sale(i):
    return {
        "id": i, "sku": ["apple-%d" % i, "apricot", "banana", "ba", "cherry"][i % 5],
        "country": COUNTRIES[i % 5],
        "customer": None if i % 6 == 0 else {"id": i % 11, "tier": "gold"},
        "created_at": None if i % 7 == 0 else DAYS[i % 3] + datetime.timedelta(minutes=i),
        "items": ["x"] * (i % 3),
    }


def produce(broker, topic, n, partitions=2):
    sr = SchemaRegistryClient({"url": broker.registry_url})
    p = SerializingProducer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5,
                             "key.serializer": StringSerializer(),
                             "value.serializer": AvroSerializer(sr, json.dumps(SALE))})
    failed = []
    for i in range(n):
        p.produce(topic, key="k%d" % i, value=sale(i), partition=i % partitions,
                  on_delivery=lambda err, m: err and failed.append(err))
    assert p.flush(30) == 0 and not failed, failed


def micros(ts):
    return None if ts is None else int((ts - EPOCH).total_seconds() * 1_000_000)


def test_avro_value_fields_partition_prune_and_read_back(broker):
    iu.local_store_only()
    spec = "identity(country), bucket(8, customer.id), day(created_at), truncate(3, sku)"
    topic = create_topic(broker.bootstrap, unique_topic("fparts"), partitions=2,
                         config=dict(TYPED, **{"lakestream.table.partition": spec}))
    n = 70
    produce(broker, topic, n)
    t, rows, md = iu.wait_rows(iu.table_dir(broker, topic), n)
    assert rows.num_rows == n
    assert sorted(rows.column("id").to_pylist()) == list(range(n))

    schema = t.schema()
    fields = t.spec().fields
    assert [f.name for f in fields] == ["country", "customer.id_bucket", "created_at_day",
                                        "sku_trunc"]
    assert [str(f.transform) for f in fields] == ["identity", "bucket[8]", "day", "truncate[3]"]
    # source ids are the schema's field ids, the nested one included
    assert [f.source_id for f in fields] == [schema.find_field(c).field_id for c in
                                             ("country", "customer.id", "created_at", "sku")]

    bucket = BucketTransform(8).transform(LongType())
    day = DayTransform().transform(TimestamptzType())
    trunc = TruncateTransform(3).transform(StringType())

    def expect(s):
        cid = s["customer"]["id"] if s["customer"] else None
        return (s["country"], bucket(cid) if cid is not None else None,
                day(micros(s["created_at"])) if s["created_at"] else None, trunc(s["sku"]))

    tasks = list(t.scan().plan_files())
    want = {expect(sale(i)) for i in range(n)}
    seen = set()
    for task in tasks:
        pv = tuple(task.file.partition[i] for i in range(4))
        data = pq.read_table(task.file.file_path.replace("file://", "")).to_pylist()
        for r in data:
            got = expect({"country": r["country"], "customer": r["customer"],
                          "created_at": r["created_at"], "sku": r["sku"]})
            assert got == pv, (r["id"], got, pv)
        seen.add(pv)
    assert seen == want
    assert any(pv[0] is None for pv in seen) and any(pv[1] is None for pv in seen)
    assert any(pv[2] is None for pv in seen)

    # manifest list summaries: contains_null and UTF-8 bounds for the string field
    snap = t.current_snapshot()
    with open(snap.manifest_list.replace("file://", ""), "rb") as f:
        mfiles = list(fastavro.reader(f))
    summaries = [m["partitions"] for m in mfiles]
    assert any(s[0]["contains_null"] for s in summaries)
    lows = [s[0]["lower_bound"] for s in summaries if s[0]["lower_bound"] is not None]
    highs = [s[0]["upper_bound"] for s in summaries if s[0]["upper_bound"] is not None]
    assert min(lows) == b"DE" and max(highs) == "Ünï".encode()
    lows = [s[3]["lower_bound"] for s in summaries if s[3]["lower_bound"] is not None]
    assert min(lows) == b"app"
    lows = [s[2]["lower_bound"] for s in summaries if s[2]["lower_bound"] is not None]
    assert min(lows) == struct.pack("<i", day(micros(DAYS[0])))  # a date: 4 bytes little-endian

    # pruning: an equality on each source names fewer files; the rows are exact
    for flt, keep in [(EqualTo("country", "DE"), lambda s: s["country"] == "DE"),
                      (IsNull("country"), lambda s: s["country"] is None),
                      (EqualTo("customer.id", 5),
                       lambda s: s["customer"] is not None and s["customer"]["id"] == 5),
                      (EqualTo("sku", "banana"), lambda s: s["sku"] == "banana")]:
        planned = list(t.scan(row_filter=flt).plan_files())
        assert 0 < len(planned) < len(tasks), (flt, len(planned), len(tasks))
        got = sorted(t.scan(row_filter=flt).to_arrow().column("id").to_pylist())
        assert got == [i for i in range(n) if keep(sale(i))], flt

    # an independent Parquet reader on the data files
    duckdb = pytest.importorskip("duckdb")
    files = [task.file.file_path.replace("file://", "") for task in tasks]
    q = duckdb.connect().execute(
        "SELECT id, country, customer.id, sku FROM read_parquet(?) ORDER BY id", [files]).fetchall()
    assert [(i, sale(i)["country"], (sale(i)["customer"] or {}).get("id"), sale(i)["sku"])
            for i in range(n)] == q


JSON_SCHEMA = {
    "$schema": "http://json-schema.org/draft-07/schema#", "title": "Click", "type": "object",
    "properties": {"user": {"type": "string"}, "page": {"type": ["string", "null"]},
                   "n": {"type": "integer"}},
    "required": ["user", "n"],
}


def test_json_schema_value_and_key_fields(broker):
    """A JSON Schema topic: truncate of a string value field and bucket of
    a string key (the typed key column _kafka_key_typed)."""
    iu.local_store_only()
    topic = create_topic(broker.bootstrap, unique_topic("fparts-json"), config={
        "lakestream.table.enabled": "true", "lakestream.table.commit.interval.ms": "1000",
        "lakestream.table.value.format": "schema-registry",
        "lakestream.table.key.format": "schema-registry",
        "lakestream.table.partition": "identity(page), bucket(4, _kafka_key_typed)"})
    sr = SchemaRegistryClient({"url": broker.registry_url})
    key_schema = json.dumps({"$schema": "http://json-schema.org/draft-07/schema#",
                             "type": "string"})
    p = SerializingProducer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5,
                             "key.serializer": JSONSerializer(key_schema, sr),
                             "value.serializer": JSONSerializer(json.dumps(JSON_SCHEMA), sr)})
    n = 40
    pages = ["/home", "/cart", None]
    for i in range(n):
        p.produce(topic, key="user-%d" % (i % 9),
                  value={"user": "u%d" % i, "page": pages[i % 3], "n": i}, partition=0)
    assert p.flush(30) == 0
    t, rows, _ = iu.wait_rows(iu.table_dir(broker, topic), n)
    assert rows.num_rows == n
    assert [str(f.transform) for f in t.spec().fields] == ["identity", "bucket[4]"]
    bucket = BucketTransform(4).transform(StringType())
    tasks = list(t.scan().plan_files())
    for task in tasks:
        data = pq.read_table(task.file.file_path.replace("file://", "")).to_pylist()
        assert {(r["page"], bucket(r["_kafka_key_typed"])) for r in data} == {
            (task.file.partition[0], task.file.partition[1])}
    planned = list(t.scan(row_filter=EqualTo("page", "/cart")).plan_files())
    assert 0 < len(planned) < len(tasks)
    got = t.scan(row_filter=EqualTo("page", "/cart")).to_arrow().column("n").to_pylist()
    assert sorted(got) == [i for i in range(n) if i % 3 == 1]


@pytest.mark.parametrize("spec,why", [
    ("hour(sku)", "hour does not apply to sku (type string"),
    ("truncate(2, created_at)", "truncate does not apply to created_at (type timestamptz"),
    ("identity(customer.email)", "customer.email: no field email in the table's schema"),
    ("bucket(4, items)", "items is a list, not a primitive column"),
])
def test_a_field_the_transform_does_not_take_holds_the_table_back(broker, spec, why):
    iu.local_store_only()
    topic = create_topic(broker.bootstrap, unique_topic("fparts-bad"),
                         config=dict(TYPED, **{"lakestream.table.partition": spec}))
    produce(broker, topic, 3, partitions=1)
    wait_until(lambda: re.search(re.escape(why), broker.log_text()), 30,
               what="the partition refusal in the broker log")
    assert "lakestream.table.partition" in broker.log_text()
    assert iu.current_metadata(iu.table_dir(broker, topic)) is None  # never unpartitioned


V1 = {"type": "record", "name": "Item", "namespace": "shop", "fields": [
    {"name": "id", "type": "long"},
    {"name": "country", "type": ["null", "string"], "default": None},
    {"name": "qty", "type": "int"}]}
V2 = {"type": "record", "name": "Item", "namespace": "shop", "fields": [
    {"name": "id", "type": "long"},
    {"name": "qty", "type": "long"}]}  # drops country, widens qty


def test_evolution_keeps_partitioning_by_field_id(broker):
    """A later schema version that drops a partition source (country) and
    widens another (qty int -> long): the columns keep their field ids, the
    spec keeps naming them, the dropped field's rows get null partitions,
    the widened one's values keep their meaning (identity of the long), and
    records of both versions, interleaved, read back and prune."""
    iu.local_store_only()
    topic = create_topic(broker.bootstrap, unique_topic("fparts-evolve"), config=dict(
        TYPED, **{"lakestream.table.partition": "identity(country), identity(qty)"}))
    sr = SchemaRegistryClient({"url": broker.registry_url})
    tdir = iu.table_dir(broker, topic)
    sent = []

    def send(schema, rows):
        p = SerializingProducer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5,
                                 "value.serializer": AvroSerializer(sr, json.dumps(schema))})
        for r in rows:
            p.produce(topic, value=r, partition=0)
        assert p.flush(30) == 0
        sent.extend(rows)
        return iu.wait_rows(tdir, len(sent))

    send(V1, [{"id": i, "country": ["US", "DE"][i % 2], "qty": i % 3} for i in range(6)])
    send(V2, [{"id": i, "qty": (i % 3) + (1 << 40) * (i % 2)} for i in range(6, 12)])
    t, rows, _ = send(V1, [{"id": i, "country": "FR", "qty": i % 3} for i in range(12, 15)])
    assert rows.num_rows == 15
    schema = t.schema()
    assert str(schema.find_field("qty").field_type) == "long"
    assert not schema.find_field("country").required
    assert [f.source_id for f in t.spec().fields] == [schema.find_field("country").field_id,
                                                      schema.find_field("qty").field_id]
    got = {r["id"]: (r["country"], r["qty"]) for r in rows.to_pylist()}
    for r in sent:
        assert got[r["id"]] == (r.get("country"), r["qty"]), r
    tasks = list(t.scan().plan_files())
    for task in tasks:
        data = pq.read_table(task.file.file_path.replace("file://", "")).to_pylist()
        assert {(d["country"], d["qty"]) for d in data} == {
            (task.file.partition[0], task.file.partition[1])}
    assert any(task.file.partition[0] is None for task in tasks)
    big = list(t.scan(row_filter=EqualTo("qty", (1 << 40) + 1)).plan_files())
    assert 0 < len(big) < len(tasks)
    assert sorted(t.scan(row_filter=EqualTo("qty", 1)).to_arrow().column("id").to_pylist()) == \
        sorted(r["id"] for r in sent if r["qty"] == 1)
    assert sorted(t.scan(row_filter=IsNull("country")).to_arrow().column("id").to_pylist()) == \
        list(range(6, 12))


def test_small_file_rewrite_keeps_value_partitions(broker_factory):
    """Small files of a value-field partitioned table are rewritten per
    partition tuple: after "replace" snapshots every live file still holds
    one country (null included) and every row is there once."""
    iu.local_store_only()
    b = broker_factory("--compaction.min.age.ms=0", "--compaction.interval.ms=200")
    topic = create_topic(b.bootstrap, unique_topic("fparts-rewrite"), config=dict(
        TYPED, **{"lakestream.table.partition": "identity(country)",
                  "lakestream.table.rewrite.min.files": "4"}))
    sr = SchemaRegistryClient({"url": b.registry_url})
    p = SerializingProducer({"bootstrap.servers": b.bootstrap, "linger.ms": 2,
                             "value.serializer": AvroSerializer(sr, json.dumps(V1))})
    tdir = iu.table_dir(b, topic)
    n = 0
    countries = ["US", None, "Ünï"]
    for _ in range(14):  # about one commit per round
        for _ in range(6):
            p.produce(topic, value={"id": n, "country": countries[n % 3], "qty": n}, partition=0)
            n += 1
        assert p.flush(30) == 0
        time.sleep(0.5)

    def replaced():
        md = iu.current_metadata(tdir)
        t = iu.pyiceberg_table.StaticTable.from_metadata("file://" + md)
        ops = [s.summary.operation.value for s in t.metadata.snapshots]
        return ops.count("replace") >= 1 and t.scan().to_arrow().num_rows == n
    wait_until(replaced, 60, what="a rewrite of the small files")
    t = iu.pyiceberg_table.StaticTable.from_metadata("file://" + iu.current_metadata(tdir))
    ids = sorted(t.scan().to_arrow().column("id").to_pylist())
    assert ids == list(range(n))
    tasks = list(t.scan().plan_files())
    for task in tasks:
        data = pq.read_table(task.file.file_path.replace("file://", "")).to_pylist()
        assert {d["country"] for d in data} == {task.file.partition[0]}
    assert {task.file.partition[0] for task in tasks} == set(countries)


def test_schemaless_json_values_partition_by_inferred_columns(broker):
    """value.format=json: the partition source is an inferred column (the
    first record must carry it: the table is created from that record)."""
    iu.local_store_only()
    from confluent_kafka import Producer
    topic = create_topic(broker.bootstrap, unique_topic("fparts-sjson"), config={
        "lakestream.table.enabled": "true", "lakestream.table.commit.interval.ms": "1000",
        "lakestream.table.value.format": "json",
        "lakestream.table.partition": "identity(user.region), bucket(4, n)"})
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    n = 30
    regions = ["eu", "us", None]
    for i in range(n):
        user = {"name": "u%d" % i} if regions[i % 3] is None else {"name": "u%d" % i,
                                                                  "region": regions[i % 3]}
        p.produce(topic, value=json.dumps({"n": i, "user": user}).encode(), partition=0)
    assert p.flush(30) == 0
    t, rows, _ = iu.wait_rows(iu.table_dir(broker, topic), n)
    assert sorted(rows.column("n").to_pylist()) == list(range(n))
    bucket = BucketTransform(4).transform(LongType())
    tasks = list(t.scan().plan_files())
    for task in tasks:
        data = pq.read_table(task.file.file_path.replace("file://", "")).to_pylist()
        assert {((d["user"] or {}).get("region"), bucket(d["n"])) for d in data} == {
            (task.file.partition[0], task.file.partition[1])}
    assert {task.file.partition[0] for task in tasks} == {"eu", "us", None}
    eu = t.scan(row_filter=EqualTo("user.region", "eu")).to_arrow().column("n").to_pylist()
    assert sorted(eu) == [i for i in range(n) if i % 3 == 0]


def test_upsert_table_partitioned_by_a_value_field(broker_factory):
    """An upsert table (compacted topic) partitioned by identity(region): a
    key whose latest value moved to another region has one row, in the
    file of its new region; a tombstone deletes it wherever it is."""
    iu.local_store_only()
    from test_upsert_tables import wait_caught_up
    b = broker_factory("--compaction.min.age.ms=0", "--compaction.interval.ms=200")
    topic = create_topic(b.bootstrap, unique_topic("fparts-upsert"), config={
        "cleanup.policy": "compact", "lakestream.table.enabled": "true",
        "lakestream.table.commit.interval.ms": "1000",
        "lakestream.table.value.format": "schema-registry",
        "lakestream.table.partition": "identity(region)"})
    schema = {"type": "record", "name": "Acct", "fields": [
        {"name": "region", "type": ["null", "string"], "default": None},
        {"name": "balance", "type": "long"}]}
    sr = SchemaRegistryClient({"url": b.registry_url})
    p = SerializingProducer({"bootstrap.servers": b.bootstrap,
                             "key.serializer": StringSerializer(),
                             "value.serializer": AvroSerializer(sr, json.dumps(schema))})
    last, model = {}, {}
    regions = ["eu", "us", None, "apac"]
    for rnd in range(3):
        for i in range(30):
            k = "acct-%d" % (i % 8)
            if (i + rnd) % 11 == 10:
                v = None
                model.pop(k, None)
            else:
                v = {"region": regions[(i + rnd) % 4], "balance": rnd * 100 + i}
                model[k] = v
            p.produce(topic, key=k, value=v, partition=0,
                      on_delivery=lambda err, msg: last.__setitem__(0, msg.offset()))
        assert p.flush(30) == 0
        t = wait_caught_up(iu.table_dir(b, topic), dict(last))
        rows = t.scan().to_arrow().to_pylist()
        got = {r["_kafka_key"].decode(): {"region": r["region"], "balance": r["balance"]}
               for r in rows}
        assert len(got) == len(rows) and got == model, (rnd, got, model)
        for task in t.scan().plan_files():
            data = pq.read_table(task.file.file_path.replace("file://", "")).to_pylist()
            assert {d["region"] for d in data} <= {task.file.partition[0]}


def test_refused_at_create_and_alter_when_the_subject_is_registered(broker):
    """With <topic>-value registered, a field the latest version lacks or
    whose type the transform does not take is refused at CreateTopics and
    IncrementalAlterConfigs (INVALID_CONFIG naming the key, the field and
    the transform); a fitting spec is accepted."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry,
                                       ConfigResource, NewTopic)
    from confluent_kafka.schema_registry import Schema
    topic = unique_topic("fparts-cfg")
    sr = SchemaRegistryClient({"url": broker.registry_url})
    sr.register_schema(topic + "-value", Schema(json.dumps(SALE), "AVRO"))
    a = AdminClient({"bootstrap.servers": broker.bootstrap})

    def refused(fut, *why):
        with pytest.raises(KafkaException) as ei:
            fut.result(30)
        err = ei.value.args[0]
        assert err.name() == "INVALID_CONFIG", err
        assert "lakestream.table.partition" in err.str(), err.str()
        for w in why:
            assert w in err.str(), err.str()

    refused(a.create_topics([NewTopic(topic, 1, 1, config=dict(
        TYPED, **{"lakestream.table.partition": "hour(sku)"}))])[topic],
        "hour does not apply to sku (type string", "subject %s-value" % topic)
    refused(a.create_topics([NewTopic(topic, 1, 1, config=dict(
        TYPED, **{"lakestream.table.partition": "identity(customer.email)"}))])[topic],
        "no field email")
    a.create_topics([NewTopic(topic, 1, 1, config=dict(
        TYPED, **{"lakestream.table.partition": "day(created_at)"}))])[topic].result(30)

    def alter(spec):
        res = ConfigResource("topic", topic, incremental_configs=[ConfigEntry(
            "lakestream.table.partition", spec, incremental_operation=AlterConfigOpType.SET)])
        return a.incremental_alter_configs([res])[res]
    refused(alter("bucket(4, items)"), "items is a list")
    alter("truncate(2, sku), bucket(4, customer.id)").result(30)


READING = {"type": "record", "name": "Reading", "namespace": "lab", "fields": [
    {"name": "id", "type": "long"},
    {"name": "ok", "type": "boolean"},
    {"name": "ratio", "type": "float"},
    {"name": "score", "type": ["null", "double"], "default": None}]}
SCORES = [2.5, -1e300, None, float("nan"), 0.1]


def reading(i):
    return {"id": i, "ok": i % 2 == 0, "ratio": [0.5, 1.5, -3.25][i % 3],
            "score": SCORES[i % 5]}


def produce_values(broker, topic, schema, value_of, n):
    """n Avro values value_of(0..n-1) of schema (registered by the
    serializer) into partition 0."""
    sr = SchemaRegistryClient({"url": broker.registry_url})
    p = SerializingProducer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5,
                             "value.serializer": AvroSerializer(sr, json.dumps(schema))})
    for i in range(n):
        p.produce(topic, value=value_of(i), partition=0)
    assert p.flush(30) == 0


def same(a, b):
    """Equality with NaN equal to itself (a partition value is one NaN)."""
    return a == b or (isinstance(a, float) and isinstance(b, float) and a != a and b != b)


def test_boolean_float_double_identity_partitions(broker):
    """Identity partitions of boolean, float and double fields (the spec's
    transform table: identity and void only; bucket and truncate of them are
    refused at CreateTopics naming the key, the field and its type). Every
    file holds one (ok, ratio, score) tuple, NaN and null included, as
    PyIceberg reads its rows; the manifest list's summaries carry
    contains_nan and IEEE bounds; equality filters plan fewer files and
    read exactly the matching rows."""
    import math
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic
    from confluent_kafka.schema_registry import Schema
    iu.local_store_only()
    topic = unique_topic("fparts-float")
    sr = SchemaRegistryClient({"url": broker.registry_url})
    sr.register_schema(topic + "-value", Schema(json.dumps(READING), "AVRO"))
    a = AdminClient({"bootstrap.servers": broker.bootstrap})
    for spec, why in (("bucket(4, score)", "bucket does not apply to score (type double"),
                      ("truncate(2, ratio)", "truncate does not apply to ratio (type float"),
                      ("bucket(2, ok)", "bucket does not apply to ok (type boolean")):
        fut = a.create_topics([NewTopic(topic, 1, 1, config=dict(
            TYPED, **{"lakestream.table.partition": spec}))])[topic]
        with pytest.raises(KafkaException) as ei:
            fut.result(30)
        err = ei.value.args[0]
        assert err.name() == "INVALID_CONFIG" and why in err.str(), err.str()
        assert "lakestream.table.partition" in err.str(), err.str()
    create_topic(broker.bootstrap, topic, partitions=1, config=dict(
        TYPED, **{"lakestream.table.partition": "identity(ok), identity(ratio), identity(score)"}))
    n = 60
    produce_values(broker, topic, READING, reading, n)
    t, rows, _ = iu.wait_rows(iu.table_dir(broker, topic), n)
    assert sorted(rows.column("id").to_pylist()) == list(range(n))
    assert [(f.name, str(f.transform)) for f in t.spec().fields] == [
        ("ok", "identity"), ("ratio", "identity"), ("score", "identity")]
    # the partition tuples as fastavro reads the manifests (PyIceberg 0.12's
    # Cython decoder narrows every Avro double to a float: apache/iceberg-python#3808)
    snap = t.current_snapshot()
    with open(snap.manifest_list.replace("file://", ""), "rb") as f:
        manifests = [m["manifest_path"] for m in fastavro.reader(f)]
    parts = {}
    for mp in manifests:
        with open(mp.replace("file://", ""), "rb") as f:
            for e in fastavro.reader(f):
                if e["status"] != 2:
                    p = e["data_file"]["partition"]
                    parts[e["data_file"]["file_path"]] = (p["ok"], p["ratio"], p["score"])
    tasks = list(t.scan().plan_files())
    assert sorted(parts) == sorted(task.file.file_path for task in tasks)
    for path, pv in parts.items():
        data = pq.read_table(path.replace("file://", "")).to_pylist()
        for r in data:
            got = (r["ok"], r["ratio"], r["score"])
            assert all(same(x, y) for x, y in zip(got, pv)), (r["id"], got, pv)
    tuples = list(parts.values())
    assert len(tuples) == 30  # 2 x 3 x 5 tuples, each in its own file
    assert any(pv[2] is None for pv in tuples) and any(
        pv[2] is not None and math.isnan(pv[2]) for pv in tuples)
    assert {pv[2] for pv in tuples if pv[2] is not None and not math.isnan(pv[2])} == {
        2.5, -1e300, 0.1}

    snap = t.current_snapshot()
    with open(snap.manifest_list.replace("file://", ""), "rb") as f:
        summaries = [m["partitions"] for m in fastavro.reader(f)]
    assert all(s[0]["contains_nan"] is None for s in summaries)  # not a float
    assert any(s[2]["contains_nan"] for s in summaries)
    lows = [struct.unpack("<d", s[2]["lower_bound"])[0] for s in summaries
            if s[2]["lower_bound"] is not None]
    highs = [struct.unpack("<d", s[2]["upper_bound"])[0] for s in summaries
             if s[2]["upper_bound"] is not None]
    assert min(lows) == -1e300 and max(highs) == 2.5  # NaN is in no bound
    lows = [struct.unpack("<f", s[1]["lower_bound"])[0] for s in summaries]
    assert min(lows) == -3.25

    for flt, keep in [(EqualTo("score", 2.5), lambda r: r["score"] == 2.5),
                      (EqualTo("ratio", 1.5), lambda r: r["ratio"] == 1.5),
                      (EqualTo("ok", True), lambda r: r["ok"]),
                      (IsNull("score"), lambda r: r["score"] is None)]:
        planned = list(t.scan(row_filter=flt).plan_files())
        assert 0 < len(planned) < len(tasks), (flt, len(planned), len(tasks))
        got = sorted(t.scan(row_filter=flt).to_arrow().column("id").to_pylist())
        assert got == [i for i in range(n) if keep(reading(i))], flt


def test_changing_the_spec_of_a_table_with_data_is_refused(broker):
    """A table keeps the partition spec it was created with (partition spec
    evolution is not built): with the table there, IncrementalAlterConfigs
    of lakestream.table.partition to another spec is refused with
    INVALID_CONFIG naming the key and the table's spec; the same spec
    written another way is accepted. A namespace default that would change
    it (written behind the broker's back, where no request can be refused)
    holds the table back with that reason in the log; nothing is written
    under a spec the table does not have; setting it back lets the rows
    in, every one once, each file still one country."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry,
                                       ConfigResource)
    from test_table_policy import _cli
    iu.local_store_only()
    topic = create_topic(broker.bootstrap, unique_topic("fparts-change"), partitions=1,
                         config=dict(TYPED, **{"lakestream.table.partition": "identity(country)"}))
    tdir = iu.table_dir(broker, topic)
    produce(broker, topic, 10, partitions=1)
    iu.wait_rows(tdir, 10)
    a = AdminClient({"bootstrap.servers": broker.bootstrap})

    def alter(op, spec=None):
        res = ConfigResource("topic", topic, incremental_configs=[ConfigEntry(
            "lakestream.table.partition", spec, incremental_operation=op)])
        return a.incremental_alter_configs([res])[res]

    for fut in (alter(AlterConfigOpType.SET, "identity(country), bucket(4, id)"),
                alter(AlterConfigOpType.SET, "bucket(4, country)"),
                alter(AlterConfigOpType.DELETE)):  # back to the cluster default, day
        with pytest.raises(KafkaException) as ei:
            fut.result(30)
        err = ei.value.args[0]
        assert err.name() == "INVALID_CONFIG", err
        for w in ("lakestream.table.partition", "is not the partition spec of table default.%s "
                  "(country: identity)" % topic, "lakestream.table.name"):
            assert w in err.str(), err.str()
    alter(AlterConfigOpType.SET, "identity( country )").result(30)  # the same spec


def test_a_namespace_default_that_changes_the_spec_holds_the_table_back(broker):
    """The spec comes from a namespace default (lakestream tables namespace,
    written to the metadata store where no request can refuse it): changing
    it under a table with data holds the table back with the reason in the
    log (key, both specs); no row is written under a spec the table does
    not have; setting it back lets the rows in, every one once, each file
    still one country."""
    from test_table_policy import _cli
    iu.local_store_only()

    def ns_spec(spec):
        rc, _, err = _cli("namespace", "default", "--set", "lakestream.table.partition=" + spec,
                          "--data.dir=" + broker.data_dir)
        assert rc == 0, err
    ns_spec("identity(country)")
    topic = create_topic(broker.bootstrap, unique_topic("fparts-ns"), partitions=1, config=TYPED)
    tdir = iu.table_dir(broker, topic)
    produce(broker, topic, 10, partitions=1)
    t, _, _ = iu.wait_rows(tdir, 10)
    assert [f.name for f in t.spec().fields] == ["country"]
    snap = t.current_snapshot().snapshot_id
    ns_spec("bucket(2, id)")
    sr = SchemaRegistryClient({"url": broker.registry_url})
    p = SerializingProducer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5,
                             "key.serializer": StringSerializer(),
                             "value.serializer": AvroSerializer(sr, json.dumps(SALE))})
    for i in range(10, 20):
        p.produce(topic, key="k%d" % i, value=sale(i), partition=0)
    assert p.flush(30) == 0
    why = "is not the partition spec of table default.%s (country: identity)" % topic
    wait_until(lambda: why in broker.log_text(), 30, what="the hold-back reason in the log")
    assert "lakestream.table.partition 'bucket(2, id)'" in broker.log_text()
    t = iu.pyiceberg_table.StaticTable.from_metadata("file://" + iu.current_metadata(tdir))
    assert t.current_snapshot().snapshot_id == snap  # held back: no commit
    ns_spec("identity(country)")
    t, rows, _ = iu.wait_rows(tdir, 20)
    assert sorted(rows.column("id").to_pylist()) == list(range(20))
    for task in t.scan().plan_files():
        data = pq.read_table(task.file.file_path.replace("file://", "")).to_pylist()
        assert {d["country"] for d in data} == {task.file.partition[0]}


PAGE = {"type": "record", "name": "Page", "namespace": "web", "fields": [
    {"name": "id", "type": "long"},
    {"name": "url", "type": ["null", "string"], "default": None},
    {"name": "body", "type": "bytes"}]}


def page(i):
    # URLs of 40 to ~1000 bytes, two differing only past byte 128; non-ASCII too
    urls = ["https://example.com/" + "a" * 980, "https://example.com/" + "a" * 979 + "b",
            "https://ex.com/short", "https://example.com/ü/" + "é" * 200, None]
    return {"id": i, "url": urls[i % 5], "body": bytes([i % 7]) * (150 + i % 3 * 100)}




def test_partition_values_longer_than_128_bytes(broker):
    """identity of strings up to ~1000 bytes and truncate(200) of bytes
    values up to 350 bytes: every record becomes a row (none is refused or
    cut), each file's partition tuple is the whole value (two URLs that
    differ only at their last byte are two partitions), the summaries'
    bounds are whole values, and an equality on a long URL prunes."""
    iu.local_store_only()
    topic = create_topic(broker.bootstrap, unique_topic("fparts-long"), partitions=1,
                         config=dict(TYPED, **{"lakestream.table.partition":
                                               "identity(url), truncate(200, body)"}))
    n = 30
    produce_values(broker, topic, PAGE, page, n)
    t, rows, _ = iu.wait_rows(iu.table_dir(broker, topic), n)
    assert sorted(rows.column("id").to_pylist()) == list(range(n))
    tasks = list(t.scan().plan_files())
    want = {(page(i)["url"], page(i)["body"][:200]) for i in range(n)}
    seen = set()
    for task in tasks:
        pv = (task.file.partition[0], task.file.partition[1])
        data = pq.read_table(task.file.file_path.replace("file://", "")).to_pylist()
        assert {(d["url"], d["body"][:200]) for d in data} == {pv}
        seen.add(pv)
    assert seen == want and len(tasks) == len(want)
    assert max(len(u.encode()) for u, _ in seen if u) > 900
    snap = t.current_snapshot()
    with open(snap.manifest_list.replace("file://", ""), "rb") as f:
        summaries = [m["partitions"] for m in fastavro.reader(f)]
    highs = [s[0]["upper_bound"] for s in summaries if s[0]["upper_bound"] is not None]
    assert max(highs) == page(3)["url"].encode()  # whole, not cut
    long_url = page(1)["url"]
    planned = list(t.scan(row_filter=EqualTo("url", long_url)).plan_files())
    assert 0 < len(planned) < len(tasks)
    got = sorted(t.scan(row_filter=EqualTo("url", long_url)).to_arrow().column("id").to_pylist())
    assert got == [i for i in range(n) if page(i)["url"] == long_url]
