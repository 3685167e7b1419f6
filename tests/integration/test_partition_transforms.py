"""Iceberg partition transforms of lakestream.table.partition on the Kafka
columns (issue 14 §2): bucket(N, offset), truncate(W, partition),
month(timestamp), year(timestamp) end to end. PyIceberg reads the table by
its metadata file; every data file's partition value is checked against
PyIceberg's own transform of the rows it holds (so our Murmur3 bucket,
truncate and month agree with the reference implementation), and filtered
scans plan fewer files (the manifests' partition values and the manifest
list's partition summaries prune). Bad specs are refused at CreateTopics and
IncrementalAlterConfigs with INVALID_CONFIG naming the key and the reason."""

import datetime

import pyarrow.parquet as pq
import pytest
from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,
                                   NewTopic)

import iceberg_util
from kafka_util import create_topic, unique_topic, wait_topic

pyiceberg_table = pytest.importorskip("pyiceberg.table")
duckdb = pytest.importorskip("duckdb")
from pyiceberg.expressions import EqualTo, GreaterThanOrEqual  # noqa: E402
from pyiceberg.transforms import (BucketTransform, MonthTransform, TruncateTransform,  # noqa: E402
                                  YearTransform)
from pyiceberg.types import IntegerType, LongType, TimestamptzType  # noqa: E402

FAST = ("--compaction.interval.ms=200",)


@pytest.fixture(autouse=True)
def _local_store_only():
    iceberg_util.local_store_only()


def _ms(y, m, d):
    return int(datetime.datetime(y, m, d, 12, tzinfo=datetime.timezone.utc).timestamp() * 1000)


