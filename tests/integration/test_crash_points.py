"""kill -9 between every step of a flush and of a compaction task.

The broker is started with LS_CRASH_AT=<point> (src/base/crashpoint.h):
it kills itself with SIGKILL the first time it reaches that point, exactly as
kill -9 at that instant would. It is then restarted normally, and:
  - every acknowledged record is in the log exactly once, at dense offsets;
  - for a table-enabled topic, the Iceberg table holds every record exactly
    once (PyIceberg), whichever step the compaction task died after;
  - for a compacted topic, whichever step of a key compaction it died after,
    the latest record of every key is there and no deleted key came back.
"""
import os
import sqlite3
import threading
import time

import pytest
from confluent_kafka import Producer

import iceberg_util
from kafka_util import (admin, assert_dense, consume, create_topic, latest_per_key, produce_keyed,
                        read_keyed, unique_topic)
from lsbroker import wait_until

PARTS = 3

# where a flush can die: after the WAL object is written (never committed:
# garbage for GC), after the metadata commit but before any acknowledgement
# (the idempotent retry must be recognized, not appended again); the third,
# wal.object_written_behind_commit, needs a pipeline (its own test below)
WAL_POINTS = ["wal.object_written", "wal.committed"]
# the steps of one compaction task with a table, in order
COMPACTION_POINTS = ["compact.co_written", "table.data_written", "table.metadata_written",
                     "table.pointer_swapped", "compact.table_committed", "compact.index_swapped"]


class Sender:
    """An idempotent producer that outlives broker restarts; acked: value ->
    (partition, offset). Record i goes to partition i % parts."""

    def __init__(self, bootstrap, topic, parts=PARTS):
        self.topic = topic
        self.parts = parts
        self.acked = {}
        self.failed = []
        self.p = Producer({"bootstrap.servers": bootstrap, "acks": "all",
                           "enable.idempotence": True, "linger.ms": 5,
                           "message.timeout.ms": 120000, "retry.backoff.ms": 50,
                           "reconnect.backoff.ms": 20, "reconnect.backoff.max.ms": 300})

    def _cb(self, err, msg):
        if err is not None:
            self.failed.append(str(err))
        else:
            self.acked[msg.value()] = (msg.partition(), msg.offset())

    def send(self, start, n):
        self.send_values([b"v-%06d" % i for i in range(start, start + n)], first=start)

    def send_values(self, values, first=0):
        for i, v in enumerate(values, start=first):
            self.p.produce(self.topic, key=b"k%d" % i, value=v, partition=i % self.parts,
                           on_delivery=self._cb)
        self.p.poll(0)

    def flush(self):
        assert self.p.flush(120) == 0
        assert not self.failed, self.failed[:3]


def check_log(b, topic, acked):
    msgs = consume(b.bootstrap, topic, list(range(PARTS)))
    assert_dense(msgs)
    seen = {}
    for p, ms in msgs.items():
        for m in ms:
            assert m.value() not in seen, "%r twice in the log" % m.value()
            seen[m.value()] = (p, m.offset())
    assert seen == acked


@pytest.mark.parametrize("point", WAL_POINTS)
def test_crash_in_a_flush(broker_factory, point):
    b = broker_factory()
    topic = create_topic(b.bootstrap, unique_topic("crash"), partitions=PARTS)
    b.stop()
    b.env_extra = {"LS_CRASH_AT": point}
    b.start()
    s = Sender(b.bootstrap, topic)
    s.send(0, 300)
    b.wait_crashed()
    assert ("crash point %s reached" % point) in b.log_text()
    b.env_extra = {}
    b.start()
    s.flush()                       # the producer's retries land on the new process
    s.send(300, 100)
    s.flush()
    assert len(s.acked) == 400
    check_log(b, topic, s.acked)


def unreferenced_wal_objects(b):
    """WAL object files under the file store that no /ls/walobj/ key names."""
    wal_dir = os.path.join(b.data_dir, "objects", "wal")
    names = {"wal/" + n for n in os.listdir(wal_dir)} if os.path.isdir(wal_dir) else set()
    db = sqlite3.connect("file:%s?mode=ro" % os.path.join(b.data_dir, "meta.db"), uri=True,
                         timeout=30)
    try:
        rs = db.execute("SELECT key FROM kv WHERE key >= CAST('/ls/walobj/' AS BLOB)"
                        " AND key < CAST('/ls/walobj0' AS BLOB)").fetchall()
    finally:
        db.close()
    return names - {bytes(k)[len(b"/ls/walobj/"):].decode() for (k,) in rs}


