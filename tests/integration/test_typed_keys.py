"""Typed keys (issue 14 §2, lakestream.table.key.format=schema-registry): a
key in the Confluent wire format is decoded, beside its bytes (_kafka_key),
into the column _kafka_key_typed — a struct of an Avro record key's fields,
or the column of a primitive key — with the value's type mapping, error
handling and evolution rules. Read back by PyIceberg and by DuckDB's own
Parquet reader on the data files."""

import json

import pytest
from confluent_kafka import Producer, SerializingProducer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import StringSerializer

import iceberg_util as iu
from kafka_util import create_topic, unique_topic

KEYED = {"lakestream.table.enabled": "true", "lakestream.table.commit.interval.ms": "1000",
         "lakestream.table.value.format": "schema-registry",
         "lakestream.table.key.format": "schema-registry"}

KEY_V1 = {"type": "record", "name": "AcctKey", "namespace": "bank",
          "fields": [{"name": "id", "type": "long"}, {"name": "region", "type": "string"}]}
KEY_V2 = {"type": "record", "name": "AcctKey", "namespace": "bank",
          "fields": [{"name": "id", "type": "long"}, {"name": "region", "type": "string"},
                     {"name": "shard", "type": ["null", "int"], "default": None}]}
VALUE = {"type": "record", "name": "Acct", "namespace": "bank",
         "fields": [{"name": "owner", "type": "string"}, {"name": "balance", "type": "long"}]}


def producer(b, key_schema, value_schema=VALUE, **conf):
    sr = SchemaRegistryClient({"url": b.registry_url})
    ks = (AvroSerializer(sr, json.dumps(key_schema)) if isinstance(key_schema, dict)
          else key_schema)
    vs = AvroSerializer(sr, json.dumps(value_schema)) if value_schema else None
    c = {"bootstrap.servers": b.bootstrap, "linger.ms": 5, "key.serializer": ks}
    if vs:
        c["value.serializer"] = vs
    c.update(conf)
    return SerializingProducer(c)


def scan(t):
    return sorted(t.scan().to_arrow().to_pylist(), key=lambda r: r["_kafka_offset"])


