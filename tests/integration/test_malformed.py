"""Hostile and malformed input over raw sockets against one live broker.

Every test shares one broker (module_broker) on purpose: after each test the
`b` fixture checks that the process is still alive, that a normal
confluent-kafka producer and consumer on a fresh connection still work, and
that the broker logged no ERROR line or sanitizer report for it.

The Kafka encodings are written out here by hand (protocol guide: request
header v1/v2, ApiVersions, Metadata v1, Produce v7, RecordBatch v2) so that
nothing a client library would refuse to send stands between the test and
the broker.
"""

import os
import random
import socket
import struct
import time

import pytest

from confluent_kafka.admin import AdminClient

from lsbroker import rss_mb
from kafka_util import consume, create_topic, produce_all, producer, unique_topic, watermarks

# ---------------------------------------------------------------- encodings


pytestmark = pytest.mark.store_agnostic  # the S3 stage leaves it out (pytest.ini)


def i8(v):
    return struct.pack(">b", v)


def i16(v):
    return struct.pack(">h", v)


def i32(v):
    return struct.pack(">i", v)


def u32(v):
    return struct.pack(">I", v)


def i64(v):
    return struct.pack(">q", v)


def string(s):
    if s is None:
        return i16(-1)
    b = s.encode() if isinstance(s, str) else s
    return i16(len(b)) + b


def kbytes(b):
    if b is None:
        return i32(-1)
    return i32(len(b)) + b


def array(items, enc):
    if items is None:
        return i32(-1)
    return i32(len(items)) + b"".join(enc(x) for x in items)


def uvarint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def varint(v):  # zigzag, as in record fields
    return uvarint((v << 1) ^ (v >> 63))


def compact_string(s):
    b = s.encode() if isinstance(s, str) else s
    return uvarint(len(b) + 1) + b


TAGS_NONE = b"\x00"


def header(api_key, version, corr, client_id="lakestream-raw-test", flexible=False):
    h = i16(api_key) + i16(version) + i32(corr) + string(client_id)
    return h + (TAGS_NONE if flexible else b"")


def frame(payload):
    return i32(len(payload)) + payload


_CRC32C_TABLE = []
for _n in range(256):
    _c = _n
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _CRC32C_TABLE.append(_c)


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = _CRC32C_TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def record(offset_delta, key, value, ts_delta=0, headers=()):
    body = i8(0) + varint(ts_delta) + varint(offset_delta)
    body += varint(-1) if key is None else varint(len(key)) + key
    body += varint(-1) if value is None else varint(len(value)) + value
    body += varint(len(headers))
    for hk, hv in headers:
        body += varint(len(hk)) + hk + (varint(-1) if hv is None else varint(len(hv)) + hv)
    return varint(len(body)) + body


def record_batch(values, base_ts=1_700_000_000_000, magic=2, corrupt_crc=False, count_delta=0,
                 producer_id=-1, producer_epoch=-1, base_sequence=-1, attributes=0, payload=None):
    """A RecordBatch v2. payload replaces the encoded records (e.g. garbage
    claimed to be compressed with the codec in attributes)."""
    recs = b"".join(record(i, b"k%d" % i, v, ts_delta=i) for i, v in enumerate(values))
    if payload is not None:
        recs = payload
    after_crc = (i16(attributes) + i32(len(values) - 1) + i64(base_ts) + i64(base_ts + len(values) - 1)
                 + i64(producer_id) + i16(producer_epoch) + i32(base_sequence)
                 + i32(len(values) + count_delta) + recs)
    crc = crc32c(after_crc)
    if corrupt_crc:
        crc ^= 0xDEADBEEF
    after_len = i32(-1) + i8(magic) + u32(crc) + after_crc
    return i64(0) + i32(len(after_len)) + after_len


def produce_v7(corr, topic, partition, batch, acks=-1):
    body = string(None) + i16(acks) + i32(10000)
    body += array([topic], lambda t: string(t) + array([partition],
                                                         lambda p: i32(p) + kbytes(batch)))
    return frame(header(0, 7, corr) + body)


def parse_produce_v7(resp):
    r = Reader(resp)
    corr = r.i32()
    out = []
    for _ in range(r.i32()):
        name = r.string()
        for _ in range(r.i32()):
            out.append((name, r.i32(), r.i16(), r.i64()))
            r.i64()
            r.i64()
    r.i32()
    return corr, out


