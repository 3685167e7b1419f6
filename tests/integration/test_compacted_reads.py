"""Cold reads inside compacted objects, on the file store and on S3 (issue 13):
a fetch that misses reads the object's footer and the block of batches it
needs (read.ahead.bytes), not the whole object. With blocks far smaller than
the objects and a read cache of a few blocks, a restarted broker (cold cache)
serves a full catch-up and random seeks with every record's bytes at its
offset, offsets-for-time lands on the right record, and the setting is
applied and reported."""

import os
import random
import re
import sqlite3
import time

from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import ConfigResource

import kafka_util as ku

PARTS = 2
ROUNDS = 6
PER_ROUND = 700


def _uncompacted_entries(data_dir):
    """Index entries of kind WAL (0) in the broker's metadata (SQLite, local
    whatever the object store): the second byte of an index entry value."""
    db = sqlite3.connect("file:%s?mode=ro" % os.path.join(data_dir, "meta.db"), uri=True,
                         timeout=30)
    try:
        rows = db.execute("SELECT key, val FROM kv WHERE key >= CAST('/ls/log/' AS BLOB)"
                          " AND key < CAST('/ls/log0' AS BLOB)").fetchall()
    finally:
        db.close()
    idx = [bytes(v) for k, v in rows if b"/idx/" in bytes(k)]
    return len(idx), sum(1 for v in idx if v[1] == 0)


def _value(part, i):
    # distinct, incompressible-enough bytes per record (about 1 KiB)
    rnd = random.Random(part * 1_000_003 + i)
    return b"%d:%06d:" % (part, i) + bytes(rnd.getrandbits(8) for _ in range(1000))


def test_cold_catch_up_and_seeks_read_blocks_of_compacted_objects(broker_factory):
    b = broker_factory("--compaction.min.age.ms=0", "--compaction.interval.ms=200",
                       "--wal.gc.grace.ms=0", "--read.ahead.bytes=64KiB",
                       "--read.cache.max.bytes=1MiB")
    topic = ku.create_topic(b.bootstrap, ku.unique_topic("coread"), partitions=PARTS)
    expected = {p: [] for p in range(PARTS)}  # offset order per partition
    stamps = {p: [] for p in range(PARTS)}
    n = 0
    for _round in range(ROUNDS):  # several flushes: several WAL entries per log
        p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all", "linger.ms": 5,
                      "batch.size": 16384})  # many batches per 64 KiB block
        recs = []
        for _ in range(PER_ROUND):
            part = n % PARTS
            recs.append({"value": _value(part, n), "partition": part,
                         "timestamp": 1_700_000_000_000 + n})
            n += 1
        dl = ku.produce_all(p, topic, recs)
        for part, off, _k, v in sorted(dl.acked, key=lambda a: (a[0], a[1])):
            assert off == len(expected[part])
            expected[part].append(v)
            stamps[part].append(int(v.split(b":")[1]) + 1_700_000_000_000)
    # every WAL entry rewritten into compacted objects
    deadline = time.monotonic() + 60
    while True:
        total, wal = _uncompacted_entries(b.data_dir)
        if total and not wal:
            break
        assert time.monotonic() < deadline, "%d of %d index entries still WAL" % (wal, total)
        time.sleep(0.2)
    # (passes run while producing: about one compacted object per log per round,
    # each ~350 KB, i.e. several 64 KiB blocks)

    b.restart()  # cold read cache
    got = ku.consume(b.bootstrap, topic, list(range(PARTS)), timeout=120,
                     max_partition_fetch_bytes=48 << 10)
    for part in range(PARTS):
        assert [m.offset() for m in got[part]] == list(range(len(expected[part])))
        assert [m.value() for m in got[part]] == expected[part]

    # random seeks (a fresh broker again: every seek starts cold or evicted)
    b.restart()
    # the catch-up read blocks of read.ahead.bytes, not whole objects, and the
    # cache stayed within its limit (the read path's figures at shutdown)
    stats = re.findall(r"read path: (\d+) cache hits, (\d+) store GETs \((\d+) compacted-object "
                       r"footers\) returning (\d+) bytes; read cache peak (\d+) of (\d+) bytes",
                       b.log_text())
    assert stats, "no read-path figures logged at shutdown"
    _hits, gets, footers, returned, peak, limit = map(int, stats[-1])
    assert returned >= sum(len(v) for vs in expected.values() for v in vs)
    assert gets - footers >= returned // (80 << 10), stats[-1]  # blocks of ~64 KiB
    assert peak <= limit == 1 << 20, stats[-1]
    rnd = random.Random(13)
    for _ in range(25):
        part = rnd.randrange(PARTS)
        off = rnd.randrange(len(expected[part]))
        want = min(5, len(expected[part]) - off)
        g = ku.consume(b.bootstrap, topic, [part], start={part: off}, expect={part: want},
                       timeout=60, max_partition_fetch_bytes=8 << 10)
        msgs = g[part][:want]
        assert [m.offset() for m in msgs] == list(range(off, off + want))
        assert [m.value() for m in msgs] == expected[part][off:off + want]

    # offsets for a time inside the objects
    c = ku.consumer(b.bootstrap)
    try:
        part = 1
        mid = len(stamps[part]) // 2
        res = c.offsets_for_times([TopicPartition(topic, part, stamps[part][mid])], timeout=30)
        assert res[0].error is None and res[0].offset == mid
    finally:
        c.close()

    # the setting is applied and reported
    a = ku.admin(b.bootstrap)
    res = ConfigResource(ConfigResource.Type.BROKER, "0")
    cfg = a.describe_configs([res])[res].result(30)
    assert cfg["read.ahead.bytes"].value == str(64 << 10)
