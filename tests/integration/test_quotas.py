"""Client quotas (issue 30/34): Kafka's kafka-configs sets and describes
them, AlterClientQuotas refuses what it does not apply (naming it), a producer
or consumer over its byte rate is throttled (throttle_time_ms, a muted
connection) while an unthrottled client on the same broker keeps its pace,
and a quota set on one broker applies on another broker of the cluster.
"""

import json
import os
import socket
import struct
import subprocess
import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer

import kafka_util
import lsbroker
from test_sasl import sasl_broker  # noqa: F401 (fixture)

pytestmark = pytest.mark.store_agnostic  # the S3 stage leaves it out (pytest.ini)


TOOLS_LIB = os.path.join(lsbroker.ROOT, ".cache", "java", "tools")
JVM = ["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]


def kafka_configs(bootstrap, *args):
    if not os.path.exists(TOOLS_LIB) or not any(f.startswith("kafka_2.13-")
                                                for f in os.listdir(TOOLS_LIB)):
        pytest.fail("kafka_2.13 (ConfigCommand) missing from .cache/java/tools: run "
                    "tools/install-deps.sh test", pytrace=False)
    r = subprocess.run(JVM + ["-cp", os.path.join(TOOLS_LIB, "*"), "org.apache.kafka.tools.ConfigCommand",
                              "--bootstrap-server", bootstrap] + list(args),
                       capture_output=True, text=True, timeout=180)
    return r.returncode, r.stdout + r.stderr


# ---- raw AlterClientQuotas / DescribeClientQuotas v0 (what no Python client sends)

def _str(s):
    if s is None:
        return struct.pack(">h", -1)
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def _call(bootstrap, key, body):
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=30) as s:
        req = struct.pack(">hhi", key, 0, 7) + _str("raw-quotas") + body
        s.sendall(struct.pack(">i", len(req)) + req)
        n = struct.unpack(">i", _recv(s, 4))[0]
        return _recv(s, n)


def _recv(s, n):
    out = b""
    while len(out) < n:
        chunk = s.recv(n - len(out))
        assert chunk, "connection closed"
        out += chunk
    return out


class _R:
    def __init__(self, b):
        self.b, self.p = b, 0

    def take(self, fmt):
        v = struct.unpack_from(fmt, self.b, self.p)
        self.p += struct.calcsize(fmt)
        return v[0]

    def str(self):
        n = self.take(">h")
        if n < 0:
            return None
        v = self.b[self.p:self.p + n].decode()
        self.p += n
        return v


def alter_raw(bootstrap, entries, validate_only=False):
    """entries: [({type: name or None}, [(key, value, remove)])] -> [(code, message)]."""
    body = struct.pack(">i", len(entries))
    for entity, ops in entries:
        body += struct.pack(">i", len(entity))
        for t, n in entity.items():
            body += _str(t) + _str(n)
        body += struct.pack(">i", len(ops))
        for k, v, rm in ops:
            body += _str(k) + struct.pack(">d?", v, rm)
    body += struct.pack(">?", validate_only)
    r = _R(_call(bootstrap, 49, body))
    r.take(">i")  # correlation id
    r.take(">i")  # throttle
    out = []
    for _ in range(r.take(">i")):
        code, msg = r.take(">h"), r.str()
        for _ in range(r.take(">i")):
            r.str(), r.str()
        out.append((code, msg))
    return out


def describe_raw(bootstrap, components, strict=False):
    """components: [(type, match_type, match)] -> (code, message, {entity: {key: value}})."""
    body = struct.pack(">i", len(components))
    for t, mt, m in components:
        body += _str(t) + struct.pack(">b", mt) + _str(m)
    body += struct.pack(">?", strict)
    r = _R(_call(bootstrap, 48, body))
    r.take(">i")
    r.take(">i")
    code, msg = r.take(">h"), r.str()
    found = {}
    n = r.take(">i")
    for _ in range(max(n, 0)):
        ent = tuple(sorted((r.str(), r.str()) for _ in range(r.take(">i"))))
        found[ent] = {r.str(): r.take(">d") for _ in range(r.take(">i"))}
    return code, msg, found