class Reader:
    def __init__(self, b):
        self.b = b
        self.pos = 0

    def take(self, n):
        assert self.pos + n <= len(self.b), "response truncated at %d (+%d of %d)" % (self.pos, n, len(self.b))
        v = self.b[self.pos:self.pos + n]
        self.pos += n
        return v

    def i16(self):
        return struct.unpack(">h", self.take(2))[0]

    def i32(self):
        return struct.unpack(">i", self.take(4))[0]

    def i64(self):
        return struct.unpack(">q", self.take(8))[0]

    def uvarint(self):
        shift = v = 0
        while True:
            b = self.take(1)[0]
            v |= (b & 0x7F) << shift
            if not b & 0x80:
                return v
            shift += 7

    def string(self):
        n = self.i16()
        return None if n < 0 else self.take(n).decode()

    def tags(self):
        for _ in range(self.uvarint()):
            self.uvarint()
            self.take(self.uvarint())

    def done(self):
        return self.pos == len(self.b)


# ---------------------------------------------------------------- transport


class Conn:
    def __init__(self, broker, timeout=10.0):
        self.s = socket.create_connection((broker.host, broker.port), timeout=timeout)
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def send(self, data):
        self.s.sendall(data)

    def _recv_exact(self, n):
        buf = b""
        while len(buf) < n:
            chunk = self.s.recv(n - len(buf))
            if not chunk:
                return None
            buf += chunk
        return buf

    def recv_frame(self):
        """Returns the response payload, or None if the broker closed."""
        try:
            h = self._recv_exact(4)
            if h is None:
                return None
            n = struct.unpack(">i", h)[0]
            assert 0 <= n < 64 << 20, "response size %d" % n
            return self._recv_exact(n)
        except ConnectionResetError:
            return None

    def closed_or_response(self, corr, timeout=10.0):
        """Waits for the broker's reaction to a bad request: 'closed', or
        the response payload (whose correlation id must match)."""
        self.s.settimeout(timeout)
        try:
            resp = self.recv_frame()
        except socket.timeout:
            raise AssertionError("broker neither answered nor closed within %.0fs" % timeout)
        if resp is None:
            return "closed"
        assert struct.unpack(">i", resp[:4])[0] == corr, "response with wrong correlation id"
        return resp

    def expect_closed(self, timeout=10.0):
        self.s.settimeout(timeout)
        try:
            while True:
                d = self.s.recv(65536)
                if not d:
                    return
        except ConnectionResetError:
            return
        except socket.timeout:
            raise AssertionError("broker did not close the connection within %.0fs" % timeout)

    def close(self):
        self.s.close()


def api_versions_v0(conn, corr=1):
    conn.send(frame(header(18, 0, corr)))
    resp = conn.recv_frame()
    assert resp is not None, "connection closed on ApiVersions v0"
    r = Reader(resp)
    assert r.i32() == corr
    err = r.i16()
    apis = {}
    for _ in range(r.i32()):
        k, lo, hi = r.i16(), r.i16(), r.i16()
        apis[k] = (lo, hi)
    return err, apis


# ---------------------------------------------------------------- fixtures


def _fd_count(pid):
    try:
        return len(os.listdir("/proc/%d/fd" % pid))
    except (FileNotFoundError, TypeError):
        return None


def healthy(broker):
    """A normal client on a fresh connection still produces and consumes."""
    assert broker.alive(), "broker process died; log tail:\n" + broker.log_tail(30)
    topic = "health-check"
    dl = produce_all(producer(broker.bootstrap, **{"linger.ms": 0}), topic,
                     [{"value": b"ok %f" % time.time()}], flush_timeout=30)
    (part, off, _k, val), = dl.acked
    got = consume(broker.bootstrap, topic, [part], start=off, expect={part: 1}, timeout=30)[part]
    assert got[0].value() == val


@pytest.fixture
def b(module_broker, request):
    request.node._ls_brokers = [module_broker]
    module_broker.problems(only_new=True)
    yield module_broker
    healthy(module_broker)
    probs = module_broker.problems(only_new=True)
    assert not probs, "broker logged errors during this test:\n" + "\n".join(probs[:20])


# ---------------------------------------------------------------- well-formed baselines


