"""Kafka listeners (listeners / listener.security.protocol.map /
advertised.listeners, several at once) and TLS on SSL listeners, with real
clients at their defaults.

Certificates are made here with the openssl CLI (a throwaway CA, a server
certificate for 127.0.0.1/localhost, client certificates), never checked in.
"""

import os
import subprocess
import uuid

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient

import lsbroker


# ---------------------------------------------------------------- brokers

class Listeners:
    """A broker started with its own listener list. ports: name -> port
    (PLAINTEXT or the first name is the one the harness waits on)."""

    def __init__(self, tmp_path, request):
        self.tmp_path = tmp_path
        self.request = request
        self.made = []

    def start(self, listeners, *args, ready=None):
        """listeners: [(NAME, host)]; each gets a free port. ready: the name
        whose port the harness polls (default: the first). Returns (broker, ports)."""
        names = [n for n, _ in listeners]
        ports = lsbroker.free_ports(len(listeners) + 2)
        b = lsbroker.Broker(str(self.tmp_path / ("data%d" % len(self.made))),
                            str(self.tmp_path / "logs"), [])
        spec = ",".join("%s://%s:%d" % (n, h, p) for (n, h), p in zip(listeners, ports))
        b.extra_args += ["--listeners=" + spec] + list(args)
        first = names.index(ready) if ready else 0
        b.port = ports[first]
        b.http_port, b.registry_port = ports[-2], ports[-1]
        self.made.append(b)
        self.request.node._ls_brokers = self.made
        b.start()
        return b, dict(zip(names, ports))

    def finish(self):
        problems = []
        for b in self.made:
            if b.alive():
                b.stop()
            problems += b.final_check() or []
        return problems


@pytest.fixture
def listeners(tmp_path, request):
    ls = Listeners(tmp_path, request)
    yield ls
    problems = ls.finish()
    assert not problems, problems


def start_failure(tmp_path, *args):
    """Runs `lakestream serve` with args; returns (exit code, output) of a
    start expected to fail."""
    binary = lsbroker.binary_path()
    p = subprocess.run([binary, "serve", "--data.dir=%s" % (tmp_path / "fail"),
                        "--http.listen=", "--schema.registry.listen="] + list(args),
                       stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
    return p.returncode, (p.stdout + p.stderr).decode(errors="replace")


def metadata_brokers(conf):
    md = AdminClient(conf).list_topics(timeout=20)
    return sorted((b.host, b.port) for b in md.brokers.values())


def produce_consume(conf, n=20):
    """Produces n records to a new topic and reads them back through conf."""
    topic = "t-" + uuid.uuid4().hex[:8]
    p = Producer(dict(conf))
    for i in range(n):
        p.produce(topic, value=b"v%d" % i)
    assert p.flush(30) == 0
    c = Consumer(dict(conf, **{"group.id": "g-" + topic, "auto.offset.reset": "earliest"}))
    c.subscribe([topic])
    got = []
    try:
        while len(got) < n:
            m = c.poll(30)
            assert m is not None, "no record within 30 s (%d of %d)" % (len(got), n)
            assert m.error() is None, m.error()
            got.append(m.value())
    finally:
        c.close()
    assert got == [b"v%d" % i for i in range(n)]


# ---------------------------------------------------------------- listeners

def test_two_listeners_each_advertises_its_own(listeners):
    """Two PLAINTEXT listeners under their own names: Metadata answers each
    client with the addresses of the listener it connected through (Kafka's
    rule), and both carry produce and consume."""
    b, ports = listeners.start(
        [("INTERNAL", "127.0.0.1"), ("EXTERNAL", "127.0.0.1")],
        "--listener.security.protocol.map=INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT")
    internal = {"bootstrap.servers": "127.0.0.1:%d" % ports["INTERNAL"]}
    external = {"bootstrap.servers": "127.0.0.1:%d" % ports["EXTERNAL"]}
    assert metadata_brokers(internal) == [("127.0.0.1", ports["INTERNAL"])]
    assert metadata_brokers(external) == [("127.0.0.1", ports["EXTERNAL"])]
    produce_consume(internal)
    produce_consume(external)


def test_advertised_listeners_per_name(listeners):
    """advertised.listeners names one listener: that one advertises the given
    address, the other its own."""
    ports = lsbroker.free_ports(1)
    b, ports2 = listeners.start(
        [("INTERNAL", "127.0.0.1"), ("EXTERNAL", "127.0.0.1")],
        "--listener.security.protocol.map=INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT",
        "--advertised.listeners=EXTERNAL://localhost:%d" % ports[0])
    md_ext = AdminClient({"bootstrap.servers": "127.0.0.1:%d" % ports2["EXTERNAL"]}).list_topics(
        timeout=20)
    assert [(x.host, x.port) for x in md_ext.brokers.values()] == [("localhost", ports[0])]
    assert metadata_brokers({"bootstrap.servers": "127.0.0.1:%d" % ports2["INTERNAL"]}) == \
        [("127.0.0.1", ports2["INTERNAL"])]


def test_default_listener_unchanged(broker):
    """No listener settings: one PLAINTEXT listener, as before."""
    assert metadata_brokers({"bootstrap.servers": broker.bootstrap}) == \
        [("127.0.0.1", broker.port)]


@pytest.mark.parametrize("args,want", [
    (["--listeners=SASL_SSL://127.0.0.1:0"], "listener SASL_SSL uses SASL_SSL"),
    (["--listeners=CLIENT://127.0.0.1:0"],
     "listener CLIENT has no security protocol in listener.security.protocol.map"),
    (["--listeners=PLAINTEXT://127.0.0.1:0", "--advertised.listeners=SSL://h:1"],
     "advertised.listeners: SSL is not a listener name in listeners"),
])
def test_bad_listener_settings_refused_at_start(tmp_path, args, want):
    rc, out = start_failure(tmp_path, *args)
    assert rc != 0 and want in out, out