def test_record_keys_become_a_struct_column(broker):
    """Record keys become _kafka_key_typed; a record without a key has a null
    key column; a new key version (an added optional field) evolves the
    column; a key that is not framed is dead-lettered with the reason."""
    iu.local_store_only()
    topic = create_topic(broker.bootstrap, unique_topic("tkey"), config=dict(
        KEYED, **{"lakestream.table.error.handling": "dead-letter"}))
    p = producer(broker, KEY_V1)
    want = []
    for i in range(6):
        k = None if i == 3 else {"id": 100 + i, "region": "r%d" % (i % 2)}
        p.produce(topic, key=k, value={"owner": "o%d" % i, "balance": i}, partition=0)
        want.append(k)
    assert p.flush(30) == 0
    tdir = iu.table_dir(broker, topic)
    t, _, _ = iu.wait_rows(tdir, 6)
    key_field = t.schema().find_field("_kafka_key_typed")
    assert not key_field.required
    assert [f.name for f in key_field.field_type.fields] == ["id", "region"]
    rows = scan(t)
    assert [r["_kafka_key_typed"] for r in rows] == want
    assert [r["owner"] for r in rows] == ["o%d" % i for i in range(6)]
    # the key's bytes stay beside it: the key compaction and a primary-key-less upsert go by them
    assert rows[0]["_kafka_key"][0] == 0 and rows[3]["_kafka_key"] is None
    # v2 of the key (an added optional field) evolves the key column; v1 keys still land
    p2 = producer(broker, KEY_V2)
    p2.produce(topic, key={"id": 200, "region": "eu", "shard": 7},
               value={"owner": "v2", "balance": 1}, partition=0)
    assert p2.flush(30) == 0
    p.produce(topic, key={"id": 201, "region": "us"}, value={"owner": "v1", "balance": 2},
              partition=0)
    assert p.flush(30) == 0
    # a key that is not in the wire format: dead-lettered as it is
    raw = Producer({"bootstrap.servers": broker.bootstrap})
    raw.produce(topic, key=b"plain key", value=b"\x00" * 5, partition=0)
    assert raw.flush(10) == 0
    t, _, _ = iu.wait_rows(tdir, 8)
    key_field = t.schema().find_field("_kafka_key_typed")
    assert [f.name for f in key_field.field_type.fields] == ["id", "region", "shard"]
    assert not [f for f in key_field.field_type.fields if f.name == "shard"][0].required
    rows = scan(t)
    assert [r["_kafka_key_typed"] for r in rows] == [
        dict(k, shard=None) if k else None for k in want] + [
        {"id": 200, "region": "eu", "shard": 7}, {"id": 201, "region": "us", "shard": None}]
    sr = SchemaRegistryClient({"url": broker.registry_url})
    key_ids = [sr.get_version(topic + "-key", v).schema_id for v in (1, 2)]
    assert t.properties.get("lakestream.key.schema-id") == str(key_ids[1])
    assert t.properties.get("lakestream.key.schema-ids") == ",".join(map(str, sorted(key_ids)))
    d, drows, _ = iu.wait_rows(iu.table_dir(broker, topic + "__dlq"), 1)
    dead = drows.to_pylist()[0]
    assert dead["offset"] == 8 and dead["key"] == b"plain key"
    reason = {h["key"]: h["value"] for h in dead["headers"]}["lakestream.dlq.error"]
    assert b"the key is not in the Confluent wire format" in reason, reason
    # an independent Parquet reader on the data files
    duckdb = pytest.importorskip("duckdb")
    files = [f.file.file_path.replace("file://", "") for f in t.scan().plan_files()]
    q = duckdb.connect().execute(
        "SELECT _kafka_offset, _kafka_key_typed.id, _kafka_key_typed.region "
        "FROM read_parquet(?, union_by_name=true) ORDER BY _kafka_offset", [files]).fetchall()
    assert [(o, i, r) for o, i, r in q] == [
        (n, k["id"] if k else None, k["region"] if k else None)
        for n, k in enumerate(want + [{"id": 200, "region": "eu"}, {"id": 201, "region": "us"}])]


def test_primitive_key_and_raw_value(broker):
    """A primitive Avro key (a string) is the column itself; with
    value.format=raw the value stays bytes, in _kafka_value."""
    iu.local_store_only()
    topic = create_topic(broker.bootstrap, unique_topic("tkeyraw"), config=dict(
        KEYED, **{"lakestream.table.value.format": "raw"}))
    sr = SchemaRegistryClient({"url": broker.registry_url})
    p = SerializingProducer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5,
                             "key.serializer": AvroSerializer(sr, json.dumps("string")),
                             "value.serializer": StringSerializer()})
    for i in range(5):
        p.produce(topic, key="user-%d" % i, value="payload %d" % i, partition=0)
    p.produce(topic, key=None, value=None, partition=0)
    assert p.flush(30) == 0
    t, _, _ = iu.wait_rows(iu.table_dir(broker, topic), 6)
    types = {f.name: str(f.field_type) for f in t.schema().fields}
    assert types["_kafka_key_typed"] == "string" and types["_kafka_value"] == "binary"
    rows = scan(t)
    assert [r["_kafka_key_typed"] for r in rows] == ["user-%d" % i for i in range(5)] + [None]
    assert [r["_kafka_value"] for r in rows] == [b"payload %d" % i for i in range(5)] + [None]