def test_api_versions_v0_lists_supported_apis(b):
    c = Conn(b)
    try:
        err, apis = api_versions_v0(c)
    finally:
        c.close()
    assert err == 0
    for key in (0, 1, 2, 3, 18, 19, 20, 22, 23, 32, 37, 60):
        assert key in apis, "ApiKey %d not advertised: %s" % (key, sorted(apis))
    for k, (lo, hi) in apis.items():
        assert 0 <= lo <= hi, (k, lo, hi)
    assert apis[18][1] >= 3


def test_api_versions_v3_flexible(b):
    c = Conn(b)
    try:
        body = compact_string("raw-test") + compact_string("1.0") + TAGS_NONE
        c.send(frame(header(18, 3, 7, flexible=True) + body))
        resp = c.recv_frame()
    finally:
        c.close()
    assert resp is not None
    r = Reader(resp)
    assert r.i32() == 7  # response header v0 even for v3: no tagged fields here
    assert r.i16() == 0
    n = r.uvarint() - 1
    keys = set()
    for _ in range(n):
        keys.add(r.i16())
        r.i16()
        r.i16()
        r.tags()
    r.i32()  # throttle
    r.tags()
    assert r.done(), "trailing bytes in ApiVersions v3 response"
    assert {0, 1, 3, 18} <= keys


def test_api_versions_v99_gets_v0_layout_unsupported_version(b):
    c = Conn(b)
    try:
        body = compact_string("raw-test") + compact_string("1.0") + TAGS_NONE
        c.send(frame(header(18, 99, 42, flexible=True) + body))
        resp = c.recv_frame()
    finally:
        c.close()
    assert resp is not None, "broker closed instead of answering UNSUPPORTED_VERSION"
    r = Reader(resp)
    assert r.i32() == 42
    assert r.i16() == 35  # UNSUPPORTED_VERSION
    n = r.i32()
    assert 0 < n < 1000
    apis = {}
    for _ in range(n):
        k, lo, hi = r.i16(), r.i16(), r.i16()
        apis[k] = (lo, hi)
    assert 18 in apis and apis[18][0] == 0 and apis[18][1] >= 3, apis.get(18)


def test_pipelined_requests_answered_in_order(b):
    c = Conn(b)
    try:
        c.send(b"".join(frame(header(18, 0, 1000 + i)) for i in range(50)))
        for i in range(50):
            resp = c.recv_frame()
            assert resp is not None
            assert struct.unpack(">i", resp[:4])[0] == 1000 + i
    finally:
        c.close()


def test_request_dribbled_one_byte_at_a_time(b):
    c = Conn(b)
    try:
        data = frame(header(18, 0, 77))
        for i in range(len(data)):
            c.send(data[i:i + 1])
        resp = c.recv_frame()
        assert resp is not None and struct.unpack(">i", resp[:4])[0] == 77
    finally:
        c.close()


def test_metadata_v1_any_first_request(b):
    """Some clients (sarama) send Metadata before ApiVersions."""
    c = Conn(b)
    try:
        c.send(frame(header(3, 1, 5) + array(None, string)))
        resp = c.recv_frame()
    finally:
        c.close()
    assert resp is not None
    r = Reader(resp)
    assert r.i32() == 5
    nb = r.i32()
    assert nb >= 1
    r.i32()  # node id
    host, port = r.string(), r.i32()
    assert (host, port) == (b.host, b.port)


# ---------------------------------------------------------------- broken framing


def test_truncated_frame_then_close(b):
    c = Conn(b)
    c.send(i32(100) + b"\x00\x12\x00\x00\x00\x00")
    c.close()
    c = Conn(b)
    c.send(b"\x00\x00")  # half a size prefix
    c.close()


@pytest.mark.parametrize("size", [-1, -2147483648, 0])
def test_bad_frame_size_closes(b, size):
    c = Conn(b)
    try:
        c.send(i32(size) + b"\x00" * 16)
        c.expect_closed()
    finally:
        c.close()


@pytest.mark.parametrize("size", [200 << 20, 0x7FFFFFFF])
def test_frame_larger_than_socket_request_max_bytes_closes_without_body(b, size):
    rss0 = rss_mb(b.pid)
    c = Conn(b)
    try:
        c.send(i32(size) + header(18, 0, 1))
        c.expect_closed()
    finally:
        c.close()
    rss1 = rss_mb(b.pid)
    if rss0 is not None:
        assert rss1 - rss0 < 100, "RSS grew %.0f MB on a %d-byte size prefix" % (rss1 - rss0, size)


