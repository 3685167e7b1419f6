"""Consumer groups of the KIP-848 protocol (group.protocol=consumer) with
librdkafka's defaults and Kafka's own ConsumerGroupCommand: the server-side
assignor splits the partitions, offsets commit, the tool describes the group
(ConsumerGroupDescribe) and lists its type, a restarted broker resumes the
group above the epoch it had, and an empty group changes protocol while one
with members keeps it. The Java client's runs are in
tests/integration/java/LakestreamClientTest.java (consumer_protocol_*).
"""

import os
import subprocess
import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

import lsbroker

pytestmark = pytest.mark.store_agnostic  # the S3 stage leaves it out (pytest.ini)


TOOLS_LIB = os.path.join(lsbroker.ROOT, ".cache", "java", "tools")
JVM = ["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]


def uid(prefix):
    return "%s-%s" % (prefix, uuid.uuid4().hex[:8])


def create(bootstrap, topic, partitions):
    a = AdminClient({"bootstrap.servers": bootstrap})
    for f in a.create_topics([NewTopic(topic, partitions, 1)]).values():
        f.result(30)


def produce(bootstrap, topic, partitions, n, tag):
    p = Producer({"bootstrap.servers": bootstrap})
    for i in range(n):
        p.produce(topic, value=("%s-%d" % (tag, i)).encode(), partition=i % partitions)
    assert p.flush(30) == 0


def consumer(bootstrap, group, protocol="consumer"):
    # librdkafka's defaults otherwise (with the consumer protocol the session
    # and heartbeat settings belong to the broker and may not be set)
    return Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                     "group.protocol": protocol, "auto.offset.reset": "earliest",
                     "enable.auto.commit": False})


def drain(consumers, want, seen, until=None, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and (len(seen) < want or (until and not until())):
        for c in consumers:
            msgs = c.consume(100, timeout=0.2)
            for m in msgs:
                if m.error() is None:
                    seen[m.value().decode()] = seen.get(m.value().decode(), 0) + 1
            if msgs:
                try:
                    c.commit(asynchronous=False)
                except KafkaException as e:
                    # sent with the epoch a rebalance just moved past: committed again
                    # next round (as with Kafka brokers before KIP-1251); others raise
                    if e.args[0].name() != "STALE_MEMBER_EPOCH":
                        raise
    return seen


def group_command(bootstrap, *args):
    if not os.path.isdir(TOOLS_LIB):
        pytest.fail("no Kafka tools jars in %s; run tools/install-deps.sh test" % TOOLS_LIB,
                    pytrace=False)
    cmd = JVM + ["-cp", os.path.join(TOOLS_LIB, "*"),
                 "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
                 "--bootstrap-server", bootstrap] + list(args)
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_librdkafka_consumer_protocol_shares_commits_and_describes(broker):
    topic, group = uid("kip848"), uid("kip848-g")
    create(broker.bootstrap, topic, 4)
    produce(broker.bootstrap, topic, 4, 400, "a")
    a, b = consumer(broker.bootstrap, group), consumer(broker.bootstrap, group)
    try:
        a.subscribe([topic])
        b.subscribe([topic])
        seen = drain([a, b], 400, {}, until=lambda: a.assignment() and b.assignment())
        assert len(seen) == 400 and max(seen.values()) == 1, "records read twice or lost"
        pa, pb = {p.partition for p in a.assignment()}, {p.partition for p in b.assignment()}
        assert pa and pb and not pa & pb and pa | pb == {0, 1, 2, 3}
        out = group_command(broker.bootstrap, "--describe", "--group", group, "--members",
                            "--verbose")
        assert out.count(topic) >= 2, out  # two members, each with its partitions
        state = group_command(broker.bootstrap, "--describe", "--group", group, "--state")
        assert "Stable" in state and "uniform" in state, state
        listed = group_command(broker.bootstrap, "--list", "--type", "consumer")
        assert group in listed.split(), listed
        assert group not in group_command(broker.bootstrap, "--list", "--type",
                                          "classic").split()
        # lakestream groups describes either kind, with each partition's owner
        r = subprocess.run([lsbroker.binary_path(), "groups", "--bootstrap", broker.bootstrap,
                            "describe", group], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0 and "type consumer" in r.stdout, r.stdout + r.stderr
        rows = [line.split() for line in r.stdout.splitlines() if line.startswith(topic)]
        assert len(rows) == 4 and all(f[5] != "-" for f in rows), r.stdout
        r = subprocess.run([lsbroker.binary_path(), "groups", "--bootstrap", broker.bootstrap,
                            "list"], capture_output=True, text=True, timeout=60)
        assert any(line.split()[:1] == [group] and "consumer" in line.split()[2:3]
                   for line in r.stdout.splitlines()), r.stdout
    finally:
        a.close()
        b.close()
    off = group_command(broker.bootstrap, "--describe", "--group", group, "--offsets")
    lags = [line.split() for line in off.splitlines() if topic in line]
    assert len(lags) == 4 and all(f[3] == "100" and f[5] == "0" for f in lags), off


def test_group_resumes_after_a_restart(broker):
    """The group record holds the members, their epochs and partitions, stored
    before any heartbeat that changed them is answered: after a restart the
    member goes on (commits with its epoch succeed) and the epoch never goes
    back."""
    topic, group = uid("kip848r"), uid("kip848r-g")
    create(broker.bootstrap, topic, 2)
    produce(broker.bootstrap, topic, 2, 100, "before")
    c = consumer(broker.bootstrap, group)
    try:
        c.subscribe([topic])
        drain([c], 100, {}, until=lambda: len(c.assignment()) == 2)
        before = epoch_of(broker.bootstrap, group)
        broker.restart()
        produce(broker.bootstrap, topic, 2, 100, "after")
        seen = drain([c], 100, {}, timeout=90)
        assert len([k for k in seen if k.startswith("after-")]) == 100
        after = epoch_of(broker.bootstrap, group)
        assert after >= before, (before, after)
    finally:
        c.close()


def epoch_of(bootstrap, group):
    out = group_command(bootstrap, "--describe", "--group", group, "--state", "--verbose")
    rows = [line.split() for line in out.splitlines() if group in line.split()]
    header = [line.split() for line in out.splitlines() if "GROUP-EPOCH" in line]
    assert rows and header, out
    return int(rows[0][header[0].index("GROUP-EPOCH")])


def test_protocols_change_only_while_the_group_is_empty(broker):
    topic, group = uid("kip848m"), uid("kip848m-g")
    create(broker.bootstrap, topic, 2)
    produce(broker.bootstrap, topic, 2, 20, "m")
    classic = consumer(broker.bootstrap, group, "classic")
    try:
        classic.subscribe([topic])
        drain([classic], 20, {})
        # a classic group with members refuses a consumer-protocol member
        errors = []
        newer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group,
                          "group.protocol": "consumer",
                          "error_cb": lambda e: errors.append(e)})
        newer.subscribe([topic])
        deadline = time.monotonic() + 30
        failed = None
        while time.monotonic() < deadline and failed is None:
            try:
                for m in newer.consume(10, timeout=0.2):
                    if m.error() is not None and m.error().code() != KafkaError._PARTITION_EOF:
                        failed = m.error()
            except KafkaException as e:
                failed = e.args[0]
            if errors:
                failed = errors[0]
        newer.close()
        # GROUP_ID_NOT_FOUND, which librdkafka (as with Kafka) makes fatal
        assert failed is not None and "group id does not exist" in failed.str(), failed
    finally:
        classic.close()
    # empty now: the consumer protocol takes the group over, with its offsets
    produce(broker.bootstrap, topic, 2, 20, "n")
    c = consumer(broker.bootstrap, group)
    try:
        c.subscribe([topic])
        seen = drain([c], 20, {})
        assert sorted(seen) == sorted("n-%d" % i for i in range(20)), sorted(seen)
    finally:
        c.close()
    listed = group_command(broker.bootstrap, "--list", "--type", "consumer")
    assert group in listed.split(), listed


