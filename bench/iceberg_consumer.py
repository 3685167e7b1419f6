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
  - exits after --expect records are committed, printing one JSON line: rows,
    commits, seconds and CPU seconds from ready (imports done, table open; printed
    as {"ready": true} before it waits for the topic) to exit, and its /proc/self/io
    write_bytes over that window.
"""
import argparse
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--brokers", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--expect", type=int, required=True)
    ap.add_argument("--commit-interval-ms", type=int, default=10000)
    ap.add_argument("--timeout", type=float, default=600)
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

    cols = {f.name: [] for f in arrow_schema}
    last = {}
    committed = commits = 0
    last_commit = time.monotonic()

    def commit():
        nonlocal committed, commits, cols, last_commit
        n = len(cols["offset"])
        if n:
            batch = pa.Table.from_pydict(cols, schema=arrow_schema)
            table.append(batch, snapshot_properties={f"bench.p.{p}": str(o)
                                                     for p, o in last.items()})
            committed += n
            commits += 1
            cols = {f.name: [] for f in arrow_schema}
        last_commit = time.monotonic()

    while committed < a.expect:
        if time.monotonic() > deadline:
            sys.exit(f"iceberg_consumer: {committed} of {a.expect} rows after {a.timeout}s")
        for m in c.consume(10000, 0.05):
            if m.error():
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
