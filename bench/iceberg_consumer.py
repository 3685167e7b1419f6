#!/usr/bin/env python3
"""The export pipeline users run today next to Kafka, for scenarios 7 and 8: a Kafka
consumer that appends every record to an Apache Iceberg table with PyIceberg.

What it does, and nothing more:
  - opens (creating if needed) a PyIceberg SQL catalog in DIR (sqlite file
    DIR/catalog.db, warehouse file://DIR/warehouse) and a table default.TOPIC with the
    same schema and partition spec as lakestream's raw table (docs/FORMATS.md:
    partition int, offset long, timestamp timestamptz, key binary, value binary,
    headers list<struct<key string, value binary>>; partitioned by day(timestamp);
    Parquet zstd, PyIceberg's default);
  - waits for the topic, assigns every partition from offset 0 (no consumer group, as
    the load driver: the offsets that matter go into the table);
  - consumes in batches (confluent-kafka consume(10000)), buffers rows, and every
    --commit-interval-ms (and at the end) appends the buffer as one pyarrow table:
    one Iceberg snapshot whose summary records each partition's last offset
    (`bench.p.<partition>`), which is how such a sink restarts exactly once;
  - with --avro-schema FILE (the typed-materialization scenario): each value is a
    Confluent-framed Avro datum of that schema; the 5-byte header is skipped, the
    datum decoded with fastavro and the table holds partition, offset, timestamp
    and the record's fields as typed columns (int, long, string, boolean, double,
    decimal, timestamp, optional, list, struct: what the scenario's record uses);
  - exits after --expect records are committed, printing one JSON line: rows,
    commits, seconds and CPU seconds from ready (imports done, table open; printed
    as {"ready": true} before it waits for the topic) to exit, and its /proc/self/io
    write_bytes over that window.
"""
import argparse
import io
import json
import os
import resource
import sys
import time


def io_write_bytes():
    for line in open("/proc/self/io"):
        if line.startswith("write_bytes:"):
            return int(line.split()[1])
    return 0


