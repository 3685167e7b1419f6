"""Upsert tables keyed by named fields of a typed key (issue 15,
lakestream.table.primary.key): rows are one per value of the key fields,
whatever version of the key schema wrote the key — so a key schema that
evolves mid-stream (new bytes for the same key) still updates the same row.
Checked against a model after every round of random upserts and deletes,
with the helpers of the upsert model test (test_upsert_tables.py); the
fields are the table schema's identifier-field-ids. The Iceberg Java
library reads the same table in test_iceberg_java.py."""

import json
import random

import pytest
from confluent_kafka import KafkaException, SerializingProducer
from confluent_kafka.admin import AdminClient, NewTopic
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer

import iceberg_util
from kafka_util import unique_topic, wait_topic
from lsbroker import wait_until
from test_upsert_tables import PARTS, wait_caught_up

KEY_V1 = {"type": "record", "name": "AcctKey", "namespace": "bank",
          "fields": [{"name": "id", "type": "long"}, {"name": "region", "type": "string"}]}
KEY_V2 = {"type": "record", "name": "AcctKey", "namespace": "bank",
          "fields": [{"name": "id", "type": "long"}, {"name": "region", "type": "string"},
                     {"name": "shard", "type": ["null", "int"], "default": None}]}
VALUE = {"type": "record", "name": "Acct", "namespace": "bank",
         "fields": [{"name": "owner", "type": "string"}, {"name": "balance", "type": "long"}]}

PK = {"cleanup.policy": "compact",
      "lakestream.table.enabled": "true",
      "lakestream.table.commit.interval.ms": "1000",
      "lakestream.table.value.format": "schema-registry",
      "lakestream.table.key.format": "schema-registry",
      "lakestream.table.primary.key": "region,id"}


def pk_topic(b, prefix, parts=PARTS, **extra):
    topic = unique_topic(prefix)
    a = AdminClient({"bootstrap.servers": b.bootstrap})
    a.create_topics([NewTopic(topic, parts, 1, config=dict(PK, **extra))])[topic].result(30)
    wait_topic(b.bootstrap, topic, parts)
    return topic, iceberg_util.table_dir(b, topic)


def producer(b, key_schema):
    sr = SchemaRegistryClient({"url": b.registry_url})
    return SerializingProducer({
        "bootstrap.servers": b.bootstrap, "linger.ms": 5, "acks": "all",
        "key.serializer": AvroSerializer(sr, json.dumps(key_schema)),
        "value.serializer": AvroSerializer(sr, json.dumps(VALUE))})


def run_model(b, topic, tdir, rounds, per_round, seed, check=None):
    """Rounds of random upserts and deletes of (region, id) keys; from the
    middle on, keys are written with v2 of the key schema (other bytes, the
    same key fields). check(table, model) after every round; returns the
    last table version and the model {(region, id): (owner, balance)}."""
    rnd = random.Random(seed)
    model, last, errors = {}, {}, []

    def cb(err, msg):
        if err is not None:
            errors.append(err)
        else:
            last[msg.partition()] = max(last.get(msg.partition(), -1), msg.offset())
    p1, p2 = producer(b, KEY_V1), producer(b, KEY_V2)
    seq = 0
    t = None
    for rnd_no in range(rounds):
        v2 = rnd_no >= rounds // 2
        p = p2 if v2 else p1
        for _ in range(per_round):
            ident = (rnd.choice(["eu", "us"]), rnd.randrange(25))
            key = {"id": ident[1], "region": ident[0]}
            if v2:
                key["shard"] = rnd.choice([None, rnd.randrange(4)])
            if rnd.random() < 0.2:
                value = None
                model.pop(ident, None)
            else:
                value = {"owner": "o%d" % seq, "balance": seq}
                model[ident] = (value["owner"], value["balance"])
            seq += 1
            # one identity, one partition: its records keep their order
            part = (ident[1] * 2 + (ident[0] == "us")) % PARTS
            p.produce(topic, key=key, value=value, partition=part, on_delivery=cb)
        assert p.flush(30) == 0 and not errors, errors
        t = wait_caught_up(tdir, last)
        if check:
            check(t, model, rnd_no)
    return t, model