INVALID_REQUEST = 42


# ---- tests


def test_kafka_configs_sets_describes_and_deletes_quotas(broker):
    """Kafka's own tool, at its defaults: --alter --add-config on a user, a
    client id, the default client id and a (user, client id) pair, then
    --describe shows them and --delete-config removes one."""
    b = broker.bootstrap
    rc, out = kafka_configs(b, "--alter", "--add-config",
                            "producer_byte_rate=1048576,consumer_byte_rate=2097152",
                            "--entity-type", "users", "--entity-name", "alice")
    assert rc == 0, out
    rc, out = kafka_configs(b, "--alter", "--add-config", "request_percentage=50",
                            "--entity-type", "clients", "--entity-default")
    assert rc == 0, out
    rc, out = kafka_configs(b, "--alter", "--add-config", "producer_byte_rate=4096",
                            "--entity-type", "users", "--entity-name", "alice",
                            "--entity-type", "clients", "--entity-name", "app-1")
    assert rc == 0, out
    rc, out = kafka_configs(b, "--describe", "--entity-type", "users", "--entity-name", "alice")
    assert rc == 0, out
    assert "producer_byte_rate=1048576" in out and "consumer_byte_rate=2097152" in out, out
    rc, out = kafka_configs(b, "--describe", "--entity-type", "clients", "--entity-default")
    assert rc == 0 and "request_percentage=50" in out, out
    rc, out = kafka_configs(b, "--describe", "--entity-type", "users", "--entity-name", "alice",
                            "--entity-type", "clients", "--entity-name", "app-1")
    assert rc == 0 and "producer_byte_rate=4096" in out, out
    rc, out = kafka_configs(b, "--alter", "--delete-config", "consumer_byte_rate",
                            "--entity-type", "users", "--entity-name", "alice")
    assert rc == 0, out
    code, _, found = describe_raw(b, [("user", 0, "alice")], strict=True)
    assert code == 0 and found == {(("user", "alice"),): {"producer_byte_rate": 1048576.0}}, found
    # the quotas survive a restart (they are in the metadata store)
    broker.restart()
    code, _, found = describe_raw(broker.bootstrap, [("client-id", 1, None)])
    assert found == {(("client-id", None),): {"request_percentage": 50.0}}, found


def test_what_is_not_applied_is_refused_by_name(broker):
    b = broker.bootstrap
    got = alter_raw(b, [({"user": "bob"}, [("producer_byte_rate", 1000, False),
                                           ("io_thread_units", 5, False)]),
                        ({"ip": "10.0.0.1"}, [("connection_creation_rate", 10, False)]),
                        ({"user": "carol"}, [("consumer_byte_rate", -5, False)]),
                        ({"user": "dave"}, [("consumer_byte_rate", 500, False)])])
    assert got[0][0] == INVALID_REQUEST and "io_thread_units" in got[0][1], got
    assert got[1][0] == INVALID_REQUEST and "'ip'" in got[1][1], got
    assert got[2][0] == INVALID_REQUEST and "consumer_byte_rate" in got[2][1], got
    assert got[3] == (0, None), got
    code, msg, _ = describe_raw(b, [("ip", 2, None)])
    assert code == INVALID_REQUEST and "'ip'" in msg
    # refused entries stored nothing; validateOnly stores nothing
    assert alter_raw(b, [({"user": "erin"}, [("producer_byte_rate", 1000, False)])],
                     validate_only=True) == [(0, None)]
    code, _, found = describe_raw(b, [("user", 2, None)])
    assert found == {(("user", "dave"),): {"consumer_byte_rate": 500.0}}, found
    # Kafka's tool shows the broker's error
    rc, out = kafka_configs(b, "--alter", "--add-config", "producer_byte_rate=0.5",
                            "--entity-type", "clients", "--entity-name", "x")
    assert rc != 0 and "producer_byte_rate" in out, out


