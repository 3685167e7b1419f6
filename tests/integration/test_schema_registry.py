"""The built-in schema registry (schema.registry.listen), black-box.

What is shown: confluent-kafka's SchemaRegistryClient with AvroSerializer /
AvroDeserializer and JSONSerializer / JSONDeserializer work unmodified
against it (register, produce through our broker, consume, deserialize); the registry's behaviour on a table of cases
(register, duplicate, incompatible per compatibility level, soft and
permanent deletes, references, configuration, modes, error bodies) is what
the Confluent Schema Registry documents; on a 3-broker etcd cluster every
broker serves one registry and registrations racing through all three never
hand out one id twice.
"""
import base64
import json
import os
import threading
from urllib.parse import quote

import pytest
import requests
from confluent_kafka import DeserializingConsumer, SerializingProducer
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.serialization import StringDeserializer, StringSerializer

import lsbroker
from kafka_util import create_topic, unique_topic

pytestmark = pytest.mark.store_agnostic  # the S3 stage leaves it out (pytest.ini)


CT = "application/vnd.schemaregistry.v1+json"


def rec(name, *fields):
    return json.dumps({"type": "record", "name": name, "namespace": "lake",
                       "fields": [dict(f) for f in fields]})


def field(name, typ, **kw):
    return dict(name=name, type=typ, **kw)


@pytest.fixture
def registry(broker):
    if broker.external:
        pytest.fail("the schema registry tests need a broker of ours", pytrace=False)
    return broker.registry_url


class Api:
    """A thin REST client that returns (status, json body) for every call."""

    def __init__(self, url):
        self.url = url
        self.s = requests.Session()
        self.s.headers["Content-Type"] = CT

    def call(self, method, path, body=None, **params):
        r = self.s.request(method, self.url + path, params=params or None,
                           data=json.dumps(body) if body is not None else None, timeout=10)
        assert r.headers["Content-Type"].startswith(CT), r.headers
        return r.status_code, r.json()

    def register(self, subject, schema, **kw):
        return self.call("POST", "/subjects/%s/versions" % quote(subject, safe=""),
                         dict(schema=schema, **kw))


def test_confluent_avro_serializer_round_trip(broker, registry):
    topic = unique_topic("avro")
    create_topic(broker.bootstrap, topic)
    sr = SchemaRegistryClient({"url": registry})
    schema = rec("User", field("name", "string"), field("age", "int"),
                 field("email", ["null", "string"], default=None),
                 field("ts", {"type": "long", "logicalType": "timestamp-millis"}))
    p = SerializingProducer({"bootstrap.servers": broker.bootstrap,
                             "key.serializer": StringSerializer(),
                             "value.serializer": AvroSerializer(sr, schema)})
    users = [{"name": "u%d" % i, "age": i, "email": None if i % 2 else "u%d@x" % i,
              "ts": 1700000000000 + i} for i in range(20)]
    for u in users:
        p.produce(topic, key=u["name"], value=u)
    assert p.flush(30) == 0

    # the serializer registered the schema under the topic's value subject
    assert sr.get_subjects() == [topic + "-value"]
    latest = sr.get_latest_version(topic + "-value")
    assert latest.version == 1 and latest.schema_id >= 1

    c = DeserializingConsumer({"bootstrap.servers": broker.bootstrap, "group.id": topic,
                               "auto.offset.reset": "earliest",
                               "key.deserializer": StringDeserializer(),
                               # a fresh client: the schema comes from the registry by id
                               "value.deserializer": AvroDeserializer(
                                   SchemaRegistryClient({"url": registry}))})
    c.subscribe([topic])
    got = []
    try:
        while len(got) < len(users):
            m = c.poll(10)
            assert m is not None, "consumed %d of %d" % (len(got), len(users))
            assert m.error() is None, m.error()
            assert m.value()["ts"] is not None
            v = dict(m.value())
            v["ts"] = int(v["ts"].timestamp() * 1000)  # timestamp-millis decodes as datetime
            got.append(v)
    finally:
        c.close()
    assert got == users
    # the wire format names the registered id
    raw = _first_raw_value(broker.bootstrap, topic)
    assert raw[0] == 0 and int.from_bytes(raw[1:5], "big") == latest.schema_id