def test_crash_with_an_object_written_behind_a_commit(broker_factory):
    """Pipelined flushes (docs/ARCHITECTURE.md, Write path): the next WAL object
    is PUT while the oldest flush's metadata commit runs. Die the moment such an
    object is durable with the older commit still pending: after a restart
    every acknowledged record is there once, at dense offsets, nothing
    unacknowledged is half-visible (the producer's retries land exactly once),
    and the WAL objects no commit references are removed by the orphan sweep."""
    point = "wal.object_written_behind_commit"
    b = broker_factory()
    topic = create_topic(b.bootstrap, unique_topic("crashp"), partitions=PARTS)
    b.stop()
    # a slow metadata store (commits of 20-80 ms) so objects are written behind them
    slow_meta = ("--metadata.url=faulty+sqlite://%s/meta.db?latency_p50_ms=20&latency_p99_ms=80"
                 % b.data_dir)
    b.extra_args.append(slow_meta)
    b.env_extra = {"LS_CRASH_AT": point}
    b.start()
    s = Sender(b.bootstrap, topic)
    sent, deadline = 0, time.time() + 60
    while b.alive() and time.time() < deadline:   # a steady stream: flush after flush
        s.send(sent, 10)
        sent += 10
        s.p.poll(0.005)
    b.wait_crashed()
    assert ("crash point %s reached" % point) in b.log_text()
    b.extra_args.remove(slow_meta)
    b.extra_args.append("--wal.gc.grace.ms=0")
    b.env_extra = {}
    file_store = not any(a.startswith("--object.store.url=") for a in b.extra_args)
    if file_store:  # at least the object written behind the pending commit
        assert unreferenced_wal_objects(b)
    b.start()
    s.flush()                       # the producer's retries land on the new process
    s.send(sent, 100)
    s.flush()
    assert len(s.acked) == sent + 100
    check_log(b, topic, s.acked)
    if file_store:
        wait_until(lambda: not unreferenced_wal_objects(b), 60,
                   what="unreferenced WAL objects removed by the orphan sweep")


@pytest.mark.parametrize("point", COMPACTION_POINTS)
def test_crash_in_a_compaction_task(broker_factory, point):
    """A table topic whose ranges also get a compacted object
    (table.cold.reads=compacted-object): every step of that task."""
    iceberg_util.local_store_only()
    flags = ("--compaction.min.age.ms=0", "--compaction.interval.ms=200",
             "--table.cold.reads=compacted-object")
    b = broker_factory(*flags)
    topic = create_topic(b.bootstrap, unique_topic("crashc"), partitions=PARTS,
                         config={"lakestream.table.enabled": "true",
                                 "lakestream.table.commit.interval.ms": "1000"})
    b.stop()
    b.env_extra = {"LS_CRASH_AT": point}
    b.start()
    s = Sender(b.bootstrap, topic)
    s.send(0, 300)
    s.flush()
    b.wait_crashed()                # the first compaction task dies at `point`
    assert ("crash point %s reached" % point) in b.log_text()
    b.env_extra = {}
    b.start()
    s.send(300, 150)
    s.flush()
    assert len(s.acked) == 450
    table_dir = iceberg_util.table_dir(b, topic)
    _, rows, _ = iceberg_util.wait_rows(table_dir, 450, timeout=90)
    values = rows.column("value").to_pylist()
    assert len(values) == len(set(values)) == 450, "table rows are not exactly once"
    got = dict(zip(values, zip(rows.column("partition").to_pylist(),
                               rows.column("offset").to_pylist())))
    assert got == s.acked
    # the log too, read across WAL and compacted objects
    wait_until(lambda: os.path.isdir(os.path.join(b.data_dir, "objects", "co")), 30,
               what="compacted objects")
    check_log(b, topic, s.acked)


# the same task for a raw table topic whose ranges stay only in the table
# (table.cold.reads=table, the default): no compacted object is written, so the steps are
# the table commit's, then "table committed, index swap pending"
# (compact.table_committed: the next pass finds the rows in the table and
# only swaps), then the swap to kind-3 entries
IN_TABLE_POINTS = ["table.data_written", "table.metadata_written", "table.pointer_swapped",
                   "compact.table_committed", "compact.index_swapped"]


