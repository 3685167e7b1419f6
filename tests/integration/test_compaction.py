"""Compaction on a live broker: with a zero hot window, WAL entries are
rewritten into compacted objects while producers and consumers run. A
consumer reading across the swap sees every record once, at its offset, with
its bytes; afterwards the WAL objects are gone and a restarted broker serves
everything from compacted objects."""

import os
import time

import pytest

from kafka_util import consume, create_topic, produce_all, unique_topic


def _objects(data_dir, sub):
    root = os.path.join(data_dir, "objects", sub)
    out = []
    for d, _, files in os.walk(root):
        out += [os.path.join(d, f) for f in files]
    return out


def test_compaction_keeps_every_record_and_frees_wal(broker_factory):
    if os.environ.get("LS_TEST_OBJECT_STORE", "file") not in ("", "file"):
        pytest.skip("inspects the local object directory")
    b = broker_factory("--compaction.min.age.ms=0", "--compaction.interval.ms=200",
                       "--wal.gc.grace.ms=0")
    topic = create_topic(b.bootstrap, unique_topic("compact"), partitions=3)
    from confluent_kafka import Producer
    expected = {}
    for batch in range(10):
        p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all", "linger.ms": 1})
        recs = [{"key": b"k%d" % i, "value": b"b%02d-v%04d" % (batch, i), "partition": i % 3,
                 "headers": [("h", b"%d" % i)]} for i in range(300)]
        dl = produce_all(p, topic, recs)
        for part, off, _k, v in dl.acked:
            expected[(part, off)] = v
        # read everything so far while compaction swaps entries underneath
        got = consume(b.bootstrap, topic, [0, 1, 2], timeout=60)
        seen = {(part, m.offset()): m.value() for part, msgs in got.items() for m in msgs}
        assert seen == expected
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and (_objects(b.data_dir, "wal") or not _objects(b.data_dir, "co")):
        time.sleep(0.1)
    assert _objects(b.data_dir, "co"), "no compacted objects were written"
    # WAL objects still in the hot path may remain for the most recent flushes
    # of a partition only until the next pass; allow none after the wait
    assert not _objects(b.data_dir, "wal"), "WAL objects left: %s" % _objects(b.data_dir, "wal")[:3]
    b.restart()
    got = consume(b.bootstrap, topic, [0, 1, 2], timeout=60)
    seen = {(part, m.offset()): m.value() for part, msgs in got.items() for m in msgs}
    assert seen == expected
    hdrs = [m.headers() for msgs in got.values() for m in msgs]
    assert all(h and h[0][0] == "h" for h in hdrs)
