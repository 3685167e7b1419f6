"""The table materialization policy (lakestream.table.*) end to end, with
confluent-kafka's AdminClient and PyIceberg reading the tables by metadata
file: policy keys set at CreateTopics, changed with IncrementalAlterConfigs,
validated with INVALID_CONFIG naming the key; a table enabled later with
start position latest (only later records) or earliest (backfilled from
compacted objects); a name template; a target file size that rolls data
files; freshness with a 1 s commit interval (measured delay printed); values
the broker would not act on (an external catalog, a sort order) refused at
every entry point; the `lakestream tables` CLI showing every field's value
and source, and namespace defaults written with `lakestream tables namespace`."""

import glob
import os
import subprocess
import time

import pytest
from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,
                                   NewTopic)

import iceberg_util
import lsbroker
from kafka_util import unique_topic, wait_topic

pyiceberg_table = pytest.importorskip("pyiceberg.table")

FAST = ("--compaction.interval.ms=200",)


@pytest.fixture(autouse=True)
def _local_store_only():
    iceberg_util.local_store_only()


def _load(table_dir):
    md = iceberg_util.current_metadata(table_dir)
    return pyiceberg_table.StaticTable.from_metadata("file://" + md) if md else None


def _wait_rows(table_dir, want, timeout=60):
    t, rows, _ = iceberg_util.wait_rows(table_dir, want, timeout)
    return t, rows


def _produce(bootstrap, topic, values, partition=0):
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 1})
    for v in values:
        p.produce(topic, value=v, partition=partition)
    assert p.flush(30) == 0


def _create(a, topic, parts=1, **config):
    a.create_topics([NewTopic(topic, parts, 1, config=config)])[topic].result(30)


def _incremental(a, topic, ops):
    res = ConfigResource("topic", topic, incremental_configs=[
        ConfigEntry(k, v, incremental_operation=AlterConfigOpType.DELETE if v is None
                    else AlterConfigOpType.SET) for k, v in ops.items()])
    return a.incremental_alter_configs([res])[res].result(30)


def _describe(a, topic):
    res = ConfigResource("topic", topic)
    return a.describe_configs([res])[res].result(30)


def _cli(*args):
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKESTREAM_")}
    out = subprocess.run([lsbroker.binary_path(), "tables"] + list(args), capture_output=True,
                         text=True, timeout=60, env=env)
    return out.returncode, out.stdout, out.stderr


def test_create_with_policy_name_template_partition_and_describe(broker_factory):
    b = broker_factory(*FAST, "--lakestream.table.compression=snappy")
    a = AdminClient({"bootstrap.servers": b.bootstrap})
    topic = unique_topic("pol")
    _create(a, topic, 2, **{"lakestream.table.enabled": "true",
                            "lakestream.table.name": "{namespace}_{topic}_raw",
                            "lakestream.table.partition": "identity(partition)",
                            "lakestream.table.commit.interval.ms": "1000"})
    wait_topic(b.bootstrap, topic, 2)
    _produce(b.bootstrap, topic, [b"a%d" % i for i in range(20)], partition=0)
    _produce(b.bootstrap, topic, [b"b%d" % i for i in range(10)], partition=1)
    table = "default_%s_raw" % topic
    t, rows = _wait_rows(iceberg_util.table_dir(b, table), 30)
    assert not os.path.exists(iceberg_util.table_dir(b, topic)), "the template names the table"
    assert rows.num_rows == 30
    assert [f.name for f in t.spec().fields] == ["partition"]
    # the cluster default codec (broker flag) reached the data files
    import pyarrow.parquet as pq
    f = next(iter(t.scan().plan_files())).file.file_path.replace("file://", "")
    assert pq.ParquetFile(f).metadata.row_group(0).column(0).compression == "SNAPPY"

    d = _describe(a, topic)
    src = {k: (v.value, v.source) for k, v in d.items() if k.startswith("lakestream.table.")}
    TOPIC, CLUSTER, DEFAULT = 1, 4, 5
    assert src["lakestream.table.enabled"] == ("true", TOPIC)
    assert src["lakestream.table.name"] == ("{namespace}_{topic}_raw", TOPIC)
    assert src["lakestream.table.compression"] == ("snappy", CLUSTER)
    assert src["lakestream.table.start.position"] == ("earliest", DEFAULT)
    assert src["lakestream.table.target.file.bytes"] == ("134217728", DEFAULT)
    assert d["lakestream.table.enabled.since"].is_read_only


