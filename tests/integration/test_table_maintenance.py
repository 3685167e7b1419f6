"""Table maintenance by the broker: small data files are rewritten.

A table committed every second gets a small data file per partition tuple per
commit; the broker rewrites runs of them (lakestream.table.rewrite.min.files)
into one file as Iceberg "replace" snapshots (table/file_rewrite.c). While
records stream in, a PyIceberg reader loops over the newest metadata and must
never fail or see a duplicate or foreign row; at the end the table holds every
record exactly once in a bounded number of live files, and its history shows
the replace snapshots."""

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
ROUNDS = 50
PER_ROUND = 30
MIN_FILES = 4


def _reader_loop(tdir, stop, seen_counts, errors):
    """Scans the newest table version until stopped: every scan must succeed
    and hold distinct (partition, offset) rows that are all records we sent."""
    while not stop.is_set():
        md = iceberg_util.current_metadata(tdir)
        if md is None:
            time.sleep(0.1)
            continue
        try:
            t = pyiceberg_table.StaticTable.from_metadata("file://" + md)
            rows = t.scan(selected_fields=("partition", "offset", "value")).to_arrow()
        except FileNotFoundError:
            # the metadata file we picked was superseded and deleted between
            # listing and opening (10 versions are kept): pick again
            continue
        except Exception as e:  # noqa: BLE001 - any other failure is the finding
            errors.append("%s: %r" % (os.path.basename(md), e))
            return
        d = rows.to_pylist()
        keys = {(r["partition"], r["offset"]) for r in d}
        if len(keys) != len(d):
            errors.append("%s: %d rows, %d distinct" % (os.path.basename(md), len(d), len(keys)))
            return
        for r in d:
            i = int(r["value"].split(b"-")[1])
            if r["partition"] != i % PARTS:
                errors.append("%s: value %d in partition %d" % (md, i, r["partition"]))
                return
        seen_counts.append(len(d))
        time.sleep(0.05)


@pytest.mark.heavy
def test_small_files_are_rewritten_while_readers_read(broker_factory):
    iceberg_util.local_store_only()
    b = broker_factory("--compaction.min.age.ms=0", "--compaction.interval.ms=200")
    topic = unique_topic("maint")
    a = AdminClient({"bootstrap.servers": b.bootstrap})
    cfg = {"lakestream.table.enabled": "true",
           "lakestream.table.commit.interval.ms": "1000",
           "lakestream.table.partition": "identity(partition)",
           "lakestream.table.rewrite.min.files": str(MIN_FILES)}
    a.create_topics([NewTopic(topic, PARTS, 1, config=cfg)])[topic].result(30)
    wait_topic(b.bootstrap, topic, PARTS)
    tdir = iceberg_util.table_dir(b, topic)

    stop, counts, errors = threading.Event(), [], []
    reader = threading.Thread(target=_reader_loop, args=(tdir, stop, counts, errors))
    reader.start()
    p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all", "linger.ms": 2})
    try:
        n = 0
        for _ in range(ROUNDS):  # a trickle: about one commit per round
            for _ in range(PER_ROUND):
                p.produce(topic, value=b"v-%d" % n, partition=n % PARTS)
                n += 1
            assert p.flush(30) == 0
            time.sleep(0.4)
        t, rows, md = iceberg_util.wait_rows(tdir, n)
        # one more rewrite check may follow the last appends
        time.sleep(3)
    finally:
        stop.set()
        reader.join(60)
    assert not errors, errors
    assert len(counts) > 20, "the reader loop made only %d scans" % len(counts)
    assert counts == sorted(counts), "a reader saw rows go away"

    md = iceberg_util.current_metadata(tdir)
    t = pyiceberg_table.StaticTable.from_metadata("file://" + md)
    d = t.scan(selected_fields=("partition", "offset", "value")).to_arrow().to_pylist()
    assert sorted(int(r["value"].split(b"-")[1]) for r in d) == list(range(n))
    for part in range(PARTS):
        offs = sorted(r["offset"] for r in d if r["partition"] == part)
        assert offs == list(range(n // PARTS)), "partition %d offsets" % part

    ops = [s.summary.operation.value for s in t.metadata.snapshots]
    appends, replaces = ops.count("append"), ops.count("replace")
    files = list(t.scan().plan_files())
    print("appends %d, replaces %d, live files %d" % (appends, replaces, len(files)))
    assert appends >= 12, ops
    assert replaces >= 2, ops
    # without rewrites: one file per partition per append
    assert len(files) < PARTS * appends / 2, (len(files), appends)
    per_part = {}
    for f in files:
        per_part.setdefault(f.file.partition[0], []).append(f.file.file_size_in_bytes)
    for part, sizes in per_part.items():
        assert len(sizes) <= 3 * (2 * MIN_FILES - 1), (part, sizes)
    # the replaced files stay for time travel: the first append still reads
    first = t.metadata.snapshots[0].snapshot_id
    old = t.scan(snapshot_id=first).to_arrow()
    assert 0 < old.num_rows <= n


def test_rewrite_policy_is_validated(broker_factory):
    b = broker_factory()
    a = AdminClient({"bootstrap.servers": b.bootstrap})
    topic = unique_topic("maintbad")
    fs = a.create_topics([NewTopic(topic, 1, 1, config={
        "lakestream.table.rewrite.min.files": "3"})])
    with pytest.raises(Exception) as e:
        fs[topic].result(30)
    assert "lakestream.table.rewrite.min.files" in str(e.value)
