"""GET /metrics (issue 31) and the tables as read-only consumer groups.

/metrics is scraped while clients produce and consume, every scrape is parsed
whole by the official Prometheus client's parsers (text 0.0.4, and
OpenMetrics when the Accept header asks for it), and the counters move by
exactly what the test did: records produced = the produce counter's delta.

A table appears as the consumer group lakestream.table.<namespace>.<table>:
Kafka's own ConsumerGroupCommand (--describe, --list) and confluent-kafka's
AdminClient.list_consumer_group_offsets read its committed offsets, its lag
drops to 0 once the table has committed everything, /metrics shows the same
lag, and writes to it (commit, join, delete, offset delete) are refused."""

import os
import subprocess
import threading
import urllib.request

import pytest
from confluent_kafka import (Consumer, ConsumerGroupTopicPartitions, KafkaException,
                             TopicPartition)
from confluent_kafka.admin import AdminClient

import lsbroker
from kafka_util import consume, create_topic, produce_all, producer, unique_topic, wait_topic

FAST = ("--compaction.interval.ms=200",)
TOOLS_LIB = os.path.join(lsbroker.ROOT, ".cache", "java", "tools")
JVM = ["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]


def scrape(b, openmetrics=False):
    req = urllib.request.Request(b.http_url + "/metrics")
    if openmetrics:
        req.add_header("Accept", "application/openmetrics-text; version=1.0.0")
    with urllib.request.urlopen(req, timeout=30) as r:
        return r.headers.get("Content-Type"), r.read().decode()


def families(b):
    """Every family of a text-format scrape, parsed by prometheus_client."""
    from prometheus_client.parser import text_string_to_metric_families
    _ctype, body = scrape(b)
    return {f.name: f for f in text_string_to_metric_families(body)}


def value(fams, family, sample, **labels):
    """The value of sample (a full sample name) of family with these labels; 0 when absent."""
    f = fams.get(family)
    for s in f.samples if f else []:
        if s.name == sample and all(s.labels.get(k) == v for k, v in labels.items()):
            return s.value
    return 0


def wait_until(fn, what, timeout=60):
    import time
    deadline = time.monotonic() + timeout
    while True:
        v = fn()
        if v:
            return v
        assert time.monotonic() < deadline, "timed out waiting for " + what
        time.sleep(0.2)


def test_metrics_count_exactly_what_was_done_under_load(broker):
    from prometheus_client.openmetrics.parser import \
        text_string_to_metric_families as om_families
    from prometheus_client.parser import text_string_to_metric_families
    topic = unique_topic("met")
    create_topic(broker.bootstrap, topic, partitions=3)
    before = families(broker)
    # scrapes run concurrently with the load; each must parse whole
    stop = threading.Event()
    errors, scrapes = [], [0]

    def scraper():
        while not stop.is_set():
            try:
                _ct, body = scrape(broker)
                list(text_string_to_metric_families(body))
                scrapes[0] += 1
            except Exception as e:  # reported by the test thread
                errors.append(repr(e))
                return

    t = threading.Thread(target=scraper)
    t.start()
    try:
        p = producer(broker.bootstrap, **{"linger.ms": 5})
        records = [{"value": b"v%05d" % i, "key": b"k%d" % (i % 7)} for i in range(3000)]
        dl = produce_all(p, topic, records)
        assert len(dl.acked) == 3000
        got = consume(broker.bootstrap, topic, range(3))
        assert sum(len(v) for v in got.values()) == 3000
    finally:
        stop.set()
        t.join()
    assert not errors, errors
    assert scrapes[0] > 0
    after = families(broker)
    produced = value(after, "lakestream_produce_records", "lakestream_produce_records_total",
                     topic=topic) - value(before, "lakestream_produce_records",
                                          "lakestream_produce_records_total", topic=topic)
    assert produced == 3000
    assert value(after, "lakestream_produce_bytes", "lakestream_produce_bytes_total",
                 topic=topic) > 3000 * 6
    fetched = value(after, "lakestream_fetch_records", "lakestream_fetch_records_total",
                    topic=topic)
    assert fetched >= 3000  # a client may fetch a record again; never fewer
    # request latency per API: cumulative buckets ending in +Inf == _count
    h = after["lakestream_kafka_request_duration_seconds"]
    for api in ("Produce", "Fetch", "Metadata"):
        buckets = [(s.labels["le"], s.value) for s in h.samples
                   if s.name.endswith("_bucket") and s.labels["api"] == api]
        assert buckets and buckets[-1][0] == "+Inf"
        counts = [v for _le, v in buckets]
        assert counts == sorted(counts)
        assert counts[-1] == value(after, h.name, h.name + "_count", api=api) > 0
    assert value(after, "lakestream_wal_objects", "lakestream_wal_objects_total") > \
        value(before, "lakestream_wal_objects", "lakestream_wal_objects_total")
    assert value(after, "lakestream_object_store_operation_duration_seconds",
                 "lakestream_object_store_operation_duration_seconds_count", operation="put") > 0
    assert value(after, "lakestream_metadata_store_operation_duration_seconds",
                 "lakestream_metadata_store_operation_duration_seconds_count",
                 operation="txn") > 0
    assert value(after, "process_resident_memory_bytes", "process_resident_memory_bytes") > 0
    assert value(after, "lakestream_kafka_connections", "lakestream_kafka_connections") >= 0
    # OpenMetrics on request, parsed by the OpenMetrics parser (it requires # EOF)
    ctype, body = scrape(broker, openmetrics=True)
    assert ctype.startswith("application/openmetrics-text")
    om = {f.name: f for f in om_families(body)}
    assert om["lakestream_produce_records"].type == "counter"
    ctype, _ = scrape(broker)
    assert ctype.startswith("text/plain; version=0.0.4")


def kafka_consumer_groups(bootstrap, *args):
    if not os.path.isdir(TOOLS_LIB) or not any(f.startswith("kafka-tools-")
                                               for f in os.listdir(TOOLS_LIB)):
        pytest.fail("no Kafka tools jars in %s; run tools/install-deps.sh test" % TOOLS_LIB,
                    pytrace=False)
    cmd = JVM + ["-cp", os.path.join(TOOLS_LIB, "*"),
                 "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
                 "--bootstrap-server", bootstrap] + list(args)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def describe_rows(out, topic):
    """Rows of --describe for topic: {partition: (current offset, log end, lag)}."""
    rows = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 6 and f[1] == topic:
            cur = None if f[3] == "-" else int(f[3])
            lag = None if f[5] == "-" else int(f[5])
            rows[int(f[2])] = (cur, int(f[4]), lag)
    return rows


def admin_offsets(bootstrap, group):
    a = AdminClient({"bootstrap.servers": bootstrap})
    fut = a.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])
    res = fut[group].result(30)
    return {tp.partition: tp.offset for tp in res.topic_partitions}