def test_enable_later_with_start_latest_only_later_records(broker_factory):
    b = broker_factory(*FAST)
    a = AdminClient({"bootstrap.servers": b.bootstrap})
    topic = unique_topic("late")
    _create(a, topic)
    wait_topic(b.bootstrap, topic, 1)
    _produce(b.bootstrap, topic, [b"before-%d" % i for i in range(50)])
    _incremental(a, topic, {"lakestream.table.enabled": "true",
                            "lakestream.table.start.position": "latest",
                            "lakestream.table.commit.interval.ms": "1000"})
    _produce(b.bootstrap, topic, [b"after-%d" % i for i in range(30)])
    t, rows = _wait_rows(iceberg_util.table_dir(b, topic), 30)
    time.sleep(2.5)   # further passes (the earlier records are old enough by now) add nothing
    rows = _load(iceberg_util.table_dir(b, topic)).scan().to_arrow()
    values = sorted(rows.column("value").to_pylist())
    assert values == sorted(b"after-%d" % i for i in range(30)), values[:5]
    assert sorted(rows.column("offset").to_pylist()) == list(range(50, 80))


def test_enable_later_with_start_earliest_backfills_compacted_data(broker_factory):
    b = broker_factory(*FAST, "--compaction.min.age.ms=0")
    a = AdminClient({"bootstrap.servers": b.bootstrap})
    topic = unique_topic("early")
    _create(a, topic)
    wait_topic(b.bootstrap, topic, 1)
    _produce(b.bootstrap, topic, [b"old-%d" % i for i in range(40)])
    # the first records are compacted (no table yet) before the table exists
    lsbroker.wait_until(lambda: glob.glob(os.path.join(b.data_dir, "objects", "co", "*", "*.co")),
                        30, what="compacted objects")
    _incremental(a, topic, {"lakestream.table.enabled": "true",
                            "lakestream.table.commit.interval.ms": "1000"})
    _produce(b.bootstrap, topic, [b"new-%d" % i for i in range(20)])
    t, rows = _wait_rows(iceberg_util.table_dir(b, topic), 60)
    time.sleep(1.5)
    rows = _load(iceberg_util.table_dir(b, topic)).scan().to_arrow()
    assert sorted(rows.column("offset").to_pylist()) == list(range(60)), "each record once"
    assert set(rows.column("value").to_pylist()) == \
        {b"old-%d" % i for i in range(40)} | {b"new-%d" % i for i in range(20)}


def test_target_file_size_rolls_data_files(broker_factory):
    b = broker_factory(*FAST)
    a = AdminClient({"bootstrap.servers": b.bootstrap})
    topic = unique_topic("roll")
    _create(a, topic, **{"lakestream.table.enabled": "true",
                         "lakestream.table.target.file.bytes": "4096",
                         "lakestream.table.compression": "none",
                         "lakestream.table.commit.interval.ms": "2000"})
    wait_topic(b.bootstrap, topic, 1)
    _produce(b.bootstrap, topic, [(b"%05d" % i) * 40 for i in range(400)])   # 200 B values
    t, rows = _wait_rows(iceberg_util.table_dir(b, topic), 400)
    files = list(t.scan().plan_files())
    snapshots = len(t.metadata.snapshots)
    assert len(files) > snapshots, "%d data files in %d snapshots: files were not rolled" % (
        len(files), snapshots)
    assert max(f.file.file_size_in_bytes for f in files) < 64 * 1024
    assert rows.num_rows == 400