def test_coordinator_killed_group_moves_on_with_its_members(cluster):
    """Three brokers; the consumer group's coordinator is killed with -9 while
    two consumer-protocol members read and commit synchronously. The group
    resumes on another broker with its members (their commits succeed there:
    any commit failure but a stale epoch during a rebalance raises in drain),
    every record is read, and the epoch never goes back."""
    fast = ["--broker.session.timeout.ms=2000", "--compaction.enabled=false", "--http.listen="]
    nodes = [cluster.add(*fast) for _ in range(3)]
    for b in nodes:
        b.allow_errors(r"reading|connection|refused|watch|lease|GET|fetch")
    topic = uid("kip848f")
    create(cluster.bootstrap, topic, 4)
    a = AdminClient({"bootstrap.servers": cluster.bootstrap})
    group = None
    for _ in range(200):
        g = uid("kip848f-g")
        if a.describe_consumer_groups([g])[g].result(10).coordinator.id == 2:
            group = g
            break
    assert group, "no group id coordinated by node 2"
    produce(cluster.bootstrap, topic, 4, 200, "x")
    cs = [consumer(cluster.bootstrap, group) for _ in range(2)]
    try:
        for c in cs:
            c.subscribe([topic])
        seen = drain(cs, 200, {}, until=lambda: all(c.assignment() for c in cs))
        before = epoch_of(cluster.bootstrap, group)
        nodes[1].kill9()
        produce(cluster.bootstrap, topic, 4, 200, "y")
        seen = drain(cs, 400, seen, timeout=120)
        assert len(seen) == 400, "read %d of 400" % len(seen)
        after = epoch_of(cluster.bootstrap, group)
        assert after >= before, (before, after)
    finally:
        for c in cs:
            c.close()