# ---------------------------------------------------------------- bad headers / keys / versions


def test_unknown_api_key(b):
    c = Conn(b)
    try:
        c.send(frame(header(9999, 0, 3) + b"\x00" * 8))
        c.closed_or_response(3)
    finally:
        c.close()


def test_negative_api_key(b):
    c = Conn(b)
    try:
        c.send(frame(header(-5, 0, 3)))
        c.closed_or_response(3)
    finally:
        c.close()


@pytest.mark.parametrize("api_key,version", [(3, 99), (0, 99), (1, -1), (19, 500)])
def test_unsupported_version_of_known_api(b, api_key, version):
    c = Conn(b)
    try:
        c.send(frame(header(api_key, version, 11) + b"\x00" * 32))
        c.closed_or_response(11)
    finally:
        c.close()


@pytest.mark.parametrize("client_id_len", [32000, -7, 5000])
def test_bogus_client_id_length(b, client_id_len):
    c = Conn(b)
    try:
        c.send(frame(i16(18) + i16(0) + i32(9) + i16(client_id_len) + b"abc"))
        c.closed_or_response(9)
    finally:
        c.close()


def test_header_shorter_than_fixed_fields(b):
    c = Conn(b)
    try:
        c.send(frame(i16(18) + i16(0) + b"\x00"))
        c.expect_closed()
    finally:
        c.close()


# ---------------------------------------------------------------- bad bodies


def test_produce_with_random_body(b):
    rnd = random.Random(1234)
    for n in (1, 7, 64, 1000, 70000):
        c = Conn(b, timeout=5)
        try:
            c.send(frame(header(0, 7, 21) + bytes(rnd.getrandbits(8) for _ in range(n))))
            try:
                c.closed_or_response(21, timeout=3)
            except AssertionError:
                pass  # silence is a legal reading of acks=0 garbage; only survival matters
        finally:
            c.close()


@pytest.mark.parametrize("api_key,version", [(1, 11), (2, 5), (19, 4), (20, 4), (32, 3), (37, 2),
                                             (22, 3), (23, 3), (60, 0), (3, 12), (1, 13), (0, 9)])
def test_random_body_for_every_api(b, api_key, version):
    rnd = random.Random(api_key * 100 + version)
    flexible = (api_key, version) in ((3, 12), (1, 13), (0, 9), (60, 0))
    for n in (0, 3, 40, 400):
        c = Conn(b, timeout=5)
        try:
            c.send(frame(header(api_key, version, 31, flexible=flexible)
                         + bytes(rnd.getrandbits(8) for _ in range(n))))
            try:
                c.closed_or_response(31, timeout=3)
            except AssertionError:
                pass
        finally:
            c.close()


def test_absurd_array_count(b):
    rss0 = rss_mb(b.pid)
    c = Conn(b)
    try:
        # Metadata v1: topics array count 2^31-1 with no elements
        c.send(frame(header(3, 1, 12) + i32(0x7FFFFFFF)))
        c.closed_or_response(12)
    finally:
        c.close()
    c = Conn(b)
    try:
        # Metadata v12 (flexible): compact array length varint 2^32-1
        c.send(frame(header(3, 12, 13, flexible=True) + uvarint(0xFFFFFFFF)))
        c.closed_or_response(13)
    finally:
        c.close()
    c = Conn(b)
    try:
        # Produce v7: partitions array count huge
        c.send(frame(header(0, 7, 14) + string(None) + i16(-1) + i32(1000) + i32(1)
                     + string("t") + i32(0x10000000)))
        c.closed_or_response(14)
    finally:
        c.close()
    rss1 = rss_mb(b.pid)
    if rss0 is not None:
        assert rss1 - rss0 < 100, "RSS grew %.0f MB on absurd array counts" % (rss1 - rss0)


def test_string_length_beyond_frame(b):
    c = Conn(b)
    try:
        c.send(frame(header(3, 1, 15) + i32(1) + i16(30000) + b"abc"))
        c.closed_or_response(15)
    finally:
        c.close()
    c = Conn(b)
    try:
        # CreateTopics v4: name length past the end
        c.send(frame(header(19, 4, 16) + i32(1) + i16(2000) + b"xy"))
        c.closed_or_response(16)
    finally:
        c.close()
    c = Conn(b)
    try:
        # Produce v7: records bytes length past the end
        c.send(frame(header(0, 7, 17) + string(None) + i16(-1) + i32(1000) + i32(1)
                     + string("t") + i32(1) + i32(0) + i32(1 << 20) + b"\x00" * 10))
        c.closed_or_response(17)
    finally:
        c.close()


