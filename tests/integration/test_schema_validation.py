"""Produce-time schema validation (issue 14 §1): with
lakestream.value.schema.validation=true (and the same for keys) every non-null
value (key) must be in the schema registry's wire format, name a schema id the
built-in registry holds, and decode by that schema; otherwise the partition's
records are refused with INVALID_RECORD naming the record, and nothing of them
is written. Real clients: confluent-kafka's AvroSerializer against the
built-in registry; hand-framed JSON and Protobuf payloads."""

import json
import struct
import time
import urllib.request

import pytest
from confluent_kafka import KafkaError, Producer, SerializingProducer
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,
                                   NewTopic)
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.serialization import StringSerializer

from kafka_util import consume, unique_topic, wait_topic

pytestmark = pytest.mark.store_agnostic  # the S3 stage leaves it out (pytest.ini)


VALUE = "lakestream.value.schema.validation"
KEY = "lakestream.key.schema.validation"

USER = {"type": "record", "name": "User", "fields": [
    {"name": "id", "type": "long"},
    {"name": "name", "type": "string"},
    {"name": "tier", "type": {"type": "enum", "name": "Tier", "symbols": ["FREE", "PRO"]}},
    {"name": "email", "type": ["null", "string"], "default": None}]}


def register(url, subject, schema, schema_type=None):
    body = {"schema": schema if isinstance(schema, str) else json.dumps(schema)}
    if schema_type:
        body["schemaType"] = schema_type
    req = urllib.request.Request("%s/subjects/%s/versions" % (url, subject),
                                 data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/vnd.schemaregistry.v1+json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.load(r)["id"]


def framed(schema_id, payload):
    return b"\x00" + struct.pack(">I", schema_id) + payload


def make_topic(b, configs):
    topic = unique_topic("sv")
    a = AdminClient({"bootstrap.servers": b.bootstrap})
    a.create_topics([NewTopic(topic, 1, 1, config=configs)])[topic].result(30)
    wait_topic(b.bootstrap, topic, 1)
    return topic


def send(b, topic, records):
    """Produces (key, value) pairs to partition 0 in one batch; returns the
    delivery errors in order (None for delivered). The metadata is fetched
    first and linger.ms is long, so nothing leaves before flush() (which sends
    at once): a loaded machine cannot split the records into two batches."""
    p = Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 10000, "retries": 0,
                  "acks": "all"})
    p.list_topics(topic, timeout=10)
    out = [None] * len(records)

    def cb(i):
        def f(err, msg):
            out[i] = err
        return f
    for i, (k, v) in enumerate(records):
        p.produce(topic, key=k, value=v, partition=0, on_delivery=cb(i))
    assert p.flush(30) == 0
    return out


