"""Files of a broker-written table that stop being referenced (issue 29 items 3,
4 and 7): an engine that loaded the table keeps reading everything it loaded for
lakestream.table.file.delete.delay.ms, however many commits come meanwhile; then
the broker's own commits delete it all, data files a rewrite removed included
(before, those waited for the hourly orphan sweep), and a table that stopped
getting records still expires its snapshots and deletes their files."""

import json
import os
import threading
import time

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from pyiceberg import table as pyiceberg_table

import iceberg_util
from kafka_util import unique_topic, wait_topic

PARTS = 3
DELAY_MS = 15000  # the file delay under test; commits every second
# the old code deleted an expired snapshot's manifest list at the next commit
# and a metadata file once 10 newer versions existed (about 10 s here)
HOLD_S = 12


def _produce(bootstrap, topic, stop, sent):
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    i = 0
    while not stop.is_set():
        for _ in range(20):
            p.produce(topic, value=b"v-%d" % i, partition=i % PARTS)
            i += 1
        p.flush(10)
        sent[0] = i
        time.sleep(0.1)
    p.flush(30)
    sent[0] = i


def _wait(what, cond, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(0.2)
    raise AssertionError("timed out waiting for " + what)


# heavy: about 35 s of a reader holding a table (the unit tests cover the same
# paths under ASan in seconds)
@pytest.mark.heavy
def test_loaded_files_stay_for_the_delay_then_go(broker_factory):
    iceberg_util.local_store_only()
    b = broker_factory("--compaction.min.age.ms=0", "--compaction.interval.ms=200")
    topic = unique_topic("gc")
    a = AdminClient({"bootstrap.servers": b.bootstrap})
    cfg = {"lakestream.table.enabled": "true",
           "lakestream.table.commit.interval.ms": "1000",
           "lakestream.table.partition": "identity(partition)",
           "lakestream.table.snapshot.retention.ms": "1000",
           "lakestream.table.rewrite.min.files": "4",
           "lakestream.table.file.delete.delay.ms": str(DELAY_MS)}
    a.create_topics([NewTopic(topic, PARTS, 1, config=cfg)])[topic].result(30)
    wait_topic(b.bootstrap, topic, PARTS)
    tdir = iceberg_util.table_dir(b, topic)

    stop, sent = threading.Event(), [0]
    prod = threading.Thread(target=_produce, args=(b.bootstrap, topic, stop, sent))
    prod.start()
    try:
        # a table with some history: rewrites have replaced small files
        iceberg_util.wait_rows(tdir, 600, timeout=60)
        md = iceberg_util.current_metadata(tdir)
        t = pyiceberg_table.StaticTable.from_metadata("file://" + md)
        loaded = iceberg_util.referenced_files(t)
        loaded_at = time.monotonic()
        # commits go on for longer than the old code kept any of it
        while time.monotonic() < loaded_at + HOLD_S:
            time.sleep(0.5)
        newest = iceberg_util.current_metadata(tdir)
        assert newest != md, "no commits while the reader held the table"
        missing = sorted(f for f in loaded if not os.path.exists(f))
        assert not missing, "%d of %d loaded files gone within the delay: %s" % (
            len(missing), len(loaded), missing[:5])
        # and the loaded snapshot reads in full
        assert t.scan().to_arrow().num_rows > 0
    finally:
        stop.set()
        prod.join()

    iceberg_util.wait_rows(tdir, sent[0], timeout=60)
    # idle from here: the broker still expires every snapshot past retention
    # (one stays) and, once the delay is over, deletes every file the reader
    # loaded that the table no longer references, rewritten data files too;
    # and every file of a snapshot expired since
    def settled():
        cur = pyiceberg_table.StaticTable.from_metadata(
            "file://" + iceberg_util.current_metadata(tdir))
        pending = json.loads(cur.metadata.properties.get("lakestream.pending-deletes", "[]"))
        if len(cur.metadata.snapshots) != 1 or any("snapshot-id" in e for e in pending):
            return None
        live = iceberg_util.referenced_files(cur)
        left = [f for f in loaded if f not in live and os.path.exists(f)]
        return (cur, live) if not left else None

    cur, live = _wait("the idle table to expire and delete what it no longer references",
                      settled, DELAY_MS / 1000 + 60)
    gone = [f for f in loaded if not os.path.exists(f)]
    assert any(f.endswith(".parquet") for f in gone), "no data file a rewrite removed was deleted"
    assert any(f.endswith(".metadata.json") for f in gone)
    # every record is in the table, in files that exist
    lost = [f for f in live if not os.path.exists(f)]
    assert not lost, (lost, iceberg_util.current_metadata(tdir))
    rows = cur.scan(selected_fields=("partition", "offset")).to_arrow()
    assert rows.num_rows == sent[0]
    # nothing under the table's location is garbage: every file is one of the
    # current metadata's (its catalog name and v<N> are one file, hard-linked),
    # a metadata file of its log or one pending deletion, or the version hint
    log = {iceberg_util.local_path(e.metadata_file) for e in cur.metadata.metadata_log}
    pending = json.loads(cur.metadata.properties.get("lakestream.pending-deletes", "[]"))
    log |= {iceberg_util.local_path(e["metadata-file"]) for e in pending if "metadata-file" in e}
    kept = {os.stat(f).st_ino for f in (live | log) if os.path.exists(f)}
    extra = []
    for d, _, fs in os.walk(tdir):
        for f in fs:
            p = os.path.join(d, f)
            if f != "version-hint.text" and os.stat(p).st_ino not in kept:
                extra.append(p)
    assert not extra, extra[:5]
