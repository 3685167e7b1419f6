"""Typed tables from Protobuf values (issue 14 §2): a topic with
lakestream.table.value.format=schema-registry whose values are Protobuf
messages written by confluent-kafka's ProtobufSerializer (the Confluent header,
the message-index array, the wire bytes) against the built-in registry
materializes as an Iceberg table with the message's fields as typed columns
(message -> struct, repeated -> list, map<string, V> -> map, other maps ->
list of key/value structs, enum -> string, oneof -> optional members,
Timestamp -> timestamptz, wrappers -> optional values, uint64 -> long), read
back value by value by PyIceberg and DuckDB's Parquet reader. A nested
message named by its index path makes its own columns; a value that does not
fit goes to the dead-letter table with the reason; Protobuf keys and a
primitive JSON key fill _kafka_key_typed."""

import datetime

import pytest
from confluent_kafka import Producer, SerializingProducer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.serialization import StringSerializer
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf import timestamp_pb2, wrappers_pb2  # noqa: F401 (registers the files)

import iceberg_util as iu
from kafka_util import create_topic, unique_topic

TYPED = {"lakestream.table.enabled": "true", "lakestream.table.commit.interval.ms": "1000",
         "lakestream.table.value.format": "schema-registry"}

F = descriptor_pb2.FieldDescriptorProto


def _file():
    """shop/order.proto, built as a descriptor (no protoc here)."""
    fd = descriptor_pb2.FileDescriptorProto(name="shop/order.proto", package="shop",
                                            syntax="proto3")
    fd.dependency.extend(["google/protobuf/timestamp.proto", "google/protobuf/wrappers.proto"])
    st = fd.enum_type.add(name="Status")
    for i, n in enumerate(["NEW", "PAID", "SHIPPED"]):
        st.value.add(name=n, number=i)
    order = fd.message_type.add(name="Order")

    def field(msg, name, num, typ, label=F.LABEL_OPTIONAL, type_name=None, oneof=None,
              proto3_optional=False):
        f = msg.field.add(name=name, number=num, type=typ, label=label)
        if type_name:
            f.type_name = type_name
        if oneof is not None:
            f.oneof_index = oneof
        if proto3_optional:
            f.proto3_optional = True
        return f

    line = order.nested_type.add(name="Line")
    field(line, "sku", 1, F.TYPE_STRING)
    field(line, "n", 2, F.TYPE_INT32)
    attrs = order.nested_type.add(name="AttrsEntry")
    attrs.options.map_entry = True
    field(attrs, "key", 1, F.TYPE_STRING)
    field(attrs, "value", 2, F.TYPE_INT64)
    codes = order.nested_type.add(name="CodesEntry")
    codes.options.map_entry = True
    field(codes, "key", 1, F.TYPE_INT32)
    field(codes, "value", 2, F.TYPE_STRING)
    order.oneof_decl.add(name="pay")
    order.oneof_decl.add(name="_note")
    field(order, "id", 1, F.TYPE_INT64)
    field(order, "customer", 2, F.TYPE_STRING)
    field(order, "amount", 3, F.TYPE_DOUBLE)
    field(order, "qty", 4, F.TYPE_SINT32)
    field(order, "paid", 5, F.TYPE_BOOL)
    field(order, "status", 6, F.TYPE_ENUM, type_name=".shop.Status")
    field(order, "created", 7, F.TYPE_MESSAGE, type_name=".google.protobuf.Timestamp")
    field(order, "tags", 8, F.TYPE_STRING, label=F.LABEL_REPEATED)
    field(order, "attrs", 9, F.TYPE_MESSAGE, label=F.LABEL_REPEATED,
          type_name=".shop.Order.AttrsEntry")
    field(order, "lines", 10, F.TYPE_MESSAGE, label=F.LABEL_REPEATED, type_name=".shop.Order.Line")
    field(order, "big", 11, F.TYPE_UINT64)
    field(order, "card", 12, F.TYPE_STRING, oneof=0)
    field(order, "iban", 13, F.TYPE_STRING, oneof=0)
    field(order, "maybe", 14, F.TYPE_MESSAGE, type_name=".google.protobuf.Int32Value")
    field(order, "codes", 15, F.TYPE_MESSAGE, label=F.LABEL_REPEATED,
          type_name=".shop.Order.CodesEntry")
    field(order, "nums", 16, F.TYPE_INT32, label=F.LABEL_REPEATED)
    field(order, "note", 17, F.TYPE_STRING, oneof=1, proto3_optional=True)
    field(order, "ratio", 18, F.TYPE_FLOAT)
    return fd


