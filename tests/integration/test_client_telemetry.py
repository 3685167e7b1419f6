"""Client telemetry (KIP-714): client-metrics subscriptions and the broker's
receiver of GetTelemetrySubscriptions (71) and PushTelemetry (72).

Subscriptions are set with Kafka's own kafka-configs (--entity-type
client-metrics) and listed with Admin.listConfigResources; kafka-clients'
producer and consumer, every setting at its default (enable.metrics.push is
true by default), then push their metrics and GET /metrics shows them under
their client instance ids; a changed subscription changes what shows, a
removed one empties it. Raw requests walk the error paths a client can meet
(throttled, unknown subscription id, unsupported compression, too large, a
payload that is not OTLP, after terminating) and see the subscription id
change with the subscription. librdkafka (confluent-kafka) pushes too."""

import base64
import gzip
import os
import subprocess
import threading
import time
import urllib.request

import pytest
from confluent_kafka import Producer

import lsbroker
from kafka_util import create_topic, unique_topic
from test_acls import one_dir, restricted  # noqa: F401 (fixture)
from test_admin_tools import CLIENT_LIBS, JVM, admin_calls, kafka_tool  # noqa: F401 (fixture)
from test_malformed import Conn, Reader, compact_string, frame, header, i8, i32, uvarint

pytestmark = pytest.mark.store_agnostic  # the S3 stage leaves it out (pytest.ini)


HERE = os.path.dirname(os.path.abspath(__file__))
CONFIGS = "org.apache.kafka.tools.ConfigCommand"


# ---------------------------------------------------------------- helpers


def configs(bootstrap, *args, check=True):
    return kafka_tool(CONFIGS, bootstrap, *args, check=check)


def subscribe(bootstrap, name, config):
    configs(bootstrap, "--alter", "--entity-type", "client-metrics", "--entity-name", name,
            "--add-config", config)


def unsubscribe(bootstrap, name):
    configs(bootstrap, "--alter", "--entity-type", "client-metrics", "--entity-name", name,
            "--delete-config", "metrics,interval.ms,match")


def client_series(b, instance_id=None):
    """The lakestream_client_metric samples of a scrape, parsed by
    prometheus_client: [(labels, value)], of one instance when given."""
    from prometheus_client.parser import text_string_to_metric_families
    with urllib.request.urlopen(b.http_url + "/metrics", timeout=30) as r:
        body = r.read().decode()
    out = []
    for f in text_string_to_metric_families(body):
        if f.name == "lakestream_client_metric":
            out += [(s.labels, s.value) for s in f.samples
                    if instance_id is None or s.labels["client_instance_id"] == instance_id]
    return out


def names(series, prefix=""):
    return {labels["name"] for labels, _v in series if labels["name"].startswith(prefix)}


def kafka_id(b):
    """A Uuid as Kafka writes it (Uuid.toString: URL-safe base64, no padding)."""
    return base64.urlsafe_b64encode(b).decode().rstrip("=")


def wait_until(fn, what, timeout=90):
    deadline = time.monotonic() + timeout
    while True:
        v = fn()
        if v:
            return v
        assert time.monotonic() < deadline, "timed out waiting for " + what
        time.sleep(0.25)


# ---------------------------------------------------------------- Java clients