# ---------------------------------------------------------------- record batches


def test_raw_produce_valid_then_corrupt_batches_are_refused(b):
    topic = create_topic(b.bootstrap, unique_topic("raw"))
    c = Conn(b)
    try:
        c.send(produce_v7(100, topic, 0, record_batch([b"good-1", b"good-2"])))
        corr, parts = parse_produce_v7(c.recv_frame())
        assert corr == 100 and parts == [(topic, 0, 0, 0)], parts

        bad = {
            "crc": record_batch([b"bad-crc"], corrupt_crc=True),
            "count": record_batch([b"bad-count"], count_delta=5),
            "magic1": record_batch([b"bad-magic"], magic=1),
            "truncated": record_batch([b"truncated-batch-value"])[:-7],
            "gzip-garbage": record_batch([b"x", b"y"], attributes=1, payload=os.urandom(64)),
            "zstd-garbage": record_batch([b"x"], attributes=4, payload=b"\x28\xb5\x2f\xfd" + os.urandom(40)),
            "codec7": record_batch([b"x"], attributes=7),
        }
        for i, (what, batch) in enumerate(bad.items()):
            c.send(produce_v7(200 + i, topic, 0, batch))
            resp = c.recv_frame()
            if resp is None:  # closing the connection is acceptable for framing damage
                assert what == "truncated", "connection closed on %s batch" % what
                c.close()
                c = Conn(b)
                continue
            corr, parts = parse_produce_v7(resp)
            assert corr == 200 + i
            (_t, _p, err, _off), = parts
            # Kafka itself answers CORRUPT_MESSAGE / INVALID_RECORD, or -1 for
            # undecodable compressed payloads; what matters is refusal and
            # that nothing of it is stored (checked below)
            assert err != 0, "%s batch accepted" % what

        c.send(produce_v7(300, topic, 0, record_batch([b"good-3"])))
        corr, parts = parse_produce_v7(c.recv_frame())
        assert parts == [(topic, 0, 0, 2)], parts
    finally:
        c.close()
    got = consume(b.bootstrap, topic, [0])[0]
    assert [m.value() for m in got] == [b"good-1", b"good-2", b"good-3"]


def init_producer_id(conn, corr):
    """InitProducerId v1 (non-transactional) -> (error, producer_id, epoch)."""
    conn.send(frame(header(22, 1, corr) + string(None) + i32(60000)))
    r = Reader(conn.recv_frame())
    assert r.i32() == corr
    r.i32()  # throttle
    return r.i16(), r.i64(), r.i16()


def test_raw_idempotent_sequence_checks(b):
    """Duplicates of an acknowledged idempotent batch are answered as success
    without a second copy; a sequence gap is OUT_OF_ORDER_SEQUENCE_NUMBER;
    nothing out of order is stored."""
    topic = create_topic(b.bootstrap, unique_topic("rawidem"))
    c = Conn(b)
    try:
        for attempt in range(100):  # Kafka answers 14/15 while its coordinator loads
            err, pid, epoch = init_producer_id(c, 500)
            if err not in (14, 15):
                break
            time.sleep(0.1)
        assert err == 0 and pid >= 0 and epoch >= 0, (err, pid, epoch)

        def send(corr, seq, values):
            c.send(produce_v7(corr, topic, 0, record_batch(values, producer_id=pid, producer_epoch=epoch,
                                                           base_sequence=seq)))
            corr_r, parts = parse_produce_v7(c.recv_frame())
            assert corr_r == corr
            (_t, _p, e, off), = parts
            return e, off

        assert send(501, 0, [b"s0", b"s1"]) == (0, 0)
        assert send(502, 2, [b"s2"]) == (0, 2)
        # exact retry of the last batch: success, original offset (or 46), no new copy
        e, off = send(503, 2, [b"s2"])
        assert (e, off) in ((0, 2), (46, -1), (46, 2)), (e, off)
        # exact retry of an older batch still in the window
        e, off = send(504, 0, [b"s0", b"s1"])
        assert (e, off) in ((0, 0), (46, -1), (46, 0)), (e, off)
        # gap: expected 3, got 5
        e, _off = send(505, 5, [b"gap"])
        assert e == 45, "sequence gap answered with error %d, want OUT_OF_ORDER_SEQUENCE_NUMBER (45)" % e
        assert send(506, 3, [b"s3"]) == (0, 3)
    finally:
        c.close()
    got = consume(b.bootstrap, topic, [0])[0]
    assert [m.value() for m in got] == [b"s0", b"s1", b"s2", b"s3"]