POOL = descriptor_pool.Default()
try:
    POOL.FindFileByName("shop/order.proto")
except KeyError:
    POOL.Add(_file())
Order = message_factory.GetMessageClass(POOL.FindMessageTypeByName("shop.Order"))
Line = message_factory.GetMessageClass(POOL.FindMessageTypeByName("shop.Order.Line"))
STATUS = ["NEW", "PAID", "SHIPPED"]
T0 = datetime.datetime(2026, 3, 1, 12, 0, 0, tzinfo=datetime.timezone.utc)


def order(i):
    o = Order(id=i, customer="c%d" % (i % 7), amount=i * 1.25, qty=i % 13 - 6, paid=i % 2 == 0,
              status=i % 3, big=2**63 - 1 - i, ratio=0.5 * (i % 4))
    o.created.FromDatetime(T0 + datetime.timedelta(seconds=i, microseconds=7 * i))
    o.tags.extend(["t%d" % k for k in range(i % 3)])
    for k in range(i % 3):
        o.attrs["a%d" % k] = i * 10 + k
    for k in range(i % 4):
        o.lines.add(sku="k%d" % k, n=k)
    if i % 3 == 1:
        o.card = "card%d" % i
    elif i % 3 == 2:
        o.iban = "iban%d" % i
    if i % 2:
        o.maybe.value = i
    for k in range(i % 2):
        o.codes[k + i] = "code%d" % (k + i)
    o.nums.extend(range(i % 5))
    if i % 4:
        o.note = "note %d" % i
    return o


def expected(i):
    o = order(i)
    return {
        "id": i, "customer": o.customer, "amount": o.amount, "qty": o.qty, "paid": o.paid,
        "status": STATUS[o.status],
        "created": T0 + datetime.timedelta(seconds=i, microseconds=7 * i),
        "tags": list(o.tags), "attrs": sorted(o.attrs.items()),
        "lines": [{"sku": ln.sku, "n": ln.n} for ln in o.lines], "big": o.big,
        "card": o.card if o.WhichOneof("pay") == "card" else None,
        "iban": o.iban if o.WhichOneof("pay") == "iban" else None,
        "maybe": o.maybe.value if o.HasField("maybe") else None,
        "codes": [{"key": k, "value": v} for k, v in sorted(o.codes.items())],
        "nums": list(o.nums), "note": o.note if o.HasField("note") else None, "ratio": o.ratio,
    }


def produce(broker, topic, msgs, cls=Order):
    sr = SchemaRegistryClient({"url": broker.registry_url})
    p = SerializingProducer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5,
                             "key.serializer": StringSerializer(),
                             "value.serializer": ProtobufSerializer(
                                 cls, sr, {"use.deprecated.format": False})})
    failed = []
    for i, m in enumerate(msgs):
        p.produce(topic, key="k%d" % i, value=m, partition=0,
                  on_delivery=lambda err, _m: err and failed.append(err))
    assert p.flush(30) == 0 and not failed, failed