def test_table_lag_as_consumer_group(broker_factory):
    b = broker_factory(*FAST)
    a = AdminClient({"bootstrap.servers": b.bootstrap})
    topic = unique_topic("orders")
    group = "lakestream.table.default.%s" % topic
    from confluent_kafka.admin import NewTopic
    a.create_topics([NewTopic(topic, 2, 1, config={
        "lakestream.table.enabled": "true",
        "lakestream.table.commit.interval.ms": "1000"})])[topic].result(30)
    wait_topic(b.bootstrap, topic, 2)
    p = producer(b.bootstrap)
    produce_all(p, topic, [{"value": b"a%d" % i, "partition": 0} for i in range(40)])
    produce_all(p, topic, [{"value": b"b%d" % i, "partition": 1} for i in range(25)])

    # the table commits everything: its group's offsets reach the log ends
    wait_until(lambda: admin_offsets(b.bootstrap, group) == {0: 40, 1: 25},
               "the table's group offsets to reach 40/25")
    r = kafka_consumer_groups(b.bootstrap, "--describe", "--group", group)
    assert r.returncode == 0, r.stdout + r.stderr
    assert describe_rows(r.stdout, topic) == {0: (40, 40, 0), 1: (25, 25, 0)}, r.stdout
    r = kafka_consumer_groups(b.bootstrap, "--list")
    assert r.returncode == 0 and group in r.stdout.split(), r.stdout + r.stderr

    # more records: the lag shows until the next commit takes them
    produce_all(p, topic, [{"value": b"c%d" % i, "partition": 0} for i in range(10)])
    fams = families(b)
    lag_now = value(fams, "lakestream_consumer_group_lag_records",
                    "lakestream_consumer_group_lag_records", group=group, topic=topic)
    offs = admin_offsets(b.bootstrap, group)
    assert lag_now in (0, 10) and offs[0] in (40, 50)  # the commit may already have run
    wait_until(lambda: admin_offsets(b.bootstrap, group) == {0: 50, 1: 25},
               "the next commit to take the 10 new records")
    r = kafka_consumer_groups(b.bootstrap, "--describe", "--group", group)
    assert describe_rows(r.stdout, topic) == {0: (50, 50, 0), 1: (25, 25, 0)}, r.stdout
    fams = wait_until(lambda: (lambda f: f if value(
        f, "lakestream_table_lag_records", "lakestream_table_lag_records",
        namespace="default", table=topic) == 0 and "lakestream_table_lag_records" in f
        else None)(families(b)), "the table's lag metric at 0")
    assert value(fams, "lakestream_consumer_group_lag_records",
                 "lakestream_consumer_group_lag_records", group=group, topic=topic) == 0
    assert value(fams, "lakestream_table_rows", "lakestream_table_rows",
                 namespace="default", table=topic) == 75
    assert value(fams, "lakestream_table_snapshots", "lakestream_table_snapshots",
                 namespace="default", table=topic) >= 2

    # writes are refused with GROUP_AUTHORIZATION_FAILED
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": group,
                  "enable.auto.commit": False})
    try:
        with pytest.raises(KafkaException) as e:
            c.commit(offsets=[TopicPartition(topic, 0, 3)], asynchronous=False)
        assert e.value.args[0].name() == "GROUP_AUTHORIZATION_FAILED", str(e.value)
    finally:
        c.close()
    assert admin_offsets(b.bootstrap, group) == {0: 50, 1: 25}
    r = kafka_consumer_groups(b.bootstrap, "--delete", "--group", group)
    assert "GroupAuthorizationException" in r.stdout + r.stderr or \
        "Not authorized" in r.stdout + r.stderr, r.stdout + r.stderr
    r = kafka_consumer_groups(b.bootstrap, "--delete-offsets", "--group", group, "--topic", topic)
    assert "GroupAuthorizationException" in r.stdout + r.stderr, r.stdout + r.stderr
    r = kafka_consumer_groups(b.bootstrap, "--reset-offsets", "--group", group, "--topic", topic,
                              "--to-earliest", "--execute")
    assert "GroupAuthorizationException" in r.stdout + r.stderr, r.stdout + r.stderr
    assert admin_offsets(b.bootstrap, group) == {0: 50, 1: 25}
    # kcat's balanced consumer under the table's group id stops with the reason
    r = subprocess.run(["kcat", "-b", b.bootstrap, "-G", group, topic, "-e", "-c", "1"],
                       capture_output=True, text=True, timeout=60)
    assert "Group authorization failed" in r.stderr, r.stderr
    # a consumer subscribing under the table's group id is told so at once
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": group,
                  "auto.offset.reset": "earliest"})
    try:
        c.subscribe([topic])
        err = wait_until(lambda: (lambda m: m.error() if m is not None and m.error() else None)(
            c.poll(0.5)), "the subscribing consumer's error")
        assert err.name() == "GROUP_AUTHORIZATION_FAILED", err
    finally:
        c.close()


