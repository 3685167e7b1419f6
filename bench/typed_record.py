"""The record of the typed-materialization scenario: ten Avro fields with a
nested struct, an array, a timestamp and a decimal, framed in the Confluent
wire format (magic 0, 4-byte schema id, Avro binary datum).

PRICE is the decimal field's type: decimal(9, 2) as Avro bytes. To measure
the scenario without decimals (a build that does not map them), set PRICE to
"double": values() then writes the same amounts as doubles."""
import datetime
import decimal
import io
import random

PRICE = {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}

SCHEMA = {"type": "record", "name": "Order", "namespace": "bench", "fields": [
    {"name": "id", "type": "long"},
    {"name": "customer", "type": "string"},
    {"name": "qty", "type": "int"},
    {"name": "price", "type": PRICE},
    {"name": "created", "type": {"type": "long", "logicalType": "timestamp-micros"}},
    {"name": "paid", "type": "boolean"},
    {"name": "score", "type": "double"},
    {"name": "note", "type": ["null", "string"], "default": None},
    {"name": "tags", "type": {"type": "array", "items": "string"}},
    {"name": "address", "type": {"type": "record", "name": "Address", "fields": [
        {"name": "street", "type": "string"}, {"name": "zip", "type": "int"}]}},
]}

T0 = datetime.datetime(2026, 12, 1, tzinfo=datetime.timezone.utc)


def record(i, rnd):
    cents = rnd.randrange(100, 10_000_000)
    return {"id": i, "customer": "customer-%06d" % rnd.randrange(1_000_000),
            "qty": rnd.randrange(1, 100),
            "price": (decimal.Decimal(cents).scaleb(-2) if PRICE != "double" else cents / 100),
            "created": T0 + datetime.timedelta(microseconds=i * 1000),
            "paid": i % 3 == 0, "score": rnd.random(),
            "note": None if i % 4 else "note %d" % i,
            "tags": ["t%d" % rnd.randrange(50) for _ in range(i % 4)],
            "address": {"street": "%d Main St" % rnd.randrange(10000), "zip": rnd.randrange(99999)}}


def values(schema_id, n, seed=14):
    """n framed values, the same for the same arguments."""
    import fastavro
    parsed = fastavro.parse_schema(SCHEMA)
    rnd = random.Random(seed)
    head = b"\x00" + schema_id.to_bytes(4, "big")
    out = []
    for i in range(n):
        buf = io.BytesIO()
        buf.write(head)
        fastavro.schemaless_writer(buf, parsed, record(i, rnd))
        out.append(buf.getvalue())
    return out