def config_command(bootstrap, *args):
    cmd = JVM + ["-cp", os.path.join(TOOLS_LIB, "*"), "org.apache.kafka.tools.ConfigCommand",
                 "--bootstrap-server", bootstrap] + list(args)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def test_group_configs_with_kafka_configs(broker):
    """kafka-configs --entity-type groups: a group's heartbeat interval set,
    described, refused where Kafka refuses, deleted; a member joins the
    configured group (that heartbeats carry the group's interval is
    test_h_consumer_group's group_configs_are_described_altered_and_applied)."""
    topic, group = uid("kip848c"), uid("kip848c-g")
    create(broker.bootstrap, topic, 1)
    # as with Kafka, the tool configures a group that exists (or has configs)
    first = consumer(broker.bootstrap, group)
    first.subscribe([topic])
    drain([first], 0, {}, until=lambda: first.assignment(), timeout=30)
    first.close()
    r = config_command(broker.bootstrap, "--entity-type", "groups", "--entity-name", group,
                       "--alter", "--add-config", "consumer.heartbeat.interval.ms=6000")
    assert r.returncode == 0, r.stdout + r.stderr
    r = config_command(broker.bootstrap, "--entity-type", "groups", "--entity-name", group,
                       "--describe")
    assert r.returncode == 0 and "consumer.heartbeat.interval.ms=6000" in r.stdout, \
        r.stdout + r.stderr
    # values Kafka refuses are refused, naming the rule: outside the broker's
    # group.consumer.{min,max}.* bounds (45000..60000 and 5000..15000 here)
    r = config_command(broker.bootstrap, "--entity-type", "groups", "--entity-name", group,
                       "--alter", "--add-config", "consumer.session.timeout.ms=1000")
    assert r.returncode != 0 and \
        "must be greater than or equal to group.consumer.min.session.timeout.ms" in \
        r.stdout + r.stderr, r.stdout + r.stderr
    r = config_command(broker.bootstrap, "--entity-type", "groups", "--entity-name", group,
                       "--alter", "--add-config", "consumer.heartbeat.interval.ms=1500")
    assert r.returncode != 0 and "group.consumer.min.heartbeat.interval.ms" in \
        r.stdout + r.stderr, r.stdout + r.stderr
    # a member joins the configured group
    stats = []
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group,
                  "group.protocol": "consumer", "statistics.interval.ms": 500,
                  "stats_cb": lambda s: stats.append(s)})
    try:
        c.subscribe([topic])
        deadline = time.monotonic() + 30
        got = None
        while time.monotonic() < deadline and got is None:
            c.poll(0.2)
            for s in stats:
                cg = __import__("json").loads(s).get("cgrp") or {}
                if cg.get("state") == "up" and c.assignment():
                    got = True
        assert got, "the member did not join"
    finally:
        c.close()
    r = config_command(broker.bootstrap, "--entity-type", "groups", "--entity-name", group,
                       "--alter", "--delete-config", "consumer.heartbeat.interval.ms")
    assert r.returncode == 0, r.stdout + r.stderr
    r = config_command(broker.bootstrap, "--entity-type", "groups", "--entity-name", group,
                       "--describe")
    assert "consumer.heartbeat.interval.ms=6000" not in r.stdout, r.stdout


MEMBER_SCRIPT = r"""
import sys, time
from confluent_kafka import Consumer
c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2],
              "group.protocol": "consumer", "auto.offset.reset": "earliest"})
c.subscribe([sys.argv[3]])
while True:
    c.poll(0.2)
    if c.assignment():
        print("assigned", flush=True)
"""


def test_killed_member_partitions_move_after_the_groups_session_timeout(broker_factory):
    """A member killed with -9 sends nothing: its partitions move to the other
    member once the group's session timeout passes: here the group's own
    (kafka-configs --entity-type groups: consumer.session.timeout.ms=6000),
    the broker's being 10 minutes (its bounds widened to allow both, as a Kafka
    operator would with group.consumer.{min,max}.*)."""
    import sys
    broker = broker_factory("--group.consumer.session.timeout.ms=600000",
                            "--group.consumer.max.session.timeout.ms=600000",
                            "--group.consumer.min.session.timeout.ms=6000",
                            "--group.consumer.min.heartbeat.interval.ms=1000")
    topic, group = uid("kip848k"), uid("kip848k-g")
    create(broker.bootstrap, topic, 4)
    produce(broker.bootstrap, topic, 4, 40, "k")
    victim = subprocess.Popen([sys.executable, "-c", MEMBER_SCRIPT, broker.bootstrap, group, topic],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert victim.stdout.readline().startswith("assigned")
        r = config_command(broker.bootstrap, "--entity-type", "groups", "--entity-name", group,
                           "--alter", "--add-config",
                           "consumer.session.timeout.ms=6000,consumer.heartbeat.interval.ms=1000")
        assert r.returncode == 0, r.stdout + r.stderr
        survivor = consumer(broker.bootstrap, group)
        try:
            survivor.subscribe([topic])
            drain([survivor], 0, {}, until=lambda: survivor.assignment(), timeout=60)
            assert 0 < len(survivor.assignment()) < 4, survivor.assignment()
            victim.kill()
            victim.wait(10)
            drain([survivor], 0, {}, until=lambda: len(survivor.assignment()) == 4, timeout=90)
            assert len(survivor.assignment()) == 4, survivor.assignment()
        finally:
            survivor.close()
    finally:
        if victim.poll() is None:
            victim.kill()
