"""The transaction admin surface (KIP-664): ListTransactions,
DescribeTransactions, DescribeProducers and the abort of a hanging
transaction (WriteTxnMarkers), through Kafka's own kafka-transactions.sh
(TransactionsCommand, jars in .cache/java/tools from tools/install-deps.sh)
and `lakestream transactions`, with librdkafka transactional producers."""

import os
import sqlite3
import subprocess
import time
import uuid

import pytest
from confluent_kafka import Consumer, TopicPartition

import lsbroker
from kafka_util import admin, create_topic, unique_topic
from test_transactions import read_all, txn_producer

pytestmark = pytest.mark.store_agnostic  # the S3 stage leaves it out (pytest.ini)


TOOLS_LIB = os.path.join(lsbroker.ROOT, ".cache", "java", "tools")
JVM = ["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]


def kafka_transactions(bootstrap, *args, check=True):
    """kafka-transactions.sh ARGS: its stdout (asserting success when check)."""
    if not os.path.isdir(TOOLS_LIB) or not any(f.startswith("kafka-tools-")
                                               for f in os.listdir(TOOLS_LIB)):
        pytest.fail("no Kafka tools jars in %s; run tools/install-deps.sh test" % TOOLS_LIB,
                    pytrace=False)
    cmd = JVM + ["-cp", os.path.join(TOOLS_LIB, "*"), "org.apache.kafka.tools.TransactionsCommand",
                 "--bootstrap-server", bootstrap] + list(args)
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if check:
        assert r.returncode == 0, "kafka-transactions %s: rc %d\n%s\n%s" % (
            " ".join(args), r.returncode, r.stdout, r.stderr)
    return r


def table(out):
    """Rows of a tool's table output (whitespace-separated, header first) as dicts."""
    lines = [ln.split() for ln in out.strip().splitlines() if ln.strip()]
    head = lines[0]
    return [dict(zip(head, row)) for row in lines[1:]]


def cli(bootstrap, *args):
    return subprocess.run([lsbroker.binary_path(), "transactions", "--bootstrap", bootstrap]
                          + list(args), capture_output=True, text=True, timeout=60)


def lso(bootstrap, topic, partition):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "lso-" + uuid.uuid4().hex,
                  "isolation.level": "read_committed"})
    try:
        return c.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)[1]
    finally:
        c.close()