def test_protobuf_values_become_typed_columns(broker):
    iu.local_store_only()
    topic = create_topic(broker.bootstrap, unique_topic("typed-proto"), config=TYPED)
    n = 40
    produce(broker, topic, [order(i) for i in range(n)])
    t, rows, _ = iu.wait_rows(iu.table_dir(broker, topic), n)
    schema = t.schema()
    names = [f.name for f in schema.fields][5:]
    assert names == [f.name for f in Order.DESCRIPTOR.fields]
    types = {f.name: str(f.field_type) for f in schema.fields}
    assert types["id"] == "long" and types["qty"] == "int" and types["big"] == "long"
    assert types["status"] == "string" and types["created"] == "timestamptz"
    assert types["ratio"] == "float" and types["maybe"] == "int"
    assert types["attrs"].startswith("map<string, long>") and types["codes"].startswith("list<")
    assert schema.find_field("id").required and not schema.find_field("card").required
    assert not schema.find_field("note").required and not schema.find_field("created").required
    got = sorted(rows.to_pylist(), key=lambda r: r["id"])
    assert len(got) == n
    for i, r in enumerate(got):
        for k, v in expected(i).items():
            if k == "attrs":
                assert sorted(r[k]) == v, (i, k, r[k], v)
            elif k == "codes":
                assert sorted(r[k], key=lambda e: e["key"]) == v, (i, k, r[k], v)
            else:
                assert r[k] == v, (i, k, r[k], v)
    duckdb = pytest.importorskip("duckdb")
    files = [f.file.file_path.replace("file://", "") for f in t.scan().plan_files()]
    con = duckdb.connect()
    con.execute("SET TimeZone='UTC'")
    q = con.execute("SELECT id, status, created, big, card, iban, maybe, note, len(lines), tags "
                    "FROM read_parquet(?) ORDER BY id", [files]).fetchall()
    assert len(q) == n
    for i, row in enumerate(q):
        w = expected(i)
        assert row == (i, w["status"], w["created"], w["big"], w["card"], w["iban"], w["maybe"],
                       w["note"], len(w["lines"]), w["tags"]), (i, row)


def test_a_nested_message_by_its_index_and_dead_letters(broker):
    """Values of the nested message shop.Order.Line (index path [0, 0], as
    ProtobufSerializer writes it) make its columns; with
    error.handling=dead-letter a value whose message index names no message,
    or whose bytes do not decode, goes to <name>__dlq with the reason."""
    iu.local_store_only()
    topic = create_topic(broker.bootstrap, unique_topic("typed-proto-dlq"),
                         config=dict(TYPED, **{"lakestream.table.error.handling": "dead-letter"}))
    produce(broker, topic, [Line(sku="s%d" % i, n=i) for i in range(3)], cls=Line)
    sr = SchemaRegistryClient({"url": broker.registry_url})
    sid = sr.get_latest_version(topic + "-value").schema_id
    hdr = b"\x00" + sid.to_bytes(4, "big")
    bad = [
        (hdr + b"\x02\x0e" + Line(sku="x").SerializeToString(), b"names no message"),  # [7]
        (hdr + b"\x04\x00\x00" + b"\x0a\x05ab", b"malformed"),  # [0, 0], sku runs past the end
        (hdr + b"\x04\x00\x00" + b"\x10\x01\x0a\x02\xff\xfe", b"UTF-8"),
        (hdr + b"\x04\x00\x04", b"CodesEntry is not mapped"),  # [0, 2]: a map entry
    ]
    p = Producer({"bootstrap.servers": broker.bootstrap})
    for v, _ in bad:
        p.produce(topic, value=v, partition=0)
    assert p.flush(10) == 0
    t, rows, _ = iu.wait_rows(iu.table_dir(broker, topic), 3)
    assert [f.name for f in t.schema().fields][5:] == ["sku", "n"]
    assert sorted((r["sku"], r["n"]) for r in rows.to_pylist()) == [("s0", 0), ("s1", 1),
                                                                   ("s2", 2)]
    d, drows, _ = iu.wait_rows(iu.table_dir(broker, topic + "__dlq"), len(bad))
    got = sorted(drows.to_pylist(), key=lambda r: r["offset"])
    assert [r["value"] for r in got] == [v for v, _ in bad]
    for r, (_, why) in zip(got, bad):
        hs = {h["key"]: h["value"] for h in r["headers"]}
        assert why in hs["lakestream.dlq.error"], hs