def cpu_s():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def arrow_field(pa, name, t):
    """The pyarrow field of an Avro field (the types the scenario's record uses)."""
    nullable = False
    if isinstance(t, list):
        nullable, t = True, next(x for x in t if x != "null")
    if isinstance(t, dict) and t.get("logicalType") == "decimal":
        typ = pa.decimal128(t["precision"], t.get("scale", 0))
    elif isinstance(t, dict) and t.get("logicalType") == "timestamp-micros":
        typ = pa.timestamp("us", tz="UTC")
    elif isinstance(t, dict) and t["type"] == "array":
        typ = pa.list_(arrow_field(pa, "element", t["items"]))
    elif isinstance(t, dict) and t["type"] == "record":
        typ = pa.struct([arrow_field(pa, f["name"], f["type"]) for f in t["fields"]])
    else:
        t = t["type"] if isinstance(t, dict) else t
        typ = {"long": pa.int64(), "int": pa.int32(), "string": pa.string(),
               "boolean": pa.bool_(), "double": pa.float64(), "float": pa.float32(),
               "bytes": pa.binary()}[t]
    return pa.field(name, typ, nullable=nullable)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--brokers", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--expect", type=int, required=True)
    ap.add_argument("--commit-interval-ms", type=int, default=10000)
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--avro-schema", help="decode values as this Avro record (JSON file)")
    a = ap.parse_args()

    import pyarrow as pa
    from confluent_kafka import Consumer, TopicPartition
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.transforms import DayTransform
    from pyiceberg.types import (BinaryType, IntegerType, ListType, LongType, NestedField,
                                 StringType, StructType, TimestamptzType)

    os.makedirs(os.path.join(a.dir, "warehouse"), exist_ok=True)
    cat = SqlCatalog("bench", uri=f"sqlite:///{a.dir}/catalog.db",
                     warehouse=f"file://{a.dir}/warehouse")
    cat.create_namespace_if_not_exists("default")
    schema = Schema(
        NestedField(1, "partition", IntegerType(), required=True),
        NestedField(2, "offset", LongType(), required=True),
        NestedField(3, "timestamp", TimestamptzType(), required=True),
        NestedField(4, "key", BinaryType(), required=False),
        NestedField(5, "value", BinaryType(), required=False),
        NestedField(6, "headers", ListType(7, StructType(
            NestedField(8, "key", StringType(), required=True),
            NestedField(9, "value", BinaryType(), required=False)), element_required=True),
            required=False))
    spec = PartitionSpec(PartitionField(source_id=3, field_id=1000, transform=DayTransform(),
                                        name="timestamp_day"))
    table = cat.create_table_if_not_exists(f"default.{a.topic}", schema=schema,
                                           partition_spec=spec)
    arrow_schema = pa.schema([
        pa.field("partition", pa.int32(), nullable=False),
        pa.field("offset", pa.int64(), nullable=False),
        pa.field("timestamp", pa.timestamp("us", tz="UTC"), nullable=False),
        pa.field("key", pa.binary()),
        pa.field("value", pa.binary()),
        pa.field("headers", pa.list_(pa.field("element", pa.struct([
            pa.field("key", pa.string(), nullable=False),
            pa.field("value", pa.binary())]), nullable=False))),
    ])

    decode = None
    if a.avro_schema:
        import fastavro
        avro = json.load(open(a.avro_schema))
        parsed = fastavro.parse_schema(avro)
        arrow_schema = pa.schema([
            pa.field("partition", pa.int32(), nullable=False),
            pa.field("offset", pa.int64(), nullable=False),
            pa.field("timestamp", pa.timestamp("us", tz="UTC"), nullable=False)]
            + [arrow_field(pa, f["name"], f["type"]) for f in avro["fields"]])
        table = cat.create_table_if_not_exists(f"default.{a.topic}_typed", schema=arrow_schema)
        reader = fastavro.schemaless_reader

        def decode(v):
            return reader(io.BytesIO(memoryview(v)[5:]), parsed)

    cpu0, io0, t0 = cpu_s(), io_write_bytes(), time.monotonic()
    print(json.dumps({"ready": True}), flush=True)
    c = Consumer({"bootstrap.servers": a.brokers, "group.id": "unused-assign-only",
                  "enable.auto.commit": False, "enable.partition.eof": False,
                  "fetch.max.bytes": 52428800})
    deadline = time.monotonic() + a.timeout
    nparts = 0
    while not nparts:
        md = c.list_topics(a.topic, timeout=5).topics.get(a.topic)
        if md is not None and md.error is None and md.partitions:
            nparts = len(md.partitions)
        elif time.monotonic() > deadline:
            sys.exit(f"iceberg_consumer: topic {a.topic} never appeared")
        else:
            time.sleep(0.1)
    c.assign([TopicPartition(a.topic, p, 0) for p in range(nparts)])

    def new_cols():
        c = {f.name: [] for f in arrow_schema}
        if decode:
            c["rows"] = []
        return c
    cols = new_cols()
    last = {}
    committed = commits = 0
    last_commit = time.monotonic()

    def commit():
        nonlocal committed, commits, cols, last_commit
        n = len(cols["offset"])
        if n and decode:
            batch = pa.Table.from_pylist(cols["rows"], schema=arrow_schema)
        elif n:
            batch = pa.Table.from_pydict(cols, schema=arrow_schema)
        if n:
            table.append(batch, snapshot_properties={f"bench.p.{p}": str(o)
                                                     for p, o in last.items()})
            committed += n
            commits += 1
            cols = new_cols()
        last_commit = time.monotonic()

    while committed < a.expect:
        if time.monotonic() > deadline:
            sys.exit(f"iceberg_consumer: {committed} of {a.expect} rows after {a.timeout}s")
        for m in c.consume(10000, 0.05):
            if m.error():
                continue
            if decode:
                r = decode(m.value())
                r["partition"], r["offset"] = m.partition(), m.offset()
                r["timestamp"] = m.timestamp()[1] * 1000
                cols["rows"].append(r)
                cols["offset"].append(m.offset())
                last[m.partition()] = m.offset()
                continue
            cols["partition"].append(m.partition())
            cols["offset"].append(m.offset())
            cols["timestamp"].append(m.timestamp()[1] * 1000)
            cols["key"].append(m.key())
            cols["value"].append(m.value())
            cols["headers"].append([{"key": k, "value": v} for k, v in (m.headers() or [])])
            last[m.partition()] = m.offset()
        buffered = len(cols["offset"])
        if buffered and (committed + buffered >= a.expect or
                         time.monotonic() - last_commit >= a.commit_interval_ms / 1000):
            commit()
    c.close()
    print(json.dumps({"rows": committed, "commits": commits,
                      "seconds": round(time.monotonic() - t0, 3),
                      "cpu_s": round(cpu_s() - cpu0, 3),
                      "write_bytes": io_write_bytes() - io0}), flush=True)


if __name__ == "__main__":
    main()