def test_raw_produce_to_unknown_partition(b):
    topic = create_topic(b.bootstrap, unique_topic("rawpart"))
    c = Conn(b)
    try:
        c.send(produce_v7(400, topic, 17, record_batch([b"x"])))
        corr, parts = parse_produce_v7(c.recv_frame())
        assert parts[0][2] == 3, parts  # UNKNOWN_TOPIC_OR_PARTITION
    finally:
        c.close()


# ---------------------------------------------------------------- many connections


def test_many_bad_connections_at_once(b):
    fds0 = _fd_count(b.pid)
    rnd = random.Random(99)
    socks = []
    payloads = [
        lambda: i32(-1),
        lambda: i32(50) + b"\x00\x03",                       # partial frame, left open
        lambda: i32(1 << 30),                                # huge size
        lambda: frame(header(9999, 0, 1)),                   # unknown api
        lambda: frame(header(18, 0, 1)),                     # fine, response never read
        lambda: bytes(rnd.getrandbits(8) for _ in range(rnd.randint(1, 300))),
        lambda: b"",                                         # idle
    ]
    try:
        for i in range(300):
            s = socket.create_connection((b.host, b.port), timeout=10)
            s.sendall(payloads[i % len(payloads)]())
            socks.append(s)
        # the broker keeps serving well-behaved clients meanwhile
        healthy(b)
    finally:
        for s in socks:
            s.close()
    if fds0 is not None:
        # every connection is released again
        deadline = time.monotonic() + 15
        while _fd_count(b.pid) > fds0 + 10:
            assert time.monotonic() < deadline, "fds %d -> %d after closing 300 connections" % (
                fds0, _fd_count(b.pid))
            time.sleep(0.05)


def test_client_that_never_reads_responses(b):
    """Pipelines many requests without reading: the broker must bound what
    it buffers (backpressure), not grow without limit, and survive the close."""
    rss0 = rss_mb(b.pid)
    c = Conn(b)
    try:
        req = frame(header(3, 1, 1) + array(None, string))
        c.s.settimeout(0.5)
        sent = 0
        try:
            for _ in range(20000):
                c.s.sendall(req)
                sent += 1
        except (socket.timeout, BrokenPipeError, ConnectionResetError):
            pass
    finally:
        c.close()
    rss1 = rss_mb(b.pid)
    if rss0 is not None:
        assert rss1 - rss0 < 300, "RSS grew %.0f MB for one client that does not read" % (rss1 - rss0)


def test_names_with_nul_never_address_another_topic(b):
    """Regression (issue 17 §6): a wire name is a length and bytes; cut at its
    first NUL, "victim\\0anything" used to append to "victim" (error 0) and
    "x\\0y" auto-created "x". Every wire name now goes through one validation:
    such names are INVALID_TOPIC_EXCEPTION (17) and touch nothing."""
    victim = create_topic(b.bootstrap, unique_topic("victim"))
    ghost = unique_topic("ghost")
    c = Conn(b)
    try:
        for corr, name in ((400, victim.encode() + b"\x00anything"), (401, ghost.encode() + b"\x00y"),
                           (402, b"bad name!"), (403, b"..")):
            c.send(produce_v7(corr, name, 0, record_batch([b"sneaky"])))
            got_corr, parts = parse_produce_v7(c.recv_frame())
            assert got_corr == corr
            assert [(p[1], p[2]) for p in parts] == [(0, 17)], (name, parts)
    finally:
        c.close()
    assert watermarks(b.bootstrap, victim, [0])[0] == (0, 0)   # nothing appended to victim
    md = AdminClient({"bootstrap.servers": b.bootstrap}).list_topics(timeout=10)
    assert ghost not in md.topics   # and "ghost" was not auto-created