@pytest.mark.parametrize("point", IN_TABLE_POINTS)
def test_crash_in_a_compaction_task_into_the_table(broker_factory, point):
    import sqlite3
    iceberg_util.local_store_only()
    flags = ("--compaction.min.age.ms=0", "--compaction.interval.ms=200",
             "--table.cold.reads=table")
    b = broker_factory(*flags)
    topic = create_topic(b.bootstrap, unique_topic("crasht"), partitions=PARTS,
                         config={"lakestream.table.enabled": "true",
                                 "lakestream.table.commit.interval.ms": "1000"})
    b.stop()
    b.env_extra = {"LS_CRASH_AT": point}
    b.start()
    s = Sender(b.bootstrap, topic)
    s.send(0, 300)
    s.flush()
    b.wait_crashed()
    assert ("crash point %s reached" % point) in b.log_text()
    b.env_extra = {}
    b.start()
    s.send(300, 150)
    s.flush()
    assert len(s.acked) == 450
    table_dir = iceberg_util.table_dir(b, topic)
    _, rows, _ = iceberg_util.wait_rows(table_dir, 450, timeout=90)
    values = rows.column("value").to_pylist()
    assert len(values) == len(set(values)) == 450, "table rows are not exactly once"

    def kinds():
        db = sqlite3.connect("file:%s?mode=ro" % os.path.join(b.data_dir, "meta.db"), uri=True,
                             timeout=30)
        try:
            rs = db.execute("SELECT key, val FROM kv WHERE key >= CAST('/ls/log/' AS BLOB)"
                            " AND key < CAST('/ls/log0' AS BLOB)").fetchall()
        finally:
            db.close()
        return {bytes(v)[1] for k, v in rs if b"/idx/" in bytes(k)}

    wait_until(lambda: kinds() == {3}, 60, what="every range in the table")
    assert not os.path.isdir(os.path.join(b.data_dir, "objects", "co")) or not any(
        fs for _d, _s, fs in os.walk(os.path.join(b.data_dir, "objects", "co")))
    b.restart()  # a cold read cache: every record rebuilt from the rows
    check_log(b, topic, s.acked)


# the table-maintenance steps (iceberg_table.c, file_rewrite.c): after a
# commit that expired snapshots, before their files are deleted; after
# orphans were found, before they are deleted; after a rewrite of small data
# files wrote its new files, before its replace commit (a merge is crashed in
# the unit tests: it needs 100 commits)
MAINTENANCE_POINTS = ["table.expiry_committed", "table.orphans_found", "table.rewrite_written"]


@pytest.mark.parametrize("point", MAINTENANCE_POINTS)
def test_crash_in_table_maintenance(broker_factory, point):
    iceberg_util.local_store_only()
    import time
    flags = ("--compaction.min.age.ms=0", "--compaction.interval.ms=200",
             "--log.retention.check.interval.ms=300", "--table.orphan.grace.ms=1000")
    b = broker_factory(*flags)
    topic = create_topic(b.bootstrap, unique_topic("crashm"), partitions=PARTS,
                         config={"lakestream.table.enabled": "true",
                                 "lakestream.table.commit.interval.ms": "1000",
                                 "lakestream.table.snapshot.retention.ms": "1000",
                                 "lakestream.table.rewrite.min.files": "4"})
    s = Sender(b.bootstrap, topic)
    s.send(0, 150)
    s.flush()
    tdir = iceberg_util.table_dir(b, topic)
    iceberg_util.wait_rows(tdir, 150)
    junk = os.path.join(tdir, "data", "orphan-from-an-engine.parquet")
    b.stop()
    with open(junk, "wb") as fp:
        fp.write(b"not referenced")
    old = time.time() - 3600
    os.utime(junk, (old, old))
    b.env_extra = {"LS_CRASH_AT": point}
    b.start()
    n = 150
    deadline = time.monotonic() + 60
    while b.alive() and time.monotonic() < deadline:   # commits 1 s apart until it dies
        s.send(n, 30)
        n += 30
        time.sleep(0.5)
    b.wait_crashed()
    assert ("crash point %s reached" % point) in b.log_text()
    b.env_extra = {}
    b.start()
    s.flush()
    s.send(n, 60)
    n += 60
    s.flush()
    assert len(s.acked) == n
    t, rows, _ = iceberg_util.wait_rows(tdir, n, timeout=90)
    values = rows.column("value").to_pylist()
    assert len(values) == len(set(values)) == n, "table rows are not exactly once"
    for task in t.scan().plan_files():   # nothing the table references was deleted
        assert os.path.exists(task.file.file_path[len("file://"):])
    wait_until(lambda: not os.path.exists(junk), 30, what="the orphan removed after restart")
    check_log(b, topic, s.acked)