def produce_timed(bootstrap, topic, client_id, nbytes, msg=1000, round_bytes=30000, **conf):
    """Produces nbytes in msg-byte records, waiting for each round_bytes to
    be delivered (a steady client, not one burst); (seconds, most throttle ms
    the client's statistics reported)."""
    throttle = [0]

    def stats(s):
        for br in json.loads(s).get("brokers", {}).values():
            throttle[0] = max(throttle[0], br.get("throttle", {}).get("max", 0))
    p = Producer(dict({"bootstrap.servers": bootstrap, "client.id": client_id,
                       "statistics.interval.ms": 500, "stats_cb": stats}, **conf))
    errors = []

    def delivered(err, m):
        if err:
            errors.append(err)
    start = time.monotonic()
    for _ in range(nbytes // round_bytes):
        for _ in range(round_bytes // msg):
            p.produce(topic, value=b"x" * msg, on_delivery=delivered)
        assert p.flush(120) == 0
    took = time.monotonic() - start
    assert not errors, errors[:3]
    deadline = time.monotonic() + 3  # one more statistics round
    while time.monotonic() < deadline:
        p.poll(0.2)
    return took, throttle[0]


@pytest.mark.parametrize("conf", [{}, {"linger.ms": 0}], ids=["defaults", "linger0"])
def test_producer_over_its_byte_rate_is_throttled(own_broker, conf):
    """quota.window.num=2 so the test does not wait for Kafka's ten-second
    allowance: 'greedy' (100 kB/s) takes about its quota's time for 600 kB
    and its client reports throttle time; 'free' on the same broker sends the
    same bytes far faster and is never throttled."""
    b = own_broker("--quota.window.num=2")
    quota = 100000
    rc, out = kafka_configs(b.bootstrap, "--alter", "--add-config",
                            "producer_byte_rate=%d" % quota, "--entity-type", "clients",
                            "--entity-name", "greedy")
    assert rc == 0, out
    topic = kafka_util.unique_topic()
    kafka_util.create_topic(b.bootstrap, topic)
    nbytes = 600000
    took_free, thr_free = produce_timed(b.bootstrap, topic, "free", nbytes, **conf)
    took, thr = produce_timed(b.bootstrap, topic, "greedy", nbytes, **conf)
    # measured rate near the quota: at most twice it (generous), never the free rate
    assert nbytes / took < 2 * quota, (took, took_free)
    assert thr > 0 and thr_free == 0, (thr, thr_free)
    assert took > 3 * took_free, (took, took_free)


def test_consumer_over_its_byte_rate_is_throttled(own_broker):
    """'slow-reader' (100 kB/s) reads 500 kB at about its quota and its client
    reports throttle time; 'fast-reader' on the same broker is not throttled.
    Consumers at librdkafka's defaults."""
    b = own_broker("--quota.window.num=2")
    topic = kafka_util.unique_topic()
    kafka_util.create_topic(b.bootstrap, topic)
    produce_timed(b.bootstrap, topic, "loader", 1000000)
    quota = 100000
    rc, out = kafka_configs(b.bootstrap, "--alter", "--add-config",
                            "consumer_byte_rate=%d" % quota, "--entity-type", "clients",
                            "--entity-name", "slow-reader")
    assert rc == 0, out

    def read_all(client_id):
        throttle = [0]

        def stats(s):
            for br in json.loads(s).get("brokers", {}).values():
                throttle[0] = max(throttle[0], br.get("throttle", {}).get("max", 0))
        c = Consumer({"bootstrap.servers": b.bootstrap, "client.id": client_id,
                      "group.id": "g-" + client_id, "auto.offset.reset": "earliest",
                      "statistics.interval.ms": 500, "stats_cb": stats})
        c.subscribe([topic])
        got, start = 0, time.monotonic()
        while got < 500:  # 500 kB
            m = c.poll(1)
            if m is not None and not m.error():
                got += 1
        took = time.monotonic() - start
        for _ in range(4):
            c.poll(0.5)
        c.close()
        return took, throttle[0]
    took_free, thr_free = read_all("fast-reader")
    took, thr = read_all("slow-reader")
    assert 500000 / took < 2 * quota, (took, took_free)
    assert thr > 0 and thr_free == 0, (thr, thr_free)


def test_quota_set_on_one_broker_applies_on_another(cluster):
    """Two brokers of one cluster (etcd): a quota altered through broker 1
    is described by broker 2 and throttles a producer connected to broker 2."""
    b1 = cluster.add("--quota.window.num=2")
    b2 = cluster.add("--quota.window.num=2")
    rc, out = kafka_configs(b1.bootstrap, "--alter", "--add-config", "producer_byte_rate=100000",
                            "--entity-type", "clients", "--entity-default")
    assert rc == 0, out
    lsbroker.wait_until(lambda: describe_raw(b2.bootstrap, [("client-id", 1, None)])[2] ==
                        {(("client-id", None),): {"producer_byte_rate": 100000.0}}, 30,
                        what="broker 2 sees the quota")
    topic = kafka_util.unique_topic()
    kafka_util.create_topic(b2.bootstrap, topic)
    took, thr = produce_timed(b2.bootstrap, topic, "any-client", 600000)
    assert thr > 0 and 600000 / took < 200000, (took, thr)


def test_user_quota_applies_to_the_sasl_user(sasl_broker, tmp_path):
    """With SASL on, a users quota throttles the authenticated user (alice)
    and not another user (bob) on the same broker, whatever their client ids."""
    sb = sasl_broker("--sasl.enabled.mechanisms=SCRAM-SHA-256", "--quota.window.num=2")
    sb.add_user("alice", "Alice-pw-1")
    sb.add_user("bob", "Bob-pw-1")
    props = tmp_path / "admin.properties"
    props.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
        "username=\"bob\" password=\"Bob-pw-1\";\n")
    rc, out = kafka_configs(sb.bootstrap, "--command-config", str(props), "--alter",
                            "--add-config", "producer_byte_rate=100000",
                            "--entity-type", "users", "--entity-name", "alice")
    assert rc == 0, out
    topic = kafka_util.unique_topic()

    def sasl(user, pw):
        return {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256",
                "sasl.username": user, "sasl.password": pw}
    took_bob, thr_bob = produce_timed(sb.bootstrap, topic, "same-id", 600000,
                                      **sasl("bob", "Bob-pw-1"))
    took, thr = produce_timed(sb.bootstrap, topic, "same-id", 600000,
                              **sasl("alice", "Alice-pw-1"))
    assert thr > 0 and 600000 / took < 200000, (took, took_bob)
    assert thr_bob == 0, thr_bob


def test_request_percentage_mutes_a_busy_client(own_broker):
    """request_percentage: a client over its share of the broker's loop time
    has its connection muted (its next answers wait), while a client without
    the quota on the same broker is answered at once."""
    b = own_broker("--quota.window.num=2")
    rc, out = kafka_configs(b.bootstrap, "--alter", "--add-config", "request_percentage=0.0001",
                            "--entity-type", "clients", "--entity-name", "busy")
    assert rc == 0, out
    host, port = b.bootstrap.rsplit(":", 1)

    def ask(client_id, n=6):
        """n Metadata requests one after another; seconds taken."""
        with socket.create_connection((host, int(port)), timeout=60) as s:
            start = time.monotonic()
            for i in range(n):
                req = struct.pack(">hhi", 3, 0, i) + _str(client_id) + struct.pack(">i", 0)
                s.sendall(struct.pack(">i", len(req)) + req)
                size = struct.unpack(">i", _recv(s, 4))[0]
                assert struct.unpack(">i", _recv(s, size)[:4])[0] == i
            return time.monotonic() - start
    took_free = ask("calm")
    took = ask("busy")
    # muted at least once for a good part of the (two-second) window
    assert took >= 0.5 and took > took_free, (took, took_free)