def test_confluent_json_serializer_round_trip(broker, registry):
    topic = unique_topic("json")
    create_topic(broker.bootstrap, topic)
    sr = SchemaRegistryClient({"url": registry})
    v1 = json.dumps({"$schema": "http://json-schema.org/draft-07/schema#", "title": "Order",
                     "type": "object", "additionalProperties": False,
                     "properties": {"id": {"type": "integer"}, "item": {"type": "string"}},
                     "required": ["id"]})
    to_dict = lambda o, ctx: o  # noqa: E731
    p = SerializingProducer({"bootstrap.servers": broker.bootstrap,
                             "value.serializer": JSONSerializer(v1, sr, to_dict=to_dict)})
    orders = [{"id": i, "item": "thing-%d" % i} for i in range(10)]
    for o in orders:
        p.produce(topic, value=o)
    assert p.flush(30) == 0
    latest = sr.get_latest_version(topic + "-value")
    assert latest.schema.schema_type == "JSON"

    # a closed content model takes an optional property (BACKWARD), not a required one
    v2 = json.loads(v1)
    v2["properties"]["qty"] = {"type": "integer"}
    assert sr.test_compatibility(topic + "-value", Schema(json.dumps(v2), "JSON"))
    v2["required"] = ["id", "qty"]
    with pytest.raises(SchemaRegistryError) as e:
        sr.register_schema(topic + "-value", Schema(json.dumps(v2), "JSON"))
    assert e.value.error_code == 409
    assert "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL" in e.value.error_message

    c = DeserializingConsumer({"bootstrap.servers": broker.bootstrap, "group.id": topic,
                               "auto.offset.reset": "earliest",
                               "value.deserializer": JSONDeserializer(
                                   None, schema_registry_client=SchemaRegistryClient(
                                       {"url": registry}))})
    c.subscribe([topic])
    got = []
    try:
        while len(got) < len(orders):
            m = c.poll(10)
            assert m is not None and m.error() is None
            got.append(m.value())
    finally:
        c.close()
    assert got == orders