def test_bad_values_rejected_with_invalid_config_naming_the_key(broker):
    a = AdminClient({"bootstrap.servers": broker.bootstrap})
    topic = unique_topic("bad")
    fut = a.create_topics([NewTopic(topic, 1, 1, config={
        "lakestream.table.commit.interval.ms": "500"})])[topic]
    with pytest.raises(KafkaException) as e:
        fut.result(30)
    err = e.value.args[0]
    assert err.code() == 40, err   # INVALID_CONFIG
    assert "lakestream.table.commit.interval.ms" in err.str() and "1000" in err.str()

    _create(a, topic)
    cases = {"lakestream.table.partition": "month",
             "lakestream.table.start.position": "beginning",
             "lakestream.table.enabled": "yes",
             "lakestream.table.name": "{topik}",
             "lakestream.table.nonsense": "1",
             "lakestream.table.enabled.since": "0"}
    for key, value in cases.items():
        with pytest.raises(KafkaException) as e:
            _incremental(a, topic, {key: value})
        err = e.value.args[0]
        assert err.code() == 40, (key, err)
        assert key in err.str(), (key, err.str())
    # nothing was stored
    d = _describe(a, topic)
    assert d["lakestream.table.enabled"].value == "false"
    assert d["lakestream.table.partition"].value == "day"


def test_unapplied_values_refused_at_every_entry_point(broker):
    """No value is stored and ignored: lakestream.table.sort.order other than
    none and lakestream.table.catalog other than builtin are refused by
    CreateTopics, IncrementalAlterConfigs and AlterConfigs (INVALID_CONFIG
    naming key, value and what is supported), by `lakestream tables set` and
    `tables namespace --set`, and as a broker flag (the broker does not start;
    sort.order has no broker key)."""
    a = AdminClient({"bootstrap.servers": broker.bootstrap})
    topic = unique_topic("unapplied")
    refused = (("lakestream.table.sort.order", "offset", "accepted values are none"),
               ("lakestream.table.catalog", "glue-prod", "accepted values are builtin"))
    for key, value, supported in refused:
        fut = a.create_topics([NewTopic(topic, 1, 1, config={key: value})])[topic]
        with pytest.raises(KafkaException) as e:
            fut.result(30)
        err = e.value.args[0]
        assert err.code() == 40, err   # INVALID_CONFIG
        assert key in err.str() and "'%s'" % value in err.str() and supported in err.str(), err
    _create(a, topic, **{"lakestream.table.enabled": "true"})
    for key, value, supported in refused:
        with pytest.raises(KafkaException) as e:
            _incremental(a, topic, {key: value})
        err = e.value.args[0]
        assert err.code() == 40 and key in err.str() and supported in err.str(), err
        res = ConfigResource("topic", topic, set_config={"lakestream.table.enabled": "true",
                                                         key: value})
        with pytest.raises(KafkaException) as e:
            a.alter_configs([res])[res].result(30)
        err = e.value.args[0]
        assert err.code() == 40 and key in err.str() and supported in err.str(), err
    d = _describe(a, topic)
    assert d["lakestream.table.sort.order"].value == "none"
    assert d["lakestream.table.catalog"].value == "builtin"
    assert d["lakestream.table.enabled"].value == "true"
    # the supported values are accepted (and applied: there is no other kind)
    _incremental(a, topic, {"lakestream.table.sort.order": "none",
                            "lakestream.table.catalog": "builtin"})

    rc, out, err = _cli("--bootstrap", broker.bootstrap, "set", topic, "sort.order=key")
    assert rc != 0 and "lakestream.table.sort.order" in err and "'key'" in err, err
    rc, out, err = _cli("namespace", "default", "--set", "catalog=glue-prod",
                        "--data.dir=" + broker.data_dir)
    assert rc != 0 and "lakestream.table.catalog" in err and "builtin" in err, err

    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKESTREAM_")}
    p = subprocess.run([lsbroker.binary_path(), "serve", "--data.dir=" + broker.data_dir + "-flag",
                        "--listeners=127.0.0.1:0", "--lakestream.table.catalog=glue-prod"],
                       capture_output=True, text=True, timeout=30, env=env)
    assert p.returncode != 0, p.stderr
    assert "cannot start: Invalid value 'glue-prod' for configuration lakestream.table.catalog" \
        in p.stderr and "accepted values are builtin" in p.stderr, p.stderr


def test_two_topics_cannot_share_one_table(broker):
    a = AdminClient({"bootstrap.servers": broker.bootstrap})
    t1, t2 = unique_topic("one"), unique_topic("two")
    _create(a, t1, **{"lakestream.table.enabled": "true", "lakestream.table.name": "shared"})
    _create(a, t2)
    with pytest.raises(KafkaException) as e:
        _incremental(a, t2, {"lakestream.table.enabled": "true",
                             "lakestream.table.name": "shared"})
    assert e.value.args[0].code() == 40 and t1 in e.value.args[0].str()