def test_bucket_truncate_month_partitions_agree_with_pyiceberg_and_prune(broker_factory):
    b = broker_factory(*FAST)
    a = AdminClient({"bootstrap.servers": b.bootstrap})
    topic = unique_topic("xform")
    spec = "bucket(4, offset), truncate(2, partition), month(timestamp)"
    a.create_topics([NewTopic(topic, 4, 1, config={
        "lakestream.table.enabled": "true", "lakestream.table.partition": spec,
        "lakestream.table.commit.interval.ms": "1000", "retention.ms": "-1"})])[topic].result(30)
    wait_topic(b.bootstrap, topic, 4)
    p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all", "linger.ms": 1})
    months = [_ms(2023, 1, 15), _ms(2023, 3, 2), _ms(2024, 7, 31)]
    n = 0
    for part in range(4):
        for i in range(30):
            p.produce(topic, value=b"v%d-%d" % (part, i), partition=part,
                      timestamp=months[i % 3])
            n += 1
    assert p.flush(30) == 0
    tdir = iceberg_util.table_dir(b, topic)
    t, rows, _ = iceberg_util.wait_rows(tdir, n, 60)
    assert rows.num_rows == n

    fields = t.spec().fields
    assert [f.name for f in fields] == ["offset_bucket", "partition_trunc", "timestamp_month"]
    assert [str(f.transform) for f in fields] == ["bucket[4]", "truncate[2]", "month"]
    assert [f.field_id for f in fields] == [1000, 1001, 1002]

    bucket = BucketTransform(4).transform(LongType())
    trunc = TruncateTransform(2).transform(IntegerType())
    month = MonthTransform().transform(TimestamptzType())
    tasks = list(t.scan().plan_files())
    want = {(bucket(off), trunc(part), month(months[off % 3] * 1000))
            for part in range(4) for off in range(30)}
    seen = set()
    for task in tasks:
        pv = tuple(task.file.partition[i] for i in range(3))
        data = pq.read_table(task.file.file_path.replace("file://", ""))
        for off, prt, ts in zip(data.column("offset").to_pylist(),
                                data.column("partition").to_pylist(),
                                data.column("timestamp").to_pylist()):
            micros = int(ts.timestamp() * 1_000_000)
            assert (bucket(off), trunc(prt), month(micros)) == pv, (off, prt, ts, pv)
        seen.add(pv)
    assert seen == want, sorted(seen)
    assert len(want) > 8

    # pruning: an offset names one bucket; a timestamp bound drops months
    one = list(t.scan(row_filter=EqualTo("offset", 7)).plan_files())
    assert 0 < len(one) < len(tasks)
    assert all(task.file.partition[0] == bucket(7) for task in one)
    late = list(t.scan(row_filter=GreaterThanOrEqual(
        "timestamp", "2024-01-01T00:00:00+00:00")).plan_files())
    late_tuples = {pv for pv in want if pv[2] == month(months[2] * 1000)}
    assert 0 < len(late) < len(tasks)
    assert {tuple(task.file.partition[i] for i in range(3)) for task in late} == late_tuples
    got = t.scan(row_filter=GreaterThanOrEqual("timestamp", "2024-01-01T00:00:00+00:00")).to_arrow()
    assert got.num_rows == n // 3
    # an engine reading the planned files' Parquet directly finds exactly those rows
    con = duckdb.connect()
    paths = [task.file.file_path.replace("file://", "") for task in late]
    cnt, lo = con.execute("select count(*), min(epoch_ms(timestamp)) from read_parquet(?)",
                          [paths]).fetchone()
    assert (cnt, lo) == (n // 3, months[2])
    assert YearTransform().transform(TimestamptzType())(months[2] * 1000) == 54


def _invalid(fut):
    with pytest.raises(KafkaException) as ei:
        fut.result(30)
    return ei.value.args[0]


@pytest.mark.parametrize("spec,why", [
    ("year(offset)", "year does not apply to offset (type long)"),
    ("truncate(4, timestamp)", "truncate does not apply to timestamp (type timestamptz)"),
    ("bucket(0, partition)", "the bucket count must be an integer from 1"),
    ("identity(user..country)", "'user..country' is neither a Kafka column"),
    ("month(timestamp), day(timestamp)", "partitioned twice by time transforms"),
])
def test_bad_specs_refused_at_create_and_alter(broker_factory, spec, why):
    b = broker_factory(*FAST)
    a = AdminClient({"bootstrap.servers": b.bootstrap})
    topic = unique_topic("badx")
    err = _invalid(a.create_topics([NewTopic(topic, 1, 1, config={
        "lakestream.table.partition": spec})])[topic])
    assert err.name() == "INVALID_CONFIG", err
    assert "lakestream.table.partition" in err.str() and why in err.str(), err.str()

    a.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    wait_topic(b.bootstrap, topic, 1)
    res = ConfigResource("topic", topic, incremental_configs=[ConfigEntry(
        "lakestream.table.partition", spec, incremental_operation=AlterConfigOpType.SET)])
    err = _invalid(a.incremental_alter_configs([res])[res])
    assert err.name() == "INVALID_CONFIG", err
    assert "lakestream.table.partition" in err.str() and why in err.str(), err.str()


def test_typed_avro_table_partitioned_by_bucket_of_offset(broker):
    """A typed table (Avro values via the built-in registry) takes the same
    transforms over its _kafka_* columns (same field ids as the raw table)."""
    import test_typed_tables as tt
    topic = create_topic(broker.bootstrap, unique_topic("typedx"), partitions=2, config=dict(
        tt.TYPED, **{"lakestream.table.partition": "bucket(8, offset), truncate(2, partition)"}))
    n = 60
    tt.produce_orders(broker, topic, n, partitions=2)
    t, rows, _ = iceberg_util.wait_rows(iceberg_util.table_dir(broker, topic), n)
    assert rows.num_rows == n
    assert [str(f.transform) for f in t.spec().fields] == ["bucket[8]", "truncate[2]"]
    bucket = BucketTransform(8).transform(LongType())
    tasks = list(t.scan().plan_files())
    for task in tasks:
        data = pq.read_table(task.file.file_path.replace("file://", ""))
        assert {(bucket(o), p - p % 2) for o, p in zip(data.column("_kafka_offset").to_pylist(),
                                                      data.column("_kafka_partition").to_pylist())
                } == {(task.file.partition[0], task.file.partition[1])}
    one = list(t.scan(row_filter=EqualTo("_kafka_offset", 3)).plan_files())
    assert 0 < len(one) < len(tasks)
    got = t.scan(row_filter=EqualTo("_kafka_offset", 3)).to_arrow()
    assert sorted(got.column("id").to_pylist()) == [6, 7]  # offset 3 of both partitions