# Families the broker writes only once such an event happened (a family is
# exposed from its first series on), or only on S3.
EVENT_ONLY = {"lakestream_object_store_errors", "lakestream_metadata_store_errors",
              "lakestream_wal_flush_failures", "lakestream_table_commit_failures",
              "lakestream_table_skipped_records", "lakestream_s3_requests"}


def test_dashboard_uses_metrics_the_broker_exposes(broker_factory):
    """tools/grafana/lakestream.json queries only names /metrics writes."""
    import json
    import re
    b = broker_factory(*FAST)
    a = AdminClient({"bootstrap.servers": b.bootstrap})
    topic = unique_topic("dash")
    from confluent_kafka.admin import NewTopic
    a.create_topics([NewTopic(topic, 1, 1, config={
        "lakestream.table.enabled": "true",
        "lakestream.table.commit.interval.ms": "1000"})])[topic].result(30)
    wait_topic(b.bootstrap, topic, 1)
    produce_all(producer(b.bootstrap), topic, [{"value": b"d%d" % i} for i in range(20)])
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "dash-readers",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        c.subscribe([topic])
        n = 0
        while n < 20:
            m = c.poll(1)
            if m is not None and not m.error():
                n += 1
        c.commit(asynchronous=False)
    finally:
        c.close()
    fams = wait_until(lambda: (lambda f: f if "lakestream_table_rows" in f and
                               "lakestream_consumer_group_lag_records" in f else None)(
        families(b)), "the table and group metrics")
    dash = json.load(open(os.path.join(lsbroker.ROOT, "tools", "grafana", "lakestream.json")))
    exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
    assert exprs
    names = set()
    for e in exprs:
        for n in re.findall(r"\b((?:lakestream|process)_[a-z0-9_]+)", e):
            names.add(re.sub(r"_(total|bucket|count|sum)$", "", n))
    missing = sorted(n for n in names - EVENT_ONLY if n not in fams)
    assert not missing, "the dashboard queries names /metrics does not write: %s" % missing
    assert value(fams, "lakestream_consumer_group_lag_records",
                 "lakestream_consumer_group_lag_records", group="dash-readers", topic=topic) == 0