def test_freshness_with_one_second_commit_interval(broker_factory):
    b = broker_factory()   # default compaction.interval.ms (10 s) and min.age (60 s)
    a = AdminClient({"bootstrap.servers": b.bootstrap})
    topic = unique_topic("fresh")
    _create(a, topic, **{"lakestream.table.enabled": "true",
                         "lakestream.table.commit.interval.ms": "1000"})
    wait_topic(b.bootstrap, topic, 1)
    delays = []
    for round_ in range(3):
        acked = []
        p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all", "linger.ms": 0})
        p.produce(topic, value=b"fresh-%d" % round_, partition=0,
                  on_delivery=lambda err, msg: acked.append((err, time.monotonic())))
        assert p.flush(30) == 0 and acked and acked[0][0] is None
        t_ack = acked[0][1]
        _wait_rows(iceberg_util.table_dir(b, topic), round_ + 1, timeout=30)
        delays.append(time.monotonic() - t_ack)
        time.sleep(0.3 * round_)
    print("\nfreshness with commit interval 1 s: ack -> queryable in %s s"
          % ", ".join("%.2f" % d for d in delays))
    assert max(delays) < 10, delays   # generous: 1 s interval + scheduling + commit


def test_cli_shows_sources_and_namespace_defaults(broker_factory):
    b = broker_factory(*FAST, "--lakestream.table.compression=gzip")
    a = AdminClient({"bootstrap.servers": b.bootstrap})
    topic = unique_topic("cli")
    _create(a, topic, **{"lakestream.table.enabled": "true"})
    rc, out, err = _cli("--bootstrap", b.bootstrap, "set", topic, "write.mode=upsert",
                        "error.handling=dead-letter", "catalog=builtin", "commit.interval.ms=1500")
    assert rc == 0, err

    def row(text, key):
        line = next(ln for ln in text.splitlines() if ln.startswith(key + " "))
        return line.split()

    assert row(out, "KEY") == ["KEY", "VALUE", "SOURCE"], out
    assert row(out, "lakestream.table.enabled")[1:] == ["true", "stream"]
    assert row(out, "lakestream.table.compression")[1:] == ["gzip", "cluster"]
    assert row(out, "lakestream.table.partition")[1:] == ["day", "default"]
    assert row(out, "lakestream.table.commit.interval.ms")[1:] == ["1500", "stream"]
    assert row(out, "lakestream.table.write.mode")[1:] == ["upsert", "stream"]
    assert row(out, "lakestream.table.error.handling")[1:] == ["dead-letter", "stream"]
    assert row(out, "lakestream.table.catalog")[1:] == ["builtin", "stream"]
    assert row(out, "lakestream.table.sort.order")[1:] == ["none", "default"]
    assert row(out, "lakestream.table.enabled.since")[2:] == ["broker"]

    rc, out, err = _cli("--bootstrap", b.bootstrap, "set", topic, "start.position=sideways")
    assert rc != 0 and "lakestream.table.start.position" in err and "earliest, latest" in err

    # namespace defaults: written to the metadata store, picked up by the broker
    rc, out, err = _cli("--bootstrap", b.bootstrap, "unset", topic, "commit.interval.ms")
    assert rc == 0, err
    rc, out, err = _cli("namespace", "default", "--set", "commit.interval.ms=2500",
                        "--set", "lakestream.table.compression=snappy", "--data.dir=" + b.data_dir)
    assert rc == 0, err
    assert row(out, "lakestream.table.commit.interval.ms")[1:3] == ["2500", "namespace"]

    def shows_namespace():
        rc, out, _ = _cli("--bootstrap", b.bootstrap, "show", topic)
        return rc == 0 and row(out, "lakestream.table.commit.interval.ms")[1:3] == \
            ["2500", "namespace"] and out
    out = lsbroker.wait_until(shows_namespace, 30, what="namespace default in the broker")
    assert row(out, "lakestream.table.compression")[1:] == ["snappy", "namespace"]
    rc, out, err = _cli("namespace", "default", "--set", "commit.interval.ms=10",
                        "--data.dir=" + b.data_dir)
    assert rc != 0 and "lakestream.table.commit.interval.ms" in err
