"""One client must not starve the others (issue 29).

Each hostile client here used to stop every other client's produce: four
connections announcing 64 MiB frames and dripping a byte a second held all of
queued.max.request.bytes; one address opening idle connections took every
Kafka slot for connections.max.idle.ms (10 minutes). The outcome asserted is
the user's: throughout the attack, a new client produces a record and fetches
it back within a generous bound (ROUND_TRIP_S)."""

import socket
import struct
import threading
import time

import pytest
from confluent_kafka import TopicPartition

from kafka_util import consumer, create_topic, producer, unique_topic
from lsbroker import Broker, wait_until

ROUND_TRIP_S = 5.0


@pytest.fixture
def own_broker(tmp_path, request):
    made = []

    def make(*args, nofile=None):
        b = Broker(str(tmp_path / "data"), str(tmp_path / "logs"), list(args))
        b.nofile = nofile
        made.append(b)
        request.node._ls_brokers = made
        b.start()
        return b
    yield make
    for b in made:
        if b.alive():
            b.stop()


def round_trip(b, topic, value, timeout=ROUND_TRIP_S):
    """A new client produces value and a new client fetches it back; True when
    both happen within timeout."""
    deadline = time.monotonic() + timeout
    p = producer(b.bootstrap, message_timeout_ms=int(timeout * 1000))
    got = []
    p.produce(topic, value, partition=0, on_delivery=lambda err, m: got.append((err, m)))
    p.flush(timeout)
    if not got or got[0][0] is not None:
        return False
    c = consumer(b.bootstrap)
    try:
        c.assign([TopicPartition(topic, 0, got[0][1].offset())])
        while time.monotonic() < deadline:
            m = c.poll(0.1)
            if m is not None and not m.error():
                return m.value() == value
        return False
    finally:
        c.close()


def round_trips_throughout(b, topic, seconds):
    """Round trips, one after another, for `seconds`: the ones that failed."""
    failed, n = [], 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        n += 1
        t0 = time.monotonic()
        if not round_trip(b, topic, b"rt-%d" % n):
            failed.append("round trip %d at +%.1f s" % (n, t0 - end + seconds))
    return failed, n


def _connect_from(b, source_ip):
    s = socket.socket()
    s.bind((source_ip, 0))
    s.settimeout(5)
    s.connect((b.host, b.port))
    return s


def _closed_by_broker(s):
    try:
        s.setblocking(False)
        return s.recv(1) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


@pytest.mark.parametrize("flags", [(), ("--request.receive.timeout.ms=2000",)],
                         ids=["default", "short-receive-timeout"])
def test_slow_drip_frames_do_not_hold_the_request_budget(own_broker, flags):
    # 4 x 64 MiB announced = the whole default queued.max.request.bytes
    # (256 MiB): the old broker reserved it all at the size prefix
    b = own_broker(*flags)
    topic = create_topic(b.bootstrap, unique_topic("drip"))
    assert round_trip(b, topic, b"before")
    drips = []
    for i in range(4):
        s = _connect_from(b, "127.0.0.1")
        s.sendall(struct.pack(">i", 64 << 20) + b"\0")
        drips.append(s)
    stop = threading.Event()

    def drip():
        while not stop.wait(1.0):
            for s in drips:
                try:
                    s.send(b"\0")
                except OSError:
                    pass
    t = threading.Thread(target=drip, daemon=True)
    t.start()
    try:
        failed, n = round_trips_throughout(b, topic, 8)
        assert not failed, "%d of %d round trips failed: %s" % (len(failed), n, failed)
        if flags:
            # the slow client loses its own connection (one byte a second
            # is traffic: only the frame's whole-receive deadline catches it)
            wait_until(lambda: all(_closed_by_broker(s) for s in drips), 15,
                       what="dripping connections closed by the broker")
            assert "request.receive.timeout.ms" in b.log_text()
    finally:
        stop.set()
        t.join()
        for s in drips:
            s.close()


@pytest.mark.parametrize("flags", [(), ("--connections.first.request.timeout.ms=1000",)],
                         ids=["default", "short-first-request-timeout"])
def test_one_address_cannot_take_every_connection(own_broker, flags):
    # under 256 descriptors the broker accepts 192 Kafka connections; the
    # old per-address default (1000) let 127.0.0.2 take all of them, silent,
    # for connections.max.idle.ms
    b = own_broker(*flags, nofile=256)
    topic = create_topic(b.bootstrap, unique_topic("addr"))
    hog = []
    for _ in range(250):
        try:
            hog.append(_connect_from(b, "127.0.0.2"))
        except OSError:
            pass
    try:
        failed, n = round_trips_throughout(b, topic, 4)
        assert not failed, "%d of %d round trips failed: %s" % (len(failed), n, failed)
        if flags:
            # a connection that never sends a request is closed quickly
            wait_until(lambda: all(_closed_by_broker(s) for s in hog), 20,
                       what="silent connections closed by the broker")
            assert "connections.first.request.timeout.ms" in b.log_text()
    finally:
        for s in hog:
            s.close()