def test_key_format_is_a_policy_field(broker):
    """Shown by DescribeConfigs with its source; a value not accepted is
    refused naming the key and the accepted values."""
    from confluent_kafka.admin import AdminClient, ConfigResource
    from confluent_kafka import KafkaException
    topic = create_topic(broker.bootstrap, unique_topic("tkeycfg"), config=KEYED)
    a = AdminClient({"bootstrap.servers": broker.bootstrap})
    res = ConfigResource("TOPIC", topic)
    got = a.describe_configs([res])[res].result(30)
    e = got["lakestream.table.key.format"]
    assert e.value == "schema-registry" and e.source == 1  # TOPIC_CONFIG
    other = create_topic(broker.bootstrap, unique_topic("tkeycfg2"))
    res2 = ConfigResource("TOPIC", other)
    e = a.describe_configs([res2])[res2].result(30)["lakestream.table.key.format"]
    assert e.value == "raw" and e.is_default
    bad = ConfigResource("TOPIC", topic, set_config={"lakestream.table.key.format": "json-ish"})
    with pytest.raises(KafkaException) as ei:
        a.alter_configs([bad])[bad].result(30)
    msg = str(ei.value)
    assert "lakestream.table.key.format" in msg and "raw, schema-registry" in msg, msg


def bare(schema, datum):
    """A datum in plain Avro binary: what a producer that cannot write the
    Confluent header sends."""
    import io
    import fastavro
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), datum)
    return out.getvalue()


def test_latest_formats_decode_by_the_subjects_latest_version(broker):
    """schema-registry-latest: keys and values without the header are decoded
    by the latest version of <topic>-key / <topic>-value; a new latest version
    evolves the table; a record written by an older version but materialized
    after the new one became latest does not decode exactly and is dead-
    lettered with the reason, never misread."""
    from confluent_kafka.schema_registry import Schema
    iu.local_store_only()
    topic = unique_topic("tlatest")
    cfg = dict(KEYED, **{"lakestream.table.value.format": "schema-registry-latest",
                         "lakestream.table.key.format": "schema-registry-latest",
                         "lakestream.table.error.handling": "dead-letter"})
    create_topic(broker.bootstrap, topic, config=cfg)
    sr = SchemaRegistryClient({"url": broker.registry_url})
    sr.register_schema(topic + "-key", Schema(json.dumps(KEY_V1), "AVRO"))
    sr.register_schema(topic + "-value", Schema(json.dumps(VALUE), "AVRO"))
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    for i in range(4):
        p.produce(topic, key=bare(KEY_V1, {"id": i, "region": "r"}),
                  value=bare(VALUE, {"owner": "o%d" % i, "balance": i * 10}), partition=0)
    assert p.flush(30) == 0
    tdir = iu.table_dir(broker, topic)
    t, _, _ = iu.wait_rows(tdir, 4)
    rows = scan(t)
    assert [(r["_kafka_key_typed"], r["owner"], r["balance"]) for r in rows] == [
        ({"id": i, "region": "r"}, "o%d" % i, i * 10) for i in range(4)]
    # v2 becomes latest (an added optional field): the next records evolve the table
    v2 = dict(VALUE, fields=VALUE["fields"] + [
        {"name": "note", "type": ["null", "string"], "default": None}])
    sr.register_schema(topic + "-value", Schema(json.dumps(v2), "AVRO"))
    p.produce(topic, key=bare(KEY_V1, {"id": 9, "region": "r"}),
              value=bare(v2, {"owner": "new", "balance": 1, "note": "hello"}), partition=0)
    # a record still written by v1 is decoded by v2 (the latest): it is short, a dead letter
    p.produce(topic, key=bare(KEY_V1, {"id": 10, "region": "r"}),
              value=bare(VALUE, {"owner": "old", "balance": 2}), partition=0)
    assert p.flush(30) == 0
    t, _, _ = iu.wait_rows(tdir, 5)
    rows = scan(t)
    assert [(r["owner"], r["note"]) for r in rows] == [("o%d" % i, None) for i in range(4)] + [
        ("new", "hello")]
    d, drows, _ = iu.wait_rows(iu.table_dir(broker, topic + "__dlq"), 1)
    dead = drows.to_pylist()[0]
    assert dead["offset"] == 5
    reason = {h["key"]: h["value"] for h in dead["headers"]}["lakestream.dlq.error"]
    assert b"Avro value datum does not match its schema" in reason, reason