class JavaClients:
    """TelemetryClients.java running on a kafka-clients version: its
    producer's and consumer's client instance ids as they print them."""

    def __init__(self, bootstrap, topic, lib, out_dir):
        cp = os.path.join(lib, "*")
        src = os.path.join(HERE, "java", "telemetry", "TelemetryClients.java")
        r = subprocess.run(["javac", "-nowarn", "-cp", cp, "-d", out_dir, src],
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stdout + r.stderr
        self.p = subprocess.Popen(JVM + ["-cp", out_dir + os.pathsep + cp, "TelemetryClients",
                                         bootstrap, topic],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, text=True)
        self.lines = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for ln in self.p.stdout:
            self.lines.append(ln.strip())

    def id_of(self, role):
        def find():
            return next((ln.split()[1] for ln in self.lines if ln.startswith(role + " ")), None)
        return wait_until(find, role + " client instance id")

    def close(self):
        self.p.stdin.close()
        rc = self.p.wait(timeout=120)
        self.reader.join(timeout=30)
        assert rc == 0 and "CLOSED" in self.lines, self.lines


@pytest.mark.parametrize("version", sorted(CLIENT_LIBS))
def test_java_clients_push_what_the_subscription_asks(broker, tmp_path, version):
    """A subscription for the producer's metrics: within a few intervals the
    producer's org.apache.kafka.producer.* metrics show under its client
    instance id (and client id), the consumer's nothing; moved to the
    consumer's prefix, the consumer's show and the producer's go; removed,
    none stay. Closing the clients (their terminating push) succeeds."""
    topic = unique_topic("tele")
    create_topic(broker.bootstrap, topic, partitions=1)
    subscribe(broker.bootstrap, "java-clients",
              "metrics=org.apache.kafka.producer.,interval.ms=1000,"
              "match=[client_software_name=apache-kafka-java]")
    clients = JavaClients(broker.bootstrap, topic, CLIENT_LIBS[version], str(tmp_path))
    try:
        prod, cons = clients.id_of("PRODUCER"), clients.id_of("CONSUMER")
        assert len(prod) == len(cons) == 22 and prod != cons  # Kafka's Uuid.toString
        shown = wait_until(lambda: names(client_series(broker, prod),
                                         "org.apache.kafka.producer.record.send"),
                           "the producer's metrics")
        assert "org.apache.kafka.producer.record.send.total" in shown, shown
        series = client_series(broker, prod)
        assert all(labels["client_id"].startswith("producer-") for labels, _v in series), series
        assert names(series) == names(series, "org.apache.kafka.producer."), names(series)
        assert client_series(broker, cons) == []
        # the subscription moves to the consumer's metrics
        subscribe(broker.bootstrap, "java-clients", "metrics=org.apache.kafka.consumer.")
        wait_until(lambda: names(client_series(broker, cons), "org.apache.kafka.consumer."),
                   "the consumer's metrics")
        wait_until(lambda: client_series(broker, prod) == [], "the producer's metrics to go")
        # removed: nothing is asked for, nothing stays
        unsubscribe(broker.bootstrap, "java-clients")
        wait_until(lambda: client_series(broker) == [], "every client metric to go")
    finally:
        clients.close()


def test_librdkafka_pushes_its_metrics(broker):
    """confluent-kafka (librdkafka, KIP-714 since 2.5) with its defaults
    pushes what a subscription matching its client id asks for, and its
    produce works as before."""
    topic = unique_topic("rdtele")
    create_topic(broker.bootstrap, topic, partitions=1)
    subscribe(broker.bootstrap, "rdkafka", "metrics=*,interval.ms=1000,match=[client_id=rdk-.*]")
    p = Producer({"bootstrap.servers": broker.bootstrap, "client.id": "rdk-telemetry"})
    delivered = []
    try:
        def some():
            p.produce(topic, b"v", on_delivery=lambda err, msg: delivered.append(err))
            p.poll(0.2)
            return [s for s in client_series(broker) if s[0]["client_id"] == "rdk-telemetry"]
        series = wait_until(some, "librdkafka's metrics")
        assert all(labels["name"].startswith("org.apache.kafka.") for labels, _v in series), series
    finally:
        p.flush(30)
    assert delivered and all(err is None for err in delivered)


# ---------------------------------------------------------------- raw requests


class Telemetry:
    """One connection speaking ApiVersions v3 (as client software
    "raw-test" 1.0), GetTelemetrySubscriptions v0 and PushTelemetry v0."""

    def __init__(self, broker, client_id):
        self.c = Conn(broker)
        self.client_id = client_id
        self.corr = 0
        body = compact_string("raw-test") + compact_string("1.0") + b"\x00"
        resp = self._call(18, 3, body, flexible_header=True, response_tags=False)
        assert Reader(resp).i16() == 0

    def _call(self, key, version, body, flexible_header=True, response_tags=True):
        self.corr += 1
        self.c.send(frame(header(key, version, self.corr, self.client_id, flexible=flexible_header)
                          + body))
        resp = self.c.recv_frame()
        assert resp is not None, "connection closed"
        r = Reader(resp)
        assert r.i32() == self.corr
        if response_tags:
            r.tags()
        return resp[r.pos:]

    def get(self, instance_id=b"\x00" * 16):
        r = Reader(self._call(71, 0, instance_id + b"\x00"))
        r.i32()  # throttle
        out = {"error": r.i16(), "id": r.take(16), "subscription": r.i32()}
        out["compression"] = [r.take(1)[0] for _ in range(r.uvarint() - 1)]
        out["interval"], out["max_bytes"] = r.i32(), r.i32()
        out["delta"] = r.take(1) == b"\x01"
        out["metrics"] = []
        for _ in range(r.uvarint() - 1):
            out["metrics"].append(r.take(r.uvarint() - 1).decode())
        r.tags()
        assert r.done()
        return out

    def push(self, sub, payload, compression=0, terminating=False, subscription=None):
        body = (sub["id"] + i32(sub["subscription"] if subscription is None else subscription)
                + (b"\x01" if terminating else b"\x00") + i8(compression)
                + uvarint(len(payload) + 1) + payload + b"\x00")
        r = Reader(self._call(72, 0, body))
        r.i32()
        err = r.i16()
        r.tags()
        assert r.done()
        return err

    def close(self):
        self.c.close()


def pb_field(num, wt, payload):
    key = uvarint(num << 3 | wt)
    return key + (uvarint(len(payload)) + payload if wt == 2 else payload)


def otlp(name, value, **attrs):
    """MetricsData with one gauge point (opentelemetry-proto metrics.proto)."""
    import struct
    point = b"".join(pb_field(7, 2, pb_field(1, 2, k.encode()) +
                              pb_field(2, 2, pb_field(1, 2, v.encode())))
                     for k, v in attrs.items())
    point += pb_field(4, 1, struct.pack("<d", value))
    metric = pb_field(1, 2, name.encode()) + pb_field(5, 2, pb_field(1, 2, point))
    return pb_field(1, 2, pb_field(2, 2, pb_field(2, 2, metric)))


NONE, THROTTLED, INVALID_REQUEST, UNKNOWN_SUB, BAD_COMPRESSION, TOO_LARGE, INVALID_RECORD = (
    0, 89, 42, 117, 76, 118, 87)


def test_raw_requests_meet_kafkas_rules(broker):
    """A client with a zero instance id gets a new one and its subscription
    (Kafka's compression types, 1 MiB, delta temporality); a push right
    after is taken and shows on /metrics, the next within the interval is
    throttled (as is a get); a wrong subscription id, a compression type
    that does not exist, a payload past the maximum, bytes that are not OTLP
    (plain or gzip) are each refused with Kafka's error; after a terminating
    push the instance's series are gone and it may push no more. The
    subscription id changes with the subscription."""
    subscribe(broker.bootstrap, "raw", "metrics=raw.,interval.ms=200000,"
              "match=[client_id=raw-telemetry-.*,client_software_name=raw-test]")
    t = Telemetry(broker, "raw-telemetry-1")
    try:
        sub = t.get()
        assert sub["error"] == NONE and sub["id"] != b"\x00" * 16
        assert sub["compression"] == [4, 3, 1, 2] and sub["max_bytes"] == 1 << 20
        assert sub["delta"] and sub["interval"] == 200000 and sub["metrics"] == ["raw."]
        iid = kafka_id(sub["id"])
        assert t.push(sub, otlp("raw.temperature", 21.5, room="a b\"c")) == NONE
        [(labels, v)] = client_series(broker, iid)
        assert (labels["name"], labels["room"], labels["client_id"], v) == (
            "raw.temperature", "a b\"c", "raw-telemetry-1", 21.5)
        assert t.push(sub, otlp("raw.temperature", 22)) == THROTTLED
        assert t.get(sub["id"])["error"] == THROTTLED
        # each error on a fresh instance, whose first push may come at once
        for payload, kw, err in [
                (otlp("raw.x", 1), {"subscription": sub["subscription"] ^ 1}, UNKNOWN_SUB),
                (otlp("raw.x", 1), {"compression": 9}, BAD_COMPRESSION),
                (b"\x00" * ((1 << 20) + 1), {}, TOO_LARGE),
                (b"not a protobuf at all", {}, INVALID_RECORD),
                (gzip.compress(b"not a protobuf at all"), {"compression": 1}, INVALID_RECORD),
                (b"\x1f\x8b garbage", {"compression": 1}, INVALID_RECORD)]:
            fresh = t.get()
            assert fresh["error"] == NONE
            assert t.push(fresh, payload, **kw) == err, (kw, err)
        # gzip is accepted, then a terminating push ends the instance
        other = t.get()
        assert t.push(other, gzip.compress(otlp("raw.gz", 3)), compression=1) == NONE
        oid = kafka_id(other["id"])
        assert names(client_series(broker, oid)) == {"raw.gz"}
        assert t.push(other, b"", terminating=True) == NONE
        assert client_series(broker, oid) == []
        assert t.push(other, otlp("raw.gz", 4)) == INVALID_REQUEST
        assert t.push(dict(other, id=b"\x00" * 16), b"") == INVALID_REQUEST
        # the subscription changes: so does its id, at once
        subscribe(broker.bootstrap, "raw", "metrics=raw.other.")
        again = t.get(sub["id"])
        assert again["error"] == NONE and again["id"] == sub["id"]
        assert again["subscription"] != sub["subscription"]
        assert again["metrics"] == ["raw.other."] and again["interval"] == 200000
        assert client_series(broker, iid) == []  # raw.temperature is no longer asked for
    finally:
        t.close()


def test_unmatched_client_gets_the_default_interval_and_no_metrics(broker):
    """As Kafka: no subscription matches, so no metrics and 300000 ms."""
    subscribe(broker.bootstrap, "only-java", "metrics=*,match=[client_software_name=apache-.*]")
    t = Telemetry(broker, "nobody")
    try:
        sub = t.get()
        assert (sub["error"], sub["metrics"], sub["interval"]) == (NONE, [], 300000)
    finally:
        t.close()


# ---------------------------------------------------------------- configs


def test_client_metrics_configs_describe_alter_and_list(broker, admin_calls):
    """kafka-configs sets, describes and deletes a subscription's keys; the
    subscriptions are listed by Admin.listConfigResources and kafka-configs
    --describe without a name; one whose keys are all deleted is gone."""
    subscribe(broker.bootstrap, "sub-a", "metrics=[org.apache.kafka.producer.,"
              "org.apache.kafka.consumer.],interval.ms=60000")
    subscribe(broker.bootstrap, "sub-b", "metrics=*")
    out = configs(broker.bootstrap, "--describe", "--entity-type", "client-metrics",
                  "--entity-name", "sub-a").stdout
    assert "metrics=org.apache.kafka.producer.,org.apache.kafka.consumer." in out, out
    assert "interval.ms=60000" in out, out
    assert admin_calls(broker.bootstrap, "list-config-resources", "CLIENT_METRICS") == [
        "CLIENT_METRICS sub-a", "CLIENT_METRICS sub-b"]
    listed = configs(broker.bootstrap, "--describe", "--entity-type", "client-metrics").stdout
    assert "sub-a" in listed and "sub-b" in listed, listed
    configs(broker.bootstrap, "--alter", "--entity-type", "client-metrics", "--entity-name",
            "sub-a", "--delete-config", "interval.ms")
    out = configs(broker.bootstrap, "--describe", "--entity-type", "client-metrics",
                  "--entity-name", "sub-a").stdout
    assert "interval.ms" not in out and "metrics=" in out, out
    unsubscribe(broker.bootstrap, "sub-b")
    assert admin_calls(broker.bootstrap, "list-config-resources", "CLIENT_METRICS") == [
        "CLIENT_METRICS sub-a"]


def incremental_alter(b, name, ops):
    """One IncrementalAlterConfigs v1 on client-metrics resource name, ops
    [(key, operation, value)]: (error, message)."""
    t = Telemetry(b, "configs")
    try:
        configs_ = uvarint(len(ops) + 1) + b"".join(
            compact_string(k) + i8(op) + compact_string(v) + b"\x00" for k, op, v in ops)
        body = (uvarint(2) + i8(16) + compact_string(name) + configs_ + b"\x00"
                + b"\x00" + b"\x00")  # one resource; ValidateOnly false; tags
        r = Reader(t._call(44, 1, body))
        r.i32()
        assert r.uvarint() == 2
        err = r.i16()
        n = r.uvarint() - 1
        msg = r.take(n).decode() if n >= 0 else None
        return err, msg
    finally:
        t.close()


def test_append_and_subtract_client_metrics_lists(broker):
    """As Kafka: APPEND adds the items a list lacks, SUBTRACT removes those
    named; interval.ms is no list (INVALID_CONFIG naming it)."""
    subscribe(broker.bootstrap, "lists", "metrics=a.,match=[client_id=x]")
    assert incremental_alter(broker, "lists", [("metrics", 2, "b.,a."),
                                               ("match", 3, "client_id=x")]) == (0, None)
    out = configs(broker.bootstrap, "--describe", "--entity-type", "client-metrics",
                  "--entity-name", "lists").stdout
    assert "  metrics=a.,b. " in out and "  match= " in out, out
    err, msg = incremental_alter(broker, "lists", [("interval.ms", 2, "1000")])
    assert err == 40 and "interval.ms" in msg, (err, msg)


@pytest.mark.parametrize("config,named", [
    ("interval.ms=99", "interval.ms"),
    ("interval.ms=3600001", "interval.ms"),
    ("interval.ms=soon", "interval.ms"),
    ("match=[client_name=x]", "client_name=x"),
    ("match=[client_id=(unclosed]", "client_id=(unclosed"),
    ("colour=blue", "colour"),
])
def test_bad_client_metrics_values_are_refused_with_their_name(broker, config, named):
    """INVALID_CONFIG naming the key or pattern; nothing is stored."""
    r = configs(broker.bootstrap, "--alter", "--entity-type", "client-metrics", "--entity-name",
                "bad", "--add-config", config, check=False)
    out = r.stdout + r.stderr
    assert r.returncode != 0 and "InvalidConfigurationException" in out and named in out, out
    listed = configs(broker.bootstrap, "--describe", "--entity-type", "client-metrics").stdout
    assert "bad" not in listed, listed


def test_subscriptions_need_cluster_configs_acls_telemetry_none(one_dir):
    """As Kafka: altering and describing client-metrics resources needs
    ALTER_CONFIGS / DESCRIBE_CONFIGS on the cluster; asking for a
    subscription and pushing need nothing beyond the connection."""
    b = restricted(one_dir)
    for args in (["--alter", "--entity-type", "client-metrics", "--entity-name", "s",
                  "--add-config", "metrics=*"],
                 ["--describe", "--entity-type", "client-metrics", "--entity-name", "s"]):
        r = configs(b.bootstrap, *args, check=False)
        out = r.stdout + r.stderr
        assert r.returncode != 0 and "ClusterAuthorizationException" in out, out
    t = Telemetry(b, "anyone")
    try:
        sub = t.get()
        assert (sub["error"], sub["metrics"]) == (NONE, [])
        assert t.push(sub, b"") == NONE
    finally:
        t.close()