# the steps of a key compaction (compact/keycompact.c): a rewritten object
# written but not swapped in (an orphan, deleted later); one group swapped,
# the next ones not (the log half compacted)
KEYCOMPACT_POINTS = ["keycompact.object_written", "keycompact.swapped"]


@pytest.mark.parametrize("point", KEYCOMPACT_POINTS)
def test_crash_in_a_key_compaction(broker_factory, point):
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource
    flags = ("--compaction.min.age.ms=0", "--compaction.interval.ms=200", "--wal.gc.grace.ms=0",
             "--compaction.max.bytes=2048")   # small objects: several groups per pass
    b = broker_factory(*flags)
    topic = create_topic(b.bootstrap, unique_topic("crashk"),
                         config={"min.cleanable.dirty.ratio": "0.01"})
    model = produce_keyed(b.bootstrap, topic, 500, 30, 20, seed=7)
    want = latest_per_key(model)
    b.stop()
    b.env_extra = {"LS_CRASH_AT": point}
    b.start()
    # the policy becomes compact: the next pass key-compacts and dies at `point`
    res = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[
        ConfigEntry("cleanup.policy", "compact",
                    incremental_operation=AlterConfigOpType.SET)])
    a = admin(b.bootstrap)
    a.incremental_alter_configs([res])[res].result(30)
    b.wait_crashed()
    assert ("crash point %s reached" % point) in b.log_text()
    b.env_extra = {}
    b.start()
    # right after the restart: every key's latest record, no deleted key back
    got = read_keyed(b.bootstrap, topic)
    latest = {}
    for off in sorted(got):
        assert got[off] == model[off], "offset %d changed" % off
        latest[got[off][0]] = off
    assert latest == {kv[0]: off for off, kv in want.items()}
    # and compaction then finishes the job
    wait_until(lambda: read_keyed(b.bootstrap, topic) == want, 60, what="key compaction")


# the steps of an upsert table's commit (lake/materialize.c): files rewritten
# (copy-on-write) or position deletes (merge-on-read) and new rows written
# but not committed; metadata written; the pointer swapped but the index not;
# the table committed, swaps pending; and for merge-on-read the maintenance
# rewrite that folds deletes into data files, its files written, not committed
UPSERT_POINTS = ["table.data_written", "table.metadata_written", "table.pointer_swapped",
                 "compact.table_committed"]
UPSERT_CASES = [(p, "copy-on-write") for p in UPSERT_POINTS] + \
    [(p, "merge-on-read") for p in UPSERT_POINTS + ["table.rewrite_written"]] + \
    [(p, "merge-on-read-v3") for p in UPSERT_POINTS + ["table.rewrite_written"]]