def _event_class(version):
    """shop.Event v1 {string name = 1; int32 n = 2;}; v2 widens n to int64
    and adds double score = 3 (compatible by the registry's Protobuf rules)."""
    fd = descriptor_pb2.FileDescriptorProto(name="shop/event.proto", package="shop",
                                            syntax="proto3")
    m = fd.message_type.add(name="Event")
    m.field.add(name="name", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    m.field.add(name="n", number=2, type=F.TYPE_INT32 if version == 1 else F.TYPE_INT64,
                label=F.LABEL_OPTIONAL)
    if version == 2:
        m.field.add(name="score", number=3, type=F.TYPE_DOUBLE, label=F.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.Event"))


def test_protobuf_evolution_widened_and_added_fields(broker):
    """v1 -> v2 (int32 -> int64, a field added): the table evolves in the
    commit of the first v2 rows, field ids kept; v1 rows after v2 land with
    null for the new column."""
    iu.local_store_only()
    topic = create_topic(broker.bootstrap, unique_topic("typed-proto-evo"), config=TYPED)
    E1, E2 = _event_class(1), _event_class(2)
    produce(broker, topic, [E1(name="a%d" % i, n=i) for i in range(2)], cls=E1)
    t, rows, _ = iu.wait_rows(iu.table_dir(broker, topic), 2)
    assert str(t.schema().find_field("n").field_type) == "int"
    produce(broker, topic, [E2(name="b", n=2**40, score=0.5)], cls=E2)
    produce(broker, topic, [E1(name="c", n=-1)], cls=E1)
    t, rows, _ = iu.wait_rows(iu.table_dir(broker, topic), 4)
    schema = t.schema()
    assert str(schema.find_field("n").field_type) == "long"
    assert schema.find_field("n").field_id == 11 and schema.find_field("name").field_id == 10
    assert str(schema.find_field("score").field_type) == "double"
    got = sorted((r["_kafka_offset"], r["name"], r["n"], r["score"]) for r in rows.to_pylist())
    assert got == [(0, "a0", 0, None), (1, "a1", 1, None), (2, "b", 2**40, 0.5),
                   (3, "c", -1, None)]


def test_protobuf_keys_and_a_primitive_json_key(broker):
    """key.format=schema-registry with ProtobufSerializer keys (a message key
    is the struct _kafka_key_typed), and on another topic JSONSerializer keys
    whose schema is a plain string (the key column is that string)."""
    iu.local_store_only()
    cfg = dict(TYPED, **{"lakestream.table.key.format": "schema-registry"})
    sr = SchemaRegistryClient({"url": broker.registry_url})
    topic = create_topic(broker.bootstrap, unique_topic("typed-proto-key"), config=cfg)
    p = SerializingProducer({"bootstrap.servers": broker.bootstrap,
                             "key.serializer": ProtobufSerializer(
                                 Line, sr, {"use.deprecated.format": False}),
                             "value.serializer": ProtobufSerializer(
                                 Order, sr, {"use.deprecated.format": False})})
    for i in range(3):
        p.produce(topic, key=Line(sku="key%d" % i, n=i), value=order(i), partition=0)
    assert p.flush(30) == 0
    t, rows, _ = iu.wait_rows(iu.table_dir(broker, topic), 3)
    got = sorted(rows.to_pylist(), key=lambda r: r["_kafka_offset"])
    assert [r["_kafka_key_typed"] for r in got] == [{"sku": "key%d" % i, "n": i} for i in range(3)]
    assert [r["id"] for r in got] == [0, 1, 2]

    from confluent_kafka.schema_registry.json_schema import JSONSerializer
    import json
    topic2 = create_topic(broker.bootstrap, unique_topic("typed-json-strkey"), config=cfg)
    p = SerializingProducer({"bootstrap.servers": broker.bootstrap,
                             "key.serializer": JSONSerializer(json.dumps({"type": "string"}), sr),
                             "value.serializer": ProtobufSerializer(
                                 Line, sr, {"use.deprecated.format": False})})
    for i in range(3):
        p.produce(topic2, key="user-%d" % i, value=Line(sku="s", n=i), partition=0)
    assert p.flush(30) == 0
    t, rows, _ = iu.wait_rows(iu.table_dir(broker, topic2), 3)
    assert str(t.schema().find_field("_kafka_key_typed").field_type) == "string"
    got = sorted(rows.to_pylist(), key=lambda r: r["_kafka_offset"])
    assert [(r["_kafka_key_typed"], r["n"]) for r in got] == [("user-%d" % i, i) for i in range(3)]
