"""Connection and request-memory limits under hostile clients (issue 17 §1, §4).

- Descriptor exhaustion: under a 256-descriptor limit, 400 idle Kafka
  connections and an HTTP request used to leave the loop spinning at 100 %
  CPU in the accept callback (400,000 log lines a second, SIGTERM ignored,
  no recovery). Now accepting backs off, one rate-limited line says why, and
  once the clients leave everything works again.
- max.connections.per.ip closes connections beyond the per-address limit.
- connections.max.idle.ms closes connections with nothing to do.
- queued.max.request.bytes bounds memory of frames being received: many
  connections declaring large frames and sending them no longer hold a frame
  each in memory."""

import os
import signal
import socket
import struct
import time
import urllib.request

import pytest

from kafka_util import create_topic, produce_all, producer, unique_topic
from lsbroker import rss_mb, sanitized_build


pytestmark = pytest.mark.store_agnostic  # the S3 stage leaves it out (pytest.ini)


def _cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")



def _api_versions_v0(corr):
    body = struct.pack(">hhi", 18, 0, corr) + struct.pack(">h", 4) + b"test"
    return struct.pack(">i", len(body)) + body


def _health(b, timeout=5):
    try:
        with urllib.request.urlopen(b.http_url + "/health", timeout=timeout) as r:
            return r.status
    except OSError:
        return None




@pytest.mark.parametrize("flags", [(), ("--max.connections=2000",)],
                         ids=["default", "max.connections-above-the-limit"])
def test_descriptor_exhaustion_backs_off_and_recovers(own_broker, flags):
    # max.connections above what 256 descriptors allow is capped (with a
    # warning): the Kafka listener stops short of the limit and leaves
    # descriptors for the HTTP server and the stores
    b = own_broker(*flags, nofile=256)
    socks = []
    for _ in range(400):
        s = socket.socket()
        s.setblocking(False)
        try:
            s.connect_ex((b.host, b.port))
        except OSError:
            pass
        socks.append(s)
    time.sleep(1.0)
    _health(b, timeout=2)          # the HTTP thread needs a descriptor too
    cpu0 = _cpu_seconds(b.pid)
    time.sleep(2.0)
    busy = _cpu_seconds(b.pid) - cpu0
    assert busy < 1.0, "broker used %.2f s of CPU in 2 s while the table was full" % busy
    accept_lines = sum(1 for line in b.log_text().splitlines() if "accept" in line)
    assert accept_lines < 20, "%d accept lines logged" % accept_lines
    for s in socks:
        s.close()
    # everything works again once the clients are gone
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and _health(b) != 200:
        time.sleep(0.2)
    assert _health(b) == 200
    t = create_topic(b.bootstrap, unique_topic("afterflood"))
    produce_all(producer(b.bootstrap), t, [{"value": b"ok", "partition": 0}])
    t0 = time.monotonic()
    assert b.stop(timeout=20) == 0        # SIGTERM works
    assert time.monotonic() - t0 < 20


def test_max_connections_per_ip(own_broker):
    b = own_broker("--max.connections.per.ip=5")
    # the harness's readiness probe was a connection too: let its close land
    time.sleep(1.0)
    socks, answered, closed = [], 0, 0
    for i in range(8):
        s = socket.create_connection((b.host, b.port), timeout=5)
        socks.append(s)
    for i, s in enumerate(socks):
        try:
            s.sendall(_api_versions_v0(i))
            data = s.recv(4)
            if data:
                answered += 1
            else:
                closed += 1
        except OSError:
            closed += 1
    assert answered == 5 and closed == 3, (answered, closed)
    for s in socks:
        s.close()
    # the slots come back
    time.sleep(0.5)
    s = socket.create_connection((b.host, b.port), timeout=5)
    s.sendall(_api_versions_v0(99))
    assert s.recv(4)
    s.close()


def test_idle_connections_are_closed(own_broker):
    b = own_broker("--connections.max.idle.ms=1000")
    s = socket.create_connection((b.host, b.port), timeout=10)
    s.sendall(_api_versions_v0(1))
    assert s.recv(4)
    s.recv(65536)
    t0 = time.monotonic()
    assert s.recv(1) == b""            # closed by the broker, not by us
    assert 0.5 < time.monotonic() - t0 < 8
    s.close()


def test_request_memory_is_bounded(own_broker):
    b = own_broker("--socket.request.max.bytes=64MiB", "--queued.max.request.bytes=16MiB")
    base = rss_mb(b.pid)
    socks = []
    chunk = b"\0" * (1 << 20)
    for _ in range(12):
        s = socket.create_connection((b.host, b.port), timeout=5)
        s.setblocking(False)
        s.send(struct.pack(">i", 48 << 20))   # a 48 MiB frame, sent but never finished
        socks.append(s)
    deadline = time.monotonic() + 4
    while time.monotonic() < deadline:
        for s in socks:
            try:
                s.send(chunk)
            except (BlockingIOError, OSError):
                pass
        time.sleep(0.01)
    grown = rss_mb(b.pid) - base
    for s in socks:
        s.close()
    if not sanitized_build(b.binary):
        # one 48 MiB frame may be received at a time (nothing else reserved),
        # plus buffers; twelve used to be
        assert grown < 160, "broker RSS grew %.0f MiB" % grown
    assert _health(b) == 200