def table_state(t):
    state = {}
    for r in t.scan().to_arrow().to_pylist():
        k = r["_kafka_key_typed"]
        ident = (k["region"], k["id"])
        assert ident not in state, "key %r twice in the table" % (ident,)
        state[ident] = (r["owner"], r["balance"])
    return state


def test_primary_key_table_equals_the_model(broker_factory):
    iceberg_util.local_store_only()
    b = broker_factory("--compaction.min.age.ms=0", "--compaction.interval.ms=200")
    topic, tdir = pk_topic(b, "pk")

    def check(t, model, rnd_no):
        assert table_state(t) == model, "round %d: the table differs from the model" % rnd_no
    t, model = run_model(b, topic, tdir, rounds=6, per_round=120, seed=15, check=check)
    schema = t.schema()
    key = schema.find_field("_kafka_key_typed")
    assert key.required
    names = [schema.find_column_name(i) for i in schema.identifier_field_ids]
    assert names == ["_kafka_key_typed.region", "_kafka_key_typed.id"], names
    # v2 of the key evolved the key column; the identity stayed the fields'
    assert "shard" in [f.name for f in key.field_type.fields]
    assert "overwrite" in [s.summary.operation.value for s in t.metadata.snapshots]
    total = int(t.metadata.current_snapshot().summary["total-records"])
    assert total == len(model)


def test_merge_on_read_primary_key_table_equals_the_model(broker_factory):
    """upsert.strategy=merge-on-read on a typed key with a primary key (issue
    35): the position deletes name rows by the key fields' identity across
    two key-schema versions, and the table equals the model every round,
    with the maintenance folding and merging deletes meanwhile."""
    iceberg_util.local_store_only()
    b = broker_factory("--compaction.min.age.ms=0", "--compaction.interval.ms=200")
    topic, tdir = pk_topic(b, "pkmor", **{"lakestream.table.upsert.strategy": "merge-on-read",
                                          "lakestream.table.rewrite.min.files": "4"})

    def check(t, model, rnd_no):
        assert table_state(t) == model, "round %d: the table differs from the model" % rnd_no
    t, model = run_model(b, topic, tdir, rounds=6, per_round=120, seed=35, check=check)
    sums = [s.summary for s in t.metadata.snapshots]
    assert any(int(s.get("added-position-deletes") or 0) > 0 for s in sums)
    assert all(int(s.get("deleted-data-files") or 0) == 0
               for s in sums if s.operation.value == "overwrite")


def test_primary_key_refusals(broker_factory):
    """primary.key needs a typed key and an upsert table (refused naming the
    keys); a field the key schema does not have holds the table back with
    the field named."""
    iceberg_util.local_store_only()
    b = broker_factory("--compaction.min.age.ms=0", "--compaction.interval.ms=200")
    a = AdminClient({"bootstrap.servers": b.bootstrap})
    for extra, want in [
            ({"lakestream.table.key.format": "raw"}, "lakestream.table.key.format"),
            ({"cleanup.policy": "delete", "lakestream.table.write.mode": "append"},
             "lakestream.table.write.mode"),
            ({"lakestream.table.primary.key": "id,id"}, "field id is named twice")]:
        topic = unique_topic("pkbad")
        fut = a.create_topics([NewTopic(topic, 1, 1, config=dict(PK, **extra))])[topic]
        with pytest.raises(KafkaException) as ei:
            fut.result(30)
        msg = str(ei.value)
        assert "lakestream.table.primary.key" in msg and want in msg, msg
    topic, tdir = pk_topic(b, "pkmissing", parts=1,
                           **{"lakestream.table.primary.key": "region,account"})
    p = producer(b, KEY_V1)
    p.produce(topic, key={"id": 1, "region": "eu"}, value={"owner": "x", "balance": 1},
              partition=0)
    assert p.flush(30) == 0
    wait_until(lambda: "(key)/account: no such field in the key schema" in b.log_text(), 20,
               what="the missing primary key field named in the log")
    assert iceberg_util.current_metadata(tdir) is None
    # once <topic>-key is registered, a field it lacks is refused at the config edge
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource
    for fields, want in [("region,nope", "(key)/nope: no such field in the key schema"),
                         ("region,id", None)]:
        res = ConfigResource("TOPIC", topic, incremental_configs=[ConfigEntry(
            "lakestream.table.primary.key", fields, incremental_operation=AlterConfigOpType.SET)])
        fut = a.incremental_alter_configs([res])[res]
        if want is None:
            fut.result(30)
            continue
        with pytest.raises(KafkaException) as ei:
            fut.result(30)
        msg = str(ei.value)
        assert "lakestream.table.primary.key" in msg and want in msg, msg
    # with the fields fixed the table is created with its primary key and catches up
    t = wait_caught_up(tdir, {0: 0})
    assert [schema_name for schema_name in (
        t.schema().find_column_name(i) for i in t.schema().identifier_field_ids)] == [
        "_kafka_key_typed.region", "_kafka_key_typed.id"]


