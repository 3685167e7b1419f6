"""Share groups (KIP-932, "queues for Kafka") with Kafka's own clients and tools:
the Java share consumer (tests/integration/java/ShareGroupTest.java, kafka-clients
4.4 with its defaults), kafka-configs for the group's share.auto.offset.reset,
and kafka-console-share-consumer. Each record goes to one member at a time;
what a member accepted is never delivered again, also after a broker restart
(the share-partition state lives in the metadata store); a released record
comes back with its delivery count raised, a rejected one never; a lock that
runs out hands the record to another member.
"""

import json
import os
import subprocess
import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

import lsbroker

pytestmark = pytest.mark.store_agnostic  # the S3 stage leaves it out (pytest.ini)


ROOT = lsbroker.ROOT
LIB = os.path.join(ROOT, ".cache", "java", "lib")
TOOLS_LIB = os.path.join(ROOT, ".cache", "java", "tools")
JVM = ["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]
LOCK_MS = 2000
# Kafka's group.share.min.record.lock.duration.ms is 15 s: lowered with the lock
SHORT_LOCK = ("--group.share.record.lock.duration.ms=%d" % LOCK_MS,
              "--group.share.min.record.lock.duration.ms=%d" % LOCK_MS)


def uid(prefix):
    return "%s-%s" % (prefix, uuid.uuid4().hex[:8])


@pytest.fixture(scope="module")
def share_test_classes(tmp_path_factory):
    if not os.path.isdir(LIB):
        pytest.fail("no Kafka client jars in %s; run tools/install-deps.sh test" % LIB,
                    pytrace=False)
    out = str(tmp_path_factory.mktemp("sharejava"))
    r = subprocess.run(["javac", "-nowarn", "-cp", os.path.join(LIB, "*"), "-d", out,
                        os.path.join(ROOT, "tests", "integration", "java", "ShareGroupTest.java")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return out


def run_java(classes, bootstrap, *args):
    env = dict(os.environ, LS_TEST_BOOTSTRAP=bootstrap)
    r = subprocess.run(JVM + ["-cp", classes + ":" + os.path.join(LIB, "*"), "ShareGroupTest"]
                       + [str(a) for a in args], capture_output=True, text=True, timeout=240,
                       env=env)
    lines = [l for l in r.stdout.splitlines() if l.startswith(("RESULT ", "FAIL "))]
    assert r.returncode == 0 and lines and lines[-1].startswith("RESULT "), \
        r.stdout[-3000:] + r.stderr[-3000:]
    return json.loads(lines[-1][len("RESULT "):])


def kafka_tool(main, bootstrap, *args):
    cmd = JVM + ["-cp", os.path.join(TOOLS_LIB, "*"), main, "--bootstrap-server", bootstrap] \
        + list(args)
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def setup_topic(bootstrap, topic, group, partitions, n, tag="v", earliest=True):
    a = AdminClient({"bootstrap.servers": bootstrap})
    for f in a.create_topics([NewTopic(topic, partitions, 1)]).values():
        f.result(30)
    if earliest:  # Kafka's own tool sets the group config
        kafka_tool("org.apache.kafka.tools.ConfigCommand", bootstrap, "--alter", "--entity-type",
                   "groups", "--entity-name", group, "--add-config",
                   "share.auto.offset.reset=earliest")
    produce(bootstrap, topic, partitions, n, tag)


def share_offsets(bootstrap, group, topic):
    """{partition: (start offset, lag)} from kafka-share-groups --describe."""
    out = kafka_tool("org.apache.kafka.tools.consumer.group.ShareGroupCommand", bootstrap,
                     "--describe", "--group", group)
    rows = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 5 and f[0] == group and f[1] == topic and f[3] != "-":
            rows[int(f[2])] = (int(f[3]), int(f[4]))
    return rows


def produce(bootstrap, topic, partitions, n, tag):
    p = Producer({"bootstrap.servers": bootstrap})
    for i in range(n):
        p.produce(topic, value=("%s-%d" % (tag, i)).encode(), partition=i % partitions)
    assert p.flush(30) == 0


@pytest.fixture
def share_broker(broker_factory):
    return broker_factory(*SHORT_LOCK)


def test_share_consumers_read_each_record_once_and_accepted_records_survive_restart(
        share_broker, share_test_classes):
    topic, group = uid("share"), uid("share-g")
    setup_topic(share_broker.bootstrap, topic, group, 3, 300)
    res = run_java(share_test_classes, share_broker.bootstrap, "read", topic, group, 300)
    seen = res["seen"]
    assert len(seen) == 300 and max(seen.values()) == 1, "lost or delivered twice: %s" % res
    assert res["described"] == "Stable members=2", res
    # accepted records stay accepted through a restart: only new ones come
    share_broker.restart()
    produce(share_broker.bootstrap, topic, 3, 90, "w")
    res = run_java(share_test_classes, share_broker.bootstrap, "read", topic, group, 90)
    assert sorted(res["seen"]) == sorted("w-%d" % i for i in range(90)), res
    assert max(res["seen"].values()) == 1, res


def test_release_redelivers_and_reject_archives(share_broker, share_test_classes):
    topic, group = uid("share-ack"), uid("share-ack-g")
    setup_topic(share_broker.bootstrap, topic, group, 1, 20)
    res = run_java(share_test_classes, share_broker.bootstrap, "ack", topic, group)
    assert res["released_delivery_count"] == 2, res
    assert res["rejected_again"] == 0, res
    assert res["accepted"] == 19, res  # 18 once, and the released one on its return


def test_expired_lock_hands_records_to_another_member(share_broker, share_test_classes):
    topic, group = uid("share-lock"), uid("share-lock-g")
    setup_topic(share_broker.bootstrap, topic, group, 1, 30)
    res = run_java(share_test_classes, share_broker.bootstrap, "lock", topic, group)
    # 2 when B gets them first; A's client keeps fetching in the background
    # (it never acknowledges), so on a loaded machine it may take a record
    # once more before B does: more than one delivery, within the limit (5)
    assert res["held"] > 0 and res["same"] and 2 <= res["delivery_count"] <= 5, res


def test_latest_is_the_default_start_and_console_share_consumer_reads(share_broker):
    topic, group = uid("share-latest"), uid("share-latest-g")
    # no group config: share.auto.offset.reset=latest, so records produced
    # before the group's first fetch are not delivered
    setup_topic(share_broker.bootstrap, topic, group, 1, 25, tag="old", earliest=False)
    cmd = JVM + ["-cp", os.path.join(TOOLS_LIB, "*"),
                 "org.apache.kafka.tools.consumer.ConsoleShareConsumer", "--bootstrap-server",
                 share_broker.bootstrap, "--topic", topic, "--group", group,
                 "--max-messages", "10", "--timeout-ms", "60000"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # the share partition is initialized by the console consumer's first
        # fetch: keep producing until its records arrive
        lsbroker.wait_until(lambda: (produce(share_broker.bootstrap, topic, 1, 5, "new"),
                                     proc.poll() is not None)[1], timeout=90, interval=0.5,
                            what="the console share consumer to read 10 records")
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    lines = out.split()
    assert proc.returncode == 0 and len(lines) == 10, out + err
    assert all(l.startswith("new-") for l in lines), lines


def test_share_group_refuses_other_protocols_and_tools_list_it(share_broker,
                                                               share_test_classes):
    topic, group = uid("share-types"), uid("share-types-g")
    setup_topic(share_broker.bootstrap, topic, group, 1, 5)
    run_java(share_test_classes, share_broker.bootstrap, "read", topic, group, 5)
    # a classic or consumer-protocol member is refused: the group is a share group
    c = Consumer({"bootstrap.servers": share_broker.bootstrap, "group.id": group,
                  "group.protocol": "consumer"})
    try:
        c.subscribe([topic])
        with pytest.raises(KafkaException) as e:
            for _ in range(100):
                m = c.poll(0.2)
                if m is not None and m.error():
                    raise KafkaException(m.error())
        assert "group id does not exist" in str(e.value), str(e.value)  # GROUP_ID_NOT_FOUND
    finally:
        c.close()
    listed = kafka_tool("org.apache.kafka.tools.consumer.group.ShareGroupCommand",
                        share_broker.bootstrap, "--list")
    assert group in listed.split(), listed
    described = kafka_tool("org.apache.kafka.tools.consumer.group.ShareGroupCommand",
                           share_broker.bootstrap, "--describe", "--group", group, "--state")
    assert group in described and "Empty" in described, described
    # offsets (DescribeShareGroupOffsets): all 5 records accepted, nothing left
    rows = share_offsets(share_broker.bootstrap, group, topic)
    assert rows == {0: (5, 0)}, rows
    # and our own CLI says the same: type share, start offset 5, lag 0
    r = subprocess.run([lsbroker.binary_path(), "groups", "--bootstrap", share_broker.bootstrap,
                        "describe", group], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "type share" in r.stdout, r.stdout
    row = [ln.split() for ln in r.stdout.splitlines() if ln.startswith(topic + " ")]
    assert row == [[topic, "0", "5", "0", "-"]], r.stdout
    # reset to the earliest offset (AlterShareGroupOffsets): delivered again
    kafka_tool("org.apache.kafka.tools.consumer.group.ShareGroupCommand", share_broker.bootstrap,
               "--reset-offsets", "--group", group, "--topic", topic, "--to-earliest",
               "--execute")
    assert share_offsets(share_broker.bootstrap, group, topic) == {0: (0, 5)}
    res = run_java(share_test_classes, share_broker.bootstrap, "read", topic, group, 5)
    assert sorted(res["seen"]) == sorted("v-%d" % i for i in range(5)), res
    # delete the offsets (DeleteShareGroupOffsets), then the group (its states go too)
    kafka_tool("org.apache.kafka.tools.consumer.group.ShareGroupCommand", share_broker.bootstrap,
               "--delete-offsets", "--group", group, "--topic", topic)
    assert share_offsets(share_broker.bootstrap, group, topic) == {}
    run_java(share_test_classes, share_broker.bootstrap, "read", topic, group, 5)
    kafka_tool("org.apache.kafka.tools.consumer.group.ShareGroupCommand", share_broker.bootstrap,
               "--delete", "--group", group)
    listed = kafka_tool("org.apache.kafka.tools.consumer.group.ShareGroupCommand",
                        share_broker.bootstrap, "--list")
    assert group not in listed.split(), listed


def test_a_killed_members_records_come_back_when_its_connection_drops(broker_factory,
                                                                       share_test_classes):
    """As Kafka's broker: a share session ends with the connection that
    opened it, and what its member held goes back at once, not after the
    record lock (two minutes here) runs out."""
    b = broker_factory("--group.share.record.lock.duration.ms=120000",
                       "--group.share.max.record.lock.duration.ms=120000")
    topic, group = uid("share-drop"), uid("share-drop-g")
    setup_topic(b.bootstrap, topic, group, 1, 20)
    env = dict(os.environ, LS_TEST_BOOTSTRAP=b.bootstrap)
    proc = subprocess.Popen(JVM + ["-cp", share_test_classes + ":" + os.path.join(LIB, "*"),
                                   "ShareGroupTest", "hold", topic, group],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    try:
        line = ""
        while not line.startswith(("HELD ", "FAIL ")):
            line = proc.stdout.readline()
            assert line, "the holding member exited without holding anything"
        assert line.startswith("HELD "), line
    finally:
        proc.kill()  # SIGKILL: no close, no acknowledgement, the socket just drops
        proc.wait()
    res = run_java(share_test_classes, b.bootstrap, "read", topic, group, 20)
    assert sorted(res["seen"]) == sorted("v-%d" % i for i in range(20)), res


def test_read_committed_share_group_gets_no_aborted_or_open_transactions(share_broker,
                                                                         share_test_classes):
    """share.isolation.level=read_committed (set with Kafka's kafka-configs):
    records of an aborted transaction are archived, never delivered; an open
    transaction's are held back until it commits. A read_uncommitted group
    on the same topic gets everything."""
    bs = share_broker.bootstrap
    topic, group, raw = uid("share-txn"), uid("share-txn-g"), uid("share-raw-g")
    a = AdminClient({"bootstrap.servers": bs})
    for f in a.create_topics([NewTopic(topic, 2, 1)]).values():
        f.result(30)
    for g, level in ((group, "read_committed"), (raw, "read_uncommitted")):
        kafka_tool("org.apache.kafka.tools.ConfigCommand", bs, "--alter", "--entity-type", "groups",
                   "--entity-name", g, "--add-config",
                   "share.auto.offset.reset=earliest,share.isolation.level=" + level)
    out = kafka_tool("org.apache.kafka.tools.ConfigCommand", bs, "--describe", "--entity-type", "groups",
                     "--entity-name", group)
    assert "share.isolation.level=read_committed" in out, out
    p = Producer({"bootstrap.servers": bs, "transactional.id": uid("share-txn-p")})
    p.init_transactions(30)

    def txn(tag, lo, hi, commit=True, end=True):
        p.begin_transaction()
        for i in range(lo, hi):
            p.produce(topic, value=("%s-%d" % (tag, i)).encode(), partition=i % 2)
        p.flush(30)
        if end:
            (p.commit_transaction if commit else p.abort_transaction)(30)
    txn("c", 0, 50)
    txn("a", 0, 30, commit=False)
    txn("c", 50, 100)
    txn("o", 0, 10, end=False)  # open while the group reads
    res = run_java(share_test_classes, bs, "read", topic, group, 100)
    assert sorted(res["seen"]) == sorted("c-%d" % i for i in range(100)), res
    assert max(res["seen"].values()) == 1, res
    p.commit_transaction(30)
    res = run_java(share_test_classes, bs, "read", topic, group, 10)
    assert sorted(res["seen"]) == sorted("o-%d" % i for i in range(10)), res
    res = run_java(share_test_classes, bs, "read", topic, raw, 140)
    assert len(res["seen"]) == 140 and any(v.startswith("a-") for v in res["seen"]), res


def test_cluster_share_group_survives_its_coordinators_kill9(cluster, share_test_classes,
                                                            tmp_path):
    """Three brokers over etcd; two Java share consumers with explicit
    acknowledgement (one replaced every 5 s, a record in 50 released once)
    read while records are produced, and the broker coordinating the group
    (which also serves a third of the partitions) dies with kill -9 midway.
    Every acknowledged record is accepted; none past the delivery-count
    limit: the surviving brokers take the share-partition states over from
    the metadata store."""
    from test_cluster import FAST, group_coordinated_by  # noqa: E402 - the cluster's flags
    # a member closed while the coordinator dies never gets its leave through:
    # it holds its partitions until its session runs out (as on Kafka), so
    # sessions here are shorter than the scenario's 20 s of quiet
    nodes = [cluster.add(*FAST, *SHORT_LOCK,
                         "--group.share.session.timeout.ms=8000",
                         "--group.share.min.session.timeout.ms=8000",
                         "--group.share.heartbeat.interval.ms=2000",
                         "--group.share.min.heartbeat.interval.ms=2000")
             for _ in range(3)]
    for b in nodes:
        b.allow_errors(r"reading|connection|refused|watch|lease|GET|fetch|share")
    topic, partitions = uid("share-cluster"), 3
    a = AdminClient({"bootstrap.servers": cluster.bootstrap})
    for f in a.create_topics([NewTopic(topic, partitions, 1)]).values():
        f.result(30)
    group = group_coordinated_by(cluster.bootstrap, 2)  # node 2 dies
    out = str(tmp_path / "share-accepted.txt")
    env = dict(os.environ, LS_TEST_BOOTSTRAP=cluster.bootstrap)
    log_path = out + ".client.log"
    with open(log_path, "w") as log:  # a file: the client logs a lot
        proc = subprocess.Popen(JVM + ["-cp", share_test_classes + ":" + os.path.join(LIB, "*"),
                                       "ShareGroupTest", "soak", topic, group, "25", out],
                                stdout=log, stderr=subprocess.STDOUT, env=env)
    acked, failed = set(), []

    def cb(err, msg):
        if err is None:
            acked.add(msg.value())
        else:
            failed.append(str(err))
    p = Producer({"bootstrap.servers": cluster.bootstrap, "message.timeout.ms": 120000,
                  "reconnect.backoff.max.ms": 500})
    total = 1500
    for i in range(total):
        if i == total // 2:
            p.flush(60)
            nodes[1].kill9()
        p.produce(topic, value=b"s-%05d" % i, partition=i % partitions, on_delivery=cb)
        p.poll(0)
        time.sleep(0.01)
    assert p.flush(120) == 0
    assert not failed, failed[:5]
    try:
        proc.wait(timeout=240)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    with open(log_path) as f:
        text = f.read()
    lines = [l for l in text.splitlines() if l.startswith(("RESULT ", "FAIL "))]
    assert proc.returncode == 0 and lines and lines[-1].startswith("RESULT "), text[-3000:]
    result = json.loads(lines[-1][len("RESULT "):])
    accepted, counts = {}, {}
    with open(out, "rb") as f:
        for ln in f:
            count, _, value = ln.rstrip(b"\n").partition(b" ")
            accepted[value] = accepted.get(value, 0) + 1
            counts[int(count)] = counts.get(int(count), 0) + 1
    missing = sorted(v for v in acked if v not in accepted)
    assert not missing, (len(missing), missing[:5], result)
    assert max(counts) <= 5, counts
    assert result["released"] > 0 and result["replacements"] > 0, result


def test_by_duration_starts_at_the_first_record_that_recent(share_broker):
    """share.auto.offset.reset=by_duration:PT1H (KIP-1106): a share partition
    without state starts at the first record at most an hour old; kafka-configs
    describes the value as set."""
    bs = share_broker.bootstrap
    topic, group = uid("share-dur"), uid("share-dur-g")
    a = AdminClient({"bootstrap.servers": bs})
    for f in a.create_topics([NewTopic(topic, 1, 1)]).values():
        f.result(30)
    p = Producer({"bootstrap.servers": bs})
    now_ms = int(time.time() * 1000)
    for i in range(15):  # two hours old
        p.produce(topic, value=b"old-%d" % i, partition=0, timestamp=now_ms - 2 * 3600 * 1000)
    for i in range(10):
        p.produce(topic, value=b"new-%d" % i, partition=0, timestamp=now_ms - 60 * 1000)
    assert p.flush(30) == 0
    kafka_tool("org.apache.kafka.tools.ConfigCommand", bs, "--alter", "--entity-type", "groups",
               "--entity-name", group, "--add-config", "share.auto.offset.reset=by_duration:PT1H")
    out = kafka_tool("org.apache.kafka.tools.ConfigCommand", bs, "--describe", "--entity-type", "groups",
                     "--entity-name", group)
    assert "share.auto.offset.reset=by_duration:PT1H" in out, out
    r = subprocess.run(JVM + ["-cp", os.path.join(TOOLS_LIB, "*"),
                              "org.apache.kafka.tools.consumer.ConsoleShareConsumer",
                              "--bootstrap-server", bs, "--topic", topic, "--group", group,
                              "--max-messages", "10", "--timeout-ms", "60000"],
                       capture_output=True, text=True, timeout=120)
    lines = r.stdout.split()
    assert r.returncode == 0 and sorted(lines) == sorted("new-%d" % i for i in range(10)), \
        r.stdout + r.stderr
    assert share_offsets(bs, group, topic)[0] == (25, 0)  # all accepted, nothing left
    # a negative duration is refused, naming what is accepted
    cmd = JVM + ["-cp", os.path.join(TOOLS_LIB, "*"), "org.apache.kafka.tools.ConfigCommand",
                 "--bootstrap-server", bs, "--alter", "--entity-type", "groups", "--entity-name",
                 group, "--add-config", "share.auto.offset.reset=by_duration:-PT1H"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and "by_duration:<ISO-8601 duration" in r.stdout + r.stderr, \
        r.stdout + r.stderr


def test_group_lock_duration_and_delivery_limit_set_with_kafka_configs(share_broker):
    """A share group's own share.record.lock.duration.ms,
    share.delivery.count.limit, share.session.timeout.ms and
    share.heartbeat.interval.ms, set and described with Kafka's
    kafka-configs; a value outside the broker's group.share.{min,max}.*
    is refused naming the bound (the handler unit tests check each is
    applied)."""
    bs, group = share_broker.bootstrap, uid("share-cfg-g")
    kafka_tool("org.apache.kafka.tools.ConfigCommand", bs, "--alter", "--entity-type", "groups",
               "--entity-name", group, "--add-config",
               "share.record.lock.duration.ms=5000,share.delivery.count.limit=3,"
               "share.session.timeout.ms=50000,share.heartbeat.interval.ms=6000,"
               "share.partition.max.record.locks=500")
    out = kafka_tool("org.apache.kafka.tools.ConfigCommand", bs, "--describe", "--entity-type", "groups",
                     "--entity-name", group)
    for kv in ("share.record.lock.duration.ms=5000", "share.delivery.count.limit=3",
               "share.session.timeout.ms=50000", "share.heartbeat.interval.ms=6000",
               "share.partition.max.record.locks=500"):
        assert kv in out, out
    cmd = JVM + ["-cp", os.path.join(TOOLS_LIB, "*"), "org.apache.kafka.tools.ConfigCommand",
                 "--bootstrap-server", bs, "--alter", "--entity-type", "groups",
                 "--entity-name", group, "--add-config", "share.delivery.count.limit=11"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    assert r.returncode != 0, r.stdout
    assert "group.share.max.delivery.count.limit (10)" in r.stdout + r.stderr, r.stdout + r.stderr
