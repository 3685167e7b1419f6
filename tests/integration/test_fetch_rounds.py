"""How one Fetch reads its partitions (src/kafka/h_fetch.c), over raw Fetch v4
requests after a restart, so every read goes to the object store:

- when the partitions' PartitionMaxBytes add up to no more than MaxBytes
  (the clients' defaults), every partition is read at once and each returns
  all it has, under both isolation levels;
- when they do not, partitions are read in request order and the response's
  byte budget is spent in that order: the first partition gets its records,
  the last gets none (only its offsets), and nothing beyond the budget but
  the first batch."""

import struct

from confluent_kafka import Producer

from kafka_util import unique_topic, create_topic
from test_malformed import Conn, array, frame, header, i8, i32, i64, string

PARTS = 4
PER_PART = 50
VALUE = 1000


def fetch_v4(conn, topic, parts, max_bytes, part_max, isolation=0, corr=7):
    body = (i32(-1) + i32(0) + i32(0) + i32(max_bytes) + i8(isolation)
            + array([topic], lambda t: string(t) + array(
                parts, lambda p: i32(p) + i64(0) + i32(part_max))))
    conn.send(frame(header(1, 4, corr) + body))
    resp = conn.recv_frame()
    assert resp is not None, "broker closed the connection"
    pos = 0

    def take(fmt):
        nonlocal pos
        v = struct.unpack_from(fmt, resp, pos)
        pos += struct.calcsize(fmt)
        return v[0] if len(v) == 1 else v

    assert take(">i") == corr
    take(">i")  # throttle
    out = {}
    for _ in range(take(">i")):
        pos += 2 + take(">h")  # topic name
        for _ in range(take(">i")):
            part, err, hwm, _lso = take(">ihqq")
            naborted = take(">i")
            pos += 16 * max(naborted, 0)
            size = take(">i")
            records = resp[pos:pos + max(size, 0)]
            pos += max(size, 0)
            out[part] = {"error": err, "hwm": hwm, "bytes": len(records),
                         "offsets": batch_offsets(records)}
    return out


def batch_offsets(records):
    """The offsets the record batches of a Records field cover."""
    offs, pos = [], 0
    while pos + 61 <= len(records):
        base, length = struct.unpack_from(">qi", records, pos)
        if pos + 12 + length > len(records):
            break  # a partial batch at the end (allowed; clients skip it)
        count = struct.unpack_from(">i", records, pos + 57)[0]
        offs.extend(range(base, base + count))
        pos += 12 + length
    return offs


def load(b):
    topic = unique_topic("rounds")
    create_topic(b.bootstrap, topic, PARTS)
    p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all", "linger.ms": 2,
                  "batch.size": 8000})
    for part in range(PARTS):
        for i in range(PER_PART):
            p.produce(topic, value=bytes([65 + part]) * VALUE, partition=part)
    assert p.flush(30) == 0
    return topic


def test_partitions_within_the_budget_are_read_at_once_and_each_returns_all(broker):
    b = broker
    topic = load(b)
    b.restart()  # a cold read cache: every read below goes to the store
    for isolation in (0, 1):
        c = Conn(b)
        got = fetch_v4(c, topic, list(range(PARTS)), 10 << 20, 1 << 20, isolation)
        c.close()
        assert sorted(got) == list(range(PARTS))
        for part, r in got.items():
            assert r["error"] == 0, (part, r)
            assert r["hwm"] == PER_PART
            assert r["offsets"] == list(range(PER_PART)), (isolation, part, r["offsets"])


def test_a_binding_budget_is_spent_in_request_order(broker):
    b = broker
    topic = load(b)
    b.restart()
    budget = PER_PART * VALUE + 10_000  # the first partition and a little
    c = Conn(b)
    order = [2, 0, 3, 1]
    got = fetch_v4(c, topic, order, budget, 1 << 20)
    c.close()
    for part, r in got.items():
        assert r["error"] == 0 and r["hwm"] == PER_PART, (part, r)
    first, last = got[order[0]], got[order[-1]]
    assert first["offsets"] == list(range(PER_PART)), "the first partition gets all it has"
    assert last["offsets"] == [], "the budget was spent before the last partition"
    # what was returned is a prefix of the request order
    seen = [len(got[p]["offsets"]) > 0 for p in order]
    assert seen == sorted(seen, reverse=True), seen
    assert sum(r["bytes"] for r in got.values()) <= budget