def test_cli_shows_key_policy_and_refuses_a_namespace_primary_key(broker):
    """`lakestream tables show` lists key.format, the subject strategies and
    primary.key with their layers; a primary key names one topic's key
    fields, so `tables namespace --set primary.key=...` is refused."""
    from test_table_policy import _cli
    topic, _ = pk_topic(broker, "pkcli", parts=1)
    rc, out, err = _cli("--bootstrap", broker.bootstrap, "show", topic)
    assert rc == 0, err
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines() if line.strip()}
    assert rows["lakestream.table.key.format"][:2] == ["schema-registry", "stream"], out
    assert rows["lakestream.table.primary.key"][:2] == ["region,id", "stream"], out
    assert rows["lakestream.table.key.subject.name.strategy"][:2] == [
        "TopicNameStrategy", "default"], out
    rc, out, err = _cli("namespace", "default", "--set", "primary.key=id",
                        "--data.dir=" + broker.data_dir)
    assert rc != 0 and "lakestream.table.primary.key names fields of one topic's key" in err, err


def test_primary_key_with_headerless_keys(broker_factory):
    """schema-registry-latest keys and values (no Confluent header) with a
    primary key: updates and a tombstone by key fields, the table = the model."""
    import io
    import fastavro
    from confluent_kafka import Producer
    from confluent_kafka.schema_registry import Schema

    def bare(schema, datum):
        out = io.BytesIO()
        fastavro.schemaless_writer(out, fastavro.parse_schema(schema), datum)
        return out.getvalue()
    iceberg_util.local_store_only()
    b = broker_factory("--compaction.min.age.ms=0", "--compaction.interval.ms=200")
    topic, tdir = pk_topic(b, "pklatest", parts=1, **{
        "lakestream.table.key.format": "schema-registry-latest",
        "lakestream.table.value.format": "schema-registry-latest",
        "lakestream.table.primary.key": "id"})
    sr = SchemaRegistryClient({"url": b.registry_url})
    sr.register_schema(topic + "-key", Schema(json.dumps(KEY_V1), "AVRO"))
    sr.register_schema(topic + "-value", Schema(json.dumps(VALUE), "AVRO"))
    p = Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 5})
    model, last = {}, {}
    ops = [(1, "a"), (2, "b"), (1, "c"), (3, None), (2, None), (4, "d"), (1, "e")]
    for n, (i, owner) in enumerate(ops):
        # the region differs between writes of one id: the key is the id alone
        key = bare(KEY_V1, {"id": i, "region": "r%d" % n})
        value = None if owner is None else bare(VALUE, {"owner": owner, "balance": n})
        if owner is None:
            model.pop(i, None)
        else:
            model[i] = owner
        p.produce(topic, key=key, value=value, partition=0,
                  on_delivery=lambda err, msg: last.__setitem__(0, msg.offset()))
    assert p.flush(30) == 0
    t = wait_caught_up(tdir, last)
    rows = t.scan().to_arrow().to_pylist()
    got = {r["_kafka_key_typed"]["id"]: r["owner"] for r in rows}
    assert len(got) == len(rows) and got == model, (got, model)