@pytest.mark.parametrize("point,strategy", UPSERT_CASES)
def test_crash_in_an_upsert_commit(broker_factory, point, strategy):
    """kill -9 inside an overwrite commit of an upsert table: after a restart
    the table holds exactly the latest value of every key, once
    (merge-on-read-v3: format version 3, deletion vectors)."""
    iceberg_util.local_store_only()
    from test_upsert_tables import UPSERT, table_state, wait_caught_up
    b = broker_factory("--compaction.min.age.ms=0", "--compaction.interval.ms=200")
    cfg = dict(UPSERT, **{"lakestream.table.upsert.strategy": strategy.replace("-v3", ""),
                          "lakestream.table.rewrite.min.files": "4"})
    if strategy.endswith("-v3"):
        cfg["lakestream.table.format.version"] = "3"
    topic = create_topic(b.bootstrap, unique_topic("crashu"), partitions=PARTS, config=cfg)
    model, last, errs = {}, {}, []

    def cb(err, msg):
        if err is not None:
            errs.append(err)
        else:
            last[msg.partition()] = max(last.get(msg.partition(), -1), msg.offset())
    # one idempotent producer outlives the crash (its records are retried)
    p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all",
                  "enable.idempotence": True, "linger.ms": 5,
                  "message.timeout.ms": 120000, "retry.backoff.ms": 50,
                  "reconnect.backoff.ms": 20, "reconnect.backoff.max.ms": 300})

    def send(start, n):
        for i in range(start, start + n):
            k = b"k%d" % (i % 40)
            v = None if i % 7 == 3 else b"v%d" % i
            if v is None:
                model.pop(k, None)
            else:
                model[k] = v
            p.produce(topic, key=k, value=v, partition=(i % 40) % PARTS, on_delivery=cb)
        p.poll(0)
    tdir = iceberg_util.table_dir(b, topic)
    send(0, 120)                       # a first commit: every key has a row
    assert p.flush(120) == 0 and not errs, errs
    wait_caught_up(tdir, last)
    b.stop()
    b.env_extra = {"LS_CRASH_AT": point}
    b.start()
    n = 120
    deadline = time.monotonic() + 60
    while b.alive() and time.monotonic() < deadline:   # commits overwrite rows until it dies
        send(n, 40)
        n += 40
        time.sleep(0.5)
    b.wait_crashed()
    assert ("crash point %s reached" % point) in b.log_text()
    b.env_extra = {}
    b.start()
    send(n, 60)
    assert p.flush(120) == 0 and not errs, errs
    t = wait_caught_up(tdir, last, timeout=90)
    assert table_state(t) == model
    for task in t.scan().plan_files():   # nothing the table references was deleted
        for f in [task.file] + list(task.delete_files):
            assert os.path.exists(f.file_path[len("file://"):])


TXN_POINTS = ["txn.decided", "txn.markers_written"]


@pytest.mark.parametrize("point", TXN_POINTS)
def test_crash_while_finishing_a_transaction(broker_factory, point):
    """kill -9 after a commit decision and again after an abort decision:
    after a restart the committed records are visible to read_committed
    consumers exactly once and the aborted ones never."""
    import uuid
    from confluent_kafka import Consumer, KafkaError, TopicPartition
    b = broker_factory("--transaction.abort.timed.out.transaction.cleanup.interval.ms=500")
    topic = create_topic(b.bootstrap, unique_topic("crash-txn"), partitions=PARTS)
    want = []
    for commit in (True, False):
        b.stop()
        b.env_extra = {"LS_CRASH_AT": point}
        b.start()
        conf = {"bootstrap.servers": b.bootstrap, "transactional.id": "tx-" + uuid.uuid4().hex,
                "transaction.timeout.ms": 60000, "reconnect.backoff.ms": 20,
                "reconnect.backoff.max.ms": 300}
        p = Producer(conf)
        p.init_transactions(30)
        p.begin_transaction()
        vals = [b"%s-%d" % (b"c" if commit else b"a", i) for i in range(30)]
        for i, v in enumerate(vals):
            p.produce(topic, v, partition=i % PARTS)
        p.flush(30)
        # EndTxn is answered once the decision is durable; the broker dies
        # right after (or before the answer left): the client retries on the
        # restarted broker, which finishes the decision first
        outcome = []
        end = threading.Thread(target=lambda: outcome.append(
            p.commit_transaction(120) if commit else p.abort_transaction(120)))
        end.start()
        b.wait_crashed()
        assert ("crash point %s reached" % point) in b.log_text()
        b.env_extra = {}
        b.start()
        end.join(150)
        assert outcome == [None], "EndTxn did not complete after the restart"
        # EndTxn may have been answered before the crash: a new instance of the
        # id waits (CONCURRENT_TRANSACTIONS) until the decision is finished
        Producer(conf).init_transactions(60)
        if commit:
            want += vals
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "g-" + uuid.uuid4().hex,
                  "isolation.level": "read_committed", "enable.partition.eof": True,
                  "auto.offset.reset": "earliest"})
    c.assign([TopicPartition(topic, i, 0) for i in range(PARTS)])
    got, eof = [], set()

    def caught_up():
        m = c.poll(0.5)
        if m is not None:
            if m.error():
                assert m.error().code() == KafkaError._PARTITION_EOF, m.error()
                eof.add(m.partition())
            else:
                eof.discard(m.partition())
                got.append(m.value())
        return len(eof) == PARTS and len(got) >= len(want)
    wait_until(caught_up, 60, what="read_committed consumer at the end")
    c.close()
    assert sorted(got) == sorted(want)