def wait_log(b, head, why):
    """The broker logged the refusal of `head` with `why` in its message (the
    message also goes to the client in ErrorMessage / RecordErrors, v8+)."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        if any(head in line and why in line for line in b.log_text().splitlines()):
            return True
        time.sleep(0.05)
    return False


def values_in(b, topic):
    return [m.value() for m in consume(b.bootstrap, topic, [0], timeout=10)[0]]


def test_avro_values_validated(broker):
    b = broker
    topic = make_topic(b, {VALUE: "true"})
    sr = SchemaRegistryClient({"url": b.registry_url})
    ser = AvroSerializer(sr, json.dumps(USER))
    p = SerializingProducer({"bootstrap.servers": b.bootstrap, "value.serializer": ser,
                             "key.serializer": StringSerializer()})
    errs = []
    for i in range(20):
        p.produce(topic, key="u%d" % i, partition=0,
                  value={"id": i, "name": "n%d" % i, "tier": "PRO" if i % 2 else "FREE",
                         "email": None if i % 3 else "u%d@x" % i},
                  on_delivery=lambda err, msg: errs.append(err))
    assert p.flush(30) == 0
    assert errs == [None] * 20
    good = values_in(b, topic)
    assert len(good) == 20
    schema_id = struct.unpack(">I", good[0][1:5])[0]

    # one bad record spoils its batch: nothing of the batch is written
    cases = [
        (b"plain text", "wire format"),
        (framed(schema_id + 1000, good[0][5:]), "not registered"),
        (good[0][:-1], "does not decode"),                       # truncated datum
        (good[0] + b"\x00", "left over"),                        # trailing byte
        (framed(schema_id, b"\x02\x02a\x04"), "enum index"),     # tier index 2 of 2
    ]
    for bad, why in cases:
        errs = send(b, topic, [(b"k", good[1]), (b"k", bad), (b"k", good[2])])
        assert all(e is not None and e.code() == KafkaError.INVALID_RECORD for e in errs), errs
        # librdkafka reports only the code; the broker's message names the record
        assert wait_log(b, "record 1 of %s-0: its value" % topic, why), why
    assert len(values_in(b, topic)) == 20, "a refused batch left records behind"

    # tombstones pass; and validation can be switched off
    assert send(b, topic, [(b"k", None)]) == [None]
    a = AdminClient({"bootstrap.servers": b.bootstrap})
    res = ConfigResource("topic", topic, incremental_configs=[
        ConfigEntry(VALUE, "false", incremental_operation=AlterConfigOpType.SET)])
    a.incremental_alter_configs([res])[res].result(30)
    assert send(b, topic, [(b"k", b"plain text")]) == [None]


def test_json_and_protobuf_values(broker):
    b = broker
    jtopic = make_topic(b, {VALUE: "true"})
    ptopic = make_topic(b, {VALUE: "true"})
    jid = register(b.registry_url, jtopic + "-value",
                   {"type": "object", "properties": {"a": {"type": "integer"}}}, "JSON")
    pid = register(b.registry_url, ptopic + "-value",
                   'syntax = "proto3"; message M { int64 a = 1; string s = 2; }', "PROTOBUF")
    jok = [framed(jid, b'{"a": 1}')]
    pok = [framed(pid, b"\x00" + b"\x08\x96\x01" + b"\x12\x02hi"),  # [0]; a=150, s="hi"
           framed(pid, b"\x02\x00" + b"\x08\x01")]                    # explicit [0]
    assert send(b, jtopic, [(None, v) for v in jok]) == [None]
    assert send(b, ptopic, [(None, v) for v in pok]) == [None, None]
    for topic, bad, why in [
            (jtopic, framed(jid, b'{"a": 1'), "not JSON"),
            (ptopic, framed(pid, b"\x00" + b"\x12\x05hi"), "runs past the end"),
            (ptopic, framed(pid, b"\x00" + b"\x0f"), "wire type 7"),
            # the descriptor: index [1] names no message; a = 1 sent as bytes;
            # a proto3 string that is not UTF-8
            (ptopic, framed(pid, b"\x02\x02" + b"\x08\x01"),
             "message index 1 at level 0 names no message"),
            (ptopic, framed(pid, b"\x00" + b"\x0a\x01x"), "field a (1) of M has wire type 2"),
            (ptopic, framed(pid, b"\x00" + b"\x12\x02\xc3\x28"),
             "string field s (2) of M is not UTF-8"),
            # each topic's subject (TopicNameStrategy): the other's id is refused
            (jtopic, pok[0], "is not a version of subject %s-value" % jtopic)]:
        errs = send(b, topic, [(None, bad)])
        assert errs[0] is not None and errs[0].code() == KafkaError.INVALID_RECORD
        assert wait_log(b, "record 0 of %s-0: its value" % topic, why), why
    assert values_in(b, jtopic) == jok
    assert values_in(b, ptopic) == pok


ORDER = {"type": "object", "title": "Order",
         "properties": {
             "id": {"type": "integer", "minimum": 1},
             "sku": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]+$", "maxLength": 12},
             "qty": {"type": "integer", "exclusiveMinimum": 0, "multipleOf": 2},
             "tags": {"type": "array", "items": {"enum": ["a", "b", "c"]},
                      "uniqueItems": True, "maxItems": 3},
             "ship": {"$ref": "#/definitions/addr"},
             "note": {"oneOf": [{"type": "string"}, {"type": "null"}]}},
         "required": ["id", "sku"],
         "additionalProperties": False,
         "definitions": {"addr": {"type": "object", "required": ["zip"],
                                  "properties": {"zip": {"type": "string", "minLength": 5}}}}}


def test_json_schema_content_validated(broker):
    """JSON values are validated against their schema's keywords, not only
    parsed: confluent-kafka's JSONSerializer writes the good ones, hand-framed
    payloads the bad ones; the verdicts are cross-checked against the Python
    jsonschema package (Draft 7)."""
    import jsonschema
    from confluent_kafka.schema_registry.json_schema import JSONSerializer
    b = broker
    topic = make_topic(b, {VALUE: "true"})
    sr = SchemaRegistryClient({"url": b.registry_url})
    ser = JSONSerializer(json.dumps(ORDER), sr)
    p = SerializingProducer({"bootstrap.servers": b.bootstrap, "value.serializer": ser})
    errs = []
    goods = [{"id": 1, "sku": "ABC-1"},
             {"id": 2, "sku": "XYZ-22", "qty": 4, "tags": ["a", "c"], "ship": {"zip": "12345"},
              "note": None},
             {"id": 3, "sku": "QQQ-9", "note": "fragile"}]
    for v in goods:
        p.produce(topic, value=v, partition=0, on_delivery=lambda err, msg: errs.append(err))
    assert p.flush(30) == 0
    assert errs == [None] * len(goods)
    written = values_in(b, topic)
    assert len(written) == len(goods)
    sid = struct.unpack(">I", written[0][1:5])[0]

    bads = [({"sku": "ABC-1"}, "/id: the property is required"),
             ({"id": 0, "sku": "ABC-1"}, "/id: 0 is less than minimum 1"),
             ({"id": 1, "sku": "abc-1"}, "/sku: the string does not match"),
             ({"id": 1, "sku": "ABC-123456789"}, "/sku: a string of 13 characters"),
             ({"id": 1, "sku": "ABC-1", "qty": 3}, "/qty: 3 is not a multiple of 2"),
             ({"id": 1, "sku": "ABC-1", "qty": 0}, "/qty: 0 is not greater than exclusiveMinimum"),
             ({"id": 1, "sku": "ABC-1", "tags": ["a", "a"]}, "/tags: items 0 and 1 are equal"),
             ({"id": 1, "sku": "ABC-1", "tags": ["d"]}, "/tags/0: the value is not one of"),
             ({"id": 1, "sku": "ABC-1", "ship": {"zip": "123"}}, "/ship/zip: a string of 3"),
             ({"id": 1, "sku": "ABC-1", "note": 5}, "/note: the value matches none"),
             ({"id": 1, "sku": "ABC-1", "extra": 1}, "\"extra\" is not allowed")]
    validator = jsonschema.Draft7Validator(ORDER)
    for v in goods:
        assert validator.is_valid(v)
    for bad, why in bads:
        assert not validator.is_valid(bad), bad
        # one bad record spoils its batch: nothing of the batch is written
        errs = send(b, topic, [(None, written[0]), (None, framed(sid, json.dumps(bad).encode()))])
        assert all(e is not None and e.code() == KafkaError.INVALID_RECORD for e in errs), errs
        assert wait_log(b, "record 1 of %s-0: its value" % topic, why), why
    assert values_in(b, topic) == written, "a refused batch left records behind"


EVENT = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
         "properties": {"at": {"type": "string", "format": "date-time"},
                        "mail": {"type": "string", "format": "email", "maxLength": 20},
                        "host": {"type": "string", "format": "ipv4"},
                        "ref": {"type": "string", "format": "uuid"}},
         "required": ["at", "mail"]}


def test_json_schema_format_is_an_annotation(broker):
    """"format" is not asserted at produce time (json_schema.h, ARCHITECTURE):
    confluent-kafka's JSONSerializer validates with the jsonschema package
    and no format checker, so values outside their formats are what a
    standard producer sends; the broker takes them, and still enforces the
    other keywords beside a format. A non-string "format" is an invalid
    schema (42201), as the meta-schemas type it."""
    from confluent_kafka.schema_registry import Schema
    from confluent_kafka.schema_registry.error import SchemaRegistryError
    from confluent_kafka.schema_registry.json_schema import JSONSerializer
    b = broker
    topic = make_topic(b, {VALUE: "true"})
    sr = SchemaRegistryClient({"url": b.registry_url})
    ser = JSONSerializer(json.dumps(EVENT), sr)
    p = SerializingProducer({"bootstrap.servers": b.bootstrap, "value.serializer": ser})
    vals = [{"at": "2024-05-01T10:00:00Z", "mail": "a@b.example", "host": "10.0.0.1",
             "ref": "0b7f4bde-3c47-4c1e-9d2c-53a1d0e7f0a1"},
            {"at": "yesterday", "mail": "no address", "host": "999.1.1.1", "ref": "nope"}]
    errs = []
    for v in vals:
        p.produce(topic, value=v, partition=0, on_delivery=lambda err, msg: errs.append(err))
    assert p.flush(30) == 0
    assert errs == [None, None]
    written = values_in(b, topic)
    assert [json.loads(w[5:]) for w in written] == vals
    sid = struct.unpack(">I", written[0][1:5])[0]
    long_mail = {"at": "x", "mail": "m" * 21}
    errs = send(b, topic, [(None, framed(sid, json.dumps(long_mail).encode()))])
    assert errs[0] is not None and errs[0].code() == KafkaError.INVALID_RECORD, errs
    assert wait_log(b, "record 0 of %s-0: its value" % topic, "/mail: a string of 21")
    with pytest.raises(SchemaRegistryError) as e:
        sr.register_schema(topic + "-bad", Schema(json.dumps({"type": "string", "format": 5}),
                                                  "JSON"))
    assert e.value.error_code == 42201
    assert '"format" must be a string' in e.value.error_message


def _proto_classes():
    """Message classes of a proto3 file built in memory (no protoc here):
    shop.Order (with nested Order.Line) and shop.Other."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    F = descriptor_pb2.FieldDescriptorProto
    fdp = descriptor_pb2.FileDescriptorProto(name="sv_order.proto", package="shop",
                                             syntax="proto3")
    m = fdp.message_type.add(name="Order")
    m.field.add(name="id", number=1, type=F.TYPE_INT64, label=F.LABEL_OPTIONAL)
    m.field.add(name="sku", number=2, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    m.field.add(name="qty", number=3, type=F.TYPE_INT32, label=F.LABEL_REPEATED)
    m.nested_type.add(name="Line").field.add(name="n", number=1, type=F.TYPE_DOUBLE,
                                             label=F.LABEL_OPTIONAL)
    m.field.add(name="line", number=4, type=F.TYPE_MESSAGE, type_name=".shop.Order.Line",
                label=F.LABEL_OPTIONAL)
    fdp.message_type.add(name="Other").field.add(name="b", number=1, type=F.TYPE_BYTES,
                                                 label=F.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    f = pool.FindFileByName("sv_order.proto")
    order = f.message_types_by_name["Order"]
    return (message_factory.GetMessageClass(order),
            message_factory.GetMessageClass(order.nested_types_by_name["Line"]),
            message_factory.GetMessageClass(f.message_types_by_name["Other"]))


def test_protobuf_serializer_values(broker):
    """confluent-kafka's ProtobufSerializer (message indexes [0], [0, 0], [1])
    passes the descriptor check; the same bytes under another message's
    index do not."""
    b = broker
    Order, Line, Other = _proto_classes()
    topic = make_topic(b, {VALUE: "true"})
    sr = SchemaRegistryClient({"url": b.registry_url})
    sent = []
    for cls, v in [(Order, Order(id=5, sku="\u00e9t\u00e9", qty=[1, 2, 300],
                                 line=Line(n=2.5))),
                   (Line, Line(n=-1.0)), (Other, Other(b=b"\xff\x00"))]:
        ser = ProtobufSerializer(cls, sr, {"use.deprecated.format": False})
        p = SerializingProducer({"bootstrap.servers": b.bootstrap, "value.serializer": ser})
        errs = []
        p.produce(topic, value=v, partition=0, on_delivery=lambda err, msg: errs.append(err))
        assert p.flush(30) == 0
        assert errs == [None], errs
    written = values_in(b, topic)
    assert len(written) == 3
    # Order's bytes (index [0] is the single byte 0) framed as Other ([1]):
    # Other.b (1) is bytes, Order.id (1) a varint
    sid = struct.unpack(">I", written[0][1:5])[0]
    bad = framed(sid, b"\x02\x02" + written[0][6:])
    errs = send(b, topic, [(None, bad)])
    assert errs[0] is not None and errs[0].code() == KafkaError.INVALID_RECORD
    assert wait_log(b, "record 0 of %s-0: its value" % topic,
                    "field b (1) of shop.Other has wire type 0"), "refusal not logged"
    assert values_in(b, topic) == written


def test_subject_name_strategy_checked(broker):
    """As Confluent's broker-side validation: the id must be a version of the
    subject the topic's subject name strategy names (TopicNameStrategy by
    default; lakestream.table.value.subject.name.strategy chooses another)."""
    b = broker
    topic = make_topic(b, {VALUE: "true"})
    own = register(b.registry_url, topic + "-value", USER)
    other_schema = {"type": "record", "name": "Other", "namespace": "t.sv",
                    "fields": [{"name": "n", "type": "long"}]}
    other = register(b.registry_url, "unrelated-%s-value" % topic, other_schema)
    user = framed(own, b"\x02\x02a\x00\x00")            # id 1, "a", FREE, null
    stranger = framed(other, b"\x04")                      # n = 2
    assert send(b, topic, [(b"k", user)]) == [None]
    errs = send(b, topic, [(b"k", user), (b"k", stranger)])
    assert all(e is not None and e.code() == KafkaError.INVALID_RECORD for e in errs), errs
    assert wait_log(b, "record 1 of %s-0: its value" % topic,
                    "is not a version of subject %s-value" % topic)
    # RecordNameStrategy: the subject is the record's full name
    a = AdminClient({"bootstrap.servers": b.bootstrap})
    strategy = "lakestream.table.value.subject.name.strategy"
    res = ConfigResource("topic", topic, incremental_configs=[
        ConfigEntry(strategy, "RecordNameStrategy", incremental_operation=AlterConfigOpType.SET)])
    a.incremental_alter_configs([res])[res].result(30)
    register(b.registry_url, "t.sv.Other", other_schema)
    assert send(b, topic, [(b"k", stranger)]) == [None]
    errs = send(b, topic, [(b"k", user)])
    assert errs[0] is not None and errs[0].code() == KafkaError.INVALID_RECORD
    assert wait_log(b, "record 0 of %s-0: its value" % topic, strategy + "=RecordNameStrategy")
    assert len(values_in(b, topic)) == 2


def test_keys_validated(broker):
    b = broker
    topic = make_topic(b, {KEY: "true"})
    kid = register(b.registry_url, topic + "-key", {"type": "string"})
    key = framed(kid, b"\x06abc")
    assert send(b, topic, [(key, b"anything"), (None, b"null keys pass")]) == [None, None]
    errs = send(b, topic, [(b"abc", b"v")])
    assert errs[0].code() == KafkaError.INVALID_RECORD
    assert wait_log(b, "record 0 of %s-0: its key" % topic, KEY)
    # DescribeConfigs shows both settings
    a = AdminClient({"bootstrap.servers": b.bootstrap})
    res = ConfigResource("topic", topic)
    cfg = a.describe_configs([res])[res].result(30)
    assert cfg[KEY].value == "true" and cfg[VALUE].value == "false"


def test_unknown_lakestream_configs_are_refused(broker):
    a = AdminClient({"bootstrap.servers": broker.bootstrap})
    for name, value in [("lakestream.value.schema.validaton", "true"),
                        (VALUE, "yes")]:
        topic = unique_topic("svbad")
        fs = a.create_topics([NewTopic(topic, 1, 1, config={name: value})])
        with pytest.raises(Exception) as e:
            fs[topic].result(30)
        assert name in str(e.value)