def _order_class():
    """A Protobuf message class built at run time (what protoc would generate):
    a nested message, a map, a oneof, an enum, a proto3 optional, a
    well-known Timestamp import."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    from google.protobuf import timestamp_pb2
    f = descriptor_pb2.FieldDescriptorProto
    fdp = descriptor_pb2.FileDescriptorProto(name="lake/order.proto", package="lake.shop",
                                             syntax="proto3",
                                             dependency=["google/protobuf/timestamp.proto"])
    m = fdp.message_type.add(name="Order")
    line = m.nested_type.add(name="Line")
    line.field.add(name="sku", number=1, type=f.TYPE_STRING, label=f.LABEL_OPTIONAL)
    line.field.add(name="qty", number=2, type=f.TYPE_INT32, label=f.LABEL_OPTIONAL)
    entry = m.nested_type.add(name="TagsEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, type=f.TYPE_STRING, label=f.LABEL_OPTIONAL)
    entry.field.add(name="value", number=2, type=f.TYPE_STRING, label=f.LABEL_OPTIONAL)
    st = m.enum_type.add(name="Status")
    st.value.add(name="NEW", number=0)
    st.value.add(name="PAID", number=1)
    m.oneof_decl.add(name="payment")
    m.oneof_decl.add(name="_note")
    m.field.add(name="id", number=1, type=f.TYPE_INT64, label=f.LABEL_OPTIONAL)
    m.field.add(name="lines", number=2, type=f.TYPE_MESSAGE, type_name=".lake.shop.Order.Line",
                label=f.LABEL_REPEATED)
    m.field.add(name="tags", number=3, type=f.TYPE_MESSAGE,
                type_name=".lake.shop.Order.TagsEntry", label=f.LABEL_REPEATED)
    m.field.add(name="status", number=4, type=f.TYPE_ENUM, type_name=".lake.shop.Order.Status",
                label=f.LABEL_OPTIONAL)
    m.field.add(name="card", number=5, type=f.TYPE_STRING, label=f.LABEL_OPTIONAL,
                oneof_index=0)
    m.field.add(name="token", number=6, type=f.TYPE_BYTES, label=f.LABEL_OPTIONAL,
                oneof_index=0)
    m.field.add(name="note", number=7, type=f.TYPE_STRING, label=f.LABEL_OPTIONAL,
                oneof_index=1, proto3_optional=True)
    m.field.add(name="created", number=8, type=f.TYPE_MESSAGE,
                type_name=".google.protobuf.Timestamp", label=f.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(timestamp_pb2.DESCRIPTOR.serialized_pb)
    pool.Add(fdp)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("lake.shop.Order"))


def test_confluent_protobuf_serializer_round_trip(broker, registry):
    from confluent_kafka.schema_registry.protobuf import (ProtobufDeserializer,
                                                          ProtobufSerializer)
    Order = _order_class()
    topic = unique_topic("proto")
    create_topic(broker.bootstrap, topic)
    sr = SchemaRegistryClient({"url": registry})
    p = SerializingProducer({"bootstrap.servers": broker.bootstrap,
                             "value.serializer": ProtobufSerializer(Order, sr)})
    orders = []
    for i in range(6):
        o = Order(id=i, status=i % 2, tags={"k": "v%d" % i})
        o.lines.add(sku="s%d" % i, qty=i + 1)
        if i % 2:
            o.card = "c%d" % i
        else:
            o.token = b"t%d" % i
            o.note = "n%d" % i
        o.created.seconds = 1700000000 + i
        orders.append(o)
        p.produce(topic, value=o)
    assert p.flush(30) == 0
    # the serializer sent a binary descriptor: it is stored as .proto text
    latest = sr.get_latest_version(topic + "-value")
    assert latest.schema.schema_type == "PROTOBUF"
    assert "message Order" in latest.schema.schema_str
    assert "map<string, string> tags = 3;" in latest.schema.schema_str

    c = DeserializingConsumer({"bootstrap.servers": broker.bootstrap, "group.id": topic,
                               "auto.offset.reset": "earliest",
                               "value.deserializer": ProtobufDeserializer(
                                   Order, {}, SchemaRegistryClient({"url": registry}))})
    c.subscribe([topic])
    got = []
    try:
        while len(got) < len(orders):
            m = c.poll(10)
            assert m is not None and m.error() is None, m and m.error()
            got.append(m.value())
    finally:
        c.close()
    assert [g.SerializeToString(deterministic=True) for g in got] == \
        [o.SerializeToString(deterministic=True) for o in orders]


def _first_raw_value(bootstrap, topic):
    from confluent_kafka import Consumer
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": topic + "-raw",
                  "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    try:
        while True:
            m = c.poll(10)
            assert m is not None and m.error() is None
            return m.value()
    finally:
        c.close()


def test_client_compatibility_errors_carry_registry_codes(registry):
    sr = SchemaRegistryClient({"url": registry})
    s = "client-compat"
    v1 = rec("R", field("a", "int"))
    id1 = sr.register_schema(s, Schema(v1, "AVRO"))
    assert sr.register_schema(s, Schema(v1, "AVRO")) == id1  # duplicate: same id
    with pytest.raises(SchemaRegistryError) as e:
        sr.register_schema(s, Schema(rec("R", field("a", "int"), field("b", "string")), "AVRO"))
    assert e.value.http_status_code == 409 and e.value.error_code == 409
    assert not sr.test_compatibility(s, Schema(rec("R", field("a", "string")), "AVRO"))
    assert sr.test_compatibility(s, Schema(rec("R", field("a", "long")), "AVRO"))
    assert sr.set_compatibility(s, "FULL")["compatibility"] == "FULL"
    assert not sr.test_compatibility(s, Schema(rec("R", field("a", "long")), "AVRO"))
    with pytest.raises(SchemaRegistryError) as e:
        sr.get_version(s, 7)
    assert e.value.error_code == 40402
    with pytest.raises(SchemaRegistryError) as e:
        sr.get_schema(99999)
    assert e.value.error_code == 40403
    with pytest.raises(SchemaRegistryError) as e:
        sr.register_schema(s, Schema('{"type": "strin"}', "AVRO"))
    assert e.value.error_code == 42201
    assert sr.delete_subject(s) == [1]
    assert sr.delete_subject(s, permanent=True) == [1]
    assert sr.get_subjects() == []


# (level, versions already registered (in order), candidate, accepted?)
A_INT = rec("R", field("a", "int"))
A_LONG = rec("R", field("a", "long"))
A_STR = rec("R", field("a", "string"))
A_INT_B_DEF = rec("R", field("a", "int"), field("b", "string", default="x"))
A_INT_B = rec("R", field("a", "int"), field("b", "string"))
EMPTY = rec("R")
A_DEF = rec("R", field("a", "int", default=0))
P_V1 = 'syntax = "proto3";\npackage lake;\nmessage Event { int32 n = 1; }\n'
J_OPEN = json.dumps({"type": "object", "properties": {"a": {"type": "string"}}})
J_OPEN_B = json.dumps({"type": "object", "properties": {"a": {"type": "string"},
                                                         "b": {"type": "string"}}})
LEVEL_CASES = [
    ("NONE", [A_INT], A_STR, True),
    ("BACKWARD", [A_INT], A_INT_B_DEF, True),
    ("BACKWARD", [A_INT], A_INT_B, False),
    ("BACKWARD", [A_INT], A_LONG, True),
    ("BACKWARD", [A_LONG], A_INT, False),
    ("BACKWARD", [A_STR, EMPTY], A_DEF, True),
    ("BACKWARD_TRANSITIVE", [A_STR, EMPTY], A_DEF, False),
    ("FORWARD", [A_INT], A_INT_B, True),
    ("FORWARD", [A_INT_B], A_INT, False),
    ("FORWARD", [A_INT], A_LONG, False),
    ("FORWARD_TRANSITIVE", [A_INT_B, A_INT_B_DEF], A_INT, False),
    ("FORWARD", [A_INT_B, A_INT_B_DEF], A_INT, True),
    ("FULL", [A_INT], A_INT_B_DEF, True),
    ("FULL", [A_INT], A_LONG, False),
    ("FULL", [A_STR, EMPTY], A_DEF, True),
    ("FULL_TRANSITIVE", [A_STR, EMPTY], A_DEF, False),
]


def test_compatibility_levels_table(registry):
    api = Api(registry)
    for i, (level, versions, cand, ok) in enumerate(LEVEL_CASES):
        s = "levels-%d" % i
        assert api.call("PUT", "/config/" + s, {"compatibility": "NONE"}) == \
            (200, {"compatibility": "NONE"})
        for v in versions:
            assert api.register(s, v)[0] == 200
        assert api.call("PUT", "/config/" + s, {"compatibility": level})[0] == 200
        st, body = api.call("POST", "/compatibility/subjects/%s/versions" % s, {"schema": cand},
                            verbose="true")
        assert st == 200 and body["is_compatible"] is ok, (level, i, body)
        st, body = api.register(s, cand)
        if ok:
            assert st == 200 and "id" in body, (level, i, body)
        else:
            assert (st, body["error_code"]) == (409, 409), (level, i, body)


def test_registry_behaviour_table(registry):
    """Each row: a call and the documented answer (status, body or error_code)."""
    api = Api(registry)
    addr = rec("Address", field("city", "string"))
    user = json.dumps({"type": "record", "name": "User", "namespace": "lake",
                       "fields": [{"name": "home", "type": "lake.Address"}]})
    ref = [{"name": "lake.Address", "subject": "addr", "version": 1}]
    rows = [
        # register, duplicate (same id, also spaced and ordered differently), new version
        (("POST", "/subjects/s/versions", {"schema": A_INT}), 200, {"id": 1}),
        (("POST", "/subjects/s/versions", {"schema": json.dumps(json.loads(A_INT), indent=2)}),
         200, {"id": 1}),
        (("POST", "/subjects/s/versions", {"schema": A_INT_B_DEF}), 200, {"id": 2}),
        (("POST", "/subjects/other/versions", {"schema": A_INT}), 200, {"id": 1}),
        # fields that ask for nothing are taken (newer clients send defaults)
        (("POST", "/subjects/other/versions", {"schema": A_INT, "metadata": {},
                                               "propagateSchemaTags": False}), 200, {"id": 1}),
        (("GET", "/subjects", None), 200, ["other", "s"]),
        (("GET", "/subjects", None, {"subjectPrefix": "o"}), 200, ["other"]),
        (("GET", "/subjects/s/versions", None), 200, [1, 2]),
        (("GET", "/subjects/s/versions/latest", None), 200,
         {"subject": "s", "version": 2, "id": 2, "schema": A_INT_B_DEF}),
        (("GET", "/subjects/s/versions/1/schema", None), 200, json.loads(A_INT)),
        (("GET", "/schemas/ids/1", None), 200, {"schema": A_INT}),
        (("GET", "/schemas/ids/1/subjects", None), 200, ["other", "s"]),
        (("GET", "/schemas/ids/1/versions", None), 200,
         [{"subject": "other", "version": 1}, {"subject": "s", "version": 1}]),
        (("GET", "/schemas/types", None), 200, ["AVRO", "JSON", "PROTOBUF"]),
        (("POST", "/subjects/s", {"schema": A_INT}), 200,
         {"subject": "s", "version": 1, "id": 1, "schema": A_INT}),
        # errors
        (("POST", "/subjects/s", {"schema": A_STR}), 404, 40403),
        (("POST", "/subjects/nope", {"schema": A_STR}), 404, 40401),
        (("GET", "/subjects/nope/versions", None), 404, 40401),
        (("GET", "/subjects/s/versions/9", None), 404, 40402),
        (("GET", "/subjects/s/versions/zero", None), 422, 42202),
        (("GET", "/schemas/ids/77", None), 404, 40403),
        (("POST", "/subjects/s/versions", {"schema": A_STR}), 409, 409),
        (("POST", "/subjects/s/versions", {"schema": "{\"type\":\"record\"}"}), 422, 42201),
        (("POST", "/subjects/s/versions", {"schema": "message M { X x = 1; }",
                                           "schemaType": "PROTOBUF"}), 422, 42201),
        (("POST", "/subjects/s/versions", {"schema": A_INT, "ruleSet": {"domainRules": []}}),
         422, 42201),
        # regression (fuzz_registry): a malformed ?normalize= on a registration crashed
        (("POST", "/subjects/s/versions", {"schema": A_INT}, {"normalize": "maybe"}), 400, 400),
        (("PUT", "/config", {"compatibility": "SIDEWAYS"}), 422, 42203),
        (("PUT", "/mode", {"mode": "IMPORT"}), 422, 42204),
        (("GET", "/config/s", None), 404, 40408),
        (("GET", "/config/s", None, {"defaultToGlobal": "true"}), 200,
         {"compatibilityLevel": "BACKWARD"}),
        # soft delete, then permanent (only after soft)
        (("DELETE", "/subjects/s/versions/1", None, {"permanent": "true"}), 404, 40407),
        (("DELETE", "/subjects/s/versions/1", None), 200, 1),
        (("DELETE", "/subjects/s/versions/1", None), 404, 40406),
        (("GET", "/subjects/s/versions", None), 200, [2]),
        (("GET", "/subjects/s/versions", None, {"deleted": "true"}), 200, [1, 2]),
        (("GET", "/schemas/ids/1/versions", None, {"deleted": "true"}), 200,
         [{"subject": "other", "version": 1}, {"subject": "s", "version": 1}]),
        (("DELETE", "/subjects/s", None, {"permanent": "true"}), 404, 40405),
        (("DELETE", "/subjects/s", None), 200, [2]),
        (("DELETE", "/subjects/s", None), 404, 40404),
        (("GET", "/subjects", None), 200, ["other"]),
        (("GET", "/subjects", None, {"deleted": "true"}), 200, ["other", "s"]),
        (("GET", "/schemas/ids/2", None), 200, {"schema": A_INT_B_DEF}),  # soft: still served
        (("DELETE", "/subjects/s", None, {"permanent": "true"}), 200, [1, 2]),
        (("GET", "/schemas/ids/2", None), 404, 40403),
        (("GET", "/subjects", None, {"deleted": "true"}), 200, ["other"]),
        # ids are never reused: a new schema gets a new id, the same schema its old one
        (("POST", "/subjects/s/versions", {"schema": A_STR}), 200, {"id": 3}),
        (("GET", "/subjects/s/versions", None), 200, [1]),
        # references
        (("POST", "/subjects/addr/versions", {"schema": addr}), 200, {"id": 4}),
        (("POST", "/subjects/user/versions", {"schema": user}), 422, 42201),
        (("POST", "/subjects/user/versions", {"schema": user, "references": ref}), 200,
         {"id": 5}),
        (("GET", "/subjects/user/versions/1", None), 200,
         {"subject": "user", "version": 1, "id": 5, "references": ref, "schema": user}),
        (("GET", "/subjects/addr/versions/1/referencedby", None), 200, [5]),
        (("DELETE", "/subjects/addr/versions/1", None), 422, 42206),
        (("DELETE", "/subjects/addr", None), 422, 42206),
        (("DELETE", "/subjects/user", None), 200, [1]),
        (("DELETE", "/subjects/addr", None), 200, [1]),
        # JSON Schema: its own rules; a JSON schema cannot follow an Avro one
        (("POST", "/subjects/j/versions", {"schema": J_OPEN, "schemaType": "JSON"}), 200,
         {"id": 6}),
        (("GET", "/subjects/j/versions/1", None), 200,
         {"subject": "j", "version": 1, "id": 6, "schemaType": "JSON", "schema": J_OPEN}),
        (("POST", "/subjects/j/versions", {"schema": J_OPEN_B, "schemaType": "JSON"}), 409, 409),
        (("POST", "/subjects/j/versions", {"schema": "{\"type\": 5}", "schemaType": "JSON"}),
         422, 42201),
        (("POST", "/subjects/other/versions", {"schema": J_OPEN, "schemaType": "JSON"}), 409,
         409),
        # Protobuf: .proto text, its own rules
        (("POST", "/subjects/p/versions", {"schema": P_V1, "schemaType": "PROTOBUF"}), 200,
         {"id": 7}),
        (("POST", "/subjects/p/versions", {"schema": P_V1.replace("int32 n", "sint32 n"),
                                           "schemaType": "PROTOBUF"}), 409, 409),
        (("POST", "/subjects/p/versions", {"schema": P_V1.replace("}", "string s = 2; }"),
                                           "schemaType": "PROTOBUF"}), 200, {"id": 8}),
        (("GET", "/schemas/ids/7", None), 200, {"schemaType": "PROTOBUF", "schema": P_V1}),
        (("GET", "/schemas/ids/1", None, {"format": "serialized"}), 400, 400),  # Avro
        (("GET", "/schemas/ids/7", None, {"format": "resolved"}), 400, 400),
        # modes: READONLY refuses writes with 42205
        (("PUT", "/mode/other", {"mode": "READONLY"}), 200, {"mode": "READONLY"}),
        (("POST", "/subjects/other/versions", {"schema": A_INT_B_DEF}), 422, 42205),
        (("DELETE", "/mode/other", None), 200, {"mode": "READONLY"}),
        (("GET", "/mode", None), 200, {"mode": "READWRITE"}),
        (("PUT", "/config", {"compatibility": "FULL"}), 200, {"compatibility": "FULL"}),
        (("GET", "/config", None), 200, {"compatibilityLevel": "FULL"}),
        (("DELETE", "/config", None), 200, {"compatibilityLevel": "FULL"}),
        (("GET", "/config", None), 200, {"compatibilityLevel": "BACKWARD"}),
        # unknown paths and methods
        (("GET", "/nothing", None), 404, 404),
        (("PUT", "/subjects", None), 405, 405),
    ]
    for i, row in enumerate(rows):
        (method, path, body, *params), want_status, want = row
        st, got = api.call(method, path, body, **(params[0] if params else {}))
        where = "row %d: %s %s -> %s %s" % (i, method, path, st, got)
        assert st == want_status, where
        if isinstance(want, int) and st >= 400:
            assert got["error_code"] == want and got["message"], where
        else:
            assert got == want, where


PROTO_DIR = os.path.join(lsbroker.ROOT, "tests", "integration", "js", "node_modules", "protobufjs")


def test_protobuf_real_world_files_with_imports(registry):
    """The .proto files protobufjs ships (Google's descriptor, type, api, http and
    annotations files: proto2 and proto3, options, extensions, extend, maps,
    oneofs), registered in import order, each import a schema reference."""
    api = Api(registry)
    files = [  # (import path, its imports that are references)
        ("google/protobuf/descriptor.proto", []),
        ("google/protobuf/source_context.proto", []),
        ("google/protobuf/type.proto", ["google/protobuf/source_context.proto"]),
        ("google/protobuf/api.proto", ["google/protobuf/source_context.proto",
                                       "google/protobuf/type.proto"]),
        ("google/api/http.proto", []),
        ("google/api/annotations.proto", ["google/api/http.proto",
                                          "google/protobuf/descriptor.proto"]),
    ]
    for path, imports in files:
        with open(os.path.join(PROTO_DIR, path)) as f:
            text = f.read()
        refs = [{"name": i, "subject": i, "version": 1} for i in imports]
        st, body = api.register(path, text, schemaType="PROTOBUF", references=refs)
        assert st == 200, (path, body)
        # the same text again is the same schema
        assert api.register(path, text, schemaType="PROTOBUF", references=refs) == (st, body)
    # a field's type changed across wire groups in a real file: refused
    with open(os.path.join(PROTO_DIR, "google/protobuf/source_context.proto")) as f:
        text = f.read()
    assert "string file_name = 1;" in text
    st, body = api.register("google/protobuf/source_context.proto",
                            text.replace("string file_name = 1;", "int64 file_name = 1;"),
                            schemaType="PROTOBUF")
    assert (st, body["error_code"]) == (409, 409), body


def test_registry_is_shared_by_a_cluster_and_ids_never_collide(cluster):
    nodes = [cluster.add("--broker.session.timeout.ms=2000", "--compaction.enabled=false",
                         "--http.listen=") for _ in range(3)]
    apis = [Api(b.registry_url) for b in nodes]
    for a in apis:
        assert a.call("PUT", "/config", {"compatibility": "NONE"})[0] == 200
    results = {}

    def run(k):
        # 15 schemas of this node's own and 15 shared by all three, through its broker
        out = []
        for i in range(15):
            own = rec("Own%d_%d" % (k, i), field("a", "int"))
            shared = rec("Shared%d" % i, field("a", "int"))
            out.append(("own", k, i, apis[k].register("s%d" % (i % 3), own)))
            out.append(("shared", None, i, apis[k].register("t%d" % (i % 3), shared)))
        results[k] = out

    ts = [threading.Thread(target=run, args=(k,)) for k in range(3)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    ids = {}
    for k in range(3):
        for kind, owner, i, (st, body) in results[k]:
            assert st == 200, body
            ids.setdefault((kind, owner, i), set()).add(body["id"])
    # every schema has one id, whichever broker registered it, and no two share one
    assert all(len(v) == 1 for v in ids.values()), ids
    flat = [next(iter(v)) for v in ids.values()]
    assert len(flat) == len(set(flat)) == 15 * 3 + 15
    # every broker answers the same
    for a in apis:
        st, subjects = a.call("GET", "/subjects")
        assert subjects == ["s0", "s1", "s2", "t0", "t1", "t2"]
        for sid in flat[:5]:
            assert a.call("GET", "/schemas/ids/%d" % sid)[0] == 200