def test_list_describe_and_producers_of_open_and_finished_transactions(broker):
    b = broker.bootstrap
    t = create_topic(b, unique_topic("txadm"), partitions=2)
    open_id, done_id = "open-" + uuid.uuid4().hex[:8], "done-" + uuid.uuid4().hex[:8]
    po = txn_producer(b, open_id)
    pd = txn_producer(b, done_id)
    pd.begin_transaction()
    pd.produce(t, b"c", partition=1)
    pd.commit_transaction(30)
    po.begin_transaction()
    ts0 = int(time.time() * 1000) - 60000
    for i in range(3):
        po.produce(t, b"o%d" % i, partition=0, timestamp=ts0 + i)
    po.flush(30)

    rows = {r["TransactionalId"]: r for r in table(kafka_transactions(b, "list").stdout)}
    assert rows[open_id]["TransactionState"] == "Ongoing"
    assert rows[done_id]["TransactionState"] == "CompleteCommit"

    d = table(kafka_transactions(b, "describe", "--transactional-id", open_id).stdout)[0]
    assert d["TransactionState"] == "Ongoing"
    assert d["TransactionTimeoutMs"] == "60000"
    assert int(d["CurrentTransactionStartTimeMs"]) > 0
    assert "%s-0" % t in d["TopicPartitions"]
    pid = int(d["ProducerId"])
    assert rows[open_id]["ProducerId"] == str(pid)

    missing = kafka_transactions(b, "describe", "--transactional-id", "no-such-id", check=False)
    assert missing.returncode != 0
    assert "could not be found" in missing.stdout + missing.stderr

    prods = table(kafka_transactions(b, "describe-producers", "--topic", t,
                                     "--partition", "0").stdout)
    mine = [p for p in prods if p["ProducerId"] == str(pid)]
    assert len(mine) == 1
    assert mine[0]["CurrentTransactionStartOffset"] == "0"
    assert mine[0]["LastSequence"] == "2"
    # the max timestamp of its last batch, as Kafka keeps it (was -1)
    assert mine[0]["LastTimestamp"] == str(ts0 + 2), mine
    assert mine[0]["LatestCoordinatorEpoch"] == "-1"

    # our CLI shows the same, and filters by state and age (ListTransactions v1)
    r = cli(b, "list", "--state", "Ongoing")
    assert r.returncode == 0, r.stderr
    assert open_id in r.stdout and done_id not in r.stdout
    r = cli(b, "list", "--older-than", "3600000")
    assert r.returncode == 0 and open_id not in r.stdout and done_id not in r.stdout
    r = cli(b, "list", "--state", "Bogus")
    assert r.returncode == 1 and "unknown state 'Bogus'" in r.stderr
    r = cli(b, "describe", open_id)
    assert r.returncode == 0, r.stderr
    assert "Ongoing" in r.stdout and "%s-0" % t in r.stdout and str(pid) in r.stdout
    assert cli(b, "describe", "no-such-id").returncode == 2
    r = cli(b, "producers", "--topic", t, "--partition", "0")
    assert r.returncode == 0 and str(pid) in r.stdout
    row = [ln for ln in r.stdout.splitlines() if ln.startswith(str(pid))][0]
    assert row.split()[-1] == time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime((ts0 + 2) // 1000)) \
        + ".%03dZ" % ((ts0 + 2) % 1000), row

    # an abort of a transaction its coordinator still runs is refused
    r = cli(b, "abort", "--topic", t, "--partition", "0", "--producer-id", str(pid))
    assert r.returncode == 1 and "INVALID_TXN_STATE" in r.stderr
    # ... and Kafka's find-hanging sees that it is not hanging
    assert table(kafka_transactions(b, "find-hanging", "--broker-id", "0").stdout) == []
    po.commit_transaction(30)
    d = table(kafka_transactions(b, "describe", "--transactional-id", open_id).stdout)[0]
    assert d["TransactionState"] in ("PrepareCommit", "CompleteCommit")
    lsbroker.wait_until(lambda: not [
        p for p in table(kafka_transactions(b, "describe-producers", "--topic", t,
                                            "--partition", "0").stdout)
        if p["ProducerId"] == str(pid) and p["CurrentTransactionStartOffset"] != "None"],
        30, what="the commit marker closing the transaction on the log")


def test_abort_a_hanging_transaction(broker):
    """A transaction open on a log whose coordinator record is gone (what an
    evicted producer entry or a lost record would leave) holds the LSO until
    an operator aborts it: first with our CLI, then with kafka-transactions.sh
    abort --start-offset on another partition."""
    b = broker.bootstrap
    t = create_topic(b, unique_topic("txhang"), partitions=2)
    tid = "hang-" + uuid.uuid4().hex[:8]
    p = txn_producer(b, tid)
    p.begin_transaction()
    # written 20 minutes ago: Kafka's find-hanging takes a transaction whose
    # producer's last batch (DescribeProducers' LastTimestamp) is older than
    # transaction.max.timeout.ms (15 min) as a candidate
    old = int(time.time() * 1000) - 20 * 60000
    for part in (0, 1):
        for i in range(2):
            p.produce(t, b"h%d" % i, partition=part, timestamp=old + i)
    p.flush(30)
    pid = int(table(kafka_transactions(b, "describe", "--transactional-id", tid).stdout)[0][
        "ProducerId"])
    # the coordinator forgets the transaction: its record is removed from the store
    db = sqlite3.connect(os.path.join(broker.data_dir, "meta.db"), timeout=30)
    with db:
        n = db.execute("DELETE FROM kv WHERE key = ?", (("/ls/txn/state/" + tid).encode(),)).rowcount
    db.close()
    assert n == 1
    assert lso(b, t, 0) == 0 and lso(b, t, 1) == 0

    # Kafka's find-hanging: open on the logs, unknown to the coordinator
    hanging = kafka_transactions(b, "find-hanging", "--broker-id", "0").stdout
    assert {(r["Topic"], r["Partition"], r["ProducerId"]) for r in table(hanging)} == \
        {(t, "0", str(pid)), (t, "1", str(pid))}

    r = cli(b, "abort", "--topic", t, "--partition", "0", "--producer-id", "999999")
    assert r.returncode == 1 and "no open transaction" in r.stderr
    r = cli(b, "abort", "--topic", t, "--partition", "0", "--producer-id", str(pid))
    assert r.returncode == 0, r.stderr
    assert "aborted" in r.stdout
    assert lso(b, t, 0) == 3  # two records and the abort marker

    kafka_transactions(b, "abort", "--topic", t, "--partition", "1", "--start-offset", "0")
    assert lso(b, t, 1) == 3
    assert read_all(b, t, 2, "read_committed") == []
    assert len(read_all(b, t, 2, "read_uncommitted")) == 4
    # aborting again: nothing is open any more
    r = cli(b, "abort", "--topic", t, "--partition", "1", "--producer-id", str(pid))
    assert r.returncode == 1 and "no open transaction" in r.stderr


def test_commit_markers_are_refused(broker):
    """WriteTxnMarkers serves the operator's abort only: a commit marker
    written from outside the coordinator is INVALID_REQUEST."""
    import socket
    import struct
    b = broker.bootstrap
    t = create_topic(b, unique_topic("txcommit"), partitions=1)
    host, port = b.rsplit(":", 1)
    name = t.encode()
    # WriteTxnMarkers v0 (classic encoding): one commit marker for t-0
    body = struct.pack(">i", 1) + struct.pack(">qh?", 7, 0, True) + struct.pack(">i", 1) + \
        struct.pack(">h", len(name)) + name + struct.pack(">ii", 1, 0) + struct.pack(">i", 0)
    hdr = struct.pack(">hhih", 27, 0, 42, 4) + b"test"
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(struct.pack(">i", len(hdr) + len(body)) + hdr + body)
        n = struct.unpack(">i", s.recv(4, socket.MSG_WAITALL))[0]
        resp = s.recv(n, socket.MSG_WAITALL)
    # corr, [markers: pid, [topics: name, [partitions: idx, err]]]
    off = 4 + 4
    assert struct.unpack_from(">q", resp, off)[0] == 7
    off += 8 + 4
    nlen = struct.unpack_from(">h", resp, off)[0]
    off += 2 + nlen + 4
    idx, err = struct.unpack_from(">ih", resp, off)
    assert (idx, err) == (0, 42)


def test_every_coordinator_answers_for_its_own_ids(cluster):
    """Two brokers: each lists the ids it coordinates; Kafka's tool and our
    CLI ask every broker and see all of them; describe finds the
    coordinator; any broker describes the producers of any partition."""
    nodes = [cluster.add() for _ in range(2)]
    b = cluster.bootstrap
    t = create_topic(b, unique_topic("txclu"), partitions=1)
    # ids and group ids share the coordinator choice (FindCoordinator): three per broker
    a = admin(b)
    by_node = {1: [], 2: []}
    while min(len(v) for v in by_node.values()) < 3:
        g = unique_topic("clu")
        node = a.describe_consumer_groups([g])[g].result(10).coordinator.id
        if len(by_node[node]) < 3:
            by_node[node].append(g)
    ids = by_node[1] + by_node[2]
    producers = []
    for tid in ids:
        p = txn_producer(b, tid)
        p.begin_transaction()
        p.produce(t, tid.encode(), partition=0)
        p.flush(30)
        producers.append(p)

    rows = table(kafka_transactions(nodes[0].bootstrap, "list").stdout)
    assert {r["TransactionalId"] for r in rows} >= set(ids)
    mine = [r for r in rows if r["TransactionalId"] in ids]
    assert {r["TransactionState"] for r in mine} == {"Ongoing"}
    r = cli(nodes[1].bootstrap, "list", "--state", "Ongoing")
    assert r.returncode == 0, r.stderr
    listed = {ln.split()[0]: int(ln.split()[3]) for ln in r.stdout.splitlines()[1:]}
    assert {tid: listed.get(tid) for tid in ids} == \
        {tid: node for node, tids in by_node.items() for tid in tids}
    for tid in ids:  # asked through node 1, answered by the coordinator
        d = cli(nodes[0].bootstrap, "describe", tid)
        assert d.returncode == 0 and "Ongoing" in d.stdout, (tid, d.stdout, d.stderr)
    prods = table(kafka_transactions(nodes[1].bootstrap, "describe-producers", "--topic", t,
                                      "--partition", "0").stdout)
    assert sorted(int(p["CurrentTransactionStartOffset"]) for p in prods) == list(range(6))
    for p in producers:
        p.commit_transaction(30)


def test_kafka_features_describes_transaction_version_2(broker):
    """`kafka-features.sh describe` (Kafka's FeatureCommand, Admin.describeFeatures
    over ApiVersions) shows transaction.version finalized at 2 (and group.version
    at 1: the KIP-848 consumer protocol is served; share.version at 1: share
    groups are; streams.version at 1: streams groups are)."""
    cmd = JVM + ["-cp", os.path.join(TOOLS_LIB, "*"), "org.apache.kafka.tools.FeatureCommand",
                 "--bootstrap-server", broker.bootstrap, "describe"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    rows = [ln.split() for ln in r.stdout.splitlines() if ln.startswith("Feature:")]
    by_name = {row[1]: dict(zip(row[2::2], row[3::2])) for row in rows}
    assert sorted(by_name) == ["group.version", "share.version", "streams.version",
                               "transaction.version"], r.stdout
    assert by_name["transaction.version"] == {
        "SupportedMinVersion:": "0", "SupportedMaxVersion:": "2",
        "FinalizedVersionLevel:": "2", "Epoch:": "1"}, r.stdout
    for name in ("group.version", "share.version", "streams.version"):
        assert by_name[name] == {
            "SupportedMinVersion:": "0", "SupportedMaxVersion:": "1",
            "FinalizedVersionLevel:": "1", "Epoch:": "1"}, r.stdout