def test_subject_name_strategy(broker):
    """value.subject.name.strategy=RecordNameStrategy: a header's schema id must
    be a version of the subject named by the record (what confluent-kafka's
    record_subject_name_strategy registers under); an id of another subject
    follows error.handling. With schema-registry-latest only TopicNameStrategy
    can be applied: the others are refused by name."""
    from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic
    from confluent_kafka import KafkaException
    from confluent_kafka.schema_registry import record_subject_name_strategy
    iu.local_store_only()
    topic = unique_topic("tsubj")
    create_topic(broker.bootstrap, topic, config={
        "lakestream.table.enabled": "true", "lakestream.table.commit.interval.ms": "1000",
        "lakestream.table.value.format": "schema-registry",
        "lakestream.table.value.subject.name.strategy": "RecordNameStrategy",
        "lakestream.table.error.handling": "dead-letter"})
    sr = SchemaRegistryClient({"url": broker.registry_url})
    by_record = SerializingProducer({
        "bootstrap.servers": broker.bootstrap, "key.serializer": StringSerializer(),
        "value.serializer": AvroSerializer(sr, json.dumps(VALUE), conf={
            "subject.name.strategy": record_subject_name_strategy})})
    # TopicNameStrategy registers under <topic>-value only (another schema: another id)
    other = dict(VALUE, fields=VALUE["fields"] + [
        {"name": "note", "type": ["null", "string"], "default": None}])
    by_topic = producer(broker, StringSerializer(), other)
    by_record.produce(topic, key="a", value={"owner": "rec", "balance": 1}, partition=0)
    by_record.flush(30)
    by_topic.produce(topic, key="b", value={"owner": "top", "balance": 2, "note": None},
                     partition=0)
    by_topic.flush(30)
    by_record.produce(topic, key="c", value={"owner": "rec2", "balance": 3}, partition=0)
    assert by_record.flush(30) == 0
    assert "bank.Acct" in sr.get_subjects()
    t, _, _ = iu.wait_rows(iu.table_dir(broker, topic), 2)
    assert [r["owner"] for r in scan(t)] == ["rec", "rec2"]
    d, drows, _ = iu.wait_rows(iu.table_dir(broker, topic + "__dlq"), 1)
    dead = drows.to_pylist()[0]
    assert dead["offset"] == 1
    reason = {h["key"]: h["value"] for h in dead["headers"]}["lakestream.dlq.error"]
    assert b"is not a version of subject bank.Acct" in reason, reason
    # -latest with a strategy that needs the record's name: refused by name
    a = AdminClient({"bootstrap.servers": broker.bootstrap})
    res = ConfigResource("TOPIC", topic, set_config={
        "lakestream.table.enabled": "true",
        "lakestream.table.value.format": "schema-registry-latest",
        "lakestream.table.value.subject.name.strategy": "RecordNameStrategy"})
    with pytest.raises(KafkaException) as ei:
        a.alter_configs([res])[res].result(30)
    msg = str(ei.value)
    assert "lakestream.table.value.subject.name.strategy" in msg and "TopicNameStrategy" in msg, msg
    bad = unique_topic("tsubj-bad")
    fut = a.create_topics([NewTopic(bad, 1, 1, config={
        "lakestream.table.key.format": "schema-registry-latest",
        "lakestream.table.key.subject.name.strategy": "TopicRecordNameStrategy"})])[bad]
    with pytest.raises(KafkaException) as ei:
        fut.result(30)
    assert "lakestream.table.key.subject.name.strategy" in str(ei.value), str(ei.value)
